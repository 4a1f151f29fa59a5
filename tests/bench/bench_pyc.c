/*
 * bench_pyc.c — the C side of tests/bench/bench_python.py: 4 KiB reads, one
 * in flight, through the public API, timed the way the Python binding does
 * them (Object.read_into(): clovis_obj_op() READ of one extent into the
 * caller's buffer, clovis_op_sync(): launch, wait for STABLE, free).
 *
 * Usage: bench_pyc DATA_DIR OBJECT_ID OPS BLOCKS [GAP_NS]
 *   opens the existing embedded store DATA_DIR, opens OBJECT_ID ("HI:LO"),
 *   reads block i % BLOCKS for i in 0..OPS-1 (with GAP_NS: each read
 *   followed by that many ns of busy CPU in this thread, as a caller that
 *   does some work between reads, a Python loop's own time) and prints
 *   one line
 *   "ns_per_op N switches_per_op S migrations_per_op M": the time, the
 *   context switches (getrusage: every thread of the process) and the
 *   CPU migrations of the process's threads (se.nr_migrations of
 *   /proc/self/task/x/sched; 0 where the kernel does not show it) per
 *   read.  Exit status 1 with a message on any error.
 *
 * Also a shared object for ctypes (bench_python.py's third figure: the same
 * read, one C call per read from a Python loop, without the binding):
 * pyc_open(DATA_DIR, OBJECT_ID), pyc_read(BLOCK), pyc_close().
 *
 * Built by tests/bench/module.mk (make tests) as BUILD/bench_pyc and
 * BUILD/bench_pyc.so, against BUILD/libstrata.so (the library the binding
 * loads) and <strata/clovis.h> only: the public API, as a user program.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <strata/clovis.h>

#define BS 4096u
/* The three calls bench_python.py's ctypes loop finds in bench_pyc.so (the
 * build hides every other symbol: -fvisibility=hidden). */
#define PYC_EXPORT __attribute__((visibility("default")))

static int fail(const char *what, int rc)
{
	fprintf(stderr, "bench_pyc: %s: %s: %s\n", what, clovis_strerror(rc),
		clovis_errmsg());
	return 1;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Context switches of the process so far (every thread). */
static double switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_nvcsw + (double)ru.ru_nivcsw;
}

/* CPU migrations of the process's live threads so far (the scheduler's
 * se.nr_migrations), 0 when the kernel does not show them. */
static double migrations(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	double n = 0;

	while (d != NULL && (de = readdir(d)) != NULL) {
		char path[64], line[128];
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%.20s/sched",
			 de->d_name);
		f = fopen(path, "r");
		while (f != NULL && fgets(line, sizeof line, f) != NULL) {
			char *colon = strchr(line, ':');

			if (colon != NULL &&
			    strncmp(line, "se.nr_migrations", 16) == 0)
				n += atof(colon + 1);
		}
		if (f != NULL)
			fclose(f);
	}
	if (d != NULL)
		closedir(d);
	return n;
}

/* Keep this thread's CPU busy for ns nanoseconds (the caller's own work
 * between two reads). */
static void busy_ns(double ns)
{
	double end = now_ns() + ns;

	while (now_ns() < end)
		;
}

/* One read of block blk of o into buf, as Object.read_into() does it. */
static int read_one(struct clovis_obj *o, uint64_t blk, void *buf)
{
	uint64_t start = blk, nr = 1;
	struct clovis_extvec ext = { 1, &start, &nr };
	size_t len = BS;
	struct clovis_bufvec bv = { 1, &buf, &len };
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(o, CLOVIS_OC_READ, &ext, &bv, 0, &op);

	return rc != 0 ? rc : clovis_op_sync(op);
}

/* The store and object of pyc_open() (ctypes use; one at a time). */
static struct clovis *pyc_cl;
static struct clovis_obj pyc_obj;
static char pyc_buf[BS] __attribute__((aligned(4096)));

/* Open the store in dir and object id in *cl and *o; 0 or an error
 * (printed). */
static int open_both(const char *dir, const char *ids, struct clovis **cl,
		     struct clovis_obj *o)
{
	struct clovis_conf conf = { .cc_mode = CLOVIS_MODE_EMBEDDED,
				    .cc_data_dir = dir };
	struct clovis_op *op = NULL;
	struct clovis_id id;
	int rc = clovis_init(cl, &conf);

	if (rc != 0)
		return fail("open the store", rc);
	rc = clovis_id_parse(ids, &id);
	if (rc == 0)
		rc = clovis_obj_init(o, clovis_default_realm(*cl), &id, NULL);
	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0) {
		fail("open the object", rc);
		clovis_fini(*cl);
		*cl = NULL;
	}
	return rc;
}

PYC_EXPORT int pyc_open(const char *dir, const char *id)
{
	return open_both(dir, id, &pyc_cl, &pyc_obj);
}

PYC_EXPORT int pyc_read(unsigned long blk)
{
	return read_one(&pyc_obj, blk, pyc_buf);
}

PYC_EXPORT void pyc_close(void)
{
	clovis_fini(pyc_cl);
	pyc_cl = NULL;
}

int main(int argc, char **argv)
{
	struct clovis *cl = NULL;
	struct clovis_obj o;
	unsigned long ops, blocks;
	static char buf[BS] __attribute__((aligned(4096)));
	double t0, t1, sw0, sw1, mg0, mg1, gap_ns;
	int rc = 0;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: bench_pyc DATA_DIR OBJECT_ID OPS BLOCKS "
			"[GAP_NS]\n");
		return 2;
	}
	gap_ns = argc == 6 ? strtod(argv[5], NULL) : 0;
	ops = strtoul(argv[3], NULL, 10);
	blocks = strtoul(argv[4], NULL, 10);
	if (ops == 0 || blocks == 0)
		return fail("OPS and BLOCKS must be > 0", -22);
	if (open_both(argv[1], argv[2], &cl, &o) != 0)
		return 1;
	for (unsigned long i = 0; i < blocks && rc == 0; i++) /* warm-up */
		rc = read_one(&o, i, buf);
	mg0 = migrations();
	sw0 = switches();
	t0 = now_ns();
	for (unsigned long i = 0; i < ops && rc == 0; i++) {
		rc = read_one(&o, i % blocks, buf);
		if (gap_ns > 0)
			busy_ns(gap_ns);
	}
	t1 = now_ns();
	sw1 = switches();
	mg1 = migrations();
	if (rc != 0) {
		clovis_fini(cl);
		return fail("read", rc);
	}
	printf("ns_per_op %.0f switches_per_op %.3f migrations_per_op %.3f\n",
	       (t1 - t0) / ops, (sw1 - sw0) / ops, (mg1 - mg0) / ops);
	clovis_fini(cl);
	return 0;
}
