/*
 * fuzz_s3_chunked.c — libFuzzer target: the S3 gateway's aws-chunked body
 * decoder (gateways/s3/s3_main.c: body_data, ck_feed, ck_header,
 * ck_trailer, body_end) with the signature chain of signed bodies
 * (s3_auth_chunk, s3_auth.c) and the trailer lookup s3_trailer().
 *
 * Input: byte 0 picks the form (% 3: 0 unsigned with optional trailers,
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER; 1 signed,
 * STREAMING-AWS4-HMAC-SHA256-PAYLOAD; 2 signed with signed trailers, the
 * -TRAILER form), byte 1 the size of the pieces the body arrives in
 * (0: all at once), the rest is the body.  Signed forms use a fixed
 * signing key, date, scope and seed signature (FZ_CK_*), so the seeds of
 * mkseeds.py carry valid chains.
 *
 * The writer is replaced (s3_wr_data and s3_wr_abort wrapped, -Wl,--wrap):
 * decoded bytes are counted and hashed.  The body is decoded twice, in one
 * piece and in the pieces byte 1 asks for: both must end the same way
 * (refused or not, the same decoded bytes, the same state and trailers),
 * and never decode more bytes than came; else the harness aborts.
 */
#include "tests/fuzz/fuzz_s3.h"

#define FZ_CK_DATE "20240101T000000Z"
#define FZ_CK_SCOPE "20240101/us-east-1/s3/aws4_request"
#define FZ_CK_SEED "4f5e3a2b1c0d9e8f7a6b5c4d3e2f1a0b" \
		   "4f5e3a2b1c0d9e8f7a6b5c4d3e2f1a0b"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int __wrap_s3_wr_data(struct s3_wr *w, const void *p, size_t n);
void __wrap_s3_wr_abort(struct s3_wr *w);

/* What the writer received in one decoding. */
static uint64_t fz_hash;

int __wrap_s3_wr_data(struct s3_wr *w, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		fz_hash = (fz_hash ^ b[i]) * 0x100000001b3ull;
	w->w_len += n;
	return 0;
}

void __wrap_s3_wr_abort(struct s3_wr *w)
{
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_setup();
	return 0;
}

struct fz_out {
	bool fo_failed;
	int fo_state;
	uint64_t fo_len, fo_hash;
	char fo_trailers[4096];
	size_t fo_tlen;
	uint32_t fo_status;
};

static struct s3_req *fz_req(struct fz_con *f, int form)
{
	struct s3_req *rq = uri_cb(NULL, "/fz/k", (struct MHD_Connection *)f);
	struct s3_ck_sig *cs;

	if (rq == NULL)
		abort();
	rq->rq_conn = f;
	rq->rq_method = "PUT";
	rq->rq_body = S3_BODY_STREAM;
	rq->rq_chunked = true;
	rq->rq_wr = calloc(1, sizeof *rq->rq_wr);
	if (rq->rq_wr == NULL)
		abort();
	if (form == 0)
		return rq;
	cs = calloc(1, sizeof *cs);
	if (cs == NULL || (cs->cs_sha = EVP_MD_CTX_new()) == NULL)
		abort();
	for (int i = 0; i < 32; i++)
		cs->cs_key[i] = (uint8_t)(i + 1);
	snprintf(cs->cs_date, sizeof cs->cs_date, "%s", FZ_CK_DATE);
	snprintf(cs->cs_scope, sizeof cs->cs_scope, "%s", FZ_CK_SCOPE);
	snprintf(cs->cs_prev, sizeof cs->cs_prev, "%s", FZ_CK_SEED);
	cs->cs_trailer = form == 2;
	EVP_DigestInit_ex(cs->cs_sha, EVP_sha256(), NULL);
	rq->rq_cks = cs;
	return rq;
}

/* Decode body in pieces of step bytes (0: one piece) into *o. */
static void fz_decode(int form, const uint8_t *body, size_t n, size_t step,
		      struct fz_out *o)
{
	struct fz_con f = {0};
	struct s3_req *rq = fz_req(&f, form);
	size_t off = 0;

	fz_hash = 0xcbf29ce484222325ull;
	do {
		size_t c = step == 0 || n - off < step ? n - off : step;

		body_data(rq, (const char *)body + off, c);
		off += c;
	} while (off < n);
	memset(o, 0, sizeof *o);
	o->fo_failed = rq->rq_failed;
	o->fo_state = rq->rq_ck_state;
	o->fo_len = rq->rq_wr != NULL ? rq->rq_wr->w_len : 0;
	o->fo_hash = fz_hash;
	o->fo_tlen = rq->rq_trailers.b_len;
	if (o->fo_tlen > sizeof o->fo_trailers)
		abort(); /* trailers kept past their limit */
	if (o->fo_tlen > 0)
		memcpy(o->fo_trailers, rq->rq_trailers.b_data, o->fo_tlen);
	if (o->fo_len > n)
		abort(); /* more bytes out than in */
	body_end(rq);
	o->fo_status = rq->rq_status;
	if (getenv("FZ_VERBOSE") != NULL) /* seeds: what each one reaches */
		fprintf(stderr, "fz: form %d step %zu: failed %d state %d, "
			"%llu bytes, status %u\n", form, step, o->fo_failed,
			o->fo_state, (unsigned long long)o->fo_len,
			o->fo_status);
	if (!rq->rq_failed && rq->rq_ck_state == CK_DONE)
		(void)s3_trailer(rq, "x-amz-checksum-crc32");
	req_free(rq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_out a, b;
	int form;

	if (size < 2)
		return 0;
	form = data[0] % 3;
	fz_decode(form, data + 2, size - 2, 0, &a);
	if (data[1] == 0)
		return 0;
	fz_decode(form, data + 2, size - 2, data[1], &b);
	if (a.fo_failed != b.fo_failed || a.fo_status != b.fo_status)
		abort(); /* the pieces changed the outcome */
	if (!a.fo_failed &&
	    (a.fo_state != b.fo_state || a.fo_len != b.fo_len ||
	     a.fo_hash != b.fo_hash || a.fo_tlen != b.fo_tlen ||
	     memcmp(a.fo_trailers, b.fo_trailers, a.fo_tlen) != 0))
		abort(); /* ... or what was decoded */
	return 0;
}
