/*
 * cli_bench.c — "strata bench": a quick benchmark through the public API.
 *
 * It makes a scratch object per block size and a scratch index, times
 * WRITE then READ of one block per op and PUT then GET of one record per
 * op, with a fixed number of ops in flight, prints ops/s and MiB/s, checks
 * every read against what was written, and deletes the scratch entities.
 * Each block size moves at most BENCH_BYTES_MAX so the default run takes
 * a few seconds and little space.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clovis/cli/cli.h"

#define BENCH_OPS_DEFAULT 5000u
#define BENCH_VAL_LEN 64u
#define BENCH_KEY_LEN 32u

/* One timed test. */
struct bench_res {
	char br_name[48];
	uint64_t br_ops;
	uint64_t br_bytes;
	double br_sec;
};

/* Per-slot state of the ops in flight and the op maker of a test. */
struct bench {
	struct cli *b_cli;
	unsigned b_depth;
	/* objects */
	struct clovis_obj *b_obj;
	uint32_t b_shift;
	enum clovis_obj_opcode b_ocode;
	void *b_wbuf;
	void *b_rbuf[BENCH_DEPTH_MAX];
	uint64_t b_start[BENCH_DEPTH_MAX];
	uint64_t b_nr[BENCH_DEPTH_MAX];
	void *b_bv_buf[BENCH_DEPTH_MAX];
	size_t b_bv_len[BENCH_DEPTH_MAX];
	struct clovis_extvec b_ext[BENCH_DEPTH_MAX];
	struct clovis_bufvec b_bv[BENCH_DEPTH_MAX];
	/* indices */
	struct clovis_idx *b_idx;
	enum clovis_idx_opcode b_icode;
	char b_key[BENCH_DEPTH_MAX][BENCH_KEY_LEN];
	char b_val[BENCH_DEPTH_MAX][BENCH_VAL_LEN];
	void *b_kp[BENCH_DEPTH_MAX];
	size_t b_kl[BENCH_DEPTH_MAX];
	void *b_vp[BENCH_DEPTH_MAX];
	size_t b_vl[BENCH_DEPTH_MAX];
	struct clovis_bufvec b_kv[BENCH_DEPTH_MAX];
	struct clovis_bufvec b_vv[BENCH_DEPTH_MAX];
	int32_t b_rc[BENCH_DEPTH_MAX];
	int (*b_make)(struct bench *b, uint64_t i, unsigned s,
		      struct clovis_op **op);
	int (*b_check)(struct bench *b, uint64_t i, unsigned s);
};

/* Make the I/O op number i in slot s: one block at block i. */
static int make_obj_op(struct bench *b, uint64_t i, unsigned s,
		       struct clovis_op **op)
{
	b->b_start[s] = i;
	b->b_nr[s] = 1;
	b->b_ext[s] = (struct clovis_extvec){ 1, &b->b_start[s], &b->b_nr[s] };
	b->b_bv_buf[s] = b->b_ocode == CLOVIS_OC_WRITE ? b->b_wbuf
						       : b->b_rbuf[s];
	b->b_bv_len[s] = (size_t)1 << b->b_shift;
	b->b_bv[s] = (struct clovis_bufvec){ 1, &b->b_bv_buf[s],
					     &b->b_bv_len[s] };
	return clovis_obj_op(b->b_obj, b->b_ocode, &b->b_ext[s], &b->b_bv[s],
			     0, op);
}

/* Check that a READ in slot s returned the written pattern. */
static int check_obj_op(struct bench *b, uint64_t i, unsigned s)
{
	if (b->b_ocode != CLOVIS_OC_READ ||
	    memcmp(b->b_rbuf[s], b->b_wbuf, (size_t)1 << b->b_shift) == 0)
		return 0;
	cli_msg(b->b_cli, "block %llu read back different data",
		(unsigned long long)i);
	return -CLOVIS_ECORRUPT;
}

/* Make the record op number i in slot s: key "bench-<i>". */
static int make_idx_op(struct bench *b, uint64_t i, unsigned s,
		       struct clovis_op **op)
{
	b->b_kl[s] = (size_t)snprintf(b->b_key[s], BENCH_KEY_LEN,
				      "bench-%012llu", (unsigned long long)i);
	b->b_kp[s] = b->b_key[s];
	b->b_vp[s] = b->b_val[s];
	b->b_vl[s] = BENCH_VAL_LEN;
	if (b->b_icode == CLOVIS_IC_PUT)
		memset(b->b_val[s], (int)('a' + i % 26), BENCH_VAL_LEN);
	b->b_kv[s] = (struct clovis_bufvec){ 1, &b->b_kp[s], &b->b_kl[s] };
	b->b_vv[s] = (struct clovis_bufvec){ 1, &b->b_vp[s], &b->b_vl[s] };
	return clovis_idx_op(b->b_idx, b->b_icode, &b->b_kv[s], &b->b_vv[s],
			     &b->b_rc[s], 0, op);
}

/* Check the record result of slot s, and a GET's value. */
static int check_idx_op(struct bench *b, uint64_t i, unsigned s)
{
	char want[BENCH_VAL_LEN];

	if (b->b_rc[s] < 0) {
		cli_msg(b->b_cli, "record %llu failed",
			(unsigned long long)i);
		return b->b_rc[s];
	}
	memset(want, (int)('a' + i % 26), BENCH_VAL_LEN);
	if (b->b_icode == CLOVIS_IC_GET &&
	    (b->b_vl[s] != BENCH_VAL_LEN || memcmp(b->b_val[s], want,
						   BENCH_VAL_LEN) != 0)) {
		cli_msg(b->b_cli, "record %llu read back a different value",
			(unsigned long long)i);
		return -CLOVIS_ECORRUPT;
	}
	return 0;
}

/* Wait for the op in ring slot s (op number i) and check it. */
static int bench_reap(struct bench *b, struct clovis_op **ring, unsigned s,
		      uint64_t i)
{
	int rc;

	if (ring[s] == NULL)
		return 0;
	rc = clovis_op_wait(ring[s], CLOVIS_OS_STABLE | CLOVIS_OS_FAILED,
			    CLOVIS_TIME_NEVER);
	if (rc == 0)
		rc = clovis_op_rc(ring[s]);
	if (rc < 0)
		cli_op_msg(b->b_cli, ring[s]);
	else
		rc = b->b_check(b, i, s);
	clovis_op_free(ring[s]);
	ring[s] = NULL;
	return rc;
}

/* Run nops ops with b_depth in flight; fills r with ops and time. */
static int bench_loop(struct bench *b, uint64_t nops, struct bench_res *r)
{
	struct clovis_op *ring[BENCH_DEPTH_MAX] = { NULL };
	uint64_t i, t0 = cli_now_ns();
	unsigned s;
	int rc = 0;

	for (i = 0; i < nops && rc == 0; i++) {
		s = (unsigned)(i % b->b_depth);
		if (i >= b->b_depth)
			rc = bench_reap(b, ring, s, i - b->b_depth);
		if (rc == 0)
			rc = cli_call(b->b_cli, b->b_make(b, i, s, &ring[s]));
		if (rc == 0)
			rc = cli_call(b->b_cli, clovis_op_launch(&ring[s], 1));
	}
	for (; rc == 0 && i < nops + b->b_depth; i++)
		if (i >= b->b_depth)
			rc = bench_reap(b, ring, (unsigned)(i % b->b_depth),
					i - b->b_depth);
	for (s = 0; s < BENCH_DEPTH_MAX; s++)
		clovis_op_free(ring[s]);
	r->br_ops = nops;
	r->br_sec = (double)(cli_now_ns() - t0) / 1e9;
	return rc;
}

/* Ops in flight for blocks of 1 << shift bytes, bounded by memory. */
static unsigned bench_depth(uint32_t shift)
{
	uint64_t d = BENCH_RING_BYTES >> shift;

	if (d > BENCH_DEPTH_MAX)
		d = BENCH_DEPTH_MAX;
	return d < 1 ? 1 : (unsigned)d;
}

/* Allocate the write pattern and read buffers for one block size. */
static int bench_bufs(struct bench *b)
{
	size_t bs = (size_t)1 << b->b_shift;
	unsigned s;

	b->b_wbuf = aligned_alloc(4096, bs < 4096 ? 4096 : bs);
	if (b->b_wbuf == NULL)
		return -ENOMEM;
	for (size_t k = 0; k < bs; k++)
		((unsigned char *)b->b_wbuf)[k] = (unsigned char)(k * 7 + 1);
	for (s = 0; s < b->b_depth; s++) {
		b->b_rbuf[s] = aligned_alloc(4096, bs < 4096 ? 4096 : bs);
		if (b->b_rbuf[s] == NULL)
			return -ENOMEM;
	}
	return 0;
}

/* Free the buffers of bench_bufs(). */
static void bench_bufs_free(struct bench *b)
{
	unsigned s;

	free(b->b_wbuf);
	b->b_wbuf = NULL;
	for (s = 0; s < BENCH_DEPTH_MAX; s++) {
		free(b->b_rbuf[s]);
		b->b_rbuf[s] = NULL;
	}
}

/* Make a scratch id "@strata-bench-<pid>-<what>". */
static void bench_id(const char *what, char *text, size_t size,
		     struct clovis_id *id)
{
	snprintf(text, size, "@strata-bench-%ld-%s", (long)getpid(), what);
	clovis_id_parse(text, id);
}

/* Time WRITE then READ of nops single blocks of 1 << shift bytes. */
static int bench_obj(struct bench *b, uint32_t shift, uint64_t nops,
		     struct bench_res *res)
{
	struct cli *c = b->b_cli;
	struct clovis_obj_attr attr = { .oa_block_shift = shift,
					.oa_layout = CLOVIS_LAYOUT_PLAIN,
					.oa_tier = CLOVIS_TIER_FLASH };
	struct clovis_obj o;
	struct clovis_id id;
	char text[64], human[16];
	int rc;

	snprintf(human, sizeof human, "%u", 1u << shift);
	bench_id(human, text, sizeof text, &id);
	b->b_obj = &o;
	b->b_shift = shift;
	b->b_depth = bench_depth(shift);
	b->b_make = make_obj_op;
	b->b_check = check_obj_op;
	rc = cli_call(c, clovis_obj_init(&o, clovis_default_realm(c->c_cl),
					 &id, &attr));
	if (rc == 0)
		rc = cli_entity_run(c, &o.ob_entity, CLOVIS_EO_CREATE);
	if (rc < 0)
		return cli_fail(c, rc, "bench: create object %s", text);
	rc = bench_bufs(b);
	if (rc < 0)
		cli_msg(c, "buffers for %u-byte blocks", 1u << shift);
	cli_human(1ull << shift, human, sizeof human);
	b->b_ocode = CLOVIS_OC_WRITE;
	snprintf(res[0].br_name, sizeof res[0].br_name, "obj write %s", human);
	if (rc == 0)
		rc = bench_loop(b, nops, &res[0]);
	b->b_ocode = CLOVIS_OC_READ;
	snprintf(res[1].br_name, sizeof res[1].br_name, "obj read %s", human);
	if (rc == 0)
		rc = bench_loop(b, nops, &res[1]);
	res[0].br_bytes = res[1].br_bytes = nops << shift;
	bench_bufs_free(b);
	if (rc < 0)
		cli_fail(c, rc, "bench: %s blocks", human);
	cli_entity_run(c, &o.ob_entity, CLOVIS_EO_DELETE);
	return rc < 0 ? CLI_FAIL : 0;
}

/* Time PUT then GET of nops records, one per op. */
static int bench_idx(struct bench *b, uint64_t nops, struct bench_res *res)
{
	struct cli *c = b->b_cli;
	struct clovis_idx ix;
	struct clovis_id id;
	char text[64];
	int rc;

	bench_id("idx", text, sizeof text, &id);
	b->b_idx = &ix;
	b->b_depth = BENCH_DEPTH_MAX;
	b->b_make = make_idx_op;
	b->b_check = check_idx_op;
	rc = cli_call(c, clovis_idx_init(&ix, clovis_default_realm(c->c_cl),
					 &id));
	if (rc == 0)
		rc = cli_entity_run(c, &ix.in_entity, CLOVIS_EO_CREATE);
	if (rc < 0)
		return cli_fail(c, rc, "bench: create index %s", text);
	b->b_icode = CLOVIS_IC_PUT;
	snprintf(res[0].br_name, sizeof res[0].br_name, "idx put");
	rc = bench_loop(b, nops, &res[0]);
	b->b_icode = CLOVIS_IC_GET;
	snprintf(res[1].br_name, sizeof res[1].br_name, "idx get");
	if (rc == 0)
		rc = bench_loop(b, nops, &res[1]);
	res[0].br_bytes = res[1].br_bytes = nops * BENCH_VAL_LEN;
	if (rc < 0)
		cli_fail(c, rc, "bench: index records");
	cli_entity_run(c, &ix.in_entity, CLOVIS_EO_DELETE);
	return rc < 0 ? CLI_FAIL : 0;
}

/* Print the results as a table or a JSON array. */
static void bench_print(const struct cli *c, const struct bench_res *r,
			unsigned nr)
{
	unsigned i;

	if (!c->c_json)
		printf("%-20s %8s %9s %11s %9s\n", "test", "ops", "seconds",
		       "ops/s", "MiB/s");
	else
		printf("[");
	for (i = 0; i < nr; i++) {
		double sec = r[i].br_sec > 0 ? r[i].br_sec : 1e-9;
		double ops = (double)r[i].br_ops / sec;
		double mbs = (double)r[i].br_bytes / sec / 1048576.0;

		if (c->c_json)
			printf("%s{\"test\": \"%s\", \"ops\": %llu, "
			       "\"bytes\": %llu, \"seconds\": %.6f, "
			       "\"ops_per_s\": %.1f, \"mib_per_s\": %.2f}",
			       i ? ",\n " : "", r[i].br_name,
			       (unsigned long long)r[i].br_ops,
			       (unsigned long long)r[i].br_bytes, sec, ops,
			       mbs);
		else
			printf("%-20s %8llu %9.3f %11.1f %9.2f\n",
			       r[i].br_name, (unsigned long long)r[i].br_ops,
			       sec, ops, mbs);
	}
	if (c->c_json)
		printf("]\n");
}

/* Ops for blocks of 1 << shift: nops, capped at BENCH_BYTES_MAX. */
static uint64_t bench_nops(uint64_t nops, uint32_t shift)
{
	uint64_t cap = BENCH_BYTES_MAX >> shift;

	if (cap < 1)
		cap = 1;
	return nops < cap ? nops : cap;
}

/* strata bench [--ops N] [--block-size B]: time the main op kinds. */
int cmd_bench(struct cli *c)
{
	static const uint32_t shifts[] = { 12, 20 };
	struct bench_res res[6];
	struct bench *b;
	uint64_t nops = c->c_ops_set ? c->c_ops : BENCH_OPS_DEFAULT;
	unsigned i, nr = 0, nsizes = c->c_block_set ? 1 : 2;
	int rc = 0;

	if (nops == 0)
		return cli_usage(c, "--ops must be at least 1");
	b = calloc(1, sizeof *b);
	if (b == NULL)
		return cli_sys(ENOMEM, "bench");
	b->b_cli = c;
	memset(res, 0, sizeof res);
	if (!c->c_json && !c->c_quiet)
		printf("bench: store %s, up to %u ops in flight\n",
		       c->c_data_dir, BENCH_DEPTH_MAX);
	for (i = 0; i < nsizes && rc == 0; i++, nr += 2) {
		uint32_t shift = c->c_block_set ? c->c_block_shift : shifts[i];

		rc = bench_obj(b, shift, bench_nops(nops, shift), &res[nr]);
	}
	if (rc == 0) {
		rc = bench_idx(b, nops, &res[nr]);
		nr += 2;
	}
	free(b);
	if (rc == 0)
		bench_print(c, res, nr);
	return rc;
}
