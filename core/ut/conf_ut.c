/*
 * conf_ut.c — unit tests of the store configuration (core/conf.c): the
 * documented example, every rule with the message it must give, numbers
 * with units, the emit/parse round trip, the built-in default, loading
 * files, and a seeded fuzz loop over mutations of the example.
 */
#include <CUnit/CUnit.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/conf.h"
#include "core/errors.h"
#include "core/limits.h"
#include "tests/ut.h"
#include "tiers/tier.h"

int conf_ut_add(void);

/* The example of docs/configuration.md. */
static const char conf_example[] =
	"# Strata store configuration\n"
	"device_size: 256MiB\n"
	"devices:\n"
	"  - name: nv0\n"
	"    tier: nvram\n"
	"    size: 128MiB\n"
	"    path: /dev/shm/strata-nv0.dev\n"
	"  - { name: f0, tier: flash }\n"
	"  - { name: f1, tier: flash }\n"
	"  - { name: f2, tier: flash }\n"
	"  - { name: f3, tier: flash }\n"
	"  - { name: f4, tier: flash }\n"
	"  - { name: f5, tier: flash }\n"
	"  - { name: f6, tier: flash, size: 512MiB }\n"
	"  - { tier: sas }\n"
	"  - { tier: sas, size: 1GiB }\n"
	"  - name: s0\n"
	"    tier: smr\n"
	"    size: 1GiB\n"
	"    zone_size: 16MiB\n"
	"pools:\n"
	"  - name: fast\n"
	"    devices: [f0, f1, f2, f3, f4, f5, f6]\n"
	"layouts:\n"
	"  default: { type: pdclust, pool: fast, data: 4, parity: 2, spare: 1, "
	"unit: 64KiB }\n"
	"  containers:\n"
	"    - container: \"@results\"\n"
	"      layout: { type: mirror, pool: fast, copies: 3, spare: 1, "
	"unit: 1MiB }\n"
	"    - container: \"0:1\"\n"
	"      layout: { type: plain, tier: sas }\n"
	"device_model:\n"
	"  flash: { on: true, read_latency: 80us, write_latency: 20us, "
	"read_bandwidth: 2GB/s, write_bandwidth: 1GB/s }\n"
	"  sas: { on: true }\n";

static int conf_parse_str(struct conf *c, const char *text)
{
	return conf_parse(c, text, strlen(text));
}

static bool layout_eq(const struct conf_layout *a, const struct conf_layout *b)
{
	return a->cl_type == b->cl_type && a->cl_tier == b->cl_tier &&
	       a->cl_pool == b->cl_pool && a->cl_n == b->cl_n &&
	       a->cl_k == b->cl_k && a->cl_s == b->cl_s &&
	       a->cl_unit_shift == b->cl_unit_shift;
}

static bool model_eq(const struct conf_model *a, const struct conf_model *b)
{
	return a->cm_on == b->cm_on && a->cm_read_lat_ns == b->cm_read_lat_ns &&
	       a->cm_write_lat_ns == b->cm_write_lat_ns &&
	       a->cm_sync_lat_ns == b->cm_sync_lat_ns &&
	       a->cm_read_bw == b->cm_read_bw && a->cm_write_bw == b->cm_write_bw;
}

/* Field-by-field equality of two configurations. */
static bool conf_eq(const struct conf *a, const struct conf *b)
{
	if (a->c_nr_devs != b->c_nr_devs || a->c_nr_pools != b->c_nr_pools ||
	    a->c_nr_conts != b->c_nr_conts || a->c_dev_size != b->c_dev_size ||
	    a->c_dev_fill != b->c_dev_fill ||
	    !layout_eq(&a->c_default_layout, &b->c_default_layout))
		return false;
	for (uint32_t i = 0; i < a->c_nr_devs; i++) {
		const struct conf_dev *x = &a->c_devs[i], *y = &b->c_devs[i];

		if (strcmp(x->cd_name, y->cd_name) != 0 ||
		    strcmp(x->cd_path, y->cd_path) != 0 ||
		    x->cd_tier != y->cd_tier || x->cd_size != y->cd_size ||
		    x->cd_zone_size != y->cd_zone_size)
			return false;
	}
	for (uint32_t i = 0; i < a->c_nr_pools; i++) {
		const struct conf_pool *x = &a->c_pools[i], *y = &b->c_pools[i];

		if (strcmp(x->cp_name, y->cp_name) != 0 || x->cp_nr != y->cp_nr ||
		    memcmp(x->cp_devs, y->cp_devs,
			   x->cp_nr * sizeof *x->cp_devs) != 0)
			return false;
	}
	for (uint32_t i = 0; i < a->c_nr_conts; i++) {
		const struct conf_container *x = &a->c_conts[i];
		const struct conf_container *y = &b->c_conts[i];

		if (st_id_cmp(&x->cc_id, &y->cc_id) != 0 ||
		    strcmp(x->cc_name, y->cc_name) != 0 ||
		    !layout_eq(&x->cc_layout, &y->cc_layout))
			return false;
	}
	for (uint32_t t = 0; t < ST_TIER_NR; t++)
		if (!model_eq(&a->c_model[t], &b->c_model[t]))
			return false;
	return true;
}

/* Emit c, parse the text back, and check it is equal to c. */
static bool conf_round_trip(const struct conf *c)
{
	struct conf back;
	char *text = NULL;
	bool eq;

	if (conf_emit(c, &text) != 0)
		return false;
	if (conf_parse_str(&back, text) != 0) {
		fprintf(stderr, "\nre-parse failed: %s\n%s\n", err_msg(), text);
		free(text);
		return false;
	}
	eq = conf_eq(c, &back);
	if (!eq)
		fprintf(stderr, "\nround trip differs:\n%s\n", text);
	conf_fini(&back);
	free(text);
	return eq;
}

static void check_pool(const struct conf *c, const char *name,
		       const uint32_t *devs, uint32_t nr)
{
	int i = conf_pool_find(c, name);

	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(c->c_pools[i].cp_nr, nr);
	if (c->c_pools[i].cp_nr == nr)
		CU_ASSERT_EQUAL(memcmp(c->c_pools[i].cp_devs, devs,
				       nr * sizeof *devs), 0);
}

/* The documented example parses to exactly what the documentation says. */
static void test_example(void)
{
	static const char *const names[] = {
		"nv0", "f0", "f1", "f2", "f3", "f4", "f5", "f6",
		"sas0", "sas1", "s0",
	};
	static const uint32_t fast[] = {1, 2, 3, 4, 5, 6, 7};
	static const uint32_t sas[] = {8, 9};
	static const uint32_t nv[] = {0}, smr[] = {10};
	struct conf c;
	struct st_id id;
	const struct conf_layout *l;

	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&c, conf_example), 0);
	CU_ASSERT_EQUAL(c.c_dev_size, 256ull << 20);
	CU_ASSERT_EQUAL_FATAL(c.c_nr_devs, 11);
	for (uint32_t i = 0; i < 11; i++) {
		CU_ASSERT_STRING_EQUAL(c.c_devs[i].cd_name, names[i]);
		CU_ASSERT_EQUAL(conf_dev_find(&c, names[i]), (int)i);
	}
	CU_ASSERT_EQUAL(c.c_devs[0].cd_tier, ST_TIER_NVRAM);
	CU_ASSERT_EQUAL(c.c_devs[0].cd_size, 128ull << 20);
	CU_ASSERT_STRING_EQUAL(c.c_devs[0].cd_path, "/dev/shm/strata-nv0.dev");
	CU_ASSERT_EQUAL(c.c_devs[1].cd_tier, ST_TIER_FLASH);
	CU_ASSERT_EQUAL(c.c_devs[1].cd_size, 256ull << 20);
	CU_ASSERT_STRING_EQUAL(c.c_devs[1].cd_path, "");
	CU_ASSERT_EQUAL(c.c_devs[7].cd_size, 512ull << 20);
	CU_ASSERT_EQUAL(c.c_devs[8].cd_tier, ST_TIER_SAS);
	CU_ASSERT_EQUAL(c.c_devs[8].cd_size, 256ull << 20);
	CU_ASSERT_EQUAL(c.c_devs[9].cd_size, 1ull << 30);
	CU_ASSERT_EQUAL(c.c_devs[10].cd_tier, ST_TIER_SMR);
	CU_ASSERT_EQUAL(c.c_devs[10].cd_zone_size, 16ull << 20);
	CU_ASSERT_EQUAL(c.c_devs[9].cd_zone_size, 0);
	CU_ASSERT_EQUAL(conf_dev_find(&c, "nope"), -ENOENT);

	/* Explicit pools first, then the implicit ones in tier order. */
	CU_ASSERT_EQUAL_FATAL(c.c_nr_pools, 5);
	CU_ASSERT_EQUAL(conf_pool_find(&c, "fast"), 0);
	CU_ASSERT_EQUAL(conf_pool_find(&c, "nvram"), 1);
	CU_ASSERT_EQUAL(conf_pool_find(&c, "flash"), 2);
	CU_ASSERT_EQUAL(conf_pool_find(&c, "sas"), 3);
	CU_ASSERT_EQUAL(conf_pool_find(&c, "smr"), 4);
	CU_ASSERT_EQUAL(conf_pool_find(&c, "slow"), -ENOENT);
	check_pool(&c, "fast", fast, 7);
	check_pool(&c, "flash", fast, 7);
	check_pool(&c, "nvram", nv, 1);
	check_pool(&c, "sas", sas, 2);
	check_pool(&c, "smr", smr, 1);

	l = &c.c_default_layout;
	CU_ASSERT_EQUAL(l->cl_type, ST_LAYOUT_PDCLUST);
	CU_ASSERT_EQUAL(l->cl_pool, 0);
	CU_ASSERT_EQUAL(l->cl_n, 4);
	CU_ASSERT_EQUAL(l->cl_k, 2);
	CU_ASSERT_EQUAL(l->cl_s, 1);
	CU_ASSERT_EQUAL(l->cl_unit_shift, 16);

	CU_ASSERT_EQUAL_FATAL(c.c_nr_conts, 2);
	CU_ASSERT_EQUAL(st_id_parse("@results", &id), 0);
	CU_ASSERT_EQUAL(st_id_cmp(&c.c_conts[0].cc_id, &id), 0);
	CU_ASSERT_STRING_EQUAL(c.c_conts[0].cc_name, "@results");
	l = &c.c_conts[0].cc_layout;
	CU_ASSERT_EQUAL(l->cl_type, ST_LAYOUT_MIRROR);
	CU_ASSERT_EQUAL(l->cl_pool, 0);
	CU_ASSERT_EQUAL(l->cl_n, 3);
	CU_ASSERT_EQUAL(l->cl_k, 0);
	CU_ASSERT_EQUAL(l->cl_s, 1);
	CU_ASSERT_EQUAL(l->cl_unit_shift, 20);
	CU_ASSERT_EQUAL(c.c_conts[1].cc_id.si_hi, 0);
	CU_ASSERT_EQUAL(c.c_conts[1].cc_id.si_lo, 1);
	l = &c.c_conts[1].cc_layout;
	CU_ASSERT_EQUAL(l->cl_type, ST_LAYOUT_PLAIN);
	CU_ASSERT_EQUAL(l->cl_tier, ST_TIER_SAS);
	CU_ASSERT_EQUAL(l->cl_n + l->cl_k + l->cl_s + l->cl_unit_shift, 0);

	CU_ASSERT_TRUE(c.c_model[ST_TIER_FLASH].cm_on);
	CU_ASSERT_EQUAL(c.c_model[ST_TIER_FLASH].cm_read_lat_ns, 80000);
	CU_ASSERT_EQUAL(c.c_model[ST_TIER_FLASH].cm_write_lat_ns, 20000);
	CU_ASSERT_EQUAL(c.c_model[ST_TIER_FLASH].cm_sync_lat_ns, 0);
	CU_ASSERT_EQUAL(c.c_model[ST_TIER_FLASH].cm_read_bw, 2000000000);
	CU_ASSERT_EQUAL(c.c_model[ST_TIER_FLASH].cm_write_bw, 1000000000);
	CU_ASSERT_TRUE(c.c_model[ST_TIER_SAS].cm_on);
	CU_ASSERT_EQUAL(c.c_model[ST_TIER_SAS].cm_read_lat_ns, 0);
	CU_ASSERT_FALSE(c.c_model[ST_TIER_NVRAM].cm_on);
	CU_ASSERT_FALSE(c.c_model[ST_TIER_SMR].cm_on);
	conf_fini(&c);
	CU_ASSERT_EQUAL(c.c_nr_devs, 0);
	CU_ASSERT_PTR_NULL(c.c_devs);
	conf_fini(&c); /* twice is harmless */
}

/* A small file whose defaults fill in: names, pools, layout, sizes. */
static void test_defaults_filled(void)
{
	struct conf c;

	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&c,
		"devices:\n"
		"  - {name: flash0, tier: sas}\n"
		"  - {tier: flash}\n"
		"  - {tier: flash}\n"
		"pools:\n"
		"  - {name: flash, devices: [flash2]}\n"), 0);
	/* flash0 is taken by the sas device: the first flash one bumps. */
	CU_ASSERT_STRING_EQUAL(c.c_devs[1].cd_name, "flash1");
	CU_ASSERT_STRING_EQUAL(c.c_devs[2].cd_name, "flash2");
	CU_ASSERT_EQUAL(c.c_devs[1].cd_size, 0);
	CU_ASSERT_EQUAL(c.c_dev_size, 0);
	/* The explicit "flash" pool replaces the implicit one. */
	CU_ASSERT_EQUAL_FATAL(c.c_nr_pools, 2);
	CU_ASSERT_STRING_EQUAL(c.c_pools[0].cp_name, "flash");
	CU_ASSERT_EQUAL(c.c_pools[0].cp_nr, 1);
	CU_ASSERT_EQUAL(c.c_pools[0].cp_devs[0], 2);
	CU_ASSERT_STRING_EQUAL(c.c_pools[1].cp_name, "sas");
	CU_ASSERT_EQUAL(c.c_default_layout.cl_type, ST_LAYOUT_PLAIN);
	CU_ASSERT_EQUAL(c.c_default_layout.cl_tier, ST_TIER_FLASH);
	CU_ASSERT_EQUAL(c.c_nr_conts, 0);
	CU_ASSERT_TRUE(conf_round_trip(&c));
	conf_fini(&c);

	/* pdclust and mirror defaults: 4+2, 2 copies, no spare, unit 0. */
	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&c,
		"devices: [{tier: flash}, {tier: flash}, {tier: flash},\n"
		"          {tier: flash}, {tier: flash}, {tier: flash}]\n"
		"layouts:\n"
		"  default: {type: pdclust, pool: flash}\n"
		"  containers:\n"
		"    - {container: '@m', layout: {type: mirror, pool: flash}}\n"
		"    - {container: '0xa:0x2', layout: {type: plain}}\n"), 0);
	CU_ASSERT_EQUAL(c.c_default_layout.cl_n, 4);
	CU_ASSERT_EQUAL(c.c_default_layout.cl_k, 2);
	CU_ASSERT_EQUAL(c.c_default_layout.cl_s, 0);
	CU_ASSERT_EQUAL(c.c_default_layout.cl_unit_shift, 0);
	CU_ASSERT_EQUAL(c.c_conts[0].cc_layout.cl_n, 2);
	CU_ASSERT_EQUAL(c.c_conts[0].cc_layout.cl_k, 0);
	CU_ASSERT_EQUAL(c.c_conts[1].cc_layout.cl_tier, ST_TIER_FLASH);
	CU_ASSERT_EQUAL(c.c_conts[1].cc_id.si_hi, 0xa);
	CU_ASSERT_EQUAL(c.c_conts[1].cc_id.si_lo, 2);
	CU_ASSERT_TRUE(conf_round_trip(&c));
	conf_fini(&c);
}

/* One refused text: the line, a key (path) and a word the message names. */
struct bad_case {
	const char *bc_text;
	unsigned bc_line; /* 0: not checked */
	const char *bc_key;
	const char *bc_what;
};

#define DEVS                                                               \
	"devices:\n"                      /* 1 */                           \
	"  - {name: f0, tier: flash}\n"   /* 2 */                           \
	"  - {name: f1, tier: flash}\n"   /* 3 */                           \
	"  - {name: f2, tier: flash}\n"   /* 4 */                           \
	"  - {name: d0, tier: sas}\n"     /* 5 */
#define MODEL(kv) DEVS "device_model:\n  flash: {" kv "}\n"
#define DEFAULT(l) DEVS "layouts:\n  default: {" l "}\n"

static const struct bad_case bad_cases[] = {
	/* unknown keys, at every level */
	{"colour: red\n" DEVS, 1, "top level", "unknown key \"colour\""},
	{"devices:\n  - {name: a, tier: flash, colour: red}\n", 2,
	 "devices[0]", "\"colour\""},
	{DEVS "pools:\n  - {name: p, devices: [f0], colour: red}\n", 7,
	 "pools[0]", "\"colour\""},
	{DEFAULT("type: plain, tire: flash"), 7, "layouts.default", "\"tire\""},
	{DEVS "layouts:\n  fallback: {type: plain}\n", 7, "layouts",
	 "\"fallback\""},
	{DEVS "layouts:\n  containers:\n    - {container: '@x', colour: red, "
	 "layout: {type: plain}}\n", 8, "layouts.containers[0]", "\"colour\""},
	{MODEL("latency: 5us"), 7, "device_model.flash", "\"latency\""},
	{DEVS "device_model:\n  tape: {on: true}\n", 7, "device_model",
	 "\"tape\""},
	{DEVS "devices: []\n", 6, "top level", "\"devices\" given twice"},
	{"devices:\n  - {tier: flash, tier: sas}\n", 2, "devices[0]",
	 "\"tier\" given twice"},
	/* devices */
	{DEVS "  - {name: f1, tier: sas}\n", 6, "devices[4]",
	 "\"f1\" already used by devices[1]"},
	{"devices:\n  - {name: t0, tier: tape}\n", 2, "devices[0].tier",
	 "\"tape\""},
	{"devices:\n  - {name: t0, tier: FLASH}\n", 2, "devices[0].tier",
	 "\"FLASH\""},
	{"devices:\n  - {name: t0}\n", 2, "devices[0]", "\"tier\" missing"},
	{"devices:\n  - {name: 'a b', tier: flash}\n", 2, "devices[0].name",
	 "\"a b\""},
	{"devices:\n  - {name: .hidden, tier: flash}\n", 2, "devices[0].name",
	 "\".hidden\""},
	{"devices:\n  - {name: abcdefghijklmnopqrstuvwxyz0123456, tier: flash}"
	 "\n", 2, "devices[0].name", "longer than 31"},
	{"devices:\n  - {name: \"a\\0b\", tier: flash}\n", 2, "devices[0].name",
	 "NUL"},
	{"devices:\n  - {name: '', tier: flash}\n", 2, "devices[0].name",
	 "empty value"},
	{"devices:\n  - {name: [a], tier: flash}\n", 2, "devices[0].name",
	 "found a list"},
	{"devices:\n  - {[x]: 1}\n", 2, "devices[0]", "a key must be a name"},
	{"devices: []\n", 1, "devices", "0 devices"},
	{"devices: {a: 1}\n", 1, "devices", "expected a list, found a mapping"},
	{"devices:\n  - flash\n", 2, "devices[0]", "expected a mapping"},
	{"- a\n", 1, "top level", "expected a mapping, found a list"},
	{"", 1, "top level", "\"devices\""},
	{"# only a comment\n", 1, "top level", "\"devices\""},
	{"pools: []\n", 1, "top level", "\"devices\" missing"},
	/* sizes */
	{"devices:\n  - {tier: flash, size: 12XB}\n", 2, "devices[0].size",
	 "\"12XB\": unknown unit"},
	{"devices:\n  - {tier: flash, size: 512KiB}\n", 2, "devices[0].size",
	 "\"512KiB\""},
	{"devices:\n  - {tier: flash, size: 17TiB}\n", 2, "devices[0].size",
	 "\"17TiB\""},
	{"devices:\n  - {tier: flash, size: 1048577}\n", 2, "devices[0].size",
	 "multiple of 512"},
	{"devices:\n  - {tier: flash, size: -1MiB}\n", 2, "devices[0].size",
	 "expected a number"},
	{"device_size: 99999999999999999999\n" DEVS, 1, "device_size",
	 "too large"},
	{"device_size: 0\n" DEVS, 1, "device_size", "\"0\""},
	{"device_fill: zeros\n" DEVS, 1, "device_fill",
	 "\"zeros\": expected zero or reserve"},
	{DEVS "device_fill: Reserve\n", 6, "device_fill", "\"Reserve\""},
	{DEVS "device_fill: 1\n", 6, "device_fill", "\"1\""},
	{DEVS "device_fill: [reserve]\n", 6, "device_fill", ""},
	/* zones */
	{"devices:\n  - {tier: flash, zone_size: 16MiB}\n", 2,
	 "devices[0].zone_size", "only smr"},
	{"devices:\n  - {tier: flash}\n  - {tier: smr, zone_size: 3MiB}\n", 3,
	 "devices[1].zone_size", "\"3MiB\""},
	{"devices:\n  - {tier: flash}\n  - {tier: smr, zone_size: 512KiB}\n",
	 3, "devices[1].zone_size", "\"512KiB\""},
	{"devices:\n  - {tier: flash}\n  - {tier: smr, size: 2MiB, "
	 "zone_size: 4MiB}\n", 3, "devices[1].zone_size", "larger"},
	/* pools */
	{DEVS "pools:\n  - {name: p, devices: [f0, f9]}\n", 7,
	 "pools[0].devices", "\"f9\""},
	{DEVS "pools:\n  - {name: p, devices: [f0, f1, f0]}\n", 7,
	 "pools[0].devices", "\"f0\" listed twice"},
	{DEVS "pools:\n  - {name: p, devices: [f0]}\n"
	 "  - {name: p, devices: [f1]}\n", 8, "pools[1]", "\"p\" used twice"},
	{DEVS "pools:\n  - {name: p}\n", 7, "pools[0]", "\"devices\" missing"},
	{DEVS "pools:\n  - {devices: [f0]}\n", 7, "pools[0]", "\"name\""},
	{DEVS "pools:\n  - {name: p, devices: []}\n", 7, "pools[0].devices",
	 "0 devices"},
	/* layouts */
	{DEFAULT("type: pdclust, pool: nope"), 7, "layouts.default.pool",
	 "\"nope\""},
	{DEFAULT("type: pdclust"), 7, "layouts.default", "\"pool\" missing"},
	{DEFAULT("pool: flash"), 7, "layouts.default", "\"type\" missing"},
	{DEFAULT("type: raid5"), 7, "layouts.default.type", "\"raid5\""},
	{DEFAULT("type: pdclust, pool: flash, data: 0, parity: 1"), 7,
	 "layouts.default.data", "at least 1"},
	{DEFAULT("type: pdclust, pool: flash, data: 1, parity: -1"), 7,
	 "layouts.default.parity", "\"-1\""},
	{DEFAULT("type: pdclust, pool: flash, data: 1, spare: -1"), 7,
	 "layouts.default.spare", "\"-1\""},
	{DEFAULT("type: pdclust, pool: flash, data: 33"), 7,
	 "layouts.default.data", "\"33\""},
	{DEFAULT("type: pdclust, pool: flash, data: 2.0"), 7,
	 "layouts.default.data", "\"2.0\""},
	{DEFAULT("type: pdclust, pool: flash, data: 2, parity: 1, spare: 1"),
	 7, "layouts.default", "pool \"flash\" has 3 devices"},
	{DEFAULT("type: pdclust, pool: flash, data: 1, parity: 1, "
		 "unit: 48KiB"), 7, "layouts.default.unit", "\"48KiB\""},
	{DEFAULT("type: pdclust, pool: flash, data: 1, parity: 1, "
		 "unit: 2KiB"), 7, "layouts.default.unit", "\"2KiB\""},
	{DEFAULT("type: pdclust, pool: flash, data: 1, parity: 1, "
		 "unit: 32MiB"), 7, "layouts.default.unit", "\"32MiB\""},
	{DEFAULT("type: pdclust, pool: flash, data: 1, copies: 2"), 7,
	 "layouts.default", "\"copies\" does not apply"},
	{DEFAULT("type: mirror, pool: flash, copies: 1"), 7,
	 "layouts.default.copies", "at least 2"},
	{DEFAULT("type: mirror, pool: flash, copies: 3, spare: 1"), 7,
	 "layouts.default", "pool \"flash\" has 3 devices"},
	{DEFAULT("type: mirror, pool: flash, parity: 1"), 7,
	 "layouts.default", "\"parity\" does not apply"},
	{DEFAULT("type: plain, pool: flash"), 7, "layouts.default",
	 "\"pool\" does not apply"},
	{DEFAULT("type: plain, tier: smr"), 7, "layouts.default.tier",
	 "tier smr, which has no devices"},
	{"devices:\n  - {tier: sas}\n", 1, "layouts.default",
	 "plain on flash"},
	{DEVS "layouts:\n  containers:\n    - {container: zz, layout: "
	 "{type: plain}}\n", 8, "layouts.containers[0].container", "\"zz\""},
	{DEVS "layouts:\n  containers:\n    - {container: '@', layout: "
	 "{type: plain}}\n", 8, "layouts.containers[0].container", "\"@\""},
	{DEVS "layouts:\n  containers:\n"
	 "    - {container: '0:1', layout: {type: plain}}\n"
	 "    - {container: '0:01', layout: {type: plain, tier: sas}}\n", 9,
	 "layouts.containers[1].container", "containers[0]"},
	{DEVS "layouts:\n  containers:\n    - {container: '@x'}\n", 8,
	 "layouts.containers[0]", "\"layout\" missing"},
	{DEVS "layouts:\n  containers:\n    - {container: '@x', layout: "
	 "{type: mirror, pool: tape}}\n", 8,
	 "layouts.containers[0].layout.pool", "\"tape\""},
	{DEVS "layouts: plain\n", 6, "layouts", "expected a mapping"},
	/* device models: durations, bandwidths, booleans */
	{MODEL("read_latency: 80xs"), 7, "device_model.flash.read_latency",
	 "\"80xs\": unknown unit (units: ns, us, ms, s)"},
	{MODEL("write_latency: 80"), 7, "device_model.flash.write_latency",
	 "unit is required"},
	{MODEL("sync_latency: 0.5ns"), 7, "device_model.flash.sync_latency",
	 "finer than the smallest unit (units: ns"},
	{MODEL("read_bandwidth: 2GB"), 7, "device_model.flash.read_bandwidth",
	 "\"2GB\""},
	{MODEL("write_bandwidth: 20000000000000000000B/s"), 7,
	 "device_model.flash.write_bandwidth", "too large"},
	{MODEL("on: maybe"), 7, "device_model.flash.on", "\"maybe\""},
	/* YAML itself */
	{DEVS "pools: [\n", 0, "YAML", ""},
	{"devices: *nowhere\n", 1, "YAML", "alias"},
	{"devices:\n  - {name: \"\xff\", tier: flash}\n", 2, "YAML", ""},
	{"devices:\n\t- {tier: flash}\n", 2, "YAML", ""},
	{DEVS "---\n" DEVS, 7, "second", "document"},
};

/* Every rule: -EINVAL, and a message naming the line, the key and what. */
static void test_rules(void)
{
	char line[32];

	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		const struct bad_case *b = &bad_cases[i];
		struct conf c, keep = {.c_nr_devs = 77};
		const char *msg;
		bool ok;
		int rc;

		c = keep;
		err_clear();
		rc = conf_parse_str(&c, b->bc_text);
		CU_ASSERT_EQUAL(rc, -EINVAL);
		if (rc == 0) {
			fprintf(stderr, "\ncase %zu parsed\n", i);
			conf_fini(&c);
			continue;
		}
		CU_ASSERT_EQUAL(c.c_nr_devs, 77); /* untouched */
		CU_ASSERT_PTR_NULL(c.c_devs);
		msg = err_msg();
		snprintf(line, sizeof line, "line %u:", b->bc_line);
		ok = strstr(msg, b->bc_key) != NULL &&
		     strstr(msg, b->bc_what) != NULL &&
		     (b->bc_line == 0 || strstr(msg, line) != NULL) &&
		     strncmp(msg, "conf line ", 10) == 0;
		if (!ok)
			fprintf(stderr, "\ncase %zu: message \"%s\" lacks "
				"\"%s\" / \"%s\" / \"%s\"\n", i, msg, line,
				b->bc_key, b->bc_what);
		CU_ASSERT_TRUE(ok);
	}
}

/* Text of n flash devices, then tail. */
static char *many_devs(unsigned n, const char *tail)
{
	size_t cap = 64 + 16 * (size_t)n + strlen(tail), at;
	char *s = malloc(cap);

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	at = (size_t)snprintf(s, cap, "devices:\n");
	for (unsigned i = 0; i < n; i++)
		at += (size_t)snprintf(s + at, cap - at, "- {tier: flash}\n");
	snprintf(s + at, cap - at, "%s", tail);
	return s;
}

/* Limits that need big texts: devices, group width, pools, containers. */
static void test_limits(void)
{
	struct conf c;
	char *s, *p;
	size_t cap, at;

	s = many_devs(LIM_DEV_MAX, "");
	CU_ASSERT_EQUAL(conf_parse_str(&c, s), 0);
	CU_ASSERT_EQUAL(c.c_nr_devs, LIM_DEV_MAX);
	CU_ASSERT_STRING_EQUAL(c.c_devs[255].cd_name, "flash255");
	CU_ASSERT_TRUE(conf_round_trip(&c));
	conf_fini(&c);
	free(s);
	s = many_devs(LIM_DEV_MAX + 1, "");
	CU_ASSERT_EQUAL(conf_parse_str(&c, s), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "devices: 257 devices"));
	free(s);

	/* N+K+S: 32 units pass, 33 are refused even on a 40-device pool. */
	s = many_devs(40, "layouts:\n  default: {type: pdclust, pool: flash, "
		      "data: 20, parity: 10, spare: 2}\n");
	CU_ASSERT_EQUAL(conf_parse_str(&c, s), 0);
	conf_fini(&c);
	free(s);
	s = many_devs(40, "layouts:\n  default: {type: pdclust, pool: flash, "
		      "data: 20, parity: 10, spare: 3}\n");
	CU_ASSERT_EQUAL(conf_parse_str(&c, s), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "layouts.default: data 20"));
	free(s);
	s = many_devs(40, "layouts:\n  default: {type: mirror, pool: flash, "
		      "copies: 30, spare: 3}\n");
	CU_ASSERT_EQUAL(conf_parse_str(&c, s), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "copies 30"));
	free(s);

	/* Pools past CONF_POOLS_MAX. */
	cap = 64 + 48 * (size_t)(CONF_POOLS_MAX + 1);
	p = malloc(cap);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	at = (size_t)snprintf(p, cap, "pools:\n");
	for (unsigned i = 0; i <= CONF_POOLS_MAX; i++)
		at += (size_t)snprintf(p + at, cap - at,
				       "- {name: p%u, devices: [flash0]}\n", i);
	s = many_devs(1, p);
	CU_ASSERT_EQUAL(conf_parse_str(&c, s), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "pools: 257 pools"));
	free(s);
	free(p);

	/* A path of 255 characters is kept, 256 refused. */
	cap = 600;
	p = malloc(cap);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, 'x', cap);
	memcpy(p, "devices: [{tier: flash, path: /", 31);
	memcpy(p + 31 + 254, "}]\n", 4);
	CU_ASSERT_EQUAL(conf_parse_str(&c, p), 0);
	CU_ASSERT_EQUAL(strlen(c.c_devs[0].cd_path), 255);
	conf_fini(&c);
	memcpy(p + 31 + 254, "x}]\n", 5);
	CU_ASSERT_EQUAL(conf_parse_str(&c, p), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "devices[0].path"));
	free(p);

	/* Text past CONF_TEXT_MAX is refused before parsing. */
	CU_ASSERT_EQUAL(conf_parse(&c, "devices: []", CONF_TEXT_MAX + 1ul),
			-EINVAL);
	CU_ASSERT_EQUAL(conf_parse(NULL, "", 0), -EINVAL);
	CU_ASSERT_EQUAL(conf_parse(&c, NULL, 1), -EINVAL);
}

/* Parse value as key of the flash model (or as device_size when key is
 * NULL); returns conf_parse's rc and the number. */
static int num_of(const char *key, const char *value, uint64_t *out)
{
	char text[256];
	struct conf c;
	int rc;

	if (key == NULL)
		snprintf(text, sizeof text, "device_size: \"%s\"\n"
			 "devices: [{tier: flash}]\n", value);
	else
		snprintf(text, sizeof text, "devices: [{tier: flash}]\n"
			 "device_model: {flash: {%s: \"%s\"}}\n", key, value);
	rc = conf_parse_str(&c, text);
	if (rc != 0)
		return rc;
	if (key == NULL)
		*out = c.c_dev_size;
	else if (strcmp(key, "read_latency") == 0)
		*out = c.c_model[ST_TIER_FLASH].cm_read_lat_ns;
	else
		*out = c.c_model[ST_TIER_FLASH].cm_read_bw;
	conf_fini(&c);
	return 0;
}

struct num_case {
	const char *nc_key;   /* NULL: device_size */
	const char *nc_text;
	uint64_t nc_value;    /* expected; 0 = refused */
};

static const struct num_case num_cases[] = {
	{NULL, "1048576", 1ull << 20},
	{NULL, "1MiB", 1ull << 20},
	{NULL, "1 MiB", 1ull << 20},
	{NULL, "1.5GiB", 3ull << 29},
	{NULL, "0.5TiB", 1ull << 39},
	{NULL, "1.000000000000000000000000000MiB", 1ull << 20},
	{NULL, "001024KiB", 1ull << 20},
	{NULL, "16TiB", 16ull << 40},
	{NULL, "1048576B", 1ull << 20},
	{NULL, "1048576.5", 0},          /* not whole */
	{NULL, "1.0000001MiB", 0},       /* not whole bytes */
	{NULL, "17592186044416.5KiB", 0},/* past 16 TiB */
	{NULL, "18446744073709551615", 0},
	{NULL, "18446744073709551616", 0},
	{NULL, "16777216TiB", 0},        /* 2^64: overflows */
	{NULL, "0x100000", 0},
	{NULL, "1e6", 0},
	{NULL, "+1MiB", 0},
	{NULL, "1MB", 0},
	{NULL, "1mib", 0},
	{NULL, "1.MiB", 0},
	{NULL, ".5MiB", 0},
	{NULL, "MiB", 0},
	{"read_latency", "80us", 80000},
	{"read_latency", "1.5us", 1500},
	{"read_latency", "2ms", 2000000},
	{"read_latency", "3s", 3000000000ull},
	{"read_latency", "7ns", 7},
	{"read_latency", "0ns", 0 /* accepted: class default */},
	{"read_latency", "18446744073709551us", 18446744073709551000ull},
	{"read_latency", "18446744073709552us", 0},
	{"read_latency", "18446744074s", 0},
	{"read_latency", "18446744073709551615ns", UINT64_MAX},
	{"read_latency", "18446744073709551616ns", 0},
	{"read_latency", "5 min", 0},
	{"read_latency", "5", 0},
	{"read_bandwidth", "1KB/s", 1000},
	{"read_bandwidth", "1KiB/s", 1024},
	{"read_bandwidth", "2.5GB/s", 2500000000ull},
	{"read_bandwidth", "3MiB/s", 3ull << 20},
	{"read_bandwidth", "1GiB/s", 1ull << 30},
	{"read_bandwidth", "100MB/s", 100000000},
	{"read_bandwidth", "12B/s", 12},
	{"read_bandwidth", "18446744073709551615B/s", UINT64_MAX},
	{"read_bandwidth", "18446744073709551616B/s", 0},
	{"read_bandwidth", "20000000TB/s", 0},
	{"read_bandwidth", "1.5B/s", 0},
	{"read_bandwidth", "1 GB", 0},
	{"read_bandwidth", "1Gb/s", 0},
};

/* Sizes, durations and bandwidths: units, fractions, overflow. */
static void test_numbers(void)
{
	for (size_t i = 0; i < sizeof num_cases / sizeof num_cases[0]; i++) {
		const struct num_case *n = &num_cases[i];
		bool refuse = n->nc_value == 0 &&
			      strcmp(n->nc_text, "0ns") != 0;
		uint64_t v = 0;
		int rc = num_of(n->nc_key, n->nc_text, &v);

		if (refuse ? rc != -EINVAL : rc != 0 || v != n->nc_value)
			fprintf(stderr, "\nnumber \"%s\": rc %d value %llu "
				"(%s)\n", n->nc_text, rc,
				(unsigned long long)v, err_msg());
		if (refuse) {
			CU_ASSERT_EQUAL(rc, -EINVAL);
			CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(),
					n->nc_key != NULL ? n->nc_key :
							    "device_size"));
		} else {
			CU_ASSERT_EQUAL(rc, 0);
			CU_ASSERT_EQUAL(v, n->nc_value);
		}
	}
}

/* The built-in default: 14 devices in order, four pools, plain on flash. */
static void test_default(void)
{
	static const char *const names[] = {
		"nvram0", "flash0", "flash1", "flash2", "flash3", "flash4",
		"flash5", "flash6", "flash7", "sas0", "sas1", "sas2", "sas3",
		"smr0",
	};
	static const uint32_t nr[] = {1, 8, 4, 1};
	struct conf c, d, keep = {.c_nr_devs = 5};

	CU_ASSERT_EQUAL_FATAL(conf_default(&c, 64ull << 20), 0);
	CU_ASSERT_EQUAL_FATAL(c.c_nr_devs, 14);
	for (uint32_t i = 0; i < 14; i++) {
		CU_ASSERT_STRING_EQUAL(c.c_devs[i].cd_name, names[i]);
		CU_ASSERT_EQUAL(c.c_devs[i].cd_size, 64ull << 20);
		CU_ASSERT_STRING_EQUAL(c.c_devs[i].cd_path, "");
		CU_ASSERT_EQUAL(c.c_devs[i].cd_zone_size, 0);
	}
	CU_ASSERT_EQUAL(c.c_devs[0].cd_tier, ST_TIER_NVRAM);
	CU_ASSERT_EQUAL(c.c_devs[8].cd_tier, ST_TIER_FLASH);
	CU_ASSERT_EQUAL(c.c_devs[9].cd_tier, ST_TIER_SAS);
	CU_ASSERT_EQUAL(c.c_devs[13].cd_tier, ST_TIER_SMR);
	CU_ASSERT_EQUAL(c.c_dev_size, 64ull << 20);
	CU_ASSERT_EQUAL_FATAL(c.c_nr_pools, 4);
	for (uint32_t t = 0; t < ST_TIER_NR; t++) {
		CU_ASSERT_EQUAL(c.c_pools[t].cp_nr, nr[t]);
		for (uint32_t j = 0; j < c.c_pools[t].cp_nr; j++)
			CU_ASSERT_EQUAL(c.c_devs[c.c_pools[t].cp_devs[j]].cd_tier,
					t);
	}
	CU_ASSERT_STRING_EQUAL(c.c_pools[0].cp_name, "nvram");
	CU_ASSERT_STRING_EQUAL(c.c_pools[3].cp_name, "smr");
	CU_ASSERT_EQUAL(c.c_default_layout.cl_type, ST_LAYOUT_PLAIN);
	CU_ASSERT_EQUAL(c.c_default_layout.cl_tier, ST_TIER_FLASH);
	CU_ASSERT_EQUAL(c.c_nr_conts, 0);
	for (uint32_t t = 0; t < ST_TIER_NR; t++)
		CU_ASSERT_FALSE(c.c_model[t].cm_on);
	CU_ASSERT_TRUE(conf_round_trip(&c));
	/* The same as the file docs/configuration.md gives for it. */
	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&d,
		"device_size: 64MiB\n"
		"devices:\n"
		"  - { tier: nvram }\n"
		"  - { tier: flash }\n  - { tier: flash }\n"
		"  - { tier: flash }\n  - { tier: flash }\n"
		"  - { tier: flash }\n  - { tier: flash }\n"
		"  - { tier: flash }\n  - { tier: flash }\n"
		"  - { tier: sas }\n  - { tier: sas }\n"
		"  - { tier: sas }\n  - { tier: sas }\n"
		"  - { tier: smr }\n"), 0);
	CU_ASSERT_TRUE(conf_eq(&c, &d));
	conf_fini(&d);
	conf_fini(&c);

	CU_ASSERT_EQUAL_FATAL(conf_default(&c, 0), 0);
	CU_ASSERT_EQUAL(c.c_devs[3].cd_size, 0);
	CU_ASSERT_TRUE(conf_round_trip(&c));
	conf_fini(&c);

	c = keep;
	CU_ASSERT_EQUAL(conf_default(&c, 1000), -EINVAL);
	CU_ASSERT_EQUAL(conf_default(&c, (1ull << 20) + 1), -EINVAL);
	CU_ASSERT_EQUAL(conf_default(&c, 32ull << 40), -EINVAL);
	CU_ASSERT_EQUAL(c.c_nr_devs, 5);
	CU_ASSERT_EQUAL(conf_default(NULL, 0), -EINVAL);
}

/* Emit and parse back: the example, awkward strings, and the text itself. */
static void test_round_trip(void)
{
	struct conf c;
	char *text = NULL;

	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&c, conf_example), 0);
	CU_ASSERT_TRUE(conf_round_trip(&c));
	CU_ASSERT_EQUAL_FATAL(conf_emit(&c, &text), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "device_size: 256MiB"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "unit: 64KiB"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "read_latency: 80us"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "read_bandwidth: 2GB/s"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "@results"));
	free(text);
	conf_fini(&c);

	/* Paths and container names that need quoting survive. */
	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&c,
		"devices:\n"
		"  - {tier: flash, size: 1536KiB, path: \"/tmp/a  b: #c,[d]\"}\n"
		"  - {tier: flash, path: \"  lead\\ttab\\u00e9\\x01 \"}\n"
		"  - {tier: smr, size: 3GiB, zone_size: 1GiB}\n"
		"layouts:\n"
		"  containers:\n"
		"    - {container: \"@ it's \\\"q\\\" : - ? #\", layout: "
		"{type: mirror, pool: flash, unit: 16MiB}}\n"
		"    - {container: \"@---\", layout: {type: plain, tier: smr}}\n"
		"    - {container: \"0X1:Ff\", layout: {type: plain}}\n"
		"device_model:\n"
		"  nvram: {on: false, sync_latency: 1500ns}\n"
		"  smr: {on: TRUE, read_bandwidth: 1536KiB/s, "
		"write_bandwidth: 3TB/s}\n"), 0);
	CU_ASSERT_STRING_EQUAL(c.c_devs[0].cd_path, "/tmp/a  b: #c,[d]");
	CU_ASSERT_EQUAL(c.c_devs[0].cd_size, 1536ull << 10);
	CU_ASSERT_STRING_EQUAL(c.c_conts[2].cc_name, "0X1:Ff");
	CU_ASSERT_EQUAL(c.c_conts[0].cc_layout.cl_unit_shift, 24);
	CU_ASSERT_FALSE(c.c_model[ST_TIER_NVRAM].cm_on);
	CU_ASSERT_EQUAL(c.c_model[ST_TIER_NVRAM].cm_sync_lat_ns, 1500);
	CU_ASSERT_TRUE(c.c_model[ST_TIER_SMR].cm_on);
	CU_ASSERT_TRUE(conf_round_trip(&c));
	conf_fini(&c);
}

/* device_fill: zero when absent (and not emitted: texts of stores made
 * before the key stay the same), reserve parsed, emitted and read back. */
static void test_device_fill(void)
{
	struct conf c;
	char *text = NULL;

	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&c, DEVS), 0);
	CU_ASSERT_EQUAL(c.c_dev_fill, TIER_FILL_ZERO);
	CU_ASSERT_EQUAL_FATAL(conf_emit(&c, &text), 0);
	CU_ASSERT_PTR_NULL(strstr(text, "device_fill"));
	free(text);
	conf_fini(&c);
	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&c, "device_fill: zero\n" DEVS),
			      0);
	CU_ASSERT_EQUAL(c.c_dev_fill, TIER_FILL_ZERO);
	conf_fini(&c);
	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&c, DEVS "device_fill: reserve\n"),
			      0);
	CU_ASSERT_EQUAL(c.c_dev_fill, TIER_FILL_RESERVE);
	CU_ASSERT_EQUAL_FATAL(conf_emit(&c, &text), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "device_fill: reserve"));
	free(text);
	CU_ASSERT_TRUE(conf_round_trip(&c));
	conf_fini(&c);
	CU_ASSERT_EQUAL(conf_default(&c, 0), 0);
	CU_ASSERT_EQUAL(c.c_dev_fill, TIER_FILL_ZERO);
	conf_fini(&c);
}

/* Each container's own layout, else the default. */
static void test_layout_for(void)
{
	struct st_id res, other = {0x5, 0x6}, one = {0, 1};
	const struct conf_layout *l;
	struct conf c;

	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&c, conf_example), 0);
	CU_ASSERT_EQUAL(st_id_parse("@results", &res), 0);
	l = conf_layout_for(&c, &res);
	CU_ASSERT_PTR_EQUAL(l, &c.c_conts[0].cc_layout);
	CU_ASSERT_EQUAL(l->cl_type, ST_LAYOUT_MIRROR);
	l = conf_layout_for(&c, &one);
	CU_ASSERT_EQUAL(l->cl_type, ST_LAYOUT_PLAIN);
	CU_ASSERT_EQUAL(l->cl_tier, ST_TIER_SAS);
	CU_ASSERT_PTR_EQUAL(conf_layout_for(&c, &other), &c.c_default_layout);
	CU_ASSERT_PTR_EQUAL(conf_layout_for(&c, NULL), &c.c_default_layout);
	conf_fini(&c);

	CU_ASSERT_EQUAL_FATAL(conf_default(&c, 0), 0);
	l = conf_layout_for(&c, &res);
	CU_ASSERT_EQUAL(l->cl_type, ST_LAYOUT_PLAIN);
	CU_ASSERT_EQUAL(l->cl_tier, ST_TIER_FLASH);
	conf_fini(&c);
}

/* Files: a good one, a missing one, a directory, a bad one. */
static void test_load(void)
{
	const char *dir = ut_tmpdir("conf");
	char path[512];
	struct conf c, d;
	FILE *f;

	snprintf(path, sizeof path, "%s/missing.yaml", dir);
	CU_ASSERT_EQUAL(conf_load(&c, path), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), path));
	CU_ASSERT_EQUAL(conf_load(&c, dir), -EISDIR);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), dir));

	snprintf(path, sizeof path, "%s/strata.yaml", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(conf_example, f);
	fclose(f);
	CU_ASSERT_EQUAL_FATAL(conf_load(&c, path), 0);
	CU_ASSERT_EQUAL_FATAL(conf_parse_str(&d, conf_example), 0);
	CU_ASSERT_TRUE(conf_eq(&c, &d));
	conf_fini(&c);
	conf_fini(&d);

	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("devices:\n  - {tier: tape}\n", f);
	fclose(f);
	CU_ASSERT_EQUAL(conf_load(&c, path), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), path));
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "line 2: devices[0].tier"));
	CU_ASSERT_EQUAL(conf_load(&c, NULL), -EINVAL);
}

/* A small seeded generator (xorshift64*), so failures replay. */
static uint64_t fuzz_state;

static uint64_t fuzz_next(void)
{
	fuzz_state ^= fuzz_state >> 12;
	fuzz_state ^= fuzz_state << 25;
	fuzz_state ^= fuzz_state >> 27;
	return fuzz_state * 0x2545f4914f6cdd1dull;
}

static size_t fuzz_below(size_t n)
{
	return n == 0 ? 0 : (size_t)(fuzz_next() % n);
}

/* Offset of the first byte at or after at for which want() holds, or len. */
static size_t fuzz_find(const char *buf, size_t len, size_t at,
			int (*want)(int))
{
	while (at < len && !want((unsigned char)buf[at]))
		at++;
	return at;
}

static int fuzz_is_nl(int ch)
{
	return ch == '\n';
}

/* Remove or copy the line that holds offset at. */
static void fuzz_line(char *buf, size_t *len, size_t cap, size_t at, bool dup)
{
	size_t start = at, end = fuzz_find(buf, *len, at, fuzz_is_nl);
	size_t n;

	while (start > 0 && buf[start - 1] != '\n')
		start--;
	n = end < *len ? end + 1 - start : end - start;
	if (!dup) {
		memmove(buf + start, buf + start + n, *len - start - n);
		*len -= n;
	} else if (*len + n <= cap) {
		memmove(buf + start + n, buf + start, *len - start);
		*len += n;
	}
}

/*
 * One random change to buf[0..*len) (capacity cap).  Most keep the text
 * YAML (another digit, another letter, a line removed or repeated) so the
 * checks behind the syntax are reached; the rest break it at random.
 */
static void fuzz_mutate(char *buf, size_t *len, size_t cap)
{
	static const char yamlish[] = ":-[]{},#&*!|>'\"%@`\n\t ?./\\";
	size_t at = fuzz_below(*len + 1), n = 1 + fuzz_below(12);

	switch (fuzz_below(10)) {
	case 0:
	case 1: /* another digit */
		at = fuzz_find(buf, *len, at, isdigit);
		if (at < *len)
			buf[at] = (char)('0' + fuzz_below(10));
		break;
	case 2:
	case 3: /* another letter */
		at = fuzz_find(buf, *len, at, isalpha);
		if (at < *len)
			buf[at] = (char)('a' + fuzz_below(26));
		break;
	case 4: /* a line removed */
		if (at < *len)
			fuzz_line(buf, len, cap, at, false);
		break;
	case 5: /* a line repeated */
		if (at < *len)
			fuzz_line(buf, len, cap, at, true);
		break;
	case 6: /* a YAML indicator put in */
		if (at < *len)
			buf[at] = yamlish[fuzz_below(sizeof yamlish - 1)];
		break;
	case 7: /* any byte */
		if (at < *len)
			buf[at] = (char)fuzz_next();
		break;
	case 8: /* a span removed */
		n = at + n > *len ? *len - at : n;
		memmove(buf + at, buf + at + n, *len - at - n);
		*len -= n;
		break;
	default: /* cut short */
		*len = at;
		break;
	}
}

/* Mutations of the example and random bytes: never a crash, always 0 or
 * -EINVAL with a message, and whatever parses survives a round trip. */
static void test_fuzz(void)
{
	size_t cap = 2 * sizeof conf_example, len;
	char *buf = malloc(cap);
	unsigned parsed = 0, refused = 0;
	struct conf c;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	fuzz_state = 0x5eed5eedull;
	for (unsigned it = 0; it < 2500; it++) {
		int rc;

		if (it % 10 == 9) {
			len = fuzz_below(200);
			for (size_t i = 0; i < len; i++)
				buf[i] = (char)fuzz_next();
		} else {
			len = sizeof conf_example - 1;
			memcpy(buf, conf_example, len);
			for (size_t m = 1 + fuzz_below(3); m > 0; m--)
				fuzz_mutate(buf, &len, cap);
		}
		err_clear();
		rc = conf_parse(&c, buf, len);
		if (rc == 0) {
			parsed++;
			CU_ASSERT_TRUE(conf_round_trip(&c));
			conf_fini(&c);
		} else {
			refused++;
			CU_ASSERT_EQUAL(rc, -EINVAL);
			CU_ASSERT_EQUAL(strncmp(err_msg(), "conf line ", 10), 0);
		}
	}
	/* Both outcomes must be common, or the loop tests little. */
	CU_ASSERT(parsed > 150);
	CU_ASSERT(refused > 1000);
	free(buf);
}

int conf_ut_add(void)
{
	CU_pSuite s = CU_add_suite("conf", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "example", test_example) ||
	    !CU_add_test(s, "defaults_filled", test_defaults_filled) ||
	    !CU_add_test(s, "rules", test_rules) ||
	    !CU_add_test(s, "limits", test_limits) ||
	    !CU_add_test(s, "numbers", test_numbers) ||
	    !CU_add_test(s, "default", test_default) ||
	    !CU_add_test(s, "round_trip", test_round_trip) ||
	    !CU_add_test(s, "device_fill", test_device_fill) ||
	    !CU_add_test(s, "layout_for", test_layout_for) ||
	    !CU_add_test(s, "load", test_load) ||
	    !CU_add_test(s, "fuzz", test_fuzz))
		return -1;
	return 0;
}
