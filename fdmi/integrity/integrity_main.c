/*
 * integrity_main.c — strata-integrity, the integrity plugin's program
 * (issue 31 point 5): a Clovis client and FDMI consumer that verifies
 * the objects written recently, once each (fdmi/integrity/integrity.h).
 *
 *   strata-integrity (--dir DIR | --cluster FILE) [--state PATH]
 *                    [--consumer NAME] [--delay S] [--interval S]
 *                    [--once | --rounds N]
 *       a round every --interval seconds (default 10) until SIGINT or
 *       SIGTERM: the records folded into the pending set, then every
 *       pending object whose last write is at least --delay seconds old
 *       (default 5) verified by its scrub (clovis_obj_scrub(): its home
 *       runs it in cluster mode); one line per object checked, "ID BYTES
 *       bytes: RESULT", then one line for the round
 *   strata-integrity --state PATH log [--json]   (or --dir DIR log)
 *       the log of every check, oldest first
 *
 * --state: the state file (SQLite; default DIR/integrity.sqlite, with
 * --cluster ./strata-integrity.sqlite).  An
 * embedded store is opened by one process at a time: run --once between
 * an application's runs, or as the store's only process.  Exit status:
 * 0, 1 on an error (one line on stderr naming what), 2 on a usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clovis/clovis.h"
#include "fdmi/integrity/integrity.h"
#include "fdmi/plugin/plugin.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: strata-integrity (--dir DIR | --cluster FILE) "
		"[--state PATH] [--consumer NAME]\n"
		"                        [--delay S] [--interval S] "
		"[--once | --rounds N]\n"
		"       strata-integrity (--state PATH | --dir DIR) log "
		"[--json]\n");
	return 2;
}

/* Sleep ns, waking early on a signal. */
static void nap(uint64_t ns)
{
	while (ns > 0 && !stop) {
		uint64_t step = ns < 100000000ull ? ns : 100000000ull;
		struct timespec ts = {0, (long)step};

		nanosleep(&ts, NULL);
		ns -= step;
	}
}

/* Seconds (digits, at most a day, with an optional "s"); false when s is
 * not one. */
static bool secs_parse(const char *s, uint64_t *ns)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || !(*end == '\0' || strcmp(end, "s") == 0) ||
	    v > 86400)
		return false;
	*ns = v * 1000000000ull;
	return true;
}

/* The rounds: until a signal, --once or --rounds. */
static int run(const struct integ_conf *ic, uint64_t interval_ns,
	       bool once, uint64_t rounds)
{
	struct integ *g = NULL;
	int rc = integ_open(ic, &g);

	if (rc != 0)
		return rc;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (uint64_t r = 0; rc == 0 && !stop; r++) {
		struct integ_round_stats st;

		rc = integ_round(g, &st);
		if (rc == 0)
			printf("round %" PRIu64 ": %" PRIu64 " records, %u "
			       "checked: %u ok, %u repaired, %u unrepairable, "
			       "%u not checkable, %u not checked; %" PRIu64
			       " pending%s\n", r + 1, st.ir_records,
			       st.ir_checked, st.ir_ok, st.ir_repaired,
			       st.ir_unrepairable, st.ir_plain, st.ir_errors,
			       st.ir_pending, st.ir_rescan ?
			       " (after a rescan)" : "");
		fflush(stdout);
		if (once || (rounds != 0 && r + 1 >= rounds))
			break;
		nap(interval_ns);
	}
	integ_close(g);
	return rc;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *state = NULL, *consumer = NULL;
	const char *cluster = NULL;
	bool once = false, json = false, log = false;
	uint64_t rounds = 0, delay_ns = 5000000000ull;
	uint64_t interval_ns = 10000000000ull;
	struct integ_conf ic = {0};
	struct clovis *cl = NULL;
	char statebuf[4096];
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--dir") == 0 && v) {
			dir = argv[++i];
		} else if (strcmp(a, "--cluster") == 0 && v) {
			cluster = argv[++i];
		} else if (strcmp(a, "--state") == 0 && v) {
			state = argv[++i];
		} else if (strcmp(a, "--consumer") == 0 && v) {
			consumer = argv[++i];
		} else if ((strcmp(a, "--delay") == 0 ||
			    strcmp(a, "--interval") == 0) && v) {
			uint64_t *dst = a[2] == 'd' ? &delay_ns : &interval_ns;

			if (!secs_parse(v, dst) || (a[2] == 'i' && *dst == 0)) {
				fprintf(stderr, "strata-integrity: %s: \"%s\" "
					"is not a number of seconds (%s..86400)"
					"\n", a, v, a[2] == 'd' ? "0" : "1");
				return 2;
			}
			i++;
		} else if (strcmp(a, "--rounds") == 0 && v) {
			char *end;

			rounds = strtoull(v, &end, 10);
			if (*v < '0' || *v > '9' || *end != '\0' ||
			    rounds == 0) {
				fprintf(stderr, "strata-integrity: --rounds: "
					"\"%s\" is not a count (1..)\n", v);
				return 2;
			}
			i++;
		} else if (strcmp(a, "--once") == 0) {
			once = true;
		} else if (strcmp(a, "--json") == 0) {
			json = true;
		} else if (strcmp(a, "log") == 0 && !log) {
			log = true;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage();
			return 0;
		} else {
			fprintf(stderr, "strata-integrity: unknown or "
				"incomplete argument \"%s\"\n", a);
			return usage();
		}
	}
	if (state == NULL && (dir != NULL || cluster != NULL)) {
		snprintf(statebuf, sizeof statebuf, "%s/%s", dir ? dir : ".",
			 dir ? "integrity.sqlite" : "strata-integrity.sqlite");
		state = statebuf;
	}
	if (log) {
		if (state == NULL) {
			fprintf(stderr, "strata-integrity: log: give --state or "
				"--dir\n");
			return usage();
		}
		rc = integ_log_print(state, stdout, json);
		if (rc != 0)
			fprintf(stderr, "strata-integrity: %s\n",
				clovis_errmsg());
		return rc == 0 ? 0 : 1;
	}
	if ((dir == NULL) == (cluster == NULL)) {
		fprintf(stderr, "strata-integrity: give one of --dir and "
			"--cluster\n");
		return usage();
	}
	if (json) {
		fprintf(stderr, "strata-integrity: --json is an option of "
			"log\n");
		return usage();
	}
	if (once && rounds != 0) {
		fprintf(stderr, "strata-integrity: give --once or --rounds, "
			"not both\n");
		return usage();
	}
	if (plugin_open("strata-integrity", dir, cluster, &cl) != 0)
		return 1;
	ic.ic_cl = cl;
	ic.ic_state = state;
	ic.ic_consumer = consumer;
	ic.ic_delay_ns = delay_ns;
	ic.ic_out = stdout;
	rc = run(&ic, interval_ns, once, rounds);
	if (rc != 0)
		fprintf(stderr, "strata-integrity: %s\n", clovis_errmsg());
	clovis_fini(cl);
	return rc == 0 ? 0 : 1;
}
