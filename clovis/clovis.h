/*
 * clovis.h — the Strata client API (Clovis).
 *
 * This header is the whole contract between Strata and its applications.
 * Everything an application may rely on is written here; anything not written
 * here is an implementation detail.
 *
 * Model
 * -----
 * A client instance (struct clovis) is opened over a store.  In embedded mode
 * the store is a data directory on local files; the library runs the whole
 * engine inside the calling process.  In cluster mode the stores belong to
 * strata-server daemons and the library sends each op to the servers that
 * hold its entity (docs/cluster.md); the API and its semantics are the
 * same.
 *
 * Entities have 128-bit ids and live in containers (realms):
 *   - containers group objects and indices; a default container always exists;
 *   - objects are arrays of blocks of one power-of-two size fixed at creation
 *     (512 B .. 64 MiB), read and written in whole blocks;
 *   - indices are ordered key-value stores; keys are byte strings compared as
 *     unsigned bytes (memcmp order, shorter key first on a common prefix).
 *
 * Every operation on an entity is an op (struct clovis_op).  An op is created
 * by clovis_entity_op(), clovis_obj_op() or clovis_idx_op(), launched with
 * clovis_op_launch(), and moves through the states
 *
 *     INIT -> LAUNCHED -> EXECUTED -> STABLE        (success)
 *     INIT -> LAUNCHED -> FAILED                    (failure, nothing changed)
 *
 * EXECUTED means the op's effect is visible to every later op of every client
 * of the store; STABLE means it is also durable: it survives a crash of the
 * process or of the machine.  Ops run asynchronously on the library's own
 * threads; the launching thread never waits in clovis_op_launch() for I/O
 * or for other ops.  Two exceptions, for latency: an index GET or NEXT, or an
 * entity OPEN or GETATTR, launched without callbacks on an embedded
 * instance runs in the launching thread and is already STABLE (or FAILED)
 * when clovis_op_launch() returns (metadata reads only; no device I/O).
 * In an array, such reads run after the array's other ops are queued, one
 * after the other, in array order.  And an index PUT or DEL launched
 * alone (nr 1), without callbacks and outside a dtx, on an embedded
 * instance whose store keeps its metadata on NVRAM
 * (CLOVIS_CONF_META_NVRAM) runs in the launching thread: when no other
 * update of the store is on its way it is committed there and is already
 * STABLE (or FAILED) when clovis_op_launch() returns (the commit is one
 * metadata transaction synced to NVRAM; it may wait for another thread's
 * metadata commit, never for device I/O); otherwise it joins the group
 * commit as from a library thread and launch returns at once.  Its place
 * in the durability order below is the same either way.  Third, a dtx's
 * commit op (clovis_dtx_commit()) launched without callbacks on an
 * embedded instance runs its start in the launching thread: it launches
 * the members still in INIT, and those that are index PUT or DEL without
 * callbacks run in that thread too (each only prepares its records, held
 * for the commit; no device I/O, no commit), in member order after the
 * other members are queued; once every member has run, the dtx joins the
 * group commit and launch returns (the commit op is then LAUNCHED; it
 * never waits there for I/O or for the commit).  The same member index
 * ops launched by the application before the commit, alone or in an
 * array, run in the launching thread as well.  Other members (object
 * updates unless CLOVIS_OF_HERE, entity ops, any op with callbacks) run
 * on library threads, and so does every op of a dtx that has a member
 * on a PDCLUST, MIRROR or COMPOSITE object (those run at the commit, in
 * the thread that completes the members).  In cluster mode, an object
 * READ or WRITE without callbacks, outside a dtx, is sent to its home
 * server by clovis_op_launch() itself (the request only, never waiting
 * for it: the server moves the data by RMA from or into the op's buffers,
 * which must stay until the op is final) and finishes on a library
 * thread when the server answers; launch waits neither for a connection
 * (its own or another thread's connect) nor for a free call slot (the
 * op then goes to a library thread).
 *
 * Durability order.  Embedded mode: one engine commits every update of the
 * store in one sequence (LMDB transactions, group-committed), each durable
 * only together with every one before it, and an update's data is durable
 * before its commit; so an update launched after another one is EXECUTED
 * is never found after a crash without it (the S3 gateway relies on this,
 * gateways/s3/README.md).  Cluster mode gives no order across ops: wait for
 * STABLE where one update must not survive without another.
 *
 * Errors
 * ------
 * Functions returning int return 0 or a negative errno (or a negative
 * CLOVIS_E* code below).  The library never aborts its caller on bad input: a
 * bad argument is refused with -EINVAL (or the more precise code listed at each
 * function) and changes nothing.  Every failure also leaves a one-line
 * human-readable message naming the entity, key or field involved: for a
 * function call, clovis_errmsg() in the calling thread; for an op,
 * clovis_op_errmsg(op).
 *
 * Threads
 * -------
 * All functions are thread-safe unless said otherwise.  One op must not be
 * launched, waited on and freed from different threads at the same time, but
 * different ops may be used from any threads.  Callbacks run on library
 * threads and must not block for long; they may launch new ops but must not
 * wait on or free the op they are called for.
 */
#ifndef STRATA_CLOVIS_H
#define STRATA_CLOVIS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLOVIS_API __attribute__((visibility("default")))

/* ---------------------------------------------------------------- limits */

/** Smallest and largest object block size, as log2 of bytes
 *  (clovis_obj_attr.oa_block_shift; 0 there means 12, 4 KiB). */
#define CLOVIS_BLOCK_SHIFT_MIN 9u  /* 512 B */
#define CLOVIS_BLOCK_SHIFT_MAX 26u /* 64 MiB */
/** Longest index key in bytes (LMDB key limit less the 16-byte index id). */
#define CLOVIS_KEY_MAX 495u
/** Largest index value in bytes. */
#define CLOVIS_VAL_MAX (1u << 20)
/** Most extents, buffers or records in one op. */
#define CLOVIS_VEC_MAX 4096u
/** Most blocks one READ/WRITE/ALLOC/FREE op may cover in total. */
#define CLOVIS_OP_BYTES_MAX (256ull << 20) /* bytes moved by one READ/WRITE */
/** Highest block number + 1 an object may have (2^48 blocks). */
#define CLOVIS_BLOCK_NR_MAX (1ull << 48)

/* ----------------------------------------------------------- error codes */

/** Project-specific error codes; always returned negated, like errno. */
enum clovis_errno {
	CLOVIS_EBASE = 1000,
	CLOVIS_ECORRUPT = 1001,  /**< on-disk structure failed a check */
	CLOVIS_EVERSION = 1002,  /**< store made by an incompatible version */
	CLOVIS_ECHECKSUM = 1003, /**< stored data failed its checksum */
	CLOVIS_ESTATE = 1004,    /**< handle or op is in the wrong state */
};

/**
 * Describe an error code (negative errno or negative CLOVIS_E*).
 * Returns a static string; never NULL.
 */
CLOVIS_API const char *clovis_strerror(int rc);

/**
 * The message of the last failed clovis_* call made by this thread, naming
 * the entity, key or field at fault.  Valid until the thread's next failing
 * call.  Returns "" when there is none.
 */
CLOVIS_API const char *clovis_errmsg(void);

/* ------------------------------------------------------------------ ids */

/** A 128-bit entity id.  Ids with hi == 0 and lo < 1024 are reserved. */
struct clovis_id {
	uint64_t ci_hi;
	uint64_t ci_lo;
};

/** The default container, created with every store. */
#define CLOVIS_ID_DEFAULT_CONTAINER ((struct clovis_id){0, 1})
/** Lowest lo an id with hi == 0 may have (smaller ones are reserved). */
#define CLOVIS_ID_USER_MIN 1024u
/** Characters clovis_id_format() needs, with the terminating NUL. */
#define CLOVIS_ID_STR_LEN 34

/**
 * Parse an id.  Accepted forms: "HI:LO" with both halves in hexadecimal
 * (optionally 0x-prefixed), or "@name", which hashes name into an id with
 * hi != 0 (stable across versions and machines).
 * Returns 0, or -EINVAL for anything else (message names the text).
 */
CLOVIS_API int clovis_id_parse(const char *s, struct clovis_id *out);

/** Format id as "HI:LO" in lower-case hex into buf (>= CLOVIS_ID_STR_LEN). */
CLOVIS_API char *clovis_id_format(const struct clovis_id *id, char *buf);

/** Compare two ids (hi, then lo); returns <0, 0 or >0. */
CLOVIS_API int clovis_id_cmp(const struct clovis_id *a,
			     const struct clovis_id *b);

/* ------------------------------------------------------------- instance */

enum clovis_mode {
	CLOVIS_MODE_EMBEDDED = 0, /**< the engine runs inside this process */
	/** strata-server daemons run the engines; this process talks to them
	 *  over libfabric (docs/cluster.md). */
	CLOVIS_MODE_CLUSTER = 1,
};

enum clovis_tier {
	CLOVIS_TIER_NVRAM = 0, /**< persistent memory through PMDK */
	CLOVIS_TIER_FLASH = 1, /**< SSD-class device (file or block device) */
	CLOVIS_TIER_SAS = 2,   /**< disk-class device (file or block device) */
	/** Shingled disk: zones written sequentially at a write pointer (a
	 *  zoned block device, or zones emulated on a file). */
	CLOVIS_TIER_SMR = 3,
	CLOVIS_TIER_NR = 4,
};

/** clovis_conf.cc_flags */
enum clovis_conf_flags {
	/** Create the store if the data directory holds none. */
	CLOVIS_CONF_CREATE = 1u << 0,
	/** Turn the device model on for every tier (class defaults unless
	 *  the store configuration sets figures): emulated devices then take
	 *  the latency and bandwidth of their class.  Off by default. */
	CLOVIS_CONF_DEVICE_MODEL = 1u << 1,
	/**
	 * Metadata on the NVRAM tier (create-time; ignored when the store
	 * exists).  The store's metadata (its LMDB environment: every
	 * entity, extent map and index record) is kept in the NVRAM device
	 * directory cc_nvram_dir ("/dev/shm" by default) as
	 * NVDIR/strata-UUID-meta, and cc_data_dir/meta is a symbolic link to
	 * it.  A durable update then pays one sync on a slow tier (its data)
	 * instead of three (data, metadata pages, metadata meta page), and an
	 * update is STABLE as soon as its commit returns.  The order of
	 * durability is unchanged: data before the commit that maps it.
	 *
	 * The store is only as persistent as that directory: on emulated
	 * NVRAM (tmpfs such as /dev/shm) the metadata, hence the whole store,
	 * does not survive a reboot, exactly like the NVRAM tier's own
	 * device.  Opening a store whose metadata directory is gone (a
	 * dangling link) fails with -ENOENT and a message naming the data
	 * directory and the missing path, and changes nothing; remove such a
	 * store's directory by hand (clovis_store_destroy() refuses it the
	 * same way).  A process killed at any instant (no reboot) loses
	 * nothing that was STABLE, as without the flag.
	 */
	CLOVIS_CONF_META_NVRAM = 1u << 2,
	/** FDMI records (clovis_fdmi_sub()) always, even with no consumer
	 *  registered (the log then kept to 64 MiB and 1 hour).  Without
	 *  either FDMI flag a store records changes while at least one
	 *  consumer is registered. */
	CLOVIS_CONF_FDMI_ON = 1u << 3,
	/** No FDMI records: clovis_fdmi_sub() is refused (-ENOTSUP). */
	CLOVIS_CONF_FDMI_OFF = 1u << 4,
};

/**
 * Configuration of a client instance.  Zero-initialise, then set what you
 * need; every zero field takes the default given beside it.  The library
 * copies what it needs; the struct may be freed after clovis_init().
 */
struct clovis_conf {
	enum clovis_mode cc_mode;   /**< CLOVIS_MODE_EMBEDDED */
	const char *cc_data_dir;    /**< store directory; required */
	uint32_t cc_flags;          /**< CLOVIS_CONF_* */
	uint32_t cc_nr_workers;     /**< I/O threads; 0 = 8 embedded, 32
				     *   in cluster mode (their ops wait on
				     *   round trips) */
	/** Size of each emulated device made at create; 0 = the
	 *  configuration's device_size, else 256 MiB. */
	uint64_t cc_dev_size;
	/** Directory for the NVRAM device (and, with CLOVIS_CONF_META_NVRAM,
	 *  the metadata) at create; NULL = "/dev/shm". */
	const char *cc_nvram_dir;
	/** Upper bound of the metadata (LMDB) map; 0 = 4 GiB. */
	uint64_t cc_meta_size;
	/** Log level to stderr: 0 = the default (1), -1 none, 1 error,
	 *  2 warn, 3 info, 4 debug.  The STRATA_LOG environment variable
	 *  (0-4, 0 = none) overrides it. */
	int cc_log_level;
	/** YAML store configuration (devices, pools, default layouts, device
	 *  model; docs/configuration.md) used when the store is created;
	 *  NULL = the built-in default: nvram0, flash0..7, sas0..3, smr0,
	 *  one pool per tier, plain layout on flash.  Ignored when the store
	 *  exists: its configuration is kept inside it. */
	const char *cc_config;
	/* ---- cluster mode (cc_mode CLOVIS_MODE_CLUSTER) ----
	 * Give cc_cluster_conf, or cc_server with cc_secret.  cc_data_dir,
	 * cc_flags, cc_dev_size, cc_nvram_dir, cc_meta_size and cc_config
	 * must then be 0/NULL: the servers own the stores. */
	/** Path of the cluster YAML file (servers, secret; the format is in
	 *  docs/cluster.md).  Everything the client needs is in it. */
	const char *cc_cluster_conf;
	/** Instead of a file: "ADDR:PORT" of any one server, from which the
	 *  cluster file is fetched at init (CONF_GET).  ADDR is an IPv4
	 *  address, a host name (resolved at init) or an IPv6 address in
	 *  brackets ("[::1]:21000"); anything else is -EINVAL.  NULL when
	 *  cc_cluster_conf is given. */
	const char *cc_server;
	/** With cc_server: the cluster secret (text, 16..1023 bytes) that
	 *  proves this client to the servers (HMAC challenge at connect). */
	const char *cc_secret;
	/** Embedded mode: native shipped functions (CLOVIS_ISC_NATIVE) this
	 *  client may load, as absolute paths separated by ':'; NULL or ""
	 *  refuses every native function (-EPERM).  Cluster mode: must be
	 *  NULL (each server's allow list is its own: the cluster file's
	 *  isc_native, docs/cluster.md). */
	const char *cc_isc_native;
};

struct clovis;
struct clovis_op;

/**
 * Open a client instance over the store described by conf.
 *
 * Cluster mode: loads cc_cluster_conf (or fetches the cluster file from
 * cc_server, proving cc_secret); servers are connected on first use, so a
 * server that is down fails only the ops that need it (-EHOSTDOWN, or
 * -ETIMEDOUT after the cluster's call timeout).  Errors: -EINVAL (bad or
 * mixed fields, bad file: message names the line and key), -ENOENT (no
 * file), the transport's codes when cc_server cannot be reached or refuses
 * the secret (-EACCES).  Management calls that act on one store
 * (smr_clean, unit counters) return -ENOTSUP in cluster mode; a
 * composite's layer calls run on the object's home server (see
 * clovis_obj_layer_add());
 * repair, rebalance and scrub run on every server (see clovis_repair());
 * dev_list and pool_list aggregate the servers (device paths are prefixed
 * "SERVER:", indices run on from one server to the next); dev_fail and
 * dev_replace act on the device's server and on every other server's
 * image of it (see clovis_dev_fail(), clovis_server_dev_fail()).
 *
 * Embedded mode: opens the data directory cc_data_dir.  When it holds no
 * store and CLOVIS_CONF_CREATE is set, a new store is made there with the
 * devices of cc_config (or the default set: nvram on cc_nvram_dir through
 * PMDK, flash, sas and smr as files in the directory), its metadata in the
 * directory or, with CLOVIS_CONF_META_NVRAM, on cc_nvram_dir.  Only one
 * process may have a store open at a time.
 *
 * Creation is crash-safe: a store is complete only once its one create
 * commit is durable (a DATA_DIR/CREATING marker is written first and
 * removed after it).  A store whose creation was interrupted (the process
 * killed, the machine down) is made again from scratch, with the same
 * uuid, by the next open with CLOVIS_CONF_CREATE, and refused with -ENOENT
 * (message: the directory is incomplete, open with CLOVIS_CONF_CREATE)
 * without it; a store that ever completed its creation is never made
 * again (damage to it is -CLOVIS_ECORRUPT).  Device paths inside
 * cc_data_dir are recorded relative to it, so a store may be renamed or
 * moved whole (docs/configuration.md: what an NVRAM device outside the
 * directory means for a copy).
 *
 * Returns 0 and sets *out, or:
 *   -EINVAL     conf is NULL, cc_data_dir missing, or a field out of range;
 *   -ENOENT     no store in cc_data_dir, or one whose creation never
 *               completed, and CLOVIS_CONF_CREATE not set, or
 *               one of its devices is missing, or its metadata on NVRAM
 *               is missing (CLOVIS_CONF_META_NVRAM: lost at a reboot);
 *   -EBUSY      another process has the store open;
 *   -CLOVIS_ECORRUPT  a device superblock or the metadata failed its check;
 *   -CLOVIS_EVERSION  the store was made by an incompatible version;
 *   other negative errno from the file system.
 * On error *out is untouched and clovis_errmsg() says what was wrong.
 */
CLOVIS_API int clovis_init(struct clovis **out, const struct clovis_conf *conf);

/**
 * Close an instance: waits for every launched op to finish (reach STABLE or
 * FAILED), saves the statistics and releases everything.  Ops created on cl
 * and not freed are freed.  Entity handles must not be used afterwards.
 * cl may be NULL.  What threads keep for cl (a cache of freed ops, a
 * reset LMDB read transaction in embedded mode) is released here for
 * threads still running, and at their exit for threads that end before;
 * no other thread may be using cl during the call.
 */
CLOVIS_API void clovis_fini(struct clovis *cl);

/**
 * Remove the store in data_dir: every device file it recorded (including
 * the NVRAM device outside the directory), its metadata (including a
 * metadata directory on NVRAM, CLOVIS_CONF_META_NVRAM, and the link to
 * it), and the directory itself when nothing else is left in it; a store
 * whose creation never completed is removed too.  The
 * store must not be open.  Returns 0, -ENOENT (no store there, or its
 * metadata on NVRAM is missing: nothing is removed), -EBUSY (open by a
 * process), -errno.
 */
CLOVIS_API int clovis_store_destroy(const char *data_dir);

/* ------------------------------------------------------------- entities */

enum clovis_entity_type {
	CLOVIS_ET_CONTAINER = 1,
	CLOVIS_ET_OBJ = 2,
	CLOVIS_ET_IDX = 3,
};

/** Handle states (struct clovis_entity.en_state). */
enum clovis_entity_state {
	CLOVIS_ES_INIT = 0,    /**< initialised, not yet created or opened */
	CLOVIS_ES_OPEN = 1,    /**< created or opened: I/O allowed */
	CLOVIS_ES_DELETED = 2, /**< deleted through this handle */
};

struct clovis_realm_priv;

/**
 * A realm: the scope new entities are made in.  So far every realm is a
 * container.  Treat all fields as read-only.
 */
struct clovis_realm {
	struct clovis *re_cl;
	struct clovis_id re_id; /**< the container's id */
};

/**
 * The common head of containers, objects and indices.  Caller-allocated,
 * set up by clovis_*_init(), read-only to the caller afterwards.
 */
struct clovis_entity {
	uint32_t en_type;  /**< enum clovis_entity_type */
	uint32_t en_state; /**< enum clovis_entity_state */
	struct clovis_id en_id;
	struct clovis_realm *en_realm; /**< where it lives (NULL: containers) */
	struct clovis *en_cl;
	uint32_t en_magic; /**< set by init; checked by every call */
	uint32_t en_pad;
};

/** The default container of cl, as a realm.  Never NULL for a valid cl. */
CLOVIS_API struct clovis_realm *clovis_default_realm(struct clovis *cl);

/** A container: an entity and the realm of what it holds. */
struct clovis_container {
	struct clovis_entity co_entity;
	struct clovis_realm co_realm;
};

/**
 * Set up a container handle for id.  No I/O: CREATE or OPEN it next.
 * Returns 0, or -EINVAL (NULL argument or reserved id other than the
 * default container's).
 */
CLOVIS_API int clovis_container_init(struct clovis_container *c,
				     struct clovis *cl,
				     const struct clovis_id *id);

enum clovis_layout_type {
	/** Every block on one device of the chosen tier; no redundancy. */
	CLOVIS_LAYOUT_PLAIN = 1,
	/** Parity declustered: groups of N data + K parity (ISA-L
	 *  Reed-Solomon) + S spare units over a pool of P >= N+K+S devices. */
	CLOVIS_LAYOUT_PDCLUST = 2,
	/** N copies of every unit on N distinct devices of a pool. */
	CLOVIS_LAYOUT_MIRROR = 3,
	/** Extent ranges mapped to layers, each a sub-layout (plain on a
	 *  tier, pdclust or mirror on a pool) with a priority: writes go to
	 *  the top layer, reads resolve every block to the layer that holds
	 *  its newest data (clovis_obj_layer_add(), _move()). */
	CLOVIS_LAYOUT_COMPOSITE = 4,
};

/** Largest N, K, S and N+K+S of a pdclust or mirror layout. */
#define CLOVIS_LAYOUT_UNITS_MAX 32u
/** Unit sizes of pdclust and mirror layouts: 4 KiB .. 16 MiB. */
#define CLOVIS_UNIT_SHIFT_MIN 12u
#define CLOVIS_UNIT_SHIFT_MAX 24u

/**
 * Object attributes.  In: oa_block_shift, oa_layout and oa_tier at CREATE;
 * oa_size_bytes at SETATTR.  Out: all fields after CREATE, OPEN or GETATTR.
 */
struct clovis_obj_attr {
	/** log2 block size, CLOVIS_BLOCK_SHIFT_MIN..MAX (9..26); 0 = 12
	 *  (4 KiB blocks, the default, as with no attributes); anything
	 *  else is -EINVAL naming the field.  Out: the object's (never 0). */
	uint32_t oa_block_shift;
	/** enum clovis_layout_type; 0 = the container's default layout
	 *  (from the store configuration; PLAIN if none).  When that default
	 *  is PLAIN, oa_tier still chooses the tier. */
	uint32_t oa_layout;
	/** enum clovis_tier for PLAIN.  FLASH when clovis_obj_init() is
	 *  given no attributes; in a struct the caller fills, 0 is
	 *  CLOVIS_TIER_NVRAM, so a zeroed struct places the object on NVRAM:
	 *  name the tier. */
	uint32_t oa_tier;
	uint32_t oa_dev;         /**< out: device index holding the data (PLAIN) */
	/** PDCLUST/MIRROR: the pool (index in clovis_pool_list()) whose
	 *  devices hold the units; 0 = the default pool: the configured
	 *  default layout's pool, else the pool named "flash". */
	uint32_t oa_pool;
	/** PDCLUST: data units N per parity group (1..); MIRROR: copies (2..).
	 *  0 = the default (PDCLUST 4, MIRROR 2). */
	uint32_t oa_data_units;
	/** PDCLUST: parity units K (0..); 0 with oa_data_units 0 means the
	 *  default 2.  MIRROR: must be 0. */
	uint32_t oa_parity_units;
	/** PDCLUST and MIRROR: spare units S per group, used by repair (0..). */
	uint32_t oa_spare_units;
	/** PDCLUST and MIRROR: log2 unit size (CLOVIS_UNIT_SHIFT_MIN..MAX,
	 *  at least oa_block_shift); 0 = max(16, oa_block_shift). */
	uint32_t oa_unit_shift;
	uint32_t oa_pad;
	/** out: highest block ever written or allocated, plus one.  Only
	 *  grows (FREE punches holes; it does not shrink the object). */
	uint64_t oa_size_blocks;
	/** Byte size kept for the application; set by SETATTR (any value up
	 *  to CLOVIS_BLOCK_NR_MAX blocks' worth), else grows to
	 *  oa_size_blocks * block size as blocks are written. */
	uint64_t oa_size_bytes;
	uint64_t oa_ctime_ns; /**< out: creation time, ns since the epoch */
	uint64_t oa_mtime_ns; /**< out: last data or attribute change */
};

/** An object handle. */
struct clovis_obj {
	struct clovis_entity ob_entity;
	struct clovis_obj_attr ob_attr;
};

/**
 * Set up an object handle for id in realm r.  attr may be NULL (defaults:
 * 4 KiB blocks, plain layout on flash); it is copied and used by CREATE.
 * Returns 0, or -EINVAL for a NULL or reserved argument or attributes out
 * of range (message names the field).
 */
CLOVIS_API int clovis_obj_init(struct clovis_obj *o, struct clovis_realm *r,
			       const struct clovis_id *id,
			       const struct clovis_obj_attr *attr);

/** Index attributes (out after CREATE, OPEN, GETATTR). */
struct clovis_idx_attr {
	uint64_t ia_nr_records; /**< records in the index */
	uint64_t ia_ctime_ns;
};

/** An index handle. */
struct clovis_idx {
	struct clovis_entity in_entity;
	struct clovis_idx_attr in_attr;
};

/** Set up an index handle for id in realm r.  Returns 0 or -EINVAL. */
CLOVIS_API int clovis_idx_init(struct clovis_idx *i, struct clovis_realm *r,
			       const struct clovis_id *id);

enum clovis_entity_opcode {
	/** Make the entity.  -EEXIST if an entity with its id exists,
	 *  -ENOENT if its container does not. */
	CLOVIS_EO_CREATE = 1,
	/** Load the entity's attributes into the handle.  -ENOENT if it does
	 *  not exist (or is of another type). */
	CLOVIS_EO_OPEN = 2,
	/** Remove the entity with all its data.  Containers must be empty
	 *  (-ENOTEMPTY); the default container cannot be deleted (-EPERM). */
	CLOVIS_EO_DELETE = 3,
	/** Refresh the handle's attributes; -ENOENT if gone. */
	CLOVIS_EO_GETATTR = 4,
	/** Objects only: store ob_attr.oa_size_bytes.  -EINVAL for other
	 *  entity types. */
	CLOVIS_EO_SETATTR = 5,
};

/**
 * Create an op acting on entity e (the en_entity / ob_entity / in_entity /
 * co_entity member of a handle).  The op is in INIT state; launch it.
 * Returns 0 and sets *op, or -EINVAL (bad handle or opcode), -ENOMEM.
 */
CLOVIS_API int clovis_entity_op(struct clovis_entity *e,
				enum clovis_entity_opcode opcode,
				struct clovis_op **op);

/* --------------------------------------------------------------- vectors */

/**
 * An extent vector in block units: ev_nr extents [start, start + nr_blks).
 * Caller-owned; must stay valid until the op using it is freed.  Extents of
 * one op must not overlap, must have nr_blks > 0, and must end at or below
 * CLOVIS_BLOCK_NR_MAX.
 */
struct clovis_extvec {
	uint32_t ev_nr;
	uint64_t *ev_start_blk;
	uint64_t *ev_nr_blks;
};

/**
 * A buffer vector: bv_nr buffers bv_buf[i] of bv_len[i] bytes.
 * Object ops: caller-owned; the buffers' lengths must be whole blocks and
 * add up to the extents' total size; they are filled (READ) or consumed
 * (WRITE) in order, crossing extent boundaries freely.  Buffers of a WRITE
 * must stay untouched until the op is STABLE or FAILED; buffers of a READ
 * may be used once it is EXECUTED.  Up to CLOVIS_VEC_MAX buffers in both
 * modes, and an op keeps its semantics whatever their number (cluster
 * mode: one request to the object's home, so a WRITE stays one atomic
 * commit there; past 16 buffers the smaller ones are copied through a
 * bounce buffer of the library, docs/cluster.md "Ops with many buffers").
 * Index ops: see clovis_idx_op().
 */
struct clovis_bufvec {
	uint32_t bv_nr;
	void **bv_buf;
	size_t *bv_len;
};

/* ----------------------------------------------------------------- ops */

enum clovis_obj_opcode {
	/** Read blocks; unwritten and freed blocks read as zeros. */
	CLOVIS_OC_READ = 1,
	/** Write blocks, atomically for the whole op: after a crash every
	 *  block of the op has either its old or its new value, and once the
	 *  op is STABLE, the new ones.  Grows oa_size_blocks. */
	CLOVIS_OC_WRITE = 2,
	/** Reserve space for the extents: the blocks read as zeros (data
	 *  they held is discarded), count in the object's size, and their
	 *  space is taken on the device.  Writes stay out of place, so a
	 *  later WRITE takes fresh space and releases the reserved one.
	 *  pdclust and mirror objects reserve no space (a write takes it):
	 *  ALLOC drops the units of the blocks like FREE and grows the size.
	 *  data must be NULL. */
	CLOVIS_OC_ALLOC = 3,
	/** Punch holes: the blocks read as zeros and their space is
	 *  released.  data must be NULL.  The size does not shrink.
	 *  pdclust/mirror: whole units are released; a unit freed in part
	 *  is rewritten with zeros, and so is its group's parity. */
	CLOVIS_OC_FREE = 4,
};

enum clovis_op_state {
	CLOVIS_OS_INIT = 1u << 0,
	CLOVIS_OS_LAUNCHED = 1u << 1,
	CLOVIS_OS_EXECUTED = 1u << 2,
	CLOVIS_OS_STABLE = 1u << 3,
	CLOVIS_OS_FAILED = 1u << 4,
};

/** Flags of object ops. */
enum clovis_obj_flags {
	/**
	 * WRITE only.  Embedded mode, op without callbacks: the op runs in
	 * the thread that launches it, inside clovis_op_launch() (checks,
	 * space, the data written to the devices, as a library thread would
	 * run it), instead of being queued to a library thread; launch
	 * returns once the data is written and the op's commit is queued
	 * (or, for a dtx member, held for the dtx), so it may block for the
	 * device write (for a lone write on a store whose metadata is on
	 * NVRAM with nothing else on its way, also for its commit, and the
	 * op is then already STABLE or FAILED on return).  The op's states,
	 * outcome, durability order and dtx semantics are those it has
	 * without the flag; only the thread differs.  For a caller that
	 * would wait for the op (or its dtx) right away anyway: one thread
	 * hand-off and wake-up fewer (the S3 gateway's held write,
	 * docs/performance.md "Issue 6: PUT x16 ... (branch s3put)").  In an
	 * array the op runs after the array's queued ops, in array order.
	 * Ignored (the op goes to a library thread) with callbacks, in
	 * cluster mode, for an object whose layout is not PLAIN, and for a
	 * member of a dtx with a member of a PDCLUST, MIRROR or COMPOSITE
	 * object.
	 */
	CLOVIS_OF_HERE = 1u << 0,
};

/**
 * Create an I/O op on object o, which must be OPEN (after a successful
 * CREATE or OPEN through this handle).
 *
 * ext: the blocks; data: the buffers (READ, WRITE) or NULL (ALLOC, FREE).
 * flags: 0, or CLOVIS_OF_HERE for a WRITE.
 * Everything is checked here, before anything is queued:
 *   -EINVAL  NULL or not-open handle, bad opcode, empty or overlapping
 *            extents, zero-length extent, extent past CLOVIS_BLOCK_NR_MAX,
 *            buffer lengths not whole blocks or not adding up to the
 *            extents' size, data given to ALLOC/FREE, a flag other
 *            than CLOVIS_OF_HERE, or CLOVIS_OF_HERE on another opcode
 *            than WRITE;
 *   -E2BIG   more than CLOVIS_VEC_MAX extents or buffers, or more than
 *            CLOVIS_OP_BYTES_MAX bytes in one READ or WRITE.
 * When the op runs it fails with -ENOENT if the object was deleted meanwhile
 * and -ENOSPC if its device is full (an SMR device: full of live data; a
 * write there may also fail -EAGAIN when the only dead space is held by
 * writes in flight for 5 s, clovis_smr_clean()); nothing is changed then.
 */
CLOVIS_API int clovis_obj_op(struct clovis_obj *o,
			     enum clovis_obj_opcode opcode,
			     const struct clovis_extvec *ext,
			     struct clovis_bufvec *data, uint32_t flags,
			     struct clovis_op **op);

enum clovis_idx_opcode {
	CLOVIS_IC_GET = 1,
	CLOVIS_IC_PUT = 2,
	CLOVIS_IC_DEL = 3,
	CLOVIS_IC_NEXT = 4,
};

/** Flags of index ops. */
enum clovis_idx_flags {
	/** PUT: replace the value of an existing key (else -EEXIST). */
	CLOVIS_IF_OVERWRITE = 1u << 0,
	/** NEXT: start after the start key, not at it. */
	CLOVIS_IF_EXCLUDE_START_KEY = 1u << 1,
	/** NEXT: write keys and values into the caller's buffers instead of
	 *  malloc()ed ones (see NEXT below). */
	CLOVIS_IF_CALLER_BUFS = 1u << 2,
};

/**
 * Create a record op on index i, which must be OPEN.  rcs has one slot per
 * record and receives each record's result (0 or a negative errno); the op
 * itself succeeds when the index exists and every argument is sound, even
 * if some records fail.
 *
 * GET:  keys: nr keys.  vals: nr slots.  For each key found, rcs[k] = 0 and
 *       the value is returned in vals slot k: into bv_buf[k] if non-NULL and
 *       bv_len[k] is large enough (else rcs[k] = -ENOBUFS and bv_len[k] is
 *       set to the size needed), or into a buffer the library allocates with
 *       malloc() when bv_buf[k] is NULL (caller frees it with free()).
 *       Keys not found: rcs[k] = -ENOENT.
 * PUT:  keys, vals: nr records, applied together in one atomic update.
 *       rcs[k] = -EEXIST when the key exists and CLOVIS_IF_OVERWRITE is not
 *       set (that record is left as it was; others are stored).
 * DEL:  keys: nr keys; vals must be NULL.  rcs[k] = -ENOENT if absent.
 * NEXT: keys: nr slots; slot 0 holds the start key, or bv_buf[0] == NULL
 *       for "from the first record".  Returns up to nr records in key
 *       order starting at the first key >= start (> start with
 *       CLOVIS_IF_EXCLUDE_START_KEY): slot k gets a malloc()ed key and
 *       value (caller frees both with free(); slot 0's start key pointer
 *       is overwritten, so keep your own copy), rcs[k] = 0; slots past the
 *       last record get rcs[k] = -ENOENT and NULL buffers.
 * NEXT with CLOVIS_IF_CALLER_BUFS: the same walk, but nothing is allocated:
 *       every keys->bv_buf[k] and vals->bv_buf[k] must be a caller buffer
 *       (non-NULL).  Slot 0's key buffer holds the start key on input
 *       (keys->bv_len[0] bytes; length 0 starts at the first record, as
 *       the empty key sorts first) and must have room for CLOVIS_KEY_MAX
 *       bytes, as the first record's key replaces it; slot k >= 1 has room
 *       for keys->bv_len[k] bytes, every value buffer for vals->bv_len[k].
 *       For each record found, keys->bv_len[k] and vals->bv_len[k] are set
 *       to the record's key and value sizes and rcs[k] is
 *         0          key and value copied;
 *         -ENOBUFS   the value did not fit (the key was copied: GET it
 *                    with a larger buffer, or walk again from it);
 *         -EMSGSIZE  the key did not fit (nothing copied into the slot).
 *       A short slot does not stop the walk: slot k+1 holds the record
 *       after slot k's.  Slots past the last record get rcs[k] = -ENOENT
 *       and lengths 0 (their buffers are left as they were).  Reset the
 *       lengths to the buffers' sizes before reusing the vectors.  Both
 *       modes (embedded and cluster).
 *
 * Checked here (nothing queued on error):
 *   -EINVAL  NULL or not-open handle, bad opcode, keys NULL or nr == 0,
 *            vals missing or of another nr (GET, PUT, NEXT), vals given to
 *            DEL, rcs NULL, a NULL key buffer with non-zero length, flags
 *            not allowed for the opcode, a NULL key or value buffer in any
 *            slot of a NEXT with CLOVIS_IF_CALLER_BUFS;
 *   -E2BIG   a key longer than CLOVIS_KEY_MAX or value longer than
 *            CLOVIS_VAL_MAX (message names the record), nr past
 *            CLOVIS_VEC_MAX.
 * Key and value buffers of PUT, DEL and GET keys, and all buffers of a NEXT
 * with CLOVIS_IF_CALLER_BUFS, are caller-owned and must stay valid until
 * the op is STABLE or FAILED.  At run time the op fails
 * with -ENOENT when the index does not exist (any more).
 */
CLOVIS_API int clovis_idx_op(struct clovis_idx *i,
			     enum clovis_idx_opcode opcode,
			     struct clovis_bufvec *keys,
			     struct clovis_bufvec *vals, int32_t *rcs,
			     uint32_t flags, struct clovis_op **op);

/** Callbacks; any may be NULL.  Each is called at most once per launch. */
struct clovis_op_cbs {
	void (*oc_executed)(struct clovis_op *op);
	void (*oc_stable)(struct clovis_op *op);
	void (*oc_failed)(struct clovis_op *op);
};

/**
 * Attach callbacks and a caller datum to an op in INIT state.
 * Returns 0, or -EINVAL (NULL op) / -CLOVIS_ESTATE (already launched).
 */
CLOVIS_API int clovis_op_setup(struct clovis_op *op,
			       const struct clovis_op_cbs *cbs, void *datum);

/** The datum given to clovis_op_setup() (NULL if none). */
CLOVIS_API void *clovis_op_datum(const struct clovis_op *op);

/**
 * Launch nr ops.  Each must be in INIT state; one that is not (or NULL) is
 * skipped and left as it is, and the call returns -CLOVIS_ESTATE (or
 * -EINVAL); the others are launched.  Returns 0 when all were launched.
 * nr 0 launches nothing and returns 0 (ops is not read and may be NULL),
 * so a caller may launch a batch it built without checking it is empty;
 * ops NULL with nr > 0 is -EINVAL.
 * Ops run concurrently; launching several together lets the library batch
 * their commits.
 */
CLOVIS_API int clovis_op_launch(struct clovis_op **ops, uint32_t nr);

/** No time limit for clovis_op_wait(). */
#define CLOVIS_TIME_NEVER INT64_MIN

/**
 * Wait until op reaches one of states (a mask of CLOVIS_OS_*), or FAILED,
 * or timeout_ns nanoseconds pass (CLOVIS_TIME_NEVER: no limit).
 * Returns 0 when one of states was reached, -ETIMEDOUT, -EINVAL (NULL op or
 * empty mask), or the op's rc if it FAILED and FAILED was not in states.
 * Waiting for EXECUTED returns as soon as the op is EXECUTED or later.
 * An op still in INIT that nothing will launch (never given to
 * clovis_op_launch(); a dtx's commit op not launched; a dtx member whose
 * dtx's commit op is not launched yet) is refused at once with -EINVAL and
 * a message naming the op, whatever timeout_ns (it could never leave
 * INIT), unless CLOVIS_OS_INIT is in states (then 0).  A member of a dtx
 * whose commit op was launched is waited on: that commit launches it.
 */
CLOVIS_API int clovis_op_wait(struct clovis_op *op, uint32_t states,
			      int64_t timeout_ns);

/** The op's current state (one CLOVIS_OS_* value). */
CLOVIS_API enum clovis_op_state clovis_op_state(const struct clovis_op *op);

/** The op's result: 0 unless FAILED, then a negative error code. */
CLOVIS_API int clovis_op_rc(const struct clovis_op *op);

/** The op's failure message ("" unless FAILED). */
CLOVIS_API const char *clovis_op_errmsg(const struct clovis_op *op);

/**
 * Free an op.  If it is in flight, first waits until it is STABLE or FAILED
 * (a launched op cannot be taken back).  op may be NULL.
 */
CLOVIS_API void clovis_op_free(struct clovis_op *op);

/* -------------------------------------------------------- synchronous */

/**
 * Convenience: launch op, wait for STABLE or FAILED, return its rc and free
 * it.  Returns the op's rc; on failure clovis_errmsg() in the calling thread
 * holds the op's message (clovis_op_errmsg() is gone with the op).
 */
CLOVIS_API int clovis_op_sync(struct clovis_op *op);

/* ============================================ Distributed transactions */
/*
 * A dtx makes a group of updates atomic and durable together: object
 * WRITE, ALLOC and FREE, index PUT and DEL, entity CREATE, DELETE and
 * SETATTR.  After a crash of the client or of any server, at any instant,
 * either every update of a committed dtx is there or none is.  A dtx gives
 * atomicity and durability, not isolation: concurrent writers of the same
 * blocks or records are the application's business (as in Mero).
 *
 *   clovis_dtx_open(&dtx, realm)      an empty dtx
 *   clovis_obj_op/idx_op/entity_op    make ops as usual, then
 *   clovis_dtx_add(dtx, op)           make each one a member (op in INIT)
 *   clovis_op_launch(members)         optional: start their data I/O early
 *   clovis_dtx_commit(dtx, &cop)      the commit op; launch it, wait on it
 *   clovis_dtx_abort(dtx)             or drop everything instead
 *
 * Members.  A member update may be launched before the commit (its data
 * I/O then starts at once) or left in INIT (the commit op launches it).
 * A launched member does its I/O, then waits in LAUNCHED: it becomes
 * EXECUTED, STABLE or FAILED only with its dtx, in the same way.  A member
 * that fails on its own (bad argument at run time, entity deleted, no
 * space) is FAILED at once, and the commit then fails.  Members must not be
 * freed while their dtx is open (clovis_op_free() on a member in INIT
 * takes it out of the dtx).
 *
 * Reads.  A READ, GET, NEXT, OPEN or GETATTR may be added too, but it is
 * not held: it runs when launched and sees the store as it is without the
 * dtx's own pending updates (they are invisible until the commit).  So is
 * an update of an entity the same dtx creates: it is checked against the
 * store as it was and fails with -ENOENT; create the entity in an earlier
 * dtx (or alone).
 *
 * Commit.  The commit op reaches EXECUTED when every member update is
 * applied and visible to every client (all at once), and STABLE when they
 * are durable on every node that holds them; members reach the same
 * states no later.  Or it reaches FAILED and nothing of the dtx is
 * applied; its rc is that of the first member that failed, or:
 *   -ENOENT       a member's entity does not exist (deleted before or
 *                 during the dtx);
 *   -EEXIST       an index PUT member without CLOVIS_IF_OVERWRITE met a
 *                 key that exists (message: the index and the key, quoted,
 *                 other bytes as \xHH): the dtx fails whole, nothing of
 *                 it is applied, rather than commit with that record left
 *                 out as a PUT alone would (that member FAILED with
 *                 -EEXIST, the others -ECANCELED; see below);
 *   -ECANCELED    (the other members) failed because the dtx did;
 *   -EIO, -ENOSPC ... the engine's codes.
 * A dtx with no update commits trivially (STABLE at once).  A dtx may be
 * larger than one group-commit batch: it is still one atomic commit.
 * After clovis_dtx_commit() returns 0 the dtx belongs to the commit op and
 * is freed with it.
 *
 * Embedded mode: a dtx is one local atomic commit (its updates are applied
 * in one LMDB write transaction).  Cluster mode: the client is the
 * coordinator of a two-phase commit among the servers holding the members
 * (object: its home server; index: its first live replica, which applies
 * the update at the commit and copies it to the other replicas as a plain
 * update would be); dtm/README.md.  The first participant (lowest server)
 * decides: its COMMITTED record is the commit point.  Cluster mode adds
 * these outcomes of the commit op:
 *   -ETIMEDOUT    the decider did not answer the COMMIT: the outcome is
 *                 unknown to this client (in doubt until the participants
 *                 resolve it by cooperative termination, within seconds
 *                 while the decider is up; `strata dtx ls` shows it);
 *   -EINPROGRESS  committed (the decider logged it) but some participant
 *                 did not acknowledge it applied yet: it will apply it when
 *                 it learns the outcome; the updates are then all there;
 *   -ECANCELED    the votes took longer than the decision deadline the
 *                 PREPARE announced (call timeout + 1 s; the client then
 *                 aborts), or the decider had aborted it (in doubt 2 s
 *                 past that deadline): nothing applied;
 *   -ESTALE       an index replica could not verify its copy within one
 *                 call timeout of retries: nothing applied.
 * Member index PUT/DEL get per-record rcs of 0 when the dtx commits
 * (rcs are not meaningful when it fails).  A member PUT without
 * CLOVIS_IF_OVERWRITE requires each of its keys to be absent: embedded
 * mode checks it in the dtx's commit, atomically with applying it; cluster
 * mode checks it on the index's ordering replica at the PREPARE (a key
 * present there votes NO: -EEXIST, nothing applied anywhere) and again at
 * the COMMIT.  A key another client makes between the PREPARE and the
 * COMMIT (a dtx gives no isolation) is found at the COMMIT: the decision is
 * made by then, so the other participants' members are applied while this
 * participant's are not (logged by the server "members not applied"), as
 * for an entity deleted in that window; use CLOVIS_IF_OVERWRITE, or keys
 * only this application writes, where that matters.
 *
 * Limits and restrictions: at most CLOVIS_DTX_OPS_MAX members.  Objects
 * with a PDCLUST or MIRROR layout: their updates run at the commit (cluster
 * mode: on the object's home, at the COMMIT), after the parity-group locks
 * of all of them were taken at once (one sorted set: no deadlock against
 * other dtxs or single writes), held until the dtx is applied; two members
 * updating one parity group of one object fail the commit with -EINVAL
 * (nothing applied).  COMPOSITE objects are members too (both modes): a
 * WRITE goes to the top layer as when alone, and is aimed at it when the
 * dtx takes its locks, so the layer's parity groups join the one sorted
 * set (two members over one group of that layer: -EINVAL); a layer added
 * or dropped between then and the commit fails the commit (nothing
 * applied).  A composite without a layer fails the commit with -EINVAL
 * (either mode; clovis_obj_layer_add() gives it layers).  Cluster mode:
 * object CREATE and DELETE are members (a created object is invisible
 * until the commit, its handle's attributes are read back after it; a
 * deleted one stays until the commit), and so are index CREATE and
 * DELETE (every live replica of the index is a participant and
 * creates or deletes it at the COMMIT, with its replica record, in one
 * commit with the dtx's; the incarnation of a created index is chosen by
 * the client from the dtx id and is in the handle after the commit; the
 * index is invisible until the commit, a deleted one stays until it; a
 * replica down at the time catches up as after a plain CREATE or DELETE);
 * a member on an entity another member creates fails the commit with
 * -ENOENT, one on an entity another member deletes with -EINVAL (nothing
 * applied); SETATTR and container members are refused by clovis_dtx_add()
 * with -ENOTSUP naming the entity and kind.  A participant's members may
 * be up to DTM_PREPARE_BYTES_MAX (32 MiB of requests and object data per
 * server; above 48 KiB the PREPARE moves by RMA as the call's bulk); past
 * it the commit fails with -E2BIG and a message naming the dtx, the
 * server and the size (nothing sent).  Index records of one member travel
 * inline: at most CLOVIS_DTX_MEMBER_RECS_MAX bytes of keys and values in
 * cluster mode (more: the commit fails with -E2BIG naming the index and
 * the size, nothing sent; split them over several members of the same
 * index, which apply together).  A large dtx's PREPARE and
 * COMMIT calls get a deadline beyond the call timeout that grows with its
 * members (dtm/README.md).
 */

/** Most member ops of one dtx. */
#define CLOVIS_DTX_OPS_MAX 65536u

/** Most bytes of keys and values in one index member of a dtx (cluster
 *  mode: they travel inline in its PREPARE). */
#define CLOVIS_DTX_MEMBER_RECS_MAX (32u << 10)

struct clovis_dtx;

/** A transaction id: the node that made it and its hybrid logical clock
 *  (physical microseconds << 16 | logical counter); ids order dtxs. */
struct clovis_dtx_id {
	uint64_t di_hlc;
	uint32_t di_node;
	uint32_t di_pad;
};

/**
 * Open an empty dtx over the client of realm r (its container does not
 * limit the members).  Returns 0 and sets *dtx, -EINVAL (NULL argument)
 * or -ENOMEM.  Works in both modes, except a cluster with replicated homes
 * (cluster.meta_replicas >= 2): -ENOTSUP with a message, nothing opened
 * (dtm addresses an object's home server, clu_home(), not the server
 * acting for it, and a participant's apply can fail on its standbys
 * after the decision: docs/cluster.md "Replicated homes", Not done yet).
 */
CLOVIS_API int clovis_dtx_open(struct clovis_dtx **dtx, struct clovis_realm *r);

/**
 * Make op (in INIT, of the same client) a member of dtx (open).  Returns 0,
 * -EINVAL (NULL, not an op, another client's op), -CLOVIS_ESTATE (op not
 * in INIT, already in a dtx, or dtx committed), -E2BIG (past
 * CLOVIS_DTX_OPS_MAX), -ENOTSUP (a write to a COMPOSITE object, or to a
 * PDCLUST/MIRROR one in cluster mode).
 * On error nothing changed.
 */
CLOVIS_API int clovis_dtx_add(struct clovis_dtx *dtx, struct clovis_op *op);

/**
 * Close dtx to new members and make its commit op (in INIT) in *op: launch
 * it, wait on it, free it (which frees the dtx).  Returns 0, -EINVAL,
 * -CLOVIS_ESTATE (already committed), -ENOMEM.
 */
CLOVIS_API int clovis_dtx_commit(struct clovis_dtx *dtx, struct clovis_op **op);

/**
 * Drop an open dtx: members in INIT leave it (they may be freed, or
 * launched alone); launched members are waited for and FAIL with
 * -ECANCELED, leaving nothing.  Frees dtx.  Not after clovis_dtx_commit()
 * (refused with a message).  dtx may be NULL.
 */
CLOVIS_API void clovis_dtx_abort(struct clovis_dtx *dtx);

/** The id of dtx (given at open).  Returns 0 or -EINVAL. */
CLOVIS_API int clovis_dtx_id(const struct clovis_dtx *dtx,
			     struct clovis_dtx_id *out);

/**
 * Wait until no dtx in doubt below a bound is still undecided on any
 * server: the wait a client needs before it reads and rewrites records a
 * dtx of its own may still change (dtx gives no isolation): after a commit
 * op ended with -ETIMEDOUT or -EINPROGRESS, or at a restart after a crash
 * with dtxs possibly in flight (dtm/README.md, "What a client must wait
 * for").
 *
 * before: a dtx id (clovis_dtx_id.di_hlc): the call waits for every dtx
 * whose id is lower; 0: every dtx that was in doubt when the call started
 * (the bound of each server is then the higher of this client's clock at
 * the call and that server's clock at its first answer, so that every dtx
 * the server had logged by then is below it).  timeout_ms: how long to
 * wait (0: ask each server once).
 *
 * Cluster mode: asks every server for its dtx LIST (in-doubt records
 * first, as `strata dtx ls`), again with a growing pause (20 ms to 0.5 s)
 * until each one answered once with no PREPARED record below its bound
 * and a full list hides none.  A server that answered clear is not asked
 * again: a dtx below the bound that can still commit had every
 * participant's PREPARED record durable before the server's answer.
 * Returns:
 *   0             no dtx below the bound is in doubt anywhere: each one
 *                 is applied on every participant or aborted everywhere
 *                 (its updates are visible, or will never be);
 *   -ETIMEDOUT    not within timeout_ms, with a message naming the first
 *                 server not clear and why: the oldest dtx in doubt there
 *                 ("NODE:HLC", its age and participant count), or that it
 *                 holds more in-doubt records than one LIST shows;
 *   -EHOSTDOWN, -ETIMEDOUT, ... (the transport's code)  a server did not
 *                 answer the LIST by the end, with a message naming it: a
 *                 server that cannot be reached may hold an in-doubt record
 *                 and is never taken as clear;
 *   -EINVAL       cl NULL;  -ENOMEM.
 * It does not guarantee that a dtx started after the call (or above the
 * bound) is decided, nor anything about a PREPARE still in transit to a
 * server (that dtx can only abort: its coordinator never got the vote).
 * A participant marked dead (`strata dtx resolve dead`) is still asked.
 * Embedded mode: returns 0 at once (a dtx is one local commit, never in
 * doubt).  Thread-safe; it blocks the calling thread only.
 */
CLOVIS_API int clovis_dtx_settle(struct clovis *cl, uint64_t before,
				 uint32_t timeout_ms);

/* ======================================== end: distributed transactions */

/* ---------------------------------------------------------- management */

/**
 * List the entities of one type in realm r (CLOVIS_ET_OBJ or CLOVIS_ET_IDX)
 * or the containers of the store (r == NULL, CLOVIS_ET_CONTAINER), in id
 * order, starting after *after (NULL: from the first).  Fills up to *nr ids
 * and sets *nr to how many were filled (0 at the end).
 * Returns 0, -EINVAL, or -ENOENT if the container does not exist.
 */
CLOVIS_API int clovis_entity_list(struct clovis *cl, struct clovis_realm *r,
				  enum clovis_entity_type type,
				  const struct clovis_id *after,
				  struct clovis_id *ids, uint32_t *nr);

/** One device of the store. */
struct clovis_dev_info {
	uint32_t di_index;      /**< device index in the store */
	uint32_t di_tier;       /**< enum clovis_tier */
	char di_path[256];      /**< where it lives */
	char di_driver[16];     /**< driver name ("file", "pmem2") */
	uint64_t di_size_bytes; /**< usable capacity */
	uint64_t di_free_bytes; /**< free capacity now */
	uint32_t di_direct_io;  /**< 1 when data bypasses the page cache */
	uint32_t di_state;      /**< enum clovis_dev_state */
	uint64_t di_errors;     /**< I/O errors since the store was opened */
	uint32_t di_rebalance;  /**< 1: replaced, units to move back (rebalance) */
	uint32_t di_model;      /**< 1: the device model is on */
	uint64_t di_zone_size;  /**< SMR: zone bytes; 0 for other tiers */
	uint32_t di_zones;      /**< SMR: zones */
	uint32_t di_zones_empty; /**< SMR: zones with nothing written */
	/** Read and write requests the device served since it was opened
	 *  (by this process, or in cluster mode by its server): a read of
	 *  blocks that lie one after another on the device counts once. */
	uint64_t di_reads;
	uint64_t di_writes;
};

/** clovis_dev_info.di_state */
enum clovis_dev_state {
	CLOVIS_DEV_ONLINE = 0,   /**< in service */
	CLOVIS_DEV_FAILED = 1,   /**< failed: its units are read degraded */
	CLOVIS_DEV_REPAIRED = 2, /**< failed; every unit it held was rebuilt
				  *  elsewhere by clovis_repair() */
};

/**
 * Describe the store's devices: fills up to *nr entries of info and sets
 * *nr to the number of devices.  Returns 0 or -EINVAL.  Cluster mode:
 * every device of every server that answers (di_path "SERVER:PATH");
 * the free space of a device lent to the other homes is its server's
 * slice plus the slices the other homes report (a home that does not
 * answer: its slice counted as used; docs/cluster.md "Free space of a
 * lent device").
 */
CLOVIS_API int clovis_dev_list(struct clovis *cl, struct clovis_dev_info *info,
			       uint32_t *nr);

/** One pool: the devices pdclust and mirror layouts place units over. */
struct clovis_pool_info {
	uint32_t pi_index;       /**< the oa_pool value naming it */
	uint32_t pi_nr_devs;
	char pi_name[32];
	uint32_t pi_devs[256];   /**< device indices */
	uint64_t pi_size_bytes;  /**< sum over its devices */
	uint64_t pi_free_bytes;
};

/** One server of a cluster (clovis_server_list()). */
struct clovis_server_info {
	char si_name[64];         /**< "NAME ADDR:PORT" */
	uint32_t si_up;           /**< 1: answered STATUS now */
	uint32_t si_pad;
	uint64_t si_uptime_ms;    /**< since the server started */
	uint64_t si_requests;     /**< requests it served */
	uint64_t si_bad_requests; /**< malformed requests it refused */
	uint64_t si_rpc_dropped;  /**< messages its RPC layer dropped:
				   *  oversize, malformed envelope, or from
				   *  no authenticated session */
	uint64_t si_auth_failed;  /**< peers it refused at connect (wrong
				   *  cluster secret) */
	uint64_t si_inflight;     /**< requests it has not answered yet
				   *  (this STATUS not counted) */
	uint64_t si_idx_syncs;    /**< index replicas it refreshed from a
				   *  peer (catch-up merges that took
				   *  something) */
	uint64_t si_idx_tombs;    /**< index tombstones it collected (dropped
				   *  once every replica held them,
				   *  docs/cluster.md) */
	uint64_t si_late_writes;  /**< remote unit writes it refused past
				   *  their deadline or from an earlier run
				   *  of their home (the write fence,
				   *  docs/cluster.md) */
	uint64_t si_fenced_bytes; /**< as a home: space of abandoned unit
				   *  writes waiting for their fence */
	uint64_t si_nr_slices;    /**< entries of si_slice_free it set (its
				   *  cluster's servers, at most 64) */
	uint64_t si_slice_free[64]; /**< as a home: [j] free bytes of its
				   *  slices on server j's devices (0 for
				   *  itself) */
	uint64_t si_zc_write_bytes; /**< bytes it pulled straight into its
				   *  NVRAM devices' maps (zero-copy,
				   *  docs/data-path.md) */
	uint64_t si_zc_read_bytes; /**< bytes it pushed straight from them */
	uint64_t si_idx_doubts;   /**< index verifications in which a peer
				   *  replica's heartbeat marked it down: it
				   *  then verifies before each request
				   *  (docs/cluster.md "doubt") */
};

/**
 * Cluster mode: ask every server of the cluster for its status; fills up
 * to *nr entries, sets *nr to the number of servers.  A server that does
 * not answer within the call timeout is reported down (si_up 0).
 * Returns 0, -EINVAL, or -ENOTSUP in embedded mode.
 */
CLOVIS_API int clovis_server_list(struct clovis *cl,
				  struct clovis_server_info *info,
				  uint32_t *nr);

/** What clovis_ha_query() asks (docs/ha.md). */
enum clovis_ha_what {
	CLOVIS_HA_MAP = 1,       /**< the cluster map (one JSON object) */
	CLOVIS_HA_EVENTS = 2,    /**< events, one JSON object per line */
	CLOVIS_HA_DECISIONS = 3, /**< the analyzer's decisions, likewise */
	CLOVIS_HA_STATE = 5,     /**< the answering server's HA agent: epoch,
				  *   fenced, lease, the analyzer's leader */
};

/**
 * Cluster mode with HA (the cluster file names etcd endpoints): ask the
 * first server that answers (in the file's order) for what (enum
 * clovis_ha_what); EVENTS and DECISIONS from sequence number from (0: the
 * oldest kept), at most limit (0: all kept).  Clients never talk to etcd:
 * the server answers from its map or reads etcd for them.  Returns 0 with
 * *text (NUL-terminated JSON; the caller free()s it), -EINVAL (bad
 * argument), -ENOTSUP (embedded mode), -EOPNOTSUPP (a cluster without
 * HA: its servers have no HA agent), or the last server's error.
 */
CLOVIS_API int clovis_ha_query(struct clovis *cl, uint32_t what,
			       uint64_t from, uint32_t limit, char **text);

/**
 * Cluster mode with HA: the HA agent's state (CLOVIS_HA_STATE) of the
 * server called name, asked of that server alone.  Returns 0 with *text
 * (JSON, the caller free()s it), -ENOENT (no such server: the message
 * names it), -ENOTSUP, -EOPNOTSUPP, or that server's error.
 */
CLOVIS_API int clovis_ha_server_state(struct clovis *cl, const char *name,
				      char **text);

/**
 * Cluster mode with HA: report an operator's request as an event (one
 * JSON object of the event format, docs/ha.md: kind OP_FAIL, OP_REPLACE,
 * OP_DRAIN, OP_REMOVE, OP_ADD or OP_THAW, target, dev); the analyzer
 * decides what it means.  Returns 0, -EINVAL (not an operator's event,
 * a bad field: the message names it), -ENOTSUP, -EOPNOTSUPP, or the last
 * server's error.
 */
CLOVIS_API int clovis_ha_report(struct clovis *cl, const char *event_json);

/**
 * Describe the store's pools (from its configuration): fills up to *nr
 * entries and sets *nr to the number of pools.  Returns 0 or -EINVAL.
 */
CLOVIS_API int clovis_pool_list(struct clovis *cl, struct clovis_pool_info *info,
				uint32_t *nr);

/**
 * Mark device dev failed, as if it had stopped answering (a device also
 * fails by itself after LIM_DEV_ERRORS_MAX I/O errors).  Units on it are
 * then read degraded (rebuilt from the rest of their groups) and new
 * writes place their units on spare slots.  Persistent across restarts.
 * Returns 0 (also when it was already failed), -EINVAL (no such device).
 */
CLOVIS_API int clovis_dev_fail(struct clovis *cl, uint32_t dev);

/**
 * Replace failed and repaired device dev by a new empty device made at path
 * (which must not exist), of the same tier and size.  Its units stay where
 * repair put them until clovis_rebalance() moves them back.
 * Returns 0, -EINVAL (no such device, bad path), -EBUSY (dev is not in state
 * REPAIRED: repair it first), -EEXIST (path exists), or -errno.
 *
 * Cluster mode, both calls: dev is numbered as clovis_dev_list() numbers
 * the cluster's devices (each server's own devices, server after server);
 * finding its server asks every server up to it for its devices, so a
 * server before it that does not answer fails the call with its code
 * (-EHOSTDOWN ...): clovis_server_dev_fail() and _replace() name the
 * device by its server instead.  See there for what the calls do.
 */
CLOVIS_API int clovis_dev_replace(struct clovis *cl, uint32_t dev,
				  const char *path);

/**
 * Cluster mode: fail device dev of the server called server (dev: the
 * device's index in that server's store, its own devices numbered from 0,
 * as `strata --cluster F devices` shows them SERVER:NAME).  The server
 * marks the device failed as clovis_dev_fail() does in embedded mode (its
 * objects' units there read degraded, clovis_repair() rebuilds them), then
 * every other server marks its image of the device failed (the remote
 * device through which it keeps units of its own objects on its slice of
 * the device): every home then reads degraded and repairs.  Idempotent.
 * Returns 0; -ENOENT (no such server, message naming it), -EINVAL (no such
 * device on it), -EHOSTDOWN / -ETIMEDOUT (the server does not answer:
 * nothing changed), or, when the device's server failed it but another
 * server could not mark its image, that server's code with a message
 * naming it (call again once it answers); -ENOTSUP in embedded mode.
 */
CLOVIS_API int clovis_server_dev_fail(struct clovis *cl, const char *server,
				      uint32_t dev);

/**
 * Cluster mode: replace device dev of server `server` (as for
 * clovis_server_dev_fail()) by a new empty device made at path on that
 * server's host (a relative path is taken from its data directory), as
 * clovis_dev_replace() does in embedded mode; then every other server's
 * image of the device comes back online, flagged to be rebalanced:
 * clovis_rebalance() moves every home's units back onto it.  Every server
 * holding an image must answer and have it repaired first (the new device
 * is empty).  Returns 0; -ENOENT, -EINVAL, -EHOSTDOWN as above; -EBUSY
 * (the device, or a server's image of it, is not repaired yet: message
 * naming the server; or the device is online); -EEXIST (path exists); or
 * the code of a server whose image could not come back online once the
 * device was replaced (call again once it answers: the call finishes
 * what is left).  -ENOTSUP in embedded mode.
 */
CLOVIS_API int clovis_server_dev_replace(struct clovis *cl,
					 const char *server, uint32_t dev,
					 const char *path);

/* ------------------------------------------------- composite layers */

/*
 * Layer calls, both modes.  Embedded: the engine's layer code runs in the
 * calling thread.  Cluster mode: the call goes to the server serving the
 * object's home (the map's, with HA), which runs the same code on its
 * store, so add, drop and move commit there and are durable (on the
 * home's standbys too, with replicated homes) on return, exactly as
 * embedded; the handle's incarnation is checked there (-ENOENT: the
 * object was deleted, or deleted and made again, since the handle opened
 * it).  Errors of cluster mode besides the contracts': the transport's
 * (-EHOSTDOWN, -ETIMEDOUT: the home could not be reached; an add or drop
 * may then have been applied or not, as an object CREATE or DELETE),
 * -EREMCHG (the home is served by another server, after the client read
 * the map again), -EBUSY (the home was busy past the call timeout).  A
 * list, an of or a move whose home could not be reached is sent again
 * where the map then has it served.  Every message names the object and,
 * for what the server refused, the server.
 */

/** One layer of a composite object. */
struct clovis_layer_info {
	uint32_t li_layer;       /**< layer id (1..) */
	uint32_t li_priority;    /**< higher wins; writes go to the highest */
	struct clovis_obj_attr li_attr; /**< its sub-layout (plain tier or
					 *  pdclust/mirror pool) */
	uint64_t li_blocks;      /**< blocks of the object it holds now */
};

/**
 * Add a layer to composite object o (created with CLOVIS_LAYOUT_COMPOSITE
 * and open): attr gives its sub-layout — oa_layout PLAIN with oa_tier, or
 * PDCLUST/MIRROR with their pool and geometry (oa_block_shift is the
 * object's) — and priority orders the layers (distinct; the highest is the
 * top layer that WRITE goes to).  Sets *layer to its id.
 * Returns 0, -EINVAL (not an open object handle, NULL argument, not
 * composite, bad sub-layout: message names the field), -EEXIST (a layer
 * with that priority exists), -E2BIG (16 layers already), -ENOENT
 * (object deleted), or a negative code (cluster mode: above).
 * Synchronous and durable on return.
 */
CLOVIS_API int clovis_obj_layer_add(struct clovis_obj *o,
				    const struct clovis_obj_attr *attr,
				    uint32_t priority, uint32_t *layer);

/**
 * Drop layer `layer` of o.  It must hold no block (move its extents away
 * first): -ENOTEMPTY otherwise; -ENOENT if there is no such layer (or
 * the object was deleted); -EINVAL (not an open object handle).
 * Synchronous and durable on return.
 */
CLOVIS_API int clovis_obj_layer_drop(struct clovis_obj *o, uint32_t layer);

/** List o's layers, highest priority first: fills up to *nr entries of
 *  out (caller's), sets *nr to how many there are.  0, -EINVAL (not an
 *  open object handle; nr NULL, or out NULL with *nr > 0), -ENOENT
 *  (object deleted), or a negative code (cluster mode: above). */
CLOVIS_API int clovis_obj_layer_list(struct clovis_obj *o,
				     struct clovis_layer_info *out,
				     uint32_t *nr);

/**
 * Move blocks [start_blk, start_blk + nr_blks) of o into layer `to`: every
 * block held by another layer is read from it, written to `to`, and — in
 * the same atomic commit — mapped to `to` and unmapped from its old layer
 * (whose space is freed).  Holes stay holes.  A crash at any instant leaves
 * each block readable from the old layer or the new one.  A block written
 * (or freed, or moved) by a concurrent update while it moves keeps the
 * newer data where that update put it: it is not moved, and *moved (may be
 * NULL) counts only the blocks that were — compare with the range, or list
 * the layers, to see what is left.  The base of HSM tiering.  Cluster
 * mode: the home moves the range in calls of at most 16 MiB of the
 * object's blocks each (the range cut at the object's size), so a long
 * range takes several calls, each within the call timeout; after a
 * failure *moved counts what the calls answered before it moved (the
 * failed call may have moved some runs more: list the layers), every
 * block on one layer or the other.
 * Returns 0, -EINVAL (not an open object handle; nr_blks 0 or the range
 * past CLOVIS_BLOCK_NR_MAX; not composite), -ENOENT (no such layer, or
 * object deleted), an I/O error, or a negative code (cluster mode: above).
 */
CLOVIS_API int clovis_obj_layer_move(struct clovis_obj *o, uint64_t start_blk,
				     uint64_t nr_blks, uint32_t to,
				     uint64_t *moved);

/** The layer holding block blk of o in *layer: 0, -ENOENT (a hole, or
 *  object deleted), -EINVAL (not an open object handle, layer NULL, blk
 *  at or past CLOVIS_BLOCK_NR_MAX), or a negative code (cluster mode:
 *  above). */
CLOVIS_API int clovis_obj_layer_of(struct clovis_obj *o, uint64_t blk,
				   uint32_t *layer);

/** One run of a composite's blocks held by one layer (clovis_obj_layer_map). */
struct clovis_layer_ext {
	uint64_t le_start;  /**< first block */
	uint64_t le_blocks; /**< blocks, 1.. */
	uint32_t le_layer;  /**< the layer holding them (clovis_layer_info) */
};

/**
 * Where the blocks of [start_blk, start_blk + nr_blks) of composite o
 * are: the runs its layers hold, in block order, holes left out, runs of
 * one layer that touch merged into one.  Fills up to *nr entries of out
 * (caller's, *nr >= 1) and sets *nr to how many it filled; *next (may be
 * NULL when *nr was large enough) is the block to call again from, or
 * start_blk + nr_blks when the range is covered: a run cut by the end of
 * out or of one answer continues in the next call.  Cluster mode: one
 * call to the object's home per at most 1024 runs.  Reads only (a
 * snapshot: a move or write running meanwhile may change it).
 * Returns 0, -EINVAL (not an open object handle; out, nr NULL or *nr 0;
 * nr_blks 0 or the range past CLOVIS_BLOCK_NR_MAX; not composite),
 * -ENOENT (object deleted), or a negative code (cluster mode: above).
 */
CLOVIS_API int clovis_obj_layer_map(struct clovis_obj *o, uint64_t start_blk,
				    uint64_t nr_blks,
				    struct clovis_layer_ext *out,
				    uint32_t *nr, uint64_t *next);

/** Integrity counters of unit layouts since the store was opened. */
struct clovis_unit_counters {
	uint64_t uc_degraded_reads; /**< groups read with reconstruction */
	uint64_t uc_crc_errors;     /**< unit checksum mismatches found */
	uint64_t uc_read_repairs;   /**< units rewritten after a bad read */
};

/** Fill *out.  Returns 0 or -EINVAL. */
CLOVIS_API int clovis_unit_counters_get(struct clovis *cl,
					struct clovis_unit_counters *out);

/** What clovis_smr_clean() did. */
struct clovis_clean_stats {
	uint32_t cs_zones_reset;   /**< zones made empty */
	uint32_t cs_pad;
	uint64_t cs_bytes_moved;   /**< live bytes relocated */
	uint64_t cs_records_moved; /**< extent and unit records re-pointed */
};

/**
 * Run the SMR cleaner on zoned device dev (UINT32_MAX: every SMR device):
 * zones other than the open one whose live bytes are at most live_pct %
 * (0..100) of what was written in them have their live data relocated to
 * other zones and are reset.  Data stays readable throughout, and a crash
 * at any point loses nothing (a zone is reset only after the commit that
 * moved its last live byte is durable).  Writes never take the last empty
 * zone (the cleaner's reserve); a write that finds no other room runs the
 * cleaner itself on the zone with the most dead bytes among those that hold
 * no appended data of a write still in flight (it skips them), and fails
 * with -ENOSPC only when the device is full of live data (no zone has dead
 * bytes, apart from zones holding the write's own appends); when dead
 * bytes are only in zones held by other writes in flight, it waits for
 * them at most 5 s and then fails -EAGAIN saying so.
 * Returns 0, -EINVAL (not a zoned device, live_pct > 100), or a negative
 * code.
 */
CLOVIS_API int clovis_smr_clean(struct clovis *cl, uint32_t dev,
				uint32_t live_pct,
				struct clovis_clean_stats *st);

/**
 * What clovis_repair(), clovis_rebalance() or clovis_scrub() did.  A walk
 * may take several calls (stopped or killed, then resumed): the ws_ fields
 * up to ws_devices count what THIS call did, over the time ws_elapsed_ns
 * (so ws_bytes / ws_elapsed_ns is this call's rate); the ws_walk_ fields
 * count the whole walk from its start, every call included (the same as
 * this call's when ws_resumed is 0).  The return code (-EIO) and the
 * device states follow the whole walk.
 */
struct clovis_walk_stats {
	uint64_t ws_units;        /**< unit records visited */
	uint64_t ws_bytes;        /**< bytes of the units checked, rebuilt or
				   *  moved (a rebuild reads N units each) */
	uint64_t ws_rebuilt;      /**< units rebuilt and written again */
	uint64_t ws_moved;        /**< units moved back (rebalance) */
	uint64_t ws_corrupt;      /**< checksum mismatches and read errors */
	uint64_t ws_unrepairable; /**< units whose group lost more than K */
	uint64_t ws_elapsed_ns;
	uint32_t ws_resumed;      /**< 1: continued a walk a crash or a stop
				   *  interrupted */
	uint32_t ws_devices;      /**< distinct devices read from */
	/* The whole walk, including the calls before a resume. */
	uint64_t ws_walk_units;
	uint64_t ws_walk_rebuilt;
	uint64_t ws_walk_moved;
	uint64_t ws_walk_corrupt;
	uint64_t ws_walk_unrepairable;
	uint64_t ws_shared;       /**< groups this call left with two units
				   *  on one server although the pool has
				   *  servers enough (cluster mode; 0 after a
				   *  complete rebalance, every server up) */
};

/** Progress of a walk: units done and units in the store; return non-zero
 *  to stop it (it keeps its place; the call returns -EINTR). */
typedef int (*clovis_progress_fn)(void *arg, uint64_t done, uint64_t total);

/**
 * Rebuild every unit that lives on a failed device (or was never written
 * because its device was down) from the rest of its parity group (ISA-L
 * decode, or a mirror copy), onto spare space of surviving devices of the
 * pool, reading the survivors of each group in parallel.  The walk commits
 * its work and its place in batches, so after a crash or a stop a new call
 * resumes where it was.  When done, failed devices become REPAIRED.
 * Plain-layout objects have no redundancy and are not repaired.
 * Blocks the caller; ops may run concurrently.  fn may be NULL.
 * Returns 0, -EIO (some units had more than K units of their group lost:
 * message and ws_unrepairable say how many), -EINTR (fn stopped it), or
 * another negative code.
 *
 * Cluster mode (the same for clovis_rebalance() and clovis_scrub()): every
 * server walks the objects homed on it, all at once (management RPC
 * SOP_WALK); *st is the sum of their figures (ws_elapsed_ns: the longest,
 * ws_resumed: 1 if any resumed, ws_devices: summed per server).  fn is
 * not called.  A server must answer within the cluster's call timeout
 * before its walk starts; one that fails or cannot be reached fails the
 * call with its code (the transport's: -ETIMEDOUT, -EHOSTDOWN, ...) and a
 * message naming it, after the other servers finished (*st then holds
 * theirs).  -EIO when any server had units it could not rebuild.  A
 * server runs one walk at a time: -EBUSY while another client's runs.
 */
CLOVIS_API int clovis_repair(struct clovis *cl, clovis_progress_fn fn,
			     void *arg, struct clovis_walk_stats *st);

/**
 * Move units back onto replaced devices (clovis_dev_replace()): every unit
 * whose layout places it on such a device but which lives elsewhere is
 * copied there (checksum verified, rebuilt if damaged).  Resumable like
 * repair.  Returns 0 or a negative code.
 */
CLOVIS_API int clovis_rebalance(struct clovis *cl, clovis_progress_fn fn,
				void *arg, struct clovis_walk_stats *st);

/**
 * Read every unit on a usable device, verify its checksum, and rebuild and
 * rewrite any that is damaged (read-repair, store-wide).  Resumable.
 * Returns 0, -EIO (unrepairable units found), or a negative code.
 */
CLOVIS_API int clovis_scrub(struct clovis *cl, clovis_progress_fn fn,
			    void *arg, struct clovis_walk_stats *st);

/**
 * Scrub one object now: every unit of it (of a pdclust object every data
 * and parity unit of every group, of a mirror every copy; of a composite
 * those of each pdclust or mirror layer) read and checked against its
 * checksum, a damaged one rebuilt from its group and rewritten, as
 * clovis_scrub() does store-wide: what a plugin calls to verify an object
 * soon after it was written (fdmi/integrity/).  Plain objects and plain
 * layers carry no checksums: nothing is read (*st all 0, 0 returned).
 * *st: what this call did (ws_units, ws_corrupt, ws_rebuilt,
 * ws_unrepairable, ...; the ws_walk_ fields the same).  Runs while
 * writes go on: a unit rewritten meanwhile is checked as it is found.
 * Cluster mode: the object's home runs it (one call, which must end
 * within the call timeout: some seconds per GiB on disks).
 * Returns 0, -EIO (units that could not be rebuilt: more than K of a
 * group lost; *st says how many), -EINVAL (not an open object handle, st
 * NULL), -ENOENT (object deleted), or a negative code.
 */
CLOVIS_API int clovis_obj_scrub(struct clovis_obj *o,
				struct clovis_walk_stats *st);

/** Op classes measured by the statistics. */
enum clovis_stat_op {
	CLOVIS_STAT_OBJ_READ,
	CLOVIS_STAT_OBJ_WRITE,
	CLOVIS_STAT_OBJ_ALLOC,
	CLOVIS_STAT_OBJ_FREE,
	CLOVIS_STAT_IDX_GET,
	CLOVIS_STAT_IDX_PUT,
	CLOVIS_STAT_IDX_DEL,
	CLOVIS_STAT_IDX_NEXT,
	CLOVIS_STAT_ENT_CREATE,
	CLOVIS_STAT_ENT_OPEN,
	CLOVIS_STAT_ENT_DELETE,
	CLOVIS_STAT_ENT_GETATTR,
	CLOVIS_STAT_ENT_SETATTR,
	CLOVIS_STAT_COMMIT, /**< group commits (one per batch of updates) */
	CLOVIS_STAT_NR
};

/** Figures of one op class: launch to STABLE (or FAILED) latency. */
struct clovis_stat {
	const char *cs_name; /**< "obj.read", "idx.put", ... */
	uint64_t cs_count;   /**< ops finished */
	uint64_t cs_failed;  /**< of which FAILED */
	uint64_t cs_bytes;   /**< data bytes moved (objects), records (idx) */
	uint64_t cs_p50_us;
	uint64_t cs_p90_us;
	uint64_t cs_p99_us;
	uint64_t cs_max_us;
	double cs_mean_us;
};

/**
 * Statistics of the store: counts and latency percentiles per op class,
 * accumulated over every session of the store (saved at clovis_fini()).
 * Fills out[CLOVIS_STAT_NR].  Returns 0 or -EINVAL.
 */
CLOVIS_API int clovis_stats_get(struct clovis *cl,
				struct clovis_stat out[CLOVIS_STAT_NR]);

/** Forget all statistics (saved and current).  Returns 0 or -errno. */
CLOVIS_API int clovis_stats_reset(struct clovis *cl);

/** What clovis_stats_clients() summed. */
struct clovis_stats_clients {
	uint64_t sc_clients;        /**< client ends (pushes) in the sums */
	uint32_t sc_servers_read;   /**< servers whose sums were read */
	uint32_t sc_servers_not_read; /**< servers that did not answer */
};

/**
 * Cluster mode: the statistics of the cluster's clients that ended.  A
 * cluster-mode instance pushes its own (what clovis_stats_get() reports)
 * to one server it talked to when clovis_fini() ends it, if it ran any
 * op; each server adds the pushes it gets to sums kept beside its store
 * (saved at most 10 s after a push and at a clean stop: a server killed
 * with SIGKILL loses the pushes of its last 10 s).  This reads every
 * server's sums and adds them up into out[CLOVIS_STAT_NR] (counts,
 * failures, bytes, latency percentiles, as clovis_stats_get()); *info
 * (may be NULL) says how many pushes and servers.  A server that does
 * not answer is counted in sc_servers_not_read, its sums left out.
 * Returns 0, -EINVAL (NULL cl or out), or -ENOTSUP for an embedded
 * store (whose statistics are its own: clovis_stats_get()).
 */
CLOVIS_API int clovis_stats_clients(struct clovis *cl,
				    struct clovis_stat out[CLOVIS_STAT_NR],
				    struct clovis_stats_clients *info);

/* ------------------------------------------------------ metrics (ADDB)
 * Every Strata process keeps always-on metrics (counters, gauges,
 * latency histograms: ops, devices and tiers, group commits, RPC, walks,
 * dtxs, S3 requests) in a shared-memory region of its own
 * (/dev/shm/strata-addb.PID), readable by `strata metrics --pid P`
 * without stopping it; docs/monitoring.md lists every metric. */

/** clovis_addb_metrics() flag: JSON instead of the Prometheus text. */
#define CLOVIS_ADDB_JSON (1u << 0)

/**
 * The metrics of this process (server NULL; cl may be NULL then), or in
 * cluster mode of the server called server (its process's, by the
 * SOP_METRICS request), as Prometheus text format 0.0.4 or, with
 * CLOVIS_ADDB_JSON, as JSON; only the families of priority >=
 * min_priority (0..100: 10 critical, 5 useful, 0 all).  *text is
 * malloc'd, NUL-terminated, the caller's to free; *len its length.
 * Errors: -EINVAL (bad argument, or a server named to an embedded
 * instance: the message names it), -ENOENT (no such server), the
 * transport's codes, -ENOMEM.  Nothing changes.
 */
CLOVIS_API int clovis_addb_metrics(struct clovis *cl, const char *server,
				   uint32_t min_priority, uint32_t flags,
				   char **text, size_t *len);

/**
 * Serve this process's metrics over HTTP: GET /metrics (Prometheus text;
 * ?min_priority=P), GET /metrics.json; the opt-in of an embedded
 * application (strata-server and strata-s3 have --metrics).  listen is
 * "ADDR:PORT", "[V6ADDR]:PORT", "HOST:PORT" or "PORT" (127.0.0.1: bound
 * to loopback by default); port 0 lets the kernel choose, *port (may be
 * NULL) tells the port.  One server per process.  Errors: -EINVAL (bad
 * listen text), -EADDRINUSE, -EALREADY (served already), the bind's
 * errno.
 */
CLOVIS_API int clovis_addb_serve(const char *listen, uint16_t *port);
/** Stop the server of clovis_addb_serve() (nothing when none runs). */
CLOVIS_API void clovis_addb_serve_stop(void);

/**
 * Switch this process's ADDB trace: timestamped records of op stages
 * (launched, executed, ended), server requests, device I/O and group
 * commits, per thread, in a ring file /dev/shm/strata-addb.PID.trace of
 * at most size_mib MiB (1..4096; 0: 64), made at the first switch on and
 * never grown.  sample 0 switches it off, N >= 1 traces one op in N
 * (device I/O and commits are recorded while it is on).  `strata addb
 * dump --pid P` decodes it; `strata addb trace` switches another
 * process's.  Returns 0 or -EINVAL (the message names the field).
 */
CLOVIS_API int clovis_addb_trace(uint32_t sample, uint32_t size_mib);

/**
 * The ADDB trace records of this process (server NULL; cl may be NULL
 * then) or, in cluster mode, of the server called server: the last
 * max_records of them (1..10000; 0: 10000), in time order, as JSON lines
 * {"t": seconds since the first line's, "ring": the thread's ring, "kind":
 * "op.launch" | "op.executed" | "op.end" | "srv.recv" | "srv.reply" |
 * "dev.io" | "commit", "id": the op's trace id (dev.io: the device's
 * label slot), "a": op class (dev.io: 0 read, 1 write, 2 sync; commit:
 * items), "b": result code (dev.io: bytes), "c": latency ns}.  *text is
 * malloc'd, NUL-terminated, the caller's.  Errors: -ENOENT (tracing was
 * never switched on there, or no such server), -EINVAL, the transport's
 * codes, -ENOMEM.
 */
CLOVIS_API int clovis_addb_records(struct clovis *cl, const char *server,
				   uint32_t max_records, char **text,
				   size_t *len);

/* ---------------------------------------------------------------- FDMI
 * A durable record of every change (issue 31, fdmi/README.md).  Each store
 * (the embedded engine, each cluster server's home) appends a record of
 * every change to its own log in the same local transaction as the change:
 * object create, write, alloc, free and delete (with the extents), index
 * create and delete, record put and del (with the key), container create
 * and delete, attribute sets, composite layer add, drop and move, and dtx
 * commits.  A consumer registers by name with a filter and reads records
 * in order per store with clovis_fdmi_next(), then releases them with
 * clovis_fdmi_ack(): delivery is at least once (a consumer that did not
 * ack gets the records again from its acked cursor: deduplicate by
 * (server, seq)).  Records are kept until every ACTIVE consumer acked
 * them, bounded per consumer in bytes and age: a consumer past a bound is
 * marked LAGGING, its cursor dropped, and must rescan the store and call
 * clovis_fdmi_reset(); writes never wait for a consumer.
 */

/** Longest consumer name: letters, digits, '.', '_', '-'. */
#define CLOVIS_FDMI_NAME_MAX 48u
/** Bytes of a record's server name, with its NUL. */
#define CLOVIS_FDMI_SERVER_LEN 64u

/** The change a record names. */
enum clovis_fdmi_op {
	CLOVIS_FDMI_OBJ_CREATE = 1,
	CLOVIS_FDMI_OBJ_DELETE,
	CLOVIS_FDMI_OBJ_WRITE,   /**< extents written */
	CLOVIS_FDMI_OBJ_ALLOC,   /**< extents allocated */
	CLOVIS_FDMI_OBJ_FREE,    /**< extents freed */
	CLOVIS_FDMI_IDX_CREATE,
	CLOVIS_FDMI_IDX_DELETE,
	CLOVIS_FDMI_IDX_PUT,     /**< one record put: fr_key */
	CLOVIS_FDMI_IDX_DEL,     /**< one record deleted: fr_key */
	CLOVIS_FDMI_CONT_CREATE,
	CLOVIS_FDMI_CONT_DELETE,
	CLOVIS_FDMI_SETATTR,
	CLOVIS_FDMI_LAYER_ADD,   /**< fr_layer added, on fr_tier */
	CLOVIS_FDMI_LAYER_DROP,  /**< fr_layer dropped */
	CLOVIS_FDMI_LAYER_MOVE,  /**< extents moved to fr_layer (fr_tier) */
	CLOVIS_FDMI_DTX_COMMIT,  /**< dtx fr_dtx committed here (fr_size:
				      its members) */
	CLOVIS_FDMI_OBJ_READ,    /**< reads of fr_id since the last such
				      record (fr_size: how many; one extent:
				      the blocks they spanned); written about
				      once a second, not in the read's own
				      transaction (a read has none), lost in
				      a crash */
};

/** A consumer's state. */
enum clovis_fdmi_state { CLOVIS_FDMI_ACTIVE = 1, CLOVIS_FDMI_LAGGING = 2 };

/** clovis_fdmi_sub() flag: receive every record still kept, not only
 *  those after the registration. */
#define CLOVIS_FDMI_FROM_START 1u
/** Record flag: the extents past the first 256 are left out. */
#define CLOVIS_FDMI_F_TRUNC 1u
/** Record flag: fr_tier names a tier (records of a plain, pdclust or
 *  mirror object, of a composite's layer ops and layer writes; not of
 *  containers, indices, dtxs, a composite's own create or delete).  A
 *  filter's "tier=N" matches only records with this flag. */
#define CLOVIS_FDMI_F_TIER 2u

/** One record, as clovis_fdmi_batch_rec() gives it (pointers into the
 *  batch, valid until clovis_fdmi_batch_free()). */
struct clovis_fdmi_rec {
	const char *fr_server;   /**< the store's server ("local": embedded) */
	uint64_t fr_seq;         /**< per server, rising (gaps possible) */
	uint32_t fr_op;          /**< enum clovis_fdmi_op */
	uint32_t fr_flags;       /**< CLOVIS_FDMI_F_* */
	uint64_t fr_time_ns;     /**< commit time, ns since the epoch */
	struct clovis_dtx_id fr_dtx; /**< di_hlc 0: not in a dtx */
	uint32_t fr_type;        /**< enum clovis_entity_type */
	uint32_t fr_tier;
	struct clovis_id fr_id;
	struct clovis_id fr_container;
	uint32_t fr_layer;       /**< layer ops: the layer; OBJ_CREATE: the
				      object's layout (enum clovis_layout_type) */
	uint32_t fr_nr_ext;      /**< extents: clovis_fdmi_rec_ext() */
	uint64_t fr_size;        /**< after the change: object bytes, index
				      records */
	uint64_t fr_digest;      /**< digest of the new attributes */
	const void *fr_key;      /**< IDX_PUT, IDX_DEL */
	uint32_t fr_klen;
	const void *fr_priv;     /**< the extents' bytes */
};

/** A consumer, as clovis_fdmi_list() shows it. */
struct clovis_fdmi_sub {
	char fs_name[CLOVIS_FDMI_NAME_MAX + 1];
	char fs_server[CLOVIS_FDMI_SERVER_LEN]; /**< "local" embedded */
	uint32_t fs_state;       /**< enum clovis_fdmi_state */
	char fs_filter[512];     /**< its filter, as clovis_fdmi_sub() took */
	uint64_t fs_acked;       /**< records up to this seq released */
	uint64_t fs_max_bytes;
	uint64_t fs_max_age_ms;
	uint64_t fs_lag_records; /**< records after fs_acked */
	uint64_t fs_lag_bytes;   /**< their bytes */
	uint64_t fs_lag_ms;      /**< age of the oldest */
	uint64_t fs_lag_count;   /**< times marked LAGGING */
};

struct clovis_fdmi_batch;

/**
 * Register consumer name with filter (text, NULL or "" for every record):
 * space-separated fields, each optional: "op=OP[,OP...]" (names as
 * clovis_fdmi_op_name() gives them: obj.write, idx.put, ...),
 * "container=ID", "id=ID[/BITS]" (an entity, or an id prefix of BITS
 * bits), "key=PREFIX" (index records whose key starts with it), "tier=N".
 * Bounds: max_bytes of records not acked and max_age_ms for the oldest
 * (0: 64 MiB, 1 hour).  In cluster mode on every server.  0 (also when
 * the name exists with the same filter), -EEXIST (another filter),
 * -EINVAL (the message names the field), -ENOSPC (the store has 64
 * consumers), -ENOTSUP (FDMI off), transport codes.
 */
CLOVIS_API int clovis_fdmi_sub(struct clovis *cl, const char *name,
			       const char *filter, uint64_t max_bytes,
			       uint64_t max_age_ms, uint32_t flags);
/** Remove consumer name (on every server).  0 or -ENOENT. */
CLOVIS_API int clovis_fdmi_unsub(struct clovis *cl, const char *name);
/** Every consumer (per server in cluster mode), up to max in out; *nr
 *  the total.  0 or a negative code. */
CLOVIS_API int clovis_fdmi_list(struct clovis *cl, struct clovis_fdmi_sub *out,
				uint32_t max, uint32_t *nr);
/**
 * Up to max (1..65536; 0: 1024) of name's records after those this
 * instance was already given (or, the first time, after its acked
 * cursor), in *out (free with clovis_fdmi_batch_free()).  In cluster
 * mode from every server, in order per server.  0 (the batch may hold no
 * record), -ENOENT (no such consumer), -ESTALE (LAGGING: rescan, then
 * clovis_fdmi_reset()), transport codes.
 */
CLOVIS_API int clovis_fdmi_next(struct clovis *cl, const char *name,
				uint32_t max, struct clovis_fdmi_batch **out);
/** Records in b. */
CLOVIS_API uint32_t clovis_fdmi_batch_nr(const struct clovis_fdmi_batch *b);
/** Record i of b.  0 or -EINVAL. */
CLOVIS_API int clovis_fdmi_batch_rec(const struct clovis_fdmi_batch *b,
				     uint32_t i, struct clovis_fdmi_rec *out);
/** Extent i of r: start block and blocks. */
CLOVIS_API void clovis_fdmi_rec_ext(const struct clovis_fdmi_rec *r,
				    uint32_t i, uint64_t *start,
				    uint64_t *blocks);
/** Release every record b covered (also those its filter skipped), on
 *  each server; durable when it returns.  0 or a negative code. */
CLOVIS_API int clovis_fdmi_ack(struct clovis *cl, const char *name,
			       const struct clovis_fdmi_batch *b);
CLOVIS_API void clovis_fdmi_batch_free(struct clovis_fdmi_batch *b);
/** A LAGGING consumer rescanned: ACTIVE again from the head (on every
 *  server).  0 or a negative code. */
CLOVIS_API int clovis_fdmi_reset(struct clovis *cl, const char *name);
/** This instance forgets what it was given of name's records and did not
 *  ack: the next clovis_fdmi_next() starts again after the consumer's
 *  acked cursor (a reader that looked without acking: a dry run).  Only
 *  this instance; nothing is sent.  0 or -EINVAL. */
CLOVIS_API int clovis_fdmi_rewind(struct clovis *cl, const char *name);
/** "obj.write" for CLOVIS_FDMI_OBJ_WRITE, ...; "?" for no op. */
CLOVIS_API const char *clovis_fdmi_op_name(uint32_t op);

/* -------------------------------------------------- function shipping */

/*
 * Function shipping (in-storage compute, docs/isc.md): a function runs
 * where the data lives and only its results travel.  A function is
 * registered once under a name (clovis_isc_register()): its code is kept
 * in the store's function registry, an index at the reserved id
 * CLOVIS_ISC_REGISTRY of the default container, under its digest (SHA-256
 * of its kind and code), so every server runs exactly the registered code
 * (a server checks the digest of what it is sent).  It is then invoked
 * (clovis_isc_invoke()) on
 *   an object     every server runs it on the data units it holds (pdclust
 *                 and mirror objects: its units, each unit mapped whole;
 *                 plain and composite objects, and Lua functions with
 *                 granule "object": the object's home); embedded mode runs
 *                 it on each device's share in-process;
 *   an index      the first replica that serves a NEXT runs it over a key
 *                 range;
 *   a container   every object and index in it, each where it lives; the
 *                 keys of the records of each member are prefixed by the
 *                 member's 16-byte id (big-endian hi, lo).
 * The client merges the partial results (docs/isc.md "Output records").
 * A unit whose server is unreachable or dies during the call is mapped by
 * the object's home from a degraded read (its group rebuilt from the
 * survivors), so the result is complete, or the call fails with the
 * reason.  Function errors name the function, the server and the reason:
 *   -EINVAL     bad program (syntax: line and column), bad call;
 *   -ECANCELED  the function raised an error (Lua: its message; stack
 *               overflow; an error inside a host function);
 *   -ENOMEM     the function went past its memory cap;
 *   -ETIMEDOUT  past its deadline;
 *   -E2BIG      its output went past the output cap;
 *   -EPERM      a native function not allowed by the server's (or the
 *               embedded store's) configuration;
 *   -ENOENT     no function of that name, or no such object / index /
 *               container;
 *   -ENOTSUP    the function cannot run on that target (a record size on
 *               an index; a record size that does not divide an object's
 *               unit size).
 */

/** Kinds of function (docs/isc.md). */
enum clovis_isc_kind {
	CLOVIS_ISC_DECL = 1,   /**< declarative filter and aggregates */
	CLOVIS_ISC_LUA = 2,    /**< Lua 5.4 map (and reduce), sandboxed */
	CLOVIS_ISC_NATIVE = 3, /**< trusted shared object: code is its path */
};

/** The function registry's index id (default container). */
#define CLOVIS_ISC_REGISTRY ((struct clovis_id){0, 16})
#define CLOVIS_ISC_DIGEST_LEN 32u
#define CLOVIS_ISC_NAME_MAX 128u
#define CLOVIS_ISC_CODE_MAX (256u << 10)
#define CLOVIS_ISC_ARGS_MAX (64u << 10)

/** One registered function. */
struct clovis_isc_fn {
	char if_name[CLOVIS_ISC_NAME_MAX + 1];
	enum clovis_isc_kind if_kind;
	uint8_t if_digest[CLOVIS_ISC_DIGEST_LEN];
	uint32_t if_code_len;
};

/**
 * Register code under name (1..CLOVIS_ISC_NAME_MAX bytes of [A-Za-z0-9_.-]),
 * replacing what the name named before (the earlier code stays under its
 * digest).  The code is compiled here first (a syntax error is -EINVAL
 * with its line; a native path must exist and be allowed by this client's
 * configuration only when invoked).  NATIVE: code is the shared object's
 * absolute path; its digest covers the path and the file's contents.
 * digest (may be NULL) gets the function's digest.  Durable on return.
 */
CLOVIS_API int clovis_isc_register(struct clovis *cl, const char *name,
				   enum clovis_isc_kind kind,
				   const void *code, size_t len,
				   uint8_t digest[CLOVIS_ISC_DIGEST_LEN]);

/** Remove the name (its code stays under its digest).  -ENOENT if none. */
CLOVIS_API int clovis_isc_unregister(struct clovis *cl, const char *name);

/** Look a name up: *out filled.  code (may be NULL) gets a malloc'd copy
 *  of the code (*code_len its length).  -ENOENT if none. */
CLOVIS_API int clovis_isc_lookup(struct clovis *cl, const char *name,
				 struct clovis_isc_fn *out, void **code,
				 size_t *code_len);

/** List registered names in order after `after` (NULL: from the first):
 *  up to *nr into out; *nr set to how many (0 at the end). */
CLOVIS_API int clovis_isc_list(struct clovis *cl, const char *after,
			       struct clovis_isc_fn *out, uint32_t *nr);

/** What an invocation runs on (clovis_isc_call.ic_target). */
enum clovis_isc_target {
	CLOVIS_ISC_OBJ = 1,
	CLOVIS_ISC_IDX = 2,
	CLOVIS_ISC_CONTAINER = 3,
};

/** One invocation. */
struct clovis_isc_call {
	const char *ic_fn;          /**< registered name */
	enum clovis_isc_target ic_target;
	struct clovis_id ic_id;     /**< object, index or container */
	/** Objects: blocks [start, start + nr); nr 0 = to the object's
	 *  size.  Its ends must fall on the function's record boundaries. */
	uint64_t ic_start_blk, ic_nr_blks;
	/** Indices: keys [lo, hi); NULL = open end. */
	const void *ic_key_lo, *ic_key_hi;
	size_t ic_key_lo_len, ic_key_hi_len;
	const void *ic_args;        /**< bytes given to the function (Lua:
				     *   ARGS), up to CLOVIS_ISC_ARGS_MAX */
	size_t ic_args_len;
	/** Per run on one share: a budget of the function's own time (its
	 *  clock stops while the engine reads the next unit; docs/isc.md
	 *  "Limits and errors"); 0 = 1000, at most 600000. */
	uint32_t ic_deadline_ms;
	uint64_t ic_mem;            /**< Lua memory cap; 0 = 8 MiB */
	uint64_t ic_out_max;        /**< output cap (per share and of the
				     *   merged result); 0 = 1 MiB */
};

/** Figures of one invocation. */
struct clovis_isc_stats {
	uint64_t is_runs;          /**< function runs (shares) */
	uint64_t is_servers;       /**< distinct servers that ran a share
				    *   (embedded: distinct devices whose
				    *   units were mapped, and 1 for the
				    *   store when a run read through an
				    *   object's READ or an index) */
	uint64_t is_bytes_mapped;  /**< object bytes or index record bytes
				    *   the function saw */
	uint64_t is_bytes_result;  /**< result bytes that reached the client */
	uint64_t is_degraded;      /**< units mapped from a degraded read */
	uint64_t is_members;       /**< container: members the call ran on */
};

/** A record of a result (pointers into the result). */
struct clovis_isc_rec {
	const void *ir_key;
	size_t ir_klen;
	uint32_t ir_type;   /**< CLOVIS_ISC_V_* */
	int64_t ir_int;     /**< INT, COUNT */
	double ir_float;    /**< FLOAT, SUM, MIN, MAX (MEAN is FLOAT) */
	const void *ir_val; /**< BYTES, MATCH (the record), HIST: the raw
			     *   value (docs/isc.md) */
	size_t ir_vlen;
};

/** Record types of results (docs/isc.md "Output records"). */
enum clovis_isc_vtype {
	CLOVIS_ISC_V_INT = 1, CLOVIS_ISC_V_FLOAT = 2, CLOVIS_ISC_V_BYTES = 3,
	CLOVIS_ISC_V_SUM = 4, CLOVIS_ISC_V_MIN = 5, CLOVIS_ISC_V_MAX = 6,
	CLOVIS_ISC_V_COUNT = 7, CLOVIS_ISC_V_HIST = 9, CLOVIS_ISC_V_MATCH = 10,
	CLOVIS_ISC_V_ISUM = 11,
};

/** A result: records sorted by key. */
struct clovis_isc_result {
	void *ir_buf;
	size_t ir_len;
	uint32_t ir_nr;
	struct clovis_isc_stats ir_stats;
};

/**
 * Invoke a registered function (above); on success *res holds the merged,
 * finished result (Lua reduce() applied at this client) and the figures.
 * Synchronous; the call as a whole ends within the runs' deadline plus the
 * cluster's call timeout per step (never hangs on a dead server).
 */
CLOVIS_API int clovis_isc_invoke(struct clovis *cl,
				 const struct clovis_isc_call *call,
				 struct clovis_isc_result *res);

/** Iterate res: *pos from 0; 1 with *rec filled, 0 at the end. */
CLOVIS_API int clovis_isc_result_next(const struct clovis_isc_result *res,
				      size_t *pos, struct clovis_isc_rec *rec);

/** Free what res holds (safe on a zeroed result). */
CLOVIS_API void clovis_isc_result_free(struct clovis_isc_result *res);

/** HIST record value: fills lo, hi, *nb, and points *counts (nb uint64_t,
 *  little-endian, may be unaligned: copy them) into the record.
 *  -EINVAL if rec is not a well-formed HIST. */
CLOVIS_API int clovis_isc_hist(const struct clovis_isc_rec *rec, double *lo,
			       double *hi, uint32_t *nb, const void **counts);

#ifdef __cplusplus
}
#endif
#endif /* STRATA_CLOVIS_H */
