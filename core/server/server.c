/*
 * server.c — the strata-server daemon.
 *
 *   strata-server --config FILE --name NAME [--foreground]
 *                 [--pid-file F] [--log-file F] [--log-level N] [--model]
 *                 [--status-file F]
 *
 * Reads the cluster file, finds its own entry by NAME, detaches (unless
 * --foreground), writes the pid file, starts the server (srv_start(): opens
 * or creates its store, then listens) and waits for SIGTERM or SIGINT; then
 * stops taking requests, lets those in flight finish (srv_stop()), closes
 * the store cleanly and removes the pid file.  A server killed with SIGKILL
 * is simply started again: the store recovers to every durable commit, and
 * a stale pid file (naming a dead process) is replaced.
 *
 * --model turns the device model on for every tier (class defaults) for
 * this run, as strata --model does for an embedded store.
 *
 * --status-file F: one line saying what the server is doing, rewritten
 * whole (write and rename) when it changes, for whoever waits on its start
 * (strata cluster up):
 *   "starting MIB TEXT"  opening or creating its store; MIB is the MiB the
 *                        process has read and written so far (it grows
 *                        while the store's devices are written out: a
 *                        start that makes progress), TEXT says what, with
 *                        the device files made so far
 *   "serving 0 ADDR:PORT"  started, taking requests
 *   "failed 0 MESSAGE"   the start failed (the message is in the log too)
 * Checked every SRV_STATUS_EVERY_MS while starting; removed at a clean stop.
 *
 * Fault points (strata-server-test, STRATA_FAULT), per server NAME, hit
 * just before the store is opened: srv.start.slow.NAME writes a scratch
 * file beside the store at 1 MiB/s for SRV_STATUS_SLOW_MS (a start slowed
 * by a busy disk, making progress), srv.start.stall.NAME waits without any
 * progress, srv.start.die.NAME kills the process (SIGKILL).
 *
 * This file is a composition root (scripts/check_layers.sh): it assembles
 * the layers above the server into it (struct srv_parts) — the unit
 * layouts (layouts/stripe.h) for its engine and dtm's participant
 * (dtm/dtm_srv.h) — so it may include any room.
 *
 * Running again from the start (srv_restart(): the HA agent asks when its
 * home was taken over while it ran, ha/srv_home.h): the main thread stops
 * the server as for SIGTERM, then execs this program again with the same
 * arguments, keeping its pid (and its pid file), its standard streams and
 * its session; every other descriptor is closed.  The new image does not
 * detach again (environment STRATA_SERVER_RESTARTED, removed as it
 * starts).
 *
 * SIGTERM or SIGINT during the start (before "serving") ends the process
 * at once, logging the phase of the start it was in (srv_start_phase()); a
 * start still going after 60 s logs its phase, and again every 60 s (the
 * start watcher below).
 *
 * Exit status: 0 after a clean stop, 1 when it could not start (the reason
 * on stderr or in the log file), 2 for bad arguments, 3 when requests
 * still ran at the stop.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "addb/addb.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/server/msg.h"
#include "core/server/peers.h"
#include "core/server/srv.h"
#include "dtm/dtm_srv.h"
#include "fdmi/srv_fdmi.h"
#include "ha/srv_ha.h"
#include "layouts/stripe.h"

struct srv_args {
	const char *sa_config;
	const char *sa_name;
	const char *sa_pid_file;
	const char *sa_log_file;
	int sa_log_level;
	bool sa_foreground;
	bool sa_model;
	const char *sa_walk;   /* --walk KIND: management client */
	const char *sa_status_file;
	const char *sa_metrics; /* --metrics LISTEN: /metrics (addb/addb.h) */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: strata-server --config FILE --name NAME "
		"[--foreground] [--pid-file F] [--log-file F] "
		"[--log-level 0-4] [--model] [--status-file F] "
		"[--metrics [ADDR:]PORT]\n"
		"       strata-server --config FILE --walk repair|rebalance|scrub "
		"[--name NAME]\n");
}

static int parse_args(int argc, char **argv, struct srv_args *a)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"name", required_argument, NULL, 'n'},
		{"foreground", no_argument, NULL, 'f'},
		{"pid-file", required_argument, NULL, 'p'},
		{"log-file", required_argument, NULL, 'l'},
		{"log-level", required_argument, NULL, 'v'},
		{"model", no_argument, NULL, 'm'},
		{"walk", required_argument, NULL, 'w'},
		{"status-file", required_argument, NULL, 's'},
		{"metrics", required_argument, NULL, 'M'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int o;

	a->sa_log_level = LOG_WARN;
	while ((o = getopt_long(argc, argv, "c:n:fp:l:v:mw:s:M:h", opts,
				NULL)) != -1) {
		switch (o) {
		case 'c': a->sa_config = optarg; break;
		case 'n': a->sa_name = optarg; break;
		case 'f': a->sa_foreground = true; break;
		case 'p': a->sa_pid_file = optarg; break;
		case 'l': a->sa_log_file = optarg; break;
		case 'v': a->sa_log_level = atoi(optarg); break;
		case 'm': a->sa_model = true; break;
		case 'w': a->sa_walk = optarg; break;
		case 's': a->sa_status_file = optarg; break;
		case 'M': a->sa_metrics = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (a->sa_config == NULL || (a->sa_name == NULL && a->sa_walk == NULL) ||
	    optind != argc ||
	    a->sa_log_level < 0 || a->sa_log_level > LOG_DBG)
		return -1;
	return 0;
}

/*
 * --walk KIND: ask every server (or the one named) to run a repair,
 * rebalance or scrub of its engine (SOP_WALK), one after the other, and
 * print what each did.  Each server walks the units of the objects homed
 * on it, on every server's devices (docs/cluster.md).  Exit 0 when every
 * server answered success.
 */
static int walk_all(const struct clu_conf *c, const char *kind,
		    const char *only)
{
	uint32_t k = strcmp(kind, "repair") == 0 ? SWK_REPAIR :
		     strcmp(kind, "rebalance") == 0 ? SWK_REBALANCE :
		     strcmp(kind, "scrub") == 0 ? SWK_SCRUB : 0;
	WalkReq q = WALK_REQ__INIT;
	struct msg_buf b = {0};
	struct peers *p = NULL;
	int bad = 0;

	if (k == 0) {
		fprintf(stderr, "strata-server: --walk %s: expected repair, "
			"rebalance or scrub\n", kind);
		return 2;
	}
	q.kind = k;
	if (msg_pack(&q.base, &b) != 0 || peers_create(&p, c, NULL) != 0) {
		fprintf(stderr, "strata-server: --walk: %s\n", err_msg());
		free(b.mb_p);
		return 1;
	}
	for (uint32_t i = 0; i < c->cc_nr_servers; i++) {
		const char *name = c->cc_servers[i].cs_name;
		struct rpc_result res;
		WalkStats *ws = NULL;
		Reply *rp = NULL;
		int rc;

		if (only != NULL && strcmp(only, name) != 0)
			continue;
		rc = peers_call_ms(p, i, SOP_WALK, b.mb_p, b.mb_len, NULL,
				   SRV_WALK_CALL_MS, &res);
		if (rc == 0)
			rc = msg_reply_decode(res.rr_body, res.rr_len, 0, &rp);
		if (rc == 0 && msg_walk_stats_decode(rp, &ws) != 0)
			rc = err_set(-EPROTO, "server %s: bad walk answer: %s",
				     name, err_msg());
		if (rc == 0 && ws->walk_unrepairable > 0)
			rc = err_set(-EIO, "server %s: %" PRIu64 " units could "
				     "not be rebuilt", name,
				     ws->walk_unrepairable);
		if (ws != NULL)
			printf("%s: %s: %" PRIu64 " units, %" PRIu64 " rebuilt, %"
			       PRIu64 " moved, %" PRIu64 " corrupt, %" PRIu64
			       " unrepairable, %.2f s\n", name, kind, ws->units,
			       ws->rebuilt, ws->moved, ws->corrupt,
			       ws->unrepairable, ws->elapsed_ns / 1e9);
		if (rc != 0)
			printf("%s: %s failed: %s (%d)\n", name, kind,
			       err_msg(), rc);
		bad += rc != 0;
		if (ws != NULL)
			walk_stats__free_unpacked(ws, NULL);
		if (rp != NULL)
			reply__free_unpacked(rp, NULL);
		free(res.rr_body);
	}
	peers_destroy(p);
	free(b.mb_p);
	return bad == 0 ? 0 : 1;
}

/* Write our pid; refuse when the file names a live process. */
static int pid_file_write(const char *path)
{
	char buf[32];
	FILE *f = fopen(path, "r");
	long old = 0;

	if (f != NULL) {
		if (fscanf(f, "%ld", &old) == 1 && old > 0 && old != getpid() &&
		    kill((pid_t)old, 0) == 0) {
			fclose(f);
			return err_set(-EEXIST, "pid file %s: process %ld is "
				       "running", path, old);
		}
		fclose(f);
	}
	f = fopen(path, "w");
	if (f == NULL)
		return err_set(-errno, "pid file %s: %s", path, strerror(errno));
	snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	fputs(buf, f);
	return fclose(f) == 0 ? 0 : err_set(-EIO, "pid file %s: write", path);
}

/* The detached child's end of the pipe its parent waits on (-1: none). */
static int detach_fd = -1;

/*
 * Detach: fork, new session, stdin from /dev/null.  The parent exits only
 * when the child says so (detached()): after its pid file is written, so
 * that whoever started it (strata cluster up) finds the pid file as soon
 * as the start command returns, however late the child runs on a loaded
 * host (it counted a pid file still missing 3 s after the start as a
 * server that gave up: `cluster up` failed so once in a loaded make
 * check).  Exit status 0 once the child is under way, 1 if it failed
 * first (its message is in the log).
 */
static int daemonize(void)
{
	int fd, p[2];
	pid_t pid;

	if (pipe(p) != 0)
		return err_set(-errno, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		return err_set(-errno, "fork: %s", strerror(errno));
	if (pid > 0) {
		char ok = 0;

		close(p[1]);
		while (read(p[0], &ok, 1) < 0 && errno == EINTR)
			;
		_exit(ok == 1 ? 0 : 1);
	}
	close(p[0]);
	detach_fd = p[1];
	if (setsid() < 0)
		return err_set(-errno, "setsid: %s", strerror(errno));
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	return 0;
}

/* Tell the waiting parent (daemonize()) whether the start got this far
 * (ok) or failed; once. */
static void detached(bool ok)
{
	char b = ok ? 1 : 0;

	if (detach_fd < 0)
		return;
	if (write(detach_fd, &b, 1) != 1)
		LOG_DEBUG("strata-server: could not tell the parent");
	close(detach_fd);
	detach_fd = -1;
}

static int log_to_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		return err_set(-errno, "log file %s: %s", path, strerror(errno));
	dup2(fd, STDERR_FILENO);
	close(fd);
	setvbuf(stderr, NULL, _IOLBF, 0);
	return 0;
}

/* What --status-file reports while the server starts (status_start()). */
static struct {
	const char *st_path;       /* NULL: no status file */
	const char *st_data_dir;
	pthread_t st_thr;
	pthread_mutex_t st_lock;
	pthread_cond_t st_cond;
	bool st_stop;              /* under st_lock */
	bool st_running;
	char st_last[512];         /* the line last written */
} status_g = { .st_lock = PTHREAD_MUTEX_INITIALIZER,
	       .st_cond = PTHREAD_COND_INITIALIZER };

/* Replace the status file with line (written beside it, then renamed, so a
 * reader sees the old line or the new one, whole). */
static void status_write(const char *line)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (strcmp(line, status_g.st_last) == 0)
		return;
	snprintf(status_g.st_last, sizeof status_g.st_last, "%s", line);
	snprintf(tmp, sizeof tmp, "%s.tmp", status_g.st_path);
	f = fopen(tmp, "w");
	if (f == NULL) {
		LOG_WARNING("strata-server: status file %s: %s", tmp,
			 strerror(errno));
		return;
	}
	fprintf(f, "%s\n", line);
	if (fclose(f) != 0 || rename(tmp, status_g.st_path) != 0)
		LOG_WARNING("strata-server: status file %s: %s",
			 status_g.st_path, strerror(errno));
}

/* MiB this process has read and written so far (/proc/self/io rchar +
 * wchar): the store's devices are written out as it is created.  Idle
 * background calls add a few hundred bytes a second, far below a MiB in
 * the minute `cluster up` waits for progress. */
static uint64_t status_io_mib(void)
{
	unsigned long long rc = 0, wc = 0, v;
	char key[32];
	FILE *f = fopen("/proc/self/io", "r");

	while (f != NULL && fscanf(f, "%31s %llu", key, &v) == 2) {
		if (strcmp(key, "rchar:") == 0)
			rc = v;
		else if (strcmp(key, "wchar:") == 0)
			wc = v;
	}
	if (f != NULL)
		fclose(f);
	return (uint64_t)((rc + wc) >> 20);
}

/* Device files made so far in DATA_DIR/devices. */
static unsigned status_dev_files(void)
{
	char path[PATH_MAX];
	struct dirent *e;
	unsigned n = 0;
	DIR *d;

	snprintf(path, sizeof path, "%s/devices", status_g.st_data_dir);
	d = opendir(path);
	while (d != NULL && (e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	if (d != NULL)
		closedir(d);
	return n;
}

/* Write the starting line as of now. */
static void status_tick(void)
{
	char line[512];
	uint64_t mib = status_io_mib();

	snprintf(line, sizeof line, "starting %" PRIu64 " opening store %s: "
		 "%u device files, %" PRIu64 " MiB read and written", mib,
		 status_g.st_data_dir, status_dev_files(), mib);
	status_write(line);
}

/* The starting line, every SRV_STATUS_EVERY_MS until status_end(). */
static void *status_main(void *arg)
{
	struct timespec ts;

	(void)arg;
	pthread_mutex_lock(&status_g.st_lock);
	while (!status_g.st_stop) {
		status_tick();
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)SRV_STATUS_EVERY_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&status_g.st_cond, &status_g.st_lock,
				       &ts);
	}
	pthread_mutex_unlock(&status_g.st_lock);
	return NULL;
}

/* Start reporting progress into path (NULL: no status file). */
static void status_start(const char *path, const char *data_dir)
{
	if (path == NULL)
		return;
	status_g.st_path = path;
	status_g.st_data_dir = data_dir;
	status_tick(); /* there before anything else can happen */
	status_g.st_running = pthread_create(&status_g.st_thr, NULL,
					     status_main, NULL) == 0;
	if (!status_g.st_running)
		LOG_WARNING("strata-server: status thread not started");
}

/* Stop the progress thread; the file's last line becomes
 * "STATE 0 TEXT". */
static void status_end(const char *state, const char *text)
{
	char line[512];

	if (status_g.st_path == NULL)
		return;
	pthread_mutex_lock(&status_g.st_lock);
	status_g.st_stop = true;
	pthread_cond_signal(&status_g.st_cond);
	pthread_mutex_unlock(&status_g.st_lock);
	if (status_g.st_running)
		pthread_join(status_g.st_thr, NULL);
	status_g.st_running = false;
	snprintf(line, sizeof line, "%s 0 %s", state, text);
	status_write(line);
}

/* Is fault srv.start.WHAT.NAME armed (test builds)? */
static bool start_fault(const char *what, const char *name)
{
	char f[64];

	snprintf(f, sizeof f, "srv.start.%s.%s", what, name);
	return FAULT_HIT(f);
}

/*
 * The start faults of test builds (the header comment): a slow start that
 * makes progress (1 MiB/s into DATA_DIR.slow-fault, removed after), one
 * that makes none, or a death.
 */
static void start_faults(const char *name, const char *data_dir)
{
	char path[PATH_MAX];
	static char mib[1u << 20];
	FILE *f;

	if (start_fault("die", name))
		raise(SIGKILL);
	if (start_fault("stall", name))
		for (unsigned i = 0; i < 3600; i++)
			sleep(1);
	if (!start_fault("slow", name))
		return;
	snprintf(path, sizeof path, "%s.slow-fault", data_dir);
	f = fopen(path, "w");
	for (unsigned t = 0; f != NULL && t < SRV_STATUS_SLOW_MS; t += 250) {
		if (t % 1000 == 0 && (fwrite(mib, 1, sizeof mib, f) != sizeof mib
				      || fflush(f) != 0))
			break;
		usleep(250000);
	}
	if (f != NULL)
		fclose(f);
	unlink(path);
}

/*
 * The start watcher: while srv_start() runs, the signals the main thread
 * takes after it (SIGTERM, SIGINT, SIGHUP: blocked in every thread) are
 * taken here.  SIGTERM or SIGINT during the start ends the process at once
 * (as a crash would: every acknowledged update is durable, and nothing of
 * this run was acknowledged before its "serving"), naming the phase it was
 * in; a start that goes on for SRV_START_SLOW_S is logged with its phase,
 * and again each time as long.  A SIGHUP (a restart asked by the HA agent
 * as the start ends), or any signal that comes once the start is done, is
 * handed to the main thread (start_sig).
 */
#define SRV_START_SLOW_S 60

static atomic_int start_done, start_sig;

struct start_watch {
	const char *sw_name;
	const char *sw_pid_file;
	sigset_t sw_set;
};

static void *start_watch_main(void *arg)
{
	const struct start_watch *w = arg;
	struct timespec tick = {1, 0};
	unsigned secs = 0;
	const char *ph;
	int sig;

	while (!atomic_load(&start_done)) {
		sig = sigtimedwait(&w->sw_set, NULL, &tick);
		if (atomic_load(&start_done)) {
			if (sig > 0)
				atomic_store(&start_sig, sig);
			break;
		}
		ph = srv_start_phase();
		if (ph[0] == '\0')
			ph = "before its store is opened";
		if (sig == SIGTERM || sig == SIGINT) {
			fprintf(stderr, "strata-server %s: signal %d during its "
				"start (%s, after %u s): it ends now, nothing "
				"of this run was acknowledged\n", w->sw_name,
				sig, ph, secs);
			fflush(stderr);
			if (w->sw_pid_file != NULL)
				unlink(w->sw_pid_file);
			_exit(1);
		}
		if (sig == SIGHUP) /* a restart asked (restart_hook()) */
			atomic_store(&start_sig, SIGHUP);
		if (sig < 0 && ++secs % SRV_START_SLOW_S == 0)
			fprintf(stderr, "strata-server %s: still starting after "
				"%u s: %s\n", w->sw_name, secs, ph);
	}
	return NULL;
}

/* The layers above the server that it runs: assembled here (see above). */
/* The HA agent first: its gate and epoch are in place before the other
 * modules call their peers. */
static const struct srv_module *const srv_modules[] = {&ha_srv_module,
						       &dtm_srv_module,
						       &fdmi_srv_module};

/* srv_restart() asked for a run from the start (restart_hook()). */
static atomic_int restart_wanted;

/* srv_parts.sp_restart: wake the main thread's sigwait() (SIGHUP is in
 * its set and blocked in every thread). */
static void restart_hook(void *arg, const char *why)
{
	(void)arg;
	(void)why; /* logged by srv_restart() */
	atomic_store(&restart_wanted, 1);
	kill(getpid(), SIGHUP);
}

/* Run this program again with argv, keeping the pid; returns only on a
 * failure (logged). */
static void restart_exec(char **argv, const char *name)
{
	fprintf(stderr, "strata-server %s: running again from its start "
		"(pid %ld)\n", name, (long)getpid());
	fflush(stderr);
	fflush(stdout);
	if (setenv("STRATA_SERVER_RESTARTED", "1", 1) != 0)
		return;
	/* nothing of this run is handed on but the standard streams */
	if (close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) != 0) {
		long max = sysconf(_SC_OPEN_MAX);

		for (long fd = 3; fd < (max > 0 ? max : 65536); fd++)
			(void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
	}
	execv("/proc/self/exe", argv);
	fprintf(stderr, "strata-server %s: exec of itself failed: %s\n", name,
		strerror(errno));
}

int main(int argc, char **argv)
{
	const struct srv_parts parts = {
		.sp_layout_ops = &stripe_layout_ops,
		.sp_modules = srv_modules,
		.sp_nr_modules = sizeof srv_modules / sizeof srv_modules[0],
		.sp_restart = restart_hook,
	};
	/* an exec of itself (restart_exec()): detached already */
	bool restarted = getenv("STRATA_SERVER_RESTARTED") != NULL;
	struct srv_args a = {0};
	struct clu_conf c = {0};
	struct addb_http *mh = NULL;
	struct srv *s = NULL;
	struct start_watch w;
	pthread_t wt;
	bool watched;
	struct srv_counters cnt;
	bool busy;
	sigset_t set;
	int rc, idx, sig = 0;

	if (parse_args(argc, argv, &a) != 0) {
		usage(stderr);
		return 2;
	}
	log_level_set(a.sa_log_level);
	rc = clu_conf_load(&c, a.sa_config);
	if (rc == 0 && a.sa_walk != NULL) {
		rc = walk_all(&c, a.sa_walk, a.sa_name);
		clu_conf_fini(&c);
		return rc;
	}
	idx = rc == 0 ? clu_server_find(&c, a.sa_name) : rc;
	/* every server's address resolved once, here: a name that does not
	 * resolve stops the start, naming its server, before it detaches */
	if (idx >= 0 && clu_conf_resolve(&c) != 0)
		idx = -EHOSTUNREACH;
	if (idx < 0) {
		fprintf(stderr, "strata-server: %s\n", err_msg());
		clu_conf_fini(&c);
		return 1;
	}
	if (a.sa_log_file != NULL && log_to_file(a.sa_log_file) != 0) {
		fprintf(stderr, "strata-server: %s\n", err_msg());
		return 1;
	}
	if (restarted)
		unsetenv("STRATA_SERVER_RESTARTED");
	if (!a.sa_foreground && !restarted && daemonize() != 0) {
		fprintf(stderr, "strata-server: %s\n", err_msg());
		return 1;
	}
	/* Signals are taken by sigwait() below; every thread inherits the
	 * mask, so none of them is interrupted by SIGTERM. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (a.sa_pid_file != NULL && pid_file_write(a.sa_pid_file) != 0) {
		fprintf(stderr, "strata-server %s: %s\n", a.sa_name, err_msg());
		detached(false);
		clu_conf_fini(&c);
		return 1;
	}
	/* The metrics region of this process (after the detach: the
	 * daemon's pid names it), and /metrics when asked. */
	addb_region_open("strata-server");
	if (a.sa_metrics != NULL && addb_http_start(a.sa_metrics, &mh) != 0) {
		fprintf(stderr, "strata-server %s: %s\n", a.sa_name, err_msg());
		detached(false);
		if (a.sa_pid_file != NULL)
			unlink(a.sa_pid_file);
		clu_conf_fini(&c);
		return 1;
	}
	detached(true);
	status_start(a.sa_status_file, c.cc_servers[idx].cs_data_dir);
	w = (struct start_watch){a.sa_name, a.sa_pid_file, set};
	watched = pthread_create(&wt, NULL, start_watch_main, &w) == 0;
	start_faults(a.sa_name, c.cc_servers[idx].cs_data_dir);
	rc = srv_start(&s, &c, (uint32_t)idx, a.sa_model ? SRV_F_MODEL : 0,
		       &parts);
	atomic_store(&start_done, 1);
	if (rc != 0) {
		fprintf(stderr, "strata-server %s: %s\n", a.sa_name, err_msg());
		status_end("failed", err_msg());
		if (a.sa_pid_file != NULL)
			unlink(a.sa_pid_file);
		clu_conf_fini(&c);
		return 1;
	}
	{
		char where[CLU_HOST_MAX + 16];

		clu_server_where(&c.cc_servers[idx], where, sizeof where);
		fprintf(stderr, "strata-server %s: serving %s (cluster %s, "
			"pid %ld)\n", a.sa_name, where, c.cc_name,
			(long)getpid());
		status_end("serving", where);
	}
	/* the watcher ends within its tick (after "serving": no wait for it
	 * before); a signal it took meanwhile is the main thread's, as is a
	 * SIGHUP it took (a restart the HA agent asked as the start ended) */
	if (watched)
		pthread_join(wt, NULL);
	sig = atomic_load(&start_sig);
	while (sig != SIGTERM && sig != SIGINT &&
	       !(sig == SIGHUP && atomic_load(&restart_wanted)))
		if (sigwait(&set, &sig) != 0)
			break;
	srv_counters_get(s, &cnt);
	fprintf(stderr, "strata-server %s: signal %d: draining %" PRIu64
		" requests in flight\n", a.sa_name, sig, cnt.sc_inflight);
	busy = srv_stop(s) != 0;
	addb_http_stop(mh);
	if (a.sa_status_file != NULL)
		unlink(a.sa_status_file);
	if (atomic_load(&restart_wanted)) {
		/* requests still running (busy) end with this image, as in
		 * a crash: every acknowledged update is durable already */
		restart_exec(argv, a.sa_name);
		_exit(1);
	}
	if (a.sa_pid_file != NULL)
		unlink(a.sa_pid_file);
	if (busy) {
		/* requests still ran: nothing was closed under them, the
		 * process ends here */
		fprintf(stderr, "strata-server %s: stopped with requests still "
			"running (store not closed; acknowledged updates are "
			"durable)\n", a.sa_name);
		fflush(stderr);
		_exit(3);
	}
	fprintf(stderr, "strata-server %s: stopped cleanly\n", a.sa_name);
	clu_conf_fini(&c);
	return 0;
}
