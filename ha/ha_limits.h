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


/* ---- the etcd client (ha/etcd.h) and the map's keys (ha/map.h) ---- */

/* Endpoints of one etcd cluster: etcd advises 3, 5 or at most 7 members. */
#define ETCD_ENDPOINTS_MAX 7u
/* Longest key: the map's keys are "/strata/<cluster>/<kind>/<name>", far
 * below; etcd itself allows more. */
#define ETCD_KEY_MAX 512u
/* Largest value: a full map (64 servers of 16 devices) is about 150 KiB of
 * JSON; etcd refuses requests over 1.5 MiB (--max-request-bytes). */
#define ETCD_VALUE_MAX (1u << 20)
/* Attempts of one request over the endpoint list: a member that lost its
 * leader answers "leader changed" until the election ends (about 1 s at
 * the tests' settings, a few at the defaults), so a few turns of the list
 * with a pause (ETCD_RETRY_PAUSE_MS) ride it out; bounded so that a dead
 * cluster is reported, not waited for. */
#define ETCD_TRIES_MAX 12u
#define ETCD_RETRY_PAUSE_MS 250u
/* Keys one range read returns at most (the map's histories are bounded
 * by HA_HISTORY_MAX, members by HA_SERVERS_MAX). */
#define ETCD_RANGE_MAX 10000u
/* Compares and operations of one transaction: etcd's --max-txn-ops
 * default (128). */
#define ETCD_TXN_MAX 128u
/* Longest lease: an hour (membership leases are seconds). */
#define ETCD_TTL_MAX 3600u
/* How soon a stopped watch notices: libcurl calls its progress function
 * about once a second on an idle stream. */
#define ETCD_WATCH_POLL_MS 1000u
/* Longest endpoint URL: "http://" + [host] + ":65535". */
#define ETCD_URL_MAX (7u + 2u + HA_HOST_MAX + 6u)

/* Events and decisions kept in etcd (each of the two logs): older ones
 * are deleted as new ones are appended.  The analyzer looks at the last
 * ten minutes (the flapping window); at a few events a second that is a
 * few thousand; `strata ha events` shows them. */
#define HA_HISTORY_MAX 4096u

#endif /* STRATA_HA_HA_LIMITS_H */
