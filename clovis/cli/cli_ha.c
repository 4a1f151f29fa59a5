/*
 * cli_ha.c — `strata ha replay FILE [--json]`: run the event analyzer
 * (ha/analyzer.h) over a recorded history and print its decisions.
 *
 * FILE is a replay file (ha/ha_json.h: JSON lines, an optional header
 * {"map": ..., "rules": ...}, then one event per line).  The replay runs
 * as the live analyzer does (ha_replay()): at each event's time and at
 * each deadline between, every decision applied to the map before the
 * next.  One line per decision:
 *
 *   TIME_S   RULE         KIND           TARGET     STATE        REASON
 *
 * TIME_S in seconds with milliseconds; TARGET "s1", "s1/d0" or "-" (the
 * map); then a summary line "replay: N events, N decisions, map epoch E
 * (FROZEN)".  With --json each decision is one JSON line (ha_json.h) and
 * no summary.  A bad file fails (exit 1) with one line naming the file and
 * line; nothing is printed before the whole file has been read.  No store
 * is opened.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clovis/cli/cli.h"
#include "core/errors.h"
#include "ha/analyzer.h"
#include "ha/ha_json.h"

struct replay_out {
	bool ro_json;
	uint32_t ro_nr;
};

/* Print one decision (ha_replay_cb). */
static int replay_print(void *arg, const struct ha_decision *d)
{
	struct replay_out *o = arg;
	char target[2 * HA_NAME_MAX + 2], line[1024];
	int rc;

	o->ro_nr++;
	if (o->ro_json) {
		rc = ha_decision_format(d, line, sizeof line);
		if (rc < 0)
			return rc;
		printf("%s\n", line);
		return 0;
	}
	if (d->hd_target[0] == '\0')
		snprintf(target, sizeof target, "-");
	else
		snprintf(target, sizeof target, "%s%s%s", d->hd_target,
			 d->hd_dev[0] ? "/" : "", d->hd_dev);
	printf("%10llu.%03llu  %-11s %-13s %-10s %-11s %s\n",
	       (unsigned long long)(d->hd_time_ms / 1000),
	       (unsigned long long)(d->hd_time_ms % 1000), d->hd_rule,
	       ha_dec_kind_name(d->hd_kind), target,
	       ha_state_name(d->hd_state), d->hd_reason);
	return 0;
}

int cmd_ha_replay(struct cli *c)
{
	const char *path = c->c_args[0];
	struct replay_out o = { .ro_json = c->c_json };
	struct ha_history h;
	FILE *f;
	int rc;

	f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (f == NULL)
		return cli_sys(errno, "ha replay: open %s", path);
	rc = ha_history_read(f, path, &h);
	if (f != stdin)
		fclose(f);
	if (rc != 0) {
		fprintf(stderr, "strata: ha replay: %s: %s\n", strerror(-rc),
			err_msg());
		return CLI_FAIL;
	}
	rc = ha_replay(&h.hh_rules, h.hh_ev, h.hh_nr, h.hh_map, 0,
		       replay_print, &o);
	if (rc != 0) {
		fflush(stdout);
		fprintf(stderr, "strata: ha replay %s: %s: %s\n", path,
			strerror(-rc), err_msg());
		ha_history_fini(&h);
		return CLI_FAIL;
	}
	if (!o.ro_json)
		printf("replay: %u events, %u decisions, map epoch %llu%s\n",
		       h.hh_nr, o.ro_nr,
		       (unsigned long long)h.hh_map->hm_epoch,
		       h.hh_map->hm_frozen ? " (FROZEN)" : "");
	ha_history_fini(&h);
	return CLI_OK;
}

/* ------------------------------------------------- a running cluster */

/* Open the cluster (--cluster, --server, or D/cluster.yaml of --dir). */
static int ha_open(struct cli *c)
{
	static char conf[PATH_MAX + 64];

	if (c->c_cluster == NULL && c->c_server == NULL) {
		snprintf(conf, sizeof conf, "%s/cluster.yaml", c->c_dir);
		c->c_cluster = conf;
	}
	return cli_cluster_open(c);
}

/* One event line of a server's answer, as text. */
static void event_print(const char *line)
{
	struct ha_event ev;

	if (ha_event_parse(line, &ev) != 0) {
		printf("%s\n", line);
		return;
	}
	printf("%6llu %10llu.%03llu  %-17s %-8s %s%s%s", (unsigned long long)
	       ev.he_seq, (unsigned long long)(ev.he_time_ms / 1000),
	       (unsigned long long)(ev.he_time_ms % 1000),
	       ha_ev_kind_name(ev.he_kind), ev.he_reporter, ev.he_target,
	       ev.he_dev[0] ? "/" : "", ev.he_dev);
	if (ev.he_count != 0)
		printf(" count %u", ev.he_count);
	if (ev.he_job != 0)
		printf(" job %llu", (unsigned long long)ev.he_job);
	printf("\n");
}

/* One decision line of a server's answer, as text. */
static void decision_print(const char *line)
{
	struct ha_decision d;
	struct replay_out o = { .ro_json = false };

	if (ha_decision_parse(line, &d) != 0)
		printf("%s\n", line);
	else
		replay_print(&o, &d);
}

/*
 * strata ha state|map|events|decisions [FROM]: ask the first server that
 * answers.  state and map print the server's JSON; events and decisions
 * one line each (JSON lines with --json), from sequence FROM (default:
 * the oldest kept).
 */
int cmd_ha_show(struct cli *c)
{
	static const struct { const char *w; uint32_t what; } kinds[] = {
		{"state", CLOVIS_HA_STATE}, {"map", CLOVIS_HA_MAP},
		{"events", CLOVIS_HA_EVENTS},
		{"decisions", CLOVIS_HA_DECISIONS},
	};
	const char *what = c->c_cmd->cc_name;
	uint32_t k = 0;
	uint64_t from = 0;
	char *text = NULL, *save = NULL;
	int rc;

	while (strcmp(kinds[k].w, what) != 0)
		k++;
	if (c->c_nargs > 0 && kinds[k].what != CLOVIS_HA_STATE &&
	    !cli_parse_u64(c->c_args[0], &from))
		return cli_fail(c, -EINVAL, "ha %s: FROM '%s' is not a "
				"sequence number", what, c->c_args[0]);
	rc = ha_open(c);
	if (rc != 0)
		return rc;
	if (kinds[k].what == CLOVIS_HA_STATE && c->c_nargs > 0)
		rc = cli_call(c, clovis_ha_server_state(c->c_cl, c->c_args[0],
							&text));
	else
		rc = cli_call(c, clovis_ha_query(c->c_cl, kinds[k].what, from,
						 0, &text));
	if (rc != 0)
		return cli_fail(c, rc, "ha %s", what);
	if (text == NULL)
		return CLI_OK;
	if (c->c_json || kinds[k].what == CLOVIS_HA_STATE ||
	    kinds[k].what == CLOVIS_HA_MAP) {
		fputs(text, stdout);
		if (text[0] != '\0' && text[strlen(text) - 1] != '\n')
			putchar('\n');
	} else {
		for (char *l = strtok_r(text, "\n", &save); l != NULL;
		     l = strtok_r(NULL, "\n", &save))
			if (kinds[k].what == CLOVIS_HA_EVENTS)
				event_print(l);
			else
				decision_print(l);
	}
	free(text);
	return CLI_OK;
}

/* Report the operator's request kind (with or without OP_) about t
 * (SERVER or SERVER/DEVICE); the servers check that the map has it. */
static int report_send(struct cli *c, const char *what, const char *t)
{
	struct ha_event ev;
	char kind[32], line[1024];
	const char *slash = strchr(t, '/');
	int k, rc;

	snprintf(kind, sizeof kind, "%s%s",
		 strncasecmp(what, "OP_", 3) == 0 ? "" : "OP_", what);
	k = ha_ev_kind_parse(kind);
	if (k < HA_EV_OP_FAIL || k > HA_EV_OP_THAW)
		return cli_fail(c, -EINVAL, "ha report: '%s' is not an "
				"operator's request (fail, replace, drain, "
				"remove, add, thaw)", what);
	memset(&ev, 0, sizeof ev);
	ev.he_kind = (enum ha_ev_kind)k;
	snprintf(ev.he_reporter, sizeof ev.he_reporter, "operator");
	if ((slash != NULL ? (size_t)(slash - t) : strlen(t)) > HA_NAME_MAX ||
	    (slash != NULL && strlen(slash + 1) > HA_NAME_MAX) || t[0] == '/')
		return cli_fail(c, -EINVAL, "ha report: target '%s': expected "
				"SERVER or SERVER/DEVICE (names of at most %u "
				"characters)", t, HA_NAME_MAX);
	snprintf(ev.he_target, sizeof ev.he_target, "%.*s",
		 (int)(slash != NULL ? slash - t : (ptrdiff_t)strlen(t)), t);
	if (slash != NULL)
		snprintf(ev.he_dev, sizeof ev.he_dev, "%s", slash + 1);
	if (ha_event_format(&ev, line, sizeof line) < 0)
		return cli_fail(c, -EINVAL, "ha report: event too long");
	rc = ha_open(c);
	if (rc != 0)
		return rc;
	rc = cli_call(c, clovis_ha_report(c->c_cl, line));
	if (rc != 0)
		return cli_fail(c, rc, "ha report %s %s", kind, t);
	if (!c->c_quiet)
		printf("reported %s %s\n", ha_ev_kind_name(ev.he_kind), t);
	return CLI_OK;
}

/*
 * strata ha report KIND TARGET[/DEV]: an operator's request as an event
 * (OP_FAIL, OP_REPLACE, OP_DRAIN, OP_REMOVE, OP_ADD, OP_THAW; the OP_
 * may be left out); the analyzer decides what it means.
 */
int cmd_ha_report(struct cli *c)
{
	return report_send(c, c->c_args[0], c->c_args[1]);
}

/*
 * strata server drain|remove|add NAME: the operator's requests about a
 * server of the cluster file, as `ha report` sends them (rule drain and
 * rebalance, ha/analyzer.h).  A server that is not in the cluster file
 * (add ADDR:PORT) cannot join a cluster: refused, nothing sent.
 */
int cmd_server(struct cli *c)
{
	const char *t = c->c_args[0];
	bool add = strcmp(c->c_cmd->cc_name, "add") == 0;

	if (strchr(t, ':') != NULL || strchr(t, '/') != NULL)
		return cli_fail(c, add ? -ENOTSUP : -EINVAL,
				"server %s '%s': %s", c->c_cmd->cc_name, t,
				add ?
				"a server that is not in the cluster file "
				"cannot join a cluster yet: object homes and "
				"device slices follow the file's list, which "
				"cannot change under data (the servers refuse "
				"a changed list; docs/cluster.md \"The server "
				"list\"); `server add NAME` takes back a "
				"server of the file that was drained" :
				"expected the name of a server of the cluster "
				"file");
	return report_send(c, c->c_cmd->cc_name, t);
}
