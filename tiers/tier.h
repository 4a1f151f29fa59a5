/*
 * tier.h — the device driver interface of Strata's storage tiers.
 *
 * A device is a file (or block device) holding a 4 KiB superblock followed by
 * a data area (an SMR device keeps its zone table between the two, so its
 * data area starts later: sb_data_off).  Offsets given to tier_dev_read/write
 * are byte offsets in the data area.  Drivers only move bytes: space
 * allocation, mapping and checksums live above them (core/).  One small ops
 * table per driver, one folder per driver (tiers/file/, tiers/nvram/,
 * tiers/smr/), as libfabric's providers.
 *
 * Drivers: "pmem2" (NVRAM), "file" (flash and SAS), "smr" (zoned,
 * sequential-write-required; emulated on a file, or a real host-managed
 * zoned block device).
 *
 * Durability contract: tier_dev_write() returns once the bytes are handed to
 * the device (they may sit in a volatile cache); tier_dev_sync() returns once
 * every byte written before the call is durable.  Reads see every completed
 * write, synced or not.
 *
 * Alignment: callers may pass any buffer address; offsets and lengths are
 * multiples of LIM_ALLOC_UNIT (512 B).  Drivers use O_DIRECT / non-temporal
 * stores when the alignment allows and bounce or fall back otherwise.
 *
 * Around every driver call tier.c adds, in this order: request checks, fault
 * points (test builds), the optional device model (latency and bandwidth
 * emulation), and the counters.  tier_io_run() runs many requests through
 * per-device bounded queues served by thread pools.
 *
 * All functions are thread-safe for concurrent I/O on distinct ranges of one
 * device (zoned devices: see the zone functions).  Functions return 0 or a
 * negative errno, and set err_set() messages naming the device path.
 * A tier argument is a uint32_t holding an enum st_tier (core/types.h),
 * as stored in the superblock, so callers pass their own copies of the
 * values (ST_TIER_*) without conversion.
 */
#ifndef STRATA_TIERS_TIER_H
#define STRATA_TIERS_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/limits.h"
#include "core/types.h"
#include "tiers/tier_limits.h"

#define TIER_SB_MAGIC 0x5354524154414456ull /* "STRATADV" */
#define TIER_SB_VERSION 1u

/**
 * The on-disk superblock, little-endian, at offset 0 of every device.
 * sb_crc is the ISA-L crc64_ecma_refl of the struct with sb_crc = 0.
 */
struct tier_sb {
	uint64_t sb_magic;      /**< TIER_SB_MAGIC */
	uint32_t sb_version;    /**< TIER_SB_VERSION */
	uint32_t sb_tier;       /**< enum st_tier */
	uint8_t sb_store[16];   /**< uuid of the store the device belongs to */
	uint32_t sb_index;      /**< device index in its store */
	uint32_t sb_pad;
	/** byte offset of the data area: 4096, more on SMR devices (a
	 *  multiple of 4096, at most LIM_DEV_DATA_OFF_MAX) */
	uint64_t sb_data_off;
	uint64_t sb_data_size;  /**< bytes in the data area */
	uint64_t sb_ctime_ns;   /**< format time */
	char sb_driver[16];     /**< driver name, NUL-terminated */
	uint64_t sb_crc;
};
_Static_assert(sizeof(struct tier_sb) == 88, "superblock on-disk size");

struct tier_dev;
struct tier_ioq;

/**
 * How a new device file's data area is prepared (struct tier_format_opts
 * tf_fill; the store key device_fill, docs/configuration.md).  Both
 * reserve the whole file with posix_fallocate first, so later writes never
 * allocate or extend it and never-written blocks read as zeros either way.
 */
enum tier_fill {
	/** Then write zeros over the whole data area, so the file system holds
	 *  written extents: a later O_DIRECT write + fdatasync flushes data
	 *  only, instead of also logging an unwritten-extent conversion
	 *  (measured: 4 KiB write + fdatasync 6958/s on written space, 4058/s
	 *  on fallocated space).  Costs one write of every byte at format
	 *  time.  The default, for production stores. */
	TIER_FILL_ZERO = 0,
	/** posix_fallocate only, nothing written: a format takes
	 *  milliseconds whatever the size, the first write + sync of each
	 *  extent pays the conversion.  For development and test stores. */
	TIER_FILL_RESERVE = 1,
	TIER_FILL_NR
};

/** The name of fill ("zero", "reserve"), or NULL when out of range. */
const char *tier_fill_name(uint32_t fill);

/** Format options (tier_dev_format_opts).  Zero-initialise unused fields. */
struct tier_format_opts {
	/** SMR: bytes per zone, a power of two in LIM_SMR_ZONE_MIN..MAX and
	 *  at most the data size; 0 = LIM_SMR_ZONE_DEFAULT, halved (not below
	 *  LIM_SMR_ZONE_MIN) until LIM_SMR_ZONES_MIN_DEFAULT zones fit.
	 *  Other tiers ignore it. */
	uint64_t tf_zone_size;
	/** enum tier_fill (0 = TIER_FILL_ZERO).  The file driver and the SMR
	 *  emulation (a file) honour it; pmem2 always only reserves (its
	 *  device is memory-mapped: no O_DIRECT writes to speed up), a zoned
	 *  block device formatted in place has nothing to fill. */
	uint32_t tf_fill;
	uint32_t tf_pad;
};

/** The condition of a zone, derived from its write pointer. */
enum tier_zone_cond {
	TZ_EMPTY = 0, /**< wp at the zone start: nothing written */
	TZ_OPEN = 1,  /**< start < wp < end */
	TZ_FULL = 2,  /**< wp at the zone end */
};

/** One zone of a zoned device, as tier_dev_zone_get() reports it. */
struct tier_zone {
	uint64_t tz_start; /**< data-area offset of the zone's first byte */
	uint64_t tz_len;   /**< bytes in the zone (the device's zone size) */
	uint64_t tz_wp;    /**< write pointer, data-area offset (absolute) */
	uint32_t tz_cond;  /**< enum tier_zone_cond */
	uint32_t tz_pad;
};

/**
 * Device model: latency and bandwidth of a device class, emulated on top of
 * any driver (off by default).  A request of len bytes is complete no
 * earlier than
 *
 *     max(now, busy) + len / bw + lat
 *
 * where busy is when the device finishes the transfers already accepted
 * (then advanced by len / bw): bandwidth is shared by all concurrent
 * requests of the device, latency overlaps between them (command queueing,
 * internal parallelism).  A sync completes at max(now, busy) + sync latency.
 * The caller waits until that time if the real I/O finished earlier: it
 * sleeps (clock_nanosleep, with its thread's timer slack set to 1 ns) and
 * spins only the last 60 us, so that short modelled latencies (NVRAM,
 * flash) are not lengthened by the sleep's overshoot; a slower real device
 * is never sped up.
 */
struct tier_model {
	uint64_t tm_read_lat_ns;  /**< per read */
	uint64_t tm_write_lat_ns; /**< per write or zone append */
	uint64_t tm_sync_lat_ns;  /**< per sync or zone reset */
	uint64_t tm_read_bw;      /**< bytes per second, 0 = unlimited */
	uint64_t tm_write_bw;     /**< bytes per second, 0 = unlimited */
};

/** Per-driver operations.  Drivers fill all of them but the zone ops,
 *  which only zoned drivers fill (NULL otherwise). */
struct tier_ops {
	const char *to_name; /**< "file", "pmem2", "smr" */
	/** Create path (it must not exist, except a block device the driver
	 *  can format in place) sized for sb->sb_data_size bytes of data, and
	 *  write the superblock durably.  A driver that needs room before the
	 *  data area raises sb->sb_data_off and recomputes sb->sb_crc; o is
	 *  never NULL.  On failure nothing the driver created is left. */
	int (*to_format)(const char *path, struct tier_sb *sb,
			 const struct tier_format_opts *o);
	/** Open path; fill d->td_priv, d->td_direct, and for zoned devices
	 *  d->td_zone_size and d->td_zone_nr.  d->td_sb is already checked. */
	int (*to_open)(struct tier_dev *d, const char *path);
	void (*to_close)(struct tier_dev *d);
	int (*to_read_sb)(struct tier_dev *d, struct tier_sb *sb);
	int (*to_write)(struct tier_dev *d, uint64_t off, const void *buf,
			size_t len);
	int (*to_read)(struct tier_dev *d, uint64_t off, void *buf, size_t len);
	int (*to_sync)(struct tier_dev *d);
	/** Zoned drivers: zone < d->td_zone_nr is checked by tier.c. */
	void (*to_zone_get)(struct tier_dev *d, uint32_t zone,
			    struct tier_zone *out);
	int (*to_zone_reset)(struct tier_dev *d, uint32_t zone);
	int (*to_zone_append)(struct tier_dev *d, uint32_t zone,
			      const void *buf, size_t len, uint64_t *off);
	/** Optional (NULL: always true): can requests reach the device now?
	 *  A driver of a device behind a network (cluster mode's remote
	 *  devices, core/server/cli_rdev.c) answers false while the device's
	 *  server is known to be down; the engine then treats the device as
	 *  failed for the ops of that moment only (tier_dev_reachable). */
	bool (*to_reachable)(struct tier_dev *d);
	/** Optional (NULL: as to_reachable): a device found unreachable is
	 *  asked again now, at most one call timeout, instead of waiting for
	 *  the driver's next probe; true when it answers (it is then
	 *  reachable for every op again).  The engine calls it only where an
	 *  op would fail without that device (a group read short of N
	 *  units: layouts/stripe.c), never on the path of ops that succeed. */
	bool (*to_recheck)(struct tier_dev *d);
	/** Optional (NULL: 0): the time (CLOCK_REALTIME ns) after which no
	 *  write issued to d so far can still land on the medium.  A local
	 *  write ends with its call; a network driver's write abandoned at
	 *  its call timeout may still be queued at the far end (cluster
	 *  mode's remote devices: the latest deadline it gave a write plus
	 *  the fence margin, core/server/rdev.h).  The engine frees the space
	 *  of an abandoned write only after that time (tier_dev_fence_ns). */
	uint64_t (*to_fence)(struct tier_dev *d);
};

/** An open device.  Fields are read-only outside tiers/. */
struct tier_dev {
	const struct tier_ops *td_ops;
	void *td_priv;           /**< driver state */
	char td_path[LIM_PATH_MAX + 1];
	struct tier_sb td_sb;    /**< checked copy of the superblock */
	bool td_direct;          /**< data bypasses the page cache */
	uint64_t td_nr_writes;   /**< counters, updated atomically */
	uint64_t td_nr_reads;
	uint64_t td_nr_syncs;
	uint64_t td_nr_errors;   /**< failed requests: see tier_dev_errors */
	uint64_t td_zone_size;   /**< bytes per zone; 0 = not zoned */
	uint32_t td_zone_nr;     /**< whole zones in the data area */
	bool td_model_on;        /**< td_model applies */
	struct tier_model td_model;
	uint64_t td_busy_ns;     /**< model: CLOCK_MONOTONIC end of accepted
				  *   transfers (atomic) */
	struct tier_ioq *td_ioq; /**< request queue of tier_io_run (tier.c) */
	uint32_t td_addb;        /**< metrics label slot + 1 (addb/addb.h;
				  *   0: not taken yet) */
};

/** The metrics label slot of d ("tier:path", addb_dev_slot()), taken at
 *  its first use. */
uint32_t tier_dev_addb(struct tier_dev *d);

/** The driver for a tier by default: pmem2 for NVRAM, file for FLASH and
 *  SAS, smr for SMR; NULL for anything else. */
const struct tier_ops *tier_driver_for(uint32_t tier);

/** The driver called name, or NULL. */
const struct tier_ops *tier_driver_find(const char *name);

/**
 * Register a driver from above tiers/ (cluster mode registers "remote",
 * core/server/cli_rdev.c), so that tier_driver_find() finds it and
 * tier_dev_attach() accepts it.  ops must stay valid for the process's
 * life; to_name, to_write, to_read, to_sync and to_close are required
 * (to_format and to_read_sb may be NULL: attached devices have no
 * superblock file; a driver without to_read_sb never opens a file, so a
 * superblock naming it is refused as corrupt).  Registering the same table again is a no-op.
 * Returns 0, -EINVAL, -EEXIST (another driver has the name) or -ENOSPC
 * (8 registered drivers at most).  Thread-safe.
 */
int tier_driver_register(const struct tier_ops *ops);

/**
 * Make a device of registered driver ops that has no superblock file: the
 * caller vouches for its identity (tier, store index) and data size
 * (1..LIM_DEV_SIZE_MAX bytes, a multiple of LIM_ALLOC_UNIT).  name goes to
 * td_path (messages, `strata devices`); priv to td_priv (the driver's,
 * freed by its to_close).  td_sb is filled as a superblock would be
 * (store uuid all zeros).  When the driver has to_open, it runs with
 * path = name and may set td_priv from it (a failure is returned, nothing
 * kept).  Every wrapper of tier.c applies as to any
 * device: request checks, fault points by index ("tier.write.devN" ...),
 * the device model, the counters and the queues of tier_io_run().  Close
 * with tier_dev_close().  Returns 0 and *out, -EINVAL (message naming the
 * field), -ENOMEM.
 */
int tier_dev_attach(struct tier_dev **out, const struct tier_ops *ops,
		    const char *name, uint32_t tier, uint32_t index,
		    uint64_t size_bytes, void *priv);

/** Can requests reach d now?  True unless its driver's to_reachable says
 *  no (a remote device whose server is known to be down). */
bool tier_dev_reachable(struct tier_dev *d);

/** Ask d again now whether requests reach it (its driver's to_recheck; a
 *  driver without one: tier_dev_reachable()).  Blocks for at most the
 *  driver's call timeout.  True: d is reachable (for every op). */
bool tier_dev_recheck(struct tier_dev *d);

/** The time (CLOCK_REALTIME ns) after which no write issued to d so far can
 *  still land (its driver's to_fence); 0 for a device whose writes end with
 *  their calls (every local driver). */
uint64_t tier_dev_fence_ns(struct tier_dev *d);

/**
 * Is rc one of the codes a network driver returns when the way to the
 * device failed rather than the device (-ETIMEDOUT, -EHOSTDOWN,
 * -EHOSTUNREACH, -ENETUNREACH, -ECONNREFUSED, -ECONNRESET, -ECONNABORTED,
 * -ENOTCONN, -ESHUTDOWN, -ECANCELED)?  Local drivers never return them.
 */
bool tier_rc_transport(int rc);

/**
 * Make a new device at path for store uuid `store`, index `index`, of tier
 * `tier`, with size_bytes of data area (LIM_DEV_SIZE_MIN..MAX, a multiple of
 * LIM_ALLOC_UNIT).  Uses the tier's default driver.  Same as
 * tier_dev_format_opts() with every option 0.
 * Returns 0, -EEXIST (path exists), -EINVAL (size), or -errno.
 */
int tier_dev_format(const char *path, uint32_t tier,
		    const uint8_t store[16], uint32_t index,
		    uint64_t size_bytes);

/**
 * tier_dev_format() with options o (NULL = all 0).  o->tf_fill must be an
 * enum tier_fill (else -EINVAL naming it).  For SMR, o->tf_zone_size
 * chooses the zone size (see struct tier_format_opts; -EINVAL with a message
 * when it is not a power of two in range or exceeds size_bytes); the last
 * size_bytes % zone size bytes of the data area are then no zone: they
 * read as zeros and refuse writes.  SMR may format an existing host-managed
 * or host-aware zoned block device in place (its zone size must equal the
 * device's; untested here); every other existing path is -EEXIST.
 */
int tier_dev_format_opts(const char *path, uint32_t tier,
			 const uint8_t store[16], uint32_t index,
			 uint64_t size_bytes, const struct tier_format_opts *o);

/**
 * Open the device at path and check its superblock: magic, crc, version, and
 * that it belongs to store `store` at index `index` with tier `tier`.
 * Returns 0 and *out, or -ENOENT (no such file), -ST_ECORRUPT (bad magic
 * or crc, or identity mismatch: message says which field; for SMR also a
 * damaged zone table), -ST_EVERSION, or -errno.  The model is off.
 */
int tier_dev_open(struct tier_dev **out, const char *path,
		  uint32_t tier, const uint8_t store[16],
		  uint32_t index);

/** Stop d's queue threads (its queue must be empty: no tier_io_run in
 *  flight on d), close and free d (NULL allowed). */
void tier_dev_close(struct tier_dev *d);

/**
 * Write len bytes at data-area offset off.  -EINVAL if off/len are not
 * multiples of LIM_ALLOC_UNIT or the range leaves the data area; on a zoned
 * device also -EINVAL (message naming path, zone, wp and offset) unless
 * off is its zone's write pointer and the range stays in that zone; the wp
 * then advances by len.  -EIO (fault points in test builds, see below) or
 * -errno from the device.
 *
 * Fault points (test builds): "tier.write" (any device) and, with N the
 * device's sb_index, "tier.write.devN" fail with -EIO before the driver;
 * "tier.short.devN" writes only the first half of the bytes (rounded down
 * to LIM_ALLOC_UNIT) and returns -EIO "short write of X of Y bytes";
 * "tier.flip.devN" stores the data with one bit flipped and returns 0
 * (media corruption for checksums to find); "tier.gone.devN" fails every
 * read, write, sync, zone reset and append of the device with -EIO.
 */
int tier_dev_write(struct tier_dev *d, uint64_t off, const void *buf,
		   size_t len);

/** Read len bytes at off; same checks; on a zoned device the bytes at or
 *  above a zone's wp (and in the partial last zone) read as zeros.  Fault
 *  points "tier.read", "tier.read.devN" and "tier.gone.devN" (-EIO). */
int tier_dev_read(struct tier_dev *d, uint64_t off, void *buf, size_t len);

/** Make every completed write durable (on SMR with the zone write
 *  pointers); fault points "tier.sync" and "tier.gone.devN" (-EIO). */
int tier_dev_sync(struct tier_dev *d);

/** Bytes in the data area. */
static inline uint64_t tier_dev_size(const struct tier_dev *d)
{
	return d->td_sb.sb_data_size;
}

/**
 * Failed read, write, sync, zone reset and zone append calls of d since it
 * was opened, injected faults included (td_nr_errors, atomic), so the
 * engine can fail a device after too many.  Refused requests (-EINVAL:
 * malformed, or against a zone's wp rule; -ENOSPC of a full zone) say
 * nothing about the device and are not counted; nor are transport failures
 * of a network driver (tier_rc_transport()): a server cut off for a while
 * must not make its devices count as failing media.
 */
uint64_t tier_dev_errors(const struct tier_dev *d);

/* ------------------------------------------------------------- zones */

/** True when d is zoned (SMR); false for every other driver. */
bool tier_dev_zoned(const struct tier_dev *d);

/** Whole zones in d's data area; 0 if d is not zoned. */
uint32_t tier_dev_zone_nr(const struct tier_dev *d);

/** Bytes per zone; 0 if d is not zoned. */
uint64_t tier_dev_zone_size(const struct tier_dev *d);

/** Fill *out with zone `zone`'s start, length, wp and condition.
 *  -EINVAL (message) if d is not zoned or zone >= tier_dev_zone_nr(d). */
int tier_dev_zone_get(struct tier_dev *d, uint32_t zone,
		      struct tier_zone *out);

/**
 * Reset zone `zone`: its wp returns to the zone start, so its bytes read as
 * zeros and it accepts writes from its start again.  Durable on return.
 * Waits for writes and appends in flight on the zone; the caller must not
 * read the zone concurrently if it cares what it gets.  -EINVAL (not zoned,
 * bad zone), fault point "tier.gone.devN", -EIO or -errno; on failure the
 * persisted wp may be either value, the in-memory one is unchanged.
 */
int tier_dev_zone_reset(struct tier_dev *d, uint32_t zone);

/**
 * Zone append: write len bytes at the zone's current wp atomically with
 * respect to other appenders and writers of that zone, return where it
 * landed (data-area offset) in *off.  -ENOSPC (message) if it does not fit
 * in the zone's remaining space; -EINVAL if d is not zoned, zone is out of
 * range, buf or off is NULL, or len not a multiple of LIM_ALLOC_UNIT.  Same
 * fault points as tier_dev_write (a short append advances the wp by the
 * bytes written; *off is then still set), and modelled as a write.
 */
int tier_dev_zone_append(struct tier_dev *d, uint32_t zone, const void *buf,
			 size_t len, uint64_t *off);

/* ------------------------------------------------------- device model */

/**
 * The figures of a device class (see struct tier_model and tiers/README.md
 * for their sources): NVRAM sub-microsecond and GB/s, flash 80 µs read /
 * 20 µs write at 2 / 1 GB/s, SAS milliseconds at 200 MB/s, SMR as SAS with
 * a lower write bandwidth.  An unknown tier gets all zeros (no delay).
 */
void tier_model_default(uint32_t tier, struct tier_model *out);

/** Model d with m (copied), or turn the model off with NULL.  Call while
 *  no request is in flight on d. */
void tier_dev_model_set(struct tier_dev *d, const struct tier_model *m);

/** True when d runs under a model. */
bool tier_dev_model_on(const struct tier_dev *d);

/* ------------------------------------------------------------ I/O queue */

/** Request kinds of tier_io_run: TIO_SYNC is tier_dev_sync() of io_dev
 *  (io_off, io_buf and io_len are ignored), so that the syncs of many
 *  devices run in parallel. */
enum tier_io_op { TIO_READ = 1, TIO_WRITE = 2, TIO_SYNC = 3 };

/** One request of tier_io_run.  The caller owns it and the buffer; both
 *  must stay valid until tier_io_run returns. */
struct tier_io {
	struct tier_dev *io_dev; /**< in: device */
	uint32_t io_op;          /**< in: enum tier_io_op */
	uint32_t io_zone;        /**< for TIO_APPEND later: ignored */
	uint64_t io_off;         /**< in: data-area offset */
	void *io_buf;            /**< in: source (write) or target (read) */
	size_t io_len;           /**< in: bytes */
	int io_rc;               /**< out: as tier_dev_read/write returns */
};

/**
 * Run every request, in parallel across devices (and within a device up to
 * LIM_IOQ_THREADS), and wait for all; each io_rc is set, with the same
 * rules, fault points, model and counters as tier_dev_read/write/sync (a NULL
 * io_dev or unknown io_op: io_rc = -EINVAL).  Returns 0, or the rc of the
 * failing request with the lowest index, whose message is then the calling
 * thread's err_msg().  Each device has a queue of at most LIM_IOQ_DEPTH
 * requests, served by threads started on its first use; a submitter blocks
 * while the queue is full.  Thread-safe: many threads may call it at once.
 * nr == 1 runs inline; nr == 0 returns 0.  Requests of one call run in no
 * particular order: overlapping writes to one range, or writes to one SMR
 * zone, must go in separate calls, and a TIO_SYNC covers only writes that
 * completed before its call (not writes of the same call).
 */
int tier_io_run(struct tier_io *ios, uint32_t nr);

/* Helpers for drivers (tiers/tier.c). */
void tier_sb_fill(struct tier_sb *sb, uint32_t tier,
		  const uint8_t store[16], uint32_t index, uint64_t size_bytes,
		  const char *driver);
uint64_t tier_sb_crc(const struct tier_sb *sb);
const char *tier_name(uint32_t tier);

#endif
