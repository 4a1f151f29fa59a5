/*
 * gateways/s3/s3_bconf.h — bucket configuration documents kept by the
 * gateway: versioning, CORS and lifecycle (s3_bconf.c).
 *
 * The router (s3_ops.c) sends a request on /bucket?versioning, ?cors or
 * ?lifecycle here once the bucket is found and the requester may act on it;
 * OPTIONS requests (CORS preflight) come here before authentication.
 * Every function that takes an s3_req sends the reply itself (s3_reply_*)
 * and returns what that reply function returned.
 */
#ifndef STRATA_S3_BCONF_H
#define STRATA_S3_BCONF_H

#include <stdbool.h>
#include <stdint.h>

struct s3_req;
struct s3_bucket;

/** True when sub (a query sub-resource name) is one of this file's. */
bool s3_bconf_owns(const char *sub);

/** GET, PUT or DELETE (rq->rq_method) of bucket sub-resource sub on b. */
int s3_bconf_op(struct s3_req *rq, struct s3_bucket *b, const char *sub);

/** The bucket named name is being deleted: drop its documents. 0 or -errno. */
int s3_bconf_drop(const char *name);

/** An OPTIONS request (CORS preflight) on /bucket or /bucket/key. */
int s3_cors_preflight(struct s3_req *rq);

/** A request with an Origin header on bucket b: add the CORS reply headers
 * its rules grant (none when no rule matches). */
void s3_cors_reply_hdrs(struct s3_req *rq, struct s3_bucket *b);

/** Versioning status of b: 0 never set, 1 Enabled, 2 Suspended. */
int s3_bconf_versioning(struct s3_bucket *b);

/** The lifecycle thread (expiration rules), started once the store is open
 * and stopped before it closes.  0 or -errno. */
int s3_lifecycle_start(void);
void s3_lifecycle_stop(void);

#endif
