/*
 * file.h — the byte mover of the "file" driver, shared inside tiers/.
 *
 * The file driver's ops (file.c) are thin wrappers over these functions;
 * the smr driver (tiers/smr/) uses them for the bytes of its emulated zones
 * and of real zoned block devices, and adds the zone rules on top — the
 * libfabric pattern of shared base code under several providers.  Not part
 * of the public interface (tier.h).
 */
#ifndef STRATA_TIERS_FILE_FILE_H
#define STRATA_TIERS_FILE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** An open file or block device: a buffered and (where the file system
 *  allows) an O_DIRECT descriptor, and the direct-I/O alignment. */
struct file_dev;

/**
 * Create path (O_EXCL), reserve total bytes with posix_fallocate, write
 * zeros over [head_len, total) when fill is TIER_FILL_ZERO (nothing for
 * TIER_FILL_RESERVE: enum tier_fill, tier.h, already checked by
 * tier_dev_format_opts), write head (head_len bytes, a multiple of 4096, at
 * offset 0) and fsync.  Either way [head_len, total) reads as zeros.  On
 * failure the file is removed.  Fault point "tier.file.format" (-EIO)
 * after the writes.
 */
int file_dev_create(const char *path, uint64_t total, const void *head,
		    size_t head_len, uint32_t fill);

/** Open path for reading and writing (fault point "tier.file.nodirect":
 *  behave as if O_DIRECT were refused).  *out is owned by the caller. */
int file_dev_open(struct file_dev **out, const char *path);

/** Close both descriptors and free fl (NULL allowed).  Does not sync. */
void file_dev_close(struct file_dev *fl);

/**
 * Move len bytes between buf and the file at absolute byte position pos:
 * direct when pos, len and buf are aligned, through an aligned bounce buffer
 * when only buf is not, buffered otherwise.  At most LIM_IO_CHUNK per system
 * call; short transfers and EINTR retried; end of file is -EIO.  path is
 * for messages.
 */
int file_dev_rw(struct file_dev *fl, bool wr, void *buf, size_t len,
		uint64_t pos, const char *path);

/** fdatasync; a failure is remembered and every later call fails -EIO
 *  (fault point "tier.file.sync"). */
int file_dev_sync(struct file_dev *fl, const char *path);

/** True when fl has an O_DIRECT descriptor. */
bool file_dev_direct(const struct file_dev *fl);

/** The file offset and length alignment of direct I/O on fl. */
uint32_t file_dev_off_align(const struct file_dev *fl);

/** The buffered descriptor (for ioctls and fstat). */
int file_dev_fd(const struct file_dev *fl);

#endif
