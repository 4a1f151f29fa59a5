/*
 * bench_fi.c — raw libfabric baselines for the RPC and cluster benchmarks
 * (bench_fi.h): endpoint setup, ping-pong, RMA bandwidth.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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

/* One completion on r within 10 s (sleeping or spinning as r was
 * opened); 0, or the program stops. */
static void bfi_wait(struct bfi_ep *r, const char *what)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry ee;
	double end = bfi_now() + 10;
	ssize_t n;

	do {
		n = r->sleep ? fi_cq_sread(r->cq, &e, 1, NULL, 100) :
			       fi_cq_read(r->cq, &e, 1);
		if (n == 1)
			return;
		if (n == -FI_EAVAIL) {
			memset(&ee, 0, sizeof ee);
			fi_cq_readerr(r->cq, &ee, 0);
			bfi_die(-(long)ee.err, what);
		}
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
