/*
 * zone.h — SMR devices (core/zone.c): appends at the write pointer, the
 * cleaner, recovery of the zones at open.
 */
#ifndef STRATA_CORE_ZONE_H
#define STRATA_CORE_ZONE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine.h"

/**
 * Append len bytes of buf to zoned device dev (SMR): into its open zone,
 * else the partly written zone with the most room (so the tails of zones
 * left open by an earlier process, one killed among them, are used up),
 * else the next empty one, in runs that are whole multiples of gran bytes
 * (a run never crosses a zone).  Each run is marked used and added to sv, in
 * order.  Returns 0, -ENOSPC (no empty zone left: run the cleaner), or the
 * driver's error (runs already written stay in sv for the caller to give
 * back with eng_space_release()).
 */
int eng_space_append(struct eng *e, uint32_t dev, const void *buf,
		     uint64_t len, uint64_t gran, struct eng_spacevec *sv);

/**
 * eng_space_append() for an ordinary write (core/zone.c).  Ordinary appends
 * never take the last ZONE_CLEAN_RESERVE empty zone(s): those are the
 * cleaner's, which needs room to move live bytes before it can reset a
 * zone.  When no room is left, this runs the cleaner on dev and goes on
 * appending, for a bounded number of rounds.  The cleaner takes the zone
 * with the most dead bytes that is not held: a zone is held while more of
 * its bytes are marked in use than the maps point at (appended bytes of a
 * write in flight, among them the runs already in sv, the caller's own, or
 * frees on their way back), since it could not be emptied; a zone that
 * could not be reset is passed over for the next.  Returns 0; -ENOSPC only
 * when no zone but those of sv's own runs holds dead bytes (the device is
 * full of live data; the message gives live bytes and size); -EAGAIN when
 * dead bytes exist only in zones held by others and stay held for
 * ZONE_HELD_WAIT_NS (frees are drained and the zones polled meanwhile);
 * or the driver's error.  Runs appended stay in sv for the caller to give
 * back, as with eng_space_append().  The caller must not be inside an RCU
 * read-side section (the cleaner waits for freed space to be released
 * after a grace period).
 */
int eng_space_append_reclaim(struct eng *e, uint32_t dev, const void *buf,
			     uint64_t len, uint64_t gran,
			     struct eng_spacevec *sv);

/** Is device dev zoned? */
bool eng_dev_zoned(struct eng *e, uint32_t dev);

/**
 * Recovery of the zoned devices at open (core/zone.c), once the allocators
 * are rebuilt from the maps: every written zone of a usable zoned device
 * that holds no live byte (space appended by a process that died before
 * its commit, or the dead remains of overwrites) is reset, since nothing
 * can point into it; the open zone becomes the partly written zone with
 * the most room.  A reset that fails is logged and the zone left for the
 * cleaner.  *nr_reset (may be NULL) counts the zones reset.  Returns 0.
 */
int eng_smr_recover(struct eng *e, uint32_t *nr_reset);

/** What the SMR cleaner did. */
struct eng_clean_stats {
	uint32_t cs_zones_reset;   /**< zones reset (empty again) */
	uint64_t cs_bytes_moved;   /**< live bytes relocated */
	uint64_t cs_records_moved; /**< extent and unit records re-pointed */
};

/**
 * Clean zoned device dev (every zoned device if dev == UINT32_MAX): every
 * zone that is not the open one and whose live bytes are at most
 * live_pct % of its written bytes has its live data relocated (appended to
 * another zone, records re-pointed in one durable commit), and is reset
 * once nothing points into it.  A crash at any point loses nothing: a zone
 * is reset only after the commit that moved its last live byte is durable.
 * Returns 0 or a negative code.
 */
int eng_smr_clean(struct eng *e, uint32_t dev, uint32_t live_pct,
		  struct eng_clean_stats *st);

#endif
