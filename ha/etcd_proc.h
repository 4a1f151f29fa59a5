/*
 * etcd_proc.h — local etcd members for development clusters and tests:
 * start 1 or 3 (up to ETCD_ENDPOINTS_MAX) members of one etcd cluster on
 * a loopback address, wait until they serve, stop them (also from another
 * process: everything is found through files in the directory), and kill
 * one (the etcd leader, for tests).
 *
 * Files in the directory D given at start:
 *   D/etcd<j>/            member j's data (its WAL preallocates 64 MiB;
 *                         etcd 3.4 has no option to make it smaller)
 *   D/etcd<j>.pid         its pid, written when it is started, removed
 *                         when it is stopped
 *   D/etcd<j>.log         its output (etcd's own log, level warn)
 *   D/etcd.endpoints      the client URLs, one a line ("http://H:P")
 *
 * Members are started with setsid, stdin from /dev/null and output to
 * their log, so they outlive the starting process (`strata cluster up`
 * returns while they run) and hold no descriptor of it.  The program is
 * $STRATA_ETCD when set, else /usr/bin/etcd.
 *
 * Errors: 0 or a negative errno with err_set() naming the member, its
 * ports and its log.  Not thread-safe against itself on one directory
 * (one starter or stopper at a time); different directories are
 * independent.
 */
#ifndef STRATA_HA_ETCD_PROC_H
#define STRATA_HA_ETCD_PROC_H

#include <stdbool.h>
#include <stdint.h>

#include "ha/ha_limits.h"

/* How long a start waits for the members, at most: without progress of
 * their logs ETCD_PROC_STALL_MS, in all ETCD_PROC_WAIT_MS (three members
 * on a loaded 2-core machine elect a leader in a few seconds). */
#define ETCD_PROC_STALL_MS 20000u
#define ETCD_PROC_WAIT_MS 120000u
/* How long a stop waits after SIGTERM before SIGKILL. */
#define ETCD_PROC_STOP_MS 10000u

/** What to start. */
struct etcd_proc_conf {
	const char *epc_dir;       /**< D (made if missing) */
	const char *epc_host;      /**< listen address, e.g. "127.0.0.1" */
	uint32_t epc_members;      /**< 1..ETCD_ENDPOINTS_MAX */
	/** Client and peer port of member j (all distinct, 1..65535). */
	uint16_t epc_client[ETCD_ENDPOINTS_MAX];
	uint16_t epc_peer[ETCD_ENDPOINTS_MAX];
	/** Raft timing; 0: 100 ms and 1000 ms (etcd's defaults).  Tests use
	 *  shorter ones (e.g. 50 / 500) for quick leader fail-over. */
	uint32_t epc_heartbeat_ms;
	uint32_t epc_election_ms;
};

/**
 * Start the members of c and wait until each answers /health with
 * "true" (bounded: ETCD_PROC_STALL_MS without progress, ETCD_PROC_WAIT_MS
 * in all).  Returns 0 when all serve; else every member started is
 * stopped again and the error is -EINVAL (a bad conf), -EEXIST (D has a
 * running member already: its pid file names a live process),
 * -EADDRINUSE (a member could not bind: its log says so; a test picks
 * other ports and retries), -ESRCH (a member exited: its log's last line
 * quoted), -ETIMEDOUT (no health in time), -ENOENT (no etcd program), or
 * an errno of making D or its files.
 */
int etcd_proc_start(const struct etcd_proc_conf *c);

/**
 * Stop every member of D: SIGTERM to each whose pid file names a live
 * process, wait for all (ETCD_PROC_STOP_MS), SIGKILL those left; pid
 * files removed.  Data and logs stay.  *stopped and *killed (NULL: not
 * wanted) count them.  Returns 0 (also when none was running).
 */
int etcd_proc_stop(const char *dir, uint32_t *stopped, uint32_t *killed);

/** Kill member j of D with SIGKILL and wait until it is gone (bounded);
 *  its pid file is removed.  0, -ENOENT (no live member j), or -ETIMEDOUT. */
int etcd_proc_kill(const char *dir, uint32_t j);

/** Which member of D is the etcd leader now: its index (asked of every
 *  member that answers /v3/maintenance/status), -ENOENT when none knows
 *  a leader, or an error. */
int etcd_proc_leader(const char *dir);

/** The client endpoints of D (from D/etcd.endpoints) into urls; their
 *  number into *nr.  0, -ENOENT, or -EINVAL (a malformed file). */
int etcd_proc_endpoints(const char *dir,
			char urls[][ETCD_URL_MAX + 1], uint32_t *nr);

/** Is member j of D's process alive (its pid file names a live one)? */
bool etcd_proc_alive(const char *dir, uint32_t j);

#endif /* STRATA_HA_ETCD_PROC_H */
