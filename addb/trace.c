/*
 * trace.c — the ADDB trace records (addb/addb.h "trace records"): a
 * bounded file /dev/shm/strata-addb.PID.trace of one ring per thread row,
 * made when tracing is first switched on, never grown; the switch in the
 * metrics region's header; the reader.
 *
 * File: struct trace_hdr, then ADDB_ROWS rings, each a struct trace_ring
 * (the count of records ever written to it) and tr_cap records.  A writer
 * reserves its slot with an atomic add on the ring's count, fills the
 * record and stores its ar_seq (the slot's index + 1) last, with release;
 * a reader keeps a record only when its ar_seq is the one its place in
 * the ring says (a record being written or overwritten is left out).
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "addb/addb.h"
#include "addb/addb_internal.h"
#include "core/errors.h"

#define TRACE_MAGIC "STRTRACE"
#define TRACE_VERSION 2u

struct trace_hdr {
	char th_magic[8];
	uint32_t th_version;
	uint32_t th_hdr_size;
	uint64_t th_pid;
	uint32_t th_nr_rings;
	uint32_t th_rec_size;
	uint64_t th_cap;          /**< records per ring */
	uint64_t th_ring_off;     /**< first ring */
	uint64_t th_ring_stride;  /**< bytes from a ring to the next */
	uint64_t th_size;         /**< bytes of the file */
	uint64_t th_pad[2];
};
_Static_assert(sizeof(struct trace_hdr) == 80, "trace_hdr is on disk");
_Static_assert(sizeof(struct addb_rec) == 48, "addb_rec is on disk");

struct trace_ring {
	uint64_t tr_count;        /**< records ever written (atomic) */
	uint64_t tr_pad[7];
};

static const uint32_t trace_zero;
volatile uint32_t *addb_trace_sw = (volatile uint32_t *)&trace_zero;

static struct {
	pthread_mutex_t lock;
	struct trace_hdr *th;     /* NULL until made; published last */
	bool failed;              /* could not be made: not tried again
				   * until the switch changes */
	uint32_t failed_sw;       /* the switch when it failed */
	int fd;
	pid_t owner;
	char path[80];
} tg = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

#ifndef STRATA_NO_ADDB
static uint64_t trace_next_id;
__thread uint64_t addb_cur_trace;
static __thread uint64_t t_ops;

#endif

/* The switch of this process's region (called once it is made). */
void addb_trace_attach(struct addb_hdr *h)
{
	addb_trace_sw = &h->ah_trace_sample;
}

/* A forked child: neither the parent's switch nor its trace file. */
void addb_trace_atfork_child(void)
{
	addb_trace_sw = (volatile uint32_t *)&trace_zero;
	if (tg.fd >= 0)
		close(tg.fd);
	tg.fd = -1;
	tg.th = NULL;
	tg.failed = false;
	tg.path[0] = '\0';
	pthread_mutex_init(&tg.lock, NULL);
}

/* At a normal exit: the trace file goes with the region. */
__attribute__((destructor)) static void trace_exit(void)
{
	if (tg.th != NULL && tg.owner == getpid() && tg.path[0])
		unlink(tg.path);
}

#ifndef STRATA_NO_ADDB
static uint64_t trace_layout(struct trace_hdr *t, uint32_t mib)
{
	uint64_t size = (uint64_t)mib << 20;

	memset(t, 0, sizeof *t);
	memcpy(t->th_magic, TRACE_MAGIC, sizeof t->th_magic);
	t->th_version = TRACE_VERSION;
	t->th_hdr_size = sizeof *t;
	t->th_pid = (uint64_t)getpid();
	t->th_nr_rings = ADDB_ROWS;
	t->th_rec_size = sizeof(struct addb_rec);
	t->th_ring_off = 4096;
	t->th_cap = (size - t->th_ring_off) / ADDB_ROWS /
		    sizeof(struct addb_rec) - 2;
	t->th_ring_stride = sizeof(struct trace_ring) +
			    t->th_cap * sizeof(struct addb_rec);
	t->th_size = t->th_ring_off + t->th_ring_stride * ADDB_ROWS;
	return t->th_size;
}

/* Make the trace file (tg.lock held); its size is fixed here. */
static void trace_make_locked(const struct addb_hdr *h)
{
	uint32_t mib = h->ah_trace_mib ? h->ah_trace_mib : ADDB_TRACE_MIB_DEFAULT;
	struct trace_hdr t;
	void *p;
	int fd;

	if (tg.th != NULL || (tg.failed && tg.failed_sw == *addb_trace_sw))
		return;
	tg.failed = true;
	tg.failed_sw = *addb_trace_sw;
	if (mib > ADDB_TRACE_MIB_MAX)
		mib = ADDB_TRACE_MIB_DEFAULT;
	trace_layout(&t, mib);
	snprintf(tg.path, sizeof tg.path, ADDB_SHM_DIR "/" ADDB_SHM_PREFIX
		 "%d.trace", (int)getpid());
	fd = addb_region_create(tg.path);
	if (fd < 0)
		return;
	if (posix_fallocate(fd, 0, (off_t)t.th_size) != 0)
		goto out_unlink;
	p = mmap(NULL, t.th_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto out_unlink;
	memcpy(p, &t, sizeof t);
	tg.fd = fd;
	tg.owner = getpid();
	tg.failed = false;
	__atomic_store_n(&tg.th, p, __ATOMIC_RELEASE);
	return;
out_unlink:
	unlink(tg.path);
	close(fd);
	tg.path[0] = '\0';
}

uint64_t addb_trace_op(void)
{
	uint32_t n = *addb_trace_sw;

	if (n == 0 || ++t_ops % n != 0)
		return 0;
	return __atomic_add_fetch(&trace_next_id, 1, __ATOMIC_RELAXED);
}

uint64_t addb_trace_id(void)
{
	return __atomic_add_fetch(&trace_next_id, 1, __ATOMIC_RELAXED);
}

void addb_rec(uint32_t kind, uint64_t id, uint32_t a, uint64_t b,
	      uint64_t c)
{
	struct trace_hdr *t;
	struct trace_ring *r;
	struct addb_rec *rec;
	uint64_t i, ts;

	if (!addb_tracing())
		return;
	ts = addb_now_ns(); /* before the file is made, at the first record */
	t = __atomic_load_n(&tg.th, __ATOMIC_ACQUIRE);
	if (t == NULL && __atomic_load_n(&tg.failed, __ATOMIC_RELAXED) &&
	    tg.failed_sw == *addb_trace_sw)
		return; /* could not be made: no lock taken per record */
	if (t == NULL) {
		struct addb_hdr *h = addb_hdr_get();

		if (h == NULL)
			return;
		pthread_mutex_lock(&tg.lock);
		trace_make_locked(h);
		pthread_mutex_unlock(&tg.lock);
		t = __atomic_load_n(&tg.th, __ATOMIC_ACQUIRE);
		if (t == NULL)
			return;
	}
	r = (struct trace_ring *)((char *)t + t->th_ring_off +
		t->th_ring_stride * (addb_thread_index() % t->th_nr_rings));
	i = __atomic_fetch_add(&r->tr_count, 1, __ATOMIC_RELAXED);
	rec = (struct addb_rec *)(r + 1) + i % t->th_cap;
	__atomic_store_n(&rec->ar_seq, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	rec->ar_ts_ns = ts;
	rec->ar_kind = kind;
	rec->ar_a = a;
	rec->ar_id = id;
	rec->ar_b = b;
	rec->ar_c = c;
	__atomic_store_n(&rec->ar_seq, i + 1, __ATOMIC_RELEASE);
}
#endif

int addb_trace_set(uint32_t sample, uint32_t mib)
{
	struct addb_hdr *h;

	if (mib > ADDB_TRACE_MIB_MAX)
		return err_set(-EINVAL, "addb trace: size %u MiB: at most %u",
			       mib, ADDB_TRACE_MIB_MAX);
	h = addb_hdr_get();
	if (h == NULL)
		return err_set(-ENOMEM, "addb trace: no metrics region");
	pthread_mutex_lock(&tg.lock);
	tg.failed = false;
	if (mib != 0)
		h->ah_trace_mib = mib;
	pthread_mutex_unlock(&tg.lock);
	__atomic_store_n(&h->ah_trace_sample, sample, __ATOMIC_RELEASE);
	return 0;
}

int addb_trace_set_pid(pid_t pid, uint32_t sample, uint32_t mib)
{
	struct addb_snap *s = NULL;
	char path[64];
	uint32_t v[2] = {sample, mib};
	int fd, rc;

	if (mib > ADDB_TRACE_MIB_MAX)
		return err_set(-EINVAL, "addb trace: size %u MiB: at most %u",
			       mib, ADDB_TRACE_MIB_MAX);
	rc = addb_snap_pid(pid, &s); /* checks the region is one of ours */
	if (rc == 0 && !s->as_running)
		rc = err_set(-ESRCH, "process %d is not running (its region "
			     "is what it left)", (int)pid);
	addb_snap_free(s);
	if (rc != 0)
		return rc;
	snprintf(path, sizeof path, ADDB_SHM_DIR "/" ADDB_SHM_PREFIX "%d",
		 (int)pid);
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	/* the size first (read when the file is made), then the switch */
	rc = 0;
	if (mib != 0 && pwrite(fd, &v[1], 4, offsetof(struct addb_hdr,
						     ah_trace_mib)) != 4)
		rc = err_set(-errno, "%s: trace size: %s", path, strerror(errno));
	if (rc == 0 && pwrite(fd, &v[0], 4, offsetof(struct addb_hdr,
						     ah_trace_sample)) != 4)
		rc = err_set(-errno, "%s: trace switch: %s", path,
			     strerror(errno));
	close(fd);
	return rc;
}

const char *addb_rec_name(uint32_t kind)
{
	static const char *const names[ADDB_R_NR] = {
		[ADDB_R_OP_LAUNCH] = "op.launch",
		[ADDB_R_OP_EXECUTED] = "op.executed",
		[ADDB_R_OP_END] = "op.end",
		[ADDB_R_SRV_RECV] = "srv.recv",
		[ADDB_R_SRV_REPLY] = "srv.reply",
		[ADDB_R_DEV_IO] = "dev.io",
		[ADDB_R_COMMIT] = "commit",
		[ADDB_R_OP_PLACED] = "op.placed",
		[ADDB_R_OP_SENT] = "op.sent",
		[ADDB_R_OP_STORED] = "op.stored",
		[ADDB_R_OP_COMMITTED] = "op.committed",
		[ADDB_R_OP_STABLE] = "op.stable",
	};

	return kind < ADDB_R_NR && names[kind] != NULL ? names[kind] : "?";
}

/* The header of a trace file checked against the file's size fsize; 0 or
 * -EPROTO naming the field.  Every product and sum is bounded by fsize
 * before it is formed, so a lying header cannot make a reader go past the
 * file. */
static int trace_check(const char *path, const struct trace_hdr *t,
		       uint64_t fsize)
{
	const uint64_t rec = sizeof(struct addb_rec);

	if (memcmp(t->th_magic, TRACE_MAGIC, sizeof t->th_magic) != 0)
		return err_set(-EPROTO, "%s: not a Strata trace (magic)", path);
	if (t->th_version != TRACE_VERSION || t->th_hdr_size != sizeof *t ||
	    t->th_rec_size != rec)
		return err_set(-EPROTO, "%s: version %u, this reader knows %u",
			       path, t->th_version, TRACE_VERSION);
	if (t->th_nr_rings == 0 || t->th_nr_rings > ADDB_ROWS ||
	    t->th_ring_off < sizeof *t || t->th_ring_off % 8 != 0 ||
	    t->th_ring_off > fsize || t->th_cap == 0 ||
	    t->th_cap > (fsize - t->th_ring_off) / t->th_nr_rings / rec ||
	    t->th_ring_stride != sizeof(struct trace_ring) + t->th_cap * rec ||
	    t->th_ring_stride > (fsize - t->th_ring_off) / t->th_nr_rings ||
	    t->th_size != t->th_ring_off + t->th_ring_stride * t->th_nr_rings)
		return err_set(-EPROTO, "%s: layout: rings, capacity or "
			       "offsets do not fit its %" PRIu64 " bytes", path,
			       fsize);
	return 0;
}

static int trace_cmp(const void *a, const void *b)
{
	const struct addb_trace_rec *x = a, *y = b;

	if (x->tr_rec.ar_ts_ns != y->tr_rec.ar_ts_ns)
		return x->tr_rec.ar_ts_ns < y->tr_rec.ar_ts_ns ? -1 : 1;
	if (x->tr_ring != y->tr_ring)
		return x->tr_ring < y->tr_ring ? -1 : 1;
	return x->tr_rec.ar_seq < y->tr_rec.ar_seq ? -1 : 1;
}

/* Read ring r's last n records (indices count - n .. count - 1) from fd
 * into recs (in index order); a slot's copy is kept only when its ar_seq
 * (its last word, copied last) is its index + 1 and its kind known. */
static uint32_t trace_ring_read(int fd, const struct trace_hdr *h, uint32_t r,
				uint64_t count, uint64_t n,
				struct addb_trace_rec *out)
{
	uint64_t base = h->th_ring_off + h->th_ring_stride * r +
			sizeof(struct trace_ring);
	uint32_t kept = 0;

	for (uint64_t i = count - n; i < count; i++) {
		struct addb_rec rec;
		uint64_t off = base + (i % h->th_cap) * sizeof rec;

		if (pread(fd, &rec, sizeof rec, (off_t)off) != (ssize_t)sizeof rec)
			break;
		if (rec.ar_seq != i + 1 || rec.ar_kind == 0 ||
		    rec.ar_kind >= ADDB_R_NR)
			continue; /* torn, or overwritten meanwhile */
		out[kept].tr_ring = r;
		out[kept++].tr_rec = rec;
	}
	return kept;
}

/* Collect each ring's last limit records (all when limit is 0) into t,
 * in time order; memory in proportion to what is kept, not to the file. */
static int trace_collect(int fd, const struct trace_hdr *h, uint32_t limit,
			 struct addb_trace *t)
{
	uint64_t count[ADDB_ROWS], max = 0;

	for (uint32_t r = 0; r < h->th_nr_rings; r++) {
		struct trace_ring ring;
		uint64_t n;

		if (pread(fd, &ring, sizeof ring, (off_t)(h->th_ring_off +
			  h->th_ring_stride * r)) != (ssize_t)sizeof ring)
			return err_set(-EPROTO, "trace: size: it shrank while "
				       "read");
		count[r] = ring.tr_count;
		t->at_written += ring.tr_count;
		n = count[r] < h->th_cap ? count[r] : h->th_cap;
		max += limit != 0 && n > limit ? limit : n;
	}
	t->at_recs = calloc(max ? max : 1, sizeof *t->at_recs);
	if (t->at_recs == NULL)
		return err_set(-ENOMEM, "trace: no memory for %" PRIu64
			       " records", max);
	for (uint32_t r = 0; r < h->th_nr_rings; r++) {
		uint64_t n = count[r] < h->th_cap ? count[r] : h->th_cap;

		if (limit != 0 && n > limit)
			n = limit;
		t->at_nr += trace_ring_read(fd, h, r, count[r], n,
					    t->at_recs + t->at_nr);
	}
	qsort(t->at_recs, t->at_nr, sizeof *t->at_recs, trace_cmp);
	return 0;
}

int addb_trace_read(pid_t pid, const char *path, uint32_t limit,
		    struct addb_trace **out)
{
	char own[80];
	struct trace_hdr h;
	struct addb_trace *t = NULL;
	struct stat st;
	int fd, rc;

	if (path == NULL) {
		snprintf(own, sizeof own, ADDB_SHM_DIR "/" ADDB_SHM_PREFIX
			 "%d.trace", (int)pid);
		path = own;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set(-errno, "%s: %s", path, errno == ENOENT ?
			       "no trace (tracing was never switched on, or "
			       "the process ended)" : strerror(errno));
	rc = fstat(fd, &st) != 0 ? err_set(-EIO, "%s: %s", path,
					   strerror(errno)) : 0;
	if (rc == 0 && pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
		rc = err_set(-EPROTO, "%s: size: shorter than a header", path);
	if (rc == 0)
		rc = trace_check(path, &h, (uint64_t)st.st_size);
	if (rc == 0 && (t = calloc(1, sizeof *t)) == NULL)
		rc = err_set(-ENOMEM, "%s: no memory to read it", path);
	if (rc == 0) {
		t->at_pid = h.th_pid;
		t->at_bytes = (uint64_t)st.st_size;
		rc = trace_collect(fd, &h, limit, t);
	}
	close(fd);
	if (rc != 0) {
		addb_trace_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int addb_trace_json(const struct addb_trace *t, uint32_t max, FILE *f)
{
	uint32_t from = max != 0 && t->at_nr > max ? t->at_nr - max : 0;

	for (uint32_t i = from; i < t->at_nr; i++) {
		const struct addb_rec *x = &t->at_recs[i].tr_rec;

		fprintf(f, "{\"t\": %.9f, \"ring\": %u, \"kind\": \"%s\", "
			"\"id\": %" PRIu64 ", \"a\": %u, \"b\": %" PRId64 ", "
			"\"c\": %" PRIu64 "}\n",
			(x->ar_ts_ns - t->at_recs[from].tr_rec.ar_ts_ns) / 1e9,
			t->at_recs[i].tr_ring, addb_rec_name(x->ar_kind),
			x->ar_id, x->ar_a, (int64_t)x->ar_b, x->ar_c);
	}
	fflush(f);
	return ferror(f) ? err_set(-EIO, "trace: write failed") : 0;
}

void addb_trace_free(struct addb_trace *t)
{
	if (t == NULL)
		return;
	free(t->at_recs);
	free(t);
}
