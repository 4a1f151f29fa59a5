/*
 * s3_ops.c — the S3 operations' shared helpers and the router.  Helpers:
 * key lock stripes and keys in doubt, bucket and key checks, conditional
 * ETags, an object record's attributes from the request and into the
 * reply, the record lookup and the atomic record change (rec_commit()).
 * The router (the end of the file): a request is dispatched on its
 * method, target and full set of sub-resources, and anything not
 * implemented is refused 501 before it reads or changes anything;
 * GetObjectAttributes is served here too.  The operations themselves:
 * s3_ops_bucket.c (ListBuckets, CreateBucket, DeleteBucket),
 * s3_ops_object.c (put, get with ranges and conditionals, head, delete,
 * DeleteObjects, copy), s3_ops_list.c (ListObjectsV2, ListObjects,
 * ListObjectVersions), s3_ops_multipart.c (multipart uploads); what they
 * share is declared in s3_ops_internal.h.  Each operation checks its input
 * and the requester's rights (s3_authz(), s3_acl.c) first and changes
 * nothing when it refuses.
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

/* Response headers kept with an object. */
static const char *const kept_hdrs[] = {
	"Content-Disposition", "Cache-Control", "Content-Language", "Expires",
	"Content-Encoding",
};

/* ------------------------------------------------------------- helpers */

pthread_mutex_t *s3_key_lock(const uint8_t *k, size_t kl)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < kl; i++)
		h = (h ^ k[i]) * 16777619u;
	return &s3g.g_key_locks[h & 255];
}

/*
 * Keys whose last change ended in doubt (cluster mode: the dtx outcome is
 * unknown, or committed and not yet applied everywhere), per lock stripe:
 * until the dtx is surely decided (the settle thread's next
 * clovis_dtx_settle() returned 0), a new change of a key of the stripe
 * could read a record the dtx is about to replace and lose track of an
 * object, so it is refused with 503 SlowDown.  So is a change of any key
 * while the earlier run is not settled (s3_settle_held(): after a start in
 * cluster mode, until the first settle).  Guarded by the stripe's lock.
 */
static uint64_t key_doubt_mark[256];

static uint64_t *key_doubt(pthread_mutex_t *l)
{
	return &key_doubt_mark[l - s3g.g_key_locks];
}

/* Under lock l: is a change of a key of stripe l to wait (503)? */
bool s3_key_in_doubt(pthread_mutex_t *l)
{
	uint64_t m = *key_doubt(l);

	if (m != 0 && !s3_settle_pending(m))
		*key_doubt(l) = m = 0;
	return m != 0 || s3_settle_held();
}

void s3_key_doubt_set(pthread_mutex_t *l)
{
	*key_doubt(l) = s3_settle_mark();
}

/* The reply to a change refused or left in doubt (-EAGAIN: a change of
 * the key is settling; s3_tx_doubt(rc): this one's outcome is unknown). */
int s3_reply_doubt(struct s3_req *rq, int rc, const char *what)
{
	if (rc == -EAGAIN)
		return s3_reply_err(rq, 503, "SlowDown", "%s: an earlier change "
				    "of this key is not settled yet (cluster "
				    "transaction in doubt): retry later", what);
	return s3_reply_err(rq, 503, "SlowDown", "%s: %s: the outcome is not "
			    "known yet (it is applied entirely or not at all "
			    "within seconds): retry", what,
			    clovis_strerror(rc));
}

bool s3_is_doubt(int rc)
{
	return rc == -EAGAIN || s3_tx_doubt(rc);
}

bool s3_bucket_name_ok(const char *n)
{
	size_t l = strlen(n), i, digits = 0, dots = 0;

	if (l < 3 || l > S3_BUCKET_MAX || !isalnum((unsigned char)n[0]) ||
	    !isalnum((unsigned char)n[l - 1]))
		return false;
	for (i = 0; i < l; i++) {
		char c = n[i];

		if (!(islower((unsigned char)c) || isdigit((unsigned char)c) ||
		      c == '-' || c == '.'))
			return false;
		if (c == '.' && (n[i + 1] == '.' || n[i + 1] == '-' ||
				 (i > 0 && n[i - 1] == '-')))
			return false;
		digits += isdigit((unsigned char)c) != 0;
		dots += c == '.';
	}
	return !(dots == 3 && digits + dots == l); /* not an IP address */
}

int s3_need_bucket(struct s3_req *rq, uint32_t perm, const char *action)
{
	const char *eo;
	int rc;

	if (!s3_bucket_name_ok(rq->rq_bucket))
		return s3_reply_err(rq, 404, "NoSuchBucket", "The specified "
				    "bucket does not exist"), -ENOENT;
	rc = s3_bucket_get(rq->rq_bucket, &rq->rq_bk);
	if (rc == -ENOENT)
		return s3_reply_err(rq, 404, "NoSuchBucket", "The specified "
				    "bucket does not exist"), rc;
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "bucket lookup"), rc;
	if (s3_hdr(rq, "Origin") != NULL)
		s3_cors_reply_hdrs(rq, rq->rq_bk);
	eo = s3_hdr(rq, "x-amz-expected-bucket-owner");
	if (eo != NULL && strcmp(eo, rq->rq_bk->bk_owner) != 0)
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied "
				    "(x-amz-expected-bucket-owner is not the "
				    "bucket's owner)"), -EACCES;
	if (perm != 0 && s3_authz(rq, rq->rq_bk, rq->rq_key, rq->rq_key_len,
				  NULL, perm, action) != 0)
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied"),
		       -EACCES;
	return 0;
}

/* Whether key k[0..n) is UTF-8 without C1 control characters (U+0080 to
 * U+009F), which S3 refuses in a URI. */
bool s3_key_chars_ok(const char *k, size_t n)
{
	const unsigned char *u = (const unsigned char *)k;
	size_t i = 0;

	while (i < n) {
		size_t len, j;
		uint32_t cp;

		if (u[i] < 0x80) {
			i++;
			continue;
		}
		if (u[i] >= 0xC2 && u[i] <= 0xDF)
			len = 2, cp = u[i] & 0x1F;
		else if (u[i] >= 0xE0 && u[i] <= 0xEF)
			len = 3, cp = u[i] & 0x0F;
		else if (u[i] >= 0xF0 && u[i] <= 0xF4)
			len = 4, cp = u[i] & 0x07;
		else
			return false;
		if (i + len > n)
			return false;
		for (j = 1; j < len; j++) {
			if ((u[i + j] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (u[i + j] & 0x3F);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ||
		    (cp >= 0x80 && cp <= 0x9F))
			return false;
		i += len;
	}
	return true;
}

int s3_need_key(struct s3_req *rq)
{
	if (rq->rq_key_len > S3_KEY_MAX)
		return s3_reply_err(rq, 400, "KeyTooLongError",
				    "Your key is too long (%zu bytes; at most "
				    "%u)", rq->rq_key_len, S3_KEY_MAX), -E2BIG;
	if (!s3_key_chars_ok(rq->rq_key, rq->rq_key_len))
		return s3_reply_err(rq, 400, "InvalidURI",
				    "Couldn't parse the specified URI."),
		       -EINVAL;
	return 0;
}

void s3_etag_hdr(struct s3_req *rq, const char *etag)
{
	char q[72];

	snprintf(q, sizeof q, "\"%s\"", etag);
	s3_reply_hdr(rq, "ETag", q);
}

/* Compare an If-Match style list with etag ("*" matches everything). */
bool s3_etag_in(const char *list, const char *etag)
{
	const char *p = list;

	while (*p) {
		size_t n;

		p += strspn(p, " ,");
		if (*p == '*')
			return true;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		if (*p == '"')
			p++;
		n = strcspn(p, "\",");
		if (n == strlen(etag) && strncmp(p, etag, n) == 0)
			return true;
		p += n;
		p += strspn(p, "\"");
	}
	return false;
}

struct meta_ctx {
	struct s3_buf *mc_rec;
	size_t mc_bytes;
};

static enum MHD_Result meta_it(void *cls, enum MHD_ValueKind kind,
			       const char *k, const char *v)
{
	struct meta_ctx *m = cls;
	char name[256];
	size_t i, nl;

	if (strncasecmp(k, "x-amz-meta-", 11) != 0)
		return MHD_YES;
	nl = strlen(k + 11);
	if (nl >= sizeof name)
		nl = sizeof name - 1;
	for (i = 0; i < nl; i++)
		name[i] = (char)tolower((unsigned char)k[11 + i]);
	name[nl] = 0;
	m->mc_bytes += nl + strlen(v ? v : "");
	{
		struct s3_buf f = {0};

		s3_buf_add(&f, name, nl + 1);
		s3_buf_str(&f, v ? v : "");
		s3_tlv_add(m->mc_rec, T_META, f.b_data, (uint32_t)f.b_len);
		s3_buf_fini(&f);
	}
	return MHD_YES;
}

/* The codings of Content-Encoding value v but aws-chunked (the transfer
 * framing, which S3 does not store) into f, comma-separated, no NUL. */
static void coding_kept(struct s3_buf *f, const char *v)
{
	bool first = true;

	while (*v != 0) {
		size_t n, e;

		v += strspn(v, " \t,");
		n = strcspn(v, ",");
		for (e = n; e > 0 && (v[e - 1] == ' ' || v[e - 1] == '\t'); e--)
			;
		if (e > 0 && !(e == 11 &&
			       strncasecmp(v, "aws-chunked", 11) == 0)) {
			if (!first)
				s3_buf_add(f, ", ", 2);
			s3_buf_add(f, v, e);
			first = false;
		}
		v += n;
	}
}

/* Content type, x-amz-meta-* and kept headers of the request into rec.
 * Returns -EFBIG when the user metadata is past S3_META_MAX. */
int s3_rec_attrs_from_req(struct s3_req *rq, struct s3_buf *rec)
{
	struct meta_ctx m = {rec, 0};
	const char *ct = s3_hdr(rq, "Content-Type");
	size_t i;

	s3_tlv_add(rec, T_CTYPE, ct ? ct : "binary/octet-stream",
		   (uint32_t)strlen(ct ? ct : "binary/octet-stream"));
	MHD_get_connection_values(rq->rq_conn, MHD_HEADER_KIND, meta_it, &m);
	for (i = 0; i < sizeof kept_hdrs / sizeof kept_hdrs[0]; i++) {
		const char *v = s3_hdr(rq, kept_hdrs[i]);
		struct s3_buf f = {0};

		if (v == NULL)
			continue;
		s3_buf_add(&f, kept_hdrs[i], strlen(kept_hdrs[i]) + 1);
		if (i == 4) {
			size_t l0 = f.b_len;

			coding_kept(&f, v);
			if (f.b_len == l0) {	/* only aws-chunked */
				s3_buf_fini(&f);
				continue;
			}
		} else
			s3_buf_str(&f, v);
		s3_tlv_add(rec, T_HDR, f.b_data, (uint32_t)f.b_len);
		s3_buf_fini(&f);
	}
	return m.mc_bytes > S3_META_MAX ? -EFBIG : 0;
}

/* The S3_SUM_* of a stored header "name\0value" (0: not a checksum). */
static uint32_t hdr_sum(const uint8_t *val, uint32_t n)
{
	return memchr(val, 0, n) != NULL ? s3_sum_of_hdr((const char *)val)
					 : 0;
}

/* The checksums record r stores (S3_SUM_* bits). */
uint32_t s3_rec_sum_algs(const struct s3_orec *r)
{
	const uint8_t *val;
	size_t pos = 0;
	uint32_t n, algs = 0;
	uint8_t tag;

	while (s3_tlv_next(r->or_rec, r->or_rec_len, &pos, &tag, &val, &n) == 1)
		if (tag == T_HDR)
			algs |= hdr_sum(val, n);
	return algs;
}

/* Stored header "name\0value" of rec. */
void s3_rec_hdr_add(struct s3_buf *rec, const char *name, const char *v)
{
	struct s3_buf f = {0};

	s3_buf_add(&f, name, strlen(name) + 1);
	s3_buf_str(&f, v);
	if (f.b_oom)
		rec->b_oom = true;
	else
		s3_tlv_add(rec, T_HDR, f.b_data, (uint32_t)f.b_len);
	s3_buf_fini(&f);
}

/* Each additional checksum of s as a stored header of rec (returned on
 * GET and HEAD with x-amz-checksum-mode: ENABLED); with type, and one at
 * least, x-amz-checksum-type FULL_OBJECT too. */
void s3_rec_sums(struct s3_buf *rec, const struct s3_sums *s, bool type)
{
	uint32_t bit;

	for (bit = S3_SUM_CRC64NVME; bit & S3_SUM_ADDL; bit <<= 1) {
		char b64[S3_SUM_B64_MAX];

		if (!(s->s_algs & bit))
			continue;
		s3_sum_b64(s, bit, b64);
		s3_rec_hdr_add(rec, s3_sum_hdr(bit), b64);
	}
	if (type && (s->s_algs & S3_SUM_ADDL))
		s3_rec_hdr_add(rec, "x-amz-checksum-type", "FULL_OBJECT");
}

/* Each additional checksum of s as a reply header; with type, and one at
 * least, x-amz-checksum-type FULL_OBJECT (PutObject's reply). */
void s3_sums_reply(struct s3_req *rq, const struct s3_sums *s, bool type)
{
	uint32_t bit;

	for (bit = S3_SUM_CRC64NVME; bit & S3_SUM_ADDL; bit <<= 1) {
		char b64[S3_SUM_B64_MAX];

		if (s->s_algs & bit) {
			s3_sum_b64(s, bit, b64);
			s3_reply_hdr(rq, s3_sum_hdr(bit), b64);
		}
	}
	if (type && (s->s_algs & S3_SUM_ADDL))
		s3_reply_hdr(rq, "x-amz-checksum-type", "FULL_OBJECT");
}

/* Copy the attribute fields (type, meta, headers) of record src, but not
 * its checksums; with tags its tag set too, with own its (non-empty)
 * owner and ACL. */
void s3_rec_attrs_copy(const void *src, size_t sl, struct s3_buf *rec,
		       bool tags, bool own)
{
	const uint8_t *val;
	size_t pos = 0;
	uint32_t n;
	uint8_t tag;

	while (s3_tlv_next(src, sl, &pos, &tag, &val, &n) == 1)
		if (tag == T_CTYPE || tag == T_META ||
		    (tag == T_HDR && !s3_ck_is_hdr(val, n)) ||
		    (tags && tag == T_TAGS) ||
		    (own && ((tag == T_OWNER && n > 0) || tag == T_ACL)))
			s3_tlv_add(rec, tag, val, n);
}

/* The tag set of record src into rec. */
void s3_rec_attrs_copy_tags(const void *src, size_t sl, struct s3_buf *rec)
{
	const uint8_t *val;
	size_t pos = 0;
	uint32_t n;
	uint8_t tag;

	while (s3_tlv_next(src, sl, &pos, &tag, &val, &n) == 1)
		if (tag == T_TAGS)
			s3_tlv_add(rec, tag, val, n);
}

/* The fields of a new object the request's headers give beyond its
 * attributes: its owner (s3_new_owner(): the writer, or the bucket's
 * owner under BucketOwnerEnforced, BucketOwnerPreferred with
 * bucket-owner-full-control, or for an anonymous writer), its ACL
 * (x-amz-acl, x-amz-grant-*, for that owner) and, unless notags, its
 * tags (x-amz-tagging).  Replies on refusal: -EINVAL. */
int s3_rec_extra_from_req(struct s3_req *rq, struct s3_buf *rec,
			  bool notags)
{
	const char *own = s3_new_owner(rq, rq->rq_bk);

	s3_tlv_add(rec, T_OWNER, own, (uint32_t)strlen(own));
	if (s3_acl_req(rq, rq->rq_bk, own, rec) != 0)
		return -EINVAL;
	return notags ? 0 : s3_tags_req(rq, rec);
}

/* A stored x-amz-meta-* value v[0..vl) (the UTF-8 the client sent) as a
 * reply header value into out (cap bytes, NUL-terminated).  HTTP clients
 * read header bytes as ISO-8859-1, so a value whose characters all are
 * below U+0100 goes out in that charset; one with others as RFC 2047
 * "=?UTF-8?B?...?=", as S3 does; ASCII or not UTF-8: as stored.  False
 * if it does not fit. */
static bool meta_value_out(const char *v, size_t vl, char *out, size_t cap)
{
	const unsigned char *u = (const unsigned char *)v;
	size_t i, o = 0;
	bool ascii = true, latin1 = true;

	for (i = 0; i < vl; i++) {
		if (u[i] < 0x80)
			continue;
		ascii = false;
		if ((u[i] & 0xE0) == 0xC0 && u[i] >= 0xC2 && i + 1 < vl &&
		    (u[i + 1] & 0xC0) == 0x80) {
			latin1 = latin1 && u[i] <= 0xC3;
			i++;
			continue;
		}
		latin1 = false;
		if ((u[i] & 0xF0) == 0xE0 && i + 2 < vl &&
		    (u[i + 1] & 0xC0) == 0x80 && (u[i + 2] & 0xC0) == 0x80) {
			i += 2;
			continue;
		}
		if ((u[i] & 0xF8) == 0xF0 && u[i] <= 0xF4 && i + 3 < vl &&
		    (u[i + 1] & 0xC0) == 0x80 && (u[i + 2] & 0xC0) == 0x80 &&
		    (u[i + 3] & 0xC0) == 0x80) {
			i += 3;
			continue;
		}
		ascii = latin1 = true;	/* not UTF-8: as stored */
		break;
	}
	if (i < vl || ascii) {
		if (vl >= cap)
			return false;
		memcpy(out, v, vl);
		out[vl] = 0;
		return true;
	}
	if (latin1) {
		for (i = 0; i < vl && o + 1 < cap; i++, o++) {
			if (u[i] < 0x80) {
				out[o] = (char)u[i];
				continue;
			}
			out[o] = (char)(((u[i] & 0x03) << 6) |
					(u[i + 1] & 0x3F));
			i++;
		}
		out[o] = 0;
		return i == vl;
	}
	if (10 + (vl + 2) / 3 * 4 + 3 > cap)
		return false;
	memcpy(out, "=?UTF-8?B?", 10);
	o = 10 + s3_b64enc(u, vl, out + 10);
	memcpy(out + o, "?=", 3);
	return true;
}

/* Response headers from a record: type, meta, kept headers; its
 * checksums (x-amz-checksum-*) only when sums (the whole object is served
 * and the request has x-amz-checksum-mode: ENABLED). */
void s3_rec_attrs_reply(struct s3_req *rq, const struct s3_orec *r,
			bool sums)
{
	const uint8_t *val;
	size_t pos = 0;
	uint32_t n;
	uint8_t tag;
	char t[40];

	while (s3_tlv_next(r->or_rec, r->or_rec_len, &pos, &tag, &val, &n) == 1) {
		char name[300], v[4096];
		const char *z = memchr(val, 0, n);
		size_t nl, vl;

		if (tag == T_CTYPE && n < sizeof v) {
			memcpy(v, val, n);
			v[n] = 0;
			s3_reply_hdr(rq, "Content-Type", v);
		}
		if ((tag != T_META && tag != T_HDR) || z == NULL ||
		    (tag == T_HDR && !sums && s3_ck_is_hdr(val, n)))
			continue;
		nl = (size_t)(z - (const char *)val);
		vl = n - nl - 1;
		if (nl + 12 > sizeof name || vl >= sizeof v)
			continue;
		snprintf(name, sizeof name, "%s%s", tag == T_META ?
			 "x-amz-meta-" : "", (const char *)val);
		if (tag == T_META) {
			if (!meta_value_out(z + 1, vl, v, sizeof v))
				continue;
		} else {
			memcpy(v, z + 1, vl);
			v[vl] = 0;
		}
		/* libmicrohttpd refuses a header with an empty value: one
		 * space, which HTTP parsers drop, keeps an empty x-amz-meta-*
		 * value */
		s3_reply_hdr(rq, name, vl == 0 ? " " : v);
	}
	s3_etag_hdr(rq, r->or_etag);
	s3_time_http(r->or_mtime_ns, t);
	s3_reply_hdr(rq, "Last-Modified", t);
}

/* Look up key k of bucket b: 0 with the record (malloc()ed), -ENOENT.  A
 * view bucket makes the record from the file (s3_view_rec_get()). */
static int rec_get(struct s3_bucket *b, const char *k, size_t kl,
		   void **v, size_t *vl, struct s3_orec *r)
{
	uint8_t ik[CLOVIS_KEY_MAX];
	size_t il;
	int rc;

	if (b->bk_vw != NULL)
		return s3_view_rec_get(b, k, kl, v, vl, r);
	il = s3_ikey(k, kl, ik);
	rc = s3_idx_get(&b->bk_idx, ik, il, v, vl);

	if (rc != 0)
		return rc;
	rc = s3_orec_decode(*v, *vl, r);
	if (rc == 0 && r->or_key != NULL &&
	    (r->or_key_len != kl || memcmp(r->or_key, k, kl) != 0))
		rc = -ENOENT; /* another long key with the same hash slot */
	if (rc != 0) {
		free(*v);
		*v = NULL;
	}
	return rc;
}

/*
 * Make rec the record of key ik, atomically: under the key's lock, read the
 * old record, check the conditions im (If-Match) and inm (If-None-Match;
 * NULL: none) against it, then one change (s3_tx, one dtx):
 * the PUT of rec, the DELETE of the old record's objects, the DEL of the
 * in-flight record of w's object (w: the writer of the new data, or NULL),
 * and whatever the caller put in t already (NULL: nothing).  t is consumed.
 * Returns 0, -EEXIST (precondition failed), -ENODATA (If-Match and no
 * such key), -EAGAIN (an earlier change of
 * the key is in doubt), an s3_tx_doubt() code (this one is: the key's
 * stripe is then refused until it is settled) or a Clovis error (nothing
 * changed).
 */
int s3_rec_commit(struct s3_bucket *b, const uint8_t *ik, size_t il,
		  const struct s3_buf *rec, const char *im,
		  const char *inm, const struct s3_wr *w, struct s3_tx *t)
{
	pthread_mutex_t *l = s3_key_lock(ik, il);
	struct s3_orec old;
	void *ov = NULL;
	size_t ol;
	int rc;

	if (t == NULL && (t = s3_tx_new()) == NULL)
		return -ENOMEM;
	pthread_mutex_lock(l);
	if (s3_key_in_doubt(l)) {
		rc = -EAGAIN;
		goto out;
	}
	rc = s3_idx_get(&b->bk_idx, ik, il, &ov, &ol);
	if (rc == -ENOENT && im != NULL) {
		rc = -ENODATA;
		goto out;
	} else if (rc == 0 && (im != NULL || inm != NULL)) {
		if (s3_orec_decode(ov, ol, &old) != 0) {
			rc = -EIO;
			goto out;
		}
		if ((im != NULL && !s3_etag_in(im, old.or_etag)) ||
		    (inm != NULL && s3_etag_in(inm, old.or_etag))) {
			rc = -EEXIST;
			goto out;
		}
	} else if (rc != 0 && rc != -ENOENT) {
		goto out;
	}
	rc = s3_tx_put(t, &b->bk_idx, ik, il, rec->b_data, rec->b_len);
	if (rc == 0 && ov != NULL && s3_orec_decode(ov, ol, &old) == 0)
		rc = s3_tx_free(t, b, &old, ik, il, NULL, 0);
	if (rc == 0 && w != NULL && w->w_obj)
		rc = s3_tx_inflight_del(t, w->w_ikey);
	if (rc == 0 && w != NULL && w->w_obj)
		rc = s3_tx_write(t, w);
	if (rc == 0) {
		rc = s3_tx_commit(t);
		t = NULL;
		if (s3_tx_doubt(rc))
			s3_key_doubt_set(l);
	}
out:
	pthread_mutex_unlock(l);
	s3_tx_drop(t);
	free(ov);
	return rc;
}

/* The reply to a write whose If-Match or If-None-Match failed (rc of
 * s3_rec_commit(): -EEXIST, -ENODATA). */
int s3_reply_cond(struct s3_req *rq, int rc)
{
	if (rc == -ENODATA)
		return s3_reply_err(rq, 404, "NoSuchKey", "The specified key "
				    "does not exist (If-Match)");
	return s3_reply_err(rq, 412, "PreconditionFailed", "At least one of "
			    "the pre-conditions you specified did not hold");
}

int s3_rec_get(struct s3_bucket *b, const char *k, size_t kl, void **v,
	       size_t *vl, struct s3_orec *r)
{
	return rec_get(b, k, kl, v, vl, r);
}

int s3_rec_set(struct s3_bucket *b, const char *k, size_t kl,
	       const char *etag, uint8_t tag, const void *v, uint32_t n)
{
	uint8_t ik[CLOVIS_KEY_MAX];
	size_t il = s3_ikey(k, kl, ik), ol, pos = 0;
	pthread_mutex_t *l = s3_key_lock(ik, il);
	struct s3_buf rec = {0};
	struct s3_orec old;
	const uint8_t *val;
	uint32_t fl;
	uint8_t t;
	void *ov = NULL;
	int rc;

	pthread_mutex_lock(l);
	if (s3_key_in_doubt(l)) {
		rc = -EAGAIN;
		goto out;
	}
	rc = rec_get(b, k, kl, &ov, &ol, &old);
	if (rc == 0 && strcmp(old.or_etag, etag) != 0)
		rc = -ENOENT; /* replaced meanwhile */
	if (rc != 0)
		goto out;
	while (s3_tlv_next(ov, ol, &pos, &t, &val, &fl) == 1)
		if (t != tag)
			s3_tlv_add(&rec, t, val, fl);
	if (v != NULL)
		s3_tlv_add(&rec, tag, v, n);
	rc = rec.b_oom ? -ENOMEM : s3_idx_put(&b->bk_idx, ik, il, rec.b_data,
					      rec.b_len, true);
	if (s3_tx_doubt(rc))
		s3_key_doubt_set(l);
out:
	pthread_mutex_unlock(l);
	s3_buf_fini(&rec);
	free(ov);
	return rc;
}

int s3_reply_rec(struct s3_req *rq, int rc, const char *what)
{
	if (rc == -ENOENT && rq->rq_key != NULL)
		return s3_reply_err(rq, 404, "NoSuchKey", "The specified key "
				    "does not exist.");
	if (rc == -ENOENT)
		return s3_reply_err(rq, 404, "NoSuchBucket", "The specified "
				    "bucket does not exist");
	if (s3_is_doubt(rc))
		return s3_reply_doubt(rq, rc, what);
	return s3_reply_clovis(rq, rc, what);
}

bool s3_bucket_doc_put_del(struct s3_req *rq, uint8_t tag,
			   int (*end)(struct s3_req *rq), const char *what)
{
	char msg[80];
	int rc;

	if (rq->rq_method[0] == 'P') {
		rq->rq_body = S3_BODY_XML;
		rq->rq_end = end;
		return true;
	}
	if (rq->rq_method[0] != 'D')
		return false;
	rc = s3_bucket_set(rq->rq_bk, tag, NULL, 0);
	if (rc != 0) {
		snprintf(msg, sizeof msg, "removing the %s", what);
		s3_reply_rec(rq, rc, msg);
	} else {
		s3_reply_empty(rq, 204);
	}
	return true;
}

struct s3_xel *s3_xml_body(struct s3_req *rq, const char *root)
{
	struct s3_xel *x = s3_xml_parse(rq->rq_xml.b_data ? rq->rq_xml.b_data
					: "", rq->rq_xml.b_len);

	if (x == NULL || strcmp(x->x_name, root) != 0) {
		s3_xml_free(x);
		s3_reply_err(rq, 400, "MalformedXML", "The XML you provided was "
			     "not well-formed or did not validate against our "
			     "published schema (expected a %s document)", root);
		return NULL;
	}
	return x;
}

/* --------------------------------------------------------------- route */
/*
 * A request is dispatched on (method, target, the full set of its
 * sub-resources).  Query parameters are of three kinds:
 *   - sub-resources (subres[]): they name what the request acts on
 *     (?acl, ?tagging, ?uploadId ...); every one present must be part of
 *     the route that serves the request, else 501 NotImplemented before
 *     anything is read or changed;
 *   - ordinary parameters (plain[], and the prefixes response-, x-amz-):
 *     arguments of an operation (prefix, max-keys, the signature of a
 *     presigned URL, aws cli's x-id ...), never a reason to refuse;
 *   - anything else: ignored on GET and HEAD (as S3 does: cache busters),
 *     refused 501 on PUT, POST and DELETE, where an unknown sub-resource
 *     run as the plain operation could change data.
 * versionId=null names the current object (GET, HEAD, DELETE, ?tagging,
 * ?acl of an object): it is dropped before the match; any other versionId
 * is 501 (objects have no other version here).
 */
static const char *const subres[] = {
	"accelerate", "acl", "analytics", "attributes", "cors", "delete",
	"encryption", "intelligent-tiering", "inventory", "legal-hold",
	"lifecycle", "location", "logging", "metadataConfiguration",
	"metadataTable", "metrics", "notification", "object-lock",
	"ownershipControls", "partNumber", "policy", "policyStatus",
	"publicAccessBlock", "renameObject", "replication", "requestPayment",
	"restore", "retention", "select", "select-type", "session", "tagging",
	"torrent", "uploadId", "uploads", "versionId", "versioning",
	"versions", "website", "abac", "inventoryConfiguration", "mtime",
};

static const char *const plain[] = {
	"prefix", "delimiter", "marker", "max-keys", "list-type",
	"continuation-token", "encoding-type", "fetch-owner", "start-after",
	"key-marker", "version-id-marker", "upload-id-marker", "max-uploads",
	"max-parts", "part-number-marker", "AWSAccessKeyId", "Signature",
	"Expires", "x-id", "max-buckets", "bucket-region",
	"allow-unordered", "id",
};

/* Where a request goes. */
enum { ON_SERVICE, ON_BUCKET, ON_OBJECT };

struct route {
	const char *r_method;
	uint8_t r_on;
	const char *r_sub[2];     /* the sub-resources, exactly (NULL: none) */
	int (*r_fn)(struct s3_req *rq);
};

static int head_bucket(struct s3_req *rq)
{
	rq->rq_op = "HeadBucket";
	return s3_need_bucket(rq, S3_P_READ, "s3:ListBucket") != 0
	       ? 0 : s3_reply_empty(rq, 200);
}

static int bucket_location(struct s3_req *rq)
{
	struct s3_buf x = {0};

	const uint8_t *val;
	size_t pos = 0, vl;
	uint32_t n;
	uint8_t tag = 0;
	bool found = false;
	void *v;
	int rc;

	rq->rq_op = "GetBucketLocation";
	if (s3_need_bucket(rq, S3_P_OWNER, "s3:GetBucketLocation") != 0)
		return 0;
	rc = s3_idx_get(&s3g.g_buckets, rq->rq_bk->bk_name,
			strlen(rq->rq_bk->bk_name), &v, &vl);
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "reading the bucket record");
	/* the LocationConstraint given at CreateBucket; none: us-east-1,
	 * an empty element */
	while (!found && s3_tlv_next(v, vl, &pos, &tag, &val, &n) == 1)
		found = tag == T_LOCATION;
	if (found) {
		s3_buf_str(&x, XHDR "<LocationConstraint xmlns=\"" XMLNS
			   "\">");
		s3_buf_xml(&x, (const char *)val, n);
		s3_buf_str(&x, "</LocationConstraint>");
	} else {
		s3_buf_str(&x, XHDR "<LocationConstraint xmlns=\"" XMLNS
			   "\"/>");
	}
	free(v);
	return s3_reply_xml(rq, 200, &x);
}

/* ?versioning, ?cors, ?lifecycle of a bucket: s3_bconf.c, for its owner. */
static int bucket_conf(struct s3_req *rq)
{
	static const char *const subs[] = {"versioning", "cors", "lifecycle"};
	const char *sub = NULL;
	size_t i;

	for (i = 0; i < sizeof subs / sizeof subs[0]; i++)
		if (s3_qhas(rq, subs[i]))
			sub = subs[i];
	rq->rq_op = "BucketConfiguration";
	if (s3_need_bucket(rq, S3_P_OWNER, "s3:PutBucketConfiguration") != 0)
		return 0;
	return s3_bconf_op(rq, rq->rq_bk, sub);
}

/* GetObjectAttributes (GET ?attributes): the record's attributes as
 * x-amz-object-attributes asks (s3_ck_attributes_reply()). */
static int object_attributes(struct s3_req *rq)
{
	struct s3_orec r;
	void *v;
	size_t vl;
	int rc;

	rq->rq_op = "GetObjectAttributes";
	if (s3_need_bucket(rq, 0, NULL) != 0 || s3_need_key(rq) != 0)
		return 0;
	rc = rec_get(rq->rq_bk, rq->rq_key, rq->rq_key_len, &v, &vl, &r);
	if (rc == 0 && s3_authz(rq, rq->rq_bk, rq->rq_key, rq->rq_key_len, &r,
				S3_P_READ, "s3:GetObjectAttributes") != 0) {
		free(v);
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied");
	}
	if (rc == -ENOENT && s3_authz(rq, rq->rq_bk, NULL, 0, NULL, S3_P_READ,
				      "s3:ListBucket") != 0)
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied");
	if (rc == -ENOENT)
		return s3_reply_err(rq, 404, "NoSuchKey", "The specified key "
				    "does not exist.");
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "looking up the key");
	rc = s3_ck_attributes_reply(rq, &r);
	free(v);
	return rc;
}

static int put_or_copy(struct s3_req *rq)
{
	const char *src = s3_hdr(rq, "x-amz-copy-source");

	return src ? s3_copy_object(rq, src) : s3_put_object(rq);
}

static int upload_part_route(struct s3_req *rq)
{
	return s3_upload_part(rq);
}

static const struct route routes[] = {
	{"GET", ON_SERVICE, {NULL, NULL}, s3_list_buckets},
	{"PUT", ON_BUCKET, {NULL, NULL}, s3_create_bucket},
	{"HEAD", ON_BUCKET, {NULL, NULL}, head_bucket},
	{"DELETE", ON_BUCKET, {NULL, NULL}, s3_delete_bucket},
	{"GET", ON_BUCKET, {NULL, NULL}, s3_list_objects},
	{"GET", ON_BUCKET, {"versions", NULL}, s3_list_objects},
	{"GET", ON_BUCKET, {"uploads", NULL}, s3_list_uploads},
	{"GET", ON_BUCKET, {"location", NULL}, bucket_location},
	{"POST", ON_BUCKET, {"delete", NULL}, s3_delete_objects},
	{"GET", ON_BUCKET, {"acl", NULL}, s3_bucket_acl},
	{"PUT", ON_BUCKET, {"acl", NULL}, s3_bucket_acl},
	{"GET", ON_BUCKET, {"tagging", NULL}, s3_bucket_tagging},
	{"PUT", ON_BUCKET, {"tagging", NULL}, s3_bucket_tagging},
	{"DELETE", ON_BUCKET, {"tagging", NULL}, s3_bucket_tagging},
	{"GET", ON_BUCKET, {"policy", NULL}, s3_bucket_policy},
	{"PUT", ON_BUCKET, {"policy", NULL}, s3_bucket_policy},
	{"DELETE", ON_BUCKET, {"policy", NULL}, s3_bucket_policy},
	{"GET", ON_BUCKET, {"policyStatus", NULL}, s3_bucket_policy_status},
	{"GET", ON_BUCKET, {"ownershipControls", NULL}, s3_bucket_ownership},
	{"PUT", ON_BUCKET, {"ownershipControls", NULL}, s3_bucket_ownership},
	{"DELETE", ON_BUCKET, {"ownershipControls", NULL},
	 s3_bucket_ownership},
	{"GET", ON_BUCKET, {"versioning", NULL}, bucket_conf},
	{"PUT", ON_BUCKET, {"versioning", NULL}, bucket_conf},
	{"DELETE", ON_BUCKET, {"versioning", NULL}, bucket_conf},
	{"GET", ON_BUCKET, {"cors", NULL}, bucket_conf},
	{"PUT", ON_BUCKET, {"cors", NULL}, bucket_conf},
	{"DELETE", ON_BUCKET, {"cors", NULL}, bucket_conf},
	{"GET", ON_BUCKET, {"lifecycle", NULL}, bucket_conf},
	{"PUT", ON_BUCKET, {"lifecycle", NULL}, bucket_conf},
	{"DELETE", ON_BUCKET, {"lifecycle", NULL}, bucket_conf},
	{"PUT", ON_OBJECT, {NULL, NULL}, put_or_copy},
	{"GET", ON_OBJECT, {NULL, NULL}, s3_get_object},
	{"HEAD", ON_OBJECT, {NULL, NULL}, s3_get_object},
	{"DELETE", ON_OBJECT, {NULL, NULL}, s3_delete_object},
	{"GET", ON_OBJECT, {"partNumber", NULL}, s3_get_object},
	{"GET", ON_OBJECT, {"attributes", NULL}, object_attributes},
	{"HEAD", ON_OBJECT, {"partNumber", NULL}, s3_get_object},
	{"PUT", ON_OBJECT, {"partNumber", "uploadId"}, upload_part_route},
	{"GET", ON_OBJECT, {"uploadId", NULL}, s3_list_parts},
	{"DELETE", ON_OBJECT, {"uploadId", NULL}, s3_abort_upload},
	{"POST", ON_OBJECT, {"uploads", NULL}, s3_create_upload},
	{"POST", ON_OBJECT, {"uploadId", NULL}, s3_complete_upload},
	{"GET", ON_OBJECT, {"tagging", NULL}, s3_object_tagging},
	{"PUT", ON_OBJECT, {"tagging", NULL}, s3_object_tagging},
	{"DELETE", ON_OBJECT, {"tagging", NULL}, s3_object_tagging},
	{"GET", ON_OBJECT, {"acl", NULL}, s3_object_acl},
	{"PUT", ON_OBJECT, {"acl", NULL}, s3_object_acl},
};

static bool in_list(const char *const *l, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (l[i] != NULL && strcmp(l[i], s) == 0)
			return true;
	return false;
}

#define IN(l, s) in_list(l, sizeof l / sizeof l[0], s)

/* Does route r serve the request's sub-resources sub[0..n)? */
static bool route_subs(const struct route *r, const char **sub, uint32_t n)
{
	uint32_t want = (r->r_sub[0] != NULL) + (r->r_sub[1] != NULL), i;

	if (n != want)
		return false;
	for (i = 0; i < n; i++)
		if (!IN(r->r_sub, sub[i]))
			return false;
	return true;
}

static bool is_plain(const char *q)
{
	return IN(plain, q) || strncmp(q, "response-", 9) == 0 ||
	       strncasecmp(q, "x-amz-", 6) == 0;
}

/*
 * The request's sub-resources into sub (*n of them), versionId=null of an
 * object dropped.  Replies 501 (an unknown parameter on a change, another
 * versionId): -ENOTSUP.
 */
static int route_collect(struct s3_req *rq, const char **sub, uint32_t *n)
{
	bool read = strcmp(rq->rq_method, "GET") == 0 ||
		    strcmp(rq->rq_method, "HEAD") == 0;
	uint32_t k;

	*n = 0;
	for (k = 0; k < rq->rq_nq; k++) {
		const char *q = rq->rq_qn[k];

		if (strcmp(q, "versionId") == 0 && rq->rq_key != NULL &&
		    strcmp(rq->rq_qv[k], "null") == 0)
			continue;
		if (strcmp(q, "versionId") == 0)
			return s3_reply_err(rq, 501, "NotImplemented", "versionId "
					    "'%.64s': this gateway keeps one "
					    "version of an object, named "
					    "'null'", rq->rq_qv[k]), -ENOTSUP;
		if (IN(subres, q)) {
			if (*n < S3_QMAX)
				sub[(*n)++] = q;
			continue;
		}
		if (!is_plain(q) && !read)
			return s3_reply_err(rq, 501, "NotImplemented", "query "
					    "parameter '%.64s' is not "
					    "implemented by this gateway for "
					    "%s", q, rq->rq_method), -ENOTSUP;
	}
	return 0;
}

static const char *const methods[] = {"GET", "PUT", "HEAD", "DELETE", "POST",
				      "OPTIONS"};

/*
 * Anonymous requests (no signature): routed with rq_authed false and an
 * empty user when they name a bucket (the route's checks then answer 404
 * NoSuchBucket when it does not exist, as S3 does, and grant only what
 * AllUsers grants or a policy gives "*"; CreateBucket refuses them), and
 * CORS preflights.  Everything else (ListBuckets) is refused by the
 * caller.
 */
bool s3_anon_ok(struct s3_req *rq)
{
	if (strcmp(rq->rq_method, "OPTIONS") == 0)
		return true;
	return rq->rq_bucket[0] != 0;
}

int s3_route(struct s3_req *rq)
{
	const char *sub[S3_QMAX];
	uint8_t on = rq->rq_bucket[0] == 0 ? ON_SERVICE
		     : rq->rq_key == NULL ? ON_BUCKET : ON_OBJECT;
	uint32_t n, i;
	bool known = false;

	if (!IN(methods, rq->rq_method))
		return s3_reply_err(rq, 405, "MethodNotAllowed", "The "
				    "specified method is not allowed against "
				    "this resource.");
	if (on != ON_SERVICE && strlen(rq->rq_bucket) > S3_BUCKET_MAX)
		return s3_reply_err(rq, 400, "InvalidBucketName", "The "
				    "specified bucket is not valid.");
	if (strcmp(rq->rq_method, "OPTIONS") == 0 && on != ON_SERVICE) {
		rq->rq_op = "CorsPreflight";
		return s3_cors_preflight(rq);
	}
	if (route_collect(rq, sub, &n) != 0)
		return 0;
	/* a view bucket answers some requests itself (s3_view.h) */
	if (on != ON_SERVICE && s3_view_bucket(rq->rq_bucket) != NULL &&
	    s3_view_route(rq, on, sub, n))
		return 0;
	for (i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const struct route *r = &routes[i];

		if (r->r_on != on || strcmp(r->r_method, rq->rq_method) != 0)
			continue;
		known = true;
		if (route_subs(r, sub, n))
			return r->r_fn(rq);
	}
	if (!known)
		return s3_reply_err(rq, 405, "MethodNotAllowed", "The "
				    "specified method is not allowed against "
				    "this resource.");
	rq->rq_op = "NotImplemented";
	return s3_reply_err(rq, 501, "NotImplemented", "%s of %s with "
			    "sub-resource%s %s%s%s is not implemented by "
			    "this gateway; nothing was changed",
			    rq->rq_method, on == ON_SERVICE ? "the service" :
			    on == ON_BUCKET ? "a bucket" : "an object",
			    n > 1 ? "s" : "", n > 0 ? sub[0] : "(none)",
			    n > 1 ? ", " : "", n > 1 ? sub[1] : "");
}
