/*
 * netns_client.c — the client of tests/integ/netns_test.sh, through the
 * Clovis API only (cluster mode).
 *
 *   netns_client CONF setup NIDX
 *       create the indices @nsidx0 .. @nsidx<NIDX-1> (-EEXIST is fine).
 *   netns_client CONF write PREFIX COUNT NIDX JOURNAL [options]
 *       for i in 0..COUNT-1: create object @PREFIX-i (pdclust 4+2, 16 KiB
 *       units, 4 KiB blocks), write OBJ_BLOCKS blocks of a pattern made
 *       from its name, and put record @PREFIX-i (a value made from the key)
 *       into @nsidx<i % NIDX>.  Each op acknowledged STABLE is appended to
 *       JOURNAL at once ("o NAME", "r IDX KEY"), so the journal lists
 *       exactly what the cluster acknowledged.
 *   netns_client CONF verify JOURNAL [options]
 *       read back every object and record of JOURNAL and compare them
 *       byte for byte with what was written.
 *   netns_client CONF wrongsecret ADDR:PORT
 *       a client with a wrong secret must be refused with -EACCES and a
 *       message that mentions the secret, both by cc_server/cc_secret
 *       and by a cluster file whose secret is wrong (CONF here is that
 *       file).
 *
 * Options of write and verify:
 *   --down NAME     server NAME is cut off or killed: an op on an object
 *                   may then fail, but only with a transport code
 *                   (-ETIMEDOUT, -EHOSTDOWN, ...), with a message naming
 *                   NAME, within --deadline-ms; index ops must still
 *                   succeed (R = 3 replicas).  Without --down every op
 *                   must succeed.
 *   --down-any      as --down, for any server (servers killed and
 *                   restarted during the run); index ops may fail too.
 *   --home I/N      with --down: NAME is server I of the N in the cluster
 *                   file, and an object op may fail only when the object's
 *                   home server (clu_home(): the placement hash, the same
 *                   on every machine, mirrored in obj_home() here) is I;
 *                   an op on an object homed elsewhere must succeed, its
 *                   units on NAME read or written degraded (phase 2a).
 *   --need-both     with --down: at least one object op must fail and at
 *                   least one must succeed (the cut is visible and the
 *                   other servers go on); write and verify.
 *   --deadline-ms M a failing op must fail within M ms (default 10000).
 *   --mixed         (write) every second object is a 3-way mirror (16
 *                   KiB units) instead of pdclust 4+2; verify takes both.
 *   --pace-ms M     sleep M ms between objects (a writer that spans a
 *                   cut or a kill).
 *
 * Every check prints "ok ..." or "FAIL ..."; the last line is
 * "N passed, N failed"; exit status 0 only when nothing failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "tests/integ/check.h"

#define OBJ_BLOCK_SHIFT 12
#define OBJ_BLOCKS 32u             /* 128 KiB: two 4+2 groups of 16 KiB */
#define OBJ_BYTES (OBJ_BLOCKS << OBJ_BLOCK_SHIFT)
#define VAL_BYTES 300u
#define NAME_MAX_LEN 96
#define JOURNAL_LINES_MAX 100000u

static const char *down_name;   /* --down NAME */
static bool down_any;           /* --down-any */
static bool need_both;
static bool mixed;              /* --mixed */
static int64_t deadline_ms = 10000;
static int pace_ms;
static unsigned obj_ok, obj_down; /* object ops that succeeded / failed */


static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A byte stream made from name (xorshift seeded by an FNV hash). */
static void pattern(const char *name, void *buf, size_t len)
{
	uint64_t x = 1469598103934665603ull;
	uint8_t *b = buf;

	for (const char *p = name; *p != '\0'; p++)
		x = (x ^ (uint8_t)*p) * 1099511628211ull;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)(x >> 24);
	}
}

static int home_down = -1;         /* --home I/N */
static unsigned home_nr;

/* The home server of an object: core/clu_conf.c clu_home(), whose hash is
 * part of the cluster's contract (stable on every machine and version). */
static uint64_t home_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int obj_home(const char *name)
{
	struct clovis_id id;

	if (home_nr == 0 || clovis_id_parse(name, &id) != 0)
		return -1;
	return (int)(home_mix(id.ci_hi ^ home_mix(id.ci_lo)) % home_nr);
}

static bool rc_transport(int rc)
{
	return rc == -ETIMEDOUT || rc == -EHOSTDOWN || rc == -EHOSTUNREACH ||
	       rc == -ECONNRESET || rc == -ECONNREFUSED || rc == -ENOTCONN ||
	       rc == -ESHUTDOWN || rc == -ENETUNREACH;
}

/*
 * Judge a failed op of what (an object op when is_obj): allowed only while
 * a server is down, with a transport code, a message naming that server
 * (unless --down-any), and within the deadline.
 */
static void judge_failure(const char *what, const char *obj, int rc,
			  const char *msg, int64_t ms)
{
	char line[1024];
	bool is_obj = obj != NULL;
	bool allowed = down_any || (down_name != NULL && is_obj &&
				    (home_down < 0 || obj_home(obj) == home_down));
	bool named = down_any || (down_name != NULL &&
				  strstr(msg, down_name) != NULL);

	snprintf(line, sizeof line, "%s failed in %" PRId64 " ms: %d (%s): %s",
		 what, ms, rc, clovis_strerror(rc), msg);
	if (!allowed) {
		char why[1200];

		snprintf(why, sizeof why, "%s [home s%d: must succeed while "
			 "%s is cut off]", line, obj_home(obj ? obj : ""),
			 down_name ? down_name : "a server");
		no(is_obj && home_down >= 0 ? why : line);
		return;
	}
	if (!rc_transport(rc) || !named || ms > deadline_ms) {
		char why[1200];

		snprintf(why, sizeof why, "%s [expected a transport error "
			 "naming %s within %" PRId64 " ms]", line,
			 down_name ? down_name : "a server", deadline_ms);
		no(why);
		return;
	}
	if (is_obj)
		obj_down++;
	printf("ok   (down) %s\n", line);
	passed++;
}

/* --need-both: object ops went on elsewhere and failed on the cut one. */
static void check_both(void)
{
	char what[200];

	if (!need_both)
		return;
	snprintf(what, sizeof what, "with %s cut off: %u object ops "
		 "succeeded on other servers, %u failed on it",
		 down_name ? down_name : "?", obj_ok, obj_down);
	(obj_ok > 0 && obj_down > 0) ? ok(what) : no(what);
}

/* Launch op, wait for STABLE; rc, and its message in msg. */
static int op_run(int rc, struct clovis_op *op, char *msg, size_t size)
{
	msg[0] = '\0';
	if (rc != 0) {
		snprintf(msg, size, "%s", clovis_errmsg());
		return rc;
	}
	rc = clovis_op_sync(op);
	if (rc != 0)
		snprintf(msg, size, "%s", clovis_errmsg());
	return rc;
}

static int idx_open(struct clovis *cl, struct clovis_idx *ix, unsigned n,
		    bool create, char *msg, size_t size)
{
	char name[32];
	struct clovis_id id;
	struct clovis_op *op = NULL;
	int rc;

	snprintf(name, sizeof name, "@nsidx%u", n);
	clovis_id_parse(name, &id);
	rc = clovis_idx_init(ix, clovis_default_realm(cl), &id);
	if (rc != 0)
		return op_run(rc, NULL, msg, size);
	rc = clovis_entity_op(&ix->in_entity,
			      create ? CLOVIS_EO_CREATE : CLOVIS_EO_OPEN, &op);
	return op_run(rc, op, msg, size);
}

/* pdclust 4+2, or (mirror) a 3-way mirror; 16 KiB units. */
static void obj_attr_make(struct clovis_obj_attr *a, bool mirror)
{
	memset(a, 0, sizeof *a);
	a->oa_block_shift = OBJ_BLOCK_SHIFT;
	a->oa_layout = mirror ? CLOVIS_LAYOUT_MIRROR : CLOVIS_LAYOUT_PDCLUST;
	a->oa_data_units = mirror ? 3 : 4;
	a->oa_parity_units = mirror ? 0 : 2;
	a->oa_unit_shift = 14;
}

/* Is a one of the two layouts obj_attr_make() makes? */
static bool obj_attr_known(const struct clovis_obj_attr *a)
{
	return (a->oa_layout == CLOVIS_LAYOUT_PDCLUST &&
		a->oa_data_units == 4 && a->oa_parity_units == 2) ||
	       (a->oa_layout == CLOVIS_LAYOUT_MIRROR &&
		a->oa_data_units == 3 && a->oa_parity_units == 0);
}

/* Create object name and write its pattern: 0 or the failing rc. */
static int obj_put(struct clovis *cl, const char *name, bool mirror,
		   void *buf, char *msg, size_t size)
{
	struct clovis_obj_attr a;
	struct clovis_obj o;
	struct clovis_id id;
	struct clovis_op *op = NULL;
	uint64_t start = 0, nr = OBJ_BLOCKS;
	size_t len = OBJ_BYTES;
	struct clovis_extvec ev = { 1, &start, &nr };
	struct clovis_bufvec bv = { 1, &buf, &len };
	int rc;

	obj_attr_make(&a, mirror);
	clovis_id_parse(name, &id);
	rc = clovis_obj_init(&o, clovis_default_realm(cl), &id, &a);
	if (rc == 0)
		rc = clovis_entity_op(&o.ob_entity, CLOVIS_EO_CREATE, &op);
	rc = op_run(rc, op, msg, size);
	if (rc != 0)
		return rc;
	if (o.ob_attr.oa_layout != a.oa_layout ||
	    o.ob_attr.oa_data_units != a.oa_data_units ||
	    o.ob_attr.oa_parity_units != a.oa_parity_units) {
		snprintf(msg, size, "created with layout %u %u+%u, not %s",
			 o.ob_attr.oa_layout, o.ob_attr.oa_data_units,
			 o.ob_attr.oa_parity_units,
			 mirror ? "mirror 3" : "pdclust 4+2");
		return -EPROTO;
	}
	pattern(name, buf, OBJ_BYTES);
	op = NULL;
	rc = clovis_obj_op(&o, CLOVIS_OC_WRITE, &ev, &bv, 0, &op);
	return op_run(rc, op, msg, size);
}

/* Read object name back into buf: 0 or the failing rc. */
static int obj_get(struct clovis *cl, const char *name, void *buf, char *msg,
		   size_t size)
{
	struct clovis_obj o;
	struct clovis_id id;
	struct clovis_op *op = NULL;
	uint64_t start = 0, nr = OBJ_BLOCKS;
	size_t len = OBJ_BYTES;
	struct clovis_extvec ev = { 1, &start, &nr };
	struct clovis_bufvec bv = { 1, &buf, &len };
	int rc;

	clovis_id_parse(name, &id);
	rc = clovis_obj_init(&o, clovis_default_realm(cl), &id, NULL);
	if (rc == 0)
		rc = clovis_entity_op(&o.ob_entity, CLOVIS_EO_OPEN, &op);
	rc = op_run(rc, op, msg, size);
	if (rc != 0)
		return rc;
	if (!obj_attr_known(&o.ob_attr) ||
	    o.ob_attr.oa_size_blocks != OBJ_BLOCKS) {
		snprintf(msg, size, "layout %u %u+%u, %" PRIu64 " blocks: "
			 "expected pdclust 4+2 or mirror 3, %u blocks",
			 o.ob_attr.oa_layout, o.ob_attr.oa_data_units,
			 o.ob_attr.oa_parity_units, o.ob_attr.oa_size_blocks,
			 OBJ_BLOCKS);
		return -EPROTO;
	}
	op = NULL;
	rc = clovis_obj_op(&o, CLOVIS_OC_READ, &ev, &bv, 0, &op);
	return op_run(rc, op, msg, size);
}

/* PUT (or GET and compare, when get) record key into ix. */
static int rec_op(struct clovis_idx *ix, const char *key, bool get,
		  char *msg, size_t size)
{
	char val[VAL_BYTES];
	void *kb = (void *)key, *vb = get ? NULL : val;
	size_t kl = strlen(key), vl = get ? 0 : VAL_BYTES;
	struct clovis_bufvec kv = { 1, &kb, &kl }, vv = { 1, &vb, &vl };
	struct clovis_op *op = NULL;
	int32_t rcs[1] = { 1 };
	int rc;

	pattern(key, val, VAL_BYTES);
	rc = clovis_idx_op(ix, get ? CLOVIS_IC_GET : CLOVIS_IC_PUT, &kv, &vv,
			   rcs, 0, &op);
	rc = op_run(rc, op, msg, size);
	if (rc == 0 && rcs[0] != 0) {
		rc = rcs[0];
		snprintf(msg, size, "record result %d (%s)", rcs[0],
			 clovis_strerror(rcs[0]));
		return rc;
	}
	if (rc == 0 && get && (vl != VAL_BYTES || memcmp(vb, val, vl) != 0)) {
		snprintf(msg, size, "value differs (%zu bytes back)", vl);
		rc = -EPROTO;
	}
	if (get)
		free(vb);
	return rc;
}

static int journal_add(FILE *j, const char *line)
{
	if (fprintf(j, "%s\n", line) < 0 || fflush(j) != 0)
		return -errno;
	return 0;
}

static int cmd_setup(struct clovis *cl, unsigned nidx)
{
	char msg[512], what[600];

	for (unsigned n = 0; n < nidx; n++) {
		struct clovis_idx ix;
		int rc = idx_open(cl, &ix, n, true, msg, sizeof msg);

		snprintf(what, sizeof what, "create index @nsidx%u: %d %s", n,
			 rc, msg);
		(rc == 0 || rc == -EEXIST) ? ok(what) : no(what);
	}
	return 0;
}

static int cmd_write(struct clovis *cl, const char *prefix, unsigned count,
		     unsigned nidx, const char *jpath)
{
	FILE *j = fopen(jpath, "a");
	void *buf = malloc(OBJ_BYTES);
	char name[NAME_MAX_LEN], msg[512], what[700], line[200];

	if (j == NULL || buf == NULL) {
		no("open journal");
		goto out;
	}
	for (unsigned i = 0; i < count; i++) {
		struct clovis_idx ix;
		int64_t t0 = now_ms();
		bool mirror = mixed && i % 2 == 1;
		int rc;

		snprintf(name, sizeof name, "@%s-%u", prefix, i);
		rc = obj_put(cl, name, mirror, buf, msg, sizeof msg);
		snprintf(what, sizeof what, "object %s (%s)", name,
			 mirror ? "mirror 3" : "pdclust 4+2");
		if (rc == 0) {
			obj_ok++;
			snprintf(line, sizeof line, "o %s", name);
			rc = journal_add(j, line);
			(rc == 0 ? ok : no)(what);
		} else {
			judge_failure(what, name, rc, msg, now_ms() - t0);
		}
		t0 = now_ms();
		rc = idx_open(cl, &ix, i % nidx, false, msg, sizeof msg);
		if (rc == 0)
			rc = rec_op(&ix, name, false, msg, sizeof msg);
		snprintf(what, sizeof what, "record %s in @nsidx%u", name,
			 i % nidx);
		if (rc == 0) {
			snprintf(line, sizeof line, "r %u %s", i % nidx, name);
			rc = journal_add(j, line);
			(rc == 0 ? ok : no)(what);
		} else {
			judge_failure(what, NULL, rc, msg, now_ms() - t0);
		}
		if (pace_ms > 0)
			usleep((useconds_t)pace_ms * 1000);
	}
	check_both();
out:
	if (j != NULL)
		fclose(j);
	free(buf);
	return 0;
}

static int cmd_verify(struct clovis *cl, const char *jpath)
{
	FILE *j = fopen(jpath, "r");
	void *buf = malloc(OBJ_BYTES), *want = malloc(OBJ_BYTES);
	char line[256], msg[512], what[800];
	unsigned n = 0, objs = 0, recs = 0;

	if (j == NULL || buf == NULL || want == NULL) {
		no("open journal");
		goto out;
	}
	while (n++ < JOURNAL_LINES_MAX && fgets(line, sizeof line, j)) {
		char name[NAME_MAX_LEN];
		unsigned in;
		int64_t t0 = now_ms();
		int rc;

		if (sscanf(line, "o %95s", name) == 1) {
			objs++;
			rc = obj_get(cl, name, buf, msg, sizeof msg);
			pattern(name, want, OBJ_BYTES);
			if (rc == 0 && memcmp(buf, want, OBJ_BYTES) != 0) {
				rc = -EPROTO;
				snprintf(msg, sizeof msg, "data differs");
			}
			snprintf(what, sizeof what, "object %s reads back", name);
			if (rc == 0) {
				obj_ok++;
				ok(what);
			} else {
				judge_failure(what, name, rc, msg,
					      now_ms() - t0);
			}
		} else if (sscanf(line, "r %u %95s", &in, name) == 2) {
			struct clovis_idx ix;

			recs++;
			rc = idx_open(cl, &ix, in, false, msg, sizeof msg);
			if (rc == 0)
				rc = rec_op(&ix, name, true, msg, sizeof msg);
			snprintf(what, sizeof what, "record %s of @nsidx%u "
				 "reads back", name, in);
			if (rc == 0)
				ok(what);
			else
				judge_failure(what, NULL, rc, msg,
					      now_ms() - t0);
		} else {
			snprintf(what, sizeof what, "journal line: %s", line);
			no(what);
		}
	}
	printf("verified %u objects, %u records\n", objs, recs);
	check_both();
out:
	if (j != NULL)
		fclose(j);
	free(buf);
	free(want);
	return 0;
}

/* A client whose secret is wrong is refused with -EACCES. */
static int cmd_wrongsecret(const char *conf_path, const char *server)
{
	struct clovis_conf c = { .cc_mode = CLOVIS_MODE_CLUSTER };
	struct clovis *cl = NULL;
	char what[800];
	int rc;

	c.cc_server = server;
	c.cc_secret = "this-is-not-the-cluster-secret";
	rc = clovis_init(&cl, &c);
	snprintf(what, sizeof what, "cc_server %s with a wrong secret: %d "
		 "(%s): %s", server, rc, clovis_strerror(rc),
		 rc != 0 ? clovis_errmsg() : "accepted");
	(rc == -EACCES && strstr(clovis_errmsg(), "secret") != NULL) ?
		ok(what) : no(what);
	if (rc == 0)
		clovis_fini(cl);

	memset(&c, 0, sizeof c);
	c.cc_mode = CLOVIS_MODE_CLUSTER;
	c.cc_cluster_conf = conf_path;
	cl = NULL;
	rc = clovis_init(&cl, &c);
	if (rc == 0) {
		struct clovis_idx ix;
		char msg[512];

		rc = idx_open(cl, &ix, 0, false, msg, sizeof msg);
		snprintf(what, sizeof what, "cluster file with a wrong secret:"
			 " open index: %d (%s): %s", rc, clovis_strerror(rc),
			 rc != 0 ? msg : "accepted");
		if (rc == -EACCES && strstr(msg, "secret") == NULL)
			rc = -EPROTO; /* refused, but the message does not say why */
		clovis_fini(cl);
	} else {
		snprintf(what, sizeof what, "cluster file with a wrong secret:"
			 " init: %d (%s): %s", rc, clovis_strerror(rc),
			 clovis_errmsg());
	}
	rc == -EACCES ? ok(what) : no(what);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: netns_client CONF setup NIDX\n"
		"       netns_client CONF write PREFIX COUNT NIDX JOURNAL [opts]\n"
		"       netns_client CONF verify JOURNAL [opts]\n"
		"       netns_client CONF wrongsecret ADDR:PORT\n"
		"opts: --down NAME [--home I/N] | --down-any, --need-both, "
		"--deadline-ms M,"
		" --mixed, --pace-ms M\n");
	return 2;
}

/* Options after the fixed arguments; -1 on a bad one. */
static int parse_opts(int argc, char **argv, int from)
{
	for (int i = from; i < argc; i++) {
		if (strcmp(argv[i], "--down") == 0 && i + 1 < argc)
			down_name = argv[++i];
		else if (strcmp(argv[i], "--down-any") == 0)
			down_any = true;
		else if (strcmp(argv[i], "--home") == 0 && i + 1 < argc) {
			if (sscanf(argv[++i], "%d/%u", &home_down, &home_nr) != 2 ||
			    home_down < 0 || (unsigned)home_down >= home_nr)
				return -1;
		} else if (strcmp(argv[i], "--need-both") == 0)
			need_both = true;
		else if (strcmp(argv[i], "--deadline-ms") == 0 && i + 1 < argc)
			deadline_ms = atoll(argv[++i]);
		else if (strcmp(argv[i], "--mixed") == 0)
			mixed = true;
		else if (strcmp(argv[i], "--pace-ms") == 0 && i + 1 < argc)
			pace_ms = atoi(argv[++i]);
		else
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct clovis *cl = NULL;
	const char *cmd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4)
		return usage();
	cmd = argv[2];
	if (strcmp(cmd, "wrongsecret") == 0) {
		cmd_wrongsecret(argv[1], argv[3]);
		goto out;
	}
	if ((strcmp(cmd, "setup") == 0 && argc != 4) ||
	    (strcmp(cmd, "write") == 0 &&
	     (argc < 7 || parse_opts(argc, argv, 7) != 0)) ||
	    (strcmp(cmd, "verify") == 0 && parse_opts(argc, argv, 4) != 0))
		return usage();
	if (check_cluster_open(&cl, argv[1]) != 0)
		goto out;
	if (strcmp(cmd, "setup") == 0)
		cmd_setup(cl, (unsigned)atoi(argv[3]));
	else if (strcmp(cmd, "write") == 0)
		cmd_write(cl, argv[3], (unsigned)atoi(argv[4]),
			  (unsigned)atoi(argv[5]) ? (unsigned)atoi(argv[5]) : 1,
			  argv[6]);
	else if (strcmp(cmd, "verify") == 0)
		cmd_verify(cl, argv[3]);
	else
		no("unknown command");
	clovis_fini(cl);
out:
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
