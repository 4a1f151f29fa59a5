/*
 * metrics_app.c — an embedded Strata application that serves its own
 * metrics (docs/monitoring.md): one call, clovis_addb_serve(), and the
 * process answers Prometheus scrapes on /metrics while it works.  Also the
 * driven client of tests/integ/metrics_test.py.
 *
 *   metrics_app DATA_DIR|cluster:FILE [LISTEN]
 *
 * Opens (or makes: CLOVIS_CONF_CREATE) the store in DATA_DIR, or is a
 * client of the cluster of cluster file FILE, serves /metrics on LISTEN
 * (default "127.0.0.1:0": a port the kernel picks) and prints one line
 * "metrics_app: pid PID port PORT".  Then reads commands from standard
 * input, one per line, answering each with one line ("done ..." or
 * "error ..."):
 *
 *   write N    N writes of one 4 KiB block each to object @metrics-app,
 *              one op at a time, each waited for until STABLE
 *   put N      N index PUTs of one record each into index @metrics-idx
 *   get N      N index GETs of one record each (keys put before)
 *   text       the process's own metrics through clovis_addb_metrics(),
 *              printed, then a line "end"
 *   records N  its last N trace records through clovis_addb_records()
 *              (JSON lines, or one "error ..." line), then a line "end"
 *   quit       close the store and exit 0
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <strata/clovis.h>

#define BLOCK_SHIFT 12u
#define BLOCK_SIZE (1u << BLOCK_SHIFT)

static struct clovis *cl;
static struct clovis_obj obj;
static struct clovis_idx idx;
static unsigned long long next_block, next_key;

/* Launch an op built by rc/op and wait until it is STABLE. */
static int run(int rc, struct clovis_op **op)
{
	if (rc != 0)
		return rc;
	rc = clovis_op_launch(op, 1);
	if (rc == 0)
		rc = clovis_op_wait(*op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (rc == 0)
		rc = clovis_op_rc(*op);
	clovis_op_free(*op);
	*op = NULL;
	return rc;
}

/* Create (or open) the object and the index the commands use. */
static int setup(void)
{
	struct clovis_obj_attr attr = { .oa_block_shift = BLOCK_SHIFT,
					.oa_layout = CLOVIS_LAYOUT_PLAIN,
					.oa_tier = CLOVIS_TIER_FLASH };
	struct clovis_op *op = NULL;
	struct clovis_id oid, iid;
	int rc;

	rc = clovis_id_parse("@metrics-app", &oid);
	if (rc == 0)
		rc = clovis_id_parse("@metrics-idx", &iid);
	if (rc == 0)
		rc = clovis_obj_init(&obj, clovis_default_realm(cl), &oid, &attr);
	if (rc == 0)
		rc = clovis_idx_init(&idx, clovis_default_realm(cl), &iid);
	if (rc == 0) {
		rc = run(clovis_entity_op(&obj.ob_entity, CLOVIS_EO_CREATE,
					  &op), &op);
		rc = rc == -EEXIST ? 0 : rc;
	}
	if (rc == 0) {
		rc = run(clovis_entity_op(&idx.in_entity, CLOVIS_EO_CREATE,
					  &op), &op);
		rc = rc == -EEXIST ? 0 : rc;
	}
	return rc;
}

static int do_write(unsigned long long n)
{
	static unsigned char data[BLOCK_SIZE];
	struct clovis_op *op = NULL;
	int rc = 0;

	for (unsigned long long i = 0; rc == 0 && i < n; i++) {
		uint64_t start = next_block++ % 1024, nr = 1;
		struct clovis_extvec ext = { 1, &start, &nr };
		void *buf = data;
		size_t len = sizeof data;
		struct clovis_bufvec bv = { 1, &buf, &len };

		memset(data, (int)(i & 0xff), sizeof data);
		rc = run(clovis_obj_op(&obj, CLOVIS_OC_WRITE, &ext, &bv, 0, &op),
			 &op);
	}
	return rc;
}

/* PUT (get false) or GET (get true) n records, one per op. */
static int do_idx(unsigned long long n, int get)
{
	struct clovis_op *op = NULL;
	int rc = 0;

	for (unsigned long long i = 0; rc == 0 && i < n; i++) {
		char key[32], val[32];
		void *kb = key, *vb = get ? NULL : val;
		size_t kl, vl = 0;
		int32_t rcs = 1;
		struct clovis_bufvec kv = { 1, &kb, &kl }, vv = { 1, &vb, &vl };

		kl = (size_t)snprintf(key, sizeof key, "k%08llu",
				      get ? i : next_key++);
		if (!get)
			vl = (size_t)snprintf(val, sizeof val, "v%llu", i);
		rc = run(clovis_idx_op(&idx, get ? CLOVIS_IC_GET : CLOVIS_IC_PUT,
				       &kv, &vv, &rcs,
				       get ? 0 : CLOVIS_IF_OVERWRITE, &op),
			 &op);
		if (rc == 0)
			rc = rcs;
		if (get)
			free(vb);
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct clovis_conf conf = { .cc_mode = CLOVIS_MODE_EMBEDDED,
				    .cc_flags = CLOVIS_CONF_CREATE };
	const char *listen = argc > 2 ? argv[2] : "127.0.0.1:0";
	char line[128];
	uint16_t port = 0;
	int rc;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: metrics_app DATA_DIR|cluster:FILE "
			"[LISTEN]\n");
		return 2;
	}
	if (strncmp(argv[1], "cluster:", 8) == 0) {
		conf.cc_mode = CLOVIS_MODE_CLUSTER;
		conf.cc_cluster_conf = argv[1] + 8;
		conf.cc_flags = 0;
	} else {
		conf.cc_data_dir = argv[1];
	}
	rc = clovis_init(&cl, &conf);
	if (rc == 0)
		rc = clovis_addb_serve(listen, &port);
	if (rc == 0)
		rc = setup();
	if (rc != 0) {
		fprintf(stderr, "metrics_app: %s: %s\n", clovis_strerror(rc),
			clovis_errmsg());
		return 1;
	}
	printf("metrics_app: pid %d port %u\n", (int)getpid(), port);
	fflush(stdout);
	while (fgets(line, sizeof line, stdin) != NULL) {
		unsigned long long n = 0;
		char cmd[16];

		if (sscanf(line, "%15s %llu", cmd, &n) < 1)
			continue;
		if (strcmp(cmd, "quit") == 0)
			break;
		if (strcmp(cmd, "text") == 0) {
			char *text = NULL;
			size_t len = 0;

			rc = clovis_addb_metrics(cl, NULL, 0, 0, &text, &len);
			if (rc == 0)
				fwrite(text, 1, len, stdout);
			free(text);
			printf("end\n");
		} else if (strcmp(cmd, "records") == 0) {
			char *text = NULL;
			size_t len = 0;

			rc = clovis_addb_records(cl, NULL, (uint32_t)n, &text,
						 &len);
			if (rc == 0)
				fwrite(text, 1, len, stdout);
			else
				printf("error records: %s: %s\n",
				       clovis_strerror(rc), clovis_errmsg());
			free(text);
			printf("end\n");
			fflush(stdout);
			continue;
		} else if (strcmp(cmd, "write") == 0) {
			rc = do_write(n);
		} else if (strcmp(cmd, "put") == 0) {
			rc = do_idx(n, 0);
		} else if (strcmp(cmd, "get") == 0) {
			rc = do_idx(n, 1);
		} else {
			rc = -EINVAL;
		}
		if (rc == 0)
			printf("done %s %llu\n", cmd, n);
		else
			printf("error %s: %s: %s\n", cmd, clovis_strerror(rc),
			       clovis_errmsg());
		fflush(stdout);
	}
	clovis_addb_serve_stop();
	clovis_fini(cl);
	return 0;
}
