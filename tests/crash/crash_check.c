/*
 * crash_check.c — the checker side of the crash-consistency test.
 *
 *   crash_check DIR ACKLOG
 *
 * Opens the store a killed crash_writer left and proves:
 *   (a) nothing is torn: every block and record is intact (header and
 *       checksum), and for every generation G found in an entity, every
 *       block or key the update (G, entity) touched holds G or later —
 *       so each multi-extent WRITE and multi-record PUT is all or nothing;
 *   (b) every acknowledged update is there: for each "G entity" line of
 *       ACKLOG, everything that update touched holds G or later;
 *   (c) every update the writer saw FAIL ("G entity F", under an armed
 *       fault point) left no trace: nothing holds G.
 * Prints what it checked; exits 0 when both hold, 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/crash/crash.h"

#define CK_SLOTS (CRASH_KEYS + 2)

/* Generations found: per object block, per index key (0 = none). */
static uint64_t *ck_blk_gen[CRASH_NR_OBJ];
static uint64_t ck_key_gen[CRASH_NR_IDX][CRASH_KEYS];
static unsigned ck_errors;
static unsigned long ck_items;

/* Report one violation. */
static void ck_fail(const char *what, uint32_t e, uint64_t pos, uint64_t gen,
		    uint64_t found)
{
	if (ck_errors++ < 20)
		fprintf(stderr, "crash_check: %s: entity %u pos %llu gen %llu "
			"(found %llu)\n", what, e, (unsigned long long)pos,
			(unsigned long long)gen, (unsigned long long)found);
}

/* Open entity e of the store through o (objects) or ix (indices). */
static int ck_open(struct clovis *cl, uint32_t e, struct clovis_obj *o,
		   struct clovis_idx *ix)
{
	struct clovis_id id = crash_id(e);
	struct clovis_op *op = NULL;
	struct clovis_entity *head;
	int rc;

	if (e < CRASH_NR_OBJ) {
		rc = clovis_obj_init(o, clovis_default_realm(cl), &id, NULL);
		head = &o->ob_entity;
	} else {
		rc = clovis_idx_init(ix, clovis_default_realm(cl), &id);
		head = &ix->in_entity;
	}
	if (rc == 0)
		rc = clovis_entity_op(head, CLOVIS_EO_OPEN, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		fprintf(stderr, "crash_check: open entity %u: %d %s\n", e, rc,
			clovis_errmsg());
	return rc;
}

/* Read every block of object e and record its generation. */
static int ck_read_obj(struct clovis *cl, uint32_t e)
{
	const struct crash_obj_shape *sh = &crash_shapes[e];
	size_t bs = (size_t)1 << sh->cs_shift;
	uint64_t start = 0, nr = sh->cs_nr_blks;
	struct clovis_extvec ev = {1, &start, &nr};
	uint8_t *buf = calloc(nr, bs);
	void *bufs[1] = {buf};
	size_t lens[1] = {nr * bs};
	struct clovis_bufvec bv = {1, bufs, lens};
	struct clovis_obj o;
	struct clovis_op *op = NULL;
	int rc = buf == NULL ? -ENOMEM : ck_open(cl, e, &o, NULL);

	if (rc == 0 && o.ob_attr.oa_block_shift != sh->cs_shift)
		rc = -EINVAL;
	if (rc == 0)
		rc = clovis_obj_op(&o, CLOVIS_OC_READ, &ev, &bv, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	ck_blk_gen[e] = calloc(nr, sizeof(uint64_t));
	if (ck_blk_gen[e] == NULL)
		rc = -ENOMEM;
	for (uint64_t b = 0; rc == 0 && b < nr; b++, ck_items++)
		if (crash_block_check(buf + b * bs, sh->cs_shift, e, b,
				      &ck_blk_gen[e][b]) != 0)
			ck_fail("garbage block", e, b, 0, 0);
	if (rc != 0)
		fprintf(stderr, "crash_check: read object %u: %d\n", e, rc);
	free(buf);
	return rc;
}

/* Check one record NEXT returned from index e and note its generation. */
static void ck_record(uint32_t e, const void *key, size_t klen,
		      const void *val, size_t vlen)
{
	char text[16];
	uint32_t k;
	uint64_t gen;

	for (k = 0; k < CRASH_KEYS; k++)
		if (crash_key(k, text) == klen && memcmp(text, key, klen) == 0)
			break;
	ck_items++;
	if (k == CRASH_KEYS) {
		ck_fail("unknown key", e, klen, 0, 0);
		return;
	}
	if (crash_val_check(val, vlen, e, k, &gen) != 0) {
		ck_fail("garbage value", e, k, 0, 0);
		return;
	}
	ck_key_gen[e - CRASH_NR_OBJ][k] = gen;
}

/* Walk index e from the start and record every key's generation. */
static int ck_read_idx(struct clovis *cl, uint32_t e)
{
	void *kb[CK_SLOTS] = {NULL}, *vb[CK_SLOTS] = {NULL};
	size_t kl[CK_SLOTS] = {0}, vl[CK_SLOTS] = {0};
	int32_t rcs[CK_SLOTS];
	struct clovis_bufvec kv = {CK_SLOTS, kb, kl}, vv = {CK_SLOTS, vb, vl};
	struct clovis_idx ix;
	struct clovis_op *op = NULL;
	int rc = ck_open(cl, e, NULL, &ix);

	if (rc == 0)
		rc = clovis_idx_op(&ix, CLOVIS_IC_NEXT, &kv, &vv, rcs, 0, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	for (uint32_t s = 0; rc == 0 && s < CK_SLOTS && rcs[s] == 0; s++) {
		ck_record(e, kb[s], kl[s], vb[s], vl[s]);
		free(kb[s]);
		free(vb[s]);
	}
	if (rc != 0)
		fprintf(stderr, "crash_check: read index %u: %d\n", e, rc);
	return rc;
}

/* The generation stored at item i of the update layout l of entity e. */
static uint64_t ck_found(uint32_t e, const struct crash_layout *l,
			 uint32_t i, uint64_t b)
{
	if (e < CRASH_NR_OBJ)
		return ck_blk_gen[e][l->cl_start[i] + b];
	return ck_key_gen[e - CRASH_NR_OBJ][l->cl_key[i]];
}

/* Check that everything update (gen, e) touched holds gen or later. */
static void ck_update(uint32_t e, uint64_t gen, const char *what)
{
	struct crash_layout l;
	uint64_t found;

	crash_layout(gen, e, &l);
	for (uint32_t i = 0; i < l.cl_nr; i++) {
		uint64_t n = e < CRASH_NR_OBJ ? l.cl_len[i] : 1;

		for (uint64_t b = 0; b < n; b++) {
			found = ck_found(e, &l, i, b);
			if (found < gen)
				ck_fail(what, e,
					e < CRASH_NR_OBJ ? l.cl_start[i] + b
							 : l.cl_key[i],
					gen, found);
		}
	}
}

/* Check that an item found with gen belongs to the update (gen, e). */
static void ck_member(uint32_t e, uint64_t pos, uint64_t gen)
{
	struct crash_layout l;

	crash_layout(gen, e, &l);
	if (e < CRASH_NR_OBJ ? !crash_layout_has_blk(&l, pos)
			     : !crash_layout_has_key(&l, (uint32_t)pos))
		ck_fail("item outside its update", e, pos, gen, gen);
	else
		ck_update(e, gen, "torn update");
}

/* (a): every update seen is whole. */
static void ck_torn(void)
{
	for (uint32_t e = 0; e < CRASH_NR_OBJ; e++)
		for (uint64_t b = 0; b < crash_shapes[e].cs_nr_blks; b++)
			if (ck_blk_gen[e][b] != 0)
				ck_member(e, b, ck_blk_gen[e][b]);
	for (uint32_t x = 0; x < CRASH_NR_IDX; x++)
		for (uint32_t k = 0; k < CRASH_KEYS; k++)
			if (ck_key_gen[x][k] != 0)
				ck_member(CRASH_NR_OBJ + x, k, ck_key_gen[x][k]);
}

/* (c): nothing the failed update (gen, e) touched holds gen. */
static void ck_absent(uint32_t e, uint64_t gen)
{
	struct crash_layout l;
	uint64_t n;

	crash_layout(gen, e, &l);
	for (uint32_t i = 0; i < l.cl_nr; i++) {
		n = e < CRASH_NR_OBJ ? l.cl_len[i] : 1;
		for (uint64_t b = 0; b < n; b++)
			if (ck_found(e, &l, i, b) == gen)
				ck_fail("failed update left a trace", e, i, gen,
					gen);
	}
}

/* (b) and (c) over the lines of the log.  Returns the lines checked. */
static unsigned long ck_acks(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[128], flag[4];
	unsigned long long gen;
	unsigned e;
	unsigned long n = 0;
	int got;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL) {
		flag[0] = '\0';
		got = sscanf(line, "%llu %u %3s", &gen, &e, flag);
		if (got < 2 || e >= CRASH_NR_ENT ||
		    (got == 3 && strcmp(flag, "F") != 0)) {
			ck_fail("bad ack line", 0, n, 0, 0);
			continue;
		}
		if (got == 3)
			ck_absent(e, gen);
		else
			ck_update(e, gen, "acknowledged update lost");
		n++;
	}
	fclose(f);
	return n;
}

/*
 * With CRASH_SMR: the zone accounting of every SMR device once the store
 * is open (recovery done): the cleaner's reserve zone is empty, and the
 * written zones can hold the live bytes.  Before recovery reset the zones
 * a killed writer had appended to, a device came back 99 % free with no
 * empty zone, and the next write failed -ENOSPC.  Returns the errors.
 */
static unsigned ck_smr(struct clovis *cl)
{
	struct clovis_dev_info di[8];
	uint32_t n = 8;
	unsigned bad = 0;

	if (getenv("CRASH_SMR") == NULL || clovis_dev_list(cl, di, &n) != 0)
		return getenv("CRASH_SMR") == NULL ? 0 : 1;
	for (uint32_t i = 0; i < n && i < 8; i++) {
		const struct clovis_dev_info *d = &di[i];
		uint64_t used = d->di_size_bytes - d->di_free_bytes;
		uint64_t written = (uint64_t)(d->di_zones - d->di_zones_empty) *
				   d->di_zone_size;

		if (d->di_tier != CLOVIS_TIER_SMR)
			continue;
		printf("crash_check: SMR device %u: %u of %u zones empty, "
		       "%llu of %llu bytes free\n", i, d->di_zones_empty,
		       d->di_zones, (unsigned long long)d->di_free_bytes,
		       (unsigned long long)d->di_size_bytes);
		if (d->di_zones_empty < 1 || used > written) {
			printf("crash_check: SMR device %u: zone accounting "
			       "wrong (no empty zone, or live bytes beyond the "
			       "written zones)\n", i);
			bad++;
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	struct clovis_conf conf;
	struct clovis *cl = NULL;
	unsigned long acks;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: crash_check DIR ACKLOG\n");
		return 2;
	}
	crash_conf(&conf, argv[1], 0);
	rc = clovis_init(&cl, &conf);
	if (rc != 0) {
		fprintf(stderr, "crash_check: init: %d %s\n", rc,
			clovis_errmsg());
		return 1;
	}
	for (uint32_t e = 0; rc == 0 && e < CRASH_NR_ENT; e++)
		rc = e < CRASH_NR_OBJ ? ck_read_obj(cl, e) : ck_read_idx(cl, e);
	if (rc == 0) {
		ck_errors += ck_smr(cl);
		ck_torn();
		acks = ck_acks(argv[2]);
		printf("crash_check: %lu blocks and records, %lu acks, "
		       "%u errors\n", ck_items, acks, ck_errors);
	}
	clovis_fini(cl);
	for (uint32_t e = 0; e < CRASH_NR_OBJ; e++)
		free(ck_blk_gen[e]);
	return rc == 0 && ck_errors == 0 ? 0 : 1;
}
