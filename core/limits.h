/*
 * limits.h — every hard limit of Strata in one place, each with its reason.
 * Public limits (block sizes, key and value sizes, vector lengths) are in
 * clovis/clovis.h; this file holds the engine's own.
 */
#ifndef STRATA_CORE_LIMITS_H
#define STRATA_CORE_LIMITS_H

#include "clovis/clovis.h"

/* Space on devices is handed out in units of 512 B: the smallest block size,
 * and the O_DIRECT alignment of the file systems we run on (checked at open;
 * smaller-aligned I/O falls back to buffered I/O plus fdatasync). */
#define LIM_ALLOC_UNIT_SHIFT 9u
#define LIM_ALLOC_UNIT (1u << LIM_ALLOC_UNIT_SHIFT)

/* Device superblock area at the start of every device; data follows.  4 KiB
 * keeps the data area aligned for any O_DIRECT alignment up to 4 KiB. */
#define LIM_DEV_SB_SIZE 4096u

/* Smallest and largest emulated device: below 1 MiB nothing useful fits,
 * above 16 TiB the in-memory allocation bitmap (1 bit per 512 B) would take
 * more than 4 GiB. */
#define LIM_DEV_SIZE_MIN (1ull << 20)
#define LIM_DEV_SIZE_MAX (16ull << 40)

/* Devices per store: the device index is stored in 16 bits in extent maps,
 * and one process should not hold more open devices than this. */
#define LIM_DEV_MAX 256u

/* Worker threads that execute ops: enough to keep a few devices busy on a
 * small machine; more only adds contention on LMDB's single writer. */
#define LIM_WORKERS_MAX 64u
#define LIM_WORKERS_DEFAULT 8u

/* Ops queued but not yet executing.  Past it clovis_op_launch() still
 * accepts ops (it must not fail half-way) but they wait in the launcher's
 * list; the bound is on memory the engine itself allocates per op. */
#define LIM_QUEUE_MAX 65536u

/* Commit items folded into one LMDB write transaction (group commit).  Larger
 * batches amortise the sync further but delay the first op of the batch. */
#define LIM_BATCH_MAX 512u

/* Group-commit window (cq_gather): while updates are on their way, a batch
 * waits for the next item at least LIM_GATHER_US microseconds (about a
 * third of one fdatasync on the disks we measured: the wait pays for itself
 * as soon as one more op joins), longer when updates take longer. */
#define LIM_GATHER_US 50u

/* Metadata map: LMDB reserves address space up front; 4 GiB by default holds
 * tens of millions of extents and records.  The map grows only on reopen. */
#define LIM_META_SIZE_DEFAULT (4ull << 30)
#define LIM_META_SIZE_MIN (16ull << 20)
#define LIM_META_SIZE_MAX (1ull << 40)

/* Default size of each emulated device made at store creation: the default
 * store has 14 devices (core/conf.c), and flash/sas files are zero-filled at
 * format, so 256 MiB keeps creation to a few seconds. */
#define LIM_DEV_SIZE_DEFAULT (256ull << 20)

/* Longest path we store for a device (clovis_dev_info.di_path). */
#define LIM_PATH_MAX 255u

/* Largest single device I/O the drivers issue; bigger requests are split so
 * that a bounce buffer never exceeds it. */
#define LIM_IO_CHUNK (4u << 20)

/* Group locks serialising read-modify-write of parity groups: a hash table
 * of busy slots.  Collisions only serialise unrelated groups; 4096 makes
 * them rare for the few hundred ops in flight. */
#define LIM_GLOCK_SLOTS 4096u

/* I/O errors a device may return before the engine marks it failed
 * (transient errors are retried by the layer above through redundancy). */
#define LIM_DEV_ERRORS_MAX 8u

/* Error message length (thread-local and per op). */
#define LIM_ERRMSG_LEN 256u

_Static_assert(LIM_ALLOC_UNIT == (1u << CLOVIS_BLOCK_SHIFT_MIN),
	       "allocation unit is the smallest block");
_Static_assert(LIM_DEV_SB_SIZE % LIM_ALLOC_UNIT == 0, "aligned data area");

#endif
