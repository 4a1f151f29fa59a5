/*
 * bench_fi.h — the raw libfabric baselines shared by strata_bench_rpc
 * (bench_rpc.c) and strata_bench_cluster (bench_cluster.c): two bare
 * FI_EP_RDM endpoints of one provider on 127.0.0.1 in this process, a
 * ping-pong between them and RMA bandwidth from one to the other.  No
 * RPC layer, no protobuf, no threads of ours beyond the far side's.
 *
 * Every function stops the program (exit 1, message on stderr) when
 * libfabric fails: a benchmark without its baseline means nothing.
 */
#ifndef STRATA_TESTS_BENCH_FI_H
#define STRATA_TESTS_BENCH_FI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

/* One raw endpoint and the peer it was linked to. */
struct bfi_ep {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint8_t name[256];
	size_t name_len;
	fi_addr_t peer;
	bool sleep;             /* CQ has a wait object: fi_cq_sread */
};

/* Open an endpoint of prov bound to 127.0.0.1:port (FI_MSG | FI_RMA).
 * sleep: its CQ gets a wait object (FI_WAIT_UNSPEC) and waits sleep in
 * fi_cq_sread as the RPC progress threads do; else they spin.  shm has no
 * working wait object (bfi_can_sleep()). */
void bfi_open(struct bfi_ep *r, const char *prov, uint16_t port, bool sleep);
/* Insert each endpoint's name into the other's address vector. */
void bfi_link(struct bfi_ep *a, struct bfi_ep *b);
void bfi_close(struct bfi_ep *r);
/* Register buf for acc on r (bound and enabled when FI_MR_ENDPOINT). */
struct fid_mr *bfi_mr(struct bfi_ep *r, void *buf, size_t len, uint64_t acc);
/* Whether prov's CQ can sleep (fi_cq_sread returns on its timeout). */
bool bfi_can_sleep(const char *prov);
/* Seconds of CLOCK_MONOTONIC. */
double bfi_now(void);

/* Ping-pong of len bytes between two endpoints (ports *port+1, *port+2;
 * *port advances): the far side echoes on its own thread.  Fills lat[]
 * with the round trips in microseconds (at most max, for secs seconds)
 * and returns how many. */
uint32_t bfi_rtt(const char *prov, uint16_t *port, size_t len, bool sleep,
		 double secs, double *lat, uint32_t max);
/* fi_read (wr false) or fi_write of blk bytes with qd in flight, for secs
 * seconds, to a target whose provider is progressed by its own thread;
 * MB/s. */
double bfi_rma_bw(const char *prov, uint16_t *port, bool wr, uint32_t qd,
		  size_t blk, bool sleep, double secs);
/*
 * The floor of the RPC protocol's bulk path, raw: request, RMA, reply
 * between two processes, no code of ours.  The server is this program run
 * again (fork + exec of /proc/self/exe with BFI_FLOOR_ARG: every program
 * that calls bfi_floor_bw() calls bfi_floor_main() first in main()), one
 * thread that sleeps on its CQ as our progress threads do (spins for shm):
 * on a 24-byte request (slot, the client's address and key) it pulls
 * (wr: fi_read, as a server does for a write) or pushes (fi_write, a read)
 * blk bytes between its own registered buffer and the client's, and when
 * that completes answers with 8 bytes by fi_inject.  The client keeps qd
 * requests in flight for secs seconds; MB/s.  Ports *port+1 (server) and
 * *port+2; the server is killed at the end (and never outlives this
 * process: PR_SET_PDEATHSIG, alarm).
 */
#define BFI_FLOOR_ARG "--bfi-floor-server"
double bfi_floor_bw(const char *prov, uint16_t *port, bool wr, uint32_t qd,
		    size_t blk, bool sleep, double secs);
/* CPU time (user + system) of both processes of the last bfi_floor_bw()
 * per MiB moved, in us (the server's over its whole life: its set-up is a
 * few ms of a run of seconds). */
double bfi_floor_cpu_per_mib(void);
/* When argv is the floor server's (BFI_FLOOR_ARG ...), serve and exit;
 * else return at once. */
void bfi_floor_main(int argc, char **argv);
/* CPU time (user + system, both endpoints: this process) per MiB moved
 * by the last bfi_rma_bw(), in us. */
double bfi_rma_cpu_per_mib(void);
/* CPU time (user + system) this process used so far, in us. */
double bfi_cpu_us(void);
/* The p-th percentile (0..100) of v[0..n) (sorts v). */
double bfi_pct(double *v, uint32_t n, double p);

#endif
