/*
 * bench_isc.c — function shipping (issue 32, "Benchmark"): on a 3-server
 * loopback cluster, a container of float64 objects (1 GiB in all by
 * default), its minimum, maximum, mean and a histogram computed
 *   shipped, declarative   record 8 / field x f64 0 / count / min x /
 *                          max x / sum x / hist x -64 64 64
 *   shipped, Lua           a map over each extent (read_f64: 16384
 *                          values per table, the loop in locals),
 *                          emitting min, max, sum, n and one key per
 *                          bucket
 * against the raw baseline: every object read whole to this client (4
 * threads, 4 MiB per read) and the same figures computed here.  One run,
 * the three ways one after the other on the same data; each shipped
 * result checked against the baseline's (min, max, count and every
 * bucket exactly, the mean to 1e-9 relative), else the bench fails.
 *
 * Figures (ours = shipped, raw = read to the client):
 *   isc_decl_wall_s     wall time of the call; ratio raw/ours (the speed-
 *                       up), goal >= 3
 *   isc_decl_net_bytes  bytes that reached the client: the call's
 *                       is_bytes_result against the bytes read; ratio
 *                       ours/raw, goal < 0.01
 *   isc_decl_cpu_s      this process's CPU (getrusage: user + system, its
 *                       library threads included); ratio ours/raw
 *   isc_lua_wall_s, isc_lua_net_bytes, isc_lua_cpu_s   the same for Lua
 *   isc_lua_vs_decl     speed of Lua over the declarative call
 *                       (t_decl / t_lua), goal >= 0.5
 * ("Goal" as in issue 32: the shipped call moves less than 1 % of the
 * bytes and is at least 3x faster than reading; Lua at least half the
 * declarative speed.)
 *
 *   strata_bench_isc --dir DIR [--size BYTES] [--obj-size BYTES]
 *                    [--port P] [--json]
 *
 * --size: the container's bytes (default 1G; K, M, G suffixes), a
 * multiple of --obj-size (default 32M); objects are pdclust 4+2 with
 * 1 MiB units, 1 MiB blocks.  The cluster: `strata cluster up --nodes 3
 * --no-etcd --flash-size 512MiB --base-port P` (default 27600) with the
 * strata beside this program, in DIR/isc-PID, stopped (`cluster down`)
 * and removed at the end, on failure and on SIGINT/SIGTERM.  Writing the
 * data (setup, not timed) takes about as long as reading it.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
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

#define BLOCK_SHIFT 20u
#define BLOCK_SIZE (1u << BLOCK_SHIFT)
#define IO_BYTES (4u << 20)
#define THREADS 4u
#define H_LO (-64.0)
#define H_HI 64.0
#define H_NB 64u
#define OBJ_MAX 65536u

static const char decl_prog[] =
	"record 8\nfield x f64 0\ncount\nmin x\nmax x\nsum x\n"
	"hist x -64 64 64\n";

static const char lua_prog[] =
	"local LO, HI, NB = -64.0, 64.0, 64\n"
	"local IW = NB / (HI - LO)\n"
	"local mn, mx, s, n, h = math.huge, -math.huge, 0.0, 0, {}\n"
	"for i = 0, NB - 1 do h[i] = 0 end\n"
	"function map(ext)\n"
	"  if ext.length == nil then return end\n"
	"  local off, e = ext.offset, ext.offset + ext.length\n"
	"  local lmn, lmx, ls, hh = mn, mx, s, h\n"
	"  while off + 8 <= e do\n"
	"    local t = read_f64(off, 16384)\n"
	"    local k = #t\n"
	"    for i = 1, k do\n"
	"      local x = t[i]\n"
	"      if x < lmn then lmn = x end\n"
	"      if x > lmx then lmx = x end\n"
	"      ls = ls + x\n"
	"      local b = (x - LO) * IW // 1\n"
	"      if b < 0 then b = 0 elseif b >= NB then b = NB - 1 end\n"
	"      hh[b] = hh[b] + 1\n"
	"    end\n"
	"    n = n + k\n"
	"    off = off + 8 * k\n"
	"  end\n"
	"  mn, mx, s = lmn, lmx, ls\n"
	"end\n"
	"function finish()\n"
	"  if n == 0 then return end\n"
	"  emit('min', mn, 'min') emit('max', mx, 'max')\n"
	"  emit('sum', s, 'sum') emit('n', n, 'sum')\n"
	"  for i = 0, NB - 1 do\n"
	"    if h[i] > 0 then emit(string.format('h%02d', i), h[i], 'sum') end\n"
	"  end\n"
	"end\n";

/* The figures, however computed. */
struct figs {
	double f_min, f_max, f_sum;
	uint64_t f_n;
	uint64_t f_hist[H_NB];
};

static struct clovis *cl;
static char cdir[PATH_MAX], strata_bin[PATH_MAX];
static unsigned port = 27600;
static bool cluster_started;
static struct clovis_container co;
static struct clovis_obj objs[OBJ_MAX];
static uint32_t nobj, made;
static uint64_t obj_blocks;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's CPU seconds, user and system, every thread. */
static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Run strata with args (NULL-terminated) and wait; its exit status. */
static int strata_run(const char *const *args, bool quiet)
{
	pid_t pid = fork();
	int st = 0;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (quiet && freopen("/dev/null", "w", stdout) == NULL)
			_exit(127);
		execv(strata_bin, (char *const *)args);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Stop the cluster and remove its directory (at exit, on failure). */
static void cluster_stop(void)
{
	char cmd[PATH_MAX + 16];

	/* what is printed goes out once: not again from the child that
	 * stops the cluster */
	fflush(NULL);
	if (cl != NULL) {
		clovis_fini(cl);
		cl = NULL;
	}
	if (cluster_started) {
		const char *a[] = { "strata", "-q", "cluster", "down", "--dir",
				    cdir, NULL };

		cluster_started = false;
		strata_run(a, true);
	}
	if (cdir[0] != '\0') {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", cdir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_isc: could not remove %s\n",
				cdir);
		cdir[0] = '\0';
	}
}

static void on_signal(int sig)
{
	(void)sig;
	exit(1); /* atexit: cluster_stop() */
}

static void fail(const char *what, int rc)
{
	fprintf(stderr, "bench_isc: %s: %s: %s\n", what,
		rc < 0 ? clovis_strerror(rc) : "failed",
		rc < 0 ? clovis_errmsg() : "");
	exit(1);
}

/* Start the 3-server cluster and open a client of it. */
static void cluster_start(const char *dir)
{
	char p[16], conf[PATH_MAX + 32];
	const char *a[] = { "strata", "-q", "cluster", "up", "--nodes", "3",
			    "--no-etcd", "--flash-size", "512MiB",
			    "--base-port", p, "--dir", cdir, NULL };
	struct clovis_conf cc = { .cc_mode = CLOVIS_MODE_CLUSTER };
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

	if (n <= 0)
		fail("readlink /proc/self/exe", -errno);
	self[n] = '\0';
	snprintf(strata_bin, sizeof strata_bin, "%s/strata", dirname(self));
	snprintf(cdir, sizeof cdir, "%s/isc-%d", dir, (int)getpid());
	snprintf(p, sizeof p, "%u", port);
	cluster_started = true;
	if (strata_run(a, true) != 0)
		fail("strata cluster up", 1);
	snprintf(conf, sizeof conf, "%s/cluster.yaml", cdir);
	cc.cc_cluster_conf = conf;
	if (clovis_init(&cl, &cc) != 0)
		fail("clovis_init (cluster)", -EIO);
}

/* Value i of object o: a field in about (-40, 60), some past HI. */
static double value(uint64_t i, uint64_t *rnd)
{
	*rnd = *rnd * 6364136223846793005ull + 1442695040888963407ull;
	return 20.0 * sin((double)i / 3000.0) + 30.0 *
	       ((double)(*rnd >> 11) / (double)(1ull << 53) - 0.5) +
	       (i % 100000 == 0 ? 50.0 : 0.0);
}

static int obj_io(struct clovis_obj *o, enum clovis_obj_opcode opc,
		  uint64_t start, uint64_t nr, void *buf)
{
	struct clovis_extvec ext = { 1, &start, &nr };
	size_t len = (size_t)nr * BLOCK_SIZE;
	struct clovis_bufvec bv = { 1, &buf, &len };
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(o, opc, &ext, &bv, 0, &op);

	return rc != 0 ? rc : clovis_op_sync(op);
}

/* The work of THREADS threads over the objects. */
struct work {
	pthread_mutex_t w_lock;
	uint32_t w_next;
	int w_rc;
	bool w_read;
	struct figs w_figs;     /* read: merged under w_lock */
	uint64_t w_bytes;
};

static void figs_init(struct figs *f)
{
	memset(f, 0, sizeof *f);
	f->f_min = INFINITY;
	f->f_max = -INFINITY;
}

static void figs_add(struct figs *f, double x)
{
	double b = floor((x - H_LO) / ((H_HI - H_LO) / H_NB));

	f->f_min = x < f->f_min ? x : f->f_min;
	f->f_max = x > f->f_max ? x : f->f_max;
	f->f_sum += x;
	f->f_n++;
	f->f_hist[b < 0 ? 0 : b >= H_NB ? H_NB - 1 : (uint32_t)b]++;
}

static void figs_merge(struct figs *d, const struct figs *s)
{
	d->f_min = s->f_min < d->f_min ? s->f_min : d->f_min;
	d->f_max = s->f_max > d->f_max ? s->f_max : d->f_max;
	d->f_sum += s->f_sum;
	d->f_n += s->f_n;
	for (uint32_t i = 0; i < H_NB; i++)
		d->f_hist[i] += s->f_hist[i];
}

/* One object written (setup) or read whole and its figures added. */
static int obj_one(struct work *w, uint32_t k, double *buf)
{
	uint64_t per = IO_BYTES / BLOCK_SIZE, rnd = 1000 + k, i = 0;
	struct figs f;
	int rc = 0;

	figs_init(&f);
	for (uint64_t b = 0; rc == 0 && b < obj_blocks; b += per) {
		uint64_t nr = obj_blocks - b < per ? obj_blocks - b : per;
		size_t nv = (size_t)nr * BLOCK_SIZE / 8;

		if (!w->w_read) {
			for (size_t j = 0; j < nv; j++)
				buf[j] = value(i++, &rnd);
			rc = obj_io(&objs[k], CLOVIS_OC_WRITE, b, nr, buf);
			continue;
		}
		rc = obj_io(&objs[k], CLOVIS_OC_READ, b, nr, buf);
		for (size_t j = 0; rc == 0 && j < nv; j++)
			figs_add(&f, buf[j]);
	}
	if (rc == 0 && w->w_read) {
		pthread_mutex_lock(&w->w_lock);
		figs_merge(&w->w_figs, &f);
		w->w_bytes += obj_blocks * BLOCK_SIZE;
		pthread_mutex_unlock(&w->w_lock);
	}
	return rc;
}

static void *worker(void *arg)
{
	struct work *w = arg;
	double *buf = malloc(IO_BYTES);

	for (;;) {
		uint32_t k;
		int rc;

		pthread_mutex_lock(&w->w_lock);
		k = w->w_next++;
		pthread_mutex_unlock(&w->w_lock);
		if (k >= nobj || buf == NULL)
			break;
		rc = obj_one(w, k, buf);
		if (rc != 0) {
			pthread_mutex_lock(&w->w_lock);
			w->w_rc = rc;
			pthread_mutex_unlock(&w->w_lock);
			break;
		}
	}
	free(buf);
	return NULL;
}

static int work_run(struct work *w)
{
	pthread_t th[THREADS];

	for (uint32_t i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, w);
	for (uint32_t i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	return w->w_rc;
}

/* The container and its objects, written. */
static void data_make(void)
{
	struct clovis_obj_attr a = {
		.oa_block_shift = BLOCK_SHIFT,
		.oa_layout = CLOVIS_LAYOUT_PDCLUST, .oa_data_units = 4,
		.oa_parity_units = 2, .oa_unit_shift = 20,
	};
	struct work w = { .w_lock = PTHREAD_MUTEX_INITIALIZER };
	struct clovis_op *op = NULL;
	struct clovis_id id;
	int rc = clovis_id_parse("@bench-isc", &id);

	if (rc == 0)
		rc = clovis_container_init(&co, cl, &id);
	if (rc == 0)
		rc = clovis_entity_op(&co.co_entity, CLOVIS_EO_CREATE, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	for (uint32_t k = 0; rc == 0 && k < nobj; k++) {
		struct clovis_id oid = { 0xbe15c00000000000ull, k };

		rc = clovis_obj_init(&objs[k], &co.co_realm, &oid, &a);
		if (rc == 0)
			rc = clovis_entity_op(&objs[k].ob_entity,
					      CLOVIS_EO_CREATE, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		made += rc == 0;
	}
	if (rc == 0)
		rc = work_run(&w);
	if (rc != 0)
		fail("write the container's objects", rc);
}

/* Merge a shipped container result (records per member) into f: the
 * declarative keys count, min(x), max(x), sum(x), hist(x); the Lua keys
 * min, max, sum, n, hNN. */
static int result_figs(const struct clovis_isc_result *res, struct figs *f)
{
	struct clovis_isc_rec r;
	size_t pos = 0;
	int rc;

	figs_init(f);
	while ((rc = clovis_isc_result_next(res, &pos, &r)) == 1) {
		const char *k = (const char *)r.ir_key + 16;
		size_t kl = r.ir_klen >= 16 ? r.ir_klen - 16 : 0;
		double lo, hi;
		uint32_t nb, b;
		const void *c;

		if (r.ir_type == CLOVIS_ISC_V_MIN)
			f->f_min = fmin(f->f_min, r.ir_float);
		else if (r.ir_type == CLOVIS_ISC_V_MAX)
			f->f_max = fmax(f->f_max, r.ir_float);
		else if (r.ir_type == CLOVIS_ISC_V_SUM)
			f->f_sum += r.ir_float;
		else if (r.ir_type == CLOVIS_ISC_V_COUNT ||
			 (kl == 1 && k[0] == 'n'))
			f->f_n += (uint64_t)r.ir_int;
		else if (r.ir_type == CLOVIS_ISC_V_HIST &&
			 clovis_isc_hist(&r, &lo, &hi, &nb, &c) == 0 &&
			 nb == H_NB)
			for (uint32_t i = 0; i < nb; i++) {
				uint64_t x;

				memcpy(&x, (const uint8_t *)c + 8 * i, 8);
				f->f_hist[i] += x;
			}
		else if (kl == 3 && k[0] == 'h' && sscanf(k + 1, "%2u", &b) ==
			 1 && b < H_NB)
			f->f_hist[b] += (uint64_t)r.ir_int;
	}
	return rc;
}

static void figs_check(const char *how, const struct figs *s,
		       const struct figs *l)
{
	if (s->f_min != l->f_min || s->f_max != l->f_max ||
	    s->f_n != l->f_n ||
	    memcmp(s->f_hist, l->f_hist, sizeof s->f_hist) != 0 ||
	    fabs(s->f_sum - l->f_sum) > 1e-9 * fmax(1, fabs(l->f_sum))) {
		fprintf(stderr, "bench_isc: %s: min %.17g/%.17g max %.17g/"
			"%.17g n %" PRIu64 "/%" PRIu64 " sum %.17g/%.17g\n",
			how, s->f_min, l->f_min, s->f_max, l->f_max, s->f_n,
			l->f_n, s->f_sum, l->f_sum);
		fail("the shipped figures differ from the client's", 1);
	}
}

/* One shipped call: time, CPU, bytes of result, figures. */
struct shipped {
	double s_wall, s_cpu;
	uint64_t s_bytes, s_mapped, s_runs, s_servers;
	struct figs s_figs;
};

static void ship(const char *name, enum clovis_isc_kind kind,
		 const char *code, struct shipped *s)
{
	struct clovis_isc_call call = {
		.ic_fn = name, .ic_target = CLOVIS_ISC_CONTAINER,
		.ic_id = co.co_entity.en_id, .ic_deadline_ms = 600000,
		.ic_out_max = 16u << 20,
	};
	struct clovis_isc_result res = {0};
	double t0, c0;
	int rc = clovis_isc_register(cl, name, kind, code, strlen(code),
				     NULL);

	if (rc != 0)
		fail(name, rc);
	t0 = now();
	c0 = cpu_now();
	rc = clovis_isc_invoke(cl, &call, &res);
	if (rc == 0)
		rc = result_figs(&res, &s->s_figs);
	s->s_cpu = cpu_now() - c0;
	s->s_wall = now() - t0;
	if (rc != 0)
		fail(name, rc);
	s->s_bytes = res.ir_stats.is_bytes_result;
	s->s_mapped = res.ir_stats.is_bytes_mapped;
	s->s_runs = res.ir_stats.is_runs;
	s->s_servers = res.ir_stats.is_servers;
	clovis_isc_result_free(&res);
}

/* One figure: a table line or a JSON object (as bench_hsm.c's). */
struct row {
	const char *r_name, *r_unit, *r_raw_is;
	double r_ours, r_raw, r_ratio, r_goal;
	bool r_lower; /* the ratio's goal is a maximum */
};

static void row_print(const struct row *r, bool json, bool *first)
{
	bool met = r->r_lower ? r->r_ratio <= r->r_goal :
				r->r_ratio >= r->r_goal;

	if (json) {
		printf("%s\n  {\"name\": \"%s\", \"ours\": %.6g, \"raw\": %.6g, "
		       "\"ratio\": %.4g, \"unit\": \"%s\", \"raw_is\": \"%s\", "
		       "\"rounds\": 1, \"emulation\": \"3-server loopback "
		       "cluster, emulated devices, no device model\", "
		       "\"lower_is_better\": %s, \"goal\": ", *first ? "" : ",",
		       r->r_name, r->r_ours, r->r_raw, r->r_ratio, r->r_unit,
		       r->r_raw_is, r->r_lower ? "true" : "false");
		if (r->r_goal > 0)
			printf("%.2f, \"met\": %s}", r->r_goal,
			       met ? "true" : "false");
		else
			printf("null, \"met\": null}");
	} else {
		char gs[24] = "";

		if (r->r_goal > 0)
			snprintf(gs, sizeof gs, "%s%.2f %s",
				 r->r_lower ? "<=" : ">=", r->r_goal,
				 met ? "met" : "NOT");
		printf("%-22s %12.4g %12.4g %9.4g %-6s %-11s raw = %s\n",
		       r->r_name, r->r_ours, r->r_raw, r->r_ratio, r->r_unit,
		       gs, r->r_raw_is);
	}
	*first = false;
}

static void usage(void)
{
	fprintf(stderr, "usage: strata_bench_isc --dir DIR [--size BYTES] "
		"[--obj-size BYTES] [--port P] [--json]\n"
		"  --size: the container's bytes (default 1G), a multiple of "
		"--obj-size (default 32M, a multiple of 1M)\n");
}

/* A size with an optional K, M or G suffix; 0 if bad. */
static uint64_t size_arg(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	if (*end == 'K' || *end == 'k')
		return v << 10;
	if (*end == 'M' || *end == 'm')
		return v << 20;
	if (*end == 'G' || *end == 'g')
		return v << 30;
	return *end == '\0' ? v : 0;
}

/* The disk's floor for the shipped calls: the same number of bytes read
 * with O_DIRECT in 1 MiB reads by 3 threads (one per server) from 3 files
 * of the disk the device files are on, written (and synced) just before:
 * the disk's own speed for that read, with no Strata in between.  (The
 * device files themselves are sparse where no unit was written, and a
 * hole reads without touching the disk.) */
struct floor_arg {
	char fa_path[PATH_MAX + 64];
	uint64_t fa_bytes;
	uint64_t fa_done;
	bool fa_write;
};

static void *floor_main(void *arg)
{
	struct floor_arg *fa = arg;
	int fd = open(fa->fa_path, (fa->fa_write ? O_WRONLY | O_CREAT :
				    O_RDONLY) | O_DIRECT, 0600);
	uint8_t *buf = NULL;

	if (fd < 0)
		return NULL;
	if (posix_memalign((void **)&buf, 4096, BLOCK_SIZE) != 0) {
		close(fd);
		return NULL;
	}
	for (uint32_t i = 0; i < BLOCK_SIZE; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (off_t off = 0; (uint64_t)off < fa->fa_bytes; off += BLOCK_SIZE) {
		ssize_t n = fa->fa_write ? pwrite(fd, buf, BLOCK_SIZE, off) :
					   pread(fd, buf, BLOCK_SIZE, off);

		if (n != BLOCK_SIZE)
			break;
		fa->fa_done += (uint64_t)n;
	}
	if (fa->fa_write)
		fsync(fd);
	close(fd);
	free(buf);
	return NULL;
}

static double floor_pass(uint64_t bytes, bool write, uint64_t *done)
{
	struct floor_arg fa[3];
	pthread_t t[3];
	double t0 = now();

	*done = 0;
	for (int i = 0; i < 3; i++) {
		snprintf(fa[i].fa_path, sizeof fa[i].fa_path, "%s/floor%d",
			 cdir, i);
		fa[i].fa_bytes = (bytes / 3 + BLOCK_SIZE - 1) &
				 ~(uint64_t)(BLOCK_SIZE - 1);
		fa[i].fa_done = 0;
		fa[i].fa_write = write;
		if (pthread_create(&t[i], NULL, floor_main, &fa[i]) != 0)
			fail("disk floor thread", -EAGAIN);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		*done += fa[i].fa_done;
	}
	return now() - t0;
}

static double disk_floor(uint64_t bytes, uint64_t *done)
{
	double t;

	floor_pass(bytes, true, done);
	t = floor_pass(bytes, false, done);
	for (int i = 0; i < 3; i++) {
		char p[PATH_MAX + 64];

		snprintf(p, sizeof p, "%s/floor%d", cdir, i);
		unlink(p);
	}
	return t;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	uint64_t size = 1ull << 30, osize = 32ull << 20;
	bool json = false, first = true;
	struct work w = { .w_lock = PTHREAD_MUTEX_INITIALIZER, .w_read = true };
	struct shipped d, l;
	double t0, c0, r_wall, r_cpu, t_setup, t_floor;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			size = size_arg(argv[++i]);
		else if (strcmp(argv[i], "--obj-size") == 0 && i + 1 < argc)
			osize = size_arg(argv[++i]);
		else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
			port = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
	}
	if (dir == NULL || osize == 0 || osize % BLOCK_SIZE != 0 ||
	    size == 0 || size % osize != 0 || size / osize > OBJ_MAX ||
	    port < 1024 || port > 65000) {
		usage();
		return 2;
	}
	nobj = (uint32_t)(size / osize);
	obj_blocks = osize / BLOCK_SIZE;
	atexit(cluster_stop);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);

	t0 = now();
	cluster_start(dir);
	data_make();
	t_setup = now() - t0;
	fprintf(stderr, "# setup: 3 servers up, %u pdclust 4+2 objects of "
		"%" PRIu64 " MiB written (%.1f s)\n", nobj, osize >> 20,
		t_setup);

	/* raw: everything read to the client, figures computed here */
	figs_init(&w.w_figs);
	t0 = now();
	c0 = cpu_now();
	if (work_run(&w) != 0)
		fail("read the objects", w.w_rc);
	r_cpu = cpu_now() - c0;
	r_wall = now() - t0;
	fprintf(stderr, "# raw: %" PRIu64 " bytes read by %u threads in "
		"%.2f s (%.0f MiB/s), client CPU %.2f s; mean %.6f\n",
		w.w_bytes, THREADS, r_wall, (double)w.w_bytes / 1048576 /
		r_wall, r_cpu, w.w_figs.f_sum / (double)w.w_figs.f_n);

	{
		uint64_t fb;

		t_floor = disk_floor(w.w_bytes, &fb);
		if (fb < w.w_bytes * 9 / 10)
			fail("the disk floor read too little of the device "
			     "files", -EIO);
		fprintf(stderr, "# disk floor: %" PRIu64 " bytes read from "
			"3 files beside the device files (O_DIRECT, 1 MiB, 3 "
			"threads) in %.2f s (%.0f MiB/s)\n", fb, t_floor,
			(double)fb / 1048576 / t_floor);
	}
	ship("bench_isc.decl", CLOVIS_ISC_DECL, decl_prog, &d);
	figs_check("declarative", &d.s_figs, &w.w_figs);
	fprintf(stderr, "# declarative: %.2f s, %" PRIu64 " runs on %" PRIu64
		" servers, %" PRIu64 " bytes mapped, %" PRIu64 " bytes of "
		"result, client CPU %.3f s\n", d.s_wall, d.s_runs,
		d.s_servers, d.s_mapped, d.s_bytes, d.s_cpu);
	ship("bench_isc.lua", CLOVIS_ISC_LUA, lua_prog, &l);
	figs_check("Lua", &l.s_figs, &w.w_figs);
	fprintf(stderr, "# Lua: %.2f s, %" PRIu64 " runs on %" PRIu64
		" servers, %" PRIu64 " bytes mapped, %" PRIu64 " bytes of "
		"result, client CPU %.3f s\n", l.s_wall, l.s_runs,
		l.s_servers, l.s_mapped, l.s_bytes, l.s_cpu);
	if (d.s_mapped != w.w_bytes || l.s_mapped != w.w_bytes)
		fail("a shipped call did not map every byte", 1);
	{
		const char *rawis = "every object read to the client";
		double rb = (double)w.w_bytes;
		struct row rows[9] = {
			{"isc_decl_wall_s", "s", rawis, d.s_wall, r_wall,
			 r_wall / d.s_wall, 3, false},
			{"isc_decl_net_bytes", "B", rawis, (double)d.s_bytes,
			 rb, (double)d.s_bytes / rb, 0.01, true},
			{"isc_decl_cpu_s", "s", rawis, d.s_cpu, r_cpu,
			 d.s_cpu / r_cpu, 0, true},
			{"isc_lua_wall_s", "s", rawis, l.s_wall, r_wall,
			 r_wall / l.s_wall, 3, false},
			{"isc_lua_net_bytes", "B", rawis, (double)l.s_bytes, rb,
			 (double)l.s_bytes / rb, 0.01, true},
			{"isc_lua_cpu_s", "s", rawis, l.s_cpu, r_cpu,
			 l.s_cpu / r_cpu, 0, true},
			{"isc_lua_vs_decl", "x", "the declarative call",
			 d.s_wall / l.s_wall, 1, d.s_wall / l.s_wall, 0.5,
			 false},
			{"isc_decl_vs_disk", "s", "the same bytes read from "
			 "3 files on the same disk (disk floor)", d.s_wall, t_floor,
			 t_floor / d.s_wall, 0, false},
			{"isc_raw_vs_disk", "s", "the same bytes read from "
			 "3 files on the same disk (disk floor)", r_wall, t_floor,
			 t_floor / r_wall, 0, false},
		};

		if (json)
			printf("[");
		else
			printf("%-22s %12s %12s %9s %-6s %-11s %s\n", "name",
			       "ours", "raw", "ratio", "unit", "goal",
			       "raw is");
		for (unsigned i = 0; i < 9; i++)
			row_print(&rows[i], json, &first);
	}
	if (json) {
		printf("\n]\n");
		return 0;
	}
	printf("# 3-server loopback cluster (strata cluster up --no-etcd), "
	       "%u pdclust 4+2 objects of %" PRIu64 " MiB (1 MiB units) in "
	       "one container, %" PRIu64 " MiB in all; wall ratios are "
	       "raw/ours (speed-up), bytes and CPU ours/raw; isc_lua_vs_decl "
	       "is the declarative call's time over Lua's\n", nobj,
	       osize >> 20, size >> 20);
	return 0;
}
