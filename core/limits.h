/*
 * limits.h — every hard limit of Strata in one place, each with its reason.
 * The public limits (block sizes, key and value sizes, vector lengths) come
 * first under ST_ names: clovis/clovis.h states them to applications under
 * its own CLOVIS_ names with the same values (clovis/clovis.c checks each
 * pair).  The engine's own follow.  Ground floor: includes only
 * core/types.h.
 */
#ifndef STRATA_CORE_LIMITS_H
#define STRATA_CORE_LIMITS_H

#include "core/types.h"

/* ---------------------------------------------------------------------
 * Public limits (CLOVIS_ twins in clovis/clovis.h).
 */

/* Smallest and largest object block size, as log2 of bytes
 * (st_obj_attr.oa_block_shift; 0 there means 12, 4 KiB).  The smallest is
 * the allocation unit (LIM_ALLOC_UNIT below). */
#define ST_BLOCK_SHIFT_MIN 9u  /* 512 B */
#define ST_BLOCK_SHIFT_MAX 26u /* 64 MiB */
/* Longest index key in bytes (LMDB key limit less the 16-byte index id). */
#define ST_KEY_MAX 495u
/* Largest index value in bytes. */
#define ST_VAL_MAX (1u << 20)
/* Most extents, buffers or records in one op. */
#define ST_VEC_MAX 4096u
/* Most bytes one READ/WRITE op moves. */
#define ST_OP_BYTES_MAX (256ull << 20)
/* Highest block number + 1 an object may have (2^48 blocks). */
#define ST_BLOCK_NR_MAX (1ull << 48)
/* Most member ops of one dtx. */
#define ST_DTX_OPS_MAX 65536u

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
/* A cluster client's workers mostly wait on round trips to the servers (an
 * index update holds one through its calls to every replica): 32, so that
 * 16 or more ops in flight are all on their way at once. */
#define LIM_CLU_WORKERS_DEFAULT 32u

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

/* Longest path we store for a device (st_dev_info.di_path). */
#define LIM_PATH_MAX 255u

/* Largest single device I/O the drivers issue; bigger requests are split so
 * that a bounce buffer never exceeds it. */
#define LIM_IO_CHUNK (4u << 20)

/* Group locks serialising read-modify-write of parity groups: a hash table
 * of busy slots.  Collisions only serialise unrelated groups; 4096 makes
 * them rare for the few hundred ops in flight. */
#define LIM_GLOCK_SLOTS 4096u

/* Move generations of composite objects (core/comp.c): slots of a hash
 * table over (composite, granule of LIM_CGEN_GRAIN blocks).  A collision
 * only makes a move of unrelated blocks try again, but with several moves
 * in flight, each bumping a slot per granule of a 4 MiB run, 4096 slots
 * refused about one run in twenty for nothing (bench_hsm, 4 movers):
 * 65536 slots (512 KiB an engine) make that rare, and a refused granule
 * is tried LIM_CGEN_TRIES times before it is left where it is. */
#define LIM_CGEN_SLOTS 65536u
#define LIM_CGEN_GRAIN 16u
#define LIM_CGEN_TRIES 4u

/* I/O errors a device may return before the engine marks it failed
 * (transient errors are retried by the layer above through redundancy). */
#define LIM_DEV_ERRORS_MAX 8u

/* Error message length (thread-local and per op). */
#define LIM_ERRMSG_LEN 256u

/* ---------------------------------------------------------------------
 * Limits of one engine part.  They keep the part's prefix (CONF_, COMP_,
 * ENG_, WALK_, ZONE_, FAULT_) so that a grep finds their uses; the file
 * using each is named beside it.
 */

/* Configuration (core/conf.c).  Longest device or pool name: short
 * enough to show in tables and to make a file name "devices/<name>.dev". */
#define CONF_NAME_MAX 31
/* Longest container text kept as written (cc_name), with its NUL: names
 * of containers are for people, 63 characters keep them on one line. */
#define CONF_CONT_NAME_LEN 64
/* Longest remote device reference "SERVER:INDEX", with its NUL: a server
 * name of CONF_NAME_MAX, a colon and a decimal index, with room. */
#define CONF_REMOTE_LEN 48
/* Most slices a cluster store's devices are cut into (CLU_SERVERS_MAX,
 * core/clu_conf.h: one slice per server). */
#define CONF_SLICES_MAX 64u
/* Pools listed in a file (the implicit tier pools come on top): one per
 * device would already be absurd. */
#define CONF_POOLS_MAX 256u
/* Containers with their own default layout: looked up linearly at object
 * creation, so keep the list short. */
#define CONF_CONTS_MAX 4096u
/* Largest configuration text: a full 256-device file is under 20 KiB. */
#define CONF_TEXT_MAX (1u << 20)

/* Composite objects (core/comp.c).  Layers of one object: each READ
 * resolves its blocks through all of them, held in a fixed array (struct
 * comp_layers) per op; a layer per tier (four) is what tiering needs. */
#define COMP_LAYERS_MAX 16u
/* Times a READ of a composite object is tried again when a move remapped
 * its blocks while it read them: a move remaps a range once, so only a
 * stream of moves of the same blocks exhausts them (-EAGAIN then). */
#define COMP_READ_RETRIES 8

/* Group commit (core/commit.c).  The committer waits this long for the
 * next batch before it syncs the last commit's meta page itself (only
 * while updates are on their way): about one metadata fdatasync on the
 * disks we measured, so waiting costs the last op of a burst no more than
 * the sync it saves the others. */
#define ENG_STABLE_WAIT_US 300u
/* The longest group-commit window (cq_gather): a batch waits for updates
 * in execution at most this long, whatever their usual duration. */
#define ENG_GATHER_MAX_US 2000u
/* The longest an allocation that found no space waits for space queued
 * for release to come back (eng_reclaim_drain, core/space.c): an RCU grace
 * period and a reclaimer pass take milliseconds; 2 s covers a loaded
 * machine without hanging a writer on a device that is truly full. */
#define ENG_DRAIN_MAX_NS 2000000000ull

/* The metadata environment (core/meta.c).  Read transactions kept reset
 * for reuse (meta_rtxn_get/put): a few per core. */
#define META_RTXN_CACHE 16u
/* LMDB reader slots of the environment (mdb_env_set_maxreaders): LMDB's
 * default 126 is below the threads a busy server runs (RPC handlers,
 * executors, workers); each slot costs 64 B of the lock file. */
#define META_MAXREADERS 256u
/* Threads that may each keep a read transaction of their own (a reader
 * slot each); the others share the cache.  Half the slots, so that the
 * shared path, listings and checks always find slots. */
#define META_RTXN_THREADS (META_MAXREADERS / 2u)
/* Environments per thread that get a per-thread read transaction: a
 * process holds a store or a few (tests open several at once). */
#define META_TLS_ENVS 4u

/* Rebuild walk (layouts/stripe_walk.c).  Records per batch (one commit
 * each): large enough that a commit's sync is paid for many rebuilt units,
 * small enough that a stop or a crash redoes little. */
#define WALK_BATCH 256u
/* Groups handled at once: enough to keep every device of a pool of a few
 * dozen busy (each group reads N units); bounded by WALK_MEM too. */
#define WALK_INFLIGHT 16u
/* Unit buffers of the groups in flight, at most (one group always fits). */
#define WALK_MEM (64ull << 20)

/*
 * Zoned (SMR) devices (core/zone.c).  Empty zones ordinary appends leave
 * to the cleaner.  To empty a zone the cleaner appends its live bytes (up
 * to a whole zone) elsewhere before it can reset it; if ordinary writes
 * could take the last empty zone, a device whose zones are all partly live
 * would have nowhere to put them, and no write could ever succeed again
 * however much of it is dead.  One zone is enough: every zone cleaned is
 * reset, so the reserve is whole again after each one.
 */
#define ZONE_CLEAN_RESERVE 1u
/* Rounds of cleaning one write may run to find room (each resets a zone):
 * a write whose reclaimed room other writes keep taking gives up with
 * -EAGAIN after that many, rather than clean on forever. */
#define ZONE_RECLAIM_ROUNDS 16u
/* How long a write that found no room waits, in all, for dead space that
 * is still held (zones holding appended bytes no record maps yet: other
 * writes in flight, or frees on their way back) before it gives up with
 * -EAGAIN, and how often it looks again meanwhile (2 ms). */
#define ZONE_HELD_WAIT_NS 5000000000ull
#define ZONE_HELD_POLL_NS 2000000l
/* Runs one record moved by the cleaner may be split into (its bytes
 * appended across zone ends): sizes the arrays of struct zmove; a record
 * split further fails the move with -E2BIG. */
#define ZMOVE_RUNS 8u

/* Metadata placement groups (core/pg.c).  Replicas of one group: a group
 * is held by R = 3 servers by default, or K + 1 to match the data's fault
 * tolerance; past 8 copies, metadata writes cost more than any layout's
 * tolerance asks for (CLU_REPLICAS_MAX, core/clu_conf.h, is the same). */
#define PG_REPLICAS_MAX 8u
/* Candidate servers of one placement: pg_place() scores each one (a few
 * ns) per group, so a map of 2^16 servers costs about 0.2 ms a group;
 * the simulation (tests/sim) runs 10,001. */
#define PG_CANDS_MAX 65536u
/* Groups of a cluster, fixed when it is made (about 128 per server, a few
 * thousand per server at most): each group has a log and a state on each
 * of its R servers, and a map change re-places every group once; 2^24
 * covers 100,000 servers at 128 each. */
#define PG_NR_MAX (1u << 24)

/* Fault points (core/fault.c, test builds only) named at once: a test
 * arms a few; a point past the table is not armed. */
#define FAULT_MAX 32

_Static_assert(LIM_ALLOC_UNIT == (1u << ST_BLOCK_SHIFT_MIN),
	       "allocation unit is the smallest block");
_Static_assert(LIM_DEV_SB_SIZE % LIM_ALLOC_UNIT == 0, "aligned data area");

#endif
