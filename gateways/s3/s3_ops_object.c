/*
 * s3_ops_object.c — the S3 operations on objects: PutObject (and the
 * writer context UploadPart shares: Content-MD5, x-amz-checksum-*, the
 * ETag, the record's commit), GetObject and HeadObject (ranges,
 * conditionals, partNumber), DeleteObject, DeleteObjects, CopyObject
 * (and the copy source UploadPartCopy shares).  Their routes are in
 * s3_ops.c; what they share with the other operations is declared in
 * s3_ops_internal.h.
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

/* ------------------------------------------------------------- objects */

void s3_put_cleanup(struct s3_req *rq)
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
uint32_t s3_put_algs(const struct put_ctx *pc)
{
	bool c64 = !pc->pc_part && s3g.g_conf.sc_etag == S3_ETAG_CRC64;

	return pc->pc_want.s_algs | pc->pc_trail | pc->pc_upalg |
	       (c64 ? S3_SUM_CRC64NVME : S3_SUM_MD5) |
	       (pc->pc_md5_set ? S3_SUM_MD5 : 0);
}

/* The ETag of an object with sums s: hex MD5, or (etag crc64, single
 * part) "c64-" and the CRC64-NVMe in 16 hex digits. */
void s3_make_etag(const struct s3_sums *s, bool part, char etag[33])
{
	if (!part && s3g.g_conf.sc_etag == S3_ETAG_CRC64)
		snprintf(etag, 33, "c64-%016llx", (unsigned long long)s->s_crc64);
	else
		s3_hex(s->s_md5v, 16, etag);
}

/* Finish the writer; check length and digests.  Replies on failure. */
int s3_put_finish(struct s3_req *rq, struct put_ctx *pc, char etag[33])
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
	s3_make_etag(got, pc->pc_part, etag);
	return 0;
}

void s3_drop_writer(struct s3_req *rq)
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
		s3_drop_writer(rq);
		return;
	}
	if (rc == 0)
		s3_wr_done(rq->rq_wr, true);
	else
		s3_wr_keep(rq->rq_wr);
	free(rq->rq_wr);
	rq->rq_wr = NULL;
}

void s3_done_writer(struct s3_req *rq)
{
	s3_wr_done(rq->rq_wr, false);
	free(rq->rq_wr);
	rq->rq_wr = NULL;
}

/* Start the object part of a record written by rq_wr. */
void s3_rec_data(struct s3_req *rq, struct s3_buf *rec, const char *etag)
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

	if (s3_put_finish(rq, pc, etag) != 0) {
		s3_drop_writer(rq);
		return 0;
	}
	s3_rec_data(rq, &rec, etag);
	s3_rec_attrs_from_req(rq, &rec);
	s3_buf_add(&rec, pc->pc_extra.b_data, pc->pc_extra.b_len);
	s3_rec_sums(&rec, &rq->rq_wr->w_sums, true);
	if (rq->rq_key_len > S3_KEY_HASHED_PREFIX)
		s3_tlv_add(&rec, T_KEY, rq->rq_key, (uint32_t)rq->rq_key_len);
	rc = rec.b_oom ? -ENOMEM
		       : s3_rec_commit(rq->rq_bk, pc->pc_ik, pc->pc_il, &rec,
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
			return s3_reply_cond(rq, rc);
		if (s3_is_doubt(rc))
			return s3_reply_doubt(rq, rc, "recording the object");
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
	s3_sums_reply(rq, &rq->rq_wr->w_sums, true);
	end_writer(rq, 0);
	s3_etag_hdr(rq, etag);
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
int s3_put_begin(struct s3_req *rq, struct put_ctx *pc)
{
	int rc;

	if (content_md5(rq, pc) != 0 || content_sums(rq, pc) != 0 ||
	    body_len(rq, &pc->pc_expect) != 0)
		return -EINVAL;
	rq->rq_wr = calloc(1, sizeof *rq->rq_wr);
	if (rq->rq_wr == NULL)
		return s3_reply_err(rq, 500, "InternalError", "out of memory"),
		       -ENOMEM;
	rc = s3_wr_begin(rq->rq_wr, rq->rq_bk, pc->pc_expect, s3_put_algs(pc),
			 pc->pc_part ? NULL : pc->pc_rk != NULL
			 ? (const uint8_t *)pc->pc_rk : pc->pc_ik,
			 pc->pc_rk != NULL ? pc->pc_rkl : pc->pc_il,
			 pc->pc_part ? pc->pc_pk : NULL, pc->pc_pkl);
	if (rc != 0) {
		s3_reply_clovis(rq, rc, "creating the object");
		s3_drop_writer(rq);
		return rc;
	}
	/* PutObject: its one write (object up to a chunk) joins the dtx
	 * that records it (s3_tx_write(), in s3_rec_commit()) */
	rq->rq_wr->w_hold = !pc->pc_part;
	rq->rq_body = S3_BODY_STREAM;
	return 0;
}

int s3_put_object(struct s3_req *rq)
{
	struct put_ctx *pc;
	struct s3_buf tmp = {0};

	rq->rq_op = "PutObject";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:PutObject") != 0 ||
	    s3_need_key(rq) != 0)
		return 0;
	if (s3_rec_attrs_from_req(rq, &tmp) != 0) {
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
	rq->rq_cleanup = s3_put_cleanup;
	if (s3_rec_extra_from_req(rq, &pc->pc_extra, false) != 0)
		return 0;
	pc->pc_il = s3_ikey(rq->rq_key, rq->rq_key_len, pc->pc_ik);
	if (s3_put_begin(rq, pc) != 0)
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

	if (im != NULL && !s3_etag_in(im, r->or_etag))
		return 412;
	if (im == NULL && ius != NULL && s3_time_parse(ius, &t) == 0 && mt > t)
		return 412;
	if (inm != NULL && s3_etag_in(inm, r->or_etag))
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

/* Drop what s3_get_object() holds: the reader when opened, else the
 * record. */
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

int s3_get_object(struct s3_req *rq)
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
	if (s3_need_bucket(rq, 0, NULL) != 0 || s3_need_key(rq) != 0)
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
	rc = s3_rec_get(rq->rq_bk, rq->rq_key, rq->rq_key_len, &v, &vl, &r);
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
	s3_rec_attrs_reply(rq, &r, rr != 0 && pre != 304 && mode);
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
 * s3_rec_commit(). */
static int delete_key(struct s3_bucket *b, const char *k, size_t kl)
{
	uint8_t ik[CLOVIS_KEY_MAX];
	size_t il = s3_ikey(k, kl, ik);
	pthread_mutex_t *l = s3_key_lock(ik, il);
	struct s3_tx *t;
	struct s3_orec old;
	void *ov = NULL;
	size_t ol;
	int rc;

	if (b->bk_vw != NULL)
		return s3_view_delete(b, k, kl);
	t = s3_tx_new();
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

int s3_delete_object(struct s3_req *rq)
{
	int rc;

	rq->rq_op = "DeleteObject";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:DeleteObject") != 0 ||
	    s3_need_key(rq) != 0)
		return 0;
	rc = delete_key(rq->rq_bk, rq->rq_key, rq->rq_key_len);
	if (s3_is_doubt(rc))
		return s3_reply_doubt(rq, rc, "deleting the key");
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
		if (s3_is_doubt(rc)) {
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

int s3_delete_objects(struct s3_req *rq)
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
int s3_copy_bytes(struct s3_req *rq, struct s3_bucket *sb, void *sv,
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
			 s3_put_algs(pc) | s3_rec_sum_algs(sr), pc->pc_ik,
			 pc->pc_il, NULL, 0);
	if (rc != 0) {
		free(sv);
		return rc;
	}
	rc = s3_copy_bytes(rq, sb, sv, svl, 0, sr->or_size);
	if (rc == 0)
		s3_make_etag(&rq->rq_wr->w_sums, false, etag);
	return rc;
}

/*
 * The source of a copy, x-amz-copy-source "[/]bucket/key[?versionId=..]"
 * (URL-encoded): its bucket, its decoded key (*dec, to free), its record
 * (*sv, to free) and decoded record, the x-amz-copy-source-if-*
 * preconditions checked.  Replies on failure (InvalidArgument,
 * NoSuchBucket, AccessDenied, NoSuchKey, PreconditionFailed): -errno.
 */
int s3_copy_source(struct s3_req *rq, const char *src,
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
	if (!s3_bucket_name_ok(k) || s3_bucket_get(k, sb) != 0)
		return s3_reply_err(rq, 404, "NoSuchBucket", "The specified "
				    "bucket does not exist"), -ENOENT;
	rc = s3_rec_get(*sb, q, strlen(q), sv, svl, sr);
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
void s3_copy_reply(struct s3_req *rq, const char *el, const char *etag)
{
	struct s3_buf x = {0};
	char t[32];

	s3_time_iso(s3_now_ns(), t);
	s3_buf_printf(&x, XHDR "<%s xmlns=\"" XMLNS "\"><LastModified>%s"
		      "</LastModified><ETag>&quot;%s&quot;</ETag></%s>", el, t,
		      etag, el);
	s3_reply_xml(rq, 200, &x);
}

int s3_copy_object(struct s3_req *rq, const char *src)
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
	    s3_need_key(rq) != 0)
		goto out;
	if (dir != NULL && !replace && strcasecmp(dir, "COPY") != 0) {
		s3_reply_err(rq, 400, "InvalidArgument", "Unknown metadata "
			     "directive.");
		goto out;
	}
	if (s3_copy_source(rq, src, &sb, &dec, &q, &sv, &svl, &sr) != 0)
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
	rq->rq_cleanup = s3_put_cleanup;
	pc->pc_il = s3_ikey(rq->rq_key, rq->rq_key_len, pc->pc_ik);
	if (tdir != NULL && strcasecmp(tdir, "COPY") != 0 && !treplace) {
		s3_reply_err(rq, 400, "InvalidArgument", "Unknown tagging "
			     "directive '%.32s'", tdir);
		goto out;
	}
	if (s3_rec_extra_from_req(rq, &rec, !treplace) != 0) {
		s3_buf_fini(&rec);
		goto out;
	}
	if (replace)
		rc = s3_rec_attrs_from_req(rq, &rec);
	else
		s3_rec_attrs_copy(sv, svl, &rec, false, false);
	if (!treplace)
		s3_rec_attrs_copy_tags(sv, svl, &rec);
	{
		struct s3_buf data = {0};

		rc = copy_data(rq, sb, sv, svl, &sr, etag);
		sv = NULL;
		if (rc != 0) {
			s3_drop_writer(rq);
			s3_buf_fini(&rec);
			s3_reply_clovis(rq, rc, "copying the data");
			goto out;
		}
		s3_rec_data(rq, &data, etag);
		s3_buf_add(&data, rec.b_data, rec.b_len);
		s3_rec_sums(&data, &rq->rq_wr->w_sums, true);
		s3_buf_fini(&rec);
		rec = data;
	}
	if (rq->rq_key_len > S3_KEY_HASHED_PREFIX)
		s3_tlv_add(&rec, T_KEY, rq->rq_key, (uint32_t)rq->rq_key_len);
	rc = s3_rec_commit(rq->rq_bk, pc->pc_ik, pc->pc_il, &rec, NULL, NULL,
			   rq->rq_wr, NULL);
	s3_buf_fini(&rec);
	end_writer(rq, rc);
	if (rc != 0) {
		if (s3_is_doubt(rc))
			s3_reply_doubt(rq, rc, "recording the copy");
		else
			s3_reply_clovis(rq, rc, "recording the copy");
		goto out;
	}
	s3_copy_reply(rq, "CopyObjectResult", etag);
out:
	free(sv);
	free(dec);
	return 0;
}
