/*
 * metanv_ut.c — stores made with CLOVIS_CONF_META_NVRAM (the metadata on
 * the NVRAM device directory): where the metadata lives, objects and index
 * records across close and reopen, the refusal of a store whose metadata
 * directory is gone (nothing changed), and a destroy that leaves nothing
 * in the NVRAM directory.  The NVRAM directory is the default, /dev/shm.
 */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "core/fault.h"
#include "tests/ut.h"

#define NV_DEV_SIZE (16ull << 20)
#define NV_NR_KEYS 64u

static char nv_dir[512];

static int nv_open(const char *d, uint32_t flags, struct clovis **out)
{
	struct clovis_conf c = {.cc_data_dir = d, .cc_flags = flags,
				.cc_dev_size = NV_DEV_SIZE};

	*out = NULL;
	return clovis_init(out, &c);
}

/* The target of d/meta in out (a link): 0, or -1 when it is no link. */
static int nv_target(const char *d, char *out, size_t len)
{
	char link[600];
	ssize_t n;

	snprintf(link, sizeof link, "%s/meta", d);
	n = readlink(link, out, len - 1);
	if (n < 0)
		return -1;
	out[n] = '\0';
	return 0;
}

/* Entries in /dev/shm whose name holds the hex uuid of target's name. */
static unsigned nv_shm_count(const char *target)
{
	const char *u = strstr(target, "/strata-");
	char uuid[33];
	unsigned n = 0;
	struct dirent *de;
	DIR *dh;

	if (u == NULL || strlen(u) < 8 + 32)
		return 99;
	memcpy(uuid, u + 8, 32);
	uuid[32] = '\0';
	dh = opendir("/dev/shm");
	if (dh == NULL)
		return 99;
	while ((de = readdir(dh)) != NULL)
		n += strstr(de->d_name, uuid) != NULL;
	closedir(dh);
	return n;
}

static int obj_make(struct clovis *cl, struct clovis_obj *o, uint64_t lo,
		    uint32_t tier, enum clovis_entity_opcode oc)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12, .oa_tier = tier};
	struct clovis_id id = {0x4e56, lo};
	struct clovis_op *op = NULL;
	int rc = clovis_obj_init(o, clovis_default_realm(cl), &id,
				 oc == CLOVIS_EO_CREATE ? &a : NULL);

	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, oc, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* 8 blocks from block 0, each filled with seed + its number. */
static int obj_rw(struct clovis_obj *o, enum clovis_obj_opcode oc,
		  uint8_t *buf)
{
	uint64_t start = 0, nr = 8;
	struct clovis_extvec ext = {1, &start, &nr};
	void *b = buf;
	size_t len = 8 * 4096;
	struct clovis_bufvec data = {1, &b, &len};
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(o, oc, &ext, &data, 0, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

static int idx_make(struct clovis *cl, struct clovis_idx *ix,
		    enum clovis_entity_opcode oc)
{
	struct clovis_id id = {0x4e56, 100};
	struct clovis_op *op = NULL;
	int rc = clovis_idx_init(ix, clovis_default_realm(cl), &id);

	if (rc == 0)
		rc = clovis_entity_op(&ix->in_entity, oc, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* PUT (or GET and compare) key "kN" -> value "vN" for N < NV_NR_KEYS. */
static int idx_rw(struct clovis_idx *ix, enum clovis_idx_opcode oc)
{
	char kb[NV_NR_KEYS][8], vb[NV_NR_KEYS][8], got[NV_NR_KEYS][8];
	void *kp[NV_NR_KEYS], *vp[NV_NR_KEYS];
	size_t kl[NV_NR_KEYS], vl[NV_NR_KEYS];
	int32_t rcs[NV_NR_KEYS];
	struct clovis_bufvec keys = {NV_NR_KEYS, kp, kl};
	struct clovis_bufvec vals = {NV_NR_KEYS, vp, vl};
	struct clovis_op *op = NULL;
	int rc;

	memset(got, 0, sizeof got);
	for (uint32_t i = 0; i < NV_NR_KEYS; i++) {
		snprintf(kb[i], 8, "k%u", i);
		snprintf(vb[i], 8, "v%u", i);
		kp[i] = kb[i];
		kl[i] = strlen(kb[i]);
		vp[i] = oc == CLOVIS_IC_PUT ? vb[i] : got[i];
		vl[i] = oc == CLOVIS_IC_PUT ? strlen(vb[i]) : 8;
	}
	rc = clovis_idx_op(ix, oc, &keys, &vals, rcs, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	for (uint32_t i = 0; rc == 0 && i < NV_NR_KEYS; i++)
		if (rcs[i] != 0 || (oc == CLOVIS_IC_GET &&
				    strncmp(got[i], vb[i], vl[i]) != 0))
			rc = -EIO;
	return rc;
}

/* Make the store with the metadata on NVRAM, write an object on each of
 * two tiers and an index; check the link. */
static void test_create(void)
{
	uint8_t buf[8 * 4096];
	char target[PATH_MAX], path[PATH_MAX + 16];
	struct clovis_obj o1, o2;
	struct clovis_idx ix;
	struct clovis *cl;
	struct stat st;

	CU_ASSERT_EQUAL_FATAL(nv_open(nv_dir, CLOVIS_CONF_CREATE |
				      CLOVIS_CONF_META_NVRAM, &cl), 0);
	CU_ASSERT_EQUAL_FATAL(nv_target(nv_dir, target, sizeof target), 0);
	CU_ASSERT(strncmp(target, "/dev/shm/strata-", 16) == 0);
	CU_ASSERT(strlen(target) > 5 &&
		  strcmp(target + strlen(target) - 5, "-meta") == 0);
	snprintf(path, sizeof path, "%s/data.mdb", target);
	CU_ASSERT(stat(path, &st) == 0 && S_ISREG(st.st_mode));
	memset(buf, 0x5a, sizeof buf);
	CU_ASSERT_EQUAL(obj_make(cl, &o1, 1, CLOVIS_TIER_FLASH,
				 CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(obj_make(cl, &o2, 2, CLOVIS_TIER_NVRAM,
				 CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(obj_rw(&o1, CLOVIS_OC_WRITE, buf), 0);
	memset(buf, 0xa5, sizeof buf);
	CU_ASSERT_EQUAL(obj_rw(&o2, CLOVIS_OC_WRITE, buf), 0);
	CU_ASSERT_EQUAL(idx_make(cl, &ix, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(idx_rw(&ix, CLOVIS_IC_PUT), 0);
	clovis_fini(cl);
}

/* Reopen (without the flag: the link is followed) and read it all back. */
static void test_reopen(void)
{
	uint8_t buf[8 * 4096], want[8 * 4096];
	struct clovis_obj o1, o2;
	struct clovis_idx ix;
	struct clovis *cl;

	CU_ASSERT_EQUAL_FATAL(nv_open(nv_dir, 0, &cl), 0);
	CU_ASSERT_EQUAL(obj_make(cl, &o1, 1, 0, CLOVIS_EO_OPEN), 0);
	CU_ASSERT_EQUAL(obj_make(cl, &o2, 2, 0, CLOVIS_EO_OPEN), 0);
	memset(want, 0x5a, sizeof want);
	CU_ASSERT_EQUAL(obj_rw(&o1, CLOVIS_OC_READ, buf), 0);
	CU_ASSERT(memcmp(buf, want, sizeof buf) == 0);
	memset(want, 0xa5, sizeof want);
	CU_ASSERT_EQUAL(obj_rw(&o2, CLOVIS_OC_READ, buf), 0);
	CU_ASSERT(memcmp(buf, want, sizeof buf) == 0);
	CU_ASSERT_EQUAL(idx_make(cl, &ix, CLOVIS_EO_OPEN), 0);
	CU_ASSERT_EQUAL(idx_rw(&ix, CLOVIS_IC_GET), 0);
	clovis_fini(cl);
}

/* The names in directory d, sorted, joined by '/'. */
static void nv_list(const char *d, char *out, size_t len)
{
	struct dirent **names;
	int n = scandir(d, &names, NULL, alphasort);
	size_t off = 0;

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (off < len)
			off += (size_t)snprintf(out + off, len - off, "%s/",
						names[i]->d_name);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

/* The metadata directory gone (NVRAM lost): open and destroy refuse with
 * -ENOENT, a message naming the data directory and the missing path, and
 * change nothing; back in place, the store opens with its data. */
static void test_dangling(void)
{
	char target[PATH_MAX], moved[PATH_MAX + 8], again[PATH_MAX];
	char before[4096], after[4096];
	struct clovis *cl = NULL;
	const char *msg;

	CU_ASSERT_EQUAL_FATAL(nv_target(nv_dir, target, sizeof target), 0);
	snprintf(moved, sizeof moved, "%s.away", target);
	CU_ASSERT_EQUAL_FATAL(rename(target, moved), 0);
	nv_list(nv_dir, before, sizeof before);
	CU_ASSERT_EQUAL(nv_open(nv_dir, CLOVIS_CONF_CREATE |
				CLOVIS_CONF_META_NVRAM, &cl), -ENOENT);
	CU_ASSERT_PTR_NULL(cl);
	msg = clovis_errmsg();
	CU_ASSERT(strstr(msg, nv_dir) != NULL && strstr(msg, target) != NULL);
	CU_ASSERT_EQUAL(clovis_store_destroy(nv_dir), -ENOENT);
	nv_list(nv_dir, after, sizeof after);
	CU_ASSERT_STRING_EQUAL(before, after);
	CU_ASSERT_EQUAL(nv_target(nv_dir, again, sizeof again), 0);
	CU_ASSERT_STRING_EQUAL(again, target);
	CU_ASSERT(access(target, F_OK) != 0 && errno == ENOENT);
	CU_ASSERT_EQUAL_FATAL(rename(moved, target), 0);
	test_reopen();
}

/* Destroy removes the metadata directory, the link and the NVRAM device:
 * nothing of the store is left in /dev/shm. */
static void test_destroy(void)
{
	char target[PATH_MAX];

	CU_ASSERT_EQUAL_FATAL(nv_target(nv_dir, target, sizeof target), 0);
	CU_ASSERT(nv_shm_count(target) >= 2); /* metadata, NVRAM device */
	CU_ASSERT_EQUAL(clovis_store_destroy(nv_dir), 0);
	CU_ASSERT(access(target, F_OK) != 0 && errno == ENOENT);
	CU_ASSERT(access(nv_dir, F_OK) != 0 && errno == ENOENT);
	CU_ASSERT_EQUAL(nv_shm_count(target), 0);
}

/* Without the flag the metadata is a directory in the store, as before;
 * with it and an NVRAM directory that does not exist, the create fails
 * naming it and leaves no metadata behind. */
static void test_plain_and_bad_dir(void)
{
	struct clovis_conf c = {.cc_flags = CLOVIS_CONF_CREATE |
					    CLOVIS_CONF_META_NVRAM,
				.cc_dev_size = NV_DEV_SIZE};
	char d[600], meta[620], missing[620];
	struct clovis *cl;
	struct stat st;

	snprintf(d, sizeof d, "%s-plain", nv_dir);
	CU_ASSERT_EQUAL_FATAL(nv_open(d, CLOVIS_CONF_CREATE, &cl), 0);
	clovis_fini(cl);
	snprintf(meta, sizeof meta, "%s/meta", d);
	CU_ASSERT(lstat(meta, &st) == 0 && S_ISDIR(st.st_mode));
	CU_ASSERT_EQUAL(clovis_store_destroy(d), 0);
	snprintf(d, sizeof d, "%s-bad", nv_dir);
	snprintf(missing, sizeof missing, "%s-no-such-dir", nv_dir);
	c.cc_data_dir = d;
	c.cc_nvram_dir = missing;
	cl = NULL;
	CU_ASSERT_EQUAL(clovis_init(&cl, &c), -ENOENT);
	CU_ASSERT_PTR_NULL(cl);
	CU_ASSERT(strstr(clovis_errmsg(), missing) != NULL);
	snprintf(meta, sizeof meta, "%s/meta", d);
	CU_ASSERT(lstat(meta, &st) != 0 && errno == ENOENT);
}

/* Entries in directory d (0 when it is empty or missing). */
static unsigned nv_dir_count(const char *d)
{
	struct dirent *de;
	unsigned n = 0;
	DIR *dh = opendir(d);

	if (dh == NULL)
		return 0;
	while ((de = readdir(dh)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(dh);
	return n;
}

/* A create that fails after k of its devices were made (fault point
 * store.create.dev: -ENOSPC at device k) leaves nothing in the NVRAM
 * directory: neither the metadata nor an NVRAM device file; the first k
 * that does not fire creates the store, whose files are all there. */
static void test_create_fails_clean(void)
{
	char d[600], nv[128];
	struct clovis_conf c = {.cc_flags = CLOVIS_CONF_CREATE |
					    CLOVIS_CONF_META_NVRAM,
				.cc_dev_size = NV_DEV_SIZE};
	struct clovis *cl = NULL;
	uint32_t k, failed = 0;
	int rc = -1;

	snprintf(d, sizeof d, "%s-nofit", nv_dir);
	snprintf(nv, sizeof nv, "/dev/shm/strata-ut-nvfail-%d", (int)getpid());
	CU_ASSERT_EQUAL_FATAL(mkdir(nv, 0700), 0);
	c.cc_data_dir = d;
	c.cc_nvram_dir = nv;
	for (k = 0; k < 16; k++) {
		fault_arm("store.create.dev", k, 1);
		rc = clovis_init(&cl, &c);
		fault_reset();
		if (rc == 0)
			break;
		failed++;
		CU_ASSERT_EQUAL(rc, -ENOSPC);
		CU_ASSERT(strstr(clovis_errmsg(), "store.create.dev") != NULL);
		CU_ASSERT_PTR_NULL(cl);
		CU_ASSERT_EQUAL(nv_dir_count(nv), 0);
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT(failed >= 2); /* an NVRAM device and a flash one at least */
	CU_ASSERT(nv_dir_count(nv) >= 2); /* the metadata, the NVRAM device */
	clovis_fini(cl);
	CU_ASSERT_EQUAL(clovis_store_destroy(d), 0);
	CU_ASSERT_EQUAL(nv_dir_count(nv), 0);
	rmdir(nv);
}

static int suite_init(void)
{
	const char *d = ut_tmpdir("metanv");

	if (d == NULL)
		return -1;
	snprintf(nv_dir, sizeof nv_dir, "%s/store", d);
	return 0;
}

int metanv_ut_add(void)
{
	CU_pSuite s;

	if (ut_cluster_mode())
		return 0; /* local stores only: the servers own theirs */
	s = CU_add_suite("metanv", suite_init, NULL);
	if (s == NULL ||
	    !CU_add_test(s, "create", test_create) ||
	    !CU_add_test(s, "reopen", test_reopen) ||
	    !CU_add_test(s, "dangling", test_dangling) ||
	    !CU_add_test(s, "destroy", test_destroy) ||
	    !CU_add_test(s, "plain_and_bad_dir", test_plain_and_bad_dir) ||
	    !CU_add_test(s, "create_fails_clean", test_create_fails_clean))
		return -1;
	return 0;
}
