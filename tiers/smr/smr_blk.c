/*
 * smr_blk.c — the smr driver on a real zoned block device.
 *
 * UNTESTED HERE: the build machines have no zoned device and no null_blk,
 * so this path is compiled on every build but has never run.  It is kept
 * small on purpose; treat it as a starting point, and test it on a
 * host-managed disk or `modprobe null_blk zoned=1` before trusting it.
 *
 * Layout: zone 0 (and any conventional zones right after it) holds the
 * superblock at offset 0; the data area starts at the first sequential
 * zone after them (sb_data_off = that zone's start) and covers
 * sb_data_size / zone size whole zones.  The device keeps the write
 * pointers itself: open reads them with BLKREPORTZONE, a reset is
 * BLKRESETZONE (a device command, durable when it completes), a failed
 * write re-reads its zone's wp.  Data moves with O_DIRECT through the file
 * driver's mover; the device must accept 512-byte direct I/O (512e, not
 * 4Kn) and its zones must be powers of two with capacity = size.
 * Conventional zones inside the data area are refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/blkzoned.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/log.h"
#include "tiers/smr/smr_internal.h"

/* Zones asked for per BLKREPORTZONE call. */
#define SMR_BLK_REPORT 128u

/* True when the kernel says the block device at path is zoned. */
bool smr_blk_is_zoned(const char *path)
{
	char sys[128], model[32] = "";
	struct stat st;
	FILE *f;

	if (stat(path, &st) != 0 || !S_ISBLK(st.st_mode))
		return false;
	snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u/queue/zoned",
		 major(st.st_rdev), minor(st.st_rdev));
	f = fopen(sys, "r");
	if (f == NULL)
		return false;
	if (fgets(model, sizeof model, f) == NULL)
		model[0] = '\0';
	fclose(f);
	return strncmp(model, "host-managed", 12) == 0 ||
	       strncmp(model, "host-aware", 10) == 0;
}

/* Report up to nr zones from sector `sector` into zones; *got set. */
static int smr_blk_report(int fd, const char *path, uint64_t sector,
			  struct blk_zone *zones, uint32_t nr, uint32_t *got)
{
	size_t sz = sizeof(struct blk_zone_report) + nr * sizeof *zones;
	struct blk_zone_report *r = calloc(1, sz);
	int rc = 0;

	if (r == NULL)
		return err_set(-ENOMEM, "device %s: no memory", path);
	r->sector = sector;
	r->nr_zones = nr;
	if (ioctl(fd, BLKREPORTZONE, r) != 0) {
		rc = err_set(-errno, "device %s: BLKREPORTZONE at sector %llu: "
			     "%s", path, (unsigned long long)sector,
			     strerror(errno));
	} else {
		*got = r->nr_zones;
		memcpy(zones, r->zones, r->nr_zones * sizeof *zones);
	}
	free(r);
	return rc;
}

/* The device's zone size in bytes (a power of two) and zone count. */
static int smr_blk_geometry(int fd, const char *path, uint64_t *zs,
			    uint32_t *nr)
{
	uint32_t sectors = 0;

	if (ioctl(fd, BLKGETZONESZ, &sectors) != 0 ||
	    ioctl(fd, BLKGETNRZONES, nr) != 0)
		return err_set(-errno, "device %s: zone geometry: %s", path,
			       strerror(errno));
	*zs = (uint64_t)sectors << 9;
	if (sectors == 0 || (*zs & (*zs - 1)) != 0)
		return err_set(-EINVAL, "device %s: zone size %llu is not a "
			       "power of two", path, (unsigned long long)*zs);
	return 0;
}

/* Check one reported zone i while looking for the first sequential zone
 * after zone 0 and the conventional zones that follow it. */
static int smr_blk_check_zone(const char *path, uint32_t i,
			      const struct blk_zone *bz, uint32_t *first)
{
	bool conv = bz->type == BLK_ZONE_TYPE_CONVENTIONAL;

	if (i > 0 && *first == 0 && !conv)
		*first = i;
	else if (*first != 0 && conv)
		return err_set(-EINVAL, "device %s: conventional zone %u among "
			       "sequential ones", path, i);
	if (!conv && bz->capacity != 0 && bz->capacity != bz->len)
		return err_set(-EINVAL, "device %s: zone %u capacity is not "
			       "its size", path, i);
	return 0;
}

/* Index of the first sequential zone after zone 0 and the conventional
 * zones that follow it; refuses conventional zones past it and zones
 * whose capacity is not their size. */
static int smr_blk_first_seq(int fd, const char *path, uint32_t nr,
			     uint32_t *first)
{
	struct blk_zone zones[SMR_BLK_REPORT];
	uint64_t sector = 0;
	uint32_t i = 0, got = 0;
	int rc = 0;

	*first = 0;
	while (i < nr && rc == 0) {
		rc = smr_blk_report(fd, path, sector, zones, SMR_BLK_REPORT,
				    &got);
		if (rc != 0 || got == 0)
			break;
		for (uint32_t k = 0; rc == 0 && k < got && i < nr; k++, i++)
			rc = smr_blk_check_zone(path, i, &zones[k], first);
		sector = zones[got - 1].start + zones[got - 1].len;
	}
	if (rc == 0 && *first == 0)
		rc = err_set(-EINVAL, "device %s: no sequential zone after "
			     "zone 0", path);
	return rc;
}

/* Reset the zones of the sector range, an ioctl away. */
static int smr_blk_reset_range(int fd, const char *path, uint64_t sector,
			       uint64_t sectors)
{
	struct blk_zone_range r = {.sector = sector, .nr_sectors = sectors};

	if (ioctl(fd, BLKRESETZONE, &r) != 0)
		return err_set(-errno, "device %s: BLKRESETZONE of sectors "
			       "%llu+%llu: %s", path,
			       (unsigned long long)sector,
			       (unsigned long long)sectors, strerror(errno));
	return 0;
}

/* Write the superblock area into zone 0 (reset first when zone 0 is
 * sequential), and empty the data zones. */
static int smr_blk_write_sb(int fd, const char *path, const struct tier_sb *sb,
			    uint64_t zs)
{
	void *area = NULL;
	int rc;

	rc = smr_blk_reset_range(fd, path, 0, zs >> 9);
	if (rc == -EINVAL || rc == -EOPNOTSUPP)
		rc = 0; /* zone 0 is conventional */
	if (rc == 0)
		rc = smr_blk_reset_range(fd, path, sb->sb_data_off >> 9,
					 sb->sb_data_size / zs * zs >> 9);
	if (rc != 0)
		return rc;
	if (posix_memalign(&area, 4096, LIM_DEV_SB_SIZE) != 0)
		return err_set(-ENOMEM, "device %s: no memory", path);
	memset(area, 0, LIM_DEV_SB_SIZE);
	memcpy(area, sb, sizeof *sb);
	if (pwrite(fd, area, LIM_DEV_SB_SIZE, 0) != (ssize_t)LIM_DEV_SB_SIZE)
		rc = err_set(-EIO, "device %s: superblock write: %s", path,
			     strerror(errno));
	else if (fdatasync(fd) != 0)
		rc = err_set(-errno, "device %s: fdatasync: %s", path,
			     strerror(errno));
	free(area);
	return rc;
}

/* Format a zoned block device in place (see the top of the file). */
int smr_blk_format(const char *path, struct tier_sb *sb,
		   const struct tier_format_opts *o)
{
	uint32_t nr = 0, first = 0;
	uint64_t zs = 0;
	int fd, rc;

	if (!smr_blk_is_zoned(path))
		return err_set(-EEXIST, "device %s: a block device that is not "
			       "zoned; refusing to format over it", path);
	fd = open(path, O_RDWR | O_DIRECT | O_EXCL | O_CLOEXEC);
	if (fd < 0)
		return err_set(-errno, "device %s: cannot open: %s", path,
			       strerror(errno));
	rc = smr_blk_geometry(fd, path, &zs, &nr);
	if (rc == 0 && o->tf_zone_size != 0 && o->tf_zone_size != zs)
		rc = err_set(-EINVAL, "device %s: zone size %llu, the device "
			     "has %llu", path,
			     (unsigned long long)o->tf_zone_size,
			     (unsigned long long)zs);
	if (rc == 0)
		rc = smr_blk_first_seq(fd, path, nr, &first);
	if (rc == 0 && (sb->sb_data_size < zs ||
			sb->sb_data_size / zs > nr - first))
		rc = err_set(-EINVAL, "device %s: %llu bytes of data must fill "
			     "1..%u sequential zones", path,
			     (unsigned long long)sb->sb_data_size, nr - first);
	if (rc == 0) {
		sb->sb_data_off = (uint64_t)first * zs;
		sb->sb_crc = tier_sb_crc(sb);
		rc = smr_blk_write_sb(fd, path, sb, zs);
	}
	close(fd);
	return rc;
}

/* Take the wp of one reported zone into sm (offline and read-only zones
 * count as full: nothing more can be written there). */
static void smr_blk_take(struct smr_dev *sm, uint32_t z,
			 const struct blk_zone *bz)
{
	uint64_t zs = 1ull << sm->sm_zone_shift, wp;

	if (bz->cond == BLK_ZONE_COND_FULL || bz->cond == BLK_ZONE_COND_OFFLINE ||
	    bz->cond == BLK_ZONE_COND_READONLY)
		wp = zs;
	else
		wp = (bz->wp - bz->start) << 9;
	__atomic_store_n(&sm->sm_wp[z], wp < zs ? wp : zs, __ATOMIC_RELEASE);
}

/* Open: check direct I/O, the geometry against the superblock, and read
 * every data zone's wp. */
int smr_blk_open(struct tier_dev *d, struct smr_dev *sm)
{
	struct blk_zone zones[SMR_BLK_REPORT];
	int fd = file_dev_fd(sm->sm_fl);
	uint32_t nr = 0, got = 0, z = 0;
	uint64_t zs = 0;
	int rc;

	if (!file_dev_direct(sm->sm_fl) ||
	    file_dev_off_align(sm->sm_fl) > LIM_ALLOC_UNIT)
		return err_set(-EINVAL, "device %s: zoned devices need direct "
			       "I/O of %u-byte units", d->td_path,
			       LIM_ALLOC_UNIT);
	rc = smr_blk_geometry(fd, d->td_path, &zs, &nr);
	if (rc != 0)
		return rc;
	if (d->td_sb.sb_data_off % zs != 0 || d->td_sb.sb_data_size < zs)
		return err_set(-ST_ECORRUPT, "device %s: superblock does "
			       "not fit the device's %llu-byte zones",
			       d->td_path, (unsigned long long)zs);
	sm->sm_zone_shift = (uint32_t)__builtin_ctzll(zs);
	if (d->td_sb.sb_data_size / zs > UINT32_MAX)
		return err_set(-ST_ECORRUPT, "device %s: too many zones",
			       d->td_path);
	sm->sm_wp = calloc(d->td_sb.sb_data_size / zs, sizeof *sm->sm_wp);
	if (sm->sm_wp == NULL)
		return err_set(-ENOMEM, "device %s: no memory", d->td_path);
	sm->sm_zone_nr = (uint32_t)(d->td_sb.sb_data_size / zs);
	while (z < sm->sm_zone_nr && rc == 0) {
		rc = smr_blk_report(fd, d->td_path,
				    (d->td_sb.sb_data_off + (uint64_t)z * zs) >> 9,
				    zones, SMR_BLK_REPORT, &got);
		if (rc == 0 && got == 0)
			rc = err_set(-EIO, "device %s: no report for zone %u",
				     d->td_path, z);
		for (uint32_t k = 0; rc == 0 && k < got && z < sm->sm_zone_nr;
		     k++, z++)
			smr_blk_take(sm, z, &zones[k]);
	}
	return rc;
}

/* Reset zone z on the device. */
int smr_blk_reset(struct tier_dev *d, struct smr_dev *sm, uint32_t z)
{
	uint64_t zs = 1ull << sm->sm_zone_shift;

	return smr_blk_reset_range(file_dev_fd(sm->sm_fl), d->td_path,
				   (d->td_sb.sb_data_off + (uint64_t)z * zs) >> 9,
				   zs >> 9);
}

/* Re-read zone z's wp (a failed write may have written part of it). */
void smr_blk_refresh(struct tier_dev *d, struct smr_dev *sm, uint32_t z)
{
	uint64_t zs = 1ull << sm->sm_zone_shift;
	struct blk_zone bz;
	uint32_t got = 0;

	if (smr_blk_report(file_dev_fd(sm->sm_fl), d->td_path,
			   (d->td_sb.sb_data_off + (uint64_t)z * zs) >> 9, &bz,
			   1, &got) == 0 && got == 1)
		smr_blk_take(sm, z, &bz);
	else
		LOG_WARNING("device %s: zone %u: write pointer unknown after a "
			    "failed write", d->td_path, z);
}
