/*
 * cli_walk.c — "strata repair", "strata rebalance" and "strata scrub": the
 * store-wide walks over every unit of pdclust and mirror objects.
 *
 * Each command runs one walk (clovis_repair(), clovis_rebalance(),
 * clovis_scrub()), shows a progress line on a terminal, and prints a
 * summary: units visited, bytes read, units rebuilt or moved, corrupt and
 * unrepairable units, devices read from, elapsed time and rate, and
 * whether it resumed a walk that a crash or a stop interrupted.  SIGINT and
 * SIGTERM stop a walk cleanly after its current batch; it keeps its place
 * and the next run of the command resumes it.
 *
 * Cluster mode (strata --cluster F): every server walks the objects homed
 * on it at once (SOP_WALK) and the summary adds their figures up (elapsed:
 * the longest); no progress line, and a signal does not stop the servers'
 * walks (kill the command and they still run to their end).  A server
 * that cannot be reached fails the command with its code, named in the
 * message, after the others finished.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "clovis/cli/cli.h"

/* Set by SIGINT or SIGTERM while a walk runs. */
static volatile sig_atomic_t walk_stop;

/* A walk entry point of clovis.h. */
typedef int (*walk_fn)(struct clovis *cl, clovis_progress_fn fn, void *arg,
		       struct clovis_walk_stats *st);

/* Ask the running walk to stop at its next batch. */
static void walk_signal(int sig)
{
	(void)sig;
	walk_stop = 1;
}

/* Progress of the walk: redraw the line; stop when a signal came. */
static int walk_progress(void *arg, uint64_t done, uint64_t total)
{
	cli_progress_set(arg, done, total);
	return walk_stop ? 1 : 0;
}

/*
 * Catch SIGINT and SIGTERM into walk_stop; old keeps what was there.  A
 * SIGINT the shell ignores (a background job) stays ignored.
 */
static void signals_catch(struct sigaction old[2])
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = walk_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old[0]);
	if (old[0].sa_handler == SIG_IGN)
		sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &sa, &old[1]);
}

/* Put back the handlers signals_catch() replaced. */
static void signals_restore(const struct sigaction old[2])
{
	sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &old[1], NULL);
}

/* Print the walk's figures as one JSON object. */
static void summary_json(const char *name, const struct clovis_walk_stats *st,
			 double sec, double mbs, bool complete)
{
	printf("{\"walk\": \"%s\", \"complete\": %s, \"resumed\": %s, "
	       "\"units\": %llu, \"bytes\": %llu, \"rebuilt\": %llu, "
	       "\"moved\": %llu, \"corrupt\": %llu, \"unrepairable\": %llu, "
	       "\"devices_read\": %u, \"groups_sharing_server\": %llu, "
	       "\"elapsed_ns\": %llu, "
	       "\"seconds\": %.3f, \"mib_per_s\": %.1f, "
	       "\"walk_total\": {\"units\": %llu, \"rebuilt\": %llu, "
	       "\"moved\": %llu, \"corrupt\": %llu, "
	       "\"unrepairable\": %llu}}\n", name,
	       complete ? "true" : "false", st->ws_resumed ? "true" : "false",
	       (unsigned long long)st->ws_units,
	       (unsigned long long)st->ws_bytes,
	       (unsigned long long)st->ws_rebuilt,
	       (unsigned long long)st->ws_moved,
	       (unsigned long long)st->ws_corrupt,
	       (unsigned long long)st->ws_unrepairable, st->ws_devices,
	       (unsigned long long)st->ws_shared,
	       (unsigned long long)st->ws_elapsed_ns, sec, mbs,
	       (unsigned long long)st->ws_walk_units,
	       (unsigned long long)st->ws_walk_rebuilt,
	       (unsigned long long)st->ws_walk_moved,
	       (unsigned long long)st->ws_walk_corrupt,
	       (unsigned long long)st->ws_walk_unrepairable);
}

/* Print the walk's figures as one line of text; a resumed walk adds the
 * whole walk's totals (this call's figures alone would undercount it). */
static void summary_text(const char *name, const struct clovis_walk_stats *st,
			 double sec, double mbs)
{
	char bytes[32];

	printf("%s%s: %llu units, %s read, %llu rebuilt, %llu moved, %llu "
	       "corrupt, %llu unrepairable, %u devices read from, %.2f s, "
	       "%.1f MiB/s\n", name, st->ws_resumed ? " (resumed)" : "",
	       (unsigned long long)st->ws_units,
	       cli_human(st->ws_bytes, bytes, sizeof bytes),
	       (unsigned long long)st->ws_rebuilt,
	       (unsigned long long)st->ws_moved,
	       (unsigned long long)st->ws_corrupt,
	       (unsigned long long)st->ws_unrepairable, st->ws_devices, sec,
	       mbs);
	if (st->ws_shared > 0)
		printf("%s: %llu groups keep two units on one server (the pool "
		       "has servers enough: rebalance with every server up "
		       "spreads them)\n", name,
		       (unsigned long long)st->ws_shared);
	if (st->ws_resumed)
		printf("%s, whole walk: %llu units, %llu rebuilt, %llu moved, "
		       "%llu corrupt, %llu unrepairable\n", name,
		       (unsigned long long)st->ws_walk_units,
		       (unsigned long long)st->ws_walk_rebuilt,
		       (unsigned long long)st->ws_walk_moved,
		       (unsigned long long)st->ws_walk_corrupt,
		       (unsigned long long)st->ws_walk_unrepairable);
}

/* Print the summary of a walk that ended with rc. */
static void walk_summary(const struct cli *c, const char *name,
			 const struct clovis_walk_stats *st, int rc)
{
	double sec = (double)st->ws_elapsed_ns / 1e9;
	double mbs = sec > 0 ? (double)st->ws_bytes / sec / 1048576.0 : 0;

	if (c->c_json)
		summary_json(name, st, sec, mbs, rc == 0);
	else if (!c->c_quiet)
		summary_text(name, st, sec, mbs);
}

/*
 * Run one walk with progress and signals, then report it.  The summary is
 * printed also when the walk stopped (-EINTR) or found unrepairable units
 * (-EIO), since its figures say how far it got; the failure follows on
 * stderr.
 */
static int walk_run(struct cli *c, walk_fn fn, const char *name)
{
	struct clovis_walk_stats st;
	struct cli_progress p;
	struct sigaction old[2];
	int rc;

	memset(&st, 0, sizeof st);
	walk_stop = 0;
	cli_progress_init_units(&p, c, name);
	signals_catch(old);
	rc = cli_call(c, fn(c->c_cl, walk_progress, &p, &st));
	signals_restore(old);
	cli_progress_end(&p, rc == 0);
	if (rc == 0 || rc == -EIO || rc == -EINTR)
		walk_summary(c, name, &st, rc);
	if (rc < 0)
		return cli_fail(c, rc, "%s", name);
	return CLI_OK;
}

/* strata repair: rebuild the units of failed devices elsewhere. */
int cmd_repair(struct cli *c)
{
	return walk_run(c, clovis_repair, "repair");
}

/* strata rebalance: move units back onto replaced devices. */
int cmd_rebalance(struct cli *c)
{
	return walk_run(c, clovis_rebalance, "rebalance");
}

/* strata scrub: verify every unit and rewrite the damaged ones. */
int cmd_scrub(struct cli *c)
{
	return walk_run(c, clovis_scrub, "scrub");
}
