/*
 * s3_view.c — view buckets: a directory of a POSIX namespace
 * (gateways/posix/ns.h) served as a bucket (s3_view.h; README.md "POSIX
 * view buckets").  Here: the posix-bucket values and the table of views,
 * the mapping of keys to paths, the record of a key made from its file,
 * PutObject (the writer's object linked as the file, ns_link_object()),
 * DeleteObject (ns_unlink()), the recovery's question, and the routes a
 * view bucket answers itself.  Its listing is in s3_view_list.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stddef.h>
#include <openssl/evp.h>

#include "gateways/s3/s3.h"
#include "gateways/s3/s3_ops_internal.h"
#include "gateways/s3/s3_view.h"
#ifdef STRATA_FAULT_INJECT
#include "core/fault.h" /* test builds (strata-s3-test) only */
#endif

/* xattrs a PUT leaves on its file (README.md, "POSIX view buckets") */
#define XA_ETAG "user.s3.etag"         /* "ETAG MTIME_NS SIZE" */
#define XA_CTYPE "user.s3.content-type"
#define XA_META "user.s3.meta"         /* T_META / T_HDR fields (TLV) */
#define CTYPE_DEFAULT "binary/octet-stream"

static struct s3_view *views[S3_VIEWS_MAX]; /* by name once open */
static uint32_t nviews;

/* ------------------------------------------------------ configuration */

static int spec_bad(char *msg, size_t ml, const char *why)
{
	snprintf(msg, ml, "%s", why);
	return -EINVAL;
}

/* An absolute path without empty, "." or ".." components, each at most
 * NS_NAME_MAX bytes, no trailing '/' ("/" alone is the root). */
static int dir_check(const char *d, char *msg, size_t ml)
{
	size_t n = strlen(d), i, j;

	if (d[0] != '/' || n >= NS_PATH_MAX)
		return spec_bad(msg, ml, "DIR must be an absolute path (after "
				"':') shorter than 4096 bytes");
	for (i = 1; i < n; i = j + 1) {
		for (j = i; j < n && d[j] != '/'; j++)
			;
		if (j == i || (j - i == 1 && d[i] == '.') ||
		    (j - i == 2 && d[i] == '.' && d[i + 1] == '.'))
			return spec_bad(msg, ml, "DIR has an empty, '.' or '..' "
					"component, or ends with '/'");
		if (j - i > NS_NAME_MAX)
			return spec_bad(msg, ml, "DIR has a component over 255 "
					"bytes");
	}
	return 0;
}

int s3_view_parse(const char *spec, struct s3_view_spec *o, char *msg,
		  size_t ml)
{
	const char *eq = strchr(spec, '='), *id, *dir;
	char idb[S3_VIEW_SPEC_MAX];
	size_t nl, il;

	memset(o, 0, sizeof *o);
	if (eq == NULL)
		return spec_bad(msg, ml, "expected NAME=CONTAINER_ID[:/DIR]");
	nl = (size_t)(eq - spec);
	if (nl == 0 || nl > S3_BUCKET_MAX)
		return spec_bad(msg, ml, "NAME is not a valid bucket name");
	memcpy(o->vs_name, spec, nl);
	if (!s3_bucket_name_ok(o->vs_name))
		return spec_bad(msg, ml, "NAME is not a valid bucket name");
	id = eq + 1;
	dir = strstr(id, ":/");
	il = dir != NULL ? (size_t)(dir - id) : strlen(id);
	if (il == 0 || il >= sizeof idb)
		return spec_bad(msg, ml, "no CONTAINER_ID after '='");
	memcpy(idb, id, il);
	idb[il] = 0;
	if (clovis_id_parse(idb, &o->vs_cont) != 0)
		return spec_bad(msg, ml, "CONTAINER_ID is not an id (HI:LO in "
				"hexadecimal, or @name)");
	dir = dir != NULL ? dir + 1 : "/";
	if (dir_check(dir, msg, ml) != 0)
		return -EINVAL;
	snprintf(o->vs_dir, sizeof o->vs_dir, "%s", dir);
	return 0;
}

/* "HI:LO" of the view's container, for messages. */
static const char *view_cont(const struct s3_view *v, char *buf)
{
	return clovis_id_format(&v->vw_spec.vs_cont, buf);
}

/* Find DIR, making it and its missing parents (mode 0755, owned as their
 * parent) when it does not exist. */
static int view_dir(struct s3_view *v, struct ns_attr *a)
{
	const char *d = v->vw_spec.vs_dir;
	char name[NS_NAME_MAX + 1];
	size_t i, j, n = strlen(d);
	int rc = ns_getattr(v->vw_ns, NS_ROOT_INO, a);

	for (i = 1; rc == 0 && i < n; i = j + 1) {
		uint64_t parent = a->ino;
		uint32_t uid = a->uid, gid = a->gid;

		for (j = i; j < n && d[j] != '/'; j++)
			;
		memcpy(name, d + i, j - i);
		name[j - i] = 0;
		rc = ns_lookup(v->vw_ns, parent, name, a);
		if (rc == -ENOENT) {
			rc = ns_mkdir(v->vw_ns, parent, name, 0755, uid, gid, a);
			if (rc == -EEXIST)
				rc = ns_lookup(v->vw_ns, parent, name, a);
			if (rc == 0)
				fprintf(stderr, "strata-s3: view bucket %s: made "
					"the directory %.*s\n",
					v->vw_spec.vs_name, (int)j, d);
		}
		if (rc == 0 && !S_ISDIR(a->mode))
			rc = -ENOTDIR;
	}
	return rc;
}

/* The mount of container c, when another view has it. */
static struct ns *mount_find(const struct clovis_id *c)
{
	uint32_t i;

	for (i = 0; i < nviews; i++)
		if (clovis_id_cmp(&views[i]->vw_spec.vs_cont, c) == 0)
			return views[i]->vw_ns;
	return NULL;
}

/* Mount v's namespace (or share another view's mount of it). */
static int view_mount(struct s3_view *v)
{
	char cb[CLOVIS_ID_STR_LEN];
	const struct ns_super *sb;
	int rc;

	v->vw_ns = mount_find(&v->vw_spec.vs_cont);
	if (v->vw_ns == NULL) {
		rc = ns_mount(s3g.g_cl, &v->vw_spec.vs_cont, NULL, &v->vw_ns);
		if (rc != 0) {
			fprintf(stderr, "strata-s3: posix-bucket %s: container "
				"%s: %s%s: %s\n", v->vw_spec.vs_name,
				view_cont(v, cb), clovis_strerror(rc),
				rc == -ENOENT ? " (it holds no POSIX namespace: "
				"make one with ns_mkfs(), gateways/posix/ns.h)"
				: "", ns_errmsg());
			v->vw_ns = NULL;
			return rc;
		}
		v->vw_owns_ns = true;
	}
	sb = ns_super(v->vw_ns);
	if (sb->sb_block_shift < 12 ||
	    (1ull << sb->sb_block_shift) > S3_BIG_CHUNK) {
		fprintf(stderr, "strata-s3: posix-bucket %s: the namespace of "
			"container %s has blocks of 2^%u bytes: a view bucket "
			"takes 4 KiB to 4 MiB (the gateway's largest write op)\n",
			v->vw_spec.vs_name, view_cont(v, cb), sb->sb_block_shift);
		return -EINVAL;
	}
	return 0;
}

/* The bucket of view v, once its directory is found (a). */
static int view_bucket_init(struct s3_view *v, const char *owner,
			    const struct ns_attr *a)
{
	const struct ns_super *sb = ns_super(v->vw_ns);
	struct s3_bucket *b = &v->vw_bk;
	int rc;

	snprintf(b->bk_name, sizeof b->bk_name, "%s", v->vw_spec.vs_name);
	snprintf(b->bk_owner, sizeof b->bk_owner, "%s", owner);
	rc = clovis_container_init(&b->bk_cont, s3g.g_cl, &v->vw_spec.vs_cont);
	if (rc != 0)
		return rc;
	b->bk_layout = sb->sb_layout;
	b->bk_bshift = sb->sb_block_shift;
	b->bk_tier = sb->sb_tier; /* as ns_io.c makes a file's object */
	b->bk_ctime_ns = (uint64_t)a->btime.tv_sec * 1000000000ull +
			 (uint64_t)a->btime.tv_nsec;
	if (b->bk_ctime_ns == 0)
		b->bk_ctime_ns = sb->sb_ctime_ns;
	pthread_rwlock_init(&b->bk_conf, NULL);
	b->bk_vw = v;
	v->vw_ino = a->ino;
	v->vw_gen = a->gen;
	v->vw_uid = a->uid;
	v->vw_gid = a->gid;
	return 0;
}

/* Set up one posix-bucket value for owner. */
static int view_open(const char *spec, const char *owner)
{
	struct s3_view *v;
	struct ns_attr a;
	char msg[200], cb[CLOVIS_ID_STR_LEN];
	void *rv;
	size_t rvl;
	int rc;

	v = calloc(1, sizeof *v);
	if (v == NULL)
		return -ENOMEM;
	if (s3_view_parse(spec, &v->vw_spec, msg, sizeof msg) != 0) {
		fprintf(stderr, "strata-s3: posix-bucket '%s': %s\n", spec, msg);
		free(v);
		return -EINVAL;
	}
	rc = s3_view_bucket(v->vw_spec.vs_name) != NULL ? -EEXIST
		: s3_idx_get(&s3g.g_buckets, v->vw_spec.vs_name,
			     strlen(v->vw_spec.vs_name), &rv, &rvl);
	if (rc == 0) {
		free(rv);
		rc = -EEXIST;
	}
	if (rc != -ENOENT) {
		fprintf(stderr, "strata-s3: posix-bucket %s: %s\n",
			v->vw_spec.vs_name, rc == -EEXIST ? "a bucket of that "
			"name exists (in the store, or given twice): a view "
			"bucket cannot take it" : clovis_strerror(rc));
		free(v);
		return rc == 0 ? -EEXIST : rc;
	}
	rc = view_mount(v);
	if (rc == 0) {
		rc = view_dir(v, &a);
		if (rc != 0)
			fprintf(stderr, "strata-s3: posix-bucket %s: directory "
				"%s of container %s: %s: %s\n",
				v->vw_spec.vs_name, v->vw_spec.vs_dir,
				view_cont(v, cb), clovis_strerror(rc),
				rc == -ENOTDIR ? "not a directory" : ns_errmsg());
	}
	if (rc == 0)
		rc = view_bucket_init(v, owner, &a);
	if (rc != 0) {
		if (v->vw_owns_ns)
			ns_umount(v->vw_ns);
		free(v);
		return rc;
	}
	views[nviews++] = v;
	fprintf(stderr, "strata-s3: view bucket %s: directory %s (inode %llu) of the "
	       "POSIX namespace in container %s, owner %s, blocks of %u "
	       "bytes\n", v->vw_spec.vs_name, v->vw_spec.vs_dir,
	       (unsigned long long)v->vw_ino, view_cont(v, cb), owner,
	       1u << v->vw_bk.bk_bshift);
	return 0;
}

static int view_cmp(const void *a, const void *b)
{
	const struct s3_view *x = *(struct s3_view *const *)a;
	const struct s3_view *y = *(struct s3_view *const *)b;

	return strcmp(x->vw_spec.vs_name, y->vw_spec.vs_name);
}

int s3_views_open(void)
{
	const struct s3_conf *c = &s3g.g_conf;
	struct s3_user u;
	uint32_t i;
	int rc = 0;

	if (c->sc_nviews == 0)
		return 0;
	if (s3_user_named(c->sc_posix_owner, &u) != 0) {
		fprintf(stderr, "strata-s3: view buckets: %s%s%s is not a user "
			"of the credentials file %s\n", c->sc_posix_owner[0]
			? "posix-owner '" : "the owner (its first user)",
			c->sc_posix_owner, c->sc_posix_owner[0] ? "'" : "",
			c->sc_creds);
		return -ENOENT;
	}
	for (i = 0; i < c->sc_nviews && rc == 0; i++)
		rc = view_open(c->sc_views[i], u.u_name);
	qsort(views, nviews, sizeof views[0], view_cmp);
	return rc;
}

void s3_views_close(void)
{
	uint32_t i;

	for (i = 0; i < nviews; i++) {
		struct s3_view *v = views[i];
		int rc = v->vw_owns_ns ? ns_umount(v->vw_ns) : 0;

		if (rc != 0)
			fprintf(stderr, "strata-s3: view bucket %s: unmounting "
				"its namespace: %s: %s\n", v->vw_spec.vs_name,
				clovis_strerror(rc), ns_errmsg());
		pthread_rwlock_destroy(&v->vw_bk.bk_conf);
		free(v);
		views[i] = NULL;
	}
	nviews = 0;
}

struct s3_bucket *s3_view_bucket(const char *name)
{
	uint32_t i;

	for (i = 0; i < nviews; i++)
		if (strcmp(views[i]->vw_spec.vs_name, name) == 0)
			return &views[i]->vw_bk;
	return NULL;
}

const struct s3_bucket *s3_view_nth(uint32_t i)
{
	return i < nviews ? &views[i]->vw_bk : NULL;
}

/* --------------------------------------------------------- keys, paths */

/*
 * Why key k (kl > 0 bytes) cannot name a file under the view's directory,
 * or NULL: its path components are separated by '/', each 1 to
 * NS_NAME_MAX bytes (else *toolong), not "." or "..", without NUL, and it
 * does not end with '/'.
 */
static const char *key_path_bad(const struct s3_view *v, const char *k,
				size_t kl, bool *toolong)
{
	size_t i, j, hl = sizeof NS_ORPHANS_NAME - 1;

	*toolong = false;
	/* strata-fuse's hidden directory: no key of a view on the root */
	if (v->vw_ino == NS_ROOT_INO && kl >= hl &&
	    memcmp(k, NS_ORPHANS_NAME, hl) == 0 && (kl == hl || k[hl] == '/'))
		return "it names the mounts' hidden directory "
		       NS_ORPHANS_NAME;
	if (k[kl - 1] == '/')
		return "it ends with '/' (a directory, not a file)";
	for (i = 0; i < kl; i = j + 1) {
		for (j = i; j < kl && k[j] != '/'; j++)
			;
		if (j == i)
			return "it has an empty path component (a leading '/' "
			       "or '//')";
		if (memchr(k + i, 0, j - i) != NULL)
			return "it holds a NUL byte";
		if ((j - i == 1 && k[i] == '.') ||
		    (j - i == 2 && k[i] == '.' && k[i + 1] == '.'))
			return "it has a '.' or '..' path component";
		if (j - i > NS_NAME_MAX) {
			*toolong = true;
			return "a path component is over 255 bytes, the "
			       "longest file name";
		}
	}
	return NULL;
}

/*
 * The directory holding the last component of key k (a good path: see
 * key_path_bad()): walks the directories of its path from the view's
 * directory, and with create makes the missing ones (mode 0755, owned as
 * the view's directory).  *parent: that directory; name: the last
 * component.  0, -ENOENT (a directory missing, or the view's directory
 * gone), -ENOTDIR (a component is not a directory: *bad, the length of the
 * key prefix naming it), or the namespace's error.
 */
static int key_walk(struct s3_view *v, const char *k, size_t kl, bool create,
		    uint64_t *parent, char name[NS_NAME_MAX + 1], size_t *bad)
{
	uint64_t dir = v->vw_ino;
	struct ns_attr a;
	size_t i = 0, j;
	int rc;

	for (;;) {
		for (j = i; j < kl && k[j] != '/'; j++)
			;
		memcpy(name, k + i, j - i);
		name[j - i] = 0;
		if (j == kl) {
			*parent = dir;
			return 0;
		}
		rc = ns_lookup(v->vw_ns, dir, name, &a);
		if (rc == -ENOENT && create) {
			rc = ns_mkdir(v->vw_ns, dir, name, 0755, v->vw_uid,
				      v->vw_gid, &a);
			if (rc == -EEXIST)
				rc = ns_lookup(v->vw_ns, dir, name, &a);
		}
		if (rc != 0)
			return rc;
		if (!S_ISDIR(a.mode)) {
			*bad = j;
			return -ENOTDIR;
		}
		dir = a.ino;
		i = j + 1;
	}
}

/* The inode key k names (any type): 0, -ENOENT, -ENOTDIR, or the error. */
static int key_lookup(struct s3_view *v, const char *k, size_t kl,
		      struct ns_attr *a, uint64_t *parent)
{
	char name[NS_NAME_MAX + 1];
	size_t bad;
	int rc = key_walk(v, k, kl, false, parent, name, &bad);

	return rc != 0 ? rc : ns_lookup(v->vw_ns, *parent, name, a);
}

int s3_view_dir_find(struct s3_view *v, const char *p, size_t pl,
		     uint64_t *ino)
{
	struct ns_attr a;
	uint64_t parent;
	bool toolong;
	int rc;

	if (pl == 0 || key_path_bad(v, p, pl, &toolong) != NULL)
		return -ENOENT;
	rc = key_lookup(v, p, pl, &a, &parent);
	if (rc == 0 && !S_ISDIR(a.mode))
		rc = -ENOTDIR;
	if (rc == 0)
		*ino = a.ino;
	return rc;
}

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

/* --------------------------------------------------------- the record */

/*
 * The ETag of file a: the one its PUT kept in XA_ETAG while the file is
 * as that PUT left it (the same mtime and size), else "px-" and the MD5
 * of "ino-gen-mtime-size" in hex (stable while the file does not change;
 * the dash tells clients it is not the MD5 of the bytes).
 */
static void file_etag(struct s3_view *v, const struct ns_attr *a,
		      char etag[64])
{
	char xa[128], e[64], s[96];
	unsigned long long mt, sz;
	uint8_t md[16];
	unsigned int ml = 16;
	ssize_t n = ns_getxattr(v->vw_ns, a->ino, XA_ETAG, xa, sizeof xa - 1);

	if (n > 0) {
		xa[n] = 0;
		if (sscanf(xa, "%63s %llu %llu", e, &mt, &sz) == 3 &&
		    mt == ts_ns(&a->mtime) && sz == a->size) {
			snprintf(etag, 64, "%s", e);
			return;
		}
	}
	snprintf(s, sizeof s, "%llu-%llu-%llu-%llu",
		 (unsigned long long)a->ino, (unsigned long long)a->gen,
		 (unsigned long long)ts_ns(&a->mtime),
		 (unsigned long long)a->size);
	EVP_Digest(s, strlen(s), md, &ml, EVP_md5(), NULL);
	memcpy(etag, "px-", 3);
	s3_hex(md, 16, etag + 3);
}

/* The fields of xattr XA_META of ino (T_META, T_HDR) into rec: at most
 * what a PUT's headers can hold (S3_HEADERS_MAX), else none. */
static void file_meta(struct s3_view *v, uint64_t ino, struct s3_buf *rec)
{
	char *buf = malloc(S3_HEADERS_MAX);
	const uint8_t *val;
	size_t pos = 0;
	uint32_t n;
	uint8_t tag;
	ssize_t len = buf == NULL ? -ENOMEM
		      : ns_getxattr(v->vw_ns, ino, XA_META, buf, S3_HEADERS_MAX);

	while (len > 0 && s3_tlv_next(buf, (size_t)len, &pos, &tag, &val,
				      &n) == 1)
		if (tag == T_META || tag == T_HDR)
			s3_tlv_add(rec, tag, val, n);
	free(buf);
}

/* Object id into 16 bytes as records hold it (little-endian halves). */
static void id_raw(const struct clovis_id *id, uint8_t raw[16])
{
	int i;

	for (i = 0; i < 8; i++) {
		raw[i] = (uint8_t)(id->ci_hi >> (8 * i));
		raw[8 + i] = (uint8_t)(id->ci_lo >> (8 * i));
	}
}

/* The record of file a (data object id, NULL: none, of block shift bs). */
static void file_rec(struct s3_view *v, const struct ns_attr *a,
		     const struct clovis_id *id, uint32_t bs,
		     struct s3_buf *rec)
{
	char etag[64], ct[1024]; /* a longer type: not kept (the default) */
	uint8_t raw[16];
	ssize_t n;

	if (id != NULL) {
		id_raw(id, raw);
		s3_tlv_add(rec, T_ID, raw, 16);
		s3_tlv_u64(rec, T_BSHIFT, bs);
	} else {
		s3_tlv_add(rec, T_HOLE, "", 0);
	}
	s3_tlv_u64(rec, T_SIZE, a->size);
	s3_tlv_u64(rec, T_MTIME, ts_ns(&a->mtime));
	file_etag(v, a, etag);
	s3_tlv_add(rec, T_ETAG, etag, (uint32_t)strlen(etag));
	n = ns_getxattr(v->vw_ns, a->ino, XA_CTYPE, ct, sizeof ct);
	if (n > 0)
		s3_tlv_add(rec, T_CTYPE, ct, (uint32_t)n);
	else
		s3_tlv_add(rec, T_CTYPE, CTYPE_DEFAULT,
			   (uint32_t)strlen(CTYPE_DEFAULT));
	file_meta(v, a->ino, rec);
}

int s3_view_rec_get(struct s3_bucket *b, const char *k, size_t kl, void **v,
		    size_t *vl, struct s3_orec *r)
{
	struct s3_view *vw = b->bk_vw;
	struct s3_buf rec = {0};
	struct clovis_id id;
	struct ns_attr a;
	uint64_t parent;
	uint32_t bs = 0, tries = 0;
	bool toolong;
	int rc;

	if (kl == 0 || key_path_bad(vw, k, kl, &toolong) != NULL)
		return -ENOENT;
	for (;;) { /* the file replaced between its lookup and its data's:
		    * look it up again */
		rc = key_lookup(vw, k, kl, &a, &parent);
		if (rc == -ENOTDIR || (rc == 0 && !S_ISREG(a.mode)))
			rc = -ENOENT;
		if (rc != 0)
			return rc;
		rc = ns_data_id(vw->vw_ns, a.ino, &id, &bs);
		if ((rc != -ENOENT && rc != -ESTALE) ||
		    ++tries == S3_VIEW_TRIES)
			break;
	}
	if (rc == -ESTALE)
		rc = -ENOENT;
	if (rc != 0 && rc != -ENODATA)
		return rc;
	file_rec(vw, &a, rc == 0 ? &id : NULL, bs, &rec);
	if (rec.b_oom) {
		s3_buf_fini(&rec);
		return -ENOMEM;
	}
	rc = s3_orec_decode(rec.b_data, rec.b_len, r);
	if (rc != 0) {
		s3_buf_fini(&rec);
		return rc;
	}
	*v = rec.b_data;
	*vl = rec.b_len;
	return 0;
}

/* ------------------------------------------------------------ listing */

/* The record of file ino (for a listing: size, mtime, ETag) into rec,
 * decoded into *r: 0, or -ENOENT when it is gone or not a regular file. */
int s3_view_list_rec(struct s3_view *v, uint64_t ino, struct s3_buf *rec,
		     struct s3_orec *r)
{
	struct ns_attr a;
	char etag[64];
	int rc = ns_getattr(v->vw_ns, ino, &a);

	if (rc == 0 && !S_ISREG(a.mode))
		rc = -ENOENT;
	if (rc != 0)
		return rc == -ESTALE ? -ENOENT : rc;
	file_etag(v, &a, etag);
	s3_tlv_add(rec, T_HOLE, "", 0);
	s3_tlv_u64(rec, T_SIZE, a.size);
	s3_tlv_u64(rec, T_MTIME, ts_ns(&a.mtime));
	s3_tlv_add(rec, T_ETAG, etag, (uint32_t)strlen(etag));
	return rec->b_oom ? -ENOMEM
			    : s3_orec_decode(rec->b_data, rec->b_len, r);
}

/* Test builds: SIGKILL the gateway at a named point of a view PUT (the
 * kill test of s3_posix_view.py: "s3.view.before" the data written, not
 * linked; "s3.view.linked" linked, its in-flight record not deleted). */
static void view_fault(const char *point)
{
#ifdef STRATA_FAULT_INJECT
	if (FAULT_HIT(point)) {
		fprintf(stderr, "strata-s3: fault point %s: SIGKILL\n", point);
		raise(SIGKILL);
	}
#else
	(void)point;
#endif
}

/* ------------------------------------------------------------- replies */

/* The reply to a namespace error rc while doing what (ns_errmsg() says
 * which inode or entry). */
static int view_reply_ns(struct s3_req *rq, int rc, const char *what)
{
	if (rc == -ENOSPC)
		return s3_reply_err(rq, 507, "InsufficientStorage", "%s: no "
				    "space left in the store", what);
	if (rc == -ETIMEDOUT || rc == -EHOSTDOWN)
		return s3_reply_err(rq, 503, "ServiceUnavailable", "%s: %s",
				    what, clovis_strerror(rc));
	if (s3_tx_doubt(rc))
		return s3_reply_doubt(rq, rc, what);
	return s3_reply_err(rq, 500, "InternalError", "%s: %s: %s", what,
			    clovis_strerror(rc), ns_errmsg());
}

/* 409 for key k whose path meets a file (its prefix of bad bytes). */
static int reply_parent_file(struct s3_req *rq, size_t bad)
{
	return s3_reply_err(rq, 409, "ParentIsObject", "Key '%.300s' cannot be "
			    "written: '%.*s' is a file in view bucket '%s' "
			    "(a POSIX directory), not a directory; nothing was "
			    "stored", rq->rq_key, (int)(bad > 300 ? 300 : bad),
			    rq->rq_key, rq->rq_bucket);
}

static int reply_is_dir(struct s3_req *rq)
{
	return s3_reply_err(rq, 409, "ObjectExistsAsDirectory", "Key '%.300s' "
			    "names a directory in view bucket '%s' (a POSIX "
			    "directory): an object cannot replace it; nothing "
			    "was stored", rq->rq_key, rq->rq_bucket);
}

/* ----------------------------------------------------------- PutObject */

/* Headers of a PutObject that a view bucket does not keep: refused 501
 * rather than stored without them.  NULL when none is there. */
static const char *put_unsupported(struct s3_req *rq)
{
	static const char *const hdrs[] = {
		"x-amz-tagging", "x-amz-grant-read", "x-amz-grant-read-acp",
		"x-amz-grant-write-acp", "x-amz-grant-full-control",
		"x-amz-object-lock-mode", "x-amz-object-lock-retain-until-date",
		"x-amz-object-lock-legal-hold",
	};
	const char *acl = s3_hdr(rq, "x-amz-acl");
	size_t i;

	for (i = 0; i < sizeof hdrs / sizeof hdrs[0]; i++)
		if (s3_hdr(rq, hdrs[i]) != NULL)
			return strncmp(hdrs[i], "x-amz-object-lock", 17) == 0
			       ? "x-amz-object-lock-* (object lock)" : hdrs[i];
	if (acl != NULL && strcmp(acl, "private") != 0 &&
	    strcmp(acl, "bucket-owner-full-control") != 0)
		return "x-amz-acl (an ACL other than private)";
	return NULL;
}

/* If-Match / If-None-Match of a PUT against the file now (under the key's
 * lock): 0, or the reply was sent (412 / 404). */
static int put_cond(struct s3_req *rq)
{
	const char *im = s3_hdr(rq, "If-Match"), *inm = s3_hdr(rq, "If-None-Match");
	struct s3_orec r;
	void *v = NULL;
	size_t vl;
	int rc;

	if (im == NULL && inm == NULL)
		return 0;
	rc = s3_view_rec_get(rq->rq_bk, rq->rq_key, rq->rq_key_len, &v, &vl,
			     &r);
	if (rc == -ENOENT && im != NULL) {
		s3_reply_cond(rq, -ENODATA);
		rc = -1;
	} else if (rc == 0 && ((im != NULL && !s3_etag_in(im, r.or_etag)) ||
			       (inm != NULL && s3_etag_in(inm, r.or_etag)))) {
		s3_reply_cond(rq, -EEXIST);
		rc = -1;
	} else if (rc != 0 && rc != -ENOENT) {
		view_reply_ns(rq, rc, "reading the key's file");
		rc = -1;
	} else {
		rc = 0;
	}
	free(v);
	return rc;
}

/* The xattrs of the file a PUT linked (best effort: logged, the PUT has
 * happened): the ETag with the file's mtime and size, the content type,
 * the x-amz-meta-* and kept headers (pc_extra, s3_rec_attrs_from_req()). */
static void put_xattrs(struct s3_req *rq, struct put_ctx *pc,
		       const struct ns_attr *a, const char *etag)
{
	struct s3_view *v = rq->rq_bk->bk_vw;
	struct s3_buf meta = {0};
	const uint8_t *val;
	size_t pos = 0;
	uint32_t n;
	uint8_t tag;
	char xa[128];
	int rc;

	snprintf(xa, sizeof xa, "%s %llu %llu", etag,
		 (unsigned long long)ts_ns(&a->mtime),
		 (unsigned long long)a->size);
	rc = ns_setxattr(v->vw_ns, a->ino, XA_ETAG, xa, strlen(xa), 0);
	while (rc == 0 && s3_tlv_next(pc->pc_extra.b_data, pc->pc_extra.b_len,
				      &pos, &tag, &val, &n) == 1) {
		if (tag == T_CTYPE)
			rc = ns_setxattr(v->vw_ns, a->ino, XA_CTYPE, val, n, 0);
		else if (tag == T_META || tag == T_HDR)
			s3_tlv_add(&meta, tag, val, n);
	}
	if (rc == 0 && meta.b_len > 0)
		rc = meta.b_oom ? -ENOMEM
				: ns_setxattr(v->vw_ns, a->ino, XA_META,
					      meta.b_data, meta.b_len, 0);
	s3_buf_fini(&meta);
	if (rc != 0 && rc != -ENOENT) /* -ENOENT: replaced meanwhile */
		fprintf(stderr, "strata-s3: %s view bucket %s: key %.300s: "
			"its xattrs: %s: %s (GET gives a derived ETag and no "
			"content type)\n", rq->rq_id, rq->rq_bucket, rq->rq_key,
			clovis_strerror(rc), ns_errmsg());
}

/* After a change in directory dir failed with -ENOENT: is dir still there
 * (then the -ENOENT is not its removal)?  why: the change's message. */
static bool dir_there(struct s3_view *v, uint64_t dir, char *why, size_t wl)
{
	struct ns_attr d;

	snprintf(why, wl, "%s", ns_errmsg());
	return ns_getattr(v->vw_ns, dir, &d) == 0;
}

/*
 * Link the writer's object as the key's file (its directories made), up to
 * S3_VIEW_TRIES times when a directory of the path is removed meanwhile.
 * 0 with the file's attributes in *a, or the namespace's error once the
 * reply is sent.
 */
static int put_link(struct s3_req *rq, struct ns_attr *a)
{
	struct s3_view *v = rq->rq_bk->bk_vw;
	struct s3_wr *w = rq->rq_wr;
	char name[NS_NAME_MAX + 1], why[256];
	struct ns_attr d;
	uint64_t parent;
	uint32_t tries = 0;
	size_t bad = 0;
	int rc;

	do {
		rc = key_walk(v, rq->rq_key, rq->rq_key_len, true, &parent,
			      name, &bad);
		if (rc == 0)
			rc = ns_link_object(v->vw_ns, parent, name,
					    &w->w_o.ob_entity.en_id, w->w_bshift,
					    w->w_len, 0644, v->vw_uid,
					    v->vw_gid, a);
		/* -ENOENT with the directory there: not a race (an object
		 * of the change refused, ns_errmsg() says which) */
		if (rc == -ENOENT && dir_there(v, parent, why, sizeof why)) {
			s3_reply_err(rq, 500, "InternalError", "linking the "
				     "object as the key's file: %s: %s",
				     clovis_strerror(rc), why);
			return -EIO;
		}
	} while (rc == -ENOENT && ++tries < S3_VIEW_TRIES);
	if (rc == 0)
		return 0;
	if (rc == -ENOTDIR)
		reply_parent_file(rq, bad);
	else if (rc == -EISDIR)
		reply_is_dir(rq);
	else if (rc == -ENOENT && ns_getattr_gen(v->vw_ns, v->vw_ino,
						 v->vw_gen, &d) != 0)
		s3_reply_err(rq, 404, "NoSuchBucket", "The directory %s of view "
			     "bucket '%s' is gone (removed through POSIX)",
			     v->vw_spec.vs_dir, rq->rq_bucket);
	else if (rc == -ENOENT)
		s3_reply_err(rq, 503, "SlowDown", "the directories of key "
			     "'%.300s' keep being removed through POSIX (%s): "
			     "retry", rq->rq_key, ns_errmsg());
	else
		view_reply_ns(rq, rc, "linking the object as the key's file");
	return rc;
}

/*
 * The body is in: check it, link the object as the file (one dtx of the
 * namespace: the reader sees the old file or the new one), drop its
 * in-flight record (the file names it now), set the xattrs, make it all
 * durable, reply.  Under the key's lock: this gateway's PUTs of one key
 * link and set their xattrs one at a time.
 */
static int view_put_end(struct s3_req *rq)
{
	struct put_ctx *pc = rq->rq_ctx;
	struct s3_view *v = rq->rq_bk->bk_vw;
	pthread_mutex_t *l = s3_key_lock((const uint8_t *)rq->rq_key,
					 rq->rq_key_len);
	struct ns_attr a;
	char etag[33];
	int rc;

	if (s3_put_finish(rq, pc, etag) != 0) {
		s3_drop_writer(rq);
		return 0;
	}
	pthread_mutex_lock(l);
	view_fault("s3.view.before");
	rc = put_cond(rq);
	if (rc == 0)
		rc = put_link(rq, &a);
	if (rc == 0)
		view_fault("s3.view.linked");
	if (rc != 0) {
		pthread_mutex_unlock(l);
		/* a link in doubt (cluster mode) may have happened: the
		 * object stays with its in-flight record (restart rule) */
		if (s3_tx_doubt(rc)) {
			s3_wr_keep(rq->rq_wr);
			free(rq->rq_wr);
			rq->rq_wr = NULL;
		} else {
			s3_drop_writer(rq);
		}
		return 0;
	}
	s3_inflight_del(rq->rq_wr->w_ikey);
	/* the checksums sent were verified; returned, not kept (a POSIX
	 * write would leave them wrong) */
	s3_sums_reply(rq, &rq->rq_wr->w_sums, true);
	s3_wr_done(rq->rq_wr, true);
	free(rq->rq_wr);
	rq->rq_wr = NULL;
	put_xattrs(rq, pc, &a, etag);
	pthread_mutex_unlock(l);
	rc = ns_fsync(v->vw_ns, a.ino, false);
	if (rc != 0) {
		rq->rq_hdrs.b_len = 0; /* not the checksums of a PUT's 200 */
		return view_reply_ns(rq, rc, "making the file durable");
	}
	s3_etag_hdr(rq, etag);
	return s3_reply_empty(rq, 200);
}

/* Before the body: the key can be a file (a good path, no directory of
 * that name, no file where a directory of its path is).  Replies: -1. */
static int put_key_check(struct s3_req *rq)
{
	struct s3_view *v = rq->rq_bk->bk_vw;
	char name[NS_NAME_MAX + 1];
	struct ns_attr a;
	uint64_t parent;
	size_t bad = 0;
	bool toolong;
	const char *why = key_path_bad(v, rq->rq_key, rq->rq_key_len, &toolong);
	int rc;

	if (why != NULL)
		return s3_reply_err(rq, 400, toolong ? "KeyTooLongError"
				    : "InvalidArgument", "Key '%.300s' cannot "
				    "be a file of view bucket '%s' (a POSIX "
				    "directory): %s", rq->rq_key, rq->rq_bucket,
				    why), -1;
	rc = key_walk(v, rq->rq_key, rq->rq_key_len, false, &parent, name,
		      &bad);
	if (rc == 0)
		rc = ns_lookup(v->vw_ns, parent, name, &a);
	if (rc == -ENOTDIR)
		return reply_parent_file(rq, bad), -1;
	if (rc == 0 && S_ISDIR(a.mode))
		return reply_is_dir(rq), -1;
	if (rc != 0 && rc != -ENOENT)
		return view_reply_ns(rq, rc, "looking up the key's path"), -1;
	return 0;
}

/* PutObject into a view bucket: the writer streams the body into a fresh
 * object of the namespace's container with the namespace's block size;
 * view_put_end() links it. */
static int view_put(struct s3_req *rq)
{
	struct put_ctx *pc;
	const char *un;

	rq->rq_op = "PutObject";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:PutObject") != 0 ||
	    s3_need_key(rq) != 0)
		return 0;
	un = put_unsupported(rq);
	if (un != NULL)
		return s3_reply_err(rq, 501, "NotImplemented", "%s is not "
				    "kept by view bucket '%s' (a POSIX "
				    "directory); nothing was stored", un,
				    rq->rq_bucket);
	if (put_key_check(rq) != 0)
		return 0;
	pc = calloc(1, sizeof *pc);
	if (pc == NULL)
		return s3_reply_err(rq, 500, "InternalError", "out of memory");
	rq->rq_ctx = pc;
	rq->rq_cleanup = s3_put_cleanup;
	if (s3_rec_attrs_from_req(rq, &pc->pc_extra) != 0)
		return s3_reply_err(rq, 400, "MetadataTooLarge", "Your "
				    "metadata headers exceed the maximum "
				    "allowed metadata size (%u bytes)",
				    S3_META_MAX);
	pc->pc_rk = rq->rq_key;
	pc->pc_rkl = rq->rq_key_len;
	if (s3_put_begin(rq, pc) != 0)
		return 0;
	rq->rq_wr->w_hold = false; /* no s3_tx records it: nothing holds */
	rq->rq_end = view_put_end;
	return 0;
}

/* -------------------------------------------------------- DeleteObject */

int s3_view_delete(struct s3_bucket *b, const char *k, size_t kl)
{
	struct s3_view *v = b->bk_vw;
	pthread_mutex_t *l = s3_key_lock((const uint8_t *)k, kl);
	char name[NS_NAME_MAX + 1], why[256] = "";
	struct ns_attr a, a2;
	uint64_t parent;
	size_t bad;
	bool toolong;
	int rc;

	if (kl == 0 || key_path_bad(v, k, kl, &toolong) != NULL)
		return 0; /* no file can have that key */
	pthread_mutex_lock(l);
	rc = key_walk(v, k, kl, false, &parent, name, &bad);
	if (rc == 0)
		rc = ns_lookup(v->vw_ns, parent, name, &a);
	if (rc == 0 && S_ISREG(a.mode)) {
		rc = ns_unlink(v->vw_ns, parent, name);
		/* the entry still there: not its removal by someone else */
		if (rc == -ENOENT && dir_there(v, parent, why, sizeof why) &&
		    ns_lookup(v->vw_ns, parent, name, &a2) == 0 &&
		    a2.ino == a.ino)
			rc = -EIO;
	}
	if (rc == 0)
		rc = ns_fsync(v->vw_ns, parent, false);
	pthread_mutex_unlock(l);
	/* no such file (a directory, a symlink: no key either) */
	if (rc == -ENOENT || rc == -ENOTDIR || rc == -EISDIR)
		rc = 0;
	if (rc != 0)
		fprintf(stderr, "strata-s3: view bucket %s: deleting %.300s: "
			"%s: %s\n", b->bk_name, k, clovis_strerror(rc),
			rc == -EIO ? why : ns_errmsg());
	return rc;
}

/* ------------------------------------------------------------ recovery */

/* Does any inode of v's namespace have data object id?  A scan of the
 * inode table (NS_ID_INODES, ns.h: key the ino, value struct
 * ns_inode_rec, little-endian); true also when it cannot be read. */
_Static_assert(NS_IF_DATA <= 0xff, "NS_IF_DATA is in it_flags' low byte");

static bool inodes_have(struct s3_view *v, const struct clovis_id *id)
{
	void *keys[64], *vals[64];
	size_t kls[64], vls[64];
	uint8_t cur[16];
	size_t curl = 0;
	uint32_t nr, k, rounds = 0;
	bool found = false;
	int rc = 0;

	if (!v->vw_inodes_open) {
		struct clovis_op *op;

		rc = clovis_idx_init(&v->vw_inodes, &v->vw_bk.bk_cont.co_realm,
				     &NS_ID_INODES);
		if (rc == 0)
			rc = clovis_entity_op(&v->vw_inodes.in_entity,
					      CLOVIS_EO_OPEN, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		if (rc != 0)
			return true;
		v->vw_inodes_open = true;
	}
	do {
		nr = 64;
		rc = s3_idx_next(&v->vw_inodes, curl ? cur : NULL, curl,
				 curl != 0, keys, kls, vals, vls, &nr);
		for (k = 0; rc == 0 && k < nr; k++) {
			const uint8_t *r = vals[k];
			struct clovis_id d;

			if (vls[k] >= sizeof(struct ns_inode_rec) &&
			    (r[offsetof(struct ns_inode_rec, it_flags)] &
			     NS_IF_DATA)) { /* its low byte (little-endian) */
				d.ci_hi = s3_u64(r + offsetof(struct ns_inode_rec,
							      it_data));
				d.ci_lo = s3_u64(r + offsetof(struct ns_inode_rec,
							      it_data) + 8);
				found = found || clovis_id_cmp(&d, id) == 0;
			}
			if (kls[k] <= sizeof cur) {
				memcpy(cur, keys[k], kls[k]);
				curl = kls[k];
			}
		}
		for (k = 0; k < nr; k++) {
			free(keys[k]);
			free(vals[k]);
		}
	} while (rc == 0 && nr == 64 && !found && ++rounds < (1u << 26));
	return found || rc != 0;
}

bool s3_view_refs(struct s3_bucket *b, const uint8_t *key, size_t kl,
		  const struct clovis_id *id)
{
	struct s3_view *v = b->bk_vw;
	struct clovis_id d;
	struct ns_attr a;
	uint64_t parent;
	uint32_t bs;
	bool toolong;

	if (kl > 0 && kl <= S3_KEY_MAX &&
	    key_path_bad(v, (const char *)key, kl, &toolong) == NULL &&
	    key_lookup(v, (const char *)key, kl, &a, &parent) == 0 &&
	    S_ISREG(a.mode) && ns_data_id(v->vw_ns, a.ino, &d, &bs) == 0 &&
	    clovis_id_cmp(&d, id) == 0)
		return true;
	return inodes_have(v, id);
}

/* -------------------------------------------------------------- routes */

/* CreateBucket of a view bucket's name: it exists, configured. */
static int view_create_bucket(struct s3_req *rq)
{
	struct s3_bucket *b = s3_view_bucket(rq->rq_bucket);
	char cb[CLOVIS_ID_STR_LEN];

	rq->rq_op = "CreateBucket";
	if (!rq->rq_authed || rq->rq_user.u_name[0] == 0)
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied "
				    "(a bucket is created by a user)");
	if (strcmp(b->bk_owner, rq->rq_user.u_name) != 0)
		return s3_reply_err(rq, 409, "BucketAlreadyExists", "The "
				    "requested bucket name is not available.");
	return s3_reply_err(rq, 409, "BucketAlreadyOwnedByYou", "Your "
			    "previous request to create the named bucket "
			    "succeeded and you already own it (view bucket "
			    "'%s': the directory %s of the POSIX namespace in "
			    "container %s, configured on the gateway)",
			    b->bk_name, b->bk_vw->vw_spec.vs_dir,
			    view_cont(b->bk_vw, cb));
}

/* DeleteBucket of a view bucket: refused (its owner is told why). */
static int view_delete_bucket(struct s3_req *rq)
{
	char cb[CLOVIS_ID_STR_LEN];

	rq->rq_op = "DeleteBucket";
	if (s3_need_bucket(rq, S3_P_OWNER, "s3:DeleteBucket") != 0)
		return 0;
	return s3_reply_err(rq, 405, "MethodNotAllowed", "Bucket '%s' is the "
			    "directory %s of the POSIX namespace in container "
			    "%s, configured on the gateway (posix-bucket): it "
			    "cannot be deleted through S3; nothing was changed",
			    rq->rq_bucket, rq->rq_bk->bk_vw->vw_spec.vs_dir,
			    view_cont(rq->rq_bk->bk_vw, cb));
}

/* GetBucketLocation: none given (us-east-1, an empty element). */
static int view_location(struct s3_req *rq)
{
	struct s3_buf x = {0};

	rq->rq_op = "GetBucketLocation";
	if (s3_need_bucket(rq, S3_P_OWNER, "s3:GetBucketLocation") != 0)
		return 0;
	s3_buf_str(&x, XHDR "<LocationConstraint xmlns=\"" XMLNS "\"/>");
	return s3_reply_xml(rq, 200, &x);
}

static bool has_sub(const char **sub, uint32_t n, const char *s)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (strcmp(sub[i], s) == 0)
			return true;
	return false;
}

/* The operation a request on a view bucket names that the bucket does not
 * do, or NULL when the ordinary routes serve it (GET and HEAD of objects,
 * of their ?acl, ?tagging, ?attributes, ?partNumber; DeleteObject,
 * DeleteObjects; listings; reads of bucket configuration, which is none). */
static const char *view_refused(struct s3_req *rq, int on, const char **sub,
				uint32_t n)
{
	const char *m = rq->rq_method;
	bool read = strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;

	if (has_sub(sub, n, "uploads") || has_sub(sub, n, "uploadId"))
		return on == 1 ? "ListMultipartUploads (multipart uploads)"
		       : strcmp(m, "POST") == 0 && has_sub(sub, n, "uploads")
		       ? "CreateMultipartUpload (multipart uploads)"
		       : strcmp(m, "PUT") == 0
		       ? "UploadPart (multipart uploads)"
		       : strcmp(m, "POST") == 0
		       ? "CompleteMultipartUpload (multipart uploads)"
		       : strcmp(m, "DELETE") == 0
		       ? "AbortMultipartUpload (multipart uploads)"
		       : "ListParts (multipart uploads)";
	if (has_sub(sub, n, "versioning") || has_sub(sub, n, "versions"))
		return "versioning (?versioning, ListObjectVersions)";
	if (has_sub(sub, n, "object-lock") || has_sub(sub, n, "retention") ||
	    has_sub(sub, n, "legal-hold"))
		return "object lock";
	if (on == 2 && n == 0 && strcmp(m, "PUT") == 0)
		return "CopyObject into a view bucket";
	if (read || n == 0 || (on == 1 && strcmp(m, "POST") == 0 &&
			       has_sub(sub, n, "delete")))
		return NULL;
	if (has_sub(sub, n, "tagging"))
		return on == 1 ? "changing bucket tags (?tagging)"
			       : "object tagging (PutObjectTagging, "
				 "DeleteObjectTagging)";
	if (has_sub(sub, n, "acl"))
		return on == 1 ? "PutBucketAcl" : "PutObjectAcl";
	if (has_sub(sub, n, "policy"))
		return "changing the bucket policy (?policy)";
	if (has_sub(sub, n, "ownershipControls"))
		return "changing ownership controls (?ownershipControls)";
	if (has_sub(sub, n, "cors") || has_sub(sub, n, "lifecycle"))
		return "changing bucket configuration (?cors, ?lifecycle)";
	return NULL; /* anything else: the ordinary routes (501 there) */
}

bool s3_view_route(struct s3_req *rq, int on, const char **sub, uint32_t n)
{
	struct s3_bucket *b = s3_view_bucket(rq->rq_bucket);
	const char *m = rq->rq_method, *what;
	char cb[CLOVIS_ID_STR_LEN];

	if (on == 1 && n == 0 && strcmp(m, "PUT") == 0)
		return view_create_bucket(rq), true;
	if (on == 1 && n == 0 && strcmp(m, "DELETE") == 0)
		return view_delete_bucket(rq), true;
	if (on == 1 && n == 1 && strcmp(m, "GET") == 0 &&
	    has_sub(sub, n, "location"))
		return view_location(rq), true;
	if (on == 2 && n == 0 && strcmp(m, "PUT") == 0 &&
	    s3_hdr(rq, "x-amz-copy-source") == NULL)
		return view_put(rq), true;
	what = view_refused(rq, on, sub, n);
	if (what == NULL)
		return false;
	rq->rq_op = "NotImplemented";
	s3_reply_err(rq, 501, "NotImplemented", "%s is not implemented on view "
		     "bucket '%s' (the directory %s of the POSIX namespace in "
		     "container %s); nothing was changed", what, rq->rq_bucket,
		     b->bk_vw->vw_spec.vs_dir, view_cont(b->bk_vw, cb));
	return true;
}
