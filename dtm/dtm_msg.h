/*
 * dtm_msg.h — encoding and bounds-checked decoding of the dtx protocol
 * (dtm/dtm.proto), shared by the coordinator (dtm/cli_dtx.c), the
 * participant (dtm/srv_dtx.c) and the CLI (clovis/cli/cli_dtx.c).
 */
#ifndef STRATA_DTM_DTM_MSG_H
#define STRATA_DTM_DTM_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "core/rpc/rpc.h"
#include "dtm/dtm.h"
#include "dtm/dtm.pb-c.h"

/** The one opcode of the protocol (apart from strata.proto's). */
#define DTM_OP (RPC_OP_USER_MIN + 96u)

enum dtm_msg_kind {
	DTM_MSG_PREPARE = 1, /**< client -> participant: reply state PREPARED */
	DTM_MSG_DECIDE = 2,  /**< client -> participant */
	DTM_MSG_QUERY = 3,   /**< participant -> participant */
	DTM_MSG_LIST = 4,    /**< CLI -> server: in-doubt and recent dtxs */
	DTM_MSG_DEAD = 5,    /**< CLI -> server: mark a server dead */
};


/**
 * Decode and check a request body for a cluster of nr_servers: kind known,
 * id set, participants 1..DTM_PARTS_MAX distinct servers below nr_servers,
 * members only in PREPARE (1..ST_DTX_OPS_MAX, op SOP_OBJ or SOP_IDX,
 * body not empty, data only for objects, at most DTM_PREPARE_BYTES_MAX in
 * all) or, in a PREPARE envelope, none and bulk_len 1..DTM_PREPARE_WIRE_MAX
 * (the packed PREPARE is the call's bulk: decode it with
 * dtm_prepare_decode), decision COMMITTED or ABORTED in DECIDE, server below nr_servers in
 * DEAD.  Returns 0 and *out (dtx_req__free_unpacked(*out, NULL)), or
 * -EBADMSG / -EINVAL / -E2BIG with a message naming the field.
 */
int dtm_req_decode(const void *body, size_t len, uint32_t nr_servers,
		   DtxReq **out);

/**
 * The PREPARE an envelope env announced, pulled from the call's bulk into
 * buf (len == env->bulk_len): decoded and checked as dtm_req_decode()
 * does, and it must be a PREPARE with members of the same id, without a
 * bulk_len of its own.  0 and *out, or -EBADMSG / -EINVAL / -E2BIG.
 */
int dtm_prepare_decode(const DtxReq *env, const void *buf, size_t len,
		       uint32_t nr_servers, DtxReq **out);

/** Decode and check a reply (state known, list entries' states and
 *  participant counts).  0 and *out, or -EBADMSG with a message. */
int dtm_reply_decode(const void *body, size_t len, DtxReply **out);

/** Pack m into a malloc'd buffer.  0 or -ENOMEM. */
int dtm_pack(const ProtobufCMessage *m, uint8_t **buf, size_t *len);

/** An index key for messages (the coordinator's and the participant's):
 *  quoted, printable bytes as they are and others as \xHH, cut with "..."
 *  to fit len (DTM_KEY_STR_LEN is enough for a message).  Returns buf. */
#define DTM_KEY_STR_LEN 72
const char *dtm_key_str(char *buf, size_t len, const void *key, size_t klen);

#endif
