/*
 * gateways/s3/s3_ops_internal.h — what the files of the S3 operations
 * share, and only they: s3_ops.c (helpers, the router), s3_ops_bucket.c,
 * s3_ops_object.c, s3_ops_list.c and s3_ops_multipart.c.  Each function
 * is described above its definition; an operation (int f(struct s3_req
 * *)) replies itself, as the routes of s3_ops.c expect.
 */
#ifndef STRATA_S3_OPS_INTERNAL_H
#define STRATA_S3_OPS_INTERNAL_H

#include "gateways/s3/s3.h"

#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XHDR "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* The context (rq_ctx) of a request that writes an object: PutObject,
 * CopyObject, UploadPart, UploadPartCopy (s3_ops_object.c). */
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

/* Helpers (s3_ops.c). */
bool s3_bucket_name_ok(const char *n);
void s3_etag_hdr(struct s3_req *rq, const char *etag);
bool s3_etag_in(const char *list, const char *etag);
bool s3_is_doubt(int rc);
int s3_need_key(struct s3_req *rq);
void s3_rec_attrs_copy(const void *src, size_t sl, struct s3_buf *rec,
		       bool tags, bool own);
void s3_rec_attrs_copy_tags(const void *src, size_t sl, struct s3_buf *rec);
int s3_rec_attrs_from_req(struct s3_req *rq, struct s3_buf *rec);
void s3_rec_attrs_reply(struct s3_req *rq, const struct s3_orec *r,
			bool sums);
int s3_rec_commit(struct s3_bucket *b, const uint8_t *ik, size_t il,
		  const struct s3_buf *rec, const char *im,
		  const char *inm, const struct s3_wr *w, struct s3_tx *t);
int s3_rec_extra_from_req(struct s3_req *rq, struct s3_buf *rec,
			  bool notags);
void s3_rec_hdr_add(struct s3_buf *rec, const char *name, const char *v);
uint32_t s3_rec_sum_algs(const struct s3_orec *r);
void s3_rec_sums(struct s3_buf *rec, const struct s3_sums *s, bool type);
int s3_reply_cond(struct s3_req *rq, int rc);
int s3_reply_doubt(struct s3_req *rq, int rc, const char *what);
void s3_sums_reply(struct s3_req *rq, const struct s3_sums *s, bool type);

/* Operations on buckets (s3_ops_bucket.c). */
int s3_list_buckets(struct s3_req *rq);
int s3_create_bucket(struct s3_req *rq);
int s3_delete_bucket(struct s3_req *rq);

/* Objects: the writer context and the operations (s3_ops_object.c). */
void s3_put_cleanup(struct s3_req *rq);
uint32_t s3_put_algs(const struct put_ctx *pc);
void s3_make_etag(const struct s3_sums *s, bool part, char etag[33]);
int s3_put_finish(struct s3_req *rq, struct put_ctx *pc, char etag[33]);
void s3_drop_writer(struct s3_req *rq);
void s3_done_writer(struct s3_req *rq);
void s3_rec_data(struct s3_req *rq, struct s3_buf *rec, const char *etag);
int s3_put_begin(struct s3_req *rq, struct put_ctx *pc);
int s3_put_object(struct s3_req *rq);
int s3_get_object(struct s3_req *rq);
int s3_delete_object(struct s3_req *rq);
int s3_delete_objects(struct s3_req *rq);
int s3_copy_bytes(struct s3_req *rq, struct s3_bucket *sb, void *sv,
		  size_t svl, uint64_t off, uint64_t len);
int s3_copy_source(struct s3_req *rq, const char *src,
		   struct s3_bucket **sb, char **dec, const char **skey,
		   void **sv, size_t *svl, struct s3_orec *sr);
void s3_copy_reply(struct s3_req *rq, const char *el, const char *etag);
int s3_copy_object(struct s3_req *rq, const char *src);

/* Listings (s3_ops_list.c). */
int s3_list_objects(struct s3_req *rq);

/* Multipart uploads (s3_ops_multipart.c). */
int s3_create_upload(struct s3_req *rq);
int s3_upload_part(struct s3_req *rq);
int s3_abort_upload_rec(struct s3_bucket *b, const char *upid,
			const char *key, size_t kl);
int s3_abort_upload(struct s3_req *rq);
int s3_complete_upload(struct s3_req *rq);
int s3_list_parts(struct s3_req *rq);
int s3_uploads_of_bucket(struct s3_bucket *b, bool abort_all, bool *any);
int s3_list_uploads(struct s3_req *rq);

#endif
