/*
 * gateways/hdf5/h5map_walk.c — walking an import on the store: the walk
 * export and listing share (h5m_store_walk(), h5m_walk()), and removal
 * (h5m_remove(), and the import's clean-up through h5m_rm_tree()).
 *
 * Both walks go depth first from the root index in link-name order and
 * visit each index once, whatever links reach it (hard links, cycles): a
 * set of the ids seen, with the first path that reached each.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateways/hdf5/h5map_internal.h"

/* ------------------------------------------------------- the id set */

/* Open addressing over ids; each slot keeps the first path (malloc()ed). */
struct idset {
	struct clovis_id *is_ids;
	char **is_paths;
	size_t is_nr;
	size_t is_cap; /* a power of two; 0 before the first add */
};

static size_t id_hash(const struct clovis_id *id, size_t cap)
{
	uint64_t h = id->ci_hi * 0x9e3779b97f4a7c15ull ^ id->ci_lo;

	h ^= h >> 31;
	return (size_t)(h * 0xbf58476d1ce4e5b9ull) & (cap - 1);
}

/* The slot of id: where it is, or the empty slot it would take. */
static size_t idset_slot(const struct idset *s, const struct clovis_id *id)
{
	size_t i = id_hash(id, s->is_cap);

	while (s->is_paths[i] != NULL && clovis_id_cmp(&s->is_ids[i], id) != 0)
		i = (i + 1) & (s->is_cap - 1);
	return i;
}

/* The first path of id, or NULL when not seen. */
static const char *idset_find(const struct idset *s, const struct clovis_id *id)
{
	return s->is_cap == 0 ? NULL : s->is_paths[idset_slot(s, id)];
}

static int idset_grow(struct idset *s)
{
	struct idset n = { NULL, NULL, 0, s->is_cap ? s->is_cap * 2 : 64 };
	size_t i;

	n.is_ids = calloc(n.is_cap, sizeof *n.is_ids);
	n.is_paths = calloc(n.is_cap, sizeof *n.is_paths);
	if (n.is_ids == NULL || n.is_paths == NULL) {
		free(n.is_ids);
		free(n.is_paths);
		return h5m_err(-ENOMEM, "out of memory (ids seen)");
	}
	for (i = 0; i < s->is_cap; i++) {
		size_t j;

		if (s->is_paths[i] == NULL)
			continue;
		j = idset_slot(&n, &s->is_ids[i]);
		n.is_ids[j] = s->is_ids[i];
		n.is_paths[j] = s->is_paths[i];
	}
	n.is_nr = s->is_nr;
	free(s->is_ids);
	free(s->is_paths);
	*s = n;
	return 0;
}

static int idset_add(struct idset *s, const struct clovis_id *id,
		     const char *path)
{
	size_t i;
	int rc = 0;

	if (2 * (s->is_nr + 1) > s->is_cap)
		rc = idset_grow(s);
	if (rc != 0)
		return rc;
	i = idset_slot(s, id);
	s->is_paths[i] = strdup(path);
	if (s->is_paths[i] == NULL)
		return h5m_err(-ENOMEM, "out of memory (ids seen)");
	s->is_ids[i] = *id;
	s->is_nr++;
	return 0;
}

static void idset_free(struct idset *s)
{
	size_t i;

	for (i = 0; i < s->is_cap; i++)
		free(s->is_paths[i]);
	free(s->is_ids);
	free(s->is_paths);
	memset(s, 0, sizeof *s);
}

/* ------------------------------------------------- the export walk */

struct walk {
	struct h5m_store *w_s;
	const struct h5m_visit *w_v;
	void *w_arg;
	struct idset w_seen;
	char w_path[H5M_PATH_MAX];
	uint32_t w_depth; /* groups on the path, the root included */
};

static int walk_obj(struct walk *w, const struct clovis_id *id, uint8_t kind,
		    const char *name);

/* Append "/name" to the path (the root's children: "/name"); returns the
 * old length to restore, or -ENAMETOOLONG. */
static int path_push(char *path, const char *name, size_t nlen)
{
	size_t len = strlen(path), sep = len > 1 ? 1 : 0;

	if (len + sep + nlen + 1 > H5M_PATH_MAX)
		return h5m_err(-ENAMETOOLONG, "%s/%.*s: path longer than %u "
			       "bytes", path, (int)nlen, name, H5M_PATH_MAX);
	if (sep)
		path[len] = '/';
	memcpy(path + len + sep, name, nlen);
	path[len + sep + nlen] = '\0';
	return (int)len;
}

/* An attribute record of the object being walked. */
static int walk_attr(void *arg, const uint8_t *k, size_t klen,
		     const uint8_t *v, size_t vlen)
{
	struct walk *w = arg;
	char name[CLOVIS_KEY_MAX + 1], what[H5M_PATH_MAX + 600];
	struct h5m_attr a;
	int rc;

	memcpy(name, k + 1, klen - 1);
	name[klen - 1] = '\0';
	snprintf(what, sizeof what, "%s attribute '%s'", w->w_path, name);
	rc = h5m_attr_decode(v, vlen, &a, what);
	if (rc == 0 && w->w_v->v_attr != NULL)
		rc = w->w_v->v_attr(w->w_arg, w->w_path, name, &a);
	return rc;
}

/* One link of the group being walked: a hard link to a group or dataset
 * (walked the first time its target is seen), or a soft link. */
static int walk_link_at(struct walk *w, const char *name, const uint8_t *v,
			size_t vlen)
{
	struct h5m_rd r = { v, vlen, 0 };
	uint8_t kind = h5m_get_u8(&r), tkind;
	struct clovis_id id;
	const char *first;
	char *target;
	int rc;

	if (kind == H5M_SOFT) {
		target = strndup((const char *)r.hr_p, r.hr_left);
		if (target == NULL)
			return h5m_err(-ENOMEM, "%s: out of memory", w->w_path);
		rc = w->w_v->v_soft ? w->w_v->v_soft(w->w_arg, w->w_path, name,
						     target) : 0;
		free(target);
		return rc;
	}
	tkind = h5m_get_u8(&r);
	h5m_get_id(&r, &id);
	if (kind != H5M_HARD || r.hr_bad || r.hr_left != 0 ||
	    (tkind != H5M_GROUP && tkind != H5M_DATASET))
		return h5m_err(-CLOVIS_ECORRUPT, "%s: link record is damaged "
			       "(%zu bytes)", w->w_path, vlen);
	first = idset_find(&w->w_seen, &id);
	if (first != NULL)
		return w->w_v->v_hard ? w->w_v->v_hard(w->w_arg, w->w_path,
						       name, first) : 0;
	rc = idset_add(&w->w_seen, &id, w->w_path);
	if (rc == 0)
		rc = walk_obj(w, &id, tkind, name);
	return rc;
}

static int walk_link(void *arg, const uint8_t *k, size_t klen,
		     const uint8_t *v, size_t vlen)
{
	struct walk *w = arg;
	char name[CLOVIS_KEY_MAX + 1];
	int old, rc;

	memcpy(name, k + 1, klen - 1);
	name[klen - 1] = '\0';
	old = path_push(w->w_path, name, klen - 1);
	if (old < 0)
		return old;
	rc = walk_link_at(w, name, v, vlen);
	w->w_path[old] = '\0';
	return rc;
}

/* Open index id and read its header into *h (value kept in *v). */
static int obj_head(struct walk *w, const struct clovis_id *id,
		    struct clovis_idx *ix, void **v, struct h5m_hdr *h)
{
	char what[H5M_PATH_MAX + 32];
	size_t vlen;
	int rc;

	snprintf(what, sizeof what, "%s (index)", w->w_path);
	rc = h5m_idx_open(w->w_s, id, ix, what);
	if (rc == 0)
		rc = h5m_idx_get(ix, "h", 1, v, &vlen, what);
	if (rc == 0)
		rc = h5m_hdr_decode(*v, vlen, h, w->w_path);
	if (rc == -ENOENT)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: its index or header is "
			       "missing", w->w_path);
	return rc;
}

/* Walk the group or dataset of index id at w_path. */
static int walk_obj(struct walk *w, const struct clovis_id *id, uint8_t kind,
		    const char *name)
{
	const struct h5m_visit *vi = w->w_v;
	struct clovis_idx ix;
	struct h5m_hdr h;
	uint32_t attrs = 0, links = 0;
	void *v = NULL;
	int rc;

	if (kind == H5M_GROUP && w->w_depth + 1 > H5M_DEPTH_MAX)
		return h5m_err(-CLOVIS_ECORRUPT, "groups nested deeper than "
			       "%u: %s", H5M_DEPTH_MAX, w->w_path);
	if (kind == H5M_GROUP)
		w->w_depth++;
	rc = obj_head(w, id, &ix, &v, &h);
	if (rc == 0 && h.hh_kind != kind)
		rc = h5m_err(-CLOVIS_ECORRUPT, "%s: its link says %s, its "
			     "header %s", w->w_path, kind == H5M_GROUP ?
			     "group" : "dataset", h.hh_kind == H5M_GROUP ?
			     "group" : "dataset");
	if (rc == 0)
		rc = h5m_idx_count(&ix, H5M_KEY_ATTR, &attrs, w->w_path);
	if (rc == 0 && kind == H5M_GROUP)
		rc = h5m_idx_count(&ix, H5M_KEY_LINK, &links, w->w_path);
	if (rc == 0 && kind == H5M_GROUP && vi->v_group)
		rc = vi->v_group(w->w_arg, w->w_path, name, &ix, &h, attrs,
				 links);
	if (rc == 0 && kind == H5M_DATASET && vi->v_dataset)
		rc = vi->v_dataset(w->w_arg, w->w_path, name, &ix, &h, attrs,
				   w->w_s);
	if (rc == 0)
		rc = h5m_idx_scan(&ix, H5M_KEY_ATTR, walk_attr, w, w->w_path);
	if (rc == 0 && kind == H5M_GROUP)
		rc = h5m_idx_scan(&ix, H5M_KEY_LINK, walk_link, w, w->w_path);
	if (rc == 0 && kind == H5M_GROUP && vi->v_group_end)
		rc = vi->v_group_end(w->w_arg, w->w_path);
	if (rc == 0 && kind == H5M_DATASET && vi->v_dataset_end)
		rc = vi->v_dataset_end(w->w_arg, w->w_path);
	free(v);
	if (kind == H5M_GROUP)
		w->w_depth--;
	return rc;
}

int h5m_store_walk(struct h5m_store *s, const struct h5m_cat *rec,
		   const struct h5m_visit *v, void *arg)
{
	struct walk w;
	int rc;

	memset(&w, 0, sizeof w);
	w.w_s = s;
	w.w_v = v;
	w.w_arg = arg;
	strcpy(w.w_path, "/");
	rc = idset_add(&w.w_seen, &rec->hc_root, "/");
	if (rc == 0)
		rc = walk_obj(&w, &rec->hc_root, H5M_GROUP, NULL);
	idset_free(&w.w_seen);
	return rc;
}

/* ------------------------------------------------- h5m_walk (listing) */

struct list_walk {
	h5m_entry_fn lw_fn;
	void *lw_arg;
};

static int lw_group(void *arg, const char *path, const char *name,
		    struct clovis_idx *ix, const struct h5m_hdr *h,
		    uint32_t attrs, uint32_t links)
{
	struct list_walk *lw = arg;
	struct h5m_entry e;

	memset(&e, 0, sizeof e);
	e.he_kind = H5M_GROUP;
	e.he_path = path;
	e.he_idx = ix->in_entity.en_id;
	e.he_attrs = attrs;
	e.he_links = links;
	return lw->lw_fn(lw->lw_arg, &e);
}

/* Count the chunks set in a dataset's map. */
static int map_count(struct clovis_idx *ix, const struct h5m_hdr *h,
		     uint64_t *nr, const char *path)
{
	void *v = NULL;
	size_t vlen = 0, i;
	int rc;

	*nr = 0;
	rc = h5m_idx_get(ix, "m", 1, &v, &vlen, path);
	if (rc == -ENOENT)
		return 0;
	for (i = 0; rc == 0 && i < vlen; i++)
		*nr += (uint64_t)__builtin_popcount(((uint8_t *)v)[i]);
	free(v);
	return rc;
}

static int lw_dataset(void *arg, const char *path, const char *name,
		      struct clovis_idx *ix, const struct h5m_hdr *h,
		      uint32_t attrs, struct h5m_store *s)
{
	static const char *const layouts[] = { "compact", "contiguous",
					       "chunked" };
	struct list_walk *lw = arg;
	char filters[256];
	struct h5m_entry e;
	int rc = 0;

	memset(&e, 0, sizeof e);
	e.he_kind = H5M_DATASET;
	e.he_path = path;
	e.he_idx = ix->in_entity.en_id;
	e.he_obj = h->hh_obj;
	e.he_attrs = attrs;
	e.he_layout = layouts[h->hh_layout];
	e.he_rank = h->hh_rank;
	memcpy(e.he_chunk, h->hh_chunk, sizeof e.he_chunk);
	e.he_block_shift = h->hh_block_shift;
	e.he_slot_blocks = h->hh_slot_blocks;
	e.he_chunk_bytes = h->hh_chunk_bytes;
	e.he_chunks = h->hh_chunks;
	e.he_bytes = h->hh_bytes;
	e.he_vlen = h->hh_vlen != 0;
	e.he_filters = h5m_filters_text(h, filters, sizeof filters);
	if (h->hh_layout == H5M_L_CHUNKED)
		rc = map_count(ix, h, &e.he_chunks_stored, path);
	if (rc == 0 && e.he_chunks_stored != h->hh_chunks_stored)
		rc = h5m_err(-CLOVIS_ECORRUPT, "%s: its chunk map holds %llu "
			     "chunks, its header says %llu", path,
			     (unsigned long long)e.he_chunks_stored,
			     (unsigned long long)h->hh_chunks_stored);
	return rc == 0 ? lw->lw_fn(lw->lw_arg, &e) : rc;
}

/* A link's entry: kind H5M_SOFT (target: its target path) or H5M_HARD
 * (target: the first path of the object). */
static int lw_link(void *arg, int kind, const char *path,
		   const char *target)
{
	struct list_walk *lw = arg;
	struct h5m_entry e;

	memset(&e, 0, sizeof e);
	e.he_kind = kind;
	e.he_path = path;
	e.he_target = target;
	return lw->lw_fn(lw->lw_arg, &e);
}

static int lw_soft(void *arg, const char *path, const char *name,
		   const char *target)
{
	return lw_link(arg, H5M_SOFT, path, target);
}

static int lw_hard(void *arg, const char *path, const char *name,
		   const char *first)
{
	return lw_link(arg, H5M_HARD, path, first);
}

int h5m_walk(struct clovis *cl, const struct h5m_target *t, h5m_entry_fn fn,
	     void *arg)
{
	static const struct h5m_visit v = {
		.v_group = lw_group, .v_dataset = lw_dataset,
		.v_soft = lw_soft, .v_hard = lw_hard,
	};
	struct list_walk lw = { fn, arg };
	struct h5m_target tt = *t;
	struct h5m_store s;
	struct clovis_idx cat;
	struct h5m_cat rec;
	int rc;

	h5m_err(0, "%s", "");
	rc = h5m_cat_get_complete(cl, &tt, &s, &cat, &rec);
	if (rc == 0)
		rc = h5m_store_walk(&s, &rec, &v, &lw);
	return rc;
}

/* ------------------------------------------------------------ remove */

/*
 * Remove is a loop over a stack of the indices to remove, not a recursion:
 * it has no depth limit, so it removes whatever an import made (and an
 * interrupted one).  An index is entered once (the ids seen): a dataset's
 * object and index go at once; a group pushes the targets of its hard
 * links and goes itself once they are gone (post-order: a crash midway
 * leaves the rest reachable from what is left).  What rm cannot judge is
 * left, with every group above it, so it stays reachable and the import's
 * record stays: a damaged header or link record, or an id that is not an
 * entity of the container made as the import makes ids (a record changed
 * on the store could name anything: rm never follows it).
 */
struct rm_item {
	struct clovis_id ri_id;
	size_t ri_parent;   /* the item that pushed it (the root: itself) */
	uint8_t ri_kind;    /* the kind its link says: H5M_GROUP, DATASET */
	uint8_t ri_entered; /* its links pushed: remove it when on top again */
	uint8_t ri_keep;    /* something below it is left: so is it */
};

struct rm {
	struct h5m_store *r_s;
	struct idset r_seen;
	struct h5m_stats *r_st;
	struct rm_item *r_stack;
	size_t r_nr;
	size_t r_cap;
	size_t r_top;       /* the item being entered (rm_link's parent) */
	uint32_t r_left;    /* entities left (and the groups above them) */
	char r_first[400];  /* the first one left, for the message */
};

/* Note something left: counted, the first one kept for the message, the
 * group above it kept. */
static void rm_leave(struct rm *r, size_t item, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void rm_leave(struct rm *r, size_t item, const char *fmt, ...)
{
	va_list ap;

	if (r->r_left++ == 0) {
		va_start(ap, fmt);
		vsnprintf(r->r_first, sizeof r->r_first, fmt, ap);
		va_end(ap);
	}
	r->r_stack[item].ri_keep = 1;
}

/* Is id one of s's container's entities of type type?  1 yes; 0 gone (no
 * entity of that type at all: already removed, or never made by an
 * interrupted import); -ENOTUNIQ when it is not the container's or not
 * an id the import makes (h5m_id_random()): not ours to remove; or the
 * store's code. */
static int rm_ours(struct h5m_store *s, enum clovis_entity_type type,
		   const struct clovis_id *id)
{
	struct clovis_id after = *id, got = { 0, 0 };
	struct clovis_entity *e;
	struct clovis_idx ix;
	struct clovis_obj o;
	uint32_t nr = 1;
	int rc;

	if ((id->ci_hi >> 62) != 1)
		return -ENOTUNIQ;
	if (after.ci_lo-- == 0)
		after.ci_hi--;
	rc = clovis_entity_list(s->hs_cl, s->hs_realm, type, &after, &got,
				&nr);
	if (rc < 0)
		return h5m_err_clovis(rc, "list the container's entities");
	if (nr == 1 && clovis_id_cmp(&got, id) == 0)
		return 1;
	/* not in the container: gone, or another container's */
	rc = type == CLOVIS_ET_IDX ? clovis_idx_init(&ix, s->hs_realm, id)
				   : clovis_obj_init(&o, s->hs_realm, id, NULL);
	e = type == CLOVIS_ET_IDX ? &ix.in_entity : &o.ob_entity;
	if (rc == 0)
		rc = h5m_entity_run(e, CLOVIS_EO_OPEN, "open");
	return rc == -ENOENT ? 0 : rc == 0 ? -ENOTUNIQ : rc;
}

static int rm_push(struct rm *r, const struct clovis_id *id, uint8_t kind,
		   size_t parent)
{
	struct rm_item *it;
	int rc;

	if (idset_find(&r->r_seen, id) != NULL)
		return 0;
	rc = idset_add(&r->r_seen, id, "");
	if (rc != 0)
		return rc;
	if (r->r_nr == r->r_cap) {
		size_t cap = r->r_cap ? 2 * r->r_cap : 64;

		it = realloc(r->r_stack, cap * sizeof *it);
		if (it == NULL)
			return h5m_err(-ENOMEM, "out of memory (indices to "
				       "remove)");
		r->r_stack = it;
		r->r_cap = cap;
	}
	it = &r->r_stack[r->r_nr++];
	memset(it, 0, sizeof *it);
	it->ri_id = *id;
	it->ri_kind = kind;
	it->ri_parent = parent;
	return 0;
}

/* A link record of the group being entered: push its hard target. */
static int rm_link(void *arg, const uint8_t *k, size_t klen,
		   const uint8_t *v, size_t vlen)
{
	struct rm *r = arg;
	struct rm_item *g = &r->r_stack[r->r_top];
	char gt[CLOVIS_ID_STR_LEN], it[CLOVIS_ID_STR_LEN];
	struct h5m_rd rd = { v, vlen, 0 };
	struct clovis_id id;
	uint8_t kind = h5m_get_u8(&rd), tkind;
	int rc;

	if (kind == H5M_SOFT && !rd.hr_bad)
		return 0;
	tkind = h5m_get_u8(&rd);
	h5m_get_id(&rd, &id);
	if (kind != H5M_HARD || rd.hr_bad || rd.hr_left != 0 ||
	    (tkind != H5M_GROUP && tkind != H5M_DATASET)) {
		rm_leave(r, r->r_top, "index %s: link '%.*s': its record is "
			 "damaged", clovis_id_format(&g->ri_id, gt), (int)klen - 1,
			 (const char *)k + 1);
		return 0;
	}
	rc = rm_ours(r->r_s, CLOVIS_ET_IDX, &id);
	if (rc == -ENOTUNIQ) {
		rm_leave(r, r->r_top, "index %s: link '%.*s' names %s, not an "
			 "index of this import (not followed)",
			 clovis_id_format(&g->ri_id, gt), (int)klen - 1,
			 (const char *)k + 1, clovis_id_format(&id, it));
		return 0;
	}
	if (rc <= 0)
		return rc;
	return rm_push(r, &id, tkind, r->r_top);
}

/* Delete the data object of a dataset header (gone already: fine). */
static int rm_data(struct rm *r, size_t item, const struct h5m_hdr *h)
{
	char text[CLOVIS_ID_STR_LEN], it[CLOVIS_ID_STR_LEN], what[64];
	struct clovis_obj o;
	int rc;

	snprintf(what, sizeof what, "object %s",
		 clovis_id_format(&h->hh_obj, text));
	rc = rm_ours(r->r_s, CLOVIS_ET_OBJ, &h->hh_obj);
	if (rc == -ENOTUNIQ) {
		rm_leave(r, item, "index %s: its data object %s is not an "
			 "object of this import (not removed)",
			 clovis_id_format(&r->r_stack[item].ri_id, it), text);
		return 0;
	}
	if (rc <= 0)
		return rc;
	rc = clovis_obj_init(&o, r->r_s->hs_realm, &h->hh_obj, NULL);
	if (rc < 0)
		return h5m_err_clovis(rc, "%s", what);
	rc = h5m_entity_run(&o.ob_entity, CLOVIS_EO_OPEN, what);
	if (rc == 0)
		rc = h5m_entity_run(&o.ob_entity, CLOVIS_EO_DELETE, what);
	return rc == -ENOENT ? 0 : rc;
}

/* Enter item: a dataset is removed; a group's hard targets are pushed
 * (*done 0: it goes when they are gone).  An index without a header is
 * one an interrupted import made just before its header: empty, removed
 * as a group (its links, if any, followed). */
static int rm_enter(struct rm *r, size_t item, struct clovis_idx *ix,
		    int *done)
{
	struct rm_item *it = &r->r_stack[item];
	struct clovis_id id = it->ri_id;
	uint8_t kind = it->ri_kind;
	char text[CLOVIS_ID_STR_LEN], what[64];
	struct h5m_hdr h;
	void *v = NULL;
	size_t vlen = 0;
	int rc;

	*done = 1;
	it->ri_entered = 1;
	snprintf(what, sizeof what, "index %s", clovis_id_format(&id, text));
	rc = h5m_idx_open(r->r_s, &id, ix, what);
	if (rc == -ENOENT)
		return 0;
	if (rc == 0)
		rc = h5m_idx_get(ix, "h", 1, &v, &vlen, what);
	if (rc == 0)
		rc = h5m_hdr_decode(v, vlen, &h, what);
	free(v);
	if (rc == -CLOVIS_ECORRUPT || (rc == 0 && h.hh_kind != kind)) {
		rm_leave(r, item, "index %s: its header is %s", text, rc ?
			 "damaged (it may name a data object)" : kind ==
			 H5M_GROUP ? "a dataset's, its link says group" :
			 "a group's, its link says dataset");
		return 0;
	}
	if (rc == 0 && h.hh_kind == H5M_DATASET) {
		rc = rm_data(r, item, &h);
		if (rc == 0 && r->r_stack[item].ri_keep)
			return 0;
		if (rc == 0)
			rc = h5m_entity_run(&ix->in_entity, CLOVIS_EO_DELETE,
					    what);
		if (rc == 0)
			r->r_st->hs_datasets++;
		return rc == -ENOENT ? 0 : rc;
	}
	if (rc != 0 && rc != -ENOENT)
		return rc;
	r->r_top = item;
	*done = 0;
	return h5m_idx_scan(ix, H5M_KEY_LINK, rm_link, r, what);
}

/* Leave item (a group whose targets are gone, or kept): remove it unless
 * something below it was left; then pop it. */
static int rm_leave_group(struct rm *r)
{
	struct rm_item *it = &r->r_stack[r->r_nr - 1];
	char text[CLOVIS_ID_STR_LEN], what[64];
	struct clovis_idx ix;
	int rc = 0;

	if (it->ri_keep) {
		r->r_stack[it->ri_parent].ri_keep = 1;
	} else {
		snprintf(what, sizeof what, "index %s",
			 clovis_id_format(&it->ri_id, text));
		rc = h5m_idx_open(r->r_s, &it->ri_id, &ix, what);
		if (rc == 0)
			rc = h5m_entity_run(&ix.in_entity, CLOVIS_EO_DELETE,
					    what);
		if (rc == 0)
			r->r_st->hs_groups++;
		rc = rc == -ENOENT ? 0 : rc;
	}
	r->r_nr--;
	return rc;
}

int h5m_rm_tree(struct h5m_store *s, const struct clovis_id *root,
		struct h5m_stats *st)
{
	char text[CLOVIS_ID_STR_LEN];
	struct h5m_stats dummy;
	struct clovis_idx ix;
	struct rm r;
	int rc, done;

	memset(&r, 0, sizeof r);
	r.r_s = s;
	r.r_st = st != NULL ? st : &dummy;
	memset(r.r_st, 0, sizeof *r.r_st);
	rc = rm_ours(s, CLOVIS_ET_IDX, root);
	if (rc == -ENOTUNIQ)
		rc = h5m_err(-CLOVIS_ECORRUPT, "its root %s is not an index "
			     "of this import (not removed)",
			     clovis_id_format(root, text));
	if (rc == 1)
		rc = rm_push(&r, root, H5M_GROUP, 0);
	while (rc == 0 && r.r_nr > 0) {
		size_t top = r.r_nr - 1;

		if (r.r_stack[top].ri_entered) {
			rc = rm_leave_group(&r);
			continue;
		}
		rc = rm_enter(&r, top, &ix, &done);
		if (rc == 0 && done) {
			if (r.r_stack[top].ri_keep)
				r.r_stack[r.r_stack[top].ri_parent].ri_keep = 1;
			r.r_nr--;
		}
	}
	if (rc == 0 && r.r_left > 0)
		rc = h5m_err(-CLOVIS_ECORRUPT, "left %u entit%s it cannot judge, "
			     "with the groups above them: %s%s", r.r_left,
			     r.r_left == 1 ? "y" : "ies", r.r_first,
			     r.r_left > 1 ? "; and more" : "");
	free(r.r_stack);
	idset_free(&r.r_seen);
	return rc;
}

int h5m_cat_prune(struct clovis_idx *cat)
{
	uint32_t nr = 0;
	int rc;

	rc = h5m_idx_count(cat, -1, &nr, "the HDF5 catalogue");
	if (rc == 0 && nr == 0)
		rc = h5m_entity_run(&cat->in_entity, CLOVIS_EO_DELETE,
				    "the HDF5 catalogue");
	return rc == -ENOENT ? 0 : rc;
}

/* Delete name's catalogue record, and the catalogue once empty. */
int h5m_cat_drop(struct clovis_idx *cat, const char *name)
{
	int rc;

	rc = h5m_idx_del(cat, name, strlen(name), "the HDF5 catalogue");
	if (rc == 0 || rc == -ENOENT)
		rc = h5m_cat_prune(cat);
	return rc;
}

int h5m_remove(struct clovis *cl, const struct h5m_target *t,
	       struct h5m_stats *st)
{
	struct h5m_store s;
	struct clovis_idx cat;
	struct h5m_cat rec;
	int rc;

	h5m_err(0, "%s", "");
	if (t->ht_name[0] == '\0')
		return h5m_err(-EINVAL, "remove: name the file "
			       "(CONTAINER/NAME)");
	rc = h5m_store_open(&s, cl, &t->ht_cont);
	if (rc == 0)
		rc = h5m_cat_get(&s, t, &cat, &rec);
	if (rc == 0)
		rc = h5m_rm_tree(&s, &rec.hc_root, st);
	if (rc == -CLOVIS_ECORRUPT) {
		char msg[600], id[CLOVIS_ID_STR_LEN];

		snprintf(msg, sizeof msg, "%s", h5m_errmsg());
		return h5m_err(rc, "%s/%s: %s; its record stays: remove what "
			       "is left by hand (strata idx rm, obj rm), then "
			       "run `strata h5 rm` again",
			       clovis_id_format(&t->ht_cont, id), t->ht_name,
			       msg);
	}
	if (rc == 0)
		rc = h5m_cat_drop(&cat, t->ht_name);
	return rc;
}
