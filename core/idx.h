/*
 * idx.h — indices (core/idx.c): records GET, PUT, DEL, NEXT.
 */
#ifndef STRATA_CORE_IDX_H
#define STRATA_CORE_IDX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine.h"

/** Index GET, PUT, DEL, NEXT (eng_exec()). */
int idx_exec(struct eng *e, struct eng_req *r);
/** NEXT with ST_IF_CALLER_BUFS (clovis.h): copy one record into slot i
 *  of the caller's key and value buffers (slot 0's key room is
 *  ST_KEY_MAX, others' bv_len); sets both lengths to the record's;
 *  returns 0, -EMSGSIZE (key does not fit) or -ENOBUFS (value).  Used by
 *  the engine and by the cluster client alike. */
int32_t eng_idx_rec_into(struct st_bufvec *keys,
			 struct st_bufvec *vals, uint32_t i,
			 const void *key, size_t klen, const void *val,
			 size_t vlen);
/** Slots from..nr of a NEXT past its last record: rcs -ENOENT, lengths 0,
 *  buffers NULL (malloc mode) or left alone (ST_IF_CALLER_BUFS). */
void eng_idx_next_tail(struct eng_req *r, uint32_t from);
/** In txn: is index id there with incarnation ctime?  1, 0 (gone, or
 *  made again since), or a negative code. */
int idx_inc_is(struct eng *e, MDB_txn *txn, const struct st_id *id,
	       uint64_t ctime);
/** In txn: record key of index id (incarnation ctime) := val, or (del)
 *  deleted, unless it is so already; the index's record count follows.
 *  Nothing when the index is gone or of another incarnation.  0 or a
 *  negative code (LMDB errors: the transaction must be discarded).  An
 *  index replica's version commit re-applies its update with it
 *  (core/server/srv_idx_ver.c ridx_ver_apply()). */
int idx_rec_set(struct eng *e, MDB_txn *txn, const struct st_id *id,
		uint64_t ctime, const void *key, size_t klen, const void *val,
		size_t vlen, bool del);
/** In the commit of a DELETE: every record of index id. */
int idx_delete_records(struct eng *e, MDB_txn *txn, const struct st_id *id);

#endif
