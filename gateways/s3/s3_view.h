/*
 * gateways/s3/s3_view.h — view buckets: a directory of a POSIX namespace
 * (gateways/posix/ns.h) served as an S3 bucket, without copying data
 * (README.md beside this file, "POSIX view buckets").
 *
 * Configured by `posix-bucket NAME=CONTAINER_ID[:/DIR]` (repeatable; DIR
 * "/" by default) and `posix-owner USER` (the bucket owner of every view
 * bucket; default the first user of the credentials file at start).  At
 * start the gateway mounts the namespace of each container once
 * (ns_mount(), read/write, for the life of the process), finds DIR (made,
 * with its missing parents, mode 0755, when it does not exist) and serves
 * bucket NAME from it: key "a/b/c" is the file DIR/a/b/c.
 *
 * A view bucket is a struct s3_bucket with bk_vw set: it has no bucket
 * record in @s3.buckets and no bucket index; its container (bk_cont) is
 * the namespace's, so the writer's objects (s3_wr) and the reader (s3_rd)
 * work on it unchanged.  The operations that read or change a bucket's
 * index ask s3_view_*() instead when bk_vw is set: the key's record
 * (s3_view_rec_get(), a record made from the file's inode and xattrs),
 * delete (s3_view_delete()), the listing (s3_view_list(), s3_ops_internal.h)
 * and the recovery of in-flight records (s3_view_refs()).  What a view
 * bucket does not do is refused by s3_view_route() with 501 NotImplemented
 * naming the operation, before anything is read or changed.
 *
 * The table of views is filled by s3_views_open() before the server starts
 * and only read afterwards (no lock).
 */
#ifndef STRATA_S3_VIEW_H
#define STRATA_S3_VIEW_H

#include "gateways/s3/s3.h"
#include "gateways/posix/ns.h"

/** One posix-bucket value, parsed. */
struct s3_view_spec {
	char vs_name[S3_BUCKET_MAX + 1];
	struct clovis_id vs_cont;
	char vs_dir[NS_PATH_MAX];   /* absolute, no "." / ".." / empty parts */
};

/** A view bucket (its s3_bucket is vw_bk). */
struct s3_view {
	struct s3_view_spec vw_spec;
	struct ns *vw_ns;           /* shared by the views of one container */
	bool vw_owns_ns;            /* this view mounted it (umounts it) */
	uint64_t vw_ino, vw_gen;    /* DIR as found at start */
	uint32_t vw_uid, vw_gid;    /* DIR's owner: that of what a PUT makes */
	struct clovis_idx vw_inodes; /* NS_ID_INODES (recovery's scan) */
	bool vw_inodes_open;
	struct s3_bucket vw_bk;
};

/**
 * Parse "NAME=CONTAINER_ID[:/DIR]": NAME a valid bucket name, the id in a
 * form clovis_id_parse() takes (everything up to the first ":/"), DIR
 * absolute without empty, "." or ".." components or a trailing '/', each
 * component at most NS_NAME_MAX bytes.  0, or -EINVAL with why in msg.
 */
int s3_view_parse(const char *spec, struct s3_view_spec *out, char *msg,
		  size_t ml);
/**
 * Set up every configured view (s3g.g_conf.sc_views) on the open store:
 * the owner known, no bucket of the same name in the store and no view
 * named twice, the namespace mounted (a block size of at most
 * S3_BIG_CHUNK), DIR found or made.  0, or -errno (why on stderr: the
 * gateway does not start).
 */
int s3_views_open(void);
/** Unmount the namespaces (after the server stopped). */
void s3_views_close(void);
/** The view bucket of that name, or NULL. */
struct s3_bucket *s3_view_bucket(const char *name);
/** The i-th view bucket in name order (NULL past the last). */
const struct s3_bucket *s3_view_nth(uint32_t i);

/**
 * The routes of a request on a view bucket (sub[0..n): its sub-resources,
 * as s3_route() collected them; on: 1 the bucket, 2 an object).  Returns
 * true when it answered (PutObject, CreateBucket, DeleteBucket,
 * GetBucketLocation, or 501 NotImplemented for what a view bucket does
 * not do), false when the request goes through the ordinary routes, which
 * reach the view through the hooks above.
 */
bool s3_view_route(struct s3_req *rq, int on, const char **sub, uint32_t n);

/**
 * The record of key k (kl bytes) of view bucket b, as the bucket index
 * would hold it (malloc()ed into *v, decoded into *r): the file's data
 * object (T_ID) or none (T_HOLE), its size as last written back, mtime,
 * ETag (the PUT's, kept in xattr user.s3.etag while the file is as that
 * PUT left it, else "px-" + the MD5 of "ino-gen-mtime-size"), content type
 * (xattr user.s3.content-type), block shift, the PUT's x-amz-meta-* and
 * kept headers (xattr user.s3.meta).  -ENOENT when k names no regular
 * file (or cannot: a bad path), or the namespace's error.
 */
int s3_view_rec_get(struct s3_bucket *b, const char *k, size_t kl, void **v,
		    size_t *vl, struct s3_orec *r);
/** Delete key k of view bucket b (ns_unlink): 0 also when k names no
 *  regular file (nothing is done then), or the namespace's error. */
int s3_view_delete(struct s3_bucket *b, const char *k, size_t kl);
/**
 * Recovery (s3_store_tx.c): is object id, named by an in-flight record of
 * view bucket b for key (kl bytes: the full key), the data of a file?
 * True when the file at key has it, else when any inode of the namespace
 * has it (a scan of the inode table: the file may have been renamed since
 * its PUT linked it), and when that cannot be told (kept, never freed).
 */
bool s3_view_refs(struct s3_bucket *b, const uint8_t *key, size_t kl,
		  const struct clovis_id *id);

/* Shared by s3_view.c and s3_view_list.c only. */
/** The directory path p (pl bytes, relative to the view's directory, no
 *  leading or trailing '/') names: 0 with its inode, -ENOENT, -ENOTDIR. */
int s3_view_dir_find(struct s3_view *v, const char *p, size_t pl,
		     uint64_t *ino);
/** The record of file ino as a listing shows it (size, mtime, ETag) into
 *  rec, decoded into *r: 0, -ENOENT (gone, or not a regular file). */
int s3_view_list_rec(struct s3_view *v, uint64_t ino, struct s3_buf *rec,
		     struct s3_orec *r);

#endif
