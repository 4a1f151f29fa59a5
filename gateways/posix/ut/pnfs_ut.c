/*
 * pnfs_ut.c — suite "pnfs": the flexfiles layout of a Strata file and its
 * XDR (gateways/posix/pnfs_ff.h), in memory, no network.
 *
 *  - XDR against hand-built byte vectors (every field written out below,
 *    big-endian, with its padding): ff_layout4 with one and with 2 x 2
 *    data servers, ff_device_addr4 over IPv4, IPv6 and two addresses with
 *    two versions, layout4, the data server handle, and the whole layout
 *    of a PLAIN file as the mapping builds it;
 *  - decode of each vector and encode back to the same bytes; every
 *    encoder error, every size of a short buffer (-ENOSPC, nothing
 *    written past it); decoder errors (truncation at every length,
 *    padding, bools, counts, limits, trailing bytes, netids);
 *  - addresses: host:port to universal addresses (IPv4, IPv6, mapped)
 *    and every malformed form; device ids against published FNV-1a
 *    values;
 *  - the mapping: PLAIN, MIRROR (with copies lost), PDCLUST over a
 *    seeded placement of units on distinct devices, with the sparse striping rule of
 *    RFC 8435 checked byte range by byte range; spans; every error;
 *  - a bounded fuzz loop: truncated and corrupted buffers through every
 *    decoder must return an error or decode to something that encodes
 *    back to the very same bytes.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "gateways/posix/pnfs_ff.h"
#include "tests/ut.h"

/* ------------------------------------------------------------- vectors */

/* V1: ff_layout4, one mirror of one data server (96 bytes). */
static const uint8_t v1_layout[] = {
	/* ffl_stripe_unit: uint64 0 (one data server: MUST be 0) */
	0, 0, 0, 0, 0, 0, 0, 0,
	/* ffl_mirrors<>: count 1 */
	0, 0, 0, 1,
	/* ffl_mirrors[0].ffm_data_servers<>: count 1 */
	0, 0, 0, 1,
	/* ffds_deviceid: opaque[16], a multiple of 4: no padding */
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	/* ffds_efficiency: 1 */
	0, 0, 0, 1,
	/* ffds_stateid.seqid: 0x01020304, big-endian */
	0x01, 0x02, 0x03, 0x04,
	/* ffds_stateid.other: opaque[12] */
	0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
	0xa8, 0xa9, 0xaa, 0xab,
	/* ffds_fh_vers<>: count 1 */
	0, 0, 0, 1,
	/* ffds_fh_vers[0]: length 5, 5 bytes, 3 zero bytes of padding */
	0, 0, 0, 5, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0, 0, 0,
	/* ffds_user "nfs": length 3, 1 byte of padding */
	0, 0, 0, 3, 'n', 'f', 's', 0,
	/* ffds_group "users": length 5, 3 bytes of padding */
	0, 0, 0, 5, 'u', 's', 'e', 'r', 's', 0, 0, 0,
	/* ffl_flags: FF_FLAGS_NO_LAYOUTCOMMIT */
	0, 0, 0, 1,
	/* ffl_stats_collect_hint: 60 */
	0, 0, 0, 60,
};

/* One ff_data_server4 of V2 (64 bytes), every field derived from X. */
#define V2_DS(X)                                                        \
	/* ffds_deviceid: 16 times X */                                 \
	X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,                 \
	/* ffds_efficiency: X */                                        \
	0, 0, 0, X,                                                     \
	/* ffds_stateid: the anonymous one, seqid 0 and other 0 */      \
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,                 \
	/* ffds_fh_vers<>: count 1; handle of 4 bytes: no padding */    \
	0, 0, 0, 1, 0, 0, 0, 4, 'u', 0, 0, X,                           \
	/* ffds_user "0" and ffds_group "0": length 1, 3 of padding */  \
	0, 0, 0, 1, '0', 0, 0, 0,                                       \
	0, 0, 0, 1, '0', 0, 0, 0

/* V2: ff_layout4, 2 mirrors x 2 data servers, stripe unit 64 KiB. */
static const uint8_t v2_layout[] = {
	/* ffl_stripe_unit: 0x10000 as uint64 */
	0, 0, 0, 0, 0, 1, 0, 0,
	/* ffl_mirrors<>: count 2 */
	0, 0, 0, 2,
	/* mirror 0: ffm_data_servers<> count 2, then both */
	0, 0, 0, 2, V2_DS(0x11), V2_DS(0x12),
	/* mirror 1 */
	0, 0, 0, 2, V2_DS(0x21), V2_DS(0x22),
	/* ffl_flags: NO_LAYOUTCOMMIT | WRITE_ONE_MIRROR */
	0, 0, 0, 9,
	/* ffl_stats_collect_hint: 0 */
	0, 0, 0, 0,
};

/* ff_device_addr4 of "10.0.0.1:2049", NFSv3, 1 MiB (52 bytes). */
static const uint8_t v_dev4[] = {
	/* ffda_netaddrs<>: count 1 */
	0, 0, 0, 1,
	/* na_r_netid "tcp": length 3, 1 of padding */
	0, 0, 0, 3, 't', 'c', 'p', 0,
	/* na_r_addr "10.0.0.1.8.1" (2049 = 8 * 256 + 1): 12, no padding */
	0, 0, 0, 12, '1', '0', '.', '0', '.', '0', '.', '1', '.', '8', '.',
	'1',
	/* ffda_versions<>: count 1 */
	0, 0, 0, 1,
	/* ffdv_version 3, ffdv_minorversion 0 */
	0, 0, 0, 3, 0, 0, 0, 0,
	/* ffdv_rsize, ffdv_wsize: 0x100000 */
	0, 0x10, 0, 0, 0, 0x10, 0, 0,
	/* ffdv_tightly_coupled: false */
	0, 0, 0, 0,
};

/* ff_device_addr4 of "[2001:db8::1]:20049", rsize 32 KiB, wsize 64 KiB. */
static const uint8_t v_dev6[] = {
	/* ffda_netaddrs<>: count 1 */
	0, 0, 0, 1,
	/* na_r_netid "tcp6": length 4, no padding */
	0, 0, 0, 4, 't', 'c', 'p', '6',
	/* na_r_addr "2001:db8::1.78.81" (20049 = 78 * 256 + 81): 17
	 * bytes, 3 of padding */
	0, 0, 0, 17, '2', '0', '0', '1', ':', 'd', 'b', '8', ':', ':', '1',
	'.', '7', '8', '.', '8', '1', 0, 0, 0,
	/* ffda_versions<>: count 1: NFSv3.0 */
	0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0,
	/* ffdv_rsize 0x8000, ffdv_wsize 0x10000 */
	0, 0, 0x80, 0, 0, 1, 0, 0,
	/* ffdv_tightly_coupled: false */
	0, 0, 0, 0,
};

/* ff_device_addr4 with two addresses and two versions. */
static const uint8_t v_dev2[] = {
	/* ffda_netaddrs<>: count 2 */
	0, 0, 0, 2,
	/* [0] "tcp" (1 of padding), "10.0.0.2.8.1" (12, none) */
	0, 0, 0, 3, 't', 'c', 'p', 0,
	0, 0, 0, 12, '1', '0', '.', '0', '.', '0', '.', '2', '.', '8', '.',
	'1',
	/* [1] "tcp6" (none), "::1.8.1" (7, 1 of padding) */
	0, 0, 0, 4, 't', 'c', 'p', '6',
	0, 0, 0, 7, ':', ':', '1', '.', '8', '.', '1', 0,
	/* ffda_versions<>: count 2 */
	0, 0, 0, 2,
	/* [0] NFSv3.0, 4096, 4096, loosely coupled */
	0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x10, 0, 0, 0, 0, 0,
	/* [1] NFSv4.1, 65536, 65536, tightly coupled */
	0, 0, 0, 4, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1,
};

/* The data server handle of unit 0x0102030405060708 of a PDCLUST object
 * 1122334455667788:99aabbccddeeff00 at map epoch 0x0a0b0c0d. */
static const uint8_t v_fh[PNFS_FF_FH_SIZE] = {
	'S', 'F',               /* magic */
	1,                      /* version */
	2,                      /* layout: CLOVIS_LAYOUT_PDCLUST */
	0x0a, 0x0b, 0x0c, 0x0d, /* epoch */
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* id, high half */
	0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, /* id, low half */
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* unit */
};

/* The whole ff_layout4 the mapping gives a PLAIN object
 * 1122334455667788:99aabbccddeeff00 at epoch 5 on server "a" at
 * 10.0.0.1:2049, efficiency 7, user and group "0" (116 bytes). */
static const uint8_t v_plain[] = {
	/* ffl_stripe_unit 0; ffl_mirrors count 1; ffm_data_servers 1 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1,
	/* ffds_deviceid: FNV-1a 64 of "a" (published: af63dc4c8601ec8c),
	 * then of "tcp 10.0.0.1.8.1\n" */
	0xaf, 0x63, 0xdc, 0x4c, 0x86, 0x01, 0xec, 0x8c,
	0xc6, 0x6c, 0x9c, 0x41, 0xf8, 0xe9, 0x5e, 0xf7,
	/* ffds_efficiency 7 */
	0, 0, 0, 7,
	/* ffds_stateid: anonymous */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* ffds_fh_vers: count 1, length 32 (no padding) */
	0, 0, 0, 1, 0, 0, 0, 32,
	/* the handle: "SF", version 1, layout PLAIN (1), epoch 5 */
	'S', 'F', 1, 1, 0, 0, 0, 5,
	/* object id */
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
	0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00,
	/* unit 0: the whole object */
	0, 0, 0, 0, 0, 0, 0, 0,
	/* ffds_user "0", ffds_group "0" */
	0, 0, 0, 1, '0', 0, 0, 0, 0, 0, 0, 1, '0', 0, 0, 0,
	/* ffl_flags NO_LAYOUTCOMMIT, ffl_stats_collect_hint 0 */
	0, 0, 0, 1, 0, 0, 0, 0,
};

/* layout4 around V1: bytes 128 KiB + 64 KiB, READ (28 + 96 bytes). */
static const uint8_t v_lo4_head[] = {
	/* lo_offset 0x20000 */
	0, 0, 0, 0, 0, 2, 0, 0,
	/* lo_length 0x10000 */
	0, 0, 0, 0, 0, 1, 0, 0,
	/* lo_iomode LAYOUTIOMODE4_READ */
	0, 0, 0, 1,
	/* lo_content.loc_type LAYOUT4_FLEX_FILES */
	0, 0, 0, 4,
	/* lo_content.loc_body<>: length 96, then V1 */
	0, 0, 0, 96,
};

_Static_assert(sizeof v1_layout == 96, "V1 size");
_Static_assert(sizeof v2_layout == 8 + 4 + 2 * (4 + 2 * 64) + 8, "V2");
_Static_assert(sizeof v_dev4 == 52, "dev4 size");
_Static_assert(sizeof v_dev6 == 60, "dev6 size");
_Static_assert(sizeof v_plain == 116, "plain size");
_Static_assert(sizeof v_lo4_head == 28, "layout4 head size");

/* ------------------------------------------------------------- helpers */

#define DS_MAX 256u
#define BUF_MAX 65536u

static struct pnfs_ff_ds *ds_alloc(void)
{
	struct pnfs_ff_ds *d = calloc(DS_MAX, sizeof *d);

	CU_ASSERT_FATAL(d != NULL);
	return d;
}

/* V1 as a struct. */
static void v1_struct(struct pnfs_ff_layout *l, struct pnfs_ff_ds *ds)
{
	memset(ds, 0, sizeof *ds);
	for (int i = 0; i < 16; i++)
		ds->ds_deviceid[i] = (uint8_t)i;
	ds->ds_efficiency = 1;
	ds->ds_stateid_seqid = 0x01020304;
	for (int i = 0; i < 12; i++)
		ds->ds_stateid_other[i] = (uint8_t)(0xa0 + i);
	ds->ds_fh_nr = 1;
	ds->ds_fh_len[0] = 5;
	memcpy(ds->ds_fh[0], "\xaa\xbb\xcc\xdd\xee", 5);
	strcpy(ds->ds_user, "nfs");
	strcpy(ds->ds_group, "users");
	*l = (struct pnfs_ff_layout){0, 1, 1, ds, 1, 60};
}

/* V2 as a struct. */
static void v2_struct(struct pnfs_ff_layout *l, struct pnfs_ff_ds *ds)
{
	static const uint8_t xs[4] = {0x11, 0x12, 0x21, 0x22};

	for (int i = 0; i < 4; i++) {
		memset(&ds[i], 0, sizeof ds[i]);
		memset(ds[i].ds_deviceid, xs[i], 16);
		ds[i].ds_efficiency = xs[i];
		ds[i].ds_fh_nr = 1;
		ds[i].ds_fh_len[0] = 4;
		memcpy(ds[i].ds_fh[0], "u\0\0", 3);
		ds[i].ds_fh[0][3] = xs[i];
		strcpy(ds[i].ds_user, "0");
		strcpy(ds[i].ds_group, "0");
	}
	*l = (struct pnfs_ff_layout){0x10000, 2, 2, ds, 9, 0};
}

static bool ds_same(const struct pnfs_ff_ds *a, const struct pnfs_ff_ds *b)
{
	return memcmp(a, b, sizeof *a) == 0;
}

static bool layout_same(const struct pnfs_ff_layout *a,
			const struct pnfs_ff_layout *b)
{
	if (a->fl_stripe_unit != b->fl_stripe_unit ||
	    a->fl_mirrors != b->fl_mirrors || a->fl_width != b->fl_width ||
	    a->fl_flags != b->fl_flags || a->fl_stats_hint != b->fl_stats_hint)
		return false;
	for (uint32_t i = 0; i < a->fl_mirrors * a->fl_width; i++)
		if (!ds_same(&a->fl_ds[i], &b->fl_ds[i]))
			return false;
	return true;
}

/* Encode l and compare with want[0..n). */
static bool layout_bytes(const struct pnfs_ff_layout *l, const uint8_t *want,
			 size_t n)
{
	uint8_t buf[1024];
	size_t len = 0;
	int rc = pnfs_ff_layout_encode(l, buf, sizeof buf, &len);

	return rc == 0 && len == n && memcmp(buf, want, n) == 0;
}

static bool msg_has(const char *s)
{
	if (strstr(err_msg(), s) != NULL)
		return true;
	fprintf(stderr, "\n  message \"%s\" lacks \"%s\"\n", err_msg(), s);
	return false;
}

static struct pnfs_ff_server mk_server(const char *name, const char *hp)
{
	return (struct pnfs_ff_server){.sv_name = name, .sv_hostport = hp,
				       .sv_efficiency = 1};
}

/* The 16-byte device id of a server (asserted to succeed). */
static void devid_of(const struct pnfs_ff_server *sv, uint8_t id[16])
{
	CU_ASSERT_EQUAL_FATAL(pnfs_ff_deviceid(sv, id), 0);
}

/* ------------------------------------------------------- XDR vectors */

static void test_layout_vectors(void)
{
	struct pnfs_ff_ds *ds = ds_alloc(), *dd = ds_alloc();
	struct pnfs_ff_layout l, d;

	v1_struct(&l, ds);
	CU_ASSERT(layout_bytes(&l, v1_layout, sizeof v1_layout));
	CU_ASSERT_EQUAL(pnfs_ff_layout_decode(v1_layout, sizeof v1_layout, &d,
					      dd, DS_MAX), 0);
	CU_ASSERT(layout_same(&l, &d));
	CU_ASSERT_EQUAL(d.fl_ds, dd);
	CU_ASSERT_STRING_EQUAL(dd[0].ds_group, "users");
	CU_ASSERT_EQUAL(dd[0].ds_stateid_seqid, 0x01020304u);

	v2_struct(&l, ds);
	CU_ASSERT(layout_bytes(&l, v2_layout, sizeof v2_layout));
	CU_ASSERT_EQUAL(pnfs_ff_layout_decode(v2_layout, sizeof v2_layout, &d,
					      dd, DS_MAX), 0);
	CU_ASSERT(layout_same(&l, &d));
	CU_ASSERT_EQUAL(d.fl_stripe_unit, 65536u);
	/* mirror 1, data server 0 is the third entry: 0x21 */
	CU_ASSERT_EQUAL(dd[1 * 2 + 0].ds_deviceid[0], 0x21);
	CU_ASSERT_EQUAL(dd[1 * 2 + 0].ds_fh[0][3], 0x21);
	/* two handles for one data server (NFSv3 and v4.1): round trip */
	v1_struct(&l, ds);
	ds[0].ds_fh_nr = 2;
	ds[0].ds_fh_len[1] = 128;
	memset(ds[0].ds_fh[1], 0x5a, 128);
	{
		uint8_t buf[512];
		size_t len;

		CU_ASSERT_EQUAL(pnfs_ff_layout_encode(&l, buf, sizeof buf,
						      &len), 0);
		CU_ASSERT_EQUAL(len, sizeof v1_layout + 4 + 128);
		CU_ASSERT_EQUAL(pnfs_ff_layout_decode(buf, len, &d, dd, 1), 0);
		CU_ASSERT(layout_same(&l, &d));
	}
	free(ds);
	free(dd);
}

static void test_devaddr_vectors(void)
{
	struct pnfs_ff_server sv = mk_server("s0", "10.0.0.1:2049");
	struct pnfs_ff_devaddr a, d;
	uint8_t buf[256];
	size_t len;

	CU_ASSERT_EQUAL(pnfs_ff_devaddr_make(&sv, &a), 0);
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_encode(&a, buf, sizeof buf, &len), 0);
	CU_ASSERT(len == sizeof v_dev4 && !memcmp(buf, v_dev4, len));
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(v_dev4, sizeof v_dev4, &d), 0);
	CU_ASSERT(memcmp(&a, &d, sizeof a) == 0);

	sv = mk_server("s1", "[2001:db8::1]:20049");
	sv.sv_rsize = 0x8000;
	sv.sv_wsize = 0x10000;
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_make(&sv, &a), 0);
	CU_ASSERT_STRING_EQUAL(a.fd_addrs[0].fa_uaddr, "2001:db8::1.78.81");
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_encode(&a, buf, sizeof buf, &len), 0);
	CU_ASSERT(len == sizeof v_dev6 && !memcmp(buf, v_dev6, len));
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(v_dev6, sizeof v_dev6, &d), 0);
	CU_ASSERT(memcmp(&a, &d, sizeof a) == 0);

	CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(v_dev2, sizeof v_dev2, &d), 0);
	CU_ASSERT_EQUAL(d.fd_addrs_nr, 2);
	CU_ASSERT_STRING_EQUAL(d.fd_addrs[1].fa_netid, "tcp6");
	CU_ASSERT_STRING_EQUAL(d.fd_addrs[1].fa_uaddr, "::1.8.1");
	CU_ASSERT_EQUAL(d.fd_versions_nr, 2);
	CU_ASSERT_EQUAL(d.fd_versions[0].fv_rsize, 4096);
	CU_ASSERT(!d.fd_versions[0].fv_tightly_coupled);
	CU_ASSERT_EQUAL(d.fd_versions[1].fv_version, 4);
	CU_ASSERT_EQUAL(d.fd_versions[1].fv_minor, 1);
	CU_ASSERT(d.fd_versions[1].fv_tightly_coupled);
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_encode(&d, buf, sizeof buf, &len), 0);
	CU_ASSERT(len == sizeof v_dev2 && !memcmp(buf, v_dev2, len));
}

static void test_seg_vector(void)
{
	struct pnfs_ff_ds *ds = ds_alloc(), *dd = ds_alloc();
	struct pnfs_ff_seg s = {0x20000, 0x10000, {0}}, d;
	uint8_t want[sizeof v_lo4_head + sizeof v1_layout], buf[256];
	uint32_t iomode = 0;
	size_t len;

	memcpy(want, v_lo4_head, sizeof v_lo4_head);
	memcpy(want + sizeof v_lo4_head, v1_layout, sizeof v1_layout);
	v1_struct(&s.sg_layout, ds);
	CU_ASSERT_EQUAL(pnfs_ff_seg_encode(&s, PNFS_FF_IOMODE_READ, buf,
					   sizeof buf, &len), 0);
	CU_ASSERT(len == sizeof want && !memcmp(buf, want, len));
	CU_ASSERT_EQUAL(pnfs_ff_seg_decode(want, sizeof want, &d, &iomode, dd,
					   DS_MAX), 0);
	CU_ASSERT_EQUAL(iomode, PNFS_FF_IOMODE_READ);
	CU_ASSERT_EQUAL(d.sg_offset, 0x20000);
	CU_ASSERT_EQUAL(d.sg_length, 0x10000);
	CU_ASSERT(layout_same(&s.sg_layout, &d.sg_layout));
	/* to the end of the file, RW */
	s.sg_length = PNFS_FF_LENGTH_EOF;
	CU_ASSERT_EQUAL(pnfs_ff_seg_encode(&s, PNFS_FF_IOMODE_RW, buf,
					   sizeof buf, &len), 0);
	CU_ASSERT(!memcmp(buf + 8, "\xff\xff\xff\xff\xff\xff\xff\xff", 8));
	CU_ASSERT_EQUAL(buf[19], 2);
	CU_ASSERT_EQUAL(pnfs_ff_seg_decode(buf, len, &d, &iomode, dd, DS_MAX),
			0);
	CU_ASSERT_EQUAL(d.sg_length, PNFS_FF_LENGTH_EOF);
	CU_ASSERT_EQUAL(iomode, PNFS_FF_IOMODE_RW);
	/* errors: iomode ANY, empty, past 2^64; another layout type */
	s.sg_length = 0x10000;
	CU_ASSERT_EQUAL(pnfs_ff_seg_encode(&s, PNFS_FF_IOMODE_ANY, buf,
					   sizeof buf, &len), -EINVAL);
	CU_ASSERT(msg_has("lo_iomode"));
	s.sg_length = 0;
	CU_ASSERT_EQUAL(pnfs_ff_seg_encode(&s, 1, buf, sizeof buf, &len),
			-EINVAL);
	s.sg_offset = UINT64_MAX - 10;
	s.sg_length = 12;
	CU_ASSERT_EQUAL(pnfs_ff_seg_encode(&s, 1, buf, sizeof buf, &len),
			-EINVAL);
	CU_ASSERT(msg_has("past 2^64"));
	memcpy(buf, want, sizeof want);
	buf[23] = 1; /* LAYOUT4_NFSV4_1_FILES */
	CU_ASSERT_EQUAL(pnfs_ff_seg_decode(buf, sizeof want, &d, &iomode, dd,
					   DS_MAX), -ENOTSUP);
	CU_ASSERT(msg_has("loc_type"));
	memcpy(buf, want, sizeof want);
	buf[19] = 3; /* lo_iomode ANY */
	CU_ASSERT_EQUAL(pnfs_ff_seg_decode(buf, sizeof want, &d, &iomode, dd,
					   DS_MAX), -EINVAL);
	memcpy(buf, want, sizeof want);
	buf[27] = 100; /* loc_body longer than the bytes left */
	CU_ASSERT_EQUAL(pnfs_ff_seg_decode(buf, sizeof want, &d, &iomode, dd,
					   DS_MAX), -EINVAL);
	memcpy(buf, want, sizeof want);
	buf[27] = 92; /* loc_body 4 short: ff_layout4 truncated */
	CU_ASSERT_EQUAL(pnfs_ff_seg_decode(buf, sizeof want, &d, &iomode, dd,
					   DS_MAX), -EINVAL);
	CU_ASSERT(msg_has("loc_body"));
	free(ds);
	free(dd);
}

static void test_fh(void)
{
	struct pnfs_ff_fh fh = {CLOVIS_LAYOUT_PDCLUST, 0x0a0b0c0d,
				{0x1122334455667788ull, 0x99aabbccddeeff00ull},
				0x0102030405060708ull}, p;
	uint8_t buf[PNFS_FF_FH_SIZE + 1];

	pnfs_ff_fh_make(&fh, buf);
	CU_ASSERT(memcmp(buf, v_fh, sizeof v_fh) == 0);
	CU_ASSERT_EQUAL(pnfs_ff_fh_parse(v_fh, sizeof v_fh, &p), 0);
	CU_ASSERT(memcmp(&p, &fh, sizeof p) == 0);
	CU_ASSERT_EQUAL(pnfs_ff_fh_parse(v_fh, 31, &p), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_fh_parse(v_fh, 33, &p), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_fh_parse(NULL, 32, &p), -EINVAL);
	memcpy(buf, v_fh, 32);
	buf[1] = 'G';
	CU_ASSERT_EQUAL(pnfs_ff_fh_parse(buf, 32, &p), -EINVAL);
	CU_ASSERT(msg_has("magic"));
	memcpy(buf, v_fh, 32);
	buf[2] = 2;
	CU_ASSERT_EQUAL(pnfs_ff_fh_parse(buf, 32, &p), -EINVAL);
	CU_ASSERT(msg_has("version"));
	buf[2] = 1;
	buf[3] = CLOVIS_LAYOUT_COMPOSITE;
	CU_ASSERT_EQUAL(pnfs_ff_fh_parse(buf, 32, &p), -EINVAL);
	buf[3] = 0;
	CU_ASSERT_EQUAL(pnfs_ff_fh_parse(buf, 32, &p), -EINVAL);
	CU_ASSERT(msg_has("layout"));
}

/* --------------------------------------------------------- addresses */

static void test_addr_hostport(void)
{
	static const struct {
		const char *hp, *netid, *uaddr;
	} ok[] = {
		{"10.0.0.1:2049", "tcp", "10.0.0.1.8.1"},
		{"192.168.1.20:20049", "tcp", "192.168.1.20.78.81"},
		{"127.0.0.1:1", "tcp", "127.0.0.1.0.1"},
		{"1.2.3.4:65535", "tcp", "1.2.3.4.255.255"},
		{"[::1]:2049", "tcp6", "::1.8.1"},
		{"[2001:DB8:0:0:0:0:0:1]:2049", "tcp6", "2001:db8::1.8.1"},
		{"[::ffff:10.0.0.1]:2049", "tcp6", "::ffff:10.0.0.1.8.1"},
		{"[fe80::1]:256", "tcp6", "fe80::1.1.0"},
	};
	static const char *const bad[] = {
		"", "10.0.0.1", "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536",
		"10.0.0.1:20a9", "10.0.0.1:+2049", "10.0.0.1:123456",
		"host.example:2049", "::1:2049", "[::1]2049", "[::1",
		"[fe80::1%eth0]:2049", "10.0.0.256:2049", "[10.0.0.1]:2049",
		":2049", "[]:2049", "10.0.0.1 :2049",
	};
	struct pnfs_ff_addr a;
	uint16_t port = 0;

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		CU_ASSERT_EQUAL(pnfs_ff_addr_from_hostport(ok[i].hp, &a), 0);
		CU_ASSERT_STRING_EQUAL(a.fa_netid, ok[i].netid);
		CU_ASSERT_STRING_EQUAL(a.fa_uaddr, ok[i].uaddr);
		CU_ASSERT_EQUAL(pnfs_ff_addr_check(&a, &port), 0);
	}
	CU_ASSERT_EQUAL(port, 256);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err_clear();
		if (pnfs_ff_addr_from_hostport(bad[i], &a) != -EINVAL)
			fprintf(stderr, "\n  accepted \"%s\"\n", bad[i]);
		CU_ASSERT(msg_has("host:port"));
	}
	CU_ASSERT_EQUAL(pnfs_ff_addr_from_hostport(NULL, &a), -EINVAL);
}

static void test_addr_check(void)
{
	static const struct {
		const char *netid, *uaddr;
		int rc;
	} cases[] = {
		{"tcp", "10.0.0.1.8.1", 0},
		{"tcp6", "::1.8.1", 0},
		{"tcp6", "::ffff:1.2.3.4.0.80", 0},
		{"tcp", "::1.8.1", -EINVAL},
		{"tcp6", "10.0.0.1.8.1", -EINVAL},
		{"tcp", "10.0.0.1.8", -EINVAL},
		{"tcp", "10.0.0.1.256.1", -EINVAL},
		{"tcp", "10.0.0.1.0.0", -EINVAL},
		{"tcp", "10.0.0.1.8.1.", -EINVAL},
		{"tcp", "10.0.0.1..1", -EINVAL},
		{"tcp", ".8.1", -EINVAL},
		{"tcp", "8.1", -EINVAL},
		{"tcp", "", -EINVAL},
		{"udp", "10.0.0.1.8.1", -ENOTSUP},
		{"rdma", "10.0.0.1.8.1", -ENOTSUP},
		{"", "10.0.0.1.8.1", -EINVAL},
	};
	struct pnfs_ff_addr a;
	uint16_t port;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memset(&a, 0, sizeof a);
		strcpy(a.fa_netid, cases[i].netid);
		strcpy(a.fa_uaddr, cases[i].uaddr);
		if (pnfs_ff_addr_check(&a, &port) != cases[i].rc)
			fprintf(stderr, "\n  %s %s: not %d\n", cases[i].netid,
				cases[i].uaddr, cases[i].rc);
		CU_ASSERT_EQUAL(pnfs_ff_addr_check(&a, &port), cases[i].rc);
	}
	memset(a.fa_netid, 'a', sizeof a.fa_netid); /* no NUL */
	CU_ASSERT_EQUAL(pnfs_ff_addr_check(&a, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_addr_check(NULL, NULL), -EINVAL);
}

static void test_deviceid(void)
{
	static const uint8_t want_a[16] = {
		0xaf, 0x63, 0xdc, 0x4c, 0x86, 0x01, 0xec, 0x8c, /* "a" */
		0xc6, 0x6c, 0x9c, 0x41, 0xf8, 0xe9, 0x5e, 0xf7, /* tcp ... */
	};
	static const uint8_t want_foobar[8] = {
		0x85, 0x94, 0x41, 0x71, 0xf7, 0x39, 0x67, 0xe8, /* "foobar" */
	};
	static const uint8_t want_v6[8] = {
		/* "tcp6 2001:db8::1.78.81\n" */
		0x65, 0x91, 0xf3, 0x55, 0x2d, 0x69, 0x39, 0xb6,
	};
	struct pnfs_ff_server sv = mk_server("a", "10.0.0.1:2049");
	uint8_t id[16], id2[16];
	char longname[PNFS_FF_NAME_MAX + 2];

	devid_of(&sv, id);
	CU_ASSERT(memcmp(id, want_a, 16) == 0);
	/* the same server given as netid + uaddr: the same id */
	sv = (struct pnfs_ff_server){.sv_name = "a", .sv_netid = "tcp",
				     .sv_uaddr = "10.0.0.1.8.1"};
	devid_of(&sv, id2);
	CU_ASSERT(memcmp(id, id2, 16) == 0);
	sv = mk_server("foobar", "10.0.0.1:2049");
	devid_of(&sv, id2);
	CU_ASSERT(memcmp(id2, want_foobar, 8) == 0);
	CU_ASSERT(memcmp(id2 + 8, want_a + 8, 8) == 0);
	/* a new address: a new id */
	sv = mk_server("a", "[2001:db8::1]:20049");
	devid_of(&sv, id2);
	CU_ASSERT(memcmp(id2, want_a, 8) == 0);
	CU_ASSERT(memcmp(id2 + 8, want_v6, 8) == 0);
	/* errors */
	sv.sv_name = NULL;
	CU_ASSERT_EQUAL(pnfs_ff_deviceid(&sv, id), -EINVAL);
	sv.sv_name = "";
	CU_ASSERT_EQUAL(pnfs_ff_deviceid(&sv, id), -EINVAL);
	CU_ASSERT(msg_has("sv_name"));
	memset(longname, 'x', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	sv.sv_name = longname;
	CU_ASSERT_EQUAL(pnfs_ff_deviceid(&sv, id), -EINVAL);
	sv = mk_server("a", "nfs.example:2049");
	CU_ASSERT_EQUAL(pnfs_ff_deviceid(&sv, id), -EINVAL);
	CU_ASSERT(msg_has("server a"));
	sv.sv_netid = "tcp"; /* both forms */
	sv.sv_uaddr = "10.0.0.1.8.1";
	CU_ASSERT_EQUAL(pnfs_ff_deviceid(&sv, id), -EINVAL);
	CU_ASSERT(msg_has("both"));
	sv.sv_hostport = NULL;
	sv.sv_netid = NULL; /* neither */
	CU_ASSERT_EQUAL(pnfs_ff_deviceid(&sv, id), -EINVAL);
	CU_ASSERT(msg_has("sv_netid"));
	CU_ASSERT_EQUAL(pnfs_ff_deviceid(NULL, id), -EINVAL);
}

/* ------------------------------------------------------------- mapping */

static const char *const hps[] = {
	"10.0.0.1:2049", "10.0.0.2:2049", "10.0.0.3:2049",
	"10.0.0.4:2049", "[2001:db8::5]:2049", "[2001:db8::6]:2049",
};
static const char *const names[] = {"s0", "s1", "s2", "s3", "s4", "s5"};

static void servers_init(struct pnfs_ff_server *sv, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++) {
		sv[i] = mk_server(names[i], hps[i]);
		sv[i].sv_efficiency = 10 + i;
	}
}

static struct pnfs_ff_file file_base(uint32_t layout)
{
	return (struct pnfs_ff_file){
		.fi_id = {0x1122334455667788ull, 0x99aabbccddeeff00ull},
		.fi_layout = layout,
		.fi_unit_shift = 16,
		.fi_data_units = 4,
		.fi_parity_units = 2,
		.fi_copies = 3,
		.fi_epoch = 5,
		.fi_flags = PNFS_FF_FLAGS_NO_LAYOUTCOMMIT,
		.fi_user = "0",
		.fi_group = "0",
	};
}

/* Does ds hold unit `unit` of f on server sv? */
static bool ds_is(const struct pnfs_ff_ds *ds, const struct pnfs_ff_file *f,
		  const struct pnfs_ff_server *sv, uint64_t unit)
{
	struct pnfs_ff_fh fh;
	uint8_t id[16];

	if (pnfs_ff_deviceid(sv, id) != 0 || memcmp(id, ds->ds_deviceid, 16) ||
	    ds->ds_fh_nr != 1 || pnfs_ff_fh_parse(ds->ds_fh[0],
						  ds->ds_fh_len[0], &fh) != 0)
		return false;
	return fh.fh_unit == unit && fh.fh_epoch == f->fi_epoch &&
	       fh.fh_layout == f->fi_layout &&
	       clovis_id_cmp(&fh.fh_id, &f->fi_id) == 0 &&
	       ds->ds_efficiency == sv->sv_efficiency &&
	       strcmp(ds->ds_user, f->fi_user) == 0 &&
	       ds->ds_stateid_seqid == 0 &&
	       !memcmp(ds->ds_stateid_other, "\0\0\0\0\0\0\0\0\0\0\0", 12);
}

/*
 * RFC 8435 section 6 from the client's side: for every sampled byte L of
 * segment s, the data server (L / stripe unit) mod width of every mirror
 * must hold unit L >> unit_shift.
 */
static bool sparse_rule_holds(const struct pnfs_ff_seg *s,
			      const struct pnfs_ff_file *f)
{
	const struct pnfs_ff_layout *l = &s->sg_layout;
	uint64_t step = (1ull << f->fi_unit_shift) / 3 + 1;

	for (uint64_t L = s->sg_offset; L < s->sg_offset + s->sg_length;
	     L += step) {
		uint32_t i = l->fl_width == 1 ? 0 :
			     (uint32_t)(L / l->fl_stripe_unit % l->fl_width);

		for (uint32_t m = 0; m < l->fl_mirrors; m++) {
			struct pnfs_ff_fh fh;
			const struct pnfs_ff_ds *d = &l->fl_ds[m * l->fl_width +
							       i];

			if (pnfs_ff_fh_parse(d->ds_fh[0], d->ds_fh_len[0],
					     &fh) != 0 ||
			    fh.fh_unit != L >> f->fi_unit_shift)
				return false;
		}
	}
	return true;
}

/* map -> layout4 -> decode: the same segment. */
static bool seg_round_trip(const struct pnfs_ff_seg *s)
{
	struct pnfs_ff_ds *dd = ds_alloc();
	uint8_t *buf = malloc(BUF_MAX), *buf2 = malloc(BUF_MAX);
	struct pnfs_ff_seg d;
	uint32_t iomode;
	size_t len, len2;
	bool ok;

	ok = buf && buf2 &&
	     pnfs_ff_seg_encode(s, PNFS_FF_IOMODE_READ, buf, BUF_MAX,
				&len) == 0 &&
	     pnfs_ff_seg_decode(buf, len, &d, &iomode, dd, DS_MAX) == 0 &&
	     d.sg_offset == s->sg_offset && d.sg_length == s->sg_length &&
	     layout_same(&d.sg_layout, &s->sg_layout) &&
	     pnfs_ff_seg_encode(&d, iomode, buf2, BUF_MAX, &len2) == 0 &&
	     len2 == len && memcmp(buf, buf2, len) == 0;
	free(buf);
	free(buf2);
	free(dd);
	return ok;
}

static void test_map_plain(void)
{
	struct pnfs_ff_server sv[2] = {
		{.sv_name = "a", .sv_hostport = "10.0.0.1:2049",
		 .sv_efficiency = 7},
		mk_server("b", "10.0.0.2:2049"),
	};
	struct pnfs_ff_unit u = {0, {0}};
	struct pnfs_ff_file f = file_base(CLOVIS_LAYOUT_PLAIN);
	struct pnfs_ff_ds *ds = ds_alloc();
	struct pnfs_ff_seg seg[2];
	uint64_t first;
	uint32_t nr = 0, segs_nr;

	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 12345, 1, 4, &first, &nr), 0);
	CU_ASSERT(first == 0 && nr == 1);
	f.fi_servers = sv;
	f.fi_servers_nr = 2;
	f.fi_units = &u;
	f.fi_units_nr = 1;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 2, &segs_nr, ds, DS_MAX), 0);
	CU_ASSERT_EQUAL_FATAL(segs_nr, 1);
	CU_ASSERT_EQUAL(seg[0].sg_offset, 0);
	CU_ASSERT_EQUAL(seg[0].sg_length, PNFS_FF_LENGTH_EOF);
	/* the whole layout, byte for byte */
	CU_ASSERT(layout_bytes(&seg[0].sg_layout, v_plain, sizeof v_plain));
	CU_ASSERT(seg_round_trip(&seg[0]));
	/* on the other server */
	u.un_server[0] = 1;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 2, &segs_nr, ds, DS_MAX), 0);
	CU_ASSERT(ds_is(&ds[0], &f, &sv[1], 0));
	/* an unknown server: not expressible */
	u.un_server[0] = PNFS_FF_NO_SERVER;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 2, &segs_nr, ds, DS_MAX),
			-ENOTSUP);
	CU_ASSERT(msg_has("unknown server"));
	CU_ASSERT_EQUAL(segs_nr, 0);
	free(ds);
}

/* 3 copies over 4 servers, 4 units a segment: copy c of u on
 * server (u + c) mod 4. */
static void mirror_units(struct pnfs_ff_unit *u, uint32_t nr, uint64_t first)
{
	for (uint32_t i = 0; i < nr; i++) {
		memset(&u[i], 0xff, sizeof u[i]); /* un_server: NO_SERVER */
		u[i].un_index = first + i;
		for (uint32_t c = 0; c < 3; c++)
			u[i].un_server[c] = (uint32_t)((first + i + c) % 4);
	}
}

static void test_map_mirror(void)
{
	struct pnfs_ff_server sv[4];
	struct pnfs_ff_unit u[8];
	struct pnfs_ff_file f = file_base(CLOVIS_LAYOUT_MIRROR);
	struct pnfs_ff_ds *ds = ds_alloc();
	struct pnfs_ff_seg seg[4];
	uint64_t first;
	uint32_t nr, segs_nr;

	servers_init(sv, 4);
	f.fi_unit_shift = 12;
	f.fi_width = 4;
	/* bytes 5000.. 20000 touch units 1..4: segments 0 and 1 */
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 5000, 15001, 8, &first, &nr), 0);
	CU_ASSERT(first == 0 && nr == 8);
	mirror_units(u, 8, 0);
	f.fi_servers = sv;
	f.fi_servers_nr = 4;
	f.fi_units = u;
	f.fi_units_nr = 8;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 4, &segs_nr, ds, DS_MAX), 0);
	CU_ASSERT_EQUAL_FATAL(segs_nr, 2);
	for (uint32_t s = 0; s < 2; s++) {
		const struct pnfs_ff_layout *l = &seg[s].sg_layout;

		CU_ASSERT_EQUAL(seg[s].sg_offset, s * 16384u);
		CU_ASSERT_EQUAL(seg[s].sg_length, 16384u);
		CU_ASSERT(l->fl_stripe_unit == 4096 && l->fl_width == 4);
		CU_ASSERT_EQUAL_FATAL(l->fl_mirrors, 3);
		for (uint32_t m = 0; m < 3; m++)
			for (uint32_t i = 0; i < 4; i++) {
				uint64_t unit = s * 4 + i;

				CU_ASSERT(ds_is(&l->fl_ds[m * 4 + i], &f,
						&sv[(unit + m) % 4], unit));
			}
		CU_ASSERT(sparse_rule_holds(&seg[s], &f));
		CU_ASSERT(seg_round_trip(&seg[s]));
	}
	/* one unit a segment: stripe unit 0 */
	mirror_units(u, 2, 6);
	f.fi_width = 1;
	f.fi_units_nr = 2;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 4, &segs_nr, ds, DS_MAX), 0);
	CU_ASSERT_EQUAL_FATAL(segs_nr, 2);
	CU_ASSERT_EQUAL(seg[1].sg_offset, 7 * 4096u);
	CU_ASSERT_EQUAL(seg[1].sg_layout.fl_stripe_unit, 0);
	CU_ASSERT(ds_is(&seg[1].sg_layout.fl_ds[2], &f, &sv[(7 + 2) % 4], 7));
	CU_ASSERT(seg_round_trip(&seg[1]));
	free(ds);
}

/* Copies lost: fewer mirrors, then none. */
static void test_map_mirror_degraded(void)
{
	struct pnfs_ff_server sv[4];
	struct pnfs_ff_unit u[8];
	struct pnfs_ff_file f = file_base(CLOVIS_LAYOUT_MIRROR);
	struct pnfs_ff_ds *ds = ds_alloc();
	struct pnfs_ff_seg seg[4];
	uint32_t segs_nr;

	servers_init(sv, 4);
	mirror_units(u, 8, 0);
	f.fi_unit_shift = 12;
	f.fi_width = 4;
	f.fi_servers = sv;
	f.fi_servers_nr = 4;
	f.fi_units = u;
	f.fi_units_nr = 8;
	/* copy 0 of unit 5 lost: segment 1 has 2 mirrors, copies 1 and 2 */
	u[5].un_server[0] = PNFS_FF_NO_SERVER;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 4, &segs_nr, ds, DS_MAX), 0);
	CU_ASSERT_EQUAL(seg[0].sg_layout.fl_mirrors, 3);
	CU_ASSERT_EQUAL_FATAL(seg[1].sg_layout.fl_mirrors, 2);
	CU_ASSERT(ds_is(&seg[1].sg_layout.fl_ds[0 * 4 + 1], &f, &sv[6 % 4], 5));
	CU_ASSERT(ds_is(&seg[1].sg_layout.fl_ds[1 * 4 + 1], &f, &sv[7 % 4], 5));
	CU_ASSERT(ds_is(&seg[1].sg_layout.fl_ds[1 * 4 + 0], &f, &sv[5 % 4], 4));
	CU_ASSERT(sparse_rule_holds(&seg[1], &f));
	/* every copy of unit 2 lost: nothing to hand out for segment 0 */
	u[2].un_server[0] = u[2].un_server[1] = u[2].un_server[2] =
		PNFS_FF_NO_SERVER;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 4, &segs_nr, ds, DS_MAX), -ENODEV);
	CU_ASSERT(msg_has("unit 2 "));
	CU_ASSERT_EQUAL(segs_nr, 0);
	free(ds);
}

/* Units of groups [g0, g0 + groups) of an N+K object (N+K <= 6) over 6
 * servers: each group's units on distinct servers, drawn by a seeded
 * shuffle of the group number, as pdclust's domain-aware placement puts
 * them (the test stands for that placement, which a gateway does not see:
 * the mapping takes whatever units the store reports). */
static void pd_units(const struct pnfs_ff_file *f, uint64_t g0,
		     uint32_t groups, struct pnfs_ff_unit *u)
{
	CU_ASSERT_FATAL(f->fi_data_units + f->fi_parity_units <= 6);
	for (uint32_t k = 0; k < groups; k++) {
		uint64_t s = (g0 + k) * 0x9e3779b97f4a7c15ull + f->fi_id.ci_lo + 1;
		uint8_t srv[6] = {0, 1, 2, 3, 4, 5};

		for (uint32_t d = 5; d > 0; d--) { /* Fisher-Yates */
			uint32_t j;
			uint8_t t;

			s ^= s << 13; s ^= s >> 7; s ^= s << 17;
			j = (uint32_t)(s % (d + 1));
			t = srv[d]; srv[d] = srv[j]; srv[j] = t;
		}
		for (uint32_t j = 0; j < f->fi_data_units; j++) {
			struct pnfs_ff_unit *x = &u[k * f->fi_data_units + j];

			memset(x, 0xff, sizeof *x);
			x->un_index = (g0 + k) * f->fi_data_units + j;
			x->un_server[0] = srv[j];
		}
	}
}

static void test_map_pdclust(void)
{
	struct pnfs_ff_server sv[6];
	struct pnfs_ff_unit u[64];
	struct pnfs_ff_file f = file_base(CLOVIS_LAYOUT_PDCLUST);
	struct pnfs_ff_ds *ds = ds_alloc();
	struct pnfs_ff_seg seg[8];
	uint64_t first;
	uint32_t nr, segs_nr;

	servers_init(sv, 6);
	f.fi_servers = sv;
	f.fi_servers_nr = 6;
	f.fi_units = u;
	f.fi_width = 8; /* 2 groups of 4 data units a segment */
	/* 512 KiB a segment: bytes 1 MiB .. 2 MiB are segments 2 and 3 */
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 1u << 20, 1u << 20, 8, &first, &nr),
			0);
	CU_ASSERT(first == 16 && nr == 16);
	pd_units(&f, first / 4, nr / 4, u);
	f.fi_units_nr = nr;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 8, &segs_nr, ds, DS_MAX), 0);
	CU_ASSERT_EQUAL_FATAL(segs_nr, 2);
	for (uint32_t s = 0; s < 2; s++) {
		const struct pnfs_ff_layout *l = &seg[s].sg_layout;

		CU_ASSERT_EQUAL(seg[s].sg_offset, (2 + s) * 524288ull);
		CU_ASSERT_EQUAL(seg[s].sg_length, 524288u);
		CU_ASSERT(l->fl_stripe_unit == 65536 && l->fl_width == 8 &&
			  l->fl_mirrors == 1);
		CU_ASSERT_EQUAL(l->fl_flags, PNFS_FF_FLAGS_NO_LAYOUTCOMMIT);
		for (uint32_t i = 0; i < 8; i++) {
			const struct pnfs_ff_unit *x = &u[s * 8 + i];

			CU_ASSERT(ds_is(&l->fl_ds[i], &f,
					&sv[x->un_server[0]], x->un_index));
		}
		/* a group's data units come from 4 different servers */
		for (uint32_t g = 0; g < 2; g++)
			for (uint32_t a = 0; a < 4; a++)
				for (uint32_t b = a + 1; b < 4; b++)
					CU_ASSERT(memcmp(
						l->fl_ds[g * 4 + a].ds_deviceid,
						l->fl_ds[g * 4 + b].ds_deviceid,
						16) != 0);
		CU_ASSERT(sparse_rule_holds(&seg[s], &f));
		CU_ASSERT(seg_round_trip(&seg[s]));
	}
	/* a data unit without a readable copy: its segment is -ENODEV */
	u[11].un_server[0] = PNFS_FF_NO_SERVER;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 8, &segs_nr, ds, DS_MAX), -ENODEV);
	CU_ASSERT(msg_has("unit 27 ") && msg_has("MDS"));
	CU_ASSERT_EQUAL(segs_nr, 0);
	free(ds);
}

/* Widths that are not a multiple of N, and the default width. */
static void test_map_pdclust_widths(void)
{
	struct pnfs_ff_server sv[6];
	struct pnfs_ff_unit u[64];
	struct pnfs_ff_file f = file_base(CLOVIS_LAYOUT_PDCLUST);
	struct pnfs_ff_ds *ds = ds_alloc();
	struct pnfs_ff_seg seg[8];
	uint64_t first;
	uint32_t nr, segs_nr;

	servers_init(sv, 6);
	f.fi_servers = sv;
	f.fi_servers_nr = 6;
	f.fi_units = u;
	f.fi_width = 8;
	/* N = 3 with width 8: 2 groups, W = 6, stripe index u mod 6 */
	f.fi_data_units = 3;
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, PNFS_FF_LENGTH_EOF, 3, &first,
				     &nr), 0);
	CU_ASSERT(first == 0 && nr == 18);
	pd_units(&f, 0, 6, u);
	f.fi_units_nr = 18;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 8, &segs_nr, ds, DS_MAX), 0);
	CU_ASSERT_EQUAL_FATAL(segs_nr, 3);
	CU_ASSERT_EQUAL(seg[2].sg_offset, 12 * 65536ull);
	CU_ASSERT_EQUAL(seg[2].sg_layout.fl_width, 6);
	CU_ASSERT(sparse_rule_holds(&seg[2], &f));
	CU_ASSERT(ds_is(&seg[2].sg_layout.fl_ds[5], &f, &sv[u[17].un_server[0]],
			17));
	/* default width 32 with N = 4: 8 groups, 2 MiB a segment */
	f.fi_data_units = 4;
	f.fi_width = 0;
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 3u << 20, 1, 8, &first, &nr), 0);
	CU_ASSERT(first == 32 && nr == 32);
	pd_units(&f, 8, 8, u);
	f.fi_units_nr = 32;
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 8, &segs_nr, ds, DS_MAX), 0);
	CU_ASSERT_EQUAL(segs_nr, 1);
	CU_ASSERT_EQUAL(seg[0].sg_offset, 2u << 20);
	CU_ASSERT(sparse_rule_holds(&seg[0], &f));
	CU_ASSERT(seg_round_trip(&seg[0]));
	free(ds);
}

static void test_span(void)
{
	struct pnfs_ff_file f = file_base(CLOVIS_LAYOUT_PDCLUST);
	uint64_t first, seg_bytes = 32ull << 16;
	uint32_t nr;

	/* default width: N = 4 -> 32 units, 2 MiB a segment */
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, 1, 1, &first, &nr), 0);
	CU_ASSERT(first == 0 && nr == 32);
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, seg_bytes - 1, 2, 8, &first, &nr), 0);
	CU_ASSERT(first == 0 && nr == 64);
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, seg_bytes, seg_bytes, 8, &first,
				     &nr), 0);
	CU_ASSERT(first == 32 && nr == 32);
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, PNFS_FF_LENGTH_EOF, 5, &first,
				     &nr), 0);
	CU_ASSERT(nr == 5 * 32);
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, 100 * seg_bytes, 3, &first, &nr),
			0);
	CU_ASSERT(nr == 3 * 32);
	/* N = 5, width 4: a segment is one group */
	f.fi_data_units = 5;
	f.fi_width = 4;
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 5 << 16, 1, 1, &first, &nr), 0);
	CU_ASSERT(first == 5 && nr == 5);
	/* the end of the 64-bit range: the last whole segment, no more */
	f.fi_data_units = 4;
	f.fi_width = 0;
	first = (UINT64_MAX / seg_bytes - 1) * seg_bytes;
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, first, PNFS_FF_LENGTH_EOF, 4, &first,
				     &nr), 0);
	CU_ASSERT_EQUAL(nr, 32);
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, UINT64_MAX, 1, 4, &first, &nr),
			-EOVERFLOW);
	/* errors */
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, 0, 4, &first, &nr), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, 1, 0, &first, &nr), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, 1, PNFS_FF_SEGS_MAX + 1, &first,
				     &nr), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, UINT64_MAX - 5, 7, 4, &first, &nr),
			-EINVAL);
	CU_ASSERT(msg_has("passes 2^64"));
	CU_ASSERT_EQUAL(pnfs_ff_span(NULL, 0, 1, 4, &first, &nr), -EINVAL);
	f.fi_layout = CLOVIS_LAYOUT_COMPOSITE;
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, 1, 4, &first, &nr), -ENOTSUP);
	CU_ASSERT(msg_has("composite"));
	f.fi_layout = 9;
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, 1, 4, &first, &nr), -EINVAL);
	f.fi_layout = CLOVIS_LAYOUT_MIRROR;
	f.fi_copies = 1;
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, 1, 4, &first, &nr), -EINVAL);
	CU_ASSERT(msg_has("fi_copies"));
	f.fi_copies = 33;
	CU_ASSERT_EQUAL(pnfs_ff_span(&f, 0, 1, 4, &first, &nr), -EINVAL);
}

/* One map of f that must fail with rc and a message naming field. */
static void map_fails(const struct pnfs_ff_file *f, int rc, const char *field,
		      uint32_t segs_max, uint32_t ds_max)
{
	struct pnfs_ff_seg seg[4];
	struct pnfs_ff_ds *ds = ds_alloc();
	uint32_t nr = 99;

	err_clear();
	CU_ASSERT_EQUAL(pnfs_ff_map(f, seg, segs_max, &nr, ds, ds_max), rc);
	CU_ASSERT(msg_has(field));
	CU_ASSERT_EQUAL(nr, 0);
	free(ds);
}

/* A mirror file of 2 segments of 4 units over 4 servers, in f0. */
static void errors_file(struct pnfs_ff_file *f0, struct pnfs_ff_server *sv,
			struct pnfs_ff_unit *u)
{
	servers_init(sv, 4);
	mirror_units(u, 8, 0);
	*f0 = file_base(CLOVIS_LAYOUT_MIRROR);
	f0->fi_width = 4;
	f0->fi_servers = sv;
	f0->fi_servers_nr = 4;
	f0->fi_units = u;
	f0->fi_units_nr = 8;
}

/* Arguments, geometry, flags, strings. */
static void test_map_errors(void)
{
	struct pnfs_ff_server sv[4];
	struct pnfs_ff_unit u[8];
	struct pnfs_ff_file f0, f;
	struct pnfs_ff_seg seg[4];
	struct pnfs_ff_ds *ds = ds_alloc();
	char longstr[PNFS_FF_OWNER_MAX + 2];
	uint32_t nr;

	errors_file(&f0, sv, u);
	CU_ASSERT_EQUAL(pnfs_ff_map(&f0, seg, 4, &nr, ds, DS_MAX), 0);
	CU_ASSERT_EQUAL(pnfs_ff_map(NULL, seg, 4, &nr, ds, DS_MAX), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_map(&f0, NULL, 4, &nr, ds, DS_MAX), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_map(&f0, seg, 4, NULL, ds, DS_MAX), -EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_map(&f0, seg, 4, &nr, NULL, DS_MAX), -EINVAL);
	f = f0, f.fi_layout = 0;
	map_fails(&f, -EINVAL, "fi_layout", 4, DS_MAX);
	f = f0, f.fi_layout = CLOVIS_LAYOUT_COMPOSITE;
	map_fails(&f, -ENOTSUP, "composite", 4, DS_MAX);
	f = f0, f.fi_unit_shift = 25;
	map_fails(&f, -EINVAL, "fi_unit_shift", 4, DS_MAX);
	f = f0, f.fi_unit_shift = 11;
	map_fails(&f, -EINVAL, "fi_unit_shift", 4, DS_MAX);
	f = f0, f.fi_width = PNFS_FF_WIDTH_MAX + 1;
	map_fails(&f, -EINVAL, "fi_width", 4, DS_MAX);
	f = f0, f.fi_copies = 0;
	map_fails(&f, -EINVAL, "fi_copies", 4, DS_MAX);
	f = f0, f.fi_layout = CLOVIS_LAYOUT_PDCLUST, f.fi_data_units = 0;
	map_fails(&f, -EINVAL, "fi_data_units", 4, DS_MAX);
	f.fi_data_units = 4, f.fi_parity_units = 29;
	map_fails(&f, -EINVAL, "fi_parity_units", 4, DS_MAX);
	f.fi_parity_units = UINT32_MAX; /* the sum must not wrap */
	map_fails(&f, -EINVAL, "fi_parity_units", 4, DS_MAX);
	f = f0, f.fi_flags = 0x10;
	map_fails(&f, -EINVAL, "fi_flags", 4, DS_MAX);
	f = f0, f.fi_flags = PNFS_FF_FLAGS_NO_IO_THRU_MDS;
	map_fails(&f, -EINVAL, "NO_IO_THRU_MDS", 4, DS_MAX);
	f = f0, f.fi_user = NULL;
	map_fails(&f, -EINVAL, "fi_user", 4, DS_MAX);
	f = f0, f.fi_user = "";
	map_fails(&f, -EINVAL, "fi_user", 4, DS_MAX);
	memset(longstr, 'u', sizeof longstr - 1);
	longstr[sizeof longstr - 1] = '\0';
	f = f0, f.fi_group = longstr;
	map_fails(&f, -EINVAL, "fi_group", 4, DS_MAX);
	f = f0, f.fi_servers = NULL;
	map_fails(&f, -EINVAL, "fi_servers", 4, DS_MAX);
	free(ds);
}

/* Servers, units, room. */
static void test_map_errors_units(void)
{
	struct pnfs_ff_server sv[4], bad_sv[2];
	struct pnfs_ff_unit u[8];
	struct pnfs_ff_file f0, f;
	struct pnfs_ff_seg seg[4];
	struct pnfs_ff_ds *ds = ds_alloc();
	uint32_t nr;

	errors_file(&f0, sv, u);
	bad_sv[0] = sv[0];
	bad_sv[1] = mk_server("s1", "10.0.0.2");
	f = f0, f.fi_servers = bad_sv, f.fi_servers_nr = 2;
	map_fails(&f, -EINVAL, "fi_servers[1]", 4, DS_MAX);
	bad_sv[1] = mk_server(NULL, "10.0.0.2:2049");
	map_fails(&f, -EINVAL, "sv_name", 4, DS_MAX);
	f = f0, f.fi_units = NULL;
	map_fails(&f, -EINVAL, "fi_units", 4, DS_MAX);
	f = f0, f.fi_units_nr = 0;
	map_fails(&f, -EINVAL, "whole segments", 4, DS_MAX);
	f = f0, f.fi_units_nr = 6;
	map_fails(&f, -EINVAL, "whole segments", 4, DS_MAX);
	f = f0, f.fi_units = u + 1, f.fi_units_nr = 4;
	map_fails(&f, -EINVAL, "whole segments", 4, DS_MAX);
	f = f0;
	u[6].un_index = 7;
	map_fails(&f, -EINVAL, "fi_units[6].un_index", 4, DS_MAX);
	u[6].un_index = 6;
	u[3].un_server[2] = 4;
	map_fails(&f, -EINVAL, "fi_units[3].un_server[2]", 4, DS_MAX);
	u[3].un_server[2] = 1;
	map_fails(&f, -EOVERFLOW, "segs_max", 1, DS_MAX);
	map_fails(&f, -EOVERFLOW, "ds_max", 4, 20);
	f.fi_layout = CLOVIS_LAYOUT_PLAIN;
	map_fails(&f, -EINVAL, "unit 0 only", 4, DS_MAX);
	/* units at the end of the 64-bit range */
	f = f0;
	mirror_units(u, 4, (UINT64_MAX >> 16) / 4 * 4);
	f.fi_units_nr = 4;
	map_fails(&f, -EOVERFLOW, "2^64", 4, DS_MAX);
	mirror_units(u, 4, (UINT64_MAX >> 16) / 4 * 4 - 4);
	CU_ASSERT_EQUAL(pnfs_ff_map(&f, seg, 4, &nr, ds, DS_MAX), 0);
	CU_ASSERT_EQUAL(seg[0].sg_offset + seg[0].sg_length,
			(UINT64_MAX >> 16) / 4 * 4 << 16);
	free(ds);
}

/* --------------------------------------------------- encoder errors */

/* Every buffer shorter than the encoding: -ENOSPC, *len = the size
 * needed, nothing written past the buffer. */
static void short_buffers(int (*enc)(const void *, uint8_t *, size_t,
				     size_t *), const void *obj, size_t want)
{
	uint8_t buf[512];
	size_t len;

	for (size_t size = 0; size < want; size++) {
		memset(buf, 0xee, sizeof buf);
		len = 0;
		CU_ASSERT_EQUAL(enc(obj, buf, size, &len), -ENOSPC);
		CU_ASSERT_EQUAL(len, want);
		for (size_t i = size; i < sizeof buf; i++)
			if (buf[i] != 0xee) {
				CU_FAIL("wrote past the buffer");
				break;
			}
	}
	CU_ASSERT_EQUAL(enc(obj, NULL, 100, &len), -ENOSPC);
	CU_ASSERT_EQUAL(len, want);
	CU_ASSERT_EQUAL(enc(obj, buf, want, &len), 0);
	CU_ASSERT_EQUAL(len, want);
}

static int enc_layout(const void *o, uint8_t *b, size_t n, size_t *len)
{
	return pnfs_ff_layout_encode(o, b, n, len);
}

static int enc_devaddr(const void *o, uint8_t *b, size_t n, size_t *len)
{
	return pnfs_ff_devaddr_encode(o, b, n, len);
}

static int enc_seg(const void *o, uint8_t *b, size_t n, size_t *len)
{
	return pnfs_ff_seg_encode(o, PNFS_FF_IOMODE_READ, b, n, len);
}

/* Encode a copy of V1 changed by fn: must fail with -EINVAL naming s. */
static void layout_refused(void (*fn)(struct pnfs_ff_layout *),
			   const char *s)
{
	struct pnfs_ff_ds ds[2];
	struct pnfs_ff_layout l;
	uint8_t buf[256];
	size_t len = 7;

	v1_struct(&l, ds);
	fn(&l);
	err_clear();
	CU_ASSERT_EQUAL(pnfs_ff_layout_encode(&l, buf, sizeof buf, &len),
			-EINVAL);
	CU_ASSERT_EQUAL(len, 0);
	CU_ASSERT(msg_has(s));
}

static void no_mirrors(struct pnfs_ff_layout *l) { l->fl_mirrors = 0; }
static void many_mirrors(struct pnfs_ff_layout *l) { l->fl_mirrors = 33; }
static void no_width(struct pnfs_ff_layout *l) { l->fl_width = 0; }
static void wide(struct pnfs_ff_layout *l) { l->fl_width = 65; }
static void su_one(struct pnfs_ff_layout *l) { l->fl_stripe_unit = 4096; }
static void no_ds(struct pnfs_ff_layout *l) { l->fl_ds = NULL; }
static void su_zero(struct pnfs_ff_layout *l)
{
	l->fl_ds[1] = l->fl_ds[0];
	l->fl_width = 2;
}
static void fh_none(struct pnfs_ff_layout *l) { l->fl_ds[0].ds_fh_nr = 0; }
static void fh_three(struct pnfs_ff_layout *l) { l->fl_ds[0].ds_fh_nr = 3; }
static void fh_empty(struct pnfs_ff_layout *l) { l->fl_ds[0].ds_fh_len[0] = 0; }
static void fh_long(struct pnfs_ff_layout *l)
{
	l->fl_ds[0].ds_fh_len[0] = PNFS_FF_FH_MAX + 1;
}
static void user_open(struct pnfs_ff_layout *l)
{
	memset(l->fl_ds[0].ds_user, 'x', sizeof l->fl_ds[0].ds_user);
}

static void test_encode_errors(void)
{
	struct pnfs_ff_ds ds[4];
	struct pnfs_ff_layout l;
	struct pnfs_ff_seg s = {0, 4096, {0}};
	struct pnfs_ff_server sv = mk_server("s0", "10.0.0.1:2049");
	struct pnfs_ff_devaddr a;
	uint8_t buf[256];
	size_t len;

	v1_struct(&l, ds);
	short_buffers(enc_layout, &l, sizeof v1_layout);
	v2_struct(&l, ds);
	short_buffers(enc_layout, &l, sizeof v2_layout);
	v1_struct(&s.sg_layout, ds);
	short_buffers(enc_seg, &s, sizeof v_lo4_head + sizeof v1_layout);
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_make(&sv, &a), 0);
	short_buffers(enc_devaddr, &a, sizeof v_dev4);
	CU_ASSERT(msg_has("needs 52 bytes"));

	layout_refused(no_mirrors, "ffl_mirrors");
	layout_refused(many_mirrors, "ffl_mirrors");
	layout_refused(no_width, "ffm_data_servers");
	layout_refused(wide, "ffm_data_servers");
	layout_refused(su_one, "ffl_stripe_unit");
	layout_refused(su_zero, "ffl_stripe_unit");
	layout_refused(no_ds, "NULL");
	layout_refused(fh_none, "ffds_fh_vers");
	layout_refused(fh_three, "ffds_fh_vers");
	layout_refused(fh_empty, "ffds_fh_vers[0]");
	layout_refused(fh_long, "ffds_fh_vers[0]");
	layout_refused(user_open, "ffds_user");
	CU_ASSERT_EQUAL(pnfs_ff_layout_encode(NULL, buf, sizeof buf, &len),
			-EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_layout_encode(&l, buf, sizeof buf, NULL),
			-EINVAL);

	a.fd_addrs_nr = 0;
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_encode(&a, buf, sizeof buf, &len),
			-EINVAL);
	a.fd_addrs_nr = PNFS_FF_ADDRS_MAX + 1;
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_encode(&a, buf, sizeof buf, &len),
			-EINVAL);
	a.fd_addrs_nr = 1;
	a.fd_versions_nr = 0;
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_encode(&a, buf, sizeof buf, &len),
			-EINVAL);
	CU_ASSERT(msg_has("versions"));
	a.fd_versions_nr = 1;
	strcpy(a.fd_addrs[0].fa_netid, "udp");
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_encode(&a, buf, sizeof buf, &len),
			-ENOTSUP);
	CU_ASSERT(msg_has("ffda_netaddrs[0]"));
	strcpy(a.fd_addrs[0].fa_netid, "tcp");
	strcpy(a.fd_addrs[0].fa_uaddr, "10.0.0.1");
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_encode(&a, buf, sizeof buf, &len),
			-EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_encode(NULL, buf, sizeof buf, &len),
			-EINVAL);
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_make(&sv, NULL), -EINVAL);
	sv.sv_hostport = "[::1]";
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_make(&sv, &a), -EINVAL);
}

/* --------------------------------------------------- decoder errors */

static int dec_layout_rc(const uint8_t *b, size_t n, uint32_t ds_max)
{
	struct pnfs_ff_ds *ds = ds_alloc();
	struct pnfs_ff_layout l;
	int rc;

	err_clear();
	rc = pnfs_ff_layout_decode(b, n, &l, ds, ds_max);
	free(ds);
	return rc;
}

/* V1 with a 128-byte user: the largest this decoder takes. */
static size_t v1_long_user(uint8_t *buf, size_t size)
{
	struct pnfs_ff_ds ds;
	struct pnfs_ff_layout l;
	size_t len = 0;

	v1_struct(&l, &ds);
	memset(ds.ds_user, 'u', PNFS_FF_OWNER_MAX);
	ds.ds_user[PNFS_FF_OWNER_MAX] = '\0';
	CU_ASSERT_EQUAL(pnfs_ff_layout_encode(&l, buf, size, &len), 0);
	return len;
}

static void test_decode_errors(void)
{
	uint8_t b[512];
	size_t n;

	/* truncated at every length, and one byte too many */
	for (size_t len = 0; len < sizeof v1_layout; len++)
		CU_ASSERT_EQUAL(dec_layout_rc(v1_layout, len, 4), -EINVAL);
	memcpy(b, v1_layout, sizeof v1_layout);
	b[sizeof v1_layout] = 0;
	CU_ASSERT_EQUAL(dec_layout_rc(b, sizeof v1_layout + 1, 4), -EINVAL);
	CU_ASSERT(msg_has("trailing"));
	CU_ASSERT_EQUAL(dec_layout_rc(NULL, 8, 4), -EINVAL);
	/* padding of the handle (byte 65) not zero */
	memcpy(b, v1_layout, sizeof v1_layout);
	b[65] = 1;
	CU_ASSERT_EQUAL(dec_layout_rc(b, sizeof v1_layout, 4), -EINVAL);
	CU_ASSERT(msg_has("ffds_fh_vers has non-zero padding") &&
		  msg_has("mirror 0, data server 0"));
	/* a NUL inside ffds_user ("nfs" at 72..74) */
	memcpy(b, v1_layout, sizeof v1_layout);
	b[73] = 0;
	CU_ASSERT_EQUAL(dec_layout_rc(b, sizeof v1_layout, 4), -EINVAL);
	CU_ASSERT(msg_has("NUL"));
	/* counts: mirrors beyond the bytes, beyond the caller's array */
	memcpy(b, v1_layout, sizeof v1_layout);
	b[8] = 0x40;
	CU_ASSERT_EQUAL(dec_layout_rc(b, sizeof v1_layout, 4), -EINVAL);
	CU_ASSERT(msg_has("ffl_mirrors count larger than the bytes left"));
	CU_ASSERT_EQUAL(dec_layout_rc(v1_layout, sizeof v1_layout, 0),
			-EOVERFLOW);
	/* ffds_fh_vers count 3: the bytes could hold it, we do not */
	memcpy(b, v1_layout, sizeof v1_layout);
	b[55] = 3;
	CU_ASSERT_EQUAL(dec_layout_rc(b, sizeof v1_layout, 4), -EOVERFLOW);
	/* a handle of 129 bytes: nfs_fh4 is at most 128 */
	n = v1_long_user(b, sizeof b);
	b[59] = 129;
	CU_ASSERT_EQUAL(dec_layout_rc(b, n, 4), -EINVAL);
	CU_ASSERT(msg_has("ffds_fh_vers length"));
	/* ffds_user of 132 bytes, present: above our limit */
	n = v1_long_user(b, sizeof b);
	CU_ASSERT_EQUAL(b[71], 128);
	CU_ASSERT_EQUAL(dec_layout_rc(b, n, 4), 0);
	b[71] = 132;
	CU_ASSERT_EQUAL(dec_layout_rc(b, n, 4), -EOVERFLOW);
	CU_ASSERT(msg_has("ffds_user"));
	b[71] = 200; /* past the end: malformed */
	CU_ASSERT_EQUAL(dec_layout_rc(b, n, 4), -EINVAL);
	/* width 1 with a stripe unit; mirror widths that differ; width 2
	 * without a stripe unit */
	memcpy(b, v1_layout, sizeof v1_layout);
	b[7] = 7;
	CU_ASSERT_EQUAL(dec_layout_rc(b, sizeof v1_layout, 4), -EINVAL);
	CU_ASSERT(msg_has("ffl_stripe_unit"));
	memcpy(b, v2_layout, sizeof v2_layout);
	b[12 + 4 + 128 + 3] = 1; /* mirror 1's count */
	CU_ASSERT_EQUAL(dec_layout_rc(b, sizeof v2_layout, 4), -EINVAL);
	CU_ASSERT(msg_has("differs") && msg_has("(mirror 1)"));
	memcpy(b, v2_layout, sizeof v2_layout);
	b[5] = 0;
	CU_ASSERT_EQUAL(dec_layout_rc(b, sizeof v2_layout, 4), -EINVAL);
	CU_ASSERT_EQUAL(dec_layout_rc(v2_layout, sizeof v2_layout, 3),
			-EOVERFLOW);
}

static void test_decode_errors_devaddr(void)
{
	uint8_t b[512];
	struct pnfs_ff_devaddr d;

	/* truncations, bool 2, netid, counts */
	for (size_t len = 0; len < sizeof v_dev6; len++)
		CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(v_dev6, len, &d),
				-EINVAL);
	memcpy(b, v_dev4, sizeof v_dev4);
	b[51] = 2;
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(b, sizeof v_dev4, &d), -EINVAL);
	CU_ASSERT(msg_has("ffdv_tightly_coupled"));
	memcpy(b, v_dev4, sizeof v_dev4);
	memcpy(b + 8, "udp", 3);
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(b, sizeof v_dev4, &d),
			-ENOTSUP);
	memcpy(b, v_dev4, sizeof v_dev4);
	b[19] = '/'; /* "10./.0.1.8.1" */
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(b, sizeof v_dev4, &d), -EINVAL);
	CU_ASSERT(msg_has("na_r_addr"));
	memcpy(b, v_dev4, sizeof v_dev4);
	b[3] = 0; /* no address, then garbage: the count fits, the rest not */
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(b, sizeof v_dev4, &d), -EINVAL);
	memset(b, 0, sizeof b);
	b[3] = 5; /* five empty netaddr4 (8 bytes each): more than 4 */
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(b, 4 + 5 * 8 + 4, &d),
			-EOVERFLOW);
	memset(b, 0, sizeof b);
	b[3] = 1; /* an empty netid and uaddr, one version */
	b[15] = 1;
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(b, 4 + 8 + 4 + 20, &d),
			-EINVAL);
	CU_ASSERT(msg_has("ffda_netaddrs[0]"));
	CU_ASSERT_EQUAL(pnfs_ff_devaddr_decode(v_dev4, sizeof v_dev4, NULL),
			-EINVAL);
}

/* ------------------------------------------------------------------ fuzz */

static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One mutation of src into dst; returns the new length. */
static size_t mutate(uint64_t *rs, const uint8_t *src, size_t n,
		     uint8_t *dst, size_t max)
{
	static const uint32_t words[] = {0, 1, 2, 3, 4, 5, 0x80, 0xffffffffu,
					 0x7fffffffu, 0x10000, 128, 129, 96};
	size_t len = n, at;

	memcpy(dst, src, n);
	switch (rnd_next(rs) % 5) {
	case 0: /* truncate */
		return rnd_next(rs) % (n + 1);
	case 1: /* flip 1..3 bytes */
		for (uint64_t k = rnd_next(rs) % 3 + 1; k > 0; k--)
			dst[rnd_next(rs) % n] ^= (uint8_t)(rnd_next(rs) % 255 + 1);
		return n;
	case 2: /* an aligned word to a value that counts or lengths love */
		at = rnd_next(rs) % (n / 4) * 4;
		{
			uint32_t v = words[rnd_next(rs) % (sizeof words / 4)];

			dst[at] = (uint8_t)(v >> 24);
			dst[at + 1] = (uint8_t)(v >> 16);
			dst[at + 2] = (uint8_t)(v >> 8);
			dst[at + 3] = (uint8_t)v;
		}
		return n;
	case 3: /* append a few bytes */
		for (uint64_t k = rnd_next(rs) % 8 + 1; k > 0 && len < max; k--)
			dst[len++] = (uint8_t)rnd_next(rs);
		return len;
	default: /* random bytes */
		len = rnd_next(rs) % max;
		for (size_t i = 0; i < len; i++)
			dst[i] = (uint8_t)rnd_next(rs);
		return len;
	}
}

/* Feed b[0..n) to every decoder; an accepted one must encode back to
 * the same bytes.  Counts accepted buffers in *ok. */
static void decode_all(const uint8_t *b, size_t n, struct pnfs_ff_ds *ds,
		       uint8_t *out, unsigned *ok)
{
	struct pnfs_ff_layout l;
	struct pnfs_ff_devaddr d;
	struct pnfs_ff_seg s;
	uint32_t iomode;
	size_t len;
	int rc;

	rc = pnfs_ff_layout_decode(b, n, &l, ds, 8);
	CU_ASSERT(rc == 0 || rc == -EINVAL || rc == -EOVERFLOW);
	if (rc == 0) {
		(*ok)++;
		CU_ASSERT(pnfs_ff_layout_encode(&l, out, BUF_MAX, &len) == 0 &&
			  len == n && memcmp(out, b, n) == 0);
	}
	rc = pnfs_ff_devaddr_decode(b, n, &d);
	CU_ASSERT(rc == 0 || rc == -EINVAL || rc == -EOVERFLOW ||
		  rc == -ENOTSUP);
	if (rc == 0) {
		(*ok)++;
		CU_ASSERT(pnfs_ff_devaddr_encode(&d, out, BUF_MAX, &len) == 0 &&
			  len == n && memcmp(out, b, n) == 0);
	}
	rc = pnfs_ff_seg_decode(b, n, &s, &iomode, ds, 8);
	CU_ASSERT(rc == 0 || rc == -EINVAL || rc == -EOVERFLOW ||
		  rc == -ENOTSUP);
	if (rc == 0) {
		(*ok)++;
		CU_ASSERT(pnfs_ff_seg_encode(&s, iomode, out, BUF_MAX, &len) ==
			  0 && len == n && memcmp(out, b, n) == 0);
	}
}

static void test_fuzz(void)
{
	uint8_t lo4[sizeof v_lo4_head + sizeof v1_layout];
	const struct {
		const uint8_t *b;
		size_t n;
	} base[] = {
		{v1_layout, sizeof v1_layout}, {v2_layout, sizeof v2_layout},
		{v_dev4, sizeof v_dev4}, {v_dev6, sizeof v_dev6},
		{v_dev2, sizeof v_dev2}, {v_plain, sizeof v_plain},
		{lo4, sizeof lo4},
	};
	unsigned rounds = ut_rounds(20000, 2000), ok = 0;
	struct pnfs_ff_ds *ds = ds_alloc();
	uint8_t *buf = malloc(BUF_MAX), *out = malloc(BUF_MAX);
	uint64_t rs = 0x9e3779b97f4a7c15ull;

	CU_ASSERT_FATAL(buf != NULL && out != NULL);
	memcpy(lo4, v_lo4_head, sizeof v_lo4_head);
	memcpy(lo4 + sizeof v_lo4_head, v1_layout, sizeof v1_layout);
	for (size_t k = 0; k < sizeof base / sizeof base[0]; k++) {
		unsigned before = ok;

		decode_all(base[k].b, base[k].n, ds, out, &ok);
		CU_ASSERT_EQUAL(ok, before + 1); /* each vector: one decoder */
	}
	ok = 0;
	for (unsigned i = 0; i < rounds; i++) {
		size_t k = rnd_next(&rs) % (sizeof base / sizeof base[0]);
		size_t n = mutate(&rs, base[k].b, base[k].n, buf, 512);

		decode_all(buf, n, ds, out, &ok);
	}
	/* both outcomes happened: the loop tested something */
	CU_ASSERT(ok > 0 && ok < rounds);
	free(buf);
	free(out);
	free(ds);
}

int pnfs_ut_add(void)
{
	CU_pSuite s = CU_add_suite("pnfs", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "layout_vectors", test_layout_vectors) ||
	    !CU_add_test(s, "devaddr_vectors", test_devaddr_vectors) ||
	    !CU_add_test(s, "seg_vector", test_seg_vector) ||
	    !CU_add_test(s, "fh", test_fh) ||
	    !CU_add_test(s, "addr_hostport", test_addr_hostport) ||
	    !CU_add_test(s, "addr_check", test_addr_check) ||
	    !CU_add_test(s, "deviceid", test_deviceid) ||
	    !CU_add_test(s, "map_plain", test_map_plain) ||
	    !CU_add_test(s, "map_mirror", test_map_mirror) ||
	    !CU_add_test(s, "map_mirror_degraded", test_map_mirror_degraded) ||
	    !CU_add_test(s, "map_pdclust", test_map_pdclust) ||
	    !CU_add_test(s, "map_pdclust_widths", test_map_pdclust_widths) ||
	    !CU_add_test(s, "span", test_span) ||
	    !CU_add_test(s, "map_errors", test_map_errors) ||
	    !CU_add_test(s, "map_errors_units", test_map_errors_units) ||
	    !CU_add_test(s, "encode_errors", test_encode_errors) ||
	    !CU_add_test(s, "decode_errors", test_decode_errors) ||
	    !CU_add_test(s, "decode_errors_devaddr",
			 test_decode_errors_devaddr) ||
	    !CU_add_test(s, "fuzz", test_fuzz))
		return -1;
	return 0;
}
