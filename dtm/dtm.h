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
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"
#include "dtm/dtm_limits.h"

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
void dtm_id_make(struct st_dtx_id *id, uint32_t node);

/** Order of two ids: clock first, then node.  <0, 0, >0. */
int dtm_id_cmp(const struct st_dtx_id *a, const struct st_dtx_id *b);

/** "NODE:HLC" in lower-case hex into buf (>= DTM_ID_STR_LEN). */
char *dtm_id_format(const struct st_dtx_id *id, char *buf);

/** Parse "NODE:HLC" (hex).  0 or -EINVAL with a message naming s. */
int dtm_id_parse(const char *s, struct st_dtx_id *id);

/* --------------------------------------------- cooperative termination */

/** What a participant knows of a dtx (its log record's state). */
enum dtm_state {
	DTM_UNKNOWN = 0,   /**< no record: never prepared it */
	DTM_PREPARED = 1,  /**< pending updates and participants logged, YES */
	DTM_COMMITTED = 2, /**< decision logged and pending applied */
	DTM_ABORTED = 3,   /**< decision logged, pending released */
};

/** One peer's answer to DTX_QUERY, as the asking participant sees it. */
struct dtm_answer {
	uint32_t da_state;   /**< enum dtm_state, when da_replied */
	bool da_replied;     /**< it answered within the timeout */
	bool da_dead;        /**< gone for good (operator / configuration) */
};

enum dtm_verdict {
	DTM_V_WAIT = 0,   /**< still in doubt: ask again later */
	DTM_V_COMMIT = 1,
	DTM_V_ABORT = 2,
};

/**
 * The termination rule (dtm/README.md): what a participant in state self
 * decides for an in-doubt dtx from its peers' answers.  A decided self
 * keeps its decision; any peer that knows the outcome gives it; a peer
 * that never prepared (UNKNOWN: it logs ABORTED before answering, see
 * dtm_query_answer) means the coordinator cannot have decided COMMIT, so
 * ABORT; a dead peer counts as UNKNOWN unless a live peer holds COMMITTED;
 * otherwise (all PREPARED, or some silent and alive) WAIT.
 */
enum dtm_verdict dtm_term_decide(uint32_t self, const struct dtm_answer *peers,
				 uint32_t nr);

/**
 * The rule of the deciding participant (the first of the list, whose
 * COMMITTED record is the dtx's commit point: the coordinator sends COMMIT
 * to it first, and to the others only after it acknowledged): an in-doubt
 * record older than the termination timeout (expired) is aborted by it
 * alone, since no other participant can have committed before it did.
 * A late COMMIT is then refused and the coordinator aborts the others.
 */
enum dtm_verdict dtm_term_decider(uint32_t self, bool expired);

/**
 * A participant in state *local answers a peer's query: the state to send.
 * UNKNOWN turns into a durable ABORTED first (*local is set to ABORTED and
 * *log_it to true: log it before answering), so that a PREPARE that
 * arrives late is refused and the two can never disagree.
 */
uint32_t dtm_query_answer(uint32_t *local, bool *log_it);

/** May a PREPARE for a dtx in state local be accepted?  (UNKNOWN only.) */
bool dtm_prepare_allowed(uint32_t local);


/**
 * The log record a participant keeps per dtx (LMDB, key "dtx/" + id),
 * little-endian, followed by dr_nr_parts server indices (uint16_t each)
 * and, in PREPARED records, the pending mappings.
 */
struct dtm_rec {
	uint32_t dr_magic;     /**< DTM_REC_MAGIC */
	uint16_t dr_version;   /**< DTM_REC_VERSION */
	uint8_t dr_state;      /**< enum dtm_state */
	uint8_t dr_nr_parts;   /**< 1..DTM_PARTS_MAX */
	uint64_t dr_hlc;       /**< the dtx id */
	uint32_t dr_node;
	uint32_t dr_coord;     /**< the coordinator (client) node */
	uint64_t dr_time_us;   /**< when the state was logged (HLC time) */
};
_Static_assert(sizeof(struct dtm_rec) == 32, "dtm_rec on-disk size");

#define DTM_REC_MAGIC 0x52585444u /* "DTXR" */
#define DTM_REC_VERSION 1u

/** Encode rec and its participants into buf (len bytes); returns the size
 *  used, or -ENOBUFS / -EINVAL (message names the field). */
int dtm_rec_encode(const struct dtm_rec *rec, const uint16_t *parts,
		   void *buf, size_t len);

/** Decode and check a record of len bytes (magic, version, state, the
 *  participant count against len).  0 or -ST_ECORRUPT with a message
 *  naming the field; parts gets dr_nr_parts entries. */
int dtm_rec_decode(const void *buf, size_t len, struct dtm_rec *rec,
		   uint16_t parts[DTM_PARTS_MAX]);

#endif
