/*
 * attridx.c — the attribute-index plugin's engine (contract and key
 * format in attridx.h, design in README.md): the index ops, the fold of
 * an FDMI batch into index updates, the rebuild from a scan of the
 * store, and the query.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "fdmi/attridx/attridx.h"
#include "fdmi/plugin/plugin.h"

/* Records one next asks for (a batch: at most this many objects, so its
 * PUT of two entries each, plus the cursors, stays below
 * CLOVIS_VEC_MAX). */
#define AX_BATCH 1024u
/* Records one NEXT of a walk asks for, and objects one PUT of a rebuild
 * indexes. */
#define AX_CHUNK 256u
/* Servers whose cursors we keep (records of more: refused). */
#define AX_SERVERS_MAX 256u
/* Pools and devices of the store we look at for pool tiers. */
#define AX_POOLS_MAX 64u
#define AX_DEVS_MAX 1024u
/* Layers of one composite object we look at (COMP_LAYERS_MAX is 8). */
#define AX_LAYERS_MAX 16u
/* Longest meta key: 'm' "cursor:" and a server name. */
#define AX_META_MAX (1u + 7u + CLOVIS_FDMI_SERVER_LEN)

static const char ax_filter[] =
	"op=obj.create,obj.delete,obj.write,obj.alloc,obj.free,setattr,"
	"layer.add,layer.drop,layer.move";
static const char ax_rebuild_key[] = "mrebuild";

struct ax_cursor {
	char cu_server[CLOVIS_FDMI_SERVER_LEN];
	uint64_t cu_seq;      /* the last folded in (durable) */
	uint64_t cu_batch;    /* the highest of the batch being folded */
};

struct attridx {
	struct clovis *a_cl;
	struct clovis_idx a_idx;
	char a_consumer[CLOVIS_FDMI_NAME_MAX + 1];
	bool a_no_ack;
	FILE *a_out;
	struct ax_cursor a_cur[AX_SERVERS_MAX];
	uint32_t a_nr_cur;
	/* tier of each pool (by pool index), -1 unknown; loaded once */
	int a_pool_tier[AX_POOLS_MAX];
	bool a_pools_loaded;
};

/* One object a batch names: its final state after the batch. */
struct ax_obj {
	struct clovis_id o_id;
	struct clovis_id o_cont;
	uint64_t o_size;
	int o_tier;           /* a plain object's, from a record; -1 */
	uint32_t o_layout;    /* from a record; 0 unknown */
	bool o_deleted;
	bool o_created;       /* a create among the records */
	bool o_has_rev;       /* the index has its reverse entry: */
	uint8_t o_old[ATTRIDX_REV_VAL_LEN];
	uint8_t o_new[ATTRIDX_REV_VAL_LEN];
	uint8_t o_rkey[ATTRIDX_REV_LEN];
};

/* ------------------------------------------------------------ keys */

static void be64_put(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t be64_get(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void id_put(uint8_t *p, const struct clovis_id *id)
{
	be64_put(p, id->ci_hi);
	be64_put(p + 8, id->ci_lo);
}

static void id_get(const uint8_t *p, struct clovis_id *id)
{
	id->ci_hi = be64_get(p);
	id->ci_lo = be64_get(p + 8);
}

void attridx_key_fwd(uint8_t *out, const struct clovis_id *cont,
		     uint32_t tier, uint64_t size, const struct clovis_id *id)
{
	out[0] = ATTRIDX_FWD;
	id_put(out + 1, cont);
	out[ATTRIDX_FWD_TIER_AT] = (uint8_t)tier;
	be64_put(out + 18, size);
	id_put(out + 26, id);
}

bool attridx_key_fwd_decode(const void *key, size_t len,
			    struct attridx_entry *e)
{
	const uint8_t *p = key;

	if (len != ATTRIDX_FWD_LEN || p[0] != ATTRIDX_FWD)
		return false;
	id_get(p + 1, &e->ae_container);
	e->ae_tier = p[ATTRIDX_FWD_TIER_AT];
	e->ae_size = be64_get(p + 18);
	id_get(p + 26, &e->ae_id);
	return true;
}

static void key_rev(uint8_t *out, const struct clovis_id *id)
{
	out[0] = ATTRIDX_REV;
	id_put(out + 1, id);
}

const char *attridx_tier_name(uint32_t tier)
{
	static const char *const names[] = {"nvram", "flash", "sas", "smr"};

	return tier < CLOVIS_TIER_NR ? names[tier] : "-";
}

/* ---------------------------------------------------------- index ops */

/* Run one record op on ix and wait until it is STABLE.  rcs: n slots. */
static int idx_run(struct clovis_idx *ix, enum clovis_idx_opcode opc,
		   void **keys, size_t *klen, void **vals, size_t *vlen,
		   uint32_t n, int32_t *rcs, uint32_t flags)
{
	struct clovis_bufvec kv = {n, keys, klen}, vv = {n, vals, vlen};
	struct clovis_op *op = NULL;
	int rc = clovis_idx_op(ix, opc, &kv, vals != NULL ? &vv : NULL, rcs,
			       flags, &op);

	if (rc == 0)
		rc = clovis_op_sync(op); /* frees op */
	return rc;
}

/* PUT (OVERWRITE) n records, durably; every record must be stored. */
static int idx_put(struct clovis_idx *ix, void **keys, size_t *klen,
		   void **vals, size_t *vlen, uint32_t n)
{
	int32_t *rcs;
	int rc;

	if (n == 0)
		return 0;
	rcs = calloc(n, sizeof *rcs);
	if (rcs == NULL)
		return err_set(-ENOMEM, "attridx: PUT of %u records", n);
	rc = idx_run(ix, CLOVIS_IC_PUT, keys, klen, vals, vlen, n, rcs,
		     CLOVIS_IF_OVERWRITE);
	for (uint32_t k = 0; rc == 0 && k < n; k++)
		if (rcs[k] != 0)
			rc = err_set(rcs[k], "attridx: PUT of record %u: %s",
				     k, clovis_strerror(rcs[k]));
	free(rcs);
	return rc;
}

/* DEL n keys, durably; an absent key is not an error. */
static int idx_del(struct clovis_idx *ix, void **keys, size_t *klen,
		   uint32_t n)
{
	int32_t *rcs;
	int rc;

	if (n == 0)
		return 0;
	rcs = calloc(n, sizeof *rcs);
	if (rcs == NULL)
		return err_set(-ENOMEM, "attridx: DEL of %u records", n);
	rc = idx_run(ix, CLOVIS_IC_DEL, keys, klen, NULL, NULL, n, rcs, 0);
	for (uint32_t k = 0; rc == 0 && k < n; k++)
		if (rcs[k] != 0 && rcs[k] != -ENOENT)
			rc = err_set(rcs[k], "attridx: DEL of record %u: %s",
				     k, clovis_strerror(rcs[k]));
	free(rcs);
	return rc;
}

/* One record of a walk: 0 go on, 1 stop, < 0 an error. */
typedef int (*rec_fn)(void *arg, const void *key, size_t klen,
		      const void *val, size_t vlen);

/* One NEXT of up to AX_CHUNK records from start (NULL: the first; after
 * it with excl), each given to fn; *more: a full chunk came, and *last
 * (malloc()ed, *llen) its last key. */
static int walk_chunk(struct clovis_idx *ix, const void *start, size_t slen,
		      bool excl, rec_fn fn, void *arg, bool *more,
		      void **last, size_t *llen)
{
	void *keys[AX_CHUNK] = {0}, *vals[AX_CHUNK] = {0};
	size_t klen[AX_CHUNK] = {0}, vlen[AX_CHUNK] = {0};
	int32_t rcs[AX_CHUNK];
	uint32_t got = 0;
	int rc;

	keys[0] = (void *)start;
	klen[0] = start != NULL ? slen : 0;
	rc = idx_run(ix, CLOVIS_IC_NEXT, keys, klen, vals, vlen, AX_CHUNK,
		     rcs, excl ? CLOVIS_IF_EXCLUDE_START_KEY : 0);
	*more = false;
	if (rc != 0)
		return rc;
	for (uint32_t k = 0; k < AX_CHUNK && rcs[k] == 0; k++)
		got = k + 1;
	for (uint32_t k = 0; rc == 0 && k < got; k++) {
		rc = fn(arg, keys[k], klen[k], vals[k], vlen[k]);
		if (rc == 0 && k + 1 == AX_CHUNK) {
			*more = true;
			*last = keys[k];
			*llen = klen[k];
			keys[k] = NULL;
		}
	}
	for (uint32_t k = 0; k < got; k++) {
		free(keys[k]);
		free(vals[k]);
	}
	return rc;
}

/* Give fn every record of ix from start (NULL: the first) in key order,
 * until fn returns non-zero or the index ends.  0 or < 0. */
static int idx_walk(struct clovis_idx *ix, const void *start, size_t slen,
		    rec_fn fn, void *arg)
{
	void *from = NULL;
	size_t flen = 0;
	bool more = true, excl = false;
	int rc = 0;

	if (start != NULL) {
		from = malloc(slen > 0 ? slen : 1);
		if (from == NULL)
			return err_set(-ENOMEM, "attridx: walk");
		memcpy(from, start, slen);
		flen = slen;
	}
	while (rc == 0 && more) {
		void *last = NULL;
		size_t llen = 0;

		rc = walk_chunk(ix, from, flen, excl, fn, arg, &more, &last,
				&llen);
		free(from);
		from = last;
		flen = llen;
		excl = true;
	}
	free(from);
	return rc < 0 ? rc : 0;
}

/* Open index id of cl's default container into *ix. */
static int idx_open(struct clovis *cl, const struct clovis_id *id,
		    struct clovis_idx *ix, enum clovis_entity_opcode opc)
{
	struct clovis_op *op = NULL;
	int rc = clovis_idx_init(ix, clovis_default_realm(cl), id);

	if (rc == 0)
		rc = clovis_entity_op(&ix->in_entity, opc, &op);
	if (rc == 0)
		rc = clovis_op_sync(op); /* frees op */
	return rc;
}

/* ----------------------------------------------------------- objects */

/* The tier of every pool, from the devices it lists (once). */
static int pools_load(struct attridx *a)
{
	struct clovis_pool_info *pi = NULL;
	struct clovis_dev_info *di = NULL;
	uint32_t np = AX_POOLS_MAX, nd = AX_DEVS_MAX;
	int rc = -ENOMEM;

	for (uint32_t p = 0; p < AX_POOLS_MAX; p++)
		a->a_pool_tier[p] = -1;
	pi = calloc(AX_POOLS_MAX, sizeof *pi);
	di = calloc(AX_DEVS_MAX, sizeof *di);
	if (pi == NULL || di == NULL) {
		err_set(rc, "attridx: pool list");
		goto out;
	}
	rc = clovis_pool_list(a->a_cl, pi, &np);
	if (rc == 0)
		rc = clovis_dev_list(a->a_cl, di, &nd);
	if (rc != 0)
		goto out;
	np = np < AX_POOLS_MAX ? np : AX_POOLS_MAX;
	nd = nd < AX_DEVS_MAX ? nd : AX_DEVS_MAX;
	for (uint32_t p = 0; p < np; p++) {
		if (pi[p].pi_index >= AX_POOLS_MAX || pi[p].pi_nr_devs == 0)
			continue;
		for (uint32_t d = 0; d < nd; d++)
			if (di[d].di_index == pi[p].pi_devs[0])
				a->a_pool_tier[pi[p].pi_index] =
					(int)di[d].di_tier;
	}
	a->a_pools_loaded = true;
out:
	free(pi);
	free(di);
	return rc;
}

/* The tier of a sub-layout: a plain one's tier, a unit layout's pool's. */
static uint32_t attr_tier(struct attridx *a, const struct clovis_obj_attr *at)
{
	if (at->oa_layout == CLOVIS_LAYOUT_PLAIN)
		return at->oa_tier;
	if (!a->a_pools_loaded && pools_load(a) != 0)
		return ATTRIDX_TIER_NONE;
	if (at->oa_pool < AX_POOLS_MAX && a->a_pool_tier[at->oa_pool] >= 0)
		return (uint32_t)a->a_pool_tier[at->oa_pool];
	return ATTRIDX_TIER_NONE;
}

/* A composite's tier: the one holding most blocks (ties: the higher
 * layer), else the top layer's; ATTRIDX_TIER_NONE without layers. */
static int comp_tier(struct attridx *a, struct clovis_obj *o, uint32_t *tier)
{
	struct clovis_layer_info li[AX_LAYERS_MAX];
	uint64_t per[CLOVIS_TIER_NR] = {0}, best = 0;
	uint32_t nr = AX_LAYERS_MAX, t;
	int rc = clovis_obj_layer_list(o, li, &nr);

	if (rc != 0)
		return rc;
	nr = nr < AX_LAYERS_MAX ? nr : AX_LAYERS_MAX;
	*tier = nr > 0 ? attr_tier(a, &li[0].li_attr) : ATTRIDX_TIER_NONE;
	for (uint32_t i = 0; i < nr; i++) {
		t = attr_tier(a, &li[i].li_attr);
		if (t < CLOVIS_TIER_NR)
			per[t] += li[i].li_blocks;
	}
	for (uint32_t i = 0; i < nr; i++) {
		t = attr_tier(a, &li[i].li_attr);
		if (t < CLOVIS_TIER_NR && per[t] > best) {
			best = per[t];
			*tier = t;
		}
	}
	return 0;
}

/* Open object id of container cont: its layout, tier and byte size. */
static int obj_probe(struct attridx *a, const struct clovis_id *id,
		     const struct clovis_id *cont, uint32_t *layout,
		     uint32_t *tier, uint64_t *size)
{
	struct clovis_container c;
	struct clovis_obj o;
	int rc = plugin_obj_open(a->a_cl, id, cont, &c, &o);

	if (rc != 0)
		return rc;
	*layout = o.ob_attr.oa_layout;
	*size = o.ob_attr.oa_size_bytes;
	if (*layout == CLOVIS_LAYOUT_COMPOSITE)
		return comp_tier(a, &o, tier);
	*tier = attr_tier(a, &o.ob_attr);
	return 0;
}

/* ----------------------------------------------------------- cursors */

/* The cursor of server (loaded from the index the first time). */
static int cursor_of(struct attridx *a, const char *server,
		     struct ax_cursor **out)
{
	char key[AX_META_MAX + 1];
	void *kp[1] = {key}, *vp[1] = {NULL};
	size_t kl[1], vl[1] = {0};
	int32_t rcs[1];
	struct ax_cursor *cu;
	int rc;

	for (uint32_t i = 0; i < a->a_nr_cur; i++)
		if (strcmp(a->a_cur[i].cu_server, server) == 0) {
			*out = &a->a_cur[i];
			return 0;
		}
	if (a->a_nr_cur == AX_SERVERS_MAX)
		return err_set(-E2BIG, "attridx: records of more than %u "
			       "servers", AX_SERVERS_MAX);
	cu = &a->a_cur[a->a_nr_cur];
	snprintf(cu->cu_server, sizeof cu->cu_server, "%s", server);
	kl[0] = (size_t)snprintf(key, sizeof key, "mcursor:%s", server);
	rc = idx_run(&a->a_idx, CLOVIS_IC_GET, kp, kl, vp, vl, 1, rcs, 0);
	if (rc != 0)
		return rc;
	cu->cu_seq = 0;
	if (rcs[0] == 0) {
		char num[32];
		size_t n = vl[0] < sizeof num - 1 ? vl[0] : sizeof num - 1;

		memcpy(num, vp[0], n);
		num[n] = '\0';
		cu->cu_seq = strtoull(num, NULL, 10);
	} else if (rcs[0] != -ENOENT) {
		rc = err_set(rcs[0], "attridx: cursor of %s: %s", server,
			     clovis_strerror(rcs[0]));
	}
	free(vp[0]);
	if (rc != 0)
		return rc;
	cu->cu_batch = cu->cu_seq;
	a->a_nr_cur++;
	*out = cu;
	return 0;
}

/* ------------------------------------------------------------ a batch */

/* The entry of object id in v[*n] (added when new). */
static struct ax_obj *obj_slot(struct ax_obj *v, uint32_t *n,
			       const struct clovis_id *id)
{
	for (uint32_t i = 0; i < *n; i++)
		if (clovis_id_cmp(&v[i].o_id, id) == 0)
			return &v[i];
	memset(&v[*n], 0, sizeof v[*n]);
	v[*n].o_id = *id;
	v[*n].o_tier = -1;
	return &v[(*n)++];
}

/* Fold record r into its object's state. */
static void rec_fold(struct ax_obj *o, const struct clovis_fdmi_rec *r)
{
	if (r->fr_op == CLOVIS_FDMI_OBJ_DELETE) {
		o->o_deleted = true;
		o->o_created = false;
		o->o_layout = 0;
		o->o_tier = -1;
		return;
	}
	o->o_deleted = false;
	o->o_cont = r->fr_container;
	o->o_size = r->fr_size;
	switch (r->fr_op) {
	case CLOVIS_FDMI_OBJ_CREATE:
		o->o_layout = r->fr_layer; /* a create names the layout */
		o->o_created = true;
		break;
	case CLOVIS_FDMI_LAYER_ADD:
	case CLOVIS_FDMI_LAYER_DROP:
	case CLOVIS_FDMI_LAYER_MOVE:
		o->o_layout = CLOVIS_LAYOUT_COMPOSITE;
		break;
	case CLOVIS_FDMI_OBJ_WRITE:
	case CLOVIS_FDMI_OBJ_ALLOC:
	case CLOVIS_FDMI_OBJ_FREE:
		if (r->fr_layer != 0) /* through a composite's layer */
			o->o_layout = CLOVIS_LAYOUT_COMPOSITE;
		break;
	default:
		break;
	}
	/* Only a plain object's records name its own tier (those of
	 * pdclust and mirror objects carry tier 0 whatever their pool). */
	if (o->o_layout == CLOVIS_LAYOUT_PLAIN &&
	    (r->fr_flags & CLOVIS_FDMI_F_TIER))
		o->o_tier = (int)r->fr_tier;
}

/* Fold the records of b into v[*n] (records at or below their server's
 * cursor skipped); *folded: how many were folded. */
static int batch_fold(struct attridx *a, struct clovis_fdmi_batch *b,
		      struct ax_obj *v, uint32_t *n, uint64_t *folded)
{
	uint32_t nr = clovis_fdmi_batch_nr(b);
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		struct clovis_fdmi_rec r;
		struct ax_cursor *cu = NULL;

		rc = clovis_fdmi_batch_rec(b, i, &r);
		if (rc == 0)
			rc = cursor_of(a, r.fr_server, &cu);
		if (rc != 0 || r.fr_seq <= cu->cu_seq)
			continue; /* folded in before a crash */
		if (r.fr_seq > cu->cu_batch)
			cu->cu_batch = r.fr_seq;
		if (r.fr_type != CLOVIS_ET_OBJ)
			continue;
		rec_fold(obj_slot(v, n, &r.fr_id), &r);
		(*folded)++;
	}
	return rc;
}

/* Read the reverse entries of v[n] (o_has_rev, o_old). */
static int revs_load(struct attridx *a, struct ax_obj *v, uint32_t n)
{
	void **kp = calloc(n, sizeof *kp), **vp = calloc(n, sizeof *vp);
	size_t *kl = calloc(n, sizeof *kl), *vl = calloc(n, sizeof *vl);
	int32_t *rcs = calloc(n, sizeof *rcs);
	int rc = 0;

	if (kp == NULL || vp == NULL || kl == NULL || vl == NULL ||
	    rcs == NULL) {
		rc = err_set(-ENOMEM, "attridx: %u reverse entries", n);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		key_rev(v[i].o_rkey, &v[i].o_id);
		kp[i] = v[i].o_rkey;
		kl[i] = ATTRIDX_REV_LEN;
	}
	rc = idx_run(&a->a_idx, CLOVIS_IC_GET, kp, kl, vp, vl, n, rcs, 0);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		if (rcs[i] == 0 && vl[i] == ATTRIDX_REV_VAL_LEN) {
			v[i].o_has_rev = true;
			memcpy(v[i].o_old, vp[i], ATTRIDX_REV_VAL_LEN);
		} else if (rcs[i] != 0 && rcs[i] != -ENOENT) {
			rc = err_set(rcs[i], "attridx: reverse entry: %s",
				     clovis_strerror(rcs[i]));
		}
	}
	for (uint32_t i = 0; vp != NULL && i < n; i++)
		free(vp[i]);
out:
	free(kp);
	free(vp);
	free(kl);
	free(vl);
	free(rcs);
	return rc;
}

/* Work out o's new entries (o_new): layout and tier from the records,
 * else from its old entry, else from the object itself. */
static void obj_resolve(struct attridx *a, struct ax_obj *o)
{
	uint32_t layout = o->o_layout, tier = ATTRIDX_TIER_NONE, pl, pt;
	uint64_t psize;
	bool old = o->o_has_rev && !o->o_created; /* not an earlier one's */

	if (layout == 0 && old)
		layout = o->o_old[ATTRIDX_FWD_LEN];
	if (layout == CLOVIS_LAYOUT_PLAIN && o->o_tier >= 0)
		tier = (uint32_t)o->o_tier;
	else if (layout != 0 && layout != CLOVIS_LAYOUT_COMPOSITE && old &&
		 o->o_old[ATTRIDX_FWD_TIER_AT] != ATTRIDX_TIER_NONE)
		tier = o->o_old[ATTRIDX_FWD_TIER_AT]; /* fixed at create */
	else if (obj_probe(a, &o->o_id, &o->o_cont, &pl, &pt, &psize) == 0) {
		layout = pl;
		tier = pt;
	} else if (old) {
		tier = o->o_old[ATTRIDX_FWD_TIER_AT]; /* gone meanwhile: its delete follows */
	}
	attridx_key_fwd(o->o_new, &o->o_cont, tier, o->o_size, &o->o_id);
	o->o_new[ATTRIDX_FWD_LEN] = (uint8_t)layout;
}

/* The updates of one batch: the keys to delete, the records to put. */
struct ax_plan {
	void **pl_dk;
	size_t *pl_dl;
	uint32_t pl_nd;
	void **pl_pk, **pl_pv;
	size_t *pl_pkl, *pl_pvl;
	uint32_t pl_np;
	char (*pl_ck)[AX_META_MAX + 1]; /* the cursors' keys and values */
	char (*pl_cv)[24];
};

static void plan_free(struct ax_plan *p)
{
	free(p->pl_dk);
	free(p->pl_dl);
	free(p->pl_pk);
	free(p->pl_pv);
	free(p->pl_pkl);
	free(p->pl_pvl);
	free(p->pl_ck);
	free(p->pl_cv);
}

/* Room for the updates of n objects and nr_cur cursors. */
static int plan_init(struct ax_plan *p, uint32_t n, uint32_t nr_cur)
{
	uint32_t cap = 2 * n + nr_cur + 1;

	memset(p, 0, sizeof *p);
	p->pl_dk = calloc(cap, sizeof *p->pl_dk);
	p->pl_dl = calloc(cap, sizeof *p->pl_dl);
	p->pl_pk = calloc(cap, sizeof *p->pl_pk);
	p->pl_pv = calloc(cap, sizeof *p->pl_pv);
	p->pl_pkl = calloc(cap, sizeof *p->pl_pkl);
	p->pl_pvl = calloc(cap, sizeof *p->pl_pvl);
	p->pl_ck = calloc(nr_cur + 1, sizeof *p->pl_ck);
	p->pl_cv = calloc(nr_cur + 1, sizeof *p->pl_cv);
	if (p->pl_dk && p->pl_dl && p->pl_pk && p->pl_pv && p->pl_pkl &&
	    p->pl_pvl && p->pl_ck && p->pl_cv)
		return 0;
	plan_free(p);
	return err_set(-ENOMEM, "attridx: a batch of %u objects", n);
}

static void plan_del(struct ax_plan *p, void *key, size_t len)
{
	p->pl_dk[p->pl_nd] = key;
	p->pl_dl[p->pl_nd++] = len;
}

static void plan_put(struct ax_plan *p, void *key, size_t klen, void *val,
		     size_t vlen)
{
	p->pl_pk[p->pl_np] = key;
	p->pl_pkl[p->pl_np] = klen;
	p->pl_pv[p->pl_np] = val;
	p->pl_pvl[p->pl_np++] = vlen;
}

/* Plan o's updates: its stale forward key (and its reverse entry when it
 * is deleted) go, its new entries come; true when they change. */
static bool plan_obj(struct ax_plan *p, struct ax_obj *o)
{
	bool moved = o->o_has_rev &&
		     memcmp(o->o_old, o->o_new, ATTRIDX_FWD_LEN) != 0;

	if (o->o_deleted) {
		if (!o->o_has_rev)
			return false;
		plan_del(p, o->o_old, ATTRIDX_FWD_LEN);
		plan_del(p, o->o_rkey, ATTRIDX_REV_LEN);
		return true;
	}
	if (moved)
		plan_del(p, o->o_old, ATTRIDX_FWD_LEN);
	if (o->o_has_rev && memcmp(o->o_old, o->o_new,
				   ATTRIDX_REV_VAL_LEN) == 0)
		return false;
	plan_put(p, o->o_new, ATTRIDX_FWD_LEN, NULL, 0);
	plan_put(p, o->o_rkey, ATTRIDX_REV_LEN, o->o_new,
		 ATTRIDX_REV_VAL_LEN);
	return true;
}

/* Plan the cursors the batch moved. */
static void plan_cursors(struct attridx *a, struct ax_plan *p)
{
	for (uint32_t c = 0; c < a->a_nr_cur; c++) {
		struct ax_cursor *cu = &a->a_cur[c];
		size_t kl, vl;

		if (cu->cu_batch == cu->cu_seq)
			continue;
		kl = (size_t)snprintf(p->pl_ck[c], sizeof p->pl_ck[c],
				      "mcursor:%s", cu->cu_server);
		vl = (size_t)snprintf(p->pl_cv[c], sizeof p->pl_cv[c],
				      "%" PRIu64, cu->cu_batch);
		plan_put(p, p->pl_ck[c], kl, p->pl_cv[c], vl);
	}
}

/* The index updates of v[n], then the cursors: DEL (STABLE), then PUT
 * (STABLE).  *changed: objects whose entries changed. */
static int batch_apply(struct attridx *a, struct ax_obj *v, uint32_t n,
		       uint64_t *changed)
{
	struct ax_plan p;
	int rc = plan_init(&p, n, a->a_nr_cur);

	if (rc != 0)
		return rc;
	if (n > 0)
		rc = revs_load(a, v, n);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		if (!v[i].o_deleted)
			obj_resolve(a, &v[i]);
		*changed += plan_obj(&p, &v[i]);
	}
	if (rc == 0) {
		plan_cursors(a, &p);
		rc = idx_del(&a->a_idx, p.pl_dk, p.pl_dl, p.pl_nd);
	}
	if (rc == 0)
		rc = idx_put(&a->a_idx, p.pl_pk, p.pl_pkl, p.pl_pv, p.pl_pvl,
			     p.pl_np);
	plan_free(&p);
	return rc;
}

/* The batch's cursors are durable (ok), or forgotten. */
static void cursors_end(struct attridx *a, bool ok)
{
	for (uint32_t c = 0; c < a->a_nr_cur; c++) {
		if (ok)
			a->a_cur[c].cu_seq = a->a_cur[c].cu_batch;
		else
			a->a_cur[c].cu_batch = a->a_cur[c].cu_seq;
	}
}

/* ----------------------------------------------------------- rebuild */

struct clear_ctx {
	struct attridx *cx_a;
	void *cx_keys[AX_CHUNK];
	size_t cx_len[AX_CHUNK];
	uint32_t cx_n;
};

static int clear_flush(struct clear_ctx *cx)
{
	int rc = idx_del(&cx->cx_a->a_idx, cx->cx_keys, cx->cx_len, cx->cx_n);

	for (uint32_t i = 0; i < cx->cx_n; i++)
		free(cx->cx_keys[i]);
	cx->cx_n = 0;
	return rc;
}

static int clear_one(void *arg, const void *key, size_t klen,
		     const void *val, size_t vlen)
{
	struct clear_ctx *cx = arg;

	(void)val;
	(void)vlen;
	if (klen > 0 && *(const uint8_t *)key == ATTRIDX_META)
		return 0;
	cx->cx_keys[cx->cx_n] = malloc(klen);
	if (cx->cx_keys[cx->cx_n] == NULL)
		return err_set(-ENOMEM, "attridx: clear");
	memcpy(cx->cx_keys[cx->cx_n], key, klen);
	cx->cx_len[cx->cx_n++] = klen;
	return cx->cx_n == AX_CHUNK ? clear_flush(cx) : 0;
}

/* Delete every forward and reverse entry. */
static int index_clear(struct attridx *a)
{
	struct clear_ctx cx = {.cx_a = a};
	int rc = idx_walk(&a->a_idx, NULL, 0, clear_one, &cx);
	int rc2 = clear_flush(&cx);

	return rc != 0 ? rc : rc2;
}

/* Entries of up to AX_CHUNK objects, PUT together. */
struct scan_ctx {
	struct attridx *sx_a;
	uint8_t sx_val[AX_CHUNK][ATTRIDX_REV_VAL_LEN];
	uint8_t sx_rkey[AX_CHUNK][ATTRIDX_REV_LEN];
	void *sx_k[2 * AX_CHUNK], *sx_v[2 * AX_CHUNK];
	size_t sx_kl[2 * AX_CHUNK], sx_vl[2 * AX_CHUNK];
	uint32_t sx_n;
	uint64_t sx_total;
};

static int scan_flush(struct scan_ctx *sx)
{
	int rc = idx_put(&sx->sx_a->a_idx, sx->sx_k, sx->sx_kl, sx->sx_v,
			 sx->sx_vl, 2 * sx->sx_n);

	sx->sx_n = 0;
	return rc;
}

static int scan_obj(struct scan_ctx *sx, const struct clovis_id *id,
		    const struct clovis_id *cont)
{
	uint32_t layout, tier, i = sx->sx_n;
	uint64_t size;

	if (obj_probe(sx->sx_a, id, cont, &layout, &tier, &size) != 0)
		return 0; /* deleted meanwhile */
	attridx_key_fwd(sx->sx_val[i], cont, tier, size, id);
	sx->sx_val[i][ATTRIDX_FWD_LEN] = (uint8_t)layout;
	key_rev(sx->sx_rkey[i], id);
	sx->sx_k[2 * i] = sx->sx_val[i];
	sx->sx_kl[2 * i] = ATTRIDX_FWD_LEN;
	sx->sx_v[2 * i] = NULL;
	sx->sx_vl[2 * i] = 0;
	sx->sx_k[2 * i + 1] = sx->sx_rkey[i];
	sx->sx_kl[2 * i + 1] = ATTRIDX_REV_LEN;
	sx->sx_v[2 * i + 1] = sx->sx_val[i];
	sx->sx_vl[2 * i + 1] = ATTRIDX_REV_VAL_LEN;
	sx->sx_total++;
	return ++sx->sx_n == AX_CHUNK ? scan_flush(sx) : 0;
}

/* Index every object of container cont. */
static int scan_container(struct scan_ctx *sx, const struct clovis_id *cont)
{
	struct clovis_id ids[AX_CHUNK], after;
	struct clovis_container c;
	struct clovis_realm *realm;
	bool first = true;
	uint32_t n;
	int rc;

	if (plugin_realm_of(sx->sx_a->a_cl, cont, &c, &realm) != 0)
		return 0; /* deleted meanwhile */
	do {
		n = AX_CHUNK;
		rc = clovis_entity_list(sx->sx_a->a_cl, realm, CLOVIS_ET_OBJ,
					first ? NULL : &after, ids, &n);
		first = false;
		for (uint32_t i = 0; rc == 0 && i < n; i++) {
			after = ids[i];
			rc = scan_obj(sx, &ids[i], cont);
		}
	} while (rc == 0 && n > 0);
	return rc == -ENOENT ? 0 : rc;
}

/* Index every object of every container; *nr: how many. */
static int index_scan(struct attridx *a, uint64_t *nr)
{
	struct scan_ctx *sx = calloc(1, sizeof *sx);
	struct clovis_id cids[AX_CHUNK], after;
	bool first = true;
	uint32_t n;
	int rc;

	if (sx == NULL)
		return err_set(-ENOMEM, "attridx: scan");
	sx->sx_a = a;
	do {
		n = AX_CHUNK;
		rc = clovis_entity_list(a->a_cl, NULL, CLOVIS_ET_CONTAINER,
					first ? NULL : &after, cids, &n);
		first = false;
		for (uint32_t i = 0; rc == 0 && i < n; i++) {
			after = cids[i];
			rc = scan_container(sx, &cids[i]);
		}
	} while (rc == 0 && n > 0);
	if (rc == 0)
		rc = scan_flush(sx);
	*nr = sx->sx_total;
	free(sx);
	return rc;
}

/* Rebuild the index from a scan of the store (reset: the consumer was
 * LAGGING).  The marker makes a rebuild a crash cut short run again. */
static int index_rebuild(struct attridx *a, bool reset, uint64_t *nr)
{
	void *mk[1] = {(void *)ax_rebuild_key}, *mv[1] = {"1"};
	size_t mkl[1] = {sizeof ax_rebuild_key - 1}, mvl[1] = {1};
	int rc = idx_put(&a->a_idx, mk, mkl, mv, mvl, 1);

	if (rc == 0 && reset)
		rc = clovis_fdmi_reset(a->a_cl, a->a_consumer);
	if (rc == 0)
		rc = index_clear(a);
	if (rc == 0)
		rc = index_scan(a, nr);
	if (rc == 0)
		rc = idx_del(&a->a_idx, mk, mkl, 1);
	return rc;
}

/* Is the rebuild marker there? */
static int rebuild_pending(struct attridx *a, bool *yes)
{
	void *kp[1] = {(void *)ax_rebuild_key}, *vp[1] = {NULL};
	size_t kl[1] = {sizeof ax_rebuild_key - 1}, vl[1] = {0};
	int32_t rcs[1];
	int rc = idx_run(&a->a_idx, CLOVIS_IC_GET, kp, kl, vp, vl, 1, rcs, 0);

	if (rc != 0)
		return rc;
	*yes = rcs[0] == 0;
	free(vp[0]);
	return 0;
}

/* ------------------------------------------------------------ rounds */

static int rebuild_noted(struct attridx *a, bool reset, const char *why,
			 struct attridx_round_stats *st)
{
	uint64_t nr = 0;
	int rc;

	fprintf(a->a_out, "attridx: %s: rebuilding the index from a scan of "
		"the store\n", why);
	rc = index_rebuild(a, reset, &nr);
	if (rc == 0)
		fprintf(a->a_out, "attridx: rebuilt: %" PRIu64 " objects "
			"indexed\n", nr);
	if (st != NULL) {
		st->ar_rebuild = true;
		st->ar_rebuilt += nr;
	}
	return rc;
}

/* Fold batch b into the index, then ack it. */
static int batch_do(struct attridx *a, struct clovis_fdmi_batch *b,
		    struct attridx_round_stats *st)
{
	uint32_t nr = clovis_fdmi_batch_nr(b), n = 0;
	struct ax_obj *v = calloc(nr > 0 ? nr : 1, sizeof *v);
	int rc;

	if (v == NULL)
		return err_set(-ENOMEM, "attridx: a batch of %u records", nr);
	rc = batch_fold(a, b, v, &n, &st->ar_records);
	if (rc == 0)
		rc = batch_apply(a, v, n, &st->ar_objects);
	cursors_end(a, rc == 0);
	/* every batch is acked, an empty one too: it covers the records
	 * the filter skipped (our own index records among them) */
	if (rc == 0 && !a->a_no_ack)
		rc = clovis_fdmi_ack(a->a_cl, a->a_consumer, b);
	free(v);
	return rc;
}

int attridx_round(struct attridx *a, struct attridx_round_stats *st)
{
	int rc = 0;

	memset(st, 0, sizeof *st);
	for (uint32_t lagged = 0; rc == 0;) {
		struct clovis_fdmi_batch *b = NULL;
		uint32_t nr;

		rc = clovis_fdmi_next(a->a_cl, a->a_consumer, AX_BATCH, &b);
		if (rc == 0) {
			nr = clovis_fdmi_batch_nr(b);
			rc = batch_do(a, b, st);
			clovis_fdmi_batch_free(b);
			if (rc == 0 && nr == 0)
				break;
		}
		if (rc == -ESTALE && lagged++ < 2) {
			char why[128];

			snprintf(why, sizeof why, "consumer %s is LAGGING "
				 "(records dropped past its bounds)",
				 a->a_consumer);
			rc = rebuild_noted(a, true, why, st);
		}
	}
	return rc;
}

/* Was consumer name registered (before we register it)? */
static int consumer_known(struct attridx *a, bool *known)
{
	struct clovis_fdmi_sub subs[64];
	uint32_t nr = 0;
	int rc = clovis_fdmi_list(a->a_cl, subs, 64, &nr);

	*known = false;
	for (uint32_t i = 0; rc == 0 && i < nr && i < 64; i++)
		if (strcmp(subs[i].fs_name, a->a_consumer) == 0)
			*known = true;
	return rc;
}

int attridx_open(const struct attridx_conf *c, struct attridx **out)
{
	const char *name = c->ac_consumer ? c->ac_consumer : ATTRIDX_CONSUMER;
	struct attridx *a;
	bool fresh = false, known = false, marked = false;
	char idt[CLOVIS_ID_STR_LEN];
	int rc;

	if (strlen(name) > CLOVIS_FDMI_NAME_MAX)
		return err_set(-EINVAL, "attridx: consumer name \"%s\" longer "
			       "than %u", name, CLOVIS_FDMI_NAME_MAX);
	a = calloc(1, sizeof *a);
	if (a == NULL)
		return err_set(-ENOMEM, "attridx_open");
	a->a_cl = c->ac_cl;
	a->a_no_ack = c->ac_no_ack;
	a->a_out = c->ac_out ? c->ac_out : stdout;
	snprintf(a->a_consumer, sizeof a->a_consumer, "%s", name);
	rc = idx_open(a->a_cl, &c->ac_index, &a->a_idx, CLOVIS_EO_OPEN);
	if (rc == -ENOENT) {
		fresh = true;
		rc = idx_open(a->a_cl, &c->ac_index, &a->a_idx,
			      CLOVIS_EO_CREATE);
	}
	if (rc != 0) {
		rc = err_set(rc, "attridx: index %s: %s",
			     clovis_id_format(&c->ac_index, idt),
			     clovis_errmsg());
		goto out_free;
	}
	rc = consumer_known(a, &known);
	if (rc == 0)
		rc = clovis_fdmi_sub(a->a_cl, a->a_consumer, ax_filter,
				     c->ac_max_bytes, 0, 0);
	if (rc == 0 && !fresh)
		rc = rebuild_pending(a, &marked);
	if (rc == 0 && (fresh || !known || marked))
		rc = rebuild_noted(a, false, fresh ? "a new index" : !known ?
				   "a new consumer" : "a rebuild did not end",
				   NULL);
	if (rc != 0)
		goto out_free;
	*out = a;
	return 0;
out_free:
	free(a);
	return rc;
}

void attridx_close(struct attridx *a)
{
	free(a);
}

/* ------------------------------------------------------------- query */

struct query_ctx {
	const struct attridx_query *qx_q;
	uint8_t qx_prefix[ATTRIDX_FWD_TIER_AT + 1]; /* 'f' container tier */
	size_t qx_plen;
	attridx_entry_fn qx_fn;
	void *qx_arg;
	int qx_rc;
};

static int query_one(void *arg, const void *key, size_t klen,
		     const void *val, size_t vlen)
{
	struct query_ctx *qx = arg;
	const struct attridx_query *q = qx->qx_q;
	struct attridx_entry e;

	(void)val;
	(void)vlen;
	if (klen < qx->qx_plen || memcmp(key, qx->qx_prefix, qx->qx_plen) != 0)
		return 1; /* past the prefix */
	if (!attridx_key_fwd_decode(key, klen, &e))
		return 0;
	if (q->aq_tier >= 0 && e.ae_tier != (uint32_t)q->aq_tier)
		return 0;
	if (e.ae_size < q->aq_size_min || e.ae_size > q->aq_size_max) {
		/* past the range within one container and tier: done */
		if (q->aq_container_set && q->aq_tier >= 0 &&
		    e.ae_size > q->aq_size_max)
			return 1;
		return 0;
	}
	qx->qx_rc = qx->qx_fn(qx->qx_arg, &e);
	return qx->qx_rc != 0 ? 1 : 0;
}

int attridx_query(struct clovis *cl, const struct clovis_id *index,
		  const struct attridx_query *q, attridx_entry_fn fn,
		  void *arg)
{
	struct query_ctx qx = {.qx_q = q, .qx_fn = fn, .qx_arg = arg};
	uint8_t start[ATTRIDX_FWD_LEN];
	struct clovis_idx ix;
	char idt[CLOVIS_ID_STR_LEN];
	size_t slen = 1;
	int rc = idx_open(cl, index, &ix, CLOVIS_EO_OPEN);

	if (rc != 0)
		return err_set(rc, "index %s: %s", clovis_id_format(index, idt),
			       rc == -ENOENT ? "no such index (run "
			       "strata-attridx on the store first)" :
			       clovis_errmsg());
	start[0] = ATTRIDX_FWD;
	if (q->aq_container_set) {
		id_put(start + 1, &q->aq_container);
		slen = ATTRIDX_FWD_TIER_AT;
		if (q->aq_tier >= 0) {
			start[ATTRIDX_FWD_TIER_AT] = (uint8_t)q->aq_tier;
			be64_put(start + ATTRIDX_FWD_TIER_AT + 1,
				 q->aq_size_min);
			slen = ATTRIDX_FWD_TIER_AT + 1 + 8;
		}
	}
	qx.qx_plen = slen < sizeof qx.qx_prefix ? slen : sizeof qx.qx_prefix;
	memcpy(qx.qx_prefix, start, qx.qx_plen);
	rc = idx_walk(&ix, start, slen, query_one, &qx);
	return rc != 0 ? rc : qx.qx_rc;
}
