/*
 * cli_cluster.c — strata cluster up | down | status: a development cluster
 * of strata-server processes on loopback, and the status of any cluster.
 *
 * Layout of a development cluster directory D:
 *   D/cluster.yaml     the cluster file (servers s0..sN-1 on 127.0.0.1)
 *   D/secret           the cluster secret (mode 0600), named by the file
 *   D/sI/              server I's store
 *   D/sI.pid, D/sI.log its pid file and log
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clovis/cli/cli.h"

/* Waits are bounded: servers answer within this after start, and stop
 * within the drain bound after SIGTERM. */
#define CLU_UP_WAIT_MS 30000
#define CLU_DOWN_WAIT_MS 15000

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

/* D/cluster.yaml for N servers with emulated devices of 128 MiB (room
 * for a 64 MiB block on every tier; the SMR device 256 MiB: 64 MiB zones;
 * device files are fallocated).  The flash devices are lent to the other
 * servers: each server allocates in its own slice of 1/N of them
 * (docs/cluster.md "Placement across servers"), so they are made 96 MiB x
 * N (at most 288 MiB: a 64 MiB block fits up to 4 servers); nvram and sas
 * are kept local (local: true), whole. */
static int write_conf(struct cli *c, const char *dir)
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
		"  index_replicas: %u\n  connect_timeout: 2s\n"
		"  call_timeout: 20s\n"
		"device_size: 128MiB\nservers:\n",
		c->c_nodes < 3 ? (unsigned)c->c_nodes : 3u);
	fl = c->c_nodes < 2 ? 128u : c->c_nodes < 3 ? 192u : 288u;
	for (uint64_t i = 0; i < c->c_nodes; i++)
		fprintf(f, "  - name: s%" PRIu64 "\n"
			"    address: 127.0.0.1\n"
			"    port: %" PRIu64 "\n"
			"    data_dir: s%" PRIu64 "\n"
			"    nvram_dir: s%" PRIu64 "\n"
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
			i, c->c_base_port + i, i, i, fl, fl, fl, fl, fl, fl);
	return fclose(f) == 0 ? 0 : cli_sys(errno, "write '%s'", path);
}

/* strata-server beside this program. */
static int server_path(char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

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
	pid_t p;
	int st;

	snprintf(name, sizeof name, "s%" PRIu64, i);
	snprintf(conf, sizeof conf, "%s/cluster.yaml", dir);
	snprintf(pid, sizeof pid, "%s/%s.pid", dir, name);
	snprintf(log, sizeof log, "%s/%s.log", dir, name);
	p = fork();
	if (p < 0)
		return cli_sys(errno, "fork");
	if (p == 0) {
		execl(bin, bin, "--config", conf, "--name", name, "--pid-file",
		      pid, "--log-file", log, (char *)NULL);
		_exit(127);
	}
	if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return cli_fail(c, -EIO, "start server %s (see %s)", name, log);
	return 0;
}

/* Wait until every server answers STATUS (bounded). */
static int wait_up(struct cli *c, const char *dir)
{
	char conf[PATH_MAX + 64];
	uint64_t until = now_ms() + CLU_UP_WAIT_MS;
	int rc;

	snprintf(conf, sizeof conf, "%s/cluster.yaml", dir);
	c->c_cluster = conf;
	rc = cli_cluster_open(c);
	while (rc == 0) {
		struct clovis_server_info si[16];
		uint32_t nr = 16, up = 0;

		rc = cli_call(c, clovis_server_list(c->c_cl, si, &nr));
		for (uint32_t i = 0; rc == 0 && i < nr; i++)
			up += si[i].si_up;
		if (rc == 0 && up == nr)
			break;
		if (now_ms() >= until)
			rc = cli_fail(c, -ETIMEDOUT, "%u of %u servers answer "
				      "after %d s", up, nr, CLU_UP_WAIT_MS / 1000);
		else
			usleep(200000);
	}
	clovis_fini(c->c_cl);
	c->c_cl = NULL;
	c->c_cluster = NULL;
	return rc;
}

int cmd_cluster_up(struct cli *c)
{
	char dir[PATH_MAX], bin[PATH_MAX];
	int rc;

	if (mkdir(c->c_dir, 0700) != 0 && errno != EEXIST)
		return cli_sys(errno, "create '%s'", c->c_dir);
	if (realpath(c->c_dir, dir) == NULL)
		return cli_sys(errno, "resolve '%s'", c->c_dir);
	if (server_path(bin, sizeof bin) != 0)
		return cli_fail(c, -ENOENT, "strata-server not found beside "
				"this program");
	rc = write_secret(c, dir);
	if (rc == 0)
		rc = write_conf(c, dir);
	for (uint64_t i = 0; rc == 0 && i < c->c_nodes; i++)
		rc = start_server(c, dir, bin, i);
	if (rc == 0)
		rc = wait_up(c, dir);
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

int cmd_cluster_down(struct cli *c)
{
	int stopped = 0, killed = 0;

	for (int i = 0; i < 64; i++) {
		char path[PATH_MAX];
		pid_t p;
		uint64_t until = now_ms() + CLU_DOWN_WAIT_MS;

		snprintf(path, sizeof path, "%s/s%d.pid", c->c_dir, i);
		p = read_pid(path);
		if (p <= 0 || kill(p, SIGTERM) != 0)
			continue;
		while (kill(p, 0) == 0 && now_ms() < until)
			usleep(50000);
		if (kill(p, 0) == 0) {
			kill(p, SIGKILL);
			killed++;
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
	return 0;
}

static const char *const tier_names[CLOVIS_TIER_NR] = {"nvram", "flash",
						       "sas", "smr"};

/* Devices and tiers per server (paths are "SERVER:PATH"). */
static void status_devs(const struct clovis_dev_info *d, uint32_t nr)
{
	uint64_t size[CLOVIS_TIER_NR] = {0}, fr[CLOVIS_TIER_NR] = {0};
	uint32_t cnt[CLOVIS_TIER_NR] = {0}, bad = 0;

	printf("devices: %u\n", nr);
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t t = d[i].di_tier < CLOVIS_TIER_NR ? d[i].di_tier : 0;

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

int cmd_cluster_status(struct cli *c)
{
	char conf[PATH_MAX + 64];
	struct clovis_server_info si[64];
	struct clovis_dev_info *d = calloc(4096, sizeof *d);
	uint32_t nr = 64, nd = 4096, up = 0;
	int rc;

	if (d == NULL)
		return cli_sys(ENOMEM, "device table");
	if (c->c_cluster == NULL && c->c_server == NULL) {
		snprintf(conf, sizeof conf, "%s/cluster.yaml", c->c_dir);
		c->c_cluster = conf;
	}
	rc = cli_cluster_open(c);
	if (rc == 0)
		rc = cli_call(c, clovis_server_list(c->c_cl, si, &nr));
	for (uint32_t i = 0; rc == 0 && i < nr && i < 64; i++) {
		up += si[i].si_up;
		if (si[i].si_up)
			printf("%-28s up    %8" PRIu64 " s  %10" PRIu64
			       " requests  %6" PRIu64 " refused  %6" PRIu64
			       " dropped  %6" PRIu64 " auth-failed  %4" PRIu64
			       " in flight  %4" PRIu64 " idx-syncs  %6" PRIu64
			       " tombstones-collected\n",
			       si[i].si_name, si[i].si_uptime_ms / 1000,
			       si[i].si_requests, si[i].si_bad_requests,
			       si[i].si_rpc_dropped, si[i].si_auth_failed,
			       si[i].si_inflight, si[i].si_idx_syncs,
			       si[i].si_idx_tombs);
		if (si[i].si_up) {
			printf("  fence: %" PRIu64 " late-writes-refused  %"
			       PRIu64 " bytes-fenced  slice-free:",
			       si[i].si_late_writes, si[i].si_fenced_bytes);
			for (uint32_t j = 0; j < si[i].si_nr_slices; j++)
				printf(" %u=%" PRIu64, j, si[i].si_slice_free[j]);
			printf("\n");
		} else {
			printf("%-28s DOWN\n", si[i].si_name);
		}
	}
	if (rc == 0) {
		printf("servers: %u up, %u down\n", up, nr - up);
		rc = cli_call(c, clovis_dev_list(c->c_cl, d, &nd));
	}
	if (rc == 0)
		status_devs(d, nd < 4096 ? nd : 4096);
	free(d);
	if (rc != 0 && rc != CLI_FAIL)
		rc = cli_fail(c, rc, "cluster status");
	return rc == 0 && up < nr ? CLI_FAIL : rc;
}
