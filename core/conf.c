/*
 * conf.c — the store configuration in YAML (see conf.h and
 * docs/configuration.md).
 *
 * Parsing loads the text with libyaml's document API and walks the node
 * tree by the schema, key by key, into a scratch struct conf that replaces
 * the caller's only when everything checked out.  While walking, the parser
 * keeps the path of the key it is in ("devices[2].tier") so that every
 * message names the line, the key and the value at fault.  Emitting writes
 * the struct back through libyaml's event API, which does the quoting.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "core/conf.h"
#include "core/errors.h"
#include "core/limits.h"
#include "core/log.h"
#include "tiers/tier.h"

static const char *const conf_tier_names[ST_TIER_NR] = {
	[ST_TIER_NVRAM] = "nvram",
	[ST_TIER_FLASH] = "flash",
	[ST_TIER_SAS] = "sas",
	[ST_TIER_SMR] = "smr",
};

#define CONF_TYPE_NR (ST_LAYOUT_MIRROR + 1)
static const char *const conf_type_names[CONF_TYPE_NR] = {
	[ST_LAYOUT_PLAIN] = "plain",
	[ST_LAYOUT_PDCLUST] = "pdclust",
	[ST_LAYOUT_MIRROR] = "mirror",
};

/* Defaults of the layout keys left out of a file. */
#define CONF_PDCLUST_DATA 4u
#define CONF_PDCLUST_PARITY 2u
#define CONF_MIRROR_COPIES 2u

/* ------------------------------------------------------------ numbers */

/* A unit suffix and what it multiplies by.  Tables end with a NULL name and
 * are sorted by multiplier, so the last unit dividing a value is the
 * largest (used when writing). */
struct conf_unit {
	const char *cu_name;
	uint64_t cu_mult;
};

static const struct conf_unit conf_size_units[] = {
	{"B", 1}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20},
	{"GiB", 1ull << 30}, {"TiB", 1ull << 40}, {NULL, 0},
};

static const struct conf_unit conf_time_units[] = {
	{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000},
	{NULL, 0},
};

static const struct conf_unit conf_bw_units[] = {
	{"B/s", 1}, {"KB/s", 1000}, {"KiB/s", 1ull << 10},
	{"MB/s", 1000000}, {"MiB/s", 1ull << 20},
	{"GB/s", 1000000000}, {"GiB/s", 1ull << 30},
	{"TB/s", 1000000000000ull}, {"TiB/s", 1ull << 40}, {NULL, 0},
};

/* The multiplier of the unit called name, or 0. */
static uint64_t conf_unit_mult(const struct conf_unit *units, const char *name)
{
	for (; units->cu_name != NULL; units++)
		if (strcmp(units->cu_name, name) == 0)
			return units->cu_mult;
	return 0;
}

/* Append decimal digit ch to *v; false on overflow. */
static bool conf_digit_add(uint64_t *v, char ch)
{
	return !__builtin_mul_overflow(*v, 10, v) &&
	       !__builtin_add_overflow(*v, (uint64_t)(ch - '0'), v);
}

static bool conf_is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/*
 * Parse "DIGITS[.DIGITS][ ]UNIT" (the unit may be left out only when
 * bare_ok) into a whole number of the table's base unit.  Returns 0, or
 * -EINVAL / -ERANGE with *why saying what is wrong.
 */
static int conf_num_parse(const char *s, const struct conf_unit *units,
			  bool bare_ok, uint64_t *out, const char **why)
{
	uint64_t mant = 0, pow10 = 1, mult = 1;
	const char *p = s, *frac, *fend;
	unsigned __int128 v;

	*why = "expected a number";
	if (!conf_is_digit(*p))
		return -EINVAL;
	for (; conf_is_digit(*p); p++)
		if (!conf_digit_add(&mant, *p))
			goto out_range;
	if (*p == '.') {
		for (frac = ++p; conf_is_digit(*p); p++)
			;
		if (p == frac)
			return (*why = "expected digits after '.'"), -EINVAL;
		for (fend = p; fend > frac && fend[-1] == '0'; fend--)
			;
		for (; frac < fend; frac++)
			if (__builtin_mul_overflow(pow10, 10, &pow10) ||
			    !conf_digit_add(&mant, *frac))
				goto out_range;
	}
	while (*p == ' ')
		p++;
	if (*p == '\0' && !bare_ok)
		return (*why = "a unit is required"), -EINVAL;
	if (*p != '\0' && (mult = conf_unit_mult(units, p)) == 0)
		return (*why = "unknown unit"), -EINVAL;
	v = (unsigned __int128)mant * mult;
	if (v % pow10 != 0)
		return (*why = "finer than the smallest unit"), -EINVAL;
	v /= pow10;
	if (v > UINT64_MAX)
		goto out_range;
	*out = (uint64_t)v;
	return 0;
out_range:
	*why = "too large";
	return -ERANGE;
}

/* Write v with the largest unit of the table that divides it exactly. */
static void conf_num_format(char *buf, size_t size, uint64_t v,
			    const struct conf_unit *units)
{
	const struct conf_unit *u = units, *best = units;

	for (; u->cu_name != NULL; u++)
		if (v != 0 && v % u->cu_mult == 0)
			best = u;
	snprintf(buf, size, "%llu%s",
		 (unsigned long long)(v / best->cu_mult), best->cu_name);
}

static bool conf_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* ---------------------------------------------------------- the walker */

/* Parser state: the document, the struct being filled, the key path. */
struct conf_px {
	yaml_document_t *px_doc;
	struct conf *px_c;
	char px_path[192];
	size_t px_len;
};

/*
 * Fail with -EINVAL: "conf line L: PATH: what".  n is the node at fault
 * (NULL: line 1).
 */
__attribute__((format(printf, 3, 4)))
static int px_fail(const struct conf_px *p, const yaml_node_t *n,
		   const char *fmt, ...)
{
	char what[LIM_ERRMSG_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return err_set(-EINVAL, "conf line %zu: %s: %s",
		       n != NULL ? n->start_mark.line + 1 : (size_t)1,
		       p->px_len != 0 ? p->px_path : "top level", what);
}

/* Append "[.]key" or "[i]" to the path; returns the length to go back to. */
__attribute__((format(printf, 2, 3)))
static size_t px_push(struct conf_px *p, const char *fmt, ...)
{
	size_t old = p->px_len, room = sizeof p->px_path - old;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(p->px_path + old, room, fmt, ap);
	va_end(ap);
	p->px_len = n < 0 ? old : old + ((size_t)n < room ? (size_t)n : room - 1);
	p->px_path[p->px_len] = '\0';
	return old;
}

static size_t px_key(struct conf_px *p, const char *key)
{
	return px_push(p, "%s%s", p->px_len != 0 ? "." : "", key);
}

static void px_pop(struct conf_px *p, size_t old)
{
	p->px_len = old;
	p->px_path[old] = '\0';
}

static yaml_node_t *px_node(const struct conf_px *p, int id)
{
	yaml_node_t *n = yaml_document_get_node(p->px_doc, id);

	ASSERT(n != NULL);
	return n;
}

static const char *px_type_name(yaml_node_type_t type)
{
	switch (type) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a list";
	default:
		return "a single value";
	}
}

static const char *px_kind(const yaml_node_t *n)
{
	return px_type_name(n->type);
}

static int px_want(const struct conf_px *p, const yaml_node_t *n,
		   yaml_node_type_t type)
{
	if (n->type == type)
		return 0;
	return px_fail(p, n, "expected %s, found %s", px_type_name(type),
		       px_kind(n));
}

/* Items of a list node. */
static size_t px_seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *px_seq_item(const struct conf_px *p, const yaml_node_t *n,
				size_t i)
{
	return px_node(p, n->data.sequence.items.start[i]);
}

/* The text of a single-value node: non-empty, without NUL bytes. */
static int px_text(const struct conf_px *p, const yaml_node_t *n,
		   const char **out)
{
	const char *s;

	if (n->type != YAML_SCALAR_NODE)
		return px_fail(p, n, "expected a single value, found %s",
			       px_kind(n));
	s = (const char *)n->data.scalar.value;
	if (strlen(s) != n->data.scalar.length)
		return px_fail(p, n, "value contains a NUL character");
	if (s[0] == '\0')
		return px_fail(p, n, "empty value");
	*out = s;
	return 0;
}

/*
 * Match the keys of mapping map against keys[0..nr): vals[i] becomes the
 * value node of keys[i] (NULL when absent) and knodes[i] its key node.
 * Unknown keys, repeated keys and keys that are not plain text are refused.
 */
static int px_fields(const struct conf_px *p, const yaml_node_t *map,
		     const char *const *keys, size_t nr, yaml_node_t **vals,
		     yaml_node_t **knodes)
{
	const yaml_node_pair_t *pr;
	char expect[160];
	const char *k;
	size_t i, at = 0;
	int rc;

	rc = px_want(p, map, YAML_MAPPING_NODE);
	if (rc != 0)
		return rc;
	for (i = 0; i < nr; i++)
		vals[i] = knodes[i] = NULL;
	for (pr = map->data.mapping.pairs.start;
	     pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *kn = px_node(p, pr->key);

		if (kn->type != YAML_SCALAR_NODE)
			return px_fail(p, kn, "a key must be a name, found %s",
				       px_kind(kn));
		rc = px_text(p, kn, &k);
		if (rc != 0)
			return rc;
		for (i = 0; i < nr && strcmp(keys[i], k) != 0; i++)
			;
		if (i < nr && vals[i] != NULL)
			return px_fail(p, kn, "key \"%s\" given twice", k);
		if (i < nr) {
			vals[i] = px_node(p, pr->value);
			knodes[i] = kn;
			continue;
		}
		expect[0] = '\0';
		for (i = 0; i < nr && at < sizeof expect; i++)
			at += (size_t)snprintf(expect + at, sizeof expect - at,
					       "%s%s", i ? ", " : "", keys[i]);
		return px_fail(p, kn, "unknown key \"%.40s\" (expected %s)", k,
			       expect);
	}
	return 0;
}

/* --------------------------------------------------------- the values */

/* Parse the number at node n (under key) with units; errors name both. */
static int px_num(struct conf_px *p, const char *key, const yaml_node_t *n,
		  const struct conf_unit *units, bool bare_ok, uint64_t *out)
{
	size_t old = px_key(p, key);
	const char *s, *why;
	int rc;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	rc = conf_num_parse(s, units, bare_ok, out, &why);
	if (rc == -ERANGE)
		return px_fail(p, n, "\"%.40s\": %s", s, why);
	if (rc != 0) {
		char list[96];
		size_t at = 0;

		list[0] = '\0';
		for (const struct conf_unit *u = units;
		     u->cu_name != NULL && at < sizeof list; u++)
			at += (size_t)snprintf(list + at, sizeof list - at,
					       "%s%s", at ? ", " : "",
					       u->cu_name);
		return px_fail(p, n, "\"%.40s\": %s (units: %s)", s, why,
			       list);
	}
	px_pop(p, old);
	return 0;
}

static int px_size(struct conf_px *p, const char *key, const yaml_node_t *n,
		   uint64_t *out)
{
	return px_num(p, key, n, conf_size_units, true, out);
}

/* A device size: LIM_DEV_SIZE_MIN..LIM_DEV_SIZE_MAX, a multiple of 512. */
static int px_dev_size(struct conf_px *p, const char *key, const yaml_node_t *n,
		       uint64_t *out)
{
	size_t old;
	int rc;

	rc = px_size(p, key, n, out);
	if (rc != 0)
		return rc;
	old = px_key(p, key);
	if (*out < LIM_DEV_SIZE_MIN || *out > LIM_DEV_SIZE_MAX)
		return px_fail(p, n, "\"%s\": a device size must be 1MiB..16TiB",
			       (const char *)n->data.scalar.value);
	if (*out % LIM_ALLOC_UNIT != 0)
		return px_fail(p, n, "\"%s\": not a multiple of %u bytes",
			       (const char *)n->data.scalar.value,
			       LIM_ALLOC_UNIT);
	px_pop(p, old);
	return 0;
}

/* A whole count 0..ST_LAYOUT_UNITS_MAX (data, parity, spare, copies). */
static int px_count(struct conf_px *p, const char *key, const yaml_node_t *n,
		    uint32_t *out)
{
	size_t old = px_key(p, key);
	const char *s;
	uint64_t v = 0;
	int rc;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	for (const char *q = s; *q != '\0'; q++)
		if (!conf_is_digit(*q) || !conf_digit_add(&v, *q) ||
		    v > ST_LAYOUT_UNITS_MAX)
			return px_fail(p, n, "\"%.40s\": expected a whole "
				       "number 0..%u", s,
				       ST_LAYOUT_UNITS_MAX);
	*out = (uint32_t)v;
	px_pop(p, old);
	return 0;
}

static int px_bool(struct conf_px *p, const char *key, const yaml_node_t *n,
		   bool *out)
{
	size_t old = px_key(p, key);
	const char *s;
	int rc;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	if (strcasecmp(s, "true") == 0)
		*out = true;
	else if (strcasecmp(s, "false") == 0)
		*out = false;
	else
		return px_fail(p, n, "\"%.40s\": expected true or false", s);
	px_pop(p, old);
	return 0;
}

/* Index of s in names[0..nr) (NULL entries skipped), or -1. */
static int conf_name_index(const char *const *names, size_t nr, const char *s)
{
	for (size_t i = 0; i < nr; i++)
		if (names[i] != NULL && strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

static int px_tier(struct conf_px *p, const char *key, const yaml_node_t *n,
		   uint32_t *out)
{
	size_t old = px_key(p, key);
	const char *s;
	int rc, t;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	t = conf_name_index(conf_tier_names, ST_TIER_NR, s);
	if (t < 0)
		return px_fail(p, n, "unknown tier \"%.40s\" (expected nvram, "
			       "flash, sas or smr)", s);
	*out = (uint32_t)t;
	px_pop(p, old);
	return 0;
}

/* A device or pool name: 1..CONF_NAME_MAX of [A-Za-z0-9_.-], no leading '.'. */
static int px_name(struct conf_px *p, const char *key, const yaml_node_t *n,
		   char out[CONF_NAME_MAX + 1])
{
	size_t old = px_key(p, key), len;
	const char *s;
	int rc;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	len = strlen(s);
	if (len > CONF_NAME_MAX)
		return px_fail(p, n, "name \"%.40s\" is longer than %d "
			       "characters", s, CONF_NAME_MAX);
	if (s[0] == '.' || strspn(s, "abcdefghijklmnopqrstuvwxyz"
				  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != len)
		return px_fail(p, n, "name \"%.40s\": use letters, digits, "
			       "'_', '-' and '.' (not first)", s);
	memcpy(out, s, len + 1);
	px_pop(p, old);
	return 0;
}

/* ------------------------------------------------------------ devices */

enum { DK_NAME, DK_TIER, DK_SIZE, DK_PATH, DK_ZONE, DK_REMOTE, DK_DOMAIN,
       DK_LOCAL, DK_NR };
static const char *const conf_dev_keys[DK_NR] = {
	"name", "tier", "size", "path", "zone_size", "remote", "domain",
	"local",
};

/* local: true or false. */
static int px_dev_local(struct conf_px *p, const yaml_node_t *n,
			struct conf_dev *d)
{
	size_t old = px_key(p, "local");
	const char *s;
	int rc;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0)
		return px_fail(p, n, "\"%.40s\": expected true or false", s);
	d->cd_local = s[0] == 't';
	px_pop(p, old);
	return 0;
}

/* remote: "SERVER:INDEX" (a server name, a device index); not smr, no
 * path. */
static int px_dev_remote(struct conf_px *p, const yaml_node_t *n,
			 struct conf_dev *d)
{
	size_t old = px_key(p, "remote");
	const char *s, *colon;
	char *end;
	int rc;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	colon = strrchr(s, ':');
	if (strlen(s) >= sizeof d->cd_remote || colon == NULL || colon == s ||
	    colon[1] < '0' || colon[1] > '9' ||
	    (strtoul(colon + 1, &end, 10), *end != '\0'))
		return px_fail(p, n, "\"%.40s\": expected SERVER:INDEX", s);
	if (d->cd_tier == ST_TIER_SMR || d->cd_path[0] != '\0')
		return px_fail(p, n, "a remote device has no path and is not "
			       "smr");
	memcpy(d->cd_remote, s, strlen(s) + 1);
	px_pop(p, old);
	return 0;
}

/* domain: 1..CONF_SLICES_MAX. */
static int px_dev_domain(struct conf_px *p, const yaml_node_t *n,
			 struct conf_dev *d)
{
	size_t old = px_key(p, "domain");
	unsigned long v;
	const char *s;
	char *end;
	int rc;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	v = strtoul(s, &end, 10);
	if (end == s || *end != '\0' || s[0] < '0' || s[0] > '9' || v < 1 ||
	    v > CONF_SLICES_MAX)
		return px_fail(p, n, "\"%.40s\": expected 1..%u", s,
			       CONF_SLICES_MAX);
	d->cd_domain = (uint32_t)v;
	px_pop(p, old);
	return 0;
}

static int px_dev_path(struct conf_px *p, const yaml_node_t *n,
		       struct conf_dev *d)
{
	size_t old = px_key(p, "path");
	const char *s;
	int rc;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	if (strlen(s) >= sizeof d->cd_path)
		return px_fail(p, n, "\"%.40s...\": longer than %zu "
			       "characters", s, sizeof d->cd_path - 1);
	memcpy(d->cd_path, s, strlen(s) + 1);
	px_pop(p, old);
	return 0;
}

/* zone_size: SMR only, a power of two >= 1 MiB, no larger than the device. */
static int px_dev_zone(struct conf_px *p, const yaml_node_t *n,
		       struct conf_dev *d)
{
	const char *s = (const char *)n->data.scalar.value;
	size_t old;
	int rc;

	rc = px_size(p, "zone_size", n, &d->cd_zone_size);
	if (rc != 0)
		return rc;
	old = px_key(p, "zone_size");
	if (d->cd_tier != ST_TIER_SMR)
		return px_fail(p, n, "only smr devices have zones (this one "
			       "is %s)", conf_tier_names[d->cd_tier]);
	if (!conf_pow2(d->cd_zone_size) || d->cd_zone_size < (1ull << 20))
		return px_fail(p, n, "\"%.40s\": must be a power of two of "
			       "at least 1MiB", s);
	if (d->cd_size != 0 && d->cd_zone_size > d->cd_size)
		return px_fail(p, n, "\"%.40s\": larger than the device", s);
	px_pop(p, old);
	return 0;
}

/* One entry of devices: (name,) tier (, size, path, zone_size). */
static int px_dev(struct conf_px *p, const yaml_node_t *n, struct conf_dev *d)
{
	yaml_node_t *v[DK_NR], *k[DK_NR];
	int rc;

	rc = px_fields(p, n, conf_dev_keys, DK_NR, v, k);
	if (rc != 0)
		return rc;
	if (v[DK_TIER] == NULL)
		return px_fail(p, n, "key \"tier\" missing (nvram, flash, sas "
			       "or smr)");
	rc = px_tier(p, "tier", v[DK_TIER], &d->cd_tier);
	if (rc == 0 && v[DK_NAME] != NULL)
		rc = px_name(p, "name", v[DK_NAME], d->cd_name);
	d->cd_size = p->px_c->c_dev_size;
	if (rc == 0 && v[DK_SIZE] != NULL)
		rc = px_dev_size(p, "size", v[DK_SIZE], &d->cd_size);
	if (rc == 0 && v[DK_PATH] != NULL)
		rc = px_dev_path(p, v[DK_PATH], d);
	if (rc == 0 && v[DK_ZONE] != NULL)
		rc = px_dev_zone(p, v[DK_ZONE], d);
	if (rc == 0 && v[DK_REMOTE] != NULL)
		rc = px_dev_remote(p, v[DK_REMOTE], d);
	if (rc == 0 && v[DK_DOMAIN] != NULL)
		rc = px_dev_domain(p, v[DK_DOMAIN], d);
	if (rc == 0 && v[DK_LOCAL] != NULL)
		rc = px_dev_local(p, v[DK_LOCAL], d);
	return rc;
}

/* Whether a device other than skip is called name. */
static bool conf_dev_taken(const struct conf *c, uint32_t skip,
			   const char *name)
{
	for (uint32_t j = 0; j < c->c_nr_devs; j++)
		if (j != skip && strcmp(c->c_devs[j].cd_name, name) == 0)
			return true;
	return false;
}

/* Give each unnamed device "<tier><i>", i its ordinal in the tier, bumped
 * past names already taken. */
static void conf_dev_default_names(struct conf *c)
{
	uint32_t ord[ST_TIER_NR] = {0};

	for (uint32_t i = 0; i < c->c_nr_devs; i++) {
		struct conf_dev *d = &c->c_devs[i];
		uint32_t k = ord[d->cd_tier]++;

		if (d->cd_name[0] != '\0')
			continue;
		do
			snprintf(d->cd_name, sizeof d->cd_name, "%s%u",
				 conf_tier_names[d->cd_tier], k++);
		while (conf_dev_taken(c, i, d->cd_name));
	}
}

static int px_devices(struct conf_px *p, const yaml_node_t *seq)
{
	struct conf *c = p->px_c;
	size_t nr, old;
	int rc;

	rc = px_want(p, seq, YAML_SEQUENCE_NODE);
	if (rc != 0)
		return rc;
	nr = px_seq_len(seq);
	if (nr == 0 || nr > LIM_DEV_MAX)
		return px_fail(p, seq, "%zu devices; 1..%u allowed", nr,
			       LIM_DEV_MAX);
	c->c_devs = calloc(nr, sizeof *c->c_devs);
	if (c->c_devs == NULL)
		return err_set(-ENOMEM, "conf: no memory for %zu devices", nr);
	c->c_nr_devs = (uint32_t)nr;
	for (size_t i = 0; i < nr; i++) {
		const yaml_node_t *n = px_seq_item(p, seq, i);
		const char *name = c->c_devs[i].cd_name;

		old = px_push(p, "[%zu]", i);
		rc = px_dev(p, n, &c->c_devs[i]);
		if (rc != 0)
			return rc;
		for (size_t j = 0; j < i && name[0] != '\0'; j++)
			if (strcmp(c->c_devs[j].cd_name, name) == 0)
				return px_fail(p, n, "name \"%s\" already used "
					       "by devices[%zu]", name, j);
		px_pop(p, old);
	}
	conf_dev_default_names(c);
	return 0;
}

/* -------------------------------------------------------------- pools */

enum { PK_NAME, PK_DEVICES, PK_NR };
static const char *const conf_pool_keys[PK_NR] = {"name", "devices"};

/* The device list of a pool: known names, each once. */
static int px_pool_devs(struct conf_px *p, const yaml_node_t *seq,
			struct conf_pool *pl)
{
	const struct conf *c = p->px_c;
	size_t nr, old = px_key(p, "devices");
	int rc;

	rc = px_want(p, seq, YAML_SEQUENCE_NODE);
	if (rc != 0)
		return rc;
	nr = px_seq_len(seq);
	if (nr == 0 || nr > c->c_nr_devs)
		return px_fail(p, seq, "%zu devices listed; 1..%u allowed", nr,
			       c->c_nr_devs);
	pl->cp_devs = calloc(nr, sizeof *pl->cp_devs);
	if (pl->cp_devs == NULL)
		return err_set(-ENOMEM, "conf: no memory for a pool");
	for (size_t i = 0; i < nr; i++) {
		const yaml_node_t *n = px_seq_item(p, seq, i);
		const char *s;
		int d;

		rc = px_text(p, n, &s);
		if (rc != 0)
			return rc;
		d = conf_dev_find(c, s);
		if (d < 0)
			return px_fail(p, n, "unknown device \"%.40s\"", s);
		for (size_t j = 0; j < i; j++)
			if (pl->cp_devs[j] == (uint32_t)d)
				return px_fail(p, n, "device \"%s\" listed "
					       "twice", s);
		pl->cp_devs[pl->cp_nr++] = (uint32_t)d;
	}
	px_pop(p, old);
	return 0;
}

static int px_pool(struct conf_px *p, const yaml_node_t *n,
		   struct conf_pool *pl)
{
	yaml_node_t *v[PK_NR], *k[PK_NR];
	int rc;

	rc = px_fields(p, n, conf_pool_keys, PK_NR, v, k);
	if (rc != 0)
		return rc;
	if (v[PK_NAME] == NULL || v[PK_DEVICES] == NULL)
		return px_fail(p, n, "key \"%s\" missing",
			       v[PK_NAME] == NULL ? "name" : "devices");
	rc = px_name(p, "name", v[PK_NAME], pl->cp_name);
	if (rc == 0)
		rc = px_pool_devs(p, v[PK_DEVICES], pl);
	return rc;
}

static int px_pools(struct conf_px *p, const yaml_node_t *seq)
{
	struct conf *c = p->px_c;
	size_t nr, old;
	int rc;

	rc = px_want(p, seq, YAML_SEQUENCE_NODE);
	if (rc != 0)
		return rc;
	nr = px_seq_len(seq);
	if (nr > CONF_POOLS_MAX)
		return px_fail(p, seq, "%zu pools; at most %u", nr,
			       CONF_POOLS_MAX);
	if (nr == 0)
		return 0;
	c->c_pools = calloc(nr, sizeof *c->c_pools);
	if (c->c_pools == NULL)
		return err_set(-ENOMEM, "conf: no memory for %zu pools", nr);
	for (size_t i = 0; i < nr; i++) {
		const yaml_node_t *n = px_seq_item(p, seq, i);
		struct conf_pool *pl = &c->c_pools[i];

		old = px_push(p, "[%zu]", i);
		c->c_nr_pools++;
		rc = px_pool(p, n, pl);
		if (rc != 0)
			return rc;
		if (conf_pool_find(c, pl->cp_name) != (int)i)
			return px_fail(p, n, "pool name \"%s\" used twice",
				       pl->cp_name);
		px_pop(p, old);
	}
	return 0;
}

/* Add the pool named after each tier that has devices, unless a pool of
 * that name exists: the tier's devices in c_devs order. */
static int conf_pools_implicit(struct conf *c)
{
	for (uint32_t t = 0; t < ST_TIER_NR; t++) {
		struct conf_pool *pools, *pl;
		uint32_t nr = 0;

		for (uint32_t i = 0; i < c->c_nr_devs; i++)
			nr += c->c_devs[i].cd_tier == t;
		if (nr == 0 || conf_pool_find(c, conf_tier_names[t]) >= 0)
			continue;
		pools = realloc(c->c_pools, (c->c_nr_pools + 1) * sizeof *pools);
		if (pools == NULL)
			return err_set(-ENOMEM, "conf: no memory for pools");
		c->c_pools = pools;
		pl = &pools[c->c_nr_pools++];
		memset(pl, 0, sizeof *pl);
		snprintf(pl->cp_name, sizeof pl->cp_name, "%s",
			 conf_tier_names[t]);
		pl->cp_devs = calloc(nr, sizeof *pl->cp_devs);
		if (pl->cp_devs == NULL)
			return err_set(-ENOMEM, "conf: no memory for pools");
		for (uint32_t i = 0; i < c->c_nr_devs; i++)
			if (c->c_devs[i].cd_tier == t)
				pl->cp_devs[pl->cp_nr++] = i;
	}
	return 0;
}

/* ------------------------------------------------------------ layouts */

enum {
	LK_TYPE, LK_TIER, LK_POOL, LK_DATA, LK_PARITY, LK_SPARE, LK_COPIES,
	LK_UNIT, LK_NR
};
static const char *const conf_layout_keys[LK_NR] = {
	"type", "tier", "pool", "data", "parity", "spare", "copies", "unit",
};
/* Keys each layout type takes, as bits 1 << LK_*. */
static const uint32_t conf_layout_allowed[CONF_TYPE_NR] = {
	[ST_LAYOUT_PLAIN] = 1u << LK_TYPE | 1u << LK_TIER,
	[ST_LAYOUT_PDCLUST] = 1u << LK_TYPE | 1u << LK_POOL |
				  1u << LK_DATA | 1u << LK_PARITY |
				  1u << LK_SPARE | 1u << LK_UNIT,
	[ST_LAYOUT_MIRROR] = 1u << LK_TYPE | 1u << LK_POOL |
				 1u << LK_COPIES | 1u << LK_SPARE |
				 1u << LK_UNIT,
};

static int px_layout_type(struct conf_px *p, const yaml_node_t *n,
			  uint32_t *out)
{
	size_t old = px_key(p, "type");
	const char *s;
	int rc, t;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	t = conf_name_index(conf_type_names, CONF_TYPE_NR, s);
	if (t < 0)
		return px_fail(p, n, "unknown layout type \"%.40s\" (expected "
			       "plain, pdclust or mirror)", s);
	*out = (uint32_t)t;
	px_pop(p, old);
	return 0;
}

/* unit: a power of two 4KiB..16MiB, kept as its log2. */
static int px_layout_unit(struct conf_px *p, const yaml_node_t *n,
			  uint32_t *shift)
{
	uint64_t v;
	size_t old;
	int rc;

	rc = px_size(p, "unit", n, &v);
	if (rc != 0)
		return rc;
	old = px_key(p, "unit");
	if (!conf_pow2(v) || v < (1ull << ST_UNIT_SHIFT_MIN) ||
	    v > (1ull << ST_UNIT_SHIFT_MAX))
		return px_fail(p, n, "\"%.40s\": must be a power of two "
			       "between 4KiB and 16MiB",
			       (const char *)n->data.scalar.value);
	*shift = (uint32_t)__builtin_ctzll(v);
	px_pop(p, old);
	return 0;
}

static int px_layout_plain(struct conf_px *p, const yaml_node_t *n,
			   yaml_node_t *const *v, struct conf_layout *l)
{
	const struct conf *c = p->px_c;
	int rc;

	l->cl_tier = ST_TIER_FLASH;
	if (v[LK_TIER] != NULL) {
		rc = px_tier(p, "tier", v[LK_TIER], &l->cl_tier);
		if (rc != 0)
			return rc;
	}
	for (uint32_t i = 0; i < c->c_nr_devs; i++)
		if (c->c_devs[i].cd_tier == l->cl_tier)
			return 0;
	px_key(p, "tier");
	return px_fail(p, v[LK_TIER] != NULL ? v[LK_TIER] : n, "a plain layout "
		       "on tier %s, which has no devices",
		       conf_tier_names[l->cl_tier]);
}

/* pdclust and mirror: the pool, the unit counts against it, the unit. */
static int px_layout_pool(struct conf_px *p, const yaml_node_t *n,
			  yaml_node_t *const *v, struct conf_layout *l)
{
	const struct conf *c = p->px_c;
	const struct conf_pool *pl;
	bool mirror = l->cl_type == ST_LAYOUT_MIRROR;
	uint32_t total;
	const char *s;
	size_t old;
	int rc, i;

	if (v[LK_POOL] == NULL)
		return px_fail(p, n, "key \"pool\" missing (a %s layout needs "
			       "one)", conf_type_names[l->cl_type]);
	old = px_key(p, "pool");
	rc = px_text(p, v[LK_POOL], &s);
	if (rc != 0)
		return rc;
	i = conf_pool_find(c, s);
	if (i < 0)
		return px_fail(p, v[LK_POOL], "unknown pool \"%.40s\"", s);
	px_pop(p, old);
	l->cl_pool = (uint32_t)i;
	pl = &c->c_pools[i];
	l->cl_n = mirror ? CONF_MIRROR_COPIES : CONF_PDCLUST_DATA;
	l->cl_k = mirror ? 0 : CONF_PDCLUST_PARITY;
	if (v[mirror ? LK_COPIES : LK_DATA] != NULL)
		rc = px_count(p, mirror ? "copies" : "data",
			      v[mirror ? LK_COPIES : LK_DATA], &l->cl_n);
	if (rc == 0 && v[LK_PARITY] != NULL)
		rc = px_count(p, "parity", v[LK_PARITY], &l->cl_k);
	if (rc == 0 && v[LK_SPARE] != NULL)
		rc = px_count(p, "spare", v[LK_SPARE], &l->cl_s);
	if (rc == 0 && v[LK_UNIT] != NULL)
		rc = px_layout_unit(p, v[LK_UNIT], &l->cl_unit_shift);
	if (rc != 0)
		return rc;
	if (l->cl_n < (mirror ? 2u : 1u)) {
		px_key(p, mirror ? "copies" : "data");
		return px_fail(p, v[mirror ? LK_COPIES : LK_DATA], "%u; at "
			       "least %u", l->cl_n, mirror ? 2u : 1u);
	}
	total = l->cl_n + l->cl_k + l->cl_s;
	if (total > ST_LAYOUT_UNITS_MAX || total > pl->cp_nr) {
		char parity[32] = "";

		if (!mirror)
			snprintf(parity, sizeof parity, " + parity %u", l->cl_k);
		return px_fail(p, n, "%s %u%s + spare %u = %u units per group; "
			       "pool \"%s\" has %u devices (and at most %u "
			       "are allowed)", mirror ? "copies" : "data",
			       l->cl_n, parity, l->cl_s, total, pl->cp_name,
			       pl->cp_nr, ST_LAYOUT_UNITS_MAX);
	}
	return 0;
}

static int px_layout(struct conf_px *p, const char *key, const yaml_node_t *n,
		     struct conf_layout *l)
{
	yaml_node_t *v[LK_NR], *k[LK_NR];
	size_t old = px_key(p, key);
	int rc;

	memset(l, 0, sizeof *l);
	rc = px_fields(p, n, conf_layout_keys, LK_NR, v, k);
	if (rc != 0)
		return rc;
	if (v[LK_TYPE] == NULL)
		return px_fail(p, n, "key \"type\" missing (plain, pdclust or "
			       "mirror)");
	rc = px_layout_type(p, v[LK_TYPE], &l->cl_type);
	if (rc != 0)
		return rc;
	for (int i = 0; i < LK_NR; i++)
		if (v[i] != NULL &&
		    !(conf_layout_allowed[l->cl_type] & (1u << i)))
			return px_fail(p, k[i], "key \"%s\" does not apply to "
				       "a %s layout", conf_layout_keys[i],
				       conf_type_names[l->cl_type]);
	if (l->cl_type == ST_LAYOUT_PLAIN)
		rc = px_layout_plain(p, n, v, l);
	else
		rc = px_layout_pool(p, n, v, l);
	if (rc == 0)
		px_pop(p, old);
	return rc;
}

enum { CK_CONTAINER, CK_LAYOUT, CK_NR };
static const char *const conf_cont_keys[CK_NR] = {"container", "layout"};

static int px_cont(struct conf_px *p, const yaml_node_t *n, uint32_t i)
{
	struct conf_container *cc = &p->px_c->c_conts[i];
	yaml_node_t *v[CK_NR], *k[CK_NR];
	const char *s;
	size_t old;
	int rc;

	rc = px_fields(p, n, conf_cont_keys, CK_NR, v, k);
	if (rc != 0)
		return rc;
	if (v[CK_CONTAINER] == NULL || v[CK_LAYOUT] == NULL)
		return px_fail(p, n, "key \"%s\" missing",
			       v[CK_CONTAINER] == NULL ? "container" : "layout");
	old = px_key(p, "container");
	rc = px_text(p, v[CK_CONTAINER], &s);
	if (rc != 0)
		return rc;
	if (strlen(s) >= sizeof cc->cc_name)
		return px_fail(p, v[CK_CONTAINER], "\"%.40s...\": longer than "
			       "%zu characters", s, sizeof cc->cc_name - 1);
	if (st_id_parse(s, &cc->cc_id) != 0)
		return px_fail(p, v[CK_CONTAINER], "\"%.40s\": not an id "
			       "(HI:LO in hex, or @name)", s);
	for (uint32_t j = 0; j < i; j++)
		if (st_id_cmp(&p->px_c->c_conts[j].cc_id, &cc->cc_id) == 0)
			return px_fail(p, v[CK_CONTAINER], "\"%.40s\": the "
				       "same container as containers[%u]",
				       s, j);
	memcpy(cc->cc_name, s, strlen(s) + 1);
	px_pop(p, old);
	return px_layout(p, "layout", v[CK_LAYOUT], &cc->cc_layout);
}

static int px_conts(struct conf_px *p, const yaml_node_t *seq)
{
	struct conf *c = p->px_c;
	size_t nr, old = px_key(p, "containers");
	int rc;

	rc = px_want(p, seq, YAML_SEQUENCE_NODE);
	if (rc != 0)
		return rc;
	nr = px_seq_len(seq);
	if (nr > CONF_CONTS_MAX)
		return px_fail(p, seq, "%zu containers; at most %u", nr,
			       CONF_CONTS_MAX);
	if (nr != 0) {
		c->c_conts = calloc(nr, sizeof *c->c_conts);
		if (c->c_conts == NULL)
			return err_set(-ENOMEM, "conf: no memory for "
				       "containers");
	}
	for (size_t i = 0; i < nr; i++) {
		size_t at = px_push(p, "[%zu]", i);

		c->c_nr_conts++;
		rc = px_cont(p, px_seq_item(p, seq, i), (uint32_t)i);
		if (rc != 0)
			return rc;
		px_pop(p, at);
	}
	px_pop(p, old);
	return 0;
}

enum { YK_DEFAULT, YK_CONTAINERS, YK_NR };
static const char *const conf_layouts_keys[YK_NR] = {"default", "containers"};

/* layouts: (default, containers); no default = plain on flash. */
static int px_layouts(struct conf_px *p, const yaml_node_t *root,
		      const yaml_node_t *n)
{
	struct conf *c = p->px_c;
	yaml_node_t *v[YK_NR] = {NULL}, *k[YK_NR];
	size_t old = px_key(p, "layouts");
	int rc = 0;

	if (n != NULL)
		rc = px_fields(p, n, conf_layouts_keys, YK_NR, v, k);
	if (rc == 0 && v[YK_DEFAULT] != NULL)
		rc = px_layout(p, "default", v[YK_DEFAULT],
			       &c->c_default_layout);
	if (rc == 0 && v[YK_CONTAINERS] != NULL)
		rc = px_conts(p, v[YK_CONTAINERS]);
	if (rc != 0 || v[YK_DEFAULT] != NULL) {
		if (rc == 0)
			px_pop(p, old);
		return rc;
	}
	c->c_default_layout = (struct conf_layout){
		.cl_type = ST_LAYOUT_PLAIN, .cl_tier = ST_TIER_FLASH};
	for (uint32_t i = 0; i < c->c_nr_devs; i++)
		if (c->c_devs[i].cd_tier == ST_TIER_FLASH)
			goto out;
	px_key(p, "default");
	return px_fail(p, n != NULL ? n : root, "not given, and the built-in "
		       "default (plain on flash) needs a flash device");
out:
	px_pop(p, old);
	return 0;
}

/* --------------------------------------------------------- the models */

enum { MK_ON, MK_READ_LAT, MK_WRITE_LAT, MK_SYNC_LAT, MK_READ_BW,
	MK_WRITE_BW, MK_NR };
static const char *const conf_model_keys[MK_NR] = {
	"on", "read_latency", "write_latency", "sync_latency",
	"read_bandwidth", "write_bandwidth",
};

static int px_model(struct conf_px *p, const yaml_node_t *n,
		    struct conf_model *m)
{
	yaml_node_t *v[MK_NR], *k[MK_NR];
	uint64_t *nums[MK_NR] = {
		[MK_READ_LAT] = &m->cm_read_lat_ns,
		[MK_WRITE_LAT] = &m->cm_write_lat_ns,
		[MK_SYNC_LAT] = &m->cm_sync_lat_ns,
		[MK_READ_BW] = &m->cm_read_bw,
		[MK_WRITE_BW] = &m->cm_write_bw,
	};
	int rc;

	rc = px_fields(p, n, conf_model_keys, MK_NR, v, k);
	if (rc == 0 && v[MK_ON] != NULL)
		rc = px_bool(p, "on", v[MK_ON], &m->cm_on);
	for (int i = MK_READ_LAT; rc == 0 && i < MK_NR; i++)
		if (v[i] != NULL)
			rc = px_num(p, conf_model_keys[i], v[i],
				    i < MK_READ_BW ? conf_time_units
						   : conf_bw_units,
				    false, nums[i]);
	return rc;
}

static int px_models(struct conf_px *p, const yaml_node_t *n)
{
	yaml_node_t *v[ST_TIER_NR], *k[ST_TIER_NR];
	size_t old = px_key(p, "device_model"), at;
	int rc;

	rc = px_fields(p, n, conf_tier_names, ST_TIER_NR, v, k);
	for (uint32_t t = 0; rc == 0 && t < ST_TIER_NR; t++) {
		if (v[t] == NULL)
			continue;
		at = px_key(p, conf_tier_names[t]);
		rc = px_model(p, v[t], &p->px_c->c_model[t]);
		if (rc == 0)
			px_pop(p, at);
	}
	if (rc == 0)
		px_pop(p, old);
	return rc;
}

/* ------------------------------------------------------------ the top */

enum { TK_DEV_SIZE, TK_DEVICES, TK_POOLS, TK_LAYOUTS, TK_MODEL, TK_SLICE,
       TK_FILL, TK_NR };
static const char *const conf_top_keys[TK_NR] = {
	"device_size", "devices", "pools", "layouts", "device_model", "slice",
	"device_fill",
};

/* device_fill: zero or reserve (enum tier_fill, by tier_fill_name()). */
static int px_fill(struct conf_px *p, const yaml_node_t *n, uint32_t *out)
{
	size_t old = px_key(p, "device_fill");
	const char *s;
	int rc;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	for (uint32_t f = 0; f < TIER_FILL_NR; f++)
		if (strcmp(s, tier_fill_name(f)) == 0) {
			*out = f;
			px_pop(p, old);
			return 0;
		}
	return px_fail(p, n, "\"%.40s\": expected zero or reserve", s);
}

/* slice: "I/N", 0 <= I < N, 2 <= N <= CONF_SLICES_MAX (cluster stores). */
static int px_slice(struct conf_px *p, const yaml_node_t *n)
{
	size_t old = px_key(p, "slice");
	unsigned long i, nr;
	const char *s;
	char *end;
	int rc;

	rc = px_text(p, n, &s);
	if (rc != 0)
		return rc;
	i = strtoul(s, &end, 10);
	if (end == s || *end != '/' || end[1] < '0' || end[1] > '9')
		return px_fail(p, n, "\"%.40s\": expected I/N", s);
	nr = strtoul(end + 1, &end, 10);
	if (*end != '\0' || nr < 2 || nr > CONF_SLICES_MAX || i >= nr)
		return px_fail(p, n, "\"%.40s\": expected I/N with 2 <= N <= "
			       "%u and I < N", s, CONF_SLICES_MAX);
	p->px_c->c_slice = (uint32_t)i;
	p->px_c->c_slices = (uint32_t)nr;
	px_pop(p, old);
	return 0;
}

/* Walk the whole document into p->px_c, in dependency order: sizes, then
 * devices, pools (which name devices), layouts (which name pools). */
static int px_top(struct conf_px *p, const yaml_node_t *root)
{
	struct conf *c = p->px_c;
	yaml_node_t *v[TK_NR], *k[TK_NR];
	size_t old;
	int rc;

	if (root == NULL)
		return px_fail(p, NULL, "empty configuration (key \"devices\" "
			       "is required)");
	rc = px_fields(p, root, conf_top_keys, TK_NR, v, k);
	if (rc != 0)
		return rc;
	if (v[TK_DEV_SIZE] != NULL) {
		rc = px_dev_size(p, "device_size", v[TK_DEV_SIZE],
				 &c->c_dev_size);
		if (rc != 0)
			return rc;
	}
	if (v[TK_FILL] != NULL) {
		rc = px_fill(p, v[TK_FILL], &c->c_dev_fill);
		if (rc != 0)
			return rc;
	}
	if (v[TK_DEVICES] == NULL)
		return px_fail(p, root, "key \"devices\" missing");
	old = px_key(p, "devices");
	rc = px_devices(p, v[TK_DEVICES]);
	if (rc != 0)
		return rc;
	px_pop(p, old);
	if (v[TK_POOLS] != NULL) {
		old = px_key(p, "pools");
		rc = px_pools(p, v[TK_POOLS]);
		if (rc != 0)
			return rc;
		px_pop(p, old);
	}
	rc = conf_pools_implicit(c);
	if (rc == 0)
		rc = px_layouts(p, root, v[TK_LAYOUTS]);
	if (rc == 0 && v[TK_MODEL] != NULL)
		rc = px_models(p, v[TK_MODEL]);
	if (rc == 0 && v[TK_SLICE] != NULL)
		rc = px_slice(p, v[TK_SLICE]);
	return rc;
}

/* Report a libyaml error (syntax, bad encoding) with its line. */
static int conf_yaml_error(const yaml_parser_t *yp, const char *text,
			   size_t len)
{
	size_t line = yp->problem_mark.line + 1;

	if (yp->error == YAML_MEMORY_ERROR)
		return err_set(-ENOMEM, "conf: no memory to parse YAML");
	if (yp->error == YAML_READER_ERROR) {
		line = 1;
		for (size_t i = 0; i < yp->problem_offset && i < len; i++)
			line += text[i] == '\n';
	}
	return err_set(-EINVAL, "conf line %zu: YAML: %s%s%s", line,
		       yp->problem != NULL ? yp->problem : "syntax error",
		       yp->context != NULL ? " " : "",
		       yp->context != NULL ? yp->context : "");
}

/* Refuse a second document after the first in the stream. */
static int conf_yaml_one_doc(yaml_parser_t *yp, const char *text, size_t len)
{
	yaml_document_t doc;
	yaml_node_t *root;
	size_t line;

	if (!yaml_parser_load(yp, &doc))
		return conf_yaml_error(yp, text, len);
	root = yaml_document_get_root_node(&doc);
	line = root != NULL ? root->start_mark.line + 1 : 0;
	yaml_document_delete(&doc);
	if (root != NULL)
		return err_set(-EINVAL, "conf line %zu: a second YAML "
			       "document; only one is allowed", line);
	return 0;
}

int conf_parse(struct conf *c, const char *text, size_t len)
{
	struct conf tmp = {0};
	struct conf_px p = {.px_c = &tmp};
	yaml_parser_t yp;
	yaml_document_t doc;
	yaml_node_t *root;
	int rc;

	if (c == NULL || (text == NULL && len != 0))
		return err_set(-EINVAL, "conf_parse: NULL argument");
	if (len > CONF_TEXT_MAX)
		return err_set(-EINVAL, "conf: %zu bytes of text; at most %u",
			       len, CONF_TEXT_MAX);
	if (!yaml_parser_initialize(&yp))
		return err_set(-ENOMEM, "conf: no memory for the YAML parser");
	yaml_parser_set_input_string(&yp, (const unsigned char *)
				     (text != NULL ? text : ""), len);
	if (!yaml_parser_load(&yp, &doc)) {
		rc = conf_yaml_error(&yp, text, len);
		goto out_parser;
	}
	p.px_doc = &doc;
	root = yaml_document_get_root_node(&doc);
	rc = px_top(&p, root);
	if (rc == 0 && root != NULL)
		rc = conf_yaml_one_doc(&yp, text, len);
	yaml_document_delete(&doc);
	if (rc == 0)
		*c = tmp;
	else
		conf_fini(&tmp);
out_parser:
	yaml_parser_delete(&yp);
	return rc;
}

int conf_load(struct conf *c, const char *path)
{
	char msg[LIM_ERRMSG_LEN], *buf = NULL, *nbuf;
	size_t len = 0, cap = 0;
	ssize_t got;
	int fd, rc = 0;

	if (c == NULL || path == NULL)
		return err_set(-EINVAL, "conf_load: NULL argument");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(-errno, "conf %s: %s", path, strerror(errno));
	do {
		if (len == cap) {
			cap = cap == 0 ? 4096 : cap * 2;
			nbuf = realloc(buf, cap);
			if (nbuf == NULL) {
				rc = err_set(-ENOMEM, "conf %s: no memory", path);
				goto out;
			}
			buf = nbuf;
		}
		got = read(fd, buf + len, cap - len);
		if (got < 0 && errno != EINTR) {
			rc = err_set(-errno, "conf %s: %s", path,
				     strerror(errno));
			goto out;
		}
		len += got > 0 ? (size_t)got : 0;
		if (len > CONF_TEXT_MAX) {
			rc = err_set(-EFBIG, "conf %s: larger than %u bytes",
				     path, CONF_TEXT_MAX);
			goto out;
		}
	} while (got != 0);
	rc = conf_parse(c, buf, len);
	if (rc != 0) {
		snprintf(msg, sizeof msg, "%s", err_msg());
		err_set(rc, "%s: %s", path, msg);
	}
out:
	free(buf);
	close(fd);
	return rc;
}

int conf_default(struct conf *c, uint64_t dev_size)
{
	static const uint32_t per_tier[ST_TIER_NR] = {
		[ST_TIER_NVRAM] = 1, [ST_TIER_FLASH] = 8,
		[ST_TIER_SAS] = 4, [ST_TIER_SMR] = 1,
	};
	struct conf tmp = {0};
	uint32_t nr = 0;
	int rc;

	if (c == NULL)
		return err_set(-EINVAL, "conf_default: NULL argument");
	if (dev_size != 0 && (dev_size < LIM_DEV_SIZE_MIN ||
			      dev_size > LIM_DEV_SIZE_MAX ||
			      dev_size % LIM_ALLOC_UNIT != 0))
		return err_set(-EINVAL, "conf: device size %llu: must be "
			       "1MiB..16TiB and a multiple of %u",
			       (unsigned long long)dev_size, LIM_ALLOC_UNIT);
	for (uint32_t t = 0; t < ST_TIER_NR; t++)
		nr += per_tier[t];
	tmp.c_devs = calloc(nr, sizeof *tmp.c_devs);
	if (tmp.c_devs == NULL)
		return err_set(-ENOMEM, "conf: no memory for devices");
	tmp.c_dev_size = dev_size;
	for (uint32_t t = 0; t < ST_TIER_NR; t++)
		for (uint32_t i = 0; i < per_tier[t]; i++) {
			struct conf_dev *d = &tmp.c_devs[tmp.c_nr_devs++];

			d->cd_tier = t;
			d->cd_size = dev_size;
		}
	conf_dev_default_names(&tmp);
	tmp.c_default_layout = (struct conf_layout){
		.cl_type = ST_LAYOUT_PLAIN, .cl_tier = ST_TIER_FLASH};
	rc = conf_pools_implicit(&tmp);
	if (rc != 0) {
		conf_fini(&tmp);
		return rc;
	}
	*c = tmp;
	return 0;
}

void conf_fini(struct conf *c)
{
	if (c == NULL)
		return;
	for (uint32_t i = 0; i < c->c_nr_pools; i++)
		free(c->c_pools[i].cp_devs);
	free(c->c_pools);
	free(c->c_devs);
	free(c->c_conts);
	memset(c, 0, sizeof *c);
}

int conf_pool_find(const struct conf *c, const char *name)
{
	if (c == NULL || name == NULL)
		return -ENOENT;
	for (uint32_t i = 0; i < c->c_nr_pools; i++)
		if (strcmp(c->c_pools[i].cp_name, name) == 0)
			return (int)i;
	return -ENOENT;
}

int conf_dev_find(const struct conf *c, const char *name)
{
	if (c == NULL || name == NULL)
		return -ENOENT;
	for (uint32_t i = 0; i < c->c_nr_devs; i++)
		if (strcmp(c->c_devs[i].cd_name, name) == 0)
			return (int)i;
	return -ENOENT;
}

const struct conf_layout *conf_layout_for(const struct conf *c,
					  const struct st_id *cont)
{
	PRE(c != NULL);
	for (uint32_t i = 0; cont != NULL && i < c->c_nr_conts; i++)
		if (st_id_cmp(&c->c_conts[i].cc_id, cont) == 0)
			return &c->c_conts[i].cc_layout;
	return &c->c_default_layout;
}

/* ------------------------------------------------------------ emitting */

/* The text being written: a growing buffer, and whether all went well. */
struct conf_em {
	yaml_emitter_t em_yaml;
	char *em_buf;
	size_t em_len;
	size_t em_cap;
	bool em_ok;
};

/* libyaml's write handler: append to the buffer, keeping room for a NUL. */
static int em_write(void *data, unsigned char *bytes, size_t size)
{
	struct conf_em *e = data;
	char *nbuf;

	if (e->em_len + size + 1 > e->em_cap) {
		size_t cap = e->em_cap == 0 ? 1024 : e->em_cap;

		while (cap < e->em_len + size + 1)
			cap *= 2;
		nbuf = realloc(e->em_buf, cap);
		if (nbuf == NULL)
			return 0;
		e->em_buf = nbuf;
		e->em_cap = cap;
	}
	memcpy(e->em_buf + e->em_len, bytes, size);
	e->em_len += size;
	e->em_buf[e->em_len] = '\0';
	return 1;
}

/* Emit ev if it was made and nothing failed before (the emitter frees it). */
static void em_event(struct conf_em *e, yaml_event_t *ev, int made)
{
	if (!made)
		e->em_ok = false;
	else if (!e->em_ok)
		yaml_event_delete(ev);
	else if (!yaml_emitter_emit(&e->em_yaml, ev))
		e->em_ok = false;
}

static void em_str(struct conf_em *e, const char *s)
{
	yaml_event_t ev;

	em_event(e, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL,
		(yaml_char_t *)s, (int)strlen(s), 1, 1, YAML_ANY_SCALAR_STYLE));
}

static void em_map(struct conf_em *e, bool flow)
{
	yaml_event_t ev;

	em_event(e, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
		flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
}

static void em_map_end(struct conf_em *e)
{
	yaml_event_t ev;

	em_event(e, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void em_seq(struct conf_em *e, bool flow)
{
	yaml_event_t ev;

	em_event(e, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL,
		1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
}

static void em_seq_end(struct conf_em *e)
{
	yaml_event_t ev;

	em_event(e, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void em_kv(struct conf_em *e, const char *key, const char *val)
{
	em_str(e, key);
	em_str(e, val);
}

/* key: v written with the largest exact unit of units. */
static void em_num(struct conf_em *e, const char *key, uint64_t v,
		   const struct conf_unit *units)
{
	char buf[32];

	conf_num_format(buf, sizeof buf, v, units);
	em_kv(e, key, buf);
}

static void em_count(struct conf_em *e, const char *key, uint32_t v)
{
	char buf[16];

	snprintf(buf, sizeof buf, "%u", v);
	em_kv(e, key, buf);
}

static void em_devices(struct conf_em *e, const struct conf *c)
{
	em_str(e, "devices");
	em_seq(e, false);
	for (uint32_t i = 0; i < c->c_nr_devs; i++) {
		const struct conf_dev *d = &c->c_devs[i];

		PRE(d->cd_tier < ST_TIER_NR);
		em_map(e, true);
		em_kv(e, "name", d->cd_name);
		em_kv(e, "tier", conf_tier_names[d->cd_tier]);
		if (d->cd_size != c->c_dev_size)
			em_num(e, "size", d->cd_size, conf_size_units);
		if (d->cd_path[0] != '\0')
			em_kv(e, "path", d->cd_path);
		if (d->cd_zone_size != 0)
			em_num(e, "zone_size", d->cd_zone_size,
			       conf_size_units);
		if (d->cd_remote[0] != '\0')
			em_kv(e, "remote", d->cd_remote);
		if (d->cd_domain != 0)
			em_count(e, "domain", d->cd_domain);
		if (d->cd_local)
			em_kv(e, "local", "true");
		em_map_end(e);
	}
	em_seq_end(e);
}

static void em_pools(struct conf_em *e, const struct conf *c)
{
	if (c->c_nr_pools == 0)
		return;
	em_str(e, "pools");
	em_seq(e, false);
	for (uint32_t i = 0; i < c->c_nr_pools; i++) {
		const struct conf_pool *pl = &c->c_pools[i];

		em_map(e, true);
		em_kv(e, "name", pl->cp_name);
		em_str(e, "devices");
		em_seq(e, true);
		for (uint32_t j = 0; j < pl->cp_nr; j++) {
			PRE(pl->cp_devs[j] < c->c_nr_devs);
			em_str(e, c->c_devs[pl->cp_devs[j]].cd_name);
		}
		em_seq_end(e);
		em_map_end(e);
	}
	em_seq_end(e);
}

static void em_layout(struct conf_em *e, const struct conf *c,
		      const struct conf_layout *l)
{
	bool mirror = l->cl_type == ST_LAYOUT_MIRROR;

	PRE(l->cl_type >= ST_LAYOUT_PLAIN && l->cl_type < CONF_TYPE_NR);
	em_map(e, true);
	em_kv(e, "type", conf_type_names[l->cl_type]);
	if (l->cl_type == ST_LAYOUT_PLAIN) {
		PRE(l->cl_tier < ST_TIER_NR);
		em_kv(e, "tier", conf_tier_names[l->cl_tier]);
		em_map_end(e);
		return;
	}
	PRE(l->cl_pool < c->c_nr_pools);
	em_kv(e, "pool", c->c_pools[l->cl_pool].cp_name);
	em_count(e, mirror ? "copies" : "data", l->cl_n);
	if (!mirror)
		em_count(e, "parity", l->cl_k);
	em_count(e, "spare", l->cl_s);
	if (l->cl_unit_shift != 0)
		em_num(e, "unit", 1ull << l->cl_unit_shift, conf_size_units);
	em_map_end(e);
}

static void em_layouts(struct conf_em *e, const struct conf *c)
{
	char id[ST_ID_STR_LEN];

	em_str(e, "layouts");
	em_map(e, false);
	em_str(e, "default");
	em_layout(e, c, &c->c_default_layout);
	if (c->c_nr_conts != 0) {
		em_str(e, "containers");
		em_seq(e, false);
	}
	for (uint32_t i = 0; i < c->c_nr_conts; i++) {
		const struct conf_container *cc = &c->c_conts[i];

		em_map(e, false);
		em_kv(e, "container", cc->cc_name[0] != '\0' ? cc->cc_name :
			  st_id_format(&cc->cc_id, id));
		em_str(e, "layout");
		em_layout(e, c, &cc->cc_layout);
		em_map_end(e);
	}
	if (c->c_nr_conts != 0)
		em_seq_end(e);
	em_map_end(e);
}

static bool conf_model_set(const struct conf_model *m)
{
	return m->cm_on || m->cm_read_lat_ns != 0 || m->cm_write_lat_ns != 0 ||
	       m->cm_sync_lat_ns != 0 || m->cm_read_bw != 0 ||
	       m->cm_write_bw != 0;
}

static void em_models(struct conf_em *e, const struct conf *c)
{
	const uint64_t *vals[MK_NR];
	bool any = false;

	for (uint32_t t = 0; t < ST_TIER_NR; t++)
		any |= conf_model_set(&c->c_model[t]);
	if (!any)
		return;
	em_str(e, "device_model");
	em_map(e, false);
	for (uint32_t t = 0; t < ST_TIER_NR; t++) {
		const struct conf_model *m = &c->c_model[t];

		if (!conf_model_set(m))
			continue;
		vals[MK_READ_LAT] = &m->cm_read_lat_ns;
		vals[MK_WRITE_LAT] = &m->cm_write_lat_ns;
		vals[MK_SYNC_LAT] = &m->cm_sync_lat_ns;
		vals[MK_READ_BW] = &m->cm_read_bw;
		vals[MK_WRITE_BW] = &m->cm_write_bw;
		em_str(e, conf_tier_names[t]);
		em_map(e, true);
		em_kv(e, "on", m->cm_on ? "true" : "false");
		for (int i = MK_READ_LAT; i < MK_NR; i++)
			if (*vals[i] != 0)
				em_num(e, conf_model_keys[i], *vals[i],
				       i < MK_READ_BW ? conf_time_units
						      : conf_bw_units);
		em_map_end(e);
	}
	em_map_end(e);
}

int conf_emit(const struct conf *c, char **out)
{
	struct conf_em e = {.em_ok = true};
	yaml_event_t ev;
	char size[32];

	PRE(c != NULL && out != NULL);
	if (!yaml_emitter_initialize(&e.em_yaml))
		return err_set(-ENOMEM, "conf: no memory for the YAML emitter");
	yaml_emitter_set_output(&e.em_yaml, em_write, &e);
	yaml_emitter_set_unicode(&e.em_yaml, 1);
	yaml_emitter_set_width(&e.em_yaml, -1);
	em_event(&e, &ev, yaml_stream_start_event_initialize(&ev,
							     YAML_UTF8_ENCODING));
	em_event(&e, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL,
							       NULL, 1));
	em_map(&e, false);
	if (c->c_dev_size != 0) {
		conf_num_format(size, sizeof size, c->c_dev_size,
				conf_size_units);
		em_kv(&e, "device_size", size);
	}
	if (c->c_dev_fill != TIER_FILL_ZERO)
		em_kv(&e, "device_fill", tier_fill_name(c->c_dev_fill));
	em_devices(&e, c);
	em_pools(&e, c);
	em_layouts(&e, c);
	em_models(&e, c);
	if (c->c_slices != 0) {
		snprintf(size, sizeof size, "%u/%u", c->c_slice, c->c_slices);
		em_kv(&e, "slice", size);
	}
	em_map_end(&e);
	em_event(&e, &ev, yaml_document_end_event_initialize(&ev, 1));
	em_event(&e, &ev, yaml_stream_end_event_initialize(&ev));
	if (e.em_ok && !yaml_emitter_flush(&e.em_yaml))
		e.em_ok = false;
	yaml_emitter_delete(&e.em_yaml);
	if (!e.em_ok) {
		free(e.em_buf);
		return err_set(-ENOMEM, "conf: no memory to write YAML");
	}
	*out = e.em_buf;
	return 0;
}
