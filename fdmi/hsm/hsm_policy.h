/*
 * hsm_policy.h — the HSM plugin's policy file (issue 31 point 4): classes
 * of objects by predicates, rules that move a class's objects between
 * tiers, triggers (periodic, tier-usage watermarks), order and rate
 * limits.  Parsed from YAML (libyaml); every error names its line and
 * field, and a file with an error is refused whole.
 *
 * The file:
 *
 *   interval: 10s          # periodic trigger: the rules run this often
 *                          # (default 60s; 1s..1d)
 *   window: 300s           # heat window: reads counted over it (default
 *                          # 300s)
 *   rate:
 *     bytes_per_s: 200MiB  # moved bytes a second, all moves (0: no limit)
 *     ops_in_flight: 4     # moves at once (1..64, default 2)
 *   classes:               # at most HSM_CLASSES_MAX
 *     - name: hot          # [A-Za-z0-9_.-], 1..31 chars, unique
 *       container: 0:1     # every predicate optional: all must hold
 *       id: "7:"           # id text prefix ("HI:LO" form, hex)
 *       size_min: 4KiB     # object bytes, inclusive
 *       size_max: 1GiB
 *       age_min: 60s       # since its last write
 *       age_max: 1d
 *       heat_min: 3        # reads in the window
 *       heat_max: 1000     # (given: a bound, 0 too)
 *       tier: sas          # the tier holding most of its bytes now
 *   rules:                 # evaluated in order; an object moves at most
 *     - class: hot         # once a round, by the first rule that picks it
 *       action: promote    # promote | demote | archive (archive: to smr)
 *       to: flash          # nvram | flash | sas | smr
 *       order: mru         # lru (oldest access first, the default) | mru
 *       max_objects: 100   # a round (0: no limit)
 *   watermarks:            # tier-usage triggers
 *     - tier: flash
 *       high: 85%          # start when the tier is this full
 *       low: 80%           # stop when it is back to this
 *       to: sas            # demote its coldest objects (LRU) there
 *
 * Sizes take B, KiB, MiB, GiB, TiB (or none: bytes); durations s, m, h, d
 * (or none: seconds); percentages 1..100 with %.
 */
#ifndef STRATA_FDMI_HSM_POLICY_H
#define STRATA_FDMI_HSM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"

#define HSM_CLASSES_MAX 32u
#define HSM_RULES_MAX 32u
#define HSM_MARKS_MAX 8u
#define HSM_NAME_MAX 31u
#define HSM_ID_PREFIX_MAX 40u

enum hsm_action { HSM_PROMOTE = 1, HSM_DEMOTE = 2, HSM_ARCHIVE = 3 };
enum hsm_order { HSM_LRU = 0, HSM_MRU = 1 };

/** A class: objects for which every predicate set holds. */
struct hsm_class {
	char hc_name[HSM_NAME_MAX + 1];
	bool hc_container_set;
	struct st_id hc_container;
	char hc_id_prefix[HSM_ID_PREFIX_MAX + 1]; /**< "" any */
	uint64_t hc_size_min, hc_size_max;     /**< max 0: no bound */
	uint64_t hc_age_min_ns, hc_age_max_ns; /**< max 0: no bound */
	uint64_t hc_heat_min, hc_heat_max;     /**< max 0: no bound */
	bool hc_heat_max_set;                  /**< heat_max given (0 too) */
	int32_t hc_tier;                       /**< enum st_tier, -1 any */
};

struct hsm_rule {
	uint32_t hr_class;    /**< index in hp_classes */
	uint32_t hr_action;   /**< enum hsm_action */
	uint32_t hr_to;       /**< enum st_tier */
	uint32_t hr_order;    /**< enum hsm_order */
	uint32_t hr_max_objects; /**< 0: no limit */
	uint32_t hr_line;     /**< its line in the file */
};

struct hsm_mark {
	uint32_t hm_tier;     /**< enum st_tier watched */
	uint32_t hm_high_pct; /**< start at this usage */
	uint32_t hm_low_pct;  /**< stop at this (< high) */
	uint32_t hm_to;       /**< demote there (a slower tier) */
	uint32_t hm_line;
};

struct hsm_policy {
	uint64_t hp_interval_ns;
	uint64_t hp_window_ns;
	uint64_t hp_bytes_per_s;   /**< 0: no limit */
	uint32_t hp_ops_in_flight;
	uint32_t hp_nr_classes, hp_nr_rules, hp_nr_marks;
	struct hsm_class hp_classes[HSM_CLASSES_MAX];
	struct hsm_rule hp_rules[HSM_RULES_MAX];
	struct hsm_mark hp_marks[HSM_MARKS_MAX];
};

/**
 * Parse policy text (len bytes; name for messages, e.g. the file's path)
 * into *out.  0, or -EINVAL with a message "NAME:LINE: FIELD: what is
 * wrong" (core/errors.h err_msg()): a YAML syntax error, an unknown key, a
 * value of the wrong kind or out of range, a rule naming no class, a
 * promote to a slower tier or a demote/archive to a faster one, a
 * watermark with low >= high or to a tier not slower than its own,
 * duplicate class names.  *out is left zeroed on error.
 */
int hsm_policy_parse(const char *name, const char *text, size_t len,
		     struct hsm_policy *out);
/** hsm_policy_parse() of the file at path (-errno naming it when it cannot
 *  be read). */
int hsm_policy_load(const char *path, struct hsm_policy *out);
/** The name of tier t ("nvram", "flash", "sas", "smr"), or "?". */
const char *hsm_tier_name(uint32_t t);
/** The tier of name, or -1. */
int hsm_tier_parse(const char *name);

#endif
