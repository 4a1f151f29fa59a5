/*
 * gateways/posix/pnfs_ff.h — a file's Strata layout as a pNFS flexfiles
 * layout (RFC 8435), and its XDR.
 *
 * What this is.  The pure half of a pNFS metadata server (MDS) for the
 * POSIX view (issue 33): given where the units of a file's object lie
 * (units -> Strata servers), it builds the flexfiles layout segments an
 * MDS hands out in LAYOUTGET, the device addresses it hands out in
 * GETDEVICEINFO, and the handle a data server (DS) is given for a unit;
 * and it encodes and decodes all of them in XDR (RFC 4506).  No I/O, no
 * allocation, no global state: errors go through err_set()
 * (core/errors.h), the project's per-thread message.  No pNFS client
 * exists on the machines this was written on: this is tested against
 * hand-built byte vectors, not end to end (docs/pnfs.md).
 *
 * The wire types (RFC 8435 section 5, on NFSv4.1 RFC 8881):
 *
 *   struct ff_layout4 {                 the loc_body of a layout_content4
 *       length4      ffl_stripe_unit;   uint64
 *       ff_mirror4   ffl_mirrors<>;     each { ff_data_server4
 *                                              ffm_data_servers<>; }
 *       ffv_flags4   ffl_flags;         uint32, PNFS_FF_FLAGS_*
 *       uint32_t     ffl_stats_collect_hint;
 *   };
 *   struct ff_data_server4 {
 *       deviceid4    ffds_deviceid;     opaque[16]
 *       uint32_t     ffds_efficiency;
 *       stateid4     ffds_stateid;      uint32 seqid, opaque other[12]
 *       nfs_fh4      ffds_fh_vers<>;    each opaque<128>
 *       fattr4_owner       ffds_user;   utf8str_mixed: opaque<>
 *       fattr4_owner_group ffds_group;
 *   };
 *   struct ff_device_addr4 {            the da_addr_body of GETDEVICEINFO
 *       multipath_list4     ffda_netaddrs;   netaddr4<>: { string
 *                                            na_r_netid<>; string
 *                                            na_r_addr<>; }
 *       ff_device_versions4 ffda_versions<>; { uint32 version,
 *                                            minorversion, rsize,
 *                                            wsize; bool tightly_coupled; }
 *   };
 *   struct layout4 { offset4 lo_offset; length4 lo_length;
 *                    layoutiomode4 lo_iomode;
 *                    layout_content4 lo_content; }  (loc_type, loc_body<>)
 *
 * XDR: every integer big-endian in 4 (uint32, enum, bool) or 8 (uint64)
 * bytes; variable-length opaques and strings are a uint32 length, the
 * bytes, then zero bytes up to a multiple of 4; fixed opaques are padded
 * the same way (16 and 12 need none); arrays are a uint32 count then the
 * elements.
 *
 * Striping (RFC 8435 section 6): flexfiles maps sparsely.  With W data
 * servers in each mirror and a stripe unit of U bytes, byte L of the file
 * is read from data server (L / U) mod W of a mirror, at offset L of that
 * DS's file: the offset is never rebased, and the index counts from file
 * offset 0, not from the segment's start.  With W = 1 ffl_stripe_unit is 0.
 *
 * The mapping (pnfs_ff_map(); why in docs/pnfs.md):
 *
 *   PLAIN    one segment [0, to EOF), one mirror, one data server: the
 *            server holding the object (its home); stripe unit 0.  A
 *            PLAIN object whose server is unknown is -ENOTSUP.
 *   MIRROR   segments of W consecutive units (W = width, aligned: segment
 *            s holds units s*W .. s*W+W-1), stripe unit U = unit size,
 *            one ff_mirror4 per readable copy: mirror m's data server i
 *            holds copy m of the unit u of the segment with u mod W = i.
 *            A unit with fewer readable copies lowers the segment's mirror
 *            count to its count (every mirror must hold every unit); none
 *            left is -ENODEV (the MDS serves that range itself).
 *   PDCLUST  segments of G whole parity groups (W = G * N data units,
 *            G = max(1, width / N)), stripe unit U, one mirror: data
 *            server i holds the data unit u with u mod W = i, i.e. slot
 *            u mod N of group u / N.  Parity and spare units are never
 *            exposed: a unit without a readable copy (its device failed,
 *            not yet rebuilt) makes its segment -ENODEV, and the client
 *            reads that range through the MDS, which reads degraded.
 *   COMPOSITE (and anything else that is not one of the three): -ENOTSUP.
 *
 * Every data server's handle is PNFS_FF_FH_SIZE bytes naming the object,
 * the unit and the map epoch (struct pnfs_ff_fh); its device id is derived
 * from the server's name and addresses (pnfs_ff_deviceid()); its stateid
 * is the anonymous one (all zero): the data servers are NFSv3 servers,
 * loosely coupled, and the epoch in the handle is the fence.
 *
 * Errors: 0 or a negative errno, and err_msg() names the field:
 *   -EINVAL     a field out of range, or bytes that are not a valid
 *               encoding (truncated, a count the bytes cannot hold, non-zero
 *               padding, a bool other than 0 or 1, trailing bytes);
 *   -ENOSPC     an encoder's buffer is too small (*len says how many bytes
 *               it needs);
 *   -EOVERFLOW  a valid encoding holds more than the caller's arrays or
 *               this header's limits, or a range passes 2^64 bytes;
 *   -ENOTSUP    a layout flexfiles cannot express, an address family or
 *               netid other than tcp / tcp6;
 *   -ENODEV     a unit of a segment has no readable copy.
 */
#ifndef STRATA_GATEWAYS_POSIX_PNFS_FF_H
#define STRATA_GATEWAYS_POSIX_PNFS_FF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clovis/clovis.h"

/* ------------------------------------------------------------ constants */

/** layouttype4 of flexfiles (RFC 8435 section 13). */
#define PNFS_FF_LAYOUT4_FLEX_FILES 4u
/** layoutiomode4 (RFC 8881 section 3.3.20). */
#define PNFS_FF_IOMODE_READ 1u
#define PNFS_FF_IOMODE_RW 2u
#define PNFS_FF_IOMODE_ANY 3u
/** lo_length meaning "to the end of the file" (NFS4_UINT64_MAX). */
#define PNFS_FF_LENGTH_EOF UINT64_MAX

/** ffl_flags (RFC 8435 section 5.1). */
#define PNFS_FF_FLAGS_NO_LAYOUTCOMMIT 0x1u
#define PNFS_FF_FLAGS_NO_IO_THRU_MDS 0x2u
#define PNFS_FF_FLAGS_NO_READ_IO 0x4u
#define PNFS_FF_FLAGS_WRITE_ONE_MIRROR 0x8u
#define PNFS_FF_FLAGS_KNOWN 0xfu

/* ---------------------------------------------------------------- limits */

/** deviceid4: NFS4_DEVICEID4_SIZE. */
#define PNFS_FF_DEVICEID_SIZE 16u
/** stateid4's other: 12 bytes (NFS4_OTHER_SIZE). */
#define PNFS_FF_STATEID_OTHER_SIZE 12u
/** nfs_fh4: at most NFS4_FHSIZE bytes. */
#define PNFS_FF_FH_MAX 128u
/** Handles per data server (ffds_fh_vers): one per NFS version the DS
 *  speaks; ours speak NFSv3 only, a decoder takes up to two. */
#define PNFS_FF_FH_VERS_MAX 2u
/** ffds_user / ffds_group: "uid", "name" or "name@domain"; longer ones
 *  are refused (a bound for the decoder's storage, not a protocol one). */
#define PNFS_FF_OWNER_MAX 128u
/** Mirrors of a segment: at most the copies of a MIRROR layout. */
#define PNFS_FF_MIRRORS_MAX CLOVIS_LAYOUT_UNITS_MAX
/** Data servers per mirror of a segment (units per segment), and the
 *  default width: 64 keeps a LAYOUTGET reply of one segment of a 32-copy
 *  mirror near 200 KiB; 32 makes 8 groups of 4+2 one segment. */
#define PNFS_FF_WIDTH_MAX 64u
#define PNFS_FF_WIDTH_DEFAULT 32u
/** Segments one pnfs_ff_span() may cover: bounds the work and the reply
 *  of one LAYOUTGET (a client asks again for the rest). */
#define PNFS_FF_SEGS_MAX 64u
/** Addresses of one data server (multipath_list4) and versions it
 *  speaks (ffda_versions) that a decoder takes. */
#define PNFS_FF_ADDRS_MAX 4u
#define PNFS_FF_VERSIONS_MAX 4u
/** na_r_netid: "tcp" or "tcp6" (RFC 5665), with room for the NUL. */
#define PNFS_FF_NETID_MAX 8u
/** na_r_addr: the longest IPv6 text (45) + ".255.255" + NUL fits. */
#define PNFS_FF_UADDR_MAX 64u
/** A server's name (the cluster file's, "s1"). */
#define PNFS_FF_NAME_MAX 63u

/** rsize / wsize of a data server when its struct says 0: 1 MiB. */
#define PNFS_FF_IOSIZE_DEFAULT (1u << 20)

/** No server holds this copy (failed device, not rebuilt yet). */
#define PNFS_FF_NO_SERVER UINT32_MAX

/* ------------------------------------------------------ decoded wire types */

/** One data server of a mirror: ff_data_server4, decoded.  Strings are
 *  NUL-terminated copies (a NUL inside one is refused). */
struct pnfs_ff_ds {
	uint8_t ds_deviceid[PNFS_FF_DEVICEID_SIZE];
	uint32_t ds_efficiency;
	uint32_t ds_stateid_seqid;
	uint8_t ds_stateid_other[PNFS_FF_STATEID_OTHER_SIZE];
	uint32_t ds_fh_nr;                       /**< 1..PNFS_FF_FH_VERS_MAX */
	uint32_t ds_fh_len[PNFS_FF_FH_VERS_MAX]; /**< each 1..PNFS_FF_FH_MAX */
	uint8_t ds_fh[PNFS_FF_FH_VERS_MAX][PNFS_FF_FH_MAX];
	char ds_user[PNFS_FF_OWNER_MAX + 1];
	char ds_group[PNFS_FF_OWNER_MAX + 1];
};

/**
 * ff_layout4, decoded.  Every mirror has the same number of data servers
 * (RFC 8435 5.1 assumes it; the decoder refuses otherwise).  fl_ds is the
 * caller's array: mirror m's data server i is fl_ds[m * fl_width + i].
 */
struct pnfs_ff_layout {
	uint64_t fl_stripe_unit; /**< 0 when fl_width is 1, else > 0 */
	uint32_t fl_mirrors;     /**< 1..PNFS_FF_MIRRORS_MAX */
	uint32_t fl_width;       /**< 1..PNFS_FF_WIDTH_MAX */
	struct pnfs_ff_ds *fl_ds;
	uint32_t fl_flags;       /**< ffl_flags, any bits (round trip) */
	uint32_t fl_stats_hint;  /**< ffl_stats_collect_hint */
};

/** One netaddr4: netid "tcp" or "tcp6" and a universal address
 *  ("h1.h2.h3.h4.p1.p2" or "<IPv6 text>.p1.p2", RFC 5665). */
struct pnfs_ff_addr {
	char fa_netid[PNFS_FF_NETID_MAX];
	char fa_uaddr[PNFS_FF_UADDR_MAX];
};

/** One ff_device_versions4. */
struct pnfs_ff_version {
	uint32_t fv_version;   /**< NFS version: 3 for Strata's DSes */
	uint32_t fv_minor;
	uint32_t fv_rsize;
	uint32_t fv_wsize;
	bool fv_tightly_coupled;
};

/** ff_device_addr4, decoded. */
struct pnfs_ff_devaddr {
	uint32_t fd_addrs_nr;    /**< 1..PNFS_FF_ADDRS_MAX */
	struct pnfs_ff_addr fd_addrs[PNFS_FF_ADDRS_MAX];
	uint32_t fd_versions_nr; /**< 1..PNFS_FF_VERSIONS_MAX */
	struct pnfs_ff_version fd_versions[PNFS_FF_VERSIONS_MAX];
};

/* ------------------------------------------------------ Strata's side */

/**
 * A Strata server as a pNFS data server.  Its address is given either as
 * sv_hostport ("10.0.0.1:2049", "[2001:db8::1]:2049": numeric only, no
 * name lookup here) or, with sv_hostport NULL, as sv_netid + sv_uaddr.
 * The caller owns the strings.
 */
struct pnfs_ff_server {
	const char *sv_name;      /**< 1..PNFS_FF_NAME_MAX bytes, unique */
	const char *sv_hostport;
	const char *sv_netid;
	const char *sv_uaddr;
	uint32_t sv_efficiency;   /**< ffds_efficiency of its data servers */
	uint32_t sv_rsize;        /**< 0 = PNFS_FF_IOSIZE_DEFAULT */
	uint32_t sv_wsize;        /**< 0 = PNFS_FF_IOSIZE_DEFAULT */
};

/**
 * Where a unit's data is now, as the MDS learnt it from the home server
 * (pd_group_map_dom() and the device -> server table of the cluster, or
 * the unit's record after a repair moved it to a spare slot).
 * un_server[c] is an index into pnfs_ff_file.fi_servers of the server
 * holding copy c (MIRROR: c < fi_copies; PDCLUST and PLAIN: c = 0 only),
 * or PNFS_FF_NO_SERVER when that copy cannot be read now.
 */
struct pnfs_ff_unit {
	uint64_t un_index;        /**< unit number: byte offset >> unit_shift */
	uint32_t un_server[PNFS_FF_MIRRORS_MAX];
};

/**
 * A file's layout in Strata terms, with the units of a span (whole
 * segments, as pnfs_ff_span() gave them).  Caller-owned throughout.
 */
struct pnfs_ff_file {
	struct clovis_id fi_id;     /**< the file's data object */
	uint32_t fi_layout;         /**< enum clovis_layout_type */
	uint32_t fi_unit_shift;     /**< PDCLUST, MIRROR: 12..24 */
	uint32_t fi_data_units;     /**< PDCLUST: N (1..32) */
	uint32_t fi_parity_units;   /**< PDCLUST: K, N + K <= 32; not exposed */
	uint32_t fi_copies;         /**< MIRROR: 2..32 */
	uint32_t fi_epoch;          /**< the cluster map epoch: in every fh */
	uint32_t fi_width;          /**< units per segment wanted, 0 = default */
	uint32_t fi_flags;          /**< ffl_flags: known bits, not
				     *   NO_IO_THRU_MDS (degraded reads need it) */
	uint32_t fi_stats_hint;     /**< ffl_stats_collect_hint */
	const char *fi_user;        /**< ffds_user: AUTH_SYS uid on the DSes */
	const char *fi_group;       /**< ffds_group */
	const struct pnfs_ff_server *fi_servers;
	uint32_t fi_servers_nr;
	const struct pnfs_ff_unit *fi_units; /**< consecutive, ascending */
	uint32_t fi_units_nr;
};

/** One layout segment: the range of a layout4 and its ff_layout4. */
struct pnfs_ff_seg {
	uint64_t sg_offset;
	uint64_t sg_length;          /**< PNFS_FF_LENGTH_EOF: to the end */
	struct pnfs_ff_layout sg_layout;
};

/**
 * The data server handle (nfs_fh4 of a unit), PNFS_FF_FH_SIZE bytes:
 *
 *   0..1    magic 'S' 'F'
 *   2       version, PNFS_FF_FH_VERSION
 *   3       layout: CLOVIS_LAYOUT_PLAIN, _PDCLUST or _MIRROR
 *   4..7    map epoch (big-endian)
 *   8..15   object id, high half (big-endian)
 *   16..23  object id, low half (big-endian)
 *   24..31  unit index (big-endian; 0 for PLAIN: the whole object)
 *
 * 32 bytes rather than 24: the epoch fences stale layouts (a DS refuses a
 * handle of an older epoch: NFS3ERR_STALE) and the layout byte lets a DS
 * read a PLAIN object whole; it still fits NFSv3's 64-byte handles.
 */
#define PNFS_FF_FH_SIZE 32u
#define PNFS_FF_FH_VERSION 1u
struct pnfs_ff_fh {
	uint32_t fh_layout;
	uint32_t fh_epoch;
	struct clovis_id fh_id;
	uint64_t fh_unit;
};

/* ------------------------------------------------------------ addresses */

/**
 * Convert "host:port" (dotted IPv4, or IPv6 in brackets: "[::1]:2049")
 * into a netaddr4: netid "tcp" / "tcp6" and its universal address (IPv6
 * in RFC 5952 form).  Returns 0, or -EINVAL (empty, no port, port not
 * 1..65535, not a numeric address, a zone "%eth0", missing brackets).
 */
int pnfs_ff_addr_from_hostport(const char *hostport, struct pnfs_ff_addr *out);

/**
 * Check a netaddr4: netid "tcp" with "h1.h2.h3.h4.p1.p2", or "tcp6" with
 * an IPv6 address then ".p1.p2"; p1, p2 decimal 0..255, port not 0.
 * Out (optional): *port.  Returns 0, -ENOTSUP (another netid) or -EINVAL.
 */
int pnfs_ff_addr_check(const struct pnfs_ff_addr *a, uint16_t *port);

/** A server's netaddr4 from its struct (either form).  0 or -EINVAL. */
int pnfs_ff_server_addr(const struct pnfs_ff_server *sv,
			struct pnfs_ff_addr *out);

/**
 * The device id of a server: bytes 0..7 the FNV-1a 64-bit hash of its
 * name, bytes 8..15 that of "<netid> <uaddr>\n" of its address, both
 * big-endian.  The same on every MDS; a server whose address changes gets
 * a new id, so no client keeps a stale GETDEVICEINFO answer.  0 or -EINVAL.
 */
int pnfs_ff_deviceid(const struct pnfs_ff_server *sv,
		     uint8_t id[PNFS_FF_DEVICEID_SIZE]);

/**
 * The ff_device_addr4 of a server: its one address, version NFSv3 (3, 0)
 * with its rsize / wsize, loosely coupled.  0 or -EINVAL.
 */
int pnfs_ff_devaddr_make(const struct pnfs_ff_server *sv,
			 struct pnfs_ff_devaddr *out);

/* ---------------------------------------------------------------- handles */

/** Write the handle of fh into out[PNFS_FF_FH_SIZE]. */
void pnfs_ff_fh_make(const struct pnfs_ff_fh *fh,
		     uint8_t out[PNFS_FF_FH_SIZE]);

/**
 * Parse a data server handle (what a DS does with an incoming nfs_fh).
 * Returns 0, or -EINVAL (length not PNFS_FF_FH_SIZE, bad magic, unknown
 * version or layout).
 */
int pnfs_ff_fh_parse(const uint8_t *buf, size_t len, struct pnfs_ff_fh *fh);

/* ----------------------------------------------------------------- mapping */

/**
 * The units an MDS must look up to answer LAYOUTGET for [offset, offset +
 * length) (length PNFS_FF_LENGTH_EOF: to the end of the file): whole
 * segments, from the one holding offset, at most segs_max
 * (1..PNFS_FF_SEGS_MAX) of them.  Reads the geometry of f only
 * (fi_layout, fi_unit_shift, fi_data_units, fi_width).  PLAIN: unit 0
 * alone.  A span never passes the last whole segment below 2^64 bytes.
 * Out: *first_unit, *units_nr.  0, -EINVAL (geometry, length 0, segs_max,
 * offset + length past 2^64), -ENOTSUP (layout) or -EOVERFLOW (offset in
 * the partial segment at the end of the 64-bit range).
 */
int pnfs_ff_span(const struct pnfs_ff_file *f, uint64_t offset,
		 uint64_t length, uint32_t segs_max, uint64_t *first_unit,
		 uint32_t *units_nr);

/**
 * Map the units of f (a span from pnfs_ff_span()) into layout segments:
 * segs[0..*segs_nr), their data servers in ds[0..ds_max) (each segment's
 * sg_layout.fl_ds points into it).  Deterministic: the same f gives the
 * same segments byte for byte.  All caller-owned.
 * Returns 0; -EINVAL (a field of f, naming it: geometry, strings, server
 * table or index, units not whole aligned segments or not consecutive);
 * -ENOTSUP (COMPOSITE or unknown layout type; PLAIN whose server is
 * PNFS_FF_NO_SERVER); -ENODEV (a unit has no readable copy: message names
 * the unit; nothing to hand out for its segment); -EOVERFLOW (segs_max or
 * ds_max too small, or a range past 2^64 bytes).
 */
int pnfs_ff_map(const struct pnfs_ff_file *f, struct pnfs_ff_seg *segs,
		uint32_t segs_max, uint32_t *segs_nr, struct pnfs_ff_ds *ds,
		uint32_t ds_max);

/* --------------------------------------------------------------------- XDR */

/**
 * Encode l as ff_layout4 into buf[0..size).  *len: the bytes written, or
 * with -ENOSPC the bytes needed (buf untouched past size).  -EINVAL when
 * l breaks a rule of struct pnfs_ff_layout (counts, stripe unit, lengths).
 */
int pnfs_ff_layout_encode(const struct pnfs_ff_layout *l, uint8_t *buf,
			  size_t size, size_t *len);

/**
 * Decode ff_layout4 from exactly buf[0..len) into l, its data servers
 * into ds[0..ds_max) (l->fl_ds = ds).  Every byte is checked: a buffer it
 * accepts encodes back to the same bytes.  0, -EINVAL or -EOVERFLOW.
 */
int pnfs_ff_layout_decode(const uint8_t *buf, size_t len,
			  struct pnfs_ff_layout *l, struct pnfs_ff_ds *ds,
			  uint32_t ds_max);

/** Encode d as ff_device_addr4, as pnfs_ff_layout_encode() does. */
int pnfs_ff_devaddr_encode(const struct pnfs_ff_devaddr *d, uint8_t *buf,
			   size_t size, size_t *len);

/** Decode ff_device_addr4 from exactly buf[0..len).  Addresses must pass
 *  pnfs_ff_addr_check() (another netid: -ENOTSUP).  0, -EINVAL,
 *  -EOVERFLOW or -ENOTSUP. */
int pnfs_ff_devaddr_decode(const uint8_t *buf, size_t len,
			   struct pnfs_ff_devaddr *d);

/**
 * Encode a layout4 of segment s with iomode (PNFS_FF_IOMODE_READ or _RW):
 * lo_offset, lo_length, lo_iomode, loc_type = flexfiles and loc_body =
 * the ff_layout4 of s.  As pnfs_ff_layout_encode() otherwise.
 */
int pnfs_ff_seg_encode(const struct pnfs_ff_seg *s, uint32_t iomode,
		       uint8_t *buf, size_t size, size_t *len);

/** Decode a flexfiles layout4 (another loc_type: -ENOTSUP); *iomode out. */
int pnfs_ff_seg_decode(const uint8_t *buf, size_t len, struct pnfs_ff_seg *s,
		       uint32_t *iomode, struct pnfs_ff_ds *ds, uint32_t ds_max);

#endif
