/*
 * s3_cksum.c — S3 checksums beyond one PUT's bytes (s3_cksum.h): the
 * checksum mode and type, multipart checksums (COMPOSITE over the parts'
 * values, FULL_OBJECT by combining the parts' CRCs), the T_PSUMS field of
 * upload and object records, and the GetObjectAttributes reply.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateways/s3/s3_cksum.h"

#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XHDR "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define CK_PREFIX "x-amz-checksum-"

const char *s3_ck_type_name(int type)
{
	return type == S3_CK_FULL ? "FULL_OBJECT" :
	       type == S3_CK_COMPOSITE ? "COMPOSITE" : NULL;
}

bool s3_ck_is_hdr(const uint8_t *val, uint32_t n)
{
	size_t pl = sizeof CK_PREFIX - 1;

	return memchr(val, 0, n) != NULL &&
	       strncasecmp((const char *)val, CK_PREFIX, pl) == 0;
}

bool s3_ck_mode(struct s3_req *rq)
{
	const char *m = s3_hdr(rq, "x-amz-checksum-mode");

	return m != NULL && strcasecmp(m, "ENABLED") == 0;
}

/* --------------------------------------------------- CRC combination */

/* Reflected polynomial and width of CRC algorithm bit. */
static uint64_t crc_poly(uint32_t bit, uint32_t *width)
{
	*width = bit == S3_SUM_CRC64NVME ? 64 : 32;
	return bit == S3_SUM_CRC64NVME ? 0x9A6C9329AC4BC9B5ull :
	       bit == S3_SUM_CRC32C ? 0x82F63B78ull : 0xEDB88320ull;
}

/* a * b modulo the polynomial, both in reflected form (the top bit of the
 * width is x^0), as zlib's multmodp(). */
static uint64_t crc_mulmod(uint64_t a, uint64_t b, uint64_t poly,
			   uint32_t width)
{
	uint64_t m = 1ull << (width - 1), p = 0;

	while (m != 0) {
		if (a & m)
			p ^= b;
		m >>= 1;
		b = (b & 1) ? (b >> 1) ^ poly : b >> 1;
	}
	return p;
}

uint64_t s3_ck_crc_combine(uint32_t bit, uint64_t crc_a, uint64_t crc_b,
			   uint64_t len_b)
{
	uint32_t width;
	uint64_t poly = crc_poly(bit, &width);
	uint64_t one = 1ull << (width - 1);      /* x^0 */
	uint64_t sq = one >> 8;                  /* x^8: one byte */
	uint64_t xn = one;                       /* x^(8 len_b) */

	while (len_b != 0) {
		if (len_b & 1)
			xn = crc_mulmod(sq, xn, poly, width);
		len_b >>= 1;
		sq = crc_mulmod(sq, sq, poly, width);
	}
	return crc_mulmod(xn, crc_a, poly, width) ^ crc_b;
}

/* ----------------------------------------------- multipart checksums */

/* Big-endian value of n bytes. */
static uint64_t be_val(const uint8_t *p, uint32_t n)
{
	uint64_t v = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int s3_ck_mp_value(uint32_t bit, int type, const uint8_t *raws,
		   const uint64_t *sizes, uint32_t n, char *out)
{
	uint32_t len = s3_sum_len(bit), i;
	struct s3_sums s;
	char b64[S3_SUM_B64_MAX];

	if (len == 0 || (type == S3_CK_FULL && len > 8))
		return -EINVAL;
	memset(&s, 0, sizeof s);
	if (type == S3_CK_FULL) {
		uint64_t c = be_val(raws, len);

		for (i = 1; i < n; i++)
			c = s3_ck_crc_combine(bit, c, be_val(raws + i * len, len),
					      sizes[i]);
		s.s_algs = bit;
		s.s_crc64 = c;
		s.s_crc32c = s.s_crc32 = (uint32_t)c;
		s3_sum_b64(&s, bit, out);
		return 0;
	}
	if (s3_sums_init(&s, bit) != 0) {
		s3_sums_fini(&s);
		return -ENOMEM;
	}
	s3_sums_update(&s, raws, (size_t)len * n);
	s3_sums_final(&s);
	s3_sum_b64(&s, bit, b64);
	s3_sums_fini(&s);
	snprintf(out, S3_CK_VAL_MAX, "%s-%u", b64, n);
	return 0;
}

/* The S3_SUM_ADDL bit of an algorithm's S3 name ("SHA256"), 0: none. */
static uint32_t alg_of_name(const char *name)
{
	uint32_t bit;

	for (bit = S3_SUM_CRC64NVME; bit & S3_SUM_ADDL; bit <<= 1)
		if (strcasecmp(name, s3_sum_name(bit)) == 0)
			return bit;
	return 0;
}

int s3_ck_upload_args(struct s3_req *rq, uint32_t *bit, int *type)
{
	const char *a = s3_hdr(rq, "x-amz-checksum-algorithm");
	const char *t = s3_hdr(rq, "x-amz-checksum-type");
	bool hash;

	*bit = 0;
	*type = S3_CK_NONE;
	if (a == NULL && t == NULL)
		return 0;
	if (a == NULL)
		return s3_reply_err(rq, 400, "InvalidRequest", "The "
				    "x-amz-checksum-type header can only be "
				    "used with the x-amz-checksum-algorithm "
				    "header (key '%.300s')", rq->rq_key),
		       -EINVAL;
	*bit = alg_of_name(a);
	if (*bit == 0)
		return s3_reply_err(rq, 400, "InvalidRequest", "Checksum "
				    "algorithm '%.40s' is not supported: "
				    "CRC32, CRC32C, CRC64NVME, SHA1 or SHA256 "
				    "(key '%.300s')", a, rq->rq_key), -EINVAL;
	hash = *bit == S3_SUM_SHA1 || *bit == S3_SUM_SHA256;
	if (t == NULL)
		*type = *bit == S3_SUM_CRC64NVME ? S3_CK_FULL : S3_CK_COMPOSITE;
	else if (strcasecmp(t, "FULL_OBJECT") == 0)
		*type = S3_CK_FULL;
	else if (strcasecmp(t, "COMPOSITE") == 0)
		*type = S3_CK_COMPOSITE;
	else
		return s3_reply_err(rq, 400, "InvalidRequest", "Value for "
				    "x-amz-checksum-type header is invalid: "
				    "'%.40s' is neither FULL_OBJECT nor "
				    "COMPOSITE (key '%.300s')", t, rq->rq_key),
		       -EINVAL;
	if ((hash && *type == S3_CK_FULL) ||
	    (*bit == S3_SUM_CRC64NVME && *type == S3_CK_COMPOSITE))
		return s3_reply_err(rq, 400, "InvalidRequest", "The %s "
				    "checksum type cannot be used with the "
				    "%s checksum algorithm (key '%.300s')",
				    s3_ck_type_name(*type), s3_sum_name(*bit),
				    rq->rq_key), -EINVAL;
	return 0;
}

void s3_ck_psums_add(struct s3_buf *rec, uint32_t bit, int type,
		     const uint8_t *raws, uint32_t n)
{
	uint32_t len = s3_sum_len(bit);
	struct s3_buf f = {0};
	uint8_t head[2] = {(uint8_t)bit, (uint8_t)type};

	s3_buf_add(&f, head, 2);
	if (n > 0)
		s3_buf_add(&f, raws, (size_t)len * n);
	if (f.b_oom)
		rec->b_oom = true;
	else
		s3_tlv_add(rec, T_PSUMS, f.b_data, (uint32_t)f.b_len);
	s3_buf_fini(&f);
}

bool s3_ck_psums(const void *rec, size_t len, uint32_t *bit, int *type,
		 const uint8_t **raws, uint32_t *n)
{
	const uint8_t *val;
	size_t pos = 0;
	uint32_t vl, al;
	uint8_t tag;

	while (s3_tlv_next(rec, len, &pos, &tag, &val, &vl) == 1) {
		if (tag != T_PSUMS || vl < 2)
			continue;
		*bit = val[0];
		*type = val[1];
		al = s3_sum_len(*bit);
		if (al == 0 || !(*bit & S3_SUM_ADDL) ||
		    (*type != S3_CK_FULL && *type != S3_CK_COMPOSITE) ||
		    (vl - 2) % al != 0)
			return false;
		*raws = val + 2;
		*n = (vl - 2) / al;
		return true;
	}
	return false;
}

/* The value of stored header name (exact, lower case) into out (cap). */
static bool rec_hdr(const void *rec, size_t len, const char *name, char *out,
		    size_t cap)
{
	const uint8_t *val;
	size_t pos = 0, nl = strlen(name);
	uint32_t vl;
	uint8_t tag;

	while (s3_tlv_next(rec, len, &pos, &tag, &val, &vl) == 1) {
		if (tag != T_HDR || vl <= nl || val[nl] != 0 ||
		    memcmp(val, name, nl) != 0 || vl - nl - 1 >= cap)
			continue;
		memcpy(out, val + nl + 1, vl - nl - 1);
		out[vl - nl - 1] = 0;
		return true;
	}
	return false;
}

bool s3_ck_rec_value(const void *rec, size_t len, uint32_t bit, char *out)
{
	return rec_hdr(rec, len, s3_sum_hdr(bit), out, S3_CK_VAL_MAX);
}

int s3_ck_rec_type(const void *rec, size_t len)
{
	char t[16];

	if (!rec_hdr(rec, len, "x-amz-checksum-type", t, sizeof t))
		return S3_CK_NONE;
	return strcmp(t, "COMPOSITE") == 0 ? S3_CK_COMPOSITE : S3_CK_FULL;
}

/* ------------------------------------------------- GetObjectAttributes */

enum {
	AT_ETAG = 1u << 0,
	AT_CHECKSUM = 1u << 1,
	AT_PARTS = 1u << 2,
	AT_CLASS = 1u << 3,
	AT_SIZE = 1u << 4,
};

/* x-amz-object-attributes into *at; replies InvalidArgument: -EINVAL. */
static int attrs_parse(struct s3_req *rq, uint32_t *at)
{
	static const char *const names[] = {"ETag", "Checksum", "ObjectParts",
					    "StorageClass", "ObjectSize"};
	const char *h = s3_hdr(rq, "x-amz-object-attributes");
	char name[64];

	*at = 0;
	while (h != NULL && *h != 0) {
		size_t n, i;

		h += strspn(h, " \t,");
		n = strcspn(h, " \t,");
		if (n == 0)
			break;
		for (i = 0; i < 5; i++)
			if (strlen(names[i]) == n &&
			    strncmp(h, names[i], n) == 0)
				break;
		if (i == 5) {
			snprintf(name, sizeof name, "%.*s", (int)n, h);
			return s3_reply_err(rq, 400, "InvalidArgument",
					    "Invalid attribute name specified: "
					    "'%s' (x-amz-object-attributes "
					    "takes ETag, Checksum, ObjectParts, "
					    "StorageClass, ObjectSize)", name),
			       -EINVAL;
		}
		*at |= 1u << i;
		h += n;
	}
	if (*at == 0)
		return s3_reply_err(rq, 400, "InvalidArgument", "The "
				    "x-amz-object-attributes header specifying "
				    "the attributes to be retrieved is either "
				    "missing or empty (key '%.300s')",
				    rq->rq_key), -EINVAL;
	return 0;
}

/* Header h as a number in [0, max] into *v (dflt when absent); replies
 * InvalidArgument: -EINVAL. */
static int hdr_num(struct s3_req *rq, const char *h, uint32_t dflt,
		   uint32_t max, uint32_t *v)
{
	const char *s = s3_hdr(rq, h);
	char *e;
	unsigned long n;

	*v = dflt;
	if (s == NULL)
		return 0;
	n = strtoul(s, &e, 10);
	if (*s < '0' || *s > '9' || *e != 0 || n > 2147483647ul)
		return s3_reply_err(rq, 400, "InvalidArgument", "%s must be "
				    "a non-negative integer (got '%.40s')", h,
				    s), -EINVAL;
	*v = n > max ? max : (uint32_t)n;
	return 0;
}

/* <Checksum> of record r: its stored value and type, if any. */
static void attrs_checksum(struct s3_buf *x, const struct s3_orec *r)
{
	char v[S3_CK_VAL_MAX];
	uint32_t bit;
	bool open = false;

	for (bit = S3_SUM_CRC64NVME; bit & S3_SUM_ADDL; bit <<= 1) {
		if (!s3_ck_rec_value(r->or_rec, r->or_rec_len, bit, v))
			continue;
		if (!open)
			s3_buf_str(x, "<Checksum>");
		open = true;
		s3_buf_printf(x, "<Checksum%s>", s3_sum_name(bit));
		s3_buf_xml(x, v, strlen(v));
		s3_buf_printf(x, "</Checksum%s>", s3_sum_name(bit));
	}
	if (open)
		s3_buf_printf(x, "<ChecksumType>%s</ChecksumType></Checksum>",
			      s3_ck_type_name(s3_ck_rec_type(r->or_rec,
							     r->or_rec_len)) ?:
			      "FULL_OBJECT");
}

/* <ObjectParts> of multipart record r: parts after marker, max of them. */
static void attrs_parts(struct s3_buf *x, const struct s3_orec *r,
			uint32_t marker, uint32_t max)
{
	const uint8_t *raws = NULL;
	uint32_t bit = 0, nraw = 0, k, last = marker, len = 0;
	int type;
	bool sums;

	sums = s3_ck_psums(r->or_rec, r->or_rec_len, &bit, &type, &raws,
			   &nraw) && nraw == r->or_nparts;
	if (sums)
		len = s3_sum_len(bit);
	s3_buf_printf(x, "<ObjectParts><PartsCount>%u</PartsCount>"
		      "<PartNumberMarker>%u</PartNumberMarker>",
		      r->or_nparts, marker);
	for (k = marker; k < r->or_nparts && k - marker < max; k++) {
		s3_buf_printf(x, "<Part><PartNumber>%u</PartNumber><Size>%llu"
			      "</Size>", k + 1, (unsigned long long)
			      s3_u64(r->or_parts + S3_PART_STRIDE * k + 16));
		if (sums) {
			char b64[S3_SUM_B64_MAX];
			size_t bl = s3_b64enc(raws + (size_t)k * len, len, b64);

			b64[bl] = 0;
			s3_buf_printf(x, "<Checksum%s>%s</Checksum%s>",
				      s3_sum_name(bit), b64, s3_sum_name(bit));
		}
		s3_buf_str(x, "</Part>");
		last = k + 1;
	}
	s3_buf_printf(x, "<NextPartNumberMarker>%u</NextPartNumberMarker>"
		      "<MaxParts>%u</MaxParts><IsTruncated>%s</IsTruncated>"
		      "</ObjectParts>", last, max,
		      k < r->or_nparts ? "true" : "false");
}

int s3_ck_attributes_reply(struct s3_req *rq, const struct s3_orec *r)
{
	struct s3_buf x = {0};
	uint32_t at, max, marker;
	char t[40];

	if (attrs_parse(rq, &at) != 0 ||
	    hdr_num(rq, "x-amz-max-parts", 1000, 1000, &max) != 0 ||
	    hdr_num(rq, "x-amz-part-number-marker", 0, S3_PARTS_MAX,
		    &marker) != 0)
		return 0;
	s3_buf_str(&x, XHDR "<GetObjectAttributesResponse xmlns=\"" XMLNS
		   "\">");
	if (at & AT_ETAG) {
		s3_buf_str(&x, "<ETag>");
		s3_buf_xml(&x, r->or_etag, strlen(r->or_etag));
		s3_buf_str(&x, "</ETag>");
	}
	if (at & AT_CHECKSUM)
		attrs_checksum(&x, r);
	if ((at & AT_PARTS) && r->or_nparts > 0)
		attrs_parts(&x, r, marker, max);
	if (at & AT_CLASS)
		s3_buf_str(&x, "<StorageClass>STANDARD</StorageClass>");
	if (at & AT_SIZE)
		s3_buf_printf(&x, "<ObjectSize>%llu</ObjectSize>",
			      (unsigned long long)r->or_size);
	s3_buf_str(&x, "</GetObjectAttributesResponse>");
	s3_time_http(r->or_mtime_ns, t);
	s3_reply_hdr(rq, "Last-Modified", t);
	return s3_reply_xml(rq, 200, &x);
}
