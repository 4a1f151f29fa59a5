/*
 * nvram.h — what the "pmem2" driver offers beyond tier.h: its map, for
 * zero-copy transfers between the network and NVRAM (cluster mode,
 * docs/data-path.md "Zero-copy units on NVRAM").
 *
 * A strata-server registers the data area of each pmem2 device with its
 * RPC endpoint once (nvram_dev_data), so that RMA moves an object's bytes
 * straight between a client's buffer and the device.  Object requests go
 * through the engine, which allocates the space and then calls
 * tier_dev_write/read with the request's buffer.  A thread about to run
 * such a request installs a transfer hook (nvram_xfer_set): when a pmem2
 * write or read of that thread names a buffer inside the hook's buffer,
 * the driver hands the hook the device address instead of copying, and
 * the hook moves the bytes by RMA (or takes a write over, to move it
 * later).  The space is the engine's freshly allocated, not yet mapped
 * space (out of place), so the pulled bytes are persisted before the
 * commit that maps them, exactly as a copy would have been.
 *
 * Only this driver knows its map; the engine and tier.c are unchanged
 * (their checks — range inside the data area, fault points, device model,
 * counters — run as for any write).
 */
#ifndef STRATA_TIERS_NVRAM_NVRAM_H
#define STRATA_TIERS_NVRAM_NVRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tiers/tier.h"

/** Is d a device of the pmem2 driver? */
bool nvram_dev_is(const struct tier_dev *d);

/** The start of d's data area in its map and its length (the device's
 *  data size): byte off of the data area is at *addr + off.  -EINVAL with
 *  a message when d is not a pmem2 device. */
int nvram_dev_data(struct tier_dev *d, void **addr, uint64_t *len);

/** Make [addr, addr + len) of d's map durable (on DAX libpmem2's persist:
 *  flush and drain; otherwise msync of its pages).  The range must lie in
 *  d's map. */
void nvram_dev_persist(struct tier_dev *d, const void *addr, size_t len);

/**
 * A transfer hook of one thread.  xh_buf .. xh_buf + xh_len is the buffer
 * the engine is given for the request (a real buffer: the hook may decline
 * and let the driver copy through it).
 *
 * xh_write(arg, d, boff, dst, len): the engine writes bytes
 * [boff, boff + len) of the buffer to dst, in d's map.  Return 0 when the
 * hook put them at dst itself (the driver then persists them), 1 when it
 * filled the buffer instead (the driver then copies from it as usual), 2
 * when it takes them over (the driver does nothing: the hook's owner puts
 * the bytes at dst and persists them, nvram_dev_persist(), before the
 * request's commit item is queued — it holds the item until then), or a
 * negative code (the write fails with it).
 *
 * xh_read(arg, d, boff, src, len): the engine reads len bytes at src of
 * d's map into the buffer at boff.  Return 0 when the hook moved them
 * onward itself (the buffer is not filled), 1 to let the driver copy into
 * the buffer, or a negative code.
 */
struct nvram_xfer_hook {
	const char *xh_buf;
	size_t xh_len;
	int (*xh_write)(void *arg, struct tier_dev *d, uint64_t boff,
			void *dst, size_t len);
	int (*xh_read)(void *arg, struct tier_dev *d, uint64_t boff,
		       const void *src, size_t len);
	void *xh_arg;
};

/** Install h for the calling thread (NULL removes it).  The hook must stay
 *  valid until removed; it only sees pmem2 I/O of this thread. */
void nvram_xfer_set(const struct nvram_xfer_hook *h);

#endif
