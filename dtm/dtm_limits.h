/*
 * dtm_limits.h — the limits of dtm/ (both halves), each with its reason,
 * as core/limits.h does for the engine.
 */
#ifndef STRATA_DTM_DTM_LIMITS_H
#define STRATA_DTM_DTM_LIMITS_H

/* ------------------------------------------------ the protocol (both) */

/** Most participants of one dtx (servers of a cluster). */
#define DTM_PARTS_MAX 64u

/** Bytes of all member bodies and data of one PREPARE, per participant
 *  (the dtx's upper bound: past it the commit fails -E2BIG naming the dtx,
 *  the server and the size).  The participant holds a PREPARE in memory
 *  (pulled, decoded) and in its log record, so a few times this much. */
#define DTM_PREPARE_BYTES_MAX (32u << 20)
/** A packed PREPARE up to this many bytes travels inline in one message
 *  (the RPC layer's default message size); a larger one is the call's
 *  bulk (DtxReq.bulk_len), moved by RMA. */
#define DTM_PREPARE_INLINE_MAX (48u << 10)
/** Most bytes of a packed PREPARE moved as bulk: the members' bytes plus
 *  their framing (a few bytes per member and field). */
#define DTM_PREPARE_WIRE_MAX (DTM_PREPARE_BYTES_MAX + (4u << 20))
/** Most LIST entries in one reply. */
#define DTM_LIST_MAX 1000u
/* Longest decision deadline a PREPARE may announce (DtxReq.wait_ms). */
#define DTM_WAIT_MS_MAX 60000u

/* ------------------------------------- the coordinator (cli_dtx.c) */

/* Deadline of every call of the client half, at most the cluster's call
 * timeout (cli_dtx.c's header comment). */
#define DTX_CLU_CALL_MS 10000u

/* -ESTALE (an index replica verifying) is retried with a new id while the
 * first attempt began less than the call timeout ago, this often at most:
 * under load a verification can take longer than a few quick retries. */
#define DTX_CLU_TRIES 40u
#define DTX_CLU_BACKOFF_MAX_MS 500u
/* The PREPARE announces the decision deadline: the call timeout plus this
 * (thread start-up, scheduling), and the client keeps it: votes that came
 * later make it abort, so a participant's termination (which waits for the
 * deadline, srv_dtx.c) never races a live client. */
#define DTX_CLU_SLACK_MS 1000u
/* A participant's PREPARE and DECIDE calls get this much more than the
 * call timeout per member and per MiB of members (a COMMIT runs each
 * member and copies each index member to its other replicas, one durable
 * update after the other), at most
 * DTX_CLU_EXTRA_MAX_MS: the decision deadline the PREPARE announces
 * (wait_ms, at most DTM_WAIT_MS_MAX) grows with it. */
#define DTX_CLU_MEMBER_MS 4u
#define DTX_CLU_IDX_MS 20u      /* an index member: its copy to each other
				   replica is a durable update there */
#define DTX_CLU_MIB_MS 250u
#define DTX_CLU_EXTRA_MAX_MS 40000u

/* The settle fence (dtm_cli_settle) polls the servers' lists with a pause
 * that doubles from the first to the second while a dtx is still in
 * doubt: quick when the doubt clears at once, a few calls a second when
 * it lasts. */
#define SETTLE_PAUSE_MIN_MS 20u
#define SETTLE_PAUSE_MAX_MS 500u

/* ------------------------------------- the participant (srv_dtx.c) */

/* Termination, replica copies and the dtx log's trimming; DTX_LOCKS:
 * the participant's lock stripes of dtx records (a lock per record would
 * cost memory per dtx; striped locks only serialise dtxs that share a
 * stripe). */
#define DTX_TERM_MS 2000u      /* in doubt this long past the client's
				  decision deadline: termination */
#define DTX_TERM_TICK_MS 250u
#define DTX_QUERY_MS 1000u     /* call timeout of a QUERY */
#define DTX_FWD_MS 2000u       /* call timeout of a replica copy */
#define DTX_FWD_RECS_MAX 256u  /* records in one copy of a run of index
				  members (also at most MSG_RECS_INLINE
				  bytes of them) */
#define DTX_FWD_SLOW_US 30000u /* test fault dtx.part.fwd.slow: each copy
				  takes this much longer (a slow durable
				  update on the replica) */
#define DTX_SLOW_MS 1000u      /* a COMMIT this long logs where its time
				  went (part_commit) */
#define DTX_KEEP_S 600u        /* decided records kept this long */
#define DTX_KEEP_MAX 100000u   /* and at most this many */
#define DTX_TRIM_EVERY_MS 10000u
#define DTX_LOCKS 64u

#endif
