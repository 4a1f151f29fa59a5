/*
 * fdmi_ut.c — suite "fdmi" (issue 31): the engine's record of every change
 * and its consumers, through clovis_fdmi_* over embedded stores.  Every
 * record kind with its fields; no record without a consumer unless FDMI is
 * on; filters (op, key prefix, id prefix, container, tier) and the ack of
 * what they skip; at-least-once delivery over a restart; a consumer past
 * its bound marked LAGGING while writes go on, then reset; bad input
 * changing nothing; a process killed between a change and its record
 * (fault point fdmi.emit.crash) leaving both or neither, for every kind it
 * can drive; consumers and cursors over a restart, and unsub trimming.
 * Each test makes its own embedded store (a cluster's consumers are
 * tested by tests/integ/fdmi_cluster_test.sh).
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "core/fault.h"
#include "tests/ut.h"

#define FDEV_SIZE (32ull << 20)
#define FBS 4096u
/* Most records one drain keeps (tests make fewer). */
#define FREC_MAX 2048u
#define FSUB_MAX 8u

static char fbase[512];
static char fdir[600];
static unsigned fstore_nr;

/* ------------------------------------------------------------ helpers */

static uint64_t now_ns(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A fresh store directory for the next sopen(). */
static void store_new(void)
{
	snprintf(fdir, sizeof fdir, "%s/s%u", fbase, ++fstore_nr);
}

/* Open (creating) the current store with cc_flags extra. */
static struct clovis *sopen(uint32_t extra)
{
	struct clovis_conf c = {.cc_data_dir = fdir,
				.cc_flags = CLOVIS_CONF_CREATE | extra,
				.cc_dev_size = FDEV_SIZE,
				.cc_nvram_dir = fbase,
				.cc_nr_workers = 2};
	struct clovis *cl = NULL;

	if (clovis_init(&cl, &c) != 0)
		fprintf(stderr, "fdmi: clovis_init: %s\n", clovis_errmsg());
	return cl;
}

static void store_done(struct clovis *cl)
{
	clovis_fini(cl);
	clovis_store_destroy(fdir);
}

static bool skip(const char *test)
{
	return ut_cluster_skip(test, "stores of its own (data directories "
			       "made and reopened), in-process fault points");
}

static int ent_sync(struct clovis_entity *e, int opc)
{
	struct clovis_op *op;
	int rc = clovis_entity_op(e, opc, &op);

	return rc != 0 ? rc : clovis_op_sync(op);
}

static struct clovis_obj_attr plain_attr(uint32_t tier)
{
	return (struct clovis_obj_attr){.oa_block_shift = 12,
					.oa_layout = CLOVIS_LAYOUT_PLAIN,
					.oa_tier = tier};
}

/* Create plain object {hi, lo} on tier in realm r (NULL: default). */
static int obj_new(struct clovis *cl, struct clovis_realm *r,
		   struct clovis_obj *o, uint64_t hi, uint64_t lo,
		   uint32_t tier)
{
	struct clovis_obj_attr a = plain_attr(tier);
	struct clovis_id id = {hi, lo};
	int rc = clovis_obj_init(o, r != NULL ? r : clovis_default_realm(cl),
				 &id, &a);

	return rc != 0 ? rc : ent_sync(&o->ob_entity, CLOVIS_EO_CREATE);
}

/* Open existing object {hi, lo} (attributes in o->ob_attr). */
static int obj_open(struct clovis *cl, struct clovis_realm *r,
		    struct clovis_obj *o, uint64_t hi, uint64_t lo)
{
	struct clovis_id id = {hi, lo};
	int rc = clovis_obj_init(o, r != NULL ? r : clovis_default_realm(cl),
				 &id, NULL);

	return rc != 0 ? rc : ent_sync(&o->ob_entity, CLOVIS_EO_OPEN);
}

static int idx_new(struct clovis *cl, struct clovis_realm *r,
		   struct clovis_idx *ix, uint64_t hi, uint64_t lo, int opc)
{
	struct clovis_id id = {hi, lo};
	int rc = clovis_idx_init(ix, r != NULL ? r : clovis_default_realm(cl),
				 &id);

	return rc != 0 ? rc : ent_sync(&ix->in_entity, opc);
}

/* One I/O op over nr extents (start[i], len[i]), every byte c. */
static int obj_io(struct clovis_obj *o, int opc, uint32_t nr,
		  const uint64_t *start, const uint64_t *len, int c)
{
	uint64_t s[8], n[8], tot = 0;
	struct clovis_extvec ev = {nr, s, n};
	struct clovis_op *op;
	void *buf = NULL;
	size_t bl;
	struct clovis_bufvec bv = {1, &buf, &bl};
	int rc;

	for (uint32_t i = 0; i < nr; i++) {
		s[i] = start[i];
		n[i] = len[i];
		tot += len[i];
	}
	bl = tot * FBS;
	if (opc == CLOVIS_OC_WRITE || opc == CLOVIS_OC_READ) {
		buf = malloc(bl);
		if (buf == NULL)
			return -ENOMEM;
		memset(buf, c, bl);
	}
	rc = clovis_obj_op(o, opc, &ev, buf != NULL ? &bv : NULL, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	free(buf);
	return rc;
}

static int obj_io1(struct clovis_obj *o, int opc, uint64_t s, uint64_t n,
		   int c)
{
	return obj_io(o, opc, 1, &s, &n, c);
}

/* First byte of block b (0 for holes), or a negative code. */
static int obj_byte(struct clovis_obj *o, uint64_t b)
{
	uint64_t s = b, n = 1;
	struct clovis_extvec ev = {1, &s, &n};
	uint8_t *buf = malloc(FBS);
	void *bp = buf;
	size_t bl = FBS;
	struct clovis_bufvec bv = {1, &bp, &bl};
	struct clovis_op *op;
	int rc;

	if (buf == NULL)
		return -ENOMEM;
	memset(buf, 0xee, FBS);
	rc = clovis_obj_op(o, CLOVIS_OC_READ, &ev, &bv, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0)
		rc = buf[0];
	free(buf);
	return rc;
}

/* Record op on keys[0..nr) (values "v-KEY"); per-record rcs in rcs. */
struct kv {
	char k[8][32], v[8][32];
	void *kb[8], *vb[8];
	size_t kl[8], vl[8];
	struct clovis_bufvec kv, vv;
	int32_t rcs[8];
};

static int idx_kv_op(struct clovis_idx *ix, int opc, const char *const *keys,
		     uint32_t nr, uint32_t flags, struct kv *r,
		     struct clovis_op **op)
{
	memset(r, 0, sizeof *r);
	for (uint32_t i = 0; i < nr; i++) {
		snprintf(r->k[i], sizeof r->k[i], "%s", keys[i]);
		snprintf(r->v[i], sizeof r->v[i], "v-%s", keys[i]);
		r->kb[i] = r->k[i];
		r->kl[i] = strlen(r->k[i]);
		r->vb[i] = r->v[i];
		r->vl[i] = opc == CLOVIS_IC_GET ? sizeof r->v[i]
						: strlen(r->v[i]);
		r->rcs[i] = 1;
	}
	r->kv = (struct clovis_bufvec){nr, r->kb, r->kl};
	r->vv = (struct clovis_bufvec){nr, r->vb, r->vl};
	return clovis_idx_op(ix, opc, &r->kv, opc == CLOVIS_IC_DEL ? NULL
				 : &r->vv, r->rcs, flags, op);
}

/* Synchronous record op; the op's rc, else the first record's rc. */
static int idx_kv(struct clovis_idx *ix, int opc, const char *const *keys,
		  uint32_t nr, uint32_t flags)
{
	struct kv r;
	struct clovis_op *op;
	int rc = idx_kv_op(ix, opc, keys, nr, flags, &r, &op);

	if (rc == 0)
		rc = clovis_op_sync(op);
	for (uint32_t i = 0; rc == 0 && i < nr; i++)
		rc = r.rcs[i];
	return rc;
}

static int idx_get1(struct clovis_idx *ix, const char *key)
{
	return idx_kv(ix, CLOVIS_IC_GET, &key, 1, 0);
}

/* A record, copied out of its batch. */
struct frec {
	char server[16];
	uint64_t seq, time_ns, size, digest;
	uint32_t op, flags, type, tier, layer, nr_ext, klen;
	struct clovis_dtx_id dtx;
	struct clovis_id id, cont;
	uint64_t ext[8][2];
	char key[64];
};

static void frec_copy(struct frec *o, const struct clovis_fdmi_rec *r)
{
	memset(o, 0, sizeof *o);
	snprintf(o->server, sizeof o->server, "%s", r->fr_server);
	o->seq = r->fr_seq;
	o->time_ns = r->fr_time_ns;
	o->size = r->fr_size;
	o->digest = r->fr_digest;
	o->op = r->fr_op;
	o->flags = r->fr_flags;
	o->type = r->fr_type;
	o->tier = r->fr_tier;
	o->layer = r->fr_layer;
	o->nr_ext = r->fr_nr_ext;
	o->dtx = r->fr_dtx;
	o->id = r->fr_id;
	o->cont = r->fr_container;
	for (uint32_t i = 0; i < r->fr_nr_ext && i < 8; i++)
		clovis_fdmi_rec_ext(r, i, &o->ext[i][0], &o->ext[i][1]);
	o->klen = r->fr_klen;
	if (r->fr_klen > 0)
		memcpy(o->key, r->fr_key, r->fr_klen < sizeof o->key - 1 ?
		       r->fr_klen : sizeof o->key - 1);
}

/*
 * Read every record of consumer name this instance was not given yet,
 * up to max into out (NULL: count only), batches of bmax; ack each batch
 * when ack.  The number of records, or a negative code.
 */
static int drain_n(struct clovis *cl, const char *name, struct frec *out,
		   uint32_t max, bool ack, uint32_t bmax)
{
	uint32_t n = 0;

	for (int round = 0; round < 10000; round++) {
		struct clovis_fdmi_batch *b = NULL;
		uint32_t nr;
		int rc = clovis_fdmi_next(cl, name, bmax, &b);

		if (rc != 0)
			return rc;
		nr = clovis_fdmi_batch_nr(b);
		for (uint32_t i = 0; i < nr; i++) {
			struct clovis_fdmi_rec r;

			rc = clovis_fdmi_batch_rec(b, i, &r);
			if (rc != 0)
				break;
			if (out != NULL && n < max)
				frec_copy(&out[n], &r);
			n++;
		}
		if (rc == 0 && ack)
			rc = clovis_fdmi_ack(cl, name, b);
		clovis_fdmi_batch_free(b);
		if (rc != 0)
			return rc;
		if (nr == 0)
			return (int)n;
	}
	return -ELOOP;
}

static int drain(struct clovis *cl, const char *name, struct frec *out,
		 uint32_t max, bool ack)
{
	return drain_n(cl, name, out, max, ack, 0);
}

/* Consumer name as clovis_fdmi_list() shows it: 0, or -ENOENT. */
static int sub_get(struct clovis *cl, const char *name,
		   struct clovis_fdmi_sub *out)
{
	struct clovis_fdmi_sub v[FSUB_MAX];
	uint32_t n = 0;
	int rc = clovis_fdmi_list(cl, v, FSUB_MAX, &n);

	if (rc != 0)
		return rc;
	for (uint32_t i = 0; i < n && i < FSUB_MAX; i++)
		if (strcmp(v[i].fs_name, name) == 0) {
			*out = v[i];
			return 0;
		}
	return -ENOENT;
}

static bool id_eq(struct clovis_id a, uint64_t hi, uint64_t lo)
{
	return a.ci_hi == hi && a.ci_lo == lo;
}

static bool ext_is(const struct frec *r, uint32_t i, uint64_t s, uint64_t n)
{
	return i < r->nr_ext && r->ext[i][0] == s && r->ext[i][1] == n;
}

static bool key_is(const struct frec *r, const char *k)
{
	return r->klen == strlen(k) && memcmp(r->key, k, r->klen) == 0;
}

/* Print the ops of recs (for a failing comparison). */
static void recs_dump(const char *what, const struct frec *v, uint32_t n)
{
	fprintf(stderr, "\n  %s: %u records:", what, n);
	for (uint32_t i = 0; i < n; i++)
		fprintf(stderr, " %" PRIu64 ":%s", v[i].seq,
			clovis_fdmi_op_name(v[i].op));
	fprintf(stderr, "\n");
}

/* ---------------------------------------------------------- every kind */

#define CONT_HI 0xc0u
#define EK_HI 0xe0u

/* The entities and facts of test_every_kind, between its steps. */
struct ek {
	struct clovis *ek_cl;
	struct clovis_container ek_c;
	struct clovis_obj ek_o, ek_p;
	struct clovis_idx ek_ix, ek_gone, ek_iy;
	uint32_t ek_hot, ek_cold;
	struct clovis_dtx_id ek_did;
};

/* Records read back, and the next one to check. */
struct rcur {
	const struct frec *rc_v;
	uint32_t rc_n, rc_at;
};

/* The next record if it has op (and step past it), else NULL. */
static const struct frec *rnext(struct rcur *c, uint32_t op)
{
	if (c->rc_at >= c->rc_n || c->rc_v[c->rc_at].op != op)
		return NULL;
	return &c->rc_v[c->rc_at++];
}

/* Container {CONT_HI, 1}; plain object EK_HI:1 in it: a write of two
 * extents in one op, an alloc, a free, a setattr. */
static void ek_plain(struct ek *k)
{
	struct clovis_id cid = {CONT_HI, 1};
	uint64_t ws[2] = {0, 10}, wn[2] = {2, 3};

	CU_ASSERT_EQUAL_FATAL(clovis_container_init(&k->ek_c, k->ek_cl, &cid),
			      0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&k->ek_c.co_entity, CLOVIS_EO_CREATE),
			      0);
	CU_ASSERT_EQUAL_FATAL(obj_new(k->ek_cl, &k->ek_c.co_realm, &k->ek_o,
				      EK_HI, 1, CLOVIS_TIER_FLASH), 0);
	CU_ASSERT_EQUAL(obj_io(&k->ek_o, CLOVIS_OC_WRITE, 2, ws, wn, 0x11), 0);
	CU_ASSERT_EQUAL(obj_io1(&k->ek_o, CLOVIS_OC_ALLOC, 20, 2, 0), 0);
	CU_ASSERT_EQUAL(obj_io1(&k->ek_o, CLOVIS_OC_FREE, 0, 1, 0), 0);
	k->ek_o.ob_attr.oa_size_bytes = 12345;
	CU_ASSERT_EQUAL(ent_sync(&k->ek_o.ob_entity, CLOVIS_EO_SETATTR), 0);
}

static void ek_plain_check(struct rcur *c)
{
	const struct frec *r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_CONT_CREATE));
	CU_ASSERT(id_eq(r->id, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->type, CLOVIS_ET_CONTAINER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_OBJ_CREATE));
	CU_ASSERT(id_eq(r->id, EK_HI, 1));
	CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->type, CLOVIS_ET_OBJ);
	CU_ASSERT_EQUAL(r->tier, CLOVIS_TIER_FLASH);
	CU_ASSERT_EQUAL(r->dtx.di_hlc, 0);
	CU_ASSERT(r->digest != 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_OBJ_WRITE));
	CU_ASSERT(id_eq(r->id, EK_HI, 1));
	CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->nr_ext, 2);
	CU_ASSERT(ext_is(r, 0, 0, 2) && ext_is(r, 1, 10, 3));
	CU_ASSERT_EQUAL(r->size, 13 * FBS);
	CU_ASSERT_EQUAL(r->tier, CLOVIS_TIER_FLASH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_OBJ_ALLOC));
	CU_ASSERT(id_eq(r->id, EK_HI, 1));
	CU_ASSERT(r->nr_ext == 1 && ext_is(r, 0, 20, 2));
	CU_ASSERT_EQUAL(r->size, 22 * FBS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_OBJ_FREE));
	CU_ASSERT(id_eq(r->id, EK_HI, 1));
	CU_ASSERT(r->nr_ext == 1 && ext_is(r, 0, 0, 1));
	CU_ASSERT_EQUAL(r->size, 22 * FBS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_SETATTR));
	CU_ASSERT(id_eq(r->id, EK_HI, 1));
	CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->size, 12345);
	/* the attributes changed: so did their digest */
	CU_ASSERT(r->digest != 0 && r->digest != r[-1].digest);
}

/* Index EK_HI:2: create, 3 PUTs in one op, a PUT refused (no record), a
 * DEL, delete (ek_gone: a handle to it kept open). */
static void ek_index(struct ek *k)
{
	const char *k3[] = {"k1", "k2", "k3"}, *kdel[] = {"k2"};

	CU_ASSERT_EQUAL_FATAL(idx_new(k->ek_cl, &k->ek_c.co_realm, &k->ek_ix,
				      EK_HI, 2, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(idx_kv(&k->ek_ix, CLOVIS_IC_PUT, k3, 3, 0), 0);
	CU_ASSERT_EQUAL(idx_kv(&k->ek_ix, CLOVIS_IC_PUT, kdel, 1, 0), -EEXIST);
	CU_ASSERT_EQUAL(idx_kv(&k->ek_ix, CLOVIS_IC_DEL, kdel, 1, 0), 0);
	CU_ASSERT_EQUAL(idx_new(k->ek_cl, &k->ek_c.co_realm, &k->ek_gone,
				EK_HI, 2, CLOVIS_EO_OPEN), 0);
	CU_ASSERT_EQUAL(ent_sync(&k->ek_ix.in_entity, CLOVIS_EO_DELETE), 0);
}

static void ek_index_check(struct rcur *c)
{
	const char *k3[] = {"k1", "k2", "k3"};
	const struct frec *r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_IDX_CREATE));
	CU_ASSERT(id_eq(r->id, EK_HI, 2));
	CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->type, CLOVIS_ET_IDX);
	for (uint32_t i = 0; i < 3; i++) {
		CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_IDX_PUT));
		CU_ASSERT(id_eq(r->id, EK_HI, 2));
		CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
		CU_ASSERT(key_is(r, k3[i]));
		CU_ASSERT_EQUAL(r->size, i + 1);
		CU_ASSERT_EQUAL(r->nr_ext, 0);
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_IDX_DEL));
	CU_ASSERT(id_eq(r->id, EK_HI, 2));
	CU_ASSERT(key_is(r, "k2"));
	CU_ASSERT_EQUAL(r->size, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_IDX_DELETE));
	CU_ASSERT(id_eq(r->id, EK_HI, 2));
	CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
}

/* Composite EK_HI:3: layers hot (flash) and cold (sas), a write of 4
 * blocks (to hot), a move of them to cold, hot dropped, a write of 1
 * block to the top layer (cold now). */
static void ek_composite(struct ek *k)
{
	struct clovis_obj_attr ca = {.oa_block_shift = 12,
				     .oa_layout = CLOVIS_LAYOUT_COMPOSITE};
	struct clovis_obj_attr lh = plain_attr(CLOVIS_TIER_FLASH);
	struct clovis_obj_attr lc = plain_attr(CLOVIS_TIER_SAS);
	struct clovis_id pid = {EK_HI, 3};
	uint64_t moved = 0;

	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&k->ek_p, &k->ek_c.co_realm,
					      &pid, &ca), 0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&k->ek_p.ob_entity, CLOVIS_EO_CREATE),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_layer_add(&k->ek_p, &lh, 30,
						   &k->ek_hot), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_layer_add(&k->ek_p, &lc, 10,
						   &k->ek_cold), 0);
	CU_ASSERT_EQUAL(obj_io1(&k->ek_p, CLOVIS_OC_WRITE, 0, 4, 0x22), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&k->ek_p, 0, 4, k->ek_cold,
					      &moved), 0);
	CU_ASSERT_EQUAL(moved, 4);
	CU_ASSERT_EQUAL(clovis_obj_layer_drop(&k->ek_p, k->ek_hot), 0);
	CU_ASSERT_EQUAL(obj_io1(&k->ek_p, CLOVIS_OC_WRITE, 0, 1, 0x23), 0);
}

/* Every record of the composite names it, its container and the layer
 * (with the layer's tier); size and digest are the composite's. */
static void ek_composite_check(const struct ek *k, struct rcur *c)
{
	const struct frec *r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_OBJ_CREATE));
	CU_ASSERT(id_eq(r->id, EK_HI, 3));
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_LAYER_ADD));
	CU_ASSERT(id_eq(r->id, EK_HI, 3));
	CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->layer, k->ek_hot);
	CU_ASSERT_EQUAL(r->tier, CLOVIS_TIER_FLASH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_LAYER_ADD));
	CU_ASSERT_EQUAL(r->layer, k->ek_cold);
	CU_ASSERT_EQUAL(r->tier, CLOVIS_TIER_SAS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_OBJ_WRITE));
	CU_ASSERT(id_eq(r->id, EK_HI, 3));
	CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->layer, k->ek_hot);
	CU_ASSERT_EQUAL(r->tier, CLOVIS_TIER_FLASH);
	CU_ASSERT(r->nr_ext == 1 && ext_is(r, 0, 0, 4));
	CU_ASSERT_EQUAL(r->size, 4 * FBS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_LAYER_MOVE));
	CU_ASSERT(id_eq(r->id, EK_HI, 3));
	CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->layer, k->ek_cold);
	CU_ASSERT_EQUAL(r->tier, CLOVIS_TIER_SAS);
	CU_ASSERT(r->nr_ext == 1 && ext_is(r, 0, 0, 4));
	CU_ASSERT_EQUAL(r->size, 4 * FBS); /* unchanged by the move */
	if (r->size != 4 * FBS)
		fprintf(stderr, "\n  layer.move: size %" PRIu64 "\n", r->size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_LAYER_DROP));
	CU_ASSERT(id_eq(r->id, EK_HI, 3));
	CU_ASSERT_EQUAL(r->layer, k->ek_hot);
	CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->tier, CLOVIS_TIER_FLASH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_OBJ_WRITE));
	CU_ASSERT(id_eq(r->id, EK_HI, 3));
	CU_ASSERT_EQUAL(r->layer, k->ek_cold);
	CU_ASSERT_EQUAL(r->tier, CLOVIS_TIER_SAS);
	CU_ASSERT(r->nr_ext == 1 && ext_is(r, 0, 0, 1));
	CU_ASSERT_EQUAL(r->size, 4 * FBS); /* the composite's 4, not cold's 1 */
	if (r->size != 4 * FBS)
		fprintf(stderr, "\n  composite write: size %" PRIu64 "\n",
			r->size);
}

/* A dtx over index ix and object ek_o: a PUT of "dk", a WRITE of block
 * 30; id in *id (may be NULL).  The commit's rc. */
static int ek_dtx(struct ek *k, struct clovis_idx *ix,
		  struct clovis_dtx_id *id)
{
	const char *dk = "dk";
	uint64_t s = 30, n = 1;
	struct clovis_extvec ev = {1, &s, &n};
	char buf[FBS];
	void *bp = buf;
	size_t bl = FBS;
	struct clovis_bufvec bv = {1, &bp, &bl};
	struct clovis_op *m[2] = {NULL, NULL}, *cop;
	struct clovis_dtx *dx;
	struct kv kr;
	int rc = clovis_dtx_open(&dx, &k->ek_c.co_realm);

	if (rc != 0)
		return rc;
	memset(buf, 0x33, sizeof buf);
	if (id != NULL)
		rc = clovis_dtx_id(dx, id);
	if (rc == 0)
		rc = idx_kv_op(ix, CLOVIS_IC_PUT, &dk, 1, 0, &kr, &m[0]);
	if (rc == 0)
		rc = clovis_obj_op(&k->ek_o, CLOVIS_OC_WRITE, &ev, &bv, 0,
				   &m[1]);
	if (rc == 0)
		rc = clovis_dtx_add(dx, m[0]);
	if (rc == 0)
		rc = clovis_dtx_add(dx, m[1]);
	if (rc == 0)
		rc = clovis_dtx_commit(dx, &cop);
	if (rc == 0)
		rc = clovis_op_sync(cop);
	else
		clovis_dtx_abort(dx);
	clovis_op_free(m[0]);
	clovis_op_free(m[1]);
	return rc;
}

/* Index EK_HI:4 made, a dtx of two members over it; a dtx that fails (a
 * PUT into the deleted index: no record); everything deleted; a write
 * through a second handle to the deleted object fails (no record). */
static void ek_dtx_deletes(struct ek *k)
{
	struct clovis_obj oo;

	CU_ASSERT_EQUAL_FATAL(idx_new(k->ek_cl, &k->ek_c.co_realm, &k->ek_iy,
				      EK_HI, 4, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(ek_dtx(k, &k->ek_iy, &k->ek_did), 0);
	CU_ASSERT(ek_dtx(k, &k->ek_gone, NULL) < 0);
	CU_ASSERT_EQUAL(obj_open(k->ek_cl, &k->ek_c.co_realm, &oo, EK_HI, 1),
			0);
	CU_ASSERT_EQUAL(ent_sync(&k->ek_o.ob_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(ent_sync(&k->ek_p.ob_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(ent_sync(&k->ek_iy.in_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(ent_sync(&k->ek_c.co_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT_EQUAL(obj_io1(&oo, CLOVIS_OC_WRITE, 0, 1, 0x44), -ENOENT);
}

static bool dtx_is(const struct frec *r, const struct clovis_dtx_id *id)
{
	return r->dtx.di_hlc == id->di_hlc && r->dtx.di_node == id->di_node;
}

static void ek_dtx_deletes_check(const struct ek *k, struct rcur *c)
{
	const struct frec *r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_IDX_CREATE));
	CU_ASSERT(id_eq(r->id, EK_HI, 4));
	CU_ASSERT_EQUAL(r->dtx.di_hlc, 0);
	/* the dtx: its two members carry its id, then one DTX_COMMIT */
	CU_ASSERT(k->ek_did.di_hlc != 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_IDX_PUT));
	CU_ASSERT(id_eq(r->id, EK_HI, 4));
	CU_ASSERT(key_is(r, "dk"));
	CU_ASSERT(dtx_is(r, &k->ek_did));
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_OBJ_WRITE));
	CU_ASSERT(id_eq(r->id, EK_HI, 1));
	CU_ASSERT(r->nr_ext == 1 && ext_is(r, 0, 30, 1));
	CU_ASSERT(dtx_is(r, &k->ek_did));
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_DTX_COMMIT));
	CU_ASSERT(dtx_is(r, &k->ek_did));
	CU_ASSERT_EQUAL(r->size, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_OBJ_DELETE));
	CU_ASSERT(id_eq(r->id, EK_HI, 1));
	CU_ASSERT(id_eq(r->cont, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->dtx.di_hlc, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_OBJ_DELETE));
	CU_ASSERT(id_eq(r->id, EK_HI, 3));
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_IDX_DELETE));
	CU_ASSERT(id_eq(r->id, EK_HI, 4));
	CU_ASSERT_PTR_NOT_NULL_FATAL(r = rnext(c, CLOVIS_FDMI_CONT_DELETE));
	CU_ASSERT(id_eq(r->id, CONT_HI, 1));
	CU_ASSERT_EQUAL(r->type, CLOVIS_ET_CONTAINER);
}

/*
 * Every change the API can make, then every record read back in order
 * with its fields: op, ids, container, type, tier, layer, extents, keys,
 * sizes, the dtx id on a dtx's members and its one DTX_COMMIT, sequence
 * numbers strictly rising, server "local", times within the test; a
 * refused PUT, a failed dtx and a failed write record nothing.
 */
static void test_every_kind(void)
{
	struct frec *v = calloc(FREC_MAX, sizeof *v);
	struct ek k;
	struct rcur c;
	uint64_t t0, t1;
	int n;

	if (skip("fdmi every_kind"))
		goto out;
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	memset(&k, 0, sizeof k);
	store_new();
	k.ek_cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k.ek_cl);
	CU_ASSERT_EQUAL_FATAL(clovis_fdmi_sub(k.ek_cl, "all", NULL, 0, 0, 0), 0);
	t0 = now_ns(CLOCK_REALTIME);
	ek_plain(&k);
	ek_index(&k);
	ek_composite(&k);
	ek_dtx_deletes(&k);
	t1 = now_ns(CLOCK_REALTIME);

	n = drain(k.ek_cl, "all", v, FREC_MAX, true);
	CU_ASSERT_EQUAL(n, 27);
	if (n != 27)
		recs_dump("every_kind", v, n < 0 ? 0 : (uint32_t)n);
	for (int i = 0; i < n; i++) {
		CU_ASSERT_STRING_EQUAL(v[i].server, "local");
		CU_ASSERT(i == 0 || v[i].seq > v[i - 1].seq);
		CU_ASSERT(v[i].time_ns >= t0 && v[i].time_ns <= t1);
		/* TIER exactly on object records (not a composite's own
		 * create or delete) and layer records */
		CU_ASSERT_EQUAL(v[i].flags & ~CLOVIS_FDMI_F_TIER, 0);
		if ((v[i].flags & CLOVIS_FDMI_F_TIER) &&
		    v[i].type != CLOVIS_ET_OBJ)
			CU_FAIL("a record of no object names a tier");
	}
	c = (struct rcur){v, n > 0 ? (uint32_t)n : 0, 0};
	ek_plain_check(&c);
	ek_index_check(&c);
	ek_composite_check(&k, &c);
	ek_dtx_deletes_check(&k, &c);
	CU_ASSERT_EQUAL(c.rc_at, c.rc_n);
	CU_ASSERT_STRING_EQUAL(clovis_fdmi_op_name(CLOVIS_FDMI_LAYER_MOVE),
			       "layer.move");
	CU_ASSERT_STRING_EQUAL(clovis_fdmi_op_name(0), "?");
	CU_ASSERT_EQUAL(drain(k.ek_cl, "all", v, FREC_MAX, true), 0);
	store_done(k.ek_cl);
out:
	free(v);
}

/* --------------------------------------------------------- big records */

/* A write of nr one-block extents at blocks 0, 2, 4, ... */
static int obj_sparse_write(struct clovis_obj *o, uint32_t nr)
{
	uint64_t *s = calloc(nr, sizeof *s), *n = calloc(nr, sizeof *n);
	struct clovis_extvec ev = {nr, s, n};
	void *buf = malloc((size_t)nr * FBS);
	size_t bl = (size_t)nr * FBS;
	struct clovis_bufvec bv = {1, &buf, &bl};
	struct clovis_op *op;
	int rc = -ENOMEM;

	if (s != NULL && n != NULL && buf != NULL) {
		for (uint32_t i = 0; i < nr; i++) {
			s[i] = 2ull * i;
			n[i] = 1;
		}
		memset(buf, 0x42, bl);
		rc = clovis_obj_op(o, CLOVIS_OC_WRITE, &ev, &bv, 0, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
	}
	free(s);
	free(n);
	free(buf);
	return rc;
}

/* Whether r lists extents (2i, 1) for i < nr. */
static bool sparse_exts(const struct clovis_fdmi_rec *r, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t st, bl;

		clovis_fdmi_rec_ext(r, i, &st, &bl);
		if (st != 2ull * i || bl != 1)
			return false;
	}
	return r->fr_nr_ext == nr;
}

/*
 * Records past the emitter's stack buffers: 40 extents (all listed), 300
 * (the first 256, flag TRUNC), a key of CLOVIS_KEY_MAX bytes (intact).
 */
static void test_big_records(void)
{
	struct clovis_fdmi_batch *b = NULL;
	struct clovis_fdmi_rec r;
	struct clovis *cl;
	struct clovis_obj o;
	struct clovis_idx ix;
	char key[CLOVIS_KEY_MAX + 1], val[] = "v";
	void *kb = key, *vb = val;
	size_t kl = CLOVIS_KEY_MAX, vl = 1;
	struct clovis_bufvec kv = {1, &kb, &kl}, vv = {1, &vb, &vl};
	int32_t krc = 1;
	struct clovis_op *op;
	uint64_t st, bl;

	if (skip("fdmi big_records"))
		return;
	store_new();
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "big", "op=obj.write,idx.put", 0, 0,
					0), 0);
	CU_ASSERT_EQUAL_FATAL(obj_new(cl, NULL, &o, 0xb16, 1,
				      CLOVIS_TIER_FLASH), 0);
	CU_ASSERT_EQUAL_FATAL(idx_new(cl, NULL, &ix, 0xb16, 2,
				      CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(obj_sparse_write(&o, 40), 0);
	CU_ASSERT_EQUAL(obj_sparse_write(&o, 300), 0);
	for (uint32_t i = 0; i < CLOVIS_KEY_MAX; i++)
		key[i] = (char)('a' + i % 26);
	key[CLOVIS_KEY_MAX] = '\0';
	CU_ASSERT_EQUAL_FATAL(clovis_idx_op(&ix, CLOVIS_IC_PUT, &kv, &vv, &krc,
					    0, &op), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(op), 0);
	CU_ASSERT_EQUAL(krc, 0);
	CU_ASSERT_EQUAL_FATAL(clovis_fdmi_next(cl, "big", 0, &b), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_fdmi_batch_nr(b), 3);
	CU_ASSERT_EQUAL(clovis_fdmi_batch_rec(b, 0, &r), 0);
	CU_ASSERT_EQUAL(r.fr_flags, CLOVIS_FDMI_F_TIER);
	CU_ASSERT(sparse_exts(&r, 40));
	CU_ASSERT_EQUAL(r.fr_size, 79ull * FBS);
	CU_ASSERT_EQUAL(clovis_fdmi_batch_rec(b, 1, &r), 0);
	CU_ASSERT_EQUAL(r.fr_flags, CLOVIS_FDMI_F_TRUNC | CLOVIS_FDMI_F_TIER);
	CU_ASSERT(sparse_exts(&r, 256));
	CU_ASSERT_EQUAL(r.fr_size, 599ull * FBS);
	/* past the last extent: zeros */
	clovis_fdmi_rec_ext(&r, 256, &st, &bl);
	CU_ASSERT(st == 0 && bl == 0);
	CU_ASSERT_EQUAL(clovis_fdmi_batch_rec(b, 2, &r), 0);
	CU_ASSERT_EQUAL(r.fr_op, CLOVIS_FDMI_IDX_PUT);
	CU_ASSERT_EQUAL(r.fr_klen, CLOVIS_KEY_MAX);
	CU_ASSERT(r.fr_klen == CLOVIS_KEY_MAX &&
		  memcmp(r.fr_key, key, CLOVIS_KEY_MAX) == 0);
	CU_ASSERT_EQUAL(r.fr_nr_ext, 0);
	CU_ASSERT_EQUAL(clovis_fdmi_batch_rec(b, 3, &r), -EINVAL);
	CU_ASSERT_EQUAL(clovis_fdmi_ack(cl, "big", b), 0);
	clovis_fdmi_batch_free(b);
	store_done(cl);
}

/* ---------------------------------------------------------- no consumer */

/* Make a few changes: object {hi, lo} created and written, a PUT. */
static void some_changes(struct clovis *cl, uint64_t hi, uint64_t lo)
{
	struct clovis_obj o;
	struct clovis_idx ix;
	const char *k = "nk";

	CU_ASSERT_EQUAL(obj_new(cl, NULL, &o, hi, lo, CLOVIS_TIER_FLASH), 0);
	CU_ASSERT_EQUAL(obj_io1(&o, CLOVIS_OC_WRITE, 0, 1, 0x5), 0);
	CU_ASSERT_EQUAL(idx_new(cl, NULL, &ix, hi, lo + 1, CLOVIS_EO_CREATE),
			0);
	CU_ASSERT_EQUAL(idx_kv(&ix, CLOVIS_IC_PUT, &k, 1, 0), 0);
}

/*
 * Default mode: changes made while no consumer exists are not in the log
 * (a FROM_START consumer gets none of them, only later ones); with
 * CLOVIS_CONF_FDMI_ON they are, and a consumer without FROM_START still
 * starts after them.
 */
static void test_no_consumer(void)
{
	struct frec *v = calloc(64, sizeof *v);
	struct clovis *cl;

	if (skip("fdmi no_consumer_no_records"))
		goto out;
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	store_new();
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	some_changes(cl, 0xa1, 1);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "late", NULL, 0, 0,
					CLOVIS_FDMI_FROM_START), 0);
	CU_ASSERT_EQUAL(drain(cl, "late", v, 64, false), 0);
	/* over a restart too: nothing was kept */
	clovis_fini(cl);
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(drain(cl, "late", v, 64, false), 0);
	some_changes(cl, 0xa1, 3);
	CU_ASSERT_EQUAL(drain(cl, "late", v, 64, true), 4);
	CU_ASSERT_EQUAL(v[0].op, CLOVIS_FDMI_OBJ_CREATE);
	CU_ASSERT(id_eq(v[0].id, 0xa1, 3));
	/* the last consumer gone: no record again */
	CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, "late"), 0);
	some_changes(cl, 0xa1, 5);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "late2", NULL, 0, 0,
					CLOVIS_FDMI_FROM_START), 0);
	CU_ASSERT(drain(cl, "late2", v, 64, false) <= 1); /* the kept newest */
	CU_ASSERT(v[0].id.ci_lo != 5 && v[0].id.ci_lo != 6);
	store_done(cl);

	/* FDMI on: recorded with no consumer */
	store_new();
	cl = sopen(CLOVIS_CONF_FDMI_ON);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	some_changes(cl, 0xa2, 1);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "now", NULL, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "early", NULL, 0, 0,
					CLOVIS_FDMI_FROM_START), 0);
	CU_ASSERT_EQUAL(drain(cl, "now", v, 64, false), 0);
	CU_ASSERT_EQUAL(drain(cl, "early", v, 64, false), 4);
	CU_ASSERT_EQUAL(v[0].op, CLOVIS_FDMI_OBJ_CREATE);
	CU_ASSERT(id_eq(v[0].id, 0xa2, 1));
	CU_ASSERT_EQUAL(v[1].op, CLOVIS_FDMI_OBJ_WRITE);
	CU_ASSERT_EQUAL(v[2].op, CLOVIS_FDMI_IDX_CREATE);
	CU_ASSERT_EQUAL(v[3].op, CLOVIS_FDMI_IDX_PUT);
	store_done(cl);
out:
	free(v);
}

/* -------------------------------------------------------------- filters */

/* ids of the filter test: the first 16 bits of hi are 0xab00 for o1
 * and the index, 0xab01 for o2, 0 for o3; o1's lo begins 0xff */
#define FL_HI 0xab00000000000000ull
#define FL_O1_LO 0xff00000000000001ull
#define FL_O2_HI 0xab01000000000000ull
#define FL_O3_HI 0xabull
#define FL_P_HI 0x7700000000000000ull

/* The consumers of test_filters, one filter field each (two for
 * "narrow"). */
static void fl_subscribe(struct clovis *cl)
{
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "ops", "op=obj.write,idx.del", 0, 0,
					0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "keys", "key=ab", 0, 0, 0), 0);
	/* id prefixes: 16 bits (of hi), 72 bits (hi and 8 of lo) */
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "ids", "id=ab00000000000000:0/16",
					0, 0, 0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "lo8", "id=ab00000000000000:"
					"ff00000000000000/72", 0, 0, 0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "cont", "container=c0:7", 0, 0, 0),
			0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "sas", "tier=2", 0, 0, 0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "nvram", "tier=0", 0, 0, 0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "narrow", "op=obj.free id=0xab00000"
					"000000000:0xff00000000000001", 0, 0,
					0), 0);
}

/* The changes of test_filters: container *c c0:7; objects o[0] (flash,
 * in c), o[1] (sas, default container), o[2] (sas, in c), written, o[2]
 * freed; an index in c with 4 PUTs and 2 DELs; a composite in c.  *c
 * outlives o (their realm). */
static void fl_changes(struct clovis *cl, struct clovis_container *c,
		       struct clovis_obj *o)
{
	struct clovis_id cid = {CONT_HI, 7}, pid = {FL_P_HI, 1};
	struct clovis_obj_attr ca = {.oa_block_shift = 12,
				     .oa_layout = CLOVIS_LAYOUT_COMPOSITE};
	struct clovis_obj_attr lh = plain_attr(CLOVIS_TIER_FLASH);
	struct clovis_obj_attr lc = plain_attr(CLOVIS_TIER_SAS);
	const char *keys[] = {"ab1", "ab2", "zz", "a"};
	struct clovis_obj p;
	struct clovis_idx ix;
	uint32_t hot, cold;

	CU_ASSERT_EQUAL_FATAL(clovis_container_init(c, cl, &cid), 0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&c->co_entity, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL_FATAL(obj_new(cl, &c->co_realm, &o[0], FL_HI, FL_O1_LO,
				      CLOVIS_TIER_FLASH), 0);
	CU_ASSERT_EQUAL_FATAL(obj_new(cl, NULL, &o[1], FL_O2_HI, 2,
				      CLOVIS_TIER_SAS), 0);
	CU_ASSERT_EQUAL_FATAL(obj_new(cl, &c->co_realm, &o[2], FL_O3_HI, 3,
				      CLOVIS_TIER_SAS), 0);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(obj_io1(&o[i], CLOVIS_OC_WRITE, 0, 1, 1), 0);
	CU_ASSERT_EQUAL(obj_io1(&o[2], CLOVIS_OC_FREE, 0, 1, 1), 0);
	CU_ASSERT_EQUAL(idx_new(cl, &c->co_realm, &ix, FL_HI, 1,
				CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL(idx_kv(&ix, CLOVIS_IC_PUT, keys, 4, 0), 0);
	CU_ASSERT_EQUAL(idx_kv(&ix, CLOVIS_IC_DEL, keys + 1, 2, 0), 0);
	/* composite p in c: create, layers flash and sas, write (flash),
	 * move to sas, drop flash */
	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&p, &c->co_realm, &pid, &ca), 0);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&p.ob_entity, CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_layer_add(&p, &lh, 30, &hot), 0);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_layer_add(&p, &lc, 10, &cold), 0);
	CU_ASSERT_EQUAL(obj_io1(&p, CLOVIS_OC_WRITE, 0, 2, 3), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_move(&p, 0, 2, cold, NULL), 0);
	CU_ASSERT_EQUAL(clovis_obj_layer_drop(&p, hot), 0);
}

/*
 * Filters: op mask, key prefix, id prefixes, container, tier.  Each
 * consumer gets exactly its records; what its filter skipped is released
 * by the ack of the batch (lag 0 after it).
 */
static void test_filters(void)
{
	struct frec *v = calloc(256, sizeof *v);
	struct clovis *cl;
	struct clovis_container c;
	struct clovis_obj o[3];
	struct clovis_fdmi_sub si;
	const char *names[] = {"ops", "keys", "ids", "lo8", "cont", "sas",
			       "narrow", "nvram"};
	int n;

	if (skip("fdmi filters"))
		goto out;
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	store_new();
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	fl_subscribe(cl);
	fl_changes(cl, &c, o);
	/* op mask: 4 writes, 2 dels */
	n = drain(cl, "ops", v, 256, true);
	CU_ASSERT_EQUAL(n, 6);
	for (int i = 0; i < n; i++)
		CU_ASSERT(v[i].op == CLOVIS_FDMI_OBJ_WRITE ||
			  v[i].op == CLOVIS_FDMI_IDX_DEL);
	/* key prefix: put ab1, put ab2, del ab2 (not "a", not "zz") */
	n = drain(cl, "keys", v, 256, true);
	CU_ASSERT_EQUAL(n, 3);
	if (n == 3) {
		CU_ASSERT(v[0].op == CLOVIS_FDMI_IDX_PUT && key_is(&v[0], "ab1"));
		CU_ASSERT(v[1].op == CLOVIS_FDMI_IDX_PUT && key_is(&v[1], "ab2"));
		CU_ASSERT(v[2].op == CLOVIS_FDMI_IDX_DEL && key_is(&v[2], "ab2"));
	}
	/* 16-bit id prefix: o1 (create, write) and the index (7); not o2
	 * (0xab01), not o3 */
	n = drain(cl, "ids", v, 256, true);
	CU_ASSERT_EQUAL(n, 2 + 7);
	for (int i = 0; i < n; i++)
		CU_ASSERT(v[i].id.ci_hi == FL_HI);
	/* 72 bits: o1 only (the index's lo begins 0x00) */
	n = drain(cl, "lo8", v, 256, true);
	CU_ASSERT_EQUAL(n, 2);
	for (int i = 0; i < n; i++)
		CU_ASSERT(id_eq(v[i].id, FL_HI, FL_O1_LO));
	/* container c: o1 (create, write), o3 (create, write, free), the
	 * index (7), p (6, its layer drop too); not c's own create, not o2 */
	n = drain(cl, "cont", v, 256, true);
	CU_ASSERT_EQUAL(n, 2 + 3 + 7 + 6);
	if (n != 2 + 3 + 7 + 6)
		recs_dump("container=c0:7", v, n < 0 ? 0 : (uint32_t)n);
	for (int i = 0; i < n; i++)
		CU_ASSERT(id_eq(v[i].cont, CONT_HI, 7));
	CU_ASSERT(n > 0 && v[n - 1].op == CLOVIS_FDMI_LAYER_DROP);
	/* tier 2 (SAS): o2 and o3 (create, write; o3's free), p's sas layer
	 * (add, move) */
	n = drain(cl, "sas", v, 256, true);
	CU_ASSERT_EQUAL(n, 7);
	for (int i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(v[i].tier, CLOVIS_TIER_SAS);
		CU_ASSERT(id_eq(v[i].id, FL_O2_HI, 2) ||
			  id_eq(v[i].id, FL_O3_HI, 3) ||
			  id_eq(v[i].id, FL_P_HI, 1));
	}
	/* tier 0 (NVRAM): no object nor layer is there (containers, indices,
	 * dtxs and a composite itself have no tier) */
	n = drain(cl, "nvram", v, 256, true);
	CU_ASSERT_EQUAL(n, 0);
	if (n > 0)
		recs_dump("tier=0", v, (uint32_t)n);
	/* narrow: none matches (o1 was never freed); acked all the same */
	CU_ASSERT_EQUAL(sub_get(cl, "narrow", &si), 0);
	CU_ASSERT(si.fs_lag_records > 0);
	CU_ASSERT_EQUAL(drain(cl, "narrow", v, 256, true), 0);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		CU_ASSERT_EQUAL(sub_get(cl, names[i], &si), 0);
		CU_ASSERT_EQUAL(si.fs_lag_records, 0);
		CU_ASSERT_EQUAL(si.fs_lag_bytes, 0);
	}
	/* the filters as text, as given */
	CU_ASSERT_EQUAL(sub_get(cl, "ops", &si), 0);
	CU_ASSERT_STRING_EQUAL(si.fs_filter, "op=obj.write,idx.del");
	CU_ASSERT_EQUAL(sub_get(cl, "ids", &si), 0);
	CU_ASSERT(strstr(si.fs_filter, "/16") != NULL);
	/* a batch of one record at a time: the same records, in order */
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(obj_io1(&o[i], CLOVIS_OC_WRITE, 1, 1, 1), 0);
	n = drain_n(cl, "sas", v, 256, true, 1);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT(n == 2 && v[0].seq < v[1].seq);
	CU_ASSERT_EQUAL(sub_get(cl, "sas", &si), 0);
	CU_ASSERT_EQUAL(si.fs_lag_records, 0);
	store_done(cl);
out:
	free(v);
}

/* ------------------------------------------------------- at least once */

/*
 * A consumer that did not ack gets the same records (same seqs) again
 * after a restart; after the ack it does not; two next calls of one
 * instance without an ack do not repeat records.
 */
static void test_at_least_once(void)
{
	struct frec *v = calloc(64, sizeof *v), *w = calloc(64, sizeof *w);
	struct clovis_fdmi_batch *b = NULL;
	struct clovis *cl;
	struct clovis_obj o;
	int n, m;

	if (skip("fdmi at_least_once"))
		goto out;
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	store_new();
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "c", NULL, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "hold", NULL, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(obj_new(cl, NULL, &o, 0xa7, 1,
				      CLOVIS_TIER_FLASH), 0);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(obj_io1(&o, CLOVIS_OC_WRITE, (uint64_t)i, 1, i),
				0);
	/* two batches of 3 in one instance: 3 + 3 distinct, then none */
	n = drain_n(cl, "c", v, 64, false, 3);
	CU_ASSERT_EQUAL(n, 6);
	for (int i = 1; i < n; i++)
		CU_ASSERT(v[i].seq > v[i - 1].seq);
	CU_ASSERT_EQUAL(drain(cl, "c", v + 10, 10, false), 0);
	/* restart without ack: the same six again */
	clovis_fini(cl);
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	m = drain(cl, "c", w, 64, false);
	CU_ASSERT_EQUAL(m, 6);
	for (int i = 0; i < n && i < m; i++) {
		CU_ASSERT_EQUAL(w[i].seq, v[i].seq);
		CU_ASSERT_EQUAL(w[i].op, v[i].op);
		CU_ASSERT_EQUAL(w[i].time_ns, v[i].time_ns);
	}
	/* ack the first three only (a batch of 3), restart: the last three */
	clovis_fini(cl);
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL_FATAL(clovis_fdmi_next(cl, "c", 3, &b), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_batch_nr(b), 3);
	CU_ASSERT_EQUAL(clovis_fdmi_ack(cl, "c", b), 0);
	/* an ack is idempotent */
	CU_ASSERT_EQUAL(clovis_fdmi_ack(cl, "c", b), 0);
	clovis_fdmi_batch_free(b);
	clovis_fini(cl);
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	m = drain(cl, "c", w, 64, true);
	CU_ASSERT_EQUAL(m, 3);
	CU_ASSERT(m == 3 && w[0].seq == v[3].seq && w[2].seq == v[5].seq);
	/* all acked: nothing after a restart */
	clovis_fini(cl);
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(drain(cl, "c", w, 64, true), 0);
	/* and new changes come with higher seqs */
	CU_ASSERT_EQUAL_FATAL(obj_open(cl, NULL, &o, 0xa7, 1), 0);
	CU_ASSERT_EQUAL(obj_io1(&o, CLOVIS_OC_WRITE, 9, 1, 9), 0);
	m = drain(cl, "c", w, 64, true);
	CU_ASSERT_EQUAL(m, 1);
	CU_ASSERT(m == 1 && w[0].seq > v[5].seq && ext_is(&w[0], 0, 9, 1));
	/* "c" unsubscribed and subscribed again from the start, in this same
	 * instance: every record kept ("hold" never acked) comes again */
	CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, "c"), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "c", NULL, 0, 0,
					CLOVIS_FDMI_FROM_START), 0);
	m = drain(cl, "c", w, 64, true);
	CU_ASSERT_EQUAL(m, 7);
	if (m != 7)
		fprintf(stderr, "\n  re-subscribed from the start: %d records "
			"(of 7 kept)\n", m);
	CU_ASSERT(m >= 1 && w[0].seq == v[0].seq);
	CU_ASSERT_EQUAL(drain(cl, "hold", w, 64, false), 7);
	store_done(cl);
out:
	free(v);
	free(w);
}

/* -------------------------------------------------------------- lagging */

#define LAG_WRITES 500u

/* The writer of test_lagging: its object, blocks written, failures, the
 * records "fast" read. */
struct lw {
	struct clovis *lw_cl;
	struct clovis_obj lw_o;
	uint64_t lw_blk;
	uint32_t lw_fails, lw_fast;
};

/* One synchronous one-block write: its latency in ns. */
static uint64_t lw_write(struct lw *w)
{
	uint64_t t = now_ns(CLOCK_MONOTONIC), b = w->lw_blk++ % 512;

	w->lw_fails += obj_io1(&w->lw_o, CLOVIS_OC_WRITE, b, 1, (int)b) != 0;
	return now_ns(CLOCK_MONOTONIC) - t;
}

/* "fast" reads and acks all there is. */
static void lw_fast(struct lw *w, int at_least)
{
	int n = drain(w->lw_cl, "fast", NULL, 0, true);

	CU_ASSERT(n >= at_least);
	w->lw_fast += n > 0 ? (uint32_t)n : 0;
}

/* Write until the trimmer marks "slow" LAGGING (at most 30 s), "fast"
 * reading along; the longest write's latency. */
static uint64_t lw_until_lagging(struct lw *w, struct clovis_fdmi_sub *si)
{
	uint64_t t_end = now_ns(CLOCK_MONOTONIC) + 30000000000ull, lat, max = 0;

	for (;;) {
		CU_ASSERT_EQUAL_FATAL(sub_get(w->lw_cl, "slow", si), 0);
		if (si->fs_state == CLOVIS_FDMI_LAGGING ||
		    now_ns(CLOCK_MONOTONIC) > t_end)
			return max;
		lat = lw_write(w);
		max = lat > max ? lat : max;
		if (w->lw_blk % 50 == 0)
			lw_fast(w, 1);
		if (w->lw_blk > 150) /* past the bound: wait for the trimmer */
			usleep(10000);
	}
}

/* Whether the log holds at most one record (the newest) within 10 s: a
 * new FROM_START consumer reads what is kept. */
static bool log_trimmed(struct clovis *cl)
{
	uint64_t t_end = now_ns(CLOCK_MONOTONIC) + 10000000000ull;
	char probe[32];
	int n, i = 0;

	do {
		usleep(200000);
		snprintf(probe, sizeof probe, "probe%d", i++);
		CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, probe, NULL, 0, 0,
						CLOVIS_FDMI_FROM_START), 0);
		n = drain(cl, probe, NULL, 0, false);
		CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, probe), 0);
	} while (n > 1 && now_ns(CLOCK_MONOTONIC) < t_end);
	return n >= 0 && n <= 1;
}

/* Whether consumer name is LAGGING within 10 s. */
static bool lagging_soon(struct clovis *cl, const char *name)
{
	uint64_t t_end = now_ns(CLOCK_MONOTONIC) + 10000000000ull;
	struct clovis_fdmi_sub si;

	while (sub_get(cl, name, &si) == 0) {
		if (si.fs_state == CLOVIS_FDMI_LAGGING)
			return true;
		if (now_ns(CLOCK_MONOTONIC) > t_end)
			break;
		usleep(100000);
	}
	return false;
}

/* LAGGING "slow": next and ack are -ESTALE naming it (the batch acked:
 * one of "fast", read after "fast" read all, so empty). */
static void slow_refused(struct lw *w)
{
	struct clovis *cl = w->lw_cl;
	struct clovis_fdmi_batch *b = NULL;
	int rc = clovis_fdmi_next(cl, "slow", 0, &b);

	CU_ASSERT_EQUAL(rc, -ESTALE);
	CU_ASSERT(strstr(clovis_errmsg(), "slow") != NULL);
	CU_ASSERT(strstr(clovis_errmsg(), "LAGGING") != NULL);
	if (rc == 0)
		clovis_fdmi_batch_free(b);
	lw_fast(w, 0);
	CU_ASSERT_EQUAL_FATAL(clovis_fdmi_next(cl, "fast", 0, &b), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_batch_nr(b), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_ack(cl, "slow", b), -ESTALE);
	CU_ASSERT(strstr(clovis_errmsg(), "slow") != NULL);
	clovis_fdmi_batch_free(b);
}

/*
 * A consumer past its bound (8 KiB) becomes LAGGING within a few trimmer
 * rounds while writes go on: its next and ack are -ESTALE naming it;
 * writes never stalled (latency printed, bounded generously); an ACTIVE
 * consumer that acks keeps working; the log is trimmed; one past its age
 * bound is marked too; reset makes it ACTIVE reading new records only.
 */
static void test_lagging(void)
{
	struct frec v[4];
	struct clovis_fdmi_sub si;
	struct lw w = {0};
	uint64_t lat, max_before, max_lag = 0;
	int n;

	if (skip("fdmi lagging"))
		return;
	store_new();
	w.lw_cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w.lw_cl);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(w.lw_cl, "slow", NULL, 8192, 0, 0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(w.lw_cl, "fast", NULL, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(w.lw_cl, "old", NULL, 0, 1500, 0), 0);
	CU_ASSERT_EQUAL_FATAL(obj_new(w.lw_cl, NULL, &w.lw_o, 0x1a, 1,
				      CLOVIS_TIER_FLASH), 0);
	max_before = lw_until_lagging(&w, &si);
	CU_ASSERT_EQUAL_FATAL(si.fs_state, CLOVIS_FDMI_LAGGING);
	/* not before its bound: 112 bytes a record (the create's 96) */
	CU_ASSERT(w.lw_blk >= 8192 / 112);
	CU_ASSERT_EQUAL(si.fs_lag_count, 1);
	CU_ASSERT(si.fs_lag_bytes < 8192); /* its cursor was dropped */
	slow_refused(&w);
	/* writes go on while it lags; "fast" keeps reading */
	for (uint32_t i = 0; i < LAG_WRITES; i++) {
		lat = lw_write(&w);
		max_lag = lat > max_lag ? lat : max_lag;
		if (i % 100 == 99)
			lw_fast(&w, 100);
	}
	printf("\n    fdmi lagging: %" PRIu64 " writes, max latency %.1f ms "
	       "until marked, %.1f ms over %u writes while LAGGING ",
	       w.lw_blk - LAG_WRITES, max_before / 1e6, max_lag / 1e6,
	       LAG_WRITES);
	CU_ASSERT_EQUAL(w.lw_fails, 0);
	CU_ASSERT(max_before < 10000000000ull);
	CU_ASSERT(max_lag < 10000000000ull);
	lw_fast(&w, 0);
	CU_ASSERT_EQUAL(w.lw_fast, w.lw_blk + 1); /* every write, the create */
	slow_refused(&w);
	/* "fast" acked all, "slow" holds nothing: trimmed to the newest */
	CU_ASSERT(log_trimmed(w.lw_cl));
	CU_ASSERT(lagging_soon(w.lw_cl, "old")); /* never read: past 1.5 s */
	CU_ASSERT_EQUAL(sub_get(w.lw_cl, "fast", &si), 0);
	CU_ASSERT_EQUAL(si.fs_state, CLOVIS_FDMI_ACTIVE);
	CU_ASSERT(si.fs_lag_records <= 1);
	/* reset: ACTIVE, reading new records only */
	CU_ASSERT_EQUAL(clovis_fdmi_reset(w.lw_cl, "slow"), 0);
	CU_ASSERT_EQUAL(sub_get(w.lw_cl, "slow", &si), 0);
	CU_ASSERT_EQUAL(si.fs_state, CLOVIS_FDMI_ACTIVE);
	CU_ASSERT_EQUAL(si.fs_lag_records, 0);
	CU_ASSERT_EQUAL(si.fs_lag_count, 1);
	CU_ASSERT_EQUAL(drain(w.lw_cl, "slow", v, 4, true), 0);
	CU_ASSERT_EQUAL(obj_io1(&w.lw_o, CLOVIS_OC_WRITE, 600, 1, 6), 0);
	n = drain(w.lw_cl, "slow", v, 4, true);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT(n == 1 && ext_is(&v[0], 0, 600, 1));
	CU_ASSERT_EQUAL(sub_get(w.lw_cl, "slow", &si), 0);
	CU_ASSERT_EQUAL(si.fs_lag_records, 0);
	store_done(w.lw_cl);
}

/* ------------------------------------------------------------ bad input */

static int subs_get(struct clovis *cl, struct clovis_fdmi_sub *v,
		    uint32_t *n)
{
	memset(v, 0, FSUB_MAX * sizeof *v);
	return clovis_fdmi_list(cl, v, FSUB_MAX, n);
}

/* The fields that only calls (not time) change are the same. */
static bool subs_same(const struct clovis_fdmi_sub *a, uint32_t na,
		      const struct clovis_fdmi_sub *b, uint32_t nb)
{
	if (na != nb)
		return false;
	for (uint32_t i = 0; i < na && i < FSUB_MAX; i++)
		if (strcmp(a[i].fs_name, b[i].fs_name) != 0 ||
		    strcmp(a[i].fs_filter, b[i].fs_filter) != 0 ||
		    a[i].fs_state != b[i].fs_state ||
		    a[i].fs_acked != b[i].fs_acked ||
		    a[i].fs_max_bytes != b[i].fs_max_bytes ||
		    a[i].fs_max_age_ms != b[i].fs_max_age_ms ||
		    a[i].fs_lag_count != b[i].fs_lag_count)
			return false;
	return true;
}

/* clovis_fdmi_sub(name, filter) is rc and the message holds word. */
static void bad_sub(struct clovis *cl, const char *name, const char *filter,
		    uint32_t flags, int rc, const char *word)
{
	int got = clovis_fdmi_sub(cl, name, filter, 0, 0, flags);

	CU_ASSERT_EQUAL(got, rc);
	if (got != rc || (word != NULL &&
			  strstr(clovis_errmsg(), word) == NULL)) {
		CU_FAIL("clovis_fdmi_sub: wrong code or message");
		fprintf(stderr, "\n  sub(\"%s\", \"%s\"): %d (want %d), "
			"\"%s\" (want \"%s\")\n", name ? name : "(null)",
			filter ? filter : "(null)", got, rc,
			got != 0 ? clovis_errmsg() : "", word ? word : "");
	}
}

/* Bad names, filters, flags and bounds: -EINVAL naming the field. */
static void bad_names_filters(struct clovis *cl)
{
	char longname[CLOVIS_FDMI_NAME_MAX + 2];

	memset(longname, 'n', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	bad_sub(cl, "", NULL, 0, -EINVAL, "name");
	bad_sub(cl, NULL, NULL, 0, -EINVAL, "name");
	bad_sub(cl, longname, NULL, 0, -EINVAL, "name");
	bad_sub(cl, "a b", NULL, 0, -EINVAL, "name");
	bad_sub(cl, "a/b", NULL, 0, -EINVAL, "'/'");
	bad_sub(cl, "caf\xc3\xa9", NULL, 0, -EINVAL, "name");
	/* filters: unknown field, bad op, bad tier, id bits, bad id, key */
	bad_sub(cl, "f", "colour=red", 0, -EINVAL, "colour");
	bad_sub(cl, "f", "op", 0, -EINVAL, "FIELD=VALUE");
	bad_sub(cl, "f", "op=obj.write,obj.bogus", 0, -EINVAL, "op");
	bad_sub(cl, "f", "op=obj.write,obj.bogus", 0, -EINVAL, "obj.bogus");
	bad_sub(cl, "f", "op=", 0, -EINVAL, "op");
	bad_sub(cl, "f", "tier=x", 0, -EINVAL, "tier");
	bad_sub(cl, "f", "tier=-1", 0, -EINVAL, "tier");
	bad_sub(cl, "f", "tier=256", 0, -EINVAL, "tier");
	bad_sub(cl, "f", "tier=", 0, -EINVAL, "tier");
	bad_sub(cl, "f", "id=1:2/0", 0, -EINVAL, "id");
	bad_sub(cl, "f", "id=1:2/129", 0, -EINVAL, "id");
	bad_sub(cl, "f", "id=1:2/x", 0, -EINVAL, "id");
	bad_sub(cl, "f", "id=12", 0, -EINVAL, "id");
	bad_sub(cl, "f", "container=zz", 0, -EINVAL, "container");
	bad_sub(cl, "f", "key=", 0, -EINVAL, "key");
	bad_sub(cl, "f", "op=obj.write tier=1 bogus=1", 0, -EINVAL, "bogus");
	if (clovis_fdmi_unsub(cl, "f") == 0)
		CU_FAIL("a bad filter registered consumer \"f\"");
	/* flags, bounds */
	bad_sub(cl, "f", NULL, 0x8, -EINVAL, "flags");
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "f", NULL, 0, UINT64_MAX, 0),
			-EINVAL);
	CU_ASSERT(strstr(clovis_errmsg(), "max_age") != NULL);
	/* "good" taken: another filter -EEXIST; the same one (the same
	 * fields in another text) 0 */
	bad_sub(cl, "good", "op=idx.put", 0, -EEXIST, "good");
	bad_sub(cl, "good", NULL, 0, -EEXIST, "good");
	bad_sub(cl, "good", "key=x  op=idx.put", 0, 0, NULL);
}

/* Unknown consumers: -ENOENT naming them; NULL and out-of-range
 * arguments: -EINVAL. */
static void bad_unknown_args(struct clovis *cl)
{
	struct clovis_fdmi_batch *b = NULL;
	uint32_t n;

	CU_ASSERT_EQUAL(clovis_fdmi_next(cl, "nobody", 0, &b), -ENOENT);
	CU_ASSERT(strstr(clovis_errmsg(), "nobody") != NULL);
	CU_ASSERT_EQUAL(clovis_fdmi_reset(cl, "nobody"), -ENOENT);
	CU_ASSERT(strstr(clovis_errmsg(), "nobody") != NULL);
	CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, "nobody"), -ENOENT);
	CU_ASSERT(strstr(clovis_errmsg(), "nobody") != NULL);
	CU_ASSERT_EQUAL_FATAL(clovis_fdmi_next(cl, "good", 0, &b), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_ack(cl, "nobody", b), -ENOENT);
	CU_ASSERT(strstr(clovis_errmsg(), "nobody") != NULL);
	clovis_fdmi_batch_free(b);
	CU_ASSERT_EQUAL(clovis_fdmi_ack(cl, "good", NULL), -EINVAL);
	CU_ASSERT_EQUAL(clovis_fdmi_next(cl, "good", 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(clovis_fdmi_next(cl, "good", 65537, &b), -EINVAL);
	CU_ASSERT(strstr(clovis_errmsg(), "max") != NULL);
	CU_ASSERT_EQUAL(clovis_fdmi_next(cl, NULL, 0, &b), -EINVAL);
	CU_ASSERT_EQUAL(clovis_fdmi_unsub(NULL, "good"), -EINVAL);
	CU_ASSERT_EQUAL(clovis_fdmi_list(cl, NULL, 1, &n), -EINVAL);
	CU_ASSERT_EQUAL(clovis_fdmi_list(cl, NULL, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(clovis_fdmi_batch_rec(NULL, 0, NULL), -EINVAL);
}

/* The longest name is fine; 64 consumers, and the 65th is -ENOSPC naming
 * it; all removed again ("good" stays). */
static void bad_limits(struct clovis *cl)
{
	char name[CLOVIS_FDMI_NAME_MAX + 1];
	uint32_t n = 0;

	memset(name, 'm', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, name, NULL, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, name), 0);
	for (uint32_t i = 1; i < 64; i++) {
		snprintf(name, sizeof name, "many%02u", i);
		CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, name, NULL, 0, 0, 0), 0);
	}
	bad_sub(cl, "one-too-many", NULL, 0, -ENOSPC, "one-too-many");
	CU_ASSERT_EQUAL(clovis_fdmi_list(cl, NULL, 0, &n), 0);
	CU_ASSERT_EQUAL(n, 64);
	for (uint32_t i = 1; i < 64; i++) {
		snprintf(name, sizeof name, "many%02u", i);
		CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, name), 0);
	}
}

/*
 * Bad names, filters and flags are -EINVAL naming the field; a taken name
 * with another filter -EEXIST, with the same 0; unknown consumers -ENOENT;
 * a 65th consumer -ENOSPC; FDMI off refuses consumers; on and off
 * together refuse the store.  In every case the consumers are unchanged.
 */
static void test_bad_input(void)
{
	struct clovis_fdmi_sub before[FSUB_MAX], after[FSUB_MAX];
	struct clovis *cl, *cl2 = NULL;
	struct clovis_obj o;
	struct clovis_conf bc = {.cc_flags = CLOVIS_CONF_CREATE |
					     CLOVIS_CONF_FDMI_ON |
					     CLOVIS_CONF_FDMI_OFF,
				 .cc_dev_size = FDEV_SIZE};
	uint32_t nb = 0, na = 0;

	if (skip("fdmi bad_input"))
		return;
	store_new();
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "good", "op=idx.put key=x", 0, 0,
					0), 0);
	CU_ASSERT_EQUAL_FATAL(obj_new(cl, NULL, &o, 0xbad, 1,
				      CLOVIS_TIER_FLASH), 0);
	CU_ASSERT_EQUAL(subs_get(cl, before, &nb), 0);
	CU_ASSERT_EQUAL(nb, 1);
	bad_names_filters(cl);
	CU_ASSERT_EQUAL(subs_get(cl, after, &na), 0);
	CU_ASSERT(subs_same(before, nb, after, na));
	bad_unknown_args(cl);
	CU_ASSERT_EQUAL(subs_get(cl, after, &na), 0);
	CU_ASSERT(subs_same(before, nb, after, na));
	bad_limits(cl);
	CU_ASSERT_EQUAL(subs_get(cl, after, &na), 0);
	CU_ASSERT(subs_same(before, nb, after, na));
	clovis_fini(cl);
	/* FDMI off: consumers refused; those there are kept */
	cl = sopen(CLOVIS_CONF_FDMI_OFF);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	bad_sub(cl, "newone", NULL, 0, -ENOTSUP, "off");
	CU_ASSERT_EQUAL(subs_get(cl, after, &na), 0);
	CU_ASSERT(subs_same(before, nb, after, na));
	clovis_fini(cl);
	/* on and off together: no instance */
	bc.cc_data_dir = fdir;
	CU_ASSERT_EQUAL(clovis_init(&cl2, &bc), -EINVAL);
	CU_ASSERT_PTR_NULL(cl2);
	CU_ASSERT(strstr(clovis_errmsg(), "FDMI") != NULL);
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(subs_get(cl, after, &na), 0);
	CU_ASSERT(subs_same(before, nb, after, na));
	store_done(cl);
}

/* ---------------------------------------------------------------- crash */

#define CR_HI 0xcdu

enum cr_step {
	CR_CONT_CREATE, CR_OBJ_CREATE, CR_OBJ_WRITE, CR_OBJ_ALLOC, CR_SETATTR,
	CR_OBJ_FREE, CR_IDX_CREATE, CR_IDX_PUT, CR_IDX_DEL, CR_LAYER_ADD,
	CR_COMP_WRITE, CR_LAYER_ADD2, CR_LAYER_MOVE, CR_LAYER_DROP, CR_DTX,
	CR_IDX_DELETE, CR_OBJ_DELETE, CR_CONT_DELETE, CR_NR
};

struct cr_kind {
	const char *ck_name;
	uint32_t ck_op;    /* the record it makes (the first, for CR_DTX) */
	uint32_t ck_recs;  /* how many */
	uint32_t ck_skip;  /* fault passes let through (CR_DTX: its members) */
	bool ck_crash;     /* crash it (else run only) */
};

static const struct cr_kind cr_kinds[CR_NR] = {
	[CR_CONT_CREATE] = {"cont.create", CLOVIS_FDMI_CONT_CREATE, 1, 0, 1},
	[CR_OBJ_CREATE] = {"obj.create", CLOVIS_FDMI_OBJ_CREATE, 1, 0, 1},
	[CR_OBJ_WRITE] = {"obj.write", CLOVIS_FDMI_OBJ_WRITE, 1, 0, 1},
	[CR_OBJ_ALLOC] = {"obj.alloc", CLOVIS_FDMI_OBJ_ALLOC, 1, 0, 1},
	[CR_SETATTR] = {"setattr", CLOVIS_FDMI_SETATTR, 1, 0, 1},
	[CR_OBJ_FREE] = {"obj.free", CLOVIS_FDMI_OBJ_FREE, 1, 0, 1},
	[CR_IDX_CREATE] = {"idx.create", CLOVIS_FDMI_IDX_CREATE, 1, 0, 1},
	[CR_IDX_PUT] = {"idx.put", CLOVIS_FDMI_IDX_PUT, 1, 0, 1},
	[CR_IDX_DEL] = {"idx.del", CLOVIS_FDMI_IDX_DEL, 1, 0, 1},
	[CR_LAYER_ADD] = {"layer.add", CLOVIS_FDMI_LAYER_ADD, 1, 0, 1},
	[CR_COMP_WRITE] = {"composite write", CLOVIS_FDMI_OBJ_WRITE, 1, 0, 1},
	[CR_LAYER_ADD2] = {"layer.add", CLOVIS_FDMI_LAYER_ADD, 1, 0, 0},
	[CR_LAYER_MOVE] = {"layer.move", CLOVIS_FDMI_LAYER_MOVE, 1, 0, 1},
	[CR_LAYER_DROP] = {"layer.drop", CLOVIS_FDMI_LAYER_DROP, 1, 0, 1},
	[CR_DTX] = {"dtx (at its commit record)", CLOVIS_FDMI_IDX_PUT, 3, 2, 1},
	[CR_IDX_DELETE] = {"idx.delete", CLOVIS_FDMI_IDX_DELETE, 1, 0, 1},
	[CR_OBJ_DELETE] = {"obj.delete", CLOVIS_FDMI_OBJ_DELETE, 1, 0, 1},
	[CR_CONT_DELETE] = {"cont.delete", CLOVIS_FDMI_CONT_DELETE, 1, 0, 1},
};

/* Handles of the crash test's entities in one instance. */
struct cr_ents {
	struct clovis_container c;
	struct clovis_obj o, p;
	struct clovis_idx ix;
};

/* Composite P's layers: hot (flash, made first), cold (sas). */
#define CR_HOT 1u
#define CR_COLD 2u

static void cr_handles(struct clovis *cl, struct cr_ents *h)
{
	struct clovis_id cid = {CR_HI, 0x100}, pid = {CR_HI, 3};
	struct clovis_id xid = {CR_HI, 2};
	struct clovis_obj_attr a = plain_attr(CLOVIS_TIER_FLASH);
	struct clovis_obj_attr ca = {.oa_block_shift = 12,
				     .oa_layout = CLOVIS_LAYOUT_COMPOSITE};
	struct clovis_id oid = {CR_HI, 1};

	clovis_container_init(&h->c, cl, &cid);
	clovis_obj_init(&h->o, clovis_default_realm(cl), &oid, &a);
	clovis_obj_init(&h->p, clovis_default_realm(cl), &pid, &ca);
	clovis_idx_init(&h->ix, clovis_default_realm(cl), &xid);
	/* open what exists (the handles of a fresh instance) */
	ent_sync(&h->o.ob_entity, CLOVIS_EO_OPEN);
	ent_sync(&h->p.ob_entity, CLOVIS_EO_OPEN);
	ent_sync(&h->ix.in_entity, CLOVIS_EO_OPEN);
}

/* Run step s: its rc. */
static int cr_run(struct clovis *cl, struct cr_ents *h, enum cr_step s)
{
	struct clovis_obj_attr lh = plain_attr(CLOVIS_TIER_FLASH);
	struct clovis_obj_attr lc = plain_attr(CLOVIS_TIER_SAS);
	const char *k = "ck", *dk = "dk";
	uint64_t bs = 8, bn = 1;
	struct clovis_extvec ev = {1, &bs, &bn};
	char buf[FBS];
	void *bp = buf;
	size_t bl = FBS;
	struct clovis_bufvec bv = {1, &bp, &bl};
	struct clovis_dtx *dx;
	struct clovis_op *m[2] = {NULL, NULL}, *cop;
	struct kv kr;
	uint32_t l;
	int rc;

	(void)cl;
	switch (s) {
	case CR_CONT_CREATE:
		return ent_sync(&h->c.co_entity, CLOVIS_EO_CREATE);
	case CR_OBJ_CREATE:
		return ent_sync(&h->o.ob_entity, CLOVIS_EO_CREATE);
	case CR_OBJ_WRITE:
		return obj_io1(&h->o, CLOVIS_OC_WRITE, 0, 2, 0x5a);
	case CR_OBJ_ALLOC:
		return obj_io1(&h->o, CLOVIS_OC_ALLOC, 4, 2, 0);
	case CR_SETATTR:
		h->o.ob_attr.oa_size_bytes = 777;
		return ent_sync(&h->o.ob_entity, CLOVIS_EO_SETATTR);
	case CR_OBJ_FREE:
		return obj_io1(&h->o, CLOVIS_OC_FREE, 0, 1, 0);
	case CR_IDX_CREATE:
		return ent_sync(&h->ix.in_entity, CLOVIS_EO_CREATE);
	case CR_IDX_PUT:
		return idx_kv(&h->ix, CLOVIS_IC_PUT, &k, 1, 0);
	case CR_IDX_DEL:
		return idx_kv(&h->ix, CLOVIS_IC_DEL, &k, 1, 0);
	case CR_LAYER_ADD:
		return clovis_obj_layer_add(&h->p, &lh, 30, &l);
	case CR_COMP_WRITE:
		return obj_io1(&h->p, CLOVIS_OC_WRITE, 0, 2, 0x6b);
	case CR_LAYER_ADD2:
		return clovis_obj_layer_add(&h->p, &lc, 10, &l);
	case CR_LAYER_MOVE:
		return clovis_obj_layer_move(&h->p, 0, 2, CR_COLD, NULL);
	case CR_LAYER_DROP:
		return clovis_obj_layer_drop(&h->p, CR_HOT);
	case CR_DTX:
		memset(buf, 0x7c, sizeof buf);
		rc = clovis_dtx_open(&dx, clovis_default_realm(cl));
		if (rc != 0)
			return rc;
		rc = idx_kv_op(&h->ix, CLOVIS_IC_PUT, &dk, 1, 0, &kr, &m[0]);
		if (rc == 0)
			rc = clovis_obj_op(&h->o, CLOVIS_OC_WRITE, &ev, &bv, 0,
					   &m[1]);
		if (rc == 0)
			rc = clovis_dtx_add(dx, m[0]);
		if (rc == 0)
			rc = clovis_dtx_add(dx, m[1]);
		if (rc == 0)
			rc = clovis_dtx_commit(dx, &cop);
		if (rc == 0)
			rc = clovis_op_sync(cop);
		else
			clovis_dtx_abort(dx);
		clovis_op_free(m[0]);
		clovis_op_free(m[1]);
		return rc;
	case CR_IDX_DELETE:
		return ent_sync(&h->ix.in_entity, CLOVIS_EO_DELETE);
	case CR_OBJ_DELETE:
		return ent_sync(&h->o.ob_entity, CLOVIS_EO_DELETE);
	case CR_CONT_DELETE:
		return ent_sync(&h->c.co_entity, CLOVIS_EO_DELETE);
	default:
		return -EINVAL;
	}
}

/* Whether the change of step s is in the store (fresh handles h). */
static bool cr_done(struct clovis *cl, struct cr_ents *h, enum cr_step s)
{
	struct clovis_container c;
	struct clovis_obj o;
	struct clovis_idx ix;
	struct clovis_id cid = {CR_HI, 0x100};
	struct clovis_layer_info li[4];
	uint32_t n = 4, l = 0;

	switch (s) {
	case CR_CONT_CREATE:
	case CR_CONT_DELETE:
		clovis_container_init(&c, cl, &cid);
		return (ent_sync(&c.co_entity, CLOVIS_EO_OPEN) == 0) ==
		       (s == CR_CONT_CREATE);
	case CR_OBJ_CREATE:
	case CR_OBJ_DELETE:
		return (obj_open(cl, NULL, &o, CR_HI, 1) == 0) ==
		       (s == CR_OBJ_CREATE);
	case CR_OBJ_WRITE:
		return obj_byte(&h->o, 1) == 0x5a;
	case CR_OBJ_ALLOC:
		return h->o.ob_attr.oa_size_blocks == 6;
	case CR_SETATTR:
		return h->o.ob_attr.oa_size_bytes == 777;
	case CR_OBJ_FREE:
		return obj_byte(&h->o, 0) == 0;
	case CR_IDX_CREATE:
	case CR_IDX_DELETE:
		return (idx_new(cl, NULL, &ix, CR_HI, 2, CLOVIS_EO_OPEN) == 0) ==
		       (s == CR_IDX_CREATE);
	case CR_IDX_PUT:
		return idx_get1(&h->ix, "ck") == 0;
	case CR_IDX_DEL:
		return idx_get1(&h->ix, "ck") == -ENOENT;
	case CR_LAYER_ADD:
	case CR_LAYER_ADD2:
		return clovis_obj_layer_list(&h->p, li, &n) == 0 &&
		       n == (s == CR_LAYER_ADD ? 1u : 2u);
	case CR_COMP_WRITE:
		return clovis_obj_layer_of(&h->p, 1, &l) == 0 && l == CR_HOT;
	case CR_LAYER_MOVE:
		return clovis_obj_layer_of(&h->p, 1, &l) == 0 && l == CR_COLD;
	case CR_LAYER_DROP:
		return clovis_obj_layer_list(&h->p, li, &n) == 0 && n == 1 &&
		       li[0].li_layer == CR_COLD;
	case CR_DTX:
		return idx_get1(&h->ix, "dk") == 0 && obj_byte(&h->o, 8) == 0x7c;
	default:
		return false;
	}
}

/* Whether none of the dtx's changes is there (both or neither). */
static bool cr_dtx_none(struct cr_ents *h)
{
	return idx_get1(&h->ix, "dk") == -ENOENT && obj_byte(&h->o, 8) == 0;
}

/* Child: open the store, arm the fault, run step s; never returns. */
static void cr_child(enum cr_step s)
{
	struct clovis *cl = sopen(0);
	struct cr_ents h;

	if (cl == NULL)
		_exit(2);
	cr_handles(cl, &h);
	fault_arm("fdmi.emit.crash", cr_kinds[s].ck_skip, 1);
	cr_run(cl, &h, s);
	_exit(3); /* not killed: the fault never fired */
}

/* Fork a child that dies at the fault in step s; whether it was killed
 * by SIGKILL. */
static bool cr_crash(enum cr_step s)
{
	pid_t pid;
	int st = 0;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		cr_child(s);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return false;
	if (!WIFSIGNALED(st))
		fprintf(stderr, "\n  crash %s: child exit %d\n",
			cr_kinds[s].ck_name, WEXITSTATUS(st));
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
}

/* Step s of test_crash, *last the newest record's seq before it. */
static void cr_step(enum cr_step s, uint64_t *last)
{
	const struct cr_kind *k = &cr_kinds[s];
	struct frec v[8];
	struct clovis *cl;
	struct cr_ents h;
	int n;

	if (k->ck_crash)
		CU_ASSERT(cr_crash(s));
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	cr_handles(cl, &h);
	if (k->ck_crash) {
		/* neither the change nor a record */
		CU_ASSERT(!cr_done(cl, &h, s));
		if (s == CR_DTX)
			CU_ASSERT(cr_dtx_none(&h));
		n = drain(cl, "crash", v, 8, false);
		CU_ASSERT_EQUAL(n, 0);
		if (n != 0 || cr_done(cl, &h, s))
			fprintf(stderr, "\n  crash %s: %d records, change %s\n",
				k->ck_name, n, cr_done(cl, &h, s) ? "there"
								  : "absent");
	}
	/* now for real: both, the record next in sequence (none lost) */
	CU_ASSERT_EQUAL(cr_run(cl, &h, s), 0);
	cr_handles(cl, &h);
	CU_ASSERT(cr_done(cl, &h, s));
	n = drain(cl, "crash", v, 8, true);
	CU_ASSERT_EQUAL(n, (int)k->ck_recs);
	if (n >= 1) {
		CU_ASSERT_EQUAL(v[0].op, k->ck_op);
		/* after the last (read-heat records, filtered out, may
		 * take seqs between) */
		CU_ASSERT(v[0].seq > *last);
		*last = v[n - 1].seq;
	}
	if (s == CR_DTX && n == 3)
		CU_ASSERT_EQUAL(v[2].op, CLOVIS_FDMI_DTX_COMMIT);
	if (n != (int)k->ck_recs || (n >= 1 && v[0].op != k->ck_op))
		fprintf(stderr, "\n  crash %s: %d records, first %s\n",
			k->ck_name, n, n > 0 ? clovis_fdmi_op_name(v[0].op)
					     : "-");
	clovis_fini(cl);
}

/*
 * For each step: a child killed by the fault between its change and its
 * record (same transaction) leaves neither; then the step runs and both
 * are there, the record next in sequence.
 */
static void test_crash(void)
{
	struct frec v[8];
	struct clovis *cl;
	struct cr_ents h;
	uint64_t last = 0;
	int n;

	if (skip("fdmi crash_both_or_neither"))
		return;
	store_new();
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	{
		/* every op but the reads' heat (the steps' checks read, and a
		 * close flushes their records) */
		char f[512] = "op=";

		for (uint32_t op = CLOVIS_FDMI_OBJ_CREATE; op < 64; op++)
			if (op != CLOVIS_FDMI_OBJ_READ &&
			    strcmp(clovis_fdmi_op_name(op), "?") != 0)
				snprintf(f + strlen(f), sizeof f - strlen(f),
					 "%s%s", f[3] ? "," : "",
					 clovis_fdmi_op_name(op));
		CU_ASSERT_EQUAL_FATAL(clovis_fdmi_sub(cl, "crash", f, 0, 0, 0),
				      0);
	}
	/* the composite exists before (its create is not a step) */
	cr_handles(cl, &h);
	CU_ASSERT_EQUAL_FATAL(ent_sync(&h.p.ob_entity, CLOVIS_EO_CREATE), 0);
	n = drain(cl, "crash", v, 8, true);
	CU_ASSERT_EQUAL(n, 1);
	last = n == 1 ? v[0].seq : 0;
	clovis_fini(cl);
	for (int s = 0; s < CR_NR; s++)
		cr_step((enum cr_step)s, &last);
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	store_done(cl);
}

/* ---------------------------------------------------------- persistence */

/*
 * Consumers, their filters and acked cursors survive a restart; unsub
 * removes one, and the records it alone held are trimmed.
 */
static void test_persistence(void)
{
	struct frec *v = calloc(64, sizeof *v);
	struct clovis_fdmi_sub s1, s2, t1, t2;
	struct clovis *cl;
	struct clovis_obj o;
	struct clovis_fdmi_batch *b = NULL;
	uint64_t acked, acked2 = 0;
	uint32_t nr = 0;
	int n;

	if (skip("fdmi persistence"))
		goto out;
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	store_new();
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "p1", "op=obj.write", 0, 0, 0), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "p2", NULL, 1u << 20, 600000, 0),
			0);
	CU_ASSERT_EQUAL_FATAL(obj_new(cl, NULL, &o, 0x9e, 1,
				      CLOVIS_TIER_FLASH), 0);
	for (uint64_t i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(obj_io1(&o, CLOVIS_OC_WRITE, i, 1, 1), 0);
	CU_ASSERT_EQUAL(drain(cl, "p1", v, 64, true), 4);
	acked = v[3].seq;
	CU_ASSERT_EQUAL(sub_get(cl, "p1", &s1), 0);
	CU_ASSERT_EQUAL(sub_get(cl, "p2", &s2), 0);
	CU_ASSERT_EQUAL(s1.fs_acked, acked);
	CU_ASSERT_EQUAL(s2.fs_lag_records, 5);
	clovis_fini(cl);

	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(clovis_fdmi_list(cl, NULL, 0, &nr), 0);
	CU_ASSERT_EQUAL(nr, 2);
	/* in name order; max 1 fills one and counts both */
	nr = 0;
	memset(&t1, 0, sizeof t1);
	CU_ASSERT_EQUAL(clovis_fdmi_list(cl, &t1, 1, &nr), 0);
	CU_ASSERT_EQUAL(nr, 2);
	CU_ASSERT_STRING_EQUAL(t1.fs_name, "p1");
	CU_ASSERT_EQUAL(sub_get(cl, "p1", &t1), 0);
	CU_ASSERT_EQUAL(sub_get(cl, "p2", &t2), 0);
	CU_ASSERT_STRING_EQUAL(t1.fs_filter, "op=obj.write");
	CU_ASSERT_STRING_EQUAL(t2.fs_filter, "");
	CU_ASSERT_STRING_EQUAL(t1.fs_server, "local");
	CU_ASSERT_EQUAL(t1.fs_acked, acked);
	CU_ASSERT_EQUAL(t1.fs_state, CLOVIS_FDMI_ACTIVE);
	CU_ASSERT_EQUAL(t2.fs_acked, s2.fs_acked);
	CU_ASSERT_EQUAL(t2.fs_max_bytes, 1u << 20);
	CU_ASSERT_EQUAL(t2.fs_max_age_ms, 600000);
	CU_ASSERT_EQUAL(t2.fs_lag_records, 5);
	/* emission is on again at open: changes are recorded */
	CU_ASSERT_EQUAL_FATAL(obj_open(cl, NULL, &o, 0x9e, 1), 0);
	CU_ASSERT_EQUAL(obj_io1(&o, CLOVIS_OC_WRITE, 7, 1, 1), 0);
	n = drain(cl, "p1", v, 64, true);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT(n == 1 && v[0].seq > acked && ext_is(&v[0], 0, 7, 1));
	acked2 = n == 1 ? v[0].seq : 0;
	CU_ASSERT_EQUAL(sub_get(cl, "p2", &t2), 0);
	CU_ASSERT_EQUAL(t2.fs_lag_records, 6);
	/* p2 holds 6 records; unsub it: they are trimmed (the newest kept) */
	CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, "p2"), 0);
	CU_ASSERT_EQUAL(sub_get(cl, "p2", &t2), -ENOENT);
	CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, "p2"), -ENOENT);
	CU_ASSERT_EQUAL(clovis_fdmi_sub(cl, "probe", NULL, 0, 0,
					CLOVIS_FDMI_FROM_START), 0);
	n = drain(cl, "probe", v, 64, false);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT(n == 1 && v[0].seq == acked2);
	CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, "probe"), 0);
	clovis_fini(cl);
	/* and over a restart p2 stays gone, p1 stays */
	cl = sopen(0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL(clovis_fdmi_list(cl, NULL, 0, &nr), 0);
	CU_ASSERT_EQUAL(nr, 1);
	CU_ASSERT_EQUAL(sub_get(cl, "p1", &t1), 0);
	CU_ASSERT_EQUAL(t1.fs_acked, acked2);
	CU_ASSERT_EQUAL(clovis_fdmi_next(cl, "p2", 0, &b), -ENOENT);
	CU_ASSERT_EQUAL(clovis_fdmi_unsub(cl, "p1"), 0);
	CU_ASSERT_EQUAL(clovis_fdmi_list(cl, NULL, 0, &nr), 0);
	CU_ASSERT_EQUAL(nr, 0);
	store_done(cl);
out:
	free(v);
}

/* ---------------------------------------------------------------- suite */

static int fdmi_suite_init(void)
{
	const char *d = ut_tmpdir("fdmi");

	if (d == NULL)
		return -1;
	snprintf(fbase, sizeof fbase, "%s", d);
	return 0;
}

static int fdmi_suite_fini(void)
{
	return 0;
}

int fdmi_ut_add(void)
{
	CU_pSuite s = CU_add_suite("fdmi", fdmi_suite_init, fdmi_suite_fini);

	if (s == NULL || !CU_add_test(s, "every_kind", test_every_kind) ||
	    !CU_add_test(s, "big_records", test_big_records) ||
	    !CU_add_test(s, "no_consumer_no_records", test_no_consumer) ||
	    !CU_add_test(s, "filters", test_filters) ||
	    !CU_add_test(s, "at_least_once", test_at_least_once) ||
	    !CU_add_test(s, "lagging", test_lagging) ||
	    !CU_add_test(s, "bad_input", test_bad_input) ||
	    !CU_add_test(s, "crash_both_or_neither", test_crash) ||
	    !CU_add_test(s, "persistence", test_persistence))
		return -1;
	return 0;
}
