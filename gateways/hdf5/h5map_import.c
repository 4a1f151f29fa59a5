/*
 * gateways/hdf5/h5map_import.c — HDF5 file -> store (h5m_check(),
 * h5m_import()).
 *
 * One walker, two passes: the check pass (im_build 0) reads the whole
 * file's structure, types, layouts and filters and refuses what the
 * mapping does not support, touching no store; the build pass (im_build 1)
 * walks the same way and makes the indices, records and objects of
 * h5map.h.  Both read the groups' links and the objects' attributes in
 * name order, and visit each HDF5 object once (a set of the object
 * addresses seen: hard links and cycles).
 */
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "gateways/hdf5/h5map_internal.h"

/* ------------------------------------------------------------- errors */

/* The innermost description on HDF5's error stack (walked downward: the
 * first one is where the error was found). */
static herr_t err_walk(unsigned n, const H5E_error2_t *e, void *arg)
{
	if (n == 0 && e->desc != NULL)
		snprintf(arg, 256, "%s", e->desc);
	return 0;
}

int h5m_h5err(int rc, const char *fmt, ...)
{
	char what[H5M_PATH_MAX + 256], desc[256] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, err_walk, desc);
	H5Eclear2(H5E_DEFAULT);
	if (desc[0] != '\0')
		return h5m_err(rc, "%s: HDF5: %s", what, desc);
	return h5m_err(rc, "%s", what);
}

void h5m_h5_quiet(void)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

/* -------------------------------------------------- the address set */

/* HDF5 object addresses seen, with the index id each got. */
struct addrset {
	haddr_t *as_addr;
	struct clovis_id *as_ids;
	uint8_t *as_used;
	size_t as_nr;
	size_t as_cap;
};

static size_t addr_slot(const struct addrset *s, haddr_t a)
{
	size_t i = (size_t)((a * 0x9e3779b97f4a7c15ull) >> 17) & (s->as_cap - 1);

	while (s->as_used[i] && s->as_addr[i] != a)
		i = (i + 1) & (s->as_cap - 1);
	return i;
}

static const struct clovis_id *addr_find(const struct addrset *s, haddr_t a)
{
	size_t i;

	if (s->as_cap == 0)
		return NULL;
	i = addr_slot(s, a);
	return s->as_used[i] ? &s->as_ids[i] : NULL;
}

static int addr_add(struct addrset *s, haddr_t a, const struct clovis_id *id)
{
	size_t i;

	if (2 * (s->as_nr + 1) > s->as_cap) {
		struct addrset n = { NULL, NULL, NULL, 0,
				     s->as_cap ? 2 * s->as_cap : 64 };

		n.as_addr = calloc(n.as_cap, sizeof *n.as_addr);
		n.as_ids = calloc(n.as_cap, sizeof *n.as_ids);
		n.as_used = calloc(n.as_cap, 1);
		if (!n.as_addr || !n.as_ids || !n.as_used) {
			free(n.as_addr);
			free(n.as_ids);
			free(n.as_used);
			return h5m_err(-ENOMEM, "out of memory (objects seen)");
		}
		for (i = 0; i < s->as_cap; i++) {
			size_t j;

			if (!s->as_used[i])
				continue;
			j = addr_slot(&n, s->as_addr[i]);
			n.as_addr[j] = s->as_addr[i];
			n.as_ids[j] = s->as_ids[i];
			n.as_used[j] = 1;
		}
		n.as_nr = s->as_nr;
		free(s->as_addr);
		free(s->as_ids);
		free(s->as_used);
		*s = n;
	}
	i = addr_slot(s, a);
	s->as_addr[i] = a;
	s->as_ids[i] = *id;
	s->as_used[i] = 1;
	s->as_nr++;
	return 0;
}

static void addr_free(struct addrset *s)
{
	free(s->as_addr);
	free(s->as_ids);
	free(s->as_used);
	memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------ walker */

struct imp {
	int im_build;             /* 0: check only; 1: make the mapping */
	struct h5m_store *im_s;
	uint32_t im_tier;
	hid_t im_file;
	struct h5m_stats im_st;
	struct addrset im_seen;
	char im_path[H5M_PATH_MAX];
	uint32_t im_depth;
};

/* A list of names (links or attributes), in the order HDF5 gave them. */
struct names {
	char **nm_v;
	size_t nm_nr;
	size_t nm_cap;
};

static int names_add(struct names *n, const char *name)
{
	if (n->nm_nr == n->nm_cap) {
		size_t cap = n->nm_cap ? 2 * n->nm_cap : 16;
		char **v = realloc(n->nm_v, cap * sizeof *v);

		if (v == NULL)
			return -1;
		n->nm_v = v;
		n->nm_cap = cap;
	}
	n->nm_v[n->nm_nr] = strdup(name);
	return n->nm_v[n->nm_nr++] == NULL ? -1 : 0;
}

static void names_free(struct names *n)
{
	size_t i;

	for (i = 0; i < n->nm_nr; i++)
		free(n->nm_v[i]);
	free(n->nm_v);
	memset(n, 0, sizeof *n);
}

static herr_t link_name(hid_t g, const char *name, const H5L_info_t *li,
			void *arg)
{
	return names_add(arg, name) < 0 ? -1 : 0;
}

static herr_t attr_name(hid_t o, const char *name, const H5A_info_t *ai,
			void *arg)
{
	return names_add(arg, name) < 0 ? -1 : 0;
}

/* Append "/name" to im_path; returns the old length or -ENAMETOOLONG. */
static int path_push(struct imp *im, const char *name)
{
	size_t len = strlen(im->im_path), sep = len > 1, n = strlen(name);

	if (len + sep + n + 1 > H5M_PATH_MAX)
		return h5m_err(-ENAMETOOLONG, "%s/%s: path longer than %u bytes",
			       im->im_path, name, H5M_PATH_MAX);
	if (sep)
		im->im_path[len] = '/';
	memcpy(im->im_path + len + sep, name, n + 1);
	return (int)len;
}

/* A record key: prefix byte and name; -ENAMETOOLONG past the key limit. */
static int rec_key(struct imp *im, char prefix, const char *name, char *key,
		   size_t *klen, const char *kind)
{
	size_t n = strlen(name);

	if (n > H5M_KEY_NAME_MAX)
		return h5m_err(-ENAMETOOLONG, "%s: %s name of %zu bytes (at "
			       "most %u are kept)", im->im_path, kind, n,
			       H5M_KEY_NAME_MAX);
	key[0] = prefix;
	memcpy(key + 1, name, n);
	*klen = n + 1;
	return 0;
}

/* ------------------------------------------------------------- types */

/* The datatypes the mapping makes (h5map_internal.h): import refuses the
 * rest, export checks every type it decodes from a record. */
int h5m_type_check(hid_t t, int top, const char *path, const char *what)
{
	H5T_class_t cls = H5Tget_class(t);
	int rc = 0, i, n;
	hid_t m;

	switch (cls) {
	case H5T_INTEGER: case H5T_FLOAT: case H5T_BITFIELD:
	case H5T_OPAQUE: case H5T_ENUM:
		return 0;
	case H5T_STRING:
		if (H5Tis_variable_str(t) <= 0)
			return 0;
		if (top)
			return 1;
		return h5m_err(-ENOTSUP, "%s%s: a variable-length string "
			       "inside a compound or array type is not "
			       "supported", path, what);
	case H5T_COMPOUND:
		n = H5Tget_nmembers(t);
		for (i = 0; i < n && rc == 0; i++) {
			m = H5Tget_member_type(t, (unsigned)i);
			rc = m < 0 ? h5m_h5err(-EIO, "%s%s: member %d", path,
					       what, i)
				   : h5m_type_check(m, 0, path, what);
			if (m >= 0)
				H5Tclose(m);
		}
		return rc;
	case H5T_ARRAY:
		m = H5Tget_super(t);
		rc = m < 0 ? h5m_h5err(-EIO, "%s%s: array base type", path,
				       what)
			   : h5m_type_check(m, 0, path, what);
		if (m >= 0)
			H5Tclose(m);
		return rc;
	case H5T_VLEN:
		return h5m_err(-ENOTSUP, "%s%s: variable-length sequences "
			       "(H5T_VLEN) are not supported", path, what);
	case H5T_REFERENCE:
		return h5m_err(-ENOTSUP, "%s%s: references (H5T_REFERENCE) "
			       "are not supported", path, what);
	default:
		return h5m_err(-ENOTSUP, "%s%s: datatype class %d is not "
			       "supported", path, what, (int)cls);
	}
}

/* Check t of a dataset or attribute: not committed, supported. */
static int type_ok(struct imp *im, hid_t t, const char *what)
{
	if (H5Tcommitted(t) > 0)
		return h5m_err(-ENOTSUP, "%s%s: uses a committed (named) "
			       "datatype: not supported", im->im_path, what);
	return h5m_type_check(t, 1, im->im_path, what);
}

hid_t h5m_vlen_mem(hid_t t)
{
	hid_t m = H5Tcopy(H5T_C_S1);

	if (m < 0)
		return m;
	if (H5Tset_size(m, H5T_VARIABLE) < 0 ||
	    H5Tset_cset(m, H5Tget_cset(t)) < 0 ||
	    H5Tset_strpad(m, H5Tget_strpad(t)) < 0) {
		H5Tclose(m);
		return -1;
	}
	return m;
}

int h5m_rows_slab(hid_t sp, int rank, const hsize_t *dims, uint64_t r0,
		  uint64_t rows, hsize_t *count, hid_t *fs, hid_t *ms)
{
	hsize_t start[H5S_MAX_RANK] = {0};

	*fs = H5Scopy(sp);
	memcpy(count, dims, (size_t)rank * sizeof *count);
	start[0] = r0;
	count[0] = dims[0] - r0 < rows ? dims[0] - r0 : rows;
	*ms = H5Screate_simple(rank, count, NULL);
	if (*fs < 0 || *ms < 0 ||
	    H5Sselect_hyperslab(*fs, H5S_SELECT_SET, start, NULL, count,
				NULL) < 0)
		return -1;
	return 0;
}

void h5m_spaces_close(hid_t fs, hid_t ms)
{
	if (fs >= 0)
		H5Sclose(fs);
	if (ms >= 0)
		H5Sclose(ms);
}

/* Append H5Tencode()/H5Sencode() bytes of id to b. */
static int encode_into(struct imp *im, struct h5m_buf *b, hid_t id, int type,
		       const char *what)
{
	size_t n = 0;
	uint8_t *p;
	herr_t e;

	e = type ? H5Tencode(id, NULL, &n) : H5Sencode(id, NULL, &n);
	if (e < 0)
		return h5m_h5err(-EIO, "%s%s: encode its %s", im->im_path, what,
				 type ? "datatype" : "dataspace");
	p = h5m_put_space(b, n);
	if (p == NULL)
		return h5m_err(-ENOMEM, "%s: out of memory", im->im_path);
	e = type ? H5Tencode(id, p, &n) : H5Sencode(id, p, &n);
	if (e < 0)
		return h5m_h5err(-EIO, "%s%s: encode its %s", im->im_path, what,
				 type ? "datatype" : "dataspace");
	return 0;
}

/* The variable-length strings of p (nr) as the stream of h5map.h. */
static int vlen_stream(struct imp *im, char **p, hssize_t nr,
		       struct h5m_buf *b)
{
	hssize_t i;

	for (i = 0; i < nr; i++) {
		size_t n = p[i] != NULL ? strlen(p[i]) : 0;

		if (n >= 0xffffffffu)
			return h5m_err(-EFBIG, "%s: a string of %zu bytes",
				       im->im_path, n);
		h5m_put_u32(b, p[i] != NULL ? (uint32_t)n : 0xffffffffu);
		h5m_put_bytes(b, p[i], n);
	}
	return b->hb_oom ? h5m_err(-ENOMEM, "%s: out of memory", im->im_path)
			 : 0;
}

/* -------------------------------------------------------- attributes */

/* The data of attribute a (type t, space sp) into b: raw or stream. */
static int attr_data(struct imp *im, hid_t a, hid_t t, hid_t sp, int vlen,
		     struct h5m_buf *b, const char *what)
{
	hssize_t nr = H5Sget_select_npoints(sp);
	size_t bytes;
	hid_t m;
	char **p;
	int rc;

	if (nr <= 0 || H5Sget_simple_extent_type(sp) == H5S_NULL)
		return 0;
	if (!vlen) {
		bytes = (size_t)nr * H5Tget_size(t);
		if (bytes > CLOVIS_VAL_MAX)
			return h5m_err(-EFBIG, "%s%s: %zu bytes of data (at "
				       "most %u in one record)", im->im_path,
				       what, bytes, CLOVIS_VAL_MAX);
		uint8_t *d = h5m_put_space(b, bytes);

		if (d == NULL)
			return h5m_err(-ENOMEM, "%s: out of memory", im->im_path);
		if (H5Aread(a, t, d) < 0)
			return h5m_h5err(-EIO, "%s%s: read", im->im_path, what);
		return 0;
	}
	m = h5m_vlen_mem(t);
	p = calloc((size_t)nr, sizeof *p);
	if (m < 0 || p == NULL || H5Aread(a, m, p) < 0) {
		rc = h5m_h5err(p ? -EIO : -ENOMEM, "%s%s: read", im->im_path,
			       what);
	} else {
		rc = vlen_stream(im, p, nr, b);
		H5Dvlen_reclaim(m, sp, H5P_DEFAULT, p);
	}
	free(p);
	if (m >= 0)
		H5Tclose(m);
	return rc;
}

/* Encode attribute name of obj into rec. */
static int attr_record(struct imp *im, hid_t obj, const char *name,
		       struct h5m_buf *rec)
{
	struct h5m_buf tb = {0}, sb = {0}, db = {0};
	char what[CLOVIS_KEY_MAX + 32];
	struct h5m_attr at;
	hid_t a, t = -1, sp = -1;
	int rc, vlen = 0;

	snprintf(what, sizeof what, " attribute '%s'", name);
	a = H5Aopen(obj, name, H5P_DEFAULT);
	if (a < 0)
		return h5m_h5err(-EIO, "%s%s: open", im->im_path, what);
	t = H5Aget_type(a);
	sp = H5Aget_space(a);
	rc = t < 0 || sp < 0 ? h5m_h5err(-EIO, "%s%s", im->im_path, what) : 0;
	if (rc == 0)
		rc = vlen = type_ok(im, t, what);
	if (rc >= 0)
		rc = encode_into(im, &tb, t, 1, what);
	if (rc == 0)
		rc = encode_into(im, &sb, sp, 0, what);
	if (rc == 0)
		rc = attr_data(im, a, t, sp, vlen, &db, what);
	if (rc == 0) {
		at = (struct h5m_attr){ (uint8_t)vlen, tb.hb_data,
					(uint32_t)tb.hb_len, sb.hb_data,
					(uint32_t)sb.hb_len, db.hb_data,
					db.hb_len };
		h5m_attr_encode(rec, &at);
		if (rec->hb_oom)
			rc = h5m_err(-ENOMEM, "%s: out of memory", im->im_path);
		else if (rec->hb_len > CLOVIS_VAL_MAX)
			rc = h5m_err(-EFBIG, "%s%s: %zu bytes encoded (at most "
				     "%u in one record)", im->im_path, what,
				     rec->hb_len, CLOVIS_VAL_MAX);
	}
	h5m_buf_free(&tb);
	h5m_buf_free(&sb);
	h5m_buf_free(&db);
	if (t >= 0)
		H5Tclose(t);
	if (sp >= 0)
		H5Sclose(sp);
	H5Aclose(a);
	return rc;
}

/* Every attribute of obj, in name order, as records of ix (build). */
static int imp_attrs(struct imp *im, hid_t obj, struct clovis_idx *ix)
{
	struct names n = {0};
	char key[CLOVIS_KEY_MAX + 1];
	size_t i, klen = 0;
	int rc = 0;

	if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, NULL, attr_name,
			&n) < 0)
		rc = h5m_h5err(-EIO, "%s: list its attributes", im->im_path);
	for (i = 0; i < n.nm_nr && rc == 0; i++) {
		struct h5m_buf rec = {0};

		rc = rec_key(im, H5M_KEY_ATTR, n.nm_v[i], key, &klen,
			     "attribute");
		if (rc == 0)
			rc = attr_record(im, obj, n.nm_v[i], &rec);
		if (rc == 0 && im->im_build)
			rc = h5m_idx_put(ix, key, klen, rec.hb_data,
					 rec.hb_len, 0, im->im_path);
		if (rc == 0)
			im->im_st.hs_attrs++;
		h5m_buf_free(&rec);
	}
	names_free(&n);
	return rc;
}

/* -------------------------------------------------------- the walk */

static int imp_dataset(struct imp *im, hid_t d, struct clovis_idx *ix);
static int imp_group(struct imp *im, hid_t g, struct clovis_idx *ix);

/* Put header h as record "h" of ix (overwrite: replace it). */
static int put_hdr(struct imp *im, struct clovis_idx *ix,
		    const struct h5m_hdr *h, int overwrite)
{
	struct h5m_buf b = {0};
	int rc;

	h5m_hdr_encode(&b, h);
	if (b.hb_oom)
		rc = h5m_err(-ENOMEM, "%s: out of memory", im->im_path);
	else if (b.hb_len > CLOVIS_VAL_MAX)
		rc = h5m_err(-EFBIG, "%s: a header of %zu bytes (at most %u in "
			     "one record)", im->im_path, b.hb_len,
			     CLOVIS_VAL_MAX);
	else
		rc = im->im_build ? h5m_idx_put(ix, "h", 1, b.hb_data,
						b.hb_len, overwrite,
						im->im_path) : 0;
	h5m_buf_free(&b);
	return rc;
}

/* The child object of a new hard link: its index made, then walked. */
static int imp_child(struct imp *im, hid_t g, const char *name,
		     const struct clovis_id *id, int kind)
{
	struct clovis_idx ix;
	hid_t o;
	int rc = 0;

	if (im->im_build)
		rc = h5m_idx_create(im->im_s, id, &ix, im->im_path);
	if (rc != 0)
		return rc;
	o = H5Oopen(g, name, H5P_DEFAULT);
	if (o < 0)
		return h5m_h5err(-EIO, "%s: open", im->im_path);
	rc = kind == H5M_GROUP ? imp_group(im, o, &ix)
			       : imp_dataset(im, o, &ix);
	H5Oclose(o);
	return rc;
}

/* A hard link: its record (naming the target's index), then the target
 * the first time its address is seen. */
static int imp_hard(struct imp *im, hid_t g, const char *name,
		    struct clovis_idx *gix, const char *key, size_t klen)
{
	const struct clovis_id *seen;
	struct clovis_id id;
	struct h5m_buf b = {0};
	H5O_info_t oi;
	int rc, kind;

	if (H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC,
				 H5P_DEFAULT) < 0)
		return h5m_h5err(-EIO, "%s: object info", im->im_path);
	if (oi.type == H5O_TYPE_NAMED_DATATYPE)
		return h5m_err(-ENOTSUP, "%s: a committed (named) datatype: "
			       "not supported", im->im_path);
	if (oi.type != H5O_TYPE_GROUP && oi.type != H5O_TYPE_DATASET)
		return h5m_err(-ENOTSUP, "%s: an object of type %d: not "
			       "supported", im->im_path, (int)oi.type);
	kind = oi.type == H5O_TYPE_GROUP ? H5M_GROUP : H5M_DATASET;
	seen = addr_find(&im->im_seen, oi.addr);
	if (seen != NULL)
		id = *seen;
	else
		h5m_id_random(&id);
	h5m_put_u8(&b, H5M_HARD);
	h5m_put_u8(&b, (uint8_t)kind);
	h5m_put_id(&b, &id);
	rc = im->im_build ? h5m_idx_put(gix, key, klen, b.hb_data, b.hb_len, 0,
					im->im_path) : 0;
	h5m_buf_free(&b);
	if (rc == 0 && seen != NULL) {
		im->im_st.hs_hard++;
		return 0;
	}
	if (rc == 0)
		rc = addr_add(&im->im_seen, oi.addr, &id);
	if (rc == 0)
		rc = imp_child(im, g, name, &id, kind);
	return rc;
}

/* A soft link: its record holds the target path. */
static int imp_soft(struct imp *im, hid_t g, const char *name, size_t size,
		    struct clovis_idx *gix, const char *key, size_t klen)
{
	struct h5m_buf b = {0};
	uint8_t *p;
	int rc = 0;

	h5m_put_u8(&b, H5M_SOFT);
	p = h5m_put_space(&b, size);
	if (p == NULL)
		rc = h5m_err(-ENOMEM, "%s: out of memory", im->im_path);
	else if (H5Lget_val(g, name, p, size, H5P_DEFAULT) < 0)
		rc = h5m_h5err(-EIO, "%s: soft link value", im->im_path);
	if (rc == 0 && size > 0 && p[size - 1] == '\0')
		b.hb_len--; /* the value without its NUL */
	if (rc == 0 && b.hb_len > CLOVIS_VAL_MAX)
		rc = h5m_err(-EFBIG, "%s: soft link value of %zu bytes",
			     im->im_path, b.hb_len);
	if (rc == 0 && im->im_build)
		rc = h5m_idx_put(gix, key, klen, b.hb_data, b.hb_len, 0,
				 im->im_path);
	if (rc == 0)
		im->im_st.hs_soft++;
	h5m_buf_free(&b);
	return rc;
}

/* One link of group g (its path pushed already). */
static int imp_link(struct imp *im, hid_t g, const char *name,
		    struct clovis_idx *gix)
{
	char key[CLOVIS_KEY_MAX + 1];
	H5L_info_t li;
	size_t klen = 0;
	int rc;

	rc = rec_key(im, H5M_KEY_LINK, name, key, &klen, "link");
	if (rc != 0)
		return rc;
	if (H5Lget_info(g, name, &li, H5P_DEFAULT) < 0)
		return h5m_h5err(-EIO, "%s: link info", im->im_path);
	switch (li.type) {
	case H5L_TYPE_HARD:
		return imp_hard(im, g, name, gix, key, klen);
	case H5L_TYPE_SOFT:
		return imp_soft(im, g, name, li.u.val_size, gix, key, klen);
	case H5L_TYPE_EXTERNAL:
		return h5m_err(-ENOTSUP, "%s: an external link: not "
			       "supported", im->im_path);
	default:
		return h5m_err(-ENOTSUP, "%s: a user-defined link (type %d): "
			       "not supported", im->im_path, (int)li.type);
	}
}

/* A group: header, attributes, then each link in name order. */
static int imp_group(struct imp *im, hid_t g, struct clovis_idx *ix)
{
	struct h5m_hdr h;
	struct names n = {0};
	unsigned lo = 0, ao = 0;
	hid_t gcpl;
	size_t i;
	int rc = 0, old;

	if (++im->im_depth > H5M_DEPTH_MAX)
		return h5m_err(-ENOTSUP, "groups nested deeper than %u: %s",
			       H5M_DEPTH_MAX, im->im_path);
	gcpl = H5Gget_create_plist(g);
	if (gcpl < 0 || H5Pget_link_creation_order(gcpl, &lo) < 0 ||
	    H5Pget_attr_creation_order(gcpl, &ao) < 0)
		rc = h5m_h5err(-EIO, "%s: group properties", im->im_path);
	if (gcpl >= 0)
		H5Pclose(gcpl);
	memset(&h, 0, sizeof h);
	h.hh_kind = H5M_GROUP;
	h.hh_link_order = lo;
	h.hh_attr_order = ao;
	if (rc == 0)
		rc = put_hdr(im, ix, &h, 0);
	if (rc == 0)
		rc = imp_attrs(im, g, ix);
	if (rc == 0 && H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL,
				  link_name, &n) < 0)
		rc = h5m_h5err(-EIO, "%s: list its links", im->im_path);
	for (i = 0; i < n.nm_nr && rc == 0; i++) {
		old = path_push(im, n.nm_v[i]);
		if (old < 0) {
			rc = old;
			break;
		}
		rc = imp_link(im, g, n.nm_v[i], ix);
		im->im_path[old] = '\0';
	}
	names_free(&n);
	if (rc == 0)
		im->im_st.hs_groups++;
	im->im_depth--;
	return rc;
}

/* ---------------------------------------------------------- datasets */

/* A dataset's HDF5 handles and what its header records. */
struct ds {
	hid_t ds_type;
	hid_t ds_space;
	hid_t ds_dcpl;
	int ds_vlen;
	int ds_rank;                  /* of the dataspace (0: scalar, null) */
	hsize_t ds_dims[H5S_MAX_RANK];
	hssize_t ds_npoints;
	size_t ds_esize;
	struct h5m_hdr ds_h;
	struct h5m_buf ds_tb, ds_sb, ds_fb, ds_filt; /* encoded parts */
};

static void ds_fini(struct ds *ds)
{
	if (ds->ds_type >= 0)
		H5Tclose(ds->ds_type);
	if (ds->ds_space >= 0)
		H5Sclose(ds->ds_space);
	if (ds->ds_dcpl >= 0)
		H5Pclose(ds->ds_dcpl);
	h5m_buf_free(&ds->ds_tb);
	h5m_buf_free(&ds->ds_sb);
	h5m_buf_free(&ds->ds_fb);
	h5m_buf_free(&ds->ds_filt);
}

/* The smallest shift in lo..hi whose block holds bytes (hi if none). */
static uint32_t shift_for(uint64_t bytes, uint32_t lo, uint32_t hi)
{
	uint32_t s = lo;

	while (s < hi && (1ull << s) < bytes)
		s++;
	return s;
}

/* The filter pipeline: each filter must be one this library can apply
 * again on export (built in, encoder enabled). */
static int ds_filters(struct imp *im, struct ds *ds)
{
	int n = H5Pget_nfilters(ds->ds_dcpl), i;
	unsigned cd[H5M_CD_MAX], flags, cfg;
	char name[64];

	if (n < 0)
		return h5m_h5err(-EIO, "%s: its filters", im->im_path);
	for (i = 0; i < n; i++) {
		size_t ncd = H5M_CD_MAX, j;
		H5Z_filter_t id;

		name[0] = '\0';
		id = H5Pget_filter2(ds->ds_dcpl, (unsigned)i, &flags, &ncd, cd,
				    sizeof name, name, &cfg);
		if (id < 0)
			return h5m_h5err(-EIO, "%s: filter %d", im->im_path, i);
		if (H5Zfilter_avail(id) <= 0 || H5Zget_filter_info(id, &cfg) < 0 ||
		    !(cfg & H5Z_FILTER_CONFIG_ENCODE_ENABLED)) {
			H5Eclear2(H5E_DEFAULT);
			return h5m_err(-ENOTSUP, "%s: filter %d (%s) cannot be "
				       "applied again by this HDF5 library: not "
				       "supported", im->im_path, (int)id,
				       name[0] ? name : "unnamed");
		}
		if (ncd > H5M_CD_MAX)
			return h5m_err(-ENOTSUP, "%s: filter %d has %zu client "
				       "values (at most %u)", im->im_path,
				       (int)id, ncd, H5M_CD_MAX);
		h5m_put_u32(&ds->ds_filt, (uint32_t)id);
		h5m_put_u32(&ds->ds_filt, flags);
		h5m_put_u32(&ds->ds_filt, (uint32_t)ncd);
		for (j = 0; j < ncd; j++)
			h5m_put_u32(&ds->ds_filt, cd[j]);
	}
	ds->ds_h.hh_nfilters = (uint32_t)n;
	return 0;
}

/* Chunked: chunk dims, the grid over the current dims, block and slot. */
static int ds_chunked(struct imp *im, struct ds *ds)
{
	struct h5m_hdr *h = &ds->ds_h;
	hsize_t chunk[H5S_MAX_RANK];
	uint64_t dims[H5M_RANK_MAX], cb = ds->ds_esize, nch = 0;
	int r, i, rc;

	r = H5Pget_chunk(ds->ds_dcpl, H5S_MAX_RANK, chunk);
	if (r <= 0 || r != ds->ds_rank)
		return h5m_h5err(-EIO, "%s: its chunk dims", im->im_path);
	h->hh_rank = (uint32_t)r;
	for (i = 0; i < r; i++) {
		h->hh_chunk[i] = chunk[i];
		dims[i] = ds->ds_dims[i];
		if (__builtin_mul_overflow(cb, chunk[i], &cb))
			return h5m_err(-EFBIG, "%s: a chunk past 2^64 bytes",
				       im->im_path);
	}
	rc = h5m_grid(h->hh_rank, dims, h->hh_chunk, &nch);
	if (rc != 0 || nch > H5M_CHUNKS_MAX)
		return h5m_err(-EFBIG, "%s: more than %llu chunks",
			       im->im_path, (unsigned long long)H5M_CHUNKS_MAX);
	h->hh_chunk_bytes = cb;
	h->hh_chunks = nch;
	h->hh_block_shift = shift_for(cb, CLOVIS_BLOCK_SHIFT_MIN,
				      CLOVIS_BLOCK_SHIFT_MAX);
	h->hh_slot_blocks = (uint32_t)((cb + (1ull << h->hh_block_shift) - 1) >>
				       h->hh_block_shift);
	return ds_filters(im, ds);
}

/* Contiguous and compact: the block size for the array's bytes; a row
 * (one index of the first dim) must fit in memory. */
static int ds_contiguous(struct imp *im, struct ds *ds)
{
	uint64_t row = ds->ds_esize, all;
	int i, big = 0;

	for (i = 1; i < ds->ds_rank; i++)
		big |= __builtin_mul_overflow(row, ds->ds_dims[i], &row);
	if (!ds->ds_vlen && big)
		return h5m_err(-EFBIG, "%s: a row past 2^64 bytes",
			       im->im_path);
	if (!ds->ds_vlen && row > H5M_ROW_MAX)
		return h5m_err(-EFBIG, "%s: a row of %llu bytes (at most %llu)",
			       im->im_path, (unsigned long long)row,
			       (unsigned long long)H5M_ROW_MAX);
	if (__builtin_mul_overflow((uint64_t)ds->ds_npoints, ds->ds_esize,
				   &all))
		all = UINT64_MAX;
	ds->ds_h.hh_block_shift = shift_for(all, 12, 20);
	return 0;
}

/* Fill value, allocation and fill times, creation order, layout. */
static int ds_props(struct imp *im, hid_t d, struct ds *ds)
{
	struct h5m_hdr *h = &ds->ds_h;
	H5D_fill_value_t fv;
	H5D_alloc_time_t at;
	H5D_fill_time_t ft;
	H5D_space_status_t ss;
	H5D_layout_t lay = H5Pget_layout(ds->ds_dcpl);
	unsigned ao = 0;
	uint8_t *p;

	if (lay == H5D_VIRTUAL)
		return h5m_err(-ENOTSUP, "%s: a virtual dataset: not "
			       "supported", im->im_path);
	if (H5Pget_external_count(ds->ds_dcpl) > 0)
		return h5m_err(-ENOTSUP, "%s: external storage: not "
			       "supported", im->im_path);
	if (lay < 0 || H5Pfill_value_defined(ds->ds_dcpl, &fv) < 0 ||
	    H5Pget_alloc_time(ds->ds_dcpl, &at) < 0 ||
	    H5Pget_fill_time(ds->ds_dcpl, &ft) < 0 ||
	    H5Pget_attr_creation_order(ds->ds_dcpl, &ao) < 0)
		return h5m_h5err(-EIO, "%s: creation properties", im->im_path);
	h->hh_layout = lay == H5D_CHUNKED ? H5M_L_CHUNKED :
		       lay == H5D_COMPACT ? H5M_L_COMPACT : H5M_L_CONTIG;
	h->hh_fill_def = (uint8_t)fv;
	h->hh_alloc_time = (uint8_t)at;
	h->hh_fill_time = (uint8_t)ft;
	h->hh_attr_order = ao;
	if (fv == H5D_FILL_VALUE_USER_DEFINED && ds->ds_vlen)
		return h5m_err(-ENOTSUP, "%s: a fill value of a variable-length "
			       "type: not supported", im->im_path);
	if (fv == H5D_FILL_VALUE_USER_DEFINED) {
		p = h5m_put_space(&ds->ds_fb, ds->ds_esize);
		if (p == NULL || H5Pget_fill_value(ds->ds_dcpl, ds->ds_type,
						   p) < 0)
			return h5m_h5err(-EIO, "%s: its fill value",
					 im->im_path);
	}
	if (lay != H5D_CHUNKED && H5Dget_space_status(d, &ss) >= 0 &&
	    ss == H5D_SPACE_STATUS_NOT_ALLOCATED)
		h->hh_unalloc = 1;
	return lay == H5D_CHUNKED ? ds_chunked(im, ds) : ds_contiguous(im, ds);
}

/* Read what a dataset's header needs and check it is supported. */
static int ds_probe(struct imp *im, hid_t d, struct ds *ds)
{
	struct h5m_hdr *h = &ds->ds_h;
	int rc;

	ds->ds_type = H5Dget_type(d);
	ds->ds_space = H5Dget_space(d);
	ds->ds_dcpl = H5Dget_create_plist(d);
	if (ds->ds_type < 0 || ds->ds_space < 0 || ds->ds_dcpl < 0)
		return h5m_h5err(-EIO, "%s: open its type, space, properties",
				 im->im_path);
	rc = type_ok(im, ds->ds_type, "");
	if (rc < 0)
		return rc;
	ds->ds_vlen = rc;
	ds->ds_rank = H5Sget_simple_extent_ndims(ds->ds_space);
	ds->ds_npoints = H5Sget_simple_extent_npoints(ds->ds_space);
	ds->ds_esize = H5Tget_size(ds->ds_type);
	if (ds->ds_rank < 0 || ds->ds_npoints < 0 || ds->ds_esize == 0 ||
	    H5Sget_simple_extent_dims(ds->ds_space, ds->ds_dims, NULL) < 0)
		return h5m_h5err(-EIO, "%s: its dataspace", im->im_path);
	h->hh_kind = H5M_DATASET;
	h->hh_vlen = (uint8_t)ds->ds_vlen;
	rc = ds_props(im, d, ds);
	if (rc == 0 && ds->ds_vlen)
		h->hh_block_shift = 16; /* a stream, whatever the layout */
	if (rc == 0)
		rc = encode_into(im, &ds->ds_tb, ds->ds_type, 1, "");
	if (rc == 0)
		rc = encode_into(im, &ds->ds_sb, ds->ds_space, 0, "");
	if (rc == 0 && (ds->ds_filt.hb_oom || ds->ds_fb.hb_oom))
		rc = h5m_err(-ENOMEM, "%s: out of memory", im->im_path);
	h->hh_type = ds->ds_tb.hb_data;
	h->hh_tlen = (uint32_t)ds->ds_tb.hb_len;
	h->hh_space = ds->ds_sb.hb_data;
	h->hh_slen = (uint32_t)ds->ds_sb.hb_len;
	h->hh_fill = ds->ds_fb.hb_data;
	h->hh_flen = (uint32_t)ds->ds_fb.hb_len;
	h->hh_filt = ds->ds_filt.hb_data;
	h->hh_filt_len = (uint32_t)ds->ds_filt.hb_len;
	return rc;
}

/* Bytes written to an object in order, in ops of whole blocks of at most
 * H5M_IO_BYTES (or one block when larger); the last block zero-padded. */
struct wst {
	struct clovis_obj *ws_o;
	uint8_t *ws_buf;
	size_t ws_cap;
	size_t ws_len;
	uint64_t ws_blk;
	uint64_t ws_total;
	const char *ws_what;
};

static int wst_flush(struct wst *w)
{
	uint32_t shift = w->ws_o->ob_attr.oa_block_shift;
	uint64_t nblk = (w->ws_len + (1ull << shift) - 1) >> shift;
	int rc;

	if (nblk == 0)
		return 0;
	memset(w->ws_buf + w->ws_len, 0, (size_t)(nblk << shift) - w->ws_len);
	rc = h5m_obj_io(w->ws_o, 1, w->ws_blk, nblk, w->ws_buf, w->ws_what);
	w->ws_blk += nblk;
	w->ws_len = 0;
	return rc;
}

static int wst_put(struct wst *w, const void *p, size_t n)
{
	const uint8_t *s = p;
	int rc = 0;

	while (n > 0 && rc == 0) {
		size_t c = w->ws_cap - w->ws_len < n ? w->ws_cap - w->ws_len : n;

		memcpy(w->ws_buf + w->ws_len, s, c);
		w->ws_len += c;
		w->ws_total += c;
		s += c;
		n -= c;
		if (w->ws_len == w->ws_cap)
			rc = wst_flush(w);
	}
	return rc;
}

/* Contiguous and compact data: slabs of whole rows, in row-major order. */
static int ds_rows(struct imp *im, hid_t d, struct ds *ds, struct wst *w)
{
	hsize_t count[H5S_MAX_RANK];
	uint64_t row = ds->ds_esize, rows, r0;
	uint8_t *buf;
	int i, rc = 0;

	for (i = 1; i < ds->ds_rank; i++)
		row *= ds->ds_dims[i];
	rows = ds->ds_rank == 0 ? 1 : row >= H5M_IO_BYTES ? 1 :
	       H5M_IO_BYTES / row;
	buf = malloc((size_t)(rows * row));
	if (buf == NULL)
		return h5m_err(-ENOMEM, "%s: out of memory", im->im_path);
	if (ds->ds_rank == 0) {
		if (H5Dread(d, ds->ds_type, H5S_ALL, H5S_ALL, H5P_DEFAULT,
			    buf) < 0)
			rc = h5m_h5err(-EIO, "%s: read", im->im_path);
		if (rc == 0)
			rc = wst_put(w, buf, (size_t)row);
	}
	for (r0 = 0; ds->ds_rank > 0 && r0 < ds->ds_dims[0] && rc == 0;
	     r0 += count[0]) {
		hid_t fs, ms;

		if (h5m_rows_slab(ds->ds_space, ds->ds_rank, ds->ds_dims, r0,
				  rows, count, &fs, &ms) != 0 ||
		    H5Dread(d, ds->ds_type, ms, fs, H5P_DEFAULT, buf) < 0)
			rc = h5m_h5err(-EIO, "%s: read rows %llu..", im->im_path,
				       (unsigned long long)r0);
		if (rc == 0)
			rc = wst_put(w, buf, (size_t)(count[0] * row));
		h5m_spaces_close(fs, ms);
	}
	free(buf);
	return rc;
}

/* Variable-length strings: the stream of every element. */
static int ds_vlen(struct imp *im, hid_t d, struct ds *ds, struct wst *w)
{
	struct h5m_buf b = {0};
	hid_t m = h5m_vlen_mem(ds->ds_type);
	char **p = calloc((size_t)ds->ds_npoints, sizeof *p);
	int rc;

	if (m < 0 || p == NULL || H5Dread(d, m, H5S_ALL, H5S_ALL, H5P_DEFAULT,
					  p) < 0) {
		rc = h5m_h5err(p ? -EIO : -ENOMEM, "%s: read", im->im_path);
	} else {
		rc = vlen_stream(im, p, ds->ds_npoints, &b);
		H5Dvlen_reclaim(m, ds->ds_space, H5P_DEFAULT, p);
	}
	if (rc == 0)
		rc = wst_put(w, b.hb_data, b.hb_len);
	h5m_buf_free(&b);
	free(p);
	if (m >= 0)
		H5Tclose(m);
	return rc;
}

/* Read chunk at offset (its part inside the dims) into buf, row-major
 * over the chunk's dims, the rest zeros. */
static int chunk_read(struct imp *im, hid_t d, struct ds *ds,
		      const hsize_t *off, hid_t fs, hid_t ms, uint8_t *buf,
		      size_t bytes)
{
	hsize_t count[H5S_MAX_RANK], zero[H5S_MAX_RANK] = {0};
	int i;

	for (i = 0; i < ds->ds_rank; i++)
		count[i] = ds->ds_dims[i] - off[i] < ds->ds_h.hh_chunk[i] ?
			   ds->ds_dims[i] - off[i] : ds->ds_h.hh_chunk[i];
	memset(buf, 0, bytes);
	if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, count,
				NULL) < 0 ||
	    H5Sselect_hyperslab(ms, H5S_SELECT_SET, zero, NULL, count,
				NULL) < 0 ||
	    H5Dread(d, ds->ds_type, ms, fs, H5P_DEFAULT, buf) < 0)
		return h5m_h5err(-EIO, "%s: read a chunk", im->im_path);
	return 0;
}

/* Step coord to the next chunk of the grid, row-major. */
static void grid_next(struct ds *ds, hsize_t *coord)
{
	int i;

	for (i = ds->ds_rank - 1; i >= 0; i--) {
		uint64_t g = (ds->ds_dims[i] + ds->ds_h.hh_chunk[i] - 1) /
			     ds->ds_h.hh_chunk[i];

		if (++coord[i] < g)
			return;
		coord[i] = 0;
	}
}

/* Chunked data: the map of the chunks the file allocated, as record "m".
 * Fixed-size data: each of those chunks copied to its extent.  Strings of
 * variable length: the map alone (ds_data() then writes the stream). */
static int ds_chunks(struct imp *im, hid_t d, struct ds *ds,
		     struct clovis_obj *o, struct clovis_idx *ix)
{
	struct h5m_hdr *h = &ds->ds_h;
	hsize_t coord[H5S_MAX_RANK] = {0}, off[H5S_MAX_RANK];
	size_t bytes = (size_t)h->hh_slot_blocks << h->hh_block_shift;
	size_t mlen = (size_t)((h->hh_chunks + 7) / 8);
	int copy = !ds->ds_vlen;
	uint8_t *buf = copy ? malloc(bytes) : NULL;
	uint8_t *map = calloc(mlen ? mlen : 1, 1);
	hid_t fs = H5Scopy(ds->ds_space), ms;
	hsize_t chunk[H5S_MAX_RANK];
	uint64_t ci;
	int rc = 0, i;

	for (i = 0; i < ds->ds_rank; i++)
		chunk[i] = h->hh_chunk[i];
	ms = H5Screate_simple(ds->ds_rank, chunk, NULL);

	if ((copy && buf == NULL) || map == NULL || fs < 0 || ms < 0)
		rc = h5m_h5err(-ENOMEM, "%s: chunk buffers", im->im_path);
	for (ci = 0; ci < h->hh_chunks && rc == 0; ci++) {
		unsigned mask = 0;
		haddr_t addr = HADDR_UNDEF;
		hsize_t size = 0;

		for (i = 0; i < ds->ds_rank; i++)
			off[i] = coord[i] * h->hh_chunk[i];
		grid_next(ds, coord);
		if (H5Dget_chunk_info_by_coord(d, off, &mask, &addr, &size) < 0)
			rc = h5m_h5err(-EIO, "%s: chunk %llu", im->im_path,
				       (unsigned long long)ci);
		if (rc != 0 || addr == HADDR_UNDEF)
			continue;
		if (copy)
			rc = chunk_read(im, d, ds, off, fs, ms, buf, bytes);
		if (rc == 0 && copy)
			rc = h5m_obj_io(o, 1, ci * h->hh_slot_blocks,
					h->hh_slot_blocks, buf, im->im_path);
		map[ci / 8] |= (uint8_t)(1u << (ci % 8));
		h->hh_chunks_stored++;
	}
	if (rc == 0 && mlen > 0)
		rc = h5m_idx_put(ix, "m", 1, map, mlen, 0, im->im_path);
	if (copy)
		h->hh_bytes = h->hh_chunks_stored * h->hh_chunk_bytes;
	free(buf);
	free(map);
	h5m_spaces_close(fs, ms);
	return rc;
}

/* The data object of h, made empty. */
static int obj_make(struct imp *im, const struct h5m_hdr *h,
		    struct clovis_obj *o)
{
	struct clovis_obj_attr a;
	int rc;

	memset(&a, 0, sizeof a);
	a.oa_block_shift = h->hh_block_shift;
	a.oa_layout = CLOVIS_LAYOUT_PLAIN;
	a.oa_tier = im->im_tier;
	rc = clovis_obj_init(o, im->im_s->hs_realm, &h->hh_obj, &a);
	if (rc < 0)
		return h5m_err_clovis(rc, "%s: its data object", im->im_path);
	return h5m_entity_run(&o->ob_entity, CLOVIS_EO_CREATE, im->im_path);
}

/* Write the dataset's data into o: its chunks, or its string stream (for
 * a chunked dataset after the map of the chunks the file allocated). */
static int ds_data(struct imp *im, hid_t d, struct ds *ds,
		   struct clovis_obj *o, struct clovis_idx *ix)
{
	struct h5m_hdr *h = &ds->ds_h;
	struct wst w;
	int rc;

	if (h->hh_unalloc || ds->ds_npoints == 0)
		return 0;
	if (h->hh_layout == H5M_L_CHUNKED) {
		rc = ds_chunks(im, d, ds, o, ix);
		if (rc != 0 || !ds->ds_vlen || h->hh_chunks_stored == 0)
			return rc;
	}
	memset(&w, 0, sizeof w);
	w.ws_o = o;
	w.ws_what = im->im_path;
	w.ws_cap = (size_t)1 << h->hh_block_shift;
	if (w.ws_cap < H5M_IO_BYTES)
		w.ws_cap = H5M_IO_BYTES;
	w.ws_buf = malloc(w.ws_cap);
	if (w.ws_buf == NULL)
		return h5m_err(-ENOMEM, "%s: out of memory", im->im_path);
	rc = ds->ds_vlen ? ds_vlen(im, d, ds, &w) : ds_rows(im, d, ds, &w);
	if (rc == 0)
		rc = wst_flush(&w);
	free(w.ws_buf);
	h->hh_bytes = w.ws_total;
	o->ob_attr.oa_size_bytes = w.ws_total;
	if (rc == 0)
		rc = h5m_entity_run(&o->ob_entity, CLOVIS_EO_SETATTR,
				    im->im_path);
	return rc;
}

/* A dataset: header (naming its object), object, attributes, data, then
 * the header again with what the data came to. */
static int imp_dataset(struct imp *im, hid_t d, struct clovis_idx *ix)
{
	struct clovis_obj o;
	struct ds ds;
	int rc;

	memset(&ds, 0, sizeof ds);
	ds.ds_type = ds.ds_space = ds.ds_dcpl = -1;
	rc = ds_probe(im, d, &ds);
	if (rc == 0 && im->im_build) {
		h5m_id_random(&ds.ds_h.hh_obj);
		rc = put_hdr(im, ix, &ds.ds_h, 0);
		if (rc == 0)
			rc = obj_make(im, &ds.ds_h, &o);
	}
	if (rc == 0)
		rc = imp_attrs(im, d, ix);
	if (rc == 0 && im->im_build)
		rc = ds_data(im, d, &ds, &o, ix);
	if (rc == 0 && im->im_build)
		rc = put_hdr(im, ix, &ds.ds_h, 1);
	if (rc == 0) {
		im->im_st.hs_datasets++;
		im->im_st.hs_bytes += ds.ds_h.hh_bytes;
		if (!ds.ds_vlen) /* a stream's map names no extents */
			im->im_st.hs_chunks += ds.ds_h.hh_chunks_stored;
	}
	ds_fini(&ds);
	return rc;
}

/* Is path a file HDF5 opens?  Returns the open file or a negative code. */
static hid_t file_open(const char *path)
{
	htri_t is;
	hid_t f;

	if (access(path, R_OK) != 0)
		return h5m_err(-errno, "%s: %s", path, strerror(errno));
	is = H5Fis_hdf5(path);
	if (is == 0)
		return h5m_err(-EINVAL, "%s: not an HDF5 file (no HDF5 "
			       "signature)", path);
	if (is < 0)
		return h5m_h5err(-EINVAL, "%s: not an HDF5 file HDF5 can read",
				 path);
	f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0)
		return h5m_h5err(-EINVAL, "%s: HDF5 cannot open it", path);
	return f;
}

/* Walk the file at path from its root (index root when building). */
static int imp_run(struct imp *im, const char *path,
		   const struct clovis_id *root, uint32_t *super)
{
	struct clovis_idx ix;
	H5O_info_t oi;
	H5F_info2_t fi;
	hid_t g = -1;
	int rc = 0;

	h5m_h5_quiet();
	im->im_file = file_open(path);
	if (im->im_file < 0)
		return (int)im->im_file;
	strcpy(im->im_path, "/");
	if (super != NULL && H5Fget_info2(im->im_file, &fi) >= 0)
		*super = fi.super.version;
	g = H5Gopen2(im->im_file, "/", H5P_DEFAULT);
	if (g < 0 || H5Oget_info2(g, &oi, H5O_INFO_BASIC) < 0)
		rc = h5m_h5err(-EIO, "%s: open its root group", path);
	if (rc == 0)
		rc = addr_add(&im->im_seen, oi.addr, root);
	if (rc == 0 && im->im_build)
		rc = h5m_idx_create(im->im_s, root, &ix, "/ (root index)");
	if (rc == 0)
		rc = imp_group(im, g, &ix);
	if (g >= 0)
		H5Gclose(g);
	if (H5Fclose(im->im_file) < 0 && rc == 0)
		rc = h5m_h5err(-EIO, "%s: close", path);
	addr_free(&im->im_seen);
	return rc;
}

int h5m_check(const char *path, struct h5m_stats *st)
{
	struct clovis_id root = { 0, 0 };
	struct imp im;
	int rc;

	h5m_err(0, "%s", "");
	memset(&im, 0, sizeof im);
	rc = imp_run(&im, path, &root, NULL);
	if (rc == 0 && st != NULL)
		*st = im.im_st;
	return rc;
}

/* ----------------------------------------------------- the import */

/* The base name of path, as a file name N (the default). */
static int default_name(const char *path, char *name, size_t size)
{
	char *copy = strdup(path);
	const char *b;

	if (copy == NULL)
		return h5m_err(-ENOMEM, "out of memory");
	b = basename(copy);
	if (strlen(b) == 0 || strlen(b) >= size || strcmp(b, "/") == 0) {
		free(copy);
		return h5m_err(-EINVAL, "%s: no file name to import it as "
			       "(give CONTAINER/NAME)", path);
	}
	snprintf(name, size, "%s", b);
	free(copy);
	return 0;
}

/* Open container t's store, making the container when missing. */
static int cont_get(struct h5m_store *s, struct clovis *cl,
		    const struct clovis_id *id, int *made)
{
	char text[CLOVIS_ID_STR_LEN], what[64];
	int rc;

	*made = 0;
	rc = h5m_store_open(s, cl, id);
	if (rc != -ENOENT || s->hs_realm != NULL)
		return rc;
	snprintf(what, sizeof what, "create container %s",
		 clovis_id_format(id, text));
	rc = h5m_entity_run(&s->hs_cont.co_entity, CLOVIS_EO_CREATE, what);
	if (rc == -EEXIST) /* made by another client since: use it */
		return h5m_store_open(s, cl, id);
	if (rc == 0) {
		*made = 1;
		s->hs_realm = &s->hs_cont.co_realm;
	}
	return rc;
}

/* Open the catalogue of s, making it when missing. */
static int cat_get(struct h5m_store *s, const struct clovis_id *cont,
		   struct clovis_idx *cat, int *made)
{
	struct clovis_id cid;
	int rc;

	*made = 0;
	h5m_cat_id(cont, &cid);
	rc = h5m_idx_open(s, &cid, cat, "the HDF5 catalogue");
	if (rc != -ENOENT)
		return rc;
	rc = h5m_idx_create(s, &cid, cat, "create the HDF5 catalogue");
	if (rc == -EEXIST) /* made by another import since: use it */
		return h5m_idx_open(s, &cid, cat, "the HDF5 catalogue");
	*made = rc == 0;
	return rc;
}

/* Claim name with a BUILDING record (no overwrite). */
static int cat_claim(struct clovis_idx *cat, const char *name,
		     const struct h5m_cat *rec, const char *what)
{
	struct h5m_buf b = {0};
	struct h5m_cat old;
	void *v = NULL;
	size_t vlen = 0;
	int rc;

	rc = h5m_idx_get(cat, name, strlen(name), &v, &vlen, what);
	if (rc == 0) {
		rc = h5m_cat_decode(v, vlen, &old, what);
		free(v);
		if (rc != 0)
			return rc;
		if (old.hc_state == H5M_BUILDING)
			return h5m_err(-EEXIST, "%s exists: an import of it "
				       "runs, or was interrupted ('strata h5 "
				       "rm' removes it)", what);
		return h5m_err(-EEXIST, "%s exists (imported from %s): remove "
			       "it first or choose another name", what,
			       old.hc_source);
	}
	if (rc != -ENOENT)
		return rc;
	h5m_cat_encode(&b, rec);
	rc = b.hb_oom ? h5m_err(-ENOMEM, "out of memory")
		      : h5m_idx_put(cat, name, strlen(name), b.hb_data,
				    b.hb_len, 0, what);
	h5m_buf_free(&b);
	if (rc == -EEXIST) /* lost to another import: not ours to touch */
		return h5m_err(rc, "%s exists: another import claimed it "
			       "just now", what);
	return rc;
}

/* Undo a failed import as far as it got: with the claim made, the tree
 * and the record; the catalogue and the container when this import made
 * them and nothing else is in them now (another import may have come in:
 * a record that is not ours is never touched).  The failure's message is
 * kept; a clean-up that fails too is added to it. */
static void import_undo(struct h5m_store *s, struct clovis_idx *cat,
			const char *name, const char *what,
			const struct clovis_id *root, int claimed, int made_cat,
			int made_cont)
{
	char msg[1024], why[512] = "";
	int rc = 0;

	snprintf(msg, sizeof msg, "%s", h5m_errmsg());
	if (claimed) {
		rc = h5m_rm_tree(s, root, NULL);
		if (rc == 0)
			rc = h5m_cat_drop(cat, name);
	} else if (made_cat) {
		rc = h5m_cat_prune(cat);
	}
	if (rc == 0 && made_cont) {
		rc = h5m_entity_run(&s->hs_cont.co_entity, CLOVIS_EO_DELETE,
				    "delete the container");
		if (rc == -ENOTEMPTY) /* another client put something in */
			rc = 0;
	}
	if (rc != 0)
		snprintf(why, sizeof why, "%s", h5m_errmsg());
	if (rc != 0 && claimed)
		h5m_err(0, "%s; clean-up failed: %s; `strata h5 rm %s` removes "
			"the rest", msg, why, what);
	else if (rc != 0)
		h5m_err(0, "%s; clean-up failed: %s", msg, why);
	else
		h5m_err(0, "%s", msg);
}

/* Build the mapping of path under root (the claim is made). */
static int import_build(struct h5m_store *s, const char *path,
			const struct clovis_id *root, uint32_t tier,
			struct h5m_cat *rec)
{
	struct imp im;
	int rc;

	memset(&im, 0, sizeof im);
	im.im_build = 1;
	im.im_s = s;
	im.im_tier = tier;
	rc = imp_run(&im, path, root, &rec->hc_super_version);
	rec->hc_stats = im.im_st;
	return rc;
}

int h5m_import(struct clovis *cl, const char *path,
	       const struct h5m_target *t, uint32_t tier,
	       struct h5m_stats *st)
{
	char what[H5M_NAME_MAX + 64], id[CLOVIS_ID_STR_LEN];
	struct h5m_target tt = *t;
	struct h5m_store s;
	struct clovis_idx cat;
	struct h5m_cat rec;
	struct h5m_buf b = {0};
	struct timespec ts;
	int rc, made_cont = 0, made_cat = 0, claimed = 0;

	rc = h5m_check(path, NULL);
	if (rc == 0 && tt.ht_name[0] == '\0')
		rc = default_name(path, tt.ht_name, sizeof tt.ht_name);
	if (rc != 0)
		return rc;
	snprintf(what, sizeof what, "%s/%s",
		 clovis_id_format(&tt.ht_cont, id), tt.ht_name);
	memset(&rec, 0, sizeof rec);
	rec.hc_state = H5M_BUILDING;
	h5m_id_random(&rec.hc_root);
	clock_gettime(CLOCK_REALTIME, &ts);
	rec.hc_ctime_ns = (uint64_t)ts.tv_sec * 1000000000ull +
			  (uint64_t)ts.tv_nsec;
	default_name(path, rec.hc_source, sizeof rec.hc_source);
	rc = cont_get(&s, cl, &tt.ht_cont, &made_cont);
	if (rc == 0)
		rc = cat_get(&s, &tt.ht_cont, &cat, &made_cat);
	if (rc == 0)
		rc = cat_claim(&cat, tt.ht_name, &rec, what);
	claimed = rc == 0;
	if (rc == 0)
		rc = import_build(&s, path, &rec.hc_root, tier, &rec);
	if (rc == 0) {
		rec.hc_state = H5M_COMPLETE;
		h5m_cat_encode(&b, &rec);
		rc = b.hb_oom ? h5m_err(-ENOMEM, "out of memory")
			      : h5m_idx_put(&cat, tt.ht_name,
					    strlen(tt.ht_name), b.hb_data,
					    b.hb_len, 1, what);
		h5m_buf_free(&b);
	}
	if (rc != 0) {
		import_undo(&s, &cat, tt.ht_name, what, &rec.hc_root, claimed,
			    made_cat, made_cont);
		return rc;
	}
	if (st != NULL)
		*st = rec.hc_stats;
	return 0;
}
