/*
 * gateways/posix/ns.c — the POSIX namespace on Clovis indices (ns.h):
 * mkfs and mount, inode records, names and lookups, creating and removing
 * entries, rename, links, directories, attributes.  File data, the
 * size/time cache and durability tracking are in ns_io.c; extended
 * attributes and statfs in ns_xattr.c; what they share is in
 * ns_internal.h.
 *
 * Every change that touches more than one record is one ns_tx (one dtx):
 * it is built from records read under the inode locks it needs
 * (ns_lockset), then committed; a create claims its random inode number
 * with a PUT without CLOVIS_IF_OVERWRITE in the same dtx as its entry, so
 * a collision (or an existing name) fails the whole dtx with -EEXIST and
 * nothing is applied (the member that failed says which).  A directory's
 * index is CREATEd by its mkdir's dtx and DELETEd by its rmdir's (entity
 * CREATE and DELETE are dtx members in both modes, clovis.h; no member
 * acts on the index the same dtx creates), a file's object DELETEd by the
 * dtx that removes its last link.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <time.h>

#include "gateways/posix/ns_internal.h"

_Static_assert(NS_LOCKS == 1u << 10, "ns_slot() takes 10 bits");

#define NS_DEPTH_MAX 4096u /* levels walked up from a directory to root */

static __thread char ns_msg[512];

/* ------------------------------------------------------------- basics */

int ns_err(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ns_msg, sizeof ns_msg, fmt, ap);
	va_end(ap);
	return rc;
}

const char *ns_errmsg(void)
{
	return ns_msg;
}

uint64_t ns_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ns_rw_check(struct ns *ns, const char *what)
{
	if (ns->ns_ro)
		return ns_err(-EROFS, "%s: the namespace is mounted read-only",
			      what);
	return 0;
}

/* A random 64-bit number above 1 (inode numbers, generations, fsid):
 * never 0 and never the root's number. */
uint64_t ns_rand64(void)
{
	uint64_t v = 0;

	while (v <= NS_ROOT_INO) {
		if (getrandom(&v, sizeof v, 0) != sizeof v)
			v = ns_now_ns() * 0x9E3779B97F4A7C15ull ^ (uint64_t)&v;
	}
	return v;
}

void ns_ino_key(uint64_t ino, uint8_t key[NS_INO_KEY])
{
	uint64_t be = htobe64(ino);

	memcpy(key, &be, NS_INO_KEY);
}

void ns_rec_swap(struct ns_inode_rec *r)
{
	r->it_magic = htole32(r->it_magic);
	r->it_mode = htole32(r->it_mode);
	r->it_uid = htole32(r->it_uid);
	r->it_gid = htole32(r->it_gid);
	r->it_nlink = htole32(r->it_nlink);
	r->it_flags = htole32(r->it_flags);
	r->it_gen = htole64(r->it_gen);
	r->it_size = htole64(r->it_size);
	r->it_atime_ns = htole64(r->it_atime_ns);
	r->it_mtime_ns = htole64(r->it_mtime_ns);
	r->it_ctime_ns = htole64(r->it_ctime_ns);
	r->it_btime_ns = htole64(r->it_btime_ns);
	r->it_rdev = htole64(r->it_rdev);
	r->it_parent = htole64(r->it_parent);
	r->it_data.ci_hi = htole64(r->it_data.ci_hi);
	r->it_data.ci_lo = htole64(r->it_data.ci_lo);
	r->it_block_shift = htole32(r->it_block_shift);
	r->it_target_len = htole32(r->it_target_len);
}

static void ns_super_swap(struct ns_super *s)
{
	s->sb_magic = htole32(s->sb_magic);
	s->sb_version = htole32(s->sb_version);
	s->sb_root = htole64(s->sb_root);
	s->sb_fsid = htole64(s->sb_fsid);
	s->sb_ctime_ns = htole64(s->sb_ctime_ns);
	s->sb_block_shift = htole32(s->sb_block_shift);
	s->sb_layout = htole32(s->sb_layout);
	s->sb_tier = htole32(s->sb_tier);
	s->sb_pad = htole32(s->sb_pad);
}

static void ns_dirent_swap(struct ns_dirent_rec *d)
{
	d->de_ino = htole64(d->de_ino);
	d->de_type = htole32(d->de_type);
	d->de_pad = htole32(d->de_pad);
}

static const char *ns_id_str(const struct clovis_id *id, char *buf)
{
	return clovis_id_format(id, buf);
}

/* ------------------------------------------------------- index helpers */

/* GET one record into the caller's buffer v of *vl bytes: 0 (and *vl its
 * size), -ENOENT, -ENOBUFS (*vl the size needed), or the op's failure
 * (message from the store). */
int ns_idx_get(struct clovis_idx *ix, const void *k, size_t kl, void *v,
	       size_t *vl)
{
	void *kb = (void *)k, *vb = v;
	size_t kls = kl;
	struct clovis_bufvec keys = {1, &kb, &kls}, vals = {1, &vb, vl};
	struct clovis_op *op;
	int32_t rcs = 0;
	char ids[CLOVIS_ID_STR_LEN];
	int rc = clovis_idx_op(ix, CLOVIS_IC_GET, &keys, &vals, &rcs, 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		return ns_err(rc, "index %s: GET: %s",
			      ns_id_str(&ix->in_entity.en_id, ids),
			      clovis_errmsg());
	return rcs;
}

/* Make a handle for index id of the namespace and OPEN it (synchronous).
 * -ENOENT (no message: callers name what was missing), or the store's. */
int ns_idx_open(struct ns *ns, const struct clovis_id *id,
		struct clovis_idx *ix)
{
	struct clovis_op *op;
	int rc = clovis_idx_init(ix, &ns->ns_co.co_realm, id);

	if (rc == 0)
		rc = clovis_entity_op(&ix->in_entity, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0 && rc != -ENOENT) {
		char ids[CLOVIS_ID_STR_LEN];

		return ns_err(rc, "index %s: OPEN: %s", ns_id_str(id, ids),
			      clovis_errmsg());
	}
	return rc;
}

/* Directory dir's index was not found: say why (-ENOENT, -ENOTDIR). */
static int ns_dir_missing(struct ns *ns, uint64_t dir)
{
	struct ns_inode_rec r;
	int rc = ns_inode_get(ns, dir, &r, NULL);

	if (rc != 0)
		return rc;
	if (!S_ISDIR(r.it_mode))
		return ns_err(-ENOTDIR, "inode %#" PRIx64 ": not a directory",
			      dir);
	return ns_err(-EIO, "directory %#" PRIx64 ": its index is missing",
		      dir);
}

/* Open directory dir's index into ix (a handle of the caller's). */
int ns_dir_open(struct ns *ns, uint64_t dir, struct clovis_idx *ix)
{
	struct clovis_id id = {NS_HI_DIR, dir};
	int rc = ns_idx_open(ns, &id, ix);

	return rc == -ENOENT ? ns_dir_missing(ns, dir) : rc;
}

/* The same into a handle living as long as the change t (whose
 * failure it then is). */
int ns_tx_dir(struct ns_tx *t, uint64_t dir, struct clovis_idx **ix)
{
	struct clovis_id id = {NS_HI_DIR, dir};
	int rc = t->t_rc != 0 ? t->t_rc : ns_tx_idx(t, &id, true, ix);

	if (rc == -ENOENT && t->t_rc == -ENOENT)
		rc = t->t_rc = ns_dir_missing(t->t_ns, dir);
	return rc;
}

/* ------------------------------------------------------------ records */

int ns_inode_get(struct ns *ns, uint64_t ino, struct ns_inode_rec *r,
		 char *target)
{
	uint8_t key[NS_INO_KEY], buf[sizeof *r + NS_SYMLINK_MAX];
	size_t vl = sizeof buf;
	int rc;

	ns_ino_key(ino, key);
	rc = ns_idx_get(&ns->ns_inodes, key, sizeof key, buf, &vl);
	if (rc == -ENOENT)
		return ns_err(-ENOENT, "inode %#" PRIx64 ": no such inode",
			      ino);
	if (rc == -ENOBUFS || (rc == 0 && vl < sizeof *r))
		return ns_err(-EIO, "inode %#" PRIx64 ": record of %zu bytes",
			      ino, vl);
	if (rc != 0)
		return rc;
	memcpy(r, buf, sizeof *r);
	ns_rec_swap(r);
	if (r->it_magic != NS_MAGIC || r->it_target_len > NS_SYMLINK_MAX ||
	    vl != sizeof *r + r->it_target_len)
		return ns_err(-EIO, "inode %#" PRIx64 ": bad record (magic "
			      "%#x, %zu bytes)", ino, r->it_magic, vl);
	/* another process's record (or a bug's) never drives a shift or a
	 * size past what the code can compute with */
	if ((r->it_block_shift != 0 &&
	     (r->it_block_shift < CLOVIS_BLOCK_SHIFT_MIN ||
	      r->it_block_shift > CLOVIS_BLOCK_SHIFT_MAX)) ||
	    (S_ISREG(r->it_mode) && r->it_size > NS_FILE_MAX))
		return ns_err(-EIO, "inode %#" PRIx64 ": bad record (block "
			      "shift %u, size %" PRIu64 ")", ino,
			      r->it_block_shift, r->it_size);
	if (target != NULL) {
		memcpy(target, buf + sizeof *r, r->it_target_len);
		target[r->it_target_len] = '\0';
	}
	ns_file_overlay(ns, ino, r);
	return 0;
}

int ns_tx_inode_put(struct ns_tx *t, uint64_t ino,
		    const struct ns_inode_rec *r, const char *target,
		    bool overwrite)
{
	uint8_t key[NS_INO_KEY], buf[sizeof *r + NS_SYMLINK_MAX];
	struct ns_inode_rec le = *r;
	size_t tl = r->it_target_len;

	ns_ino_key(ino, key);
	ns_rec_swap(&le);
	memcpy(buf, &le, sizeof le);
	if (tl > 0)
		memcpy(buf + sizeof le, target, tl);
	return ns_tx_put(t, &t->t_ns->ns_inodes, key, sizeof key, buf,
			 sizeof le + tl, overwrite);
}

/* Times are kept as signed nanoseconds since the epoch (two's complement
 * in the records' 64-bit fields): 1677-09-21 to 2262-04-11. */
#define NS_TS_SEC_MAX (INT64_MAX / 1000000000ll - 1)

static void ns_ts(struct timespec *ts, uint64_t t_ns)
{
	int64_t t = (int64_t)t_ns, sec = t / 1000000000ll,
		nsec = t % 1000000000ll;

	if (nsec < 0) { /* before 1970: the second below, nsec in [0, 1e9) */
		nsec += 1000000000ll;
		sec--;
	}
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)nsec;
}

static uint64_t ns_ts_ns(const struct timespec *ts)
{
	return (uint64_t)((int64_t)ts->tv_sec * 1000000000ll +
			  (int64_t)ts->tv_nsec);
}

/* A time a caller sets: -EINVAL/-EOVERFLOW naming the field. */
static int ns_ts_check(const struct timespec *ts, uint64_t ino,
		       const char *field)
{
	if (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000l)
		return ns_err(-EINVAL, "setattr: inode %#" PRIx64 ": %s "
			      "nanoseconds %ld out of [0, 999999999]", ino,
			      field, (long)ts->tv_nsec);
	if ((int64_t)ts->tv_sec > NS_TS_SEC_MAX ||
	    (int64_t)ts->tv_sec < -NS_TS_SEC_MAX)
		return ns_err(-EOVERFLOW, "setattr: inode %#" PRIx64 ": %s %lld "
			      "s out of the range kept (years 1678 to 2262)",
			      ino, field, (long long)ts->tv_sec);
	return 0;
}

void ns_rec_to_attr(const struct ns *ns, uint64_t ino,
		    const struct ns_inode_rec *r, struct ns_attr *a)
{
	uint32_t shift = r->it_block_shift != 0 ? r->it_block_shift
						: ns->ns_sb.sb_block_shift;

	memset(a, 0, sizeof *a);
	a->ino = ino;
	a->gen = r->it_gen;
	a->mode = r->it_mode;
	a->uid = r->it_uid;
	a->gid = r->it_gid;
	a->nlink = r->it_nlink;
	a->size = r->it_size;
	a->blocks = S_ISDIR(r->it_mode) ? 0 : (r->it_size + 511) / 512;
	a->blksize = 1u << shift;
	a->rdev = r->it_rdev;
	ns_ts(&a->atime, r->it_atime_ns);
	ns_ts(&a->mtime, r->it_mtime_ns);
	ns_ts(&a->ctime, r->it_ctime_ns);
	ns_ts(&a->btime, r->it_btime_ns);
}

void ns_attr_to_stat(const struct ns_attr *a, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_size = (off_t)a->size;
	st->st_blksize = a->blksize;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_atim = a->atime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->ctime;
}

/* ---------------------------------------------------------------- locks */

static uint32_t ns_slot(uint64_t ino)
{
	return (uint32_t)((ino * 0x9E3779B97F4A7C15ull) >> 54);
}

void ns_ls_init(struct ns_lockset *ls)
{
	ls->ls_nr = 0;
}

void ns_ls_add(struct ns_lockset *ls, uint64_t ino, bool excl)
{
	uint32_t s = ns_slot(ino);

	for (uint32_t i = 0; i < ls->ls_nr; i++) {
		if (ls->ls_slot[i] == s) {
			ls->ls_excl[i] |= excl;
			return;
		}
	}
	if (ls->ls_nr == NS_LOCKSET_MAX)
		abort(); /* our own error: no change locks that many */
	ls->ls_slot[ls->ls_nr] = s;
	ls->ls_excl[ls->ls_nr++] = excl;
}

/* Take every lock of ls in slot order (so two changes never wait for
 * each other in a cycle). */
void ns_ls_lock(struct ns *ns, struct ns_lockset *ls)
{
	for (uint32_t i = 1; i < ls->ls_nr; i++) {
		for (uint32_t j = i;
		     j > 0 && ls->ls_slot[j - 1] > ls->ls_slot[j]; j--) {
			uint32_t s = ls->ls_slot[j];
			bool e = ls->ls_excl[j];

			ls->ls_slot[j] = ls->ls_slot[j - 1];
			ls->ls_excl[j] = ls->ls_excl[j - 1];
			ls->ls_slot[j - 1] = s;
			ls->ls_excl[j - 1] = e;
		}
	}
	for (uint32_t i = 0; i < ls->ls_nr; i++) {
		if (ls->ls_excl[i])
			pthread_rwlock_wrlock(&ns->ns_locks[ls->ls_slot[i]]);
		else
			pthread_rwlock_rdlock(&ns->ns_locks[ls->ls_slot[i]]);
	}
}

void ns_ls_lock_one(struct ns *ns, struct ns_lockset *ls, uint64_t ino,
		    bool excl)
{
	ns_ls_init(ls);
	ns_ls_add(ls, ino, excl);
	ns_ls_lock(ns, ls);
}

void ns_ls_unlock(struct ns *ns, struct ns_lockset *ls)
{
	for (uint32_t i = ls->ls_nr; i > 0; i--)
		pthread_rwlock_unlock(&ns->ns_locks[ls->ls_slot[i - 1]]);
}

/* ---------------------------------------------------------- mkfs, mount */

int ns_ent_sync(struct clovis_entity *e, enum clovis_entity_opcode oc)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(e, oc, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* CREATE index id in realm r; one that exists is fine (a crashed mkfs),
 * and *existed says so. */
static int ns_idx_make(struct clovis_realm *r, const struct clovis_id *id,
		       struct clovis_idx *ix, bool *existed)
{
	char ids[CLOVIS_ID_STR_LEN];
	int rc = clovis_idx_init(ix, r, id);

	if (rc == 0)
		rc = ns_ent_sync(&ix->in_entity, CLOVIS_EO_CREATE);
	*existed = rc == -EEXIST;
	if (rc == -EEXIST) {
		clovis_idx_init(ix, r, id);
		rc = ns_ent_sync(&ix->in_entity, CLOVIS_EO_OPEN);
	}
	if (rc != 0)
		return ns_err(rc, "mkfs: index %s: %s", ns_id_str(id, ids),
			      clovis_errmsg());
	return 0;
}

/* PUT one record synchronously (STABLE): mkfs only. */
static int ns_put_sync(struct clovis_idx *ix, const void *k, size_t kl,
		       const void *v, size_t vl, bool overwrite)
{
	void *kb = (void *)k, *vb = (void *)v;
	size_t kls = kl, vls = vl;
	struct clovis_bufvec keys = {1, &kb, &kls}, vals = {1, &vb, &vls};
	struct clovis_op *op;
	int32_t rcs = 0;
	int rc = clovis_idx_op(ix, CLOVIS_IC_PUT, &keys, &vals, &rcs,
			       overwrite ? CLOVIS_IF_OVERWRITE : 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc != 0 ? rc : rcs;
}

static int ns_mkfs_opts_check(const struct ns_mkfs_opts *o)
{
	if (o->block_shift != 0 && (o->block_shift < 12 || o->block_shift > 24))
		return ns_err(-EINVAL, "mkfs: block_shift %u outside 12..24",
			      o->block_shift);
	if (o->layout > CLOVIS_LAYOUT_MIRROR)
		return ns_err(-EINVAL, "mkfs: layout %u is not 0, PLAIN, "
			      "PDCLUST or MIRROR", o->layout);
	if (o->tier >= CLOVIS_TIER_NR)
		return ns_err(-EINVAL, "mkfs: tier %u unknown", o->tier);
	if (o->root_mode & ~07777u)
		return ns_err(-EINVAL, "mkfs: root_mode %#o has more than "
			      "permission bits", o->root_mode);
	return 0;
}

/* The root's inode record. */
static void ns_root_rec(const struct ns_mkfs_opts *o, uint64_t now,
			struct ns_inode_rec *r)
{
	memset(r, 0, sizeof *r);
	r->it_magic = NS_MAGIC;
	r->it_mode = S_IFDIR | (o->root_mode != 0 ? o->root_mode : 0755);
	r->it_uid = o->root_uid;
	r->it_gid = o->root_gid;
	r->it_nlink = 2;
	r->it_gen = ns_rand64();
	r->it_atime_ns = r->it_mtime_ns = r->it_ctime_ns = r->it_btime_ns = now;
	r->it_parent = NS_ROOT_INO;
	r->it_data = (struct clovis_id){NS_HI_DIR, NS_ROOT_INO};
}

/* The container c, created when missing (the default one always is). */
static int ns_container_make(struct clovis *cl, const struct clovis_id *c,
			     struct clovis_container *co)
{
	char ids[CLOVIS_ID_STR_LEN];
	int rc = clovis_container_init(co, cl, c);

	if (rc == 0)
		rc = ns_ent_sync(&co->co_entity, CLOVIS_EO_CREATE);
	if (rc == -EEXIST)
		rc = 0;
	if (rc != 0)
		return ns_err(rc, "mkfs: container %s: %s", ns_id_str(c, ids),
			      clovis_errmsg());
	return 0;
}

/* Does container r hold the namespace (is the superblock index its
 * member)?  Entity ids belong to the store, not to a container, and
 * ns.h's meta indices have fixed ids: a store holds one namespace. */
static int ns_holds(struct clovis *cl, struct clovis_realm *r, bool *yes)
{
	struct clovis_id after = {NS_HI_META, 0}, id, sid = NS_ID_SUPER;
	uint32_t nr = 1;
	int rc = clovis_entity_list(cl, r, CLOVIS_ET_IDX, &after, &id, &nr);

	*yes = rc == 0 && nr == 1 && clovis_id_cmp(&id, &sid) == 0;
	return rc;
}

/* Name the container holding the store's namespace (for a message). */
static const char *ns_holder(struct clovis *cl, char *buf, size_t size)
{
	struct clovis_id ids[64], after;
	char s[CLOVIS_ID_STR_LEN];
	uint32_t nr = 64;
	bool yes;

	snprintf(buf, size, "another container");
	for (uint32_t page = 0; page < 1024 && nr == 64; page++) {
		nr = 64;
		if (clovis_entity_list(cl, NULL, CLOVIS_ET_CONTAINER,
				       page ? &after : NULL, ids, &nr) != 0)
			break;
		for (uint32_t i = 0; i < nr; i++) {
			struct clovis_realm r = {cl, ids[i]};

			if (ns_holds(cl, &r, &yes) == 0 && yes) {
				snprintf(buf, size, "container %s",
					 ns_id_str(&ids[i], s));
				return buf;
			}
		}
		if (nr > 0)
			after = ids[nr - 1];
	}
	return buf;
}

/* The superblock index exists: in c (0), or -EEXIST naming where. */
static int ns_mkfs_here(struct clovis *cl, struct clovis_container *co,
			const struct clovis_id *c)
{
	char ids[CLOVIS_ID_STR_LEN], where[64];
	bool yes;
	int rc = ns_holds(cl, &co->co_realm, &yes);

	if (rc != 0)
		return ns_err(rc, "mkfs: container %s: %s", ns_id_str(c, ids),
			      clovis_errmsg());
	if (!yes)
		return ns_err(-EEXIST, "mkfs: container %s: the store holds a "
			      "namespace in %s already (one per store: its "
			      "indices have fixed ids)", ns_id_str(c, ids),
			      ns_holder(cl, where, sizeof where));
	return 0;
}

/* The indices of the inodes, the xattrs and the root's entries, and the
 * root's record (which a mkfs that stopped before its superblock made
 * already perhaps: written again). */
static int ns_mkfs_tables(struct clovis_container *co,
			  const struct clovis_id *c,
			  const struct ns_mkfs_opts *o, uint64_t now)
{
	struct clovis_id iid = NS_ID_INODES, xid = NS_ID_XATTRS;
	struct clovis_id rid = {NS_HI_DIR, NS_ROOT_INO};
	struct clovis_idx iix, xix, rix;
	struct ns_inode_rec root;
	uint8_t key[NS_INO_KEY];
	char ids[CLOVIS_ID_STR_LEN];
	bool existed;
	int rc = ns_idx_make(&co->co_realm, &iid, &iix, &existed);

	if (rc == 0)
		rc = ns_idx_make(&co->co_realm, &xid, &xix, &existed);
	if (rc == 0)
		rc = ns_idx_make(&co->co_realm, &rid, &rix, &existed);
	if (rc != 0)
		return rc;
	ns_root_rec(o, now, &root);
	ns_rec_swap(&root);
	ns_ino_key(NS_ROOT_INO, key);
	rc = ns_put_sync(&iix, key, sizeof key, &root, sizeof root, true);
	if (rc != 0)
		return ns_err(rc, "mkfs: container %s: the root's record: %s",
			      ns_id_str(c, ids), clovis_errmsg());
	return 0;
}

/* The superblock, last: without OVERWRITE, so of two mkfs one wins. */
static int ns_mkfs_super(struct clovis_idx *six, const struct clovis_id *c,
			 const struct ns_mkfs_opts *o, uint64_t now)
{
	char ids[CLOVIS_ID_STR_LEN];
	struct ns_super sb = {
		.sb_magic = NS_MAGIC, .sb_version = NS_VERSION,
		.sb_root = NS_ROOT_INO, .sb_fsid = ns_rand64(),
		.sb_ctime_ns = now,
		.sb_block_shift = o->block_shift ? o->block_shift
						 : NS_BLOCK_SHIFT_DEFAULT,
		.sb_layout = o->layout,
		.sb_tier = o->tier ? o->tier : CLOVIS_TIER_FLASH,
	};
	int rc;

	ns_super_swap(&sb);
	rc = ns_put_sync(six, "super", 5, &sb, sizeof sb, false);
	if (rc == -EEXIST)
		return ns_err(-EEXIST, "mkfs: container %s holds a namespace "
			      "already (made meanwhile)", ns_id_str(c, ids));
	if (rc != 0)
		return ns_err(rc, "mkfs: container %s: the superblock: %s",
			      ns_id_str(c, ids), clovis_errmsg());
	return 0;
}

/* The superblock is written last: its presence says the namespace is
 * whole, so a mkfs that crashed before it is simply made again. */
int ns_mkfs(struct clovis *cl, const struct clovis_id *c,
	    const struct ns_mkfs_opts *o)
{
	static const struct ns_mkfs_opts dflt;
	struct clovis_id sid = NS_ID_SUPER;
	struct clovis_container co;
	struct clovis_idx six;
	struct ns_super sb;
	char ids[CLOVIS_ID_STR_LEN];
	size_t vl = sizeof sb;
	uint64_t now = ns_now_ns();
	bool existed;
	int rc;

	if (cl == NULL || c == NULL)
		return ns_err(-EINVAL, "mkfs: %s is NULL", cl ? "container"
							     : "client");
	o = o != NULL ? o : &dflt;
	rc = ns_mkfs_opts_check(o);
	if (rc == 0)
		rc = ns_container_make(cl, c, &co);
	if (rc == 0)
		rc = ns_idx_make(&co.co_realm, &sid, &six, &existed);
	if (rc == 0 && existed)
		rc = ns_mkfs_here(cl, &co, c);
	if (rc != 0)
		return rc;
	rc = ns_idx_get(&six, "super", 5, &sb, &vl);
	if (rc == 0 || rc == -ENOBUFS)
		return ns_err(-EEXIST, "mkfs: container %s holds a namespace "
			      "already", ns_id_str(c, ids));
	if (rc != -ENOENT)
		return rc;
	rc = ns_mkfs_tables(&co, c, o, now);
	return rc == 0 ? ns_mkfs_super(&six, c, o, now) : rc;
}

/* Read and check the superblock of the container open in ns. */
static int ns_super_load(struct ns *ns, const struct clovis_id *c)
{
	struct clovis_id sid = NS_ID_SUPER;
	struct clovis_idx six;
	char ids[CLOVIS_ID_STR_LEN], where[64];
	size_t vl = sizeof ns->ns_sb;
	bool here = false;
	int rc = ns_idx_open(ns, &sid, &six);

	if (rc == 0)
		rc = ns_holds(ns->ns_cl, &ns->ns_co.co_realm, &here);
	if (rc == 0 && !here)
		return ns_err(-ENOENT, "mount: container %s holds no namespace "
			      "(the store's is in %s)", ns_id_str(c, ids),
			      ns_holder(ns->ns_cl, where, sizeof where));
	if (rc == 0)
		rc = ns_idx_get(&six, "super", 5, &ns->ns_sb, &vl);
	if (rc == -ENOENT)
		return ns_err(-ENOENT, "mount: container %s holds no namespace "
			      "(run ns_mkfs)", ns_id_str(c, ids));
	if (rc == 0 && vl != sizeof ns->ns_sb)
		rc = -ENOBUFS;
	if (rc == -ENOBUFS)
		return ns_err(-EPROTO, "mount: container %s: superblock of %zu "
			      "bytes", ns_id_str(c, ids), vl);
	if (rc != 0)
		return rc;
	ns_super_swap(&ns->ns_sb);
	if (ns->ns_sb.sb_magic != NS_MAGIC ||
	    ns->ns_sb.sb_version != NS_VERSION)
		return ns_err(-EPROTO, "mount: container %s: superblock magic "
			      "%#x version %u (want %#x version %u)",
			      ns_id_str(c, ids), ns->ns_sb.sb_magic,
			      ns->ns_sb.sb_version, NS_MAGIC, NS_VERSION);
	return 0;
}

static int ns_mount_open(struct ns *ns, const struct clovis_id *c)
{
	struct clovis_id iid = NS_ID_INODES, xid = NS_ID_XATTRS;
	char ids[CLOVIS_ID_STR_LEN];
	int rc = clovis_container_init(&ns->ns_co, ns->ns_cl, c);

	if (rc == 0)
		rc = ns_ent_sync(&ns->ns_co.co_entity, CLOVIS_EO_OPEN);
	if (rc == -ENOENT)
		return ns_err(-ENOENT, "mount: container %s: no such container",
			      ns_id_str(c, ids));
	if (rc != 0)
		return ns_err(rc, "mount: container %s: %s", ns_id_str(c, ids),
			      clovis_errmsg());
	rc = ns_super_load(ns, c);
	if (rc != 0)
		return rc;
	rc = ns_idx_open(ns, &iid, &ns->ns_inodes);
	if (rc == 0)
		rc = ns_idx_open(ns, &xid, &ns->ns_xattrs);
	if (rc == -ENOENT)
		return ns_err(-EIO, "mount: container %s: the namespace has a "
			      "superblock but no inode or xattr index",
			      ns_id_str(c, ids));
	return rc;
}

static void ns_destroy(struct ns *ns)
{
	for (uint32_t i = 0; i < NS_LOCKS; i++)
		pthread_rwlock_destroy(&ns->ns_locks[i]);
	pthread_mutex_destroy(&ns->ns_rename_lock);
	pthread_mutex_destroy(&ns->ns_cache_lock);
	pthread_mutex_destroy(&ns->ns_pend_lock);
	pthread_mutex_destroy(&ns->ns_pend_wait);
	pthread_cond_destroy(&ns->ns_wb_cond);
	free(ns);
}

static struct ns *ns_alloc(struct clovis *cl, const struct ns_opts *o)
{
	pthread_rwlockattr_t ra;
	struct ns *ns = calloc(1, sizeof *ns);

	if (ns == NULL)
		return NULL;
	ns->ns_cl = cl;
	ns->ns_ro = o != NULL && o->read_only;
	ns->ns_wb_ms = o != NULL && o->writeback_ms ? o->writeback_ms
						    : NS_WRITEBACK_MS;
	/* Writers first: a stream of creates in a directory (shared) must
	 * not starve an rmdir or a size writeback (exclusive). */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (uint32_t i = 0; i < NS_LOCKS; i++)
		pthread_rwlock_init(&ns->ns_locks[i], &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&ns->ns_rename_lock, NULL);
	pthread_mutex_init(&ns->ns_cache_lock, NULL);
	pthread_mutex_init(&ns->ns_pend_lock, NULL);
	pthread_mutex_init(&ns->ns_pend_wait, NULL);
	pthread_cond_init(&ns->ns_wb_cond, NULL);
	return ns;
}

int ns_mount(struct clovis *cl, const struct clovis_id *c,
	     const struct ns_opts *o, struct ns **out)
{
	struct ns *ns;
	int rc;

	if (cl == NULL || c == NULL || out == NULL)
		return ns_err(-EINVAL, "mount: NULL argument");
	ns = ns_alloc(cl, o);
	if (ns == NULL)
		return ns_err(-ENOMEM, "mount: no memory");
	rc = ns_mount_open(ns, c);
	if (rc == 0 && !ns->ns_ro)
		rc = ns_writeback_start(ns);
	if (rc != 0) {
		ns_destroy(ns);
		return rc;
	}
	*out = ns;
	return 0;
}

int ns_umount(struct ns *ns)
{
	int rc, rc2;

	if (ns == NULL)
		return 0;
	ns_writeback_stop(ns);
	rc = ns_writeback_all(ns);
	rc2 = ns_pend_drain(ns);
	ns_files_free(ns);
	ns_destroy(ns);
	return rc != 0 ? rc : rc2;
}

const struct ns_super *ns_super(const struct ns *ns)
{
	return &ns->ns_sb;
}

/* ---------------------------------------------------------------- names */

int ns_name_check(const char *name)
{
	size_t n;

	if (name == NULL)
		return ns_err(-EINVAL, "entry name is NULL");
	n = strnlen(name, NS_NAME_MAX + 1);
	if (n > NS_NAME_MAX)
		return ns_err(-ENAMETOOLONG, "entry \"%.40s...\": name longer "
			      "than %u bytes", name, NS_NAME_MAX);
	if (n == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    memchr(name, '/', n) != NULL)
		return ns_err(-EINVAL, "entry \"%s\": not a valid name (empty, "
			      "\".\", \"..\" or with '/')", name);
	return 0;
}

/* Read entry name of the open directory index ix (of dir) into *de. */
int ns_dirent_read(struct clovis_idx *ix, uint64_t dir, const char *name,
		   struct ns_dirent_rec *de)
{
	size_t vl = sizeof *de;
	int rc = ns_idx_get(ix, name, strlen(name), de, &vl);

	if (rc == -ENOENT)
		return ns_err(-ENOENT, "entry \"%s\" in directory %#" PRIx64
			      ": not found", name, dir);
	if (rc == -ENOBUFS || (rc == 0 && vl != sizeof *de))
		return ns_err(-EIO, "entry \"%s\" in directory %#" PRIx64
			      ": record of %zu bytes", name, dir, vl);
	if (rc == 0)
		ns_dirent_swap(de);
	return rc;
}

int ns_dirent_get(struct ns *ns, uint64_t dir, const char *name,
		  struct ns_dirent_rec *de)
{
	struct clovis_idx ix;
	int rc = ns_dir_open(ns, dir, &ix);

	return rc == 0 ? ns_dirent_read(&ix, dir, name, de) : rc;
}

int ns_getattr(struct ns *ns, uint64_t ino, struct ns_attr *out)
{
	struct ns_inode_rec r;
	int rc;

	if (ns == NULL || out == NULL)
		return ns_err(-EINVAL, "getattr: NULL argument");
	rc = ns_inode_get(ns, ino, &r, NULL);
	if (rc == 0)
		ns_rec_to_attr(ns, ino, &r, out);
	return rc;
}

int ns_getattr_gen(struct ns *ns, uint64_t ino, uint64_t gen,
		   struct ns_attr *out)
{
	int rc = ns_getattr(ns, ino, out);

	if (rc == -ENOENT)
		return ns_err(-ESTALE, "inode %#" PRIx64 " generation %#" PRIx64
			      ": the inode is gone", ino, gen);
	if (rc == 0 && out->gen != gen)
		return ns_err(-ESTALE, "inode %#" PRIx64 ": generation %#"
			      PRIx64 ", not %#" PRIx64, ino, out->gen, gen);
	return rc;
}

/* "." and ".." of directory parent. */
static int ns_lookup_dots(struct ns *ns, uint64_t parent, bool dotdot,
			  struct ns_attr *out)
{
	struct ns_inode_rec r;
	int rc = ns_inode_get(ns, parent, &r, NULL);

	if (rc == 0 && !S_ISDIR(r.it_mode))
		return ns_err(-ENOTDIR, "inode %#" PRIx64 ": not a directory",
			      parent);
	if (rc != 0)
		return rc;
	if (!dotdot) {
		ns_rec_to_attr(ns, parent, &r, out);
		return 0;
	}
	return ns_getattr(ns, r.it_parent, out);
}

/* Reads of an entry whose inode vanished meanwhile (ns_lookup()). */
#define NS_LOOKUP_TRIES 10

int ns_lookup(struct ns *ns, uint64_t parent, const char *name,
	      struct ns_attr *out)
{
	struct ns_dirent_rec de;
	int rc;

	if (ns == NULL || name == NULL || out == NULL)
		return ns_err(-EINVAL, "lookup: NULL argument");
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return ns_lookup_dots(ns, parent, name[1] == '.', out);
	rc = ns_name_check(name);
	/* A rename over the name (or its unlink and a create) may remove
	 * the inode the entry named between the two reads: a dtx's members
	 * apply one after another (clovis.h: atomicity, not isolation).
	 * Read the entry again; only an entry that keeps naming a missing
	 * inode is -ENOENT. */
	for (int tries = 0; rc == 0; tries++) {
		rc = ns_dirent_get(ns, parent, name, &de);
		if (rc == 0)
			rc = ns_getattr(ns, de.de_ino, out);
		if (rc != -ENOENT || tries == NS_LOOKUP_TRIES)
			break;
		if (ns_dirent_get(ns, parent, name, &de) != 0)
			break; /* the entry is gone too: -ENOENT */
		rc = 0;
		usleep(100u << (tries < 6 ? tries : 6));
	}
	return rc;
}

int ns_resolve(struct ns *ns, const char *path, struct ns_attr *out)
{
	char buf[NS_PATH_MAX + 1], *save = NULL;
	int rc;

	if (ns == NULL || path == NULL || out == NULL)
		return ns_err(-EINVAL, "resolve: NULL argument");
	if (path[0] != '/')
		return ns_err(-EINVAL, "resolve \"%.64s\": not an absolute "
			      "path", path);
	if (strnlen(path, NS_PATH_MAX + 1) > NS_PATH_MAX)
		return ns_err(-ENAMETOOLONG, "resolve: path longer than %u "
			      "bytes", NS_PATH_MAX);
	snprintf(buf, sizeof buf, "%s", path);
	rc = ns_getattr(ns, NS_ROOT_INO, out);
	for (char *c = strtok_r(buf, "/", &save); rc == 0 && c != NULL;
	     c = strtok_r(NULL, "/", &save))
		rc = ns_lookup(ns, out->ino, c, out);
	return rc;
}

/* -------------------------------------------------------------- creates */

/* A new inode's record: type and permissions from mode, times now. */
void ns_rec_new(struct ns_inode_rec *r, uint32_t mode, uint32_t uid,
		uint32_t gid)
{
	uint64_t now = ns_now_ns();

	memset(r, 0, sizeof *r);
	r->it_magic = NS_MAGIC;
	r->it_mode = mode;
	r->it_uid = uid;
	r->it_gid = gid;
	r->it_nlink = 1;
	r->it_atime_ns = r->it_mtime_ns = r->it_ctime_ns = r->it_btime_ns = now;
}

int ns_tx_dirent_put(struct ns_tx *t, struct clovis_idx *ix, const char *name,
		     uint64_t ino, uint32_t mode, bool overwrite)
{
	struct ns_dirent_rec de = {ino, mode & S_IFMT, 0};

	ns_dirent_swap(&de);
	return ns_tx_put(t, ix, name, strlen(name), &de, sizeof de, overwrite);
}

static int ns_tx_dirent_del(struct ns_tx *t, struct clovis_idx *ix,
			    const char *name)
{
	void *k = (void *)name;
	size_t kl = strlen(name);

	return ns_tx_del(t, ix, &k, &kl, 1);
}

/* One attempt at creating ino as parent/name (record r, for a directory
 * with its index and the parent's record pr): the dtx and its outcome.
 * Returns 0, -EAGAIN (the number was taken: draw again) or the error. */
static int ns_create_try(struct ns *ns, uint64_t parent, const char *name,
			 uint64_t ino, struct ns_inode_rec *r,
			 const char *target, struct ns_inode_rec *pr)
{
	struct clovis_id did = {NS_HI_DIR, ino};
	struct clovis_idx *pix, *dix;
	struct ns_tx t;
	int m_ino, m_de, m_dix = -1, rc;

	ns_tx_init(ns, &t);
	rc = ns_tx_dir(&t, parent, &pix);
	if (rc != 0) {
		ns_tx_abort(&t);
		return rc;
	}
	m_ino = ns_tx_inode_put(&t, ino, r, target, false);
	m_de = ns_tx_dirent_put(&t, pix, name, ino, r->it_mode, false);
	if (pr != NULL) {
		if (ns_tx_idx(&t, &did, false, &dix) == 0)
			m_dix = ns_tx_ent(&t, &dix->in_entity,
					  CLOVIS_EO_CREATE);
		ns_tx_inode_put(&t, parent, pr, NULL, true);
	}
	rc = ns_tx_commit(&t, "create");
	if (rc == -EEXIST && t.t_bad == m_de)
		return ns_err(-EEXIST, "entry \"%s\" in directory %#" PRIx64
			      ": exists", name, parent);
	if (rc == -EEXIST && t.t_bad >= 0 &&
	    (t.t_bad == m_ino || t.t_bad == m_dix))
		return -EAGAIN; /* the number is taken: draw again */
	return rc;
}

/* Check the parent of a new directory and count the new link in *pr. */
static int ns_parent_link(struct ns *ns, uint64_t parent,
			  struct ns_inode_rec *pr, uint64_t now)
{
	int rc = ns_inode_get(ns, parent, pr, NULL);

	if (rc == 0 && !S_ISDIR(pr->it_mode))
		return ns_err(-ENOTDIR, "inode %#" PRIx64 ": not a directory",
			      parent);
	if (rc == 0 && pr->it_nlink >= NS_LINK_MAX)
		return ns_err(-EMLINK, "directory %#" PRIx64 ": %u links "
			      "(NS_LINK_MAX)", parent, pr->it_nlink);
	if (rc != 0)
		return rc;
	pr->it_nlink++;
	pr->it_mtime_ns = pr->it_ctime_ns = now;
	return 0;
}

/*
 * Create parent/name with record r (its number, generation and, for a
 * directory, index and parent are chosen here).  A directory also counts
 * a link in its parent's record, so it locks the parent exclusively;
 * other creates only add an entry and share the parent's lock.
 */
static int ns_create(struct ns *ns, uint64_t parent, const char *name,
		     struct ns_inode_rec *r, const char *target,
		     struct ns_attr *out)
{
	bool dir = S_ISDIR(r->it_mode);
	struct ns_inode_rec pr;
	struct ns_lockset ls;
	uint64_t ino = 0;
	int rc = ns_rw_check(ns, "create");

	if (rc == 0)
		rc = ns_name_check(name);
	if (rc != 0)
		return rc;
	ns_ls_init(&ls);
	ns_ls_add(&ls, parent, dir);
	ns_ls_lock(ns, &ls);
	/* files and directories take their directory's block size */
	if (S_ISREG(r->it_mode) || dir) {
		rc = ns_inode_get(ns, parent, &pr, NULL);
		if (rc != 0) {
			ns_ls_unlock(ns, &ls);
			return rc;
		}
		r->it_block_shift = S_ISDIR(pr.it_mode) ? pr.it_block_shift : 0;
	}
	rc = -EAGAIN;
	for (uint32_t i = 0; rc == -EAGAIN && i < NS_CREATE_TRIES; i++) {
		ino = ns_rand64();
		r->it_gen = ns_rand64();
		if (dir) {
			r->it_nlink = 2;
			r->it_parent = parent;
			r->it_data = (struct clovis_id){NS_HI_DIR, ino};
			rc = ns_parent_link(ns, parent, &pr, r->it_ctime_ns);
			if (rc != 0)
				break;
		}
		rc = ns_create_try(ns, parent, name, ino, r, target,
				   dir ? &pr : NULL);
	}
	if (rc == -EAGAIN)
		rc = ns_err(-EIO, "create \"%s\": %u inode numbers drawn were "
			    "all taken", name, NS_CREATE_TRIES);
	if (rc == 0 && !dir)
		ns_file_touch(ns, parent, true);
	else if (rc == 0)
		ns_file_clean(ns, parent, &pr); /* its record is written */
	ns_ls_unlock(ns, &ls);
	if (rc == 0 && out != NULL)
		ns_rec_to_attr(ns, ino, r, out);
	return rc;
}

int ns_mknod(struct ns *ns, uint64_t parent, const char *name, uint32_t mode,
	     uint64_t rdev, uint32_t uid, uint32_t gid, struct ns_attr *out)
{
	struct ns_inode_rec r;
	uint32_t type = mode & S_IFMT;

	if (ns == NULL)
		return ns_err(-EINVAL, "mknod: NULL namespace");
	if (type == 0)
		type = S_IFREG;
	if (type != S_IFREG && type != S_IFIFO && type != S_IFSOCK &&
	    type != S_IFCHR && type != S_IFBLK)
		return ns_err(-EINVAL, "mknod \"%s\": mode %#o is not a file, "
			      "fifo, socket or device", name ? name : "",
			      mode);
	ns_rec_new(&r, type | (mode & 07777), uid, gid);
	r.it_rdev = type == S_IFCHR || type == S_IFBLK ? rdev : 0;
	return ns_create(ns, parent, name, &r, NULL, out);
}

int ns_mkdir(struct ns *ns, uint64_t parent, const char *name, uint32_t mode,
	     uint32_t uid, uint32_t gid, struct ns_attr *out)
{
	struct ns_inode_rec r;

	if (ns == NULL)
		return ns_err(-EINVAL, "mkdir: NULL namespace");
	ns_rec_new(&r, S_IFDIR | (mode & 07777), uid, gid);
	return ns_create(ns, parent, name, &r, NULL, out);
}

int ns_symlink(struct ns *ns, uint64_t parent, const char *name,
	       const char *target, uint32_t uid, uint32_t gid,
	       struct ns_attr *out)
{
	struct ns_inode_rec r;
	size_t tl;

	if (ns == NULL || target == NULL)
		return ns_err(-EINVAL, "symlink: NULL argument");
	tl = strnlen(target, NS_SYMLINK_MAX + 1);
	if (tl > NS_SYMLINK_MAX)
		return ns_err(-ENAMETOOLONG, "symlink \"%s\": target longer "
			      "than %u bytes", name ? name : "",
			      NS_SYMLINK_MAX);
	if (tl == 0)
		return ns_err(-ENOENT, "symlink \"%s\": empty target",
			      name ? name : "");
	ns_rec_new(&r, S_IFLNK | 0777, uid, gid);
	r.it_size = tl;
	r.it_target_len = (uint32_t)tl;
	return ns_create(ns, parent, name, &r, target, out);
}

int ns_readlink(struct ns *ns, uint64_t ino, char *buf, size_t size)
{
	char target[NS_SYMLINK_MAX + 1];
	struct ns_inode_rec r;
	int rc;

	if (ns == NULL || (buf == NULL && size > 0))
		return ns_err(-EINVAL, "readlink: NULL argument");
	rc = ns_inode_get(ns, ino, &r, target);
	if (rc != 0)
		return rc;
	if (!S_ISLNK(r.it_mode))
		return ns_err(-EINVAL, "readlink: inode %#" PRIx64 " is not a "
			      "symlink", ino);
	if (size < (size_t)r.it_target_len + 1)
		return ns_err(-ERANGE, "readlink: inode %#" PRIx64 ": target "
			      "of %u bytes and its NUL do not fit %zu", ino,
			      r.it_target_len, size);
	memcpy(buf, target, r.it_target_len + 1);
	return (int)r.it_target_len;
}

/* ------------------------------------------------------ links, removal */

int ns_link(struct ns *ns, uint64_t ino, uint64_t newparent,
	    const char *newname, struct ns_attr *out)
{
	char target[NS_SYMLINK_MAX + 1];
	struct ns_inode_rec r;
	struct clovis_idx *ix;
	struct ns_lockset ls;
	struct ns_tx t;
	int rc, m_de;

	if (ns == NULL)
		return ns_err(-EINVAL, "link: NULL namespace");
	rc = ns_rw_check(ns, "link");
	if (rc == 0)
		rc = ns_name_check(newname);
	if (rc != 0)
		return rc;
	ns_ls_init(&ls);
	ns_ls_add(&ls, newparent, false);
	ns_ls_add(&ls, ino, true);
	ns_ls_lock(ns, &ls);
	rc = ns_inode_get(ns, ino, &r, target);
	if (rc == 0 && S_ISDIR(r.it_mode))
		rc = ns_err(-EPERM, "link: inode %#" PRIx64 " is a directory",
			    ino);
	if (rc == 0 && r.it_nlink >= NS_LINK_MAX)
		rc = ns_err(-EMLINK, "link: inode %#" PRIx64 " has %u links "
			    "(NS_LINK_MAX)", ino, r.it_nlink);
	if (rc == 0) {
		ns_tx_init(ns, &t);
		rc = ns_tx_dir(&t, newparent, &ix);
		if (rc != 0)
			ns_tx_abort(&t);
	}
	if (rc == 0) {
		r.it_nlink++;
		r.it_ctime_ns = ns_now_ns();
		m_de = ns_tx_dirent_put(&t, ix, newname, ino, r.it_mode, false);
		ns_tx_inode_put(&t, ino, &r, target, true);
		rc = ns_tx_commit(&t, "link");
		if (rc == -EEXIST && t.t_bad == m_de)
			rc = ns_err(-EEXIST, "link: entry \"%s\" in "
				    "directory %#" PRIx64 ": exists", newname,
				    newparent);
	}
	if (rc == 0)
		ns_file_touch(ns, newparent, true);
	ns_ls_unlock(ns, &ls);
	if (rc == 0 && out != NULL)
		ns_rec_to_attr(ns, ino, &r, out);
	return rc;
}

/* Add to t the DELETE of entity e (initialised: rc its init's result),
 * inode ino's directory index or data object (what, for the message),
 * opened first: on a cluster an index DELETE names the incarnation its
 * open found (without it every rmdir there was refused), and an entity
 * already gone (deleted by its S3 writer, or a crash of another process
 * between its ops) must not fail the removal of the inode that names
 * it. */
static int ns_tx_ent_drop(struct ns_tx *t, uint64_t ino, const char *what,
			  struct clovis_entity *e, int rc)
{
	if (rc == 0)
		rc = ns_ent_sync(e, CLOVIS_EO_OPEN);
	if (rc == -ENOENT)
		return 0;
	if (rc != 0)
		return ns_tx_fail(t, ns_err(rc, "inode %#" PRIx64 ": %s: %s",
					    ino, what, clovis_errmsg()));
	return ns_tx_ent(t, e, CLOVIS_EO_DELETE);
}

int ns_tx_inode_drop(struct ns_tx *t, uint64_t ino,
		     const struct ns_inode_rec *r)
{
	struct clovis_realm *realm = &t->t_ns->ns_co.co_realm;
	uint8_t key[NS_INO_KEY];
	void *k = key;
	size_t kl = sizeof key;
	struct clovis_idx *dix;
	struct clovis_obj *o;
	int rc;

	ns_ino_key(ino, key);
	rc = ns_tx_del(t, &t->t_ns->ns_inodes, &k, &kl, 1);
	if (rc >= 0)
		rc = ns_tx_xattrs_drop(t, ino);
	if (rc < 0)
		return rc;
	if (S_ISDIR(r->it_mode)) {
		struct clovis_id did = {NS_HI_DIR, ino};

		dix = ns_tx_mem(t, sizeof *dix);
		if (dix == NULL)
			return -ENOMEM;
		return ns_tx_ent_drop(t, ino, "directory index",
				      &dix->in_entity,
				      clovis_idx_init(dix, realm, &did));
	}
	if (!S_ISREG(r->it_mode) || !(r->it_flags & NS_IF_DATA))
		return 0;
	o = ns_tx_mem(t, sizeof *o);
	if (o == NULL)
		return -ENOMEM;
	return ns_tx_ent_drop(t, ino, "data object", &o->ob_entity,
			      clovis_obj_init(o, realm, &r->it_data, NULL));
}

/* Add to t the loss of one link of inode ino (record r, target): its
 * record with one link less, or its removal with the last one.  *gone
 * says which. */
int ns_tx_unlink_inode(struct ns_tx *t, uint64_t ino, struct ns_inode_rec *r,
		       const char *target, bool *gone)
{
	*gone = S_ISDIR(r->it_mode) || r->it_nlink <= 1;
	if (*gone)
		return ns_tx_inode_drop(t, ino, r);
	r->it_nlink--;
	r->it_ctime_ns = ns_now_ns();
	return ns_tx_inode_put(t, ino, r, target, true);
}

/* Lock parent (shared, or exclusive with excl_parent) and the inode that
 * parent/name names (exclusive), the entry read again under the locks
 * until it names the same inode.  On 0 the caller unlocks ls. */
static int ns_lock_entry(struct ns *ns, uint64_t parent, const char *name,
			 bool excl_parent, struct ns_dirent_rec *de,
			 struct ns_lockset *ls)
{
	struct ns_dirent_rec again;
	int rc = ns_dirent_get(ns, parent, name, de);

	for (uint32_t i = 0; rc == 0 && i < NS_RETRY_MAX; i++) {
		ns_ls_init(ls);
		ns_ls_add(ls, parent, excl_parent);
		ns_ls_add(ls, de->de_ino, true);
		ns_ls_lock(ns, ls);
		rc = ns_dirent_get(ns, parent, name, &again);
		if (rc == 0 && again.de_ino == de->de_ino) {
			*de = again;
			return 0;
		}
		ns_ls_unlock(ns, ls);
		*de = again;
	}
	return rc != 0 ? rc : ns_err(-EAGAIN, "entry \"%s\" in directory %#"
				     PRIx64 ": changes too fast", name, parent);
}

int ns_unlink(struct ns *ns, uint64_t parent, const char *name)
{
	char target[NS_SYMLINK_MAX + 1];
	struct ns_dirent_rec de;
	struct ns_inode_rec r;
	struct clovis_idx *ix;
	struct ns_lockset ls;
	struct ns_tx t;
	bool gone = false;
	int rc;

	if (ns == NULL)
		return ns_err(-EINVAL, "unlink: NULL namespace");
	rc = ns_rw_check(ns, "unlink");
	if (rc == 0)
		rc = ns_name_check(name);
	if (rc == 0)
		rc = ns_lock_entry(ns, parent, name, false, &de, &ls);
	if (rc != 0)
		return rc;
	rc = ns_inode_get(ns, de.de_ino, &r, target);
	if (rc == 0 && S_ISDIR(r.it_mode))
		rc = ns_err(-EISDIR, "unlink: entry \"%s\" in directory %#"
			    PRIx64 " is a directory", name, parent);
	if (rc == 0 || rc == -ENOENT) { /* an entry of no inode goes alone */
		bool dangling = rc == -ENOENT;

		ns_tx_init(ns, &t);
		if (ns_tx_dir(&t, parent, &ix) == 0 &&
		    ns_tx_dirent_del(&t, ix, name) >= 0 && !dangling)
			ns_tx_unlink_inode(&t, de.de_ino, &r, target, &gone);
		rc = ns_tx_commit(&t, "unlink");
	}
	if (rc == 0 && gone)
		ns_file_forget(ns, de.de_ino);
	else if (rc == 0)
		ns_file_touch(ns, de.de_ino, false);
	if (rc == 0)
		ns_file_touch(ns, parent, true);
	ns_ls_unlock(ns, &ls);
	return rc;
}

/* Is directory dir empty?  0 yes, -ENOTEMPTY, or an error. */
static int ns_dir_empty(struct ns *ns, uint64_t dir)
{
	char kb[CLOVIS_KEY_MAX], vb[sizeof(struct ns_dirent_rec)];
	void *kp = kb, *vp = vb;
	size_t kl = 0, vl = sizeof vb;
	struct clovis_bufvec keys = {1, &kp, &kl}, vals = {1, &vp, &vl};
	struct clovis_idx ix;
	struct clovis_op *op;
	int32_t rcs = 0;
	int rc = ns_dir_open(ns, dir, &ix);

	if (rc != 0)
		return rc;
	rc = clovis_idx_op(&ix, CLOVIS_IC_NEXT, &keys, &vals, &rcs,
			   CLOVIS_IF_CALLER_BUFS, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		return ns_err(rc, "directory %#" PRIx64 ": NEXT: %s", dir,
			      clovis_errmsg());
	if (rcs == -ENOENT)
		return 0;
	return ns_err(-ENOTEMPTY, "directory %#" PRIx64 " is not empty", dir);
}

int ns_rmdir(struct ns *ns, uint64_t parent, const char *name)
{
	struct ns_inode_rec r, pr;
	struct ns_dirent_rec de;
	struct clovis_idx *ix;
	struct ns_lockset ls;
	struct ns_tx t;
	int rc;

	if (ns == NULL)
		return ns_err(-EINVAL, "rmdir: NULL namespace");
	rc = ns_rw_check(ns, "rmdir");
	if (rc == 0 && name != NULL && strcmp(name, "..") == 0)
		return ns_err(-ENOTEMPTY, "rmdir \"..\"");
	if (rc == 0)
		rc = ns_name_check(name);
	if (rc == 0)
		rc = ns_lock_entry(ns, parent, name, true, &de, &ls);
	if (rc != 0)
		return rc;
	rc = ns_inode_get(ns, de.de_ino, &r, NULL);
	if (rc == 0 && !S_ISDIR(r.it_mode))
		rc = ns_err(-ENOTDIR, "rmdir: entry \"%s\" in directory %#"
			    PRIx64 " is not a directory", name, parent);
	if (rc == 0)
		rc = ns_dir_empty(ns, de.de_ino);
	if (rc == 0)
		rc = ns_inode_get(ns, parent, &pr, NULL);
	if (rc == 0) {
		pr.it_nlink = pr.it_nlink > 2 ? pr.it_nlink - 1 : 2;
		pr.it_mtime_ns = pr.it_ctime_ns = ns_now_ns();
		ns_tx_init(ns, &t);
		if (ns_tx_dir(&t, parent, &ix) == 0 &&
		    ns_tx_dirent_del(&t, ix, name) >= 0 &&
		    ns_tx_inode_drop(&t, de.de_ino, &r) >= 0)
			ns_tx_inode_put(&t, parent, &pr, NULL, true);
		rc = ns_tx_commit(&t, "rmdir");
	}
	if (rc == 0) {
		ns_file_forget(ns, de.de_ino);
		ns_file_clean(ns, parent, &pr);
	}
	ns_ls_unlock(ns, &ls);
	return rc;
}

/* --------------------------------------------------------------- rename */

/* A rename's state: its two entries, their inodes and their parents. */
struct ns_ren {
	uint64_t rn_p, rn_np;
	const char *rn_n, *rn_nn;
	uint32_t rn_flags;
	struct ns_dirent_rec rn_s, rn_d; /* the source and target entries */
	bool rn_has_d;
	bool rn_s_dir, rn_d_dir;
	bool rn_d_gone;                  /* the target inode goes */
	struct ns_inode_rec rn_sr, rn_dr, rn_pr, rn_npr;
	struct ns_inode_rec *rn_npr_p;   /* &rn_pr when one parent */
	bool rn_sr_put, rn_dr_put, rn_parents_put;
	char rn_st[NS_SYMLINK_MAX + 1], rn_dt[NS_SYMLINK_MAX + 1];
};

/* Read both entries (the target may be missing: rn_has_d false). */
static int ns_ren_look(struct ns *ns, struct ns_ren *rn,
		       struct ns_dirent_rec *s, struct ns_dirent_rec *d,
		       bool *has_d)
{
	struct clovis_idx ix;
	int rc = ns_dirent_get(ns, rn->rn_p, rn->rn_n, s);

	*has_d = false;
	if (rc == 0)
		rc = ns_dir_open(ns, rn->rn_np, &ix);
	if (rc != 0)
		return rc;
	rc = ns_dirent_read(&ix, rn->rn_np, rn->rn_nn, d);
	*has_d = rc == 0;
	return rc == -ENOENT ? 0 : rc;
}

/* -EINVAL when directory anc is dir or one of its ancestors. */
static int ns_ren_ancestry(struct ns *ns, uint64_t dir, uint64_t anc)
{
	struct ns_inode_rec r;

	for (uint32_t i = 0; i < NS_DEPTH_MAX; i++) {
		if (dir == anc)
			return ns_err(-EINVAL, "rename: directory %#" PRIx64
				      " would move into its own subtree", anc);
		if (dir == NS_ROOT_INO)
			return 0;
		if (ns_inode_get(ns, dir, &r, NULL) != 0)
			return -ENOENT;
		dir = r.it_parent;
	}
	return ns_err(-ELOOP, "rename: more than %u directories above %#"
		      PRIx64, NS_DEPTH_MAX, dir);
}

/* The inodes' records and what rename(2) refuses. */
static int ns_ren_check(struct ns *ns, struct ns_ren *rn)
{
	bool xchg = rn->rn_flags & NS_RENAME_EXCHANGE;
	bool cross = rn->rn_p != rn->rn_np;
	int rc = ns_inode_get(ns, rn->rn_s.de_ino, &rn->rn_sr, rn->rn_st);

	if (rc == 0 && rn->rn_has_d)
		rc = ns_inode_get(ns, rn->rn_d.de_ino, &rn->rn_dr, rn->rn_dt);
	if (rc != 0)
		return rc;
	rn->rn_s_dir = S_ISDIR(rn->rn_sr.it_mode);
	rn->rn_d_dir = rn->rn_has_d && S_ISDIR(rn->rn_dr.it_mode);
	if (!xchg && rn->rn_has_d && rn->rn_s_dir && !rn->rn_d_dir)
		return ns_err(-ENOTDIR, "rename: target \"%s\" is not a "
			      "directory", rn->rn_nn);
	if (!xchg && rn->rn_has_d && !rn->rn_s_dir && rn->rn_d_dir)
		return ns_err(-EISDIR, "rename: target \"%s\" is a directory",
			      rn->rn_nn);
	if (!xchg && rn->rn_d_dir)
		rc = ns_dir_empty(ns, rn->rn_d.de_ino);
	if (rc == 0 && cross && rn->rn_s_dir)
		rc = ns_ren_ancestry(ns, rn->rn_np, rn->rn_s.de_ino);
	if (rc == 0 && cross && xchg && rn->rn_d_dir)
		rc = ns_ren_ancestry(ns, rn->rn_p, rn->rn_d.de_ino);
	return rc;
}

/* Links of the parents: a directory moving from one to the other, a
 * directory target replaced.  Reads the parents' records when needed. */
static int ns_ren_links(struct ns *ns, struct ns_ren *rn)
{
	bool xchg = rn->rn_flags & NS_RENAME_EXCHANGE;
	bool cross = rn->rn_p != rn->rn_np;
	int dp = 0, dnp = 0, rc;

	if (cross && rn->rn_s_dir) {
		dp--;
		dnp++;
		rn->rn_sr.it_parent = rn->rn_np;
		rn->rn_sr_put = true;
	}
	if (cross && xchg && rn->rn_d_dir) {
		dnp--;
		dp++;
		rn->rn_dr.it_parent = rn->rn_p;
		rn->rn_dr_put = true;
	}
	if (!xchg && rn->rn_d_dir)
		dnp--;
	if (dp == 0 && dnp == 0)
		return 0;
	rc = ns_inode_get(ns, rn->rn_p, &rn->rn_pr, NULL);
	rn->rn_npr_p = cross ? &rn->rn_npr : &rn->rn_pr;
	if (rc == 0 && cross)
		rc = ns_inode_get(ns, rn->rn_np, &rn->rn_npr, NULL);
	if (rc != 0)
		return rc;
	rn->rn_pr.it_nlink = (uint32_t)((int64_t)rn->rn_pr.it_nlink + dp);
	rn->rn_npr_p->it_nlink = (uint32_t)((int64_t)rn->rn_npr_p->it_nlink +
					    dnp);
	if (rn->rn_npr_p->it_nlink > NS_LINK_MAX ||
	    rn->rn_pr.it_nlink > NS_LINK_MAX)
		return ns_err(-EMLINK, "rename: directory %#" PRIx64 " would "
			      "have more than %u links", rn->rn_np,
			      NS_LINK_MAX);
	rn->rn_pr.it_mtime_ns = rn->rn_pr.it_ctime_ns = ns_now_ns();
	rn->rn_npr_p->it_mtime_ns = rn->rn_npr_p->it_ctime_ns =
		rn->rn_pr.it_mtime_ns;
	rn->rn_parents_put = true;
	return 0;
}

/* The entries' part of the dtx.  Returns the member that puts the new
 * name (its -EEXIST: a target appeared meanwhile). */
static int ns_ren_entries(struct ns_tx *t, struct ns_ren *rn,
			  struct clovis_idx *pix, struct clovis_idx *npix)
{
	const struct ns_dirent_rec *s = &rn->rn_s, *d = &rn->rn_d;
	int m;

	if (rn->rn_flags & NS_RENAME_EXCHANGE) {
		ns_tx_dirent_put(t, pix, rn->rn_n, d->de_ino, d->de_type, true);
		return ns_tx_dirent_put(t, npix, rn->rn_nn, s->de_ino,
					s->de_type, true);
	}
	ns_tx_dirent_del(t, pix, rn->rn_n);
	m = ns_tx_dirent_put(t, npix, rn->rn_nn, s->de_ino, s->de_type,
			     rn->rn_has_d);
	if (rn->rn_has_d)
		ns_tx_unlink_inode(t, rn->rn_d.de_ino, &rn->rn_dr, rn->rn_dt,
				   &rn->rn_d_gone);
	return m;
}

/* Build and commit the rename's dtx (locks held, entries read). */
static int ns_ren_commit(struct ns *ns, struct ns_ren *rn)
{
	struct clovis_idx *pix = NULL, *npix = NULL;
	struct ns_tx t;
	int rc = ns_ren_check(ns, rn), m;

	if (rc == 0)
		rc = ns_ren_links(ns, rn);
	if (rc != 0)
		return rc;
	ns_tx_init(ns, &t);
	rc = ns_tx_dir(&t, rn->rn_p, &pix);
	npix = pix;
	if (rc == 0 && rn->rn_p != rn->rn_np)
		rc = ns_tx_dir(&t, rn->rn_np, &npix);
	if (rc != 0) {
		ns_tx_abort(&t);
		return rc;
	}
	m = ns_ren_entries(&t, rn, pix, npix);
	if (rn->rn_sr_put)
		ns_tx_inode_put(&t, rn->rn_s.de_ino, &rn->rn_sr, rn->rn_st,
				true);
	if (rn->rn_dr_put)
		ns_tx_inode_put(&t, rn->rn_d.de_ino, &rn->rn_dr, rn->rn_dt,
				true);
	if (rn->rn_parents_put) {
		ns_tx_inode_put(&t, rn->rn_p, &rn->rn_pr, NULL, true);
		if (rn->rn_p != rn->rn_np)
			ns_tx_inode_put(&t, rn->rn_np, &rn->rn_npr, NULL, true);
	}
	rc = ns_tx_commit(&t, "rename");
	if (rc == -EEXIST && t.t_bad >= 0 && t.t_bad == m && !rn->rn_has_d)
		return -EAGAIN; /* a target appeared meanwhile */
	return rc;
}

/* What the cache learns from a committed rename (locks still held). */
static void ns_ren_done(struct ns *ns, struct ns_ren *rn)
{
	ns_file_touch(ns, rn->rn_s.de_ino, false);
	if (rn->rn_d_gone)
		ns_file_forget(ns, rn->rn_d.de_ino);
	else if (rn->rn_has_d)
		ns_file_touch(ns, rn->rn_d.de_ino, false);
	if (rn->rn_parents_put) {
		ns_file_clean(ns, rn->rn_p, &rn->rn_pr);
		ns_file_clean(ns, rn->rn_np, rn->rn_npr_p);
	} else {
		ns_file_touch(ns, rn->rn_p, true);
		ns_file_touch(ns, rn->rn_np, true);
	}
}

static bool ns_ren_same(const struct ns_dirent_rec *a,
			const struct ns_dirent_rec *b)
{
	return a->de_ino == b->de_ino && a->de_type == b->de_type;
}

/* One attempt: entries read, locks taken, entries read again (-EAGAIN
 * when they changed meanwhile), the dtx. */
static int ns_ren_try(struct ns *ns, struct ns_ren *rn)
{
	struct ns_dirent_rec s2 = {0}, d2 = {0};
	struct ns_lockset ls;
	bool has_d2, dirs;
	int rc;

	rc = ns_ren_look(ns, rn, &rn->rn_s, &rn->rn_d, &rn->rn_has_d);
	if (rc == 0 && rn->rn_has_d && (rn->rn_flags & NS_RENAME_NOREPLACE))
		return ns_err(-EEXIST, "rename: target \"%s\" in directory %#"
			      PRIx64 " exists", rn->rn_nn, rn->rn_np);
	if (rc == 0 && !rn->rn_has_d && (rn->rn_flags & NS_RENAME_EXCHANGE))
		return ns_err(-ENOENT, "rename: target \"%s\" in directory %#"
			      PRIx64 ": not found", rn->rn_nn, rn->rn_np);
	if (rc != 0 || (rn->rn_has_d && rn->rn_d.de_ino == rn->rn_s.de_ino))
		return rc; /* one inode under both names: nothing to do */
	dirs = rn->rn_s.de_type == S_IFDIR ||
	       (rn->rn_has_d && rn->rn_d.de_type == S_IFDIR);
	ns_ls_init(&ls);
	ns_ls_add(&ls, rn->rn_p, dirs);
	ns_ls_add(&ls, rn->rn_np, dirs);
	ns_ls_add(&ls, rn->rn_s.de_ino, true);
	if (rn->rn_has_d)
		ns_ls_add(&ls, rn->rn_d.de_ino, true);
	ns_ls_lock(ns, &ls);
	rc = ns_ren_look(ns, rn, &s2, &d2, &has_d2);
	if (rc == 0 && (!ns_ren_same(&s2, &rn->rn_s) ||
			has_d2 != rn->rn_has_d ||
			(has_d2 && !ns_ren_same(&d2, &rn->rn_d))))
		rc = -EAGAIN;
	if (rc == 0)
		rc = ns_ren_commit(ns, rn);
	if (rc == 0)
		ns_ren_done(ns, rn);
	ns_ls_unlock(ns, &ls);
	return rc;
}

static int ns_ren_args(struct ns *ns, const char *name, const char *newname,
		       uint32_t flags)
{
	int rc = ns_rw_check(ns, "rename");

	if (rc == 0 && ((flags & ~(NS_RENAME_NOREPLACE | NS_RENAME_EXCHANGE)) ||
			flags == (NS_RENAME_NOREPLACE | NS_RENAME_EXCHANGE)))
		rc = ns_err(-EINVAL, "rename: flags %#x", flags);
	if (rc == 0)
		rc = ns_name_check(name);
	if (rc == 0)
		rc = ns_name_check(newname);
	return rc;
}

/*
 * rename(2) in one dtx.  Moves across directories are serialised in the
 * mount (ns_rename_lock), as the kernel serialises them, so the walk up
 * that refuses a move into its own subtree sees a tree nobody else moves.
 */
int ns_rename(struct ns *ns, uint64_t parent, const char *name,
	      uint64_t newparent, const char *newname, uint32_t flags)
{
	struct ns_ren *rn;
	int rc;

	if (ns == NULL)
		return ns_err(-EINVAL, "rename: NULL namespace");
	rc = ns_ren_args(ns, name, newname, flags);
	if (rc != 0)
		return rc;
	rn = calloc(1, sizeof *rn);
	if (rn == NULL)
		return ns_err(-ENOMEM, "rename: no memory");
	if (parent != newparent)
		pthread_mutex_lock(&ns->ns_rename_lock);
	rc = -EAGAIN;
	for (uint32_t i = 0; rc == -EAGAIN && i < NS_RETRY_MAX; i++) {
		memset(rn, 0, sizeof *rn);
		*rn = (struct ns_ren){.rn_p = parent, .rn_np = newparent,
				      .rn_n = name, .rn_nn = newname,
				      .rn_flags = flags};
		rn->rn_npr_p = &rn->rn_pr;
		rc = ns_ren_try(ns, rn);
	}
	if (parent != newparent)
		pthread_mutex_unlock(&ns->ns_rename_lock);
	free(rn);
	if (rc == -EAGAIN)
		rc = ns_err(-EAGAIN, "rename \"%s\": entries change too fast",
			    name);
	return rc;
}

/* ----------------------------------------------------------- readdir */

int ns_walk_init(struct ns_walk *w, uint32_t nr, size_t vmax)
{
	memset(w, 0, sizeof *w);
	w->w_nr = nr;
	w->w_vmax = vmax;
	w->w_keys = malloc((size_t)nr * CLOVIS_KEY_MAX);
	w->w_vals = vmax ? malloc((size_t)nr * vmax) : NULL;
	w->w_kp = calloc(nr, sizeof *w->w_kp);
	w->w_vp = calloc(nr, sizeof *w->w_vp);
	w->w_kl = calloc(nr, sizeof *w->w_kl);
	w->w_vl = calloc(nr, sizeof *w->w_vl);
	w->w_rcs = calloc(nr, sizeof *w->w_rcs);
	if (w->w_keys == NULL || (vmax && w->w_vals == NULL) ||
	    w->w_kp == NULL || w->w_vp == NULL || w->w_kl == NULL ||
	    w->w_vl == NULL || w->w_rcs == NULL)
		return ns_err(-ENOMEM, "walk buffers of %u records", nr);
	return 0;
}

void ns_walk_fini(struct ns_walk *w)
{
	free(w->w_keys);
	free(w->w_vals);
	free(w->w_kp);
	free(w->w_vp);
	free(w->w_kl);
	free(w->w_vl);
	free(w->w_rcs);
}

/* One NEXT of nr slots from the key in slot 0 (w_kl[0] bytes), after it
 * when excl.  Slot k's record: w_rcs[k], key w_kp[k] (w_kl[k] bytes). */
int ns_walk_next(struct clovis_idx *ix, struct ns_walk *w, uint32_t nr,
		 bool excl)
{
	struct clovis_bufvec keys = {nr, w->w_kp, w->w_kl};
	struct clovis_bufvec vals = {nr, w->w_vp, w->w_vl};
	struct clovis_op *op;
	int rc;

	for (uint32_t k = 0; k < nr; k++) {
		w->w_kp[k] = w->w_keys + (size_t)k * CLOVIS_KEY_MAX;
		if (k > 0)
			w->w_kl[k] = CLOVIS_KEY_MAX;
		w->w_vp[k] = w->w_vmax ? w->w_vals + k * w->w_vmax
				       : (void *)&w->w_dummy;
		w->w_vl[k] = w->w_vmax;
	}
	rc = clovis_idx_op(ix, CLOVIS_IC_NEXT, &keys, &vals, w->w_rcs,
			   CLOVIS_IF_CALLER_BUFS |
			   (excl ? CLOVIS_IF_EXCLUDE_START_KEY : 0), &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc;
}

/* Slot k's key becomes the start of the next NEXT (slot 0). */
void ns_walk_restart(struct ns_walk *w, uint32_t k)
{
	memmove(w->w_keys, w->w_keys + (size_t)k * CLOVIS_KEY_MAX, w->w_kl[k]);
	w->w_kl[0] = w->w_kl[k];
}

/* Decode slot k of a directory walk into *e. */
static int ns_readdir_slot(struct ns_walk *w, uint32_t k, uint64_t dir,
			   struct ns_dirent *e)
{
	struct ns_dirent_rec de;

	if (w->w_rcs[k] != 0 || w->w_kl[k] == 0 || w->w_kl[k] > NS_NAME_MAX ||
	    w->w_vl[k] != sizeof de)
		return ns_err(-EIO, "directory %#" PRIx64 ": bad entry (rc %d, "
			      "key %zu, value %zu bytes)", dir, w->w_rcs[k],
			      w->w_kl[k], w->w_vl[k]);
	memcpy(&de, w->w_vp[k], sizeof de);
	ns_dirent_swap(&de);
	e->ino = de.de_ino;
	e->type = de.de_type;
	memcpy(e->name, w->w_kp[k], w->w_kl[k]);
	e->name[w->w_kl[k]] = '\0';
	return 0;
}

#define NS_READDIR_PAGE 256u /* entries per NEXT */

int ns_readdir(struct ns *ns, uint64_t dir, const char *after,
	       struct ns_dirent *out, int max)
{
	struct clovis_idx ix;
	struct ns_walk w;
	bool excl = after != NULL && after[0] != '\0', more = true;
	int n = 0, rc;

	if (ns == NULL || out == NULL || max <= 0)
		return ns_err(-EINVAL, "readdir: NULL argument or max %d", max);
	if (excl && strnlen(after, NS_NAME_MAX + 1) > NS_NAME_MAX)
		return ns_err(-ENAMETOOLONG, "readdir: start name too long");
	rc = ns_dir_open(ns, dir, &ix);
	if (rc != 0)
		return rc;
	rc = ns_walk_init(&w, (uint32_t)(max < (int)NS_READDIR_PAGE ?
					 max : (int)NS_READDIR_PAGE),
			  sizeof(struct ns_dirent_rec));
	if (rc != 0) {
		ns_walk_fini(&w); /* what it allocated before it failed */
		return rc;
	}
	w.w_kl[0] = excl ? strlen(after) : 0;
	memcpy(w.w_keys, excl ? after : "", w.w_kl[0]);
	while (rc == 0 && more && n < max) {
		uint32_t nr = (uint32_t)(max - n) < w.w_nr ? (uint32_t)(max - n)
							  : w.w_nr, k;

		rc = ns_walk_next(&ix, &w, nr, excl);
		if (rc != 0)
			rc = ns_err(rc, "directory %#" PRIx64 ": NEXT: %s", dir,
				    clovis_errmsg());
		for (k = 0; rc == 0 && k < nr && w.w_rcs[k] != -ENOENT; k++)
			rc = ns_readdir_slot(&w, k, dir, &out[n++]);
		more = k == nr;
		if (rc == 0 && more)
			ns_walk_restart(&w, nr - 1);
		excl = true;
	}
	ns_walk_fini(&w);
	return rc != 0 ? rc : n;
}

/* ----------------------------------------------------------- setattr */

static int ns_setattr_check(const struct ns_inode_rec *r, uint64_t ino,
			    const struct ns_attr *in, uint32_t valid)
{
	int rc = 0;

	if (valid & NS_SET_ATIME)
		rc = ns_ts_check(&in->atime, ino, "atime");
	if (rc == 0 && (valid & NS_SET_MTIME))
		rc = ns_ts_check(&in->mtime, ino, "mtime");
	if (rc == 0 && (valid & NS_SET_CTIME))
		rc = ns_ts_check(&in->ctime, ino, "ctime");
	if (rc != 0 || !(valid & NS_SET_SIZE))
		return rc;
	if (S_ISDIR(r->it_mode))
		return ns_err(-EISDIR, "setattr: inode %#" PRIx64 " is a "
			      "directory: no size to set", ino);
	if (!S_ISREG(r->it_mode))
		return ns_err(-EINVAL, "setattr: inode %#" PRIx64 " is not a "
			      "regular file: no size to set", ino);
	if (in->size > NS_FILE_MAX)
		return ns_err(-EFBIG, "setattr: inode %#" PRIx64 ": size %"
			      PRIu64 " past NS_FILE_MAX", ino, in->size);
	return 0;
}

/* The fields valid names, from in, into r (times now where asked). */
static void ns_setattr_apply(struct ns_inode_rec *r, const struct ns_attr *in,
			     uint32_t valid, uint64_t now)
{
	if (valid & NS_SET_MODE)
		r->it_mode = (r->it_mode & S_IFMT) | (in->mode & 07777);
	if (valid & NS_SET_UID)
		r->it_uid = in->uid;
	if (valid & NS_SET_GID)
		r->it_gid = in->gid;
	if (valid & NS_SET_ATIME)
		r->it_atime_ns = ns_ts_ns(&in->atime);
	if (valid & NS_SET_ATIME_NOW)
		r->it_atime_ns = now;
	if (valid & NS_SET_MTIME)
		r->it_mtime_ns = ns_ts_ns(&in->mtime);
	if (valid & NS_SET_MTIME_NOW)
		r->it_mtime_ns = now;
	r->it_ctime_ns = valid & NS_SET_CTIME ? ns_ts_ns(&in->ctime) : now;
}

int ns_setattr(struct ns *ns, uint64_t ino, const struct ns_attr *in,
	       uint32_t valid, struct ns_attr *out)
{
	char target[NS_SYMLINK_MAX + 1];
	struct ns_inode_rec r;
	struct ns_lockset ls;
	struct ns_tx t;
	int rc;

	if (ns == NULL || (in == NULL && valid != 0) || valid & ~0x1ffu)
		return ns_err(-EINVAL, "setattr: inode %#" PRIx64 ": bad "
			      "arguments (valid %#x)", ino, valid);
	rc = ns_rw_check(ns, "setattr");
	if (rc != 0)
		return rc;
	ns_ls_lock_one(ns, &ls, ino, true);
	rc = ns_inode_get(ns, ino, &r, target);
	if (rc == 0)
		rc = ns_setattr_check(&r, ino, in, valid);
	if (rc == 0) {
		uint64_t now = ns_now_ns();

		ns_tx_init(ns, &t);
		if ((valid & NS_SET_SIZE) && in->size != r.it_size) {
			if (ns_truncate_tx(ns, ino, &r, in->size, &t) == 0 &&
			    !(valid & (NS_SET_MTIME | NS_SET_MTIME_NOW)))
				r.it_mtime_ns = now;
		}
		ns_setattr_apply(&r, in, valid, now);
		ns_tx_inode_put(&t, ino, &r, target, true);
		rc = ns_tx_commit(&t, "setattr");
	}
	if (rc == 0)
		ns_file_clean(ns, ino, &r);
	ns_ls_unlock(ns, &ls);
	if (rc == 0 && out != NULL)
		ns_rec_to_attr(ns, ino, &r, out);
	return rc;
}
