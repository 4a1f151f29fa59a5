/*
 * attridx_main.c — strata-attridx, the attribute-index plugin's program
 * (issue 31 point 5): a Clovis client and FDMI consumer that keeps a
 * Strata index of the store's objects by container, tier and size
 * (fdmi/attridx/attridx.h), and queries it.
 *
 *   strata-attridx (--dir DIR | --cluster FILE) [--index ID]
 *                  [--consumer NAME] [--max-bytes N] [--no-ack]
 *                  [--once | --rounds N]
 *       fold the FDMI records into the index, a round every second
 *       until SIGINT/SIGTERM (--once: one round; --rounds N: N rounds)
 *   strata-attridx (--dir DIR | --cluster FILE) [--index ID] query
 *                  [--container ID]
 *                  [--tier T] [--size-min B] [--size-max B] [--json]
 *       the objects the index holds that match, in key order: one line
 *       each, "ID TIER SIZE" (JSON lines with --json)
 *
 * An embedded store is opened by one process at a time: run it between an
 * application's runs (--once), or as the store's only process.  Exit
 * status: 0, 1 on an error (one line on stderr naming what), 2 on a usage
 * error.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clovis/clovis.h"
#include "fdmi/attridx/attridx.h"
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
		"usage: strata-attridx (--dir DIR | --cluster FILE) [--index ID]"
		" [--consumer NAME]\n"
		"                      [--max-bytes N] [--no-ack] "
		"[--once | --rounds N]\n"
		"       strata-attridx (--dir DIR | --cluster FILE) [--index ID]"
		" query\n"
		"                      [--container ID] [--tier T]\n"
		"                      [--size-min B] [--size-max B] [--json]\n");
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

/* A byte count: digits, then an optional K, M, G or T (powers of 1024,
 * with or without "iB").  false when s is not one. */
static bool bytes_parse(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	char *end;
	uint64_t v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return false;
	if (*end != '\0') {
		const char *u = strchr(units, end[0] & ~0x20);
		int sh;

		if (u == NULL || end[0] == '\0')
			return false;
		sh = 10 * (int)(u - units + 1);
		if (!(end[1] == '\0' || strcmp(end + 1, "iB") == 0 ||
		      strcmp(end + 1, "B") == 0))
			return false;
		if (v > UINT64_MAX >> sh)
			return false;
		v <<= sh;
	}
	*out = v;
	return true;
}

/* A count: digits only.  false when s is not one. */
static bool count_parse(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static int tier_parse(const char *s)
{
	static const char *const names[] = {"nvram", "flash", "sas", "smr"};

	for (int t = 0; t < (int)CLOVIS_TIER_NR; t++)
		if (strcmp(s, names[t]) == 0)
			return t;
	return strcmp(s, "-") == 0 || strcmp(s, "none") == 0 ?
	       (int)ATTRIDX_TIER_NONE : -1;
}

struct print_ctx {
	bool pc_json;
	uint64_t pc_n;
};

static int print_one(void *arg, const struct attridx_entry *e)
{
	struct print_ctx *pc = arg;
	char id[CLOVIS_ID_STR_LEN], cont[CLOVIS_ID_STR_LEN];

	clovis_id_format(&e->ae_id, id);
	clovis_id_format(&e->ae_container, cont);
	if (pc->pc_json)
		printf("{\"id\": \"%s\", \"container\": \"%s\", \"tier\": "
		       "\"%s\", \"size\": %" PRIu64 "}\n", id, cont,
		       attridx_tier_name(e->ae_tier), e->ae_size);
	else
		printf("%s %s %" PRIu64 "\n", id,
		       attridx_tier_name(e->ae_tier), e->ae_size);
	pc->pc_n++;
	return 0;
}

/* The rounds: until a signal, --once or --rounds. */
static int run(const struct attridx_conf *ac, bool once, uint64_t rounds)
{
	struct attridx *a = NULL;
	int rc = attridx_open(ac, &a);

	if (rc != 0)
		return rc;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (uint64_t r = 0; rc == 0 && !stop; r++) {
		struct attridx_round_stats st;

		rc = attridx_round(a, &st);
		if (rc == 0)
			printf("round %" PRIu64 ": %" PRIu64 " records, %"
			       PRIu64 " objects changed%s\n", r + 1,
			       st.ar_records, st.ar_objects,
			       st.ar_rebuild ? ", after a rebuild" : "");
		fflush(stdout);
		if (once || (rounds != 0 && r + 1 >= rounds))
			break;
		nap(1000000000ull);
	}
	attridx_close(a);
	return rc;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *index = ATTRIDX_INDEX, *consumer = NULL;
	const char *cluster = NULL;
	bool once = false, json = false, query = false, no_ack = false;
	uint64_t rounds = 0, max_bytes = 0;
	struct attridx_query q = {.aq_tier = -1, .aq_size_max = UINT64_MAX};
	struct attridx_conf ac = {0};
	struct clovis *cl = NULL;
	struct print_ctx pc = {0};
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool qopt = strcmp(a, "--container") == 0 ||
			    strcmp(a, "--tier") == 0 ||
			    strcmp(a, "--size-min") == 0 ||
			    strcmp(a, "--size-max") == 0 ||
			    strcmp(a, "--json") == 0;

		if (qopt && !query) {
			fprintf(stderr, "strata-attridx: %s is an option of "
				"query\n", a);
			return usage();
		}
		if (strcmp(a, "--dir") == 0 && v) {
			dir = argv[++i];
		} else if (strcmp(a, "--cluster") == 0 && v) {
			cluster = argv[++i];
		} else if (strcmp(a, "--index") == 0 && v) {
			index = argv[++i];
		} else if (strcmp(a, "--consumer") == 0 && v && !query) {
			consumer = argv[++i];
		} else if (strcmp(a, "--once") == 0 && !query) {
			once = true;
		} else if (strcmp(a, "--no-ack") == 0 && !query) {
			no_ack = true;
		} else if ((strcmp(a, "--rounds") == 0 ||
			    strcmp(a, "--max-bytes") == 0) && v && !query) {
			bool nr = a[2] == 'r';
			uint64_t *dst = nr ? &rounds : &max_bytes;

			if (!(nr ? count_parse(v, dst) : bytes_parse(v, dst)))
				*dst = 0;
			if (*dst == 0) {
				fprintf(stderr, "strata-attridx: %s: \"%s\" is "
					"not a count (1..)\n", a, v);
				return 2;
			}
			i++;
		} else if (strcmp(a, "query") == 0 && !query) {
			query = true;
		} else if (strcmp(a, "--container") == 0 && v) {
			if (clovis_id_parse(v, &q.aq_container) != 0) {
				fprintf(stderr, "strata-attridx: --container: "
					"\"%s\" is not an id (HI:LO or "
					"@name)\n", v);
				return 2;
			}
			q.aq_container_set = true;
			i++;
		} else if (strcmp(a, "--tier") == 0 && v) {
			q.aq_tier = tier_parse(v);
			if (q.aq_tier < 0) {
				fprintf(stderr, "strata-attridx: --tier: \"%s\""
					" is not a tier (nvram, flash, sas, "
					"smr)\n", v);
				return 2;
			}
			i++;
		} else if ((strcmp(a, "--size-min") == 0 ||
			    strcmp(a, "--size-max") == 0) && v) {
			uint64_t *dst = a[8] == 'i' ? &q.aq_size_min :
				        &q.aq_size_max;

			if (!bytes_parse(v, dst)) {
				fprintf(stderr, "strata-attridx: %s: \"%s\" is "
					"not a byte count\n", a, v);
				return 2;
			}
			i++;
		} else if (strcmp(a, "--json") == 0) {
			json = true;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage();
			return 0;
		} else {
			fprintf(stderr, "strata-attridx: unknown or incomplete "
				"argument \"%s\"\n", a);
			return usage();
		}
	}
	if ((dir == NULL) == (cluster == NULL)) {
		fprintf(stderr, "strata-attridx: give one of --dir and "
			"--cluster\n");
		return usage();
	}
	if (once && rounds != 0) {
		fprintf(stderr, "strata-attridx: give --once or --rounds, not "
			"both\n");
		return usage();
	}
	if (q.aq_size_min > q.aq_size_max) {
		fprintf(stderr, "strata-attridx: --size-min above --size-max\n");
		return usage();
	}
	if (clovis_id_parse(index, &ac.ac_index) != 0) {
		fprintf(stderr, "strata-attridx: --index: \"%s\" is not an id "
			"(HI:LO or @name)\n", index);
		return 2;
	}
	if (plugin_open("strata-attridx", dir, cluster, &cl) != 0)
		return 1;
	if (query) {
		pc.pc_json = json;
		rc = attridx_query(cl, &ac.ac_index, &q, print_one, &pc);
	} else {
		ac.ac_cl = cl;
		ac.ac_consumer = consumer;
		ac.ac_max_bytes = max_bytes;
		ac.ac_no_ack = no_ack;
		ac.ac_out = stdout;
		rc = run(&ac, once, rounds);
	}
	if (rc != 0)
		fprintf(stderr, "strata-attridx: %s\n", clovis_errmsg());
	clovis_fini(cl);
	return rc == 0 ? 0 : 1;
}
