/*
 * types.h — the ground floor's ids, error codes, tier kinds, layout types
 * and layout bounds, entity types, flags, vectors and the records the
 * engine fills, shared by every layer (issue 27 point 1).
 *
 * core/ (with core/rpc and core/server), tiers/, layouts/ and dtm/ take
 * these names from here, never from the public header clovis/clovis.h,
 * which stays self-contained and keeps its own clovis_/CLOVIS_ names with
 * the same values and the same struct layouts (field order, types and
 * names; only struct st_id's fields are si_ where clovis_id's are ci_).
 * clovis/clovis.c checks every pair with _Static_assert (values, sizeof
 * and every offsetof), so they cannot drift, and clovis/ converts at its
 * boundary by pointer (clovis/clovis_internal.h: st_of(), clovis_of()).
 * The hard limits that go with them are in core/limits.h.  Includes only
 * standard headers.
 */
#ifndef STRATA_CORE_TYPES_H
#define STRATA_CORE_TYPES_H

#include <stddef.h>
#include <stdint.h>

/** An object, index or container id: two words, the same layout as
 *  struct clovis_id.  Ids with hi == 0 and lo < ST_ID_USER_MIN are
 *  reserved. */
struct st_id {
	uint64_t si_hi;
	uint64_t si_lo;
};

/** The default container, created with every store. */
#define ST_ID_DEFAULT_CONTAINER ((struct st_id){0, 1})
/** Lowest lo an id with hi == 0 may have (smaller ones are reserved). */
#define ST_ID_USER_MIN 1024u
/** Characters st_id_format() needs, with the terminating NUL. */
#define ST_ID_STR_LEN 34

/** Compare two ids (hi, then lo); returns <0, 0 or >0 (core/types.c). */
int st_id_cmp(const struct st_id *a, const struct st_id *b);
/** Format id as "HI:LO" in lower-case hex into buf (>= ST_ID_STR_LEN). */
char *st_id_format(const struct st_id *id, char *buf);
/** Parse "HI:LO" (hex, optionally 0x-prefixed) or "@name" (hashed, hi !=
 *  0; stable across versions and machines).  0, or -EINVAL with a message
 *  naming the text (clovis_id_parse() calls it). */
int st_id_parse(const char *s, struct st_id *out);

/** Project-specific error codes, returned negated like errno (the values
 *  of CLOVIS_E*). */
enum st_errno {
	ST_EBASE = 1000,
	ST_ECORRUPT = 1001,  /**< on-disk structure failed a check */
	ST_EVERSION = 1002,  /**< store made by an incompatible version */
	ST_ECHECKSUM = 1003, /**< stored data failed its checksum */
	ST_ESTATE = 1004,    /**< handle or op is in the wrong state */
};

/** Device kinds (the values of CLOVIS_TIER_*; stored in device
 *  superblocks, so never renumbered). */
enum st_tier {
	ST_TIER_NVRAM = 0, /**< persistent memory through PMDK */
	ST_TIER_FLASH = 1, /**< SSD-class device (file or block device) */
	ST_TIER_SAS = 2,   /**< disk-class device (file or block device) */
	ST_TIER_SMR = 3,   /**< shingled disk: zones written sequentially */
	ST_TIER_NR = 4,
};

/** Layout types (the values of CLOVIS_LAYOUT_*; stored with objects). */
enum st_layout_type {
	ST_LAYOUT_PLAIN = 1,     /**< every block on one device of a tier */
	ST_LAYOUT_PDCLUST = 2,   /**< N data + K parity + S spare over a pool */
	ST_LAYOUT_MIRROR = 3,    /**< N copies of every unit */
	ST_LAYOUT_COMPOSITE = 4, /**< extent ranges mapped to layers */
};

/** Largest N, K, S and N+K+S of a pdclust or mirror layout
 *  (CLOVIS_LAYOUT_UNITS_MAX). */
#define ST_LAYOUT_UNITS_MAX 32u
/** Unit sizes of pdclust and mirror layouts: 4 KiB .. 16 MiB
 *  (CLOVIS_UNIT_SHIFT_MIN/MAX). */
#define ST_UNIT_SHIFT_MIN 12u
#define ST_UNIT_SHIFT_MAX 24u

/** Entity types (the values of CLOVIS_ET_*; stored in entity records). */
enum st_entity_type {
	ST_ET_CONTAINER = 1,
	ST_ET_OBJ = 2,
	ST_ET_IDX = 3,
};

/** Flags of index ops (the values of CLOVIS_IF_*; sent in requests). */
enum st_idx_flags {
	ST_IF_OVERWRITE = 1u << 0,         /**< PUT: replace a value */
	ST_IF_EXCLUDE_START_KEY = 1u << 1, /**< NEXT: start after the key */
	ST_IF_CALLER_BUFS = 1u << 2,       /**< NEXT: the caller's buffers */
};

/** Flags of a store's opening (the values of CLOVIS_CONF_*, clovis.h
 *  describes each). */
enum st_conf_flags {
	ST_CONF_CREATE = 1u << 0,       /**< create the store if absent */
	ST_CONF_DEVICE_MODEL = 1u << 1, /**< device model on every tier */
	ST_CONF_META_NVRAM = 1u << 2,   /**< metadata on the NVRAM tier */
};

/** An extent vector in block units: ev_nr extents [start, start + nr_blks)
 *  (struct clovis_extvec; its rules are in clovis.h). */
struct st_extvec {
	uint32_t ev_nr;
	uint64_t *ev_start_blk;
	uint64_t *ev_nr_blks;
};

/** A buffer vector: bv_nr buffers bv_buf[i] of bv_len[i] bytes (struct
 *  clovis_bufvec; its rules are in clovis.h). */
struct st_bufvec {
	uint32_t bv_nr;
	void **bv_buf;
	size_t *bv_len;
};

/** A transaction id: the node that made it and its hybrid logical clock
 *  (physical microseconds << 16 | logical counter); ids order dtxs
 *  (struct clovis_dtx_id). */
struct st_dtx_id {
	uint64_t di_hlc;
	uint32_t di_node;
	uint32_t di_pad;
};

/** Object attributes (struct clovis_obj_attr: which fields are in and
 *  out, and their defaults, are in clovis.h). */
struct st_obj_attr {
	uint32_t oa_block_shift; /**< log2 block size */
	uint32_t oa_layout;      /**< enum st_layout_type; 0: the default */
	uint32_t oa_tier;        /**< enum st_tier (PLAIN) */
	uint32_t oa_dev;         /**< device index holding the data (PLAIN) */
	uint32_t oa_pool;        /**< PDCLUST/MIRROR: the pool; 0: default */
	uint32_t oa_data_units;  /**< PDCLUST: N; MIRROR: copies */
	uint32_t oa_parity_units; /**< PDCLUST: K */
	uint32_t oa_spare_units; /**< spare units per group */
	uint32_t oa_unit_shift;  /**< log2 unit size */
	uint32_t oa_pad;
	uint64_t oa_size_blocks; /**< highest block written + 1 */
	uint64_t oa_size_bytes;  /**< the application's byte size */
	uint64_t oa_ctime_ns;    /**< creation time, ns since the epoch */
	uint64_t oa_mtime_ns;    /**< last data or attribute change */
};

/** One device of the store, as the engine reports it (struct
 *  clovis_dev_info). */
struct st_dev_info {
	uint32_t di_index;      /**< device index in the store */
	uint32_t di_tier;       /**< enum st_tier */
	char di_path[256];      /**< where it lives */
	char di_driver[16];     /**< driver name ("file", "pmem2") */
	uint64_t di_size_bytes; /**< usable capacity */
	uint64_t di_free_bytes; /**< free capacity now */
	uint32_t di_direct_io;  /**< 1 when data bypasses the page cache */
	uint32_t di_state;      /**< enum eng_dev_state (CLOVIS_DEV_*) */
	uint64_t di_errors;     /**< I/O errors since the store was opened */
	uint32_t di_rebalance;  /**< 1: replaced, units to move back */
	uint32_t di_model;      /**< 1: the device model is on */
	uint64_t di_zone_size;  /**< SMR: zone bytes; 0 for other tiers */
	uint32_t di_zones;      /**< SMR: zones */
	uint32_t di_zones_empty; /**< SMR: zones with nothing written */
	uint64_t di_reads;      /**< read requests served since opened */
	uint64_t di_writes;     /**< write requests served since opened */
};

/** One layer of a composite object (struct clovis_layer_info). */
struct st_layer_info {
	uint32_t li_layer;          /**< layer id (1..) */
	uint32_t li_priority;       /**< higher wins; writes go to the highest */
	struct st_obj_attr li_attr; /**< its sub-layout */
	uint64_t li_blocks;         /**< blocks of the object it holds now */
};

/** One run of a composite's blocks on one layer (clovis_layer_ext). */
struct st_layer_ext {
	uint64_t le_start;  /**< first block */
	uint64_t le_blocks; /**< blocks, 1.. */
	uint32_t le_layer;  /**< the layer holding them */
};

/**
 * The splitmix64 finaliser: a fixed, well-mixed 64-bit hash, the same on
 * every machine and version (placement hashes, op tags and digests rest
 * on it: changing it moves data).
 */
static inline uint64_t st_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif
