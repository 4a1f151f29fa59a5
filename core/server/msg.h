/*
 * msg.h — encoding and decoding of the engine-request protocol
 * (core/server/strata.proto), shared by the Clovis cluster client
 * (clovis/cli_cluster.c) and strata-server (core/server/srv_*.c).
 *
 * Decoders turn a request body into a struct msg_req: an engine request
 * (struct eng_req) ready for eng_exec(), plus the vectors and buffers it
 * points to, all owned by the msg_req.  Every field is checked against the
 * limits embedded mode enforces (clovis/clovis.h, core/limits.h): ids not
 * reserved where a handle could not have them, kinds and types known,
 * extent and record counts at most ST_VEC_MAX, keys at most
 * ST_KEY_MAX bytes, values at most ST_VAL_MAX, lengths adding up to
 * the bytes actually sent.  A bad request is refused with -EINVAL / -E2BIG /
 * -EBADMSG and a message naming the field; nothing is allocated past what
 * the checked counts allow.
 */
#ifndef STRATA_CORE_SERVER_MSG_H
#define STRATA_CORE_SERVER_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"
#include "core/rpc/rpc.h"
#include "core/server/srv_limits.h"
#include "core/server/strata.pb-c.h"

/* Opcodes of the service (rpc opcodes from RPC_OP_USER_MIN). */
enum msg_op {
	SOP_ENT = RPC_OP_USER_MIN,  /**< EntReq */
	SOP_OBJ,                    /**< ObjReq, data as bulk */
	SOP_IDX,                    /**< IdxReq */
	SOP_LIST,                   /**< ListReq */
	SOP_STATUS,                 /**< (empty) */
	SOP_CONF_GET,               /**< (empty): Reply.text */
	SOP_IDX_STATE,              /**< IdxReq (id): Reply.exists, .seq */
	SOP_METRICS,                /**< MetricsReq: Reply.text */
	SOP_CLIENT_STATS,           /**< ClientStats: Reply.text = ClientStats */
	SOP_LAYER,                  /**< LayerReq: Reply.text = LayerReply */
	SOP_END
};

/* Opcodes of remote device I/O between servers (RdevReq; served by
 * core/server/srv_rdev.c, called by core/server/cli_rdev.c).  Apart from the
 * engine-request opcodes so that both lists may grow. */
enum msg_rdev_op {
	SOP_RDEV_WRITE = RPC_OP_USER_MIN + 64, /**< RdevReq + OUT bulk */
	SOP_RDEV_READ,                         /**< RdevReq + IN bulk */
	SOP_RDEV_SYNC,                         /**< RdevReq, len 0 */
	SOP_RDEV_END
};
/* Management opcodes between a management client and a server. */
enum msg_mgmt_op {
	SOP_WALK = RPC_OP_USER_MIN + 80, /**< WalkReq: Reply.text = WalkStats */
	SOP_DEV = RPC_OP_USER_MIN + 81,  /**< DevReq: Reply.text = SDev */
};
/* Replication of the homes' metadata stores (ReplReq; srv_repl.c). */
enum msg_repl_op {
	SOP_REPL_SHIP = RPC_OP_USER_MIN + 128, /**< ReplReq + OUT bulk */
	SOP_REPL_SNAP = RPC_OP_USER_MIN + 129, /**< ReplReq + OUT bulk */
};

/* Function shipping (core/server/srv_isc.c): IscReq, answered with an
 * IscReply body. */
enum {
	SOP_ISC = RPC_OP_USER_MIN + 160,       /**< client -> home / replica */
	SOP_ISC_UNITS = RPC_OP_USER_MIN + 161, /**< home -> owner of units */
};
/* WalkReq.kind */
enum msg_walk_kind { SWK_REPAIR = 1, SWK_REBALANCE = 2, SWK_SCRUB = 3 };

/* DevReq.op */
enum msg_dev_op { SDV_FAIL = 1, SDV_REPLACE = 2, SDV_STATE = 3 };

/* LayerReq.op: a composite's layers (core/comp.h). */
enum msg_layer_op {
	SLY_ADD = 1,   /**< comp_layer_add(): attr, priority */
	SLY_DROP = 2,  /**< comp_layer_drop(): layer */
	SLY_LIST = 3,  /**< comp_layer_list() */
	SLY_MOVE = 4,  /**< comp_move(): start, nr, layer (the target) */
	SLY_OF = 5,    /**< comp_where(): blk */
	SLY_MAP = 6,   /**< comp_layer_map(): start, nr */
	SLY_SCRUB = 7, /**< comp_obj_scrub(): the object only */
};

/* Replica flags (EntReq.rflags, IdxReq.rflags). */
enum msg_rflags {
	/** A copy of an update to a further replica: Reply.seq of the first
	 *  replica is in IdxReq.seq. */
	SRF_REPLICA = 1u << 0,
	/** Server to server (catch-up pulls): no catch-up check. */
	SRF_INTERNAL = 1u << 1,
	/** Index entity op: the server keeps the replica record. */
	SRF_INDEX = 1u << 2,
	/** The client could not reach this server since its last answer:
	 *  verify the index against the peer replicas before serving. */
	SRF_VERIFY = 1u << 3,
	/** With SRF_INTERNAL on a NEXT: page the index's version entries
	 *  (records and tombstones with their (term, seq), catch-up merge). */
	SRF_VERSIONS = 1u << 4,
	/** On IDX_STATE, from the index's first replica: drop the index's
	 *  tombstones if its digest is still IdxReq.seq (every replica had
	 *  that digest: docs/cluster.md "Collecting tombstones"). */
	SRF_TOMB_GC = 1u << 5,
	/** IDX_STATE only: the replicas of IdxReq.behind (a mask of server
	 *  indices) missed the acknowledged update (IdxReq.term, .seq): a
	 *  server whose bit is set is behind (verifies, and serves nothing of
	 *  the index until it caught up); the others record the mark. */
	SRF_BEHIND = 1u << 6,
};
#define SRF_ALL (SRF_REPLICA | SRF_INTERNAL | SRF_INDEX | SRF_VERIFY | \
		 SRF_VERSIONS | SRF_TOMB_GC | SRF_BEHIND)

/* The protocol's limits (MSG_RDEV_MAX, MSG_TAG_MAX, MSG_RECS_INLINE,
 * MSG_REPLY_BUDGET, MSG_IDX_BYTES_MAX, MSG_LIST_MAX): srv_limits.h. */

/* Client statistics (SOP_CLIENT_STATS): op classes and latency buckets of
 * clovis/stats.c (bucket scheme 1), summed by index. */
#define MSG_CSTATS_OPS 14u
#define MSG_CSTATS_BUCKETS 312u
#define MSG_CSTATS_SCHEME 1u

struct msg_cstats_op {
	uint64_t co_count;          /**< the buckets' sum */
	uint64_t co_failed;
	uint64_t co_bytes;
	uint64_t co_sum_us;
	uint64_t co_max_us;
	uint64_t co_b[MSG_CSTATS_BUCKETS];
};

/** Statistics of clients: one push, or a server's sums (as saved in its
 *  store, system record "client_stats": cs_version first). */
struct msg_cstats {
	uint32_t cs_version;        /**< MSG_CSTATS_SCHEME */
	uint32_t cs_read_only;      /**< a request: push nothing */
	uint64_t cs_clients;        /**< pushes summed */
	struct msg_cstats_op cs_op[MSG_CSTATS_OPS];
};

/** Decode a ClientStats message into *out (checked whole: -EINVAL with a
 *  message naming the field); the server's request decoder and the
 *  client's reply reader share it. */
int msg_cstats_decode(const ClientStats *pb, struct msg_cstats *out);
/** The sums a CLIENT_STATS reply (its body) carries, decoded into *out;
 *  0, or a negative code with a message. */
int msg_cstats_reply(const void *body, size_t len, struct msg_cstats *out);
/** Encode c as a ClientStats message (malloc'd bytes). */
int msg_cstats_encode(const struct msg_cstats *c, bool read_only,
		      uint8_t **buf, size_t *len);

/** A decoded request and everything it owns. */
struct msg_req {
	struct eng_req mr_req;      /**< first: its er_ci is the commit item */
	uint32_t mr_op;             /**< SOP_* */
	uint32_t mr_rflags;         /**< SRF_* */
	uint64_t mr_incarnation;    /**< EntReq/IdxReq incarnation */
	uint64_t mr_seq;            /**< IdxReq.seq */
	uint64_t mr_term;           /**< IdxReq.term */
	uint64_t mr_behind;         /**< IdxReq.behind (IDX_STATE) */
	uint64_t mr_tag;            /**< IdxReq.tag (PUT, DEL): the client's
				     *   op tag, below 2^63; 0: none */
	uint64_t mr_fan;            /**< IdxReq.fan (PUT, DEL): the servers
				     *   whose replica gets its copy from
				     *   the ordering replica (srv_idx_fan.c;
				     *   bits beyond the cluster's servers
				     *   refused by the handler) */
	uint32_t mr_prio;           /**< MetricsReq.min_priority */
	bool mr_json;               /**< MetricsReq.json */
	bool mr_records;            /**< MetricsReq.records */
	uint32_t mr_max_records;    /**< MetricsReq.max_records (0: 10000) */
	struct msg_cstats *mr_cstats; /**< CLIENT_STATS, decoded (owned) */
	uint32_t mr_from;           /**< IdxReq.from (IDX_STATE): server
				     *   index + 1 of a verifying replica, 0:
				     *   not told (checked against the
				     *   cluster's servers by the handler) */
	/* objects */
	struct st_extvec mr_ext;
	uint64_t mr_blocks;         /**< blocks the extents cover */
	uint64_t mr_data_len;       /**< bytes of data (READ, WRITE) */
	bool mr_units;              /**< ObjReq.units (READ only) */
	/* indices */
	uint32_t mr_nr;             /**< records or slots */
	bool mr_start_null;         /**< NEXT from the first record */
	struct st_bufvec mr_keys;
	struct st_bufvec mr_vals;
	int32_t *mr_rcs;
	uint32_t *mr_klen;          /**< wire lengths (copied) */
	uint32_t *mr_vlen;
	uint64_t mr_recs_len;       /**< packed bytes the lengths add up to */
	uint8_t *mr_recs;           /**< packed records (owned) */
	/* LIST */
	struct st_id mr_after;
	bool mr_has_after;
	uint32_t mr_list_home;      /**< LIST: a home this server acts for */
	bool mr_has_list_home;
	/* LAYER (mr_req.er_id the object, mr_incarnation the handle's,
	 * mr_req.er_ent the sub-layout of an ADD: its layout fields only) */
	uint32_t mr_lop;            /**< SLY_* */
	uint32_t mr_priority;       /**< ADD */
	uint32_t mr_layer;          /**< DROP; MOVE: the target */
	uint64_t mr_start;          /**< MOVE: first block; OF: the block */
	uint64_t mr_count;          /**< MOVE: blocks from mr_start */
	/* storage */
	void *mr_arrays;            /**< one allocation for the vectors */
	void *mr_data;              /**< object data buffer (owned) */
	struct st_bufvec mr_databv;
	void *mr_databuf[1];
	size_t mr_datalen[1];
};

/** Attributes between meta_ent and the wire. */
void msg_attr_out(SAttr *a, SId *cont, const struct meta_ent *me);
void msg_attr_in(const SAttr *a, struct meta_ent *me);
void msg_id_out(SId *s, const struct st_id *id);
void msg_id_in(const SId *s, struct st_id *id);

/**
 * Decode the body of a request with opcode op into m (zeroed first).
 * bulk_len: bytes of the call's bulk.  Object WRITE data and packed index
 * records that came as bulk are not fetched here: m->mr_data_len or
 * m->mr_recs_len tell how much to pull (msg_req_recs_bind() after pulling
 * records into m->mr_recs).  A SOP_LAYER request (LayerReq) is checked
 * whole: op 1..7 (SLY_*), id present, and only the fields its op takes
 * set, each in range: ADD an attr with layout 1..3 (plain, pdclust,
 * mirror) and the other layout fields in the ranges of a CREATE, the
 * device, size, time, flag, record and container fields 0; DROP and MOVE
 * a layer (0 names none: the engine answers -ENOENT, as embedded); MOVE
 * and MAP 1.. blocks from a start, ending at most at block 2^48; OF a
 * block below 2^48.  Returns 0, or -EINVAL/-E2BIG/-EBADMSG/-ENOMEM
 * with a message; msg_req_fini() is safe after either.
 */
int msg_req_decode(struct msg_req *m, uint32_t op, const void *body,
		   size_t len, size_t bulk_len);

/**
 * Decode a remote device request of opcode op (SOP_RDEV_*) and check its
 * shape: home below CLU_SERVERS_MAX, off and len multiples of
 * LIM_ALLOC_UNIT, len 1..MSG_RDEV_MAX and equal to bulk_len for WRITE and
 * READ, len and bulk_len 0 for SYNC, off + len without overflow, and a
 * WRITE carrying its fence (deadline_ns and epoch not 0).  The
 * device and slice bounds are the handler's (they need the store).
 * Returns 0 and *out (free with rdev_req__free_unpacked(*out, NULL)), or
 * -EINVAL/-EBADMSG with a message naming the field; *out is then NULL.
 */
int msg_rdev_decode(uint32_t op, const void *body, size_t len,
		    size_t bulk_len, RdevReq **out);

/**
 * The slice check of a decoded RdevReq q on a server of nr_servers whose
 * device is dev_size bytes: home a server of the cluster (the receiver
 * itself too: the server acting for its home reads and writes its own
 * slice; srv_rdev.c admits such a write only while that slice is lent,
 * srv_rdev_own_lend()), and [off, off + len) inside that home's slice
 * (conf_slice_size()).  Returns
 * 0 and *base (the slice's first byte on the device), or -EINVAL with a
 * message naming the field.  Kept here, apart from the handler, so that
 * the fuzz target checks it (tests/fuzz/fuzz_srv_rdev.c).
 */
int msg_rdev_range(const RdevReq *q, uint32_t nr_servers,
		   uint64_t dev_size, uint64_t *base);

/**
 * Decode a SOP_REPL_SHIP or SOP_REPL_SNAP request to server self of a
 * cluster of nr_servers and check every field: home another server of
 * the cluster (not self); SHIP: bulk_len 0 (a probe) or
 * ENG_WSET_HDR..MSG_REPL_SET_MAX, seq >= 1, off, total and last 0; SNAP:
 * bulk_len 1..MSG_REPL_CHUNK, total 1..MSG_REPL_SNAP_MAX, off + bulk_len
 * <= total, last exactly when off + bulk_len == total.  Whether self is
 * one of home's standbys, and the write set itself (eng_wset_check), are
 * the handler's.  Returns 0 and *out (repl_req__free_unpacked(*out,
 * NULL)), or -EINVAL / -E2BIG / -EBADMSG with a message naming the field
 * ("repl.home"); *out is then NULL.
 */
int msg_repl_decode(uint32_t op, const void *body, size_t len,
		    size_t bulk_len, uint32_t self, uint32_t nr_servers,
		    ReplReq **out);

/** Decode a SOP_WALK body: 0 and *kind (SWK_*), or -EBADMSG / -EINVAL
 *  with a message naming walk.kind. */
int msg_walk_decode(const void *body, size_t len, uint32_t *kind);

/** Decode the WalkStats in the text of a SOP_WALK reply (resumed 0 or
 *  1, devices at most LIM_DEV_MAX).  0 and *out (walk_stats__free_unpacked(*out, NULL)), or -EBADMSG. */
int msg_walk_stats_decode(const Reply *rp, WalkStats **out);

/**
 * Decode a SOP_DEV body and check its shape: op 1..3 (SDV_*), owner below
 * CLU_SERVERS_MAX, dev below LIM_DEV_MAX, path 1..LIM_PATH_MAX bytes for a
 * REPLACE to the owner (self: the receiving server's index; another
 * server's REPLACE and FAIL and STATE carry no path).  Whether owner is a
 * server of the cluster and dev a device of its store is the handler's.
 * Returns 0 and *out (dev_req__free_unpacked(*out, NULL)), or -EBADMSG /
 * -EINVAL with a message naming the field; *out is then NULL.
 */
int msg_dev_decode(const void *body, size_t len, uint32_t self,
		   DevReq **out);

/** Decode the SDev in the text of a SOP_DEV reply (index below
 *  LIM_DEV_MAX, state a clovis_dev_state, path and driver set).  0 and
 *  *out (sdev__free_unpacked(*out, NULL)), or -EBADMSG. */
int msg_dev_info_decode(const Reply *rp, SDev **out);

/**
 * Decode the LayerReply in the text of a SOP_LAYER reply to a request of
 * op (SLY_*) and check it: at most COMP_LAYERS_MAX layers, each with an
 * id from 1 and its attributes (a plain, pdclust or mirror sub-layout in
 * range); an ADD's or OF's layer from 1; a MOVE's next past start and at
 * most end (the request's start + nr), its moved at most next - start; a
 * MAP's at most SRV_LAYER_MAP_RUNS runs, each of 1.. blocks of a layer
 * from 1, in block order without overlap, inside [start, next), next
 * past start and at most end; a SCRUB's figures present (and only
 * there), its unrepairable and its corrupt units each at most the units
 * it visited (a group past repair counts every unit it wanted).
 * 0 and *out (layer_reply__free_unpacked(*out, NULL)), or -EBADMSG with
 * a message naming the field; *out is then NULL.
 */
int msg_layer_reply_decode(const Reply *rp, uint32_t op, uint64_t start,
			   uint64_t end, LayerReply **out);

/** Point the key/value vectors into m->mr_recs (after a bulk pull). */
void msg_req_recs_bind(struct msg_req *m);

/** Free what m owns (NEXT results in the vectors included). */
void msg_req_fini(struct msg_req *m);

/** A growable encoded message (malloc'd; free(mb_p)). */
struct msg_buf {
	uint8_t *mb_p;
	size_t mb_len;
};

/** Pack a protobuf message into b.  0 or -ENOMEM. */
int msg_pack(const ProtobufCMessage *pb, struct msg_buf *b);

/**
 * Pack records [from, from + nr) of keys (and vals when non-NULL) into one
 * malloc'd buffer (keys first, then values) and their lengths into klen /
 * vlen (caller's arrays of nr).  NULL keys (NEXT's start) count as empty.
 * Returns 0 or -ENOMEM / -E2BIG (past MSG_IDX_BYTES_MAX).
 */
int msg_recs_pack(const struct st_bufvec *keys,
		  const struct st_bufvec *vals, uint32_t from, uint32_t nr,
		  uint32_t *klen, uint32_t *vlen, uint8_t **out,
		  size_t *out_len);

/**
 * Decode and check a reply body.  want_rcs: the number of per-record rcs the
 * request needs (0: any); the records' lengths must add up to recs.
 * Returns 0 and *out (free with reply__free_unpacked(*out, NULL)), or
 * -EBADMSG with a message.
 */
int msg_reply_decode(const void *body, size_t len, uint32_t want_rcs,
		     Reply **out);

#endif
