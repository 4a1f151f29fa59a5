/*
 * addb.h — always-on metrics of a Strata process (issue 30; addb/README.md).
 *
 * Every Strata process (an embedded application through libstrata,
 * strata-server, strata-s3, the strata CLI) keeps its metrics in one
 * shared-memory region of its own, /dev/shm/strata-addb.PID, so that a
 * tool reads a running process without stopping it (`strata metrics --pid
 * P`), and the Prometheus exposition (addb_prom_write(), served on
 * /metrics by addb_http_start()) reads the same values.
 *
 * Model.  A fixed catalog of metric families (enum addb_metric), each a
 * counter, a gauge or a fixed-bucket latency histogram, with at most two
 * label dimensions (enum addb_dim) and a priority (a scrape can ask for
 * the important ones only).  An instance of a family is one combination of
 * label values: addb_inst(m, a, b).  Values live in rows of 64-bit words:
 * row 0 is the process's own (gauges set by value), rows 1.. are taken by
 * threads at their first update; a reader sums the rows.  Every update is
 * one relaxed atomic add on the thread's row (no lock, no shared cache
 * line between threads until the rows run out, then threads share rows,
 * still exactly).  Labels whose values are only known at run time
 * (devices, RPC peers) take a slot in the region's label table:
 * addb_dev_slot(), addb_peer_slot().
 *
 * Lifetime.  The region is made at the first use in a process (any update
 * or addb_region_open()), unlinked at a normal exit.  A process killed
 * leaves its region behind: it stays readable (values as of the kill), and
 * the next Strata process to start removes the regions of processes that
 * no longer run (addb_sweep()).  A restarted process starts from zero in a
 * region of its own.  When the region cannot be made (no /dev/shm, no
 * memory, STRATA_ADDB=off in the environment), updates go to private
 * memory and nothing else changes: telemetry never fails an operation.
 *
 * Reading another process's region (addb_snap_pid()) copies the file with
 * pread, never maps it: a region that is short, truncated, of another
 * version or another catalog is refused with -EPROTO and a message naming
 * the file and the field; it can never crash the reader.
 */
#ifndef STRATA_ADDB_H
#define STRATA_ADDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/** Label dimensions.  Sizes and value names: addb.c (addb_dim_size()). */
enum addb_dim {
	ADDB_DIM_NONE = 0,
	ADDB_DIM_OP,      /**< op class: obj.read ... commit (CLOVIS_STAT_*) */
	ADDB_DIM_TIER,    /**< nvram flash sas smr */
	ADDB_DIM_IO,      /**< read write sync */
	ADDB_DIM_DEV,     /**< a device slot (addb_dev_slot()) */
	ADDB_DIM_PEER,    /**< an RPC peer slot (addb_peer_slot()) */
	ADDB_DIM_DIR,     /**< sent received */
	ADDB_DIM_WALK,    /**< repair rebalance scrub */
	ADDB_DIM_OUTCOME, /**< committed aborted failed */
	ADDB_DIM_S3OP,    /**< the S3 gateway's operations (ADDB_S3_*) */
	ADDB_DIM_STATUS,  /**< HTTP status class 2xx 3xx 4xx 5xx */
	ADDB_DIM_NR
};

/** Values of ADDB_DIM_IO. */
enum { ADDB_IO_READ = 0, ADDB_IO_WRITE = 1, ADDB_IO_SYNC = 2 };
/** Values of ADDB_DIM_DIR. */
enum { ADDB_DIR_SENT = 0, ADDB_DIR_RECEIVED = 1 };
/** Values of ADDB_DIM_WALK (the kinds of stripe walks). */
enum { ADDB_WALK_REPAIR = 0, ADDB_WALK_REBALANCE = 1, ADDB_WALK_SCRUB = 2 };
/** Values of ADDB_DIM_OUTCOME (distributed transactions). */
enum { ADDB_DTX_COMMITTED = 0, ADDB_DTX_ABORTED = 1, ADDB_DTX_FAILED = 2 };
/** Values of ADDB_DIM_S3OP. */
enum {
	ADDB_S3_GET = 0, ADDB_S3_PUT, ADDB_S3_HEAD, ADDB_S3_DELETE,
	ADDB_S3_LIST, ADDB_S3_BUCKET, ADDB_S3_MULTIPART, ADDB_S3_OTHER,
	ADDB_S3_NR
};

/** Kinds of metric families. */
enum addb_type { ADDB_COUNTER = 0, ADDB_GAUGE = 1, ADDB_HIST = 2 };

/** Priorities (Ceph's scale: higher is more important); a scrape with a
 *  minimum priority P gets the families of priority >= P. */
enum {
	ADDB_PRIO_DEBUG = 0,
	ADDB_PRIO_USEFUL = 5,
	ADDB_PRIO_CRITICAL = 10
};

/**
 * The catalog.  Names follow Prometheus conventions (base units, counters
 * end in _total); the full list with labels and meaning is in
 * docs/monitoring.md and addb.c (addb_catalog).
 */
enum addb_metric {
	ADDB_PROC_START = 0,   /**< gauge: start time, s since the epoch */
	ADDB_CLIENT_OP_LAT,    /**< hist {op}: Clovis op launch to end */
	ADDB_CLIENT_OP_ERR,    /**< counter {op}: ops that failed */
	ADDB_CLIENT_OP_BYTES,  /**< counter {op}: object bytes moved */
	ADDB_CLIENT_OP_RECORDS, /**< counter {op}: index records moved */
	ADDB_SRV_OP_LAT,       /**< hist {op}: a server's request to reply */
	ADDB_SRV_OP_ERR,       /**< counter {op}: requests answered an error */
	ADDB_SRV_OP_BYTES,     /**< counter {op}: bytes of object requests */
	ADDB_DEV_IO,           /**< counter {device, io}: requests */
	ADDB_DEV_BYTES,        /**< counter {device, io}: bytes */
	ADDB_DEV_ERR,          /**< counter {device, io}: failed requests */
	ADDB_DEV_TIME,         /**< counter {device, io}: seconds spent */
	ADDB_DEV_QUEUE,        /**< gauge {device}: requests queued or running */
	ADDB_DEV_FREE,         /**< gauge {device}: free bytes */
	ADDB_TIER_IO_LAT,      /**< hist {tier, io}: device request latency */
	ADDB_COMMIT_BATCHES,   /**< counter: group commits */
	ADDB_COMMIT_ITEMS,     /**< counter: updates in them */
	ADDB_COMMIT_SYNC,      /**< hist: a group commit's sync + commit time */
	ADDB_RPC_CALLS,        /**< counter {peer}: calls sent */
	ADDB_RPC_BYTES,        /**< counter {peer, dir}: message + bulk bytes */
	ADDB_RPC_RETRIES,      /**< counter {peer}: calls sent again */
	ADDB_RPC_TIMEOUTS,     /**< counter {peer}: calls that timed out */
	ADDB_RPC_LAT,          /**< hist: call to answer */
	ADDB_WALK_RUNS,        /**< counter {walk}: walks started */
	ADDB_WALK_DONE,        /**< gauge {walk}: units done by the running walk */
	ADDB_WALK_TOTAL,       /**< gauge {walk}: units the running walk has */
	ADDB_DTX,              /**< counter {outcome}: dtx ends (coordinator) */
	ADDB_S3_REQ,           /**< counter {operation, status}: requests */
	ADDB_S3_LAT,           /**< hist {operation}: request latency */
	ADDB_FDMI_CONSUMERS,   /**< gauge: FDMI consumers registered */
	ADDB_FDMI_HEAD,        /**< gauge: sequence number of the newest record */
	ADDB_FDMI_LAG_BYTES,   /**< gauge: bytes not yet acked, worst consumer */
	ADDB_FDMI_LAGGING,     /**< counter: consumers marked LAGGING */
	ADDB_ISC_RUNS,         /**< counter: shipped function runs started */
	ADDB_ISC_FAILED,       /**< counter: runs that failed */
	ADDB_ISC_LUA_BYTES,    /**< gauge: bytes held by Lua states now */
	ADDB_METRIC_NR
};

/** Buckets of every histogram: upper bounds 1 us * 2^b, b = 0..
 *  ADDB_HIST_BUCKETS - 2, then +Inf (about 1 us to 17 s). */
#define ADDB_HIST_BUCKETS 26u
/** Device and peer label slots of a region; later ones share the last
 *  slot, labelled "other". */
#define ADDB_DEV_SLOTS 256u
#define ADDB_PEER_SLOTS 64u
/** Bytes of a dynamic label value, with its NUL. */
#define ADDB_LABEL_MAX 96u

/** One family of the catalog. */
struct addb_family {
	const char *af_name;      /**< Prometheus name, without suffixes */
	const char *af_help;
	uint32_t af_type;         /**< enum addb_type */
	uint32_t af_prio;
	uint32_t af_dim[2];       /**< enum addb_dim; NONE when unused */
	const char *af_lname[2];  /**< label names of the dimensions */
	double af_scale;          /**< stored integer -> exposed value (ns ->
				   *   s: 1e-9); 1 for plain counts */
};

/** The catalog entry of m (m < ADDB_METRIC_NR). */
const struct addb_family *addb_family(enum addb_metric m);
/** Values of dimension d. */
uint32_t addb_dim_size(enum addb_dim d);
struct addb_snap;
/** Name of value v of dimension d: a fixed name, or for devices and peers
 *  the label in s's tables; NULL for a slot not in use or v out of range. */
const char *addb_dim_value(enum addb_dim d, uint32_t v,
			   const struct addb_snap *s);

/* The layout of a row, computed from the catalog before main() (a
 * constructor) and read-only after: first word, instances, values of the
 * second dimension, words per instance of each family.  Shared with the
 * inline updates below; not for callers. */
extern uint32_t addb_tab_off[ADDB_METRIC_NR + 1];
extern uint32_t addb_tab_ninst[ADDB_METRIC_NR];
extern uint32_t addb_tab_nb[ADDB_METRIC_NR];

/** Instances of family m (product of its dimensions' sizes). */
static inline uint32_t addb_instances(enum addb_metric m)
{
	return addb_tab_ninst[m];
}

/** Instance of label values (a, b) of family m; b is 0 for a family of one
 *  dimension, a and b 0 for none.  Values past a dimension's size are
 *  clamped to its last value. */
static inline uint32_t addb_inst(enum addb_metric m, uint32_t a, uint32_t b)
{
	uint32_t nb = addb_tab_nb[m], na = addb_tab_ninst[m] / nb;

	a = a < na ? a : na - 1;
	b = b < nb ? b : nb - 1;
	return a * nb + b;
}

/* ---------------------------------------------------------------- updates
 * Cheap (one or two relaxed atomic adds on the thread's row, inline),
 * callable from any thread at any time, never failing.  Built with
 * STRATA_NO_ADDB they are empty (the benchmark's "compiled out"
 * baseline). */
/* The calling thread's row and the generation it was taken in (a forked
 * child takes new rows in a region of its own); not for callers. */
extern __thread uint64_t *addb_t_row;
extern __thread uint32_t addb_t_gen;
extern uint32_t addb_gen;
uint64_t *addb_row_slow(void);

static inline uint64_t *addb_row_get(void)
{
	uint64_t *r = addb_t_row;

	if (__builtin_expect(r != NULL && addb_t_gen == addb_gen, 1))
		return r;
	return addb_row_slow();
}

#ifndef STRATA_NO_ADDB
/* Updates of a row r the caller fetched once (addb_row_get(), not NULL)
 * for several families in a row; inst must be below addb_instances(m).
 * The hot paths that update several families (a device request: four
 * counters and a histogram) fetch the row once. */
static inline void addb_radd(uint64_t *r, enum addb_metric m, uint32_t inst,
			     uint64_t v)
{
	__atomic_fetch_add(&r[addb_tab_off[m] + inst], v, __ATOMIC_RELAXED);
}

static inline void addb_robs(uint64_t *r, enum addb_metric m, uint32_t inst,
			     uint64_t ns)
{
	uint64_t *w, us = (ns + 999) / 1000;
	uint32_t b = us <= 1 ? 0 : 64u - (uint32_t)__builtin_clzll(us - 1);

	b = b < ADDB_HIST_BUCKETS - 1 ? b : ADDB_HIST_BUCKETS - 1;
	w = r + addb_tab_off[m] + (uint64_t)inst * (ADDB_HIST_BUCKETS + 1);
	__atomic_fetch_add(&w[b], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&w[ADDB_HIST_BUCKETS], ns, __ATOMIC_RELAXED);
}

/** Add v to counter instance inst of m (nothing when inst is not below
 *  addb_instances(m)). */
static inline void addb_add(enum addb_metric m, uint32_t inst, uint64_t v)
{
	uint64_t *r = addb_row_get();

	if (r != NULL && inst < addb_tab_ninst[m])
		addb_radd(r, m, inst, v);
}

/* Row 0, the process's, as last found (NULL: not yet, or a region of
 * another generation: a forked child's); not for callers. */
extern uint64_t *addb_r0;
extern uint32_t addb_r0_gen;
uint64_t *addb_row0_slow(void);

static inline uint64_t *addb_row0_get(void)
{
	uint64_t *r0 = __atomic_load_n(&addb_r0, __ATOMIC_ACQUIRE);

	if (__builtin_expect(r0 != NULL && addb_r0_gen == addb_gen, 1))
		return r0;
	return addb_row0_slow();
}

/** Set a gauge to v (the process row; last writer wins). */
static inline void addb_set(enum addb_metric m, uint32_t inst, uint64_t v)
{
	uint64_t *r0 = addb_row0_get();

	if (r0 != NULL && inst < addb_tab_ninst[m])
		__atomic_store_n(&r0[addb_tab_off[m] + inst], v,
				 __ATOMIC_RELAXED);
}

/** Add the signed delta d to a gauge that goes up and down (a queue
 *  depth), in the process row, so that a reader never sees half of a
 *  pair of moves made by two threads. */
static inline void addb_gauge_add(enum addb_metric m, uint32_t inst,
				  int64_t d)
{
	uint64_t *r0 = addb_row0_get();

	if (r0 != NULL && inst < addb_tab_ninst[m])
		__atomic_fetch_add(&r0[addb_tab_off[m] + inst], (uint64_t)d,
				   __ATOMIC_RELAXED);
}

/** Count one observation of ns nanoseconds in histogram m: bucket b with
 *  ns <= 1000 * 2^b (the last one +Inf), and the sum. */
static inline void addb_obs(enum addb_metric m, uint32_t inst, uint64_t ns)
{
	uint64_t *r = addb_row_get();

	if (r != NULL && inst < addb_tab_ninst[m])
		addb_robs(r, m, inst, ns);
}

/** Monotonic clock, ns (for the callers' latencies); 0 when telemetry
 *  is compiled out. */
uint64_t addb_now_ns(void);
#else
static inline void addb_add(enum addb_metric m, uint32_t i, uint64_t v)
{ (void)m; (void)i; (void)v; }
static inline void addb_set(enum addb_metric m, uint32_t i, uint64_t v)
{ (void)m; (void)i; (void)v; }
static inline void addb_gauge_add(enum addb_metric m, uint32_t i, int64_t d)
{ (void)m; (void)i; (void)d; }
static inline void addb_obs(enum addb_metric m, uint32_t i, uint64_t v)
{ (void)m; (void)i; (void)v; }
static inline uint64_t addb_now_ns(void) { return 0; }
#endif

/** The slot of a device label "tier:path" (made at its first use; the
 *  same name gives the same slot); ADDB_DEV_SLOTS - 1 ("other") when the
 *  table is full. */
uint32_t addb_dev_slot(uint32_t tier, const char *path);
/** The slot of an RPC peer label (its address text), as addb_dev_slot(). */
uint32_t addb_peer_slot(const char *peer);

/* ------------------------------------------------------- trace records
 * The ADDB trace (issue 30 item 2): timestamped records of op stages,
 * server requests, device I/O and group commits, written per thread into
 * a ring of a bounded file /dev/shm/strata-addb.PID.trace (default
 * ADDB_TRACE_MIB_DEFAULT MiB, never more), made when tracing is first
 * switched on.  Off by default; switched on and off at run time by the
 * process (addb_trace_set(), clovis_addb_trace()) or from outside through
 * its metrics region (`strata addb trace --pid P`), with one op in N
 * traced (device I/O and commits are recorded while tracing is on).
 * Decoded by addb_trace_read() (`strata addb dump`). */

/** Record kinds. */
enum addb_rec_kind {
	ADDB_R_OP_LAUNCH = 1,  /**< a: op class; id: the op's trace id */
	ADDB_R_OP_EXECUTED,    /**< a: op class */
	ADDB_R_OP_END,         /**< a: op class, b: rc (int64), c: ns */
	ADDB_R_SRV_RECV,       /**< a: op class of a server request,
				*   b: the caller's trace id of the op (0:
				*   the caller did not trace it) */
	ADDB_R_SRV_REPLY,      /**< a: op class, b: rc (int64), c: ns */
	ADDB_R_DEV_IO,         /**< a: io (ADDB_IO_*), id: device slot,
				*   b: bytes, c: ns */
	ADDB_R_COMMIT,         /**< a: items, c: ns */
	/* The stages of a traced op inside the engine and on the wire; id is
	 * the op's trace id (a server's own for the requests it serves, its
	 * srv.recv record giving the caller's), a its op class. */
	ADDB_R_OP_PLACED,      /**< object write: space taken; b: device
				*   runs, c: first device */
	ADDB_R_OP_SENT,        /**< a request of the op sent: a: the RPC
				*   opcode (not an op class), b: bytes,
				*   c: peer slot (addb_peer_slot()) */
	ADDB_R_OP_STORED,      /**< object write: data on its devices;
				*   b: bytes */
	ADDB_R_OP_COMMITTED,   /**< its group commit is visible; b: items
				*   of that commit */
	ADDB_R_OP_STABLE,      /**< its group commit is durable */
	ADDB_R_NR
};

/** One record (48 bytes).  ar_seq is last: written last by the writer,
 *  copied last by a reader, so that a record rewritten while it is
 *  copied never passes as whole. */
struct addb_rec {
	uint64_t ar_ts_ns;     /**< CLOCK_MONOTONIC */
	uint32_t ar_kind;      /**< enum addb_rec_kind */
	uint32_t ar_a;
	uint64_t ar_id;
	uint64_t ar_b;
	uint64_t ar_c;
	uint64_t ar_seq;       /**< its index in its ring + 1 (0: empty) */
};

#define ADDB_TRACE_MIB_DEFAULT 64u
#define ADDB_TRACE_MIB_MAX 4096u

#ifndef STRATA_NO_ADDB
/* The switch (the region header's ah_trace_sample; a zero word when there
 * is no region); not for callers. */
extern volatile uint32_t *addb_trace_sw;

/** Whether tracing is on now (one load). */
static inline bool addb_tracing(void)
{
	return *addb_trace_sw != 0;
}
/** At the start of an op or request: its trace id (one op in N of the
 *  switch), or 0 when it is not traced. */
uint64_t addb_trace_op(void);
/** A fresh trace id, whatever the sampling (an op its caller traces). */
uint64_t addb_trace_id(void);
/** Write one record (nothing when tracing is off or the trace file
 *  cannot be made). */
void addb_rec(uint32_t kind, uint64_t id, uint32_t a, uint64_t b,
	      uint64_t c);
/** The trace id of the op this thread is sending requests for (0: none):
 *  set by the cluster client around an op's calls, read by the RPC layer,
 *  which records ADDB_R_OP_SENT and passes the id to the server. */
extern __thread uint64_t addb_cur_trace;
static inline uint64_t addb_trace_cur(void) { return addb_cur_trace; }
/** Set the current trace id; returns the one it replaces. */
static inline uint64_t addb_trace_cur_set(uint64_t id)
{
	uint64_t old = addb_cur_trace;

	addb_cur_trace = id;
	return old;
}
#else
static inline bool addb_tracing(void) { return false; }
static inline uint64_t addb_trace_op(void) { return 0; }
static inline uint64_t addb_trace_id(void) { return 0; }
static inline void addb_rec(uint32_t k, uint64_t id, uint32_t a, uint64_t b,
			    uint64_t c)
{ (void)k; (void)id; (void)a; (void)b; (void)c; }
static inline uint64_t addb_trace_cur(void) { return 0; }
static inline uint64_t addb_trace_cur_set(uint64_t id) { (void)id; return 0; }
#endif

/**
 * Switch tracing of this process: sample 0 off, N >= 1 one op in N;
 * mib the trace file's bound (1..ADDB_TRACE_MIB_MAX, 0: the default),
 * used when the file is made (the first switch on).  0 or -EINVAL.
 */
int addb_trace_set(uint32_t sample, uint32_t mib);
/**
 * The same for process pid, through its metrics region (the process sees
 * it at its next op).  Errors: -ENOENT (no region), -EPROTO (not a
 * region of this catalog), -EINVAL, -errno of the write.
 */
int addb_trace_set_pid(pid_t pid, uint32_t sample, uint32_t mib);

/** A decoded trace: the records of every ring, each ring's oldest first. */
struct addb_trace {
	uint64_t at_pid;
	uint32_t at_nr;           /**< records */
	uint64_t at_bytes;        /**< the trace file's size */
	uint64_t at_written;      /**< records ever written (all rings) */
	struct addb_trace_rec {
		uint32_t tr_ring;     /**< the thread's ring */
		struct addb_rec tr_rec;
	} *at_recs;
};
/**
 * Read the trace file of process pid (path NULL) or the file path: each
 * ring's last limit records (0: all it holds), in time order.  Records
 * torn by a write at the time of the copy are left out; a file whose
 * header does not fit its size is refused whole.  Errors: -ENOENT (no
 * trace: tracing was never switched on), -EPROTO (not a trace file: names
 * the field), -ENOMEM, -EIO.
 */
int addb_trace_read(pid_t pid, const char *path, uint32_t limit,
		    struct addb_trace **out);
void addb_trace_free(struct addb_trace *t);
/** Name of a record kind ("op.launch" ...), "?" for others. */
const char *addb_rec_name(uint32_t kind);
/** Write the last max records of t (all when max is 0) to f as JSON
 *  lines {"t": s since the first written, "ring", "kind", "id", "a", "b"
 *  (signed), "c"}.  0 or -EIO. */
int addb_trace_json(const struct addb_trace *t, uint32_t max, FILE *f);

/* ---------------------------------------------------------------- region */

/**
 * Make this process's region now (it is otherwise made at the first
 * update), naming the process kind ("strata-server", "strata-s3"; by
 * default the program's name; the last name given is kept).  Returns 0, or the
 * negative errno of why the region lives in private memory instead (the
 * metrics still work in the process; nothing can read them from outside).
 */
int addb_region_open(const char *kind);
/** Path of this process's region file, or NULL when it has none. */
const char *addb_region_path(void);
/**
 * Remove the region files of processes that no longer run (a process
 * SIGKILLed leaves its own behind).  Returns how many were removed.
 */
int addb_sweep(void);

/* ---------------------------------------------------------------- reading */

/** The summed values of one process. */
struct addb_snap {
	uint64_t as_pid;
	char as_kind[32];         /**< process kind, NUL-terminated */
	bool as_running;          /**< the process still ran when read */
	uint64_t as_start_ns;     /**< CLOCK_REALTIME at its start */
	/** Summed rows: as_val[addb_off(m) + inst * width + word]. */
	uint64_t *as_val;
	uint32_t as_nr_val;
	char (*as_dev)[ADDB_LABEL_MAX];  /**< ADDB_DEV_SLOTS labels ("" free) */
	char (*as_peer)[ADDB_LABEL_MAX]; /**< ADDB_PEER_SLOTS labels */
};

/** First word of family m in a row (m <= ADDB_METRIC_NR: the end). */
static inline uint32_t addb_off(enum addb_metric m)
{
	return addb_tab_off[m];
}
/** Words per instance of family m: 1, or ADDB_HIST_BUCKETS + 1 for a
 *  histogram (its buckets, not cumulative, then the sum of ns). */
uint32_t addb_width(enum addb_metric m);

/** Snapshot of this process's metrics into *out (owned by the caller:
 *  addb_snap_free()).  0 or -ENOMEM. */
int addb_snap_self(struct addb_snap **out);
/**
 * Snapshot of process pid's region (/dev/shm/strata-addb.PID).  Errors:
 * -ENOENT (no such region: the message says the process has none or was
 * swept), -EPROTO (not a region of this catalog: the message names the
 * file and field), -EIO, -ENOMEM.
 */
int addb_snap_pid(pid_t pid, struct addb_snap **out);
/** Snapshot of the region file path (as addb_snap_pid()). */
int addb_snap_file(const char *path, struct addb_snap **out);
void addb_snap_free(struct addb_snap *s);

/** The value of counter or gauge instance inst of m in s. */
uint64_t addb_snap_get(const struct addb_snap *s, enum addb_metric m,
		       uint32_t inst);

/* ------------------------------------------------------------ exposition */

/**
 * Write s in the Prometheus text format (version 0.0.4) to f: every family
 * of priority >= min_prio with its HELP and TYPE lines, one sample per
 * instance that was ever touched (counters and histograms that are zero
 * and device/peer slots not in use are left out, except families without
 * labels, always written), histograms as cumulative _bucket{le=...},
 * _sum and _count.  Returns 0 or -EIO.
 */
int addb_prom_write(const struct addb_snap *s, uint32_t min_prio, FILE *f);
/** The same as JSON: {"pid":..,"kind":..,"running":..,"metrics":[{"name":
 *  ..,"type":..,"priority":..,"help":..,"samples":[{"labels":{..},
 *  "value":..}]}]}; histograms give "buckets" [[le, cumulative count]
 *  ...], "sum" and "count". */
int addb_json_write(const struct addb_snap *s, uint32_t min_prio, FILE *f);

/* ------------------------------------------------------------ HTTP server */

struct addb_http;
/**
 * Serve this process's metrics over HTTP (libmicrohttpd, its own thread):
 * GET /metrics (Prometheus text; ?min_priority=P), GET /metrics.json;
 * anything else 404, a method other than GET/HEAD 405.  listen is
 * "ADDR:PORT", "[V6ADDR]:PORT" or "PORT" (127.0.0.1).  Returns 0, -EINVAL
 * (bad listen text: the message names it), -EADDRINUSE or the errno of
 * the bind.
 */
int addb_http_start(const char *listen, struct addb_http **out);
/** The port the server listens on (useful with port 0). */
uint16_t addb_http_port(const struct addb_http *h);
void addb_http_stop(struct addb_http *h);

#endif
