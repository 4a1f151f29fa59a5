/*
 * bench_fdmi.c — the cost and the speed of FDMI (issue 31, "Benchmark"),
 * embedded mode:
 *
 * 1. FDMI's cost on the write path: 4 KiB object writes to STABLE with 16
 *    in flight, and index PUTs of one record with 16 in flight, on four
 *    sides: FDMI off (CLOVIS_CONF_FDMI_OFF, the baseline), FDMI on with no
 *    consumer (CLOVIS_CONF_FDMI_ON: records kept to the log's own bounds),
 *    and the default mode with 1 and with 3 consumers registered, each a
 *    thread of the process that loops clovis_fdmi_next() (at most 1024) +
 *    clovis_fdmi_ack() while its side runs, sleeping 1 ms on an empty
 *    batch, so that records are really read, acked and trimmed.  The four
 *    sides run side by side, each a process with its own fresh store, and
 *    take turns in slices of 250 ms (the order turning from slice to
 *    slice and round to round), so that drift and the machine's other load
 *    hit every side alike; consumers run during their side's slices and
 *    catch up at a slice's end.  Each figure is the side's median over
 *    the rounds, its ratio the median of the rounds' ratios to FDMI off
 *    (goal: >= 0.95, a cost of at most 5 %).
 * 2. Record delivery to one consumer (records/s): a registered consumer
 *    that does not read while N index records are put (PUTs of 250 keys,
 *    16 in flight), then the same consumer draining the N records with
 *    next (1024) + ack; beside it, the rate at which the engine wrote
 *    those records (records/s of the fill).
 * 3. End-to-end lag, from the 1-consumer side of 1: for each record the
 *    consumer receives, now - fr_time_ns (the time the record was made, in
 *    the change's transaction), median and p99, beside the latency of the
 *    writes themselves (launch to STABLE) measured in the same phase.
 *
 *   strata_bench_fdmi --dir DIR [--seconds S] [--rounds K] [--json]
 *                     [--records N] [--slice-ms MS]
 *   strata_bench_fdmi --dir DIR --serve off|on|c1|c3
 *                     (one side's process, driven through stdin and
 *                     stdout by the rounds: see serve())
 *   strata_bench_fdmi --dir DIR --deliver N   (figure 2, one round)
 *
 * Defaults: 2 s a figure and side in each of 3 rounds, 200,000 records;
 * about a minute and a half.
 *
 * Devices: files on the disk of DIR (O_DIRECT; 64 MiB each, so that a
 * fresh store is quick to make), NVRAM on /dev/shm, metadata (LMDB, the
 * FDMI log with it) on the disk of DIR; device model off.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"

#define QD 16u
#define NKEYS 10000u
#define ROUNDS_MAX 16u
#define CONS_MAX 3u
#define DEV_SIZE (64ull << 20)
/* Blocks each writer cycles over: 4 MiB an object, 64 MiB for all. */
#define WBLKS 1024u
/* Latency and lag samples kept per thread (the rest are not sampled). */
#define LAT_MAX (1u << 16)
#define LAG_MAX (1u << 20)
/* Figure 2: keys per PUT of the fill. */
#define FILL_BATCH 250u
#define VAL_LEN 64u

static const char emu[] = "embedded, flash = files on the disk of DIR "
			  "(O_DIRECT), NVRAM on /dev/shm, LMDB on the disk, "
			  "model off";

static double secs = 2;
static struct clovis *cl;
static struct clovis_obj objs[QD];
static struct clovis_idx ix;
static volatile int stop;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void check(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "bench_fdmi: %s: %s: %s\n", what,
			clovis_strerror(rc), clovis_errmsg());
		exit(1);
	}
}

static int run(int rc, struct clovis_op **op)
{
	if (rc != 0)
		return rc;
	rc = clovis_op_launch(op, 1);
	if (rc == 0)
		rc = clovis_op_wait(*op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (rc == 0)
		rc = clovis_op_rc(*op);
	clovis_op_free(*op);
	*op = NULL;
	return rc;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Quantile q of n samples (sorted here); 0 when there are none. */
static double quant(float *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, cmp_f);
	return v[(size_t)(q * (double)(n - 1))];
}

/* A store of its own under dir with flags; the index (and, with objects,
 * QD plain objects on flash), and NKEYS records in the index. */
static void setup(const char *dir, uint32_t flags, bool objects)
{
	struct clovis_conf conf = { .cc_mode = CLOVIS_MODE_EMBEDDED,
				    .cc_flags = CLOVIS_CONF_CREATE | flags,
				    .cc_data_dir = dir,
				    .cc_dev_size = DEV_SIZE };
	struct clovis_obj_attr a = { .oa_block_shift = 12,
				     .oa_layout = CLOVIS_LAYOUT_PLAIN,
				     .oa_tier = CLOVIS_TIER_FLASH };
	struct clovis_op *op = NULL;
	struct clovis_id id;

	check(clovis_init(&cl, &conf), "init");
	for (uint32_t i = 0; objects && i < QD; i++) {
		id = (struct clovis_id){ .ci_hi = 0xfd30000000000000ull,
					 .ci_lo = i + 1 };
		check(clovis_obj_init(&objs[i], clovis_default_realm(cl), &id,
				      &a), "obj init");
		check(run(clovis_entity_op(&objs[i].ob_entity, CLOVIS_EO_CREATE,
					   &op), &op), "obj create");
	}
	id = (struct clovis_id){ .ci_hi = 0xfd31000000000000ull, .ci_lo = 1 };
	check(clovis_idx_init(&ix, clovis_default_realm(cl), &id), "idx init");
	check(run(clovis_entity_op(&ix.in_entity, CLOVIS_EO_CREATE, &op), &op),
	      "idx create");
	for (uint32_t i = 0; objects && i < NKEYS; i += 100) {
		char kb[100][16], vb[100][VAL_LEN];
		void *kp[100], *vp[100];
		size_t kl[100], vl[100];
		int32_t rcs[100];
		struct clovis_bufvec kv = { 100, kp, kl }, vv = { 100, vp, vl };

		for (uint32_t j = 0; j < 100; j++) {
			kl[j] = (size_t)snprintf(kb[j], 16, "k%08u", i + j);
			vl[j] = sizeof vb[j];
			memset(vb[j], 'v', sizeof vb[j]);
			kp[j] = kb[j];
			vp[j] = vb[j];
		}
		check(run(clovis_idx_op(&ix, CLOVIS_IC_PUT, &kv, &vv, rcs, 0,
					&op), &op), "idx fill");
	}
}

/* The sides: FDMI off, on with no consumer, 1 and 3 consumers acking
 * every batch, and (where the cost goes) 1 consumer acking at most every
 * 100 ms, the batches between released by the next ack. */
enum { S_OFF, S_ON0, S_C1, S_C3, S_C1L, SIDES };
static const char *const side_arg[SIDES] = {"off", "on", "c1", "c3",
					    "c1lazy"};
static const unsigned side_cons[SIDES] = {0, 0, 1, 3, 1};
static const unsigned side_ack_ms[SIDES] = {0, 0, 0, 0, 100};
static const char *const side_name[SIDES] = {
	"FDMI off", "FDMI on, 0 consumers", "1 consumer", "3 consumers",
	"1 consumer acking every 100 ms"};
static unsigned ack_every_ms;  /* this side's */

/* ------------------------------------------------------------ consumers */

/* One consumer thread: next + ack while its side runs a slice; at the
 * slice's end, once the writers stopped, until an empty batch (it caught
 * up), then it waits for the next slice.  c_lag[k]: now - fr_time_ns of
 * each obj.write (k 0) and idx.put (k 1) record, in ms (consumer 0). */
enum { C_RUN, C_PAUSE_REQ, C_PAUSED, C_QUIT };

struct cons {
	pthread_t c_t;
	char c_name[16];
	int c_state;  /* C_*, under cons_lock */
	uint64_t c_writes, c_puts, c_other, c_batches;
	double c_ack_us;  /* time in clovis_fdmi_ack() */
	double c_acked;   /* when it last acked */
	float *c_lag[2];
	size_t c_nlag[2];
	int c_rc;
	char c_err[256];
};

static struct cons cons[CONS_MAX];
static unsigned nr_cons;
static pthread_mutex_t cons_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cons_cond = PTHREAD_COND_INITIALIZER;

static void cons_take(struct cons *c, const struct clovis_fdmi_batch *b,
		      uint32_t n)
{
	uint64_t t = real_ns();

	for (uint32_t i = 0; i < n; i++) {
		struct clovis_fdmi_rec r;
		int k;

		check(clovis_fdmi_batch_rec(b, i, &r), "batch rec");
		if (r.fr_op == CLOVIS_FDMI_OBJ_WRITE)
			k = 0, c->c_writes++;
		else if (r.fr_op == CLOVIS_FDMI_IDX_PUT)
			k = 1, c->c_puts++;
		else {
			c->c_other++;
			continue;
		}
		if (c->c_lag[k] != NULL && c->c_nlag[k] < LAG_MAX)
			c->c_lag[k][c->c_nlag[k]++] =
				t > r.fr_time_ns ? (t - r.fr_time_ns) / 1e6f
						 : 0;
	}
}

/* One next + ack (with ack_every_ms, an ack only that long after the
 * last one): the records received (0: the batch was empty). */
static int cons_step(struct cons *c, uint32_t *n)
{
	struct clovis_fdmi_batch *b = NULL;
	int rc = clovis_fdmi_next(cl, c->c_name, 1024, &b);

	*n = 0;
	if (rc != 0)
		return rc;
	*n = clovis_fdmi_batch_nr(b);
	if (*n > 0)
		cons_take(c, b, *n);
	if (*n > 0 && now() - c->c_acked >= ack_every_ms / 1e3) {
		double t0 = now();

		rc = clovis_fdmi_ack(cl, c->c_name, b);
		c->c_acked = now();
		c->c_ack_us += (c->c_acked - t0) * 1e6;
		c->c_batches++;
	}
	clovis_fdmi_batch_free(b);
	return rc;
}

/* Until an empty batch (every record committed so far received). */
static int cons_drain(struct cons *c)
{
	uint32_t n;
	int rc;

	while ((rc = cons_step(c, &n)) == 0 && n > 0)
		;
	return rc;
}

static void *consumer(void *arg)
{
	struct cons *c = arg;
	int rc = 0, st;

	for (;;) {
		uint32_t n;

		pthread_mutex_lock(&cons_lock);
		while (c->c_state == C_PAUSED)
			pthread_cond_wait(&cons_cond, &cons_lock);
		st = c->c_state;
		pthread_mutex_unlock(&cons_lock);
		if (st == C_QUIT)
			break;
		rc = cons_step(c, &n);
		if (rc != 0)
			break;
		if (n > 0)
			continue;
		if (st == C_PAUSE_REQ) {
			pthread_mutex_lock(&cons_lock);
			if (c->c_state == C_PAUSE_REQ)
				c->c_state = C_PAUSED;
			pthread_cond_broadcast(&cons_cond);
			pthread_mutex_unlock(&cons_lock);
			continue;
		}
		usleep(1000);
	}
	if (rc != 0) {
		snprintf(c->c_err, sizeof c->c_err, "%s", clovis_errmsg());
		pthread_mutex_lock(&cons_lock);
		c->c_rc = rc;
		c->c_state = C_QUIT;
		pthread_cond_broadcast(&cons_cond);
		pthread_mutex_unlock(&cons_lock);
	}
	return NULL;
}

/* Register n consumers and start them, paused. */
static void cons_start(unsigned n)
{
	nr_cons = n;
	for (unsigned i = 0; i < n; i++) {
		struct cons *c = &cons[i];

		snprintf(c->c_name, sizeof c->c_name, "bench%u", i);
		check(clovis_fdmi_sub(cl, c->c_name, NULL, 0, 0, 0), "sub");
		c->c_state = C_PAUSED;
		for (int k = 0; i == 0 && k < 2; k++) {
			c->c_lag[k] = malloc(LAG_MAX * sizeof(float));
			if (c->c_lag[k] == NULL)
				check(-ENOMEM, "lag samples");
		}
		if (pthread_create(&c->c_t, NULL, consumer, c) != 0)
			check(-EAGAIN, "consumer thread");
	}
}

/* Every consumer to state st (C_RUN, C_PAUSE_REQ, C_QUIT); with
 * C_PAUSE_REQ wait until each caught up and paused. */
static void cons_set(int st)
{
	pthread_mutex_lock(&cons_lock);
	for (unsigned i = 0; i < nr_cons; i++)
		if (cons[i].c_state != C_QUIT)
			cons[i].c_state = st;
	pthread_cond_broadcast(&cons_cond);
	for (unsigned i = 0; st == C_PAUSE_REQ && i < nr_cons; i++)
		while (cons[i].c_state == C_PAUSE_REQ)
			pthread_cond_wait(&cons_cond, &cons_lock);
	pthread_mutex_unlock(&cons_lock);
	for (unsigned i = 0; i < nr_cons; i++)
		check(cons[i].c_rc, cons[i].c_err);
}

/* Stop and join the consumers; with check, each must have received
 * exactly the records of the ops done (one per write, one per PUT). */
static void cons_stop(bool chk, uint64_t writes, uint64_t puts)
{
	cons_set(C_QUIT);
	for (unsigned i = 0; i < nr_cons; i++) {
		struct cons *c = &cons[i];

		pthread_join(c->c_t, NULL);
		if (!chk)
			continue;
		if (c->c_writes != writes || c->c_puts != puts) {
			fprintf(stderr, "bench_fdmi: consumer %s received %llu "
				"obj.write and %llu idx.put records for %llu "
				"writes and %llu PUTs\n", c->c_name,
				(unsigned long long)c->c_writes,
				(unsigned long long)c->c_puts,
				(unsigned long long)writes,
				(unsigned long long)puts);
			exit(1);
		}
	}
}

/* -------------------------------------------------------------- writers */

/* Latency samples (ms, launch to STABLE) of writer i in phase k (0
 * writes, 1 PUTs), kept over the slices. */
static float *lat[2][QD];
static size_t nlat[2][QD];

struct wr {
	pthread_t w_t;
	unsigned w_i;
	bool w_put;
	uint64_t w_n;
	uint64_t w_rnd;
};

static struct wr wrs[QD];
static uint64_t blk[QD];  /* each object's next block */

/* One 4 KiB write to this writer's object, or one PUT of a random key of
 * the NKEYS (an overwrite), to STABLE. */
static void wr_one(struct wr *w)
{
	static __thread unsigned char buf[4096] __attribute__((aligned(4096)));
	struct clovis_op *op = NULL;
	double t0 = now();
	unsigned k = w->w_put;

	if (!w->w_put) {
		uint64_t start = blk[w->w_i]++ % WBLKS, nr = 1;
		struct clovis_extvec ext = { 1, &start, &nr };
		void *b = buf;
		size_t len = sizeof buf;
		struct clovis_bufvec bv = { 1, &b, &len };

		check(run(clovis_obj_op(&objs[w->w_i], CLOVIS_OC_WRITE, &ext,
					&bv, 0, &op), &op), "write");
	} else {
		char key[16];
		void *kp = key, *vp = buf;
		size_t kl, vl = VAL_LEN;
		int32_t rc1 = 1;
		struct clovis_bufvec kv = { 1, &kp, &kl }, vv = { 1, &vp, &vl };

		w->w_rnd ^= w->w_rnd << 13, w->w_rnd ^= w->w_rnd >> 7,
		w->w_rnd ^= w->w_rnd << 17;
		kl = (size_t)snprintf(key, sizeof key, "k%08u",
				      (unsigned)(w->w_rnd % NKEYS));
		check(run(clovis_idx_op(&ix, CLOVIS_IC_PUT, &kv, &vv, &rc1,
					CLOVIS_IF_OVERWRITE, &op), &op), "put");
		check(rc1, "put record");
	}
	if (nlat[k][w->w_i] < LAT_MAX)
		lat[k][w->w_i][nlat[k][w->w_i]++] =
			(float)((now() - t0) * 1e3);
	w->w_n++;
}

static void *writer(void *arg)
{
	struct wr *w = arg;

	while (!stop)
		wr_one(w);
	return NULL;
}

/* One slice: the consumers run while QD writers (or PUTters) run for s
 * seconds; the ops done in *n, the writers' time returned.  The
 * consumers then catch up and pause (not timed). */
static double slice(bool put, double s, uint64_t *n)
{
	static uint64_t rnd = 88172645463325252ull;
	double t0, t;

	stop = 0;
	*n = 0;
	cons_set(C_RUN);
	t0 = now();
	for (unsigned i = 0; i < QD; i++) {
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		wrs[i] = (struct wr){ .w_i = i, .w_put = put, .w_rnd = rnd | 1 };
		if (pthread_create(&wrs[i].w_t, NULL, writer, &wrs[i]) != 0)
			check(-EAGAIN, "writer thread");
	}
	while (now() - t0 < s)
		usleep(2000);
	stop = 1;
	for (unsigned i = 0; i < QD; i++) {
		pthread_join(wrs[i].w_t, NULL);
		*n += wrs[i].w_n;
	}
	t = now() - t0;
	cons_set(C_PAUSE_REQ);
	return t;
}

/* p50 and p99 of phase k's latencies, all writers. */
static void lat_quant(unsigned k, double *p50, double *p99)
{
	static float all[QD * LAT_MAX];
	size_t n = 0;

	for (unsigned i = 0; i < QD; i++) {
		memcpy(all + n, lat[k][i], nlat[k][i] * sizeof *all);
		n += nlat[k][i];
	}
	*p50 = quant(all, n, 0.5);
	*p99 = quant(all, n, 0.99);
}

/* ----------------------------------------------------------- one side */


/* FDMI on, no consumer: the log must hold a record of every op; a
 * consumer registered afterwards with FROM_START counts them. */
static void check_log(uint64_t writes, uint64_t puts)
{
	struct cons *c = &cons[0];

	memset(c, 0, sizeof *c);
	snprintf(c->c_name, sizeof c->c_name, "check");
	check(clovis_fdmi_sub(cl, c->c_name, NULL, 0, 0,
			      CLOVIS_FDMI_FROM_START), "sub check");
	check(cons_drain(c), "check consumer");
	/* NKEYS idx.put records of the setup's fill: FDMI_ON records from
	 * the store's creation on */
	if (c->c_writes != writes || c->c_puts != puts + NKEYS) {
		fprintf(stderr, "bench_fdmi: FDMI on: the log holds %llu "
			"obj.write and %llu idx.put records for %llu writes "
			"and %llu PUTs (+%u at setup)\n",
			(unsigned long long)c->c_writes,
			(unsigned long long)c->c_puts,
			(unsigned long long)writes, (unsigned long long)puts,
			NKEYS);
		exit(1);
	}
}

/* What a side's process spent: CPU (every thread), bytes it sent to
 * storage and its write calls (/proc/self/io), group commits and their
 * time (from taking LMDB's write lock to the commit's end: the waits for
 * an ack's commit are in it), and acks (each an LMDB commit of its own)
 * with their time. */
struct cnt {
	double c_cpu;
	uint64_t c_wbytes, c_syscw, c_commits, c_acks;
	double c_commit_us, c_ack_us; /* time of the group commits, acks */
};

static void cnt_read(struct cnt *c)
{
	struct rusage ru;
	struct clovis_stat st[CLOVIS_STAT_NR];
	char line[128];
	FILE *f = fopen("/proc/self/io", "r");
	unsigned long long v;

	memset(c, 0, sizeof *c);
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		c->c_cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			   ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "write_bytes: %llu", &v) == 1)
			c->c_wbytes = v;
		else if (sscanf(line, "syscw: %llu", &v) == 1)
			c->c_syscw = v;
	}
	if (f != NULL)
		fclose(f);
	if (clovis_stats_get(cl, st) == 0) {
		c->c_commits = st[CLOVIS_STAT_COMMIT].cs_count;
		c->c_commit_us = st[CLOVIS_STAT_COMMIT].cs_mean_us *
				 (double)c->c_commits;
	}
	for (unsigned i = 0; i < nr_cons; i++) {
		c->c_acks += cons[i].c_batches;
		c->c_ack_us += cons[i].c_ack_us;
	}
}

/* Add what was spent since *last to *sum; *last := now. */
static void cnt_add(struct cnt *sum, struct cnt *last)
{
	struct cnt now;

	cnt_read(&now);
	sum->c_cpu += now.c_cpu - last->c_cpu;
	sum->c_wbytes += now.c_wbytes - last->c_wbytes;
	sum->c_syscw += now.c_syscw - last->c_syscw;
	sum->c_commits += now.c_commits - last->c_commits;
	sum->c_acks += now.c_acks - last->c_acks;
	sum->c_commit_us += now.c_commit_us - last->c_commit_us;
	sum->c_ack_us += now.c_ack_us - last->c_ack_us;
	*last = now;
}

/*
 * A side, serving the parent (stdin/stdout): makes its store, says
 * "ready", then runs "w MS" / "p MS" slices (answer "ops N secs T") until
 * "q": checks the records, answers "end ..." (latencies, lags, batches)
 * and "cnt ..." (what it spent a phase: what a slice spent and whatever
 * ran after it until the next one, the trimmer too), removes its store.  End of input without "q": the store is removed and
 * the exit status is 1.
 */
static int serve(const char *dir, unsigned sd)
{
	static const uint32_t flags[SIDES] = {CLOVIS_CONF_FDMI_OFF,
					      CLOVIS_CONF_FDMI_ON, 0, 0};
	char sdir[1100], line[128];
	uint64_t nw = 0, np = 0;
	double l[8] = {0};
	bool quit = false;
	struct cnt sum[2] = {{0}}, last;
	int ph = -1, rc;

	snprintf(sdir, sizeof sdir, "%s/fdmi-%d", dir, (int)getpid());
	setup(sdir, flags[sd], true);
	for (unsigned k = 0; k < 2; k++)
		for (unsigned i = 0; i < QD; i++)
			if ((lat[k][i] = malloc(LAT_MAX * sizeof(float))) == NULL)
				check(-ENOMEM, "latency samples");
	if (sd == S_OFF &&
	    (rc = clovis_fdmi_sub(cl, "bench0", NULL, 0, 0, 0)) != -ENOTSUP) {
		fprintf(stderr, "bench_fdmi: FDMI off: sub gave %d, not "
			"-ENOTSUP\n", rc);
		exit(1);
	}
	ack_every_ms = side_ack_ms[sd];
	cons_start(side_cons[sd]);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin) != NULL) {
		char cmd;
		unsigned ms;
		uint64_t n;
		double t;

		if (ph >= 0)
			cnt_add(&sum[ph], &last);
		else
			cnt_read(&last);
		if (line[0] == 'q') {
			quit = true;
			break;
		}
		if (sscanf(line, "%c %u", &cmd, &ms) != 2 ||
		    (cmd != 'w' && cmd != 'p'))
			break;
		ph = cmd == 'p';
		t = slice(cmd == 'p', ms / 1e3, &n);
		*(cmd == 'p' ? &np : &nw) += n;
		printf("ops %llu secs %.6f\n", (unsigned long long)n, t);
		fflush(stdout);
	}
	cons_stop(quit, nw, np);
	if (quit && sd == S_ON0)
		check_log(nw, np);
	lat_quant(0, &l[0], &l[1]);
	lat_quant(1, &l[2], &l[3]);
	if (side_cons[sd] > 0)
		for (unsigned k = 0; k < 2; k++) {
			l[4 + 2 * k] = quant(cons[0].c_lag[k],
					     cons[0].c_nlag[k], 0.5);
			l[5 + 2 * k] = quant(cons[0].c_lag[k],
					     cons[0].c_nlag[k], 0.99);
		}
	if (quit)
		printf("end wlat %.3f %.3f plat %.3f %.3f wlag %.3f %.3f "
		       "plag %.3f %.3f batches %llu\n", l[0], l[1], l[2], l[3],
		       l[4], l[5], l[6], l[7],
		       (unsigned long long)(side_cons[sd] ? cons[0].c_batches
							  : 0));
	for (unsigned k = 0; quit && k < 2; k++)
		printf("%s %.6f %llu %llu %llu %llu %.1f %.1f",
		       k ? " p" : "cnt w", sum[k].c_cpu,
		       (unsigned long long)sum[k].c_wbytes,
		       (unsigned long long)sum[k].c_syscw,
		       (unsigned long long)sum[k].c_commits,
		       (unsigned long long)sum[k].c_acks, sum[k].c_commit_us,
		       sum[k].c_ack_us);
	printf(quit ? "\n" : "");
	fflush(stdout);
	clovis_fini(cl);
	check(clovis_store_destroy(sdir), "destroy");
	return quit ? 0 : 1;
}

/* ------------------------------------------------------------- delivery */

struct filler {
	pthread_t f_t;
	uint32_t f_from, f_to; /* keys [from, to) */
};

static void *filler(void *arg)
{
	struct filler *f = arg;
	char kb[FILL_BATCH][16], vb[VAL_LEN];
	void *kp[FILL_BATCH], *vp[FILL_BATCH];
	size_t kl[FILL_BATCH], vl[FILL_BATCH];
	int32_t rcs[FILL_BATCH];

	memset(vb, 'f', sizeof vb);
	for (uint32_t i = f->f_from; i < f->f_to; i += FILL_BATCH) {
		uint32_t n = f->f_to - i < FILL_BATCH ? f->f_to - i
						      : FILL_BATCH;
		struct clovis_bufvec kv = { n, kp, kl }, vv = { n, vp, vl };
		struct clovis_op *op = NULL;

		for (uint32_t j = 0; j < n; j++) {
			kl[j] = (size_t)snprintf(kb[j], 16, "f%09u", i + j);
			kp[j] = kb[j];
			vp[j] = vb;
			vl[j] = sizeof vb;
		}
		check(run(clovis_idx_op(&ix, CLOVIS_IC_PUT, &kv, &vv, rcs, 0,
					&op), &op), "fill");
		for (uint32_t j = 0; j < n; j++)
			check(rcs[j], "fill record");
	}
	return NULL;
}

/* Figure 2, one round: records/s of the fill and of the drain. */
static int one_deliver(const char *dir, uint32_t nrec)
{
	struct filler f[QD];
	struct cons *c = &cons[0];
	struct clovis_fdmi_sub s[1];
	char sdir[1100];
	uint32_t nsub = 0;
	double t0, tf, td;

	snprintf(sdir, sizeof sdir, "%s/fdmi-d-%d", dir, (int)getpid());
	setup(sdir, 0, false);
	snprintf(c->c_name, sizeof c->c_name, "drain");
	check(clovis_fdmi_sub(cl, c->c_name, NULL, 0, 0, 0), "sub");
	t0 = now();
	for (uint32_t i = 0; i < QD; i++) {
		f[i].f_from = (uint32_t)((uint64_t)nrec * i / QD);
		f[i].f_to = (uint32_t)((uint64_t)nrec * (i + 1) / QD);
		if (pthread_create(&f[i].f_t, NULL, filler, &f[i]) != 0)
			check(-EAGAIN, "fill thread");
	}
	for (uint32_t i = 0; i < QD; i++)
		pthread_join(f[i].f_t, NULL);
	tf = now() - t0;
	check(clovis_fdmi_list(cl, s, 1, &nsub), "list");
	if (nsub != 1 || s[0].fs_lag_records < nrec) {
		fprintf(stderr, "bench_fdmi: after the fill the consumer lags "
			"%llu records, not %u\n",
			nsub ? (unsigned long long)s[0].fs_lag_records : 0ull,
			nrec);
		return 1;
	}
	t0 = now();
	check(cons_drain(c), "drain");
	td = now() - t0;
	if (c->c_puts != nrec) {
		fprintf(stderr, "bench_fdmi: drained %llu idx.put records of "
			"%u\n", (unsigned long long)c->c_puts, nrec);
		return 1;
	}
	printf("fill %.1f drain %.1f batches %llu\n", nrec / tf, nrec / td,
	       (unsigned long long)c->c_batches);
	clovis_fini(cl);
	check(clovis_store_destroy(sdir), "destroy");
	return 0;
}

/* ------------------------------------------------------------ the rounds */

struct side_res {
	double w, p, wlat[2], plat[2], wlag[2], plag[2];
	unsigned long long batches;
	uint64_t ops[2];     /* writes, PUTs */
	struct cnt spent[2]; /* what they cost */
};

static struct side_res res[SIDES][ROUNDS_MAX];
/* Every slice's rate (ops/s) of side, figure (0 writes, 1 PUTs), cycle
 * (round * slices a round + slice): the ratios are taken per cycle, four
 * slices side by side in time. */
#define CYCLES_MAX 4096u
static double slrate[SIDES][2][CYCLES_MAX];
static unsigned nr_cycles;
static double fill[ROUNDS_MAX], drn[ROUNDS_MAX];

/* A side's process: its pid, and its stdin and stdout. */
struct kid {
	pid_t k_pid;
	FILE *k_in, *k_out;
	uint64_t k_ops[2];
	double k_secs[2];
};

static int kid_spawn(struct kid *k, const char *self, const char *dir,
		     unsigned sd)
{
	int in[2], out[2];
	char line[64];

	if (pipe(in) != 0 || pipe(out) != 0)
		return -errno;
	k->k_pid = fork();
	if (k->k_pid < 0)
		return -errno;
	if (k->k_pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		execl(self, self, "--dir", dir, "--serve", side_arg[sd],
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	k->k_in = fdopen(in[1], "w");
	k->k_out = fdopen(out[0], "r");
	memset(k->k_ops, 0, sizeof k->k_ops);
	memset(k->k_secs, 0, sizeof k->k_secs);
	if (k->k_in == NULL || k->k_out == NULL)
		return -ENOMEM;
	if (fgets(line, sizeof line, k->k_out) == NULL ||
	    strcmp(line, "ready\n") != 0)
		return -EIO;
	return 0;
}

/* One slice of kind c ('w', 'p') of ms on side k; its rate in *rate. */
static int kid_slice(struct kid *k, char c, unsigned ms, double *rate)
{
	unsigned long long n;
	double t;
	char line[128];

	fprintf(k->k_in, "%c %u\n", c, ms);
	fflush(k->k_in);
	if (fgets(line, sizeof line, k->k_out) == NULL ||
	    sscanf(line, "ops %llu secs %lf", &n, &t) != 2)
		return -EIO;
	k->k_ops[c == 'p'] += n;
	k->k_secs[c == 'p'] += t;
	*rate = n / t;
	return 0;
}

/* The "cnt" line of a side into r; false if it is not one. */
static bool cnt_parse(FILE *f, struct side_res *r)
{
	char line[512];
	unsigned long long v[2][5];
	struct cnt *c = r->spent;

	if (fgets(line, sizeof line, f) == NULL ||
	    sscanf(line, "cnt w %lf %llu %llu %llu %llu %lf %lf p %lf %llu %llu "
		   "%llu %llu %lf %lf", &c[0].c_cpu, &v[0][1], &v[0][2],
		   &v[0][3], &v[0][4], &c[0].c_commit_us, &c[0].c_ack_us,
		   &c[1].c_cpu, &v[1][1], &v[1][2], &v[1][3], &v[1][4],
		   &c[1].c_commit_us, &c[1].c_ack_us) != 14)
		return false;
	for (unsigned k = 0; k < 2; k++) {
		c[k].c_wbytes = v[k][1];
		c[k].c_syscw = v[k][2];
		c[k].c_commits = v[k][3];
		c[k].c_acks = v[k][4];
	}
	return true;
}

/* Quit side k (q, its "end" line into r unless r is NULL) and reap it. */
static int kid_end(struct kid *k, struct side_res *r)
{
	char line[512];
	int rc = 0, st;

	if (k->k_pid <= 0)
		return 0;
	if (k->k_in != NULL) {
		if (r != NULL)
			fprintf(k->k_in, "q\n");
		fclose(k->k_in);
	}
	if (r != NULL &&
	    (k->k_out == NULL || fgets(line, sizeof line, k->k_out) == NULL ||
	     sscanf(line, "end wlat %lf %lf plat %lf %lf wlag %lf %lf plag %lf "
		    "%lf batches %llu", &r->wlat[0], &r->wlat[1], &r->plat[0],
		    &r->plat[1], &r->wlag[0], &r->wlag[1], &r->plag[0],
		    &r->plag[1], &r->batches) != 9 || !cnt_parse(k->k_out, r)))
		rc = -EIO;
	if (k->k_out != NULL)
		fclose(k->k_out);
	if (waitpid(k->k_pid, &st, 0) != k->k_pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		rc = -EIO;
	k->k_pid = 0;
	if (r != NULL && rc == 0) {
		r->w = k->k_ops[0] / k->k_secs[0];
		r->p = k->k_ops[1] / k->k_secs[1];
		r->ops[0] = k->k_ops[0];
		r->ops[1] = k->k_ops[1];
	}
	return rc;
}

/* One round of figure 1: the four sides' processes side by side, each
 * figure in slices of slice_ms, the sides' order turning from slice to
 * slice (and round to round). */
static int round_cost(const char *self, const char *dir, unsigned r,
		      unsigned nsl, unsigned slice_ms)
{
	struct kid k[SIDES] = {{0}};
	int rc = 0;

	for (unsigned sd = 0; rc == 0 && sd < SIDES; sd++)
		rc = kid_spawn(&k[sd], self, dir, sd);
	for (unsigned ph = 0; rc == 0 && ph < 2; ph++)
		for (unsigned j = 0; rc == 0 && j < nsl; j++)
			for (unsigned i = 0; rc == 0 && i < SIDES; i++) {
				unsigned sd = (i + j + r) % SIDES;

				rc = kid_slice(&k[sd], ph ? 'p' : 'w', slice_ms,
					       &slrate[sd][ph][r * nsl + j]);
			}
	for (unsigned sd = 0; sd < SIDES; sd++) {
		int rc2 = kid_end(&k[sd], rc == 0 ? &res[sd][r] : NULL);

		if (rc2 != 0 && rc == 0) {
			fprintf(stderr, "bench_fdmi: side %s failed\n",
				side_arg[sd]);
			rc = rc2;
		}
	}
	return rc;
}

/* Run "self ARGS" and parse its one line with fmt (n fields). */
static int child(const char *self, const char *args, const char *fmt,
		 int n, ...)
{
	char cmd[2400], line[1024];
	FILE *p;
	va_list ap;
	int rc = -EIO;

	snprintf(cmd, sizeof cmd, "'%s' %s", self, args);
	p = popen(cmd, "r");
	if (p == NULL)
		return -errno;
	if (fgets(line, sizeof line, p) != NULL) {
		va_start(ap, n);
		rc = vsscanf(line, fmt, ap) == n ? 0 : -EIO;
		va_end(ap);
	}
	if (pclose(p) != 0)
		rc = -EIO;
	return rc;
}

static int run_deliver(const char *self, const char *dir, uint32_t nrec,
		       double *f, double *d)
{
	char args[1200];
	unsigned long long b;

	snprintf(args, sizeof args, "--dir '%s' --deliver %u", dir, nrec);
	return child(self, args, "fill %lf drain %lf batches %llu", 3, f, d,
		     &b);
}

/* One figure: a table line or a JSON object. */
struct row {
	const char *r_name, *r_unit, *r_raw_is;
	double r_ours, r_raw, r_ratio, r_goal;
	bool r_lower;  /* lower is better (latencies) */
	double r_q1, r_q3; /* quartiles of the cycles' ratios (0: none) */
};

static void row_print(const struct row *r, unsigned rounds, bool json,
		      bool *first)
{
	if (json) {
		printf("%s\n  {\"name\": \"%s\", \"ours\": %.3f, \"raw\": %.3f, "
		       "\"ratio\": %.3f, \"unit\": \"%s\", \"raw_is\": \"%s\", "
		       "\"rounds\": %u, \"emulation\": \"%s\", "
		       "\"lower_is_better\": %s, \"goal\": ", *first ? "" : ",",
		       r->r_name, r->r_ours, r->r_raw, r->r_ratio, r->r_unit,
		       r->r_raw_is, rounds, emu, r->r_lower ? "true" : "false");
		if (r->r_q3 > 0)
			printf("\"cycles\": %u, \"ratio_q1\": %.3f, "
			       "\"ratio_q3\": %.3f, ", nr_cycles, r->r_q1,
			       r->r_q3);
		if (r->r_goal > 0)
			printf("%.2f, \"met\": %s}", r->r_goal,
			       r->r_ratio >= r->r_goal ? "true" : "false");
		else
			printf("null, \"met\": null}");
	} else {
		char gs[16] = "";

		if (r->r_goal > 0)
			snprintf(gs, sizeof gs, ">=%.2f %s", r->r_goal,
				 r->r_ratio >= r->r_goal ? "met" : "NOT");
		char qs[24] = "";

		if (r->r_q3 > 0)
			snprintf(qs, sizeof qs, "%.2f-%.2f", r->r_q1, r->r_q3);
		printf("%-40s %9.*f %9.*f %6.3f %-9s  %-9s %-10s raw = %s\n",
		       r->r_name, r->r_ours < 100 ? 3 : 0, r->r_ours,
		       r->r_raw < 100 ? 3 : 0, r->r_raw, r->r_ratio, qs,
		       r->r_unit, gs, r->r_raw_is);
	}
	*first = false;
}

/* Figure 1: each side's median over the rounds; its ratio to FDMI off:
 * the median of the cycles' ratios (each cycle four slices side by side
 * in time), with their quartiles. */
static void figs_cost(unsigned rounds, bool json, bool *first)
{
	static double q[CYCLES_MAX];

	for (unsigned sd = S_ON0; sd < SIDES; sd++)
		for (unsigned k = 0; k < 2; k++) {
			double v[ROUNDS_MAX], b[ROUNDS_MAX];
			char name[80];
			struct row r = { name, "ops/s", "FDMI off", 0, 0, 0,
					 0.95, false, 0, 0 };

			for (unsigned i = 0; i < rounds; i++) {
				v[i] = k == 0 ? res[sd][i].w : res[sd][i].p;
				b[i] = k == 0 ? res[S_OFF][i].w : res[S_OFF][i].p;
			}
			for (unsigned c = 0; c < nr_cycles; c++)
				q[c] = slrate[sd][k][c] / slrate[S_OFF][k][c];
			snprintf(name, sizeof name, "%s, %s",
				 k == 0 ? "4K write qd16" : "idx PUT qd16",
				 side_name[sd]);
			r.r_ours = median(v, rounds);
			r.r_raw = median(b, rounds);
			r.r_ratio = median(q, nr_cycles);
			r.r_q1 = q[nr_cycles / 4];
			r.r_q3 = q[(3 * nr_cycles) / 4];
			row_print(&r, rounds, json, first);
		}
}

/* What one op of figure k (0 writes, 1 PUTs) cost side sd in round i:
 * m 0 CPU us, 1 bytes to storage, 2 metadata commits (group commits:
 * acks ride them, or make batches of their own, counted there);
 * m 3: the mean time of a group commit (ms; not per op). */
static double per_op(unsigned sd, unsigned i, unsigned k, unsigned m)
{
	const struct side_res *s = &res[sd][i];
	const struct cnt *c = &s->spent[k];
	double n = s->ops[k] ? (double)s->ops[k] : 1;

	return m == 0 ? c->c_cpu * 1e6 / n :
	       m == 1 ? c->c_wbytes / n :
	       m == 2 ? (double)c->c_commits / n :
			c->c_commit_us / 1e3 /
			(c->c_commits ? (double)c->c_commits : 1);
}

/* Figure 1, where the cost goes: CPU, bytes and commits per op beside
 * FDMI off's (medians over the rounds; counts, which the machine's load
 * moves far less than it moves ops/s). */
static void figs_spent(unsigned rounds, bool json, bool *first)
{
	static const char *const what[4] = {"CPU per", "disk bytes per",
					    "LMDB commits per",
					    "group commit time,"};
	static const char *const units[4] = {"us/op", "B/op", "commits/op",
					     "ms"};

	for (unsigned m = 0; m < 4; m++)
		for (unsigned sd = S_ON0; sd < SIDES; sd++)
			for (unsigned k = 0; k < 2; k++) {
				double v[ROUNDS_MAX], b[ROUNDS_MAX];
				char name[80];
				struct row r = { name, units[m], "FDMI off", 0,
						 0, 0, 0, true, 0, 0 };

				for (unsigned i = 0; i < rounds; i++) {
					v[i] = per_op(sd, i, k, m);
					b[i] = per_op(S_OFF, i, k, m);
				}
				snprintf(name, sizeof name, "%s %s, %s",
					 what[m], k ? "PUT" : "4K write",
					 side_name[sd]);
				r.r_ours = median(v, rounds);
				r.r_raw = median(b, rounds);
				r.r_ratio = r.r_ours / r.r_raw;
				row_print(&r, rounds, json, first);
			}
}

/* Figures 2 and 3: delivery rate beside the fill's; the 1-consumer
 * side's lag beside its ops' own latency (medians over the rounds). */
static void figs_deliver(unsigned rounds, bool json, bool *first)
{
	double v[ROUNDS_MAX], b[ROUNDS_MAX];
	struct row r = { "delivery to 1 consumer (next 1024 + ack)",
			 "records/s", "the engine writing them (PUT x250 qd16)",
			 0, 0, 0, 0, false, 0, 0 };

	memcpy(v, drn, rounds * sizeof *v);
	memcpy(b, fill, rounds * sizeof *b);
	r.r_ours = median(v, rounds);
	r.r_raw = median(b, rounds);
	r.r_ratio = r.r_ours / r.r_raw;
	row_print(&r, rounds, json, first);
	for (unsigned k = 0; k < 4; k++) {
		static const char *const names[4] = {
			"lag p50, 4K write qd16, 1 consumer",
			"lag p99, 4K write qd16, 1 consumer",
			"lag p50, idx PUT qd16, 1 consumer",
			"lag p99, idx PUT qd16, 1 consumer"};
		static const char *const raws[4] = {
			"write latency p50", "write latency p99",
			"PUT latency p50", "PUT latency p99"};
		struct row l = { names[k], "ms", raws[k], 0, 0, 0, 0, true,
				 0, 0 };

		for (unsigned i = 0; i < rounds; i++) {
			const struct side_res *s = &res[S_C1][i];

			v[i] = k < 2 ? s->wlag[k % 2] : s->plag[k % 2];
			b[i] = k < 2 ? s->wlat[k % 2] : s->plat[k % 2];
		}
		l.r_ours = median(v, rounds);
		l.r_raw = median(b, rounds);
		l.r_ratio = l.r_ours / l.r_raw;
		row_print(&l, rounds, json, first);
	}
}

static void figs(unsigned rounds, uint32_t nrec, unsigned slice_ms,
		 bool json)
{
	bool first = true;

	if (json)
		printf("[");
	else
		printf("%-40s %9s %9s %6s %-9s  %-9s %-10s %s\n", "name",
		       "ours", "raw", "ratio", "(q1-q3)", "unit", "goal",
		       "raw is");
	figs_cost(rounds, json, &first);
	figs_deliver(rounds, json, &first);
	figs_spent(rounds, json, &first);
	if (json) {
		printf("\n]\n");
		return;
	}
	printf("# %s\n# ops/s: medians of %u rounds of %g s a figure and side; "
	       "the sides run side by side (a process and a fresh store each, "
	       "every round) in turns of %u ms, the order turning; cost "
	       "ratios: median (and quartiles) of the %u cycles' ratios, a "
	       "cycle being one turn of each side; delivery: %u records; lag: "
	       "now - fr_time_ns as the consumer receives a record (it sleeps "
	       "1 ms on an empty batch)\n", emu, rounds, secs, slice_ms,
	       nr_cycles, nrec);
}

static void usage(void)
{
	fprintf(stderr, "usage: strata_bench_fdmi --dir DIR [--seconds S] "
		"[--rounds 1..%u] [--records N] [--slice-ms MS] [--json]\n"
		"       strata_bench_fdmi --dir DIR --serve off|on|c1|c3\n"
		"       strata_bench_fdmi --dir DIR --deliver N\n", ROUNDS_MAX);
}

/* The mean time of side sd's acks in round r (ms). */
static double ack_ms(unsigned sd, unsigned r)
{
	const struct cnt *c = res[sd][r].spent;
	uint64_t n = c[0].c_acks + c[1].c_acks;

	return n ? (c[0].c_ack_us + c[1].c_ack_us) / 1e3 / (double)n : 0;
}

/* Every round: the four sides side by side, then the delivery. */
static int rounds_run(const char *dir, unsigned rounds, uint32_t nrec,
		      unsigned slice_ms)
{
	char self[1024];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	unsigned nsl = (unsigned)(secs * 1e3 / slice_ms + 0.5);

	if (n <= 0)
		return 1;
	self[n] = '\0';
	nsl = nsl ? nsl : 1;
	if (rounds * nsl > CYCLES_MAX) {
		fprintf(stderr, "bench_fdmi: %u slices (at most %u): fewer "
			"seconds or longer slices\n", rounds * nsl, CYCLES_MAX);
		return 1;
	}
	nr_cycles = rounds * nsl;
	for (unsigned r = 0; r < rounds; r++) {
		if (round_cost(self, dir, r, nsl, slice_ms) != 0)
			return 1;
		if (run_deliver(self, dir, nrec, &fill[r], &drn[r]) != 0) {
			fprintf(stderr, "bench_fdmi: delivery failed\n");
			return 1;
		}
		fprintf(stderr, "# round %u:", r + 1);
		for (unsigned sd = 0; sd < SIDES; sd++)
			fprintf(stderr, " %s: write %.0f, PUT %.0f ops/s%s",
				side_arg[sd], res[sd][r].w, res[sd][r].p,
				side_cons[sd] ? "" : ";");
		fprintf(stderr, "; delivery %.0f records/s, fill %.0f\n",
			drn[r], fill[r]);
		for (unsigned sd = 0; sd < SIDES; sd++)
			if (side_cons[sd] > 0)
				fprintf(stderr, "#   %s: consumer 0 acked %llu "
					"times, an ack %.2f ms on average\n",
					side_arg[sd], res[sd][r].batches,
					ack_ms(sd, r));
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *one = NULL;
	unsigned rounds = 3;
	uint32_t nrec = 200000, deliver = 0;
	unsigned slice_ms = 250;
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			nrec = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--serve") == 0 && i + 1 < argc)
			one = argv[++i];
		else if (strcmp(argv[i], "--slice-ms") == 0 && i + 1 < argc)
			slice_ms = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--deliver") == 0 && i + 1 < argc)
			deliver = (uint32_t)strtoul(argv[++i], NULL, 10);
	}
	if (dir == NULL || secs <= 0 || rounds == 0 || rounds > ROUNDS_MAX ||
	    nrec == 0 || slice_ms == 0) {
		usage();
		return 2;
	}
	if (one != NULL) {
		for (unsigned sd = 0; sd < SIDES; sd++)
			if (strcmp(one, side_arg[sd]) == 0)
				return serve(dir, sd);
		usage();
		return 2;
	}
	if (deliver != 0)
		return one_deliver(dir, deliver);
	if (rounds_run(dir, rounds, nrec, slice_ms) != 0)
		return 1;
	figs(rounds, nrec, slice_ms, json);
	return 0;
}
