/*
 * srv_fdmi.h — the FDMI module of a cluster server (issue 31): the
 * consumers of the server's own home's record log (fdmi/fdmi.h), served
 * over the FDMI opcode (fdmi/fdmi.proto) to Clovis clients
 * (clovis/cli_fdmi.c), which ask every server.
 *
 * A home taken over by another server keeps recording (its engine emits
 * while a consumer is registered, core/fdmi_log.h eng_fdmi_open_check())
 * into its own log, which travels back with the handback; its records are
 * delivered once its server serves it again.
 */
#ifndef STRATA_FDMI_SRV_FDMI_H
#define STRATA_FDMI_SRV_FDMI_H

#include "core/rpc/rpc.h"
#include "core/server/srv.h"
#include "fdmi/fdmi.h"

/** The FDMI opcode. */
#define FDMI_OP (RPC_OP_USER_MIN + 144u)

/** FdmiReq.kind */
enum fdmi_req_kind {
	FDMK_SUB = 1,
	FDMK_UNSUB = 2,
	FDMK_LIST = 3,
	FDMK_NEXT = 4,
	FDMK_ACK = 5,
	FDMK_RESET = 6,
};

/** Most consumers one list reply carries (a reply fits a message): every
 *  one a store can have. */
#define FDMI_LIST_MAX FDMI_SUBS_MAX
/** Bytes of records one next reply carries (about; MSG_REPLY_BUDGET). */
#define FDMI_NEXT_BYTES (32u << 10)

/** The module (the strata-server main hands it to srv_start()). */
extern const struct srv_module fdmi_srv_module;

#endif
