/*
 * types.h — the ground floor's ids, error codes, tier kinds, layout types
 * and layout bounds, shared by every layer (issue 27 point 1).
 *
 * tiers/ and layouts/ take these names from here, not from the public
 * header clovis/clovis.h, which stays self-contained and keeps its own
 * CLOVIS_ names with the same values: clovis/clovis.c checks every pair
 * with _Static_assert, so they cannot drift.  Includes only standard
 * headers.
 */
#ifndef STRATA_CORE_TYPES_H
#define STRATA_CORE_TYPES_H

#include <stdint.h>

/** An object, index or container id: two words, the same layout as
 *  struct clovis_id (converted at the engine's calls, core/engine.h
 *  st_id_of()). */
struct st_id {
	uint64_t si_hi;
	uint64_t si_lo;
};

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

#endif
