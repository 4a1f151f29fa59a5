/*
 * cli_layout.c — layouts of new objects from the command line (--layout,
 * --pool, --data, --parity, --spare, --copies, --unit, --tier), pools by
 * name, and the words and JSON members that describe an object's layout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/cli/cli.h"

/* Default block size of new objects: 4 KiB. */
#define OBJ_SHIFT_DEFAULT 12u

/*
 * The library's pdclust defaults (clovis.h, oa_data_units and
 * oa_parity_units).  The tool fills in the one the user left out, because
 * the library reads parity 0 beside a non-zero data count as "no parity".
 */
#define PD_DATA_DEFAULT 4u
#define PD_PARITY_DEFAULT 2u


/* The name of pool p, or "pool-N" when the store does not list it. */
const char *cli_pool_name(struct cli *c, uint32_t p, char *buf, size_t size)
{
	struct clovis_pool_info *info = NULL;
	uint32_t nr = 0;

	snprintf(buf, size, "pool-%u", p);
	if (cli_pools_fetch(c, &info, &nr) == 0 && p < nr)
		snprintf(buf, size, "%.31s", info[p].pi_name);
	free(info);
	return buf;
}

/* Append ", NAME" for each pool to the message kept for cli_fail(). */
static void pool_names_msg(struct cli *c, const char *text,
			   const struct clovis_pool_info *info, uint32_t nr)
{
	size_t len;
	uint32_t i;

	cli_msg(c, "no pool named '%s' (pools:", text);
	for (i = 0; i < nr; i++) {
		len = strlen(c->c_msg);
		snprintf(c->c_msg + len, sizeof c->c_msg - len, "%s %.31s",
			 i == 0 ? "" : ",", info[i].pi_name);
	}
	len = strlen(c->c_msg);
	snprintf(c->c_msg + len, sizeof c->c_msg - len, ")");
}

/*
 * Resolve the pool named by text: a pool name, else a pool index in
 * decimal.  Returns 0 and sets *pool, or -EINVAL with the pools listed in
 * the message, or another negative code.
 */
static int pool_find(struct cli *c, const char *text, uint32_t *pool)
{
	struct clovis_pool_info *info = NULL;
	uint32_t nr = 0, i;
	uint64_t v;
	int rc;

	rc = cli_pools_fetch(c, &info, &nr);
	if (rc < 0)
		return rc;
	rc = -EINVAL;
	for (i = 0; i < nr && rc != 0; i++) {
		if (strncmp(info[i].pi_name, text, sizeof info[i].pi_name))
			continue;
		*pool = i;
		rc = 0;
	}
	if (rc != 0 && cli_parse_u64(text, &v) && v < nr) {
		*pool = (uint32_t)v;
		rc = 0;
	}
	if (rc != 0)
		pool_names_msg(c, text, info, nr);
	free(info);
	return rc;
}

/* Unit counts of a pdclust or mirror layout from the options. */
static void attr_geometry(const struct cli *c, struct clovis_obj_attr *a)
{
	if (a->oa_layout == CLOVIS_LAYOUT_PDCLUST &&
	    (c->c_data_set || c->c_parity_set)) {
		a->oa_data_units = c->c_data_set ? c->c_data : PD_DATA_DEFAULT;
		a->oa_parity_units = c->c_parity_set ? c->c_parity
						     : PD_PARITY_DEFAULT;
	}
	if (a->oa_layout == CLOVIS_LAYOUT_MIRROR && c->c_copies_set)
		a->oa_data_units = c->c_copies;
	a->oa_spare_units = c->c_spare_set ? c->c_spare : 0;
	a->oa_unit_shift = c->c_unit_shift;
}

/*
 * Attributes of a new object.  Without --layout and --tier the container's
 * default layout is used (oa_layout 0, flash if that default is plain);
 * --tier alone means plain on that tier.
 */
int cli_obj_attr(struct cli *c, const char *text, struct clovis_obj_attr *a)
{
	int rc;

	memset(a, 0, sizeof *a);
	a->oa_block_shift = c->c_block_set ? c->c_block_shift
					   : OBJ_SHIFT_DEFAULT;
	a->oa_tier = c->c_tier >= 0 ? (uint32_t)c->c_tier : CLOVIS_TIER_FLASH;
	a->oa_layout = c->c_layout;
	if (a->oa_layout == 0 && c->c_tier >= 0)
		a->oa_layout = CLOVIS_LAYOUT_PLAIN;
	if (a->oa_layout == CLOVIS_LAYOUT_COMPOSITE) {
		a->oa_tier = 0; /* its layer's: cli_obj.c */
		return 0;
	}
	if (a->oa_layout != CLOVIS_LAYOUT_PDCLUST &&
	    a->oa_layout != CLOVIS_LAYOUT_MIRROR)
		return 0;
	attr_geometry(c, a);
	if (c->c_pool == NULL)
		return 0;
	rc = pool_find(c, c->c_pool, &a->oa_pool);
	if (rc < 0)
		return cli_fail(c, rc, "create object %s", text);
	return 0;
}

/* True for the layouts that place units over a pool. */
static bool layout_striped(uint32_t l)
{
	return l == CLOVIS_LAYOUT_PDCLUST || l == CLOVIS_LAYOUT_MIRROR;
}

/* The words after "N-byte blocks" in messages about an object. */
const char *cli_layout_text(struct cli *c, const struct clovis_obj_attr *a,
			    char *buf, size_t size)
{
	char pool[40], unit[32], spare[24] = "", name[24];

	if (a->oa_layout == CLOVIS_LAYOUT_PLAIN) {
		snprintf(buf, size, " on %s", cli_tier_name(a->oa_tier));
		return buf;
	}
	if (!layout_striped(a->oa_layout)) {
		snprintf(buf, size, ", %s",
			 cli_layout_name(a->oa_layout, name, sizeof name));
		return buf;
	}
	cli_pool_name(c, a->oa_pool, pool, sizeof pool);
	cli_human(1ull << a->oa_unit_shift, unit, sizeof unit);
	if (a->oa_layout == CLOVIS_LAYOUT_PDCLUST) {
		snprintf(buf, size, ", pdclust %u+%u+%u on pool %s, %s units",
			 a->oa_data_units, a->oa_parity_units,
			 a->oa_spare_units, pool, unit);
		return buf;
	}
	if (a->oa_spare_units > 0)
		snprintf(spare, sizeof spare, " +%u spare", a->oa_spare_units);
	snprintf(buf, size, ", mirror %u copies%s on pool %s, %s units",
		 a->oa_data_units, spare, pool, unit);
	return buf;
}

/* JSON members of a layout, after "layout". */
void cli_layout_json(struct cli *c, const struct clovis_obj_attr *a)
{
	char pool[40], name[24];

	printf("\"layout\": \"%s\"",
	       cli_layout_name(a->oa_layout, name, sizeof name));
	if (a->oa_layout == CLOVIS_LAYOUT_PLAIN) {
		printf(", \"tier\": \"%s\", \"device\": %u",
		       cli_tier_name(a->oa_tier), a->oa_dev);
		return;
	}
	if (!layout_striped(a->oa_layout))
		return;
	cli_pool_name(c, a->oa_pool, pool, sizeof pool);
	printf(", \"pool\": ");
	cli_json_str(stdout, pool, strlen(pool));
	printf(", \"pool_index\": %u", a->oa_pool);
	if (a->oa_layout == CLOVIS_LAYOUT_PDCLUST)
		printf(", \"data_units\": %u, \"parity_units\": %u",
		       a->oa_data_units, a->oa_parity_units);
	else
		printf(", \"copies\": %u", a->oa_data_units);
	printf(", \"spare_units\": %u, \"unit_size\": %llu",
	       a->oa_spare_units, 1ull << a->oa_unit_shift);
}
