/*
 * ent.h — entities (core/ent.c): containers, objects and indices as
 * entities: CREATE, OPEN, DELETE, GETATTR, SETATTR.
 */
#ifndef STRATA_CORE_ENT_H
#define STRATA_CORE_ENT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine.h"

/** Entity CREATE, OPEN, DELETE, GETATTR, SETATTR (eng_exec()). */
int ent_exec(struct eng *e, struct eng_req *r);
/** Check the entity of r exists with the incarnation r was opened at;
 *  fills r->er_ent's stored copy into *cur.  0 or -ENOENT (message). */
int ent_check(struct eng *e, MDB_txn *txn, struct eng_req *r,
	      struct meta_ent *cur);

#endif
