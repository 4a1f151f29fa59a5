/*
 * isc_eng.h — function shipping on one node's store: the engine side of a
 * shipped call (core/isc/isc_eng.c).  It finds the data a call is over,
 * decides where each piece is mapped, reads it and feeds the executor
 * (isc.h).  Embedded mode calls it for the whole call; a server calls it
 * for the objects homed on it and for indices it holds a replica of, and
 * runs isc_units_run() for the units another server's objects keep on its
 * devices.  docs/isc.md "Where a function runs".
 */
#ifndef STRATA_CORE_ISC_ISC_ENG_H
#define STRATA_CORE_ISC_ISC_ENG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine.h"
#include "core/isc/isc.h"

struct tier_dev;

/** One call on a store (decoded, checked). */
struct isc_call {
	const struct isc_fn *ic_fn;    /**< compiled for ic_target */
	const struct isc_fn_desc *ic_desc;
	enum isc_target ic_target;
	struct st_id ic_id;
	/** objects: blocks [start, start + nr); nr 0 = to the object's
	 *  size (both ends clipped to it) */
	uint64_t ic_start_blk, ic_nr_blks;
	/** indices: keys [lo, hi); NULL = open */
	const void *ic_lo, *ic_hi;
	size_t ic_lo_len, ic_hi_len;
	const void *ic_args;
	size_t ic_alen;
	struct isc_limits ic_lim;   /**< il_deadline_ns: set per run */
	uint32_t ic_deadline_ms;    /**< per run; 0 = ISC_DEADLINE_MS_DEFAULT */
	/** bit of st_where for the runs made here: this server's index, or
	 *  ISC_WHERE_STORE (embedded) */
	uint32_t ic_self;
};

#define ISC_WHERE_WORDS 4u
#define ISC_WHERE_STORE 255u

static inline void isc_where_set(uint64_t *w, uint32_t bit)
{
	w[(bit / 64) % ISC_WHERE_WORDS] |= 1ull << (bit % 64);
}

/** Figures of a call (summed over its runs). */
struct isc_stats {
	uint64_t st_runs;     /**< function runs */
	/** where runs ran, as a bit set: in a cluster the servers (bit =
	 *  server index), embedded the devices (a run through an object's
	 *  READ or over an index: bit ISC_WHERE_STORE) */
	uint64_t st_where[ISC_WHERE_WORDS];
	uint64_t st_bytes;    /**< bytes mapped (object bytes, record bytes) */
	uint64_t st_degraded; /**< units mapped from a degraded read */
};

/** A server's hooks for units on other servers' devices (NULL in embedded
 *  mode: every device is local). */
struct isc_remote_ops {
	/** Is store device dev a remote device?  *server: its owner. */
	bool (*rm_owner)(void *arg, struct eng *e, uint32_t dev,
			 uint32_t *server);
	/** Run c on units u[0..nr) (on devices of server) there: 0 with
	 *  the run's output merged into out and bad[i] = 1 for units the
	 *  owner could not read or whose checksum failed (the home maps
	 *  them from a degraded read); or a negative code with a message,
	 *  *lost true when the server could not be reached or died (then
	 *  all its units are mapped degraded), false when its function
	 *  failed (the call fails). */
	int (*rm_run)(void *arg, struct eng *e, uint32_t server,
		      const struct isc_call *c, const struct eng_unit_ref *u,
		      uint32_t nr, struct isc_out *out, uint8_t *bad,
		      bool *lost, struct isc_stats *st);
	void *rm_arg;
	uint32_t rm_self;  /**< this server's index (its bit in st_where) */
};

/** Run c (ISC_T_OBJ) over object c->ic_id of store e, merging into out.
 *  Errors: -ENOENT (no such object), the executor's (isc.h), -ENOTSUP
 *  (a record size that does not divide the unit size), -EFBIG (granule
 *  "object" over ISC_WHOLE_MAX bytes), -EIO (a unit that could not be
 *  read nor rebuilt). */
int isc_eng_obj(struct eng *e, const struct isc_call *c,
		const struct isc_remote_ops *rm, struct isc_out *out,
		struct isc_stats *st);

/** Run c (ISC_T_IDX) over index c->ic_id of store e (-ENOENT if none). */
int isc_eng_idx(struct eng *e, const struct isc_call *c, struct isc_out *out,
		struct isc_stats *st);

/** One run of c over units u[0..nr) read from devices d[i] at absolute
 *  offsets off[i] (a server's own devices, for another server's object:
 *  srv_isc.c), each checked against its crc; a unit that fails its read
 *  or check is not mapped and gets bad[i] = 1.  Output merged into out. */
int isc_units_run(const struct isc_call *c, struct tier_dev *const *d,
		  const uint64_t *off, const struct eng_unit_ref *u,
		  uint32_t nr, struct isc_out *out, uint8_t *bad,
		  struct isc_stats *st);

/** Largest object a granule "object" function maps at once. */
#define ISC_WHOLE_MAX (64ull << 20)
/** Bytes of a plain or composite object read per extent fed. */
#define ISC_CHUNK (1u << 20)

#endif
