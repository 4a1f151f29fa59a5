/*
 * loc_dtx.c — the local half of dtm: embedded mode's atomic commit of a
 * dtx (see dtm_loc.h).  clovis/dtx.c gathers the members (Clovis ops) and
 * hands the dtx's one commit item to the engine; its apply is here.
 */
#include <errno.h>
#include <stdio.h>

#include "core/errors.h"
#include "core/fault.h"
#include "dtm/dtm_loc.h"
#include "dtm/dtm_msg.h"

/* Member mci (an index PUT without ST_IF_OVERWRITE) just applied met an
 * existing key (its record's rc -EEXIST): a dtx is atomic, so it fails
 * whole rather than commit with that record left out (clovis.h).  0, or
 * -EEXIST with the index and key in mci's message. */
static int loc_put_exists(struct eng_citem *mci)
{
	struct eng_req *r = (struct eng_req *)mci;
	char k[DTM_KEY_STR_LEN];

	if (r->er_kind != ER_IDX_PUT || (r->er_flags & ST_IF_OVERWRITE))
		return 0;
	for (uint32_t i = 0; i < r->er_keys->bv_nr; i++) {
		if (r->er_rcs[i] != -EEXIST)
			continue;
		snprintf(mci->ci_msg, sizeof mci->ci_msg, "index %s: key %s "
			 "(record %u) exists (PUT without CLOVIS_IF_OVERWRITE)",
			 eng_id_str(&r->er_id),
			 dtm_key_str(k, sizeof k, r->er_keys->bv_buf[i],
				     r->er_keys->bv_len[i]), i);
		return -EEXIST;
	}
	return 0;
}

int dtm_loc_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci,
		  dtm_member_fn member, void *arg, uint32_t nr,
		  const char *what, uint32_t *bad)
{
	MDB_txn *child;
	int rc = meta_ntxn_begin(eng_meta(e), txn, &child,
				 "dtx nested transaction");

	if (rc != 0)
		return rc;
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		struct eng_citem *mci = member(arg, i);

		mci->ci_hard = false;
		mci->ci_freed.sv_nr = 0;
		mci->ci_msg[0] = '\0';
		err_clear();
		rc = mci->ci_apply(e, child, mci);
		if (rc == 0)
			rc = loc_put_exists(mci);
		if (rc == 0 && i == 0 && FAULT_HIT("dtx.apply.mid"))
			rc = err_set(-EIO, "fault point dtx.apply.mid");
		if (rc != 0) {
			*bad = i;
			ci->ci_hard = mci->ci_hard;
			snprintf(ci->ci_msg, sizeof ci->ci_msg, "dtx %s: op %u of "
				 "%u: %.200s", what, i + 1, nr,
				 mci->ci_msg[0] ? mci->ci_msg : err_msg());
		}
	}
	if (rc != 0) {
		meta_txn_abort(child);
		return rc;
	}
	rc = meta_ntxn_commit(child, "dtx nested commit");
	if (rc != 0) {
		ci->ci_hard = true;
		return rc;
	}
	return dtm_freed_take(ci, member, arg, nr);
}

int dtm_freed_take(struct eng_citem *ci, dtm_member_fn member, void *arg,
		   uint32_t nr)
{
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		struct eng_spacevec *fv = &member(arg, i)->ci_freed;

		for (uint32_t j = 0; rc == 0 && j < fv->sv_nr; j++)
			rc = eng_spacevec_add(&ci->ci_freed, fv->sv_v[j].sp_dev,
					      fv->sv_v[j].sp_off,
					      fv->sv_v[j].sp_len);
		fv->sv_nr = 0;
	}
	if (rc != 0)
		ci->ci_hard = true; /* the parent holds the maps: redo all */
	return rc;
}
