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
#include <stdio.h>
#include <string.h>

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
