/*
 * dtm_srv.h — the participant of cluster dtxs, dtm's server half
 * (dtm/srv_dtx.c; protocol in dtm/README.md "Participant"), as a module of
 * strata-server.
 *
 * The server does not name dtm (it lies below it): whoever assembles a
 * server (the strata-server main, core/server/server.c) puts
 * dtm_srv_module in srv_parts.sp_modules.  The module serves DTM_OP on the
 * server's endpoint (register), loads the dtx log and starts termination
 * of the dtxs in doubt (start), and stops termination (stop).  A server
 * started without it answers DTM_OP with -EOPNOTSUPP (no handler).
 */
#ifndef STRATA_DTM_SRV_H
#define STRATA_DTM_SRV_H

#include "core/server/srv.h"

extern const struct srv_module dtm_srv_module;

#endif
