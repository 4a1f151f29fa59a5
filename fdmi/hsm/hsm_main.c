/*
 * hsm_main.c — strata-hsm, the HSM plugin's program (issue 31 point 4):
 * a Clovis client and FDMI consumer that moves composite objects between
 * tiers by a YAML policy (fdmi/hsm/hsm.h, hsm_policy.h).
 *
 *   strata-hsm --dir DIR | --cluster FILE  --policy FILE [options]
 *       run rounds every `interval` of the policy until SIGINT/SIGTERM
 *   ... --once          one round, then exit
 *   ... --dry-run       print the actions a round would take; move,
 *                       log and ack nothing (implies --once)
 *   ... actions         print the action log
 *   ... undo N          move action N's blocks back to where they were
 *   ... catalog ID      what the catalog holds of object ID (HI:LO or
 *                       @name): its runs of blocks per tier, its heat
 *   strata-hsm --check FILE   parse a policy, print "ok" or its error
 *
 * Options: --db PATH (the catalog; default DIR/hsm.sqlite embedded,
 * ./strata-hsm.sqlite with --cluster), --consumer NAME (default "hsm"),
 * --json (actions as JSON lines, catalog as one JSON object), --rounds N
 * (stop after N rounds).
 *
 * An embedded store is opened by one process at a time: with --dir the
 * program owns the store while it runs (use --once between an
 * application's runs, or link the HSM engine, hsm.h, into the
 * application).  Exit status: 0, 1 on an error (one line on stderr naming
 * what), 2 on a usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "fdmi/hsm/hsm.h"
#include "fdmi/plugin/plugin.h"
#include "fdmi/hsm/hsm_policy.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: strata-hsm (--dir DIR | --cluster FILE) --policy FILE "
		"[--db PATH] [--consumer NAME]\n"
		"                  [--once] [--dry-run] [--json] [--rounds N] "
		"[actions | undo N | catalog ID]\n"
		"       strata-hsm --check POLICY\n");
	return 2;
}

/* Sleep ns, waking early on a signal. */
static void nap(uint64_t ns)
{
	while (ns > 0 && !stop) {
		uint64_t step = ns < 100000000ull ? ns : 100000000ull;
		struct timespec ts = {(time_t)(step / 1000000000ull),
				      (long)(step % 1000000000ull)};

		nanosleep(&ts, NULL);
		ns -= step;
	}
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *cluster = NULL, *policy = NULL, *db = NULL;
	const char *consumer = NULL, *check = NULL, *cmd = NULL;
	bool once = false, dry = false, json = false;
	uint64_t rounds = 0, undo_seq = 0;
	struct clovis_id cat_id = {0, 0};
	static struct hsm_policy pol;
	struct clovis *cl = NULL;
	struct hsm_conf hc = {0};
	struct hsm *h = NULL;
	char dbbuf[4096];
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--dir") == 0 && v) {
			dir = v;
			i++;
		} else if (strcmp(a, "--cluster") == 0 && v) {
			cluster = v;
			i++;
		} else if (strcmp(a, "--policy") == 0 && v) {
			policy = v;
			i++;
		} else if (strcmp(a, "--db") == 0 && v) {
			db = v;
			i++;
		} else if (strcmp(a, "--consumer") == 0 && v) {
			consumer = v;
			i++;
		} else if (strcmp(a, "--check") == 0 && v) {
			check = v;
			i++;
		} else if (strcmp(a, "--rounds") == 0 && v) {
			char *end;

			rounds = strtoull(v, &end, 10);
			if (*end != '\0' || rounds == 0) {
				fprintf(stderr, "strata-hsm: --rounds: \"%s\" "
					"is not a count (1..)\n", v);
				return 2;
			}
			i++;
		} else if (strcmp(a, "--once") == 0) {
			once = true;
		} else if (strcmp(a, "--dry-run") == 0) {
			dry = once = true;
		} else if (strcmp(a, "--json") == 0) {
			json = true;
		} else if (strcmp(a, "actions") == 0 && cmd == NULL) {
			cmd = a;
		} else if (strcmp(a, "undo") == 0 && cmd == NULL && v) {
			char *end;

			cmd = a;
			undo_seq = strtoull(v, &end, 10);
			if (*end != '\0' || undo_seq == 0) {
				fprintf(stderr, "strata-hsm: undo: \"%s\" is "
					"not an action number\n", v);
				return 2;
			}
			i++;
		} else if (strcmp(a, "catalog") == 0 && cmd == NULL && v) {
			cmd = a;
			if (clovis_id_parse(v, &cat_id) != 0) {
				fprintf(stderr, "strata-hsm: catalog: \"%s\" "
					"is not an object id (HI:LO in hex, "
					"or @name)\n", v);
				return 2;
			}
			i++;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage();
			return 0;
		} else {
			fprintf(stderr, "strata-hsm: unknown or incomplete "
				"argument \"%s\"\n", a);
			return usage();
		}
	}
	if (check != NULL) {
		rc = hsm_policy_load(check, &pol);
		if (rc != 0) {
			fprintf(stderr, "strata-hsm: %s\n", clovis_errmsg());
			return 1;
		}
		printf("ok: %u classes, %u rules, %u watermarks\n",
		       pol.hp_nr_classes, pol.hp_nr_rules, pol.hp_nr_marks);
		return 0;
	}
	if ((dir == NULL) == (cluster == NULL)) {
		fprintf(stderr, "strata-hsm: give one of --dir and "
			"--cluster\n");
		return usage();
	}
	if (policy == NULL) {
		fprintf(stderr, "strata-hsm: --policy is required\n");
		return usage();
	}
	rc = hsm_policy_load(policy, &pol);
	if (rc != 0) {
		fprintf(stderr, "strata-hsm: %s\n", clovis_errmsg());
		return 1;
	}
	if (db == NULL) {
		snprintf(dbbuf, sizeof dbbuf, "%s/%s", dir ? dir : ".",
			 dir ? "hsm.sqlite" : "strata-hsm.sqlite");
		db = dbbuf;
	}
	if (plugin_open("strata-hsm", dir, cluster, &cl) != 0)
		return 1;
	hc.hc_cl = cl;
	hc.hc_policy = &pol;
	hc.hc_db = db;
	hc.hc_consumer = consumer;
	hc.hc_dry_run = dry;
	hc.hc_json = json;
	hc.hc_out = stdout;
	rc = hsm_open(&hc, &h);
	if (rc != 0) {
		fprintf(stderr, "strata-hsm: %s\n", clovis_errmsg());
		clovis_fini(cl);
		return 1;
	}
	if (cmd != NULL && strcmp(cmd, "actions") == 0) {
		rc = hsm_actions(h, stdout, json);
	} else if (cmd != NULL && strcmp(cmd, "catalog") == 0) {
		rc = hsm_catalog(h, &cat_id, stdout, json);
	} else if (cmd != NULL) {
		rc = hsm_undo(h, undo_seq);
	} else {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		for (uint64_t r = 0; rc == 0 && !stop; r++) {
			struct hsm_round_stats st;

			rc = hsm_round(h, &st);
			if (rc == 0 && !json)
				printf("round %" PRIu64 ": %" PRIu64 " records,"
				       " %u actions: %u done, %u partial, %u "
				       "failed, %" PRIu64 " bytes moved%s\n",
				       r + 1, st.hr_records, st.hr_picked,
				       st.hr_done, st.hr_partial, st.hr_failed,
				       st.hr_bytes, dry ? " (dry run)" : "");
			fflush(stdout);
			if (once || (rounds != 0 && r + 1 >= rounds))
				break;
			nap(pol.hp_interval_ns);
		}
	}
	if (rc != 0)
		fprintf(stderr, "strata-hsm: %s\n", clovis_errmsg());
	hsm_close(h);
	clovis_fini(cl);
	return rc == 0 ? 0 : 1;
}
