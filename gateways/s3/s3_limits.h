/*
 * s3_limits.h — the hard limits of strata-s3, each with its reason.
 *
 * Most are S3's own (key and bucket name lengths, request sizes, counts of
 * keys, parts, tags, rules): a request over one gets the error S3 gives.
 * The others bound what the gateway holds per request or per process
 * (buffers, caches, batches) and how long it waits.  Sizes fixed by a
 * format (checksum digests and their base64, TLV strides) stay beside the
 * format in s3.h and s3_cksum.h; the store's and Clovis's limits are in
 * clovis/clovis.h.
 */
#ifndef STRATA_S3_LIMITS_H
#define STRATA_S3_LIMITS_H

/* ------------------------------------------------- names and requests */

/** Longest S3 key (bytes of UTF-8), as in S3. */
#define S3_KEY_MAX 1024u
/** Keys longer than this are stored in the index under their first
 *  S3_KEY_HASHED_PREFIX bytes plus a SHA-256 of the whole key (the index
 *  key limit is CLOVIS_KEY_MAX); the full key lives in the record. */
#define S3_KEY_HASHED_PREFIX 440u
/** Bucket names: 3..63 characters, S3 rules. */
#define S3_BUCKET_MAX 63u
/** Largest XML request body (DeleteObjects, CompleteMultipartUpload). */
#define S3_XML_MAX (2u << 20)
/** Most keys in one DeleteObjects request, as in S3. */
#define S3_DELETE_MAX 1000u
/** Total bytes of request headers we accept (S3: 8 KiB). */
#define S3_HEADERS_MAX (8u << 10)
/** Total bytes of x-amz-meta-* names and values (S3: 2 KiB). */
#define S3_META_MAX 2048u
/** Largest single PUT (S3: 5 GiB). */
#define S3_PUT_MAX (5ull << 30)
/** Parts of one multipart upload (S3: 10,000). */
#define S3_PARTS_MAX 10000u
/** Query parameters of one request, and headers named in one signature:
 *  S3's requests use a handful; the arrays that sort them for signing
 *  live on the stack (s3_auth.c), and more is refused, not truncated. */
#define S3_QMAX 64
/** Bytes of trailer lines kept of an aws-chunked body (names and values):
 *  clients send an x-amz-checksum-* trailer and its signature (under
 *  200 bytes); 2 KiB leaves room without letting a client grow memory. */
#define S3_TRAILERS_MAX 2048

/** View buckets (posix-bucket) of one gateway: each is a mount of its
 *  namespace's container kept for the process (one per container) and a
 *  name ListBuckets merges in; a handful is what a site configures, and
 *  the table is read without a lock. */
#define S3_VIEWS_MAX 16u
/** Bytes of one posix-bucket value: a bucket name (63), '=', a container
 *  id (at most 37 in HI:LO form, or "@name"), ":" and a directory path;
 *  a config file line is at most 512 bytes. */
#define S3_VIEW_SPEC_MAX 512u
/** Tries of a view bucket's PUT when a directory of its key's path is
 *  removed by a POSIX client between the walk and the link (each try
 *  walks again): a race, not a loop. */
#define S3_VIEW_TRIES 3u
/** Entries per ns_readdir() of a view bucket's listing: one buffer of
 *  them per directory level being walked (272 bytes each), levels at most
 *  S3_KEY_MAX / 2 deep. */
#define S3_VIEW_READDIR 32

/* ----------------------------------------------------- data streaming */

/** Bytes of one object I/O op, and of each stream buffer (objects
 *  under S3_BIG), and of each read-ahead buffer of a reader. */
#define S3_CHUNK (1u << 20)
/** Objects of at least this many bytes are written in S3_BIG_CHUNK ops
 *  (fewer commits per byte; measured in docs/performance.md). */
#define S3_BIG (8u << 20)
#define S3_BIG_CHUNK (4u << 20)
/** Stream buffers (write ops in flight) per request: memory per upload is
 *  at most S3_NBUF * S3_BIG_CHUNK, whatever the object size. */
#define S3_NBUF 4u
/** Idle stream buffers kept for the next uploads (bytes): a buffer back
 *  from an upload is reused, not unmapped and faulted in again (page
 *  faults, zeroing, munmap: ~5 % of gateway CPU per 1 MiB PUT at 16
 *  clients before the pool, docs/performance.md "Issue 6: PUT x16 ...
 *  (branch s3put)"); the working set of 16 uploads of big objects
 *  (16 * S3_NBUF * S3_BIG_CHUNK).  Beyond it, buffers are unmapped. */
#define S3_WBUF_IDLE_MAX (256u << 20)
/** The hashing thread is handed received bytes at least this often. */
#define S3_HASH_STEP (128u << 10)

/* ------------------------------------------------------------ listing */

/** Records asked of one NEXT op while listing with a delimiter (the walk
 *  jumps past each common prefix, dropping the rest of the batch). */
#define S3_NEXT_BATCH 256u
/** Most records asked of one NEXT op while listing without a delimiter:
 *  a page of 1,000 keys (and the one that tells it is truncated) in one. */
#define S3_NEXT_MAX 1024u

/* ------------------------------------------------------------ tagging */

/** Most tags of an object, and the longest key and value (characters),
 *  as in S3. */
#define S3_TAGS_MAX 10u
#define S3_TAG_KEY_MAX 128u
#define S3_TAG_VALUE_MAX 256u
/** Tags of a bucket (S3: 50). */
#define S3_BUCKET_TAGS_MAX 50u

/* ----------------------------------------------------------- policies */

/** Statements of one policy, strings of one list, conditions of one
 *  statement: they bound the parsed policy a request is checked against;
 *  real policies have a few, and more is refused. */
#define S3_POL_STMT_MAX 100u
#define S3_POL_LIST_MAX 100u
#define S3_POL_COND_MAX 20u
/** Largest policy document (S3: 20 KiB). */
#define S3_POL_BYTES_MAX (20u << 10)
/** Most values a multi-valued condition key has (tag keys of a request:
 *  at most S3_TAGS_MAX, with room). */
#define S3_POL_VALS_MAX 16u

/* -------------------------------------- bucket configuration (s3_bconf.c) */

/** CORS rules of one bucket (S3: 100). */
#define BC_CORS_RULES_MAX 100u
/** Lifecycle rules of one bucket (S3: 1,000). */
#define BC_LC_RULES_MAX 1000u
/** Longest rule ID (S3: 255 characters). */
#define BC_ID_MAX 255u
/** Buckets whose versioning status and CORS rules are cached: the buckets
 *  a gateway serves at once; a miss costs one index GET. */
#define BC_CACHE_MAX 1024u
/** A cached entry is read again after this long: a change made through
 *  another gateway of the same store is seen within it. */
#define BC_CACHE_TTL_NS (5ull * 1000000000ull)
/** Records of bucket indices one lifecycle pass examines, and objects it
 *  deletes at most (the next pass goes on where it stopped): a pass stays
 *  short beside the requests it shares the store with. */
#define LC_SCAN_MAX 100000u
#define LC_DEL_MAX 10000u
/** Records asked of one NEXT op by the lifecycle walk (as S3_NEXT_BATCH). */
#define LC_BATCH 256u
/** Defaults of lifecycle-interval and lifecycle-day (seconds): a pass an
 *  hour, and S3's day, in which lifecycle rules count their Days. */
#define LC_INTERVAL_DEFAULT 3600u
#define LC_DAY_DEFAULT 86400u

/* ------------------------------------------------ credentials, signing */

/** Users of the credentials file (s3_auth.c keeps them in a static
 *  table): a gateway's accounts, not a directory; further lines are
 *  ignored. */
#define USERS_MAX 1024
/** Signing keys kept (s3_auth.c "Signing keys"): one per access key and
 *  day, so 32 covers the clients of a busy gateway; a miss costs four
 *  HMACs. */
#define SK_CACHE_NR 32u

/* ------------------------------------------ the store, settle, janitor */

/** Object DELETEs the janitor launches together (s3_store.c), whose
 *  in-flight records one index DEL then removes. */
#define JAN_BATCH 64u
/** Longest wait of a GET whose record names an object already gone (the
 *  settle of the dtxs in doubt, s3_ops_object.c): past it the GET answers
 *  503 SlowDown; 20 s is under the usual client timeouts. */
#define S3_GET_SETTLE_MS 20000u
/** The settle thread (s3_store_tx.c "settle"): one clovis_dtx_settle()
 *  waits at most this long, so that a stop is seen soon; the pause between failing tries
 *  doubles up to SETTLE_PAUSE_MAX_S; a failing settle is logged once per
 *  SETTLE_LOG_EVERY_S, not once per try. */
#define SETTLE_TRY_MS 3000u
#define SETTLE_PAUSE_MAX_S 8u
#define SETTLE_LOG_EVERY_S 30u

/* --------------------------------------------------------- the server */

/** Descriptors kept free of connections: the store's files, the
 *  listening socket, each HTTP thread's epoll and wake-up descriptors, the
 *  access log, credentials re-reads, and some slack. */
#define S3_FD_RESERVE 64u

#endif
