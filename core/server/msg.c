/*
 * msg.c — the engine-request protocol's codecs (see msg.h).
 *
 * Requests are unpacked by protobuf-c (which checks the wire format) and
 * then checked field by field here, before anything is sized from them:
 * counts first, then each length against its limit, then sums against the
 * bytes that came.  Only then are the vectors allocated, in one block.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/clu_conf.h"
#include "core/eng_repl.h"
#include "core/server/msg.h"
#include "core/server/srv_limits.h"

/* An id as text for messages ("HI:LO" in hex).  Here, not eng_id_str(),
 * so that the decoders stand alone (the fuzz target links only this
 * file). */
static const char *msg_id_str(const struct st_id *id)
{
	static __thread char buf[ST_ID_STR_LEN];

	snprintf(buf, sizeof buf, "%" PRIx64 ":%" PRIx64, id->si_hi, id->si_lo);
	return buf;
}

void msg_id_out(SId *s, const struct st_id *id)
{
	sid__init(s);
	s->hi = id->si_hi;
	s->lo = id->si_lo;
}

void msg_id_in(const SId *s, struct st_id *id)
{
	id->si_hi = s != NULL ? s->hi : 0;
	id->si_lo = s != NULL ? s->lo : 0;
}

void msg_attr_out(SAttr *a, SId *cont, const struct meta_ent *me)
{
	sattr__init(a);
	a->block_shift = me->me_block_shift;
	a->layout = me->me_layout;
	a->tier = me->me_tier;
	a->dev = me->me_dev;
	a->pool = me->me_pool;
	a->n = me->me_n;
	a->k = me->me_k;
	a->s = me->me_s;
	a->unit_shift = me->me_unit_shift;
	a->size_blocks = me->me_size_blocks;
	a->size_bytes = me->me_size_bytes;
	a->ctime_ns = me->me_ctime_ns;
	a->mtime_ns = me->me_mtime_ns;
	a->nr_records = me->me_nr_records;
	a->flags = me->me_flags;
	msg_id_out(cont, &me->me_container);
	a->container = cont;
}

/* Narrowing is safe: every caller checked the ranges (msg_attr_check). */
void msg_attr_in(const SAttr *a, struct meta_ent *me)
{
	memset(me, 0, sizeof *me);
	if (a == NULL)
		return;
	me->me_block_shift = a->block_shift;
	me->me_layout = a->layout;
	me->me_tier = a->tier;
	me->me_dev = a->dev;
	me->me_pool = a->pool;
	me->me_n = (uint8_t)a->n;
	me->me_k = (uint8_t)a->k;
	me->me_s = (uint8_t)a->s;
	me->me_unit_shift = (uint8_t)a->unit_shift;
	me->me_size_blocks = a->size_blocks;
	me->me_size_bytes = a->size_bytes;
	me->me_ctime_ns = a->ctime_ns;
	me->me_mtime_ns = a->mtime_ns;
	me->me_nr_records = a->nr_records;
	me->me_flags = a->flags;
	msg_id_in(a->container, &me->me_container);
}

/* The attribute fields a CREATE may set, in their ranges. */
static int msg_attr_check(const SAttr *a, const char *id)
{
	if (a == NULL)
		return 0;
	if (a->block_shift != 0 && (a->block_shift < ST_BLOCK_SHIFT_MIN ||
				    a->block_shift > ST_BLOCK_SHIFT_MAX))
		return err_set(-EINVAL, "request: entity %s: attr.block_shift "
			       "%u outside %u..%u", id, a->block_shift,
			       ST_BLOCK_SHIFT_MIN, ST_BLOCK_SHIFT_MAX);
	if (a->layout > ST_LAYOUT_COMPOSITE || a->tier >= ST_TIER_NR)
		return err_set(-EINVAL, "request: entity %s: attr.layout %u or "
			       "attr.tier %u unknown", id, a->layout, a->tier);
	if (a->n > ST_LAYOUT_UNITS_MAX || a->k > ST_LAYOUT_UNITS_MAX ||
	    a->s > ST_LAYOUT_UNITS_MAX)
		return err_set(-EINVAL, "request: entity %s: attr units %u+%u+%u"
			       " past %u", id, a->n, a->k, a->s,
			       ST_LAYOUT_UNITS_MAX);
	if (a->unit_shift != 0 && (a->unit_shift < ST_UNIT_SHIFT_MIN ||
				   a->unit_shift > ST_UNIT_SHIFT_MAX))
		return err_set(-EINVAL, "request: entity %s: attr.unit_shift %u"
			       " outside %u..%u", id, a->unit_shift,
			       ST_UNIT_SHIFT_MIN, ST_UNIT_SHIFT_MAX);
	if (a->dev >= LIM_DEV_MAX || a->pool >= LIM_DEV_MAX)
		return err_set(-EINVAL, "request: entity %s: attr.dev %u or "
			       "attr.pool %u out of range", id, a->dev, a->pool);
	/* size_bytes needs no bound of its own: ST_BLOCK_NR_MAX blocks of
	 * the largest size (2^74 bytes) are more than a uint64 holds, and the
	 * engine checks it against the object's own block size. */
	if (a->size_blocks > ST_BLOCK_NR_MAX)
		return err_set(-EINVAL, "request: entity %s: attr.size_blocks "
			       "%" PRIu64 " past 2^48", id, a->size_blocks);
	return 0;
}

/* Common head of entity, object and index requests. */
static int msg_head(struct msg_req *m, uint32_t kind, uint32_t lo,
		    uint32_t hi, const SId *id, const SId *cont, uint32_t rflags)
{
	struct eng_req *r = &m->mr_req;

	if (id == NULL)
		return err_set(-EINVAL, "request: id missing");
	msg_id_in(id, &r->er_id);
	msg_id_in(cont, &r->er_container);
	if (kind < lo || kind > hi)
		return err_set(-EINVAL, "request: entity %s: kind %u unknown",
			       msg_id_str(&r->er_id), kind);
	if (rflags & ~SRF_ALL)
		return err_set(-EINVAL, "request: entity %s: rflags 0x%x unknown",
			       msg_id_str(&r->er_id), rflags);
	r->er_kind = kind;
	m->mr_rflags = rflags;
	return 0;
}

static int msg_ent_decode(struct msg_req *m, const EntReq *q)
{
	struct eng_req *r = &m->mr_req;
	int rc = msg_head(m, q->kind, ER_ENT_CREATE, ER_ENT_SETATTR, q->id,
			  q->container, q->rflags);

	if (rc != 0)
		return rc;
	if (q->type < ST_ET_CONTAINER || q->type > ST_ET_IDX)
		return err_set(-EINVAL, "request: entity %s: type %u unknown",
			       msg_id_str(&r->er_id), q->type);
	rc = msg_attr_check(q->attr, msg_id_str(&r->er_id));
	if (rc != 0)
		return rc;
	r->er_type = q->type;
	msg_attr_in(q->attr, &r->er_ent);
	m->mr_incarnation = q->incarnation;
	return 0;
}

struct msg_ext {
	uint64_t s, n;
};

static int msg_ext_cmp(const void *a, const void *b)
{
	const struct msg_ext *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* Extents: as many starts as counts, 1..VEC_MAX, in range, disjoint. */
static int msg_ext_check(struct msg_req *m, const ObjReq *q, const char *id)
{
	struct msg_ext *v;
	int rc = 0;

	if (q->n_start != q->n_count || q->n_start == 0 ||
	    q->n_start > ST_VEC_MAX)
		return err_set(q->n_start > ST_VEC_MAX ? -E2BIG : -EINVAL,
			       "request: object %s: %zu starts and %zu counts "
			       "(1..%u, equal)", id, q->n_start, q->n_count,
			       ST_VEC_MAX);
	v = malloc(q->n_start * sizeof *v);
	if (v == NULL)
		return err_set(-ENOMEM, "request: object %s: extents", id);
	for (size_t i = 0; rc == 0 && i < q->n_start; i++) {
		v[i] = (struct msg_ext){q->start[i], q->count[i]};
		if (v[i].n == 0 || v[i].s >= ST_BLOCK_NR_MAX ||
		    v[i].n > ST_BLOCK_NR_MAX - v[i].s)
			rc = err_set(-EINVAL, "request: object %s: extent %zu "
				     "empty or past block 2^48", id, i);
		m->mr_blocks += v[i].n;
	}
	qsort(v, q->n_start, sizeof *v, msg_ext_cmp);
	for (size_t i = 1; rc == 0 && i < q->n_start; i++)
		if (v[i - 1].s + v[i - 1].n > v[i].s)
			rc = err_set(-EINVAL, "request: object %s: extents "
				     "overlap at block %" PRIu64, id, v[i].s);
	free(v);
	return rc;
}

static int msg_obj_decode(struct msg_req *m, const ObjReq *q, size_t bulk_len)
{
	struct eng_req *r = &m->mr_req;
	const char *id;
	uint64_t *arr;
	int rc = msg_head(m, q->kind, ER_OBJ_READ, ER_OBJ_FREE, q->id,
			  q->container, 0);

	if (rc != 0)
		return rc;
	id = msg_id_str(&r->er_id);
	rc = msg_attr_check(q->attr, id);
	if (rc == 0)
		rc = msg_ext_check(m, q, id);
	if (rc != 0)
		return rc;
	r->er_type = ST_ET_OBJ;
	msg_attr_in(q->attr, &r->er_ent);
	if (q->units && r->er_kind != ER_OBJ_READ)
		return err_set(-EINVAL, "request: object %s: units on a kind "
			       "%u op (READ only)", id, q->kind);
	m->mr_units = q->units;
	if ((r->er_kind == ER_OBJ_ALLOC || r->er_kind == ER_OBJ_FREE) &&
	    bulk_len != 0)
		return err_set(-EINVAL, "request: object %s: ALLOC/FREE with "
			       "%zu bytes of data", id, bulk_len);
	arr = malloc(q->n_start * 2 * sizeof *arr);
	if (arr == NULL)
		return err_set(-ENOMEM, "request: object %s: extents", id);
	memcpy(arr, q->start, q->n_start * sizeof *arr);
	memcpy(arr + q->n_start, q->count, q->n_start * sizeof *arr);
	m->mr_arrays = arr;
	m->mr_ext = (struct st_extvec){(uint32_t)q->n_start, arr,
					   arr + q->n_start};
	r->er_ext = &m->mr_ext;
	m->mr_incarnation = q->attr != NULL ? q->attr->ctime_ns : 0;
	return 0;
}

/* Record lengths: counts match the kind, each within its limit, the sum
 * within MSG_IDX_BYTES_MAX and equal to the bytes sent. */
static int msg_idx_lens(struct msg_req *m, const IdxReq *q, size_t bulk_len,
			const char *id)
{
	bool vals = q->kind == ER_IDX_PUT;
	size_t want_k = q->kind == ER_IDX_NEXT ? 1 : q->nr;
	uint64_t sum = 0;

	if (q->nr == 0 || q->nr > ST_VEC_MAX)
		return err_set(q->nr == 0 ? -EINVAL : -E2BIG, "request: index "
			       "%s: %u records (1..%u)", id, q->nr,
			       ST_VEC_MAX);
	if (q->n_klen != want_k || q->n_vlen != (vals ? q->nr : 0))
		return err_set(-EINVAL, "request: index %s: %zu key and %zu "
			       "value lengths for %u records", id, q->n_klen,
			       q->n_vlen, q->nr);
	for (size_t i = 0; i < q->n_klen; i++) {
		if (q->klen[i] > ST_KEY_MAX)
			return err_set(-E2BIG, "request: index %s: record %zu: "
				       "key of %u bytes > %u", id, i,
				       q->klen[i], ST_KEY_MAX);
		sum += q->klen[i];
	}
	for (size_t i = 0; i < q->n_vlen; i++) {
		if (q->vlen[i] > ST_VAL_MAX)
			return err_set(-E2BIG, "request: index %s: record %zu: "
				       "value of %u bytes > %u", id, i,
				       q->vlen[i], ST_VAL_MAX);
		sum += q->vlen[i];
	}
	if (sum > MSG_IDX_BYTES_MAX)
		return err_set(-E2BIG, "request: index %s: %" PRIu64 " bytes of"
			       " records > %llu", id, sum, MSG_IDX_BYTES_MAX);
	if ((q->recs.len != 0 && (q->recs.len != sum || bulk_len != 0)) ||
	    (q->recs.len == 0 && bulk_len != sum))
		return err_set(-EINVAL, "request: index %s: records of %" PRIu64
			       " bytes, %zu inline and %zu bulk sent", id, sum,
			       q->recs.len, bulk_len);
	m->mr_recs_len = sum;
	return 0;
}

/* One allocation for the vectors of nr records. */
static int msg_idx_alloc(struct msg_req *m, uint32_t nr, const char *id)
{
	size_t per = 2 * sizeof(void *) + 2 * sizeof(size_t) + sizeof(int32_t) +
		     2 * sizeof(uint32_t);
	uint8_t *p = calloc(nr, per);

	if (p == NULL)
		return err_set(-ENOMEM, "request: index %s: vectors", id);
	m->mr_arrays = p;
	m->mr_keys = (struct st_bufvec){nr, (void **)p,
					    (size_t *)(p + nr * sizeof(void *))};
	p += nr * (sizeof(void *) + sizeof(size_t));
	m->mr_vals = (struct st_bufvec){nr, (void **)p,
					    (size_t *)(p + nr * sizeof(void *))};
	p += nr * (sizeof(void *) + sizeof(size_t));
	m->mr_klen = (uint32_t *)p;
	m->mr_vlen = m->mr_klen + nr;
	m->mr_rcs = (int32_t *)(m->mr_vlen + nr);
	m->mr_nr = nr;
	return 0;
}

void msg_req_recs_bind(struct msg_req *m)
{
	struct eng_req *r = &m->mr_req;
	uint8_t *p = m->mr_recs;
	uint32_t nk = r->er_kind == ER_IDX_NEXT ? 1 : m->mr_nr;

	for (uint32_t i = 0; i < nk; i++) {
		m->mr_keys.bv_buf[i] = p;
		m->mr_keys.bv_len[i] = m->mr_klen[i];
		p += m->mr_klen[i];
	}
	if (r->er_kind == ER_IDX_NEXT && m->mr_start_null) {
		m->mr_keys.bv_buf[0] = NULL;
		m->mr_keys.bv_len[0] = 0;
	}
	for (uint32_t i = 0; r->er_kind == ER_IDX_PUT && i < m->mr_nr; i++) {
		m->mr_vals.bv_buf[i] = p;
		m->mr_vals.bv_len[i] = m->mr_vlen[i];
		p += m->mr_vlen[i];
	}
}

static int msg_idx_decode(struct msg_req *m, const IdxReq *q, size_t bulk_len)
{
	struct eng_req *r = &m->mr_req;
	uint32_t allowed = q->kind == ER_IDX_PUT ? ST_IF_OVERWRITE :
			   q->kind == ER_IDX_NEXT ? ST_IF_EXCLUDE_START_KEY : 0;
	const char *id;
	int rc = msg_head(m, q->kind, ER_IDX_GET, ER_IDX_NEXT, q->id,
			  q->container, q->rflags);

	if (rc != 0)
		return rc;
	id = msg_id_str(&r->er_id);
	if (q->flags & ~allowed)
		return err_set(-EINVAL, "request: index %s: flags 0x%x not "
			       "allowed for kind %u", id, q->flags, q->kind);
	if ((q->rflags & SRF_VERSIONS) &&
	    (q->kind != ER_IDX_NEXT || !(q->rflags & SRF_INTERNAL)))
		return err_set(-EINVAL, "request: index %s: rflags 0x%x: "
			       "versions only on an internal NEXT", id,
			       q->rflags);
	if (q->rflags & SRF_BEHIND)
		return err_set(-EINVAL, "request: index %s: rflags 0x%x: "
			       "SRF_BEHIND only on IDX_STATE", id, q->rflags);
	if (q->tag != 0 && q->kind != ER_IDX_PUT && q->kind != ER_IDX_DEL)
		return err_set(-EINVAL, "request: index %s: tag only on PUT "
			       "or DEL, not on kind %u", id, q->kind);
	if (q->tag > MSG_TAG_MAX)
		return err_set(-EINVAL, "request: index %s: tag 0x%" PRIx64
			       " over 63 bits", id, (uint64_t)q->tag);
	if (q->fan != 0 && ((q->kind != ER_IDX_PUT && q->kind != ER_IDX_DEL) ||
			    (q->rflags & (SRF_REPLICA | SRF_INTERNAL))))
		return err_set(-EINVAL, "request: index %s: fan 0x%" PRIx64
			       " only on a PUT or DEL to the replica that "
			       "orders it, not on kind %u rflags 0x%x", id,
			       (uint64_t)q->fan, q->kind, q->rflags);
	rc = msg_idx_lens(m, q, bulk_len, id);
	if (rc == 0)
		rc = msg_idx_alloc(m, q->nr, id);
	if (rc != 0)
		return rc;
	r->er_type = ST_ET_IDX;
	r->er_flags = q->flags;
	if (q->n_klen != 0) /* an empty repeated field's array is NULL */
		memcpy(m->mr_klen, q->klen, q->n_klen * sizeof(uint32_t));
	if (q->n_vlen != 0)
		memcpy(m->mr_vlen, q->vlen, q->n_vlen * sizeof(uint32_t));
	m->mr_start_null = q->start_null;
	m->mr_incarnation = q->incarnation;
	m->mr_seq = q->seq;
	m->mr_term = q->term;
	m->mr_tag = q->tag;
	m->mr_fan = q->fan;
	r->er_keys = &m->mr_keys;
	r->er_vals = q->kind == ER_IDX_DEL ? NULL : &m->mr_vals;
	r->er_rcs = m->mr_rcs;
	if (q->recs.len != 0) {
		m->mr_recs = malloc(q->recs.len);
		if (m->mr_recs == NULL)
			return err_set(-ENOMEM, "request: index %s: records", id);
		memcpy(m->mr_recs, q->recs.data, q->recs.len);
		msg_req_recs_bind(m);
	}
	return 0;
}

static int msg_list_decode(struct msg_req *m, const ListReq *q)
{
	struct eng_req *r = &m->mr_req;

	if (q->type < ST_ET_CONTAINER || q->type > ST_ET_IDX)
		return err_set(-EINVAL, "request: list: type %u unknown",
			       q->type);
	if (q->nr == 0 || q->nr > MSG_LIST_MAX)
		return err_set(-EINVAL, "request: list: nr %u outside 1..%u",
			       q->nr, MSG_LIST_MAX);
	r->er_type = q->type;
	msg_id_in(q->container, &r->er_container);
	msg_id_in(q->after, &m->mr_after);
	m->mr_has_after = q->has_after;
	m->mr_nr = q->nr;
	m->mr_list_home = q->home;
	m->mr_has_list_home = q->has_home;
	return 0;
}

/* The sub-layout of a layer ADD: the layout fields of a CREATE, in their
 * ranges, a plain, pdclust or mirror layout, nothing else set (the home
 * picks the device, the engine sets sizes and times). */
static int msg_layer_attr(const SAttr *a, const char *id)
{
	int rc = msg_attr_check(a, id);

	if (rc != 0)
		return rc;
	if (a->layout < ST_LAYOUT_PLAIN || a->layout > ST_LAYOUT_MIRROR)
		return err_set(-EINVAL, "request: object %s: layer.attr.layout "
			       "%u: a layer is plain (1), pdclust (2) or mirror "
			       "(3)", id, a->layout);
	if (a->dev != 0 || a->size_blocks != 0 || a->size_bytes != 0 ||
	    a->ctime_ns != 0 || a->mtime_ns != 0 || a->nr_records != 0 ||
	    a->flags != 0 ||
	    (a->container != NULL && (a->container->hi | a->container->lo)))
		return err_set(-EINVAL, "request: object %s: layer.attr: only "
			       "the sub-layout's fields (layout, tier, pool, n, "
			       "k, s, unit_shift, block_shift) may be set", id);
	return 0;
}

/* The fields a LayerReq's op takes, and only those. */
static int msg_layer_fields(const LayerReq *q, const char *id)
{
	bool add = q->op == SLY_ADD, move = q->op == SLY_MOVE;
	bool map = q->op == SLY_MAP;

	if ((q->attr != NULL) != add)
		return err_set(-EINVAL, "request: object %s: layer.attr %s", id,
			       add ? "missing on an add" : "set on another op "
			       "than an add");
	if (q->priority != 0 && !add)
		return err_set(-EINVAL, "request: object %s: layer.priority "
			       "set on another op than an add", id);
	if (q->layer != 0 && q->op != SLY_DROP && !move)
		return err_set(-EINVAL, "request: object %s: layer.layer set "
			       "on another op than a drop or move", id);
	if ((q->start != 0 || q->nr != 0) && !move && !map)
		return err_set(-EINVAL, "request: object %s: layer.start or "
			       "layer.nr set on another op than a move or "
			       "map", id);
	if (q->blk != 0 && q->op != SLY_OF)
		return err_set(-EINVAL, "request: object %s: layer.blk set on "
			       "another op than an of", id);
	return 0;
}

/* SOP_LAYER: checked whole before anything runs (msg.h). */
static int msg_layer_decode(struct msg_req *m, const LayerReq *q)
{
	struct eng_req *r = &m->mr_req;
	const char *id;
	int rc;

	if (q->id == NULL)
		return err_set(-EINVAL, "request: layer: id missing");
	msg_id_in(q->id, &r->er_id);
	id = msg_id_str(&r->er_id);
	if (q->op < SLY_ADD || q->op > SLY_SCRUB)
		return err_set(-EINVAL, "request: object %s: layer.op %u: "
			       "expected 1 (add), 2 (drop), 3 (list), 4 (move), "
			       "5 (of), 6 (map) or 7 (scrub)", id, q->op);
	rc = msg_layer_fields(q, id);
	if (rc == 0 && q->op == SLY_ADD)
		rc = msg_layer_attr(q->attr, id);
	if (rc != 0)
		return rc;
	if ((q->op == SLY_MOVE || q->op == SLY_MAP) &&
	    (q->nr == 0 || q->start >= ST_BLOCK_NR_MAX ||
	     q->nr > ST_BLOCK_NR_MAX - q->start))
		return err_set(-EINVAL, "request: object %s: layer.start %"
			       PRIu64 " + layer.nr %" PRIu64 ": empty or past "
			       "block 2^48", id, q->start, q->nr);
	if (q->op == SLY_OF && q->blk >= ST_BLOCK_NR_MAX)
		return err_set(-EINVAL, "request: object %s: layer.blk %"
			       PRIu64 " past block 2^48", id, q->blk);
	r->er_type = ST_ET_OBJ;
	if (q->op == SLY_ADD) {
		r->er_ent.me_layout = q->attr->layout;
		r->er_ent.me_tier = q->attr->tier;
		r->er_ent.me_pool = q->attr->pool;
		r->er_ent.me_n = (uint8_t)q->attr->n;
		r->er_ent.me_k = (uint8_t)q->attr->k;
		r->er_ent.me_s = (uint8_t)q->attr->s;
		r->er_ent.me_unit_shift = (uint8_t)q->attr->unit_shift;
		r->er_ent.me_block_shift = q->attr->block_shift;
	}
	m->mr_lop = q->op;
	m->mr_incarnation = q->incarnation;
	m->mr_priority = q->priority;
	m->mr_layer = q->layer;
	m->mr_start = q->op == SLY_OF ? q->blk : q->start;
	m->mr_count = q->nr;
	return 0;
}

/* Unpack with protobuf-c, then check; the unpacked message is freed. */
int msg_req_decode(struct msg_req *m, uint32_t op, const void *body,
		   size_t len, size_t bulk_len)
{
	const uint8_t *b = body;
	ProtobufCMessage *pb = NULL;
	int rc;

	memset(m, 0, sizeof *m);
	m->mr_op = op;
	if (op == SOP_STATUS || op == SOP_CONF_GET)
		return len == 0 && bulk_len == 0 ? 0 :
		       err_set(-EINVAL, "request: opcode %u takes no body", op);
	if (op != SOP_OBJ && bulk_len != 0 && op != SOP_IDX)
		return err_set(-EINVAL, "request: opcode %u takes no bulk", op);
	switch (op) {
	case SOP_ENT:
		pb = (ProtobufCMessage *)ent_req__unpack(NULL, len, b);
		break;
	case SOP_OBJ:
		pb = (ProtobufCMessage *)obj_req__unpack(NULL, len, b);
		break;
	case SOP_IDX:
	case SOP_IDX_STATE:
		pb = (ProtobufCMessage *)idx_req__unpack(NULL, len, b);
		break;
	case SOP_LIST:
		pb = (ProtobufCMessage *)list_req__unpack(NULL, len, b);
		break;
	case SOP_METRICS:
		pb = (ProtobufCMessage *)metrics_req__unpack(NULL, len, b);
		break;
	case SOP_CLIENT_STATS:
		pb = (ProtobufCMessage *)client_stats__unpack(NULL, len, b);
		break;
	case SOP_LAYER:
		pb = (ProtobufCMessage *)layer_req__unpack(NULL, len, b);
		break;
	default:
		return err_set(-EBADMSG, "request: opcode %u unknown", op);
	}
	if (pb == NULL)
		return err_set(-EBADMSG, "request: opcode %u: body of %zu bytes "
			       "is not a valid message", op, len);
	switch (op) {
	case SOP_ENT:
		rc = msg_ent_decode(m, (EntReq *)pb);
		break;
	case SOP_OBJ:
		rc = msg_obj_decode(m, (ObjReq *)pb, bulk_len);
		break;
	case SOP_IDX:
		rc = msg_idx_decode(m, (IdxReq *)pb, bulk_len);
		break;
	case SOP_IDX_STATE:
		rc = ((IdxReq *)pb)->id == NULL
			     ? err_set(-EINVAL, "request: idx_state: id missing")
			     : 0;
		msg_id_in(((IdxReq *)pb)->id, &m->mr_req.er_id);
		m->mr_rflags = ((IdxReq *)pb)->rflags &
			       (SRF_VERIFY | SRF_TOMB_GC | SRF_BEHIND);
		m->mr_behind = ((IdxReq *)pb)->behind;
		m->mr_from = ((IdxReq *)pb)->from;
		m->mr_seq = ((IdxReq *)pb)->seq; /* SRF_TOMB_GC: digest */
		m->mr_term = ((IdxReq *)pb)->term;
		if (rc == 0 && (m->mr_rflags & SRF_BEHIND) &&
		    (m->mr_rflags & SRF_TOMB_GC))
			rc = err_set(-EINVAL, "request: idx_state %s: "
				     "SRF_BEHIND and SRF_TOMB_GC together",
				     msg_id_str(&m->mr_req.er_id));
		if (rc == 0 && (m->mr_rflags & SRF_BEHIND) &&
		    m->mr_behind == 0)
			rc = err_set(-EINVAL, "request: idx_state %s: "
				     "SRF_BEHIND with an empty behind mask",
				     msg_id_str(&m->mr_req.er_id));
		break;
	case SOP_LIST:
		rc = msg_list_decode(m, (ListReq *)pb);
		break;
	case SOP_CLIENT_STATS:
		m->mr_cstats = malloc(sizeof *m->mr_cstats);
		rc = m->mr_cstats == NULL ?
		     err_set(-ENOMEM, "request: client stats: no memory") :
		     msg_cstats_decode((ClientStats *)pb, m->mr_cstats);
		break;
	case SOP_LAYER:
		rc = msg_layer_decode(m, (LayerReq *)pb);
		break;
	default: /* SOP_METRICS */
		m->mr_prio = ((MetricsReq *)pb)->min_priority;
		m->mr_json = ((MetricsReq *)pb)->json;
		m->mr_records = ((MetricsReq *)pb)->records;
		m->mr_max_records = ((MetricsReq *)pb)->max_records;
		if (m->mr_max_records > 10000)
			rc = err_set(-EINVAL, "request: metrics: max_records "
				     "%u over 10000", m->mr_max_records);
		else if (m->mr_prio > 100)
			rc = err_set(-EINVAL, "request: metrics: min_priority "
				     "%u over 100", m->mr_prio);
		else
			rc = 0;
		break;
	}
	protobuf_c_message_free_unpacked(pb, NULL);
	return rc;
}

void msg_req_fini(struct msg_req *m)
{
	struct eng_req *r = &m->mr_req;

	if (m->mr_op == SOP_IDX && r->er_kind == ER_IDX_NEXT &&
	    m->mr_arrays != NULL) {
		/* NEXT filled its slots with malloc'd keys and values. */
		for (uint32_t i = 0; i < m->mr_nr; i++) {
			if (m->mr_rcs[i] != 0)
				continue;
			/* A key that is not in the request's records (none
			 * when mr_recs is NULL) was malloc'd by NEXT. */
			if (m->mr_recs == NULL ||
			    (uint8_t *)m->mr_keys.bv_buf[i] < m->mr_recs ||
			    (uint8_t *)m->mr_keys.bv_buf[i] >=
				    m->mr_recs + m->mr_recs_len)
				free(m->mr_keys.bv_buf[i]);
			free(m->mr_vals.bv_buf[i]);
		}
	} else if (m->mr_op == SOP_IDX && r->er_kind == ER_IDX_GET &&
		   m->mr_arrays != NULL) {
		for (uint32_t i = 0; i < m->mr_nr; i++)
			if (m->mr_rcs[i] == 0)
				free(m->mr_vals.bv_buf[i]);
	}
	free(m->mr_arrays);
	free(m->mr_recs);
	free(m->mr_data);
	free(m->mr_cstats);
	m->mr_arrays = m->mr_recs = NULL;
	m->mr_data = NULL;
	m->mr_cstats = NULL;
}

int msg_cstats_decode(const ClientStats *pb, struct msg_cstats *out)
{
	uint32_t seen = 0;

	memset(out, 0, sizeof *out);
	if (pb->scheme != MSG_CSTATS_SCHEME)
		return err_set(-EINVAL, "client stats: scheme %u: only %u is "
			       "known", pb->scheme, MSG_CSTATS_SCHEME);
	if (pb->n_ops > MSG_CSTATS_OPS)
		return err_set(-EINVAL, "client stats: %zu ops: at most %u",
			       pb->n_ops, MSG_CSTATS_OPS);
	for (size_t i = 0; i < pb->n_ops; i++) {
		const OpStats *o = pb->ops[i];
		struct msg_cstats_op *d;

		if (o->op >= MSG_CSTATS_OPS)
			return err_set(-EINVAL, "client stats: op %u: ops are "
				       "0..%u", o->op, MSG_CSTATS_OPS - 1);
		d = &out->cs_op[o->op];
		if (seen & 1u << o->op)
			return err_set(-EINVAL, "client stats: op %u given "
				       "twice", o->op);
		seen |= 1u << o->op;
		if (o->n_buckets > MSG_CSTATS_BUCKETS)
			return err_set(-EINVAL, "client stats: op %u: %zu "
				       "buckets: at most %u", o->op,
				       o->n_buckets, MSG_CSTATS_BUCKETS);
		for (size_t b = 0; b < o->n_buckets; b++) {
			d->co_b[b] = o->buckets[b];
			if (__builtin_add_overflow(d->co_count, o->buckets[b],
						   &d->co_count))
				return err_set(-EINVAL, "client stats: op %u: "
					       "buckets sum past 2^64", o->op);
		}
		if (o->failed > d->co_count)
			return err_set(-EINVAL, "client stats: op %u: %" PRIu64
				       " failed of %" PRIu64 " ops", o->op,
				       o->failed, d->co_count);
		d->co_failed = o->failed;
		d->co_bytes = o->bytes;
		d->co_sum_us = o->sum_us;
		d->co_max_us = o->max_us;
	}
	out->cs_version = MSG_CSTATS_SCHEME;
	out->cs_read_only = pb->read_only;
	out->cs_clients = pb->clients;
	return 0;
}

int msg_cstats_reply(const void *body, size_t len, struct msg_cstats *out)
{
	ClientStats *cs = NULL;
	Reply *rp = NULL;
	int rc = msg_reply_decode(body, len, 0, &rp);

	if (rc == 0 &&
	    (cs = client_stats__unpack(NULL, rp->text.len, rp->text.data)) ==
	    NULL)
		rc = err_set(-EBADMSG, "client statistics: a reply that is not "
			     "a ClientStats");
	if (rc == 0)
		rc = msg_cstats_decode(cs, out);
	if (cs != NULL)
		client_stats__free_unpacked(cs, NULL);
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	return rc;
}

int msg_cstats_encode(const struct msg_cstats *c, bool read_only,
		      uint8_t **buf, size_t *len)
{
	ClientStats pb = CLIENT_STATS__INIT;
	OpStats ops[MSG_CSTATS_OPS], *opp[MSG_CSTATS_OPS];
	struct msg_buf b;
	int rc;

	pb.scheme = MSG_CSTATS_SCHEME;
	pb.clients = c->cs_clients;
	pb.read_only = read_only;
	pb.ops = opp;
	for (uint32_t i = 0; i < MSG_CSTATS_OPS; i++) {
		const struct msg_cstats_op *o = &c->cs_op[i];
		uint32_t nb = MSG_CSTATS_BUCKETS;

		if (o->co_count == 0)
			continue;
		while (nb > 0 && o->co_b[nb - 1] == 0)
			nb--;
		op_stats__init(&ops[pb.n_ops]);
		ops[pb.n_ops].op = i;
		ops[pb.n_ops].failed = o->co_failed;
		ops[pb.n_ops].bytes = o->co_bytes;
		ops[pb.n_ops].sum_us = o->co_sum_us;
		ops[pb.n_ops].max_us = o->co_max_us;
		ops[pb.n_ops].n_buckets = nb;
		ops[pb.n_ops].buckets = (uint64_t *)o->co_b;
		opp[pb.n_ops] = &ops[pb.n_ops];
		pb.n_ops++;
	}
	rc = msg_pack(&pb.base, &b);
	if (rc != 0)
		return rc;
	*buf = b.mb_p;
	*len = b.mb_len;
	return 0;
}

int msg_pack(const ProtobufCMessage *pb, struct msg_buf *b)
{
	size_t n = protobuf_c_message_get_packed_size(pb);

	b->mb_p = malloc(n ? n : 1);
	if (b->mb_p == NULL)
		return err_set(-ENOMEM, "message of %zu bytes", n);
	b->mb_len = protobuf_c_message_pack(pb, b->mb_p);
	return 0;
}

int msg_recs_pack(const struct st_bufvec *keys,
		  const struct st_bufvec *vals, uint32_t from, uint32_t nr,
		  uint32_t *klen, uint32_t *vlen, uint8_t **out,
		  size_t *out_len)
{
	uint64_t sum = 0;
	uint8_t *p;

	for (uint32_t i = 0; i < nr; i++) {
		klen[i] = keys->bv_buf[from + i] != NULL
				  ? (uint32_t)keys->bv_len[from + i] : 0;
		sum += klen[i];
		if (vals != NULL) {
			vlen[i] = (uint32_t)vals->bv_len[from + i];
			sum += vlen[i];
		}
	}
	if (sum > MSG_IDX_BYTES_MAX)
		return err_set(-E2BIG, "index op: %" PRIu64 " bytes of records"
			       " > %llu", sum, MSG_IDX_BYTES_MAX);
	p = malloc(sum ? sum : 1);
	if (p == NULL)
		return err_set(-ENOMEM, "index op: records");
	*out = p;
	*out_len = sum;
	for (uint32_t i = 0; i < nr; i++) {
		if (klen[i] != 0)
			memcpy(p, keys->bv_buf[from + i], klen[i]);
		p += klen[i];
	}
	for (uint32_t i = 0; vals != NULL && i < nr; i++) {
		if (vlen[i] != 0)
			memcpy(p, vals->bv_buf[from + i], vlen[i]);
		p += vlen[i];
	}
	return 0;
}

int msg_reply_decode(const void *body, size_t len, uint32_t want_rcs,
		     Reply **out)
{
	Reply *rp = reply__unpack(NULL, len, body);
	uint64_t sum = 0;

	if (rp == NULL)
		return err_set(-EBADMSG, "reply of %zu bytes is not a valid "
			       "message", len);
	for (size_t i = 0; i < rp->n_klen; i++)
		sum += rp->klen[i];
	for (size_t i = 0; i < rp->n_vlen; i++)
		sum += rp->vlen[i];
	if ((want_rcs != 0 && (rp->n_rcs > want_rcs || rp->done > want_rcs)) ||
	    sum != rp->recs.len || rp->n_ids > MSG_LIST_MAX) {
		size_t nrcs = rp->n_rcs;
		uint32_t done = rp->done;

		reply__free_unpacked(rp, NULL);
		return err_set(-EBADMSG, "reply: %zu rcs, %u done for %u records,"
			       " or record lengths not adding up", nrcs, done,
			       want_rcs);
	}
	*out = rp;
	return 0;
}

/* ------------------------------------------------- remote devices */

int msg_rdev_decode(uint32_t op, const void *body, size_t len,
		    size_t bulk_len, RdevReq **out)
{
	RdevReq *q;
	int rc = 0;

	*out = NULL;
	if (op < SOP_RDEV_WRITE || op >= SOP_RDEV_END)
		return err_set(-EINVAL, "request: opcode %u is not a remote "
			       "device opcode", op);
	q = rdev_req__unpack(NULL, len, body);
	if (q == NULL)
		return err_set(-EBADMSG, "request: opcode %u: body of %zu bytes "
			       "is not an RdevReq", op, len);
	if (q->home >= CLU_SERVERS_MAX)
		rc = err_set(-EINVAL, "request: rdev.home %u: at most %u "
			     "servers", q->home, CLU_SERVERS_MAX);
	else if (q->off % LIM_ALLOC_UNIT != 0 || q->len % LIM_ALLOC_UNIT != 0)
		rc = err_set(-EINVAL, "request: rdev.off %" PRIu64 " / rdev.len "
			     "%" PRIu64 ": not multiples of %u", q->off, q->len,
			     LIM_ALLOC_UNIT);
	else if (q->off > UINT64_MAX - q->len)
		rc = err_set(-EINVAL, "request: rdev.off %" PRIu64 " + len %"
			     PRIu64 " overflows", q->off, q->len);
	else if (op == SOP_RDEV_SYNC && (q->len != 0 || bulk_len != 0))
		rc = err_set(-EINVAL, "request: rdev sync with %" PRIu64
			     " bytes (len and bulk must be 0)", q->len);
	else if (op != SOP_RDEV_SYNC &&
		 (q->len == 0 || q->len > MSG_RDEV_MAX))
		rc = err_set(q->len > MSG_RDEV_MAX ? -E2BIG : -EINVAL,
			     "request: rdev.len %" PRIu64 ": expected 1..%llu",
			     q->len, MSG_RDEV_MAX);
	else if (op != SOP_RDEV_SYNC && q->len != bulk_len)
		rc = err_set(-EINVAL, "request: rdev.len %" PRIu64 " but %zu "
			     "bytes of bulk", q->len, bulk_len);
	else if (op == SOP_RDEV_WRITE && (q->deadline_ns == 0 || q->epoch == 0))
		rc = err_set(-EINVAL, "request: rdev write without its %s "
			     "(the fence needs it)", q->deadline_ns == 0 ?
			     "rdev.deadline_ns" : "rdev.epoch");
	if (rc != 0) {
		rdev_req__free_unpacked(q, NULL);
		return rc;
	}
	*out = q;
	return 0;
}

int msg_rdev_range(const RdevReq *q, uint32_t nr_servers,
		   uint64_t dev_size, uint64_t *base)
{
	uint64_t slice;

	if (nr_servers == 0 || nr_servers > CLU_SERVERS_MAX ||
	    q->home >= nr_servers)
		return err_set(-EINVAL, "request: rdev.home %u: not a server "
			       "of the cluster (%u servers)", q->home,
			       nr_servers);
	slice = conf_slice_size(dev_size, nr_servers);
	if (q->off > slice || q->len > slice - q->off)
		return err_set(-EINVAL, "request: rdev.off %" PRIu64 " + len %"
			       PRIu64 " leaves the slice of %" PRIu64 " bytes "
			       "of home %u", q->off, q->len, slice, q->home);
	*base = slice * q->home;
	return 0;
}

/* ------------------------------------------------------------- walks */

int msg_walk_decode(const void *body, size_t len, uint32_t *kind)
{
	WalkReq *q = walk_req__unpack(NULL, len, body);
	uint32_t k;

	*kind = 0;
	if (q == NULL)
		return err_set(-EBADMSG, "request: body of %zu bytes is not a "
			       "WalkReq", len);
	k = q->kind;
	walk_req__free_unpacked(q, NULL);
	if (k < SWK_REPAIR || k > SWK_SCRUB)
		return err_set(-EINVAL, "request: walk.kind %u: expected 1 "
			       "(repair), 2 (rebalance) or 3 (scrub)", k);
	*kind = k;
	return 0;
}

int msg_walk_stats_decode(const Reply *rp, WalkStats **out)
{
	WalkStats *ws;

	*out = NULL;
	ws = walk_stats__unpack(NULL, rp->text.len, rp->text.data);
	if (ws == NULL)
		return err_set(-EBADMSG, "reply: text of %zu bytes is not "
			       "WalkStats", rp->text.len);
	if (ws->resumed > 1 || ws->devices > LIM_DEV_MAX) {
		uint32_t r = ws->resumed, d = ws->devices;

		walk_stats__free_unpacked(ws, NULL);
		return err_set(-EBADMSG, "reply: walk stats: resumed %u or "
			       "devices %u out of range", r, d);
	}
	*out = ws;
	return 0;
}

/* ----------------------------------------------------------- devices */

int msg_dev_decode(const void *body, size_t len, uint32_t self,
		   DevReq **out)
{
	DevReq *q = dev_req__unpack(NULL, len, body);
	size_t plen;
	int rc = 0;

	*out = NULL;
	if (q == NULL)
		return err_set(-EBADMSG, "request: body of %zu bytes is not a "
			       "DevReq", len);
	plen = q->path != NULL ? strlen(q->path) : 0;
	if (q->op < SDV_FAIL || q->op > SDV_STATE)
		rc = err_set(-EINVAL, "request: dev.op %u: expected 1 (fail), "
			     "2 (replace) or 3 (state)", q->op);
	else if (q->owner >= CLU_SERVERS_MAX)
		rc = err_set(-EINVAL, "request: dev.owner %u: a cluster has at "
			     "most %u servers", q->owner, CLU_SERVERS_MAX);
	else if (q->dev >= LIM_DEV_MAX)
		rc = err_set(-EINVAL, "request: dev.dev %u: a store has at most "
			     "%u devices", q->dev, LIM_DEV_MAX);
	else if (q->op == SDV_REPLACE && q->owner == self &&
		 (plen == 0 || plen > LIM_PATH_MAX))
		rc = err_set(-EINVAL, "request: dev.path: %zu bytes: a "
			     "replacement's path has 1 to %u", plen,
			     LIM_PATH_MAX);
	else if ((q->op != SDV_REPLACE || q->owner != self) && plen != 0)
		rc = err_set(-EINVAL, "request: dev.path: only a replace sent "
			     "to the device's owner carries a path");
	else if (q->server && (q->op == SDV_STATE || q->owner == self))
		rc = err_set(-EINVAL, "request: dev.server: only a fail or "
			     "replace sent to another server than the device's "
			     "owner (its images) may say the owner is lost or "
			     "back");
	if (rc != 0) {
		dev_req__free_unpacked(q, NULL);
		return rc;
	}
	*out = q;
	return 0;
}

int msg_dev_info_decode(const Reply *rp, SDev **out)
{
	SDev *d;

	*out = NULL;
	d = sdev__unpack(NULL, rp->text.len, rp->text.data);
	if (d == NULL)
		return err_set(-EBADMSG, "reply: text of %zu bytes is not an "
			       "SDev", rp->text.len);
	if (d->index >= LIM_DEV_MAX || d->state > ED_REPAIRED ||
	    d->path == NULL || d->driver == NULL || d->rebalance > 1) {
		uint32_t i = d->index, s = d->state;

		sdev__free_unpacked(d, NULL);
		return err_set(-EBADMSG, "reply: device: index %u or state %u "
			       "out of range, or no path", i, s);
	}
	*out = d;
	return 0;
}

/* ------------------------------------------------------------ layers */

/* One layer of a LayerReply: an id from 1, a sub-layout in range. */
static int msg_layer_info_check(const SLayer *l, size_t i)
{
	char what[48];

	if (l->layer == 0 || l->attr == NULL)
		return err_set(-EBADMSG, "reply: layers[%zu]: layer %u, "
			       "attributes %s", i, l->layer,
			       l->attr == NULL ? "missing" : "present");
	snprintf(what, sizeof what, "layer %u", l->layer);
	if (msg_attr_check(l->attr, what) != 0 ||
	    l->attr->layout < ST_LAYOUT_PLAIN ||
	    l->attr->layout > ST_LAYOUT_MIRROR)
		return err_set(-EBADMSG, "reply: layers[%zu]: layer %u: a "
			       "sub-layout out of range (layout %u)", i,
			       l->layer, l->attr->layout);
	if (l->blocks > ST_BLOCK_NR_MAX)
		return err_set(-EBADMSG, "reply: layers[%zu]: layer %u holds %"
			       PRIu64 " blocks, past 2^48", i, l->layer,
			       l->blocks);
	return 0;
}

/* A MAP's runs: at most SRV_LAYER_MAP_RUNS, each of 1.. blocks on a
 * layer from 1, in block order without overlap, inside [start, next);
 * next past start and at most end. */
static int msg_layer_runs_check(const LayerReply *l, uint64_t start,
				uint64_t end)
{
	uint64_t pos = start;

	if (l->next <= start || l->next > end)
		return err_set(-EBADMSG, "reply: map of blocks %" PRIu64 " to %"
			       PRIu64 ": next %" PRIu64 " out of range", start,
			       end, l->next);
	if (l->n_runs > SRV_LAYER_MAP_RUNS)
		return err_set(-EBADMSG, "reply: %zu runs, at most %u",
			       l->n_runs, SRV_LAYER_MAP_RUNS);
	for (size_t i = 0; i < l->n_runs; i++) {
		const SLayerExt *x = l->runs[i];

		if (x->layer == 0 || x->blocks == 0 || x->start < pos ||
		    x->start >= l->next || x->blocks > l->next - x->start)
			return err_set(-EBADMSG, "reply: runs[%zu]: blocks %"
				       PRIu64 "+%" PRIu64 " on layer %u: "
				       "empty, out of order or outside %"
				       PRIu64 "..%" PRIu64, i, x->start,
				       x->blocks, x->layer, start, l->next);
		pos = x->start + x->blocks;
	}
	return 0;
}

int msg_layer_reply_decode(const Reply *rp, uint32_t op, uint64_t start,
			   uint64_t end, LayerReply **out)
{
	LayerReply *l;
	int rc = 0;

	*out = NULL;
	l = layer_reply__unpack(NULL, rp->text.len, rp->text.data);
	if (l == NULL)
		return err_set(-EBADMSG, "reply: text of %zu bytes is not a "
			       "LayerReply", rp->text.len);
	if (l->n_layers > COMP_LAYERS_MAX)
		rc = err_set(-EBADMSG, "reply: %zu layers, at most %u",
			     l->n_layers, COMP_LAYERS_MAX);
	for (size_t i = 0; rc == 0 && i < l->n_layers; i++)
		rc = msg_layer_info_check(l->layers[i], i);
	if (rc == 0 && (op == SLY_ADD || op == SLY_OF) && l->layer == 0)
		rc = err_set(-EBADMSG, "reply: layer.layer 0 (layers are "
			     "numbered from 1)");
	if (rc == 0 && op != SLY_MAP && l->n_runs != 0)
		rc = err_set(-EBADMSG, "reply: %zu runs in the answer to "
			     "another op than a map", l->n_runs);
	if (rc == 0 && op == SLY_MAP)
		rc = msg_layer_runs_check(l, start, end);
	if (rc == 0 && (l->scrub != NULL) != (op == SLY_SCRUB))
		rc = err_set(-EBADMSG, "reply: scrub figures %s",
			     op == SLY_SCRUB ? "missing in the answer to a "
			     "scrub" : "in the answer to another op");
	if (rc == 0 && op == SLY_SCRUB &&
	    (l->scrub->walk_unrepairable > l->scrub->walk_units ||
	     l->scrub->walk_corrupt > l->scrub->walk_units))
		rc = err_set(-EBADMSG, "reply: scrub: %" PRIu64 " units "
			     "unrepairable and %" PRIu64 " corrupt of %" PRIu64
			     " visited", l->scrub->walk_unrepairable,
			     l->scrub->walk_corrupt, l->scrub->walk_units);
	if (rc == 0 && op == SLY_MOVE &&
	    (l->next <= start || l->next > end || l->moved > l->next - start))
		rc = err_set(-EBADMSG, "reply: move of blocks %" PRIu64 " to %"
			     PRIu64 ": next %" PRIu64 ", moved %" PRIu64 " out "
			     "of range", start, end, l->next, l->moved);
	if (rc != 0) {
		layer_reply__free_unpacked(l, NULL);
		return rc;
	}
	*out = l;
	return 0;
}

int msg_repl_decode(uint32_t op, const void *body, size_t len,
		    size_t bulk_len, uint32_t self, uint32_t nr_servers,
		    ReplReq **out)
{
	ReplReq *q;
	int rc = 0;

	*out = NULL;
	if (op != SOP_REPL_SHIP && op != SOP_REPL_SNAP)
		return err_set(-EINVAL, "request: opcode %u is not a "
			       "replication opcode", op);
	q = repl_req__unpack(NULL, len, body);
	if (q == NULL)
		return err_set(-EBADMSG, "request: opcode %u: body of %zu bytes "
			       "is not a ReplReq", op, len);
	if (q->home >= nr_servers || q->home == self)
		rc = err_set(-EINVAL, "request: repl.home %u: %s", q->home,
			     q->home == self ? "this server itself" :
			     "not a server of the cluster");
	else if (op == SOP_REPL_SHIP && q->seq == 0)
		rc = err_set(-EINVAL, "request: repl.seq 0");
	else if (op == SOP_REPL_SHIP && (q->off != 0 || q->total != 0 ||
					 q->last))
		rc = err_set(-EINVAL, "request: repl.%s set on a write set",
			     q->off != 0 ? "off" : q->total != 0 ? "total" :
			     "last");
	else if (op == SOP_REPL_SHIP && bulk_len != 0 &&
		 (bulk_len < ENG_WSET_HDR || bulk_len > MSG_REPL_SET_MAX))
		rc = err_set(bulk_len > MSG_REPL_SET_MAX ? -E2BIG : -EINVAL,
			     "request: repl write set of %zu bytes: expected "
			     "%u..%llu", bulk_len, ENG_WSET_HDR,
			     MSG_REPL_SET_MAX);
	else if (op == SOP_REPL_SNAP &&
		 (bulk_len == 0 || bulk_len > MSG_REPL_CHUNK))
		rc = err_set(bulk_len > MSG_REPL_CHUNK ? -E2BIG : -EINVAL,
			     "request: repl snapshot chunk of %zu bytes: "
			     "expected 1..%llu", bulk_len, MSG_REPL_CHUNK);
	else if (op == SOP_REPL_SNAP &&
		 (q->total == 0 || q->total > MSG_REPL_SNAP_MAX))
		rc = err_set(-EINVAL, "request: repl.total %" PRIu64 ": "
			     "expected 1..%llu", q->total, MSG_REPL_SNAP_MAX);
	else if (op == SOP_REPL_SNAP && (q->off > q->total ||
					 q->total - q->off < bulk_len))
		rc = err_set(-EINVAL, "request: repl.off %" PRIu64 " + %zu "
			     "bytes past repl.total %" PRIu64, q->off, bulk_len,
			     q->total);
	else if (op == SOP_REPL_SNAP &&
		 q->last != (q->total - q->off == bulk_len))
		rc = err_set(-EINVAL, "request: repl.last %d with %" PRIu64
			     " of %" PRIu64 " bytes sent", q->last,
			     q->off + bulk_len, q->total);
	if (rc != 0) {
		repl_req__free_unpacked(q, NULL);
		return rc;
	}
	*out = q;
	return 0;
}
