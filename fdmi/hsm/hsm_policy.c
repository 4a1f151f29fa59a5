/*
 * hsm_policy.c — the HSM plugin's policy file (see hsm_policy.h for the
 * format and the contract).
 *
 * The text is loaded whole with libyaml's document API, then walked by the
 * schema into a scratch struct hsm_policy that is copied out only when
 * every value checked out, so a file with an error changes nothing.  The
 * top-level keys are taken in a fixed order (scalars, rate, classes,
 * rules, watermarks), whatever their order in the file, so that rules may
 * name classes written below them.  Every mapping is checked for unknown
 * and repeated keys; every value for its kind (scalar, list, mapping), its
 * syntax and its range.  Each message is "NAME:LINE: FIELD: what", FIELD a
 * path such as "rules[1].to", LINE the 1-based line of the node at fault.
 *
 * Choices the header leaves open: an empty file (or one of comments only)
 * is a policy of defaults; a second YAML document is refused; sizes take
 * only the suffixes listed (no K, M, G, T); a percentage may omit its
 * '%'; the heat window is 1s..7d; a rule's "to" is optional only for
 * archive (smr); a move's direction is checked against its class's tier
 * when the class has one, else only promote to smr and demote to nvram
 * are refused; a watermark needs all four keys, and a tier may have
 * several (85% to sas, 95% to smr); a min above its max is refused (size,
 * age, and heat when heat_max is given, 0 included); an id prefix is hex
 * digits with at most one ':', kept in lower case (as st_id_format()
 * writes ids).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "core/errors.h"
#include "core/types.h"
#include "fdmi/hsm/hsm_policy.h"

/* Largest policy file hsm_policy_load() reads: a full policy (32 classes
 * of every predicate, 32 rules, 8 watermarks) is under 16 KiB, so 1 MiB
 * only refuses what is not a policy. */
#define HSM_POLICY_FILE_MAX (1u << 20)

#define NS_PER_S 1000000000ull
#define S_PER_DAY 86400ull
/* Field paths ("watermarks[7].ops_in_flight") and quoted values in
 * messages are cut to these. */
#define FIELD_LEN 64u
#define WHAT_LEN 200u

static const char *const tier_names[ST_TIER_NR] = {
	[ST_TIER_NVRAM] = "nvram",
	[ST_TIER_FLASH] = "flash",
	[ST_TIER_SAS] = "sas",
	[ST_TIER_SMR] = "smr",
};

const char *hsm_tier_name(uint32_t t)
{
	return t < ST_TIER_NR ? tier_names[t] : "?";
}

int hsm_tier_parse(const char *name)
{
	if (name == NULL)
		return -1;
	for (int t = 0; t < ST_TIER_NR; t++)
		if (strcmp(name, tier_names[t]) == 0)
			return t;
	return -1;
}

/* ------------------------------------------------------------ walking */

/* The state of one parse: the file's name, its document, the scratch
 * policy being filled. */
struct pp {
	const char *pp_name;
	yaml_document_t *pp_doc;
	struct hsm_policy *pp_pol;
};

/* A suffix and what it multiplies by. */
struct pp_unit {
	const char *pu_sfx;
	uint64_t pu_mul;
};

static const struct pp_unit size_units[] = {
	{"", 1}, {"B", 1}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20},
	{"GiB", 1ull << 30}, {"TiB", 1ull << 40},
};

static const struct pp_unit dur_units[] = {
	{"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", S_PER_DAY},
};

static unsigned pp_line(const yaml_node_t *n)
{
	return (unsigned)n->start_mark.line + 1;
}

/* Set the message "NAME:LINE: FIELD: what" for node n; returns -EINVAL. */
__attribute__((format(printf, 4, 5)))
static int pp_fail(const struct pp *p, const yaml_node_t *n,
		   const char *field, const char *fmt, ...)
{
	char what[WHAT_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return err_set(-EINVAL, "%s:%u: %s: %s", p->pp_name, pp_line(n),
		       field, what);
}

static yaml_node_t *pp_node(const struct pp *p, int id)
{
	return yaml_document_get_node(p->pp_doc, id);
}

static const char *pp_kind(yaml_node_type_t type)
{
	switch (type) {
	case YAML_SCALAR_NODE:
		return "a scalar";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a mapping";
	default:
		return "nothing";
	}
}

static int pp_want(const struct pp *p, const yaml_node_t *n,
		   const char *field, yaml_node_type_t type)
{
	if (n->type == type)
		return 0;
	return pp_fail(p, n, field, "expected %s, found %s", pp_kind(type),
		       pp_kind(n->type));
}

/* The text of scalar n, refused when it is not a scalar or holds a NUL. */
static int pp_text(const struct pp *p, const yaml_node_t *n,
		   const char *field, const char **s)
{
	int rc = pp_want(p, n, field, YAML_SCALAR_NODE);

	if (rc != 0)
		return rc;
	*s = (const char *)n->data.scalar.value;
	if (strlen(*s) != n->data.scalar.length)
		return pp_fail(p, n, field, "contains a NUL byte");
	return 0;
}

/* Write the path of key under prefix into field ("classes[0]" and "name"
 * give "classes[0].name"; prefix "" gives the key alone), each part cut
 * to 31 characters so that the whole fits FIELD_LEN. */
static void pp_path(char *field, const char *prefix, const char *key)
{
	size_t pl = strnlen(prefix, 31), kl = strnlen(key, 31), off = pl;

	memcpy(field, prefix, pl);
	if (pl > 0)
		field[off++] = '.';
	memcpy(field + off, key, kl);
	field[off + kl] = '\0';
}

/* An unknown key, with the keys its mapping takes. */
static int pp_unknown(const struct pp *p, const yaml_node_t *k,
		      const char *field, const char *const *keys, size_t nr)
{
	char list[WHAT_LEN] = "";
	size_t off = 0;

	for (size_t i = 0; i < nr && off < sizeof list; i++)
		off += (size_t)snprintf(list + off, sizeof list - off, "%s%s",
					i > 0 ? ", " : "", keys[i]);
	return pp_fail(p, k, field, "unknown key (%s)", list);
}

/*
 * Check that n is a mapping whose keys are all among keys[0..nr) and none
 * repeated, and set vals[i] to the value of keys[i] (NULL when absent).
 * prefix names the mapping ("" for the top, "classes[0]" ...).
 */
static int pp_map(const struct pp *p, const yaml_node_t *n,
		  const char *prefix, const char *const *keys, size_t nr,
		  yaml_node_t **vals)
{
	char field[FIELD_LEN];
	const yaml_node_pair_t *pr;
	int rc;

	rc = pp_want(p, n, prefix[0] != '\0' ? prefix : "policy",
		     YAML_MAPPING_NODE);
	if (rc != 0)
		return rc;
	memset(vals, 0, nr * sizeof *vals);
	for (pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
	     pr++) {
		yaml_node_t *k = pp_node(p, pr->key);
		const char *ks;
		size_t i;

		rc = pp_text(p, k, prefix[0] != '\0' ? prefix : "policy", &ks);
		if (rc != 0)
			return rc;
		pp_path(field, prefix, ks);
		for (i = 0; i < nr && strcmp(ks, keys[i]) != 0; i++)
			;
		if (i == nr)
			return pp_unknown(p, k, field, keys, nr);
		if (vals[i] != NULL)
			return pp_fail(p, k, field, "repeated key");
		vals[i] = pp_node(p, pr->value);
	}
	return 0;
}

/* A missing required key of the mapping n. */
static int pp_missing(const struct pp *p, const yaml_node_t *n,
		      const char *prefix, const char *key)
{
	char field[FIELD_LEN];

	pp_path(field, prefix, key);
	return pp_fail(p, n, field, "missing");
}

/* ------------------------------------------------------------- values */

/* Parse the decimal digits at *s into *v, moving *s past them; false
 * when there are none or the number does not fit. */
static bool pp_digits(const char **s, uint64_t *v)
{
	const char *c = *s;
	uint64_t x = 0;

	if (*c < '0' || *c > '9')
		return false;
	for (; *c >= '0' && *c <= '9'; c++) {
		unsigned d = (unsigned)(*c - '0');

		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*s = c;
	*v = x;
	return true;
}

/*
 * A number with a unit suffix from units[0..nr) (the empty suffix first)
 * times scale, into *v.  what names the kind ("size"), list the suffixes
 * for the message.  Refuses what does not fit in 64 bits.
 */
static int pp_unit(const struct pp *p, const yaml_node_t *n,
		   const char *field, const struct pp_unit *units, size_t nr,
		   uint64_t scale, const char *what, const char *list,
		   uint64_t *v)
{
	const char *s, *c;
	uint64_t x;
	size_t i;
	int rc = pp_text(p, n, field, &s);

	if (rc != 0)
		return rc;
	c = s;
	if (!pp_digits(&c, &x)) {
		if (*c >= '0' && *c <= '9')
			return pp_fail(p, n, field, "\"%.40s\" is too large",
				       s);
		return pp_fail(p, n, field, "\"%.40s\" is not a %s (%s)", s,
			       what, list);
	}
	for (i = 0; i < nr && strcmp(c, units[i].pu_sfx) != 0; i++)
		;
	if (i == nr)
		return pp_fail(p, n, field, "\"%.40s\" is not a %s (%s)", s,
			       what, list);
	if (x != 0 && units[i].pu_mul * scale > UINT64_MAX / x)
		return pp_fail(p, n, field, "\"%.40s\" is too large", s);
	*v = x * units[i].pu_mul * scale;
	return 0;
}

static int pp_size(const struct pp *p, const yaml_node_t *n,
		   const char *field, uint64_t *v)
{
	return pp_unit(p, n, field, size_units,
		       sizeof size_units / sizeof size_units[0], 1, "size",
		       "B, KiB, MiB, GiB, TiB", v);
}

/* A duration into nanoseconds. */
static int pp_dur(const struct pp *p, const yaml_node_t *n,
		  const char *field, uint64_t *ns)
{
	return pp_unit(p, n, field, dur_units,
		       sizeof dur_units / sizeof dur_units[0], NS_PER_S,
		       "duration", "s, m, h, d", ns);
}

/* A duration in [1s, max_s]; range names the range in the message. */
static int pp_dur_range(const struct pp *p, const yaml_node_t *n,
			const char *field, uint64_t max_s, const char *range,
			uint64_t *ns)
{
	int rc = pp_dur(p, n, field, ns);

	if (rc != 0)
		return rc;
	if (*ns < NS_PER_S || *ns > max_s * NS_PER_S)
		return pp_fail(p, n, field, "\"%.40s\" is out of range (%s)",
			       (const char *)n->data.scalar.value, range);
	return 0;
}

/* A plain number in [min, max]. */
static int pp_count(const struct pp *p, const yaml_node_t *n,
		    const char *field, uint64_t min, uint64_t max,
		    uint64_t *v)
{
	const char *s, *c;
	int rc = pp_text(p, n, field, &s);

	if (rc != 0)
		return rc;
	c = s;
	if (!pp_digits(&c, v) || *c != '\0') {
		if (*c >= '0' && *c <= '9')
			return pp_fail(p, n, field, "\"%.40s\" is too large",
				       s);
		return pp_fail(p, n, field, "\"%.40s\" is not a number", s);
	}
	if (*v < min || *v > max)
		return pp_fail(p, n, field,
			       "\"%.40s\" is out of range (%llu..%llu)", s,
			       (unsigned long long)min,
			       (unsigned long long)max);
	return 0;
}

/* A percentage 1..100, the '%' optional. */
static int pp_pct(const struct pp *p, const yaml_node_t *n,
		  const char *field, uint32_t *pct)
{
	const char *s, *c;
	uint64_t v;
	int rc = pp_text(p, n, field, &s);

	if (rc != 0)
		return rc;
	c = s;
	if (!pp_digits(&c, &v) || (*c != '\0' && strcmp(c, "%") != 0))
		return pp_fail(p, n, field, "\"%.40s\" is not a percentage "
			       "(1%%..100%%)", s);
	if (v < 1 || v > 100)
		return pp_fail(p, n, field, "\"%.40s\" is out of range "
			       "(1%%..100%%)", s);
	*pct = (uint32_t)v;
	return 0;
}

static int pp_tier(const struct pp *p, const yaml_node_t *n,
		   const char *field, uint32_t *tier)
{
	const char *s;
	int t, rc = pp_text(p, n, field, &s);

	if (rc != 0)
		return rc;
	t = hsm_tier_parse(s);
	if (t < 0)
		return pp_fail(p, n, field, "\"%.40s\" is not a tier (nvram, "
			       "flash, sas, smr)", s);
	*tier = (uint32_t)t;
	return 0;
}

/* One of words[0..nr) (listed in list), its index into *v. */
static int pp_word(const struct pp *p, const yaml_node_t *n,
		   const char *field, const char *const *words, size_t nr,
		   const char *what, const char *list, uint32_t *v)
{
	const char *s;
	int rc = pp_text(p, n, field, &s);

	if (rc != 0)
		return rc;
	for (size_t i = 0; i < nr; i++)
		if (strcmp(s, words[i]) == 0) {
			*v = (uint32_t)i;
			return 0;
		}
	return pp_fail(p, n, field, "\"%.40s\" is not %s (%s)", s, what,
		       list);
}

static bool pp_name_ok(const char *s)
{
	size_t len = strlen(s);

	if (len < 1 || len > HSM_NAME_MAX)
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' ||
		      *s == '-'))
			return false;
	return true;
}

/* ------------------------------------------------------------ classes */

enum {
	CK_NAME, CK_CONTAINER, CK_ID, CK_SIZE_MIN, CK_SIZE_MAX, CK_AGE_MIN,
	CK_AGE_MAX, CK_HEAT_MIN, CK_HEAT_MAX, CK_TIER, CK_NR
};

static const char *const class_keys[CK_NR] = {
	[CK_NAME] = "name", [CK_CONTAINER] = "container", [CK_ID] = "id",
	[CK_SIZE_MIN] = "size_min", [CK_SIZE_MAX] = "size_max",
	[CK_AGE_MIN] = "age_min", [CK_AGE_MAX] = "age_max",
	[CK_HEAT_MIN] = "heat_min", [CK_HEAT_MAX] = "heat_max",
	[CK_TIER] = "tier",
};

/* The class's name: valid and not taken by an earlier class. */
static int pp_class_name(const struct pp *p, const yaml_node_t *n,
			 const char *field, uint32_t idx, struct hsm_class *c)
{
	const char *s;
	int rc = pp_text(p, n, field, &s);

	if (rc != 0)
		return rc;
	if (!pp_name_ok(s))
		return pp_fail(p, n, field, "\"%.40s\" is not a name "
			       "([A-Za-z0-9_.-], 1..%u chars)", s,
			       HSM_NAME_MAX);
	for (uint32_t i = 0; i < idx; i++)
		if (strcmp(p->pp_pol->hp_classes[i].hc_name, s) == 0)
			return pp_fail(p, n, field, "\"%s\" is already the "
				       "name of classes[%u]", s, i);
	memcpy(c->hc_name, s, strlen(s) + 1);
	return 0;
}

/* An id prefix: hex digits and at most one ':', kept in lower case. */
static int pp_id_prefix(const struct pp *p, const yaml_node_t *n,
			const char *field, struct hsm_class *c)
{
	const char *s;
	unsigned colons = 0;
	size_t len;
	int rc = pp_text(p, n, field, &s);

	if (rc != 0)
		return rc;
	len = strlen(s);
	if (len > HSM_ID_PREFIX_MAX)
		return pp_fail(p, n, field, "\"%.40s...\" is longer than %u "
			       "characters", s, HSM_ID_PREFIX_MAX);
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (ch == ':')
			colons++;
		else if (ch >= 'A' && ch <= 'F')
			ch = (char)(ch - 'A' + 'a');
		else if (!((ch >= '0' && ch <= '9') ||
			   (ch >= 'a' && ch <= 'f')))
			colons = 2;
		if (colons > 1)
			return pp_fail(p, n, field, "\"%.40s\" is not an id "
				       "prefix (HI:LO in hex)", s);
		c->hc_id_prefix[i] = ch;
	}
	c->hc_id_prefix[len] = '\0';
	return 0;
}

/* A min/max pair: max 0 is no bound, else min <= max. */
static int pp_range_check(const struct pp *p, const yaml_node_t *maxn,
			  const char *field, uint64_t min, uint64_t max,
			  bool bounded, const char *minkey)
{
	if (maxn == NULL || !bounded || min <= max)
		return 0;
	return pp_fail(p, maxn, field, "\"%.40s\" is below %s",
		       (const char *)maxn->data.scalar.value, minkey);
}

/* The predicates other than name, container and id. */
static int pp_class_bounds(const struct pp *p, yaml_node_t *const *v,
			   const char *prefix, struct hsm_class *c)
{
	char f[CK_NR][FIELD_LEN];
	uint32_t t;
	int rc = 0;

	for (int i = 0; i < CK_NR; i++)
		pp_path(f[i], prefix, class_keys[i]);
	if (v[CK_SIZE_MIN] != NULL)
		rc = pp_size(p, v[CK_SIZE_MIN], f[CK_SIZE_MIN],
			     &c->hc_size_min);
	if (rc == 0 && v[CK_SIZE_MAX] != NULL)
		rc = pp_size(p, v[CK_SIZE_MAX], f[CK_SIZE_MAX],
			     &c->hc_size_max);
	if (rc == 0 && v[CK_AGE_MIN] != NULL)
		rc = pp_dur(p, v[CK_AGE_MIN], f[CK_AGE_MIN], &c->hc_age_min_ns);
	if (rc == 0 && v[CK_AGE_MAX] != NULL)
		rc = pp_dur(p, v[CK_AGE_MAX], f[CK_AGE_MAX], &c->hc_age_max_ns);
	if (rc == 0 && v[CK_HEAT_MIN] != NULL)
		rc = pp_count(p, v[CK_HEAT_MIN], f[CK_HEAT_MIN], 0, UINT64_MAX,
			      &c->hc_heat_min);
	if (rc == 0 && v[CK_HEAT_MAX] != NULL) {
		rc = pp_count(p, v[CK_HEAT_MAX], f[CK_HEAT_MAX], 0, UINT64_MAX,
			      &c->hc_heat_max);
		c->hc_heat_max_set = true;
	}
	if (rc == 0 && v[CK_TIER] != NULL) {
		rc = pp_tier(p, v[CK_TIER], f[CK_TIER], &t);
		c->hc_tier = (int32_t)t;
	}
	if (rc == 0)
		rc = pp_range_check(p, v[CK_SIZE_MAX], f[CK_SIZE_MAX],
				    c->hc_size_min, c->hc_size_max,
				    c->hc_size_max != 0, "size_min");
	if (rc == 0)
		rc = pp_range_check(p, v[CK_AGE_MAX], f[CK_AGE_MAX],
				    c->hc_age_min_ns, c->hc_age_max_ns,
				    c->hc_age_max_ns != 0, "age_min");
	if (rc == 0)
		rc = pp_range_check(p, v[CK_HEAT_MAX], f[CK_HEAT_MAX],
				    c->hc_heat_min, c->hc_heat_max,
				    true, "heat_min");
	return rc;
}

static int pp_class(const struct pp *p, const yaml_node_t *n, uint32_t idx)
{
	struct hsm_class *c = &p->pp_pol->hp_classes[idx];
	yaml_node_t *v[CK_NR];
	char prefix[FIELD_LEN], field[FIELD_LEN];
	const char *s;
	int rc;

	snprintf(prefix, sizeof prefix, "classes[%u]", idx);
	rc = pp_map(p, n, prefix, class_keys, CK_NR, v);
	if (rc != 0)
		return rc;
	c->hc_tier = -1;
	if (v[CK_NAME] == NULL)
		return pp_missing(p, n, prefix, "name");
	pp_path(field, prefix, "name");
	rc = pp_class_name(p, v[CK_NAME], field, idx, c);
	if (rc == 0 && v[CK_CONTAINER] != NULL) {
		pp_path(field, prefix, "container");
		rc = pp_text(p, v[CK_CONTAINER], field, &s);
		if (rc == 0 && st_id_parse(s, &c->hc_container) != 0)
			rc = pp_fail(p, v[CK_CONTAINER], field, "\"%.40s\" is "
				     "not an id (HI:LO in hex, or @name)", s);
		c->hc_container_set = true;
	}
	if (rc == 0 && v[CK_ID] != NULL) {
		pp_path(field, prefix, "id");
		rc = pp_id_prefix(p, v[CK_ID], field, c);
	}
	if (rc == 0)
		rc = pp_class_bounds(p, v, prefix, c);
	return rc;
}

/* -------------------------------------------------------------- rules */

enum { RK_CLASS, RK_ACTION, RK_TO, RK_ORDER, RK_MAX_OBJECTS, RK_NR };

static const char *const rule_keys[RK_NR] = {
	[RK_CLASS] = "class", [RK_ACTION] = "action", [RK_TO] = "to",
	[RK_ORDER] = "order", [RK_MAX_OBJECTS] = "max_objects",
};

/* enum hsm_action - 1 */
static const char *const action_words[] = {"promote", "demote", "archive"};
/* enum hsm_order */
static const char *const order_words[] = {"lru", "mru"};

static int pp_rule_class(const struct pp *p, const yaml_node_t *n,
			 const char *field, struct hsm_rule *r)
{
	const struct hsm_policy *pol = p->pp_pol;
	const char *s;
	int rc = pp_text(p, n, field, &s);

	if (rc != 0)
		return rc;
	for (uint32_t i = 0; i < pol->hp_nr_classes; i++)
		if (strcmp(pol->hp_classes[i].hc_name, s) == 0) {
			r->hr_class = i;
			return 0;
		}
	return pp_fail(p, n, field, "no class named \"%.40s\"", s);
}

/*
 * Does the rule move the right way?  Promote goes to a faster tier (a
 * lower number) than the class's, demote to a slower one, archive to smr;
 * with no tier in the class, only the ends are known to be wrong.
 */
static int pp_rule_dir(const struct pp *p, const yaml_node_t *n,
		       const char *field, const struct hsm_rule *r)
{
	int32_t from = p->pp_pol->hp_classes[r->hr_class].hc_tier;
	const char *to = hsm_tier_name(r->hr_to);

	switch (r->hr_action) {
	case HSM_PROMOTE:
		if (r->hr_to == ST_TIER_SMR)
			return pp_fail(p, n, field, "promote to smr: no tier "
				       "is slower");
		if (from >= 0 && (int32_t)r->hr_to >= from)
			return pp_fail(p, n, field, "promote from %s to %s: "
				       "not a faster tier",
				       hsm_tier_name((uint32_t)from), to);
		return 0;
	case HSM_ARCHIVE:
		if (r->hr_to != ST_TIER_SMR)
			return pp_fail(p, n, field, "archive to %s: archive "
				       "goes to smr", to);
		/* fall through */
	default:
		if (r->hr_to == ST_TIER_NVRAM)
			return pp_fail(p, n, field, "%s to nvram: no tier is "
				       "faster",
				       action_words[r->hr_action - 1]);
		if (from >= 0 && (int32_t)r->hr_to <= from)
			return pp_fail(p, n, field, "%s from %s to %s: not a "
				       "slower tier",
				       action_words[r->hr_action - 1],
				       hsm_tier_name((uint32_t)from), to);
		return 0;
	}
}

static int pp_rule(const struct pp *p, const yaml_node_t *n, uint32_t idx)
{
	struct hsm_rule *r = &p->pp_pol->hp_rules[idx];
	yaml_node_t *v[RK_NR];
	char prefix[FIELD_LEN], f[RK_NR][FIELD_LEN];
	uint64_t max;
	int rc;

	snprintf(prefix, sizeof prefix, "rules[%u]", idx);
	rc = pp_map(p, n, prefix, rule_keys, RK_NR, v);
	if (rc != 0)
		return rc;
	for (int i = 0; i < RK_NR; i++)
		pp_path(f[i], prefix, rule_keys[i]);
	r->hr_line = pp_line(n);
	if (v[RK_CLASS] == NULL)
		return pp_missing(p, n, prefix, "class");
	if (v[RK_ACTION] == NULL)
		return pp_missing(p, n, prefix, "action");
	rc = pp_rule_class(p, v[RK_CLASS], f[RK_CLASS], r);
	if (rc == 0)
		rc = pp_word(p, v[RK_ACTION], f[RK_ACTION], action_words, 3,
			     "an action", "promote, demote, archive",
			     &r->hr_action);
	if (rc != 0)
		return rc;
	r->hr_action++;
	if (v[RK_TO] == NULL && r->hr_action != HSM_ARCHIVE)
		return pp_missing(p, n, prefix, "to");
	r->hr_to = ST_TIER_SMR;
	if (v[RK_TO] != NULL)
		rc = pp_tier(p, v[RK_TO], f[RK_TO], &r->hr_to);
	if (rc == 0)
		rc = pp_rule_dir(p, v[RK_TO] != NULL ? v[RK_TO] : n, f[RK_TO],
				 r);
	if (rc == 0 && v[RK_ORDER] != NULL)
		rc = pp_word(p, v[RK_ORDER], f[RK_ORDER], order_words, 2,
			     "an order", "lru, mru", &r->hr_order);
	if (rc == 0 && v[RK_MAX_OBJECTS] != NULL) {
		rc = pp_count(p, v[RK_MAX_OBJECTS], f[RK_MAX_OBJECTS], 0,
			      UINT32_MAX, &max);
		r->hr_max_objects = (uint32_t)max;
	}
	return rc;
}

/* --------------------------------------------------------- watermarks */

enum { MK_TIER, MK_HIGH, MK_LOW, MK_TO, MK_NR };

static const char *const mark_keys[MK_NR] = {
	[MK_TIER] = "tier", [MK_HIGH] = "high", [MK_LOW] = "low",
	[MK_TO] = "to",
};

static int pp_mark(const struct pp *p, const yaml_node_t *n, uint32_t idx)
{
	struct hsm_mark *m = &p->pp_pol->hp_marks[idx];
	yaml_node_t *v[MK_NR];
	char prefix[FIELD_LEN], f[MK_NR][FIELD_LEN];
	int rc;

	snprintf(prefix, sizeof prefix, "watermarks[%u]", idx);
	rc = pp_map(p, n, prefix, mark_keys, MK_NR, v);
	if (rc != 0)
		return rc;
	m->hm_line = pp_line(n);
	for (int i = 0; i < MK_NR; i++) {
		if (v[i] == NULL)
			return pp_missing(p, n, prefix, mark_keys[i]);
		pp_path(f[i], prefix, mark_keys[i]);
	}
	rc = pp_tier(p, v[MK_TIER], f[MK_TIER], &m->hm_tier);
	if (rc == 0)
		rc = pp_pct(p, v[MK_HIGH], f[MK_HIGH], &m->hm_high_pct);
	if (rc == 0)
		rc = pp_pct(p, v[MK_LOW], f[MK_LOW], &m->hm_low_pct);
	if (rc == 0 && m->hm_low_pct >= m->hm_high_pct)
		rc = pp_fail(p, v[MK_LOW], f[MK_LOW], "%u%% is not below "
			     "high (%u%%)", m->hm_low_pct, m->hm_high_pct);
	if (rc == 0)
		rc = pp_tier(p, v[MK_TO], f[MK_TO], &m->hm_to);
	if (rc == 0 && m->hm_to <= m->hm_tier)
		rc = pp_fail(p, v[MK_TO], f[MK_TO], "%s is not slower than "
			     "%s", hsm_tier_name(m->hm_to),
			     hsm_tier_name(m->hm_tier));
	return rc;
}

/* ------------------------------------------------------------ the top */

/* Run item() on each item of the list n (field), at most max of them. */
static int pp_list(const struct pp *p, const yaml_node_t *n,
		   const char *field, uint32_t max, uint32_t *nr,
		   int (*item)(const struct pp *, const yaml_node_t *,
			       uint32_t))
{
	const yaml_node_item_t *it;
	int rc = pp_want(p, n, field, YAML_SEQUENCE_NODE);

	for (it = n->data.sequence.items.start;
	     rc == 0 && it < n->data.sequence.items.top; it++) {
		const yaml_node_t *in = pp_node(p, *it);

		if (*nr == max)
			return pp_fail(p, in, field, "more than %u %s", max,
				       field);
		rc = item(p, in, *nr);
		if (rc == 0)
			(*nr)++;
	}
	return rc;
}

enum { RTK_BYTES, RTK_OPS, RTK_NR };

static const char *const rate_keys[RTK_NR] = {
	[RTK_BYTES] = "bytes_per_s", [RTK_OPS] = "ops_in_flight",
};

static int pp_rate(const struct pp *p, const yaml_node_t *n)
{
	yaml_node_t *v[RTK_NR];
	uint64_t ops;
	int rc = pp_map(p, n, "rate", rate_keys, RTK_NR, v);

	if (rc == 0 && v[RTK_BYTES] != NULL)
		rc = pp_size(p, v[RTK_BYTES], "rate.bytes_per_s",
			     &p->pp_pol->hp_bytes_per_s);
	if (rc == 0 && v[RTK_OPS] != NULL) {
		rc = pp_count(p, v[RTK_OPS], "rate.ops_in_flight", 1, 64,
			      &ops);
		p->pp_pol->hp_ops_in_flight = (uint32_t)ops;
	}
	return rc;
}

enum { TK_INTERVAL, TK_WINDOW, TK_RATE, TK_CLASSES, TK_RULES, TK_MARKS,
       TK_NR };

static const char *const top_keys[TK_NR] = {
	[TK_INTERVAL] = "interval", [TK_WINDOW] = "window",
	[TK_RATE] = "rate", [TK_CLASSES] = "classes", [TK_RULES] = "rules",
	[TK_MARKS] = "watermarks",
};

static int pp_top(const struct pp *p, const yaml_node_t *root)
{
	struct hsm_policy *pol = p->pp_pol;
	yaml_node_t *v[TK_NR];
	int rc = pp_map(p, root, "", top_keys, TK_NR, v);

	if (rc == 0 && v[TK_INTERVAL] != NULL)
		rc = pp_dur_range(p, v[TK_INTERVAL], "interval", S_PER_DAY,
				  "1s..1d", &pol->hp_interval_ns);
	if (rc == 0 && v[TK_WINDOW] != NULL)
		rc = pp_dur_range(p, v[TK_WINDOW], "window", 7 * S_PER_DAY,
				  "1s..7d", &pol->hp_window_ns);
	if (rc == 0 && v[TK_RATE] != NULL)
		rc = pp_rate(p, v[TK_RATE]);
	if (rc == 0 && v[TK_CLASSES] != NULL)
		rc = pp_list(p, v[TK_CLASSES], "classes", HSM_CLASSES_MAX,
			     &pol->hp_nr_classes, pp_class);
	if (rc == 0 && v[TK_RULES] != NULL)
		rc = pp_list(p, v[TK_RULES], "rules", HSM_RULES_MAX,
			     &pol->hp_nr_rules, pp_rule);
	if (rc == 0 && v[TK_MARKS] != NULL)
		rc = pp_list(p, v[TK_MARKS], "watermarks", HSM_MARKS_MAX,
			     &pol->hp_nr_marks, pp_mark);
	return rc;
}

/* libyaml's syntax error, with its line. */
static int pp_syntax(const char *name, const yaml_parser_t *ps)
{
	const yaml_mark_t *m = ps->problem != NULL ? &ps->problem_mark :
			       &ps->context_mark;

	return err_set(-EINVAL, "%s:%u: syntax: %s%s%s", name,
		       (unsigned)m->line + 1,
		       ps->problem != NULL ? ps->problem : "bad YAML",
		       ps->context != NULL ? " " : "",
		       ps->context != NULL ? ps->context : "");
}

/* Load the one document of text into doc; -EINVAL on a syntax error or a
 * second document.  doc is to be deleted on success only. */
static int pp_load(const char *name, const char *text, size_t len,
		   yaml_document_t *doc)
{
	yaml_parser_t ps;
	yaml_document_t more;
	yaml_node_t *r;
	int rc = 0;

	if (!yaml_parser_initialize(&ps))
		return err_set(-ENOMEM, "%s: cannot start the YAML parser",
			       name);
	yaml_parser_set_input_string(&ps, (const unsigned char *)text, len);
	if (!yaml_parser_load(&ps, doc)) {
		rc = pp_syntax(name, &ps);
		goto out_parser;
	}
	if (!yaml_parser_load(&ps, &more)) {
		rc = pp_syntax(name, &ps);
		goto out_doc;
	}
	r = yaml_document_get_root_node(&more);
	if (r != NULL)
		rc = err_set(-EINVAL, "%s:%u: policy: a second YAML document "
			     "(a policy is one)", name, pp_line(r));
	yaml_document_delete(&more);
out_doc:
	if (rc != 0)
		yaml_document_delete(doc);
out_parser:
	yaml_parser_delete(&ps);
	return rc;
}

int hsm_policy_parse(const char *name, const char *text, size_t len,
		     struct hsm_policy *out)
{
	struct hsm_policy *pol;
	yaml_document_t doc;
	yaml_node_t *root;
	struct pp p;
	int rc;

	if (out == NULL)
		return err_set(-EINVAL, "hsm_policy_parse: no output");
	memset(out, 0, sizeof *out);
	if (name == NULL)
		name = "policy";
	if (text == NULL)
		return err_set(-EINVAL, "%s: no text", name);
	pol = calloc(1, sizeof *pol);
	if (pol == NULL)
		return err_set(-ENOMEM, "%s: no memory for the policy", name);
	pol->hp_interval_ns = 60 * NS_PER_S;
	pol->hp_window_ns = 300 * NS_PER_S;
	pol->hp_ops_in_flight = 2;
	rc = pp_load(name, text, len, &doc);
	if (rc != 0)
		goto out_free;
	p = (struct pp){.pp_name = name, .pp_doc = &doc, .pp_pol = pol};
	root = yaml_document_get_root_node(&doc);
	if (root != NULL)
		rc = pp_top(&p, root);
	if (rc == 0)
		*out = *pol;
	yaml_document_delete(&doc);
out_free:
	free(pol);
	return rc;
}

/* Read at most HSM_POLICY_FILE_MAX bytes of fd into buf (one more byte of
 * room), the count into *len. */
static int pp_read(const char *path, int fd, char *buf, size_t *len)
{
	size_t got = 0;

	while (got <= HSM_POLICY_FILE_MAX) {
		ssize_t r = read(fd, buf + got, HSM_POLICY_FILE_MAX + 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return err_set(-errno, "%s: cannot read: %s", path,
				       strerror(errno));
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got > HSM_POLICY_FILE_MAX)
		return err_set(-EFBIG, "%s: larger than the %u bytes a policy "
			       "may have", path, HSM_POLICY_FILE_MAX);
	*len = got;
	return 0;
}

int hsm_policy_load(const char *path, struct hsm_policy *out)
{
	char *buf;
	size_t len = 0;
	int fd, rc;

	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (path == NULL || out == NULL)
		return err_set(-EINVAL, "hsm_policy_load: NULL argument");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(-errno, "%s: cannot open: %s", path,
			       strerror(errno));
	buf = malloc(HSM_POLICY_FILE_MAX + 1);
	if (buf == NULL) {
		rc = err_set(-ENOMEM, "%s: no memory to read it", path);
		goto out_close;
	}
	rc = pp_read(path, fd, buf, &len);
	if (rc == 0)
		rc = hsm_policy_parse(path, buf, len, out);
	free(buf);
out_close:
	close(fd);
	return rc;
}
