/*
 * tier.c — the driver-independent half of tiers/ (see tier.h).
 *
 * It picks drivers, builds and checks superblocks, validates every I/O
 * request against the data area, hosts the fault points of the data path,
 * applies the device model (tier_model.c) and keeps the per-device
 * counters.  Drivers (tiers/file/, tiers/nvram/, tiers/smr/) only move
 * bytes; the request queues of tier_io_run live in tier_ioq.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <isa-l/crc64.h>

#include "addb/addb.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "tiers/tier_internal.h"
#include "tiers/tier_limits.h"

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
extern const struct tier_ops tier_smr_ops;

static const struct tier_ops *const tier_drivers[] = {
	&tier_file_ops,
	&tier_pmem2_ops,
	&tier_smr_ops,
};

/* Drivers registered from above (tier_driver_register; at most
 * TIER_REG_MAX): devices without a superblock file here, such as cluster
 * mode's remote devices.  Appended under tier_reg_lock, read without it
 * once published (the count is stored after the slot, with release
 * order). */
static const struct tier_ops *tier_reg[TIER_REG_MAX];
static uint32_t tier_reg_nr;
static pthread_mutex_t tier_reg_lock = PTHREAD_MUTEX_INITIALIZER;

int tier_driver_register(const struct tier_ops *ops)
{
	uint32_t n;
	int rc = 0;

	if (ops == NULL || ops->to_name == NULL || ops->to_write == NULL ||
	    ops->to_read == NULL || ops->to_sync == NULL ||
	    ops->to_close == NULL)
		return err_set(-EINVAL, "driver register: name, write, read, "
			       "sync and close are required");
	pthread_mutex_lock(&tier_reg_lock);
	n = __atomic_load_n(&tier_reg_nr, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++)
		if (tier_reg[i] == ops)
			goto out;
	if (tier_driver_find(ops->to_name) != NULL)
		rc = err_set(-EEXIST, "driver %s: a driver of that name exists",
			     ops->to_name);
	else if (n == TIER_REG_MAX)
		rc = err_set(-ENOSPC, "driver %s: %u drivers registered "
			     "already", ops->to_name, TIER_REG_MAX);
	else {
		tier_reg[n] = ops;
		__atomic_store_n(&tier_reg_nr, n + 1, __ATOMIC_RELEASE);
	}
out:
	pthread_mutex_unlock(&tier_reg_lock);
	return rc;
}

/* The default driver of each tier: memory-mapped for NVRAM, files for the
 * block-device classes, zones for shingled disks. */
const struct tier_ops *tier_driver_for(uint32_t tier)
{
	switch (tier) {
	case ST_TIER_NVRAM:
		return &tier_pmem2_ops;
	case ST_TIER_FLASH:
	case ST_TIER_SAS:
		return &tier_file_ops;
	case ST_TIER_SMR:
		return &tier_smr_ops;
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
	for (uint32_t i = 0, n = __atomic_load_n(&tier_reg_nr, __ATOMIC_ACQUIRE);
	     i < n; i++)
		if (strcmp(tier_reg[i]->to_name, name) == 0)
			return tier_reg[i];
	return NULL;
}

const char *tier_fill_name(uint32_t fill)
{
	switch (fill) {
	case TIER_FILL_ZERO:
		return "zero";
	case TIER_FILL_RESERVE:
		return "reserve";
	default:
		return NULL;
	}
}

/* The lower-case name of a tier, for messages and configuration. */
const char *tier_name(uint32_t tier)
{
	switch (tier) {
	case ST_TIER_NVRAM:
		return "nvram";
	case ST_TIER_FLASH:
		return "flash";
	case ST_TIER_SAS:
		return "sas";
	case ST_TIER_SMR:
		return "smr";
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
void tier_sb_fill(struct tier_sb *sb, uint32_t tier,
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
 * a known tier, a usable size and path, and nothing already at path but a
 * block device an SMR format may take (*existing is then set). */
static int tier_format_check(const char *path, uint32_t tier,
			     const uint8_t store[16], uint64_t size_bytes,
			     bool *existing)
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
	*existing = false;
	if (lstat(path, &st) == 0) {
		*existing = tier == ST_TIER_SMR && S_ISBLK(st.st_mode);
		return *existing ? 0 : err_set(-EEXIST, "device %s: path "
					       "exists; refusing to format "
					       "over it", path);
	}
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
 * could not be made durable is removed again (a block device formatted in
 * place has no new name and is never removed). */
int tier_dev_format_opts(const char *path, uint32_t tier,
			 const uint8_t store[16], uint32_t index,
			 uint64_t size_bytes, const struct tier_format_opts *o)
{
	static const struct tier_format_opts none;
	const struct tier_ops *ops;
	bool existing = false;
	struct tier_sb sb;
	int rc;

	rc = tier_format_check(path, tier, store, size_bytes, &existing);
	if (rc != 0)
		goto out;
	if (o != NULL && tier_fill_name(o->tf_fill) == NULL) {
		rc = err_set(-EINVAL, "device %s: fill %u: expected %u (zero) "
			     "or %u (reserve)", path, o->tf_fill,
			     TIER_FILL_ZERO, TIER_FILL_RESERVE);
		goto out;
	}
	ops = tier_driver_for(tier);
	tier_sb_fill(&sb, tier, store, index, size_bytes, ops->to_name);
	rc = ops->to_format(path, &sb, o != NULL ? o : &none);
	if (rc != 0)
		goto out;
	if (!existing)
		rc = tier_dir_sync(path);
	if (rc == 0 && FAULT_HIT("tier.format"))
		rc = err_set(-EIO, "device %s: injected format error", path);
	if (rc != 0)
		goto out_unlink;
	LOG_INFO("device %s: formatted, tier %s, index %u, %llu bytes, "
		 "driver %s, fill %s", path, tier_name(tier), index,
		 (unsigned long long)size_bytes, ops->to_name,
		 tier_fill_name(o != NULL ? o->tf_fill : TIER_FILL_ZERO));
	goto out;
out_unlink:
	if (!existing)
		unlink(path);
out:
	return rc;
}

/* tier_dev_format_opts with every option at its default. */
int tier_dev_format(const char *path, uint32_t tier,
		    const uint8_t store[16], uint32_t index,
		    uint64_t size_bytes)
{
	return tier_dev_format_opts(path, tier, store, index, size_bytes,
				    NULL);
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
		rc = err_set(-ST_ECORRUPT, "device %s: %zd bytes, too "
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
		return err_set(-ST_ECORRUPT, "device %s: bad superblock "
			       "magic %#llx", path,
			       (unsigned long long)sb->sb_magic);
	if (sb->sb_version != TIER_SB_VERSION)
		return err_set(-ST_EVERSION, "device %s: superblock "
			       "version %u, this build reads %u", path,
			       sb->sb_version, TIER_SB_VERSION);
	if (sb->sb_crc != tier_sb_crc(sb))
		return err_set(-ST_ECORRUPT, "device %s: superblock crc "
			       "mismatch", path);
	return 0;
}

/* Check the geometry a crc-valid superblock claims, so that a superblock
 * written by a buggy formatter cannot send I/O outside the file. */
static int tier_sb_check_geometry(const struct tier_sb *sb, const char *path,
				  uint64_t file_size)
{
	if (sb->sb_data_off < LIM_DEV_SB_SIZE ||
	    sb->sb_data_off % LIM_DEV_SB_SIZE != 0 ||
	    sb->sb_data_off > LIM_DEV_DATA_OFF_MAX)
		return err_set(-ST_ECORRUPT, "device %s: data offset %llu, "
			       "expected a multiple of %u up to %llu", path,
			       (unsigned long long)sb->sb_data_off,
			       LIM_DEV_SB_SIZE, LIM_DEV_DATA_OFF_MAX);
	if (sb->sb_data_size < LIM_DEV_SIZE_MIN ||
	    sb->sb_data_size > LIM_DEV_SIZE_MAX ||
	    sb->sb_data_size % LIM_ALLOC_UNIT != 0)
		return err_set(-ST_ECORRUPT, "device %s: bad data size "
			       "%llu", path,
			       (unsigned long long)sb->sb_data_size);
	if (memchr(sb->sb_driver, '\0', sizeof sb->sb_driver) == NULL)
		return err_set(-ST_ECORRUPT, "device %s: driver name not "
			       "terminated", path);
	if (file_size != 0 && file_size < sb->sb_data_off + sb->sb_data_size)
		return err_set(-ST_ECORRUPT, "device %s: file is %llu "
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
				  uint32_t tier,
				  const uint8_t store[16], uint32_t index)
{
	char have[33], want[33];

	if (memcmp(sb->sb_store, store, sizeof sb->sb_store) != 0) {
		tier_uuid_str(sb->sb_store, have);
		tier_uuid_str(store, want);
		return err_set(-ST_ECORRUPT, "device %s: store uuid %s, "
			       "expected %s", path, have, want);
	}
	if (sb->sb_index != index)
		return err_set(-ST_ECORRUPT, "device %s: device index %u, "
			       "expected %u", path, sb->sb_index, index);
	if (sb->sb_tier != (uint32_t)tier)
		return err_set(-ST_ECORRUPT, "device %s: tier %s (%u), "
			       "expected %s", path,
			       tier_name(sb->sb_tier),
			       sb->sb_tier, tier_name(tier));
	return 0;
}

/* Check the arguments of tier_dev_open. */
static int tier_open_check(struct tier_dev **out, const char *path,
			   uint32_t tier, const uint8_t store[16])
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
				uint32_t tier,
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
	if (d->td_ops != NULL && (d->td_ops->to_open == NULL ||
				  d->td_ops->to_read_sb == NULL))
		d->td_ops = NULL; /* an attach-only driver has no files */
	if (d->td_ops == NULL)
		return err_set(-ST_ECORRUPT, "device %s: unknown driver "
			       "\"%s\"", path, d->td_sb.sb_driver);
	if (d->td_ops->to_zone_get == NULL &&
	    d->td_sb.sb_data_off != LIM_DEV_SB_SIZE)
		return err_set(-ST_ECORRUPT, "device %s: data offset %llu, "
			       "driver %s expects %u", path,
			       (unsigned long long)d->td_sb.sb_data_off,
			       d->td_ops->to_name, LIM_DEV_SB_SIZE);
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
		rc = err_set(-ST_ECORRUPT, "device %s: driver %s reads a "
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
		  uint32_t tier, const uint8_t store[16],
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
	d->td_ioq = tier_ioq_create(d);
	if (d->td_ioq == NULL) {
		rc = err_set(-ENOMEM, "device %s: no memory", path);
		goto out_free;
	}
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
	tier_ioq_destroy(d->td_ioq);
	free(d);
out:
	return rc;
}

/* A device served by a registered driver with no superblock file: its
 * identity is the caller's word (tier, index, size), the wrappers of
 * tier.c apply as to any device. */
int tier_dev_attach(struct tier_dev **out, const struct tier_ops *ops,
		    const char *name, uint32_t tier, uint32_t index,
		    uint64_t size_bytes, void *priv)
{
	static const uint8_t none[16];
	struct tier_dev *d;

	if (out == NULL || ops == NULL || name == NULL ||
	    tier_driver_find(ops->to_name) != ops)
		return err_set(-EINVAL, "device attach: out, name and a "
			       "registered driver are required");
	if (strlen(name) == 0 || strlen(name) > LIM_PATH_MAX)
		return err_set(-EINVAL, "device %s: name length must be 1..%u",
			       name, LIM_PATH_MAX);
	if (tier_driver_for(tier) == NULL)
		return err_set(-EINVAL, "device %s: unknown tier %d", name,
			       (int)tier);
	if (size_bytes == 0 || size_bytes > LIM_DEV_SIZE_MAX ||
	    size_bytes % LIM_ALLOC_UNIT != 0)
		return err_set(-EINVAL, "device %s: size %llu must be in "
			       "1..%llu and a multiple of %u", name,
			       (unsigned long long)size_bytes,
			       LIM_DEV_SIZE_MAX, LIM_ALLOC_UNIT);
	d = calloc(1, sizeof *d);
	if (d == NULL)
		return err_set(-ENOMEM, "device %s: no memory", name);
	snprintf(d->td_path, sizeof d->td_path, "%s", name);
	d->td_ioq = tier_ioq_create(d);
	if (d->td_ioq == NULL) {
		free(d);
		return err_set(-ENOMEM, "device %s: no memory", name);
	}
	tier_sb_fill(&d->td_sb, tier, none, index, size_bytes, ops->to_name);
	d->td_ops = ops;
	d->td_priv = priv;
	if (ops->to_open != NULL) {
		int rc = ops->to_open(d, name);

		if (rc != 0) {
			tier_ioq_destroy(d->td_ioq);
			free(d);
			return rc;
		}
	}
	LOG_INFO("device %s: attached, tier %s, index %u, %llu bytes, driver "
		 "%s", name, tier_name(tier), index,
		 (unsigned long long)size_bytes, ops->to_name);
	*out = d;
	return 0;
}

/* Can requests reach d now (a driver without to_reachable: always)? */
bool tier_dev_reachable(struct tier_dev *d)
{
	return d->td_ops->to_reachable == NULL || d->td_ops->to_reachable(d);
}

/* Ask again now (a driver without to_recheck: tier_dev_reachable). */
bool tier_dev_recheck(struct tier_dev *d)
{
	if (d->td_ops->to_recheck == NULL)
		return tier_dev_reachable(d);
	return d->td_ops->to_recheck(d);
}

/* When every write issued to d so far has landed or never will. */
uint64_t tier_dev_fence_ns(struct tier_dev *d)
{
	return d->td_ops->to_fence == NULL ? 0 : d->td_ops->to_fence(d);
}

/* Stop the queue's threads, close the driver and free the handle.  Does
 * not sync: durability is what tier_dev_sync() promises, and callers sync
 * before they commit. */
void tier_dev_close(struct tier_dev *d)
{
	if (d == NULL)
		return;
	tier_ioq_destroy(d->td_ioq);
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


/* ------------------------------------------------------- fault points */

/* True when the per-device point "tier.<what>.dev<N>" fires, N being d's
 * index in its store.  Test builds only; the name costs nothing in release
 * builds, where this is the constant false. */
static bool tier_fault_dev(const struct tier_dev *d, const char *what)
{
#ifdef STRATA_FAULT_INJECT
	char name[48];

	snprintf(name, sizeof name, "tier.%s.dev%u", what, d->td_sb.sb_index);
	return FAULT_HIT(name);
#else
	(void)d;
	(void)what;
	return false;
#endif
}

/* The points that fail a request of kind what ("write", "read", "sync",
 * "reset") on d before it reaches the driver: the whole device gone, the
 * point shared by every device, and the device's own.  Returns -EIO with a
 * message, or 0. */
static int tier_fault_fail(struct tier_dev *d, const char *what, uint64_t off)
{
	bool any = false, own = false;

	if (tier_fault_dev(d, "gone"))
		return err_set(-EIO, "device %s: injected fault: device gone "
			       "(%s)", d->td_path, what);
	if (strcmp(what, "write") == 0) {
		any = FAULT_HIT("tier.write");
		own = !any && tier_fault_dev(d, "write");
	} else if (strcmp(what, "read") == 0) {
		any = FAULT_HIT("tier.read");
		own = !any && tier_fault_dev(d, "read");
	} else if (strcmp(what, "sync") == 0) {
		any = FAULT_HIT("tier.sync");
	}
	if (any || own)
		return err_set(-EIO, "device %s: injected %s error at %llu",
			       d->td_path, what, (unsigned long long)off);
	return 0;
}

/* ------------------------------------------------------------ counters */

uint32_t tier_dev_addb(struct tier_dev *d)
{
	uint32_t v = __atomic_load_n(&d->td_addb, __ATOMIC_RELAXED);

	if (v == 0) {
		v = addb_dev_slot(d->td_sb.sb_tier, d->td_path) + 1;
		__atomic_store_n(&d->td_addb, v, __ATOMIC_RELAXED);
	}
	return v - 1;
}

/* The process's metrics of one device request of kind io (ADDB_IO_*):
 * count, bytes, time, failures (as td_nr_errors counts them), and the
 * tier's latency histogram. */
static void tier_addb(struct tier_dev *d, uint32_t io, int rc, size_t len,
		      uint64_t t0)
{
#ifndef STRATA_NO_ADDB
	/* one row fetch for the five updates; the device families share
	 * their instance (device slot, io): slot * ios + io, no division
	 * (slot < ADDB_DEV_SLOTS, io < 3, tier < ST_TIER_NR by
	 * construction) */
	uint64_t *r = addb_row_get();
	uint32_t slot = tier_dev_addb(d);
	uint32_t i = slot * addb_tab_nb[ADDB_DEV_IO] + io;
	uint64_t ns = addb_now_ns() - t0;

	if (r != NULL) {
		addb_radd(r, ADDB_DEV_IO, i, 1);
		if (rc == 0 && len != 0)
			addb_radd(r, ADDB_DEV_BYTES, i, len);
		if (rc != 0 && rc != -EINVAL && rc != -ENOSPC &&
		    !tier_rc_transport(rc))
			addb_radd(r, ADDB_DEV_ERR, i, 1);
		addb_radd(r, ADDB_DEV_TIME, i, ns);
		addb_robs(r, ADDB_TIER_IO_LAT, d->td_sb.sb_tier *
			  addb_tab_nb[ADDB_TIER_IO_LAT] + io, ns);
	}
	if (addb_tracing())
		addb_rec(ADDB_R_DEV_IO, slot, io, rc == 0 ? len : 0, ns);
#else
	(void)d; (void)io; (void)rc; (void)len; (void)t0;
#endif
}

/* Count the outcome of a request that reached the fault points: a success
 * in *ok (if any), a failure in td_nr_errors unless it only refused the
 * request (-EINVAL: against the rules; -ENOSPC: zone full). */
static int tier_count(struct tier_dev *d, int rc, uint64_t *ok)
{
	if (rc == 0 && ok != NULL)
		__atomic_fetch_add(ok, 1, __ATOMIC_RELAXED);
	else if (rc != 0 && rc != -EINVAL && rc != -ENOSPC &&
		 !tier_rc_transport(rc))
		__atomic_fetch_add(&d->td_nr_errors, 1, __ATOMIC_RELAXED);
	return rc;
}

/* Codes a driver that reaches its device over a network returns when the
 * network, not the device, failed (see tier.h). */
bool tier_rc_transport(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
	case -EHOSTDOWN:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -ECONNABORTED:
	case -ENOTCONN:
	case -ESHUTDOWN:
	case -ECANCELED:
		return true;
	default:
		return false;
	}
}

/* Failed requests of d (see tier.h). */
uint64_t tier_dev_errors(const struct tier_dev *d)
{
	return __atomic_load_n(&d->td_nr_errors, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------- data path */

/* Where a write goes: a data-area offset, or a zone append (w_off then
 * receives where it landed). */
struct tier_wr {
	bool w_append;
	uint32_t w_zone;
	uint64_t w_off;
};

/* Hand the bytes of a write or append to the driver. */
static int tier_wr_move(struct tier_dev *d, struct tier_wr *w,
			const void *buf, size_t len)
{
	if (w->w_append)
		return d->td_ops->to_zone_append(d, w->w_zone, buf, len,
						 &w->w_off);
	return d->td_ops->to_write(d, w->w_off, buf, len);
}

/* The short-write point: the first half of the bytes (whole allocation
 * units) reach the device, then -EIO. */
static int tier_wr_short(struct tier_dev *d, struct tier_wr *w,
			 const void *buf, size_t len)
{
	size_t half = len / 2 / LIM_ALLOC_UNIT * LIM_ALLOC_UNIT;
	int rc = 0;

	if (half > 0)
		rc = tier_wr_move(d, w, buf, half);
	if (rc == 0 && w->w_off == UINT64_MAX) /* an append that moved 0 */
		rc = err_set(-EIO, "device %s: injected short write of 0 of "
			     "%zu bytes to zone %u", d->td_path, len,
			     w->w_zone);
	else if (rc == 0)
		rc = err_set(-EIO, "device %s: injected short write of %zu of "
			     "%zu bytes at %llu", d->td_path, half, len,
			     (unsigned long long)w->w_off);
	return rc;
}

/* The bit-flip point: a copy with bit 4 of its middle byte flipped is
 * written instead, and the write succeeds. */
static int tier_wr_flip(struct tier_dev *d, struct tier_wr *w,
			const void *buf, size_t len)
{
	uint8_t *copy = malloc(len);
	int rc;

	if (copy == NULL)
		return err_set(-ENOMEM, "device %s: no memory", d->td_path);
	memcpy(copy, buf, len);
	copy[len / 2] ^= 0x10;
	rc = tier_wr_move(d, w, copy, len);
	free(copy);
	LOG_DEBUG("device %s: injected bit flip at byte %zu of a %zu-byte "
		  "write", d->td_path, len / 2, len);
	return rc;
}

/* A checked, non-empty write or append: model, corruption points (test
 * builds), driver. */
static int tier_wr_run(struct tier_dev *d, struct tier_wr *w,
		       const void *buf, size_t len)
{
	uint64_t done = tier_model_begin(d, TM_WRITE, len);
	int rc;

	if (tier_fault_dev(d, "short"))
		rc = tier_wr_short(d, w, buf, len);
	else if (tier_fault_dev(d, "flip"))
		rc = tier_wr_flip(d, w, buf, len);
	else
		rc = tier_wr_move(d, w, buf, len);
	tier_model_wait(done);
	return rc;
}

/* Write len bytes at data-area offset off (see tier.h).  A zero-length
 * write is checked and then does nothing. */
int tier_dev_write(struct tier_dev *d, uint64_t off, const void *buf,
		   size_t len)
{
	struct tier_wr w = {.w_off = off};
	uint64_t t0 = addb_now_ns();
	int rc;

	PRE(d != NULL);
	rc = tier_io_check(d, off, buf, len, "write");
	if (rc != 0)
		goto out;
	rc = tier_fault_fail(d, "write", off);
	if (rc == 0 && len == 0)
		goto out;
	if (rc == 0)
		rc = tier_wr_run(d, &w, buf, len);
	rc = tier_count(d, rc, &d->td_nr_writes);
	tier_addb(d, ADDB_IO_WRITE, rc, len, t0);
out:
	return rc;
}

/* Read len bytes at data-area offset off (see tier.h). */
int tier_dev_read(struct tier_dev *d, uint64_t off, void *buf, size_t len)
{
	uint64_t done, t0 = addb_now_ns();
	int rc;

	PRE(d != NULL);
	rc = tier_io_check(d, off, buf, len, "read");
	if (rc != 0)
		goto out;
	rc = tier_fault_fail(d, "read", off);
	if (rc == 0 && len == 0)
		goto out;
	if (rc == 0) {
		done = tier_model_begin(d, TM_READ, len);
		rc = d->td_ops->to_read(d, off, buf, len);
		tier_model_wait(done);
	}
	rc = tier_count(d, rc, &d->td_nr_reads);
	tier_addb(d, ADDB_IO_READ, rc, len, t0);
out:
	return rc;
}

/* Make every completed write durable (see tier.h). */
int tier_dev_sync(struct tier_dev *d)
{
	uint64_t done, t0 = addb_now_ns();
	int rc;

	PRE(d != NULL);
	rc = tier_fault_fail(d, "sync", 0);
	if (rc == 0) {
		done = tier_model_begin(d, TM_SYNC, 0);
		rc = d->td_ops->to_sync(d);
		tier_model_wait(done);
	}
	rc = tier_count(d, rc, &d->td_nr_syncs);
	tier_addb(d, ADDB_IO_SYNC, rc, 0, t0);
	return rc;
}

/* --------------------------------------------------------------- zones */

/* True when d is zoned. */
bool tier_dev_zoned(const struct tier_dev *d)
{
	return d->td_zone_size != 0;
}

/* Whole zones of d (0 when not zoned). */
uint32_t tier_dev_zone_nr(const struct tier_dev *d)
{
	return d->td_zone_nr;
}

/* Bytes per zone of d (0 when not zoned). */
uint64_t tier_dev_zone_size(const struct tier_dev *d)
{
	return d->td_zone_size;
}

/* Check that d is zoned and has zone `zone`. */
static int tier_zone_check(const struct tier_dev *d, uint32_t zone,
			   const char *what)
{
	if (!tier_dev_zoned(d))
		return err_set(-EINVAL, "device %s: %s: not a zoned device "
			       "(driver %s)", d->td_path, what,
			       d->td_ops->to_name);
	if (zone >= d->td_zone_nr)
		return err_set(-EINVAL, "device %s: %s: zone %u, the device "
			       "has %u", d->td_path, what, zone,
			       d->td_zone_nr);
	return 0;
}

/* Report one zone (see tier.h). */
int tier_dev_zone_get(struct tier_dev *d, uint32_t zone,
		      struct tier_zone *out)
{
	int rc;

	PRE(d != NULL);
	rc = tier_zone_check(d, zone, "zone report");
	if (rc == 0 && out == NULL)
		rc = err_set(-EINVAL, "device %s: zone report with no output",
			     d->td_path);
	if (rc == 0)
		d->td_ops->to_zone_get(d, zone, out);
	return rc;
}

/* Reset one zone, durably (see tier.h); modelled as a sync. */
int tier_dev_zone_reset(struct tier_dev *d, uint32_t zone)
{
	uint64_t done;
	int rc;

	PRE(d != NULL);
	rc = tier_zone_check(d, zone, "zone reset");
	if (rc != 0)
		return rc;
	rc = tier_fault_fail(d, "reset", 0);
	if (rc == 0) {
		done = tier_model_begin(d, TM_SYNC, 0);
		rc = d->td_ops->to_zone_reset(d, zone);
		tier_model_wait(done);
	}
	return tier_count(d, rc, NULL);
}

/* Check the arguments of a zone append. */
static int tier_append_check(const struct tier_dev *d, uint32_t zone,
			     const void *buf, size_t len, const uint64_t *off)
{
	int rc = tier_zone_check(d, zone, "zone append");

	if (rc != 0)
		return rc;
	if ((buf == NULL && len != 0) || off == NULL)
		return err_set(-EINVAL, "device %s: zone append with no buffer "
			       "or no output offset", d->td_path);
	if (len % LIM_ALLOC_UNIT != 0)
		return err_set(-EINVAL, "device %s: zone append of %zu bytes: "
			       "not a multiple of %u", d->td_path, len,
			       LIM_ALLOC_UNIT);
	return 0;
}

/* Append at a zone's wp (see tier.h).  A zero-length append reports the
 * wp in *off and writes nothing. */
int tier_dev_zone_append(struct tier_dev *d, uint32_t zone, const void *buf,
			 size_t len, uint64_t *off)
{
	struct tier_wr w = {.w_append = true, .w_zone = zone};
	struct tier_zone z;
	uint64_t t0 = addb_now_ns();
	int rc;

	PRE(d != NULL);
	rc = tier_append_check(d, zone, buf, len, off);
	if (rc != 0)
		return rc;
	rc = tier_fault_fail(d, "write", (uint64_t)zone * d->td_zone_size);
	if (rc == 0 && len == 0) {
		d->td_ops->to_zone_get(d, zone, &z);
		*off = z.tz_wp;
		return 0;
	}
	w.w_off = UINT64_MAX;
	if (rc == 0)
		rc = tier_wr_run(d, &w, buf, len);
	if (w.w_off != UINT64_MAX)
		*off = w.w_off;
	rc = tier_count(d, rc, &d->td_nr_writes);
	tier_addb(d, ADDB_IO_WRITE, rc, len, t0);
	return rc;
}
