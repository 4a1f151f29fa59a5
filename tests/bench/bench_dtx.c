/*
 * bench_dtx.c — strata_bench_dtx: commit latency and throughput of dtxs
 * of 1, 2, 4 and 8 members beside the same updates issued without a dtx,
 * in the same run, on one embedded store (make bench).
 *
 * Each round makes N updates: N one-record index PUTs (OVERWRITE) into N
 * different indices, 64-byte values.  "plain": the N ops launched together
 * and waited for (STABLE); "dtx": the same N ops as members of one dtx,
 * commit op launched, waited for (STABLE).  One round at a time (queue
 * depth 1): latency = one round launch-to-STABLE, median over the run;
 * throughput = rounds per second.  The two sides alternate in blocks so
 * drifts of the machine hit both.
 *
 *   strata_bench_dtx [--dir D] [--seconds S] [--json]
 *   strata_bench_dtx --cluster FILE [--seconds S] [--recovery N] [--json]
 *   strata_bench_dtx --recovery-crash DIR [--recovery N] [--json]
 *
 * Emulation: embedded mode, devices are files in D (page cache, fsync),
 * so a dtx's "participants" are its members on one node: the figures show
 * the cost of the dtx machinery over a group commit, not the network.
 *
 * --cluster: the same rounds against the servers of a cluster, the N
 * indices chosen with N different home servers, so a dtx of N members has
 * N participants (N = 1, 2, 4, 8 up to the number of servers, and that
 * number); "plain" is the same N PUTs without a dtx (each ordered by its
 * first replica and copied by the client to the others).  Then the
 * pdclust figure: rounds of a pdclust 2+1 write of one 8 KiB parity group
 * (object homed on s1, units on every server) and a PUT into an index
 * homed on s0 — 2 participants — beside the same two updates issued
 * plainly (launched together).  Then recovery:
 * --recovery N dtxs (default 10000) over 2 participants abandoned after
 * all votes (the coordinator stops there, as a client killed at
 * dtx.cli.prepared would: dtx_abandon_after_prepare), and the time until
 * every server's termination resolved them (in doubt 0 in DTX LIST).
 * Servers are not restarted by the bench: a restarted participant goes
 * through the same termination path with its replayed records.
 * --recovery-crash DIR does restart one (main_crash() below).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clovis/clovis.h"
#include "clovis/clovis_internal.h"
#include "core/clu_conf.h"
#include "dtm/dtm_msg.h"

#define NMAX 8u
#define LAT_MAX 100000u

static struct clovis *cl;
static struct clovis_idx ix[NMAX];
static uint32_t nsrv;
static double secs = 2.0;
static int json;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "bench_dtx: %s: %d %s\n", what, rc,
			clovis_errmsg());
		exit(1);
	}
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct rec {
	char k[16], v[64];
	void *kb[1], *vb[1];
	size_t kl[1], vl[1];
	struct clovis_bufvec kv, vv;
	int32_t rc[1];
};

/* --cluster: pdclust 2+1 object, 4 KiB units, homed on server 1 (index 0
 * is homed on server 0): the pdclust figure's rounds write one of its
 * parity groups (2 blocks, 8 KiB) and PUT one record into index 0. */
static struct clovis_obj pobj;
#define PD_GROUPS 64u

/* One round of n PUTs, in a dtx or not (pd: PUT into index 0 and a write
 * of one parity group of pobj, n = 2); returns seconds. */
static double round_run(uint32_t n, bool dtx, uint64_t seq, bool pd)
{
	struct rec r[NMAX];
	struct clovis_op *ops[NMAX], *cop = NULL;
	struct clovis_dtx *dx = NULL;
	static char pbuf[2 * 4096];
	uint64_t ps[1] = {2 * (seq % PD_GROUPS)}, pn[1] = {2};
	struct clovis_extvec pev = {1, ps, pn};
	void *pb[1] = {pbuf};
	size_t pl[1] = {sizeof pbuf};
	struct clovis_bufvec pbv = {1, pb, pl};
	double t0 = now();

	if (dtx)
		check(clovis_dtx_open(&dx, clovis_default_realm(cl)), "dtx_open");
	if (pd) {
		n = 2;
		memset(pbuf, (int)(seq & 0xff), sizeof pbuf);
		check(clovis_obj_op(&pobj, CLOVIS_OC_WRITE, &pev, &pbv, 0,
				    &ops[1]), "pdclust write");
		if (dtx)
			check(clovis_dtx_add(dx, ops[1]), "dtx_add");
	}
	for (uint32_t i = 0; i < (pd ? 1u : n); i++) {
		snprintf(r[i].k, sizeof r[i].k, "k%u", (unsigned)(seq % 64));
		memset(r[i].v, 'a' + (int)(seq % 26), sizeof r[i].v);
		r[i].kb[0] = r[i].k;
		r[i].kl[0] = strlen(r[i].k);
		r[i].vb[0] = r[i].v;
		r[i].vl[0] = sizeof r[i].v;
		r[i].kv = (struct clovis_bufvec){1, r[i].kb, r[i].kl};
		r[i].vv = (struct clovis_bufvec){1, r[i].vb, r[i].vl};
		check(clovis_idx_op(&ix[i], CLOVIS_IC_PUT, &r[i].kv, &r[i].vv,
				    r[i].rc, CLOVIS_IF_OVERWRITE, &ops[i]), "put");
		if (dtx)
			check(clovis_dtx_add(dx, ops[i]), "dtx_add");
	}
	check(clovis_op_launch(ops, n), "launch");
	if (dtx) {
		check(clovis_dtx_commit(dx, &cop), "commit");
		check(clovis_op_sync(cop), "commit op");
	}
	for (uint32_t i = 0; i < n; i++) {
		check(clovis_op_wait(ops[i], CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER),
		      "wait");
		clovis_op_free(ops[i]);
	}
	return now() - t0;
}

/* Median latency (us) and rate (rounds/s) of both sides for n members
 * (pd: the pdclust write + PUT rounds). */
static void figure(uint32_t n, bool first, bool pd)
{
	static double lat[2][LAT_MAX];
	uint32_t nr[2] = {0, 0};
	double busy[2] = {0, 0}, end = now() + secs * 2, med[2], rate[2];
	uint64_t seq = 0;

	while (now() < end && nr[0] < LAT_MAX && nr[1] < LAT_MAX)
		for (int side = 0; side < 2; side++)
			for (int b = 0; b < 16; b++) {
				double t = round_run(n, side == 1, seq++, pd);

				lat[side][nr[side]++] = t;
				busy[side] += t;
			}
	for (int side = 0; side < 2; side++) {
		qsort(lat[side], nr[side], sizeof(double), cmpd);
		med[side] = lat[side][nr[side] / 2] * 1e6;
		rate[side] = nr[side] / busy[side];
	}
	if (pd && json)
		printf("%s{\"members\": 2, \"pdclust\": \"2+1 write of one "
		       "8 KiB parity group (home s1) + PUT (home s0)\", "
		       "\"plain_lat_us\": %.1f, \"dtx_lat_us\": %.1f, "
		       "\"lat_ratio\": %.2f, \"plain_rounds_s\": %.0f, "
		       "\"dtx_rounds_s\": %.0f, \"rate_ratio\": %.2f, "
		       "\"rounds\": %u}", first ? "" : ",\n", med[0], med[1],
		       med[1] / med[0], rate[0], rate[1], rate[1] / rate[0],
		       nr[1]);
	else if (pd)
		printf("dtx of 2 participants, pdclust 2+1 write of one 8 KiB "
		       "group + PUT: latency %8.1f us vs plain %8.1f us (ratio "
		       "%.2f); %7.0f vs %7.0f rounds/s (ratio %.2f); %u rounds "
		       "each\n", med[1], med[0], med[1] / med[0], rate[1],
		       rate[0], rate[1] / rate[0], nr[1]);
	else if (json)
		printf("%s{\"members\": %u, \"plain_lat_us\": %.1f, "
		       "\"dtx_lat_us\": %.1f, \"lat_ratio\": %.2f, "
		       "\"plain_rounds_s\": %.0f, \"dtx_rounds_s\": %.0f, "
		       "\"rate_ratio\": %.2f, \"rounds\": %u}", first ? "" : ",\n",
		       n, med[0], med[1], med[1] / med[0], rate[0], rate[1],
		       rate[1] / rate[0], nr[1]);
	else
		printf("dtx of %u member%s: latency %8.1f us vs plain %8.1f us "
		       "(ratio %.2f); %7.0f vs %7.0f rounds/s (ratio %.2f); "
		       "%u rounds each\n", n, n > 1 ? "s" : " ", med[1], med[0],
		       med[1] / med[0], rate[1], rate[0], rate[1] / rate[0],
		       nr[1]);
}

/* In-doubt records on server s, asked with a call timeout of ms
 * (UINT64_MAX: it did not answer). */
static uint64_t in_doubt_on(uint32_t s, uint32_t ms)
{
	DtxReq q = DTX_REQ__INIT;
	DtxReply *rp = NULL;
	uint8_t *b;
	size_t bl, rl = 0;
	void *rb = NULL;
	uint64_t v;
	int rc;

	q.kind = DTM_MSG_LIST;
	q.limit = 1;
	q.home = s + 1;
	check(dtm_pack(&q.base, &b, &bl), "pack");
	rc = cluster_dtx_call(cl, s, DTM_OP, b, bl, NULL, 0, ms, &rb, &rl);
	if (rc == 0)
		rc = dtm_reply_decode(rb, rl, &rp);
	free(rb);
	free(b);
	if (rc != 0)
		return UINT64_MAX;
	v = rp->in_doubt;
	dtx_reply__free_unpacked(rp, NULL);
	return v;
}

/* Sum of the servers' in-doubt counts (UINT64_MAX: one did not answer). */
static uint64_t in_doubt(void)
{
	uint64_t sum = 0;

	for (uint32_t s = 0; s < nsrv; s++) {
		uint64_t v = in_doubt_on(s, 5000);

		if (v == UINT64_MAX)
			return UINT64_MAX;
		sum += v;
	}
	return sum;
}

/* n dtxs of 2 members (ix[0], ix[1]: 2 participants) abandoned after all
 * votes, 32 in flight; keys "<tag><number>", values of tag bytes.  Returns
 * how many were left in doubt (-ETIMEDOUT). */
static uint32_t abandon_dtxs(uint32_t n, char tag)
{
	const uint32_t depth = 32;
	struct rec *r = calloc(2 * depth, sizeof *r);
	struct clovis_op **ops = calloc(2 * depth, sizeof *ops);
	struct clovis_op **cops = calloc(depth, sizeof *cops);
	uint32_t made = 0;

	if (r == NULL || ops == NULL || cops == NULL)
		check(-ENOMEM, "abandon_dtxs");
	dtx_abandon_after_prepare = true;
	for (uint32_t k = 0; k < n; k += depth) {
		uint32_t m = n - k < depth ? n - k : depth;

		for (uint32_t j = 0; j < m; j++) {
			struct clovis_dtx *dx;

			check(clovis_dtx_open(&dx, clovis_default_realm(cl)),
			      "dtx_open");
			for (uint32_t i = 0; i < 2; i++) {
				struct rec *x = &r[2 * j + i];

				snprintf(x->k, sizeof x->k, "%c%u", tag, k + j);
				memset(x->v, tag, sizeof x->v);
				x->kb[0] = x->k;
				x->kl[0] = strlen(x->k);
				x->vb[0] = x->v;
				x->vl[0] = sizeof x->v;
				x->kv = (struct clovis_bufvec){1, x->kb, x->kl};
				x->vv = (struct clovis_bufvec){1, x->vb, x->vl};
				check(clovis_idx_op(&ix[i], CLOVIS_IC_PUT, &x->kv,
						    &x->vv, x->rc,
						    CLOVIS_IF_OVERWRITE,
						    &ops[2 * j + i]), "put");
				check(clovis_dtx_add(dx, ops[2 * j + i]), "add");
			}
			check(clovis_dtx_commit(dx, &cops[j]), "commit");
		}
		check(clovis_op_launch(cops, m), "launch");
		for (uint32_t j = 0; j < m; j++) {
			clovis_op_wait(cops[j], CLOVIS_OS_STABLE,
				       CLOVIS_TIME_NEVER);
			made += clovis_op_rc(cops[j]) == -ETIMEDOUT;
			clovis_op_free(cops[j]);
			clovis_op_free(ops[2 * j]);
			clovis_op_free(ops[2 * j + 1]);
		}
	}
	dtx_abandon_after_prepare = false;
	free(r);
	free(ops);
	free(cops);
	return made;
}

/* n dtxs of 2 members (ix[0], ix[1]: 2 participants) left in doubt after
 * all votes; then the time until all are resolved. */
static void recovery(uint32_t n)
{
	double t0, t1, t2 = 0;
	uint64_t left = 0, last = 0;
	uint32_t made;

	t0 = now();
	made = abandon_dtxs(n, 'r');
	t1 = now();
	while (now() - t1 < 300) {
		left = in_doubt();
		if (left == 0) {
			t2 = now();
			break;
		}
		if (left != last)
			last = left;
		usleep(200000);
	}
	if (json)
		printf(",\n{\"recovery_dtx\": %u, \"abandoned\": %u, "
		       "\"prepare_s\": %.2f, \"resolve_s\": %.2f, "
		       "\"resolved_per_s\": %.0f, \"left\": %" PRIu64 "}",
		       n, made, t1 - t0, t2 ? t2 - t1 : -1,
		       t2 ? made / (t2 - t1) : 0, left);
	else
		printf("recovery: %u dtxs of 2 participants abandoned after the "
		       "votes (%u in doubt, made in %.2f s): %s %.2f s "
		       "(%.0f dtx/s)%s\n", n, made, t1 - t0,
		       t2 ? "all resolved in" : "NOT resolved within",
		       t2 ? t2 - t1 : now() - t1,
		       t2 ? made / (t2 - t1) : 0, t2 ? "" : " — left in doubt");
}

static int main_cluster(const char *file, uint32_t nrec)
{
	struct clovis_conf c = {.cc_mode = CLOVIS_MODE_CLUSTER,
				.cc_cluster_conf = file};
	struct clovis_server_info si[64];
	static struct clu_conf hc;
	uint32_t ns[6], nn = 0;

	check(clovis_init(&cl, &c), "clovis_init (cluster)");
	nsrv = 64;
	check(clovis_server_list(cl, si, &nsrv), "server list");
	hc.cc_nr_servers = nsrv;
	/* index i: home server i % nsrv (a fresh id per run) */
	for (uint32_t i = 0; i < NMAX; i++) {
		uint64_t base = (uint64_t)time(NULL) << 20;
		struct clovis_id id;
		struct clovis_op *op;

		for (uint64_t lo = base + i * 4096; ; lo++) {
			id = (struct clovis_id){0xbe4e, lo};
			if (clu_home(&hc, st_of(&id)) == i % nsrv)
				break;
		}
		check(clovis_idx_init(&ix[i], clovis_default_realm(cl), &id),
		      "idx_init");
		check(clovis_entity_op(&ix[i].in_entity, CLOVIS_EO_CREATE, &op),
		      "create");
		check(clovis_op_sync(op), "create");
	}
	for (uint32_t n = 1; n <= NMAX && n <= nsrv; n *= 2)
		ns[nn++] = n;
	if (nsrv <= NMAX && ns[nn - 1] != nsrv)
		ns[nn++] = nsrv;
	if (json)
		printf("{\"bench\": \"dtx\", \"emulation\": \"cluster of %u "
		       "servers (%s), N members = N participants\", "
		       "\"figures\": [\n", nsrv, file);
	else
		printf("bench_dtx: cluster of %u servers (%s); one round = N "
		       "index PUTs on N servers, queue depth 1, %.1f s per "
		       "side\n", nsrv, file, secs);
	for (uint32_t i = 0; i < nn; i++)
		figure(ns[i], i == 0, false);
	if (nsrv >= 2) {
		struct clovis_obj_attr a = {.oa_block_shift = 12,
					    .oa_layout = CLOVIS_LAYOUT_PDCLUST,
					    .oa_data_units = 2,
					    .oa_parity_units = 1,
					    .oa_unit_shift = 12};
		uint64_t base = ((uint64_t)time(NULL) << 20) + 0xf0000;
		struct clovis_id id;
		struct clovis_op *op;

		for (uint64_t lo = base; ; lo++) {
			id = (struct clovis_id){0xbe4f, lo};
			if (clu_home(&hc, st_of(&id)) == 1)
				break;
		}
		check(clovis_obj_init(&pobj, clovis_default_realm(cl), &id, &a),
		      "obj_init");
		check(clovis_entity_op(&pobj.ob_entity, CLOVIS_EO_CREATE, &op),
		      "create pdclust");
		check(clovis_op_sync(op), "create pdclust");
		figure(2, false, true);
	}
	if (nsrv >= 2 && nrec > 0)
		recovery(nrec);
	if (json)
		printf("\n]}\n");
	clovis_fini(cl);
	return 0;
}

/* ------------------------------------------- recovery after a crash */

/* Start strata-server NAME of the development cluster in dir the way
 * 'strata cluster up' does (it daemonizes; the first child is reaped). */
static int start_server(const char *bin, const char *dir, const char *name)
{
	char conf[PATH_MAX + 16], pid[PATH_MAX + 80], log[PATH_MAX + 80];
	pid_t p;
	int st;

	snprintf(conf, sizeof conf, "%s/cluster.yaml", dir);
	snprintf(pid, sizeof pid, "%s/%s.pid", dir, name);
	snprintf(log, sizeof log, "%s/%s.log", dir, name);
	p = fork();
	if (p < 0)
		return -errno;
	if (p == 0) {
		execl(bin, bin, "--config", conf, "--name", name, "--pid-file",
		      pid, "--log-file", log, (char *)NULL);
		_exit(127);
	}
	if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -EIO;
	return 0;
}

/* The pid in dir/NAME.pid, or 0. */
static pid_t server_pid(const char *dir, const char *name)
{
	char path[PATH_MAX + 80];
	long p = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s.pid", dir, name);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld", &p) != 1)
		p = 0;
	fclose(f);
	return (pid_t)p;
}

/* pid has exited (gone, or a zombie nobody reaps: a daemon's parent is
 * init, which in a container may never reap it). */
static bool pid_gone(pid_t pid)
{
	char path[64], buf[512], *e;
	FILE *f;
	size_t l;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return true;
	l = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[l] = '\0';
	e = strrchr(buf, ')');
	return e != NULL && e[1] == ' ' && (e[2] == 'Z' || e[2] == 'X');
}

/*
 * --recovery-crash DIR: DIR is a development cluster ('strata cluster up
 * --dir DIR', pids in DIR/sI.pid).  n dtxs over 2 participants (homes s0
 * and s1; s0, the lower, is the decider) abandoned after all votes; the
 * decider's strata-server SIGKILLed at once (the PREPARE's decision
 * deadline, call timeout + 1 s, and the 2 s before termination acts are
 * not over yet for most records: the counts at the kill say how many),
 * restarted with the command line 'strata cluster up' used; then the time
 * until it answers, and until no server holds an in-doubt record (each
 * server's DTX LIST, every 0.1 s), confirmed by clovis_dtx_settle().
 * Every wait is bounded (300 s in all).
 */
static int main_crash(const char *dir, uint32_t n)
{
	char conf[PATH_MAX + 16], bin[PATH_MAX + 32], self[PATH_MAX], name[64];
	struct clovis_conf c = {.cc_mode = CLOVIS_MODE_CLUSTER};
	struct clovis_server_info si[64];
	static struct clu_conf hc;
	uint64_t at_kill[64], left = UINT64_MAX, last = 0;
	double t0, t1, tk, tr, tu = 0, td = 0, tend;
	const char *env = getenv("STRATA_SERVER");
	uint32_t made, dec = 0;
	ssize_t sl;
	pid_t pid;
	int rc, src = 1;

	snprintf(conf, sizeof conf, "%s/cluster.yaml", dir);
	c.cc_cluster_conf = conf;
	if (env != NULL) {
		snprintf(bin, sizeof bin, "%s", env);
	} else {
		sl = readlink("/proc/self/exe", self, sizeof self - 1);
		if (sl <= 0)
			check(-errno, "readlink /proc/self/exe");
		self[sl] = '\0';
		*strrchr(self, '/') = '\0';
		snprintf(bin, sizeof bin, "%s/strata-server", self);
	}
	if (access(bin, X_OK) != 0)
		check(-ENOENT, "strata-server beside the bench ($STRATA_SERVER)");
	check(clovis_init(&cl, &c), "clovis_init (cluster)");
	nsrv = 64;
	check(clovis_server_list(cl, si, &nsrv), "server list");
	if (nsrv < 2)
		check(-EINVAL, "--recovery-crash needs 2 servers or more");
	hc.cc_nr_servers = nsrv;
	for (uint32_t i = 0; i < 2; i++) {
		uint64_t base = (uint64_t)time(NULL) << 20;
		struct clovis_id id;
		struct clovis_op *op;

		for (uint64_t lo = base + (i + 16) * 4096; ; lo++) {
			id = (struct clovis_id){0xbe4f, lo};
			if (clu_home(&hc, st_of(&id)) == i)
				break;
		}
		check(clovis_idx_init(&ix[i], clovis_default_realm(cl), &id),
		      "idx_init");
		check(clovis_entity_op(&ix[i].in_entity, CLOVIS_EO_CREATE, &op),
		      "create");
		check(clovis_op_sync(op), "create");
	}
	/* the participant list is sorted by server: home 0 decides */
	sscanf(si[dec].si_name, "%63s", name);
	pid = server_pid(dir, name);
	if (pid <= 0 || kill(pid, 0) != 0)
		check(-ESRCH, "decider's pid file (DIR/NAME.pid)");
	t0 = now();
	made = abandon_dtxs(n, 'c');
	t1 = now();
	for (uint32_t s = 0; s < nsrv; s++)
		at_kill[s] = in_doubt_on(s, 5000);
	tk = now();
	check(kill(pid, SIGKILL) != 0 ? -errno : 0, "SIGKILL the decider");
	for (int i = 0; i < 1000 && !pid_gone(pid); i++)
		usleep(5000);
	/* as 'strata cluster down' after a SIGKILL: a zombie's pid file
	 * would make the new server refuse to start */
	snprintf(self, sizeof self, "%s/%s.pid", dir, name);
	unlink(self);
	tr = now();
	rc = start_server(bin, dir, name);
	if (rc != 0)
		check(rc, "restart the decider (see its log in DIR)");
	while (now() - tk < 300) {
		if (tu == 0 && in_doubt_on(dec, 1000) != UINT64_MAX)
			tu = now();
		if (tu == 0 && now() - tr > 60)
			break;
		if (tu != 0) {
			left = 0;
			for (uint32_t s = 0; s < nsrv && left != UINT64_MAX; s++) {
				uint64_t v = in_doubt_on(s, 5000);

				left = v == UINT64_MAX ? v : left + v;
			}
			if (left == 0) {
				td = now();
				break;
			}
			if (left != UINT64_MAX)
				last = left;
		}
		usleep(100000);
	}
	if (td != 0)
		src = clovis_dtx_settle(cl, 0, 30000);
	tend = now();
	if (json) {
		printf("{\"bench\": \"dtx-recovery-crash\", \"emulation\": "
		       "\"cluster of %u servers (%s), decider %s SIGKILLed and "
		       "restarted\", \"dtx\": %u, \"abandoned\": %u, "
		       "\"prepare_s\": %.2f, \"in_doubt_at_kill\": [", nsrv,
		       conf, name, n, made, t1 - t0);
		for (uint32_t s = 0; s < nsrv; s++)
			printf("%s%" PRId64, s ? ", " : "",
			       at_kill[s] == UINT64_MAX ? -1 : (int64_t)at_kill[s]);
		printf("], \"kill_to_restart_s\": %.3f, \"restart_s\": %.2f, \"resolved_from_restart_s\": "
		       "%.2f, \"resolved_from_kill_s\": %.2f, "
		       "\"resolved_per_s\": %.0f, \"settle_rc\": %d, "
		       "\"left\": %" PRId64 "}\n", tr - tk, tu ? tu - tr : -1,
		       td ? td - tr : -1, td ? td - tk : -1,
		       td ? at_kill[dec] / (td - tr) : 0, src,
		       td ? 0 : (int64_t)last);
	} else {
		printf("bench_dtx: recovery after a crash: cluster of %u "
		       "servers (%s)\n", nsrv, conf);
		printf("  %u dtxs of 2 participants abandoned after the votes "
		       "(%u in doubt, made in %.2f s)\n", n, made, t1 - t0);
		printf("  in doubt at the kill (records per server):");
		for (uint32_t s = 0; s < nsrv; s++)
			printf(" %s%" PRId64, s == dec ? "*" : "",
			       at_kill[s] == UINT64_MAX ? -1 : (int64_t)at_kill[s]);
		printf("  (* = decider %s, SIGKILLed)\n", name);
		printf("  restart %.3f s after the kill; %s answers %.2f s after "
		       "its restart (%.2f s after the kill)\n", tr - tk, name,
		       tu ? tu - tr : -1.0,
		       tu ? tu - tk : -1.0);
		if (td != 0)
			printf("  all resolved %.2f s after the restart (%.2f s "
			       "after the kill): %.0f dtx/s; clovis_dtx_settle "
			       "%d (%.2f s)\n", td - tr, td - tk,
			       at_kill[dec] / (td - tr), src, tend - td);
		else
			printf("  NOT resolved within 300 s of the kill: %" PRIu64
			       " records left in doubt\n", last);
	}
	clovis_fini(cl);
	return td != 0 && src == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *dir = "build/bench-data";
	char path[600];
	struct clovis_conf c = {.cc_flags = CLOVIS_CONF_CREATE,
				.cc_dev_size = 64ull << 20};
	const uint32_t ns[] = {1, 2, 4, 8};
	const char *cfile = NULL;
	uint32_t nrec = 10000;
	const char *crash = NULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--cluster") == 0 && i + 1 < argc) {
			cfile = argv[++i];
			continue;
		}
		if (strcmp(argv[i], "--recovery") == 0 && i + 1 < argc) {
			nrec = (uint32_t)atoi(argv[++i]);
			continue;
		}
		if (strcmp(argv[i], "--recovery-crash") == 0 && i + 1 < argc) {
			crash = argv[++i];
			continue;
		}
		if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (strcmp(argv[i], "--json") == 0)
			json = 1;
	}
	if (secs <= 0 || secs > 600)
		secs = 2.0;
	if (crash != NULL)
		return main_crash(crash, nrec);
	if (cfile != NULL)
		return main_cluster(cfile, nrec);
	snprintf(path, sizeof path, "%s/store-dtx", dir);
	clovis_store_destroy(path);
	c.cc_data_dir = path;
	check(clovis_init(&cl, &c), "clovis_init");
	for (uint32_t i = 0; i < NMAX; i++) {
		struct clovis_id id = {0xbe4d, 0x1000 + i};
		struct clovis_op *op;

		check(clovis_idx_init(&ix[i], clovis_default_realm(cl), &id),
		      "idx_init");
		check(clovis_entity_op(&ix[i].in_entity, CLOVIS_EO_CREATE, &op),
		      "create");
		check(clovis_op_sync(op), "create");
	}
	if (json)
		printf("{\"bench\": \"dtx\", \"emulation\": \"embedded, file "
		       "devices in %s, members on one node\", \"figures\": [\n",
		       dir);
	else
		printf("bench_dtx: embedded store in %s (file devices); one "
		       "round = N index PUTs, queue depth 1, %.1f s per side\n",
		       dir, secs);
	for (uint32_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
		figure(ns[i], i == 0, false);
	if (json)
		printf("\n], \"recovery\": \"cluster only (--cluster)\"}\n");
	else
		printf("bench_dtx: recovery with in-doubt dtxs: cluster mode "
		       "only (--cluster FILE)\n");
	clovis_fini(cl);
	check(clovis_store_destroy(path), "destroy");
	return 0;
}
