/*
 * bench_addb.c — the cost of telemetry on the hot path (issue 30,
 * "Benchmark"): an embedded store, 4 KiB writes to STABLE with 16 in
 * flight and index GETs at 1 in flight, with the metrics on (this
 * program, the release library) beside the same figures with telemetry
 * compiled out (strata_bench_addb_off: every library object built with
 * -DSTRATA_NO_ADDB), measured in alternated rounds in one run.
 *
 *   strata_bench_addb --dir DIR [--seconds S] [--rounds K] [--json]
 *                     [--off PATH]
 *   strata_bench_addb --dir DIR --seconds S --one      (one side, one
 *                     round: prints "w4k OPS get1 OPS"; what --off runs)
 *   strata_bench_addb --dir DIR --one --ops N [--phase w4k|get1]
 *                     (a fixed count: N writes, N GETs, or with --phase
 *                     only those of one workload, run between callgrind's
 *                     START and STOP_INSTRUMENTATION so that a run under
 *                     valgrind --tool=callgrind --instr-atstart=no counts
 *                     that phase alone, every thread: addb_instr.sh)
 *
 * Four sides a round: compiled out, metrics on, metrics + trace records
 * of every op (--trace 1), metrics + records of one op in 100 (--trace
 * 100).  Ratios against compiled out; goals: metrics >= 0.98 (cost at most
 * 2 %), records 1 in 100 >= 0.95 (at most 5 %).  Devices: files on the
 * disk of DIR (O_DIRECT), NVRAM on /dev/shm.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"

/* Callgrind's client requests (the header comes with valgrind): a few
 * no-op instructions outside valgrind.  Instrumentation on and off is
 * global (every thread), unlike its ZERO and DUMP_STATS (the calling
 * thread only), hence one phase a run.  Without the header the --ops
 * run says "marks 0" and addb_instr.sh refuses its counts. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CG_MARKS 1
#endif
#endif
#ifndef HAVE_CG_MARKS
#define HAVE_CG_MARKS 0
#define CALLGRIND_START_INSTRUMENTATION do { } while (0)
#define CALLGRIND_STOP_INSTRUMENTATION do { } while (0)
#endif

#define QD 16u
#define NKEYS 10000u
#define ROUNDS_MAX 16u

static double secs = 3;
static unsigned trace_n;  /* --trace N: records of one op in N */
static uint64_t ops_n;    /* --ops N: N writes and N GETs, not seconds */
static uint64_t done_w, done_g;  /* ops the last phases made */
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

static void check(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "bench_addb: %s: %s: %s\n", what,
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

static void setup(const char *dir)
{
	struct clovis_conf conf = { .cc_mode = CLOVIS_MODE_EMBEDDED,
				    .cc_flags = CLOVIS_CONF_CREATE,
				    .cc_data_dir = dir };
	struct clovis_obj_attr a = { .oa_block_shift = 12,
				     .oa_layout = CLOVIS_LAYOUT_PLAIN,
				     .oa_tier = CLOVIS_TIER_FLASH };
	struct clovis_op *op = NULL;
	struct clovis_id id;

	check(clovis_init(&cl, &conf), "init");
	for (uint32_t i = 0; i < QD; i++) {
		id = (struct clovis_id){ .ci_hi = 0xadb0000000000000ull,
					 .ci_lo = i + 1 };
		check(clovis_obj_init(&objs[i], clovis_default_realm(cl), &id,
				      &a), "obj init");
		check(run(clovis_entity_op(&objs[i].ob_entity, CLOVIS_EO_CREATE,
					   &op), &op), "obj create");
	}
	id = (struct clovis_id){ .ci_hi = 0xadb1000000000000ull, .ci_lo = 1 };
	check(clovis_idx_init(&ix, clovis_default_realm(cl), &id), "idx init");
	check(run(clovis_entity_op(&ix.in_entity, CLOVIS_EO_CREATE, &op), &op),
	      "idx create");
	for (uint32_t i = 0; i < NKEYS; i += 100) {
		char kb[100][16], vb[100][64];
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

/* One writer: 4 KiB writes to its own object, each to STABLE. */
static void *writer(void *arg)
{
	struct clovis_obj *o = arg;
	static __thread unsigned char buf[4096] __attribute__((aligned(4096)));
	uint64_t n = 0, blk = 0, lim = (ops_n + QD - 1) / QD;

	while (!stop && (ops_n == 0 || n < lim)) {
		uint64_t start = blk++ % 4096, nr = 1;
		struct clovis_extvec ext = { 1, &start, &nr };
		void *b = buf;
		size_t len = sizeof buf;
		struct clovis_bufvec bv = { 1, &b, &len };
		struct clovis_op *op = NULL;

		check(run(clovis_obj_op(o, CLOVIS_OC_WRITE, &ext, &bv, 0, &op),
			  &op), "write");
		n++;
	}
	return (void *)(uintptr_t)n;
}

static double fig_w4k(void)
{
	pthread_t t[QD];
	uint64_t n = 0;
	double t0;

	stop = 0;
	t0 = now();
	for (uint32_t i = 0; i < QD; i++)
		pthread_create(&t[i], NULL, writer, &objs[i]);
	while (ops_n == 0 && now() - t0 < secs)
		usleep(10000);
	stop = ops_n == 0;
	for (uint32_t i = 0; i < QD; i++) {
		void *r;

		pthread_join(t[i], &r);
		n += (uintptr_t)r;
	}
	done_w = n;
	return n / (now() - t0);
}

static double fig_get1(void)
{
	uint64_t n = 0, rnd = 88172645463325252ull;
	double t0 = now();

	while (ops_n ? n < ops_n : now() - t0 < secs) {
		for (uint32_t k = 0; k < 64 && (ops_n == 0 || n < ops_n);
		     k++) {
			char key[16];
			void *kp = key, *vp = NULL;
			size_t kl, vl = 0;
			int32_t rc1 = 1;
			struct clovis_bufvec kv = { 1, &kp, &kl },
					     vv = { 1, &vp, &vl };
			struct clovis_op *op = NULL;

			rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
			kl = (size_t)snprintf(key, sizeof key, "k%08u",
					      (unsigned)(rnd % NKEYS));
			check(run(clovis_idx_op(&ix, CLOVIS_IC_GET, &kv, &vv,
						&rc1, 0, &op), &op), "get");
			check(rc1, "get record");
			free(vp);
			n++;
		}
	}
	done_g = n;
	return n / (now() - t0);
}

/* One side: run path --one (a store of its own under dir). */
static int run_off(const char *path, const char *dir, unsigned tr,
		   double *w, double *g)
{
	char cmd[2048];
	FILE *p;
	int rc;

	snprintf(cmd, sizeof cmd, "'%s' --dir '%s' --seconds %g --one "
		 "--trace %u", path, dir, secs, tr);
	p = popen(cmd, "r");
	if (p == NULL)
		return -errno;
	rc = fscanf(p, "w4k %lf get1 %lf", w, g) == 2 ? 0 : -EIO;
	if (pclose(p) != 0)
		rc = -EIO;
	return rc;
}

#define SIDES 4u
static double w[SIDES][ROUNDS_MAX], g[SIDES][ROUNDS_MAX];

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The figures: each side's median, and the median of its rounds' ratios
 * to compiled out. */
static void figs(unsigned rounds, bool json)
{
	static const char *const names[SIDES] = {
		NULL, "metrics on", "metrics + records 1:1",
		"metrics + records 1:100"};
	static const double goal[SIDES] = {0, 0.98, 0, 0.95};
	const char *emu = "embedded store, flash = files on the disk "
			  "(O_DIRECT), NVRAM on /dev/shm";
	double wq[ROUNDS_MAX], gq[ROUNDS_MAX];
	bool first = true;

	if (json)
		printf("[");
	else
		printf("%-40s %10s %10s %6s  %-6s %-10s %s\n", "name", "ours",
		       "raw", "ratio", "unit", "goal",
		       "raw = telemetry compiled out");
	for (unsigned sd = 1; sd < SIDES; sd++) {
		double v[ROUNDS_MAX];

		for (unsigned r = 0; r < rounds; r++) {
			wq[r] = w[sd][r] / w[0][r];
			gq[r] = g[sd][r] / g[0][r];
		}
		for (unsigned k = 0; k < 2; k++) {
			double *q = k == 0 ? wq : gq, ours, raw, ratio;
			char name[80];

			memcpy(v, k == 0 ? w[sd] : g[sd], rounds * sizeof *v);
			ours = median(v, rounds);
			memcpy(v, k == 0 ? w[0] : g[0], rounds * sizeof *v);
			raw = median(v, rounds);
			ratio = median(q, rounds);
			snprintf(name, sizeof name, "%s, %s",
				 k == 0 ? "4K write qd16" : "idx GET qd1",
				 names[sd]);
			if (json) {
				printf("%s{\"name\":\"%s\",\"ours\":%.1f,"
				       "\"raw\":%.1f,\"ratio\":%.3f,\"unit\":"
				       "\"ops/s\",\"goal\":%.2f,\"rounds\":%u}",
				       first ? "" : ",", name, ours, raw, ratio,
				       goal[sd], rounds);
				first = false;
			} else {
				char gs[16] = "";

				if (goal[sd] > 0)
					snprintf(gs, sizeof gs, ">=%.2f %s",
						 goal[sd], ratio >= goal[sd] ?
						 "met" : "NOT");
				printf("%-40s %10.0f %10.0f %6.3f  %-6s %-10s %s\n",
				       name, ours, raw, ratio, "ops/s", gs, emu);
			}
		}
	}
	if (json)
		printf("]\n");
	else
		printf("# medians of %u rounds of %g s a figure and side; each "
		       "side a fresh process and store, the order turning\n",
		       rounds, secs);
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *off = NULL, *phase = NULL;
	unsigned rounds = 3;
	bool json = false, one = false;
	char self[1024], offp[1100], sdir[1024];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--off") == 0 && i + 1 < argc)
			off = argv[++i];
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--one") == 0)
			one = true;
		else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc)
			trace_n = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
			ops_n = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--phase") == 0 && i + 1 < argc)
			phase = argv[++i];
	}
	if (dir == NULL || secs <= 0 || rounds == 0 || rounds > ROUNDS_MAX ||
	    (phase != NULL && strcmp(phase, "w4k") != 0 &&
	     strcmp(phase, "get1") != 0)) {
		fprintf(stderr, "usage: strata_bench_addb --dir DIR [--seconds "
			"S] [--rounds 1..%u] [--json] [--off PATH] [--one "
			"[--ops N [--phase w4k|get1]]]\n",
			ROUNDS_MAX);
		return 2;
	}
	if (one) {
		snprintf(sdir, sizeof sdir, "%s/addb-%d", dir, (int)getpid());
		setup(sdir);
		if (trace_n != 0)
			check(clovis_addb_trace(trace_n, 64), "trace on");
		double fw = 0, fg = 0;
		bool pw = phase == NULL || strcmp(phase, "w4k") == 0,
		     pg = phase == NULL || strcmp(phase, "get1") == 0;

		/* under callgrind, the phases alone: setup and teardown run
		 * uninstrumented */
		if (pw) {
			CALLGRIND_START_INSTRUMENTATION;
			fw = fig_w4k();
			CALLGRIND_STOP_INSTRUMENTATION;
		}
		if (pg) {
			CALLGRIND_START_INSTRUMENTATION;
			fg = fig_get1();
			CALLGRIND_STOP_INSTRUMENTATION;
		}
		if (ops_n != 0)
			printf("w4k %.1f get1 %.1f marks %d writes %llu "
			       "gets %llu\n", fw, fg, HAVE_CG_MARKS,
			       (unsigned long long)done_w,
			       (unsigned long long)done_g);
		else
			printf("w4k %.1f get1 %.1f\n", fw, fg);
		clovis_fini(cl);
		check(clovis_store_destroy(sdir), "destroy");
		return 0;
	}
	/* Both sides run the same way: a child process on a fresh store per
	 * round, in turn, the first side alternating from round to round. */
	{
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 5);

		if (n <= 0)
			return 1;
		self[n] = '\0';
	}
	if (off == NULL) {
		snprintf(offp, sizeof offp, "%s_off", self);
		off = offp;
	}
	for (unsigned r = 0; r < rounds; r++) {
		const char *bin[SIDES] = {off, self, self, self};
		const unsigned tr[SIDES] = {0, 0, 1, 100};
		int rc = 0;

		/* the order turns from round to round */
		for (unsigned k = 0; rc == 0 && k < SIDES; k++) {
			unsigned sd = (k + r) % SIDES;

			rc = run_off(bin[sd], dir, tr[sd], &w[sd][r], &g[sd][r]);
		}
		if (rc != 0) {
			fprintf(stderr, "bench_addb: a side failed (%s, %s)\n",
				self, off);
			return 1;
		}
		fprintf(stderr, "# round %u: 4 KiB writes qd16 %.0f / %.0f / "
			"%.0f / %.0f, idx GET qd1 %.0f / %.0f / %.0f / %.0f "
			"ops/s (compiled out / metrics / +records 1:1 / 1:100)\n",
			r + 1, w[0][r], w[1][r], w[2][r], w[3][r], g[0][r],
			g[1][r], g[2][r], g[3][r]);
	}
	figs(rounds, json);
	return 0;
}
