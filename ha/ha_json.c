/*
 * ha_json.c — JSON of HA events and decisions, the map subset and rules of
 * the replay file, and the replay file reader (ha/ha_json.h).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "ha/ha_json.h"

/* ------------------------------------------------------------ fields */

/* Refuse a key of o not in keys (NULL-terminated). */
static int keys_check(const struct json_object *o, const char *what,
		      const char *const *keys)
{
	json_object_object_foreach((struct json_object *)o, k, v) {
		size_t i;
		(void)v;
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(keys[i], k) == 0)
				break;
		if (keys[i] == NULL)
			return err_set(-EINVAL, "%s: key '%s' is not one of "
				       "its keys", what, k);
	}
	return 0;
}

/* A non-negative integer o[key] into *out; *out kept when absent and not
 * required. */
static int get_u64(const struct json_object *o, const char *what,
		   const char *key, bool required, uint64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || v == NULL) {
		if (required)
			return err_set(-EINVAL, "%s: key '%s' is missing",
				       what, key);
		return 0;
	}
	if (!json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0)
		return err_set(-EINVAL, "%s: key '%s' must be a non-negative "
			       "integer", what, key);
	*out = json_object_get_uint64(v);
	return 0;
}

static int get_u32(const struct json_object *o, const char *what,
		   const char *key, bool required, uint32_t *out)
{
	uint64_t v = *out;
	int rc = get_u64(o, what, key, required, &v);

	if (rc == 0 && v > UINT32_MAX)
		return err_set(-EINVAL, "%s: key '%s' is above %u", what, key,
			       UINT32_MAX);
	if (rc == 0)
		*out = (uint32_t)v;
	return rc;
}

static int get_bool(const struct json_object *o, const char *what,
		    const char *key, bool *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || v == NULL)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return err_set(-EINVAL, "%s: key '%s' must be true or false",
			       what, key);
	*out = json_object_get_boolean(v);
	return 0;
}

/* A string o[key] of at most size - 1 bytes, no control characters. */
static int get_str(const struct json_object *o, const char *what,
		   const char *key, bool required, char *buf, size_t size)
{
	struct json_object *v;
	const char *s;
	size_t len;

	if (!json_object_object_get_ex(o, key, &v) || v == NULL) {
		if (required)
			return err_set(-EINVAL, "%s: key '%s' is missing",
				       what, key);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return err_set(-EINVAL, "%s: key '%s' must be a string", what,
			       key);
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (len >= size)
		return err_set(-EINVAL, "%s: key '%s' is %zu bytes, more than "
			       "%zu", what, key, len, size - 1);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20)
			return err_set(-EINVAL, "%s: key '%s' holds a control "
				       "character", what, key);
	memcpy(buf, s, len + 1);
	return 0;
}

/* A name o[key] parsed by parse (ha_*_parse) into *out. */
static int get_enum(const struct json_object *o, const char *what,
		    const char *key, bool required, int (*parse)(const char *),
		    int *out)
{
	char name[HA_NAME_MAX + 1] = "";
	int rc = get_str(o, what, key, required, name, sizeof name), v;

	if (rc != 0 || name[0] == '\0')
		return rc != 0 || !required ? rc :
		       err_set(-EINVAL, "%s: key '%s' is empty", what, key);
	v = parse(name);
	if (v < 0)
		return err_set(-EINVAL, "%s: key '%s': '%s' is not one", what,
			       key, name);
	*out = v;
	return 0;
}

static int add(struct json_object *o, const char *key, struct json_object *v)
{
	if (v == NULL || json_object_object_add(o, key, v) != 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------ events */

struct json_object *ha_event_to_json(const struct ha_event *ev)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL ||
	    add(o, "seq", json_object_new_uint64(ev->he_seq)) ||
	    add(o, "time_ms", json_object_new_uint64(ev->he_time_ms)) ||
	    add(o, "kind", json_object_new_string(ha_ev_kind_name(ev->he_kind))) ||
	    add(o, "reporter", json_object_new_string(ev->he_reporter)) ||
	    add(o, "target", json_object_new_string(ev->he_target)) ||
	    add(o, "dev", json_object_new_string(ev->he_dev)) ||
	    add(o, "incarnation", json_object_new_uint64(ev->he_incarnation)) ||
	    add(o, "count", json_object_new_uint64(ev->he_count)) ||
	    add(o, "job", json_object_new_uint64(ev->he_job)) ||
	    add(o, "epoch", json_object_new_uint64(ev->he_epoch)) ||
	    (ev->he_kind == HA_EV_HOME_INSYNC &&
	     add(o, "insync", json_object_new_uint64(ev->he_insync)))) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* The rules of an event's kind on its other fields. */
static int event_check(const struct ha_event *e, const char *w)
{
	enum ha_ev_kind k = e->he_kind;
	bool wants_dev = k == HA_EV_DEV_IOERR || k == HA_EV_DEV_FAILED ||
			 k == HA_EV_OP_REPLACE;
	bool no_dev = k <= HA_EV_SRV_JOINED || k == HA_EV_OP_DRAIN ||
		      k == HA_EV_OP_REMOVE || k == HA_EV_OP_ADD ||
		      k == HA_EV_OP_THAW || k == HA_EV_HOME_READY ||
		      k == HA_EV_HOME_FROZEN || k == HA_EV_HOME_INSYNC;

	if (k != HA_EV_OP_THAW && e->he_target[0] == '\0')
		return err_set(-EINVAL, "%s: key 'target' is missing or empty "
			       "(kind %s)", w, ha_ev_kind_name(k));
	if (wants_dev && e->he_dev[0] == '\0')
		return err_set(-EINVAL, "%s: key 'dev' is needed by kind %s",
			       w, ha_ev_kind_name(k));
	if (no_dev && e->he_dev[0] != '\0')
		return err_set(-EINVAL, "%s: key 'dev' is not for kind %s", w,
			       ha_ev_kind_name(k));
	if (k == HA_EV_DEV_IOERR && e->he_count == 0)
		return err_set(-EINVAL, "%s: key 'count' must be >= 1 for "
			       "kind DEV_IOERR", w);
	if (k != HA_EV_HOME_INSYNC && e->he_insync != 0)
		return err_set(-EINVAL, "%s: key 'insync' is not for kind %s",
			       w, ha_ev_kind_name(k));
	if ((k == HA_EV_JOB_DONE || k == HA_EV_JOB_FAILED) && e->he_job == 0)
		return err_set(-EINVAL, "%s: key 'job' must be >= 1 for kind "
			       "%s", w, ha_ev_kind_name(k));
	return 0;
}

int ha_event_from_json(const struct json_object *o, struct ha_event *ev)
{
	static const char *const keys[] = { "seq", "time_ms", "kind",
		"reporter", "target", "dev", "incarnation", "count", "job",
		"epoch", "insync", NULL };
	const char *w = "ha event";
	struct ha_event e = { 0 };
	int kind = 0, rc;

	if (o == NULL || !json_object_is_type(o, json_type_object))
		return err_set(-EINVAL, "%s: not a JSON object", w);
	rc = keys_check(o, w, keys);
	if (rc == 0)
		rc = get_u64(o, w, "seq", true, &e.he_seq);
	if (rc == 0)
		rc = get_u64(o, w, "time_ms", true, &e.he_time_ms);
	if (rc == 0)
		rc = get_enum(o, w, "kind", true, ha_ev_kind_parse, &kind);
	e.he_kind = kind;
	if (rc == 0)
		rc = get_str(o, w, "reporter", false, e.he_reporter,
			     sizeof e.he_reporter);
	if (rc == 0)
		rc = get_str(o, w, "target", false, e.he_target,
			     sizeof e.he_target);
	if (rc == 0)
		rc = get_str(o, w, "dev", false, e.he_dev, sizeof e.he_dev);
	if (rc == 0)
		rc = get_u64(o, w, "incarnation", false, &e.he_incarnation);
	if (rc == 0)
		rc = get_u32(o, w, "count", false, &e.he_count);
	if (rc == 0)
		rc = get_u64(o, w, "job", false, &e.he_job);
	if (rc == 0)
		rc = get_u64(o, w, "epoch", false, &e.he_epoch);
	if (rc == 0)
		rc = get_u64(o, w, "insync", false, &e.he_insync);
	if (rc == 0)
		rc = event_check(&e, w);
	if (rc == 0)
		*ev = e;
	return rc;
}

/* ------------------------------------------------------------ decisions */

struct json_object *ha_decision_to_json(const struct ha_decision *d)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL ||
	    add(o, "seq", json_object_new_uint64(d->hd_seq)) ||
	    add(o, "time_ms", json_object_new_uint64(d->hd_time_ms)) ||
	    add(o, "kind", json_object_new_string(ha_dec_kind_name(d->hd_kind))) ||
	    add(o, "target", json_object_new_string(d->hd_target)) ||
	    add(o, "dev", json_object_new_string(d->hd_dev)) ||
	    add(o, "state", json_object_new_string(ha_state_name(d->hd_state))) ||
	    add(o, "job", json_object_new_uint64(d->hd_job)) ||
	    add(o, "rule", json_object_new_string(d->hd_rule)) ||
	    add(o, "reason", json_object_new_string(d->hd_reason)) ||
	    (d->hd_kind == HA_DEC_HOME_MOVE &&
	     (add(o, "acting", json_object_new_string(d->hd_acting)) ||
	      add(o, "incarnation",
		  json_object_new_uint64(d->hd_incarnation))))) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

int ha_decision_from_json(const struct json_object *o, struct ha_decision *d)
{
	static const char *const keys[] = { "seq", "time_ms", "kind",
		"target", "dev", "state", "job", "rule", "reason", "acting",
		"incarnation", NULL };
	const char *w = "ha decision";
	struct ha_decision x = { 0 };
	int kind = 0, st = 0, rc;

	if (o == NULL || !json_object_is_type(o, json_type_object))
		return err_set(-EINVAL, "%s: not a JSON object", w);
	rc = keys_check(o, w, keys);
	if (rc == 0)
		rc = get_u64(o, w, "seq", true, &x.hd_seq);
	if (rc == 0)
		rc = get_u64(o, w, "time_ms", true, &x.hd_time_ms);
	if (rc == 0)
		rc = get_enum(o, w, "kind", true, ha_dec_kind_parse, &kind);
	if (rc == 0)
		rc = get_str(o, w, "target", false, x.hd_target,
			     sizeof x.hd_target);
	if (rc == 0)
		rc = get_str(o, w, "dev", false, x.hd_dev, sizeof x.hd_dev);
	if (rc == 0)
		rc = get_enum(o, w, "state", true, ha_state_parse, &st);
	if (rc == 0)
		rc = get_u64(o, w, "job", false, &x.hd_job);
	if (rc == 0)
		rc = get_str(o, w, "rule", false, x.hd_rule, sizeof x.hd_rule);
	if (rc == 0)
		rc = get_str(o, w, "reason", false, x.hd_reason,
			     sizeof x.hd_reason);
	if (rc == 0)
		rc = get_str(o, w, "acting", false, x.hd_acting,
			     sizeof x.hd_acting);
	if (rc == 0)
		rc = get_u64(o, w, "incarnation", false, &x.hd_incarnation);
	x.hd_kind = kind;
	x.hd_state = st;
	if (rc == 0 && x.hd_dev[0] && !x.hd_target[0])
		rc = err_set(-EINVAL, "%s: key 'dev' without a 'target'", w);
	if (rc == 0 && !x.hd_target[0] &&
	    (kind == HA_DEC_SET_STATE || kind == HA_DEC_JOB_REPAIR ||
	     kind == HA_DEC_JOB_REBALANCE || kind == HA_DEC_HOME_MOVE ||
	     kind == HA_DEC_JOB_PAUSE || kind == HA_DEC_JOB_ABORT))
		rc = err_set(-EINVAL, "%s: key 'target' is needed by kind %s",
			     w, ha_dec_kind_name(kind));
	if (rc == 0 && kind == HA_DEC_HOME_MOVE && !x.hd_acting[0])
		rc = err_set(-EINVAL, "%s: key 'acting' is needed by kind %s",
			     w, ha_dec_kind_name(kind));
	if (rc == 0)
		*d = x;
	return rc;
}

/* ------------------------------------------------------------ text */

static int format(struct json_object *o, char *buf, size_t size)
{
	const char *s;
	size_t len;

	if (size > 0)
		buf[0] = '\0';
	if (o == NULL)
		return err_set(-ENOMEM, "ha json: no memory");
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(s);
	if (len >= size) {
		json_object_put(o);
		return err_set(-ENOSPC, "ha json: %zu bytes do not fit in %zu",
			       len, size);
	}
	memcpy(buf, s, len + 1);
	json_object_put(o);
	return (int)len;
}

int ha_event_format(const struct ha_event *ev, char *buf, size_t size)
{
	return format(ha_event_to_json(ev), buf, size);
}

int ha_decision_format(const struct ha_decision *d, char *buf, size_t size)
{
	return format(ha_decision_to_json(d), buf, size);
}

/* Parse text as one JSON value; NULL with err_set() on bad JSON. */
static struct json_object *parse_text(const char *text, const char *what)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;
	enum json_tokener_error jerr;
	size_t len = strlen(text);

	if (tok == NULL) {
		err_set(-ENOMEM, "%s: no memory", what);
		return NULL;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	if (o == NULL || jerr != json_tokener_success) {
		err_set(-EINVAL, "%s: bad JSON: %s", what,
			jerr == json_tokener_continue ? "unexpected end" :
			json_tokener_error_desc(jerr));
		json_object_put(o);
		o = NULL;
	} else {
		size_t end = json_tokener_get_parse_end(tok);
		while (end < len && strchr(" \t\r\n", text[end]))
			end++;
		if (end < len) {
			err_set(-EINVAL, "%s: bad JSON: text after the object",
				what);
			json_object_put(o);
			o = NULL;
		}
	}
	json_tokener_free(tok);
	return o;
}

int ha_event_parse(const char *text, struct ha_event *ev)
{
	struct json_object *o = parse_text(text, "ha event");
	int rc;

	if (o == NULL)
		return -EINVAL;
	rc = ha_event_from_json(o, ev);
	json_object_put(o);
	return rc;
}

int ha_decision_parse(const char *text, struct ha_decision *d)
{
	struct json_object *o = parse_text(text, "ha decision");
	int rc;

	if (o == NULL)
		return -EINVAL;
	rc = ha_decision_from_json(o, d);
	json_object_put(o);
	return rc;
}

/* ------------------------------------------------------------ map subset */

static int dev_read(struct json_object *o, struct ha_srv *s, uint32_t j)
{
	static const char *const keys[] = { "name", "state", "since_ms",
		"job", NULL };
	struct ha_dev *d = &s->hs_devs[j];
	char w[2 * HA_NAME_MAX + 32];
	int st = HA_ONLINE, rc;

	snprintf(w, sizeof w, "map: server %s device %u", s->hs_name, j);
	if (json_object_is_type(o, json_type_string)) {
		struct json_object *t = json_object_new_object();
		if (t == NULL)
			return err_set(-ENOMEM, "%s: no memory", w);
		json_object_object_add(t, "name", json_object_get(o));
		rc = dev_read(t, s, j);
		json_object_put(t);
		return rc;
	}
	if (!json_object_is_type(o, json_type_object))
		return err_set(-EINVAL, "%s: must be a name or an object", w);
	rc = keys_check(o, w, keys);
	if (rc == 0)
		rc = get_str(o, w, "name", true, d->hd_name, sizeof d->hd_name);
	if (rc == 0 && d->hd_name[0] == '\0')
		rc = err_set(-EINVAL, "%s: key 'name' is empty", w);
	if (rc == 0)
		rc = get_enum(o, w, "state", false, ha_state_parse, &st);
	d->hd_state = st;
	if (rc == 0)
		rc = get_u64(o, w, "since_ms", false, &d->hd_since_ms);
	if (rc == 0)
		rc = get_u64(o, w, "job", false, &d->hd_job);
	for (uint32_t k = 0; rc == 0 && k < j; k++)
		if (strcmp(s->hs_devs[k].hd_name, d->hd_name) == 0)
			rc = err_set(-EINVAL, "map: server %s: device '%s' "
				     "twice", s->hs_name, d->hd_name);
	return rc;
}

static int srv_read(struct json_object *o, struct ha_map *m, uint32_t i)
{
	static const char *const keys[] = { "name", "enclosure", "address",
		"port", "state", "since_ms", "job", "incarnation", "devices",
		"acting", "acting_epoch", "acting_ms", "acting_incarnation",
		NULL };
	struct ha_srv *s = &m->hm_servers[i];
	struct json_object *devs;
	char w[64];
	uint32_t port = 0;
	int st = HA_ONLINE, rc;

	snprintf(w, sizeof w, "map: server %u", i);
	if (!json_object_is_type(o, json_type_object))
		return err_set(-EINVAL, "%s: not a JSON object", w);
	rc = keys_check(o, w, keys);
	if (rc == 0)
		rc = get_str(o, w, "name", true, s->hs_name, sizeof s->hs_name);
	if (rc == 0 && s->hs_name[0] == '\0')
		rc = err_set(-EINVAL, "%s: key 'name' is empty", w);
	for (uint32_t k = 0; rc == 0 && k < i; k++)
		if (strcmp(m->hm_servers[k].hs_name, s->hs_name) == 0)
			rc = err_set(-EINVAL, "map: server '%s' twice",
				     s->hs_name);
	if (rc == 0)
		rc = get_str(o, w, "enclosure", false, s->hs_enclosure,
			     sizeof s->hs_enclosure);
	if (rc == 0)
		rc = get_str(o, w, "address", false, s->hs_addr,
			     sizeof s->hs_addr);
	if (rc == 0)
		rc = get_u32(o, w, "port", false, &port);
	if (rc == 0 && port > UINT16_MAX)
		rc = err_set(-EINVAL, "%s: key 'port' is above 65535", w);
	s->hs_port = (uint16_t)port;
	if (rc == 0)
		rc = get_enum(o, w, "state", false, ha_state_parse, &st);
	s->hs_state = st;
	if (rc == 0)
		rc = get_u64(o, w, "since_ms", false, &s->hs_since_ms);
	if (rc == 0)
		rc = get_u64(o, w, "job", false, &s->hs_job);
	if (rc == 0)
		rc = get_u64(o, w, "incarnation", false, &s->hs_incarnation);
	if (rc == 0)
		rc = get_str(o, w, "acting", false, s->hs_acting,
			     sizeof s->hs_acting);
	if (rc == 0)
		rc = get_u64(o, w, "acting_epoch", false, &s->hs_acting_epoch);
	if (rc == 0)
		rc = get_u64(o, w, "acting_ms", false, &s->hs_acting_ms);
	if (rc == 0)
		rc = get_u64(o, w, "acting_incarnation", false,
			     &s->hs_acting_inc);
	if (rc != 0 || !json_object_object_get_ex(o, "devices", &devs))
		return rc;
	if (!json_object_is_type(devs, json_type_array))
		return err_set(-EINVAL, "map: server %s: key 'devices' must be "
			       "an array", s->hs_name);
	if (json_object_array_length(devs) > HA_DEVS_MAX)
		return err_set(-EINVAL, "map: server %s: more than %u devices",
			       s->hs_name, HA_DEVS_MAX);
	s->hs_nr_devs = (uint32_t)json_object_array_length(devs);
	for (uint32_t j = 0; rc == 0 && j < s->hs_nr_devs; j++)
		rc = dev_read(json_object_array_get_idx(devs, j), s, j);
	return rc;
}

int ha_json_map_subset(const struct json_object *o, struct ha_map *map)
{
	static const char *const keys[] = { "cluster", "epoch", "tolerance",
		"frozen", "frozen_ms", "alert", "leader", "servers",
		"meta_replicas", NULL };
	const char *w = "map";
	struct ha_map *m;
	struct json_object *srvs;
	int rc;

	if (o == NULL || !json_object_is_type(o, json_type_object))
		return err_set(-EINVAL, "map: not a JSON object");
	m = calloc(1, sizeof *m);
	if (m == NULL)
		return err_set(-ENOMEM, "map: no memory");
	rc = keys_check(o, w, keys);
	if (rc == 0)
		rc = get_str(o, w, "cluster", false, m->hm_cluster,
			     sizeof m->hm_cluster);
	if (rc == 0)
		rc = get_u64(o, w, "epoch", false, &m->hm_epoch);
	if (rc == 0)
		rc = get_u32(o, w, "tolerance", true, &m->hm_tolerance);
	if (rc == 0)
		rc = get_bool(o, w, "frozen", &m->hm_frozen);
	if (rc == 0)
		rc = get_u64(o, w, "frozen_ms", false, &m->hm_frozen_ms);
	if (rc == 0)
		rc = get_str(o, w, "alert", false, m->hm_alert,
			     sizeof m->hm_alert);
	if (rc == 0)
		rc = get_str(o, w, "leader", false, m->hm_leader,
			     sizeof m->hm_leader);
	if (rc == 0)
		rc = get_u32(o, w, "meta_replicas", false,
			     &m->hm_meta_replicas);
	if (rc == 0 && (!json_object_object_get_ex(o, "servers", &srvs) ||
			!json_object_is_type(srvs, json_type_array)))
		rc = err_set(-EINVAL, "map: key 'servers' must be an array");
	if (rc == 0 && json_object_array_length(srvs) > HA_SERVERS_MAX)
		rc = err_set(-EINVAL, "map: more than %u servers",
			     HA_SERVERS_MAX);
	if (rc == 0)
		m->hm_nr_servers = (uint32_t)json_object_array_length(srvs);
	for (uint32_t i = 0; rc == 0 && i < m->hm_nr_servers; i++)
		rc = srv_read(json_object_array_get_idx(srvs, i), m, i);
	if (rc == 0)
		*map = *m;
	free(m);
	return rc;
}

/* ------------------------------------------------------------ rules */

int ha_rules_from_json(const struct json_object *o, struct ha_rules *r)
{
	static const char *const keys[] = { "preset", "quiet_ms",
		"merge_max_ms", "min_reporters", "report_ttl_ms",
		"ioerr_count", "ioerr_window_ms", "flap_count",
		"flap_period_ms", "down_out_ms", "encl_min",
		"transient_max_ms", "restart_grace_ms", NULL };
	const char *w = "rules";
	char preset[16] = "defaults";
	struct ha_rules x;
	int rc = 0;

	if (o != NULL && json_object_is_type(o, json_type_string)) {
		snprintf(preset, sizeof preset, "%s", json_object_get_string((struct json_object *)o));
	} else if (o == NULL || !json_object_is_type(o, json_type_object)) {
		return err_set(-EINVAL, "rules: must be \"defaults\", \"test\" "
			       "or an object");
	} else {
		rc = keys_check(o, w, keys);
		if (rc == 0)
			rc = get_str(o, w, "preset", false, preset,
				     sizeof preset);
		if (rc != 0)
			return rc;
	}
	if (strcmp(preset, "defaults") == 0)
		ha_rules_init_defaults(&x);
	else if (strcmp(preset, "test") == 0)
		ha_rules_init_test(&x);
	else
		return err_set(-EINVAL, "rules: preset '%s' is not \"defaults\" "
			       "or \"test\"", preset);
	if (json_object_is_type(o, json_type_object)) {
		if (rc == 0)
			rc = get_u64(o, w, "quiet_ms", false, &x.hr_quiet_ms);
		if (rc == 0)
			rc = get_u64(o, w, "merge_max_ms", false,
				     &x.hr_merge_max_ms);
		if (rc == 0)
			rc = get_u32(o, w, "min_reporters", false,
				     &x.hr_min_reporters);
		if (rc == 0)
			rc = get_u64(o, w, "report_ttl_ms", false,
				     &x.hr_report_ttl_ms);
		if (rc == 0)
			rc = get_u32(o, w, "ioerr_count", false,
				     &x.hr_ioerr_count);
		if (rc == 0)
			rc = get_u64(o, w, "ioerr_window_ms", false,
				     &x.hr_ioerr_window_ms);
		if (rc == 0)
			rc = get_u32(o, w, "flap_count", false,
				     &x.hr_flap_count);
		if (rc == 0)
			rc = get_u64(o, w, "flap_period_ms", false,
				     &x.hr_flap_period_ms);
		if (rc == 0)
			rc = get_u64(o, w, "down_out_ms", false,
				     &x.hr_down_out_ms);
		if (rc == 0)
			rc = get_u32(o, w, "encl_min", false, &x.hr_encl_min);
		if (rc == 0)
			rc = get_u64(o, w, "transient_max_ms", false,
				     &x.hr_transient_max_ms);
		if (rc == 0)
			rc = get_u64(o, w, "restart_grace_ms", false,
				     &x.hr_restart_grace_ms);
	}
	if (rc == 0)
		rc = ha_rules_check(&x);
	if (rc == 0)
		*r = x;
	return rc;
}

/* ------------------------------------------------------------ history */

/* Add server name (and device dev) to a map made from the events. */
static int made_add(struct ha_map *m, const char *name, const char *dev)
{
	struct ha_srv *s = NULL;

	if (name[0] == '\0' || strcmp(name, "operator") == 0)
		return 0;
	for (uint32_t i = 0; i < m->hm_nr_servers && s == NULL; i++)
		if (strcmp(m->hm_servers[i].hs_name, name) == 0)
			s = &m->hm_servers[i];
	if (s == NULL) {
		if (m->hm_nr_servers == HA_SERVERS_MAX)
			return err_set(-EINVAL, "more than %u servers named",
				       HA_SERVERS_MAX);
		s = &m->hm_servers[m->hm_nr_servers++];
		snprintf(s->hs_name, sizeof s->hs_name, "%s", name);
	}
	if (dev[0] == '\0')
		return 0;
	for (uint32_t j = 0; j < s->hs_nr_devs; j++)
		if (strcmp(s->hs_devs[j].hd_name, dev) == 0)
			return 0;
	if (s->hs_nr_devs == HA_DEVS_MAX)
		return err_set(-EINVAL, "server %s: more than %u devices "
			       "named", name, HA_DEVS_MAX);
	snprintf(s->hs_devs[s->hs_nr_devs++].hd_name, HA_NAME_MAX + 1, "%s",
		 dev);
	return 0;
}

/* The header line {"map": ..., "rules": ...}. */
static int header_read(struct json_object *o, struct ha_history *h)
{
	static const char *const keys[] = { "map", "rules", NULL };
	struct json_object *v;
	int rc = keys_check(o, "header", keys);

	if (rc == 0 && json_object_object_get_ex(o, "map", &v)) {
		rc = ha_json_map_subset(v, h->hh_map);
		h->hh_map_given = rc == 0;
	}
	if (rc == 0 && json_object_object_get_ex(o, "rules", &v))
		rc = ha_rules_from_json(v, &h->hh_rules);
	return rc;
}

/* One line (n, text) of the file. */
static int line_read(struct ha_history *h, const char *text, uint32_t n,
		     uint32_t *cap, bool first)
{
	struct json_object *o = parse_text(text, "line");
	struct ha_event e;
	int rc;

	if (o == NULL)
		return -EINVAL;
	if (json_object_is_type(o, json_type_object) &&
	    (json_object_object_get_ex(o, "map", NULL) ||
	     json_object_object_get_ex(o, "rules", NULL))) {
		rc = first ? header_read(o, h) :
		     err_set(-EINVAL, "a header {\"map\", \"rules\"} must be "
			     "the first line");
		json_object_put(o);
		return rc;
	}
	rc = ha_event_from_json(o, &e);
	json_object_put(o);
	if (rc != 0)
		return rc;
	if (h->hh_nr > 0 && e.he_seq <= h->hh_ev[h->hh_nr - 1].he_seq)
		return err_set(-EINVAL, "seq %llu is not above the one before "
			       "(%llu)", (unsigned long long)e.he_seq,
			       (unsigned long long)h->hh_ev[h->hh_nr - 1].he_seq);
	if (h->hh_nr == HA_REPLAY_EVENTS_MAX)
		return err_set(-EINVAL, "more than %u events",
			       HA_REPLAY_EVENTS_MAX);
	if (h->hh_nr == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 256;
		struct ha_event *p = realloc(h->hh_ev, ncap * sizeof *p);
		if (p == NULL)
			return err_set(-ENOMEM, "no memory for %u events", ncap);
		h->hh_ev = p;
		*cap = ncap;
	}
	(void)n;
	h->hh_ev[h->hh_nr++] = e;
	return 0;
}

void ha_history_fini(struct ha_history *h)
{
	free(h->hh_map);
	free(h->hh_ev);
	memset(h, 0, sizeof *h);
}

int ha_history_read(FILE *f, const char *path, struct ha_history *h)
{
	char *line = NULL;
	size_t size = 0;
	ssize_t len;
	uint32_t n = 0, cap = 0;
	bool first = true;
	int rc = 0;

	memset(h, 0, sizeof *h);
	ha_rules_init_defaults(&h->hh_rules);
	h->hh_map = calloc(1, sizeof *h->hh_map);
	if (h->hh_map == NULL)
		return err_set(-ENOMEM, "%s: no memory for the map", path);
	while (rc == 0 && (len = getline(&line, &size, f)) >= 0) {
		const char *p = line;
		n++;
		if ((size_t)len > HA_JSON_LINE_MAX) {
			rc = err_set(-EINVAL, "%s:%u: line longer than %u bytes",
				     path, n, HA_JSON_LINE_MAX);
			break;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' || *p == '\n' || *p == '\r' || *p == '#')
			continue;
		rc = line_read(h, p, n, &cap, first);
		first = false;
		if (rc != 0)
			rc = err_set(rc, "%s:%u: %s", path, n, err_msg());
	}
	if (rc == 0 && ferror(f))
		rc = err_set(-EIO, "%s: read error", path);
	free(line);
	if (rc == 0 && !h->hh_map_given) {
		h->hh_map->hm_tolerance = 1;
		for (uint32_t i = 0; rc == 0 && i < h->hh_nr; i++) {
			rc = made_add(h->hh_map, h->hh_ev[i].he_target,
				      h->hh_ev[i].he_dev);
			if (rc == 0)
				rc = made_add(h->hh_map,
					      h->hh_ev[i].he_reporter, "");
			if (rc != 0)
				rc = err_set(rc, "%s: the map made from its "
					     "events: %s", path, err_msg());
		}
	}
	if (rc != 0)
		ha_history_fini(h);
	return rc;
}
