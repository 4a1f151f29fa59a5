/*
 * dtm_cli.h — the coordinator of cluster dtxs, dtm's client half
 * (dtm/cli_dtx.c; protocol in dtm/README.md "Coordinator").
 *
 * It runs two-phase commit over the members' engine requests: encode each
 * as the request it would be alone, PREPARE every participant, decide,
 * and answer when every participant applied it; and the settle fence (wait
 * until no server holds a dtx in doubt).  It knows nothing of Clovis ops:
 * the client gives it the members' requests and a small table of what it
 * needs of the client's cluster transport (struct dtm_cli_ops; clovis's
 * cluster client fills it, clovis/dtx.c).  Its partner on the servers is
 * dtm/srv_dtx.c, the participant.
 */
#ifndef STRATA_DTM_CLI_H
#define STRATA_DTM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"
#include "dtm/dtm.h"

/* What the coordinator needs of the cluster transport.  arg is
 * dtm_cli.dc_arg.  Every function is called from the coordinating thread
 * and from the threads it starts (one per participant), at once. */
struct dtm_cli_ops {
	/** Call server with the dtx request body (len bytes) and, when bulk
	 *  is not NULL, bulk_len bytes the server pulls as the call's bulk;
	 *  deadline ms.  0 and the reply in *rbody (malloc'd, the caller
	 *  frees it) and *rlen, or a negative errno with err_msg() set. */
	int (*co_call)(void *arg, uint32_t server, const void *body,
		       size_t len, const void *bulk, size_t bulk_len,
		       uint32_t ms, void **rbody, size_t *rlen);
	/** The name of server s, for messages.  Never NULL. */
	const char *(*co_server_name)(void *arg, uint32_t s);
	/** The cluster's call timeout, ms (0: none). */
	uint32_t (*co_call_ms)(void *arg);
	/** Number of servers in the cluster. */
	uint32_t (*co_nr_servers)(void *arg);
	/** Encode member r as the request it would be alone: the servers
	 *  that apply it (server[0 .. *nsrv), at most CLU_REPLICAS_MAX), its
	 *  SOP_* op and its body (*body malloc'd, the caller frees it).
	 *  0, or a negative errno with err_msg() set naming the member. */
	int (*co_member)(void *arg, const struct eng_req *r, uint32_t *server,
			 uint32_t *nsrv, uint32_t *sop, uint8_t **body,
			 size_t *len);
	/** Make server's replica of r's index verify (after a NO vote with
	 *  -ESTALE: the replica must verify before it may order). */
	void (*co_idx_touch)(void *arg, uint32_t server,
			     const struct eng_req *r);
};

/* One client process's coordinator: the transport and its node id. */
struct dtm_cli {
	const struct dtm_cli_ops *dc_ops;
	void *dc_arg;
	/** This client's node id in dtx ids (not 0). */
	uint32_t dc_node;
	/** Benchmarks (may be NULL): while *dc_abandon is true, a commit
	 *  stops after all votes, as a client dying there would (no DECIDE;
	 *  it returns -ETIMEDOUT). */
	const bool *dc_abandon;
};

/**
 * Commit the dtx *id of nr members m[] (their requests; an index CREATE
 * member's incarnation er_ent.me_ctime_ns is set here) on the cluster.
 * Returns 0 when every participant applied it durably; otherwise the
 * failure, with msg (msz bytes) saying why, and *bad the index of the
 * member that failed it (left as it was when no member is to blame):
 *   -ESTALE       an index replica was verifying, still after retries
 *                 (each retry takes a new id: *id is the last one);
 *   -ECANCELED    aborted (the votes came past the decision deadline, or
 *                 the decider had aborted it);
 *   -ETIMEDOUT    outcome unknown: in doubt until the participants
 *                 resolve it;
 *   -EINPROGRESS  committed, not yet applied everywhere;
 *   -E2BIG        more than DTM_PREPARE_BYTES_MAX for one participant;
 *   or a participant's NO or a transport failure.
 * m[] and the members' buffers must stay valid during the call.
 */
int dtm_cli_commit(const struct dtm_cli *cli, struct st_dtx_id *id,
		   struct eng_req *const *m, uint32_t nr, uint32_t *bad,
		   char *msg, size_t msz);

/**
 * The settle fence: wait, at most timeout_ms, until no server holds a
 * PREPARED record of a dtx whose id is below before (0: below the time of
 * this call).  0, or -ETIMEDOUT (or a server's call failure) with a
 * message naming the server and its oldest dtx in doubt.
 */
int dtm_cli_settle(const struct dtm_cli *cli, uint64_t before,
		   uint32_t timeout_ms);

#endif
