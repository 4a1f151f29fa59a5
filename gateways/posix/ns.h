/*
 * gateways/posix/ns.h — a POSIX namespace on Clovis indices and objects.
 *
 * The POSIX view of a store (issue 33): files, directories, symlinks, hard
 * links and extended attributes kept in one container, through the Clovis
 * API only (a plain client: embedded store or cluster, the same code).
 * strata-fuse (gateways/posix/fuse_main.c) serves it to the kernel, and the
 * S3 gateway serves a directory of it as a bucket (the shared view,
 * docs/posix.md "One namespace with S3").
 *
 * On the store (all in the namespace's container C; every integer of a
 * record is little-endian; ids are struct clovis_id):
 *
 *   NS_ID_SUPER   index {NS_HI_META, 1}: the superblock.
 *                   "super" -> struct ns_super (magic, version, root ino,
 *                   default block shift, layout, fsid, creation time)
 *   NS_ID_INODES  index {NS_HI_META, 2}: the inode table.
 *                   key: the ino, 8 bytes big-endian (so NEXT walks inodes
 *                   in number order) -> struct ns_inode_rec, followed for
 *                   a symlink by its target (it_target_len bytes)
 *   NS_ID_XATTRS  index {NS_HI_META, 3}: every extended attribute.
 *                   key: ino (8 bytes big-endian) + name bytes -> value
 *   a directory   index {NS_HI_DIR, ino}: its entries.
 *                   key: the name (1..NS_NAME_MAX bytes, no '/' or NUL;
 *                   "." and ".." are never stored) -> struct ns_dirent_rec
 *   a file's data object: the id in its inode record (it_data).  A file
 *                   made through the namespace gets {NS_HI_DATA, ino},
 *                   created at its first write (a file never written has
 *                   none: it_flags lacks NS_IF_DATA); a file linked in by
 *                   the S3 gateway keeps the object the PUT wrote.
 * Entity ids are the store's, not a container's (an id in use in one
 * container is -EEXIST to a CREATE in another, and OPEN finds it from
 * any), and the meta indices' ids are fixed: a store holds ONE namespace.
 * ns_mkfs() in a second container is -EEXIST naming the first,
 * ns_mount() of a container other than the one holding it -ENOENT.
 *
 * Inode numbers are 64-bit, never 0; the root is NS_ROOT_INO (1, FUSE's
 * root id).  A new inode's number is drawn at random and claimed by a PUT
 * without CLOVIS_IF_OVERWRITE into the inode table (-EEXIST: draw again),
 * so several processes (two mounts, a mount and the S3 gateway) allocate
 * without talking to each other.  Each inode has a generation (random at
 * creation, never 0): (ino, gen) names a file for ever, as an NFS file
 * handle needs.
 *
 * Atomicity.  Every namespace change is one Clovis dtx (or one index PUT
 * when it touches a single record): create (inode + entry), unlink (entry,
 * and the inode with its data and xattrs when its last link goes, or the
 * inode's nlink), rename within a directory and across directories (entry
 * DEL + entry PUT + the replaced target's removal + a moved directory's
 * parent), link, symlink, mkdir, rmdir.  After a crash at any instant each
 * is there whole or not at all.
 *
 * Durability.  Calls return once their change is applied (EXECUTED):
 * visible to every reader of the store at once.  ns_fsync() makes every
 * change this mount made before the call durable (STABLE), data and
 * namespace alike, like a journalled local file system's fsync of a file
 * and its directory together.  A process killed without ns_fsync() may
 * lose changes made after the last one; it never leaves a change half
 * made, and never loses one an ns_fsync() returned for.
 *
 * Caching.  Sizes and times of files written through this mount are kept
 * in memory and written to the inode record at the latest at ns_fsync(),
 * ns_release() of the file, ns_setattr(), ns_umount() and every
 * NS_WRITEBACK_MS; reads through this mount always see them.  Another
 * process (the S3 gateway) reading the same file sees the size last
 * written back.  Nothing else is cached across calls: every lookup and
 * getattr reads the store (FUSE caches in the kernel for the mount's
 * attr/entry timeouts).
 *
 * Concurrency.  Every call is thread-safe.  Calls on one inode through
 * one mount are serialised where they change it (writes, truncate,
 * setattr).  Between processes the namespace is "relaxed" (as DAOS DFS):
 * each change is atomic, but two processes renaming the same entry at the
 * same time may both succeed in order; the last one wins.
 *
 * Errors: every call returns 0 (or a count) or a negative errno, and then
 * changes nothing; clovis_errmsg()-style detail is in ns_errmsg() (this
 * thread's last failure), naming the inode, entry or attribute.
 *   -ENOENT  no such inode or entry;  -EEXIST  the name exists;
 *   -ENOTDIR a directory was needed;  -EISDIR  a non-directory was needed;
 *   -ENOTEMPTY rmdir or rename over a non-empty directory;
 *   -ENAMETOOLONG a name over NS_NAME_MAX, a symlink target over
 *            NS_SYMLINK_MAX, an xattr name over NS_XATTR_NAME_MAX;
 *   -EINVAL  a bad name ("", ".", "..", containing '/'), rename of a
 *            directory into its own subtree, bad flags;
 *   -EMLINK  more than NS_LINK_MAX links;
 *   -ENODATA no such xattr;  -ERANGE  a buffer too small (xattrs,
 *            readlink);  -E2BIG  an xattr value over NS_XATTR_VAL_MAX;
 *   -EFBIG   an offset or size past NS_FILE_MAX;
 *   -ESTALE  an inode whose generation is not the one given;
 *   -ENOSPC, -EIO, ... from the store.
 * Permission checks (mode bits, uid, gid) are not made here: strata-fuse
 * mounts with default_permissions, so the kernel makes them.
 */
#ifndef STRATA_GATEWAYS_POSIX_NS_H
#define STRATA_GATEWAYS_POSIX_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "clovis/clovis.h"

#define NS_HI_META 0x5354525053580001ull /* "STRPSX" + 1: meta indices */
#define NS_HI_DIR  0x5354525053580002ull /* directories: {NS_HI_DIR, ino} */
#define NS_HI_DATA 0x5354525053580003ull /* file data: {NS_HI_DATA, ino} */
#define NS_ID_SUPER  ((struct clovis_id){NS_HI_META, 1})
#define NS_ID_INODES ((struct clovis_id){NS_HI_META, 2})
#define NS_ID_XATTRS ((struct clovis_id){NS_HI_META, 3})

#define NS_ROOT_INO 1ull
/* strata-fuse's hidden directory in the root: files unlinked while open
 * through a mount, kept until their last close (docs/posix.md).  Other
 * views (the S3 gateway's) neither show nor touch it. */
#define NS_ORPHANS_NAME ".strata-fuse-orphans"
#define NS_MAGIC 0x53505358u    /* "XSPS": superblock and inode records */
#define NS_VERSION 1u
#define NS_NAME_MAX 255u        /* bytes of one entry name */
#define NS_PATH_MAX 4096u       /* bytes of a path given to ns_resolve() */
#define NS_SYMLINK_MAX 4095u    /* bytes of a symlink's target */
#define NS_XATTR_NAME_MAX 255u
#define NS_XATTR_VAL_MAX 65536u
#define NS_LINK_MAX 65000u
#define NS_FILE_MAX (1ull << 50) /* bytes: 1 PiB */
#define NS_WRITEBACK_MS 1000u
#define NS_BLOCK_SHIFT_DEFAULT 16u /* 64 KiB blocks unless mkfs says */

/** The superblock record (NS_ID_SUPER, key "super"). */
struct ns_super {
	uint32_t sb_magic;       /* NS_MAGIC */
	uint32_t sb_version;     /* NS_VERSION */
	uint64_t sb_root;        /* NS_ROOT_INO */
	uint64_t sb_fsid;        /* random at mkfs; statfs f_fsid */
	uint64_t sb_ctime_ns;
	uint32_t sb_block_shift; /* new files' block size (log2) */
	uint32_t sb_layout;      /* new files' enum clovis_layout_type; 0 = the
				    container's default */
	uint32_t sb_tier;        /* PLAIN files' enum clovis_tier */
	uint32_t sb_pad;
};

/** Inode flags (it_flags). */
enum ns_inode_flags {
	NS_IF_DATA = 1u << 0, /* regular file: its data object exists */
};

/** An inode record (NS_ID_INODES), as stored (little-endian). */
struct ns_inode_rec {
	uint32_t it_magic;       /* NS_MAGIC */
	uint32_t it_mode;        /* type and permission bits (st_mode) */
	uint32_t it_uid, it_gid;
	uint32_t it_nlink;       /* directories: 2 + subdirectories */
	uint32_t it_flags;       /* enum ns_inode_flags */
	uint64_t it_gen;
	uint64_t it_size;        /* bytes (symlink: target length) */
	uint64_t it_atime_ns, it_mtime_ns, it_ctime_ns, it_btime_ns;
	uint64_t it_rdev;
	uint64_t it_parent;      /* directories: the parent's ino (root: 1) */
	struct clovis_id it_data; /* file: data object; dir: its index */
	uint32_t it_block_shift; /* file: its object's block size (log2);
				    dir: its new files' (0: the default) */
	uint32_t it_target_len;  /* symlink: bytes of target after the record */
};

/** A directory entry's value (a directory's index). */
struct ns_dirent_rec {
	uint64_t de_ino;
	uint32_t de_type;        /* mode & S_IFMT of the inode */
	uint32_t de_pad;
};

/** What ns_getattr() and friends give back (from an inode). */
struct ns_attr {
	uint64_t ino, gen;
	uint32_t mode, uid, gid, nlink;
	uint64_t size;
	uint64_t blocks;          /* 512-byte units allocated (estimate) */
	uint32_t blksize;         /* the file's block size (st_blksize) */
	uint64_t rdev;
	struct timespec atime, mtime, ctime, btime;
};

/** Fill a struct stat from an attr (st_dev 0). */
void ns_attr_to_stat(const struct ns_attr *a, struct stat *st);

/** mkfs options; NULL = the defaults. */
struct ns_mkfs_opts {
	uint32_t block_shift; /* 0 = NS_BLOCK_SHIFT_DEFAULT; 12..24 */
	uint32_t layout;      /* enum clovis_layout_type, 0 = container's */
	uint32_t tier;        /* enum clovis_tier for PLAIN; 0 = FLASH (note:
				 here 0 means flash, not NVRAM) */
	uint32_t root_mode;   /* 0 = 0755 */
	uint32_t root_uid, root_gid;
};

/**
 * Make a namespace in container c (created if it does not exist; the
 * default container is allowed): the superblock, the inode table with the
 * root, the xattr index, the root's directory index.  -EEXIST (naming the
 * container) if it already holds a namespace; a half-made one from a
 * crashed mkfs is finished.
 */
int ns_mkfs(struct clovis *cl, const struct clovis_id *c,
	    const struct ns_mkfs_opts *o);

struct ns;

/** Mount options; NULL = the defaults. */
struct ns_opts {
	bool read_only;        /* every change -EROFS */
	uint32_t writeback_ms; /* 0 = NS_WRITEBACK_MS */
};

/**
 * Open the namespace of container c of cl.  -ENOENT (naming the
 * container) when it holds none (run ns_mkfs()), -EPROTO for a superblock
 * of another magic or version.  cl must outlive the namespace.
 */
int ns_mount(struct clovis *cl, const struct clovis_id *c,
	     const struct ns_opts *o, struct ns **out);
/** Write back what is cached, wait for it to be STABLE, free ns. */
int ns_umount(struct ns *ns);
/** The superblock read at mount. */
const struct ns_super *ns_super(const struct ns *ns);
/** This thread's message for its last failed ns_* call. */
const char *ns_errmsg(void);

/* ---------------------------------------------------------------- names */
int ns_getattr(struct ns *ns, uint64_t ino, struct ns_attr *out);
/** (ino, gen) -> attr; -ESTALE when the inode is gone or was reused. */
int ns_getattr_gen(struct ns *ns, uint64_t ino, uint64_t gen,
		   struct ns_attr *out);
/** name in directory parent; ".." and "." are answered (from it_parent). */
int ns_lookup(struct ns *ns, uint64_t parent, const char *name,
	      struct ns_attr *out);
/** Absolute path ("/a/b", "/" = root; no symlinks followed) -> attr. */
int ns_resolve(struct ns *ns, const char *path, struct ns_attr *out);

/** A regular file, fifo, socket or device node (mode has the type; a
 *  type of 0 means S_IFREG). */
int ns_mknod(struct ns *ns, uint64_t parent, const char *name, uint32_t mode,
	     uint64_t rdev, uint32_t uid, uint32_t gid, struct ns_attr *out);
int ns_mkdir(struct ns *ns, uint64_t parent, const char *name, uint32_t mode,
	     uint32_t uid, uint32_t gid, struct ns_attr *out);
int ns_symlink(struct ns *ns, uint64_t parent, const char *name,
	       const char *target, uint32_t uid, uint32_t gid,
	       struct ns_attr *out);
/** Copies the target and a NUL into buf; returns its length, -ERANGE if
 *  buf is too small, -EINVAL if ino is not a symlink. */
int ns_readlink(struct ns *ns, uint64_t ino, char *buf, size_t size);
/** Hard link (not of directories: -EPERM). */
int ns_link(struct ns *ns, uint64_t ino, uint64_t newparent,
	    const char *newname, struct ns_attr *out);
int ns_unlink(struct ns *ns, uint64_t parent, const char *name);
int ns_rmdir(struct ns *ns, uint64_t parent, const char *name);

#define NS_RENAME_NOREPLACE 1u /* as RENAME_NOREPLACE */
#define NS_RENAME_EXCHANGE  2u /* as RENAME_EXCHANGE */
/** rename(2)/renameat2(2) semantics, in one dtx. */
int ns_rename(struct ns *ns, uint64_t parent, const char *name,
	      uint64_t newparent, const char *newname, uint32_t flags);

/* ------------------------------------------------------------ directories */
struct ns_dirent {
	uint64_t ino;
	uint32_t type;            /* S_IFMT bits */
	char name[NS_NAME_MAX + 1];
};
/**
 * Up to max entries of directory dir in name order, starting after the
 * name after (NULL or "" = from the first; "." and ".." are not returned:
 * the caller adds them).  Returns the number given (0 = no more),
 * -ENOTDIR, -ENOENT.
 */
int ns_readdir(struct ns *ns, uint64_t dir, const char *after,
	       struct ns_dirent *out, int max);

/* ------------------------------------------------------------ attributes */
enum ns_set {
	NS_SET_MODE = 1u << 0, NS_SET_UID = 1u << 1, NS_SET_GID = 1u << 2,
	NS_SET_SIZE = 1u << 3, NS_SET_ATIME = 1u << 4,
	NS_SET_MTIME = 1u << 5, NS_SET_ATIME_NOW = 1u << 6,
	NS_SET_MTIME_NOW = 1u << 7, NS_SET_CTIME = 1u << 8,
};
/**
 * Change the fields of in named by valid (enum ns_set); ctime becomes now
 * (or in->ctime with NS_SET_CTIME).  NS_SET_SIZE truncates or extends a
 * regular file (-EISDIR / -EINVAL for others): blocks past the new end
 * are freed, the tail of the last block is zeroed, so a later extension
 * reads zeros.  Times are kept as signed nanoseconds since the epoch:
 * a time set before 1970 reads back as set; one with tv_nsec outside
 * [0, 999999999] is -EINVAL, one outside the years 1678-2262 -EOVERFLOW
 * (the message names the field), and nothing changes.  out (may be NULL)
 * gets the result.
 */
int ns_setattr(struct ns *ns, uint64_t ino, const struct ns_attr *in,
	       uint32_t valid, struct ns_attr *out);

/* -------------------------------------------------------------- file data */
/**
 * Read up to len bytes at off; returns the bytes read (short at the end
 * of the file, 0 past it), -EISDIR, -EINVAL (not a regular file).  Holes
 * read as zeros.
 */
ssize_t ns_read(struct ns *ns, uint64_t ino, void *buf, size_t len,
		uint64_t off);
/**
 * Write len bytes at any byte offset; returns len or a negative errno.
 * Whole blocks are written as they are; a partial first or last block is
 * read, patched and written (read-modify-write).  The size grows when the
 * write ends past it; mtime and ctime become now.
 */
ssize_t ns_write(struct ns *ns, uint64_t ino, const void *buf, size_t len,
		 uint64_t off);
/** Make every change of this mount before the call durable (above). */
int ns_fsync(struct ns *ns, uint64_t ino, bool datasync);
/** The last close of ino through this mount: write its size back. */
int ns_release(struct ns *ns, uint64_t ino);
/**
 * The data object of a regular file (for the S3 view and pNFS layouts):
 * its id and block shift.  -ENODATA when the file has never been written.
 */
int ns_data_id(struct ns *ns, uint64_t ino, struct clovis_id *id,
	       uint32_t *block_shift);
/**
 * Link an existing object (written by someone else, e.g. an S3 PUT) as the
 * regular file parent/name of size bytes, replacing an existing regular
 * file of that name (whose inode goes with its data when that was its last
 * link) in one dtx; -EISDIR if the name is a directory.  The object is
 * the file's data from then on (it is deleted with the file).
 */
int ns_link_object(struct ns *ns, uint64_t parent, const char *name,
		   const struct clovis_id *obj, uint32_t block_shift,
		   uint64_t size, uint32_t mode, uint32_t uid, uint32_t gid,
		   struct ns_attr *out);

/* ----------------------------------------------------------------- xattrs */
/*
 * The block size of a file or a directory, as an extended attribute (a
 * decimal number of bytes, a power of two from 4 KiB to 16 MiB), kept in
 * the inode record (it_block_shift), not among the xattrs, and not
 * listed by ns_listxattr().  A directory's is the block size of every file
 * and directory made in it from then on (they inherit it); a regular
 * file's is its data object's: set it before the first write (-EBUSY
 * after, unless unchanged).  Absent (-ENODATA): the superblock's default.
 */
#define NS_XATTR_BLOCK_SIZE "user.strata.block_size"
#define NS_XATTR_CREATE  1u /* as XATTR_CREATE: -EEXIST if it exists */
#define NS_XATTR_REPLACE 2u /* as XATTR_REPLACE: -ENODATA if it does not */
int ns_setxattr(struct ns *ns, uint64_t ino, const char *name,
		const void *val, size_t size, uint32_t flags);
/** size 0: returns the value's size only; else copies (-ERANGE if small). */
ssize_t ns_getxattr(struct ns *ns, uint64_t ino, const char *name, void *buf,
		    size_t size);
/** Names, each NUL-terminated, as listxattr(2); size 0: the size needed. */
ssize_t ns_listxattr(struct ns *ns, uint64_t ino, char *buf, size_t size);
int ns_removexattr(struct ns *ns, uint64_t ino, const char *name);

/* ------------------------------------------------------------------ misc */
/**
 * statvfs of the namespace: blocks and free blocks from the store's
 * devices (clovis_dev_list(): sum of capacity and free space), in units of
 * the default block size; files - ffree = inodes in use (the inode
 * table's records), ffree = favail = the free blocks (an inode costs
 * space, nothing else bounds them), f_namemax NS_NAME_MAX, f_fsid from
 * the superblock.
 */
int ns_statfs(struct ns *ns, struct statvfs *out);

#endif
