/*
 * repl_ut.c — unit tests of core/eng_repl.h: write sets captured from an
 * engine's write transactions (put, delete, overwrite, MDB_RESERVE, a
 * nested transaction aborted), their sequence numbers across a reopen,
 * shadows (applied sets give the same tables, a gap is -ESTALE, garbled
 * sets are refused with nothing changed), snapshot and install, an engine
 * opened on a shadow, a takeover engine's sets continuing the home's
 * sequence (and a second move), the senders' map view (stale senders
 * refused); and cluster.meta_replicas in the cluster file.
 * Suite "repl" (module core).
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/clu_conf.h"
#include "core/eng_repl.h"
#include "core/engine.h"
#include "core/engine_internal.h"
#include "core/errors.h"
#include "core/meta.h"
#include "core/meta_txn.h"
#include "tests/ut.h"

int repl_ut_add(void);

/* The write sets a hook was given, copied. */
#define SETS_MAX 32
struct sets {
	uint32_t s_nr;
	uint64_t s_seq[SETS_MAX];
	void *s_buf[SETS_MAX];
	size_t s_len[SETS_MAX];
	uint32_t s_waits;
	uint64_t s_last_wait;
};

static void sets_ship(void *arg, uint64_t seq, const void *buf, size_t len)
{
	struct sets *s = arg;

	if (s->s_nr >= SETS_MAX)
		return;
	s->s_seq[s->s_nr] = seq;
	s->s_buf[s->s_nr] = malloc(len);
	memcpy(s->s_buf[s->s_nr], buf, len);
	s->s_len[s->s_nr++] = len;
}

static int sets_wait(void *arg, uint64_t seq)
{
	struct sets *s = arg;

	s->s_waits++;
	s->s_last_wait = seq;
	return 0;
}

static const struct eng_repl_ops sets_ops = {sets_ship, sets_wait};

static void sets_free(struct sets *s)
{
	for (uint32_t i = 0; i < s->s_nr; i++)
		free(s->s_buf[i]);
	memset(s, 0, sizeof *s);
}

/* Every record of every table of m, in key order, as one text-free blob
 * (table, klen, key, vlen, value ...) for comparisons. */
struct dump {
	uint8_t *d_p;
	size_t d_len, d_cap;
	uint32_t d_table;
};

static void dump_add(struct dump *d, const void *p, size_t n)
{
	if (d->d_len + n > d->d_cap) {
		d->d_cap = (d->d_len + n) * 2 + 4096;
		d->d_p = realloc(d->d_p, d->d_cap);
	}
	memcpy(d->d_p + d->d_len, p, n);
	d->d_len += n;
}

static int dump_one(void *arg, const struct meta_rec *r)
{
	struct dump *d = arg;
	uint64_t kl = r->mc_klen, vl = r->mc_vlen;

	dump_add(d, &d->d_table, 4);
	dump_add(d, &kl, 8);
	dump_add(d, r->mc_key, kl);
	dump_add(d, &vl, 8);
	dump_add(d, r->mc_val, vl);
	return META_SCAN_NEXT;
}

static void dump_meta(struct meta *m, struct dump *d)
{
	MDB_txn *txn;

	memset(d, 0, sizeof *d);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_begin(m, &txn, "ut dump"), 0);
	for (uint32_t t = META_T_SYS; t <= META_T_LAYER; t++) {
		d->d_table = t;
		CU_ASSERT_EQUAL(meta_scan(txn, m, &(struct meta_scan){
			.ms_table = t, .ms_fn = dump_one, .ms_arg = d,
			.ms_what = "ut dump"}), 0);
	}
	meta_rtxn_put(m, txn);
}

/* The tables of LMDB directory dir (opened for the call). */
static void dump_dir(const char *dir, struct dump *d)
{
	struct meta m;

	CU_ASSERT_EQUAL_FATAL(meta_open(&m, dir, 64ull << 20, 0), 0);
	dump_meta(&m, d);
	meta_close(&m);
}

static bool dump_eq(const struct dump *a, const struct dump *b)
{
	return a->d_len == b->d_len && memcmp(a->d_p, b->d_p, a->d_len) == 0;
}

static char udir[512], sdir[512];

static int open_eng(struct eng **e, bool create)
{
	struct eng_conf ec = {.ec_dir = udir, .ec_create = create,
			      .ec_dev_size = 64ull << 20};
	int rc = eng_open(e, &ec);

	/* said: a failed open under load in make check's ASan part (CI
	 * 2026-11-30) printed nothing else */
	if (rc != 0)
		fprintf(stderr, "repl ut: open %s%s: %d %s\n", udir,
			create ? " (create)" : "", rc, err_msg());
	return rc;
}

/* Put, delete, overwrite, MDB_RESERVE, an aborted nested txn. */
static void write_mix(struct eng *e, uint32_t round)
{
	struct meta *m = eng_meta(e);
	MDB_txn *txn, *child;
	char key[32], val[32];
	MDB_val k, v;

	CU_ASSERT_EQUAL_FATAL(meta_wtxn_begin(m, &txn, "ut"), 0);
	for (uint32_t i = 0; i < 5; i++) {
		snprintf(key, sizeof key, "k%u.%u", round, i);
		snprintf(val, sizeof val, "v%u", i);
		CU_ASSERT_EQUAL(meta_put(txn, m, META_T_IDX, key, strlen(key),
					 val, strlen(val), "ut"), 0);
	}
	/* overwrite, then delete one of the previous round */
	CU_ASSERT_EQUAL(meta_put(txn, m, META_T_IDX, key, strlen(key), "new", 3,
				 "ut"), 0);
	if (round > 0) {
		snprintf(key, sizeof key, "k%u.0", round - 1);
		CU_ASSERT_EQUAL(meta_del(txn, m, META_T_IDX, key, strlen(key),
					 "ut"), 0);
	}
	/* MDB_RESERVE: the value is filled after the put */
	snprintf(key, sizeof key, "r%u", round);
	k = (MDB_val){strlen(key), key};
	v = (MDB_val){8, NULL};
	CU_ASSERT_EQUAL(meta_mput(m, txn, m->m_sys, &k, &v, MDB_RESERVE), 0);
	memcpy(v.mv_data, "reserved", 8);
	/* a nested transaction's put, aborted */
	CU_ASSERT_EQUAL_FATAL(meta_ntxn_begin(m, txn, &child, "ut"), 0);
	snprintf(key, sizeof key, "gone%u", round);
	CU_ASSERT_EQUAL(meta_put(child, m, META_T_ENT, key, strlen(key), "x", 1,
				 "ut"), 0);
	meta_txn_abort(child);
	/* and one committed */
	CU_ASSERT_EQUAL_FATAL(meta_ntxn_begin(m, txn, &child, "ut"), 0);
	snprintf(key, sizeof key, "kept%u", round);
	CU_ASSERT_EQUAL(meta_put(child, m, META_T_LAYER, key, strlen(key), "y",
				 1, "ut"), 0);
	CU_ASSERT_EQUAL(meta_ntxn_commit(child, "ut"), 0);
	CU_ASSERT_EQUAL(meta_wtxn_commit(m, txn, "ut"), 0);
}

static void test_capture_apply(void)
{
	struct sets s = {0};
	struct eng *e = NULL;
	struct eng_shadow *sh = NULL;
	struct dump a, b;
	uint64_t seq0, seq;
	struct meta_rec r;
	MDB_txn *txn;

	snprintf(udir, sizeof udir, "%s/store", ut_tmpdir("repl"));
	snprintf(sdir, sizeof sdir, "%s/shadow", ut_tmpdir("repl"));
	CU_ASSERT_EQUAL_FATAL(open_eng(&e, true), 0);
	/* no hook: nothing recorded, repl:seq untouched */
	write_mix(e, 0);
	CU_ASSERT_EQUAL(eng_repl_seq(e), 0);
	/* the open and that write happened without a hook: seq jumps by 2 */
	CU_ASSERT_EQUAL_FATAL(eng_repl_set(e, &sets_ops, &s), 0);
	seq0 = eng_repl_seq(e);
	CU_ASSERT_EQUAL(seq0, 2);
	write_mix(e, 1);
	write_mix(e, 2);
	CU_ASSERT_EQUAL(eng_sys_save(e, "ut.saved", "abc", 3), 0);
	CU_ASSERT_EQUAL_FATAL(s.s_nr, 3);
	CU_ASSERT_EQUAL(s.s_seq[0], seq0 + 1);
	CU_ASSERT_EQUAL(s.s_seq[2], seq0 + 3);
	CU_ASSERT_EQUAL(eng_repl_seq(e), seq0 + 3);
	CU_ASSERT_EQUAL(s.s_waits, 3); /* each commit waited for its set */
	CU_ASSERT_EQUAL(s.s_last_wait, seq0 + 3);
	for (uint32_t i = 0; i < s.s_nr; i++)
		CU_ASSERT_EQUAL(eng_wset_check(s.s_buf[i], s.s_len[i], &seq),
				0);
	eng_close(e);
	e = NULL;

	/* reopened: repl:seq survives; a snapshot of now installed as a
	 * shadow, then the next sets applied to it */
	CU_ASSERT_EQUAL_FATAL(open_eng(&e, false), 0);
	CU_ASSERT_EQUAL(eng_repl_seq(e), seq0 + 3); /* survives the reopen */
	{
		char snap[600];

		snprintf(snap, sizeof snap, "%s.snap", sdir);
		CU_ASSERT_EQUAL_FATAL(eng_snapshot(e, snap, &seq), 0);
		CU_ASSERT_EQUAL(seq, seq0 + 3);
		CU_ASSERT_EQUAL_FATAL(eng_shadow_install(sdir, snap, &seq), 0);
		CU_ASSERT_EQUAL(seq, seq0 + 3);
	}
	CU_ASSERT_EQUAL_FATAL(eng_shadow_open(&sh, sdir), 0);
	CU_ASSERT_EQUAL(eng_shadow_seq(sh), seq0 + 3);
	/* the hook again: the reopen made no write, so no jump */
	CU_ASSERT_EQUAL_FATAL(eng_repl_set(e, &sets_ops, &s), 0);
	sets_free(&s);
	write_mix(e, 3);
	write_mix(e, 4);
	CU_ASSERT_EQUAL_FATAL(s.s_nr, 2);
	CU_ASSERT_EQUAL(s.s_seq[0], seq0 + 4);
	/* a gap: -ESTALE, "behind", nothing changed */
	CU_ASSERT_EQUAL(eng_shadow_apply(sh, s.s_seq[1], s.s_buf[1],
					 s.s_len[1]), -ESTALE);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "behind"));
	CU_ASSERT_EQUAL(eng_shadow_seq(sh), seq0 + 3);
	/* garbled sets: -EINVAL, nothing changed */
	{
		uint8_t *g = malloc(s.s_len[0]);
		size_t n = s.s_len[0];
		static const size_t at[] = {0, 4, 6, 8, 16, 20, 24, 25, 26, 28};

		CU_ASSERT_EQUAL(eng_shadow_apply(sh, s.s_seq[0], s.s_buf[0],
						 n - 1), -EINVAL);
		CU_ASSERT_EQUAL(eng_shadow_apply(sh, s.s_seq[0], s.s_buf[0],
						 10), -EINVAL);
		for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
			memcpy(g, s.s_buf[0], n);
			g[at[i]] ^= 0xa5;
			CU_ASSERT_EQUAL(eng_shadow_apply(sh, s.s_seq[0], g, n),
					-EINVAL);
		}
		/* the right bytes under another seq */
		CU_ASSERT_EQUAL(eng_shadow_apply(sh, s.s_seq[0] + 7, s.s_buf[0],
						 n), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "seq"));
		free(g);
	}
	CU_ASSERT_EQUAL(eng_shadow_seq(sh), seq0 + 3);
	/* in order, both in one call (back to back): applied, durable,
	 * equal; the first twice back to back is refused, nothing changed */
	{
		size_t n0 = s.s_len[0], n1 = s.s_len[1];
		uint8_t *cat = malloc(n0 + n1 > 2 * n0 ? n0 + n1 : 2 * n0);

		memcpy(cat, s.s_buf[0], n0);
		memcpy(cat + n0, s.s_buf[0], n0);
		CU_ASSERT_EQUAL(eng_shadow_apply(sh, s.s_seq[0], cat, 2 * n0),
				-EINVAL);
		CU_ASSERT_EQUAL(eng_shadow_seq(sh), seq0 + 3);
		memcpy(cat + n0, s.s_buf[1], n1);
		CU_ASSERT_EQUAL(eng_shadow_apply(sh, s.s_seq[0], cat, n0 + n1),
				0);
		free(cat);
	}
	CU_ASSERT_EQUAL(eng_shadow_seq(sh), seq0 + 5);
	/* again: ahead */
	CU_ASSERT_EQUAL(eng_shadow_apply(sh, s.s_seq[1], s.s_buf[1],
					 s.s_len[1]), -ESTALE);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "ahead"));
	eng_shadow_close(sh);
	dump_meta(eng_meta(e), &a);
	dump_dir(sdir, &b);
	CU_ASSERT(a.d_len > 0);
	CU_ASSERT(dump_eq(&a, &b));
	free(a.d_p);
	free(b.d_p);
	/* what the sets carried: the reserved value, no aborted put */
	{
		struct meta m;

		CU_ASSERT_EQUAL_FATAL(meta_open(&m, sdir, 64ull << 20, 0), 0);
		CU_ASSERT_EQUAL_FATAL(meta_rtxn_begin(&m, &txn, "ut"), 0);
		CU_ASSERT_EQUAL(meta_get(txn, &m, META_T_SYS, "r4", 2, &r,
					 "ut"), 0);
		CU_ASSERT(r.mc_vlen == 8 && memcmp(r.mc_val, "reserved", 8) ==
			  0);
		CU_ASSERT_EQUAL(meta_get(txn, &m, META_T_ENT, "gone4", 5, &r,
					 "ut"), -ENOENT);
		CU_ASSERT_EQUAL(meta_get(txn, &m, META_T_IDX, "k3.0", 4, &r,
					 "ut"), -ENOENT);
		CU_ASSERT_EQUAL(meta_get(txn, &m, META_T_LAYER, "kept4", 5, &r,
					 "ut"), 0);
		meta_rtxn_put(&m, txn);
		meta_close(&m);
	}
	/* a write begun before the hook is set is not recorded: it leaves a
	 * gap (repl:seq + 2, nothing shipped), so shadows re-sync */
	{
		struct meta *m = eng_meta(e);
		uint64_t before;

		sets_free(&s);
		CU_ASSERT_EQUAL(eng_repl_set(e, NULL, NULL), 0);
		before = eng_repl_seq(e);
		CU_ASSERT_EQUAL_FATAL(meta_wtxn_begin(m, &txn, "ut"), 0);
		CU_ASSERT_EQUAL_FATAL(eng_repl_set(e, &sets_ops, &s), 0);
		CU_ASSERT_EQUAL(meta_put(txn, m, META_T_SYS, "late", 4, "x", 1,
					 "ut"), 0);
		CU_ASSERT_EQUAL(meta_wtxn_commit(m, txn, "ut"), 0);
		CU_ASSERT_EQUAL(s.s_nr, 0);
		CU_ASSERT_EQUAL(eng_repl_seq(e), before + 2);
		write_mix(e, 5); /* recorded again */
		CU_ASSERT_EQUAL(s.s_nr, 1);
		CU_ASSERT_EQUAL(s.s_seq[0], before + 3);
	}
	sets_free(&s);
	eng_close(e);
}

/* An engine opened on a shadow (ec_meta_dir), its devices found through
 * ec_dev_path. */
static int dev_map(void *arg, uint32_t i, const char *rec, char *out,
		   size_t len)
{
	uint32_t *calls = arg;

	(*calls)++;
	if (rec[0] == '/')
		return 0;
	snprintf(out, len, "%s/%s", udir, rec);
	return 1;
}

/* The path device i's record holds (into out, LIM_PATH_MAX + 1). */
static int dev_path(struct eng *e, uint32_t i, char *out)
{
	struct meta_rec r;
	MDB_txn *txn;
	char name[16];
	int rc = meta_rtxn_begin(eng_meta(e), &txn, "ut");

	if (rc != 0)
		return rc;
	snprintf(name, sizeof name, "dev.%u", i);
	rc = meta_get(txn, eng_meta(e), META_T_SYS, name, strlen(name), &r,
		      "ut");
	if (rc == 0 && r.mc_vlen == sizeof(struct dev_rec)) {
		struct dev_rec dr;

		memcpy(&dr, r.mc_val, sizeof dr);
		dr.dr_path[LIM_PATH_MAX] = '\0';
		snprintf(out, LIM_PATH_MAX + 1, "%s", dr.dr_path);
	} else if (rc == 0)
		rc = -EIO;
	meta_rtxn_put(eng_meta(e), txn);
	return rc;
}

static void test_open_on_shadow(void)
{
	uint32_t calls = 0;
	char tdir[600];
	struct eng_conf ec = {.ec_dir = tdir, .ec_meta_dir = sdir,
			      .ec_dev_path = dev_map,
			      .ec_dev_path_arg = &calls};
	struct eng *e = NULL;
	struct meta_rec r;
	MDB_txn *txn;

	/* the shadow of test_capture_apply, the store closed */
	snprintf(tdir, sizeof tdir, "%s/takeover", ut_tmpdir("repl"));
	CU_ASSERT_EQUAL(mkdir(tdir, 0755), 0);
	ec.ec_create = true; /* refused with a meta dir */
	CU_ASSERT_EQUAL(eng_open(&e, &ec), -EINVAL);
	ec.ec_create = false;
	if (eng_open(&e, &ec) != 0)
		fprintf(stderr, "open on shadow: %s\n", err_msg());
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT(calls > 0);
	CU_ASSERT(eng_repl_seq(e) > 0);
	CU_ASSERT_EQUAL_FATAL(meta_rtxn_begin(eng_meta(e), &txn, "ut"), 0);
	CU_ASSERT_EQUAL(meta_get(txn, eng_meta(e), META_T_SYS, "ut.saved", 8,
				 &r, "ut"), 0);
	meta_rtxn_put(eng_meta(e), txn);
	/* a device state this engine saves keeps the path the store
	 * records, not the one dev_map attached it under (a takeover
	 * engine's "remote:H:i@H+INC" left in the home's store made its
	 * own devices remote to itself after the handback) */
	{
		char before[LIM_PATH_MAX + 1], after[LIM_PATH_MAX + 1];
		uint32_t i = 0;

		/* the first device dev_map rewrote (recorded relative) */
		while (dev_path(e, i, before) == 0 && before[0] == '/')
			i++;
		CU_ASSERT_FATAL(dev_path(e, i, before) == 0);
		CU_ASSERT_EQUAL(eng_dev_state_set(e, i, ED_ONLINE, 0), 0);
		CU_ASSERT_EQUAL(dev_path(e, i, after), 0);
		CU_ASSERT_STRING_EQUAL(after, before);
	}
	eng_close(e);
	/* no store there */
	ec.ec_meta_dir = tdir;
	CU_ASSERT_EQUAL(eng_open(&e, &ec), -ENOENT);
	/* capture_apply's store (used here too): its NVRAM device lives in
	 * /dev/shm, outside the directory */
	(void)eng_destroy(udir);
}

/* A store's own devices failed or repaired only because their server was
 * lost (EDF_HOME_LOST, set by a takeover engine) are back ONLINE when the
 * store opens with them attached locally: REPAIRED ones to be rebalanced,
 * FAILED ones as they are; a device failed by a fault of its own stays
 * failed. */
static void test_home_lost_back(void)
{
	char dir[600];
	struct eng_conf ec = {.ec_dir = dir, .ec_create = true,
			      .ec_dev_size = 64ull << 20};
	struct eng *e = NULL;

	snprintf(dir, sizeof dir, "%s/homelost", ut_tmpdir("repl"));
	CU_ASSERT_EQUAL_FATAL(eng_open(&e, &ec), 0);
	CU_ASSERT_FATAL(eng_dev_nr(e) >= 3);
	CU_ASSERT_EQUAL(eng_dev_state_set(e, 0, ED_FAILED, EDF_HOME_LOST), 0);
	CU_ASSERT_EQUAL(eng_dev_state_set(e, 1, ED_REPAIRED, EDF_HOME_LOST),
			0);
	CU_ASSERT_EQUAL(eng_dev_state_set(e, 2, ED_FAILED, 0), 0);
	eng_close(e);
	e = NULL;
	ec.ec_create = false;
	CU_ASSERT_EQUAL_FATAL(eng_open(&e, &ec), 0);
	CU_ASSERT_EQUAL(eng_dev_get(e, 0)->ed_state, ED_ONLINE);
	CU_ASSERT_EQUAL(eng_dev_get(e, 0)->ed_flags, 0);
	CU_ASSERT_EQUAL(eng_dev_get(e, 1)->ed_state, ED_ONLINE);
	CU_ASSERT_EQUAL(eng_dev_get(e, 1)->ed_flags, EDF_REBALANCE);
	CU_ASSERT_EQUAL(eng_dev_get(e, 2)->ed_state, ED_FAILED);
	eng_close(e);
	e = NULL;
	/* and it stays so (saved, not only fixed in memory) */
	CU_ASSERT_EQUAL_FATAL(eng_open(&e, &ec), 0);
	CU_ASSERT_EQUAL(eng_dev_get(e, 1)->ed_state, ED_ONLINE);
	CU_ASSERT_EQUAL(eng_dev_get(e, 1)->ed_flags, EDF_REBALANCE);
	eng_close(e);
	(void)eng_destroy(dir);
}

/* Apply every set of s from index i on to shadow sh; 0 or the first
 * error. */
static int sets_apply(struct eng_shadow *sh, const struct sets *s, uint32_t i)
{
	for (; i < s->s_nr; i++) {
		int rc = eng_shadow_apply(sh, s->s_seq[i], s->s_buf[i],
					  s->s_len[i]);

		if (rc != 0)
			return rc;
	}
	return 0;
}

/* A takeover engine continues the home's sequence (docs/cluster.md
 * "Taking over a home"): the home's sets reach shadows A and B (C misses
 * the last); an engine opened on A (as a standby acting for the home)
 * with a hook writes sets N + 1, N + 2 ... (no jump: the open wrote
 * nothing), which B applies as its next ones while C is refused
 * -ESTALE (re-synced by snapshot); B then equals the engine table by
 * table.  A second move: the engine on A closed, one opened on B goes on
 * at the seq B holds. */
static void test_takeover_seq(void)
{
	char tdir[600], adir[600], bdir[600], cdir[600], snap[640];
	uint32_t calls = 0;
	struct eng_conf ec = {.ec_dir = tdir, .ec_dev_path = dev_map,
			      .ec_dev_path_arg = &calls};
	struct eng_shadow *a = NULL, *b = NULL, *c = NULL;
	struct sets s = {0}, t = {0};
	struct eng *e = NULL;
	struct dump da, db;
	uint64_t n, seq;

	snprintf(udir, sizeof udir, "%s/home", ut_tmpdir("repl_tk"));
	snprintf(tdir, sizeof tdir, "%s/takeover", ut_tmpdir("repl_tk"));
	snprintf(adir, sizeof adir, "%s/shadow-a", ut_tmpdir("repl_tk"));
	snprintf(bdir, sizeof bdir, "%s/shadow-b", ut_tmpdir("repl_tk"));
	snprintf(cdir, sizeof cdir, "%s/shadow-c", ut_tmpdir("repl_tk"));
	snprintf(snap, sizeof snap, "%s/home.snap", ut_tmpdir("repl_tk"));
	CU_ASSERT_EQUAL_FATAL(mkdir(tdir, 0755), 0);
	/* the home: replicated from its first write on, three shadows
	 * installed from its snapshot, then its sets applied (not all to C) */
	if (open_eng(&e, true) != 0)
		fprintf(stderr, "home store %s: %s\n", udir, err_msg());
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL_FATAL(eng_repl_set(e, &sets_ops, &s), 0);
	write_mix(e, 0);
	CU_ASSERT_EQUAL_FATAL(eng_snapshot(e, snap, &seq), 0);
	CU_ASSERT_EQUAL_FATAL(eng_shadow_install(adir, snap, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(eng_snapshot(e, snap, &seq), 0);
	CU_ASSERT_EQUAL_FATAL(eng_shadow_install(bdir, snap, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(eng_snapshot(e, snap, &seq), 0);
	CU_ASSERT_EQUAL_FATAL(eng_shadow_install(cdir, snap, NULL), 0);
	sets_free(&s);
	write_mix(e, 1);
	write_mix(e, 2);
	CU_ASSERT_EQUAL(eng_sys_save(e, "ut.saved", "abc", 3), 0);
	CU_ASSERT_EQUAL_FATAL(s.s_nr, 3);
	n = eng_repl_seq(e);
	CU_ASSERT_EQUAL(n, seq + 3);
	CU_ASSERT_EQUAL_FATAL(eng_shadow_open(&a, adir), 0);
	CU_ASSERT_EQUAL_FATAL(eng_shadow_open(&b, bdir), 0);
	CU_ASSERT_EQUAL_FATAL(eng_shadow_open(&c, cdir), 0);
	CU_ASSERT_EQUAL(sets_apply(a, &s, 0), 0);
	CU_ASSERT_EQUAL(sets_apply(b, &s, 0), 0);
	s.s_nr--; /* C misses the last set */
	CU_ASSERT_EQUAL(sets_apply(c, &s, 0), 0);
	s.s_nr++;
	CU_ASSERT_EQUAL(eng_shadow_seq(a), n);
	CU_ASSERT_EQUAL(eng_shadow_seq(c), n - 1);
	sets_free(&s);
	eng_close(e); /* the home dies */
	e = NULL;
	eng_shadow_close(a); /* A is taken for the takeover */
	a = NULL;

	/* the takeover engine on A: its sets continue at n + 1 */
	ec.ec_meta_dir = adir;
	CU_ASSERT_EQUAL_FATAL(eng_open(&e, &ec), 0);
	CU_ASSERT_EQUAL(eng_repl_seq(e), n);
	CU_ASSERT_EQUAL_FATAL(eng_repl_set(e, &sets_ops, &t), 0);
	CU_ASSERT_EQUAL(eng_repl_seq(e), n); /* no jump */
	write_mix(e, 3);
	write_mix(e, 4);
	CU_ASSERT_EQUAL_FATAL(t.s_nr, 2);
	CU_ASSERT_EQUAL(t.s_seq[0], n + 1);
	CU_ASSERT_EQUAL(t.s_seq[1], n + 2);
	/* B, current, continues; C, one behind, is refused */
	CU_ASSERT_EQUAL(sets_apply(b, &t, 0), 0);
	CU_ASSERT_EQUAL(eng_shadow_seq(b), n + 2);
	CU_ASSERT_EQUAL(eng_shadow_apply(c, t.s_seq[0], t.s_buf[0],
					 t.s_len[0]), -ESTALE);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "behind"));
	CU_ASSERT_EQUAL(eng_shadow_seq(c), n - 1);
	eng_shadow_close(b);
	b = NULL;
	dump_meta(eng_meta(e), &da);
	dump_dir(bdir, &db);
	CU_ASSERT(da.d_len > 0);
	CU_ASSERT(dump_eq(&da, &db));
	free(da.d_p);
	free(db.d_p);
	CU_ASSERT_EQUAL(eng_repl_set(e, NULL, NULL), 0);
	eng_close(e);
	e = NULL;
	sets_free(&t);

	/* the second move: an engine on B goes on at n + 3, and C gets the
	 * engine's snapshot (what a behind standby is sent) */
	ec.ec_meta_dir = bdir;
	CU_ASSERT_EQUAL_FATAL(eng_open(&e, &ec), 0);
	CU_ASSERT_EQUAL_FATAL(eng_repl_set(e, &sets_ops, &t), 0);
	CU_ASSERT_EQUAL(eng_repl_seq(e), n + 2);
	eng_shadow_close(c);
	c = NULL;
	CU_ASSERT_EQUAL_FATAL(eng_snapshot(e, snap, &seq), 0);
	CU_ASSERT_EQUAL(seq, n + 2);
	CU_ASSERT_EQUAL_FATAL(eng_shadow_install(cdir, snap, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(eng_shadow_open(&c, cdir), 0);
	write_mix(e, 5);
	CU_ASSERT_EQUAL_FATAL(t.s_nr, 1);
	CU_ASSERT_EQUAL(t.s_seq[0], n + 3);
	CU_ASSERT_EQUAL(sets_apply(c, &t, 0), 0);
	CU_ASSERT_EQUAL(eng_shadow_seq(c), n + 3);
	eng_shadow_close(c);
	dump_meta(eng_meta(e), &da);
	dump_dir(cdir, &db);
	CU_ASSERT(dump_eq(&da, &db));
	free(da.d_p);
	free(db.d_p);
	sets_free(&t);
	eng_close(e);
	/* the stores' NVRAM devices live in /dev/shm, outside the dirs */
	(void)eng_destroy(udir);
	(void)eng_destroy(tdir);
}

/* The senders' map view (eng_repl_view_admit): the home's own ships pass
 * before any move; after a move the old home (fenced) is refused whatever
 * its epoch up to the move's, the acting server admitted; a standby that
 * has not seen a move learns it from the newer epoch of a ship; an older
 * takeover run of the acting server is refused; a later move fences the
 * first acting server; the handback fences the last one. */
static void test_view_admit(void)
{
	struct eng_repl_view v = {2, 0, 0}; /* home s2, no map yet */

	/* the normal path: the home itself, with or without a map */
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 2, 0, 0), 0);
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 2, 5, 0),
			ENG_REPL_VIEW_LEARNED);
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 2, 5, 0), 0);
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 2, 4, 0), 0);
	CU_ASSERT(v.rv_acting == 2 && v.rv_epoch == 5);
	/* not acting at an epoch this view knows */
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 1, 5, 100), -EREMCHG);
	CU_ASSERT(v.rv_acting == 2 && v.rv_epoch == 5);
	/* the move to s1 (epoch 7), learned from its first ship */
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 1, 7, 100),
			ENG_REPL_VIEW_LEARNED);
	CU_ASSERT(v.rv_acting == 1 && v.rv_epoch == 7 && v.rv_inc == 100);
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 1, 7, 100), 0);
	/* the old home, fenced: refused at its epoch and at the move's */
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 2, 5, 0), -EREMCHG);
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 2, 7, 0), -EREMCHG);
	/* an older takeover run of s1 */
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 1, 7, 99), -EREMCHG);
	CU_ASSERT(v.rv_acting == 1 && v.rv_epoch == 7 && v.rv_inc == 100);
	/* the second move, to s3 (epoch 9): s1 is fenced */
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 3, 9, 200),
			ENG_REPL_VIEW_LEARNED);
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 1, 8, 100), -EREMCHG);
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 1, 9, 100), -EREMCHG);
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 3, 9, 200), 0);
	/* the handback (epoch 12): s2 again, s3 fenced */
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 2, 12, 0),
			ENG_REPL_VIEW_LEARNED);
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 3, 9, 200), -EREMCHG);
	CU_ASSERT_EQUAL(eng_repl_view_admit(&v, 2, 12, 0), 0);
	CU_ASSERT(v.rv_acting == 2 && v.rv_epoch == 12 && v.rv_inc == 0);
}

/* cluster.meta_replicas: 1..8, capped at the servers, default. */
static void test_meta_replicas_conf(void)
{
	static const char *bad[] = {"0", "9", "-1", "x", "3.5", ""};
	struct clu_conf c;
	char y[1024];

	for (int r = 0; r <= 4; r++) {
		snprintf(y, sizeof y, "cluster:\n  name: c\n  secret: "
			 "0123456789abcdef0123\n%s%.0d\nservers:\n"
			 "  - { name: s0, address: 127.0.0.1, port: 21000, "
			 "data_dir: /tmp/x0, devices: [ { tier: flash } ] }\n"
			 "  - { name: s1, address: 127.0.0.1, port: 21001, "
			 "data_dir: /tmp/x1, devices: [ { tier: flash } ] }\n"
			 "  - { name: s2, address: 127.0.0.1, port: 21002, "
			 "data_dir: /tmp/x2, devices: [ { tier: flash } ] }\n",
			 r ? "  meta_replicas: " : "", r);
		if (clu_conf_parse(&c, y, strlen(y), NULL, 0) != 0) {
			fprintf(stderr, "meta_replicas %d: %s\n", r, err_msg());
			CU_FAIL("parse");
			continue;
		}
		/* no etcd: not replicated unless asked */
		CU_ASSERT_EQUAL(c.cc_meta_replicas,
				r == 0 ? 1u : r > 3 ? 3 : (uint32_t)r);
		clu_conf_fini(&c);
	}
	/* with etcd (an HA map can move homes): the default, capped */
	snprintf(y, sizeof y, "cluster:\n  name: c\n  secret: "
		 "0123456789abcdef0123\n  etcd: [ \"http://127.0.0.1:2379\" ]\n"
		 "servers:\n"
		 "  - { name: s0, address: 127.0.0.1, port: 21000, "
		 "data_dir: /tmp/x0, devices: [ { tier: flash } ] }\n"
		 "  - { name: s1, address: 127.0.0.1, port: 21001, "
		 "data_dir: /tmp/x1, devices: [ { tier: flash } ] }\n"
		 "  - { name: s2, address: 127.0.0.1, port: 21002, "
		 "data_dir: /tmp/x2, devices: [ { tier: flash } ] }\n"
		 "  - { name: s3, address: 127.0.0.1, port: 21003, "
		 "data_dir: /tmp/x3, devices: [ { tier: flash } ] }\n");
	CU_ASSERT_EQUAL_FATAL(clu_conf_parse(&c, y, strlen(y), NULL, 0), 0);
	CU_ASSERT_EQUAL(c.cc_meta_replicas, CLU_META_REPLICAS_DEFAULT);
	CU_ASSERT_EQUAL(CLU_META_REPLICAS_DEFAULT, 3u);
	clu_conf_fini(&c);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		snprintf(y, sizeof y, "cluster:\n  name: c\n  secret: "
			 "0123456789abcdef0123\n  meta_replicas: \"%s\"\n"
			 "servers:\n  - { name: s0, address: 127.0.0.1, "
			 "port: 21000, data_dir: /tmp/x0, devices: "
			 "[ { tier: flash } ] }\n", bad[i]);
		CU_ASSERT_EQUAL(clu_conf_parse(&c, y, strlen(y), NULL, 0),
				-EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(),
					      "cluster.meta_replicas"));
	}
}

int repl_ut_add(void)
{
	CU_pSuite s = CU_add_suite("repl", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "capture_apply", test_capture_apply) ||
	    !CU_add_test(s, "open_on_shadow", test_open_on_shadow) ||
	    !CU_add_test(s, "takeover_seq", test_takeover_seq) ||
	    !CU_add_test(s, "view_admit", test_view_admit) ||
	    !CU_add_test(s, "home_lost_back", test_home_lost_back) ||
	    !CU_add_test(s, "meta_replicas_conf", test_meta_replicas_conf))
		return -1;
	return 0;
}
