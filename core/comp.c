/*
 * comp.c — composite objects: extent ranges mapped to layers.
 *
 * A composite object holds no data itself.  Each layer is a sub-object
 * (an ordinary entity with a plain, pdclust or mirror layout, id
 * {~0, hash(object, layer)}, never listed in a container) recorded in the
 * layer table with a priority.  The object's own extent map (table ext,
 * records flagged MX_LAYER, mx_dev_off = layer id) says which layer holds
 * the newest data of every block:
 *
 *   WRITE   goes to the top layer's sub-object; its commit (obj_apply of
 *           the sub-object, then comp_apply) maps the blocks to that layer
 *           in the same LMDB transaction;
 *   READ    resolves each block through the map and reads the layer's
 *           sub-object; it checks the map again after reading and retries
 *           if a move changed it meanwhile (a move frees the source in the
 *           commit that remaps), so a read never returns a half-moved range;
 *   FREE    unmaps the blocks (the layers' space is freed with them);
 *   move    reads the blocks of other layers, writes them to the target
 *           layer's sub-object, and in that write's commit remaps only the
 *           blocks still held by the source layer and punches them there:
 *           a plain layer loses their extents; a pdclust or mirror layer
 *           loses the unit records of every parity group none of whose
 *           blocks it holds any more (a group partly moved keeps all its
 *           units until its last block leaves, it is rewritten, or the
 *           layer is dropped).  A write to a newer layer does the same to
 *           the older layers it supersedes.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/errors.h"
#include "core/fdmi_log.h"
#include "core/limits.h"
#include "core/log.h"

struct comp_layer {
	uint32_t cl_id;
	struct meta_layer cl_rec;
	struct meta_ent cl_ent;
};

struct comp_layers {
	uint32_t cs_nr;
	struct comp_layer cs_v[COMP_LAYERS_MAX];
};

static MDB_val layer_key(uint8_t kb[20], const struct st_id *id,
			 uint32_t layer)
{
	meta_id_enc(kb, id);
	kb[16] = (uint8_t)(layer >> 24);
	kb[17] = (uint8_t)(layer >> 16);
	kb[18] = (uint8_t)(layer >> 8);
	kb[19] = (uint8_t)layer;
	return (MDB_val){20, kb};
}

/* Load the layers of id (with their sub-objects' records). */
static int layers_load(struct eng *e, MDB_txn *txn, const struct st_id *id,
		       struct comp_layers *ls)
{
	uint8_t kb[20];
	MDB_val k = layer_key(kb, id, 0), v;
	MDB_cursor *cur;
	int rc;

	ls->cs_nr = 0;
	rc = mdb_cursor_open(txn, eng_meta(e)->m_layer, &cur);
	if (rc != 0)
		return meta_err(rc, "open layer cursor");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		struct comp_layer *l;
		const uint8_t *p = k.mv_data;

		if (k.mv_size != 20 || memcmp(p, kb, 16) != 0)
			break;
		if (ls->cs_nr == COMP_LAYERS_MAX ||
		    v.mv_size != sizeof(struct meta_layer)) {
			rc = err_set(-ST_ECORRUPT, "object %s: layer records "
				     "damaged", eng_id_str(id));
			break;
		}
		l = &ls->cs_v[ls->cs_nr++];
		l->cl_id = (uint32_t)p[16] << 24 | (uint32_t)p[17] << 16 |
			   (uint32_t)p[18] << 8 | p[19];
		memcpy(&l->cl_rec, v.mv_data, sizeof l->cl_rec);
		rc = meta_ent_get(txn, eng_meta(e), &l->cl_rec.ml_sub,
				  &l->cl_ent);
		if (rc != 0) {
			rc = err_set(-ST_ECORRUPT, "object %s layer %u: "
				     "sub-object missing", eng_id_str(id),
				     l->cl_id);
			break;
		}
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

static struct comp_layer *layer_find(struct comp_layers *ls, uint32_t id)
{
	for (uint32_t i = 0; i < ls->cs_nr; i++)
		if (ls->cs_v[i].cl_id == id)
			return &ls->cs_v[i];
	return NULL;
}

static struct comp_layer *layer_top(struct comp_layers *ls)
{
	struct comp_layer *t = NULL;

	for (uint32_t i = 0; i < ls->cs_nr; i++)
		if (t == NULL || ls->cs_v[i].cl_rec.ml_priority >
				 t->cl_rec.ml_priority)
			t = &ls->cs_v[i];
	return t;
}

/* Read the composite's record and layers in a read transaction. */
static int comp_load(struct eng *e, MDB_txn *txn, struct eng_req *r,
		     struct meta_ent *cur, struct comp_layers *ls)
{
	int rc = ent_check(e, txn, r, cur);

	if (rc == 0 && cur->me_layout != ST_LAYOUT_COMPOSITE)
		rc = err_set(-EINVAL, "object %s is not composite",
			     eng_id_str(&r->er_id));
	if (rc == 0)
		rc = layers_load(e, txn, &r->er_id, ls);
	return rc;
}

/* -------------------------------------------------------------- reads */

/** A piece of the caller's buffers. */
struct bslice {
	void **bs_buf;
	size_t *bs_len;
	uint32_t bs_nr;
};

/* The caller's buffers from flat offset off for len bytes. */
static int bslice_make(struct st_bufvec *bv, uint64_t off, uint64_t len,
		       struct bslice *s)
{
	uint64_t pos = 0;

	s->bs_nr = 0;
	s->bs_buf = malloc(bv->bv_nr * sizeof *s->bs_buf);
	s->bs_len = malloc(bv->bv_nr * sizeof *s->bs_len);
	if (s->bs_buf == NULL || s->bs_len == NULL)
		return err_set(-ENOMEM, "buffer slice");
	for (uint32_t i = 0; i < bv->bv_nr && len > 0; i++) {
		uint64_t bl = bv->bv_len[i];

		if (pos + bl > off) {
			uint64_t in = off > pos ? off - pos : 0;
			uint64_t n = bl - in < len ? bl - in : len;

			s->bs_buf[s->bs_nr] = (uint8_t *)bv->bv_buf[i] + in;
			s->bs_len[s->bs_nr++] = n;
			len -= n;
		}
		pos += bl;
	}
	return 0;
}

static void bslice_fini(struct bslice *s)
{
	free(s->bs_buf);
	free(s->bs_len);
}

/* Read one run of blocks from a layer's sub-object into a slice. */
static int layer_read(struct eng *e, const struct comp_layer *l, uint64_t blk,
		      uint64_t nr, struct st_bufvec *bv)
{
	struct st_extvec ev = {1, &blk, &nr};
	struct eng_req *q = calloc(1, sizeof *q);
	int rc;

	if (q == NULL)
		return err_set(-ENOMEM, "layer read");
	q->er_kind = ER_OBJ_READ;
	q->er_type = ST_ET_OBJ;
	q->er_id = l->cl_rec.ml_sub;
	q->er_ent = l->cl_ent;
	q->er_ext = &ev;
	q->er_data = bv;
	rc = obj_exec(e, q);
	eng_unit_req_fini(q);
	free(q);
	return rc;
}

/* The map over [s, s + n) as a list (for reads and the recheck). */
static int map_get(struct eng *e, const struct st_id *id, uint64_t s,
		   uint64_t n, struct ext_list *l)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin read");
	l->xl_nr = 0;
	rc = ext_lookup(eng_meta(e), txn, id, s, n, l);
	mdb_txn_abort(txn);
	return rc;
}

static bool map_same(const struct ext_list *a, const struct ext_list *b)
{
	return a->xl_nr == b->xl_nr &&
	       (a->xl_nr == 0 ||
		memcmp(a->xl_v, b->xl_v, a->xl_nr * sizeof *a->xl_v) == 0);
}

/* Read [s, s + n) into the buffers at flat offset flat. */
static int comp_read_range(struct eng *e, struct eng_req *r,
			   struct comp_layers *ls, uint64_t s, uint64_t n,
			   uint64_t flat, uint32_t shift)
{
	struct ext_list l = {0}, again = {0};
	int rc = 0;

	for (int t = 0; t < COMP_READ_RETRIES; t++) {
		uint64_t pos = s;

		rc = map_get(e, &r->er_id, s, n, &l);
		for (uint32_t i = 0; rc == 0 && pos < s + n; ) {
			const struct ext_rec *x = i < l.xl_nr ? &l.xl_v[i] : NULL;
			uint64_t xs = x ? x->xr_blk : s + n, upto;
			struct bslice sl;
			struct comp_layer *cl = NULL;

			if (x && xs <= pos) {
				upto = xs + x->xr_ext.mx_nr_blks;
				cl = layer_find(ls, (uint32_t)x->xr_ext.mx_dev_off);
				if (cl == NULL) {
					rc = err_set(-ST_ECORRUPT, "object %s: "
						     "block %" PRIu64 " in unknown "
						     "layer %" PRIu64,
						     eng_id_str(&r->er_id), pos,
						     x->xr_ext.mx_dev_off);
					break;
				}
				i++;
			} else {
				upto = xs;
			}
			upto = upto < s + n ? upto : s + n;
			rc = bslice_make(r->er_data, flat + ((pos - s) << shift),
					 (upto - pos) << shift, &sl);
			if (rc == 0 && cl != NULL) {
				struct st_bufvec bv = {sl.bs_nr, sl.bs_buf,
							   sl.bs_len};

				rc = layer_read(e, cl, pos, upto - pos, &bv);
			} else if (rc == 0) {
				for (uint32_t k = 0; k < sl.bs_nr; k++)
					memset(sl.bs_buf[k], 0, sl.bs_len[k]);
			}
			bslice_fini(&sl);
			pos = upto;
		}
		if (rc == 0)
			rc = map_get(e, &r->er_id, s, n, &again);
		if (rc != 0 || map_same(&l, &again))
			break;
		rc = -EAGAIN; /* moved while we read: read again */
	}
	if (rc == -EAGAIN)
		rc = err_set(-EAGAIN, "object %s: blocks kept moving during the "
			     "read", eng_id_str(&r->er_id));
	free(l.xl_v);
	free(again.xl_v);
	return rc;
}

static int comp_read(struct eng *e, struct eng_req *r, struct comp_layers *ls,
		     uint32_t shift)
{
	uint64_t flat = 0;
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < r->er_ext->ev_nr; i++) {
		rc = comp_read_range(e, r, ls, r->er_ext->ev_start_blk[i],
				     r->er_ext->ev_nr_blks[i], flat, shift);
		flat += r->er_ext->ev_nr_blks[i] << shift;
	}
	r->er_bytes = rc == 0 ? req_blocks(r) << shift : 0;
	return rc;
}

/* ------------------------------------------------- move generations */

/*
 * A move reads a run from its source layer, writes it to the target
 * layer's sub-object, and remaps it in a later commit.  A write, free or
 * other move of the same blocks applied in between must win, whatever the
 * layers (a write to the source layer itself changes no map of the
 * composite; a write to the target layer would be overwritten by the
 * move's copy).  So each update of a composite's map bumps the generation
 * of the slots its granules (LIM_CGEN_GRAIN blocks) hash to: once when
 * applied, and once more when its transaction committed or was discarded
 * (comp_gen_settle()), which covers a move that read between another
 * update's apply and its commit (it read the old data).  A move notes the
 * generations before it reads; its commit is refused (soft, nothing
 * changed) when one moved, and comp_move() tries again granule by granule.
 */
static uint32_t cgen_slot(const struct st_id *id, uint64_t g)
{
	uint64_t h = id->si_hi * 0x9e3779b97f4a7c15ull ^
		     id->si_lo * 0xc2b2ae3d27d4eb4full ^
		     (g + 1) * 0x165667b19e3779f9ull;

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (uint32_t)(h % LIM_CGEN_SLOTS);
}

/* The committer, in apply: bump [s, s + n) of id, and note it for the
 * second bump. */
static void cgen_bump(struct eng *e, const struct st_id *id, uint64_t s,
		      uint64_t n)
{
	struct eng_cgen *c = eng_cgen(e);
	uint64_t g0 = s / LIM_CGEN_GRAIN, g1;

	if (n == 0)
		return;
	g1 = (s + n - 1) / LIM_CGEN_GRAIN;
	if (g1 - g0 >= LIM_CGEN_SLOTS) {
		for (uint32_t k = 0; k < LIM_CGEN_SLOTS; k++)
			__atomic_add_fetch(&c->cg_gen[k], 1, __ATOMIC_RELEASE);
		c->cg_all = true;
		return;
	}
	for (uint64_t g = g0; g <= g1; g++) {
		uint32_t k = cgen_slot(id, g);

		__atomic_add_fetch(&c->cg_gen[k], 1, __ATOMIC_RELEASE);
		if (c->cg_all)
			continue;
		if (c->cg_npend == c->cg_cap) {
			uint32_t cap = c->cg_cap ? 2 * c->cg_cap : 256;
			uint32_t *v = cap <= 4 * LIM_CGEN_SLOTS ?
				      realloc(c->cg_pend, cap * sizeof *v) :
				      NULL;

			if (v == NULL) { /* then every slot, once settled */
				c->cg_all = true;
				continue;
			}
			c->cg_pend = v;
			c->cg_cap = cap;
		}
		c->cg_pend[c->cg_npend++] = k;
	}
}

static void cgen_bump_req(struct eng *e, const struct st_id *id,
			  const struct st_extvec *ev)
{
	for (uint32_t i = 0; ev != NULL && i < ev->ev_nr; i++)
		cgen_bump(e, id, ev->ev_start_blk[i], ev->ev_nr_blks[i]);
}

void comp_gen_settle(struct eng *e)
{
	struct eng_cgen *c = eng_cgen(e);

	if (c->cg_all) {
		for (uint32_t k = 0; k < LIM_CGEN_SLOTS; k++)
			__atomic_add_fetch(&c->cg_gen[k], 1, __ATOMIC_RELEASE);
	} else {
		for (uint32_t i = 0; i < c->cg_npend; i++)
			__atomic_add_fetch(&c->cg_gen[c->cg_pend[i]], 1,
					   __ATOMIC_RELEASE);
	}
	c->cg_npend = 0;
	c->cg_all = false;
}

/* A mover, before it reads [s, s + n) of id: note the generations. */
static int cgen_snap(struct eng *e, const struct st_id *id, uint64_t s,
		     uint64_t n, struct eng_req *q)
{
	struct eng_cgen *c = eng_cgen(e);
	uint64_t g0 = s / LIM_CGEN_GRAIN, g1 = (s + n - 1) / LIM_CGEN_GRAIN;

	q->er_comp_gen = malloc((g1 - g0 + 1) * sizeof *q->er_comp_gen);
	if (q->er_comp_gen == NULL)
		return err_set(-ENOMEM, "move generations");
	q->er_comp_gen_g0 = g0;
	q->er_comp_gen_nr = (uint32_t)(g1 - g0 + 1);
	for (uint64_t g = g0; g <= g1; g++)
		q->er_comp_gen[g - g0] = __atomic_load_n(
			&c->cg_gen[cgen_slot(id, g)], __ATOMIC_ACQUIRE);
	return 0;
}

int comp_move_check(struct eng *e, const struct eng_req *r)
{
	struct eng_cgen *c = eng_cgen(e);

	if (!r->er_comp || !r->er_comp_move || r->er_comp_gen == NULL)
		return 0;
	for (uint32_t i = 0; i < r->er_comp_gen_nr; i++) {
		uint64_t g = r->er_comp_gen_g0 + i;

		if (__atomic_load_n(&c->cg_gen[cgen_slot(&r->er_comp_id, g)],
				    __ATOMIC_ACQUIRE) != r->er_comp_gen[i])
			return err_set(-EAGAIN, "object %s: blocks %" PRIu64
				       "..%" PRIu64 " were updated while they "
				       "moved: the newer data stays",
				       eng_id_str(&r->er_comp_id),
				       g * LIM_CGEN_GRAIN,
				       (g + 1) * LIM_CGEN_GRAIN - 1);
	}
	return 0;
}

/* ------------------------------------------------------------- updates */

/*
 * After blocks [s, s + n) of composite cid stopped being held by unit layer
 * src (moved to another layer, or written anew in a newer one): drop the
 * unit records of every parity group of src overlapping them of which the
 * composite maps no block to src any more, so their space comes back with
 * the commit.  A group still holding some block for the composite keeps
 * all its units (its parity covers them) until its last block leaves, it
 * is rewritten, or the layer is dropped.
 */
static int layer_groups_drop(struct eng *e, MDB_txn *txn,
			     const struct st_id *cid,
			     const struct comp_layer *src, uint64_t s,
			     uint64_t n, struct eng_spacevec *freed)
{
	const struct meta_ent *me = &src->cl_ent;
	bool mirror = me->me_layout == ST_LAYOUT_MIRROR;
	uint32_t w = mirror ? me->me_n : me->me_n + me->me_k;
	uint64_t gb = ((uint64_t)(mirror ? 1 : me->me_n) << me->me_unit_shift) >>
		      me->me_block_shift;
	int rc = 0;

	if (n == 0 || gb == 0 || w == 0)
		return 0;
	for (uint64_t g = s / gb; rc == 0 && g <= (s + n - 1) / gb; g++) {
		struct ext_list l = {0};
		bool held = false;

		rc = ext_lookup(eng_meta(e), txn, cid, g * gb, gb, &l);
		for (uint32_t i = 0; rc == 0 && i < l.xl_nr; i++)
			held |= l.xl_v[i].xr_ext.mx_dev_off == src->cl_id;
		free(l.xl_v);
		if (rc == 0 && !held)
			rc = eng_unit_groups_drop(e, txn, &src->cl_rec.ml_sub,
						  src->cl_ent.me_layout, g, 1,
						  w, freed);
	}
	return rc;
}

/* Map [s, s + n) of the composite to layer (move: only what from holds),
 * punching the source layers' sub-objects. */
static int map_range(struct eng *e, MDB_txn *txn, struct eng_req *r,
		     struct comp_layers *ls, uint64_t s, uint64_t n,
		     uint32_t shift, struct eng_spacevec *freed)
{
	struct meta *m = eng_meta(e);
	struct ext_list l = {0};
	struct meta_ext x = {.mx_nr_blks = n, .mx_dev_off = r->er_comp_layer,
			     .mx_flags = MX_LAYER};
	int rc = ext_lookup(m, txn, &r->er_comp_id, s, n, &l);

	if (rc == 0 && r->er_comp_move) {
		/* Remap only blocks still held by the source layer. */
		for (uint32_t i = 0; rc == 0 && i < l.xl_nr; i++) {
			const struct ext_rec *q = &l.xl_v[i];
			uint64_t qs = q->xr_blk > s ? q->xr_blk : s;
			uint64_t qe = q->xr_blk + q->xr_ext.mx_nr_blks;

			qe = qe < s + n ? qe : s + n;
			if (q->xr_ext.mx_dev_off != r->er_comp_from)
				continue;
			rc = ext_punch(m, txn, &r->er_comp_id, qs, qe - qs,
				       shift, freed);
			if (rc == 0) {
				struct meta_ext y = x;

				y.mx_nr_blks = qe - qs;
				rc = ext_put(m, txn, &r->er_comp_id, qs, &y);
			}
			if (rc == 0) {
				struct comp_layer *src = layer_find(ls, r->er_comp_from);

				if (src != NULL && stripe_layout(src->cl_ent.me_layout))
					rc = layer_groups_drop(e, txn,
							       &r->er_comp_id,
							       src, qs, qe - qs,
							       freed);
				else if (src != NULL)
					rc = ext_punch(m, txn, &src->cl_rec.ml_sub,
						       qs, qe - qs, shift, freed);
			}
		}
		free(l.xl_v);
		return rc;
	}
	/* A write: the top layer now holds all of it; older layers' copies
	 * of plain sub-objects are punched so their space comes back. */
	for (uint32_t i = 0; rc == 0 && i < l.xl_nr; i++) {
		const struct ext_rec *q = &l.xl_v[i];
		struct comp_layer *src = layer_find(ls, (uint32_t)q->xr_ext.mx_dev_off);
		uint64_t qs = q->xr_blk > s ? q->xr_blk : s;
		uint64_t qe = q->xr_blk + q->xr_ext.mx_nr_blks;

		qe = qe < s + n ? qe : s + n;
		if (src != NULL && src->cl_id != r->er_comp_layer &&
		    !stripe_layout(src->cl_ent.me_layout))
			rc = ext_punch(m, txn, &src->cl_rec.ml_sub, qs, qe - qs,
				       shift, freed);
	}
	if (rc == 0)
		rc = ext_punch(m, txn, &r->er_comp_id, s, n, shift, freed);
	if (rc == 0)
		rc = ext_put(m, txn, &r->er_comp_id, s, &x);
	/* Unit layers that held some of it: drop their groups now empty. */
	for (uint32_t i = 0; rc == 0 && i < l.xl_nr; i++) {
		const struct ext_rec *q = &l.xl_v[i];
		struct comp_layer *src = layer_find(ls, (uint32_t)q->xr_ext.mx_dev_off);
		uint64_t qs = q->xr_blk > s ? q->xr_blk : s;
		uint64_t qe = q->xr_blk + q->xr_ext.mx_nr_blks;

		qe = qe < s + n ? qe : s + n;
		if (src != NULL && src->cl_id != r->er_comp_layer &&
		    stripe_layout(src->cl_ent.me_layout))
			rc = layer_groups_drop(e, txn, &r->er_comp_id, src, qs,
					       qe - qs, freed);
	}
	free(l.xl_v);
	return rc;
}

int comp_apply(struct eng *e, MDB_txn *txn, struct eng_req *r,
	       struct meta_ent *comp)
{
	struct eng_req cr = {0};
	struct comp_layers ls;
	struct meta_ent cur;
	int rc;

	cr.er_id = r->er_comp_id;
	cr.er_type = ST_ET_OBJ;
	cr.er_ent.me_ctime_ns = r->er_comp_ctime;
	cr.er_ext = r->er_ext;
	rc = comp_load(e, txn, &cr, &cur, &ls);
	if (rc == 0 && layer_find(&ls, r->er_comp_layer) == NULL)
		rc = err_set(-ENOENT, "object %s: layer %u dropped meanwhile",
			     eng_id_str(&cr.er_id), r->er_comp_layer);
	for (uint32_t i = 0; rc == 0 && i < r->er_ext->ev_nr; i++)
		rc = map_range(e, txn, r, &ls, r->er_ext->ev_start_blk[i],
			       r->er_ext->ev_nr_blks[i], cur.me_block_shift,
			       &r->er_ci.ci_freed);
	if (rc == 0 && !r->er_comp_move)
		rc = obj_size_update(e, txn, &cr, &cur, true);
	if (rc == 0) {
		cgen_bump_req(e, &cr.er_id, r->er_ext);
		*comp = cur;
	}
	return rc;
}

/* FREE and ALLOC of the composite itself: one commit item. */
static int comp_self_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct eng_req *r = (struct eng_req *)ci;
	struct comp_layers ls;
	struct meta_ent cur;
	int rc = comp_load(e, txn, r, &cur, &ls);

	if (rc != 0)
		return rc;
	ci->ci_hard = true;
	for (uint32_t i = 0; rc == 0 && r->er_kind == ER_OBJ_FREE &&
			     i < r->er_ext->ev_nr; i++) {
		uint64_t s = r->er_ext->ev_start_blk[i];
		uint64_t n = r->er_ext->ev_nr_blks[i];

		for (uint32_t k = 0; rc == 0 && k < ls.cs_nr; k++)
			if (!stripe_layout(ls.cs_v[k].cl_ent.me_layout))
				rc = ext_punch(eng_meta(e), txn,
					       &ls.cs_v[k].cl_rec.ml_sub, s, n,
					       cur.me_block_shift, &ci->ci_freed);
		if (rc == 0)
			rc = ext_punch(eng_meta(e), txn, &r->er_id, s, n,
				       cur.me_block_shift, &ci->ci_freed);
	}
	if (rc == 0)
		rc = obj_size_update(e, txn, r, &cur, r->er_kind != ER_OBJ_FREE);
	if (rc == 0)
		cgen_bump_req(e, &r->er_id, r->er_ext);
	if (rc == 0)
		rc = eng_fdmi_req(e, txn, r, r->er_kind == ER_OBJ_FREE ?
				  FDMI_OBJ_FREE : FDMI_OBJ_ALLOC, &cur);
	if (rc == 0)
		ci->ci_hard = false;
	return rc;
}

/* The composite's record and layers, in a read transaction of its own. */
static int comp_load_now(struct eng *e, struct eng_req *r,
			 struct meta_ent *cur, struct comp_layers *ls)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin read");
	rc = comp_load(e, txn, r, cur, ls);
	mdb_txn_abort(txn);
	return rc;
}

int comp_resolve(struct eng *e, struct eng_req *r)
{
	struct comp_layers ls;
	struct comp_layer *top;
	struct meta_ent cur;
	int rc;

	if (r->er_comp || r->er_kind != ER_OBJ_WRITE ||
	    r->er_ent.me_layout != ST_LAYOUT_COMPOSITE)
		return 0;
	rc = comp_load_now(e, r, &cur, &ls);
	if (rc != 0)
		return rc;
	top = layer_top(&ls);
	if (top == NULL)
		return err_set(-EINVAL, "object %s: composite object has no "
			       "layer yet (clovis_obj_layer_add)",
			       eng_id_str(&r->er_id));
	r->er_comp = true;
	r->er_comp_id = r->er_id;
	r->er_comp_ctime = cur.me_ctime_ns;
	r->er_comp_layer = top->cl_id;
	r->er_id = top->cl_rec.ml_sub;
	r->er_ent = top->cl_ent;
	return 0;
}

int comp_exec(struct eng *e, struct eng_req *r)
{
	struct comp_layers ls;
	struct meta_ent cur;
	int rc;

	if (r->er_kind == ER_OBJ_WRITE) {
		rc = comp_resolve(e, r);
		return rc != 0 ? rc : obj_exec(e, r);
	}
	rc = comp_load_now(e, r, &cur, &ls);
	if (rc != 0)
		return rc;
	if (r->er_kind == ER_OBJ_READ)
		return comp_read(e, r, &ls, cur.me_block_shift);
	r->er_ci.ci_apply = comp_self_apply;
	eng_commit_submit(e, &r->er_ci);
	return ENG_PENDING;
}

/* --------------------------------------------------------- management */

/* Run one synchronous write transaction through fn. */
/* A layer change as an item of the group commit: fn runs in a nested
 * transaction of the batch's, so that a refusal of fn (bad input, no such
 * layer) discards its own changes only and fails the item alone, and the
 * change shares its batch's one LMDB commit (and its write set, on the
 * home's standbys) with the other updates, moves' runs included, instead
 * of a commit of its own that the group committer waits behind.  Space
 * fn unmaps goes in the item's ci_freed (freed after the commit is
 * durable, as any update's). */
struct comp_ci {
	struct eng_citem cc_ci; /* first */
	int (*cc_fn)(struct eng *, MDB_txn *, void *);
	void *cc_arg;
	pthread_mutex_t cc_lock;
	pthread_cond_t cc_cond;
	bool cc_done;
	int cc_rc;
};

static int comp_ci_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct comp_ci *c = (struct comp_ci *)ci;
	MDB_txn *child;
	int rc = mdb_txn_begin(eng_meta(e)->m_env, txn, 0, &child);

	if (rc != 0) {
		ci->ci_hard = true;
		return meta_err(rc, "begin layer change");
	}
	rc = c->cc_fn(e, child, c->cc_arg);
	if (rc != 0) {
		mdb_txn_abort(child); /* nothing of it stays: a soft failure */
		return rc;
	}
	rc = mdb_txn_commit(child);
	if (rc != 0) {
		ci->ci_hard = true;
		return meta_err(rc, "commit layer change");
	}
	return 0;
}

static void comp_ci_done(struct eng_citem *ci, int rc)
{
	struct comp_ci *c = (struct comp_ci *)ci;

	pthread_mutex_lock(&c->cc_lock);
	c->cc_done = true;
	c->cc_rc = rc;
	pthread_cond_broadcast(&c->cc_cond);
	pthread_mutex_unlock(&c->cc_lock);
}

/* fn(e, txn, arg) committed with the group commit: 0 once durable, or
 * fn's (or the commit's) code with its message.  freed: where fn puts
 * the space it unmaps (NULL: none), released after the commit. */
static int comp_txn(struct eng *e, int (*fn)(struct eng *, MDB_txn *, void *),
		    void *arg, struct eng_spacevec **freed)
{
	struct comp_ci *c = calloc(1, sizeof *c);
	int rc;

	if (c == NULL)
		return err_set(-ENOMEM, "layer change");
	c->cc_fn = fn;
	c->cc_arg = arg;
	c->cc_ci.ci_apply = comp_ci_apply;
	c->cc_ci.ci_done = comp_ci_done;
	pthread_mutex_init(&c->cc_lock, NULL);
	pthread_cond_init(&c->cc_cond, NULL);
	if (freed != NULL)
		*freed = &c->cc_ci.ci_freed;
	eng_commit_submit(e, &c->cc_ci);
	pthread_mutex_lock(&c->cc_lock);
	while (!c->cc_done)
		pthread_cond_wait(&c->cc_cond, &c->cc_lock);
	pthread_mutex_unlock(&c->cc_lock);
	rc = c->cc_rc;
	if (rc != 0)
		err_set(rc, "%s", c->cc_ci.ci_msg[0] ? c->cc_ci.ci_msg :
			"layer change failed");
	eng_spacevec_fini(&c->cc_ci.ci_freed);
	eng_spacevec_fini(&c->cc_ci.ci_alloc);
	pthread_mutex_destroy(&c->cc_lock);
	pthread_cond_destroy(&c->cc_cond);
	free(c);
	return rc;
}

struct layer_add_arg {
	const struct st_id *la_id;
	struct meta_ent la_sub;
	uint32_t la_priority;
	uint32_t la_layer;
};

static int layer_add_fn(struct eng *e, MDB_txn *txn, void *arg)
{
	struct layer_add_arg *a = arg;
	struct meta_ent cur, probe;
	struct comp_layers ls;
	struct meta_layer ml = {.ml_priority = a->la_priority};
	uint32_t id = 1;
	uint8_t kb[20];
	MDB_val k, v;
	int rc = meta_ent_get(txn, eng_meta(e), a->la_id, &cur);

	if (rc == -ENOENT)
		return err_set(-ENOENT, "object %s does not exist",
			       eng_id_str(a->la_id));
	if (rc == 0 && cur.me_layout != ST_LAYOUT_COMPOSITE)
		return err_set(-EINVAL, "object %s is not composite",
			       eng_id_str(a->la_id));
	if (rc == 0)
		rc = layers_load(e, txn, a->la_id, &ls);
	if (rc != 0)
		return rc;
	if (ls.cs_nr == COMP_LAYERS_MAX)
		return err_set(-E2BIG, "object %s: %u layers already",
			       eng_id_str(a->la_id), COMP_LAYERS_MAX);
	for (uint32_t i = 0; i < ls.cs_nr; i++) {
		if (ls.cs_v[i].cl_rec.ml_priority == a->la_priority)
			return err_set(-EEXIST, "object %s: layer %u already has "
				       "priority %u", eng_id_str(a->la_id),
				       ls.cs_v[i].cl_id, a->la_priority);
		if (ls.cs_v[i].cl_id >= id)
			id = ls.cs_v[i].cl_id + 1;
	}
	const struct st_id sid = st_id_of(a->la_id);

	ml.ml_sub = (struct st_id){UINT64_MAX, layout_id_hash(&sid) + id};
	for (int t = 0; meta_ent_get(txn, eng_meta(e), &ml.ml_sub, &probe) == 0;
	     t++) {
		if (t == 16)
			return err_set(-EEXIST, "object %s: no free sub-object id",
				       eng_id_str(a->la_id));
		ml.ml_sub.si_lo += 0x9e3779b97f4a7c15ull;
	}
	a->la_sub.me_version = META_FORMAT_VERSION;
	a->la_sub.me_type = ST_ET_OBJ;
	a->la_sub.me_container = cur.me_container;
	a->la_sub.me_block_shift = cur.me_block_shift;
	a->la_sub.me_ctime_ns = a->la_sub.me_mtime_ns = eng_now_ns();
	rc = meta_ent_put(txn, eng_meta(e), &ml.ml_sub, &a->la_sub);
	k = layer_key(kb, a->la_id, id);
	v = (MDB_val){sizeof ml, &ml};
	if (rc == 0 && (rc = meta_mput(eng_meta(e), txn, eng_meta(e)->m_layer, &k, &v, 0)))
		rc = meta_err(rc, "write layer");
	a->la_layer = id;
	if (rc == 0 && eng_fdmi_on(e)) {
		struct fdmi_rec fr = {0};

		fr.fr_op = FDMI_LAYER_ADD;
		fr.fr_flags = FDMI_F_TIER;
		fr.fr_type = ST_ET_OBJ;
		fr.fr_id = *a->la_id;
		fr.fr_container = cur.me_container;
		fr.fr_tier = a->la_sub.me_tier;
		fr.fr_layer = id;
		fr.fr_size = cur.me_size_bytes;
		fr.fr_digest = fdmi_digest(&a->la_sub);
		rc = eng_fdmi_emit(e, txn, &fr, NULL);
	}
	return rc;
}

int comp_layer_add(struct eng *e, const struct st_id *id,
		   const struct meta_ent *sub, uint32_t priority,
		   uint32_t *layer)
{
	struct layer_add_arg a = {id, *sub, priority, 0};
	const struct st_id sid = st_id_of(id);
	struct layout l;
	int rc;

	if (sub->me_layout == ST_LAYOUT_COMPOSITE || sub->me_layout == 0)
		return err_set(-EINVAL, "object %s: a layer needs a plain, "
			       "pdclust or mirror layout (oa_layout %u)",
			       eng_id_str(id), sub->me_layout);
	if (stripe_layout(a.la_sub.me_layout)) {
		rc = eng_unit_attr_check(e, id, &a.la_sub);
	} else {
		rc = layout_place(&l, a.la_sub.me_layout, a.la_sub.me_tier,
				  eng_pool(e), &sid);
		a.la_sub.me_dev = l.ly_dev;
	}
	if (rc == 0)
		rc = comp_txn(e, layer_add_fn, &a, NULL);
	if (rc == 0)
		*layer = a.la_layer;
	return rc;
}

struct layer_drop_arg {
	const struct st_id *ld_id;
	uint32_t ld_layer;
	struct eng_spacevec *ld_freed; /* the commit item's ci_freed */
};

static int layer_drop_fn(struct eng *e, MDB_txn *txn, void *arg)
{
	struct layer_drop_arg *a = arg;
	struct meta_ent comp;
	struct comp_layers ls;
	struct comp_layer *l;
	struct ext_list xl = {0};
	uint8_t kb[20];
	MDB_val k;
	int rc = layers_load(e, txn, a->ld_id, &ls);

	if (rc != 0)
		return rc;
	l = layer_find(&ls, a->ld_layer);
	if (l == NULL)
		return err_set(-ENOENT, "object %s: no layer %u",
			       eng_id_str(a->ld_id), a->ld_layer);
	rc = ext_lookup(eng_meta(e), txn, a->ld_id, 0, ST_BLOCK_NR_MAX, &xl);
	for (uint32_t i = 0; rc == 0 && i < xl.xl_nr; i++)
		if (xl.xl_v[i].xr_ext.mx_dev_off == a->ld_layer)
			rc = err_set(-ENOTEMPTY, "object %s: layer %u still "
				     "holds block %" PRIu64 " (move it first)",
				     eng_id_str(a->ld_id), a->ld_layer,
				     xl.xl_v[i].xr_blk);
	free(xl.xl_v);
	if (rc == 0 && eng_fdmi_on(e))
		rc = meta_ent_get(txn, eng_meta(e), a->ld_id, &comp);
	if (rc == 0)
		rc = obj_delete_maps(e, txn, &l->cl_rec.ml_sub, a->ld_freed);
	k = layer_key(kb, a->ld_id, a->ld_layer);
	if (rc == 0 && (rc = meta_mdel(eng_meta(e), txn, eng_meta(e)->m_layer, &k, NULL)))
		rc = meta_err(rc, "delete layer");
	k = meta_ent_key(kb, &l->cl_rec.ml_sub);
	if (rc == 0 && (rc = meta_mdel(eng_meta(e), txn, eng_meta(e)->m_ent, &k, NULL)))
		rc = meta_err(rc, "delete layer object");
	if (rc == 0 && eng_fdmi_on(e)) {
		struct fdmi_rec fr = {0};

		fr.fr_op = FDMI_LAYER_DROP;
		fr.fr_flags = FDMI_F_TIER;
		fr.fr_type = ST_ET_OBJ;
		fr.fr_id = *a->ld_id;
		fr.fr_container = comp.me_container;
		fr.fr_tier = l->cl_ent.me_tier;
		fr.fr_layer = a->ld_layer;
		fr.fr_size = comp.me_size_bytes;
		fr.fr_digest = fdmi_digest(&comp);
		rc = eng_fdmi_emit(e, txn, &fr, NULL);
	}
	return rc;
}

int comp_layer_drop(struct eng *e, const struct st_id *id, uint32_t layer)
{
	struct layer_drop_arg a = {id, layer, NULL};

	/* the dropped layer's space is freed by the commit stage once its
	 * commit is durable, after the readers' grace period */
	return comp_txn(e, layer_drop_fn, &a, &a.ld_freed);
}

int comp_layer_list(struct eng *e, const struct st_id *id,
		    struct st_layer_info *out, uint32_t *nr)
{
	struct comp_layers ls;
	struct ext_list xl = {0};
	MDB_txn *txn;
	uint32_t n = 0;
	int rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin read");
	rc = layers_load(e, txn, id, &ls);
	if (rc == 0)
		rc = ext_lookup(eng_meta(e), txn, id, 0, ST_BLOCK_NR_MAX, &xl);
	mdb_txn_abort(txn);
	/* highest priority first */
	for (uint32_t i = 1; rc == 0 && i < ls.cs_nr; i++)
		for (uint32_t j = i; j > 0 && ls.cs_v[j - 1].cl_rec.ml_priority <
						      ls.cs_v[j].cl_rec.ml_priority; j--) {
			struct comp_layer t = ls.cs_v[j];

			ls.cs_v[j] = ls.cs_v[j - 1];
			ls.cs_v[j - 1] = t;
		}
	for (uint32_t i = 0; rc == 0 && i < ls.cs_nr; i++, n++) {
		const struct meta_ent *m = &ls.cs_v[i].cl_ent;
		struct st_layer_info *li;

		if (n >= *nr)
			continue;
		li = &out[n];
		memset(li, 0, sizeof *li);
		li->li_layer = ls.cs_v[i].cl_id;
		li->li_priority = ls.cs_v[i].cl_rec.ml_priority;
		li->li_attr.oa_block_shift = m->me_block_shift;
		li->li_attr.oa_layout = m->me_layout;
		li->li_attr.oa_tier = m->me_tier;
		li->li_attr.oa_dev = m->me_dev;
		li->li_attr.oa_pool = m->me_pool;
		li->li_attr.oa_data_units = m->me_n;
		li->li_attr.oa_parity_units = m->me_k;
		li->li_attr.oa_spare_units = m->me_s;
		li->li_attr.oa_unit_shift = m->me_unit_shift;
		for (uint32_t k = 0; k < xl.xl_nr; k++)
			if (xl.xl_v[k].xr_ext.mx_dev_off == li->li_layer)
				li->li_blocks += xl.xl_v[k].xr_ext.mx_nr_blks;
	}
	free(xl.xl_v);
	if (rc == 0)
		*nr = n;
	return rc;
}

int comp_where(struct eng *e, const struct st_id *id, uint64_t blk,
	       uint32_t *layer)
{
	struct ext_list xl = {0};
	int rc = map_get(e, id, blk, 1, &xl);

	if (rc == 0 && xl.xl_nr == 0)
		rc = -ENOENT;
	if (rc == 0)
		*layer = (uint32_t)xl.xl_v[0].xr_ext.mx_dev_off;
	free(xl.xl_v);
	return rc;
}

/* Records comp_layer_map() reads at once: its memory and the work of a
 * call stay bounded however many records the range has. */
#define COMP_MAP_WINDOW 4096u

int comp_layer_map(struct eng *e, const struct st_id *id, uint64_t start,
		   uint64_t nr, struct st_layer_ext *out, uint32_t *n_out,
		   uint64_t *next)
{
	struct ext_list xl = {0};
	struct meta_ent me;
	uint64_t end = start + nr, pos = start;
	uint32_t n = 0, cap = *n_out;
	bool full = false;
	MDB_txn *txn;
	int rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin read");
	*next = end;
	rc = meta_ent_get(txn, eng_meta(e), id, &me);
	if (rc == -ENOENT || (rc == 0 && me.me_type != ST_ET_OBJ))
		rc = err_set(-ENOENT, "object %s does not exist",
			     eng_id_str(id));
	else if (rc == 0 && me.me_layout != ST_LAYOUT_COMPOSITE)
		rc = err_set(-EINVAL, "object %s is not composite (layout "
			     "%u): it has no layers to map", eng_id_str(id),
			     me.me_layout);
	/* records in block order, a window at a time; clipped to the range;
	 * touching runs of one layer merged; a record that neither merges
	 * nor fits ends the call (*next: its start) */
	while (rc == 0 && !full && pos < end) {
		uint32_t got;

		xl.xl_nr = 0;
		rc = ext_lookup_max(eng_meta(e), txn, id, pos, end - pos,
				    COMP_MAP_WINDOW, &xl);
		got = xl.xl_nr;
		for (uint32_t k = 0; rc == 0 && k < got; k++) {
			uint64_t a = xl.xl_v[k].xr_blk;
			uint64_t b = a + xl.xl_v[k].xr_ext.mx_nr_blks;
			uint32_t layer = (uint32_t)xl.xl_v[k].xr_ext.mx_dev_off;

			a = a < pos ? pos : a;
			b = b > end ? end : b;
			if (a >= b)
				continue;
			if (n > 0 && out[n - 1].le_layer == layer &&
			    out[n - 1].le_start + out[n - 1].le_blocks == a) {
				out[n - 1].le_blocks += b - a;
				pos = b;
				continue;
			}
			if (n == cap) {
				*next = a;
				full = true;
				break;
			}
			out[n++] = (struct st_layer_ext){a, b - a, layer};
			pos = b;
		}
		if (got < COMP_MAP_WINDOW)
			break; /* the range's records are all read */
	}
	mdb_txn_abort(txn);
	free(xl.xl_v);
	if (rc == 0)
		*n_out = n;
	return rc;
}


int comp_obj_scrub(struct eng *e, const struct st_id *id,
		   struct stripe_walk_stats *st)
{
	struct comp_layers ls;
	struct meta_ent me;
	MDB_txn *txn;
	int rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);

	memset(st, 0, sizeof *st);
	if (rc != 0)
		return meta_err(rc, "begin read");
	ls.cs_nr = 0;
	rc = meta_ent_get(txn, eng_meta(e), id, &me);
	if (rc == -ENOENT || (rc == 0 && me.me_type != ST_ET_OBJ))
		rc = err_set(-ENOENT, "object %s does not exist",
			     eng_id_str(id));
	if (rc == 0 && me.me_layout == ST_LAYOUT_COMPOSITE)
		rc = layers_load(e, txn, id, &ls);
	mdb_txn_abort(txn);
	if (rc != 0)
		return rc;
	if (stripe_layout(me.me_layout))
		return eng_unit_scrub_obj(e, id, st);
	/* each unit layer in turn; every one is scrubbed, the first
	 * failure answered */
	for (uint32_t i = 0; i < ls.cs_nr; i++) {
		struct stripe_walk_stats one = {0};
		int r;

		if (!stripe_layout(ls.cs_v[i].cl_ent.me_layout))
			continue;
		r = eng_unit_scrub_obj(e, &ls.cs_v[i].cl_rec.ml_sub, &one);
		eng_walk_stats_add(st, &one);
		if (r != 0 && rc == 0)
			rc = r;
	}
	return rc;
}

/* ------------------------------------------------------------- move */

struct move_wait {
	pthread_mutex_t mw_lock;
	pthread_cond_t mw_cond;
	bool mw_done;
	int mw_rc;
	char mw_msg[LIM_ERRMSG_LEN];
};

static void move_done(struct eng_citem *ci, int rc)
{
	struct move_wait *w = ((struct eng_req *)ci)->er_priv;

	pthread_mutex_lock(&w->mw_lock);
	w->mw_done = true;
	w->mw_rc = rc;
	memcpy(w->mw_msg, ci->ci_msg, sizeof w->mw_msg);
	pthread_cond_broadcast(&w->mw_cond);
	pthread_mutex_unlock(&w->mw_lock);
}

/* 0 if layer from holds every block of [s, s + n) of id, else -EAGAIN. */
static int map_held(struct eng *e, const struct st_id *id, uint64_t s,
		    uint64_t n, uint32_t from)
{
	struct ext_list l = {0};
	uint64_t pos = s;
	int rc = map_get(e, id, s, n, &l);

	for (uint32_t i = 0; rc == 0 && i < l.xl_nr; i++) {
		const struct ext_rec *x = &l.xl_v[i];

		if (x->xr_ext.mx_dev_off != from || x->xr_blk > pos)
			break;
		pos = x->xr_blk + x->xr_ext.mx_nr_blks;
	}
	free(l.xl_v);
	if (rc == 0 && pos < s + n)
		rc = -EAGAIN;
	return rc;
}

/* Move one run held by layer from into layer to: -EAGAIN (nothing moved)
 * when an update of some of its blocks came first. */
static int move_run(struct eng *e, const struct st_id *id,
		    const struct meta_ent *cur, struct comp_layers *ls,
		    uint64_t s, uint64_t n, uint32_t from, uint32_t to)
{
	struct comp_layer *src = layer_find(ls, from), *dst = layer_find(ls, to);
	uint64_t len = n << cur->me_block_shift;
	struct st_extvec ev = {1, &s, &n};
	struct move_wait w = {.mw_lock = PTHREAD_MUTEX_INITIALIZER,
			      .mw_cond = PTHREAD_COND_INITIALIZER};
	struct eng_req *q;
	void *buf;
	size_t blen = len;
	struct st_bufvec bv = {1, &buf, &blen};
	int rc;

	if (src == NULL || dst == NULL)
		return err_set(-ST_ECORRUPT, "object %s: layer %u missing",
			       eng_id_str(id), src == NULL ? from : to);
	if (posix_memalign(&buf, 4096, len) != 0)
		return err_set(-ENOMEM, "move buffer of %" PRIu64, len);
	q = calloc(1, sizeof *q);
	rc = q == NULL ? err_set(-ENOMEM, "move request") :
			 cgen_snap(e, id, s, n, q);
	/* after the snapshot, the run must still be from's: else an update
	 * took some of it meanwhile (its source copy may be gone) */
	if (rc == 0)
		rc = map_held(e, id, s, n, from);
	if (rc == 0)
		rc = layer_read(e, src, s, n, &bv);
	if (rc == 0) {
		q->er_kind = ER_OBJ_WRITE;
		q->er_type = ST_ET_OBJ;
		q->er_id = dst->cl_rec.ml_sub;
		q->er_ent = dst->cl_ent;
		q->er_ext = &ev;
		q->er_data = &bv;
		q->er_comp = true;
		q->er_comp_move = true;
		q->er_comp_id = *id;
		q->er_comp_ctime = cur->me_ctime_ns;
		q->er_comp_layer = to;
		q->er_comp_from = from;
		q->er_priv = &w;
		q->er_ci.ci_done = move_done;
		rc = obj_exec(e, q);
		if (rc == ENG_PENDING) {
			pthread_mutex_lock(&w.mw_lock);
			while (!w.mw_done)
				pthread_cond_wait(&w.mw_cond, &w.mw_lock);
			pthread_mutex_unlock(&w.mw_lock);
			rc = w.mw_rc;
			if (rc != 0)
				err_set(rc, "%s", w.mw_msg);
		}
	}
	if (q != NULL) {
		free(q->er_comp_gen);
		eng_spacevec_fini(&q->er_ci.ci_alloc);
		eng_spacevec_fini(&q->er_ci.ci_freed);
		eng_unit_req_fini(q);
		free(q);
	}
	free(buf);
	return rc;
}

/* A run that was updated while it moved: once more, granule by granule,
 * each up to LIM_CGEN_TRIES times; a granule updated every time stays
 * where the newer data is (not moved, not an error: the caller sees it in
 * *moved and in the layers). */
static int move_retry(struct eng *e, const struct st_id *id,
		      const struct meta_ent *cur, struct comp_layers *ls,
		      uint64_t s, uint64_t n, uint32_t from, uint32_t to,
		      uint64_t *moved)
{
	int rc = 0;

	for (uint64_t p = s; rc == 0 && p < s + n; ) {
		uint64_t q = (p / LIM_CGEN_GRAIN + 1) * LIM_CGEN_GRAIN;
		struct ext_list xl = {0};

		q = q < s + n ? q : s + n;
		/* only what from still holds (a write took the rest away) */
		rc = map_get(e, id, p, q - p, &xl);
		for (uint32_t i = 0; rc == 0 && i < xl.xl_nr; i++) {
			const struct ext_rec *x = &xl.xl_v[i];
			uint64_t a = x->xr_blk > p ? x->xr_blk : p;
			uint64_t b = x->xr_blk + x->xr_ext.mx_nr_blks;

			b = b < q ? b : q;
			if (x->xr_ext.mx_dev_off != from || a >= b)
				continue;
			/* a refusal may be another object's update that
			 * shares a slot: a few tries before giving up */
			rc = -EAGAIN;
			for (uint32_t t = 0; rc == -EAGAIN &&
					     t < LIM_CGEN_TRIES; t++)
				rc = move_run(e, id, cur, ls, a, b - a, from,
					      to);
			if (rc == 0)
				*moved += b - a;
			else if (rc == -EAGAIN)
				rc = 0;
		}
		free(xl.xl_v);
		p = q;
	}
	return rc;
}

int comp_move(struct eng *e, const struct st_id *id, uint64_t start,
	      uint64_t nr, uint32_t to, uint64_t *moved)
{
	struct eng_req r = {0};
	struct comp_layers ls;
	struct ext_list xl = {0};
	struct meta_ent cur;
	MDB_txn *txn;
	int rc;

	*moved = 0;
	r.er_id = *id;
	r.er_type = ST_ET_OBJ;
	rc = mdb_txn_begin(eng_meta(e)->m_env, NULL, MDB_RDONLY, &txn);
	if (rc != 0)
		return meta_err(rc, "begin read");
	rc = meta_ent_get(txn, eng_meta(e), id, &cur);
	if (rc == 0) {
		r.er_ent.me_ctime_ns = cur.me_ctime_ns;
		rc = comp_load(e, txn, &r, &cur, &ls);
	}
	if (rc == 0 && layer_find(&ls, to) == NULL)
		rc = err_set(-ENOENT, "object %s: no layer %u", eng_id_str(id),
			     to);
	if (rc == 0)
		rc = ext_lookup(eng_meta(e), txn, id, start, nr, &xl);
	mdb_txn_abort(txn);
	eng_thread_enter();
	for (uint32_t i = 0; rc == 0 && i < xl.xl_nr; i++) {
		const struct ext_rec *x = &xl.xl_v[i];
		uint64_t s = x->xr_blk > start ? x->xr_blk : start;
		uint64_t end = x->xr_blk + x->xr_ext.mx_nr_blks;
		uint64_t chunk = LIM_IO_CHUNK >> cur.me_block_shift;

		end = end < start + nr ? end : start + nr;
		if (x->xr_ext.mx_dev_off == to)
			continue;
		chunk = chunk ? chunk : 1;
		for (uint64_t p = s; rc == 0 && p < end; p += chunk) {
			uint64_t n = end - p < chunk ? end - p : chunk;

			rc = move_run(e, id, &cur, &ls, p, n,
				      (uint32_t)x->xr_ext.mx_dev_off, to);
			if (rc == 0)
				*moved += n;
			else if (rc == -EAGAIN)
				rc = move_retry(e, id, &cur, &ls, p, n,
						(uint32_t)x->xr_ext.mx_dev_off,
						to, moved);
		}
	}
	eng_thread_leave();
	free(xl.xl_v);
	return rc;
}

int comp_delete(struct eng *e, MDB_txn *txn, const struct st_id *id,
		struct eng_spacevec *freed)
{
	struct comp_layers ls;
	int rc = layers_load(e, txn, id, &ls);

	for (uint32_t i = 0; rc == 0 && i < ls.cs_nr; i++) {
		uint8_t kb[20];
		MDB_val k;

		rc = obj_delete_maps(e, txn, &ls.cs_v[i].cl_rec.ml_sub, freed);
		k = meta_ent_key(kb, &ls.cs_v[i].cl_rec.ml_sub);
		if (rc == 0 && (rc = meta_mdel(eng_meta(e), txn, eng_meta(e)->m_ent, &k, NULL)))
			rc = meta_err(rc, "delete layer object");
		k = layer_key(kb, id, ls.cs_v[i].cl_id);
		if (rc == 0 && (rc = meta_mdel(eng_meta(e), txn, eng_meta(e)->m_layer, &k, NULL)))
			rc = meta_err(rc, "delete layer");
	}
	if (rc == 0)
		rc = ext_punch(eng_meta(e), txn, id, 0, ST_BLOCK_NR_MAX, 0,
			       freed);
	return rc;
}
