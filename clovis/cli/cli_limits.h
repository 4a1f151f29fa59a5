/*
 * cli_limits.h — the hard limits of the strata tool, each with its reason.
 *
 * The library's limits are in clovis/clovis.h (public) and
 * clovis/clovis_limits.h (its internals); these bound what the tool takes
 * from its command line, keeps in memory and waits for.  Defaults that
 * are not bounds (block size of new objects, pdclust widths, the data
 * directory) stay beside the commands that use them.
 */
#ifndef STRATA_CLI_LIMITS_H
#define STRATA_CLI_LIMITS_H

/* ------------------------------------------------- command line (cli.h) */

/**
 * Most records one "idx put" or "idx del" takes from its command line:
 * each is one op, so a longer list belongs in a program; 512 pairs stay
 * far below the kernel's argument limit (ARG_MAX) for keys of any size.
 */
#define CLI_RECS_MAX 512

/** Most positional arguments any command takes (idx put: ID and
 *  CLI_RECS_MAX pairs), plus group and name. */
#define CLI_POS_MAX (1 + 2 * CLI_RECS_MAX)

/** Longest message kept from a failed call or op (the library's own are
 *  at most LIM_ERRMSG_LEN, with room for the tool's prefix). */
#define CLI_MSG_MAX 512

/** Objects larger than this get a progress bar on a terminal: smaller
 *  ones finish before a bar would be seen. */
#define CLI_PROGRESS_MIN (8ull << 20)

/** Longest --call-timeout: one hour, as the cluster file allows. */
#define CALL_TIMEOUT_MS_MAX 3600000ull

/* ---------------------------------------------- object I/O (cli_io.c) */

/** Bytes per op for small blocks (fewer, larger ops), and the memory
 *  bound of the ring of ops in flight; at most IO_DEPTH_MAX ops in flight:
 *  a few overlap the latency of one, more only add memory. */
#define IO_CHUNK (1u << 20)
#define IO_RING_BYTES (64u << 20)
#define IO_DEPTH_MAX 8u
/** A pdclust object's ops are whole stripes up to this (cli_io.c
 *  ring_chunk()). */
#define IO_STRIPE_CHUNK_MAX (16u << 20)

/* ------------------------------------------- indices (cli_idx.c) */

/** Records asked for by one NEXT op while scanning: one op moves a page,
 *  and a page of records fits in memory whatever their size. */
#define IDX_PAGE 256u
/** Longest key text quoted in a message: enough to tell keys apart,
 *  short enough for one line. */
#define IDX_QUOTE_MAX 64u

/* ----------------------------------------------- bench (cli_bench.c) */

/** Ops in flight per timed test, and their memory bound (a smaller depth
 *  for large blocks); each block size moves at most BENCH_BYTES_MAX so
 *  the default run takes a few seconds and little space. */
#define BENCH_DEPTH_MAX 16u
#define BENCH_RING_BYTES (64ull << 20)
#define BENCH_BYTES_MAX (64ull << 20)

/* --------------------------------------- devices (cli_dev.c) */

/** Longest device name shown (a configuration allows 31 characters). */
#define DEV_NAME_MAX 64

/* ------------------------------------ S3 users (cli_s3.c) */

/** Users and line length of an S3 credentials file, as strata-s3 reads
 *  it (gateways/s3/s3_limits.h USERS_MAX, s3_auth.c): "s3 user add"
 *  refuses a user the gateway would ignore. */
#define S3U_MAX 1024
#define S3U_LINE 512

/* ---------------------------------------- dtx (cli_dtx.c) */

/** Timeout of one call of "strata dtx" to a server: a server answers a
 *  dtx request at once; one that does not within 5 s is reported as
 *  failing, not waited on. */
#define DTX_CLI_MS 5000u

/* ------------------------------------ cluster up/down/status (cli_cluster.c) */

/*
 * Waits are bounded.  cluster up waits on progress, not on a guess of the
 * time a start takes: servers that create their stores write out GiBs of
 * device files, which took more than 30 s on a busy disk.  It waits as
 * long as every server not answering yet makes progress (its status file
 * changes at least once per CLU_UP_STALL_MS), up to CLU_UP_MAX_MS in all,
 * and gives up at once on a server that died or failed.  Servers stop
 * within the drain bound after SIGTERM: cluster down sends SIGKILL to
 * those still there after CLU_DOWN_WAIT_MS.
 */
#define CLU_UP_STALL_MS 60000
#define CLU_UP_MAX_MS 600000
/* cluster up says what it waits for every CLU_UP_SAY_MS (not quiet). */
#define CLU_UP_SAY_MS 5000
#define CLU_DOWN_WAIT_MS 15000
/* A started server writes its pid file within this (it is written right
 * after it detaches, before the store is opened). */
#define CLU_PID_GRACE_MS 3000
/* Most servers cluster up starts and watches: it makes a development
 * cluster on one machine, where more servers than this only share the
 * same cores and disk. */
#define CLU_UP_MAX_NODES 16
/* Most servers cluster down looks for (D/s0.pid .. D/s63.pid), as many
 * as cluster status lists. */
#define CLU_DOWN_MAX 64
/* Devices cluster status lists (64 servers with 64 devices each). */
#define CLU_STATUS_DEVS 4096

/* Composite objects: the priority of the first layer `obj create
 * --layout composite` makes (strata-hsm adds its tiers' layers below it),
 * and the layers `obj stat` shows at most. */
#define CLI_TOP_LAYER 100u
#define CLI_LAYERS_MAX 16u
/* obj move: the blocks of a partial range counted one call each to report
 * what a racing write kept elsewhere (larger ranges: not counted). */
#define CLI_LEFT_COUNT_MAX 4096u

#endif
