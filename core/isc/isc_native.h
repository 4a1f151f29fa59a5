/*
 * isc_native.h — the ABI of native functions (ISC_NATIVE) for authors of
 * shared objects.  Self-contained: include it alone and build with
 *
 *   cc -shared -fPIC -O2 -o myfn.so myfn.c
 *
 * A native function is trusted code.  It runs in the server's (or the
 * embedded application's) process, in the thread of the call, with no
 * sandbox: no memory cap, no deadline it cannot ignore, no protection of
 * anything else in that process.  A server loads it only when its path
 * is in the server's allow list (isc_native configuration) and its
 * contents still match the digest taken when it was registered; the same
 * path must hold the same file on every server.  docs/isc.md "Native
 * functions".
 *
 * The shared object exports:
 *   uint32_t strata_isc_abi(void);            required: return
 *                                             STRATA_ISC_NATIVE_ABI
 *   int strata_isc_map_ext(const struct strata_isc_host *h, uint64_t off,
 *                          const void *data, size_t len);
 *       objects: called once per extent fed (off: object byte offset;
 *       data: len bytes, valid during the call).  Required to run on
 *       objects.
 *   int strata_isc_map_idx(const struct strata_isc_host *h);
 *       indices: called once per run; pulls records with h->next().
 *       Required to run on indices.
 *   int strata_isc_finish(const struct strata_isc_host *h);
 *       optional: called once at the end of a run (emit still works).
 * Each returns 0, or a negative errno: the call fails with that code and
 * "native function F failed: rc".  State kept between calls of one run
 * lives wherever the function wants; runs may go on in several threads
 * at once (one per share), so globals need the author's own locking.
 */
#ifndef STRATA_ISC_NATIVE_H
#define STRATA_ISC_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#define STRATA_ISC_NATIVE_ABI 1

/* Record types of emit(), as enum isc_vtype of the server.  Values are
 * little-endian; numbers 8 bytes (int64 or IEEE double). */
#define STRATA_ISC_INT 1      /* int64, listed */
#define STRATA_ISC_FLOAT 2    /* double, listed */
#define STRATA_ISC_BYTES 3    /* bytes, listed */
#define STRATA_ISC_SUM 4      /* double, added */
#define STRATA_ISC_MIN 5      /* double, smallest kept */
#define STRATA_ISC_MAX 6      /* double, largest kept */
#define STRATA_ISC_COUNT 7    /* int64, added */
#define STRATA_ISC_MEAN 8     /* double sum, int64 count: added; the
			       * client gets sum / count */
#define STRATA_ISC_HIST 9     /* double lo, double hi, uint32 nb,
			       * uint64 counts[nb]: added when lo, hi, nb
			       * agree */
#define STRATA_ISC_MATCH 10   /* a key (and a value), listed */
#define STRATA_ISC_ISUM 11    /* int64, added */

/** One index record given by next(); pointers valid until the next
 *  call of next(). */
struct strata_isc_kv {
	const void *key;
	size_t klen;
	const void *val;
	size_t vlen;
};

/** What the server gives a native function. */
struct strata_isc_host {
	uint32_t abi;             /**< STRATA_ISC_NATIVE_ABI */
	const void *args;         /**< the call's arguments (alen bytes) */
	size_t alen;
	void *ctx;                /**< pass to emit and next */
	/** Add one output record (combined with the run's records of the
	 *  same key and type when the type is a combiner).  0, -EINVAL (bad
	 *  type or value size), -E2BIG (the output cap), -ETIMEDOUT (the
	 *  run's deadline passed). */
	int (*emit)(void *ctx, const void *k, size_t kl, uint8_t type,
		    const void *v, size_t vl);
	/** Index runs: up to n (at most 4096) records after key (klen
	 *  bytes; key NULL: from the range's start), in key order, into
	 *  recs; *got 0 when the range is done.  0 or a negative errno
	 *  (-EINVAL on an object run, -ETIMEDOUT past the deadline). */
	int (*next)(void *ctx, const void *key, size_t klen, uint32_t n,
		    struct strata_isc_kv *recs, uint32_t *got);
};

#endif
