/*
 * etcd_proc.c — start, wait for, stop and kill local etcd members
 * (contract in ha/etcd_proc.h).
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "ha/etcd_proc.h"

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void path_of(char *buf, size_t size, const char *dir, uint32_t j,
		    const char *ext)
{
	snprintf(buf, size, "%s/etcd%u%s", dir, j, ext);
}

static pid_t pid_read(const char *dir, uint32_t j)
{
	char path[PATH_MAX];
	long p = 0;
	FILE *f;

	path_of(path, sizeof path, dir, j, ".pid");
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld", &p) != 1)
		p = 0;
	fclose(f);
	return (pid_t)p;
}

/* Is p a zombie (exited, not yet reaped by a parent that is not us:
 * a member outlives its starter and is reaped by init, or by nobody in
 * a container whose first process does not reap)? */
static bool pid_zombie(pid_t p)
{
	char path[64], buf[512];
	const char *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)p);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp != NULL && rp[1] == ' ' && rp[2] == 'Z';
}

/* Is p alive (reaping it first when it is our exited child)? */
static bool pid_alive(pid_t p)
{
	if (p <= 0)
		return false;
	waitpid(p, NULL, WNOHANG);
	if (kill(p, 0) != 0 && errno == ESRCH)
		return false;
	return !pid_zombie(p);
}

bool etcd_proc_alive(const char *dir, uint32_t j)
{
	return pid_alive(pid_read(dir, j));
}

/* The last non-empty line of member j's log into buf ("" if none); and
 * the log's size. */
static off_t log_tail(const char *dir, uint32_t j, char *buf, size_t size)
{
	char path[PATH_MAX], line[1024];
	struct stat st;
	FILE *f;

	buf[0] = '\0';
	path_of(path, sizeof path, dir, j, ".log");
	f = fopen(path, "r");
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] != '\0')
			snprintf(buf, size, "%.*s", (int)size - 1, line);
	}
	if (f != NULL)
		fclose(f);
	return stat(path, &st) == 0 ? st.st_size : 0;
}

static int conf_check(const struct etcd_proc_conf *c)
{
	if (c == NULL || c->epc_dir == NULL || c->epc_host == NULL ||
	    c->epc_members == 0 || c->epc_members > ETCD_ENDPOINTS_MAX ||
	    strlen(c->epc_dir) > PATH_MAX - 64 || strlen(c->epc_host) > 64)
		return err_set(-EINVAL, "etcd: start: a directory, a host and "
			       "1..%u members are required", ETCD_ENDPOINTS_MAX);
	for (uint32_t j = 0; j < c->epc_members; j++) {
		if (c->epc_client[j] == 0 || c->epc_peer[j] == 0 ||
		    c->epc_client[j] == c->epc_peer[j])
			return err_set(-EINVAL, "etcd: member %u: ports %u and "
				       "%u", j, c->epc_client[j],
				       c->epc_peer[j]);
		for (uint32_t o = 0; o < j; o++)
			if (c->epc_client[o] == c->epc_client[j] ||
			    c->epc_peer[o] == c->epc_peer[j] ||
			    c->epc_client[o] == c->epc_peer[j] ||
			    c->epc_peer[o] == c->epc_client[j])
				return err_set(-EINVAL, "etcd: members %u and "
					       "%u share a port", o, j);
	}
	return 0;
}

/* The etcd program: $STRATA_ETCD, else /usr/bin/etcd. */
static const char *etcd_bin(void)
{
	const char *e = getenv("STRATA_ETCD");

	return e != NULL && e[0] != '\0' ? e : "/usr/bin/etcd";
}

/* Exec member j (in the child; never returns). */
static void member_exec(const struct etcd_proc_conf *c, uint32_t j,
			const char *cluster, int logfd)
{
	char name[16], data[PATH_MAX], lc[96], lp[96], hb[16], el[16];
	const char *h = c->epc_host;
	int nul = open("/dev/null", O_RDONLY);

	setsid();
	if (nul >= 0)
		dup2(nul, 0);
	dup2(logfd, 1);
	dup2(logfd, 2);
	close_range(3, ~0u, 0);
	snprintf(name, sizeof name, "m%u", j);
	path_of(data, sizeof data, c->epc_dir, j, "");
	snprintf(lc, sizeof lc, "http://%s:%u", h, c->epc_client[j]);
	snprintf(lp, sizeof lp, "http://%s:%u", h, c->epc_peer[j]);
	snprintf(hb, sizeof hb, "%u", c->epc_heartbeat_ms ?
		 c->epc_heartbeat_ms : 100u);
	snprintf(el, sizeof el, "%u", c->epc_election_ms ?
		 c->epc_election_ms : 1000u);
	execl(etcd_bin(), etcd_bin(), "--name", name, "--data-dir", data,
	      "--listen-client-urls", lc, "--advertise-client-urls", lc,
	      "--listen-peer-urls", lp, "--initial-advertise-peer-urls", lp,
	      "--initial-cluster", cluster, "--initial-cluster-state", "new",
	      "--initial-cluster-token", c->epc_dir,
	      "--heartbeat-interval", hb, "--election-timeout", el,
	      "--snapshot-count", "10000", "--max-wals", "2",
	      "--max-snapshots", "2", "--auto-compaction-mode", "revision",
	      "--auto-compaction-retention", "10000",
	      "--quota-backend-bytes", "268435456",
	      "--logger", "zap", "--log-level", "warn", (char *)NULL);
	dprintf(2, "exec %s: %s\n", etcd_bin(), strerror(errno));
	_exit(127);
}

/* Fork member j; its pid file written. */
static int member_start(const struct etcd_proc_conf *c, uint32_t j,
			const char *cluster)
{
	char path[PATH_MAX];
	pid_t p;
	FILE *f;
	int fd;

	path_of(path, sizeof path, c->epc_dir, j, ".log");
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(-errno, "etcd member %u: log '%s': %s", j, path,
			       strerror(errno));
	p = fork();
	if (p < 0) {
		close(fd);
		return err_set(-errno, "etcd member %u: fork: %s", j,
			       strerror(errno));
	}
	if (p == 0)
		member_exec(c, j, cluster, fd);
	close(fd);
	path_of(path, sizeof path, c->epc_dir, j, ".pid");
	f = fopen(path, "w");
	if (f == NULL || fprintf(f, "%ld\n", (long)p) < 0 || fclose(f) != 0) {
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
		return err_set(-EIO, "etcd member %u: pid file '%s'", j, path);
	}
	return 0;
}

/* Write D/etcd.endpoints. */
static int endpoints_write(const struct etcd_proc_conf *c)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/etcd.endpoints", c->epc_dir);
	f = fopen(path, "w");
	if (f == NULL)
		return err_set(-errno, "etcd: '%s': %s", path, strerror(errno));
	for (uint32_t j = 0; j < c->epc_members; j++)
		fprintf(f, "http://%s:%u\n", c->epc_host, c->epc_client[j]);
	return fclose(f) == 0 ? 0 : err_set(-EIO, "etcd: '%s'", path);
}

/* Does url + "/health" say {"health":"true"}? */
static bool health_ok(const char *url)
{
	char full[ETCD_URL_MAX + 16], buf[256] = "";
	FILE *mem = fmemopen(buf, sizeof buf - 1, "w");
	CURL *h = curl_easy_init();
	long code = 0;
	bool ok;

	if (mem == NULL || h == NULL) {
		if (mem != NULL)
			fclose(mem);
		curl_easy_cleanup(h);
		return false;
	}
	snprintf(full, sizeof full, "%s/health", url);
	curl_easy_setopt(h, CURLOPT_URL, full);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 2000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	ok = curl_easy_perform(h) == CURLE_OK;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	fclose(mem);
	return ok && code == 200 && strstr(buf, "\"health\":\"true\"") != NULL;
}

/* Wait until every member is healthy (bounded, on progress). */
static int wait_healthy(const struct etcd_proc_conf *c)
{
	uint64_t t0 = mono_ms(), moved = t0;
	off_t size[ETCD_ENDPOINTS_MAX] = {0};
	char url[96], last[512];
	uint32_t up;

	for (;;) {
		up = 0;
		for (uint32_t j = 0; j < c->epc_members; j++) {
			off_t s = log_tail(c->epc_dir, j, last, sizeof last);

			if (s != size[j]) {
				size[j] = s;
				moved = mono_ms();
			}
			if (!etcd_proc_alive(c->epc_dir, j))
				return err_set(strstr(last, "address already "
						      "in use") ? -EADDRINUSE :
					       -ESRCH, "etcd member %u (client "
					       "port %u, peer port %u) exited: "
					       "%.300s (see %s/etcd%u.log)", j,
					       c->epc_client[j], c->epc_peer[j],
					       last, c->epc_dir, j);
			snprintf(url, sizeof url, "http://%s:%u", c->epc_host,
				 c->epc_client[j]);
			up += health_ok(url);
		}
		if (up == c->epc_members)
			return 0;
		if (mono_ms() - moved >= ETCD_PROC_STALL_MS ||
		    mono_ms() - t0 >= ETCD_PROC_WAIT_MS)
			return err_set(-ETIMEDOUT, "etcd: %u of %u members "
				       "healthy after %" PRIu64 " s (see %s/"
				       "etcd*.log)", up, c->epc_members,
				       (mono_ms() - t0) / 1000, c->epc_dir);
		usleep(100000);
	}
}

int etcd_proc_start(const struct etcd_proc_conf *c)
{
	char cluster[ETCD_ENDPOINTS_MAX * 96] = "";
	size_t n = 0;
	int rc = conf_check(c);

	if (rc != 0)
		return rc;
	if (access(etcd_bin(), X_OK) != 0)
		return err_set(-ENOENT, "etcd: no program '%s' (Debian package "
			       "etcd-server; or set $STRATA_ETCD)", etcd_bin());
	if (mkdir(c->epc_dir, 0700) != 0 && errno != EEXIST)
		return err_set(-errno, "etcd: create '%s': %s", c->epc_dir,
			       strerror(errno));
	for (uint32_t j = 0; j < ETCD_ENDPOINTS_MAX; j++)
		if (etcd_proc_alive(c->epc_dir, j))
			return err_set(-EEXIST, "etcd: member %u of '%s' runs "
				       "already (pid %ld)", j, c->epc_dir,
				       (long)pid_read(c->epc_dir, j));
	for (uint32_t j = 0; j < c->epc_members; j++)
		n += (size_t)snprintf(cluster + n, sizeof cluster - n,
				      "%sm%u=http://%s:%u", j ? "," : "", j,
				      c->epc_host, c->epc_peer[j]);
	rc = endpoints_write(c);
	for (uint32_t j = 0; rc == 0 && j < c->epc_members; j++)
		rc = member_start(c, j, cluster);
	if (rc == 0)
		rc = wait_healthy(c);
	if (rc != 0) {
		err_push();
		etcd_proc_stop(c->epc_dir, NULL, NULL);
		err_pop();
	}
	return rc;
}

int etcd_proc_stop(const char *dir, uint32_t *stopped, uint32_t *killed)
{
	pid_t p[ETCD_ENDPOINTS_MAX];
	uint64_t until = mono_ms() + ETCD_PROC_STOP_MS;
	uint32_t left, ns = 0, nk = 0;
	char path[PATH_MAX];

	for (uint32_t j = 0; j < ETCD_ENDPOINTS_MAX; j++) {
		p[j] = pid_read(dir, j);
		if (!pid_alive(p[j]) || kill(p[j], SIGTERM) != 0)
			p[j] = 0;
	}
	do {
		left = 0;
		for (uint32_t j = 0; j < ETCD_ENDPOINTS_MAX; j++)
			left += pid_alive(p[j]);
		if (left > 0)
			usleep(50000);
	} while (left > 0 && mono_ms() < until);
	for (uint32_t j = 0; j < ETCD_ENDPOINTS_MAX; j++) {
		path_of(path, sizeof path, dir, j, ".pid");
		if (p[j] > 0 && pid_alive(p[j])) {
			kill(p[j], SIGKILL);
			for (int i = 0; i < 100 && pid_alive(p[j]); i++)
				usleep(20000);
			nk++;
		} else if (p[j] > 0) {
			ns++;
		}
		unlink(path);
	}
	if (stopped != NULL)
		*stopped = ns;
	if (killed != NULL)
		*killed = nk;
	return 0;
}

int etcd_proc_kill(const char *dir, uint32_t j)
{
	char path[PATH_MAX];
	pid_t p = pid_read(dir, j);

	if (j >= ETCD_ENDPOINTS_MAX || !pid_alive(p))
		return err_set(-ENOENT, "etcd: no live member %u in '%s'", j,
			       dir);
	kill(p, SIGKILL);
	for (int i = 0; i < 250 && pid_alive(p); i++)
		usleep(20000);
	if (pid_alive(p))
		return err_set(-ETIMEDOUT, "etcd: member %u (pid %ld) stays "
			       "after SIGKILL", j, (long)p);
	path_of(path, sizeof path, dir, j, ".pid");
	unlink(path);
	return 0;
}

int etcd_proc_endpoints(const char *dir, char urls[][ETCD_URL_MAX + 1],
			uint32_t *nr)
{
	char path[PATH_MAX], line[ETCD_URL_MAX + 8];
	FILE *f;
	int rc = 0;

	*nr = 0;
	snprintf(path, sizeof path, "%s/etcd.endpoints", dir);
	f = fopen(path, "r");
	if (f == NULL)
		return err_set(-ENOENT, "etcd: no '%s'", path);
	while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '\0')
			continue;
		if (*nr == ETCD_ENDPOINTS_MAX || strncmp(line, "http://", 7))
			rc = err_set(-EINVAL, "etcd: '%s': bad line '%s'",
				     path, line);
		else
			snprintf(urls[(*nr)++], ETCD_URL_MAX + 1, "%.*s",
				 (int)ETCD_URL_MAX, line);
	}
	fclose(f);
	return rc;
}

/* /v3/maintenance/status of url: its member id and the leader's. */
static bool status_of(const char *url, char *me, char *leader, size_t size)
{
	char full[2048], buf[1024] = "";
	FILE *mem = fmemopen(buf, sizeof buf - 1, "w");
	CURL *h = curl_easy_init();
	json_object *o, *hd, *v;
	bool ok;

	if (mem == NULL || h == NULL) {
		if (mem != NULL)
			fclose(mem);
		curl_easy_cleanup(h);
		return false;
	}
	snprintf(full, sizeof full, "%s/v3/maintenance/status", url);
	curl_easy_setopt(h, CURLOPT_URL, full);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, "{}");
	curl_easy_setopt(h, CURLOPT_WRITEDATA, mem);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 2000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	ok = curl_easy_perform(h) == CURLE_OK;
	curl_easy_cleanup(h);
	fclose(mem);
	o = ok ? json_tokener_parse(buf) : NULL;
	ok = o != NULL && json_object_object_get_ex(o, "header", &hd) &&
	     json_object_object_get_ex(hd, "member_id", &v);
	if (ok)
		snprintf(me, size, "%.*s", (int)size - 1,
			 json_object_get_string(v));
	ok = ok && json_object_object_get_ex(o, "leader", &v);
	if (ok)
		snprintf(leader, size, "%.*s", (int)size - 1,
			 json_object_get_string(v));
	json_object_put(o);
	return ok;
}

int etcd_proc_leader(const char *dir)
{
	char urls[ETCD_ENDPOINTS_MAX][ETCD_URL_MAX + 1], me[32], ld[32];
	uint32_t nr;
	int rc = etcd_proc_endpoints(dir, urls, &nr);

	if (rc != 0)
		return rc;
	for (uint32_t j = 0; j < nr; j++)
		if (status_of(urls[j], me, ld, sizeof me) &&
		    strcmp(me, ld) == 0)
			return (int)j;
	return err_set(-ENOENT, "etcd: no member of '%s' is the leader",
		       dir);
}
