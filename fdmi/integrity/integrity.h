/*
 * integrity.h — the integrity plugin (issue 31 point 5; the program
 * strata-integrity, fdmi/integrity/integrity_main.c): a Clovis client and
 * an FDMI consumer that verifies the objects written recently, once each,
 * soon after their last write, instead of waiting for a store-wide scrub.
 *
 * It keeps a state file (SQLite): the pending set — objects written
 * (obj.write, obj.alloc, layer.move records) and not verified since, with
 * the time of their last write — the FDMI cursor per server, and a log of
 * every verification.
 *
 * A round (integrity_round()):
 *   1. ingest: every FDMI record the consumer has, batch after batch:
 *      folded into the pending set (a write adds the object or moves its
 *      write time on, a delete takes it out) in one SQLite transaction
 *      with the cursor, committed, then the batch acked — so a crash
 *      between the ack and the checks forgets nothing;
 *   2. check: each pending object whose last write is at least `delay`
 *      old (a busy object is not read while it is written) is read whole
 *      through Clovis.  READ verifies every unit it reads against its
 *      checksum and rebuilds and rewrites a damaged one (read-repair);
 *      the store's unit counters (clovis_unit_counters_get()) before and
 *      after tell how many units were damaged and repaired.  Then it
 *      leaves the pending set and the result is logged.
 *
 * What READ verifies: the data units of the groups it reads (pdclust),
 * one copy of each group (mirror; the copy g mod copies), and the whole
 * group, parity included, when a unit of it is damaged.  Parity units of
 * sound groups and the other mirror copies are verified by the
 * store-wide scrub only (clovis_scrub()).  Plain objects (and composites
 * without a pdclust or mirror layer) carry no checksums: "not checkable".
 *
 * Embedded stores only (clovis_unit_counters_get() is -ENOTSUP in
 * cluster mode).
 */
#ifndef STRATA_FDMI_INTEGRITY_INTEGRITY_H
#define STRATA_FDMI_INTEGRITY_INTEGRITY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clovis/clovis.h"

struct integ;

/** Default FDMI consumer name of strata-integrity. */
#define INTEG_CONSUMER "integrity"

struct integ_conf {
	struct clovis *ic_cl;      /**< an embedded instance */
	const char *ic_state;      /**< the state file (SQLite) */
	const char *ic_consumer;   /**< NULL: INTEG_CONSUMER */
	uint64_t ic_delay_ns;      /**< check objects this long after their
				    *   last write, not sooner */
	FILE *ic_out;              /**< one line per object checked, notes
				    *   (NULL: stdout) */
};

/** What one round did. */
struct integ_round_stats {
	uint64_t ir_records;       /**< FDMI records folded */
	uint32_t ir_checked;       /**< objects checked (every result) */
	uint32_t ir_ok;
	uint32_t ir_repaired;      /**< objects with units repaired */
	uint32_t ir_unrepairable;
	uint32_t ir_plain;         /**< not checkable */
	uint32_t ir_errors;        /**< not checked now (kept pending) */
	uint64_t ir_pending;       /**< left pending after the round */
	bool ir_rescan;            /**< the consumer was LAGGING: rescanned */
};

/** Open the state file and register the consumer (its filter: obj.write,
 *  obj.alloc, layer.move, obj.delete; from now on: objects written before
 *  the first start are not checked).  With a state file whose consumer is
 *  not registered any more, or a rescan a crash cut short, the objects
 *  modified since the last record folded in are rescanned into the
 *  pending set.  0 and *out, or a negative code with a message
 *  (clovis_errmsg()). */
int integ_open(const struct integ_conf *c, struct integ **out);
void integ_close(struct integ *g);
/** One round (above).  0, or a negative code with a message. */
int integ_round(struct integ *g, struct integ_round_stats *st);

/** Print the log of the state file at path (every check, oldest first;
 *  JSON lines with json).  No store needed.  0 or a negative code. */
int integ_log_print(const char *path, FILE *out, bool json);

#endif
