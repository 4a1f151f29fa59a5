/*
 * dtm_loc.h — the local half of dtm: embedded mode's atomic commit of a
 * dtx (dtm/loc_dtx.c).
 *
 * In embedded mode a dtx is one item of the engine's group commit
 * (clovis/dtx.c hands it over): dtm_loc_apply() is that item's apply.  It
 * runs every member's own apply in one nested transaction of the batch's
 * transaction, so that the members commit together or not at all; an index
 * PUT without ST_IF_OVERWRITE that meets an existing key fails the whole
 * dtx (-EEXIST naming the index and key) instead of committing with that
 * record left out.  The cluster's halves are dtm_cli.h (coordinator) and
 * dtm_srv.h (participant).
 */
#ifndef STRATA_DTM_LOC_H
#define STRATA_DTM_LOC_H

#include <stdint.h>

#include "core/engine.h"
#include "core/meta_txn.h"

/** Member i (0 <= i < nr) of the dtx whose commit item is applied. */
typedef struct eng_citem *(*dtm_member_fn)(void *arg, uint32_t i);

/**
 * Apply the nr members of a dtx inside txn (the group commit's), as the
 * apply of its commit item ci: one nested transaction, each member's
 * ci_apply in order; on success the space the members freed moves to ci
 * (freed when the batch is durable) and 0 is returned.  On a member's
 * failure nothing of the dtx stays in txn, *bad is that member's index,
 * ci's message reads "dtx WHAT: op I of NR: <the member's message>", and
 * its error is returned (ci_hard set as the member's).  A failure of the
 * nested commit or of moving the freed space sets ci_hard (the batch
 * redoes every item).  Test builds: fault point dtx.apply.mid fails the
 * first member with -EIO after it applied.
 */
int dtm_loc_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci,
		  dtm_member_fn member, void *arg, uint32_t nr,
		  const char *what, uint32_t *bad);

/**
 * After the nested commit of a dtx's members (embedded or a participant's
 * COMMIT): the space each of the nr members freed moves to the dtx's item
 * ci (freed when its batch is durable), the members' lists emptied.  0, or
 * the error of a full list with ci_hard set (the batch redoes every item).
 */
int dtm_freed_take(struct eng_citem *ci, dtm_member_fn member, void *arg,
		   uint32_t nr);

#endif
