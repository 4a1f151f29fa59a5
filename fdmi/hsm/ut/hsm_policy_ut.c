/*
 * hsm_policy_ut.c — suite "hsm_policy" (issue 31 point 4): the HSM
 * plugin's policy parser (fdmi/hsm/hsm_policy.h), in memory:
 *
 *  - a policy with every key parses into the right fields, rule and
 *    watermark lines included;
 *  - the defaults (an empty file, a class or rule of required keys only);
 *  - bad input of every kind (syntax, unknown and repeated keys, wrong
 *    node kinds, bad sizes, durations, numbers, percentages, tiers, names,
 *    ids, ranges, directions of moves, watermarks, limits) is refused
 *    with -EINVAL, a message "p.yaml:LINE: FIELD: ..." and *out zeroed;
 *  - hsm_policy_load() of a file, of a missing one and of one too big;
 *  - tier names both ways.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/types.h"
#include "fdmi/hsm/hsm_policy.h"
#include "tests/ut.h"

#define NS 1000000000ull

static char pbase[512];

/* ------------------------------------------------------------ helpers */

static bool all_zero(const void *p, size_t len)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		if (c[i] != 0)
			return false;
	return true;
}

/* Parse text as "p.yaml" into *out (prefilled with garbage so that a
 * zeroed *out after an error is the parser's doing). */
static int parse(const char *text, struct hsm_policy *out)
{
	memset(out, 0xa5, sizeof *out);
	err_clear();
	return hsm_policy_parse("p.yaml", text, strlen(text), out);
}

/* text must be refused with -EINVAL, a message holding want, and the
 * policy zeroed. */
/* Refused with -EINVAL naming want, nothing left in p: true. */
static bool bad(const char *text, const char *want)
{
	static struct hsm_policy p;
	int rc = parse(text, &p);
	bool found = strstr(err_msg(), want) != NULL;

	CU_ASSERT_EQUAL(rc, -EINVAL);
	CU_ASSERT(found);
	CU_ASSERT(all_zero(&p, sizeof p));
	if (rc != -EINVAL || !found)
		fprintf(stderr, "\n  text:\n%s  want \"%s\", rc %d, "
			"got \"%s\"\n", text, want, rc, err_msg());
	return rc == -EINVAL && found;
}

/* ---------------------------------------------------------- full, ok */

static const char full_policy[] =
	"# every key\n"                                 /* 1 */
	"interval: 10s\n"
	"window: 2h\n"
	"rate:\n"
	"  bytes_per_s: 200MiB\n"                       /* 5 */
	"  ops_in_flight: 4\n"
	"classes:\n"
	"  - name: hot\n"
	"    container: 0:1\n"
	"    id: \"7A:\"\n"                             /* 10 */
	"    size_min: 4KiB\n"
	"    size_max: 1GiB\n"
	"    age_min: 60s\n"
	"    age_max: 1d\n"
	"    heat_min: 3\n"                             /* 15 */
	"    heat_max: 9\n"
	"    tier: sas\n"
	"  - name: cold.v-2_X\n"
	"    container: \"@logs\"\n"
	"    age_min: 30m\n"                            /* 20 */
	"    heat_max: 0\n"
	"    tier: flash\n"
	"rules:\n"
	"  - class: hot\n"
	"    action: promote\n"                         /* 25 */
	"    to: flash\n"
	"    order: mru\n"
	"    max_objects: 100\n"
	"  - class: cold.v-2_X\n"
	"    action: demote\n"                          /* 30 */
	"    to: sas\n"
	"    order: lru\n"
	"  - { class: cold.v-2_X, action: archive }\n"
	"watermarks:\n"
	"  - tier: flash\n"                             /* 35 */
	"    high: 85%\n"
	"    low: 80%\n"
	"    to: sas\n"
	"  - { tier: nvram, high: 90, low: 1%, to: smr }\n";

static void test_full(void)
{
	static struct hsm_policy p;
	const struct hsm_class *c0 = &p.hp_classes[0];
	const struct hsm_class *c1 = &p.hp_classes[1];
	const struct hsm_rule *r = p.hp_rules;
	const struct hsm_mark *m = p.hp_marks;
	struct st_id logs;
	int rc = parse(full_policy, &p);

	if (rc != 0)
		fprintf(stderr, "\n  full: %s\n", err_msg());
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(p.hp_interval_ns, 10 * NS);
	CU_ASSERT_EQUAL(p.hp_window_ns, 7200 * NS);
	CU_ASSERT_EQUAL(p.hp_bytes_per_s, 200ull << 20);
	CU_ASSERT_EQUAL(p.hp_ops_in_flight, 4);
	CU_ASSERT_EQUAL(p.hp_nr_classes, 2);
	CU_ASSERT_EQUAL(p.hp_nr_rules, 3);
	CU_ASSERT_EQUAL(p.hp_nr_marks, 2);

	CU_ASSERT_STRING_EQUAL(c0->hc_name, "hot");
	CU_ASSERT(c0->hc_container_set);
	CU_ASSERT_EQUAL(c0->hc_container.si_hi, 0);
	CU_ASSERT_EQUAL(c0->hc_container.si_lo, 1);
	CU_ASSERT_STRING_EQUAL(c0->hc_id_prefix, "7a:");
	CU_ASSERT_EQUAL(c0->hc_size_min, 4096);
	CU_ASSERT_EQUAL(c0->hc_size_max, 1ull << 30);
	CU_ASSERT_EQUAL(c0->hc_age_min_ns, 60 * NS);
	CU_ASSERT_EQUAL(c0->hc_age_max_ns, 86400 * NS);
	CU_ASSERT_EQUAL(c0->hc_heat_min, 3);
	CU_ASSERT_EQUAL(c0->hc_heat_max, 9);
	CU_ASSERT(c0->hc_heat_max_set);
	CU_ASSERT_EQUAL(c0->hc_tier, ST_TIER_SAS);

	CU_ASSERT_EQUAL_FATAL(st_id_parse("@logs", &logs), 0);
	CU_ASSERT_STRING_EQUAL(c1->hc_name, "cold.v-2_X");
	CU_ASSERT(c1->hc_container_set);
	CU_ASSERT_EQUAL(st_id_cmp(&c1->hc_container, &logs), 0);
	CU_ASSERT_STRING_EQUAL(c1->hc_id_prefix, "");
	CU_ASSERT_EQUAL(c1->hc_size_min, 0);
	CU_ASSERT_EQUAL(c1->hc_size_max, 0);
	CU_ASSERT_EQUAL(c1->hc_age_min_ns, 1800 * NS);
	CU_ASSERT_EQUAL(c1->hc_age_max_ns, 0);
	CU_ASSERT_EQUAL(c1->hc_heat_min, 0);
	CU_ASSERT_EQUAL(c1->hc_heat_max, 0);
	CU_ASSERT(c1->hc_heat_max_set);
	CU_ASSERT_EQUAL(c1->hc_tier, ST_TIER_FLASH);

	CU_ASSERT_EQUAL(r[0].hr_class, 0);
	CU_ASSERT_EQUAL(r[0].hr_action, HSM_PROMOTE);
	CU_ASSERT_EQUAL(r[0].hr_to, ST_TIER_FLASH);
	CU_ASSERT_EQUAL(r[0].hr_order, HSM_MRU);
	CU_ASSERT_EQUAL(r[0].hr_max_objects, 100);
	CU_ASSERT_EQUAL(r[0].hr_line, 24);
	CU_ASSERT_EQUAL(r[1].hr_class, 1);
	CU_ASSERT_EQUAL(r[1].hr_action, HSM_DEMOTE);
	CU_ASSERT_EQUAL(r[1].hr_to, ST_TIER_SAS);
	CU_ASSERT_EQUAL(r[1].hr_order, HSM_LRU);
	CU_ASSERT_EQUAL(r[1].hr_max_objects, 0);
	CU_ASSERT_EQUAL(r[1].hr_line, 29);
	CU_ASSERT_EQUAL(r[2].hr_class, 1);
	CU_ASSERT_EQUAL(r[2].hr_action, HSM_ARCHIVE);
	CU_ASSERT_EQUAL(r[2].hr_to, ST_TIER_SMR);
	CU_ASSERT_EQUAL(r[2].hr_line, 33);

	CU_ASSERT_EQUAL(m[0].hm_tier, ST_TIER_FLASH);
	CU_ASSERT_EQUAL(m[0].hm_high_pct, 85);
	CU_ASSERT_EQUAL(m[0].hm_low_pct, 80);
	CU_ASSERT_EQUAL(m[0].hm_to, ST_TIER_SAS);
	CU_ASSERT_EQUAL(m[0].hm_line, 35);
	CU_ASSERT_EQUAL(m[1].hm_tier, ST_TIER_NVRAM);
	CU_ASSERT_EQUAL(m[1].hm_high_pct, 90);
	CU_ASSERT_EQUAL(m[1].hm_low_pct, 1);
	CU_ASSERT_EQUAL(m[1].hm_to, ST_TIER_SMR);
	CU_ASSERT_EQUAL(m[1].hm_line, 39);
}

/* Rules may name classes written below them; sizes and durations take
 * every suffix, or none. */
static void test_order_units(void)
{
	static struct hsm_policy p;
	static const char text[] =
		"rules:\n"
		"  - { class: c, action: demote, to: smr }\n"
		"classes:\n"
		"  - { name: a, size_min: 7, size_max: 7B, age_min: 5,"
		" age_max: 2h }\n"
		"  - { name: b, size_min: 3MiB, size_max: 1TiB }\n"
		"  - { name: c, id: \"\" }\n";
	int rc = parse(text, &p);

	if (rc != 0)
		fprintf(stderr, "\n  order_units: %s\n", err_msg());
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(p.hp_nr_rules, 1);
	CU_ASSERT_EQUAL(p.hp_rules[0].hr_class, 2);
	CU_ASSERT_EQUAL(p.hp_rules[0].hr_line, 2);
	CU_ASSERT_EQUAL(p.hp_classes[0].hc_size_min, 7);
	CU_ASSERT_EQUAL(p.hp_classes[0].hc_size_max, 7);
	CU_ASSERT_EQUAL(p.hp_classes[0].hc_age_min_ns, 5 * NS);
	CU_ASSERT_EQUAL(p.hp_classes[0].hc_age_max_ns, 7200 * NS);
	CU_ASSERT_EQUAL(p.hp_classes[1].hc_size_min, 3ull << 20);
	CU_ASSERT_EQUAL(p.hp_classes[1].hc_size_max, 1ull << 40);
	CU_ASSERT_STRING_EQUAL(p.hp_classes[2].hc_id_prefix, "");
}

static void check_defaults(const struct hsm_policy *p)
{
	CU_ASSERT_EQUAL(p->hp_interval_ns, 60 * NS);
	CU_ASSERT_EQUAL(p->hp_window_ns, 300 * NS);
	CU_ASSERT_EQUAL(p->hp_bytes_per_s, 0);
	CU_ASSERT_EQUAL(p->hp_ops_in_flight, 2);
}

static void test_defaults(void)
{
	static struct hsm_policy p;
	static const char text[] =
		"classes:\n"
		"  - name: x\n"
		"rules:\n"
		"  - class: x\n"
		"    action: demote\n"
		"    to: sas\n";
	const struct hsm_class *c = &p.hp_classes[0];

	CU_ASSERT_EQUAL(parse("", &p), 0);
	check_defaults(&p);
	CU_ASSERT_EQUAL(p.hp_nr_classes + p.hp_nr_rules + p.hp_nr_marks, 0);
	CU_ASSERT_EQUAL(parse("# nothing here\n", &p), 0);
	check_defaults(&p);
	CU_ASSERT_EQUAL(parse("rate: {}\nclasses: []\n", &p), 0);
	check_defaults(&p);
	CU_ASSERT_EQUAL(p.hp_nr_classes, 0);

	CU_ASSERT_EQUAL_FATAL(parse(text, &p), 0);
	check_defaults(&p);
	CU_ASSERT_EQUAL(p.hp_nr_classes, 1);
	CU_ASSERT_STRING_EQUAL(c->hc_name, "x");
	CU_ASSERT(!c->hc_container_set);
	CU_ASSERT_STRING_EQUAL(c->hc_id_prefix, "");
	CU_ASSERT_EQUAL(c->hc_size_min + c->hc_size_max, 0);
	CU_ASSERT_EQUAL(c->hc_age_min_ns + c->hc_age_max_ns, 0);
	CU_ASSERT_EQUAL(c->hc_heat_min + c->hc_heat_max, 0);
	CU_ASSERT(!c->hc_heat_max_set);
	CU_ASSERT_EQUAL(c->hc_tier, -1);
	CU_ASSERT_EQUAL(p.hp_nr_rules, 1);
	CU_ASSERT_EQUAL(p.hp_rules[0].hr_order, HSM_LRU);
	CU_ASSERT_EQUAL(p.hp_rules[0].hr_max_objects, 0);
	CU_ASSERT_EQUAL(p.hp_rules[0].hr_to, ST_TIER_SAS);
	CU_ASSERT_EQUAL(p.hp_rules[0].hr_line, 4);
}

/* -------------------------------------------------------------- bad */

/* A class and a rule of it: C(tier) then R(action, to). */
#define CLS(tier) "classes:\n  - name: k\n    tier: " tier "\n"
#define RULE(act, to) "rules:\n  - class: k\n    action: " act "\n" \
		      "    to: " to "\n"

static const struct {
	const char *bc_text;
	const char *bc_want;
} bad_cases[] = {
	/* syntax, keys, kinds */
	{"interval: 10s\nwindow: 5s\n  bad: x\n", "p.yaml:3: syntax: "},
	{"classes:\n  - name: [a\n", "p.yaml:3: syntax: "},
	{"interval: 10s\nintervl: 10s\n", "p.yaml:2: intervl: unknown key"},
	{"classes:\n  - name: hot\n    colour: red\n",
	 "p.yaml:3: classes[0].colour: unknown key (name, container,"},
	{"rate:\n  ops: 3\n", "p.yaml:2: rate.ops: unknown key"},
	{"rules: []\nwatermarks:\n  - { tier: sas, hi: 9 }\n",
	 "p.yaml:3: watermarks[0].hi: unknown key"},
	{"window: 5s\nwindow: 6s\n", "p.yaml:2: window: repeated key"},
	{"classes: hot\n",
	 "p.yaml:1: classes: expected a list, found a scalar"},
	{"\nrules:\n  class: x\n",
	 "p.yaml:3: rules: expected a list, found a mapping"},
	{"rate: 5\n", "p.yaml:1: rate: expected a mapping, found a scalar"},
	{"classes:\n  - hot\n",
	 "p.yaml:2: classes[0]: expected a mapping, found a scalar"},
	{"classes:\n  - name: [a]\n",
	 "p.yaml:2: classes[0].name: expected a scalar, found a list"},
	{"interval: {a: 1}\n",
	 "p.yaml:1: interval: expected a scalar, found a mapping"},
	{"- a\n- b\n", "p.yaml:1: policy: expected a mapping, found a list"},
	{"just text\n",
	 "p.yaml:1: policy: expected a mapping, found a scalar"},
	{"? [a]\n: b\n", "p.yaml:1: policy: expected a scalar, found a list"},
	{"interval: 10s\n---\ninterval: 20s\n",
	 "p.yaml:3: policy: a second YAML document"},
	{"classes:\n  - name: \"a\\0b\"\n",
	 "p.yaml:2: classes[0].name: contains a NUL byte"},
	/* sizes, durations, numbers, percentages */
	{"classes:\n  - name: a\n    size_min: 4XB\n",
	 "p.yaml:3: classes[0].size_min: \"4XB\" is not a size (B, KiB, MiB,"
	 " GiB, TiB)"},
	{"classes:\n  - name: a\n    size_max: 4K\n",
	 "p.yaml:3: classes[0].size_max: \"4K\" is not a size"},
	{"rate:\n  bytes_per_s: -1\n",
	 "p.yaml:2: rate.bytes_per_s: \"-1\" is not a size"},
	{"rate:\n  bytes_per_s: 20000000TiB\n",
	 "p.yaml:2: rate.bytes_per_s: \"20000000TiB\" is too large"},
	{"classes:\n  - name: a\n    heat_min: 99999999999999999999\n",
	 "p.yaml:3: classes[0].heat_min: \"99999999999999999999\" is too "
	 "large"},
	{"classes:\n  - name: a\n    heat_max: lots\n",
	 "p.yaml:3: classes[0].heat_max: \"lots\" is not a number"},
	{"window: 10y\n",
	 "p.yaml:1: window: \"10y\" is not a duration (s, m, h, d)"},
	{"window: 8d\n", "p.yaml:1: window: \"8d\" is out of range (1s..7d)"},
	{"interval: 0s\n",
	 "p.yaml:1: interval: \"0s\" is out of range (1s..1d)"},
	{"\ninterval: 25h\n",
	 "p.yaml:2: interval: \"25h\" is out of range (1s..1d)"},
	{"classes:\n  - name: a\n    age_max: 300000d\n",
	 "p.yaml:3: classes[0].age_max: \"300000d\" is too large"},
	{"rate:\n  ops_in_flight: 0\n",
	 "p.yaml:2: rate.ops_in_flight: \"0\" is out of range (1..64)"},
	{"rate:\n  ops_in_flight: 65\n",
	 "p.yaml:2: rate.ops_in_flight: \"65\" is out of range (1..64)"},
	{"rate:\n  ops_in_flight: 2.5\n",
	 "p.yaml:2: rate.ops_in_flight: \"2.5\" is not a number"},
	{CLS("sas") "rules:\n  - class: k\n    action: demote\n    to: smr\n"
	 "    max_objects: 4294967296\n",
	 "p.yaml:8: rules[0].max_objects: \"4294967296\" is out of range"},
	{"watermarks:\n  - { tier: flash, high: 101%, low: 5%, to: sas }\n",
	 "p.yaml:2: watermarks[0].high: \"101%\" is out of range (1%..100%)"},
	{"watermarks:\n  - { tier: flash, high: 50%, low: 0%, to: sas }\n",
	 "p.yaml:2: watermarks[0].low: \"0%\" is out of range (1%..100%)"},
	{"watermarks:\n  - { tier: flash, high: 5%%, low: 1, to: sas }\n",
	 "p.yaml:2: watermarks[0].high: \"5%%\" is not a percentage"},
	/* watermarks */
	{"watermarks:\n  - tier: flash\n    high: 85%\n    low: 85%\n"
	 "    to: sas\n",
	 "p.yaml:4: watermarks[0].low: 85% is not below high (85%)"},
	{"watermarks:\n  - tier: sas\n    high: 85%\n    low: 80%\n"
	 "    to: flash\n",
	 "p.yaml:5: watermarks[0].to: flash is not slower than sas"},
	{"watermarks:\n  - { tier: sas, high: 9%, low: 8%, to: sas }\n",
	 "p.yaml:2: watermarks[0].to: sas is not slower than sas"},
	{"watermarks:\n  - { tier: sas, high: 9%, low: 8% }\n",
	 "p.yaml:2: watermarks[0].to: missing"},
	{"watermarks:\n  - { tier: sas, high: 9%, low: 8%, to: smr }\n"
	 "  - { tier: smr, high: 7%, low: 6%, to: smr }\n",
	 "p.yaml:3: watermarks[1].to: smr is not slower than smr"},
	{"watermarks:\n  - { tier: ssd, high: 9%, low: 8%, to: smr }\n",
	 "p.yaml:2: watermarks[0].tier: \"ssd\" is not a tier"},
	/* tiers and moves */
	{"classes:\n  - name: hot\nrules:\n  - class: hot\n"
	 "    action: promote\n    to: fash\n",
	 "p.yaml:6: rules[0].to: \"fash\" is not a tier (nvram, flash, sas, "
	 "smr)"},
	{"classes:\n  - name: a\n    tier: tape\n",
	 "p.yaml:3: classes[0].tier: \"tape\" is not a tier"},
	{CLS("flash") RULE("promote", "sas"),
	 "p.yaml:7: rules[0].to: promote from flash to sas: not a faster "
	 "tier"},
	{CLS("sas") RULE("promote", "sas"),
	 "p.yaml:7: rules[0].to: promote from sas to sas: not a faster tier"},
	{"classes:\n  - name: k\n" RULE("promote", "smr"),
	 "p.yaml:6: rules[0].to: promote to smr: no tier is slower"},
	{CLS("sas") RULE("demote", "flash"),
	 "p.yaml:7: rules[0].to: demote from sas to flash: not a slower tier"},
	{CLS("flash") RULE("demote", "flash"),
	 "p.yaml:7: rules[0].to: demote from flash to flash: not a slower "
	 "tier"},
	{"classes:\n  - name: k\n" RULE("demote", "nvram"),
	 "p.yaml:6: rules[0].to: demote to nvram: no tier is faster"},
	{CLS("flash") RULE("archive", "sas"),
	 "p.yaml:7: rules[0].to: archive to sas: archive goes to smr"},
	{CLS("smr") "rules:\n  - { class: k, action: archive }\n",
	 "p.yaml:5: rules[0].to: archive from smr to smr: not a slower tier"},
	{CLS("sas") RULE("move", "smr"),
	 "p.yaml:6: rules[0].action: \"move\" is not an action (promote, "
	 "demote, archive)"},
	{CLS("sas") RULE("demote", "smr") "    order: fifo\n",
	 "p.yaml:8: rules[0].order: \"fifo\" is not an order (lru, mru)"},
	{CLS("sas") "rules:\n  - { class: k, action: demote }\n",
	 "p.yaml:5: rules[0].to: missing"},
	{CLS("sas") "rules:\n  - { class: k, to: smr }\n",
	 "p.yaml:5: rules[0].action: missing"},
	{CLS("sas") "rules:\n  - { action: demote, to: smr }\n",
	 "p.yaml:5: rules[0].class: missing"},
	/* classes: names, ids, ranges */
	{"classes:\n  - name: hot\nrules:\n  - class: hot\n"
	 "    action: demote\n    to: smr\n"
	 "  - class: hott\n    action: demote\n    to: smr\n",
	 "p.yaml:7: rules[1].class: no class named \"hott\""},
	{"classes:\n  - name: hot\n  - name: cold\n  - name: hot\n",
	 "p.yaml:4: classes[2].name: \"hot\" is already the name of "
	 "classes[0]"},
	{"classes:\n  - name: a b\n",
	 "p.yaml:2: classes[0].name: \"a b\" is not a name ([A-Za-z0-9_.-], "
	 "1..31 chars)"},
	{"classes:\n  - name: abcdefghijklmnopqrstuvwxyz012345\n",
	 "p.yaml:2: classes[0].name: \"abcdefghijklmnopqrstuvwxyz012345\" is "
	 "not a name"},
	{"classes:\n  - name: \"\"\n",
	 "p.yaml:2: classes[0].name: \"\" is not a name"},
	{"classes:\n  - size_min: 1\n", "p.yaml:2: classes[0].name: missing"},
	{"classes:\n  - name: a\n    id: "
	 "\"0123456789abcdef:0123456789abcdef01234567\"\n",
	 "p.yaml:3: classes[0].id: \"0123456789abcdef:0123456789abcdef"
	 "0123456...\" is longer than 40 characters"},
	{"classes:\n  - name: a\n    id: \"7:1:\"\n",
	 "p.yaml:3: classes[0].id: \"7:1:\" is not an id prefix"},
	{"classes:\n  - name: a\n    id: xyz\n",
	 "p.yaml:3: classes[0].id: \"xyz\" is not an id prefix"},
	{"classes:\n  - name: a\n    container: zz\n",
	 "p.yaml:3: classes[0].container: \"zz\" is not an id (HI:LO in hex, "
	 "or @name)"},
	{"classes:\n  - name: a\n    size_min: 2KiB\n    size_max: 1KiB\n",
	 "p.yaml:4: classes[0].size_max: \"1KiB\" is below size_min"},
	{"classes:\n  - name: a\n    age_min: 2h\n    age_max: 1h\n",
	 "p.yaml:4: classes[0].age_max: \"1h\" is below age_min"},
	{"classes:\n  - name: a\n    heat_min: 2\n    heat_max: 0\n",
	 "p.yaml:4: classes[0].heat_max: \"0\" is below heat_min"},
};

static void test_bad(void)
{
	size_t nr = sizeof bad_cases / sizeof bad_cases[0], refused = 0;

	for (size_t i = 0; i < nr; i++)
		refused += bad(bad_cases[i].bc_text, bad_cases[i].bc_want);
	CU_ASSERT_EQUAL(refused, nr);
}

/* One more class, rule or watermark than the limit; the limit itself
 * parses. */
static void test_limits(void)
{
	static struct hsm_policy p;
	static char text[8192];
	static const char *const tiers[] = {"nvram", "flash", "sas"};
	char want[64];
	size_t off;
	uint32_t i;

	off = (size_t)snprintf(text, sizeof text, "classes:\n");
	for (i = 0; i < HSM_CLASSES_MAX; i++)
		off += (size_t)snprintf(text + off, sizeof text - off,
					"  - name: c%u\n", i);
	CU_ASSERT_EQUAL(parse(text, &p), 0);
	CU_ASSERT_EQUAL(p.hp_nr_classes, HSM_CLASSES_MAX);
	snprintf(text + off, sizeof text - off, "  - name: c%u\n", i);
	snprintf(want, sizeof want, "p.yaml:%u: classes: more than %u",
		 HSM_CLASSES_MAX + 2, HSM_CLASSES_MAX);
	bad(text, want);

	off = (size_t)snprintf(text, sizeof text, "classes: [{name: a}]\n"
			       "rules:\n");
	for (i = 0; i < HSM_RULES_MAX; i++)
		off += (size_t)snprintf(text + off, sizeof text - off,
					"  - { class: a, action: archive }\n");
	CU_ASSERT_EQUAL(parse(text, &p), 0);
	CU_ASSERT_EQUAL(p.hp_nr_rules, HSM_RULES_MAX);
	CU_ASSERT_EQUAL(p.hp_rules[HSM_RULES_MAX - 1].hr_line,
			HSM_RULES_MAX + 2);
	snprintf(text + off, sizeof text - off,
		 "  - { class: a, action: archive }\n");
	snprintf(want, sizeof want, "p.yaml:%u: rules: more than %u",
		 HSM_RULES_MAX + 3, HSM_RULES_MAX);
	bad(text, want);

	off = (size_t)snprintf(text, sizeof text, "watermarks:\n");
	for (i = 0; i < HSM_MARKS_MAX; i++)
		off += (size_t)snprintf(text + off, sizeof text - off,
					"  - { tier: %s, high: %u%%, low: 8%%,"
					" to: smr }\n", tiers[i % 3], 9 + i);
	CU_ASSERT_EQUAL(parse(text, &p), 0);
	CU_ASSERT_EQUAL(p.hp_nr_marks, HSM_MARKS_MAX);
	CU_ASSERT_EQUAL(p.hp_marks[HSM_MARKS_MAX - 1].hm_line,
			HSM_MARKS_MAX + 1);
	CU_ASSERT_EQUAL(p.hp_marks[HSM_MARKS_MAX - 1].hm_high_pct,
			8 + HSM_MARKS_MAX);
	snprintf(text + off, sizeof text - off,
		 "  - { tier: flash, high: 9%%, low: 8%%, to: smr }\n");
	snprintf(want, sizeof want, "p.yaml:%u: watermarks: more than %u",
		 HSM_MARKS_MAX + 2, HSM_MARKS_MAX);
	bad(text, want);
}

/* ------------------------------------------------------ files, tiers */

static void test_load(void)
{
	static struct hsm_policy p;
	char path[600], want[700], line[64];
	FILE *f;
	int rc;

	snprintf(path, sizeof path, "%s/none.yaml", pbase);
	memset(&p, 0xa5, sizeof p);
	err_clear();
	CU_ASSERT_EQUAL(hsm_policy_load(path, &p), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), path));
	CU_ASSERT(all_zero(&p, sizeof p));

	snprintf(path, sizeof path, "%s/full.yaml", pbase);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(full_policy, f);
	fclose(f);
	rc = hsm_policy_load(path, &p);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(p.hp_nr_rules, 3);
	CU_ASSERT_EQUAL(p.hp_marks[1].hm_line, 39);

	snprintf(path, sizeof path, "%s/bad.yaml", pbase);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("interval: 10s\nwindow: 0s\n", f);
	fclose(f);
	memset(&p, 0xa5, sizeof p);
	CU_ASSERT_EQUAL(hsm_policy_load(path, &p), -EINVAL);
	snprintf(want, sizeof want, "%s:2: window:", path);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), want));
	CU_ASSERT(all_zero(&p, sizeof p));

	/* 1 MiB of comment lines, then one byte more */
	memset(line, '.', sizeof line);
	line[0] = '#';
	line[sizeof line - 1] = '\n';
	snprintf(path, sizeof path, "%s/big.yaml", pbase);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	for (unsigned i = 0; i < (1u << 20) / sizeof line; i++)
		fwrite(line, 1, sizeof line, f);
	CU_ASSERT_EQUAL(ftell(f), 1 << 20);
	fclose(f);
	rc = hsm_policy_load(path, &p);
	CU_ASSERT_EQUAL(rc, 0);
	f = fopen(path, "a");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputc('\n', f);
	fclose(f);
	memset(&p, 0xa5, sizeof p);
	CU_ASSERT_EQUAL(hsm_policy_load(path, &p), -EFBIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), path));
	CU_ASSERT(all_zero(&p, sizeof p));
}

static void test_tiers(void)
{
	static const char *const names[] = {"nvram", "flash", "sas", "smr"};

	CU_ASSERT_EQUAL(ST_TIER_NR, 4);
	for (uint32_t t = 0; t < ST_TIER_NR; t++) {
		CU_ASSERT_STRING_EQUAL(hsm_tier_name(t), names[t]);
		CU_ASSERT_EQUAL(hsm_tier_parse(names[t]), (int)t);
		CU_ASSERT_EQUAL(hsm_tier_parse(hsm_tier_name(t)), (int)t);
	}
	CU_ASSERT_EQUAL(hsm_tier_parse("smr"), ST_TIER_SMR);
	CU_ASSERT_EQUAL(hsm_tier_parse("nvram"), ST_TIER_NVRAM);
	CU_ASSERT_STRING_EQUAL(hsm_tier_name(ST_TIER_NR), "?");
	CU_ASSERT_STRING_EQUAL(hsm_tier_name(UINT32_MAX), "?");
	CU_ASSERT_EQUAL(hsm_tier_parse("fash"), -1);
	CU_ASSERT_EQUAL(hsm_tier_parse("Flash"), -1);
	CU_ASSERT_EQUAL(hsm_tier_parse(""), -1);
	CU_ASSERT_EQUAL(hsm_tier_parse(NULL), -1);
}

/* ---------------------------------------------------------------- suite */

static int hp_suite_init(void)
{
	const char *d = ut_tmpdir("hsm_policy");

	if (d == NULL)
		return -1;
	snprintf(pbase, sizeof pbase, "%s", d);
	return 0;
}

static int hp_suite_fini(void)
{
	return 0;
}

int hsm_policy_ut_add(void)
{
	CU_pSuite s = CU_add_suite("hsm_policy", hp_suite_init,
				   hp_suite_fini);

	if (s == NULL || !CU_add_test(s, "full", test_full) ||
	    !CU_add_test(s, "order_units", test_order_units) ||
	    !CU_add_test(s, "defaults", test_defaults) ||
	    !CU_add_test(s, "bad", test_bad) ||
	    !CU_add_test(s, "limits", test_limits) ||
	    !CU_add_test(s, "load", test_load) ||
	    !CU_add_test(s, "tiers", test_tiers))
		return -1;
	return 0;
}
