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
 * Exit status 0 when all holds; the check prints what it found.
 *
 * Cluster mode (tests/integ/dtx_cluster_test.sh): STORE names a cluster
 * file (*.yaml).  The three entities then get ids whose home servers
 * differ on a 3-server cluster (each dtx has 3 participants), init makes
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
 * Cluster mode: wait (at most 60 s) until every server answers and holds no
 * dtx in doubt for more than a second — one this process left in doubt
 * (a transfer whose outcome it does not know, or a run killed before)
 * could otherwise commit later over a newer transfer of the same accounts
 * (a dtx gives no isolation).  Sleeps 1.5 s first so that such a dtx is
 * older than a second by then.
 */
static void fence(void)
{
	uint32_t n = 64;
	struct clovis_server_info si[64];

	if (!cluster)
		return;
	usleep(1500000);
	if (clovis_server_list(cl, si, &n) != 0)
		n = 3;
	for (int t = 0; t < 300; t++) {
		uint64_t now = dtm_hlc_us(dtm_hlc_now());
		bool clear = true;

		for (uint32_t s = 0; s < n && clear; s++) {
			DtxReq q = DTX_REQ__INIT;
			DtxReply *rp = NULL;
			uint8_t *b;
			size_t bl, rl = 0;
			void *rb = NULL;
			int rc;

			q.kind = DTM_MSG_LIST;
			q.limit = DTM_LIST_MAX;
			if (dtm_pack(&q.base, &b, &bl) != 0)
				exit(2);
			rc = cluster_dtx_call(cl, s, DTM_OP, b, bl, 4000, &rb,
					      &rl);
			if (rc == 0)
				rc = dtm_reply_decode(rb, rl, &rp);
			free(rb);
			free(b);
			if (rc != 0) {
				clear = false;
				break;
			}
			for (size_t i = 0; i < rp->n_list; i++)
				if (rp->list[i]->state == DTM_PREPARED &&
				    now > rp->list[i]->time_us + 1000000)
					clear = false;
			dtx_reply__free_unpacked(rp, NULL);
		}
		if (clear)
			return;
		usleep(200000);
	}
	fprintf(stderr, "dtx_crash: dtxs still in doubt after 60 s\n");
	exit(4);
}

/* Cluster mode: ids whose homes on 3 servers are 0, 1 and 2. */
static void cluster_ids(void)
{
	static struct clu_conf c;
	struct clovis_id *want[3] = {&TXLOG, &ACCT_IDX, &ACCT_OBJ};

	c.cc_nr_servers = 3;
	for (uint32_t h = 0; h < 3; h++)
		for (uint64_t lo = 0x2000; ; lo++) {
			struct clovis_id id = {0xdd, lo + h * 0x1000};

			if (clu_home(&c, &id) == h) {
				*want[h] = id;
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
	return clovis_idx_op(ix, opc, &s->kv, &s->vv, s->rc,
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
		"[N [NACC [FIRST]]] | check STORE ACK NACC\n");
	return 2;
}
