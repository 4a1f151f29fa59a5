/*
 * tier_internal.h — what tier.c shares with the other files of the
 * driver-independent half of tiers/: the device model (tier_model.c) and
 * the I/O queues (tier_ioq.c).  Not part of the interface (tier.h).
 */
#ifndef STRATA_TIERS_TIER_INTERNAL_H
#define STRATA_TIERS_TIER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tiers/tier.h"

/** What a modelled request does to the device. */
enum tier_model_op { TM_READ, TM_WRITE, TM_SYNC };

/**
 * Take device time for a request of len bytes under d's model and return
 * its modelled completion (CLOCK_MONOTONIC ns), or 0 when d has no model.
 * Call before the real I/O; pass the result to tier_model_wait() after it.
 */
uint64_t tier_model_begin(struct tier_dev *d, enum tier_model_op op,
			  size_t len);

/** Sleep until done (from tier_model_begin) unless it has passed; 0 does
 *  nothing. */
void tier_model_wait(uint64_t done);

/** A device's request queue, no threads yet; NULL when out of memory. */
struct tier_ioq *tier_ioq_create(struct tier_dev *d);

/** Stop and join the queue's threads (after they drained it) and free it
 *  (NULL allowed). */
void tier_ioq_destroy(struct tier_ioq *q);

#endif
