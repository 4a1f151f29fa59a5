/*
 * etcd.h — a small client of etcd 3.4's v3 JSON gateway (HTTP POST of JSON
 * to /v3/kv/..., /v3/lease/..., /v3/watch), with libcurl and json-c: no
 * gRPC stack.  What the cluster map (ha/map.h) and the HA agent need: get,
 * get a prefix, put (optionally under a lease), delete, a compare-and-swap
 * transaction, leases, and a watch.
 *
 * Keys and values are byte strings; the gateway wants them base64 (this
 * file encodes and decodes).  A key is at most ETCD_KEY_MAX bytes, a value
 * at most ETCD_VALUE_MAX (ha/ha_limits.h); a value read back is returned
 * NUL-terminated (the NUL not counted) so JSON text can be used as it is.
 *
 * Endpoints and fail-over.  A handle is made from a list of endpoints
 * ("http://HOST:PORT"; https is not supported).  Every request goes to the
 * endpoint that answered last; when it cannot connect, times out, answers
 * 5xx or with an etcd error that says the member cannot serve now
 * ("etcdserver: leader changed", "no leader", "request timed out", "not
 * capable", gRPC codes UNAVAILABLE/DEADLINE_EXCEEDED), the request moves to
 * the next endpoint; at most ETCD_TRIES_MAX attempts over the list in all
 * (so with one endpoint the request is retried), with a short pause
 * (ETCD_RETRY_PAUSE_MS) after each full turn of the list.  Every attempt
 * has the per-request timeout given at create, so a request returns
 * within about ETCD_TRIES_MAX x (timeout + ETCD_RETRY_PAUSE_MS).  A put retried after a
 * timeout may have been applied once already (etcd gives no
 * idempotency): callers that care use etcd_txn with a compare.
 *
 * Errors: 0 or a negative errno, and err_set() (core/errors.h) with a
 * message that names the endpoint and the key:
 *   -EINVAL       a bad argument (NULL, empty key, key or value too long,
 *                 a malformed endpoint), or a request etcd refused as
 *                 invalid (HTTP 4xx other than below; its message quoted)
 *   -ENOENT       etcd_get: no such key; lease calls: no such lease
 *                 (expired or revoked)
 *   -ECONNREFUSED no endpoint could be connected to, on every attempt
 *   -ETIMEDOUT    the last attempt timed out (connected, no answer in time)
 *   -EIO          the last attempt got a 5xx or "cannot serve" error, or
 *                 an answer that is not the JSON expected
 *   -ERANGE       etcd_watch: the start revision is compacted
 *   -ENOMEM       out of memory
 *   -E2BIG        a value read is larger than ETCD_VALUE_MAX
 *
 * Thread safety: every function may be called from several threads at
 * once on one handle (each request uses its own curl handle; the only
 * shared state is the index of the endpoint that answered last, an
 * atomic).  etcd_destroy() must not race with any other call.
 */
#ifndef STRATA_HA_ETCD_H
#define STRATA_HA_ETCD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ha/ha_limits.h"

struct etcd;

/**
 * Make a handle over nr endpoints (1..ETCD_ENDPOINTS_MAX), each
 * "http://HOST:PORT" (HOST an IPv4 address, a host name, or an IPv6
 * address in brackets; no path).  timeout_ms (1..600000) bounds each
 * attempt of a request (connect included).  Nothing is contacted here.
 * Returns 0 with *out set, -EINVAL naming the bad endpoint, or -ENOMEM.
 * The caller owns *out and frees it with etcd_destroy().
 */
int etcd_create(struct etcd **out, const char *const *endpoints, size_t nr,
		uint32_t timeout_ms);

/** Free the handle (NULL is fine).  No call may be running on it. */
void etcd_destroy(struct etcd *e);

/** The endpoint requests go to first now (the one that answered last);
 *  a pointer into the handle, valid until etcd_destroy(). */
const char *etcd_endpoint(const struct etcd *e);

/** One key-value as read.  ek_value is NUL-terminated (ek_len without it);
 *  ek_key too.  Both owned by the kv: etcd_kv_fini() frees them. */
struct etcd_kv {
	char *ek_key;
	size_t ek_key_len;
	char *ek_value;
	size_t ek_len;
	int64_t ek_create_rev;  /**< revision that created the key */
	int64_t ek_mod_rev;     /**< revision of its last change */
	int64_t ek_version;     /**< changes since creation (1 = created) */
	int64_t ek_lease;       /**< lease id it is under, 0 */
};

/** Free what kv owns and zero it (a zeroed kv is fine). */
void etcd_kv_fini(struct etcd_kv *kv);

/**
 * Read key (NUL-terminated).  Returns 0 with *kv filled (the caller calls
 * etcd_kv_fini), -ENOENT when the key does not exist (*kv zeroed), or an
 * error above (*kv zeroed).  *rev (NULL: not wanted) gets the store's
 * revision at the read, also on -ENOENT.
 */
int etcd_get(struct etcd *e, const char *key, struct etcd_kv *kv,
	     int64_t *rev);

/** etcd_get_prefix's callback: one key in key order; return 0 to go on,
 *  anything else stops the walk and is returned by etcd_get_prefix.  kv
 *  is the function's: copy what is kept. */
typedef int (*etcd_kv_cb)(const struct etcd_kv *kv, void *arg);

/**
 * Every key that starts with prefix (an empty prefix is refused), in key
 * order, at most limit of them (0: ETCD_RANGE_MAX); *more (NULL: not
 * wanted) says whether keys were left out.  cb is called for each.
 * Returns 0, the first nonzero of cb, or an error above.  *rev (NULL: not
 * wanted) gets the revision of the read.
 */
int etcd_get_prefix(struct etcd *e, const char *prefix, uint32_t limit,
		    etcd_kv_cb cb, void *arg, bool *more, int64_t *rev);

/**
 * Put key = value (len bytes, 0..ETCD_VALUE_MAX) under lease (0: none).
 * Returns 0 with *rev (NULL: not wanted) the revision of the put,
 * -ENOENT when the lease does not exist, or an error above.
 */
int etcd_put(struct etcd *e, const char *key, const void *value,
	     size_t len, int64_t lease, int64_t *rev);

/**
 * Delete key, or (prefix true) every key starting with it (an empty
 * prefix is refused).  *deleted (NULL: not wanted) gets how many keys
 * went; deleting nothing is not an error.  Returns 0 or an error above.
 */
int etcd_delete(struct etcd *e, const char *key, bool prefix,
		uint64_t *deleted);

/** One compare of a transaction: ec_key's mod_revision == ec_mod_rev, or
 *  (ec_absent) the key does not exist (create_revision == 0). */
struct etcd_cmp {
	const char *ec_key;
	bool ec_absent;
	int64_t ec_mod_rev;
};

/** One operation of a transaction: put (eo_delete false; eo_value of
 *  eo_len bytes, under eo_lease, 0: none) or delete (of eo_key, or of
 *  the prefix eo_key when eo_prefix). */
struct etcd_op {
	const char *eo_key;
	bool eo_delete;
	bool eo_prefix;
	const void *eo_value;
	size_t eo_len;
	int64_t eo_lease;
};

/**
 * A transaction: if every compare holds (an empty list always holds), do
 * the ops (atomically, one revision), else nothing.  nr_cmp and nr_ops
 * are at most ETCD_TXN_MAX each.  Returns 0 with *succeeded (required)
 * telling which, and *rev (NULL: not wanted) the revision after it; or an
 * error above (then nothing is known of *succeeded's value: false).  A
 * retried attempt after a timeout may find its own earlier success as a
 * refusal (the compare no longer holds): callers re-read.
 */
int etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t nr_cmp,
	     const struct etcd_op *ops, size_t nr_ops, bool *succeeded,
	     int64_t *rev);

/**
 * Grant a lease of ttl_s seconds (1..ETCD_TTL_MAX).  Returns 0 with *id,
 * or an error above.  etcd may grant a longer TTL than asked (its minimum
 * is about 1.5 election timeouts); *granted_s (NULL: not wanted) says.
 */
int etcd_lease_grant(struct etcd *e, uint32_t ttl_s, int64_t *id,
		     uint32_t *granted_s);

/** Renew lease id once (the caller repeats it within the TTL, e.g. every
 *  TTL/3).  Returns 0 with *ttl_s (NULL: not wanted) the TTL it has again,
 *  -ENOENT when it expired or was revoked, or an error above. */
int etcd_lease_keepalive(struct etcd *e, int64_t id, uint32_t *ttl_s);

/** Revoke lease id: every key under it is deleted at once.  Returns 0,
 *  -ENOENT when there is no such lease (already expired), or an error. */
int etcd_lease_revoke(struct etcd *e, int64_t id);

/** What happened to a key, as a watch reports it. */
enum etcd_ev_type { ETCD_EV_PUT = 0, ETCD_EV_DELETE = 1 };

/** etcd_watch's callback: one event, in revision order.  kv holds the key
 *  and (PUT) its new value; ek_mod_rev is the event's revision.  Return 0
 *  to go on, anything else ends the watch (etcd_watch returns it). */
typedef int (*etcd_watch_cb)(enum etcd_ev_type type,
			     const struct etcd_kv *kv, void *arg);

/**
 * Watch key (or every key under the prefix key, when prefix) from
 * revision from_rev (0: from now; events of revisions >= from_rev are
 * delivered, so from_rev = a read's revision + 1 misses nothing after the
 * read).  Blocking: this is a streaming watch (one HTTP response that
 * etcd keeps open and writes events into), and it returns only when
 *   - cb returned nonzero (that value is returned),
 *   - *stop became true (another thread set it; seen within about
 *     ETCD_WATCH_POLL_MS; returns 0),
 *   - every endpoint failed ETCD_TRIES_MAX times in a row (-ECONNREFUSED,
 *     -ETIMEDOUT or -EIO, as for a request), or
 *   - from_rev is compacted (-ERANGE; *last_rev is the oldest revision
 *     still there minus one, so the caller re-reads and watches again).
 * A broken stream (the member died) is re-opened on the next endpoint
 * from the revision after the last event delivered: no event is lost or
 * delivered twice.  A member that goes silent without closing (a cut
 * link) is noticed by TCP keep-alive (5 s idle, probes every 2 s: about
 * 25 s), then likewise.  *last_rev (NULL: not wanted) gets the revision of the
 * last event delivered (or the revision watched from - 1 when none).
 * stop may be NULL (only cb ends it then).
 */
int etcd_watch(struct etcd *e, const char *key, bool prefix,
	       int64_t from_rev, etcd_watch_cb cb, void *arg,
	       const atomic_bool *stop, int64_t *last_rev);

/** Base64 (RFC 4648, with padding) of n bytes into out (at least
 *  4 * ((n + 2) / 3) + 1 bytes; NUL-terminated).  Returns its length. */
size_t etcd_b64_enc(const void *in, size_t n, char *out);

/** Decode base64 text s (len bytes) into out (at least 3 * len / 4 + 1
 *  bytes; NUL-terminated).  Returns the byte count, or -EINVAL when s is
 *  not base64. */
long etcd_b64_dec(const char *s, size_t len, char *out);

#endif /* STRATA_HA_ETCD_H */
