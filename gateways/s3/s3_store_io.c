/*
 * s3_store_io.c — object data of the S3 gateway's store: the pool of
 * stream buffers, the writer (s3_wr: a fresh object written in chunk ops,
 * a few in flight, its sums computed on the way, optionally on a thread
 * of their own) and the reader (s3_rd: the record's object or parts, in
 * chunks with one chunk of read-ahead).  The store's mapping is described
 * in s3_store.c; what its files share is declared in s3_store_internal.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/sha.h>

#include "core/log.h"
#include "gateways/s3/s3.h"
#include "gateways/s3/s3_store_internal.h"

/* -------------------------------------------------------------- writer */

/*
 * Stream buffers: two sizes, S3_CHUNK (every write op of at most S3_CHUNK
 * bytes) and S3_BIG_CHUNK, mapped page-aligned (O_DIRECT takes them as
 * they are), the big ones on 2 MiB boundaries with MADV_HUGEPAGE (a fresh
 * 4 MiB buffer is then two page faults, not 1,024).  A buffer an upload
 * is done with goes on a LIFO list of its size (the most recently used
 * first: likely still in cache) while the lists hold at most
 * S3_WBUF_IDLE_MAX bytes; the next upload takes it from there.  Its
 * first word is the list link while it is idle.
 */
static struct {
	pthread_mutex_t wp_lock;
	void *wp_free[2];       /* S3_CHUNK, S3_BIG_CHUNK */
	uint64_t wp_idle;       /* bytes on the lists */
} wpool = {.wp_lock = PTHREAD_MUTEX_INITIALIZER};

static uint32_t wbuf_class(uint32_t chunk)
{
	return chunk <= S3_CHUNK ? 0 : 1;
}

static size_t wbuf_bytes(uint32_t cls)
{
	return cls == 0 ? S3_CHUNK : S3_BIG_CHUNK;
}

/* A fresh buffer of class cls, or NULL. */
static void *wbuf_map(uint32_t cls)
{
	size_t sz = wbuf_bytes(cls), al = cls == 0 ? 0 : 2u << 20;
	uint8_t *p, *a;

	p = mmap(NULL, sz + al, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (al == 0)
		return p;
	a = (uint8_t *)(((uintptr_t)p + al - 1) & ~(uintptr_t)(al - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + sz + al > a + sz)
		munmap(a + sz, (size_t)(p + sz + al - (a + sz)));
	madvise(a, sz, MADV_HUGEPAGE); /* a hint: no THP is no error */
	return a;
}

/* A stream buffer of at least chunk bytes (chunk <= S3_BIG_CHUNK). */
static void *wbuf_get(uint32_t chunk)
{
	uint32_t cls = wbuf_class(chunk);
	void *p;

	pthread_mutex_lock(&wpool.wp_lock);
	p = wpool.wp_free[cls];
	if (p != NULL) {
		memcpy(&wpool.wp_free[cls], p, sizeof(void *));
		wpool.wp_idle -= wbuf_bytes(cls);
	}
	pthread_mutex_unlock(&wpool.wp_lock);
	return p != NULL ? p : wbuf_map(cls);
}

/* Give back a buffer of wbuf_get(chunk) (NULL: nothing). */
static void wbuf_put(void *p, uint32_t chunk)
{
	uint32_t cls = wbuf_class(chunk);
	size_t sz = wbuf_bytes(cls);

	if (p == NULL)
		return;
	pthread_mutex_lock(&wpool.wp_lock);
	if (wpool.wp_idle + sz <= S3_WBUF_IDLE_MAX) {
		memcpy(p, &wpool.wp_free[cls], sizeof(void *));
		wpool.wp_free[cls] = p;
		wpool.wp_idle += sz;
		p = NULL;
	}
	pthread_mutex_unlock(&wpool.wp_lock);
	if (p != NULL)
		munmap(p, sz);
}

static void *wr_hash_main(void *arg)
{
	struct s3_wr *w = arg;

	pthread_mutex_lock(&w->w_hlock);
	for (;;) {
		uint64_t at, n;
		uint32_t i;

		while (w->w_hdone == w->w_hposted && !w->w_hstop)
			pthread_cond_wait(&w->w_hcond, &w->w_hlock);
		if (w->w_hdone == w->w_hposted)
			break;
		/* the stream bytes posted, up to the end of their buffer */
		at = w->w_hdone % w->w_chunk;
		n = w->w_hposted - w->w_hdone;
		if (n > w->w_chunk - at)
			n = w->w_chunk - at;
		i = (uint32_t)(w->w_hdone / w->w_chunk % S3_NBUF);
		pthread_mutex_unlock(&w->w_hlock);
		s3_sums_update(&w->w_sums, w->w_buf[i] + at, n);
		pthread_mutex_lock(&w->w_hlock);
		w->w_hdone += n;
		pthread_cond_broadcast(&w->w_hcond);
	}
	pthread_mutex_unlock(&w->w_hlock);
	return NULL;
}

/* Start the hashing thread; without it the receive thread hashes. */
static void wr_hash_start(struct s3_wr *w)
{
	pthread_mutex_init(&w->w_hlock, NULL);
	pthread_cond_init(&w->w_hcond, NULL);
	w->w_hasher = pthread_create(&w->w_hth, NULL, wr_hash_main, w) == 0;
	if (!w->w_hasher) {
		pthread_mutex_destroy(&w->w_hlock);
		pthread_cond_destroy(&w->w_hcond);
	}
}

/* Hand the stream bytes up to pos (in the buffers, in order) to the
 * hasher. */
static void wr_hash_post(struct s3_wr *w, uint64_t pos)
{
	pthread_mutex_lock(&w->w_hlock);
	w->w_hposted = pos;
	pthread_cond_broadcast(&w->w_hcond);
	pthread_mutex_unlock(&w->w_hlock);
	w->w_hmark = pos;
}

/* Wait until at most `left` posted bytes are still to be hashed. */
static void wr_hash_wait(struct s3_wr *w, uint64_t left)
{
	pthread_mutex_lock(&w->w_hlock);
	while (w->w_hposted - w->w_hdone > left)
		pthread_cond_wait(&w->w_hcond, &w->w_hlock);
	pthread_mutex_unlock(&w->w_hlock);
}

/* Hash what was posted, then end the thread. */
static void wr_hash_stop(struct s3_wr *w)
{
	if (!w->w_hasher)
		return;
	pthread_mutex_lock(&w->w_hlock);
	w->w_hstop = true;
	pthread_cond_broadcast(&w->w_hcond);
	pthread_mutex_unlock(&w->w_hlock);
	pthread_join(w->w_hth, NULL);
	pthread_mutex_destroy(&w->w_hlock);
	pthread_cond_destroy(&w->w_hcond);
	w->w_hasher = false;
}

/*
 * Ordered durability (embedded mode): one engine applies every update of
 * the store in one sequence of LMDB commits, each durable only with all
 * before it, and an update's data is durable before its commit (clovis.h,
 * "Durability order").  So an op launched after another op is EXECUTED
 * never survives a crash without it: the writer starts the data writes once
 * the in-flight record and the CREATE are EXECUTED, and the change that
 * records the object is launched once the writes are EXECUTED; each waits
 * for STABLE only before its buffers are reused or freed.  Cluster mode
 * gives no order across ops (other servers): every step waits for STABLE.
 */
static bool wr_ordered(void)
{
	return s3g.g_conf.sc_cluster[0] == 0;
}

/* The state a step waits for before the next one starts. */
static uint32_t wr_step_state(void)
{
	return wr_ordered() ? CLOVIS_OS_EXECUTED : CLOVIS_OS_STABLE;
}

/* Note the first failure of the writer (op's message, or msg). */
static void wr_fail(struct s3_wr *w, int rc, const char *msg)
{
	if (rc != 0 && w->w_rc == 0) {
		w->w_rc = rc;
		snprintf(w->w_msg, sizeof w->w_msg, "%s", msg);
	}
}

/* Free the write w holds (op i, made, never launched): no data written. */
static void wr_drop_held(struct s3_wr *w, uint32_t i)
{
	clovis_op_free(w->w_op[i]);
	w->w_op[i] = NULL;
	w->w_held = false;
}

/* Wait until write op i is STABLE (its buffer may be reused) and free it. */
static int wr_wait(struct s3_wr *w, uint32_t i)
{
	int rc;

	if (w->w_op[i] == NULL)
		return 0;
	if (w->w_held && clovis_op_state(w->w_op[i]) == CLOVIS_OS_INIT) {
		wr_drop_held(w, i); /* held for a change that did not run */
		return w->w_rc;
	}
	rc = clovis_op_wait(w->w_op[i], CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (rc != 0 && w->w_rc == 0 && w->w_committed)
		fprintf(stderr, "strata-s3: a write of a recorded object did "
			"not become durable: %s\n",
			clovis_op_errmsg(w->w_op[i]));
	wr_fail(w, rc, clovis_op_errmsg(w->w_op[i]));
	clovis_op_free(w->w_op[i]);
	w->w_op[i] = NULL;
	return w->w_rc;
}

/* Wait until write op i is applied (wr_step_state()); it stays in w_op. */
static int wr_wait_step(struct s3_wr *w, uint32_t i)
{
	int rc;

	if (w->w_op[i] == NULL || w->w_held)
		return w->w_rc;   /* a held write is applied with the change */
	rc = clovis_op_wait(w->w_op[i], wr_step_state(), CLOVIS_TIME_NEVER);
	wr_fail(w, rc, clovis_op_errmsg(w->w_op[i]));
	return w->w_rc;
}

/* Wait until the in-flight PUT and the CREATE are STABLE (or FAILED) and
 * free them with the record's value (ordered mode keeps them after
 * wr_created() until the object is done with). */
static void wr_cops_free(struct s3_wr *w)
{
	int k;

	for (k = 0; k < 2; k++) {
		if (w->w_cop[k] != NULL && clovis_op_wait(w->w_cop[k],
		    CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER) != 0 && w->w_obj)
			fprintf(stderr, "strata-s3: %s of a new object did not "
				"become durable: %s\n", k ? "the CREATE" :
				"the in-flight record",
				clovis_op_errmsg(w->w_cop[k]));
		clovis_op_free(w->w_cop[k]);
		w->w_cop[k] = NULL;
	}
	s3_buf_fini(&w->w_irec);
}

/*
 * Wait for the in-flight record PUT and the object CREATE launched by
 * wr_create(): applied (wr_step_state()) before any data is written, so the
 * record is durable before any data can be.  On failure, undo whichever of
 * the two succeeded.
 */
static int wr_created(struct s3_wr *w)
{
	int rc[2] = {0, 0}, k;

	if (w->w_cwaited)
		return w->w_rc;
	w->w_cwaited = true;
	for (k = 0; k < 2; k++) {
		if (w->w_cop[k] == NULL)
			continue;
		rc[k] = clovis_op_wait(w->w_cop[k], wr_step_state(),
				       CLOVIS_TIME_NEVER);
		if (rc[k] == 0 && k == 0)
			rc[k] = w->w_irc;
		wr_fail(w, rc[k], clovis_op_errmsg(w->w_cop[k]));
	}
	if (rc[0] != 0 || rc[1] != 0 || !wr_ordered())
		wr_cops_free(w);
	if (rc[1] != 0) {          /* no object: drop the record */
		w->w_obj = false;
		if (rc[0] == 0)
			s3_inflight_del(w->w_ikey);
	} else if (rc[0] != 0) {   /* an object nothing names: delete it */
		s3_entity_sync(&w->w_o.ob_entity, CLOVIS_EO_DELETE);
		w->w_obj = false;
	} else { /* s3_kill.py waits on this line before its SIGKILL */
		LOG_DEBUG("in-flight record of %s/%.*s%s applied",
			  w->w_bk->bk_name, w->w_rk != NULL ? (int)w->w_rkl : 0,
			  w->w_rk != NULL ? (const char *)w->w_rk : "",
			  w->w_pk != NULL ? " (a part)" : "");
	}
	w->w_t[1] = s3_now_ns();
	return w->w_rc;
}

static int wr_submit(struct s3_wr *w, uint32_t i, size_t len)
{
	uint64_t bs = 1ull << w->w_bshift;
	size_t pad = (size_t)((len + bs - 1) & ~(bs - 1));
	bool hold;
	int rc;

	if (wr_created(w) != 0)
		return w->w_rc;
	memset(w->w_buf[i] + len, 0, pad - len);
	w->w_blk[i] = w->w_off >> w->w_bshift;
	w->w_nblk[i] = pad >> w->w_bshift;
	w->w_ev[i] = (struct clovis_extvec){1, &w->w_blk[i], &w->w_nblk[i]};
	w->w_bv[i] = w->w_buf[i];
	w->w_bl[i] = pad;
	w->w_bvec[i] = (struct clovis_bufvec){1, &w->w_bv[i], &w->w_bl[i]};
	/* the only write of the object: held for the change's dtx (the
	 * CREATE is EXECUTED: the dtx may write the object); the thread
	 * that launches it (tx_dtx(), this one) waits for the dtx next, so
	 * its data I/O runs there (CLOVIS_OF_HERE: no hand-off to a worker
	 * and back) */
	hold = w->w_hold && wr_ordered() && w->w_off == 0 &&
	       w->w_expect != UINT64_MAX && w->w_expect <= w->w_chunk;
	rc = clovis_obj_op(&w->w_o, CLOVIS_OC_WRITE, &w->w_ev[i], &w->w_bvec[i],
			   hold ? CLOVIS_OF_HERE : 0, &w->w_op[i]);
	if (rc == 0 && hold)
		w->w_held = true;
	else if (rc == 0)
		rc = clovis_op_launch(&w->w_op[i], 1);
	if (rc != 0) {
		clovis_op_free(w->w_op[i]);
		w->w_op[i] = NULL;
		w->w_rc = rc;
		snprintf(w->w_msg, sizeof w->w_msg, "%s", clovis_errmsg());
	}
	w->w_off += w->w_chunk;
	return rc;
}

/*
 * Bytes per write op for an object of `expect` bytes (UINT64_MAX:
 * unknown): S3_BIG_CHUNK for big objects (fewer commits per byte),
 * S3_CHUNK by default and for an object of at most S3_CHUNK (one op: four
 * ops of a quarter cost ~36 more syscalls, 25 of them futex, and a third
 * more gateway CPU per 1 MiB PUT than one, docs/performance.md "one write
 * op per 1 MiB object"), and for an object between S3_CHUNK and
 * S3_NBUF * S3_CHUNK a quarter of it (a multiple of 64 KiB): its first
 * write is launched after a quarter of the body has arrived, not after
 * all of it, and its writes run S3_NBUF in parallel.
 */
static uint32_t wr_chunk(uint64_t expect)
{
	uint64_t c;

	if (expect == UINT64_MAX || expect <= S3_CHUNK)
		return S3_CHUNK;
	if (expect >= S3_BIG)
		return S3_BIG_CHUNK;
	c = (expect / S3_NBUF + 0xffff) & ~(uint64_t)0xffff;
	return c > S3_CHUNK ? S3_CHUNK : (uint32_t)c; /* > 256 KiB here */
}

/*
 * The bucket's objects have one block size (a view bucket: its namespace's,
 * so that the file is what the namespace would have made): every write op
 * covers whole blocks from a block boundary, so the chunk must be a
 * multiple of the block and fit a stream buffer.  A block over S3_CHUNK
 * takes S3_BIG_CHUNK ops (s3_view.c refuses namespaces of blocks over
 * S3_BIG_CHUNK); a smaller one rounds the chunk up to a multiple of it
 * (S3_CHUNK is one, so the chunk stays within its buffer class).
 */
static void wr_fixed_bshift(struct s3_wr *w, uint32_t bshift)
{
	uint32_t bs = 1u << bshift;

	w->w_bshift = bshift;
	if (bs > S3_CHUNK)
		w->w_chunk = S3_BIG_CHUNK;
	else
		w->w_chunk = (w->w_chunk + bs - 1) & ~(bs - 1);
}

/*
 * Create the object and its in-flight record: both ops are launched
 * together (one group commit instead of two in series) and waited for in
 * wr_created(), before the first write, so that the first buffer of the
 * body is received meanwhile.  The record names the object before the
 * object can hold data: a crash after the CREATE committed and before the
 * record did can leave only an empty object (no space).
 */
static int wr_create(struct s3_wr *w)
{
	struct clovis_obj_attr a = {0};
	struct clovis_id id;
	uint8_t raw[16];
	int rc;

	w->w_bshift = w->w_expect != UINT64_MAX && w->w_expect < (1u << 20)
			      ? 12 : 16;
	w->w_chunk = wr_chunk(w->w_expect);
	if (w->w_bk->bk_bshift != 0)
		wr_fixed_bshift(w, w->w_bk->bk_bshift);
	a.oa_block_shift = w->w_bshift;
	a.oa_layout = w->w_bk->bk_layout;
	a.oa_tier = w->w_bk->bk_vw != NULL ? w->w_bk->bk_tier
					   : CLOVIS_TIER_FLASH;
	s3_rand_id(&id);
	w->w_ikl = s3_inflight_key(&id, w->w_ikey);
	s3_put_id(raw, &w->w_bk->bk_cont.co_entity.en_id);
	s3_tlv_add(&w->w_irec, T_CONT, raw, 16);
	s3_tlv_add(&w->w_irec, T_BUCKET, w->w_bk->bk_name,
		   (uint32_t)strlen(w->w_bk->bk_name));
	if (w->w_rk != NULL)
		s3_tlv_add(&w->w_irec, T_KEY, w->w_rk, (uint32_t)w->w_rkl);
	if (w->w_pk != NULL)
		s3_tlv_add(&w->w_irec, T_UPLOAD, w->w_pk, (uint32_t)w->w_pkl);
	rc = w->w_irec.b_oom ? -ENOMEM : 0;
	w->w_ikp = w->w_ikey;
	w->w_ivp = w->w_irec.b_data;
	w->w_ivl = w->w_irec.b_len;
	w->w_ikv = (struct clovis_bufvec){1, &w->w_ikp, &w->w_ikl};
	w->w_ivv = (struct clovis_bufvec){1, &w->w_ivp, &w->w_ivl};
	if (rc == 0)
		rc = clovis_idx_op(&s3g.g_inflight, CLOVIS_IC_PUT, &w->w_ikv,
				   &w->w_ivv, &w->w_irc, CLOVIS_IF_OVERWRITE,
				   &w->w_cop[0]);
	if (rc == 0)
		rc = clovis_obj_init(&w->w_o, &w->w_bk->bk_cont.co_realm, &id,
				     &a);
	if (rc == 0)
		rc = clovis_entity_op(&w->w_o.ob_entity, CLOVIS_EO_CREATE,
				      &w->w_cop[1]);
	if (rc == 0)
		rc = clovis_op_launch(w->w_cop, 2);
	if (rc != 0) {
		int k;

		snprintf(w->w_msg, sizeof w->w_msg, "%s", clovis_errmsg());
		for (k = 0; k < 2; k++) { /* launched ones run to the end */
			if (w->w_cop[k] != NULL &&
			    clovis_op_state(w->w_cop[k]) != CLOVIS_OS_INIT)
				clovis_op_wait(w->w_cop[k], CLOVIS_OS_STABLE,
					       CLOVIS_TIME_NEVER);
			clovis_op_free(w->w_cop[k]);
			w->w_cop[k] = NULL;
		}
		s3_buf_fini(&w->w_irec);
		s3_obj_delete(&w->w_bk->bk_cont, &id);
		s3_inflight_del(w->w_ikey);
		return w->w_rc = rc;
	}
	w->w_obj = true;
	w->w_inline = false;
	/* an object of S3_CHUNK or more whose sums include MD5: the sums on
	 * a thread of its own, overlapped with the receive and the writes
	 * (smaller ones, bodies of unknown size, and sums of CRCs only, at
	 * several GiB/s on one core, are computed by the receive thread: a
	 * thread and its hand-offs cost more than they save then) */
	if (w->w_len == 0 && w->w_expect != UINT64_MAX &&
	    w->w_expect >= S3_CHUNK && (w->w_sums.s_algs & S3_SUM_MD5))
		wr_hash_start(w);
	return 0;
}

int s3_wr_begin(struct s3_wr *w, struct s3_bucket *b, uint64_t expect,
		uint32_t algs, const uint8_t *ikey, size_t ikl,
		const uint8_t *pkey, size_t pkl)
{
	memset(w, 0, sizeof *w);
	w->w_t[0] = s3_now_ns();
	w->w_bk = b;
	w->w_rk = ikey;
	w->w_rkl = ikl;
	w->w_pk = pkey;
	w->w_pkl = pkl;
	w->w_expect = expect;
	w->w_chunk = S3_CHUNK;
	if (s3_sums_init(&w->w_sums, algs) != 0)
		return -ENOMEM;
	w->w_inline = true;
	/* parts and the files of view buckets are always objects */
	if (pkey != NULL || b->bk_vw != NULL ||
	    (expect != UINT64_MAX && expect > s3g.g_conf.sc_inline_max))
		return wr_create(w);
	return 0;
}

static int wr_stream(struct s3_wr *w, const char *p, size_t n)
{
	while (n > 0 && w->w_rc == 0) {
		size_t c;

		if (w->w_buf[w->w_cur] == NULL &&
		    (w->w_buf[w->w_cur] = wbuf_get(w->w_chunk)) == NULL)
			return w->w_rc = -ENOMEM;
		c = w->w_chunk - w->w_fill;
		if (c > n)
			c = n;
		memcpy(w->w_buf[w->w_cur] + w->w_fill, p, c);
		w->w_fill += c;
		w->w_spos += c;
		p += c;
		n -= c;
		/* the hasher follows the receive within S3_HASH_STEP */
		if (w->w_hasher && (w->w_fill == w->w_chunk ||
				    w->w_spos - w->w_hmark >= S3_HASH_STEP))
			wr_hash_post(w, w->w_spos);
		if (w->w_fill == w->w_chunk) {
			if (wr_submit(w, w->w_cur, w->w_chunk) != 0)
				break;
			w->w_cur = (w->w_cur + 1) % S3_NBUF;
			w->w_fill = 0;
			if (w->w_hasher) /* buffer w_cur hashed */
				wr_hash_wait(w, (uint64_t)(S3_NBUF - 1) *
						w->w_chunk);
			wr_wait(w, w->w_cur);
		}
	}
	return w->w_rc;
}

int s3_wr_data(struct s3_wr *w, const void *p, size_t n)
{
	if (w->w_rc != 0)
		return w->w_rc;
	w->w_len += n;
	if (!w->w_hasher)
		s3_sums_update(&w->w_sums, p, n);
	if (w->w_inline) {
		if (w->w_len <= s3g.g_conf.sc_inline_max) {
			s3_buf_add(&w->w_ibuf, p, n);
			return w->w_ibuf.b_oom ? (w->w_rc = -ENOMEM) : 0;
		}
		if (wr_create(w) != 0)
			return w->w_rc;
		if (wr_stream(w, w->w_ibuf.b_data ? w->w_ibuf.b_data : "",
			      w->w_ibuf.b_len) != 0)
			return w->w_rc;
		s3_buf_fini(&w->w_ibuf);
	}
	return wr_stream(w, p, n);
}

int s3_wr_finish(struct s3_wr *w)
{
	uint32_t i;

	w->w_t[2] = s3_now_ns();
	if (!w->w_inline && w->w_rc == 0 && w->w_fill > 0)
		wr_submit(w, w->w_cur, w->w_fill);
	if (w->w_hasher && w->w_rc == 0)
		wr_hash_post(w, w->w_spos);
	wr_hash_stop(w);
	wr_created(w);
	/* a failed writer, or a body not of the announced length (the PUT is
	 * refused, IncompleteBody): the held write is dropped unlaunched */
	if (w->w_held && (w->w_rc != 0 || w->w_len != w->w_expect))
		wr_drop_held(w, 0);
	for (i = 0; i < S3_NBUF; i++)
		wr_wait_step(w, i);
	w->w_t[3] = s3_now_ns();
	s3_sums_final(&w->w_sums);
	return w->w_rc;
}

static void wr_release(struct s3_wr *w)
{
	uint32_t i;

	wr_hash_stop(w);
	wr_created(w);
	for (i = 0; i < S3_NBUF; i++) {
		wr_wait(w, i);
		wbuf_put(w->w_buf[i], w->w_chunk);
		w->w_buf[i] = NULL;
	}
	wr_cops_free(w);
	s3_buf_fini(&w->w_ibuf);
	s3_sums_fini(&w->w_sums);
}

void s3_wr_abort(struct s3_wr *w)
{
	if (w->w_bk == NULL)
		return;
	wr_release(w);
	if (w->w_obj && !w->w_committed &&
	    s3_obj_delete(&w->w_bk->bk_cont, &w->w_o.ob_entity.en_id) == 0)
		s3_inflight_del(w->w_ikey);
	w->w_bk = NULL;
}

/* The record naming the object is durable: its in-flight record went
 * with it, or goes after the reply (janitor). */
void s3_wr_done(struct s3_wr *w, bool ifl_gone)
{
	w->w_committed = true;
	if (w->w_obj && !ifl_gone)
		s3_inflight_del_later(w->w_ikey);
	wr_release(w);
	w->w_bk = NULL;
}

/* Outcome unknown: the object may be referenced; its in-flight record
 * (gone if the change committed) leaves it to the restart rule. */
void s3_wr_keep(struct s3_wr *w)
{
	w->w_committed = true;
	wr_release(w);
	w->w_bk = NULL;
}

/* -------------------------------------------------------------- reader */

int s3_rd_open(struct s3_rd *r, struct s3_bucket *b, void *rec, size_t len)
{
	int rc;

	memset(r, 0, sizeof *r);
	r->r_bk = b;
	r->r_rec = rec;
	r->r_rec_len = len;
	r->r_part = -1;
	rc = s3_orec_decode(rec, len, &r->r_or);
	r->r_end = r->r_or.or_size;
	r->r_chunk = r->r_or.or_size >= S3_BIG ? S3_BIG_CHUNK : S3_CHUNK;
	/* a read op covers whole blocks: a chunk of at least one (a file of
	 * a view bucket may have blocks larger than S3_CHUNK) */
	if (r->r_or.or_bshift > 0 && (1ull << r->r_or.or_bshift) > r->r_chunk)
		r->r_chunk = 1u << r->r_or.or_bshift;
	return rc;
}

/* The segment of the object holding byte off: id, start, size. */
static int rd_segment(struct s3_rd *r, uint64_t off, int *part,
		      struct clovis_id *id, uint64_t *sstart, uint64_t *ssize)
{
	uint64_t s = 0;
	uint32_t k;

	if (r->r_or.or_has_id) {
		*part = 0;
		*id = r->r_or.or_id;
		*sstart = 0;
		*ssize = r->r_or.or_size;
		return 0;
	}
	for (k = 0; k < r->r_or.or_nparts; k++) {
		uint64_t sz = s3_u64(r->r_or.or_parts + S3_PART_STRIDE * k + 16);

		if (off < s + sz) {
			*part = (int)k;
			s3_get_id(r->r_or.or_parts + S3_PART_STRIDE * k, id);
			*sstart = s;
			*ssize = sz;
			return 0;
		}
		s += sz;
	}
	return -EINVAL;
}

/*
 * Make (not launch) a READ of the chunk holding object byte off into buf:
 * the op's vectors in *blk.. *bvec (kept by the caller while it runs);
 * *start and *len: the object bytes it will hold.  Opens the segment's
 * object when it is not the open one, unless same_part (read-ahead stays
 * in the open object: -EAGAIN).
 */
static int rd_make(struct s3_rd *r, uint64_t off, char *buf, bool same_part,
		   uint64_t *blk, uint64_t *nblk, void **bv, size_t *bl,
		   struct clovis_extvec *ev, struct clovis_bufvec *bvec,
		   uint64_t *start, uint64_t *len, struct clovis_op **op)
{
	struct clovis_id id;
	uint64_t ss, sz, rel, bs;
	int part, rc = rd_segment(r, off, &part, &id, &ss, &sz);

	if (rc != 0)
		return rc;
	if (r->r_part != part) {
		if (same_part)
			return -EAGAIN;
		rc = clovis_obj_init(&r->r_o, &r->r_bk->bk_cont.co_realm, &id,
				     NULL);
		if (rc == 0)
			rc = s3_entity_sync(&r->r_o.ob_entity, CLOVIS_EO_OPEN);
		if (rc != 0)
			return rc;
		r->r_part = part;
	}
	bs = 1ull << r->r_o.ob_attr.oa_block_shift;
	if (bs > r->r_chunk)
		return -EINVAL;
	rel = (off - ss) / r->r_chunk * r->r_chunk;
	*len = sz - rel < r->r_chunk ? sz - rel : r->r_chunk;
	*blk = rel / bs;
	*nblk = (*len + bs - 1) / bs;
	*bv = buf;
	*bl = *nblk * bs;
	*ev = (struct clovis_extvec){1, blk, nblk};
	*bvec = (struct clovis_bufvec){1, bv, bl};
	*start = ss + rel;
	return clovis_obj_op(&r->r_o, CLOVIS_OC_READ, ev, bvec, 0, op);
}

int s3_rd_first(struct s3_rd *r, uint64_t off)
{
	struct clovis_id id;
	uint64_t ss, sz;
	int part, rc;

	if ((!r->r_or.or_has_id && r->r_or.or_nparts == 0) ||
	    off >= r->r_or.or_size || r->r_part >= 0)
		return 0;
	rc = rd_segment(r, off, &part, &id, &ss, &sz);
	if (rc == 0)
		rc = clovis_obj_init(&r->r_o, &r->r_bk->bk_cont.co_realm, &id,
				     NULL);
	if (rc == 0)
		rc = s3_entity_sync(&r->r_o.ob_entity, CLOVIS_EO_OPEN);
	if (rc == 0)
		r->r_part = part;
	return rc;
}

static int rd_alloc(struct s3_rd *r, char **buf)
{
	if (*buf == NULL &&
	    posix_memalign((void **)buf, 4096, r->r_chunk) != 0) {
		*buf = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Wait for the read-ahead; 0 when it holds its bytes, -ENOENT: none. */
static int rd_ahead_wait(struct s3_rd *r)
{
	int rc;

	if (r->r_pop == NULL)
		return -ENOENT;
	rc = clovis_op_wait(r->r_pop, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	clovis_op_free(r->r_pop);
	r->r_pop = NULL;
	return rc;
}

/* Start reading the chunk after r_buf's when the range goes on in the
 * same object; errors are left to the synchronous read that follows. */
static void rd_ahead(struct s3_rd *r)
{
	uint64_t next = r->r_bstart + r->r_blen;

	if (r->r_pop != NULL || next >= r->r_end || r->r_blen < r->r_chunk ||
	    rd_alloc(r, &r->r_pbuf) != 0)
		return;
	if (rd_make(r, next, r->r_pbuf, true, &r->r_pblk, &r->r_pnblk,
		    &r->r_pbv, &r->r_pbl, &r->r_pev, &r->r_pbvec, &r->r_pstart,
		    &r->r_plen, &r->r_pop) != 0 ||
	    clovis_op_launch(&r->r_pop, 1) != 0) {
		clovis_op_free(r->r_pop);
		r->r_pop = NULL;
	}
}

/* Make r_buf hold the chunk of byte off: the read-ahead when it is that
 * chunk, else a synchronous read. */
static int rd_load(struct s3_rd *r, uint64_t off)
{
	uint64_t blk, nblk, start, len;
	struct clovis_extvec ev;
	struct clovis_bufvec bvec;
	struct clovis_op *op = NULL;
	void *bv;
	size_t bl;
	bool hit = r->r_pop != NULL && off >= r->r_pstart &&
		   off < r->r_pstart + r->r_plen;
	int rc = rd_ahead_wait(r);

	if (hit && rc == 0) {
		char *t = r->r_buf;

		r->r_buf = r->r_pbuf;
		r->r_pbuf = t;
		r->r_bstart = r->r_pstart;
		r->r_blen = r->r_plen;
		return 0;
	}
	rc = rd_alloc(r, &r->r_buf);
	if (rc == 0)
		rc = rd_make(r, off, r->r_buf, false, &blk, &nblk, &bv, &bl,
			     &ev, &bvec, &start, &len, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		return rc;
	r->r_bstart = start;
	r->r_blen = len;
	return 0;
}

/*
 * A range that one read op holds (an object of one segment, the range
 * inside one chunk: a GET of an object up to S3_CHUNK): read it into r_buf
 * and point *p at its first byte, so that the reply is sent from the read
 * buffer (no copy into libmicrohttpd's, header and body in one writev).
 * -EAGAIN: the range needs several reads and is streamed (s3_rd_read()).
 */
int s3_rd_span(struct s3_rd *r, uint64_t off, uint64_t n, const char **p)
{
	int rc;

	if (r->r_or.or_is_inline || !r->r_or.or_has_id || n == 0 ||
	    off + n > r->r_or.or_size ||
	    off / r->r_chunk != (off + n - 1) / r->r_chunk)
		return -EAGAIN;
	rc = rd_load(r, off);
	if (rc != 0)
		return rc;
	*p = r->r_buf + (off - r->r_bstart);
	return 0;
}

long s3_rd_read(struct s3_rd *r, uint64_t off, char *out, size_t n)
{
	uint64_t avail;
	int rc;

	if (off >= r->r_or.or_size)
		return 0;
	if (n > r->r_or.or_size - off)
		n = (size_t)(r->r_or.or_size - off);
	if (r->r_or.or_is_inline) {
		memcpy(out, r->r_or.or_inline + off, n);
		return (long)n;
	}
	if (r->r_or.or_hole) { /* a file of a view bucket never written */
		memset(out, 0, n);
		return (long)n;
	}
	if (r->r_buf == NULL || off < r->r_bstart ||
	    off >= r->r_bstart + r->r_blen) {
		rc = rd_load(r, off);
		if (rc != 0)
			return rc;
		rd_ahead(r);
	}
	avail = r->r_bstart + r->r_blen - off;
	if (n > avail)
		n = (size_t)avail;
	memcpy(out, r->r_buf + (off - r->r_bstart), n);
	return (long)n;
}

void s3_rd_close(struct s3_rd *r)
{
	rd_ahead_wait(r);
	free(r->r_pbuf);
	r->r_pbuf = NULL;
	free(r->r_buf);
	free(r->r_rec);
	r->r_buf = NULL;
	r->r_rec = NULL;
}
