/*
 * h5gen.c — the HDF5 files of tests/integ/h5map_test.sh, made with the
 * HDF5 C library alone (no Strata, no h5py).
 *
 *   h5gen DIR     writes into DIR:
 *     basic.h5    every feature the mapping supports (gateways/hdf5/h5map.h):
 *                 nested and empty groups; integers of every size, sign and
 *                 byte order; floats; fixed and variable-length strings;
 *                 enum, opaque, bitfield, array and compound types (nested,
 *                 packed big-endian); null, scalar and 1..4-dim spaces;
 *                 contiguous, compact, never-allocated contiguous; chunked
 *                 with edge chunks, deflate + shuffle, fletcher32, szip
 *                 (when the library encodes it), sparse chunks with a fill
 *                 value, unlimited dims, an empty chunked dataset, one
 *                 chunk larger than 256 KiB; attributes on groups and
 *                 datasets (strings, arrays, null space); hard links to a
 *                 dataset, to a group and to the root (a cycle); soft
 *                 links, one dangling; a 4.9 MB contiguous dataset
 *     latest.h5   the same with the latest file format and creation
 *                 order tracked on groups and attributes
 *     ext.h5, ref.h5, vlenseq.h5, named.h5, vlencomp.h5
 *                 each with one unsupported feature under /grp: an
 *                 external link, object references, a variable-length
 *                 sequence, a committed datatype, a variable-length string
 *                 inside a compound
 *     deep.h5     groups nested as deep as the mapping goes (H5M_DEPTH_MAX
 *                 256 groups on the path, the root included: /g/g/... 255
 *                 below the root), a dataset with an attribute at the
 *                 bottom
 *     deeper.h5   one group more (257 on the path): refused
 *     vlensparse.h5
 *                 chunked datasets of variable-length strings with chunks
 *                 never allocated: /s1 (100 elements, chunks of 10, two
 *                 of them written), /s2 (7x9, chunks of 3x4, a patch over
 *                 two edge chunks)
 * Exits 0, or 1 with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#define CHECK(x) do { if ((x) < 0) { fprintf(stderr, "h5gen: %s:%d: %s " \
	"failed\n", __FILE__, __LINE__, #x); exit(1); } } while (0)

/* Write a dataset of type t (memory type mt), dims, optional dcpl. */
static hid_t dset(hid_t loc, const char *name, hid_t t, hid_t mt, int rank,
		  const hsize_t *dims, hid_t dcpl, const void *data)
{
	hid_t sp = rank < 0 ? H5Screate(H5S_NULL) : rank == 0 ?
		   H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims, NULL);
	hid_t d;

	CHECK(sp);
	d = H5Dcreate2(loc, name, t, sp, H5P_DEFAULT,
		       dcpl >= 0 ? dcpl : H5P_DEFAULT, H5P_DEFAULT);
	CHECK(d);
	if (data != NULL)
		CHECK(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
	H5Sclose(sp);
	return d;
}

static void attr(hid_t loc, const char *name, hid_t t, hid_t mt, int rank,
		 const hsize_t *dims, const void *data)
{
	hid_t sp = rank < 0 ? H5Screate(H5S_NULL) : rank == 0 ?
		   H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims, NULL);
	hid_t a;

	CHECK(sp);
	a = H5Acreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
	CHECK(a);
	if (data != NULL)
		CHECK(H5Awrite(a, mt, data));
	H5Aclose(a);
	H5Sclose(sp);
}

static hid_t str_type(size_t size, H5T_str_t pad, H5T_cset_t cset)
{
	hid_t t = H5Tcopy(H5T_C_S1);

	CHECK(H5Tset_size(t, size));
	CHECK(H5Tset_strpad(t, pad));
	CHECK(H5Tset_cset(t, cset));
	return t;
}

static hid_t group(hid_t loc, const char *name, hid_t gcpl)
{
	hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT,
			     gcpl >= 0 ? gcpl : H5P_DEFAULT, H5P_DEFAULT);

	CHECK(g);
	return g;
}

static void root_attrs(hid_t f)
{
	hsize_t d3 = 3, d2 = 2;
	double coeffs[3] = { 1.5, -2.25, 1e-300 };
	int32_t version = 3;
	const char *note = "variable length note";
	const char *utf8[2] = { "caf\xc3\xa9", "na\xc3\xafve" };
	hid_t t = str_type(17, H5T_STR_NULLTERM, H5T_CSET_ASCII);
	hid_t vs = str_type(H5T_VARIABLE, H5T_STR_NULLTERM, H5T_CSET_ASCII);
	hid_t vu = str_type(H5T_VARIABLE, H5T_STR_NULLTERM, H5T_CSET_UTF8);

	attr(f, "title", t, t, 0, NULL, "Strata HDF5 test");
	attr(f, "version", H5T_STD_I32LE, H5T_NATIVE_INT32, 0, NULL, &version);
	attr(f, "note", vs, vs, 0, NULL, &note);
	attr(f, "coeffs", H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, 1, &d3, coeffs);
	attr(f, "empty", H5T_STD_I32LE, H5T_NATIVE_INT32, -1, NULL, NULL);
	attr(f, "utf8", vu, vu, 1, &d2, utf8);
	H5Tclose(t);
	H5Tclose(vs);
	H5Tclose(vu);
}

static void ints(hid_t f)
{
	hid_t g = group(f, "ints", -1), d, s;
	int8_t i8[10];
	uint8_t u8[10];
	int16_t i16[3][4];
	uint16_t u16[7];
	int32_t i32[5][6];
	uint32_t u32[2][3][4];
	int64_t i64[2][2][2][3];
	uint64_t u64 = 18446744073709551615ull;
	hsize_t d10 = 10, d34[2] = { 3, 4 }, d7 = 7, d56[2] = { 5, 6 };
	hsize_t d234[3] = { 2, 3, 4 }, d2223[4] = { 2, 2, 2, 3 }, d1 = 1;
	float scale = 0.5f;
	int i;

	for (i = 0; i < 10; i++) {
		i8[i] = (int8_t)(i - 5);
		u8[i] = (uint8_t)(250 + i / 2);
	}
	for (i = 0; i < 12; i++)
		i16[i / 4][i % 4] = (int16_t)(i * -1000);
	for (i = 0; i < 7; i++)
		u16[i] = (uint16_t)(i * 9000);
	for (i = 0; i < 30; i++)
		i32[i / 6][i % 6] = i * 100000 - 7;
	for (i = 0; i < 24; i++)
		((uint32_t *)u32)[i] = 4000000000u - (uint32_t)i;
	for (i = 0; i < 24; i++)
		((int64_t *)i64)[i] = -((int64_t)1 << 40) * i;
	H5Dclose(dset(g, "i8", H5T_STD_I8LE, H5T_NATIVE_INT8, 1, &d10, -1, i8));
	H5Dclose(dset(g, "u8", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, &d10, -1, u8));
	H5Dclose(dset(g, "i16be", H5T_STD_I16BE, H5T_NATIVE_INT16, 2, d34, -1,
		      i16));
	H5Dclose(dset(g, "u16", H5T_STD_U16LE, H5T_NATIVE_UINT16, 1, &d7, -1,
		      u16));
	d = dset(g, "i32", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, d56, -1, i32);
	s = str_type(7, H5T_STR_NULLTERM, H5T_CSET_ASCII);
	attr(d, "units", s, s, 0, NULL, "meters");
	attr(d, "scale", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, &d1, &scale);
	H5Tclose(s);
	H5Dclose(d);
	H5Dclose(dset(g, "u32be", H5T_STD_U32BE, H5T_NATIVE_UINT32, 3, d234,
		      -1, u32));
	H5Dclose(dset(g, "i64", H5T_STD_I64LE, H5T_NATIVE_INT64, 4, d2223, -1,
		      i64));
	H5Dclose(dset(g, "u64", H5T_STD_U64BE, H5T_NATIVE_UINT64, 0, NULL, -1,
		      &u64));
	H5Gclose(g);
}

static void floats_strings(hid_t f)
{
	hid_t g = group(f, "floats", -1), t, dcpl;
	float f32[4][5];
	double f64[6] = { 0.0, -0.0, 1.0 / 3, 6.02214076e23, -1e-310, 42 };
	double s64 = 2.718281828459045;
	const char *vl[5] = { "alpha", "", NULL, "delta with spaces",
			      "epsilon\nnewline" };
	const char *vc[6] = { "a", "bb", "ccc", "dddd", "eeeee", "ffffff" };
	char fixed[4][8] = { "one", "two", "three", "fourfour" };
	char sp[3][6] = { "ab   ", "cdefg ", "h     " };
	hsize_t d45[2] = { 4, 5 }, d6 = 6, d5 = 5, d4 = 4, d3 = 3, c4 = 4;
	int i;

	for (i = 0; i < 20; i++)
		f32[i / 5][i % 5] = (float)i * 1.25f - 3;
	H5Dclose(dset(g, "f32", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, d45, -1,
		      f32));
	H5Dclose(dset(g, "f64be", H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, 1, &d6,
		      -1, f64));
	H5Dclose(dset(g, "f64s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, NULL,
		      -1, &s64));
	H5Gclose(g);
	g = group(f, "strings", -1);
	t = str_type(8, H5T_STR_NULLPAD, H5T_CSET_ASCII);
	H5Dclose(dset(g, "fixed", t, t, 1, &d4, -1, fixed));
	H5Tclose(t);
	t = str_type(6, H5T_STR_SPACEPAD, H5T_CSET_ASCII);
	H5Dclose(dset(g, "fixed_sp", t, t, 1, &d3, -1, sp));
	H5Tclose(t);
	t = str_type(H5T_VARIABLE, H5T_STR_NULLTERM, H5T_CSET_UTF8);
	H5Dclose(dset(g, "vlen", t, t, 1, &d5, -1, vl));
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	CHECK(H5Pset_chunk(dcpl, 1, &c4));
	CHECK(H5Pset_deflate(dcpl, 4));
	H5Dclose(dset(g, "vlen_chunked", t, t, 1, &d6, dcpl, vc));
	H5Dclose(dset(g, "scalar", t, t, 0, NULL, -1, &vl[3]));
	H5Pclose(dcpl);
	H5Tclose(t);
	H5Gclose(g);
}

struct rec {
	int32_t id;
	double x;
	char name[8];
	float v[3];
	struct { uint16_t a; int8_t b; } n;
};

static void compound(hid_t f)
{
	hid_t g = group(f, "compound", -1), t, nt, at, st, pt;
	struct rec r[4];
	hsize_t d4 = 4, a3 = 3, ad[2] = { 2, 3 }, d2 = 2;
	int32_t arr[2][2][3];
	uint8_t packed[2][7];
	int i;

	memset(r, 0, sizeof r);
	for (i = 0; i < 4; i++) {
		r[i].id = i * 11;
		r[i].x = i / 7.0;
		snprintf(r[i].name, sizeof r[i].name, "rec%d", i);
		r[i].v[0] = (float)i;
		r[i].v[1] = (float)-i;
		r[i].v[2] = 0.5f * (float)i;
		r[i].n.a = (uint16_t)(60000 + i);
		r[i].n.b = (int8_t)-i;
	}
	nt = H5Tcreate(H5T_COMPOUND, sizeof r[0].n);
	CHECK(H5Tinsert(nt, "a", 0, H5T_NATIVE_UINT16));
	CHECK(H5Tinsert(nt, "b", 2, H5T_NATIVE_INT8));
	st = str_type(8, H5T_STR_NULLTERM, H5T_CSET_ASCII);
	at = H5Tarray_create2(H5T_NATIVE_FLOAT, 1, &a3);
	t = H5Tcreate(H5T_COMPOUND, sizeof r[0]);
	CHECK(H5Tinsert(t, "id", HOFFSET(struct rec, id), H5T_NATIVE_INT32));
	CHECK(H5Tinsert(t, "x", HOFFSET(struct rec, x), H5T_NATIVE_DOUBLE));
	CHECK(H5Tinsert(t, "name", HOFFSET(struct rec, name), st));
	CHECK(H5Tinsert(t, "v", HOFFSET(struct rec, v), at));
	CHECK(H5Tinsert(t, "n", HOFFSET(struct rec, n), nt));
	H5Dclose(dset(g, "table", t, t, 1, &d4, -1, r));
	attr(g, "first", t, t, 0, NULL, &r[1]);
	pt = H5Tcreate(H5T_COMPOUND, 7);
	CHECK(H5Tinsert(pt, "be32", 0, H5T_STD_I32BE));
	CHECK(H5Tinsert(pt, "le16", 4, H5T_STD_U16LE));
	CHECK(H5Tinsert(pt, "c", 6, H5T_STD_I8LE));
	for (i = 0; i < 14; i++)
		((uint8_t *)packed)[i] = (uint8_t)(i * 17 + 3);
	H5Dclose(dset(g, "packed", pt, pt, 1, &d2, -1, packed));
	H5Tclose(at);
	at = H5Tarray_create2(H5T_STD_I32LE, 2, ad);
	for (i = 0; i < 12; i++)
		((int32_t *)arr)[i] = i * i - 20;
	H5Dclose(dset(g, "arrays", at, at, 1, &d2, -1, arr));
	attr(g, "arr_attr", at, at, 0, NULL, arr);
	H5Tclose(at);
	H5Tclose(pt);
	H5Tclose(t);
	H5Tclose(st);
	H5Tclose(nt);
	H5Gclose(g);
}

static void misc_types(hid_t f)
{
	hid_t g = group(f, "types", -1), e, o, b, dcpl;
	int8_t ev[4] = { 0, 2, 1, 2 }, v;
	uint8_t ob[3][4], bits[4] = { 0x01, 0x80, 0xff, 0x5a };
	int32_t small[5] = { 5, 4, 3, 2, 1 };
	float fill = 2.5f;
	hsize_t d4 = 4, d3 = 3, d5 = 5, d8 = 8;
	int i;

	e = H5Tenum_create(H5T_NATIVE_INT8);
	v = 0; CHECK(H5Tenum_insert(e, "RED", &v));
	v = 1; CHECK(H5Tenum_insert(e, "GREEN", &v));
	v = 2; CHECK(H5Tenum_insert(e, "BLUE", &v));
	H5Dclose(dset(g, "enum", e, e, 1, &d4, -1, ev));
	o = H5Tcreate(H5T_OPAQUE, 4);
	CHECK(H5Tset_tag(o, "blob of 4"));
	for (i = 0; i < 12; i++)
		((uint8_t *)ob)[i] = (uint8_t)(255 - i);
	H5Dclose(dset(g, "opaque", o, o, 1, &d3, -1, ob));
	b = H5Tcopy(H5T_STD_B8LE);
	H5Dclose(dset(g, "bitfield", b, b, 1, &d4, -1, bits));
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	CHECK(H5Pset_layout(dcpl, H5D_COMPACT));
	H5Dclose(dset(g, "compact", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, &d5,
		      dcpl, small));
	H5Pclose(dcpl);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	CHECK(H5Pset_fill_value(dcpl, H5T_NATIVE_FLOAT, &fill));
	CHECK(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE));
	H5Dclose(dset(g, "never_written", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1,
		      &d8, dcpl, NULL));
	H5Pclose(dcpl);
	H5Dclose(dset(g, "nulldata", H5T_STD_I32LE, H5T_NATIVE_INT32, -1, NULL,
		      -1, NULL));
	H5Tclose(e);
	H5Tclose(o);
	H5Tclose(b);
	H5Gclose(g);
}

/* A chunked dataset: dcpl with chunk dims c, then data (NULL: none). */
static hid_t chunked(hid_t g, const char *name, hid_t t, hid_t mt, int rank,
		     const hsize_t *dims, const hsize_t *max, const hsize_t *c,
		     hid_t dcpl, const void *data)
{
	hid_t sp = H5Screate_simple(rank, dims, max), d;

	CHECK(sp);
	CHECK(H5Pset_chunk(dcpl, rank, c));
	d = H5Dcreate2(g, name, t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	CHECK(d);
	if (data != NULL)
		CHECK(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
	H5Sclose(sp);
	H5Pclose(dcpl);
	return d;
}

static void chunks(hid_t f)
{
	hid_t g = group(f, "chunked", -1), dcpl, d, fs, ms;
	static int32_t plain[10][13], un[3][10];
	static double gz[20][30][4];
	static uint8_t fl[1000];
	static float big[300][300];
	static uint16_t sz[64][64];
	int16_t fill = -1, patch[7][12];
	hsize_t d2[2] = { 10, 13 }, c2[2] = { 4, 4 }, d3[3] = { 20, 30, 4 };
	hsize_t c3[3] = { 5, 7, 4 }, ds[2] = { 100, 100 }, cs[2] = { 10, 10 };
	hsize_t du[2] = { 3, 0 }, mu[2] = { 3, H5S_UNLIMITED }, cu[2] = { 3, 4 };
	hsize_t de = 0, me = H5S_UNLIMITED, ce = 16, dfl = 1000, cfl = 100;
	hsize_t db[2] = { 300, 300 }, dz[2] = { 64, 64 }, cz[2] = { 32, 32 };
	hsize_t start[2] = { 13, 45 }, cnt[2] = { 7, 12 }, ext[2] = { 3, 10 };
	unsigned cfg = 0;
	int i;

	for (i = 0; i < 130; i++)
		((int32_t *)plain)[i] = i * 3 - 50;
	H5Dclose(chunked(g, "plain", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, d2,
			 NULL, c2, H5Pcreate(H5P_DATASET_CREATE), plain));
	for (i = 0; i < 2400; i++)
		((double *)gz)[i] = (i % 37) * 0.125;
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	CHECK(H5Pset_shuffle(dcpl));
	CHECK(H5Pset_deflate(dcpl, 6));
	H5Dclose(chunked(g, "gzip", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, d3,
			 NULL, c3, dcpl, gz));
	/* sparse: a fill value and one patch over a few chunks */
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	CHECK(H5Pset_fill_value(dcpl, H5T_NATIVE_INT16, &fill));
	d = chunked(g, "sparse", H5T_STD_I16LE, H5T_NATIVE_INT16, 2, ds, NULL,
		    cs, dcpl, NULL);
	for (i = 0; i < 84; i++)
		((int16_t *)patch)[i] = (int16_t)(i * 7);
	fs = H5Dget_space(d);
	ms = H5Screate_simple(2, cnt, NULL);
	CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL));
	CHECK(H5Dwrite(d, H5T_NATIVE_INT16, ms, fs, H5P_DEFAULT, patch));
	H5Sclose(fs);
	H5Sclose(ms);
	H5Dclose(d);
	/* unlimited, extended after creation */
	d = chunked(g, "unlimited", H5T_STD_I32BE, H5T_NATIVE_INT32, 2, du, mu,
		    cu, H5Pcreate(H5P_DATASET_CREATE), NULL);
	CHECK(H5Dset_extent(d, ext));
	for (i = 0; i < 30; i++)
		((int32_t *)un)[i] = 1000 - i;
	CHECK(H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, un));
	H5Dclose(d);
	H5Dclose(chunked(g, "empty", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, &de,
			 &me, &ce, H5Pcreate(H5P_DATASET_CREATE), NULL));
	for (i = 0; i < 1000; i++)
		fl[i] = (uint8_t)(i * 13);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	CHECK(H5Pset_fletcher32(dcpl));
	H5Dclose(chunked(g, "fletcher", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, &dfl,
			 NULL, &cfl, dcpl, fl));
	for (i = 0; i < 90000; i++)
		((float *)big)[i] = (float)(i % 1000) / 8;
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	CHECK(H5Pset_deflate(dcpl, 1));
	H5Dclose(chunked(g, "bigchunk", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2,
			 db, NULL, db, dcpl, big));
	if (H5Zfilter_avail(H5Z_FILTER_SZIP) > 0 &&
	    H5Zget_filter_info(H5Z_FILTER_SZIP, &cfg) >= 0 &&
	    (cfg & H5Z_FILTER_CONFIG_ENCODE_ENABLED)) {
		for (i = 0; i < 4096; i++)
			((uint16_t *)sz)[i] = (uint16_t)(i / 3);
		dcpl = H5Pcreate(H5P_DATASET_CREATE);
		CHECK(H5Pset_szip(dcpl, H5_SZIP_NN_OPTION_MASK, 8));
		H5Dclose(chunked(g, "szip", H5T_STD_U16LE, H5T_NATIVE_UINT16, 2,
				 dz, NULL, cz, dcpl, sz));
	}
	H5Gclose(g);
}

static void tree_links(hid_t f)
{
	hid_t g, a, b, c, d;
	static double bigc[1024][600];
	hsize_t d1 = 3, db[2] = { 1024, 600 };
	int32_t depth = 4, leaf[3] = { 7, 8, 9 };
	int i;

	g = group(f, "nested", -1);
	a = group(g, "a", -1);
	b = group(a, "b", -1);
	c = group(b, "c", -1);
	d = group(c, "d", -1);
	attr(d, "depth", H5T_STD_I32LE, H5T_NATIVE_INT32, 0, NULL, &depth);
	H5Dclose(dset(d, "leaf", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, &d1, -1,
		      leaf));
	H5Gclose(d);
	H5Gclose(c);
	H5Gclose(b);
	H5Gclose(a);
	H5Gclose(g);
	H5Gclose(group(f, "empty", -1));
	g = group(f, "links", -1);
	CHECK(H5Lcreate_hard(f, "/ints/i32", g, "i32_again", H5P_DEFAULT,
			     H5P_DEFAULT));
	CHECK(H5Lcreate_hard(f, "/floats", g, "floats_alias", H5P_DEFAULT,
			     H5P_DEFAULT));
	CHECK(H5Lcreate_hard(f, "/", g, "root", H5P_DEFAULT, H5P_DEFAULT));
	CHECK(H5Lcreate_soft("/ints/i8", g, "to_i8", H5P_DEFAULT, H5P_DEFAULT));
	CHECK(H5Lcreate_soft("/no/such/thing", g, "dangling", H5P_DEFAULT,
			     H5P_DEFAULT));
	H5Gclose(g);
	g = group(f, "big", -1);
	for (i = 0; i < 1024 * 600; i++)
		((double *)bigc)[i] = (double)i / 3.0;
	H5Dclose(dset(g, "contig", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, db, -1,
		      bigc));
	H5Gclose(g);
}

/* basic.h5 or latest.h5. */
static void make_full(const char *dir, const char *name, int latest)
{
	char path[4096];
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE);
	hid_t f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (latest) {
		CHECK(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST,
					   H5F_LIBVER_LATEST));
		CHECK(H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED |
						 H5P_CRT_ORDER_INDEXED));
		CHECK(H5Pset_attr_creation_order(fcpl, H5P_CRT_ORDER_TRACKED));
	}
	f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
	CHECK(f);
	root_attrs(f);
	ints(f);
	floats_strings(f);
	compound(f);
	misc_types(f);
	chunks(f);
	tree_links(f);
	CHECK(H5Fclose(f));
	H5Pclose(fapl);
	H5Pclose(fcpl);
}

/* One small file with a supported dataset and one unsupported feature
 * under /grp, made by fn. */
static void make_bad(const char *dir, const char *name, void (*fn)(hid_t, hid_t))
{
	char path[4096];
	hid_t f, g;
	int32_t v[2] = { 1, 2 };
	hsize_t d2 = 2;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	CHECK(f);
	H5Dclose(dset(f, "ok", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, &d2, -1, v));
	g = group(f, "grp", -1);
	fn(f, g);
	H5Gclose(g);
	CHECK(H5Fclose(f));
}

static void bad_ext(hid_t f, hid_t g)
{
	CHECK(H5Lcreate_external("other.h5", "/x", g, "ext", H5P_DEFAULT,
				 H5P_DEFAULT));
}

static void bad_ref(hid_t f, hid_t g)
{
	hobj_ref_t r[1];
	hsize_t d1 = 1;

	CHECK(H5Rcreate(&r[0], f, "/ok", H5R_OBJECT, -1));
	H5Dclose(dset(g, "refs", H5T_STD_REF_OBJ, H5T_STD_REF_OBJ, 1, &d1, -1,
		      r));
}

static void bad_vlenseq(hid_t f, hid_t g)
{
	hid_t t = H5Tvlen_create(H5T_NATIVE_INT);
	int v[3] = { 1, 2, 3 };
	hvl_t h = { 3, v };
	hsize_t d1 = 1;

	H5Dclose(dset(g, "seq", t, t, 1, &d1, -1, &h));
	H5Tclose(t);
}

static void bad_named(hid_t f, hid_t g)
{
	hid_t t = H5Tcopy(H5T_STD_I32LE);

	CHECK(H5Tcommit2(g, "mytype", t, H5P_DEFAULT, H5P_DEFAULT,
			 H5P_DEFAULT));
	H5Tclose(t);
}

static void bad_vlencomp(hid_t f, hid_t g)
{
	struct { int32_t a; const char *s; } r = { 1, "x" };
	hid_t s = str_type(H5T_VARIABLE, H5T_STR_NULLTERM, H5T_CSET_ASCII);
	hid_t t = H5Tcreate(H5T_COMPOUND, sizeof r);
	hsize_t d1 = 1;

	CHECK(H5Tinsert(t, "a", 0, H5T_NATIVE_INT32));
	CHECK(H5Tinsert(t, "s", sizeof(void *), s));
	H5Dclose(dset(g, "comp", t, t, 1, &d1, -1, &r));
	H5Tclose(t);
	H5Tclose(s);
}

/* deep.h5 (nest groups below the root) or deeper.h5. */
static void make_deep(const char *dir, const char *name, int nest)
{
	char path[4096];
	hid_t f, g[300];
	int32_t v[3] = { 1, 2, 3 }, depth = nest + 1;
	hsize_t d3 = 3;
	int i;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	CHECK(f);
	g[0] = f;
	for (i = 1; i <= nest; i++)
		g[i] = group(g[i - 1], "g", -1);
	attr(g[nest], "depth", H5T_STD_I32LE, H5T_NATIVE_INT32, 0, NULL, &depth);
	H5Dclose(dset(g[nest], "bottom", H5T_STD_I32LE, H5T_NATIVE_INT32, 1,
		      &d3, -1, v));
	for (i = nest; i >= 1; i--)
		H5Gclose(g[i]);
	CHECK(H5Fclose(f));
}

/* Write strings s (n) at off, count of a chunked string dataset d. */
static void vlen_patch(hid_t d, int rank, const hsize_t *off,
		       const hsize_t *count, const char **s)
{
	hid_t fs = H5Dget_space(d), ms = H5Screate_simple(rank, count, NULL);
	hid_t t = str_type(H5T_VARIABLE, H5T_STR_NULLTERM, H5T_CSET_ASCII);

	CHECK(fs);
	CHECK(ms);
	CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, count, NULL));
	CHECK(H5Dwrite(d, t, ms, fs, H5P_DEFAULT, s));
	H5Tclose(t);
	H5Sclose(ms);
	H5Sclose(fs);
}

static void make_vlensparse(const char *dir)
{
	char path[4096], text[12][16];
	const char *s[12];
	hsize_t d1 = 100, c1 = 10, o1 = 30, n1 = 10, o1b = 75, n1b = 3;
	hsize_t d2[2] = { 7, 9 }, c2[2] = { 3, 4 }, o2[2] = { 5, 6 };
	hsize_t n2[2] = { 2, 3 };
	hid_t f, t, d;
	int i;

	for (i = 0; i < 12; i++) {
		snprintf(text[i], sizeof text[i], "str %d%s", i * 7,
			 i % 3 ? "" : " long");
		s[i] = text[i];
	}
	snprintf(path, sizeof path, "%s/vlensparse.h5", dir);
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	CHECK(f);
	t = str_type(H5T_VARIABLE, H5T_STR_NULLTERM, H5T_CSET_ASCII);
	d = chunked(f, "s1", t, t, 1, &d1, NULL, &c1,
		    H5Pcreate(H5P_DATASET_CREATE), NULL);
	vlen_patch(d, 1, &o1, &n1, s);
	vlen_patch(d, 1, &o1b, &n1b, s + 4);
	H5Dclose(d);
	d = chunked(f, "s2", t, t, 2, d2, NULL, c2,
		    H5Pcreate(H5P_DATASET_CREATE), NULL);
	vlen_patch(d, 2, o2, n2, s + 2);
	H5Dclose(d);
	H5Tclose(t);
	CHECK(H5Fclose(f));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: h5gen DIR\n");
		return 2;
	}
	make_full(argv[1], "basic.h5", 0);
	make_full(argv[1], "latest.h5", 1);
	make_bad(argv[1], "ext.h5", bad_ext);
	make_bad(argv[1], "ref.h5", bad_ref);
	make_bad(argv[1], "vlenseq.h5", bad_vlenseq);
	make_bad(argv[1], "named.h5", bad_named);
	make_bad(argv[1], "vlencomp.h5", bad_vlencomp);
	make_deep(argv[1], "deep.h5", 255);
	make_deep(argv[1], "deeper.h5", 256);
	make_vlensparse(argv[1]);
	return 0;
}
