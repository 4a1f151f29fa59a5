/*
 * gateways/hdf5/h5map.c — the store side of the HDF5 object view: the
 * message of the last failure, the record codecs, the chunk grid, index
 * and object helpers, names and the catalogue.  The walk and remove are
 * in h5map_walk.c; the import's claim and clean-up in h5map_import.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "gateways/hdf5/h5map_internal.h"

static __thread char h5m_msg[1024];

const char *h5m_errmsg(void)
{
	return h5m_msg;
}

int h5m_err(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h5m_msg, sizeof h5m_msg, fmt, ap);
	va_end(ap);
	return rc;
}

int h5m_err_clovis(int rc, const char *fmt, ...)
{
	char what[512], lib[512];
	va_list ap;

	snprintf(lib, sizeof lib, "%s", clovis_errmsg());
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (lib[0] != '\0')
		return h5m_err(rc, "%s: %s", what, lib);
	return h5m_err(rc, "%s: %s", what, clovis_strerror(rc));
}

/* ------------------------------------------------------------ encoding */

uint8_t *h5m_put_space(struct h5m_buf *b, size_t n)
{
	uint8_t *p;

	if (b->hb_oom)
		return NULL;
	if (b->hb_len + n > b->hb_cap) {
		size_t cap = b->hb_cap ? b->hb_cap : 256;

		while (cap < b->hb_len + n)
			cap *= 2;
		p = realloc(b->hb_data, cap);
		if (p == NULL) {
			b->hb_oom = 1;
			return NULL;
		}
		b->hb_data = p;
		b->hb_cap = cap;
	}
	p = b->hb_data + b->hb_len;
	b->hb_len += n;
	return p;
}

/* Append v as n little-endian bytes. */
static void put_le(struct h5m_buf *b, uint64_t v, size_t n)
{
	uint8_t *p = h5m_put_space(b, n);
	size_t i;

	for (i = 0; p != NULL && i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void h5m_put_u8(struct h5m_buf *b, uint8_t v) { put_le(b, v, 1); }
void h5m_put_u16(struct h5m_buf *b, uint16_t v) { put_le(b, v, 2); }
void h5m_put_u32(struct h5m_buf *b, uint32_t v) { put_le(b, v, 4); }
void h5m_put_u64(struct h5m_buf *b, uint64_t v) { put_le(b, v, 8); }

void h5m_put_bytes(struct h5m_buf *b, const void *p, size_t n)
{
	uint8_t *d = h5m_put_space(b, n);

	if (d != NULL && n > 0)
		memcpy(d, p, n);
}

void h5m_put_id(struct h5m_buf *b, const struct clovis_id *id)
{
	h5m_put_u64(b, id->ci_hi);
	h5m_put_u64(b, id->ci_lo);
}

void h5m_buf_free(struct h5m_buf *b)
{
	free(b->hb_data);
	memset(b, 0, sizeof *b);
}

const uint8_t *h5m_get_bytes(struct h5m_rd *r, size_t n)
{
	const uint8_t *p = r->hr_p;

	if (r->hr_bad || n > r->hr_left) {
		r->hr_bad = 1;
		return NULL;
	}
	r->hr_p += n;
	r->hr_left -= n;
	return p;
}

/* Read n little-endian bytes (0 past the end, hr_bad set). */
static uint64_t get_le(struct h5m_rd *r, size_t n)
{
	const uint8_t *p = h5m_get_bytes(r, n);
	uint64_t v = 0;
	size_t i;

	for (i = 0; p != NULL && i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

uint8_t h5m_get_u8(struct h5m_rd *r) { return (uint8_t)get_le(r, 1); }
uint16_t h5m_get_u16(struct h5m_rd *r) { return (uint16_t)get_le(r, 2); }
uint32_t h5m_get_u32(struct h5m_rd *r) { return (uint32_t)get_le(r, 4); }
uint64_t h5m_get_u64(struct h5m_rd *r) { return get_le(r, 8); }

void h5m_get_id(struct h5m_rd *r, struct clovis_id *id)
{
	id->ci_hi = h5m_get_u64(r);
	id->ci_lo = h5m_get_u64(r);
}

/* Magic and version at the head of every record. */
static void put_head(struct h5m_buf *b, uint32_t magic)
{
	h5m_put_u32(b, magic);
	h5m_put_u16(b, H5M_VERSION);
}

static int get_head(struct h5m_rd *r, uint32_t magic, const char *rec,
		    const char *what)
{
	uint32_t m = h5m_get_u32(r);
	uint16_t v = h5m_get_u16(r);

	if (r->hr_bad || m != magic)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: the %s record is not one "
			       "(magic %08x)", what, rec, m);
	if (v != H5M_VERSION)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: %s record of version %u "
			       "(this program knows %u)", what, rec, v,
			       H5M_VERSION);
	return 0;
}

void h5m_hdr_encode(struct h5m_buf *b, const struct h5m_hdr *h)
{
	uint32_t i;

	put_head(b, H5M_MAGIC_HDR);
	h5m_put_u8(b, h->hh_kind);
	h5m_put_u32(b, h->hh_link_order);
	h5m_put_u32(b, h->hh_attr_order);
	if (h->hh_kind != H5M_DATASET)
		return;
	h5m_put_id(b, &h->hh_obj);
	h5m_put_u8(b, h->hh_layout);
	h5m_put_u8(b, h->hh_vlen);
	h5m_put_u8(b, h->hh_fill_def);
	h5m_put_u8(b, h->hh_alloc_time);
	h5m_put_u8(b, h->hh_fill_time);
	h5m_put_u8(b, h->hh_unalloc);
	h5m_put_u32(b, h->hh_rank);
	h5m_put_u32(b, h->hh_block_shift);
	h5m_put_u32(b, h->hh_slot_blocks);
	h5m_put_u64(b, h->hh_chunk_bytes);
	h5m_put_u64(b, h->hh_bytes);
	h5m_put_u64(b, h->hh_chunks);
	h5m_put_u64(b, h->hh_chunks_stored);
	for (i = 0; i < h->hh_rank; i++)
		h5m_put_u64(b, h->hh_chunk[i]);
	h5m_put_u32(b, h->hh_tlen);
	h5m_put_bytes(b, h->hh_type, h->hh_tlen);
	h5m_put_u32(b, h->hh_slen);
	h5m_put_bytes(b, h->hh_space, h->hh_slen);
	h5m_put_u32(b, h->hh_flen);
	h5m_put_bytes(b, h->hh_fill, h->hh_flen);
	h5m_put_u32(b, h->hh_nfilters);
	h5m_put_u32(b, h->hh_filt_len);
	h5m_put_bytes(b, h->hh_filt, h->hh_filt_len);
}

/* The dataset part of a header. */
static void hdr_decode_dataset(struct h5m_rd *r, struct h5m_hdr *h)
{
	uint32_t i;

	h5m_get_id(r, &h->hh_obj);
	h->hh_layout = h5m_get_u8(r);
	h->hh_vlen = h5m_get_u8(r);
	h->hh_fill_def = h5m_get_u8(r);
	h->hh_alloc_time = h5m_get_u8(r);
	h->hh_fill_time = h5m_get_u8(r);
	h->hh_unalloc = h5m_get_u8(r);
	h->hh_rank = h5m_get_u32(r);
	h->hh_block_shift = h5m_get_u32(r);
	h->hh_slot_blocks = h5m_get_u32(r);
	h->hh_chunk_bytes = h5m_get_u64(r);
	h->hh_bytes = h5m_get_u64(r);
	h->hh_chunks = h5m_get_u64(r);
	h->hh_chunks_stored = h5m_get_u64(r);
	if (h->hh_rank > H5M_RANK_MAX) {
		r->hr_bad = 1;
		return;
	}
	for (i = 0; i < h->hh_rank; i++)
		h->hh_chunk[i] = h5m_get_u64(r);
	h->hh_tlen = h5m_get_u32(r);
	h->hh_type = h5m_get_bytes(r, h->hh_tlen);
	h->hh_slen = h5m_get_u32(r);
	h->hh_space = h5m_get_bytes(r, h->hh_slen);
	h->hh_flen = h5m_get_u32(r);
	h->hh_fill = h5m_get_bytes(r, h->hh_flen);
	h->hh_nfilters = h5m_get_u32(r);
	h->hh_filt_len = h5m_get_u32(r);
	h->hh_filt = h5m_get_bytes(r, h->hh_filt_len);
}

int h5m_hdr_decode(const void *v, size_t len, struct h5m_hdr *h,
		   const char *what)
{
	struct h5m_rd r = { v, len, 0 };
	int rc;

	memset(h, 0, sizeof *h);
	rc = get_head(&r, H5M_MAGIC_HDR, "header", what);
	if (rc != 0)
		return rc;
	h->hh_kind = h5m_get_u8(&r);
	h->hh_link_order = h5m_get_u32(&r);
	h->hh_attr_order = h5m_get_u32(&r);
	if (h->hh_kind == H5M_DATASET)
		hdr_decode_dataset(&r, h);
	if (r.hr_bad || r.hr_left != 0 ||
	    (h->hh_kind != H5M_GROUP && h->hh_kind != H5M_DATASET) ||
	    (h->hh_kind == H5M_DATASET &&
	     (h->hh_layout > H5M_L_CHUNKED || h->hh_block_shift <
	      CLOVIS_BLOCK_SHIFT_MIN || h->hh_block_shift >
	      CLOVIS_BLOCK_SHIFT_MAX || h->hh_nfilters > H5M_FILTERS_MAX)))
		return h5m_err(-CLOVIS_ECORRUPT, "%s: header record is "
			       "damaged (%zu bytes)", what, len);
	return 0;
}

int h5m_grid(uint32_t rank, const uint64_t *dims, const uint64_t *chunk,
	     uint64_t *nr)
{
	uint64_t n = 1, g;
	uint32_t i;

	for (i = 0; i < rank; i++) {
		if (chunk[i] == 0)
			return -EINVAL;
		if (__builtin_add_overflow(dims[i], chunk[i] - 1, &g) ||
		    __builtin_mul_overflow(n, g / chunk[i], &n))
			return -EOVERFLOW;
	}
	*nr = n;
	return 0;
}

/* The name of filter id, for listings. */
static const char *filter_name(uint32_t id)
{
	switch (id) {
	case 1: return "deflate";
	case 2: return "shuffle";
	case 3: return "fletcher32";
	case 4: return "szip";
	case 5: return "nbit";
	case 6: return "scaleoffset";
	}
	return NULL;
}

const char *h5m_filters_text(const struct h5m_hdr *h, char *buf, size_t size)
{
	struct h5m_rd r = { h->hh_filt, h->hh_filt_len, 0 };
	size_t used = 0;
	uint32_t i, j;

	buf[0] = '\0';
	for (i = 0; i < h->hh_nfilters && used < size; i++) {
		uint32_t id = h5m_get_u32(&r), n;
		const char *nm = filter_name(id);

		(void)h5m_get_u32(&r);
		n = h5m_get_u32(&r);
		if (r.hr_bad)
			break;
		used += (size_t)snprintf(buf + used, size - used, "%s", i ? "," : "");
		if (used >= size)
			break;
		if (nm != NULL)
			used += (size_t)snprintf(buf + used, size - used, "%s", nm);
		else
			used += (size_t)snprintf(buf + used, size - used,
						 "filter-%u", id);
		if (used < size && id == 1 && n >= 1)
			used += (size_t)snprintf(buf + used, size - used, "(%u)",
						 h5m_get_u32(&r)), n--;
		for (j = 0; j < n; j++)
			(void)h5m_get_u32(&r);
	}
	return buf;
}

void h5m_attr_encode(struct h5m_buf *b, const struct h5m_attr *a)
{
	put_head(b, H5M_MAGIC_ATTR);
	h5m_put_u8(b, a->ha_vlen);
	h5m_put_u32(b, a->ha_tlen);
	h5m_put_bytes(b, a->ha_type, a->ha_tlen);
	h5m_put_u32(b, a->ha_slen);
	h5m_put_bytes(b, a->ha_space, a->ha_slen);
	h5m_put_u64(b, a->ha_dlen);
	h5m_put_bytes(b, a->ha_data, a->ha_dlen);
}

int h5m_attr_decode(const void *v, size_t len, struct h5m_attr *a,
		    const char *what)
{
	struct h5m_rd r = { v, len, 0 };
	int rc;

	memset(a, 0, sizeof *a);
	rc = get_head(&r, H5M_MAGIC_ATTR, "attribute", what);
	if (rc != 0)
		return rc;
	a->ha_vlen = h5m_get_u8(&r);
	a->ha_tlen = h5m_get_u32(&r);
	a->ha_type = h5m_get_bytes(&r, a->ha_tlen);
	a->ha_slen = h5m_get_u32(&r);
	a->ha_space = h5m_get_bytes(&r, a->ha_slen);
	a->ha_dlen = h5m_get_u64(&r);
	a->ha_data = h5m_get_bytes(&r, a->ha_dlen);
	if (r.hr_bad || r.hr_left != 0)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: attribute record is "
			       "damaged (%zu bytes)", what, len);
	return 0;
}

void h5m_cat_encode(struct h5m_buf *b, const struct h5m_cat *c)
{
	const struct h5m_stats *s = &c->hc_stats;
	size_t n = strlen(c->hc_source);

	put_head(b, H5M_MAGIC_CAT);
	h5m_put_u8(b, (uint8_t)c->hc_state);
	h5m_put_u32(b, c->hc_super_version);
	h5m_put_id(b, &c->hc_root);
	h5m_put_u64(b, c->hc_ctime_ns);
	h5m_put_u64(b, s->hs_groups);
	h5m_put_u64(b, s->hs_datasets);
	h5m_put_u64(b, s->hs_attrs);
	h5m_put_u64(b, s->hs_hard);
	h5m_put_u64(b, s->hs_soft);
	h5m_put_u64(b, s->hs_chunks);
	h5m_put_u64(b, s->hs_bytes);
	h5m_put_u16(b, (uint16_t)n);
	h5m_put_bytes(b, c->hc_source, n);
}

int h5m_cat_decode(const void *v, size_t len, struct h5m_cat *c,
		   const char *what)
{
	struct h5m_rd r = { v, len, 0 };
	struct h5m_stats *s = &c->hc_stats;
	const uint8_t *src;
	uint16_t n;
	int rc;

	memset(c, 0, sizeof *c);
	rc = get_head(&r, H5M_MAGIC_CAT, "catalogue", what);
	if (rc != 0)
		return rc;
	c->hc_state = h5m_get_u8(&r);
	c->hc_super_version = h5m_get_u32(&r);
	h5m_get_id(&r, &c->hc_root);
	c->hc_ctime_ns = h5m_get_u64(&r);
	s->hs_groups = h5m_get_u64(&r);
	s->hs_datasets = h5m_get_u64(&r);
	s->hs_attrs = h5m_get_u64(&r);
	s->hs_hard = h5m_get_u64(&r);
	s->hs_soft = h5m_get_u64(&r);
	s->hs_chunks = h5m_get_u64(&r);
	s->hs_bytes = h5m_get_u64(&r);
	n = h5m_get_u16(&r);
	src = h5m_get_bytes(&r, n);
	if (r.hr_bad || n > H5M_NAME_MAX ||
	    (c->hc_state != H5M_BUILDING && c->hc_state != H5M_COMPLETE))
		return h5m_err(-CLOVIS_ECORRUPT, "%s: catalogue record is "
			       "damaged (%zu bytes)", what, len);
	memcpy(c->hc_source, src, n);
	c->hc_source[n] = '\0';
	return 0;
}

/* ---------------------------------------------------------- the store */

void h5m_id_random(struct clovis_id *id)
{
	uint64_t v[2] = { 0, 0 };

	if (getrandom(v, sizeof v, 0) != (ssize_t)sizeof v) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		v[0] ^= (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull;
		v[1] ^= (uint64_t)ts.tv_sec ^ (uint64_t)rand() << 32 ^
			(uint64_t)rand();
	}
	id->ci_hi = (v[0] & ~(1ull << 63)) | 1ull << 62;
	id->ci_lo = v[1];
}

void h5m_cat_id(const struct clovis_id *cont, struct clovis_id *id)
{
	char text[CLOVIS_ID_STR_LEN], name[96];

	snprintf(name, sizeof name, "@strata.h5.catalogue:%s",
		 clovis_id_format(cont, text));
	(void)clovis_id_parse(name, id);
}

int h5m_entity_run(struct clovis_entity *e, enum clovis_entity_opcode opc,
		   const char *what)
{
	struct clovis_op *op = NULL;
	int rc;

	rc = clovis_entity_op(e, opc, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc < 0)
		return h5m_err_clovis(rc, "%s", what);
	return 0;
}

int h5m_store_open(struct h5m_store *s, struct clovis *cl,
		   const struct clovis_id *id)
{
	char text[CLOVIS_ID_STR_LEN], what[96];
	int rc;

	memset(s, 0, sizeof *s);
	s->hs_cl = cl;
	clovis_id_format(id, text);
	rc = clovis_container_init(&s->hs_cont, cl, id);
	if (rc < 0)
		return h5m_err_clovis(rc, "container %s", text);
	snprintf(what, sizeof what, "container %s", text);
	rc = h5m_entity_run(&s->hs_cont.co_entity, CLOVIS_EO_OPEN, what);
	if (rc == -ENOENT)
		return h5m_err(rc, "container %s does not exist", text);
	s->hs_realm = &s->hs_cont.co_realm;
	return rc;
}

int h5m_idx_open(struct h5m_store *s, const struct clovis_id *id,
		 struct clovis_idx *ix, const char *what)
{
	int rc = clovis_idx_init(ix, s->hs_realm, id);

	if (rc < 0)
		return h5m_err_clovis(rc, "%s", what);
	return h5m_entity_run(&ix->in_entity, CLOVIS_EO_OPEN, what);
}

int h5m_idx_create(struct h5m_store *s, const struct clovis_id *id,
		   struct clovis_idx *ix, const char *what)
{
	int rc = clovis_idx_init(ix, s->hs_realm, id);

	if (rc < 0)
		return h5m_err_clovis(rc, "%s", what);
	return h5m_entity_run(&ix->in_entity, CLOVIS_EO_CREATE, what);
}

/* One record op with one slot; the record's rc wins over the op's 0. */
static int rec_op(struct clovis_idx *ix, enum clovis_idx_opcode opc,
		  const void *k, size_t klen, void **v, size_t *vlen,
		  uint32_t flags, const char *what)
{
	void *kp = (void *)k;
	struct clovis_bufvec keys = { 1, &kp, &klen };
	struct clovis_bufvec vals = { 1, v, vlen };
	struct clovis_op *op = NULL;
	int32_t rec = 0;
	int rc;

	rc = clovis_idx_op(ix, opc, &keys, v != NULL ? &vals : NULL, &rec,
			   flags, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc < 0)
		return h5m_err_clovis(rc, "%s", what);
	if (rec < 0)
		return h5m_err(rec, "%s: %s", what, clovis_strerror(rec));
	return 0;
}

int h5m_idx_put(struct clovis_idx *ix, const void *k, size_t klen,
		const void *v, size_t vlen, int overwrite, const char *what)
{
	void *vp = (void *)v;

	return rec_op(ix, CLOVIS_IC_PUT, k, klen, &vp, &vlen,
		      overwrite ? CLOVIS_IF_OVERWRITE : 0, what);
}

int h5m_idx_get(struct clovis_idx *ix, const void *k, size_t klen, void **v,
		size_t *vlen, const char *what)
{
	*v = NULL;
	*vlen = 0;
	return rec_op(ix, CLOVIS_IC_GET, k, klen, v, vlen, 0, what);
}

int h5m_idx_del(struct clovis_idx *ix, const void *k, size_t klen,
		const char *what)
{
	return rec_op(ix, CLOVIS_IC_DEL, k, klen, NULL, NULL, 0, what);
}

/* One NEXT page from start (klen bytes; exclude it when excl).  Fills
 * keys/vals (malloc()ed by the library) and rcs; returns the op's rc. */
static int scan_page(struct clovis_idx *ix, const uint8_t *start, size_t klen,
		     int excl, void **kb, size_t *kl, void **vb, size_t *vl,
		     int32_t *rcs, const char *what)
{
	struct clovis_bufvec keys = { H5M_PAGE, kb, kl };
	struct clovis_bufvec vals = { H5M_PAGE, vb, vl };
	struct clovis_op *op = NULL;
	int rc;

	memset(kb, 0, H5M_PAGE * sizeof *kb);
	memset(vb, 0, H5M_PAGE * sizeof *vb);
	memset(kl, 0, H5M_PAGE * sizeof *kl);
	memset(vl, 0, H5M_PAGE * sizeof *vl);
	kb[0] = (void *)start;
	kl[0] = klen;
	rc = clovis_idx_op(ix, CLOVIS_IC_NEXT, &keys, &vals, rcs,
			   excl ? CLOVIS_IF_EXCLUDE_START_KEY : 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc < 0)
		return h5m_err_clovis(rc, "%s: walk its records", what);
	return 0;
}

/* Free what a page's slots hold. */
static void page_free(void **kb, void **vb)
{
	uint32_t i;

	for (i = 0; i < H5M_PAGE; i++) {
		free(kb[i]);
		free(vb[i]);
		kb[i] = vb[i] = NULL;
	}
}

int h5m_idx_scan(struct clovis_idx *ix, int prefix, h5m_rec_fn fn, void *arg,
		 const char *what)
{
	void *kb[H5M_PAGE], *vb[H5M_PAGE];
	size_t kl[H5M_PAGE], vl[H5M_PAGE];
	int32_t rcs[H5M_PAGE];
	uint8_t start[CLOVIS_KEY_MAX];
	size_t slen = 0;
	int excl = 0, rc = 0, done = 0;
	uint32_t i;

	if (prefix >= 0)
		start[slen++] = (uint8_t)prefix;
	while (!done && rc == 0) {
		rc = scan_page(ix, slen ? start : NULL, slen, excl, kb, kl, vb,
			       vl, rcs, what);
		if (rc != 0)
			break;
		for (i = 0; i < H5M_PAGE && rc == 0 && !done; i++) {
			const uint8_t *k = kb[i];

			if (rcs[i] != 0 || k == NULL) {
				done = 1;
				break;
			}
			if (prefix >= 0 && (kl[i] == 0 || k[0] != prefix)) {
				done = 1;
				break;
			}
			rc = fn(arg, k, kl[i], vb[i], vl[i]);
			memcpy(start, k, kl[i]);
			slen = kl[i];
		}
		page_free(kb, vb);
		excl = 1;
		if (i < H5M_PAGE)
			done = 1;
	}
	return rc;
}

/* Count every record of the scan. */
static int count_rec(void *arg, const uint8_t *k, size_t klen,
		     const uint8_t *v, size_t vlen)
{
	(*(uint32_t *)arg)++;
	return 0;
}

int h5m_idx_count(struct clovis_idx *ix, int prefix, uint32_t *nr,
		  const char *what)
{
	*nr = 0;
	return h5m_idx_scan(ix, prefix, count_rec, nr, what);
}

int h5m_obj_io(struct clovis_obj *o, int write, uint64_t start, uint64_t nblk,
	       void *buf, const char *what)
{
	size_t len = (size_t)(nblk << o->ob_attr.oa_block_shift);
	struct clovis_extvec ext = { 1, &start, &nblk };
	struct clovis_bufvec data = { 1, &buf, &len };
	struct clovis_op *op = NULL;
	int rc;

	rc = clovis_obj_op(o, write ? CLOVIS_OC_WRITE : CLOVIS_OC_READ, &ext,
			   &data, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc < 0)
		return h5m_err_clovis(rc, "%s: %s blocks %llu..%llu", what,
				      write ? "write" : "read",
				      (unsigned long long)start,
				      (unsigned long long)(start + nblk - 1));
	return 0;
}

/* ------------------------------------------------------ names, catalogue */

int h5m_target_parse(const char *text, struct h5m_target *t)
{
	const char *slash = strchr(text, '/');
	size_t clen = slash ? (size_t)(slash - text) : strlen(text);
	char cont[512];

	memset(t, 0, sizeof *t);
	if (clen == 0 || clen >= sizeof cont)
		return h5m_err(-EINVAL, "'%s': expected CONTAINER[/NAME] with "
			       "CONTAINER an id (@name, HI:LO or default)",
			       text);
	memcpy(cont, text, clen);
	cont[clen] = '\0';
	if (strcmp(cont, "default") == 0)
		t->ht_cont = CLOVIS_ID_DEFAULT_CONTAINER;
	else if (clovis_id_parse(cont, &t->ht_cont) < 0)
		return h5m_err(-EINVAL, "'%s': container '%s' is not an id "
			       "(@name, HI:LO or default)", text, cont);
	if (slash == NULL)
		return 0;
	if (slash[1] == '\0' || strlen(slash + 1) > H5M_NAME_MAX ||
	    strchr(slash + 1, '/') != NULL)
		return h5m_err(-EINVAL, "'%s': NAME must be 1 to %u bytes "
			       "without '/'", text, H5M_NAME_MAX);
	snprintf(t->ht_name, sizeof t->ht_name, "%s", slash + 1);
	return 0;
}

/* "C/N" of t for messages. */
static const char *target_text(const struct h5m_target *t, char *buf,
			       size_t size)
{
	char id[CLOVIS_ID_STR_LEN];

	snprintf(buf, size, "%s/%s", clovis_id_format(&t->ht_cont, id),
		 t->ht_name);
	return buf;
}

int h5m_cat_get(struct h5m_store *s, const struct h5m_target *t,
		struct clovis_idx *cat, struct h5m_cat *rec)
{
	char what[H5M_NAME_MAX + 64];
	struct clovis_id cid;
	void *v = NULL;
	size_t vlen = 0;
	int rc;

	target_text(t, what, sizeof what);
	h5m_cat_id(&t->ht_cont, &cid);
	rc = h5m_idx_open(s, &cid, cat, "the HDF5 catalogue");
	if (rc == -ENOENT)
		return h5m_err(rc, "%s: the container holds no HDF5 file",
			       what);
	if (rc == 0)
		rc = h5m_idx_get(cat, t->ht_name, strlen(t->ht_name), &v,
				 &vlen, what);
	if (rc == -ENOENT)
		return h5m_err(rc, "%s: no HDF5 file of that name in the "
			       "container", what);
	if (rc == 0)
		rc = h5m_cat_decode(v, vlen, rec, what);
	free(v);
	return rc;
}

int h5m_cat_get_complete(struct clovis *cl, struct h5m_target *t,
			 struct h5m_store *s, struct clovis_idx *cat,
			 struct h5m_cat *rec)
{
	int rc = h5m_target_resolve(cl, t);

	if (rc == 0)
		rc = h5m_store_open(s, cl, &t->ht_cont);
	if (rc == 0)
		rc = h5m_cat_get(s, t, cat, rec);
	if (rc == 0 && rec->hc_state != H5M_COMPLETE)
		rc = h5m_err(-EBUSY, "%s: its import did not complete (it "
			     "runs, or was interrupted: 'strata h5 rm' "
			     "removes it)", t->ht_name);
	return rc;
}

/* The catalogue's names, for resolve(): count and a list for messages. */
struct names {
	uint32_t n_nr;
	char n_first[H5M_NAME_MAX + 1];
	char n_list[256];
};

static int name_rec(void *arg, const uint8_t *k, size_t klen,
		    const uint8_t *v, size_t vlen)
{
	struct names *n = arg;
	size_t used = strlen(n->n_list);

	if (n->n_nr++ == 0 && klen <= H5M_NAME_MAX) {
		memcpy(n->n_first, k, klen);
		n->n_first[klen] = '\0';
	}
	if (used + klen + 3 < sizeof n->n_list)
		snprintf(n->n_list + used, sizeof n->n_list - used, "%s%.*s",
			 used ? ", " : "", (int)klen, (const char *)k);
	return 0;
}

int h5m_target_resolve(struct clovis *cl, struct h5m_target *t)
{
	char id[CLOVIS_ID_STR_LEN];
	struct h5m_store s;
	struct clovis_idx cat;
	struct clovis_id cid;
	struct names n;
	int rc;

	if (t->ht_name[0] != '\0')
		return 0;
	clovis_id_format(&t->ht_cont, id);
	rc = h5m_store_open(&s, cl, &t->ht_cont);
	h5m_cat_id(&t->ht_cont, &cid);
	if (rc == 0)
		rc = h5m_idx_open(&s, &cid, &cat, "the HDF5 catalogue");
	if (rc == -ENOENT && s.hs_realm != NULL)
		return h5m_err(-EINVAL, "container %s holds no HDF5 file", id);
	memset(&n, 0, sizeof n);
	if (rc == 0)
		rc = h5m_idx_scan(&cat, -1, name_rec, &n, "the HDF5 catalogue");
	if (rc != 0)
		return rc;
	if (n.n_nr != 1)
		return h5m_err(-EINVAL, "container %s holds %u HDF5 files%s%s: "
			       "name one (CONTAINER/NAME)", id, n.n_nr,
			       n.n_nr ? ": " : "", n.n_list);
	snprintf(t->ht_name, sizeof t->ht_name, "%s", n.n_first);
	return 0;
}

struct list_arg {
	h5m_cat_fn la_fn;
	void *la_arg;
};

static int list_rec(void *arg, const uint8_t *k, size_t klen,
		    const uint8_t *v, size_t vlen)
{
	struct list_arg *la = arg;
	char name[H5M_NAME_MAX + 1];
	struct h5m_cat c;
	int rc;

	if (klen > H5M_NAME_MAX)
		return h5m_err(-CLOVIS_ECORRUPT, "HDF5 catalogue: a key of "
			       "%zu bytes", klen);
	memcpy(name, k, klen);
	name[klen] = '\0';
	rc = h5m_cat_decode(v, vlen, &c, name);
	if (rc == 0)
		rc = la->la_fn(la->la_arg, name, &c);
	return rc;
}

int h5m_list(struct clovis *cl, const struct clovis_id *cont, h5m_cat_fn fn,
	     void *arg)
{
	struct list_arg la = { fn, arg };
	struct h5m_store s;
	struct clovis_idx cat;
	struct clovis_id cid;
	int rc;

	rc = h5m_store_open(&s, cl, cont);
	h5m_cat_id(cont, &cid);
	if (rc == 0)
		rc = h5m_idx_open(&s, &cid, &cat, "the HDF5 catalogue");
	if (rc == -ENOENT && s.hs_realm != NULL)
		return 0; /* a container without HDF5 files */
	if (rc == 0)
		rc = h5m_idx_scan(&cat, -1, list_rec, &la, "the HDF5 catalogue");
	return rc;
}
