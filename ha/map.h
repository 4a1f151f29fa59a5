/*
 * map.h — the cluster map (struct ha_map, ha/ha.h) in etcd: its JSON form,
 * its first version made from the cluster file, load / bootstrap / update
 * with compare-and-swap, server membership under leases, the analyzer's
 * leader election, and the two bounded logs (events, decisions).
 *
 * Key layout (every key of a cluster under /strata/<cluster>/; <cluster>
 * is the cluster file's name, [A-Za-z0-9_.-]):
 *
 *   /strata/<c>/map              the map as JSON (ha_map_to_json); its etcd
 *                                mod_revision is the CAS token of updates
 *   /strata/<c>/members/<srv>    {"name","address","port","incarnation"}
 *                                under the server's lease: gone when the
 *                                server stops renewing it
 *   /strata/<c>/leader           the analyzer's server name, under its
 *                                lease (ha_leader_try)
 *   /strata/<c>/events/<seq>     one event's JSON (opaque here: ha_json.c)
 *   /strata/<c>/decisions/<seq>  one decision's JSON (likewise)
 *   /strata/<c>/seq/events       the last seq given in that log, decimal
 *   /strata/<c>/seq/decisions    (the allocation counter, CAS-updated)
 *   /strata/<c>/insync/<srv>     the standbys in sync of home <srv>, as
 *                                the server serving it recorded them
 *                                (ha/srv_home.c): {"acting","seq","insync"}
 *   /strata/<c>/jobs/<id>        a running job's progress (ha_lead.c
 *                                job_progress), removed at its end
 *
 * <seq> is 20 zero-padded decimal digits (1, 2, ...), so etcd's key order
 * is seq order.  A log keeps its last HA_HISTORY_MAX entries: the append
 * of seq S deletes entry S - HA_HISTORY_MAX in the same transaction.
 *
 * Errors: 0 or a negative errno with err_set() naming the key or field;
 * every etcd error of ha/etcd.h passes up unchanged (-ECONNREFUSED,
 * -ETIMEDOUT, -EIO, ...).  Thread safety: these functions keep no state;
 * they are as thread-safe as the etcd handle (fully).
 */
#ifndef STRATA_HA_MAP_H
#define STRATA_HA_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "ha/ha.h"

struct etcd;
struct clu_conf;

/* Largest default number of placement groups (ha_map_from_conf). */
#define HA_PGS_MAX 65536u
/* Placement groups per server by default (then rounded up to a power of
 * two): enough groups that each server holds many, so adding one moves a
 * small share. */
#define HA_PGS_PER_SERVER 64u
/* Attempts of a log append that lost the race for a seq. */
#define HA_LOG_TRIES 32u

/**
 * The map as JSON text (malloc'd, NUL-terminated; the caller frees it):
 *   {"cluster": NAME, "epoch": N, "pgs": N, "pg_replicas": N,
 *    "tolerance": N, "frozen": BOOL, "frozen_ms": N, "alert": TEXT,
 *    "leader": NAME, "meta_replicas": N,
 *    "servers": [{"name", "address", "port", "enclosure", "state",
 *                 "since_ms", "incarnation", "job", "acting",
 *                 "acting_epoch", "acting_ms", "acting_incarnation",
 *                 "devices": [{"name", "state", "since_ms", "job"}]}]}
 * (acting: the server serving this server's home, "" = itself; see
 * ha/ha.h struct ha_srv and docs/cluster.md "Taking over a home")
 * States are their names (ha_state_name).  Returns 0 with *out, -EINVAL
 * when m is not valid (ha_map_check; its message), or -ENOMEM.
 */
int ha_map_to_json(const struct ha_map *m, char **out);

/**
 * ha_map_to_json() for people (`strata ha map`, HAK_MAP): each server also
 * has "standbys", the names of its home's standbys in m as
 * ha_home_standbys() gives them (best first; [] when hm_meta_replicas <
 * 2).  Derived, not stored: the map in etcd is ha_map_to_json()'s.
 */
int ha_map_to_json_view(const struct ha_map *m, char **out);

/**
 * Parse JSON text (len bytes) into *m.  Every field named above is
 * required (but the analyzer's "frozen_ms" and "job", 0 when absent,
 * "meta_replicas" 0..64 and the acting fields, 0 or "" when absent) and
 * checked: its JSON type, its range (epoch >= 1, pgs
 * 1..HA_PGS_MAX, pg_replicas 1..servers, ports 1..65535, states by name,
 * names 1..HA_NAME_MAX of [A-Za-z0-9_.-], text lengths, "acting" ""
 * or another server of the map, "acting_epoch" at most "epoch", at most
 * HA_SERVERS_MAX servers of at most HA_DEVS_MAX devices, server names
 * unique, device names unique within a server); keys not named above are
 * ignored (a newer writer may add some).  Returns 0, or -EINVAL with a
 * message naming the field ("map: servers[1].devices[0].state: 'BAD' is
 * not a state"); then *m is untouched.
 */
int ha_map_from_json(struct ha_map *m, const char *text, size_t len);

/** Is m valid (what ha_map_from_json checks)?  0 or -EINVAL naming the
 *  field. */
int ha_map_check(const struct ha_map *m);

/** The index of the server called name in m, or -ENOENT.  Pure. */
int ha_srv_index(const struct ha_map *m, const char *name);

/**
 * The standbys of home h (a server index of m): the servers that keep a
 * shadow of h's metadata and may take the home over, best first, written
 * to out[0..ret) (room for HA_SERVERS_MAX).  They are pg_place(h, every
 * server of m but h and but those lost for good (ha_srv_lost()), key
 * pg_key(name), enclosure pg_key(enclosure, or the name when it has
 * none), weight 1, hm_meta_replicas - 1) (core/pg.h): fixed while the
 * map's server list and its losses are, whatever the other states, so
 * every server finds the same ones (core/server/srv_repl.h
 * srv_repl_standbys() with the same losses); a standby lost for good is
 * replaced by the next best server, the others stay.  The home itself is
 * the first of its hm_meta_replicas copies and not in out.  Returns how
 * many (0 when hm_meta_replicas < 2 or h is not in m).  Pure.
 */
int ha_home_standbys(const struct ha_map *m, uint32_t h, uint32_t *out);

/** The standbys of home h with no server lost: the cluster file's list
 *  (ha_home_standbys() as if every server were in).  Pure. */
int ha_home_standbys_file(const struct ha_map *m, uint32_t h, uint32_t *out);

/** Is server i lost for good by m: in a map with replicated homes, OUT,
 *  REPAIRING or REPAIRED (its data is, or is being, rebuilt elsewhere:
 *  DOWN became OUT after the rules' delay, or an operator drained or
 *  removed it)?  Such a server is no home's standby: the next best one
 *  takes its place (ha_home_standbys()), and holds it until the server is
 *  back (REBALANCING, ONLINE).  Pure. */
bool ha_srv_lost(const struct ha_map *m, uint32_t i);

/** The server that serves home h now: h's hs_acting, h itself when that
 *  is "" (or names no server of m); -ENOENT when h is not in m.  Pure. */
int ha_home_acting(const struct ha_map *m, uint32_t h);

/** Is server i out of service by m, for the calls of clients and servers:
 *  in a map with replicated homes (hm_meta_replicas >= 2: another server
 *  can serve its home), neither ONLINE nor REBALANCING (the states in
 *  which a server serves its home) nor QUARANTINED (flapping, often up:
 *  asked directly as before).  False for i not in m.  Pure. */
bool ha_srv_out(const struct ha_map *m, uint32_t i);

/**
 * The first map of a cluster from its file: epoch 1, every server and
 * device ONLINE (since now), servers in file order with address, port
 * and enclosure (servers[].enclosure; unset: the server's own name); the
 * devices of each server are the local devices of its store
 * configuration (conf_parse of cs_store_yaml: the devices without a
 * remote, by their names); hm_pgs = HA_PGS_PER_SERVER x servers rounded
 * up to a power of two (at most HA_PGS_MAX); hm_pg_replicas = min(3,
 * servers); hm_tolerance the failures the default layout of the first
 * server's store tolerates (pdclust K, mirror N-1), at least 1 (a plain
 * default layout: objects without redundancy are lost with their server
 * whatever HA decides; the freeze rule protects the redundant ones).  Returns 0,
 * or -EINVAL (more servers or devices than the map holds, a store
 * configuration that does not parse) naming the server.
 */
int ha_map_from_conf(struct ha_map *m, const struct clu_conf *c);

/** The key of kind ("map", "leader", "members/NAME", "events", ...)
 *  under cluster into buf: "/strata/<cluster>/<kind>".  Returns buf. */
const char *ha_key(char *buf, size_t size, const char *cluster,
		   const char *kind);

/**
 * Load the map of cluster from etcd.  Returns 0 with *m and *mod_rev (its
 * CAS token for ha_map_update), -ENOENT when there is none, -EINVAL when
 * the stored text is not a valid map (its field named), or an etcd error.
 */
int ha_map_load(struct etcd *e, const char *cluster, struct ha_map *m,
		int64_t *mod_rev);

/**
 * Store m as the first map of its cluster (m->hm_cluster) if there is
 * none: a transaction that puts it only when the key is absent.  Returns
 * 0 when it was stored, -EEXIST when a map is there already (then *m is
 * replaced by the stored one, so every server ends with the same map), or
 * an error.  *mod_rev (NULL: not wanted) gets the stored map's token.
 */
int ha_map_bootstrap(struct etcd *e, struct ha_map *m, int64_t *mod_rev);

/**
 * Store m as the next map: m->hm_epoch is set to the epoch it had plus
 * one, and the put is made only if the map key's mod_revision is still
 * *mod_rev (the one m was loaded at).  Returns 0 with *mod_rev the new
 * token; -EAGAIN when someone else changed the map first (then m's
 * epoch is left as it was given; the caller loads again and redoes its
 * change); -EINVAL when m is not valid; or an etcd error.
 */
int ha_map_update(struct etcd *e, struct ha_map *m, int64_t *mod_rev);

/** A server's membership record. */
struct ha_member {
	char hmb_name[HA_NAME_MAX + 1];
	char hmb_addr[HA_HOST_MAX + 1];
	uint16_t hmb_port;
	uint64_t hmb_incarnation;
};

/**
 * Put /strata/<cluster>/members/<name> = the member's JSON under lease
 * (required: the key goes when the lease ends).  Returns 0, -EINVAL (a bad
 * name or no lease), -ENOENT (the lease is gone), or an etcd error.
 */
int ha_member_register(struct etcd *e, const char *cluster,
		       const struct ha_member *mb, int64_t lease);

/** Read member name: 0 with *mb, -ENOENT when it is not registered (its
 *  lease ended), -EINVAL when its record is not valid, or an error. */
int ha_member_get(struct etcd *e, const char *cluster, const char *name,
		  struct ha_member *mb);

/**
 * Try to be the analyzer's leader: a transaction that puts
 * /strata/<cluster>/leader = name under lease if the key is absent.
 * Returns 1 when name holds it now (won, or held already with this
 * lease; held by name under an older lease of a previous run: taken over
 * to this lease), 0 when another server holds it (its name into holder,
 * holder_size bytes; holder may be NULL), or an error.
 */
int ha_leader_try(struct etcd *e, const char *cluster, const char *name,
		  int64_t lease, char *holder, size_t holder_size);

/** The leader's name into holder: 0, -ENOENT when none, or an error. */
int ha_leader_get(struct etcd *e, const char *cluster, char *holder,
		  size_t holder_size);

/** Give the leadership up if name holds it (a compare on its revision);
 *  0 also when name did not hold it.  Or an error. */
int ha_leader_resign(struct etcd *e, const char *cluster, const char *name);

/**
 * Append JSON text (opaque here; at most ETCD_VALUE_MAX bytes) to log
 * "events" or "decisions" of cluster: the next seq is taken with a
 * transaction on the log's counter (race-safe between servers; retried
 * at most HA_LOG_TRIES times when another append took it first), and the
 * entry HA_HISTORY_MAX older (ha_log_keep_set) is deleted in the same
 * transaction.  Returns
 * 0 with *seq (NULL: not wanted), -EINVAL (an unknown log, empty text),
 * -EBUSY when every try lost the race, or an etcd error.
 */
int ha_log_append(struct etcd *e, const char *cluster, const char *log,
		  const char *json, uint64_t *seq);

/** Tests: keep n entries per log instead of HA_HISTORY_MAX (0: back to
 *  HA_HISTORY_MAX; at most HA_HISTORY_MAX).  Process-wide. */
void ha_log_keep_set(uint32_t n);

/** ha_log_read's callback: one entry, in seq order; json is
 *  NUL-terminated and the function's (copy what is kept).  Nonzero ends
 *  the read (and is returned). */
typedef int (*ha_log_cb)(uint64_t seq, const char *json, void *arg);

/**
 * Call cb for every entry of log ("events" or "decisions") with seq >=
 * from, in seq order, at most limit (0: HA_HISTORY_MAX).  Returns 0, cb's
 * nonzero, -EINVAL (an unknown log), or an etcd error.  *last (NULL: not
 * wanted) gets the last seq given in the log (0: none yet), also when
 * entries before from were not read.
 */
int ha_log_read(struct etcd *e, const char *cluster, const char *log,
		uint64_t from, uint32_t limit, ha_log_cb cb, void *arg,
		uint64_t *last);

#endif /* STRATA_HA_MAP_H */
