/*
 * alloc.h — space allocation on one device: a bitmap of 512-byte units.
 *
 * The bitmap lives in memory only.  It is rebuilt at open from the extent
 * maps in LMDB (core/obj.c), which are the single truth about used space:
 * space taken by a write that never committed is free again after a crash,
 * with no log to replay.  Released space must not be handed out again while
 * a committed-but-not-durable map or a reader may still point at it; callers
 * guarantee that by releasing only after the commit is durable and an RCU
 * grace period has passed (core/engine.c).
 *
 * Thread-safe: one mutex per device.
 */
#ifndef STRATA_CORE_ALLOC_H
#define STRATA_CORE_ALLOC_H

#include <pthread.h>
#include <stdint.h>

struct alloc {
	pthread_mutex_t al_lock;
	uint64_t *al_map;    /**< 1 bit per unit, 1 = used */
	uint64_t al_units;   /**< units on the device */
	uint64_t al_free;    /**< free units */
	uint64_t al_hint;    /**< next-fit cursor (unit number) */
	/** Metrics label slot + 1 of the device (addb/addb.h); when set,
	 *  every change of al_free sets strata_device_free_bytes (under
	 *  al_lock: no other lock, no device handle). */
	uint32_t al_addb;
};

/** Set up an allocator of units units, all free.  0 or -ENOMEM. */
int alloc_init(struct alloc *a, uint64_t units);
void alloc_fini(struct alloc *a);

/**
 * Take up to want free units, contiguous, next-fit from the cursor, in a
 * whole number of granules of gran units (want is a multiple of gran).  Sets
 * *start and *got (gran <= *got <= want).  Returns 0, or -ENOSPC when no
 * free run of gran units exists.  Callers needing more loop.
 */
int alloc_take(struct alloc *a, uint64_t want, uint64_t gran, uint64_t *start,
	       uint64_t *got);

/** Mark [start, start + n) used (rebuild at open).  -EEXIST on overlap. */
int alloc_mark(struct alloc *a, uint64_t start, uint64_t n);

/** Give back [start, start + n); every unit must be in use. */
void alloc_release(struct alloc *a, uint64_t start, uint64_t n);

/** Free units now. */
uint64_t alloc_free_units(struct alloc *a);

/** Used units in [start, start + n) (SMR zone accounting). */
uint64_t alloc_used_in(struct alloc *a, uint64_t start, uint64_t n);

#endif
