/*
 * tier.c — the driver-independent half of tiers/ (see tier.h).
 *
 * It picks drivers, builds and checks superblocks, validates every I/O
 * request against the data area, hosts the fault points of the data path and
 * keeps the per-device counters.  Drivers (tiers/file/, tiers/nvram/) only
 * move bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <isa-l/crc64.h>

#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "tiers/tier.h"

/* The superblock is written as the struct lies in memory: that is its
 * little-endian on-disk format only on a little-endian host, and the field
 * offsets below are the format. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the superblock is stored in host order: little-endian only");
_Static_assert(offsetof(struct tier_sb, sb_version) == 8, "sb layout");
_Static_assert(offsetof(struct tier_sb, sb_tier) == 12, "sb layout");
_Static_assert(offsetof(struct tier_sb, sb_store) == 16, "sb layout");
_Static_assert(offsetof(struct tier_sb, sb_index) == 32, "sb layout");
_Static_assert(offsetof(struct tier_sb, sb_data_off) == 40, "sb layout");
_Static_assert(offsetof(struct tier_sb, sb_data_size) == 48, "sb layout");
_Static_assert(offsetof(struct tier_sb, sb_ctime_ns) == 56, "sb layout");
_Static_assert(offsetof(struct tier_sb, sb_driver) == 64, "sb layout");
_Static_assert(offsetof(struct tier_sb, sb_crc) == 80, "sb layout");
_Static_assert(sizeof(struct tier_sb) <= LIM_DEV_SB_SIZE, "sb fits its area");

/* The driver tables, defined in the drivers' folders.  Only this file
 * reaches them; everyone else goes through tier_driver_for/find. */
extern const struct tier_ops tier_file_ops;
extern const struct tier_ops tier_pmem2_ops;

static const struct tier_ops *const tier_drivers[] = {
	&tier_file_ops,
	&tier_pmem2_ops,
};

/* The default driver of each tier: memory-mapped for NVRAM, files for the
 * block-device classes. */
const struct tier_ops *tier_driver_for(enum clovis_tier tier)
{
	switch (tier) {
	case CLOVIS_TIER_NVRAM:
		return &tier_pmem2_ops;
	case CLOVIS_TIER_FLASH:
	case CLOVIS_TIER_SAS:
		return &tier_file_ops;
	default:
		return NULL;
	}
}

/* Look a driver up by the name recorded in a superblock. */
const struct tier_ops *tier_driver_find(const char *name)
{
	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof tier_drivers / sizeof tier_drivers[0];
	     i++)
		if (strcmp(tier_drivers[i]->to_name, name) == 0)
			return tier_drivers[i];
	return NULL;
}

/* The lower-case name of a tier, for messages and configuration. */
const char *tier_name(enum clovis_tier tier)
{
	switch (tier) {
	case CLOVIS_TIER_NVRAM:
		return "nvram";
	case CLOVIS_TIER_FLASH:
		return "flash";
	case CLOVIS_TIER_SAS:
		return "sas";
	default:
		return "unknown";
	}
}

/* CRC64 (ECMA, reflected) of the superblock with its crc field taken as
 * zero, so that the stored crc does not feed itself. */
uint64_t tier_sb_crc(const struct tier_sb *sb)
{
	struct tier_sb tmp = *sb;

	tmp.sb_crc = 0;
	return crc64_ecma_refl(0, (const unsigned char *)&tmp, sizeof tmp);
}

/* Build a complete version-1 superblock, crc included.  Padding and the
 * unused tail of the driver name are zero so the crc is reproducible. */
void tier_sb_fill(struct tier_sb *sb, enum clovis_tier tier,
		  const uint8_t store[16], uint32_t index, uint64_t size_bytes,
		  const char *driver)
{
	struct timespec ts;

	memset(sb, 0, sizeof *sb);
	clock_gettime(CLOCK_REALTIME, &ts);
	sb->sb_magic = TIER_SB_MAGIC;
	sb->sb_version = TIER_SB_VERSION;
	sb->sb_tier = (uint32_t)tier;
	memcpy(sb->sb_store, store, sizeof sb->sb_store);
	sb->sb_index = index;
	sb->sb_data_off = LIM_DEV_SB_SIZE;
	sb->sb_data_size = size_bytes;
	sb->sb_ctime_ns = (uint64_t)ts.tv_sec * 1000000000ull +
			  (uint64_t)ts.tv_nsec;
	strncpy(sb->sb_driver, driver, sizeof sb->sb_driver - 1);
	sb->sb_crc = tier_sb_crc(sb);
}

/* Check the arguments of tier_dev_format before anything touches the disk:
 * a known tier, a usable size and path, and no file already at path. */
static int tier_format_check(const char *path, enum clovis_tier tier,
			     const uint8_t store[16], uint64_t size_bytes)
{
	struct stat st;

	if (path == NULL || store == NULL)
		return err_set(-EINVAL, "device format: path and store uuid "
				       "are required");
	if (strlen(path) == 0 || strlen(path) > LIM_PATH_MAX)
		return err_set(-EINVAL, "device %s: path length must be 1..%u",
			       path, LIM_PATH_MAX);
	if (tier_driver_for(tier) == NULL)
		return err_set(-EINVAL, "device %s: unknown tier %d", path,
			       (int)tier);
	if (size_bytes < LIM_DEV_SIZE_MIN || size_bytes > LIM_DEV_SIZE_MAX ||
	    size_bytes % LIM_ALLOC_UNIT != 0)
		return err_set(-EINVAL, "device %s: size %llu must be in "
			       "%llu..%llu and a multiple of %u", path,
			       (unsigned long long)size_bytes,
			       LIM_DEV_SIZE_MIN, LIM_DEV_SIZE_MAX,
			       LIM_ALLOC_UNIT);
	if (lstat(path, &st) == 0)
		return err_set(-EEXIST, "device %s: path exists; refusing to "
			       "format over it", path);
	if (errno != ENOENT)
		return err_set(-errno, "device %s: cannot stat: %s", path,
			       strerror(errno));
	return 0;
}

/* Make the directory entry of path durable: fsync its parent directory.
 * Shared by every driver, which only makes the file's contents durable. */
static int tier_dir_sync(const char *path)
{
	char dir[LIM_PATH_MAX + 1];
	char *slash;
	int fd, rc = 0;

	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = err_set(-errno, "device %s: cannot open directory %s: %s",
			     path, dir, strerror(errno));
		goto out;
	}
	if (fsync(fd) != 0)
		rc = err_set(-errno, "device %s: cannot sync directory %s: %s",
			     path, dir, strerror(errno));
	close(fd);
out:
	return rc;
}

/* Create a device: check, let the tier's default driver create the file
 * with its superblock, then make the new name durable.  A device whose name
 * could not be made durable is removed again. */
int tier_dev_format(const char *path, enum clovis_tier tier,
		    const uint8_t store[16], uint32_t index,
		    uint64_t size_bytes)
{
	const struct tier_ops *ops;
	struct tier_sb sb;
	int rc;

	rc = tier_format_check(path, tier, store, size_bytes);
	if (rc != 0)
		goto out;
	ops = tier_driver_for(tier);
	tier_sb_fill(&sb, tier, store, index, size_bytes, ops->to_name);
	rc = ops->to_format(path, &sb);
	if (rc != 0)
		goto out;
	rc = tier_dir_sync(path);
	if (rc == 0 && FAULT_HIT("tier.format"))
		rc = err_set(-EIO, "device %s: injected format error", path);
	if (rc != 0)
		goto out_unlink;
	LOG_INFO("device %s: formatted, tier %s, index %u, %llu bytes, "
		 "driver %s", path, tier_name(tier), index,
		 (unsigned long long)size_bytes, ops->to_name);
	goto out;
out_unlink:
	unlink(path);
out:
	return rc;
}

/* Read the superblock bytes at offset 0 of path with a plain descriptor,
 * before any driver is chosen (the superblock names the driver), and the
 * file's size when it is a regular file (0 otherwise). */
static int tier_sb_load(const char *path, struct tier_sb *sb,
			uint64_t *file_size)
{
	struct stat st;
	ssize_t n;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = err_set(-errno, "device %s: cannot open: %s", path,
			     strerror(errno));
		goto out;
	}
	do
		n = pread(fd, sb, sizeof *sb, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		rc = err_set(-errno, "device %s: cannot read superblock: %s",
			     path, strerror(errno));
	else if ((size_t)n < sizeof *sb)
		rc = err_set(-CLOVIS_ECORRUPT, "device %s: %zd bytes, too "
			     "short for a superblock", path, n);
	else if (fstat(fd, &st) != 0)
		rc = err_set(-errno, "device %s: cannot stat: %s", path,
			     strerror(errno));
	else
		*file_size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	close(fd);
out:
	return rc;
}

/* Check what makes a superblock ours and intact.  The version is checked
 * before the crc: a later version may place or compute its crc differently,
 * and "incompatible version" is then the true answer, not "corrupt". */
static int tier_sb_check_format(const struct tier_sb *sb, const char *path)
{
	if (sb->sb_magic != TIER_SB_MAGIC)
		return err_set(-CLOVIS_ECORRUPT, "device %s: bad superblock "
			       "magic %#llx", path,
			       (unsigned long long)sb->sb_magic);
	if (sb->sb_version != TIER_SB_VERSION)
		return err_set(-CLOVIS_EVERSION, "device %s: superblock "
			       "version %u, this build reads %u", path,
			       sb->sb_version, TIER_SB_VERSION);
	if (sb->sb_crc != tier_sb_crc(sb))
		return err_set(-CLOVIS_ECORRUPT, "device %s: superblock crc "
			       "mismatch", path);
	return 0;
}

/* Check the geometry a crc-valid superblock claims, so that a superblock
 * written by a buggy formatter cannot send I/O outside the file. */
static int tier_sb_check_geometry(const struct tier_sb *sb, const char *path,
				  uint64_t file_size)
{
	if (sb->sb_data_off != LIM_DEV_SB_SIZE)
		return err_set(-CLOVIS_ECORRUPT, "device %s: data offset %llu, "
			       "expected %u", path,
			       (unsigned long long)sb->sb_data_off,
			       LIM_DEV_SB_SIZE);
	if (sb->sb_data_size < LIM_DEV_SIZE_MIN ||
	    sb->sb_data_size > LIM_DEV_SIZE_MAX ||
	    sb->sb_data_size % LIM_ALLOC_UNIT != 0)
		return err_set(-CLOVIS_ECORRUPT, "device %s: bad data size "
			       "%llu", path,
			       (unsigned long long)sb->sb_data_size);
	if (memchr(sb->sb_driver, '\0', sizeof sb->sb_driver) == NULL)
		return err_set(-CLOVIS_ECORRUPT, "device %s: driver name not "
			       "terminated", path);
	if (file_size != 0 && file_size < sb->sb_data_off + sb->sb_data_size)
		return err_set(-CLOVIS_ECORRUPT, "device %s: file is %llu "
			       "bytes, superblock needs %llu", path,
			       (unsigned long long)file_size,
			       (unsigned long long)(sb->sb_data_off +
						    sb->sb_data_size));
	return 0;
}

/* Format 16 bytes as 32 hex digits into out (33 bytes). */
static void tier_uuid_str(const uint8_t u[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", u[i]);
}

/* Check that the device is the one the caller expects: same store, same
 * index in it, same tier.  Each mismatch names its field. */
static int tier_sb_check_identity(const struct tier_sb *sb, const char *path,
				  enum clovis_tier tier,
				  const uint8_t store[16], uint32_t index)
{
	char have[33], want[33];

	if (memcmp(sb->sb_store, store, sizeof sb->sb_store) != 0) {
		tier_uuid_str(sb->sb_store, have);
		tier_uuid_str(store, want);
		return err_set(-CLOVIS_ECORRUPT, "device %s: store uuid %s, "
			       "expected %s", path, have, want);
	}
	if (sb->sb_index != index)
		return err_set(-CLOVIS_ECORRUPT, "device %s: device index %u, "
			       "expected %u", path, sb->sb_index, index);
	if (sb->sb_tier != (uint32_t)tier)
		return err_set(-CLOVIS_ECORRUPT, "device %s: tier %s (%u), "
			       "expected %s", path,
			       tier_name((enum clovis_tier)sb->sb_tier),
			       sb->sb_tier, tier_name(tier));
	return 0;
}

/* Check the arguments of tier_dev_open. */
static int tier_open_check(struct tier_dev **out, const char *path,
			   enum clovis_tier tier, const uint8_t store[16])
{
	if (out == NULL || path == NULL || store == NULL)
		return err_set(-EINVAL, "device open: out, path and store "
				       "uuid are required");
	if (strlen(path) == 0 || strlen(path) > LIM_PATH_MAX)
		return err_set(-EINVAL, "device %s: path length must be 1..%u",
			       path, LIM_PATH_MAX);
	if (tier_driver_for(tier) == NULL)
		return err_set(-EINVAL, "device %s: unknown tier %d", path,
			       (int)tier);
	return 0;
}

/* Load and check the superblock of path into d->td_sb and choose the
 * driver it names. */
static int tier_sb_read_checked(struct tier_dev *d, const char *path,
				enum clovis_tier tier,
				const uint8_t store[16], uint32_t index)
{
	uint64_t file_size = 0;
	int rc;

	rc = tier_sb_load(path, &d->td_sb, &file_size);
	if (rc == 0)
		rc = tier_sb_check_format(&d->td_sb, path);
	if (rc == 0)
		rc = tier_sb_check_geometry(&d->td_sb, path, file_size);
	if (rc == 0)
		rc = tier_sb_check_identity(&d->td_sb, path, tier, store,
					    index);
	if (rc != 0)
		return rc;
	d->td_ops = tier_driver_find(d->td_sb.sb_driver);
	if (d->td_ops == NULL)
		return err_set(-CLOVIS_ECORRUPT, "device %s: unknown driver "
			       "\"%s\"", path, d->td_sb.sb_driver);
	return 0;
}

/* Ask the opened driver for the superblock and compare it with the copy
 * checked before: both must see the same bytes. */
static int tier_sb_recheck(struct tier_dev *d)
{
	struct tier_sb sb;
	int rc;

	rc = d->td_ops->to_read_sb(d, &sb);
	if (rc == 0 && memcmp(&sb, &d->td_sb, sizeof sb) != 0)
		rc = err_set(-CLOVIS_ECORRUPT, "device %s: driver %s reads a "
			     "different superblock", d->td_path,
			     d->td_ops->to_name);
	if (rc == 0 && FAULT_HIT("tier.open"))
		rc = err_set(-EIO, "device %s: injected open error",
			     d->td_path);
	return rc;
}

/* Open a device: check the superblock with a plain read, then open it with
 * the driver it names (drivers may rely on d->td_sb being filled and
 * checked when to_open runs), and check the driver's own view of it. */
int tier_dev_open(struct tier_dev **out, const char *path,
		  enum clovis_tier tier, const uint8_t store[16],
		  uint32_t index)
{
	struct tier_dev *d;
	int rc;

	rc = tier_open_check(out, path, tier, store);
	if (rc != 0)
		goto out;
	d = calloc(1, sizeof *d);
	if (d == NULL) {
		rc = err_set(-ENOMEM, "device %s: no memory", path);
		goto out;
	}
	snprintf(d->td_path, sizeof d->td_path, "%s", path);
	rc = tier_sb_read_checked(d, path, tier, store, index);
	if (rc != 0)
		goto out_free;
	rc = d->td_ops->to_open(d, path);
	if (rc != 0)
		goto out_free;
	rc = tier_sb_recheck(d);
	if (rc != 0)
		goto out_close;
	LOG_INFO("device %s: open, tier %s, index %u, driver %s, %s", path,
		 tier_name(tier), index, d->td_ops->to_name,
		 d->td_direct ? "direct" : "buffered");
	*out = d;
	goto out;
out_close:
	d->td_ops->to_close(d);
out_free:
	free(d);
out:
	return rc;
}

/* Close the driver and free the handle.  Does not sync: durability is what
 * tier_dev_sync() promises, and callers sync before they commit. */
void tier_dev_close(struct tier_dev *d)
{
	if (d == NULL)
		return;
	d->td_ops->to_close(d);
	free(d);
}

/* Check one I/O request: buffer present, offset and length in allocation
 * units, range inside the data area (written so that off + len cannot
 * overflow). */
static int tier_io_check(const struct tier_dev *d, uint64_t off,
			 const void *buf, size_t len, const char *what)
{
	uint64_t size = tier_dev_size(d);

	if (buf == NULL && len != 0)
		return err_set(-EINVAL, "device %s: %s with no buffer",
			       d->td_path, what);
	if (off % LIM_ALLOC_UNIT != 0 || len % LIM_ALLOC_UNIT != 0)
		return err_set(-EINVAL, "device %s: %s of %zu bytes at %llu: "
			       "offset and length must be multiples of %u",
			       d->td_path, what, len,
			       (unsigned long long)off, LIM_ALLOC_UNIT);
	if (off > size || len > size - off)
		return err_set(-EINVAL, "device %s: %s of %zu bytes at %llu "
			       "leaves the data area (%llu bytes)",
			       d->td_path, what, len,
			       (unsigned long long)off,
			       (unsigned long long)size);
	return 0;
}

/* Write len bytes at data-area offset off (see tier.h).  A zero-length
 * write is checked and then does nothing. */
int tier_dev_write(struct tier_dev *d, uint64_t off, const void *buf,
		   size_t len)
{
	int rc;

	PRE(d != NULL);
	rc = tier_io_check(d, off, buf, len, "write");
	if (rc != 0)
		goto out;
	if (FAULT_HIT("tier.write")) {
		rc = err_set(-EIO, "device %s: injected write error at %llu",
			     d->td_path, (unsigned long long)off);
		goto out;
	}
	if (len == 0)
		goto out;
	rc = d->td_ops->to_write(d, off, buf, len);
	if (rc == 0)
		__atomic_fetch_add(&d->td_nr_writes, 1, __ATOMIC_RELAXED);
out:
	return rc;
}

/* Read len bytes at data-area offset off (see tier.h). */
int tier_dev_read(struct tier_dev *d, uint64_t off, void *buf, size_t len)
{
	int rc;

	PRE(d != NULL);
	rc = tier_io_check(d, off, buf, len, "read");
	if (rc != 0)
		goto out;
	if (FAULT_HIT("tier.read")) {
		rc = err_set(-EIO, "device %s: injected read error at %llu",
			     d->td_path, (unsigned long long)off);
		goto out;
	}
	if (len == 0)
		goto out;
	rc = d->td_ops->to_read(d, off, buf, len);
	if (rc == 0)
		__atomic_fetch_add(&d->td_nr_reads, 1, __ATOMIC_RELAXED);
out:
	return rc;
}

/* Make every completed write durable (see tier.h). */
int tier_dev_sync(struct tier_dev *d)
{
	int rc;

	PRE(d != NULL);
	if (FAULT_HIT("tier.sync")) {
		rc = err_set(-EIO, "device %s: injected sync error",
			     d->td_path);
		goto out;
	}
	rc = d->td_ops->to_sync(d);
	if (rc == 0)
		__atomic_fetch_add(&d->td_nr_syncs, 1, __ATOMIC_RELAXED);
out:
	return rc;
}
