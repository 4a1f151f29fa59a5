/*
 * metanv_ut.c — stores made with CLOVIS_CONF_META_NVRAM (the metadata on
 * the NVRAM device directory): where the metadata lives, objects and index
 * records across close and reopen, the refusal of a store whose metadata
 * directory is gone (nothing changed), and a destroy that leaves nothing
 * in the NVRAM directory.  The NVRAM directory is the default, /dev/shm.
 * Lone index updates (lone_put, lone_put_callbacks, lone_put_threads): a
 * PUT or DEL launched alone without callbacks runs in the launching thread
 * and is STABLE when launch returns; with callbacks it goes to a worker
 * (and a lone PUT launched from its oc_stable, inside a commit stage, is
 * queued, not deadlocked); from several threads at once; all found again
 * after close and reopen.
 */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
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

/* One record "<tag><n>" -> "val<n>" (klen, vlen set), in the caller's
 * buffers kb and vb, for a PUT (or a GET into vb, or a DEL). */
struct nv_rec {
	char r_kb[24], r_vb[24];
	void *r_kp, *r_vp;
	size_t r_kl, r_vl;
	int32_t r_rc;
	struct clovis_bufvec r_keys, r_vals;
};

static void nv_rec_make(struct nv_rec *r, const char *tag, uint32_t n,
			bool get)
{
	snprintf(r->r_kb, sizeof r->r_kb, "%s%u", tag, n);
	snprintf(r->r_vb, sizeof r->r_vb, "val%u", n);
	r->r_kp = r->r_kb;
	r->r_kl = strlen(r->r_kb);
	r->r_vp = r->r_vb;
	r->r_vl = get ? sizeof r->r_vb : strlen(r->r_vb);
	if (get)
		memset(r->r_vb, 0, sizeof r->r_vb);
	r->r_rc = 1;
	r->r_keys = (struct clovis_bufvec){1, &r->r_kp, &r->r_kl};
	r->r_vals = (struct clovis_bufvec){1, &r->r_vp, &r->r_vl};
}

/* GET "<tag><n>": 0 when it holds "val<n>", else the op's or record's rc
 * (-EIO for a wrong value). */
static int nv_get(struct clovis_idx *ix, const char *tag, uint32_t n)
{
	struct nv_rec r;
	char want[24];
	struct clovis_op *op = NULL;
	int rc;

	nv_rec_make(&r, tag, n, true);
	snprintf(want, sizeof want, "val%u", n);
	rc = clovis_idx_op(ix, CLOVIS_IC_GET, &r.r_keys, &r.r_vals, &r.r_rc,
			   0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0 && r.r_rc != 0)
		rc = r.r_rc;
	if (rc == 0 && (r.r_vl != strlen(want) ||
			memcmp(r.r_vb, want, r.r_vl) != 0))
		rc = -EIO;
	return rc;
}

/* Launch one single-record PUT (or DEL) of "<tag><n>" with no callbacks;
 * *stable_now tells whether it was STABLE when launch returned; then wait
 * for it.  Returns the wait's rc, or the record's. */
static int nv_lone(struct clovis_idx *ix, enum clovis_idx_opcode oc,
		   const char *tag, uint32_t n, bool *stable_now)
{
	struct nv_rec r;
	struct clovis_op *op = NULL;
	int rc;

	nv_rec_make(&r, tag, n, false);
	rc = clovis_idx_op(ix, oc, &r.r_keys,
			   oc == CLOVIS_IC_DEL ? NULL : &r.r_vals, &r.r_rc, 0,
			   &op);
	if (rc != 0)
		return rc;
	rc = clovis_op_launch(&op, 1);
	*stable_now = clovis_op_state(op) == CLOVIS_OS_STABLE;
	if (rc == 0)
		rc = clovis_op_wait(op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (rc == 0 && clovis_op_state(op) != CLOVIS_OS_STABLE)
		rc = -EIO;
	clovis_op_free(op);
	return rc == 0 ? r.r_rc : rc;
}

#define NV_LONE_NR 16u

/* Lone PUTs, one at a time with nothing else in flight, are committed in
 * the launching thread: STABLE when launch returns, visible at once; a
 * lone DEL too; a lone PUT into a deleted index fails at launch with the
 * index named.  All of it is found again after close and reopen. */
static void test_lone_put(void)
{
	struct clovis_idx ix, gone, gone2;
	struct clovis_id gid = {0x4e56, 101};
	struct clovis_op *op = NULL;
	struct clovis *cl;
	uint32_t stable_now = 0;
	bool now;

	CU_ASSERT_EQUAL_FATAL(nv_open(nv_dir, 0, &cl), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(cl, &ix, CLOVIS_EO_OPEN), 0);
	for (uint32_t i = 0; i < NV_LONE_NR; i++) {
		now = false;
		CU_ASSERT_EQUAL(nv_lone(&ix, CLOVIS_IC_PUT, "lone", i, &now),
				0);
		stable_now += now;
		CU_ASSERT_EQUAL(nv_get(&ix, "lone", i), 0);
	}
	CU_ASSERT_EQUAL(stable_now, NV_LONE_NR);
	now = false;
	CU_ASSERT_EQUAL(nv_lone(&ix, CLOVIS_IC_DEL, "lone", 0, &now), 0);
	CU_ASSERT(now);
	CU_ASSERT_EQUAL(nv_get(&ix, "lone", 0), -ENOENT);
	/* An index deleted through another handle: the PUT fails (-ENOENT),
	 * its message naming the index. */
	CU_ASSERT_EQUAL_FATAL(clovis_idx_init(&gone, clovis_default_realm(cl),
					      &gid), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&gone.in_entity,
					       CLOVIS_EO_CREATE, &op), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_op_sync(op), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_idx_init(&gone2, clovis_default_realm(cl),
					      &gid), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&gone2.in_entity,
					       CLOVIS_EO_OPEN, &op), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_op_sync(op), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&gone2.in_entity,
					       CLOVIS_EO_DELETE, &op), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_op_sync(op), 0);
	{
		struct nv_rec r;

		nv_rec_make(&r, "gone", 1, false);
		op = NULL;
		CU_ASSERT_EQUAL_FATAL(clovis_idx_op(&gone, CLOVIS_IC_PUT,
						    &r.r_keys, &r.r_vals,
						    &r.r_rc, 0, &op), 0);
		/* Not asserted FAILED at launch: the DELETE just before ran
		 * on a worker, whose commit stage may still hold its locks
		 * for a moment after the wake-up (then this PUT is queued). */
		CU_ASSERT_EQUAL(clovis_op_launch(&op, 1), 0);
		CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE,
					       CLOVIS_TIME_NEVER), -ENOENT);
		CU_ASSERT_EQUAL(clovis_op_rc(op), -ENOENT);
		CU_ASSERT(strstr(clovis_op_errmsg(op), "4e56:65") != NULL);
		clovis_op_free(op);
	}
	clovis_fini(cl);
	CU_ASSERT_EQUAL_FATAL(nv_open(nv_dir, 0, &cl), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(cl, &ix, CLOVIS_EO_OPEN), 0);
	CU_ASSERT_EQUAL(nv_get(&ix, "lone", 0), -ENOENT);
	for (uint32_t i = 1; i < NV_LONE_NR; i++)
		CU_ASSERT_EQUAL(nv_get(&ix, "lone", i), 0);
	CU_ASSERT_EQUAL(idx_rw(&ix, CLOVIS_IC_GET), 0); /* test_create's */
	clovis_fini(cl);
}

/* What the callbacks of test_lone_put_callbacks saw. */
struct nv_cb {
	uint32_t c_executed, c_stable, c_failed;
	uint32_t c_state_at_stable;
	pthread_t c_thread;
	/* launched by oc_stable when c_ix is set: a lone PUT "nest<c_n>"
	 * (runs in the callback's thread, inside a commit stage) */
	struct clovis_idx *c_ix;
	uint32_t c_n;
	struct nv_rec c_rec;
	struct clovis_op *c_op;
	int c_rc;
};

static void nv_cb_executed(struct clovis_op *op)
{
	struct nv_cb *c = clovis_op_datum(op);

	__atomic_add_fetch(&c->c_executed, 1, __ATOMIC_RELAXED);
}

static void nv_cb_stable(struct clovis_op *op)
{
	struct nv_cb *c = clovis_op_datum(op);

	c->c_state_at_stable = clovis_op_state(op);
	c->c_thread = pthread_self();
	if (c->c_ix != NULL) {
		nv_rec_make(&c->c_rec, "nest", c->c_n, false);
		c->c_rc = clovis_idx_op(c->c_ix, CLOVIS_IC_PUT,
					&c->c_rec.r_keys, &c->c_rec.r_vals,
					&c->c_rec.r_rc, 0, &c->c_op);
		if (c->c_rc == 0)
			c->c_rc = clovis_op_launch(&c->c_op, 1);
	}
	__atomic_add_fetch(&c->c_stable, 1, __ATOMIC_RELEASE);
}

static void nv_cb_failed(struct clovis_op *op)
{
	struct nv_cb *c = clovis_op_datum(op);

	__atomic_add_fetch(&c->c_failed, 1, __ATOMIC_RELAXED);
}

/* A lone PUT with callbacks goes to a worker (callbacks run on library
 * threads): EXECUTED then STABLE once each, never FAILED; STABLE when its
 * wait returns; found after close and reopen.  Its oc_stable launches a
 * lone PUT without callbacks (run in that library thread, which is inside
 * a commit stage: queued, no deadlock), waited for here. */
static void test_lone_put_callbacks(void)
{
	static const struct clovis_op_cbs cbs = {nv_cb_executed, nv_cb_stable,
						 nv_cb_failed};
	struct clovis_idx ix;
	struct clovis_op *op = NULL;
	struct clovis *cl;
	struct nv_cb c;
	struct nv_rec r;

	CU_ASSERT_EQUAL_FATAL(nv_open(nv_dir, 0, &cl), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(cl, &ix, CLOVIS_EO_OPEN), 0);
	for (uint32_t i = 0; i < 4; i++) {
		memset(&c, 0, sizeof c);
		c.c_ix = &ix;
		c.c_n = i;
		nv_rec_make(&r, "cb", i, false);
		op = NULL;
		CU_ASSERT_EQUAL_FATAL(clovis_idx_op(&ix, CLOVIS_IC_PUT,
						    &r.r_keys, &r.r_vals,
						    &r.r_rc, 0, &op), 0);
		CU_ASSERT_EQUAL(clovis_op_setup(op, &cbs, &c), 0);
		CU_ASSERT_EQUAL(clovis_op_launch(&op, 1), 0);
		CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE,
					       CLOVIS_TIME_NEVER), 0);
		CU_ASSERT_EQUAL(clovis_op_state(op), CLOVIS_OS_STABLE);
		clovis_op_free(op); /* waits for the callbacks to end */
		CU_ASSERT_EQUAL(r.r_rc, 0);
		CU_ASSERT_EQUAL(c.c_executed, 1);
		CU_ASSERT_EQUAL(__atomic_load_n(&c.c_stable, __ATOMIC_ACQUIRE),
				1);
		CU_ASSERT_EQUAL(c.c_failed, 0);
		CU_ASSERT_EQUAL(c.c_state_at_stable, CLOVIS_OS_STABLE);
		CU_ASSERT(!pthread_equal(c.c_thread, pthread_self()));
		CU_ASSERT_EQUAL(nv_get(&ix, "cb", i), 0);
		CU_ASSERT_EQUAL(c.c_rc, 0);
		if (c.c_rc == 0 && c.c_op != NULL) {
			CU_ASSERT_EQUAL(clovis_op_wait(c.c_op, CLOVIS_OS_STABLE,
						       5000000000ll), 0);
			clovis_op_free(c.c_op);
			CU_ASSERT_EQUAL(c.c_rec.r_rc, 0);
			CU_ASSERT_EQUAL(nv_get(&ix, "nest", i), 0);
		}
	}
	clovis_fini(cl);
	CU_ASSERT_EQUAL_FATAL(nv_open(nv_dir, 0, &cl), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(cl, &ix, CLOVIS_EO_OPEN), 0);
	for (uint32_t i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(nv_get(&ix, "cb", i), 0);
		CU_ASSERT_EQUAL(nv_get(&ix, "nest", i), 0);
	}
	clovis_fini(cl);
}

#define NV_THR_NR 6u
#define NV_THR_PUTS 200u

struct nv_thr {
	struct clovis_idx *t_ix;
	uint32_t t_nr;
	uint32_t t_ok;
	char t_tag[8];
};

static void *nv_thr_main(void *arg)
{
	struct nv_thr *t = arg;
	bool now;

	for (uint32_t i = 0; i < NV_THR_PUTS; i++)
		t->t_ok += nv_lone(t->t_ix, CLOVIS_IC_PUT, t->t_tag, i,
				   &now) == 0;
	return NULL;
}

/* Single-record PUTs from several threads at once (some committed in
 * their thread, the others queued to the group commit behind them): every
 * one STABLE when its wait returns, all found after close and reopen. */
static void test_lone_put_threads(void)
{
	struct nv_thr t[NV_THR_NR];
	pthread_t tid[NV_THR_NR];
	struct clovis_idx ix;
	struct clovis *cl;

	CU_ASSERT_EQUAL_FATAL(nv_open(nv_dir, 0, &cl), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(cl, &ix, CLOVIS_EO_OPEN), 0);
	for (uint32_t i = 0; i < NV_THR_NR; i++) {
		t[i] = (struct nv_thr){.t_ix = &ix};
		snprintf(t[i].t_tag, sizeof t[i].t_tag, "t%u.", i);
		CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[i], NULL,
						     nv_thr_main, &t[i]), 0);
	}
	for (uint32_t i = 0; i < NV_THR_NR; i++) {
		pthread_join(tid[i], NULL);
		CU_ASSERT_EQUAL(t[i].t_ok, NV_THR_PUTS);
	}
	clovis_fini(cl);
	CU_ASSERT_EQUAL_FATAL(nv_open(nv_dir, 0, &cl), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(cl, &ix, CLOVIS_EO_OPEN), 0);
	for (uint32_t i = 0; i < NV_THR_NR; i++)
		for (uint32_t n = 0; n < NV_THR_PUTS; n++)
			CU_ASSERT_EQUAL(nv_get(&ix, t[i].t_tag, n), 0);
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
	    !CU_add_test(s, "lone_put", test_lone_put) ||
	    !CU_add_test(s, "lone_put_callbacks", test_lone_put_callbacks) ||
	    !CU_add_test(s, "lone_put_threads", test_lone_put_threads) ||
	    !CU_add_test(s, "dangling", test_dangling) ||
	    !CU_add_test(s, "destroy", test_destroy) ||
	    !CU_add_test(s, "plain_and_bad_dir", test_plain_and_bad_dir) ||
	    !CU_add_test(s, "create_fails_clean", test_create_fails_clean))
		return -1;
	return 0;
}
