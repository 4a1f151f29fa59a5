/*
 * bench_fi.c — raw libfabric baselines for the RPC and cluster benchmarks
 * (bench_fi.h): endpoint setup, ping-pong, RMA bandwidth.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "tests/bench/bench_fi.h"

double bfi_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bfi_die(long rc, const char *what)
{
	if (rc == 0)
		return;
	fprintf(stderr, "bench_fi: raw libfabric %s: %ld (%s)\n", what, rc,
		fi_strerror((int)(rc < 0 ? -rc : rc)));
	exit(1);
}

bool bfi_can_sleep(const char *prov)
{
	return strcmp(prov, "shm") != 0;
}

void bfi_open(struct bfi_ep *r, const char *prov, uint16_t port, bool sleep)
{
	struct fi_info *h = fi_allocinfo();
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_MSG, .size = 256,
				 .wait_obj = sleep ? FI_WAIT_UNSPEC :
						     FI_WAIT_NONE };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	char svc[16];
	int rc;

	memset(r, 0, sizeof *r);
	if (h == NULL)
		bfi_die(-ENOMEM, "fi_allocinfo");
	r->sleep = sleep;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_RMA;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY | FI_MR_LOCAL | FI_MR_ENDPOINT;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->fabric_attr->prov_name = strdup(prov);
	snprintf(svc, sizeof svc, "%u", port);
	rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", svc, FI_SOURCE, h,
			&r->info);
	fi_freeinfo(h);
	bfi_die(rc, "fi_getinfo");
	rc = fi_fabric(r->info->fabric_attr, &r->fab, NULL);
	rc = rc ? rc : fi_domain(r->fab, r->info, &r->dom, NULL);
	rc = rc ? rc : fi_av_open(r->dom, &aa, &r->av, NULL);
	rc = rc ? rc : fi_cq_open(r->dom, &ca, &r->cq, NULL);
	rc = rc ? rc : fi_endpoint(r->dom, r->info, &r->ep, NULL);
	rc = rc ? rc : fi_ep_bind(r->ep, &r->av->fid, 0);
	rc = rc ? rc : fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	rc = rc ? rc : fi_enable(r->ep);
	r->name_len = sizeof r->name;
	rc = rc ? rc : fi_getname(&r->ep->fid, r->name, &r->name_len);
	bfi_die(rc, "endpoint");
}

void bfi_link(struct bfi_ep *a, struct bfi_ep *b)
{
	bfi_die(fi_av_insert(a->av, b->name, 1, &a->peer, 0, NULL) == 1 ? 0 :
		-EINVAL, "fi_av_insert");
	bfi_die(fi_av_insert(b->av, a->name, 1, &b->peer, 0, NULL) == 1 ? 0 :
		-EINVAL, "fi_av_insert");
}

void bfi_close(struct bfi_ep *r)
{
	fi_close(&r->ep->fid);
	fi_close(&r->cq->fid);
	fi_close(&r->av->fid);
	fi_close(&r->dom->fid);
	fi_close(&r->fab->fid);
	fi_freeinfo(r->info);
}

struct fid_mr *bfi_mr(struct bfi_ep *r, void *buf, size_t len, uint64_t acc)
{
	struct fid_mr *mr;

	bfi_die(fi_mr_reg(r->dom, buf, len, acc, 0, 1 + (uint64_t)rand(), 0,
			  &mr, NULL), "fi_mr_reg");
	if (r->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		bfi_die(fi_mr_bind(mr, &r->ep->fid, 0), "fi_mr_bind");
		bfi_die(fi_mr_enable(mr), "fi_mr_enable");
	}
	return mr;
}

/* One CQ entry of r into *e, waiting up to 100 ms when r sleeps: 1, or
 * 0 when none came; a completion error stops the program. */
static ssize_t bfi_cq_next(struct bfi_ep *r, struct fi_cq_msg_entry *e,
			   const char *what)
{
	struct fi_cq_err_entry ee;
	ssize_t n = r->sleep ? fi_cq_sread(r->cq, e, 1, NULL, 100) :
			       fi_cq_read(r->cq, e, 1);

	if (n == -FI_EAVAIL) {
		memset(&ee, 0, sizeof ee);
		fi_cq_readerr(r->cq, &ee, 0);
		bfi_die(-(long)ee.err, what);
	}
	return n == 1 ? 1 : 0;
}

/* One completion on r within 10 s (sleeping or spinning as r was
 * opened), or the program stops. */
static void bfi_wait(struct bfi_ep *r, const char *what)
{
	struct fi_cq_msg_entry e;
	double end = bfi_now() + 10;

	do {
		if (bfi_cq_next(r, &e, what) == 1)
			return;
	} while (bfi_now() < end);
	bfi_die(-ETIMEDOUT, what);
}

/* The far side: echoes messages (up to bufsz bytes) and progresses its
 * provider, so that tcp;ofi_rxm answers RMA aimed at it. */
struct bfi_far {
	struct bfi_ep *f_ep;
	size_t f_bufsz;
	atomic_bool f_stop;
};

static void *bfi_far_main(void *arg)
{
	struct bfi_far *f = arg;
	struct bfi_ep *r = f->f_ep;
	void *buf = calloc(1, f->f_bufsz);
	struct fi_context2 rc, sc;
	struct fi_cq_msg_entry e;
	ssize_t n;

	if (buf == NULL)
		bfi_die(-ENOMEM, "far buffer");
	fi_recv(r->ep, buf, f->f_bufsz, NULL, FI_ADDR_UNSPEC, &rc);
	while (!atomic_load(&f->f_stop)) {
		n = r->sleep ? fi_cq_sread(r->cq, &e, 1, NULL, 20) :
			       fi_cq_read(r->cq, &e, 1);
		if (n != 1 || e.op_context != &rc)
			continue;
		while (fi_send(r->ep, buf, e.len, NULL, r->peer, &sc) ==
		       -FI_EAGAIN)
			fi_cq_read(r->cq, NULL, 0);
		fi_recv(r->ep, buf, f->f_bufsz, NULL, FI_ADDR_UNSPEC, &rc);
	}
	free(buf);
	return NULL;
}

uint32_t bfi_rtt(const char *prov, uint16_t *port, size_t len, bool sleep,
		 double secs, double *lat, uint32_t max)
{
	struct bfi_ep a, b;
	struct bfi_far far = { .f_ep = &b, .f_bufsz = len < 64 ? 64 : len };
	struct fi_context2 rc, sc;
	uint8_t *out = calloc(1, far.f_bufsz), *in = calloc(1, far.f_bufsz);
	pthread_t th;
	uint32_t n = 0;
	double end, t;

	if (out == NULL || in == NULL)
		bfi_die(-ENOMEM, "ping-pong buffers");
	bfi_open(&a, prov, ++*port, sleep);
	bfi_open(&b, prov, ++*port, sleep);
	bfi_link(&a, &b);
	atomic_store(&far.f_stop, false);
	bfi_die(pthread_create(&th, NULL, bfi_far_main, &far), "thread");
	end = bfi_now() + secs;
	while (bfi_now() < end && n < max) {
		t = bfi_now();
		fi_recv(a.ep, in, far.f_bufsz, NULL, FI_ADDR_UNSPEC, &rc);
		while (fi_send(a.ep, out, len, NULL, a.peer, &sc) ==
		       -FI_EAGAIN)
			fi_cq_read(a.cq, NULL, 0);
		bfi_wait(&a, "ping-pong");     /* the send and ... */
		bfi_wait(&a, "ping-pong");     /* ... the echo */
		lat[n++] = (bfi_now() - t) * 1e6;
	}
	atomic_store(&far.f_stop, true);
	pthread_join(th, NULL);
	bfi_close(&a);
	bfi_close(&b);
	free(out);
	free(in);
	return n;
}

static double bfi_rma_cpu;

double bfi_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

double bfi_rma_cpu_per_mib(void)
{
	return bfi_rma_cpu;
}

double bfi_rma_bw(const char *prov, uint16_t *port, bool wr, uint32_t qd,
		  size_t blk, bool sleep, double secs)
{
	size_t len = (size_t)qd * blk;
	struct bfi_ep a, b;
	struct bfi_far far = { .f_ep = &b, .f_bufsz = 64 };
	uint8_t *lbuf = malloc(len), *rbuf = malloc(len);
	struct fi_context2 *ctx = calloc(qd, sizeof *ctx);
	struct fid_mr *lmr, *rmr;
	uint64_t raddr, key, ops = 0, inflight = 0;
	pthread_t th;
	double t0, end, c0;
	ssize_t rc;

	if (lbuf == NULL || rbuf == NULL || ctx == NULL)
		bfi_die(-ENOMEM, "RMA buffers");
	memset(lbuf, 1, len);
	memset(rbuf, 2, len);
	bfi_open(&a, prov, ++*port, sleep);
	bfi_open(&b, prov, ++*port, sleep);
	bfi_link(&a, &b);
	lmr = bfi_mr(&a, lbuf, len, FI_READ | FI_WRITE);
	rmr = bfi_mr(&b, rbuf, len, FI_REMOTE_READ | FI_REMOTE_WRITE);
	key = fi_mr_key(rmr);
	raddr = (b.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		(uint64_t)(uintptr_t)rbuf : 0;
	atomic_store(&far.f_stop, false);
	bfi_die(pthread_create(&th, NULL, bfi_far_main, &far), "thread");
	c0 = bfi_cpu_us();
	t0 = bfi_now();
	end = t0 + secs;
	while (bfi_now() < end || inflight > 0) {
		if (bfi_now() < end && inflight < qd) {
			uint32_t i = (uint32_t)(ops % qd);
			void *l = lbuf + (size_t)i * blk;
			uint64_t ra = raddr + (uint64_t)i * blk;

			rc = wr ? fi_write(a.ep, l, blk, fi_mr_desc(lmr),
					   a.peer, ra, key, &ctx[i]) :
				  fi_read(a.ep, l, blk, fi_mr_desc(lmr),
					  a.peer, ra, key, &ctx[i]);
			if (rc == 0) {
				inflight++;
				ops++;
				continue;
			}
			if (rc != -FI_EAGAIN)
				bfi_die((long)rc, wr ? "fi_write" : "fi_read");
			/* -FI_EAGAIN (e.g. while rxm connects): progress. */
			fi_cq_read(a.cq, NULL, 0);
			if (inflight == 0)
				continue;
		}
		bfi_wait(&a, "RMA completion");
		inflight--;
	}
	t0 = bfi_now() - t0;
	bfi_rma_cpu = ops > 0 ? (bfi_cpu_us() - c0) * (1048576.0 / blk) / ops :
				0;
	atomic_store(&far.f_stop, true);
	pthread_join(th, NULL);
	fi_close(&lmr->fid);
	fi_close(&rmr->fid);
	bfi_close(&a);
	bfi_close(&b);
	free(lbuf);
	free(rbuf);
	free(ctx);
	return ops * (blk / 1e6) / t0;
}

/* ----------------------------------------------- the protocol's floor */

/* A request of the floor: which slot of the server's buffer, and the
 * client's registered slot (address, key) to pull from or push into. */
struct bfi_preq {
	uint64_t slot;
	uint64_t addr;
	uint64_t key;
};

/* Hex of n bytes of p as one line on f. */
static void bfi_hex_put(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
	fputc('\n', f);
	fflush(f);
}

/* One hex line from fd (within 10 s) into p; its length in bytes. */
static size_t bfi_hex_get(int fd, uint8_t *p, size_t max, const char *who)
{
	char line[2 * 256 + 2];
	size_t n = 0, i;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	ssize_t r;

	while (n < sizeof line - 1 && (n == 0 || line[n - 1] != '\n')) {
		if (poll(&pf, 1, 10000) != 1)
			bfi_die(-ETIMEDOUT, who);
		r = read(fd, line + n, 1);
		if (r != 1)
			bfi_die(r == 0 ? -EPIPE : -errno, who);
		n++;
	}
	line[n] = '\0';
	for (i = 0; i < max && 2 * i + 1 < n && line[2 * i] != '\n'; i++) {
		unsigned v;

		if (sscanf(line + 2 * i, "%2x", &v) != 1)
			bfi_die(-EPROTO, who);
		p[i] = (uint8_t)v;
	}
	return i;
}

/* The floor's server: one thread, no code of ours.  A request names a
 * slot: the server pulls (fi_read, the client's write) or pushes
 * (fi_write, the client's read) blk bytes between that slot of its buffer
 * and the client's, and when the transfer completes answers with 8 bytes
 * by fi_inject. */
static void bfi_floor_serve(const char *prov, uint16_t port, bool wr,
			    uint32_t qd, size_t blk, bool sleep)
{
	uint32_t nrx = qd + 4;
	struct bfi_ep b;
	struct bfi_preq *rq = calloc(nrx, sizeof *rq);
	struct fi_context2 *rc = calloc(nrx, sizeof *rc);
	struct fi_context2 *xc = calloc(qd, sizeof *xc);
	uint64_t *rep = calloc(qd, sizeof *rep);
	uint8_t *buf = aligned_alloc(4096, (size_t)qd * blk);
	struct fi_cq_msg_entry e;
	struct fid_mr *mr;

	if (rq == NULL || rc == NULL || xc == NULL || rep == NULL ||
	    buf == NULL)
		bfi_die(-ENOMEM, "floor server buffers");
	memset(buf, 3, (size_t)qd * blk);
	bfi_open(&b, prov, port, sleep);
	mr = bfi_mr(&b, buf, (size_t)qd * blk, FI_READ | FI_WRITE);
	bfi_hex_put(stdout, b.name, b.name_len);
	{
		uint8_t name[256];
		if (bfi_hex_get(0, name, sizeof name,
				"floor server: client name") == 0)
			bfi_die(-EPROTO, "floor server: client name");
		if (fi_av_insert(b.av, name, 1, &b.peer, 0, NULL) != 1)
			bfi_die(-EINVAL, "floor server: fi_av_insert");
	}
	for (uint32_t i = 0; i < nrx; i++)
		bfi_die(fi_recv(b.ep, &rq[i], sizeof rq[i], NULL,
				FI_ADDR_UNSPEC, &rc[i]), "floor server: fi_recv");
	for (;;) {
		if (bfi_cq_next(&b, &e, "floor server: completion") == 0)
			continue;
		if (e.op_context >= (void *)rc &&
		    e.op_context < (void *)(rc + nrx)) {
			uint32_t i = (uint32_t)((struct fi_context2 *)
						e.op_context - rc);
			uint64_t s = rq[i].slot;
			uint8_t *l = buf + s * blk;
			ssize_t r;

			if (s >= qd)
				bfi_die(-EPROTO, "floor server: slot");
			while ((r = wr ? fi_read(b.ep, l, blk, fi_mr_desc(mr),
						 b.peer, rq[i].addr, rq[i].key,
						 &xc[s]) :
					 fi_write(b.ep, l, blk, fi_mr_desc(mr),
						  b.peer, rq[i].addr,
						  rq[i].key, &xc[s])) ==
			       -FI_EAGAIN)
				fi_cq_read(b.cq, NULL, 0);
			bfi_die((long)r, "floor server: RMA");
			bfi_die(fi_recv(b.ep, &rq[i], sizeof rq[i], NULL,
					FI_ADDR_UNSPEC, &rc[i]),
				"floor server: fi_recv");
		} else if (e.op_context >= (void *)xc &&
			   e.op_context < (void *)(xc + qd)) {
			uint32_t s = (uint32_t)((struct fi_context2 *)
						e.op_context - xc);

			rep[s] = s;
			while (fi_inject(b.ep, &rep[s], sizeof rep[s],
					 b.peer) == -FI_EAGAIN)
				fi_cq_read(b.cq, NULL, 0);
		}
	}
}

void bfi_floor_main(int argc, char **argv)
{
	if (argc != 8 || strcmp(argv[1], BFI_FLOOR_ARG) != 0)
		return;
	/* Never outlive the benchmark, whatever happens to it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm((unsigned)atoi(argv[7]));
	bfi_floor_serve(argv[2], (uint16_t)atoi(argv[3]), atoi(argv[4]) != 0,
			(uint32_t)atoi(argv[5]), (size_t)atol(argv[6]),
			bfi_can_sleep(argv[2]));
	exit(0);
}

static double bfi_floor_cpu;

double bfi_floor_cpu_per_mib(void)
{
	return bfi_floor_cpu;
}

double bfi_floor_bw(const char *prov, uint16_t *port, bool wr, uint32_t qd,
		    size_t blk, bool sleep, double secs)
{
	struct rusage ru;
	double c0;
	int to[2], from[2], st;
	char a_port[16], a_wr[4], a_qd[16], a_blk[32], a_lim[16];
	uint16_t sport = ++*port;
	struct bfi_ep a;
	uint8_t name[256];
	size_t nlen;
	uint64_t *rep = calloc(qd, sizeof *rep), ops = 0, inflight = 0;
	uint32_t *free_ = calloc(qd, sizeof *free_), nfree = qd;
	struct fi_context2 *rc = calloc(qd, sizeof *rc);
	struct bfi_preq *rq = calloc(qd, sizeof *rq);
	uint8_t *lbuf = aligned_alloc(4096, (size_t)qd * blk);
	struct fi_cq_msg_entry e;
	struct fid_mr *mr;
	uint64_t raddr;
	double t0, end;
	pid_t pid;
	FILE *out;
	ssize_t n;

	if (rep == NULL || free_ == NULL || rc == NULL || rq == NULL ||
	    lbuf == NULL || qd == 0)
		bfi_die(-ENOMEM, "floor buffers");
	memset(lbuf, 1, (size_t)qd * blk);
	snprintf(a_port, sizeof a_port, "%u", sport);
	snprintf(a_wr, sizeof a_wr, "%d", wr ? 1 : 0);
	snprintf(a_qd, sizeof a_qd, "%u", qd);
	snprintf(a_blk, sizeof a_blk, "%zu", blk);
	snprintf(a_lim, sizeof a_lim, "%u", (unsigned)secs + 60u);
	if (pipe(to) != 0 || pipe(from) != 0)
		bfi_die(-errno, "floor pipes");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		bfi_die(-errno, "floor fork");
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		execl("/proc/self/exe", "strata-bench-floor", BFI_FLOOR_ARG,
		      prov, a_port, a_wr, a_qd, a_blk, a_lim, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	nlen = bfi_hex_get(from[0], name, sizeof name, "floor: server name");
	if (nlen == 0)
		bfi_die(-EPROTO, "floor: server name");
	bfi_open(&a, prov, ++*port, sleep);
	if (fi_av_insert(a.av, name, 1, &a.peer, 0, NULL) != 1)
		bfi_die(-EINVAL, "floor: fi_av_insert");
	out = fdopen(to[1], "w");
	if (out == NULL)
		bfi_die(-errno, "floor: fdopen");
	bfi_hex_put(out, a.name, a.name_len);
	mr = bfi_mr(&a, lbuf, (size_t)qd * blk, FI_READ | FI_WRITE |
		    FI_REMOTE_READ | FI_REMOTE_WRITE);
	raddr = (a.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		(uint64_t)(uintptr_t)lbuf : 0;
	for (uint32_t i = 0; i < qd; i++) {
		free_[i] = i;
		bfi_die(fi_recv(a.ep, &rep[i], sizeof rep[i], NULL,
				FI_ADDR_UNSPEC, &rc[i]), "floor: fi_recv");
	}
	c0 = bfi_cpu_us();
	t0 = bfi_now();
	end = t0 + secs;
	while (bfi_now() < end || inflight > 0) {
		if (bfi_now() < end && nfree > 0) {
			uint32_t s = free_[--nfree];

			rq[s] = (struct bfi_preq){ s, raddr + (uint64_t)s * blk,
						   fi_mr_key(mr) };
			while ((n = fi_inject(a.ep, &rq[s], sizeof rq[s],
					      a.peer)) == -FI_EAGAIN)
				fi_cq_read(a.cq, NULL, 0);
			bfi_die((long)n, "floor: fi_inject");
			inflight++;
			continue;
		}
		n = bfi_cq_next(&a, &e, "floor: completion");
		if (bfi_now() > end + 10)
			bfi_die(-ETIMEDOUT, "floor: replies");
		if (n != 1 || e.op_context < (void *)rc ||
		    e.op_context >= (void *)(rc + qd))
			continue;
		{
			uint32_t i = (uint32_t)((struct fi_context2 *)
						e.op_context - rc);

			if (rep[i] >= qd)
				bfi_die(-EPROTO, "floor: reply slot");
			free_[nfree++] = (uint32_t)rep[i];
			bfi_die(fi_recv(a.ep, &rep[i], sizeof rep[i], NULL,
					FI_ADDR_UNSPEC, &rc[i]),
				"floor: fi_recv");
		}
		inflight--;
		ops++;
	}
	t0 = bfi_now() - t0;
	c0 = bfi_cpu_us() - c0;
	kill(pid, SIGKILL);
	memset(&ru, 0, sizeof ru);
	if (wait4(pid, &st, 0, &ru) == pid)
		c0 += (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
		      ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	bfi_floor_cpu = ops > 0 ? c0 * (1048576.0 / blk) / ops : 0;
	fclose(out);
	close(from[0]);
	fi_close(&mr->fid);
	bfi_close(&a);
	free(rep);
	free(free_);
	free(rc);
	free(rq);
	free(lbuf);
	return ops * (blk / 1e6) / t0;
}

static int bfi_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bfi_pct(double *v, uint32_t n, double p)
{
	uint32_t i;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, bfi_cmp);
	i = (uint32_t)(p / 100.0 * (n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}
