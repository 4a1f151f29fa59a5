/*
 * bench_ec.c — pdclust objects on a pool of 12 flash devices beside raw
 * ISA-L encoding and raw O_DIRECT writes, degraded reads, repair.
 *
 * Store 2 (DIR/store-ec) is made from a YAML configuration (cc_config):
 * nvram0 on /dev/shm, flash f0..f11 (the pool "ec"), sas0, smr0; every
 * flash device a 128 MiB file on the build disk used with O_DIRECT.  Two
 * objects of 64 KiB blocks over a region of BE_STRIPES full stripes of
 * 1 MiB of user data, written once before any figure:
 *
 *   4p2: pdclust 4+2 (+1 spare), 256 KiB units;
 *   8p2: pdclust 8+2 (+1 spare), 128 KiB units.
 *
 * Figures (MB/s = 10^6 bytes of user data per second).  Where ours and
 * raw are both measured, they alternate in BE_SLICES slices (be_ab()), so
 * a change of load on this shared machine hits both sides alike:
 *
 *   ec_write_L_qdQ  1 MiB WRITEs of whole stripes in order, Q in flight,
 *        counted at STABLE.  Raw: one pipeline per stripe in flight (Q
 *        threads): ec_encode() of the stripe, ec_crc() of each of its N+K
 *        units, O_DIRECT pwrite of unit j to file j of N+K preallocated,
 *        written files in DIR; then one fdatasync per file for the batch
 *        of Q stripes (the Q threads share the N+K syncs) before the next
 *        batch.  Goal: ratio >= 0.75.
 *   ec_read_L_healthy  1 MiB READs of whole stripes, 4 in flight.  Raw: 4
 *        threads, O_DIRECT pread of the N data units of a stripe from the
 *        raw files and ec_crc() of each.
 *   ec_read_L_fail1, ec_read_L_fail2  the same READs with one device of
 *        the pool failed (clovis_dev_fail), then (after repair of that one)
 *        with two more failed; the "raw" column is the healthy figure, so
 *        the ratio is degraded / healthy.  Goal: ratio >= 0.5.
 *   repair_rebuilt, repair_per_device  clovis_repair() after the first
 *        failure: bytes rebuilt (ws_bytes: the unit size of every unit
 *        rebuilt, both objects) per second of ws_elapsed_ns, and that
 *        divided by ws_devices (surviving devices read); raw: O_DIRECT
 *        sequential 1 MiB preads of one surviving device file.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layouts/ec.h"
#include "tests/bench/bench.h"

#define BE_STRIPE (1u << 20)        /* user bytes of a full stripe */
#define BE_STRIPES 128u             /* stripes in each object's region */
#define BE_BLOCK_SHIFT 16u          /* 64 KiB blocks */
#define BE_STRIPE_BLKS (BE_STRIPE >> BE_BLOCK_SHIFT)
#define BE_FLASH 12u                /* flash devices, all in pool "ec" */
#define BE_READ_QD 4u
#define BE_SLICES 3u                /* ours and raw alternate this often */
#define BE_UMAX CLOVIS_LAYOUT_UNITS_MAX
#define BE_EMU "12 flash: files on ext4, O_DIRECT; raw: files on ext4, " \
	       "O_DIRECT"

/* One layout measured: its object, codec and raw files. */
struct be_lay {
	const char *l_name;
	uint32_t l_n, l_k, l_shift;    /* data, parity, log2 unit size */
	uint64_t l_id;
	struct clovis_obj l_obj;
	struct ec_codec *l_codec;
	int l_fds[BE_UMAX];
	double l_healthy;              /* healthy READ MB/s */
};

static struct be_lay be_lays[2] = {
	{.l_name = "4p2", .l_n = 4, .l_k = 2, .l_shift = 18, .l_id = 201},
	{.l_name = "8p2", .l_n = 8, .l_k = 2, .l_shift = 17, .l_id = 202},
};
static uint32_t be_pool;                /* index of pool "ec" */
static uint32_t be_pool_devs[BE_FLASH];
static char be_yaml[2048];
static uint64_t be_ops;                 /* ops of be_ours() since reset */
/* Checksums of the raw side end here, so that none can be left out. */
static atomic_uint_fast64_t be_sink;

/* A note beside the figures (stderr in JSON mode). */
static void be_note(const char *fmt, ...)
{
	FILE *out = bn_json ? stderr : stdout;
	va_list ap;

	va_start(ap, fmt);
	fputs("# ", out);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
	va_end(ap);
}

/* ------------------------------------------------------------ store */

/* The YAML configuration of store 2.  Pool "ec" is index 0, and oa_pool 0
 * means "the default pool", so "ec" is made the default layout's pool;
 * the tier objects ask for PLAIN explicitly. */
static void be_yaml_make(void)
{
	size_t n = 0;

	n += (size_t)snprintf(be_yaml + n, sizeof be_yaml - n,
			      "device_size: 128MiB\ndevices:\n"
			      "  - { name: nv0, tier: nvram }\n");
	for (uint32_t i = 0; i < BE_FLASH; i++)
		n += (size_t)snprintf(be_yaml + n, sizeof be_yaml - n,
				      "  - { name: f%u, tier: flash }\n", i);
	n += (size_t)snprintf(be_yaml + n, sizeof be_yaml - n,
			      "  - { name: sas0, tier: sas }\n"
			      "  - { name: smr0, tier: smr, size: 512MiB, "
			      "zone_size: 32MiB }\npools:\n"
			      "  - name: ec\n    devices: [");
	for (uint32_t i = 0; i < BE_FLASH; i++)
		n += (size_t)snprintf(be_yaml + n, sizeof be_yaml - n,
				      "%sf%u", i ? ", " : "", i);
	snprintf(be_yaml + n, sizeof be_yaml - n, "]\nlayouts:\n  default: "
		 "{ type: pdclust, pool: ec, data: 4, parity: 2, spare: 1 }\n");
}

/* Find pool "ec" and its devices. */
static void be_pool_find(void)
{
	static struct clovis_pool_info pi[8];
	uint32_t nr = 8;

	bn_check(clovis_pool_list(bn_cl, pi, &nr), "pool list");
	for (uint32_t i = 0; i < nr && i < 8; i++) {
		if (strcmp(pi[i].pi_name, "ec") != 0)
			continue;
		if (pi[i].pi_nr_devs != BE_FLASH)
			bn_check(-EINVAL, "pool ec: not 12 devices");
		be_pool = pi[i].pi_index;
		memcpy(be_pool_devs, pi[i].pi_devs, sizeof be_pool_devs);
		return;
	}
	bn_check(-ENOENT, "pool ec");
}

/* cc_config names a YAML file (conf_load() in the engine): write it. */
void bn_ec_store_setup(char *path, size_t len)
{
	char conf[600];
	FILE *f;

	snprintf(path, len, "%s/store-ec", bn_dir);
	snprintf(conf, sizeof conf, "%s/store-ec.yaml", bn_dir);
	(void)clovis_store_destroy(path);
	be_yaml_make();
	f = fopen(conf, "w");
	if (f == NULL || fputs(be_yaml, f) == EOF || fclose(f) != 0)
		bn_check(-errno, conf);
	bn_store_open(path, conf, CLOVIS_CONF_CREATE);
	unlink(conf);
	be_pool_find();
}

/* Create the object of l on pool "ec" and write its region once. */
static void be_obj_create(struct be_lay *l)
{
	struct clovis_obj_attr a = {
		.oa_block_shift = BE_BLOCK_SHIFT,
		.oa_layout = CLOVIS_LAYOUT_PDCLUST, .oa_pool = be_pool,
		.oa_data_units = l->l_n, .oa_parity_units = l->l_k,
		.oa_spare_units = 1, .oa_unit_shift = l->l_shift};

	if (l->l_n << l->l_shift != BE_STRIPE)
		bn_check(-EINVAL, "layout: N units are not one stripe");
	bn_obj_create_attr(&l->l_obj, l->l_id, &a);
	if (l->l_obj.ob_attr.oa_pool != be_pool)
		bn_check(-EINVAL, "object not on pool ec");
	be_note("ec %s: object on pool %u (ec), %u+%u+%u, %u KiB units",
		l->l_name, l->l_obj.ob_attr.oa_pool,
		l->l_obj.ob_attr.oa_data_units,
		l->l_obj.ob_attr.oa_parity_units,
		l->l_obj.ob_attr.oa_spare_units,
		1u << (l->l_obj.ob_attr.oa_unit_shift - 10));
	bn_obj_prefill(&l->l_obj, (uint64_t)BE_STRIPES * BE_STRIPE_BLKS);
	bn_check(ec_codec_create(&l->l_codec, l->l_n, l->l_k), "codec");
}

/* Make the N+K raw files of l, each BE_STRIPES units, written once. */
static void be_raw_files(struct be_lay *l, bool make)
{
	for (uint32_t j = 0; j < l->l_n + l->l_k; j++) {
		char path[600];

		snprintf(path, sizeof path, "%s/raw-ec-%s-%u.dat", bn_dir,
			 l->l_name, j);
		if (make) {
			l->l_fds[j] = bn_raw_file_make(
				path, (uint64_t)BE_STRIPES << l->l_shift,
				O_DIRECT);
			continue;
		}
		close(l->l_fds[j]);
		unlink(path);
	}
}

/* ------------------------------------------------------ our side */

/* MB/s of whole-stripe WRITEs or READs of l's object, qd in flight, for
 * secs; adds the ops to be_ops. */
static double be_ours(struct be_lay *l, bool write, uint32_t qd, double secs)
{
	static struct bn_job j;
	double rate;

	memset(&j, 0, sizeof j);
	j = (struct bn_job){.j_make = write ? bn_make_seq_write
					    : bn_make_seq_read,
			    .j_qd = qd, .j_obj = &l->l_obj,
			    .j_blks = (uint64_t)BE_STRIPES * BE_STRIPE_BLKS,
			    .j_chunk = BE_STRIPE_BLKS};
	rate = bn_run_for(&j, secs);
	be_ops += j.j_made;
	bn_job_fini(&j);
	return rate * BE_STRIPE / 1e6;
}

/* ------------------------------------------------------ raw side */

/* A raw pipeline run: qd threads over the raw files of one layout. */
struct be_raw {
	struct be_lay *r_lay;
	uint32_t r_qd;
	pthread_barrier_t r_bar;
	double r_end;
	bool r_stop;                  /* written by thread 0 between barriers */
	uint64_t r_batches;           /* write batches of qd stripes done */
	atomic_uint_fast64_t r_next;  /* reads: next stripe */
	atomic_uint_fast64_t r_done;  /* reads: stripes done */
};

struct be_thr {
	struct be_raw *t_r;
	uint32_t t_i;
	uint8_t *t_u[BE_UMAX];
};

/* Stop the program unless a transfer moved exactly len bytes. */
static void be_io(ssize_t rc, size_t len, const char *what)
{
	if (rc != (ssize_t)len)
		bn_check(rc < 0 ? -errno : -EIO, what);
}

/*
 * One writer of the raw pipeline: stripe b * qd + i of each batch b is
 * encoded, checksummed and written unit by unit; after a barrier the qd
 * writers share the N+K fdatasyncs of the batch; thread 0 decides at the
 * second barrier whether another batch starts.
 */
static void *be_raw_write_main(void *arg)
{
	struct be_thr *t = arg;
	struct be_raw *r = t->t_r;
	struct be_lay *l = r->r_lay;
	uint32_t w = l->l_n + l->l_k;
	size_t unit = (size_t)1 << l->l_shift;
	uint64_t crc = 0;

	for (uint64_t b = 0;; b++) {
		off_t off = (off_t)((b * r->r_qd + t->t_i) % BE_STRIPES * unit);

		ec_encode(l->l_codec, unit, t->t_u, t->t_u + l->l_n);
		for (uint32_t j = 0; j < w; j++)
			crc ^= ec_crc(t->t_u[j], unit);
		for (uint32_t j = 0; j < w; j++)
			be_io(pwrite(l->l_fds[j], t->t_u[j], unit, off), unit,
			      "raw ec pwrite");
		pthread_barrier_wait(&r->r_bar);
		for (uint32_t j = t->t_i; j < w; j += r->r_qd)
			if (fdatasync(l->l_fds[j]) != 0)
				bn_check(-errno, "raw ec fdatasync");
		if (t->t_i == 0) {
			r->r_batches++;
			r->r_stop = bn_now() >= r->r_end;
		}
		pthread_barrier_wait(&r->r_bar);
		if (r->r_stop)
			break;
	}
	atomic_fetch_xor(&be_sink, crc);
	return NULL;
}

/* One reader: whole stripes (their N data units, checksummed) in turn. */
static void *be_raw_read_main(void *arg)
{
	struct be_thr *t = arg;
	struct be_raw *r = t->t_r;
	struct be_lay *l = r->r_lay;
	size_t unit = (size_t)1 << l->l_shift;
	uint64_t crc = 0;

	while (bn_now() < r->r_end) {
		uint64_t s = atomic_fetch_add(&r->r_next, 1) % BE_STRIPES;

		for (uint32_t j = 0; j < l->l_n; j++) {
			be_io(pread(l->l_fds[j], t->t_u[j], unit,
				    (off_t)(s * unit)), unit, "raw ec pread");
			crc ^= ec_crc(t->t_u[j], unit);
		}
		atomic_fetch_add(&r->r_done, 1);
	}
	atomic_fetch_xor(&be_sink, crc);
	return NULL;
}

/* MB/s of user data of the raw pipeline (write or read), qd threads, for
 * secs. */
static double be_raw_run(struct be_lay *l, uint32_t qd, bool write,
			 double secs)
{
	static struct be_thr thr[BN_QD_MAX];
	static struct be_raw r;
	pthread_t tid[BN_QD_MAX];
	double t0, took;
	uint64_t stripes;

	memset(&r, 0, sizeof r);
	r.r_lay = l;
	r.r_qd = qd;
	pthread_barrier_init(&r.r_bar, NULL, qd);
	for (uint32_t i = 0; i < qd; i++) {
		thr[i] = (struct be_thr){.t_r = &r, .t_i = i};
		for (uint32_t j = 0; j < l->l_n + l->l_k; j++)
			thr[i].t_u[j] = bn_alloc((size_t)1 << l->l_shift);
	}
	t0 = bn_now();
	r.r_end = t0 + secs;
	for (uint32_t i = 0; i < qd; i++)
		pthread_create(&tid[i], NULL, write ? be_raw_write_main
						    : be_raw_read_main, &thr[i]);
	for (uint32_t i = 0; i < qd; i++)
		pthread_join(tid[i], NULL);
	took = bn_now() - t0;
	stripes = write ? r.r_batches * qd : atomic_load(&r.r_done);
	pthread_barrier_destroy(&r.r_bar);
	for (uint32_t i = 0; i < qd; i++)
		for (uint32_t j = 0; j < l->l_n + l->l_k; j++)
			free(thr[i].t_u[j]);
	return (double)stripes * BE_STRIPE / took / 1e6;
}

/*
 * Ours and raw of one figure in BE_SLICES alternating slices of
 * bn_secs / BE_SLICES each, so that a change of load on a shared machine
 * hits both sides alike; each side is the mean of its slices.
 */
static void be_ab(struct be_lay *l, bool write, uint32_t qd, double *ours,
		  double *raw)
{
	double secs = bn_secs / BE_SLICES;

	*ours = 0;
	*raw = 0;
	for (uint32_t i = 0; i < BE_SLICES; i++) {
		*ours += be_ours(l, write, qd, secs) / BE_SLICES;
		*raw += be_raw_run(l, qd, write, secs) / BE_SLICES;
	}
}

/* MB/s of ec_encode + ec_crc of every unit alone, one thread, 0.3 s: to
 * tell the encode's share of the raw pipeline. */
static double be_encode_only(struct be_lay *l)
{
	uint8_t *u[BE_UMAX];
	size_t unit = (size_t)1 << l->l_shift;
	uint64_t n = 0, crc = 0;
	double t0 = bn_now();

	for (uint32_t j = 0; j < l->l_n + l->l_k; j++)
		u[j] = bn_alloc(unit);
	for (; bn_now() < t0 + 0.3; n++) {
		ec_encode(l->l_codec, unit, u, u + l->l_n);
		for (uint32_t j = 0; j < l->l_n + l->l_k; j++)
			crc ^= ec_crc(u[j], unit);
	}
	for (uint32_t j = 0; j < l->l_n + l->l_k; j++)
		free(u[j]);
	atomic_fetch_xor(&be_sink, crc);
	return (double)n * BE_STRIPE / (bn_now() - t0) / 1e6;
}

/* ------------------------------------------------------ the figures */

/* Group commits done so far (to count writes per commit). */
static uint64_t be_commits(void)
{
	struct clovis_stat st[CLOVIS_STAT_NR];

	bn_check(clovis_stats_get(bn_cl, st), "stats");
	return st[CLOVIS_STAT_COMMIT].cs_count;
}

/* ec_write_L_qdQ for both layouts at 1 and 4 in flight. */
static void be_fig_write(void)
{
	static const uint32_t qds[2] = {1, 4};

	for (uint32_t i = 0; i < 2; i++) {
		struct be_lay *l = &be_lays[i];

		be_note("ec %s: raw ec_encode + ec_crc alone, 1 thread: %.0f "
			"MB/s", l->l_name, be_encode_only(l));
		for (uint32_t q = 0; q < 2; q++) {
			char name[BN_NAME_LEN];
			uint64_t c0 = be_commits();
			double ours, raw;

			be_ops = 0;
			be_ab(l, true, qds[q], &ours, &raw);
			be_note("ec %s qd%u: %.1f writes per group commit",
				l->l_name, qds[q], (double)be_ops /
				(double)(be_commits() - c0));
			snprintf(name, sizeof name, "ec_write_%s_qd%u",
				 l->l_name, qds[q]);
			bn_fig_add(name, ours, raw, "MB/s", qds[q], 1, BE_EMU);
		}
	}
}

/* Degraded groups read so far. */
static uint64_t be_degraded(void)
{
	struct clovis_unit_counters uc;

	bn_check(clovis_unit_counters_get(bn_cl, &uc), "unit counters");
	return uc.uc_degraded_reads;
}

/* ec_read_L_<what> of both layouts; raw: the raw read pipeline when
 * healthy, else the healthy figure. */
static void be_fig_read(const char *what, bool healthy)
{
	for (uint32_t i = 0; i < 2; i++) {
		struct be_lay *l = &be_lays[i];
		char name[BN_NAME_LEN];
		uint64_t d0 = be_degraded();
		double ours, raw;

		be_ops = 0;
		if (healthy)
			be_ab(l, false, BE_READ_QD, &ours, &raw);
		else
			ours = be_ours(l, false, BE_READ_QD, bn_secs);
		be_note("ec %s read %s: %.0f%% of the stripes read degraded",
			l->l_name, what, 100.0 * (double)(be_degraded() - d0) /
			(double)be_ops);
		snprintf(name, sizeof name, "ec_read_%s_%s", l->l_name, what);
		if (healthy) {
			l->l_healthy = ours;
			bn_fig_add(name, ours, raw, "MB/s", BE_READ_QD, 1,
				   BE_EMU);
		} else {
			bn_fig_add(name, ours, l->l_healthy, "MB/s",
				   BE_READ_QD, 1, "12 flash: files on ext4, "
				   "O_DIRECT; raw column = healthy READ");
		}
	}
}

/* Fail the device in slot of pool "ec". */
static void be_fail(uint32_t slot)
{
	bn_check(clovis_dev_fail(bn_cl, be_pool_devs[slot]), "dev fail");
	be_note("device %u (pool ec slot %u) failed", be_pool_devs[slot],
		slot);
}

/* MB/s of O_DIRECT sequential 1 MiB preads of the file of device dev. */
static double be_dev_read_raw(uint32_t dev)
{
	static struct clovis_dev_info info[16];
	uint32_t nr = 16;
	struct bn_raw r = {.r_op = bn_raw_seq_read, .r_threads = 1,
			   .r_len = 1u << 20};
	struct stat st;
	double rate;

	bn_check(clovis_dev_list(bn_cl, info, &nr), "dev list");
	if (dev >= nr || dev >= 16)
		bn_check(-EINVAL, "device index");
	r.r_fd = open(info[dev].di_path, O_RDONLY | O_DIRECT);
	if (r.r_fd < 0 || fstat(r.r_fd, &st) != 0)
		bn_check(-errno, info[dev].di_path);
	r.r_nr = (uint64_t)st.st_size >> 20;
	rate = bn_raw_run(&r) * (double)(1u << 20) / 1e6;
	close(r.r_fd);
	return rate;
}

/* repair_rebuilt and repair_per_device after one failure. */
static void be_fig_repair(void)
{
	struct clovis_walk_stats st = {0};
	double secs, mbps, raw;

	bn_check(clovis_repair(bn_cl, NULL, NULL, &st), "repair");
	secs = (double)st.ws_elapsed_ns / 1e9;
	mbps = (double)st.ws_bytes / secs / 1e6;
	be_note("repair: %llu units visited, %llu rebuilt, %llu bytes, %u "
		"devices read, %.3f s, %llu unrepairable",
		(unsigned long long)st.ws_units,
		(unsigned long long)st.ws_rebuilt,
		(unsigned long long)st.ws_bytes, st.ws_devices, secs,
		(unsigned long long)st.ws_unrepairable);
	if (st.ws_rebuilt == 0 || st.ws_devices == 0)
		bn_check(-EIO, "repair rebuilt nothing");
	raw = be_dev_read_raw(be_pool_devs[0]);
	bn_fig_add("repair_rebuilt", mbps, raw, "MB/s", 1, 1,
		   "12 flash: files on ext4, O_DIRECT; raw: 1 MiB O_DIRECT "
		   "preads of one device file");
	bn_fig_add("repair_per_device", mbps / st.ws_devices, raw, "MB/s", 1,
		   1, "rebuilt MB/s / ws_devices; raw: 1 MiB O_DIRECT preads "
		   "of one device file");
}

void bn_fig_ec(void)
{
	for (uint32_t i = 0; i < 2; i++) {
		be_obj_create(&be_lays[i]);
		be_raw_files(&be_lays[i], true);
	}
	be_fig_write();
	if (bn_want("ec")) {
		be_fig_read("healthy", true);
		be_fail(3);
		be_fig_read("fail1", false);
		be_fig_repair();
		be_fail(7);
		be_fail(10);
		be_fig_read("fail2", false);
	}
	for (uint32_t i = 0; i < 2; i++) {
		be_raw_files(&be_lays[i], false);
		ec_codec_destroy(be_lays[i].l_codec);
	}
}
