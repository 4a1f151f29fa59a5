/*
 * bench.c — Strata benchmarks beside raw baselines measured in the same run.
 *
 *   strata_bench --dir DIR [--json] [--seconds S] [--rounds K]
 *                [--only store1|store2] [--figs GROUP[,GROUP...]]
 *
 * --figs measures only the named groups of figures (for targeted runs while
 * tuning): 1m, 4k, idx (store 1), metanv (store 1 with its metadata on
 * NVRAM), tier, ecw (EC writes only), ec (every EC figure) (store 2).  A store none of whose groups is named is skipped.
 *
 * One process, one file system: the stores live in DIR (their NVRAM devices
 * on /dev/shm through PMDK), the raw baselines in DIR too.  Each figure is
 * measured for S seconds (default 1.5) on our side and on the raw side, and
 * printed as: name, ours, raw, ratio (ours / raw), unit, emulation.  The
 * 4k and 1m figures are measured in K alternated rounds (default 5) of S/K
 * seconds per side (see bn_fig_add_rr: medians, and the median of the
 * rounds' ratios with their range).
 *
 * This file: the shared op loops and the issue-2 figures on a store made
 * with the built-in default configuration (DIR/store):
 *
 *   4k_rand{write,read}_{flash,nvram}  4 KiB random blocks, 16 in flight;
 *        raw: O_DIRECT pwrite + fdatasync / pread from 16 threads on a
 *        preallocated, written file.  Writes count when STABLE.
 *   1m_seq{write,read}_{flash,nvram}   1 MiB sequential, one at a time;
 *        raw: O_DIRECT pwrite + fdatasync / pread of 1 MiB.
 *   4k_stable_qd16_vs_sync_qd1   4 KiB writes reaching STABLE, 16 in
 *        flight, against raw 4 KiB pwrite + fdatasync one at a time.
 *   floor_*   the design's floor (bn_floor_1m, bn_floor_4k): the durable
 *        steps of a write run raw, beside the same raw baselines and
 *        beside ours, in the same rounds; not goals.
 *   idx_{put,get,next}_qdQ_rR   index records with 16-byte keys and 64-byte
 *        values, Q ops in flight of R records each; raw: LMDB in the same
 *        directory from Q threads, one txn per op of R records (durable
 *        commits for PUT, a read txn with mdb_get or a cursor walk else,
 *        every key and value found copied out).  NEXT fills the caller's
 *        buffers (CLOVIS_IF_CALLER_BUFS); idx_next_malloc_qd1_r64 is the
 *        same walk with every key and value in its own malloc()ed buffer.
 *        GET and NEXT at 16 in flight from 16 application threads, one op
 *        each (as raw); _1thr: one thread keeping 16 launched one by one
 *        (run inline in it); _array: one thread launching arrays of 16
 *        (run by the worker threads).
 *
 * Group metanv (DIR/store-metanv, made with CLOVIS_CONF_META_NVRAM: the
 * metadata on /dev/shm): 1m_seqwrite_flash_metanv and
 * 4k_stable_qd16_vs_sync_qd1_metanv, the flash figures above on that
 * store, each with its raw baseline (the same raw file on ext4) measured
 * again right after it in the same run; and idx_{put,get,next}_qdQ_rR_metanv
 * (qd1_r1, qd16_r1, qd1_r64 as above; GET/NEXT at 16 in flight from 16
 * threads) on an index of that store beside raw LMDB on the same tmpfs
 * with equal durability: /dev/shm/strata-bench-lmdb-PID, opened without
 * MDB_NOSYNC or MDB_NOMETASYNC (every commit synced, as the store's), the
 * same batching as the raw side of group idx; removed after.
 *
 * Then that store is destroyed and bench_ec.c makes the second one, on
 * which bench_tier.c and bench_ec.c measure the figures of issue 3.
 */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/aio_abi.h>
#include <sys/syscall.h>

#include "tests/bench/bench.h"

#define BN_SMALL_BLKS 16384u          /* 64 MiB of 4 KiB blocks */
#define BN_BIG_BLKS 128u              /* 128 MiB of 1 MiB blocks (of 256) */
#define BN_PRELOAD 50000u             /* records loaded before GET/NEXT */
#define BN_RAW_SIZE (256ull << 20)

/* Emulation tags of the issue-2 figures. */
#define BN_EMU_DISK "flash: file, ext4, O_DIRECT"
#define BN_EMU_SHM "nvram: /dev/shm via PMDK"
#define BN_EMU_LMDB "LMDB on ext4"
#define BN_EMU_METANV "flash: file, ext4, O_DIRECT; metadata on /dev/shm"
#define BN_EMU_LMDB_SHM "LMDB on /dev/shm, durable commits; raw LMDB the same"

static struct bn_fig bn_figs[BN_FIGS_MAX];
static unsigned bn_nr_figs;
static const char *bn_only;     /* "store1", "store2" or NULL: both */
static const char *bn_sel;      /* --figs: groups to measure, NULL: all */
double bn_secs = 1.5;
unsigned bn_rounds = 5;
bool bn_json;
char bn_dir[512];
struct clovis *bn_cl;

/* ------------------------------------------------------------ helpers */

bool bn_want(const char *group)
{
	size_t n = strlen(group);

	for (const char *p = bn_sel; p != NULL && *p != '\0';) {
		const char *end = strchr(p, ',');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

		if (len == n && strncmp(p, group, n) == 0)
			return true;
		p = end != NULL ? end + 1 : p + len;
	}
	return bn_sel == NULL;
}

double bn_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void bn_check(int rc, const char *what)
{
	if (rc == 0)
		return;
	fprintf(stderr, "strata_bench: %s: %d %s (%s)\n", what, rc,
		clovis_strerror(rc), clovis_errmsg());
	exit(1);
}

void *bn_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, BN_ALIGN, len) != 0)
		bn_check(-ENOMEM, "memory");
	memset(p, 0x5c, len);
	return p;
}

/* A cheap per-thread random number. */
uint64_t bn_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Key number n as 16 bytes, in an order unrelated to n. */
static void bn_key(uint64_t n, char key[BN_KEY_LEN + 1])
{
	snprintf(key, BN_KEY_LEN + 1, "%016llx",
		 (unsigned long long)(n * 0x9e3779b97f4a7c15ull));
}

void bn_fig_add(const char *name, double ours, double raw, const char *unit,
		uint32_t qd, uint32_t recs, const char *emu)
{
	struct bn_fig *f;

	if (bn_nr_figs == BN_FIGS_MAX)
		bn_check(-E2BIG, "too many figures");
	f = &bn_figs[bn_nr_figs++];
	*f = (struct bn_fig){.f_ours = ours, .f_raw = raw, .f_unit = unit,
			     .f_qd = qd, .f_recs = recs};
	snprintf(f->f_name, sizeof f->f_name, "%s", name);
	snprintf(f->f_emu, sizeof f->f_emu, "%s", emu);
	if (!bn_json)
		fprintf(stderr, "  measured %s\n", name);
}

static int bn_dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bn_median(double *v, uint32_t nr)
{
	if (nr == 0)
		return 0;
	qsort(v, nr, sizeof *v, bn_dbl_cmp);
	return nr % 2 ? v[nr / 2] : (v[nr / 2 - 1] + v[nr / 2]) / 2;
}

/* ------------------------------------------------- our side: op loop */

/* Whether job j may make another op. */
static bool bn_more(const struct bn_job *j, double end)
{
	return bn_now() < end && (j->j_stop == 0 || j->j_next < j->j_stop) &&
	       (j->j_ops_max == 0 || j->j_made < j->j_ops_max);
}

/* Make and launch the op of slot s. */
static void bn_launch(struct bn_job *j, struct bn_slot *s)
{
	bn_check(j->j_make(j, s), "op");
	j->j_made++;
	s->s_t0 = bn_now();
	bn_check(clovis_op_launch(&s->s_op, 1), "launch");
}

/* Slot s finished: keep its latency when the job wants it. */
static void bn_lat_keep(struct bn_job *j, const struct bn_slot *s)
{
	if (j->j_lat != NULL && j->j_lat_nr < BN_LAT_MAX)
		j->j_lat[j->j_lat_nr++] = (bn_now() - s->s_t0) * 1e6;
}

/*
 * Run job j with j_qd ops in flight for secs (or until a stop); waits on
 * the slots in turn.  Returns ops per second.
 */
double bn_run_for(struct bn_job *j, double secs)
{
	uint64_t done = 0, made = 0;
	double t0 = bn_now(), end = t0 + secs;
	uint32_t i, n;

	for (n = 0; n < j->j_qd && bn_more(j, end); n++, made++)
		bn_launch(j, &j->j_slots[n]);
	for (i = 0; done < made; i = (i + 1) % n) {
		struct bn_slot *s = &j->j_slots[i];

		bn_check(clovis_op_wait(s->s_op, CLOVIS_OS_STABLE,
					CLOVIS_TIME_NEVER), "wait");
		bn_lat_keep(j, s);
		if (j->j_done != NULL)
			j->j_done(j, s);
		clovis_op_free(s->s_op);
		done++;
		if (bn_more(j, end)) {
			bn_launch(j, s);
			made++;
		}
	}
	return done / (bn_now() - t0);
}

double bn_run(struct bn_job *j)
{
	return bn_run_for(j, bn_secs);
}

/* One-extent READ or WRITE of s->s_nr blocks at s->s_blk. */
static int bn_obj_op(struct bn_job *j, struct bn_slot *s,
		     enum clovis_obj_opcode opc)
{
	size_t len = s->s_nr << j->j_obj->ob_attr.oa_block_shift;

	s->s_ev = (struct clovis_extvec){1, &s->s_blk, &s->s_nr};
	if (s->s_buf == NULL)
		s->s_buf = bn_alloc(len);
	s->s_bufs[0] = s->s_buf;
	s->s_lens[0] = len;
	s->s_bv = (struct clovis_bufvec){1, s->s_bufs, s->s_lens};
	s->s_op = NULL;
	return clovis_obj_op(j->j_obj, opc, &s->s_ev, &s->s_bv, 0, &s->s_op);
}

int bn_make_rand_write(struct bn_job *j, struct bn_slot *s)
{
	s->s_blk = bn_rand(&j->j_rand) % j->j_blks;
	s->s_nr = 1;
	return bn_obj_op(j, s, CLOVIS_OC_WRITE);
}

int bn_make_rand_read(struct bn_job *j, struct bn_slot *s)
{
	s->s_blk = bn_rand(&j->j_rand) % j->j_blks;
	s->s_nr = 1;
	return bn_obj_op(j, s, CLOVIS_OC_READ);
}

/* The next j_chunk blocks (at least one) of the region, in order. */
static void bn_seq_next(struct bn_job *j, struct bn_slot *s)
{
	s->s_nr = j->j_chunk != 0 ? j->j_chunk : 1;
	s->s_blk = j->j_next % j->j_blks;
	j->j_next += s->s_nr;
}

int bn_make_seq_write(struct bn_job *j, struct bn_slot *s)
{
	bn_seq_next(j, s);
	return bn_obj_op(j, s, CLOVIS_OC_WRITE);
}

int bn_make_seq_read(struct bn_job *j, struct bn_slot *s)
{
	bn_seq_next(j, s);
	return bn_obj_op(j, s, CLOVIS_OC_READ);
}

/* Point the slot's key (and value) vectors at j_recs records from key
 * number first on (keys only when vals is false). */
static void bn_recs(struct bn_job *j, struct bn_slot *s, uint64_t first,
		    bool vals)
{
	for (uint32_t r = 0; r < j->j_recs; r++) {
		bn_key(first + r, s->s_keys[r]);
		s->s_kb[r] = s->s_keys[r];
		s->s_kl[r] = BN_KEY_LEN;
		s->s_vb[r] = vals ? s->s_vals[r] : NULL;
		s->s_vl[r] = vals ? BN_VAL_LEN : 0;
		if (vals)
			memset(s->s_vals[r], (int)(first + r), BN_VAL_LEN);
	}
	s->s_kv = (struct clovis_bufvec){j->j_recs, s->s_kb, s->s_kl};
	s->s_vv = (struct clovis_bufvec){j->j_recs, s->s_vb, s->s_vl};
}

/* PUT of j_recs new keys. */
static int bn_make_put(struct bn_job *j, struct bn_slot *s)
{
	bn_recs(j, s, j->j_next, true);
	j->j_next += j->j_recs;
	s->s_op = NULL;
	return clovis_idx_op(j->j_idx, CLOVIS_IC_PUT, &s->s_kv, &s->s_vv,
			     s->s_rcs, 0, &s->s_op);
}

/* GET of j_recs loaded keys from a random one on, into slot buffers. */
static int bn_make_get(struct bn_job *j, struct bn_slot *s)
{
	bn_recs(j, s, bn_rand(&j->j_rand) % (j->j_keys - j->j_recs), true);
	s->s_op = NULL;
	return clovis_idx_op(j->j_idx, CLOVIS_IC_GET, &s->s_kv, &s->s_vv,
			     s->s_rcs, 0, &s->s_op);
}

/* NEXT of j_recs records from a random loaded key (only that key is made:
 * the raw walk makes one too). */
static int bn_make_next(struct bn_job *j, struct bn_slot *s)
{
	bn_key(bn_rand(&j->j_rand) % j->j_keys, s->s_keys[0]);
	for (uint32_t r = 0; r < j->j_recs; r++) {
		s->s_kb[r] = r == 0 ? s->s_keys[0] : NULL;
		s->s_kl[r] = r == 0 ? BN_KEY_LEN : 0;
		s->s_vb[r] = NULL;
		s->s_vl[r] = 0;
	}
	s->s_kv = (struct clovis_bufvec){j->j_recs, s->s_kb, s->s_kl};
	s->s_vv = (struct clovis_bufvec){j->j_recs, s->s_vb, s->s_vl};
	s->s_op = NULL;
	return clovis_idx_op(j->j_idx, CLOVIS_IC_NEXT, &s->s_kv, &s->s_vv,
			     s->s_rcs, 0, &s->s_op);
}

/* NEXT of j_recs records from a random loaded key into the slot's own
 * buffers (CLOVIS_IF_CALLER_BUFS: no allocation per record). */
static int bn_make_next_into(struct bn_job *j, struct bn_slot *s)
{
	bn_key(bn_rand(&j->j_rand) % j->j_keys, s->s_key0);
	for (uint32_t r = 0; r < j->j_recs; r++) {
		s->s_kb[r] = r == 0 ? s->s_key0 : s->s_keys[r];
		s->s_kl[r] = BN_KEY_LEN;
		s->s_vb[r] = s->s_vals[r];
		s->s_vl[r] = BN_VAL_LEN;
	}
	s->s_kv = (struct clovis_bufvec){j->j_recs, s->s_kb, s->s_kl};
	s->s_vv = (struct clovis_bufvec){j->j_recs, s->s_vb, s->s_vl};
	s->s_op = NULL;
	return clovis_idx_op(j->j_idx, CLOVIS_IC_NEXT, &s->s_kv, &s->s_vv,
			     s->s_rcs, CLOVIS_IF_CALLER_BUFS, &s->s_op);
}

/* Check what a NEXT into caller buffers returned (the walk may run off the
 * end of the loaded keys). */
static void bn_done_next_into(struct bn_job *j, struct bn_slot *s)
{
	for (uint32_t r = 0; r < j->j_recs; r++)
		if (s->s_rcs[r] != -ENOENT)
			bn_check(s->s_rcs[r], "record");
}

/* Check every record of a finished PUT or GET. */
static void bn_done_recs(struct bn_job *j, struct bn_slot *s)
{
	for (uint32_t r = 0; r < j->j_recs; r++)
		bn_check(s->s_rcs[r], "record");
}

/* Free what a NEXT returned. */
static void bn_done_next(struct bn_job *j, struct bn_slot *s)
{
	for (uint32_t r = 0; r < j->j_recs; r++)
		if (s->s_rcs[r] == 0) {
			free(s->s_kb[r]);
			free(s->s_vb[r]);
		}
}

void bn_job_fini(struct bn_job *j)
{
	for (uint32_t i = 0; i < BN_QD_MAX; i++) {
		free(j->j_slots[i].s_buf);
		j->j_slots[i].s_buf = NULL;
	}
}

/* ----------------------------------------------- raw side: file, LMDB */

/* One raw thread: ops until the deadline. */
static void *bn_raw_main(void *arg)
{
	struct bn_raw *r = arg;
	uint64_t rnd = (uint64_t)pthread_self() | 1, i = 0;
	void *buf = bn_alloc(r->r_len > BN_ALIGN ? r->r_len : BN_ALIGN);

	while (bn_now() < r->r_end) {
		double t0 = bn_now();

		if (r->r_op(r, &rnd, i++, buf) != 0) {
			fprintf(stderr, "strata_bench: raw op: %s\n",
				strerror(errno));
			exit(1);
		}
		if (r->r_lat != NULL) {
			unsigned k = atomic_fetch_add(&r->r_lat_nr, 1);

			if (k < BN_LAT_MAX)
				r->r_lat[k] = (bn_now() - t0) * 1e6;
		}
		atomic_fetch_add(&r->r_done, 1);
	}
	free(buf);
	return NULL;
}

double bn_raw_run_for(struct bn_raw *r, double secs)
{
	pthread_t tids[BN_QD_MAX];
	double t0 = bn_now();

	atomic_store(&r->r_done, 0);
	atomic_store(&r->r_lat_nr, 0);
	r->r_end = t0 + secs;
	for (uint32_t t = 0; t < r->r_threads; t++)
		pthread_create(&tids[t], NULL, bn_raw_main, r);
	for (uint32_t t = 0; t < r->r_threads; t++)
		pthread_join(tids[t], NULL);
	return atomic_load(&r->r_done) / (bn_now() - t0);
}

double bn_raw_run(struct bn_raw *r)
{
	return bn_raw_run_for(r, bn_secs);
}

int bn_raw_rand_write(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf)
{
	off_t off = (off_t)(bn_rand(rnd) % r->r_nr) * r->r_len;

	if (pwrite(r->r_fd, buf, r->r_len, off) != (ssize_t)r->r_len)
		return -1;
	return fdatasync(r->r_fd);
}

int bn_raw_rand_read(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf)
{
	off_t off = (off_t)(bn_rand(rnd) % r->r_nr) * r->r_len;

	return pread(r->r_fd, buf, r->r_len, off) == (ssize_t)r->r_len ? 0
									: -1;
}

int bn_raw_seq_write(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf)
{
	off_t off = (off_t)(i % r->r_nr) * r->r_len;

	if (pwrite(r->r_fd, buf, r->r_len, off) != (ssize_t)r->r_len)
		return -1;
	return fdatasync(r->r_fd);
}

int bn_raw_seq_read(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf)
{
	off_t off = (off_t)(i % r->r_nr) * r->r_len;

	return pread(r->r_fd, buf, r->r_len, off) == (ssize_t)r->r_len ? 0
									: -1;
}

/* Fail with errno set from an LMDB code. */
static int bn_mdb(int rc)
{
	if (rc != 0) {
		fprintf(stderr, "strata_bench: lmdb: %s\n", mdb_strerror(rc));
		errno = EIO;
		return -1;
	}
	return 0;
}

/* One durable write txn of r_recs new records. */
static int bn_raw_put(struct bn_raw *r, uint64_t *rnd, uint64_t i,
		      void *buf)
{
	uint64_t first = atomic_fetch_add(&r->r_keys, r->r_recs);
	char key[BN_KEY_LEN + 1];
	MDB_txn *txn;
	MDB_val k = {BN_KEY_LEN, key}, v = {BN_VAL_LEN, buf};
	int rc = mdb_txn_begin(r->r_env, NULL, 0, &txn);

	for (uint32_t n = 0; rc == 0 && n < r->r_recs; n++) {
		bn_key(first + n, key);
		rc = mdb_put(txn, r->r_dbi, &k, &v, 0);
	}
	if (rc == 0)
		return bn_mdb(mdb_txn_commit(txn));
	mdb_txn_abort(txn);
	return bn_mdb(rc);
}

/* One read txn with mdb_get of r_recs loaded keys. */
static int bn_raw_get(struct bn_raw *r, uint64_t *rnd, uint64_t i,
		      void *buf)
{
	uint64_t first = bn_rand(rnd) % (r->r_loaded - r->r_recs);
	char key[BN_KEY_LEN + 1];
	MDB_txn *txn;
	MDB_val k = {BN_KEY_LEN, key}, v;
	int rc = mdb_txn_begin(r->r_env, NULL, MDB_RDONLY, &txn);

	for (uint32_t n = 0; rc == 0 && n < r->r_recs; n++) {
		bn_key(first + n, key);
		rc = mdb_get(txn, r->r_dbi, &k, &v);
		if (rc == 0)
			memcpy(buf, v.mv_data, v.mv_size);
	}
	if (rc == 0)
		mdb_txn_abort(txn);
	return bn_mdb(rc);
}

/* One read txn walking r_recs records with a cursor from a random key,
 * each record's key and value copied out (to buf, BN_RAW_NEXT_BUF bytes),
 * as the caller-buffer NEXT does. */
static int bn_raw_next(struct bn_raw *r, uint64_t *rnd, uint64_t i,
		       void *buf)
{
	char key[BN_KEY_LEN + 1];
	uint8_t *out = buf;
	MDB_txn *txn;
	MDB_cursor *c;
	MDB_val k = {BN_KEY_LEN, key}, v;
	int rc = mdb_txn_begin(r->r_env, NULL, MDB_RDONLY, &txn);

	bn_key(bn_rand(rnd) % r->r_loaded, key);
	if (rc == 0)
		rc = mdb_cursor_open(txn, r->r_dbi, &c);
	if (rc == 0) {
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		for (uint32_t n = 0; rc == 0 && n < r->r_recs; n++) {
			memcpy(out, k.mv_data, k.mv_size);
			memcpy(out + BN_KEY_LEN, v.mv_data, v.mv_size);
			out += BN_KEY_LEN + BN_VAL_LEN;
			if (n + 1 < r->r_recs)
				rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		rc = rc == MDB_NOTFOUND ? 0 : rc;
		mdb_cursor_close(c);
		mdb_txn_abort(txn);
	}
	return bn_mdb(rc);
}

/* ------------------------------------------------------------- setup */

static struct clovis_obj bn_obj4k[2], bn_obj1m[2];   /* [flash, nvram] */
static struct clovis_idx bn_idx;
static int bn_raw_fd = -1;
static MDB_env *bn_env;
static MDB_dbi bn_dbi;

void bn_obj_create_attr(struct clovis_obj *o, uint64_t n,
			const struct clovis_obj_attr *a)
{
	struct clovis_id id = {BN_HI, n};
	struct clovis_op *op = NULL;

	bn_check(clovis_obj_init(o, clovis_default_realm(bn_cl), &id, a),
		 "obj init");
	bn_check(clovis_entity_op(&o->ob_entity, CLOVIS_EO_CREATE, &op),
		 "obj create");
	bn_check(clovis_op_sync(op), "obj create");
}

void bn_obj_open(struct clovis_obj *o, uint64_t n)
{
	struct clovis_id id = {BN_HI, n};
	struct clovis_op *op = NULL;

	bn_check(clovis_obj_init(o, clovis_default_realm(bn_cl), &id, NULL),
		 "obj init");
	bn_check(clovis_entity_op(&o->ob_entity, CLOVIS_EO_OPEN, &op),
		 "obj open");
	bn_check(clovis_op_sync(op), "obj open");
}

/* Create plain object n with block shift and tier. */
static void bn_obj_create(struct clovis_obj *o, uint64_t n, uint32_t shift,
			  uint32_t tier)
{
	struct clovis_obj_attr a = {.oa_block_shift = shift,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN,
				    .oa_tier = tier};

	bn_obj_create_attr(o, n, &a);
}

void bn_obj_prefill(struct clovis_obj *o, uint64_t blks)
{
	static struct bn_job j;
	uint32_t shift = o->ob_attr.oa_block_shift;

	j = (struct bn_job){.j_make = bn_make_seq_write, .j_qd = 8,
			    .j_obj = o, .j_blks = blks, .j_stop = blks,
			    .j_chunk = shift < 20 ? 1u << (20 - shift) : 1};
	bn_run_for(&j, 600);
	bn_job_fini(&j);
	memset(&j, 0, sizeof j);
}

void bn_store_open(const char *path, const char *conf, uint32_t flags)
{
	struct clovis_conf cc = {0};

	cc.cc_data_dir = path;
	cc.cc_flags = flags;
	cc.cc_config = conf;
	bn_check(clovis_init(&bn_cl, &cc), path);
}

/* Create index 100 of the default realm of bn_cl as bn_idx. */
static void bn_idx_create(void)
{
	struct clovis_id iid = {BN_HI, 100};
	struct clovis_op *op = NULL;

	bn_check(clovis_idx_init(&bn_idx, clovis_default_realm(bn_cl), &iid),
		 "idx init");
	bn_check(clovis_entity_op(&bn_idx.in_entity, CLOVIS_EO_CREATE, &op),
		 "idx create");
	bn_check(clovis_op_sync(op), "idx create");
}

/* Open the store (made fresh) with its objects and index. */
static void bn_store_setup(void)
{
	char path[600];

	snprintf(path, sizeof path, "%s/store", bn_dir);
	(void)clovis_store_destroy(path);
	bn_store_open(path, NULL, CLOVIS_CONF_CREATE);
	bn_obj_create(&bn_obj4k[0], 1, 12, CLOVIS_TIER_FLASH);
	bn_obj_create(&bn_obj4k[1], 2, 12, CLOVIS_TIER_NVRAM);
	bn_obj_create(&bn_obj1m[0], 3, 20, CLOVIS_TIER_FLASH);
	bn_obj_create(&bn_obj1m[1], 4, 20, CLOVIS_TIER_NVRAM);
	for (int t = 0; t < 2; t++) {
		if (bn_want("4k"))
			bn_obj_prefill(&bn_obj4k[t], BN_SMALL_BLKS);
		if (bn_want("1m"))
			bn_obj_prefill(&bn_obj1m[t], BN_BIG_BLKS);
	}
	bn_idx_create();
}

int bn_raw_file_make(const char *path, uint64_t len, int flags)
{
	void *buf = bn_alloc(1u << 20);
	int fd;

	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | flags, 0600);
	if (fd < 0 || posix_fallocate(fd, 0, (off_t)len) != 0)
		bn_check(-errno, path);
	for (uint64_t off = 0; off < len; off += 1u << 20) {
		size_t n = len - off < (1u << 20) ? len - off : 1u << 20;

		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
			bn_check(-errno, path);
	}
	if (fdatasync(fd) != 0)
		bn_check(-errno, path);
	free(buf);
	return fd;
}

/* Make the raw file: preallocated, written once, opened O_DIRECT. */
static void bn_raw_file_setup(void)
{
	char path[600];

	snprintf(path, sizeof path, "%s/raw.dat", bn_dir);
	bn_raw_fd = bn_raw_file_make(path, BN_RAW_SIZE, O_DIRECT);
}

/* Open an LMDB environment in directory path, emptied first, with flags
 * (0: durable commits, no MDB_NOSYNC nor MDB_NOMETASYNC), and its main
 * table. */
static void bn_lmdb_open(const char *path, unsigned flags, MDB_env **env,
			 MDB_dbi *dbi)
{
	char file[700];
	MDB_txn *txn;

	mkdir(path, 0755);
	snprintf(file, sizeof file, "%s/data.mdb", path);
	unlink(file);
	snprintf(file, sizeof file, "%s/lock.mdb", path);
	unlink(file);
	if (mdb_env_create(env) != 0 ||
	    mdb_env_set_mapsize(*env, 1ull << 30) != 0 ||
	    mdb_env_set_maxreaders(*env, 64) != 0 ||
	    mdb_env_open(*env, path, flags, 0644) != 0 ||
	    mdb_txn_begin(*env, NULL, 0, &txn) != 0 ||
	    mdb_dbi_open(txn, NULL, 0, dbi) != 0 ||
	    mdb_txn_commit(txn) != 0)
		bn_check(-EIO, path);
}

/* Close *env and remove its files and directory path. */
static void bn_lmdb_remove(const char *path, MDB_env **env)
{
	char file[700];

	mdb_env_close(*env);
	*env = NULL;
	snprintf(file, sizeof file, "%s/data.mdb", path);
	unlink(file);
	snprintf(file, sizeof file, "%s/lock.mdb", path);
	unlink(file);
	rmdir(path);
}

/* Raw LMDB (durable commits) in directory path, emptied first. */
static void bn_raw_lmdb_setup(const char *path)
{
	bn_lmdb_open(path, 0, &bn_env, &bn_dbi);
}

static void bn_raw_lmdb_remove(const char *path)
{
	bn_lmdb_remove(path, &bn_env);
}

/* -------------------------------------------------------- the figures */

/* A raw job over the raw file. */
static struct bn_raw bn_raw_file(int (*op)(struct bn_raw *, uint64_t *,
					   uint64_t, void *),
				 uint32_t threads, size_t len)
{
	return (struct bn_raw){.r_op = op, .r_threads = threads,
			       .r_fd = bn_raw_fd, .r_len = len,
			       .r_nr = BN_RAW_SIZE / len};
}

/*
 * The design's floor.  DESIGN.md key decision 2 puts, in series, on the
 * path of every write that reaches STABLE on the default store: the data
 * written and made durable (a device flush), then one LMDB transaction
 * that maps it, whose commit writes its pages and flushes them, then the
 * flush of its meta page.  The floor runs exactly those steps with nothing
 * of ours around them: O_DIRECT pwrite on the raw file, fdatasync, a raw
 * LMDB write txn (MDB_NOMETASYNC, as the store's) putting one mapping
 * record per block, commit, mdb_env_sync.  Its LMDB (DIR/raw-floor) holds
 * a record per block of the 4 KiB working set (BN_SMALL_BLKS), as ours
 * does; its records are smaller than ours and it has no space allocation
 * or object size to update, so the floor is, if anything, too fast.  The
 * 4 KiB floor puts its 16 writes in flight at once through Linux AIO
 * (io_submit) before the flush, as the best an engine could do with 16 in
 * flight.  The floor's own ratio to raw is the best ratio the design can
 * reach on this disk; ours against the floor is what our code costs.
 */
#define BN_FLOOR_BATCH 16u

static MDB_env *bn_fenv;
static MDB_dbi bn_fdbi;
static aio_context_t bn_aio;

/* Map block n (a 4 KiB block when small, else a 1 MiB block) in txn. */
static int bn_floor_map(MDB_txn *txn, uint64_t n, bool small)
{
	uint64_t key = __builtin_bswap64(n | (small ? 0 : 1ull << 62));
	uint8_t val[48] = {0};
	MDB_val k = {sizeof key, &key}, v = {sizeof val, val};

	memcpy(val, &n, sizeof n);
	return mdb_put(txn, bn_fdbi, &k, &v, 0);
}

/* Open the floor's LMDB at DIR/raw-floor, emptied, with a record per 4
 * KiB block of the working set. */
static void bn_floor_setup(void)
{
	char path[600];
	MDB_txn *txn;
	int rc;

	if (bn_fenv != NULL)
		return;
	snprintf(path, sizeof path, "%s/raw-floor", bn_dir);
	bn_lmdb_open(path, MDB_NOMETASYNC, &bn_fenv, &bn_fdbi);
	rc = mdb_txn_begin(bn_fenv, NULL, 0, &txn);
	for (uint64_t n = 0; rc == 0 && n < BN_SMALL_BLKS; n++)
		rc = bn_floor_map(txn, n, true);
	if (rc != 0 || mdb_txn_commit(txn) != 0 ||
	    mdb_env_sync(bn_fenv, 1) != 0)
		bn_check(-EIO, path);
	if (syscall(SYS_io_setup, BN_FLOOR_BATCH, &bn_aio) != 0)
		bn_check(-errno, "io_setup");
}

static void bn_floor_remove(void)
{
	char path[600];

	if (bn_fenv == NULL)
		return;
	syscall(SYS_io_destroy, bn_aio);
	snprintf(path, sizeof path, "%s/raw-floor", bn_dir);
	bn_lmdb_remove(path, &bn_fenv);
}

/* The LMDB half of a floor op: one txn mapping nr blocks, committed (its
 * pages written and flushed), its meta page flushed when meta. */
static int bn_floor_commit(const uint64_t *blk, uint32_t nr, bool small,
			   bool meta)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(bn_fenv, NULL, 0, &txn);

	for (uint32_t k = 0; rc == 0 && k < nr; k++)
		rc = bn_floor_map(txn, blk[k], small);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return bn_mdb(rc);
	}
	rc = mdb_txn_commit(txn);
	if (rc == 0 && meta)
		rc = mdb_env_sync(bn_fenv, 1);
	return bn_mdb(rc);
}

/* 1 MiB floor op: write, flush, map, flush pages, flush meta. */
static int bn_floor_1m(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf)
{
	uint64_t blk = i % r->r_nr;

	if (pwrite(r->r_fd, buf, r->r_len, (off_t)(blk * r->r_len)) !=
	    (ssize_t)r->r_len || fdatasync(r->r_fd) != 0)
		return -1;
	return bn_floor_commit(&blk, 1, false, true);
}

/* 1 MiB with one flush: the write, then one commit whose page flush is the
 * only one (no data flush before it, no meta flush after).  Not safe as
 * it stands: the floor of a design with one flush per write (a redo log
 * written beside the data, the LMDB meta page made durable later), before
 * the checksum of the data such a log needs to tell a torn unit after a
 * crash. */
static int bn_floor_1m_one(struct bn_raw *r, uint64_t *rnd, uint64_t i,
			   void *buf)
{
	uint64_t blk = i % r->r_nr;

	if (pwrite(r->r_fd, buf, r->r_len, (off_t)(blk * r->r_len)) !=
	    (ssize_t)r->r_len)
		return -1;
	return bn_floor_commit(&blk, 1, false, false);
}

/* 4 KiB floor op: BN_FLOOR_BATCH random writes in flight at once, one
 * flush, one txn mapping them all, its pages and meta flushed. */
static int bn_floor_4k(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf)
{
	struct iocb cb[BN_FLOOR_BATCH], *cp[BN_FLOOR_BATCH];
	struct io_event ev[BN_FLOOR_BATCH];
	uint64_t blk[BN_FLOOR_BATCH];
	long got = 0, n;

	memset(cb, 0, sizeof cb);
	for (uint32_t k = 0; k < BN_FLOOR_BATCH; k++) {
		blk[k] = bn_rand(rnd) % BN_SMALL_BLKS;
		cb[k].aio_fildes = (uint32_t)r->r_fd;
		cb[k].aio_lio_opcode = IOCB_CMD_PWRITE;
		cb[k].aio_buf = (uint64_t)(uintptr_t)buf;
		cb[k].aio_nbytes = r->r_len;
		cb[k].aio_offset = (int64_t)(blk[k] * r->r_len);
		cp[k] = &cb[k];
	}
	if (syscall(SYS_io_submit, bn_aio, (long)BN_FLOOR_BATCH, cp) !=
	    (long)BN_FLOOR_BATCH)
		return -1;
	while (got < (long)BN_FLOOR_BATCH) {
		n = syscall(SYS_io_getevents, bn_aio, 1L,
			    (long)BN_FLOOR_BATCH, ev, NULL);
		if (n < 0 && errno != EINTR)
			return -1;
		for (long k = 0; k < n; k++)
			if (ev[k].res != (int64_t)r->r_len) {
				errno = ev[k].res < 0 ? (int)-ev[k].res : EIO;
				return -1;
			}
		got += n > 0 ? n : 0;
	}
	if (fdatasync(r->r_fd) != 0)
		return -1;
	return bn_floor_commit(blk, BN_FLOOR_BATCH, true, true);
}

/*
 * The 4 KiB figures keep qd ops in flight as an application with qd
 * independent requests would (as the raw side's qd threads do): an op is
 * made again as soon as it is STABLE, in the order ops finish.  (bn_run
 * waits for the slots in launch order, so an op already STABLE sits
 * behind one still in flight and fewer than qd are in flight.)  The STABLE
 * and FAILED callbacks put the slot in bn_fin; this thread takes slots
 * from it, checks the outcome with clovis_op_wait() and relaunches.
 */
static struct {
	pthread_mutex_t f_lock;
	pthread_cond_t f_cond;
	uint32_t f_slot[BN_QD_MAX];
	uint32_t f_head, f_nr;
} bn_fin = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0};

/* STABLE or FAILED callback: queue the op's slot (its datum, index + 1). */
static void bn_fin_cb(struct clovis_op *op)
{
	uint32_t i = (uint32_t)(uintptr_t)clovis_op_datum(op) - 1;

	pthread_mutex_lock(&bn_fin.f_lock);
	bn_fin.f_slot[(bn_fin.f_head + bn_fin.f_nr) % BN_QD_MAX] = i;
	bn_fin.f_nr++;
	pthread_cond_signal(&bn_fin.f_cond);
	pthread_mutex_unlock(&bn_fin.f_lock);
}

/* The next finished slot; fails the run after 60 s with none. */
static uint32_t bn_fin_take(void)
{
	struct timespec dl;
	uint32_t i;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 60;
	pthread_mutex_lock(&bn_fin.f_lock);
	while (bn_fin.f_nr == 0)
		if (pthread_cond_timedwait(&bn_fin.f_cond, &bn_fin.f_lock,
					   &dl) != 0)
			bn_check(-ETIMEDOUT, "no op finished in 60 s");
	i = bn_fin.f_slot[bn_fin.f_head];
	bn_fin.f_head = (bn_fin.f_head + 1) % BN_QD_MAX;
	bn_fin.f_nr--;
	pthread_mutex_unlock(&bn_fin.f_lock);
	return i;
}

/* Make and launch the op of slot i, its callbacks reporting to bn_fin. */
static void bn_launch_any(struct bn_job *j, uint32_t i)
{
	static const struct clovis_op_cbs cbs = {.oc_stable = bn_fin_cb,
						 .oc_failed = bn_fin_cb};
	struct bn_slot *s = &j->j_slots[i];

	bn_check(j->j_make(j, s), "op");
	bn_check(clovis_op_setup(s->s_op, &cbs, (void *)(uintptr_t)(i + 1)),
		 "op setup");
	j->j_made++;
	s->s_t0 = bn_now();
	bn_check(clovis_op_launch(&s->s_op, 1), "launch");
}

/* bn_run(), relaunching ops in the order they finish.  Ops/s. */
static double bn_run_any(struct bn_job *j)
{
	uint64_t done = 0, made = 0;
	double t0 = bn_now(), end = t0 + bn_secs;

	for (uint32_t n = 0; n < j->j_qd && bn_more(j, end); n++, made++)
		bn_launch_any(j, n);
	while (done < made) {
		uint32_t i = bn_fin_take();
		struct bn_slot *s = &j->j_slots[i];

		bn_check(clovis_op_wait(s->s_op, CLOVIS_OS_STABLE,
					CLOVIS_TIME_NEVER), "wait");
		bn_lat_keep(j, s);
		clovis_op_free(s->s_op);
		done++;
		if (bn_more(j, end)) {
			bn_launch_any(j, i);
			made++;
		}
	}
	return done / (bn_now() - t0);
}

/* Ours for an object job of the given kind; any: each op relaunched as
 * soon as it finishes (bn_run_any), else in launch order (bn_run). */
static double bn_ours_obj_how(int (*make)(struct bn_job *, struct bn_slot *),
			      struct clovis_obj *o, uint32_t qd,
			      uint64_t blks, bool any)
{
	static struct bn_job j;
	double r;

	memset(&j, 0, sizeof j);
	j = (struct bn_job){.j_make = make, .j_qd = qd, .j_obj = o,
			    .j_blks = blks, .j_rand = 0x2545f4914f6cdd1dull};
	r = any ? bn_run_any(&j) : bn_run(&j);
	bn_job_fini(&j);
	return r;
}

static double bn_ours_obj(int (*make)(struct bn_job *, struct bn_slot *),
			  struct clovis_obj *o, uint32_t qd, uint64_t blks)
{
	return bn_ours_obj_how(make, o, qd, blks, false);
}

static double bn_ours_obj_any(int (*make)(struct bn_job *, struct bn_slot *),
			      struct clovis_obj *o, uint32_t qd, uint64_t blks)
{
	return bn_ours_obj_how(make, o, qd, blks, true);
}

/*
 * Alternated rounds.  The disk behind the flash figures is shared (other
 * virtual machines, other processes): its speed moves by 2-10x within
 * minutes, and a figure whose two sides were measured a few seconds apart
 * took that swing as its ratio (one 1m_seqwrite_flash run gave 5.06, the
 * next 0.43).  So the 4k and 1m figures are measured in bn_rounds rounds,
 * each side for bn_secs / bn_rounds per round in the same order every
 * round; a figure is the median of each side, its ratio the median of the
 * rounds' own ratios (each round's two sides a few hundred milliseconds
 * apart), with their range.
 */
struct bn_rr {
	double r_ours[BN_ROUNDS_MAX], r_raw[BN_ROUNDS_MAX];
	uint32_t r_nr;
};

/* One round's two sides; a round whose raw side did nothing (a stalled
 * disk: 0 ops in the slice) has no ratio and is left out. */
static void bn_rr_put(struct bn_rr *a, double ours, double raw)
{
	if (raw <= 0)
		return;
	a->r_ours[a->r_nr] = ours;
	a->r_raw[a->r_nr++] = raw;
}

/* Add the figure measured in the rounds of a. */
static void bn_fig_add_rr(const char *name, struct bn_rr *a,
			  const char *unit, uint32_t qd, const char *emu)
{
	double q[BN_ROUNDS_MAX];
	struct bn_fig *f;

	if (a->r_nr == 0)
		bn_check(-EIO, "a figure's raw side did nothing in every round");
	for (uint32_t k = 0; k < a->r_nr; k++)
		q[k] = a->r_ours[k] / a->r_raw[k];
	bn_fig_add(name, bn_median(a->r_ours, a->r_nr),
		   bn_median(a->r_raw, a->r_nr), unit, qd, 1, emu);
	f = &bn_figs[bn_nr_figs - 1];
	f->f_rounds = a->r_nr;
	f->f_ratio = bn_median(q, a->r_nr); /* sorts q */
	f->f_rmin = q[0];
	f->f_rmax = q[a->r_nr - 1];
}

/* The four figures W_flash, W_nvram, R_flash, R_nvram of q (that order). */
static void bn_fig_add_quad(const char *w, const char *r, struct bn_rr q[4],
			    const char *unit, uint32_t qd)
{
	static const char *const emu[2] = {BN_EMU_DISK, BN_EMU_SHM};
	static const char *const dev[2] = {"flash", "nvram"};
	char name[BN_NAME_LEN];

	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "%s_%s", i < 2 ? w : r,
			 dev[i % 2]);
		bn_fig_add_rr(name, &q[i], unit, qd, emu[i % 2]);
	}
}

/* One round of a flash and an NVRAM figure beside one raw job: ours on
 * o[0], the raw job, ours on o[1], each for bn_secs.  Returns ours on
 * o[0]. */
static double bn_rr_pair(struct bn_rr *f, struct bn_rr *n, struct bn_raw *raw,
		       int (*make)(struct bn_job *, struct bn_slot *),
		       struct clovis_obj o[2], uint32_t qd, uint64_t blks,
		       bool any)
{
	double a = bn_ours_obj_how(make, &o[0], qd, blks, any);
	double r = bn_raw_run(raw);

	bn_rr_put(f, a, r);
	bn_rr_put(n, bn_ours_obj_how(make, &o[1], qd, blks, any), r);
	return a;
}

/* (a) and (c): 4 KiB random blocks, in alternated rounds; the goal's
 * figure pairs each round's flash writes with a raw one-at-a-time run
 * right after that round's writes. */
static void bn_fig_4k(void)
{
	struct bn_raw rw = bn_raw_file(bn_raw_rand_write, 16, 4096);
	struct bn_raw rr = bn_raw_file(bn_raw_rand_read, 16, 4096);
	struct bn_raw r1 = bn_raw_file(bn_raw_rand_write, 1, 4096);
	struct bn_raw fl = bn_raw_file(bn_floor_4k, 1, 4096);
	struct bn_rr q[4] = {0}, st = {0};  /* write, read x flash, nvram */
	struct bn_rr fr = {0}, fo = {0};    /* floor / raw, ours / floor */
	double secs = bn_secs;

	bn_floor_setup();
	fl.r_nr = BN_SMALL_BLKS;
	bn_secs = secs / bn_rounds;
	for (unsigned k = 0; k < bn_rounds; k++) {
		double f = bn_rr_pair(&q[0], &q[1], &rw, bn_make_rand_write,
				      bn_obj4k, 16, BN_SMALL_BLKS, true);
		double one = bn_raw_run(&r1);
		double flo = bn_raw_run(&fl) * BN_FLOOR_BATCH;

		bn_rr_put(&st, f, one);
		bn_rr_put(&fr, flo, one);
		bn_rr_put(&fo, f, flo);
		bn_rr_pair(&q[2], &q[3], &rr, bn_make_rand_read, bn_obj4k,
			   16, BN_SMALL_BLKS, false);
	}
	bn_secs = secs;
	bn_fig_add_quad("4k_randwrite", "4k_randread", q, "IOPS", 16);
	bn_fig_add_rr("4k_stable_qd16_vs_sync_qd1", &st, "IOPS", 16,
		      BN_EMU_DISK);
	bn_fig_add_rr("floor_4k_qd16_vs_sync_qd1", &fr, "IOPS", 16,
		      BN_EMU_DISK "; the design's floor, raw");
	bn_fig_add_rr("floor_4k_ours_vs_floor", &fo, "IOPS", 16,
		      BN_EMU_DISK "; ours / the design's floor");
}

/* (b): 1 MiB sequential, one at a time, in alternated rounds. */
static void bn_fig_1m(void)
{
	struct bn_raw rw = bn_raw_file(bn_raw_seq_write, 1, 1u << 20);
	struct bn_raw rr = bn_raw_file(bn_raw_seq_read, 1, 1u << 20);
	struct bn_raw fl = bn_raw_file(bn_floor_1m, 1, 1u << 20);
	struct bn_raw f1 = bn_raw_file(bn_floor_1m_one, 1, 1u << 20);
	struct bn_rr q[4] = {0};  /* write, read x flash, nvram */
	struct bn_rr fr = {0}, fo = {0};    /* floor / raw, ours / floor */
	struct bn_rr f1r = {0};             /* one-flush floor / raw */
	double secs = bn_secs;

	bn_floor_setup();
	bn_secs = secs / bn_rounds;
	for (unsigned k = 0; k < bn_rounds; k++) {
		double o = bn_ours_obj(bn_make_seq_write, &bn_obj1m[0], 1,
				       BN_BIG_BLKS);
		double r = bn_raw_run(&rw);
		double flo = bn_raw_run(&fl);

		bn_rr_put(&q[0], o, r);
		bn_rr_put(&q[1], bn_ours_obj(bn_make_seq_write, &bn_obj1m[1],
					     1, BN_BIG_BLKS), r);
		bn_rr_put(&fr, flo, r);
		bn_rr_put(&fo, o, flo);
		bn_rr_put(&f1r, bn_raw_run(&f1), r);
		bn_rr_pair(&q[2], &q[3], &rr, bn_make_seq_read, bn_obj1m, 1,
			   BN_BIG_BLKS, false);
	}
	bn_secs = secs;
	bn_fig_add_quad("1m_seqwrite", "1m_seqread", q, "MiB/s", 1);
	bn_fig_add_rr("floor_1m_write_vs_raw", &fr, "MiB/s", 1,
		      BN_EMU_DISK "; the design's floor, raw");
	bn_fig_add_rr("floor_1m_ours_vs_floor", &fo, "MiB/s", 1,
		      BN_EMU_DISK "; ours / the design's floor");
	bn_fig_add_rr("floor_1m_oneflush_vs_raw", &f1r, "MiB/s", 1,
		      BN_EMU_DISK "; one flush per write, raw");
}

/* Our index job state: keys PUT so far. */
static uint64_t bn_idx_keys;

/* Ours for an index job; returns records per second. */
static double bn_ours_idx(int (*make)(struct bn_job *, struct bn_slot *),
			  void (*done)(struct bn_job *, struct bn_slot *),
			  uint32_t qd, uint32_t recs, uint64_t stop)
{
	static struct bn_job j;
	double r;

	memset(&j, 0, sizeof j);
	j = (struct bn_job){.j_make = make, .j_done = done, .j_qd = qd,
			    .j_recs = recs, .j_idx = &bn_idx,
			    .j_next = bn_idx_keys, .j_keys = bn_idx_keys,
			    .j_stop = stop, .j_rand = 0x9e3779b97f4a7c15ull};
	r = bn_run_for(&j, stop != 0 ? 600 : bn_secs) * recs;
	if (make == bn_make_put)
		bn_idx_keys = j.j_next;
	return r;
}

/* One application thread of bn_ours_idx_threads: its own job, qd 1. */
struct bn_idx_thr {
	struct bn_job t_job;
	double t_rate;              /* ops per second */
};

static void *bn_idx_thread(void *arg)
{
	struct bn_idx_thr *t = arg;

	t->t_rate = bn_run_for(&t->t_job, bn_secs);
	return NULL;
}

/*
 * Ours for a GET or NEXT job with qd ops in flight from qd application
 * threads, each launching one op and waiting for it (as raw LMDB runs qd
 * threads, one read txn each): records per second, summed.
 */
static double bn_ours_idx_threads(int (*make)(struct bn_job *,
					      struct bn_slot *),
				  void (*done)(struct bn_job *,
					       struct bn_slot *),
				  uint32_t qd, uint32_t recs)
{
	struct bn_idx_thr *ts = calloc(qd, sizeof *ts);
	pthread_t tids[BN_QD_MAX];
	double sum = 0;

	if (ts == NULL)
		bn_check(-ENOMEM, "jobs");
	for (uint32_t t = 0; t < qd; t++) {
		ts[t].t_job = (struct bn_job){
			.j_make = make, .j_done = done, .j_qd = 1,
			.j_recs = recs, .j_idx = &bn_idx,
			.j_next = bn_idx_keys, .j_keys = bn_idx_keys,
			.j_rand = 0x9e3779b97f4a7c15ull * (t + 1)};
		pthread_create(&tids[t], NULL, bn_idx_thread, &ts[t]);
	}
	for (uint32_t t = 0; t < qd; t++) {
		pthread_join(tids[t], NULL);
		sum += ts[t].t_rate * recs;
		bn_job_fini(&ts[t].t_job);
	}
	free(ts);
	return sum;
}

/*
 * Ours for a GET or NEXT job from one thread, qd ops made and launched
 * together as one array (clovis_op_launch(ops, qd): they go to the worker
 * threads, none inline), then waited for: records per second.
 */
static double bn_ours_idx_array(int (*make)(struct bn_job *,
					    struct bn_slot *),
				void (*done)(struct bn_job *,
					     struct bn_slot *),
				uint32_t qd, uint32_t recs)
{
	static struct bn_job j;
	struct clovis_op *ops[BN_QD_MAX];
	double t0 = bn_now(), end = t0 + bn_secs;
	uint64_t n = 0;

	memset(&j, 0, sizeof j);
	j = (struct bn_job){.j_make = make, .j_done = done, .j_qd = qd,
			    .j_recs = recs, .j_idx = &bn_idx,
			    .j_next = bn_idx_keys, .j_keys = bn_idx_keys,
			    .j_rand = 0x9e3779b97f4a7c15ull};
	while (bn_now() < end) {
		for (uint32_t i = 0; i < qd; i++) {
			bn_check(make(&j, &j.j_slots[i]), "op");
			ops[i] = j.j_slots[i].s_op;
		}
		bn_check(clovis_op_launch(ops, qd), "launch");
		for (uint32_t i = 0; i < qd; i++) {
			bn_check(clovis_op_wait(ops[i], CLOVIS_OS_STABLE,
						CLOVIS_TIME_NEVER), "wait");
			done(&j, &j.j_slots[i]);
			clovis_op_free(ops[i]);
		}
		n += qd;
	}
	bn_job_fini(&j);
	return (double)n * recs / (bn_now() - t0);
}

/* Keys PUT into raw LMDB so far. */
static uint64_t bn_raw_keys;

/* Raw LMDB for an index job; returns records per second. */
static double bn_raw_idx(int (*op)(struct bn_raw *, uint64_t *, uint64_t,
				   void *),
			 uint32_t threads, uint32_t recs)
{
	struct bn_raw r = {.r_op = op, .r_threads = threads,
			   .r_len = BN_REC_MAX * (BN_KEY_LEN + BN_VAL_LEN),
			   .r_env = bn_env, .r_dbi = bn_dbi, .r_recs = recs,
			   .r_loaded = bn_raw_keys};
	double rate;

	atomic_store(&r.r_keys, bn_raw_keys);
	rate = bn_raw_run(&r) * recs;
	bn_raw_keys = atomic_load(&r.r_keys);
	return rate;
}

/* Load BN_PRELOAD records on both sides (raw: one transaction). */
static void bn_idx_preload(void)
{
	struct bn_raw r = {.r_op = bn_raw_put, .r_threads = 1, .r_len = 64,
			   .r_env = bn_env, .r_dbi = bn_dbi,
			   .r_recs = BN_PRELOAD};
	void *buf = bn_alloc(BN_ALIGN);

	bn_ours_idx(bn_make_put, bn_done_recs, 16, BN_REC_MAX, BN_PRELOAD);
	atomic_store(&r.r_keys, 0);
	if (bn_raw_put(&r, NULL, 0, buf) != 0)
		bn_check(-EIO, "raw preload");
	bn_raw_keys = BN_PRELOAD;
	free(buf);
}

/* One index figure: ours and raw LMDB at qd ops in flight of recs. */
static void bn_fig_idx1(const char *name, int kind, uint32_t qd,
			uint32_t recs)
{
	static int (*const make[4])(struct bn_job *, struct bn_slot *) = {
		bn_make_put, bn_make_get, bn_make_next_into, bn_make_next};
	static void (*const done[4])(struct bn_job *, struct bn_slot *) = {
		bn_done_recs, bn_done_recs, bn_done_next_into, bn_done_next};
	static int (*const raw[4])(struct bn_raw *, uint64_t *, uint64_t,
				   void *) = {bn_raw_put, bn_raw_get,
					      bn_raw_next, bn_raw_next};
	double ours = bn_ours_idx(make[kind], done[kind], qd, recs, 0);

	bn_fig_add(name, ours, bn_raw_idx(raw[kind], qd, recs), "records/s",
		   qd, recs, BN_EMU_LMDB);
}

/*
 * GET (kind 1) or NEXT (2) with 16 in flight, three ways against the same
 * raw LMDB side (16 threads, one read txn each):
 *   NAME           16 application threads, each launching one op and
 *                  waiting (the op runs inline in its thread, on either
 *                  core), the same threads as raw;
 *   NAME_1thr      one thread keeping 16 launched one by one (each runs
 *                  inline in that thread: one core);
 *   NAME_array     one thread launching arrays of 16 and waiting for all
 *                  (the ops go to the worker threads).
 */
static void bn_fig_idx16(const char *name, int kind)
{
	static int (*const make[3])(struct bn_job *, struct bn_slot *) = {
		NULL, bn_make_get, bn_make_next_into};
	static void (*const done[3])(struct bn_job *, struct bn_slot *) = {
		NULL, bn_done_recs, bn_done_next_into};
	int (*raw)(struct bn_raw *, uint64_t *, uint64_t, void *) =
		kind == 1 ? bn_raw_get : bn_raw_next;
	char n1[64], n2[64];
	double thr, one, arr;

	snprintf(n1, sizeof n1, "%s_1thr", name);
	snprintf(n2, sizeof n2, "%s_array", name);
	thr = bn_ours_idx_threads(make[kind], done[kind], 16, 1);
	bn_fig_add(name, thr, bn_raw_idx(raw, 16, 1), "records/s", 16, 1,
		   BN_EMU_LMDB);
	one = bn_ours_idx(make[kind], done[kind], 16, 1, 0);
	bn_fig_add(n1, one, bn_raw_idx(raw, 16, 1), "records/s", 16, 1,
		   BN_EMU_LMDB);
	arr = bn_ours_idx_array(make[kind], done[kind], 16, 1);
	bn_fig_add(n2, arr, bn_raw_idx(raw, 16, 1), "records/s", 16, 1,
		   BN_EMU_LMDB);
}

/*
 * Index figures of group metanv, names with suffix "_metanv": PUT, GET and
 * NEXT (caller buffers) in the three shapes of group idx; at 16 in flight
 * GET and NEXT from 16 application threads (the figure of group idx, not
 * its _1thr and _array variants).  Raw: LMDB on the same tmpfs.
 */
static void bn_fig_idx_metanv(void)
{
	static const struct {
		const char *name;
		int kind;
		uint32_t qd, recs;
	} f[] = {
		{"idx_put_qd1_r1_metanv", 0, 1, 1},
		{"idx_put_qd16_r1_metanv", 0, 16, 1},
		{"idx_put_qd1_r64_metanv", 0, 1, 64},
		{"idx_get_qd1_r1_metanv", 1, 1, 1},
		{"idx_get_qd16_r1_metanv", 1, 16, 1},
		{"idx_get_qd1_r64_metanv", 1, 1, 64},
		{"idx_next_qd1_r1_metanv", 2, 1, 1},
		{"idx_next_qd16_r1_metanv", 2, 16, 1},
		{"idx_next_qd1_r64_metanv", 2, 1, 64},
	};
	static int (*const make[3])(struct bn_job *, struct bn_slot *) = {
		bn_make_put, bn_make_get, bn_make_next_into};
	static void (*const done[3])(struct bn_job *, struct bn_slot *) = {
		bn_done_recs, bn_done_recs, bn_done_next_into};
	static int (*const raw[3])(struct bn_raw *, uint64_t *, uint64_t,
				   void *) = {bn_raw_put, bn_raw_get,
					      bn_raw_next};

	bn_idx_keys = 0;
	bn_raw_keys = 0;
	bn_idx_preload();
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		int k = f[i].kind;
		double ours = k != 0 && f[i].qd > 1 ?
			bn_ours_idx_threads(make[k], done[k], f[i].qd,
					    f[i].recs) :
			bn_ours_idx(make[k], done[k], f[i].qd, f[i].recs, 0);

		bn_fig_add(f[i].name, ours,
			   bn_raw_idx(raw[k], f[i].qd, f[i].recs),
			   "records/s", f[i].qd, f[i].recs, BN_EMU_LMDB_SHM);
	}
}

/* (d): index PUT, GET, NEXT at 1 and 16 in flight, and 64 per op. */
static void bn_fig_idx(void)
{
	bn_idx_preload();
	bn_fig_idx1("idx_put_qd1_r1", 0, 1, 1);
	bn_fig_idx1("idx_put_qd16_r1", 0, 16, 1);
	bn_fig_idx1("idx_put_qd1_r64", 0, 1, 64);
	bn_fig_idx1("idx_get_qd1_r1", 1, 1, 1);
	bn_fig_idx16("idx_get_qd16_r1", 1);
	bn_fig_idx1("idx_get_qd1_r64", 1, 1, 64);
	bn_fig_idx1("idx_next_qd1_r1", 2, 1, 1);
	bn_fig_idx16("idx_next_qd16_r1", 2);
	bn_fig_idx1("idx_next_qd1_r64", 2, 1, 64);
	bn_fig_idx1("idx_next_malloc_qd1_r64", 3, 1, 64);
}

/* ------------------------------------------------------------- output */

/* The goal ratio of a figure (0: none). */
static double bn_goal(const char *name)
{
	if (strncmp(name, "1m_", 3) == 0)
		return 0.8;
	if (strncmp(name, "4k_stable_qd16_vs_sync_qd1", 26) == 0)
		return 3.0;
	if (strncmp(name, "idx_put", 7) == 0)
		return 0.5;
	if (strncmp(name, "idx_", 4) == 0)
		return 0.7;
	if (strncmp(name, "ec_write_", 9) == 0)
		return 0.75;
	if (strncmp(name, "ec_read_", 8) == 0 && strstr(name, "_fail") != NULL)
		return 0.5;
	return 0;
}

/* A figure's ratio: the median of its rounds' ratios when it was
 * measured in alternated rounds, else ours / raw. */
static double bn_ratio(const struct bn_fig *f)
{
	return f->f_rounds > 0 ? f->f_ratio : f->f_ours / f->f_raw;
}

/* Whether a figure's ratio is "lower is better" (latencies). */
static bool bn_lower_better(const struct bn_fig *f)
{
	return strcmp(f->f_unit, "us p50") == 0;
}

static void bn_print_json(void)
{
	printf("[\n");
	for (unsigned i = 0; i < bn_nr_figs; i++) {
		const struct bn_fig *f = &bn_figs[i];
		double g = bn_goal(f->f_name), ratio = bn_ratio(f);

		printf("  {\"name\": \"%s\", \"ours\": %.1f, \"raw\": %.1f, "
		       "\"ratio\": %.3f, \"unit\": \"%s\", \"in_flight\": %u, "
		       "\"records_per_op\": %u, \"emulation\": \"%s\", "
		       "\"lower_is_better\": %s, ", f->f_name,
		       f->f_ours, f->f_raw, ratio, f->f_unit,
		       f->f_qd, f->f_recs, f->f_emu,
		       bn_lower_better(f) ? "true" : "false");
		if (f->f_rounds > 0)
			printf("\"rounds\": %u, \"ratio_min\": %.3f, "
			       "\"ratio_max\": %.3f, ", f->f_rounds, f->f_rmin,
			       f->f_rmax);
		printf("\"goal\": ");
		if (g > 0)
			printf("%.2f, \"met\": %s}", g,
			       ratio >= g ? "true" : "false");
		else
			printf("null, \"met\": null}");
		printf("%s\n", i + 1 < bn_nr_figs ? "," : "");
	}
	printf("]\n");
}

static void bn_print_table(void)
{
	printf("%-32s %11s %11s %7s  %-9s %-14s %s\n", "name", "ours", "raw",
	       "ratio", "unit", "goal", "emulation");
	for (unsigned i = 0; i < bn_nr_figs; i++) {
		const struct bn_fig *f = &bn_figs[i];
		double g = bn_goal(f->f_name), ratio = bn_ratio(f);
		char goal[32] = "";

		if (g > 0)
			snprintf(goal, sizeof goal, ">=%.2f %s", g,
				 ratio >= g ? "met" : "NOT");
		printf("%-32s %11.1f %11.1f %7.2f  %-9s %-14s %s", f->f_name,
		       f->f_ours, f->f_raw, ratio, f->f_unit, goal, f->f_emu);
		if (f->f_rounds > 0)
			printf("; median of %u alternated rounds, ratios "
			       "%.2f-%.2f", f->f_rounds, f->f_rmin, f->f_rmax);
		printf("\n");
	}
}

/* Describe the devices of the open store. */
static void bn_print_devs(FILE *out)
{
	struct clovis_dev_info info[32];
	uint32_t nr = 32;

	if (clovis_dev_list(bn_cl, info, &nr) != 0)
		return;
	for (uint32_t i = 0; i < nr && i < 32; i++)
		fprintf(out, "# device %u: tier %u, driver %s, direct I/O %s, "
			"%llu MiB, %s\n", info[i].di_index, info[i].di_tier,
			info[i].di_driver, info[i].di_direct_io ? "yes" : "no",
			(unsigned long long)(info[i].di_size_bytes >> 20),
			info[i].di_path);
}

/* Describe the setup (stderr in JSON mode, so stdout stays JSON). */
static void bn_print_setup(void)
{
	FILE *out = bn_json ? stderr : stdout;

	fprintf(out, "# strata_bench: %s, %.1f s per figure, NVRAM emulated "
		"on /dev/shm (tmpfs) through PMDK\n", bn_dir, bn_secs);
	fprintf(out, "# 4k and 1m figures: %u alternated rounds of %.2f s "
		"per side; medians, ratio = median of the rounds' ratios\n",
		bn_rounds, bn_secs / bn_rounds);
	fprintf(out, "# store 1 (issue-2 figures), the built-in default "
		"configuration:\n");
	bn_print_devs(out);
	fprintf(out, "# raw: O_DIRECT file %s/raw.dat, LMDB %s/raw-lmdb "
		"(durable commits)\n", bn_dir, bn_dir);
}

/* Parse the command line; returns 0 or prints usage and returns 2. */
static int bn_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			bn_json = true;
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			snprintf(bn_dir, sizeof bn_dir, "%s", argv[++i]);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			bn_secs = strtod(argv[++i], NULL);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
			char *end;
			unsigned long k = strtoul(argv[++i], &end, 10);

			if (*end != '\0' || end == argv[i] ||
			    k > BN_ROUNDS_MAX)
				goto usage;
			bn_rounds = (unsigned)k;
		}
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			bn_only = argv[++i];
		else if (strcmp(argv[i], "--figs") == 0 && i + 1 < argc)
			bn_sel = argv[++i];
		else
			goto usage;
	}
	if (bn_only != NULL && strcmp(bn_only, "store1") != 0 &&
	    strcmp(bn_only, "store2") != 0)
		goto usage;
	if (bn_dir[0] != '\0' && bn_secs > 0 && bn_rounds >= 1 &&
	    bn_rounds <= BN_ROUNDS_MAX)
		return 0;
usage:
	fprintf(stderr, "usage: strata_bench --dir DIR [--json] "
		"[--seconds S] [--rounds K] [--only store1|store2]\n"
		"       [--figs 1m,4k,idx,metanv,tier,ecw,ec]\n");
	return 2;
}

/* Group metanv: the flash write figures on a store made with its metadata
 * on NVRAM (/dev/shm), each beside its raw baseline measured right after
 * it; the store is destroyed afterwards. */
static void bn_figs_metanv(void)
{
	struct bn_raw rw = {0}, r1 = {0};
	struct clovis_obj o1m, o4k;
	double w1m, w4k, raw_w, raw_1;
	char path[600], lmdb[64];

	if (bn_raw_fd < 0)
		bn_raw_file_setup();
	snprintf(path, sizeof path, "%s/store-metanv", bn_dir);
	(void)clovis_store_destroy(path);
	bn_store_open(path, NULL, CLOVIS_CONF_CREATE | CLOVIS_CONF_META_NVRAM);
	fprintf(bn_json ? stderr : stdout, "# store %s: metadata on NVRAM "
		"(CLOVIS_CONF_META_NVRAM, /dev/shm)\n", path);
	bn_obj_create(&o1m, 3, 20, CLOVIS_TIER_FLASH);
	bn_obj_create(&o4k, 1, 12, CLOVIS_TIER_FLASH);
	bn_obj_prefill(&o1m, BN_BIG_BLKS);
	bn_obj_prefill(&o4k, BN_SMALL_BLKS);
	rw = bn_raw_file(bn_raw_seq_write, 1, 1u << 20);
	r1 = bn_raw_file(bn_raw_rand_write, 1, 4096);
	w1m = bn_ours_obj(bn_make_seq_write, &o1m, 1, BN_BIG_BLKS);
	raw_w = bn_raw_run(&rw);
	w4k = bn_ours_obj_any(bn_make_rand_write, &o4k, 16, BN_SMALL_BLKS);
	raw_1 = bn_raw_run(&r1);
	bn_fig_add("1m_seqwrite_flash_metanv", w1m, raw_w, "MiB/s", 1, 1,
		   BN_EMU_METANV);
	bn_fig_add("4k_stable_qd16_vs_sync_qd1_metanv", w4k, raw_1, "IOPS", 16,
		   1, BN_EMU_METANV);
	/* Index figures beside raw LMDB on the same tmpfs (run-bench.sh
	 * removes this directory too, should the run stop half-way). */
	snprintf(lmdb, sizeof lmdb, "/dev/shm/strata-bench-lmdb-%d",
		 (int)getpid());
	bn_raw_lmdb_setup(lmdb);
	bn_idx_create();
	bn_fig_idx_metanv();
	bn_raw_lmdb_remove(lmdb);
	clovis_fini(bn_cl);
	bn_cl = NULL;
	bn_check(clovis_store_destroy(path), "store-metanv destroy");
}

/* The issue-2 figures on store 1, which is destroyed afterwards. */
static void bn_figs_store1(void)
{
	char path[600];

	bn_store_setup();
	bn_raw_file_setup();
	snprintf(path, sizeof path, "%s/raw-lmdb", bn_dir);
	bn_raw_lmdb_setup(path);
	bn_print_setup();
	/* 1 MiB first: the 4 KiB random overwrites leave the free space of
	 * the one nvram device (shared by both nvram objects) in 4 KiB
	 * holes, and a 1 MiB block needs a contiguous 1 MiB run (ENOSPC). */
	if (bn_want("1m"))
		bn_fig_1m();
	if (bn_want("4k"))
		bn_fig_4k();
	if (bn_want("idx"))
		bn_fig_idx();
	clovis_fini(bn_cl);
	bn_cl = NULL;
	mdb_env_close(bn_env);
	bn_env = NULL;
	bn_floor_remove();
	snprintf(path, sizeof path, "%s/store", bn_dir);
	bn_check(clovis_store_destroy(path), "store destroy");
}

/* The issue-3 figures on store 2 (bench_tier.c, bench_ec.c). */
static void bn_figs_store2(void)
{
	char path[600];

	bn_ec_store_setup(path, sizeof path);
	fprintf(bn_json ? stderr : stdout, "# store 2 (per-tier and EC "
		"figures), %s from a YAML configuration:\n", path);
	bn_print_devs(bn_json ? stderr : stdout);
	if (bn_want("tier"))
		bn_fig_tiers(path);
	if (bn_want("ec") || bn_want("ecw"))
		bn_fig_ec();
	clovis_fini(bn_cl);
	bn_cl = NULL;
	bn_check(clovis_store_destroy(path), "store destroy");
}

int main(int argc, char **argv)
{
	char path[600];
	double t0 = bn_now();

	if (bn_args(argc, argv) != 0)
		return 2;
	mkdir(bn_dir, 0755);
	if ((bn_only == NULL || strcmp(bn_only, "store1") == 0) &&
	    (bn_want("1m") || bn_want("4k") || bn_want("idx")))
		bn_figs_store1();
	if ((bn_only == NULL || strcmp(bn_only, "store1") == 0) &&
	    bn_want("metanv"))
		bn_figs_metanv();
	if ((bn_only == NULL || strcmp(bn_only, "store2") == 0) &&
	    (bn_want("tier") || bn_want("ec") || bn_want("ecw")))
		bn_figs_store2();
	if (bn_json)
		bn_print_json();
	else
		bn_print_table();
	if (bn_raw_fd >= 0) {
		close(bn_raw_fd);
		snprintf(path, sizeof path, "%s/raw.dat", bn_dir);
		unlink(path);
	}
	fprintf(bn_json ? stderr : stdout, "# elapsed %.1f s\n",
		bn_now() - t0);
	return 0;
}
