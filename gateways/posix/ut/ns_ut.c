/*
 * ns_ut.c — the POSIX namespace (gateways/posix/ns.h) on an embedded store:
 * mkfs and mount, names and their errors, directories and readdir paging,
 * rename in all its forms, links, symlinks, xattrs, file data against an
 * in-memory model, holes and truncate, the size/mtime cache, persistence
 * across umount and across a reopen of the store, generations, the S3
 * shared view (ns_link_object), statfs, threads, and a SIGKILL in the
 * middle of changes.  After most tests ns_check() walks the namespace as
 * a file system checker would: every entry names a live inode, link
 * counts and ".." agree, no inode, xattr, index or object is left over.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <endian.h>
#include <sys/time.h>
#include <unistd.h>

#include "gateways/posix/ns.h"
#include "gateways/posix/ns_internal.h" /* ns_pend_nr: what fsync leaves */
#include "tests/ut.h"

#define DEV_SIZE (64ull << 20)
#define ROOT NS_ROOT_INO

static const char conf_text[] =
	"device_fill: reserve\n"
	"devices:\n"
	"  - { tier: nvram }\n"
	"  - { tier: flash }\n"
	"  - { tier: flash }\n";

static struct clovis *cl;
static struct ns *ns;         /* the suite's namespace, mounted */
static char dir[512], conf_path[600], tag[32];
/* The suite's container.  A store holds one namespace (ns.h's meta
 * indices have fixed ids), so every test works in a directory of its own
 * under the root of this one. */
static struct clovis_id cid = {0x5053580000000001ull, 1};

/* Check an int or ssize_t result; on a mismatch print ns_errmsg(). */
#define RC(expr, want)                                                      \
	do {                                                                \
		long long r_ = (long long)(expr), w_ = (long long)(want);  \
		if (r_ != w_)                                               \
			fprintf(stderr, "\n%s:%d: %s = %lld, want %lld: %s\n",\
				__FILE__, __LINE__, #expr, r_, w_,          \
				ns_errmsg());                               \
		CU_ASSERT_EQUAL(r_, w_);                                    \
	} while (0)

static struct clovis *store_open(const char *d)
{
	struct clovis_conf c = {.cc_data_dir = d, .cc_nvram_dir = d,
				.cc_flags = CLOVIS_CONF_CREATE,
				.cc_dev_size = DEV_SIZE,
				.cc_config = conf_path};
	struct clovis *out = NULL;

	if (clovis_init(&out, &c) != 0)
		fprintf(stderr, "posix_ns: clovis_init %s: %s\n", d,
			clovis_errmsg());
	return out;
}

/* The suite's store and namespace (a cluster keeps the namespace of an
 * earlier run: mkfs then says -EEXIST). */
static int suite_open(void)
{
	int rc;

	cl = store_open(dir);
	if (cl == NULL)
		return -1;
	rc = ns_mkfs(cl, &cid, NULL);
	if (rc != 0 && rc != -EEXIST) {
		fprintf(stderr, "posix_ns: mkfs: %s\n", ns_errmsg());
		return -1;
	}
	rc = ns_mount(cl, &cid, NULL, &ns);
	if (rc != 0)
		fprintf(stderr, "posix_ns: mount: %s\n", ns_errmsg());
	return rc;
}

static void suite_close(void)
{
	RC(ns_umount(ns), 0);
	ns = NULL;
	clovis_fini(cl);
	cl = NULL;
}

static int suite_init(void)
{
	const char *d = ut_tmpdir("posix_ns");
	FILE *f;

	if (d == NULL)
		return -1;
	snprintf(dir, sizeof dir, "%s/store", d);
	snprintf(conf_path, sizeof conf_path, "%s/ns.yaml", d);
	snprintf(tag, sizeof tag, "%x", (unsigned)time(NULL) ^ getpid());
	f = fopen(conf_path, "w");
	if (f == NULL || fputs(conf_text, f) < 0 || fclose(f) != 0)
		return -1;
	return suite_open();
}

static int suite_fini(void)
{
	if (ns != NULL)
		ns_umount(ns);
	clovis_fini(cl);
	return ut_cluster_mode() ? 0 : clovis_store_destroy(dir);
}

/* The test's own directory under the root ("NAME.TAG"). */
static uint64_t topdir(const char *name)
{
	char n[NS_NAME_MAX + 1];
	struct ns_attr a = {0};

	snprintf(n, sizeof n, "%s.%s", name, tag);
	RC(ns_mkdir(ns, ROOT, n, 0755, 0, 0, &a), 0);
	return a.ino;
}

/* A deterministic generator (xorshift64*), seeded per test. */
static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 0x2545F4914F6CDD1Dull;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(seed >> 56);
	}
}

static uint64_t mk(uint64_t parent, const char *name)
{
	struct ns_attr a = {0};

	RC(ns_mknod(ns, parent, name, S_IFREG | 0644, 0, 1000, 1000, &a), 0);
	return a.ino;
}

static uint64_t mkd(uint64_t parent, const char *name)
{
	struct ns_attr a = {0};

	RC(ns_mkdir(ns, parent, name, 0755, 1000, 1000, &a), 0);
	return a.ino;
}

static uint32_t nlink_of(uint64_t ino)
{
	struct ns_attr a = {0};

	RC(ns_getattr(ns, ino, &a), 0);
	return a.nlink;
}

static uint64_t size_of(uint64_t ino)
{
	struct ns_attr a = {0};

	RC(ns_getattr(ns, ino, &a), 0);
	return a.size;
}

static uint64_t ino_of(uint64_t parent, const char *name)
{
	struct ns_attr a = {0};
	int rc = ns_lookup(ns, parent, name, &a);

	return rc == 0 ? a.ino : 0;
}

static uint64_t ino_of_ns(struct ns *n, uint64_t parent, const char *name)
{
	struct ns_attr a = {0};

	return ns_lookup(n, parent, name, &a) == 0 ? a.ino : 0;
}

/* Every entry of directory d (at most max), in order; returns the count. */
static int list_all(uint64_t d, struct ns_dirent *out, int max)
{
	char after[NS_NAME_MAX + 1] = "";
	int n = 0, got;

	while (n < max && (got = ns_readdir(ns, d, after, out + n,
					    max - n < 7 ? max - n : 7)) > 0) {
		snprintf(after, sizeof after, "%s", out[n + got - 1].name);
		n += got;
	}
	return n;
}

/* ------------------------------------------------------- the checker */

/* What ns_check() found for one inode. */
struct ck_ino {
	uint64_t ino;
	uint32_t refs;      /* entries naming it */
	uint32_t subdirs;   /* directories among its entries */
	uint64_t parent;    /* the directory of its (last) entry */
	bool dir;
};

struct ck {
	struct ck_ino *v;
	uint32_t nr, cap;
	int errors;
};

static struct ck_ino *ck_get(struct ck *c, uint64_t ino)
{
	for (uint32_t i = 0; i < c->nr; i++)
		if (c->v[i].ino == ino)
			return &c->v[i];
	if (c->nr == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->v = realloc(c->v, c->cap * sizeof *c->v);
	}
	c->v[c->nr] = (struct ck_ino){.ino = ino};
	return &c->v[c->nr++];
}

#define CK_FAIL(c, ...)                                                     \
	do {                                                                \
		fprintf(stderr, "\nns_check: " __VA_ARGS__);                \
		fprintf(stderr, "\n");                                      \
		(c)->errors++;                                              \
	} while (0)

/* Walk the tree from the root: every entry's inode exists and has its
 * type; counts references. */
static void ck_walk(struct ck *c, uint64_t d, uint32_t depth)
{
	struct ns_dirent *e = malloc(4096 * sizeof *e);
	int n = list_all(d, e, 4096);

	for (int i = 0; i < n; i++) {
		struct ns_attr a;
		struct ck_ino *ci;

		if (ns_getattr(ns, e[i].ino, &a) != 0) {
			CK_FAIL(c, "entry %s of %#" PRIx64 ": inode %#" PRIx64
				" missing", e[i].name, d, e[i].ino);
			continue;
		}
		if ((a.mode & S_IFMT) != e[i].type)
			CK_FAIL(c, "entry %s: type %#o, inode %#o", e[i].name,
				e[i].type, a.mode & S_IFMT);
		ci = ck_get(c, e[i].ino);
		ci->refs++;
		ci->parent = d;
		ci->dir = S_ISDIR(a.mode);
		if (ci->dir) {
			ck_get(c, d)->subdirs++;
			if (depth < 64)
				ck_walk(c, e[i].ino, depth + 1);
		}
	}
	free(e);
}

/* Every key (8-byte inode prefix) of index id in the container. */
static int ck_keys(const struct clovis_id *id, uint64_t *out, int max,
		   size_t *klen_min)
{
	struct clovis_container co;
	struct clovis_idx ix;
	struct clovis_op *op;
	char kb[CLOVIS_KEY_MAX], vb[1];
	int n = 0;

	clovis_container_init(&co, cl, &cid);
	clovis_idx_init(&ix, &co.co_realm, id);
	if (clovis_entity_op(&ix.in_entity, CLOVIS_EO_OPEN, &op) != 0 ||
	    clovis_op_sync(op) != 0)
		return -1;
	*klen_min = CLOVIS_KEY_MAX;
	for (size_t kl = 0; n < max;) {
		void *kp = kb, *vp = vb;
		size_t vl = 0;
		struct clovis_bufvec k = {1, &kp, &kl}, v = {1, &vp, &vl};
		int32_t rcs;
		uint64_t be;

		if (clovis_idx_op(&ix, CLOVIS_IC_NEXT, &k, &v, &rcs,
				  CLOVIS_IF_CALLER_BUFS |
				  (n ? CLOVIS_IF_EXCLUDE_START_KEY : 0), &op) ||
		    clovis_op_sync(op) != 0)
			return -1;
		if (rcs == -ENOENT)
			break;
		memcpy(&be, kb, 8);
		out[n++] = be64toh(be);
		if (kl < *klen_min)
			*klen_min = kl;
	}
	return n;
}

static bool ck_known(const struct ck *c, uint64_t ino)
{
	for (uint32_t i = 0; i < c->nr; i++)
		if (c->v[i].ino == ino)
			return true;
	return false;
}

/* Link counts, "..", and the inode table holding exactly what the tree
 * reaches. */
static void ck_inodes(struct ck *c)
{
	uint64_t *keys = malloc(20000 * sizeof *keys);
	size_t kmin;
	int n = ck_keys(&NS_ID_INODES, keys, 20000, &kmin);

	for (uint32_t i = 0; i < c->nr; i++) {
		struct ck_ino *ci = &c->v[i];
		struct ns_attr a, dd;
		uint32_t want = ci->dir ? 2 + ci->subdirs : ci->refs;

		if (ns_getattr(ns, ci->ino, &a) != 0)
			continue;
		if (a.nlink != want)
			CK_FAIL(c, "inode %#" PRIx64 ": nlink %u, want %u",
				ci->ino, a.nlink, want);
		if (ci->dir && (ns_lookup(ns, ci->ino, "..", &dd) != 0 ||
				dd.ino != ci->parent))
			CK_FAIL(c, "directory %#" PRIx64 ": \"..\" is %#"
				PRIx64 ", want %#" PRIx64, ci->ino, dd.ino,
				ci->parent);
	}
	if (n < 0)
		CK_FAIL(c, "inode table unreadable");
	for (int i = 0; i < n; i++)
		if (!ck_known(c, keys[i]))
			CK_FAIL(c, "inode %#" PRIx64 " reached by no entry",
				keys[i]);
	if (n >= 0 && (uint32_t)n != c->nr)
		CK_FAIL(c, "inode table has %d records, tree %u inodes", n,
			c->nr);
	n = ck_keys(&NS_ID_XATTRS, keys, 20000, &kmin);
	for (int i = 0; i < n; i++)
		if (!ck_known(c, keys[i]))
			CK_FAIL(c, "xattr of a gone inode %#" PRIx64, keys[i]);
	free(keys);
}

/* Entities of the container: a data object or directory index for each
 * live file or directory, nothing more. */
static void ck_entities(struct ck *c)
{
	struct clovis_container co;
	struct clovis_id ids[256], *after = NULL;
	uint32_t nr;

	clovis_container_init(&co, cl, &cid);
	for (int type = CLOVIS_ET_OBJ; type <= CLOVIS_ET_IDX; type++) {
		after = NULL;
		do {
			nr = 256;
			if (clovis_entity_list(cl, &co.co_realm, type, after,
					       ids, &nr) != 0)
				break;
			for (uint32_t i = 0; i < nr; i++) {
				struct ns_attr a;
				uint64_t hi = ids[i].ci_hi, lo = ids[i].ci_lo;
				bool ok = true; /* meta, the test's own */

				if (hi == NS_HI_DIR || hi == NS_HI_DATA)
					ok = ck_known(c, lo) &&
					     ns_getattr(ns, lo, &a) == 0 &&
					     (hi == NS_HI_DIR) ==
					     S_ISDIR(a.mode);
				if (!ok)
					CK_FAIL(c, "%s %#" PRIx64 ":%#" PRIx64
						" of no live inode",
						type == CLOVIS_ET_OBJ ?
						"object" : "index", hi, lo);
			}
			if (nr > 0)
				after = &ids[nr - 1];
		} while (nr == 256);
	}
}

/* Check the namespace whole; the number of problems. */
static int ns_check(void)
{
	struct ck c = {0};

	ck_get(&c, ROOT)->refs = 1;
	c.v[0].dir = true;
	c.v[0].parent = ROOT;
	ck_walk(&c, ROOT, 0);
	ck_inodes(&c);
	ck_entities(&c);
	free(c.v);
	CU_ASSERT_EQUAL(c.errors, 0);
	return c.errors;
}

/* -------------------------------------------------------- mkfs, mount */

static void ent_create(struct clovis_entity *e)
{
	struct clovis_op *op;

	RC(clovis_entity_op(e, CLOVIS_EO_CREATE, &op), 0);
	RC(clovis_op_sync(op), 0);
}

/* mkfs over a namespace, in a second container of the same store, bad
 * options; mount of containers without one; a read-only mount. */
static void test_mkfs_mount(void)
{
	struct clovis_id other = {0x5053580000000001ull,
				  0x10000 + strtoull(tag, NULL, 16)};
	struct ns_mkfs_opts bad = {.block_shift = 8};
	struct clovis_container co;
	struct ns_opts ro = {.read_only = true};
	const struct ns_super *sb = ns_super(ns);
	struct ns *ns2 = NULL;
	struct ns_attr a;

	RC(ns_mkfs(cl, &cid, NULL), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "holds a namespace"));
	RC(ns_mount(cl, &other, NULL, &ns2), -ENOENT); /* no container */
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "no such container"));
	clovis_container_init(&co, cl, &other);
	ent_create(&co.co_entity);
	RC(ns_mount(cl, &other, NULL, &ns2), -ENOENT); /* empty container */
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "holds no namespace"));
	CU_ASSERT_PTR_NULL(ns2);
	RC(ns_mkfs(cl, &other, NULL), -EEXIST); /* one namespace a store */
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "5053580000000001:1"));
	RC(ns_mkfs(cl, &other, &bad), -EINVAL);
	bad = (struct ns_mkfs_opts){.block_shift = 25};
	RC(ns_mkfs(cl, &other, &bad), -EINVAL);
	bad = (struct ns_mkfs_opts){.layout = CLOVIS_LAYOUT_COMPOSITE};
	RC(ns_mkfs(cl, &other, &bad), -EINVAL);
	bad = (struct ns_mkfs_opts){.tier = CLOVIS_TIER_NR};
	RC(ns_mkfs(cl, &other, &bad), -EINVAL);
	bad = (struct ns_mkfs_opts){.root_mode = S_IFDIR | 0755};
	RC(ns_mkfs(cl, &other, &bad), -EINVAL);
	RC(ns_mount(cl, &other, NULL, &ns2), -ENOENT); /* nothing made */
	CU_ASSERT_EQUAL(sb->sb_magic, NS_MAGIC);
	CU_ASSERT_EQUAL(sb->sb_version, NS_VERSION);
	CU_ASSERT_EQUAL(sb->sb_root, ROOT);
	CU_ASSERT_EQUAL(sb->sb_block_shift, NS_BLOCK_SHIFT_DEFAULT);
	CU_ASSERT_EQUAL(sb->sb_tier, CLOVIS_TIER_FLASH);
	CU_ASSERT_EQUAL(sb->sb_layout, 0);
	CU_ASSERT_NOT_EQUAL(sb->sb_fsid, 0);
	RC(ns_getattr(ns, ROOT, &a), 0);
	CU_ASSERT_EQUAL(a.mode, S_IFDIR | 0755);
	CU_ASSERT_EQUAL(a.ino, ROOT);
	CU_ASSERT_NOT_EQUAL(a.gen, 0);
	RC(ns_lookup(ns, ROOT, "..", &a), 0);
	CU_ASSERT_EQUAL(a.ino, ROOT);
	/* read-only: every change refused, reads served */
	RC(ns_mount(cl, &cid, &ro, &ns2), 0);
	RC(ns_mknod(ns2, ROOT, "x", 0644, 0, 0, 0, NULL), -EROFS);
	RC(ns_mkdir(ns2, ROOT, "x", 0755, 0, 0, NULL), -EROFS);
	RC(ns_write(ns2, ROOT, "x", 1, 0), -EROFS);
	RC(ns_setxattr(ns2, ROOT, "user.x", "v", 1, 0), -EROFS);
	RC(ns_rename(ns2, ROOT, "a", ROOT, "b", 0), -EROFS);
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "read-only"));
	RC(ns_getattr(ns2, ROOT, &a), 0);
	RC(ns_umount(ns2), 0);
	CU_ASSERT_EQUAL(ino_of(ROOT, "x"), 0);
	ns_check();
}

/* A superblock of another version is -EPROTO; restored, it mounts. */
static void test_bad_super(void)
{
	struct ns_super sb = *ns_super(ns), bad;
	struct clovis_container co;
	struct clovis_idx ix;
	struct clovis_op *op;
	void *kp = "super", *vp = &bad;
	size_t kl = 5, vl = sizeof bad;
	struct clovis_bufvec k = {1, &kp, &kl}, v = {1, &vp, &vl};
	struct ns *ns2 = NULL;
	int32_t rcs = -1;

	clovis_container_init(&co, cl, &cid);
	clovis_idx_init(&ix, &co.co_realm, &NS_ID_SUPER);
	RC(clovis_entity_op(&ix.in_entity, CLOVIS_EO_OPEN, &op), 0);
	RC(clovis_op_sync(op), 0);
	for (int pass = 0; pass < 3; pass++) {
		bad = sb; /* as stored: little-endian, like this machine */
		if (pass == 0)
			bad.sb_version = htole32(NS_VERSION + 1);
		if (pass == 1)
			bad.sb_magic = htole32(0xbad);
		RC(clovis_idx_op(&ix, CLOVIS_IC_PUT, &k, &v, &rcs,
				 CLOVIS_IF_OVERWRITE, &op), 0);
		RC(clovis_op_sync(op), 0);
		RC(rcs, 0);
		RC(ns_mount(cl, &cid, NULL, &ns2), pass < 2 ? -EPROTO : 0);
		CU_ASSERT(pass == 2 || strstr(ns_errmsg(), pass == 0 ?
					      "version" : "magic") != NULL);
		CU_ASSERT((ns2 == NULL) == (pass < 2));
	}
	if (ns2 != NULL)
		RC(ns_umount(ns2), 0);
}

/* --------------------------------------------------------------- names */

static void test_create_lookup(void)
{
	uint64_t top = topdir("create"), d, f, sub;
	struct ns_attr a, b;
	char path[128];

	d = mkd(top, "dir");
	f = mk(d, "file");
	CU_ASSERT(d > ROOT && f > ROOT && d != f);
	RC(ns_lookup(ns, top, "dir", &a), 0);
	CU_ASSERT_EQUAL(a.ino, d);
	CU_ASSERT_EQUAL(a.mode, S_IFDIR | 0755);
	CU_ASSERT_EQUAL(a.nlink, 2);
	CU_ASSERT_EQUAL(a.uid, 1000);
	CU_ASSERT_EQUAL(a.gid, 1000);
	RC(ns_lookup(ns, d, "file", &a), 0);
	CU_ASSERT_EQUAL(a.ino, f);
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0644);
	CU_ASSERT_EQUAL(a.nlink, 1);
	CU_ASSERT_EQUAL(a.size, 0);
	CU_ASSERT_NOT_EQUAL(a.gen, 0);
	CU_ASSERT_EQUAL(a.blksize, 1u << NS_BLOCK_SHIFT_DEFAULT);
	CU_ASSERT(a.mtime.tv_sec > 1600000000 && a.btime.tv_sec > 1600000000);
	RC(ns_getattr(ns, f, &b), 0);
	CU_ASSERT_EQUAL(memcmp(&a, &b, sizeof a), 0);
	CU_ASSERT_EQUAL(nlink_of(top), 3);
	sub = mkd(d, "sub");
	CU_ASSERT_EQUAL(nlink_of(d), 3);
	RC(ns_lookup(ns, sub, "..", &a), 0);
	CU_ASSERT_EQUAL(a.ino, d);
	RC(ns_lookup(ns, sub, ".", &a), 0);
	CU_ASSERT_EQUAL(a.ino, sub);
	snprintf(path, sizeof path, "/create.%s/dir/sub", tag);
	RC(ns_resolve(ns, path, &a), 0);
	CU_ASSERT_EQUAL(a.ino, sub);
	snprintf(path, sizeof path, "//create.%s/dir/./sub/../file", tag);
	RC(ns_resolve(ns, path, &a), 0);
	CU_ASSERT_EQUAL(a.ino, f);
	RC(ns_resolve(ns, "/", &a), 0);
	CU_ASSERT_EQUAL(a.ino, ROOT);
	snprintf(path, sizeof path, "/create.%s/dir/file/x", tag);
	RC(ns_resolve(ns, path, &a), -ENOTDIR);
	RC(ns_resolve(ns, "/nope", &a), -ENOENT);
	RC(ns_resolve(ns, "nope", &a), -EINVAL);
	/* other types */
	RC(ns_mknod(ns, d, "fifo", S_IFIFO | 0600, 0, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(a.mode, S_IFIFO | 0600);
	RC(ns_mknod(ns, d, "dev", S_IFCHR | 0600, 0x0501, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(a.rdev, 0x0501);
	RC(ns_getattr(ns, a.ino, &b), 0);
	CU_ASSERT_EQUAL(b.rdev, 0x0501);
	CU_ASSERT_EQUAL(b.mode, S_IFCHR | 0600);
	RC(ns_mknod(ns, d, "plain", 0640, 0, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0640);
	RC(ns_mknod(ns, d, "bad", S_IFDIR | 0640, 0, 0, 0, &a), -EINVAL);
	CU_ASSERT_EQUAL(ino_of(d, "bad"), 0);
	ns_check();
}

/* Every error of ns.h's list, each changing nothing. */
static void test_errors(void)
{
	char longname[NS_NAME_MAX + 2], target[NS_SYMLINK_MAX + 2];
	uint64_t top = topdir("errors"), d = mkd(top, "d"), f = mk(d, "f");
	struct ns_dirent e[8];
	struct ns_attr a;
	uint8_t b[16];

	mk(d, "g");
	memset(longname, 'n', sizeof longname);
	longname[NS_NAME_MAX + 1] = '\0';
	RC(ns_lookup(ns, d, "missing", &a), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "missing"));
	RC(ns_lookup(ns, 0x1234567, "x", &a), -ENOENT);
	RC(ns_getattr(ns, 0x1234567, &a), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "0x1234567"));
	RC(ns_mknod(ns, 0x1234567, "x", 0644, 0, 0, 0, NULL), -ENOENT);
	RC(ns_mknod(ns, f, "x", 0644, 0, 0, 0, NULL), -ENOTDIR);
	RC(ns_mkdir(ns, f, "x", 0755, 0, 0, NULL), -ENOTDIR);
	RC(ns_lookup(ns, f, "x", &a), -ENOTDIR);
	RC(ns_lookup(ns, f, "..", &a), -ENOTDIR);
	RC(ns_readdir(ns, f, NULL, e, 8), -ENOTDIR);
	RC(ns_readdir(ns, 0x1234567, NULL, e, 8), -ENOENT);
	RC(ns_readdir(ns, d, NULL, e, 0), -EINVAL);
	RC(ns_mknod(ns, d, "f", 0644, 0, 0, 0, NULL), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "\"f\""));
	RC(ns_mkdir(ns, d, "f", 0755, 0, 0, NULL), -EEXIST);
	RC(ns_symlink(ns, d, "f", "t", 0, 0, NULL), -EEXIST);
	RC(ns_link(ns, f, d, "g", NULL), -EEXIST);
	RC(ns_mknod(ns, d, "", 0644, 0, 0, 0, NULL), -EINVAL);
	RC(ns_mknod(ns, d, ".", 0644, 0, 0, 0, NULL), -EINVAL);
	RC(ns_mknod(ns, d, "..", 0644, 0, 0, 0, NULL), -EINVAL);
	RC(ns_mknod(ns, d, "a/b", 0644, 0, 0, 0, NULL), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "a/b"));
	RC(ns_mknod(ns, d, longname, 0644, 0, 0, 0, NULL), -ENAMETOOLONG);
	RC(ns_lookup(ns, d, longname, &a), -ENAMETOOLONG);
	longname[NS_NAME_MAX] = '\0';
	RC(ns_mknod(ns, d, longname, 0644, 0, 0, 0, NULL), 0);
	RC(ns_unlink(ns, d, longname), 0);
	RC(ns_unlink(ns, top, "d"), -EISDIR);
	RC(ns_unlink(ns, d, "missing"), -ENOENT);
	RC(ns_rmdir(ns, d, "f"), -ENOTDIR);
	RC(ns_rmdir(ns, top, "d"), -ENOTEMPTY);
	RC(ns_rmdir(ns, d, "."), -EINVAL);
	RC(ns_rmdir(ns, d, ".."), -ENOTEMPTY);
	RC(ns_link(ns, d, top, "dl", NULL), -EPERM);
	RC(ns_link(ns, 0x1234567, top, "dl", NULL), -ENOENT);
	RC(ns_link(ns, f, f, "x", NULL), -ENOTDIR);
	memset(target, 't', sizeof target);
	target[NS_SYMLINK_MAX + 1] = '\0';
	RC(ns_symlink(ns, d, "s", target, 0, 0, NULL), -ENAMETOOLONG);
	RC(ns_symlink(ns, d, "s", "", 0, 0, NULL), -ENOENT);
	RC(ns_readlink(ns, f, (char *)b, sizeof b), -EINVAL);
	RC(ns_setxattr(ns, f, longname, "v", 1, 0), 0); /* 255: fits */
	longname[NS_NAME_MAX] = 'n';
	RC(ns_setxattr(ns, f, longname, "v", 1, 0), -ENAMETOOLONG);
	RC(ns_getxattr(ns, f, longname, b, sizeof b), -ENAMETOOLONG);
	RC(ns_setxattr(ns, f, "", "v", 1, 0), -EINVAL);
	RC(ns_setxattr(ns, f, "user.big", b, NS_XATTR_VAL_MAX + 1, 0), -E2BIG);
	RC(ns_setxattr(ns, f, "user.x", "v", 1, 3), -EINVAL);
	RC(ns_setxattr(ns, 0x1234567, "user.x", "v", 1, 0), -ENOENT);
	RC(ns_getxattr(ns, f, "user.none", b, sizeof b), -ENODATA);
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "user.none"));
	RC(ns_write(ns, f, "x", 1, NS_FILE_MAX), -EFBIG);
	RC(ns_write(ns, d, "x", 1, 0), -EISDIR);
	RC(ns_write(ns, 0x1234567, "x", 1, 0), -ENOENT);
	RC(ns_read(ns, d, b, 1, 0), -EISDIR);
	RC(ns_read(ns, 0x1234567, b, 1, 0), -ENOENT);
	memset(&a, 0, sizeof a);
	a.size = NS_FILE_MAX + 1;
	RC(ns_setattr(ns, f, &a, NS_SET_SIZE, NULL), -EFBIG);
	a.size = 0;
	RC(ns_setattr(ns, d, &a, NS_SET_SIZE, NULL), -EISDIR);
	RC(ns_setattr(ns, f, &a, 1u << 20, NULL), -EINVAL);
	RC(ns_setattr(ns, 0x1234567, &a, NS_SET_MODE, NULL), -ENOENT);
	RC(ns_rename(ns, d, "f", d, "h", 3), -EINVAL);
	RC(ns_rename(ns, d, "f", d, "h", 8), -EINVAL);
	RC(ns_rename(ns, d, "missing", d, "h", 0), -ENOENT);
	RC(ns_rename(ns, d, "f", 0x1234567, "h", 0), -ENOENT);
	RC(ns_rename(ns, d, "f", f, "h", 0), -ENOTDIR);
	RC(ns_rename(ns, d, "f", d, "..", 0), -EINVAL);
	RC(ns_data_id(ns, f, &(struct clovis_id){0}, &(uint32_t){0}), -ENODATA);
	RC(ns_data_id(ns, d, &(struct clovis_id){0}, &(uint32_t){0}), -EISDIR);
	/* nothing changed by any of them */
	RC(list_all(d, e, 8), 2);
	CU_ASSERT_STRING_EQUAL(e[0].name, "f");
	CU_ASSERT_STRING_EQUAL(e[1].name, "g");
	CU_ASSERT_EQUAL(nlink_of(d), 2);
	CU_ASSERT_EQUAL(nlink_of(f), 1);
	CU_ASSERT_EQUAL(size_of(f), 0);
	RC(ns_listxattr(ns, f, NULL, 0), NS_XATTR_NAME_MAX + 1);
	ns_check();
}

/* ---------------------------------------------------------- directories */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Over 1000 entries made in random order come back in name order, in
 * pages of any size, from any start; then all go. */
static void test_readdir_paging(void)
{
	enum { N = 1100 };
	static char names[N][16];
	static struct ns_dirent e[N + 10];
	uint64_t d = topdir("readdir");
	int order[N], n, got;

	rnd_state = 0x5eed0001;
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "%c%04d",
			 (char)('a' + rnd() % 26), i);
		order[i] = i;
	}
	for (int i = N - 1; i > 0; i--) {
		int j = (int)(rnd() % (uint64_t)(i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < N; i++)
		mk(d, names[order[i]]);
	qsort(names, N, sizeof names[0], name_cmp);
	RC(list_all(d, e, N + 10), N); /* pages of 7 */
	for (int i = 0; i < N; i++)
		CU_ASSERT_STRING_EQUAL(e[i].name, names[i]);
	for (int i = 0; i < N; i++)
		CU_ASSERT_EQUAL(e[i].type, S_IFREG);
	got = ns_readdir(ns, d, NULL, e, N + 10); /* one call, many NEXTs */
	RC(got, N);
	CU_ASSERT_STRING_EQUAL(e[N - 1].name, names[N - 1]);
	got = ns_readdir(ns, d, names[500], e, 3);
	RC(got, 3);
	CU_ASSERT_STRING_EQUAL(e[0].name, names[501]);
	CU_ASSERT_STRING_EQUAL(e[2].name, names[503]);
	got = ns_readdir(ns, d, "a0000x", e, 1); /* not a name: after it */
	RC(got, 1);
	CU_ASSERT(strcmp(e[0].name, "a0000x") > 0);
	RC(ns_readdir(ns, d, names[N - 1], e, 10), 0);
	RC(ns_readdir(ns, d, "zzzz", e, 10), 0);
	for (int i = 0; i < N; i++)
		RC(ns_unlink(ns, d, names[i]), 0);
	n = ns_readdir(ns, d, NULL, e, 10);
	RC(n, 0);
	ns_check();
}

/* Directory link counts and ".." through mkdir, moves and rmdir. */
static void test_dir_moves(void)
{
	uint64_t top = topdir("dirmove"), a = mkd(top, "a"), b = mkd(top, "b");
	uint64_t sub = mkd(a, "sub"), deep = mkd(sub, "deep");
	struct ns_attr at;

	CU_ASSERT_EQUAL(nlink_of(top), 4);
	CU_ASSERT_EQUAL(nlink_of(a), 3);
	CU_ASSERT_EQUAL(nlink_of(b), 2);
	CU_ASSERT_EQUAL(nlink_of(sub), 3);
	RC(ns_rename(ns, a, "sub", b, "moved", 0), 0);
	CU_ASSERT_EQUAL(nlink_of(a), 2);
	CU_ASSERT_EQUAL(nlink_of(b), 3);
	CU_ASSERT_EQUAL(ino_of(b, "moved"), sub);
	CU_ASSERT_EQUAL(ino_of(a, "sub"), 0);
	RC(ns_lookup(ns, sub, "..", &at), 0);
	CU_ASSERT_EQUAL(at.ino, b);
	RC(ns_lookup(ns, deep, "..", &at), 0);
	CU_ASSERT_EQUAL(at.ino, sub);
	/* into its own subtree, or onto itself as a parent */
	RC(ns_rename(ns, b, "moved", deep, "x", 0), -EINVAL);
	RC(ns_rename(ns, b, "moved", sub, "x", 0), -EINVAL);
	RC(ns_rename(ns, top, "b", deep, "x", 0), -EINVAL);
	CU_ASSERT_EQUAL(ino_of(b, "moved"), sub);
	/* within one directory: no link changes */
	RC(ns_rename(ns, b, "moved", b, "again", 0), 0);
	CU_ASSERT_EQUAL(nlink_of(b), 3);
	RC(ns_rmdir(ns, sub, "deep"), 0);
	CU_ASSERT_EQUAL(nlink_of(sub), 2);
	RC(ns_getattr(ns, deep, &at), -ENOENT);
	RC(ns_rmdir(ns, b, "again"), 0);
	CU_ASSERT_EQUAL(nlink_of(b), 2);
	ns_check();
}

/* rename(2) in its forms: within and across directories, over a file
 * (with and without other links), over an empty and a non-empty
 * directory, type mismatches, NOREPLACE, EXCHANGE, onto itself. */
static void test_rename(void)
{
	uint64_t top = topdir("rename"), a = mkd(top, "a"), b = mkd(top, "b");
	uint64_t f1 = mk(a, "f1"), f2 = mk(b, "f2"), f3 = mk(a, "f3");
	uint64_t d1 = mkd(a, "d1"), d2 = mkd(b, "d2"), d3 = mkd(b, "d3");
	struct clovis_id data;
	struct clovis_container co;
	struct clovis_obj o;
	struct clovis_op *op;
	struct ns_attr at;
	uint32_t bs;

	mk(d3, "inside");
	RC(ns_write(ns, f2, "data", 4, 0), 4);
	RC(ns_data_id(ns, f2, &data, &bs), 0);
	RC(ns_rename(ns, a, "f1", a, "g1", 0), 0);
	CU_ASSERT_EQUAL(ino_of(a, "g1"), f1);
	CU_ASSERT_EQUAL(ino_of(a, "f1"), 0);
	/* across directories, over a file: the file goes with its data */
	RC(ns_rename(ns, a, "g1", b, "f2", 0), 0);
	CU_ASSERT_EQUAL(ino_of(b, "f2"), f1);
	RC(ns_getattr(ns, f2, &at), -ENOENT);
	clovis_container_init(&co, cl, &cid);
	RC(clovis_obj_init(&o, &co.co_realm, &data, NULL), 0);
	RC(clovis_entity_op(&o.ob_entity, CLOVIS_EO_OPEN, &op), 0);
	RC(clovis_op_sync(op), -ENOENT);
	/* over a file with another link: it keeps the other one */
	RC(ns_link(ns, f3, b, "f3link", NULL), 0);
	CU_ASSERT_EQUAL(nlink_of(f3), 2);
	RC(ns_rename(ns, b, "f2", b, "f3link", 0), 0);
	CU_ASSERT_EQUAL(nlink_of(f3), 1);
	CU_ASSERT_EQUAL(ino_of(b, "f3link"), f1);
	CU_ASSERT_EQUAL(ino_of(a, "f3"), f3);
	/* type mismatches, a non-empty target */
	RC(ns_rename(ns, a, "f3", b, "d2", 0), -EISDIR);
	RC(ns_rename(ns, a, "d1", b, "f3link", 0), -ENOTDIR);
	RC(ns_rename(ns, a, "d1", b, "d3", 0), -ENOTEMPTY);
	CU_ASSERT_EQUAL(ino_of(b, "d3"), d3);
	/* a directory over an empty one, across parents */
	RC(ns_rename(ns, a, "d1", b, "d2", 0), 0);
	CU_ASSERT_EQUAL(ino_of(b, "d2"), d1);
	RC(ns_getattr(ns, d2, &at), -ENOENT);
	CU_ASSERT_EQUAL(nlink_of(a), 2);
	CU_ASSERT_EQUAL(nlink_of(b), 4); /* d2 (now d1), d3 */
	RC(ns_lookup(ns, d1, "..", &at), 0);
	CU_ASSERT_EQUAL(at.ino, b);
	/* NOREPLACE */
	RC(ns_rename(ns, a, "f3", b, "f3link", NS_RENAME_NOREPLACE), -EEXIST);
	CU_ASSERT_EQUAL(ino_of(a, "f3"), f3);
	CU_ASSERT_EQUAL(ino_of(b, "f3link"), f1);
	RC(ns_rename(ns, a, "f3", b, "free", NS_RENAME_NOREPLACE), 0);
	CU_ASSERT_EQUAL(ino_of(b, "free"), f3);
	/* EXCHANGE a file and a directory across parents */
	RC(ns_rename(ns, b, "free", a, "nothere", NS_RENAME_EXCHANGE), -ENOENT);
	RC(ns_rename(ns, b, "free", top, "a", NS_RENAME_EXCHANGE), 0);
	CU_ASSERT_EQUAL(ino_of(b, "free"), a);
	CU_ASSERT_EQUAL(ino_of(top, "a"), f3);
	RC(ns_lookup(ns, a, "..", &at), 0);
	CU_ASSERT_EQUAL(at.ino, b);
	CU_ASSERT_EQUAL(nlink_of(top), 3); /* b, and a no more */
	CU_ASSERT_EQUAL(nlink_of(b), 5);   /* d1, d3, a */
	/* EXCHANGE of a directory with its own ancestor's entry */
	RC(ns_rename(ns, b, "free", top, "b", NS_RENAME_EXCHANGE), -EINVAL);
	/* onto itself, and a hard link onto another link of its inode */
	RC(ns_rename(ns, top, "a", top, "a", 0), 0);
	RC(ns_link(ns, f3, top, "a2", NULL), 0);
	RC(ns_rename(ns, top, "a", top, "a2", 0), 0);
	CU_ASSERT_EQUAL(ino_of(top, "a"), f3);
	CU_ASSERT_EQUAL(ino_of(top, "a2"), f3);
	CU_ASSERT_EQUAL(nlink_of(f3), 2);
	ns_check();
}

/* --------------------------------------------------- links, symlinks */

static void test_links(void)
{
	uint64_t top = topdir("links"), d = mkd(top, "d"), f = mk(top, "f");
	struct clovis_container co;
	struct clovis_obj o;
	struct clovis_op *op;
	struct clovis_id data;
	struct ns_attr a, before;
	uint8_t buf[8];
	uint32_t bs;

	RC(ns_write(ns, f, "12345678", 8, 0), 8);
	RC(ns_setxattr(ns, f, "user.k", "v", 1, 0), 0);
	RC(ns_getattr(ns, f, &before), 0);
	RC(ns_link(ns, f, d, "l1", &a), 0);
	CU_ASSERT_EQUAL(a.ino, f);
	CU_ASSERT_EQUAL(a.nlink, 2);
	CU_ASSERT_EQUAL(a.size, 8);
	RC(ns_link(ns, f, top, "l2", NULL), 0);
	CU_ASSERT_EQUAL(nlink_of(f), 3);
	ns_check();
	RC(ns_unlink(ns, top, "f"), 0);
	RC(ns_unlink(ns, d, "l1"), 0);
	CU_ASSERT_EQUAL(nlink_of(f), 1);
	RC(ns_read(ns, f, buf, 8, 0), 8);
	CU_ASSERT_EQUAL(memcmp(buf, "12345678", 8), 0);
	RC(ns_getxattr(ns, f, "user.k", buf, sizeof buf), 1);
	RC(ns_data_id(ns, f, &data, &bs), 0);
	CU_ASSERT_EQUAL(bs, NS_BLOCK_SHIFT_DEFAULT);
	CU_ASSERT_EQUAL(data.ci_hi, NS_HI_DATA);
	CU_ASSERT_EQUAL(data.ci_lo, f);
	RC(ns_getattr_gen(ns, f, before.gen, &a), 0);
	RC(ns_unlink(ns, top, "l2"), 0);
	RC(ns_getattr(ns, f, &a), -ENOENT);
	RC(ns_getattr_gen(ns, f, before.gen, &a), -ESTALE);
	RC(ns_getxattr(ns, f, "user.k", buf, sizeof buf), -ENOENT);
	clovis_container_init(&co, cl, &cid);
	RC(clovis_obj_init(&o, &co.co_realm, &data, NULL), 0);
	RC(clovis_entity_op(&o.ob_entity, CLOVIS_EO_OPEN, &op), 0);
	RC(clovis_op_sync(op), -ENOENT); /* the data went with the inode */
	ns_check();
}

static void test_symlink(void)
{
	uint64_t top = topdir("symlink");
	char buf[64], big[NS_SYMLINK_MAX + 1];
	struct ns_attr a;
	uint64_t s, s2;

	RC(ns_symlink(ns, top, "s", "../some/where", 7, 8, &a), 0);
	s = a.ino;
	CU_ASSERT_EQUAL(a.mode, S_IFLNK | 0777);
	CU_ASSERT_EQUAL(a.size, 13);
	CU_ASSERT_EQUAL(a.uid, 7);
	RC(ns_lookup(ns, top, "s", &a), 0);
	CU_ASSERT_EQUAL(a.ino, s);
	RC(ns_readlink(ns, s, buf, sizeof buf), 13);
	CU_ASSERT_STRING_EQUAL(buf, "../some/where");
	RC(ns_readlink(ns, s, buf, 13), -ERANGE);
	RC(ns_readlink(ns, s, buf, 14), 13);
	RC(ns_read(ns, s, buf, 1, 0), -EINVAL);
	/* a hard link of a symlink keeps its target through an unlink */
	RC(ns_link(ns, s, top, "s2", NULL), 0);
	RC(ns_unlink(ns, top, "s"), 0);
	RC(ns_readlink(ns, s, buf, sizeof buf), 13);
	CU_ASSERT_STRING_EQUAL(buf, "../some/where");
	/* the longest target, through a setattr (rewrites the record) */
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	RC(ns_symlink(ns, top, "big", big, 0, 0, &a), 0);
	s2 = a.ino;
	a.mode = 0700;
	RC(ns_setattr(ns, s2, &a, NS_SET_MODE, &a), 0);
	CU_ASSERT_EQUAL(a.mode, S_IFLNK | 0700);
	{
		char *out = malloc(NS_SYMLINK_MAX + 1);

		RC(ns_readlink(ns, s2, out, NS_SYMLINK_MAX + 1),
		   NS_SYMLINK_MAX);
		CU_ASSERT_EQUAL(memcmp(out, big, NS_SYMLINK_MAX + 1), 0);
		free(out);
	}
	ns_check();
}

/* ---------------------------------------------------------------- xattrs */

static void test_xattrs(void)
{
	uint64_t top = topdir("xattr"), f = mk(top, "f");
	static uint8_t val[NS_XATTR_VAL_MAX], out[NS_XATTR_VAL_MAX];
	char list[256];

	fill(val, sizeof val, 7);
	RC(ns_listxattr(ns, f, NULL, 0), 0);
	RC(ns_setxattr(ns, f, "user.b", "bee", 3, NS_XATTR_CREATE), 0);
	RC(ns_setxattr(ns, f, "user.b", "BEE", 3, NS_XATTR_CREATE), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "user.b"));
	RC(ns_setxattr(ns, f, "user.a", "x", 1, NS_XATTR_REPLACE), -ENODATA);
	RC(ns_setxattr(ns, f, "user.a", "", 0, 0), 0); /* an empty value */
	RC(ns_setxattr(ns, f, "user.c", val, sizeof val, 0), 0);
	RC(ns_getxattr(ns, f, "user.b", out, sizeof out), 3);
	CU_ASSERT_EQUAL(memcmp(out, "bee", 3), 0);
	RC(ns_setxattr(ns, f, "user.b", "BEE!", 4, NS_XATTR_REPLACE), 0);
	RC(ns_getxattr(ns, f, "user.b", out, 0), 4);
	RC(ns_getxattr(ns, f, "user.b", out, 3), -ERANGE);
	RC(ns_getxattr(ns, f, "user.b", out, 4), 4);
	CU_ASSERT_EQUAL(memcmp(out, "BEE!", 4), 0);
	RC(ns_getxattr(ns, f, "user.a", out, 0), 0);
	RC(ns_getxattr(ns, f, "user.a", out, sizeof out), 0);
	RC(ns_getxattr(ns, f, "user.c", NULL, 0), NS_XATTR_VAL_MAX);
	RC(ns_getxattr(ns, f, "user.c", out, sizeof out), NS_XATTR_VAL_MAX);
	CU_ASSERT_EQUAL(memcmp(out, val, sizeof val), 0);
	RC(ns_setxattr(ns, f, "user.c", "plain", 5, 0), 0); /* overwrite */
	RC(ns_getxattr(ns, f, "user.c", out, sizeof out), 5);
	RC(ns_listxattr(ns, f, NULL, 0), 21);
	RC(ns_listxattr(ns, f, list, 20), -ERANGE);
	RC(ns_listxattr(ns, f, list, sizeof list), 21);
	CU_ASSERT_EQUAL(memcmp(list, "user.a\0user.b\0user.c\0", 21), 0);
	RC(ns_removexattr(ns, f, "user.b"), 0);
	RC(ns_removexattr(ns, f, "user.b"), -ENODATA);
	RC(ns_getxattr(ns, f, "user.b", out, sizeof out), -ENODATA);
	RC(ns_listxattr(ns, f, list, sizeof list), 14);
	RC(ns_removexattr(ns, 0x1234567, "user.a"), -ENOENT);
	RC(ns_getxattr(ns, 0x1234567, "user.a", out, 1), -ENOENT);
	RC(ns_listxattr(ns, 0x1234567, list, 1), -ENOENT);
	/* on a directory, and another inode's xattrs stay apart */
	RC(ns_setxattr(ns, top, "user.a", "dir", 3, 0), 0);
	RC(ns_getxattr(ns, top, "user.a", out, sizeof out), 3);
	RC(ns_getxattr(ns, f, "user.a", out, sizeof out), 0);
	/* they go with the inode (ns_check finds leftovers) */
	RC(ns_unlink(ns, top, "f"), 0);
	ns_check();
}

/* A file with many long-named xattrs (200 names of 250 bytes, values of
 * 4 KiB: one removal drops 50 KB of keys) is removed like any other, in
 * cluster mode too, and leaves nothing (ns_check). */
static void test_xattrs_many(void)
{
	uint64_t top = topdir("xattr_many"), f = mk(top, "f");
	static uint8_t val[4096];
	char name[NS_XATTR_NAME_MAX + 1];
	int n = 200, set = 0, rc;

	fill(val, sizeof val, 3);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof name, "user.%03d", i);
		memset(name + 8, 'x', 242);
		name[250] = '\0';
		set += ns_setxattr(ns, f, name, val, sizeof val, 0) == 0;
	}
	CU_ASSERT_EQUAL(set, n);
	RC(ns_listxattr(ns, f, NULL, 0), n * 251);
	rc = ns_unlink(ns, top, "f");
	CU_ASSERT_EQUAL(rc, 0);
	if (rc != 0)
		printf("\n  unlink: %d: %s", rc, ns_errmsg());
	RC(ns_getxattr(ns, f, name, val, sizeof val), -ENOENT);
	ns_check();
}

/* ------------------------------------------------------------ file data */

#define MODEL_MAX (3u << 20)

/* The whole file f against model m of size sz: true when its size and
 * every byte match (callers assert it). */
static bool model_check(uint64_t f, const uint8_t *m, uint64_t sz)
{
	uint8_t *buf = malloc(sz + 100);
	bool same = buf != NULL && size_of(f) == sz &&
		    ns_read(ns, f, buf, sz + 100, 0) == (ssize_t)sz &&
		    memcmp(buf, m, sz) == 0;

	free(buf);
	return same;
}

/* One random op of the model test: write, truncate or read. */
static void model_step(uint64_t f, uint8_t *m, uint64_t *sz, uint8_t *buf)
{
	uint64_t k = rnd() % 10, off, len;
	struct ns_attr a = {0};

	if (k < 5) {
		off = rnd() % (MODEL_MAX / 2);
		len = 1 + rnd() % (rnd() % 4 == 0 ? 300000 : 5000);
		fill(buf, len, rnd());
		RC(ns_write(ns, f, buf, len, off), len);
		memcpy(m + off, buf, len);
		if (off + len > *sz)
			*sz = off + len;
	} else if (k == 5) {
		a.size = rnd() % (MODEL_MAX / 2);
		RC(ns_setattr(ns, f, &a, NS_SET_SIZE, &a), 0);
		CU_ASSERT_EQUAL(a.size, a.size);
		if (a.size < *sz)
			memset(m + a.size, 0, *sz - a.size);
		*sz = a.size;
	} else {
		off = rnd() % (*sz + 70000);
		len = rnd() % 200000;
		RC(ns_read(ns, f, buf, len, off), off >= *sz ? 0 :
		   (off + len > *sz ? *sz - off : len));
		if (off < *sz)
			CU_ASSERT_EQUAL(memcmp(buf, m + off, off + len > *sz ?
					       *sz - off : len), 0);
	}
}

/* Writes at odd offsets and lengths across blocks, truncates and reads,
 * seeded, against an in-memory model; remounted every 100 ops. */
/*
 * Block size per directory and per file (NS_XATTR_BLOCK_SIZE): a
 * directory's is inherited by what is made in it (files and
 * subdirectories), a file's fixes its data object's at the first write
 * and is -EBUSY to change after; bad values -EINVAL naming the attribute;
 * the attribute is not listed; removed, new files take the default.
 */
static void test_block_size(void)
{
	uint64_t top = topdir("bsize"), sub, f, g, h;
	struct clovis_id id;
	struct ns_attr a;
	uint32_t shift = 0;
	char out[32], list[64];
	static uint8_t buf[20000];

	RC(ns_getxattr(ns, top, NS_XATTR_BLOCK_SIZE, out, sizeof out), -ENODATA);
	RC(ns_setxattr(ns, top, NS_XATTR_BLOCK_SIZE, "3000", 4, 0), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), NS_XATTR_BLOCK_SIZE));
	RC(ns_setxattr(ns, top, NS_XATTR_BLOCK_SIZE, "abc", 3, 0), -EINVAL);
	RC(ns_setxattr(ns, top, NS_XATTR_BLOCK_SIZE, "2048", 4, 0), -EINVAL);
	RC(ns_setxattr(ns, top, NS_XATTR_BLOCK_SIZE, "33554432", 8, 0), -EINVAL);
	RC(ns_setxattr(ns, top, NS_XATTR_BLOCK_SIZE, "4096", 4,
		       NS_XATTR_REPLACE), -ENODATA);
	RC(ns_setxattr(ns, top, NS_XATTR_BLOCK_SIZE, "4096\n", 5, 0), 0);
	RC(ns_setxattr(ns, top, NS_XATTR_BLOCK_SIZE, "4096", 4,
		       NS_XATTR_CREATE), -EEXIST);
	RC(ns_getxattr(ns, top, NS_XATTR_BLOCK_SIZE, NULL, 0), 4);
	RC(ns_getxattr(ns, top, NS_XATTR_BLOCK_SIZE, out, 3), -ERANGE);
	RC(ns_getxattr(ns, top, NS_XATTR_BLOCK_SIZE, out, sizeof out), 4);
	CU_ASSERT_EQUAL(memcmp(out, "4096", 4), 0);
	RC(ns_listxattr(ns, top, list, sizeof list), 0); /* not listed */
	sub = mkd(top, "sub");     /* inherits 4096 */
	RC(ns_getxattr(ns, sub, NS_XATTR_BLOCK_SIZE, out, sizeof out), 4);
	f = mk(sub, "f");
	RC(ns_getattr(ns, f, &a), 0);
	CU_ASSERT_EQUAL(a.blksize, 4096);
	fill(buf, sizeof buf, 3);
	RC(ns_write(ns, f, buf, 5000, 3000), 5000);
	RC(ns_data_id(ns, f, &id, &shift), 0);
	CU_ASSERT_EQUAL(shift, 12);
	RC(ns_setxattr(ns, f, NS_XATTR_BLOCK_SIZE, "65536", 5, 0), -EBUSY);
	RC(ns_setxattr(ns, f, NS_XATTR_BLOCK_SIZE, "4096", 4, 0), 0);
	/* a file of its own block size, set before its first write */
	g = mk(sub, "g");
	RC(ns_setxattr(ns, g, NS_XATTR_BLOCK_SIZE, "1048576", 7, 0), 0);
	RC(ns_write(ns, g, buf, sizeof buf, 100), (long long)sizeof buf);
	RC(ns_data_id(ns, g, &id, &shift), 0);
	CU_ASSERT_EQUAL(shift, 20);
	RC(ns_read(ns, g, buf + 1, 1000, 150), 1000);
	/* removed from the directory: new files take the default */
	RC(ns_removexattr(ns, sub, NS_XATTR_BLOCK_SIZE), 0);
	RC(ns_removexattr(ns, sub, NS_XATTR_BLOCK_SIZE), -ENODATA);
	h = mk(sub, "h");
	RC(ns_getxattr(ns, h, NS_XATTR_BLOCK_SIZE, out, sizeof out), -ENODATA);
	RC(ns_write(ns, h, buf, 10, 0), 10);
	RC(ns_data_id(ns, h, &id, &shift), 0);
	CU_ASSERT_EQUAL(shift, ns_super(ns)->sb_block_shift);
	CU_ASSERT_NOT_EQUAL(shift, 12);
}

static void test_rw_model(void)
{
	uint64_t top = topdir("rwmodel"), f = mk(top, "f"), sz = 0;
	uint8_t *m = calloc(1, MODEL_MAX), *buf = malloc(400000);
	uint64_t seed = 0x5eed0002;
	unsigned failures = CU_get_number_of_failures();

	rnd_state = seed;
	for (int i = 1; i <= 400; i++) {
		model_step(f, m, &sz, buf);
		if (i % 50 == 0)
			RC(size_of(f), sz);
		if (i % 100 == 0) {
			RC(ns_umount(ns), 0);
			RC(ns_mount(cl, &cid, NULL, &ns), 0);
			CU_ASSERT_TRUE(model_check(f, m, sz));
		}
	}
	if (CU_get_number_of_failures() != failures)
		fprintf(stderr, "rw_model: seed %#" PRIx64 "\n", seed);
	CU_ASSERT_TRUE(model_check(f, m, sz));
	free(m);
	free(buf);
	ns_check();
}

/* Blocks [blk, blk + nr) of file f's data object, read or written
 * directly (as another writer, or a crash, would leave them). */
static void obj_io(uint64_t f, enum clovis_obj_opcode oc, uint64_t blk,
		   uint64_t nr, uint8_t *buf)
{
	struct clovis_container co;
	struct clovis_id data;
	struct clovis_obj o;
	struct clovis_op *op;
	uint32_t shift;
	void *p = buf;
	size_t l;
	struct clovis_extvec ev = {1, &blk, &nr};
	struct clovis_bufvec bv = {1, &p, &l};

	RC(ns_data_id(ns, f, &data, &shift), 0);
	l = nr << shift;
	clovis_container_init(&co, cl, &cid);
	RC(clovis_obj_init(&o, &co.co_realm, &data, NULL), 0);
	RC(clovis_entity_op(&o.ob_entity, CLOVIS_EO_OPEN, &op), 0);
	RC(clovis_op_sync(op), 0);
	RC(clovis_obj_op(&o, oc, &ev, &bv, 0, &op), 0);
	RC(clovis_op_sync(op), 0);
}

/* Holes read as zeros; a truncate down zeroes the last block's tail and
 * frees the blocks past it; growing a file (truncate up, a write past
 * its end) shows zeros even where its object holds old bytes past the
 * size (what a crash that lost a cached size leaves). */
static void test_holes_truncate(void)
{
	uint64_t top = topdir("holes"), f = mk(top, "f"), bs = 1u << 16;
	static uint8_t w[3 << 16], r[8 << 16], z[8 << 16], junk[3 << 16];
	struct ns_attr a = {0};

	RC(ns_read(ns, f, r, 10, 0), 0); /* never written: no data */
	memset(w, 0xaa, sizeof w);
	memset(junk, 0x55, sizeof junk);
	RC(ns_write(ns, f, w, 100, 5 * bs + 7), 100); /* a hole before */
	CU_ASSERT_EQUAL(size_of(f), 5 * bs + 107);
	RC(ns_read(ns, f, r, 5 * bs, 0), 5 * bs);
	CU_ASSERT_EQUAL(memcmp(r, z, 5 * bs), 0);
	RC(ns_read(ns, f, r, 200, 5 * bs), 107);
	CU_ASSERT_EQUAL(memcmp(r, z, 7), 0);
	CU_ASSERT_EQUAL(memcmp(r + 7, w, 100), 0);
	RC(ns_write(ns, f, w, 3 * bs, 0), 3 * bs);
	/* down into the middle of block 1: the object itself */
	a.size = bs + bs / 2;
	RC(ns_setattr(ns, f, &a, NS_SET_SIZE, &a), 0);
	CU_ASSERT_EQUAL(a.size, bs + bs / 2);
	RC(ns_read(ns, f, r, sizeof r, 0), bs + bs / 2);
	CU_ASSERT_EQUAL(memcmp(r, w, bs + bs / 2), 0);
	memset(r, 1, sizeof r);
	obj_io(f, CLOVIS_OC_READ, 1, 5, r);
	CU_ASSERT_EQUAL(memcmp(r, w, bs / 2), 0);
	CU_ASSERT_EQUAL(memcmp(r + bs / 2, z, 4 * bs + bs / 2), 0);
	/* old bytes past the size, as a crash would leave them */
	obj_io(f, CLOVIS_OC_WRITE, 1, 3, junk);
	memcpy(w + bs, junk, bs); /* block 1 now holds junk before 1.5 too */
	RC(ns_umount(ns), 0);
	RC(ns_mount(cl, &cid, NULL, &ns), 0);
	a.size = 4 * bs;
	RC(ns_setattr(ns, f, &a, NS_SET_SIZE, NULL), 0);
	RC(ns_read(ns, f, r, sizeof r, 0), 4 * bs);
	CU_ASSERT_EQUAL(memcmp(r, w, bs + bs / 2), 0);
	CU_ASSERT_EQUAL(memcmp(r + bs + bs / 2, z, 4 * bs - bs - bs / 2), 0);
	/* a write past the end: zeros between, old bytes or not */
	obj_io(f, CLOVIS_OC_WRITE, 4, 3, junk);
	RC(ns_umount(ns), 0);
	RC(ns_mount(cl, &cid, NULL, &ns), 0);
	RC(ns_write(ns, f, w, 10, 6 * bs + 3), 10);
	RC(ns_read(ns, f, r, 2 * bs + 20, 4 * bs), 2 * bs + 13);
	CU_ASSERT_EQUAL(memcmp(r, z, 2 * bs + 3), 0);
	CU_ASSERT_EQUAL(memcmp(r + 2 * bs + 3, w, 10), 0);
	/* and within the last block: a write past the end in it */
	obj_io(f, CLOVIS_OC_READ, 6, 1, r);
	memset(r + 13, 0x55, bs - 13);
	obj_io(f, CLOVIS_OC_WRITE, 6, 1, r);
	RC(ns_umount(ns), 0);
	RC(ns_mount(cl, &cid, NULL, &ns), 0);
	RC(ns_write(ns, f, w, 1, 6 * bs + 40), 1);
	RC(ns_read(ns, f, r, 100, 6 * bs), 41);
	CU_ASSERT_EQUAL(memcmp(r, z, 3), 0);
	CU_ASSERT_EQUAL(memcmp(r + 3, w, 10), 0);
	CU_ASSERT_EQUAL(memcmp(r + 13, z, 27), 0);
	CU_ASSERT_EQUAL(r[40], 0xaa);
	/* to zero and back */
	a.size = 0;
	RC(ns_setattr(ns, f, &a, NS_SET_SIZE, NULL), 0);
	a.size = 3 * bs;
	RC(ns_setattr(ns, f, &a, NS_SET_SIZE, NULL), 0);
	RC(ns_read(ns, f, r, sizeof r, 0), 3 * bs);
	CU_ASSERT_EQUAL(memcmp(r, z, 3 * bs), 0);
	ns_check();
}

/* Sizes and mtimes stay in this mount's cache until written back: a
 * second mount sees them after release, fsync, or writeback_ms. */
static void test_cache(void)
{
	struct ns_opts fast = {.writeback_ms = 50};
	uint64_t top = topdir("cache"), f = mk(top, "f"), g = mk(top, "g");
	struct ns *other = NULL, *quick = NULL;
	struct ns_attr a, b;
	uint8_t buf[5000];

	fill(buf, sizeof buf, 3);
	RC(ns_mount(cl, &cid, NULL, &other), 0);
	RC(ns_getattr(ns, f, &b), 0);
	usleep(2000);
	RC(ns_write(ns, f, buf, sizeof buf, 0), sizeof buf);
	RC(ns_getattr(ns, f, &a), 0);
	CU_ASSERT_EQUAL(a.size, sizeof buf);   /* this mount: at once */
	CU_ASSERT(a.mtime.tv_sec > b.mtime.tv_sec ||
		  a.mtime.tv_nsec > b.mtime.tv_nsec);
	RC(ns_getattr(other, f, &a), 0);
	CU_ASSERT_EQUAL(a.size, 0);            /* the other: not yet */
	RC(ns_release(ns, f), 0);
	RC(ns_getattr(other, f, &a), 0);
	CU_ASSERT_EQUAL(a.size, sizeof buf);
	RC(ns_read(other, f, buf, sizeof buf, 0), sizeof buf);
	RC(ns_write(ns, f, buf, 10, sizeof buf), 10);
	RC(ns_getattr(other, f, &a), 0);
	CU_ASSERT_EQUAL(a.size, sizeof buf);
	RC(ns_fsync(ns, f, false), 0);
	CU_ASSERT_EQUAL(ns->ns_pend_nr, 0);    /* every op waited */
	RC(ns_getattr(other, f, &a), 0);
	CU_ASSERT_EQUAL(a.size, sizeof buf + 10);
	/* the writeback thread */
	RC(ns_mount(cl, &cid, &fast, &quick), 0);
	RC(ns_write(quick, g, buf, 123, 0), 123);
	RC(ns_getattr(other, g, &a), 0);
	CU_ASSERT_EQUAL(a.size, 0);
	for (int i = 0; i < 100 && a.size == 0; i++) {
		usleep(20000);
		RC(ns_getattr(other, g, &a), 0);
	}
	CU_ASSERT_EQUAL(a.size, 123);
	/* setattr writes back too, and a truncate through one mount is
	 * seen by the other */
	RC(ns_write(quick, g, buf, 10, 1000), 10);
	a.mode = 0600;
	RC(ns_setattr(quick, g, &a, NS_SET_MODE, NULL), 0);
	RC(ns_getattr(other, g, &a), 0);
	CU_ASSERT_EQUAL(a.size, 1010);
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0600);
	RC(ns_umount(quick), 0);
	RC(ns_umount(other), 0);
	ns_check();
}

/* Two mounts writing one file: a write past this mount's cached end
 * never zeroes what the other wrote back into the gap, and a cached size
 * written back never shrinks the file another mount extended. */
static void test_two_writers(void)
{
	uint64_t top = topdir("two"), f = mk(top, "f"), g = mk(top, "g");
	static uint8_t a8k[8192], b8k[8192], rd[8192];
	struct ns *other = NULL;
	struct ns_attr a;

	fill(a8k, sizeof a8k, 5);
	fill(b8k, sizeof b8k, 6);
	RC(ns_mount(cl, &cid, NULL, &other), 0);
	RC(ns_write(ns, f, a8k, sizeof a8k, 0), sizeof a8k);
	RC(ns_fsync(ns, f, false), 0);
	RC(ns_write(ns, f, a8k, 10, 0), 10);   /* cached here: size 8192 */
	RC(ns_write(other, f, b8k, sizeof b8k, 8192), sizeof b8k);
	RC(ns_fsync(other, f, false), 0);      /* written back: 16384 */
	RC(ns_write(ns, f, a8k, 100, 20000), 100); /* past the cached end */
	RC(ns_fsync(ns, f, false), 0);
	RC(ns_getattr(other, f, &a), 0);
	CU_ASSERT_EQUAL(a.size, 20100);
	RC(ns_read(other, f, rd, sizeof rd, 8192), sizeof rd);
	CU_ASSERT_EQUAL(memcmp(rd, b8k, sizeof rd), 0); /* not zeroed */
	RC(ns_read(ns, f, rd, 100, 20000), 100);
	CU_ASSERT_EQUAL(memcmp(rd, a8k, 100), 0);
	/* a cached size (100) written back after the other mount's 8192 */
	RC(ns_write(ns, g, a8k, 100, 0), 100);
	RC(ns_write(other, g, b8k, sizeof b8k, 0), sizeof b8k);
	RC(ns_fsync(other, g, false), 0);
	RC(ns_fsync(ns, g, false), 0);
	RC(ns_getattr(other, g, &a), 0);
	CU_ASSERT_EQUAL(a.size, sizeof b8k);
	RC(ns_read(ns, g, rd, sizeof rd, 0), sizeof rd);
	CU_ASSERT_EQUAL(memcmp(rd, b8k, sizeof rd), 0);
	RC(ns_umount(other), 0);
	ns_check();
}

/* Times set by a caller, before 1970 too, come back as set (through a
 * second mount: from the record); out-of-range ones are refused and
 * change nothing. */
static void test_times(void)
{
	uint64_t top = topdir("times"), f = mk(top, "f");
	struct ns_attr in = {0}, a;
	struct ns *other = NULL;

	in.atime.tv_sec = -2; /* 1969-12-31 23:59:58.5 */
	in.atime.tv_nsec = 500000000;
	in.mtime.tv_sec = 4102444800; /* 2100-01-01 */
	in.mtime.tv_nsec = 7;
	RC(ns_setattr(ns, f, &in, NS_SET_ATIME | NS_SET_MTIME, NULL), 0);
	RC(ns_mount(cl, &cid, NULL, &other), 0);
	RC(ns_getattr(other, f, &a), 0);
	CU_ASSERT_EQUAL(a.atime.tv_sec, -2);
	CU_ASSERT_EQUAL(a.atime.tv_nsec, 500000000);
	CU_ASSERT_EQUAL(a.mtime.tv_sec, 4102444800);
	CU_ASSERT_EQUAL(a.mtime.tv_nsec, 7);
	in.mtime.tv_nsec = 1000000000;
	RC(ns_setattr(ns, f, &in, NS_SET_MTIME, NULL), -EINVAL);
	CU_ASSERT(strstr(ns_errmsg(), "mtime") != NULL);
	in.mtime.tv_nsec = 0;
	in.mtime.tv_sec = (time_t)1 << 40;
	RC(ns_setattr(ns, f, &in, NS_SET_ATIME | NS_SET_MTIME, NULL),
	   -EOVERFLOW);
	RC(ns_getattr(other, f, &a), 0);
	CU_ASSERT_EQUAL(a.mtime.tv_sec, 4102444800); /* unchanged */
	RC(ns_umount(other), 0);
	ns_check();
}

/* Data and names survive ns_umount + ns_mount, and a reopen of the
 * store (clovis_fini + clovis_init). */
static void test_persist(void)
{
	uint64_t top = topdir("persist"), d = mkd(top, "d"), f = mk(d, "f");
	static uint8_t w[200000], r[200000];
	struct ns_attr a;

	fill(w, sizeof w, 11);
	RC(ns_write(ns, f, w, sizeof w, 12345), sizeof w);
	RC(ns_setxattr(ns, f, "user.p", "kept", 4, 0), 0);
	RC(ns_symlink(ns, d, "s", "f", 0, 0, NULL), 0);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0) {
			RC(ns_umount(ns), 0);
			RC(ns_mount(cl, &cid, NULL, &ns), 0);
		} else if (ut_cluster_skip("posix_ns persist", "a reopen of "
					   "the local store")) {
			break;
		} else {
			suite_close();
			RC(suite_open(), 0);
		}
		RC(ns_lookup(ns, d, "f", &a), 0);
		CU_ASSERT_EQUAL(a.ino, f);
		CU_ASSERT_EQUAL(a.size, sizeof w + 12345);
		RC(ns_read(ns, f, r, sizeof r, 12345), sizeof w);
		CU_ASSERT_EQUAL(memcmp(r, w, sizeof w), 0);
		RC(ns_read(ns, f, r, 12345, 0), 12345);
		CU_ASSERT_EQUAL(memcmp(r, (uint8_t[12345]){0}, 12345), 0);
		RC(ns_getxattr(ns, f, "user.p", r, sizeof r), 4);
		RC(ns_readlink(ns, ino_of(d, "s"), (char *)r, sizeof r), 1);
	}
	ns_check();
}

/* (ino, gen) names a file for ever: -ESTALE once it is gone, or for a
 * wrong generation. */
static void test_generations(void)
{
	uint64_t top = topdir("gen");
	struct ns_attr a, b;

	RC(ns_mknod(ns, top, "f", 0644, 0, 0, 0, &a), 0);
	RC(ns_getattr_gen(ns, a.ino, a.gen, &b), 0);
	CU_ASSERT_EQUAL(b.ino, a.ino);
	RC(ns_getattr_gen(ns, a.ino, a.gen + 1, &b), -ESTALE);
	RC(ns_mknod(ns, top, "g", 0644, 0, 0, 0, &b), 0);
	CU_ASSERT_NOT_EQUAL(a.gen, b.gen);
	RC(ns_unlink(ns, top, "f"), 0);
	RC(ns_getattr_gen(ns, a.ino, a.gen, &b), -ESTALE);
	CU_ASSERT_PTR_NOT_NULL(strstr(ns_errmsg(), "gone"));
	ns_check();
}

/* The S3 shared view: an object written by someone else becomes a file,
 * replacing one (whose inode and data go), in one dtx. */
static void test_link_object(void)
{
	uint64_t top = topdir("linkobj"), old = mk(top, "f"), d = mkd(top, "d");
	struct clovis_obj_attr oa = {.oa_block_shift = 14,
				     .oa_layout = CLOVIS_LAYOUT_PLAIN,
				     .oa_tier = CLOVIS_TIER_FLASH};
	struct clovis_id id = {0x5333, (uint64_t)getpid() << 16 | 1};
	struct clovis_id none = {0x5333, 0xdead}, oldd;
	static uint8_t w[3 << 14], r[3 << 14];
	struct clovis_container co;
	struct clovis_obj o, o2;
	struct clovis_op *op;
	struct ns_attr a;
	uint32_t bs;

	RC(ns_write(ns, old, "old", 3, 0), 3);
	RC(ns_data_id(ns, old, &oldd, &bs), 0);
	clovis_container_init(&co, cl, &cid);
	RC(clovis_obj_init(&o, &co.co_realm, &id, &oa), 0);
	ent_create(&o.ob_entity);
	fill(w, sizeof w, 5);
	{
		uint64_t s = 0, n = 3;
		void *p = w;
		size_t l = sizeof w;
		struct clovis_extvec ev = {1, &s, &n};
		struct clovis_bufvec bv = {1, &p, &l};

		RC(clovis_obj_op(&o, CLOVIS_OC_WRITE, &ev, &bv, 0, &op), 0);
		RC(clovis_op_sync(op), 0);
	}
	RC(ns_link_object(ns, top, "f", &none, 14, 1, 0644, 0, 0, &a), -ENOENT);
	RC(ns_link_object(ns, top, "f", &id, 12, 1, 0644, 0, 0, &a), -EINVAL);
	RC(ns_link_object(ns, top, "d", &id, 14, 1, 0644, 0, 0, &a), -EISDIR);
	RC(ns_link_object(ns, top, "f", &id, 14, 40000, S_IFDIR | 0644, 0, 0,
			  &a), -EINVAL);
	CU_ASSERT_EQUAL(ino_of(top, "f"), old);
	RC(ns_link_object(ns, top, "f", &id, 14, 40000, 0640, 5, 6, &a), 0);
	CU_ASSERT_NOT_EQUAL(a.ino, old);
	CU_ASSERT_EQUAL(a.size, 40000);
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0640);
	CU_ASSERT_EQUAL(a.blksize, 1u << 14);
	CU_ASSERT_EQUAL(ino_of(top, "f"), a.ino);
	RC(ns_getattr(ns, old, &a), -ENOENT);
	RC(clovis_obj_init(&o2, &co.co_realm, &oldd, NULL), 0);
	RC(clovis_entity_op(&o2.ob_entity, CLOVIS_EO_OPEN, &op), 0);
	RC(clovis_op_sync(op), -ENOENT);
	a.ino = ino_of(top, "f");
	RC(ns_read(ns, a.ino, r, sizeof r, 0), 40000);
	CU_ASSERT_EQUAL(memcmp(r, w, 40000), 0);
	RC(ns_data_id(ns, a.ino, &oldd, &bs), 0);
	CU_ASSERT_EQUAL(clovis_id_cmp(&oldd, &id), 0);
	CU_ASSERT_EQUAL(bs, 14);
	/* written through the namespace: read-modify-write in its blocks */
	RC(ns_write(ns, a.ino, "XY", 2, 16383), 2);
	RC(ns_read(ns, a.ino, r, sizeof r, 0), 40000);
	CU_ASSERT(r[16383] == 'X' && r[16384] == 'Y');
	CU_ASSERT_EQUAL(memcmp(r, w, 16383), 0);
	/* unlinked: the object goes with the file */
	RC(ns_unlink(ns, top, "f"), 0);
	RC(clovis_entity_op(&o.ob_entity, CLOVIS_EO_OPEN, &op), 0);
	RC(clovis_op_sync(op), -ENOENT);
	/* a file whose object is gone already can still be removed */
	id.ci_lo++;
	RC(clovis_obj_init(&o, &co.co_realm, &id, &oa), 0);
	ent_create(&o.ob_entity);
	RC(ns_link_object(ns, d, "g", &id, 14, 0, 0644, 0, 0, NULL), 0);
	RC(clovis_entity_op(&o.ob_entity, CLOVIS_EO_DELETE, &op), 0);
	RC(clovis_op_sync(op), 0);
	RC(ns_unlink(ns, d, "g"), 0);
	ns_check();
}

/* statvfs from the devices and the inode table's count. */
static void test_statfs(void)
{
	uint64_t top = topdir("statfs"), size = 0;
	struct clovis_dev_info di[64];
	struct statvfs a, b;
	uint32_t nr = 64;

	RC(clovis_dev_list(cl, di, &nr), 0);
	for (uint32_t i = 0; i < nr && i < 64; i++)
		size += di[i].di_size_bytes;
	RC(ns_statfs(ns, &a), 0);
	CU_ASSERT_EQUAL(a.f_bsize, 1u << NS_BLOCK_SHIFT_DEFAULT);
	CU_ASSERT_EQUAL(a.f_frsize, a.f_bsize);
	CU_ASSERT_EQUAL(a.f_blocks, size / a.f_bsize);
	/* (a cluster's devices are its own, not this store's) */
	CU_ASSERT(a.f_blocks > 0 && (ut_cluster_mode() ||
				     a.f_blocks <= 3 * DEV_SIZE / a.f_bsize));
	CU_ASSERT(a.f_bfree > 0 && a.f_bfree < a.f_blocks);
	CU_ASSERT_EQUAL(a.f_bavail, a.f_bfree);
	CU_ASSERT_EQUAL(a.f_namemax, NS_NAME_MAX);
	CU_ASSERT_EQUAL(a.f_fsid, (unsigned long)ns_super(ns)->sb_fsid);
	CU_ASSERT(a.f_files > a.f_ffree);
	mk(top, "a");
	mk(top, "b");
	RC(ns_statfs(ns, &b), 0);
	CU_ASSERT_EQUAL(b.f_files - b.f_ffree, a.f_files - a.f_ffree + 2);
	RC(ns_unlink(ns, top, "a"), 0);
	RC(ns_statfs(ns, &b), 0);
	CU_ASSERT_EQUAL(b.f_files - b.f_ffree, a.f_files - a.f_ffree + 1);
}

/* ------------------------------------------------------------- threads */

#define T_CHUNK 10007u
#define T_NCHUNK 64u
#define T_FILES 100

struct thr {
	int t;
	uint64_t f, d;
	int errors;
};

/* Chunks t, t + 4, ... of one file: neighbours share blocks, so each
 * write's read-modify-write must see the others'. */
static void *thr_writer(void *arg)
{
	struct thr *x = arg;
	uint8_t *buf = malloc(T_CHUNK);

	for (uint32_t i = (uint32_t)x->t; i < T_NCHUNK; i += 4) {
		fill(buf, T_CHUNK, i);
		if (ns_write(ns, x->f, buf, T_CHUNK, (uint64_t)i * T_CHUNK) !=
		    T_CHUNK)
			x->errors++;
	}
	free(buf);
	return NULL;
}

/* Files and directories in one directory, some renamed and removed. */
static void *thr_creator(void *arg)
{
	struct thr *x = arg;
	char n[32], n2[32];

	for (int i = 0; i < T_FILES; i++) {
		bool isdir = i % 10 == 9;
		int rc;

		snprintf(n, sizeof n, "t%d_%03d", x->t, i);
		snprintf(n2, sizeof n2, "r%d_%03d", x->t, i);
		rc = isdir ? ns_mkdir(ns, x->d, n, 0755, 0, 0, NULL)
			   : ns_mknod(ns, x->d, n, 0644, 0, 0, 0, NULL);
		if (rc == 0 && i % 7 == 3)
			rc = ns_rename(ns, x->d, n, x->d, n2, 0);
		if (rc == 0 && i % 11 == 5)
			rc = isdir ? ns_rmdir(ns, x->d, i % 7 == 3 ? n2 : n)
				   : ns_unlink(ns, x->d, i % 7 == 3 ? n2 : n);
		if (rc != 0) {
			fprintf(stderr, "\nthreads: %s: %s\n", n, ns_errmsg());
			x->errors++;
		}
	}
	return NULL;
}

static void test_threads(void)
{
	uint64_t top = topdir("threads"), f = mk(top, "f"), d = mkd(top, "d");
	uint8_t *buf = malloc(T_CHUNK * T_NCHUNK), *want = malloc(T_CHUNK);
	struct ns_dirent *e = malloc(1000 * sizeof *e);
	struct thr x[8];
	pthread_t th[8];
	int n, removed = 0, dirs = 0;

	for (int i = 0; i < 8; i++) {
		x[i] = (struct thr){.t = i % 4, .f = f, .d = d};
		pthread_create(&th[i], NULL, i < 4 ? thr_writer : thr_creator,
			       &x[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(x[i].errors, 0);
	}
	RC(ns_read(ns, f, buf, T_CHUNK * T_NCHUNK, 0), T_CHUNK * T_NCHUNK);
	for (uint32_t i = 0; i < T_NCHUNK; i++) {
		fill(want, T_CHUNK, i);
		CU_ASSERT_EQUAL(memcmp(buf + i * T_CHUNK, want, T_CHUNK), 0);
	}
	for (int i = 0; i < T_FILES; i++) {
		removed += i % 11 == 5;
		dirs += i % 10 == 9 && i % 11 != 5;
	}
	n = list_all(d, e, 1000);
	RC(n, 4 * (T_FILES - removed));
	RC(nlink_of(d), 2 + 4 * dirs);
	ns_check();
	free(buf);
	free(want);
	free(e);
}

/* ------------------------------------------------------ crash, mkfs */

/* The child of test_crash: changes of every kind, an fsync after each
 * round, whose number then goes down the pipe; until killed. */
static void crash_child(const char *d, int fd, uint32_t base)
{
	uint8_t buf[10000];
	struct ns *cns = NULL;
	struct clovis *ccl = store_open(d);

	if (ccl == NULL)
		_exit(2);
	if (ns_mkfs(ccl, &cid, NULL) != 0 && base == 0)
		_exit(3);
	if (ns_mount(ccl, &cid, NULL, &cns) != 0)
		_exit(4);
	for (uint32_t i = base;; i++) {
		char n[32], g[32];
		struct ns_attr a;

		snprintf(n, sizeof n, "d%u", i);
		snprintf(g, sizeof g, "g%u", i);
		fill(buf, sizeof buf, i);
		if (ns_mkdir(cns, ROOT, n, 0755, 0, 0, &a) != 0 ||
		    ns_mknod(cns, a.ino, "f", 0644, 0, 0, 0, NULL) != 0 ||
		    ns_lookup(cns, a.ino, "f", &a) != 0 ||
		    ns_write(cns, a.ino, buf, sizeof buf, 0) != sizeof buf ||
		    ns_setxattr(cns, a.ino, "user.i", &i, sizeof i, 0) != 0 ||
		    ns_rename(cns, ino_of_ns(cns, ROOT, n), "f", ROOT, g, 0) ||
		    ns_link(cns, a.ino, ino_of_ns(cns, ROOT, n), "h", NULL) ||
		    ns_mknod(cns, ROOT, "tmp", 0644, 0, 0, 0, NULL) != 0 ||
		    ns_rename(cns, ROOT, "tmp", ino_of_ns(cns, ROOT, n), "h",
			      0) != 0 ||
		    ns_fsync(cns, a.ino, false) != 0)
			_exit(5);
		if (write(fd, &i, sizeof i) != sizeof i)
			_exit(6);
	}
}

/* After the kill: every round the child reported is there whole, and the
 * namespace is consistent (a round in flight: whole or absent). */
static void crash_verify(uint32_t base, uint32_t last)
{
	uint8_t buf[10001], want[10000];

	for (uint32_t i = base; i <= last; i++) {
		char n[32], g[32];
		uint64_t f, dd;
		uint32_t v = 0;

		snprintf(n, sizeof n, "d%u", i);
		snprintf(g, sizeof g, "g%u", i);
		f = ino_of(ROOT, g);
		dd = ino_of(ROOT, n);
		CU_ASSERT(f != 0 && dd != 0);
		if (f == 0 || dd == 0)
			continue;
		fill(want, sizeof want, i);
		RC(ns_read(ns, f, buf, sizeof buf, 0), sizeof want);
		CU_ASSERT_EQUAL(memcmp(buf, want, sizeof want), 0);
		RC(ns_getxattr(ns, f, "user.i", &v, sizeof v), sizeof v);
		CU_ASSERT_EQUAL(v, i);
		CU_ASSERT_EQUAL(nlink_of(f), 1);
		CU_ASSERT_NOT_EQUAL(ino_of(dd, "h"), 0);
		CU_ASSERT_EQUAL(ino_of(dd, "f"), 0);
	}
}

/* Kill a process making changes (SIGKILL, at a random instant), three
 * times, and check what it left. */
static void test_crash(void)
{
	char d[600];

	if (ut_cluster_skip("posix_ns crash", "a local store in a child"))
		return;
	snprintf(d, sizeof d, "%s-crash", dir);
	suite_close();
	rnd_state = 0x5eed0003;
	for (uint32_t round = 0; round < 3; round++) {
		uint32_t base = round * 1000, last = 0, got = 0, v;
		int p[2], status;
		pid_t pid;

		CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
		pid = fork();
		if (pid == 0) {
			close(p[0]);
			crash_child(d, p[1], base);
		}
		close(p[1]);
		while (got < 4 + round * 3 && read(p[0], &v, sizeof v) ==
		       sizeof v) {
			last = v;
			got++;
		}
		usleep((useconds_t)(rnd() % 5000));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		while (read(p[0], &v, sizeof v) == sizeof v) {
			last = v;
			got++;
		}
		close(p[0]);
		CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		CU_ASSERT(got >= 4 + round * 3);
		cl = store_open(d);
		CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
		RC(ns_mount(cl, &cid, NULL, &ns), 0);
		if (got > 0)
			crash_verify(base, last);
		ns_check();
		suite_close();
	}
	RC(clovis_store_destroy(d), 0);
	RC(suite_open(), 0);
}

/* A mkfs that stopped half way is finished by the next; options: 4 KiB
 * blocks, a MIRROR layout (writes and truncates then obey the dtx rules
 * of unit layouts), against the model. */
static void test_mkfs_half(void)
{
	struct ns_mkfs_opts o = {.block_shift = 12, .root_mode = 0700,
				 .root_uid = 5, .root_gid = 6,
				 .layout = CLOVIS_LAYOUT_MIRROR};
	uint8_t *m = calloc(1, MODEL_MAX), *buf = malloc(400000);
	uint64_t sz = 0;
	struct clovis_id data;
	uint32_t shift;
	struct clovis_container co;
	struct clovis_idx ix;
	struct ns_attr a;
	char d[600];
	uint64_t f;

	if (ut_cluster_skip("posix_ns mkfs_half", "a second local store"))
		return;
	snprintf(d, sizeof d, "%s-half", dir);
	suite_close();
	cl = store_open(d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	clovis_container_init(&co, cl, &cid);
	ent_create(&co.co_entity);
	clovis_idx_init(&ix, &co.co_realm, &NS_ID_SUPER);
	ent_create(&ix.in_entity);
	clovis_idx_init(&ix, &co.co_realm, &NS_ID_INODES);
	ent_create(&ix.in_entity);
	RC(ns_mount(cl, &cid, NULL, &ns), -ENOENT);
	RC(ns_mkfs(cl, &cid, &o), 0);
	RC(ns_mount(cl, &cid, NULL, &ns), 0);
	CU_ASSERT_EQUAL(ns_super(ns)->sb_block_shift, 12);
	RC(ns_getattr(ns, ROOT, &a), 0);
	CU_ASSERT_EQUAL(a.mode, S_IFDIR | 0700);
	CU_ASSERT(a.uid == 5 && a.gid == 6);
	f = mk(ROOT, "f");
	RC(ns_write(ns, f, "x", 1, 5000), 1);
	RC(ns_getattr(ns, f, &a), 0);
	CU_ASSERT_EQUAL(a.blksize, 4096);
	CU_ASSERT_EQUAL(a.size, 5001);
	m[5000] = 'x';
	sz = 5001;
	RC(ns_data_id(ns, f, &data, &shift), 0);
	CU_ASSERT_EQUAL(shift, 12);
	{
		struct clovis_obj ob;

		RC(clovis_obj_init(&ob, &co.co_realm, &data, NULL), 0);
		RC(ns_ent_sync(&ob.ob_entity, CLOVIS_EO_OPEN), 0);
		CU_ASSERT_EQUAL(ob.ob_attr.oa_layout, CLOVIS_LAYOUT_MIRROR);
	}
	rnd_state = 0x5eed0004;
	for (int i = 0; i < 120; i++)
		model_step(f, m, &sz, buf);
	CU_ASSERT_TRUE(model_check(f, m, sz));
	free(m);
	free(buf);
	ns_check();
	RC(ns_umount(ns), 0);
	ns = NULL;
	RC(ns_mkfs(cl, &cid, &o), -EEXIST);
	clovis_fini(cl);
	RC(clovis_store_destroy(d), 0);
	RC(suite_open(), 0);
}

/* ---------------------------------------------------------- performance */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct perf {
	uint64_t d;
	int from, n, errors;
};

static void *perf_creator(void *arg)
{
	struct perf *p = arg;
	char n[32];

	for (int i = p->from; i < p->from + p->n; i++) {
		snprintf(n, sizeof n, "p%06d", i);
		p->errors += ns_mknod(ns, p->d, n, 0644, 0, 0, 0, NULL) != 0;
	}
	return NULL;
}

/* Creates in one directory, one thread then four, and unlinks: printed
 * (STRATA_UT_POSIX_PERF=N for N per run, 1000 by default), not judged. */
static void test_perf_creates(void)
{
	const char *env = getenv("STRATA_UT_POSIX_PERF");
	int n = env != NULL && atoi(env) > 0 ? atoi(env) : 1000;
	uint64_t d = topdir("perf");
	struct perf p[4];
	pthread_t th[4];
	double t0, t1, t2, t3;
	char name[32];

	p[0] = (struct perf){d, 0, n, 0};
	t0 = now_s();
	perf_creator(&p[0]);
	t1 = now_s();
	for (int i = 0; i < 4; i++) {
		p[i] = (struct perf){d, n + i * (n / 4), n / 4, 0};
		pthread_create(&th[i], NULL, perf_creator, &p[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	t2 = now_s();
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(p[i].errors, 0);
	for (int i = 0; i < n + 4 * (n / 4); i++) {
		snprintf(name, sizeof name, "p%06d", i);
		RC(ns_unlink(ns, d, name), 0);
	}
	t3 = now_s();
	CU_ASSERT(ns->ns_pend_nr <= NS_PEND_MAX);
	CU_ASSERT(ns->ns_pend_bytes <= NS_PEND_BYTES_MAX);
	RC(ns_fsync(ns, d, false), 0);
	CU_ASSERT_EQUAL(ns->ns_pend_nr, 0);
	printf("(%d creates: %.0f/s; 4 threads: %.0f/s; unlinks %.0f/s) ",
	       n, n / (t1 - t0), 4 * (n / 4) / (t2 - t1),
	       (n + 4 * (n / 4)) / (t3 - t2));
	RC(ns_readdir(ns, d, NULL, &(struct ns_dirent){0}, 1), 0);
}

int posix_ns_ut_add(void)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{"mkfs_mount", test_mkfs_mount},
		{"bad_super", test_bad_super},
		{"create_lookup", test_create_lookup},
		{"errors", test_errors},
		{"readdir_paging", test_readdir_paging},
		{"dir_moves", test_dir_moves},
		{"rename", test_rename},
		{"links", test_links},
		{"symlink", test_symlink},
		{"xattrs", test_xattrs},
		{"xattrs_many", test_xattrs_many},
		{"block_size", test_block_size},
		{"rw_model", test_rw_model},
		{"holes_truncate", test_holes_truncate},
		{"cache", test_cache},
		{"two_writers", test_two_writers},
		{"times", test_times},
		{"persist", test_persist},
		{"generations", test_generations},
		{"link_object", test_link_object},
		{"statfs", test_statfs},
		{"threads", test_threads},
		{"crash", test_crash},
		{"mkfs_half", test_mkfs_half},
		{"perf_creates", test_perf_creates},
	};
	CU_pSuite s = CU_add_suite("posix_ns", suite_init, suite_fini);

	if (s == NULL)
		return -1;
	for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	return 0;
}
