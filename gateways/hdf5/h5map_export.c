/*
 * gateways/hdf5/h5map_export.c — store -> HDF5 file (h5m_export()).
 *
 * The walk of h5map_walk.c visits the import from its root in link-name
 * order; each group, dataset, attribute and link is made again in a new
 * file with the properties its header kept: datatypes and dataspaces
 * decoded (H5Tdecode(), H5Sdecode()), the layout, chunk dims, the filter
 * pipeline (HDF5 compresses the chunks again as they are written), fill
 * value, allocation and fill times, creation-order flags.  Data is
 * written with the file's own datatype as the memory type, so HDF5
 * converts nothing: the bytes written are the bytes imported.
 *
 * Every record is input: a record changed on the store must give
 * -CLOVIS_ECORRUPT naming it, never a crash.  So each datatype is checked
 * as import checks it (h5m_type_check(): no pointers but a top-level
 * string of variable length, and then only with the record's vlen flag),
 * and every size the data is moved by (element, row, chunk, grid) is
 * computed again from the decoded type and space and must be the one the
 * header holds.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "gateways/hdf5/h5map_internal.h"

struct exp {
	hid_t ex_file;
	hid_t ex_stack[H5M_DEPTH_MAX + 2]; /* the open groups, root first */
	int ex_top;                         /* ex_stack[ex_top - 1]: parent */
	hid_t ex_cur;                       /* where the next attributes go */
	hid_t ex_dset;                      /* the open dataset, or -1 */
	struct h5m_stats ex_st;
};

/* The group the current entry is made in. */
static hid_t parent(const struct exp *ex)
{
	return ex->ex_stack[ex->ex_top - 1];
}

/* ------------------------------------------------ reading the object */

/* Bytes of an object's data read in order, H5M_IO_BYTES (or one block)
 * per op. */
struct rst {
	struct clovis_obj *rs_o;
	uint8_t *rs_buf;
	size_t rs_cap;
	size_t rs_len;
	size_t rs_pos;
	uint64_t rs_blk;
	uint64_t rs_left;   /* bytes not yet read from the object */
	const char *rs_what;
};

static int rst_get(struct rst *r, void *dst, size_t n)
{
	uint32_t shift = r->rs_o->ob_attr.oa_block_shift;
	uint8_t *d = dst;
	int rc = 0;

	while (n > 0 && rc == 0) {
		if (r->rs_pos == r->rs_len) {
			uint64_t want = r->rs_left < r->rs_cap ? r->rs_left
							       : r->rs_cap;
			uint64_t nblk = (want + (1ull << shift) - 1) >> shift;

			if (want == 0)
				return h5m_err(-CLOVIS_ECORRUPT, "%s: its data "
					       "object ends early", r->rs_what);
			rc = h5m_obj_io(r->rs_o, 0, r->rs_blk, nblk, r->rs_buf,
					r->rs_what);
			r->rs_blk += nblk;
			r->rs_len = (size_t)want;
			r->rs_left -= want;
			r->rs_pos = 0;
			continue;
		}
		size_t c = r->rs_len - r->rs_pos < n ? r->rs_len - r->rs_pos : n;

		memcpy(d, r->rs_buf + r->rs_pos, c);
		r->rs_pos += c;
		d += c;
		n -= c;
	}
	return rc;
}

/* Parse nr variable-length strings from stream s (len bytes) into
 * malloc()ed strings (NULL for a NULL string) in *out. */
static int vlen_parse(const uint8_t *s, size_t len, uint64_t nr, char ***out,
		      const char *what)
{
	struct h5m_rd r = { s, len, 0 };
	char **p;
	uint64_t i;

	*out = NULL;
	if (nr > len / 4) /* each element takes 4 bytes at least */
		return h5m_err(-CLOVIS_ECORRUPT, "%s: %zu bytes of string data "
			       "for %llu elements", what, len,
			       (unsigned long long)nr);
	p = calloc(nr ? (size_t)nr : 1, sizeof *p);
	if (p == NULL)
		return h5m_err(-ENOMEM, "%s: out of memory", what);
	for (i = 0; i < nr && !r.hr_bad; i++) {
		uint32_t n = h5m_get_u32(&r);
		const uint8_t *b;

		if (n == 0xffffffffu)
			continue;
		b = h5m_get_bytes(&r, n);
		p[i] = b != NULL ? strndup((const char *)b, n) : NULL;
		if (b != NULL && p[i] == NULL)
			r.hr_bad = 1;
	}
	*out = p;
	if (r.hr_bad || r.hr_left != 0)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: its string data is "
			       "damaged", what);
	return 0;
}

static void vlen_free(char **p, uint64_t nr)
{
	uint64_t i;

	for (i = 0; p != NULL && i < nr; i++)
		free(p[i]);
	free(p);
}

/*
 * HDF5 1.10's H5Tdecode() and H5Sdecode() take no length: they read what
 * the bytes say.  They decode a copy of the record's bytes followed by
 * H5M_DECODE_PAD zeros, so an encoding cut short reads zeros (a datatype
 * header of version 0, which HDF5 refuses) instead of what follows the
 * record.  The most a 1.10 decoder reads past a cut is an enum's names and
 * values: at most 65535 members of 8 + 8 bytes (1 MiB); 2 MiB of zero
 * pages cost nothing until read.
 */
#define H5M_DECODE_PAD (2u << 20)

/* Decode the datatype (type 1) or dataspace (type 0) bytes p (n) of a
 * record, from a zero-padded copy; it must encode again to the same n
 * bytes.  A dataspace must also hold its extent inside the n bytes and
 * select all (as import encodes it).  Returns the id, or -CLOVIS_ECORRUPT
 * naming what. */
static hid_t rec_decode(const uint8_t *p, uint32_t n, int type,
			const char *what)
{
	const char *kind = type ? "datatype" : "dataspace";
	uint8_t *c = calloc((size_t)n + H5M_DECODE_PAD, 1), *re = NULL;
	size_t rlen = 0;
	uint32_t ext;
	hid_t id = -1;

	if (c == NULL)
		return h5m_err(-ENOMEM, "%s: out of memory", what);
	if (n > 0)
		memcpy(c, p, n);
	/* H5Sencode(): id, version, size of sizes, u32 extent bytes, the
	 * extent, then the selection, a u32 type first */
	ext = n >= 7 ? (uint32_t)c[3] | (uint32_t)c[4] << 8 |
		       (uint32_t)c[5] << 16 | (uint32_t)c[6] << 24 : 0;
	if (!type && (n < 7 || ext > n - 7 || n - 7 - ext < 4 ||
		      c[7 + ext] != H5S_SEL_ALL || c[8 + ext] != 0 ||
		      c[9 + ext] != 0 || c[10 + ext] != 0))
		goto bad;
	id = type ? H5Tdecode(c) : H5Sdecode(c);
	if (id < 0)
		goto bad;
	if ((type ? H5Tencode(id, NULL, &rlen) : H5Sencode(id, NULL, &rlen)) < 0 ||
	    rlen != n || (re = malloc(n ? n : 1)) == NULL ||
	    (type ? H5Tencode(id, re, &rlen) : H5Sencode(id, re, &rlen)) < 0 ||
	    memcmp(re, p, n) != 0)
		goto bad;
	free(re);
	free(c);
	return id;
bad:
	if (id >= 0 && type)
		H5Tclose(id);
	else if (id >= 0)
		H5Sclose(id);
	free(re);
	free(c);
	return h5m_h5err(-CLOVIS_ECORRUPT, "%s: the record is damaged: its "
			 "%s (%u bytes) does not decode to one that encodes "
			 "to the same bytes", what, kind, n);
}

/* Decode the type and space of a record and check the type is one the
 * mapping makes, with vlen saying whether it is a string of variable
 * length.  Returns 0 (*t, *sp open) or -CLOVIS_ECORRUPT naming what. */
static int rec_type_space(const uint8_t *tp, uint32_t tlen,
			  const uint8_t *spp, uint32_t slen, int vlen,
			  hid_t *t, hid_t *sp, const char *what)
{
	char why[512];
	int rc;

	*sp = -1;
	*t = rec_decode(tp, tlen, 1, what);
	if (*t < 0)
		return (int)*t;
	*sp = rec_decode(spp, slen, 0, what);
	if (*sp < 0)
		return (int)*sp;
	rc = h5m_type_check(*t, 1, what, "");
	if (rc < 0) {
		snprintf(why, sizeof why, "%s", h5m_errmsg());
		return h5m_err(-CLOVIS_ECORRUPT, "%s: the record is damaged: "
			       "its datatype is not one import makes (%s)",
			       what, why);
	}
	if (rc != (vlen != 0))
		return h5m_err(-CLOVIS_ECORRUPT, "%s: the record is damaged: "
			       "its datatype is %s, its flag says %s", what,
			       rc ? "a variable-length string" :
			       "of fixed size", vlen ? "a string stream" :
			       "raw bytes");
	return 0;
}

/* -------------------------------------------------------- attributes */

/* Is the data of attribute record a right for nr elements of type t?
 * Raw bytes: exactly nr elements; a string stream: some bytes when there
 * are elements (vlen_parse() checks the rest); none without elements. */
static int attr_data_check(const struct h5m_attr *a, hid_t t, hssize_t nr,
			   const char *what)
{
	uint64_t want;

	if (nr == 0 && a->ha_dlen == 0)
		return 0;
	if (a->ha_vlen && nr > 0 && a->ha_dlen >= 4 * (uint64_t)nr)
		return 0;
	if (!a->ha_vlen && !__builtin_mul_overflow((uint64_t)nr,
						   (uint64_t)H5Tget_size(t),
						   &want) && a->ha_dlen == want)
		return 0;
	return h5m_err(-CLOVIS_ECORRUPT, "%s: the record is damaged: %llu "
		       "bytes of data for %lld elements", what,
		       (unsigned long long)a->ha_dlen, (long long)nr);
}

static int ex_attr(void *arg, const char *path, const char *name,
		   const struct h5m_attr *a)
{
	struct exp *ex = arg;
	char what[H5M_PATH_MAX + CLOVIS_KEY_MAX + 16];
	hid_t t = -1, sp = -1, at = -1, m = -1;
	hssize_t nr = -1;
	char **strs = NULL;
	int rc;

	snprintf(what, sizeof what, "%s attribute '%s'", path, name);
	rc = rec_type_space(a->ha_type, a->ha_tlen, a->ha_space, a->ha_slen,
			    a->ha_vlen, &t, &sp, what);
	if (rc == 0) {
		nr = H5Sget_simple_extent_npoints(sp);
		rc = nr < 0 ? h5m_h5err(-CLOVIS_ECORRUPT, "%s: its dataspace",
					what)
			    : attr_data_check(a, t, nr, what);
	}
	if (rc == 0) {
		at = H5Acreate2(ex->ex_cur, name, t, sp, H5P_DEFAULT,
				H5P_DEFAULT);
		if (at < 0)
			rc = h5m_h5err(-EIO, "%s: create", what);
	}
	if (rc == 0 && a->ha_vlen && nr > 0) {
		rc = vlen_parse(a->ha_data, a->ha_dlen, (uint64_t)nr, &strs,
				what);
		m = rc == 0 ? h5m_vlen_mem(t) : -1;
		if (rc == 0 && (m < 0 || H5Awrite(at, m, strs) < 0))
			rc = h5m_h5err(-EIO, "%s: write", what);
		vlen_free(strs, (uint64_t)nr);
	} else if (rc == 0 && nr > 0 && H5Awrite(at, t, a->ha_data) < 0) {
		rc = h5m_h5err(-EIO, "%s: write", what);
	}
	if (m >= 0)
		H5Tclose(m);
	if (at >= 0)
		H5Aclose(at);
	if (t >= 0)
		H5Tclose(t);
	if (sp >= 0)
		H5Sclose(sp);
	if (rc == 0)
		ex->ex_st.hs_attrs++;
	return rc;
}

/* ------------------------------------------------------------ groups */

static int ex_group(void *arg, const char *path, const char *name,
		    struct clovis_idx *ix, const struct h5m_hdr *h,
		    uint32_t attrs, uint32_t links)
{
	struct exp *ex = arg;
	hid_t g, gcpl;

	if (name == NULL) {
		g = H5Gopen2(ex->ex_file, "/", H5P_DEFAULT);
	} else {
		gcpl = H5Pcreate(H5P_GROUP_CREATE);
		if (gcpl >= 0 && h->hh_link_order != 0)
			H5Pset_link_creation_order(gcpl, h->hh_link_order);
		if (gcpl >= 0 && h->hh_attr_order != 0)
			H5Pset_attr_creation_order(gcpl, h->hh_attr_order);
		g = gcpl < 0 ? -1 : H5Gcreate2(parent(ex), name, H5P_DEFAULT,
					       gcpl, H5P_DEFAULT);
		if (gcpl >= 0)
			H5Pclose(gcpl);
	}
	if (g < 0)
		return h5m_h5err(-EIO, "%s: create the group", path);
	ex->ex_stack[ex->ex_top++] = g;
	ex->ex_cur = g;
	ex->ex_st.hs_groups++;
	return 0;
}

static int ex_group_end(void *arg, const char *path)
{
	struct exp *ex = arg;

	H5Gclose(ex->ex_stack[--ex->ex_top]);
	ex->ex_cur = ex->ex_top > 0 ? parent(ex) : -1;
	return 0;
}

static int ex_soft(void *arg, const char *path, const char *name,
		   const char *target)
{
	struct exp *ex = arg;

	if (H5Lcreate_soft(target, parent(ex), name, H5P_DEFAULT,
			   H5P_DEFAULT) < 0)
		return h5m_h5err(-EIO, "%s: soft link to '%s'", path, target);
	ex->ex_st.hs_soft++;
	return 0;
}

static int ex_hard(void *arg, const char *path, const char *name,
		   const char *first)
{
	struct exp *ex = arg;

	if (H5Lcreate_hard(ex->ex_file, first, parent(ex), name, H5P_DEFAULT,
			   H5P_DEFAULT) < 0)
		return h5m_h5err(-EIO, "%s: hard link to %s", path, first);
	ex->ex_st.hs_hard++;
	return 0;
}

/* ---------------------------------------------------------- datasets */

/* The creation properties of header h for type t. */
static hid_t ds_dcpl(const struct h5m_hdr *h, hid_t t, const char *path)
{
	struct h5m_rd r = { h->hh_filt, h->hh_filt_len, 0 };
	hid_t p = H5Pcreate(H5P_DATASET_CREATE);
	hsize_t chunk[H5M_RANK_MAX];
	unsigned cd[H5M_CD_MAX];
	uint32_t i, j;
	int bad = p < 0;

	for (i = 0; i < h->hh_rank; i++)
		chunk[i] = h->hh_chunk[i];
	if (!bad && h->hh_layout == H5M_L_CHUNKED)
		bad = H5Pset_chunk(p, (int)h->hh_rank, chunk) < 0;
	else if (!bad)
		bad = H5Pset_layout(p, h->hh_layout == H5M_L_COMPACT ?
				    H5D_COMPACT : H5D_CONTIGUOUS) < 0;
	for (i = 0; i < h->hh_nfilters && !bad; i++) {
		uint32_t id = h5m_get_u32(&r), fl = h5m_get_u32(&r);
		uint32_t n = h5m_get_u32(&r);

		for (j = 0; j < n && j < H5M_CD_MAX; j++)
			cd[j] = h5m_get_u32(&r);
		bad = r.hr_bad || n > H5M_CD_MAX ||
		      H5Pset_filter(p, (H5Z_filter_t)id, fl, n, cd) < 0;
	}
	if (!bad && h->hh_fill_def == H5D_FILL_VALUE_USER_DEFINED)
		bad = h->hh_flen != H5Tget_size(t) ||
		      H5Pset_fill_value(p, t, h->hh_fill) < 0;
	else if (!bad && h->hh_fill_def == H5D_FILL_VALUE_UNDEFINED)
		bad = H5Pset_fill_value(p, t, NULL) < 0;
	if (!bad)
		bad = H5Pset_alloc_time(p, (H5D_alloc_time_t)h->hh_alloc_time) < 0 ||
		      H5Pset_fill_time(p, (H5D_fill_time_t)h->hh_fill_time) < 0;
	if (!bad && h->hh_attr_order != 0)
		bad = H5Pset_attr_creation_order(p, h->hh_attr_order) < 0;
	if (bad && p >= 0) {
		H5Pclose(p);
		p = -1;
	}
	if (bad)
		h5m_h5err(-CLOVIS_ECORRUPT, "%s: its creation properties do "
			  "not apply", path);
	return p;
}

/* Contiguous and compact: the array's bytes in slabs of whole rows. */
static int ds_rows(hid_t d, hid_t t, hid_t sp, struct rst *r,
		   const char *path)
{
	hsize_t dims[H5S_MAX_RANK], count[H5S_MAX_RANK];
	int rank = H5Sget_simple_extent_ndims(sp), i, rc = 0, big = 0;
	uint64_t row = H5Tget_size(t), rows, r0, bytes;
	uint8_t *buf;

	H5Sget_simple_extent_dims(sp, dims, NULL);
	for (i = 1; i < rank; i++)
		big |= __builtin_mul_overflow(row, dims[i], &row);
	rows = rank == 0 || row >= H5M_IO_BYTES ? 1 : H5M_IO_BYTES / row;
	if (big || row > H5M_ROW_MAX ||
	    __builtin_mul_overflow(rows, row, &bytes))
		return h5m_err(-CLOVIS_ECORRUPT, "%s: the header is damaged: a "
			       "row past %llu bytes", path,
			       (unsigned long long)H5M_ROW_MAX);
	buf = malloc((size_t)bytes);
	if (buf == NULL)
		return h5m_err(-ENOMEM, "%s: out of memory", path);
	if (rank == 0) {
		rc = rst_get(r, buf, (size_t)row);
		if (rc == 0 && H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT,
					buf) < 0)
			rc = h5m_h5err(-EIO, "%s: write", path);
	}
	for (r0 = 0; rank > 0 && r0 < dims[0] && rc == 0; r0 += count[0]) {
		hid_t fs, ms;
		int bad = h5m_rows_slab(sp, rank, dims, r0, rows, count, &fs,
					&ms);

		rc = rst_get(r, buf, (size_t)(count[0] * row));
		if (rc == 0 && (bad != 0 ||
				H5Dwrite(d, t, ms, fs, H5P_DEFAULT, buf) < 0))
			rc = h5m_h5err(-EIO, "%s: write rows %llu..", path,
				       (unsigned long long)r0);
		h5m_spaces_close(fs, ms);
	}
	free(buf);
	return rc;
}

/* The chunk map of a chunked dataset into *map (malloc()ed; NULL when
 * no chunk is stored): its length fits the grid, its bits the count. */
static int map_get(struct clovis_idx *ix, const struct h5m_hdr *h,
		   uint8_t **map, const char *path)
{
	uint64_t set = 0;
	size_t mlen = 0, i;
	int rc;

	*map = NULL;
	rc = h5m_idx_get(ix, "m", 1, (void **)map, &mlen, path);
	if (rc == -ENOENT && h->hh_chunks_stored == 0)
		return 0;
	if (rc == -ENOENT)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: its chunk map is missing",
			       path);
	for (i = 0; rc == 0 && i < mlen; i++)
		set += (uint64_t)__builtin_popcount((*map)[i]);
	if (rc == 0 && (mlen != (h->hh_chunks + 7) / 8 ||
			set != h->hh_chunks_stored))
		rc = h5m_err(-CLOVIS_ECORRUPT, "%s: the chunk map is damaged: "
			     "%zu bytes with %llu chunks set, the header says "
			     "%llu chunks, %llu stored", path, mlen,
			     (unsigned long long)set,
			     (unsigned long long)h->hh_chunks,
			     (unsigned long long)h->hh_chunks_stored);
	if (rc != 0 || set == 0) {
		free(*map);
		*map = NULL;
	}
	return rc;
}

/* The offset and count of chunk ci of the grid of h over dims (row-major;
 * the grid checked by ds_check()), the count cut at the edge. */
static void chunk_box(const struct h5m_hdr *h, const hsize_t *dims,
		      uint64_t ci, hsize_t *off, hsize_t *count)
{
	uint32_t i;

	for (i = h->hh_rank; i-- > 0;) {
		uint64_t g = (dims[i] + h->hh_chunk[i] - 1) / h->hh_chunk[i];

		off[i] = (ci % g) * h->hh_chunk[i];
		ci /= g;
		count[i] = dims[i] - off[i] < h->hh_chunk[i] ?
			   dims[i] - off[i] : h->hh_chunk[i];
	}
}

/* Write strs over the part of d chunk ci covers (the same part of the
 * whole array in memory), so that HDF5 allocates that chunk alone. */
static int vlen_chunk(hid_t d, hid_t m, hid_t sp, const struct h5m_hdr *h,
		      uint64_t ci, char **strs, const char *path)
{
	hsize_t dims[H5S_MAX_RANK], off[H5S_MAX_RANK], count[H5S_MAX_RANK];
	hid_t fs = H5Scopy(sp), ms = H5Scopy(sp);
	int rc = 0;

	H5Sget_simple_extent_dims(sp, dims, NULL);
	chunk_box(h, dims, ci, off, count);
	if (fs < 0 || ms < 0 ||
	    H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, count, NULL) < 0 ||
	    H5Sselect_hyperslab(ms, H5S_SELECT_SET, off, NULL, count, NULL) < 0 ||
	    H5Dwrite(d, m, ms, fs, H5P_DEFAULT, strs) < 0)
		rc = h5m_h5err(-EIO, "%s: write chunk %llu", path,
			       (unsigned long long)ci);
	h5m_spaces_close(fs, ms);
	return rc;
}

/* Variable-length strings from the object's stream: all at once, or for
 * a chunked dataset, the chunks of its map one by one (those the source
 * file had allocated, and no other). */
static int ds_vlen(hid_t d, hid_t t, hid_t sp, struct rst *r,
		   const struct h5m_hdr *h, const uint8_t *map,
		   const char *path)
{
	hssize_t nr = H5Sget_simple_extent_npoints(sp);
	uint8_t *s = malloc(h->hh_bytes ? (size_t)h->hh_bytes : 1);
	char **strs = NULL;
	uint64_t ci;
	hid_t m = -1;
	int rc;

	if (s == NULL)
		return h5m_err(-ENOMEM, "%s: out of memory", path);
	rc = rst_get(r, s, (size_t)h->hh_bytes);
	if (rc == 0)
		rc = vlen_parse(s, (size_t)h->hh_bytes, (uint64_t)nr, &strs,
				path);
	if (rc == 0) {
		m = h5m_vlen_mem(t);
		if (m < 0)
			rc = h5m_h5err(-EIO, "%s: string memory type", path);
	}
	if (rc == 0 && map == NULL &&
	    H5Dwrite(d, m, H5S_ALL, H5S_ALL, H5P_DEFAULT, strs) < 0)
		rc = h5m_h5err(-EIO, "%s: write", path);
	for (ci = 0; map != NULL && ci < h->hh_chunks && rc == 0; ci++)
		if (map[ci / 8] & (1u << (ci % 8)))
			rc = vlen_chunk(d, m, sp, h, ci, strs, path);
	vlen_free(strs, (uint64_t)nr);
	if (m >= 0)
		H5Tclose(m);
	free(s);
	return rc;
}

/* Chunked: each chunk of the map, read from its extent, written back
 * over its part of the dataset. */
static int ds_chunks(hid_t d, hid_t t, hid_t sp, struct clovis_obj *o,
		     const struct h5m_hdr *h, const uint8_t *map,
		     const char *path, struct h5m_stats *st)
{
	hsize_t dims[H5S_MAX_RANK], off[H5S_MAX_RANK], count[H5S_MAX_RANK];
	hsize_t zero[H5S_MAX_RANK] = {0}, chunk[H5M_RANK_MAX];
	size_t bytes = (size_t)h->hh_slot_blocks << h->hh_block_shift;
	uint8_t *buf;
	hid_t fs, ms;
	uint64_t ci;
	uint32_t i;
	int rc = 0;

	H5Sget_simple_extent_dims(sp, dims, NULL);
	for (i = 0; i < h->hh_rank; i++)
		chunk[i] = h->hh_chunk[i];
	buf = malloc(bytes);
	fs = H5Scopy(sp);
	ms = H5Screate_simple((int)h->hh_rank, chunk, NULL);
	if (buf == NULL || fs < 0 || ms < 0)
		rc = h5m_err(-ENOMEM, "%s: chunk buffers", path);
	for (ci = 0; ci < h->hh_chunks && rc == 0; ci++) {
		if (!(map[ci / 8] & (1u << (ci % 8))))
			continue;
		chunk_box(h, dims, ci, off, count);
		rc = h5m_obj_io(o, 0, ci * h->hh_slot_blocks,
				h->hh_slot_blocks, buf, path);
		if (rc == 0 &&
		    (H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, count,
					 NULL) < 0 ||
		     H5Sselect_hyperslab(ms, H5S_SELECT_SET, zero, NULL, count,
					 NULL) < 0 ||
		     H5Dwrite(d, t, ms, fs, H5P_DEFAULT, buf) < 0))
			rc = h5m_h5err(-EIO, "%s: write chunk %llu", path,
				       (unsigned long long)ci);
		if (rc == 0)
			st->hs_chunks++;
	}
	h5m_spaces_close(fs, ms);
	free(buf);
	return rc;
}

/* Open the data object of h and check it is the one the header says: its
 * block size, and for a stream or a whole array, its byte size. */
static int data_open(struct h5m_store *s, const struct h5m_hdr *h,
		     struct clovis_obj *o, const char *path)
{
	int rc = clovis_obj_init(o, s->hs_realm, &h->hh_obj, NULL);

	if (rc < 0)
		return h5m_err_clovis(rc, "%s: its data object", path);
	rc = h5m_entity_run(&o->ob_entity, CLOVIS_EO_OPEN, path);
	if (rc == -ENOENT)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: its data object is "
			       "missing", path);
	if (rc == 0 && o->ob_attr.oa_block_shift != h->hh_block_shift)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: its data object has "
			       "blocks of 2^%u bytes, its header says 2^%u",
			       path, o->ob_attr.oa_block_shift,
			       h->hh_block_shift);
	if (rc == 0 && (h->hh_layout != H5M_L_CHUNKED || h->hh_vlen) &&
	    o->ob_attr.oa_size_bytes != h->hh_bytes)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: its data object holds "
			       "%llu bytes, its header says %llu", path,
			       (unsigned long long)o->ob_attr.oa_size_bytes,
			       (unsigned long long)h->hh_bytes);
	return rc;
}

/* The data of dataset d from its object. */
static int ds_data(struct exp *ex, hid_t d, hid_t t, hid_t sp,
		   struct clovis_idx *ix, const struct h5m_hdr *h,
		   struct h5m_store *s, const char *path)
{
	uint8_t *map = NULL;
	struct clovis_obj o;
	struct rst r;
	int rc = 0;

	if (h->hh_unalloc || H5Sget_simple_extent_npoints(sp) <= 0)
		return 0;
	if (h->hh_layout == H5M_L_CHUNKED)
		rc = map_get(ix, h, &map, path);
	if (rc != 0 || (h->hh_layout == H5M_L_CHUNKED && map == NULL))
		return rc; /* no chunk stored */
	rc = data_open(s, h, &o, path);
	if (rc == 0 && h->hh_layout == H5M_L_CHUNKED && !h->hh_vlen)
		rc = ds_chunks(d, t, sp, &o, h, map, path, &ex->ex_st);
	if (rc != 0 || (h->hh_layout == H5M_L_CHUNKED && !h->hh_vlen)) {
		free(map);
		return rc;
	}
	memset(&r, 0, sizeof r);
	r.rs_o = &o;
	r.rs_what = path;
	r.rs_left = h->hh_bytes;
	r.rs_cap = (size_t)1 << h->hh_block_shift;
	if (r.rs_cap < H5M_IO_BYTES)
		r.rs_cap = H5M_IO_BYTES;
	r.rs_buf = malloc(r.rs_cap);
	if (r.rs_buf == NULL)
		rc = h5m_err(-ENOMEM, "%s: out of memory", path);
	else
		rc = h->hh_vlen ? ds_vlen(d, t, sp, &r, h, map, path)
				: ds_rows(d, t, sp, &r, path);
	free(r.rs_buf);
	free(map);
	return rc;
}

/* Does header h fit the decoded type t and space sp?  Chunked: the rank,
 * the grid (hh_chunks) and, for fixed-size data, the chunk's bytes and
 * its slot; contiguous and compact raw data: the array's bytes.  These
 * are what the data is moved by. */
static int ds_check(const struct h5m_hdr *h, hid_t t, hid_t sp,
		    const char *path)
{
	hsize_t d[H5S_MAX_RANK];
	uint64_t dims[H5M_RANK_MAX], cb = H5Tget_size(t), nch = 0, all;
	uint64_t block = 1ull << h->hh_block_shift;
	int rank = H5Sget_simple_extent_ndims(sp), i, bad = 0;
	hssize_t np = H5Sget_simple_extent_npoints(sp);

	if (rank < 0 || np < 0 || H5Sget_simple_extent_dims(sp, d, NULL) < 0)
		return h5m_h5err(-CLOVIS_ECORRUPT, "%s: its dataspace", path);
	if (h->hh_fill_def == H5D_FILL_VALUE_USER_DEFINED && h->hh_vlen)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: the header is damaged: "
			       "a fill value for strings of variable length",
			       path);
	if (h->hh_layout != H5M_L_CHUNKED) {
		if (h->hh_vlen || h->hh_unalloc)
			return 0;
		if (__builtin_mul_overflow((uint64_t)np, cb, &all) ||
		    all != h->hh_bytes)
			return h5m_err(-CLOVIS_ECORRUPT, "%s: the header is "
				       "damaged: %llu bytes of data for %lld "
				       "elements of %llu bytes", path,
				       (unsigned long long)h->hh_bytes,
				       (long long)np, (unsigned long long)cb);
		return 0;
	}
	if ((uint32_t)rank != h->hh_rank || rank == 0)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: the header is damaged: "
			       "chunks of rank %u over a dataspace of rank %d",
			       path, h->hh_rank, rank);
	for (i = 0; i < rank; i++) {
		dims[i] = d[i];
		bad |= __builtin_mul_overflow(cb, h->hh_chunk[i], &cb);
	}
	if (h5m_grid(h->hh_rank, dims, h->hh_chunk, &nch) != 0 ||
	    nch != h->hh_chunks || nch > H5M_CHUNKS_MAX)
		return h5m_err(-CLOVIS_ECORRUPT, "%s: the header is damaged: "
			       "its chunk dims do not make a grid of the %llu "
			       "chunks it says", path,
			       (unsigned long long)h->hh_chunks);
	if (!h->hh_vlen && (bad || cb != h->hh_chunk_bytes ||
			    h->hh_slot_blocks != cb / block + (cb % block != 0)))
		return h5m_err(-CLOVIS_ECORRUPT, "%s: the header is damaged: "
			       "a chunk of %s%llu bytes in %u blocks of %llu, "
			       "it says %llu", path, bad ? "more than " : "",
			       (unsigned long long)cb, h->hh_slot_blocks,
			       (unsigned long long)block,
			       (unsigned long long)h->hh_chunk_bytes);
	return 0;
}

static int ex_dataset(void *arg, const char *path, const char *name,
		      struct clovis_idx *ix, const struct h5m_hdr *h,
		      uint32_t attrs, struct h5m_store *s)
{
	struct exp *ex = arg;
	char what[H5M_PATH_MAX + 32];
	hid_t t, sp, dcpl = -1, d = -1;
	int rc;

	snprintf(what, sizeof what, "%s (header)", path);
	rc = rec_type_space(h->hh_type, h->hh_tlen, h->hh_space, h->hh_slen,
			    h->hh_vlen, &t, &sp, what);
	if (rc == 0)
		rc = ds_check(h, t, sp, path);
	if (rc == 0) {
		dcpl = ds_dcpl(h, t, path);
		rc = dcpl < 0 ? -CLOVIS_ECORRUPT : 0;
	}
	if (rc == 0) {
		d = H5Dcreate2(parent(ex), name, t, sp, H5P_DEFAULT, dcpl,
			       H5P_DEFAULT);
		if (d < 0)
			rc = h5m_h5err(-EIO, "%s: create the dataset", path);
	}
	if (rc == 0)
		rc = ds_data(ex, d, t, sp, ix, h, s, path);
	if (rc == 0) {
		ex->ex_dset = ex->ex_cur = d;
		ex->ex_st.hs_datasets++;
		ex->ex_st.hs_bytes += h->hh_bytes;
	} else if (d >= 0) {
		H5Dclose(d);
	}
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (t >= 0)
		H5Tclose(t);
	if (sp >= 0)
		H5Sclose(sp);
	return rc;
}

static int ex_dataset_end(void *arg, const char *path)
{
	struct exp *ex = arg;

	H5Dclose(ex->ex_dset);
	ex->ex_dset = -1;
	ex->ex_cur = ex->ex_top > 0 ? parent(ex) : -1;
	return 0;
}

/* ------------------------------------------------------------- file */

/* The file's creation list: the root group's creation-order flags. */
static int root_fcpl(struct h5m_store *s, const struct h5m_cat *rec,
		     hid_t fcpl)
{
	struct clovis_idx ix;
	struct h5m_hdr h;
	void *v = NULL;
	size_t vlen = 0;
	int rc;

	rc = h5m_idx_open(s, &rec->hc_root, &ix, "/ (root index)");
	if (rc == 0)
		rc = h5m_idx_get(&ix, "h", 1, &v, &vlen, "/ (root header)");
	if (rc == 0)
		rc = h5m_hdr_decode(v, vlen, &h, "/");
	if (rc == -ENOENT)
		rc = h5m_err(-CLOVIS_ECORRUPT, "/: the root index or its "
			     "header is missing");
	if (rc == 0 && h.hh_link_order != 0)
		H5Pset_link_creation_order(fcpl, h.hh_link_order);
	if (rc == 0 && h.hh_attr_order != 0)
		H5Pset_attr_creation_order(fcpl, h.hh_attr_order);
	free(v);
	return rc;
}

/* Make the file path for rec: library bounds after its superblock. */
static hid_t file_make(struct h5m_store *s, const struct h5m_cat *rec,
		       const char *path)
{
	hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), fapl = H5Pcreate(H5P_FILE_ACCESS);
	H5F_libver_t low = rec->hc_super_version >= 3 ? H5F_LIBVER_V110 :
			   rec->hc_super_version == 2 ? H5F_LIBVER_V18 :
			   H5F_LIBVER_EARLIEST;
	hid_t f = -1;
	int rc = 0;

	if (fcpl < 0 || fapl < 0 ||
	    H5Pset_libver_bounds(fapl, low, H5F_LIBVER_LATEST) < 0)
		rc = h5m_h5err(-EIO, "%s: file properties", path);
	if (rc == 0)
		rc = root_fcpl(s, rec, fcpl);
	if (rc == 0) {
		f = H5Fcreate(path, H5F_ACC_EXCL, fcpl, fapl);
		if (f < 0)
			rc = h5m_h5err(-EIO, "%s: create", path);
	}
	if (fcpl >= 0)
		H5Pclose(fcpl);
	if (fapl >= 0)
		H5Pclose(fapl);
	return rc < 0 ? rc : f;
}

/* The directory path is made in must exist: -ENOENT (or -ENOTDIR) naming
 * the path, before anything else is done. */
static int out_dir_check(const char *path)
{
	char *copy = strdup(path);
	struct stat st;
	int rc = 0;

	if (copy == NULL)
		return h5m_err(-ENOMEM, "out of memory");
	if (stat(dirname(copy), &st) != 0)
		rc = h5m_err(-errno, "%s: its directory: %s", path,
			     strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		rc = h5m_err(-ENOTDIR, "%s: its directory is not one", path);
	free(copy);
	return rc;
}

int h5m_export(struct clovis *cl, const struct h5m_target *t,
	       const char *path, struct h5m_stats *st)
{
	static const struct h5m_visit v = {
		.v_group = ex_group, .v_group_end = ex_group_end,
		.v_dataset = ex_dataset, .v_dataset_end = ex_dataset_end,
		.v_attr = ex_attr, .v_soft = ex_soft, .v_hard = ex_hard,
	};
	struct h5m_target tt = *t;
	struct h5m_store s;
	struct clovis_idx cat;
	struct h5m_cat rec;
	struct exp ex;
	int rc;

	h5m_err(0, "%s", "");
	h5m_h5_quiet();
	memset(&ex, 0, sizeof ex);
	ex.ex_file = ex.ex_cur = ex.ex_dset = -1;
	if (access(path, F_OK) == 0)
		return h5m_err(-EEXIST, "%s exists: export makes a new file",
			       path);
	rc = out_dir_check(path);
	if (rc == 0)
		rc = h5m_cat_get_complete(cl, &tt, &s, &cat, &rec);
	if (rc != 0)
		return rc;
	ex.ex_file = file_make(&s, &rec, path);
	if (ex.ex_file < 0)
		return (int)ex.ex_file;
	rc = h5m_store_walk(&s, &rec, &v, &ex);
	if (ex.ex_dset >= 0)
		H5Dclose(ex.ex_dset);
	while (ex.ex_top > 0)
		H5Gclose(ex.ex_stack[--ex.ex_top]);
	if (H5Fclose(ex.ex_file) < 0 && rc == 0)
		rc = h5m_h5err(-EIO, "%s: close", path);
	if (rc != 0) {
		unlink(path);
		return rc;
	}
	if (st != NULL)
		*st = ex.ex_st;
	return 0;
}
