/*
 * addb_ut.c — the metrics catalog, the shared-memory region, snapshots of
 * this process and of a region file, the exposition and the /metrics
 * endpoint (addb/addb.h): suite "addb", module "addb" of ut_main (part
 * "net": the endpoint binds a loopback port, chosen by the kernel).
 */
#include <CUnit/CUnit.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "addb/addb.h"
#include "core/errors.h"
#include "tests/ut.h"

static uint64_t snap_val(enum addb_metric m, uint32_t inst)
{
	struct addb_snap *s = NULL;
	uint64_t v;

	CU_ASSERT_FATAL(addb_snap_self(&s) == 0);
	v = addb_snap_get(s, m, inst);
	addb_snap_free(s);
	return v;
}

/* Histogram instance inst of m: its count (sum of buckets) and sum. */
static uint64_t hist_count(const struct addb_snap *s, enum addb_metric m,
			   uint32_t inst, uint64_t *sum)
{
	const uint64_t *w = s->as_val + addb_off(m) + inst * addb_width(m);
	uint64_t n = 0;

	for (uint32_t b = 0; b < ADDB_HIST_BUCKETS; b++)
		n += w[b];
	if (sum != NULL)
		*sum = w[ADDB_HIST_BUCKETS];
	return n;
}

static void test_catalog(void)
{
	uint32_t end = 0;

	for (uint32_t m = 0; m < ADDB_METRIC_NR; m++) {
		const struct addb_family *f = addb_family(m);
		size_t n = strlen(f->af_name);
		bool total = n > 6 && strcmp(f->af_name + n - 6, "_total") == 0;

		CU_ASSERT_EQUAL(addb_off(m), end);
		end += addb_instances(m) * addb_width(m);
		CU_ASSERT(strncmp(f->af_name, "strata_", 7) == 0);
		/* Prometheus conventions: counters and only they end _total */
		CU_ASSERT_EQUAL(total, f->af_type == ADDB_COUNTER);
		for (uint32_t k = 0; k < m; k++)
			CU_ASSERT(strcmp(addb_family(k)->af_name,
					 f->af_name) != 0);
		for (uint32_t i = 0; i < 2; i++)
			CU_ASSERT_EQUAL(f->af_dim[i] == ADDB_DIM_NONE,
					f->af_lname[i] == NULL);
	}
	CU_ASSERT_EQUAL(addb_off(ADDB_METRIC_NR), end);
	/* clamping: a value past a dimension is its last one */
	CU_ASSERT_EQUAL(addb_inst(ADDB_DEV_IO, 9999, 9),
			addb_inst(ADDB_DEV_IO, ADDB_DEV_SLOTS - 1, 2));
}

#define T_THREADS 8
#define T_ADDS 20000

static void *adder(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < T_ADDS; i++) {
		addb_add(ADDB_COMMIT_ITEMS, 0, 1);
		addb_obs(ADDB_COMMIT_SYNC, 0, 1500); /* 1.5 us: bucket 1 */
	}
	return NULL;
}

/* Updates from many threads (each its own row, more threads than rows
 * over the run) are summed exactly. */
static void test_threads_exact(void)
{
	struct addb_snap *a = NULL, *b = NULL;
	pthread_t t[T_THREADS];
	uint64_t sa, sb;

	CU_ASSERT_FATAL(addb_snap_self(&a) == 0);
	for (uint32_t round = 0; round < 10; round++) {
		for (uint32_t i = 0; i < T_THREADS; i++)
			CU_ASSERT_FATAL(pthread_create(&t[i], NULL, adder,
						       NULL) == 0);
		for (uint32_t i = 0; i < T_THREADS; i++)
			pthread_join(t[i], NULL);
	}
	CU_ASSERT_FATAL(addb_snap_self(&b) == 0);
	CU_ASSERT_EQUAL(addb_snap_get(b, ADDB_COMMIT_ITEMS, 0) -
			addb_snap_get(a, ADDB_COMMIT_ITEMS, 0),
			10ull * T_THREADS * T_ADDS);
	CU_ASSERT_EQUAL(hist_count(b, ADDB_COMMIT_SYNC, 0, &sb) -
			hist_count(a, ADDB_COMMIT_SYNC, 0, &sa),
			10ull * T_THREADS * T_ADDS);
	CU_ASSERT_EQUAL(sb - sa, 1500ull * 10 * T_THREADS * T_ADDS);
	CU_ASSERT_EQUAL(b->as_val[addb_off(ADDB_COMMIT_SYNC) + 1] -
			a->as_val[addb_off(ADDB_COMMIT_SYNC) + 1],
			10ull * T_THREADS * T_ADDS);
	addb_snap_free(a);
	addb_snap_free(b);
}

/* Gauges: set by value, and up-down by adds. */
static void test_gauges(void)
{
	uint32_t d = addb_dev_slot(1, "/ut/addb/gauge");

	addb_set(ADDB_DEV_FREE, d, 12345);
	addb_set(ADDB_DEV_FREE, d, 777);
	CU_ASSERT_EQUAL(snap_val(ADDB_DEV_FREE, d), 777);
	addb_gauge_add(ADDB_DEV_QUEUE, d, 3);
	addb_gauge_add(ADDB_DEV_QUEUE, d, -1);
	CU_ASSERT_EQUAL(snap_val(ADDB_DEV_QUEUE, d), 2);
	addb_gauge_add(ADDB_DEV_QUEUE, d, -2);
	CU_ASSERT_EQUAL(snap_val(ADDB_DEV_QUEUE, d), 0);
	/* the same label gives the same slot, another one another */
	CU_ASSERT_EQUAL(addb_dev_slot(1, "/ut/addb/gauge"), d);
	CU_ASSERT_NOT_EQUAL(addb_dev_slot(2, "/ut/addb/gauge"), d);
}

/* Paths longer than a label that differ only at their start or end get
 * slots of their own; a label keeps the path's tail. */
static void test_long_labels(void)
{
	char a[200], b[200];
	struct addb_snap *s = NULL;
	uint32_t sa, sb;

	memset(a, 'x', sizeof a);
	a[0] = '/';
	memcpy(a + 180, "/flash0.dev", 12);
	memcpy(b, a, sizeof b);
	b[1] = 'y'; /* differs within the part a label cannot keep */
	sa = addb_dev_slot(1, a);
	sb = addb_dev_slot(1, b);
	CU_ASSERT_NOT_EQUAL(sa, sb);
	CU_ASSERT_EQUAL(addb_dev_slot(1, a), sa);
	CU_ASSERT_FATAL(addb_snap_self(&s) == 0);
	CU_ASSERT(strlen(s->as_dev[sa]) < ADDB_LABEL_MAX);
	CU_ASSERT(strncmp(s->as_dev[sa], "..", 2) == 0);
	CU_ASSERT(strstr(s->as_dev[sa], "/flash0.dev") != NULL);
	addb_snap_free(s);
}

/* The region file of this process reads the same as the process. */
static void test_region_file(void)
{
	struct addb_snap *s = NULL;
	const char *path;

	addb_add(ADDB_DTX, ADDB_DTX_ABORTED, 5);
	path = addb_region_path();
	CU_ASSERT_FATAL(path != NULL);
	CU_ASSERT_FATAL(addb_snap_pid(getpid(), &s) == 0);
	CU_ASSERT_EQUAL(s->as_pid, (uint64_t)getpid());
	CU_ASSERT(s->as_running);
	CU_ASSERT_EQUAL(addb_snap_get(s, ADDB_DTX, ADDB_DTX_ABORTED),
			snap_val(ADDB_DTX, ADDB_DTX_ABORTED));
	CU_ASSERT(addb_snap_get(s, ADDB_DTX, ADDB_DTX_ABORTED) >= 5);
	CU_ASSERT(addb_snap_get(s, ADDB_PROC_START, 0) > 1700000000ull);
	addb_snap_free(s);
}

static int write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, p, n);
	close(fd);
	return w == (ssize_t)n ? 0 : -EIO;
}

/* Files that are not a region of this catalog are refused, never read
 * past their end. */
static void test_bad_files(void)
{
	char path[512], *copy;
	struct addb_snap *s = NULL;
	const char *own = addb_region_path();
	FILE *f;
	long n;

	snprintf(path, sizeof path, "%s/region", ut_tmpdir("addb"));
	CU_ASSERT_EQUAL(addb_snap_file(path, &s), -ENOENT);
	CU_ASSERT(strstr(err_msg(), "region") != NULL);
	CU_ASSERT_EQUAL(write_file(path, "short", 5), 0);
	CU_ASSERT_EQUAL(addb_snap_file(path, &s), -EPROTO);
	CU_ASSERT(strstr(err_msg(), "size") != NULL);
	/* this process's region, cut and then altered */
	CU_ASSERT_FATAL(own != NULL);
	f = fopen(own, "rb");
	CU_ASSERT_FATAL(f != NULL);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	copy = malloc((size_t)n);
	CU_ASSERT_FATAL(copy != NULL);
	CU_ASSERT_EQUAL(fread(copy, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	CU_ASSERT_EQUAL(write_file(path, copy, (size_t)n), 0);
	CU_ASSERT_EQUAL(addb_snap_file(path, &s), 0);
	addb_snap_free(s);
	s = NULL;
	CU_ASSERT_EQUAL(write_file(path, copy, (size_t)n / 2), 0);
	CU_ASSERT_EQUAL(addb_snap_file(path, &s), -EPROTO);
	CU_ASSERT(strstr(err_msg(), "size") != NULL);
	copy[16] ^= 1; /* the catalog hash */
	CU_ASSERT_EQUAL(write_file(path, copy, (size_t)n), 0);
	CU_ASSERT_EQUAL(addb_snap_file(path, &s), -EPROTO);
	CU_ASSERT(strstr(err_msg(), "catalog") != NULL);
	copy[0] = 'X';
	CU_ASSERT_EQUAL(write_file(path, copy, (size_t)n), 0);
	CU_ASSERT_EQUAL(addb_snap_file(path, &s), -EPROTO);
	CU_ASSERT(strstr(err_msg(), "magic") != NULL);
	CU_ASSERT(s == NULL);
	free(copy);
	CU_ASSERT_EQUAL(addb_snap_pid(0, &s), -EINVAL);
}

/* A child's updates go to a region of its own; a region left by a
 * killed process stays readable until swept. */
static void test_fork_and_sweep(void)
{
	uint64_t before = snap_val(ADDB_WALK_RUNS, ADDB_WALK_SCRUB);
	struct addb_snap *s = NULL;
	char path[64];
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		addb_add(ADDB_WALK_RUNS, ADDB_WALK_SCRUB, 1000);
		raise(SIGKILL);
		_exit(1);
	}
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT(WIFSIGNALED(st));
	CU_ASSERT_EQUAL(snap_val(ADDB_WALK_RUNS, ADDB_WALK_SCRUB), before);
	CU_ASSERT_FATAL(addb_snap_pid(pid, &s) == 0);
	CU_ASSERT_FALSE(s->as_running);
	CU_ASSERT_EQUAL(addb_snap_get(s, ADDB_WALK_RUNS, ADDB_WALK_SCRUB),
			1000);
	addb_snap_free(s);
	s = NULL;
	CU_ASSERT(addb_sweep() >= 1);
	snprintf(path, sizeof path, "/dev/shm/strata-addb.%d", (int)pid);
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	CU_ASSERT_EQUAL(addb_snap_pid(pid, &s), -ENOENT);
	/* ours is not swept: this process runs */
	CU_ASSERT_EQUAL(access(addb_region_path(), F_OK), 0);
}

static char *prom_text(uint32_t prio, bool json)
{
	struct addb_snap *s = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_FATAL(addb_snap_self(&s) == 0);
	CU_ASSERT_EQUAL(json ? addb_json_write(s, prio, f) :
			addb_prom_write(s, prio, f), 0);
	fclose(f);
	addb_snap_free(s);
	return buf;
}

static void test_prom_text(void)
{
	uint32_t d = addb_dev_slot(0, "/ut/\"odd\"\\dev");
	char *t, *p;
	uint64_t prev = 0;
	uint32_t nb = 0;

	addb_add(ADDB_DEV_IO, addb_inst(ADDB_DEV_IO, d, ADDB_IO_WRITE), 4);
	for (uint32_t i = 0; i < 3; i++)
		addb_obs(ADDB_CLIENT_OP_LAT, 6 /* idx.del */, 3000000);
	t = prom_text(0, false);
	CU_ASSERT(strstr(t, "# TYPE strata_device_io_total counter\n") != NULL);
	/* the label value escaped: \" and \\ */
	CU_ASSERT(strstr(t, "strata_device_io_total{device=\"nvram:/ut/"
			 "\\\"odd\\\"\\\\dev\",io=\"write\"} 4\n") != NULL);
	CU_ASSERT(strstr(t, "# TYPE strata_client_op_latency_seconds "
			 "histogram\n") != NULL);
	/* buckets cumulative, +Inf equal to _count */
	p = t;
	while ((p = strstr(p, "strata_client_op_latency_seconds_bucket{op="
			   "\"idx.del\"")) != NULL) {
		uint64_t v = strtoull(strchr(p, '}') + 2, NULL, 10);

		CU_ASSERT(v >= prev);
		prev = v;
		nb++;
		p++;
	}
	CU_ASSERT_EQUAL(nb, ADDB_HIST_BUCKETS);
	CU_ASSERT(strstr(t, "strata_client_op_latency_seconds_bucket{op="
			 "\"idx.del\",le=\"+Inf\"}") != NULL);
	CU_ASSERT(strstr(t, "strata_client_op_latency_seconds_count{op="
			 "\"idx.del\"} ") != NULL);
	/* an op never run is not shown */
	CU_ASSERT(strstr(t, "op=\"entity.setattr\"") == NULL);
	free(t);
	/* a minimum priority leaves the less important families out */
	t = prom_text(ADDB_PRIO_CRITICAL, false);
	CU_ASSERT(strstr(t, "strata_device_io_total") == NULL);
	CU_ASSERT(strstr(t, "strata_client_op_latency_seconds") != NULL);
	free(t);
	t = prom_text(0, true);
	CU_ASSERT(strncmp(t, "{\"pid\":", 7) == 0);
	CU_ASSERT(strstr(t, "\"name\":\"strata_device_io_total\"") != NULL);
	free(t);
}

struct body {
	char *b;
	size_t n;
};

static size_t body_add(char *p, size_t sz, size_t n, void *arg)
{
	struct body *b = arg;
	char *nb = realloc(b->b, b->n + sz * n + 1);

	if (nb == NULL)
		return 0;
	memcpy(nb + b->n, p, sz * n);
	b->n += sz * n;
	nb[b->n] = '\0';
	b->b = nb;
	return sz * n;
}

static long http_get(uint16_t port, const char *path, const char *method,
		     struct body *b)
{
	char url[128];
	long code = 0;
	CURL *c = curl_easy_init();

	snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_add);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	if (method != NULL)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	return code;
}

static void test_http(void)
{
	struct addb_http *h = NULL, *h2 = NULL;
	struct body b = {0};
	char listen[32];

	CU_ASSERT_EQUAL(addb_http_start("127.0.0.1:x", &h), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "127.0.0.1:x") != NULL);
	CU_ASSERT_EQUAL(addb_http_start("[::1:9", &h), -EINVAL);
	CU_ASSERT_EQUAL(addb_http_start("", &h), -EINVAL);
	CU_ASSERT_EQUAL(addb_http_start("127.0.0.1:70000", &h), -EINVAL);
	CU_ASSERT_EQUAL(addb_http_start("70000", &h), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "port") != NULL);
	CU_ASSERT_EQUAL(addb_http_start("123456789", &h), -EINVAL);
	CU_ASSERT_EQUAL(addb_http_start("127.0.0.1:1234567", &h), -EINVAL);
	CU_ASSERT_FATAL(addb_http_start("127.0.0.1:0", &h) == 0);
	CU_ASSERT(addb_http_port(h) > 0);
	addb_add(ADDB_COMMIT_BATCHES, 0, 1);
	CU_ASSERT_EQUAL(http_get(addb_http_port(h), "/metrics", NULL, &b),
			200);
	CU_ASSERT(b.b != NULL && strstr(b.b, "strata_commit_batches_total ")
		  != NULL);
	free(b.b);
	b = (struct body){0};
	CU_ASSERT_EQUAL(http_get(addb_http_port(h), "/metrics?min_priority=10",
				 NULL, &b), 200);
	CU_ASSERT(b.b != NULL && strstr(b.b, "strata_commit_batches") == NULL);
	free(b.b);
	b = (struct body){0};
	CU_ASSERT_EQUAL(http_get(addb_http_port(h), "/metrics?min_priority=x",
				 NULL, &b), 400);
	free(b.b);
	b = (struct body){0};
	CU_ASSERT_EQUAL(http_get(addb_http_port(h), "/metrics.json", NULL, &b),
			200);
	CU_ASSERT(b.b != NULL && b.b[0] == '{');
	free(b.b);
	b = (struct body){0};
	CU_ASSERT_EQUAL(http_get(addb_http_port(h), "/other", NULL, &b), 404);
	free(b.b);
	b = (struct body){0};
	CU_ASSERT_EQUAL(http_get(addb_http_port(h), "/metrics", "POST", &b),
			405);
	free(b.b);
	/* the port taken: a clear error */
	snprintf(listen, sizeof listen, "127.0.0.1:%u", addb_http_port(h));
	CU_ASSERT_EQUAL(addb_http_start(listen, &h2), -EADDRINUSE);
	CU_ASSERT(strstr(err_msg(), listen) != NULL);
	addb_http_stop(h);
}

static void test_trace_lying(const char *own);

/* The trace: off records nothing; on, records read back in order; the
 * file has its bound and keeps a ring's latest records when it wraps;
 * off again stops it. */
static void test_trace(void)
{
	struct addb_trace *t = NULL;
	uint64_t last = 0;
	uint32_t mine = 0;
	char path[64];
	struct stat st;

	CU_ASSERT_EQUAL(addb_trace_set(1, ADDB_TRACE_MIB_MAX + 1), -EINVAL);
	addb_rec(ADDB_R_COMMIT, 0, 1, 0, 0); /* off: nothing */
	CU_ASSERT_EQUAL(addb_trace_op(), 0);
	CU_ASSERT_FATAL(addb_trace_set(1, 1) == 0);
	for (uint32_t i = 0; i < 5000; i++)
		addb_rec(ADDB_R_COMMIT, i + 1, 7, 0, i);
	CU_ASSERT(addb_trace_op() != 0);
	CU_ASSERT_FATAL(addb_trace_set(0, 0) == 0);
	addb_rec(ADDB_R_COMMIT, 999999, 7, 0, 0); /* off again */
	snprintf(path, sizeof path, "/dev/shm/strata-addb.%d.trace",
		 (int)getpid());
	CU_ASSERT_FATAL(stat(path, &st) == 0);
	/* within its bound, and close to it */
	CU_ASSERT(st.st_size <= 1 << 20 && st.st_size > (1 << 20) - 16384);
	CU_ASSERT_FATAL(addb_trace_read(getpid(), NULL, 0, &t) == 0);
	CU_ASSERT(t->at_written >= 5000);
	for (uint32_t i = 0; i < t->at_nr; i++) {
		const struct addb_rec *r = &t->at_recs[i].tr_rec;

		if (r->ar_kind != ADDB_R_COMMIT || r->ar_a != 7)
			continue;
		CU_ASSERT(r->ar_id > last); /* in order */
		CU_ASSERT(r->ar_id != 999999);
		last = r->ar_id;
		mine++;
	}
	/* the ring wrapped: its latest records, the last one the last */
	CU_ASSERT(mine > 100 && mine < 5000);
	CU_ASSERT_EQUAL(last, 5000);
	addb_trace_free(t);
	CU_ASSERT_EQUAL(addb_trace_read(0, "/nonexistent.trace", 0, &t),
			-ENOENT);
	CU_ASSERT(strstr(err_msg(), "no trace") != NULL);
	test_trace_lying(path);
}

/* A trace file whose header lies (a capacity whose product with the
 * record size wraps, a huge count) is refused whole, never read past its
 * end. */
static void test_trace_lying(const char *own)
{
	char path[512];
	struct addb_trace *t = NULL;
	uint8_t buf[200];
	FILE *f;
	uint64_t v;

	f = fopen(own, "rb");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_EQUAL(fread(buf, 1, 80, f), 80); /* a real header */
	fclose(f);
	memset(buf + 80, 0, sizeof buf - 80);
	memcpy(buf + 24, &(uint32_t){1}, 4);          /* th_nr_rings */
	v = 1ull << 60;
	memcpy(buf + 32, &v, 8);                      /* th_cap */
	v = 80;
	memcpy(buf + 40, &v, 8);                      /* th_ring_off */
	v = 64;
	memcpy(buf + 48, &v, 8);                      /* th_ring_stride */
	v = 144;
	memcpy(buf + 56, &v, 8);                      /* th_size */
	v = 10000000;
	memcpy(buf + 80, &v, 8);                      /* tr_count */
	snprintf(path, sizeof path, "%s/lying.trace", ut_tmpdir("addb"));
	CU_ASSERT_EQUAL(write_file(path, buf, sizeof buf), 0);
	CU_ASSERT_EQUAL(addb_trace_read(0, path, 0, &t), -EPROTO);
	CU_ASSERT(strstr(err_msg(), "layout") != NULL);
	CU_ASSERT(t == NULL);
}

int addb_ut_add(void)
{
	CU_pSuite s = CU_add_suite("addb", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "catalog", test_catalog) ||
	    !CU_add_test(s, "threads_exact", test_threads_exact) ||
	    !CU_add_test(s, "gauges", test_gauges) ||
	    !CU_add_test(s, "long_labels", test_long_labels) ||
	    !CU_add_test(s, "region_file", test_region_file) ||
	    !CU_add_test(s, "bad_files", test_bad_files) ||
	    !CU_add_test(s, "fork_and_sweep", test_fork_and_sweep) ||
	    !CU_add_test(s, "prom_text", test_prom_text) ||
	    !CU_add_test(s, "http", test_http) ||
	    !CU_add_test(s, "trace", test_trace))
		return -1;
	return 0;
}
