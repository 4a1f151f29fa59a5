/*
 * tier_limits.h — the hard limits of tiers/, each with its reason.
 *
 * The engine-wide limits (allocation unit, device sizes, superblock area,
 * I/O chunk) stay in core/limits.h; these are the ones only the device
 * layer needs: zone geometry of SMR devices, the data-area offset bound,
 * the depth and width of the per-device I/O queues, and the table of
 * drivers registered from above.
 */
#ifndef STRATA_TIERS_TIER_LIMITS_H
#define STRATA_TIERS_TIER_LIMITS_H

#include "core/limits.h"

/* Smallest zone of an SMR device.  Real host-managed disks use 256 MiB
 * zones and ZNS drives 64 MiB to 2 GiB; 1 MiB keeps small test devices
 * useful while leaving room for a few hundred 4 KiB units per zone. */
#define LIM_SMR_ZONE_MIN (1ull << 20)

/* Largest zone: above the 2 GiB zones of ZNS drives, and small enough that
 * a zone's byte range fits every 32-bit sector count the kernel uses. */
#define LIM_SMR_ZONE_MAX (4ull << 30)

/* Zone size of a formatted SMR device when the caller does not choose one:
 * a ZNS-like 64 MiB, large enough that zone resets are rare. */
#define LIM_SMR_ZONE_DEFAULT (64ull << 20)

/* With the default zone size, a small device gets smaller zones (halved
 * down to LIM_SMR_ZONE_MIN) until at least this many fit, so that the
 * engine's small test stores still have zones to rotate through. */
#define LIM_SMR_ZONES_MIN_DEFAULT 4u

/* Locks guarding SMR write pointers: zone z uses lock z % this.  A lock per
 * zone would cost 40 B per zone (16M zones on the largest device); striped
 * locks only serialise writers of zones that share a stripe. */
#define LIM_SMR_LOCKS 64u

/* Largest data-area offset a superblock may claim.  Regular devices use
 * LIM_DEV_SB_SIZE; an emulated SMR device adds its zone table (8 B per
 * zone: at most 128 MiB); a real host-managed disk starts its data after
 * its conventional zones (about 1% of the disk).  The bound only keeps a
 * crc-valid but bogus superblock from sending I/O anywhere. */
#define LIM_DEV_DATA_OFF_MAX (1ull << 40)

/* Requests queued per device before submitters block (tier_io_run): deep
 * enough to keep an NVMe queue busy, small enough that a stalled device
 * holds at most this many caller buffers. */
#define LIM_IOQ_DEPTH 64u

/* Threads serving one device's queue: a few requests in flight per device
 * (a disk gains little past its command queue, flash saturates around
 * here with synchronous pread/pwrite), started on first use. */
#define LIM_IOQ_THREADS 4u

/* Drivers registered from above (tier_driver_register), beside the
 * built-in ones: cluster mode registers one (remote devices,
 * core/server/cli_rdev.c); the table is static so that lookups read it
 * without a lock, and 8 leaves room for a few more backends. */
#define TIER_REG_MAX 8u

_Static_assert((LIM_SMR_ZONE_DEFAULT & (LIM_SMR_ZONE_DEFAULT - 1)) == 0,
	       "zone sizes are powers of two");
_Static_assert(LIM_SMR_ZONE_MIN <= LIM_SMR_ZONE_DEFAULT &&
	       LIM_SMR_ZONE_DEFAULT <= LIM_SMR_ZONE_MAX, "default zone size");
_Static_assert(LIM_SMR_ZONE_MIN <= LIM_DEV_SIZE_MIN,
	       "a minimal device holds one minimal zone");
_Static_assert(LIM_SMR_ZONE_MIN % LIM_DEV_SB_SIZE == 0, "aligned zones");

#endif
