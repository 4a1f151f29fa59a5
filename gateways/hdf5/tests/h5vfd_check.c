/*
 * h5vfd_check.c — the C side of tests/integ/hdf5_vfd_test.sh: one HDF5
 * program run through the Strata driver (a strata:// TARGET) or through
 * HDF5's default sec2 driver (a local path), so that the two files can be
 * compared with h5dump.
 *
 *   h5vfd_check [STORE] write TARGET     create the file: groups, attributes,
 *                                        datasets of ints, floats, a
 *                                        compound, fixed and variable
 *                                        strings; contiguous, chunked,
 *                                        chunked+deflate, extendible
 *   h5vfd_check [STORE] extend TARGET    reopen read-write: extend two
 *                                        datasets, add a dataset and an
 *                                        attribute
 *   h5vfd_check [STORE] verify TARGET [extended]
 *                                        reopen read-only, check every value
 *                                        (and the extension's)
 *   h5vfd_check [STORE] rmw TARGET       reopen read-write: read the
 *                                        extended "big" chunk by chunk, each
 *                                        read followed by an overwrite of
 *                                        the next chunk and its read-back
 *                                        (the driver's read-ahead must not
 *                                        serve old bytes), then every
 *                                        chunk written back as it was
 *   h5vfd_check [STORE] export URL FILE  copy the object's EOF bytes to a
 *                                        local FILE through HDF5's H5FD
 *                                        calls (the driver's own read path)
 *   h5vfd_check [STORE] open URL MODE    H5Fopen (rdonly, rdwr) or H5Fcreate
 *                                        (trunc, excl); prints "open ok" or
 *                                        "open failed rc=-N (NAME): MESSAGE"
 *   h5vfd_check [STORE] setfapl URL      H5Pset_fapl_strata() alone, same
 *                                        output
 *   h5vfd_check [STORE] mkcont ID        create container ID (clovis)
 * STORE: --data DIR | --cluster FILE, [--nvram DIR] [--block SIZE]; none:
 * STRATA_H5_DATA / STRATA_H5_CLUSTER.  Exit 0 when everything checked
 * holds, 1 otherwise (the failure printed), 2 on bad usage, 3 for an open
 * that failed (open, setfapl).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "clovis/clovis.h"
#include "gateways/hdf5/strata_h5.h"

#define NR 100
#define NC 50
#define NF 1000
#define NF2 2500
#define NBIG (1u << 20)
#define NBIG2 (NBIG + (1u << 19))
#define NCMP 20

static struct strata_h5_conf conf;

struct rec {
	int id;
	double x;
	char name[16];
};

static int fails;

static void bad(const char *what)
{
	fprintf(stderr, "h5vfd_check: FAIL %s\n", what);
	fails++;
}

static hid_t fapl_for(const char *target)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);

	if (strncmp(target, "strata://", 9) == 0 &&
	    H5Pset_fapl_strata(fapl, NULL, &conf) < 0) {
		fprintf(stderr, "h5vfd_check: H5Pset_fapl_strata: %s\n",
			strata_h5_errmsg());
		exit(1);
	}
	return fapl;
}

static hid_t cmp_type(void)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct rec));
	hid_t s = H5Tcopy(H5T_C_S1);

	H5Tset_size(s, 16);
	H5Tinsert(t, "id", HOFFSET(struct rec, id), H5T_NATIVE_INT);
	H5Tinsert(t, "x", HOFFSET(struct rec, x), H5T_NATIVE_DOUBLE);
	H5Tinsert(t, "name", HOFFSET(struct rec, name), s);
	H5Tclose(s);
	return t;
}

static void rec_of(int i, struct rec *r)
{
	memset(r, 0, sizeof *r);
	r->id = i * 7;
	r->x = i / 3.0;
	snprintf(r->name, sizeof r->name, "rec-%03d", i);
}

static double fval(size_t i)
{
	return (double)i * 0.5 - 3.25;
}

static int64_t bval(size_t i)
{
	return (int64_t)(i * 2654435761u % 1000003u);
}

/* Write dataset name of one dimension n (type mt) from buf. */
static void put(hid_t loc, const char *name, hid_t ft, hid_t mt, hsize_t n,
		hsize_t maxn, hsize_t chunk, int deflate, const void *buf)
{
	hid_t sp = H5Screate_simple(1, &n, &maxn);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	hid_t d;

	if (chunk != 0)
		H5Pset_chunk(dcpl, 1, &chunk);
	if (deflate)
		H5Pset_deflate(dcpl, 6);
	d = H5Dcreate2(loc, name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (d < 0 || H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
		bad(name);
	H5Dclose(d);
	H5Pclose(dcpl);
	H5Sclose(sp);
}

static void attr_put(hid_t loc, const char *name, hid_t t, hsize_t n,
		     const void *v)
{
	hid_t sp = n == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, NULL);
	hid_t a = H5Acreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);

	if (a < 0 || H5Awrite(a, t, v) < 0)
		bad(name);
	H5Aclose(a);
	H5Sclose(sp);
}

static int do_write(const char *target)
{
	hid_t fapl = fapl_for(target), f, g1, g2, sp, d, str, vstr, ct;
	hsize_t dims[2] = {NR, NC}, unl = H5S_UNLIMITED;
	static int ints[NR][NC];
	static double fl[NF];
	static int64_t *big;
	struct rec recs[NCMP];
	char fixed[4][10] = {"alpha", "beta", "gamma", "delta"};
	const char *vs[3] = {"a", "variable length string", "z"};
	int iat[3] = {1, 2, 3};
	double dat = 2.5;

	f = H5Fcreate(target, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	if (f < 0) {
		fprintf(stderr, "h5vfd_check: create %s: %s\n", target,
			strata_h5_errmsg());
		return 1;
	}
	big = malloc(sizeof *big * NBIG);
	for (int i = 0; i < NR; i++)
		for (int j = 0; j < NC; j++)
			ints[i][j] = i * NC + j;
	for (size_t i = 0; i < NF; i++)
		fl[i] = fval(i);
	for (size_t i = 0; i < NBIG; i++)
		big[i] = bval(i);
	for (int i = 0; i < NCMP; i++)
		rec_of(i, &recs[i]);
	/* contiguous 2-D ints */
	sp = H5Screate_simple(2, dims, NULL);
	d = H5Dcreate2(f, "ints", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT,
		       H5P_DEFAULT);
	if (d < 0 || H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
			      ints) < 0)
		bad("ints");
	attr_put(d, "units", H5T_NATIVE_INT, 3, iat);
	H5Dclose(d);
	H5Sclose(sp);
	/* chunked extendible floats, chunked big int64 */
	put(f, "floats", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, NF, unl, 64, 0, fl);
	put(f, "big", H5T_STD_I64LE, H5T_NATIVE_INT64, NBIG, unl, 32768, 0, big);
	g1 = H5Gcreate2(f, "g1", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	g2 = H5Gcreate2(g1, "g2", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	attr_put(g1, "scale", H5T_NATIVE_DOUBLE, 0, &dat);
	put(g1, "zipped", H5T_STD_I64LE, H5T_NATIVE_INT64, 100000, 100000,
	    10000, 1, big);
	ct = cmp_type();
	put(g2, "compound", ct, ct, NCMP, NCMP, 8, 0, recs);
	H5Tclose(ct);
	str = H5Tcopy(H5T_C_S1);
	H5Tset_size(str, 10);
	put(f, "fixed_strings", str, str, 4, 4, 0, 0, fixed);
	vstr = H5Tcopy(H5T_C_S1);
	H5Tset_size(vstr, H5T_VARIABLE);
	put(g1, "vlen_strings", vstr, vstr, 3, 3, 0, 0, vs);
	attr_put(f, "title", vstr, 0, &vs[1]);
	H5Tclose(str);
	H5Tclose(vstr);
	H5Gclose(g2);
	H5Gclose(g1);
	free(big);
	if (H5Fclose(f) < 0)
		bad("close");
	H5Pclose(fapl);
	return fails != 0;
}

/* Extend dataset name from n to n2 elements with the values of gen. */
static void extend(hid_t f, const char *name, hid_t mt, hsize_t n, hsize_t n2,
		   const void *tail)
{
	hid_t d = H5Dopen2(f, name, H5P_DEFAULT), fs, ms;
	hsize_t cnt = n2 - n;

	if (d < 0 || H5Dset_extent(d, &n2) < 0) {
		bad(name);
		return;
	}
	fs = H5Dget_space(d);
	H5Sselect_hyperslab(fs, H5S_SELECT_SET, &n, NULL, &cnt, NULL);
	ms = H5Screate_simple(1, &cnt, NULL);
	if (H5Dwrite(d, mt, ms, fs, H5P_DEFAULT, tail) < 0)
		bad(name);
	H5Sclose(ms);
	H5Sclose(fs);
	H5Dclose(d);
}

static int do_extend(const char *target)
{
	hid_t fapl = fapl_for(target), f, d;
	static double fl[NF2 - NF];
	int64_t *big = malloc(sizeof *big * (NBIG2 - NBIG));
	int late[5] = {5, 4, 3, 2, 1};

	f = H5Fopen(target, H5F_ACC_RDWR, fapl);
	if (f < 0) {
		fprintf(stderr, "h5vfd_check: open %s: %s\n", target,
			strata_h5_errmsg());
		return 1;
	}
	for (size_t i = NF; i < NF2; i++)
		fl[i - NF] = fval(i);
	for (size_t i = NBIG; i < NBIG2; i++)
		big[i - NBIG] = bval(i);
	extend(f, "floats", H5T_NATIVE_DOUBLE, NF, NF2, fl);
	extend(f, "big", H5T_NATIVE_INT64, NBIG, NBIG2, big);
	put(f, "g1/g2/late", H5T_STD_I32LE, H5T_NATIVE_INT, 5, 5, 0, 0, late);
	d = H5Dopen2(f, "ints", H5P_DEFAULT);
	attr_put(d, "extended", H5T_NATIVE_INT, 0, &late[0]);
	H5Dclose(d);
	free(big);
	if (H5Fclose(f) < 0)
		bad("close");
	H5Pclose(fapl);
	return fails != 0;
}

static void get(hid_t f, const char *name, hid_t mt, void *buf)
{
	hid_t d = H5Dopen2(f, name, H5P_DEFAULT);

	if (d < 0 || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
		bad(name);
	H5Dclose(d);
}

static hsize_t extent(hid_t f, const char *name)
{
	hid_t d = H5Dopen2(f, name, H5P_DEFAULT), s = H5Dget_space(d);
	hsize_t n = 0;

	H5Sget_simple_extent_dims(s, &n, NULL);
	H5Sclose(s);
	H5Dclose(d);
	return n;
}

static void verify_vlen(hid_t f)
{
	hid_t vstr = H5Tcopy(H5T_C_S1), sp;
	char *got[3] = {NULL, NULL, NULL};
	hid_t d = H5Dopen2(f, "g1/vlen_strings", H5P_DEFAULT);

	H5Tset_size(vstr, H5T_VARIABLE);
	if (d < 0 || H5Dread(d, vstr, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) < 0 ||
	    got[1] == NULL || strcmp(got[1], "variable length string") != 0)
		bad("vlen_strings");
	sp = H5Dget_space(d);
	H5Dvlen_reclaim(vstr, sp, H5P_DEFAULT, got);
	H5Sclose(sp);
	H5Dclose(d);
	H5Tclose(vstr);
}

static int do_verify(const char *target, int extended)
{
	hid_t fapl = fapl_for(target), f, ct, str;
	static int ints[NR][NC];
	static double fl[NF2];
	int64_t *big = malloc(sizeof *big * NBIG2), *z = malloc(8 * 100000);
	struct rec recs[NCMP], r;
	char fixed[4][10];
	hsize_t nf = extended ? NF2 : NF, nb = extended ? NBIG2 : NBIG;

	f = H5Fopen(target, H5F_ACC_RDONLY, fapl);
	if (f < 0) {
		fprintf(stderr, "h5vfd_check: open %s: %s\n", target,
			strata_h5_errmsg());
		return 1;
	}
	get(f, "ints", H5T_NATIVE_INT, ints);
	for (int i = 0; i < NR; i++)
		for (int j = 0; j < NC; j++)
			if (ints[i][j] != i * NC + j) {
				bad("ints value");
				i = NR;
				break;
			}
	if (extent(f, "floats") != nf || extent(f, "big") != nb)
		bad("extents");
	get(f, "floats", H5T_NATIVE_DOUBLE, fl);
	for (size_t i = 0; i < nf; i++)
		if (fl[i] != fval(i)) {
			bad("floats value");
			break;
		}
	get(f, "big", H5T_NATIVE_INT64, big);
	for (size_t i = 0; i < nb; i++)
		if (big[i] != bval(i)) {
			fprintf(stderr, "big[%zu] = %lld\n", i, (long long)big[i]);
			bad("big value");
			break;
		}
	get(f, "g1/zipped", H5T_NATIVE_INT64, z);
	for (size_t i = 0; i < 100000; i++)
		if (z[i] != bval(i)) {
			bad("zipped value");
			break;
		}
	ct = cmp_type();
	get(f, "g1/g2/compound", ct, recs);
	H5Tclose(ct);
	for (int i = 0; i < NCMP; i++) {
		rec_of(i, &r);
		if (recs[i].id != r.id || recs[i].x != r.x ||
		    strcmp(recs[i].name, r.name) != 0) {
			bad("compound value");
			break;
		}
	}
	str = H5Tcopy(H5T_C_S1);
	H5Tset_size(str, 10);
	get(f, "fixed_strings", str, fixed);
	if (strcmp(fixed[2], "gamma") != 0)
		bad("fixed_strings value");
	H5Tclose(str);
	verify_vlen(f);
	if (extended) {
		int late[5] = {0};

		get(f, "g1/g2/late", H5T_NATIVE_INT, late);
		if (late[0] != 5 || late[4] != 1)
			bad("late value");
		if (H5Aexists_by_name(f, "ints", "extended", H5P_DEFAULT) <= 0)
			bad("attribute extended");
	}
	free(big);
	free(z);
	H5Fclose(f);
	H5Pclose(fapl);
	if (fails == 0)
		printf("verified %s%s\n", target, extended ? " (extended)" : "");
	return fails != 0;
}

/* Chunk k of "big" (32768 values) into or from buf: one H5Dread or
 * H5Dwrite, which with the chunk cache off is one driver call. */
static int big_io(hid_t d, hsize_t k, int64_t *buf, int wr)
{
	hsize_t start = k * 32768, cnt = 32768;
	hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &cnt, NULL);
	herr_t rc;

	H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &cnt, NULL);
	rc = wr ? H5Dwrite(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, buf) :
		  H5Dread(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, buf);
	H5Sclose(ms);
	H5Sclose(fs);
	return rc < 0 ? -1 : 0;
}

/*
 * Reads and writes interleaved in one open, as read-ahead must see them:
 * "big" read chunk by chunk (each read of 256 KiB that follows the last
 * launches the read of the next chunk), and after reading chunk k, chunk
 * k + 1 overwritten with other values and read back: the read must give
 * the new values, not the read-ahead's old ones.  Every chunk is then
 * written back, so the file ends as it was.
 */
static int do_rmw(const char *target)
{
	hid_t fapl = fapl_for(target), f, d, dapl = H5Pcreate(H5P_DATASET_ACCESS);
	int64_t *buf = malloc(8 * 32768);
	hsize_t nk = NBIG2 / 32768;

	f = H5Fopen(target, H5F_ACC_RDWR, fapl);
	if (f < 0) {
		fprintf(stderr, "h5vfd_check: open %s: %s\n", target,
			strata_h5_errmsg());
		return 1;
	}
	H5Pset_chunk_cache(dapl, 0, 0, 1.0); /* every chunk to the driver */
	d = H5Dopen2(f, "big", dapl);
	for (hsize_t k = 0; k + 1 < nk && fails == 0; k++) {
		if (big_io(d, k, buf, 0) != 0 || buf[5] != bval(k * 32768 + 5))
			bad("rmw: read of chunk k");
		for (size_t i = 0; i < 32768; i++)
			buf[i] = -bval((k + 1) * 32768 + i) - 1;
		if (big_io(d, k + 1, buf, 1) != 0)
			bad("rmw: overwrite of chunk k + 1");
		memset(buf, 0, 8 * 32768);
		if (big_io(d, k + 1, buf, 0) != 0 ||
		    buf[7] != -bval((k + 1) * 32768 + 7) - 1) {
			fprintf(stderr, "chunk %llu: %lld\n", (unsigned long long)k + 1,
				(long long)buf[7]);
			bad("rmw: chunk k + 1 read back (stale read-ahead?)");
		}
		for (size_t i = 0; i < 32768; i++)
			buf[i] = bval((k + 1) * 32768 + i);
		if (big_io(d, k + 1, buf, 1) != 0)
			bad("rmw: chunk k + 1 written back");
	}
	H5Dclose(d);
	H5Pclose(dapl);
	free(buf);
	if (H5Fclose(f) < 0)
		bad("close");
	H5Pclose(fapl);
	if (fails == 0)
		printf("read-write interleaved on %llu chunks of %s\n",
		       (unsigned long long)nk, target);
	return fails != 0;
}

/* The object's bytes through the H5FD calls, as a local file. */
static int do_export(const char *url, const char *out)
{
	hid_t fapl = fapl_for(url);
	H5FD_t *fd = H5FDopen(url, H5F_ACC_RDONLY, fapl, HADDR_UNDEF);
	FILE *o = fopen(out, "wb");
	char *buf = malloc(1u << 20);
	haddr_t eof, a;

	if (fd == NULL || o == NULL) {
		fprintf(stderr, "h5vfd_check: export %s: %s\n", url,
			fd == NULL ? strata_h5_errmsg() : strerror(errno));
		return 1;
	}
	eof = H5FDget_eof(fd, H5FD_MEM_DEFAULT);
	H5FDset_eoa(fd, H5FD_MEM_DEFAULT, eof);
	for (a = 0; a < eof; a += 1u << 20) {
		size_t n = eof - a < (1u << 20) ? (size_t)(eof - a) : 1u << 20;

		if (H5FDread(fd, H5FD_MEM_DRAW, H5P_DEFAULT, a, n, buf) < 0 ||
		    fwrite(buf, 1, n, o) != n) {
			bad("export read");
			break;
		}
	}
	H5FDclose(fd);
	fclose(o);
	free(buf);
	H5Pclose(fapl);
	return fails != 0;
}

static int report(int ok)
{
	int rc = strata_h5_errno();

	if (ok) {
		printf("open ok\n");
		return 0;
	}
	printf("open failed rc=%d (%s): %s\n", rc, strerror(-rc),
	       strata_h5_errmsg());
	return 3;
}

static int do_open(const char *url, const char *mode)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f;

	if (H5Pset_fapl_strata(fapl, NULL, &conf) < 0)
		return report(0);
	if (strcmp(mode, "rdonly") == 0 || strcmp(mode, "rdwr") == 0)
		f = H5Fopen(url, mode[2] == 'o' ? H5F_ACC_RDONLY : H5F_ACC_RDWR,
			    fapl);
	else
		f = H5Fcreate(url, mode[0] == 't' ? H5F_ACC_TRUNC : H5F_ACC_EXCL,
			      H5P_DEFAULT, fapl);
	if (f >= 0)
		H5Fclose(f);
	H5Pclose(fapl);
	return report(f >= 0);
}

static int do_setfapl(const char *url)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	int ok = H5Pset_fapl_strata(fapl, url, &conf) >= 0;

	H5Pclose(fapl);
	return report(ok);
}

static int do_mkcont(const char *ids)
{
	struct clovis_conf cc = {0};
	struct clovis *cl = NULL;
	struct clovis_container c;
	struct clovis_id id;
	struct clovis_op *op = NULL;
	int rc;

	if (conf.cluster_file != NULL) {
		cc.cc_mode = CLOVIS_MODE_CLUSTER;
		cc.cc_cluster_conf = conf.cluster_file;
	} else {
		cc.cc_data_dir = conf.data_dir;
		cc.cc_nvram_dir = conf.nvram_dir;
		cc.cc_flags = CLOVIS_CONF_CREATE;
	}
	rc = clovis_id_parse(ids, &id);
	if (rc == 0)
		rc = clovis_init(&cl, &cc);
	if (rc == 0)
		rc = clovis_container_init(&c, cl, &id);
	if (rc == 0)
		rc = clovis_entity_op(&c.co_entity, CLOVIS_EO_CREATE, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		fprintf(stderr, "h5vfd_check: mkcont %s: %s\n", ids,
			clovis_errmsg());
	clovis_fini(cl);
	return rc != 0;
}

int main(int argc, char **argv)
{
	int i = 1;

	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (strcmp(argv[i], "--data") == 0)
			conf.data_dir = argv[i + 1];
		else if (strcmp(argv[i], "--cluster") == 0)
			conf.cluster_file = argv[i + 1];
		else if (strcmp(argv[i], "--nvram") == 0)
			conf.nvram_dir = argv[i + 1];
		else if (strcmp(argv[i], "--block") == 0)
			conf.block_size = (uint32_t)strtoul(argv[i + 1], NULL, 0);
		else
			goto usage;
	}
	if (argc - i == 2 && strcmp(argv[i], "write") == 0)
		return do_write(argv[i + 1]);
	if (argc - i == 2 && strcmp(argv[i], "extend") == 0)
		return do_extend(argv[i + 1]);
	if ((argc - i == 2 || argc - i == 3) && strcmp(argv[i], "verify") == 0)
		return do_verify(argv[i + 1], argc - i == 3);
	if (argc - i == 2 && strcmp(argv[i], "rmw") == 0)
		return do_rmw(argv[i + 1]);
	if (argc - i == 3 && strcmp(argv[i], "export") == 0)
		return do_export(argv[i + 1], argv[i + 2]);
	if (argc - i == 3 && strcmp(argv[i], "open") == 0)
		return do_open(argv[i + 1], argv[i + 2]);
	if (argc - i == 2 && strcmp(argv[i], "setfapl") == 0)
		return do_setfapl(argv[i + 1]);
	if (argc - i == 2 && strcmp(argv[i], "mkcont") == 0)
		return do_mkcont(argv[i + 1]);
usage:
	fprintf(stderr, "usage: h5vfd_check [--data DIR | --cluster FILE] "
		"[--nvram DIR] [--block SIZE] write|extend|verify [extended]|"
		"rmw|export|open|setfapl|mkcont ...\n");
	return 2;
}
