/*
 * gateways/s3/s3_ops_internal.h — what the files of the S3 operations
 * share, and only they: s3_ops.c (helpers, the router), s3_ops_bucket.c,
 * s3_ops_object.c, s3_ops_list.c, s3_ops_multipart.c, and the view
 * buckets' s3_view.c and s3_view_list.c.  Each function
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
	const char *pc_rk;       /* the in-flight record's key when not
				  * pc_ik (a view bucket: the full key) */
	size_t pc_rkl;
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

/* Listings (s3_ops_list.c): a walk of a bucket's keys in order (its index,
 * or a view bucket's directory tree: s3_view_list()) gives each key to
 * s3_lst_take(), which applies prefix, bound, delimiter and page size. */
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

/** What s3_lst_take() made of a key. */
enum {
	LST_SKIP = 0, /* not listed: before the prefix or the bound, or in the
		       * common prefix just emitted */
	LST_DONE = 1, /* past the prefix, or the page is full (l_trunc) */
	LST_CP = 2,   /* its common prefix was emitted (*cpl bytes of it) */
	LST_KEY = 3,  /* to be emitted: s3_lst_key() with its record */
};
int s3_lst_take(struct lst *l, struct s3_buf *x, const char *key, size_t kl,
		size_t *cpl);
void s3_lst_key(struct lst *l, struct s3_buf *x, struct s3_req *rq,
		const char *key, size_t kl, const struct s3_orec *r);
int s3_list_objects(struct s3_req *rq);
/** The listing of a view bucket (s3_view_list.c): its keys in S3 order
 *  through s3_lst_take(); 0 or the namespace's error. */
int s3_view_list(struct s3_req *rq, struct lst *l, struct s3_buf *x);
/** Is key k[0..n) UTF-8 without C1 controls (what S3 takes in a URI)? */
bool s3_key_chars_ok(const char *k, size_t n);

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
