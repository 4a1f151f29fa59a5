/*
 * repair_crash.c — the program behind repair_crash.sh: crash tests of
 * device repair (a repair killed at any moment resumes and finishes, and no
 * byte is lost) and of the SMR cleaner (a cleaner killed at any moment
 * loses no acknowledged byte).
 *
 *   repair_crash rinit DIR SEED       store on 6 sas devices with pdclust
 *                                     and mirror objects whose content is
 *                                     a function of SEED; one device failed
 *   repair_crash repair DIR [model]   run clovis_repair() to the end (with
 *                                     "model": the device model on); prints
 *                                     "repairing" first, "batch DONE" at
 *                                     each progress call (between batches
 *                                     of the walk), then a stats line
 *   repair_crash rcheck DIR SEED      every byte as SEED says, the failed
 *                                     device REPAIRED, no read needing
 *                                     reconstruction, scrub finding nothing
 *   repair_crash sinit DIR ACK        store with two plain objects on an
 *                                     SMR device of 1 MiB zones
 *   repair_crash swrite DIR ACK ROUND overwrite ranges and run the cleaner
 *                                     (device model on) until killed or
 *                                     15 s pass; prints "cleaning" at the
 *                                     first clean
 *   repair_crash scheck DIR ACK       every acknowledged block there, the
 *                                     write in flight all there or not at
 *                                     all; then clean and check again
 *
 * ACK holds one line per event, each made durable (fdatasync) before the
 * writer goes on: "I gen obj start nr" before a write is launched, "A gen"
 * once it is STABLE; scheck adds "R gen 1" or "R gen 0" for the write it
 * found in flight (present or absent).  Every block holds a header (magic,
 * object, block, gen) and filler derived from it, so a block read back
 * either is exactly the one written for some gen or is damaged.
 * Exit status 0 when all is well; otherwise a message on stderr and 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"

#define RC_MAGIC 0x5243524153484b31ull /* block header */
#define RC_ID_HI 0x7e9a1ull
#define RC_DEV_SIZE (32ull << 20)
#define SM_DEV_SIZE (16ull << 20)
#define RC_OBJS 4u
#define SM_OBJS 2u
#define SM_BS 16u      /* 64 KiB blocks */
#define SM_BLOCKS 32u  /* 2 MiB per object */
#define SM_RUN_S 15
#define RC_STEPS 6u    /* writes per repair object after the first */

static const char rc_conf_text[] =
	"# repair_crash: one flash device (default layout), six sas devices\n"
	"devices:\n"
	"  - { tier: flash }\n"
	"  - { tier: sas }\n  - { tier: sas }\n  - { tier: sas }\n"
	"  - { tier: sas }\n  - { tier: sas }\n  - { tier: sas }\n";

static const char sm_conf_text[] =
	"# repair_crash: one flash device, one SMR device in 1 MiB zones\n"
	"devices:\n"
	"  - { tier: flash }\n"
	"  - { tier: smr, zone_size: 1MiB }\n";

/** The objects of the repair store: layout over pool "sas". */
static const struct rc_shape {
	uint32_t rs_layout, rs_n, rs_k, rs_s;
	uint64_t rs_blocks; /* 4 KiB blocks, 16 KiB units */
} rc_shapes[RC_OBJS] = {
	{CLOVIS_LAYOUT_PDCLUST, 3, 1, 1, 896},
	{CLOVIS_LAYOUT_PDCLUST, 3, 1, 1, 720},
	{CLOVIS_LAYOUT_PDCLUST, 2, 2, 1, 640},
	{CLOVIS_LAYOUT_MIRROR, 2, 0, 1, 448},
};

static struct clovis *cl;
static char conf_path[600];

/* ------------------------------------------------------------ common */

static void die(const char *what, int rc)
{
	fprintf(stderr, "repair_crash: %s: %d %s (%s)\n", what, rc,
		clovis_strerror(rc), clovis_errmsg());
	exit(1);
}

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The content of block blk of object o for gen (len bytes). */
static void block_fill(uint8_t *p, size_t len, uint32_t o, uint64_t blk,
		       uint64_t gen)
{
	uint64_t h[4] = {RC_MAGIC, o, blk, gen};
	uint64_t s = gen * 0x100000001b3ull ^ blk << 20 ^ o, w;

	for (size_t i = sizeof h; i < len; i += sizeof w) {
		w = mix(&s);
		memcpy(p + i, &w, sizeof w);
	}
	memcpy(p, h, sizeof h);
}

/* The gen a block read back holds, or UINT64_MAX if it is damaged. */
static uint64_t block_gen(const uint8_t *p, size_t len, uint32_t o,
			  uint64_t blk, uint8_t *tmp)
{
	uint64_t h[4];

	memcpy(h, p, sizeof h);
	if (h[0] != RC_MAGIC || h[1] != o || h[2] != blk)
		return UINT64_MAX;
	block_fill(tmp, len, o, blk, h[3]);
	return memcmp(tmp, p, len) == 0 ? h[3] : UINT64_MAX;
}

/* Write the configuration text beside the store (dir + ".yaml"). */
static void conf_write(const char *dir, const char *text)
{
	FILE *f;

	snprintf(conf_path, sizeof conf_path, "%s.yaml", dir);
	f = fopen(conf_path, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		die(conf_path, -errno);
}

static void store_open(const char *dir, uint64_t size, uint32_t flags)
{
	struct clovis_conf c = {.cc_data_dir = dir, .cc_flags = flags,
				.cc_dev_size = size, .cc_nvram_dir = dir,
				.cc_config = conf_path};
	int rc = clovis_init(&cl, &c);

	if (rc != 0)
		die("clovis_init", rc);
}

static int ent_sync(struct clovis_entity *e, enum clovis_entity_opcode oc)
{
	struct clovis_op *op = NULL;
	int rc = clovis_entity_op(e, oc, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* Create (attr non-NULL) or open object o. */
static void obj_get(struct clovis_obj *ob, uint32_t o,
		    const struct clovis_obj_attr *attr)
{
	struct clovis_id id = {RC_ID_HI, 1 + o};
	int rc = clovis_obj_init(ob, clovis_default_realm(cl), &id, attr);

	if (rc == 0)
		rc = ent_sync(&ob->ob_entity, attr ? CLOVIS_EO_CREATE
						   : CLOVIS_EO_OPEN);
	if (rc != 0)
		die(attr ? "create" : "open", rc);
}

/* One-extent READ or WRITE through one buffer, to STABLE. */
static int obj_io(struct clovis_obj *ob, enum clovis_obj_opcode oc,
		  uint64_t s, uint64_t n, void *buf)
{
	size_t len = (size_t)n << ob->ob_attr.oa_block_shift;
	struct clovis_extvec ev = {1, &s, &n};
	struct clovis_bufvec bv = {1, &buf, &len};
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(ob, oc, &ev, &bv, 0, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* Write blocks [s, s + n) of object o with their content for gen. */
static int obj_write_gen(struct clovis_obj *ob, uint32_t o, uint64_t s,
			 uint64_t n, uint64_t gen)
{
	uint32_t bs = ob->ob_attr.oa_block_shift;
	uint8_t *buf = malloc((size_t)n << bs);
	int rc;

	if (buf == NULL)
		die("malloc", -ENOMEM);
	for (uint64_t b = 0; b < n; b++)
		block_fill(buf + (b << bs), (size_t)1 << bs, o, s + b, gen);
	rc = obj_io(ob, CLOVIS_OC_WRITE, s, n, buf);
	free(buf);
	return rc;
}

/* The index of pool name and its devices. */
static uint32_t pool_get(const char *name, uint32_t *devs, uint32_t *nr)
{
	static struct clovis_pool_info pi[8];
	uint32_t n = 8;

	if (clovis_pool_list(cl, pi, &n) != 0)
		die("pool_list", -EINVAL);
	for (uint32_t i = 0; i < n && i < 8; i++)
		if (strcmp(pi[i].pi_name, name) == 0) {
			*nr = pi[i].pi_nr_devs;
			memcpy(devs, pi[i].pi_devs, *nr * sizeof *devs);
			return pi[i].pi_index;
		}
	die(name, -ENOENT);
	return 0;
}

/* ------------------------------------------------------------ repair */

/* Extent of write step (1..RC_STEPS) of object o for seed; step 0 is the
 * whole object. */
static void rc_step(uint64_t seed, uint32_t o, uint32_t step, uint64_t *s,
		    uint64_t *n)
{
	uint64_t st = seed * 131 + o * 7 + step, nb = rc_shapes[o].rs_blocks;

	if (step == 0) {
		*s = 0, *n = nb;
		return;
	}
	*n = 1 + mix(&st) % (nb / 4);
	*s = mix(&st) % (nb - *n + 1);
}

/* The gen (1 + step) block blk of object o holds after every step. */
static uint64_t rc_expect(uint64_t seed, uint32_t o, uint64_t blk)
{
	uint64_t gen = 1;

	for (uint32_t step = 1; step <= RC_STEPS; step++) {
		uint64_t s, n;

		rc_step(seed, o, step, &s, &n);
		if (blk >= s && blk < s + n)
			gen = 1 + step;
	}
	return gen;
}

static int rc_init(const char *dir, uint64_t seed)
{
	uint32_t devs[256], nd, pool;

	conf_write(dir, rc_conf_text);
	store_open(dir, RC_DEV_SIZE, CLOVIS_CONF_CREATE);
	pool = pool_get("sas", devs, &nd);
	for (uint32_t o = 0; o < RC_OBJS; o++) {
		const struct rc_shape *sh = &rc_shapes[o];
		struct clovis_obj_attr a = {
			.oa_block_shift = 12, .oa_layout = sh->rs_layout,
			.oa_pool = pool, .oa_data_units = sh->rs_n,
			.oa_parity_units = sh->rs_k,
			.oa_spare_units = sh->rs_s, .oa_unit_shift = 14};
		struct clovis_obj ob;

		obj_get(&ob, o, &a);
		for (uint32_t step = 0; step <= RC_STEPS; step++) {
			uint64_t s, n;
			int rc;

			rc_step(seed, o, step, &s, &n);
			rc = obj_write_gen(&ob, o, s, n, 1 + step);
			if (rc != 0)
				die("write", rc);
		}
	}
	if (clovis_dev_fail(cl, devs[seed % nd]) != 0)
		die("dev_fail", -EINVAL);
	printf("rinit: seed %" PRIu64 ", device %u failed\n", seed,
	       devs[seed % nd]);
	clovis_fini(cl);
	return 0;
}

/* Progress of the repair: one line "batch DONE" per call, at once, so the
 * script can kill the process between batches of the walk. */
static int rc_progress(void *arg, uint64_t done, uint64_t total)
{
	(void)arg;
	(void)total;
	printf("batch %" PRIu64 "\n", done);
	fflush(stdout);
	return 0;
}

static int rc_repair(const char *dir, bool model)
{
	struct clovis_walk_stats ws;
	int rc;

	conf_write(dir, rc_conf_text);
	store_open(dir, RC_DEV_SIZE, model ? CLOVIS_CONF_DEVICE_MODEL : 0);
	printf("repairing\n");
	fflush(stdout);
	rc = clovis_repair(cl, rc_progress, NULL, &ws);
	printf("repair rc %d resumed %u rebuilt %" PRIu64 " units %" PRIu64
	       " unrepairable %" PRIu64 " devices %u ms %" PRIu64 "\n", rc,
	       ws.ws_resumed, ws.ws_rebuilt, ws.ws_units, ws.ws_unrepairable,
	       ws.ws_devices, ws.ws_elapsed_ns / 1000000);
	if (rc != 0)
		die("repair", rc);
	clovis_fini(cl);
	return 0;
}

/* Check every block of object o; returns the number of bad blocks. */
static uint64_t rc_check_obj(uint64_t seed, uint32_t o)
{
	uint64_t nb = rc_shapes[o].rs_blocks, bad = 0;
	uint8_t *buf = malloc(nb << 12), tmp[4096];
	struct clovis_obj ob;
	int rc;

	if (buf == NULL)
		die("malloc", -ENOMEM);
	obj_get(&ob, o, NULL);
	rc = obj_io(&ob, CLOVIS_OC_READ, 0, nb, buf);
	if (rc != 0)
		die("read", rc);
	for (uint64_t b = 0; b < nb; b++) {
		uint64_t want = rc_expect(seed, o, b);
		uint64_t got = block_gen(buf + (b << 12), 4096, o, b, tmp);

		if (got != want && bad++ < 5)
			fprintf(stderr, "rcheck: object %u block %" PRIu64
				": gen %" PRIu64 ", want %" PRIu64 "\n", o, b,
				got, want);
	}
	free(buf);
	return bad;
}

static int rc_check(const char *dir, uint64_t seed)
{
	struct clovis_unit_counters uc;
	struct clovis_walk_stats ws;
	struct clovis_dev_info di[16];
	uint32_t n = 16, repaired = 0, failed = 0;
	uint64_t bad = 0;
	int rc;

	conf_write(dir, rc_conf_text);
	store_open(dir, RC_DEV_SIZE, 0);
	for (uint32_t o = 0; o < RC_OBJS; o++)
		bad += rc_check_obj(seed, o);
	if (clovis_unit_counters_get(cl, &uc) != 0 || clovis_dev_list(cl, di, &n))
		die("counters", -EINVAL);
	for (uint32_t i = 0; i < n && i < 16; i++) {
		repaired += di[i].di_state == CLOVIS_DEV_REPAIRED;
		failed += di[i].di_state == CLOVIS_DEV_FAILED;
	}
	rc = clovis_scrub(cl, NULL, NULL, &ws);
	printf("rcheck: %" PRIu64 " bad blocks, %" PRIu64 " degraded reads, "
	       "%u repaired and %u failed devices, scrub rc %d corrupt %"
	       PRIu64 "\n", bad, uc.uc_degraded_reads, repaired, failed, rc,
	       ws.ws_corrupt);
	clovis_fini(cl);
	return bad == 0 && uc.uc_degraded_reads == 0 && uc.uc_crc_errors == 0 &&
	       repaired == 1 && failed == 0 && rc == 0 && ws.ws_corrupt == 0 ?
	       0 : 1;
}

/* ------------------------------------------------------------ SMR */

/** A write found in the ack log. */
struct sm_write {
	uint64_t sw_gen;
	uint32_t sw_obj;
	uint64_t sw_s, sw_n;
};

static uint32_t sm_dev(void)
{
	struct clovis_dev_info di[4];
	uint32_t n = 4;

	if (clovis_dev_list(cl, di, &n) != 0)
		die("dev_list", -EINVAL);
	for (uint32_t i = 0; i < n && i < 4; i++)
		if (di[i].di_tier == CLOVIS_TIER_SMR)
			return i;
	die("no SMR device", -ENOENT);
	return 0;
}

static uint32_t sm_zones_empty(uint32_t dev)
{
	struct clovis_dev_info di[4];
	uint32_t n = 4;

	if (clovis_dev_list(cl, di, &n) != 0)
		die("dev_list", -EINVAL);
	return di[dev].di_zones_empty;
}

/* Append one line to the ack log and make it durable. */
static void ack_put(int fd, const char *line)
{
	size_t len = strlen(line);

	if (write(fd, line, len) != (ssize_t)len || fdatasync(fd) != 0)
		die("ack log", -errno);
}

static int ack_open(const char *ack)
{
	int fd = open(ack, O_WRONLY | O_APPEND | O_CREAT, 0644);

	if (fd < 0)
		die(ack, -errno);
	return fd;
}

/* Write [s, s + n) of object o with gen, logged before and after. */
static void sm_write(int fd, struct clovis_obj *ob, uint32_t o, uint64_t s,
		     uint64_t n, uint64_t gen)
{
	char line[96];
	int rc;

	snprintf(line, sizeof line, "I %" PRIu64 " %u %" PRIu64 " %" PRIu64
		 "\n", gen, o, s, n);
	ack_put(fd, line);
	rc = obj_write_gen(ob, o, s, n, gen);
	if (rc != 0)
		die("smr write", rc);
	snprintf(line, sizeof line, "A %" PRIu64 "\n", gen);
	ack_put(fd, line);
}

static void sm_objs(struct clovis_obj *ob, bool create)
{
	struct clovis_obj_attr a = {.oa_block_shift = SM_BS,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN,
				    .oa_tier = CLOVIS_TIER_SMR};

	for (uint32_t o = 0; o < SM_OBJS; o++)
		obj_get(&ob[o], o, create ? &a : NULL);
}

static int sm_init(const char *dir, const char *ack)
{
	struct clovis_obj ob[SM_OBJS];
	int fd;

	conf_write(dir, sm_conf_text);
	store_open(dir, SM_DEV_SIZE, CLOVIS_CONF_CREATE);
	sm_objs(ob, true);
	fd = ack_open(ack);
	for (uint32_t o = 0; o < SM_OBJS; o++)
		sm_write(fd, &ob[o], o, 0, SM_BLOCKS, 1 + o);
	close(fd);
	clovis_fini(cl);
	return 0;
}

/* Run the cleaner; say "cleaning" the first time. */
static void sm_clean(uint32_t dev, uint32_t pct)
{
	static bool said;
	struct clovis_clean_stats cs;
	int rc;

	if (!said) {
		printf("cleaning\n");
		fflush(stdout);
		said = true;
	}
	rc = clovis_smr_clean(cl, dev, pct, &cs);
	if (rc != 0)
		die("smr_clean", rc);
}

static int sm_run(const char *dir, const char *ack, uint64_t round)
{
	struct clovis_obj ob[SM_OBJS];
	time_t end = time(NULL) + SM_RUN_S;
	uint64_t st = round * 977, i;
	uint32_t dev;
	int fd;

	conf_write(dir, sm_conf_text);
	store_open(dir, SM_DEV_SIZE, CLOVIS_CONF_DEVICE_MODEL);
	sm_objs(ob, false);
	dev = sm_dev();
	fd = ack_open(ack);
	for (i = 1; time(NULL) < end; i++) {
		uint32_t o = (uint32_t)(i % SM_OBJS);
		uint64_t s = mix(&st) % SM_BLOCKS, most = SM_BLOCKS - s;
		uint64_t n = 1 + mix(&st) % (most < 8 ? most : 8);

		/* Leave the cleaner room (see smr_ut bug_cleaner_wedged). */
		if (sm_zones_empty(dev) < 4)
			sm_clean(dev, 100);
		sm_write(fd, &ob[o], o, s, n, round << 20 | i);
		if (i % 4 == 0)
			sm_clean(dev, i % 8 ? 60 : 100);
	}
	close(fd);
	clovis_fini(cl);
	printf("swrite: round %" PRIu64 ": %" PRIu64 " writes\n", round, i - 1);
	return 0;
}

/* Read the ack log: the expected gen of every block, the write in flight
 * (at most one, sw_gen 0 if none). */
static void sm_log(const char *ack, uint64_t exp[SM_OBJS][SM_BLOCKS],
		   struct sm_write *pend)
{
	FILE *f = fopen(ack, "r");
	char line[128];

	if (f == NULL)
		die(ack, -errno);
	memset(pend, 0, sizeof *pend);
	while (fgets(line, sizeof line, f) != NULL) {
		struct sm_write w = {0};
		uint64_t gen;
		int yes;

		if (sscanf(line, "I %" SCNu64 " %u %" SCNu64 " %" SCNu64,
			   &w.sw_gen, &w.sw_obj, &w.sw_s, &w.sw_n) == 4) {
			if (pend->sw_gen != 0 || w.sw_obj >= SM_OBJS ||
			    w.sw_s + w.sw_n > SM_BLOCKS)
				die("ack log: two writes in flight or bad line", -EINVAL);
			*pend = w;
			continue;
		}
		if (sscanf(line, "A %" SCNu64, &gen) == 1)
			yes = 1;
		else if (sscanf(line, "R %" SCNu64 " %d", &gen, &yes) != 2)
			die("ack log: bad line", -EINVAL);
		if (gen != pend->sw_gen)
			die("ack log: ack of a write not in flight", -EINVAL);
		for (uint64_t b = 0; yes && b < pend->sw_n; b++)
			exp[pend->sw_obj][pend->sw_s + b] = gen;
		memset(pend, 0, sizeof *pend);
	}
	fclose(f);
}

/* Read every block: gens into got (UINT64_MAX: damaged). */
static void sm_read(struct clovis_obj *ob, uint64_t got[SM_OBJS][SM_BLOCKS])
{
	size_t bsz = (size_t)1 << SM_BS;
	uint8_t *buf = malloc(SM_BLOCKS * bsz), *tmp = malloc(bsz);

	if (buf == NULL || tmp == NULL)
		die("malloc", -ENOMEM);
	for (uint32_t o = 0; o < SM_OBJS; o++) {
		int rc = obj_io(&ob[o], CLOVIS_OC_READ, 0, SM_BLOCKS, buf);

		if (rc != 0)
			die("smr read", rc);
		for (uint64_t b = 0; b < SM_BLOCKS; b++)
			got[o][b] = block_gen(buf + b * bsz, bsz, o, b, tmp);
	}
	free(buf);
	free(tmp);
}

/* Compare; the blocks of the write in flight may all hold its gen.
 * Returns bad blocks; *applied says whether the write in flight is there. */
static uint64_t sm_compare(uint64_t exp[SM_OBJS][SM_BLOCKS],
			   uint64_t got[SM_OBJS][SM_BLOCKS],
			   const struct sm_write *pend, bool *applied)
{
	uint64_t bad = 0, newer = 0;

	for (uint32_t o = 0; o < SM_OBJS; o++)
		for (uint64_t b = 0; b < SM_BLOCKS; b++) {
			bool in = pend->sw_gen != 0 && o == pend->sw_obj &&
				  b >= pend->sw_s && b < pend->sw_s + pend->sw_n;

			if (got[o][b] == exp[o][b])
				continue;
			if (in && got[o][b] == pend->sw_gen) {
				newer++;
				continue;
			}
			if (bad++ < 5)
				fprintf(stderr, "scheck: object %u block %" PRIu64
					": gen %" PRIu64 ", want %" PRIu64 "\n",
					o, b, got[o][b], exp[o][b]);
		}
	*applied = newer > 0;
	if (newer != 0 && newer != pend->sw_n) {
		fprintf(stderr, "scheck: write %" PRIu64 " torn: %" PRIu64
			" of %" PRIu64 " blocks\n", pend->sw_gen, newer,
			pend->sw_n);
		bad++;
	}
	return bad;
}

static int sm_check(const char *dir, const char *ack)
{
	static uint64_t exp[SM_OBJS][SM_BLOCKS], got[SM_OBJS][SM_BLOCKS];
	struct clovis_obj ob[SM_OBJS];
	struct clovis_clean_stats cs;
	struct sm_write pend;
	bool applied = false;
	const char *inflight;
	uint64_t bad;
	char line[64];
	int rc, fd;

	conf_write(dir, sm_conf_text);
	store_open(dir, SM_DEV_SIZE, 0);
	sm_objs(ob, false);
	sm_log(ack, exp, &pend);
	sm_read(ob, got);
	bad = sm_compare(exp, got, &pend, &applied);
	if (pend.sw_gen != 0) {
		snprintf(line, sizeof line, "R %" PRIu64 " %d\n", pend.sw_gen,
			 applied);
		fd = ack_open(ack);
		ack_put(fd, line);
		close(fd);
		for (uint64_t b = 0; applied && b < pend.sw_n; b++)
			exp[pend.sw_obj][pend.sw_s + b] = pend.sw_gen;
	}
	inflight = pend.sw_gen == 0 ? "none" : applied ? "present" : "absent";
	rc = clovis_smr_clean(cl, sm_dev(), 100, &cs);
	if (rc != 0)
		fprintf(stderr, "scheck: clean: %d %s\n", rc, clovis_errmsg());
	memset(&pend, 0, sizeof pend);
	sm_read(ob, got);
	bad += sm_compare(exp, got, &pend, &applied);
	printf("scheck: %" PRIu64 " bad blocks; write in flight: %s; clean rc %d,"
	       " %u zones reset\n", bad, inflight, rc, cs.cs_zones_reset);
	clovis_fini(cl);
	return bad == 0 && rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 2 ? argv[1] : "";

	if (argc == 4 && strcmp(cmd, "rinit") == 0)
		return rc_init(argv[2], strtoull(argv[3], NULL, 10));
	if ((argc == 3 || argc == 4) && strcmp(cmd, "repair") == 0)
		return rc_repair(argv[2], argc == 4 &&
				 strcmp(argv[3], "model") == 0);
	if (argc == 4 && strcmp(cmd, "rcheck") == 0)
		return rc_check(argv[2], strtoull(argv[3], NULL, 10));
	if (argc == 4 && strcmp(cmd, "sinit") == 0)
		return sm_init(argv[2], argv[3]);
	if (argc == 5 && strcmp(cmd, "swrite") == 0)
		return sm_run(argv[2], argv[3], strtoull(argv[4], NULL, 10));
	if (argc == 4 && strcmp(cmd, "scheck") == 0)
		return sm_check(argv[2], argv[3]);
	fprintf(stderr, "usage: repair_crash rinit DIR SEED | repair DIR [model]"
		" | rcheck DIR SEED\n       repair_crash sinit DIR ACK | swrite "
		"DIR ACK ROUND | scheck DIR ACK\n");
	return 2;
}
