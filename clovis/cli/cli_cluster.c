/*
 * cli_cluster.c — strata cluster up | down | status: a development cluster
 * of strata-server processes on loopback, and the status of any cluster.
 *
 * Layout of a development cluster directory D:
 *   D/cluster.yaml     the cluster file (servers s0..sN-1 on 127.0.0.1)
 *   D/secret           the cluster secret (mode 0600), named by the file
 *   D/sI/              server I's store
 *   D/sI.pid, D/sI.log its pid file and log
 *   D/sI.status        what it is doing while it starts (strata-server
 *                      --status-file: "starting MIB TEXT", "serving ...",
 *                      "failed 0 MESSAGE"), removed at a clean stop
 *   D/etcdJ/, D/etcdJ.pid, D/etcdJ.log, D/etcd.endpoints
 *                      etcd member J of the HA cluster map (ha/etcd_proc.h:
 *                      its data, pid file and log): --etcd-members M
 *                      (default 1, none with --no-etcd); member J listens
 *                      on 127.0.0.1, client port P+N+2J and peer port
 *                      P+N+2J+1 (P --base-port, N --nodes), started before
 *                      the servers and stopped after them
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clovis/cli/cli.h"
#include "core/errors.h"
#include "ha/etcd_proc.h"
#include "ha/map.h"

#include <json-c/json.h>

/* Waits are bounded (CLU_UP_*_MS, CLU_DOWN_WAIT_MS: cli_limits.h). */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A fresh random secret (64 hex digits) into D/secret, mode 0600. */
static int write_secret(struct cli *c, const char *dir)
{
	unsigned char raw[32];
	char path[PATH_MAX + 64], hex[65];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	FILE *f;

	if (fd < 0 || read(fd, raw, sizeof raw) != (ssize_t)sizeof raw) {
		if (fd >= 0)
			close(fd);
		return cli_sys(errno ? errno : EIO, "read /dev/urandom");
	}
	close(fd);
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	snprintf(path, sizeof path, "%s/secret", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL)
		return cli_sys(errno, "write '%s'", path);
	fprintf(f, "%s\n", hex);
	return fclose(f) == 0 ? 0 : cli_sys(errno, "write '%s'", path);
}

/* The client port of etcd member j: after the servers' ports (the peer
 * port is the next one). */
static uint64_t etcd_port(const struct cli *c, uint64_t j)
{
	return c->c_base_port + c->c_nodes + 2 * j;
}

/* Start the etcd members of D (cluster up, before the servers) and wait
 * until they serve (bounded: ha/etcd_proc.h). */
static int etcd_up(struct cli *c, const char *dir)
{
	struct etcd_proc_conf ec = {.epc_dir = dir, .epc_host = "127.0.0.1",
				    .epc_members = (uint32_t)c->c_etcd_members};
	int rc;

	for (uint32_t j = 0; j < ec.epc_members; j++) {
		ec.epc_client[j] = (uint16_t)etcd_port(c, j);
		ec.epc_peer[j] = (uint16_t)(etcd_port(c, j) + 1);
	}
	rc = etcd_proc_start(&ec);
	if (rc != 0)
		return cli_fail(c, rc, "start etcd: %s", err_msg());
	if (!c->c_quiet)
		printf("etcd of %u member%s up: http://127.0.0.1:%u%s\n",
		       ec.epc_members, ec.epc_members > 1 ? "s" : "",
		       ec.epc_client[0], ec.epc_members > 1 ? " ..." : "");
	return 0;
}

/* D/cluster.yaml for N servers with emulated devices of 128 MiB (room
 * for a 64 MiB block on every tier; the SMR device 256 MiB: 64 MiB zones;
 * device files are fallocated, and zero-filled only with --device-fill
 * zero: device_fill, written always).  The flash devices are lent to the other
 * servers: each server allocates in its own slice of 1/N of them
 * (docs/cluster.md "Placement across servers"), so they are made 96 MiB x
 * N (at most 288 MiB: a 64 MiB block fits up to 4 servers); nvram and sas
 * are kept local (local: true), whole; --flash-size sets the flash
 * devices' size instead (c_flash_mib).  nv: the absolute --nvram-dir
 * (each server's nvram_dir is nv/sI), NULL: sI, inside D.  call_timeout
 * 20 s, or --call-timeout. */
static int write_conf(struct cli *c, const char *dir, const char *nv)
{
	char path[PATH_MAX + 64];
	unsigned fl;
	FILE *f;

	snprintf(path, sizeof path, "%s/cluster.yaml", dir);
	f = fopen(path, "w");
	if (f == NULL)
		return cli_sys(errno, "write '%s'", path);
	fprintf(f, "# Development cluster written by 'strata cluster up'.\n"
		"cluster:\n  name: dev\n  secret_file: secret\n"
		"  index_replicas: %u\n  connect_timeout: 2s\n",
		c->c_nodes < 3 ? (unsigned)c->c_nodes : 3u);
	if (c->c_call_ms != 0)
		fprintf(f, "  call_timeout: %ums\n", c->c_call_ms);
	else
		fprintf(f, "  call_timeout: 20s\n");
	for (uint64_t j = 0; j < c->c_etcd_members; j++)
		fprintf(f, "%s\"http://127.0.0.1:%" PRIu64 "\"%s", j == 0 ?
			"  etcd: [ " : ", ", etcd_port(c, j),
			j + 1 == c->c_etcd_members ? " ]\n" : "");
	if (c->c_ha_test)
		fprintf(f, "  ha_rules: test\n  ha_lease: 3s\n");
	if (c->c_meta_replicas != 0)
		fprintf(f, "  meta_replicas: %" PRIu64 "\n",
			c->c_meta_replicas);
	fprintf(f, "device_size: 128MiB\ndevice_fill: %s\nservers:\n",
		c->c_dev_fill);
	fl = c->c_nodes < 2 ? 128u : c->c_nodes < 3 ? 192u : 288u;
	if (c->c_flash_mib != 0)
		fl = c->c_flash_mib;
	for (uint64_t i = 0; i < c->c_nodes; i++)
		fprintf(f, "  - name: s%" PRIu64 "\n"
			"    address: 127.0.0.1\n"
			"    port: %" PRIu64 "\n"
			"    data_dir: s%" PRIu64 "\n"
			"    nvram_dir: %s%ss%" PRIu64 "\n"
			"%s"
			"    devices:\n"
			"      - { tier: nvram, local: true }\n"
			"      - { tier: flash, size: %uMiB }\n"
			"      - { tier: flash, size: %uMiB }\n"
			"      - { tier: flash, size: %uMiB }\n"
			"      - { tier: flash, size: %uMiB }\n"
			"      - { tier: flash, size: %uMiB }\n"
			"      - { tier: flash, size: %uMiB }\n"
			"      - { tier: sas, local: true }\n"
			"      - { tier: sas, local: true }\n"
			"      - { tier: smr, size: 256MiB }\n",
			i, c->c_base_port + i, i, nv ? nv : "", nv ? "/" : "",
			i,
			c->c_meta_nvram ? "    meta_nvram: true\n" : "",
			fl, fl, fl, fl, fl, fl);
	return fclose(f) == 0 ? 0 : cli_sys(errno, "write '%s'", path);
}

/* strata-server beside this program (an installed strata finds the one
 * installed with it), or the program named by $STRATA_SERVER. */
static int server_path(char *buf, size_t size)
{
	const char *env = getenv("STRATA_SERVER");
	char self[PATH_MAX];
	ssize_t n;

	if (env != NULL && env[0] != '\0') {
		snprintf(buf, size, "%s", env);
		return access(buf, X_OK) == 0 ? 0 : -ENOENT;
	}
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return -errno;
	self[n] = '\0';
	snprintf(buf, size, "%s/strata-server", dirname(self));
	return access(buf, X_OK) == 0 ? 0 : -ENOENT;
}

/* Start server i (it daemonizes; we reap the first child). */
static int start_server(struct cli *c, const char *dir, const char *bin,
			uint64_t i)
{
	char name[32], conf[PATH_MAX + 64], pid[PATH_MAX + 64], log[PATH_MAX + 64];
	char status[PATH_MAX + 64];
	pid_t p;
	int st;

	snprintf(name, sizeof name, "s%" PRIu64, i);
	snprintf(conf, sizeof conf, "%s/cluster.yaml", dir);
	snprintf(pid, sizeof pid, "%s/%s.pid", dir, name);
	snprintf(log, sizeof log, "%s/%s.log", dir, name);
	snprintf(status, sizeof status, "%s/%s.status", dir, name);
	unlink(status); /* a line left by an earlier run is not progress */
	p = fork();
	if (p < 0)
		return cli_sys(errno, "fork");
	if (p == 0) {
		execl(bin, bin, "--config", conf, "--name", name, "--pid-file",
		      pid, "--log-file", log, "--status-file", status,
		      (char *)NULL);
		_exit(127);
	}
	if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return cli_fail(c, -EIO, "start server %s (see %s)", name, log);
	return 0;
}

static pid_t read_pid(const char *path);

/*
 * Has server i of D given up at start?  Its pid file is written at once
 * after it detaches and removed when its start fails (a port taken, a bad
 * store): missing past CLU_PID_GRACE_MS, or naming a process that is gone,
 * means it will never answer.  Then msg holds the last line of its log.
 */
static bool server_gone(const char *dir, uint64_t i, uint64_t t0, char *msg,
			size_t size)
{
	char path[PATH_MAX + 64], line[512];
	pid_t p;
	FILE *f;

	snprintf(path, sizeof path, "%s/s%" PRIu64 ".pid", dir, i);
	p = read_pid(path);
	if (p > 0 ? kill(p, 0) == 0 || errno != ESRCH :
		    now_ms() < t0 + CLU_PID_GRACE_MS)
		return false;
	snprintf(msg, size, "no message in its log");
	snprintf(path, sizeof path, "%s/s%" PRIu64 ".log", dir, i);
	f = fopen(path, "r");
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] != '\0')
			snprintf(msg, size, "%s", line);
	}
	if (f != NULL)
		fclose(f);
	return true;
}

/* What cluster up knows of a server it waits for. */
struct clu_wait {
	char cw_line[512];   /* its status line ("" before the first) */
	uint64_t cw_moved;   /* when the line last changed (ms) */
	bool cw_up;          /* answers STATUS */
};

/* Read server i's status line into line ("" when there is none yet). */
static void status_read(const char *dir, uint64_t i, char *line,
			size_t size)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof path, "%s/s%" PRIu64 ".status", dir, i);
	line[0] = '\0';
	f = fopen(path, "r");
	if (f == NULL)
		return;
	if (fgets(line, (int)size, f) == NULL)
		line[0] = '\0';
	line[strcspn(line, "\n")] = '\0';
	fclose(f);
}

/* A status line as shown: its state and text, without the progress
 * count ("starting: opening store ...", "serving: ADDR:PORT"). */
static const char *status_show(const char *line, char *buf, size_t size)
{
	const char *sp = strchr(line, ' ');
	const char *text = sp != NULL ? strchr(sp + 1, ' ') : NULL;

	if (line[0] == '\0')
		snprintf(buf, size, "no status yet");
	else if (text == NULL)
		snprintf(buf, size, "%s", line);
	else
		snprintf(buf, size, "%.*s: %s", (int)(sp - line), line,
			 text + 1);
	return buf;
}

/*
 * One look at server i that does not answer yet: 0 while it may still
 * come up, or a failure naming it: it died or gave up at start
 * (server_gone, or a status "failed"), or its status has not changed for
 * stall_ms (no progress).
 */
static int wait_one(struct cli *c, const char *dir, uint64_t i,
		    struct clu_wait *w, uint64_t t0, uint64_t stall_ms)
{
	char line[512], msg[512], show[600];
	uint64_t now = now_ms();

	status_read(dir, i, line, sizeof line);
	if (strcmp(line, w->cw_line) != 0) {
		snprintf(w->cw_line, sizeof w->cw_line, "%s", line);
		w->cw_moved = now;
	}
	if (strncmp(line, "failed ", 7) == 0)
		return cli_fail(c, -EIO, "server s%" PRIu64 " did not start: "
				"%s (see %s/s%" PRIu64 ".log)", i,
				status_show(line, show, sizeof show), dir, i);
	if (server_gone(dir, i, t0, msg, sizeof msg))
		return cli_fail(c, -ESRCH, "server s%" PRIu64 " did not start:"
				" %s; its process is gone, it last reported "
				"%s (see %s/s%" PRIu64 ".log)", i, msg,
				status_show(line, show, sizeof show), dir, i);
	if (now - w->cw_moved >= stall_ms)
		return cli_fail(c, -ETIMEDOUT, "server s%" PRIu64 " made no "
				"progress for %" PRIu64 " s: %s (see %s/s%"
				PRIu64 ".log)", i, stall_ms / 1000,
				status_show(w->cw_line, show, sizeof show),
				dir, i);
	return 0;
}

/* Which servers answer STATUS now: w[i].cw_up; the count into up. */
static int wait_poll(struct cli *c, struct clu_wait *w, uint32_t *up)
{
	struct clovis_server_info si[CLU_UP_MAX_NODES];
	uint32_t nr = CLU_UP_MAX_NODES;
	int rc = cli_call(c, clovis_server_list(c->c_cl, si, &nr));

	*up = 0;
	for (uint32_t i = 0; rc == 0 && i < nr && i < c->c_nodes; i++) {
		w[i].cw_up = si[i].si_up != 0;
		*up += w[i].cw_up;
	}
	return rc;
}

/* Say which servers cluster up still waits for, and what each does. */
static void wait_say(struct cli *c, const struct clu_wait *w, uint64_t t0)
{
	char show[600];

	if (c->c_quiet)
		return;
	for (uint64_t i = 0; i < c->c_nodes; i++)
		if (!w[i].cw_up)
			printf("waiting %" PRIu64 " s for s%" PRIu64 ": %s\n",
			       (now_ms() - t0) / 1000, i,
			       status_show(w[i].cw_line, show, sizeof show));
	fflush(stdout);
}

/*
 * Wait until every server answers STATUS and its status file says
 * "serving" (its start is complete).  Bounded: a server that died,
 * failed or made no progress for CLU_UP_STALL_MS fails it at once, naming
 * the server; CLU_UP_MAX_MS in all.  $STRATA_TEST_UP_STALL_MS (tests)
 * shortens the progress window.
 */
static int wait_up(struct cli *c, const char *dir)
{
	char conf[PATH_MAX + 64];
	struct clu_wait w[CLU_UP_MAX_NODES];
	const char *e = getenv("STRATA_TEST_UP_STALL_MS");
	uint64_t t0 = now_ms(), said = t0, stall = CLU_UP_STALL_MS;
	uint32_t up = 0;
	int rc;

	if (e != NULL && strtoull(e, NULL, 10) > 0)
		stall = strtoull(e, NULL, 10);
	memset(w, 0, sizeof w);
	for (uint64_t i = 0; i < c->c_nodes; i++)
		w[i].cw_moved = t0;
	snprintf(conf, sizeof conf, "%s/cluster.yaml", dir);
	c->c_cluster = conf;
	rc = cli_cluster_open(c);
	while (rc == 0) {
		rc = wait_poll(c, w, &up);
		/* a server answers as soon as its endpoint is open, before
		 * its modules (the HA agent) have started: it is up once its
		 * status file says so too (cluster_up_test.sh, CI 2026-11-29:
		 * a status file still "starting" after cluster up) */
		for (uint64_t i = 0; rc == 0 && i < c->c_nodes; i++) {
			char line[512];

			status_read(dir, i, line, sizeof line);
			if (w[i].cw_up && strncmp(line, "serving ", 8) != 0) {
				w[i].cw_up = false;
				up--;
			}
		}
		if (rc != 0 || up == c->c_nodes)
			break;
		for (uint64_t i = 0; rc == 0 && i < c->c_nodes; i++)
			if (!w[i].cw_up)
				rc = wait_one(c, dir, i, &w[i], t0, stall);
		if (rc != 0)
			break;
		if (now_ms() - said >= CLU_UP_SAY_MS) {
			wait_say(c, w, t0);
			said = now_ms();
		}
		if (now_ms() - t0 >= CLU_UP_MAX_MS)
			rc = cli_fail(c, -ETIMEDOUT, "%u of %" PRIu64 " servers "
				      "answer after %d s", up, c->c_nodes,
				      CLU_UP_MAX_MS / 1000);
		else
			usleep(200000);
	}
	clovis_fini(c->c_cl);
	c->c_cl = NULL;
	c->c_cluster = NULL;
	return rc;
}

/* Is path fit for the cluster file, where it is written unquoted and a
 * path holds at most 255 bytes (with /sI after it)?  Else a message. */
static int nvram_dir_check(struct cli *c, const char *path)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyz"
				 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+-";

	if (strlen(path) > 200)
		return cli_fail(c, -ENAMETOOLONG, "--nvram-dir: '%s': path "
				"longer than 200 bytes", path);
	if (path[strspn(path, ok)] != '\0')
		return cli_fail(c, -EINVAL, "--nvram-dir: '%s': only letters, "
				"digits and / . _ + - are accepted", path);
	return 0;
}

/* --nvram-dir: make NV (if missing) and NV/sI for every server; the
 * absolute path of NV into nv (the cluster file's nvram_dir is NV/sI).
 * The caller checked NV as given; here it is checked once resolved. */
static int nvram_dirs_make(struct cli *c, char *nv)
{
	char path[PATH_MAX + 32];
	int rc;

	if (mkdir(c->c_nvram_dir, 0700) != 0 && errno != EEXIST)
		return cli_sys(errno, "--nvram-dir: create '%s'",
			       c->c_nvram_dir);
	if (realpath(c->c_nvram_dir, nv) == NULL)
		return cli_sys(errno, "--nvram-dir: resolve '%s'",
			       c->c_nvram_dir);
	rc = nvram_dir_check(c, nv);
	if (rc != 0)
		return rc;
	for (uint64_t i = 0; i < c->c_nodes; i++) {
		snprintf(path, sizeof path, "%s/s%" PRIu64, nv, i);
		if (mkdir(path, 0700) != 0 && errno != EEXIST)
			return cli_sys(errno, "--nvram-dir: create '%s'",
				       path);
	}
	return 0;
}

int cmd_cluster_up(struct cli *c)
{
	char dir[PATH_MAX], bin[PATH_MAX], nv[PATH_MAX];
	uint64_t started = 0;
	int rc;

	/* A bad --nvram-dir is refused before anything is made. */
	if (c->c_nvram_dir != NULL) {
		rc = nvram_dir_check(c, c->c_nvram_dir);
		if (rc != 0)
			return rc;
	}
	if (mkdir(c->c_dir, 0700) != 0 && errno != EEXIST)
		return cli_sys(errno, "create '%s'", c->c_dir);
	if (realpath(c->c_dir, dir) == NULL)
		return cli_sys(errno, "resolve '%s'", c->c_dir);
	if (server_path(bin, sizeof bin) != 0)
		return cli_fail(c, -ENOENT, "strata-server not found beside "
				"this program");
	rc = c->c_nvram_dir != NULL ? nvram_dirs_make(c, nv) : 0;
	if (rc == 0)
		rc = write_secret(c, dir);
	if (rc == 0)
		rc = write_conf(c, dir, c->c_nvram_dir != NULL ? nv : NULL);
	if (rc == 0 && c->c_etcd_members > 0) {
		rc = etcd_up(c, dir);
		started += rc == 0;
	}
	for (uint64_t i = 0; rc == 0 && i < c->c_nodes; i++) {
		rc = start_server(c, dir, bin, i);
		started += rc == 0;
	}
	if (rc == 0)
		rc = wait_up(c, dir);
	/* All or nothing: the servers and etcd members that did start are
	 * stopped again. */
	if (rc != 0 && started > 0) {
		const char *dir_was = c->c_dir;

		c->c_dir = dir;
		cmd_cluster_down(c);
		c->c_dir = dir_was;
	}
	if (rc == 0 && !c->c_quiet)
		printf("cluster of %" PRIu64 " servers up: %s/cluster.yaml\n",
		       c->c_nodes, dir);
	return rc;
}

/* The pid recorded in D/sI.pid, or 0. */
static pid_t read_pid(const char *path)
{
	FILE *f = fopen(path, "r");
	long p = 0;

	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld", &p) != 1)
		p = 0;
	fclose(f);
	return (pid_t)p;
}

/* Stop D's etcd members (after the servers); say so when there were. */
static void etcd_down(struct cli *c)
{
	uint32_t stopped = 0, killed = 0;

	etcd_proc_stop(c->c_dir, &stopped, &killed);
	if (c->c_quiet || stopped + killed == 0)
		return;
	printf("etcd: %u members stopped", stopped);
	if (killed)
		printf(", %u killed after %u s", killed,
		       ETCD_PROC_STOP_MS / 1000);
	printf("\n");
}

/*
 * strata cluster down: SIGTERM to every server with a pid file, all at
 * once (each drains and closes its store on its own, as when an init
 * system stops them), then wait for all of them together; SIGKILL to
 * those still there CLU_DOWN_WAIT_MS after the signal.  Then the etcd
 * members of D, the same way (etcd_proc_stop).
 */
int cmd_cluster_down(struct cli *c)
{
	pid_t pids[CLU_DOWN_MAX] = { 0 };
	uint64_t until = now_ms() + CLU_DOWN_WAIT_MS;
	int stopped = 0, killed = 0, i, left;
	char path[PATH_MAX];

	for (i = 0; i < CLU_DOWN_MAX; i++) {
		snprintf(path, sizeof path, "%s/s%d.pid", c->c_dir, i);
		pids[i] = read_pid(path);
		if (pids[i] <= 0 || kill(pids[i], SIGTERM) != 0)
			pids[i] = 0;
	}
	do {
		left = 0;
		for (i = 0; i < CLU_DOWN_MAX; i++)
			left += pids[i] > 0 && kill(pids[i], 0) == 0;
		if (left > 0)
			usleep(50000);
	} while (left > 0 && now_ms() < until);
	for (i = 0; i < CLU_DOWN_MAX; i++) {
		if (pids[i] <= 0)
			continue;
		if (kill(pids[i], 0) == 0) {
			kill(pids[i], SIGKILL);
			killed++;
			snprintf(path, sizeof path, "%s/s%d.pid", c->c_dir, i);
			unlink(path);
		} else {
			stopped++;
		}
	}
	if (!c->c_quiet)
		printf("%d servers stopped%s", stopped, killed ? "" : "\n");
	if (killed && !c->c_quiet)
		printf(", %d killed after %d s\n", killed,
		       CLU_DOWN_WAIT_MS / 1000);
	etcd_down(c);
	return 0;
}

static const char *const tier_names[CLOVIS_TIER_NR] = {"nvram", "flash",
						       "sas", "smr"};

/* What cluster status gathers before it prints. */
struct clu_status {
	struct clovis_server_info cs_si[64];
	uint32_t cs_nr;                /* servers in the cluster file */
	uint32_t cs_up;
	struct clovis_dev_info *cs_dev; /* CLU_STATUS_DEVS entries */
	uint32_t cs_nd;                /* devices listed */
};

/* Tier index of a device, clamped for the tables above. */
static uint32_t dev_tier(const struct clovis_dev_info *d)
{
	return d->di_tier < CLOVIS_TIER_NR ? d->di_tier : 0;
}

/* Devices and tiers per server (paths are "SERVER:PATH"). */
static void status_devs(const struct clovis_dev_info *d, uint32_t nr)
{
	uint64_t size[CLOVIS_TIER_NR] = {0}, fr[CLOVIS_TIER_NR] = {0};
	uint32_t cnt[CLOVIS_TIER_NR] = {0}, bad = 0;

	printf("devices: %u\n", nr);
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t t = dev_tier(&d[i]);

		printf("  %3u %-6s %10" PRIu64 " MiB free of %10" PRIu64
		       " MiB %s %s\n", d[i].di_index, tier_names[t],
		       d[i].di_free_bytes >> 20, d[i].di_size_bytes >> 20,
		       d[i].di_state == CLOVIS_DEV_ONLINE ? "online" : "FAILED",
		       d[i].di_path);
		size[t] += d[i].di_size_bytes;
		fr[t] += d[i].di_free_bytes;
		cnt[t]++;
		bad += d[i].di_state != CLOVIS_DEV_ONLINE;
	}
	printf("tiers:\n");
	for (uint32_t t = 0; t < CLOVIS_TIER_NR; t++)
		if (cnt[t] > 0)
			printf("  %-6s %3u devices %10" PRIu64 " MiB free of %10"
			       PRIu64 " MiB\n", tier_names[t], cnt[t],
			       fr[t] >> 20, size[t] >> 20);
	if (bad > 0)
		printf("%u devices not online\n", bad);
}

/* One server as text: its counters and fence figures, or DOWN. */
static void status_server_text(const struct clovis_server_info *si)
{
	if (!si->si_up) {
		printf("%-28s DOWN\n", si->si_name);
		return;
	}
	printf("%-28s up    %8" PRIu64 " s  %10" PRIu64 " requests  %6"
	       PRIu64 " refused  %6" PRIu64 " dropped  %6" PRIu64
	       " auth-failed  %4" PRIu64 " in flight  %4" PRIu64
	       " idx-syncs  %6" PRIu64 " tombstones-collected  %4" PRIu64
	       " idx-doubts\n",
	       si->si_name, si->si_uptime_ms / 1000, si->si_requests,
	       si->si_bad_requests, si->si_rpc_dropped, si->si_auth_failed,
	       si->si_inflight, si->si_idx_syncs, si->si_idx_tombs,
	       si->si_idx_doubts);
	printf("  fence: %" PRIu64 " late-writes-refused  %" PRIu64
	       " bytes-fenced  slice-free:", si->si_late_writes,
	       si->si_fenced_bytes);
	for (uint32_t j = 0; j < si->si_nr_slices && j < 64; j++)
		printf(" %u=%" PRIu64, j, si->si_slice_free[j]);
	printf("\n");
	printf("  zero-copy: %" PRIu64 " bytes-written  %" PRIu64
	       " bytes-read\n", si->si_zc_write_bytes, si->si_zc_read_bytes);
}

/* One device of a server as a JSON object. */
static void status_dev_json(const struct clovis_dev_info *d, bool first)
{
	printf("%s{\"index\": %u, \"tier\": \"%s\", \"path\": ",
	       first ? "" : ", ", d->di_index, tier_names[dev_tier(d)]);
	cli_json_str(stdout, d->di_path, strnlen(d->di_path,
						 sizeof d->di_path));
	printf(", \"driver\": ");
	cli_json_str(stdout, d->di_driver, strnlen(d->di_driver,
						   sizeof d->di_driver));
	printf(", \"state\": \"%s\", \"size_bytes\": %" PRIu64
	       ", \"free_bytes\": %" PRIu64 ", \"errors\": %" PRIu64
	       ", \"rebalance\": %s}", cli_dev_state(d->di_state),
	       d->di_size_bytes, d->di_free_bytes, d->di_errors,
	       d->di_rebalance ? "true" : "false");
}

/*
 * The devices of server name (paths "NAME:PATH") as a JSON array: a
 * server's devices are the ones whose path starts with its name and a
 * colon (clovis_dev_list() in cluster mode).
 */
static void status_devs_json(const struct clu_status *st, const char *name,
			     size_t len)
{
	bool first = true;

	printf("[");
	for (uint32_t i = 0; i < st->cs_nd; i++) {
		const char *p = st->cs_dev[i].di_path;

		if (strncmp(p, name, len) != 0 || p[len] != ':')
			continue;
		status_dev_json(&st->cs_dev[i], first);
		first = false;
	}
	printf("]");
}

/* A counter of a server that answered, or null for one that did not. */
static void json_u64_or_null(const char *key, uint64_t v, bool up)
{
	if (up)
		printf(", \"%s\": %" PRIu64, key, v);
	else
		printf(", \"%s\": null", key);
}

/*
 * One server as a JSON object.  si_name is "NAME ADDR:PORT"; every key is
 * present for a server that is down too (counters null, no devices).
 */
static void status_server_json(const struct clu_status *st,
			       const struct clovis_server_info *si, bool first)
{
	const char *sp = memchr(si->si_name, ' ', sizeof si->si_name);
	size_t all = strnlen(si->si_name, sizeof si->si_name);
	size_t len = sp != NULL ? (size_t)(sp - si->si_name) : all;
	bool up = si->si_up != 0;

	printf("%s{\"name\": ", first ? "" : ",\n  ");
	cli_json_str(stdout, si->si_name, len);
	printf(", \"address\": ");
	cli_json_str(stdout, sp != NULL ? sp + 1 : "",
		     sp != NULL ? all - len - 1 : 0);
	printf(", \"state\": \"%s\", \"up\": %s", up ? "up" : "down",
	       up ? "true" : "false");
	json_u64_or_null("uptime_ms", si->si_uptime_ms, up);
	json_u64_or_null("requests", si->si_requests, up);
	json_u64_or_null("refused", si->si_bad_requests, up);
	json_u64_or_null("dropped", si->si_rpc_dropped, up);
	json_u64_or_null("auth_failed", si->si_auth_failed, up);
	json_u64_or_null("in_flight", si->si_inflight, up);
	json_u64_or_null("idx_syncs", si->si_idx_syncs, up);
	json_u64_or_null("tombstones_collected", si->si_idx_tombs, up);
	json_u64_or_null("idx_doubts", si->si_idx_doubts, up);
	json_u64_or_null("late_writes_refused", si->si_late_writes, up);
	json_u64_or_null("bytes_fenced", si->si_fenced_bytes, up);
	json_u64_or_null("zc_write_bytes", si->si_zc_write_bytes, up);
	json_u64_or_null("zc_read_bytes", si->si_zc_read_bytes, up);
	printf(", \"slice_free\": ");
	if (up) {
		printf("[");
		for (uint32_t j = 0; j < si->si_nr_slices && j < 64; j++)
			printf("%s%" PRIu64, j ? ", " : "",
			       si->si_slice_free[j]);
		printf("]");
	} else {
		printf("null");
	}
	printf(", \"devices\": ");
	status_devs_json(st, si->si_name, len);
	printf("}");
}

/* The sums of the tiers as a JSON array (tiers without devices left out). */
static void status_tiers_json(const struct clu_status *st)
{
	uint64_t size[CLOVIS_TIER_NR] = {0}, fr[CLOVIS_TIER_NR] = {0};
	uint32_t cnt[CLOVIS_TIER_NR] = {0};
	bool first = true;

	for (uint32_t i = 0; i < st->cs_nd; i++) {
		uint32_t t = dev_tier(&st->cs_dev[i]);

		size[t] += st->cs_dev[i].di_size_bytes;
		fr[t] += st->cs_dev[i].di_free_bytes;
		cnt[t]++;
	}
	printf("[");
	for (uint32_t t = 0; t < CLOVIS_TIER_NR; t++) {
		if (cnt[t] == 0)
			continue;
		printf("%s{\"tier\": \"%s\", \"devices\": %u, \"size_bytes\": %"
		       PRIu64 ", \"free_bytes\": %" PRIu64 "}",
		       first ? "" : ", ", tier_names[t], cnt[t], size[t], fr[t]);
		first = false;
	}
	printf("]");
}

/*
 * HA (docs/ha.md), when the cluster has it: the map's epoch and the
 * analyzer's leader (from the first server that answers), then every
 * server and device not ONLINE with its state, every home another server
 * serves (docs/cluster.md "Taking over a home"), and a frozen map's alert.
 * JSON: "ha": {"state": ..., "map": ...} (null without HA).
 */
/* The running jobs of the HA state's "jobs" (ha/ha_lead.c job_progress):
 * one line each. */
static void status_jobs(struct json_object *st)
{
	struct json_object *jobs;

	if (st == NULL || !json_object_object_get_ex(st, "jobs", &jobs) ||
	    !json_object_is_type(jobs, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(jobs); i++) {
		struct json_object *j = json_object_array_get_idx(jobs, i), *v;
		const char *f[] = {"kind", "target", "dev", "walking", "leader"};
		const char *sv[5] = {"", "", "", "", ""};
		uint64_t id = 0, done = 0, total = 0, units = 0;

		for (size_t k = 0; k < 5; k++)
			if (json_object_object_get_ex(j, f[k], &v) &&
			    json_object_is_type(v, json_type_string))
				sv[k] = json_object_get_string(v);
		if (json_object_object_get_ex(j, "id", &v))
			id = (uint64_t)json_object_get_int64(v);
		if (json_object_object_get_ex(j, "servers_done", &v))
			done = (uint64_t)json_object_get_int64(v);
		if (json_object_object_get_ex(j, "servers", &v))
			total = (uint64_t)json_object_get_int64(v);
		if (json_object_object_get_ex(j, "units", &v))
			units = (uint64_t)json_object_get_int64(v);
		printf("ha: job %llu %s of %s%s%s: %llu of %llu servers walked"
		       "%s%s, %llu units %s so far (leader %s)\n",
		       (unsigned long long)id, sv[0], sv[1], sv[2][0] ? "/" : "",
		       sv[2], (unsigned long long)done,
		       (unsigned long long)total, sv[3][0] ? ", walking " : "",
		       sv[3], (unsigned long long)units,
		       strcmp(sv[0], "repair") == 0 ? "rebuilt" : "moved",
		       sv[4]);
	}
}

static void status_ha(struct cli *c)
{
	char *state = NULL, *map = NULL;
	struct json_object *st, *leader, *srv, *fenced;
	struct ha_map *m;

	if (clovis_ha_query(c->c_cl, CLOVIS_HA_STATE, 0, 0, &state) != 0 ||
	    clovis_ha_query(c->c_cl, CLOVIS_HA_MAP, 0, 0, &map) != 0 ||
	    state == NULL || map == NULL) {
		if (c->c_json)
			printf(",\n \"ha\": null");
		goto out;
	}
	if (c->c_json) {
		printf(",\n \"ha\": {\"state\": %s, \"map\": %s}", state, map);
		goto out;
	}
	m = malloc(sizeof *m);
	if (m == NULL || ha_map_from_json(m, map, strlen(map)) != 0) {
		printf("ha: %s\n", state);
		free(m);
		goto out;
	}
	st = json_tokener_parse(state);
	if (st != NULL && json_object_object_get_ex(st, "leader", &leader) &&
	    json_object_object_get_ex(st, "server", &srv) &&
	    json_object_object_get_ex(st, "fenced", &fenced))
		printf("ha: map epoch %llu, analyzer leader %s (asked %s: %s)"
		       "\n", (unsigned long long)m->hm_epoch,
		       json_object_get_string(leader),
		       json_object_get_string(srv),
		       json_object_get_boolean(fenced) ? "FENCED" :
		       "not fenced");
	else
		printf("ha: map epoch %llu, %s\n",
		       (unsigned long long)m->hm_epoch, state);
	status_jobs(st);
	json_object_put(st);
	for (uint32_t i = 0; i < m->hm_nr_servers; i++) {
		const struct ha_srv *s = &m->hm_servers[i];

		if (s->hs_state != HA_ONLINE)
			printf("ha: server %s %s\n", s->hs_name,
			       ha_state_name(s->hs_state));
		for (uint32_t d = 0; d < s->hs_nr_devs; d++)
			if (s->hs_devs[d].hd_state != HA_ONLINE)
				printf("ha: device %s/%s %s\n", s->hs_name,
				       s->hs_devs[d].hd_name,
				       ha_state_name(s->hs_devs[d].hd_state));
		if (s->hs_acting[0] != '\0')
			printf("ha: home %s served by %s (taken over at epoch "
			       "%llu)\n", s->hs_name, s->hs_acting,
			       (unsigned long long)s->hs_acting_epoch);
	}
	if (m->hm_frozen)
		printf("ha: map FROZEN: %s\n", m->hm_alert);
	free(m);
out:
	free(state);
	free(map);
}

/* The requests the servers served, from their metrics (JSON: a member
 * "served" of the status object; nothing when none could be read). */
static void status_ops(struct cli *c, const struct clu_status *st, bool json)
{
	struct cli_ops_agg *a = malloc(sizeof *a);

	if (a != NULL && cli_ops_aggregate(c, st->cs_si, st->cs_nr, a) == 0 &&
	    a->oa_nr > 0) {
		if (json) {
			printf(",\n \"metrics\": ");
			cli_ops_print(c, a, true, false);
		} else {
			cli_ops_print(c, a, false, false);
		}
	}
	free(a);
}

static void status_json(const struct clu_status *st, struct cli *c)
{
	uint32_t bad = 0;

	for (uint32_t i = 0; i < st->cs_nd; i++)
		bad += st->cs_dev[i].di_state != CLOVIS_DEV_ONLINE;
	printf("{\"servers\": [");
	for (uint32_t i = 0; i < st->cs_nr; i++)
		status_server_json(st, &st->cs_si[i], i == 0);
	printf("],\n \"servers_up\": %u, \"servers_down\": %u, \"devices\": %u, "
	       "\"devices_not_online\": %u, \"tiers\": ", st->cs_up,
	       st->cs_nr - st->cs_up, st->cs_nd, bad);
	status_tiers_json(st);
	status_ha(c);
	if (st->cs_up > 0)
		status_ops(c, st, true);
	printf("}\n");
}

/*
 * Ask every server for its status, then the devices of those that answer.
 * Text prints the servers before it asks for the devices; JSON prints
 * once both answered, so its output is whole or nothing.
 */
static int status_fetch(struct cli *c, struct clu_status *st)
{
	uint32_t nd = CLU_STATUS_DEVS;
	int rc;

	st->cs_nr = 64;
	rc = cli_call(c, clovis_server_list(c->c_cl, st->cs_si, &st->cs_nr));
	if (rc != 0)
		return rc;
	if (st->cs_nr > 64)
		st->cs_nr = 64;
	for (uint32_t i = 0; i < st->cs_nr; i++)
		st->cs_up += st->cs_si[i].si_up != 0;
	if (!c->c_json) {
		for (uint32_t i = 0; i < st->cs_nr; i++)
			status_server_text(&st->cs_si[i]);
		printf("servers: %u up, %u down\n", st->cs_up,
		       st->cs_nr - st->cs_up);
	}
	/* With no server up there is no device to list, and asking would
	 * wait out every server's connect timeout once more. */
	if (st->cs_up == 0)
		return 0;
	rc = cli_call(c, clovis_dev_list(c->c_cl, st->cs_dev, &nd));
	st->cs_nd = nd < CLU_STATUS_DEVS ? nd : CLU_STATUS_DEVS;
	return rc;
}

int cmd_cluster_status(struct cli *c)
{
	char conf[PATH_MAX + 64];
	struct clu_status *st = calloc(1, sizeof *st);
	int rc;

	if (st != NULL)
		st->cs_dev = calloc(CLU_STATUS_DEVS, sizeof *st->cs_dev);
	if (st == NULL || st->cs_dev == NULL) {
		free(st);
		return cli_sys(ENOMEM, "device table");
	}
	if (c->c_cluster == NULL && c->c_server == NULL) {
		snprintf(conf, sizeof conf, "%s/cluster.yaml", c->c_dir);
		c->c_cluster = conf;
	}
	rc = cli_cluster_open(c);
	if (rc == 0)
		rc = status_fetch(c, st);
	if (rc == 0 && c->c_json) {
		status_json(st, c);
	} else if (rc == 0) {
		status_devs(st->cs_dev, st->cs_nd);
		if (st->cs_up > 0)
			status_ha(c);
		if (st->cs_up > 0)
			status_ops(c, st, false);
	}
	if (rc == 0 && st->cs_up < st->cs_nr)
		rc = CLI_FAIL;
	else if (rc != 0 && rc != CLI_FAIL)
		rc = cli_fail(c, rc, "cluster status");
	free(st->cs_dev);
	free(st);
	return rc;
}
