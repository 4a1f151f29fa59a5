/*
 * bench.h — what the files of strata_bench share: the figure table, the
 * op loop that keeps ops in flight on our side, the thread loop of raw
 * baselines, and small helpers.
 *
 *   bench.c       issue-2 figures (plain objects, index) and main()
 *   bench_ec.c    pdclust writes, healthy and degraded reads, repair
 *   bench_tier.c  per-tier latency and bandwidth, device model off and on
 */
#ifndef STRATA_TESTS_BENCH_H
#define STRATA_TESTS_BENCH_H

#include <lmdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clovis/clovis.h"

#define BN_QD_MAX 16u
#define BN_REC_MAX 64u
#define BN_KEY_LEN 16u
#define BN_VAL_LEN 64u
#define BN_ALIGN 4096u
#define BN_HI 0xbe4c000000000000ull
#define BN_FIGS_MAX 128u
#define BN_ROUNDS_MAX 32u            /* --rounds at most */
#define BN_EMU_LEN 160u
#define BN_NAME_LEN 48u
#define BN_LAT_MAX 65536u             /* latency samples kept per figure */

/* What one figure measured; ratio = ours / raw. */
struct bn_fig {
	char f_name[BN_NAME_LEN];
	double f_ours, f_raw;
	const char *f_unit;
	uint32_t f_qd, f_recs;
	char f_emu[BN_EMU_LEN]; /* emulation of the devices behind "ours" */
	/* Measured in f_rounds alternated rounds (0: one measurement each
	 * side): f_ours and f_raw are the medians, f_ratio the median of the
	 * rounds' own ratios, f_rmin..f_rmax their range. */
	uint32_t f_rounds;
	double f_ratio, f_rmin, f_rmax;
};

extern double bn_secs;      /* seconds per side of a figure */
extern unsigned bn_rounds;  /* --rounds: alternated rounds (1m, 4k figures) */
extern bool bn_json;
extern char bn_dir[512];
extern struct clovis *bn_cl; /* the store being measured */

/* ---------------------------------------------------------- helpers */

double bn_now(void);
/* Stop the program with a message when rc is an error. */
void bn_check(int rc, const char *what);
/* len bytes aligned for O_DIRECT, filled with a pattern. */
void *bn_alloc(size_t len);
uint64_t bn_rand(uint64_t *s);
/* Whether figure group `group` was asked for (--figs; all by default). */
bool bn_want(const char *group);
/* Record a figure; emu says what stands for the device ("disk O_DIRECT"). */
void bn_fig_add(const char *name, double ours, double raw, const char *unit,
		uint32_t qd, uint32_t recs, const char *emu);
/* Median of v[0..nr-1] (sorts v); 0 when nr is 0. */
double bn_median(double *v, uint32_t nr);
/* Create object n of the default realm of bn_cl with attributes a. */
void bn_obj_create_attr(struct clovis_obj *o, uint64_t n,
			const struct clovis_obj_attr *a);
/* Set up handle o for object n again and OPEN it (after a reopen). */
void bn_obj_open(struct clovis_obj *o, uint64_t n);
/* Open the store at path, creating it from the YAML file conf (NULL: the
 * built-in default) when it has none. */
void bn_store_open(const char *path, const char *conf, uint32_t flags);

/* ----------------------------------------------- our side: op loop */

/* One op slot of a job with the storage its op points into. */
struct bn_slot {
	struct clovis_op *s_op;
	uint64_t s_blk, s_nr;
	double s_t0;                /* launch time */
	struct clovis_extvec s_ev;
	void *s_buf;
	void *s_bufs[1];
	size_t s_lens[1];
	struct clovis_bufvec s_bv;
	char s_keys[BN_REC_MAX][BN_KEY_LEN + 1];
	char s_key0[CLOVIS_KEY_MAX]; /* NEXT into caller buffers: slot 0 */
	void *s_kb[BN_REC_MAX], *s_vb[BN_REC_MAX];
	size_t s_kl[BN_REC_MAX], s_vl[BN_REC_MAX];
	uint8_t s_vals[BN_REC_MAX][BN_VAL_LEN];
	int32_t s_rcs[BN_REC_MAX];
	struct clovis_bufvec s_kv, s_vv;
};

/* A job: makes ops for slots; qd of them stay in flight. */
struct bn_job {
	int (*j_make)(struct bn_job *j, struct bn_slot *s);
	void (*j_done)(struct bn_job *j, struct bn_slot *s);
	uint32_t j_qd;
	uint32_t j_recs;            /* records per op (index jobs) */
	struct clovis_obj *j_obj;
	struct clovis_idx *j_idx;
	uint64_t j_blks;            /* blocks in the object region */
	uint64_t j_next;            /* next sequential block or key number */
	uint64_t j_keys;            /* keys loaded (GET/NEXT pick below) */
	uint64_t j_stop;            /* stop making ops at j_next (0: never) */
	uint64_t j_chunk;           /* blocks per object op (0: 1) */
	uint64_t j_ops_max;         /* stop after this many ops (0: never) */
	uint64_t j_made;            /* ops made so far */
	uint64_t j_rand;
	double *j_lat;              /* per-op latency in us (NULL: none) */
	uint32_t j_lat_nr;
	struct bn_slot j_slots[BN_QD_MAX];
};

/* Run j with j_qd ops in flight for bn_secs (or until a stop); ops/s. */
double bn_run(struct bn_job *j);
/* Run j for secs instead of bn_secs. */
double bn_run_for(struct bn_job *j, double secs);
/* Free the buffers of a job's slots. */
void bn_job_fini(struct bn_job *j);
int bn_make_rand_write(struct bn_job *j, struct bn_slot *s);
int bn_make_rand_read(struct bn_job *j, struct bn_slot *s);
/* j_chunk blocks (at least 1) at j_next, which moves on. */
int bn_make_seq_write(struct bn_job *j, struct bn_slot *s);
int bn_make_seq_read(struct bn_job *j, struct bn_slot *s);
/* Write every block of o's first blks once, 1 MiB per op. */
void bn_obj_prefill(struct clovis_obj *o, uint64_t blks);

/* ------------------------------------------ raw side: thread loop */

/* A raw job: r_threads threads each run one op (i-th of its thread) at a
 * time until the deadline. */
struct bn_raw {
	int (*r_op)(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf);
	uint32_t r_threads;
	int r_fd;                   /* raw file */
	size_t r_len;               /* bytes per file op */
	uint64_t r_nr;              /* ops that fit the file */
	MDB_env *r_env;
	MDB_dbi r_dbi;
	uint32_t r_recs;
	atomic_uint_fast64_t r_keys; /* next key to PUT */
	uint64_t r_loaded;          /* keys loaded for GET/NEXT */
	atomic_uint_fast64_t r_done;
	double r_end;
	double *r_lat;              /* per-op latency in us (NULL: none) */
	atomic_uint r_lat_nr;
	void *r_arg;                /* for the op */
};

/* Run r for bn_secs on r_threads threads; returns ops per second. */
double bn_raw_run(struct bn_raw *r);
double bn_raw_run_for(struct bn_raw *r, double secs);
int bn_raw_rand_write(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf);
int bn_raw_rand_read(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf);
int bn_raw_seq_write(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf);
int bn_raw_seq_read(struct bn_raw *r, uint64_t *rnd, uint64_t i, void *buf);
/* Make path: preallocated, written once with len bytes, synced; returns a
 * descriptor opened with flags (O_DIRECT or not) added to O_RDWR. */
int bn_raw_file_make(const char *path, uint64_t len, int flags);

/* ---------------------------------------------------- the new figures */

/* bench_ec.c: make the second store (YAML: nvram, 12 flash in pool "ec",
 * sas, smr) at DIR/store-ec and open it as bn_cl; its path in path. */
void bn_ec_store_setup(char *path, size_t len);
/* bench_ec.c: pdclust writes, reads healthy and degraded, repair. */
void bn_fig_ec(void);
/* bench_tier.c: per-tier figures on the open store bn_cl (model off),
 * then the store at path reopened with the device model on, and reopened
 * again with it off (bn_cl is the last one). */
void bn_fig_tiers(const char *path);

#endif
