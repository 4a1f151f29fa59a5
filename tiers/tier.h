/*
 * tier.h — the device driver interface of Strata's storage tiers.
 *
 * A device is a file (or block device) holding a 4 KiB superblock followed by
 * a data area.  Offsets given to tier_dev_read/write are byte offsets in the
 * data area.  Drivers only move bytes: space allocation, mapping and
 * checksums live above them (core/).  One small ops table per driver, one
 * folder per driver (tiers/file/, tiers/nvram/), as libfabric's providers.
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
 * All functions are thread-safe for concurrent I/O on distinct ranges of one
 * device.  Functions return 0 or a negative errno, and set err_set() messages
 * naming the device path.
 */
#ifndef STRATA_TIERS_TIER_H
#define STRATA_TIERS_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clovis/clovis.h"
#include "core/limits.h"

#define TIER_SB_MAGIC 0x5354524154414456ull /* "STRATADV" */
#define TIER_SB_VERSION 1u

/**
 * The on-disk superblock, little-endian, at offset 0 of every device.
 * sb_crc is the ISA-L crc64_ecma_refl of the struct with sb_crc = 0.
 */
struct tier_sb {
	uint64_t sb_magic;      /**< TIER_SB_MAGIC */
	uint32_t sb_version;    /**< TIER_SB_VERSION */
	uint32_t sb_tier;       /**< enum clovis_tier */
	uint8_t sb_store[16];   /**< uuid of the store the device belongs to */
	uint32_t sb_index;      /**< device index in its store */
	uint32_t sb_pad;
	uint64_t sb_data_off;   /**< byte offset of the data area (4096) */
	uint64_t sb_data_size;  /**< bytes in the data area */
	uint64_t sb_ctime_ns;   /**< format time */
	char sb_driver[16];     /**< driver name, NUL-terminated */
	uint64_t sb_crc;
};
_Static_assert(sizeof(struct tier_sb) == 88, "superblock on-disk size");

struct tier_dev;

/** Per-driver operations.  Drivers fill all of them. */
struct tier_ops {
	const char *to_name; /**< "file", "pmem2" */
	/** Create path (it must not exist) sized for sb->sb_data_size bytes of
	 *  data after the superblock, and write the superblock durably. */
	int (*to_format)(const char *path, const struct tier_sb *sb);
	/** Open path; fill d->td_priv.  The superblock is checked by the
	 *  caller through to_read_sb(). */
	int (*to_open)(struct tier_dev *d, const char *path);
	void (*to_close)(struct tier_dev *d);
	int (*to_read_sb)(struct tier_dev *d, struct tier_sb *sb);
	int (*to_write)(struct tier_dev *d, uint64_t off, const void *buf,
			size_t len);
	int (*to_read)(struct tier_dev *d, uint64_t off, void *buf, size_t len);
	int (*to_sync)(struct tier_dev *d);
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
};

/** The driver for a tier by default: pmem2 for NVRAM, file otherwise. */
const struct tier_ops *tier_driver_for(enum clovis_tier tier);

/** The driver called name, or NULL. */
const struct tier_ops *tier_driver_find(const char *name);

/**
 * Make a new device at path for store uuid `store`, index `index`, of tier
 * `tier`, with size_bytes of data area (LIM_DEV_SIZE_MIN..MAX, a multiple of
 * LIM_ALLOC_UNIT).  Uses the tier's default driver.
 * Returns 0, -EEXIST (path exists), -EINVAL (size), or -errno.
 */
int tier_dev_format(const char *path, enum clovis_tier tier,
		    const uint8_t store[16], uint32_t index,
		    uint64_t size_bytes);

/**
 * Open the device at path and check its superblock: magic, crc, version, and
 * that it belongs to store `store` at index `index` with tier `tier`.
 * Returns 0 and *out, or -ENOENT (no such file), -CLOVIS_ECORRUPT (bad magic
 * or crc, or identity mismatch: message says which field),
 * -CLOVIS_EVERSION, or -errno.
 */
int tier_dev_open(struct tier_dev **out, const char *path,
		  enum clovis_tier tier, const uint8_t store[16],
		  uint32_t index);

/** Close and free d (NULL allowed). */
void tier_dev_close(struct tier_dev *d);

/**
 * Write len bytes at data-area offset off.  -EINVAL if off/len are not
 * multiples of LIM_ALLOC_UNIT or the range leaves the data area; -EIO
 * (fault point "tier.write" in test builds) or -errno from the device.
 */
int tier_dev_write(struct tier_dev *d, uint64_t off, const void *buf,
		   size_t len);

/** Read len bytes at off; same rules; fault point "tier.read". */
int tier_dev_read(struct tier_dev *d, uint64_t off, void *buf, size_t len);

/** Make every completed write durable; fault point "tier.sync". */
int tier_dev_sync(struct tier_dev *d);

/** Bytes in the data area. */
static inline uint64_t tier_dev_size(const struct tier_dev *d)
{
	return d->td_sb.sb_data_size;
}

/* Helpers for drivers (tiers/tier.c). */
void tier_sb_fill(struct tier_sb *sb, enum clovis_tier tier,
		  const uint8_t store[16], uint32_t index, uint64_t size_bytes,
		  const char *driver);
uint64_t tier_sb_crc(const struct tier_sb *sb);
const char *tier_name(enum clovis_tier tier);

#endif
