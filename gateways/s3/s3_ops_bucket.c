/*
 * s3_ops_bucket.c — the S3 operations on buckets: ListBuckets,
 * CreateBucket (with its CreateBucketConfiguration), DeleteBucket.  Their
 * routes are in s3_ops.c; the helpers they share with the other
 * operations are declared in s3_ops_internal.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <microhttpd.h>
#include <openssl/sha.h>

#include "gateways/s3/s3.h"
#include "gateways/s3/s3_bconf.h"
#include "gateways/s3/s3_cksum.h"
#include "gateways/s3/s3_ops_internal.h"
#include "gateways/s3/s3_view.h"

/* ------------------------------------------------------------- buckets */

/* A ListBuckets being made: its buckets, how many, the last. */
struct lb {
	struct s3_buf *lb_x;
	uint32_t lb_given, lb_max;
	bool lb_more;
	char lb_last[S3_BUCKET_MAX + 1];
	uint32_t lb_view;           /* the next view bucket to merge in */
};

/* One bucket of the requester (name of nl bytes) to the list. */
static void lb_add(struct lb *b, const char *name, size_t nl, uint64_t ctime)
{
	char t[40];

	if (b->lb_given == b->lb_max) {
		b->lb_more = true;
		return;
	}
	s3_time_iso(ctime, t);
	s3_buf_str(b->lb_x, "<Bucket><Name>");
	s3_buf_xml(b->lb_x, name, nl);
	s3_buf_printf(b->lb_x, "</Name><CreationDate>%s</CreationDate>"
		      "</Bucket>", t);
	b->lb_given++;
	if (nl < sizeof b->lb_last) {
		memcpy(b->lb_last, name, nl);
		b->lb_last[nl] = 0;
	}
}

/* The view buckets of the requester (s3_view.h, in name order) named after
 * start ("": from the first) and before limit (ll bytes; NULL: all). */
static void lb_views(struct lb *b, struct s3_req *rq, const char *start,
		     const char *limit, size_t ll)
{
	const struct s3_bucket *v;

	while (!b->lb_more && (v = s3_view_nth(b->lb_view)) != NULL) {
		size_t nl = strlen(v->bk_name);
		int c = limit == NULL ? -1 : memcmp(v->bk_name, limit,
						    nl < ll ? nl : ll);

		if (c > 0 || (c == 0 && nl >= ll))
			return;
		b->lb_view++;
		if (strcmp(v->bk_owner, rq->rq_user.u_name) == 0 &&
		    strcmp(v->bk_name, start) > 0)
			lb_add(b, v->bk_name, nl, v->bk_ctime_ns);
	}
}

/* ListBuckets: the requester's buckets in name order (the view buckets
 * merged in); max-buckets (1 to 10000) of them at most, then a
 * ContinuationToken (the last name given) when more follow, which
 * continuation-token resumes after. */
int s3_list_buckets(struct s3_req *rq)
{
	struct s3_buf x = {0};
	void *keys[64], *vals[64];
	size_t kls[64], vls[64];
	char start[S3_BUCKET_MAX + 1] = "", from[S3_BUCKET_MAX + 1] = "";
	const char *mb = s3_q(rq, "max-buckets");
	const char *ct = s3_q(rq, "continuation-token");
	struct lb b = {.lb_x = &x, .lb_max = 10000};
	uint32_t nr, k;
	bool first = true;
	int rc;

	rq->rq_op = "ListBuckets";
	if (!rq->rq_authed || rq->rq_user.u_name[0] == 0)
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied");
	if (mb != NULL) {
		char *e;
		unsigned long v = strtoul(mb, &e, 10);

		if (mb[0] < '0' || mb[0] > '9' || *e != 0 || v < 1 ||
		    v > 10000)
			return s3_reply_err(rq, 400, "InvalidArgument",
					    "max-buckets must be an integer "
					    "from 1 to 10000");
		b.lb_max = (uint32_t)v;
	}
	if (ct != NULL && ct[0] != 0) {
		if (strlen(ct) > S3_BUCKET_MAX)
			return s3_reply_err(rq, 400, "InvalidArgument", "The "
					    "continuation token provided is "
					    "incorrect");
		snprintf(start, sizeof start, "%s", ct);
		first = false;
	}
	memcpy(from, start, sizeof from);
	s3_buf_str(&x, XHDR "<ListAllMyBucketsResult xmlns=\"" XMLNS "\">");
	s3_buf_printf(&x, "<Owner><ID>%s</ID><DisplayName>%s</DisplayName>"
		      "</Owner><Buckets>", rq->rq_user.u_name,
		      rq->rq_user.u_name);
	do {
		nr = 64;
		rc = s3_idx_next(&s3g.g_buckets, first ? NULL : start,
				 strlen(start), !first, keys, kls, vals, vls,
				 &nr);
		if (rc != 0) {
			s3_buf_fini(&x);
			return s3_reply_clovis(rq, rc, "listing buckets");
		}
		first = false;
		for (k = 0; k < nr; k++) {
			const uint8_t *val;
			size_t pos = 0;
			uint32_t n;
			uint8_t tag;
			bool mine = false;
			uint64_t ctime = 0;

			while (s3_tlv_next(vals[k], vls[k], &pos, &tag, &val,
					   &n) == 1) {
				if (tag == T_OWNER)
					mine = n == strlen(rq->rq_user.u_name) &&
					       memcmp(val, rq->rq_user.u_name,
						      n) == 0;
				if (tag == T_MTIME && n == 8)
					ctime = s3_u64(val);
			}
			lb_views(&b, rq, from, keys[k], kls[k]);
			if (mine)
				lb_add(&b, keys[k], kls[k], ctime);
			if (kls[k] < sizeof start) {
				memcpy(start, keys[k], kls[k]);
				start[kls[k]] = 0;
			}
			free(keys[k]);
			free(vals[k]);
		}
	} while (nr == 64 && !b.lb_more);
	lb_views(&b, rq, from, NULL, 0);
	s3_buf_str(&x, "</Buckets>");
	if (b.lb_more) {
		s3_buf_str(&x, "<ContinuationToken>");
		s3_buf_xml(&x, b.lb_last, strlen(b.lb_last));
		s3_buf_str(&x, "</ContinuationToken>");
	}
	s3_buf_str(&x, "</ListAllMyBucketsResult>");
	return s3_reply_xml(rq, 200, &x);
}

/* x-amz-object-ownership of a CreateBucket into extra (T_OWNCTL), then
 * its ACL headers (T_ACL).  Replies on refusal: -EINVAL. */
static int create_bucket_extra(struct s3_req *rq, struct s3_buf *extra)
{
	static const char *const names[] = {
		"BucketOwnerEnforced", "BucketOwnerPreferred", "ObjectWriter",
	};
	const char *oo = s3_hdr(rq, "x-amz-object-ownership");
	struct s3_bucket tmp = {.bk_ownctl = S3_OWN_NONE};
	uint32_t i;

	snprintf(tmp.bk_owner, sizeof tmp.bk_owner, "%s", rq->rq_user.u_name);
	if (oo != NULL) {
		for (i = 0; i < 3 && strcmp(oo, names[i]) != 0; i++)
			;
		if (i == 3)
			return s3_reply_err(rq, 400, "InvalidArgument", "Invalid "
					    "x-amz-object-ownership '%.64s'",
					    oo), -EINVAL;
		tmp.bk_ownctl = S3_OWN_ENFORCED + i;
		s3_tlv_u64(extra, T_OWNCTL, tmp.bk_ownctl);
	}
	return s3_acl_req(rq, &tmp, rq->rq_user.u_name, extra);
}

/* The LocationConstraint of a CreateBucketConfiguration body into extra
 * (T_LOCATION; none: nothing).  Replies on refusal: -EINVAL. */
static int create_bucket_loc(struct s3_req *rq, struct s3_buf *extra)
{
	struct s3_xel *x, *l;
	size_t i;

	if (rq->rq_xml.b_len == 0)
		return 0;
	x = s3_xml_parse(rq->rq_xml.b_data, rq->rq_xml.b_len);
	if (x == NULL || strcmp(x->x_name, "CreateBucketConfiguration") != 0) {
		s3_xml_free(x);
		return s3_reply_err(rq, 400, "MalformedXML", "The XML you "
				    "provided was not well-formed or did not "
				    "validate against our published schema"),
		       -EINVAL;
	}
	l = s3_xml_child(x, "LocationConstraint");
	for (i = 0; l != NULL && i < l->x_text_len; i++)
		if (!isalnum((unsigned char)l->x_text[i]) &&
		    l->x_text[i] != '-' && l->x_text[i] != '_')
			break;
	if (l != NULL && (i < l->x_text_len || l->x_text_len > 63)) {
		s3_xml_free(x);
		return s3_reply_err(rq, 400, "InvalidLocationConstraint", "The "
				    "specified location-constraint is not "
				    "valid (letters, digits, '-', '_', at "
				    "most 63)"), -EINVAL;
	}
	if (l != NULL && l->x_text_len > 0)
		s3_tlv_add(extra, T_LOCATION, l->x_text,
			   (uint32_t)l->x_text_len);
	s3_xml_free(x);
	return 0;
}

/* Whether the fields extra of a CreateBucket of existing bucket b by its
 * owner ask for what b has: the same ACL (none sent: private) and, when
 * x-amz-object-ownership was sent, the same ownership. */
static bool recreate_same(struct s3_bucket *b, const struct s3_buf *extra)
{
	const char *acl = NULL, *cur;
	struct s3_buf priv = {0};
	const uint8_t *val;
	size_t pos = 0, al = 0, cl;
	uint32_t n, own = S3_OWN_NONE;
	uint8_t tag;
	bool same, own_sent = false;

	while (s3_tlv_next(extra->b_data, extra->b_len, &pos, &tag, &val,
			   &n) == 1) {
		if (tag == T_ACL) {
			acl = (const char *)val;
			al = n;
		} else if (tag == T_OWNCTL && n == 8) {
			own = (uint32_t)s3_u64(val);
			own_sent = true;
		}
	}
	s3_buf_printf(&priv, "FULL_CONTROL user %s\n", b->bk_owner);
	if (acl == NULL) {
		acl = priv.b_data;
		al = priv.b_len;
	}
	pthread_rwlock_rdlock(&b->bk_conf);
	cur = b->bk_acl != NULL && b->bk_acl_len > 0 ? b->bk_acl
						    : priv.b_data;
	cl = cur == priv.b_data ? priv.b_len : b->bk_acl_len;
	same = acl != NULL && cur != NULL && al == cl &&
	       memcmp(acl, cur, al) == 0 &&
	       (!own_sent || own == b->bk_ownctl);
	pthread_rwlock_unlock(&b->bk_conf);
	s3_buf_fini(&priv);
	return same;
}

static int create_bucket_end(struct s3_req *rq)
{
	struct s3_buf extra = {0};
	struct s3_bucket *b;
	char loc[80];
	int rc;

	if (create_bucket_loc(rq, &extra) != 0 ||
	    create_bucket_extra(rq, &extra) != 0) {
		s3_buf_fini(&extra);
		return 0;
	}
	rc = extra.b_oom ? -ENOMEM : s3_bucket_create(rq->rq_bucket,
						      rq->rq_user.u_name,
						      &extra);
	/* Re-created by its owner: 200 and nothing changed when it asks
	 * for what the bucket has (us-east-1 S3), else BucketAlreadyExists
	 * (an ACL or ownership it would not get); by anyone else:
	 * BucketAlreadyExists. */
	if (rc == -EEXIST && s3_bucket_get(rq->rq_bucket, &b) == 0 &&
	    strcmp(b->bk_owner, rq->rq_user.u_name) == 0 &&
	    recreate_same(b, &extra))
		rc = 0;
	s3_buf_fini(&extra);
	if (rc == -EEXIST)
		return s3_reply_err(rq, 409, "BucketAlreadyExists",
				    "The requested bucket name is not "
				    "available.");
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "creating the bucket");
	snprintf(loc, sizeof loc, "/%s", rq->rq_bucket);
	s3_reply_hdr(rq, "Location", loc);
	return s3_reply_empty(rq, 200);
}

int s3_create_bucket(struct s3_req *rq)
{
	rq->rq_op = "CreateBucket";
	if (!rq->rq_authed || rq->rq_user.u_name[0] == 0)
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied "
				    "(a bucket is created by a user)");
	if (!s3_bucket_name_ok(rq->rq_bucket) ||
	    strncmp(rq->rq_bucket, "xn--", 4) == 0 ||
	    (strlen(rq->rq_bucket) > 8 &&
	     strcmp(rq->rq_bucket + strlen(rq->rq_bucket) - 8, "-s3alias") == 0))
		return s3_reply_err(rq, 400, "InvalidBucketName",
				    "The specified bucket is not valid.");
	rq->rq_body = S3_BODY_XML;
	rq->rq_end = create_bucket_end;
	return 0;
}

int s3_delete_bucket(struct s3_req *rq)
{
	bool empty = false, any = false;
	int rc;

	rq->rq_op = "DeleteBucket";
	if (s3_need_bucket(rq, S3_P_OWNER, "s3:DeleteBucket") != 0)
		return 0;
	rc = s3_bucket_empty(rq->rq_bk, &empty);
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "checking the bucket");
	if (!empty)
		return s3_reply_err(rq, 409, "BucketNotEmpty", "The bucket you "
				    "tried to delete is not empty");
	rc = s3_uploads_of_bucket(rq->rq_bk, true, &any);
	if (rc == 0)
		rc = s3_bucket_delete(rq->rq_bk);
	if (rc == 0 && s3_bconf_drop(rq->rq_bk->bk_name) != 0)
		fprintf(stderr, "strata-s3: %s bucket %s deleted, its "
			"configuration documents not: they are ignored\n",
			rq->rq_id, rq->rq_bk->bk_name);
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "deleting the bucket");
	return s3_reply_empty(rq, 204);
}
