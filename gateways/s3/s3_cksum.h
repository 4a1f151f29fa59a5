/*
 * s3_cksum.h — S3 additional checksums beyond one PUT's bytes (s3.h,
 * "checksums", computes those): when GET and HEAD return them
 * (x-amz-checksum-mode), the checksum type (FULL_OBJECT, COMPOSITE), the
 * checksums of multipart uploads, and GetObjectAttributes.
 *
 * Storage.  An object record keeps each checksum as a kept header
 * (T_HDR "x-amz-checksum-ALG\0VALUE") and, beside it, T_HDR
 * "x-amz-checksum-type\0FULL_OBJECT" or "...\0COMPOSITE".  A multipart
 * upload created with x-amz-checksum-algorithm keeps the algorithm and
 * type in its upload record (T_PSUMS with no parts); each part record
 * keeps the part's checksums (T_HDR as an object); the completed object
 * keeps T_PSUMS with every part's raw value, in manifest order, and the
 * object's checksum: COMPOSITE "BASE64-N" (the algorithm over the
 * concatenated raw part values), or FULL_OBJECT (the CRC of the whole
 * object, combined from the parts' CRCs and sizes).
 */
#ifndef STRATA_S3_CKSUM_H
#define STRATA_S3_CKSUM_H

#include "gateways/s3/s3.h"

/** Checksum types (the S3 names: s3_ck_type_name()). */
enum {
	S3_CK_NONE = 0,
	S3_CK_FULL = 1,      /* FULL_OBJECT: over the object's bytes */
	S3_CK_COMPOSITE = 2, /* COMPOSITE: over the parts' checksums, "-N" */
};

/** Room for a checksum value as sent or returned: base64 + "-10000". */
#define S3_CK_VAL_MAX (S3_SUM_B64_MAX + 8)

/** "FULL_OBJECT", "COMPOSITE", or NULL for S3_CK_NONE. */
const char *s3_ck_type_name(int type);

/** Is header name (of a stored T_HDR "name\0value", len n) a checksum
 *  header (x-amz-checksum-*: values, type)?  Those are returned on GET
 *  and HEAD only with x-amz-checksum-mode: ENABLED, and not copied. */
bool s3_ck_is_hdr(const uint8_t *val, uint32_t n);

/** Does the request ask for checksums (x-amz-checksum-mode: ENABLED)? */
bool s3_ck_mode(struct s3_req *rq);

/** CRC of A||B from crc_a = CRC(A), crc_b = CRC(B) and len_b = |B|, for
 *  the CRC algorithm bit (S3_SUM_CRC32, _CRC32C, _CRC64NVME; all three
 *  reflected with initial value and final XOR all ones). */
uint64_t s3_ck_crc_combine(uint32_t bit, uint64_t crc_a, uint64_t crc_b,
			   uint64_t len_b);

/**
 * The checksum of a multipart object of n parts with algorithm bit and
 * type: raws holds the parts' raw values (s3_sum_len(bit) bytes each,
 * big-endian for CRCs), sizes their sizes.  out (S3_CK_VAL_MAX bytes):
 * the base64, with "-N" for COMPOSITE.  0, or -EINVAL (FULL_OBJECT of a
 * hash, which cannot be combined).
 */
int s3_ck_mp_value(uint32_t bit, int type, const uint8_t *raws,
		   const uint64_t *sizes, uint32_t n, char *out);

/**
 * CreateMultipartUpload: the upload's checksum algorithm and type from
 * x-amz-checksum-algorithm and x-amz-checksum-type (*bit 0: none).  An
 * algorithm S3 does not name, a type without an algorithm, or a type the
 * algorithm does not support (CRC64NVME only FULL_OBJECT, SHA-1 and
 * SHA-256 only COMPOSITE) is replied 400 InvalidRequest: -EINVAL.
 */
int s3_ck_upload_args(struct s3_req *rq, uint32_t *bit, int *type);

/** Append T_PSUMS (bit, type, and n raw values of raws) to rec. */
void s3_ck_psums_add(struct s3_buf *rec, uint32_t bit, int type,
		     const uint8_t *raws, uint32_t n);

/**
 * The T_PSUMS of record rec: true with its algorithm, type, the raw
 * values (pointer into rec) and their count; false when the record has
 * none or a malformed one.
 */
bool s3_ck_psums(const void *rec, size_t len, uint32_t *bit, int *type,
		 const uint8_t **raws, uint32_t *n);

/** The value of stored header "x-amz-checksum-ALG" of bit in record
 *  rec into out (S3_CK_VAL_MAX bytes): true when present. */
bool s3_ck_rec_value(const void *rec, size_t len, uint32_t bit, char *out);

/** The type a record stores (x-amz-checksum-type), S3_CK_NONE if none. */
int s3_ck_rec_type(const void *rec, size_t len);

/**
 * GetObjectAttributes: the reply (200 XML GetObjectAttributesResponse)
 * for object record r, the attributes asked by x-amz-object-attributes
 * (ETag, Checksum, ObjectParts, StorageClass, ObjectSize) and the parts
 * page of x-amz-max-parts (default and at most 1000) and
 * x-amz-part-number-marker.  Replies 400 InvalidArgument for a missing
 * or unknown attribute or a malformed number.
 */
int s3_ck_attributes_reply(struct s3_req *rq, const struct s3_orec *r);

#endif
