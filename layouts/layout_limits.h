/*
 * layout_limits.h — the hard limits of layouts/, each with its reason.
 *
 * The width of a layout (ST_LAYOUT_UNITS_MAX) and its unit sizes are
 * public (clovis/clovis.h, ST_LAYOUT_UNITS_MAX ...; the same values
 * under ST_ names in the ground floor, core/types.h); these are the
 * bounds of the placement and erasure-code maths derived from them.
 */
#ifndef STRATA_LAYOUTS_LAYOUT_LIMITS_H
#define STRATA_LAYOUTS_LAYOUT_LIMITS_H

#include "core/types.h"

/** Largest pool: device numbers of a permutation are kept in a uint8_t
 *  (pdclust.c), which also keeps the per-pool tables of one mapping on
 *  the stack. */
#define PD_POOL_MAX 256u

/* Widest erasure-code group: n + k units, the public layout width (ec.c
 * checks it stays below the 256 rows of GF(2^8) Cauchy matrices). */
#define EC_UNITS_MAX ST_LAYOUT_UNITS_MAX
/* Largest n * k with n + k <= EC_UNITS_MAX: sizes the decode rows; also
 * the largest e * e, e lost data units <= min(n, k). */
#define EC_NK_MAX ((EC_UNITS_MAX / 2) * (EC_UNITS_MAX / 2))
/* ISA-L takes an int length: larger buffers go through in chunks of this
 * many bytes (a multiple of 32, so only the last chunk is ragged). */
#define EC_CHUNK (1u << 30)

#endif
