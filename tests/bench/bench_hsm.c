/*
 * bench_hsm.c — HSM (issue 31, "Benchmark"): the time to promote a 1 GiB
 * working set from sas to flash with the HSM engine (fdmi/hsm/hsm.h), and
 * the working set's read latency before and after, with the device model
 * on; each figure beside a raw baseline measured in the same run and
 * store, as a ratio.  Embedded mode, one process:
 *
 * 1. A fresh store under DIR (nvram0, flash0..7, sas0..3, as the built-in
 *    default but sized for the working set, device_fill reserve) gets, with
 *    the model off (setup only, 4 threads): the working set, N objects of
 *    4 MiB (N = MiB / 4; 256 for 1 GiB), each a composite object whose one
 *    layer is plain on sas; and a second set of N plain objects on sas for
 *    the raw baseline.  Every 4 KiB block carries a stamp (object, block)
 *    that every read below checks.
 * 2. The store reopened with the device model on (CLOVIS_CONF_DEVICE_MODEL,
 *    the class defaults), the HSM engine opened on it (its FDMI consumer
 *    registered, so that reads are recorded; its catalog found the objects
 *    by a scan).  "Before": R random 4 KiB block reads (default 2000) of the
 *    working set, 1 in flight, every object read at least once (a shuffled
 *    pass over the objects, a random block each); their latencies' p50 and
 *    p99.  Then, untimed, each object's first and last block: the HSM
 *    promotes the span of blocks read (its hot extent), here the whole
 *    object.  The store is then reopened so that the read records are flushed.
 * 3. Promote: one hsm_round() of the policy
 *        window 1h; class hot: heat_min 1, tier sas;
 *        rule: hot, promote, to flash; rate: ops_in_flight Q (4),
 *        bytes_per_s 0
 *    timed whole (it folds in the read records, picks and moves).  It must
 *    move every object of the working set: done == N, failed == 0 (else
 *    the bench fails), and every object's blocks are then on flash.
 * 4. "After": the same R reads (same objects and blocks); p50, p99.
 * 5. Raw baseline of the promote, same store, same model: for each object
 *    of the second set, Q threads (as ops_in_flight) read it whole and
 *    write it to a new plain object on flash (created, written to STABLE).
 *
 * Figures (ratio = ours / raw):
 *   hsm_promote_1g_s             ours: the round's seconds; raw: the copy's
 *   hsm_promote_1g_mib_s         the same as MiB/s
 *   hsm_read_p50_before_after_us ours: p50 after; raw: p50 before (lower
 *   hsm_read_p99_before_after_us is better); likewise p99
 * ("1g" is the working set's size: "256m" with --mib 256.)  No goal is set
 * for these figures: they are reported.
 *
 *   strata_bench_hsm --dir DIR [--mib N] [--reads R] [--ops Q] [--json]
 *                    [--verbose]
 *
 * --mib: the working set in MiB, a multiple of 4 (default 1024); --reads:
 * reads of each latency phase (default 2000, at least one per object);
 * --ops: moves in flight (ops_in_flight) and copies in flight of the
 * baseline (default 4); --verbose: the engine's action lines to stderr.
 * Everything the bench made under DIR (the store DIR/hsm-PID, its
 * configuration and the HSM catalog beside it) is removed at the end, and
 * when it fails.
 *
 * Devices: files on the disk of DIR (O_DIRECT), NVRAM on /dev/shm,
 * metadata (LMDB) and the catalog (SQLite) on the disk of DIR; the device
 * model on with the class defaults of tiers/tier_model.c (sas: 6 ms a
 * request, 200 MB/s; flash: 80 us a read, 20 us a write, 2 GB/s read,
 * 1 GB/s write).  A 1 GiB run takes 30 to 45 s, 13 s of it the 2000 reads
 * on sas (6 ms each).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "fdmi/hsm/hsm.h"
#include "fdmi/hsm/hsm_policy.h"

#define BS 4096u
#define OBJ_MIB 4u
#define OBJ_BLOCKS (OBJ_MIB * (1u << 20) / BS)
/* Moves and copies in flight (the policy's ops_in_flight; --ops). */
static unsigned qd = 4;
/* Setup writers. */
#define WRITERS 4u

/* The working set (composite), the raw set (plain sas), the raw copies
 * (plain flash). */
#define ID_HOT 0x45a0000000000000ull
#define ID_RAW 0x45b0000000000000ull
#define ID_COPY 0x45c0000000000000ull

static const char emu[] = "embedded, sas/flash = files on the disk of DIR "
			  "(O_DIRECT) with the device model on, class "
			  "defaults (sas 6 ms a request, 200 MB/s; flash "
			  "80 us read, 20 us write, 2 GB/s read, 1 GB/s "
			  "write), NVRAM on /dev/shm, LMDB and the HSM "
			  "catalog (SQLite) on the disk";

/* The policy; %u: ops_in_flight (qd). */
static const char policy_fmt[] =
	"window: 1h\n"
	"rate:\n"
	"  bytes_per_s: 0\n"
	"  ops_in_flight: %u\n"
	"classes:\n"
	"  - name: hot\n"
	"    heat_min: 1\n"
	"    tier: sas\n"
	"rules:\n"
	"  - class: hot\n"
	"    action: promote\n"
	"    to: flash\n";

static struct clovis *cl;
static struct hsm *hsm;
static char sdir[1100], sconf[1120], sdb[1120];
static uint32_t nobj;
static struct clovis_obj *hot, *raw;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Remove whatever the bench made (the store, its configuration file and
 * the catalog). */
static void cleanup(void)
{
	static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
	char p[1200];

	if (hsm != NULL)
		hsm_close(hsm);
	hsm = NULL;
	if (cl != NULL)
		clovis_fini(cl);
	cl = NULL;
	if (sdir[0] != '\0' && access(sdir, F_OK) == 0 &&
	    clovis_store_destroy(sdir) != 0)
		fprintf(stderr, "bench_hsm: destroy %s: %s\n", sdir,
			clovis_errmsg());
	for (unsigned i = 0; sdb[0] != '\0' && i < 4; i++) {
		snprintf(p, sizeof p, "%s%s", sdb, sfx[i]);
		unlink(p);
	}
	if (sconf[0] != '\0')
		unlink(sconf);
}

/* Main thread only: a failure ends the bench, removing its store. */
static void check(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "bench_hsm: %s: %s: %s\n", what,
			clovis_strerror(rc), clovis_errmsg());
		cleanup();
		exit(1);
	}
}

static void fail(const char *msg)
{
	fprintf(stderr, "bench_hsm: %s\n", msg);
	cleanup();
	exit(1);
}

static int ent_sync(struct clovis_entity *e, int opc)
{
	struct clovis_op *op = NULL;
	int rc = clovis_entity_op(e, opc, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc;
}

/* Blocks [s, s + n) of o from (READ) or into (WRITE) buf, to STABLE. */
static int obj_rw(struct clovis_obj *o, int opc, uint64_t s, uint64_t n,
		  void *buf)
{
	struct clovis_extvec ev = {1, &s, &n};
	size_t bl = n * BS;
	struct clovis_bufvec bv = {1, &buf, &bl};
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(o, opc, &ev, &bv, 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc;
}

/* The stamp of block b of object i of set id. */
static uint64_t stamp(uint64_t set, uint32_t i, uint64_t b)
{
	return set ^ ((uint64_t)i << 24) ^ b;
}

static void fill(uint8_t *buf, uint64_t set, uint32_t i)
{
	for (uint64_t b = 0; b < OBJ_BLOCKS; b++) {
		uint64_t s = stamp(set, i, b);

		memset(buf + b * BS, (int)(s & 0xff), BS);
		memcpy(buf + b * BS, &s, sizeof s);
	}
}

/* Whether buf holds blocks [b, b + n) of object i of set. */
static bool stamped(const uint8_t *buf, uint64_t set, uint32_t i, uint64_t b,
		    uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		uint64_t s;

		memcpy(&s, buf + k * BS, sizeof s);
		if (s != stamp(set, i, b + k) ||
		    buf[k * BS + BS - 1] != (uint8_t)(s & 0xff))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------ the store */

static void store_open(uint32_t flags)
{
	struct clovis_conf c = {.cc_mode = CLOVIS_MODE_EMBEDDED,
				.cc_data_dir = sdir,
				.cc_flags = flags,
				.cc_config = sconf};

	check(clovis_init(&cl, &c), "init");
}

/* Handle of object lo of set hi; create: a composite object with one
 * plain layer on sas (hot), or a plain object on tier. */
static int obj_make(struct clovis_obj *o, uint64_t hi, uint32_t lo,
		    bool create, bool composite, uint32_t tier)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = composite ?
						 CLOVIS_LAYOUT_COMPOSITE :
						 CLOVIS_LAYOUT_PLAIN,
				    .oa_tier = tier};
	struct clovis_obj_attr la = {.oa_block_shift = 12,
				     .oa_layout = CLOVIS_LAYOUT_PLAIN,
				     .oa_tier = tier};
	struct clovis_id id = {hi, lo + 1};
	uint32_t layer;
	int rc = clovis_obj_init(o, clovis_default_realm(cl), &id,
				 create ? &a : NULL);

	if (rc == 0)
		rc = ent_sync(&o->ob_entity, create ? CLOVIS_EO_CREATE :
						      CLOVIS_EO_OPEN);
	if (rc == 0 && create && composite)
		rc = clovis_obj_layer_add(o, &la, 10, &layer);
	return rc;
}

/* Threads' work: objects taken in turn; the first failure is kept. */
struct work {
	uint32_t w_next;
	int w_rc;
	char w_err[256];
	pthread_mutex_t w_lock;
};

static bool work_take(struct work *w, uint32_t *i)
{
	bool ok;

	pthread_mutex_lock(&w->w_lock);
	*i = w->w_next++;
	ok = *i < nobj && w->w_rc == 0;
	pthread_mutex_unlock(&w->w_lock);
	return ok;
}

static void work_fail(struct work *w, int rc, const char *what, uint32_t i)
{
	pthread_mutex_lock(&w->w_lock);
	if (w->w_rc == 0) {
		w->w_rc = rc ? rc : -EIO;
		snprintf(w->w_err, sizeof w->w_err, "%s of object %u: %s",
			 what, i, rc ? clovis_errmsg() : "wrong data");
	}
	pthread_mutex_unlock(&w->w_lock);
}

static void work_run(struct work *w, unsigned nt, void *(*fn)(void *))
{
	pthread_t t[16];
	unsigned started = 0;

	w->w_next = 0;
	w->w_rc = 0;
	for (unsigned i = 0; i < nt; i++)
		if (pthread_create(&t[started], NULL, fn, w) == 0)
			started++;
	if (started == 0)
		fail("no thread");
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	if (w->w_rc != 0) {
		fprintf(stderr, "bench_hsm: %s\n", w->w_err);
		check(w->w_rc, "threads");
	}
}

static uint8_t *buf_new(size_t len)
{
	void *p = NULL;

	return posix_memalign(&p, BS, len) == 0 ? p : NULL;
}

/* Setup: object i of the working set and of the raw set, written. */
static void *writer(void *arg)
{
	struct work *w = arg;
	uint8_t *buf = buf_new(OBJ_BLOCKS * BS);
	uint32_t i;
	int rc;

	if (buf == NULL) {
		work_fail(w, -ENOMEM, "buffer", 0);
		return NULL;
	}
	while (work_take(w, &i)) {
		fill(buf, ID_HOT, i);
		rc = obj_make(&hot[i], ID_HOT, i, true, true, CLOVIS_TIER_SAS);
		if (rc == 0)
			rc = obj_rw(&hot[i], CLOVIS_OC_WRITE, 0, OBJ_BLOCKS, buf);
		if (rc != 0) {
			work_fail(w, rc, "write (working set)", i);
			break;
		}
		fill(buf, ID_RAW, i);
		rc = obj_make(&raw[i], ID_RAW, i, true, false, CLOVIS_TIER_SAS);
		if (rc == 0)
			rc = obj_rw(&raw[i], CLOVIS_OC_WRITE, 0, OBJ_BLOCKS, buf);
		if (rc != 0) {
			work_fail(w, rc, "write (raw set)", i);
			break;
		}
	}
	free(buf);
	return NULL;
}

/* Handles of both sets after a reopen. */
static void objs_open(void)
{
	for (uint32_t i = 0; i < nobj; i++) {
		check(obj_make(&hot[i], ID_HOT, i, false, true, 0), "open");
		check(obj_make(&raw[i], ID_RAW, i, false, false, 0), "open");
	}
}

/* ------------------------------------------------------- read latency */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Read latencies (us). */
struct lat {
	double l_p50, l_p90, l_p99, l_max, l_mean;
};

/* Each object's first and last block read (untimed): the span read is
 * the whole object. */
static void touch_ends(void)
{
	uint8_t *buf = buf_new(BS);

	if (buf == NULL)
		fail("out of memory");
	for (uint32_t i = 0; i < nobj; i++) {
		check(obj_rw(&hot[i], CLOVIS_OC_READ, 0, 1, buf), "read");
		check(obj_rw(&hot[i], CLOVIS_OC_READ, OBJ_BLOCKS - 1, 1, buf),
		      "read");
	}
	free(buf);
}

/* nr random 4 KiB reads of the working set, 1 in flight: a shuffled pass
 * over the objects after another, a random block of each (seeded: the
 * same reads every time); their latencies in *l. */
static void read_lat(uint32_t nr, struct lat *l)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint32_t *perm = malloc(nobj * sizeof *perm);
	double *lat = malloc(nr * sizeof *lat), sum = 0;
	uint8_t *buf = buf_new(BS);

	if (perm == NULL || lat == NULL || buf == NULL)
		fail("out of memory");
	for (uint32_t k = 0; k < nr; k++) {
		uint32_t j = k % nobj, i;
		uint64_t b;
		double t0;

		if (j == 0) {
			for (uint32_t x = 0; x < nobj; x++)
				perm[x] = x;
			for (uint32_t x = nobj - 1; x > 0; x--) {
				uint32_t y = (uint32_t)(rnd_next(&seed) %
							(x + 1)), t = perm[x];

				perm[x] = perm[y];
				perm[y] = t;
			}
		}
		i = perm[j];
		b = rnd_next(&seed) % OBJ_BLOCKS;
		t0 = now();
		check(obj_rw(&hot[i], CLOVIS_OC_READ, b, 1, buf), "read");
		lat[k] = (now() - t0) * 1e6;
		sum += lat[k];
		if (!stamped(buf, ID_HOT, i, b, 1))
			fail("a read of the working set returned wrong data");
	}
	qsort(lat, nr, sizeof *lat, cmp_d);
	l->l_p50 = lat[(size_t)(0.5 * (nr - 1))];
	l->l_p90 = lat[(size_t)(0.9 * (nr - 1))];
	l->l_p99 = lat[(size_t)(0.99 * (nr - 1))];
	l->l_max = lat[nr - 1];
	l->l_mean = sum / nr;
	free(buf);
	free(lat);
	free(perm);
}

/* ------------------------------------------------------ raw baseline */

/* Raw copy of object i of the raw set: read whole, written whole into a
 * new plain object on flash. */
static void *copier(void *arg)
{
	struct work *w = arg;
	uint8_t *buf = buf_new(OBJ_BLOCKS * BS);
	uint32_t i;
	int rc;

	if (buf == NULL) {
		work_fail(w, -ENOMEM, "buffer", 0);
		return NULL;
	}
	while (work_take(w, &i)) {
		struct clovis_obj c;

		rc = obj_rw(&raw[i], CLOVIS_OC_READ, 0, OBJ_BLOCKS, buf);
		if (rc != 0 || !stamped(buf, ID_RAW, i, 0, OBJ_BLOCKS)) {
			work_fail(w, rc, "raw copy read", i);
			break;
		}
		rc = obj_make(&c, ID_COPY, i, true, false, CLOVIS_TIER_FLASH);
		if (rc == 0)
			rc = obj_rw(&c, CLOVIS_OC_WRITE, 0, OBJ_BLOCKS, buf);
		if (rc != 0) {
			work_fail(w, rc, "raw copy write", i);
			break;
		}
	}
	free(buf);
	return NULL;
}

/* Every object of the working set: all its blocks on flash. */
static void check_promoted(void)
{
	for (uint32_t i = 0; i < nobj; i++) {
		struct clovis_layer_info li[16];
		uint32_t nr = 16;
		uint64_t fl = 0, other = 0;

		check(clovis_obj_layer_list(&hot[i], li, &nr), "layer list");
		for (uint32_t k = 0; k < nr && k < 16; k++)
			*(li[k].li_attr.oa_tier == CLOVIS_TIER_FLASH ? &fl
								      : &other)
				+= li[k].li_blocks;
		if (fl != OBJ_BLOCKS || other != 0) {
			fprintf(stderr, "bench_hsm: object %u after the round:"
				" %llu blocks on flash, %llu elsewhere\n", i,
				(unsigned long long)fl,
				(unsigned long long)other);
			fail("the working set is not all on flash");
		}
	}
}

/* ------------------------------------------------------------ figures */

/* One figure: a table line or a JSON object (as bench_fdmi.c's). */
struct row {
	const char *r_name, *r_unit, *r_raw_is;
	double r_ours, r_raw, r_ratio, r_goal;
	bool r_lower; /* lower is better (times, latencies) */
};

static void row_print(const struct row *r, bool json, bool *first)
{
	if (json) {
		printf("%s\n  {\"name\": \"%s\", \"ours\": %.3f, \"raw\": %.3f, "
		       "\"ratio\": %.3f, \"unit\": \"%s\", \"raw_is\": \"%s\", "
		       "\"rounds\": 1, \"emulation\": \"%s\", "
		       "\"lower_is_better\": %s, \"goal\": ", *first ? "" : ",",
		       r->r_name, r->r_ours, r->r_raw, r->r_ratio, r->r_unit,
		       r->r_raw_is, emu, r->r_lower ? "true" : "false");
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
		printf("%-40s %9.*f %9.*f %6.3f %-9s  %-9s %-10s raw = %s\n",
		       r->r_name, r->r_ours < 100 ? 3 : 0, r->r_ours,
		       r->r_raw < 100 ? 3 : 0, r->r_raw, r->r_ratio, "",
		       r->r_unit, gs, r->r_raw_is);
	}
	*first = false;
}

static void usage(void)
{
	fprintf(stderr, "usage: strata_bench_hsm --dir DIR [--mib N] "
		"[--reads R] [--ops Q] [--json] [--verbose]\n"
		"  --mib: the working set, a multiple of %u MiB (default "
		"1024); --reads: reads per latency phase (default 2000); "
		"--ops: moves and copies in flight, 1..16 (default 4)\n",
		OBJ_MIB);
}

/* The store's configuration: the built-in default's devices (but smr0),
 * sized for both sets with room for an uneven spread, reserved only. */
static void conf_write(uint32_t mib)
{
	uint32_t sas = (mib > 64 ? mib : 64) + 64;
	uint32_t fl = (mib / 2 > 32 ? mib / 2 : 32) + 64;
	FILE *f = fopen(sconf, "w");

	if (f == NULL)
		fail("cannot write the store configuration");
	fprintf(f, "device_fill: reserve\ndevices:\n"
		"  - { tier: nvram, size: 64MiB }\n");
	for (unsigned i = 0; i < 8; i++)
		fprintf(f, "  - { tier: flash, size: %uMiB }\n", fl);
	for (unsigned i = 0; i < 4; i++)
		fprintf(f, "  - { tier: sas, size: %uMiB }\n", sas);
	if (fclose(f) != 0)
		fail("cannot write the store configuration");
}

int main(int argc, char **argv)
{
	static struct hsm_policy pol;
	const char *dir = NULL;
	uint32_t mib = 1024, nreads = 2000;
	bool json = false, verbose = false, first = true;
	struct work w = {.w_lock = PTHREAD_MUTEX_INITIALIZER};
	struct hsm_round_stats st;
	struct hsm_conf hc = {0};
	double t0, t_setup, t_prom, t_raw;
	struct lat bl, al;
	double ws_mib;
	FILE *devnull = NULL;
	char sz[16], n1[64], n2[64], n3[64], n4[64], ptext[512], rawis[64];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
			mib = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--reads") == 0 && i + 1 < argc)
			nreads = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
			qd = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--verbose") == 0)
			verbose = true;
	}
	if (dir == NULL || mib == 0 || mib % OBJ_MIB != 0 ||
	    mib > (1u << 20) || nreads == 0 || qd == 0 || qd > 16) {
		usage();
		return 2;
	}
	nobj = mib / OBJ_MIB;
	if (nreads < nobj)
		nreads = nobj;
	ws_mib = mib;
	hot = calloc(nobj, sizeof *hot);
	raw = calloc(nobj, sizeof *raw);
	if (hot == NULL || raw == NULL)
		fail("out of memory");
	snprintf(ptext, sizeof ptext, policy_fmt, qd);
	check(hsm_policy_parse("bench_hsm policy", ptext, strlen(ptext),
			       &pol), "policy");
	snprintf(sdir, sizeof sdir, "%s/hsm-%d", dir, (int)getpid());
	snprintf(sconf, sizeof sconf, "%s.yaml", sdir);
	snprintf(sdb, sizeof sdb, "%s.sqlite", sdir);
	conf_write(mib);

	/* 1. the two sets, model off */
	t0 = now();
	store_open(CLOVIS_CONF_CREATE);
	work_run(&w, WRITERS, writer);
	clovis_fini(cl);
	cl = NULL;
	t_setup = now() - t0;
	fprintf(stderr, "# setup: %u composite objects of %u MiB on sas "
		"(working set) and %u plain ones on sas (raw set), model off: "
		"%.1f s\n", nobj, OBJ_MIB, nobj, t_setup);

	/* 2. model on, the HSM's consumer registered: reads before */
	store_open(CLOVIS_CONF_DEVICE_MODEL);
	objs_open();
	devnull = verbose ? NULL : fopen("/dev/null", "w");
	hc = (struct hsm_conf){.hc_cl = cl, .hc_policy = &pol, .hc_db = sdb,
			       .hc_out = verbose ? stderr : devnull};
	check(hsm_open(&hc, &hsm), "hsm_open");
	t0 = now();
	read_lat(nreads, &bl);
	fprintf(stderr, "# before: %u reads of 4 KiB on sas, 1 in flight: "
		"p50 %.0f us, p90 %.0f, p99 %.0f, max %.0f, mean %.0f (%.1f "
		"s)\n", nreads, bl.l_p50, bl.l_p90, bl.l_p99, bl.l_max,
		bl.l_mean, now() - t0);
	touch_ends();
	/* the read records are written about once a second and at close */
	hsm_close(hsm);
	hsm = NULL;
	clovis_fini(cl);
	cl = NULL;

	/* 3. promote: one round */
	store_open(CLOVIS_CONF_DEVICE_MODEL);
	objs_open();
	hc.hc_cl = cl;
	check(hsm_open(&hc, &hsm), "hsm_open");
	t0 = now();
	check(hsm_round(hsm, &st), "hsm_round");
	t_prom = now() - t0;
	fprintf(stderr, "# promote: one hsm_round %.2f s: %llu records, "
		"%u picked, %u done, %u partial, %u failed, %llu bytes\n",
		t_prom, (unsigned long long)st.hr_records, st.hr_picked,
		st.hr_done, st.hr_partial, st.hr_failed,
		(unsigned long long)st.hr_bytes);
	if (st.hr_done != nobj || st.hr_failed != 0) {
		fprintf(stderr, "bench_hsm: the round moved %u objects of %u "
			"(%u failed): one round must promote the whole "
			"working set\n", st.hr_done, nobj, st.hr_failed);
		fail("promote incomplete");
	}
	if (st.hr_bytes != (uint64_t)mib << 20)
		fail("the round moved a wrong number of bytes");
	check_promoted();

	/* 4. reads after */
	t0 = now();
	read_lat(nreads, &al);
	fprintf(stderr, "# after: the same %u reads, on flash: p50 %.0f us, "
		"p90 %.0f, p99 %.0f, max %.0f, mean %.0f (%.1f s)\n", nreads,
		al.l_p50, al.l_p90, al.l_p99, al.l_max, al.l_mean,
		now() - t0);

	/* 5. raw baseline: copies sas -> flash through Clovis, qd threads */
	t0 = now();
	work_run(&w, qd, copier);
	t_raw = now() - t0;
	fprintf(stderr, "# raw copy: %u objects of %u MiB read whole on sas "
		"and written to new plain flash objects, %u in flight: "
		"%.2f s\n", nobj, OBJ_MIB, qd, t_raw);
	cleanup();
	if (devnull != NULL)
		fclose(devnull);

	if (mib % 1024 == 0)
		snprintf(sz, sizeof sz, "%ug", mib / 1024);
	else
		snprintf(sz, sizeof sz, "%um", mib);
	snprintf(n1, sizeof n1, "hsm_promote_%s_s", sz);
	snprintf(n2, sizeof n2, "hsm_promote_%s_mib_s", sz);
	snprintf(n3, sizeof n3, "hsm_read_p50_before_after_us");
	snprintf(n4, sizeof n4, "hsm_read_p99_before_after_us");
	snprintf(rawis, sizeof rawis, "Clovis copy sas->flash, %u in flight",
		 qd);
	{
		struct row rows[4] = {
			{n1, "s", rawis,
			 t_prom, t_raw, t_prom / t_raw, 0, true},
			{n2, "MiB/s", rawis,
			 ws_mib / t_prom, ws_mib / t_raw, t_raw / t_prom, 0,
			 false},
			{n3, "us", "p50 before (on sas)", al.l_p50, bl.l_p50,
			 al.l_p50 / bl.l_p50, 0, true},
			{n4, "us", "p99 before (on sas)", al.l_p99, bl.l_p99,
			 al.l_p99 / bl.l_p99, 0, true},
		};

		if (json)
			printf("[");
		else
			printf("%-40s %9s %9s %6s %-9s  %-9s %-10s %s\n",
			       "name", "ours", "raw", "ratio", "", "unit",
			       "goal", "raw is");
		for (unsigned i = 0; i < 4; i++)
			row_print(&rows[i], json, &first);
	}
	if (json) {
		printf("\n]\n");
		return 0;
	}
	printf("# %s\n# working set: %u composite objects of %u MiB on sas "
	       "(%u MiB); promote: one hsm_round (window 1h, class hot: "
	       "heat_min 1, tier sas; promote to flash; ops_in_flight %u, "
	       "no byte rate), raw: the same bytes copied object by object "
	       "through Clovis (read whole, written to a new plain flash "
	       "object), %u in flight; reads: %u random 4 KiB blocks of the "
	       "working set, 1 in flight, the same before and after\n", emu,
	       nobj, OBJ_MIB, mib, qd, qd, nreads);
	return 0;
}
