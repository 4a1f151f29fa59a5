/*
 * dtx_crash.c — bank transfers in dtxs over an embedded store, for the
 * SIGKILL crash test tests/crash/dtx_crash.sh.
 *
 *   dtx_crash init  STORE NACC        accounts 0..NACC-1, 1000 each, twice:
 *                                     index "accts" records and blocks of
 *                                     object "accts-obj" (one 4 KiB block
 *                                     per account, balance in its first 8
 *                                     bytes)
 *   dtx_crash run   STORE ACK SEED [N] THREADS threads transfer money, each
 *                                     over its own accounts (a dtx gives no
 *                                     isolation): one dtx = 2 index PUTs +
 *                                     2 block WRITEs + 1 PUT of the
 *                                     transfer's id into index "txlog";
 *                                     each id is appended to ACK once the
 *                                     commit op is STABLE.  N transfers
 *                                     (0: until killed).
 *   dtx_crash destroy STORE           remove the store (its NVRAM device
 *                                     lives outside the directory)
 *   dtx_crash tear  STORE             change account 0 in the index only
 *                                     (the script's negative control)
 *   dtx_crash check STORE ACK NACC    the totals are exact in both forms,
 *                                     each account agrees in both forms
 *                                     (nothing half-applied), and every
 *                                     acknowledged id is in "txlog".
 *   dtx_crash fence STORE SECS        (cluster) wait at most SECS until
 *                                     no dtx is in doubt (the rule the
 *                                     runs use); exit 0, or 4 if one still
 *                                     is
 *   dtx_crash touch STORE N           N small dtxs on the accounts' servers
 *                                     (no account changed, no fence)
 *   dtx_crash stale STORE WHAT [N]   (cluster) the stale index replica
 *                                     scenarios on index N (0 if not
 *                                     given); WHAT: mk dtx late read
 *                                     readlate peek, see stale()
 * Exit status 0 when all holds; the check prints what it found.
 *
 * Cluster mode (tests/integ/dtx_cluster_test.sh): STORE names a cluster
 * file (*.yaml).  The three entities then get ids whose home servers
 * differ on a 3-server cluster (each dtx has 3 participants; with
 * DTX_CRASH_HOMES=N:H, on an N-server cluster, the object's home is H and
 * the indices' the first two others, and the object is pdclust 1+1 with
 * 4 KiB units, so that its blocks outlive H), init makes
 * the accounts in one small dtx each (a PREPARE carries at most
 * DTM_PREPARE_BYTES_MAX per participant), a transfer whose outcome is
 * unknown to the client (-ETIMEDOUT: in doubt; -EINPROGRESS: committed, not
 * yet applied everywhere) is logged " U" (no claim either way), and a
 * worker that reads an account torn waits (bounded) for termination to
 * resolve the dtx in doubt before calling it torn.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "clovis/clovis_internal.h"
#include "core/clu_conf.h"
#include "dtm/dtm_msg.h"

#define BS 4096u
#define START 1000
#define THREADS 4

static struct clovis_id ACCT_IDX = {0xdd, 0x1001};
static struct clovis_id ACCT_OBJ = {0xdd, 0x1002};
static struct clovis_id TXLOG = {0xdd, 0x1003};
static struct clovis *cl;
static bool cluster;
static uint32_t first;  /* first account of this process (cluster runs) */

/*
 * Wait until no dtx in doubt when the call started is undecided on any
 * server (cluster mode): one of ours (a commit op that ended -ETIMEDOUT or
 * -EINPROGRESS, or a dtx of a run killed before) could otherwise commit
 * later over a newer transfer of the same accounts (a dtx gives no
 * isolation).  clovis_dtx_settle() (clovis.h) is the rule: every server
 * answers its dtx LIST with no PREPARED record older than the call, a
 * server that does not answer is waited for, and a full list holding fewer
 * PREPARED entries than the server has in doubt is not taken as clear;
 * STRATA_TEST_DTX_LIST_LIMIT (test builds of the library) asks for
 * shorter lists.  0 when clear, else the settle's code (message printed).
 */
static int fence_wait(uint32_t secs)
{
	int rc;

	if (!cluster)
		return 0;
	rc = clovis_dtx_settle(cl, 0, secs * 1000u);
	if (rc != 0)
		fprintf(stderr, "dtx_crash: %s\n", clovis_errmsg());
	return rc;
}

static void fence(void)
{
	if (fence_wait(60) != 0) {
		fprintf(stderr, "dtx_crash: dtxs still in doubt after 60 s\n");
		exit(4);
	}
}

/* Cluster mode: ids whose homes on 3 servers are 0, 1 and 2. */
static void cluster_ids(void)
{
	static struct clu_conf c;
	struct clovis_id *want[3] = {&TXLOG, &ACCT_IDX, &ACCT_OBJ};

	/* DTX_CRASH_HOMES=N:H (ha_inflight_test.sh): on a cluster of N
	 * servers, the account object homed on server H and the two indices
	 * on the first others */
	const char *e = getenv("DTX_CRASH_HOMES");
	uint32_t n = 3, oh = 2, home[3];

	if (e != NULL && (sscanf(e, "%u:%u", &n, &oh) != 2 || n < 3 ||
			  n > CLU_SERVERS_MAX || oh >= n)) {
		fprintf(stderr, "dtx_crash: DTX_CRASH_HOMES=%s: N:H, 3 <= N, "
			"H < N\n", e);
		exit(2);
	}
	home[2] = oh;
	for (uint32_t h = 0, k = 0; k < 2; h++)
		if (h != oh)
			home[k++] = h;
	c.cc_nr_servers = n;
	for (uint32_t k = 0; k < 3; k++)
		for (uint64_t lo = 0x2000; ; lo++) {
			struct clovis_id id = {0xdd, lo + k * 0x1000};

			if (clu_home(&c, st_of(&id)) == home[k]) {
				*want[k] = id;
				break;
			}
		}
}

static struct clovis_idx accts, txlog;
static struct clovis_obj obj;
static FILE *ack;
static pthread_mutex_t ack_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t nacc;
static uint64_t nper; /* transfers per thread (0: forever) */
static uint64_t seed;

static void die(const char *what, int rc)
{
	fprintf(stderr, "dtx_crash: %s: %d %s\n", what, rc, clovis_errmsg());
	exit(2);
}

static void store_open(const char *dir, bool create)
{
	struct clovis_conf c = {.cc_data_dir = dir, .cc_dev_size = 64ull << 20,
				.cc_flags = create ? CLOVIS_CONF_CREATE : 0};
	int rc;

	if (strstr(dir, ".yaml") != NULL) {
		cluster = true;
		cluster_ids();
		c = (struct clovis_conf){.cc_mode = CLOVIS_MODE_CLUSTER,
					 .cc_cluster_conf = dir};
	}
	rc = clovis_init(&cl, &c);

	if (rc != 0)
		die("clovis_init", rc);
}

static void ent_sync(struct clovis_entity *e, uint32_t opc)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(e, opc, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die(opc == CLOVIS_EO_CREATE ? "create" : "open", rc);
}

static void handles(uint32_t opc)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN};
	struct clovis_realm *r = clovis_default_realm(cl);

	/* DTX_CRASH_HOMES: the object's home may be dead (taken over): its
	 * units must survive it, pdclust 1+1 over the servers, one block
	 * per unit (each account a parity group of its own: a dtx updates
	 * a group once) */
	if (getenv("DTX_CRASH_HOMES") != NULL) {
		a.oa_layout = CLOVIS_LAYOUT_PDCLUST;
		a.oa_data_units = 1;
		a.oa_parity_units = 1;
		a.oa_unit_shift = 12;
	}

	clovis_idx_init(&accts, r, &ACCT_IDX);
	clovis_idx_init(&txlog, r, &TXLOG);
	clovis_obj_init(&obj, r, &ACCT_OBJ, &a);
	ent_sync(&accts.in_entity, opc);
	ent_sync(&txlog.in_entity, opc);
	ent_sync(&obj.ob_entity, opc);
}

/* Buffers of one record op or one block op (live until the op is done). */
struct slot {
	char k[24];
	char v[24];
	void *kb[1], *vb[1];
	size_t kl[1], vl[1];
	struct clovis_bufvec kv, vv;
	int32_t rc[1];
	uint64_t s[1], n[1];
	struct clovis_extvec ev;
	char *blk;
};

static int rec_op(struct clovis_idx *ix, struct slot *s, uint32_t opc,
		  const char *key, int64_t val, struct clovis_op **op)
{
	snprintf(s->k, sizeof s->k, "%s", key);
	s->kb[0] = s->k;
	s->kl[0] = strlen(s->k);
	s->kv = (struct clovis_bufvec){1, s->kb, s->kl};
	if (opc == CLOVIS_IC_GET)
		memset(s->v, 0, sizeof s->v);
	else
		snprintf(s->v, sizeof s->v, "%" PRId64, val);
	s->vb[0] = s->v;
	s->vl[0] = opc == CLOVIS_IC_GET ? sizeof s->v - 1 : strlen(s->v);
	s->vv = (struct clovis_bufvec){1, s->vb, s->vl};
	return clovis_idx_op(ix, opc, &s->kv, opc == CLOVIS_IC_DEL ? NULL :
			     &s->vv, s->rc,
			     opc == CLOVIS_IC_PUT ? CLOVIS_IF_OVERWRITE : 0, op);
}

static int blk_op(struct slot *s, uint32_t opc, uint32_t i, int64_t val,
		  struct clovis_op **op)
{
	if (s->blk == NULL && posix_memalign((void **)&s->blk, 4096, BS) != 0)
		return -ENOMEM;
	s->s[0] = i;
	s->n[0] = 1;
	s->ev = (struct clovis_extvec){1, s->s, s->n};
	memset(s->blk, 0, BS);
	memcpy(s->blk, &val, sizeof val);
	s->kb[0] = s->blk;
	s->kl[0] = BS;
	s->kv = (struct clovis_bufvec){1, s->kb, s->kl};
	return clovis_obj_op(&obj, opc, &s->ev, &s->kv, 0, op);
}

/* Balance of account i from the index (*ib) and the object (*ob). */
static int balance(uint32_t i, int64_t *ib, int64_t *ob)
{
	struct slot s = {0};
	struct clovis_op *op;
	char key[24];
	int rc;

	snprintf(key, sizeof key, "a%05u", i);
	rc = rec_op(&accts, &s, CLOVIS_IC_GET, key, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0)
		rc = s.rc[0];
	if (rc != 0)
		return rc;
	*ib = strtoll(s.v, NULL, 10);
	rc = blk_op(&s, CLOVIS_OC_READ, i, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0)
		memcpy(ob, s.blk, sizeof *ob);
	free(s.blk);
	return rc;
}

static void init(const char *dir)
{
	struct clovis_dtx *dx;
	struct slot *s = calloc(2 * nacc, sizeof *s);
	struct clovis_op *op, *cop;
	char key[24];
	int rc;

	store_open(dir, true);
	handles(CLOVIS_EO_CREATE);
	rc = clovis_dtx_open(&dx, clovis_default_realm(cl));
	for (uint32_t i = 0; rc == 0 && i < nacc; i++) {
		if (cluster && i > 0) {
			rc = clovis_dtx_commit(dx, &cop);
			if (rc == 0)
				rc = clovis_op_sync(cop); /* frees it */
			if (rc == 0)
				rc = clovis_dtx_open(&dx,
						     clovis_default_realm(cl));
			if (rc != 0)
				break;
		}
		snprintf(key, sizeof key, "a%05u", i);
		rc = rec_op(&accts, &s[2 * i], CLOVIS_IC_PUT, key, START, &op);
		if (rc == 0)
			rc = clovis_dtx_add(dx, op);
		if (rc == 0)
			rc = blk_op(&s[2 * i + 1], CLOVIS_OC_WRITE, i, START, &op);
		if (rc == 0)
			rc = clovis_dtx_add(dx, op);
	}
	if (rc == 0)
		rc = clovis_dtx_commit(dx, &cop);
	if (rc == 0)
		rc = clovis_op_sync(cop);
	if (rc != 0)
		die("init dtx", rc);
	clovis_fini(cl); /* frees the member ops */
	for (uint32_t i = 0; i < 2 * nacc; i++)
		free(s[i].blk);
	free(s);
}

/* One transfer of amt from a to b (balances known); 0 when STABLE. */
static int transfer(uint32_t a, uint32_t b, int64_t ba, int64_t bb,
		    int64_t amt, uint64_t txid)
{
	struct slot s[5];
	struct clovis_op *ops[5] = {0}, *cop = NULL;
	struct clovis_dtx *dx;
	char ka[24], kb[24], kt[24];
	int rc;

	memset(s, 0, sizeof s);
	snprintf(ka, sizeof ka, "a%05u", a);
	snprintf(kb, sizeof kb, "a%05u", b);
	snprintf(kt, sizeof kt, "t%016" PRIx64, txid);
	rc = clovis_dtx_open(&dx, clovis_default_realm(cl));
	if (rc != 0)
		return rc;
	rc = rec_op(&accts, &s[0], CLOVIS_IC_PUT, ka, ba - amt, &ops[0]);
	if (rc == 0)
		rc = rec_op(&accts, &s[1], CLOVIS_IC_PUT, kb, bb + amt, &ops[1]);
	if (rc == 0)
		rc = blk_op(&s[2], CLOVIS_OC_WRITE, a, ba - amt, &ops[2]);
	if (rc == 0)
		rc = blk_op(&s[3], CLOVIS_OC_WRITE, b, bb + amt, &ops[3]);
	if (rc == 0)
		rc = rec_op(&txlog, &s[4], CLOVIS_IC_PUT, kt, amt, &ops[4]);
	for (int i = 0; rc == 0 && i < 5; i++)
		rc = clovis_dtx_add(dx, ops[i]);
	if (rc == 0)
		rc = clovis_op_launch(ops, 5); /* data I/O now */
	if (rc == 0)
		rc = clovis_dtx_commit(dx, &cop);
	if (rc == 0) {
		rc = clovis_op_launch(&cop, 1);
		if (rc == 0)
			rc = clovis_op_wait(cop, CLOVIS_OS_STABLE,
					    CLOVIS_TIME_NEVER);
		if (rc == 0)
			rc = clovis_op_rc(cop);
		if (rc != 0)
			fprintf(stderr, "dtx_crash: transfer %" PRIx64 ": %d "
				"%s\n", txid, rc, clovis_op_errmsg(cop));
		clovis_op_free(cop);
	} else {
		clovis_dtx_abort(dx);
	}
	for (int i = 0; i < 5; i++) {
		clovis_op_free(ops[i]);
		free(s[i].blk);
	}
	return rc;
}

static void *worker(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg, per = nacc / THREADS;
	int last = 0;
	unsigned int rs = (unsigned int)(seed * 31 + t);

	for (uint64_t n = 0; nper == 0 || n < nper; n++) {
		uint32_t a = first + t * per + (uint32_t)rand_r(&rs) % per;
		uint32_t b = first + t * per + (uint32_t)rand_r(&rs) % per;
		int64_t ia, oa, ib, ob, amt = 1 + rand_r(&rs) % 50;
		uint64_t txid = seed << 40 | (uint64_t)t << 32 | n;
		int rc;

		if (a == b)
			continue;
		if (last == -ETIMEDOUT || last == -EINPROGRESS)
			fence(); /* that transfer may still land */
		last = 0;
		for (int w = 0; w < (cluster ? 150 : 1); w++) {
			if (w > 0)
				usleep(100000); /* in doubt: termination */
			if (balance(a, &ia, &oa) == 0 &&
			    balance(b, &ib, &ob) == 0 && ia == oa && ib == ob)
				break;
			ia = 0;
			oa = 1;
		}
		if (ia != oa || ib != ob) {
			fprintf(stderr, "dtx_crash: account %u or %u torn\n", a, b);
			exit(3);
		}
		rc = transfer(a, b, ia, ib, amt, txid);
		last = rc;
		pthread_mutex_lock(&ack_lock);
		/* " F": the transfer FAILED (fault rounds): no trace allowed */
		/* " U": outcome unknown to the client (cluster mode) */
		fprintf(ack, "%016" PRIx64 "%s\n", txid, rc == 0 ? "" :
			rc == -ETIMEDOUT || rc == -EINPROGRESS ? " U" : " F");
		fflush(ack);
		pthread_mutex_unlock(&ack_lock);
	}
	return NULL;
}

static void run(const char *dir, const char *ackf)
{
	pthread_t th[THREADS];

	store_open(dir, false);
	handles(CLOVIS_EO_OPEN);
	fence(); /* a run killed before may have left dtxs in doubt */
	ack = fopen(ackf, "a");
	if (ack == NULL)
		die("ack file", -errno);
	for (uintptr_t t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)t);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	fclose(ack);
	clovis_fini(cl);
}

/* Is txlog key t<id> present?  1, 0, or a negative rc. */
static int txlog_has(uint64_t txid)
{
	struct slot s = {0};
	struct clovis_op *op;
	char kt[24];
	int rc;

	snprintf(kt, sizeof kt, "t%016" PRIx64, txid);
	rc = rec_op(&txlog, &s, CLOVIS_IC_GET, kt, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc != 0 ? rc : s.rc[0] == 0 ? 1 : s.rc[0] == -ENOENT ? 0 : s.rc[0];
}

static int check(const char *dir, const char *ackf)
{
	int64_t isum = 0, osum = 0;
	uint64_t acked = 0, failed = 0, missing = 0, traces = 0;
	uint32_t torn = 0;
	char line[64];
	FILE *f;

	store_open(dir, false);
	handles(CLOVIS_EO_OPEN);
	for (uint32_t i = 0; i < nacc; i++) {
		int64_t ib = 0, ob = 0;
		int rc = balance(i, &ib, &ob);

		if (rc != 0)
			die("balance", rc);
		isum += ib;
		osum += ob;
		if (ib != ob && torn++ < 5)
			printf("dtx_crash: account %u: index %" PRId64
			       ", object %" PRId64 " (half-applied)\n", i, ib, ob);
	}
	f = fopen(ackf, "r");
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		uint64_t id = strtoull(line, NULL, 16);
		bool fail = strstr(line, " F") != NULL;
		int has;

		if (strstr(line, " U") != NULL)
			continue;
		has = txlog_has(id);

		if (has < 0)
			die("txlog", has);
		if (fail) {
			failed++;
			traces += has == 1;
		} else {
			acked++;
			missing += has == 0;
		}
	}
	if (f != NULL)
		fclose(f);
	clovis_fini(cl);
	printf("dtx_crash: %u accounts: index total %" PRId64 ", object total %"
	       PRId64 " (expected %" PRId64 "), %u half-applied; %" PRIu64
	       " STABLE transfers, %" PRIu64 " missing; %" PRIu64
	       " failed, %" PRIu64 " left a trace\n", nacc, isum, osum,
	       (int64_t)nacc * START, torn, acked, missing, failed, traces);
	return isum == (int64_t)nacc * START && osum == isum && torn == 0 &&
	       missing == 0 && traces == 0 ? 0 : 1;
}

/* Commit a dtx of nr member ops (made by the caller); 0 when STABLE. */
static int dtx_run(struct clovis_dtx *dx, struct clovis_op **ops, int nr)
{
	struct clovis_op *cop;
	int rc = 0;

	for (int i = 0; rc == 0 && i < nr; i++)
		rc = clovis_dtx_add(dx, ops[i]);
	if (rc == 0)
		rc = clovis_dtx_commit(dx, &cop);
	else
		clovis_dtx_abort(dx);
	if (rc == 0)
		rc = clovis_op_sync(cop); /* frees it */
	return rc;
}

/* touch STORE N: N small dtxs (an index record "z<i>" of the accounts
 * index and a block of the accounts object past every account), logged on
 * the same servers as the transfers: newer dtxs, no fence, no account
 * touched. */
static int touch(const char *dir, uint32_t n)
{
	store_open(dir, false);
	handles(CLOVIS_EO_OPEN);
	for (uint32_t i = 0; i < n; i++) {
		struct slot s[2];
		struct clovis_op *ops[2] = {0};
		struct clovis_dtx *dx;
		char k[24];
		int rc;

		memset(s, 0, sizeof s);
		snprintf(k, sizeof k, "z%05u", i);
		rc = clovis_dtx_open(&dx, clovis_default_realm(cl));
		if (rc == 0)
			rc = rec_op(&accts, &s[0], CLOVIS_IC_PUT, k, i, &ops[0]);
		if (rc == 0)
			rc = blk_op(&s[1], CLOVIS_OC_WRITE, 100000 + i % 8, i,
				    &ops[1]);
		if (rc == 0)
			rc = dtx_run(dx, ops, 2);
		for (int j = 0; j < 2; j++) {
			clovis_op_free(ops[j]);
			free(s[j].blk);
		}
		if (rc != 0)
			die("touch dtx", rc);
	}
	clovis_fini(cl);
	return 0;
}

/*
 * stale STORE mk|dtx|late|read|readlate|peek [N] — the stale index replica after dtx commits
 * (commit 536781a, docs/cluster.md): the N-th index (of those the loop
 * below finds) whose home (its ordering replica) is server 1 of 3 and
 * whose other replicas are servers 2 and 0.
 *   mk    create it, plain PUTs k0..k9 = "old<i>" (versioned everywhere)
 *   dtx   three dtxs (run while a replica is down): PUT k0..k3 = "new<i>"
 *         (overwrite), DEL k4 and k5, PUT n0 and n1 = "new<i>"
 *   read  GET every key: k0..k3 and n0, n1 new, k4, k5 gone, k6..k9 old;
 *         prints each key that differs, exit 1 if any.
 *   late  one more dtx: PUT k0..k3 = "3000+i" (overwrite)
 *   readlate  as read, with k0..k3 = "3000+i"
 *   peek  GET k0 (any value): the replica read serves the index once
 */
static struct clovis_id STALE_IDX = {0xde, 0};

static int stale(const char *dir, const char *what, uint32_t nth)
{
	static struct clu_conf c3 = {.cc_nr_servers = 3};
	struct clovis_idx ix;
	bool mk = strcmp(what, "mk") == 0, dtx = strcmp(what, "dtx") == 0;
	bool peek = strcmp(what, "peek") == 0;
	bool late = strcmp(what, "late") == 0;
	bool rlate = strcmp(what, "readlate") == 0;
	int bad = 0, rc = 0;

	for (uint64_t lo = 0x7000; STALE_IDX.ci_lo == 0; lo++) {
		struct clovis_id id = {0xde, lo};

		if (clu_home(&c3, st_of(&id)) == 1 && nth-- == 0)
			STALE_IDX = id;
	}
	store_open(dir, false);
	if (!cluster)
		die("stale: needs a cluster file", -EINVAL);
	clovis_idx_init(&ix, clovis_default_realm(cl), &STALE_IDX);
	ent_sync(&ix.in_entity, mk ? CLOVIS_EO_CREATE : CLOVIS_EO_OPEN);
	for (int i = 0; mk && rc == 0 && i < 10; i++) {
		struct slot s = {0};
		struct clovis_op *op;
		char k[8];

		snprintf(k, sizeof k, "k%d", i);
		rc = rec_op(&ix, &s, CLOVIS_IC_PUT, k, 1000 + i, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		if (rc == 0)
			rc = s.rc[0];
	}
	for (int d = late ? 3 : 0; (dtx || late) && rc == 0 && d < (late ? 4 : 3);
	     d++) {
		/* d 0: PUT k0..k3; 1: DEL k4, k5; 2: PUT n0, n1 (dtx);
		 * 3: PUT k0..k3 = 3000 + i (late) */
		struct slot s[4];
		struct clovis_op *ops[4] = {0};
		struct clovis_dtx *dx;
		int nr = d == 0 || d == 3 ? 4 : 2;

		memset(s, 0, sizeof s);
		rc = clovis_dtx_open(&dx, clovis_default_realm(cl));
		for (int i = 0; rc == 0 && i < nr; i++) {
			char k[8];

			snprintf(k, sizeof k, "%c%d", d == 2 ? 'n' : 'k',
				 d == 1 ? 4 + i : i);
			rc = rec_op(&ix, &s[i], d == 1 ? CLOVIS_IC_DEL :
				    CLOVIS_IC_PUT, k, (d == 3 ? 3000 : 2000) + i,
				    &ops[i]);
		}
		if (rc == 0)
			rc = dtx_run(dx, ops, nr);
		for (int i = 0; i < nr; i++)
			clovis_op_free(ops[i]);
	}
	for (int i = 0; !mk && !dtx && !late && rc == 0 && i < (peek ? 1 : 12);
	     i++) {
		struct slot s = {0};
		struct clovis_op *op;
		char k[8], want[24];
		bool gone = i == 4 || i == 5;

		snprintf(k, sizeof k, "%c%d", i < 10 ? 'k' : 'n',
			 i < 10 ? i : i - 10);
		snprintf(want, sizeof want, "%d", i >= 10 ? 2000 + i - 10 :
			 i < 4 ? (rlate ? 3000 : 2000) + i : 1000 + i);
		rc = rec_op(&ix, &s, CLOVIS_IC_GET, k, 0, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		if (rc != 0 || peek)
			break;
		if (gone ? s.rc[0] != -ENOENT
			 : s.rc[0] != 0 || strcmp(s.v, want) != 0) {
			printf("dtx_crash: stale: key %s: rc %d value '%s', "
			       "expected %s\n", k, s.rc[0], s.rc[0] ? "" : s.v,
			       gone ? "none (deleted)" : want);
			bad++;
		}
	}
	if (rc != 0)
		die(what, rc);
	clovis_fini(cl);
	if (!mk && !dtx && !late && !peek)
		printf("dtx_crash: stale: 12 keys read, %d differ\n", bad);
	return bad == 0 ? 0 : 1;
}

/*
 * big STORE mk|dtx|read N — a dtx of many index members (dtm/README.md
 * "Copies of index members in runs"): an index homed on server 1 of 3.
 *   mk    create it
 *   dtx   one dtx: PUT k0..k<N-1> = i, PUT k20 = 900020 (a key twice),
 *         DEL k0..k9; prints how long the commit took
 *   read  GET k0..k<N-1>: k0..k9 gone, k20 900020, the others i; prints
 *         how many differ, exit 1 if any.
 * Read with STRATA_TEST_SKIP_SERVERS, it checks one replica alone.
 */
static struct clovis_id BIG_IDX = {0xdf, 0};

static int big_dtx(struct clovis_idx *ix, uint32_t n)
{
	struct slot *s = calloc(n + 11, sizeof *s);
	struct clovis_op **ops = calloc(n + 11, sizeof *ops);
	struct clovis_dtx *dx;
	struct timespec t0, t1;
	char k[16];
	int rc = s == NULL || ops == NULL ? -ENOMEM : 0;

	if (rc == 0)
		rc = clovis_dtx_open(&dx, clovis_default_realm(cl));
	for (uint32_t i = 0; rc == 0 && i < n + 11; i++) {
		uint32_t key = i < n ? i : i == n ? 20 : i - n - 1;

		snprintf(k, sizeof k, "k%u", key);
		rc = rec_op(ix, &s[i], i <= n ? CLOVIS_IC_PUT : CLOVIS_IC_DEL,
			    k, i < n ? (int64_t)i : 900020, &ops[i]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rc == 0)
		rc = dtx_run(dx, ops, (int)n + 11);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("dtx_crash: big: dtx of %u members: rc %d in %ld ms\n", n + 11,
	       rc, (long)((t1.tv_sec - t0.tv_sec) * 1000 +
			  (t1.tv_nsec - t0.tv_nsec) / 1000000));
	for (uint32_t i = 0; ops != NULL && i < n + 11; i++)
		clovis_op_free(ops[i]);
	free(ops);
	free(s);
	return rc;
}

static int big_read(struct clovis_idx *ix, uint32_t n)
{
	uint32_t bad = 0;
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		struct slot s = {0};
		struct clovis_op *op;
		char k[16], want[24];

		snprintf(k, sizeof k, "k%u", i);
		snprintf(want, sizeof want, "%u", i == 20 ? 900020 : i);
		rc = rec_op(ix, &s, CLOVIS_IC_GET, k, 0, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		if (rc == 0 && (i < 10 ? s.rc[0] != -ENOENT :
				s.rc[0] != 0 || strcmp(s.v, want) != 0)) {
			if (bad++ < 5)
				printf("dtx_crash: big: key %s: rc %d value "
				       "'%s', expected %s\n", k, s.rc[0],
				       s.rc[0] ? "" : s.v,
				       i < 10 ? "none (deleted)" : want);
		}
	}
	if (rc == 0)
		printf("dtx_crash: big: %u keys read, %u differ\n", n, bad);
	return rc != 0 ? rc : bad == 0 ? 0 : 1;
}

static int big(const char *dir, const char *what, uint32_t n)
{
	static struct clu_conf c3 = {.cc_nr_servers = 3};
	struct clovis_idx ix;
	bool mk = strcmp(what, "mk") == 0;
	int rc = 0;

	for (uint64_t lo = 0x9000; BIG_IDX.ci_lo == 0; lo++) {
		struct clovis_id id = {0xdf, lo};

		if (clu_home(&c3, st_of(&id)) == 1)
			BIG_IDX = id;
	}
	store_open(dir, false);
	if (!cluster)
		die("big: needs a cluster file", -EINVAL);
	clovis_idx_init(&ix, clovis_default_realm(cl), &BIG_IDX);
	ent_sync(&ix.in_entity, mk ? CLOVIS_EO_CREATE : CLOVIS_EO_OPEN);
	if (strcmp(what, "dtx") == 0)
		rc = big_dtx(&ix, n);
	else if (!mk)
		rc = big_read(&ix, n);
	if (rc < 0)
		die(what, rc);
	clovis_fini(cl);
	return rc;
}

/* Negative control for the script: one account changed in the index only,
 * outside any dtx (a torn transfer); check must then fail. */
static void tear(const char *dir)
{
	struct slot s = {0};
	struct clovis_op *op;
	int64_t ib, ob;
	int rc;

	store_open(dir, false);
	handles(CLOVIS_EO_OPEN);
	rc = balance(0, &ib, &ob);
	if (rc == 0)
		rc = rec_op(&accts, &s, CLOVIS_IC_PUT, "a00000", ib - 7, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die("tear", rc);
	clovis_fini(cl);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "destroy") == 0)
		return clovis_store_destroy(argv[2]) == 0 ? 0 : 1;
	if (argc >= 3 && strcmp(argv[1], "tear") == 0) {
		tear(argv[2]);
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "touch") == 0)
		return touch(argv[2], (uint32_t)atoi(argv[3]));
	if (argc >= 4 && strcmp(argv[1], "stale") == 0)
		return stale(argv[2], argv[3],
			     argc >= 5 ? (uint32_t)atoi(argv[4]) : 0);
	if (argc >= 5 && strcmp(argv[1], "big") == 0)
		return big(argv[2], argv[3], (uint32_t)atoi(argv[4]));
	if (argc >= 4 && strcmp(argv[1], "fence") == 0) {
		int rc;

		store_open(argv[2], false);
		rc = fence_wait((uint32_t)atoi(argv[3]));
		printf("dtx_crash: %s\n", rc == 0 ? "nothing in doubt" :
		       "a dtx is still in doubt");
		clovis_fini(cl);
		return rc == 0 ? 0 : 4;
	}
	if (argc >= 4 && strcmp(argv[1], "init") == 0) {
		nacc = (uint32_t)atoi(argv[3]);
		if (nacc < THREADS * 2 || nacc > 100000)
			die("NACC out of range", -EINVAL);
		init(argv[2]);
		return 0;
	}
	if (argc >= 5 && strcmp(argv[1], "run") == 0) {
		seed = strtoull(argv[4], NULL, 10);
		nper = argc >= 6 ? strtoull(argv[5], NULL, 10) : 0;
		nacc = argc >= 7 ? (uint32_t)atoi(argv[6]) : 64;
		first = argc >= 8 ? (uint32_t)atoi(argv[7]) : 0;
		run(argv[2], argv[3]);
		return 0;
	}
	if (argc >= 5 && strcmp(argv[1], "check") == 0) {
		nacc = (uint32_t)atoi(argv[4]);
		return check(argv[2], argv[3]);
	}
	fprintf(stderr, "usage: dtx_crash init STORE NACC | run STORE ACK SEED "
		"[N [NACC [FIRST]]] | check STORE ACK NACC | fence STORE SECS | "
		"touch STORE N | stale STORE mk|dtx|late|read|readlate|peek [N] | "
		"big STORE mk|dtx|read N\n");
	return 2;
}
