/*
 * s3.h — shared parts of strata-s3, the S3 protocol gateway.
 *
 * The gateway is a Clovis client like any other: it includes only
 * clovis/clovis.h.  Files:
 *   s3_main.c   configuration, the libmicrohttpd server, request dispatch,
 *               body streaming, access log and per-request statistics;
 *   s3_auth.c   credentials file and AWS Signature V4 (headers, presigned);
 *   s3_store.c  the mapping onto Clovis: system indices, bucket records,
 *               the janitor, in-flight records; s3_store_tx.c atomic
 *               changes, recovery at start, the settle thread;
 *               s3_store_io.c object data streams (writer, reader);
 *   s3_ops.c    the operations' helpers and the router: (method, target,
 *               sub-resources) -> an operation, or 501 NotImplemented with
 *               nothing changed; the operations in s3_ops_bucket.c,
 *               s3_ops_object.c, s3_ops_list.c, s3_ops_multipart.c;
 *   s3_acl.c    ACLs, ownership controls, who may do what (s3_authz()),
 *               anonymous requests (s3_anon_ok() is in s3_ops.c);
 *   s3_policy.c bucket policies (json-c), their evaluation;
 *   s3_tagging.c tag sets of objects and buckets;
 *   s3_util.c   records (TLV), XML out and in, encodings, time;
 *   s3_view.c   view buckets: a directory of a POSIX namespace served as a
 *               bucket (s3_view.h); s3_view_list.c their listings;
 *   s3_limits.h every limit of the gateway, each with its reason.
 * README.md beside this file describes the mapping and its invariants.
 */
#ifndef STRATA_S3_H
#define STRATA_S3_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/evp.h>

#include "clovis/clovis.h"
#include "gateways/s3/s3_limits.h"

struct s3_rd;
struct s3_view;

/* ------------------------------------------------------- configuration */

struct s3_conf {
	char sc_listen[64];       /* address to bind; 127.0.0.1 */
	uint32_t sc_port;         /* 0 = ephemeral */
	char sc_port_file[256];   /* write the bound port here */
	char sc_data_dir[256];    /* embedded store */
	char sc_cluster[256];     /* cluster mode: cluster file */
	char sc_creds[256];       /* credentials file */
	char sc_access_log[256];  /* "" = none, "-" = stdout */
	char sc_stats_file[256];  /* per-op statistics written at exit */
	char sc_metrics[128];     /* /metrics listen [ADDR:]PORT ("": off) */
	char sc_host_suffix[128]; /* virtual-host style: BUCKET.SUFFIX */
	char sc_tls_cert[256];
	char sc_tls_key[256];
	uint32_t sc_inline_max;   /* objects up to this many bytes inline */
	uint32_t sc_layout;       /* CLOVIS_LAYOUT_* of new buckets' objects */
	uint64_t sc_dev_size;     /* embedded store made with this size */
	uint64_t sc_part_min;     /* smallest part but the last (5 MiB) */
	uint32_t sc_timeout_s;    /* idle connection timeout */
	uint32_t sc_skew_s;       /* allowed clock skew (900 s) */
	uint32_t sc_threads;      /* clovis workers */
	uint32_t sc_http_threads; /* HTTP threads (epoll, one pool) */
	uint32_t sc_max_conns;    /* connections open at once */
	uint32_t sc_max_conns_ip; /* of one client address; 0: no limit */
	char sc_gw_id[32];        /* names this gateway's in-flight records */
	uint32_t sc_etag;         /* S3_ETAG_*: single-part ETags */
	bool sc_meta_nvram;       /* a store made by this run: metadata on
				   * NVRAM (CLOVIS_CONF_META_NVRAM) */
	uint32_t sc_lc_interval_s; /* lifecycle pass every (0: 3600 s) */
	uint32_t sc_lc_day_s;     /* a lifecycle "day" (0: 86400 s; other
				   * values are for tests) */
	/* view buckets (s3_view.h): posix-bucket values as given
	 * ("NAME=CONTAINER_ID[:/DIR]", checked by s3_view_parse()), and
	 * their owner ("": the first user of the credentials file) */
	char sc_views[S3_VIEWS_MAX][S3_VIEW_SPEC_MAX];
	uint32_t sc_nviews;
	char sc_posix_owner[64];
};

/* ------------------------------------------------------------- records */

/** Tags of the TLV records kept in the indices. */
enum s3_tag {
	T_ID = 1,     /* 16 bytes: object id */
	T_SIZE = 2,   /* u64 bytes */
	T_MTIME = 3,  /* u64 ns */
	T_ETAG = 4,   /* hex, no quotes */
	T_CTYPE = 5,  /* content type */
	T_META = 6,   /* "name\0value" (name without x-amz-meta-) */
	T_KEY = 7,    /* full key (hashed index keys, uploads) */
	T_INLINE = 8, /* the object's bytes */
	T_PART = 9,   /* 16-byte id + u64 size: one part of a manifest */
	T_HDR = 10,   /* "name\0value": stored response headers */
	T_OWNER = 11, /* bucket owner / object or upload owner */
	T_CONT = 12,  /* 16 bytes: bucket container id */
	T_IDX = 13,   /* 16 bytes: bucket index id */
	T_LAYOUT = 14,/* u32 layout */
	T_BUCKET = 15,/* bucket name */
	T_UPLOAD = 16,/* upload id */
	T_BSHIFT = 17,/* u32 block shift */
	T_ACL = 18,   /* ACL grants, lines "PERM TYPE ID\n" (s3_acl.c) */
	T_TAGS = 19,  /* tag set: "key\0value\0" pairs */
	T_POLICY = 20,/* bucket policy, the JSON as sent */
	T_OWNCTL = 21,/* bucket ownership controls: u64 S3_OWN_* */
	T_LOCATION = 22,/* bucket LocationConstraint given at CreateBucket */
	T_PSUMS = 23, /* multipart checksums: u8 S3_SUM_* bit, u8 type, then
		       * each part's raw value (s3_cksum.h) */
	T_INITIATOR = 24,/* upload initiator, when not its owner (T_OWNER) */
	T_HOLE = 25,  /* empty: the object reads as T_SIZE zero bytes (a file
		       * of a view bucket with no data object, s3_view.h) */
};

/** A growable byte buffer. */
struct s3_buf {
	char *b_data;
	size_t b_len;
	size_t b_cap;
	bool b_oom;
};

void s3_buf_add(struct s3_buf *b, const void *p, size_t n);
void s3_buf_str(struct s3_buf *b, const char *s);
void s3_buf_printf(struct s3_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/** Append s with XML escaping. */
void s3_buf_xml(struct s3_buf *b, const char *s, size_t n);
void s3_buf_fini(struct s3_buf *b);

void s3_tlv_add(struct s3_buf *b, uint8_t tag, const void *p, uint32_t n);
void s3_tlv_u64(struct s3_buf *b, uint8_t tag, uint64_t v);
/** Iterate: *pos starts at 0; returns 1 and the next field, 0 at the end,
 *  -EINVAL when the record is malformed. */
int s3_tlv_next(const void *rec, size_t len, size_t *pos, uint8_t *tag,
		const uint8_t **val, uint32_t *vlen);
uint64_t s3_u64(const uint8_t *p);

/* ------------------------------------------------------------ objects */

/** Distance between consecutive T_PART values: 5-byte TLV head + 24. */
#define S3_PART_STRIDE 29u

/** A decoded object record (pointers into the record's value). */
struct s3_orec {
	bool or_has_id;
	struct clovis_id or_id;
	uint64_t or_size;
	uint64_t or_mtime_ns;
	char or_etag[64];
	const char *or_ctype; uint32_t or_ctype_len;
	const uint8_t *or_key; uint32_t or_key_len;      /* NULL: index key */
	const uint8_t *or_inline; uint32_t or_inline_len;
	bool or_is_inline;
	bool or_hole;              /* T_HOLE: or_size zero bytes, no object */
	uint32_t or_bshift;        /* T_BSHIFT: the object's block shift (0:
				    * not said; view buckets say it) */
	uint32_t or_nparts;
	const uint8_t *or_parts;   /* first part: id16 + size8, then every
				    * S3_PART_STRIDE bytes (consecutive T_PART
				    * fields) */
	const uint8_t *or_rec; size_t or_rec_len;        /* whole record */
	/* owner (T_OWNER; NULL: the bucket's owner), ACL grants (T_ACL;
	 * NULL: the owner's alone), tag set (T_TAGS; NULL: none) */
	const char *or_owner; uint32_t or_owner_len;
	const char *or_acl; uint32_t or_acl_len;
	const uint8_t *or_tags; uint32_t or_tags_len;
};

int s3_orec_decode(const void *v, size_t n, struct s3_orec *r);

/* ----------------------------------------------------------- checksums */
/*
 * Checksums of an object's bytes (s3_sum.c): the ETag's MD5, and the S3
 * additional checksums a client may send as x-amz-checksum-crc64nvme,
 * -crc32c, -crc32 (base64 of the big-endian value), -sha1 or -sha256
 * (base64 of the digest).  Each is verified when sent, stored with the
 * object's record (a kept header, T_HDR) and returned on the PUT and on a
 * GET or HEAD with x-amz-checksum-mode: ENABLED (s3_cksum.h).
 */
enum {
	S3_SUM_MD5 = 1u << 0,
	S3_SUM_CRC64NVME = 1u << 1,
	S3_SUM_CRC32C = 1u << 2,
	S3_SUM_CRC32 = 1u << 3,
	S3_SUM_SHA1 = 1u << 4,
	S3_SUM_SHA256 = 1u << 5,
};

/** The additional checksums (every S3_SUM_* but MD5), lowest bit first. */
#define S3_SUM_ADDL (S3_SUM_CRC64NVME | S3_SUM_CRC32C | S3_SUM_CRC32 | \
		     S3_SUM_SHA1 | S3_SUM_SHA256)
/** Bytes of the largest raw value (SHA-256), and of its base64 + NUL. */
#define S3_SUM_RAW_MAX 32
#define S3_SUM_B64_MAX 48

/** Running checksums (s_algs: the S3_SUM_* computed), or expected values. */
struct s3_sums {
	uint32_t s_algs;
	EVP_MD_CTX *s_md5;
	uint8_t s_md5v[16];     /* after s3_sums_final() */
	bool s_md5_done;
	uint64_t s_crc64;
	uint32_t s_crc32c, s_crc32;
	EVP_MD_CTX *s_sha1, *s_sha256;
	uint8_t s_sha1v[20], s_sha256v[32]; /* final after s3_sums_final() */
};

/** Running CRCs: crc is the value of the bytes before (0 for none). */
uint64_t s3_crc64nvme(uint64_t crc, const void *buf, size_t n);
uint32_t s3_crc32c(uint32_t crc, const void *buf, size_t n);
/** s3_crc64nvme() by its tables alone (no folding): the tests' reference. */
uint64_t s3_crc64nvme_tab(uint64_t crc, const void *buf, size_t n);
/** s3_crc64nvme() with 128-bit folding (PCLMULQDQ) only, never the
 *  512-bit path: the path of CPUs without VPCLMULQDQ/AVX-512, for tests. */
uint64_t s3_crc64nvme_narrow(uint64_t crc, const void *buf, size_t n);
/** Does s3_crc64nvme() fold buffers of 256 bytes and more with VPCLMULQDQ
 *  on 512-bit registers (the CPU has VPCLMULQDQ, AVX512F and AVX512VL)? */
bool s3_crc64nvme_wide(void);
uint32_t s3_crc32(uint32_t crc, const void *buf, size_t n);
/** Header name / S3 name of algorithm bit (one of S3_SUM_ADDL), or NULL. */
const char *s3_sum_hdr(uint32_t bit);
const char *s3_sum_name(uint32_t bit);
/** The S3_SUM_ADDL bit of a header name (case-insensitive), 0 when none. */
uint32_t s3_sum_of_hdr(const char *h);
/** Parse a header's base64 value into want (sets its bit): 0, -EINVAL. */
int s3_sum_parse(uint32_t bit, const char *b64, struct s3_sums *want);
/** The base64 of algorithm bit's value (NUL-terminated) into out, of
 *  S3_SUM_B64_MAX bytes (16 are enough for a CRC). */
void s3_sum_b64(const struct s3_sums *s, uint32_t bit, char *out);
/** Bytes of algorithm bit's raw value (4, 8, 20 or 32; 0: not one). */
uint32_t s3_sum_len(uint32_t bit);
/** Algorithm bit's raw value in s (big-endian for a CRC) into out, of
 *  S3_SUM_RAW_MAX bytes; returns its length. */
uint32_t s3_sum_raw(const struct s3_sums *s, uint32_t bit, uint8_t *out);
/** Start sums of algs (S3_SUM_*): 0 or -ENOMEM (then s3_sums_fini()). */
int s3_sums_init(struct s3_sums *s, uint32_t algs);
void s3_sums_update(struct s3_sums *s, const void *p, size_t n);
/** Finish the MD5 and SHAs (into s_*v); the CRCs are final at any time. */
void s3_sums_final(struct s3_sums *s);
/** The first checksum of want that got (final) does not match, 0 when
 *  all do. */
uint32_t s3_sums_mismatch(const struct s3_sums *got,
			  const struct s3_sums *want);
void s3_sums_fini(struct s3_sums *s);

/** etag option: how single-part objects' ETags are made. */
enum {
	S3_ETAG_MD5 = 0,   /* hex MD5 of the bytes (S3's) */
	S3_ETAG_CRC64 = 1, /* "c64-" + 16 hex digits of the CRC64-NVMe */
};

/* --------------------------------------------------------------- users */

struct s3_user {
	char u_name[64];
	char u_akey[64];
	char u_skey[128];
};

/** (Re)load the credentials file when it changed: lines "NAME ACCESS_KEY
 *  SECRET_KEY", '#' comments.  Returns 0 or -errno. */
int s3_creds_load(const char *path);
/** x-amz-content-sha256 of a body in signed aws-chunked form; with
 * "-TRAILER" after it the body ends in trailers signed too. */
#define S3_STREAM_SIGNED "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"

/**
 * The signature chain of a signed aws-chunked body (s3_auth.c).  Every
 * chunk header carries ";chunk-signature=SIG": the HMAC, with the
 * request's signing key, of "AWS4-HMAC-SHA256-PAYLOAD", the date, the
 * scope, the previous signature (the request's own for the first chunk),
 * the SHA-256 of nothing and the SHA-256 of the chunk's data; the final
 * chunk is the one of size 0.  Signed trailers end with
 * "x-amz-trailer-signature:SIG" over "AWS4-HMAC-SHA256-TRAILER", the date,
 * the scope, the last chunk's signature and the SHA-256 of the trailer
 * lines before it, each as "name:value\n".
 */
struct s3_ck_sig {
	uint8_t cs_key[32];     /* signing key of the request's scope */
	char cs_date[32];       /* x-amz-date of the request */
	char cs_scope[128];     /* DATE/REGION/SERVICE/aws4_request */
	char cs_prev[65];       /* the previous signature, hex */
	char cs_want[65];       /* the signature the chunk header sent */
	bool cs_trailer;        /* the -TRAILER form */
	bool cs_tsig;           /* its trailer signature came */
	EVP_MD_CTX *cs_sha;     /* SHA-256 of the chunk (or trailer) so far */
};

struct s3_req;
/** Check the signature want (hex; NULL: none sent) of the chunk, or with
 * trailer of the trailer lines, whose bytes went into rq_cks->cs_sha; on
 * success it becomes the previous signature and cs_sha starts again.
 * 0, or -EACCES when missing or not the one computed. */
int s3_auth_chunk(struct s3_req *rq, bool trailer, const char *want);
/** Free rq_cks (any time; NULL is fine). */
void s3_auth_chunk_fini(struct s3_req *rq);

/** Copy the user of access key akey into *u; -ENOENT if none. */
int s3_user_find(const char *akey, struct s3_user *u);
/** Copy the user named name (NULL or "": the file's first) into *u;
 *  -ENOENT if none. */
int s3_user_named(const char *name, struct s3_user *u);

/* ------------------------------------------------------------ requests */

/** One HTTP request being served. */
struct s3_req {
	void *rq_conn;              /* struct MHD_Connection */
	char rq_id[24];             /* x-amz-request-id */
	char *rq_raw;               /* raw request target */
	const char *rq_method;
	char *rq_path;              /* decoded path */
	size_t rq_path_len;
	uint32_t rq_nq;             /* query parameters, decoded */
	char *rq_qn[S3_QMAX], *rq_qv[S3_QMAX];
	bool rq_qhas[S3_QMAX];      /* had '=' */
	char rq_bucket[S3_BUCKET_MAX + 2];
	char *rq_key;               /* decoded key (NULL: none) */
	size_t rq_key_len;
	struct s3_user rq_user;
	bool rq_authed;
	char rq_payload_hash[80];   /* x-amz-content-sha256 value */
	const char *rq_op;          /* operation name for log and stats */
	uint32_t rq_status;
	uint64_t rq_in, rq_out;
	uint64_t rq_t0_ns;
	uint64_t rq_t0_mono_ns;   /* addb_now_ns() at its start: metrics */
	char rq_remote[64];
	/* request body */
	int rq_body;                /* S3_BODY_* */
	struct s3_buf rq_xml;       /* S3_BODY_XML */
	struct s3_wr *rq_wr;        /* S3_BODY_STREAM: the object writer */
	bool rq_chunked;            /* Content-Encoding aws-chunked */
	int rq_ck_state;
	uint64_t rq_ck_left;
	char rq_ck_line[512];
	size_t rq_ck_ll;
	struct s3_ck_sig *rq_cks;   /* signed aws-chunked: the chain */
	struct s3_buf rq_trailers;  /* aws-chunked trailers "name\0value\0" */
	EVP_MD_CTX *rq_sha;         /* payload hash being checked */
	bool rq_failed;             /* the body stream failed; reply ready */
	/* the operation */
	int (*rq_end)(struct s3_req *rq); /* runs when the body is in */
	void (*rq_cleanup)(struct s3_req *rq);
	void *rq_ctx;
	struct s3_bucket *rq_bk;
	/* the reply */
	void *rq_resp;              /* struct MHD_Response */
	struct s3_buf rq_hdrs;      /* "name\0value\0" pairs */
};

enum { S3_BODY_NONE = 0, S3_BODY_XML = 1, S3_BODY_STREAM = 2 };

/** The value of aws-chunked trailer name (case-insensitive) once the body
 * is in, or NULL. */
const char *s3_trailer(struct s3_req *rq, const char *name);

/* Replies (s3_main.c); each sets rq_resp once. */
void s3_reply_hdr(struct s3_req *rq, const char *name, const char *value);
int s3_reply_err(struct s3_req *rq, uint32_t status, const char *code,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/** Map a Clovis error to an S3 InternalError/ServiceUnavailable reply. */
int s3_reply_clovis(struct s3_req *rq, int rc, const char *what);
int s3_reply_xml(struct s3_req *rq, uint32_t status, struct s3_buf *body);
int s3_reply_empty(struct s3_req *rq, uint32_t status);
/** A streamed reply of len bytes served from reader r (taken over). */
int s3_reply_reader(struct s3_req *rq, uint32_t status, struct s3_rd *r,
		    uint64_t start, uint64_t len, bool head);

/* Operations (s3_ops.c). */
/** Route an authenticated request: reply now, or set rq_body/rq_end. */
int s3_route(struct s3_req *rq);
/** An anonymous request (no Authorization header, no signature in the
 * query): true when it may be routed with rq_authed false and an empty
 * rq_user — a CORS preflight, or a request naming a bucket, which the
 * route then decides: 404 NoSuchBucket when the bucket does not exist,
 * else s3_authz() (only AllUsers grants and policy statements for "*"
 * serve it; everything else is 403 AccessDenied).  False: the caller
 * refuses it. */
bool s3_anon_ok(struct s3_req *rq);

/* --------------------------------------------------- access control */
/*
 * Who may do what (s3_acl.c, s3_policy.c).  A request is decided, in
 * order: an explicit Deny of the bucket policy refuses it (for everyone,
 * the bucket owner too, except the owner's own Get/Put/DeleteBucketPolicy,
 * so that a policy can always be repaired); an object's owner may do
 * everything on that object; the bucket's owner everything in the bucket
 * but read an object another user owns or its ACL (READ, READ_ACP,
 * WRITE_ACP of such an object: as in S3, the object's ACL or the policy
 * must grant it); an Allow of the policy grants it; otherwise the ACL
 * grants (the object's for object reads and its ACL, the bucket's for
 * listing, writes of objects and the bucket's ACL) decide.  Anonymous
 * requests (rq_authed false, empty user name) are only ever granted by
 * AllUsers grants and policy statements whose principal is "*".
 */
enum {
	S3_P_READ = 1u << 0,       /* GetObject / ListBucket */
	S3_P_WRITE = 1u << 1,      /* PutObject, DeleteObject (bucket) */
	S3_P_READ_ACP = 1u << 2,   /* GetObjectAcl / GetBucketAcl */
	S3_P_WRITE_ACP = 1u << 3,  /* PutObjectAcl / PutBucketAcl */
	S3_P_FULL = 15u,           /* FULL_CONTROL */
	S3_P_OWNER = 1u << 4,      /* the owner only (no grant gives it) */
};

/** May the requester act on bucket b, key (kl bytes; NULL: the bucket
 *  itself), r (the key's record when the permission is the object's:
 *  READ, READ_ACP, WRITE_ACP of an object; else NULL) with permission
 *  perm (S3_P_*) as policy action action ("s3:GetObject")?  0, or
 *  -EACCES. */
int s3_authz(struct s3_req *rq, struct s3_bucket *b, const char *key,
	     size_t kl, const struct s3_orec *r, uint32_t perm,
	     const char *action);
/** The owner of object record r in bucket b (its T_OWNER, recorded by
 *  s3_new_owner() when written, unless the bucket enforces ownership:
 *  then, or when there is none, the bucket's owner); *n its length. */
const char *s3_obj_owner(const struct s3_bucket *b, const struct s3_orec *r,
			 size_t *n);
/** The owner of an object the request writes into bucket b (PutObject,
 *  CopyObject, CreateMultipartUpload): the bucket's owner when b is
 *  BucketOwnerEnforced, when it is BucketOwnerPreferred and the request
 *  sends x-amz-acl bucket-owner-full-control, or when the writer is
 *  anonymous; else the writer (as S3).  Points into rq or b. */
const char *s3_new_owner(struct s3_req *rq, struct s3_bucket *b);
/** The T_ACL field (grants) of a new object or bucket from the request's
 *  x-amz-acl (canned: the owner's FULL_CONTROL and the canned grants)
 *  or x-amz-grant-* headers (those grants alone, as S3: the owner keeps
 *  its rights without a grant), for owner, into rec (nothing added when
 *  neither is sent).  b: the bucket (NULL: a bucket
 *  being created).  Replies on refusal (400 InvalidArgument,
 *  AccessControlListNotSupported, 501 NotImplemented): -EINVAL. */
int s3_acl_req(struct s3_req *rq, const struct s3_bucket *b,
	       const char *owner, struct s3_buf *rec);
/** ?acl (GET, PUT) of the request's bucket, ?ownershipControls (GET,
 *  PUT, DELETE): the operations; each replies. */
int s3_bucket_acl(struct s3_req *rq);
int s3_object_acl(struct s3_req *rq);
int s3_bucket_ownership(struct s3_req *rq);

/** A bucket policy compiled (s3_policy.c). */
struct s3_pol;
/** Compile policy JSON (n bytes) of bucket: 0 and *out, or -EINVAL with
 *  why in msg (the reply is 400 MalformedPolicy). */
int s3_pol_compile(const char *json, size_t n, const char *bucket,
		   struct s3_pol **out, char *msg, size_t ml);
void s3_pol_free(struct s3_pol *p);
enum { S3_POL_NONE = 0, S3_POL_ALLOW = 1, S3_POL_DENY = 2 };
/** What a policy's conditions read of one request: NULL members are
 *  absent (every request key absent when pc_rq is NULL).  pc_obj: the
 *  object's record when the caller has it; else, when the policy reads
 *  s3:ExistingObjectTag/, the evaluation looks pc_key of pc_bk up. */
struct s3_pol_cx {
	struct s3_req *pc_rq;
	struct s3_bucket *pc_bk;
	const char *pc_key;
	size_t pc_kl;
	const struct s3_orec *pc_obj;
};
/** Evaluate p for the request cx (NULL: no request context), user (NULL
 *  or "": anonymous), action ("s3:GetObject") and resource ("bucket" or
 *  "bucket/key"): S3_POL_DENY when a Deny statement applies (principal,
 *  action, resource match and every condition holds), else S3_POL_ALLOW
 *  when an Allow one does, else S3_POL_NONE. */
int s3_pol_eval(const struct s3_pol *p, const struct s3_pol_cx *cx,
		const char *user, const char *action, const char *res,
		size_t resl);
/** Does p read s3:ExistingObjectTag/ (the object's record)? */
bool s3_pol_reads_object(const struct s3_pol *p);
/** ?policy (GET, PUT, DELETE), ?policyStatus (GET); each replies. */
int s3_bucket_policy(struct s3_req *rq);
int s3_bucket_policy_status(struct s3_req *rq);

/* ---------------------------------------------------------- tagging */

/** The T_TAGS field of a new object from x-amz-tagging (URL query form
 *  "k=v&k2=v2") into rec; nothing when absent.  Replies 400 InvalidTag
 *  (or InvalidArgument) on a bad set: -EINVAL. */
int s3_tags_req(struct s3_req *rq, struct s3_buf *rec);
/** Number of tags in a T_TAGS value. */
uint32_t s3_tags_count(const uint8_t *t, size_t n);
/** ?tagging (GET, PUT, DELETE) of an object or a bucket; each replies. */
int s3_object_tagging(struct s3_req *rq);
int s3_bucket_tagging(struct s3_req *rq);

/* Shared by the operations files (s3_ops*.c, s3_acl.c ...). */
/** The request's bucket into rq_bk, the requester allowed perm / action
 *  on it (s3_authz() with no object; perm 0: existence only, the caller
 *  checks the object).  Replies NoSuchBucket, AccessDenied: -errno. */
int s3_need_bucket(struct s3_req *rq, uint32_t perm, const char *action);
/** The request's bucket (rq_bk) and its key's record (*v, malloc()ed,
 *  decoded into *r), the requester allowed perm / action on the object
 *  (s3_authz()).  Replies NoSuchBucket, NoSuchKey, AccessDenied: -errno. */
int s3_need_object(struct s3_req *rq, uint32_t perm, const char *action,
		   void **v, size_t *vl, struct s3_orec *r);
/** Look up key k of bucket b: 0 with the record (malloc()ed) decoded into
 *  *r, -ENOENT, or the Clovis error. */
int s3_rec_get(struct s3_bucket *b, const char *k, size_t kl, void **v,
	       size_t *vl, struct s3_orec *r);
/** Replace field tag (T_ACL, T_TAGS) of key k's record (v NULL: drop it),
 *  under the key's lock, if the record still has etag; the object's data
 *  is untouched.  0, -ENOENT (gone or replaced), -EAGAIN (a change of the
 *  key is in doubt), or the Clovis error. */
int s3_rec_set(struct s3_bucket *b, const char *k, size_t kl,
	       const char *etag, uint8_t tag, const void *v, uint32_t n);
/** Reply for the -errno of s3_rec_get()/s3_rec_set() (NoSuchKey, SlowDown,
 *  InternalError). */
int s3_reply_rec(struct s3_req *rq, int rc, const char *what);
/** The parsed XML request body (rq_xml) whose root must be root: NULL
 *  after a 400 MalformedXML reply. */
struct s3_xel *s3_xml_body(struct s3_req *rq, const char *root);

/** Header value (case-insensitive name) or NULL. */
const char *s3_hdr(struct s3_req *rq, const char *name);
/** Call cb on every request header (name as sent, value), in order, while
 * it returns non-zero. */
void s3_hdr_each(struct s3_req *rq,
		 int (*cb)(void *cls, const char *name, const char *value),
		 void *cls);
/** Query parameter value, or NULL; *has tells if present at all. */
const char *s3_q(struct s3_req *rq, const char *name);
bool s3_qhas(struct s3_req *rq, const char *name);

/**
 * Authenticate the request: SigV4 (Authorization header, or a presigned
 * query with X-Amz-*) or SigV2 ("Authorization: AWS AKEY:SIG", or a
 * presigned query with AWSAccessKeyId, Signature and Expires).  Returns 0
 * and fills rq_user (rq_authed true); the signature parameters of a query
 * are then dropped from rq_qn/rq_qv.  A request with no signature at all
 * returns 0 as anonymous (rq_authed false, rq_user empty) only when
 * s3_anon_ok() says so, else AccessDenied "Access Denied"; a signature
 * that is there and fails is never taken as anonymous.  On failure sets
 * *code and msg (the S3 error code: AccessDenied — also "Request has
 * expired" —, SignatureDoesNotMatch, InvalidAccessKeyId,
 * RequestTimeTooSkewed, AuthorizationHeaderMalformed,
 * AuthorizationQueryParametersError, InvalidArgument, InvalidRequest) and
 * returns -EINVAL when the request is malformed (the reply is a 400) or
 * -EACCES when it is refused (a 403; X-Amz-Expires outside 1..604800 is
 * one), or -ENOMEM.  An OPTIONS request (CORS preflight) is never
 * authenticated: it returns 0 as anonymous, as AWS does.
 */
int s3_auth_check(struct s3_req *rq, const char **code, char *msg,
		  size_t msglen);

/* ----------------------------------------------------------- the store */

/** An open bucket (cached). */
struct s3_bucket {
	char bk_name[S3_BUCKET_MAX + 1];
	char bk_owner[64];
	struct clovis_container bk_cont;
	struct clovis_idx bk_idx;
	uint32_t bk_layout;
	uint64_t bk_ctime_ns;
	bool bk_dead;
	struct s3_bucket *bk_next;
	/* Sub-resources kept in the bucket record, cached here; read under
	 * bk_conf (read lock), replaced by s3_bucket_set() (write lock).
	 * Each is malloc()ed and owned by the bucket, NULL when not set. */
	pthread_rwlock_t bk_conf;
	char *bk_acl;              /* T_ACL grants (NULL: owner only) */
	uint32_t bk_acl_len;
	uint8_t *bk_tags;          /* T_TAGS pairs */
	uint32_t bk_tags_len;
	char *bk_policy;           /* T_POLICY JSON as sent */
	uint32_t bk_policy_len;
	struct s3_pol *bk_pol;     /* bk_policy compiled (s3_policy.c) */
	uint32_t bk_ownctl;        /* S3_OWN_* (0: never set) */
	/* a view bucket (s3_view.h): a directory of a POSIX namespace, no
	 * bucket record or index (bk_idx unused); NULL for every other */
	struct s3_view *bk_vw;
	uint32_t bk_bshift;        /* new objects' block shift (0: by size;
				    * a view bucket: its namespace's) */
	uint32_t bk_tier;          /* a view bucket: new objects' tier (its
				    * namespace's); others: flash */
};

/** Bucket ownership controls (ObjectOwnership). */
enum {
	S3_OWN_NONE = 0,           /* not set: ACLs apply (pre-2023 S3) */
	S3_OWN_ENFORCED = 1,       /* BucketOwnerEnforced: ACLs off */
	S3_OWN_PREFERRED = 2,      /* BucketOwnerPreferred */
	S3_OWN_WRITER = 3,         /* ObjectWriter */
};

struct s3_gw {
	struct s3_conf g_conf;
	struct clovis *g_cl;
	struct clovis_idx g_buckets;  /* name -> bucket record */
	struct clovis_idx g_inflight; /* gwid+obj id -> container id */
	struct clovis_idx g_uploads;  /* bucket\0key\0uploadid -> upload */
	struct clovis_idx g_parts;    /* uploadid + be32 part -> part */
	pthread_rwlock_t g_bk_lock;
	struct s3_bucket *g_bk_list;
	pthread_mutex_t g_key_locks[256];
	pthread_mutex_t g_bk_create_lock;
};

extern struct s3_gw s3g;

int s3_store_open(void);
void s3_store_close(void);
/**
 * Reclaim what interrupted uploads of an earlier run left (its in-flight
 * records).  Embedded mode: done before it returns (*objs_freed).  Cluster
 * mode: the records are read now (*queued) and reclaimed by the settle
 * thread once clovis_dtx_settle() returned 0 (a dtx the earlier run left in
 * doubt may still make a key reference one of their objects); meanwhile
 * s3_settle_held() is true.
 */
int s3_store_recover(uint64_t *objs_freed, uint64_t *queued);

/* The settle thread (cluster mode, s3_store_tx.c "settle"). */
/** A change of this gateway ended in doubt (s3_tx_doubt()): a mark that
 *  stays pending until a later clovis_dtx_settle() returned 0. */
uint64_t s3_settle_mark(void);
/** Is mark (from s3_settle_mark()) not settled yet? */
bool s3_settle_pending(uint64_t mark);
/** Is the earlier run not settled yet (cluster mode, after a start: its
 *  in-flight records are not reclaimed, and a dtx it left in doubt may
 *  still change any key it was changing: changes of keys wait)? */
bool s3_settle_held(void);

/*
 * Key lock stripes (s3_ops.c): every change of an object key (PUT, DELETE,
 * Complete, a lifecycle expiration) holds s3_key_lock() of its index key.
 * Under that lock, s3_key_in_doubt() is true while an earlier change of a
 * key of the stripe is in doubt (cluster mode: its dtx not surely decided
 * yet) or the earlier run is not settled: the change must not read the
 * record (503 SlowDown, or skip it).  s3_key_doubt_set() marks the stripe
 * after a change whose outcome is unknown (s3_tx_doubt()).
 */
pthread_mutex_t *s3_key_lock(const uint8_t *k, size_t kl);
bool s3_key_in_doubt(pthread_mutex_t *l);
void s3_key_doubt_set(pthread_mutex_t *l);

int s3_idx_get(struct clovis_idx *i, const void *k, size_t kl, void **v,
	       size_t *vl);
int s3_idx_put(struct clovis_idx *i, const void *k, size_t kl, const void *v,
	       size_t vl, bool overwrite);
int s3_idx_del(struct clovis_idx *i, const void *k, size_t kl);
/** Up to *nr records from start (NULL: the first), excluding start when
 *  excl.  Keys and values are malloc()ed; *nr set to how many. */
int s3_idx_next(struct clovis_idx *i, const void *start, size_t sl, bool excl,
		void **keys, size_t *klens, void **vals, size_t *vlens,
		uint32_t *nr);

void s3_rand_id(struct clovis_id *id);
int s3_bucket_get(const char *name, struct s3_bucket **out);
/** Create bucket name of owner; extra: more fields of its record (T_ACL,
 *  T_OWNCTL; NULL: none).  0, -EEXIST, or the Clovis error. */
int s3_bucket_create(const char *name, const char *owner,
		     const struct s3_buf *extra);
int s3_bucket_delete(struct s3_bucket *b);
int s3_bucket_empty(struct s3_bucket *b, bool *empty);
/**
 * Replace field tag (T_ACL, T_TAGS, T_POLICY, T_OWNCTL) of bucket b's
 * record with (v, n) (v NULL: remove it), one index PUT, then update the
 * cached copy in b (under bk_conf, with the policy compiled).  Bucket
 * record changes are serialised by g_bk_create_lock.  0, -ENOENT (the
 * bucket is gone), -EINVAL (a policy that does not compile), or the
 * Clovis error: nothing changed.
 */
int s3_bucket_set(struct s3_bucket *b, uint8_t tag, const void *v,
		  uint32_t n);

/**
 * The PUT and DELETE of a bucket document kept as field tag of the bucket
 * record (?tagging, ?policy, ?ownershipControls), once s3_need_bucket()
 * allowed the request: PUT takes its body whole and runs end() on it;
 * DELETE removes the field and answers 204 (or the error of "removing the
 * WHAT").  Returns true when the request was taken so, false for a GET,
 * which the caller answers.
 */
bool s3_bucket_doc_put_del(struct s3_req *rq, uint8_t tag,
			   int (*end)(struct s3_req *rq), const char *what);

/** Index key of S3 key k (hashed when long); returns its length. */
size_t s3_ikey(const char *k, size_t kl, uint8_t *out);

/** An object being written: streamed through S3_NBUF buffers. */
struct s3_wr {
	struct s3_bucket *w_bk;
	uint64_t w_expect;      /* bytes announced (UINT64_MAX unknown) */
	uint64_t w_len;         /* bytes received */
	bool w_inline;          /* kept in w_ibuf, no object */
	struct s3_buf w_ibuf;
	bool w_obj;             /* the object was created */
	struct clovis_obj w_o;
	uint32_t w_bshift;
	char *w_buf[S3_NBUF];
	struct clovis_op *w_op[S3_NBUF];
	uint64_t w_blk[S3_NBUF], w_nblk[S3_NBUF];
	void *w_bv[S3_NBUF]; size_t w_bl[S3_NBUF];
	struct clovis_extvec w_ev[S3_NBUF];
	struct clovis_bufvec w_bvec[S3_NBUF];
	uint32_t w_cur;         /* buffer being filled */
	size_t w_fill;
	uint64_t w_off;         /* object offset of w_buf[w_cur] */
	int w_rc;
	char w_msg[256];
	struct s3_sums w_sums;  /* of the bytes received */
	bool w_committed;
	uint32_t w_chunk;       /* bytes per write op */
	/* the in-flight record PUT and the object CREATE, launched together
	 * (one group commit) and waited for before the first write */
	struct clovis_op *w_cop[2];
	struct s3_buf w_irec;
	void *w_ikp, *w_ivp;
	size_t w_ikl, w_ivl;
	struct clovis_bufvec w_ikv, w_ivv;
	int32_t w_irc;
	bool w_cwaited;         /* wr_created() ran */
	uint64_t w_t[4];        /* profile: begin, created, body in, data
				 * applied (ordered mode) or stable */
	/* w_hold (set by the caller after s3_wr_begin(), ordered mode):
	 * the one write of an object of known size up to w_chunk is made
	 * but not launched (w_held), so that the change recording the
	 * object takes it as a dtx member (s3_tx_write()): data and record
	 * in one commit instead of two in series */
	bool w_hold, w_held;
	/* objects of S3_CHUNK and more (size known): the sums run on its
	 * own thread over the buffers, in stream order, up to the bytes
	 * received (posted every S3_HASH_STEP and at each full buffer), so
	 * it overlaps the receive and the writes with no copy; a buffer is
	 * reused once its write is STABLE and it is hashed */
	bool w_hasher;
	pthread_t w_hth;
	pthread_mutex_t w_hlock;
	pthread_cond_t w_hcond;
	uint64_t w_hposted, w_hdone; /* stream bytes handed over / hashed */
	uint64_t w_spos;        /* stream bytes copied into the buffers */
	uint64_t w_hmark;       /* w_hposted as the receive thread last set */
	bool w_hstop;
	uint8_t w_ikey[64];     /* in-flight record key */
	const uint8_t *w_rk, *w_pk; /* index key, part key (caller's) */
	size_t w_rkl, w_pkl;
};

/** algs: the checksums to compute (S3_SUM_*, in w_sums, final after
 *  s3_wr_finish()).  ikey: the index key the object will be recorded
 *  under; pkey: for a part, its parts-index key (both copied into the
 *  in-flight record). */
int s3_wr_begin(struct s3_wr *w, struct s3_bucket *b, uint64_t expect,
		uint32_t algs, const uint8_t *ikey, size_t ikl,
		const uint8_t *pkey, size_t pkl);
int s3_wr_data(struct s3_wr *w, const void *p, size_t n);
/** Flush everything; the sums are final.  On return 0 the data is
 *  applied: durable (cluster mode), or (embedded mode, ordered durability) durable no later
 *  than any update launched after the return; the writes are waited for
 *  STABLE by s3_wr_done() / s3_wr_keep() / s3_wr_abort(). */
int s3_wr_finish(struct s3_wr *w);
/** Drop an uncommitted object (delete it and its in-flight record). */
void s3_wr_abort(struct s3_wr *w);
/** After the record referencing the object is durable.  ifl_gone: its
 *  in-flight record was deleted with it (s3_tx_inflight_del()); else it
 *  is deleted after the reply. */
void s3_wr_done(struct s3_wr *w, bool ifl_gone);
/** The change recording the object has an unknown outcome: keep the
 *  object and its in-flight record (the restart rule settles them). */
void s3_wr_keep(struct s3_wr *w);

/** Record intent: object id must be freed unless the record under ikey
 *  (bucket index) or pkey (parts index) references it. */
int s3_inflight_put(struct s3_bucket *b, const struct clovis_id *id,
		    const uint8_t *ikey, size_t ikl, const uint8_t *pkey,
		    size_t pkl, uint8_t *rkey);
/** Before a record r is replaced or deleted: in-flight records for each of
 *  its objects, so that a crash after the change still frees them. */
int s3_orec_hold(struct s3_bucket *b, const struct s3_orec *r,
		 const uint8_t *ikey, size_t ikl, const uint8_t *pkey,
		 size_t pkl);
/** The change did not happen: drop those in-flight records. */
void s3_orec_unhold(const struct s3_orec *r);
/** The change is durable: delete r's objects, then their records (queued
 *  to the janitor thread: the caller does not wait). */
void s3_orec_free(struct s3_bucket *b, const struct s3_orec *r);
void s3_inflight_del(const uint8_t *rkey);
/** Queue the deletion of in-flight record rkey (after a reply; batched by
 *  the janitor thread).  A crash before it runs leaves the record to
 *  s3_store_recover(), which finds its object referenced and keeps it. */
void s3_inflight_del_later(const uint8_t *rkey);
/** Wait until every queued janitor job (s3_orec_free, deferred in-flight
 *  record deletions) is done. */
void s3_janitor_flush(void);
/*
 * An atomic change (s3_store_tx.c): index PUTs and DELs, DELETEs of the
 * objects of a replaced or deleted record, and DELs of in-flight records,
 * made visible and durable together by one Clovis dtx (embedded mode: one
 * local atomic commit; cluster mode: a two-phase commit).  The first PUT or
 * DEL added is the primary change (the one a client sees).  Policy, in
 * s3_tx_commit(): a change that is a single index update (plus in-flight
 * DELs, in cluster mode, where a dtx costs a two-phase commit) runs as that
 * update alone, the in-flight DELs after the reply (janitor); everything
 * else is one dtx.  A dtx the cluster refuses as too large (-E2BIG: the
 * PREPARE payload limit) is redone the pre-dtx way: in-flight records hold
 * the objects to free, the index updates run in order, the janitor frees
 * the objects after.
 */
struct s3_tx;

/** A new empty change; NULL when out of memory. */
struct s3_tx *s3_tx_new(void);
/** Add a PUT (OVERWRITE) / DEL of one record of index i (copied). */
int s3_tx_put(struct s3_tx *t, struct clovis_idx *i, const void *k,
	      size_t kl, const void *v, size_t vl);
int s3_tx_del(struct s3_tx *t, struct clovis_idx *i, const void *k,
	      size_t kl);
/** Delete the objects record r holds (in bucket b).  ikey / pkey: the
 *  bucket-index / parts-index key that referenced them (named by the
 *  in-flight records of the fallback; NULL: freed whatever references). */
int s3_tx_free(struct s3_tx *t, struct s3_bucket *b, const struct s3_orec *r,
	       const uint8_t *ikey, size_t ikl, const uint8_t *pkey,
	       size_t pkl);
/** Delete the in-flight record rkey with the change (the object it names
 *  is referenced by the change's primary record). */
int s3_tx_inflight_del(struct s3_tx *t, const uint8_t *rkey);
/** Add the write w holds (w_held: made, not launched) to the change: it is
 *  launched as the first member of the change's dtx, and applied and made
 *  durable with it (a failed change leaves no data).  0 when w holds none.
 *  The op stays w's (s3_wr_done/keep/abort wait for it and free it). */
int s3_tx_write(struct s3_tx *t, const struct s3_wr *w);
/**
 * Apply t and free it.  Returns 0 (applied, durable), or the failure:
 * nothing applied, except for s3_tx_doubt(rc) codes (cluster mode: the
 * outcome is unknown, -ETIMEDOUT, or committed but not yet applied
 * everywhere, -EINPROGRESS): then the change is applied entirely or not at
 * all, decided once clovis_dtx_settle() returns 0 (the settle thread), and
 * what it leaves unreferenced is reclaimed by the restart rule
 * (s3_store_recover()).
 */
int s3_tx_commit(struct s3_tx *t);
/** Free t unapplied. */
void s3_tx_drop(struct s3_tx *t);
/** rc of s3_tx_commit() (or of an index op) leaves the outcome unknown. */
bool s3_tx_doubt(int rc);

/** Profile PUT stages to stderr (STRATA_S3_PROFILE set in the environment). */
extern bool s3_profile;

/** A reader of an object's bytes (inline, one object, or parts). */
struct s3_rd {
	struct s3_bucket *r_bk;
	void *r_rec; size_t r_rec_len; /* owned copy of the record */
	struct s3_orec r_or;
	uint64_t r_start, r_end;       /* byte range [start, end) to serve */
	uint32_t r_chunk;              /* bytes per read op */
	char *r_buf;                   /* r_chunk bytes */
	uint64_t r_bstart, r_blen;     /* object bytes r_buf holds */
	/* read-ahead: the next chunk of the same object, in flight while
	 * r_buf is being sent */
	char *r_pbuf;
	uint64_t r_pstart, r_plen;
	struct clovis_op *r_pop;
	uint64_t r_pblk, r_pnblk;
	void *r_pbv; size_t r_pbl;
	struct clovis_extvec r_pev;
	struct clovis_bufvec r_pbvec;
	struct clovis_obj r_o;
	int r_part;                    /* part open in r_o, -1 none */
	uint64_t r_part_off;           /* object offset of that part */
	int r_rc;
};

int s3_rd_open(struct s3_rd *r, struct s3_bucket *b, void *rec, size_t len);
/** Open the object holding byte off (before the reply is started): 0
 *  (also for an inline record), -ENOENT when the record names an object
 *  that is gone (a change of the key in progress or in doubt), or the
 *  Clovis error. */
int s3_rd_first(struct s3_rd *r, uint64_t off);
/** Read object bytes [off, off+n) in one op into the reader's buffer,
 *  *p: their first byte (valid until s3_rd_close()); -EAGAIN when they
 *  need more than one op (inline, multipart, or over a chunk boundary). */
int s3_rd_span(struct s3_rd *r, uint64_t off, uint64_t n, const char **p);
/** Copy object bytes [off, off+n) into out; returns bytes or -errno. */
long s3_rd_read(struct s3_rd *r, uint64_t off, char *out, size_t n);
void s3_rd_close(struct s3_rd *r);

/* ---------------------------------------------------------------- misc */

void s3_hex(const uint8_t *p, size_t n, char *out);
int s3_unhex(const char *s, size_t n, uint8_t *out);
size_t s3_b64enc(const uint8_t *p, size_t n, char *out);
long s3_b64dec(const char *s, size_t n, uint8_t *out);
/** Percent-decode; returns length or -1. */
long s3_urldec(const char *s, size_t n, char *out, bool plus_space);
/** Percent-encode all but unreserved (and '/' when keep_slash). */
void s3_urlenc(struct s3_buf *b, const char *s, size_t n, bool keep_slash);
void s3_time_iso(uint64_t ns, char *out);   /* 2006-02-03T16:45:09.000Z; out >= 48 */
void s3_time_http(uint64_t ns, char *out);  /* RFC 1123 */
/** Parse an RFC 1123 / ISO 8601 date; returns 0 and seconds. */
int s3_time_parse(const char *s, int64_t *sec);
uint64_t s3_now_ns(void);

/** A minimal XML element tree for request bodies. */
struct s3_xel {
	char *x_name;
	char *x_text;
	size_t x_text_len;
	struct s3_xel *x_child, *x_next;
};
/** Parse; returns NULL when the text is not well-formed XML. */
struct s3_xel *s3_xml_parse(const char *s, size_t n);
void s3_xml_free(struct s3_xel *x);
struct s3_xel *s3_xml_child(struct s3_xel *x, const char *name);

#endif /* STRATA_S3_H */
