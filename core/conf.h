/*
 * conf.h — the store configuration: devices, pools, layouts and device
 * models, read from YAML (libyaml) and written back as YAML.
 *
 * A store is created from a configuration file (or from conf_default() when
 * there is none); the configuration is then kept inside the store as the
 * text conf_emit() makes, so that every later open uses the same one.  The
 * file format, every key and every rule are in docs/configuration.md.
 *
 * Ownership: a struct conf owns every array it points to; conf_fini() frees
 * them.  conf_parse(), conf_load() and conf_default() fill a caller-provided
 * struct and leave it untouched when they fail.  Nothing here is shared
 * between threads: a struct conf is read-only once made, so readers need no
 * lock.
 */
#ifndef STRATA_CORE_CONF_H
#define STRATA_CORE_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/limits.h"

/* Name lengths, slice, pool and container counts, the text size: CONF_*
 * in core/limits.h. */

/* Slices start at multiples of this (and are as long): 64 KiB. */
#define CONF_SLICE_ALIGN (64ull << 10)
/* Longest device path, with its NUL (LIM_PATH_MAX + 1, the size of
 * st_dev_info.di_path). */
#define CONF_PATH_LEN 256

/** Device model of one tier (simulated latency and bandwidth). */
struct conf_model {
	bool cm_on;               /**< model this tier's devices */
	/* Each 0 = the class default (the integrator fills it). */
	uint64_t cm_read_lat_ns;
	uint64_t cm_write_lat_ns;
	uint64_t cm_sync_lat_ns;
	uint64_t cm_read_bw;      /**< bytes per second */
	uint64_t cm_write_bw;     /**< bytes per second */
};

/** One device. */
struct conf_dev {
	/** Unique; when the file gives none, "<tier><i>" with i the device's
	 *  ordinal within its tier (e.g. "flash3"), bumped past any name
	 *  already taken. */
	char cd_name[CONF_NAME_MAX + 1];
	/** "" = made in the data directory (nvram: in nvram_dir). */
	char cd_path[CONF_PATH_LEN];
	uint32_t cd_tier;      /**< enum st_tier */
	/** Bytes.  conf_parse() fills it from device_size when the entry has
	 *  no size; 0 only when neither is given (= the store's default). */
	uint64_t cd_size;
	uint64_t cd_zone_size; /**< SMR only; 0 = the driver's default */
	/** Cluster stores only (core/clu_conf.c makes them): "SERVER:INDEX",
	 *  device INDEX of server SERVER seen through the remote driver
	 *  (core/server/cli_rdev.c) as this home's slice of it; "" = a local
	 *  device.  YAML key remote. */
	char cd_remote[CONF_REMOTE_LEN];
	/** Failure domain, 1 + the index of the server that holds the
	 *  device (cluster stores); 0 = none (embedded).  YAML key domain.
	 *  Unit layouts put the units of a group in distinct domains first
	 *  (layouts/pdclust.h). */
	uint32_t cd_domain;
	/** Cluster stores: never lent to the other servers (not sliced, the
	 *  whole device is this server's).  YAML key local: true. */
	bool cd_local;
};

/** A layout: the fields of struct st_obj_attr it sets. */
struct conf_layout {
	uint32_t cl_type;       /**< enum st_layout_type */
	uint32_t cl_tier;       /**< PLAIN: the tier; else 0 */
	uint32_t cl_pool;       /**< PDCLUST/MIRROR: index in c_pools; else 0 */
	/** oa_data_units: PDCLUST data units N, MIRROR copies; PLAIN 0. */
	uint32_t cl_n;
	uint32_t cl_k;          /**< oa_parity_units (MIRROR and PLAIN: 0) */
	uint32_t cl_s;          /**< oa_spare_units (PLAIN: 0) */
	/** oa_unit_shift: log2 unit size, 0 = the default (PLAIN: 0). */
	uint32_t cl_unit_shift;
};

/** A pool: the devices a pdclust or mirror layout spreads over. */
struct conf_pool {
	char cp_name[CONF_NAME_MAX + 1];
	uint32_t cp_nr;    /**< devices in the pool, >= 1 */
	/** Indices into c_devs, distinct, in the order listed (implicit
	 *  pools: the tier's devices in c_devs order).  Owned. */
	uint32_t *cp_devs;
};

/** A container with its own default layout. */
struct conf_container {
	struct st_id cc_id;
	char cc_name[CONF_CONT_NAME_LEN]; /**< the id text as written */
	struct conf_layout cc_layout;
};

/**
 * A whole configuration.  Devices are in the order listed in the file;
 * pools are the explicit ones in the order listed, then one implicit pool
 * per tier that has devices, named after the tier ("nvram", "flash", "sas",
 * "smr"), unless an explicit pool already has that name.
 */
struct conf {
	uint32_t c_nr_devs;            /**< 1..LIM_DEV_MAX */
	struct conf_dev *c_devs;       /**< owned */
	uint32_t c_nr_pools;
	struct conf_pool *c_pools;     /**< owned */
	/** Layout of objects created with oa_layout 0 in containers not
	 *  listed in c_conts; plain on flash when the file gives none. */
	struct conf_layout c_default_layout;
	uint32_t c_nr_conts;
	struct conf_container *c_conts; /**< owned; ids distinct */
	uint64_t c_dev_size;           /**< device_size; 0 = unset */
	/** device_fill: how device files are prepared when the store makes
	 *  them, an enum tier_fill (tiers/tier.h): 0 zero (the default),
	 *  1 reserve.  Used at store creation and device replacement only. */
	uint32_t c_dev_fill;
	struct conf_model c_model[ST_TIER_NR]; /**< per-tier device model */
	/** Cluster stores (YAML "slice: I/N"): the data area of every local
	 *  device that is not zoned is cut into c_slices equal slices
	 *  (conf_slice_size()); this store allocates only in slice c_slice,
	 *  the others belong to the other servers (their remote devices).
	 *  c_slices 0 = not sliced (embedded stores). */
	uint32_t c_slice;
	uint32_t c_slices;
};

/** Bytes of one slice of a device of size bytes cut into nr slices:
 *  size / nr rounded down to CONF_SLICE_ALIGN (0 when that is nothing).
 *  Slice i is [i * slice, (i + 1) * slice) of the data area. */
static inline uint64_t conf_slice_size(uint64_t size, uint32_t nr)
{
	return nr == 0 ? size : size / nr / CONF_SLICE_ALIGN * CONF_SLICE_ALIGN;
}

/**
 * Parse len bytes of YAML text into *c.  Returns 0, or -EINVAL with an
 * err_set() message "conf line L: KEY: what is wrong" naming the line, the
 * key (a path such as "devices[2].tier") and the offending value; -ENOMEM.
 * On error *c is untouched and nothing stays allocated.
 */
int conf_parse(struct conf *c, const char *text, size_t len);

/**
 * Read the file at path and parse it.  Returns 0, a negative errno from
 * open/read (-ENOENT, -EACCES, -EISDIR, ...; -EFBIG past CONF_TEXT_MAX) with
 * a message naming the path, or conf_parse()'s codes.
 */
int conf_load(struct conf *c, const char *path);

/**
 * The built-in configuration, used when a store is created without a file:
 * nvram0, flash0..flash7, sas0..sas3, smr0 in that order, each of dev_size
 * bytes (c_dev_size = dev_size too; 0 leaves both to the store's default),
 * the implicit pools "nvram", "flash", "sas", "smr", and the default layout
 * plain on flash.  Returns 0, -EINVAL (dev_size below LIM_DEV_SIZE_MIN,
 * above LIM_DEV_SIZE_MAX or not a multiple of 512) or -ENOMEM.
 */
int conf_default(struct conf *c, uint64_t dev_size);

/** Free everything c owns and zero it.  A zeroed c is fine; c may be NULL. */
void conf_fini(struct conf *c);

/** Index in c_pools of the pool called name, or -ENOENT. */
int conf_pool_find(const struct conf *c, const char *name);

/** Index in c_devs of the device called name, or -ENOENT. */
int conf_dev_find(const struct conf *c, const char *name);

/**
 * Write c as YAML into a malloc'd NUL-terminated buffer; *out is the
 * caller's to free.  c must come from conf_parse(), conf_load() or
 * conf_default(): conf_parse() of the text then gives back an equal struct
 * (implicit pools are written out as explicit ones, with the same order).
 * Returns 0 or -ENOMEM (*out untouched).
 */
int conf_emit(const struct conf *c, char **out);

/**
 * The default layout for objects of container cont: its entry in c_conts,
 * else c_default_layout (also when cont is NULL).  Never NULL; points into c.
 */
const struct conf_layout *conf_layout_for(const struct conf *c,
					  const struct st_id *cont);

#endif
