/*
 * gateways/hdf5/h5map.h — the HDF5 object view: an HDF5 file mapped onto
 * Strata indices and objects, and back (issue 34 point 2; `strata h5`).
 *
 * A plain Clovis client (it includes only clovis/clovis.h below it): it
 * runs the same over an embedded store and over a cluster.  The HDF5 side
 * is Debian's serial HDF5 1.10 C library, used only inside h5map*.c (this
 * header does not include hdf5.h).
 *
 * The mapping (the contract of what is on the store)
 * ----------------------------------------------------
 * An imported file is named by a container C and a name N (1..H5M_NAME_MAX
 * bytes, no '/' and no NUL): "C/N" on the command line.  Every entity id is
 * the store's (ids are store-wide, not per container); the entities of an
 * import are made in container C with fresh random ids (high bit 0, bit 62
 * set: never an "@name" id, never reserved).
 *
 *   catalogue  index id "@strata.h5.catalogue:HI:LO" (HI:LO: C's id as
 *              clovis_id_format() writes it), in C: one record per file.
 *                key N -> struct h5m_cat (below): state BUILDING while an
 *                import runs (or after one was interrupted), COMPLETE
 *                once it finished; the root group's index id; counts.
 *   group      an index.  Its records:
 *                "h"        -> the object header (H5M_HDR_*): kind group,
 *                              link and attribute creation-order flags;
 *                "l" NAME   -> one link of the group (every link, in
 *                              NAME order = HDF5's name index order):
 *                              hard: 'H', the target's kind ('G' group,
 *                              'D' dataset), the target's index id;
 *                              soft: 'S', the target path (kept as given,
 *                              dangling or not);
 *                "a" NAME   -> one attribute (below).
 *   dataset    an index (its metadata) and an object (its data).  The
 *              index's records:
 *                "h"        -> the object header: kind dataset, the data
 *                              object's id, the datatype (H5Tencode()), the
 *                              dataspace (H5Sencode(): rank, current and
 *                              maximum dims), the layout (compact,
 *                              contiguous, chunked) and chunk dims, the
 *                              filter pipeline (each filter's id, flags and
 *                              client values), the fill value (defined or
 *                              not, its bytes), allocation and fill times,
 *                              the object's block size, the chunk slot;
 *                "a" NAME   -> one attribute;
 *                "m"        -> chunked datasets: the bitmap of the chunks
 *                              stored (bit i = chunk i, LSB first); of
 *                              variable-length strings: of the chunks
 *                              the file allocated (export writes those
 *                              alone: the others stay unallocated).
 *              The object's bytes:
 *                contiguous and compact: the whole array in row-major
 *                  order, the file's own element bytes (its byte order,
 *                  its compound layout), from byte 0; the object's byte
 *                  size (oa_size_bytes) is the array's, so `strata obj get`
 *                  gives exactly the array (what `h5dump -b FILE` writes);
 *                chunked: chunk i (row-major index in the grid of chunks
 *                  over the CURRENT dims) at block i * slot, one extent of
 *                  slot blocks, written by one op; the block size is the
 *                  chunk's byte size rounded up to a power of two (at
 *                  least 512 B, at most 64 MiB; slot = 1 block unless a
 *                  chunk passes 64 MiB).  A chunk holds its elements
 *                  row-major over the chunk's dims, decompressed (the
 *                  filters are re-applied by HDF5 on export); the part of
 *                  an edge chunk past the dataset's extent is zeros.
 *                  Chunks the file never allocated are holes (and clear
 *                  in "m");
 *                variable-length strings (any layout): a stream of
 *                  elements in row-major order, each a u32 length and its
 *                  bytes (length 0xffffffff: a NULL string); chunked with
 *                  no chunk allocated: no stream (the object is empty).
 *   attribute  record "a" NAME of its object's index: the datatype and the
 *              dataspace (encoded as for datasets), then the data: the
 *              raw bytes, or the variable-length string stream above.
 * Every integer of a record is little-endian; each record starts with a
 * magic and a version (H5M_MAGIC_*, H5M_VERSION).  A hard-linked object
 * (two links or more to one HDF5 object address) is imported once: every
 * link names the same index.  The file's superblock version is kept in the
 * catalogue record, and export makes the file with the matching library
 * version bounds.
 *
 * Supported: groups (nested, empty, hard links to groups including cycles),
 * datasets of any fixed-size datatype HDF5 can encode — integers of every
 * size, sign and byte order, floats, bitfields, fixed-length strings,
 * enums, opaque types, compound types and array types of those (nested) —
 * and of variable-length strings; dataspaces null, scalar and simple of
 * any rank (H5S_MAX_RANK), with unlimited maximum dims; contiguous,
 * compact and chunked layouts; the filters deflate (gzip), shuffle,
 * fletcher32, n-bit, scale-offset and szip (when the library can encode
 * it); fill values, allocation and fill times; attributes of those types
 * on groups and datasets; soft links.
 * Refused with -ENOTSUP and a message naming the HDF5 path: external and
 * user-defined links, committed (named) datatypes and datasets or
 * attributes using one, references, variable-length sequences, strings
 * of variable length inside a compound or an array, virtual datasets,
 * external storage, filters this library cannot encode again (plugins),
 * a user-defined fill value of a variable-length type.  Refused with
 * -ENAMETOOLONG: a link or attribute name past H5M_KEY_NAME_MAX bytes;
 * with -EFBIG: an attribute or header past CLOVIS_VAL_MAX, a dataset of
 * more than H5M_CHUNKS_MAX chunks, a row past H5M_ROW_MAX bytes.  Not
 * kept (h5dump does not show them by default, nor with -p): object
 * modification times, the user block, free-space settings, storage
 * addresses (a contiguous dataset's OFFSET in `h5dump -p`).
 *
 * Atomicity.  An import first walks the whole file and checks it (nothing
 * on the store is touched when a feature is refused), then claims N with a
 * BUILDING catalogue record (a PUT without overwrite: two imports of one
 * name cannot both win), then makes the entities: every link record is put
 * before the entity it names is made, so a walk from the root reaches all
 * of them.  It ends by turning the record COMPLETE (then STABLE).  On any
 * failure it removes what it made (h5m_remove()), the catalogue record,
 * the catalogue index and the container when it made them and nothing
 * else is in them: nothing is left.  An import that loses the claim to
 * another never touches that name's record.  If the clean-up fails too,
 * the message says so and that `strata h5 rm C/N` removes the rest.  A
 * container or catalogue made by another import in the meantime is used.
 * A crash in the middle leaves a BUILDING record: export and
 * import refuse it, naming it, and h5m_remove() clears it.  An export
 * makes the output file exclusively (O_EXCL) and removes it on failure.
 *
 * Errors: every call returns 0 or a negative errno and leaves a one-line
 * message, h5m_errmsg(), naming the HDF5 path, record or entity at fault
 * (with HDF5's own innermost error text when HDF5 failed).
 * Threads: one call at a time per process (the serial HDF5 library is not
 * thread-safe).
 */
#ifndef STRATA_GATEWAYS_HDF5_H5MAP_H
#define STRATA_GATEWAYS_HDF5_H5MAP_H

#include <stdbool.h>
#include <stdint.h>

#include "clovis/clovis.h"

/* ------------------------------------------------------------- limits */

/** Longest file name N in a container: a catalogue key. */
#define H5M_NAME_MAX 255u
/** Longest link or attribute name: a key is one prefix byte and it. */
#define H5M_KEY_NAME_MAX (CLOVIS_KEY_MAX - 1u)
/** Most chunks of one dataset: its chunk bitmap is one record value. */
#define H5M_CHUNKS_MAX (8ull * CLOVIS_VAL_MAX)
/** Largest row (the elements under one index of the first dim) of a
 *  contiguous dataset: moved in slabs of whole rows. */
#define H5M_ROW_MAX (64ull << 20)
/** Bytes moved per object op when streaming contiguous data. */
#define H5M_IO_BYTES (4u << 20)
/** Longest HDF5 path kept for messages and for hard-link targets. */
#define H5M_PATH_MAX 4096u
/** Deepest group nesting: the groups on a path from the root, the root
 *  included (a dataset below the deepest group adds none).  One rule on
 *  both sides: import refuses a deeper file (-ENOTSUP), export and the
 *  walk a deeper mapping (-CLOVIS_ECORRUPT); remove has no depth limit. */
#define H5M_DEPTH_MAX 256u

/* --------------------------------------------------------- on the store */

#define H5M_VERSION 1u
#define H5M_MAGIC_CAT 0x43354d48u  /* "HM5C": catalogue record */
#define H5M_MAGIC_HDR 0x48354d48u  /* "HM5H": object header */
#define H5M_MAGIC_ATTR 0x41354d48u /* "HM5A": attribute record */

/** Catalogue record states. */
enum h5m_state {
	H5M_BUILDING = 1, /* an import runs, or was interrupted */
	H5M_COMPLETE = 2,
};

/** What an import made (h5m_cat counts, h5m_stats). */
struct h5m_stats {
	uint64_t hs_groups;    /* group indices made (root included) */
	uint64_t hs_datasets;  /* datasets: an index and an object each */
	uint64_t hs_attrs;     /* attribute records */
	uint64_t hs_hard;      /* hard links to an object seen before */
	uint64_t hs_soft;      /* soft links */
	uint64_t hs_chunks;    /* chunk extents written */
	uint64_t hs_bytes;     /* data bytes (decompressed) in objects */
};

/** A catalogue record, decoded. */
struct h5m_cat {
	uint32_t hc_state;          /* enum h5m_state */
	uint32_t hc_super_version;  /* the source file's superblock version */
	struct clovis_id hc_root;   /* the root group's index */
	uint64_t hc_ctime_ns;       /* when the import started */
	struct h5m_stats hc_stats;  /* COMPLETE: what the import made */
	char hc_source[H5M_NAME_MAX + 1]; /* the source file's base name */
};

/** An imported file's name: container and name. */
struct h5m_target {
	struct clovis_id ht_cont;
	char ht_name[H5M_NAME_MAX + 1]; /* "" when not given */
};

/* --------------------------------------------------------------- calls */

/**
 * Parse "CONTAINER[/NAME]" (CONTAINER as clovis_id_parse() takes it:
 * "@name", "HI:LO"; "default" is the default container 0:1).  NAME may be
 * left out (ht_name ""); one given must be 1..H5M_NAME_MAX bytes.
 * Returns 0 or -EINVAL (message names the text).
 */
int h5m_target_parse(const char *text, struct h5m_target *t);

/**
 * Check that the HDF5 file at path can be imported: it is an HDF5 file and
 * every object, link, datatype, layout and filter in it is supported.
 * Touches no store.  st (may be NULL) gets the counts an import would make.
 * Returns 0, -ENOENT (no such file), -EINVAL (not an HDF5 file, or HDF5
 * cannot open it), -ENOTSUP, -ENAMETOOLONG, -EFBIG (above).
 */
int h5m_check(const char *path, struct h5m_stats *st);

/**
 * Import the HDF5 file at path as t (ht_name "" = the file's base name) in
 * the store of cl: h5m_check(), then the catalogue claim, the entities,
 * the record COMPLETE and STABLE.  Container t->ht_cont is made when it
 * does not exist (and removed again if the import fails).  New objects go
 * on tier (enum clovis_tier) with a plain layout.  st (may be NULL) gets
 * what was made.  Returns 0, the errors of h5m_check(), -EEXIST (N exists
 * in C, COMPLETE or BUILDING: message says which), or the store's codes;
 * on any failure nothing is left on the store (or, when the clean-up
 * failed too, the message says so and names `strata h5 rm C/N`).
 */
int h5m_import(struct clovis *cl, const char *path,
	       const struct h5m_target *t, uint32_t tier,
	       struct h5m_stats *st);

/**
 * Make the HDF5 file path (which must not exist: -EEXIST) from the import
 * t (ht_name "" = the container's only file).  st (may be NULL) gets what
 * was written.  Returns 0, -ENOENT (no container, catalogue or name, or
 * no directory for path: the message says which), -EINVAL (ht_name "" and
 * the container holds several files, or none), -EBUSY (a BUILDING import),
 * -CLOVIS_ECORRUPT (a record of the mapping fails its check: message names
 * it), HDF5's failure as -EIO, or the store's codes; on failure path is
 * removed.  Every record is checked before HDF5 sees it: a datatype must
 * be one import makes (a string of variable length only at the top, and
 * only where the record's flag says so), a datatype or dataspace must
 * encode again to the record's bytes, and every size the data is moved by
 * (element, row, chunk, slot, grid) must be the one the header holds.
 */
int h5m_export(struct clovis *cl, const struct h5m_target *t,
	       const char *path, struct h5m_stats *st);

/**
 * Remove the import t (ht_name required) with every entity reachable from
 * its root, whatever its state (a BUILDING record of an interrupted
 * import too; at any depth), then its catalogue record, and the catalogue
 * index when it is then empty.  Entities already gone are skipped.  st
 * (may be NULL) counts what was removed (groups, datasets).  A link or a
 * data object id is followed only to an entity of container C made as
 * import makes ids.  What it cannot judge — a damaged header or link
 * record, an id that is not of this import — is left with the groups
 * above it (so it stays reachable) and so is the catalogue record; the
 * rest is removed and -CLOVIS_ECORRUPT names the first left.  Returns 0,
 * -ENOENT (no such container or name), -CLOVIS_ECORRUPT, or the store's
 * codes.
 */
int h5m_remove(struct clovis *cl, const struct h5m_target *t,
	       struct h5m_stats *st);

/** One catalogue entry, for h5m_list(). */
typedef int (*h5m_cat_fn)(void *arg, const char *name,
			  const struct h5m_cat *cat);

/**
 * Call fn for each file of container cont in name order (none: no call).
 * fn returning non-zero stops the walk with that value.  Returns 0, the
 * value of fn, -ENOENT (no such container), -CLOVIS_ECORRUPT, or the
 * store's codes.
 */
int h5m_list(struct clovis *cl, const struct clovis_id *cont, h5m_cat_fn fn,
	     void *arg);

/** Kinds of h5m_entry. */
enum h5m_kind {
	H5M_GROUP = 'G',
	H5M_DATASET = 'D',
	H5M_SOFT = 'S',
	H5M_HARD = 'H', /* a further link to an object already listed */
};

/** One entry of the mapping, for h5m_walk(). */
struct h5m_entry {
	uint32_t he_kind;           /* enum h5m_kind */
	const char *he_path;        /* the HDF5 path ("/" for the root) */
	const char *he_target;      /* SOFT: its value; HARD: the first path */
	struct clovis_id he_idx;    /* GROUP, DATASET: its index */
	struct clovis_id he_obj;    /* DATASET: its data object */
	uint32_t he_attrs;          /* GROUP, DATASET: attribute records */
	uint32_t he_links;          /* GROUP: link records */
	/* DATASET */
	const char *he_layout;      /* "compact", "contiguous", "chunked" */
	uint32_t he_rank;
	uint64_t he_dims[32];
	uint64_t he_chunk[32];      /* chunked: chunk dims */
	uint32_t he_block_shift;    /* the object's block size (log2) */
	uint32_t he_slot_blocks;    /* chunked: blocks per chunk */
	uint64_t he_chunk_bytes;    /* chunked: bytes of one chunk */
	uint64_t he_chunks;         /* chunked: in the grid */
	/* chunked: stored (one extent each); strings of variable length:
	 * allocated in the source file (kept as such by export) */
	uint64_t he_chunks_stored;
	uint64_t he_bytes;          /* bytes of data in the object */
	bool he_vlen;               /* variable-length string stream */
	const char *he_filters;     /* "deflate(6),shuffle" or "" */
};

typedef int (*h5m_entry_fn)(void *arg, const struct h5m_entry *e);

/**
 * Walk the mapping of import t (ht_name "" = the container's only file)
 * from its root, depth first in link-name order, calling fn for each
 * group, dataset and link as export would visit them.  fn returning
 * non-zero stops the walk with that value.  Returns 0, fn's value, or the
 * errors of h5m_export() but -EEXIST and -EIO.
 */
int h5m_walk(struct clovis *cl, const struct h5m_target *t, h5m_entry_fn fn,
	     void *arg);

/** Resolve ht_name "" to the container's only file, in place.  Returns 0,
 *  -ENOENT, -EINVAL (several or none: the message lists them). */
int h5m_target_resolve(struct clovis *cl, struct h5m_target *t);

/** The message of this thread's last failure ("" if none). */
const char *h5m_errmsg(void);

#endif
