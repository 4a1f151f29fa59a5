/*
 * isc_ut.c — suite "isc": the in-storage compute executor (core/isc/isc.h)
 * alone, in memory: no store, no network.
 *
 *  - output lists: encoding, checks of bad input, merge of every combiner
 *    (HIST of different buckets refused), the cap, prefix, final (MEAN,
 *    Lua reduce);
 *  - declarative programs: parse errors with line and column, -ENOTSUP
 *    for the other target, limits; every operator against a C loop;
 *    aggregates over f64 arrays against C; keys over objects and an
 *    in-memory index;
 *  - Lua: map, emit, finish, reduce over objects and indices against C;
 *    hostile scripts (endless loop, memory bomb, huge output, io/os,
 *    bytecode, binary load, deep recursion, errors in callbacks, caught
 *    deadlines) each stopped with its code, and the allocator's counter
 *    back to 0 after every run;
 *  - native functions: refused unless allowed, digest changes refused,
 *    the sample build/isc_native_fn.so over objects and an index.
 */
#include <CUnit/CUnit.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/isc/isc.h"
#include "core/isc/isc_internal.h"
#include "tests/ut.h"

/* ------------------------------------------------------------ helpers */

static uint64_t now_ms(void)
{
	return isc_now_ns() / 1000000ull;
}

static int mkfn(enum isc_kind k, const char *code, enum isc_target t,
		const struct isc_limits *lim, struct isc_fn **f)
{
	struct isc_fn_desc d = {k, "t", code, strlen(code), {0}};
	int rc = isc_digest(&d);

	*f = NULL;
	err_clear();
	return rc != 0 ? rc : isc_fn_compile(f, &d, t, lim);
}

/* One run of f over data[0..len) fed in extents of piece bytes. */
static int run_obj(const struct isc_fn *f, const void *data, size_t len,
		   size_t piece, const char *args,
		   const struct isc_limits *lim, struct isc_out *out)
{
	struct isc_run *r;
	int rc;

	err_clear();
	rc = isc_run_start(&r, f, args, args ? strlen(args) : 0, lim);
	if (rc != 0)
		return rc;
	for (size_t p = 0; rc == 0 && p < len; p += piece)
		rc = isc_run_ext(r, p, (const uint8_t *)data + p,
				 len - p < piece ? len - p : piece);
	if (rc != 0) {
		isc_run_abort(r);
		return rc;
	}
	return isc_run_end(r, out);
}

/* An in-memory index: records sorted by key. */
struct mem_idx {
	uint32_t mi_nr;
	char (*mi_key)[16];
	uint8_t (*mi_val)[16];
	uint32_t *mi_vlen;
	uint32_t mi_calls;
};

static int mem_next(void *arg, const void *key, size_t klen, uint32_t n,
		    struct isc_rec *recs, uint32_t *got)
{
	struct mem_idx *m = arg;
	uint32_t i = 0;

	m->mi_calls++;
	if (key != NULL)
		while (i < m->mi_nr) {
			size_t kl = strlen(m->mi_key[i]);
			int c = memcmp(m->mi_key[i], key, kl < klen ? kl : klen);

			if (c > 0 || (c == 0 && kl > klen))
				break;
			i++;
		}
	*got = 0;
	if (n > 100)
		n = 100;        /* as a real source, fewer than asked */
	for (; i < m->mi_nr && *got < n; i++, (*got)++)
		recs[*got] = (struct isc_rec){
			(const uint8_t *)m->mi_key[i],
			(uint32_t)strlen(m->mi_key[i]), 0, m->mi_val[i],
			m->mi_vlen[i]};
	return 0;
}

/* Index of nr records "kNNNNN" with value i32 i (every 7th value only 2
 * bytes long). */
static void mem_idx_make(struct mem_idx *m, uint32_t nr)
{
	m->mi_nr = nr;
	m->mi_key = calloc(nr, sizeof *m->mi_key);
	m->mi_val = calloc(nr, sizeof *m->mi_val);
	m->mi_vlen = calloc(nr, sizeof *m->mi_vlen);
	m->mi_calls = 0;
	for (uint32_t i = 0; i < nr; i++) {
		int32_t v = htole32((int32_t)i);

		snprintf(m->mi_key[i], 16, "k%05u", i);
		memcpy(m->mi_val[i], &v, 4);
		m->mi_vlen[i] = i % 7 == 0 ? 2 : 4;
	}
}

static void mem_idx_free(struct mem_idx *m)
{
	free(m->mi_key);
	free(m->mi_val);
	free(m->mi_vlen);
}

static int run_idx(const struct isc_fn *f, struct mem_idx *m,
		   const struct isc_limits *lim, struct isc_out *out)
{
	struct isc_idx_src src = {mem_next, m};
	struct isc_run *r;
	int rc;

	err_clear();
	rc = isc_run_start(&r, f, NULL, 0, lim);
	if (rc != 0)
		return rc;
	rc = isc_run_idx(r, &src);
	if (rc != 0) {
		isc_run_abort(r);
		return rc;
	}
	return isc_run_end(r, out);
}

/* The record (key, type) of o: true and *rec. */
static bool find(const struct isc_out *o, const char *key, uint8_t type,
		 struct isc_rec *rec)
{
	size_t pos = 0;

	while (isc_out_next(o->o_buf, o->o_len, &pos, rec) == 1)
		if (rec->r_type == type && rec->r_klen == strlen(key) &&
		    memcmp(rec->r_key, key, rec->r_klen) == 0)
			return true;
	return false;
}

static double getd(const uint8_t *p)
{
	uint64_t u;
	double d;

	memcpy(&u, p, 8);
	u = le64toh(u);
	memcpy(&d, &u, 8);
	return d;
}

static int64_t geti(const uint8_t *p)
{
	uint64_t u;

	memcpy(&u, p, 8);
	return (int64_t)le64toh(u);
}

/* The double of record (key, type), NAN if none. */
static double fval(const struct isc_out *o, const char *key, uint8_t type)
{
	struct isc_rec r;

	return find(o, key, type, &r) ? getd(r.r_val) : NAN;
}

static int64_t ival(const struct isc_out *o, const char *key, uint8_t type)
{
	struct isc_rec r;

	return find(o, key, type, &r) ? geti(r.r_val) : INT64_MIN;
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

static void putd(uint8_t *p, double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	u = htole64(u);
	memcpy(p, &u, 8);
}

static void puti(uint8_t *p, int64_t i)
{
	uint64_t u = htole64((uint64_t)i);

	memcpy(p, &u, 8);
}

/* A HIST value of nb buckets, every count c. */
static size_t hist_val(uint8_t *v, double lo, double hi, uint32_t nb,
		       uint64_t c)
{
	uint32_t n = htole32(nb);

	putd(v, lo);
	putd(v + 8, hi);
	memcpy(v + 16, &n, 4);
	for (uint32_t i = 0; i < nb; i++)
		puti(v + 20 + 8 * i, (int64_t)c);
	return 20 + 8ull * nb;
}

/* f64 test data: n values in [-50, 150), a few repeated. */
static double *f64_data(size_t n)
{
	double *d = malloc(n * sizeof *d);

	srand(7);
	for (size_t i = 0; i < n; i++)
		d[i] = (double)(rand() % 200000) / 1000.0 - 50.0;
	return d;
}

/* -------------------------------------------------------- output lists */

static void test_out_encode(void)
{
	struct isc_out o;
	struct isc_rec r;
	uint8_t v[8];
	size_t pos = 0;
	uint32_t nr = 0;

	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(o.o_max, ISC_OUT_DEFAULT);
	puti(v, 42);
	CU_ASSERT_EQUAL(isc_out_add(&o, "a", 1, ISC_V_INT, v, 8), 0);
	CU_ASSERT_EQUAL(isc_out_add(&o, "bb", 2, ISC_V_BYTES, "xyz", 3), 0);
	CU_ASSERT_EQUAL(isc_out_add(&o, "", 0, ISC_V_MATCH, NULL, 0), 0);
	CU_ASSERT_EQUAL(o.o_nr, 3);
	CU_ASSERT_EQUAL(o.o_len, 9 + 1 + 8 + 9 + 2 + 3 + 9);
	CU_ASSERT_EQUAL(isc_out_check(o.o_buf, o.o_len, &nr), 0);
	CU_ASSERT_EQUAL(nr, 3);
	/* byte layout: u32 klen, key, u8 type, u32 vlen, value */
	CU_ASSERT_EQUAL(o.o_buf[0], 1);
	CU_ASSERT_EQUAL(o.o_buf[4], 'a');
	CU_ASSERT_EQUAL(o.o_buf[5], ISC_V_INT);
	CU_ASSERT_EQUAL(o.o_buf[6], 8);
	CU_ASSERT_EQUAL(o.o_buf[10], 42);
	CU_ASSERT_EQUAL(isc_out_next(o.o_buf, o.o_len, &pos, &r), 1);
	CU_ASSERT_EQUAL(geti(r.r_val), 42);
	CU_ASSERT_EQUAL(isc_out_next(o.o_buf, o.o_len, &pos, &r), 1);
	CU_ASSERT(r.r_vlen == 3 && memcmp(r.r_val, "xyz", 3) == 0);
	CU_ASSERT_EQUAL(isc_out_next(o.o_buf, o.o_len, &pos, &r), 1);
	CU_ASSERT(r.r_klen == 0 && r.r_type == ISC_V_MATCH);
	CU_ASSERT_EQUAL(isc_out_next(o.o_buf, o.o_len, &pos, &r), 0);
	/* cut anywhere, a bad type, a wrong fixed size: -EBADMSG */
	for (size_t cut = 1; cut < o.o_len; cut++) {
		int rc = isc_out_check(o.o_buf, cut, &nr);

		if (cut == 18 || cut == 32)
			CU_ASSERT_EQUAL(rc, 0)
		else
			CU_ASSERT_EQUAL(rc, -EBADMSG);
	}
	o.o_buf[5] = 99;
	CU_ASSERT_EQUAL(isc_out_check(o.o_buf, o.o_len, &nr), -EBADMSG);
	o.o_buf[5] = ISC_V_MEAN;      /* MEAN needs 16 bytes */
	CU_ASSERT_EQUAL(isc_out_check(o.o_buf, o.o_len, &nr), -EBADMSG);
	isc_out_fini(&o);
	/* the cap */
	isc_out_init(&o, 30);
	CU_ASSERT_EQUAL(isc_out_add(&o, "a", 1, ISC_V_INT, v, 8), 0);
	CU_ASSERT_EQUAL(isc_out_add(&o, "a", 1, ISC_V_INT, v, 8), -E2BIG);
	CU_ASSERT(strstr(err_msg(), "output over 30 bytes") != NULL);
	CU_ASSERT_EQUAL(o.o_nr, 1);
	isc_out_fini(&o);
}

static void test_out_merge(void)
{
	struct isc_out a, b;
	uint8_t v[16], h[20 + 8 * 4];
	struct isc_rec r;
	size_t pos = 0, hl;
	uint32_t nr;
	int n = 0;

	isc_out_init(&a, 0);
	isc_out_init(&b, 0);
	for (int i = 0; i < 2; i++) {
		struct isc_out *o = i ? &b : &a;

		putd(v, 1.5 + i);
		CU_ASSERT_EQUAL(isc_out_add(o, "s", 1, ISC_V_SUM, v, 8), 0);
		CU_ASSERT_EQUAL(isc_out_add(o, "m", 1, ISC_V_MIN, v, 8), 0);
		CU_ASSERT_EQUAL(isc_out_add(o, "m", 1, ISC_V_MAX, v, 8), 0);
		puti(v, 10 + i);
		CU_ASSERT_EQUAL(isc_out_add(o, "c", 1, ISC_V_COUNT, v, 8), 0);
		CU_ASSERT_EQUAL(isc_out_add(o, "i", 1, ISC_V_ISUM, v, 8), 0);
		CU_ASSERT_EQUAL(isc_out_add(o, "l", 1, ISC_V_INT, v, 8), 0);
		CU_ASSERT_EQUAL(isc_out_add(o, "k", 1, ISC_V_MATCH, "", 0), 0);
		putd(v, 4.0 * (i + 1));
		puti(v + 8, 2);
		CU_ASSERT_EQUAL(isc_out_add(o, "avg", 3, ISC_V_MEAN, v, 16), 0);
		hl = hist_val(h, 0, 1, 4, 1 + i);
		CU_ASSERT_EQUAL(isc_out_add(o, "h", 1, ISC_V_HIST, h, hl), 0);
	}
	CU_ASSERT_EQUAL(isc_out_merge(&a, b.o_buf, b.o_len), 0);
	CU_ASSERT_EQUAL(isc_out_check(a.o_buf, a.o_len, &nr), 0);
	CU_ASSERT_EQUAL(nr, 11);   /* 7 combined + 2 INT + 2 MATCH */
	CU_ASSERT_EQUAL(fval(&a, "s", ISC_V_SUM), 4.0);
	CU_ASSERT_EQUAL(fval(&a, "m", ISC_V_MIN), 1.5);
	CU_ASSERT_EQUAL(fval(&a, "m", ISC_V_MAX), 2.5);
	CU_ASSERT_EQUAL(ival(&a, "c", ISC_V_COUNT), 21);
	CU_ASSERT_EQUAL(ival(&a, "i", ISC_V_ISUM), 21);
	CU_ASSERT(find(&a, "avg", ISC_V_MEAN, &r) && getd(r.r_val) == 12.0 &&
		  geti(r.r_val + 8) == 4);
	CU_ASSERT(find(&a, "h", ISC_V_HIST, &r) && r.r_vlen == hl &&
		  geti(r.r_val + 20) == 3 && geti(r.r_val + 44) == 3);
	/* sorted by key, then type; LIST and MATCH records kept apart */
	{
		const char *want = "achikkllmms";
		uint8_t last_t = 0;

		while (isc_out_next(a.o_buf, a.o_len, &pos, &r) == 1) {
			CU_ASSERT(r.r_key[0] == want[n]);
			if (n > 0 && want[n] == want[n - 1])
				CU_ASSERT(r.r_type >= last_t);
			last_t = r.r_type;
			n++;
		}
		CU_ASSERT_EQUAL(n, 11);
	}
	/* a HIST of other buckets: -EINVAL naming the key */
	isc_out_fini(&b);
	isc_out_init(&b, 0);
	hl = hist_val(h, 0, 2, 4, 1);
	CU_ASSERT_EQUAL(isc_out_add(&b, "h", 1, ISC_V_HIST, h, hl), 0);
	CU_ASSERT_EQUAL(isc_out_merge(&a, b.o_buf, b.o_len), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "'h'") != NULL);
	hl = hist_val(h, 0, 1, 3, 1);
	isc_out_fini(&b);
	isc_out_init(&b, 0);
	CU_ASSERT_EQUAL(isc_out_add(&b, "h", 1, ISC_V_HIST, h, hl), 0);
	CU_ASSERT_EQUAL(isc_out_merge(&a, b.o_buf, b.o_len), -EINVAL);
	CU_ASSERT_EQUAL(ival(&a, "c", ISC_V_COUNT), 21);  /* dst unchanged */
	/* a bad source: -EBADMSG; over the cap: -E2BIG */
	CU_ASSERT_EQUAL(isc_out_merge(&a, "\x05\0\0\0ab", 6), -EBADMSG);
	a.o_max = a.o_len + 10;
	isc_out_fini(&b);
	isc_out_init(&b, 0);
	CU_ASSERT_EQUAL(isc_out_add(&b, "zz", 2, ISC_V_BYTES, "0123", 4), 0);
	CU_ASSERT_EQUAL(isc_out_merge(&a, b.o_buf, b.o_len), -E2BIG);
	isc_out_fini(&a);
	isc_out_fini(&b);
}

static void test_out_final(void)
{
	struct isc_out o;
	uint8_t v[16];
	struct isc_rec r;
	size_t pos = 0;

	isc_out_init(&o, 0);
	putd(v, 10);
	puti(v + 8, 4);
	CU_ASSERT_EQUAL(isc_out_add(&o, "m", 1, ISC_V_MEAN, v, 16), 0);
	putd(v, 0);
	puti(v + 8, 0);
	CU_ASSERT_EQUAL(isc_out_add(&o, "z", 1, ISC_V_MEAN, v, 16), 0);
	CU_ASSERT_EQUAL(isc_out_add(&o, "b", 1, ISC_V_BYTES, "q", 1), 0);
	CU_ASSERT_EQUAL(isc_out_final(&o, NULL, NULL), 0);
	CU_ASSERT_EQUAL(o.o_nr, 2);
	CU_ASSERT_EQUAL(fval(&o, "m", ISC_V_FLOAT), 2.5);
	CU_ASSERT(!find(&o, "z", ISC_V_MEAN, &r) && !find(&o, "z", ISC_V_FLOAT,
							    &r));
	/* prefix */
	CU_ASSERT_EQUAL(isc_out_prefix(&o, "P/", 2), 0);
	CU_ASSERT_EQUAL(o.o_nr, 2);
	CU_ASSERT_EQUAL(isc_out_next(o.o_buf, o.o_len, &pos, &r), 1);
	CU_ASSERT(r.r_klen == 3 && memcmp(r.r_key, "P/b", 3) == 0);
	CU_ASSERT_EQUAL(fval(&o, "P/m", ISC_V_FLOAT), 2.5);
	o.o_max = o.o_len + 1;
	CU_ASSERT_EQUAL(isc_out_prefix(&o, "12", 2), -E2BIG);
	isc_out_fini(&o);
}

/* ------------------------------------------------------- declarative */

/* program must be refused with rc and a message holding want. */
static void decl_bad(const char *prog, enum isc_target t, int rc,
		     const char *want)
{
	struct isc_fn *f;
	int got = mkfn(ISC_DECL, prog, t, NULL, &f);

	CU_ASSERT_EQUAL(got, rc);
	CU_ASSERT(f == NULL);
	if (strstr(err_msg(), want) == NULL || got != rc)
		fprintf(stderr, "\n  program %s: rc %d, message '%s', want "
			"'%s'\n", prog, got, err_msg(), want);
	CU_ASSERT(strstr(err_msg(), want) != NULL);
	isc_fn_free(f);
}

static void test_decl_errors(void)
{
	char big[8192];
	size_t n = 0;

	decl_bad("record 8\nfield x f64 0\n", ISC_T_OBJ, -EINVAL,
		 "nothing to compute");
	decl_bad("record 8\nfield x f65 0\ncount\n", ISC_T_OBJ, -EINVAL,
		 "line 2, column 9: expected a type");
	decl_bad("field x f64 0\nwhere x >< 3\ncount", ISC_T_OBJ, -EINVAL,
		 "line 2, column 10: expected a number");
	decl_bad("field x f64 0\nwhere y > 3\ncount", ISC_T_OBJ, -EINVAL,
		 "line 2, column 7: no field 'y'");
	decl_bad("field x f64 0\nwhere (x > 3\ncount", ISC_T_OBJ, -EINVAL,
		 "line 2, column 13: expected ')'");
	decl_bad("field x f64 0\nwhere x == \"a\"\ncount", ISC_T_OBJ, -EINVAL,
		 "line 2, column 7: field x is a number");
	decl_bad("field s bytes 4 0\nwhere s == 3\ncount", ISC_T_OBJ, -EINVAL,
		 "field s is bytes");
	decl_bad("field s bytes 4 0\nwhere s == \"a\\q\"\ncount", ISC_T_OBJ,
		 -EINVAL, "line 2, column 14: unknown escape");
	decl_bad("field s bytes 4 0\nwhere s == \"abc\ncount", ISC_T_OBJ,
		 -EINVAL, "line 2, column 12: string not closed");
	decl_bad("field x f64 0\nsum x\nsum x", ISC_T_OBJ, -EINVAL,
		 "line 3, column 1: sum(x) given twice");
	decl_bad("field s bytes 2 0\nsum s", ISC_T_OBJ, -EINVAL,
		 "sum needs a numeric field");
	decl_bad("field x f64 0\nhist x 1 0 4", ISC_T_OBJ, -EINVAL,
		 "finite LO < HI");
	decl_bad("field x f64 0\nhist x 0 1 4097", ISC_T_OBJ, -EINVAL,
		 "bucket count must be an integer in 1..4096");
	decl_bad("record 0\ncount", ISC_T_OBJ, -EINVAL, "line 1, column 8");
	decl_bad("record 4\nfield x f64 0\ncount", ISC_T_OBJ, -EINVAL,
		 "line 2, column 1: field x (bytes 0..7) does not fit");
	decl_bad("count\nfrobnicate", ISC_T_OBJ, -EINVAL,
		 "line 2, column 1: unknown statement 'frobnicate'");
	decl_bad("count extra", ISC_T_OBJ, -EINVAL,
		 "line 1, column 7: unexpected 'extra'");
	decl_bad("field x i32 0\nfield x i32 4\ncount", ISC_T_OBJ, -EINVAL,
		 "line 2, column 7: field 'x' declared twice");
	decl_bad("field x i32 0\nwhere x > 99999999999999999999\ncount",
		 ISC_T_OBJ, -EINVAL, "out of range");
	/* the other target: -ENOTSUP, so a caller can try the other */
	decl_bad("record 8\ncount", ISC_T_IDX, -ENOTSUP,
		 "line 1, column 1: record sizes are for objects");
	decl_bad("where key prefix \"a\"\ncount", ISC_T_OBJ, -ENOTSUP,
		 "line 1, column 7: field 'key' is an index's");
	decl_bad("field key i32 0\ncount", ISC_T_IDX, -EINVAL,
		 "is built in on indices");
	/* limits: 64 fields, 16 aggregates, 256 nodes, 64 deep */
	for (int i = 0; i < 65; i++)
		n += (size_t)snprintf(big + n, sizeof big - n,
				      "field f%d u8 %d\n", i, i);
	snprintf(big + n, sizeof big - n, "count\n");
	decl_bad(big, ISC_T_OBJ, -EINVAL, "line 65, column 7: more than 64 "
		 "fields");
	n = 0;
	for (int i = 0; i < 17; i++)
		n += (size_t)snprintf(big + n, sizeof big - n,
				      "field x%d u8 %d\nsum x%d\n", i, i, i);
	decl_bad(big, ISC_T_OBJ, -EINVAL, "line 34, column 1: more than 16 "
		 "aggregates");
	n = (size_t)snprintf(big, sizeof big, "field x u8 0\ncount\nwhere x "
			     "== 0");
	for (int i = 0; i < 130; i++)
		n += (size_t)snprintf(big + n, sizeof big - n, " or x == %d",
				      i);
	decl_bad(big, ISC_T_OBJ, -EINVAL, "more than 256 expression nodes");
	n = (size_t)snprintf(big, sizeof big, "field x u8 0\ncount\nwhere ");
	for (int i = 0; i < 70; i++)
		big[n++] = '(';
	snprintf(big + n, sizeof big - n, "x == 1");
	decl_bad(big, ISC_T_OBJ, -EINVAL, "nested more than 64 deep");
	CU_ASSERT(isc_lua_mem_in_use() == 0);
}

/* The test record of the operator tests (24 bytes). */
struct trec {
	int32_t a;
	uint32_t pad;
	uint64_t b;
	char s[8];
};

#define NTREC 1000

static struct trec *trecs(void)
{
	struct trec *t = calloc(NTREC, sizeof *t);

	for (int i = 0; i < NTREC; i++) {
		t[i].a = htole32(i - 500);
		t[i].b = htole64(i == 7 ? UINT64_MAX : (uint64_t)i * 3);
		snprintf(t[i].s, sizeof t[i].s, "%s%03d",
			 i % 3 == 0 ? "ab" : i % 3 == 1 ? "b\"" : "x\n", i % 1000);
	}
	return t;
}

/* count of program's where over the test records. */
static int64_t decl_count(const char *where)
{
	static struct trec *t;
	char prog[1024];
	struct isc_fn *f;
	struct isc_out o;
	int64_t c;

	if (t == NULL)
		t = trecs();
	snprintf(prog, sizeof prog, "record 24\nfield a i32 0\nfield b u64 8\n"
		 "field s bytes 8 16\nfield f f32 0\nwhere %s\ncount\n", where);
	if (mkfn(ISC_DECL, prog, ISC_T_OBJ, NULL, &f) != 0) {
		fprintf(stderr, "\n  %s: %s\n", where, err_msg());
		return -1;
	}
	isc_out_init(&o, 0);
	c = run_obj(f, t, NTREC * sizeof *t, 24 * 100, NULL, NULL, &o) == 0 ?
	    ival(&o, "count", ISC_V_COUNT) : -2;
	isc_out_fini(&o);
	isc_fn_free(f);
	return c;
}

static void test_decl_ops(void)
{
	/* a = i - 500, b = 3i (b of 7 is UINT64_MAX), s = ab/b"/x\n + i */
	CU_ASSERT_EQUAL(decl_count("a == 0"), 1);
	CU_ASSERT_EQUAL(decl_count("a != 0"), 999);
	CU_ASSERT_EQUAL(decl_count("a < -400"), 100);
	CU_ASSERT_EQUAL(decl_count("a <= -400"), 101);
	CU_ASSERT_EQUAL(decl_count("a > 400"), 99);
	CU_ASSERT_EQUAL(decl_count("a >= 400"), 100);
	CU_ASSERT_EQUAL(decl_count("a in [0, 10)"), 10);
	CU_ASSERT_EQUAL(decl_count("a in [0, 10]"), 11);
	CU_ASSERT_EQUAL(decl_count("a in (0, 10]"), 10);
	CU_ASSERT_EQUAL(decl_count("a >= -0x10 and a < 0x10"), 32);
	CU_ASSERT_EQUAL(decl_count("a < -499.5"), 1);
	CU_ASSERT_EQUAL(decl_count("a > 1e3"), 0);
	CU_ASSERT_EQUAL(decl_count("a > -inf"), NTREC);
	CU_ASSERT_EQUAL(decl_count("a < inf"), NTREC);
	CU_ASSERT_EQUAL(decl_count("a == nan"), 0);
	CU_ASSERT_EQUAL(decl_count("a != nan"), NTREC);
	/* u64: exact past 2^53, against a negative literal */
	CU_ASSERT_EQUAL(decl_count("b == 18446744073709551615"), 1);
	CU_ASSERT_EQUAL(decl_count("b == 0xffffffffffffffff"), 1);
	CU_ASSERT_EQUAL(decl_count("b > 18446744073709551614"), 1);
	CU_ASSERT_EQUAL(decl_count("b > -1"), NTREC);
	CU_ASSERT_EQUAL(decl_count("b < 30"), 9);
	CU_ASSERT_EQUAL(decl_count("a < 9223372036854775808"), NTREC);
	/* bytes */
	CU_ASSERT_EQUAL(decl_count("s prefix \"ab\""), 334);
	CU_ASSERT_EQUAL(decl_count("s prefix \"b\\\"\""), 333);
	CU_ASSERT_EQUAL(decl_count("s prefix \"x\\n\""), 333);
	CU_ASSERT_EQUAL(decl_count("s prefix \"\\x78\\x0a\""), 333);
	CU_ASSERT_EQUAL(decl_count("s contains \"99\""), 19);
	CU_ASSERT_EQUAL(decl_count("s == \"ab000\\x00\\x00\\x00\""), 1);
	CU_ASSERT_EQUAL(decl_count("s < \"b\""), 334);
	CU_ASSERT_EQUAL(decl_count("s >= \"x\""), 333);
	/* the shorter sorts first: "ab000" + 3 NULs is after "ab000" */
	CU_ASSERT_EQUAL(decl_count("s > \"ab000\""), NTREC);
	CU_ASSERT_EQUAL(decl_count("s <= \"ab000\\x00\\x00\\x00\""), 1);
	/* logic */
	CU_ASSERT_EQUAL(decl_count("not a == 0"), 999);
	CU_ASSERT_EQUAL(decl_count("a < 0 or a >= 490"), 510);
	CU_ASSERT_EQUAL(decl_count("a < 0 and (s prefix \"ab\" or a == -1)"),
			168);
	CU_ASSERT_EQUAL(decl_count("not (a < 0 or a > 10) and not a == 5"),
			10);
	/* f32 view of the same bytes: a float compare */
	CU_ASSERT_EQUAL(decl_count("f == 0"), 1);
	/* two where lines are and-ed */
	{
		struct isc_fn *f;
		struct isc_out o;
		struct trec *t = trecs();

		CU_ASSERT_EQUAL(mkfn(ISC_DECL, "record 24\nfield a i32 0\n"
				     "where a >= 0 # comment\n"
				     "# a comment line\n"
				     "where a < 10\ncount", ISC_T_OBJ, NULL,
				     &f), 0);
		isc_out_init(&o, 0);
		CU_ASSERT_EQUAL(run_obj(f, t, NTREC * sizeof *t, 2400, NULL,
					NULL, &o), 0);
		CU_ASSERT_EQUAL(ival(&o, "count", ISC_V_COUNT), 10);
		isc_out_fini(&o);
		isc_fn_free(f);
		free(t);
	}
}

static void test_decl_aggs(void)
{
	size_t n = 100000;
	double *d = f64_data(n), sum = 0, mn = INFINITY, mx = -INFINITY;
	uint64_t hist[64] = {0}, cnt = 0;
	struct isc_fn *f;
	struct isc_out o;
	struct isc_rec r;
	int64_t k = 0;

	d[5] = NAN;                         /* skipped by min, max, hist */
	for (size_t i = 0; i < n; i++) {
		double v = d[i];

		if (v != v || v < 10)
			continue;
		cnt++;
		sum += v;
		mn = v < mn ? v : mn;
		mx = v > mx ? v : mx;
		hist[v >= 100 ? 63 : (int)((v - 10) * 64 / 90)]++;
	}
	CU_ASSERT_EQUAL(mkfn(ISC_DECL, "record 8\nfield x f64 0\nwhere x >= 10"
			     "\ncount\nsum x\nmin x\nmax x\nmean x\n"
			     "hist x 10 100 64", ISC_T_OBJ, NULL, &f), 0);
	CU_ASSERT_EQUAL(isc_fn_record(f), 8);
	CU_ASSERT(!isc_fn_whole_object(f) && !isc_fn_has_reduce(f));
	isc_out_init(&o, 0);
	/* two runs merged (two shares), extents of 4096 bytes */
	CU_ASSERT_EQUAL(run_obj(f, d, n / 2 * 8, 4096, NULL, NULL, &o), 0);
	CU_ASSERT_EQUAL(run_obj(f, d + n / 2, n / 2 * 8, 4096, NULL, NULL, &o),
			0);
	CU_ASSERT_EQUAL(ival(&o, "count", ISC_V_COUNT), (int64_t)cnt);
	CU_ASSERT(near(fval(&o, "sum(x)", ISC_V_SUM), sum));
	CU_ASSERT_EQUAL(fval(&o, "min(x)", ISC_V_MIN), mn);
	CU_ASSERT_EQUAL(fval(&o, "max(x)", ISC_V_MAX), mx);
	CU_ASSERT(find(&o, "hist(x)", ISC_V_HIST, &r) && r.r_vlen == 20 + 64 * 8);
	for (int b = 0; b < 64; b++)
		k += geti(r.r_val + 20 + 8 * b) == (int64_t)hist[b];
	CU_ASSERT_EQUAL(k, 64);
	CU_ASSERT_EQUAL(isc_out_final(&o, f, NULL), 0);
	CU_ASSERT(near(fval(&o, "mean(x)", ISC_V_FLOAT), sum / cnt));
	isc_out_fini(&o);
	/* an extent that is not whole records */
	{
		struct isc_run *run;

		CU_ASSERT_EQUAL(isc_run_start(&run, f, NULL, 0, NULL), 0);
		CU_ASSERT_EQUAL(isc_run_ext(run, 4, d, 8), -EINVAL);
		CU_ASSERT_EQUAL(isc_run_ext(run, 8, d, 12), -EINVAL);
		CU_ASSERT(strstr(err_msg(), "not whole records of 8") != NULL);
		isc_run_abort(run);
	}
	isc_fn_free(f);
	/* min of nothing: no record; keys of an object: offsets, records */
	CU_ASSERT_EQUAL(mkfn(ISC_DECL, "field x f64 0\nwhere x > 1e9\nmin x\n"
			     "count", ISC_T_OBJ, NULL, &f), 0);
	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(run_obj(f, d, n * 8, 1 << 20, NULL, NULL, &o), 0);
	CU_ASSERT(!find(&o, "min(x)", ISC_V_MIN, &r));
	CU_ASSERT_EQUAL(ival(&o, "count", ISC_V_COUNT), 0);
	isc_out_fini(&o);
	isc_fn_free(f);
	d[3] = 1e12;
	d[99999] = 2e12;
	CU_ASSERT_EQUAL(mkfn(ISC_DECL, "field x f64 0\nwhere x > 1e9\nkeys",
			     ISC_T_OBJ, NULL, &f), 0);
	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(run_obj(f, d, n * 8, 8000, NULL, NULL, &o), 0);
	CU_ASSERT_EQUAL(o.o_nr, 2);
	{
		size_t pos = 0;
		uint64_t be;

		CU_ASSERT_EQUAL(isc_out_next(o.o_buf, o.o_len, &pos, &r), 1);
		memcpy(&be, r.r_key, 8);
		CU_ASSERT(r.r_type == ISC_V_MATCH && r.r_klen == 8 &&
			  be64toh(be) == 24 && r.r_vlen == 8 &&
			  getd(r.r_val) == 1e12);
		CU_ASSERT_EQUAL(isc_out_next(o.o_buf, o.o_len, &pos, &r), 1);
		memcpy(&be, r.r_key, 8);
		CU_ASSERT(be64toh(be) == 99999 * 8 && getd(r.r_val) == 2e12);
	}
	isc_out_fini(&o);
	/* keys over the cap: -E2BIG */
	isc_fn_free(f);
	CU_ASSERT_EQUAL(mkfn(ISC_DECL, "field x f64 0\nkeys", ISC_T_OBJ, NULL,
			     &f), 0);
	{
		struct isc_limits lim = {.il_out_max = 4096};

		isc_out_init(&o, 4096);
		CU_ASSERT_EQUAL(run_obj(f, d, n * 8, 8000, NULL, &lim, &o),
				-E2BIG);
		CU_ASSERT(strstr(err_msg(), "output over 4096 bytes") != NULL);
		isc_out_fini(&o);
	}
	isc_fn_free(f);
	free(d);
}

static void test_decl_idx(void)
{
	struct mem_idx m;
	struct isc_fn *f;
	struct isc_out o;
	struct isc_rec r;
	size_t pos = 0;
	int64_t want = 0, cnt = 0;

	mem_idx_make(&m, 1000);
	/* v is short (2 bytes) in every 7th record: unknown, so neither
	 * v < 500 nor not (v < 500) holds there */
	for (int i = 0; i < 1000; i++)
		if (i % 7 != 0 && !(i < 500)) {
			want++;
		}
	CU_ASSERT_EQUAL(mkfn(ISC_DECL, "field v i32 0\nwhere not (v < 500)\n"
			     "count\nsum v", ISC_T_IDX, NULL, &f), 0);
	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(run_idx(f, &m, NULL, &o), 0);
	CU_ASSERT_EQUAL(ival(&o, "count", ISC_V_COUNT), want);
	CU_ASSERT(m.mi_calls >= 10);    /* the source gives 100 at a time */
	isc_out_fini(&o);
	isc_fn_free(f);
	/* keys by key and value: MATCH records of the index keys */
	CU_ASSERT_EQUAL(mkfn(ISC_DECL, "field v u16 0\nwhere key prefix "
			     "\"k001\" and (v == 101 or value contains "
			     "\"\\x67\")\nkeys\ncount", ISC_T_IDX, NULL, &f),
			0);
	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(run_idx(f, &m, NULL, &o), 0);
	while (isc_out_next(o.o_buf, o.o_len, &pos, &r) == 1) {
		if (r.r_type != ISC_V_MATCH)
			continue;
		cnt++;
		CU_ASSERT(r.r_vlen == 0);
		CU_ASSERT(r.r_klen == 6 && (memcmp(r.r_key, "k00101", 6) == 0 ||
					    memcmp(r.r_key, "k00103", 6) == 0));
	}
	CU_ASSERT_EQUAL(cnt, 2);
	CU_ASSERT_EQUAL(ival(&o, "count", ISC_V_COUNT), 2);
	isc_out_fini(&o);
	isc_fn_free(f);
	mem_idx_free(&m);
}

/* --------------------------------------------------------------- Lua */

static const char lua_stats[] =
	"local n = 0\n"
	"function map(ext)\n"
	"  local s = read()\n"
	"  assert(#s == ext.length)\n"
	"  for i = 1, #s, 8 do\n"
	"    local x = string.unpack('<d', s, i)\n"
	"    emit('sum', x, 'sum'); emit('min', x, 'min')\n"
	"    emit('max', x, 'max'); emit('n', 1, 'count')\n"
	"    n = n + 1\n"
	"    if x > 149 then emit('big', x) end\n"
	"  end\n"
	"  local part = read(ext.offset + 8, 8)\n"
	"  assert(#part == 8 and part == s:sub(9, 16))\n"
	"  assert(#read(ext.offset + ext.length - 4, 100) == 4)\n"
	"end\n"
	"function finish() emit('seen', n, 'sum'); emit('args', ARGS) end\n"
	"function reduce(key, values)\n"
	"  if key == 'args' then return nil end\n"
	"  local s = 0\n"
	"  for _, v in ipairs(values) do s = s + v end\n"
	"  return s\n"
	"end\n";

static void test_lua_obj(void)
{
	size_t n = 20000;
	double *d = f64_data(n), sum = 0, mn = INFINITY, mx = -INFINITY,
	       big = 0;
	struct isc_fn *f;
	struct isc_out o;
	struct isc_rec r;

	for (size_t i = 0; i < n; i++) {
		sum += d[i];
		mn = d[i] < mn ? d[i] : mn;
		mx = d[i] > mx ? d[i] : mx;
		big += d[i] > 149 ? d[i] : 0;
	}
	CU_ASSERT_EQUAL(mkfn(ISC_LUA, lua_stats, ISC_T_OBJ, NULL, &f), 0);
	CU_ASSERT(isc_fn_has_reduce(f) && !isc_fn_whole_object(f));
	CU_ASSERT_EQUAL(isc_fn_record(f), 1);
	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(run_obj(f, d, n * 4, 8192, "hello", NULL, &o), 0);
	CU_ASSERT_EQUAL(run_obj(f, d + n / 2, n * 4, 8192, "hello", NULL, &o),
			0);
	CU_ASSERT(isc_lua_mem_in_use() == 0);
	CU_ASSERT(near(fval(&o, "sum", ISC_V_SUM), sum));
	CU_ASSERT_EQUAL(fval(&o, "min", ISC_V_MIN), mn);
	CU_ASSERT_EQUAL(fval(&o, "max", ISC_V_MAX), mx);
	CU_ASSERT_EQUAL(ival(&o, "n", ISC_V_COUNT), (int64_t)n);
	CU_ASSERT_EQUAL(ival(&o, "seen", ISC_V_ISUM), (int64_t)n);
	CU_ASSERT(find(&o, "args", ISC_V_BYTES, &r) && r.r_vlen == 5 &&
		  memcmp(r.r_val, "hello", 5) == 0);
	/* reduce: the LIST values of 'big' summed, 'args' dropped */
	CU_ASSERT_EQUAL(isc_out_final(&o, f, NULL), 0);
	CU_ASSERT(isc_lua_mem_in_use() == 0);
	CU_ASSERT(big > 0 && near(fval(&o, "big", ISC_V_FLOAT), big));
	CU_ASSERT(!find(&o, "args", ISC_V_BYTES, &r));
	CU_ASSERT_EQUAL(ival(&o, "n", ISC_V_COUNT), (int64_t)n);
	isc_out_fini(&o);
	isc_fn_free(f);
	/* granule, reduce returning a bad type */
	CU_ASSERT_EQUAL(mkfn(ISC_LUA, "granule = 'object'\nfunction map(e) "
			     "emit('k', 1) end\nfunction reduce(k, v) return "
			     "{} end", ISC_T_OBJ, NULL, &f), 0);
	CU_ASSERT(isc_fn_whole_object(f));
	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(run_obj(f, d, 64, 64, NULL, NULL, &o), 0);
	CU_ASSERT_EQUAL(ival(&o, "k", ISC_V_INT), 1);
	CU_ASSERT_EQUAL(isc_out_final(&o, f, NULL), -ECANCELED);
	CU_ASSERT(strstr(err_msg(), "returned a table") != NULL);
	isc_out_fini(&o);
	isc_fn_free(f);
	free(d);
	CU_ASSERT(isc_lua_mem_in_use() == 0);
}

static void test_lua_idx(void)
{
	static const char src[] =
		"function map(ext)\n"
		"  local k, total = nil, 0\n"
		"  while true do\n"
		"    local ks, vs = next(k, 250)\n"
		"    if #ks == 0 then break end\n"
		"    for i = 1, #ks do\n"
		"      if #vs[i] == 4 then\n"
		"        local v = string.unpack('<i4', vs[i])\n"
		"        total = total + v\n"
		"        if v % 100 == 1 then strata.emit(ks[i], v) end\n"
		"      end\n"
		"    end\n"
		"    k = ks[#ks]\n"
		"  end\n"
		"  emit('total', total, 'sum')\n"
		"  for kk, vv in next, {a = 1} do emit(kk, vv, 'count') end\n"
		"end\n";
	struct mem_idx m;
	struct isc_fn *f;
	struct isc_out o;
	int64_t total = 0;

	mem_idx_make(&m, 1000);
	for (int i = 0; i < 1000; i++)
		total += i % 7 ? i : 0;
	CU_ASSERT_EQUAL(mkfn(ISC_LUA, src, ISC_T_IDX, NULL, &f), 0);
	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(run_idx(f, &m, NULL, &o), 0);
	CU_ASSERT_EQUAL(ival(&o, "total", ISC_V_ISUM), total);
	CU_ASSERT_EQUAL(ival(&o, "a", ISC_V_COUNT), 1);
	CU_ASSERT_EQUAL(ival(&o, "k00101", ISC_V_INT), 101);
	CU_ASSERT_EQUAL(ival(&o, "k00901", ISC_V_INT), 901);
	CU_ASSERT_EQUAL(ival(&o, "k00301", ISC_V_INT), INT64_MIN); /* 301%7 */
	isc_out_fini(&o);
	isc_fn_free(f);
	mem_idx_free(&m);
	CU_ASSERT(isc_lua_mem_in_use() == 0);
}

/* Run a Lua script over a small object: its code, message in err_msg(). */
static int lua_run(const char *src, const struct isc_limits *lim)
{
	static double d[512];
	struct isc_fn *f;
	struct isc_out o;
	int rc = mkfn(ISC_LUA, src, ISC_T_OBJ, NULL, &f);

	if (rc != 0)
		return rc;
	isc_out_init(&o, lim && lim->il_out_max ? lim->il_out_max : 0);
	rc = run_obj(f, d, sizeof d, 1024, NULL, lim, &o);
	isc_out_fini(&o);
	isc_fn_free(f);
	return rc;
}

static struct isc_limits lim_ms(uint32_t ms)
{
	struct isc_limits l = {0};

	l.il_deadline_ns = isc_now_ns() + ms * 1000000ull;
	l.il_where = "server s9";
	return l;
}

/* src must fail with rc and a message holding want. */
static void lua_bad(const char *src, const struct isc_limits *lim, int rc,
		    const char *want)
{
	int got = lua_run(src, lim);

	if (got != rc || strstr(err_msg(), want) == NULL)
		fprintf(stderr, "\n  script %.40s...: rc %d, message '%s', "
			"want %d '%s'\n", src, got, err_msg(), rc, want);
	CU_ASSERT_EQUAL(got, rc);
	CU_ASSERT(strstr(err_msg(), want) != NULL);
	CU_ASSERT(isc_lua_mem_in_use() == 0);
}

static void test_lua_hostile(void)
{
	struct isc_limits l;
	uint64_t t0, ms;

	/* an endless loop, then one that catches the deadline */
	l = lim_ms(200);
	t0 = now_ms();
	lua_bad("function map(e) while true do end end", &l, -ETIMEDOUT,
		/* (the ms it names are what was left of the 200 when the
		 * run started: a loaded machine takes some of them first) */
		"ms exceeded on server s9");
	CU_ASSERT(strstr(err_msg(), "function t: deadline of ") != NULL);
	ms = now_ms() - t0;
	CU_ASSERT(ms >= 195 && ms < 1500);
	l = lim_ms(200);
	t0 = now_ms();
	lua_bad("function map(e) while true do pcall(function() while true "
		"do end end) end end", &l, -ETIMEDOUT, "deadline of ");
	CU_ASSERT(now_ms() - t0 < 1500);
	l = lim_ms(200);
	lua_bad("function map(e) local t = {} for i = 1, 1e12 do "
		"table.sort({3, 2, 1}, function(a, b) return a < b end) end end",
		&l, -ETIMEDOUT, "deadline");
	/* memory, and every case after it: one deadline far enough for
	 * them all on a loaded machine under ASan (they fail otherwise) */
	l = lim_ms(ISC_DEADLINE_MS_MAX);
	lua_bad("function map(e) local t = {} for i = 1, 1e9 do t[i] = "
		"{i} end end", &l, -ENOMEM,
		"function t: out of memory (cap 8 MiB) on server s9");
	l.il_mem = 1 << 20;
	lua_bad("function map(e) local s = string.rep('x', 2 << 20) end", &l,
		-ENOMEM, "out of memory (cap 1 MiB)");
	l.il_mem = 0;
	/* output */
	l.il_out_max = 10000;
	lua_bad("function map(e) for i = 1, 1e6 do emit(i, i) end end", &l,
		-E2BIG, "function t: output over 10000 bytes");
	lua_bad("function map(e) for i = 1, 1e6 do pcall(emit, i, i) end end",
		&l, -E2BIG, "output over");
	l.il_out_max = 0;
	/* combining emits stay one record */
	CU_ASSERT_EQUAL(lua_run("function map(e) for i = 1, 1e5 do "
				"emit('k', i, 'sum') end end", &l), 0);
	/* capabilities */
	lua_bad("function map(e) os.execute('true') end", &l, -ECANCELED,
		"global 'os'");
	lua_bad("function map(e) io.open('/etc/passwd') end", &l, -ECANCELED,
		"global 'io'");
	lua_bad("function map(e) require('os') end", &l, -ECANCELED,
		"global 'require'");
	lua_bad("function map(e) dofile('/etc/passwd') end", &l, -ECANCELED,
		"global 'dofile'");
	lua_bad("function map(e) string.dump(map) end", &l, -ECANCELED,
		"field 'dump'");
	lua_bad("function map(e) assert(load('\\27Lua', nil, 'b')) end", &l,
		-ECANCELED, "binary chunks are not allowed");
	lua_bad("function map(e) assert(load('\\27LuaT\\0')) end", &l,
		-ECANCELED, "attempt to load a binary chunk");
	lua_bad("function map(e) assert(load('return 1', 'x', 't', {})() == 1)"
		" collectgarbage('stop') end", &l, -ECANCELED,
		"invalid option 'stop'");
	lua_bad("function map(e) print('x'); assert(collectgarbage('count') > "
		"0); error('mine') end", &l, -ECANCELED, "t:1: mine");
	lua_bad("function map(e) error({}) end", &l, -ECANCELED,
		"error object is a table value");
	/* recursion: the Lua stack, the C stack */
	l.il_mem = 256 << 20;
	lua_bad("local function f(n) return 1 + f(n + 1) end\n"
		"function map(e) f(1) end", &l, -ECANCELED, "stack overflow");
	l.il_mem = 0;
	lua_bad("function map(e) local t = setmetatable({}, {__index = "
		"function(t, k) return t[k] end}) return t.x end", &l,
		-ECANCELED, "stack overflow");
	/* errors in host callbacks */
	lua_bad("function map(e) read(e.offset + e.length + 1) end", &l,
		-ECANCELED, "function t: map on server s9: t:1: read: offset");
	lua_bad("function map(e) read(-1) end", &l, -ECANCELED, "outside the "
		"extent");
	lua_bad("function map(e) emit({}, 1) end", &l, -ECANCELED,
		"key must be a string");
	lua_bad("function map(e) emit('k', 'v', 'sum') end", &l, -ECANCELED,
		"cannot be combined");
	lua_bad("function map(e) emit('k', 1, 'avg') end", &l, -ECANCELED,
		"invalid option 'avg'");
	lua_bad("function map(e) next('a') end", &l, -ECANCELED,
		"next: no index here");
	lua_bad("emit('k', 1)\nfunction map(e) end", &l, -ECANCELED,
		"emit: only inside map() or finish()");
	/* a failed run stays failed: no partial output from its end */
	{
		struct isc_fn *f;
		struct isc_run *r;
		struct isc_out o;
		static double d[16];

		CU_ASSERT_EQUAL(mkfn(ISC_LUA, "function map(e) emit('a', 1)\n"
				     "if e.offset > 0 then error('x') end end",
				     ISC_T_OBJ, NULL, &f), 0);
		CU_ASSERT_EQUAL(isc_run_start(&r, f, NULL, 0, NULL), 0);
		CU_ASSERT_EQUAL(isc_run_ext(r, 0, d, 64), 0);
		CU_ASSERT_EQUAL(isc_run_ext(r, 64, d + 8, 64), -ECANCELED);
		CU_ASSERT_EQUAL(isc_run_ext(r, 128, d, 8), -ECANCELED);
		isc_out_init(&o, 0);
		CU_ASSERT_EQUAL(isc_run_end(r, &o), -ECANCELED);
		CU_ASSERT_EQUAL(o.o_nr, 0);
		isc_out_fini(&o);
		isc_fn_free(f);
	}
	/* compile: syntax, bytecode, no map, granule */
	lua_bad("function map(e) if end", &l, -EINVAL, "t:1:");
	lua_bad("\x1bLuaT\x00", &l, -EINVAL, "binary");
	lua_bad("function mapp(e) end", &l, -EINVAL, "defines no function map");
	lua_bad("granule = 'block'\nfunction map(e) end", &l, -EINVAL,
		"granule must be");
	CU_ASSERT(isc_lua_mem_in_use() == 0);
}

static void test_digest(void)
{
	struct isc_fn_desc d = {ISC_LUA, "t", "function map(e) end", 19, {0}};
	struct isc_fn *f;
	uint8_t first[ISC_DIGEST_LEN];

	CU_ASSERT_EQUAL(isc_digest(&d), 0);
	memcpy(first, d.fd_digest, sizeof first);
	CU_ASSERT_EQUAL(strlen(isc_digest_short(d.fd_digest)), 12);
	d.fd_kind = ISC_DECL;
	CU_ASSERT_EQUAL(isc_digest(&d), 0);
	CU_ASSERT(memcmp(first, d.fd_digest, sizeof first) != 0);
	d.fd_kind = ISC_LUA;
	memcpy(d.fd_digest, first, sizeof first);
	d.fd_digest[0] ^= 1;
	CU_ASSERT_EQUAL(isc_fn_compile(&f, &d, ISC_T_OBJ, NULL), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "does not match its digest") != NULL);
	d.fd_digest[0] ^= 1;
	CU_ASSERT_EQUAL(isc_fn_compile(&f, &d, ISC_T_OBJ, NULL), 0);
	isc_fn_free(f);
}

/* ------------------------------------------------------------ native */

static char native_so[PATH_MAX + 32];

static int native_find(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *slash;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash == NULL)
		return -1;
	*slash = '\0';
	snprintf(native_so, sizeof native_so, "%s/isc_native_fn.so", exe);
	return access(native_so, R_OK);
}

static int native_fn(const char *path, enum isc_target t,
		     const char *const *allow, struct isc_fn **f,
		     struct isc_fn_desc *dd)
{
	struct isc_fn_desc d = {ISC_NATIVE, "nat", path, strlen(path), {0}};
	struct isc_limits lim = {.il_native_allow = allow};
	int rc = isc_digest(&d);

	if (dd != NULL)
		*dd = d;
	*f = NULL;
	return rc != 0 ? rc : isc_fn_compile(f, &d, t, &lim);
}

static void copy_file(const char *from, const char *to)
{
	FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
	char buf[4096];
	size_t n;

	CU_ASSERT_FATAL(a != NULL && b != NULL);
	while ((n = fread(buf, 1, sizeof buf, a)) > 0)
		CU_ASSERT(fwrite(buf, 1, n, b) == n);
	fclose(a);
	fclose(b);
}

static void test_native(void)
{
	const char *none[] = {NULL}, *other[] = {"/bin/true", NULL};
	const char *allow[3] = {"/bin/true", NULL, NULL};
	double d[1000];
	double sum = 0;
	struct isc_fn_desc dd;
	struct isc_fn *f;
	struct isc_out o;
	struct mem_idx m;
	struct isc_rec r;
	char copy[PATH_MAX + 32], link[PATH_MAX + 32];
	const char *dir = ut_tmpdir("isc_native");
	FILE *fp;

	CU_ASSERT_FATAL(native_find() == 0);
	for (int i = 0; i < 1000; i++)
		sum += (d[i] = i * 0.5);
	/* not allowed: no list, an empty one, another path */
	CU_ASSERT_EQUAL(native_fn(native_so, ISC_T_OBJ, NULL, &f, NULL), -EPERM);
	CU_ASSERT(strstr(err_msg(), "is not allowed by the configuration "
			 "of this process (isc_native)") != NULL);
	CU_ASSERT_EQUAL(native_fn(native_so, ISC_T_OBJ, none, &f, NULL), -EPERM);
	CU_ASSERT_EQUAL(native_fn(native_so, ISC_T_OBJ, other, &f, NULL),
			-EPERM);
	/* allowed (through a symlink: both sides resolved) */
	snprintf(link, sizeof link, "%s/fn-link.so", dir);
	CU_ASSERT_FATAL(symlink(native_so, link) == 0);
	allow[1] = link;
	CU_ASSERT_EQUAL(native_fn(native_so, ISC_T_OBJ, allow, &f, NULL), 0);
	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(run_obj(f, d, sizeof d, 800, "xy", NULL, &o), 0);
	CU_ASSERT_EQUAL(ival(&o, "count", ISC_V_COUNT), 1000);
	CU_ASSERT(near(fval(&o, "sum", ISC_V_SUM), sum));
	CU_ASSERT(find(&o, "args", ISC_V_BYTES, &r) && r.r_vlen == 2);
	isc_out_fini(&o);
	/* its error code comes back with a message */
	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(run_obj(f, d, 12, 12, NULL, NULL, &o), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "native function nat failed: -22") !=
		  NULL);
	isc_out_fini(&o);
	isc_fn_free(f);
	/* on an index */
	mem_idx_make(&m, 777);
	CU_ASSERT_EQUAL(native_fn(native_so, ISC_T_IDX, allow, &f, NULL), 0);
	isc_out_init(&o, 0);
	CU_ASSERT_EQUAL(run_idx(f, &m, NULL, &o), 0);
	CU_ASSERT_EQUAL(ival(&o, "count", ISC_V_COUNT), 777);
	isc_out_fini(&o);
	isc_fn_free(f);
	mem_idx_free(&m);
	/* a copy registered, then changed: refused */
	snprintf(copy, sizeof copy, "%s/fn.so", dir);
	copy_file(native_so, copy);
	allow[0] = copy;
	CU_ASSERT_EQUAL(native_fn(copy, ISC_T_OBJ, allow, &f, &dd), 0);
	isc_fn_free(f);
	fp = fopen(copy, "ab");
	CU_ASSERT_FATAL(fp != NULL);
	fputc(0, fp);
	fclose(fp);
	CU_ASSERT_EQUAL(isc_fn_compile(&f, &dd, ISC_T_OBJ,
				       &(struct isc_limits){
					       .il_native_allow = allow}),
			-EINVAL);
	CU_ASSERT(strstr(err_msg(), "changed since registration") != NULL);
	/* not a shared object */
	fp = fopen(copy, "wb");
	CU_ASSERT_FATAL(fp != NULL);
	fputs("not elf", fp);
	fclose(fp);
	CU_ASSERT_EQUAL(native_fn(copy, ISC_T_OBJ, allow, &f, NULL), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "cannot load") != NULL);
	unlink(copy);
	CU_ASSERT_EQUAL(native_fn(copy, ISC_T_OBJ, allow, &f, NULL), -ENOENT);
	unlink(link);
}

/* ------------------------------------------------------------- suite */


/* The deadline is a budget of the function's own time: the time between
 * two extents (the engine reading the next one) does not count, while a
 * function that spends it all in one call is stopped. */
static void test_budget(void)
{
	struct isc_limits lim = {0};
	struct isc_fn *f;
	struct isc_run *r;
	struct isc_out out;
	uint8_t d[64] = {0};
	uint64_t t0;
	int rc;

	CU_ASSERT_EQUAL_FATAL(mkfn(ISC_LUA, "function map(e) "
				   "emit('n', 1, 'sum') end\n", ISC_T_OBJ,
				   NULL, &f), 0);
	lim.il_deadline_ns = isc_now_ns() + 200 * 1000000ull;
	CU_ASSERT_EQUAL_FATAL(isc_run_start(&r, f, NULL, 0, &lim), 0);
	for (int i = 0; i < 4; i++) {
		usleep(100 * 1000); /* a slow read of the next extent */
		rc = isc_run_ext(r, (uint64_t)i * sizeof d, d, sizeof d);
		CU_ASSERT_EQUAL(rc, 0);
	}
	isc_out_init(&out, 0);
	CU_ASSERT_EQUAL(isc_run_end(r, &out), 0);
	CU_ASSERT_EQUAL(out.o_nr, 1);
	isc_out_fini(&out);
	isc_fn_free(f);
	/* the same budget spent inside one call: stopped near it */
	CU_ASSERT_EQUAL_FATAL(mkfn(ISC_LUA, "function map(e) while true do "
				   "end end\n", ISC_T_OBJ, NULL, &f), 0);
	lim.il_deadline_ns = isc_now_ns() + 200 * 1000000ull;
	CU_ASSERT_EQUAL_FATAL(isc_run_start(&r, f, NULL, 0, &lim), 0);
	usleep(300 * 1000);
	t0 = now_ms();
	CU_ASSERT_EQUAL(isc_run_ext(r, 0, d, sizeof d), -ETIMEDOUT);
	/* the idle 300 ms did not count: it ran on for most of its budget
	 * (an idle clock would have failed it at once) */
	CU_ASSERT(now_ms() - t0 >= 50);
	isc_run_abort(r);
	isc_fn_free(f);
}

int isc_ut_add(void)
{
	CU_pSuite s = CU_add_suite("isc", NULL, NULL);

	if (s == NULL || !CU_add_test(s, "out_encode", test_out_encode) ||
	    !CU_add_test(s, "out_merge", test_out_merge) ||
	    !CU_add_test(s, "out_final", test_out_final) ||
	    !CU_add_test(s, "decl_errors", test_decl_errors) ||
	    !CU_add_test(s, "decl_ops", test_decl_ops) ||
	    !CU_add_test(s, "decl_aggs", test_decl_aggs) ||
	    !CU_add_test(s, "decl_idx", test_decl_idx) ||
	    !CU_add_test(s, "lua_obj", test_lua_obj) ||
	    !CU_add_test(s, "lua_idx", test_lua_idx) ||
	    !CU_add_test(s, "lua_hostile", test_lua_hostile) ||
	    !CU_add_test(s, "digest", test_digest) ||
	    !CU_add_test(s, "native", test_native) ||
	    !CU_add_test(s, "budget", test_budget))
		return -1;
	return 0;
}
