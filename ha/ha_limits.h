/*
 * ha_limits.h — every hard limit of the HA subsystem, each with its reason.
 */
#ifndef STRATA_HA_HA_LIMITS_H
#define STRATA_HA_HA_LIMITS_H

/* Server, enclosure, device and rule names: the cluster file's name limit
 * (CLU_NAME_MAX, core/clu_conf.h), which they come from. */
#define HA_NAME_MAX 31u
/* A server's address as written (RFC 1123 host name: CLU_HOST_MAX). */
#define HA_HOST_MAX 253u
/* Servers in the map: the cluster's own limit (CLU_SERVERS_MAX); the
 * placement simulation (tests/sim) goes far beyond with its own tables. */
#define HA_SERVERS_MAX 64u
/* Devices of one server: stores are made with a handful (the cluster
 * file's devices: list); 16 leaves room for every test and bench layout. */
#define HA_DEVS_MAX 16u
/* A reason or alert sentence. */
#define HA_TEXT_MAX 159u

#endif /* STRATA_HA_HA_LIMITS_H */
