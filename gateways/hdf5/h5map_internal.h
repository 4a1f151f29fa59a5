/*
 * gateways/hdf5/h5map_internal.h — what h5map.c (store side: records,
 * catalogue, the walk, remove), h5map_import.c and h5map_export.c (the
 * HDF5 sides) share, and only they.  HDF5 types appear only in the last
 * section, compiled only where hdf5.h is included first.
 */
#ifndef STRATA_GATEWAYS_HDF5_H5MAP_INTERNAL_H
#define STRATA_GATEWAYS_HDF5_H5MAP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "gateways/hdf5/h5map.h"

/** Most filters of one pipeline (HDF5's H5Z_MAX_NFILTERS) and client
 *  values of one filter kept (n-bit's grow with a compound's members;
 *  HDF5 refuses to return more than 256). */
#define H5M_FILTERS_MAX 32u
#define H5M_CD_MAX 256u
/** Records asked for by one NEXT while scanning an index. */
#define H5M_PAGE 64u

/** Key prefixes of an object index (h5map.h). */
#define H5M_KEY_HDR 'h'
#define H5M_KEY_ATTR 'a'
#define H5M_KEY_LINK 'l'
#define H5M_KEY_MAP 'm'

/** Dataset layouts and data forms kept in the header. */
enum { H5M_L_COMPACT = 0, H5M_L_CONTIG = 1, H5M_L_CHUNKED = 2 };
/** The rank a header and h5m_entry keep (HDF5's H5S_MAX_RANK). */
#define H5M_RANK_MAX 32u

/* ------------------------------------------------------------- errors */

/** Set this thread's message and return rc. */
int h5m_err(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Keep clovis_errmsg() (of the failed call just made) with a prefix. */
int h5m_err_clovis(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ------------------------------------------------- record encoding */

/** A growing little-endian encoder; hb_oom once an allocation failed. */
struct h5m_buf {
	uint8_t *hb_data;
	size_t hb_len;
	size_t hb_cap;
	int hb_oom;
};

void h5m_put_u8(struct h5m_buf *b, uint8_t v);
void h5m_put_u16(struct h5m_buf *b, uint16_t v);
void h5m_put_u32(struct h5m_buf *b, uint32_t v);
void h5m_put_u64(struct h5m_buf *b, uint64_t v);
void h5m_put_bytes(struct h5m_buf *b, const void *p, size_t n);
void h5m_put_id(struct h5m_buf *b, const struct clovis_id *id);
/** Reserve n bytes at the end and return them (NULL once out of memory). */
uint8_t *h5m_put_space(struct h5m_buf *b, size_t n);
void h5m_buf_free(struct h5m_buf *b);

/** A bounds-checked decoder; hr_bad once a read passed the end. */
struct h5m_rd {
	const uint8_t *hr_p;
	size_t hr_left;
	int hr_bad;
};

uint8_t h5m_get_u8(struct h5m_rd *r);
uint16_t h5m_get_u16(struct h5m_rd *r);
uint32_t h5m_get_u32(struct h5m_rd *r);
uint64_t h5m_get_u64(struct h5m_rd *r);
/** n bytes in place (NULL and hr_bad when fewer are left). */
const uint8_t *h5m_get_bytes(struct h5m_rd *r, size_t n);
void h5m_get_id(struct h5m_rd *r, struct clovis_id *id);

/** A dataset's or group's header ("h" record), decoded; the pointers point
 *  into the record's value, which the caller keeps. */
struct h5m_hdr {
	uint8_t hh_kind;          /* H5M_GROUP, H5M_DATASET */
	uint32_t hh_link_order;   /* group: H5P link creation order flags */
	uint32_t hh_attr_order;   /* attribute creation order flags */
	/* dataset */
	struct clovis_id hh_obj;  /* the data object */
	uint8_t hh_layout;        /* H5M_L_* */
	uint8_t hh_vlen;          /* data is a variable-length string stream */
	uint8_t hh_fill_def;      /* H5D_fill_value_t */
	uint8_t hh_alloc_time;    /* H5D_alloc_time_t */
	uint8_t hh_fill_time;     /* H5D_fill_time_t */
	uint8_t hh_unalloc;       /* contiguous storage never allocated */
	uint32_t hh_rank;         /* chunk rank (chunked) */
	uint32_t hh_block_shift;
	uint32_t hh_slot_blocks;
	uint64_t hh_chunk_bytes;
	uint64_t hh_bytes;        /* bytes of data in the object */
	uint64_t hh_chunks;       /* chunks in the grid */
	uint64_t hh_chunks_stored;
	uint64_t hh_chunk[H5M_RANK_MAX];
	const uint8_t *hh_type;   /* H5Tencode() bytes */
	uint32_t hh_tlen;
	const uint8_t *hh_space;  /* H5Sencode() bytes */
	uint32_t hh_slen;
	const uint8_t *hh_fill;   /* the fill value's bytes, when user set */
	uint32_t hh_flen;
	uint32_t hh_nfilters;
	const uint8_t *hh_filt;   /* per filter: u32 id, flags, n, n x u32 */
	uint32_t hh_filt_len;
};

/** Encode h into b (appending). */
void h5m_hdr_encode(struct h5m_buf *b, const struct h5m_hdr *h);
/** Decode the record v (len bytes) into h; -CLOVIS_ECORRUPT (message
 *  names what) when it is not a header of this version. */
int h5m_hdr_decode(const void *v, size_t len, struct h5m_hdr *h,
		   const char *what);
/** "deflate(6),shuffle" of h's filters into buf. */
const char *h5m_filters_text(const struct h5m_hdr *h, char *buf, size_t size);

/** An attribute record, decoded (pointers into the value). */
struct h5m_attr {
	uint8_t ha_vlen;
	const uint8_t *ha_type;
	uint32_t ha_tlen;
	const uint8_t *ha_space;
	uint32_t ha_slen;
	const uint8_t *ha_data;
	uint64_t ha_dlen;
};

void h5m_attr_encode(struct h5m_buf *b, const struct h5m_attr *a);
int h5m_attr_decode(const void *v, size_t len, struct h5m_attr *a,
		    const char *what);

/* ---------------------------------------------------- store helpers */

/** The store side of one call: the client and the container. */
struct h5m_store {
	struct clovis *hs_cl;
	struct clovis_container hs_cont;
	struct clovis_realm *hs_realm;
};

/** Open container id into s (-ENOENT naming it when missing). */
int h5m_store_open(struct h5m_store *s, struct clovis *cl,
		   const struct clovis_id *id);
/** A fresh random id (bit 62 set, bit 63 clear). */
void h5m_id_random(struct clovis_id *id);
/** The catalogue index id of container cont. */
void h5m_cat_id(const struct clovis_id *cont, struct clovis_id *id);
/** Run one entity op on e; messages name what. */
int h5m_entity_run(struct clovis_entity *e, enum clovis_entity_opcode opc,
		   const char *what);
int h5m_idx_open(struct h5m_store *s, const struct clovis_id *id,
		 struct clovis_idx *ix, const char *what);
int h5m_idx_create(struct h5m_store *s, const struct clovis_id *id,
		   struct clovis_idx *ix, const char *what);
/** PUT one record (overwrite: CLOVIS_IF_OVERWRITE); -EEXIST when the key
 *  exists and overwrite is not set. */
int h5m_idx_put(struct clovis_idx *ix, const void *k, size_t klen,
		const void *v, size_t vlen, int overwrite, const char *what);
/** GET one record into *v (malloc()ed; the caller frees); -ENOENT. */
int h5m_idx_get(struct clovis_idx *ix, const void *k, size_t klen, void **v,
		size_t *vlen, const char *what);
int h5m_idx_del(struct clovis_idx *ix, const void *k, size_t klen,
		const char *what);
/** Call fn for every record whose key starts with byte prefix, in key
 *  order (prefix < 0: every record).  fn's non-zero return stops it. */
typedef int (*h5m_rec_fn)(void *arg, const uint8_t *k, size_t klen,
			  const uint8_t *v, size_t vlen);
int h5m_idx_scan(struct clovis_idx *ix, int prefix, h5m_rec_fn fn, void *arg,
		 const char *what);
/** Write (or read) nblk blocks of o from block start: one op, one extent. */
int h5m_obj_io(struct clovis_obj *o, int write, uint64_t start, uint64_t nblk,
	       void *buf, const char *what);

/** Catalogue record codec. */
void h5m_cat_encode(struct h5m_buf *b, const struct h5m_cat *c);
int h5m_cat_decode(const void *v, size_t len, struct h5m_cat *c,
		   const char *what);
/** Open the catalogue of s (-ENOENT when none) and get t's record. */
int h5m_cat_get(struct h5m_store *s, const struct h5m_target *t,
		struct clovis_idx *cat, struct h5m_cat *rec);
/** Resolve t (its name may be left out when the container holds one
 *  file), open s on its container and get its record, which must be of
 *  a complete import (-EBUSY otherwise). */
int h5m_cat_get_complete(struct clovis *cl, struct h5m_target *t,
			 struct h5m_store *s, struct clovis_idx *cat,
			 struct h5m_cat *rec);

/* ------------------------------------------------------------- walk */

/** What h5m_store_walk() calls, in export order: for a group, v_group
 *  (enter), its attributes, its links (recursively), v_group_end; for a
 *  dataset, v_dataset, its attributes, v_dataset_end. */
struct h5m_visit {
	int (*v_group)(void *arg, const char *path, const char *name,
		       struct clovis_idx *ix, const struct h5m_hdr *h,
		       uint32_t attrs, uint32_t links);
	int (*v_group_end)(void *arg, const char *path);
	int (*v_dataset)(void *arg, const char *path, const char *name,
			 struct clovis_idx *ix, const struct h5m_hdr *h,
			 uint32_t attrs, struct h5m_store *s);
	int (*v_dataset_end)(void *arg, const char *path);
	int (*v_attr)(void *arg, const char *path, const char *name,
		      const struct h5m_attr *a);
	int (*v_soft)(void *arg, const char *path, const char *name,
		      const char *target);
	int (*v_hard)(void *arg, const char *path, const char *name,
		      const char *first);
};

/** Walk the import named by rec (catalogue record) of s from its root. */
int h5m_store_walk(struct h5m_store *s, const struct h5m_cat *rec,
		   const struct h5m_visit *v, void *arg);

/** Count the records with key prefix p in ix (attributes, links). */
int h5m_idx_count(struct clovis_idx *ix, int prefix, uint32_t *nr,
		  const char *what);

/** Remove index root and everything it reaches (entities already gone
 *  are skipped); st counts the groups and datasets removed.  No depth
 *  limit.  What it cannot judge (a damaged header or link, a link or a
 *  data object id that is not an entity of s's container made as the
 *  import makes ids) is left, with the groups that lead to it, and
 *  -CLOVIS_ECORRUPT names it once everything else is removed. */
int h5m_rm_tree(struct h5m_store *s, const struct clovis_id *root,
		struct h5m_stats *st);
/** Delete name's catalogue record, then h5m_cat_prune(). */
int h5m_cat_drop(struct clovis_idx *cat, const char *name);
/** Delete the catalogue index if it holds no record (gone: fine). */
int h5m_cat_prune(struct clovis_idx *cat);

/** The chunks of the grid over dims (rank dims, chunk dims; each chunk
 *  dim at least 1) into *nr: 0, -EINVAL (a chunk dim of 0) or -EOVERFLOW
 *  (past 2^64). */
int h5m_grid(uint32_t rank, const uint64_t *dims, const uint64_t *chunk,
	     uint64_t *nr);

/** Set this thread's message with HDF5's innermost error text appended
 *  (and HDF5's error stack cleared); returns rc. */
int h5m_h5err(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** HDF5 prints nothing on its own (errors come back through h5m_h5err). */
void h5m_h5_quiet(void);

/* The HDF5 side that import and export share (h5map_import.c), seen only
 * by the files that include hdf5.h before this header. */
#ifdef H5_VERS_MAJOR
/**
 * Is datatype t one the mapping makes?  0: fixed size, no pointers (its
 * bytes are the data); 1: a variable-length string at the top (top set);
 * -ENOTSUP naming what (path and what, as "/grp/d attribute 'x'") for
 * anything else: variable-length sequences, references, strings of
 * variable length inside a compound or array, other classes.
 */
int h5m_type_check(hid_t t, int top, const char *path, const char *what);
/** The memory type of variable-length strings of file type t (-1). */
hid_t h5m_vlen_mem(hid_t t);
/** The slab of rows r0.. (rows of them at most) of an array of space sp,
 *  rank (> 0) and dims, as import and export move it: count set to its
 *  box, *fs a copy of sp with the slab selected, *ms a memory space of
 *  its shape.  0, or -1 when HDF5 failed; the caller closes those of *fs
 *  and *ms that are >= 0. */
int h5m_rows_slab(hid_t sp, int rank, const hsize_t *dims, uint64_t r0,
		  uint64_t rows, hsize_t *count, hid_t *fs, hid_t *ms);
/** Close the file and memory spaces of a slab, those that are >= 0. */
void h5m_spaces_close(hid_t fs, hid_t ms);
#endif

#endif
