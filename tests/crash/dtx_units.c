/*
 * dtx_units.c — dtxs with a pdclust member and entity members on a 3-server
 * cluster, for the crash rounds of tests/integ/dtx_cluster_test.sh.
 *
 *   dtx_units init  CLUSTER        (again after a failure: what exists is
 *                                  kept) pdclust 2+1 object P (4 KiB units, home
 *                                  s1), blocks 0-1 (one parity group) all
 *                                  bytes 0; plain object C0 (home s1);
 *                                  index L (home s2) with "gen" -> 0;
 *                                  plain object Q (home s1), QMIB MiB of
 *                                  byte 0
 *   dtx_units step  CLUSTER G      one dtx: blocks 0-1 of P := byte G,
 *                                  the QMIB MiB of Q := byte G (so s1's
 *                                  PREPARE is far above one message and
 *                                  moves by RMA),
 *                                  CREATE C<G>, DELETE C<g> (g: the
 *                                  generation L holds now), PUT "gen" -> G
 *                                  in L (participants s1 and s2); G must
 *                                  be new (1..255).  Exit 0
 *                                  committed, 3 outcome unknown (in doubt,
 *                                  or not yet applied everywhere), 1 failed
 *   dtx_units check CLUSTER GMAX   all or nothing: P's two blocks and Q's
 *                                  QMIB MiB hold one byte g throughout, L
 *                                  says g, C<g> exists
 *                                  and no other C<k> (k <= GMAX) does;
 *                                  prints "gen g"
 *   dtx_units free  CLUSTER        prints the free bytes of every pool of
 *                                  every server, summed (each home's view of
 *                                  its slices, remote devices included)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/clovis.h"
#include "core/clu_conf.h"

#define BS 4096u
#define NBLK 2u
#define QMIB 4u
#define QBLK (QMIB * 256u)

static struct clovis *cl;

static void die(const char *what, int rc)
{
	fprintf(stderr, "dtx_units: %s: %d %s\n", what, rc, clovis_errmsg());
	exit(2);
}

/* The k-th id (from base) whose home on a 3-server cluster is home. */
static struct clovis_id home_id(uint64_t base, uint32_t home, uint32_t k)
{
	struct clu_conf c = {.cc_nr_servers = 3};

	for (uint64_t lo = base; ; lo++) {
		struct clovis_id id = {0xde, lo};
		struct st_id sid = {id.ci_hi, id.ci_lo};

		if (clu_home(&c, &sid) == home && k-- == 0)
			return id;
	}
}

static struct clovis_id p_id(void) { return home_id(0x10000, 1, 0); }
static struct clovis_id l_id(void) { return home_id(0x20000, 2, 0); }
static struct clovis_id c_id(uint32_t g) { return home_id(0x30000, 1, g); }
static struct clovis_id q_id(void) { return home_id(0x40000, 1, 0); }

static int ent_op(struct clovis_entity *e, uint32_t opc)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(e, opc, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* init may be run again after a failed attempt: what exists is kept. */
static int ent_make(struct clovis_entity *e)
{
	int rc = ent_op(e, CLOVIS_EO_CREATE);

	return rc == -EEXIST ? ent_op(e, CLOVIS_EO_OPEN) : rc;
}

static void p_init(struct clovis_obj *o)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_PDCLUST,
				    .oa_data_units = 2, .oa_parity_units = 1,
				    .oa_unit_shift = 12};
	struct clovis_id id = p_id();

	clovis_obj_init(o, clovis_default_realm(cl), &id, &a);
}

static void c_init(struct clovis_obj *o, uint32_t g)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN};
	struct clovis_id id = c_id(g);

	clovis_obj_init(o, clovis_default_realm(cl), &id, &a);
}

static void q_init(struct clovis_obj *o)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN};
	struct clovis_id id = q_id();

	clovis_obj_init(o, clovis_default_realm(cl), &id, &a);
}

/* Buffers of the blocks op and the record op. */
struct bufs {
	uint64_t s[1], n[1];
	struct clovis_extvec ev;
	void *b[1];
	size_t l[1];
	struct clovis_bufvec bv;
	char blk[NBLK * BS];
	char k[8], v[16];
	void *kb[1], *vb[1];
	size_t kl[1], vl[1];
	struct clovis_bufvec kv, vv;
	int32_t rc[1];
	uint64_t qs[1], qn[1];
	struct clovis_extvec qev;
	void *qb[1];
	size_t ql[1];
	struct clovis_bufvec qbv;
	char q[QBLK * BS];
};

/* All QMIB MiB of Q: write byte c, or read. */
static int q_op(struct clovis_obj *o, struct bufs *b, uint32_t opc, int c,
		struct clovis_op **op)
{
	b->qs[0] = 0;
	b->qn[0] = QBLK;
	b->qev = (struct clovis_extvec){1, b->qs, b->qn};
	memset(b->q, c, sizeof b->q);
	b->qb[0] = b->q;
	b->ql[0] = sizeof b->q;
	b->qbv = (struct clovis_bufvec){1, b->qb, b->ql};
	return clovis_obj_op(o, opc, &b->qev, &b->qbv, 0, op);
}

static int blocks_op(struct clovis_obj *o, struct bufs *b, uint32_t opc,
		     int c, struct clovis_op **op)
{
	b->s[0] = 0;
	b->n[0] = NBLK;
	b->ev = (struct clovis_extvec){1, b->s, b->n};
	memset(b->blk, c, sizeof b->blk);
	b->b[0] = b->blk;
	b->l[0] = sizeof b->blk;
	b->bv = (struct clovis_bufvec){1, b->b, b->l};
	return clovis_obj_op(o, opc, &b->ev, &b->bv, 0, op);
}

static int gen_op(struct clovis_idx *ix, struct bufs *b, uint32_t opc,
		  uint32_t g, struct clovis_op **op)
{
	snprintf(b->k, sizeof b->k, "gen");
	b->kb[0] = b->k;
	b->kl[0] = 3;
	b->kv = (struct clovis_bufvec){1, b->kb, b->kl};
	memset(b->v, 0, sizeof b->v);
	if (opc == CLOVIS_IC_PUT)
		snprintf(b->v, sizeof b->v, "%u", g);
	b->vb[0] = b->v;
	b->vl[0] = opc == CLOVIS_IC_PUT ? strlen(b->v) : sizeof b->v - 1;
	b->vv = (struct clovis_bufvec){1, b->vb, b->vl};
	b->rc[0] = 1;
	return clovis_idx_op(ix, opc, &b->kv, &b->vv, b->rc,
			     opc == CLOVIS_IC_PUT ? CLOVIS_IF_OVERWRITE : 0, op);
}

static void init(void)
{
	struct clovis_obj p, c0, q;
	struct clovis_idx l;
	struct clovis_id lid = l_id();
	struct bufs *b = calloc(1, sizeof *b);
	struct clovis_op *op;
	int rc;

	p_init(&p);
	c_init(&c0, 0);
	q_init(&q);
	if ((rc = ent_make(&q.ob_entity)) != 0)
		die("create Q", rc);
	rc = q_op(&q, b, CLOVIS_OC_WRITE, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die("write Q", rc);
	clovis_idx_init(&l, clovis_default_realm(cl), &lid);
	if ((rc = ent_make(&p.ob_entity)) != 0)
		die("create P", rc);
	if ((rc = ent_make(&c0.ob_entity)) != 0)
		die("create C0", rc);
	if ((rc = ent_make(&l.in_entity)) != 0)
		die("create L", rc);
	rc = blocks_op(&p, b, CLOVIS_OC_WRITE, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die("write P", rc);
	rc = gen_op(&l, b, CLOVIS_IC_PUT, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die("put gen", rc);
	free(b);
}

static uint32_t gen_now(struct clovis_idx *l);

static int step(uint32_t g)
{
	struct clovis_obj p, cn, co, q;
	struct clovis_idx l;
	struct clovis_id lid = l_id();
	struct bufs *b = calloc(1, sizeof *b);
	struct clovis_op *ops[5], *cop;
	struct clovis_dtx *dx;
	int rc;

	p_init(&p);
	c_init(&cn, g);
	q_init(&q);
	clovis_idx_init(&l, clovis_default_realm(cl), &lid);
	if ((rc = ent_op(&p.ob_entity, CLOVIS_EO_OPEN)) != 0 ||
	    (rc = ent_op(&q.ob_entity, CLOVIS_EO_OPEN)) != 0 ||
	    (rc = ent_op(&l.in_entity, CLOVIS_EO_OPEN)) != 0)
		die("open", rc);
	c_init(&co, gen_now(&l));
	if ((rc = ent_op(&co.ob_entity, CLOVIS_EO_OPEN)) != 0)
		die("open C of the current generation", rc);
	rc = clovis_dtx_open(&dx, clovis_default_realm(cl));
	if (rc == 0)
		rc = blocks_op(&p, b, CLOVIS_OC_WRITE, (int)g, &ops[0]);
	if (rc == 0)
		rc = clovis_entity_op(&cn.ob_entity, CLOVIS_EO_CREATE, &ops[1]);
	if (rc == 0)
		rc = clovis_entity_op(&co.ob_entity, CLOVIS_EO_DELETE, &ops[2]);
	if (rc == 0)
		rc = gen_op(&l, b, CLOVIS_IC_PUT, g, &ops[3]);
	if (rc == 0)
		rc = q_op(&q, b, CLOVIS_OC_WRITE, (int)g, &ops[4]);
	for (int i = 0; rc == 0 && i < 5; i++)
		rc = clovis_dtx_add(dx, ops[i]);
	if (rc == 0)
		rc = clovis_dtx_commit(dx, &cop);
	if (rc != 0)
		die("dtx", rc);
	rc = clovis_op_sync(cop);
	printf("step %u: %d %s\n", g, rc, rc ? clovis_errmsg() : "");
	for (int i = 0; i < 5; i++)
		clovis_op_free(ops[i]);
	free(b);
	return rc == 0 ? 0 : rc == -ETIMEDOUT || rc == -EINPROGRESS ? 3 : 1;
}

/* The generation L holds. */
static uint32_t gen_now(struct clovis_idx *l)
{
	struct bufs *b = calloc(1, sizeof *b);
	struct clovis_op *op;
	uint32_t g;
	int rc = b == NULL ? -ENOMEM : gen_op(l, b, CLOVIS_IC_GET, 0, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0)
		rc = b->rc[0];
	if (rc != 0)
		die("get gen", rc);
	g = (uint32_t)strtoul(b->v, NULL, 10);
	free(b);
	return g;
}

static int check(uint32_t gmax)
{
	struct clovis_obj p, q;
	struct clovis_idx l;
	struct clovis_id lid = l_id();
	struct bufs *b = calloc(1, sizeof *b);
	struct clovis_op *op;
	unsigned g, lg;
	int rc, bad = 0;

	p_init(&p);
	q_init(&q);
	if ((rc = ent_op(&q.ob_entity, CLOVIS_EO_OPEN)) != 0)
		die("open Q", rc);
	clovis_idx_init(&l, clovis_default_realm(cl), &lid);
	if ((rc = ent_op(&p.ob_entity, CLOVIS_EO_OPEN)) != 0 ||
	    (rc = ent_op(&l.in_entity, CLOVIS_EO_OPEN)) != 0)
		die("open", rc);
	rc = blocks_op(&p, b, CLOVIS_OC_READ, 0x55, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die("read P", rc);
	g = (unsigned char)b->blk[0];
	for (size_t i = 0; i < sizeof b->blk; i++)
		if ((unsigned char)b->blk[i] != g) {
			printf("P torn: byte %zu is %u, byte 0 is %u\n", i,
			       (unsigned char)b->blk[i], g);
			bad = 1;
			break;
		}
	rc = q_op(&q, b, CLOVIS_OC_READ, 0x55, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		die("read Q", rc);
	for (size_t i = 0; i < sizeof b->q; i++)
		if ((unsigned char)b->q[i] != g) {
			printf("torn: Q byte %zu is %u, P holds %u\n", i,
			       (unsigned char)b->q[i], g);
			bad = 1;
			break;
		}
	lg = gen_now(&l);
	if (lg != g) {
		printf("torn: P holds generation %u, L says %u\n", g, lg);
		bad = 1;
	}
	for (uint32_t k = 0; k <= gmax; k++) {
		struct clovis_obj c;
		struct clovis_id id = c_id(k);

		clovis_obj_init(&c, clovis_default_realm(cl), &id, NULL);
		rc = ent_op(&c.ob_entity, CLOVIS_EO_OPEN);
		if (rc != 0 && rc != -ENOENT)
			die("open C", rc);
		if ((rc == 0) != (k == g)) {
			printf("torn: generation %u, but C%u %s\n", g, k,
			       rc == 0 ? "exists" : "does not exist");
			bad = 1;
		}
	}
	printf("gen %u%s\n", g, bad ? " TORN" : "");
	free(b);
	return bad;
}

static void pool_free(void)
{
	struct clovis_pool_info *pi = calloc(64, sizeof *pi);
	uint32_t n = 64;
	uint64_t sum = 0;
	int rc = pi == NULL ? -ENOMEM : clovis_pool_list(cl, pi, &n);

	if (rc != 0)
		die("pool list", rc);
	for (uint32_t i = 0; i < n; i++)
		sum += pi[i].pi_free_bytes;
	printf("%" PRIu64 "\n", sum);
	free(pi);
}

int main(int argc, char **argv)
{
	struct clovis_conf c = {.cc_mode = CLOVIS_MODE_CLUSTER};
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: dtx_units init|step|check|free "
			"CLUSTER [G]\n");
		return 2;
	}
	c.cc_cluster_conf = argv[2];
	rc = clovis_init(&cl, &c);
	if (rc != 0)
		die("clovis_init", rc);
	if (strcmp(argv[1], "init") == 0)
		init();
	else if (strcmp(argv[1], "step") == 0 && argc >= 4)
		rc = step((uint32_t)strtoul(argv[3], NULL, 10));
	else if (strcmp(argv[1], "check") == 0 && argc >= 4)
		rc = check((uint32_t)strtoul(argv[3], NULL, 10));
	else if (strcmp(argv[1], "free") == 0)
		pool_free();
	else
		rc = 2;
	clovis_fini(cl);
	return rc;
}
