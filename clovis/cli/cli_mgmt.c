/*
 * cli_mgmt.c — the management commands: "strata stats" (per-op counts and
 * latencies), "strata devices" (the store's devices) and "strata destroy"
 * (remove a whole store).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/cli/cli.h"

/* Name of op class i: the library names every class (clovis_stat.cs_name). */
static const char *stat_name(const struct clovis_stat *s, int i)
{
	(void)i;
	return s->cs_name != NULL ? s->cs_name : "?";
}

/* Print all op classes as a JSON array. */
static void stats_json(const struct clovis_stat *st)
{
	int i;

	printf("[");
	for (i = 0; i < CLOVIS_STAT_NR; i++) {
		const struct clovis_stat *s = &st[i];

		printf("%s{\"op\": ", i == 0 ? "" : ",\n ");
		cli_json_str(stdout, stat_name(s, i), strlen(stat_name(s, i)));
		printf(", \"count\": %llu, \"failed\": %llu, \"bytes\": %llu, "
		       "\"p50_us\": %llu, \"p90_us\": %llu, \"p99_us\": %llu, "
		       "\"max_us\": %llu, \"mean_us\": %.1f}",
		       (unsigned long long)s->cs_count,
		       (unsigned long long)s->cs_failed,
		       (unsigned long long)s->cs_bytes,
		       (unsigned long long)s->cs_p50_us,
		       (unsigned long long)s->cs_p90_us,
		       (unsigned long long)s->cs_p99_us,
		       (unsigned long long)s->cs_max_us, s->cs_mean_us);
	}
	printf("]\n");
}

/* Print the op classes that ran as a table. */
static void stats_text(const struct clovis_stat *st)
{
	int i, shown = 0;

	printf("%-16s %10s %7s %14s %9s %9s %9s %9s %10s\n", "op", "count",
	       "failed", "bytes/records", "p50 us", "p90 us", "p99 us",
	       "max us", "mean us");
	for (i = 0; i < CLOVIS_STAT_NR; i++) {
		const struct clovis_stat *s = &st[i];

		if (s->cs_count == 0)
			continue;
		printf("%-16s %10llu %7llu %14llu %9llu %9llu %9llu %9llu %10.1f\n",
		       stat_name(s, i), (unsigned long long)s->cs_count,
		       (unsigned long long)s->cs_failed,
		       (unsigned long long)s->cs_bytes,
		       (unsigned long long)s->cs_p50_us,
		       (unsigned long long)s->cs_p90_us,
		       (unsigned long long)s->cs_p99_us,
		       (unsigned long long)s->cs_max_us, s->cs_mean_us);
		shown++;
	}
	if (shown == 0)
		printf("(no operations recorded)\n");
}

/* strata stats [--reset]: show or clear the store's op statistics. */
int cmd_stats(struct cli *c)
{
	struct clovis_stat st[CLOVIS_STAT_NR];
	int rc;

	if (c->c_reset) {
		rc = cli_call(c, clovis_stats_reset(c->c_cl));
		if (rc < 0)
			return cli_fail(c, rc, "reset statistics");
		if (c->c_json)
			printf("{\"reset\": true}\n");
		else if (!c->c_quiet)
			printf("statistics reset\n");
		return CLI_OK;
	}
	memset(st, 0, sizeof st);
	rc = cli_call(c, clovis_stats_get(c->c_cl, st));
	if (rc < 0)
		return cli_fail(c, rc, "get statistics");
	if (c->c_json)
		stats_json(st);
	else
		stats_text(st);
	return CLI_OK;
}

/* Print one device as a JSON object. */
static void dev_json(const struct clovis_dev_info *d, bool first)
{
	printf("%s{\"index\": %u, \"tier\": \"%s\", \"driver\": ",
	       first ? "" : ",\n ", d->di_index, cli_tier_name(d->di_tier));
	cli_json_str(stdout, d->di_driver, strnlen(d->di_driver,
						   sizeof d->di_driver));
	printf(", \"path\": ");
	cli_json_str(stdout, d->di_path, strnlen(d->di_path,
						 sizeof d->di_path));
	printf(", \"size_bytes\": %llu, \"free_bytes\": %llu, "
	       "\"direct_io\": %s}",
	       (unsigned long long)d->di_size_bytes,
	       (unsigned long long)d->di_free_bytes,
	       d->di_direct_io ? "true" : "false");
}

/* Print one device as a table row. */
static void dev_text(const struct clovis_dev_info *d)
{
	char size[32], avail[32];
	double used = d->di_size_bytes == 0 ? 0.0 :
		100.0 * (double)(d->di_size_bytes - d->di_free_bytes) /
		(double)d->di_size_bytes;

	printf("%-4u %-6s %-8.16s %10s %10s %6.1f%% %-6s %.256s\n",
	       d->di_index, cli_tier_name(d->di_tier), d->di_driver,
	       cli_human(d->di_size_bytes, size, sizeof size),
	       cli_human(d->di_free_bytes, avail, sizeof avail), used,
	       d->di_direct_io ? "yes" : "no", d->di_path);
}

/* Devices asked for first; a store with more is asked again. */
#define DEV_FIRST 64u

/* Fetch the device list into a malloc()ed array; *nr gets its length. */
static int dev_fetch(struct cli *c, struct clovis_dev_info **out,
		     uint32_t *nr)
{
	uint32_t want = DEV_FIRST;
	struct clovis_dev_info *info;
	int rc;

	for (;;) {
		info = calloc(want, sizeof *info);
		if (info == NULL)
			return -ENOMEM;
		*nr = want;
		rc = cli_call(c, clovis_dev_list(c->c_cl, info, nr));
		if (rc < 0 || *nr <= want)
			break;
		want = *nr;
		free(info);
	}
	if (rc < 0) {
		free(info);
		return rc;
	}
	*out = info;
	return 0;
}

/* strata devices: list the store's devices with capacity and free space. */
int cmd_devices(struct cli *c)
{
	struct clovis_dev_info *info = NULL;
	uint32_t nr = 0, i;
	int rc;

	rc = dev_fetch(c, &info, &nr);
	if (rc < 0)
		return cli_fail(c, rc, "list devices");
	if (c->c_json) {
		printf("[");
		for (i = 0; i < nr; i++)
			dev_json(&info[i], i == 0);
		printf("]\n");
	} else {
		printf("%-4s %-6s %-8s %10s %10s %7s %-6s %s\n", "dev",
		       "tier", "driver", "size", "free", "used", "direct",
		       "path");
		for (i = 0; i < nr; i++)
			dev_text(&info[i]);
	}
	free(info);
	return CLI_OK;
}

/* strata destroy --yes: remove the store, its devices and its directory. */
int cmd_destroy(struct cli *c)
{
	int rc;

	if (!c->c_yes)
		return cli_usage(c, "destroy removes the store in '%s' and all "
				 "its data; add --yes", c->c_data_dir);
	rc = cli_call(c, clovis_store_destroy(c->c_data_dir));
	if (rc < 0)
		return cli_fail(c, rc, "destroy store '%s'", c->c_data_dir);
	if (c->c_json)
		printf("{\"destroyed\": true}\n");
	else if (!c->c_quiet)
		printf("destroyed the store in %s\n", c->c_data_dir);
	return CLI_OK;
}
