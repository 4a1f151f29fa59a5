/*
 * eng_repl.h — replication of an engine's metadata store (issue 28 item 3,
 * "No single home"): write sets, the replication hook, shadows and
 * snapshots.  See core/README.md "Write sets and shadows" and
 * docs/cluster.md "Replicated homes".
 *
 * Write sets.  While a replication hook is set (eng_repl_set), every
 * top-level write transaction of the engine's LMDB environment (the group
 * commit's, meta_wtxn_begin()'s, the engine's own sys/layer writes)
 * records the (table, key) of each record it puts or deletes.  Right
 * before its commit the transaction gets one more record, sys "repl:seq"
 * (8 bytes, little-endian) = the previous value + 1, and the set of
 * touched keys is encoded with each key's value in the transaction as it
 * stands then (present: put that value; absent: delete): a write set,
 * sequence number seq.  So the write set is exactly what the commit
 * changes, whatever happened in between (overwrites, MDB_RESERVE, nested
 * transactions aborted after a put).  Without a hook nothing is recorded
 * and repl:seq is left as it is (an embedded store pays nothing).
 *
 * Format of a write set (all integers little-endian), version 1:
 *   u32 magic 'SWS1' (0x31535753)   u16 version (1)   u16 flags (0)
 *   u64 seq (>= 1)                   u32 nr (records)  u32 body (bytes
 *                                                         after the header)
 *   nr times: u8 table (enum meta_table)  u8 op (1 put, 2 delete)
 *             u16 klen (1..511)  u32 vlen (delete: 0)  key  value
 * The body holds exactly the nr records; the last record of every set is
 * the put of sys "repl:seq" with the set's seq.  eng_wset_check() checks
 * every field.
 *
 * The hook's contract.  ro_ship(arg, seq, buf, len) is called once per
 * write set, in seq order, right after the local commit of the set (from
 * the committing thread: the group commit's committer or syncer, or the
 * thread of a meta_wtxn_commit()); buf is valid during the call only: the
 * hook copies it and ships it asynchronously (it must not block for the
 * network).  ro_wait(arg, seq) is called before anything committed with
 * that seq is reported durable: in the group commit, before the batch's
 * items are reported STABLE (ci_done) and the space it freed is released,
 * after the home's own meta sync (so the standbys' apply and sync overlap
 * it), from the replication wait stage's thread (core/commit.c
 * eng_rwaiter_main(): batches in commit order, the committer going on
 * meanwhile); after a meta_wtxn_commit() (or the engine's own write
 * commits) in the committing thread, before that call returns.  It returns 0 when the set is durable where it
 * must be (the server's policy, core/server/srv_repl.c: every in-sync
 * standby acknowledged or was dropped as unreachable, and at least one
 * acknowledged: a home that no standby answers fails its writes with
 * -EHOSTDOWN, docs/cluster.md "Replicated homes"), or a negative code: the batch's items fail with
 * it (they stay visible but are not STABLE, as after a failed meta sync;
 * their space stays mapped), a meta_wtxn_commit() returns it.  Both run
 * with no engine lock a reader needs; ro_ship runs under the committer's
 * locks and must not wait; ro_wait holds up only the STABLE reports of
 * the batches after the one it waits for.
 */
#ifndef STRATA_CORE_ENG_REPL_H
#define STRATA_CORE_ENG_REPL_H

#include <stddef.h>
#include <stdint.h>

struct eng;

/** The write set format (see above). */
#define ENG_WSET_MAGIC 0x31535753u /* "SWS1" */
#define ENG_WSET_VERSION 1u
#define ENG_WSET_HDR 24u
#define ENG_WSET_REC_HDR 8u
#define ENG_WSET_PUT 1u
#define ENG_WSET_DEL 2u
/** sys record holding the sequence number of the last write set. */
#define ENG_REPL_SEQ_KEY "repl:seq"

/** The replication hook (contract above). */
struct eng_repl_ops {
	void (*ro_ship)(void *arg, uint64_t seq, const void *buf, size_t len);
	int (*ro_wait)(void *arg, uint64_t seq);
};

/**
 * Set (ops non-NULL) or clear the replication hook of e.  Set it right
 * after eng_open(), before any update, and clear it (or leave it set)
 * only after eng_close() has no more writes to make: the engine's writes
 * at close (saved statistics) are write sets too, so a server keeps its
 * pipeline running through eng_close().  If the environment was written
 * since the open without a hook (the open's own writes), repl:seq jumps
 * by 2 in a commit of its own that is not shipped: every standby's next
 * set is then not its next one (-ESTALE at eng_shadow_apply) and it is
 * re-synced by snapshot, never left silently different.  Returns 0 or a
 * negative code with a message.
 */
int eng_repl_set(struct eng *e, const struct eng_repl_ops *ops, void *arg);
/** The sequence number of e's last committed write set (repl:seq; 0:
 *  none). */
uint64_t eng_repl_seq(struct eng *e);
/** Wait until write set seq of e is acknowledged as its hook's ro_wait
 *  says (on its standbys): 0 at once without a hook or for seq 0; else
 *  ro_wait's answer (a negative code with a message).  For a reader that
 *  must not tell what a takeover on a standby would not have (a dtx
 *  participant's decision: dtm/srv_dtx.c). */
int eng_repl_wait(struct eng *e, uint64_t seq);

/**
 * Check a write set: every field of the header and of each record (magic,
 * version, flags, seq >= 1, body == len - header, nr records fitting the
 * body exactly, table, op, key length 1..511, delete with no value, the
 * last record the sys repl:seq put of seq).  Returns 0 and *seq (may be
 * NULL), or -EINVAL with a message naming the field.  Nothing is read past
 * len; any bytes are safe (a fuzz target).
 */
int eng_wset_check(const void *buf, size_t len, uint64_t *seq);

/* ------------------------------------------------------------ shadows */

/** A shadow: an LMDB environment with the engine's tables, kept equal to
 *  another server's metadata store by applying its write sets. */
struct eng_shadow;

/**
 * Open the shadow in directory dir (created with its tables if missing).
 * Returns 0 and *out, or a negative code with a message naming dir.
 */
int eng_shadow_open(struct eng_shadow **out, const char *dir);
/**
 * Apply write set buf (len bytes, sequence number seq) in one transaction,
 * commit it and sync it (durable on return).  buf may also hold several
 * consecutive sets back to back (seq, seq + 1, ...; each its header and
 * body), applied together in that one transaction.  Only the shadow's next
 * set applies: if its repl:seq is not seq - 1 nothing changes and -ESTALE
 * is returned with the message "shadow DIR: at seq A, write set B:
 * behind" (or "ahead"); a set that fails eng_wset_check() or whose
 * header's seq is not the one due: -EINVAL, nothing changed.  Other
 * failures: a negative code with a message, nothing changed.  One caller
 * at a time per shadow.
 */
int eng_shadow_apply(struct eng_shadow *sh, uint64_t seq, const void *buf,
		     size_t len);
/** The shadow's repl:seq (0: never written). */
uint64_t eng_shadow_seq(const struct eng_shadow *sh);
/** The shadow's directory. */
const char *eng_shadow_dir(const struct eng_shadow *sh);
/** Close a shadow (NULL: nothing). */
void eng_shadow_close(struct eng_shadow *sh);

/**
 * Replace the data of the LMDB directory dir (a shadow's, closed by every
 * process; or a store's DATA_DIR/meta with the store closed: the copy
 * back after a takeover) by snapshot file (of eng_snapshot(), in the same
 * file system as dir, e.g. dir's parent): the file is synced and renamed
 * to dir/data.mdb, the old lock.mdb removed, dir synced (dir is made if
 * missing).  The file is gone after a success.  *seq (may be NULL) gets
 * the snapshot's repl:seq.  Returns 0 or a negative code with a message;
 * on failure dir holds its old data or the new, never a mix.
 */
int eng_shadow_install(const char *dir, const char *file, uint64_t *seq);

/**
 * A consistent copy of e's LMDB environment in file path (created or
 * truncated; compacted, synced), as of one commit.  *seq (may be NULL)
 * gets that commit's repl:seq (read back from the copy).  Runs beside the
 * group commit (an LMDB read transaction).  Returns 0 or a negative code
 * with a message.
 */
int eng_snapshot(struct eng *e, const char *path, uint64_t *seq);
/** The same copy of shadow sh (the caller keeps its sets out meanwhile:
 *  the standby side's lock of that shadow). */
int eng_shadow_snapshot(struct eng_shadow *sh, const char *path,
			uint64_t *seq);
/**
 * The repl:seq recorded in LMDB directory dir (a shadow's, or a data.mdb
 * snapshot file when dir is a file), opened read-only for the call.
 * Returns 0 and *seq (0: no record), -ENOENT (no environment there), or a
 * negative code with a message.
 */
int eng_repl_seq_read(const char *dir, uint64_t *seq);

/* ------------------------------------------------- senders' map view */

/**
 * Who may ship a home's write sets (docs/cluster.md "Replicated homes",
 * "Taking over a home").  A standby keeps, per home, the view of the
 * cluster map it last learned: the server serving the home (rv_acting:
 * the home itself, or the standby a takeover moved it to), the map epoch
 * of that knowledge (rv_epoch) and the takeover incarnation (rv_inc, 0
 * for the home itself).  Each SOP_REPL_SHIP/SNAP carries its sender's
 * view (the sender's index, its map epoch, its takeover incarnation).
 */
struct eng_repl_view {
	uint32_t rv_acting;
	uint64_t rv_epoch;
	uint64_t rv_inc;
};

/** eng_repl_view_admit(): the sender's view is newer: v learned it. */
#define ENG_REPL_VIEW_LEARNED 1

/**
 * Admit a ship or snapshot chunk from server sender, whose view of the
 * map is epoch and incarnation inc, against the standby's view v of the
 * same home.  A sender with a newer epoch than v's is the acting server
 * of a map v has not seen yet: v takes its view (rv_acting = sender,
 * rv_epoch = epoch, rv_inc = inc) and ENG_REPL_VIEW_LEARNED is returned.
 * Otherwise the sender must be v's acting server with an incarnation not
 * below v's (0 is returned, v unchanged), else -EREMCHG: the sender was
 * fenced by a move it has not seen (an old home, or a takeover moved on);
 * nothing is logged or set (the caller names the home).  Pure: no I/O,
 * no lock (the caller serialises calls on one v).  A cluster without a
 * map (epochs 0, every home its own acting server) admits every home's
 * own ships: the normal path is never refused.
 */
int eng_repl_view_admit(struct eng_repl_view *v, uint32_t sender,
			uint64_t epoch, uint64_t inc);

#endif
