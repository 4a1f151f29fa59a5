/*
 * s3_ops.c — the S3 operations of the gateway: routing, buckets, objects
 * (put, get with ranges and conditionals, head, delete, copy), listings
 * (ListObjectsV2, ListObjects, ListObjectVersions), DeleteObjects and
 * multipart uploads; and the router (the end of the file): a request is
 * dispatched on its method, target and full set of sub-resources, and
 * anything not implemented is refused 501 before it reads or changes
 * anything.  Each operation checks its input and the requester's rights
 * (s3_authz(), s3_acl.c) first and changes nothing when it refuses.
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

#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XHDR "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

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
static int reply_doubt(struct s3_req *rq, int rc, const char *what)
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

static bool is_doubt(int rc)
{
	return rc == -EAGAIN || s3_tx_doubt(rc);
}

static bool bucket_name_ok(const char *n)
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

	if (!bucket_name_ok(rq->rq_bucket))
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
static bool key_chars_ok(const char *k, size_t n)
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

static int need_key(struct s3_req *rq)
{
	if (rq->rq_key_len > S3_KEY_MAX)
		return s3_reply_err(rq, 400, "KeyTooLongError",
				    "Your key is too long (%zu bytes; at most "
				    "%u)", rq->rq_key_len, S3_KEY_MAX), -E2BIG;
	if (!key_chars_ok(rq->rq_key, rq->rq_key_len))
		return s3_reply_err(rq, 400, "InvalidURI",
				    "Couldn't parse the specified URI."),
		       -EINVAL;
	return 0;
}

static void etag_hdr(struct s3_req *rq, const char *etag)
{
	char q[72];

	snprintf(q, sizeof q, "\"%s\"", etag);
	s3_reply_hdr(rq, "ETag", q);
}

/* Compare an If-Match style list with etag ("*" matches everything). */
static bool etag_in(const char *list, const char *etag)
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
static int rec_attrs_from_req(struct s3_req *rq, struct s3_buf *rec)
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
static uint32_t rec_sum_algs(const struct s3_orec *r)
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
static void rec_hdr_add(struct s3_buf *rec, const char *name, const char *v)
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
static void rec_sums(struct s3_buf *rec, const struct s3_sums *s, bool type)
{
	uint32_t bit;

	for (bit = S3_SUM_CRC64NVME; bit & S3_SUM_ADDL; bit <<= 1) {
		char b64[S3_SUM_B64_MAX];

		if (!(s->s_algs & bit))
			continue;
		s3_sum_b64(s, bit, b64);
		rec_hdr_add(rec, s3_sum_hdr(bit), b64);
	}
	if (type && (s->s_algs & S3_SUM_ADDL))
		rec_hdr_add(rec, "x-amz-checksum-type", "FULL_OBJECT");
}

/* Each additional checksum of s as a reply header; with type, and one at
 * least, x-amz-checksum-type FULL_OBJECT (PutObject's reply). */
static void sums_reply(struct s3_req *rq, const struct s3_sums *s, bool type)
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
static void rec_attrs_copy(const void *src, size_t sl, struct s3_buf *rec,
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
static void rec_attrs_copy_tags(const void *src, size_t sl, struct s3_buf *rec)
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
static int rec_extra_from_req(struct s3_req *rq, struct s3_buf *rec,
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
static void rec_attrs_reply(struct s3_req *rq, const struct s3_orec *r,
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
	etag_hdr(rq, r->or_etag);
	s3_time_http(r->or_mtime_ns, t);
	s3_reply_hdr(rq, "Last-Modified", t);
}

/* Look up key k of bucket b: 0 with the record (malloc()ed), -ENOENT. */
static int rec_get(struct s3_bucket *b, const char *k, size_t kl,
		   void **v, size_t *vl, struct s3_orec *r)
{
	uint8_t ik[CLOVIS_KEY_MAX];
	size_t il = s3_ikey(k, kl, ik);
	int rc = s3_idx_get(&b->bk_idx, ik, il, v, vl);

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
static int rec_commit(struct s3_bucket *b, const uint8_t *ik, size_t il,
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
		if ((im != NULL && !etag_in(im, old.or_etag)) ||
		    (inm != NULL && etag_in(inm, old.or_etag))) {
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
 * rec_commit(): -EEXIST, -ENODATA). */
static int reply_cond(struct s3_req *rq, int rc)
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
	if (is_doubt(rc))
		return reply_doubt(rq, rc, what);
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

/* ------------------------------------------------------------- buckets */

/* ListBuckets: the requester's buckets in name order; max-buckets (1 to
 * 10000) of them at most, then a ContinuationToken (the last name given)
 * when more follow, which continuation-token resumes after. */
static int list_buckets(struct s3_req *rq)
{
	struct s3_buf x = {0};
	void *keys[64], *vals[64];
	size_t kls[64], vls[64];
	char start[S3_BUCKET_MAX + 1] = "", last[S3_BUCKET_MAX + 1] = "";
	const char *mb = s3_q(rq, "max-buckets");
	const char *ct = s3_q(rq, "continuation-token");
	uint32_t nr, k, given = 0, max = 10000;
	bool first = true, more = false;
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
		max = (uint32_t)v;
	}
	if (ct != NULL && ct[0] != 0) {
		if (strlen(ct) > S3_BUCKET_MAX)
			return s3_reply_err(rq, 400, "InvalidArgument", "The "
					    "continuation token provided is "
					    "incorrect");
		snprintf(start, sizeof start, "%s", ct);
		first = false;
	}
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
			char t[40];

			while (s3_tlv_next(vals[k], vls[k], &pos, &tag, &val,
					   &n) == 1) {
				if (tag == T_OWNER)
					mine = n == strlen(rq->rq_user.u_name) &&
					       memcmp(val, rq->rq_user.u_name,
						      n) == 0;
				if (tag == T_MTIME && n == 8)
					ctime = s3_u64(val);
			}
			if (mine && given == max)
				more = true;
			if (mine && !more) {
				s3_time_iso(ctime, t);
				s3_buf_str(&x, "<Bucket><Name>");
				s3_buf_xml(&x, keys[k], kls[k]);
				s3_buf_printf(&x, "</Name><CreationDate>%s"
					      "</CreationDate></Bucket>", t);
				given++;
				if (kls[k] < sizeof last) {
					memcpy(last, keys[k], kls[k]);
					last[kls[k]] = 0;
				}
			}
			if (kls[k] < sizeof start) {
				memcpy(start, keys[k], kls[k]);
				start[kls[k]] = 0;
			}
			free(keys[k]);
			free(vals[k]);
		}
	} while (nr == 64 && !more);
	s3_buf_str(&x, "</Buckets>");
	if (more) {
		s3_buf_str(&x, "<ContinuationToken>");
		s3_buf_xml(&x, last, strlen(last));
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

static int create_bucket(struct s3_req *rq)
{
	rq->rq_op = "CreateBucket";
	if (!rq->rq_authed || rq->rq_user.u_name[0] == 0)
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied "
				    "(a bucket is created by a user)");
	if (!bucket_name_ok(rq->rq_bucket) ||
	    strncmp(rq->rq_bucket, "xn--", 4) == 0 ||
	    (strlen(rq->rq_bucket) > 8 &&
	     strcmp(rq->rq_bucket + strlen(rq->rq_bucket) - 8, "-s3alias") == 0))
		return s3_reply_err(rq, 400, "InvalidBucketName",
				    "The specified bucket is not valid.");
	rq->rq_body = S3_BODY_XML;
	rq->rq_end = create_bucket_end;
	return 0;
}

static int abort_upload_rec(struct s3_bucket *b, const char *upid,
			    const char *key, size_t kl);
static int uploads_of_bucket(struct s3_bucket *b, bool abort_all,
			     bool *any);

static int delete_bucket(struct s3_req *rq)
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
	rc = uploads_of_bucket(rq->rq_bk, true, &any);
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

/* ------------------------------------------------------------- objects */

struct put_ctx {
	uint8_t pc_ik[CLOVIS_KEY_MAX];
	size_t pc_il;
	bool pc_md5_set;
	uint8_t pc_md5[16];
	struct s3_sums pc_want;  /* x-amz-checksum-* sent */
	uint32_t pc_trail;       /* S3_SUM_ADDL announced as trailers */
	uint32_t pc_upalg;       /* part: the upload's algorithm (or 0) */
	uint64_t pc_expect;
	struct s3_buf pc_extra;  /* owner, ACL, tags of the new object */
	/* multipart part */
	bool pc_part;
	uint8_t pc_pk[48];
	size_t pc_pkl;
};

static void put_cleanup(struct s3_req *rq)
{
	struct put_ctx *pc = rq->rq_ctx;

	if (pc != NULL)
		s3_buf_fini(&pc->pc_extra);
	free(rq->rq_ctx);
	rq->rq_ctx = NULL;
}

/* Content-MD5 (if any) into pc; replies InvalidDigest when malformed. */
static int content_md5(struct s3_req *rq, struct put_ctx *pc)
{
	const char *m = s3_hdr(rq, "Content-MD5");
	uint8_t tmp[64];

	if (m == NULL)
		return 0;
	if (strlen(m) != 24 || s3_b64dec(m, 24, tmp) != 16)
		return s3_reply_err(rq, 400, "InvalidDigest", "The Content-MD5 "
				    "you specified was invalid."), -EINVAL;
	memcpy(pc->pc_md5, tmp, 16);
	pc->pc_md5_set = true;
	return 0;
}

/* x-amz-trailer: the checksum an aws-chunked body sends after its data
 * (one name, or several separated by commas), computed and checked at the
 * end (put_trailer_sums()).  Replies InvalidRequest on anything else. */
static int content_trailer(struct s3_req *rq, struct put_ctx *pc)
{
	const char *t = s3_hdr(rq, "x-amz-trailer");
	char name[64];

	if (t == NULL)
		return 0;
	if (!rq->rq_chunked)
		return s3_reply_err(rq, 400, "InvalidRequest", "x-amz-trailer "
				    "needs an aws-chunked body (key '%.300s')",
				    rq->rq_key), -EINVAL;
	while (*t != 0) {
		size_t n;
		uint32_t bit;

		t += strspn(t, " \t,");
		n = strcspn(t, " \t,");
		if (n == 0)
			break;
		if (n >= sizeof name)
			n = sizeof name - 1;
		memcpy(name, t, n);
		name[n] = 0;
		t += strcspn(t, ",");
		bit = s3_sum_of_hdr(name);
		if (bit != 0)
			pc->pc_trail |= bit;
		else
			return s3_reply_err(rq, 400, "InvalidRequest",
					    "x-amz-trailer names '%.60s', which "
					    "is not a checksum this gateway "
					    "takes (key '%.300s')", name,
					    rq->rq_key), -EINVAL;
	}
	return 0;
}

/* A checksum value (header or trailer h) that is not the base64 of the
 * algorithm's value: 400 BadDigest, as ceph/s3-tests expects (AWS answers
 * InvalidRequest; both refuse and store nothing). */
static int sum_malformed(struct s3_req *rq, const char *h, const char *what)
{
	return s3_reply_err(rq, 400, "BadDigest", "Value for %s %s is "
			    "invalid: not the base64 of a %u-byte checksum "
			    "(key '%.300s')", h, what,
			    s3_sum_len(s3_sum_of_hdr(h)), rq->rq_key);
}

/* The trailer checksums announced (pc_trail) into pc->pc_want, once the
 * body is in; replies InvalidRequest when one is missing, BadDigest when
 * one is malformed. */
static int put_trailer_sums(struct s3_req *rq, struct put_ctx *pc)
{
	uint32_t bit;

	for (bit = S3_SUM_CRC64NVME; bit & S3_SUM_ADDL; bit <<= 1) {
		const char *h = s3_sum_hdr(bit), *v;

		if (!(pc->pc_trail & bit))
			continue;
		v = s3_trailer(rq, h);
		if (v == NULL)
			return s3_reply_err(rq, 400, "InvalidRequest", "the "
					    "trailer %s announced in "
					    "x-amz-trailer was not sent (key "
					    "'%.300s')", h, rq->rq_key),
			       -EINVAL;
		if (s3_sum_parse(bit, v, &pc->pc_want) != 0)
			return sum_malformed(rq, h, "trailer"), -EINVAL;
	}
	return 0;
}

/* The x-amz-checksum-* headers of the request into pc->pc_want; replies
 * BadDigest when one is malformed, 501 NotImplemented for an algorithm
 * newer S3 models name that the gateway does not compute (never taken
 * unverified). */
static int content_sums(struct s3_req *rq, struct put_ctx *pc)
{
	static const char *const unsup[] = {
		"x-amz-checksum-sha512", "x-amz-checksum-md5",
		"x-amz-checksum-xxhash64", "x-amz-checksum-xxhash3",
		"x-amz-checksum-xxhash128"};
	uint32_t bit;
	size_t i;

	for (i = 0; i < sizeof unsup / sizeof unsup[0]; i++)
		if (s3_hdr(rq, unsup[i]) != NULL)
			return s3_reply_err(rq, 501, "NotImplemented", "%s: "
					    "this gateway computes CRC32, "
					    "CRC32C, CRC64NVME, SHA1 and SHA256 "
					    "checksums only; nothing was stored "
					    "(key '%.300s')", unsup[i],
					    rq->rq_key), -ENOTSUP;

	for (bit = S3_SUM_CRC64NVME; bit & S3_SUM_ADDL; bit <<= 1) {
		const char *h = s3_sum_hdr(bit), *v = s3_hdr(rq, h);

		if (v != NULL && s3_sum_parse(bit, v, &pc->pc_want) != 0)
			return sum_malformed(rq, h, "header"), -EINVAL;
	}
	return content_trailer(rq, pc);
}

/* The sums a PUT computes: the ETag's (MD5, or CRC64-NVMe for a single
 * part object with etag crc64), the MD5 when Content-MD5 was sent, every
 * checksum sent, and for a part its upload's algorithm. */
static uint32_t put_algs(const struct put_ctx *pc)
{
	bool c64 = !pc->pc_part && s3g.g_conf.sc_etag == S3_ETAG_CRC64;

	return pc->pc_want.s_algs | pc->pc_trail | pc->pc_upalg |
	       (c64 ? S3_SUM_CRC64NVME : S3_SUM_MD5) |
	       (pc->pc_md5_set ? S3_SUM_MD5 : 0);
}

/* The ETag of an object with sums s: hex MD5, or (etag crc64, single
 * part) "c64-" and the CRC64-NVMe in 16 hex digits. */
static void make_etag(const struct s3_sums *s, bool part, char etag[33])
{
	if (!part && s3g.g_conf.sc_etag == S3_ETAG_CRC64)
		snprintf(etag, 33, "c64-%016llx", (unsigned long long)s->s_crc64);
	else
		s3_hex(s->s_md5v, 16, etag);
}

/* Finish the writer; check length and digests.  Replies on failure. */
static int put_finish(struct s3_req *rq, struct put_ctx *pc, char etag[33])
{
	const struct s3_sums *got = &rq->rq_wr->w_sums;
	int rc = s3_wr_finish(rq->rq_wr);
	uint32_t bad;

	if (rc != 0)
		return s3_reply_clovis(rq, rc, "writing the object"), rc;
	if (pc->pc_expect != UINT64_MAX && rq->rq_wr->w_len != pc->pc_expect)
		return s3_reply_err(rq, 400, "IncompleteBody", "You did not "
				    "provide the number of bytes specified by "
				    "the Content-Length HTTP header"), -EINVAL;
	if (put_trailer_sums(rq, pc) != 0)
		return -EINVAL;
	if (pc->pc_md5_set && memcmp(got->s_md5v, pc->pc_md5, 16) != 0)
		return s3_reply_err(rq, 400, "BadDigest", "The Content-MD5 you "
				    "specified did not match what we "
				    "received (key '%.300s').", rq->rq_key),
		       -EINVAL;
	bad = s3_sums_mismatch(got, &pc->pc_want);
	if (bad != 0)
		return s3_reply_err(rq, 400, "BadDigest", "The %s you "
				    "specified did not match the calculated "
				    "checksum (key '%.300s').",
				    s3_sum_name(bad), rq->rq_key), -EINVAL;
	make_etag(got, pc->pc_part, etag);
	return 0;
}

static void drop_writer(struct s3_req *rq)
{
	if (rq->rq_wr != NULL) {
		s3_wr_abort(rq->rq_wr);
		free(rq->rq_wr);
		rq->rq_wr = NULL;
	}
}

/* The change recording rq_wr's object: done (rc 0), in doubt (the object
 * is kept for the restart rule), or failed (the object is dropped). */
static void end_writer(struct s3_req *rq, int rc)
{
	if (rc != 0 && !s3_tx_doubt(rc)) {
		drop_writer(rq);
		return;
	}
	if (rc == 0)
		s3_wr_done(rq->rq_wr, true);
	else
		s3_wr_keep(rq->rq_wr);
	free(rq->rq_wr);
	rq->rq_wr = NULL;
}

static void done_writer(struct s3_req *rq)
{
	s3_wr_done(rq->rq_wr, false);
	free(rq->rq_wr);
	rq->rq_wr = NULL;
}

/* Start the object part of a record written by rq_wr. */
static void rec_data(struct s3_req *rq, struct s3_buf *rec, const char *etag)
{
	struct s3_wr *w = rq->rq_wr;

	if (w->w_obj) {
		uint8_t raw[16];
		int i;

		for (i = 0; i < 8; i++) {
			raw[i] = (uint8_t)(w->w_o.ob_entity.en_id.ci_hi >> (8 * i));
			raw[8 + i] = (uint8_t)(w->w_o.ob_entity.en_id.ci_lo >> (8 * i));
		}
		s3_tlv_add(rec, T_ID, raw, 16);
	} else {
		s3_tlv_add(rec, T_INLINE, w->w_ibuf.b_data ? w->w_ibuf.b_data : "",
			   (uint32_t)w->w_ibuf.b_len);
	}
	s3_tlv_u64(rec, T_SIZE, w->w_len);
	s3_tlv_u64(rec, T_MTIME, s3_now_ns());
	s3_tlv_add(rec, T_ETAG, etag, (uint32_t)strlen(etag));
}

static int put_end(struct s3_req *rq)
{
	struct put_ctx *pc = rq->rq_ctx;
	struct s3_buf rec = {0};
	const char *inm = s3_hdr(rq, "If-None-Match");
	char etag[33];
	int rc;

	if (put_finish(rq, pc, etag) != 0) {
		drop_writer(rq);
		return 0;
	}
	rec_data(rq, &rec, etag);
	rec_attrs_from_req(rq, &rec);
	s3_buf_add(&rec, pc->pc_extra.b_data, pc->pc_extra.b_len);
	rec_sums(&rec, &rq->rq_wr->w_sums, true);
	if (rq->rq_key_len > S3_KEY_HASHED_PREFIX)
		s3_tlv_add(&rec, T_KEY, rq->rq_key, (uint32_t)rq->rq_key_len);
	rc = rec.b_oom ? -ENOMEM
		       : rec_commit(rq->rq_bk, pc->pc_ik, pc->pc_il, &rec,
				    s3_hdr(rq, "If-Match"), inm, rq->rq_wr,
				    NULL);
	if (rc == 0) {
		struct s3_orec lo;

		if (s3_orec_decode(rec.b_data, rec.b_len, &lo) == 0)
			s3_lifecycle_hdr(rq, rq->rq_bk, rq->rq_key,
					 rq->rq_key_len, &lo);
	}
	s3_buf_fini(&rec);
	if (rc != 0) {
		end_writer(rq, rc);
		if (rc == -EEXIST || rc == -ENODATA)
			return reply_cond(rq, rc);
		if (is_doubt(rc))
			return reply_doubt(rq, rc, "recording the object");
		return s3_reply_clovis(rq, rc, "recording the object");
	}
	if (s3_profile) {
		const uint64_t *t = rq->rq_wr->w_t, t4 = s3_now_ns();

		fprintf(stderr, "strata-s3: profile PUT %llu B: created +%llu "
			"us, body in +%llu us, data applied +%llu us, record "
			"+%llu us\n", (unsigned long long)rq->rq_wr->w_len,
			(unsigned long long)(t[1] ? (t[1] - t[0]) / 1000 : 0),
			(unsigned long long)((t[2] - t[0]) / 1000),
			(unsigned long long)((t[3] - t[2]) / 1000),
			(unsigned long long)((t4 - t[3]) / 1000));
	}
	sums_reply(rq, &rq->rq_wr->w_sums, true);
	end_writer(rq, 0);
	etag_hdr(rq, etag);
	return s3_reply_empty(rq, 200);
}

/* Body length announced: decoded length of aws-chunked, else
 * Content-Length; UINT64_MAX when unknown.  -1: refuse. */
static int body_len(struct s3_req *rq, uint64_t *len)
{
	const char *d = s3_hdr(rq, "x-amz-decoded-content-length");
	const char *cl = s3_hdr(rq, "Content-Length");
	const char *v = rq->rq_chunked ? d : cl;
	char *e;

	*len = UINT64_MAX;
	if (v == NULL) {
		if (s3_hdr(rq, "Transfer-Encoding") != NULL && !rq->rq_chunked)
			return 0;
		if (rq->rq_chunked && cl != NULL)
			return 0;
		return s3_reply_err(rq, 411, "MissingContentLength", "You must "
				    "provide the Content-Length HTTP header."),
		       -1;
	}
	*len = strtoull(v, &e, 10);
	if (*v == 0 || *e != 0 || *v == '-')
		return s3_reply_err(rq, 400, "InvalidArgument", "Content-Length "
				    "'%s' is not a number", v), -1;
	if (*len > S3_PUT_MAX)
		return s3_reply_err(rq, 400, "EntityTooLarge", "Your proposed "
				    "upload exceeds the maximum allowed size"),
		       -1;
	return 0;
}

/* Common start of PutObject and UploadPart: the writer and its context. */
static int put_begin(struct s3_req *rq, struct put_ctx *pc)
{
	int rc;

	if (content_md5(rq, pc) != 0 || content_sums(rq, pc) != 0 ||
	    body_len(rq, &pc->pc_expect) != 0)
		return -EINVAL;
	rq->rq_wr = calloc(1, sizeof *rq->rq_wr);
	if (rq->rq_wr == NULL)
		return s3_reply_err(rq, 500, "InternalError", "out of memory"),
		       -ENOMEM;
	rc = s3_wr_begin(rq->rq_wr, rq->rq_bk, pc->pc_expect, put_algs(pc),
			 pc->pc_part ? NULL : pc->pc_ik, pc->pc_il,
			 pc->pc_part ? pc->pc_pk : NULL, pc->pc_pkl);
	if (rc != 0) {
		s3_reply_clovis(rq, rc, "creating the object");
		drop_writer(rq);
		return rc;
	}
	/* PutObject: its one write (object up to a chunk) joins the dtx
	 * that records it (s3_tx_write(), in rec_commit()) */
	rq->rq_wr->w_hold = !pc->pc_part;
	rq->rq_body = S3_BODY_STREAM;
	return 0;
}

static int put_object(struct s3_req *rq)
{
	struct put_ctx *pc;
	struct s3_buf tmp = {0};

	rq->rq_op = "PutObject";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:PutObject") != 0 ||
	    need_key(rq) != 0)
		return 0;
	if (rec_attrs_from_req(rq, &tmp) != 0) {
		s3_buf_fini(&tmp);
		return s3_reply_err(rq, 400, "MetadataTooLarge", "Your "
				    "metadata headers exceed the maximum "
				    "allowed metadata size (%u bytes)",
				    S3_META_MAX);
	}
	s3_buf_fini(&tmp);
	pc = calloc(1, sizeof *pc);
	if (pc == NULL)
		return s3_reply_err(rq, 500, "InternalError", "out of memory");
	rq->rq_ctx = pc;
	rq->rq_cleanup = put_cleanup;
	if (rec_extra_from_req(rq, &pc->pc_extra, false) != 0)
		return 0;
	pc->pc_il = s3_ikey(rq->rq_key, rq->rq_key_len, pc->pc_ik);
	if (put_begin(rq, pc) != 0)
		return 0;
	rq->rq_end = put_end;
	return 0;
}

/* Parse "bytes=a-b": 0 ok, 1 no usable range (serve all), -1 invalid. */
static int parse_range(const char *h, uint64_t size, uint64_t *s, uint64_t *e)
{
	unsigned long long a, b;
	char *p;

	if (h == NULL || strncmp(h, "bytes=", 6) != 0 || strchr(h, ',') != NULL)
		return 1;
	h += 6;
	if (*h == '-') {
		b = strtoull(h + 1, &p, 10);
		if (p == h + 1 || *p)
			return 1;
		if (b == 0)
			return -1;
		*s = b >= size ? 0 : size - b;
		*e = size;
		return size == 0 ? -1 : 0;
	}
	a = strtoull(h, &p, 10);
	if (p == h || *p != '-')
		return 1;
	h = p + 1;
	if (*h == 0) {
		b = size ? size - 1 : 0;
	} else {
		b = strtoull(h, &p, 10);
		if (*p || b < a)
			return 1;
	}
	if (a >= size)
		return -1;
	*s = a;
	*e = (b >= size ? size - 1 : b) + 1;
	return 0;
}

/* The GET/HEAD preconditions: 0 go on, else the status (304 / 412). */
static int preconditions(struct s3_req *rq, const struct s3_orec *r,
			 const char *im_h, const char *inm_h,
			 const char *ims_h, const char *ius_h)
{
	const char *im = s3_hdr(rq, im_h), *inm = s3_hdr(rq, inm_h);
	const char *ims = s3_hdr(rq, ims_h), *ius = s3_hdr(rq, ius_h);
	int64_t mt = (int64_t)(r->or_mtime_ns / 1000000000ull), t;
	bool get = strcmp(rq->rq_method, "GET") == 0 ||
		   strcmp(rq->rq_method, "HEAD") == 0;

	if (im != NULL && !etag_in(im, r->or_etag))
		return 412;
	if (im == NULL && ius != NULL && s3_time_parse(ius, &t) == 0 && mt > t)
		return 412;
	if (inm != NULL && etag_in(inm, r->or_etag))
		return get ? 304 : 412;
	if (inm == NULL && ims != NULL && s3_time_parse(ims, &t) == 0 &&
	    mt <= t)
		return get ? 304 : 412;
	return 0;
}

static void response_overrides(struct s3_req *rq)
{
	static const char *const q[][2] = {
		{"response-content-type", "Content-Type"},
		{"response-content-disposition", "Content-Disposition"},
		{"response-cache-control", "Cache-Control"},
		{"response-content-language", "Content-Language"},
		{"response-content-encoding", "Content-Encoding"},
		{"response-expires", "Expires"},
	};
	size_t i;

	for (i = 0; i < sizeof q / sizeof q[0]; i++) {
		const char *v = s3_q(rq, q[i][0]);

		if (v != NULL)
			s3_reply_hdr(rq, q[i][1], v);
	}
}

/* Drop what get_object() holds: the reader when opened, else the record. */
static void get_drop(struct s3_rd *rd, bool opened, void *v)
{
	if (opened)
		s3_rd_close(rd);
	else
		free(v);
}

/* With x-amz-checksum-mode: ENABLED, the checksum of part pnum of
 * multipart record r (its T_PSUMS) and the object's checksum type. */
static void part_sums_reply(struct s3_req *rq, const struct s3_orec *r,
			    unsigned long pnum)
{
	const uint8_t *raws;
	uint32_t bit, n, len;
	int type;
	char b64[S3_SUM_B64_MAX];
	size_t bl;

	if (!s3_ck_psums(r->or_rec, r->or_rec_len, &bit, &type, &raws, &n) ||
	    n != r->or_nparts || pnum > n)
		return;
	len = s3_sum_len(bit);
	bl = s3_b64enc(raws + (pnum - 1) * len, len, b64);
	b64[bl] = 0;
	s3_reply_hdr(rq, s3_sum_hdr(bit), b64);
	s3_reply_hdr(rq, "x-amz-checksum-type", s3_ck_type_name(type));
}

static int get_object(struct s3_req *rq)
{
	bool head = strcmp(rq->rq_method, "HEAD") == 0, opened = false;
	bool mode = s3_ck_mode(rq);
	struct s3_orec r;
	struct s3_rd rd;
	void *v;
	size_t vl;
	uint64_t s = 0, e;
	unsigned long pnum = 0;
	int rc, pre, rr, tries = 0;

	rq->rq_op = head ? "HeadObject" : "GetObject";
	if (s3_need_bucket(rq, 0, NULL) != 0 || need_key(rq) != 0)
		return 0;
	if (s3_q(rq, "partNumber") != NULL) {
		const char *q = s3_q(rq, "partNumber");
		char *end;

		pnum = strtoul(q, &end, 10);
		if (*q < '0' || *q > '9' || *end != 0 || pnum < 1 ||
		    pnum > S3_PARTS_MAX)
			return s3_reply_err(rq, 400, "InvalidArgument", "Part "
					    "number must be an integer between "
					    "1 and %u (partNumber=%s)",
					    S3_PARTS_MAX, q);
		if (s3_hdr(rq, "Range") != NULL)
			return s3_reply_err(rq, 400, "InvalidRequest", "Cannot "
					    "specify both Range header and "
					    "partNumber query parameter");
	}
again:
	rc = rec_get(rq->rq_bk, rq->rq_key, rq->rq_key_len, &v, &vl, &r);
	if (rc == 0 && s3_authz(rq, rq->rq_bk, rq->rq_key, rq->rq_key_len, &r,
				S3_P_READ, "s3:GetObject") != 0) {
		free(v);
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied");
	}
	if (rc == -ENOENT && s3_authz(rq, rq->rq_bk, NULL, 0, NULL, S3_P_READ,
				      "s3:ListBucket") != 0)
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied");
	if (rc == 0 && !head) {
		/* The record's first object gone: a change of the key
		 * replaced it meanwhile, or is in doubt with part of it
		 * applied (its DELETE of the old object on one server, its
		 * record PUT not yet on another).  Once every dtx in doubt now
		 * is decided, the record read again is the new one. */
		rc = s3_rd_open(&rd, rq->rq_bk, v, vl);
		opened = true;
		if (rc == 0)
			rc = s3_rd_first(&rd, 0);
		if (rc == -ENOENT && tries++ == 0) {
			s3_rd_close(&rd);
			opened = false;
			rc = clovis_dtx_settle(s3g.g_cl, 0, S3_GET_SETTLE_MS);
			if (rc != 0)
				return s3_reply_err(rq, 503, "SlowDown",
						    "reading the key: a change "
						    "of it is in doubt (%s): "
						    "retry", clovis_errmsg());
			goto again;
		}
		if (rc != 0) {
			s3_rd_close(&rd);
			return s3_reply_clovis(rq, rc, "opening the object");
		}
	}
	if (rc == -ENOENT)
		return s3_reply_err(rq, 404, "NoSuchKey", "The specified key "
				    "does not exist.");
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "looking up the key");
	pre = preconditions(rq, &r, "If-Match", "If-None-Match",
			    "If-Modified-Since", "If-Unmodified-Since");
	if (pre == 412) {
		get_drop(&rd, opened, v);
		return s3_reply_err(rq, 412, "PreconditionFailed", "At least "
				    "one of the pre-conditions you specified "
				    "did not hold");
	}
	e = r.or_size;
	if (pnum > 0) {
		/* ?partNumber=N: the bytes of part N of a multipart object;
		 * 1 of any other is the whole object */
		uint32_t np = r.or_nparts > 0 ? r.or_nparts : 1, k;

		if (pnum > np) {
			get_drop(&rd, opened, v);
			return s3_reply_err(rq, 400, "InvalidPart", "Part %lu of "
					    "%.*s does not exist (it has %u)",
					    pnum, (int)rq->rq_key_len,
					    rq->rq_key, np);
		}
		for (k = 0; k + 1 < pnum; k++)
			s += s3_u64(r.or_parts + S3_PART_STRIDE * k + 16);
		if (r.or_nparts > 0)
			e = s + s3_u64(r.or_parts + S3_PART_STRIDE * k + 16);
		rr = r.or_nparts > 0 ? 0 : 1;
	} else
		rr = parse_range(s3_hdr(rq, "Range"), r.or_size, &s, &e);
	if (rr < 0) {
		char cr[48];

		get_drop(&rd, opened, v);
		snprintf(cr, sizeof cr, "bytes */%lu", r.or_size);
		rc = s3_reply_err(rq, 416, "InvalidRange", "The requested range "
				  "is not satisfiable");
		s3_reply_hdr(rq, "Content-Range", cr);
		return rc;
	}
	rq->rq_hdrs.b_len = 0;
	if (s3_hdr(rq, "Origin") != NULL)
		s3_cors_reply_hdrs(rq, rq->rq_bk);
	rec_attrs_reply(rq, &r, rr != 0 && pre != 304 && mode);
	if (mode && pnum > 0 && r.or_nparts > 0 && pre != 304)
		part_sums_reply(rq, &r, pnum);
	if (r.or_tags != NULL) {
		char tc[16];

		snprintf(tc, sizeof tc, "%u", s3_tags_count(r.or_tags,
							    r.or_tags_len));
		s3_reply_hdr(rq, "x-amz-tagging-count", tc);
	}
	s3_lifecycle_hdr(rq, rq->rq_bk, rq->rq_key, rq->rq_key_len, &r);
	if (pre == 304) {
		get_drop(&rd, opened, v);
		return s3_reply_empty(rq, 304);
	}
	s3_reply_hdr(rq, "Accept-Ranges", "bytes");
	if (r.or_nparts > 0) {
		char pc[16];

		snprintf(pc, sizeof pc, "%u", r.or_nparts);
		s3_reply_hdr(rq, "x-amz-mp-parts-count", pc);
	}
	response_overrides(rq);
	if (rr == 0) {
		char cr[80];

		snprintf(cr, sizeof cr, "bytes %lu-%lu/%lu", s, e - 1,
			 r.or_size);
		s3_reply_hdr(rq, "Content-Range", cr);
	}
	if (!opened) {
		rc = s3_rd_open(&rd, rq->rq_bk, v, vl);
		if (rc != 0) {
			free(v);
			return s3_reply_clovis(rq, rc, "decoding the record");
		}
	}
	return s3_reply_reader(rq, rr == 0 ? 206 : 200, &rd, s, e - s, head);
}

/* Delete key (k, kl) of b; 0 also when it does not exist.  The record DEL
 * and the DELETE of its objects are one change (one dtx).  Returns as
 * rec_commit(). */
static int delete_key(struct s3_bucket *b, const char *k, size_t kl)
{
	uint8_t ik[CLOVIS_KEY_MAX];
	size_t il = s3_ikey(k, kl, ik);
	pthread_mutex_t *l = s3_key_lock(ik, il);
	struct s3_tx *t = s3_tx_new();
	struct s3_orec old;
	void *ov = NULL;
	size_t ol;
	int rc;

	if (t == NULL)
		return -ENOMEM;
	pthread_mutex_lock(l);
	if (s3_key_in_doubt(l)) {
		rc = -EAGAIN;
		goto out;
	}
	rc = s3_idx_get(&b->bk_idx, ik, il, &ov, &ol);
	if (rc != 0)
		goto out;
	if (s3_orec_decode(ov, ol, &old) == 0) {
		if (old.or_key != NULL &&
		    (old.or_key_len != kl || memcmp(old.or_key, k, kl) != 0))
			goto out; /* another long key's slot: k is not there */
		rc = s3_tx_free(t, b, &old, ik, il, NULL, 0);
	}
	if (rc == 0)
		rc = s3_tx_del(t, &b->bk_idx, ik, il);
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
	return rc == -ENOENT ? 0 : rc;
}

static int delete_object(struct s3_req *rq)
{
	int rc;

	rq->rq_op = "DeleteObject";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:DeleteObject") != 0 ||
	    need_key(rq) != 0)
		return 0;
	rc = delete_key(rq->rq_bk, rq->rq_key, rq->rq_key_len);
	if (is_doubt(rc))
		return reply_doubt(rq, rc, "deleting the key");
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "deleting the key");
	return s3_reply_empty(rq, 204);
}

static int delete_objects_end(struct s3_req *rq)
{
	struct s3_xel *x, *o;
	struct s3_buf out = {0};
	bool quiet;
	uint32_t n = 0;
	const char *m = s3_hdr(rq, "Content-MD5");

	if (m != NULL) {
		uint8_t want[64], got[16];
		unsigned int gl = 16;

		if (strlen(m) != 24 || s3_b64dec(m, 24, want) != 16)
			return s3_reply_err(rq, 400, "InvalidDigest", "The "
					    "Content-MD5 you specified was "
					    "invalid.");
		EVP_Digest(rq->rq_xml.b_data ? rq->rq_xml.b_data : "",
			   rq->rq_xml.b_len, got, &gl, EVP_md5(), NULL);
		if (memcmp(want, got, 16) != 0)
			return s3_reply_err(rq, 400, "BadDigest", "The "
					    "Content-MD5 you specified did not "
					    "match what we received.");
	}
	x = s3_xml_parse(rq->rq_xml.b_data ? rq->rq_xml.b_data : "",
			 rq->rq_xml.b_len);
	if (x == NULL || strcmp(x->x_name, "Delete") != 0)
		goto malformed;
	for (o = x->x_child; o != NULL; o = o->x_next)
		if (strcmp(o->x_name, "Object") == 0 &&
		    (++n > S3_DELETE_MAX || s3_xml_child(o, "Key") == NULL))
			goto malformed;
	if (n == 0)
		goto malformed;
	o = s3_xml_child(x, "Quiet");
	quiet = o != NULL && strcasecmp(o->x_text, "true") == 0;
	s3_buf_str(&out, XHDR "<DeleteResult xmlns=\"" XMLNS "\">");
	for (o = x->x_child; o != NULL; o = o->x_next) {
		struct s3_xel *k = s3_xml_child(o, "Key");
		int rc;

		if (strcmp(o->x_name, "Object") != 0)
			continue;
		if (k->x_text_len > S3_KEY_MAX || k->x_text_len == 0) {
			s3_buf_str(&out, "<Error><Key>");
			s3_buf_xml(&out, k->x_text, k->x_text_len);
			s3_buf_str(&out, "</Key><Code>KeyTooLongError</Code>"
				   "<Message>Your key is too long</Message>"
				   "</Error>");
			continue;
		}
		rc = delete_key(rq->rq_bk, k->x_text, k->x_text_len);
		if (is_doubt(rc)) {
			s3_buf_str(&out, "<Error><Key>");
			s3_buf_xml(&out, k->x_text, k->x_text_len);
			s3_buf_printf(&out, "</Key><Code>SlowDown</Code>"
				      "<Message>%s: retry</Message></Error>",
				      rc == -EAGAIN ? "an earlier change of "
				      "this key is not settled yet"
				      : "the outcome is not known yet");
		} else if (rc != 0) {
			s3_buf_str(&out, "<Error><Key>");
			s3_buf_xml(&out, k->x_text, k->x_text_len);
			s3_buf_printf(&out, "</Key><Code>InternalError</Code>"
				      "<Message>%s</Message></Error>",
				      clovis_strerror(rc));
		} else if (!quiet) {
			s3_buf_str(&out, "<Deleted><Key>");
			s3_buf_xml(&out, k->x_text, k->x_text_len);
			s3_buf_str(&out, "</Key></Deleted>");
		}
	}
	s3_buf_str(&out, "</DeleteResult>");
	s3_xml_free(x);
	return s3_reply_xml(rq, 200, &out);
malformed:
	s3_xml_free(x);
	return s3_reply_err(rq, 400, "MalformedXML", "The XML you provided was "
			    "not well-formed or did not validate against our "
			    "published schema");
}

static int delete_objects(struct s3_req *rq)
{
	rq->rq_op = "DeleteObjects";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:DeleteObject") != 0)
		return 0;
	rq->rq_body = S3_BODY_XML;
	rq->rq_end = delete_objects_end;
	return 0;
}

/* ---------------------------------------------------------- CopyObject */

/* Bytes [off, off + len) of the source object (record sv of bucket sb,
 * taken over) into the writer rq_wr, begun for len bytes; then finished. */
static int copy_bytes(struct s3_req *rq, struct s3_bucket *sb, void *sv,
		      size_t svl, uint64_t off, uint64_t len)
{
	struct s3_rd rd;
	uint64_t end = off + len;
	char *buf = malloc(S3_CHUNK);
	int rc;

	if (buf == NULL) {
		free(sv);
		return -ENOMEM;
	}
	rc = s3_rd_open(&rd, sb, sv, svl);
	while (rc == 0 && off < end) {
		size_t want = end - off < S3_CHUNK ? (size_t)(end - off)
						   : S3_CHUNK;
		long n = s3_rd_read(&rd, off, buf, want);

		if (n <= 0) {
			rc = n < 0 ? (int)n : -EIO;
			break;
		}
		rc = s3_wr_data(rq->rq_wr, buf, (size_t)n);
		off += (uint64_t)n;
	}
	if (rc == 0 || rd.r_rec != NULL)
		s3_rd_close(&rd);
	free(buf);
	return rc == 0 ? s3_wr_finish(rq->rq_wr) : rc;
}

/* The whole source object into a new writer for the request's key. */
static int copy_data(struct s3_req *rq, struct s3_bucket *sb, void *sv,
		     size_t svl, const struct s3_orec *sr, char etag[33])
{
	struct put_ctx *pc = rq->rq_ctx;
	int rc;

	rq->rq_wr = calloc(1, sizeof *rq->rq_wr);
	if (rq->rq_wr == NULL) {
		free(sv);
		return -ENOMEM;
	}
	rc = s3_wr_begin(rq->rq_wr, rq->rq_bk, sr->or_size,
			 put_algs(pc) | rec_sum_algs(sr), pc->pc_ik, pc->pc_il,
			 NULL, 0);
	if (rc != 0) {
		free(sv);
		return rc;
	}
	rc = copy_bytes(rq, sb, sv, svl, 0, sr->or_size);
	if (rc == 0)
		make_etag(&rq->rq_wr->w_sums, false, etag);
	return rc;
}

/*
 * The source of a copy, x-amz-copy-source "[/]bucket/key[?versionId=..]"
 * (URL-encoded): its bucket, its decoded key (*dec, to free), its record
 * (*sv, to free) and decoded record, the x-amz-copy-source-if-*
 * preconditions checked.  Replies on failure (InvalidArgument,
 * NoSuchBucket, AccessDenied, NoSuchKey, PreconditionFailed): -errno.
 */
static int copy_source(struct s3_req *rq, const char *src,
		       struct s3_bucket **sb, char **dec, const char **skey,
		       void **sv, size_t *svl, struct s3_orec *sr)
{
	char *k, *q;
	int rc;

	*dec = malloc(strlen(src) + 1);
	if (*dec == NULL)
		return s3_reply_err(rq, 500, "InternalError", "out of memory"),
		       -ENOMEM;
	q = strchr(src, '?');
	if (q != NULL && strcmp(q, "?versionId=null") != 0)
		return s3_reply_err(rq, 501, "NotImplemented", "x-amz-copy-"
				    "source '%.300s': only the current version "
				    "(versionId=null) of an object can be "
				    "copied by this gateway", src), -ENOTSUP;
	if (s3_urldec(src, q ? (size_t)(q - src) : strlen(src), *dec, false)
	    < 0)
		goto bad_src;
	k = *dec + (**dec == '/');
	q = strchr(k, '/');
	if (q == NULL || q[1] == 0)
		goto bad_src;
	*q++ = 0;
	if (!bucket_name_ok(k) || s3_bucket_get(k, sb) != 0)
		return s3_reply_err(rq, 404, "NoSuchBucket", "The specified "
				    "bucket does not exist"), -ENOENT;
	rc = rec_get(*sb, q, strlen(q), sv, svl, sr);
	if (rc == 0 && s3_authz(rq, *sb, q, strlen(q), sr, S3_P_READ,
				"s3:GetObject") != 0)
		rc = -EACCES;
	else if (rc == -ENOENT && s3_authz(rq, *sb, NULL, 0, NULL, S3_P_READ,
					   "s3:ListBucket") != 0)
		rc = -EACCES;
	if (rc != 0) {
		if (rc == -EACCES)
			return s3_reply_err(rq, 403, "AccessDenied", "Access "
					    "Denied"), rc;
		if (rc == -ENOENT)
			s3_reply_err(rq, 404, "NoSuchKey", "The specified key "
				     "does not exist.");
		else
			s3_reply_clovis(rq, rc, "looking up the source");
		return rc;
	}
	*skey = q;
	if (preconditions(rq, sr, "x-amz-copy-source-if-match",
			  "x-amz-copy-source-if-none-match",
			  "x-amz-copy-source-if-modified-since",
			  "x-amz-copy-source-if-unmodified-since") != 0)
		return s3_reply_err(rq, 412, "PreconditionFailed", "At least "
				    "one of the pre-conditions you specified "
				    "did not hold"), -EAGAIN;
	return 0;
bad_src:
	return s3_reply_err(rq, 400, "InvalidArgument", "Copy Source must "
			    "mention the source bucket and key: "
			    "sourcebucket/sourcekey"), -EINVAL;
}

/* The 200 reply of a copy: element el with the time and the ETag. */
static void copy_reply(struct s3_req *rq, const char *el, const char *etag)
{
	struct s3_buf x = {0};
	char t[32];

	s3_time_iso(s3_now_ns(), t);
	s3_buf_printf(&x, XHDR "<%s xmlns=\"" XMLNS "\"><LastModified>%s"
		      "</LastModified><ETag>&quot;%s&quot;</ETag></%s>", el, t,
		      etag, el);
	s3_reply_xml(rq, 200, &x);
}

static int copy_object(struct s3_req *rq, const char *src)
{
	char *dec = NULL;
	const char *q;
	struct s3_bucket *sb;
	struct s3_orec sr;
	struct s3_buf rec = {0};
	struct put_ctx *pc;
	const char *dir = s3_hdr(rq, "x-amz-metadata-directive");
	const char *tdir = s3_hdr(rq, "x-amz-tagging-directive");
	bool replace = dir != NULL && strcasecmp(dir, "REPLACE") == 0;
	bool treplace = tdir != NULL && strcasecmp(tdir, "REPLACE") == 0;
	void *sv = NULL;
	size_t svl;
	char etag[33];
	int rc;

	rq->rq_op = "CopyObject";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:PutObject") != 0 ||
	    need_key(rq) != 0)
		goto out;
	if (dir != NULL && !replace && strcasecmp(dir, "COPY") != 0) {
		s3_reply_err(rq, 400, "InvalidArgument", "Unknown metadata "
			     "directive.");
		goto out;
	}
	if (copy_source(rq, src, &sb, &dec, &q, &sv, &svl, &sr) != 0)
		goto out;
	if (strcmp(sb->bk_name, rq->rq_bk->bk_name) == 0 &&
	    strlen(q) == rq->rq_key_len && memcmp(q, rq->rq_key, rq->rq_key_len)
	    == 0 && !replace) {
		s3_reply_err(rq, 400, "InvalidRequest", "This copy request is "
			     "illegal because it is trying to copy an object to "
			     "itself without changing the object's metadata, "
			     "storage class, website redirect location or "
			     "encryption attributes.");
		goto out;
	}
	pc = calloc(1, sizeof *pc);
	if (pc == NULL)
		goto out;
	rq->rq_ctx = pc;
	rq->rq_cleanup = put_cleanup;
	pc->pc_il = s3_ikey(rq->rq_key, rq->rq_key_len, pc->pc_ik);
	if (tdir != NULL && strcasecmp(tdir, "COPY") != 0 && !treplace) {
		s3_reply_err(rq, 400, "InvalidArgument", "Unknown tagging "
			     "directive '%.32s'", tdir);
		goto out;
	}
	if (rec_extra_from_req(rq, &rec, !treplace) != 0) {
		s3_buf_fini(&rec);
		goto out;
	}
	if (replace)
		rc = rec_attrs_from_req(rq, &rec);
	else
		rec_attrs_copy(sv, svl, &rec, false, false);
	if (!treplace)
		rec_attrs_copy_tags(sv, svl, &rec);
	{
		struct s3_buf data = {0};

		rc = copy_data(rq, sb, sv, svl, &sr, etag);
		sv = NULL;
		if (rc != 0) {
			drop_writer(rq);
			s3_buf_fini(&rec);
			s3_reply_clovis(rq, rc, "copying the data");
			goto out;
		}
		rec_data(rq, &data, etag);
		s3_buf_add(&data, rec.b_data, rec.b_len);
		rec_sums(&data, &rq->rq_wr->w_sums, true);
		s3_buf_fini(&rec);
		rec = data;
	}
	if (rq->rq_key_len > S3_KEY_HASHED_PREFIX)
		s3_tlv_add(&rec, T_KEY, rq->rq_key, (uint32_t)rq->rq_key_len);
	rc = rec_commit(rq->rq_bk, pc->pc_ik, pc->pc_il, &rec, NULL, NULL,
			rq->rq_wr, NULL);
	s3_buf_fini(&rec);
	end_writer(rq, rc);
	if (rc != 0) {
		if (is_doubt(rc))
			reply_doubt(rq, rc, "recording the copy");
		else
			s3_reply_clovis(rq, rc, "recording the copy");
		goto out;
	}
	copy_reply(rq, "CopyObjectResult", etag);
out:
	free(sv);
	free(dec);
	return 0;
}

/* ------------------------------------------------------------- listing */

struct lst {
	const char *l_prefix;
	size_t l_pl;
	const char *l_delim;
	size_t l_dl;
	const char *l_after;   /* exclusive lower bound (NULL: none) */
	size_t l_al;
	uint32_t l_max;
	bool l_url;
	int l_kind;            /* 1 v1, 2 v2, 3 versions */
	bool l_owner;
	/* out */
	uint32_t l_count;
	bool l_trunc;
	char *l_last;          /* last item emitted (malloc) */
	size_t l_lastl, l_lastcap;
	char *l_cp;            /* last common prefix (malloc) */
	size_t l_cpl;
};

static void xml_name(struct s3_buf *x, struct lst *l, const char *s, size_t n)
{
	if (l->l_url) {
		struct s3_buf e = {0};

		s3_urlenc(&e, s, n, true);
		s3_buf_xml(x, e.b_data ? e.b_data : "", e.b_len);
		s3_buf_fini(&e);
	} else {
		s3_buf_xml(x, s, n);
	}
}

static int bcmp_len(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c != 0 ? c : (al < bl ? -1 : al > bl);
}

static void lst_last(struct lst *l, const char *s, size_t n)
{
	if (l->l_last == NULL || l->l_lastcap < n + 1) {
		free(l->l_last);
		l->l_lastcap = n + 1 < 256 ? 256 : n + 1;
		l->l_last = malloc(l->l_lastcap);
	}
	if (l->l_last != NULL) {
		memcpy(l->l_last, s, n);
		l->l_last[n] = 0;
	}
	l->l_lastl = n;
}

static void emit_key(struct s3_buf *x, struct lst *l, struct s3_req *rq,
		     const char *k, size_t kl, const struct s3_orec *r)
{
	char t[48];

	s3_time_iso(r->or_mtime_ns, t);
	s3_buf_str(x, l->l_kind == 3 ? "<Version><Key>" : "<Contents><Key>");
	xml_name(x, l, k, kl);
	s3_buf_str(x, "</Key>");
	if (l->l_kind == 3)
		s3_buf_str(x, "<VersionId>null</VersionId><IsLatest>true"
			   "</IsLatest>");
	s3_buf_printf(x, "<LastModified>%s</LastModified><ETag>&quot;%s&quot;"
		      "</ETag><Size>%lu</Size><StorageClass>STANDARD"
		      "</StorageClass>", t, r->or_etag, r->or_size);
	if (l->l_owner) {
		size_t on;
		const char *own = s3_obj_owner(rq->rq_bk, r, &on);

		s3_buf_str(x, "<Owner><ID>");
		s3_buf_xml(x, own, on);
		s3_buf_str(x, "</ID><DisplayName>");
		s3_buf_xml(x, own, on);
		s3_buf_str(x, "</DisplayName></Owner>");
	}
	s3_buf_str(x, l->l_kind == 3 ? "</Version>" : "</Contents>");
}

/* The smallest string greater than every string starting with s: s with
 * its last byte below 0xff incremented (trailing 0xff bytes dropped). */
static size_t successor(char *s, size_t n)
{
	while (n > 0 && (unsigned char)s[n - 1] == 0xff)
		n--;
	if (n > 0)
		s[n - 1]++;
	return n;
}

/* Walk the bucket index; items (keys, common prefixes) go to x until
 * l_max of them; l_trunc when more exist. */
static int lst_walk(struct s3_req *rq, struct lst *l, struct s3_buf *x)
{
	uint8_t cur[CLOVIS_KEY_MAX + 1];
	size_t curl = 0;
	bool excl = false, started = false;
	void **keys, **vals;
	size_t *kls, *vls;
	uint32_t rounds = 0;
	int rc = 0;

	keys = malloc(S3_NEXT_MAX * (2 * sizeof(void *) + 2 * sizeof(size_t)));
	if (keys == NULL)
		return -ENOMEM;
	vals = keys + S3_NEXT_MAX;
	kls = (size_t *)(vals + S3_NEXT_MAX);
	vls = kls + S3_NEXT_MAX;

	if (l->l_pl > 0) {
		curl = s3_ikey(l->l_prefix, l->l_pl, cur);
		started = true;
	}
	if (l->l_after != NULL &&
	    bcmp_len(l->l_after, l->l_al, l->l_prefix, l->l_pl) >= 0) {
		curl = s3_ikey(l->l_after, l->l_al, cur);
		excl = true;
		started = true;
	}
	while (rounds++ < 100000000) {
		uint32_t want = l->l_max - l->l_count + 1, nr, k;
		bool done = false, jump = false;

		if (l->l_dl > 0 || want > S3_NEXT_MAX)
			want = l->l_dl > 0 ? S3_NEXT_BATCH : S3_NEXT_MAX;
		nr = want;
		rc = s3_idx_next(&rq->rq_bk->bk_idx, started ? cur : NULL, curl,
				 excl, keys, kls, vals, vls, &nr);
		if (rc != 0)
			break;
		for (k = 0; k < nr; k++) {
			struct s3_orec r;
			const char *key = keys[k];
			size_t kl = kls[k];
			const char *d;

			if (done || jump)
				goto next;
			if (s3_orec_decode(vals[k], vls[k], &r) != 0)
				goto adv;
			if (r.or_key != NULL) {
				key = (const char *)r.or_key;
				kl = r.or_key_len;
			}
			if (kl < l->l_pl || memcmp(key, l->l_prefix, l->l_pl)) {
				if (bcmp_len(key, kl, l->l_prefix, l->l_pl) > 0)
					done = true;
				goto adv;
			}
			if (l->l_after != NULL &&
			    bcmp_len(key, kl, l->l_after, l->l_al) <= 0)
				goto adv;
			d = l->l_dl ? memmem(key + l->l_pl, kl - l->l_pl,
					     l->l_delim, l->l_dl) : NULL;
			if (d != NULL) {
				size_t cpl = (size_t)(d - key) + l->l_dl;

				if (l->l_cp != NULL && cpl == l->l_cpl &&
				    memcmp(l->l_cp, key, cpl) == 0)
					goto adv;
				if (l->l_after != NULL &&
				    bcmp_len(key, cpl, l->l_after, l->l_al) <= 0)
					goto adv;
				if (l->l_count == l->l_max) {
					l->l_trunc = true;
					done = true;
					goto next;
				}
				free(l->l_cp);
				l->l_cp = malloc(cpl + 1);
				if (l->l_cp == NULL)
					goto adv;
				memcpy(l->l_cp, key, cpl);
				l->l_cpl = cpl;
				lst_last(l, key, cpl);
				l->l_count++;
				s3_buf_str(x, "<CommonPrefixes><Prefix>");
				xml_name(x, l, key, cpl);
				s3_buf_str(x, "</Prefix></CommonPrefixes>");
				if (cpl <= S3_KEY_HASHED_PREFIX) {
					memcpy(cur, key, cpl);
					curl = successor((char *)cur, cpl);
					if (curl > 0) {
						excl = false;
						jump = true;
						goto next;
					}
				}
				goto adv;
			}
			if (l->l_count == l->l_max) {
				l->l_trunc = true;
				done = true;
				goto next;
			}
			l->l_count++;
			lst_last(l, key, kl);
			emit_key(x, l, rq, key, kl, &r);
adv:
			memcpy(cur, keys[k], kls[k]);
			curl = kls[k];
			excl = true;
next:
			free(keys[k]);
			free(vals[k]);
		}
		started = true;
		if (done || (!jump && nr < want))
			break;
	}
	free(keys);
	return rc;
}

static int list_objects(struct s3_req *rq)
{
	const char *lt = s3_q(rq, "list-type"), *mk = s3_q(rq, "max-keys");
	const char *enc = s3_q(rq, "encoding-type");
	bool v2 = lt != NULL && strcmp(lt, "2") == 0;
	bool versions = s3_qhas(rq, "versions");
	struct lst l = {0};
	struct s3_buf x = {0};
	const char *tok = s3_q(rq, "continuation-token");
	const char *sa = s3_q(rq, "start-after");
	const char *marker = s3_q(rq, versions ? "key-marker" : "marker");
	uint8_t tokdec[S3_KEY_MAX + 4];
	long tl = -1;
	char *e;
	int rc;

	rq->rq_op = versions ? "ListObjectVersions"
			     : v2 ? "ListObjectsV2" : "ListObjects";
	if (s3_need_bucket(rq, S3_P_READ, versions ? "s3:ListBucketVersions"
			   : "s3:ListBucket") != 0)
		return 0;
	l.l_kind = versions ? 3 : v2 ? 2 : 1;
	l.l_max = 1000;
	if (mk != NULL) {
		long m = strtol(mk, &e, 10);

		if (*mk == 0 || *e || m < 0)
			return s3_reply_err(rq, 400, "InvalidArgument",
					    "max-keys must be a non-negative "
					    "integer");
		l.l_max = m > 1000 ? 1000 : (uint32_t)m;
	}
	if (enc != NULL && strcmp(enc, "url") != 0)
		return s3_reply_err(rq, 400, "InvalidArgument", "Invalid "
				    "Encoding Method specified in Request");
	l.l_url = enc != NULL;
	l.l_prefix = s3_q(rq, "prefix") ? s3_q(rq, "prefix") : "";
	l.l_pl = strlen(l.l_prefix);
	l.l_delim = s3_q(rq, "delimiter") ? s3_q(rq, "delimiter") : "";
	l.l_dl = strlen(l.l_delim);
	l.l_owner = !v2 || (s3_q(rq, "fetch-owner") &&
			    strcmp(s3_q(rq, "fetch-owner"), "true") == 0);
	if (v2 && tok != NULL && *tok != 0) {
		tl = s3_b64dec(tok, strlen(tok), tokdec);
		if (tl < 1 || tl > (long)S3_KEY_MAX + 1 || tokdec[0] != 'K')
			return s3_reply_err(rq, 400, "InvalidArgument", "The "
					    "continuation token provided is "
					    "incorrect");
		l.l_after = (const char *)tokdec + 1;
		l.l_al = (size_t)tl - 1;
	} else if (v2 && sa != NULL) {
		l.l_after = sa;
		l.l_al = strlen(sa);
	} else if (!v2 && marker != NULL && *marker) {
		l.l_after = marker;
		l.l_al = strlen(marker);
	}
	s3_buf_printf(&x, XHDR "<%s xmlns=\"" XMLNS "\"><Name>%s</Name>",
		      versions ? "ListVersionsResult" : "ListBucketResult",
		      rq->rq_bucket);
	{
		struct s3_buf body = {0};

		rc = l.l_max > 0 ? lst_walk(rq, &l, &body) : 0;
		if (rc != 0) {
			s3_buf_fini(&body);
			s3_buf_fini(&x);
			free(l.l_last);
			free(l.l_cp);
			return s3_reply_clovis(rq, rc, "listing the bucket");
		}
		/* ListObjects (v1) returns the Prefix as sent, encoding-type
		 * or not (s3-tests, S3); V2 and versions encode it */
		s3_buf_str(&x, "<Prefix>");
		if (l.l_kind == 1)
			s3_buf_xml(&x, l.l_prefix, l.l_pl);
		else
			xml_name(&x, &l, l.l_prefix, l.l_pl);
		s3_buf_str(&x, "</Prefix>");
		if (l.l_dl) {
			s3_buf_str(&x, "<Delimiter>");
			xml_name(&x, &l, l.l_delim, l.l_dl);
			s3_buf_str(&x, "</Delimiter>");
		}
		if (l.l_url)
			s3_buf_str(&x, "<EncodingType>url</EncodingType>");
		s3_buf_printf(&x, "<MaxKeys>%u</MaxKeys><IsTruncated>%s"
			      "</IsTruncated>", l.l_max,
			      l.l_trunc ? "true" : "false");
		if (v2) {
			s3_buf_printf(&x, "<KeyCount>%u</KeyCount>", l.l_count);
			if (tok != NULL) {
				s3_buf_str(&x, "<ContinuationToken>");
				s3_buf_xml(&x, tok, strlen(tok));
				s3_buf_str(&x, "</ContinuationToken>");
			}
			if (sa != NULL) {
				s3_buf_str(&x, "<StartAfter>");
				xml_name(&x, &l, sa, strlen(sa));
				s3_buf_str(&x, "</StartAfter>");
			}
			if (l.l_trunc && l.l_last != NULL) {
				char *t = malloc(l.l_lastl * 4 / 3 + 8);
				uint8_t *raw = malloc(l.l_lastl + 1);

				if (t != NULL && raw != NULL) {
					raw[0] = 'K';
					memcpy(raw + 1, l.l_last, l.l_lastl);
					s3_b64enc(raw, l.l_lastl + 1, t);
					s3_buf_printf(&x, "<NextContinuationToken>"
						      "%s</NextContinuationToken>",
						      t);
				}
				free(t);
				free(raw);
			}
		} else {
			const char *mn = versions ? "KeyMarker" : "Marker";

			s3_buf_printf(&x, "<%s>", mn);
			if (marker != NULL)
				xml_name(&x, &l, marker, strlen(marker));
			s3_buf_printf(&x, "</%s>", mn);
			if (versions)
				s3_buf_str(&x, "<VersionIdMarker/>");
			if (l.l_trunc && l.l_last != NULL &&
			    (l.l_dl || versions)) {
				s3_buf_str(&x, versions ? "<NextKeyMarker>"
					   : "<NextMarker>");
				xml_name(&x, &l, l.l_last, l.l_lastl);
				s3_buf_str(&x, versions ? "</NextKeyMarker>"
					   "<NextVersionIdMarker>null"
					   "</NextVersionIdMarker>"
					   : "</NextMarker>");
			}
		}
		s3_buf_add(&x, body.b_data, body.b_len);
		s3_buf_fini(&body);
	}
	s3_buf_printf(&x, "</%s>", versions ? "ListVersionsResult"
		      : "ListBucketResult");
	free(l.l_last);
	free(l.l_cp);
	return s3_reply_xml(rq, 200, &x);
}

/* ----------------------------------------------------------- multipart */

/* Uploads index key: bucket "\0" key (hashed past 360 bytes) "\0" id. */
static size_t upkey(const char *bucket, const char *k, size_t kl,
		    const char *upid, uint8_t *out)
{
	size_t bl = strlen(bucket), n = 0;

	memcpy(out, bucket, bl);
	n = bl;
	out[n++] = 0;
	if (kl <= 360) {
		memcpy(out + n, k, kl);
		n += kl;
	} else {
		memcpy(out + n, k, 328);
		SHA256((const unsigned char *)k, kl, out + n + 328);
		n += 360;
	}
	out[n++] = 0;
	if (upid != NULL) {
		memcpy(out + n, upid, 32);
		n += 32;
	}
	return n;
}

static size_t partkey(const char *upid, uint32_t part, uint8_t *out)
{
	memcpy(out, upid, 32);
	out[32] = (uint8_t)(part >> 24);
	out[33] = (uint8_t)(part >> 16);
	out[34] = (uint8_t)(part >> 8);
	out[35] = (uint8_t)part;
	return 36;
}

static bool upid_ok(const char *u)
{
	size_t i;

	if (u == NULL || strlen(u) != 32)
		return false;
	for (i = 0; i < 32; i++)
		if (!isxdigit((unsigned char)u[i]))
			return false;
	return true;
}

/* The upload record of the request (uploadId); replies NoSuchUpload. */
static int need_upload(struct s3_req *rq, void **v, size_t *vl)
{
	const char *u = s3_q(rq, "uploadId");
	uint8_t k[CLOVIS_KEY_MAX];
	size_t kl;
	int rc;

	if (!upid_ok(u))
		return s3_reply_err(rq, 404, "NoSuchUpload", "The specified "
				    "upload does not exist."), -ENOENT;
	kl = upkey(rq->rq_bucket, rq->rq_key, rq->rq_key_len, u, k);
	rc = s3_idx_get(&s3g.g_uploads, k, kl, v, vl);
	if (rc == -ENOENT)
		return s3_reply_err(rq, 404, "NoSuchUpload", "The specified "
				    "upload does not exist. The upload ID may "
				    "be invalid, or the upload may have been "
				    "aborted or completed."), rc;
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "looking up the upload"), rc;
	return 0;
}

static int create_upload(struct s3_req *rq)
{
	uint8_t raw[16], k[CLOVIS_KEY_MAX];
	char upid[33];
	struct s3_buf rec = {0}, x = {0};
	struct clovis_id id;
	size_t kl;
	uint32_t ckb;
	int rc, ckt;

	rq->rq_op = "CreateMultipartUpload";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:PutObject") != 0 ||
	    need_key(rq) != 0 || s3_ck_upload_args(rq, &ckb, &ckt) != 0)
		return 0;
	s3_rand_id(&id);
	memcpy(raw, &id, 16);
	s3_hex(raw, 16, upid);
	if (rec_attrs_from_req(rq, &rec) != 0) {
		s3_buf_fini(&rec);
		return s3_reply_err(rq, 400, "MetadataTooLarge", "Your "
				    "metadata headers exceed the maximum "
				    "allowed metadata size");
	}
	if (rec_extra_from_req(rq, &rec, false) != 0) {
		s3_buf_fini(&rec);
		return 0;
	}
	if (rq->rq_authed && rq->rq_user.u_name[0] != 0 &&
	    strcmp(rq->rq_user.u_name, s3_new_owner(rq, rq->rq_bk)) != 0)
		s3_tlv_add(&rec, T_INITIATOR, rq->rq_user.u_name,
			   (uint32_t)strlen(rq->rq_user.u_name));
	s3_tlv_add(&rec, T_KEY, rq->rq_key, (uint32_t)rq->rq_key_len);
	s3_tlv_u64(&rec, T_MTIME, s3_now_ns());
	if (ckb != 0)
		s3_ck_psums_add(&rec, ckb, ckt, NULL, 0);
	kl = upkey(rq->rq_bucket, rq->rq_key, rq->rq_key_len, upid, k);
	rc = rec.b_oom ? -ENOMEM : s3_idx_put(&s3g.g_uploads, k, kl,
					      rec.b_data, rec.b_len, false);
	s3_buf_fini(&rec);
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "recording the upload");
	if (ckb != 0) {
		s3_reply_hdr(rq, "x-amz-checksum-algorithm", s3_sum_name(ckb));
		s3_reply_hdr(rq, "x-amz-checksum-type", s3_ck_type_name(ckt));
	}
	s3_buf_printf(&x, XHDR "<InitiateMultipartUploadResult xmlns=\"" XMLNS
		      "\"><Bucket>%s</Bucket><Key>", rq->rq_bucket);
	s3_buf_xml(&x, rq->rq_key, rq->rq_key_len);
	s3_buf_printf(&x, "</Key><UploadId>%s</UploadId>"
		      "</InitiateMultipartUploadResult>", upid);
	return s3_reply_xml(rq, 200, &x);
}

/* Record the part just written (rq_wr) under pc_pk, replacing an earlier
 * upload of the same part number (whose object is then freed); the part's
 * checksums go into the reply.  Replies on failure: -errno. */
static int part_record(struct s3_req *rq, const char *etag)
{
	struct put_ctx *pc = rq->rq_ctx;
	struct s3_buf rec = {0};
	pthread_mutex_t *l = s3_key_lock(pc->pc_pk, pc->pc_pkl);
	struct s3_orec old;
	void *ov = NULL;
	size_t ol;
	bool have = false;
	int rc;

	rec_data(rq, &rec, etag);
	rec_sums(&rec, &rq->rq_wr->w_sums, false);
	pthread_mutex_lock(l);
	rc = s3_idx_get(&s3g.g_parts, pc->pc_pk, pc->pc_pkl, &ov, &ol);
	if (rc == 0)
		have = s3_orec_decode(ov, ol, &old) == 0;
	rc = have ? s3_orec_hold(rq->rq_bk, &old, NULL, 0, pc->pc_pk,
				 pc->pc_pkl) : 0;
	if (rc == 0)
		rc = s3_idx_put(&s3g.g_parts, pc->pc_pk, pc->pc_pkl, rec.b_data,
				rec.b_len, true);
	if (rc != 0 && have)
		s3_orec_unhold(&old);
	pthread_mutex_unlock(l);
	s3_buf_fini(&rec);
	if (rc != 0) {
		free(ov);
		drop_writer(rq);
		return s3_reply_clovis(rq, rc, "recording the part"), rc;
	}
	sums_reply(rq, &rq->rq_wr->w_sums, false);
	done_writer(rq);
	if (have)
		s3_orec_free(rq->rq_bk, &old);
	free(ov);
	return 0;
}

static int part_end(struct s3_req *rq)
{
	char etag[33];

	if (put_finish(rq, rq->rq_ctx, etag) != 0) {
		drop_writer(rq);
		return 0;
	}
	if (part_record(rq, etag) != 0)
		return 0;
	etag_hdr(rq, etag);
	return s3_reply_empty(rq, 200);
}

/* x-amz-copy-source-range "bytes=FIRST-LAST" of a source of size bytes
 * into [*off, *off + *len); the whole source when absent.  Replies
 * InvalidArgument (form) or InvalidRange (outside the source): -EINVAL. */
static int copy_range(struct s3_req *rq, uint64_t size, uint64_t *off,
		      uint64_t *len)
{
	const char *h = s3_hdr(rq, "x-amz-copy-source-range");
	unsigned long long a, b;
	char *e;

	*off = 0;
	*len = size;
	if (h == NULL)
		return 0;
	if (strncmp(h, "bytes=", 6) != 0 || !isdigit((unsigned char)h[6]))
		goto form;
	a = strtoull(h + 6, &e, 10);
	if (*e != '-' || !isdigit((unsigned char)e[1]))
		goto form;
	b = strtoull(e + 1, &e, 10);
	if (*e != 0 || b < a)
		goto form;
	if (b >= size)
		return s3_reply_err(rq, 416, "InvalidRange", "The requested "
				    "range %s is not satisfiable: the source "
				    "object has %llu bytes (key '%.300s')", h,
				    (unsigned long long)size, rq->rq_key),
		       -EINVAL;
	*off = a;
	*len = b - a + 1;
	return 0;
form:
	return s3_reply_err(rq, 400, "InvalidArgument", "The "
			    "x-amz-copy-source-range value must be of the form "
			    "bytes=first-last where first and last are the "
			    "zero-based offsets of the first and last bytes to "
			    "copy (got '%.80s')", h), -EINVAL;
}

/* UploadPartCopy: part n of the upload from bytes of an existing object;
 * the part's size rules are UploadPart's, checked at completion. */
static int upload_part_copy(struct s3_req *rq, uint32_t n, const char *src,
			    uint32_t upalg)
{
	struct s3_bucket *sb;
	struct s3_orec sr;
	struct put_ctx *pc;
	const char *skey;
	char *dec = NULL, etag[33];
	void *sv = NULL;
	size_t svl;
	uint64_t off, len;
	int rc;

	rq->rq_op = "UploadPartCopy";
	if (copy_source(rq, src, &sb, &dec, &skey, &sv, &svl, &sr) != 0 ||
	    copy_range(rq, sr.or_size, &off, &len) != 0)
		goto out;
	pc = calloc(1, sizeof *pc);
	rq->rq_wr = calloc(1, sizeof *rq->rq_wr);
	if (pc == NULL || rq->rq_wr == NULL) {
		free(pc);
		s3_reply_err(rq, 500, "InternalError", "out of memory");
		goto out;
	}
	rq->rq_ctx = pc;
	rq->rq_cleanup = put_cleanup;
	pc->pc_part = true;
	pc->pc_upalg = upalg;
	pc->pc_expect = len;
	pc->pc_pkl = partkey(s3_q(rq, "uploadId"), n, pc->pc_pk);
	rc = s3_wr_begin(rq->rq_wr, rq->rq_bk, len, put_algs(pc), NULL, 0,
			 pc->pc_pk, pc->pc_pkl);
	if (rc == 0) {
		rc = copy_bytes(rq, sb, sv, svl, off, len);
		sv = NULL;
	}
	if (rc == 0 && rq->rq_wr->w_len != len)
		rc = -EIO;
	if (rc != 0) {
		drop_writer(rq);
		s3_reply_clovis(rq, rc, "copying the part");
		goto out;
	}
	make_etag(&rq->rq_wr->w_sums, true, etag);
	if (part_record(rq, etag) != 0)
		goto out;
	copy_reply(rq, "CopyPartResult", etag);
out:
	free(sv);
	free(dec);
	return 0;
}

static int upload_part(struct s3_req *rq)
{
	const char *pn = s3_q(rq, "partNumber");
	struct put_ctx *pc;
	const uint8_t *raws;
	void *uv;
	size_t uvl;
	uint32_t upalg = 0, nr;
	char *e;
	long n;
	int ckt;

	rq->rq_op = "UploadPart";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:PutObject") != 0 ||
	    need_key(rq) != 0)
		return 0;
	n = strtol(pn, &e, 10);
	if (*pn == 0 || *e || n < 1 || n > (long)S3_PARTS_MAX)
		return s3_reply_err(rq, 400, "InvalidArgument", "Part number "
				    "must be an integer between 1 and %u, "
				    "inclusive", S3_PARTS_MAX);
	if (need_upload(rq, &uv, &uvl) != 0)
		return 0;
	if (!s3_ck_psums(uv, uvl, &upalg, &ckt, &raws, &nr))
		upalg = 0;
	free(uv);
	if (s3_hdr(rq, "x-amz-copy-source") != NULL)
		return upload_part_copy(rq, (uint32_t)n,
					s3_hdr(rq, "x-amz-copy-source"), upalg);
	pc = calloc(1, sizeof *pc);
	if (pc == NULL)
		return s3_reply_err(rq, 500, "InternalError", "out of memory");
	rq->rq_ctx = pc;
	rq->rq_cleanup = put_cleanup;
	pc->pc_part = true;
	pc->pc_upalg = upalg;
	pc->pc_pkl = partkey(s3_q(rq, "uploadId"), (uint32_t)n, pc->pc_pk);
	if (put_begin(rq, pc) != 0)
		return 0;
	rq->rq_end = part_end;
	return 0;
}

/* Remove parts records of upload upid and free their objects, unless the
 * record now under key references them (a completed upload whose cleanup
 * a crash interrupted).  Then remove the upload record. */
static int abort_upload_rec(struct s3_bucket *b, const char *upid,
			    const char *key, size_t kl)
{
	uint8_t start[40], uk[CLOVIS_KEY_MAX];
	void *keys[64], *vals[64], *cv = NULL;
	size_t kls[64], vls[64], cvl = 0;
	struct s3_orec cur;
	bool have_cur;
	uint32_t nr, k;
	int rc;

	have_cur = rec_get(b, key, kl, &cv, &cvl, &cur) == 0;
	do {
		partkey(upid, 0, start);
		nr = 64;
		rc = s3_idx_next(&s3g.g_parts, start, 36, true, keys, kls, vals,
				 vls, &nr);
		if (rc != 0)
			break;
		for (k = 0; k < nr; k++) {
			struct s3_orec p;
			bool mine = kls[k] == 36 &&
				    memcmp(keys[k], upid, 32) == 0;

			if (mine && s3_orec_decode(vals[k], vls[k], &p) == 0) {
				bool used = false;
				uint32_t j;

				for (j = 0; have_cur && j < cur.or_nparts; j++)
					used |= s3_u64(cur.or_parts + S3_PART_STRIDE * j) ==
						p.or_id.ci_hi &&
						s3_u64(cur.or_parts + S3_PART_STRIDE * j + 8)
						== p.or_id.ci_lo;
				if (!used)
					s3_orec_hold(b, &p, NULL, 0, NULL, 0);
				s3_idx_del(&s3g.g_parts, keys[k], kls[k]);
				if (!used)
					s3_orec_free(b, &p);
			}
			if (!mine)
				nr = 0;
			free(keys[k]);
			free(vals[k]);
		}
	} while (nr == 64);
	free(cv);
	if (rc == 0) {
		size_t ukl = upkey(b->bk_name, key, kl, upid, uk);

		rc = s3_idx_del(&s3g.g_uploads, uk, ukl);
	}
	return rc;
}

static int abort_upload(struct s3_req *rq)
{
	void *uv;
	size_t uvl;
	int rc;

	rq->rq_op = "AbortMultipartUpload";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:AbortMultipartUpload") != 0 ||
	    need_key(rq) != 0 ||
	    need_upload(rq, &uv, &uvl) != 0)
		return 0;
	free(uv);
	rc = abort_upload_rec(rq->rq_bk, s3_q(rq, "uploadId"), rq->rq_key,
			      rq->rq_key_len);
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "aborting the upload");
	return s3_reply_empty(rq, 204);
}

/* Whether the next Part after p in a CompleteMultipartUpload has the
 * same PartNumber num: a part number listed twice in a row counts once,
 * with its last entry (as S3 does; a client that re-sent a part lists
 * both replies). */
static bool part_repeated(struct s3_xel *p, const char *num)
{
	for (p = p->x_next; p != NULL; p = p->x_next)
		if (strcmp(p->x_name, "Part") == 0) {
			struct s3_xel *pn = s3_xml_child(p, "PartNumber");

			return pn != NULL && strcmp(pn->x_text, num) == 0;
		}
	return false;
}

/*
 * Part num's checksum of algorithm ckb (the upload's): its raw value from
 * the part record (v, vl) appended to ck->raws, its size to ck->sizes.
 * A ChecksumALG the client's Part element p gives must be the part's.
 * Replies InvalidPart: -1.
 */
struct ck_parts {
	uint32_t cp_bit;         /* the upload's algorithm, 0: none */
	struct s3_buf cp_raws;   /* each part's raw value */
	struct s3_buf cp_sizes;  /* each part's size (uint64_t) */
};

static int complete_part_sum(struct s3_req *rq, struct s3_xel *p, long num,
			     const void *v, size_t vl, uint64_t size,
			     struct ck_parts *ck)
{
	char sv[S3_CK_VAL_MAX], el[32];
	uint8_t raw[S3_SUM_RAW_MAX];
	struct s3_sums ps;
	struct s3_xel *pc;

	if (ck->cp_bit == 0)
		return 0;
	memset(&ps, 0, sizeof ps);
	snprintf(el, sizeof el, "Checksum%s", s3_sum_name(ck->cp_bit));
	pc = s3_xml_child(p, el);
	if (!s3_ck_rec_value(v, vl, ck->cp_bit, sv) ||
	    s3_sum_parse(ck->cp_bit, sv, &ps) != 0)
		return s3_reply_err(rq, 400, "InvalidPart", "Part %ld has no "
				    "%s checksum, which the upload's algorithm "
				    "needs (key '%.300s')", num,
				    s3_sum_name(ck->cp_bit), rq->rq_key), -1;
	if (pc != NULL && strcmp(pc->x_text, sv) != 0)
		return s3_reply_err(rq, 400, "InvalidPart", "The %s of part "
				    "%ld you specified (%.60s) is not the "
				    "part's (%s) (key '%.300s')",
				    el, num, pc->x_text, sv, rq->rq_key), -1;
	s3_buf_add(&ck->cp_raws, raw, s3_sum_raw(&ps, ck->cp_bit, raw));
	s3_buf_add(&ck->cp_sizes, &size, sizeof size);
	return 0;
}

/* Check the client's part list against the parts index and build the
 * manifest, and each part's checksum into ck; replies on failure. */
static int complete_parts(struct s3_req *rq, struct s3_xel *x,
			  struct s3_buf *man, char *etag, struct ck_parts *ck)
{
	const char *upid = s3_q(rq, "uploadId");
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	struct s3_xel *p;
	uint64_t total = 0, prev_size = 0;
	long prev = 0;
	uint32_t n = 0;
	uint8_t h[16];
	unsigned int hl = 16;
	int rc = 0;

	if (md == NULL || !EVP_DigestInit_ex(md, EVP_md5(), NULL))
		return s3_reply_err(rq, 500, "InternalError", "no md5"), -1;
	for (p = x->x_child; p != NULL; p = p->x_next) {
		struct s3_xel *pn = s3_xml_child(p, "PartNumber"),
			      *pe = s3_xml_child(p, "ETag");
		uint8_t pk[40], bin[16];
		struct s3_orec r;
		const char *et;
		void *v;
		size_t vl;
		char *e;
		long num;

		if (strcmp(p->x_name, "Part") != 0)
			continue;
		if (pn == NULL || pe == NULL)
			goto malformed;
		if (part_repeated(p, pn->x_text))
			continue;
		num = strtol(pn->x_text, &e, 10);
		if (*e || num < 1 || num > (long)S3_PARTS_MAX)
			goto malformed;
		if (num <= prev) {
			rc = -1;
			s3_reply_err(rq, 400, "InvalidPartOrder", "The list "
					  "of parts was not in ascending order. "
					  "Parts must be ordered by part "
					  "number.");
			goto out;
		}
		if (n > 0 && prev_size < s3g.g_conf.sc_part_min) {
			rc = -1;
			s3_reply_err(rq, 400, "EntityTooSmall", "Your "
					  "proposed upload is smaller than the "
					  "minimum allowed object size.");
			goto out;
		}
		et = pe->x_text + (pe->x_text[0] == '"');
		if (s3_idx_get(&s3g.g_parts, pk, partkey(upid, (uint32_t)num, pk),
			       &v, &vl) != 0)
			goto invalid;
		if (s3_orec_decode(v, vl, &r) != 0 || !r.or_has_id ||
		    strncmp(et, r.or_etag, 32) != 0 ||
		    s3_unhex(r.or_etag, 32, bin) != 0) {
			free(v);
			goto invalid;
		}
		if (complete_part_sum(rq, p, num, v, vl, r.or_size, ck) != 0) {
			free(v);
			rc = -1;
			goto out;
		}
		{
			uint8_t ent[24];
			int i;

			for (i = 0; i < 8; i++) {
				ent[i] = (uint8_t)(r.or_id.ci_hi >> (8 * i));
				ent[8 + i] = (uint8_t)(r.or_id.ci_lo >> (8 * i));
				ent[16 + i] = (uint8_t)(r.or_size >> (8 * i));
			}
			s3_tlv_add(man, T_PART, ent, 24);
		}
		EVP_DigestUpdate(md, bin, 16);
		total += r.or_size;
		prev_size = r.or_size;
		prev = num;
		n++;
		free(v);
	}
	if (n == 0)
		goto malformed;
	EVP_DigestFinal_ex(md, h, &hl);
	s3_hex(h, 16, etag);
	snprintf(etag + 32, 16, "-%u", n);
	s3_tlv_u64(man, T_SIZE, total);
	goto out;
invalid:
	rc = -1;
	s3_reply_err(rq, 400, "InvalidPart", "One or more of the specified "
			  "parts could not be found. The part may not have "
			  "been uploaded, or the specified entity tag may not "
			  "match the part's entity tag.");
	goto out;
malformed:
	rc = -1;
	s3_reply_err(rq, 400, "MalformedXML", "The XML you provided was "
			  "not well-formed or did not validate against our "
			  "published schema");
out:
	EVP_MD_CTX_free(md);
	return rc == 0 ? 0 : -1;
}

/*
 * The bookkeeping of upload upid that its completion removes, as a change
 * *t (made here) that the manifest record's PUT then joins: the DEL of
 * every parts record of the upload and of the upload record, and the
 * DELETE of the parts the manifest man does not use.  So the manifest, the
 * end of the upload and the freeing of unused parts are one dtx.
 */
static int complete_tx(struct s3_bucket *b, const char *upid, const char *key,
		       size_t kl, const struct s3_buf *man, struct s3_tx **t)
{
	uint8_t start[40], uk[CLOVIS_KEY_MAX];
	void *keys[64], *vals[64];
	size_t kls[64], vls[64];
	struct s3_orec cur;
	uint32_t nr, k;
	int rc;

	*t = s3_tx_new();
	if (*t == NULL)
		return -ENOMEM;
	rc = s3_orec_decode(man->b_data, man->b_len, &cur);
	partkey(upid, 0, start);
	while (rc == 0) {
		bool more;

		nr = 64;
		rc = s3_idx_next(&s3g.g_parts, start, 36, true, keys, kls, vals,
				 vls, &nr);
		if (rc != 0)
			break;
		more = nr == 64;
		for (k = 0; k < nr; k++) {
			struct s3_orec p;
			bool mine = kls[k] == 36 &&
				    memcmp(keys[k], upid, 32) == 0;

			if (mine && rc == 0)
				rc = s3_tx_del(*t, &s3g.g_parts, keys[k], kls[k]);
			if (mine && rc == 0 &&
			    s3_orec_decode(vals[k], vls[k], &p) == 0) {
				bool used = false;
				uint32_t j;

				for (j = 0; j < cur.or_nparts && !used; j++)
					used = s3_u64(cur.or_parts + S3_PART_STRIDE * j) ==
						p.or_id.ci_hi &&
					       s3_u64(cur.or_parts + S3_PART_STRIDE * j + 8) ==
						p.or_id.ci_lo;
				if (!used)
					rc = s3_tx_free(*t, b, &p, NULL, 0,
							NULL, 0);
			}
			if (!mine)
				more = false;
			else
				memcpy(start, keys[k], 36);
			free(keys[k]);
			free(vals[k]);
		}
		if (!more)
			break;
	}
	if (rc == 0)
		rc = s3_tx_del(*t, &s3g.g_uploads, uk,
			       upkey(b->bk_name, key, kl, upid, uk));
	if (rc != 0) {
		s3_tx_drop(*t);
		*t = NULL;
	}
	return rc;
}


/* The 200 reply of a CompleteMultipartUpload of the request's key; with
 * the object's checksum (value val of algorithm bit, type) when bit. */
static int complete_reply(struct s3_req *rq, const char *etag, uint32_t bit,
			  const char *val, int type)
{
	struct s3_buf out = {0};

	s3_buf_printf(&out, XHDR "<CompleteMultipartUploadResult xmlns=\""
		      XMLNS "\"><Location>/%s/", rq->rq_bucket);
	s3_buf_xml(&out, rq->rq_key, rq->rq_key_len);
	s3_buf_printf(&out, "</Location><Bucket>%s</Bucket><Key>",
		      rq->rq_bucket);
	s3_buf_xml(&out, rq->rq_key, rq->rq_key_len);
	s3_buf_printf(&out, "</Key><ETag>&quot;%s&quot;</ETag>", etag);
	if (bit != 0)
		s3_buf_printf(&out, "<Checksum%s>%s</Checksum%s><ChecksumType>"
			      "%s</ChecksumType>", s3_sum_name(bit), val,
			      s3_sum_name(bit), s3_ck_type_name(type));
	s3_buf_str(&out, "</CompleteMultipartUploadResult>");
	return s3_reply_xml(rq, 200, &out);
}

/*
 * The checksum headers of a CompleteMultipartUpload against the upload's
 * algorithm bit and type and the object's value val ("BASE64" or, for
 * COMPOSITE, "BASE64-N"): x-amz-checksum-type must be the upload's, a
 * checksum of another algorithm (or of an upload with none) is refused
 * 400 InvalidRequest; one of the algorithm must match val (its "-N" may
 * be left out), else 400 BadDigest.  Replies on refusal: -EINVAL.
 */
static int complete_sums_check(struct s3_req *rq, uint32_t bit, int type,
			       const char *val)
{
	const char *t = s3_hdr(rq, "x-amz-checksum-type"), *h, *d;
	char base[S3_CK_VAL_MAX], mine[S3_SUM_B64_MAX];
	struct s3_sums want;
	uint32_t b;

	if (t != NULL && (bit == 0 ||
			  strcasecmp(t, s3_ck_type_name(type)) != 0))
		return s3_reply_err(rq, 400, "InvalidRequest", "The upload "
				    "was created with checksum type %s, not "
				    "%.40s (key '%.300s')", bit ?
				    s3_ck_type_name(type) : "(none)", t,
				    rq->rq_key), -EINVAL;
	for (b = S3_SUM_CRC64NVME; b & S3_SUM_ADDL; b <<= 1) {
		h = s3_hdr(rq, s3_sum_hdr(b));
		if (h == NULL)
			continue;
		if (b != bit)
			return s3_reply_err(rq, 400, "InvalidRequest", "The "
					    "upload was created with checksum "
					    "algorithm %s: %s cannot be checked "
					    "(key '%.300s')", bit ?
					    s3_sum_name(bit) : "(none)",
					    s3_sum_hdr(b), rq->rq_key),
			       -EINVAL;
		snprintf(base, sizeof base, "%s", h);
		d = strchr(val, '-');
		if (strchr(base, '-') != NULL &&
		    (d == NULL || strcmp(strchr(base, '-'), d) != 0))
			goto bad;
		if (strchr(base, '-') != NULL)
			*strchr(base, '-') = 0;
		memset(&want, 0, sizeof want);
		if (s3_sum_parse(bit, base, &want) != 0)
			goto bad;
		s3_sum_b64(&want, bit, mine);
		if (strncmp(mine, val, strlen(mine)) != 0 ||
		    (val[strlen(mine)] != 0 && val[strlen(mine)] != '-'))
			goto bad;
	}
	return 0;
bad:
	return s3_reply_err(rq, 400, "BadDigest", "The %s you specified "
			    "(%.60s) did not match the calculated checksum "
			    "%s (key '%.300s').", s3_sum_name(bit), h, val,
			    rq->rq_key), -EINVAL;
}
/* The reply to a completion of an upload already completed: the key's
 * record was made by upload uploadId and its ETag is the one the part list
 * x gives (the MD5 of the parts' MD5s).  Replies 200 with that ETag and
 * returns true; false when it is not such a repeat (the upload is then
 * looked up as usual). */
static bool complete_again(struct s3_req *rq, struct s3_xel *x)
{
	const char *upid = s3_q(rq, "uploadId");
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	struct s3_orec r;
	struct s3_xel *p;
	const uint8_t *val;
	uint8_t bin[16], h[16];
	unsigned int hl = 16;
	char etag[48];
	size_t vl, pos = 0;
	uint32_t n = 0, fl;
	uint8_t tag;
	void *v = NULL;
	bool same = false;

	if (md == NULL || !EVP_DigestInit_ex(md, EVP_md5(), NULL) ||
	    !upid_ok(upid) ||
	    rec_get(rq->rq_bk, rq->rq_key, rq->rq_key_len, &v, &vl, &r) != 0)
		goto out;
	while (s3_tlv_next(v, vl, &pos, &tag, &val, &fl) == 1)
		same |= tag == T_UPLOAD && fl == 32 && memcmp(val, upid, 32) == 0;
	for (p = x->x_child; same && p != NULL; p = p->x_next) {
		struct s3_xel *pe = s3_xml_child(p, "ETag");
		const char *et;

		if (strcmp(p->x_name, "Part") != 0)
			continue;
		et = pe ? pe->x_text + (pe->x_text[0] == '"') : "";
		same = strlen(et) >= 32 && s3_unhex(et, 32, bin) == 0;
		EVP_DigestUpdate(md, bin, 16);
		n++;
	}
	if (!same || n == 0)
		goto out;
	EVP_DigestFinal_ex(md, h, &hl);
	s3_hex(h, 16, etag);
	snprintf(etag + 32, 16, "-%u", n);
	same = strcmp(etag, r.or_etag) == 0;
	if (!same)
		goto out;
	{
		char cv[S3_CK_VAL_MAX] = "";
		uint32_t bit;
		int type = s3_ck_rec_type(v, vl);

		for (bit = S3_SUM_CRC64NVME; bit & S3_SUM_ADDL; bit <<= 1)
			if (s3_ck_rec_value(v, vl, bit, cv))
				break;
		if (!(bit & S3_SUM_ADDL))
			bit = 0;
		if (complete_sums_check(rq, bit, type, cv) == 0)
			complete_reply(rq, etag, bit, cv, type);
	}
out:
	EVP_MD_CTX_free(md);
	free(v);
	return same;
}

static int complete_end(struct s3_req *rq)
{
	struct s3_xel *x = s3_xml_parse(rq->rq_xml.b_data ? rq->rq_xml.b_data
				       : "", rq->rq_xml.b_len);
	struct s3_buf man = {0};
	uint8_t ik[CLOVIS_KEY_MAX];
	const char *upid = s3_q(rq, "uploadId");
	char etag[48];
	struct s3_tx *t = NULL;
	struct ck_parts ck;
	const uint8_t *nr_raws;
	char ckv[S3_CK_VAL_MAX] = "";
	void *uv;
	size_t uvl, il;
	uint32_t nr;
	int rc, ckt = S3_CK_NONE;

	memset(&ck, 0, sizeof ck);
	if (x == NULL || strcmp(x->x_name, "CompleteMultipartUpload") != 0) {
		s3_xml_free(x);
		return s3_reply_err(rq, 400, "MalformedXML", "The XML you "
				    "provided was not well-formed or did not "
				    "validate against our published schema");
	}
	if (complete_again(rq, x)) {
		s3_xml_free(x);
		return 0;
	}
	if (need_upload(rq, &uv, &uvl) != 0) {
		s3_xml_free(x);
		return 0;
	}
	if (!s3_ck_psums(uv, uvl, &ck.cp_bit, &ckt, &nr_raws, &nr))
		ck.cp_bit = 0;
	rc = complete_parts(rq, x, &man, etag, &ck);
	s3_xml_free(x);
	if (rc == 0 && ck.cp_bit != 0) {
		nr = (uint32_t)(ck.cp_sizes.b_len / sizeof(uint64_t));
		rc = ck.cp_raws.b_oom || ck.cp_sizes.b_oom ? -ENOMEM :
		     s3_ck_mp_value(ck.cp_bit, ckt,
				    (const uint8_t *)ck.cp_raws.b_data,
				    (const uint64_t *)(void *)ck.cp_sizes.b_data,
				    nr, ckv);
		if (rc != 0)
			s3_reply_clovis(rq, rc, "computing the checksum");
		else
			rc = complete_sums_check(rq, ck.cp_bit, ckt, ckv);
	} else if (rc == 0)
		rc = complete_sums_check(rq, 0, S3_CK_NONE, "");
	if (rc == 0 && ck.cp_bit != 0) {
		rec_hdr_add(&man, s3_sum_hdr(ck.cp_bit), ckv);
		rec_hdr_add(&man, "x-amz-checksum-type", s3_ck_type_name(ckt));
		s3_ck_psums_add(&man, ck.cp_bit, ckt,
				(const uint8_t *)ck.cp_raws.b_data, nr);
	}
	s3_buf_fini(&ck.cp_raws);
	s3_buf_fini(&ck.cp_sizes);
	if (rc != 0) {
		free(uv);
		s3_buf_fini(&man);
		return 0;
	}
	s3_tlv_u64(&man, T_MTIME, s3_now_ns());
	s3_tlv_add(&man, T_ETAG, etag, (uint32_t)strlen(etag));
	s3_tlv_add(&man, T_UPLOAD, upid, 32);
	rec_attrs_copy(uv, uvl, &man, true, true);
	free(uv);
	if (rq->rq_key_len > S3_KEY_HASHED_PREFIX)
		s3_tlv_add(&man, T_KEY, rq->rq_key, (uint32_t)rq->rq_key_len);
	il = s3_ikey(rq->rq_key, rq->rq_key_len, ik);
	rc = man.b_oom ? -ENOMEM : complete_tx(rq->rq_bk, upid, rq->rq_key,
					       rq->rq_key_len, &man, &t);
	if (rc == 0)
		rc = rec_commit(rq->rq_bk, ik, il, &man,
				s3_hdr(rq, "If-Match"),
				s3_hdr(rq, "If-None-Match"), NULL, t);
	s3_buf_fini(&man);
	if (rc == -EEXIST || rc == -ENODATA)
		return reply_cond(rq, rc);
	if (is_doubt(rc))
		return reply_doubt(rq, rc, "recording the object");
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "recording the object");
	return complete_reply(rq, etag, ck.cp_bit, ckv, ckt);
}

static int complete_upload(struct s3_req *rq)
{
	rq->rq_op = "CompleteMultipartUpload";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:PutObject") != 0 ||
	    need_key(rq) != 0)
		return 0;
	rq->rq_body = S3_BODY_XML;
	rq->rq_end = complete_end;
	return 0;
}

/* Initiator and Owner of the upload of record r, with ID and
 * DisplayName: the owner of the object it makes (s3_obj_owner()), and
 * the user who created it (T_INITIATOR when another user than the owner,
 * else the owner). */
static void upload_owner(struct s3_buf *x, struct s3_req *rq,
			 const struct s3_orec *r)
{
	const char *el[2] = {"Initiator", "Owner"}, *who[2];
	size_t wl[2], pos = 0;
	const uint8_t *val;
	uint32_t n;
	uint8_t tag;
	int i;

	who[1] = s3_obj_owner(rq->rq_bk, r, &wl[1]);
	who[0] = who[1];
	wl[0] = wl[1];
	while (r->or_rec != NULL &&
	       s3_tlv_next(r->or_rec, r->or_rec_len, &pos, &tag, &val, &n) == 1)
		if (tag == T_INITIATOR && n > 0) {
			who[0] = (const char *)val;
			wl[0] = n;
		}
	for (i = 0; i < 2; i++) {
		s3_buf_printf(x, "<%s><ID>", el[i]);
		s3_buf_xml(x, who[i], wl[i]);
		s3_buf_str(x, "</ID><DisplayName>");
		s3_buf_xml(x, who[i], wl[i]);
		s3_buf_printf(x, "</DisplayName></%s>", el[i]);
	}
}

static int list_parts(struct s3_req *rq)
{
	const char *upid = s3_q(rq, "uploadId"), *mp = s3_q(rq, "max-parts"),
		   *pm = s3_q(rq, "part-number-marker");
	void *uv, *keys[64], *vals[64];
	size_t uvl, kls[64], vls[64];
	struct s3_buf x = {0};
	uint8_t start[40];
	uint32_t max = mp ? (uint32_t)strtoul(mp, NULL, 10) : 1000, marker,
		 count = 0, last = 0, nr, k;
	bool trunc = false, stop = false;
	int rc;

	rq->rq_op = "ListParts";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:ListMultipartUploadParts") != 0 ||
	    need_key(rq) != 0 ||
	    need_upload(rq, &uv, &uvl) != 0)
		return 0;
	if (max > 1000)
		max = 1000;
	marker = pm ? (uint32_t)strtoul(pm, NULL, 10) : 0;
	s3_buf_printf(&x, XHDR "<ListPartsResult xmlns=\"" XMLNS "\"><Bucket>"
		      "%s</Bucket><Key>", rq->rq_bucket);
	s3_buf_xml(&x, rq->rq_key, rq->rq_key_len);
	s3_buf_printf(&x, "</Key><UploadId>%s</UploadId>", upid);
	{
		struct s3_orec ur;

		if (s3_orec_decode(uv, uvl, &ur) != 0)
			memset(&ur, 0, sizeof ur);
		upload_owner(&x, rq, &ur);
	}
	free(uv);
	s3_buf_printf(&x, "<StorageClass>STANDARD</StorageClass>"
		      "<PartNumberMarker>%u</PartNumberMarker>", marker);
	partkey(upid, marker, start);
	do {
		nr = 64;
		rc = s3_idx_next(&s3g.g_parts, start, 36, true, keys, kls, vals,
				 vls, &nr);
		if (rc != 0) {
			s3_buf_fini(&x);
			return s3_reply_clovis(rq, rc, "listing parts");
		}
		for (k = 0; k < nr; k++) {
			struct s3_orec r;
			const uint8_t *kb = keys[k];

			if (stop || kls[k] != 36 || memcmp(kb, upid, 32) != 0) {
				stop = true;
			} else if (count == max) {
				trunc = true;
				stop = true;
			} else if (s3_orec_decode(vals[k], vls[k], &r) == 0) {
				char t[48];
				uint32_t num = (uint32_t)kb[32] << 24 |
					       (uint32_t)kb[33] << 16 |
					       (uint32_t)kb[34] << 8 | kb[35];

				s3_time_iso(r.or_mtime_ns, t);
				s3_buf_printf(&x, "<Part><PartNumber>%u"
					      "</PartNumber><LastModified>%s"
					      "</LastModified><ETag>&quot;%s"
					      "&quot;</ETag><Size>%lu</Size>"
					      "</Part>", num, t, r.or_etag,
					      r.or_size);
				count++;
				last = num;
			}
			if (k == nr - 1)
				memcpy(start, keys[k], kls[k] < 40 ? kls[k] : 40);
			free(keys[k]);
			free(vals[k]);
		}
	} while (nr == 64 && !stop);
	s3_buf_printf(&x, "<NextPartNumberMarker>%u</NextPartNumberMarker>"
		      "<MaxParts>%u</MaxParts><IsTruncated>%s</IsTruncated>"
		      "</ListPartsResult>", last, max, trunc ? "true" : "false");
	return s3_reply_xml(rq, 200, &x);
}

/* Walk the uploads of bucket b: abort them all (abort_all) or report
 * whether any exists. */
static int uploads_of_bucket(struct s3_bucket *b, bool abort_all, bool *any)
{
	uint8_t start[CLOVIS_KEY_MAX];
	size_t sl = strlen(b->bk_name) + 1;
	void *keys[16], *vals[16];
	size_t kls[16], vls[16];
	uint32_t nr, k, rounds = 0;
	int rc;

	memcpy(start, b->bk_name, sl);
	*any = false;
	do {
		bool mine_all = true;

		nr = 16;
		rc = s3_idx_next(&s3g.g_uploads, start, sl, false, keys, kls,
				 vals, vls, &nr);
		if (rc != 0)
			return rc;
		for (k = 0; k < nr; k++) {
			size_t bl = strlen(b->bk_name);
			bool mine = kls[k] > bl + 34 &&
				    memcmp(keys[k], b->bk_name, bl + 1) == 0;

			if (mine) {
				struct s3_orec r;
				char upid[33];

				*any = true;
				memcpy(upid, (char *)keys[k] + kls[k] - 32, 32);
				upid[32] = 0;
				if (abort_all &&
				    s3_orec_decode(vals[k], vls[k], &r) == 0 &&
				    r.or_key != NULL)
					abort_upload_rec(b, upid,
							 (const char *)r.or_key,
							 r.or_key_len);
			}
			mine_all &= mine;
			free(keys[k]);
			free(vals[k]);
		}
		if (!mine_all || !abort_all)
			break;
	} while (nr == 16 && ++rounds < 1000000);
	return 0;
}

static int list_uploads(struct s3_req *rq)
{
	const char *pfx = s3_q(rq, "prefix"), *mu = s3_q(rq, "max-uploads");
	uint8_t start[CLOVIS_KEY_MAX];
	size_t bl = strlen(rq->rq_bucket), sl = bl + 1;
	void *keys[64], *vals[64];
	size_t kls[64], vls[64];
	uint32_t max = mu ? (uint32_t)strtoul(mu, NULL, 10) : 1000, count = 0,
		 nr, k;
	bool trunc = false, stop = false, excl = false;
	struct s3_buf x = {0};
	int rc;

	rq->rq_op = "ListMultipartUploads";
	if (s3_need_bucket(rq, S3_P_READ, "s3:ListBucketMultipartUploads") != 0)
		return 0;
	if (max > 1000)
		max = 1000;
	memcpy(start, rq->rq_bucket, sl);
	s3_buf_printf(&x, XHDR "<ListMultipartUploadsResult xmlns=\"" XMLNS
		      "\"><Bucket>%s</Bucket><KeyMarker/><UploadIdMarker/>",
		      rq->rq_bucket);
	do {
		nr = 64;
		rc = s3_idx_next(&s3g.g_uploads, start, sl, excl, keys, kls,
				 vals, vls, &nr);
		if (rc != 0) {
			s3_buf_fini(&x);
			return s3_reply_clovis(rq, rc, "listing uploads");
		}
		excl = true;
		for (k = 0; k < nr; k++) {
			struct s3_orec r;

			if (stop || kls[k] <= bl + 34 ||
			    memcmp(keys[k], rq->rq_bucket, bl + 1) != 0) {
				stop = true;
			} else if (s3_orec_decode(vals[k], vls[k], &r) == 0 &&
				   r.or_key != NULL &&
				   (pfx == NULL ||
				    (r.or_key_len >= strlen(pfx) &&
				     memcmp(r.or_key, pfx, strlen(pfx)) == 0))) {
				char t[48];

				if (count == max) {
					trunc = true;
					stop = true;
				} else {
					s3_time_iso(r.or_mtime_ns, t);
					s3_buf_str(&x, "<Upload><Key>");
					s3_buf_xml(&x, (const char *)r.or_key,
						   r.or_key_len);
					s3_buf_str(&x, "</Key><UploadId>");
					s3_buf_add(&x, (char *)keys[k] + kls[k]
						   - 32, 32);
					s3_buf_str(&x, "</UploadId>");
					upload_owner(&x, rq, &r);
					s3_buf_printf(&x, "<StorageClass>STANDARD"
						      "</StorageClass><Initiated>"
						      "%s</Initiated></Upload>",
						      t);
					count++;
				}
			}
			if (k == nr - 1 && kls[k] <= sizeof start) {
				memcpy(start, keys[k], kls[k]);
				sl = kls[k];
			}
			free(keys[k]);
			free(vals[k]);
		}
	} while (nr == 64 && !stop);
	s3_buf_printf(&x, "<MaxUploads>%u</MaxUploads><IsTruncated>%s"
		      "</IsTruncated></ListMultipartUploadsResult>", max,
		      trunc ? "true" : "false");
	return s3_reply_xml(rq, 200, &x);
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
	if (s3_need_bucket(rq, 0, NULL) != 0 || need_key(rq) != 0)
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

	return src ? copy_object(rq, src) : put_object(rq);
}

static int upload_part_route(struct s3_req *rq)
{
	return upload_part(rq);
}

static const struct route routes[] = {
	{"GET", ON_SERVICE, {NULL, NULL}, list_buckets},
	{"PUT", ON_BUCKET, {NULL, NULL}, create_bucket},
	{"HEAD", ON_BUCKET, {NULL, NULL}, head_bucket},
	{"DELETE", ON_BUCKET, {NULL, NULL}, delete_bucket},
	{"GET", ON_BUCKET, {NULL, NULL}, list_objects},
	{"GET", ON_BUCKET, {"versions", NULL}, list_objects},
	{"GET", ON_BUCKET, {"uploads", NULL}, list_uploads},
	{"GET", ON_BUCKET, {"location", NULL}, bucket_location},
	{"POST", ON_BUCKET, {"delete", NULL}, delete_objects},
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
	{"GET", ON_OBJECT, {NULL, NULL}, get_object},
	{"HEAD", ON_OBJECT, {NULL, NULL}, get_object},
	{"DELETE", ON_OBJECT, {NULL, NULL}, delete_object},
	{"GET", ON_OBJECT, {"partNumber", NULL}, get_object},
	{"GET", ON_OBJECT, {"attributes", NULL}, object_attributes},
	{"HEAD", ON_OBJECT, {"partNumber", NULL}, get_object},
	{"PUT", ON_OBJECT, {"partNumber", "uploadId"}, upload_part_route},
	{"GET", ON_OBJECT, {"uploadId", NULL}, list_parts},
	{"DELETE", ON_OBJECT, {"uploadId", NULL}, abort_upload},
	{"POST", ON_OBJECT, {"uploads", NULL}, create_upload},
	{"POST", ON_OBJECT, {"uploadId", NULL}, complete_upload},
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
