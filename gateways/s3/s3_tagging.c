/*
 * s3_tagging.c — tag sets of objects and buckets (?tagging, x-amz-tagging,
 * x-amz-tagging-count).  A tag set is kept in its record as T_TAGS:
 * "key\0value\0" pairs sorted by key (bytes), the order S3 returns them
 * in.  Limits as S3: 10 tags an object (50 a bucket), keys of 1 to 128
 * characters, values up to 256, keys unique and not starting with
 * "aws:"; a set past them is refused with 400 InvalidTag and changes
 * nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateways/s3/s3.h"

#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XHDR "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* Characters (UTF-8 code points) of s[0..n). */
static size_t utf8_chars(const char *s, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xC0) != 0x80;
	return c;
}

/* Add tag (k, v) to set t after checking it: NULL, or why it is bad. */
static const char *tag_add(struct s3_buf *t, const char *k, size_t kl,
			   const char *v, size_t vl)
{
	size_t pos = 0, at = (size_t)-1, add = kl + vl + 2;

	if (kl == 0 || utf8_chars(k, kl) > S3_TAG_KEY_MAX)
		return "a tag key must have 1 to 128 characters";
	if (utf8_chars(v, vl) > S3_TAG_VALUE_MAX)
		return "a tag value must have at most 256 characters";
	if (memchr(k, 0, kl) != NULL || memchr(v, 0, vl) != NULL)
		return "a tag key or value has a NUL character";
	if (kl >= 4 && memcmp(k, "aws:", 4) == 0)
		return "tag keys starting with 'aws:' are reserved";
	while (pos < t->b_len) {
		const char *ek = t->b_data + pos;
		size_t ekl = strlen(ek);

		int c = memcmp(ek, k, ekl < kl ? ekl : kl);

		if (ekl == kl && c == 0)
			return "tag keys must be unique";
		if (at == (size_t)-1 && (c > 0 || (c == 0 && ekl > kl)))
			at = pos;
		pos += ekl + 1;
		pos += strlen(t->b_data + pos) + 1;
	}
	/* kept sorted by key (bytes), the order S3 returns a set in */
	s3_buf_add(t, k, kl);
	s3_buf_add(t, "", 1);
	s3_buf_add(t, v, vl);
	s3_buf_add(t, "", 1);
	if (at != (size_t)-1 && !t->b_oom) {
		char *d = t->b_data, *tmp = malloc(add);

		if (tmp == NULL)
			return "out of memory";
		memcpy(tmp, d + t->b_len - add, add);
		memmove(d + at + add, d + at, t->b_len - add - at);
		memcpy(d + at, tmp, add);
		free(tmp);
	}
	return NULL;
}

uint32_t s3_tags_count(const uint8_t *t, size_t n)
{
	uint32_t z = 0;
	size_t i;

	for (i = 0; i < n; i++)
		z += t[i] == 0;
	return z / 2;
}

static int reply_bad(struct s3_req *rq, const char *why)
{
	return s3_reply_err(rq, 400, "InvalidTag", "The tag set is not valid: "
			    "%s", why), -EINVAL;
}

int s3_tags_req(struct s3_req *rq, struct s3_buf *rec)
{
	const char *h = s3_hdr(rq, "x-amz-tagging"), *why = NULL;
	struct s3_buf t = {0};
	uint32_t count = 0;
	char *k = NULL, *v = NULL;

	if (h == NULL)
		return 0;
	k = malloc(strlen(h) + 1);
	v = malloc(strlen(h) + 1);
	while (k != NULL && v != NULL && *h != 0 && why == NULL) {
		size_t n = strcspn(h, "&");
		const char *eq = memchr(h, '=', n);
		long kl, vl;

		if (n == 0) {
			h++;
			continue;
		}
		kl = s3_urldec(h, eq ? (size_t)(eq - h) : n, k, true);
		vl = eq ? s3_urldec(eq + 1, n - (size_t)(eq - h) - 1, v, true)
			: 0;
		if (kl < 0 || vl < 0)
			why = "x-amz-tagging is not URL-encoded key=value pairs";
		else if (++count > S3_TAGS_MAX)
			why = "an object has at most 10 tags";
		else
			why = tag_add(&t, k, (size_t)kl, v, (size_t)vl);
		h += n;
	}
	free(k);
	free(v);
	if (why == NULL && (t.b_oom || k == NULL || v == NULL))
		why = "out of memory";
	if (why == NULL && t.b_len > 0)
		s3_tlv_add(rec, T_TAGS, t.b_data, (uint32_t)t.b_len);
	s3_buf_fini(&t);
	return why != NULL ? reply_bad(rq, why) : 0;
}

/* A Tagging document (rq_xml) into set t, at most max tags.  Replies on
 * refusal: -EINVAL. */
static int tags_of_body(struct s3_req *rq, uint32_t max, struct s3_buf *t)
{
	struct s3_xel *x = s3_xml_body(rq, "Tagging"), *set, *g;
	const char *why = NULL;
	uint32_t count = 0;

	if (x == NULL)
		return -EINVAL;
	set = s3_xml_child(x, "TagSet");
	if (set == NULL) {
		s3_xml_free(x);
		return s3_reply_err(rq, 400, "MalformedXML", "a Tagging "
				    "document needs a TagSet"), -EINVAL;
	}
	for (g = set->x_child; g != NULL && why == NULL; g = g->x_next) {
		struct s3_xel *k = s3_xml_child(g, "Key"),
			      *v = s3_xml_child(g, "Value");

		if (strcmp(g->x_name, "Tag") != 0)
			continue;
		if (k == NULL || v == NULL)
			why = "each Tag needs a Key and a Value";
		else if (++count > max)
			why = max == S3_TAGS_MAX ? "an object has at most 10 "
			      "tags" : "a bucket has at most 50 tags";
		else
			why = tag_add(t, k->x_text, k->x_text_len, v->x_text,
				      v->x_text_len);
	}
	s3_xml_free(x);
	return why != NULL ? reply_bad(rq, why) : 0;
}

/* The Tagging document of set (n bytes). */
static int reply_tags(struct s3_req *rq, const uint8_t *set, size_t n)
{
	struct s3_buf x = {0};
	size_t pos = 0;

	s3_buf_str(&x, XHDR "<Tagging xmlns=\"" XMLNS "\"><TagSet>");
	while (pos < n) {
		const char *k = (const char *)set + pos;
		size_t kl = strnlen(k, n - pos), vl;

		if (pos + kl + 1 >= n)
			break;
		vl = strnlen(k + kl + 1, n - pos - kl - 1);
		s3_buf_str(&x, "<Tag><Key>");
		s3_buf_xml(&x, k, kl);
		s3_buf_str(&x, "</Key><Value>");
		s3_buf_xml(&x, k + kl + 1, vl);
		s3_buf_str(&x, "</Value></Tag>");
		pos += kl + vl + 2;
	}
	s3_buf_str(&x, "</TagSet></Tagging>");
	return s3_reply_xml(rq, 200, &x);
}

static int object_tagging_end(struct s3_req *rq)
{
	struct s3_buf t = {0};
	struct s3_orec r;
	void *v = NULL;
	size_t vl;
	int rc;

	if (tags_of_body(rq, S3_TAGS_MAX, &t) != 0 ||
	    s3_need_object(rq, S3_P_WRITE, "s3:PutObjectTagging", &v, &vl,
			   &r) != 0)
		goto out;
	rc = t.b_oom ? -ENOMEM
		     : s3_rec_set(rq->rq_bk, rq->rq_key, rq->rq_key_len,
				  r.or_etag, T_TAGS, t.b_len ? t.b_data : NULL,
				  (uint32_t)t.b_len);
	if (rc != 0)
		s3_reply_rec(rq, rc, "recording the tags");
	else
		s3_reply_empty(rq, 200);
out:
	s3_buf_fini(&t);
	free(v);
	return 0;
}

int s3_object_tagging(struct s3_req *rq)
{
	const char *m = rq->rq_method;
	struct s3_orec r;
	void *v;
	size_t vl;
	int rc;

	rq->rq_op = m[0] == 'G' ? "GetObjectTagging" : m[0] == 'P'
		    ? "PutObjectTagging" : "DeleteObjectTagging";
	if (m[0] == 'P') {
		if (s3_need_bucket(rq, 0, NULL) != 0)
			return 0;
		rq->rq_body = S3_BODY_XML;
		rq->rq_end = object_tagging_end;
		return 0;
	}
	if (s3_need_object(rq, m[0] == 'G' ? S3_P_READ : S3_P_WRITE,
			   m[0] == 'G' ? "s3:GetObjectTagging"
			   : "s3:DeleteObjectTagging", &v, &vl, &r) != 0)
		return 0;
	if (m[0] == 'G') {
		rc = reply_tags(rq, r.or_tags, r.or_tags ? r.or_tags_len : 0);
		free(v);
		return rc;
	}
	rc = r.or_tags == NULL ? 0
	     : s3_rec_set(rq->rq_bk, rq->rq_key, rq->rq_key_len, r.or_etag,
			  T_TAGS, NULL, 0);
	free(v);
	if (rc != 0)
		return s3_reply_rec(rq, rc, "removing the tags");
	return s3_reply_empty(rq, 204);
}

static int bucket_tagging_end(struct s3_req *rq)
{
	struct s3_buf t = {0};
	int rc = 0;

	if (tags_of_body(rq, S3_BUCKET_TAGS_MAX, &t) == 0) {
		rc = t.b_oom ? -ENOMEM
			     : s3_bucket_set(rq->rq_bk, T_TAGS, t.b_len ?
					     t.b_data : NULL,
					     (uint32_t)t.b_len);
		if (rc != 0)
			s3_reply_rec(rq, rc, "recording the bucket tags");
		else
			s3_reply_empty(rq, 204);
	}
	s3_buf_fini(&t);
	return 0;
}

int s3_bucket_tagging(struct s3_req *rq)
{
	const char *m = rq->rq_method;
	uint8_t *copy = NULL;
	size_t n = 0;
	int rc;

	rq->rq_op = m[0] == 'G' ? "GetBucketTagging" : m[0] == 'P'
		    ? "PutBucketTagging" : "DeleteBucketTagging";
	if (s3_need_bucket(rq, S3_P_OWNER, m[0] == 'G' ? "s3:GetBucketTagging"
			   : "s3:PutBucketTagging") != 0)
		return 0;
	if (s3_bucket_doc_put_del(rq, T_TAGS, bucket_tagging_end,
				  "bucket tags"))
		return 0;
	pthread_rwlock_rdlock(&rq->rq_bk->bk_conf);
	if (rq->rq_bk->bk_tags != NULL) {
		n = rq->rq_bk->bk_tags_len;
		copy = malloc(n + 1);
		if (copy != NULL)
			memcpy(copy, rq->rq_bk->bk_tags, n);
	}
	pthread_rwlock_unlock(&rq->rq_bk->bk_conf);
	if (copy == NULL)
		return s3_reply_err(rq, 404, "NoSuchTagSet", "The TagSet does "
				    "not exist");
	rc = reply_tags(rq, copy, n);
	free(copy);
	return rc;
}
