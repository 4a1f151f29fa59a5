/*
 * map.c — the cluster map in etcd (contract in ha/map.h): JSON both ways,
 * the first map from the cluster file, CAS load/bootstrap/update,
 * membership, leader election, and the bounded logs.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "core/clu_conf.h"
#include "core/conf.h"
#include "core/errors.h"
#include "core/pg.h"
#include "core/types.h"
#include "ha/etcd.h"
#include "ha/map.h"

static uint64_t wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/* --------------------------------------------------------- homes */

int ha_srv_index(const struct ha_map *m, const char *name)
{
	for (uint32_t i = 0; name != NULL && i < m->hm_nr_servers; i++)
		if (strcmp(m->hm_servers[i].hs_name, name) == 0)
			return (int)i;
	return -ENOENT;
}

static int standbys(const struct ha_map *m, uint32_t h, bool losses,
		    uint32_t *out)
{
	struct pg_cand c[HA_SERVERS_MAX];
	uint32_t idx[HA_SERVERS_MAX], pick[PG_REPLICAS_MAX];
	uint32_t r = m->hm_meta_replicas, n = 0;
	int got;

	if (h >= m->hm_nr_servers || r < 2)
		return 0;
	if (r > m->hm_nr_servers)
		r = m->hm_nr_servers;
	if (r - 1 > PG_REPLICAS_MAX)
		r = PG_REPLICAS_MAX + 1;
	for (uint32_t i = 0; i < m->hm_nr_servers; i++) {
		const struct ha_srv *s = &m->hm_servers[i];
		const char *encl = s->hs_enclosure[0] ? s->hs_enclosure
						      : s->hs_name;
		if (i == h)
			continue;
		c[n] = (struct pg_cand){ .pc_key = pg_key(s->hs_name),
					 .pc_encl = (uint32_t)pg_key(encl),
					 .pc_weight = 1,
					 .pc_in = !losses || !ha_srv_lost(m, i) };
		idx[n++] = i;
	}
	got = pg_place(h, c, n, r - 1, pick);
	if (got < 0)
		return 0;
	for (int k = 0; k < got; k++)
		out[k] = idx[pick[k]];
	return (uint32_t)got;
}

int ha_home_standbys(const struct ha_map *m, uint32_t h, uint32_t *out)
{
	return standbys(m, h, true, out);
}

int ha_home_standbys_file(const struct ha_map *m, uint32_t h, uint32_t *out)
{
	return standbys(m, h, false, out);
}

bool ha_srv_lost(const struct ha_map *m, uint32_t i)
{
	enum ha_state st;

	if (m->hm_meta_replicas < 2 || i >= m->hm_nr_servers)
		return false;
	st = m->hm_servers[i].hs_state;
	return st == HA_OUT || st == HA_REPAIRING || st == HA_REPAIRED;
}

bool ha_srv_out(const struct ha_map *m, uint32_t i)
{
	enum ha_state st;

	if (m->hm_meta_replicas < 2 || i >= m->hm_nr_servers)
		return false;
	st = m->hm_servers[i].hs_state;
	return st != HA_ONLINE && st != HA_REBALANCING &&
	       st != HA_QUARANTINED;
}

int ha_home_acting(const struct ha_map *m, uint32_t h)
{
	int a;

	if (h >= m->hm_nr_servers)
		return -ENOENT;
	if (m->hm_servers[h].hs_acting[0] == '\0')
		return (int)h;
	a = ha_srv_index(m, m->hm_servers[h].hs_acting);
	return a >= 0 ? a : (int)h;
}

/* --------------------------------------------------------- checks */

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > HA_NAME_MAX || s[0] == '.')
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' ||
		      *s == '.'))
			return false;
	return true;
}

static int bad(const char *field, const char *what)
{
	return err_set(-EINVAL, "map: %s: %s", field, what);
}

/* The checks of one server (i) of m. */
static int srv_check(const struct ha_map *m, uint32_t i)
{
	const struct ha_srv *s = &m->hm_servers[i];
	char f[96];

	snprintf(f, sizeof f, "servers[%u].name", i);
	if (!name_ok(s->hs_name))
		return bad(f, "not a name (1..31 of A-Z a-z 0-9 _ - .)");
	for (uint32_t j = 0; j < i; j++)
		if (strcmp(m->hm_servers[j].hs_name, s->hs_name) == 0)
			return bad(f, "server name used twice");
	snprintf(f, sizeof f, "servers[%u].address", i);
	if (s->hs_addr[0] == '\0' || strnlen(s->hs_addr, sizeof s->hs_addr) >
	    HA_HOST_MAX)
		return bad(f, "empty or too long");
	snprintf(f, sizeof f, "servers[%u].port", i);
	if (s->hs_port == 0)
		return bad(f, "not a port (1..65535)");
	snprintf(f, sizeof f, "servers[%u].enclosure", i);
	if (s->hs_enclosure[0] != '\0' && !name_ok(s->hs_enclosure))
		return bad(f, "not a name");
	snprintf(f, sizeof f, "servers[%u].state", i);
	if ((unsigned)s->hs_state >= HA_STATE_NR)
		return bad(f, "not a state");
	snprintf(f, sizeof f, "servers[%u].devices", i);
	if (s->hs_nr_devs > HA_DEVS_MAX)
		return bad(f, "more devices than HA_DEVS_MAX (16)");
	for (uint32_t d = 0; d < s->hs_nr_devs; d++) {
		snprintf(f, sizeof f, "servers[%u].devices[%u].name", i, d);
		if (!name_ok(s->hs_devs[d].hd_name))
			return bad(f, "not a name");
		for (uint32_t o = 0; o < d; o++)
			if (strcmp(s->hs_devs[o].hd_name,
				   s->hs_devs[d].hd_name) == 0)
				return bad(f, "device name used twice");
		snprintf(f, sizeof f, "servers[%u].devices[%u].state", i, d);
		if ((unsigned)s->hs_devs[d].hd_state >= HA_STATE_NR)
			return bad(f, "not a state");
	}
	snprintf(f, sizeof f, "servers[%u].acting", i);
	if (s->hs_acting[0] != '\0') {
		int a = ha_srv_index(m, s->hs_acting);
		if (a < 0)
			return bad(f, "not a server of the map");
		if ((uint32_t)a == i)
			return bad(f, "the server itself (write \"\")");
	}
	snprintf(f, sizeof f, "servers[%u].acting_epoch", i);
	if (s->hs_acting_epoch > m->hm_epoch)
		return bad(f, "above the map's epoch");
	return 0;
}

int ha_map_check(const struct ha_map *m)
{
	int rc = 0;

	if (m == NULL)
		return err_set(-EINVAL, "map: NULL");
	if (!name_ok(m->hm_cluster))
		return bad("cluster", "not a name");
	if (m->hm_epoch == 0 || m->hm_epoch > INT64_MAX)
		return bad("epoch", "not in 1..2^63-1");
	if (m->hm_pgs == 0 || m->hm_pgs > HA_PGS_MAX)
		return bad("pgs", "not in 1..65536");
	if (m->hm_nr_servers > HA_SERVERS_MAX)
		return bad("servers", "more than HA_SERVERS_MAX (64)");
	if (m->hm_pg_replicas == 0 || (m->hm_nr_servers > 0 &&
	    m->hm_pg_replicas > m->hm_nr_servers))
		return bad("pg_replicas", "not in 1..servers");
	if (m->hm_tolerance > HA_SERVERS_MAX)
		return bad("tolerance", "not in 0..64");
	if (strnlen(m->hm_alert, sizeof m->hm_alert) > HA_TEXT_MAX)
		return bad("alert", "too long");
	if (m->hm_leader[0] != '\0' && !name_ok(m->hm_leader))
		return bad("leader", "not a name");
	if (m->hm_meta_replicas > HA_SERVERS_MAX)
		return bad("meta_replicas", "not in 0..64");
	for (uint32_t i = 0; rc == 0 && i < m->hm_nr_servers; i++)
		rc = srv_check(m, i);
	return rc;
}

/* --------------------------------------------------------- to JSON */

static void j_add(json_object *o, const char *k, json_object *v)
{
	json_object_object_add(o, k, v);
}

static json_object *srv_json(const struct ha_srv *s)
{
	json_object *o = json_object_new_object(), *devs;

	j_add(o, "name", json_object_new_string(s->hs_name));
	j_add(o, "address", json_object_new_string(s->hs_addr));
	j_add(o, "port", json_object_new_int(s->hs_port));
	j_add(o, "enclosure", json_object_new_string(s->hs_enclosure));
	j_add(o, "state", json_object_new_string(ha_state_name(s->hs_state)));
	j_add(o, "since_ms", json_object_new_int64((int64_t)s->hs_since_ms));
	j_add(o, "incarnation",
	      json_object_new_int64((int64_t)s->hs_incarnation));
	j_add(o, "job", json_object_new_int64((int64_t)s->hs_job));
	j_add(o, "acting", json_object_new_string(s->hs_acting));
	j_add(o, "acting_epoch",
	      json_object_new_int64((int64_t)s->hs_acting_epoch));
	j_add(o, "acting_ms", json_object_new_int64((int64_t)s->hs_acting_ms));
	j_add(o, "acting_incarnation",
	      json_object_new_int64((int64_t)s->hs_acting_inc));
	devs = json_object_new_array();
	for (uint32_t d = 0; d < s->hs_nr_devs; d++) {
		json_object *dj = json_object_new_object();
		const struct ha_dev *hd = &s->hs_devs[d];

		j_add(dj, "name", json_object_new_string(hd->hd_name));
		j_add(dj, "state",
		      json_object_new_string(ha_state_name(hd->hd_state)));
		j_add(dj, "since_ms",
		      json_object_new_int64((int64_t)hd->hd_since_ms));
		j_add(dj, "job", json_object_new_int64((int64_t)hd->hd_job));
		json_object_array_add(devs, dj);
	}
	j_add(o, "devices", devs);
	return o;
}

static int map_json(const struct ha_map *m, bool view, char **out)
{
	json_object *o, *srvs;
	int rc = ha_map_check(m);

	if (rc != 0)
		return rc;
	o = json_object_new_object();
	j_add(o, "cluster", json_object_new_string(m->hm_cluster));
	j_add(o, "epoch", json_object_new_int64((int64_t)m->hm_epoch));
	j_add(o, "pgs", json_object_new_int64(m->hm_pgs));
	j_add(o, "pg_replicas", json_object_new_int64(m->hm_pg_replicas));
	j_add(o, "tolerance", json_object_new_int64(m->hm_tolerance));
	j_add(o, "frozen", json_object_new_boolean(m->hm_frozen));
	j_add(o, "frozen_ms", json_object_new_int64((int64_t)m->hm_frozen_ms));
	j_add(o, "alert", json_object_new_string(m->hm_alert));
	j_add(o, "leader", json_object_new_string(m->hm_leader));
	j_add(o, "meta_replicas", json_object_new_int64(m->hm_meta_replicas));
	srvs = json_object_new_array();
	for (uint32_t i = 0; i < m->hm_nr_servers; i++) {
		json_object *so = srv_json(&m->hm_servers[i]);

		if (view) {
			uint32_t sb[HA_SERVERS_MAX];
			uint32_t n = (uint32_t)ha_home_standbys(m, i, sb);
			json_object *a = json_object_new_array();

			for (uint32_t k = 0; k < n; k++)
				json_object_array_add(a, json_object_new_string(
					m->hm_servers[sb[k]].hs_name));
			j_add(so, "standbys", a);
		}
		json_object_array_add(srvs, so);
	}
	j_add(o, "servers", srvs);
	*out = strdup(json_object_to_json_string_ext(o,
						     JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return *out != NULL ? 0 : err_set(-ENOMEM, "map: JSON");
}

int ha_map_to_json(const struct ha_map *m, char **out)
{
	return map_json(m, false, out);
}

int ha_map_to_json_view(const struct ha_map *m, char **out)
{
	return map_json(m, true, out);
}

/* --------------------------------------------------------- from JSON */

/* Field f of o, of JSON type t; -EINVAL naming path.f otherwise. */
static int j_get(json_object *o, const char *path, const char *f,
		 json_type t, json_object **v)
{
	char full[128];

	snprintf(full, sizeof full, "%s%s%s", path, path[0] ? "." : "", f);
	if (!json_object_object_get_ex(o, f, v))
		return bad(full, "missing");
	if (!json_object_is_type(*v, t))
		return bad(full, t == json_type_int ? "not an integer" :
			   t == json_type_string ? "not a string" :
			   t == json_type_boolean ? "not true or false" :
			   t == json_type_array ? "not a list" : "bad type");
	return 0;
}

/* An integer field in lo..hi. */
static int j_uint(json_object *o, const char *path, const char *f,
		  uint64_t lo, uint64_t hi, uint64_t *out)
{
	json_object *v;
	int64_t x;
	char full[128];
	int rc = j_get(o, path, f, json_type_int, &v);

	if (rc != 0)
		return rc;
	x = json_object_get_int64(v);
	if (x < 0 || (uint64_t)x < lo || (uint64_t)x > hi) {
		snprintf(full, sizeof full, "%s%s%s", path, path[0] ? "." : "",
			 f);
		return err_set(-EINVAL, "map: %s: %" PRId64 " is not in %"
			       PRIu64 "..%" PRIu64, full, x, lo, hi);
	}
	*out = (uint64_t)x;
	return 0;
}

/* An integer field in 0..INT64_MAX that may be absent (0 then): the
 * analyzer's job ids and freeze time (ha/ha.h). */
static int j_uint_opt(json_object *o, const char *path, const char *f,
		      uint64_t *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, f, &v)) {
		*out = 0;
		return 0;
	}
	return j_uint(o, path, f, 0, INT64_MAX, out);
}

/* A string field of at most max bytes (empty allowed when empty_ok). */
static int j_str(json_object *o, const char *path, const char *f,
		 char *buf, size_t max, bool empty_ok)
{
	json_object *v;
	const char *s;
	char full[128];
	int rc = j_get(o, path, f, json_type_string, &v);

	if (rc != 0)
		return rc;
	s = json_object_get_string(v);
	snprintf(full, sizeof full, "%s%s%s", path, path[0] ? "." : "", f);
	if (strlen(s) > max || (!empty_ok && s[0] == '\0'))
		return bad(full, "empty or too long");
	snprintf(buf, max + 1, "%s", s);
	return 0;
}

/* A string field that may be absent ("" then). */
static int j_str_opt(json_object *o, const char *path, const char *f,
		     char *buf, size_t max)
{
	json_object *v;

	if (!json_object_object_get_ex(o, f, &v)) {
		buf[0] = '\0';
		return 0;
	}
	return j_str(o, path, f, buf, max, true);
}

/* A state field (by name). */
static int j_state(json_object *o, const char *path, enum ha_state *out)
{
	char buf[32], full[128];
	int st, rc = j_str(o, path, "state", buf, sizeof buf - 1, false);

	if (rc != 0)
		return rc;
	st = ha_state_parse(buf);
	if (st < 0) {
		snprintf(full, sizeof full, "%s.state", path);
		return err_set(-EINVAL, "map: %s: '%s' is not a state", full,
			       buf);
	}
	*out = (enum ha_state)st;
	return 0;
}

static int dev_from(json_object *o, const char *path, struct ha_dev *d)
{
	int rc = j_str(o, path, "name", d->hd_name, HA_NAME_MAX, false);

	if (rc == 0)
		rc = j_state(o, path, &d->hd_state);
	if (rc == 0)
		rc = j_uint(o, path, "since_ms", 0, INT64_MAX, &d->hd_since_ms);
	if (rc == 0)
		rc = j_uint_opt(o, path, "job", &d->hd_job);
	return rc;
}

static int srv_from(json_object *o, const char *path, struct ha_srv *s)
{
	json_object *devs;
	uint64_t v = 0;
	char dp[96];
	size_t nd;
	int rc;

	if (!json_object_is_type(o, json_type_object))
		return bad(path, "not an object");
	rc = j_str(o, path, "name", s->hs_name, HA_NAME_MAX, false);
	if (rc == 0)
		rc = j_str(o, path, "address", s->hs_addr, HA_HOST_MAX, false);
	if (rc == 0)
		rc = j_uint(o, path, "port", 1, 65535, &v);
	s->hs_port = (uint16_t)v;
	if (rc == 0)
		rc = j_str(o, path, "enclosure", s->hs_enclosure, HA_NAME_MAX,
			   true);
	if (rc == 0)
		rc = j_state(o, path, &s->hs_state);
	if (rc == 0)
		rc = j_uint(o, path, "since_ms", 0, INT64_MAX, &s->hs_since_ms);
	if (rc == 0)
		rc = j_uint(o, path, "incarnation", 0, INT64_MAX,
			    &s->hs_incarnation);
	if (rc == 0)
		rc = j_uint_opt(o, path, "job", &s->hs_job);
	if (rc == 0)
		rc = j_str_opt(o, path, "acting", s->hs_acting, HA_NAME_MAX);
	if (rc == 0)
		rc = j_uint_opt(o, path, "acting_epoch", &s->hs_acting_epoch);
	if (rc == 0)
		rc = j_uint_opt(o, path, "acting_ms", &s->hs_acting_ms);
	if (rc == 0)
		rc = j_uint_opt(o, path, "acting_incarnation",
				&s->hs_acting_inc);
	if (rc == 0)
		rc = j_get(o, path, "devices", json_type_array, &devs);
	if (rc != 0)
		return rc;
	nd = json_object_array_length(devs);
	if (nd > HA_DEVS_MAX) {
		snprintf(dp, sizeof dp, "%s.devices", path);
		return bad(dp, "more than HA_DEVS_MAX (16) devices");
	}
	s->hs_nr_devs = (uint32_t)nd;
	for (size_t d = 0; rc == 0 && d < nd; d++) {
		json_object *dj = json_object_array_get_idx(devs, d);

		snprintf(dp, sizeof dp, "%s.devices[%zu]", path, d);
		rc = json_object_is_type(dj, json_type_object) ?
		     dev_from(dj, dp, &s->hs_devs[d]) :
		     bad(dp, "not an object");
	}
	return rc;
}

/* The top-level scalar fields. */
static int map_top_from(json_object *o, struct ha_map *m)
{
	json_object *v;
	uint64_t x = 0;
	int rc;

	rc = j_str(o, "", "cluster", m->hm_cluster, HA_NAME_MAX, false);
	if (rc == 0)
		rc = j_uint(o, "", "epoch", 1, INT64_MAX, &m->hm_epoch);
	if (rc == 0)
		rc = j_uint(o, "", "pgs", 1, HA_PGS_MAX, &x);
	m->hm_pgs = (uint32_t)x;
	if (rc == 0)
		rc = j_uint(o, "", "pg_replicas", 1, HA_SERVERS_MAX, &x);
	m->hm_pg_replicas = (uint32_t)x;
	if (rc == 0)
		rc = j_uint(o, "", "tolerance", 0, HA_SERVERS_MAX, &x);
	m->hm_tolerance = (uint32_t)x;
	if (rc == 0)
		rc = j_get(o, "", "frozen", json_type_boolean, &v);
	if (rc == 0)
		m->hm_frozen = json_object_get_boolean(v);
	if (rc == 0)
		rc = j_uint_opt(o, "", "frozen_ms", &m->hm_frozen_ms);
	if (rc == 0)
		rc = j_str(o, "", "alert", m->hm_alert, HA_TEXT_MAX, true);
	if (rc == 0)
		rc = j_str(o, "", "leader", m->hm_leader, HA_NAME_MAX, true);
	if (rc == 0)
		rc = j_uint_opt(o, "", "meta_replicas", &x);
	m->hm_meta_replicas = (uint32_t)x;
	if (rc == 0 && x > HA_SERVERS_MAX)
		rc = bad("meta_replicas", "not in 0..64");
	return rc;
}

int ha_map_from_json(struct ha_map *m, const char *text, size_t len)
{
	struct ha_map *t;
	json_object *o, *srvs = NULL;
	json_tokener *tok;
	size_t ns = 0;
	char path[32];
	int rc;

	if (m == NULL || text == NULL)
		return err_set(-EINVAL, "map: NULL argument");
	tok = json_tokener_new();
	if (tok == NULL)
		return err_set(-ENOMEM, "map: JSON parser");
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		rc = bad("(text)", o == NULL ? json_tokener_error_desc(
			 json_tokener_get_error(tok)) : "not a JSON object");
		json_object_put(o);
		json_tokener_free(tok);
		return rc;
	}
	json_tokener_free(tok);
	t = calloc(1, sizeof *t);
	rc = t == NULL ? err_set(-ENOMEM, "map") : map_top_from(o, t);
	if (rc == 0)
		rc = j_get(o, "", "servers", json_type_array, &srvs);
	if (rc == 0) {
		ns = json_object_array_length(srvs);
		if (ns > HA_SERVERS_MAX)
			rc = bad("servers", "more than HA_SERVERS_MAX (64)");
	}
	if (t != NULL)
		t->hm_nr_servers = (uint32_t)ns;
	for (size_t i = 0; rc == 0 && i < ns; i++) {
		snprintf(path, sizeof path, "servers[%zu]", i);
		rc = srv_from(json_object_array_get_idx(srvs, i), path,
			      &t->hm_servers[i]);
	}
	if (rc == 0)
		rc = ha_map_check(t);
	if (rc == 0)
		*m = *t;
	free(t);
	json_object_put(o);
	return rc;
}

/* --------------------------------------------------------- from conf */

/* The failures layout l tolerates. */
static uint32_t layout_tolerance(const struct conf_layout *l)
{
	if (l->cl_type == ST_LAYOUT_PDCLUST)
		return l->cl_k;
	if (l->cl_type == ST_LAYOUT_MIRROR)
		return l->cl_n > 0 ? l->cl_n - 1 : 0;
	return 0;
}

/* Server i of c into s, with its local devices. */
static int srv_from_conf(struct ha_srv *s, const struct clu_server *cs,
			 uint32_t *tolerance, bool first, uint64_t now)
{
	struct conf sc;
	int rc;

	snprintf(s->hs_name, sizeof s->hs_name, "%s", cs->cs_name);
	snprintf(s->hs_addr, sizeof s->hs_addr, "%s", cs->cs_addr);
	s->hs_port = cs->cs_port;
	snprintf(s->hs_enclosure, sizeof s->hs_enclosure, "%s",
		 cs->cs_enclosure[0] ? cs->cs_enclosure : cs->cs_name);
	s->hs_state = HA_ONLINE;
	s->hs_since_ms = now;
	if (cs->cs_store_yaml == NULL)
		return 0;
	memset(&sc, 0, sizeof sc);
	rc = conf_parse(&sc, cs->cs_store_yaml, strlen(cs->cs_store_yaml));
	if (rc != 0)
		return err_set(rc, "map: server %s: its store configuration: "
			       "%s", cs->cs_name, err_msg());
	for (uint32_t d = 0; rc == 0 && d < sc.c_nr_devs; d++) {
		if (sc.c_devs[d].cd_remote[0] != '\0')
			continue;
		if (s->hs_nr_devs == HA_DEVS_MAX) {
			rc = err_set(-EINVAL, "map: server %s: more than %u "
				     "devices", cs->cs_name, HA_DEVS_MAX);
			break;
		}
		snprintf(s->hs_devs[s->hs_nr_devs].hd_name, HA_NAME_MAX + 1,
			 "%s", sc.c_devs[d].cd_name);
		s->hs_devs[s->hs_nr_devs].hd_state = HA_ONLINE;
		s->hs_devs[s->hs_nr_devs++].hd_since_ms = now;
	}
	/* The default layout's tolerance; at least 1: objects of a layout
	 * without redundancy are lost with a server whatever HA decides,
	 * and the freeze rule is there to keep repair from excluding more
	 * than redundant objects survive (docs/ha.md). */
	if (rc == 0 && first) {
		*tolerance = layout_tolerance(&sc.c_default_layout);
		if (*tolerance == 0)
			*tolerance = 1;
	}
	conf_fini(&sc);
	return rc;
}

/* The cluster's meta_replicas (the home and its standbys, which keep a
 * shadow of its metadata: core/eng_repl.h); at most its servers. */
static uint32_t conf_meta_replicas(const struct clu_conf *c)
{
	uint32_t r = c->cc_meta_replicas;

	if (r == 0)
		r = 1;
	return r < c->cc_nr_servers ? r : c->cc_nr_servers;
}

int ha_map_from_conf(struct ha_map *m, const struct clu_conf *c)
{
	struct ha_map *t;
	uint64_t now = wall_ms();
	uint32_t pgs = 1;
	int rc = 0;

	if (m == NULL || c == NULL)
		return err_set(-EINVAL, "map: NULL argument");
	if (c->cc_nr_servers == 0 || c->cc_nr_servers > HA_SERVERS_MAX)
		return err_set(-EINVAL, "map: cluster %s: %u servers (1..%u)",
			       c->cc_name, c->cc_nr_servers, HA_SERVERS_MAX);
	t = calloc(1, sizeof *t);
	if (t == NULL)
		return err_set(-ENOMEM, "map");
	snprintf(t->hm_cluster, sizeof t->hm_cluster, "%s", c->cc_name);
	t->hm_epoch = 1;
	while (pgs < HA_PGS_PER_SERVER * c->cc_nr_servers && pgs < HA_PGS_MAX)
		pgs <<= 1;
	t->hm_pgs = pgs;
	t->hm_pg_replicas = c->cc_nr_servers < 3 ? c->cc_nr_servers : 3;
	t->hm_meta_replicas = conf_meta_replicas(c);
	t->hm_nr_servers = c->cc_nr_servers;
	for (uint32_t i = 0; rc == 0 && i < c->cc_nr_servers; i++)
		rc = srv_from_conf(&t->hm_servers[i], &c->cc_servers[i],
				   &t->hm_tolerance, i == 0, now);
	if (rc == 0)
		rc = ha_map_check(t);
	if (rc == 0)
		*m = *t;
	free(t);
	return rc;
}

/* --------------------------------------------------------- in etcd */

const char *ha_key(char *buf, size_t size, const char *cluster,
		   const char *kind)
{
	snprintf(buf, size, "/strata/%s/%s", cluster, kind);
	return buf;
}

/* Is cluster a usable name?  -EINVAL naming what otherwise. */
static int cluster_ok(const char *cluster, const char *what)
{
	if (cluster == NULL || !name_ok(cluster))
		return err_set(-EINVAL, "ha %s: cluster name '%s' is not a "
			       "name", what, cluster ? cluster : "(null)");
	return 0;
}

int ha_map_load(struct etcd *e, const char *cluster, struct ha_map *m,
		int64_t *mod_rev)
{
	char key[ETCD_KEY_MAX + 1];
	struct etcd_kv kv;
	int rc = cluster_ok(cluster, "map load");

	if (rc != 0)
		return rc;
	rc = etcd_get(e, ha_key(key, sizeof key, cluster, "map"), &kv, NULL);
	if (rc != 0)
		return rc;
	rc = ha_map_from_json(m, kv.ek_value, kv.ek_len);
	if (rc != 0)
		rc = err_set(rc, "%s: %s", key, err_msg());
	else if (mod_rev != NULL)
		*mod_rev = kv.ek_mod_rev;
	etcd_kv_fini(&kv);
	return rc;
}

int ha_map_bootstrap(struct etcd *e, struct ha_map *m, int64_t *mod_rev)
{
	char key[ETCD_KEY_MAX + 1], *text = NULL;
	struct etcd_cmp cmp;
	struct etcd_op op;
	bool ok = false;
	int64_t rev = 0;
	int rc = m != NULL ? cluster_ok(m->hm_cluster, "map bootstrap") :
		 err_set(-EINVAL, "ha map bootstrap: NULL map");

	if (rc == 0)
		rc = ha_map_to_json(m, &text);
	if (rc != 0)
		return rc;
	ha_key(key, sizeof key, m->hm_cluster, "map");
	cmp = (struct etcd_cmp){.ec_key = key, .ec_absent = true};
	op = (struct etcd_op){.eo_key = key, .eo_value = text,
			      .eo_len = strlen(text)};
	rc = etcd_txn(e, &cmp, 1, &op, 1, &ok, &rev);
	free(text);
	if (rc != 0)
		return rc;
	if (ok) {
		if (mod_rev != NULL)
			*mod_rev = rev;
		return 0;
	}
	rc = ha_map_load(e, m->hm_cluster, m, mod_rev);
	return rc != 0 ? rc : err_set(-EEXIST, "%s: a map is there already "
				      "(epoch %" PRIu64 ")", key, m->hm_epoch);
}

int ha_map_update(struct etcd *e, struct ha_map *m, int64_t *mod_rev)
{
	char key[ETCD_KEY_MAX + 1], *text = NULL;
	struct etcd_cmp cmp;
	struct etcd_op op;
	bool ok = false;
	int64_t rev = 0;
	uint64_t was;
	int rc;

	if (m == NULL || mod_rev == NULL || *mod_rev <= 0)
		return err_set(-EINVAL, "ha map update: no map or no token");
	rc = cluster_ok(m->hm_cluster, "map update");
	if (rc != 0)
		return rc;
	was = m->hm_epoch;
	m->hm_epoch = was + 1;
	rc = ha_map_to_json(m, &text);
	if (rc != 0) {
		m->hm_epoch = was;
		return rc;
	}
	ha_key(key, sizeof key, m->hm_cluster, "map");
	cmp = (struct etcd_cmp){.ec_key = key, .ec_mod_rev = *mod_rev};
	op = (struct etcd_op){.eo_key = key, .eo_value = text,
			      .eo_len = strlen(text)};
	rc = etcd_txn(e, &cmp, 1, &op, 1, &ok, &rev);
	free(text);
	if (rc == 0 && !ok)
		rc = err_set(-EAGAIN, "%s: changed since revision %" PRId64
			     " (epoch %" PRIu64 " is stale)", key, *mod_rev,
			     was);
	if (rc != 0) {
		m->hm_epoch = was;
		return rc;
	}
	*mod_rev = rev;
	return 0;
}

/* --------------------------------------------------------- members */

int ha_member_register(struct etcd *e, const char *cluster,
		       const struct ha_member *mb, int64_t lease)
{
	char key[ETCD_KEY_MAX + 1], kind[64];
	json_object *o;
	const char *text;
	int rc = cluster_ok(cluster, "member register");

	if (rc != 0)
		return rc;
	if (mb == NULL || !name_ok(mb->hmb_name) || lease == 0 ||
	    mb->hmb_addr[0] == '\0' || mb->hmb_port == 0)
		return err_set(-EINVAL, "ha member register: a name, an "
			       "address, a port and a lease are required");
	snprintf(kind, sizeof kind, "members/%s", mb->hmb_name);
	o = json_object_new_object();
	j_add(o, "name", json_object_new_string(mb->hmb_name));
	j_add(o, "address", json_object_new_string(mb->hmb_addr));
	j_add(o, "port", json_object_new_int(mb->hmb_port));
	j_add(o, "incarnation",
	      json_object_new_int64((int64_t)mb->hmb_incarnation));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	rc = etcd_put(e, ha_key(key, sizeof key, cluster, kind), text,
		      strlen(text), lease, NULL);
	json_object_put(o);
	return rc;
}

int ha_member_get(struct etcd *e, const char *cluster, const char *name,
		  struct ha_member *mb)
{
	char key[ETCD_KEY_MAX + 1], kind[64];
	struct ha_member t = {0};
	struct etcd_kv kv;
	json_object *o;
	uint64_t v = 0;
	int rc = cluster_ok(cluster, "member get");

	if (rc != 0)
		return rc;
	if (name == NULL || !name_ok(name) || mb == NULL)
		return err_set(-EINVAL, "ha member get: a name is required");
	snprintf(kind, sizeof kind, "members/%s", name);
	rc = etcd_get(e, ha_key(key, sizeof key, cluster, kind), &kv, NULL);
	if (rc != 0)
		return rc;
	o = json_tokener_parse(kv.ek_value);
	rc = o == NULL ? bad(key, "not JSON") :
	     j_str(o, "", "name", t.hmb_name, HA_NAME_MAX, false);
	if (rc == 0)
		rc = j_str(o, "", "address", t.hmb_addr, HA_HOST_MAX, false);
	if (rc == 0)
		rc = j_uint(o, "", "port", 1, 65535, &v);
	t.hmb_port = (uint16_t)v;
	if (rc == 0)
		rc = j_uint(o, "", "incarnation", 0, INT64_MAX,
			    &t.hmb_incarnation);
	if (rc == 0)
		*mb = t;
	json_object_put(o);
	etcd_kv_fini(&kv);
	return rc;
}

/* --------------------------------------------------------- leader */

int ha_leader_get(struct etcd *e, const char *cluster, char *holder,
		  size_t holder_size)
{
	char key[ETCD_KEY_MAX + 1];
	struct etcd_kv kv;
	int rc = cluster_ok(cluster, "leader get");

	if (rc != 0)
		return rc;
	rc = etcd_get(e, ha_key(key, sizeof key, cluster, "leader"), &kv,
		      NULL);
	if (rc == 0 && holder != NULL)
		snprintf(holder, holder_size, "%s", kv.ek_value);
	etcd_kv_fini(&kv);
	return rc;
}

/* The leader key's record: the holder's name, its lease and revision;
 * -ENOENT when there is none. */
static int leader_read(struct etcd *e, const char *key, char *name,
		       int64_t *lease, int64_t *rev)
{
	struct etcd_kv kv;
	int rc = etcd_get(e, key, &kv, NULL);

	if (rc != 0)
		return rc;
	snprintf(name, HA_NAME_MAX + 1, "%s", kv.ek_value);
	*lease = kv.ek_lease;
	*rev = kv.ek_mod_rev;
	etcd_kv_fini(&kv);
	return 0;
}

int ha_leader_try(struct etcd *e, const char *cluster, const char *name,
		  int64_t lease, char *holder, size_t holder_size)
{
	char key[ETCD_KEY_MAX + 1], who[HA_NAME_MAX + 1];
	struct etcd_cmp cmp;
	struct etcd_op op;
	int64_t held = 0, rev = 0;
	bool ok = false;
	int rc = cluster_ok(cluster, "leader try");

	if (rc != 0)
		return rc;
	if (name == NULL || !name_ok(name) || lease == 0)
		return err_set(-EINVAL, "ha leader try: a name and a lease are "
			       "required");
	ha_key(key, sizeof key, cluster, "leader");
	cmp = (struct etcd_cmp){.ec_key = key, .ec_absent = true};
	op = (struct etcd_op){.eo_key = key, .eo_value = name,
			      .eo_len = strlen(name), .eo_lease = lease};
	rc = etcd_txn(e, &cmp, 1, &op, 1, &ok, NULL);
	if (rc != 0 || ok)
		goto out;
	rc = leader_read(e, key, who, &held, &rev);
	if (rc == -ENOENT) /* it went between the two: next try */
		rc = 0;
	else if (rc == 0 && strcmp(who, name) == 0 && held == lease)
		ok = true;
	else if (rc == 0 && strcmp(who, name) == 0) {
		/* our own name under an older lease (a previous run): move
		 * it to this lease, if nobody changed it meanwhile */
		cmp = (struct etcd_cmp){.ec_key = key, .ec_mod_rev = rev};
		rc = etcd_txn(e, &cmp, 1, &op, 1, &ok, NULL);
	}
	if (rc == 0 && !ok && holder != NULL)
		snprintf(holder, holder_size, "%s", who);
out:
	return rc != 0 ? rc : ok ? 1 : 0;
}

int ha_leader_resign(struct etcd *e, const char *cluster, const char *name)
{
	char key[ETCD_KEY_MAX + 1], who[HA_NAME_MAX + 1];
	struct etcd_cmp cmp;
	struct etcd_op op;
	int64_t lease = 0, rev = 0;
	bool ok = false;
	int rc = cluster_ok(cluster, "leader resign");

	if (rc != 0)
		return rc;
	ha_key(key, sizeof key, cluster, "leader");
	rc = leader_read(e, key, who, &lease, &rev);
	if (rc == -ENOENT || (rc == 0 && strcmp(who, name) != 0))
		return 0;
	if (rc != 0)
		return rc;
	cmp = (struct etcd_cmp){.ec_key = key, .ec_mod_rev = rev};
	op = (struct etcd_op){.eo_key = key, .eo_delete = true};
	return etcd_txn(e, &cmp, 1, &op, 1, &ok, NULL);
}

/* --------------------------------------------------------- logs */

static int log_ok(const char *cluster, const char *log, const char *what)
{
	int rc = cluster_ok(cluster, what);

	if (rc == 0 && (log == NULL || (strcmp(log, "events") != 0 &&
					strcmp(log, "decisions") != 0)))
		rc = err_set(-EINVAL, "ha %s: log '%s' is not events or "
			     "decisions", what, log ? log : "(null)");
	return rc;
}

static _Atomic uint32_t log_keep = HA_HISTORY_MAX;

void ha_log_keep_set(uint32_t n)
{
	log_keep = n == 0 || n > HA_HISTORY_MAX ? HA_HISTORY_MAX : n;
}

/* The key of entry seq of log. */
static void log_key(char *buf, size_t size, const char *cluster,
		    const char *log, uint64_t seq)
{
	snprintf(buf, size, "/strata/%s/%s/%020" PRIu64, cluster, log, seq);
}

/* The log's counter: its last seq (0 when absent) and its revision. */
static int log_last(struct etcd *e, const char *ckey, uint64_t *last,
		    int64_t *rev)
{
	struct etcd_kv kv;
	char *end;
	int rc = etcd_get(e, ckey, &kv, NULL);

	*last = 0;
	*rev = 0;
	if (rc == -ENOENT)
		return 0;
	if (rc != 0)
		return rc;
	*last = strtoull(kv.ek_value, &end, 10);
	*rev = kv.ek_mod_rev;
	if (*end != '\0' || kv.ek_len == 0)
		rc = err_set(-EIO, "%s: '%s' is not a number", ckey,
			     kv.ek_value);
	etcd_kv_fini(&kv);
	return rc;
}

int ha_log_append(struct etcd *e, const char *cluster, const char *log,
		  const char *json, uint64_t *seq)
{
	char ckey[ETCD_KEY_MAX + 1], kind[32], ekey[ETCD_KEY_MAX + 1];
	char okey[ETCD_KEY_MAX + 1], num[24];
	struct etcd_cmp cmp;
	struct etcd_op ops[3];
	uint64_t last;
	int64_t rev;
	bool ok = false;
	int rc = log_ok(cluster, log, "log append");

	if (rc == 0 && (json == NULL || json[0] == '\0'))
		rc = err_set(-EINVAL, "ha log append: %s: empty entry", log);
	if (rc != 0)
		return rc;
	snprintf(kind, sizeof kind, "seq/%s", log);
	ha_key(ckey, sizeof ckey, cluster, kind);
	for (unsigned t = 0; t < HA_LOG_TRIES; t++) {
		uint32_t keep = log_keep;
		size_t nops = 2;

		rc = log_last(e, ckey, &last, &rev);
		if (rc != 0)
			return rc;
		snprintf(num, sizeof num, "%" PRIu64, last + 1);
		log_key(ekey, sizeof ekey, cluster, log, last + 1);
		cmp = (struct etcd_cmp){.ec_key = ckey, .ec_absent = rev == 0,
					.ec_mod_rev = rev};
		ops[0] = (struct etcd_op){.eo_key = ckey, .eo_value = num,
					  .eo_len = strlen(num)};
		ops[1] = (struct etcd_op){.eo_key = ekey, .eo_value = json,
					  .eo_len = strlen(json)};
		if (last + 1 > keep) {
			log_key(okey, sizeof okey, cluster, log,
				last + 1 - keep);
			ops[nops++] = (struct etcd_op){.eo_key = okey,
						       .eo_delete = true};
		}
		rc = etcd_txn(e, &cmp, 1, ops, nops, &ok, NULL);
		if (rc != 0)
			return rc;
		if (ok) {
			if (seq != NULL)
				*seq = last + 1;
			return 0;
		}
	}
	return err_set(-EBUSY, "ha log append: %s: lost the race for a seq "
		       "%u times", ckey, HA_LOG_TRIES);
}

/* What ha_log_read passes through etcd_get_prefix. */
struct log_rd {
	uint64_t lr_from;
	uint32_t lr_left;
	ha_log_cb lr_cb;
	void *lr_arg;
	size_t lr_plen;
};

static int log_rd_one(const struct etcd_kv *kv, void *arg)
{
	struct log_rd *r = arg;
	char *end;
	uint64_t seq;

	if (kv->ek_key_len <= r->lr_plen)
		return 0;
	seq = strtoull(kv->ek_key + r->lr_plen, &end, 10);
	if (*end != '\0' || seq < r->lr_from || r->lr_left == 0)
		return 0;
	r->lr_left--;
	return r->lr_cb(seq, kv->ek_value, r->lr_arg);
}

int ha_log_read(struct etcd *e, const char *cluster, const char *log,
		uint64_t from, uint32_t limit, ha_log_cb cb, void *arg,
		uint64_t *last)
{
	char prefix[ETCD_KEY_MAX + 1], kind[32];
	struct log_rd r = {.lr_from = from, .lr_cb = cb, .lr_arg = arg,
			   .lr_left = limit ? limit : HA_HISTORY_MAX};
	int64_t rev;
	uint64_t l;
	int rc = log_ok(cluster, log, "log read");

	if (rc == 0 && cb == NULL)
		rc = err_set(-EINVAL, "ha log read: no callback");
	if (rc != 0)
		return rc;
	if (last != NULL) {
		snprintf(kind, sizeof kind, "seq/%s", log);
		rc = log_last(e, ha_key(prefix, sizeof prefix, cluster, kind),
			      &l, &rev);
		if (rc != 0)
			return rc;
		*last = l;
	}
	snprintf(kind, sizeof kind, "%s/", log);
	ha_key(prefix, sizeof prefix, cluster, kind);
	r.lr_plen = strlen(prefix);
	return etcd_get_prefix(e, prefix, ETCD_RANGE_MAX, log_rd_one, &r,
			       NULL, NULL);
}
