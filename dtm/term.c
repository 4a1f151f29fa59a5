/*
 * term.c — cooperative termination of in-doubt dtxs and the participant's
 * log record (dtm.h; the protocol and its failure analysis in README.md).
 */
#include <errno.h>
#include <string.h>

#include "core/errors.h"
#include "dtm/dtm.h"

enum dtm_verdict dtm_term_decide(uint32_t self, const struct dtm_answer *peers,
				 uint32_t nr)
{
	bool abort_seen = false, dead = false, silent = false;

	if (self == DTM_COMMITTED)
		return DTM_V_COMMIT;
	if (self == DTM_ABORTED || self == DTM_UNKNOWN)
		return DTM_V_ABORT;
	for (uint32_t i = 0; i < nr; i++) {
		const struct dtm_answer *a = &peers[i];

		if (a->da_replied && a->da_state == DTM_COMMITTED)
			return DTM_V_COMMIT; /* wins over any abort hint */
		if (a->da_dead)
			dead = true;
		else if (!a->da_replied)
			silent = true;
		else if (a->da_state != DTM_PREPARED)
			abort_seen = true; /* ABORTED, or UNKNOWN logged ABORTED */
	}
	if (abort_seen || dead)
		return DTM_V_ABORT;
	(void)silent; /* all PREPARED, or some alive and silent: in doubt */
	return DTM_V_WAIT;
}

uint32_t dtm_query_answer(uint32_t *local, bool *log_it)
{
	*log_it = false;
	if (*local == DTM_UNKNOWN) {
		*local = DTM_ABORTED;
		*log_it = true;
	}
	return *local;
}

bool dtm_prepare_allowed(uint32_t local)
{
	return local == DTM_UNKNOWN;
}

int dtm_rec_encode(const struct dtm_rec *rec, const uint16_t *parts,
		   void *buf, size_t len)
{
	size_t need = sizeof *rec + rec->dr_nr_parts * sizeof(uint16_t);

	if (rec->dr_nr_parts == 0 || rec->dr_nr_parts > DTM_PARTS_MAX)
		return err_set(-EINVAL, "dtx record: %u participants (1..%u)",
			       rec->dr_nr_parts, DTM_PARTS_MAX);
	if (rec->dr_state > DTM_ABORTED)
		return err_set(-EINVAL, "dtx record: state %u", rec->dr_state);
	if (len < need)
		return err_set(-ENOBUFS, "dtx record: %zu bytes needed, %zu "
			       "given", need, len);
	memcpy(buf, rec, sizeof *rec);
	memcpy((char *)buf + sizeof *rec, parts,
	       rec->dr_nr_parts * sizeof(uint16_t));
	return (int)need;
}

int dtm_rec_decode(const void *buf, size_t len, struct dtm_rec *rec,
		   uint16_t parts[DTM_PARTS_MAX])
{
	if (len < sizeof *rec)
		return err_set(-ST_ECORRUPT, "dtx record: %zu bytes, "
			       "shorter than its header", len);
	memcpy(rec, buf, sizeof *rec);
	if (rec->dr_magic != DTM_REC_MAGIC)
		return err_set(-ST_ECORRUPT, "dtx record: dr_magic %#x",
			       rec->dr_magic);
	if (rec->dr_version != DTM_REC_VERSION)
		return err_set(-ST_ECORRUPT, "dtx record: dr_version %u",
			       rec->dr_version);
	if (rec->dr_state > DTM_ABORTED)
		return err_set(-ST_ECORRUPT, "dtx record: dr_state %u",
			       rec->dr_state);
	if (rec->dr_nr_parts == 0 || rec->dr_nr_parts > DTM_PARTS_MAX ||
	    len < sizeof *rec + rec->dr_nr_parts * sizeof(uint16_t))
		return err_set(-ST_ECORRUPT, "dtx record: dr_nr_parts %u "
			       "in %zu bytes", rec->dr_nr_parts, len);
	memcpy(parts, (const char *)buf + sizeof *rec,
	       rec->dr_nr_parts * sizeof(uint16_t));
	return 0;
}

enum dtm_verdict dtm_term_decider(uint32_t self, bool expired)
{
	if (self == DTM_COMMITTED)
		return DTM_V_COMMIT;
	if (self != DTM_PREPARED || expired)
		return DTM_V_ABORT;
	return DTM_V_WAIT;
}
