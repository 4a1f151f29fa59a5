/*
 * h5_io.c — byte I/O of the HDF5 driver over the whole blocks of one
 * Clovis object (h5_internal.h).
 *
 * A write becomes one WRITE op per SH5_OP_BYTES: its first and last
 * blocks, when the write covers them only in part, are read first
 * (read-modify-write) unless they are among the last partial blocks
 * written (fi_edge) or past every block ever written (zeros).  The op is
 * waited EXECUTED, so every later read and write sees it and two writes of
 * one block apply in order; its buffer is kept with the op (fi_pend) until
 * the op is STABLE, which sh5_flush() waits for, as the oldest one is when
 * too many are in flight.
 *
 * A read that continues the previous large one launches the READ of the
 * range of the same size after it (read-ahead, fi_ra), so the store reads
 * chunk k + 1 while HDF5 copies chunk k; anything that changes blocks
 * (a write, a punch) first waits for that READ and drops it.
 *
 * Invariant: every byte of the object at or past fi_eof reads as zero
 * (blocks past it are punched when the file shrinks or when an open finds
 * writes past the saved EOF), so a write past EOF and a read of the
 * block holding EOF need nothing but the object's own bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateways/hdf5/h5_internal.h"

static const unsigned char sh5_sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n',
					 0x1a, '\n'};

/* ------------------------------------------------------- edge blocks */

static struct sh5_edge *sh5_edge_find(struct sh5_file *f, uint64_t blk)
{
	for (uint32_t i = 0; i < SH5_EDGE_NR; i++)
		if (f->fi_edge[i].eg_used != 0 && f->fi_edge[i].eg_blk == blk)
			return &f->fi_edge[i];
	return NULL;
}

/* Keep a copy of block blk (its bytes at src), evicting the oldest. */
static void sh5_edge_put(struct sh5_file *f, uint64_t blk, const char *src)
{
	struct sh5_edge *e = sh5_edge_find(f, blk), *old = &f->fi_edge[0];

	if (e == NULL) {
		for (uint32_t i = 0; i < SH5_EDGE_NR; i++)
			if (f->fi_edge[i].eg_used < old->eg_used)
				old = &f->fi_edge[i];
		e = old;
		if (e->eg_data == NULL)
			e->eg_data = malloc(f->fi_bsize);
		if (e->eg_data == NULL) {
			e->eg_used = 0;
			return; /* a cache: nothing lost but a read */
		}
		e->eg_blk = blk;
	}
	memcpy(e->eg_data, src, f->fi_bsize);
	e->eg_used = ++f->fi_clock;
}

void sh5_edge_clear(struct sh5_file *f)
{
	for (uint32_t i = 0; i < SH5_EDGE_NR; i++)
		f->fi_edge[i].eg_used = 0;
}

/* Cached blocks inside [blk, blk + nblk) take the bytes just written. */
static void sh5_edge_refresh(struct sh5_file *f, uint64_t blk, uint64_t nblk,
			     const char *buf)
{
	for (uint32_t i = 0; i < SH5_EDGE_NR; i++) {
		struct sh5_edge *e = &f->fi_edge[i];

		if (e->eg_used != 0 && e->eg_blk >= blk &&
		    e->eg_blk < blk + nblk)
			memcpy(e->eg_data, buf + ((e->eg_blk - blk) << f->fi_shift),
			       f->fi_bsize);
	}
}

/* --------------------------------------------------------- block ops */

/* One READ of blocks [blk, blk + nblk) into buf, waited EXECUTED. */
static int sh5_blocks_read(struct sh5_file *f, uint64_t blk, uint64_t nblk,
			   void *buf)
{
	size_t len = (size_t)(nblk << f->fi_shift);
	struct clovis_extvec ev = {1, &blk, &nblk};
	struct clovis_bufvec bv = {1, &buf, &len};
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(&f->fi_obj, CLOVIS_OC_READ, &ev, &bv, 0, &op);

	if (rc == 0)
		rc = clovis_op_launch(&op, 1);
	if (rc == 0)
		rc = sh5_wait(op, CLOVIS_OS_EXECUTED);
	if (rc != 0)
		rc = sh5_fail(rc, "strata h5: %s: reading blocks %llu+%llu: %s",
			      f->fi_name, (unsigned long long)blk,
			      (unsigned long long)nblk, op != NULL ?
			      clovis_op_errmsg(op) : clovis_errmsg());
	clovis_op_free(op);
	return rc;
}

/* Block blk's current bytes into dst: cached, zeros past the written
 * blocks, else read. */
static int sh5_block_get(struct sh5_file *f, uint64_t blk, char *dst)
{
	struct sh5_edge *e = sh5_edge_find(f, blk);

	if (e != NULL) {
		memcpy(dst, e->eg_data, f->fi_bsize);
		e->eg_used = ++f->fi_clock;
		return 0;
	}
	if (blk >= f->fi_blocks) {
		memset(dst, 0, f->fi_bsize);
		return 0;
	}
	return sh5_blocks_read(f, blk, 1, dst);
}

/* Wait until the oldest pending write is durable, and free it. */
static int sh5_reap_one(struct sh5_file *f)
{
	struct sh5_pending *p = &f->fi_pend[f->fi_pend_head];
	int rc = sh5_wait(p->pd_op, CLOVIS_OS_STABLE);

	if (rc != 0) {
		rc = sh5_fail(rc, "strata h5: %s: write of blocks %llu+%llu "
			      "not durable: %s", f->fi_name,
			      (unsigned long long)p->pd_blk,
			      (unsigned long long)p->pd_nblk,
			      clovis_op_errmsg(p->pd_op));
		if (f->fi_failed == 0)
			f->fi_failed = rc;
	}
	clovis_op_free(p->pd_op);
	free(p->pd_buf);
	f->fi_pend_bytes -= p->pd_len;
	memset(p, 0, sizeof *p);
	f->fi_pend_head = (f->fi_pend_head + 1) % SH5_PENDING_MAX;
	f->fi_pend_nr--;
	return rc;
}

int sh5_drain(struct sh5_file *f)
{
	int rc = 0, rc2;

	while (f->fi_pend_nr > 0) {
		rc2 = sh5_reap_one(f);
		if (rc == 0)
			rc = rc2;
	}
	return rc;
}

/*
 * Launch the WRITE of buf (len bytes, blocks [blk, blk + nblk)), which the
 * pending slot then owns, and wait until it is EXECUTED.
 */
static int sh5_blocks_write(struct sh5_file *f, uint64_t blk, uint64_t nblk,
			    char *buf, size_t len)
{
	struct sh5_pending *p;
	int rc = 0;

	while (rc == 0 && f->fi_pend_nr > 0 &&
	       (f->fi_pend_nr == SH5_PENDING_MAX ||
		f->fi_pend_bytes + len > SH5_PENDING_BYTES))
		rc = sh5_reap_one(f);
	if (rc != 0) {
		free(buf);
		return rc;
	}
	p = &f->fi_pend[(f->fi_pend_head + f->fi_pend_nr) % SH5_PENDING_MAX];
	p->pd_buf = buf;
	p->pd_len = len;
	p->pd_blk = blk;
	p->pd_nblk = nblk;
	p->pd_ev = (struct clovis_extvec){1, &p->pd_blk, &p->pd_nblk};
	p->pd_bv = (struct clovis_bufvec){1, &p->pd_buf, &p->pd_len};
	rc = clovis_obj_op(&f->fi_obj, CLOVIS_OC_WRITE, &p->pd_ev, &p->pd_bv,
			   CLOVIS_OF_HERE, &p->pd_op);
	if (rc == 0)
		rc = clovis_op_launch(&p->pd_op, 1);
	if (rc == 0)
		rc = sh5_wait(p->pd_op, CLOVIS_OS_EXECUTED);
	if (rc != 0) {
		rc = sh5_fail(rc, "strata h5: %s: writing blocks %llu+%llu: %s",
			      f->fi_name, (unsigned long long)blk,
			      (unsigned long long)nblk, p->pd_op != NULL ?
			      clovis_op_errmsg(p->pd_op) : clovis_errmsg());
		clovis_op_free(p->pd_op);
		free(buf);
		memset(p, 0, sizeof *p);
		return rc;
	}
	f->fi_pend_nr++;
	f->fi_pend_bytes += len;
	return 0;
}

/* ------------------------------------------------------------- writes */

/* One piece of a write (at most SH5_OP_BYTES): one op. */
static int sh5_write_piece(struct sh5_file *f, uint64_t addr, size_t n,
			   const char *src)
{
	uint64_t mask = f->fi_bsize - 1;
	uint64_t b0 = addr >> f->fi_shift, b1 = (addr + n - 1) >> f->fi_shift;
	uint64_t nblk = b1 - b0 + 1, head = addr & mask;
	uint64_t tail = (addr + n) & mask;
	size_t len = (size_t)(nblk << f->fi_shift);
	char *buf = aligned_alloc(4096, len < 4096 ? 4096 : len);
	int rc = 0;

	if (buf == NULL)
		return sh5_fail(-ENOMEM, "strata h5: %s: out of memory for a "
				"write of %zu bytes", f->fi_name, n);
	sh5_ra_clear(f);
	if (head != 0)
		rc = sh5_block_get(f, b0, buf);
	if (rc == 0 && tail != 0 && (b1 != b0 || head == 0))
		rc = sh5_block_get(f, b1, buf + len - f->fi_bsize);
	if (rc != 0) {
		free(buf);
		return rc;
	}
	memcpy(buf + head, src, n);
	sh5_edge_refresh(f, b0, nblk, buf);
	if (head != 0)
		sh5_edge_put(f, b0, buf);
	if (tail != 0)
		sh5_edge_put(f, b1, buf + len - f->fi_bsize);
	rc = sh5_blocks_write(f, b0, nblk, buf, len);
	if (rc != 0) {
		sh5_edge_clear(f); /* they may hold bytes never written */
		return rc;
	}
	if (b1 + 1 > f->fi_blocks)
		f->fi_blocks = b1 + 1;
	if (addr + n > f->fi_eof)
		f->fi_eof = addr + n;
	return 0;
}

static int sh5_range_check(struct sh5_file *f, uint64_t addr, size_t size,
			   const char *what)
{
	if (addr + size < addr || addr + size > f->fi_eoa)
		return sh5_fail(-EFBIG, "strata h5: %s: %s of %zu bytes at %llu"
				" past the end of address %llu", f->fi_name,
				what, size, (unsigned long long)addr,
				(unsigned long long)f->fi_eoa);
	return 0;
}

int sh5_write(struct sh5_file *f, uint64_t addr, size_t size,
	      const void *buf)
{
	const char *src = buf;
	int rc;

	if (!f->fi_rdwr)
		return sh5_fail(-EBADF, "strata h5: %s: opened read-only",
				f->fi_name);
	if (f->fi_failed != 0)
		return sh5_fail(-EBADF, "strata h5: %s: an earlier write failed"
				" (%s): close the file", f->fi_name,
				clovis_strerror(f->fi_failed));
	rc = sh5_range_check(f, addr, size, "write");
	while (rc == 0 && size > 0) {
		size_t n = size < SH5_OP_BYTES ? size : SH5_OP_BYTES;

		rc = sh5_write_piece(f, addr, n, src);
		addr += n;
		src += n;
		size -= n;
	}
	if (rc != 0 && f->fi_failed == 0)
		f->fi_failed = rc;
	return rc;
}

/* --------------------------------------------------------- read-ahead */

static void sh5_ra_drop(struct sh5_ra *r)
{
	if (r->ra_op != NULL) {
		/* a READ: EXECUTED is its end; its result is not wanted */
		(void)sh5_wait(r->ra_op, CLOVIS_OS_EXECUTED);
		clovis_op_free(r->ra_op);
		r->ra_op = NULL;
	}
	r->ra_nblk = 0;
}

void sh5_ra_clear(struct sh5_file *f)
{
	for (uint32_t i = 0; i < SH5_RA_SLOTS; i++)
		sh5_ra_drop(&f->fi_ra[i]);
}

void sh5_ra_fini(struct sh5_file *f)
{
	sh5_ra_clear(f);
	for (uint32_t i = 0; i < SH5_RA_SLOTS; i++) {
		free(f->fi_ra[i].ra_buf);
		f->fi_ra[i].ra_buf = NULL;
		f->fi_ra[i].ra_cap = 0;
	}
}

/* The slot whose READ holds blocks [blk, blk + nblk), waited EXECUTED;
 * NULL when none does (or its READ failed: the caller reads again and
 * reports that read's error). */
static struct sh5_ra *sh5_ra_find(struct sh5_file *f, uint64_t blk,
				  uint64_t nblk)
{
	for (uint32_t i = 0; i < SH5_RA_SLOTS; i++) {
		struct sh5_ra *r = &f->fi_ra[i];

		if (r->ra_op == NULL || blk < r->ra_blk ||
		    blk + nblk > r->ra_blk + r->ra_nblk)
			continue;
		if (sh5_wait(r->ra_op, CLOVIS_OS_EXECUTED) != 0) {
			sh5_ra_drop(r);
			return NULL;
		}
		return r;
	}
	return NULL;
}

/*
 * Launch the READ of the blocks holding bytes [from, from + size), capped
 * at the blocks that may hold data, into a slot other than keep (the one
 * being copied from).  A hint: any failure leaves the slot empty.
 */
static void sh5_ra_launch(struct sh5_file *f, uint64_t from, uint64_t size,
			  const struct sh5_ra *keep)
{
	uint64_t blk = from >> f->fi_shift;
	uint64_t last = (from + size - 1) >> f->fi_shift;
	struct sh5_ra *r = &f->fi_ra[0];

	if (last >= f->fi_blocks)
		last = f->fi_blocks - 1;
	if (f->fi_blocks == 0 || blk > last)
		return;
	for (uint32_t i = 0; i < SH5_RA_SLOTS; i++)
		if (&f->fi_ra[i] != keep) {
			r = &f->fi_ra[i];
			if (r->ra_op != NULL && r->ra_blk == blk &&
			    r->ra_nblk >= last - blk + 1)
				return; /* in flight already */
			if (r->ra_op == NULL)
				break;
		}
	sh5_ra_drop(r);
	r->ra_len = (size_t)((last - blk + 1) << f->fi_shift);
	if (r->ra_cap < r->ra_len) {
		free(r->ra_buf);
		r->ra_cap = 0;
		r->ra_buf = aligned_alloc(4096, r->ra_len < 4096 ? 4096 :
					  r->ra_len);
		if (r->ra_buf == NULL)
			return;
		r->ra_cap = r->ra_len;
	}
	r->ra_blk = blk;
	r->ra_nblk = last - blk + 1;
	r->ra_ev = (struct clovis_extvec){1, &r->ra_blk, &r->ra_nblk};
	r->ra_bv = (struct clovis_bufvec){1, &r->ra_buf, &r->ra_len};
	if (clovis_obj_op(&f->fi_obj, CLOVIS_OC_READ, &r->ra_ev, &r->ra_bv, 0,
			  &r->ra_op) != 0 ||
	    clovis_op_launch(&r->ra_op, 1) != 0) {
		clovis_op_free(r->ra_op);
		r->ra_op = NULL;
		r->ra_nblk = 0;
	}
}

/* -------------------------------------------------------------- reads */

/* One piece of a read (at most SH5_OP_BYTES), no bounds check. */
static int sh5_read_piece(struct sh5_file *f, uint64_t addr, size_t n,
			  char *dst)
{
	uint64_t mask = f->fi_bsize - 1;
	uint64_t b0 = addr >> f->fi_shift, b1 = (addr + n - 1) >> f->fi_shift;
	uint64_t head = addr & mask, nblk;
	struct sh5_edge *e;
	struct sh5_ra *ra;
	size_t len, whole = n;
	int rc;

	if (b0 >= f->fi_blocks) {
		memset(dst, 0, n);
		return 0;
	}
	if (b0 == b1 && (e = sh5_edge_find(f, b0)) != NULL) {
		memcpy(dst, e->eg_data + head, n);
		return 0;
	}
	if (b1 >= f->fi_blocks) { /* the rest is zeros */
		uint64_t end = f->fi_blocks << f->fi_shift;

		memset(dst + (end - addr), 0, (size_t)(addr + n - end));
		n = (size_t)(end - addr);
		b1 = f->fi_blocks - 1;
	}
	nblk = b1 - b0 + 1;
	len = (size_t)(nblk << f->fi_shift);
	ra = sh5_ra_find(f, b0, nblk);
	if (whole >= SH5_RA_MIN) {
		if (ra != NULL || addr == f->fi_rd_end)
			sh5_ra_launch(f, addr + whole, whole, ra);
		f->fi_rd_end = addr + whole;
	}
	if (ra != NULL) {
		const char *src = ra->ra_buf;

		memcpy(dst, src + ((b0 - ra->ra_blk) << f->fi_shift) + head, n);
		return 0;
	}
	if (head == 0 && (n & mask) == 0)
		return sh5_blocks_read(f, b0, nblk, dst);
	if (f->fi_rbuf_len < len) {
		free(f->fi_rbuf);
		f->fi_rbuf_len = 0;
		f->fi_rbuf = aligned_alloc(4096, len < 4096 ? 4096 : len);
		if (f->fi_rbuf == NULL)
			return sh5_fail(-ENOMEM, "strata h5: %s: out of memory"
					" for a read of %zu bytes", f->fi_name,
					n);
		f->fi_rbuf_len = len;
	}
	rc = sh5_blocks_read(f, b0, nblk, f->fi_rbuf);
	if (rc == 0)
		memcpy(dst, f->fi_rbuf + head, n);
	return rc;
}

static int sh5_read_raw(struct sh5_file *f, uint64_t addr, size_t size,
			char *dst)
{
	int rc = 0;

	while (rc == 0 && size > 0) {
		size_t n = size < SH5_OP_BYTES ? size : SH5_OP_BYTES;

		rc = sh5_read_piece(f, addr, n, dst);
		addr += n;
		dst += n;
		size -= n;
	}
	return rc;
}

int sh5_read(struct sh5_file *f, uint64_t addr, size_t size, void *buf)
{
	int rc = sh5_range_check(f, addr, size, "read");

	if (rc == 0)
		rc = sh5_read_raw(f, addr, size, buf);
	return rc;
}

int sh5_is_hdf5(struct sh5_file *f)
{
	unsigned char got[sizeof sh5_sig];
	uint64_t off = 0;
	int rc;

	for (uint32_t i = 0; i <= SH5_SIG_PROBES; i++) {
		if (off + sizeof got > f->fi_eof)
			break;
		rc = sh5_read_raw(f, off, sizeof got, (char *)got);
		if (rc != 0)
			return rc;
		if (memcmp(got, sh5_sig, sizeof got) == 0)
			return 1;
		off = off == 0 ? 512 : off * 2;
	}
	return 0;
}

/* ------------------------------------------------ flush and truncate */

int sh5_flush(struct sh5_file *f)
{
	int rc;

	if (!f->fi_rdwr)
		return 0;
	rc = sh5_drain(f);
	if (rc == 0 && f->fi_failed != 0)
		rc = sh5_fail(-EBADF, "strata h5: %s: an earlier write failed "
			      "(%s)", f->fi_name, clovis_strerror(f->fi_failed));
	if (rc != 0)
		return rc;
	if (f->fi_saved && f->fi_eoa == f->fi_saved_eoa &&
	    f->fi_eof == f->fi_saved_eof)
		return 0;
	return sh5_meta_save(f);
}

/* Punch blocks [from, to) in ops of at most CLOVIS_OP_BYTES_MAX. */
static int sh5_punch(struct sh5_file *f, uint64_t from, uint64_t to)
{
	uint64_t per = CLOVIS_OP_BYTES_MAX >> f->fi_shift;
	int rc = 0;

	while (rc == 0 && from < to) {
		uint64_t blk = from, nblk = to - from < per ? to - from : per;
		struct clovis_extvec ev = {1, &blk, &nblk};
		struct clovis_op *op = NULL;

		rc = clovis_obj_op(&f->fi_obj, CLOVIS_OC_FREE, &ev, NULL, 0, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		if (rc != 0)
			return sh5_fail(rc, "strata h5: %s: punching blocks "
					"%llu+%llu: %s", f->fi_name,
					(unsigned long long)blk,
					(unsigned long long)nblk,
					clovis_errmsg());
		from += nblk;
	}
	return rc;
}

int sh5_zero_past(struct sh5_file *f, uint64_t eof)
{
	uint64_t first = (eof + f->fi_bsize - 1) >> f->fi_shift;
	uint64_t part = eof >> f->fi_shift, off = eof & (f->fi_bsize - 1);
	int rc = sh5_drain(f);

	sh5_ra_clear(f);
	for (uint32_t i = 0; i < SH5_EDGE_NR; i++)
		if (f->fi_edge[i].eg_blk >= first)
			f->fi_edge[i].eg_used = 0;
	if (rc == 0 && first < f->fi_blocks)
		rc = sh5_punch(f, first, f->fi_blocks);
	if (rc == 0 && off != 0 && part < f->fi_blocks) {
		char *buf = aligned_alloc(4096, f->fi_bsize < 4096 ? 4096 :
					  f->fi_bsize);

		if (buf == NULL)
			return sh5_fail(-ENOMEM, "strata h5: out of memory");
		rc = sh5_block_get(f, part, buf);
		if (rc == 0) {
			memset(buf + off, 0, (size_t)(f->fi_bsize - off));
			sh5_edge_refresh(f, part, 1, buf);
			rc = sh5_blocks_write(f, part, 1, buf, f->fi_bsize);
		} else {
			free(buf);
		}
		if (rc == 0)
			rc = sh5_drain(f);
	}
	if (rc == 0 && first < f->fi_blocks)
		f->fi_blocks = first;
	return rc;
}

int sh5_truncate(struct sh5_file *f)
{
	int rc = 0;

	if (f->fi_eoa == f->fi_eof)
		return 0;
	if (!f->fi_rdwr)
		return sh5_fail(-EBADF, "strata h5: %s: truncate of a file "
				"opened read-only", f->fi_name);
	if (f->fi_eoa < f->fi_eof)
		rc = sh5_zero_past(f, f->fi_eoa);
	if (rc == 0)
		f->fi_eof = f->fi_eoa;
	return rc;
}
