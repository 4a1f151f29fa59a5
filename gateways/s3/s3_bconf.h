/*
 * gateways/s3/s3_bconf.h — bucket configuration documents kept by the
 * gateway: versioning, CORS and lifecycle (s3_bconf.c).
 *
 * The router (s3_ops.c) sends a request on /bucket?versioning, ?cors or
 * ?lifecycle here once the bucket is found and the requester may act on it;
 * OPTIONS requests (CORS preflight) come here before authentication.
 * Every function that takes an s3_req sends the reply itself (s3_reply_*)
 * and returns what that reply function returned (a PUT sets rq_body to
 * S3_BODY_XML and rq_end, and replies once the body is in).
 *
 * Storage: the system index "@s3.bconf" (opened or created on first use;
 * embedded and cluster mode alike), key bucket name "\0" kind
 * ("versioning", "cors", "lifecycle"), value a TLV record of the bucket's
 * creation time and the document as normalised XML.  A document whose
 * creation time is not the bucket's (left by an earlier bucket of the same
 * name) is treated as absent.  Versioning status and CORS rules are cached
 * per bucket (at most 1,024 buckets, each read again after 5 s: a change
 * through another gateway is seen within 5 s, one through this gateway at
 * once), so a bucket without CORS costs a table lookup per request that
 * has an Origin header.
 *
 * Versioning: object versions are not implemented.  Status Suspended is
 * stored (objects behave as in a never-versioned bucket, version id
 * "null"); Status Enabled and MfaDelete Enabled are refused 501
 * NotImplemented and change nothing.  Lifecycle: Expiration Days and Date
 * rules are applied by s3_lifecycle_*; the other actions are validated and
 * stored only.  README.md, "Bucket configuration", has the details.
 */
#ifndef STRATA_S3_BCONF_H
#define STRATA_S3_BCONF_H

#include <stdbool.h>
#include <stdint.h>

struct s3_req;
struct s3_bucket;

struct s3_buf;
struct s3_orec;

/**
 * Validate n bytes of XML as the body of a PUT of sub ("versioning",
 * "cors" or "lifecycle"; anything else is taken as versioning), touching
 * no store.  0: valid, and (norm non-NULL) the document as it is stored
 * appended to norm (nothing for a versioning body that sets no status).
 * -EINVAL: refused, with the reply in *status (400, or 501 for versioning
 * Enabled and MfaDelete Enabled; 500 when out of memory), *code (static
 * S3 error code) and msg (ml bytes, NUL-terminated).
 */
int s3_bconf_check(const char *sub, const char *xml, size_t n,
		   struct s3_buf *norm, uint32_t *status, const char **code,
		   char *msg, size_t ml);

/** True when sub (a query sub-resource name) is one of this file's. */
bool s3_bconf_owns(const char *sub);

/** GET, PUT or DELETE (rq->rq_method) of bucket sub-resource sub on b
 *  (found, and the requester allowed to act on it).  Other methods, and
 *  DELETE ?versioning, get 405 MethodNotAllowed. */
int s3_bconf_op(struct s3_req *rq, struct s3_bucket *b, const char *sub);

/** The bucket named name is being deleted: drop its documents (and what
 *  is cached of them).  0 or a Clovis error (then a document may stay,
 *  ignored by a later bucket of the name: its creation time differs). */
int s3_bconf_drop(const char *name);

/** An OPTIONS request (CORS preflight) on /bucket or /bucket/key, not
 *  authenticated: 200 with the Access-Control-Allow-* headers of the first
 *  rule matching Origin, Access-Control-Request-Method and every name of
 *  Access-Control-Request-Headers; 403 AccessForbidden when no rule, no
 *  configuration or no such bucket; 400 without Origin or method. */
int s3_cors_preflight(struct s3_req *rq);

/** A request with an Origin header on bucket b: add the CORS reply headers
 * of the first rule matching the origin and the method (that of
 * Access-Control-Request-Method when sent, as RGW; else the request's);
 * none when no rule matches. */
void s3_cors_reply_hdrs(struct s3_req *rq, struct s3_bucket *b);

/** Versioning status of b: 0 never set, 1 Enabled, 2 Suspended. */
int s3_bconf_versioning(struct s3_bucket *b);

/** The lifecycle thread (expiration rules), started once the store is open
 * and recovered, and stopped after the HTTP server and before the store
 * closes.  Every lifecycle-interval seconds (sc_lc_interval_s, 0: 3600) it
 * deletes the objects enabled Expiration rules match, as DeleteObject does,
 * at most 100,000 records examined and 10,000 deleted per pass.  0 or
 * -errno. */
int s3_lifecycle_start(void);
/** The x-amz-expiration reply header (expiry-date="RFC 1123 date",
 *  rule-id="ID") of the object key (kl bytes, record o) of b when an
 *  enabled Expiration rule of b's lifecycle applies to it (the earliest
 *  one); nothing otherwise.  For PutObject and GET/HEAD of an object. */
void s3_lifecycle_hdr(struct s3_req *rq, struct s3_bucket *b,
		      const char *key, size_t kl, const struct s3_orec *o);
void s3_lifecycle_stop(void);

#endif
