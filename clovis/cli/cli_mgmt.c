/*
 * cli_mgmt.c — the management commands "strata stats" (per-op counts and
 * latencies) and "strata destroy" (remove a whole store).  Devices, tiers
 * and pools are in cli_dev.c, repair and its kin in cli_walk.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addb/addb.h"
#include "clovis/cli/cli.h"

/* Name of op class i: the library names every class (clovis_stat.cs_name). */
static const char *stat_name(const struct clovis_stat *s, int i)
{
	(void)i;
	return s->cs_name != NULL ? s->cs_name : "?";
}

/* Print all op classes as a JSON array (no line end). */
static void stats_json_array(const struct clovis_stat *st)
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
	printf("]");
}

static void stats_json(const struct clovis_stat *st)
{
	stats_json_array(st);
	printf("\n");
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

	if (c->c_cluster != NULL || c->c_server != NULL) {
		/* cluster mode: what every server served, from their
		 * metrics (kept by the servers, whichever client asked) */
		struct cli_ops_agg *a = malloc(sizeof *a);
		struct clovis_server_info si[64];
		uint32_t nr = 64;

		if (c->c_reset) {
			free(a);
			return cli_usage(c, "stats --reset: the servers' "
					 "counters count from each server's "
					 "start and are not reset");
		}
		struct clovis_stats_clients ci;

		if (a == NULL)
			return cli_sys(ENOMEM, "stats");
		rc = cli_call(c, clovis_server_list(c->c_cl, si, &nr));
		if (rc == 0)
			rc = cli_ops_aggregate(c, si, nr, a);
		/* and the ops of the clients that ended, pushed to the
		 * servers (clovis_stats_clients()) */
		if (rc == 0)
			rc = cli_call(c, clovis_stats_clients(c->c_cl, st,
							      &ci));
		if (rc == 0)
			cli_ops_print(c, a, c->c_json, true);
		if (rc == 0 && c->c_json) {
			printf(", \"clients\": {\"pushed\": %llu, "
			       "\"servers_read\": %u, \"servers_not_read\": "
			       "%u, \"ops\": ",
			       (unsigned long long)ci.sc_clients,
			       ci.sc_servers_read, ci.sc_servers_not_read);
			stats_json_array(st);
			printf("}}\n");
		} else if (rc == 0) {
			printf("\nops of the clients that ended (%llu "
			       "clients' pushes, read from %u server(s)%s):\n",
			       (unsigned long long)ci.sc_clients,
			       ci.sc_servers_read, ci.sc_servers_not_read ?
			       ", some not read: down" : "");
			stats_text(st);
		}
		free(a);
		return rc == 0 ? CLI_OK : cli_fail(c, rc, "stats");
	}
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

/* ------------------------------------------------------------- metrics */

/* Print one region's snapshot as the format asked. */
static int metrics_print(struct cli *c, const struct addb_snap *s)
{
	int rc = c->c_json ? addb_json_write(s, (uint32_t)c->c_min_prio, stdout)
			   : addb_prom_write(s, (uint32_t)c->c_min_prio, stdout);

	if (rc == 0 && !s->as_running && !c->c_quiet)
		fprintf(stderr, "strata: metrics: process %llu (%s) is not "
			"running: its values as of its end\n",
			(unsigned long long)s->as_pid, s->as_kind);
	return rc;
}

/* The regions in /dev/shm: pid, kind, running. */
static int metrics_list(struct cli *c)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *de;
	bool first = true;
	uint32_t n = 0;

	if (d == NULL)
		return cli_sys(errno, "metrics: /dev/shm");
	if (c->c_json)
		printf("[");
	while ((de = readdir(d)) != NULL) {
		struct addb_snap *s = NULL;
		char path[300];

		if (strncmp(de->d_name, "strata-addb.", 12) != 0 ||
		    strspn(de->d_name + 12, "0123456789") !=
		    strlen(de->d_name + 12))
			continue; /* trace files, files being made */
		snprintf(path, sizeof path, "/dev/shm/%s", de->d_name);
		if (addb_snap_file(path, &s) != 0) {
			if (!c->c_quiet)
				fprintf(stderr, "strata: metrics: %s\n",
					clovis_errmsg());
			continue;
		}
		if (c->c_json) {
			printf("%s{\"pid\": %llu, \"kind\": \"", first ? "" :
			       ", ", (unsigned long long)s->as_pid);
			for (const char *k = s->as_kind; *k; k++)
				if (*k == '"' || *k == '\\' ||
				    (unsigned char)*k < 0x20)
					printf("\\u%04x", (unsigned char)*k);
				else
					putchar(*k);
			printf("\", \"running\": %s}",
			       s->as_running ? "true" : "false");
		}
		else
			printf("%-8llu %-16s %s\n",
			       (unsigned long long)s->as_pid, s->as_kind,
			       s->as_running ? "running" : "ended");
		first = false;
		n++;
		addb_snap_free(s);
	}
	closedir(d);
	if (c->c_json)
		printf("]\n");
	else if (n == 0 && !c->c_quiet)
		printf("(no metrics regions)\n");
	return CLI_OK;
}

/* strata metrics [--pid P | --file F] [--min-priority P] | --sweep */
int cmd_metrics(struct cli *c)
{
	struct addb_snap *s = NULL;
	int rc;

	if (c->c_sweep) {
		int n = addb_sweep();

		if (c->c_json)
			printf("{\"removed\": %d}\n", n);
		else if (!c->c_quiet)
			printf("%d region(s) of ended processes removed\n", n);
		return CLI_OK;
	}
	if (c->c_pid == 0 && c->c_file == NULL)
		return metrics_list(c);
	rc = cli_call(c, c->c_file != NULL ? addb_snap_file(c->c_file, &s) :
			 addb_snap_pid((pid_t)c->c_pid, &s));
	if (rc < 0)
		return cli_fail(c, rc, "metrics");
	rc = metrics_print(c, s);
	addb_snap_free(s);
	return rc == 0 ? CLI_OK : cli_fail(c, rc, "metrics: write");
}

/* strata metrics server NAME: a cluster server process's metrics. */
int cmd_metrics_server(struct cli *c)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (c->c_pid != 0 || c->c_file != NULL || c->c_sweep)
		return cli_usage(c, "metrics server NAME reads the server's "
				 "metrics: --pid, --file and --sweep are for "
				 "local regions");
	rc = cli_call(c, clovis_addb_metrics(c->c_cl, c->c_args[0],
					     (uint32_t)c->c_min_prio,
					     c->c_json ? CLOVIS_ADDB_JSON : 0,
					     &text, &len));
	if (rc < 0)
		return cli_fail(c, rc, "metrics of server %s", c->c_args[0]);
	rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 :
	     -EIO;
	free(text);
	return rc == 0 ? CLI_OK : cli_sys(EIO, "metrics: standard output");
}
