/*
 * addb.c — the metrics catalog, the per-process shared-memory region and
 * its rows, updates and snapshots (addb/addb.h, addb/README.md).
 *
 * Region file /dev/shm/strata-addb.PID:
 *   struct addb_hdr | device labels | peer labels | rows
 * each row ah_row_words 64-bit words (every family's instances, in catalog
 * order), row 0 the process's (gauges set by value), rows 1.. taken by
 * threads.  Only this process writes it; readers copy it with pread.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
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
#include "core/limits.h"
#include "core/types.h"



static const char *const dim_op[] = {
	"obj.read", "obj.write", "obj.alloc", "obj.free", "idx.get",
	"idx.put", "idx.del", "idx.next", "entity.create", "entity.open",
	"entity.delete", "entity.getattr", "entity.setattr", "commit"};
static const char *const dim_tier[] = {"nvram", "flash", "sas", "smr"};
_Static_assert(sizeof dim_tier / sizeof dim_tier[0] == ST_TIER_NR,
	       "one tier label per tier");
static const char *const dim_io[] = {"read", "write", "sync"};
static const char *const dim_dir[] = {"sent", "received"};
static const char *const dim_walk[] = {"repair", "rebalance", "scrub"};
static const char *const dim_outcome[] = {"committed", "aborted", "failed"};
static const char *const dim_s3op[] = {"get", "put", "head", "delete",
				       "list", "bucket", "multipart", "other"};
_Static_assert(sizeof dim_s3op / sizeof dim_s3op[0] == ADDB_S3_NR,
	       "one label per S3 operation");
static const char *const dim_status[] = {"2xx", "3xx", "4xx", "5xx"};

#define N(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

uint32_t addb_dim_size(enum addb_dim d)
{
	switch (d) {
	case ADDB_DIM_OP: return N(dim_op);
	case ADDB_DIM_TIER: return N(dim_tier);
	case ADDB_DIM_IO: return N(dim_io);
	case ADDB_DIM_DEV: return ADDB_DEV_SLOTS;
	case ADDB_DIM_PEER: return ADDB_PEER_SLOTS;
	case ADDB_DIM_DIR: return N(dim_dir);
	case ADDB_DIM_WALK: return N(dim_walk);
	case ADDB_DIM_OUTCOME: return N(dim_outcome);
	case ADDB_DIM_S3OP: return N(dim_s3op);
	case ADDB_DIM_STATUS: return N(dim_status);
	default: return 1;
	}
}

/* Name of value v of dimension d; dynamic ones from the snapshot's label
 * tables (NULL: a slot not in use). */
const char *addb_dim_value(enum addb_dim d, uint32_t v,
			   const struct addb_snap *s)
{
	const char *const *t = NULL;
	uint32_t n = addb_dim_size(d);

	if (v >= n)
		return NULL;
	switch (d) {
	case ADDB_DIM_OP: t = dim_op; break;
	case ADDB_DIM_TIER: t = dim_tier; break;
	case ADDB_DIM_IO: t = dim_io; break;
	case ADDB_DIM_DIR: t = dim_dir; break;
	case ADDB_DIM_WALK: t = dim_walk; break;
	case ADDB_DIM_OUTCOME: t = dim_outcome; break;
	case ADDB_DIM_S3OP: t = dim_s3op; break;
	case ADDB_DIM_STATUS: t = dim_status; break;
	case ADDB_DIM_DEV:
		return s->as_dev[v][0] ? s->as_dev[v] : NULL;
	case ADDB_DIM_PEER:
		return s->as_peer[v][0] ? s->as_peer[v] : NULL;
	default:
		return "";
	}
	return t[v];
}

#define NS 1e-9
#define L1(d, n) {d, ADDB_DIM_NONE}, {n, NULL}
#define L2(d1, n1, d2, n2) {d1, d2}, {n1, n2}
#define L0 {ADDB_DIM_NONE, ADDB_DIM_NONE}, {NULL, NULL}

static const struct addb_family addb_catalog[ADDB_METRIC_NR] = {
	[ADDB_PROC_START] = {"strata_process_start_time_seconds",
		"Start time of the process since the Unix epoch in seconds.",
		ADDB_GAUGE, ADDB_PRIO_CRITICAL, L0, 1},
	[ADDB_CLIENT_OP_LAT] = {"strata_client_op_latency_seconds",
		"Clovis ops of this process, launch to end (STABLE or FAILED).",
		ADDB_HIST, ADDB_PRIO_CRITICAL, L1(ADDB_DIM_OP, "op"), NS},
	[ADDB_CLIENT_OP_ERR] = {"strata_client_op_errors_total",
		"Clovis ops of this process that failed.",
		ADDB_COUNTER, ADDB_PRIO_CRITICAL, L1(ADDB_DIM_OP, "op"), 1},
	[ADDB_CLIENT_OP_BYTES] = {"strata_client_op_bytes_total",
		"Object data bytes read or written by the Clovis ops of this "
		"process.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL, L1(ADDB_DIM_OP, "op"), 1},
	[ADDB_CLIENT_OP_RECORDS] = {"strata_client_op_records_total",
		"Index records stored, found, deleted or listed by the Clovis "
		"ops of this process.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL, L1(ADDB_DIM_OP, "op"), 1},
	[ADDB_SRV_OP_LAT] = {"strata_server_op_latency_seconds",
		"Requests served by this server, arrival to reply.",
		ADDB_HIST, ADDB_PRIO_CRITICAL, L1(ADDB_DIM_OP, "op"), NS},
	[ADDB_SRV_OP_ERR] = {"strata_server_op_errors_total",
		"Requests this server answered with an error.",
		ADDB_COUNTER, ADDB_PRIO_CRITICAL, L1(ADDB_DIM_OP, "op"), 1},
	[ADDB_SRV_OP_BYTES] = {"strata_server_op_bytes_total",
		"Object data bytes of the requests this server served.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL, L1(ADDB_DIM_OP, "op"), 1},
	[ADDB_DEV_IO] = {"strata_device_io_total",
		"Device requests (reads, writes, syncs).",
		ADDB_COUNTER, ADDB_PRIO_USEFUL,
		L2(ADDB_DIM_DEV, "device", ADDB_DIM_IO, "io"), 1},
	[ADDB_DEV_BYTES] = {"strata_device_io_bytes_total",
		"Bytes read from and written to devices.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL,
		L2(ADDB_DIM_DEV, "device", ADDB_DIM_IO, "io"), 1},
	[ADDB_DEV_ERR] = {"strata_device_io_errors_total",
		"Device requests that failed.",
		ADDB_COUNTER, ADDB_PRIO_CRITICAL,
		L2(ADDB_DIM_DEV, "device", ADDB_DIM_IO, "io"), 1},
	[ADDB_DEV_TIME] = {"strata_device_io_seconds_total",
		"Time spent in device requests.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL,
		L2(ADDB_DIM_DEV, "device", ADDB_DIM_IO, "io"), NS},
	[ADDB_DEV_QUEUE] = {"strata_device_queue_depth",
		"Requests queued or running on a device.",
		ADDB_GAUGE, ADDB_PRIO_USEFUL, L1(ADDB_DIM_DEV, "device"), 1},
	[ADDB_DEV_FREE] = {"strata_device_free_bytes",
		"Free bytes of a device (its slice, on a cluster server).",
		ADDB_GAUGE, ADDB_PRIO_CRITICAL, L1(ADDB_DIM_DEV, "device"), 1},
	[ADDB_TIER_IO_LAT] = {"strata_tier_io_latency_seconds",
		"Latency of device requests by tier.",
		ADDB_HIST, ADDB_PRIO_USEFUL,
		L2(ADDB_DIM_TIER, "tier", ADDB_DIM_IO, "io"), NS},
	[ADDB_COMMIT_BATCHES] = {"strata_commit_batches_total",
		"Group commits of the engine.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL, L0, 1},
	[ADDB_COMMIT_ITEMS] = {"strata_commit_items_total",
		"Updates made durable by group commits.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL, L0, 1},
	[ADDB_COMMIT_SYNC] = {"strata_commit_sync_seconds",
		"Time of a group commit's metadata transaction: its maps applied "
		"and committed (the devices' syncs before it are in "
		"strata_device_io_seconds_total{io=\"sync\"}).",
		ADDB_HIST, ADDB_PRIO_USEFUL, L0, NS},
	[ADDB_RPC_CALLS] = {"strata_rpc_calls_total",
		"RPC calls sent to a peer.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL, L1(ADDB_DIM_PEER, "peer"), 1},
	[ADDB_RPC_BYTES] = {"strata_rpc_bytes_total",
		"RPC bytes (messages and bulk data) sent to and received from "
		"a peer by this process's calls.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL,
		L2(ADDB_DIM_PEER, "peer", ADDB_DIM_DIR, "direction"), 1},
	[ADDB_RPC_RETRIES] = {"strata_rpc_retries_total",
		"RPC calls sent again to a peer.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL, L1(ADDB_DIM_PEER, "peer"), 1},
	[ADDB_RPC_TIMEOUTS] = {"strata_rpc_timeouts_total",
		"RPC calls to a peer that timed out.",
		ADDB_COUNTER, ADDB_PRIO_CRITICAL, L1(ADDB_DIM_PEER, "peer"), 1},
	[ADDB_RPC_LAT] = {"strata_rpc_call_latency_seconds",
		"RPC calls, sent to answered.",
		ADDB_HIST, ADDB_PRIO_USEFUL, L0, NS},
	[ADDB_WALK_RUNS] = {"strata_walk_runs_total",
		"Walks (repair, rebalance, scrub) started here.",
		ADDB_COUNTER, ADDB_PRIO_USEFUL, L1(ADDB_DIM_WALK, "walk"), 1},
	[ADDB_WALK_DONE] = {"strata_walk_done_units",
		"Units the running or last walk of a kind has done.",
		ADDB_GAUGE, ADDB_PRIO_USEFUL, L1(ADDB_DIM_WALK, "walk"), 1},
	[ADDB_WALK_TOTAL] = {"strata_walk_total_units",
		"Units the running or last walk of a kind has in all.",
		ADDB_GAUGE, ADDB_PRIO_USEFUL, L1(ADDB_DIM_WALK, "walk"), 1},
	[ADDB_DTX] = {"strata_dtx_total",
		"Distributed transactions ended by this coordinator.",
		ADDB_COUNTER, ADDB_PRIO_CRITICAL,
		L1(ADDB_DIM_OUTCOME, "outcome"), 1},
	[ADDB_S3_REQ] = {"strata_s3_requests_total",
		"S3 requests by operation and status class.",
		ADDB_COUNTER, ADDB_PRIO_CRITICAL,
		L2(ADDB_DIM_S3OP, "operation", ADDB_DIM_STATUS, "status"), 1},
	[ADDB_S3_LAT] = {"strata_s3_request_latency_seconds",
		"S3 requests, headers read to response queued.",
		ADDB_HIST, ADDB_PRIO_USEFUL, L1(ADDB_DIM_S3OP, "operation"), NS},
	[ADDB_FDMI_CONSUMERS] = {"strata_fdmi_consumers",
		"FDMI consumers registered on this store (fdmi/fdmi.h).",
		ADDB_GAUGE, ADDB_PRIO_USEFUL, L0, 1},
	[ADDB_FDMI_HEAD] = {"strata_fdmi_head_seq",
		"Sequence number of the newest FDMI record of this store.",
		ADDB_GAUGE, ADDB_PRIO_USEFUL, L0, 1},
	[ADDB_FDMI_LAG_BYTES] = {"strata_fdmi_lag_bytes",
		"Bytes of FDMI records not yet acknowledged by the slowest "
		"ACTIVE consumer (each one's: strata fdmi ls).",
		ADDB_GAUGE, ADDB_PRIO_CRITICAL, L0, 1},
	[ADDB_FDMI_LAGGING] = {"strata_fdmi_lagging_total",
		"FDMI consumers marked LAGGING (past a bound: cursor dropped).",
		ADDB_COUNTER, ADDB_PRIO_CRITICAL, L0, 1},
	[ADDB_ISC_RUNS] = {"strata_isc_runs_total",
		"Shipped function runs started in this process (docs/isc.md).",
		ADDB_COUNTER, ADDB_PRIO_USEFUL, L0, 1},
	[ADDB_ISC_FAILED] = {"strata_isc_failed_total",
		"Shipped function runs that failed (error, deadline, memory or "
		"output cap).", ADDB_COUNTER, ADDB_PRIO_CRITICAL, L0, 1},
	[ADDB_ISC_LUA_BYTES] = {"strata_isc_lua_bytes",
		"Bytes held by the Lua states of shipped functions now (as of "
		"each state's last call; 0 when no run is open).",
		ADDB_GAUGE, ADDB_PRIO_USEFUL, L0, 1},
};

const struct addb_family *addb_family(enum addb_metric m)
{
	return &addb_catalog[m < ADDB_METRIC_NR ? m : 0];
}

uint32_t addb_width(enum addb_metric m)
{
	return addb_family(m)->af_type == ADDB_HIST ? ADDB_HIST_BUCKETS + 1 : 1;
}

uint32_t addb_tab_off[ADDB_METRIC_NR + 1];
uint32_t addb_tab_ninst[ADDB_METRIC_NR];
uint32_t addb_tab_nb[ADDB_METRIC_NR];

/* The row layout, before main(): the inline updates read these tables
 * without any check that they were filled. */
__attribute__((constructor)) static void addb_tab_init(void)
{
	uint32_t o = 0;

	for (uint32_t m = 0; m < ADDB_METRIC_NR; m++) {
		const struct addb_family *f = &addb_catalog[m];

		addb_tab_nb[m] = addb_dim_size(f->af_dim[1]);
		addb_tab_ninst[m] = addb_dim_size(f->af_dim[0]) * addb_tab_nb[m];
		addb_tab_off[m] = o;
		o += addb_tab_ninst[m] * addb_width(m);
	}
	addb_tab_off[ADDB_METRIC_NR] = o;
}

uint32_t addb_row_words(void)
{
	return addb_off(ADDB_METRIC_NR);
}

/* FNV-1a over what a reader must agree on with the writer. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t addb_catalog_hash(void)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t v[5];

	/* the fixed label values: a reader names them as the writer did */
	for (uint32_t d = ADDB_DIM_OP; d < ADDB_DIM_NR; d++)
		for (uint32_t i = 0; d != ADDB_DIM_DEV && d != ADDB_DIM_PEER &&
		     i < addb_dim_size(d); i++)
			h = fnv(h, addb_dim_value(d, i, NULL),
				strlen(addb_dim_value(d, i, NULL)) + 1);
	for (uint32_t m = 0; m < ADDB_METRIC_NR; m++) {
		const struct addb_family *f = &addb_catalog[m];

		h = fnv(h, f->af_name, strlen(f->af_name));
		h = fnv(h, &f->af_scale, sizeof f->af_scale);
		v[0] = f->af_type;
		v[1] = f->af_dim[0];
		v[2] = f->af_dim[1];
		v[3] = addb_instances(m);
		v[4] = ADDB_HIST_BUCKETS;
		h = fnv(h, v, sizeof v);
	}
	return h;
}

/* ---------------------------------------------------------------- region */

static struct {
	pthread_mutex_t lock;
	struct addb_hdr *hdr;     /* NULL until made; published last */
	uint64_t *rows;
	char (*dev)[ADDB_LABEL_MAX];
	char (*peer)[ADDB_LABEL_MAX];
	/* full names' hashes of the label slots (labels keep a name's tail
	 * when it is longer than a slot) */
	uint64_t dev_hash[ADDB_DEV_SLOTS];
	uint64_t peer_hash[ADDB_PEER_SLOTS];
	bool shared;              /* in /dev/shm (else private memory) */
	bool failed;              /* no memory at all: updates are dropped */
	int fd;                   /* the region file, flock(LOCK_SH) held */
	char path[64];
	pid_t owner;              /* the process that made it */
	char kind[32];
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

__thread uint64_t *addb_t_row;
__thread uint32_t addb_t_gen;
uint32_t addb_gen;               /* bumped in a forked child */

#ifndef STRATA_NO_ADDB
uint64_t addb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The layout of a region: offsets into hdr (page-aligned rows). */
static void addb_layout(struct addb_hdr *h)
{
	uint64_t o = sizeof *h;

	h->ah_dev_off = o;
	o += (uint64_t)ADDB_DEV_SLOTS * ADDB_LABEL_MAX;
	h->ah_peer_off = o;
	o += (uint64_t)ADDB_PEER_SLOTS * ADDB_LABEL_MAX;
	o = (o + 4095) & ~4095ull;
	h->ah_rows_off = o;
	o += (uint64_t)ADDB_ROWS * addb_row_words() * 8;
	h->ah_size = o;
}

/* Fill the header at h and publish the region (g.lock held): every field
 * set before g.hdr, which the lock-free paths test. */
static void addb_fill(struct addb_hdr *h, bool shared)
{
	memcpy(h->ah_magic, ADDB_MAGIC, sizeof h->ah_magic);
	h->ah_version = ADDB_VERSION;
	h->ah_hdr_size = sizeof *h;
	h->ah_catalog = addb_catalog_hash();
	h->ah_pid = (uint64_t)getpid();
	h->ah_start_ns = real_ns();
	memcpy(h->ah_kind, g.kind, sizeof h->ah_kind);
	h->ah_nr_rows = ADDB_ROWS;
	h->ah_row_words = addb_row_words();
	h->ah_dev_slots = ADDB_DEV_SLOTS;
	h->ah_peer_slots = ADDB_PEER_SLOTS;
	h->ah_label_max = ADDB_LABEL_MAX;
	h->ah_rows_used = 1;
	g.dev = (void *)((char *)h + h->ah_dev_off);
	g.peer = (void *)((char *)h + h->ah_peer_off);
	g.rows = (uint64_t *)((char *)h + h->ah_rows_off);
	g.shared = shared;
	g.owner = getpid();
	g.rows[addb_off(ADDB_PROC_START)] = h->ah_start_ns / 1000000000ull;
	__atomic_store_n(&g.hdr, h, __ATOMIC_RELEASE);
	addb_trace_attach(h);
}

/* Whether the region file open as fd belongs to a process that still
 * runs: its owner holds a shared flock on it for its life (across pid
 * namespaces and pid reuse, unlike kill(pid, 0)). */
bool addb_region_owned(int fd)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		flock(fd, LOCK_UN);
		return false;
	}
	return errno == EWOULDBLOCK;
}

/* Open path for a new region, with its owner's shared flock already
 * held: the file is made under a name no sweep looks at, locked, then
 * linked to path (which fails when path exists; a file there that no
 * running process owns -- left by a process killed whose pid came back --
 * is removed and the link tried once more). */
int addb_region_create(const char *path)
{
	char tmp[128];
	int fd, rc = 0;

	/* mkostemp() replaces the template's XXXXXX by a random suffix:
	 * processes of two pid namespaces may share a pid */
	snprintf(tmp, sizeof tmp, "%s.newXXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0644) != 0) {
		rc = -errno;
		unlink(tmp);
		close(fd);
		return rc;
	}
	if (flock(fd, LOCK_SH | LOCK_NB) != 0)
		rc = -errno;
	if (rc == 0 && link(tmp, path) != 0) {
		int old = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		rc = -EEXIST; /* another pid namespace's running process */
		if (old >= 0 && !addb_region_owned(old)) {
			unlink(path);
			rc = link(tmp, path) == 0 ? 0 : -errno;
		}
		if (old >= 0)
			close(old);
	}
	unlink(tmp);
	if (rc != 0) {
		close(fd);
		return rc;
	}
	return fd;
}

/* A region in /dev/shm; -errno when it cannot be made. */
static int addb_make_shared(void)
{
	struct addb_hdr tmp = {0};
	void *p;
	int fd, rc;

	addb_layout(&tmp);
	snprintf(g.path, sizeof g.path, ADDB_SHM_DIR "/" ADDB_SHM_PREFIX "%d",
		 (int)getpid());
	fd = addb_region_create(g.path);
	if (fd < 0) {
		g.path[0] = '\0';
		return fd;
	}
	/* every page now: a full /dev/shm is an error here, never a SIGBUS
	 * on the first write of a row */
	rc = -posix_fallocate(fd, 0, (off_t)tmp.ah_size);
	if (rc != 0)
		goto out_unlink;
	p = mmap(NULL, tmp.ah_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto out_unlink;
	}
	g.fd = fd;
	memcpy(p, &tmp, sizeof tmp);
	addb_fill(p, true);
	return 0;
out_unlink:
	unlink(g.path);
	close(fd);
	g.path[0] = '\0';
	return rc;
}

static void addb_atfork_child(void)
{
	/* The parent's region stays the parent's: the child makes its own at
	 * its first update (its threads' rows are re-picked: addb_gen).  Its
	 * copy of the region's descriptor goes, so that the parent's end
	 * releases the region's lock. */
	if (g.fd >= 0)
		close(g.fd);
	g.fd = -1;
	g.hdr = NULL;
	g.rows = NULL;
	g.path[0] = '\0';
	g.failed = false;
	memset(g.dev_hash, 0, sizeof g.dev_hash);
	memset(g.peer_hash, 0, sizeof g.peer_hash);
	addb_gen++;
#ifndef STRATA_NO_ADDB
	addb_r0 = NULL;
#endif
	pthread_mutex_init(&g.lock, NULL);
	addb_trace_atfork_child();
}

/* At a normal exit (and at dlclose of libstrata): the region goes. */
__attribute__((destructor)) static void addb_exit(void)
{
	if (g.hdr != NULL && g.shared && g.owner == getpid() && g.path[0])
		unlink(g.path);
}

static bool addb_off_env(void)
{
	const char *e = getenv("STRATA_ADDB");

	return e != NULL && (strcmp(e, "off") == 0 || strcmp(e, "0") == 0);
}

/* Make the region (under g.lock); falls back to private memory. */
static int addb_make_locked(void)
{
	static bool hooked;
	struct addb_hdr tmp = {0};
	void *p;
	int rc = -ENOTSUP;

	if (g.hdr != NULL)
		return g.shared ? 0 : -ENOTSUP;
	if (g.failed)
		return -ENOMEM;
	if (!hooked) {
		hooked = true;
		pthread_atfork(NULL, NULL, addb_atfork_child);
	}
	if (g.kind[0] == '\0')
		snprintf(g.kind, sizeof g.kind, "%s",
			 program_invocation_short_name);
	if (!addb_off_env()) {
		addb_sweep();
		rc = addb_make_shared();
		if (rc == 0)
			return 0;
	}
	addb_layout(&tmp);
	p = aligned_alloc(4096, tmp.ah_size);
	if (p == NULL) {
		/* Nothing at all: updates are dropped, and not tried again. */
		g.failed = true;
		return -ENOMEM;
	}
	memset(p, 0, tmp.ah_size);
	memcpy(p, &tmp, sizeof tmp);
	addb_fill(p, false);
	return rc;
}

int addb_region_open(const char *kind)
{
	int rc;

	pthread_mutex_lock(&g.lock);
	if (kind != NULL && kind[0] != '\0') {
		snprintf(g.kind, sizeof g.kind, "%s", kind);
		if (g.hdr != NULL)
			memcpy(g.hdr->ah_kind, g.kind, sizeof g.kind);
	}
	rc = addb_make_locked();
	pthread_mutex_unlock(&g.lock);
	return rc;
}

const char *addb_region_path(void)
{
	return g.hdr != NULL && g.shared ? g.path : NULL;
}

int addb_sweep(void)
{
	DIR *d = opendir(ADDB_SHM_DIR);
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char path[300], *end;
		struct stat st;
		bool fresh;
		long pid;
		int fd;

		if (strncmp(de->d_name, ADDB_SHM_PREFIX,
			    strlen(ADDB_SHM_PREFIX)) != 0)
			continue;
		pid = strtol(de->d_name + strlen(ADDB_SHM_PREFIX), &end, 10);
		fresh = strncmp(end, ".new", 4) == 0 ||
			strncmp(end, ".trace.new", 10) == 0;
		if ((*end != '\0' && strcmp(end, ".trace") != 0 && !fresh) ||
		    pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof path, ADDB_SHM_DIR "/%s", de->d_name);
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* a file being made is locked a moment after it appears:
		 * one of those is left alone for a minute */
		if (fresh && (fstat(fd, &st) != 0 ||
			      time(NULL) - st.st_mtime < 60)) {
			close(fd);
			continue;
		}
		/* unlinked under the exclusive lock: a process making this
		 * path anew takes its own lock on a new file */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && unlink(path) == 0)
			n++;
		close(fd);
	}
	closedir(d);
	return n;
}

/* The calling thread's row (taken at its first update). */
uint64_t *addb_row_slow(void)
{
	struct addb_hdr *h = __atomic_load_n(&g.hdr, __ATOMIC_ACQUIRE);
	uint32_t i;

	if (h == NULL) {
		pthread_mutex_lock(&g.lock);
		addb_make_locked();
		pthread_mutex_unlock(&g.lock);
		h = __atomic_load_n(&g.hdr, __ATOMIC_ACQUIRE);
		if (h == NULL)
			return NULL;
	}
	i = __atomic_fetch_add(&h->ah_rows_used, 1, __ATOMIC_RELAXED);
	if (i >= ADDB_ROWS)
		i = 1 + i % (ADDB_ROWS - 1);
	addb_t_gen = addb_gen;
	addb_t_row = (uint64_t *)((char *)h + h->ah_rows_off) +
		     (uint64_t)i * addb_row_words();
	return addb_t_row;
}

struct addb_hdr *addb_hdr_get(void)
{
	if (addb_row_get() == NULL)
		return NULL;
	return __atomic_load_n(&g.hdr, __ATOMIC_ACQUIRE);
}

uint32_t addb_thread_index(void)
{
	struct addb_hdr *h = addb_hdr_get();

	if (h == NULL)
		return 0;
	return (uint32_t)((addb_t_row - (uint64_t *)((char *)h +
		h->ah_rows_off)) / addb_row_words());
}

#ifndef STRATA_NO_ADDB
uint64_t *addb_r0;
uint32_t addb_r0_gen;

/* Row 0, the process's (NULL when there is no region), found and kept
 * for the inline gauge updates (addb_row0_get()). */
uint64_t *addb_row0_slow(void)
{
	struct addb_hdr *h;
	uint64_t *r0;

	if (addb_row_get() == NULL)
		return NULL;
	h = __atomic_load_n(&g.hdr, __ATOMIC_ACQUIRE);
	if (h == NULL)
		return NULL;
	r0 = (uint64_t *)((char *)h + h->ah_rows_off);
	pthread_mutex_lock(&g.lock);
	addb_r0_gen = addb_gen;
	__atomic_store_n(&addb_r0, r0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g.lock);
	return r0;
}
#endif

/* Slot of name in table t of n slots with the full names' hashes hs (made
 * at first use).  A name longer than a slot keeps its tail, after "..",
 * cut at a UTF-8 character's start. */
static uint32_t addb_slot(char (*t)[ADDB_LABEL_MAX], uint64_t *hs, uint32_t n,
			  const char *name)
{
	uint64_t h = fnv(0xcbf29ce484222325ull, name, strlen(name)) | 1;
	size_t len = strlen(name);
	uint32_t i;

	if (addb_row_get() == NULL)
		return n - 1;
	pthread_mutex_lock(&g.lock);
	for (i = 0; i < n - 1; i++) {
		if (hs[i] == h)
			break;
		if (hs[i] == 0) {
			const char *tail = name;

			if (len >= ADDB_LABEL_MAX) {
				tail = name + len - (ADDB_LABEL_MAX - 3);
				while ((*tail & 0xc0) == 0x80)
					tail++;
				snprintf(t[i], ADDB_LABEL_MAX, "..%s", tail);
			} else {
				snprintf(t[i], ADDB_LABEL_MAX, "%s", name);
			}
			hs[i] = h;
			break;
		}
	}
	if (i == n - 1 && t[i][0] == '\0')
		snprintf(t[i], ADDB_LABEL_MAX, "other");
	pthread_mutex_unlock(&g.lock);
	return i;
}

uint32_t addb_dev_slot(uint32_t tier, const char *path)
{
	char name[LIM_PATH_MAX + 16];

	if (addb_row_get() == NULL)
		return ADDB_DEV_SLOTS - 1;
	snprintf(name, sizeof name, "%s:%s",
		 tier < ST_TIER_NR ? dim_tier[tier] : "none", path);
	return addb_slot(g.dev, g.dev_hash, ADDB_DEV_SLOTS, name);
}

uint32_t addb_peer_slot(const char *peer)
{
	if (addb_row_get() == NULL)
		return ADDB_PEER_SLOTS - 1;
	return addb_slot(g.peer, g.peer_hash, ADDB_PEER_SLOTS, peer);
}

/* ---------------------------------------------------------------- reading */

static struct addb_snap *snap_alloc(void)
{
	struct addb_snap *s = calloc(1, sizeof *s);

	if (s == NULL)
		return NULL;
	s->as_nr_val = addb_row_words();
	s->as_val = calloc(s->as_nr_val, sizeof *s->as_val);
	s->as_dev = calloc(ADDB_DEV_SLOTS, ADDB_LABEL_MAX);
	s->as_peer = calloc(ADDB_PEER_SLOTS, ADDB_LABEL_MAX);
	if (s->as_val == NULL || s->as_dev == NULL || s->as_peer == NULL) {
		addb_snap_free(s);
		return NULL;
	}
	return s;
}

void addb_snap_free(struct addb_snap *s)
{
	if (s == NULL)
		return;
	free(s->as_val);
	free(s->as_dev);
	free(s->as_peer);
	free(s);
}

/* Sum nr rows of words into s; copy the label tables (NUL-terminated). */
static void snap_sum(struct addb_snap *s, const uint64_t *rows, uint32_t nr,
		     const char (*dev)[ADDB_LABEL_MAX],
		     const char (*peer)[ADDB_LABEL_MAX])
{
	for (uint32_t r = 0; r < nr; r++)
		for (uint32_t w = 0; w < s->as_nr_val; w++)
			s->as_val[w] += __atomic_load_n(
				&rows[(uint64_t)r * s->as_nr_val + w],
				__ATOMIC_RELAXED);
	for (uint32_t i = 0; i < ADDB_DEV_SLOTS; i++) {
		memcpy(s->as_dev[i], dev[i], ADDB_LABEL_MAX - 1);
		s->as_dev[i][ADDB_LABEL_MAX - 1] = '\0';
	}
	for (uint32_t i = 0; i < ADDB_PEER_SLOTS; i++) {
		memcpy(s->as_peer[i], peer[i], ADDB_LABEL_MAX - 1);
		s->as_peer[i][ADDB_LABEL_MAX - 1] = '\0';
	}
}

int addb_snap_self(struct addb_snap **out)
{
	struct addb_snap *s;
	uint32_t used;

	if (addb_row_get() == NULL)
		return err_set(-ENOMEM, "addb: no memory for the metrics");
	s = snap_alloc();
	if (s == NULL)
		return err_set(-ENOMEM, "addb: no memory for a snapshot");
	used = __atomic_load_n(&g.hdr->ah_rows_used, __ATOMIC_RELAXED);
	snap_sum(s, g.rows, used < ADDB_ROWS ? used : ADDB_ROWS,
		 (const void *)g.dev, (const void *)g.peer);
	s->as_pid = (uint64_t)getpid();
	s->as_running = true;
	s->as_start_ns = g.hdr->ah_start_ns;
	memcpy(s->as_kind, g.hdr->ah_kind, sizeof s->as_kind);
	s->as_kind[sizeof s->as_kind - 1] = '\0';
	*out = s;
	return 0;
}

/* The header of a region file checked against this catalog. */
static int snap_check(const char *path, const struct addb_hdr *h,
		      uint64_t fsize)
{
	struct addb_hdr want = {0};

	addb_layout(&want);
	if (memcmp(h->ah_magic, ADDB_MAGIC, sizeof h->ah_magic) != 0)
		return err_set(-EPROTO, "%s: not a Strata metrics region "
			       "(magic)", path);
	if (h->ah_version != ADDB_VERSION || h->ah_hdr_size != sizeof *h)
		return err_set(-EPROTO, "%s: version %u, this reader knows %u",
			       path, h->ah_version, ADDB_VERSION);
	if (h->ah_catalog != addb_catalog_hash() ||
	    h->ah_row_words != addb_row_words() ||
	    h->ah_nr_rows != ADDB_ROWS || h->ah_dev_slots != ADDB_DEV_SLOTS ||
	    h->ah_peer_slots != ADDB_PEER_SLOTS ||
	    h->ah_label_max != ADDB_LABEL_MAX)
		return err_set(-EPROTO, "%s: catalog: written by another "
			       "build of Strata (its metrics differ)", path);
	if (h->ah_dev_off != want.ah_dev_off ||
	    h->ah_peer_off != want.ah_peer_off ||
	    h->ah_rows_off != want.ah_rows_off || h->ah_size != want.ah_size)
		return err_set(-EPROTO, "%s: layout: offsets differ from this "
			       "catalog's", path);
	if (fsize < h->ah_size)
		return err_set(-EPROTO, "%s: size: %" PRIu64 " bytes, the "
			       "region has %" PRIu64, path, fsize, h->ah_size);
	return 0;
}

int addb_snap_file(const char *path, struct addb_snap **out)
{
	struct addb_snap *s = NULL;
	struct addb_hdr h;
	struct stat st;
	uint8_t *buf = NULL;
	ssize_t n;
	int fd, rc;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set(-errno, "%s: %s", path, errno == ENOENT ?
			       "no metrics region (the process has none, or "
			       "it ended)" : strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = err_set(-EIO, "%s: %s", path, strerror(errno));
		goto out;
	}
	n = pread(fd, &h, sizeof h, 0);
	if (n != (ssize_t)sizeof h) {
		rc = err_set(-EPROTO, "%s: size: %lld bytes, shorter than a "
			     "header", path, (long long)st.st_size);
		goto out;
	}
	rc = snap_check(path, &h, (uint64_t)st.st_size);
	if (rc != 0)
		goto out;
	buf = malloc(h.ah_size);
	s = snap_alloc();
	if (buf == NULL || s == NULL) {
		rc = err_set(-ENOMEM, "%s: no memory to read it", path);
		goto out;
	}
	n = pread(fd, buf, h.ah_size, 0);
	if (n != (ssize_t)h.ah_size) {
		rc = err_set(-EPROTO, "%s: size: it shrank while read", path);
		goto out;
	}
	h.ah_rows_used = ((struct addb_hdr *)buf)->ah_rows_used;
	snap_sum(s, (const uint64_t *)(buf + h.ah_rows_off),
		 h.ah_rows_used < ADDB_ROWS ? h.ah_rows_used : ADDB_ROWS,
		 (const void *)(buf + h.ah_dev_off),
		 (const void *)(buf + h.ah_peer_off));
	s->as_pid = h.ah_pid;
	s->as_start_ns = h.ah_start_ns;
	memcpy(s->as_kind, h.ah_kind, sizeof s->as_kind);
	s->as_kind[sizeof s->as_kind - 1] = '\0';
	s->as_running = addb_region_owned(fd);
	*out = s;
	s = NULL;
out:
	free(buf);
	addb_snap_free(s);
	close(fd);
	return rc;
}

int addb_snap_pid(pid_t pid, struct addb_snap **out)
{
	char path[64];

	if (pid <= 0)
		return err_set(-EINVAL, "addb: pid %d: not a process id",
			       (int)pid);
	snprintf(path, sizeof path, ADDB_SHM_DIR "/" ADDB_SHM_PREFIX "%d",
		 (int)pid);
	return addb_snap_file(path, out);
}

uint64_t addb_snap_get(const struct addb_snap *s, enum addb_metric m,
		       uint32_t inst)
{
	if (m >= ADDB_METRIC_NR || inst >= addb_instances(m))
		return 0;
	return s->as_val[addb_off(m) + inst * addb_width(m)];
}
