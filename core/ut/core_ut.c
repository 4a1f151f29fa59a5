/*
 * core_ut.c — unit tests of core/: the allocator, metadata key encoding,
 * the read-transaction cache and kept snapshots, id strings, error strings,
 * fault points, the cluster file's addresses, idx_rec_set().
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clu_conf.h"
#include "core/conf.h"
#include "core/engine.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/idx.h"
#include "core/meta.h"
#include "core/meta_txn.h"
#include "tests/ut.h"
#include "tiers/tier.h"

int conf_ut_add(void);
int meta_txn_ut_add(void);
int pg_ut_add(void);
int repl_ut_add(void);

static void test_alloc_take_release(void)
{
	struct alloc a;
	uint64_t s, g;

	CU_ASSERT_EQUAL_FATAL(alloc_init(&a, 1000), 0);
	CU_ASSERT_EQUAL(alloc_take(&a, 100, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(s, 0);
	CU_ASSERT_EQUAL(g, 100);
	CU_ASSERT_EQUAL(alloc_free_units(&a), 900);
	CU_ASSERT_EQUAL(alloc_take(&a, 50, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(s, 100);
	alloc_release(&a, 0, 100);
	CU_ASSERT_EQUAL(alloc_free_units(&a), 950);
	alloc_release(&a, 100, 50);
	CU_ASSERT_EQUAL(alloc_free_units(&a), 1000);
	alloc_fini(&a);
}

/* Fragmented space: runs come back shorter; granules are respected. */
static void test_alloc_fragmented(void)
{
	struct alloc a;
	uint64_t s, g, total = 0;

	CU_ASSERT_EQUAL_FATAL(alloc_init(&a, 256), 0);
	for (uint64_t i = 0; i < 256; i += 16)
		CU_ASSERT_EQUAL(alloc_mark(&a, i, 8), 0);
	CU_ASSERT_EQUAL(alloc_free_units(&a), 128);
	CU_ASSERT_EQUAL(alloc_take(&a, 64, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(g, 8);
	CU_ASSERT_EQUAL(s % 16, 8);
	/* A granule of 16 units fits nowhere. */
	CU_ASSERT_EQUAL(alloc_take(&a, 16, 16, &s, &g), -ENOSPC);
	/* Granule 4: runs are multiples of 4. */
	while (alloc_take(&a, 12, 4, &s, &g) == 0) {
		CU_ASSERT_EQUAL(g % 4, 0);
		total += g;
	}
	CU_ASSERT_EQUAL(total, 120);
	CU_ASSERT_EQUAL(alloc_free_units(&a), 0);
	alloc_fini(&a);
}

static void test_alloc_mark_overlap(void)
{
	struct alloc a;

	CU_ASSERT_EQUAL_FATAL(alloc_init(&a, 128), 0);
	CU_ASSERT_EQUAL(alloc_mark(&a, 10, 10), 0);
	CU_ASSERT_EQUAL(alloc_mark(&a, 15, 10), -EEXIST);
	CU_ASSERT_EQUAL(alloc_mark(&a, 120, 10), -EEXIST); /* past the end */
	CU_ASSERT_EQUAL(alloc_free_units(&a), 118);
	alloc_fini(&a);
}

/* Runs crossing 64-bit words of the bitmap. */
static void test_alloc_words(void)
{
	struct alloc a;
	uint64_t s, g;

	CU_ASSERT_EQUAL_FATAL(alloc_init(&a, 300), 0);
	CU_ASSERT_EQUAL(alloc_mark(&a, 0, 60), 0);
	CU_ASSERT_EQUAL(alloc_take(&a, 200, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(s, 60);
	CU_ASSERT_EQUAL(g, 200);
	CU_ASSERT_EQUAL(alloc_take(&a, 100, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(s, 260);
	CU_ASSERT_EQUAL(g, 40);
	CU_ASSERT_EQUAL(alloc_take(&a, 1, 1, &s, &g), -ENOSPC);
	alloc_release(&a, 100, 100);
	CU_ASSERT_EQUAL(alloc_take(&a, 128, 1, &s, &g), 0);
	CU_ASSERT_EQUAL(s, 100);
	CU_ASSERT_EQUAL(g, 100);
	alloc_fini(&a);
}

/* Keys sort numerically by id then block. */
static void test_meta_key_order(void)
{
	uint8_t a[24], b[24];
	struct st_id x = {1, 0xff}, y = {1, 0x100}, z;
	MDB_val ka, kb;

	ka = meta_ext_key(a, &x, 5);
	kb = meta_ext_key(b, &x, 256);
	CU_ASSERT(memcmp(ka.mv_data, kb.mv_data, 24) < 0);
	CU_ASSERT_EQUAL(meta_ext_key_blk(&kb), 256);
	kb = meta_ext_key(b, &y, 0);
	CU_ASSERT(memcmp(ka.mv_data, kb.mv_data, 24) < 0);
	meta_id_dec(b, &z);
	CU_ASSERT_EQUAL(z.si_hi, 1);
	CU_ASSERT_EQUAL(z.si_lo, 0x100);
}

static void test_errors(void)
{
	CU_ASSERT_STRING_EQUAL(err_str(-ST_ECORRUPT),
			       "on-disk structure is corrupt");
	CU_ASSERT_STRING_EQUAL(err_str(-ENOENT), strerror(ENOENT));
	CU_ASSERT_EQUAL(err_set(-EINVAL, "field %s", "x"), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err_msg(), "field x");
	err_clear();
	CU_ASSERT_STRING_EQUAL(err_msg(), "");
}

/* The message stack: each level starts empty and popping gives back the
 * level below as it was; past ERR_LEVELS err_push() refuses and changes
 * nothing; err_restore() copies a saved message back. */
static void test_err_levels(void)
{
	char name[16];
	uint32_t pushed = 0;

	err_set(-EIO, "level 0");
	for (uint32_t i = 1; i < ERR_LEVELS; i++) {
		CU_ASSERT_TRUE_FATAL(err_push());
		pushed++;
		CU_ASSERT_STRING_EQUAL(err_msg(), "");
		err_set(-EIO, "level %u", i);
	}
	CU_ASSERT_FALSE(err_push());
	snprintf(name, sizeof name, "level %u", ERR_LEVELS - 1);
	CU_ASSERT_STRING_EQUAL(err_msg(), name);
	err_restore("saved one", 5);
	CU_ASSERT_STRING_EQUAL(err_msg(), "saved");
	for (uint32_t i = pushed; i > 0; i--) {
		err_pop();
		snprintf(name, sizeof name, "level %u", i - 1);
		CU_ASSERT_STRING_EQUAL(err_msg(), name);
	}
	err_clear();
}

/* eng_id_str() formats by hand: it must say what "%x:%x" says. */
static void test_id_str(void)
{
	static const uint64_t v[] = {0, 1, 0xf, 0x10, 0xabcdef, 1ull << 63,
				     UINT64_MAX, 0x0123456789abcdefull};
	char want[64];

	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		for (size_t j = 0; j < sizeof v / sizeof v[0]; j++) {
			struct st_id id = {v[i], v[j]};

			snprintf(want, sizeof want, "%" PRIx64 ":%" PRIx64,
				 v[i], v[j]);
			CU_ASSERT_STRING_EQUAL(eng_id_str(&id), want);
		}
}

/* One record "k" = val in the sys table, committed. */
static int rtxn_put(struct meta *m, const char *val)
{
	MDB_txn *t;
	int rc = mdb_txn_begin(m->m_env, NULL, 0, &t);

	if (rc != 0)
		return rc;
	rc = meta_sys_put(t, m, "k", val, strlen(val) + 1);
	if (rc != 0) {
		mdb_txn_abort(t);
		return rc;
	}
	return mdb_txn_commit(t);
}

/* Cached read transactions: a renewed one sees the latest commit; more
 * than the cache holds are aborted on put; close releases the cached. */
static void test_rtxn_cache(void)
{
	const char *dir = ut_tmpdir("rtxn");
	MDB_txn *t[META_RTXN_CACHE + 4], *again;
	struct meta m;
	char buf[2];

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(meta_open(&m, dir, 16ull << 20, META_CREATE), 0);
	CU_ASSERT_EQUAL(rtxn_put(&m, "a"), 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &t[0]), 0);
	CU_ASSERT_EQUAL(meta_sys_get(t[0], &m, "k", buf, 2), 0);
	CU_ASSERT_STRING_EQUAL(buf, "a");
	meta_rtxn_put(&m, t[0]);
	CU_ASSERT_EQUAL(rtxn_put(&m, "b"), 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &again), 0);
	CU_ASSERT_PTR_EQUAL(again, t[0]);
	CU_ASSERT_EQUAL(meta_sys_get(again, &m, "k", buf, 2), 0);
	CU_ASSERT_STRING_EQUAL(buf, "b");
	meta_rtxn_put(&m, again);
	for (uint32_t i = 0; i < META_RTXN_CACHE + 4; i++)
		CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &t[i]), 0);
	CU_ASSERT_EQUAL(m.m_rnr, 0);
	for (uint32_t i = 0; i < META_RTXN_CACHE + 4; i++)
		meta_rtxn_put(&m, t[i]);
	CU_ASSERT_EQUAL(m.m_rnr, META_RTXN_CACHE);
	meta_close(&m);
	CU_ASSERT_PTR_NULL(m.m_env);
}

/* The record count of index id and the value of its record key ("" and
 * -ENOENT when absent). */
static int rec_look(struct eng *e, const struct st_id *id, const char *key,
		    char *val, size_t vsz, uint64_t *count)
{
	struct meta *m = eng_meta(e);
	uint8_t kb[16 + ST_KEY_MAX];
	struct meta_ent me;
	struct meta_rec r;
	MDB_txn *txn;
	int rc = meta_rtxn_begin(m, &txn, "ut");

	if (rc != 0)
		return rc;
	rc = meta_ent_get(txn, m, id, &me);
	*count = rc == 0 ? me.me_nr_records : UINT64_MAX;
	meta_idx_key(kb, id, key, strlen(key));
	val[0] = '\0';
	rc = meta_get(txn, m, META_T_IDX, kb, 16 + strlen(key), &r, NULL);
	if (rc == 0)
		snprintf(val, vsz, "%.*s", (int)r.mc_vlen,
			 (const char *)r.mc_val);
	meta_rtxn_put(m, txn);
	return rc;
}

/* One idx_rec_set() in its own write transaction. */
static int rec_set(struct eng *e, const struct st_id *id, uint64_t ctime,
		   const char *key, const char *val, bool del)
{
	struct meta *m = eng_meta(e);
	MDB_txn *txn;
	int rc = meta_wtxn_begin(m, &txn, "ut");

	if (rc != 0)
		return rc;
	rc = idx_rec_set(e, txn, id, ctime, key, strlen(key), val,
			 val != NULL ? strlen(val) : 0, del);
	if (rc != 0) {
		meta_txn_abort(txn);
		return rc;
	}
	return meta_wtxn_commit(m, txn, "ut");
}

/* idx_rec_set() (core/idx.h, an index replica's version commit setting a
 * record again): a new record counts one more, the same value changes
 * nothing, another value overwrites, a delete counts one less, a delete of
 * an absent record and anything on an index of another incarnation or
 * none change nothing. */
static void test_idx_rec_set(void)
{
	const char *dir = ut_tmpdir("recset");
	struct eng_conf ec = {.ec_dir = dir, .ec_create = true,
			      .ec_dev_size = 64ull << 20};
	struct st_id id = {0x5e7, 1}, other = {0x5e7, 2};
	struct meta_ent me = {.me_type = ST_ET_IDX, .me_ctime_ns = 77};
	struct eng *e;
	MDB_txn *txn;
	uint64_t n;
	char v[32];

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(eng_open(&e, &ec), 0);
	CU_ASSERT_EQUAL_FATAL(meta_wtxn_begin(eng_meta(e), &txn, "ut"), 0);
	CU_ASSERT_EQUAL(meta_ent_put(txn, eng_meta(e), &id, &me), 0);
	CU_ASSERT_EQUAL_FATAL(meta_wtxn_commit(eng_meta(e), txn, "ut"), 0);

	CU_ASSERT_EQUAL(rec_set(e, &id, 77, "k", "one", false), 0);
	CU_ASSERT_EQUAL(rec_look(e, &id, "k", v, sizeof v, &n), 0);
	CU_ASSERT_STRING_EQUAL(v, "one");
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(rec_set(e, &id, 77, "k", "one", false), 0);
	CU_ASSERT_EQUAL(rec_look(e, &id, "k", v, sizeof v, &n), 0);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(rec_set(e, &id, 77, "k", "two", false), 0);
	CU_ASSERT_EQUAL(rec_look(e, &id, "k", v, sizeof v, &n), 0);
	CU_ASSERT_STRING_EQUAL(v, "two");
	CU_ASSERT_EQUAL(n, 1);
	/* another incarnation (ctime 78), an index that is not there */
	CU_ASSERT_EQUAL(rec_set(e, &id, 78, "k", "three", false), 0);
	CU_ASSERT_EQUAL(rec_set(e, &id, 78, "k", NULL, true), 0);
	CU_ASSERT_EQUAL(rec_set(e, &other, 77, "k", "x", false), 0);
	CU_ASSERT_EQUAL(rec_look(e, &id, "k", v, sizeof v, &n), 0);
	CU_ASSERT_STRING_EQUAL(v, "two");
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(rec_look(e, &other, "k", v, sizeof v, &n), -ENOENT);
	CU_ASSERT_EQUAL(n, UINT64_MAX);
	CU_ASSERT_EQUAL(rec_set(e, &id, 77, "k", NULL, true), 0);
	CU_ASSERT_EQUAL(rec_look(e, &id, "k", v, sizeof v, &n), -ENOENT);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL(rec_set(e, &id, 77, "k", NULL, true), 0);
	CU_ASSERT_EQUAL(rec_look(e, &id, "k", v, sizeof v, &n), -ENOENT);
	CU_ASSERT_EQUAL(n, 0);
	eng_close(e);
	/* its NVRAM device is in /dev/shm, not in dir: removed with it */
	CU_ASSERT_EQUAL(eng_destroy(dir), 0);
}

/* sys/name = len bytes of val, committed by meta_txn_commit() (via_meta)
 * or by a plain mdb_txn_commit(). */
static int kept_put(struct meta *m, const char *name, const void *val,
		    size_t len, bool via_meta)
{
	MDB_txn *t;
	int rc = mdb_txn_begin(m->m_env, NULL, 0, &t);

	if (rc != 0)
		return rc;
	rc = meta_sys_put(t, m, name, val, len);
	if (rc != 0) {
		mdb_txn_abort(t);
		return rc;
	}
	return via_meta ? meta_txn_commit(m, t) : mdb_txn_commit(t);
}

/* The one-byte value of sys/k through a kept cursor of txn; -1 on error. */
static int kept_cursor_read(struct meta *m, MDB_txn *txn, MDB_cursor **out)
{
	MDB_val k = {1, "k"}, v;
	MDB_cursor *c;

	if (meta_rcursor_get(m, txn, m->m_sys, &c) != 0)
		return -1;
	*out = c;
	if (mdb_cursor_get(c, &k, &v, MDB_SET_RANGE) != 0 || v.mv_size != 2) {
		meta_rcursor_put(m, c);
		return -1;
	}
	meta_rcursor_put(m, c);
	return ((const char *)v.mv_data)[0];
}

/* A thread's own transaction is kept live between reads while nothing
 * commits (same transaction, same snapshot id; the same cursor, renewed
 * in it), and any
 * commit, through meta_txn_commit() or not, is seen by the next read;
 * a commit while the owner holds its transaction leaves it alone. */
static void test_rtxn_kept(void)
{
	const char *dir = ut_tmpdir("rtxn-kept");
	MDB_cursor *c0, *c1;
	MDB_txn *t0, *t1;
	struct meta m;
	size_t id0;
	char buf[2];

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(meta_open(&m, dir, 16ull << 20, META_CREATE), 0);
	CU_ASSERT_EQUAL(kept_put(&m, "k", "a", 2, true), 0);
	/* the first read registers the thread: its transaction is reset */
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &t0), 0);
	meta_rtxn_put(&m, t0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &t0), 0);
	id0 = mdb_txn_id(t0);
	CU_ASSERT_EQUAL(kept_cursor_read(&m, t0, &c0), 'a');
	meta_rtxn_put(&m, t0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &t1), 0);
	CU_ASSERT_PTR_EQUAL(t1, t0);
	CU_ASSERT_EQUAL(mdb_txn_id(t1), id0);
	CU_ASSERT_EQUAL(kept_cursor_read(&m, t1, &c1), 'a');
	CU_ASSERT_PTR_EQUAL(c1, c0);
	meta_rtxn_put(&m, t1);
	/* a plain commit: the kept snapshot is stale, the next read renews */
	CU_ASSERT_EQUAL(kept_put(&m, "k", "b", 2, false), 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &t1), 0);
	CU_ASSERT_PTR_EQUAL(t1, t0);
	CU_ASSERT(mdb_txn_id(t1) > id0);
	CU_ASSERT_EQUAL(meta_sys_get(t1, &m, "k", buf, 2), 0);
	CU_ASSERT_EQUAL(buf[0], 'b');
	CU_ASSERT_EQUAL(kept_cursor_read(&m, t1, &c1), 'b');
	meta_rtxn_put(&m, t1);
	/* through meta_txn_commit: reset while idle, renewed at the read */
	CU_ASSERT_EQUAL(kept_put(&m, "k", "c", 2, true), 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &t1), 0);
	CU_ASSERT_EQUAL(meta_sys_get(t1, &m, "k", buf, 2), 0);
	CU_ASSERT_EQUAL(buf[0], 'c');
	CU_ASSERT_EQUAL(kept_cursor_read(&m, t1, &c1), 'c');
	/* a commit while the owner reads: its snapshot stays, untouched */
	CU_ASSERT_EQUAL(kept_put(&m, "k", "d", 2, true), 0);
	CU_ASSERT_EQUAL(meta_sys_get(t1, &m, "k", buf, 2), 0);
	CU_ASSERT_EQUAL(buf[0], 'c');
	CU_ASSERT_EQUAL(kept_cursor_read(&m, t1, &c1), 'c');
	meta_rtxn_put(&m, t1);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_get(&m, &t1), 0);
	CU_ASSERT_EQUAL(meta_sys_get(t1, &m, "k", buf, 2), 0);
	CU_ASSERT_EQUAL(buf[0], 'd');
	CU_ASSERT_EQUAL(kept_cursor_read(&m, t1, &c1), 'd');
	meta_rtxn_put(&m, t1);
	meta_close(&m);
	CU_ASSERT_PTR_NULL(m.m_env);
}

#define PIN_VAL 16384u  /* overflow pages: every overwrite frees four */
#define PIN_COMMITS 200u
#define PIN_BOUND 64u   /* pages the file may grow by without a pin */

/* A reader thread: reads twice (its snapshot kept live), then idles until
 * told to go on, reads once more and exits. */
struct pin_reader {
	struct meta *pr_m;
	pthread_mutex_t pr_lock;
	pthread_cond_t pr_cond;
	int pr_step;      /* 1: idling, 2: go on */
	uint8_t pr_seen;  /* first byte of sys/big at the last read */
	int pr_rc;
};

static int pin_read(struct pin_reader *r)
{
	uint8_t v[PIN_VAL];
	MDB_txn *t;
	int rc = meta_rtxn_get(r->pr_m, &t);

	if (rc != 0)
		return rc;
	rc = meta_sys_get(t, r->pr_m, "big", v, sizeof v);
	meta_rtxn_put(r->pr_m, t);
	r->pr_seen = v[0];
	return rc;
}

static void *pin_main(void *arg)
{
	struct pin_reader *r = arg;
	int rc = pin_read(r);

	if (rc == 0)
		rc = pin_read(r);
	pthread_mutex_lock(&r->pr_lock);
	r->pr_step = 1;
	pthread_cond_broadcast(&r->pr_cond);
	for (int i = 0; i < 100 && r->pr_step != 2; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&r->pr_cond, &r->pr_lock, &ts);
	}
	pthread_mutex_unlock(&r->pr_lock);
	if (rc == 0)
		rc = pin_read(r);
	r->pr_rc = rc;
	return NULL;
}

/* PIN_COMMITS overwrites of sys/big through meta_txn_commit(), the i-th
 * filled with byte first + i; the growth of the file in pages. */
static uint64_t pin_overwrite(struct meta *m, uint32_t first)
{
	static uint8_t v[PIN_VAL];
	MDB_envinfo a, b;

	mdb_env_info(m->m_env, &a);
	for (uint32_t i = 0; i < PIN_COMMITS; i++) {
		memset(v, (int)(first + i), sizeof v);
		CU_ASSERT_EQUAL_FATAL(kept_put(m, "big", v, sizeof v, true), 0);
	}
	mdb_env_info(m->m_env, &b);
	return b.me_last_pgno - a.me_last_pgno;
}

/* A thread that read (its snapshot kept live) and then idles does not
 * keep LMDB from reusing freed pages: meta_txn_commit() resets it.  The
 * control, a read transaction held open by hand, shows the measure sees a
 * pin; the idle thread's next read sees the last commit. */
static void test_rtxn_idle_pin(void)
{
	const char *dir = ut_tmpdir("rtxn-pin");
	struct pin_reader r = {.pr_lock = PTHREAD_MUTEX_INITIALIZER,
			       .pr_cond = PTHREAD_COND_INITIALIZER};
	static uint8_t v[PIN_VAL];
	uint64_t grown, pinned;
	struct meta m;
	pthread_t tid;
	MDB_txn *held;
	uint32_t before;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(meta_open(&m, dir, 64ull << 20, META_CREATE), 0);
	memset(v, 0xee, sizeof v);
	CU_ASSERT_EQUAL_FATAL(kept_put(&m, "big", v, sizeof v, true), 0);
	before = meta_rtxn_threads(&m);
	r.pr_m = &m;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, pin_main, &r), 0);
	pthread_mutex_lock(&r.pr_lock);
	for (int i = 0; i < 100 && r.pr_step != 1; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&r.pr_cond, &r.pr_lock, &ts);
	}
	pthread_mutex_unlock(&r.pr_lock);
	CU_ASSERT_EQUAL(r.pr_step, 1);
	CU_ASSERT_EQUAL(r.pr_seen, 0xee);
	CU_ASSERT_EQUAL(meta_rtxn_threads(&m), before + 1);
	grown = pin_overwrite(&m, 0);
	CU_ASSERT(grown < PIN_BOUND);
	CU_ASSERT_EQUAL_FATAL(mdb_txn_begin(m.m_env, NULL, MDB_RDONLY, &held),
			      0);
	pinned = pin_overwrite(&m, 0);
	mdb_txn_abort(held);
	CU_ASSERT(pinned > 4 * PIN_BOUND);
	pthread_mutex_lock(&r.pr_lock);
	r.pr_step = 2;
	pthread_cond_broadcast(&r.pr_cond);
	pthread_mutex_unlock(&r.pr_lock);
	pthread_join(tid, NULL);
	CU_ASSERT_EQUAL(r.pr_rc, 0);
	CU_ASSERT_EQUAL(r.pr_seen, (uint8_t)(PIN_COMMITS - 1));
	CU_ASSERT_EQUAL(meta_rtxn_threads(&m), before);
	meta_close(&m);
}

static void test_fault_points(void)
{
#ifdef STRATA_FAULT_INJECT
	fault_reset();
	CU_ASSERT_FALSE(FAULT_HIT("ut.point"));
	fault_arm("ut.point", 2, 2);
	CU_ASSERT_FALSE(FAULT_HIT("ut.point"));
	CU_ASSERT_FALSE(FAULT_HIT("ut.point"));
	CU_ASSERT_TRUE(FAULT_HIT("ut.point"));
	CU_ASSERT_TRUE(FAULT_HIT("ut.point"));
	CU_ASSERT_FALSE(FAULT_HIT("ut.point"));
	CU_ASSERT_EQUAL(fault_fired("ut.point"), 2);
	fault_reset();
#else
	CU_ASSERT_FALSE(FAULT_HIT("ut.point"));
#endif
}

/* A one-server cluster file with the given address line value. */
static int clu_addr_conf(struct clu_conf *c, const char *addr)
{
	char y[512];

	snprintf(y, sizeof y, "cluster:\n  name: c\n  secret: "
		 "0123456789abcdef0123\nservers:\n  - name: s0\n    "
		 "address: %s\n    port: 21000\n    data_dir: /tmp/x\n"
		 "    devices:\n      - { tier: flash }\n", addr);
	return clu_conf_parse(c, y, strlen(y), NULL, 0);
}

/* Server addresses: any IPv4 address, IPv6 address or host name (the
 * product is not limited to the tests' ranges); malformed ones are
 * refused naming the key. */
static void test_clu_addr(void)
{
	static const char *good[] = {"127.0.0.1", "10.1.2.3", "8.8.8.8",
				     "localhost", "node-7.cluster.example",
				     "S0", "::1", "fe80::1", "2001:db8::7",
				     "::ffff:127.0.0.1", "::", "1host.example",
				     "a.b-c.d1"};
	static const char *bad[] = {"", "a..b", ".a", "a.", "-a", "a-",
				    "a-.b", "a.-b", "a b", "a;b", "host:1",
				    "::1::2", "[::1]", "fe80::1%eth0", ":::",
				    "256.1.1.1", "10.1", "1.2.3.4.5", "1.example.2",
				    "::1:2:3:4:5:6:7:8:9"};
	char label[80];
	struct clu_conf c;
	int rc;

	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		if (!clu_addr_valid(good[i])) {
			fprintf(stderr, "clu_addr: \"%s\" refused\n", good[i]);
			CU_FAIL("a valid address refused");
		}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		if (clu_addr_valid(bad[i])) {
			fprintf(stderr, "clu_addr: \"%s\" taken\n", bad[i]);
			CU_FAIL("a malformed address taken");
		}
	/* labels of at most 63 characters */
	memset(label, 'a', 63);
	snprintf(label + 63, sizeof label - 63, ".example");
	CU_ASSERT(clu_addr_valid(label));
	memset(label, 'a', 64);
	snprintf(label + 64, sizeof label - 64, ".example");
	CU_ASSERT(!clu_addr_valid(label));
	rc = clu_addr_conf(&c, "storage-1.example.org");
	if (rc != 0)
		fprintf(stderr, "clu_addr: %s\n", err_msg());
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_STRING_EQUAL(c.cc_servers[0].cs_addr,
			       "storage-1.example.org");
	CU_ASSERT_STRING_EQUAL(c.cc_servers[0].cs_ip, "");
	clu_conf_fini(&c);
	/* IPv6, quoted as docs/cluster.md writes it, and plain */
	CU_ASSERT_EQUAL_FATAL(clu_addr_conf(&c, "\"::1\""), 0);
	CU_ASSERT_STRING_EQUAL(c.cc_servers[0].cs_addr, "::1");
	clu_conf_fini(&c);
	CU_ASSERT_EQUAL_FATAL(clu_addr_conf(&c, "2001:db8::7"), 0);
	CU_ASSERT_STRING_EQUAL(c.cc_servers[0].cs_addr, "2001:db8::7");
	clu_conf_fini(&c);
	CU_ASSERT_EQUAL(clu_addr_conf(&c, "bad..name"), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "servers[0].address"));
	CU_ASSERT_EQUAL(clu_addr_conf(&c, "\"::1::2\""), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "servers[0].address"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "IPv6"));
}

/* cc_server's ADDR:PORT: an IPv6 address only in brackets, a port in
 * 1..65535; the rest refused with a message quoting the text. */
static void test_clu_hostport(void)
{
	static const struct {
		const char *s, *addr;
		uint16_t port;
	} good[] = {{"127.0.0.1:21000", "127.0.0.1", 21000},
		    {"[::1]:21000", "::1", 21000},
		    {"[2001:db8::7]:1", "2001:db8::7", 1},
		    {"node-7.example:65535", "node-7.example", 65535},
		    {"localhost:9", "localhost", 9}};
	static const char *bad[] = {"", "127.0.0.1", "127.0.0.1:", ":21000",
				    "127.0.0.1:0", "127.0.0.1:65536",
				    "127.0.0.1:-1", "127.0.0.1:2x",
				    "::1:21000", "[::1]", "[::1]21000",
				    "[]:21000", "[localhost]:21000",
				    "[::1::2]:21000", "bad..name:21000",
				    "fe80::1:2"};
	char addr[CLU_HOST_MAX + 1];
	uint16_t port;

	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		port = 0;
		CU_ASSERT_EQUAL(clu_hostport_parse(good[i].s, addr, sizeof addr,
						   &port), 0);
		CU_ASSERT_STRING_EQUAL(addr, good[i].addr);
		CU_ASSERT_EQUAL(port, good[i].port);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		if (clu_hostport_parse(bad[i], addr, sizeof addr, &port) !=
		    -EINVAL) {
			fprintf(stderr, "clu_hostport: \"%s\" taken\n", bad[i]);
			CU_FAIL("a malformed ADDR:PORT taken");
			continue;
		}
		CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), bad[i]));
	}
	CU_ASSERT_EQUAL(clu_hostport_parse("::1:21000", addr, sizeof addr,
					   &port), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "brackets"));
}

/* Resolution at start: a numeric address is taken as it is, a name is
 * looked up (localhost: /etc/hosts, no query sent); the conf's cs_ip is
 * filled for every server.  (A name that does not resolve is refused in
 * tests/integ/addr_test.sh, which bounds the resolver's wait.) */
static void test_clu_resolve(void)
{
	struct clu_server s = {.cs_name = "s0", .cs_port = 21000};
	char ip[CLU_IP_MAX], y[1024];
	struct clu_conf c;

	snprintf(s.cs_addr, sizeof s.cs_addr, "::1");
	CU_ASSERT_EQUAL(clu_server_resolve(&s, ip, sizeof ip), 0);
	CU_ASSERT_STRING_EQUAL(ip, "::1");
	snprintf(s.cs_addr, sizeof s.cs_addr, "127.0.0.2");
	CU_ASSERT_EQUAL(clu_server_resolve(&s, ip, sizeof ip), 0);
	CU_ASSERT_STRING_EQUAL(ip, "127.0.0.2");
	snprintf(s.cs_addr, sizeof s.cs_addr, "localhost");
	if (!ut_host_has_localhost()) { /* e.g. a debootstrap root: no /etc/hosts */
		CU_ASSERT_EQUAL(clu_server_resolve(&s, ip, sizeof ip),
				-EHOSTUNREACH);
		CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "'localhost'"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "server s0"));
		return; /* the rest needs localhost (addr_test.sh has its own) */
	}
	CU_ASSERT_EQUAL(clu_server_resolve(&s, ip, sizeof ip), 0);
	CU_ASSERT(strcmp(ip, "::1") == 0 || strncmp(ip, "127.", 4) == 0);
	snprintf(y, sizeof y, "cluster:\n  name: c\n  secret: "
		 "0123456789abcdef0123\nservers:\n"
		 "  - name: s0\n    address: \"::1\"\n    port: 21000\n"
		 "    data_dir: /tmp/x0\n    devices:\n      - { tier: flash }\n"
		 "  - name: s1\n    address: localhost\n    port: 21001\n"
		 "    data_dir: /tmp/x1\n    devices:\n      - { tier: flash }\n");
	CU_ASSERT_EQUAL_FATAL(clu_conf_parse(&c, y, strlen(y), NULL, 0), 0);
	CU_ASSERT_EQUAL(clu_conf_resolve(&c), 0);
	CU_ASSERT_STRING_EQUAL(c.cc_servers[0].cs_ip, "::1");
	CU_ASSERT_NOT_EQUAL(c.cc_servers[1].cs_ip[0], '\0');
	CU_ASSERT_STRING_EQUAL(c.cc_servers[1].cs_addr, "localhost");
	CU_ASSERT_STRING_EQUAL(clu_server_where(&c.cc_servers[0], y, sizeof y),
			       "[::1]:21000");
	CU_ASSERT_STRING_EQUAL(clu_server_where(&c.cc_servers[1], y, sizeof y),
			       "localhost:21001");
	clu_conf_fini(&c);
	/* two spellings of one address and one port: refused, naming both */
	snprintf(y, sizeof y, "cluster:\n  name: c\n  secret: "
		 "0123456789abcdef0123\nservers:\n"
		 "  - name: s0\n    address: \"::1\"\n    port: 21000\n"
		 "    data_dir: /tmp/x0\n    devices:\n      - { tier: flash }\n"
		 "  - name: s1\n    address: \"0::1\"\n    port: 21000\n"
		 "    data_dir: /tmp/x1\n    devices:\n      - { tier: flash }\n");
	CU_ASSERT_EQUAL_FATAL(clu_conf_parse(&c, y, strlen(y), NULL, 0), 0);
	CU_ASSERT_EQUAL(clu_conf_resolve(&c), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "servers s0 and s1"));
	CU_ASSERT_STRING_EQUAL(c.cc_servers[0].cs_ip, "");
	clu_conf_fini(&c);
}

/* A two-server cluster file with top-level text extra (e.g. a shared
 * device_fill line). */
static int clu_fill_conf(struct clu_conf *c, const char *extra)
{
	char y[768];

	snprintf(y, sizeof y, "cluster:\n  name: c\n  secret: "
		 "0123456789abcdef0123\n%sservers:\n"
		 "  - name: s0\n    address: 127.0.0.1\n    port: 21000\n"
		 "    data_dir: /tmp/x0\n    devices:\n      - { tier: flash }\n"
		 "  - name: s1\n    address: 127.0.0.1\n    port: 21001\n"
		 "    data_dir: /tmp/x1\n    devices:\n      - { tier: flash }\n",
		 extra);
	return clu_conf_parse(c, y, strlen(y), NULL, 0);
}

/* The cluster file's device_fill reaches every server's store
 * configuration; absent, none has it (zero); a bad value is refused
 * naming the key. */
static void test_clu_fill(void)
{
	struct clu_conf c;
	struct conf sc;

	CU_ASSERT_EQUAL_FATAL(clu_fill_conf(&c, "device_fill: reserve\n"), 0);
	for (uint32_t i = 0; i < c.cc_nr_servers; i++) {
		const char *t = c.cc_servers[i].cs_store_yaml;

		CU_ASSERT_PTR_NOT_NULL(strstr(t, "device_fill: reserve"));
		CU_ASSERT_EQUAL_FATAL(conf_parse(&sc, t, strlen(t)), 0);
		CU_ASSERT_EQUAL(sc.c_dev_fill, TIER_FILL_RESERVE);
		conf_fini(&sc);
	}
	clu_conf_fini(&c);
	CU_ASSERT_EQUAL_FATAL(clu_fill_conf(&c, ""), 0);
	CU_ASSERT_PTR_NULL(strstr(c.cc_servers[0].cs_store_yaml,
				  "device_fill"));
	clu_conf_fini(&c);
	err_clear();
	CU_ASSERT_EQUAL(clu_fill_conf(&c, "device_fill: fast\n"), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "device_fill"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "\"fast\""));
}

int core_ut_add(void)
{
	CU_pSuite s = CU_add_suite("core", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "alloc_take_release", test_alloc_take_release) ||
	    !CU_add_test(s, "alloc_fragmented", test_alloc_fragmented) ||
	    !CU_add_test(s, "alloc_mark_overlap", test_alloc_mark_overlap) ||
	    !CU_add_test(s, "alloc_words", test_alloc_words) ||
	    !CU_add_test(s, "meta_key_order", test_meta_key_order) ||
	    !CU_add_test(s, "errors", test_errors) ||
	    !CU_add_test(s, "err_levels", test_err_levels) ||
	    !CU_add_test(s, "id_str", test_id_str) ||
	    !CU_add_test(s, "rtxn_cache", test_rtxn_cache) ||
	    !CU_add_test(s, "rtxn_kept", test_rtxn_kept) ||
	    !CU_add_test(s, "rtxn_idle_pin", test_rtxn_idle_pin) ||
	    !CU_add_test(s, "fault_points", test_fault_points) ||
	    !CU_add_test(s, "clu_addr", test_clu_addr) ||
	    !CU_add_test(s, "clu_hostport", test_clu_hostport) ||
	    !CU_add_test(s, "clu_resolve", test_clu_resolve) ||
	    !CU_add_test(s, "clu_fill", test_clu_fill) ||
	    !CU_add_test(s, "idx_rec_set", test_idx_rec_set))
		return -1;
	if (conf_ut_add() != 0 || pg_ut_add() != 0 || repl_ut_add() != 0)
		return -1;
	return meta_txn_ut_add();
}
