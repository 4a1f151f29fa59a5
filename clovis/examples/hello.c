/*
 * hello.c — a first Strata program, using nothing but clovis/clovis.h.
 *
 * It makes a store in a fresh temporary directory, then:
 *   1. creates an object of 4 KiB blocks, writes two extents with one op,
 *      reads the whole range back (the hole between them reads as zeros)
 *      and checks the object's size;
 *   2. creates an index, puts three records with one op, gets one back,
 *      looks up a missing key, walks the records in key order with NEXT
 *      and sees a second PUT of an existing key refused;
 *   3. deletes both and checks they are gone;
 *   4. destroys the store (its NVRAM device lives under /dev/shm).
 * Every check is counted; the program ends with "N passed, N failed" and
 * exits non-zero if any check failed.
 *
 * make builds it as build/examples/hello, linked with libstrata.so only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Installed: cc hello.c $(pkg-config --cflags --libs strata) */
#include <strata/clovis.h>

#define BLOCK_SHIFT 12u
#define BLOCK_SIZE (1u << BLOCK_SHIFT)

static int passed, failed;

/* Count one check and print it. */
static void check(int ok, const char *what)
{
	if (ok)
		passed++;
	else
		failed++;
	printf("%s - %s\n", ok ? "ok  " : "FAIL", what);
}

/* Count a check on rc == 0, showing the library's message on failure. */
static void check_rc(int rc, const char *what)
{
	if (rc != 0)
		printf("      rc %d (%s): %s\n", rc, clovis_strerror(rc),
		       clovis_errmsg());
	check(rc == 0, what);
}

/*
 * Finish an op made by the call whose result is rc: launch *op, wait until
 * it is STABLE, free it.  Returns the op's rc (or rc if making it failed).
 */
static int run(int rc, struct clovis_op **op)
{
	if (rc != 0)
		return rc;
	return clovis_op_sync(*op);
}

/* Write blocks [0,4) and [8,12) with one op, then read [0,12) back. */
static void object_io(struct clovis_obj *o)
{
	static unsigned char data[8 * BLOCK_SIZE], back[12 * BLOCK_SIZE];
	uint64_t start[2] = { 0, 8 }, nr[2] = { 4, 4 };
	uint64_t rstart = 0, rnr = 12;
	struct clovis_extvec ext = { 2, start, nr };
	struct clovis_extvec rext = { 1, &rstart, &rnr };
	void *wbuf = data, *rbuf = back;
	size_t wlen = sizeof data, rlen = sizeof back;
	struct clovis_bufvec wv = { 1, &wbuf, &wlen };
	struct clovis_bufvec rv = { 1, &rbuf, &rlen };
	struct clovis_op *op = NULL;
	size_t i;
	int rc;

	for (i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 31 + 7);
	rc = clovis_obj_op(o, CLOVIS_OC_WRITE, &ext, &wv, 0, &op);
	if (rc == 0)
		rc = clovis_op_launch(&op, 1);
	if (rc == 0)
		rc = clovis_op_wait(op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	check_rc(rc, "write 8 blocks in two extents, wait until STABLE");
	check(clovis_op_state(op) == CLOVIS_OS_STABLE, "write op is STABLE");
	clovis_op_free(op);

	memset(back, 0xff, sizeof back);
	check_rc(run(clovis_obj_op(o, CLOVIS_OC_READ, &rext, &rv, 0, &op), &op),
		 "read blocks 0..11");
	check(memcmp(back, data, 4 * BLOCK_SIZE) == 0, "blocks 0..3 match");
	for (i = 4 * BLOCK_SIZE; i < 8 * BLOCK_SIZE && back[i] == 0; i++)
		;
	check(i == 8 * BLOCK_SIZE, "unwritten blocks 4..7 read as zeros");
	check(memcmp(back + 8 * BLOCK_SIZE, data + 4 * BLOCK_SIZE,
		     4 * BLOCK_SIZE) == 0, "blocks 8..11 match");
}

/* Create an object, do its I/O, check its attributes, delete it. */
static void object_demo(struct clovis *cl)
{
	struct clovis_obj_attr attr = { .oa_block_shift = BLOCK_SHIFT,
					.oa_layout = CLOVIS_LAYOUT_PLAIN,
					.oa_tier = CLOVIS_TIER_FLASH };
	struct clovis_obj o, again;
	struct clovis_op *op = NULL;
	struct clovis_id id;

	check_rc(clovis_id_parse("@hello-object", &id), "parse id @hello-object");
	check_rc(clovis_obj_init(&o, clovis_default_realm(cl), &id, &attr),
		 "set up object handle");
	check_rc(run(clovis_entity_op(&o.ob_entity, CLOVIS_EO_CREATE, &op), &op),
		 "create object");
	object_io(&o);
	check_rc(run(clovis_entity_op(&o.ob_entity, CLOVIS_EO_GETATTR, &op),
		     &op), "get attributes");
	check(o.ob_attr.oa_size_blocks == 12, "object is 12 blocks long");
	check(o.ob_attr.oa_block_shift == BLOCK_SHIFT, "block size is 4 KiB");
	check_rc(run(clovis_entity_op(&o.ob_entity, CLOVIS_EO_DELETE, &op), &op),
		 "delete object");
	clovis_obj_init(&again, clovis_default_realm(cl), &id, NULL);
	check(run(clovis_entity_op(&again.ob_entity, CLOVIS_EO_OPEN, &op),
		  &op) == -ENOENT, "deleted object no longer opens (-ENOENT)");
}

/* The records the index demo stores, in key order. */
static const char *const keys[3] = { "apple", "banana", "cherry" };
static const char *const vals[3] = { "red", "yellow", "dark red" };

/* PUT the three records with one op; every record must succeed. */
static void index_put(struct clovis_idx *ix)
{
	void *kb[3], *vb[3];
	size_t kl[3], vl[3];
	int32_t rcs[3] = { 1, 1, 1 };
	struct clovis_bufvec kv = { 3, kb, kl }, vv = { 3, vb, vl };
	struct clovis_op *op = NULL;
	int i;

	for (i = 0; i < 3; i++) {
		kb[i] = (void *)keys[i];
		kl[i] = strlen(keys[i]);
		vb[i] = (void *)vals[i];
		vl[i] = strlen(vals[i]);
	}
	check_rc(run(clovis_idx_op(ix, CLOVIS_IC_PUT, &kv, &vv, rcs, 0, &op),
		     &op), "put 3 records in one op");
	check(rcs[0] == 0 && rcs[1] == 0 && rcs[2] == 0, "every record stored");
	rcs[0] = 0;
	kv.bv_nr = vv.bv_nr = 1;
	check_rc(run(clovis_idx_op(ix, CLOVIS_IC_PUT, &kv, &vv, rcs, 0, &op),
		     &op), "put an existing key again");
	check(rcs[0] == -EEXIST, "without OVERWRITE it is refused (-EEXIST)");
}

/* GET one key (library-allocated value) and one missing key. */
static void index_get(struct clovis_idx *ix)
{
	void *kb[2] = { "banana", "durian" }, *vb[2] = { NULL, NULL };
	size_t kl[2] = { 6, 6 }, vl[2] = { 0, 0 };
	int32_t rcs[2] = { 1, 1 };
	struct clovis_bufvec kv = { 2, kb, kl }, vv = { 2, vb, vl };
	struct clovis_op *op = NULL;

	check_rc(run(clovis_idx_op(ix, CLOVIS_IC_GET, &kv, &vv, rcs, 0, &op),
		     &op), "get banana and durian");
	check(rcs[0] == 0 && vl[0] == 6 && vb[0] != NULL &&
	      memcmp(vb[0], "yellow", 6) == 0, "banana is yellow");
	check(rcs[1] == -ENOENT, "durian is not there (-ENOENT)");
	free(vb[0]);
	free(vb[1]);
}

/* NEXT from the first record with four slots: three records, then none. */
static void index_next(struct clovis_idx *ix)
{
	void *kb[4] = { NULL }, *vb[4] = { NULL };
	size_t kl[4] = { 0 }, vl[4] = { 0 };
	int32_t rcs[4] = { 1, 1, 1, 1 };
	struct clovis_bufvec kv = { 4, kb, kl }, vv = { 4, vb, vl };
	struct clovis_op *op = NULL;
	int i, in_order = 1;

	check_rc(run(clovis_idx_op(ix, CLOVIS_IC_NEXT, &kv, &vv, rcs, 0, &op),
		     &op), "next from the first record");
	for (i = 0; i < 3; i++)
		in_order &= rcs[i] == 0 && kl[i] == strlen(keys[i]) &&
			    memcmp(kb[i], keys[i], kl[i]) == 0 &&
			    vl[i] == strlen(vals[i]) &&
			    memcmp(vb[i], vals[i], vl[i]) == 0;
	check(in_order, "apple, banana, cherry come back in key order");
	check(rcs[3] == -ENOENT, "the fourth slot is past the end (-ENOENT)");
	for (i = 0; i < 4; i++) {
		free(kb[i]);
		free(vb[i]);
	}
}

/* Create an index, use it, delete it. */
static void index_demo(struct clovis *cl)
{
	struct clovis_idx ix, again;
	struct clovis_op *op = NULL;
	struct clovis_id id;

	check_rc(clovis_id_parse("@hello-index", &id), "parse id @hello-index");
	check_rc(clovis_idx_init(&ix, clovis_default_realm(cl), &id),
		 "set up index handle");
	check_rc(run(clovis_entity_op(&ix.in_entity, CLOVIS_EO_CREATE, &op),
		     &op), "create index");
	index_put(&ix);
	index_get(&ix);
	index_next(&ix);
	check_rc(run(clovis_entity_op(&ix.in_entity, CLOVIS_EO_DELETE, &op),
		     &op), "delete index");
	clovis_idx_init(&again, clovis_default_realm(cl), &id);
	check(run(clovis_entity_op(&again.in_entity, CLOVIS_EO_OPEN, &op),
		  &op) == -ENOENT, "deleted index no longer opens (-ENOENT)");
}

/* Open a store in a temporary directory, run the demos, clean up. */
int main(void)
{
	char dir[] = "/tmp/strata-hello-XXXXXX";
	struct clovis_conf conf;
	struct clovis *cl = NULL;
	int rc;

	if (mkdtemp(dir) == NULL) {
		perror("hello: mkdtemp");
		return 1;
	}
	memset(&conf, 0, sizeof conf);
	conf.cc_mode = CLOVIS_MODE_EMBEDDED;
	conf.cc_data_dir = dir;
	conf.cc_flags = CLOVIS_CONF_CREATE;
	conf.cc_dev_size = 64ull << 20;
	rc = clovis_init(&cl, &conf);
	check_rc(rc, "create a store in a temporary directory");
	if (rc == 0) {
		object_demo(cl);
		index_demo(cl);
		clovis_fini(cl);
		check_rc(clovis_store_destroy(dir),
			 "destroy the store, NVRAM device included");
		check(access(dir, F_OK) != 0, "its directory is gone");
	}
	rmdir(dir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
