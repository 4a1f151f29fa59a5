/*
 * clovis_bad_ut.h — helpers shared by the files of the bad-input suites of
 * the Clovis API: "clovis_bad" (clovis_bad_ut.c, which defines them) and
 * "clovis_bad_store" (clovis_bad_store_ut.c).
 */
#ifndef STRATA_CLOVIS_UT_CLOVIS_BAD_UT_H
#define STRATA_CLOVIS_UT_CLOVIS_BAD_UT_H

#include <stddef.h>
#include <stdint.h>

#include "clovis/clovis.h"

#define BAD_SHIFT 12u
#define BAD_BLK (1u << BAD_SHIFT)
#define BAD_VAL_LEN 40u
#define BAD_DEV_SIZE (32ull << 20)
#define BAD_HI 0xbadull

/* A small vector with its own arrays. */
struct bad_vec {
	void *bv_bufs[8];
	size_t bv_lens[8];
	struct clovis_bufvec bv_vec;
};

/* Index op vectors: keys, values and rcs of up to 8 records. */
struct bad_recs {
	char br_keys[8][16];
	uint8_t br_vals[8][BAD_VAL_LEN];
	struct bad_vec br_kv, br_vv;
	int32_t br_rcs[8];
};

/* The byte i of fixture block blk. */
uint8_t bad_pat(uint64_t blk, size_t i);

/* The value of fixture record k. */
void bad_val(unsigned k, uint8_t val[BAD_VAL_LEN]);

/* Fill r with nr records: existing fixture keys first (nr_old of them),
 * then new keys "bad-new-K"; values 0x5a, rcs 1. */
void bad_recs(struct bad_recs *r, uint32_t nr, uint32_t nr_old);

/* One-extent READ/WRITE/ALLOC/FREE of nr blocks at start through o;
 * returns the call's or the op's rc. */
int bad_obj_io(struct clovis_obj *o, enum clovis_obj_opcode opc,
	       uint64_t start, uint64_t nr, void *buf);

/* Make a handle for id in r and CREATE or OPEN it; 0 or the error. */
int bad_obj_make(struct clovis_obj *o, struct clovis_realm *r,
		 struct clovis_id id, enum clovis_entity_opcode opc);
int bad_idx_make(struct clovis_idx *ix, struct clovis_realm *r,
		 struct clovis_id id, enum clovis_entity_opcode opc);

/* Run an index op over vectors; returns the op's rc. */
int bad_idx_run(struct clovis_idx *ix, enum clovis_idx_opcode opc,
		struct clovis_bufvec *keys, struct clovis_bufvec *vals,
		int32_t *rcs, uint32_t flags);

/* Fill conf for a small store in dir, NVRAM device beside the others. */
void bad_conf(struct clovis_conf *conf, const char *dir, uint32_t flags);

/* Add the "clovis_bad_store" suite (clovis_bad_store_ut.c); 0 or -1.
 * Called by clovis_bad_ut_add(). */
int clovis_bad_store_ut_add(void);

#endif /* STRATA_CLOVIS_UT_CLOVIS_BAD_UT_H */
