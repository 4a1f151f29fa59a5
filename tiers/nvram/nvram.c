/*
 * nvram.c — the "pmem2" driver: NVRAM devices as files mapped with libpmem2.
 *
 * The whole file is mapped once at open; writes are a persisting memcpy
 * into the map, reads a plain memcpy out of it.  Page granularity, the
 * weakest guarantee, is accepted, so that it also works on files that are
 * not on a DAX file system (/dev/shm, where embedded mode emulates NVRAM);
 * the mapping gives the strongest it can:
 *
 *  - DAX (CACHE_LINE; with eADR the flushes are redundant, BYTE is not
 *    detected): memcpy uses non-temporal stores or
 *    flushes cache lines (CLWB/CLFLUSHOPT), then fences.  No page cache, no
 *    system call on the data path.
 *  - not DAX (PAGE): memcpy is a libc memcpy into the page cache followed by
 *    msync() of the range, i.e. a synchronous write-back.  On tmpfs that
 *    msync does nothing: the "device" is memory and does not survive reboot.
 *
 * In every case bytes are durable (as far as the medium allows) when the
 * write returns, which is more than tier.h asks; sync only drains.
 *
 * libpmem2's pmem2_map_new() maps over a reservation with MAP_FIXED, first
 * with MAP_SYNC: on a file system that offers MAP_SYNC (ext4, xfs) for a
 * file that is not DAX, the kernel drops the reservation before it refuses
 * the flag, and until libpmem2 maps again without it the range is a hole
 * that any other thread's mmap may take (a malloc arena, a libfabric buffer
 * pool), which the second MAP_FIXED then overwrites with the file: a
 * starting server died with its heap under a device's zeros.  So libpmem2
 * maps only files where its first call cannot fail that way: DAX (MAP_SYNC
 * taken, tried first here without MAP_FIXED) and tmpfs (the flag refused
 * before the reservation is touched).  Any other file is mapped here, never
 * at a fixed address, and written at page granularity by nvram_page_*():
 * memcpy and msync(MS_SYNC) of the pages written, which is all libpmem2
 * does at that granularity.  (pmem2_map_from_existing() does not serve:
 * libpmem2 1.12 then spins in its page persist on msync of 0 bytes, and
 * leaks a thread-local key per map, 1023 maps to a process.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <libpmem2.h>

#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "tiers/nvram/nvram.h"
#include "tiers/tier.h"

/* Driver state of one open device (d->td_priv). */
struct nvram_dev {
	struct pmem2_map *nv_map;
	char *nv_base;             /**< start of the mapped file (ours) */
	size_t nv_size;            /**< bytes mapped */
	pmem2_memcpy_fn nv_memcpy; /**< persisting copy into the map */
	pmem2_persist_fn nv_persist; /**< flush and drain a range */
	pmem2_drain_fn nv_drain;   /**< wait for flushed stores */
	enum pmem2_granularity nv_gran; /**< of the mapping (nvram_map()) */
};

extern const struct tier_ops tier_pmem2_ops;

/* The calling thread's transfer hook (nvram.h), NULL: none. */
static __thread const struct nvram_xfer_hook *nvram_hook;

/* Record a libpmem2 failure: its own message, and an errno for callers.
 * libpmem2 returns either -errno or one of its PMEM2_E_* codes (all below
 * -100000), which have no errno of their own: -EIO then. */
static int nvram_err(int prc, const char *path, const char *what)
{
	int rc = prc > -100000 ? prc : -EIO;

	return err_set(rc, "device %s: pmem2 %s: %s", path, what,
		       pmem2_errormsg());
}

#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif

/* PAGE granularity (not DAX): msync the pages of [p, p + len). */
static void nvram_page_persist(const void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(page - 1);

	if (len == 0)
		return;
	while (msync((void *)a, len + ((uintptr_t)p - a), MS_SYNC) != 0) {
		if (errno == EINTR)
			continue;
		/* what libpmem2 does at page granularity: a write that
		 * cannot be made durable must not be acknowledged, and the
		 * kernel reports a write-back error only once */
		LOG_ERROR("nvram: msync of %zu bytes at %p: %s: aborting",
			  len, p, strerror(errno));
		abort();
	}
}

static void *nvram_page_memcpy(void *dst, const void *src, size_t len,
			       unsigned flags)
{
	memcpy(dst, src, len);
	if (!(flags & PMEM2_F_MEM_NOFLUSH))
		nvram_page_persist(dst, len);
	return dst;
}

static void nvram_page_drain(void)
{
}

/* The write functions of a mapping: libpmem2's for its own maps, the
 * page ones for a file mapped here (map NULL). */
static void nvram_fns(struct pmem2_map *map, pmem2_memcpy_fn *cpy,
		      pmem2_persist_fn *persist, pmem2_drain_fn *drain)
{
	if (map == NULL) {
		*cpy = nvram_page_memcpy;
		*persist = nvram_page_persist;
		*drain = nvram_page_drain;
		return;
	}
	*cpy = pmem2_get_memcpy_fn(map);
	*persist = pmem2_get_persist_fn(map);
	*drain = pmem2_get_drain_fn(map);
}

/* Map the whole file behind fd.  libpmem2 maps it (pmem2_map_new()) where
 * that leaves no hole (see the top of this file): a file that takes
 * MAP_SYNC (DAX), or one on tmpfs (which refuses MAP_SYNC before touching
 * the reservation).  Any other file (not DAX, on ext4, xfs...) is mapped
 * here, never at a fixed address, with no libpmem2 map (*map NULL): page
 * granularity, written with nvram_page_*().  *base, *len and *granp
 * describe the mapping; nvram_unmap() removes it. */
static int nvram_map(int fd, const char *path, struct pmem2_map **map,
		     char **base, size_t *len, enum pmem2_granularity *granp)
{
	struct pmem2_config *cfg = NULL;
	struct pmem2_source *src = NULL;
	struct statfs sf;
	struct stat st;
	bool lib;
	void *p;
	int rc;

	*map = NULL;
	*base = NULL;
	if (fstat(fd, &st) != 0)
		return err_set(-errno, "device %s: fstat: %s", path,
			       strerror(errno));
	if (st.st_size <= 0)
		return err_set(-ST_ECORRUPT, "device %s: empty file", path);
	*len = (size_t)st.st_size;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE,
		 MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
	lib = p != MAP_FAILED ||
	      (fstatfs(fd, &sf) == 0 && sf.f_type == TMPFS_MAGIC);
	if (p != MAP_FAILED)
		munmap(p, *len);
	if (!lib) {
		p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 0);
		if (p == MAP_FAILED)
			return err_set(-errno, "device %s: mmap of %zu "
				       "bytes: %s", path, *len,
				       strerror(errno));
		*base = p;
		*granp = PMEM2_GRANULARITY_PAGE;
		return 0;
	}
	rc = pmem2_config_new(&cfg);
	if (rc != 0) {
		rc = nvram_err(rc, path, "config");
		goto out;
	}
	rc = pmem2_source_from_fd(&src, fd);
	if (rc != 0) {
		rc = nvram_err(rc, path, "source");
		goto out_config;
	}
	/* Test builds reach the error path by leaving the granularity unset:
	 * a real libpmem2 failure, with libpmem2's own message. */
	if (!FAULT_HIT("tier.pmem2.map"))
		rc = pmem2_config_set_required_store_granularity(
			cfg, PMEM2_GRANULARITY_PAGE);
	if (rc == 0)
		rc = pmem2_map_new(map, cfg, src);
	if (rc != 0)
		rc = nvram_err(rc, path, "map");
	pmem2_source_delete(&src);
out_config:
	pmem2_config_delete(&cfg);
out:
	if (rc != 0)
		return rc;
	*base = pmem2_map_get_address(*map);
	*len = pmem2_map_get_size(*map);
	*granp = pmem2_map_get_store_granularity(*map);
	return 0;
}

/* Remove a mapping of nvram_map(). */
static void nvram_unmap(struct pmem2_map **map, char *base, size_t len)
{
	if (*map != NULL)
		pmem2_map_delete(map);
	else if (base != NULL)
		munmap(base, len);
}

/* File size of a device: superblock area plus data, rounded up to the page
 * size because libpmem2 maps whole pages of the file. */
static uint64_t nvram_file_size(const struct tier_sb *sb)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t need = sb->sb_data_off + sb->sb_data_size;

	return (need + page - 1) / page * page;
}

/* Size the new file, map it and store the superblock with the persisting
 * memcpy. */
static int nvram_format_fill(int fd, const char *path,
			     const struct tier_sb *sb)
{
	uint64_t size = nvram_file_size(sb);
	struct pmem2_map *map = NULL;
	enum pmem2_granularity gran;
	pmem2_memcpy_fn cpy;
	pmem2_persist_fn persist;
	pmem2_drain_fn drain;
	char *base = NULL;
	size_t len = 0;
	int rc;

	rc = -posix_fallocate(fd, 0, (off_t)size);
	if (rc != 0) {
		rc = err_set(rc, "device %s: cannot allocate %llu bytes: %s",
			     path, (unsigned long long)size, strerror(-rc));
		goto out;
	}
	rc = nvram_map(fd, path, &map, &base, &len, &gran);
	if (rc != 0)
		goto out;
	nvram_fns(map, &cpy, &persist, &drain);
	cpy(base, sb, sizeof *sb, 0);
	if (FAULT_HIT("tier.pmem2.format"))
		rc = err_set(-EIO, "device %s: injected format error", path);
	nvram_unmap(&map, base, len);
out:
	return rc;
}

/* to_format: create path (O_EXCL), size and fill it, and fsync it so that
 * its size and allocation are durable too (the parent directory is synced
 * by tier_dev_format).  On failure the new file is removed. */
static int nvram_format(const char *path, struct tier_sb *sb,
			const struct tier_format_opts *o)
{
	int fd, rc;

	(void)o;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = err_set(-errno, "device %s: cannot create: %s", path,
			     strerror(errno));
		goto out;
	}
	rc = nvram_format_fill(fd, path, sb);
	if (rc == 0 && fsync(fd) != 0)
		rc = err_set(-errno, "device %s: fsync: %s", path,
			     strerror(errno));
	if (rc != 0)
		goto out_remove;
	close(fd);
	goto out;
out_remove:
	unlink(path);
	close(fd);
out:
	return rc;
}

/* Fill nv from a fresh map and check that it covers the data area the
 * (already checked) superblock in d->td_sb describes. */
static int nvram_attach(struct tier_dev *d, struct nvram_dev *nv)
{
	uint64_t need = d->td_sb.sb_data_off + d->td_sb.sb_data_size;

	nvram_fns(nv->nv_map, &nv->nv_memcpy, &nv->nv_persist, &nv->nv_drain);
	if (nv->nv_size < need)
		return err_set(-ST_ECORRUPT, "device %s: mapped %zu bytes, "
			       "superblock needs %llu", d->td_path,
			       nv->nv_size, (unsigned long long)need);
	LOG_DEBUG("device %s: %s map of %zu bytes, granularity %d",
		  d->td_path, nv->nv_map != NULL ? "pmem2" : "own",
		  nv->nv_size, (int)nv->nv_gran);
	return 0;
}

/* to_open: map the file.  The descriptor is closed once mapped (the map
 * keeps the file).  td_direct is true: on DAX no page cache is involved;
 * on /dev/shm the page cache is the device. */
static int nvram_open(struct tier_dev *d, const char *path)
{
	struct nvram_dev *nv;
	int fd, rc;

	nv = calloc(1, sizeof *nv);
	if (nv == NULL) {
		rc = err_set(-ENOMEM, "device %s: no memory", path);
		goto out;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = err_set(-errno, "device %s: cannot open: %s", path,
			     strerror(errno));
		goto out_free;
	}
	rc = nvram_map(fd, path, &nv->nv_map, &nv->nv_base, &nv->nv_size,
		       &nv->nv_gran);
	close(fd);
	if (rc != 0)
		goto out_free;
	rc = nvram_attach(d, nv);
	if (rc != 0)
		goto out_unmap;
	d->td_priv = nv;
	d->td_direct = true;
	goto out;
out_unmap:
	nvram_unmap(&nv->nv_map, nv->nv_base, nv->nv_size);
out_free:
	free(nv);
out:
	return rc;
}

/* to_close: unmap.  Every write was already persisted. */
static void nvram_close(struct tier_dev *d)
{
	struct nvram_dev *nv = d->td_priv;

	if (nv == NULL)
		return;
	nvram_unmap(&nv->nv_map, nv->nv_base, nv->nv_size);
	free(nv);
	d->td_priv = NULL;
}

/* to_read_sb: the superblock straight from the map. */
static int nvram_read_sb(struct tier_dev *d, struct tier_sb *sb)
{
	struct nvram_dev *nv = d->td_priv;

	memcpy(sb, nv->nv_base, sizeof *sb);
	return 0;
}

/* The offset of [buf, buf + len) in the thread's hook buffer, or -1 when
 * there is no hook or buf is not inside its buffer. */
static int64_t nvram_hook_off(const struct nvram_xfer_hook *h, const void *buf,
			      size_t len)
{
	const char *p = buf;

	if (h == NULL || p < h->xh_buf || len > h->xh_len ||
	    (size_t)(p - h->xh_buf) > h->xh_len - len)
		return -1;
	return (int64_t)(p - h->xh_buf);
}

/* to_write: persisting memcpy (flags 0: flush and drain before return; see
 * the top of the file for what that means per granularity).  tier.c has
 * checked the range against the data area, and nvram_attach that the map
 * covers it.  With a transfer hook over buf (nvram.h), the hook may put
 * the bytes in place itself: they are persisted here all the same. */
static int nvram_write(struct tier_dev *d, uint64_t off, const void *buf,
		       size_t len)
{
	struct nvram_dev *nv = d->td_priv;
	const struct nvram_xfer_hook *h = nvram_hook;
	char *dst = nv->nv_base + d->td_sb.sb_data_off + off;
	int64_t boff = nvram_hook_off(h, buf, len);
	int rc = 1;

	if (boff >= 0 && h->xh_write != NULL)
		rc = h->xh_write(h->xh_arg, d, (uint64_t)boff, dst, len);
	if (rc < 0)
		return rc;
	if (rc == 0)
		nv->nv_persist(dst, len);
	else if (rc == 1)
		nv->nv_memcpy(dst, buf, len, 0);
	return 0;
}

/* to_read: plain memcpy out of the map, or the hook moves the bytes on. */
static int nvram_read(struct tier_dev *d, uint64_t off, void *buf, size_t len)
{
	struct nvram_dev *nv = d->td_priv;
	const struct nvram_xfer_hook *h = nvram_hook;
	const char *src = nv->nv_base + d->td_sb.sb_data_off + off;
	int64_t boff = nvram_hook_off(h, buf, len);
	int rc = 1;

	if (boff >= 0 && h->xh_read != NULL)
		rc = h->xh_read(h->xh_arg, d, (uint64_t)boff, src, len);
	if (rc < 0)
		return rc;
	if (rc == 1)
		memcpy(buf, src, len);
	return 0;
}

/* to_sync: writes persist as they complete, so only drain (a store fence
 * on DAX, nothing on page granularity). */
static int nvram_sync(struct tier_dev *d)
{
	struct nvram_dev *nv = d->td_priv;

	nv->nv_drain();
	return 0;
}

bool nvram_dev_is(const struct tier_dev *d)
{
	return d != NULL && d->td_ops == &tier_pmem2_ops;
}

int nvram_dev_data(struct tier_dev *d, void **addr, uint64_t *len)
{
	struct nvram_dev *nv;

	if (!nvram_dev_is(d) || d->td_priv == NULL)
		return err_set(-EINVAL, "device %s: not an open pmem2 device",
			       d != NULL ? d->td_path : "(none)");
	nv = d->td_priv;
	*addr = nv->nv_base + d->td_sb.sb_data_off;
	*len = d->td_sb.sb_data_size;
	return 0;
}

void nvram_dev_persist(struct tier_dev *d, const void *addr, size_t len)
{
	struct nvram_dev *nv = d->td_priv;

	nv->nv_persist(addr, len);
}

void nvram_xfer_set(const struct nvram_xfer_hook *h)
{
	nvram_hook = h;
}

/* The driver table, reached through tier_driver_for/find (tier.c). */
const struct tier_ops tier_pmem2_ops = {
	.to_name = "pmem2",
	.to_format = nvram_format,
	.to_open = nvram_open,
	.to_close = nvram_close,
	.to_read_sb = nvram_read_sb,
	.to_write = nvram_write,
	.to_read = nvram_read,
	.to_sync = nvram_sync,
};
