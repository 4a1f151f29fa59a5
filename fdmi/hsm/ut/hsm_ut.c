/*
 * hsm_ut.c — suite "hsm" (issue 31 point 4): the HSM engine (fdmi/hsm/
 * hsm.h) over embedded stores with the device model on (files on the
 * disk; flash modelled at 100 us a read, sas at 3 ms):
 *
 *  - promote: a working set of composite objects on sas read repeatedly
 *    is promoted to flash by a heat rule, objects not read stay; the
 *    working set's read latency falls (asserted as a ratio, after/before
 *    below 0.5); undo moves an action's object back and marks it undone;
 *  - watermark: flash filled past its high mark (85 %) drains to its low
 *    mark, coldest (least recently written) first; against a cluster too
 *    (hsm_cluster_test.sh: small flash devices, the objects homed on the
 *    servers in turn, as each home allocates in its own slice of flash);
 *  - racing writes: a thread writes random blocks of an object while
 *    rounds move it between tiers: the object reads back byte-exact
 *    against a model after every round (a raced move is "partial");
 *  - dry run: prints the actions, moves, logs and acks nothing;
 *  - catalog: a restart of the plugin does not fold a record twice;
 *  - hot extent: of an object on sas of which only blocks 16..31 are
 *    read, a heat rule's promotion moves exactly those blocks to flash
 *    (the layer map, the catalog's ext rows and the action log say so,
 *    the data is byte-exact), and its undo moves them back; against a
 *    cluster too;
 *  - catalog migration: a catalog of the previous schema (reads without a
 *    span, no ext table) opens and gains the new columns; with an old
 *    read row (span unknown) in the window beside new ones of blocks 2..3,
 *    the promotion moves the whole object.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "core/types.h"
#include "fdmi/hsm/hsm.h"
#include "fdmi/hsm/hsm_policy.h"
#include "tests/ut.h"

#define HBS 4096u

static char hbase[512];
static char hdir[600];
static char hconf[640];
static char hdb[640];
static unsigned hstore_nr;

static const char store_conf[] =
	"devices:\n"
	"  - { name: f0, tier: flash, size: 32MiB }\n"
	"  - { name: sas0, tier: sas, size: 128MiB }\n"
	"device_model:\n"
	"  flash: { on: true, read_latency: 100us, write_latency: 50us, "
	"read_bandwidth: 2GB/s, write_bandwidth: 1GB/s }\n"
	"  sas: { on: true, read_latency: 3ms, write_latency: 200us, "
	"read_bandwidth: 1GB/s, write_bandwidth: 1GB/s }\n";

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

static bool skip(const char *test)
{
	return ut_cluster_skip(test, "stores of its own with the device "
			       "model, the plugin in this process");
}

/* A new store directory (and catalog path) for one test. */
static void store_new(void)
{
	FILE *f;

	snprintf(hdir, sizeof hdir, "%s/s%u", hbase, hstore_nr++);
	snprintf(hconf, sizeof hconf, "%s.yaml", hdir);
	snprintf(hdb, sizeof hdb, "%s.sqlite", hdir);
	f = fopen(hconf, "w");
	if (f != NULL) {
		fputs(store_conf, f);
		fclose(f);
	}
}

static struct clovis *sopen(void)
{
	struct clovis_conf c = {.cc_data_dir = hdir,
				.cc_flags = CLOVIS_CONF_CREATE,
				.cc_config = hconf,
				.cc_nr_workers = 4};
	struct clovis *cl = NULL;

	if (clovis_init(&cl, &c) != 0)
		fprintf(stderr, "hsm: clovis_init: %s\n", clovis_errmsg());
	return cl;
}

static void store_done(struct clovis *cl)
{
	clovis_fini(cl);
	clovis_store_destroy(hdir);
	unlink(hconf);
	unlink(hdb);
	{
		char p[700];

		snprintf(p, sizeof p, "%s-wal", hdb);
		unlink(p);
		snprintf(p, sizeof p, "%s-shm", hdb);
		unlink(p);
	}
}

static int ent_sync(struct clovis_entity *e, int opc)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(e, opc, &op);

	if (rc == 0)
		rc = clovis_op_sync(op); /* frees op */
	return rc;
}

/* A composite object {0x75, lo} whose one layer (priority 10) is plain on
 * tier, open in o. */
static int comp_new(struct clovis *cl, struct clovis_obj *o, uint64_t lo,
		    uint32_t tier)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_COMPOSITE};
	struct clovis_obj_attr la = {.oa_block_shift = 12,
				     .oa_layout = CLOVIS_LAYOUT_PLAIN,
				     .oa_tier = tier};
	struct clovis_id id = {0x75, lo};
	uint32_t layer;
	int rc = clovis_obj_init(o, clovis_default_realm(cl), &id, &a);

	if (rc == 0)
		rc = ent_sync(&o->ob_entity, CLOVIS_EO_CREATE);
	if (rc == 0)
		rc = clovis_obj_layer_add(o, &la, 10, &layer);
	return rc;
}

static int obj_reopen(struct clovis *cl, struct clovis_obj *o, uint64_t lo)
{
	struct clovis_id id = {0x75, lo};
	int rc = clovis_obj_init(o, clovis_default_realm(cl), &id, NULL);

	return rc != 0 ? rc : ent_sync(&o->ob_entity, CLOVIS_EO_OPEN);
}

/* Blocks [s, s+n) of o from or into buf. */
static int obj_rw(struct clovis_obj *o, int opc, uint64_t s, uint64_t n,
		  void *buf)
{
	struct clovis_extvec ev = {1, &s, &n};
	size_t bl = n * HBS;
	struct clovis_bufvec bv = {1, &buf, &bl};
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(o, opc, &ev, &bv, 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op); /* frees op */
	return rc;
}

/* Blocks of o per tier. */
static void obj_tier_blocks(struct clovis_obj *o, uint64_t per[4])
{
	struct clovis_layer_info li[16];
	uint32_t nr = 16;

	memset(per, 0, 4 * sizeof *per);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_layer_list(o, li, &nr), 0);
	for (uint32_t i = 0; i < nr; i++)
		if (li[i].li_attr.oa_tier < 4)
			per[li[i].li_attr.oa_tier] += li[i].li_blocks;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median latency (us) of reading all n blocks of each of the objects
 * los[0..nlo), rounds times; *min the shortest (what the device model
 * sets: a loaded machine adds its waits to every read, least to the
 * fastest). */
static uint64_t read_lat_us(struct clovis *cl, const uint64_t *los,
			    uint32_t nlo, uint64_t n, unsigned rounds,
			    uint64_t *min)
{
	uint64_t lat[256];
	unsigned k = 0;
	void *buf = malloc(n * HBS);

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	for (unsigned r = 0; r < rounds; r++)
		for (uint32_t i = 0; i < nlo && k < 256; i++) {
			struct clovis_obj o;
			uint64_t t0;

			CU_ASSERT_EQUAL_FATAL(obj_reopen(cl, &o, los[i]), 0);
			t0 = mono_us();
			CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 0, n, buf),
					0);
			lat[k++] = mono_us() - t0;
		}
	free(buf);
	qsort(lat, k, sizeof *lat, cmp_u64);
	*min = k > 0 ? lat[0] : 0;
	return k > 0 ? lat[k / 2] : 0;
}

static int policy(struct hsm_policy *p, const char *text)
{
	int rc = hsm_policy_parse("test.yaml", text, strlen(text), p);

	if (rc != 0)
		fprintf(stderr, "\n  policy: %s\n", clovis_errmsg());
	return rc;
}

static struct hsm *hopen(struct clovis *cl, const struct hsm_policy *p,
			 bool dry, FILE *out)
{
	struct hsm_conf c = {.hc_cl = cl, .hc_policy = p, .hc_db = hdb,
			     .hc_dry_run = dry, .hc_out = out};
	struct hsm *h = NULL;

	if (hsm_open(&c, &h) != 0)
		fprintf(stderr, "\n  hsm_open: %s\n", clovis_errmsg());
	return h;
}

/* A round; stats in *st.  CUnit-asserts success. */
static void round1(struct hsm *h, struct hsm_round_stats *st)
{
	int rc = hsm_round(h, st);

	if (rc != 0)
		fprintf(stderr, "\n  hsm_round: %s\n", clovis_errmsg());
	CU_ASSERT_EQUAL(rc, 0);
}

/* --------------------------------------------------------- promote */

#define P_HOT 6u
#define P_COLD 4u
#define P_BLOCKS 16u

static const char promote_policy[] =
	"interval: 1s\n"
	"window: 1h\n"
	"classes:\n"
	"  - name: hot\n"
	"    id: \"75:\"\n"  /* this test's (a cluster has others) */
	"    heat_min: 3\n"
	"    tier: sas\n"
	"rules:\n"
	"  - class: hot\n"
	"    action: promote\n"
	"    to: flash\n"
	"    order: mru\n";

static void test_promote(void)
{
	static struct hsm_policy p;
	uint64_t hot[P_HOT], before, after, bmin, amin, per[4], seq = 0;
	struct hsm_round_stats st;
	struct clovis *cl;
	struct hsm *h;
	uint8_t *buf;
	char *text = NULL;
	size_t tlen = 0;
	FILE *mem;

	/* runs against a cluster too (comp_cluster_test.sh: its servers
	 * with the device model) */
	CU_ASSERT_EQUAL_FATAL(policy(&p, promote_policy), 0);
	store_new();
	cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	/* the plugin first: its consumer makes the store record reads */
	h = hopen(cl, &p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	buf = malloc(P_BLOCKS * HBS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	for (uint32_t i = 0; i < P_HOT + P_COLD; i++) {
		struct clovis_obj o;

		memset(buf, 0x30 + (int)i, P_BLOCKS * HBS);
		CU_ASSERT_EQUAL_FATAL(comp_new(cl, &o, 0x100 + i,
					       CLOVIS_TIER_SAS), 0);
		CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_WRITE, 0, P_BLOCKS,
					     buf), 0);
		if (i < P_HOT)
			hot[i] = 0x100 + i;
	}
	/* the working set, read 5 times over on sas */
	before = read_lat_us(cl, hot, P_HOT, P_BLOCKS, 5, &bmin);
	/* reads are recorded about once a second and at close: reopen (a
	 * cluster's servers record them: their next second) */
	if (ut_cluster_mode())
		sleep(2);
	hsm_close(h);
	clovis_fini(cl);
	cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	h = hopen(cl, &p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	round1(h, &st);
	CU_ASSERT(st.hr_records > 0);
	CU_ASSERT_EQUAL(st.hr_picked, P_HOT);
	CU_ASSERT_EQUAL(st.hr_done, P_HOT);
	CU_ASSERT_EQUAL(st.hr_failed, 0);
	CU_ASSERT_EQUAL(st.hr_bytes, (uint64_t)P_HOT * P_BLOCKS * HBS);
	for (uint32_t i = 0; i < P_HOT + P_COLD; i++) {
		struct clovis_obj o;

		CU_ASSERT_EQUAL_FATAL(obj_reopen(cl, &o, 0x100 + i), 0);
		obj_tier_blocks(&o, per);
		if (i < P_HOT) {
			CU_ASSERT_EQUAL(per[CLOVIS_TIER_FLASH], P_BLOCKS);
			CU_ASSERT_EQUAL(per[CLOVIS_TIER_SAS], 0);
		} else {
			CU_ASSERT_EQUAL(per[CLOVIS_TIER_SAS], P_BLOCKS);
			CU_ASSERT_EQUAL(per[CLOVIS_TIER_FLASH], 0);
		}
		/* the data is the same */
		CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 0, P_BLOCKS, buf),
				0);
		CU_ASSERT(buf[0] == 0x30 + i &&
			  buf[P_BLOCKS * HBS - 1] == 0x30 + i);
	}
	after = read_lat_us(cl, hot, P_HOT, P_BLOCKS, 5, &amin);
	fprintf(stderr, "\n    hsm promote: %u objects of %u KiB, read "
		"latency p50 %" PRIu64 " us on sas, %" PRIu64 " us after "
		"promotion to flash (ratio %.3f; shortest %" PRIu64 " and %"
		PRIu64 " us; device model: %s)\n",
		P_HOT, P_BLOCKS * 4, before, after,
		before ? (double)after / (double)before : 0.0, bmin, amin,
		ut_cluster_mode() ? "the servers' class defaults, reads "
				    "over loopback" :
				    "sas 3 ms, flash 100 us a read");
	/* the shortest reads: the p50s take the machine's load too (under
	 * ASan at load 20, 3,227 and 2,192 us: 0.68) */
	CU_ASSERT(bmin > 0 && amin * 2 < bmin);
	/* a second round: nothing left to do */
	round1(h, &st);
	CU_ASSERT_EQUAL(st.hr_picked, 0);
	/* the action log, and undo of the first action */
	mem = open_memstream(&text, &tlen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
	CU_ASSERT_EQUAL(hsm_actions(h, mem, true), 0);
	fclose(mem);
	CU_ASSERT(text != NULL && strstr(text, "\"to\": \"flash\"") != NULL &&
		  strstr(text, "\"from\": \"sas\"") != NULL);
	if (text != NULL)
		sscanf(text, "{\"action\": %" SCNu64, &seq);
	free(text);
	CU_ASSERT_EQUAL_FATAL(seq, 1);
	CU_ASSERT_EQUAL(hsm_undo(h, 1), 0);
	CU_ASSERT_EQUAL(hsm_undo(h, 1), -EINVAL); /* undone already */
	CU_ASSERT_EQUAL(hsm_undo(h, 999), -ENOENT);
	text = NULL;
	mem = open_memstream(&text, &tlen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
	CU_ASSERT_EQUAL(hsm_actions(h, mem, true), 0);
	fclose(mem);
	CU_ASSERT(text != NULL && strstr(text, "\"state\": \"undone\"") &&
		  strstr(text, "\"undo_of\": 1"));
	free(text);
	{
		/* action 1 was the most recently accessed object (mru) */
		uint32_t back = 0;

		for (uint32_t i = 0; i < P_HOT; i++) {
			struct clovis_obj o;

			CU_ASSERT_EQUAL_FATAL(obj_reopen(cl, &o, hot[i]), 0);
			obj_tier_blocks(&o, per);
			back += per[CLOVIS_TIER_SAS] == P_BLOCKS &&
				per[CLOVIS_TIER_FLASH] == 0;
		}
		CU_ASSERT_EQUAL(back, 1);
	}
	free(buf);
	hsm_close(h);
	store_done(cl);
}

/* ------------------------------------------------------- watermark */

static const char mark_policy[] =
	"classes:\n"
	"  - name: any\n"
	"watermarks:\n"
	"  - tier: flash\n"
	"    high: 85%\n"
	"    low: 50%\n"
	"    to: sas\n";

/* A cluster's: a plain layer stays on its home's own slice of the home's
 * own devices (core/store.c: plain objects on local devices only), a
 * third of the flash tier with 3 servers, so its marks are lower. */
static const char mark_policy_cluster[] =
	"classes:\n"
	"  - name: any\n"
	"watermarks:\n"
	"  - tier: flash\n"
	"    high: 25%\n"
	"    low: 15%\n"
	"    to: sas\n";

static int flash_pct(struct clovis *cl)
{
	static struct clovis_dev_info d[256];
	uint32_t nr = 256;
	uint64_t used = 0, size = 0;

	if (clovis_dev_list(cl, d, &nr) != 0)
		return -1;
	for (uint32_t i = 0; i < nr && i < 256; i++)
		if (d[i].di_tier == CLOVIS_TIER_FLASH) {
			size += d[i].di_size_bytes;
			used += d[i].di_size_bytes - d[i].di_free_bytes;
		}
	return size ? (int)(used * 100 / size) : -1;
}

/* The servers of a cluster (the distinct "NAME:" prefixes of its
 * devices' paths; 1 for an embedded store) in *nsrv, the flash devices
 * of one server in *nflash. */
static void cluster_shape(struct clovis *cl, uint32_t *nsrv,
			  uint32_t *nflash)
{
	static struct clovis_dev_info d[256];
	char names[64][64];
	uint32_t nr = 256, n = 0;

	*nsrv = 1;
	*nflash = 1;
	if (!ut_cluster_mode() || clovis_dev_list(cl, d, &nr) != 0)
		return;
	*nflash = 0;
	for (uint32_t i = 0; i < nr && i < 256; i++) {
		const char *c = strchr(d[i].di_path, ':');
		size_t l = c ? (size_t)(c - d[i].di_path) : 0;
		uint32_t k;

		*nflash += d[i].di_tier == CLOVIS_TIER_FLASH;
		if (l == 0 || l >= sizeof names[0])
			continue;
		for (k = 0; k < n; k++)
			if (strncmp(names[k], d[i].di_path, l) == 0 &&
			    names[k][l] == '\0')
				break;
		if (k == n && n < 64) {
			memcpy(names[n], d[i].di_path, l);
			names[n++][l] = '\0';
		}
	}
	*nsrv = n ? n : 1;
	*nflash /= *nsrv;
	if (*nflash == 0)
		*nflash = 1;
}

/* The id (lo, at or after *next, which moves past it) of the n-th object
 * of the watermark test.  A cluster's objects fill the flash they can
 * use evenly: a plain layer stays on its home (clu_home(): a mix of the
 * id), in the home's own slice of one of the home's nflash flash devices,
 * the one its id hashes to (core/plain.c), so that one slice would be
 * full long before the others; object n goes to home n % nsrv, device
 * slot (n / nsrv) % nflash. */
static uint64_t id_slot(uint64_t *next, uint32_t n, uint32_t nsrv,
			uint32_t nflash)
{
	uint32_t home = n % nsrv, dev = (n / nsrv) % nflash;

	for (;; (*next)++) {
		uint64_t lo = *next;

		if (nsrv == 1 ||
		    (st_mix64(0x75 ^ st_mix64(lo)) % nsrv == home &&
		     st_mix64(0x75 ^ st_mix64(lo + 0x9e3779b97f4a7c15ull)) %
		     nflash == dev))
			return (*next)++;
	}
}

static void test_watermark(void)
{
	static struct hsm_policy p;
	struct hsm_round_stats st;
	struct clovis *cl;
	struct hsm *h;
	uint32_t nobj = 0, moved_prefix = 0, nsrv, nflash, cap, ob;
	int high, low;
	static uint64_t los[1024];
	uint64_t next = 0x200;
	bool in_prefix = true;
	uint8_t *buf;
	int pct, rc;

	/* runs against a cluster too (hsm_cluster_test.sh: its flash made
	 * small, its servers with the device model) */
	CU_ASSERT_EQUAL_FATAL(policy(&p, ut_cluster_mode() ?
					 mark_policy_cluster : mark_policy), 0);
	store_new();
	cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	h = hopen(cl, &p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	buf = malloc(256 * HBS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	cluster_shape(cl, &nsrv, &nflash);
	/* objects of 1 MiB (a cluster's: 256 KiB, some seven in each 4 MiB
	 * slice of its 12 MiB flash devices, hsm_cluster_test.sh) */
	ob = ut_cluster_mode() ? 64 : 256;
	high = ut_cluster_mode() ? 28 : 88;
	low = ut_cluster_mode() ? 15 : 50;
	cap = ut_cluster_mode() ? 1024 : 40;
	/* objects on flash until it is past the high mark (85 %, 25 %) by
	 * 3 points, oldest first */
	while ((pct = flash_pct(cl)) >= 0 && pct < high && nobj < cap) {
		struct clovis_obj o;

		memset(buf, 0x40 + (int)(nobj & 0x3f), ob * HBS);
		los[nobj] = id_slot(&next, nobj, nsrv, nflash);
		rc = comp_new(cl, &o, los[nobj], CLOVIS_TIER_FLASH);
		if (rc == 0)
			rc = obj_rw(&o, CLOVIS_OC_WRITE, 0, ob, buf);
		if (rc != 0)
			fprintf(stderr, "\n    object %u, 75:%" PRIx64 " (flash "
				"%d %% used, %u servers, %u flash devices): "
				"%s\n", nobj, los[nobj], pct, nsrv, nflash,
				clovis_errmsg());
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		nobj++;
		usleep(2000); /* distinct write times */
	}
	CU_ASSERT_FATAL(pct >= high);
	round1(h, &st);
	pct = flash_pct(cl);
	fprintf(stderr, "\n    hsm watermark: %u objects of %u KiB (on %u "
		"home%s) filled flash past %d %%; after one round %d %% (low "
		"mark %d %%), %u moved to sas\n", nobj, ob * HBS / 1024, nsrv,
		nsrv > 1 ? "s" : "", high, pct, low, st.hr_done);
	CU_ASSERT(pct <= low && pct >= low - 10);
	CU_ASSERT(st.hr_done > 0 && st.hr_failed == 0);
	/* coldest first: the moved objects are the oldest ones */
	for (uint32_t i = 0; i < nobj; i++) {
		struct clovis_obj o;
		uint64_t per[4];

		CU_ASSERT_EQUAL_FATAL(obj_reopen(cl, &o, los[i]), 0);
		obj_tier_blocks(&o, per);
		if (per[CLOVIS_TIER_SAS] == ob && per[CLOVIS_TIER_FLASH] == 0)
			moved_prefix += in_prefix;
		else
			in_prefix = false;
		if (per[CLOVIS_TIER_SAS] == ob && !in_prefix)
			CU_FAIL("a newer object moved before an older one");
		CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 0, ob, buf), 0);
		CU_ASSERT(buf[0] == 0x40 + (i & 0x3f) &&
			  buf[ob * HBS - 1] == 0x40 + (i & 0x3f));
	}
	CU_ASSERT_EQUAL(moved_prefix, st.hr_done);
	/* below the high mark now: nothing to do */
	round1(h, &st);
	CU_ASSERT_EQUAL(st.hr_picked, 0);
	free(buf);
	hsm_close(h);
	store_done(cl);
}

/* ------------------------------------------------- racing writes */

#define R_BLOCKS 512u

struct racer {
	struct clovis *r_cl;
	uint8_t *r_model;
	volatile int r_stop;
	uint32_t r_writes;
	int r_rc;
};

static void *racer_run(void *arg)
{
	struct racer *r = arg;
	struct clovis_obj o;
	uint8_t *buf = malloc(8 * HBS);
	unsigned seed = 7;

	r->r_rc = buf ? obj_reopen(r->r_cl, &o, 0x300) : -ENOMEM;
	while (r->r_rc == 0 && !r->r_stop && r->r_writes < 100000) {
		uint64_t s = (uint64_t)rand_r(&seed) % (R_BLOCKS - 8);
		uint64_t n = 1 + (uint64_t)rand_r(&seed) % 8;
		int c = 1 + rand_r(&seed) % 250;

		memset(buf, c, n * HBS);
		r->r_rc = obj_rw(&o, CLOVIS_OC_WRITE, s, n, buf);
		if (r->r_rc == 0)
			memset(r->r_model + s * HBS, c, n * HBS);
		r->r_writes++;
	}
	free(buf);
	return NULL;
}

static const char race_policy_sas[] =
	"classes:\n  - { name: any, id: \"75:300\" }\nrules:\n"
	"  - { class: any, action: demote, to: sas }\n";
static const char race_policy_flash[] =
	"classes:\n  - { name: any, id: \"75:300\" }\nrules:\n"
	"  - { class: any, action: promote, to: flash }\n";

static void test_racing_writes(void)
{
	static struct hsm_policy ps, pf;
	struct hsm_round_stats st;
	struct racer r = {0};
	struct clovis_obj o;
	struct clovis *cl;
	struct hsm *hs, *hf;
	uint32_t partial = 0, done = 0, rounds = 0;
	uint8_t *got;
	pthread_t t;

	/* runs against a cluster too (comp_cluster_test.sh) */
	CU_ASSERT_EQUAL_FATAL(policy(&ps, race_policy_sas), 0);
	CU_ASSERT_EQUAL_FATAL(policy(&pf, race_policy_flash), 0);
	store_new();
	cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	r.r_cl = cl;
	r.r_model = calloc(R_BLOCKS, HBS);
	got = malloc(R_BLOCKS * HBS);
	CU_ASSERT_FATAL(r.r_model != NULL && got != NULL);
	memset(r.r_model, 0x11, R_BLOCKS * HBS);
	CU_ASSERT_EQUAL_FATAL(comp_new(cl, &o, 0x300, CLOVIS_TIER_FLASH), 0);
	CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_WRITE, 0, R_BLOCKS,
				     r.r_model), 0);
	hs = hopen(cl, &ps, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, racer_run, &r), 0);
	/* back and forth while the writes go on: 6 rounds, or fewer on a
	 * slow machine (each round ends when its moves end) */
	for (uint64_t t0 = mono_us(); rounds < 6 && mono_us() - t0 < 60000000;
	     rounds++) {
		struct hsm *h = hs;

		if (rounds % 2 == 1) {
			/* the same catalog, another policy */
			hsm_close(hs);
			hf = hopen(cl, &pf, false, stderr);
			CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
			h = hf;
		}
		round1(h, &st);
		partial += st.hr_partial;
		done += st.hr_done;
		CU_ASSERT_EQUAL(st.hr_failed, 0);
		if (rounds % 2 == 1) {
			hsm_close(hf);
			hs = hopen(cl, &ps, false, stderr);
			CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
		}
	}
	r.r_stop = 1;
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(r.r_rc, 0);
	CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 0, R_BLOCKS, got), 0);
	CU_ASSERT(memcmp(got, r.r_model, R_BLOCKS * HBS) == 0);
	fprintf(stderr, "\n    hsm racing writes: %u rounds, %u writes "
		"meanwhile, %u moves done, %u partial (raced), data exact: "
		"%s\n", rounds, r.r_writes, done, partial,
		memcmp(got, r.r_model, R_BLOCKS * HBS) == 0 ? "yes" : "NO");
	CU_ASSERT(r.r_writes > 0 && done + partial >= rounds);
	/* quiet now: a last round to sas completes and the data holds */
	round1(hs, &st);
	CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 0, R_BLOCKS, got), 0);
	CU_ASSERT(memcmp(got, r.r_model, R_BLOCKS * HBS) == 0);
	{
		uint64_t per[4];

		obj_tier_blocks(&o, per);
		CU_ASSERT_EQUAL(per[CLOVIS_TIER_SAS], R_BLOCKS);
	}
	hsm_close(hs);
	free(got);
	free(r.r_model);
	store_done(cl);
}

/* --------------------------------------------------------- dry run */

static const char dry_policy[] =
	"classes:\n  - name: any\nrules:\n"
	"  - { class: any, action: demote, to: sas }\n";

static void test_dry_run(void)
{
	static struct hsm_policy p;
	struct hsm_round_stats st;
	struct clovis_fdmi_sub si[4];
	struct clovis_obj o;
	struct clovis *cl;
	struct hsm *h;
	char *text = NULL;
	size_t tlen = 0;
	uint64_t per[4];
	uint32_t nsub = 4;
	uint8_t *buf = malloc(8 * HBS);
	FILE *mem;

	if (skip("dry_run"))
		return;
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_EQUAL_FATAL(policy(&p, dry_policy), 0);
	store_new();
	cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	mem = open_memstream(&text, &tlen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
	h = hopen(cl, &p, true, mem);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	memset(buf, 0x5a, 8 * HBS);
	for (uint32_t i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(comp_new(cl, &o, 0x400 + i,
					       CLOVIS_TIER_FLASH), 0);
		CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_WRITE, 0, 8, buf),
				      0);
	}
	round1(h, &st);
	CU_ASSERT_EQUAL(st.hr_picked, 3);
	CU_ASSERT_EQUAL(st.hr_done + st.hr_partial + st.hr_failed, 0);
	CU_ASSERT_EQUAL(hsm_actions(h, mem, false), 0);
	fclose(mem);
	CU_ASSERT(text != NULL && strstr(text, "would move 75:400") != NULL &&
		  strstr(text, "from flash to sas") != NULL);
	CU_ASSERT(text != NULL && strstr(text, "action ") == NULL);
	free(text);
	for (uint32_t i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(obj_reopen(cl, &o, 0x400 + i), 0);
		obj_tier_blocks(&o, per);
		CU_ASSERT_EQUAL(per[CLOVIS_TIER_FLASH], 8);
		CU_ASSERT_EQUAL(per[CLOVIS_TIER_SAS], 0);
	}
	/* nothing acked */
	CU_ASSERT_EQUAL(clovis_fdmi_list(cl, si, 4, &nsub), 0);
	CU_ASSERT(nsub == 1 && si[0].fs_lag_records > 0);
	/* a second dry round says the same */
	text = NULL;
	hsm_close(h);
	mem = open_memstream(&text, &tlen);
	h = hopen(cl, &p, true, mem);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	round1(h, &st);
	CU_ASSERT_EQUAL(st.hr_picked, 3);
	fclose(mem);
	free(text);
	hsm_close(h);
	free(buf);
	store_done(cl);
}

/* ---------------------------------------------------- the catalog */

/* A record redelivered (the plugin stopped between its catalog's commit
 * and the ack) is not folded twice: heat counts each read once. */
static void test_catalog_dedup(void)
{
	static struct hsm_policy p;
	static const char text[] =
		"window: 1h\n"
		"classes:\n  - { name: warm, heat_min: 4, tier: sas }\n"
		"rules:\n  - { class: warm, action: promote, to: flash }\n";
	struct hsm_round_stats st;
	struct clovis_obj o;
	struct clovis *cl;
	struct hsm *h;
	uint8_t *buf = malloc(4 * HBS);

	if (skip("catalog_dedup"))
		return;
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_EQUAL_FATAL(policy(&p, text), 0);
	store_new();
	cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	h = hopen(cl, &p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	/* a second consumer that never acks keeps every record in the log */
	CU_ASSERT_EQUAL_FATAL(clovis_fdmi_sub(cl, "keeper", NULL, 0, 0, 0), 0);
	memset(buf, 1, 4 * HBS);
	CU_ASSERT_EQUAL_FATAL(comp_new(cl, &o, 0x500, CLOVIS_TIER_SAS), 0);
	CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_WRITE, 0, 4, buf), 0);
	/* 2 reads: below heat_min 4 */
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 0, 4, buf), 0);
	hsm_close(h);
	clovis_fini(cl);
	cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	/* a dry run reads the records and acks nothing: the real round
	 * then gets them again (as after a crash before the ack) */
	h = hopen(cl, &p, true, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	round1(h, &st);
	CU_ASSERT_EQUAL(st.hr_picked, 0);
	hsm_close(h);
	h = hopen(cl, &p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	round1(h, &st);
	CU_ASSERT(st.hr_records > 0);
	CU_ASSERT_EQUAL(st.hr_picked, 0);
	/* the same records once more (the consumer registered again from
	 * the start, the keeper holding them): not folded again */
	hsm_close(h);
	h = hopen(cl, &p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, HSM_CONSUMER), 0);
	hsm_close(h);
	h = hopen(cl, &p, false, stderr); /* re-registered from the start */
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	round1(h, &st);
	CU_ASSERT_EQUAL(st.hr_picked, 0);
	CU_ASSERT_EQUAL(st.hr_records, 0); /* all folded in before */
	/* 2 more reads: 4 now, promoted */
	CU_ASSERT_EQUAL_FATAL(obj_reopen(cl, &o, 0x500), 0);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 0, 4, buf), 0);
	hsm_close(h);
	clovis_fini(cl);
	cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	h = hopen(cl, &p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	round1(h, &st);
	CU_ASSERT_EQUAL(st.hr_picked, 1);
	CU_ASSERT_EQUAL(st.hr_done, 1);
	hsm_close(h);
	free(buf);
	store_done(cl);
}

/* ------------------------------------------------------ hot extent */

#define X_LO 0x6e0u
#define X_BLOCKS 64u

static const char hot_policy[] =
	"window: 1h\n"
	"classes:\n"
	"  - { name: hot, id: \"75:6e0\", heat_min: 3, tier: sas }\n"
	"rules:\n"
	"  - { class: hot, action: promote, to: flash }\n";

/* Byte i of block b of the hot-extent test's object. */
static uint8_t x_byte(uint64_t b, uint64_t i)
{
	return (uint8_t)(b * 37u + i % 251u + 1u);
}

/* The runs of blocks [0, n) of o from its layer map, as text "START+N
 * TIER, ..." (each layer's tier from its layer list). */
static void map_text(struct clovis_obj *o, uint64_t n, char *buf, size_t sz)
{
	struct clovis_layer_info li[16];
	struct clovis_layer_ext x[64];
	uint32_t nl = 16, nx = 64;
	uint64_t next = 0;
	size_t at = 0;

	buf[0] = '\0';
	CU_ASSERT_EQUAL_FATAL(clovis_obj_layer_list(o, li, &nl), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_layer_map(o, 0, n, x, &nx, &next), 0);
	CU_ASSERT_EQUAL(next, n);
	for (uint32_t i = 0; i < nx && at < sz; i++) {
		const char *t = "?";

		for (uint32_t k = 0; k < nl && k < 16; k++)
			if (li[k].li_layer == x[i].le_layer)
				t = hsm_tier_name(li[k].li_attr.oa_tier);
		at += (size_t)snprintf(buf + at, sz - at, "%s%" PRIu64 "+%"
				       PRIu64 " %s", i ? ", " : "",
				       x[i].le_start, x[i].le_blocks, t);
	}
}

/* What hsm_catalog() of id (catalog) or hsm_actions() prints as JSON, in
 * a heap string (caller frees). */
static char *hsm_text(struct hsm *h, bool catalog, const struct clovis_id *id)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
	CU_ASSERT_EQUAL(catalog ? hsm_catalog(h, id, mem, true) :
				  hsm_actions(h, mem, true), 0);
	fclose(mem);
	return text;
}

/* Whether text holds want (said on stderr when not). */
static bool has(const char *text, const char *want)
{
	bool ok = text != NULL && strstr(text, want) != NULL;

	if (!ok)
		fprintf(stderr, "\n    wanted: %s\n    in: %s\n", want,
			text ? text : "(nothing)");
	return ok;
}

/* The plugin and the store closed and opened again: the reads made so far
 * are recorded (an embedded store at close; a cluster's servers about once
 * a second). */
static void reads_flush(struct clovis **cl, struct hsm **h,
		       const struct hsm_policy *p, struct clovis_obj *o,
		       uint64_t lo)
{
	if (ut_cluster_mode())
		sleep(2);
	hsm_close(*h);
	clovis_fini(*cl);
	*cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(*cl);
	*h = hopen(*cl, p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*h);
	CU_ASSERT_EQUAL_FATAL(obj_reopen(*cl, o, lo), 0);
}

static void test_hot_extent(void)
{
	static struct hsm_policy p;
	const struct clovis_id id = {0x75, X_LO};
	struct hsm_round_stats st;
	struct clovis_obj o;
	struct clovis *cl;
	struct hsm *h;
	uint8_t *model, *got;
	char map[256], *text;

	/* runs against a cluster too (comp_cluster_test.sh) */
	CU_ASSERT_EQUAL_FATAL(policy(&p, hot_policy), 0);
	store_new();
	cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	/* the plugin first: its consumer makes the store record reads */
	h = hopen(cl, &p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	model = malloc(X_BLOCKS * HBS);
	got = malloc(X_BLOCKS * HBS);
	CU_ASSERT_FATAL(model != NULL && got != NULL);
	for (uint64_t b = 0; b < X_BLOCKS; b++)
		for (uint64_t i = 0; i < HBS; i++)
			model[b * HBS + i] = x_byte(b, i);
	CU_ASSERT_EQUAL_FATAL(comp_new(cl, &o, X_LO, CLOVIS_TIER_SAS), 0);
	CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_WRITE, 0, X_BLOCKS, model),
			      0);
	/* only blocks 16..31 read, in two records (16..23, then 24..31):
	 * the hot span is their union */
	for (int k = 0; k < 3; k++)
		CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 16, 8, got), 0);
	reads_flush(&cl, &h, &p, &o, X_LO);
	for (int k = 0; k < 3; k++)
		CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 24, 8, got), 0);
	reads_flush(&cl, &h, &p, &o, X_LO);
	round1(h, &st);
	CU_ASSERT_EQUAL(st.hr_picked, 1);
	CU_ASSERT_EQUAL(st.hr_done, 1);
	CU_ASSERT_EQUAL(st.hr_bytes, 16 * HBS);
	/* the hot span is all on flash now: nothing more to do */
	round1(h, &st);
	CU_ASSERT_EQUAL(st.hr_picked, 0);
	map_text(&o, X_BLOCKS, map, sizeof map);
	fprintf(stderr, "\n    hsm hot extent: blocks 16..31 of 64 read; "
		"after one round: %s\n", map);
	CU_ASSERT(has(map, "0+16 sas, 16+16 flash, 32+32 sas") &&
		  strlen(map) == strlen("0+16 sas, 16+16 flash, 32+32 sas"));
	text = hsm_text(h, true, &id);
	CU_ASSERT(has(text, "\"hot_start\": 16, \"hot_end\": 32, "
		      "\"extents\": [{\"start\": 0, \"blocks\": 16, \"tier\": "
		      "\"sas\"}, {\"start\": 16, \"blocks\": 16, \"tier\": "
		      "\"flash\"}, {\"start\": 32, \"blocks\": 32, \"tier\": "
		      "\"sas\"}]}"));
	CU_ASSERT(has(text, "\"tier\": \"sas\", \"wtime_ns\""));
	free(text);
	text = hsm_text(h, false, NULL);
	CU_ASSERT(has(text, "{\"action\": 1, ") &&
		  has(text, "\"from\": \"sas\", \"to\": \"flash\", \"blocks\": "
		      "16, \"bytes\": 65536, \"state\": \"done\", \"undo_of\": "
		      "0, \"range_start\": 16, \"range_blocks\": 16}"));
	free(text);
	CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 0, X_BLOCKS, got), 0);
	CU_ASSERT(memcmp(got, model, X_BLOCKS * HBS) == 0);
	/* undo: the same blocks back to sas */
	CU_ASSERT_EQUAL(hsm_undo(h, 1), 0);
	map_text(&o, X_BLOCKS, map, sizeof map);
	CU_ASSERT(has(map, "0+64 sas") && strlen(map) == strlen("0+64 sas"));
	text = hsm_text(h, true, &id);
	CU_ASSERT(has(text, "\"extents\": [{\"start\": 0, \"blocks\": 64, "
		      "\"tier\": \"sas\"}]}"));
	free(text);
	text = hsm_text(h, false, NULL);
	CU_ASSERT(has(text, "\"from\": \"flash\", \"to\": \"sas\", \"blocks\": "
		      "16, \"bytes\": 65536, \"state\": \"done\", \"undo_of\": "
		      "1, \"range_start\": 16, \"range_blocks\": 16}"));
	free(text);
	CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 0, X_BLOCKS, got), 0);
	CU_ASSERT(memcmp(got, model, X_BLOCKS * HBS) == 0);
	/* a cluster keeps its objects: this one goes */
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
	free(model);
	free(got);
	hsm_close(h);
	store_done(cl);
}

/* ------------------------------------------------ catalog migration */

/* The catalog schema of the previous version: reads without a span, no
 * ext table, the action log without a range. */
static const char old_schema[] =
	"CREATE TABLE obj(hi INTEGER NOT NULL, lo INTEGER NOT NULL, chi "
	"INTEGER, clo INTEGER, layout INTEGER, size INTEGER, wtime INTEGER, "
	"rtime INTEGER, tier INTEGER DEFAULT -1, noted INTEGER DEFAULT 0, "
	"PRIMARY KEY(hi, lo));"
	"CREATE TABLE reads(hi INTEGER, lo INTEGER, t INTEGER, n INTEGER);"
	"CREATE INDEX reads_obj ON reads(hi, lo, t);"
	"CREATE TABLE cursor(server TEXT PRIMARY KEY, seq INTEGER);"
	"CREATE TABLE action(seq INTEGER PRIMARY KEY AUTOINCREMENT, t INTEGER,"
	" hi INTEGER, lo INTEGER, chi INTEGER, clo INTEGER, why TEXT, "
	"from_tier INTEGER, to_tier INTEGER, blocks INTEGER, bytes INTEGER, "
	"state TEXT, undo_of INTEGER, msg TEXT);";

/* Whether table of the catalog db has column col. */
static bool db_col(sqlite3 *db, const char *table, const char *col)
{
	char sql[96];
	sqlite3_stmt *st;
	bool found = false;

	snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return false;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(st, 1);

		found = found || (n != NULL && strcmp(n, col) == 0);
	}
	sqlite3_finalize(st);
	return found;
}

static void test_catalog_migrate(void)
{
	static struct hsm_policy p;
	static const char text_pol[] =
		"window: 1h\n"
		"classes:\n  - { name: warm, id: \"75:6f0\", heat_min: 3, "
		"tier: sas }\n"
		"rules:\n  - { class: warm, action: promote, to: flash }\n";
	const struct clovis_id id = {0x75, 0x6f0};
	struct hsm_round_stats st;
	struct timespec ts;
	struct clovis_obj o;
	struct clovis *cl;
	struct hsm *h;
	sqlite3 *db = NULL;
	uint64_t per[4], now;
	uint8_t *buf = malloc(8 * HBS);
	char sql[512], *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_EQUAL_FATAL(policy(&p, text_pol), 0);
	store_new();
	cl = sopen();
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	memset(buf, 0x6f, 8 * HBS);
	CU_ASSERT_EQUAL_FATAL(comp_new(cl, &o, 0x6f0, CLOVIS_TIER_SAS), 0);
	CU_ASSERT_EQUAL_FATAL(obj_rw(&o, CLOVIS_OC_WRITE, 0, 8, buf), 0);
	/* the old catalog: the object, 5 reads of it (no span), an action */
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	snprintf(sql, sizeof sql, "INSERT INTO obj VALUES(117, 1776, 0, 1, %d,"
		 " %u, %" PRIu64 ", %" PRIu64 ", 2, 0); INSERT INTO reads "
		 "VALUES(117, 1776, %" PRIu64 ", 5); INSERT INTO action(t, hi, "
		 "lo, chi, clo, why, from_tier, to_tier, blocks, bytes, state, "
		 "undo_of, msg) VALUES(%" PRIu64 ", 117, 1777, 0, 1, 'rule 1', "
		 "1, 2, 4, 16384, 'done', 0, '');", CLOVIS_LAYOUT_COMPOSITE,
		 8 * HBS, now, now, now, now);
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(hdb, &db), SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(sqlite3_exec(db, old_schema, NULL, NULL, NULL),
			      SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(sqlite3_exec(db, sql, NULL, NULL, NULL),
			      SQLITE_OK);
	CU_ASSERT(db_col(db, "reads", "n") && !db_col(db, "reads", "start"));
	sqlite3_close(db);
	/* opened: migrated; 2 reads of blocks 2..3 recorded with their span */
	h = hopen(cl, &p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	for (int k = 0; k < 2; k++)
		CU_ASSERT_EQUAL(obj_rw(&o, CLOVIS_OC_READ, 2, 2, buf), 0);
	reads_flush(&cl, &h, &p, &o, 0x6f0);
	round1(h, &st);
	/* an old row's span is unknown: the whole object is promoted */
	CU_ASSERT_EQUAL(st.hr_picked, 1);
	CU_ASSERT_EQUAL(st.hr_done, 1);
	CU_ASSERT_EQUAL(st.hr_bytes, 8 * HBS);
	obj_tier_blocks(&o, per);
	CU_ASSERT(per[CLOVIS_TIER_FLASH] == 8 && per[CLOVIS_TIER_SAS] == 0);
	text = hsm_text(h, false, NULL);
	CU_ASSERT(has(text, "{\"action\": 1, ") &&
		  has(text, "\"range_start\": null, \"range_blocks\": null}\n"
		      "{\"action\": 2, ") &&
		  has(text, "\"from\": \"sas\", \"to\": \"flash\", \"blocks\": "
		      "8, \"bytes\": 32768, \"state\": \"done\", \"undo_of\": "
		      "0, \"range_start\": null, \"range_blocks\": null}"));
	free(text);
	text = hsm_text(h, true, &id);
	CU_ASSERT(has(text, "\"heat\": 7, \"hot_start\": 2, \"hot_end\": 4, "
		      "\"extents\": [{\"start\": 0, \"blocks\": 8, \"tier\": "
		      "\"flash\"}]}"));
	free(text);
	hsm_close(h);
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(hdb, &db), SQLITE_OK);
	CU_ASSERT(db_col(db, "reads", "start") &&
		  db_col(db, "reads", "blocks"));
	CU_ASSERT(db_col(db, "action", "range_start") &&
		  db_col(db, "action", "range_blocks"));
	CU_ASSERT(db_col(db, "ext", "tier"));
	sqlite3_close(db);
	/* opened again (nothing left to migrate): nothing to do */
	h = hopen(cl, &p, false, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	round1(h, &st);
	CU_ASSERT_EQUAL(st.hr_picked, 0);
	CU_ASSERT_EQUAL(ent_sync(&o.ob_entity, CLOVIS_EO_DELETE), 0);
	hsm_close(h);
	free(buf);
	store_done(cl);
}

static int hsm_suite_init(void)
{
	const char *d = ut_tmpdir("hsm");

	if (d == NULL)
		return -1;
	snprintf(hbase, sizeof hbase, "%s", d);
	return 0;
}

static int hsm_suite_fini(void)
{
	return 0;
}

int hsm_ut_add(void)
{
	CU_pSuite s = CU_add_suite("hsm", hsm_suite_init, hsm_suite_fini);

	if (s == NULL || !CU_add_test(s, "promote", test_promote) ||
	    !CU_add_test(s, "watermark", test_watermark) ||
	    !CU_add_test(s, "racing_writes", test_racing_writes) ||
	    !CU_add_test(s, "dry_run", test_dry_run) ||
	    !CU_add_test(s, "catalog_dedup", test_catalog_dedup) ||
	    !CU_add_test(s, "hot_extent", test_hot_extent) ||
	    !CU_add_test(s, "catalog_migrate", test_catalog_migrate))
		return -1;
	return 0;
}
