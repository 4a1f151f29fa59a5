/*
 * dtm_ut.c — suite "dtm": transaction ids (hybrid logical clock), and the
 * cooperative-termination rule (with a participant gone for good) and the
 * participant's log record; the Clovis dtx API over an embedded store: commit of object and index
 * updates together, abort, the empty dtx, reads inside a dtx, ops on a
 * deleted entity, a dtx larger than one group-commit batch, a fault inside
 * the dtx's apply, and bad arguments.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clovis/clovis.h"
#include "clovis/clovis_internal.h"
#include "core/fault.h"
#include "core/limits.h"
#include "core/server/msg.h"
#include "dtm/dtm.h"
#include "dtm/dtm_cli.h"
#include "core/errors.h"
#include "dtm/dtm_msg.h"
#include "tests/ut.h"

#define BS 4096u
#define WAIT_NS (30ll * 1000000000ll)

static struct clovis *cl;
static char dir[512];
static uint64_t next_lo = 0x1000;

static int suite_init(void)
{
	const char *d = ut_tmpdir("dtm");
	struct clovis_conf c = {.cc_flags = CLOVIS_CONF_CREATE,
				.cc_dev_size = 64ull << 20};

	if (d == NULL)
		return -1;
	if (ut_cluster_mode()) /* a cluster outlives a run: fresh ids */
		next_lo = (uint64_t)time(NULL) << 24;
	snprintf(dir, sizeof dir, "%s/store", d);
	c.cc_data_dir = dir;
	if (clovis_init(&cl, &c) != 0) {
		fprintf(stderr, "dtm: clovis_init: %s\n", clovis_errmsg());
		return -1;
	}
	return 0;
}

static int suite_fini(void)
{
	clovis_fini(cl);
	return ut_cluster_mode() ? 0 : clovis_store_destroy(dir);
}

static struct clovis_id newid(void)
{
	return (struct clovis_id){0xd7d7, next_lo++};
}

static int idx_make(struct clovis_idx *ix)
{
	struct clovis_id id = newid();
	struct clovis_op *op;
	int rc = clovis_idx_init(ix, clovis_default_realm(cl), &id);

	if (rc == 0)
		rc = clovis_entity_op(&ix->in_entity, CLOVIS_EO_CREATE, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

static int obj_make(struct clovis_obj *o)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_PLAIN};
	struct clovis_id id = newid();
	struct clovis_op *op;
	int rc = clovis_obj_init(o, clovis_default_realm(cl), &id, &a);

	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_CREATE, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* One-record PUT (overwrite) of key -> val; bufs live in *r. */
struct rec {
	char k[32];
	char v[32];
	void *kb[1], *vb[1];
	size_t kl[1], vl[1];
	struct clovis_bufvec kv, vv;
	int32_t rc[1];
};

static int rec_op(struct clovis_idx *ix, struct rec *r, uint32_t opc,
		  const char *key, const char *val, struct clovis_op **op)
{
	snprintf(r->k, sizeof r->k, "%s", key);
	r->kb[0] = r->k;
	r->kl[0] = strlen(r->k);
	r->kv = (struct clovis_bufvec){1, r->kb, r->kl};
	if (opc == CLOVIS_IC_GET) {
		memset(r->v, 0, sizeof r->v);
		r->vb[0] = r->v;
		r->vl[0] = sizeof r->v;
	} else if (val != NULL) {
		snprintf(r->v, sizeof r->v, "%s", val);
		r->vb[0] = r->v;
		r->vl[0] = strlen(r->v);
	}
	r->vv = (struct clovis_bufvec){1, r->vb, r->vl};
	r->rc[0] = 1;
	return clovis_idx_op(ix, opc, &r->kv, opc == CLOVIS_IC_DEL ? NULL :
			     &r->vv, r->rc, opc == CLOVIS_IC_PUT ?
			     CLOVIS_IF_OVERWRITE : 0, op);
}

/* GET key: 0 and the value in out, or the record's rc (-ENOENT). */
static int get(struct clovis_idx *ix, const char *key, char *out, size_t len)
{
	struct rec r;
	struct clovis_op *op;
	int rc = rec_op(ix, &r, CLOVIS_IC_GET, key, NULL, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0)
		rc = r.rc[0];
	if (rc == 0)
		snprintf(out, len, "%.*s", (int)r.vl[0], r.v);
	return rc;
}

/* A one-block write of byte c at blk; buffer in buf (BS bytes). */
struct blk {
	uint64_t s[1], n[1];
	struct clovis_extvec ev;
	void *b[1];
	size_t l[1];
	struct clovis_bufvec bv;
	char *buf;
};

static int blk_op(struct clovis_obj *o, struct blk *w, uint32_t opc,
		  uint64_t blk, int c, struct clovis_op **op)
{
	w->s[0] = blk;
	w->n[0] = 1;
	w->ev = (struct clovis_extvec){1, w->s, w->n};
	if (w->buf == NULL)
		w->buf = malloc(BS);
	memset(w->buf, c, BS);
	w->b[0] = w->buf;
	w->l[0] = BS;
	w->bv = (struct clovis_bufvec){1, w->b, w->l};
	return clovis_obj_op(o, opc, &w->ev, &w->bv, 0, op);
}

/* First byte of block blk (0 for holes), or a negative rc. */
static int blk_read(struct clovis_obj *o, uint64_t blk)
{
	struct blk r = {0};
	struct clovis_op *op;
	int rc = blk_op(o, &r, CLOVIS_OC_READ, blk, 0x55, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0)
		rc = (unsigned char)r.buf[0];
	free(r.buf);
	return rc;
}


/* ------------------------------------------------------------ commit */

static void test_commit_obj_idx(void)
{
	struct clovis_idx ix;
	struct clovis_obj o;
	struct clovis_dtx *dx;
	struct clovis_op *ops[3], *cop;
	struct rec r1, r2;
	struct blk w = {0};
	struct clovis_dtx_id id;
	char v[32];

	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(obj_make(&o), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL(clovis_dtx_id(dx, &id), 0);
	CU_ASSERT(id.di_hlc != 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r1, CLOVIS_IC_PUT, "a", "1", &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r2, CLOVIS_IC_PUT, "b", "2", &ops[1]), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&o, &w, CLOVIS_OC_WRITE, 3, 0x77, &ops[2]), 0);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[i]), 0);
	/* One member launched early: it waits for the dtx. */
	CU_ASSERT_EQUAL(clovis_op_launch(&ops[0], 1), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(ops[0], CLOVIS_OS_EXECUTED, 200000000ll),
			-ETIMEDOUT);
	CU_ASSERT_EQUAL(get(&ix, "a", v, sizeof v), -ENOENT);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[0]), -CLOVIS_ESTATE);
	CU_ASSERT_EQUAL(clovis_op_launch(&cop, 1), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(cop, CLOVIS_OS_STABLE, WAIT_NS), 0);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(clovis_op_state(ops[i]), CLOVIS_OS_STABLE);
		clovis_op_free(ops[i]);
	}
	clovis_op_free(cop);
	CU_ASSERT_EQUAL(get(&ix, "a", v, sizeof v), 0);
	CU_ASSERT_STRING_EQUAL(v, "1");
	CU_ASSERT_EQUAL(get(&ix, "b", v, sizeof v), 0);
	CU_ASSERT_STRING_EQUAL(v, "2");
	CU_ASSERT_EQUAL(blk_read(&o, 3), 0x77);
	free(w.buf);
}

static void noop_cb(struct clovis_op *op)
{
	(void)op;
}

/* Embedded mode: a commit op launched without callbacks runs in the
 * launching thread, and so do its member index PUT/DEL left in INIT (no
 * device I/O: they only hold their commit items), with no hand-off to a
 * worker; a member WRITE and a member with callbacks go to the workers.
 * The outcome is the same dtx. */
static void test_run_here(void)
{
	struct clovis_idx ix;
	struct clovis_obj o;
	struct clovis_dtx *dx;
	struct clovis_op *ops[4], *cop;
	struct clovis_op_cbs cbs = {0};
	struct rec r0, r1, r2, r3;
	struct blk w = {0};
	uint64_t before;
	char v[32];

	if (ut_cluster_skip("dtm run_here", "ops run in the launching thread "
			    "only embedded (a cluster client runs every "
			    "op on library threads)"))
		return;

	cbs.oc_stable = noop_cb;
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(obj_make(&o), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r0, CLOVIS_IC_PUT, "x", "0", &ops[0]),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_op_sync(ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r1, CLOVIS_IC_PUT, "y", "1", &ops[0]),
			      0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r2, CLOVIS_IC_DEL, "x", NULL, &ops[1]),
			      0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&o, &w, CLOVIS_OC_WRITE, 5, 0x5a, &ops[2]),
			      0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r3, CLOVIS_IC_PUT, "z", "3", &ops[3]),
			      0);
	CU_ASSERT_EQUAL(clovis_op_setup(ops[3], &cbs, NULL), 0);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[i]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	before = op_here_runs;
	CU_ASSERT_EQUAL(clovis_op_launch(&cop, 1), 0);
	/* the commit op and the two index members without callbacks */
	CU_ASSERT_EQUAL(op_here_runs - before, 3);
	CU_ASSERT_NOT_EQUAL(clovis_op_state(ops[0]), CLOVIS_OS_INIT);
	CU_ASSERT_NOT_EQUAL(clovis_op_state(ops[1]), CLOVIS_OS_INIT);
	CU_ASSERT_EQUAL(clovis_op_wait(cop, CLOVIS_OS_STABLE, WAIT_NS), 0);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(clovis_op_state(ops[i]), CLOVIS_OS_STABLE);
		clovis_op_free(ops[i]);
	}
	clovis_op_free(cop);
	CU_ASSERT_EQUAL(get(&ix, "x", v, sizeof v), -ENOENT);
	CU_ASSERT_EQUAL(get(&ix, "y", v, sizeof v), 0);
	CU_ASSERT_STRING_EQUAL(v, "1");
	CU_ASSERT_EQUAL(get(&ix, "z", v, sizeof v), 0);
	CU_ASSERT_STRING_EQUAL(v, "3");
	CU_ASSERT_EQUAL(blk_read(&o, 5), 0x5a);
	free(w.buf);
}

static void test_abort(void)
{
	struct clovis_idx ix;
	struct clovis_obj o;
	struct clovis_dtx *dx;
	struct clovis_op *ops[2];
	struct rec r1;
	struct blk w = {0};
	char v[32];

	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(obj_make(&o), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r1, CLOVIS_IC_PUT, "k", "x", &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&o, &w, CLOVIS_OC_WRITE, 0, 0x11, &ops[1]), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[0]), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[1]), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(&ops[1], 1), 0); /* write launched */
	clovis_dtx_abort(dx);
	CU_ASSERT_EQUAL(clovis_op_wait(ops[1], CLOVIS_OS_STABLE, WAIT_NS),
			-ECANCELED);
	CU_ASSERT_EQUAL(clovis_op_state(ops[1]), CLOVIS_OS_FAILED);
	CU_ASSERT_EQUAL(clovis_op_state(ops[0]), CLOVIS_OS_INIT);
	CU_ASSERT_EQUAL(blk_read(&o, 0), 0);
	CU_ASSERT_EQUAL(get(&ix, "k", v, sizeof v), -ENOENT);
	/* The member that was never launched is an ordinary op again. */
	CU_ASSERT_EQUAL(clovis_op_sync(ops[0]), 0);
	CU_ASSERT_EQUAL(get(&ix, "k", v, sizeof v), 0);
	clovis_op_free(ops[1]);
	free(w.buf);
}

/* A member index PUT without CLOVIS_IF_OVERWRITE that meets an existing
 * key fails the whole dtx with -EEXIST naming the key (clovis.h): the
 * other members' changes are not applied, the old value stays (embedded:
 * dtm/loc_dtx.c; cluster: the participant's PREPARE). */
static void test_put_exists(void)
{
	struct clovis_idx ix;
	struct clovis_dtx *dx;
	struct clovis_op *ops[2], *cop, *put;
	struct rec r0, r1, r2;
	char v[32];

	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r0, CLOVIS_IC_PUT, "k", "old", &put),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_op_sync(put), 0); /* frees put */
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r1, CLOVIS_IC_PUT, "n", "1", &ops[0]),
			      0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r2, CLOVIS_IC_PUT, "k", "new", &ops[1]),
			      0);
	/* the second member again, without CLOVIS_IF_OVERWRITE */
	clovis_op_free(ops[1]);
	CU_ASSERT_EQUAL_FATAL(clovis_idx_op(&ix, CLOVIS_IC_PUT, &r2.kv, &r2.vv,
					    r2.rc, 0, &ops[1]), 0);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[i]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(&cop, 1), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(cop, CLOVIS_OS_STABLE, WAIT_NS), -EEXIST);
	CU_ASSERT_EQUAL(clovis_op_state(cop), CLOVIS_OS_FAILED);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_op_errmsg(cop), "key \"k\""));
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL(clovis_op_state(ops[i]), CLOVIS_OS_FAILED);
	CU_ASSERT_EQUAL(get(&ix, "k", v, sizeof v), 0);
	CU_ASSERT_STRING_EQUAL(v, "old");
	CU_ASSERT_EQUAL(get(&ix, "n", v, sizeof v), -ENOENT);
	for (int i = 0; i < 2; i++)
		clovis_op_free(ops[i]);
	clovis_op_free(cop);
}

static void test_empty_and_reads(void)
{
	struct clovis_idx ix;
	struct clovis_dtx *dx;
	struct clovis_op *cop, *put, *rd;
	struct rec r0, r1, rg;
	char v[32];

	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(cop), 0);

	/* Reads inside a dtx see the store without the dtx's updates. */
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r0, CLOVIS_IC_PUT, "k", "old", &put), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_op_sync(put), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r1, CLOVIS_IC_PUT, "k", "new", &put), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, put), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(&put, 1), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &rg, CLOVIS_IC_GET, "k", NULL, &rd), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, rd), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(rd), 0);
	CU_ASSERT_EQUAL(rg.rc[0], 0);
	CU_ASSERT_EQUAL(memcmp(rg.v, "old", 3), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(cop), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(put, CLOVIS_OS_STABLE, WAIT_NS), 0);
	clovis_op_free(put);
	CU_ASSERT_EQUAL(get(&ix, "k", v, sizeof v), 0);
	CU_ASSERT_STRING_EQUAL(v, "new");

	/* A dtx of reads only commits trivially too. */
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &rg, CLOVIS_IC_GET, "k", NULL, &rd), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, rd), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(cop), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(rd), 0);
	CU_ASSERT_EQUAL(memcmp(rg.v, "new", 3), 0);
}

/* Delete entity e now (synchronously). */
static int ent_delete(struct clovis_entity *e)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(e, CLOVIS_EO_DELETE, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

static void test_deleted_entity(void)
{
	struct clovis_idx ix, ix2;
	struct clovis_obj o;
	struct clovis_dtx *dx;
	struct clovis_op *put, *wr, *cop;
	struct rec r1;
	struct blk w = {0};
	char v[32];

	/* Deleted after its member ran (data written, item held). */
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(obj_make(&o), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r1, CLOVIS_IC_PUT, "p", "1", &put), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&o, &w, CLOVIS_OC_WRITE, 1, 0x42, &wr), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, put), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, wr), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(&wr, 1), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(wr, CLOVIS_OS_EXECUTED, 100000000ll),
			-ETIMEDOUT);
	{
		struct clovis_obj o2 = o;

		CU_ASSERT_EQUAL(ent_delete(&o2.ob_entity), 0);
	}
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(cop), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "dtx"));
	/* the member that failed it gets the error, the other -ECANCELED,
	 * in both modes (cluster mode: the participant names the member of
	 * its PREPARE; before, its first member was blamed) */
	CU_ASSERT_EQUAL(clovis_op_wait(wr, CLOVIS_OS_STABLE, WAIT_NS), -ENOENT);
	CU_ASSERT_EQUAL(clovis_op_wait(put, CLOVIS_OS_STABLE, WAIT_NS),
			-ECANCELED);
	CU_ASSERT(clovis_op_rc(wr) < 0 && clovis_op_rc(put) < 0);
	clovis_op_free(wr);
	clovis_op_free(put);
	CU_ASSERT_EQUAL(get(&ix, "p", v, sizeof v), -ENOENT);

	/* Deleted before its member ran: the member fails at once. */
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix2), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r1, CLOVIS_IC_PUT, "q", "1", &put), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, put), 0);
	{
		struct clovis_idx ix3 = ix2;
		struct rec r2;
		struct clovis_op *put2;

		CU_ASSERT_EQUAL_FATAL(rec_op(&ix2, &r2, CLOVIS_IC_PUT, "q", "2",
					     &put2), 0);
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, put2), 0);
		CU_ASSERT_EQUAL(ent_delete(&ix3.in_entity), 0);
		CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
		CU_ASSERT_EQUAL(clovis_op_sync(cop), -ENOENT);
		CU_ASSERT_EQUAL(clovis_op_wait(put2, CLOVIS_OS_STABLE,
					       WAIT_NS), -ENOENT);
		CU_ASSERT(clovis_op_rc(put2) < 0);
		clovis_op_free(put2);
	}
	CU_ASSERT_EQUAL(clovis_op_wait(put, CLOVIS_OS_STABLE, WAIT_NS),
			-ECANCELED);
	clovis_op_free(put);
	CU_ASSERT_EQUAL(get(&ix, "q", v, sizeof v), -ENOENT);
	free(w.buf);
}

/* n PUTs "k<i>" -> "v<i>" in one dtx; returns the commit op's rc. */
static int big_dtx(struct clovis_idx *ix, uint32_t n)
{
	struct rec *r = calloc(n, sizeof *r);
	struct clovis_op **ops = calloc(n, sizeof *ops), *cop;
	struct clovis_dtx *dx;
	char k[32], v[32];
	int rc = clovis_dtx_open(&dx, clovis_default_realm(cl));

	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		snprintf(k, sizeof k, "k%06u", i);
		snprintf(v, sizeof v, "v%u", i);
		rc = rec_op(ix, &r[i], CLOVIS_IC_PUT, k, v, &ops[i]);
		if (rc == 0)
			rc = clovis_dtx_add(dx, ops[i]);
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	/* Half launched by the caller, half by the commit. */
	CU_ASSERT_EQUAL(clovis_op_launch(ops, n / 2), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	rc = clovis_op_sync(cop);
	if (rc != 0 && rc != -EIO)
		fprintf(stderr, "dtm big_dtx: %d %s\n", rc, clovis_errmsg());
	for (uint32_t i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(clovis_op_wait(ops[i], CLOVIS_OS_STABLE, WAIT_NS),
				rc == 0 ? 0 : rc == -EIO && i == 0 ? -EIO :
				-ECANCELED);
		clovis_op_free(ops[i]);
	}
	free(ops);
	free(r);
	return rc;
}

static void test_larger_than_batch(void)
{
	struct clovis_idx ix;
	uint32_t n = LIM_BATCH_MAX * 2 + 37, found = 0;
	char k[32], v[32];

	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL(big_dtx(&ix, n), 0);
	for (uint32_t i = 0; i < n; i++) {
		snprintf(k, sizeof k, "k%06u", i);
		found += get(&ix, k, v, sizeof v) == 0;
	}
	CU_ASSERT_EQUAL(found, n);
}

/* A write of nblk blocks of byte c from block blk (one buffer). */
struct mwr {
	uint64_t s[1], n[1];
	struct clovis_extvec ev;
	void *b[1];
	size_t l[1];
	struct clovis_bufvec bv;
};

static int mwr_op(struct clovis_obj *o, struct mwr *w, uint32_t opc,
		  uint64_t blk, uint64_t nblk, void *buf, struct clovis_op **op)
{
	w->s[0] = blk;
	w->n[0] = nblk;
	w->ev = (struct clovis_extvec){1, w->s, w->n};
	w->b[0] = buf;
	w->l[0] = nblk * BS;
	w->bv = (struct clovis_bufvec){1, w->b, w->l};
	return clovis_obj_op(o, opc, &w->ev, &w->bv, 0, op);
}

#define MIB_OPS 4u              /* 1 MiB each: 4 MiB to the object's home */
#define MIB_BLKS (256u)

/* A dtx of MIB_OPS 1-MiB writes of o (byte c + i) and a PUT of key into
 * ix (with kill, ix is deleted before the dtx is launched: the dtx
 * fails).  Its commit rc. */
static int mib_dtx(struct clovis_obj *o, struct clovis_idx *ix,
		   const char *key, int c, bool kill)
{
	struct clovis_dtx *dx;
	struct clovis_op *ops[MIB_OPS + 1], *cop;
	struct mwr w[MIB_OPS];
	struct rec r;
	uint8_t *buf = malloc((size_t)MIB_OPS * MIB_BLKS * BS);
	int rc;

	if (buf == NULL)
		return -ENOMEM;
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	for (uint32_t i = 0; i < MIB_OPS; i++) {
		uint8_t *b = buf + (size_t)i * MIB_BLKS * BS;

		memset(b, c + (int)i, (size_t)MIB_BLKS * BS);
		CU_ASSERT_EQUAL_FATAL(mwr_op(o, &w[i], CLOVIS_OC_WRITE,
					     i * MIB_BLKS, MIB_BLKS, b,
					     &ops[i]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(rec_op(ix, &r, CLOVIS_IC_PUT, key, "mib",
				     &ops[MIB_OPS]), 0);
	for (uint32_t i = 0; i <= MIB_OPS; i++)
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[i]), 0);
	if (kill)
		CU_ASSERT_EQUAL(ent_delete(&ix->in_entity), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(ops, MIB_OPS + 1), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	rc = clovis_op_sync(cop);
	for (uint32_t i = 0; i <= MIB_OPS; i++) {
		CU_ASSERT_EQUAL(clovis_op_wait(ops[i], CLOVIS_OS_STABLE,
					       WAIT_NS) == 0, rc == 0);
		clovis_op_free(ops[i]);
	}
	free(buf);
	return rc;
}

/* Every block of the MIB_OPS MiB holds byte c + (its MiB): 0, or the
 * first block that does not. */
static int mib_check(struct clovis_obj *o, int c)
{
	uint8_t *buf = malloc((size_t)MIB_BLKS * BS);
	int bad = 0;

	for (uint32_t i = 0; buf != NULL && i < MIB_OPS && bad == 0; i++) {
		struct mwr r;
		struct clovis_op *op;

		memset(buf, 0x5a, (size_t)MIB_BLKS * BS);
		if (mwr_op(o, &r, CLOVIS_OC_READ, i * MIB_BLKS, MIB_BLKS, buf,
			   &op) != 0 || clovis_op_sync(op) != 0) {
			bad = -1;
			break;
		}
		for (uint32_t k = 0; k < MIB_BLKS * BS; k++)
			if (buf[k] != (uint8_t)(c + (int)i)) {
				bad = (int)(i * MIB_BLKS + k / BS) + 1;
				break;
			}
	}
	free(buf);
	return buf == NULL ? -ENOMEM : bad;
}

/* A dtx of several MiB: in cluster mode its PREPARE to the object's home
 * is far above one message (DTM_PREPARE_INLINE_MAX) and moves by RMA.
 * Commit: all of it visible; a failing member: none of it; past
 * DTM_PREPARE_BYTES_MAX per participant: -E2BIG naming the dtx. */
static void test_multi_mib(void)
{
	struct clovis_idx ix, dead;
	struct clovis_obj o;
	char v[32];

	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(&dead), 0);
	CU_ASSERT_EQUAL_FATAL(obj_make(&o), 0);
	CU_ASSERT_EQUAL(mib_dtx(&o, &ix, "m1", 0x30, false), 0);
	CU_ASSERT_EQUAL(mib_check(&o, 0x30), 0);
	CU_ASSERT_EQUAL(get(&ix, "m1", v, sizeof v), 0);
	/* a member on a deleted index: nothing of the 4 MiB applied */
	CU_ASSERT_NOT_EQUAL(mib_dtx(&o, &dead, "m2", 0x60, true), 0);
	CU_ASSERT_EQUAL(mib_check(&o, 0x30), 0);
	/* and the next one commits */
	CU_ASSERT_EQUAL(mib_dtx(&o, &ix, "m3", 0x40, false), 0);
	CU_ASSERT_EQUAL(mib_check(&o, 0x40), 0);
	CU_ASSERT_EQUAL(get(&ix, "m3", v, sizeof v), 0);
	if (ut_cluster_mode()) {
		/* the bound: one write above DTM_PREPARE_BYTES_MAX */
		uint64_t nblk = DTM_PREPARE_BYTES_MAX / BS + 1;
		uint8_t *buf = calloc(nblk, BS);
		struct clovis_dtx *dx;
		struct clovis_op *op, *cop;
		struct clovis_dtx_id id;
		char ids[DTM_ID_STR_LEN];
		struct mwr w;

		CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
		CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx,
					clovis_default_realm(cl)), 0);
		CU_ASSERT_EQUAL(clovis_dtx_id(dx, &id), 0);
		CU_ASSERT_EQUAL_FATAL(mwr_op(&o, &w, CLOVIS_OC_WRITE, 0, nblk,
					     buf, &op), 0);
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, op), 0);
		CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
		CU_ASSERT_EQUAL(clovis_op_sync(cop), -E2BIG); /* frees cop */
		if (strstr(clovis_errmsg(), "DTM_PREPARE_BYTES_MAX") == NULL)
			fprintf(stderr, "dtm multi_mib: %s\n",
				clovis_errmsg());
		CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(),
					      dtm_id_format(st_of(&id), ids)));
		CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(),
					      "DTM_PREPARE_BYTES_MAX"));
		CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE, WAIT_NS),
				-E2BIG);
		clovis_op_free(op);
		free(buf);
		CU_ASSERT_EQUAL(mib_check(&o, 0x40), 0);
	}
}

/* Cluster: a participant refuses a malformed PREPARE envelope (bulk
 * missing, of another length, or not a PREPARE) with -EBADMSG or -EINVAL
 * and a message, logs nothing, and goes on serving. */
static void test_bad_bulk(void)
{
	DtxReq env = DTX_REQ__INIT;
	uint8_t junk[60000], *b;
	size_t bl;
	void *rb = NULL;
	size_t rl = 0;
	struct clovis_idx ix;
	char v[32];

	if (!ut_cluster_mode()) {
		printf("skipped in embedded mode (no participant) ");
		return;
	}
	memset(junk, 0xa5, sizeof junk);
	env.kind = DTM_MSG_PREPARE;
	env.hlc = 0x77777;
	env.node = 3;
	env.bulk_len = sizeof junk;
	CU_ASSERT_EQUAL_FATAL(dtm_pack(&env.base, &b, &bl), 0);
	/* no bulk at all */
	CU_ASSERT_EQUAL(cluster_dtx_call(cl, 0, DTM_OP, b, bl, NULL, 0, 4000,
					 &rb, &rl), -EBADMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "bulk"));
	free(rb);
	rb = NULL;
	/* a bulk of another length */
	CU_ASSERT_EQUAL(cluster_dtx_call(cl, 0, DTM_OP, b, bl, junk,
					 sizeof junk - 1, 4000, &rb, &rl),
			-EBADMSG);
	free(rb);
	rb = NULL;
	/* a bulk that is no PREPARE */
	CU_ASSERT(cluster_dtx_call(cl, 0, DTM_OP, b, bl, junk, sizeof junk,
				   4000, &rb, &rl) < 0);
	CU_ASSERT(strstr(clovis_errmsg(), "bulk") != NULL);
	free(rb);
	free(b);
	/* still serving */
	CU_ASSERT_EQUAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL(get(&ix, "none", v, sizeof v), -ENOENT);
}

static void test_fault_apply(void)
{
	struct clovis_idx ix;
	uint32_t n = LIM_BATCH_MAX + 5, found = 0;
	char k[32], v[32];

	if (ut_cluster_skip("dtm fault_apply", "in-process fault point"))
		return;
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	fault_arm("dtx.apply.mid", 0, 1);
	CU_ASSERT_EQUAL(big_dtx(&ix, n), -EIO);
	CU_ASSERT_EQUAL(fault_fired("dtx.apply.mid"), 1);
	fault_reset();
	for (uint32_t i = 0; i < n; i++) {
		snprintf(k, sizeof k, "k%06u", i);
		found += get(&ix, k, v, sizeof v) == 0;
	}
	CU_ASSERT_EQUAL(found, 0);
	/* The store is fine afterwards. */
	CU_ASSERT_EQUAL(big_dtx(&ix, 10), 0);
}

static void test_bad_args(void)
{
	struct clovis_idx ix;
	struct clovis_obj o;
	struct clovis_dtx *dx;
	struct clovis_op *op, *cop;
	struct rec r1;
	struct blk w = {0};
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_MIRROR};
	struct clovis_id id = newid();

	CU_ASSERT_EQUAL(clovis_dtx_open(NULL, clovis_default_realm(cl)), -EINVAL);
	CU_ASSERT_EQUAL(clovis_dtx_open(&dx, NULL), -EINVAL);
	CU_ASSERT_EQUAL(clovis_dtx_add(NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(clovis_dtx_commit(NULL, &op), -EINVAL);
	clovis_dtx_abort(NULL);
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, NULL), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r1, CLOVIS_IC_PUT, "z", "1", &op), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(op), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r1, CLOVIS_IC_PUT, "z", "1", &op), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, op), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, op), -CLOVIS_ESTATE);
	clovis_op_free(op); /* leaves the dtx */
	/* Unit-layout objects are refused with a message. */
	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&o, clovis_default_realm(cl), &id,
					      &a), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&o.ob_entity, CLOVIS_EO_CREATE,
					       &op), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_op_sync(op), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&o, &w, CLOVIS_OC_WRITE, 0, 1, &op), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, op), 0); /* test_unit_layouts */
	clovis_op_free(op); /* in INIT: leaves the dtx */
	if (ut_cluster_mode()) {
		/* Kinds no participant applies are refused, naming them. */
		struct clovis_container ct;
		struct clovis_id ctid = newid();

		CU_ASSERT_EQUAL_FATAL(clovis_container_init(&ct, cl, &ctid),
				      0);
		CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&ct.co_entity,
						       CLOVIS_EO_CREATE, &op),
				      0);
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, op), -ENOTSUP);
		CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "container"));
		CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "CREATE"));
		clovis_op_free(op);
	}
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	CU_ASSERT_EQUAL(clovis_dtx_commit(dx, &op), -CLOVIS_ESTATE);
	clovis_dtx_abort(dx); /* refused: committed */
	CU_ASSERT_EQUAL(clovis_op_sync(cop), 0); /* empty after the free */
	free(w.buf);
}

/* ------------------------------------------------------ unit layouts */

static int mobj_make(struct clovis_obj *o)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_MIRROR};
	struct clovis_id id = newid();
	struct clovis_op *op;
	int rc = clovis_obj_init(o, clovis_default_realm(cl), &id, &a);

	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_CREATE, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

static __thread char unit_msg[256]; /* the last failed commit's message */

/* One dtx: block b1 of o1 := c, block b2 of o2 := c, PUT key -> val. */
static int unit_dtx(struct clovis_obj *o1, uint64_t b1, struct clovis_obj *o2,
		    uint64_t b2, int c, struct clovis_idx *ix, const char *key)
{
	struct clovis_dtx *dx;
	struct clovis_op *ops[3] = {0}, *cop;
	struct blk w1 = {0}, w2 = {0};
	struct rec r;
	char val[8];
	int rc = clovis_dtx_open(&dx, clovis_default_realm(cl));

	snprintf(val, sizeof val, "%d", c);
	if (rc == 0)
		rc = blk_op(o1, &w1, CLOVIS_OC_WRITE, b1, c, &ops[0]);
	if (rc == 0)
		rc = blk_op(o2, &w2, CLOVIS_OC_WRITE, b2, c, &ops[1]);
	if (rc == 0)
		rc = rec_op(ix, &r, CLOVIS_IC_PUT, key, val, &ops[2]);
	for (int i = 0; rc == 0 && i < 3; i++)
		rc = clovis_dtx_add(dx, ops[i]);
	if (rc == 0)
		rc = clovis_op_launch(ops, 1); /* one early: deferred */
	if (rc == 0)
		rc = clovis_dtx_commit(dx, &cop);
	if (rc == 0) {
		rc = clovis_op_launch(&cop, 1);
		if (rc == 0)
			rc = clovis_op_wait(cop, CLOVIS_OS_STABLE, WAIT_NS);
		if (rc == 0)
			rc = clovis_op_rc(cop);
		if (rc != 0)
			snprintf(unit_msg, sizeof unit_msg, "%s",
				 clovis_op_errmsg(cop));
		if (rc != 0 && rc != -EINVAL && rc != -ENOENT)
			fprintf(stderr, "dtm unit_dtx: %d %s\n", rc, unit_msg);
		clovis_op_free(cop);
	} else {
		clovis_dtx_abort(dx);
	}
	for (int i = 0; i < 3; i++)
		clovis_op_free(ops[i]);
	free(w1.buf);
	free(w2.buf);
	return rc;
}

static struct clovis_obj uo1, uo2;
static struct clovis_idx uix;
static int unit_fail;

static void *unit_worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	char key[16];

	for (int n = 0; n < 10; n++) {
		snprintf(key, sizeof key, "t%d", t);
		/* half the threads in the other object order */
		if ((t & 1 ? unit_dtx(&uo2, 8 + t, &uo1, 8 + t, 0x40 + n, &uix,
				      key)
			   : unit_dtx(&uo1, 8 + t, &uo2, 8 + t, 0x40 + n, &uix,
				      key)) != 0)
			__atomic_add_fetch(&unit_fail, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Writes to objects with unit layouts in a dtx: their group locks are
 * taken together at the commit (embedded: by the client's engine; cluster:
 * by the object's home, which writes the units on every server's
 * devices). */
static void test_unit_layouts(void)
{
	pthread_t th[4];
	char v[32];

	CU_ASSERT_EQUAL_FATAL(mobj_make(&uo1), 0);
	CU_ASSERT_EQUAL_FATAL(mobj_make(&uo2), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(&uix), 0);
	/* commit: all visible */
	CU_ASSERT_EQUAL(unit_dtx(&uo1, 0, &uo2, 5, 0x11, &uix, "u"), 0);
	CU_ASSERT_EQUAL(blk_read(&uo1, 0), 0x11);
	CU_ASSERT_EQUAL(blk_read(&uo2, 5), 0x11);
	CU_ASSERT_EQUAL(get(&uix, "u", v, sizeof v), 0);
	CU_ASSERT_STRING_EQUAL(v, "17");
	/* a failing member (two updates of one group): none applied */
	CU_ASSERT_EQUAL(unit_dtx(&uo1, 0, &uo1, 0, 0x22, &uix, "u"), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(unit_msg, "parity group"));
	CU_ASSERT_EQUAL(blk_read(&uo1, 0), 0x11);
	CU_ASSERT_EQUAL(get(&uix, "u", v, sizeof v), 0);
	CU_ASSERT_STRING_EQUAL(v, "17");
	/* concurrent dtxs over the same groups, in both object orders: no
	 * deadlock (each commit waited for WAIT_NS at most) */
	for (intptr_t t = 0; t < 4; t++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[t], NULL, unit_worker,
						     (void *)t), 0);
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	CU_ASSERT_EQUAL(unit_fail, 0);
	for (int t = 0; t < 4; t++) {
		char key[16];

		snprintf(key, sizeof key, "t%d", t);
		CU_ASSERT_EQUAL(blk_read(&uo1, 8 + t), 0x40 + 9);
		CU_ASSERT_EQUAL(blk_read(&uo2, 8 + t), 0x40 + 9);
		CU_ASSERT_EQUAL(get(&uix, key, v, sizeof v), 0);
		CU_ASSERT_EQUAL(atoi(v), 0x40 + 9);
	}
}

/* ------------------------------------------------- entity members */

/* A pdclust 2+1 object of 4 KiB units (3 servers: one unit on each). */
static int pobj_init(struct clovis_obj *o, struct clovis_id id)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_PDCLUST,
				    .oa_data_units = 2, .oa_parity_units = 1,
				    .oa_unit_shift = 12};

	return clovis_obj_init(o, clovis_default_realm(cl), &id, &a);
}

static int pobj_make(struct clovis_obj *o);

/* A member WRITE made with CLOVIS_OF_HERE and launched before the commit
 * runs in the launching thread and waits, held, for its dtx; in a dtx
 * with a member on a pdclust object nothing runs in the launching thread
 * (those members run at the commit, on library threads). */
static void test_run_here_write(void)
{
	struct clovis_obj o, po;
	struct clovis_idx ix;
	struct clovis_dtx *dx;
	struct clovis_op *ops[3], *cop;
	struct blk w = {0}, pw = {0};
	struct rec r0;
	uint64_t before;
	char v[32];

	if (ut_cluster_skip("dtm run_here_write", "ops run in the launching thread "
			    "only embedded (a cluster client runs every "
			    "op on library threads)"))
		return;

	CU_ASSERT_EQUAL_FATAL(obj_make(&o), 0);
	CU_ASSERT_EQUAL_FATAL(pobj_make(&po), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	/* plain: the flagged write runs here, held until the commit */
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&o, &w, CLOVIS_OC_WRITE, 2, 0x3c, &ops[0]),
			      0);
	clovis_op_free(ops[0]);  /* blk_op makes it unflagged: again */
	CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, CLOVIS_OC_WRITE, &w.ev, &w.bv,
					    CLOVIS_OF_HERE, &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r0, CLOVIS_IC_PUT, "w", "1", &ops[1]),
			      0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[0]), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[1]), 0);
	before = op_here_runs;
	CU_ASSERT_EQUAL(clovis_op_launch(&ops[0], 1), 0);
	CU_ASSERT_EQUAL(op_here_runs - before, 1);
	CU_ASSERT_EQUAL(clovis_op_state(ops[0]), CLOVIS_OS_LAUNCHED);
	CU_ASSERT_EQUAL(blk_read(&o, 2), 0);     /* held: not applied */
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(&cop, 1), 0);
	CU_ASSERT_EQUAL(op_here_runs - before, 3);
	CU_ASSERT_EQUAL(clovis_op_wait(cop, CLOVIS_OS_STABLE, WAIT_NS), 0);
	clovis_op_free(cop);
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(clovis_op_state(ops[i]), CLOVIS_OS_STABLE);
		clovis_op_free(ops[i]);
	}
	CU_ASSERT_EQUAL(blk_read(&o, 2), 0x3c);
	CU_ASSERT_EQUAL(get(&ix, "w", v, sizeof v), 0);
	/* with a pdclust member: every op of the dtx on library threads */
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&po, &pw, CLOVIS_OC_WRITE, 1, 0x4d,
				     &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r0, CLOVIS_IC_PUT, "p", "2", &ops[1]),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_op(&o, CLOVIS_OC_WRITE, &w.ev, &w.bv,
					    CLOVIS_OF_HERE, &ops[2]), 0);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[i]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	before = op_here_runs;
	CU_ASSERT_EQUAL(clovis_op_launch(&cop, 1), 0);
	CU_ASSERT_EQUAL(op_here_runs - before, 0);
	CU_ASSERT_EQUAL(clovis_op_wait(cop, CLOVIS_OS_STABLE, WAIT_NS), 0);
	clovis_op_free(cop);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(clovis_op_state(ops[i]), CLOVIS_OS_STABLE);
		clovis_op_free(ops[i]);
	}
	CU_ASSERT_EQUAL(blk_read(&po, 1), 0x4d);
	CU_ASSERT_EQUAL(get(&ix, "p", v, sizeof v), 0);
	free(w.buf);
	free(pw.buf);
}

static int pobj_make(struct clovis_obj *o)
{
	struct clovis_op *op;
	int rc = pobj_init(o, newid());

	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_CREATE, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* Does object id exist?  1, 0, or a negative rc. */
static int obj_exists(struct clovis_id id)
{
	struct clovis_obj o;
	struct clovis_op *op;
	int rc = clovis_obj_init(&o, clovis_default_realm(cl), &id, NULL);

	if (rc == 0)
		rc = clovis_entity_op(&o.ob_entity, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
}

/* Up to 6 ops in one dtx, committed: the commit op's rc (unit_msg set on
 * failure); every op freed. */
static int dtx_run(struct clovis_op **ops, int n)
{
	struct clovis_dtx *dx;
	struct clovis_op *cop;
	int rc = clovis_dtx_open(&dx, clovis_default_realm(cl));

	for (int i = 0; rc == 0 && i < n; i++)
		rc = clovis_dtx_add(dx, ops[i]);
	if (rc == 0)
		rc = clovis_dtx_commit(dx, &cop);
	if (rc != 0) {
		clovis_dtx_abort(dx);
	} else {
		rc = clovis_op_launch(&cop, 1);
		if (rc == 0)
			rc = clovis_op_wait(cop, CLOVIS_OS_STABLE, WAIT_NS);
		if (rc == 0)
			rc = clovis_op_rc(cop);
		if (rc != 0)
			snprintf(unit_msg, sizeof unit_msg, "%s",
				 clovis_op_errmsg(cop));
		clovis_op_free(cop);
	}
	for (int i = 0; i < n; i++) {
		if (rc == 0)
			CU_ASSERT_EQUAL(clovis_op_state(ops[i]),
					CLOVIS_OS_STABLE);
		clovis_op_free(ops[i]);
	}
	return rc;
}

/* Object CREATE and DELETE as members, with a pdclust write and an index
 * PUT: all or nothing; a created object is invisible until the commit, a
 * deleted one stays until then. */
static void test_entity_members(void)
{
	struct clovis_obj po, nw, nw2, del, del2, gone, o3;
	struct clovis_idx ix;
	struct clovis_id nid = newid(), nid2 = newid(), nid3 = newid();
	struct clovis_op *ops[6];
	struct blk w = {0}, w2 = {0};
	struct rec r;
	struct clovis_dtx *dx;
	char v[32];

	CU_ASSERT_EQUAL_FATAL(pobj_make(&po), 0);
	CU_ASSERT_EQUAL_FATAL(pobj_make(&del), 0);
	CU_ASSERT_EQUAL_FATAL(obj_make(&del2), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&del, &w, CLOVIS_OC_WRITE, 0, 0x31, &ops[0]),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_op_sync(ops[0]), 0);

	/* Mixed: pdclust write + PUT + CREATE (pdclust) + DELETE (pdclust). */
	CU_ASSERT_EQUAL_FATAL(pobj_init(&nw, nid), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&po, &w, CLOVIS_OC_WRITE, 2, 0x5a, &ops[0]),
			      0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r, CLOVIS_IC_PUT, "m", "1", &ops[1]),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&nw.ob_entity, CLOVIS_EO_CREATE,
					       &ops[2]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&del.ob_entity, CLOVIS_EO_DELETE,
					       &ops[3]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[i]), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(&ops[2], 1), 0); /* CREATE early */
	CU_ASSERT_EQUAL(clovis_op_wait(ops[2], CLOVIS_OS_EXECUTED, 100000000ll),
			-ETIMEDOUT);
	CU_ASSERT_EQUAL(obj_exists(nid), 0);     /* not before the commit */
	CU_ASSERT_EQUAL(blk_read(&del, 0), 0x31); /* still there */
	{
		struct clovis_op *cop;

		CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
		CU_ASSERT_EQUAL(clovis_op_launch(&cop, 1), 0);
		CU_ASSERT_EQUAL(clovis_op_wait(cop, CLOVIS_OS_STABLE, WAIT_NS),
				0);
		if (clovis_op_rc(cop) != 0)
			fprintf(stderr, "dtm entity_members: %s\n",
				clovis_op_errmsg(cop));
		clovis_op_free(cop);
	}
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(clovis_op_state(ops[i]), CLOVIS_OS_STABLE);
		clovis_op_free(ops[i]);
	}
	CU_ASSERT_EQUAL(blk_read(&po, 2), 0x5a);
	CU_ASSERT_EQUAL(get(&ix, "m", v, sizeof v), 0);
	CU_ASSERT_EQUAL(obj_exists(nid), 1);
	CU_ASSERT_EQUAL(obj_exists(del.ob_entity.en_id), 0);
	/* The created object's handle is usable: attributes read back. */
	CU_ASSERT_EQUAL(nw.ob_attr.oa_layout, CLOVIS_LAYOUT_PDCLUST);
	CU_ASSERT(nw.ob_attr.oa_ctime_ns != 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&nw, &w2, CLOVIS_OC_WRITE, 1, 0x6b,
				     &ops[0]), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(ops[0]), 0);
	CU_ASSERT_EQUAL(blk_read(&nw, 1), 0x6b);

	/* A member fails (PUT on a deleted index): the CREATE and the DELETE
	 * are not applied either. */
	CU_ASSERT_EQUAL_FATAL(pobj_init(&nw2, nid2), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&nw2.ob_entity, CLOVIS_EO_CREATE,
					       &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&del2.ob_entity, CLOVIS_EO_DELETE,
					       &ops[1]), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&po, &w, CLOVIS_OC_WRITE, 2, 0x77, &ops[2]),
			      0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r, CLOVIS_IC_PUT, "m", "2", &ops[3]),
			      0);
	{
		struct clovis_idx ix2 = ix;

		CU_ASSERT_EQUAL(ent_delete(&ix2.in_entity), 0);
	}
	CU_ASSERT_EQUAL(dtx_run(ops, 4), -ENOENT);
	CU_ASSERT_EQUAL(obj_exists(nid2), 0);
	CU_ASSERT_EQUAL(obj_exists(del2.ob_entity.en_id), 1);
	CU_ASSERT_EQUAL(blk_read(&po, 2), 0x5a);

	/* Aborted before the commit: nothing. */
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&nw2.ob_entity, CLOVIS_EO_CREATE,
					       &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[0]), 0);
	clovis_dtx_abort(dx);
	clovis_op_free(ops[0]);
	CU_ASSERT_EQUAL(obj_exists(nid2), 0);

	/* Ops in a dtx on an entity the same dtx deletes: embedded, the
	 * update applied after the DELETE fails (-ENOENT); cluster, the home
	 * refuses the pair at the PREPARE (-EINVAL).  Nothing applied. */
	CU_ASSERT_EQUAL_FATAL(obj_make(&o3), 0);
	gone = o3;
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&gone.ob_entity, CLOVIS_EO_DELETE,
					       &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&o3, &w2, CLOVIS_OC_WRITE, 0, 0x12,
				     &ops[1]), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&po, &w, CLOVIS_OC_WRITE, 2, 0x13, &ops[2]),
			      0);
	CU_ASSERT_EQUAL(dtx_run(ops, 3), ut_cluster_mode() ? -EINVAL : -ENOENT);
	CU_ASSERT_EQUAL(obj_exists(o3.ob_entity.en_id), 1);
	CU_ASSERT_EQUAL(blk_read(&o3, 0), 0);
	CU_ASSERT_EQUAL(blk_read(&po, 2), 0x5a);
	(void)nid3;

	/* Ops in a dtx on a deleted entity (deleted before the commit): the
	 * pdclust write fails cleanly, the other member is not applied. */
	{
		struct clovis_obj po2 = po;

		CU_ASSERT_EQUAL_FATAL(blk_op(&po, &w, CLOVIS_OC_WRITE, 4, 0x44,
					     &ops[0]), 0);
		CU_ASSERT_EQUAL_FATAL(blk_op(&o3, &w2, CLOVIS_OC_WRITE, 0, 0x45,
					     &ops[1]), 0);
		CU_ASSERT_EQUAL(ent_delete(&po2.ob_entity), 0);
		CU_ASSERT_EQUAL(dtx_run(ops, 2), -ENOENT);
		CU_ASSERT_PTR_NOT_NULL(strstr(unit_msg, "dtx"));
		CU_ASSERT_EQUAL(blk_read(&o3, 0), 0);
		CU_ASSERT_EQUAL(obj_exists(po.ob_entity.en_id), 0);
	}
	free(w.buf);
	free(w2.buf);
}

/* clovis_dtx_settle(): NULL refused; embedded mode returns 0 at once, also
 * right after dtxs committed (cluster mode: once they are decided). */
static void test_settle(void)
{
	struct clovis_idx ix;
	struct clovis_dtx *dx;
	struct clovis_op *op, *cop;
	struct rec r1;
	struct timespec t0, t1;

	CU_ASSERT_EQUAL(clovis_dtx_settle(NULL, 0, 0), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "settle"));
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r1, CLOVIS_IC_PUT, "s", "1", &op), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, op), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(&cop, 1), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(cop, CLOVIS_OS_STABLE, WAIT_NS), 0);
	clovis_op_free(op);
	clovis_op_free(cop);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CU_ASSERT_EQUAL(clovis_dtx_settle(cl, 0, 10000), 0);
	CU_ASSERT_EQUAL(clovis_dtx_settle(cl, UINT64_MAX, 10000), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!ut_cluster_mode()) /* at once: no server asked, no pause */
		CU_ASSERT_TRUE((t1.tv_sec - t0.tv_sec) * 1000 +
			       (t1.tv_nsec - t0.tv_nsec) / 1000000 < 50);
}

/* ------------------------------------------------------ index members */

static int idx_exists(struct clovis_id id)
{
	struct clovis_idx ix;
	struct clovis_op *op;
	int rc = clovis_idx_init(&ix, clovis_default_realm(cl), &id);

	if (rc == 0)
		rc = clovis_entity_op(&ix.in_entity, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
}

/* Index CREATE and DELETE as members (cluster: every live replica of the
 * index is a participant and applies them at the COMMIT). */
static void test_index_members(void)
{
	struct clovis_idx nx, dx1, px, dead, nx2, dx2;
	struct clovis_id nid = newid(), nid2 = newid(), nid3 = newid();
	struct clovis_op *ops[4];
	struct clovis_dtx *dx;
	struct rec r0, r1, r2, r3;
	char v[32];

	CU_ASSERT_EQUAL_FATAL(idx_make(&dx1), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(&px), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&dx1, &r0, CLOVIS_IC_PUT, "d", "1", &ops[0]),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_op_sync(ops[0]), 0);

	/* CREATE nx + DELETE dx1 + PUT in px: invisible until the commit,
	 * then all of it. */
	CU_ASSERT_EQUAL_FATAL(clovis_idx_init(&nx, clovis_default_realm(cl),
					      &nid), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&nx.in_entity, CLOVIS_EO_CREATE,
					       &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&dx1.in_entity, CLOVIS_EO_DELETE,
					       &ops[1]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&px, &r1, CLOVIS_IC_PUT, "p", "1", &ops[2]),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[i]), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(ops, 2), 0);
	CU_ASSERT_EQUAL(clovis_op_wait(ops[0], CLOVIS_OS_EXECUTED, 100000000ll),
			-ETIMEDOUT);
	CU_ASSERT_EQUAL(idx_exists(nid), 0);          /* not before */
	CU_ASSERT_EQUAL(get(&dx1, "d", v, sizeof v), 0); /* still there */
	{
		struct clovis_op *cop;

		CU_ASSERT_EQUAL_FATAL(clovis_dtx_commit(dx, &cop), 0);
		CU_ASSERT_EQUAL(clovis_op_launch(&cop, 1), 0);
		CU_ASSERT_EQUAL(clovis_op_wait(cop, CLOVIS_OS_STABLE, WAIT_NS),
				0);
		if (clovis_op_rc(cop) != 0)
			fprintf(stderr, "dtm index_members: %s\n",
				clovis_op_errmsg(cop));
		clovis_op_free(cop);
	}
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(clovis_op_state(ops[i]), CLOVIS_OS_STABLE);
		clovis_op_free(ops[i]);
	}
	CU_ASSERT_EQUAL(idx_exists(nid), 1);
	CU_ASSERT_EQUAL(idx_exists(dx1.in_entity.en_id), 0);
	CU_ASSERT_EQUAL(get(&px, "p", v, sizeof v), 0);
	/* the created index's handle is usable at once */
	CU_ASSERT_EQUAL_FATAL(rec_op(&nx, &r1, CLOVIS_IC_PUT, "n", "1", &ops[0]),
			      0);
	CU_ASSERT_EQUAL(clovis_op_sync(ops[0]), 0);
	CU_ASSERT_EQUAL(get(&nx, "n", v, sizeof v), 0);
	CU_ASSERT_STRING_EQUAL(v, "1");

	/* A member fails (PUT on an index deleted meanwhile): the CREATE and
	 * the DELETE are not applied. */
	CU_ASSERT_EQUAL_FATAL(idx_make(&dx2), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&dx2, &r0, CLOVIS_IC_PUT, "d", "2", &ops[0]),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_op_sync(ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(&dead), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_idx_init(&nx2, clovis_default_realm(cl),
					      &nid2), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&nx2.in_entity, CLOVIS_EO_CREATE,
					       &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&dx2.in_entity, CLOVIS_EO_DELETE,
					       &ops[1]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&dead, &r2, CLOVIS_IC_PUT, "x", "1",
				     &ops[2]), 0);
	{
		struct clovis_idx d2 = dead;

		CU_ASSERT_EQUAL(ent_delete(&d2.in_entity), 0);
	}
	CU_ASSERT_EQUAL(dtx_run(ops, 3), -ENOENT);
	CU_ASSERT_EQUAL(idx_exists(nid2), 0);
	CU_ASSERT_EQUAL(get(&dx2, "d", v, sizeof v), 0);

	/* A PUT on an index the same dtx creates (a handle of the id's
	 * previous incarnation): -ENOENT (checked against the store as it
	 * was); nothing applied. */
	CU_ASSERT_EQUAL_FATAL(idx_make(&nx2), 0);
	nid3 = nx2.in_entity.en_id;
	{
		struct clovis_idx old = nx2;

		CU_ASSERT_EQUAL(ent_delete(&old.in_entity), 0);
	}
	CU_ASSERT_EQUAL_FATAL(clovis_idx_init(&nx, clovis_default_realm(cl),
					      &nid3), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&nx.in_entity, CLOVIS_EO_CREATE,
					       &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&nx2, &r2, CLOVIS_IC_PUT, "y", "1",
				     &ops[1]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&px, &r3, CLOVIS_IC_PUT, "q", "1", &ops[2]),
			      0);
	CU_ASSERT_EQUAL(dtx_run(ops, 3), -ENOENT);
	CU_ASSERT_EQUAL(idx_exists(nid3), 0);
	CU_ASSERT_EQUAL(get(&px, "q", v, sizeof v), -ENOENT);

	/* A PUT on an index the same dtx deletes: embedded, the PUT applied
	 * after the DELETE fails (-ENOENT); cluster, the replica refuses the
	 * pair at the PREPARE (-EINVAL).  Nothing applied. */
	{
		struct clovis_idx gone = dx2;

		CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&gone.in_entity,
						       CLOVIS_EO_DELETE,
						       &ops[0]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(rec_op(&dx2, &r2, CLOVIS_IC_PUT, "z", "1",
				     &ops[1]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&px, &r3, CLOVIS_IC_PUT, "q", "2", &ops[2]),
			      0);
	CU_ASSERT_EQUAL(dtx_run(ops, 3), ut_cluster_mode() ? -EINVAL : -ENOENT);
	CU_ASSERT_EQUAL(idx_exists(dx2.in_entity.en_id), 1);
	CU_ASSERT_EQUAL(get(&dx2, "d", v, sizeof v), 0);
	CU_ASSERT_EQUAL(get(&dx2, "z", v, sizeof v), -ENOENT);
	CU_ASSERT_EQUAL(get(&px, "q", v, sizeof v), -ENOENT);

	/* Aborted before the commit: nothing. */
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&dx2.in_entity, CLOVIS_EO_DELETE,
					       &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx, clovis_default_realm(cl)), 0);
	CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[0]), 0);
	CU_ASSERT_EQUAL(clovis_op_launch(ops, 1), 0);
	clovis_dtx_abort(dx);
	CU_ASSERT_EQUAL(clovis_op_wait(ops[0], CLOVIS_OS_STABLE, WAIT_NS),
			-ECANCELED);
	clovis_op_free(ops[0]);
	CU_ASSERT_EQUAL(idx_exists(dx2.in_entity.en_id), 1);
}

/* ------------------------------------------------------ composites */

/* Composite object co: layers plain (10) and pdclust 2+1 (20, the top
 * one: writes take its parity-group locks), embedded or through a cluster
 * client (its home adds them); a store that refuses layers (-ENOTSUP)
 * leaves co with none. */
static int cobj_make(struct clovis_obj *co, bool *layered)
{
	struct clovis_obj_attr a = {.oa_block_shift = 12,
				    .oa_layout = CLOVIS_LAYOUT_COMPOSITE};
	struct clovis_obj_attr lp = {.oa_layout = CLOVIS_LAYOUT_PLAIN};
	struct clovis_obj_attr ld = {.oa_layout = CLOVIS_LAYOUT_PDCLUST,
				     .oa_data_units = 2, .oa_parity_units = 1,
				     .oa_unit_shift = 12};
	struct clovis_id id = newid();
	struct clovis_op *op;
	uint32_t l1, l2;
	int rc = clovis_obj_init(co, clovis_default_realm(cl), &id, &a);

	if (rc == 0)
		rc = clovis_entity_op(&co->ob_entity, CLOVIS_EO_CREATE, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		return rc;
	rc = clovis_obj_layer_add(co, &lp, 10, &l1);
	if (rc == 0)
		rc = clovis_obj_layer_add(co, &ld, 20, &l2);
	*layered = rc == 0;
	return rc == -ENOTSUP && ut_cluster_mode() ? 0 : rc;
}

static void *comp_worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	char key[16];

	snprintf(key, sizeof key, "ct%d", t);
	for (int n = 0; n < 10; n++)
		if ((t & 1 ? unit_dtx(&uo2, 40, &uo1, 40, 0x60 + n, &uix, key)
			   : unit_dtx(&uo1, 40, &uo2, 40, 0x60 + n, &uix,
				      key)) != 0)
			__atomic_add_fetch(&unit_fail, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Composite object writes as members: they commit and abort atomically
 * with an index PUT and a pdclust write (the top layer's groups join the
 * dtx's one lock set: comp_resolve). */
static void test_composite_members(void)
{
	struct clovis_obj co, po;
	struct clovis_idx ix, dead;
	struct clovis_op *ops[4];
	struct blk w[3];
	struct rec r;
	bool layered = false;
	char v[32];

	memset(w, 0, sizeof w);
	CU_ASSERT_EQUAL_FATAL(cobj_make(&co, &layered), 0);
	CU_ASSERT_EQUAL_FATAL(pobj_make(&po), 0);
	CU_ASSERT_EQUAL_FATAL(idx_make(&ix), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&co, &w[0], CLOVIS_OC_WRITE, 0, 0x21,
				     &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&co, &w[1], CLOVIS_OC_WRITE, 8, 0x22,
				     &ops[1]), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&po, &w[2], CLOVIS_OC_WRITE, 0, 0x23,
				     &ops[2]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r, CLOVIS_IC_PUT, "c", "1", &ops[3]),
			      0);
	if (!layered) {
		/* cluster: a composite with no layer; its write member fails
		 * at the PREPARE as the write alone would (-EINVAL), and
		 * nothing of the dtx is applied */
		CU_ASSERT_EQUAL(dtx_run(ops, 4), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(unit_msg, "no layer"));
		CU_ASSERT_EQUAL(get(&ix, "c", v, sizeof v), -ENOENT);
		CU_ASSERT_EQUAL(blk_read(&po, 0), 0);
		goto out;
	}
	CU_ASSERT_EQUAL(dtx_run(ops, 4), 0);
	CU_ASSERT_EQUAL(blk_read(&co, 0), 0x21);
	CU_ASSERT_EQUAL(blk_read(&co, 8), 0x22);
	CU_ASSERT_EQUAL(blk_read(&po, 0), 0x23);
	CU_ASSERT_EQUAL(get(&ix, "c", v, sizeof v), 0);

	/* A failing member (PUT on an index deleted meanwhile): neither
	 * composite write is applied. */
	CU_ASSERT_EQUAL_FATAL(idx_make(&dead), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&co, &w[0], CLOVIS_OC_WRITE, 0, 0x31,
				     &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&co, &w[1], CLOVIS_OC_WRITE, 8, 0x32,
				     &ops[1]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&dead, &r, CLOVIS_IC_PUT, "c", "2",
				     &ops[2]), 0);
	{
		struct clovis_idx d2 = dead;

		CU_ASSERT_EQUAL(ent_delete(&d2.in_entity), 0);
	}
	CU_ASSERT_EQUAL(dtx_run(ops, 3), -ENOENT);
	CU_ASSERT_EQUAL(blk_read(&co, 0), 0x21);
	CU_ASSERT_EQUAL(blk_read(&co, 8), 0x22);

	/* Two members over one parity group of the top layer: refused,
	 * nothing applied. */
	CU_ASSERT_EQUAL_FATAL(blk_op(&co, &w[0], CLOVIS_OC_WRITE, 0, 0x41,
				     &ops[0]), 0);
	CU_ASSERT_EQUAL_FATAL(blk_op(&co, &w[1], CLOVIS_OC_WRITE, 1, 0x42,
				     &ops[1]), 0);
	CU_ASSERT_EQUAL_FATAL(rec_op(&ix, &r, CLOVIS_IC_PUT, "c", "3", &ops[2]),
			      0);
	CU_ASSERT_EQUAL(dtx_run(ops, 3), -EINVAL);
	CU_ASSERT_EQUAL(blk_read(&co, 0), 0x21);
	CU_ASSERT_EQUAL(get(&ix, "c", v, sizeof v), 0);
	CU_ASSERT_STRING_EQUAL(v, "1");

	/* Aborted after launch: nothing. */
	CU_ASSERT_EQUAL_FATAL(blk_op(&co, &w[0], CLOVIS_OC_WRITE, 0, 0x51,
				     &ops[0]), 0);
	{
		struct clovis_dtx *dx;

		CU_ASSERT_EQUAL_FATAL(clovis_dtx_open(&dx,
					clovis_default_realm(cl)), 0);
		CU_ASSERT_EQUAL(clovis_dtx_add(dx, ops[0]), 0);
		CU_ASSERT_EQUAL(clovis_op_launch(ops, 1), 0);
		clovis_dtx_abort(dx);
		CU_ASSERT_EQUAL(clovis_op_wait(ops[0], CLOVIS_OS_STABLE,
					       WAIT_NS), -ECANCELED);
		clovis_op_free(ops[0]);
	}
	CU_ASSERT_EQUAL(blk_read(&co, 0), 0x21);

	/* No deadlock: 4 threads x 10 dtxs over the same groups of the
	 * composite's top layer and of a pdclust object, in both orders. */
	uo1 = co;
	uo2 = po;
	uix = ix;
	unit_fail = 0;
	{
		pthread_t th[4];

		for (int t = 0; t < 4; t++)
			CU_ASSERT_EQUAL_FATAL(pthread_create(&th[t], NULL,
					      comp_worker, (void *)(intptr_t)t),
					      0);
		for (int t = 0; t < 4; t++)
			pthread_join(th[t], NULL);
	}
	CU_ASSERT_EQUAL(unit_fail, 0);
	CU_ASSERT(blk_read(&co, 40) == blk_read(&po, 40));
out:
	for (int i = 0; i < 3; i++)
		free(w[i].buf);
}

int dtm_core_ut_add(void);

int dtm_ut_add(void)
{
	CU_pSuite s = CU_add_suite("dtm", suite_init, suite_fini);

	if (dtm_core_ut_add() != 0 || s == NULL ||
	    !CU_add_test(s, "commit_obj_idx", test_commit_obj_idx) ||
	    !CU_add_test(s, "abort", test_abort) ||
	    !CU_add_test(s, "put_exists", test_put_exists) ||
	    !CU_add_test(s, "run_here", test_run_here) ||
	    !CU_add_test(s, "run_here_write", test_run_here_write) ||
	    !CU_add_test(s, "empty_and_reads", test_empty_and_reads) ||
	    !CU_add_test(s, "deleted_entity", test_deleted_entity) ||
	    !CU_add_test(s, "larger_than_batch", test_larger_than_batch) ||
	    !CU_add_test(s, "multi_mib", test_multi_mib) ||
	    !CU_add_test(s, "bad_bulk", test_bad_bulk) ||
	    !CU_add_test(s, "fault_apply", test_fault_apply) ||
	    !CU_add_test(s, "bad_args", test_bad_args) ||
	    !CU_add_test(s, "settle", test_settle) ||
	    !CU_add_test(s, "unit_layouts", test_unit_layouts) ||
	    !CU_add_test(s, "entity_members", test_entity_members) ||
	    !CU_add_test(s, "index_members", test_index_members) ||
	    !CU_add_test(s, "composite_members", test_composite_members))
		return -1;
	return 0;
}
