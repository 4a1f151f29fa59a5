/*
 * s3_ops_multipart.c — multipart uploads: CreateMultipartUpload,
 * UploadPart, UploadPartCopy, AbortMultipartUpload,
 * CompleteMultipartUpload (its part list checked against the parts index,
 * the manifest record committed once), ListParts, ListMultipartUploads,
 * and the abort of every upload of a bucket.  Their routes are in
 * s3_ops.c; the writer context and helpers they share with the object
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

int s3_create_upload(struct s3_req *rq)
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
	    s3_need_key(rq) != 0 || s3_ck_upload_args(rq, &ckb, &ckt) != 0)
		return 0;
	s3_rand_id(&id);
	memcpy(raw, &id, 16);
	s3_hex(raw, 16, upid);
	if (s3_rec_attrs_from_req(rq, &rec) != 0) {
		s3_buf_fini(&rec);
		return s3_reply_err(rq, 400, "MetadataTooLarge", "Your "
				    "metadata headers exceed the maximum "
				    "allowed metadata size");
	}
	if (s3_rec_extra_from_req(rq, &rec, false) != 0) {
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

	s3_rec_data(rq, &rec, etag);
	s3_rec_sums(&rec, &rq->rq_wr->w_sums, false);
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
		s3_drop_writer(rq);
		return s3_reply_clovis(rq, rc, "recording the part"), rc;
	}
	s3_sums_reply(rq, &rq->rq_wr->w_sums, false);
	s3_done_writer(rq);
	if (have)
		s3_orec_free(rq->rq_bk, &old);
	free(ov);
	return 0;
}

static int part_end(struct s3_req *rq)
{
	char etag[33];

	if (s3_put_finish(rq, rq->rq_ctx, etag) != 0) {
		s3_drop_writer(rq);
		return 0;
	}
	if (part_record(rq, etag) != 0)
		return 0;
	s3_etag_hdr(rq, etag);
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
	if (s3_copy_source(rq, src, &sb, &dec, &skey, &sv, &svl, &sr) != 0 ||
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
	rq->rq_cleanup = s3_put_cleanup;
	pc->pc_part = true;
	pc->pc_upalg = upalg;
	pc->pc_expect = len;
	pc->pc_pkl = partkey(s3_q(rq, "uploadId"), n, pc->pc_pk);
	rc = s3_wr_begin(rq->rq_wr, rq->rq_bk, len, s3_put_algs(pc), NULL, 0,
			 pc->pc_pk, pc->pc_pkl);
	if (rc == 0) {
		rc = s3_copy_bytes(rq, sb, sv, svl, off, len);
		sv = NULL;
	}
	if (rc == 0 && rq->rq_wr->w_len != len)
		rc = -EIO;
	if (rc != 0) {
		s3_drop_writer(rq);
		s3_reply_clovis(rq, rc, "copying the part");
		goto out;
	}
	s3_make_etag(&rq->rq_wr->w_sums, true, etag);
	if (part_record(rq, etag) != 0)
		goto out;
	s3_copy_reply(rq, "CopyPartResult", etag);
out:
	free(sv);
	free(dec);
	return 0;
}

int s3_upload_part(struct s3_req *rq)
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
	    s3_need_key(rq) != 0)
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
	rq->rq_cleanup = s3_put_cleanup;
	pc->pc_part = true;
	pc->pc_upalg = upalg;
	pc->pc_pkl = partkey(s3_q(rq, "uploadId"), (uint32_t)n, pc->pc_pk);
	if (s3_put_begin(rq, pc) != 0)
		return 0;
	rq->rq_end = part_end;
	return 0;
}

/* Remove parts records of upload upid and free their objects, unless the
 * record now under key references them (a completed upload whose cleanup
 * a crash interrupted).  Then remove the upload record. */
int s3_abort_upload_rec(struct s3_bucket *b, const char *upid,
			const char *key, size_t kl)
{
	uint8_t start[40], uk[CLOVIS_KEY_MAX];
	void *keys[64], *vals[64], *cv = NULL;
	size_t kls[64], vls[64], cvl = 0;
	struct s3_orec cur;
	bool have_cur;
	uint32_t nr, k;
	int rc;

	have_cur = s3_rec_get(b, key, kl, &cv, &cvl, &cur) == 0;
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

int s3_abort_upload(struct s3_req *rq)
{
	void *uv;
	size_t uvl;
	int rc;

	rq->rq_op = "AbortMultipartUpload";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:AbortMultipartUpload") != 0 ||
	    s3_need_key(rq) != 0 ||
	    need_upload(rq, &uv, &uvl) != 0)
		return 0;
	free(uv);
	rc = s3_abort_upload_rec(rq->rq_bk, s3_q(rq, "uploadId"), rq->rq_key,
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
	    s3_rec_get(rq->rq_bk, rq->rq_key, rq->rq_key_len, &v, &vl, &r) != 0)
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
		s3_rec_hdr_add(&man, s3_sum_hdr(ck.cp_bit), ckv);
		s3_rec_hdr_add(&man, "x-amz-checksum-type", s3_ck_type_name(ckt));
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
	s3_rec_attrs_copy(uv, uvl, &man, true, true);
	free(uv);
	if (rq->rq_key_len > S3_KEY_HASHED_PREFIX)
		s3_tlv_add(&man, T_KEY, rq->rq_key, (uint32_t)rq->rq_key_len);
	il = s3_ikey(rq->rq_key, rq->rq_key_len, ik);
	rc = man.b_oom ? -ENOMEM : complete_tx(rq->rq_bk, upid, rq->rq_key,
					       rq->rq_key_len, &man, &t);
	if (rc == 0)
		rc = s3_rec_commit(rq->rq_bk, ik, il, &man,
				   s3_hdr(rq, "If-Match"),
				   s3_hdr(rq, "If-None-Match"), NULL, t);
	s3_buf_fini(&man);
	if (rc == -EEXIST || rc == -ENODATA)
		return s3_reply_cond(rq, rc);
	if (s3_is_doubt(rc))
		return s3_reply_doubt(rq, rc, "recording the object");
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "recording the object");
	return complete_reply(rq, etag, ck.cp_bit, ckv, ckt);
}

int s3_complete_upload(struct s3_req *rq)
{
	rq->rq_op = "CompleteMultipartUpload";
	if (s3_need_bucket(rq, S3_P_WRITE, "s3:PutObject") != 0 ||
	    s3_need_key(rq) != 0)
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

int s3_list_parts(struct s3_req *rq)
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
	    s3_need_key(rq) != 0 ||
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
int s3_uploads_of_bucket(struct s3_bucket *b, bool abort_all, bool *any)
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
					s3_abort_upload_rec(
						b, upid, (const char *)r.or_key,
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

int s3_list_uploads(struct s3_req *rq)
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
