/*
 * ha_json.h — JSON (json-c) of the HA events and decisions, and the replay
 * file of `strata ha replay` (ha/analyzer.h ha_replay()).
 *
 * Events and decisions are flat JSON objects, every key optional unless
 * said, integers non-negative, names at most HA_NAME_MAX bytes, texts at
 * most HA_TEXT_MAX; an unknown key, a value of the wrong type, a negative
 * or fractional number, a name too long, an unknown kind or state is
 * refused with -EINVAL and an err_set() message naming the key; the
 * struct is then left unchanged.
 *
 *   event:    {"seq": 12, "time_ms": 100000, "kind": "SRV_UNREACHABLE",
 *              "reporter": "s2", "target": "s1", "dev": "",
 *              "incarnation": 3, "count": 0, "job": 0}
 *     required: seq, time_ms, kind, target (not for OP_THAW).  DEV_IOERR,
 *     DEV_FAILED and OP_REPLACE name a device ("dev"), DEV_IOERR a count
 *     >= 1; SRV_*, HOME_READY and OP_ADD/DRAIN/REMOVE/THAW name none;
 *     JOB_* a job >= 1.
 *   decision: {"seq": 7, "time_ms": 111000, "kind": "SET_STATE",
 *              "target": "s1", "dev": "", "state": "FAILED", "job": 0,
 *              "rule": "server-down", "reason": "..."}
 *     required: seq, time_ms, kind, state.  HOME_MOVE also has "acting"
 *     (required: the server that serves the target's home from now on,
 *     the target itself when handed back) and "incarnation" (the
 *     takeover incarnation); written for HOME_MOVE only.
 *
 * The replay file: JSON lines, in seq order (seq strictly increasing).
 * Blank lines and lines starting with '#' are skipped.  The first line may
 * be a header {"map": MAP, "rules": RULES} (both keys optional); every
 * other line is one event.
 *   MAP: a subset of the cluster map, read here until the map's own codec
 *     (ha/map.h) is merged:
 *     {"cluster": "c", "epoch": 0, "tolerance": 1, "frozen": false,
 *      "frozen_ms": 0, "alert": "", "leader": "", "meta_replicas": 3,
 *      "servers": [{"name": "s0", "enclosure": "e0", "address": "a",
 *                   "port": 21000, "state": "ONLINE", "since_ms": 0,
 *                   "job": 0, "incarnation": 1, "acting": "",
 *                   "acting_epoch": 0, "acting_ms": 0,
 *                   "acting_incarnation": 0,
 *                   "devices": ["d0", {"name": "d1", "state": "FAILED",
 *                                      "since_ms": 0, "job": 0}]}]}
 *     required: tolerance, servers (each with a unique name).  Without a
 *     map, one is made from the events: every server named as a target or
 *     reporter ("operator" excepted), each its own enclosure, with the
 *     devices the events name, all ONLINE, tolerance 1, epoch 0.
 *   RULES: "defaults" or "test" (ha_rules_init_defaults/_test()), or an
 *     object {"preset": "defaults"|"test", "quiet_ms": ..., ...} whose keys
 *     are struct ha_rules' fields without "hr_" (quiet_ms, merge_max_ms,
 *     min_reporters, report_ttl_ms, ioerr_count, ioerr_window_ms,
 *     flap_count, flap_period_ms, down_out_ms, encl_min,
 *     transient_max_ms, restart_grace_ms); absent: the defaults.
 * Errors name the file and line: "FILE:LINE: key 'kind': ...".
 */
#ifndef STRATA_HA_HA_JSON_H
#define STRATA_HA_HA_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ha/analyzer.h"
#include "ha/ha.h"

struct json_object;

/* Events in one replay file: the bounded history etcd keeps is far
 * smaller; this only bounds what a file can make us allocate. */
#define HA_REPLAY_EVENTS_MAX 1000000u
/* One line of a replay file (a map of 64 servers x 16 devices fits). */
#define HA_JSON_LINE_MAX (1u << 20)

/** A new JSON object of ev (the caller json_object_put()s it); NULL when
 *  out of memory. */
struct json_object *ha_event_to_json(const struct ha_event *ev);
/** Read ev from o (see above); 0 or -EINVAL (err_set). */
int ha_event_from_json(const struct json_object *o, struct ha_event *ev);
/** The same for decisions. */
struct json_object *ha_decision_to_json(const struct ha_decision *d);
int ha_decision_from_json(const struct json_object *o, struct ha_decision *d);

/**
 * ev or d as one line of JSON (no newline) into buf[size]: returns its
 * length, -ENOSPC when it does not fit (buf then holds ""), -ENOMEM.
 */
int ha_event_format(const struct ha_event *ev, char *buf, size_t size);
int ha_decision_format(const struct ha_decision *d, char *buf, size_t size);

/** Parse text (one JSON object) into ev / d: 0 or -EINVAL (err_set naming
 *  the key, or the JSON error), ev / d unchanged on error. */
int ha_event_parse(const char *text, struct ha_event *ev);
int ha_decision_parse(const char *text, struct ha_decision *d);

/** Read a MAP object (above) into *map (zeroed first); 0 or -EINVAL,
 *  *map unchanged on error. */
int ha_json_map_subset(const struct json_object *o, struct ha_map *map);

/** Read RULES (above) into *r; 0 or -EINVAL, *r unchanged on error. */
int ha_rules_from_json(const struct json_object *o, struct ha_rules *r);

/** A replay file read into memory. */
struct ha_history {
	struct ha_map *hh_map;     /**< malloc()ed: the header's or made */
	bool hh_map_given;         /**< the file had a header map */
	struct ha_rules hh_rules;  /**< the header's, or the defaults */
	struct ha_event *hh_ev;    /**< malloc()ed, hh_nr of them */
	uint32_t hh_nr;
};

/**
 * Read the replay file f (named path in messages) into *h.  Returns 0, or
 * -EINVAL with err_set() "PATH:LINE: ..." (a bad line, a seq not above the
 * one before, a header not first, more than HA_REPLAY_EVENTS_MAX events,
 * more servers or devices than the map holds), -EIO for a read error,
 * -ENOMEM; *h is then empty.  ha_history_fini() frees it.
 */
int ha_history_read(FILE *f, const char *path, struct ha_history *h);
void ha_history_fini(struct ha_history *h);

#endif /* STRATA_HA_HA_JSON_H */
