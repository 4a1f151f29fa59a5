/*
 * cli.h — shared parts of the strata command-line tool.
 *
 * The tool is a plain client of the public API (clovis/clovis.h) and uses
 * nothing else of Strata, but for `ha replay` (cli_ha.c), which runs the HA
 * event analyzer (ha/analyzer.h) itself and opens no store.  One invocation runs one command: strata.c parses
 * the command line into struct cli, opens the store when the command needs
 * it, and calls the command's function.  Commands return an exit code:
 * 0 on success, 1 when an operation failed, 2 for a usage error.  Every
 * failure is reported as exactly one line on stderr.
 */
#ifndef STRATA_CLI_H
#define STRATA_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clovis/clovis.h"
#include "clovis/cli/cli_limits.h"

/** Exit codes of a command. */
enum {
	CLI_OK = 0,
	CLI_FAIL = 1,
	CLI_USAGE = 2,
};

/** Command-specific options (bits of struct cli_cmd.cc_opts). */
enum cli_opt {
	CO_BLOCK = 1u << 0,     /* --block-size, --block-shift */
	CO_TIER = 1u << 1,      /* --tier */
	CO_OVERWRITE = 1u << 2, /* --overwrite */
	CO_COUNT = 1u << 3,     /* --count */
	CO_EXCLUDE = 1u << 4,   /* --exclude-start */
	CO_RESET = 1u << 5,     /* --reset */
	CO_OPS = 1u << 6,       /* --ops */
	CO_HEX = 1u << 7,       /* --hex */
	CO_YES = 1u << 8,       /* --yes */
	CO_LAYOUT = 1u << 9,    /* --layout, --pool, --data N, --parity,
				 * --spare, --copies, --unit */
	CO_LIVE = 1u << 10,     /* --live */
	CO_CLUSTER = 1u << 11,  /* --nodes, --dir, --base-port,
				 * --nvram-dir, --call-timeout (cluster) */
	CO_RECORDS = 1u << 12,  /* no option: the arguments after the ID are
				 * records (idx put, idx del), decoded and
				 * checked before the store is opened */
	CO_METRICS = 1u << 13,  /* --pid, --file, --min-priority, --sweep */
	CO_FDMI_SUB = 1u << 14, /* --max-bytes, --max-age, --from-start */
	CO_FDMI_TAIL = 1u << 15, /* --follow, --no-ack */
	CO_MOVE = 1u << 16,     /* --to, --range (obj move) */
	CO_ISC_REG = 1u << 17,  /* --decl, --lua, --native (isc register) */
	CO_ISC_CALL = 1u << 18, /* --obj, --idx, --container, --start,
				 * --blocks, --from, --to, --args,
				 * --deadline, --mem, --out-max (isc call) */
};

/** The options of the isc commands, as typed (struct cli.c_isc; NULL when
 *  not given), checked by cli_isc.c. */
enum cli_isc_opt {
	CI_DECL, CI_LUA, CI_NATIVE, CI_OBJ, CI_IDX, CI_CONTAINER, CI_START,
	CI_BLOCKS, CI_FROM, CI_TO, CI_ARGS, CI_DEADLINE, CI_MEM, CI_OUT_MAX,
	CI_NR
};

/** Default data directory when neither --data nor STRATA_DATA is given. */
#define CLI_DATA_DEFAULT "./strata-data"

struct cli;

/** One command: its words, arguments, options and function. */
struct cli_cmd {
	const char *cc_group;  /* "obj", "idx", or the command itself */
	const char *cc_name;   /* sub-command, NULL for one-word commands */
	int cc_min_args;       /* positional arguments after the words */
	int cc_max_args;
	uint32_t cc_opts;      /* CO_* allowed */
	bool cc_store;         /* needs the store open */
	int (*cc_fn)(struct cli *c);
	const char *cc_args;   /* argument synopsis for usage lines */
	const char *cc_help;   /* one-paragraph description */
};

/** One record of idx put or idx del, decoded from the command line. */
struct cli_rec {
	void *cr_key;          /* malloc()ed */
	size_t cr_klen;
	void *cr_val;          /* malloc()ed; NULL for idx del */
	size_t cr_vlen;
};

/** Everything one invocation knows: options, arguments, the open store. */
struct cli {
	/* global options */
	const char *c_data_dir;
	bool c_json;
	bool c_quiet;
	bool c_help;
	int c_verbose;
	uint64_t c_dev_size;
	const char *c_config;  /* --config: YAML used when the store is made */
	bool c_model;          /* --model: device model on for every tier */
	bool c_meta_nvram;     /* --meta-nvram: metadata on NVRAM at create */
	const char *c_cluster; /* --cluster FILE: cluster mode */
	const char *c_server;  /* --server ADDR:PORT: cluster mode */
	const char *c_secret;  /* $STRATA_SECRET, with --server */
	/* strata cluster up/down/status */
	uint64_t c_nodes;
	const char *c_dir;
	uint64_t c_base_port;
	const char *c_nvram_dir; /* cluster up --nvram-dir: NULL = D/sI */
	uint32_t c_call_ms;      /* cluster up --call-timeout: 0 = 20 s */
	uint64_t c_etcd_members; /* cluster up: etcd members, 0: --no-etcd */
	bool c_ha_test;          /* cluster up --ha-test */
	const char *c_dev_fill;  /* cluster up --device-fill: zero, reserve */
	uint64_t c_meta_replicas; /* cluster up --meta-replicas: 0 = unset */
	uint32_t c_flash_mib;    /* cluster up --flash-size in MiB: 0 = unset */
	/* command options */
	bool c_hex;
	bool c_overwrite;
	bool c_exclude;
	bool c_reset;
	bool c_yes;
	bool c_block_set;
	uint32_t c_block_shift;
	int c_tier;            /* -1 when not given */
	bool c_count_set;
	uint64_t c_count;
	bool c_ops_set;
	uint64_t c_ops;
	/* layout of new objects: c_layout 0 = the container's default */
	uint32_t c_layout;
	const char *c_pool;    /* pool name or index, NULL = default pool */
	bool c_data_set;
	uint32_t c_data;       /* pdclust N */
	bool c_parity_set;
	uint32_t c_parity;     /* pdclust K */
	bool c_spare_set;
	uint32_t c_spare;      /* pdclust and mirror S */
	bool c_copies_set;
	uint32_t c_copies;     /* mirror N */
	uint32_t c_unit_shift; /* 0 = the library's default */
	uint64_t c_pid;        /* metrics --pid (0: not given) */
	const char *c_file;    /* metrics --file */
	uint64_t c_min_prio;   /* metrics --min-priority (0: all) */
	bool c_sweep;          /* metrics --sweep */
	bool c_live_set;
	uint32_t c_live;       /* smr clean: live percentage (default 25) */
	uint64_t c_max_bytes;  /* fdmi sub --max-bytes (0: the default) */
	uint64_t c_max_age_s;  /* fdmi sub --max-age (0: the default) */
	bool c_from_start;     /* fdmi sub --from-start */
	bool c_follow;         /* fdmi tail --follow */
	bool c_no_ack;         /* fdmi tail --no-ack */
	int c_to;              /* obj move --to: a tier, -1 not given */
	bool c_range_set;      /* obj move --range A:B */
	uint64_t c_range_a, c_range_b; /* blocks [A, B) */
	const char *c_isc[CI_NR]; /* isc register, isc call: as typed */
	/* positional arguments after the command words */
	int c_nargs;
	const char *c_args[CLI_POS_MAX];
	/* CO_RECORDS commands: the records after the ID (cli_recs_parse()) */
	struct cli_rec *c_recs;
	uint32_t c_nrecs;
	/* the command being run (or its group while unresolved), the store */
	const struct cli_cmd *c_cmd;
	const char *c_group;
	struct clovis *c_cl;
	/* message of the last failure seen (see cli_call, cli_op_run) */
	char c_msg[CLI_MSG_MAX];
};

/* ------------------------------------------------------------ errors */

/**
 * Keep the thread's clovis_errmsg() when rc is an error, so that a later
 * cli_fail() can report it; returns rc unchanged.
 */
int cli_call(struct cli *c, int rc);

/** Set the message a later cli_fail() reports. */
void cli_msg(struct cli *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * Report a failure as one stderr line
 * "strata: WHAT: clovis_strerror(rc): message" and return CLI_FAIL.
 */
int cli_fail(struct cli *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** Report a usage error as one stderr line and return CLI_USAGE. */
int cli_usage(struct cli *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** Report a failed system call (errno err) as one line; returns CLI_FAIL. */
int cli_sys(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------- ops, entities */

/**
 * Launch op, wait until it is STABLE or FAILED and free it.  Returns the
 * op's rc; on failure its message is kept for cli_fail().
 */
int cli_op_run(struct cli *c, struct clovis_op *op);

/** Keep the failure message of op (call before freeing it). */
void cli_op_msg(struct cli *c, const struct clovis_op *op);

/** Run an entity op (CREATE, OPEN, DELETE, GETATTR, SETATTR) on e. */
int cli_entity_run(struct cli *c, struct clovis_entity *e,
		   enum clovis_entity_opcode opcode);

/**
 * Parse the id text s; on failure report a usage error naming it and return
 * CLI_USAGE, else 0.
 */
int cli_id(struct cli *c, const char *s, struct clovis_id *id);

/** Open the existing object id into o; reports and returns CLI_FAIL. */
int cli_obj_open(struct cli *c, const char *text, const struct clovis_id *id,
		 struct clovis_obj *o);

/** Open the existing index id into ix; reports and returns CLI_FAIL. */
int cli_idx_open(struct cli *c, const char *text, const struct clovis_id *id,
		 struct clovis_idx *ix);

/** Open the store (creating it when missing); reports on failure. */
int cli_store_open(struct cli *c);

/* ------------------------------------------------------- parsing */

/** Parse an unsigned decimal or 0x-hex number; false if s is not one. */
bool cli_parse_u64(const char *s, uint64_t *out);

/** Parse a byte size with an optional K, M, G (or KiB, MiB, GiB) suffix. */
bool cli_parse_size(const char *s, uint64_t *out);

/** Parse a tier name (nvram, flash, sas, smr); -1 if unknown. */
int cli_parse_tier(const char *s);

/** The name of tier t ("nvram", "flash", "sas", "smr", or "?"). */
const char *cli_tier_name(uint32_t t);

/** Parse a layout name (plain, pdclust, mirror) into CLOVIS_LAYOUT_*; -1
 *  if unknown. */
int cli_parse_layout(const char *s);

/** The name of layout l ("plain", "pdclust", "mirror", "composite", or
 *  "layout-N" in buf for a layout this tool does not know). */
const char *cli_layout_name(uint32_t l, char *buf, size_t size);

/**
 * Decode s into a byte string: hex digits when hex is set, else the text
 * itself.  Returns a malloc()ed buffer and its length in *len, or NULL on
 * bad hex (reported as a usage error by the caller).
 */
void *cli_bytes(const char *s, bool hex, size_t *len);

/* ------------------------------------------------------- output */

/** Write buf as a JSON string (quotes included) to f. */
void cli_json_str(FILE *f, const void *buf, size_t len);

/** Write buf as lower-case hex to f. */
void cli_hex_out(FILE *f, const void *buf, size_t len);

/**
 * Write buf as text to f: printable bytes as they are, control bytes as
 * \t, \n, \r or \xNN, and a backslash as \\.
 */
void cli_text_out(FILE *f, const void *buf, size_t len);

/** Write buf to f as hex (hex set) or escaped text. */
void cli_bytes_out(FILE *f, const void *buf, size_t len, bool hex);

/** Write buf to f as a JSON string: hex digits (hex set) or the bytes. */
void cli_bytes_json(FILE *f, const void *buf, size_t len, bool hex);

/** Format n bytes in a short human form ("4.0 KiB") into buf. */
const char *cli_human(uint64_t n, char *buf, size_t size);

/** Monotonic time in nanoseconds. */
uint64_t cli_now_ns(void);

/* ------------------------------------------------------- progress */

/** A progress bar on stderr, drawn only when on is set. */
struct cli_progress {
	bool pr_on;
	uint64_t pr_total;
	uint64_t pr_done;
	uint64_t pr_last_ns;
	uint64_t pr_start_ns;
	const char *pr_label;
	bool pr_units;         /* count units, not bytes */
};

/**
 * Start a progress bar for total bytes: shown when stderr is a terminal,
 * -q is not given and total exceeds CLI_PROGRESS_MIN.
 */
void cli_progress_init(struct cli_progress *p, const struct cli *c,
		       const char *label, uint64_t total);

/** Add n bytes done and redraw at most ten times a second. */
void cli_progress_add(struct cli_progress *p, uint64_t n);

/**
 * Start a progress line counting units rather than bytes (repair, scrub):
 * shown whenever stderr is a terminal and -q is not given.
 */
void cli_progress_init_units(struct cli_progress *p, const struct cli *c,
			     const char *label);

/** Set done of total and redraw at most ten times a second. */
void cli_progress_set(struct cli_progress *p, uint64_t done, uint64_t total);

/** Finish the bar (draw 100% and end its line) or erase it on failure. */
void cli_progress_end(struct cli_progress *p, bool ok);

/* ------------------------------------------------------- object I/O */

/**
 * Write everything readable from fd into object o from block start on,
 * with several ops in flight; the last partial block is zero-padded.
 * Sets *bytes to the bytes read from fd.  Returns 0 or CLI_FAIL (reported;
 * what names the command).
 */
int cli_io_write(struct cli *c, struct clovis_obj *o, uint64_t start, int fd,
		 struct cli_progress *p, uint64_t *bytes, const char *what);

/**
 * Read nr blocks of object o from block start on into fd, at most limit
 * bytes of them, with several ops in flight.  Returns 0 or CLI_FAIL.
 */
int cli_io_read(struct cli *c, struct clovis_obj *o, uint64_t start,
		uint64_t nr, uint64_t limit, int fd, struct cli_progress *p,
		const char *what);

/* ------------------------------------------------------- layouts */

/**
 * Fill *a for a new object from the command's options: block size, and
 * --layout with its pool and geometry (or --tier for plain).  Resolves
 * --pool by name with clovis_pool_list().  Returns 0, or CLI_FAIL with the
 * failure reported (text names the object).
 */
int cli_obj_attr(struct cli *c, const char *text, struct clovis_obj_attr *a);

/**
 * Describe the layout of a in words: "plain on flash", "pdclust 4+2+1 on
 * pool flash, 64.0 KiB units", "mirror 3 copies +1 spare on pool flash,
 * 64.0 KiB units".
 */
const char *cli_layout_text(struct cli *c, const struct clovis_obj_attr *a,
			    char *buf, size_t size);

/**
 * Print the layout of a as JSON members (no braces, no leading comma):
 * "layout", then "tier" and "device" (plain) or "pool", "pool_index",
 * the unit counts and "unit_size" (pdclust, mirror).
 */
void cli_layout_json(struct cli *c, const struct clovis_obj_attr *a);

/**
 * Fetch the store's pools into a malloc()ed array; *nr gets its length.
 * Returns 0 or a negative code (message kept for cli_fail()).
 */
int cli_pools_fetch(struct cli *c, struct clovis_pool_info **out,
		    uint32_t *nr);

/** The name of pool p into buf ("pool-N" if the store lists none such). */
const char *cli_pool_name(struct cli *c, uint32_t p, char *buf, size_t size);

/* ------------------------------------------------------- devices */

/**
 * Fetch the store's devices into a malloc()ed array; *nr gets its length.
 * Returns 0 or a negative code (message kept for cli_fail()).
 */
int cli_devs_fetch(struct cli *c, struct clovis_dev_info **out,
		   uint32_t *nr);

/* Name of a device state (CLOVIS_DEV_*): online, failed, repaired or
 * unknown, as every device listing and its JSON print it. */
const char *cli_dev_state(uint32_t state);

/**
 * The name of device d as 'strata devices' shows it: the file name of its
 * path without the directory, a ".dev" suffix and the "strata-UUID-"
 * prefix of NVRAM devices ("flash3", "nvram0").
 */
const char *cli_dev_name(const struct clovis_dev_info *d, char *buf,
			 size_t size);

/**
 * Find the device named by text: its index in decimal, or its name.
 * Sets *dev.  Returns 0, or CLI_FAIL with the failure reported (what
 * names the command).
 */
int cli_dev_find(struct cli *c, const char *text, const char *what,
		 uint32_t *dev);

/* ------------------------------------------------------- commands */

/** Open a cluster-mode client (--cluster or --server); CLI_FAIL reported. */
int cli_cluster_open(struct cli *c);
int cmd_cluster_up(struct cli *c);
int cmd_cluster_down(struct cli *c);
int cmd_cluster_status(struct cli *c);
int cmd_dtx_ls(struct cli *c);
int cmd_dtx_resolve(struct cli *c);
int cmd_s3_user(struct cli *c); /* cli_s3.c */
int cmd_ha_replay(struct cli *c); /* cli_ha.c */
int cmd_ha_show(struct cli *c);
int cmd_ha_report(struct cli *c);
int cmd_server(struct cli *c);
int cmd_obj_create(struct cli *c);
int cmd_obj_write(struct cli *c);
int cmd_obj_read(struct cli *c);
int cmd_obj_put(struct cli *c);
int cmd_obj_get(struct cli *c);
int cmd_obj_stat(struct cli *c);
int cmd_obj_rm(struct cli *c);
int cmd_obj_ls(struct cli *c);
int cmd_obj_layers(struct cli *c);
int cmd_obj_move(struct cli *c);
int cmd_idx_create(struct cli *c);
int cmd_idx_put(struct cli *c);
int cmd_idx_get(struct cli *c);
int cmd_idx_del(struct cli *c);
int cmd_idx_next(struct cli *c);
int cmd_idx_dump(struct cli *c);
int cmd_idx_rm(struct cli *c);
int cmd_idx_ls(struct cli *c);

/**
 * Decode and check the records of a CO_RECORDS command (idx put: KEY VALUE
 * pairs, idx del: KEYs) into c_recs, before the store is opened: an odd
 * count of put arguments, bad hex, an empty key in a list of several
 * records, a key past CLOVIS_KEY_MAX and more than CLI_RECS_MAX records
 * are reported (naming the record) and nothing is done.  Returns 0,
 * CLI_USAGE or CLI_FAIL.
 */
int cli_recs_parse(struct cli *c);

/** Free c_recs. */
void cli_recs_free(struct cli *c);
int cmd_stats(struct cli *c);
int cmd_metrics(struct cli *c);
int cmd_addb_trace(struct cli *c);
int cmd_addb_dump(struct cli *c);
int cmd_addb_top(struct cli *c);
int cmd_addb_records(struct cli *c);

/** The requests every cluster server served, summed from their metrics
 *  (SOP_METRICS, cli_addb.c): per op class count, errors, latency sum and
 *  cumulative histogram buckets (addb/addb.h), and each server's count. */
struct cli_ops_agg {
	uint32_t oa_nr;                  /* servers read */
	uint32_t oa_down;                /* servers not read */
	char oa_srv[64][64];
	uint64_t oa_count[16];
	uint64_t oa_err[16];
	double oa_sum_s[16];
	uint64_t oa_cum[16][32];
	uint64_t oa_srv_count[64][16];
};
int cli_ops_aggregate(struct cli *c, const struct clovis_server_info *si,
		      uint32_t nr, struct cli_ops_agg *a);
/** Print a as a table, or as a JSON object (no line end; open: without
 *  its closing brace, for the caller to add members). */
void cli_ops_print(struct cli *c, const struct cli_ops_agg *a, bool json,
		   bool open);
int cmd_metrics_server(struct cli *c);
int cmd_metrics_cluster(struct cli *c);
int cmd_devices(struct cli *c);
int cmd_tiers(struct cli *c);
int cmd_pools(struct cli *c);
int cmd_dev_fail(struct cli *c);
int cmd_dev_replace(struct cli *c);
int cmd_smr_clean(struct cli *c);
int cmd_repair(struct cli *c);
int cmd_rebalance(struct cli *c);
int cmd_scrub(struct cli *c);
int cmd_bench(struct cli *c);
int cmd_fdmi_sub(struct cli *c); /* cli_fdmi.c */
int cmd_fdmi_ls(struct cli *c);
int cmd_fdmi_rm(struct cli *c);
int cmd_fdmi_tail(struct cli *c);
int cmd_fdmi_reset(struct cli *c);
int cmd_destroy(struct cli *c);
int cmd_isc_register(struct cli *c); /* cli_isc.c */
int cmd_isc_unregister(struct cli *c);
int cmd_isc_list(struct cli *c);
int cmd_isc_show(struct cli *c);
int cmd_isc_call(struct cli *c);
/* The HDF5 object view (gateways/hdf5/h5map_cli.c: a gateway's code, which
 * the CLI's room may not include; linked in by gateways/hdf5/h5map.mk). */
int cmd_h5_import(struct cli *c);
int cmd_h5_export(struct cli *c);
int cmd_h5_ls(struct cli *c);
int cmd_h5_rm(struct cli *c);

/** List the ids of one entity type in the default container. */
int cli_list(struct cli *c, enum clovis_entity_type type, const char *what);

#endif
