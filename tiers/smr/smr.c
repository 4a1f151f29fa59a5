/*
 * smr.c — the "smr" driver: zoned, sequential-write-required devices.
 *
 * The data area is cut into zones of a power-of-two size; bytes past the
 * last whole zone belong to no zone.  Each zone has a write pointer (wp):
 * a write must start exactly at its zone's wp and end inside the zone, and
 * advances the wp; a reset moves the wp back to the zone start.  Bytes at
 * or above a wp read as zeros, whatever the medium holds there.
 *
 * Two back ends, one set of rules (this file):
 *
 *  - Emulation on a regular file (tested).  The file is laid out as
 *
 *      [0, 4096)            superblock area (tier.c's superblock)
 *      [4096, 8192)         zone table header (struct smr_hdr)
 *      [8192, sb_data_off)  one little-endian u64 per zone: its persisted
 *                           wp in bytes from the zone start, 4 KiB padded
 *      [sb_data_off, ...)   the data area
 *
 *    Persisted wps only ever cover durable data: tier_dev_sync takes a
 *    snapshot of the live wps, fdatasyncs the data, then writes the changed
 *    table pages and fdatasyncs again; a zone reset writes its entry as 0
 *    and fdatasyncs before it returns.  After a crash a persisted wp may be
 *    behind unsynced writes (those are lost: they read as zeros and the
 *    zone continues from the persisted wp), never behind synced data and
 *    never ahead of durable data.  Table pages are built from that image
 *    only (sm_tab), never from the live wps of other zones.
 *
 *  - A real host-managed or host-aware zoned block device (smr_blk.c,
 *    compiled but untested here): the device keeps the wps itself.
 *
 * Writers and appenders of a zone serialise on its stripe lock (the write
 * runs under it, so a wp never covers bytes not yet written); readers take
 * no lock.  Sync and reset serialise on the table lock, taken before any
 * stripe lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <isa-l/crc64.h>

#include "core/errors.h"
#include "core/log.h"
#include "tiers/smr/smr_internal.h"

#define SMR_HDR_MAGIC 0x5354524154415a54ull /* "STRATAZT" */
#define SMR_HDR_VERSION 1u
#define SMR_HDR_OFF LIM_DEV_SB_SIZE              /* file offset */
#define SMR_TAB_OFF (2ull * LIM_DEV_SB_SIZE)     /* file offset */
#define SMR_PAGE 4096u

/* The zone table header, little-endian, at file offset SMR_HDR_OFF.
 * zh_crc is crc64_ecma_refl of the struct with zh_crc = 0. */
struct smr_hdr {
	uint64_t zh_magic;     /**< SMR_HDR_MAGIC */
	uint32_t zh_version;   /**< SMR_HDR_VERSION */
	uint32_t zh_zone_nr;   /**< whole zones in the data area */
	uint64_t zh_zone_size; /**< bytes per zone, a power of two */
	uint64_t zh_tab_off;   /**< file offset of the entries: 8192 */
	uint64_t zh_crc;
};
_Static_assert(sizeof(struct smr_hdr) == 40, "zone table header size");

/* ------------------------------------------------------------ geometry */

/* The crc of a header, its crc field taken as zero. */
static uint64_t smr_hdr_crc(const struct smr_hdr *h)
{
	struct smr_hdr tmp = *h;

	tmp.zh_crc = 0;
	return crc64_ecma_refl(0, (const unsigned char *)&tmp, sizeof tmp);
}

/* Bytes of wp entries for nr zones, padded to whole pages. */
static size_t smr_tab_bytes(uint32_t nr)
{
	return ((size_t)nr * 8 + SMR_PAGE - 1) / SMR_PAGE * SMR_PAGE;
}

/* The zone size a format uses: the caller's, checked, or the default
 * shrunk for small devices (see struct tier_format_opts). */
static int smr_zone_size_pick(const char *path, uint64_t data_size,
			      uint64_t want, uint64_t *out)
{
	uint64_t zs = LIM_SMR_ZONE_DEFAULT;

	if (want == 0) {
		while (zs > LIM_SMR_ZONE_MIN &&
		       data_size / zs < LIM_SMR_ZONES_MIN_DEFAULT)
			zs >>= 1;
		want = zs;
	}
	if ((want & (want - 1)) != 0 || want < LIM_SMR_ZONE_MIN ||
	    want > LIM_SMR_ZONE_MAX || want > data_size)
		return err_set(-EINVAL, "device %s: zone size %llu must be a "
			       "power of two in %llu..%llu and at most the "
			       "data size %llu", path, (unsigned long long)want,
			       LIM_SMR_ZONE_MIN, LIM_SMR_ZONE_MAX,
			       (unsigned long long)data_size);
	*out = want;
	return 0;
}

/* Zone index of a data-area offset, and a zone's first byte. */
static inline uint32_t smr_zone_of(const struct smr_dev *sm, uint64_t off)
{
	uint64_t z = off >> sm->sm_zone_shift;

	return z < sm->sm_zone_nr ? (uint32_t)z : UINT32_MAX;
}

static inline uint64_t smr_zone_start(const struct smr_dev *sm, uint32_t z)
{
	return (uint64_t)z << sm->sm_zone_shift;
}

static inline uint64_t smr_zone_bytes(const struct smr_dev *sm)
{
	return 1ull << sm->sm_zone_shift;
}

static inline uint64_t smr_wp_load(const struct smr_dev *sm, uint32_t z)
{
	return __atomic_load_n(&sm->sm_wp[z], __ATOMIC_ACQUIRE);
}

/* --------------------------------------------------------------- format */

/* Format the emulation: a file with the superblock, the zone table header
 * and an all-zero (all zones empty) table before the data area.  Raises
 * sb_data_off past the table and re-crcs the superblock.  The head is
 * always written; the data area is zero-filled or only reserved as
 * o->tf_fill says.  Correctness does not depend on it (smr_read_piece
 * never reads the medium at or above a wp: zeros come from memory, and a
 * wp only passes bytes appended and synced), only the speed of a zone's
 * first appends does, as for the file driver (enum tier_fill). */
static int smr_format_file(const char *path, struct tier_sb *sb,
			   const struct tier_format_opts *o)
{
	struct smr_hdr h = {.zh_magic = SMR_HDR_MAGIC,
			    .zh_version = SMR_HDR_VERSION,
			    .zh_tab_off = SMR_TAB_OFF};
	uint8_t *head;
	uint64_t zs = 0;
	int rc;

	rc = smr_zone_size_pick(path, sb->sb_data_size, o->tf_zone_size, &zs);
	if (rc != 0)
		return rc;
	h.zh_zone_size = zs;
	h.zh_zone_nr = (uint32_t)(sb->sb_data_size / zs);
	h.zh_crc = smr_hdr_crc(&h);
	sb->sb_data_off = SMR_TAB_OFF + smr_tab_bytes(h.zh_zone_nr);
	sb->sb_crc = tier_sb_crc(sb);
	head = calloc(1, SMR_TAB_OFF);
	if (head == NULL)
		return err_set(-ENOMEM, "device %s: no memory", path);
	memcpy(head, sb, sizeof *sb);
	memcpy(head + SMR_HDR_OFF, &h, sizeof h);
	rc = file_dev_create(path, sb->sb_data_off + sb->sb_data_size, head,
			     SMR_TAB_OFF, o->tf_fill);
	free(head);
	if (rc == 0)
		LOG_INFO("device %s: %u zones of %llu bytes (emulated)", path,
			 h.zh_zone_nr, (unsigned long long)zs);
	return rc;
}

/* to_format: a zoned block device in place, otherwise a new file. */
static int smr_format(const char *path, struct tier_sb *sb,
		      const struct tier_format_opts *o)
{
	struct stat st;

	if (stat(path, &st) == 0 && S_ISBLK(st.st_mode))
		return smr_blk_format(path, sb, o);
	return smr_format_file(path, sb, o);
}

/* ------------------------------------------------------------ open/close */

/* Free sm and everything it holds (any part may be missing). */
static void smr_free(struct smr_dev *sm)
{
	if (sm == NULL)
		return;
	file_dev_close(sm->sm_fl);
	for (uint32_t i = 0; i < LIM_SMR_LOCKS; i++)
		pthread_mutex_destroy(&sm->sm_locks[i]);
	pthread_mutex_destroy(&sm->sm_tab_lock);
	free(sm->sm_wp);
	free(sm->sm_tab);
	free(sm->sm_snap);
	free(sm->sm_dirty);
	free(sm);
}

/* A new state with its locks; the rest zero. */
static struct smr_dev *smr_alloc(void)
{
	struct smr_dev *sm = calloc(1, sizeof *sm);

	if (sm == NULL)
		return NULL;
	for (uint32_t i = 0; i < LIM_SMR_LOCKS; i++)
		pthread_mutex_init(&sm->sm_locks[i], NULL);
	pthread_mutex_init(&sm->sm_tab_lock, NULL);
	return sm;
}

/* Read and check the zone table header against the superblock. */
static int smr_hdr_load(struct tier_dev *d, struct smr_dev *sm,
			struct smr_hdr *h)
{
	const struct tier_sb *sb = &d->td_sb;
	int rc;

	rc = file_dev_rw(sm->sm_fl, false, h, sizeof *h, SMR_HDR_OFF,
			 d->td_path);
	if (rc != 0)
		return rc;
	if (h->zh_magic != SMR_HDR_MAGIC || h->zh_version != SMR_HDR_VERSION ||
	    h->zh_crc != smr_hdr_crc(h))
		return err_set(-ST_ECORRUPT, "device %s: zone table header "
			       "damaged (magic, version or crc)", d->td_path);
	if ((h->zh_zone_size & (h->zh_zone_size - 1)) != 0 ||
	    h->zh_zone_size < LIM_SMR_ZONE_MIN ||
	    h->zh_zone_size > LIM_SMR_ZONE_MAX ||
	    h->zh_zone_nr != sb->sb_data_size / h->zh_zone_size ||
	    h->zh_tab_off != SMR_TAB_OFF ||
	    sb->sb_data_off != SMR_TAB_OFF + smr_tab_bytes(h->zh_zone_nr))
		return err_set(-ST_ECORRUPT, "device %s: zone table "
			       "geometry (zone size %llu, %u zones) does not "
			       "match the superblock", d->td_path,
			       (unsigned long long)h->zh_zone_size,
			       h->zh_zone_nr);
	return 0;
}

/* Allocate the emulation's arrays for nr zones: live wps, the table
 * image, sync's snapshot and the dirty page flags. */
static int smr_arrays(struct tier_dev *d, struct smr_dev *sm, uint32_t nr)
{
	void *tab = NULL;

	sm->sm_zone_nr = nr;
	sm->sm_wp = calloc(nr, sizeof *sm->sm_wp);
	if (sm->sm_wp == NULL)
		goto nomem;
	sm->sm_tab_bytes = smr_tab_bytes(nr);
	if (posix_memalign(&tab, SMR_PAGE, sm->sm_tab_bytes) != 0)
		goto nomem;
	sm->sm_tab = tab;
	sm->sm_snap = calloc(nr, sizeof *sm->sm_snap);
	sm->sm_dirty = calloc(sm->sm_tab_bytes / SMR_PAGE, 1);
	if (sm->sm_snap == NULL || sm->sm_dirty == NULL)
		goto nomem;
	return 0;
nomem:
	return err_set(-ENOMEM, "device %s: no memory for %u zones",
		       d->td_path, nr);
}

/* Load the persisted wps and check each: inside its zone and a multiple
 * of the allocation unit (a torn page still holds whole entries, old or
 * new, and both pass). */
static int smr_tab_load(struct tier_dev *d, struct smr_dev *sm)
{
	uint64_t zs = smr_zone_bytes(sm);
	int rc;

	rc = file_dev_rw(sm->sm_fl, false, sm->sm_tab, sm->sm_tab_bytes,
			 SMR_TAB_OFF, d->td_path);
	if (rc != 0)
		return rc;
	for (uint32_t z = 0; z < sm->sm_zone_nr; z++) {
		if (sm->sm_tab[z] > zs || sm->sm_tab[z] % LIM_ALLOC_UNIT != 0)
			return err_set(-ST_ECORRUPT, "device %s: zone %u: "
				       "persisted write pointer %llu is not in "
				       "the zone (%llu bytes)", d->td_path, z,
				       (unsigned long long)sm->sm_tab[z],
				       (unsigned long long)zs);
		sm->sm_wp[z] = sm->sm_tab[z];
	}
	return 0;
}

/* Open the emulation: header, geometry, wp table. */
static int smr_open_file(struct tier_dev *d, struct smr_dev *sm)
{
	struct smr_hdr h;
	int rc;

	rc = smr_hdr_load(d, sm, &h);
	if (rc != 0)
		return rc;
	sm->sm_zone_shift = (uint32_t)__builtin_ctzll(h.zh_zone_size);
	rc = smr_arrays(d, sm, h.zh_zone_nr);
	if (rc == 0)
		rc = smr_tab_load(d, sm);
	return rc;
}

/* to_open: the bytes through the file driver's mover, then the zones
 * from the zone table (file) or from the device (zoned block device). */
static int smr_open(struct tier_dev *d, const char *path)
{
	struct smr_dev *sm = smr_alloc();
	int rc;

	if (sm == NULL)
		return err_set(-ENOMEM, "device %s: no memory", path);
	rc = file_dev_open(&sm->sm_fl, path);
	if (rc != 0)
		goto out_free;
	sm->sm_blk = smr_blk_is_zoned(path);
	rc = sm->sm_blk ? smr_blk_open(d, sm) : smr_open_file(d, sm);
	if (rc != 0)
		goto out_free;
	d->td_priv = sm;
	d->td_direct = file_dev_direct(sm->sm_fl);
	d->td_zone_size = smr_zone_bytes(sm);
	d->td_zone_nr = sm->sm_zone_nr;
	LOG_DEBUG("device %s: %u zones of %llu bytes, %s", path,
		  sm->sm_zone_nr, (unsigned long long)d->td_zone_size,
		  sm->sm_blk ? "zoned block device" : "emulated");
	return 0;
out_free:
	smr_free(sm);
	return rc;
}

/* to_close: free the state; nothing is synced. */
static void smr_close(struct tier_dev *d)
{
	smr_free(d->td_priv);
	d->td_priv = NULL;
}

/* to_read_sb: the superblock at offset 0. */
static int smr_read_sb(struct tier_dev *d, struct tier_sb *sb)
{
	struct smr_dev *sm = d->td_priv;

	return file_dev_rw(sm->sm_fl, false, sb, sizeof *sb, 0, d->td_path);
}

/* ------------------------------------------------------------ data path */

/* Write len bytes at the wp of zone z, which the caller has locked and
 * checked; the wp moves only once the bytes are written. */
static int smr_put_locked(struct tier_dev *d, struct smr_dev *sm, uint32_t z,
			  const void *buf, size_t len)
{
	uint64_t wp = sm->sm_wp[z];
	uint64_t pos = d->td_sb.sb_data_off + smr_zone_start(sm, z) + wp;
	int rc;

	rc = file_dev_rw(sm->sm_fl, true, (void *)buf, len, pos, d->td_path);
	if (rc == 0)
		__atomic_store_n(&sm->sm_wp[z], wp + len, __ATOMIC_RELEASE);
	else if (sm->sm_blk)
		smr_blk_refresh(d, sm, z);
	return rc;
}

/* Check a plain write against the wp rule of its zone (locked). */
static int smr_write_check(struct tier_dev *d, struct smr_dev *sm,
			   uint32_t z, uint64_t off, size_t len)
{
	uint64_t start = smr_zone_start(sm, z);
	uint64_t wp = start + sm->sm_wp[z];
	uint64_t end = start + smr_zone_bytes(sm);

	if (off != wp)
		return err_set(-EINVAL, "device %s: zone %u: write of %zu "
			       "bytes at offset %llu is not at the write "
			       "pointer %llu", d->td_path, z, len,
			       (unsigned long long)off,
			       (unsigned long long)wp);
	if (len > end - off)
		return err_set(-EINVAL, "device %s: zone %u: write of %zu "
			       "bytes at offset %llu (write pointer %llu) "
			       "crosses the zone end %llu", d->td_path, z, len,
			       (unsigned long long)off,
			       (unsigned long long)wp,
			       (unsigned long long)end);
	return 0;
}

/* to_write: only at the zone's wp, only inside the zone. */
static int smr_write(struct tier_dev *d, uint64_t off, const void *buf,
		     size_t len)
{
	struct smr_dev *sm = d->td_priv;
	uint32_t z = smr_zone_of(sm, off);
	int rc;

	if (z == UINT32_MAX)
		return err_set(-EINVAL, "device %s: write at offset %llu: past "
			       "the last whole zone (%u zones of %llu bytes)",
			       d->td_path, (unsigned long long)off,
			       sm->sm_zone_nr,
			       (unsigned long long)smr_zone_bytes(sm));
	pthread_mutex_lock(smr_lock(sm, z));
	rc = smr_write_check(d, sm, z, off, len);
	if (rc == 0)
		rc = smr_put_locked(d, sm, z, buf, len);
	pthread_mutex_unlock(smr_lock(sm, z));
	return rc;
}

/* to_zone_append: at the wp, wherever it is, if the zone has room. */
static int smr_zone_append(struct tier_dev *d, uint32_t z, const void *buf,
			   size_t len, uint64_t *off)
{
	struct smr_dev *sm = d->td_priv;
	uint64_t wp;
	int rc = 0;

	pthread_mutex_lock(smr_lock(sm, z));
	wp = sm->sm_wp[z];
	if (len > smr_zone_bytes(sm) - wp) {
		rc = err_set(-ENOSPC, "device %s: zone %u: append of %zu bytes "
			     "does not fit (write pointer %llu, %llu bytes "
			     "left)", d->td_path, z, len,
			     (unsigned long long)(smr_zone_start(sm, z) + wp),
			     (unsigned long long)(smr_zone_bytes(sm) - wp));
		goto out;
	}
	*off = smr_zone_start(sm, z) + wp;
	rc = smr_put_locked(d, sm, z, buf, len);
out:
	pthread_mutex_unlock(smr_lock(sm, z));
	return rc;
}

/* Read the part of [off, off + len) that lies in zone z (or in no zone,
 * z == UINT32_MAX): the bytes below the wp from the medium, zeros above. */
static int smr_read_piece(struct tier_dev *d, struct smr_dev *sm, uint32_t z,
			  uint64_t off, uint8_t *buf, size_t len)
{
	uint64_t wp;
	size_t valid = 0;
	int rc = 0;

	if (z != UINT32_MAX) {
		wp = smr_zone_start(sm, z) + smr_wp_load(sm, z);
		if (off < wp)
			valid = wp - off < len ? (size_t)(wp - off) : len;
	}
	if (valid > 0)
		rc = file_dev_rw(sm->sm_fl, false, buf, valid,
				 d->td_sb.sb_data_off + off, d->td_path);
	if (rc == 0)
		memset(buf + valid, 0, len - valid);
	return rc;
}

/* to_read: zone by zone, zeros at and above each wp. */
static int smr_read(struct tier_dev *d, uint64_t off, void *buf, size_t len)
{
	struct smr_dev *sm = d->td_priv;
	uint8_t *p = buf;
	int rc = 0;

	while (len > 0 && rc == 0) {
		uint32_t z = smr_zone_of(sm, off);
		size_t n = len;

		if (z != UINT32_MAX &&
		    smr_zone_start(sm, z) + smr_zone_bytes(sm) - off < n)
			n = (size_t)(smr_zone_start(sm, z) +
				     smr_zone_bytes(sm) - off);
		rc = smr_read_piece(d, sm, z, off, p, n);
		off += n;
		p += n;
		len -= n;
	}
	return rc;
}

/* to_zone_get: the zone as it is now. */
static void smr_zone_get(struct tier_dev *d, uint32_t z, struct tier_zone *out)
{
	struct smr_dev *sm = d->td_priv;
	uint64_t wp = smr_wp_load(sm, z);

	memset(out, 0, sizeof *out);
	out->tz_start = smr_zone_start(sm, z);
	out->tz_len = smr_zone_bytes(sm);
	out->tz_wp = out->tz_start + wp;
	out->tz_cond = wp == 0 ? TZ_EMPTY :
		       wp == smr_zone_bytes(sm) ? TZ_FULL : TZ_OPEN;
}

/* ------------------------------------------------- persistence (emulation) */

/* Write the dirty pages of the table image and clear their flags.  The
 * caller holds the table lock and fdatasyncs afterwards.  *wrote tells
 * whether anything was written. */
static int smr_tab_flush(struct tier_dev *d, struct smr_dev *sm, bool *wrote)
{
	size_t pages = sm->sm_tab_bytes / SMR_PAGE;
	int rc = 0;

	*wrote = false;
	for (size_t i = 0; i < pages && rc == 0; i++) {
		if (!sm->sm_dirty[i])
			continue;
		rc = file_dev_rw(sm->sm_fl, true,
				 (uint8_t *)sm->sm_tab + i * SMR_PAGE, SMR_PAGE,
				 SMR_TAB_OFF + i * SMR_PAGE, d->td_path);
		if (rc == 0) {
			sm->sm_dirty[i] = 0;
			*wrote = true;
		}
	}
	return rc;
}

/* Record a new persisted value for zone z in the image (table lock). */
static void smr_tab_set(struct smr_dev *sm, uint32_t z, uint64_t wp)
{
	if (sm->sm_tab[z] == wp)
		return;
	sm->sm_tab[z] = wp;
	sm->sm_dirty[(size_t)z * 8 / SMR_PAGE] = 1;
}

/* Emulation sync: snapshot the live wps, make the data durable, then the
 * snapshot.  Every wp in the image thus covers durable data only. */
static int smr_sync_file(struct tier_dev *d, struct smr_dev *sm)
{
	bool wrote = false;
	int rc;

	pthread_mutex_lock(&sm->sm_tab_lock);
	for (uint32_t z = 0; z < sm->sm_zone_nr; z++)
		sm->sm_snap[z] = smr_wp_load(sm, z);
	rc = file_dev_sync(sm->sm_fl, d->td_path);
	if (rc != 0)
		goto out;
	for (uint32_t z = 0; z < sm->sm_zone_nr; z++)
		smr_tab_set(sm, z, sm->sm_snap[z]);
	rc = smr_tab_flush(d, sm, &wrote);
	if (rc == 0 && wrote)
		rc = file_dev_sync(sm->sm_fl, d->td_path);
out:
	pthread_mutex_unlock(&sm->sm_tab_lock);
	return rc;
}

/* to_sync: data and write pointers. */
static int smr_sync(struct tier_dev *d)
{
	struct smr_dev *sm = d->td_priv;

	if (sm->sm_blk)
		return file_dev_sync(sm->sm_fl, d->td_path);
	return smr_sync_file(d, sm);
}

/* Emulation reset of zone z (table lock and stripe lock held): persist a
 * wp of 0 durably, then move the live wp.  On failure the entry stays
 * dirty so the next sync rewrites whatever the image holds. */
static int smr_reset_file(struct tier_dev *d, struct smr_dev *sm, uint32_t z)
{
	uint64_t old = sm->sm_tab[z];
	bool wrote;
	int rc;

	smr_tab_set(sm, z, 0);
	sm->sm_dirty[(size_t)z * 8 / SMR_PAGE] = 1;
	rc = smr_tab_flush(d, sm, &wrote);
	if (rc == 0)
		rc = file_dev_sync(sm->sm_fl, d->td_path);
	if (rc != 0) {
		smr_tab_set(sm, z, old);
		sm->sm_dirty[(size_t)z * 8 / SMR_PAGE] = 1;
	}
	return rc;
}

/* to_zone_reset: wait for the zone's writers, reset, then move the wp. */
static int smr_zone_reset(struct tier_dev *d, uint32_t z)
{
	struct smr_dev *sm = d->td_priv;
	int rc;

	pthread_mutex_lock(&sm->sm_tab_lock);
	pthread_mutex_lock(smr_lock(sm, z));
	rc = sm->sm_blk ? smr_blk_reset(d, sm, z) : smr_reset_file(d, sm, z);
	if (rc == 0)
		__atomic_store_n(&sm->sm_wp[z], 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(smr_lock(sm, z));
	pthread_mutex_unlock(&sm->sm_tab_lock);
	return rc;
}

/* The driver table, reached through tier_driver_for/find (tier.c). */
const struct tier_ops tier_smr_ops = {
	.to_name = "smr",
	.to_format = smr_format,
	.to_open = smr_open,
	.to_close = smr_close,
	.to_read_sb = smr_read_sb,
	.to_write = smr_write,
	.to_read = smr_read,
	.to_sync = smr_sync,
	.to_zone_get = smr_zone_get,
	.to_zone_reset = smr_zone_reset,
	.to_zone_append = smr_zone_append,
};
