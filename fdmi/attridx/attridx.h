/*
 * attridx.h — the attribute-index plugin (issue 31 point 5; the program
 * strata-attridx, fdmi/attridx/attridx_main.c): a Clovis client and an
 * FDMI consumer that keeps a Strata index (a Clovis index of the same
 * store) mapping container + tier + size to object ids, so that a NEXT
 * from a prefix lists the objects of one container, of one tier, by size.
 *
 * Keys of the index (byte-ordered; integers big-endian, so memcmp order
 * is numeric order; fdmi/attridx/README.md):
 *
 *   forward  'f' | container (16) | tier (1) | size (8) | object (16)
 *            42 bytes, empty value: one per object
 *   reverse  'r' | object (16)      17 bytes, value: the object's current
 *            forward key (42) | its layout (1): what to delete when the
 *            size or tier changes, or the object goes
 *   meta     'm' "cursor:" SERVER   value: the last FDMI sequence number
 *            folded in from that server (decimal text)
 *            'm' "rebuild"          present while a rebuild is under way
 *
 * The tier of an object: a plain object's tier; a pdclust or mirror
 * object's, the tier of its pool's devices; a composite object's, the
 * tier holding most of its blocks (ties: the higher layer; no block: the
 * top layer's; no layer: ATTRIDX_TIER_NONE).
 *
 * A round (attridx_round()): every FDMI record the consumer has, batch
 * after batch: the batch is folded into one final state per object it
 * names (size from the last record, tier and layout as above; deleted or
 * not), then the index is updated — first one DEL of the stale forward
 * keys (and of the reverse entries of deleted objects), STABLE; then one
 * PUT (OVERWRITE) of the new forward and reverse entries and the cursors,
 * STABLE — and only then is the batch acked.  A batch delivered again
 * (a crash between the PUT and the ack) is skipped by the cursors, and
 * would change nothing if it were folded again: a DEL of an absent key
 * and a PUT of a present one are no-ops.
 *
 * A rebuild (the first start, a consumer that was not registered, a
 * LAGGING consumer, a rebuild a crash interrupted): the marker is put,
 * the consumer reset (LAGGING), every forward and reverse entry deleted,
 * then every object of every container listed, opened and indexed; the
 * marker goes last.  Records of changes made during the rebuild come
 * after it and fold over it.
 */
#ifndef STRATA_FDMI_ATTRIDX_ATTRIDX_H
#define STRATA_FDMI_ATTRIDX_ATTRIDX_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clovis/clovis.h"

struct attridx;

/** Default FDMI consumer name and index of strata-attridx. */
#define ATTRIDX_CONSUMER "attridx"
#define ATTRIDX_INDEX "@strata-attridx"

/** Key prefixes and lengths (above). */
#define ATTRIDX_FWD 'f'
#define ATTRIDX_REV 'r'
#define ATTRIDX_META 'm'
#define ATTRIDX_FWD_LEN 42u
#define ATTRIDX_REV_LEN 17u
#define ATTRIDX_REV_VAL_LEN (ATTRIDX_FWD_LEN + 1u)
/** Where a forward key holds the tier byte. */
#define ATTRIDX_FWD_TIER_AT 17u
/** The tier byte of an object whose tier is not known. */
#define ATTRIDX_TIER_NONE 0xffu

struct attridx_conf {
	struct clovis *ac_cl;
	struct clovis_id ac_index; /**< the index (default container) */
	const char *ac_consumer;   /**< NULL: ATTRIDX_CONSUMER */
	/** Bound on the records not acked, when the consumer is registered
	 *  (0: the default, 64 MiB); an existing consumer keeps its own. */
	uint64_t ac_max_bytes;
	/** Fold and update the index, but do not ack (the records come
	 *  again to the next instance; tests of redelivery). */
	bool ac_no_ack;
	FILE *ac_out;              /**< notes (NULL: stdout) */
};

/** What one round did. */
struct attridx_round_stats {
	uint64_t ar_records;  /**< FDMI records folded (not skipped) */
	uint64_t ar_objects;  /**< objects whose entries changed */
	uint64_t ar_rebuilt;  /**< objects indexed by a rebuild (0: none) */
	bool ar_rebuild;      /**< a rebuild ran */
};

/**
 * Open (or create) the index, register the consumer (filter: the object
 * and layer records) and rebuild the index when it was just created, the
 * consumer was not registered, or the marker says a rebuild did not end.
 * 0 and *out, or a negative code with a message (clovis_errmsg()).
 */
int attridx_open(const struct attridx_conf *c, struct attridx **out);
void attridx_close(struct attridx *a);
/** One round (above).  0, or a negative code with a message. */
int attridx_round(struct attridx *a, struct attridx_round_stats *st);

/** What attridx_query() selects; every field given must hold. */
struct attridx_query {
	bool aq_container_set;
	struct clovis_id aq_container;
	int aq_tier;               /**< -1: any; else enum clovis_tier or
				    *   ATTRIDX_TIER_NONE */
	uint64_t aq_size_min;      /**< bytes, inclusive */
	uint64_t aq_size_max;      /**< bytes, inclusive (UINT64_MAX: any) */
};

/** One object of the index. */
struct attridx_entry {
	struct clovis_id ae_container;
	struct clovis_id ae_id;
	uint32_t ae_tier;
	uint64_t ae_size;
};

/** Called for each entry a query selects, in key order; non-zero stops
 *  the walk and is returned. */
typedef int (*attridx_entry_fn)(void *arg, const struct attridx_entry *e);

/**
 * Walk index `index` (default container of cl) with NEXT from the
 * longest key prefix q fixes (container, then tier, then the lowest
 * size), calling fn for each forward entry q selects, until past it.
 * 0, fn's non-zero result, -ENOENT (no such index: message), or a
 * negative code.
 */
int attridx_query(struct clovis *cl, const struct clovis_id *index,
		  const struct attridx_query *q, attridx_entry_fn fn,
		  void *arg);

/** Encode the forward key of object id in *out (ATTRIDX_FWD_LEN). */
void attridx_key_fwd(uint8_t *out, const struct clovis_id *cont,
		     uint32_t tier, uint64_t size, const struct clovis_id *id);
/** Decode a forward key; false when key is not one. */
bool attridx_key_fwd_decode(const void *key, size_t len,
			    struct attridx_entry *e);
/** "nvram", "flash", "sas", "smr", or "-" (ATTRIDX_TIER_NONE, other). */
const char *attridx_tier_name(uint32_t tier);

#endif
