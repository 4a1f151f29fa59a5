/*
 * smr_internal.h — state shared by the two halves of the smr driver:
 * smr.c (zone rules, emulation on a regular file, the ops table) and
 * smr_blk.c (real host-managed / host-aware zoned block devices).
 */
#ifndef STRATA_TIERS_SMR_SMR_INTERNAL_H
#define STRATA_TIERS_SMR_SMR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tiers/file/file.h"
#include "tiers/tier.h"

/* Driver state of one open SMR device (d->td_priv). */
struct smr_dev {
	struct file_dev *sm_fl;    /**< the bytes (file or block device) */
	bool sm_blk;               /**< a real zoned block device */
	uint32_t sm_zone_shift;    /**< log2 of the zone size */
	uint32_t sm_zone_nr;       /**< whole zones in the data area */
	/** Live write pointers, bytes from each zone's start.  Written under
	 *  the zone's stripe lock (release), read without it (acquire). */
	uint64_t *sm_wp;
	pthread_mutex_t sm_locks[LIM_SMR_LOCKS]; /**< zone z: z % LIM_SMR_LOCKS */
	/* Emulation only: the persisted zone table (see smr.c). */
	pthread_mutex_t sm_tab_lock; /**< sync and reset: sm_tab, sm_dirty */
	uint64_t *sm_tab;          /**< image of the on-disk wp entries */
	uint64_t *sm_snap;         /**< sync's snapshot of sm_wp */
	uint8_t *sm_dirty;         /**< per 4 KiB page of sm_tab: to write */
	size_t sm_tab_bytes;       /**< bytes of entries, 4 KiB multiple */
};

/** The stripe lock of zone z. */
static inline pthread_mutex_t *smr_lock(struct smr_dev *sm, uint32_t z)
{
	return &sm->sm_locks[z % LIM_SMR_LOCKS];
}

/** True when path is a block device whose queue/zoned in sysfs says
 *  host-managed or host-aware (stat fields of the path in st_rdev). */
bool smr_blk_is_zoned(const char *path);

/** Format the zoned block device at path in place (smr_blk.c). */
int smr_blk_format(const char *path, struct tier_sb *sb,
		   const struct tier_format_opts *o);

/** Fill sm's geometry and write pointers from the device (sm->sm_fl is
 *  open, d->td_sb checked). */
int smr_blk_open(struct tier_dev *d, struct smr_dev *sm);

/** Reset zone z on the device (the caller holds its stripe lock). */
int smr_blk_reset(struct tier_dev *d, struct smr_dev *sm, uint32_t z);

/** Re-read zone z's write pointer from the device after a failed write
 *  (the caller holds its stripe lock). */
void smr_blk_refresh(struct tier_dev *d, struct smr_dev *sm, uint32_t z);

#endif
