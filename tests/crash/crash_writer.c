/*
 * crash_writer.c — the writer side of the crash-consistency test.
 *
 *   crash_writer --init DIR        make the store and its entities, exit
 *   crash_writer --create DIR      open DIR with CLOVIS_CONF_CREATE, close
 *                                  (crash_test.sh kills it while creating)
 *   crash_writer DIR ACKLOG ROUND [WAVES]
 *                                  write waves until killed (or 20 s, or
 *                                  WAVES waves)
 *
 * Each wave launches one update per entity (a multi-extent WRITE per
 * object, a multi-record PUT per index) in one clovis_op_launch() call (odd
 * waves: the objects' in one, then each index PUT alone once the writes
 * finished), all with generation ROUND << 24 | wave (see crash.h).  Once every op of the
 * wave has finished it appends one line per update to ACKLOG and
 * fdatasyncs it: "gen entity" claims the update is durable (it reached
 * STABLE), "gen entity F" that it FAILED and so must have left no trace.
 * Failed ops are expected only when a fault point is armed (STRATA_FAULT
 * set); otherwise any failure stops the writer with a non-zero exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/crash/crash.h"

#define WR_RUN_S 20
#define WR_WAIT_NS (60ll * 1000 * 1000 * 1000)

/* An entity handle: object or index. */
union wr_ent {
	struct clovis_obj we_obj;
	struct clovis_idx we_idx;
};

/* One update of a wave with the buffers it owns. */
struct wr_op {
	struct clovis_op *wo_op;
	struct crash_layout wo_l;
	uint8_t *wo_data;
	void *wo_bufs[CRASH_PUT_MAX];
	size_t wo_lens[CRASH_PUT_MAX];
	void *wo_kbufs[CRASH_PUT_MAX];
	size_t wo_klens[CRASH_PUT_MAX];
	char wo_keys[CRASH_PUT_MAX][16];
	int32_t wo_rcs[CRASH_PUT_MAX];
	struct clovis_extvec wo_ev;
	struct clovis_bufvec wo_bv, wo_kv;
};

static union wr_ent wr_ents[CRASH_NR_ENT];

/* Print what failed and exit. */
static void wr_die(const char *what, int rc)
{
	fprintf(stderr, "crash_writer: %s: %d %s (%s)\n", what, rc,
		clovis_strerror(rc), clovis_errmsg());
	exit(1);
}

/* The entity head of entity e. */
static struct clovis_entity *wr_head(uint32_t e)
{
	return e < CRASH_NR_OBJ ? &wr_ents[e].we_obj.ob_entity
				: &wr_ents[e].we_idx.in_entity;
}

/* Set up the handle of entity e in the default realm. */
static void wr_ent_init(struct clovis *cl, uint32_t e)
{
	struct clovis_id id = crash_id(e);
	struct clovis_obj_attr a = {0};
	int rc;

	if (e < CRASH_NR_OBJ) {
		a.oa_block_shift = crash_shapes[e].cs_shift;
		a.oa_layout = CLOVIS_LAYOUT_PLAIN;
		a.oa_tier = crash_tier(e);
		rc = clovis_obj_init(&wr_ents[e].we_obj,
				     clovis_default_realm(cl), &id, &a);
	} else {
		rc = clovis_idx_init(&wr_ents[e].we_idx,
				     clovis_default_realm(cl), &id);
	}
	if (rc != 0)
		wr_die("entity init", rc);
}

/* Run an entity op (CREATE or OPEN) of every entity. */
static void wr_ents_do(struct clovis *cl, enum clovis_entity_opcode opc)
{
	struct clovis_op *op;
	int rc;

	for (uint32_t e = 0; e < CRASH_NR_ENT; e++) {
		wr_ent_init(cl, e);
		op = NULL;
		rc = clovis_entity_op(wr_head(e), opc, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		if (rc != 0)
			wr_die(opc == CLOVIS_EO_CREATE ? "create" : "open", rc);
	}
}

/* Build the WRITE of object e for gen. */
static void wr_obj_op(struct wr_op *w, uint32_t e, uint64_t gen)
{
	uint32_t shift = crash_shapes[e].cs_shift;
	size_t bs = (size_t)1 << shift, off = 0;
	uint64_t nr;
	int rc;

	w->wo_data = malloc(w->wo_l.cl_blocks * bs);
	if (w->wo_data == NULL)
		wr_die("malloc", -ENOMEM);
	for (uint32_t i = 0; i < w->wo_l.cl_nr; i++)
		for (uint64_t b = 0; b < w->wo_l.cl_len[i]; b++, off += bs)
			crash_block_fill(w->wo_data + off, shift, e,
					 w->wo_l.cl_start[i] + b, gen);
	/* Two buffers split after the first block, crossing extents. */
	nr = w->wo_l.cl_blocks;
	w->wo_bufs[0] = w->wo_data;
	w->wo_lens[0] = bs;
	w->wo_bufs[1] = w->wo_data + bs;
	w->wo_lens[1] = (nr - 1) * bs;
	w->wo_bv = (struct clovis_bufvec){nr > 1 ? 2 : 1, w->wo_bufs,
					  w->wo_lens};
	w->wo_ev = (struct clovis_extvec){w->wo_l.cl_nr, w->wo_l.cl_start,
					  w->wo_l.cl_len};
	rc = clovis_obj_op(&wr_ents[e].we_obj, CLOVIS_OC_WRITE, &w->wo_ev,
			   &w->wo_bv, 0, &w->wo_op);
	if (rc != 0)
		wr_die("obj op", rc);
}

/* Build the multi-record PUT of index e for gen. */
static void wr_idx_op(struct wr_op *w, uint32_t e, uint64_t gen)
{
	size_t off = 0;
	int rc;

	w->wo_data = malloc(CRASH_PUT_MAX * CRASH_VAL_MAX);
	if (w->wo_data == NULL)
		wr_die("malloc", -ENOMEM);
	for (uint32_t i = 0; i < w->wo_l.cl_nr; i++) {
		w->wo_kbufs[i] = w->wo_keys[i];
		w->wo_klens[i] = crash_key(w->wo_l.cl_key[i], w->wo_keys[i]);
		w->wo_bufs[i] = w->wo_data + off;
		w->wo_lens[i] = w->wo_l.cl_vlen[i];
		crash_val_fill(w->wo_bufs[i], w->wo_lens[i], e,
			       w->wo_l.cl_key[i], gen);
		off += w->wo_lens[i];
	}
	w->wo_kv = (struct clovis_bufvec){w->wo_l.cl_nr, w->wo_kbufs,
					  w->wo_klens};
	w->wo_bv = (struct clovis_bufvec){w->wo_l.cl_nr, w->wo_bufs,
					  w->wo_lens};
	rc = clovis_idx_op(&wr_ents[e].we_idx, CLOVIS_IC_PUT, &w->wo_kv,
			   &w->wo_bv, w->wo_rcs, CLOVIS_IF_OVERWRITE, &w->wo_op);
	if (rc != 0)
		wr_die("idx op", rc);
}

/* Append the wave's acknowledgements and make them durable. */
static void wr_ack(int fd, uint64_t gen, const bool *failed)
{
	char line[CRASH_NR_ENT * 40];
	size_t len = 0;

	for (uint32_t e = 0; e < CRASH_NR_ENT; e++)
		len += (size_t)snprintf(line + len, sizeof line - len,
					"%llu %u%s\n", (unsigned long long)gen,
					e, failed[e] ? " F" : "");
	if (write(fd, line, len) != (ssize_t)len || fdatasync(fd) != 0)
		wr_die("ack log", -errno);
}

/* Wait for update e of the wave; true when it FAILED as a fault allows. */
static bool wr_wait(struct wr_op *w, uint32_t e)
{
	int rc = clovis_op_wait(w->wo_op, CLOVIS_OS_STABLE, WR_WAIT_NS);

	if (rc != 0 && rc != -ETIMEDOUT && getenv("STRATA_FAULT") != NULL &&
	    clovis_op_state(w->wo_op) == CLOVIS_OS_FAILED)
		return true;
	if (rc != 0)
		wr_die(clovis_op_errmsg(w->wo_op), rc);
	for (uint32_t i = 0; e >= CRASH_NR_OBJ && i < w->wo_l.cl_nr; i++)
		if (w->wo_rcs[i] != 0)
			wr_die("record", w->wo_rcs[i]);
	return false;
}

/* One wave: launch every update together, wait until all have finished.
 * Returns how many FAILED. */
static unsigned wr_wave(int ack_fd, uint64_t gen)
{
	static struct wr_op ops[CRASH_NR_ENT];
	struct clovis_op *launch[CRASH_NR_ENT];
	bool failed[CRASH_NR_ENT];
	unsigned nr_failed = 0;
	int rc;

	for (uint32_t e = 0; e < CRASH_NR_ENT; e++) {
		memset(&ops[e], 0, sizeof ops[e]);
		crash_layout(gen, e, &ops[e].wo_l);
		if (e < CRASH_NR_OBJ)
			wr_obj_op(&ops[e], e, gen);
		else
			wr_idx_op(&ops[e], e, gen);
		launch[e] = ops[e].wo_op;
	}
	/* Odd waves: the objects' writes together, then each index PUT
	 * launched alone once nothing else is in flight (on a store with its
	 * metadata on NVRAM it is committed in this thread, clovis_op_launch()
	 * returning with it STABLE: a kill lands inside that commit too). */
	rc = clovis_op_launch(launch, gen & 1 ? CRASH_NR_OBJ : CRASH_NR_ENT);
	if (rc != 0)
		wr_die("launch", rc);
	for (uint32_t e = 0; e < CRASH_NR_ENT; e++) {
		if (e >= CRASH_NR_OBJ && (gen & 1) &&
		    (rc = clovis_op_launch(&launch[e], 1)) != 0)
			wr_die("launch", rc);
		failed[e] = wr_wait(&ops[e], e);
		nr_failed += failed[e];
	}
	wr_ack(ack_fd, gen, failed);
	for (uint32_t e = 0; e < CRASH_NR_ENT; e++) {
		clovis_op_free(ops[e].wo_op);
		free(ops[e].wo_data);
	}
	return nr_failed;
}

/* Open the store and write waves of round until WR_RUN_S pass or
 * max_waves are done. */
static int wr_run(const char *dir, const char *ack, uint64_t round,
		  uint64_t max_waves)
{
	struct clovis_conf conf;
	struct clovis *cl = NULL;
	time_t end = time(NULL) + WR_RUN_S;
	int fd, rc;
	uint64_t wave;
	unsigned failed = 0;

	crash_conf(&conf, dir, 0);
	rc = clovis_init(&cl, &conf);
	if (rc != 0)
		wr_die("init", rc);
	wr_ents_do(cl, CLOVIS_EO_OPEN);
	fd = open(ack, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		wr_die(ack, -errno);
	for (wave = 1; time(NULL) < end && wave <= max_waves; wave++)
		failed += wr_wave(fd, round << 24 | wave);
	close(fd);
	clovis_fini(cl);
	printf("crash_writer: round %llu: %llu waves, %u updates failed\n",
	       (unsigned long long)round, (unsigned long long)wave - 1,
	       failed);
	return 0;
}

/* Open (making it if needed) the store and close it again. */
static int wr_create(const char *dir)
{
	struct clovis_conf conf;
	struct clovis *cl = NULL;
	int rc;

	crash_conf(&conf, dir, CLOVIS_CONF_CREATE);
	rc = clovis_init(&cl, &conf);
	if (rc != 0)
		wr_die("init", rc);
	clovis_fini(cl);
	return 0;
}

/* Make the store and create its entities. */
static int wr_init(const char *dir)
{
	struct clovis_conf conf;
	struct clovis *cl = NULL;
	int rc;

	crash_conf(&conf, dir, CLOVIS_CONF_CREATE);
	rc = clovis_init(&cl, &conf);
	if (rc != 0)
		wr_die("init", rc);
	wr_ents_do(cl, CLOVIS_EO_CREATE);
	clovis_fini(cl);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--init") == 0)
		return wr_init(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--create") == 0)
		return wr_create(argv[2]);
	if ((argc == 4 || argc == 5) && strtoull(argv[3], NULL, 10) > 0)
		return wr_run(argv[1], argv[2], strtoull(argv[3], NULL, 10),
			      argc == 5 ? strtoull(argv[4], NULL, 10)
					: (1u << 24) - 1);
	fprintf(stderr, "usage: crash_writer --init DIR | --create DIR | "
		"crash_writer DIR ACKLOG ROUND [WAVES]\n");
	return 2;
}
