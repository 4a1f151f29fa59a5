/*
 * bench_hdf5.c — the HDF5 driver's benchmark (issue 34), driven by
 * tests/bench/bench_hdf5.py (which prints the ratios):
 *
 *   strata_bench_hdf5 DIR MIB [BLOCK [ROUNDS]]
 *
 * In one run, on one fresh embedded store in DIR/store (configuration
 * DIR/store.yaml: one flash device of 2 x MIB + 512 MiB, a file in it
 * written with O_DIRECT; the 64 MiB NVRAM device on /dev/shm, PMDK over
 * tmpfs, as every benchmark has it; plain layout on flash; device model
 * off) and on the file system of DIR:
 *
 *   direct  MIB MiB written to an object of BLOCK-byte blocks (default
 *           4096) in 1 MiB WRITE ops, one at a time, each waited EXECUTED
 *           with at most 64 not yet STABLE and all waited STABLE at the
 *           end (the driver's own pipeline, and what it promises at
 *           H5Fclose), then read back in 1 MiB READs: the bytes the
 *           dataset below holds, without HDF5;
 *   vfd     an HDF5 file through the Strata driver (H5Pset_fapl_strata):
 *           one float64 dataset of MIB MiB in chunks of 1 MiB, written one
 *           chunk per H5Dwrite (create to H5Fclose), then read back the
 *           same way (H5Fopen to H5Fclose);
 *   local   the same HDF5 program on DIR/local.h5 with HDF5's default sec2
 *           driver; the write's time includes an fsync of the file after
 *           H5Fclose (the same durability), and its pages are dropped from
 *           the page cache (posix_fadvise DONTNEED) before the read.
 *
 * ROUNDS (default 3, at most 9) rounds of the three, one after the other;
 * the figures are the medians.  Every read is checked (one value per
 * chunk).  Prints each round on stderr ("round N: direct W/R vfd W/R
 * local W/R MiB/s", which bench_hdf5.py reads for its per-round ratios),
 * then "h5bench NAME VALUE MiB/s" lines: direct-write, direct-read,
 * vfd-write, vfd-read, local-write, local-read.  Everything made is
 * removed at the end (the store with clovis_store_destroy(), its NVRAM
 * device on /dev/shm with it).  Exits 0, 1 on an error (message on
 * stderr), 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "clovis/clovis.h"
#include "gateways/hdf5/strata_h5.h"

#define MIB (1u << 20)
#define PER_CHUNK (MIB / 8) /* float64 values in 1 MiB */

static char g_store[4096], g_local[4096], g_yaml[4096];
static uint64_t g_mib, g_block = 4096;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc, const char *msg)
{
	fprintf(stderr, "strata_bench_hdf5: %s: %s (%s)\n", what,
		strerror(rc < 0 ? -rc : rc), msg);
	exit(1);
}

static void fill(double *buf, uint64_t chunk)
{
	for (uint32_t i = 0; i < PER_CHUNK; i++)
		buf[i] = (double)(chunk * PER_CHUNK + i);
}

/* The store: an NVRAM device (in DIR/nv) and one flash device, made
 * here, then closed (the driver opens it). */
static void store_make(void)
{
	struct clovis_conf cc = {0};
	struct clovis *cl = NULL;
	int rc;

	FILE *y = fopen(g_yaml, "w");

	/* one flash device, twice the data and room to spare: a device
	 * filled near its end is slower to allocate in, which is not what
	 * this measures */
	if (y == NULL)
		die("store config", errno, g_yaml);
	fprintf(y, "devices:\n  - { tier: nvram, size: 64MiB }\n"
		"  - { tier: flash, size: %lluMiB }\n",
		(unsigned long long)(2 * g_mib + 512));
	fclose(y);
	cc.cc_data_dir = g_store;
	cc.cc_flags = CLOVIS_CONF_CREATE;
	cc.cc_config = g_yaml;
	rc = clovis_init(&cl, &cc);
	if (rc != 0)
		die("store create", rc, clovis_errmsg());
	clovis_fini(cl);
}

/* One in-flight direct op: its vectors live as long as the op. */
struct slot {
	struct clovis_op *op;
	uint64_t blk, nblk;
	void *buf;
	size_t len;
	struct clovis_extvec ev;
	struct clovis_bufvec bv;
};

/* Launch the op of slot s and wait until it is EXECUTED. */
static void slot_io(struct clovis_obj *o, struct slot *s,
		    enum clovis_obj_opcode oc)
{
	int rc;

	s->ev = (struct clovis_extvec){1, &s->blk, &s->nblk};
	s->bv = (struct clovis_bufvec){1, &s->buf, &s->len};
	rc = clovis_obj_op(o, oc, &s->ev, &s->bv, oc == CLOVIS_OC_WRITE ?
			   CLOVIS_OF_HERE : 0, &s->op);
	if (rc == 0)
		rc = clovis_op_launch(&s->op, 1);
	if (rc == 0)
		rc = clovis_op_wait(s->op, CLOVIS_OS_EXECUTED, CLOVIS_TIME_NEVER);
	if (rc != 0)
		die("direct op", rc, s->op != NULL ? clovis_op_errmsg(s->op) : "");
}

static void slot_stable(struct slot *s)
{
	int rc;

	if (s->op == NULL)
		return;
	rc = clovis_op_wait(s->op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (rc != 0)
		die("direct write", rc, clovis_op_errmsg(s->op));
	clovis_op_free(s->op);
	s->op = NULL;
}

/* Direct Clovis: the writes pipelined as the driver does (each waited
 * EXECUTED, at most WINDOW waiting for STABLE, all STABLE at the end). */
#define WINDOW 64u
static void direct(double *wr, double *rd)
{
	struct clovis_conf cc = {0};
	struct clovis *cl = NULL;
	struct clovis_obj o;
	struct clovis_obj_attr a = {0};
	struct clovis_id id;
	struct clovis_op *op = NULL;
	static struct slot sl[WINDOW];
	uint64_t per = MIB / g_block;
	double t0;
	int rc;

	cc.cc_data_dir = g_store;
	rc = clovis_init(&cl, &cc);
	if (rc != 0)
		die("store open", rc, clovis_errmsg());
	a.oa_block_shift = (uint32_t)__builtin_ctzll(g_block);
	a.oa_tier = CLOVIS_TIER_FLASH;
	clovis_id_parse("@bench.hdf5.direct", &id);
	rc = clovis_obj_init(&o, clovis_default_realm(cl), &id, &a);
	if (rc == 0)
		rc = clovis_entity_op(&o.ob_entity, CLOVIS_EO_CREATE, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die("direct object", rc, clovis_errmsg());
	for (uint32_t i = 0; i < WINDOW; i++) {
		sl[i].buf = aligned_alloc(4096, MIB);
		sl[i].len = MIB;
	}
	t0 = now_s();
	for (uint64_t c = 0; c < g_mib; c++) {
		struct slot *s = &sl[c % WINDOW];

		slot_stable(s);
		fill(s->buf, c); /* as the application fills its buffer */
		s->blk = c * per;
		s->nblk = per;
		slot_io(&o, s, CLOVIS_OC_WRITE);
	}
	for (uint32_t i = 0; i < WINDOW; i++)
		slot_stable(&sl[i]);
	*wr = (double)g_mib / (now_s() - t0);
	t0 = now_s();
	for (uint64_t c = 0; c < g_mib; c++) {
		double *v = sl[0].buf;

		sl[0].blk = c * per;
		sl[0].nblk = per;
		slot_io(&o, &sl[0], CLOVIS_OC_READ);
		clovis_op_free(sl[0].op);
		sl[0].op = NULL;
		if (v[7] != (double)(c * PER_CHUNK + 7))
			die("direct read check", -EIO, "wrong value");
	}
	*rd = (double)g_mib / (now_s() - t0);
	for (uint32_t i = 0; i < WINDOW; i++)
		free(sl[i].buf);
	/* its space back for the driver's object (one flash device may
	 * hold both) */
	rc = clovis_entity_op(&o.ob_entity, CLOVIS_EO_DELETE, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die("direct object delete", rc, clovis_errmsg());
	clovis_fini(cl);
}

/* The HDF5 program: MIB chunks written, one H5Dwrite each. */
static double h5_write(const char *name, hid_t fapl)
{
	hsize_t n = g_mib * PER_CHUNK, chunk = PER_CHUNK, cnt = PER_CHUNK;
	double *buf = malloc(MIB), t0 = now_s();
	hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), sp, ms, d;

	if (f < 0)
		die("H5Fcreate", strata_h5_errno(), strata_h5_errmsg());
	H5Pset_chunk(dcpl, 1, &chunk);
	sp = H5Screate_simple(1, &n, NULL);
	ms = H5Screate_simple(1, &cnt, NULL);
	d = H5Dcreate2(f, "data", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl,
		       H5P_DEFAULT);
	for (uint64_t c = 0; c < g_mib; c++) {
		hsize_t start = c * PER_CHUNK;

		fill(buf, c);
		H5Sselect_hyperslab(sp, H5S_SELECT_SET, &start, NULL, &cnt, NULL);
		if (H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, buf) < 0)
			die("H5Dwrite", strata_h5_errno(), strata_h5_errmsg());
	}
	H5Dclose(d);
	H5Sclose(ms);
	H5Sclose(sp);
	H5Pclose(dcpl);
	if (H5Fclose(f) < 0)
		die("H5Fclose", strata_h5_errno(), strata_h5_errmsg());
	if (fapl == H5P_DEFAULT) { /* sec2: the same durability */
		int fd = open(name, O_RDONLY);

		if (fd < 0 || fsync(fd) != 0)
			die("fsync", errno, name);
		close(fd);
	}
	free(buf);
	return (double)g_mib / (now_s() - t0);
}

static double h5_read(const char *name, hid_t fapl)
{
	hsize_t cnt = PER_CHUNK;
	double *buf = malloc(MIB), t0;
	hid_t f, sp, ms, d;

	if (fapl == H5P_DEFAULT) { /* from the disk, not the page cache */
		int fd = open(name, O_RDONLY);

		if (fd < 0)
			die("open", errno, name);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	t0 = now_s();
	f = H5Fopen(name, H5F_ACC_RDONLY, fapl);
	if (f < 0)
		die("H5Fopen", strata_h5_errno(), strata_h5_errmsg());
	d = H5Dopen2(f, "data", H5P_DEFAULT);
	sp = H5Dget_space(d);
	ms = H5Screate_simple(1, &cnt, NULL);
	for (uint64_t c = 0; c < g_mib; c++) {
		hsize_t start = c * PER_CHUNK;

		H5Sselect_hyperslab(sp, H5S_SELECT_SET, &start, NULL, &cnt, NULL);
		if (H5Dread(d, H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, buf) < 0)
			die("H5Dread", strata_h5_errno(), strata_h5_errmsg());
		if (buf[7] != (double)(c * PER_CHUNK + 7))
			die("read check", -EIO, name);
	}
	H5Sclose(ms);
	H5Sclose(sp);
	H5Dclose(d);
	H5Fclose(f);
	free(buf);
	return (double)g_mib / (now_s() - t0);
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of the rounds' figures. */
static double median(double *v, uint32_t n)
{
	qsort(v, n, sizeof *v, dcmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define ROUNDS_MAX 9u
int main(int argc, char **argv)
{
	struct strata_h5_conf conf = {0};
	double dw[ROUNDS_MAX], dr[ROUNDS_MAX], vw[ROUNDS_MAX], vr[ROUNDS_MAX];
	double lw[ROUNDS_MAX], lr[ROUNDS_MAX];
	uint32_t rounds = 3;
	hid_t fapl;

	if (argc < 3 || argc > 5 || (g_mib = strtoull(argv[2], NULL, 10)) == 0) {
		fprintf(stderr, "usage: strata_bench_hdf5 DIR MIB [BLOCK "
			"[ROUNDS]]\n");
		return 2;
	}
	if (argc >= 4)
		g_block = strtoull(argv[3], NULL, 0);
	if (argc == 5)
		rounds = (uint32_t)strtoul(argv[4], NULL, 10);
	if (rounds == 0 || rounds > ROUNDS_MAX || g_block < 512 ||
	    g_block > MIB || (g_block & (g_block - 1)) != 0) {
		fprintf(stderr, "strata_bench_hdf5: ROUNDS 1..%u, BLOCK a power "
			"of two from 512 to 1M\n", ROUNDS_MAX);
		return 2;
	}
	snprintf(g_store, sizeof g_store, "%s/store", argv[1]);
	snprintf(g_local, sizeof g_local, "%s/local.h5", argv[1]);
	snprintf(g_yaml, sizeof g_yaml, "%s/store.yaml", argv[1]);
	mkdir(argv[1], 0755);
	store_make();
	conf.data_dir = g_store;
	conf.block_size = (uint32_t)g_block;
	fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (H5Pset_fapl_strata(fapl, NULL, &conf) < 0)
		die("H5Pset_fapl_strata", strata_h5_errno(), strata_h5_errmsg());
	/* rounds alternate the three, so that a load that comes and goes
	 * on the machine weighs on each alike; medians reported */
	for (uint32_t r = 0; r < rounds; r++) {
		direct(&dw[r], &dr[r]);
		vw[r] = h5_write("strata://default/@bench.hdf5.vfd", fapl);
		vr[r] = h5_read("strata://default/@bench.hdf5.vfd", fapl);
		lw[r] = h5_write(g_local, H5P_DEFAULT);
		lr[r] = h5_read(g_local, H5P_DEFAULT);
		unlink(g_local);
		fprintf(stderr, "round %u: direct %.1f/%.1f vfd %.1f/%.1f local "
			"%.1f/%.1f MiB/s\n", r + 1, dw[r], dr[r], vw[r], vr[r],
			lw[r], lr[r]);
	}
	H5Pclose(fapl);
	unlink(g_yaml);
	clovis_store_destroy(g_store);
	rmdir(argv[1]);
	printf("h5bench direct-write %.1f MiB/s\nh5bench direct-read %.1f MiB/s\n"
	       "h5bench vfd-write %.1f MiB/s\nh5bench vfd-read %.1f MiB/s\n"
	       "h5bench local-write %.1f MiB/s\nh5bench local-read %.1f MiB/s\n",
	       median(dw, rounds), median(dr, rounds), median(vw, rounds),
	       median(vr, rounds), median(lw, rounds), median(lr, rounds));
	return 0;
}
