/*
 * bench_tier.c — latency and bandwidth of each tier, device model off and
 * on, beside raw pwrite/pread of the same sizes.
 *
 * For each tier (nvram, flash, sas, smr) two plain objects (oa_tier) with
 * a 16 MiB region written once: 4 KiB blocks and 1 MiB blocks.  One op at
 * a time:
 *
 *   tier_T_4k_{write,read}_{lat,bw}   4 KiB random blocks of the region
 *   tier_T_1m_{write,read}_{lat,bw}   1 MiB blocks in order
 *
 * lat: median launch-to-STABLE time in us (lower is better, so a ratio
 * above 1 is slower than raw); bw: MB/s (10^6 bytes) of the same run.
 * Raw: one thread, pwrite + fdatasync / pread of the same size and pattern
 * on a 16 MiB written file, measured right after ours: on the build disk
 * with O_DIRECT for flash, sas and smr, and on /dev/shm (tmpfs, page cache,
 * no O_DIRECT) for nvram.
 *
 * Then the store is reopened with CLOVIS_CONF_DEVICE_MODEL (class figures
 * of tiers/README.md, from tier_model_default()) and the same figures are
 * taken again with a suffix _model, over at most BT_MODEL_OPS ops each
 * (sas and smr take milliseconds per op); raw stays unmodelled.  The
 * emulation column gives the model's floor for one op: latency plus
 * transfer at the class bandwidth (plus the sync latency for writes).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/bench/bench.h"
#include "tiers/tier.h"

#define BT_REGION (16ull << 20)      /* bytes of each object and raw file */
#define BT_MODEL_OPS 40u             /* ops per figure with the model on */
#define BT_SMR_4K_OPS 8192u          /* SMR space: 32 MiB of 4 KiB appends */
#define BT_SMR_1M_OPS 96u            /* and 96 MiB of 1 MiB appends */
#define BT_ID_BASE 300u

enum bt_op { BT_4K_W, BT_4K_R, BT_1M_W, BT_1M_R, BT_NR };

static const char *const bt_tier_names[CLOVIS_TIER_NR] = {
	"nvram", "flash", "sas", "smr"};
static const char *const bt_emu[CLOVIS_TIER_NR] = {
	"nvram: /dev/shm (tmpfs) via PMDK",
	"flash: file on ext4, O_DIRECT",
	"sas: file on ext4, O_DIRECT",
	"smr: zones emulated on a file (ext4, O_DIRECT)"};
static const char *const bt_op_names[BT_NR] = {
	"4k_write", "4k_read", "1m_write", "1m_read"};

/* One measurement: median latency and bandwidth. */
struct bt_res {
	double r_lat_us;
	double r_mbps;
};

static struct clovis_obj bt_obj[CLOVIS_TIER_NR][2]; /* [tier][4k, 1m] */
static double bt_lat[BN_LAT_MAX];

static size_t bt_len(enum bt_op op)
{
	return op == BT_4K_W || op == BT_4K_R ? 4096 : 1u << 20;
}

static bool bt_write(enum bt_op op)
{
	return op == BT_4K_W || op == BT_1M_W;
}

/* Ours: op on the tier's object, one at a time, secs or ops_max ops. */
static void bt_ours(uint32_t tier, enum bt_op op, double secs,
		    uint64_t ops_max, struct bt_res *res)
{
	static int (*const make[BT_NR])(struct bn_job *, struct bn_slot *) = {
		bn_make_rand_write, bn_make_rand_read, bn_make_seq_write,
		bn_make_seq_read};
	static struct bn_job j;
	struct clovis_obj *o = &bt_obj[tier][op >= BT_1M_W];
	double rate;

	memset(&j, 0, sizeof j);
	j = (struct bn_job){.j_make = make[op], .j_qd = 1, .j_obj = o,
			    .j_blks = BT_REGION / bt_len(op),
			    .j_ops_max = ops_max, .j_lat = bt_lat,
			    .j_rand = 0x2545f4914f6cdd1dull};
	rate = bn_run_for(&j, secs);
	res->r_lat_us = bn_median(bt_lat, j.j_lat_nr);
	res->r_mbps = rate * (double)bt_len(op) / 1e6;
	bn_job_fini(&j);
}

/* Raw: the same op on fd from one thread for secs. */
static void bt_raw(int fd, enum bt_op op, double secs, struct bt_res *res)
{
	static int (*const fn[BT_NR])(struct bn_raw *, uint64_t *, uint64_t,
				      void *) = {
		bn_raw_rand_write, bn_raw_rand_read, bn_raw_seq_write,
		bn_raw_seq_read};
	struct bn_raw r = {.r_op = fn[op], .r_threads = 1, .r_fd = fd,
			   .r_len = bt_len(op), .r_nr = BT_REGION / bt_len(op),
			   .r_lat = bt_lat};
	double rate = bn_raw_run_for(&r, secs);
	uint32_t nr = atomic_load(&r.r_lat_nr);

	res->r_lat_us = bn_median(bt_lat, nr < BN_LAT_MAX ? nr : BN_LAT_MAX);
	res->r_mbps = rate * (double)bt_len(op) / 1e6;
}

/* The model's floor for one op in us: latency, transfer, and the sync of
 * a write (what a STABLE write needs from its device at least). */
static double bt_floor_us(uint32_t tier, enum bt_op op)
{
	struct tier_model m;
	double len = (double)bt_len(op), ns;

	tier_model_default((enum clovis_tier)tier, &m);
	if (bt_write(op))
		ns = (double)m.tm_write_lat_ns + (double)m.tm_sync_lat_ns +
		     (m.tm_write_bw ? len * 1e9 / (double)m.tm_write_bw : 0);
	else
		ns = (double)m.tm_read_lat_ns +
		     (m.tm_read_bw ? len * 1e9 / (double)m.tm_read_bw : 0);
	return ns / 1e3;
}

/* Record the latency and bandwidth figures of tier and op. */
static void bt_fig(uint32_t tier, enum bt_op op, bool model,
		   const struct bt_res *ours, const struct bt_res *raw)
{
	char name[BN_NAME_LEN], emu[BN_EMU_LEN];
	const char *sfx = model ? "_model" : "";

	if (model)
		snprintf(emu, sizeof emu, "%s; device model on: class figures "
			 "from tiers/README.md (floor %.0f us)",
			 bt_emu[tier], bt_floor_us(tier, op));
	else
		snprintf(emu, sizeof emu, "%s", bt_emu[tier]);
	snprintf(name, sizeof name, "tier_%s_%s_lat%s", bt_tier_names[tier],
		 bt_op_names[op], sfx);
	bn_fig_add(name, ours->r_lat_us, raw->r_lat_us, "us p50", 1, 1, emu);
	snprintf(name, sizeof name, "tier_%s_%s_bw%s", bt_tier_names[tier],
		 bt_op_names[op], sfx);
	bn_fig_add(name, ours->r_mbps, raw->r_mbps, "MB/s", 1, 1, emu);
}

/* Most ops a figure may take on tier (SMR space is not cleaned here). */
static uint64_t bt_ops_max(uint32_t tier, enum bt_op op, bool model)
{
	if (model && tier >= CLOVIS_TIER_SAS)
		return BT_MODEL_OPS;
	if (tier == CLOVIS_TIER_SMR && op == BT_4K_W)
		return BT_SMR_4K_OPS;
	if (tier == CLOVIS_TIER_SMR && op == BT_1M_W)
		return BT_SMR_1M_OPS;
	return 0;
}

/* Create the two objects of every tier and write their regions. */
static void bt_objs_create(void)
{
	for (uint32_t t = 0; t < CLOVIS_TIER_NR; t++)
		for (uint32_t b = 0; b < 2; b++) {
			struct clovis_obj_attr a = {
				.oa_block_shift = b ? 20 : 12,
				.oa_layout = CLOVIS_LAYOUT_PLAIN, .oa_tier = t};
			struct clovis_obj *o = &bt_obj[t][b];

			bn_obj_create_attr(o, BT_ID_BASE + 2 * t + b, &a);
			bn_obj_prefill(o, BT_REGION >> a.oa_block_shift);
		}
}

/* Open the objects again after the store was reopened. */
static void bt_objs_open(void)
{
	for (uint32_t t = 0; t < CLOVIS_TIER_NR; t++)
		for (uint32_t b = 0; b < 2; b++)
			bn_obj_open(&bt_obj[t][b], BT_ID_BASE + 2 * t + b);
}

/* Reopen the store at path with flags (the device model or not). */
static void bt_reopen(const char *path, uint32_t flags)
{
	clovis_fini(bn_cl);
	bn_cl = NULL;
	bn_store_open(path, NULL, flags);
	bt_objs_open();
}

/* Make the raw files: on the build disk [0] and on /dev/shm [1]. */
static void bt_raw_files(int fd[2], bool make)
{
	char disk[600], shm[128];

	snprintf(disk, sizeof disk, "%s/raw-tier.dat", bn_dir);
	snprintf(shm, sizeof shm, "/dev/shm/strata-bench-raw-%d.dat",
		 (int)getpid());
	if (make) {
		fd[0] = bn_raw_file_make(disk, BT_REGION, O_DIRECT);
		fd[1] = bn_raw_file_make(shm, BT_REGION, 0);
		return;
	}
	close(fd[0]);
	close(fd[1]);
	unlink(disk);
	unlink(shm);
}

/*
 * Model off: ours, then raw on the medium that stands for the tier, right
 * after it (so both see the same load); raw[t][op] is kept for the model-on
 * figures.  Then the model-on figures against the same raw.
 */
void bn_fig_tiers(const char *path)
{
	static struct bt_res raw[CLOVIS_TIER_NR][BT_NR];
	struct bt_res ours;
	double secs = bn_secs / 3;
	int fd[2];

	bt_objs_create();
	bt_raw_files(fd, true);
	for (uint32_t t = 0; t < CLOVIS_TIER_NR; t++)
		for (uint32_t op = 0; op < BT_NR; op++) {
			bt_ours(t, (enum bt_op)op, secs,
				bt_ops_max(t, (enum bt_op)op, false), &ours);
			bt_raw(fd[t == CLOVIS_TIER_NVRAM], (enum bt_op)op, secs,
			       &raw[t][op]);
			bt_fig(t, (enum bt_op)op, false, &ours, &raw[t][op]);
		}
	bt_raw_files(fd, false);
	bt_reopen(path, CLOVIS_CONF_DEVICE_MODEL);
	for (uint32_t t = 0; t < CLOVIS_TIER_NR; t++)
		for (uint32_t op = 0; op < BT_NR; op++) {
			bt_ours(t, (enum bt_op)op, secs,
				bt_ops_max(t, (enum bt_op)op, true), &ours);
			bt_fig(t, (enum bt_op)op, true, &ours, &raw[t][op]);
		}
	bt_reopen(path, 0);
}
