/*
 * fdmi_log.c — the engine's FDMI record log: encoding, and appending a
 * record in the change's own transaction (see fdmi_log.h).
 */
#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine_internal.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/fdmi_log.h"
#include "core/meta.h"
#include "core/meta_txn.h"

static const char *const op_names[FDMI_OP_MAX + 1] = {
	[FDMI_OBJ_CREATE] = "obj.create",   [FDMI_OBJ_DELETE] = "obj.delete",
	[FDMI_OBJ_WRITE] = "obj.write",     [FDMI_OBJ_ALLOC] = "obj.alloc",
	[FDMI_OBJ_FREE] = "obj.free",       [FDMI_IDX_CREATE] = "idx.create",
	[FDMI_IDX_DELETE] = "idx.delete",   [FDMI_IDX_PUT] = "idx.put",
	[FDMI_IDX_DEL] = "idx.del",         [FDMI_CONT_CREATE] = "cont.create",
	[FDMI_CONT_DELETE] = "cont.delete", [FDMI_SETATTR] = "setattr",
	[FDMI_LAYER_ADD] = "layer.add",     [FDMI_LAYER_DROP] = "layer.drop",
	[FDMI_LAYER_MOVE] = "layer.move",   [FDMI_DTX_COMMIT] = "dtx.commit",
	[FDMI_OBJ_READ] = "obj.read",
};

const char *fdmi_op_name(uint32_t op)
{
	return op >= 1 && op <= FDMI_OP_MAX ? op_names[op] : "?";
}

uint32_t fdmi_op_parse(const char *name)
{
	for (uint32_t op = 1; op <= FDMI_OP_MAX; op++)
		if (strcmp(op_names[op], name) == 0)
			return op;
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

void fdmi_rec_ext(const struct fdmi_rec *r, uint32_t i, uint64_t *start,
		  uint64_t *blocks)
{
	*start = get64(r->fr_ext + 16 * (size_t)i);
	*blocks = get64(r->fr_ext + 16 * (size_t)i + 8);
}

size_t fdmi_rec_len(const struct fdmi_rec *r)
{
	return FDMI_HDR_LEN + (size_t)r->fr_nr_ext * 16 + r->fr_klen;
}

void fdmi_rec_encode(const struct fdmi_rec *r, const uint64_t *ext_host,
		     uint8_t *b)
{
	b[0] = FDMI_REC_VERSION;
	b[1] = (uint8_t)r->fr_op;
	b[2] = (uint8_t)r->fr_flags;
	b[3] = (uint8_t)(r->fr_flags >> 8);
	put32(b + 4, r->fr_nr_ext != 0 ? r->fr_nr_ext : r->fr_klen);
	put64(b + 8, r->fr_time_ns);
	put64(b + 16, r->fr_off);
	put64(b + 24, r->fr_dtx.di_hlc);
	put32(b + 32, r->fr_dtx.di_node);
	put32(b + 36, r->fr_type);
	put64(b + 40, r->fr_id.si_hi);
	put64(b + 48, r->fr_id.si_lo);
	put64(b + 56, r->fr_container.si_hi);
	put64(b + 64, r->fr_container.si_lo);
	put32(b + 72, r->fr_tier);
	put32(b + 76, r->fr_layer);
	put64(b + 80, r->fr_size);
	put64(b + 88, r->fr_digest);
	if (r->fr_nr_ext != 0) {
		if (ext_host != NULL)
			for (uint32_t i = 0; i < 2 * r->fr_nr_ext; i++)
				put64(b + FDMI_HDR_LEN + 8 * (size_t)i,
				      ext_host[i]);
		else
			memcpy(b + FDMI_HDR_LEN, r->fr_ext,
			       16 * (size_t)r->fr_nr_ext);
	} else if (r->fr_klen != 0) {
		memcpy(b + FDMI_HDR_LEN, r->fr_key, r->fr_klen);
	}
}

/* Whether op's payload is extents (else a key, or nothing). */
static bool op_has_ext(uint32_t op)
{
	return op == FDMI_OBJ_WRITE || op == FDMI_OBJ_ALLOC ||
	       op == FDMI_OBJ_FREE || op == FDMI_LAYER_MOVE ||
	       op == FDMI_OBJ_READ;
}

int fdmi_rec_decode(uint64_t seq, const void *buf, size_t len,
		    struct fdmi_rec *r)
{
	const uint8_t *b = buf;
	uint32_t nr;

	memset(r, 0, sizeof *r);
	if (len < FDMI_HDR_LEN || b[0] != FDMI_REC_VERSION ||
	    b[1] < 1 || b[1] > FDMI_OP_MAX)
		return err_set(-ST_ECORRUPT, "FDMI record %" PRIu64 ": bad "
			       "header (%zu bytes, version %u, op %u)", seq,
			       len, len > 0 ? b[0] : 0, len > 1 ? b[1] : 0);
	nr = get32(b + 4);
	r->fr_seq = seq;
	r->fr_op = b[1];
	r->fr_flags = (uint32_t)b[2] | (uint32_t)b[3] << 8;
	r->fr_time_ns = get64(b + 8);
	r->fr_off = get64(b + 16);
	r->fr_dtx.di_hlc = get64(b + 24);
	r->fr_dtx.di_node = get32(b + 32);
	r->fr_type = get32(b + 36);
	r->fr_id.si_hi = get64(b + 40);
	r->fr_id.si_lo = get64(b + 48);
	r->fr_container.si_hi = get64(b + 56);
	r->fr_container.si_lo = get64(b + 64);
	r->fr_tier = get32(b + 72);
	r->fr_layer = get32(b + 76);
	r->fr_size = get64(b + 80);
	r->fr_digest = get64(b + 88);
	if (op_has_ext(r->fr_op)) {
		if ((uint64_t)nr * 16 != len - FDMI_HDR_LEN)
			return err_set(-ST_ECORRUPT, "FDMI record %" PRIu64
				       ": %u extents in %zu bytes", seq, nr,
				       len);
		r->fr_nr_ext = nr;
		r->fr_ext = b + FDMI_HDR_LEN;
	} else {
		if ((uint64_t)nr != len - FDMI_HDR_LEN)
			return err_set(-ST_ECORRUPT, "FDMI record %" PRIu64
				       ": a key of %u bytes in %zu", seq, nr,
				       len);
		r->fr_klen = nr;
		r->fr_key = nr != 0 ? b + FDMI_HDR_LEN : NULL;
	}
	return 0;
}

uint64_t fdmi_digest(const struct meta_ent *ent)
{
	const uint8_t *p = (const uint8_t *)ent;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < sizeof *ent; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* ------------------------------------------------------------ emitting */

static __thread struct st_dtx_id fdmi_cur_dtx;

void eng_fdmi_dtx_set(const struct st_dtx_id *id)
{
	if (id != NULL)
		fdmi_cur_dtx = *id;
	else
		memset(&fdmi_cur_dtx, 0, sizeof fdmi_cur_dtx);
}

void eng_fdmi_enable(struct eng *e, bool on)
{
	__atomic_store_n(&e->e_fdmi_on, on, __ATOMIC_RELEASE);
}

bool eng_fdmi_on(struct eng *e)
{
	return __atomic_load_n(&e->e_fdmi_on, __ATOMIC_ACQUIRE);
}

void eng_fdmi_open_check(struct eng *e)
{
	static const char pfx[] = "fdmi/sub/";
	struct meta *m = eng_meta(e);
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k = {sizeof pfx - 1, (void *)pfx}, v;
	bool any = false;

	if (mdb_txn_begin(m->m_env, NULL, MDB_RDONLY, &txn) != 0)
		return;
	if (mdb_cursor_open(txn, m->m_sys, &cur) == 0) {
		any = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE) == 0 &&
		      k.mv_size > sizeof pfx - 1 &&
		      memcmp(k.mv_data, pfx, sizeof pfx - 1) == 0;
		mdb_cursor_close(cur);
	}
	mdb_txn_abort(txn);
	eng_fdmi_enable(e, any);
}

int eng_fdmi_head(struct eng *e, MDB_txn *txn, uint64_t *seq, uint64_t *off)
{
	struct meta *m = eng_meta(e);
	MDB_cursor *cur;
	MDB_val k, v;
	struct fdmi_rec r;
	int rc;

	*seq = *off = 0;
	rc = mdb_cursor_open(txn, m->m_fdmi, &cur);
	if (rc != 0)
		return meta_err(rc, "FDMI log cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc != 0)
		return meta_err(rc, "FDMI log head");
	if (k.mv_size != 8)
		return err_set(-ST_ECORRUPT, "FDMI log: a key of %zu bytes",
			       k.mv_size);
	rc = fdmi_rec_decode(be64toh(*(const uint64_t *)k.mv_data), v.mv_data,
			     v.mv_size, &r);
	if (rc != 0)
		return rc;
	*seq = r.fr_seq;
	*off = r.fr_off + v.mv_size;
	return 0;
}

/* The next sequence number and offset of e's log, read once per open:
 * after that the committer's own counters (only the thread holding the
 * write transaction emits; a discarded transaction leaves a gap). */
static int next_pos(struct eng *e, MDB_txn *txn, uint64_t *seq,
		    uint64_t *off)
{
	if (!e->e_fdmi_pos_known) {
		int rc = eng_fdmi_head(e, txn, &e->e_fdmi_seq, &e->e_fdmi_off);

		if (rc != 0)
			return rc;
		e->e_fdmi_pos_known = true;
	}
	*seq = e->e_fdmi_seq + 1;
	*off = e->e_fdmi_off;
	return 0;
}

int eng_fdmi_emit(struct eng *e, MDB_txn *txn, struct fdmi_rec *r,
		  const uint64_t *ext)
{
	struct meta *m = eng_meta(e);
	uint8_t kb[8], sbuf[512], *b = sbuf;
	uint64_t seq, off, bk;
	MDB_val k, v;
	size_t len;
	int rc;

	if (!eng_fdmi_on(e))
		return 0;
	/* Test builds: die between the change and its record (the crash
	 * test: neither may survive). */
	if (FAULT_HIT("fdmi.emit.crash"))
		kill(getpid(), SIGKILL);
	rc = next_pos(e, txn, &seq, &off);
	if (rc != 0)
		return rc;
	if (r->fr_nr_ext > FDMI_EXT_MAX) {
		r->fr_nr_ext = FDMI_EXT_MAX;
		r->fr_flags |= FDMI_F_TRUNC;
	}
	r->fr_seq = seq;
	r->fr_off = off;
	r->fr_time_ns = eng_now_ns();
	if (r->fr_dtx.di_hlc == 0)
		r->fr_dtx = fdmi_cur_dtx;
	len = fdmi_rec_len(r);
	if (len > sizeof sbuf && (b = malloc(len)) == NULL)
		return err_set(-ENOMEM, "FDMI record of %zu bytes", len);
	fdmi_rec_encode(r, ext, b);
	bk = htobe64(seq);
	memcpy(kb, &bk, 8);
	k = (MDB_val){8, kb};
	v = (MDB_val){len, b};
	rc = meta_mput(m, txn, m->m_fdmi, &k, &v, MDB_APPEND);
	if (b != sbuf)
		free(b);
	if (rc != 0)
		return meta_err(rc, "FDMI record");
	e->e_fdmi_seq = seq;
	e->e_fdmi_off = off + len;
	return 0;
}

/* The op of a change to an entity of type t: obj, idx or cont. */
static uint32_t ent_op(uint32_t op, uint32_t type)
{
	if (op == FDMI_OBJ_CREATE || op == FDMI_OBJ_DELETE) {
		bool del = op == FDMI_OBJ_DELETE;

		if (type == ST_ET_IDX)
			return del ? FDMI_IDX_DELETE : FDMI_IDX_CREATE;
		if (type == ST_ET_CONTAINER)
			return del ? FDMI_CONT_DELETE : FDMI_CONT_CREATE;
	}
	return op;
}

int eng_fdmi_req(struct eng *e, MDB_txn *txn, const struct eng_req *r,
		 uint32_t op, const struct meta_ent *ent)
{
	struct fdmi_rec rec;
	uint64_t sbuf[2 * 16], *ext = NULL;
	int rc;

	if (!eng_fdmi_on(e) || r->er_no_fdmi)
		return 0;
	memset(&rec, 0, sizeof rec);
	rec.fr_type = r->er_type;
	rec.fr_op = ent_op(op, r->er_type);
	rec.fr_id = r->er_id;
	rec.fr_container = ent != NULL ? ent->me_container : r->er_container;
	if (ent != NULL) {
		rec.fr_tier = ent->me_tier;
		if (ent->me_type == ST_ET_OBJ &&
		    (ent->me_layout != ST_LAYOUT_COMPOSITE || r->er_comp))
			rec.fr_flags |= FDMI_F_TIER;
		/* a unit layout's tier is its pool's (me_tier is not kept for
		 * them): that of the pool's devices when they share one, else
		 * the record names no tier */
		if (ent->me_type == ST_ET_OBJ && stripe_layout(ent->me_layout)) {
			const struct eng_pool *p = eng_pool_get(e, ent->me_pool);
			int32_t t = -1;

			for (uint32_t i = 0; p != NULL && i < p->ep_nr; i++) {
				struct eng_dev *d = eng_dev_get(e, p->ep_devs[i]);

				if (d == NULL)
					continue;
				if (t >= 0 && (uint32_t)t != d->ed_tier) {
					t = -1;
					break;
				}
				t = (int32_t)d->ed_tier;
			}
			rec.fr_tier = t >= 0 ? (uint32_t)t : 0;
			if (t < 0)
				rec.fr_flags &= ~FDMI_F_TIER;
		}
		/* a create names the layout (the HSM catalog's "movable") */
		if (op == FDMI_OBJ_CREATE && r->er_type == ST_ET_OBJ)
			rec.fr_layer = ent->me_layout;
		rec.fr_size = ent->me_type == ST_ET_IDX ? ent->me_nr_records
							: ent->me_size_bytes;
		rec.fr_digest = fdmi_digest(ent);
	}
	if (op_has_ext(op) && r->er_ext != NULL && r->er_ext->ev_nr > 0) {
		uint32_t n = r->er_ext->ev_nr;

		if (n > FDMI_EXT_MAX) {
			n = FDMI_EXT_MAX;
			rec.fr_flags |= FDMI_F_TRUNC;
		}
		ext = n <= 16 ? sbuf : malloc(2 * sizeof *ext * n);
		if (ext == NULL)
			return err_set(-ENOMEM, "FDMI record of %u extents", n);
		for (uint32_t i = 0; i < n; i++) {
			ext[2 * i] = r->er_ext->ev_start_blk[i];
			ext[2 * i + 1] = r->er_ext->ev_nr_blks[i];
		}
		rec.fr_nr_ext = n;
	}
	if (r->er_comp) {
		/* a composite's layer write or move: the record names the
		 * composite object and the layer */
		rec.fr_id = r->er_comp_id;
		rec.fr_layer = r->er_comp_layer;
		if (r->er_comp_move)
			rec.fr_op = FDMI_LAYER_MOVE;
	}
	rc = eng_fdmi_emit(e, txn, &rec, ext);
	if (ext != sbuf)
		free(ext);
	return rc;
}

/* ---------------------------------------------------------------- reads */

static uint32_t heat_slot(const struct st_id *id)
{
	uint64_t x = id->si_hi * 0x9e3779b97f4a7c15ull ^ id->si_lo;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (uint32_t)(x % FDMI_HEAT_SLOTS);
}

void eng_fdmi_read_note(struct eng *e, const struct eng_req *r)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	uint32_t s;

	if (r->er_ext == NULL || r->er_ext->ev_nr == 0)
		return;
	for (uint32_t i = 0; i < r->er_ext->ev_nr; i++) {
		uint64_t a = r->er_ext->ev_start_blk[i];
		uint64_t b = a + r->er_ext->ev_nr_blks[i];

		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
	}
	pthread_mutex_lock(&e->e_heat_lock);
	if (e->e_heat == NULL) {
		e->e_heat = calloc(FDMI_HEAT_SLOTS, sizeof *e->e_heat);
		if (e->e_heat == NULL) {
			e->e_heat_dropped++;
			pthread_mutex_unlock(&e->e_heat_lock);
			return;
		}
	}
	s = heat_slot(&r->er_id);
	for (uint32_t k = 0; k < 16; k++, s = (s + 1) % FDMI_HEAT_SLOTS) {
		struct fdmi_heat *h = &e->e_heat[s];

		if (h->fh_count == 0) {
			h->fh_id = r->er_id;
			h->fh_lo = lo;
			h->fh_hi = hi;
			e->e_heat_nr++;
		} else if (st_id_cmp(&h->fh_id, &r->er_id) != 0) {
			continue;
		}
		h->fh_count++;
		h->fh_lo = lo < h->fh_lo ? lo : h->fh_lo;
		h->fh_hi = hi > h->fh_hi ? hi : h->fh_hi;
		pthread_mutex_unlock(&e->e_heat_lock);
		return;
	}
	e->e_heat_dropped++;
	pthread_mutex_unlock(&e->e_heat_lock);
}

int eng_fdmi_read_flush(struct eng *e, uint64_t *dropped)
{
	struct meta *m = eng_meta(e);
	struct fdmi_heat *t;
	MDB_txn *txn = NULL;
	int rc;

	pthread_mutex_lock(&e->e_heat_lock);
	t = e->e_heat;
	*dropped = e->e_heat_dropped;
	e->e_heat_dropped = 0;
	if (e->e_heat_nr == 0)
		t = NULL;
	else
		e->e_heat = NULL;
	e->e_heat_nr = 0;
	pthread_mutex_unlock(&e->e_heat_lock);
	if (t == NULL)
		return 0;
	rc = meta_wtxn_begin(m, &txn, "FDMI reads");
	for (uint32_t i = 0; rc == 0 && i < FDMI_HEAT_SLOTS; i++) {
		struct fdmi_rec fr = {0};
		uint64_t ext[2];

		if (t[i].fh_count == 0)
			continue;
		fr.fr_op = FDMI_OBJ_READ;
		fr.fr_type = ST_ET_OBJ;
		fr.fr_id = t[i].fh_id;
		fr.fr_size = t[i].fh_count;
		fr.fr_nr_ext = 1;
		ext[0] = t[i].fh_lo;
		ext[1] = t[i].fh_hi - t[i].fh_lo;
		rc = eng_fdmi_emit(e, txn, &fr, ext);
	}
	if (rc == 0)
		rc = meta_wtxn_commit(m, txn, "FDMI reads");
	else if (txn != NULL)
		meta_txn_abort(txn);
	free(t);
	return rc;
}
