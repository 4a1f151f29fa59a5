/*
 * cli_io.c — streaming object data between a file descriptor and an object
 * with several READ or WRITE ops in flight.
 *
 * The data is cut into chunks of whole blocks (1 MiB, or one block when
 * blocks are larger); written to a pdclust object, of whole stripes (its
 * data units' bytes: ring_chunk()), so that a write of a whole object
 * sends full-stripe ops, whose parity is computed from the op's own data,
 * not partial ones, each a read of the stripe's other units first.  A ring of slots holds one chunk each; a slot's op is
 * waited on, in launch order, before its buffer is reused, so the file is
 * read and written strictly in sequence while the library works on several
 * chunks at once.  WRITE buffers are reused only once their op is STABLE,
 * as clovis.h requires; READ buffers once their op is EXECUTED.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clovis/cli/cli.h"

/* One chunk in flight: its op, buffer and vectors. */
struct io_slot {
	struct clovis_op *s_op;
	void *s_buf;
	size_t s_len;       /* bytes of the chunk used (read: to output) */
	uint64_t s_start;   /* extent of the op, in blocks */
	uint64_t s_nr;
	void *s_bv_buf;
	size_t s_bv_len;
	struct clovis_extvec s_ext;
	struct clovis_bufvec s_bv;
};

/* The ring of slots over one object. */
struct io_ring {
	struct cli *r_cli;
	struct clovis_obj *r_obj;
	const char *r_what;
	uint32_t r_shift;
	size_t r_chunk;     /* bytes per slot: whole blocks */
	unsigned r_depth;
	unsigned r_next;    /* slot to use next */
	struct io_slot r_slot[IO_DEPTH_MAX];
};

/*
 * Bytes per op for object o: whole blocks, IO_CHUNK at least; for a
 * pdclust object whole stripes (N data units), at most IO_STRIPE_CHUNK_MAX
 * (a stripe larger than that goes in pieces of whole units: partial-stripe
 * writes).  A 4+2 object of 1 MiB units wrote 1 MiB ops before, each one
 * a read-modify-write of its stripe.
 */
static size_t ring_chunk(const struct clovis_obj *o, bool wr)
{
	const struct clovis_obj_attr *a = &o->ob_attr;
	size_t blk = (size_t)1 << a->oa_block_shift;
	size_t chunk = blk < IO_CHUNK ? IO_CHUNK : blk;
	size_t unit, stripe;

	if (!wr || a->oa_layout != CLOVIS_LAYOUT_PDCLUST ||
	    a->oa_data_units == 0 ||
	    a->oa_unit_shift < a->oa_block_shift || a->oa_unit_shift >= 40)
		return chunk;
	unit = (size_t)1 << a->oa_unit_shift;
	stripe = unit * a->oa_data_units;
	if (stripe > IO_STRIPE_CHUNK_MAX)
		return unit > chunk ? unit : chunk - chunk % unit;
	return (chunk + stripe - 1) / stripe * stripe;
}

/* Size the ring for the object's block size (and layout, for a write:
 * wr) and allocate its buffers. */
static int ring_init(struct io_ring *r, struct cli *c, struct clovis_obj *o,
		     const char *what, bool wr)
{
	unsigned i;

	memset(r, 0, sizeof *r);
	r->r_cli = c;
	r->r_obj = o;
	r->r_what = what;
	r->r_shift = o->ob_attr.oa_block_shift;
	r->r_chunk = ring_chunk(o, wr);
	r->r_depth = IO_RING_BYTES / r->r_chunk;
	if (r->r_depth > IO_DEPTH_MAX)
		r->r_depth = IO_DEPTH_MAX;
	if (r->r_depth < 2)
		r->r_depth = 2;
	for (i = 0; i < r->r_depth; i++) {
		r->r_slot[i].s_buf = aligned_alloc(4096, r->r_chunk);
		if (r->r_slot[i].s_buf == NULL)
			return cli_sys(ENOMEM, "%s: buffer of %zu bytes",
				       what, r->r_chunk);
	}
	return 0;
}

/* Free every op still held (waiting for it first) and every buffer. */
static void ring_fini(struct io_ring *r)
{
	unsigned i;

	for (i = 0; i < r->r_depth; i++) {
		clovis_op_free(r->r_slot[i].s_op);
		free(r->r_slot[i].s_buf);
	}
}

/* Make and launch the op of slot s (READ or WRITE of its extent). */
static int slot_launch(struct io_ring *r, struct io_slot *s,
		       enum clovis_obj_opcode opcode)
{
	struct cli *c = r->r_cli;
	int rc;

	s->s_ext.ev_nr = 1;
	s->s_ext.ev_start_blk = &s->s_start;
	s->s_ext.ev_nr_blks = &s->s_nr;
	s->s_bv_buf = s->s_buf;
	s->s_bv_len = (size_t)(s->s_nr << r->r_shift);
	s->s_bv.bv_nr = 1;
	s->s_bv.bv_buf = &s->s_bv_buf;
	s->s_bv.bv_len = &s->s_bv_len;
	rc = cli_call(c, clovis_obj_op(r->r_obj, opcode, &s->s_ext, &s->s_bv,
				       0, &s->s_op));
	if (rc == 0)
		rc = cli_call(c, clovis_op_launch(&s->s_op, 1));
	if (rc < 0)
		return cli_fail(c, rc, "%s: %s blocks %llu..%llu", r->r_what,
				opcode == CLOVIS_OC_READ ? "read" : "write",
				(unsigned long long)s->s_start,
				(unsigned long long)(s->s_start + s->s_nr - 1));
	return 0;
}

/* Wait for slot s to reach state (or FAILED) and free its op. */
static int slot_wait(struct io_ring *r, struct io_slot *s, uint32_t state)
{
	struct cli *c = r->r_cli;
	int rc;

	if (s->s_op == NULL)
		return 0;
	rc = clovis_op_wait(s->s_op, state | CLOVIS_OS_FAILED,
			    CLOVIS_TIME_NEVER);
	if (rc == 0)
		rc = clovis_op_rc(s->s_op);
	if (rc < 0)
		cli_op_msg(c, s->s_op);
	clovis_op_free(s->s_op);
	s->s_op = NULL;
	if (rc < 0)
		return cli_fail(c, rc, "%s: %s blocks %llu..%llu", r->r_what,
				state == CLOVIS_OS_EXECUTED ? "read" : "write",
				(unsigned long long)s->s_start,
				(unsigned long long)(s->s_start + s->s_nr - 1));
	return 0;
}

/* Read up to len bytes from fd, stopping early only at end of file. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = read(fd, (char *)buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Write all len bytes of buf to fd. */
static int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = write(fd, (const char *)buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* Fill slot s from fd; sets *eof when the file ended.  Returns 0 or 1. */
static int slot_fill(struct io_ring *r, struct io_slot *s, int fd, bool *eof)
{
	size_t bsize = (size_t)1 << r->r_shift;
	ssize_t n;

	n = read_full(fd, s->s_buf, r->r_chunk);
	if (n < 0)
		return cli_sys(errno, "%s: read input", r->r_what);
	s->s_len = (size_t)n;
	*eof = (size_t)n < r->r_chunk;
	if (n % bsize != 0)
		memset((char *)s->s_buf + n, 0, bsize - n % bsize);
	s->s_nr = ((size_t)n + bsize - 1) >> r->r_shift;
	return 0;
}

/* Stream fd into the object from block start on. */
int cli_io_write(struct cli *c, struct clovis_obj *o, uint64_t start, int fd,
		 struct cli_progress *p, uint64_t *bytes, const char *what)
{
	struct io_ring r;
	uint64_t blk = start;
	bool eof = false;
	unsigned i;
	int rc;

	*bytes = 0;
	rc = ring_init(&r, c, o, what, true);
	while (rc == 0 && !eof) {
		struct io_slot *s = &r.r_slot[r.r_next];

		rc = slot_wait(&r, s, CLOVIS_OS_STABLE);
		if (rc == 0)
			rc = slot_fill(&r, s, fd, &eof);
		if (rc != 0 || s->s_nr == 0)
			break;
		s->s_start = blk;
		rc = slot_launch(&r, s, CLOVIS_OC_WRITE);
		blk += s->s_nr;
		*bytes += s->s_len;
		cli_progress_add(p, s->s_len);
		r.r_next = (r.r_next + 1) % r.r_depth;
	}
	for (i = 0; i < r.r_depth && rc == 0; i++)
		rc = slot_wait(&r, &r.r_slot[(r.r_next + i) % r.r_depth],
			       CLOVIS_OS_STABLE);
	ring_fini(&r);
	return rc;
}

/* Set slot s to the next chunk of [*blk, end) and launch its READ. */
static int read_next(struct io_ring *r, struct io_slot *s, uint64_t *blk,
		     uint64_t end)
{
	uint64_t per = r->r_chunk >> r->r_shift;

	s->s_start = *blk;
	s->s_nr = end - *blk < per ? end - *blk : per;
	*blk += s->s_nr;
	return slot_launch(r, s, CLOVIS_OC_READ);
}

/* Wait for slot s's READ and copy at most *left bytes of it to fd. */
static int read_drain(struct io_ring *r, struct io_slot *s, int fd,
		      uint64_t *left, struct cli_progress *p)
{
	uint64_t len = s->s_nr << r->r_shift;
	int rc;

	rc = slot_wait(r, s, CLOVIS_OS_EXECUTED);
	if (rc != 0)
		return rc;
	if (len > *left)
		len = *left;
	if (write_full(fd, s->s_buf, (size_t)len) < 0)
		return cli_sys(errno, "%s: write output", r->r_what);
	*left -= len;
	cli_progress_add(p, len);
	return 0;
}

/* Stream blocks [start, start + nr) of the object into fd. */
int cli_io_read(struct cli *c, struct clovis_obj *o, uint64_t start,
		uint64_t nr, uint64_t limit, int fd, struct cli_progress *p,
		const char *what)
{
	struct io_ring r;
	uint64_t blk = start, end = start + nr, left = limit;
	unsigned i, launched = 0;
	int rc;

	rc = ring_init(&r, c, o, what, false);
	for (i = 0; rc == 0 && i < r.r_depth && blk < end; i++, launched++)
		rc = read_next(&r, &r.r_slot[i], &blk, end);
	while (rc == 0 && launched > 0) {
		struct io_slot *s = &r.r_slot[r.r_next];

		rc = read_drain(&r, s, fd, &left, p);
		launched--;
		if (rc == 0 && blk < end) {
			rc = read_next(&r, s, &blk, end);
			launched++;
		}
		r.r_next = (r.r_next + 1) % r.r_depth;
	}
	ring_fini(&r);
	return rc;
}
