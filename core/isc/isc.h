/*
 * isc.h — the in-storage compute executor (function shipping, issue 32):
 * the part of a shipped call that runs on the data one node holds, with no
 * knowledge of where that data came from.  The engine and the server feed
 * it (core/isc/isc_eng.c: an object's units, an index's records); the
 * client merges what every share returned and finishes it.  Design and
 * language reference: docs/isc.md.
 *
 * Three kinds of function (enum isc_kind):
 *   ISC_DECL    a declarative filter/aggregate (isc_decl.c): no user code,
 *               bounded by construction;
 *   ISC_LUA     a Lua 5.4 script (isc_lua.c), sandboxed: a fresh state per
 *               run, base/string/table/math/utf8 only, text chunks only, a
 *               memory cap through the allocator, a wall-clock deadline
 *               enforced by a hook installed only when the deadline fires
 *               (no per-instruction cost before), an output cap;
 *   ISC_NATIVE  a trusted shared object (isc_native.c), refused unless its
 *               path is in the allow list the caller passes (server or
 *               embedded configuration), its contents checked against the
 *               registered digest.
 *
 * A function is identified by its digest: SHA-256 over the kind byte and
 * the code (for ISC_NATIVE the code is the path, and the digest covers the
 * path and the shared object's contents).
 *
 * Partial results (struct isc_out) are lists of records (key, type, value)
 * in one byte encoding (below) that any node can merge without knowing the
 * function: records of one key whose type is a combiner (SUM, MIN, MAX,
 * COUNT, MEAN, HIST) combine; LIST values accumulate (a Lua reduce at the
 * client, or returned as they are); MATCH records are listed.
 *
 * Threads: an isc_fn is immutable once compiled and may be shared; an
 * isc_run belongs to one thread at a time.  Every call returns 0 or a
 * negative errno with a message (core/errors.h) naming the function
 * (its name, or its digest's first 12 hex digits), and the reason.
 */
#ifndef STRATA_CORE_ISC_ISC_H
#define STRATA_CORE_ISC_ISC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum isc_kind {
	ISC_DECL = 1,
	ISC_LUA = 2,
	ISC_NATIVE = 3,
};

/** What a run is over. */
enum isc_target {
	ISC_T_OBJ = 1, /**< an object's bytes, fed extent by extent */
	ISC_T_IDX = 2, /**< an index's records in a key range, pulled */
};

/* Limits (defaults and hard maxima; docs/isc.md). */
#define ISC_CODE_MAX (256u << 10)     /* bytes of code (script, program) */
#define ISC_NAME_MAX 128u             /* function name */
#define ISC_ARGS_MAX (64u << 10)      /* bytes of arguments */
#define ISC_MEM_DEFAULT (8ull << 20)  /* Lua allocator cap */
#define ISC_MEM_MAX (256ull << 20)
#define ISC_DEADLINE_MS_DEFAULT 1000u /* per run, wall clock */
#define ISC_DEADLINE_MS_MAX 600000u
#define ISC_OUT_DEFAULT (1u << 20)    /* bytes of encoded output */
#define ISC_OUT_MAX (64u << 20)
#define ISC_DIGEST_LEN 32u

/** Record types of the output encoding. */
enum isc_vtype {
	ISC_V_INT = 1,   /**< int64; LIST semantics (not combined) */
	ISC_V_FLOAT = 2, /**< double; LIST semantics */
	ISC_V_BYTES = 3, /**< bytes; LIST semantics */
	ISC_V_SUM = 4,   /**< double, combined by + */
	ISC_V_MIN = 5,   /**< double, combined by min */
	ISC_V_MAX = 6,   /**< double, combined by max */
	ISC_V_COUNT = 7, /**< int64, combined by + */
	ISC_V_MEAN = 8,  /**< {double sum, int64 count}, combined by +;
			  *   isc_out_final() turns it into ISC_V_FLOAT */
	ISC_V_HIST = 9,  /**< {double lo, double hi, uint32 nb, uint64 c[nb]},
			  *   combined element-wise when lo, hi, nb agree */
	ISC_V_MATCH = 10,/**< a matching key (value: the record, may be empty);
			  *   listed, never combined */
	ISC_V_ISUM = 11, /**< int64, combined by + (Lua emit(k, v, "sum") of
			  *   integers) */
};

/*
 * Encoding of a list of records (struct isc_out.o_buf), repeated:
 *   u32 klen, key[klen], u8 type, u32 vlen, value[vlen]
 * little-endian; numbers are 8 bytes (int64 or IEEE double).  A decoder
 * checks every length against the buffer (isc_out_check()).
 */
struct isc_out {
	uint8_t *o_buf;
	size_t o_len;
	size_t o_cap;   /**< allocated */
	size_t o_max;   /**< cap on o_len: adding past it is -E2BIG */
	uint32_t o_nr;  /**< records */
};

/** One decoded record (pointers into the buffer it came from). */
struct isc_rec {
	const uint8_t *r_key;
	uint32_t r_klen;
	uint8_t r_type;
	const uint8_t *r_val;
	uint32_t r_vlen;
};

/** A function as registered: kind, name, code, digest. */
struct isc_fn_desc {
	enum isc_kind fd_kind;
	const char *fd_name;        /**< for messages; may be NULL */
	const void *fd_code;        /**< DECL program text, Lua source, or
				     *   NATIVE path (NUL-free) */
	size_t fd_code_len;
	uint8_t fd_digest[ISC_DIGEST_LEN];
};

/** Limits of one run. */
struct isc_limits {
	uint64_t il_mem;         /**< Lua allocator cap; 0: default */
	uint64_t il_deadline_ns; /**< absolute, ns on eng_now_ns()'s
				  *   clock (CLOCK_REALTIME); 0: now +
				  *   default */
	uint64_t il_out_max;     /**< output cap; 0: default */
	/** NATIVE: allowed shared object paths (NULL-terminated); NULL or
	 *  empty: native functions refused (-EPERM). */
	const char *const *il_native_allow;
	const char *il_where;    /**< "server NAME" or "embedded, device D"
				  *   for messages; may be NULL */
};

/** Index source of a run: up to n records after (key, klen) — or from
 *  the range's start when key is NULL — within the run's range, in key
 *  order.  Fills recs (pointers valid until the next call) and *got
 *  (0: the range is done).  0 or a negative code with a message. */
struct isc_idx_src {
	int (*is_next)(void *arg, const void *key, size_t klen, uint32_t n,
		       struct isc_rec *recs, uint32_t *got);
	void *is_arg;
};

struct isc_fn;
struct isc_run;

/** Compute the digest of d (sets d->fd_digest).  For ISC_NATIVE the file
 *  at the path is read (its contents hashed with the path). */
int isc_digest(struct isc_fn_desc *d);

/** Hex of the first 6 bytes of a digest, for messages (static buffer per
 *  thread). */
const char *isc_digest_short(const uint8_t d[ISC_DIGEST_LEN]);

/**
 * Compile d for target t: check the digest matches, parse a DECL program,
 * load and check a Lua chunk (text only), or (NATIVE) check the path is
 * allowed and the digest matches, then dlopen it.  *out is freed with
 * isc_fn_free().  Errors: -EINVAL (syntax, with line and column; digest
 * mismatch), -EPERM (native not allowed), -ENOENT, -ENOTSUP (the function
 * cannot run on this target, e.g. a DECL record size on an index).
 */
int isc_fn_compile(struct isc_fn **out, const struct isc_fn_desc *d,
		   enum isc_target t, const struct isc_limits *lim);
void isc_fn_free(struct isc_fn *f);

/** DECL on objects: the record size (1 for others).  A shipped call over
 *  an object checks that it divides the unit size (units are mapped
 *  whole, so no record is cut). */
uint32_t isc_fn_record(const struct isc_fn *f);

/** Lua: the script's global `granule` is "object" (the whole object is
 *  mapped at once at its home, for records that must not be cut at unit
 *  boundaries); false for every other function. */
bool isc_fn_whole_object(const struct isc_fn *f);

/** Lua: the script defines reduce(key, values). */
bool isc_fn_has_reduce(const struct isc_fn *f);

/** Start a run of f over one share with arguments args (may be NULL).
 *  Lua: a fresh state, the script run once (its top level), ARGS set. */
int isc_run_start(struct isc_run **out, const struct isc_fn *f,
		  const void *args, size_t alen, const struct isc_limits *lim);

/** Object: feed one extent of the share (off: object byte offset; data:
 *  len bytes).  DECL: records [off/rec, (off+len)/rec) evaluated; Lua:
 *  map(ext) called with read() over this extent; NATIVE: its map_ext. */
int isc_run_ext(struct isc_run *r, uint64_t off, const void *data,
		size_t len);

/** Index: run over the records src gives (DECL: every record; Lua: map()
 *  called once and pulls with next(key, n); NATIVE: its map_idx). */
int isc_run_idx(struct isc_run *r, const struct isc_idx_src *src);

/** End the run (Lua: finish() if defined) and merge its output into out
 *  (isc_out_merge()).  The run is freed either way. */
int isc_run_end(struct isc_run *r, struct isc_out *out);

/** Free a run without its output (after an error). */
void isc_run_abort(struct isc_run *r);

/* ------------------------------------------------------- output lists */

void isc_out_init(struct isc_out *o, size_t max);
void isc_out_fini(struct isc_out *o);
/** Append one record (no combining).  -E2BIG past o_max. */
int isc_out_add(struct isc_out *o, const void *key, size_t klen,
		uint8_t type, const void *val, size_t vlen);
/** Check an encoded list (from the network): every length in bounds,
 *  known types, fixed-size values of their size.  *nr: records. */
int isc_out_check(const void *buf, size_t len, uint32_t *nr);
/** Iterate: *pos starts at 0; 1 and *rec filled, 0 at the end, or
 *  -EBADMSG. */
int isc_out_next(const void *buf, size_t len, size_t *pos,
		 struct isc_rec *rec);
/** Merge the encoded list src (checked) into dst: combiners of equal
 *  (key, type) combined, everything else appended; the result is sorted
 *  by key (bytes), then type.  -E2BIG past dst's cap, -EBADMSG, -EINVAL
 *  (two HIST of one key with different buckets). */
int isc_out_merge(struct isc_out *dst, const void *src, size_t len);
/** Prefix every key of o with pfx (container calls: the member's id). */
int isc_out_prefix(struct isc_out *o, const void *pfx, size_t plen);
/** Finish a merged list: MEAN -> FLOAT (sum/count); with f a Lua function
 *  with reduce(), every key's LIST values (INT, FLOAT, BYTES) replaced by
 *  reduce(key, {values}) (a fresh sandboxed state, lim's caps), nil
 *  dropping the key. */
int isc_out_final(struct isc_out *o, const struct isc_fn *f,
		  const struct isc_limits *lim);

#endif
