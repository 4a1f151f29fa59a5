/*
 * clovis_bad_ut.c — bad input for every entry of the Clovis API.
 *
 * Each case hands the library something the header forbids and checks three
 * things: the documented return code (from the call, or from the op when the
 * fault can only be seen at run time), a fresh non-empty error message
 * (clovis_errmsg() or clovis_op_errmsg()), and a store left exactly as it was
 * (object blocks, index records, attributes and entity lists read back).
 *
 * Freshness of clovis_errmsg(): before each bad call a marker failure is made
 * with clovis_id_parse() on a unique text, which the header says the message
 * names; after the call the message must be non-empty and must not be the
 * marker's, so a stale message from an earlier failure cannot pass.
 *
 * Suites: "clovis_bad" (this file) works on one open store with known
 * contents; "clovis_bad_store" (clovis_bad_store_ut.c) opens, locks and
 * damages stores of its own, running the risky parts in forked children so
 * that a crash is a failed test.  The helpers both use are declared in
 * clovis_bad_ut.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "clovis/ut/clovis_bad_ut.h"
#include "tests/ut.h"

#define BAD_NR_BLKS 8u
#define BAD_NR_RECS 6u
#define BAD_LIST_MAX 32u
#define BAD_WAIT_NS (30ll * 1000 * 1000 * 1000)

/* Fixture of the "clovis_bad" suite. */
static struct clovis *bad_cl;
static struct clovis_realm *bad_realm;
static struct clovis_obj bad_obj;          /* BAD_NR_BLKS known blocks */
static struct clovis_idx bad_idx;          /* BAD_NR_RECS known records */
static struct clovis_container bad_cont;   /* holds bad_cont_obj */
static struct clovis_obj bad_cont_obj;
static uint64_t bad_size_bytes;            /* bad_obj's size at setup */
static char bad_dir[512];

/* Entity lists at setup: objects, indices (default realm), containers. */
struct bad_list {
	struct clovis_id bl_ids[BAD_LIST_MAX];
	uint32_t bl_nr;
};
static struct bad_list bad_lists[3];

/* The marker message made before each bad call. */
static char bad_marker[64];
static unsigned bad_marker_seq;
static unsigned bad_tmp_seq;

/* The op a bad call may have created by mistake (freed after the call). */
static struct clovis_op *bad_op;

/* ------------------------------------------------------------ helpers */

/* Point v's bufvec at its own arrays with nr entries. */
static struct clovis_bufvec *bad_vec(struct bad_vec *v, uint32_t nr)
{
	v->bv_vec.bv_nr = nr;
	v->bv_vec.bv_buf = v->bv_bufs;
	v->bv_vec.bv_len = v->bv_lens;
	return &v->bv_vec;
}

/* Make a marker failure whose message must not survive the next bad call. */
static void bad_mark(void)
{
	struct clovis_id id;

	snprintf(bad_marker, sizeof bad_marker, "no-such-id-%u",
		 ++bad_marker_seq);
	(void)clovis_id_parse(bad_marker, &id);
	bad_op = NULL;
}

/* True when clovis_errmsg() holds a message made after the marker. */
static bool bad_msg_fresh(void)
{
	const char *m = clovis_errmsg();

	if (m == NULL || m[0] == '\0' || strstr(m, bad_marker) != NULL) {
		fprintf(stderr, "clovis_bad: stale or empty message \"%s\"\n",
			m != NULL ? m : "(null)");
		return false;
	}
	return true;
}

/* Free an op a bad call created although it should not have. */
static void bad_drop(void)
{
	clovis_op_free(bad_op);
	bad_op = NULL;
}

/*
 * Check that expr (an int call) returns want and leaves a fresh message.
 * Ops that bad calls create by mistake go to bad_op and are freed.
 */
#define BAD_CALL(expr, want)                                            \
	do {                                                            \
		int bad_rc_;                                            \
		bad_mark();                                             \
		bad_rc_ = (expr);                                       \
		if (bad_rc_ != (want))                                  \
			fprintf(stderr, "clovis_bad:%d: %s = %d, want %d\n", \
				__LINE__, #expr, bad_rc_, (int)(want));  \
		CU_ASSERT_EQUAL(bad_rc_, (want));                       \
		CU_ASSERT(bad_msg_fresh());                             \
		bad_drop();                                             \
	} while (0)

/* Launch op, wait for STABLE or FAILED, free it; returns its rc. */
static int bad_run(struct clovis_op *op)
{
	int rc;

	if (clovis_op_launch(&op, 1) != 0) {
		clovis_op_free(op);
		return -ESRCH;
	}
	rc = clovis_op_wait(op, CLOVIS_OS_STABLE, BAD_WAIT_NS);
	if (rc == 0)
		rc = clovis_op_rc(op);
	clovis_op_free(op);
	return rc;
}

/*
 * Launch op and check it FAILED with want and a non-empty op message.
 * The op is freed.
 */
static bool bad_run_fails(struct clovis_op *op, int want)
{
	const char *m;
	bool ok;
	int rc;

	if (clovis_op_launch(&op, 1) != 0) {
		clovis_op_free(op);
		return false;
	}
	(void)clovis_op_wait(op, CLOVIS_OS_STABLE | CLOVIS_OS_FAILED,
			     BAD_WAIT_NS);
	rc = clovis_op_rc(op);
	m = clovis_op_errmsg(op);
	ok = clovis_op_state(op) == CLOVIS_OS_FAILED && rc == want &&
	     m != NULL && m[0] != '\0';
	if (!ok)
		fprintf(stderr, "clovis_bad: op state %d rc %d msg \"%s\", "
			"want FAILED %d\n", (int)clovis_op_state(op), rc,
			m != NULL ? m : "(null)", want);
	clovis_op_free(op);
	return ok;
}

/* Run an entity op to the end; returns its rc (or the creation error). */
static int bad_ent(struct clovis_entity *e, enum clovis_entity_opcode opc)
{
	struct clovis_op *op = NULL;
	int rc = clovis_entity_op(e, opc, &op);

	return rc != 0 ? rc : bad_run(op);
}

/* Check that an entity op is created but fails at run time with want. */
static bool bad_ent_fails(struct clovis_entity *e,
			  enum clovis_entity_opcode opc, int want)
{
	struct clovis_op *op = NULL;

	if (clovis_entity_op(e, opc, &op) != 0)
		return false;
	return bad_run_fails(op, want);
}

/* A fresh user id for temporary entities. */
static struct clovis_id bad_tmp_id(void)
{
	return (struct clovis_id){BAD_HI, 1000 + ++bad_tmp_seq};
}

/* The byte i of fixture block blk. */
uint8_t bad_pat(uint64_t blk, size_t i)
{
	return (uint8_t)(blk * 37 + i * 13 + 5);
}

/* Key and value of fixture record k. */
static void bad_key(unsigned k, char key[16])
{
	snprintf(key, 16, "bad-key-%02u", k % 1000000u);
}

void bad_val(unsigned k, uint8_t val[BAD_VAL_LEN])
{
	for (unsigned i = 0; i < BAD_VAL_LEN; i++)
		val[i] = (uint8_t)(k * 17 + i + 1);
}

/* One-extent READ/WRITE/ALLOC/FREE of nr blocks at start through o. */
int bad_obj_io(struct clovis_obj *o, enum clovis_obj_opcode opc,
	       uint64_t start, uint64_t nr, void *buf)
{
	struct clovis_extvec ev = {1, &start, &nr};
	struct bad_vec v;
	struct clovis_op *op = NULL;
	size_t len = nr << o->ob_attr.oa_block_shift;
	int rc;

	v.bv_bufs[0] = buf;
	v.bv_lens[0] = len;
	rc = clovis_obj_op(o, opc, &ev, buf != NULL ? bad_vec(&v, 1) : NULL,
			   0, &op);
	return rc != 0 ? rc : bad_run(op);
}

/* Make a handle for id in r and CREATE or OPEN it. */
int bad_obj_make(struct clovis_obj *o, struct clovis_realm *r,
		 struct clovis_id id, enum clovis_entity_opcode opc)
{
	int rc = clovis_obj_init(o, r, &id, NULL);

	return rc != 0 ? rc : bad_ent(&o->ob_entity, opc);
}

int bad_idx_make(struct clovis_idx *ix, struct clovis_realm *r,
		 struct clovis_id id, enum clovis_entity_opcode opc)
{
	int rc = clovis_idx_init(ix, r, &id);

	return rc != 0 ? rc : bad_ent(&ix->in_entity, opc);
}

/* Run an index op over vectors; returns the op's rc. */
int bad_idx_run(struct clovis_idx *ix, enum clovis_idx_opcode opc,
		struct clovis_bufvec *keys, struct clovis_bufvec *vals,
		int32_t *rcs, uint32_t flags)
{
	struct clovis_op *op = NULL;
	int rc = clovis_idx_op(ix, opc, keys, vals, rcs, flags, &op);

	return rc != 0 ? rc : bad_run(op);
}

/* ------------------------------------------------------ store contents */

/* True when bad_obj's blocks and size are as set up. */
static bool bad_obj_same(void)
{
	static uint8_t buf[BAD_NR_BLKS * BAD_BLK];
	uint64_t blk;
	size_t i;

	memset(buf, 0xee, sizeof buf);
	if (bad_obj_io(&bad_obj, CLOVIS_OC_READ, 0, BAD_NR_BLKS, buf) != 0)
		return false;
	for (blk = 0; blk < BAD_NR_BLKS; blk++)
		for (i = 0; i < BAD_BLK; i++)
			if (buf[blk * BAD_BLK + i] != bad_pat(blk, i)) {
				fprintf(stderr, "clovis_bad: block %lu byte %zu"
					" changed\n", (unsigned long)blk, i);
				return false;
			}
	if (bad_ent(&bad_obj.ob_entity, CLOVIS_EO_GETATTR) != 0)
		return false;
	return bad_obj.ob_attr.oa_size_blocks == BAD_NR_BLKS &&
	       bad_obj.ob_attr.oa_size_bytes == bad_size_bytes;
}

/* True when GET of every fixture key returns its value. */
static bool bad_idx_get_same(void)
{
	char keys[BAD_NR_RECS][16];
	uint8_t want[BAD_VAL_LEN];
	struct bad_vec kv, vv;
	int32_t rcs[BAD_NR_RECS];
	bool ok = true;

	for (unsigned k = 0; k < BAD_NR_RECS; k++) {
		bad_key(k, keys[k]);
		kv.bv_bufs[k] = keys[k];
		kv.bv_lens[k] = strlen(keys[k]);
		vv.bv_bufs[k] = NULL;
		vv.bv_lens[k] = 0;
	}
	if (bad_idx_run(&bad_idx, CLOVIS_IC_GET, bad_vec(&kv, BAD_NR_RECS),
			bad_vec(&vv, BAD_NR_RECS), rcs, 0) != 0)
		return false;
	for (unsigned k = 0; k < BAD_NR_RECS; k++) {
		bad_val(k, want);
		ok = ok && rcs[k] == 0 && vv.bv_lens[k] == BAD_VAL_LEN &&
		     vv.bv_bufs[k] != NULL &&
		     memcmp(vv.bv_bufs[k], want, BAD_VAL_LEN) == 0;
		free(rcs[k] == 0 ? vv.bv_bufs[k] : NULL);
	}
	return ok;
}

/* True when a NEXT walk from the start finds exactly the fixture keys. */
static bool bad_idx_walk_same(void)
{
	struct bad_vec kv, vv;
	int32_t rcs[BAD_NR_RECS + 2];
	char want[16];
	bool ok = true;
	unsigned k;

	memset(&kv, 0, sizeof kv);
	memset(&vv, 0, sizeof vv);
	if (bad_idx_run(&bad_idx, CLOVIS_IC_NEXT, bad_vec(&kv, 8),
			bad_vec(&vv, 8), rcs, 0) != 0)
		return false;
	for (k = 0; k < BAD_NR_RECS + 2; k++) {
		if (k < BAD_NR_RECS) {
			bad_key(k, want);
			ok = ok && rcs[k] == 0 &&
			     kv.bv_lens[k] == strlen(want) &&
			     memcmp(kv.bv_bufs[k], want, strlen(want)) == 0;
		} else {
			ok = ok && rcs[k] == -ENOENT;
		}
		if (rcs[k] == 0) {
			free(kv.bv_bufs[k]);
			free(vv.bv_bufs[k]);
		}
	}
	if (bad_ent(&bad_idx.in_entity, CLOVIS_EO_GETATTR) != 0)
		return false;
	return ok && bad_idx.in_attr.ia_nr_records == BAD_NR_RECS;
}

/* List one kind of entity into l; returns 0 or the error. */
static int bad_list_get(int which, struct bad_list *l)
{
	static const enum clovis_entity_type types[3] = {
		CLOVIS_ET_OBJ, CLOVIS_ET_IDX, CLOVIS_ET_CONTAINER};

	l->bl_nr = BAD_LIST_MAX;
	return clovis_entity_list(bad_cl, which < 2 ? bad_realm : NULL,
				  types[which], NULL, l->bl_ids, &l->bl_nr);
}

/* True when the entity lists are as at setup. */
static bool bad_lists_same(void)
{
	struct bad_list now;

	for (int w = 0; w < 3; w++) {
		if (bad_list_get(w, &now) != 0 ||
		    now.bl_nr != bad_lists[w].bl_nr ||
		    memcmp(now.bl_ids, bad_lists[w].bl_ids,
			   now.bl_nr * sizeof now.bl_ids[0]) != 0) {
			fprintf(stderr, "clovis_bad: entity list %d changed\n",
				w);
			return false;
		}
	}
	return true;
}

/* True when everything the fixture stored reads back as stored. */
static bool bad_store_same(void)
{
	return bad_obj_same() && bad_idx_get_same() && bad_idx_walk_same() &&
	       bad_lists_same();
}

/* ------------------------------------------------------------- fixture */

/* Fill conf for a small store in dir, NVRAM device beside the others. */
void bad_conf(struct clovis_conf *conf, const char *dir, uint32_t flags)
{
	memset(conf, 0, sizeof *conf);
	conf->cc_mode = CLOVIS_MODE_EMBEDDED;
	conf->cc_data_dir = dir;
	conf->cc_flags = flags;
	conf->cc_nr_workers = 2;
	conf->cc_dev_size = BAD_DEV_SIZE;
	conf->cc_nvram_dir = dir;
	conf->cc_meta_size = 64ull << 20;
}

/* Create bad_obj and write its known blocks. */
static int bad_setup_obj(void)
{
	static uint8_t buf[BAD_NR_BLKS * BAD_BLK];
	int rc;

	for (uint64_t blk = 0; blk < BAD_NR_BLKS; blk++)
		for (size_t i = 0; i < BAD_BLK; i++)
			buf[blk * BAD_BLK + i] = bad_pat(blk, i);
	rc = bad_obj_make(&bad_obj, bad_realm, (struct clovis_id){BAD_HI, 1},
			  CLOVIS_EO_CREATE);
	if (rc == 0)
		rc = bad_obj_io(&bad_obj, CLOVIS_OC_WRITE, 0, BAD_NR_BLKS, buf);
	if (rc == 0)
		rc = bad_ent(&bad_obj.ob_entity, CLOVIS_EO_GETATTR);
	bad_size_bytes = bad_obj.ob_attr.oa_size_bytes;
	return rc;
}

/* Create bad_idx and PUT its known records. */
static int bad_setup_idx(void)
{
	char keys[BAD_NR_RECS][16];
	uint8_t vals[BAD_NR_RECS][BAD_VAL_LEN];
	struct bad_vec kv, vv;
	int32_t rcs[BAD_NR_RECS];
	int rc;

	for (unsigned k = 0; k < BAD_NR_RECS; k++) {
		bad_key(k, keys[k]);
		bad_val(k, vals[k]);
		kv.bv_bufs[k] = keys[k];
		kv.bv_lens[k] = strlen(keys[k]);
		vv.bv_bufs[k] = vals[k];
		vv.bv_lens[k] = BAD_VAL_LEN;
	}
	rc = bad_idx_make(&bad_idx, bad_realm, (struct clovis_id){BAD_HI, 2},
			  CLOVIS_EO_CREATE);
	if (rc == 0)
		rc = bad_idx_run(&bad_idx, CLOVIS_IC_PUT,
				 bad_vec(&kv, BAD_NR_RECS),
				 bad_vec(&vv, BAD_NR_RECS), rcs, 0);
	for (unsigned k = 0; rc == 0 && k < BAD_NR_RECS; k++)
		rc = rcs[k];
	return rc;
}

/* Create bad_cont with one object in it. */
static int bad_setup_cont(void)
{
	struct clovis_id id = {BAD_HI, 3};
	int rc = clovis_container_init(&bad_cont, bad_cl, &id);

	if (rc == 0)
		rc = bad_ent(&bad_cont.co_entity, CLOVIS_EO_CREATE);
	if (rc == 0)
		rc = bad_obj_make(&bad_cont_obj, &bad_cont.co_realm,
				  (struct clovis_id){BAD_HI, 4},
				  CLOVIS_EO_CREATE);
	return rc;
}

/* Open a store with known contents and remember its entity lists. */
static int bad_suite_init(void)
{
	struct clovis_conf conf;
	const char *dir = ut_tmpdir("clovis_bad");
	int rc;

	if (dir == NULL)
		return -1;
	snprintf(bad_dir, sizeof bad_dir, "%s", dir);
	bad_conf(&conf, bad_dir, CLOVIS_CONF_CREATE);
	rc = clovis_init(&bad_cl, &conf);
	if (rc != 0) {
		fprintf(stderr, "clovis_bad: init %d %s\n", rc, clovis_errmsg());
		return -1;
	}
	bad_realm = clovis_default_realm(bad_cl);
	rc = bad_setup_obj();
	if (rc == 0)
		rc = bad_setup_idx();
	if (rc == 0)
		rc = bad_setup_cont();
	for (int w = 0; rc == 0 && w < 3; w++)
		rc = bad_list_get(w, &bad_lists[w]);
	if (rc != 0)
		fprintf(stderr, "clovis_bad: setup %d %s\n", rc,
			clovis_errmsg());
	return rc == 0 ? 0 : -1;
}

static int bad_suite_fini(void)
{
	clovis_fini(bad_cl);
	bad_cl = NULL;
	return 0;
}

/* ------------------------------------------------- errors, ids, init */

/* clovis_strerror() describes every code, known or not. */
static void bad_strerror(void)
{
	static const int codes[] = {0, -EINVAL, -ENOENT, -CLOVIS_ECORRUPT,
				    -CLOVIS_EVERSION, -CLOVIS_ECHECKSUM,
				    -CLOVIS_ESTATE, -99999, 12345, INT32_MIN};

	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		const char *s = clovis_strerror(codes[i]);

		CU_ASSERT_PTR_NOT_NULL_FATAL(s);
		CU_ASSERT(s[0] != '\0');
	}
	CU_ASSERT(bad_store_same());
}

/* clovis_id_parse() refuses NULLs and malformed text, naming the text. */
static void bad_id_parse(void)
{
	static const char *texts[] = {
		"", "xyz", "12", "1:", ":2", "1:2:3", "1:zz", "g:1",
		"12345678901234567:1", "1:12345678901234567", "0x:1"};
	struct clovis_id id;

	BAD_CALL(clovis_id_parse(NULL, &id), -EINVAL);
	BAD_CALL(clovis_id_parse("1:2", NULL), -EINVAL);
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
		BAD_CALL(clovis_id_parse(texts[i], &id), -EINVAL);
	CU_ASSERT_EQUAL(clovis_id_parse("not-an-id-zq", &id), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "not-an-id-zq"));
}

/* clovis_init() with conf and out sound; one field is spoiled per call. */
static int bad_init_with(struct clovis_conf *conf)
{
	struct clovis *sentinel = (struct clovis *)&bad_marker;
	struct clovis *out = sentinel;
	int rc = clovis_init(&out, conf);

	if (rc == 0) {
		clovis_fini(out);
		return 0;
	}
	return out == sentinel ? rc : -ESRCH;
}

/* clovis_init() refuses NULLs and fields out of range. */
static void bad_init_args(void)
{
	struct clovis_conf conf;
	struct clovis *out = NULL;
	const char *fresh = ut_tmpdir("clovis_bad_init");

	CU_ASSERT_PTR_NOT_NULL_FATAL(fresh);
	BAD_CALL(clovis_init(&out, NULL), -EINVAL);
	CU_ASSERT_PTR_NULL(out);
	bad_conf(&conf, fresh, CLOVIS_CONF_CREATE);
	BAD_CALL(clovis_init(NULL, &conf), -EINVAL);
	conf.cc_data_dir = NULL;
	BAD_CALL(bad_init_with(&conf), -EINVAL);
	bad_conf(&conf, fresh, CLOVIS_CONF_CREATE);
	conf.cc_mode = (enum clovis_mode)7;
	BAD_CALL(bad_init_with(&conf), -EINVAL);
	bad_conf(&conf, fresh, CLOVIS_CONF_CREATE | 0x80u);
	BAD_CALL(bad_init_with(&conf), -EINVAL);
	bad_conf(&conf, fresh, CLOVIS_CONF_CREATE);
	conf.cc_nr_workers = UINT32_MAX;
	BAD_CALL(bad_init_with(&conf), -EINVAL);
	bad_conf(&conf, fresh, CLOVIS_CONF_CREATE);
	conf.cc_dev_size = 1;
	BAD_CALL(bad_init_with(&conf), -EINVAL);
	bad_conf(&conf, fresh, CLOVIS_CONF_CREATE);
	conf.cc_meta_size = 1;
	BAD_CALL(bad_init_with(&conf), -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* clovis_init() without CREATE on a missing or empty directory. */
static void bad_init_missing(void)
{
	struct clovis_conf conf;
	char path[600];
	const char *empty = ut_tmpdir("clovis_bad_empty");
	int fd;

	if (ut_cluster_skip("init_missing", "a missing local store directory means nothing to a cluster client"))
		return;
	CU_ASSERT_PTR_NOT_NULL_FATAL(empty);
	snprintf(path, sizeof path, "%s/does-not-exist", bad_dir);
	bad_conf(&conf, path, 0);
	BAD_CALL(bad_init_with(&conf), -ENOENT);
	bad_conf(&conf, empty, 0);
	BAD_CALL(bad_init_with(&conf), -ENOENT);
	snprintf(path, sizeof path, "%s/plain-file", empty);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	CU_ASSERT(fd >= 0);
	close(fd);
	bad_conf(&conf, path, CLOVIS_CONF_CREATE);
	bad_mark();
	CU_ASSERT(bad_init_with(&conf) < 0);
	CU_ASSERT(bad_msg_fresh());
	CU_ASSERT(bad_store_same());
}

/* ------------------------------------------------------ entity handles */

/* clovis_default_realm() and clovis_container_init() with bad input. */
static void bad_container_init(void)
{
	struct clovis_container c;
	struct clovis_id id = bad_tmp_id();
	struct clovis_id resv = {0, 7}, zero = {0, 0};
	struct clovis_id dflt = CLOVIS_ID_DEFAULT_CONTAINER;

	CU_ASSERT_PTR_NULL(clovis_default_realm(NULL));
	BAD_CALL(clovis_container_init(NULL, bad_cl, &id), -EINVAL);
	BAD_CALL(clovis_container_init(&c, NULL, &id), -EINVAL);
	BAD_CALL(clovis_container_init(&c, bad_cl, NULL), -EINVAL);
	BAD_CALL(clovis_container_init(&c, bad_cl, &resv), -EINVAL);
	BAD_CALL(clovis_container_init(&c, bad_cl, &zero), -EINVAL);
	CU_ASSERT_EQUAL(clovis_container_init(&c, bad_cl, &dflt), 0);
	CU_ASSERT(bad_store_same());
}

/* clovis_obj_init() with NULLs, reserved ids and attributes out of range. */
static void bad_obj_init(void)
{
	static const struct clovis_id resv[] = {{0, 0}, {0, 1}, {0, 1023}};
	struct clovis_obj o;
	struct clovis_id id = bad_tmp_id();
	struct clovis_obj_attr a = {.oa_block_shift = 12};

	BAD_CALL(clovis_obj_init(NULL, bad_realm, &id, NULL), -EINVAL);
	BAD_CALL(clovis_obj_init(&o, NULL, &id, NULL), -EINVAL);
	BAD_CALL(clovis_obj_init(&o, bad_realm, NULL, NULL), -EINVAL);
	for (size_t i = 0; i < 3; i++)
		BAD_CALL(clovis_obj_init(&o, bad_realm, &resv[i], NULL),
			 -EINVAL);
	a.oa_block_shift = 8;
	BAD_CALL(clovis_obj_init(&o, bad_realm, &id, &a), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "block shift 8 outside "
				      "9..26"));
	a.oa_block_shift = 27;
	BAD_CALL(clovis_obj_init(&o, bad_realm, &id, &a), -EINVAL);
	/* 0 is the documented default (clovis.h): 12, 4 KiB blocks */
	a.oa_block_shift = 0;
	CU_ASSERT_EQUAL(clovis_obj_init(&o, bad_realm, &id, &a), 0);
	CU_ASSERT_EQUAL(o.ob_attr.oa_block_shift, 12);
	a.oa_block_shift = 12;
	a.oa_layout = 99;
	BAD_CALL(clovis_obj_init(&o, bad_realm, &id, &a), -EINVAL);
	a.oa_layout = CLOVIS_LAYOUT_PLAIN;
	a.oa_tier = CLOVIS_TIER_NR;
	BAD_CALL(clovis_obj_init(&o, bad_realm, &id, &a), -EINVAL);
	a.oa_tier = 99;
	BAD_CALL(clovis_obj_init(&o, bad_realm, &id, &a), -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* clovis_idx_init() with NULLs and reserved ids. */
static void bad_idx_init(void)
{
	struct clovis_idx ix;
	struct clovis_id id = bad_tmp_id(), resv = {0, 1023}, one = {0, 1};

	BAD_CALL(clovis_idx_init(NULL, bad_realm, &id), -EINVAL);
	BAD_CALL(clovis_idx_init(&ix, NULL, &id), -EINVAL);
	BAD_CALL(clovis_idx_init(&ix, bad_realm, NULL), -EINVAL);
	BAD_CALL(clovis_idx_init(&ix, bad_realm, &resv), -EINVAL);
	BAD_CALL(clovis_idx_init(&ix, bad_realm, &one), -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* clovis_entity_op() with NULLs, bad opcodes and garbage handles. */
static void bad_entity_op(void)
{
	struct clovis_obj junk;

	BAD_CALL(clovis_entity_op(NULL, CLOVIS_EO_OPEN, &bad_op), -EINVAL);
	BAD_CALL(clovis_entity_op(&bad_obj.ob_entity, CLOVIS_EO_OPEN, NULL),
		 -EINVAL);
	BAD_CALL(clovis_entity_op(&bad_obj.ob_entity,
				  (enum clovis_entity_opcode)0, &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_entity_op(&bad_obj.ob_entity,
				  (enum clovis_entity_opcode)6, &bad_op),
		 -EINVAL);
	memset(&junk, 0, sizeof junk);
	BAD_CALL(clovis_entity_op(&junk.ob_entity, CLOVIS_EO_OPEN, &bad_op),
		 -EINVAL);
	memset(&junk, 0xa5, sizeof junk);
	BAD_CALL(clovis_entity_op(&junk.ob_entity, CLOVIS_EO_DELETE, &bad_op),
		 -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* CREATE of an id in use fails with -EEXIST, whatever its type. */
static void bad_create_existing(void)
{
	struct clovis_obj o;
	struct clovis_idx ix;
	struct clovis_container c;

	CU_ASSERT_EQUAL(clovis_obj_init(&o, bad_realm,
					&bad_obj.ob_entity.en_id, NULL), 0);
	CU_ASSERT(bad_ent_fails(&o.ob_entity, CLOVIS_EO_CREATE, -EEXIST));
	CU_ASSERT_EQUAL(clovis_obj_init(&o, bad_realm,
					&bad_idx.in_entity.en_id, NULL), 0);
	CU_ASSERT(bad_ent_fails(&o.ob_entity, CLOVIS_EO_CREATE, -EEXIST));
	CU_ASSERT_EQUAL(clovis_idx_init(&ix, bad_realm,
					&bad_idx.in_entity.en_id), 0);
	CU_ASSERT(bad_ent_fails(&ix.in_entity, CLOVIS_EO_CREATE, -EEXIST));
	CU_ASSERT_EQUAL(clovis_idx_init(&ix, bad_realm,
					&bad_obj.ob_entity.en_id), 0);
	CU_ASSERT(bad_ent_fails(&ix.in_entity, CLOVIS_EO_CREATE, -EEXIST));
	CU_ASSERT_EQUAL(clovis_container_init(&c, bad_cl,
					      &bad_cont.co_entity.en_id), 0);
	CU_ASSERT(bad_ent_fails(&c.co_entity, CLOVIS_EO_CREATE, -EEXIST));
	CU_ASSERT(bad_store_same());
}

/* clovis_op_sync() of a failing op leaves the op's reason in
 * clovis_errmsg(), naming the entity (the op itself is freed). */
static void bad_sync_errmsg(void)
{
	struct clovis_obj o;
	struct clovis_op *op = NULL;
	char idb[CLOVIS_ID_STR_LEN];

	clovis_id_format(&bad_obj.ob_entity.en_id, idb);
	CU_ASSERT_EQUAL_FATAL(clovis_obj_init(&o, bad_realm,
					      &bad_obj.ob_entity.en_id, NULL),
			      0);
	CU_ASSERT_EQUAL_FATAL(clovis_entity_op(&o.ob_entity, CLOVIS_EO_CREATE,
					       &op), 0);
	CU_ASSERT_EQUAL(clovis_op_sync(op), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), idb));
	CU_ASSERT(bad_store_same());
}

/* OPEN of a missing id, or of an id of another type, fails -ENOENT. */
static void bad_open_missing(void)
{
	struct clovis_obj o;
	struct clovis_idx ix;
	struct clovis_container c;
	struct clovis_id id = bad_tmp_id();

	CU_ASSERT_EQUAL(clovis_obj_init(&o, bad_realm, &id, NULL), 0);
	CU_ASSERT(bad_ent_fails(&o.ob_entity, CLOVIS_EO_OPEN, -ENOENT));
	CU_ASSERT(bad_ent_fails(&o.ob_entity, CLOVIS_EO_DELETE, -ENOENT));
	CU_ASSERT_EQUAL(clovis_idx_init(&ix, bad_realm, &id), 0);
	CU_ASSERT(bad_ent_fails(&ix.in_entity, CLOVIS_EO_OPEN, -ENOENT));
	CU_ASSERT_EQUAL(clovis_container_init(&c, bad_cl, &id), 0);
	CU_ASSERT(bad_ent_fails(&c.co_entity, CLOVIS_EO_OPEN, -ENOENT));
	CU_ASSERT_EQUAL(clovis_obj_init(&o, bad_realm,
					&bad_idx.in_entity.en_id, NULL), 0);
	CU_ASSERT(bad_ent_fails(&o.ob_entity, CLOVIS_EO_OPEN, -ENOENT));
	CU_ASSERT_EQUAL(clovis_idx_init(&ix, bad_realm,
					&bad_obj.ob_entity.en_id), 0);
	CU_ASSERT(bad_ent_fails(&ix.in_entity, CLOVIS_EO_OPEN, -ENOENT));
	CU_ASSERT(bad_store_same());
}

/* CREATE inside a container that does not exist fails -ENOENT. */
static void bad_create_no_container(void)
{
	struct clovis_container c;
	struct clovis_obj o;
	struct clovis_idx ix;
	struct clovis_id cid = bad_tmp_id(), id = bad_tmp_id();

	CU_ASSERT_EQUAL_FATAL(clovis_container_init(&c, bad_cl, &cid), 0);
	CU_ASSERT_EQUAL(clovis_obj_init(&o, &c.co_realm, &id, NULL), 0);
	CU_ASSERT(bad_ent_fails(&o.ob_entity, CLOVIS_EO_CREATE, -ENOENT));
	CU_ASSERT_EQUAL(clovis_idx_init(&ix, &c.co_realm, &id), 0);
	CU_ASSERT(bad_ent_fails(&ix.in_entity, CLOVIS_EO_CREATE, -ENOENT));
	CU_ASSERT(bad_store_same());
}

/* The default container cannot be deleted, a full one neither. */
static void bad_delete_container(void)
{
	struct clovis_container d;
	struct clovis_id dflt = CLOVIS_ID_DEFAULT_CONTAINER;

	CU_ASSERT_EQUAL_FATAL(clovis_container_init(&d, bad_cl, &dflt), 0);
	CU_ASSERT(bad_ent_fails(&d.co_entity, CLOVIS_EO_DELETE, -EPERM));
	CU_ASSERT(bad_ent_fails(&bad_cont.co_entity, CLOVIS_EO_DELETE,
				-ENOTEMPTY));
	CU_ASSERT(bad_ent_fails(&bad_cont.co_entity, CLOVIS_EO_DELETE,
				-ENOTEMPTY));
	CU_ASSERT_EQUAL(bad_ent(&bad_cont_obj.ob_entity, CLOVIS_EO_GETATTR),
			0);
	CU_ASSERT(bad_store_same());
}

/*
 * SETATTR that must be refused with -EINVAL, either by clovis_entity_op()
 * (with a fresh message) or by the op at run time.
 */
static bool bad_setattr_refused(struct clovis_entity *e)
{
	struct clovis_op *op = NULL;
	int rc;

	bad_mark();
	rc = clovis_entity_op(e, CLOVIS_EO_SETATTR, &op);
	if (rc != 0)
		return rc == -EINVAL && bad_msg_fresh();
	return bad_run_fails(op, -EINVAL);
}

/*
 * SETATTR on an index or container, or with a size past CLOVIS_BLOCK_NR_MAX
 * blocks' worth.  The size is set back afterwards, so that a SETATTR taken
 * by mistake does not spoil the later cases.
 */
static void bad_setattr(void)
{
	struct clovis_obj o = bad_obj;

	CU_ASSERT(bad_setattr_refused(&bad_idx.in_entity));
	CU_ASSERT(bad_setattr_refused(&bad_cont.co_entity));
	bad_obj.ob_attr.oa_size_bytes =
		(CLOVIS_BLOCK_NR_MAX << BAD_SHIFT) + 1;
	CU_ASSERT(bad_setattr_refused(&bad_obj.ob_entity));
	bad_obj.ob_attr.oa_size_bytes = UINT64_MAX;
	CU_ASSERT(bad_setattr_refused(&bad_obj.ob_entity));
	bad_obj.ob_attr = o.ob_attr;
	bad_obj.ob_attr.oa_size_bytes = bad_size_bytes;
	CU_ASSERT_EQUAL(bad_ent(&bad_obj.ob_entity, CLOVIS_EO_SETATTR), 0);
	CU_ASSERT(bad_store_same());
}

/* ------------------------------------------------------------ obj ops */

/* An extent vector of up to 8 extents given as (start, nr) pairs. */
struct bad_ext {
	uint64_t be_start[8];
	uint64_t be_nr[8];
	struct clovis_extvec be_vec;
};

static struct clovis_extvec *bad_ext(struct bad_ext *e, uint32_t nr,
				     const uint64_t *pairs)
{
	for (uint32_t i = 0; i < nr; i++) {
		e->be_start[i] = pairs[2 * i];
		e->be_nr[i] = pairs[2 * i + 1];
	}
	e->be_vec.ev_nr = nr;
	e->be_vec.ev_start_blk = e->be_start;
	e->be_vec.ev_nr_blks = e->be_nr;
	return &e->be_vec;
}

/* Buffers of the obj op cases: BAD_NR_BLKS blocks' worth, all 0xff. */
static uint8_t bad_buf[BAD_NR_BLKS * BAD_BLK + 8];

/* A bufvec of nr buffers over bad_buf with the given lengths. */
static struct clovis_bufvec *bad_bufs(struct bad_vec *v, uint32_t nr,
				      size_t len0, size_t len1)
{
	v->bv_bufs[0] = bad_buf;
	v->bv_bufs[1] = bad_buf + BAD_BLK;
	v->bv_lens[0] = len0;
	v->bv_lens[1] = len1;
	memset(bad_buf, 0xff, sizeof bad_buf);
	return bad_vec(v, nr);
}

/* clovis_obj_op() with NULLs, bad opcodes, flags and data/opcode pairs. */
static void bad_obj_op_args(void)
{
	static const uint64_t one[] = {0, 1};
	struct bad_ext e;
	struct bad_vec v;
	struct clovis_extvec *ev = bad_ext(&e, 1, one);

	BAD_CALL(clovis_obj_op(NULL, CLOVIS_OC_WRITE, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_WRITE, NULL,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_WRITE, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, NULL),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, (enum clovis_obj_opcode)0, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, (enum clovis_obj_opcode)5, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_WRITE, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 2, &bad_op),
		 -EINVAL);
	/* CLOVIS_OF_HERE is for WRITE only */
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_READ, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), CLOVIS_OF_HERE,
			       &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_READ, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0x80000000u,
			       &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_WRITE, ev, NULL, 0,
			       &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_READ, ev, NULL, 0,
			       &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_FREE, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_ALLOC, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	CU_ASSERT(bad_store_same());
}

/*
 * Bytes the extents of pairs cover when that fits bad_buf, so that only the
 * extents are at fault; else two blocks.
 */
static size_t bad_ext_len(uint32_t nr, const uint64_t *pairs)
{
	uint64_t tot = 0;

	for (uint32_t i = 0; i < nr; i++) {
		if (pairs[2 * i + 1] > BAD_NR_BLKS)
			return 2 * BAD_BLK;
		tot += pairs[2 * i + 1];
	}
	return tot <= BAD_NR_BLKS && tot > 0 ? tot * BAD_BLK : 2 * BAD_BLK;
}

/* Check that a WRITE over the extents in pairs is refused with want. */
#define BAD_EXT(nr, want, ...)                                          \
	do {                                                            \
		static const uint64_t p_[] = {__VA_ARGS__};             \
		struct bad_ext e_;                                      \
		BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_WRITE,       \
				       bad_ext(&e_, (nr), p_),          \
				       bad_bufs(&v, 1,                  \
						bad_ext_len((nr), p_), 0), \
				       0, &bad_op),                     \
			 (want));                                       \
	} while (0)

/* Empty, zero-length, overlapping and out-of-range extents. */
static void bad_obj_extents(void)
{
	struct clovis_extvec ev = {1, NULL, NULL};
	struct bad_vec v;
	const uint64_t top = CLOVIS_BLOCK_NR_MAX;

	BAD_EXT(0, -EINVAL, 0, 2);
	BAD_EXT(2, -EINVAL, 0, 2, 5, 0);
	BAD_EXT(2, -EINVAL, 0, 0, 5, 2);
	BAD_EXT(2, -EINVAL, 0, 1, 0, 1);
	BAD_EXT(2, -EINVAL, 4, 1, 3, 2);
	BAD_EXT(2, -EINVAL, 3, 1, 2, 3);
	BAD_EXT(1, -EINVAL, top - 1, 2);
	BAD_EXT(1, -EINVAL, top, 2);
	BAD_EXT(1, -EINVAL, UINT64_MAX, 2);
	BAD_EXT(1, -EINVAL, 1, UINT64_MAX);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_WRITE, &ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_FREE,
			       bad_ext(&(struct bad_ext){0}, 1,
				       (const uint64_t[]){top, 1}),
			       NULL, 0, &bad_op),
		 -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* Buffer lengths not whole blocks or not adding up to the extents. */
static void bad_obj_buffers(void)
{
	static const uint64_t two[] = {0, 2};
	struct bad_ext e;
	struct clovis_extvec *ev = bad_ext(&e, 1, two);
	struct bad_vec v;
	const enum clovis_obj_opcode opc[2] = {CLOVIS_OC_WRITE,
					       CLOVIS_OC_READ};

	for (int i = 0; i < 2; i++) {
		BAD_CALL(clovis_obj_op(&bad_obj, opc[i], ev,
				       bad_bufs(&v, 2, BAD_BLK - 1, BAD_BLK + 1),
				       0, &bad_op), -EINVAL);
		BAD_CALL(clovis_obj_op(&bad_obj, opc[i], ev,
				       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
			 -EINVAL);
		BAD_CALL(clovis_obj_op(&bad_obj, opc[i], ev,
				       bad_bufs(&v, 2, 2 * BAD_BLK, BAD_BLK),
				       0, &bad_op), -EINVAL);
		BAD_CALL(clovis_obj_op(&bad_obj, opc[i], ev,
				       bad_bufs(&v, 0, 0, 0), 0, &bad_op),
			 -EINVAL);
		BAD_CALL(clovis_obj_op(&bad_obj, opc[i], ev,
				       bad_bufs(&v, 2, 2 * BAD_BLK, 0), 0,
				       &bad_op), -EINVAL);
		bad_bufs(&v, 2, BAD_BLK, BAD_BLK);
		v.bv_bufs[1] = NULL;
		BAD_CALL(clovis_obj_op(&bad_obj, opc[i], ev, &v.bv_vec, 0,
				       &bad_op), -EINVAL);
		v.bv_vec.bv_buf = NULL;
		BAD_CALL(clovis_obj_op(&bad_obj, opc[i], ev, &v.bv_vec, 0,
				       &bad_op), -EINVAL);
	}
	CU_ASSERT(bad_store_same());
}

/* More than CLOVIS_VEC_MAX extents or buffers, or too many bytes. */
static void bad_obj_too_big(void)
{
	const uint32_t n = CLOVIS_VEC_MAX + 1;
	const uint32_t mib = 257;
	uint64_t *starts = calloc(n, sizeof *starts);
	uint64_t *nrs = calloc(n, sizeof *nrs);
	void **bufs = calloc(n, sizeof *bufs);
	size_t *lens = calloc(n, sizeof *lens);
	uint8_t *big = malloc((size_t)n * BAD_BLK);
	struct clovis_extvec ev = {n, starts, nrs};
	struct clovis_bufvec bv = {1, bufs, lens};

	CU_ASSERT_FATAL(starts && nrs && bufs && lens && big);
	for (uint32_t i = 0; i < n; i++) {
		starts[i] = 2 * i;
		nrs[i] = 1;
		bufs[i] = big;
		lens[i] = BAD_BLK;
	}
	bufs[0] = big;
	lens[0] = (size_t)n * BAD_BLK;
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_WRITE, &ev, &bv, 0,
			       &bad_op), -E2BIG);
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_FREE, &ev, NULL, 0,
			       &bad_op), -E2BIG);
	ev.ev_nr = 1;
	nrs[0] = n;
	bv.bv_nr = n;
	lens[0] = BAD_BLK;
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_READ, &ev, &bv, 0,
			       &bad_op), -E2BIG);
	nrs[0] = (uint64_t)mib << (20 - BAD_SHIFT);
	bv.bv_nr = mib;
	for (uint32_t i = 0; i < mib; i++)
		lens[i] = 1u << 20;
	BAD_CALL(clovis_obj_op(&bad_obj, CLOVIS_OC_READ, &ev, &bv, 0,
			       &bad_op), -E2BIG);
	free(starts);
	free(nrs);
	free(bufs);
	free(lens);
	free(big);
	CU_ASSERT(bad_store_same());
}

/* I/O through handles that are not open: fresh, zeroed, or deleted. */
static void bad_obj_not_open(void)
{
	static const uint64_t one[] = {0, 1};
	struct clovis_obj o;
	struct bad_ext e;
	struct bad_vec v;
	struct clovis_extvec *ev = bad_ext(&e, 1, one);

	CU_ASSERT_EQUAL(clovis_obj_init(&o, bad_realm,
					&bad_obj.ob_entity.en_id, NULL), 0);
	BAD_CALL(clovis_obj_op(&o, CLOVIS_OC_WRITE, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&o, CLOVIS_OC_READ, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	BAD_CALL(clovis_obj_op(&o, CLOVIS_OC_FREE, ev, NULL, 0, &bad_op),
		 -EINVAL);
	memset(&o, 0, sizeof o);
	BAD_CALL(clovis_obj_op(&o, CLOVIS_OC_READ, ev,
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* Every op on an object deleted through another handle fails -ENOENT. */
static void bad_obj_deleted(void)
{
	static uint8_t buf[BAD_BLK];
	struct clovis_obj h1, h2;
	struct clovis_id id = bad_tmp_id();
	static const uint64_t one[] = {0, 1};
	struct bad_ext e;
	struct bad_vec v;
	struct clovis_op *op = NULL;

	CU_ASSERT_EQUAL_FATAL(bad_obj_make(&h1, bad_realm, id,
					   CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL_FATAL(bad_obj_make(&h2, bad_realm, id,
					   CLOVIS_EO_OPEN), 0);
	CU_ASSERT_EQUAL(bad_obj_io(&h2, CLOVIS_OC_WRITE, 0, 1, buf), 0);
	CU_ASSERT_EQUAL_FATAL(bad_ent(&h1.ob_entity, CLOVIS_EO_DELETE), 0);
	for (int opc = CLOVIS_OC_READ; opc <= CLOVIS_OC_FREE; opc++) {
		bool data = opc == CLOVIS_OC_READ || opc == CLOVIS_OC_WRITE;

		op = NULL;
		CU_ASSERT_EQUAL(clovis_obj_op(&h2, (enum clovis_obj_opcode)opc,
					      bad_ext(&e, 1, one),
					      data ? bad_bufs(&v, 1, BAD_BLK, 0)
						   : NULL, 0, &op), 0);
		if (op != NULL)
			CU_ASSERT(bad_run_fails(op, -ENOENT));
	}
	CU_ASSERT(bad_ent_fails(&h2.ob_entity, CLOVIS_EO_GETATTR, -ENOENT));
	CU_ASSERT(bad_ent_fails(&h2.ob_entity, CLOVIS_EO_DELETE, -ENOENT));
	BAD_CALL(clovis_obj_op(&h1, CLOVIS_OC_READ, bad_ext(&e, 1, one),
			       bad_bufs(&v, 1, BAD_BLK, 0), 0, &bad_op),
		 -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* ------------------------------------------------------------ idx ops */

/* Fill r with nr records: existing fixture keys first (nr_old of them),
 * then new keys "bad-new-K". */
void bad_recs(struct bad_recs *r, uint32_t nr, uint32_t nr_old)
{
	for (uint32_t k = 0; k < nr; k++) {
		if (k < nr_old)
			bad_key(k, r->br_keys[k]);
		else
			snprintf(r->br_keys[k], 16, "bad-new-%u", k % 1000000u);
		memset(r->br_vals[k], 0x5a, BAD_VAL_LEN);
		r->br_kv.bv_bufs[k] = r->br_keys[k];
		r->br_kv.bv_lens[k] = strlen(r->br_keys[k]);
		r->br_vv.bv_bufs[k] = r->br_vals[k];
		r->br_vv.bv_lens[k] = BAD_VAL_LEN;
		r->br_rcs[k] = 1;
	}
	bad_vec(&r->br_kv, nr);
	bad_vec(&r->br_vv, nr);
}

/* Check that an idx op over r with the given pieces is refused with want. */
#define BAD_IDX(ix, opc, keys, vals, rcs, flags, want)                  \
	BAD_CALL(clovis_idx_op((ix), (opc), (keys), (vals), (rcs), (flags), \
			       &bad_op), (want))

/* NULL and missing vectors, and vectors of mismatched sizes. */
static void bad_idx_op_vectors(void)
{
	struct bad_recs r;
	struct clovis_bufvec *k = &r.br_kv.bv_vec, *v = &r.br_vv.bv_vec;

	bad_recs(&r, 2, 0);
	BAD_IDX(NULL, CLOVIS_IC_PUT, k, v, r.br_rcs, 0, -EINVAL);
	BAD_IDX(&bad_idx, (enum clovis_idx_opcode)0, k, v, r.br_rcs, 0,
		-EINVAL);
	BAD_IDX(&bad_idx, (enum clovis_idx_opcode)5, k, v, r.br_rcs, 0,
		-EINVAL);
	BAD_CALL(clovis_idx_op(&bad_idx, CLOVIS_IC_PUT, k, v, r.br_rcs, 0,
			       NULL), -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, NULL, v, r.br_rcs, 0, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, v, NULL, 0, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, NULL, r.br_rcs, 0, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_GET, k, NULL, r.br_rcs, 0, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_NEXT, k, NULL, r.br_rcs, 0, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_DEL, k, v, r.br_rcs, 0, -EINVAL);
	v->bv_nr = 1;
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, v, r.br_rcs, 0, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_GET, k, v, r.br_rcs, 0, -EINVAL);
	v->bv_nr = 2;
	k->bv_nr = 0;
	v->bv_nr = 0;
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, v, r.br_rcs, 0, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_DEL, k, NULL, r.br_rcs, 0, -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* NULL buffers with lengths, NULL arrays, and flags not allowed. */
static void bad_idx_op_buffers(void)
{
	struct bad_recs r;
	struct clovis_bufvec *k = &r.br_kv.bv_vec, *v = &r.br_vv.bv_vec;

	bad_recs(&r, 2, 0);
	r.br_kv.bv_bufs[1] = NULL;
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, v, r.br_rcs, 0, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_DEL, k, NULL, r.br_rcs, 0, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_GET, k, v, r.br_rcs, 0, -EINVAL);
	bad_recs(&r, 2, 0);
	r.br_vv.bv_bufs[0] = NULL;
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, v, r.br_rcs, 0, -EINVAL);
	bad_recs(&r, 2, 0);
	k->bv_buf = NULL;
	BAD_IDX(&bad_idx, CLOVIS_IC_DEL, k, NULL, r.br_rcs, 0, -EINVAL);
	bad_recs(&r, 2, 0);
	k->bv_len = NULL;
	BAD_IDX(&bad_idx, CLOVIS_IC_DEL, k, NULL, r.br_rcs, 0, -EINVAL);
	bad_recs(&r, 2, 0);
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, v, r.br_rcs,
		CLOVIS_IF_EXCLUDE_START_KEY, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_GET, k, v, r.br_rcs, CLOVIS_IF_OVERWRITE,
		-EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_DEL, k, NULL, r.br_rcs,
		CLOVIS_IF_OVERWRITE, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, v, r.br_rcs, 1u << 9, -EINVAL);
	memset(&r.br_kv.bv_bufs, 0, sizeof r.br_kv.bv_bufs);
	memset(&r.br_kv.bv_lens, 0, sizeof r.br_kv.bv_lens);
	BAD_IDX(&bad_idx, CLOVIS_IC_NEXT, k, v, r.br_rcs, CLOVIS_IF_OVERWRITE,
		-EINVAL);
	CU_ASSERT(bad_store_same());
}

/* NEXT into caller buffers (CLOVIS_IF_CALLER_BUFS): every key and value
 * buffer must be given; the flag is NEXT's only; the message names the
 * slot. */
static void bad_idx_next_caller_bufs(void)
{
	struct bad_recs r;
	struct clovis_bufvec *k = &r.br_kv.bv_vec, *v = &r.br_vv.bv_vec;

	bad_recs(&r, 3, 0);
	r.br_kv.bv_bufs[0] = NULL;   /* no slot-0 buffer for record 0's key */
	r.br_kv.bv_lens[0] = 0;
	BAD_IDX(&bad_idx, CLOVIS_IC_NEXT, k, v, r.br_rcs,
		CLOVIS_IF_CALLER_BUFS, -EINVAL);
	bad_recs(&r, 3, 0);
	r.br_kv.bv_bufs[2] = NULL;
	r.br_kv.bv_lens[2] = 0;
	BAD_CALL(clovis_idx_op(&bad_idx, CLOVIS_IC_NEXT, k, v, r.br_rcs,
			       CLOVIS_IF_CALLER_BUFS, &bad_op), -EINVAL);
	bad_recs(&r, 3, 0);
	r.br_vv.bv_bufs[1] = NULL;
	r.br_vv.bv_lens[1] = 0;
	bad_mark();
	CU_ASSERT_EQUAL(clovis_idx_op(&bad_idx, CLOVIS_IC_NEXT, k, v, r.br_rcs,
				      CLOVIS_IF_CALLER_BUFS |
				      CLOVIS_IF_EXCLUDE_START_KEY, &bad_op),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(clovis_errmsg(), "record 1: NULL value"));
	bad_drop();
	bad_recs(&r, 3, 0);
	BAD_IDX(&bad_idx, CLOVIS_IC_GET, k, v, r.br_rcs,
		CLOVIS_IF_CALLER_BUFS, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, v, r.br_rcs,
		CLOVIS_IF_CALLER_BUFS, -EINVAL);
	BAD_IDX(&bad_idx, CLOVIS_IC_DEL, k, NULL, r.br_rcs,
		CLOVIS_IF_CALLER_BUFS, -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* Keys past CLOVIS_KEY_MAX, values past CLOVIS_VAL_MAX, too many records. */
static void bad_idx_too_big(void)
{
	const uint32_t n = CLOVIS_VEC_MAX + 1;
	struct bad_recs r;
	struct clovis_bufvec *k = &r.br_kv.bv_vec, *v = &r.br_vv.bv_vec;
	uint8_t *big = calloc(1, CLOVIS_VAL_MAX + 1);
	void **bufs = calloc(n, sizeof *bufs);
	size_t *lens = calloc(n, sizeof *lens);
	int32_t *rcs = calloc(n, sizeof *rcs);
	struct clovis_bufvec many = {n, bufs, lens};

	CU_ASSERT_FATAL(big && bufs && lens && rcs);
	bad_recs(&r, 2, 0);
	r.br_kv.bv_bufs[1] = big;
	r.br_kv.bv_lens[1] = CLOVIS_KEY_MAX + 1;
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, v, r.br_rcs, 0, -E2BIG);
	BAD_IDX(&bad_idx, CLOVIS_IC_GET, k, v, r.br_rcs, 0, -E2BIG);
	BAD_IDX(&bad_idx, CLOVIS_IC_DEL, k, NULL, r.br_rcs, 0, -E2BIG);
	bad_recs(&r, 2, 0);
	r.br_vv.bv_bufs[1] = big;
	r.br_vv.bv_lens[1] = CLOVIS_VAL_MAX + 1;
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, k, v, r.br_rcs, 0, -E2BIG);
	for (uint32_t i = 0; i < n; i++) {
		bufs[i] = big;
		lens[i] = 4;
	}
	BAD_IDX(&bad_idx, CLOVIS_IC_DEL, &many, NULL, rcs, 0, -E2BIG);
	BAD_IDX(&bad_idx, CLOVIS_IC_PUT, &many, &many, rcs,
		CLOVIS_IF_OVERWRITE, -E2BIG);
	free(big);
	free(bufs);
	free(lens);
	free(rcs);
	CU_ASSERT(bad_store_same());
}

/* Record ops through handles that are not open. */
static void bad_idx_not_open(void)
{
	struct clovis_idx ix;
	struct bad_recs r;

	bad_recs(&r, 2, 2);
	CU_ASSERT_EQUAL(clovis_idx_init(&ix, bad_realm,
					&bad_idx.in_entity.en_id), 0);
	BAD_IDX(&ix, CLOVIS_IC_GET, &r.br_kv.bv_vec, &r.br_vv.bv_vec,
		r.br_rcs, 0, -EINVAL);
	BAD_IDX(&ix, CLOVIS_IC_DEL, &r.br_kv.bv_vec, NULL, r.br_rcs, 0,
		-EINVAL);
	memset(&ix, 0, sizeof ix);
	BAD_IDX(&ix, CLOVIS_IC_PUT, &r.br_kv.bv_vec, &r.br_vv.bv_vec,
		r.br_rcs, CLOVIS_IF_OVERWRITE, -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* Check that an idx op over r is accepted and fails at run time -ENOENT. */
static bool bad_idx_fails(struct clovis_idx *ix, enum clovis_idx_opcode opc,
			  struct bad_recs *r)
{
	struct clovis_op *op = NULL;
	bool novals = opc == CLOVIS_IC_DEL;

	if (clovis_idx_op(ix, opc, &r->br_kv.bv_vec,
			  novals ? NULL : &r->br_vv.bv_vec, r->br_rcs, 0,
			  &op) != 0)
		return false;
	return bad_run_fails(op, -ENOENT);
}

/* Every op on an index deleted through another handle fails -ENOENT. */
static void bad_idx_deleted(void)
{
	struct clovis_idx h1, h2;
	struct clovis_id id = bad_tmp_id();
	struct bad_recs r;

	CU_ASSERT_EQUAL_FATAL(bad_idx_make(&h1, bad_realm, id,
					   CLOVIS_EO_CREATE), 0);
	CU_ASSERT_EQUAL_FATAL(bad_idx_make(&h2, bad_realm, id,
					   CLOVIS_EO_OPEN), 0);
	bad_recs(&r, 2, 0);
	CU_ASSERT_EQUAL(bad_idx_run(&h2, CLOVIS_IC_PUT, &r.br_kv.bv_vec,
				    &r.br_vv.bv_vec, r.br_rcs, 0), 0);
	CU_ASSERT_EQUAL_FATAL(bad_ent(&h1.in_entity, CLOVIS_EO_DELETE), 0);
	CU_ASSERT(bad_idx_fails(&h2, CLOVIS_IC_PUT, &r));
	CU_ASSERT(bad_idx_fails(&h2, CLOVIS_IC_GET, &r));
	CU_ASSERT(bad_idx_fails(&h2, CLOVIS_IC_DEL, &r));
	CU_ASSERT(bad_idx_fails(&h2, CLOVIS_IC_NEXT, &r));
	CU_ASSERT(bad_ent_fails(&h2.in_entity, CLOVIS_EO_GETATTR, -ENOENT));
	CU_ASSERT(bad_ent_fails(&h2.in_entity, CLOVIS_EO_DELETE, -ENOENT));
	BAD_IDX(&h1, CLOVIS_IC_GET, &r.br_kv.bv_vec, &r.br_vv.bv_vec,
		r.br_rcs, 0, -EINVAL);
	CU_ASSERT(bad_store_same());
}

/* GET of a missing key: -ENOENT for it, the other record found. */
static void bad_idx_get_missing(void)
{
	struct bad_recs r;
	uint8_t want[BAD_VAL_LEN];

	bad_recs(&r, 2, 1);
	memset(r.br_vals, 0, sizeof r.br_vals);
	CU_ASSERT_EQUAL(bad_idx_run(&bad_idx, CLOVIS_IC_GET, &r.br_kv.bv_vec,
				    &r.br_vv.bv_vec, r.br_rcs, 0), 0);
	bad_val(0, want);
	CU_ASSERT_EQUAL(r.br_rcs[0], 0);
	CU_ASSERT_EQUAL(r.br_vv.bv_lens[0], BAD_VAL_LEN);
	CU_ASSERT(memcmp(r.br_vals[0], want, BAD_VAL_LEN) == 0);
	CU_ASSERT_EQUAL(r.br_rcs[1], -ENOENT);
	bad_recs(&r, 1, 1);
	r.br_vv.bv_lens[0] = BAD_VAL_LEN - 1;
	CU_ASSERT_EQUAL(bad_idx_run(&bad_idx, CLOVIS_IC_GET, &r.br_kv.bv_vec,
				    &r.br_vv.bv_vec, r.br_rcs, 0), 0);
	CU_ASSERT_EQUAL(r.br_rcs[0], -ENOBUFS);
	CU_ASSERT_EQUAL(r.br_vv.bv_lens[0], BAD_VAL_LEN);
	CU_ASSERT(bad_store_same());
}

/* Run NEXT from start (len bytes) over nr slots; frees what it returns. */
static int bad_next(const char *start, uint32_t nr, uint32_t flags,
		    int32_t *rcs, bool *nulls)
{
	struct bad_vec kv, vv;
	int rc;

	memset(&kv, 0, sizeof kv);
	memset(&vv, 0, sizeof vv);
	kv.bv_bufs[0] = (void *)start;
	kv.bv_lens[0] = strlen(start);
	rc = bad_idx_run(&bad_idx, CLOVIS_IC_NEXT, bad_vec(&kv, nr),
			 bad_vec(&vv, nr), rcs, flags);
	*nulls = true;
	for (uint32_t k = 0; rc == 0 && k < nr; k++) {
		if (rcs[k] == 0) {
			free(kv.bv_bufs[k]);
			free(vv.bv_bufs[k]);
		} else if (kv.bv_bufs[k] != NULL || vv.bv_bufs[k] != NULL) {
			*nulls = false;
		}
	}
	return rc;
}

/* NEXT past the last record gives -ENOENT slots with NULL buffers. */
static void bad_idx_next_end(void)
{
	int32_t rcs[3];
	char last[16];
	bool nulls;

	bad_key(BAD_NR_RECS - 1, last);
	CU_ASSERT_EQUAL(bad_next("zzz", 3, 0, rcs, &nulls), 0);
	CU_ASSERT(rcs[0] == -ENOENT && rcs[1] == -ENOENT && rcs[2] == -ENOENT);
	CU_ASSERT(nulls);
	CU_ASSERT_EQUAL(bad_next(last, 3, CLOVIS_IF_EXCLUDE_START_KEY, rcs,
				 &nulls), 0);
	CU_ASSERT(rcs[0] == -ENOENT && rcs[1] == -ENOENT && rcs[2] == -ENOENT);
	CU_ASSERT(nulls);
	CU_ASSERT_EQUAL(bad_next(last, 3, 0, rcs, &nulls), 0);
	CU_ASSERT(rcs[0] == 0 && rcs[1] == -ENOENT && rcs[2] == -ENOENT);
	CU_ASSERT(nulls);
	CU_ASSERT(bad_store_same());
}

/* PUT over an existing key without OVERWRITE; DEL of a missing key. */
static void bad_idx_put_existing(void)
{
	struct bad_recs r;

	bad_recs(&r, 3, 1);
	CU_ASSERT_EQUAL(bad_idx_run(&bad_idx, CLOVIS_IC_PUT, &r.br_kv.bv_vec,
				    &r.br_vv.bv_vec, r.br_rcs, 0), 0);
	CU_ASSERT_EQUAL(r.br_rcs[0], -EEXIST);
	CU_ASSERT_EQUAL(r.br_rcs[1], 0);
	CU_ASSERT_EQUAL(r.br_rcs[2], 0);
	CU_ASSERT(bad_idx_get_same());
	memset(r.br_vals, 0, sizeof r.br_vals);
	CU_ASSERT_EQUAL(bad_idx_run(&bad_idx, CLOVIS_IC_GET, &r.br_kv.bv_vec,
				    &r.br_vv.bv_vec, r.br_rcs, 0), 0);
	CU_ASSERT(r.br_rcs[1] == 0 && r.br_vals[1][0] == 0x5a);
	CU_ASSERT(r.br_rcs[2] == 0 && r.br_vals[2][BAD_VAL_LEN - 1] == 0x5a);
	bad_recs(&r, 4, 0);
	CU_ASSERT_EQUAL(bad_idx_run(&bad_idx, CLOVIS_IC_DEL, &r.br_kv.bv_vec,
				    NULL, r.br_rcs, 0), 0);
	CU_ASSERT(r.br_rcs[0] == -ENOENT && r.br_rcs[1] == 0 &&
		  r.br_rcs[2] == 0 && r.br_rcs[3] == -ENOENT);
	CU_ASSERT(bad_store_same());
}

/* ------------------------------------------------------------- op calls */

/* A READ op of fixture block 0 into buf, in INIT state. */
static struct clovis_op *bad_read_op(struct bad_ext *e, struct bad_vec *v,
				     uint8_t *buf)
{
	static const uint64_t one[] = {0, 1};
	struct clovis_op *op = NULL;

	v->bv_bufs[0] = buf;
	v->bv_lens[0] = BAD_BLK;
	if (clovis_obj_op(&bad_obj, CLOVIS_OC_READ, bad_ext(e, 1, one),
			  bad_vec(v, 1), 0, &op) != 0)
		return NULL;
	return op;
}

/* setup, launch, wait, rc and sync with NULLs and ops in a wrong state. */
static void bad_op_calls(void)
{
	static uint8_t b1[BAD_BLK], b2[BAD_BLK];
	struct bad_ext e1, e2;
	struct bad_vec v1, v2;
	struct clovis_op *op = bad_read_op(&e1, &v1, b1);
	struct clovis_op *two[2] = {NULL, NULL};
	struct clovis_op_cbs cbs = {NULL, NULL, NULL};

	CU_ASSERT_PTR_NOT_NULL_FATAL(op);
	BAD_CALL(clovis_op_setup(NULL, &cbs, NULL), -EINVAL);
	BAD_CALL(clovis_op_launch(NULL, 1), -EINVAL);
	BAD_CALL(clovis_op_launch(two, 1), -EINVAL);
	BAD_CALL(clovis_op_wait(NULL, CLOVIS_OS_STABLE, 0), -EINVAL);
	BAD_CALL(clovis_op_wait(op, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(clovis_op_rc(NULL), -EINVAL);
	BAD_CALL(clovis_op_sync(NULL), -EINVAL);
	CU_ASSERT_PTR_NULL(clovis_op_datum(NULL));
	clovis_op_free(NULL);
	CU_ASSERT_EQUAL(clovis_op_launch(&op, 1), 0);
	BAD_CALL(clovis_op_launch(&op, 1), -CLOVIS_ESTATE);
	BAD_CALL(clovis_op_setup(op, &cbs, NULL), -CLOVIS_ESTATE);
	two[0] = op;
	two[1] = bad_read_op(&e2, &v2, b2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(two[1]);
	BAD_CALL(clovis_op_launch(two, 2), -CLOVIS_ESTATE);
	CU_ASSERT_EQUAL(clovis_op_wait(two[1], CLOVIS_OS_STABLE, BAD_WAIT_NS),
			0);
	CU_ASSERT_EQUAL(clovis_op_wait(op, CLOVIS_OS_STABLE, BAD_WAIT_NS), 0);
	BAD_CALL(clovis_op_launch(&op, 1), -CLOVIS_ESTATE);
	CU_ASSERT(b1[0] == bad_pat(0, 0) && b2[7] == bad_pat(0, 7));
	clovis_op_free(two[1]);
	clovis_op_free(op);
	CU_ASSERT(bad_store_same());
}

/* ---------------------------------------------------------- management */

/* clovis_entity_list() with NULLs, bad types and a missing container. */
static void bad_entity_list(void)
{
	struct clovis_id ids[4];
	uint32_t nr = 4;
	struct clovis_container c;
	struct clovis_id cid = bad_tmp_id();

	BAD_CALL(clovis_entity_list(NULL, bad_realm, CLOVIS_ET_OBJ, NULL, ids,
				    &nr), -EINVAL);
	BAD_CALL(clovis_entity_list(bad_cl, bad_realm, CLOVIS_ET_OBJ, NULL,
				    NULL, &nr), -EINVAL);
	BAD_CALL(clovis_entity_list(bad_cl, bad_realm, CLOVIS_ET_OBJ, NULL,
				    ids, NULL), -EINVAL);
	BAD_CALL(clovis_entity_list(bad_cl, bad_realm,
				    (enum clovis_entity_type)0, NULL, ids,
				    &nr), -EINVAL);
	BAD_CALL(clovis_entity_list(bad_cl, bad_realm,
				    (enum clovis_entity_type)99, NULL, ids,
				    &nr), -EINVAL);
	BAD_CALL(clovis_entity_list(bad_cl, NULL, CLOVIS_ET_OBJ, NULL, ids,
				    &nr), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(clovis_container_init(&c, bad_cl, &cid), 0);
	nr = 4;
	BAD_CALL(clovis_entity_list(bad_cl, &c.co_realm, CLOVIS_ET_OBJ, NULL,
				    ids, &nr), -ENOENT);
	CU_ASSERT(bad_store_same());
}

/* clovis_dev_list() and the statistics calls with NULLs. */
static void bad_dev_stats(void)
{
	struct clovis_dev_info info[4];
	struct clovis_stat st[CLOVIS_STAT_NR];
	uint32_t nr = 4;

	BAD_CALL(clovis_dev_list(NULL, info, &nr), -EINVAL);
	BAD_CALL(clovis_dev_list(bad_cl, info, NULL), -EINVAL);
	BAD_CALL(clovis_dev_list(bad_cl, NULL, &nr), -EINVAL);
	BAD_CALL(clovis_stats_get(NULL, st), -EINVAL);
	BAD_CALL(clovis_stats_get(bad_cl, NULL), -EINVAL);
	BAD_CALL(clovis_stats_reset(NULL), -EINVAL);
	clovis_fini(NULL);
	CU_ASSERT(bad_store_same());
}

/* Device fail and replace by server: NULLs, an embedded store (no
 * servers), and in cluster mode a server or device that does not exist
 * (nothing changes). */
static void bad_server_dev(void)
{
	BAD_CALL(clovis_server_dev_fail(NULL, "s0", 0), -EINVAL);
	BAD_CALL(clovis_server_dev_fail(bad_cl, NULL, 0), -EINVAL);
	BAD_CALL(clovis_server_dev_replace(NULL, "s0", 0, "x"), -EINVAL);
	if (!ut_cluster_mode()) {
		BAD_CALL(clovis_server_dev_fail(bad_cl, "s0", 0), -ENOTSUP);
		BAD_CALL(clovis_server_dev_replace(bad_cl, "s0", 0, "x"),
			 -ENOTSUP);
	} else {
		BAD_CALL(clovis_server_dev_fail(bad_cl, "nosuch", 0), -ENOENT);
		BAD_CALL(clovis_server_dev_fail(bad_cl, "s0", 200), -EINVAL);
		BAD_CALL(clovis_server_dev_replace(bad_cl, "s0", 0, ""),
			 -EINVAL);
		BAD_CALL(clovis_server_dev_replace(bad_cl, "nosuch", 0, "x"),
			 -ENOENT);
		BAD_CALL(clovis_dev_fail(bad_cl, 100000), -EINVAL);
	}
	CU_ASSERT(bad_store_same());
}

/* ------------------------------------------------------------ register */

static const struct bad_test {
	const char *bt_name;
	void (*bt_fn)(void);
} bad_tests[] = {
	{"strerror", bad_strerror},
	{"id_parse", bad_id_parse},
	{"init_args", bad_init_args},
	{"init_missing", bad_init_missing},
	{"container_init", bad_container_init},
	{"obj_init", bad_obj_init},
	{"idx_init", bad_idx_init},
	{"entity_op", bad_entity_op},
	{"create_existing", bad_create_existing},
	{"sync_errmsg", bad_sync_errmsg},
	{"open_missing", bad_open_missing},
	{"create_no_container", bad_create_no_container},
	{"delete_container", bad_delete_container},
	{"setattr", bad_setattr},
	{"obj_op_args", bad_obj_op_args},
	{"obj_extents", bad_obj_extents},
	{"obj_buffers", bad_obj_buffers},
	{"obj_too_big", bad_obj_too_big},
	{"obj_not_open", bad_obj_not_open},
	{"obj_deleted", bad_obj_deleted},
	{"idx_op_vectors", bad_idx_op_vectors},
	{"idx_op_buffers", bad_idx_op_buffers},
	{"idx_next_caller_bufs", bad_idx_next_caller_bufs},
	{"idx_too_big", bad_idx_too_big},
	{"idx_not_open", bad_idx_not_open},
	{"idx_deleted", bad_idx_deleted},
	{"idx_get_missing", bad_idx_get_missing},
	{"idx_next_end", bad_idx_next_end},
	{"idx_put_existing", bad_idx_put_existing},
	{"op_calls", bad_op_calls},
	{"entity_list", bad_entity_list},
	{"dev_stats", bad_dev_stats},
	{"server_dev", bad_server_dev},
};

/* Add the "clovis_bad" suite, then "clovis_bad_store" (its own file). */
int clovis_bad_ut_add(void)
{
	CU_pSuite s = CU_add_suite("clovis_bad", bad_suite_init,
				   bad_suite_fini);

	if (s == NULL)
		return -1;
	for (size_t i = 0; i < sizeof bad_tests / sizeof bad_tests[0]; i++)
		if (CU_add_test(s, bad_tests[i].bt_name,
				bad_tests[i].bt_fn) == NULL)
			return -1;
	return clovis_bad_store_ut_add();
}
