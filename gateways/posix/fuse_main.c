/*
 * fuse_main.c — strata-fuse: the POSIX namespace of a container (ns.h)
 * served to the kernel through libfuse3's low-level API (issue 33).
 *
 *   strata-fuse [--data DIR | --cluster FILE] [--container ID] [--mkfs]
 *               [--block-size BYTES] [--dev-size BYTES] [--attr-timeout S]
 *               [--entry-timeout S] [--foreground|-f] [--read-only] [-d]
 *               [-o fuse_opt,...] MOUNTPOINT
 *
 * The store is an embedded one in DIR (./strata-data by default) or a
 * cluster described by FILE (docs/cluster.md), opened as strata-s3 opens
 * it; the namespace is that of container ID (the default container 0:1
 * unless told; a store holds one namespace, its indices having fixed ids:
 * ns.h).  --mkfs makes the namespace when the container has none.
 *
 * Node ids are the namespace's inode numbers (its root is 1, FUSE's root
 * id) and every entry carries the inode's generation, so (node id,
 * generation) names a file for ever: the mount can be exported over NFS
 * (FUSE_CAP_EXPORT_SUPPORT; Ganesha FSAL_VFS uses name_to_handle_at).  The
 * daemon keeps no per-node state but two small tables: how many times
 * each inode is open (for ns_release() at its last close), and which open
 * inodes lost their last name.  A file unlinked (or renamed over) while
 * open keeps its data until its last close, as POSIX wants: its last name
 * is moved into the hidden directory SF_ORPHANS of the root (never shown
 * to the kernel) and removed from there at the last release.
 *
 * Every write reaches ns_write() before write(2) returns (no write-back
 * cache: sf_init() says why) and fsync(2) is ns_fsync(): once it returns,
 * what this mount changed before is STABLE.  Permissions are the
 * kernel's (default_permissions; POSIX ACLs are refused, so the mode bits
 * are the whole story).  SIGTERM, SIGINT and SIGHUP unmount; the daemon
 * then writes back (ns_umount), closes the store and exits 0.
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <fuse_lowlevel.h>

#include "core/log.h"
#include "gateways/posix/ns.h"

/* The hidden directory of the root that keeps open files that lost their
 * last name (unlink or rename over them) until their last close.  Never
 * listed, looked up or made by the kernel. */
#define SF_ORPHANS NS_ORPHANS_NAME
/* Entries read ahead per ns_readdir() call of an open directory. */
#define SF_DIR_PAGE 64
/* Entries, and bytes of their names, of the last readdir reply an open
 * directory remembers: the kernel continues from inside its last reply
 * when the caller's getdents buffer filled up (a 4 KiB reply holds at
 * most 128 entries). */
#define SF_DIR_HIST 512
#define SF_DIR_HPOOL (16u << 10)
/* Buckets of the open-files table (a power of two). */
#define SF_OPEN_BUCKETS 1024
/* FUSE's largest write and read we ask for: 1 MiB, the ceiling of
 * libfuse 3's buffers (FUSE_MAX_MAX_PAGES pages). */
#define SF_IO_MAX (1u << 20)
/* Bounds of --attr-timeout and --entry-timeout (seconds). */
#define SF_TIMEOUT_MAX 86400.0

/* ------------------------------------------------------------- state */

/** The command line. */
struct sf_conf {
	const char *fc_data;      /* embedded store directory */
	const char *fc_cluster;   /* cluster file */
	struct clovis_id fc_container;
	bool fc_mkfs, fc_fg, fc_ro, fc_debug;
	uint64_t fc_block_size;   /* --mkfs: new files' block size; 0 default */
	uint64_t fc_dev_size;     /* embedded store created: device size */
	double fc_attr_s, fc_entry_s;
	const char *fc_mnt;
	char fc_fuse_opts[4096];  /* the -o options, comma-separated */
};

/** An open file: how many opens, and whether it lost its last name. */
struct sf_open {
	uint64_t o_ino;
	uint32_t o_count;
	bool o_orphan;            /* its one name is SF_ORPHANS/<ino> */
	bool o_gone;              /* a directory removed while open: */
	struct ns_attr o_attr;    /* its last attributes, for fstat(2) */
	struct sf_open *o_next;
};

/** The daemon. */
struct sf {
	struct clovis *s_cl;
	struct ns *s_ns;
	uint64_t s_orphans;       /* ino of SF_ORPHANS; 0 = none (read-only) */
	double s_attr_s, s_entry_s;
	pthread_mutex_t s_open_lock;
	/* Opens (read) against the removals that decide whether a file is
	 * open (write: unlink, rename): an open either is counted before
	 * the removal looks, or finds its inode gone and says ESTALE (the
	 * kernel then walks the path again), never reads a removed file. */
	pthread_rwlock_t s_name_lock;
	uint64_t s_nopen;         /* inodes in s_open */
	struct sf_open *s_open[SF_OPEN_BUCKETS];
};

static struct sf sf = {.s_open_lock = PTHREAD_MUTEX_INITIALIZER,
		       .s_name_lock = PTHREAD_RWLOCK_INITIALIZER};

/**
 * An open directory (fi->fh): where its listing is.  The entry at
 * position p ("." is 0, ".." 1, then the stored entries in name order)
 * is given with offset p + 1, the offset to continue after it.
 */
struct sf_dir {
	pthread_mutex_t d_lock;
	off_t d_pos;                  /* the position of the next entry */
	char d_last[NS_NAME_MAX + 1]; /* the last stored entry given; "" */
	int d_n, d_i;                 /* d_ents[d_i..d_n) follow d_last */
	struct ns_dirent d_ents[SF_DIR_PAGE];
	int d_nh;                     /* stored entries of the last reply: */
	off_t d_hoff[SF_DIR_HIST];    /* their offsets */
	uint32_t d_hname[SF_DIR_HIST];/* their names, in d_hpool */
	uint32_t d_hused;
	char d_hpool[SF_DIR_HPOOL];
};

/* ----------------------------------------------------------- helpers */

/* A negative errno from ns_* as FUSE's positive one; project codes
 * (CLOVIS_E*, >= 1000) and anything odd become EIO. */
static int sf_errno(int rc)
{
	return rc < 0 && rc > -1000 ? -rc : EIO;
}

/* Reply with ns_*'s error rc, its message logged at debug level (an
 * ENOENT of a lookup is the common case, not news). */
static void sf_reply_err(fuse_req_t req, int rc, const char *op, uint64_t ino,
			 const char *name)
{
	LOG_DEBUG("strata-fuse: %s %lu%s%s: %s: %s", op, (unsigned long)ino,
		  name ? "/" : "", name ? name : "", strerror(sf_errno(rc)),
		  ns_errmsg());
	fuse_reply_err(req, sf_errno(rc));
}

/* Whether parent/name is the hidden orphans directory. */
static bool sf_hidden(uint64_t parent, const char *name)
{
	return parent == NS_ROOT_INO && strcmp(name, SF_ORPHANS) == 0;
}

/* The entry FUSE wants for attr a.  The root's generation is 0 to the
 * kernel, which made the root inode with 0: another one would mark it
 * stale on a lookup of "..". */
static void sf_entry(const struct ns_attr *a, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof *e);
	e->ino = a->ino;
	e->generation = a->ino == NS_ROOT_INO ? 0 : a->gen;
	ns_attr_to_stat(a, &e->attr);
	e->attr_timeout = sf.s_attr_s;
	e->entry_timeout = sf.s_entry_s;
}

static void sf_reply_entry(fuse_req_t req, const struct ns_attr *a)
{
	struct fuse_entry_param e;

	sf_entry(a, &e);
	fuse_reply_entry(req, &e);
}

/*
 * The owner of a new inode in parent: the caller's uid and gid, but the
 * parent's gid when the parent is set-group-id, and then a new directory
 * is set-group-id too (what local file systems do; the kernel leaves it
 * to FUSE file systems).
 */
static int sf_owner(fuse_req_t req, uint64_t parent, uint32_t *mode,
		    uint32_t *uid, uint32_t *gid)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct ns_attr pa;
	int rc;

	*uid = ctx->uid;
	*gid = ctx->gid;
	rc = ns_getattr(sf.s_ns, parent, &pa);
	if (rc != 0)
		return rc;
	if (pa.mode & S_ISGID) {
		*gid = pa.gid;
		if (S_ISDIR(*mode))
			*mode |= S_ISGID;
	}
	return 0;
}

/* ------------------------------------------------------ open files */

static struct sf_open **sf_open_slot(uint64_t ino)
{
	struct sf_open **p = &sf.s_open[(ino * 0x9e3779b97f4a7c15ull) >> 54 &
					 (SF_OPEN_BUCKETS - 1)];

	while (*p != NULL && (*p)->o_ino != ino)
		p = &(*p)->o_next;
	return p;
}

/* One more open of ino.  0 or -ENOMEM. */
static int sf_open_get(uint64_t ino)
{
	struct sf_open **p, *o;
	int rc = 0;

	pthread_mutex_lock(&sf.s_open_lock);
	p = sf_open_slot(ino);
	if (*p == NULL) {
		o = calloc(1, sizeof *o);
		if (o == NULL) {
			rc = -ENOMEM;
			goto out_unlock;
		}
		o->o_ino = ino;
		*p = o;
		sf.s_nopen++;
	}
	(*p)->o_count++;
out_unlock:
	pthread_mutex_unlock(&sf.s_open_lock);
	return rc;
}

/* One open of ino fewer.  True when that was the last one, with *orphan
 * saying whether the inode lost its last name meanwhile. */
static bool sf_open_put(uint64_t ino, bool *orphan)
{
	struct sf_open **p, *o;
	bool last = false;

	*orphan = false;
	pthread_mutex_lock(&sf.s_open_lock);
	p = sf_open_slot(ino);
	o = *p;
	if (o != NULL && --o->o_count == 0) {
		*p = o->o_next;
		*orphan = o->o_orphan;
		last = true;
		sf.s_nopen--;
		free(o);
	}
	pthread_mutex_unlock(&sf.s_open_lock);
	return last;
}

static bool sf_open_busy(uint64_t ino)
{
	bool busy;

	pthread_mutex_lock(&sf.s_open_lock);
	busy = *sf_open_slot(ino) != NULL;
	pthread_mutex_unlock(&sf.s_open_lock);
	return busy;
}

/* Mark open inode ino an orphan, to go at its last close.  False when
 * it is not open any more (its last close came meanwhile): the caller
 * drops it at once. */
static bool sf_open_orphan(uint64_t ino)
{
	struct sf_open *o;

	pthread_mutex_lock(&sf.s_open_lock);
	o = *sf_open_slot(ino);
	if (o != NULL)
		o->o_orphan = true;
	pthread_mutex_unlock(&sf.s_open_lock);
	return o != NULL;
}

static void sf_orphan_name(uint64_t ino, char *buf, size_t size)
{
	snprintf(buf, size, "%016lx", (unsigned long)ino);
}

/*
 * Whether removing parent/name would drop the last link of a regular file
 * open through this mount: then *a is its attr and the caller keeps it
 * alive under SF_ORPHANS.  An error of the lookup is the caller's to meet
 * again (false).  Nothing open (a plain rm -r): no lookup.
 */
static bool sf_orphan_needed(uint64_t parent, const char *name,
			     struct ns_attr *a)
{
	bool any;

	pthread_mutex_lock(&sf.s_open_lock);
	any = sf.s_nopen > 0;
	pthread_mutex_unlock(&sf.s_open_lock);
	if (!any || sf.s_orphans == 0 ||
	    ns_lookup(sf.s_ns, parent, name, a) != 0)
		return false;
	return S_ISREG(a->mode) && a->nlink == 1 && sf_open_busy(a->ino);
}

/* The last close of an orphan: its last name goes, and its data with it. */
static void sf_orphan_drop(uint64_t ino)
{
	char name[32];
	int rc;

	sf_orphan_name(ino, name, sizeof name);
	rc = ns_unlink(sf.s_ns, sf.s_orphans, name);
	if (rc != 0)
		LOG_WARNING("strata-fuse: removing the unlinked file %lu: %s: %s",
			    (unsigned long)ino, strerror(sf_errno(rc)),
			    ns_errmsg());
}

/* ----------------------------------------------------------- names */

static void sf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ns_attr a;
	int rc;

	if (sf_hidden(parent, name)) {
		rc = -ENOENT;
	} else if (strcmp(name, ".") == 0) {
		/* The kernel asks "." of a node id that an NFS file handle
		 * names and it no longer caches: any inode, not only
		 * directories. */
		rc = ns_getattr(sf.s_ns, parent, &a);
	} else {
		rc = ns_lookup(sf.s_ns, parent, name, &a);
	}
	if (rc == -ENOENT) {
		/* A negative entry the kernel caches for the entry timeout;
		 * names made through this mount invalidate it at once. */
		struct fuse_entry_param e = {.entry_timeout = sf.s_entry_s};

		LOG_DEBUG("strata-fuse: lookup %lu/%s: %s", parent, name,
			  ns_errmsg());
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc != 0) {
		sf_reply_err(req, rc, "lookup", parent, name);
		return;
	}
	sf_reply_entry(req, &a);
}

/* No per-node state is kept: nothing to forget. */
static void sf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fuse_reply_none(req);
}

static void sf_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	fuse_reply_none(req);
}

/* Open directory ino was removed: keep a (nlink 0) for its fstat(2). */
static void sf_open_gone(uint64_t ino, const struct ns_attr *a)
{
	struct sf_open *o;

	pthread_mutex_lock(&sf.s_open_lock);
	o = *sf_open_slot(ino);
	if (o != NULL) {
		o->o_gone = true;
		o->o_attr = *a;
		o->o_attr.nlink = 0;
	}
	pthread_mutex_unlock(&sf.s_open_lock);
}

/* The attributes kept for removed open directory ino: true with *a. */
static bool sf_open_gone_attr(uint64_t ino, struct ns_attr *a)
{
	struct sf_open *o;
	bool gone;

	pthread_mutex_lock(&sf.s_open_lock);
	o = *sf_open_slot(ino);
	gone = o != NULL && o->o_gone;
	if (gone)
		*a = o->o_attr;
	pthread_mutex_unlock(&sf.s_open_lock);
	return gone;
}

/* Whether open inode ino lost its last name (kept under SF_ORPHANS). */
static bool sf_open_is_orphan(uint64_t ino)
{
	struct sf_open *o;
	bool orphan;

	pthread_mutex_lock(&sf.s_open_lock);
	o = *sf_open_slot(ino);
	orphan = o != NULL && o->o_orphan;
	pthread_mutex_unlock(&sf.s_open_lock);
	return orphan;
}

static void sf_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct ns_attr a;
	struct stat st;
	int rc = ns_getattr(sf.s_ns, ino, &a);

	if (rc == -ENOENT && sf_open_gone_attr(ino, &a))
		rc = 0; /* fstat(2) of a directory removed while open */
	/* An inode removed since the kernel's lookup (a rename replaced
	 * it): ESTALE makes stat(2) walk the path again (LOOKUP_REVAL),
	 * where ENOENT would say the name is missing while it is not. */
	if (rc == -ENOENT)
		rc = -ESTALE;
	if (rc != 0) {
		sf_reply_err(req, rc, "getattr", ino, NULL);
		return;
	}
	ns_attr_to_stat(&a, &st);
	/* fstat of an unlinked open file: no name left but our hidden one */
	if (a.nlink == 1 && sf_open_is_orphan(ino))
		st.st_nlink = 0;
	fuse_reply_attr(req, &st, sf.s_attr_s);
}

/* FUSE's setattr bits as ns_setattr()'s. */
static uint32_t sf_set_valid(int to_set)
{
	static const struct { int f; uint32_t n; } map[] = {
		{FUSE_SET_ATTR_MODE, NS_SET_MODE},
		{FUSE_SET_ATTR_UID, NS_SET_UID},
		{FUSE_SET_ATTR_GID, NS_SET_GID},
		{FUSE_SET_ATTR_SIZE, NS_SET_SIZE},
		{FUSE_SET_ATTR_CTIME, NS_SET_CTIME},
	};
	uint32_t v = 0;
	size_t i;

	for (i = 0; i < sizeof map / sizeof map[0]; i++)
		if (to_set & map[i].f)
			v |= map[i].n;
	/* "Now" comes with the plain bit set too: the clock is ours. */
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		v |= NS_SET_ATIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		v |= NS_SET_ATIME;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		v |= NS_SET_MTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		v |= NS_SET_MTIME;
	return v;
}

static void sf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct ns_attr in = {0}, out;
	struct stat st;
	int rc;

	in.ino = ino;
	in.mode = attr->st_mode & 07777;
	in.uid = attr->st_uid;
	in.gid = attr->st_gid;
	in.size = (uint64_t)attr->st_size;
	in.atime = attr->st_atim;
	in.mtime = attr->st_mtim;
	in.ctime = attr->st_ctim;
	rc = ns_setattr(sf.s_ns, ino, &in, sf_set_valid(to_set), &out);
	if (rc != 0) {
		sf_reply_err(req, rc, "setattr", ino, NULL);
		return;
	}
	ns_attr_to_stat(&out, &st);
	fuse_reply_attr(req, &st, sf.s_attr_s);
}

static void sf_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[NS_SYMLINK_MAX + 1];
	int rc = ns_readlink(sf.s_ns, ino, buf, sizeof buf);

	if (rc < 0) {
		sf_reply_err(req, rc, "readlink", ino, NULL);
		return;
	}
	fuse_reply_readlink(req, buf);
}

static void sf_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	uint32_t m = mode, uid, gid;
	struct ns_attr a;
	int rc = sf_hidden(parent, name) ? -EPERM : 0;

	if (rc == 0)
		rc = sf_owner(req, parent, &m, &uid, &gid);
	if (rc == 0)
		rc = ns_mknod(sf.s_ns, parent, name, m, rdev, uid, gid, &a);
	if (rc != 0) {
		sf_reply_err(req, rc, "mknod", parent, name);
		return;
	}
	sf_reply_entry(req, &a);
}

static void sf_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	uint32_t m = (mode & 07777) | S_IFDIR, uid, gid;
	struct ns_attr a;
	int rc = sf_hidden(parent, name) ? -EPERM : 0;

	if (rc == 0)
		rc = sf_owner(req, parent, &m, &uid, &gid);
	if (rc == 0)
		rc = ns_mkdir(sf.s_ns, parent, name, m, uid, gid, &a);
	if (rc != 0) {
		sf_reply_err(req, rc, "mkdir", parent, name);
		return;
	}
	sf_reply_entry(req, &a);
}

static void sf_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	uint32_t m = S_IFLNK | 0777, uid, gid;
	struct ns_attr a;
	int rc = sf_hidden(parent, name) ? -EPERM : 0;

	if (rc == 0)
		rc = sf_owner(req, parent, &m, &uid, &gid);
	if (rc == 0)
		rc = ns_symlink(sf.s_ns, parent, name, target, uid, gid, &a);
	if (rc != 0) {
		sf_reply_err(req, rc, "symlink", parent, name);
		return;
	}
	sf_reply_entry(req, &a);
}

static void sf_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct ns_attr a;
	int rc = sf_hidden(newparent, newname) ? -EPERM : 0;

	if (rc == 0)
		rc = ns_link(sf.s_ns, ino, newparent, newname, &a);
	if (rc != 0) {
		sf_reply_err(req, rc, "link", newparent, newname);
		return;
	}
	sf_reply_entry(req, &a);
}

/*
 * unlink: a regular file open through this mount that loses its last name
 * moves to SF_ORPHANS instead (one rename), and goes at its last close.
 */
static void sf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ns_attr a;
	char oname[32];
	int rc;

	pthread_rwlock_wrlock(&sf.s_name_lock);
	if (sf_hidden(parent, name)) {
		rc = -ENOENT;
	} else if (sf_orphan_needed(parent, name, &a)) {
		sf_orphan_name(a.ino, oname, sizeof oname);
		rc = ns_rename(sf.s_ns, parent, name, sf.s_orphans, oname, 0);
		if (rc == 0 && !sf_open_orphan(a.ino))
			sf_orphan_drop(a.ino);
	} else {
		rc = ns_unlink(sf.s_ns, parent, name);
	}
	pthread_rwlock_unlock(&sf.s_name_lock);
	if (rc != 0) {
		sf_reply_err(req, rc, "unlink", parent, name);
		return;
	}
	fuse_reply_err(req, 0);
}

static void sf_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ns_attr a;
	bool open = false;
	int rc = sf_hidden(parent, name) ? -ENOENT : 0;

	/* a directory open here keeps answering fstat(2) once removed */
	if (rc == 0 && ns_lookup(sf.s_ns, parent, name, &a) == 0)
		open = sf_open_busy(a.ino);
	if (rc == 0)
		rc = ns_rmdir(sf.s_ns, parent, name);
	if (rc == 0 && open)
		sf_open_gone(a.ino, &a);
	if (rc != 0) {
		sf_reply_err(req, rc, "rmdir", parent, name);
		return;
	}
	fuse_reply_err(req, 0);
}

/*
 * rename(2)/renameat2(2).  A target that is a regular file open through
 * this mount and would lose its last link gets a second link under
 * SF_ORPHANS first, so the rename stays one atomic change and the file
 * lives on until its last close.
 */
static void sf_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	uint32_t nf = 0;
	struct ns_attr a, l;
	bool orphan = false;
	char oname[32];
	int rc = 0;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		rc = -EINVAL; /* RENAME_WHITEOUT: overlayfs's, not ours */
	else if (sf_hidden(parent, name) || sf_hidden(newparent, newname))
		rc = -EPERM;
	if (rc != 0)
		goto out;
	nf |= flags & RENAME_NOREPLACE ? NS_RENAME_NOREPLACE : 0;
	nf |= flags & RENAME_EXCHANGE ? NS_RENAME_EXCHANGE : 0;
	pthread_rwlock_wrlock(&sf.s_name_lock);
	if (nf == 0 && sf_orphan_needed(newparent, newname, &a)) {
		sf_orphan_name(a.ino, oname, sizeof oname);
		rc = ns_link(sf.s_ns, a.ino, sf.s_orphans, oname, &l);
		if (rc != 0)
			goto out_unlock;
		orphan = true;
	}
	rc = ns_rename(sf.s_ns, parent, name, newparent, newname, nf);
	if (orphan && (rc != 0 || !sf_open_orphan(a.ino)))
		ns_unlink(sf.s_ns, sf.s_orphans, oname);
out_unlock:
	pthread_rwlock_unlock(&sf.s_name_lock);
out:
	if (rc != 0) {
		sf_reply_err(req, rc, "rename", parent, name);
		return;
	}
	fuse_reply_err(req, 0);
}

/* ------------------------------------------------------------ files */

/* Counts the open, and truncates for O_TRUNC (FUSE_CAP_ATOMIC_O_TRUNC
 * hands it to us).  0 or a negative errno (then nothing is counted). */
static int sf_open_file(uint64_t ino, int flags)
{
	struct ns_attr in = {.ino = ino, .size = 0}, a;
	bool orphan;
	int rc;

	pthread_rwlock_rdlock(&sf.s_name_lock);
	rc = ns_getattr(sf.s_ns, ino, &a); /* removed since the lookup? */
	if (rc == 0)
		rc = sf_open_get(ino);
	if (rc == 0 && (flags & O_TRUNC)) {
		rc = ns_setattr(sf.s_ns, ino, &in, NS_SET_SIZE, NULL);
		if (rc != 0)
			sf_open_put(ino, &orphan);
	}
	pthread_rwlock_unlock(&sf.s_name_lock);
	return rc;
}

/* The last close of ino: its size and times are written back; an orphan
 * goes. */
static void sf_close_file(uint64_t ino)
{
	bool orphan;
	int rc;

	if (!sf_open_put(ino, &orphan))
		return;
	rc = ns_release(sf.s_ns, ino);
	if (rc != 0)
		LOG_DEBUG("strata-fuse: release %lu: %s: %s",
			  (unsigned long)ino, strerror(sf_errno(rc)),
			  ns_errmsg());
	if (orphan)
		sf_orphan_drop(ino);
}

static void sf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = sf_open_file(ino, fi->flags);

	if (rc == -ENOENT)
		rc = -ESTALE; /* as getattr: open(2) then walks the path again */
	if (rc != 0) {
		sf_reply_err(req, rc, "open", ino, NULL);
		return;
	}
	/* An open the kernel gave up (interrupted) has no release. */
	if (fuse_reply_open(req, fi) == -ENOENT)
		sf_close_file(ino);
}

/*
 * create: O_CREAT|O_EXCL semantics through ns_mknod() (-EEXIST when the
 * name exists).  Without O_EXCL a name that appeared since the kernel's
 * lookup (another process of the store made it) is opened instead.
 */
static void sf_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	uint32_t m = (mode & 07777) | S_IFREG, uid, gid;
	struct fuse_entry_param e;
	struct ns_attr a;
	int rc = sf_hidden(parent, name) ? -EPERM : 0;
	int flags = fi->flags;

	if (rc == 0)
		rc = sf_owner(req, parent, &m, &uid, &gid);
	if (rc == 0)
		rc = ns_mknod(sf.s_ns, parent, name, m, 0, uid, gid, &a);
	if (rc == 0) {
		flags &= ~O_TRUNC; /* new: nothing to cut */
	} else if (rc == -EEXIST && !(fi->flags & O_EXCL)) {
		rc = ns_lookup(sf.s_ns, parent, name, &a);
		if (rc == 0 && S_ISDIR(a.mode))
			rc = -EISDIR;
		else if (rc == 0 && !S_ISREG(a.mode))
			rc = -EEXIST; /* a symlink, fifo ...: not for us to open */
	}
	if (rc == 0)
		rc = sf_open_file(a.ino, flags);
	if (rc == 0 && (flags & O_TRUNC)) {
		uint64_t ino = a.ino;

		rc = ns_getattr(sf.s_ns, ino, &a);
		if (rc != 0)
			sf_close_file(ino);
	}
	if (rc != 0) {
		sf_reply_err(req, rc, "create", parent, name);
		return;
	}
	sf_entry(&a, &e);
	if (fuse_reply_create(req, &e, fi) == -ENOENT)
		sf_close_file(a.ino);
}

static void sf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	void *buf = malloc(size ? size : 1);
	ssize_t n;

	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = ns_read(sf.s_ns, ino, buf, size, (uint64_t)off);
	if (n < 0)
		sf_reply_err(req, (int)n, "read", ino, NULL);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void sf_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	ssize_t n = ns_write(sf.s_ns, ino, buf, size, (uint64_t)off);

	if (n < 0) {
		sf_reply_err(req, (int)n, "write", ino, NULL);
		return;
	}
	fuse_reply_write(req, (size_t)n);
}

/* close(2) of one descriptor: nothing to do, every write already reached
 * the store (no write-back cache); the last close is release. */
static void sf_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void sf_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	sf_close_file(ino);
	fuse_reply_err(req, 0);
}

/* fsync(2) and fdatasync(2): returns once everything this mount changed
 * before is STABLE (ns_fsync()). */
static void sf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	int rc = ns_fsync(sf.s_ns, ino, datasync != 0);

	if (rc != 0) {
		sf_reply_err(req, rc, "fsync", ino, NULL);
		return;
	}
	fuse_reply_err(req, 0);
}

/* ------------------------------------------------------ directories */

static void sf_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct sf_dir *d = malloc(sizeof *d);

	if (d == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_init(&d->d_lock, NULL);
	d->d_pos = 0;
	d->d_last[0] = 0;
	d->d_n = d->d_i = 0;
	d->d_nh = 0;
	d->d_hused = 0;
	fi->fh = (uintptr_t)d;
	if (sf_open_get(ino) != 0) { /* counted, for a removal meanwhile */
		pthread_mutex_destroy(&d->d_lock);
		free(d);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (fuse_reply_open(req, fi) == -ENOENT) {
		bool orphan;

		sf_open_put(ino, &orphan);
		pthread_mutex_destroy(&d->d_lock);
		free(d);
	}
}

static void sf_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct sf_dir *d = (struct sf_dir *)(uintptr_t)fi->fh;
	bool orphan;

	sf_open_put(ino, &orphan); /* directories are never orphans */
	pthread_mutex_destroy(&d->d_lock);
	free(d);
	fuse_reply_err(req, 0);
}

/*
 * The next stored entry of directory ino after d_last, read ahead a page
 * at a time, the hidden orphans directory passed over.  1 with *e, 0 at
 * the end, or a negative errno.
 */
static int dir_peek(struct sf_dir *d, uint64_t ino, struct ns_dirent **e)
{
	int n;

	for (;;) {
		if (d->d_i >= d->d_n) {
			n = ns_readdir(sf.s_ns, ino, d->d_last, d->d_ents,
				       SF_DIR_PAGE);
			if (n <= 0)
				return n;
			d->d_n = n;
			d->d_i = 0;
		}
		*e = &d->d_ents[d->d_i];
		if (!sf_hidden(ino, (*e)->name))
			return 1;
		strcpy(d->d_last, (*e)->name);
		d->d_i++;
	}
}

/* Past the entry at d_pos: "." (0), ".." (1), then the stored ones. */
static void dir_take(struct sf_dir *d)
{
	if (d->d_pos >= 2) {
		strcpy(d->d_last, d->d_ents[d->d_i].name);
		d->d_i++;
	}
	d->d_pos++;
}

/* Remember the stored entry just given (offset d_pos, name d_last) as
 * part of this reply, while there is room. */
static void dir_hist_add(struct sf_dir *d)
{
	size_t len = strlen(d->d_last) + 1;

	if (d->d_nh == SF_DIR_HIST || d->d_hused + len > SF_DIR_HPOOL)
		return;
	d->d_hoff[d->d_nh] = d->d_pos;
	d->d_hname[d->d_nh++] = d->d_hused;
	memcpy(d->d_hpool + d->d_hused, d->d_last, len);
	d->d_hused += (uint32_t)len;
}

/* Continue after the entry given with offset off in the last reply;
 * false if it was not one of them. */
static bool dir_hist_resume(struct sf_dir *d, off_t off)
{
	int k;

	for (k = 0; k < d->d_nh; k++)
		if (d->d_hoff[k] == off) {
			strcpy(d->d_last, d->d_hpool + d->d_hname[k]);
			d->d_pos = off;
			d->d_n = d->d_i = 0;
			return true;
		}
	return false;
}

/*
 * Bring the listing to offset off.  The offset the kernel continues from
 * is the one this handle gave last (d_pos), or one inside its last reply
 * (the caller's buffer filled up): the listing resumes after that entry's
 * name, so entries made or removed meanwhile do not shift it.  Offsets up
 * to 2 ("." and "..") need no name.  Any other offset (a seekdir to an
 * older one) restarts from the first entry and skips off entries.
 */
static int dir_seek(struct sf_dir *d, uint64_t ino, off_t off)
{
	struct ns_dirent *e;
	int rc;

	if (off == d->d_pos || dir_hist_resume(d, off))
		return 0;
	d->d_pos = 0;
	d->d_last[0] = 0;
	d->d_n = d->d_i = 0;
	if (off <= 2) {
		d->d_pos = off < 0 ? 0 : off;
		return 0;
	}
	while (d->d_pos < off) {
		if (d->d_pos >= 2) {
			rc = dir_peek(d, ino, &e);
			if (rc <= 0)
				return rc;
		}
		dir_take(d);
	}
	return 0;
}

/* The inode number of ino's parent (for ".."), ino itself if unknown. */
static uint64_t dir_parent(uint64_t ino)
{
	struct ns_attr a;

	if (ino == NS_ROOT_INO || ns_lookup(sf.s_ns, ino, "..", &a) != 0)
		return ino;
	return a.ino;
}

/*
 * Add the entry at d_pos to buf (size bytes, used so far *used): with its
 * attributes for readdirplus.  1 when added, 0 when it does not fit or
 * the listing ended, a negative errno.
 */
static int dir_add(fuse_req_t req, struct sf_dir *d, uint64_t ino, bool plus,
		   char *buf, size_t size, size_t *used)
{
	struct fuse_entry_param e = {0};
	struct ns_dirent *de = NULL;
	const char *name;
	struct ns_attr a;
	size_t len;
	int rc;

	if (d->d_pos < 2) {
		name = d->d_pos == 0 ? "." : "..";
		e.attr.st_ino = d->d_pos == 0 ? ino : dir_parent(ino);
		e.attr.st_mode = S_IFDIR;
	} else {
		rc = dir_peek(d, ino, &de);
		if (rc <= 0)
			return rc;
		name = de->name;
		e.attr.st_ino = de->ino;
		e.attr.st_mode = de->type;
		/* Gone since the listing was read: a name without a node
		 * (ino 0 tells the kernel so). */
		if (plus && ns_getattr(sf.s_ns, de->ino, &a) == 0)
			sf_entry(&a, &e);
	}
	if (plus)
		len = fuse_add_direntry_plus(req, buf + *used, size - *used,
					     name, &e, d->d_pos + 1);
	else
		len = fuse_add_direntry(req, buf + *used, size - *used, name,
					&e.attr, d->d_pos + 1);
	if (len > size - *used)
		return 0;
	*used += len;
	dir_take(d);
	if (de != NULL)
		dir_hist_add(d);
	return 1;
}

static void sf_readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
			      off_t off, struct fuse_file_info *fi, bool plus)
{
	struct sf_dir *d = (struct sf_dir *)(uintptr_t)fi->fh;
	size_t used = 0;
	char *buf = malloc(size);
	int rc;

	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&d->d_lock);
	rc = dir_seek(d, ino, off);
	d->d_nh = 0;
	d->d_hused = 0;
	while (rc >= 0 && (rc = dir_add(req, d, ino, plus, buf, size,
					&used)) > 0)
		;
	pthread_mutex_unlock(&d->d_lock);
	/* A directory removed while open lists nothing (as getdents(2) on
	 * an unlinked directory): its index went with it. */
	if (rc < 0 && used == 0 && rc != -ENOENT)
		sf_reply_err(req, rc, "readdir", ino, NULL);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}

static void sf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	sf_readdir_common(req, ino, size, off, fi, false);
}

static void sf_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	sf_readdir_common(req, ino, size, off, fi, true);
}

static void sf_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	sf_fsync(req, ino, datasync, fi);
}

/* ------------------------------------------------------------ misc */

static void sf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	int rc = ns_statfs(sf.s_ns, &st);

	if (rc != 0) {
		sf_reply_err(req, rc, "statfs", ino, NULL);
		return;
	}
	fuse_reply_statfs(req, &st);
}

/*
 * POSIX ACLs are not supported (no FUSE_CAP_POSIX_ACL: the mode bits are
 * the permissions).  Without the capability the kernel hands their xattrs
 * ("system.posix_acl_access", "..._default") to us like any other; kept
 * as plain xattrs they would be ignored, and a tool that sets the mode
 * through an ACL (cp -a, coreutils' qset_acl) would never see its mode
 * applied.  Refused with EOPNOTSUPP, as a file system without ACLs does,
 * those tools fall back to chmod(2).
 */
static bool sf_xattr_acl(const char *name)
{
	return strncmp(name, "system.posix_acl_", 17) == 0;
}

static void sf_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	uint32_t nf = 0;
	int rc;

	if (sf_xattr_acl(name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	nf |= flags & XATTR_CREATE ? NS_XATTR_CREATE : 0;
	nf |= flags & XATTR_REPLACE ? NS_XATTR_REPLACE : 0;
	rc = ns_setxattr(sf.s_ns, ino, name, value, size, nf);
	if (rc != 0) {
		sf_reply_err(req, rc, "setxattr", ino, name);
		return;
	}
	fuse_reply_err(req, 0);
}

/* getxattr and listxattr: size 0 asks the size, else the bytes. */
static void sf_xattr_reply(fuse_req_t req, ssize_t n, const void *buf,
			   size_t size, const char *op, uint64_t ino,
			   const char *name)
{
	if (n < 0)
		sf_reply_err(req, (int)n, op, ino, name);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void sf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	void *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = sf_xattr_acl(name) ? -ENODATA
			       : ns_getxattr(sf.s_ns, ino, name, buf, size);
	sf_xattr_reply(req, n, buf, size, "getxattr", ino, name);
	free(buf);
}

static void sf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = ns_listxattr(sf.s_ns, ino, buf, size);
	sf_xattr_reply(req, n, buf, size, "listxattr", ino, NULL);
	free(buf);
}

static void sf_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	int rc = ns_removexattr(sf.s_ns, ino, name);

	if (rc != 0) {
		sf_reply_err(req, rc, "removexattr", ino, name);
		return;
	}
	fuse_reply_err(req, 0);
}

/*
 * What we ask of the kernel at INIT.  Export support (NFS file handles:
 * node id + generation); 1 MiB writes and read-ahead; O_TRUNC handed to
 * open; the kernel clears set-user-id bits itself (no HANDLE_KILLPRIV);
 * symlinks cached (their targets never change).
 *
 * The write-back cache stays off: with it the kernel would acknowledge
 * write(2) from its page cache and send the data later, so an fsync(2)
 * could return STABLE for data this daemon never saw, and a crash of the
 * daemon would lose writes already reported done.  Without it every write
 * reaches ns_write() before write(2) returns, and fsync means ns_fsync().
 */
static void sf_init(void *userdata, struct fuse_conn_info *conn)
{
	uint64_t want = FUSE_CAP_EXPORT_SUPPORT | FUSE_CAP_ATOMIC_O_TRUNC |
			FUSE_CAP_CACHE_SYMLINKS;

	conn->want |= conn->capable & want;
	conn->want &= ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE |
				  FUSE_CAP_HANDLE_KILLPRIV);
	conn->max_write = SF_IO_MAX;
	conn->max_read = SF_IO_MAX; /* as -o max_read (session_new()) */
	conn->max_readahead = SF_IO_MAX;
	if (!(conn->capable & FUSE_CAP_EXPORT_SUPPORT))
		fprintf(stderr, "strata-fuse: the kernel offers no export "
			"support: NFS file handles of this mount will not "
			"outlive its cache\n");
}

static const struct fuse_lowlevel_ops sf_ops = {
	.init = sf_init,
	.lookup = sf_lookup,
	.forget = sf_forget,
	.forget_multi = sf_forget_multi,
	.getattr = sf_getattr,
	.setattr = sf_setattr,
	.readlink = sf_readlink,
	.mknod = sf_mknod,
	.mkdir = sf_mkdir,
	.unlink = sf_unlink,
	.rmdir = sf_rmdir,
	.symlink = sf_symlink,
	.rename = sf_rename,
	.link = sf_link,
	.open = sf_open,
	.read = sf_read,
	.write = sf_write,
	.flush = sf_flush,
	.release = sf_release,
	.fsync = sf_fsync,
	.opendir = sf_opendir,
	.readdir = sf_readdir,
	.readdirplus = sf_readdirplus,
	.releasedir = sf_releasedir,
	.fsyncdir = sf_fsyncdir,
	.statfs = sf_statfs,
	.setxattr = sf_setxattr,
	.getxattr = sf_getxattr,
	.listxattr = sf_listxattr,
	.removexattr = sf_removexattr,
	.create = sf_create,
};

/* ------------------------------------------------------------ store */

/*
 * The hidden orphans directory: made when missing.  On an embedded store
 * this process is the only one with it open, so what is left there is
 * from a mount that ended without its last closes (killed): removed.  In
 * a cluster another mount may still hold those files open: left alone.
 */
static int orphans_setup(const struct sf_conf *c)
{
	struct ns_dirent *ents;
	struct ns_attr a;
	int rc, n, i;

	rc = ns_lookup(sf.s_ns, NS_ROOT_INO, SF_ORPHANS, &a);
	if (rc == -ENOENT)
		rc = ns_mkdir(sf.s_ns, NS_ROOT_INO, SF_ORPHANS, S_IFDIR | 0700,
			      0, 0, &a);
	if (rc != 0)
		return rc;
	sf.s_orphans = a.ino;
	if (c->fc_cluster != NULL)
		return 0;
	ents = malloc(SF_DIR_PAGE * sizeof *ents);
	if (ents == NULL)
		return -ENOMEM;
	while ((n = ns_readdir(sf.s_ns, a.ino, NULL, ents, SF_DIR_PAGE)) > 0)
		for (i = 0; i < n; i++) {
			rc = ns_unlink(sf.s_ns, a.ino, ents[i].name);
			if (rc != 0)
				goto out_free;
		}
	rc = n;
out_free:
	free(ents);
	return rc;
}

static int block_shift(uint64_t bytes)
{
	int s = 0;

	while ((1ull << s) < bytes)
		s++;
	return s;
}

/*
 * Open the namespace of the container.  --mkfs runs ns_mkfs() first: it
 * makes the namespace when the container has none (and finishes one a
 * crashed mkfs left half made), -EEXIST when there is one.
 */
static int namespace_open(const struct sf_conf *c)
{
	char id[CLOVIS_ID_STR_LEN];
	struct ns_opts o = {.read_only = c->fc_ro};
	struct ns_mkfs_opts mo = {0};
	char why[512] = "";
	bool made = false;
	int rc;

	clovis_id_format(&c->fc_container, id);
	if (c->fc_mkfs) {
		if (c->fc_block_size)
			mo.block_shift = (uint32_t)block_shift(c->fc_block_size);
		rc = ns_mkfs(sf.s_cl, &c->fc_container, &mo);
		if (rc != 0 && rc != -EEXIST) {
			fprintf(stderr, "strata-fuse: mkfs of container %s: "
				"%s: %s\n", id, strerror(sf_errno(rc)),
				ns_errmsg());
			return rc;
		}
		made = rc == 0;
		if (rc == -EEXIST)
			snprintf(why, sizeof why, "%s", ns_errmsg());
	}
	rc = ns_mount(sf.s_cl, &c->fc_container, &o, &sf.s_ns);
	if (rc == -ENOENT && !c->fc_mkfs) {
		fprintf(stderr, "strata-fuse: %s (--mkfs makes one)\n",
			ns_errmsg());
		return rc;
	}
	if (rc == -ENOENT && why[0]) {
		/* mkfs found a namespace, elsewhere in the store. */
		fprintf(stderr, "strata-fuse: container %s: %s\n", id, why);
		return rc;
	}
	if (rc != 0) {
		fprintf(stderr, "strata-fuse: mounting the namespace of "
			"container %s: %s: %s\n", id, strerror(sf_errno(rc)),
			ns_errmsg());
		return rc;
	}
	if (!made && c->fc_block_size &&
	    ns_super(sf.s_ns)->sb_block_shift !=
		    (uint32_t)block_shift(c->fc_block_size))
		fprintf(stderr, "strata-fuse: container %s already has a "
			"namespace, of block size %u: --block-size ignored\n",
			id, 1u << ns_super(sf.s_ns)->sb_block_shift);
	return 0;
}

static void store_close(void)
{
	int rc;

	if (sf.s_ns != NULL) {
		rc = ns_umount(sf.s_ns);
		if (rc != 0)
			fprintf(stderr, "strata-fuse: writing back at unmount: "
				"%s: %s\n", strerror(sf_errno(rc)), ns_errmsg());
		sf.s_ns = NULL;
	}
	clovis_fini(sf.s_cl);
	sf.s_cl = NULL;
}

/* Open the store (as strata-s3 does), then the namespace. */
static int store_open(const struct sf_conf *c)
{
	struct clovis_conf cc = {0};
	int rc;

	if (c->fc_cluster != NULL) {
		cc.cc_mode = CLOVIS_MODE_CLUSTER;
		cc.cc_cluster_conf = c->fc_cluster;
	} else {
		cc.cc_data_dir = c->fc_data;
		cc.cc_flags = c->fc_mkfs ? CLOVIS_CONF_CREATE : 0;
		cc.cc_dev_size = c->fc_dev_size;
	}
	cc.cc_log_level = c->fc_debug ? LOG_DBG : 0;
	rc = clovis_init(&sf.s_cl, &cc);
	if (rc != 0) {
		fprintf(stderr, "strata-fuse: cannot open the store %s: %s: "
			"%s\n", c->fc_cluster ? c->fc_cluster : c->fc_data,
			clovis_strerror(rc), clovis_errmsg());
		return rc;
	}
	rc = namespace_open(c);
	if (rc == 0 && !c->fc_ro) {
		rc = orphans_setup(c);
		if (rc != 0)
			fprintf(stderr, "strata-fuse: the directory /%s: %s: "
				"%s\n", SF_ORPHANS, strerror(sf_errno(rc)),
				ns_errmsg());
	}
	if (rc != 0)
		store_close();
	return rc;
}

/* ------------------------------------------------------ command line */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: strata-fuse [--data DIR | --cluster FILE] "
		"[--container ID] [--mkfs]\n"
		"                   [--block-size BYTES] [--dev-size BYTES] "
		"[--attr-timeout S]\n"
		"                   [--entry-timeout S] [--foreground|-f] "
		"[--read-only] [-d]\n"
		"                   [-o fuse_opt,...] MOUNTPOINT\n");
}

/* A size: digits with an optional K, M or G (powers of 1024). */
static bool parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *e;
	int sh = 0;

	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno != 0)
		return false;
	if (*e == 'K' || *e == 'k')
		sh = 10;
	else if (*e == 'M' || *e == 'm')
		sh = 20;
	else if (*e == 'G' || *e == 'g')
		sh = 30;
	if (sh)
		e++;
	if (*e != 0 || v > (~0ull >> sh))
		return false;
	*out = (uint64_t)v << sh;
	return true;
}

static bool parse_secs(const char *s, double *out)
{
	char *e;
	double v;

	errno = 0;
	v = strtod(s, &e);
	if (*s == 0 || *e != 0 || errno != 0 || !isfinite(v) || v < 0 ||
	    v > SF_TIMEOUT_MAX)
		return false;
	*out = v;
	return true;
}

/* Append -o options o to the list. */
static int add_fuse_opts(struct sf_conf *c, const char *o)
{
	size_t len = strlen(c->fc_fuse_opts);

	if (len + strlen(o) + 2 > sizeof c->fc_fuse_opts) {
		fprintf(stderr, "strata-fuse: -o: options too long\n");
		return -EINVAL;
	}
	if (len)
		c->fc_fuse_opts[len++] = ',';
	strcpy(c->fc_fuse_opts + len, o);
	return 0;
}

/* The value of option argv[*i] ("--x V" or "--x=V"); NULL (with a
 * message) when missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	const char *eq = strchr(argv[*i], '=');

	if (strncmp(argv[*i], "--", 2) == 0 && eq != NULL)
		return eq + 1;
	if (*i + 1 >= argc) {
		fprintf(stderr, "strata-fuse: %s needs a value\n", name);
		return NULL;
	}
	return argv[++*i];
}

/* Whether argv[i] is option name, alone or as "name=value". */
static bool opt_is(const char *arg, const char *name)
{
	size_t n = strlen(name);

	return strncmp(arg, name, n) == 0 && (arg[n] == 0 || arg[n] == '=');
}

static int opt_bad(const char *name, const char *v, const char *why)
{
	fprintf(stderr, "strata-fuse: %s '%s': %s\n", name, v, why);
	return -EINVAL;
}

/* One option with a value. */
static int conf_opt(struct sf_conf *c, const char *name, const char *v)
{
	uint64_t n;

	if (strcmp(name, "--data") == 0) {
		c->fc_data = v;
	} else if (strcmp(name, "--cluster") == 0) {
		c->fc_cluster = v;
	} else if (strcmp(name, "--container") == 0) {
		if (clovis_id_parse(v, &c->fc_container) != 0)
			return opt_bad(name, v, "not an id (HI:LO in hex, "
				       "or @name)");
	} else if (strcmp(name, "--block-size") == 0) {
		if (!parse_size(v, &n) || n < (1u << 12) || n > (1u << 24) ||
		    (n & (n - 1)))
			return opt_bad(name, v, "not a power of two from 4K "
				       "to 16M");
		c->fc_block_size = n;
	} else if (strcmp(name, "--dev-size") == 0) {
		if (!parse_size(v, &n) || n < (1u << 20) || n > (1ull << 44))
			return opt_bad(name, v, "not a size from 1M to 16T");
		c->fc_dev_size = n;
	} else if (strcmp(name, "--attr-timeout") == 0) {
		if (!parse_secs(v, &c->fc_attr_s))
			return opt_bad(name, v, "not a number of seconds "
				       "from 0 to 86400");
	} else if (strcmp(name, "--entry-timeout") == 0) {
		if (!parse_secs(v, &c->fc_entry_s))
			return opt_bad(name, v, "not a number of seconds "
				       "from 0 to 86400");
	} else if (strcmp(name, "-o") == 0) {
		return add_fuse_opts(c, v);
	}
	return 0;
}

/* After parsing: the combinations. */
static int conf_check(struct sf_conf *c)
{
	struct stat st;

	if (c->fc_mnt == NULL) {
		fprintf(stderr, "strata-fuse: no MOUNTPOINT given\n");
		return -EINVAL;
	}
	if (c->fc_data != NULL && c->fc_cluster != NULL) {
		fprintf(stderr, "strata-fuse: give --data or --cluster, not "
			"both\n");
		return -EINVAL;
	}
	if (c->fc_cluster != NULL && c->fc_dev_size) {
		fprintf(stderr, "strata-fuse: --dev-size applies to an "
			"embedded store (--data), not with --cluster\n");
		return -EINVAL;
	}
	if (c->fc_block_size && !c->fc_mkfs) {
		fprintf(stderr, "strata-fuse: --block-size applies with "
			"--mkfs only (a namespace keeps its block size)\n");
		return -EINVAL;
	}
	if (c->fc_ro && c->fc_mkfs) {
		fprintf(stderr, "strata-fuse: --mkfs and --read-only: a "
			"read-only mount cannot make a namespace\n");
		return -EINVAL;
	}
	if (stat(c->fc_mnt, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "strata-fuse: MOUNTPOINT '%s': %s\n",
			c->fc_mnt, errno ? strerror(errno) : "not a directory");
		return -EINVAL;
	}
	if (c->fc_cluster == NULL && c->fc_data == NULL)
		c->fc_data = "./strata-data";
	return 0;
}

/* The option of argv[i] that takes a value ("-o", "--data", ...), or
 * NULL. */
static const char *opt_valued(const char *arg)
{
	static const char *const valued[] = {
		"--data", "--cluster", "--container", "--block-size",
		"--dev-size", "--attr-timeout", "--entry-timeout",
	};
	size_t k;

	if (strcmp(arg, "-o") == 0)
		return "-o";
	for (k = 0; k < sizeof valued / sizeof valued[0]; k++)
		if (opt_is(arg, valued[k]))
			return valued[k];
	return NULL;
}

static int conf_args(struct sf_conf *c, int argc, char **argv)
{
	const char *a, *name, *v;
	int i, rc = 0;

	for (i = 1; i < argc && rc == 0; i++) {
		a = argv[i];
		name = opt_valued(a);
		if (name != NULL) {
			v = opt_value(argc, argv, &i, name);
			rc = v == NULL ? -EINVAL : conf_opt(c, name, v);
		} else if (strncmp(a, "-o", 2) == 0) {
			rc = add_fuse_opts(c, a + 2);
		} else if (strcmp(a, "--mkfs") == 0) {
			c->fc_mkfs = true;
		} else if (strcmp(a, "--foreground") == 0 ||
			   strcmp(a, "-f") == 0) {
			c->fc_fg = true;
		} else if (strcmp(a, "--read-only") == 0) {
			c->fc_ro = true;
		} else if (strcmp(a, "-d") == 0 || strcmp(a, "--debug") == 0) {
			c->fc_debug = c->fc_fg = true;
		} else if (a[0] == '-') {
			fprintf(stderr, "strata-fuse: unknown option '%s'\n",
				a);
			rc = -EINVAL;
		} else if (c->fc_mnt != NULL) {
			fprintf(stderr, "strata-fuse: one MOUNTPOINT only "
				"('%s' and '%s')\n", c->fc_mnt, a);
			rc = -EINVAL;
		} else {
			c->fc_mnt = a;
		}
	}
	return rc != 0 ? rc : conf_check(c);
}

/* path made absolute (the daemon leaves its working directory); the
 * string is leaked on purpose: it lives as long as the process. */
static const char *abs_path(const char *path)
{
	char cwd[PATH_MAX], *p;

	if (path == NULL || path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
		return path;
	p = malloc(strlen(cwd) + strlen(path) + 2);
	if (p == NULL)
		return path;
	sprintf(p, "%s/%s", cwd, path);
	return p;
}

/* ------------------------------------------------------------ session */

/* The session: our mount options, then the user's -o (which win). */
static struct fuse_session *session_new(const struct sf_conf *c)
{
	char id[CLOVIS_ID_STR_LEN], opts[256];
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;

	clovis_id_format(&c->fc_container, id);
	snprintf(opts, sizeof opts, "default_permissions,fsname=strata:%s,"
		 "subtype=strata,max_read=%u%s%s", id, SF_IO_MAX,
		 getuid() == 0 ? ",allow_other" : "", c->fc_ro ? ",ro" : "");
	if (fuse_opt_add_arg(&args, "strata-fuse") != 0 ||
	    fuse_opt_add_arg(&args, "-o") != 0 ||
	    fuse_opt_add_arg(&args, opts) != 0 ||
	    (c->fc_debug && fuse_opt_add_arg(&args, "-d") != 0) ||
	    (c->fc_fuse_opts[0] && (fuse_opt_add_arg(&args, "-o") != 0 ||
				    fuse_opt_add_arg(&args, c->fc_fuse_opts)
					    != 0)))
		goto out_free;
	se = fuse_session_new(&args, &sf_ops, sizeof sf_ops, &sf);
	if (se == NULL)
		fprintf(stderr, "strata-fuse: -o '%s': refused by libfuse "
			"(see above)\n", c->fc_fuse_opts);
out_free:
	fuse_opt_free_args(&args);
	return se;
}

static void signals_block(bool block)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/*
 * Open the store for serving.  Its threads and the namespace's are
 * started with SIGTERM/SIGINT/SIGHUP blocked, and libfuse's workers block
 * them too: they reach the main thread, whose handler
 * (fuse_set_signal_handlers()) ends the session loop.
 */
static int store_open_served(const struct sf_conf *c)
{
	int rc;

	signals_block(true);
	rc = store_open(c);
	signals_block(false);
	return rc;
}

/* Serve until unmounted or signalled; 0 or 1 (the exit code). */
static int serve(struct fuse_session *se)
{
	struct fuse_loop_config lc = {.clone_fd = 0, .max_idle_threads = 10};
	int rc = fuse_session_loop_mt(se, &lc);

	fuse_session_unmount(se);
	if (rc < 0) {
		fprintf(stderr, "strata-fuse: the session ended on %s\n",
			strerror(-rc));
		return 1;
	}
	return 0;
}

/*
 * The -o options are checked first (fuse_session_new()), before the store
 * is touched.  In the foreground the store is opened before the mount, so
 * the mount appears ready.  Daemonizing forks, and the store's threads
 * would not follow: a first open says what is wrong (and runs --mkfs)
 * while the caller still has our stderr; the daemon opens the store again
 * after the fork.
 */
int main(int argc, char **argv)
{
	struct sf_conf c = {.fc_container = CLOVIS_ID_DEFAULT_CONTAINER,
			    .fc_attr_s = 1.0, .fc_entry_s = 1.0};
	struct fuse_session *se;
	int rc = 1;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (conf_args(&c, argc, argv) != 0) {
		usage(stderr);
		return 2;
	}
	c.fc_data = abs_path(c.fc_data);
	c.fc_cluster = abs_path(c.fc_cluster);
	sf.s_attr_s = c.fc_attr_s;
	sf.s_entry_s = c.fc_entry_s;
	se = session_new(&c);
	if (se == NULL)
		return 2;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_destroy;
	if (store_open_served(&c) != 0)
		goto out_signals;
	if (!c.fc_fg)
		store_close();
	if (fuse_session_mount(se, c.fc_mnt) != 0) {
		fprintf(stderr, "strata-fuse: cannot mount on %s\n", c.fc_mnt);
		goto out_signals;
	}
	if (fuse_daemonize(c.fc_fg) != 0 ||
	    (!c.fc_fg && store_open_served(&c) != 0)) {
		fuse_session_unmount(se);
		goto out_signals;
	}
	rc = serve(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
	if (sf.s_cl != NULL)
		store_close();
	return rc;
}
