/*
 * gateways/s3/s3_bconf.c — bucket configuration documents (s3_bconf.h).
 * Not built yet: every request is refused 501 NotImplemented and changes
 * nothing.
 */
#include <string.h>

#include "gateways/s3/s3.h"
#include "gateways/s3/s3_bconf.h"

bool s3_bconf_owns(const char *sub)
{
	return strcmp(sub, "versioning") == 0 || strcmp(sub, "cors") == 0 ||
	       strcmp(sub, "lifecycle") == 0;
}

int s3_bconf_op(struct s3_req *rq, struct s3_bucket *b, const char *sub)
{
	return s3_reply_err(rq, 501, "NotImplemented", "bucket sub-resource "
			    "'%s' is not implemented by this gateway", sub);
}

int s3_bconf_drop(const char *name)
{
	return 0;
}

int s3_cors_preflight(struct s3_req *rq)
{
	return s3_reply_err(rq, 501, "NotImplemented", "CORS preflight is "
			    "not implemented by this gateway");
}

void s3_cors_reply_hdrs(struct s3_req *rq, struct s3_bucket *b)
{
}

int s3_bconf_versioning(struct s3_bucket *b)
{
	return 0;
}

int s3_lifecycle_start(void)
{
	return 0;
}

void s3_lifecycle_stop(void)
{
}
