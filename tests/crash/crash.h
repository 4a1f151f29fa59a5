/*
 * crash.h — what the crash writer stores and the checker expects.
 *
 * The store holds CRASH_NR_OBJ objects (several block sizes and tiers) and
 * CRASH_NR_IDX indices.  The writer works in waves: each wave launches one
 * update per entity, all tagged with one generation number
 *
 *     gen = round << 24 | wave        (strictly increasing over a test)
 *
 * and everything an update touches is a pure function of (gen, entity):
 * which extents an object WRITE covers (1 to 3 of them) and which keys a
 * multi-record PUT sets.  Every block and every value carries its entity,
 * its position (block number or key number), the gen and a checksum, so the
 * checker can recompute, from any block or record it finds, the whole update
 * it came from, and check that the update is all there or all absent.
 */
#ifndef STRATA_TESTS_CRASH_H
#define STRATA_TESTS_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clovis/clovis.h"

#define CRASH_NR_OBJ 4u
#define CRASH_NR_IDX 2u
#define CRASH_NR_ENT (CRASH_NR_OBJ + CRASH_NR_IDX)
#define CRASH_KEYS 48u          /* keys per index */
#define CRASH_PUT_MAX 8u        /* records per PUT */
#define CRASH_EXT_MAX 3u        /* extents per WRITE */
#define CRASH_VAL_MIN 48u       /* value sizes */
#define CRASH_VAL_MAX 300u
#define CRASH_ID_HI 0xc4a5400000000000ull
#define CRASH_DEV_SIZE (512ull << 20)
#define CRASH_SMR_DEV_SIZE (16ull << 20)

/* Shape of object e (e < CRASH_NR_OBJ). */
struct crash_obj_shape {
	uint32_t cs_shift;      /* log2 block size */
	uint32_t cs_tier;       /* enum clovis_tier */
	uint32_t cs_nr_blks;    /* blocks the writer uses */
	uint32_t cs_op_max;     /* most blocks of one WRITE */
};
extern const struct crash_obj_shape crash_shapes[CRASH_NR_OBJ];

/* The blocks or keys one update (gen, e) touches. */
struct crash_layout {
	uint32_t cl_nr;                     /* extents or records */
	uint64_t cl_start[CRASH_PUT_MAX];   /* objects: extent starts */
	uint64_t cl_len[CRASH_PUT_MAX];     /* objects: extent lengths */
	uint32_t cl_key[CRASH_PUT_MAX];     /* indices: key numbers */
	uint32_t cl_vlen[CRASH_PUT_MAX];    /* indices: value lengths */
	uint64_t cl_blocks;                 /* objects: total blocks */
};

/** The tier object e is made on: its shape's, or with CRASH_SMR set in the
 *  environment (crash_test.sh smr) CLOVIS_TIER_SMR for every object of
 *  blocks below 1 MiB and CLOVIS_TIER_FLASH for the others. */
uint32_t crash_tier(uint32_t e);

/** The id of entity e. */
struct clovis_id crash_id(uint32_t e);

/** The update of entity e in generation gen. */
void crash_layout(uint64_t gen, uint32_t e, struct crash_layout *l);

/** True when block blk of object e is inside the extents of l. */
bool crash_layout_has_blk(const struct crash_layout *l, uint64_t blk);

/** True when key k is among the records of l. */
bool crash_layout_has_key(const struct crash_layout *l, uint32_t k);

/** Fill a block of object e at blk for gen (size 1 << shift). */
void crash_block_fill(uint8_t *buf, uint32_t shift, uint32_t e, uint64_t blk,
		      uint64_t gen);

/**
 * Decode a block read back: 0 and *gen = 0 for an all-zero block, 0 and
 * *gen for an intact one of (e, blk), -1 for anything else.
 */
int crash_block_check(const uint8_t *buf, uint32_t shift, uint32_t e,
		      uint64_t blk, uint64_t *gen);

/** The key text of key number k ("key-NNN", no NUL counted). */
size_t crash_key(uint32_t k, char buf[16]);

/** Fill the value of key k of index e for gen (len bytes). */
void crash_val_fill(uint8_t *buf, size_t len, uint32_t e, uint32_t k,
		    uint64_t gen);

/** Decode a value: 0 and *gen when intact for (e, k), else -1. */
int crash_val_check(const uint8_t *buf, size_t len, uint32_t e, uint32_t k,
		    uint64_t *gen);

/** Fill conf for the store in dir (NVRAM device in dir too; with
 *  CRASH_META_NVRAM=NVDIR in the environment, the NVRAM device there and,
 *  at create, the metadata too: CLOVIS_CONF_META_NVRAM; with CRASH_SMR,
 *  the configuration file it names (crash_test.sh: a flash and an SMR
 *  device in 1 MiB zones), devices of CRASH_SMR_DEV_SIZE: 16 zones that
 *  the writer's waves fill and the cleaner empties within a few rounds;
 *  CRASH_DEV_MIB=N: devices of N MiB and CRASH_CONFIG=FILE: that
 *  configuration, for the creation tests). */
void crash_conf(struct clovis_conf *conf, const char *dir, uint32_t flags);

#endif
