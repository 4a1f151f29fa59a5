/*
 * dtm.h — distributed transactions: ids (node + hybrid logical clock) and
 * the durable records of the commit protocol (dtm/README.md).
 *
 * Transaction ids order transactions across nodes: a dtx id is the id of
 * the node that made it (its coordinator: the client) and a hybrid
 * logical clock value, physical microseconds << 16 | a logical counter.
 * Every node keeps one clock (dtm_hlc_now); every message of the protocol
 * carries the sender's clock, and the receiver moves its own past it
 * (dtm_hlc_observe), so an id made after a node learned of another id
 * orders after it, whatever the machines' clocks say.
 */
#ifndef STRATA_DTM_DTM_H
#define STRATA_DTM_DTM_H

#include <stdbool.h>
#include <stdint.h>

#include "clovis/clovis.h"

/** Bits of the logical counter below the physical microseconds. */
#define DTM_HLC_LOGICAL_BITS 16u

/** Characters dtm_id_format() needs, with the NUL ("NODE:HLC" in hex). */
#define DTM_ID_STR_LEN 32u

/**
 * The next clock value of this process: greater than every value it
 * returned or observed before, and at least the physical time.  Thread
 * safe (one atomic word).
 */
uint64_t dtm_hlc_now(void);

/** Move the clock past remote (a value read from a message). */
void dtm_hlc_observe(uint64_t remote);

/** Physical microseconds of a clock value (for display). */
static inline uint64_t dtm_hlc_us(uint64_t hlc)
{
	return hlc >> DTM_HLC_LOGICAL_BITS;
}

/** A new id for node: dtm_hlc_now() with the node. */
void dtm_id_make(struct clovis_dtx_id *id, uint32_t node);

/** Order of two ids: clock first, then node.  <0, 0, >0. */
int dtm_id_cmp(const struct clovis_dtx_id *a, const struct clovis_dtx_id *b);

/** "NODE:HLC" in lower-case hex into buf (>= DTM_ID_STR_LEN). */
char *dtm_id_format(const struct clovis_dtx_id *id, char *buf);

/** Parse "NODE:HLC" (hex).  0 or -EINVAL with a message naming s. */
int dtm_id_parse(const char *s, struct clovis_dtx_id *id);

#endif
