/*
 * fdmi.h — FDMI consumers of one store's record log (issue 31 point 2).
 *
 * The engine appends a record of every change to its log in the change's
 * own transaction (core/fdmi_log.h).  This room keeps the consumers of
 * that log: each one is registered by name with a declarative filter and
 * reads the records in sequence order with fdmi_next(), then releases
 * them with fdmi_ack().  Delivery is at least once: a consumer that dies
 * before its ack is given the same records again (same sequence numbers:
 * deduplicate by (server, seq)); after the ack they are not.
 *
 * Retention.  A record is kept until every ACTIVE consumer acked it (the
 * newest record is always kept: it carries the next sequence number over a
 * restart).  Each consumer has bounds: bytes of records not yet acked and
 * the age of its oldest one.  The trimmer (a thread of struct fdmi, every
 * FDMI_TRIM_PERIOD_MS) marks a consumer past either bound LAGGING, drops
 * its cursor (acked := the head), and trims: a slow consumer never holds
 * the log, and nothing on the write path waits for any consumer.  A
 * LAGGING consumer's fdmi_next() fails -ESTALE until it rescanned the
 * store and called fdmi_reset() (it then reads from the head on).
 *
 * Emission.  The engine emits while at least one consumer is registered
 * (mode FDMI_MODE_AUTO, the default), always (FDMI_MODE_ON: the log is
 * then trimmed to the store's own bounds when no consumer holds it), or
 * never (FDMI_MODE_OFF: fdmi_sub() refused with -ENOTSUP).
 *
 * Consumers are kept in the store's sys table ("fdmi/sub/NAME"): they
 * survive a restart with their cursor, and a cluster home's standbys hold
 * them as they hold its records.
 *
 * Errors: negative errno with a message naming the consumer or field
 * (core/errors.h err_msg()); a failed call changes nothing.
 */
#ifndef STRATA_FDMI_FDMI_H
#define STRATA_FDMI_FDMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/fdmi_log.h"
#include "core/types.h"

struct eng;
struct fdmi;

/** Longest consumer name (bytes, without the NUL): letters, digits, '.',
 *  '_' and '-'. */
#define FDMI_NAME_MAX 48u
/** Most consumers of one store. */
#define FDMI_SUBS_MAX 64u
/** Longest key prefix of a filter. */
#define FDMI_KEY_PREFIX_MAX 128u
/** Default bounds of a consumer: 64 MiB of records not acked, 1 hour. */
#define FDMI_DEF_MAX_BYTES (64ull << 20)
#define FDMI_DEF_MAX_AGE_NS (3600ull * 1000000000ull)
/** The trimmer's period. */
#define FDMI_TRIM_PERIOD_MS 1000u
/** Most records one trim transaction deletes (the rest: next round). */
#define FDMI_TRIM_BATCH 4096u

enum fdmi_mode { FDMI_MODE_AUTO = 0, FDMI_MODE_ON, FDMI_MODE_OFF };
enum fdmi_state { FDMI_ACTIVE = 1, FDMI_LAGGING = 2 };

/** What a consumer receives: records matching every field set. */
struct fdmi_filter {
	uint32_t ff_ops;          /**< bit 1u << op (enum fdmi_op); 0: all */
	bool ff_container_set;
	struct st_id ff_container; /**< entities of this container */
	uint32_t ff_id_bits;      /**< 0: any id; else the first ff_id_bits
				       bits of the 128-bit id (hi then lo)
				       equal ff_id's (128: that entity) */
	struct st_id ff_id;
	uint32_t ff_key_plen;     /**< index records whose key starts with
				       ff_key_prefix (0: any; non-index
				       records never match a prefix) */
	uint8_t ff_key_prefix[FDMI_KEY_PREFIX_MAX];
	int32_t ff_tier;          /**< records of this tier (-1: any) */
};

/** A consumer, as fdmi_list() shows it. */
struct fdmi_sub_info {
	char fs_name[FDMI_NAME_MAX + 1];
	uint32_t fs_state;        /**< enum fdmi_state */
	struct fdmi_filter fs_filter;
	uint64_t fs_acked;        /**< every record <= fs_acked released */
	uint64_t fs_max_bytes;
	uint64_t fs_max_age_ns;
	uint64_t fs_created_ns;
	uint64_t fs_lagged_ns;    /**< last time it was marked LAGGING (0) */
	uint64_t fs_lag_count;    /**< times marked LAGGING */
	/* computed by fdmi_list() */
	uint64_t fs_lag_records;  /**< head seq - fs_acked */
	uint64_t fs_lag_bytes;    /**< bytes of records after fs_acked */
	uint64_t fs_lag_ns;       /**< age of the oldest record after it */
};

/** Records given by fdmi_next(): fb_nr records, copied out. */
struct fdmi_batch {
	uint32_t fb_nr;
	uint64_t fb_last;   /**< last sequence number examined (matching or
				 not): ack it when done, so that records the
				 filter skipped are released too */
	uint64_t fb_head;   /**< the log's head when read */
	uint8_t *fb_buf;    /**< fb_nr entries: u64 seq, u32 len, bytes */
	size_t fb_len, fb_cap;
	uint32_t *fb_at;    /**< offset of entry i in fb_buf */
	uint32_t fb_atcap;
};

/** Configuration of fdmi_open(). */
struct fdmi_conf {
	uint32_t fc_mode;          /**< enum fdmi_mode */
	/** FDMI_MODE_ON with no consumer holding the log: its own bounds
	 *  (0: the FDMI_DEF_* ones) */
	uint64_t fc_max_bytes;
	uint64_t fc_max_age_ns;
	uint32_t fc_trim_period_ms; /**< 0: FDMI_TRIM_PERIOD_MS */
};

/** Open the consumers of e's log (and start the trimmer).  0 and *out,
 *  or a negative code. */
int fdmi_open(struct eng *e, const struct fdmi_conf *c, struct fdmi **out);
/** Stop the trimmer and free f (the engine is not closed). */
void fdmi_close(struct fdmi *f);

/**
 * Register consumer name with filter flt and bounds (0: the defaults).
 * It receives the records after the current head (from_start: every
 * record still kept).  -EEXIST if the name is taken with another filter
 * (the same filter: 0, nothing changed), -EINVAL for a bad name or
 * filter, -ENOSPC past FDMI_SUBS_MAX consumers, -ENOTSUP in FDMI_MODE_OFF.
 */
int fdmi_sub(struct fdmi *f, const char *name, const struct fdmi_filter *flt,
	     uint64_t max_bytes, uint64_t max_age_ns, bool from_start);
/** Remove consumer name (its records are trimmed).  -ENOENT if none. */
int fdmi_unsub(struct fdmi *f, const char *name);
/** Every consumer, in name order, with its lag: up to max in out; *nr the
 *  total. */
int fdmi_list(struct fdmi *f, struct fdmi_sub_info *out, uint32_t max,
	      uint32_t *nr);
/**
 * Up to max records (and about max_bytes) matching name's filter with
 * sequence numbers after max(after, its acked cursor), into b (reset
 * first; free with fdmi_batch_fini()).  0 (b->fb_nr may be 0: nothing
 * new), -ENOENT (no such consumer), -ESTALE (LAGGING: rescan, then
 * fdmi_reset()).
 */
int fdmi_next(struct fdmi *f, const char *name, uint64_t after,
	      uint32_t max, size_t max_bytes, struct fdmi_batch *b);
/** Record i of b, decoded (pointers into b). */
int fdmi_batch_rec(const struct fdmi_batch *b, uint32_t i,
		   struct fdmi_rec *out);
void fdmi_batch_fini(struct fdmi_batch *b);
/** Release every record of name up to seq (at most the head; an older
 *  seq than its cursor changes nothing).  Durable when it returns. */
int fdmi_ack(struct fdmi *f, const char *name, uint64_t seq);
/** A LAGGING consumer rescanned: ACTIVE again, reading from the head. */
int fdmi_reset(struct fdmi *f, const char *name);
/** Run one round of the trimmer now (tests, and after an ack). */
int fdmi_trim_now(struct fdmi *f);
/** Whether record r matches flt. */
bool fdmi_match(const struct fdmi_filter *flt, const struct fdmi_rec *r);
/** Parse a filter from text "op=obj.write,idx.put container=HI:LO
 *  id=HI:LO[/BITS] key=PREFIX tier=N" (fields separated by spaces; every
 *  one optional).  0, or -EINVAL naming the field. */
int fdmi_filter_parse(const char *text, struct fdmi_filter *out);
/** The filter as that text, in buf. */
void fdmi_filter_str(const struct fdmi_filter *flt, char *buf, size_t len);

#endif
