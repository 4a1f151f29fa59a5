/*
 * isc_internal.h — what the files of the executor (isc.h) share: the
 * compiled function, the run, the per-kind entry points, the combining
 * output of a run and the clock.  Nothing outside core/isc includes it
 * (the unit suite does, for the allocator's counter).
 */
#ifndef STRATA_CORE_ISC_ISC_INTERNAL_H
#define STRATA_CORE_ISC_ISC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/isc/isc.h"

struct isc_decl;
struct isc_lua;
struct isc_native;

/** A compiled function (immutable once isc_fn_compile() returned). */
struct isc_fn {
	enum isc_kind f_kind;
	enum isc_target f_target;
	char f_name[ISC_NAME_MAX + 1];   /**< fd_name, or the digest's short
					  *   hex: for messages */
	uint8_t f_digest[ISC_DIGEST_LEN];
	struct isc_decl *f_decl;         /**< ISC_DECL */
	struct isc_lua *f_lua;           /**< ISC_LUA */
	struct isc_native *f_native;     /**< ISC_NATIVE */
};

/** Limits of a run with the defaults filled in and the maxima applied. */
struct isc_lim {
	uint64_t l_mem;
	uint64_t l_deadline_ns;   /**< absolute, eng_now_ns()'s clock */
	uint64_t l_deadline_ms;   /**< for messages */
	uint64_t l_out_max;
	char l_where[160];        /**< " on WHERE", or "" */
};

/*
 * The output of one run with combiners combined as they come: a hash of
 * (key, type) to the offset of that record in the run's list, whose
 * fixed-size value is updated in place.  LIST and MATCH records are
 * appended.  Memory: the list is bounded by its cap; the hash by the
 * list's records.
 */
struct isc_comb {
	struct isc_out c_out;
	uint32_t *c_slot;         /**< offset + 1 of a record; 0: empty */
	uint32_t c_mask;          /**< slots - 1 (a power of two), or 0 */
	uint32_t c_used;
};

/** A run (one share). */
struct isc_run {
	const struct isc_fn *r_fn;
	struct isc_lim r_lim;
	const void *r_args;       /**< the caller's, valid for the run */
	size_t r_alen;
	struct isc_comb r_comb;   /**< the run's output */
	void *r_priv;             /**< the kind's state */
	/** Time left of the run's deadline (ns): the clock runs only while
	 *  the function does (its start, each isc_run_ext/idx, its end),
	 *  not while the engine reads the next extent. */
	uint64_t r_budget_ns;
};

/* ---------------------------------------------------------- isc_fn.c */

/** Fill l from lim (NULL: all defaults). */
void isc_lim_init(struct isc_lim *l, const struct isc_limits *lim);
/** The current time on the deadline's clock (eng_now_ns()). */
uint64_t isc_now_ns(void);

/* --------------------------------------------------------- isc_out.c */

void isc_comb_init(struct isc_comb *c, size_t max);
void isc_comb_fini(struct isc_comb *c);
/** Add one record of a checked type and value size: combined with the
 *  run's record of the same (key, type) when type is a combiner, else
 *  appended.  -E2BIG past the cap; -EINVAL two HIST of different buckets
 *  (message naming fname and the key). */
int isc_comb_add(struct isc_comb *c, const char *fname, const void *key,
		 size_t klen, uint8_t type, const void *val, size_t vlen);
/** Is type a known record type and v (vlen bytes) a valid value of it
 *  (fixed sizes; a HIST's bucket count agreeing with its size)? */
bool isc_val_ok(uint8_t type, const void *v, size_t vlen);
/** Is type a combiner (SUM, MIN, MAX, COUNT, MEAN, HIST, ISUM)? */
bool isc_vtype_comb(uint8_t type);

/* -------------------------------------------------------- isc_decl.c */

int isc_decl_compile(struct isc_fn *f, const char *src, size_t len);
void isc_decl_free(struct isc_decl *d);
uint32_t isc_decl_record(const struct isc_decl *d);
int isc_decl_start(struct isc_run *r);
int isc_decl_ext(struct isc_run *r, uint64_t off, const void *data,
		 size_t len);
int isc_decl_idx(struct isc_run *r, const struct isc_idx_src *src);
int isc_decl_end(struct isc_run *r);
void isc_decl_abort(struct isc_run *r);

/* --------------------------------------------------------- isc_lua.c */

/** Check and keep the script (text only; its top level run once, in the
 *  sandbox with lim's caps, to find map, reduce and granule). */
int isc_lua_compile(struct isc_fn *f, const char *src, size_t len,
		    const struct isc_limits *lim);
void isc_lua_free(struct isc_lua *l);
bool isc_lua_whole(const struct isc_lua *l);
bool isc_lua_has_reduce(const struct isc_lua *l);
int isc_lua_start(struct isc_run *r);
int isc_lua_ext(struct isc_run *r, uint64_t off, const void *data,
		size_t len);
int isc_lua_idx(struct isc_run *r, const struct isc_idx_src *src);
int isc_lua_end(struct isc_run *r);
/** The run's deadline moved to r->r_lim.l_deadline_ns (its watchdog's
 *  too), unless it fired already. */
void isc_lua_deadline(struct isc_run *r);
void isc_lua_abort(struct isc_run *r);
/** isc_out_final()'s reduce: every group of LIST records of one key in
 *  the sorted list src replaced by reduce(key, values); the result (the
 *  other records as they are) appended to dst. */
int isc_lua_reduce(const struct isc_fn *f, const struct isc_limits *lim,
		   const struct isc_out *src, struct isc_out *dst);
/** Bytes held by every Lua state of the process (tests: 0 when no run
 *  is live). */
uint64_t isc_lua_mem_in_use(void);

/* ------------------------------------------------------ isc_native.c */

int isc_native_compile(struct isc_fn *f, const struct isc_fn_desc *d,
		       const struct isc_limits *lim);
void isc_native_free(struct isc_native *n);
int isc_native_ext(struct isc_run *r, uint64_t off, const void *data,
		   size_t len);
int isc_native_idx(struct isc_run *r, const struct isc_idx_src *src);
int isc_native_end(struct isc_run *r);

#endif
