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
 *
 * Emulation: embedded mode, devices are files in D (page cache, fsync),
 * so a dtx's "participants" are its members on one node: the figures show
 * the cost of the dtx machinery over a group commit, not the network.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clovis/clovis.h"

#define NMAX 8u
#define LAT_MAX 100000u

static struct clovis *cl;
static struct clovis_idx ix[NMAX];
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

/* One round of n PUTs, in a dtx or not; returns seconds. */
static double round_run(uint32_t n, bool dtx, uint64_t seq)
{
	struct rec r[NMAX];
	struct clovis_op *ops[NMAX], *cop = NULL;
	struct clovis_dtx *dx = NULL;
	double t0 = now();

	if (dtx)
		check(clovis_dtx_open(&dx, clovis_default_realm(cl)), "dtx_open");
	for (uint32_t i = 0; i < n; i++) {
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

/* Median latency (us) and rate (rounds/s) of both sides for n members. */
static void figure(uint32_t n, bool first)
{
	static double lat[2][LAT_MAX];
	uint32_t nr[2] = {0, 0};
	double busy[2] = {0, 0}, end = now() + secs * 2, med[2], rate[2];
	uint64_t seq = 0;

	while (now() < end && nr[0] < LAT_MAX && nr[1] < LAT_MAX)
		for (int side = 0; side < 2; side++)
			for (int b = 0; b < 16; b++) {
				double t = round_run(n, side == 1, seq++);

				lat[side][nr[side]++] = t;
				busy[side] += t;
			}
	for (int side = 0; side < 2; side++) {
		qsort(lat[side], nr[side], sizeof(double), cmpd);
		med[side] = lat[side][nr[side] / 2] * 1e6;
		rate[side] = nr[side] / busy[side];
	}
	if (json)
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

int main(int argc, char **argv)
{
	const char *dir = "build/bench-data";
	char path[600];
	struct clovis_conf c = {.cc_flags = CLOVIS_CONF_CREATE,
				.cc_dev_size = 64ull << 20};
	const uint32_t ns[] = {1, 2, 4, 8};

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (strcmp(argv[i], "--json") == 0)
			json = 1;
	}
	if (secs <= 0 || secs > 600)
		secs = 2.0;
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
		figure(ns[i], i == 0);
	if (json)
		printf("\n], \"recovery\": \"not measured: cluster mode not "
		       "built (dtm/README.md)\"}\n");
	else
		printf("bench_dtx: recovery with 10,000 in-doubt dtxs: not "
		       "measured (cluster mode not built, dtm/README.md)\n");
	clovis_fini(cl);
	check(clovis_store_destroy(path), "destroy");
	return 0;
}
