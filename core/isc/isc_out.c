/*
 * isc_out.c — lists of output records (isc.h "output lists"): encoding,
 * checking, iterating, merging, prefixing and finishing, and the
 * combining output of one run (isc_internal.h struct isc_comb).
 *
 * A list is records (u32 klen, key, u8 type, u32 vlen, value), all
 * little-endian.  A merge decodes both lists, sorts the records by (key
 * bytes, type) stably and writes one record per (key, type) of a combiner
 * type, every LIST and MATCH record as it is.  A run combines as it emits
 * through a hash of (key, type) to the record's offset, so a script that
 * adds to one key a million times holds one record.
 */
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/isc/isc_internal.h"

#define ISC_REC_HDR 9u          /* u32 klen + u8 type + u32 vlen */
#define ISC_HIST_NB_MAX 4096u
#define ISC_HIST_HDR 20u        /* double lo, double hi, u32 nb */
#define ISC_VAL_MAX (ISC_HIST_HDR + 8u * ISC_HIST_NB_MAX)

_Static_assert(sizeof(double) == 8 && sizeof(int64_t) == 8,
	       "numbers of the output encoding are 8 bytes");

/* ------------------------------------------------------------ helpers */

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static double getd(const uint8_t *p)
{
	uint64_t u = get64(p);
	double d;

	memcpy(&d, &u, 8);
	return d;
}

static void putd(uint8_t *p, double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	put64(p, u);
}

bool isc_vtype_comb(uint8_t type)
{
	return (type >= ISC_V_SUM && type <= ISC_V_HIST) || type == ISC_V_ISUM;
}

/* A fixed-size or bytes type and a value of its size (HIST: see below). */
static bool isc_vtype_ok(uint8_t type, size_t vlen)
{
	switch (type) {
	case ISC_V_INT: case ISC_V_FLOAT: case ISC_V_SUM: case ISC_V_MIN:
	case ISC_V_MAX: case ISC_V_COUNT: case ISC_V_ISUM:
		return vlen == 8;
	case ISC_V_MEAN:
		return vlen == 16;
	case ISC_V_HIST:
		return false;
	case ISC_V_BYTES: case ISC_V_MATCH:
		return vlen <= UINT32_MAX;
	default:
		return false;
	}
}

/* A HIST value: its bucket count agrees with its size. */
static bool isc_hist_ok(const uint8_t *v, size_t vlen)
{
	uint32_t nb;

	if (vlen < ISC_HIST_HDR + 8)
		return false;
	nb = get32(v + 16);
	return nb >= 1 && nb <= ISC_HIST_NB_MAX &&
	       vlen == ISC_HIST_HDR + 8ull * nb;
}

bool isc_val_ok(uint8_t type, const void *v, size_t vlen)
{
	return type == ISC_V_HIST ? isc_hist_ok(v, vlen) :
	       isc_vtype_ok(type, vlen);
}

/* Combine value src into dst (both of type and size vlen, checked).
 * -EINVAL: two HIST of different buckets. */
static int isc_val_combine(uint8_t type, uint8_t *dst, const uint8_t *src,
			   uint32_t vlen)
{
	double a, b;

	switch (type) {
	case ISC_V_SUM:
		putd(dst, getd(dst) + getd(src));
		return 0;
	case ISC_V_MIN: case ISC_V_MAX:
		a = getd(dst);
		b = getd(src);
		if (isnan(a) || (type == ISC_V_MIN ? b < a : b > a))
			putd(dst, b);
		return 0;
	case ISC_V_COUNT: case ISC_V_ISUM:
		put64(dst, get64(dst) + get64(src));
		return 0;
	case ISC_V_MEAN:
		putd(dst, getd(dst) + getd(src));
		put64(dst + 8, get64(dst + 8) + get64(src + 8));
		return 0;
	case ISC_V_HIST:
		if (memcmp(dst, src, ISC_HIST_HDR) != 0)
			return -EINVAL;
		for (uint32_t i = ISC_HIST_HDR; i < vlen; i += 8)
			put64(dst + i, get64(dst + i) + get64(src + i));
		return 0;
	default:
		return -EINVAL;
	}
}

/* ---------------------------------------------------------- the list */

void isc_out_init(struct isc_out *o, size_t max)
{
	memset(o, 0, sizeof *o);
	o->o_max = max ? max : ISC_OUT_DEFAULT;
}

void isc_out_fini(struct isc_out *o)
{
	free(o->o_buf);
	o->o_buf = NULL;
	o->o_len = o->o_cap = 0;
	o->o_nr = 0;
}

/* Room for need more bytes: -E2BIG past o_max, -ENOMEM. */
static int isc_out_room(struct isc_out *o, size_t need)
{
	size_t cap;
	void *p;

	if (need > o->o_max || o->o_len > o->o_max - need)
		return err_set(-E2BIG, "output over %zu bytes", o->o_max);
	if (o->o_len + need <= o->o_cap)
		return 0;
	cap = o->o_cap ? o->o_cap : 256;
	while (cap < o->o_len + need)
		cap *= 2;
	if (cap > o->o_max)
		cap = o->o_max;
	p = realloc(o->o_buf, cap);
	if (p == NULL)
		return err_set(-ENOMEM, "output of %zu bytes", cap);
	o->o_buf = p;
	o->o_cap = cap;
	return 0;
}

int isc_out_add(struct isc_out *o, const void *key, size_t klen,
		uint8_t type, const void *val, size_t vlen)
{
	uint8_t *p;
	int rc;

	if (klen > UINT32_MAX || vlen > UINT32_MAX)
		return err_set(-E2BIG, "output record of %zu + %zu bytes",
			       klen, vlen);
	rc = isc_out_room(o, ISC_REC_HDR + klen + vlen);
	if (rc != 0)
		return rc;
	p = o->o_buf + o->o_len;
	put32(p, (uint32_t)klen);
	if (klen != 0)
		memcpy(p + 4, key, klen);
	p[4 + klen] = type;
	put32(p + 5 + klen, (uint32_t)vlen);
	if (vlen != 0)
		memcpy(p + ISC_REC_HDR + klen, val, vlen);
	o->o_len += ISC_REC_HDR + klen + vlen;
	o->o_nr++;
	return 0;
}

int isc_out_next(const void *buf, size_t len, size_t *pos,
		 struct isc_rec *rec)
{
	const uint8_t *b = buf;
	size_t p = *pos;
	uint32_t kl, vl;

	if (p == len)
		return 0;
	if (p > len || len - p < ISC_REC_HDR)
		return err_set(-EBADMSG, "output list: record header cut at "
			       "byte %zu of %zu", p, len);
	kl = get32(b + p);
	if (len - p - ISC_REC_HDR < kl)
		return err_set(-EBADMSG, "output list: key of %u bytes past "
			       "the end at byte %zu", kl, p);
	vl = get32(b + p + 5 + kl);
	if (len - p - ISC_REC_HDR - kl < vl)
		return err_set(-EBADMSG, "output list: value of %u bytes past "
			       "the end at byte %zu", vl, p);
	rec->r_key = b + p + 4;
	rec->r_klen = kl;
	rec->r_type = b[p + 4 + kl];
	rec->r_val = b + p + ISC_REC_HDR + kl;
	rec->r_vlen = vl;
	*pos = p + ISC_REC_HDR + kl + vl;
	return 1;
}

int isc_out_check(const void *buf, size_t len, uint32_t *nr)
{
	struct isc_rec r;
	size_t pos = 0;
	uint32_t n = 0;
	int rc;

	if (buf == NULL && len != 0)
		return err_set(-EBADMSG, "output list: no buffer");
	while ((rc = isc_out_next(buf, len, &pos, &r)) == 1) {
		if (!isc_val_ok(r.r_type, r.r_val, r.r_vlen))
			return err_set(-EBADMSG, "output list: record %u: type "
				       "%u with a value of %u bytes", n,
				       r.r_type, r.r_vlen);
		if (n == UINT32_MAX)
			return err_set(-EBADMSG, "output list: too many "
				       "records");
		n++;
	}
	if (rc < 0)
		return rc;
	if (nr != NULL)
		*nr = n;
	return 0;
}

/* -------------------------------------------------------------- merge */

struct isc_ent {
	struct isc_rec e_r;
	size_t e_seq;
};

static int isc_key_cmp(const uint8_t *a, uint32_t al, const uint8_t *b,
		       uint32_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c != 0)
		return c;
	return al < bl ? -1 : al > bl;
}

static int isc_ent_cmp(const void *x, const void *y)
{
	const struct isc_ent *a = x, *b = y;
	int c = isc_key_cmp(a->e_r.r_key, a->e_r.r_klen, b->e_r.r_key,
			    b->e_r.r_klen);

	if (c != 0)
		return c;
	if (a->e_r.r_type != b->e_r.r_type)
		return a->e_r.r_type < b->e_r.r_type ? -1 : 1;
	return a->e_seq < b->e_seq ? -1 : a->e_seq > b->e_seq;
}

/* Decode a checked list into e[*n...]. */
static void isc_ents_add(struct isc_ent *e, size_t *n, const void *buf,
			 size_t len)
{
	size_t pos = 0;

	while (isc_out_next(buf, len, &pos, &e[*n].e_r) == 1) {
		e[*n].e_seq = *n;
		(*n)++;
	}
}

/* Write the sorted records e[0..n) into o, combining equal (key, type)
 * of combiner types. */
static int isc_ents_write(struct isc_out *o, const struct isc_ent *e,
			  size_t n, uint8_t *acc)
{
	size_t i = 0, j;
	int rc;

	while (i < n) {
		const struct isc_rec *r = &e[i].e_r;

		j = i + 1;
		if (!isc_vtype_comb(r->r_type)) {
			rc = isc_out_add(o, r->r_key, r->r_klen, r->r_type,
					 r->r_val, r->r_vlen);
			if (rc != 0)
				return rc;
			i = j;
			continue;
		}
		memcpy(acc, r->r_val, r->r_vlen);
		for (; j < n && e[j].e_r.r_type == r->r_type &&
		       isc_key_cmp(e[j].e_r.r_key, e[j].e_r.r_klen, r->r_key,
				   r->r_klen) == 0; j++)
			if (e[j].e_r.r_vlen != r->r_vlen ||
			    isc_val_combine(r->r_type, acc, e[j].e_r.r_val,
					    r->r_vlen) != 0)
				return err_set(-EINVAL, "output key '%.*s': two "
					       "histograms with different "
					       "buckets (lo, hi or count)",
					       (int)(r->r_klen < 64 ?
						     r->r_klen : 64),
					       (const char *)r->r_key);
		rc = isc_out_add(o, r->r_key, r->r_klen, r->r_type, acc,
				 r->r_vlen);
		if (rc != 0)
			return rc;
		i = j;
	}
	return 0;
}

/* Merge lists a and b (each checked) into a new list of cap max. */
static int isc_out_merge2(struct isc_out *res, size_t max, const void *a,
			  size_t alen, uint32_t anr, const void *b,
			  size_t blen, uint32_t bnr)
{
	size_t n = 0, total = (size_t)anr + bnr;
	struct isc_ent *e;
	uint8_t *acc;
	int rc;

	isc_out_init(res, max);
	if (total == 0)
		return 0;
	e = malloc(total * sizeof *e);
	acc = malloc(ISC_VAL_MAX);
	if (e == NULL || acc == NULL) {
		free(e);
		free(acc);
		return err_set(-ENOMEM, "merge of %zu output records", total);
	}
	isc_ents_add(e, &n, a, alen);
	isc_ents_add(e, &n, b, blen);
	qsort(e, n, sizeof *e, isc_ent_cmp);
	rc = isc_ents_write(res, e, n, acc);
	free(e);
	free(acc);
	if (rc != 0)
		isc_out_fini(res);
	return rc;
}

int isc_out_merge(struct isc_out *dst, const void *src, size_t len)
{
	struct isc_out res;
	uint32_t dnr, snr;
	int rc;

	rc = isc_out_check(src, len, &snr);
	if (rc != 0)
		return rc;
	rc = isc_out_check(dst->o_buf, dst->o_len, &dnr);
	if (rc != 0)
		return rc;
	rc = isc_out_merge2(&res, dst->o_max, dst->o_buf, dst->o_len, dnr,
			    src, len, snr);
	if (rc != 0)
		return rc;
	free(dst->o_buf);
	*dst = res;
	return 0;
}

int isc_out_prefix(struct isc_out *o, const void *pfx, size_t plen)
{
	struct isc_out res;
	struct isc_rec r;
	size_t pos = 0;
	uint8_t *key = NULL;
	int rc;

	isc_out_init(&res, o->o_max);
	while ((rc = isc_out_next(o->o_buf, o->o_len, &pos, &r)) == 1) {
		uint8_t *k = realloc(key, plen + r.r_klen + 1);

		if (k == NULL) {
			rc = err_set(-ENOMEM, "prefix of output keys");
			break;
		}
		key = k;
		memcpy(key, pfx, plen);
		memcpy(key + plen, r.r_key, r.r_klen);
		rc = isc_out_add(&res, key, plen + r.r_klen, r.r_type, r.r_val,
				 r.r_vlen);
		if (rc != 0)
			break;
	}
	free(key);
	if (rc < 0) {
		isc_out_fini(&res);
		return rc;
	}
	free(o->o_buf);
	*o = res;
	return 0;
}

/* Sort and combine o in place (a merge with the empty list). */
static int isc_out_norm(struct isc_out *o)
{
	return isc_out_merge(o, NULL, 0);
}

/* Every MEAN record a FLOAT of sum / count; count 0 dropped. */
static int isc_out_means(struct isc_out *o)
{
	struct isc_out res;
	struct isc_rec r;
	size_t pos = 0;
	int rc;

	isc_out_init(&res, o->o_max);
	while ((rc = isc_out_next(o->o_buf, o->o_len, &pos, &r)) == 1) {
		uint8_t v[8];

		if (r.r_type != ISC_V_MEAN) {
			rc = isc_out_add(&res, r.r_key, r.r_klen, r.r_type,
					 r.r_val, r.r_vlen);
		} else if (get64(r.r_val + 8) != 0) {
			putd(v, getd(r.r_val) / (double)get64(r.r_val + 8));
			rc = isc_out_add(&res, r.r_key, r.r_klen, ISC_V_FLOAT,
					 v, 8);
		}
		if (rc < 0)
			break;
	}
	if (rc < 0) {
		isc_out_fini(&res);
		return rc;
	}
	free(o->o_buf);
	*o = res;
	return 0;
}

int isc_out_final(struct isc_out *o, const struct isc_fn *f,
		  const struct isc_limits *lim)
{
	int rc = isc_out_norm(o);

	if (rc == 0 && f != NULL && isc_fn_has_reduce(f)) {
		struct isc_out res;

		isc_out_init(&res, o->o_max);
		rc = isc_lua_reduce(f, lim, o, &res);
		if (rc == 0) {
			free(o->o_buf);
			*o = res;
		} else {
			isc_out_fini(&res);
		}
	}
	if (rc == 0)
		rc = isc_out_means(o);
	if (rc == 0)
		rc = isc_out_norm(o);
	return rc;
}

/* --------------------------------------------------- a run's output */

void isc_comb_init(struct isc_comb *c, size_t max)
{
	memset(c, 0, sizeof *c);
	isc_out_init(&c->c_out, max);
}

void isc_comb_fini(struct isc_comb *c)
{
	isc_out_fini(&c->c_out);
	free(c->c_slot);
	c->c_slot = NULL;
	c->c_mask = c->c_used = 0;
}

static uint32_t isc_hash(const uint8_t *k, size_t kl, uint8_t type)
{
	uint32_t h = 2166136261u ^ type;     /* FNV-1a */

	for (size_t i = 0; i < kl; i++)
		h = (h ^ k[i]) * 16777619u;
	return h;
}

/* Double the hash (or make its first 64 slots). */
static int isc_comb_grow(struct isc_comb *c)
{
	uint32_t n = c->c_mask ? (c->c_mask + 1) * 2 : 64;
	uint32_t *s = calloc(n, sizeof *s);

	if (s == NULL)
		return err_set(-ENOMEM, "output hash of %u slots", n);
	for (uint32_t i = 0; c->c_mask != 0 && i <= c->c_mask; i++) {
		const uint8_t *p;
		uint32_t kl, h;

		if (c->c_slot[i] == 0)
			continue;
		p = c->c_out.o_buf + c->c_slot[i] - 1;
		kl = get32(p);
		h = isc_hash(p + 4, kl, p[4 + kl]) & (n - 1);
		while (s[h] != 0)
			h = (h + 1) & (n - 1);
		s[h] = c->c_slot[i];
	}
	free(c->c_slot);
	c->c_slot = s;
	c->c_mask = n - 1;
	return 0;
}

int isc_comb_add(struct isc_comb *c, const char *fname, const void *key,
		 size_t klen, uint8_t type, const void *val, size_t vlen)
{
	uint32_t h;
	size_t at;
	int rc;

	if (!isc_vtype_comb(type))
		goto append;
	if ((c->c_used + 1) * 2 > c->c_mask) {
		rc = isc_comb_grow(c);
		if (rc != 0)
			return rc;
	}
	h = isc_hash(key, klen, type) & c->c_mask;
	for (; c->c_slot[h] != 0; h = (h + 1) & c->c_mask) {
		uint8_t *p = c->c_out.o_buf + c->c_slot[h] - 1;
		uint32_t kl = get32(p);

		if (kl != klen || p[4 + kl] != type ||
		    memcmp(p + 4, key, klen) != 0)
			continue;
		if (get32(p + 5 + kl) != vlen ||
		    isc_val_combine(type, p + ISC_REC_HDR + kl, val,
				    (uint32_t)vlen) != 0)
			return err_set(-EINVAL, "function %s: output key "
				       "'%.*s': two histograms with different "
				       "buckets (lo, hi or count)", fname,
				       (int)(klen < 64 ? klen : 64),
				       (const char *)key);
		return 0;
	}
	at = c->c_out.o_len;
	rc = isc_out_add(&c->c_out, key, klen, type, val, vlen);
	if (rc == 0) {
		c->c_slot[h] = (uint32_t)at + 1;
		c->c_used++;
	}
	goto out;
append:
	rc = isc_out_add(&c->c_out, key, klen, type, val, vlen);
out:
	if (rc == -E2BIG)
		return err_set(rc, "function %s: output over %zu bytes", fname,
			       c->c_out.o_max);
	return rc;
}
