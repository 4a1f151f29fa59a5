/*
 * bench_rpc.c — strata_bench_rpc: the RPC layer beside raw libfabric with
 * the same provider, in one process on 127.0.0.1 (make bench).
 *
 *   rpc noop rtt            rpc_call(RPC_OP_NOOP), polling progress on both
 *                           sides, vs a raw fi_send/fi_recv ping-pong of a
 *                           message of the same size, polling (goal <= 1.5x)
 *   rpc noop rtt, wait fd   the same call with the default progress (the
 *                           progress threads sleep in epoll) vs the same raw
 *                           (polling), and, like for like, vs a raw
 *                           ping-pong whose both sides sleep in epoll_wait
 *                           on their CQ's FI_WAIT_FD after fi_trywait, by
 *                           fi_inject both ways (goal <= 1.5x)
 *   rpc 1 MiB write/read    bandwidth of calls carrying 1 MiB OUT (server
 *                           pulls, fi_read) or IN (server pushes, fi_write),
 *                           4 in flight, vs raw fi_read / fi_write of 1 MiB
 *                           with 4 in flight (goal >= 0.8)
 *   threshold               per-call latency of OUT bulk of 1 KiB .. 256 KiB
 *                           sent inline and by RMA: where RMA starts to win
 *                           sets the default rc_inline_max (README.md)
 *
 *   strata_bench_rpc [--json] [--seconds S] [--provider P]
 *                    [--figs GROUP[,GROUP...]]
 * --figs as strata_bench's: rpc (every figure here), rpc-rtt, rpc-bw,
 * rpc-thr; groups of other benchmarks are ignored, and when none of ours is
 * named nothing is measured (make bench BENCH_ARGS="--figs 4k" runs one
 * group of strata_bench only).  Other options, meant for strata_bench, are
 * ignored.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "core/errors.h"
#include "core/rpc/rpc.h"
#include "tests/bench/bench_fi.h"

#define BR_SECRET "strata-bench-rpc-secret-0123456789"
#define BR_OP_WRITE 64u
#define BR_OP_READ 65u
#define BR_MIB (1u << 20)
#define BR_QD 4
#define BR_FIGS 32
#define BR_LAT_MAX 200000

struct br_fig {
	char name[64];
	double ours, raw;
	const char *unit;
	double goal;       /* 0: none */
	bool lower_better; /* goal is ours/raw <= goal */
	char emu[96];
};

static struct br_fig br_figs[BR_FIGS];
static int br_nr;
static double br_secs = 2.0;
static bool br_json;
static const char *br_prov = "tcp;ofi_rxm";
static uint16_t br_port;
static const char *br_sel;      /* --figs, NULL: every figure */

static double br_now(void)
{
	return bfi_now();
}

static void br_die(int rc, const char *what)
{
	if (rc == 0)
		return;
	fprintf(stderr, "strata_bench_rpc: %s: %d (%s)\n", what, rc,
		err_msg());
	exit(1);
}

static void br_fig(const char *name, double ours, double raw,
		   const char *unit, double goal, bool lower, const char *emu)
{
	struct br_fig *f = &br_figs[br_nr++];

	snprintf(f->name, sizeof f->name, "%s", name);
	f->ours = ours;
	f->raw = raw;
	f->unit = unit;
	f->goal = goal;
	f->lower_better = lower;
	snprintf(f->emu, sizeof f->emu, "%s", emu);
	fprintf(stderr, "  measured %s\n", name);
}

static int br_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double br_median(double *v, int n)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, br_cmp);
	return v[n / 2];
}

/* ------------------------------------------------------- our side */

static __thread uint8_t *br_tbuf;

static void br_h_write(struct rpc_sreq *r, void *arg)
{
	size_t n = rpc_sreq_bulk_len(r);
	int rc;

	(void)arg;
	if (br_tbuf == NULL)
		br_tbuf = malloc(16u << 20);
	rc = rpc_sreq_bulk_pull(r, 0, br_tbuf, n);
	rpc_sreq_reply(r, rc, NULL, 0, NULL);
}

static void br_h_read(struct rpc_sreq *r, void *arg)
{
	size_t n = rpc_sreq_bulk_len(r);
	int rc;

	(void)arg;
	if (br_tbuf == NULL)
		br_tbuf = calloc(1, 16u << 20);
	rc = rpc_sreq_bulk_push(r, 0, br_tbuf, n);
	rpc_sreq_reply(r, rc, NULL, 0, NULL);
}

struct br_pair {
	struct rpc_ep *srv, *cli;
	struct rpc_peer *p;
};

static void br_pair_open(struct br_pair *bp, bool polling, uint32_t inl)
{
	struct rpc_conf c = { 0 };
	int rc = -EADDRINUSE;

	c.rc_provider = br_prov;
	c.rc_secret = BR_SECRET;
	c.rc_secret_len = strlen(BR_SECRET);
	c.rc_polling = polling;
	c.rc_inline_max = inl;
	for (int i = 0; i < 50 && rc == -EADDRINUSE; i++)
		rc = rpc_ep_open(&bp->srv, &c, "127.0.0.1", ++br_port);
	br_die(rc, "server open");
	br_die(rpc_handler_set(bp->srv, BR_OP_WRITE, br_h_write, NULL),
	       "handler");
	br_die(rpc_handler_set(bp->srv, BR_OP_READ, br_h_read, NULL),
	       "handler");
	br_die(rpc_ep_open(&bp->cli, &c, "127.0.0.1", 0), "client open");
	br_die(rpc_connect(bp->cli, "127.0.0.1", br_port, 5000, &bp->p),
	       "connect");
}

static void br_pair_close(struct br_pair *bp)
{
	rpc_ep_close(bp->cli);
	rpc_ep_close(bp->srv);
}

/* Median microseconds of one call of op with n bytes of bulk in dir. */
static double br_call_lat(struct rpc_peer *p, uint32_t op, uint32_t dir,
			  void *buf, size_t n, double secs)
{
	static double lat[BR_LAT_MAX];
	struct iovec iov = { buf, n };
	struct rpc_bulk b = { dir, &iov, 1 };
	double t0 = br_now(), t;
	int nr = 0;

	while (br_now() - t0 < secs && nr < BR_LAT_MAX) {
		t = br_now();
		br_die(rpc_call(p, op, NULL, 0, n ? &b : NULL, 5000, NULL),
		       "call");
		lat[nr++] = (br_now() - t) * 1e6;
	}
	return br_median(lat, nr);
}

static atomic_int br_done;

static void br_cb(void *arg, struct rpc_result *res)
{
	(void)arg;
	if (res->rr_status != 0)
		fprintf(stderr, "strata_bench_rpc: call: %s\n", res->rr_msg);
	free(res->rr_body);
	atomic_fetch_add(&br_done, 1);
}

/* MB/s of 1 MiB calls, BR_QD in flight. */
static double br_call_bw(struct rpc_peer *p, uint32_t op, uint32_t dir)
{
	uint8_t *bufs = malloc((size_t)BR_QD * BR_MIB);
	struct iovec iov[BR_QD];
	struct rpc_bulk b[BR_QD];
	double t0;
	int sent = 0;

	memset(bufs, 7, (size_t)BR_QD * BR_MIB);
	for (int i = 0; i < BR_QD; i++) {
		iov[i] = (struct iovec){ bufs + (size_t)i * BR_MIB, BR_MIB };
		b[i] = (struct rpc_bulk){ dir, &iov[i], 1 };
	}
	atomic_store(&br_done, 0);
	t0 = br_now();
	while (br_now() - t0 < br_secs) {
		while (sent - atomic_load(&br_done) >= BR_QD)
			usleep(20);
		br_die(rpc_call_async(p, op, NULL, 0, &b[sent % BR_QD], 10000,
				      br_cb, NULL), "async call");
		sent++;
	}
	while (atomic_load(&br_done) < sent)
		usleep(100);
	t0 = br_now() - t0;
	free(bufs);
	return sent * (BR_MIB / 1e6) / t0;
}

/* ------------------------------------------------------ raw side */

/* Raw ping-pong of len bytes, both sides spinning (bench_fi.c); median
 * microseconds. */
static double br_raw_rtt(size_t len)
{
	static double lat[BR_LAT_MAX];
	uint32_t n = bfi_rtt(br_prov, &br_port, len, false, br_secs, lat,
			     BR_LAT_MAX);

	return br_median(lat, (int)n);
}

/* The raw ping-pong that sleeps as our default progress does: each CQ
 * has a FI_WAIT_FD wait object, and a side with nothing to read calls
 * fi_trywait() and sleeps in epoll_wait() on the CQ's descriptor.  Both
 * directions go by fi_inject (our NOOP request and reply do: no send
 * completion), the far side on its own thread. */
struct br_wfd {
	struct bfi_ep *w_ep;
	int w_epfd;
	uint8_t w_buf[64];
	struct fi_context2 w_rctx;
	atomic_bool w_stop;
};

static void br_wfd_setup(struct br_wfd *w, struct bfi_ep *r)
{
	struct epoll_event ev = { .events = EPOLLIN };
	enum fi_wait_obj obj = FI_WAIT_NONE;
	int fd = -1;

	w->w_ep = r;
	br_die(fi_control(&r->cq->fid, FI_GETWAITOBJ, &obj), "FI_GETWAITOBJ");
	if (obj != FI_WAIT_FD)
		br_die(-ENOTSUP, "raw CQ has no FI_WAIT_FD wait object");
	br_die(fi_control(&r->cq->fid, FI_GETWAIT, &fd), "FI_GETWAIT");
	w->w_epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = fd;
	if (w->w_epfd < 0 || epoll_ctl(w->w_epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		br_die(-errno, "epoll");
	br_die((int)fi_recv(r->ep, w->w_buf, sizeof w->w_buf, NULL,
			    FI_ADDR_UNSPEC, &w->w_rctx), "fi_recv");
}

/* The next received message on w (1), or 0 after about ms milliseconds;
 * reposts the receive. */
static int br_wfd_recv(struct br_wfd *w, int ms)
{
	struct fi_cq_msg_entry e;
	struct epoll_event ev;
	struct fid *f = &w->w_ep->cq->fid;
	ssize_t n;

	for (int tries = 0; tries < 1000; tries++) {
		n = fi_cq_read(w->w_ep->cq, &e, 1);
		if (n == 1 && e.op_context == &w->w_rctx) {
			br_die((int)fi_recv(w->w_ep->ep, w->w_buf,
					    sizeof w->w_buf, NULL,
					    FI_ADDR_UNSPEC, &w->w_rctx),
			       "fi_recv");
			return 1;
		}
		if (n == 1)
			continue;
		if (n != -FI_EAGAIN)
			br_die((int)n, "raw fi_cq_read");
		if (fi_trywait(w->w_ep->fab, &f, 1) == FI_SUCCESS &&
		    epoll_wait(w->w_epfd, &ev, 1, ms) == 0)
			return 0;
	}
	return 0;
}

static void br_wfd_send(struct br_wfd *w, size_t len)
{
	ssize_t rc;

	for (int i = 0; i < 100000; i++) {
		rc = fi_inject(w->w_ep->ep, w->w_buf, len, w->w_ep->peer);
		if (rc != -FI_EAGAIN) {
			br_die((int)rc, "raw fi_inject");
			return;
		}
		fi_cq_read(w->w_ep->cq, NULL, 0);
	}
	br_die(-EAGAIN, "raw fi_inject");
}

static void *br_wfd_far(void *arg)
{
	struct br_wfd *w = arg;

	while (!atomic_load(&w->w_stop))
		if (br_wfd_recv(w, 20) == 1)
			br_wfd_send(w, 24);
	return NULL;
}

/* Median microseconds of a len-byte raw ping-pong in wait-fd mode. */
static double br_raw_rtt_wfd(size_t len)
{
	static double lat[BR_LAT_MAX];
	struct br_wfd near, far;
	struct bfi_ep a, b;
	pthread_t th;
	double end, t;
	int n = 0;

	bfi_open(&a, br_prov, ++br_port, true);
	bfi_open(&b, br_prov, ++br_port, true);
	bfi_link(&a, &b);
	memset(&near, 0, sizeof near);
	memset(&far, 0, sizeof far);
	br_wfd_setup(&near, &a);
	br_wfd_setup(&far, &b);
	atomic_store(&far.w_stop, false);
	br_die(pthread_create(&th, NULL, br_wfd_far, &far), "thread");
	end = br_now() + br_secs;
	while (br_now() < end && n < BR_LAT_MAX) {
		t = br_now();
		br_wfd_send(&near, len);
		if (br_wfd_recv(&near, 10000) != 1)
			br_die(-ETIMEDOUT, "raw wait-fd ping-pong");
		lat[n++] = (br_now() - t) * 1e6;
	}
	atomic_store(&far.w_stop, true);
	pthread_join(th, NULL);
	bfi_close(&a);
	bfi_close(&b);
	close(near.w_epfd);
	close(far.w_epfd);
	return br_median(lat, n);
}

/* Raw 1 MiB fi_read (or fi_write) bandwidth, BR_QD in flight, MB/s; both
 * sides sleep in fi_cq_sread like our progress threads (shm: spin). */
static double br_raw_bw(bool wr)
{
	return bfi_rma_bw(br_prov, &br_port, wr, BR_QD, BR_MIB,
			  bfi_can_sleep(br_prov), br_secs);
}

/* ---------------------------------------------------------- figures */

static void br_rtt(void)
{
	struct br_pair bp;
	double raw = br_raw_rtt(24), ours;
	char emu[96];

	snprintf(emu, sizeof emu, "%s, loopback, raw polls", br_prov);
	br_pair_open(&bp, true, 0);
	ours = br_call_lat(bp.p, RPC_OP_NOOP, 0, NULL, 0, br_secs);
	br_pair_close(&bp);
	br_fig("rpc noop rtt (polling)", ours, raw, "us p50", 1.5, true, emu);
	br_pair_open(&bp, false, 0);
	ours = br_call_lat(bp.p, RPC_OP_NOOP, 0, NULL, 0, br_secs);
	br_pair_close(&bp);
	br_fig("rpc noop rtt (wait fd)", ours, raw, "us p50", 0, true, emu);
	if (!bfi_can_sleep(br_prov))
		return; /* shm: no wait object, nothing like-for-like */
	raw = br_raw_rtt_wfd(24);
	snprintf(emu, sizeof emu, "%s, loopback, raw epoll on FI_WAIT_FD",
		 br_prov);
	br_fig("rpc noop rtt (wait fd, like)", ours, raw, "us p50", 1.5, true,
	       emu);
}

static void br_bw(void)
{
	struct br_pair bp;
	double ow, orr, rw, rr;
	char emu[96];

	snprintf(emu, sizeof emu, "%s, loopback, %d x 1 MiB in flight",
		 br_prov, BR_QD);
	br_pair_open(&bp, false, 0);
	ow = br_call_bw(bp.p, BR_OP_WRITE, RPC_BULK_OUT);
	orr = br_call_bw(bp.p, BR_OP_READ, RPC_BULK_IN);
	br_pair_close(&bp);
	rr = br_raw_bw(false);
	rw = br_raw_bw(true);
	br_fig("rpc 1MiB write (fi_read pull)", ow, rr, "MB/s", 0.8, false,
	       emu);
	br_fig("rpc 1MiB read (fi_write push)", orr, rw, "MB/s", 0.8, false,
	       emu);
}

/* OUT bulk of each size: inline (rc_inline_max 256 KiB) vs RMA
 * (rc_inline_max 1 byte); printed as its own table. */
static void br_threshold(void)
{
	static const size_t sizes[] = { 1024, 4096, 8192, 16384, 32768,
					65536, 131072, 262144 };
	double in[8], rma[8];
	struct br_pair bp;
	uint8_t *buf = calloc(1, 262144);
	size_t best = 0;

	br_pair_open(&bp, false, 262144);
	for (int i = 0; i < 8; i++)
		in[i] = br_call_lat(bp.p, BR_OP_WRITE, RPC_BULK_OUT, buf,
				    sizes[i], br_secs / 4);
	br_pair_close(&bp);
	br_pair_open(&bp, false, 1);
	for (int i = 0; i < 8; i++)
		rma[i] = br_call_lat(bp.p, BR_OP_WRITE, RPC_BULK_OUT, buf,
				     sizes[i], br_secs / 4);
	br_pair_close(&bp);
	fprintf(br_json ? stderr : stdout,
		"# threshold (%s, OUT bulk, one call in flight, us p50):\n"
		"#   %8s %10s %10s\n", br_prov, "bytes", "inline", "rma");
	for (int i = 0; i < 8; i++) {
		fprintf(br_json ? stderr : stdout, "#   %8zu %10.1f %10.1f\n",
			sizes[i], in[i], rma[i]);
		if (in[i] <= rma[i])
			best = sizes[i];
	}
	fprintf(br_json ? stderr : stdout,
		"#   inline wins up to %zu bytes\n", best);
	free(buf);
}

static void br_print(void)
{
	if (br_json) {
		printf("[\n");
		for (int i = 0; i < br_nr; i++) {
			struct br_fig *f = &br_figs[i];
			double r = f->ours / f->raw;

			printf("  {\"name\": \"%s\", \"ours\": %.1f, \"raw\": "
			       "%.1f, \"ratio\": %.3f, \"unit\": \"%s\", "
			       "\"emulation\": \"%s\", \"lower_is_better\": %s, "
			       "\"goal\": ", f->name, f->ours, f->raw, r,
			       f->unit, f->emu,
			       f->lower_better ? "true" : "false");
			if (f->goal > 0)
				printf("%.2f, \"met\": %s}", f->goal,
				       (f->lower_better ? r <= f->goal :
					r >= f->goal) ? "true" : "false");
			else
				printf("null, \"met\": null}");
			printf("%s\n", i + 1 < br_nr ? "," : "");
		}
		printf("]\n");
		return;
	}
	printf("%-32s %11s %11s %7s  %-9s %-14s %s\n", "name", "ours", "raw",
	       "ratio", "unit", "goal", "emulation");
	for (int i = 0; i < br_nr; i++) {
		struct br_fig *f = &br_figs[i];
		double r = f->ours / f->raw;
		char goal[32] = "";

		if (f->goal > 0)
			snprintf(goal, sizeof goal, "%s%.2f %s",
				 f->lower_better ? "<=" : ">=", f->goal,
				 (f->lower_better ? r <= f->goal :
				  r >= f->goal) ? "met" : "NOT");
		printf("%-32s %11.1f %11.1f %7.2f  %-9s %-14s %s\n", f->name,
		       f->ours, f->raw, r, f->unit, goal, f->emu);
	}
}

/* Whether --figs names group g (or "rpc", every group here). */
static bool br_want(const char *g)
{
	size_t n;

	for (const char *p = br_sel; p != NULL && *p != '\0';) {
		n = strcspn(p, ",");
		if ((n == strlen(g) && strncmp(p, g, n) == 0) ||
		    (n == 3 && strncmp(p, "rpc", 3) == 0))
			return true;
		p += n + (p[n] == ',');
	}
	return br_sel == NULL;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			br_json = true;
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			br_secs = atof(argv[++i]);
		else if (strcmp(argv[i], "--provider") == 0 && i + 1 < argc)
			br_prov = argv[++i];
		else if (strcmp(argv[i], "--figs") == 0 && i + 1 < argc)
			br_sel = argv[++i];
		/* Other options are strata_bench's (run-bench.sh passes
		 * BENCH_ARGS to both): ignored. */
	}
	if (br_secs <= 0)
		br_secs = 2.0;
	/* Below 32768, the kernel's ephemeral range: a fixed port inside it
	 * can already be the local end of an outgoing connection. */
	br_port = (uint16_t)(16000 + (getpid() * 131u) % 8000);
	fprintf(br_json ? stderr : stdout, "# strata_bench_rpc: provider %s, "
		"%.1f s per figure, client and server in one process on "
		"127.0.0.1\n", br_prov, br_secs);
	if (br_want("rpc-rtt"))
		br_rtt();
	if (br_want("rpc-bw"))
		br_bw();
	if (br_want("rpc-thr"))
		br_threshold();
	if (br_nr == 0 && !br_want("rpc-thr")) {
		fprintf(br_json ? stderr : stdout, "# strata_bench_rpc: --figs "
			"%s names none of rpc, rpc-rtt, rpc-bw, rpc-thr\n",
			br_sel);
		if (br_json)
			printf("[]\n");
		return 0;
	}
	br_print();
	return 0;
}
