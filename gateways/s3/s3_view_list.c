/*
 * s3_view_list.c — the listing of a view bucket (ListObjects, V2): its
 * directory tree walked in S3 key order, each key given to s3_lst_take()
 * (s3_ops_list.c), which applies prefix, bound, delimiter and page size as
 * for any bucket.  Keys are the regular files; directories, symlinks and
 * other files are not keys, and an empty directory shows nowhere.
 *
 * Order.  S3 lists keys in byte order; a directory "a" holds the keys
 * "a/...", so among its siblings it sorts as "a/": after "a.txt" ('.' is
 * below '/') and before "a0" ('/' is below '0').  ns_readdir() gives names
 * in byte order, where "a" comes before both.  Each level of the walk
 * therefore defers a directory until the readdir has passed its block:
 * the names that start with it and go on with a byte below '/' (0x01 to
 * 0x2e), which are exactly the names between "a" and "a/".  The deferred
 * directories form a stack, each a prefix of the next; the top is visited
 * (its keys walked) when a name outside its block comes, and at the end.
 *
 * Start.  A listing starts at its prefix or after its marker (start-after,
 * continuation token): the walk goes down the directories the position
 * names and starts each level's readdir there, taking first the
 * directories that sort after the position although their names come
 * before it (the proper prefixes of its first component that are followed
 * by a byte below '/': looked up by name).  A position that is not a
 * plain path starts its level from the first name (correct, slower):
 * s3_lst_take() drops what is not after the bound.
 *
 * With delimiter "/" the directories of the prefix's level are common
 * prefixes, each listed when its subtree has a key (a walk that stops at
 * the first one); the walk does not go into them.  Other delimiters walk
 * every key and let s3_lst_take() fold them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateways/s3/s3.h"
#include "gateways/s3/s3_ops_internal.h"
#include "gateways/s3/s3_view.h"

/* One level of the walk: a directory being read. */
struct vl_level {
	uint64_t lv_ino;
	size_t lv_kl;                     /* its key prefix: w->w_key[0..) */
	/* deferred directories: the first lv_pl[i] bytes of lv_pend */
	char lv_pend[NS_NAME_MAX + 1];
	uint32_t lv_pl[NS_NAME_MAX];
	uint64_t lv_pino[NS_NAME_MAX];
	uint32_t lv_np;
	struct ns_dirent lv_ents[S3_VIEW_READDIR];
};

struct vl_walk {
	struct s3_req *w_rq;
	struct lst *w_l;
	struct s3_buf *w_x;
	struct s3_view *w_v;
	char w_key[S3_KEY_MAX + NS_NAME_MAX + 2];
	bool w_cp;    /* delimiter "/": directories of the first level are
		       * common prefixes */
	bool w_done;
	int w_rc;
};

static void vl_level_run(struct vl_walk *w, uint64_t ino, size_t kl,
			 const char *from, size_t fl, const char *np,
			 size_t npl, bool first);

/* Byte order of a (al bytes) and b (bl bytes), as S3 orders keys. */
static int lcmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c != 0 ? c : (al < bl ? -1 : al > bl);
}

static void vl_fail(struct vl_walk *w, int rc)
{
	if (w->w_rc == 0)
		w->w_rc = rc;
	w->w_done = true;
}

/* Is name (nl bytes) in the block of d (dl bytes): d, then a byte below
 * '/' (the names that sort between d and "d/")? */
static bool in_block(const char *name, size_t nl, const char *d, size_t dl)
{
	return nl > dl && memcmp(name, d, dl) == 0 &&
	       (unsigned char)name[dl] < '/';
}

/* A key (w_key[0..kl)) to the listing. */
static void vl_take(struct vl_walk *w, size_t kl, uint64_t ino)
{
	struct s3_buf rec = {0};
	struct s3_orec r;
	size_t cpl = 0;
	int rc;

	switch (s3_lst_take(w->w_l, w->w_x, w->w_key, kl, &cpl)) {
	case LST_DONE:
		w->w_done = true;
		break;
	case LST_KEY:
		rc = s3_view_list_rec(w->w_v, ino, &rec, &r);
		if (rc == 0)
			s3_lst_key(w->w_l, w->w_x, w->w_rq, w->w_key, kl, &r);
		else if (rc != -ENOENT) /* -ENOENT: gone since the readdir */
			vl_fail(w, rc);
		break;
	}
	s3_buf_fini(&rec);
}

/* A regular file name of the directory whose key prefix is kl bytes. */
static void vl_file(struct vl_walk *w, size_t kl, const char *name, size_t nl,
		    uint64_t ino)
{
	if (kl + nl > S3_KEY_MAX || !s3_key_chars_ok(name, nl))
		return; /* cannot be an S3 key */
	memcpy(w->w_key + kl, name, nl);
	vl_take(w, kl + nl, ino);
}

/* "." and "..": ns_lookup() answers them, but they are no entry; nor is
 * strata-fuse's hidden directory in the root (ns.h NS_ORPHANS_NAME). */
static bool not_entry(uint64_t dir, const char *c, size_t n)
{
	return (n == 1 && c[0] == '.') ||
	       (n == 2 && c[0] == '.' && c[1] == '.') ||
	       (dir == NS_ROOT_INO && n == sizeof NS_ORPHANS_NAME - 1 &&
		memcmp(c, NS_ORPHANS_NAME, n) == 0);
}

/* 1 when directory ino, whose keys start with kl bytes, holds a key at any
 * depth, 0 when not, or the error. */
static int vl_has_key(struct vl_walk *w, uint64_t ino, size_t kl)
{
	struct ns_dirent *e = malloc(S3_VIEW_READDIR * sizeof *e);
	char after[NS_NAME_MAX + 1] = "";
	int n, i, r = 0;

	if (e == NULL)
		return -ENOMEM;
	do {
		n = ns_readdir(w->w_v->vw_ns, ino, after, e, S3_VIEW_READDIR);
		for (i = 0; i < n && r == 0; i++) {
			size_t nl = strlen(e[i].name);

			if (!s3_key_chars_ok(e[i].name, nl) ||
			    not_entry(ino, e[i].name, nl))
				continue;
			if (S_ISREG(e[i].type) && kl + nl <= S3_KEY_MAX)
				r = 1;
			else if (S_ISDIR(e[i].type) && kl + nl + 2 <= S3_KEY_MAX)
				r = vl_has_key(w, e[i].ino, kl + nl + 1);
		}
		if (n > 0)
			memcpy(after, e[n - 1].name, sizeof after);
	} while (r == 0 && n == S3_VIEW_READDIR);
	free(e);
	if (n < 0 && n != -ENOENT && n != -ENOTDIR)
		return n;
	return r;
}

/* Directory name (nl bytes, inode ino) of the directory whose key prefix
 * is kl bytes: its keys from position from (fl bytes, relative to it;
 * NULL: all), or at the first level with delimiter "/" its common
 * prefix. */
static void vl_dir(struct vl_walk *w, size_t kl, const char *name, size_t nl,
		   uint64_t ino, const char *from, size_t fl, bool first)
{
	size_t dl = kl + nl + 1;
	int r;

	if (dl + 1 > S3_KEY_MAX || !s3_key_chars_ok(name, nl))
		return; /* no key under it can be an S3 key */
	memcpy(w->w_key + kl, name, nl);
	w->w_key[kl + nl] = '/';
	if (!(w->w_cp && first)) {
		vl_level_run(w, ino, dl, from, fl, NULL, 0, false);
		return;
	}
	r = vl_has_key(w, ino, dl);
	if (r < 0)
		vl_fail(w, r);
	else if (r == 1)
		vl_take(w, dl, ino);
}

static void vl_push(struct vl_level *lv, const char *name, size_t nl,
		    uint64_t ino)
{
	if (lv->lv_np == NS_NAME_MAX) /* lengths grow by one at least */
		return;
	memcpy(lv->lv_pend, name, nl);
	lv->lv_pl[lv->lv_np] = (uint32_t)nl;
	lv->lv_pino[lv->lv_np++] = ino;
}

/* Visit the deferred directories whose block name (nl bytes; NULL: the end
 * of the directory) is not in: the top first. */
static void vl_pop(struct vl_walk *w, struct vl_level *lv, const char *name,
		   size_t nl, bool first)
{
	while (lv->lv_np > 0 && !w->w_done) {
		uint32_t t = lv->lv_pl[lv->lv_np - 1];

		if (name != NULL && in_block(name, nl, lv->lv_pend, t))
			return;
		lv->lv_np--;
		vl_dir(w, lv->lv_kl, lv->lv_pend, t, lv->lv_pino[lv->lv_np],
		       NULL, 0, first);
	}
}


/*
 * Start level lv at position from (fl bytes: its first component c, then
 * '/' and the rest, or c alone): the directories named by the proper
 * prefixes of c followed by a byte below '/' are deferred (they sort after
 * the position); c itself is walked from the rest when the position goes
 * on in it, else a file c is taken and a directory c deferred.  *after:
 * where the readdir starts (exclusive); *skip: with a rest, the names of
 * c's block (before "c/", so before the position) are skipped.
 */
static void vl_from(struct vl_walk *w, struct vl_level *lv, const char *from,
		    size_t fl, const char *np, size_t npl, bool first,
		    char *after, char *skip)
{
	struct ns *ns = w->w_v->vw_ns;
	const char *sl = memchr(from, '/', fl);
	size_t cl = sl != NULL ? (size_t)(sl - from) : fl, p;
	char c[NS_NAME_MAX + 1];
	struct ns_attr a;
	int rc;

	if (cl == 0 || cl > NS_NAME_MAX || memchr(from, 0, cl) != NULL)
		return; /* not a plain path: from the first name */
	memcpy(c, from, cl);
	c[cl] = 0;
	for (p = 1; p < cl && !w->w_done; p++) {
		if ((unsigned char)c[p] >= '/' || not_entry(lv->lv_ino, c, p) ||
		    (np != NULL && (p < npl || memcmp(c, np, npl) != 0)))
			continue;
		c[p] = 0;
		rc = ns_lookup(ns, lv->lv_ino, c, &a);
		c[p] = from[p];
		if (rc == 0 && S_ISDIR(a.mode))
			vl_push(lv, c, p, a.ino);
		else if (rc != 0 && rc != -ENOENT)
			vl_fail(w, rc);
	}
	if (w->w_done)
		return;
	rc = not_entry(lv->lv_ino, c, cl) ? -ENOENT
					   : ns_lookup(ns, lv->lv_ino, c, &a);
	if (rc != 0 && rc != -ENOENT)
		return vl_fail(w, rc);
	if (np == NULL || (cl >= npl && memcmp(c, np, npl) == 0)) {
		if (rc == 0 && sl != NULL && S_ISDIR(a.mode))
			vl_dir(w, lv->lv_kl, c, cl, a.ino, sl + 1,
			       fl - cl - 1, first);
		else if (rc == 0 && sl == NULL && S_ISDIR(a.mode))
			vl_push(lv, c, cl, a.ino);
		else if (rc == 0 && sl == NULL && S_ISREG(a.mode))
			vl_file(w, lv->lv_kl, c, cl, a.ino);
	}
	memcpy(after, c, cl + 1);
	if (sl != NULL)
		memcpy(skip, c, cl + 1);
}

/*
 * Walk directory ino, whose key prefix is w_key[0..kl), in S3 order from
 * position from (NULL: the first name); np: only names starting with it
 * (the prefix's last component, first level only: its block of names
 * ends the level).
 */
static void vl_level_run(struct vl_walk *w, uint64_t ino, size_t kl,
			 const char *from, size_t fl, const char *np,
			 size_t npl, bool first)
{
	struct vl_level *lv = malloc(sizeof *lv);
	char after[NS_NAME_MAX + 1] = "", skip[NS_NAME_MAX + 1] = "";
	bool end = false;
	int n, i;

	if (lv == NULL)
		return vl_fail(w, -ENOMEM);
	lv->lv_ino = ino;
	lv->lv_kl = kl;
	lv->lv_np = 0;
	if (from != NULL && fl > 0)
		vl_from(w, lv, from, fl, np, npl, first, after, skip);
	while (!w->w_done && !end) {
		n = ns_readdir(w->w_v->vw_ns, ino, after, lv->lv_ents,
			       S3_VIEW_READDIR);
		if (n < 0) {
			if (n != -ENOENT && n != -ENOTDIR) /* gone: no keys */
				vl_fail(w, n);
			break;
		}
		for (i = 0; i < n && !w->w_done && !end; i++) {
			const struct ns_dirent *e = &lv->lv_ents[i];
			size_t el = strlen(e->name);

			if (skip[0] != 0 && in_block(e->name, el, skip,
						     strlen(skip)))
				continue;
			skip[0] = 0;
			if (not_entry(ino, e->name, el))
				continue;
			if (np != NULL && (el < npl ||
					   memcmp(e->name, np, npl) != 0)) {
				end = memcmp(e->name, np, el < npl ? el : npl)
				      > 0;
				continue;
			}
			vl_pop(w, lv, e->name, el, first);
			if (S_ISDIR(e->type))
				vl_push(lv, e->name, el, e->ino);
			else if (S_ISREG(e->type) && !w->w_done)
				vl_file(w, kl, e->name, el, e->ino);
		}
		if (n > 0)
			memcpy(after, lv->lv_ents[n - 1].name, sizeof after);
		if (n < (int)S3_VIEW_READDIR)
			break;
	}
	vl_pop(w, lv, NULL, 0, first);
	free(lv);
}

int s3_view_list(struct s3_req *rq, struct lst *l, struct s3_buf *x)
{
	struct vl_walk *w = calloc(1, sizeof *w);
	struct s3_view *v = rq->rq_bk->bk_vw;
	const char *sl = NULL, *from = NULL;
	size_t dl = 0, fl = 0, i;
	uint64_t dir = v->vw_ino;
	int rc = 0;

	if (w == NULL)
		return -ENOMEM;
	w->w_rq = rq;
	w->w_l = l;
	w->w_x = x;
	w->w_v = v;
	w->w_cp = l->l_dl == 1 && l->l_delim[0] == '/';
	for (i = 0; i < l->l_pl; i++) /* the prefix's directory: D/ */
		if (l->l_prefix[i] == '/')
			sl = l->l_prefix + i;
	if (sl != NULL) {
		dl = (size_t)(sl - l->l_prefix) + 1;
		if (dl > S3_KEY_MAX)
			goto out;
		memcpy(w->w_key, l->l_prefix, dl);
		if (dl == 1) /* keys do not start with '/' */
			goto out;
		rc = s3_view_dir_find(v, l->l_prefix, dl - 1, &dir);
		if (rc != 0) { /* no such directory: no keys */
			rc = rc == -ENOENT || rc == -ENOTDIR ? 0 : rc;
			goto out;
		}
	}
	if (l->l_after != NULL &&
	    lcmp(l->l_after, l->l_al, l->l_prefix, l->l_pl) >= 0) {
		/* after the bound, which is at or past the prefix */
		if (l->l_al < dl || memcmp(l->l_after, l->l_prefix, dl) != 0)
			goto out; /* past every key of the prefix */
		from = l->l_after + dl;
		fl = l->l_al - dl;
	} else {
		from = l->l_prefix + dl;
		fl = l->l_pl - dl;
	}
	vl_level_run(w, dir, dl, from, fl, l->l_pl > dl ? l->l_prefix + dl
		     : NULL, l->l_pl - dl, true);
	rc = w->w_rc;
out:
	free(w);
	return rc;
}
