/*
 * tier_ut.h — helpers shared by the files of the CUnit suite "tier"
 * (tier_ut.c, smr_ut.c, io_ut.c), defined in tier_ut.c.
 */
#ifndef STRATA_TIERS_UT_TIER_UT_H
#define STRATA_TIERS_UT_TIER_UT_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tiers/tier.h"

/** The store uuid every test device belongs to. */
extern const uint8_t tut_store[16];

/** A fresh device path for tier t: under the suite's NVRAM directory for
 *  NVRAM, in a new temporary directory otherwise. */
void tut_path(char *out, size_t n, enum st_tier t, const char *name);

/** Fill buf with a pattern that differs per seed and per 8-byte word. */
void tut_fill(void *buf, size_t len, uint64_t seed);

/** Format a device of size bytes at path (index 7) and open it; fails
 *  the test on any error. */
struct tier_dev *tut_make(const char *path, enum st_tier t,
			  uint64_t size);

/** A page-aligned allocation of len bytes, or NULL. */
uint8_t *tut_alloc(size_t len);

/** True when the calling thread's error message contains s. */
bool tut_msg_has(const char *s);

/** Register the SMR tests (smr_ut.c) in suite s. */
int tier_ut_smr_add(CU_pSuite s);

/** Register the model, I/O queue and per-device fault tests (io_ut.c). */
int tier_ut_io_add(CU_pSuite s);

#endif
