/*
 * isc_api_ut.c — suite "isc_api": function shipping through the Clovis API
 * (clovis.h "function shipping", clovis/isc.c, core/isc/isc_eng.c).
 * Every call's result is compared with the same computation made here over
 * the data read back through the API.  Runs against an embedded store,
 * and unchanged against a cluster when STRATA_UT_CLUSTER names one
 * (tests/integ/isc_cluster_test.sh): pdclust 4+2 objects then have their
 * units on every server.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "tests/ut.h"

static struct clovis *cl;
static char dir[512];
static char native_so[4096 + 32]; /* the sample native function beside us */
static uint64_t next_lo = 0x1000;

#define NVAL 100000u /* float64 values in the array object */

static int suite_init(void)
{
	const char *d = ut_tmpdir("isc_api");
	struct clovis_conf c = {.cc_flags = CLOVIS_CONF_CREATE,
				.cc_dev_size = 64ull << 20};

	if (d == NULL)
		return -1;
	if (ut_cluster_mode())
		next_lo = (uint64_t)time(NULL) << 24;
	snprintf(dir, sizeof dir, "%s/store", d);
	c.cc_data_dir = dir;
	/* the sample native function (core/isc/ut/native_fn.c), built
	 * beside ut_main: allowed here (embedded); a cluster's servers
	 * allow it by their cluster file (isc_cluster_test.sh) */
	{
		char exe[4096], *slash;
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

		if (n > 0) {
			exe[n] = '\0';
			slash = strrchr(exe, '/');
			if (slash != NULL) {
				*slash = '\0';
				snprintf(native_so, sizeof native_so,
					 "%s/isc_native_fn.so", exe);
			}
		}
	}
	if (!ut_cluster_mode() && native_so[0] != '\0')
		c.cc_isc_native = native_so;
	if (clovis_init(&cl, &c) != 0) {
		fprintf(stderr, "isc_api: clovis_init: %s\n", clovis_errmsg());
		return -1;
	}
	return 0;
}

static int suite_fini(void)
{
	clovis_fini(cl);
	return ut_cluster_mode() ? 0 : clovis_store_destroy(dir);
}

static struct clovis_id newid(void)
{
	return (struct clovis_id){0x15c, next_lo++};
}

static uint32_t pool_flash(void)
{
	struct clovis_pool_info pi[16];
	uint32_t n = 16;

	if (clovis_pool_list(cl, pi, &n) != 0)
		return 0;
	for (uint32_t i = 0; i < n && i < 16; i++)
		if (strcmp(pi[i].pi_name, "flash") == 0)
			return i;
	return 0;
}

static int ent_sync(struct clovis_entity *e, enum clovis_entity_opcode opc)
{
	struct clovis_op *op = NULL;
	int rc = clovis_entity_op(e, opc, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* An object of layout lay (pdclust 4+2, unit 16 KiB, or plain) in r. */
static int obj_new(struct clovis_realm *r, struct clovis_obj *o,
		   uint32_t lay)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12, .oa_layout = lay,
				    .oa_tier = CLOVIS_TIER_FLASH};
	struct clovis_id id = newid();
	int rc;

	if (lay == CLOVIS_LAYOUT_PDCLUST) {
		a.oa_pool = pool_flash();
		a.oa_data_units = 4;
		a.oa_parity_units = 2;
		a.oa_unit_shift = 14;
	}
	rc = clovis_obj_init(o, r, &id, &a);
	return rc == 0 ? ent_sync(&o->ob_entity, CLOVIS_EO_CREATE) : rc;
}

static int obj_rw(struct clovis_obj *o, enum clovis_obj_opcode opc,
		  uint64_t blk, void *buf, size_t len)
{
	uint64_t s = blk, n = len >> 12;
	struct clovis_extvec ev = {1, &s, &n};
	void *b[1] = {buf};
	size_t l[1] = {len};
	struct clovis_bufvec bv = {1, b, l};
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(o, opc, &ev, &bv, 0, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* The float64 array: NVAL values, a hole in the middle (blocks 40..47
 * never written: zeros). */
static double *vals_make(void)
{
	double *v = calloc(NVAL + 512, sizeof *v);

	for (uint32_t i = 0; v != NULL && i < NVAL; i++)
		v[i] = (double)((i * 7919u) % 1000u) - 100.0 + 0.25;
	for (uint32_t i = 40 * 512; v != NULL && i < 48 * 512; i++)
		v[i] = 0;
	return v;
}

static int array_write(struct clovis_obj *o, const double *v)
{
	size_t bytes = ((size_t)NVAL * 8 + 4095) & ~(size_t)4095;
	int rc = obj_rw(o, CLOVIS_OC_WRITE, 0, (void *)v, 40 * 4096);

	if (rc == 0)
		rc = obj_rw(o, CLOVIS_OC_WRITE, 48, (uint8_t *)v + 48 * 4096,
			    bytes - 48 * 4096);
	return rc;
}

static const char decl_stats[] =
	"# statistics of a float64 array\n"
	"record 8\n"
	"field x f64 0\n"
	"count\nmin x\nmax x\nmean x\nsum x\nhist x -100 900 10\n";

static const char lua_stats[] =
	"local mn, mx, s, n = math.huge, -math.huge, 0.0, 0\n"
	"function map(ext)\n"
	"  local d = read(ext.offset, ext.length)\n"
	"  for i = 1, #d, 8 do\n"
	"    local x = string.unpack('<d', d, i)\n"
	"    if x < mn then mn = x end\n"
	"    if x > mx then mx = x end\n"
	"    s = s + x; n = n + 1\n"
	"  end\n"
	"end\n"
	"function finish()\n"
	"  if n > 0 then emit('min', mn, 'min'); emit('max', mx, 'max') end\n"
	"  emit('sum', s, 'sum'); emit('n', n, 'sum')\n"
	"end\n";

struct want {
	double mn, mx, sum;
	uint64_t n, hist[10];
};

static void want_of(const double *v, size_t nr, struct want *w)
{
	memset(w, 0, sizeof *w);
	w->mn = INFINITY;
	w->mx = -INFINITY;
	for (size_t i = 0; i < nr; i++) {
		int b = (int)floor((v[i] + 100.0) / 100.0);

		w->mn = v[i] < w->mn ? v[i] : w->mn;
		w->mx = v[i] > w->mx ? v[i] : w->mx;
		w->sum += v[i];
		w->n++;
		b = b < 0 ? 0 : b > 9 ? 9 : b;
		w->hist[b]++;
	}
}

static bool key_is(const struct clovis_isc_rec *r, const char *k)
{
	return r->ir_klen == strlen(k) && memcmp(r->ir_key, k, r->ir_klen) == 0;
}

/* The declarative statistics' result equals w. */
static void check_decl(const struct clovis_isc_result *res,
		       const struct want *w)
{
	struct clovis_isc_rec r;
	size_t pos = 0;
	uint32_t seen = 0;

	while (clovis_isc_result_next(res, &pos, &r) == 1) {
		if (key_is(&r, "count")) {
			CU_ASSERT_EQUAL(r.ir_int, (int64_t)w->n);
			seen |= 1;
		} else if (key_is(&r, "min(x)")) {
			CU_ASSERT_DOUBLE_EQUAL(r.ir_float, w->mn, 1e-9);
			seen |= 2;
		} else if (key_is(&r, "max(x)")) {
			CU_ASSERT_DOUBLE_EQUAL(r.ir_float, w->mx, 1e-9);
			seen |= 4;
		} else if (key_is(&r, "mean(x)")) {
			CU_ASSERT_DOUBLE_EQUAL(r.ir_float, w->sum / w->n,
					       1e-6);
			seen |= 8;
		} else if (key_is(&r, "sum(x)")) {
			CU_ASSERT_DOUBLE_EQUAL(r.ir_float, w->sum,
					       1e-6 * fabs(w->sum) + 1e-6);
			seen |= 16;
		} else if (key_is(&r, "hist(x)")) {
			double lo, hi;
			uint32_t nb;
			const void *c;

			CU_ASSERT_EQUAL_FATAL(clovis_isc_hist(&r, &lo, &hi, &nb,
							      &c), 0);
			CU_ASSERT_EQUAL_FATAL(nb, 10);
			for (uint32_t i = 0; i < nb; i++) {
				uint64_t x;

				memcpy(&x, (const uint8_t *)c + 8 * i, 8);
				CU_ASSERT_EQUAL(x, w->hist[i]);
			}
			seen |= 32;
		}
	}
	CU_ASSERT_EQUAL(seen, 63);
}

static void check_lua(const struct clovis_isc_result *res,
		      const struct want *w)
{
	struct clovis_isc_rec r;
	size_t pos = 0;
	uint32_t seen = 0;

	while (clovis_isc_result_next(res, &pos, &r) == 1) {
		if (key_is(&r, "min")) {
			CU_ASSERT_DOUBLE_EQUAL(r.ir_float, w->mn, 1e-9);
			seen |= 1;
		} else if (key_is(&r, "max")) {
			CU_ASSERT_DOUBLE_EQUAL(r.ir_float, w->mx, 1e-9);
			seen |= 2;
		} else if (key_is(&r, "sum")) {
			CU_ASSERT_DOUBLE_EQUAL(r.ir_float, w->sum,
					       1e-6 * fabs(w->sum) + 1e-6);
			seen |= 4;
		} else if (key_is(&r, "n")) {
			CU_ASSERT_EQUAL(r.ir_int, (int64_t)w->n);
			seen |= 8;
		}
	}
	CU_ASSERT_EQUAL(seen, 15);
}

static int reg(const char *name, enum clovis_isc_kind k, const char *code)
{
	return clovis_isc_register(cl, name, k, code, strlen(code), NULL);
}

static int call_obj(const char *fn, const struct clovis_id *id,
		    struct clovis_isc_result *res)
{
	struct clovis_isc_call c = {.ic_fn = fn, .ic_target = CLOVIS_ISC_OBJ,
				    .ic_id = *id};

	return clovis_isc_invoke(cl, &c, res);
}

/* ----------------------------------------------------------- registry */

static void test_registry(void)
{
	struct clovis_isc_fn f, l[16];
	uint8_t dg[CLOVIS_ISC_DIGEST_LEN], dg2[CLOVIS_ISC_DIGEST_LEN];
	void *code = NULL;
	size_t clen = 0;
	uint32_t nr = 16;
	bool found = false;

	CU_ASSERT_EQUAL(clovis_isc_register(cl, "stats", CLOVIS_ISC_DECL,
					    decl_stats, strlen(decl_stats),
					    dg), 0);
	CU_ASSERT_EQUAL(clovis_isc_lookup(cl, "stats", &f, &code, &clen), 0);
	CU_ASSERT_EQUAL(f.if_kind, CLOVIS_ISC_DECL);
	CU_ASSERT_EQUAL(memcmp(f.if_digest, dg, sizeof dg), 0);
	CU_ASSERT_EQUAL_FATAL(clen, strlen(decl_stats));
	CU_ASSERT_EQUAL(memcmp(code, decl_stats, clen), 0);
	free(code);
	/* same code, same digest (content-addressed); other code, other */
	CU_ASSERT_EQUAL(clovis_isc_register(cl, "stats2", CLOVIS_ISC_DECL,
					    decl_stats, strlen(decl_stats),
					    dg2), 0);
	CU_ASSERT_EQUAL(memcmp(dg, dg2, sizeof dg), 0);
	CU_ASSERT_EQUAL(reg("luastats", CLOVIS_ISC_LUA, lua_stats), 0);
	CU_ASSERT_EQUAL(clovis_isc_lookup(cl, "luastats", &f, NULL, NULL), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(f.if_digest, dg, sizeof dg), 0);
	CU_ASSERT_EQUAL(clovis_isc_list(cl, NULL, l, &nr), 0);
	for (uint32_t i = 0; i < nr; i++)
		found |= strcmp(l[i].if_name, "stats2") == 0;
	CU_ASSERT(found);
	CU_ASSERT_EQUAL(clovis_isc_unregister(cl, "stats2"), 0);
	CU_ASSERT_EQUAL(clovis_isc_unregister(cl, "stats2"), -ENOENT);
	CU_ASSERT_EQUAL(clovis_isc_lookup(cl, "stats2", &f, NULL, NULL),
			-ENOENT);
	/* bad input: refused, named, nothing stored */
	CU_ASSERT_EQUAL(reg("bad name", CLOVIS_ISC_DECL, decl_stats), -EINVAL);
	CU_ASSERT_EQUAL(reg("", CLOVIS_ISC_DECL, decl_stats), -EINVAL);
	CU_ASSERT_EQUAL(clovis_isc_register(cl, "k", 9, "x", 1, NULL),
			-EINVAL);
	CU_ASSERT_EQUAL(reg("syntax", CLOVIS_ISC_DECL, "record 8\nfrob x\n"),
			-EINVAL);
	CU_ASSERT(strstr(clovis_errmsg(), "line 2") != NULL);
	CU_ASSERT_EQUAL(reg("luasyntax", CLOVIS_ISC_LUA, "function map(\n"),
			-EINVAL);
	CU_ASSERT_EQUAL(clovis_isc_lookup(cl, "syntax", &f, NULL, NULL),
			-ENOENT);
	CU_ASSERT_EQUAL(reg("nat", CLOVIS_ISC_NATIVE, "relative.so"), -EINVAL);
}

/* --------------------------------------------------------------- objects */

/* The statistics of an array object of layout lay, shipped, checked
 * against the client's; returns how many values the client counted (the
 * object's, padding zeros included). */
static uint64_t obj_stats(uint32_t lay)
{
	struct clovis_obj o;
	struct clovis_isc_result res;
	double *v = vals_make();
	struct want w;

	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	CU_ASSERT_EQUAL_FATAL(obj_new(clovis_default_realm(cl), &o, lay), 0);
	CU_ASSERT_EQUAL_FATAL(array_write(&o, v), 0);
	/* the client's own computation over what it reads back */
	memset(v, 0xff, (size_t)NVAL * 8);
	CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_READ, 0, v,
				     ((size_t)NVAL * 8 + 4095) & ~4095ul), 0);
	want_of(v, NVAL + (4096 - NVAL * 8 % 4096) % 4096 / 8, &w);
	CU_ASSERT_EQUAL(reg("stats", CLOVIS_ISC_DECL, decl_stats), 0);
	CU_ASSERT_EQUAL(reg("luastats", CLOVIS_ISC_LUA, lua_stats), 0);
	CU_ASSERT_EQUAL_FATAL(call_obj("stats", &o.ob_entity.en_id, &res), 0);
	check_decl(&res, &w);
	if (lay == CLOVIS_LAYOUT_PDCLUST) {
		/* shares: more than one device or server ran it */
		CU_ASSERT(res.ir_stats.is_runs >= 2);
		CU_ASSERT(res.ir_stats.is_servers >= 2);
	}
	CU_ASSERT_EQUAL(res.ir_stats.is_bytes_mapped, w.n * 8);
	if (ut_cluster_mode())
		CU_ASSERT(res.ir_stats.is_bytes_result < 4096);
	clovis_isc_result_free(&res);
	CU_ASSERT_EQUAL_FATAL(call_obj("luastats", &o.ob_entity.en_id, &res),
			      0);
	check_lua(&res, &w);
	clovis_isc_result_free(&res);
	free(v);
	return w.n;
}

/* values in the array object: NVAL, then zeros to its last block's end */
#define NPAD (NVAL + (4096 - NVAL * 8 % 4096) % 4096 / 8)

static void test_obj_pdclust(void)
{
	CU_ASSERT_EQUAL(obj_stats(CLOVIS_LAYOUT_PDCLUST), NPAD);
}

static void test_obj_plain(void)
{
	CU_ASSERT_EQUAL(obj_stats(CLOVIS_LAYOUT_PLAIN), NPAD);
}

/* A block range maps only its records. */
static void test_obj_range(void)
{
	struct clovis_obj o;
	struct clovis_isc_result res;
	struct clovis_isc_call c = {.ic_fn = "stats",
				    .ic_target = CLOVIS_ISC_OBJ};
	double *v = vals_make();
	struct want w;

	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	CU_ASSERT_EQUAL_FATAL(obj_new(clovis_default_realm(cl), &o,
				      CLOVIS_LAYOUT_PDCLUST), 0);
	CU_ASSERT_EQUAL_FATAL(array_write(&o, v), 0);
	CU_ASSERT_EQUAL(reg("stats", CLOVIS_ISC_DECL, decl_stats), 0);
	c.ic_id = o.ob_entity.en_id;
	c.ic_start_blk = 3;
	c.ic_nr_blks = 50;
	want_of(v + 3 * 512, 50 * 512, &w);
	CU_ASSERT_EQUAL_FATAL(clovis_isc_invoke(cl, &c, &res), 0);
	check_decl(&res, &w);
	clovis_isc_result_free(&res);
	free(v);
}

/* A unit on a failed device is mapped from a degraded read: the result
 * is the same (embedded: the device fails in this process). */
static void test_obj_degraded(void)
{
	struct clovis_obj o;
	struct clovis_isc_result res;
	struct clovis_dev_info di[64];
	uint32_t n = 64, fl = UINT32_MAX;
	double *v = vals_make();
	struct want w;

	if (ut_cluster_skip("obj_degraded", "fails a device of the store"))
		return;
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	CU_ASSERT_EQUAL_FATAL(obj_new(clovis_default_realm(cl), &o,
				      CLOVIS_LAYOUT_PDCLUST), 0);
	CU_ASSERT_EQUAL_FATAL(array_write(&o, v), 0);
	want_of(v, NVAL + (4096 - NVAL * 8 % 4096) % 4096 / 8, &w);
	CU_ASSERT_EQUAL(reg("stats", CLOVIS_ISC_DECL, decl_stats), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dev_list(cl, di, &n), 0);
	for (uint32_t i = 0; i < n; i++)
		if (di[i].di_tier == CLOVIS_TIER_FLASH &&
		    di[i].di_state == CLOVIS_DEV_ONLINE) {
			fl = di[i].di_index;
			break;
		}
	CU_ASSERT_NOT_EQUAL_FATAL(fl, UINT32_MAX);
	CU_ASSERT_EQUAL_FATAL(clovis_dev_fail(cl, fl), 0);
	CU_ASSERT_EQUAL_FATAL(call_obj("stats", &o.ob_entity.en_id, &res), 0);
	check_decl(&res, &w);
	CU_ASSERT(res.ir_stats.is_degraded > 0);
	clovis_isc_result_free(&res);
	free(v);
}

/* ---------------------------------------------------------------- indices */

static int idx_fill(struct clovis_realm *r, struct clovis_idx *ix,
		    uint32_t nr, uint32_t *errs)
{
	struct clovis_id id = newid();
	int rc = clovis_idx_init(ix, r, &id);

	*errs = 0;
	if (rc == 0)
		rc = ent_sync(&ix->in_entity, CLOVIS_EO_CREATE);
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		char k[32], val[64];
		void *kb[1] = {k}, *vb[1] = {val};
		size_t kl[1], vl[1];
		struct clovis_bufvec keys = {1, kb, kl}, vals = {1, vb, vl};
		struct clovis_op *op = NULL;
		int32_t rcs[1];
		bool err = i % 7 == 3;

		kl[0] = (size_t)snprintf(k, sizeof k, "log/%05u", i);
		vl[0] = (size_t)snprintf(val, sizeof val, "%s line %u",
					 err ? "ERROR" : "info", i);
		*errs += err;
		rc = clovis_idx_op(ix, CLOVIS_IC_PUT, &keys, &vals, rcs, 0, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
	}
	return rc;
}

static void test_idx(void)
{
	static const char grep[] = "where value contains \"ERROR\"\ncount\n"
				   "keys\n";
	static const char lgrep[] =
		"function map()\n"
		"  local k = nil\n"
		"  repeat\n"
		"    local ks, vs = next(k, 100)\n"
		"    for i = 1, #ks do\n"
		"      if string.find(vs[i], ARGS, 1, true) then\n"
		"        emit(ks[i], vs[i])\n"
		"      end\n"
		"      k = ks[i]\n"
		"    end\n"
		"  until #ks == 0\n"
		"end\n";
	struct clovis_idx ix;
	struct clovis_isc_result res;
	struct clovis_isc_call c = {.ic_fn = "grep",
				    .ic_target = CLOVIS_ISC_IDX};
	struct clovis_isc_rec r;
	uint32_t errs, keys = 0, lkeys = 0;
	size_t pos = 0;

	CU_ASSERT_EQUAL_FATAL(idx_fill(clovis_default_realm(cl), &ix, 300,
				       &errs), 0);
	CU_ASSERT_EQUAL(reg("grep", CLOVIS_ISC_DECL, grep), 0);
	CU_ASSERT_EQUAL(reg("lgrep", CLOVIS_ISC_LUA, lgrep), 0);
	c.ic_id = ix.in_entity.en_id;
	CU_ASSERT_EQUAL_FATAL(clovis_isc_invoke(cl, &c, &res), 0);
	while (clovis_isc_result_next(&res, &pos, &r) == 1) {
		if (key_is(&r, "count"))
			CU_ASSERT_EQUAL(r.ir_int, errs);
		if (r.ir_type == CLOVIS_ISC_V_MATCH) {
			unsigned i;

			CU_ASSERT_EQUAL(sscanf((const char *)r.ir_key,
					       "log/%05u", &i), 1);
			CU_ASSERT_EQUAL(i % 7, 3);
			keys++;
		}
	}
	CU_ASSERT_EQUAL(keys, errs);
	clovis_isc_result_free(&res);
	/* Lua, over a key range [log/00100, log/00200) */
	c.ic_fn = "lgrep";
	c.ic_args = "ERROR";
	c.ic_args_len = 5;
	c.ic_key_lo = "log/00100";
	c.ic_key_lo_len = 9;
	c.ic_key_hi = "log/00200";
	c.ic_key_hi_len = 9;
	CU_ASSERT_EQUAL_FATAL(clovis_isc_invoke(cl, &c, &res), 0);
	pos = 0;
	while (clovis_isc_result_next(&res, &pos, &r) == 1) {
		unsigned i;

		CU_ASSERT_EQUAL(r.ir_type, CLOVIS_ISC_V_BYTES);
		CU_ASSERT_EQUAL(sscanf((const char *)r.ir_key, "log/%05u", &i),
				1);
		CU_ASSERT(i >= 100 && i < 200 && i % 7 == 3);
		CU_ASSERT(r.ir_vlen > 5 && memcmp(r.ir_val, "ERROR", 5) == 0);
		lkeys++;
	}
	/* 100..199 with i % 7 == 3: 101, 108, ..., 199 */
	CU_ASSERT_EQUAL(lkeys, 15);
	clovis_isc_result_free(&res);
}

/* ------------------------------------------------------------- containers */

static void test_container(void)
{
	static const char wc[] =
		"granule = 'object'\n"
		"function map(ext)\n"
		"  local d = read(ext.offset, ext.length)\n"
		"  for w in string.gmatch(d, '%a+') do emit(w, 1, 'sum') end\n"
		"end\n";
	static const char *texts[3] = {
		"the quick brown fox jumps over the lazy dog",
		"the dog sleeps and the fox runs",
		"a fox a dog a cat"};
	struct clovis_container co;
	struct clovis_id cid = newid();
	struct clovis_isc_result res;
	struct clovis_isc_call c = {.ic_fn = "wc",
				    .ic_target = CLOVIS_ISC_CONTAINER};
	struct clovis_isc_rec r;
	uint64_t fox = 0, the = 0, total = 0;
	size_t pos = 0;

	CU_ASSERT_EQUAL_FATAL(clovis_container_init(&co, cl, &cid), 0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&co.co_entity, CLOVIS_EO_CREATE), 0);
	for (int i = 0; i < 3; i++) {
		struct clovis_obj o;
		char buf[4096];

		memset(buf, ' ', sizeof buf);
		memcpy(buf, texts[i], strlen(texts[i]));
		CU_ASSERT_EQUAL_FATAL(obj_new(&co.co_realm, &o, i == 0 ?
					      CLOVIS_LAYOUT_PDCLUST :
					      CLOVIS_LAYOUT_PLAIN), 0);
		CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_WRITE, 0, buf,
					     sizeof buf), 0);
	}
	CU_ASSERT_EQUAL(reg("wc", CLOVIS_ISC_LUA, wc), 0);
	c.ic_id = cid;
	CU_ASSERT_EQUAL_FATAL(clovis_isc_invoke(cl, &c, &res), 0);
	CU_ASSERT_EQUAL(res.ir_stats.is_members, 3);
	while (clovis_isc_result_next(&res, &pos, &r) == 1) {
		/* 16-byte member id, then the word */
		CU_ASSERT_FATAL(r.ir_klen > 16);
		if (r.ir_klen == 19 &&
		    memcmp((const uint8_t *)r.ir_key + 16, "fox", 3) == 0)
			fox += (uint64_t)r.ir_int;
		if (r.ir_klen == 19 &&
		    memcmp((const uint8_t *)r.ir_key + 16, "the", 3) == 0)
			the += (uint64_t)r.ir_int;
		total += (uint64_t)r.ir_int;
	}
	CU_ASSERT_EQUAL(fox, 3);
	CU_ASSERT_EQUAL(the, 4);
	CU_ASSERT_EQUAL(total, 9 + 7 + 6);
	clovis_isc_result_free(&res);
	/* a declarative function over a container with an index: the index
	 * is left out (a record size is for objects) */
	{
		struct clovis_idx ix;
		uint32_t errs;

		CU_ASSERT_EQUAL_FATAL(idx_fill(&co.co_realm, &ix, 10, &errs), 0);
		CU_ASSERT_EQUAL(reg("cnt", CLOVIS_ISC_DECL, "record 8\ncount\n"),
				0);
		c.ic_fn = "cnt";
		CU_ASSERT_EQUAL_FATAL(clovis_isc_invoke(cl, &c, &res), 0);
		CU_ASSERT_EQUAL(res.ir_stats.is_members, 3);
		clovis_isc_result_free(&res);
	}
}

/* ----------------------------------------------------------------- errors */

static void test_errors(void)
{
	struct clovis_obj o;
	struct clovis_isc_result res;
	struct clovis_isc_call c = {.ic_fn = "nosuch",
				    .ic_target = CLOVIS_ISC_OBJ};
	struct clovis_id none = newid();
	double v[512] = {0};

	CU_ASSERT_EQUAL_FATAL(obj_new(clovis_default_realm(cl), &o,
				      CLOVIS_LAYOUT_PDCLUST), 0);
	CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_WRITE, 0, v, sizeof v), 0);
	c.ic_id = o.ob_entity.en_id;
	CU_ASSERT_EQUAL(clovis_isc_invoke(cl, &c, &res), -ENOENT);
	CU_ASSERT(strstr(clovis_errmsg(), "nosuch") != NULL);
	CU_ASSERT_EQUAL(reg("stats", CLOVIS_ISC_DECL, decl_stats), 0);
	CU_ASSERT_EQUAL(call_obj("stats", &none, &res), -ENOENT);
	/* a record size that does not divide the unit: refused */
	CU_ASSERT_EQUAL(reg("rec12", CLOVIS_ISC_DECL, "record 12\ncount\n"), 0);
	CU_ASSERT_EQUAL(call_obj("rec12", &o.ob_entity.en_id, &res), -ENOTSUP);
	/* bad calls */
	c.ic_fn = "stats";
	c.ic_target = 7;
	CU_ASSERT_EQUAL(clovis_isc_invoke(cl, &c, &res), -EINVAL);
	c.ic_target = CLOVIS_ISC_OBJ;
	c.ic_key_lo = "a";
	c.ic_key_lo_len = 1;
	CU_ASSERT_EQUAL(clovis_isc_invoke(cl, &c, &res), -EINVAL);
	CU_ASSERT_EQUAL(clovis_isc_invoke(NULL, &c, &res), -EINVAL);
	CU_ASSERT_EQUAL(clovis_isc_invoke(cl, NULL, &res), -EINVAL);
}

/* Hostile scripts fail their call with the documented code; the store
 * (or every server) goes on serving: the next call works. */
static void test_hostile(void)
{
	static const struct {
		const char *name, *code;
		int rc;
		uint64_t mem;
	} h[] = {
		{"loop", "function map() while true do end end\n", -ETIMEDOUT, 0},
		{"bomb", "function map() local t = {} for i = 1, 1e9 do "
			 "t[i] = string.rep('x', 1000) .. i end end\n", -ENOMEM, 0},
		{"huge", "function map() for i = 1, 1e7 do emit('k' .. i, "
			 "string.rep('v', 100)) end end\n", -E2BIG, 0},
		{"osexec", "function map() os.execute('true') end\n",
		 -ECANCELED, 0},
		{"ioopen", "function map() io.open('/etc/passwd') end\n",
		 -ECANCELED, 0},
		{"bytecode", "function map() assert(load(string.char(27) .. "
			     "'Lua', nil, 'b'))() end\n", -ECANCELED, 0},
		/* Lua's stack grows in the state's memory: under the
		 * default cap the cap is reached first, with room the stack
		 * limit ("stack overflow") */
		{"deep", "local function f(n) return 1 + f(n + 1) end\n"
			 "function map() f(1) end\n", -ENOMEM, 0},
		{"deeper", "local function f(n) return 1 + f(n + 1) end\n"
			   "function map() f(1) end\n", -ECANCELED, 256u << 20},
		{"cberr", "function map(e) read(e.offset + e.length + 4096, 8) "
			  "end\n", -ECANCELED, 0},
	};
	struct clovis_obj o;
	struct clovis_isc_result res;
	struct clovis_isc_call c = {.ic_target = CLOVIS_ISC_OBJ,
				    .ic_deadline_ms = 300};
	double v[512] = {0};

	CU_ASSERT_EQUAL_FATAL(obj_new(clovis_default_realm(cl), &o,
				      CLOVIS_LAYOUT_PDCLUST), 0);
	CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_WRITE, 0, v, sizeof v), 0);
	c.ic_id = o.ob_entity.en_id;
	for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
		int rc;

		CU_ASSERT_EQUAL_FATAL(reg(h[i].name, CLOVIS_ISC_LUA, h[i].code),
				      0);
		c.ic_fn = h[i].name;
		c.ic_mem = h[i].mem;
		/* the loop's deadline short; the others long enough to reach
		 * their own limit first on a loaded (or ASan) machine */
		c.ic_deadline_ms = strcmp(h[i].name, "loop") == 0 ? 300 :
				   20000;
		rc = clovis_isc_invoke(cl, &c, &res);
		if (rc != h[i].rc)
			fprintf(stderr, "hostile %s: %d (%s)\n", h[i].name, rc,
				clovis_errmsg());
		CU_ASSERT_EQUAL(rc, h[i].rc);
		CU_ASSERT(strstr(clovis_errmsg(), h[i].name) != NULL);
		if (h[i].mem != 0)
			CU_ASSERT(strstr(clovis_errmsg(), "stack overflow") !=
				  NULL);
		/* still serving */
		CU_ASSERT_EQUAL(reg("stats", CLOVIS_ISC_DECL, decl_stats), 0);
		CU_ASSERT_EQUAL(call_obj("stats", &o.ob_entity.en_id, &res), 0);
		clovis_isc_result_free(&res);
	}
}

/* A native function is refused unless the configuration allows it. */
static void test_native_refused(void)
{
	struct clovis_obj o;
	struct clovis_isc_result res;
	double v[512] = {0};

	CU_ASSERT_EQUAL_FATAL(obj_new(clovis_default_realm(cl), &o,
				      CLOVIS_LAYOUT_PDCLUST), 0);
	CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_WRITE, 0, v, sizeof v), 0);
	/* any existing file will do: it is never loaded */
	CU_ASSERT_EQUAL_FATAL(reg("nat", CLOVIS_ISC_NATIVE, "/bin/true"), 0);
	CU_ASSERT_EQUAL(call_obj("nat", &o.ob_entity.en_id, &res), -EPERM);
	CU_ASSERT(strstr(clovis_errmsg(), "nat") != NULL);
}


/* An allowed native function gives the client's figures (embedded: this
 * client's allow list; a cluster: its servers', STRATA_UT_ISC_NATIVE=1
 * says the cluster file allows the sample). */
static void test_native_allowed(void)
{
	struct clovis_obj o;
	struct clovis_isc_result res;
	struct clovis_isc_rec r;
	double *v = vals_make();
	struct want w;
	size_t pos = 0;
	uint32_t seen = 0;
	const char *e = getenv("STRATA_UT_ISC_NATIVE");

	if ((e == NULL || strcmp(e, "1") != 0) &&
	    ut_cluster_skip("native_allowed", "the servers' cluster file "
			    "does not allow the sample"))
		goto out;
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	CU_ASSERT_EQUAL_FATAL(access(native_so, R_OK), 0);
	CU_ASSERT_EQUAL_FATAL(obj_new(clovis_default_realm(cl), &o,
				      CLOVIS_LAYOUT_PDCLUST), 0);
	CU_ASSERT_EQUAL_FATAL(array_write(&o, v), 0);
	want_of(v, NVAL + (4096 - NVAL * 8 % 4096) % 4096 / 8, &w);
	CU_ASSERT_EQUAL_FATAL(reg("nat_ok", CLOVIS_ISC_NATIVE, native_so), 0);
	CU_ASSERT_EQUAL_FATAL(call_obj("nat_ok", &o.ob_entity.en_id, &res), 0);
	while (clovis_isc_result_next(&res, &pos, &r) == 1) {
		if (key_is(&r, "count")) {
			CU_ASSERT_EQUAL(r.ir_int, (int64_t)w.n);
			seen |= 1;
		} else if (key_is(&r, "sum")) {
			CU_ASSERT_DOUBLE_EQUAL(r.ir_float, w.sum,
					       1e-6 * fabs(w.sum) + 1e-6);
			seen |= 2;
		}
	}
	CU_ASSERT_EQUAL(seen, 3);
	CU_ASSERT(res.ir_stats.is_runs >= 2);
	clovis_isc_result_free(&res);
out:
	free(v);
}

int isc_api_ut_add(void)
{
	CU_pSuite s = CU_add_suite("isc_api", suite_init, suite_fini);

	if (s == NULL)
		return -1;
	CU_add_test(s, "registry", test_registry);
	CU_add_test(s, "obj_pdclust", test_obj_pdclust);
	CU_add_test(s, "obj_plain", test_obj_plain);
	CU_add_test(s, "obj_range", test_obj_range);
	CU_add_test(s, "idx", test_idx);
	CU_add_test(s, "container", test_container);
	CU_add_test(s, "errors", test_errors);
	CU_add_test(s, "hostile", test_hostile);
	CU_add_test(s, "native_refused", test_native_refused);
	CU_add_test(s, "native_allowed", test_native_allowed);
	CU_add_test(s, "obj_degraded", test_obj_degraded);
	return 0;
}
