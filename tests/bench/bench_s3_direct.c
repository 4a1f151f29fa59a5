/*
 * bench_s3_direct.c — the direct-Clovis baseline of bench_s3.py at the
 * gateway's concurrency: W writers, each storing named objects one at a
 * time, the way an application that keeps objects under names does it
 * through Clovis with no gateway in between.
 *
 *   bench_s3_direct DIR SIZE WRITERS COUNT [--meta-nvram] [--dev-size MIB]
 *                   [--keep]
 *
 * Makes a fresh embedded store in DIR (CLOVIS_CONF_META_NVRAM with
 * --meta-nvram), an index, then measures:
 *
 *   PUT of one named object (each writer: its share of COUNT, in series):
 *     CREATE a new object (plain layout on flash, the store's default;
 *     4 KiB blocks under 1 MiB, else 64 KiB, as the gateway), wait STABLE;
 *     WRITE the SIZE bytes in ops of at most 4 MiB, at most 4 in flight
 *     (the gateway's limits for large objects), wait STABLE;
 *     index PUT name -> record (object id, size and 96 bytes standing in
 *     for the ETag, time and content type of the gateway's record),
 *     wait STABLE.
 *     Each step waits for the previous one to be STABLE: the record never
 *     becomes durable before the data it names.
 *   GET of one named object: index GET of the name, OPEN of the object,
 *     READ of the SIZE bytes in the same ops (4 in flight), wait EXECUTED.
 *
 * The body is one pseudo-random buffer made once (no checksum, no copy:
 * the application already holds its data in memory).  Prints two lines:
 *   "put ops N seconds S mib_per_s M cpu_us_per_op C"
 *   "get ops N seconds S mib_per_s M cpu_us_per_op C"
 * (cpu: this process's user + system time, getrusage), then removes the
 * store (clovis_store_destroy(), also its metadata in /dev/shm) unless
 * --keep (bench_s3.py removes it with `strata destroy`, noting its
 * /dev/shm entries first).  Exits
 * 0, 1 on a Clovis error (message on stderr), 2 on bad usage.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>

#include "clovis/clovis.h"

#define DIRECT_OP_MAX (4ull << 20)
#define DIRECT_INFLIGHT 4u
#define DIRECT_REC 128u
#define DIRECT_WRITERS_MAX 64u
#define DIRECT_HI 0x5333d12ec7ull

static struct clovis *cl;
static struct clovis_idx idx;
static char *body;
static uint64_t size;
static uint32_t writers, count;
static int failed, keep;

static void fail(const char *what, uint32_t n, int rc)
{
	fprintf(stderr, "bench_s3_direct: %s of object %u: %s (%s)\n", what, n,
		clovis_strerror(rc), clovis_errmsg());
	__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
}

/* An entity op (e already initialised, rc its init's result), waited
 * for: 0 or the first error. */
static int ent_sync(int rc, struct clovis_entity *e,
		    enum clovis_entity_opcode oc)
{
	struct clovis_op *op = NULL;

	if (rc == 0)
		rc = clovis_entity_op(e, oc, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* A one-record index op on the bench index, waited for: 0, the op's
 * error or the record's. */
static int idx_sync(enum clovis_idx_opcode oc, struct clovis_bufvec *kv,
		    struct clovis_bufvec *vv, uint32_t flags)
{
	struct clovis_op *op = NULL;
	int32_t rcs[1];
	int rc = clovis_idx_op(&idx, oc, kv, vv, rcs, flags, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc == 0 ? rcs[0] : rc;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static uint32_t bshift(void)
{
	return size < (1u << 20) ? 12 : 16;
}

/* WRITE or READ the whole object in ops of at most DIRECT_OP_MAX, at most
 * DIRECT_INFLIGHT in flight, each waited for `until`.  0 or the rc. */
static int direct_io(struct clovis_obj *o, enum clovis_obj_opcode opc,
		     char *buf, uint32_t until)
{
	uint64_t bs = 1ull << bshift(), off = 0;
	uint64_t st[DIRECT_INFLIGHT], nr[DIRECT_INFLIGHT];
	void *bp[DIRECT_INFLIGHT];
	size_t bl[DIRECT_INFLIGHT];
	struct clovis_extvec ev[DIRECT_INFLIGHT];
	struct clovis_bufvec bv[DIRECT_INFLIGHT];
	struct clovis_op *ops[DIRECT_INFLIGHT] = {NULL};
	uint32_t n = 0;
	int rc = 0;

	while (off < size && rc == 0) {
		uint32_t s = n % DIRECT_INFLIGHT;
		uint64_t len = size - off < DIRECT_OP_MAX ? size - off
							   : DIRECT_OP_MAX;

		if (ops[s] != NULL) {
			rc = clovis_op_wait(ops[s], until, CLOVIS_TIME_NEVER);
			clovis_op_free(ops[s]);
			ops[s] = NULL;
			if (rc != 0)
				break;
		}
		len = (len + bs - 1) / bs * bs;
		st[s] = off / bs;
		nr[s] = len / bs;
		bp[s] = buf + off;
		bl[s] = len;
		ev[s] = (struct clovis_extvec){1, &st[s], &nr[s]};
		bv[s] = (struct clovis_bufvec){1, &bp[s], &bl[s]};
		rc = clovis_obj_op(o, opc, &ev[s], &bv[s], 0, &ops[s]);
		if (rc == 0)
			rc = clovis_op_launch(&ops[s], 1);
		off += len;
		n++;
	}
	for (uint32_t s = 0; s < DIRECT_INFLIGHT; s++)
		if (ops[s] != NULL) {
			int r = clovis_op_wait(ops[s], until, CLOVIS_TIME_NEVER);

			if (rc == 0)
				rc = r;
			clovis_op_free(ops[s]);
		}
	return rc;
}

static void key_of(uint32_t n, char *k, size_t cap)
{
	snprintf(k, cap, "bench/o%08u", n);
}

static int direct_put(uint32_t n)
{
	struct clovis_id id = {DIRECT_HI, 4096 + (uint64_t)n};
	/* plain on flash, as the gateway's objects: oa_tier must be set,
	 * since 0 is CLOVIS_TIER_NVRAM (tmpfs here, not the disk) */
	struct clovis_obj_attr a = {.oa_block_shift = bshift(),
				    .oa_layout = CLOVIS_LAYOUT_PLAIN,
				    .oa_tier = CLOVIS_TIER_FLASH};
	struct clovis_obj o;
	char key[64], rec[DIRECT_REC] = {0};
	void *kp = key, *vp = rec;
	size_t kl, vl = sizeof rec;
	struct clovis_bufvec kv = {1, &kp, &kl}, vv = {1, &vp, &vl};
	int rc;

	/* a random id, as the gateway's: plain objects are spread over the
	 * tier's devices by id */
	if (getrandom(&id, sizeof id, 0) != sizeof id || id.ci_hi == 0)
		id.ci_hi = DIRECT_HI ^ (uint64_t)n;
	rc = ent_sync(clovis_obj_init(&o, clovis_default_realm(cl), &id, &a),
		      &o.ob_entity, CLOVIS_EO_CREATE);
	if (rc != 0)
		return fail("CREATE", n, rc), rc;
	rc = direct_io(&o, CLOVIS_OC_WRITE, body, CLOVIS_OS_STABLE);
	if (rc != 0)
		return fail("WRITE", n, rc), rc;
	key_of(n, key, sizeof key);
	kl = strlen(key);
	memcpy(rec, &id, sizeof id);
	memcpy(rec + sizeof id, &size, sizeof size);
	rc = idx_sync(CLOVIS_IC_PUT, &kv, &vv, CLOVIS_IF_OVERWRITE);
	if (rc != 0)
		return fail("index PUT", n, rc), rc;
	return 0;
}

static int direct_get(uint32_t n, char *buf)
{
	struct clovis_id id;
	struct clovis_obj o;
	char key[64], rec[DIRECT_REC];
	void *kp = key, *vp = rec;
	size_t kl, vl = sizeof rec;
	struct clovis_bufvec kv = {1, &kp, &kl}, vv = {1, &vp, &vl};
	int rc;

	key_of(n, key, sizeof key);
	kl = strlen(key);
	rc = idx_sync(CLOVIS_IC_GET, &kv, &vv, 0);
	if (rc != 0)
		return fail("index GET", n, rc), rc;
	memcpy(&id, rec, sizeof id);
	rc = ent_sync(clovis_obj_init(&o, clovis_default_realm(cl), &id, NULL),
		      &o.ob_entity, CLOVIS_EO_OPEN);
	if (rc != 0)
		return fail("OPEN", n, rc), rc;
	rc = direct_io(&o, CLOVIS_OC_READ, buf, CLOVIS_OS_EXECUTED);
	if (rc != 0)
		return fail("READ", n, rc), rc;
	if (memcmp(buf, body, size) != 0) {
		fprintf(stderr, "bench_s3_direct: object %u read back "
			"differs\n", n);
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
		return -EIO;
	}
	return 0;
}

static int is_put;

static void *worker(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	char *buf = is_put ? NULL : malloc(size + (1u << 16));

	if (!is_put && buf == NULL) {
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	for (uint32_t n = t; n < count && !failed; n += writers)
		if ((is_put ? direct_put(n) : direct_get(n, buf)) != 0)
			break;
	free(buf);
	return NULL;
}

static void phase(int put)
{
	pthread_t th[DIRECT_WRITERS_MAX];
	double t0, c0, s, c;

	is_put = put;
	t0 = now_s();
	c0 = cpu_s();
	for (uint32_t t = 0; t < writers; t++)
		if (pthread_create(&th[t], NULL, worker,
				   (void *)(uintptr_t)t) != 0) {
			fprintf(stderr, "bench_s3_direct: pthread_create\n");
			exit(1);
		}
	for (uint32_t t = 0; t < writers; t++)
		pthread_join(th[t], NULL);
	s = now_s() - t0;
	c = cpu_s() - c0;
	printf("%s ops %u seconds %.4f mib_per_s %.1f cpu_us_per_op %.0f\n",
	       put ? "put" : "get", count, s,
	       (double)count * (double)size / s / 1048576.0,
	       c / count * 1e6);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct clovis_conf cc = {0};
	struct clovis_id iid = {DIRECT_HI, 1024};
	int rc;

	if (argc < 5) {
		fprintf(stderr, "usage: bench_s3_direct DIR SIZE WRITERS COUNT "
			"[--meta-nvram] [--dev-size MIB] [--keep]\n");
		return 2;
	}
	size = strtoull(argv[2], NULL, 10);
	writers = (uint32_t)atoi(argv[3]);
	count = (uint32_t)atoi(argv[4]);
	cc.cc_data_dir = argv[1];
	cc.cc_flags = CLOVIS_CONF_CREATE;
	for (int i = 5; i < argc; i++)
		if (strcmp(argv[i], "--meta-nvram") == 0)
			cc.cc_flags |= CLOVIS_CONF_META_NVRAM;
		else if (strcmp(argv[i], "--keep") == 0)
			keep = 1;
		else if (strcmp(argv[i], "--dev-size") == 0 && i + 1 < argc)
			cc.cc_dev_size = strtoull(argv[++i], NULL, 10) << 20;
		else {
			fprintf(stderr, "bench_s3_direct: unknown option %s\n",
				argv[i]);
			return 2;
		}
	if (size == 0 || size > (1ull << 30) || writers == 0 ||
	    writers > DIRECT_WRITERS_MAX || count == 0 || count > 100000) {
		fprintf(stderr, "bench_s3_direct: SIZE 1..1 GiB, WRITERS "
			"1..%u, COUNT 1..100000\n", DIRECT_WRITERS_MAX);
		return 2;
	}
	body = malloc(size + (1u << 16));
	if (body == NULL)
		return 1;
	for (uint64_t i = 0; i < size + (1u << 16); i++)
		body[i] = (char)((i * 2654435761u) >> 13);
	rc = clovis_init(&cl, &cc);
	if (rc != 0) {
		fprintf(stderr, "bench_s3_direct: store %s: %s (%s)\n", argv[1],
			clovis_strerror(rc), clovis_errmsg());
		return 1;
	}
	rc = ent_sync(clovis_idx_init(&idx, clovis_default_realm(cl), &iid),
		      &idx.in_entity, CLOVIS_EO_CREATE);
	if (rc != 0) {
		fprintf(stderr, "bench_s3_direct: index CREATE: %s (%s)\n",
			clovis_strerror(rc), clovis_errmsg());
		failed = 1;
	}
	if (!failed)
		phase(1);
	if (!failed)
		phase(0);
	clovis_fini(cl);
	rc = keep ? 0 : clovis_store_destroy(argv[1]);
	if (rc != 0) {
		fprintf(stderr, "bench_s3_direct: destroy %s: %s\n", argv[1],
			clovis_strerror(rc));
		failed = 1;
	}
	free(body);
	return failed ? 1 : 0;
}
