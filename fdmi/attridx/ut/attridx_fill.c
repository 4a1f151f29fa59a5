/*
 * attridx_fill.c — the Clovis client of tests/integ/attridx_test.sh: puts
 * and removes plain objects in a container other than the default one
 * (the strata CLI works in the default container only).
 *
 *   attridx_fill DIR put CONTAINER OBJECT FILE TIER
 *       the container is made if it is not there, the object (plain, on
 *       TIER: nvram flash sas smr) likewise; FILE is written from block
 *       0 (4 KiB blocks) and the object's byte size set to FILE's size;
 *       prints the object's id ("HI:LO")
 *   attridx_fill DIR rm CONTAINER OBJECT
 *
 * Exit status 0, 1 on an error (one stderr line), 2 on a usage error.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/clovis.h"

#define FILL_BLOCK 4096u
#define FILL_MAX (64u << 20)

/* Launch op, wait until it is STABLE; its rc. */
static int sync_op(struct clovis_entity *e, enum clovis_entity_opcode opc)
{
	struct clovis_op *op = NULL;
	int rc = clovis_entity_op(e, opc, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* Open entity e, or create it when it is not there. */
static int open_or_create(struct clovis_entity *e, bool create)
{
	int rc = sync_op(e, CLOVIS_EO_OPEN);

	if (rc == -ENOENT && create)
		rc = sync_op(e, CLOVIS_EO_CREATE);
	return rc;
}

static int tier_of(const char *s)
{
	static const char *const names[] = {"nvram", "flash", "sas", "smr"};

	for (int t = 0; t < (int)CLOVIS_TIER_NR; t++)
		if (strcmp(s, names[t]) == 0)
			return t;
	return -1;
}

/* Read FILE whole into *buf (padded with zeros to whole blocks). */
static int file_load(const char *path, char **buf, size_t *len, size_t *pad)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (f == NULL)
		return -errno;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    (size_t)n > FILL_MAX || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return -EFBIG;
	}
	*len = (size_t)n;
	*pad = (*len + FILL_BLOCK - 1) / FILL_BLOCK * FILL_BLOCK;
	*buf = calloc(1, *pad > 0 ? *pad : 1);
	if (*buf == NULL || fread(*buf, 1, *len, f) != *len) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	return 0;
}

static int obj_fill(struct clovis_obj *o, const char *path)
{
	char *buf = NULL;
	size_t len = 0, pad = 0;
	uint64_t start = 0, nr;
	void *bufs[1];
	size_t lens[1];
	struct clovis_extvec ev = {1, &start, &nr};
	struct clovis_bufvec bv = {1, bufs, lens};
	struct clovis_op *op = NULL;
	int rc = file_load(path, &buf, &len, &pad);

	if (rc != 0) {
		fprintf(stderr, "attridx_fill: %s: %s\n", path, strerror(-rc));
		return rc;
	}
	nr = pad / FILL_BLOCK;
	bufs[0] = buf;
	lens[0] = pad;
	if (nr > 0) {
		rc = clovis_obj_op(o, CLOVIS_OC_WRITE, &ev, &bv, 0, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
	}
	if (rc == 0) {
		o->ob_attr.oa_size_bytes = len;
		rc = sync_op(&o->ob_entity, CLOVIS_EO_SETATTR);
	}
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	struct clovis_conf cc = {0};
	struct clovis_obj_attr at = {0};
	struct clovis_container c;
	struct clovis_id cid, oid;
	struct clovis_obj o;
	struct clovis *cl = NULL;
	bool put = argc == 7 && strcmp(argv[2], "put") == 0;
	bool rm = argc == 5 && strcmp(argv[2], "rm") == 0;
	int rc, tier = put ? tier_of(argv[6]) : 0;

	if ((!put && !rm) || tier < 0 || clovis_id_parse(argv[3], &cid) != 0 ||
	    clovis_id_parse(argv[4], &oid) != 0) {
		fprintf(stderr, "usage: attridx_fill DIR put CONTAINER OBJECT "
			"FILE TIER | DIR rm CONTAINER OBJECT\n");
		return 2;
	}
	cc.cc_data_dir = argv[1];
	rc = clovis_init(&cl, &cc);
	if (rc != 0) {
		fprintf(stderr, "attridx_fill: %s: %s\n", argv[1],
			clovis_errmsg());
		return 1;
	}
	at.oa_layout = CLOVIS_LAYOUT_PLAIN;
	at.oa_tier = (uint32_t)tier;
	rc = clovis_container_init(&c, cl, &cid);
	if (rc == 0)
		rc = open_or_create(&c.co_entity, put);
	if (rc == 0)
		rc = clovis_obj_init(&o, &c.co_realm, &oid, &at);
	if (rc == 0)
		rc = open_or_create(&o.ob_entity, put);
	if (rc == 0)
		rc = put ? obj_fill(&o, argv[5]) :
			   sync_op(&o.ob_entity, CLOVIS_EO_DELETE);
	if (rc == 0 && put) {
		char idt[CLOVIS_ID_STR_LEN];

		printf("%s\n", clovis_id_format(&oid, idt));
	}
	if (rc != 0)
		fprintf(stderr, "attridx_fill: %s %s: %s\n", argv[3], argv[4],
			clovis_errmsg());
	clovis_fini(cl);
	return rc == 0 ? 0 : 1;
}
