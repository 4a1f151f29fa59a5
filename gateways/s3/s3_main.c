/*
 * s3_main.c — strata-s3: configuration, the HTTP server (libmicrohttpd in
 * epoll mode, a pool of threads, keep-alive), request parsing, body streaming
 * (aws-chunked decoding, payload SHA-256 and Content-MD5 checks), replies,
 * the access log and per-request statistics.
 *
 *   strata-s3 [--config FILE] [--data DIR | --cluster FILE] [--port N]
 *             [--listen ADDR] [--port-file F] [--creds F] [--access-log F]
 *             [--stats-file F] [--inline-max BYTES] [--layout L] ...
 *
 * Every option of the command line is also a "name: value" line of the
 * configuration file (dashes or underscores).  The server listens on
 * 127.0.0.1 unless told otherwise; port 0 takes a free port, written to
 * --port-file and printed on stdout as "strata-s3: listening on A:P".
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <microhttpd.h>

#include "addb/addb.h"
#include "gateways/s3/s3.h"
#include "gateways/s3/s3_view.h"
#include "gateways/s3/s3_bconf.h"

/* ---------------------------------------------------------- statistics */

#define ST_OPS 48
#define ST_HIST 32

struct st_op {
	const char *so_name;
	uint64_t so_count, so_errors, so_in, so_out, so_lat_us, so_max_us;
	uint64_t so_hist[ST_HIST]; /* log2 microseconds */
};

static pthread_mutex_t st_lock = PTHREAD_MUTEX_INITIALIZER;
static struct st_op st_ops[ST_OPS];
static FILE *access_log;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void stats_add(struct s3_req *rq, uint64_t us)
{
	uint32_t k, b = 0;

	while (b + 1 < ST_HIST && (1ull << (b + 1)) <= us)
		b++;
	pthread_mutex_lock(&st_lock);
	for (k = 0; k < ST_OPS; k++)
		if (st_ops[k].so_name == NULL ||
		    strcmp(st_ops[k].so_name, rq->rq_op) == 0)
			break;
	if (k < ST_OPS) {
		struct st_op *s = &st_ops[k];

		s->so_name = rq->rq_op;
		s->so_count++;
		s->so_errors += rq->rq_status >= 400;
		s->so_in += rq->rq_in;
		s->so_out += rq->rq_out;
		s->so_lat_us += us;
		if (us > s->so_max_us)
			s->so_max_us = us;
		s->so_hist[b]++;
	}
	pthread_mutex_unlock(&st_lock);
}

/* The metrics' operation label (addb/addb.h, ADDB_S3_*) of an S3
 * operation name. */
static uint32_t s3_addb_op(const char *op)
{
	if (strstr(op, "Multipart") != NULL || strstr(op, "UploadPart") != NULL ||
	    strcmp(op, "ListParts") == 0)
		return ADDB_S3_MULTIPART;
	if (strncmp(op, "List", 4) == 0)
		return ADDB_S3_LIST;
	if (strcmp(op, "GetObject") == 0 || strcmp(op, "GetObjectAttributes") == 0)
		return ADDB_S3_GET;
	if (strcmp(op, "PutObject") == 0 || strcmp(op, "CopyObject") == 0)
		return ADDB_S3_PUT;
	if (strncmp(op, "Head", 4) == 0)
		return ADDB_S3_HEAD;
	if (strncmp(op, "DeleteObject", 12) == 0)
		return ADDB_S3_DELETE;
	if (strstr(op, "Bucket") != NULL)
		return ADDB_S3_BUCKET;
	return ADDB_S3_OTHER;
}

/* The process's metrics of a request that ended. */
static void s3_addb(const struct s3_req *rq, uint64_t ns)
{
	uint32_t op = s3_addb_op(rq->rq_op);
	int st = rq->rq_status / 100 - 2;

	st = st < 0 ? 0 : st > 3 ? 3 : st;
	addb_add(ADDB_S3_REQ, addb_inst(ADDB_S3_REQ, op, (uint32_t)st), 1);
	addb_obs(ADDB_S3_LAT, op, ns);
}

static uint64_t hist_pct(const struct st_op *s, double pct)
{
	uint64_t want = (uint64_t)(s->so_count * pct + 0.999999), seen = 0;
	uint32_t b;

	for (b = 0; b < ST_HIST; b++) {
		seen += s->so_hist[b];
		if (seen >= want)
			return 2ull << b;
	}
	return s->so_max_us;
}

/* The statistics as JSON: one object per operation. */
static void stats_json(struct s3_buf *b)
{
	uint32_t k;

	pthread_mutex_lock(&st_lock);
	s3_buf_str(b, "{\"ops\":[");
	for (k = 0; k < ST_OPS && st_ops[k].so_name != NULL; k++) {
		const struct st_op *s = &st_ops[k];

		s3_buf_printf(b, "%s{\"op\":\"%s\",\"count\":%lu,\"errors\":%lu,"
			      "\"bytes_in\":%lu,\"bytes_out\":%lu,"
			      "\"mean_us\":%lu,\"p50_us\":%lu,\"p99_us\":%lu,"
			      "\"max_us\":%lu}", k ? "," : "", s->so_name,
			      s->so_count, s->so_errors, s->so_in, s->so_out,
			      s->so_count ? s->so_lat_us / s->so_count : 0,
			      hist_pct(s, 0.5), hist_pct(s, 0.99),
			      s->so_max_us);
	}
	s3_buf_str(b, "]}\n");
	pthread_mutex_unlock(&st_lock);
}

/* The status of the last error reply libmicrohttpd made on this thread
 * (log_cb), 0 when none: see refused_note(). */
static __thread int mhd_err_status;
/* What that error reply was for (MHD_ERR_*, from its log message). */
static __thread int mhd_err_kind;

enum { MHD_ERR_OTHER = 1, MHD_ERR_HEADER, MHD_ERR_LINE, MHD_ERR_CHUNKED,
       MHD_ERR_CHUNK_BIG, MHD_ERR_CL_BAD, MHD_ERR_CL_BIG };

/* Per connection (libmicrohttpd's socket context): the request being
 * read, so that a reply libmicrohttpd makes itself carries its id. */
struct conn_ctx {
	struct s3_req *cx_rq;
};

static void access_line(struct s3_req *rq, uint64_t us)
{
	char t[48];
	struct s3_buf key = {0};

	if (access_log == NULL)
		return;
	s3_time_iso(s3_now_ns(), t);
	if (rq->rq_key != NULL)
		s3_urlenc(&key, rq->rq_key, rq->rq_key_len, true);
	pthread_mutex_lock(&log_lock);
	fprintf(access_log, "%s %s %s %s %s %s %s /%s %u %lu %lu %lu\n", t,
		rq->rq_remote, rq->rq_id,
		rq->rq_authed ? rq->rq_user.u_name : "-", rq->rq_op,
		rq->rq_method ? rq->rq_method : "-",
		rq->rq_bucket[0] ? rq->rq_bucket : "-",
		key.b_data ? key.b_data : "", rq->rq_status, rq->rq_in,
		rq->rq_out, us);
	fflush(access_log);
	pthread_mutex_unlock(&log_lock);
	s3_buf_fini(&key);
}

/* ------------------------------------------------------------- replies */

const char *s3_hdr(struct s3_req *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->rq_conn, MHD_HEADER_KIND, name);
}

struct hdr_each {
	int (*he_cb)(void *cls, const char *name, const char *value);
	void *he_cls;
};

static enum MHD_Result hdr_each_cb(void *cls, enum MHD_ValueKind kind,
				   const char *k, const char *v)
{
	struct hdr_each *he = cls;

	return he->he_cb(he->he_cls, k, v ? v : "") ? MHD_YES : MHD_NO;
}

void s3_hdr_each(struct s3_req *rq,
		 int (*cb)(void *cls, const char *name, const char *value),
		 void *cls)
{
	struct hdr_each he = {cb, cls};

	MHD_get_connection_values(rq->rq_conn, MHD_HEADER_KIND, hdr_each_cb,
				  &he);
}

static const char *s3_hdr_c(struct MHD_Connection *con, const char *name)
{
	return MHD_lookup_connection_value(con, MHD_HEADER_KIND, name);
}

const char *s3_q(struct s3_req *rq, const char *name)
{
	uint32_t k;

	for (k = 0; k < rq->rq_nq; k++)
		if (strcmp(rq->rq_qn[k], name) == 0)
			return rq->rq_qv[k];
	return NULL;
}

bool s3_qhas(struct s3_req *rq, const char *name)
{
	return s3_q(rq, name) != NULL;
}

/* Set a reply header; a header of the same name is replaced. */
void s3_reply_hdr(struct s3_req *rq, const char *name, const char *value)
{
	size_t pos = 0;

	while (pos < rq->rq_hdrs.b_len) {
		char *n = rq->rq_hdrs.b_data + pos;
		size_t len = strlen(n) + 1;

		len += strlen(n + len) + 1;
		if (strcasecmp(n, name) == 0) {
			memmove(n, n + len, rq->rq_hdrs.b_len - pos - len);
			rq->rq_hdrs.b_len -= len;
			continue;
		}
		pos += len;
	}
	s3_buf_add(&rq->rq_hdrs, name, strlen(name) + 1);
	s3_buf_add(&rq->rq_hdrs, value, strlen(value) + 1);
}

static int reply_set(struct s3_req *rq, uint32_t status,
		     struct MHD_Response *r)
{
	size_t pos = 0;

	if (r == NULL)
		return -ENOMEM;
	while (pos < rq->rq_hdrs.b_len) {
		const char *n = rq->rq_hdrs.b_data + pos;
		const char *v = n + strlen(n) + 1;

		MHD_add_response_header(r, n, v);
		pos += strlen(n) + strlen(v) + 2;
	}
	MHD_add_response_header(r, "x-amz-request-id", rq->rq_id);
	MHD_add_response_header(r, "x-amz-id-2", rq->rq_id);
	MHD_add_response_header(r, "Server", "strata-s3");
	if (rq->rq_resp != NULL)
		MHD_destroy_response(rq->rq_resp);
	rq->rq_resp = r;
	rq->rq_status = status;
	return 0;
}

int s3_reply_xml(struct s3_req *rq, uint32_t status, struct s3_buf *body)
{
	struct MHD_Response *r;

	if (body->b_oom) {
		s3_buf_fini(body);
		return s3_reply_err(rq, 500, "InternalError", "out of memory");
	}
	r = MHD_create_response_from_buffer(body->b_len, body->b_data,
					    MHD_RESPMEM_MUST_FREE);
	rq->rq_out += body->b_len;
	if (r == NULL)
		s3_buf_fini(body);
	*body = (struct s3_buf){0};
	s3_reply_hdr(rq, "Content-Type", "application/xml");
	return reply_set(rq, status, r);
}

int s3_reply_empty(struct s3_req *rq, uint32_t status)
{
	return reply_set(rq, status, MHD_create_response_from_buffer(
					     0, NULL, MHD_RESPMEM_PERSISTENT));
}

/* Drop the reply headers set so far but the CORS ones (Access-Control-*,
 * Vary), which an error reply carries too, as AWS's do. */
static void hdrs_keep_cors(struct s3_req *rq)
{
	size_t pos = 0;

	while (pos < rq->rq_hdrs.b_len) {
		char *n = rq->rq_hdrs.b_data + pos;
		size_t len = strlen(n) + 1;

		len += strlen(n + len) + 1;
		if (strncasecmp(n, "Access-Control-", 15) == 0 ||
		    strcasecmp(n, "Vary") == 0) {
			pos += len;
			continue;
		}
		memmove(n, n + len, rq->rq_hdrs.b_len - pos - len);
		rq->rq_hdrs.b_len -= len;
	}
}

int s3_reply_err(struct s3_req *rq, uint32_t status, const char *code,
		 const char *fmt, ...)
{
	struct s3_buf b = {0};
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	hdrs_keep_cors(rq);
	s3_buf_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>"
		   "<Code>");
	s3_buf_str(&b, code);
	s3_buf_str(&b, "</Code><Message>");
	s3_buf_xml(&b, msg, strlen(msg));
	s3_buf_str(&b, "</Message><Resource>");
	s3_buf_xml(&b, rq->rq_path ? rq->rq_path : "/",
		   rq->rq_path ? rq->rq_path_len : 1);
	s3_buf_printf(&b, "</Resource><RequestId>%s</RequestId></Error>",
		      rq->rq_id);
	if (strcmp(rq->rq_method ? rq->rq_method : "", "HEAD") == 0) {
		s3_buf_fini(&b);
		return s3_reply_empty(rq, status);
	}
	return s3_reply_xml(rq, status, &b);
}

int s3_reply_clovis(struct s3_req *rq, int rc, const char *what)
{
	const char *m = clovis_errmsg();

	fprintf(stderr, "strata-s3: %s %s: %s: %s\n", rq->rq_id, what,
		clovis_strerror(rc), m);
	if (rc == -ENOSPC)
		return s3_reply_err(rq, 507, "InsufficientStorage",
				    "%s: no space left in the store", what);
	if (rc == -ETIMEDOUT || rc == -EHOSTDOWN)
		return s3_reply_err(rq, 503, "ServiceUnavailable",
				    "%s: %s", what, clovis_strerror(rc));
	return s3_reply_err(rq, 500, "InternalError", "%s: %s: %s", what,
			    clovis_strerror(rc), m);
}

struct rd_ctx {
	struct s3_rd rc_rd;
	uint64_t rc_start;
	struct s3_req *rc_rq;
};

static ssize_t rd_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct rd_ctx *c = cls;
	long n = s3_rd_read(&c->rc_rd, c->rc_start + pos, buf, max);

	if (n < 0) {
		fprintf(stderr, "strata-s3: reading %s: %s: %s\n",
			c->rc_rd.r_bk->bk_name, clovis_strerror((int)n),
			clovis_errmsg());
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return n;
}

static ssize_t head_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void rd_free(void *cls)
{
	struct rd_ctx *c = cls;

	s3_rd_close(&c->rc_rd);
	free(c);
}

int s3_reply_reader(struct s3_req *rq, uint32_t status, struct s3_rd *r,
		    uint64_t start, uint64_t len, bool head)
{
	struct rd_ctx *c;
	struct MHD_Response *resp;
	const char *p = NULL;
	int rc;

	if (len == 0) {
		s3_rd_close(r);
		return reply_set(rq, status, MHD_create_response_from_buffer(
					     0, NULL, MHD_RESPMEM_PERSISTENT));
	}
	if (head) {
		/* libmicrohttpd sends the size as Content-Length and no body */
		s3_rd_close(r);
		return reply_set(rq, status, MHD_create_response_from_callback(
					     len, 4096, head_cb, NULL, NULL));
	}
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		s3_rd_close(r);
		return s3_reply_err(rq, 500, "InternalError", "out of memory");
	}
	r->r_end = start + len;
	/* in one read: sent from the read buffer, the header with it */
	rc = s3_rd_span(r, start, len, &p);
	if (rc != 0 && rc != -EAGAIN) {
		free(c);
		s3_rd_close(r);
		return s3_reply_clovis(rq, rc, "reading the object");
	}
	c->rc_rd = *r;
	c->rc_start = start;
	c->rc_rq = rq;
	if (rc == 0)
		resp = MHD_create_response_from_buffer_with_free_callback_cls(
			len, (void *)p, rd_free, c);
	else
		resp = MHD_create_response_from_callback(len, 256 << 10, rd_cb,
							 c, rd_free);
	if (resp == NULL)
		rd_free(c);
	rq->rq_out += len;
	return reply_set(rq, status, resp);
}

/* ------------------------------------------------------------ requests */

static bool req_id_next(char *out)
{
	static uint64_t seq;
	static uint32_t boot;

	if (boot == 0)
		boot = (uint32_t)(s3_now_ns() / 1000) | 1;
	snprintf(out, 24, "%08X%08lX", boot,
		 (unsigned long)__atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	return true;
}

/* The connection's context (conn_note()) points at rq; with old, only if
 * it pointed at old. */
static void conn_rq_set(struct MHD_Connection *con, struct s3_req *rq,
			struct s3_req *old)
{
	const union MHD_ConnectionInfo *ci;
	struct conn_ctx *cx;

	ci = MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	cx = ci != NULL ? ci->socket_context : NULL;
	if (cx != NULL && (old == NULL || cx->cx_rq == old))
		cx->cx_rq = rq;
}

/* libmicrohttpd's connection start and end: the context. */
static void conn_note(void *cls, struct MHD_Connection *con, void **sc,
		      enum MHD_ConnectionNotificationCode toe)
{
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		*sc = calloc(1, sizeof(struct conn_ctx));
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		free(*sc);
		*sc = NULL;
	}
}

/* ------------------------------------------ libmicrohttpd's own replies */

/*
 * libmicrohttpd 0.9.75 refuses some requests itself, before or while the
 * access handler runs, with fixed HTML bodies (transmit_error_response_len()
 * in its connection.c): a header section or request line larger than the
 * connection's memory pool (431 / 414), a malformed chunked
 * transfer-encoding (400), a chunk size over 2^64 (413), a malformed
 * Content-Length (400) or one over 2^64 - 1 (413); it offers no
 * option or hook to choose those replies.  It logs each one on the
 * connection's thread ("Error processing request (HTTP response code is
 * N ('TEXT'))", log_cb() keeps N and what TEXT says in mhd_err_status /
 * mhd_err_kind) and then queues it through its own exported
 * MHD_queue_response(), which it calls through its PLT.  The gateway
 * defines MHD_queue_response() (below): the dynamic linker binds the
 * library's own calls to it, and the gateway's queue() calls the
 * library's function directly (mhd_queue_real()).  So a call that reaches
 * the definition below is the library's own reply: for the header-size
 * and chunked-encoding refusals and a malformed or too large
 * Content-Length it queues S3 error XML instead (400
 * RequestHeaderSectionTooLarge, 400 InvalidURI, 400 IncompleteBody, 400
 * EntityTooLarge, 400 InvalidArgument) under the request's id; any other
 * goes out unchanged
 * (README.md, "Requests refused by libmicrohttpd").
 */
typedef enum MHD_Result (*mhd_queue_fn)(struct MHD_Connection *,
					unsigned int, struct MHD_Response *);

static mhd_queue_fn mhd_queue_ptr;
static pthread_once_t mhd_queue_once = PTHREAD_ONCE_INIT;

static void mhd_queue_find(void)
{
	mhd_queue_ptr = (mhd_queue_fn)dlsym(RTLD_NEXT, "MHD_queue_response");
}

/* libmicrohttpd's MHD_queue_response(). */
static mhd_queue_fn mhd_queue_real(void)
{
	pthread_once(&mhd_queue_once, mhd_queue_find);
	if (mhd_queue_ptr == NULL) {
		fprintf(stderr, "strata-s3: libmicrohttpd's MHD_queue_response "
			"not found: %s\n", dlerror());
		abort();
	}
	return mhd_queue_ptr;
}

/* The MHD_ERR_* of libmicrohttpd's error reply of status st, from the
 * text of its log message p. */
static int mhd_err_of(int st, const char *p)
{
	if (st == 431)
		return MHD_ERR_HEADER;
	if (st == 414)
		return MHD_ERR_LINE;
	if (st == 400 && strstr(p, "chunked encoding") != NULL)
		return MHD_ERR_CHUNKED;
	if (st == 413 && strstr(p, "chunk size") != NULL)
		return MHD_ERR_CHUNK_BIG;
	if (st == 400 && strstr(p, "Content-Length") != NULL)
		return MHD_ERR_CL_BAD;
	if (st == 413 && strstr(p, "Content-Length") != NULL)
		return MHD_ERR_CL_BIG;
	return MHD_ERR_OTHER;
}

__attribute__((visibility("default")))
enum MHD_Result MHD_queue_response(struct MHD_Connection *con,
				   unsigned int status,
				   struct MHD_Response *response)
{
	static const char *const what[][2] = {
		[MHD_ERR_HEADER] = {"RequestHeaderSectionTooLarge",
			"Your request header section exceeds the maximum "
			"allowed size."},
		[MHD_ERR_LINE] = {"InvalidURI", "The request line is longer "
			"than the server accepts."},
		[MHD_ERR_CHUNKED] = {"IncompleteBody", "The chunked "
			"transfer-encoding of the request body is malformed."},
		[MHD_ERR_CHUNK_BIG] = {"EntityTooLarge", "A chunk size of the "
			"chunked transfer-encoding is too large."},
		[MHD_ERR_CL_BAD] = {"InvalidArgument", "The Content-Length "
			"header is not a decimal number."},
		[MHD_ERR_CL_BIG] = {"EntityTooLarge", "The Content-Length "
			"header is larger than the server takes."},
	};
	const union MHD_ConnectionInfo *ci;
	struct conn_ctx *cx;
	struct s3_req tmp = {.rq_method = "-"}, *rq;
	int kind = mhd_err_kind;
	enum MHD_Result r;

	mhd_err_kind = 0;
	if (kind <= MHD_ERR_OTHER || (int)status != mhd_err_status)
		return mhd_queue_real()(con, status, response);
	ci = MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	cx = ci != NULL ? ci->socket_context : NULL;
	rq = cx != NULL && cx->cx_rq != NULL ? cx->cx_rq : &tmp;
	if (rq == &tmp)
		req_id_next(tmp.rq_id);
	if (rq->rq_resp != NULL) {
		MHD_destroy_response(rq->rq_resp);
		rq->rq_resp = NULL;
	}
	s3_reply_err(rq, 400, what[kind][0], "%s", what[kind][1]);
	if (rq->rq_resp == NULL)
		return mhd_queue_real()(con, status, response);
	r = mhd_queue_real()(con, 400, rq->rq_resp);
	MHD_destroy_response(rq->rq_resp);
	rq->rq_resp = NULL;
	return r;
}

/* First sight of a request (libmicrohttpd's URI log hook): the raw
 * target, before any unescaping. */
static void *uri_cb(void *cls, const char *uri, struct MHD_Connection *con)
{
	struct s3_req *rq = calloc(1, sizeof *rq);

	if (rq == NULL)
		return NULL;
	rq->rq_raw = strdup(uri ? uri : "/");
	rq->rq_t0_ns = s3_now_ns();
	rq->rq_t0_mono_ns = addb_now_ns();
	rq->rq_op = "Unknown";
	req_id_next(rq->rq_id);
	conn_rq_set(con, rq, NULL);
	return rq;
}

static void req_free(struct s3_req *rq)
{
	uint32_t k;

	if (rq->rq_cleanup != NULL)
		rq->rq_cleanup(rq);
	if (rq->rq_wr != NULL) {
		s3_wr_abort(rq->rq_wr);
		free(rq->rq_wr);
	}
	if (rq->rq_resp != NULL)
		MHD_destroy_response(rq->rq_resp);
	for (k = 0; k < rq->rq_nq; k++) {
		free(rq->rq_qn[k]);
		free(rq->rq_qv[k]);
	}
	EVP_MD_CTX_free(rq->rq_sha);
	s3_auth_chunk_fini(rq);
	s3_buf_fini(&rq->rq_trailers);
	s3_buf_fini(&rq->rq_xml);
	s3_buf_fini(&rq->rq_hdrs);
	free(rq->rq_path);
	free(rq->rq_key);
	free(rq->rq_raw);
	free(rq);
}

/*
 * A request libmicrohttpd refused itself while parsing its header (a
 * malformed or too large Content-Length, a bad header line): the access
 * handler was never called and the client got the reply queued by
 * MHD_queue_response() above (S3 XML, rq_status set), or libmicrohttpd's
 * own (see README.md, "Requests refused by libmicrohttpd").  It is still
 * counted and logged, under its request id, as op "MalformedRequest" with
 * the status sent (rq_status, else mhd_err_status, read from its log
 * message on this connection's thread; 400 when none was seen).
 */
static void refused_note(struct s3_req *rq, struct MHD_Connection *con)
{
	const union MHD_ConnectionInfo *ci;

	rq->rq_op = "MalformedRequest";
	rq->rq_method = "-";
	if (rq->rq_status == 0)
		rq->rq_status = mhd_err_status != 0 ? (unsigned)mhd_err_status
						     : 400;
	ci = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci != NULL && ci->client_addr->sa_family == AF_INET)
		inet_ntop(AF_INET,
			  &((struct sockaddr_in *)ci->client_addr)->sin_addr,
			  rq->rq_remote, sizeof rq->rq_remote);
	else
		snprintf(rq->rq_remote, sizeof rq->rq_remote, "-");
}

static void completed_cb(void *cls, struct MHD_Connection *con, void **cc,
			 enum MHD_RequestTerminationCode toe)
{
	struct s3_req *rq = *cc;
	uint64_t us;

	if (rq == NULL)
		return;
	if (rq->rq_method == NULL && toe == MHD_REQUEST_TERMINATED_WITH_ERROR)
		refused_note(rq, con);
	else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK &&
		 rq->rq_status < 400)
		rq->rq_status = 499; /* client went away or timed out */
	mhd_err_status = 0;
	mhd_err_kind = 0;
	us = (s3_now_ns() - rq->rq_t0_ns) / 1000;
	if (rq->rq_method != NULL) {
		stats_add(rq, us);
		s3_addb(rq, addb_now_ns() - rq->rq_t0_mono_ns);
		access_line(rq, us);
	}
	conn_rq_set(con, NULL, rq);
	req_free(rq);
	*cc = NULL;
}

/* Split the raw target into a decoded path and decoded parameters. */
static int parse_target(struct s3_req *rq)
{
	char *q = strchr(rq->rq_raw, '?');
	size_t pl = q ? (size_t)(q - rq->rq_raw) : strlen(rq->rq_raw);
	long n;

	rq->rq_path = malloc(pl + 1);
	if (rq->rq_path == NULL)
		return -ENOMEM;
	n = s3_urldec(rq->rq_raw, pl, rq->rq_path, false);
	if (n < 0)
		return -EINVAL;
	rq->rq_path_len = (size_t)n;
	if (strlen(rq->rq_path) != (size_t)n)
		return -EINVAL; /* NUL in the path */
	while (q != NULL && *q) {
		char *p = q + 1, *e = strchr(p, '&'), *eq;
		size_t len = e ? (size_t)(e - p) : strlen(p);
		uint32_t k = rq->rq_nq;

		q = e;
		if (len == 0)
			continue;
		if (k == S3_QMAX)
			return -E2BIG;
		eq = memchr(p, '=', len);
		rq->rq_qn[k] = malloc(len + 1);
		rq->rq_qv[k] = malloc(len + 1);
		rq->rq_nq++;
		if (rq->rq_qn[k] == NULL || rq->rq_qv[k] == NULL)
			return -ENOMEM;
		rq->rq_qhas[k] = eq != NULL;
		if (s3_urldec(p, eq ? (size_t)(eq - p) : len, rq->rq_qn[k],
			      true) < 0)
			return -EINVAL;
		if (s3_urldec(eq ? eq + 1 : "", eq ? len - (size_t)(eq - p) - 1
					      : 0, rq->rq_qv[k], true) < 0)
			return -EINVAL;
	}
	return 0;
}

/* Bucket and key, from the path or (virtual-host style) the Host. */
static int parse_names(struct s3_req *rq)
{
	const char *p = rq->rq_path, *host = s3_hdr(rq, "Host"), *slash;
	const char *sfx = s3g.g_conf.sc_host_suffix;
	size_t bl;

	if (*p != '/')
		return -EINVAL;
	p++;
	if (sfx[0] && host != NULL) {
		size_t hl = strcspn(host, ":"), sl = strlen(sfx);

		if (hl > sl + 1 && strncasecmp(host + hl - sl, sfx, sl) == 0 &&
		    host[hl - sl - 1] == '.') {
			bl = hl - sl - 1;
			if (bl > S3_BUCKET_MAX)
				return -ENAMETOOLONG;
			memcpy(rq->rq_bucket, host, bl);
			rq->rq_bucket[bl] = 0;
			goto key;
		}
	}
	slash = strchr(p, '/');
	bl = slash ? (size_t)(slash - p) : strlen(p);
	if (bl > S3_BUCKET_MAX)
		bl = S3_BUCKET_MAX + 1; /* refused as InvalidBucketName */
	memcpy(rq->rq_bucket, p, bl);
	rq->rq_bucket[bl] = 0;
	p = slash ? slash + 1 : p + strlen(p);
key:
	if (*p) {
		rq->rq_key_len = rq->rq_path_len - (size_t)(p - rq->rq_path);
		rq->rq_key = strndup(p, rq->rq_key_len);
		if (rq->rq_key == NULL)
			return -ENOMEM;
	}
	return 0;
}

static enum MHD_Result header_sum(void *cls, enum MHD_ValueKind kind,
				  const char *k, const char *v)
{
	size_t *sum = cls;

	*sum += strlen(k) + (v ? strlen(v) : 0) + 4;
	return MHD_YES;
}

/* Everything that happens before the body: parse, authenticate, route. */
static void req_start(struct s3_req *rq, struct MHD_Connection *con,
		      const char *method)
{
	const union MHD_ConnectionInfo *ci;
	const char *code;
	char msg[256];
	size_t hsum = 0;
	int rc;

	rq->rq_conn = con;
	rq->rq_method = method;
	ci = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci != NULL && ci->client_addr->sa_family == AF_INET)
		inet_ntop(AF_INET,
			  &((struct sockaddr_in *)ci->client_addr)->sin_addr,
			  rq->rq_remote, sizeof rq->rq_remote);
	else
		snprintf(rq->rq_remote, sizeof rq->rq_remote, "-");
	MHD_get_connection_values(con, MHD_HEADER_KIND, header_sum, &hsum);
	if (hsum > S3_HEADERS_MAX) {
		s3_reply_err(rq, 400, "RequestHeaderSectionTooLarge",
			     "Your request header section exceeds the maximum "
			     "allowed size (%u bytes).", S3_HEADERS_MAX);
		return;
	}
	rc = parse_target(rq);
	if (rc == 0)
		rc = parse_names(rq);
	if (rc != 0) {
		s3_reply_err(rq, 400, "InvalidURI",
			     "Couldn't parse the specified URI.");
		return;
	}
	if (strcmp(rq->rq_path, "/_strata/stats") == 0) {
		struct s3_buf b = {0};

		rq->rq_op = "Stats";
		stats_json(&b);
		s3_reply_xml(rq, 200, &b);
		return;
	}
	rc = s3_auth_check(rq, &code, msg, sizeof msg);
	if (rc != 0) {
		s3_reply_err(rq, rc == -EINVAL ? 400 : rc == -ENOMEM ? 503
				 : 403, code, "%s", msg);
		return;
	}
	if (strlen(rq->rq_payload_hash) == 64) {
		rq->rq_sha = EVP_MD_CTX_new();
		if (rq->rq_sha != NULL)
			EVP_DigestInit_ex(rq->rq_sha, EVP_sha256(), NULL);
	}
	if (strncmp(rq->rq_payload_hash, "STREAMING-", 10) == 0) {
		if (rq->rq_cks == NULL &&
		    strcmp(rq->rq_payload_hash,
			   "STREAMING-UNSIGNED-PAYLOAD-TRAILER") != 0) {
			s3_reply_err(rq, 400, "InvalidArgument",
				     "x-amz-content-sha256 '%.60s' is not a "
				     "payload form this gateway takes",
				     rq->rq_payload_hash);
			return;
		}
		rq->rq_chunked = true;
	}
	s3_route(rq);
}

/*
 * aws-chunked: "HEX[;chunk-signature=SIG]\r\n" DATA "\r\n" ..., the chunk
 * of size 0, trailer lines "name:value\r\n", then "\r\n".  Decoded bytes
 * go to the writer, trailers to rq_trailers.  A signed body (rq_cks) has
 * each chunk's signature checked when its data is in, before the next
 * chunk is taken, and its trailers' at x-amz-trailer-signature: -EACCES
 * when one is missing or wrong, -EINVAL when the framing is.
 */
enum { CK_HDR, CK_DATA, CK_CRLF, CK_TRAILER, CK_DONE };

/* A chunk header line: its size, and its signature into want (empty when
 * it has none). */
static int ck_header(struct s3_req *rq, const char *line, char want[65])
{
	const char *sig = strstr(line, ";chunk-signature=");
	char *e;
	unsigned long long v = strtoull(line, &e, 16);

	if (e == line || (*e && *e != ';') || v > S3_PUT_MAX)
		return -EINVAL;
	want[0] = 0;
	if (sig != NULL)
		snprintf(want, 65, "%s", sig + 17);
	rq->rq_ck_left = v;
	return 0;
}

/* One trailer line "name:value" (NUL-terminated, no CRLF). */
static int ck_trailer(struct s3_req *rq, char *line)
{
	struct s3_ck_sig *cs = rq->rq_cks;
	char *colon = strchr(line, ':'), *v, *c;

	if (colon == NULL || colon == line)
		return -EINVAL;
	*colon = 0;
	for (c = line; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (strcmp(line, "x-amz-trailer-signature") == 0) {
		if (cs == NULL || !cs->cs_trailer || cs->cs_tsig)
			return -EINVAL;
		cs->cs_tsig = true;
		return s3_auth_chunk(rq, true, v);
	}
	if (cs != NULL && (!cs->cs_trailer || cs->cs_tsig))
		return -EINVAL; /* unsigned, or after the signature */
	if (rq->rq_trailers.b_len + strlen(line) + strlen(v) + 2 >
	    S3_TRAILERS_MAX)
		return -EINVAL;
	if (cs != NULL) {
		EVP_DigestUpdate(cs->cs_sha, line, strlen(line));
		EVP_DigestUpdate(cs->cs_sha, ":", 1);
		EVP_DigestUpdate(cs->cs_sha, v, strlen(v));
		EVP_DigestUpdate(cs->cs_sha, "\n", 1);
	}
	s3_buf_add(&rq->rq_trailers, line, strlen(line) + 1);
	s3_buf_add(&rq->rq_trailers, v, strlen(v) + 1);
	return rq->rq_trailers.b_oom ? -ENOMEM : 0;
}

static int ck_feed(struct s3_req *rq, const char *p, size_t n)
{
	struct s3_ck_sig *cs = rq->rq_cks;
	int rc;

	while (n > 0) {
		if (rq->rq_ck_state == CK_DATA) {
			size_t c = n < rq->rq_ck_left ? n : rq->rq_ck_left;

			if (cs != NULL)
				EVP_DigestUpdate(cs->cs_sha, p, c);
			rc = s3_wr_data(rq->rq_wr, p, c);
			if (rc != 0)
				return rc;
			p += c;
			n -= c;
			rq->rq_ck_left -= c;
			if (rq->rq_ck_left > 0)
				continue;
			rq->rq_ck_state = CK_CRLF;
			if (cs != NULL &&
			    s3_auth_chunk(rq, false, cs->cs_want) != 0)
				return -EACCES;
			continue;
		}
		if (rq->rq_ck_state == CK_DONE)
			return -EINVAL; /* bytes after the last chunk */
		if (rq->rq_ck_ll + 1 >= sizeof rq->rq_ck_line)
			return -EINVAL;
		rq->rq_ck_line[rq->rq_ck_ll++] = *p++;
		n--;
		if (rq->rq_ck_line[rq->rq_ck_ll - 1] != '\n')
			continue;
		if (rq->rq_ck_ll < 2 || rq->rq_ck_line[rq->rq_ck_ll - 2] != '\r')
			return -EINVAL;
		rq->rq_ck_line[rq->rq_ck_ll - 2] = 0;
		rc = 0;
		if (rq->rq_ck_state == CK_CRLF) {
			if (rq->rq_ck_ll != 2)
				return -EINVAL;
			rq->rq_ck_state = CK_HDR;
		} else if (rq->rq_ck_state == CK_HDR) {
			char want[65];

			rc = ck_header(rq, rq->rq_ck_line, want);
			if (rc == 0 && cs != NULL)
				memcpy(cs->cs_want, want, sizeof want);
			if (rc == 0 && cs != NULL && want[0] == 0)
				rc = -EACCES;
			if (rc == 0 && rq->rq_ck_left == 0 && cs != NULL)
				rc = s3_auth_chunk(rq, false, want);
			rq->rq_ck_state = rq->rq_ck_left ? CK_DATA : CK_TRAILER;
		} else if (rq->rq_ck_state == CK_TRAILER) {
			if (rq->rq_ck_ll > 2)
				rc = ck_trailer(rq, rq->rq_ck_line);
			else if (cs != NULL && cs->cs_trailer && !cs->cs_tsig)
				rc = -EACCES; /* signed trailers, unsigned end */
			else
				rq->rq_ck_state = CK_DONE;
		}
		if (rc != 0)
			return rc;
		rq->rq_ck_ll = 0;
	}
	return 0;
}

const char *s3_trailer(struct s3_req *rq, const char *name)
{
	const char *p = rq->rq_trailers.b_data, *end;

	if (p == NULL)
		return NULL;
	end = p + rq->rq_trailers.b_len;
	while (p < end) {
		const char *v = p + strlen(p) + 1;

		if (strcasecmp(p, name) == 0)
			return v;
		p = v + strlen(v) + 1;
	}
	return NULL;
}

static void body_fail(struct s3_req *rq, int rc)
{
	rq->rq_failed = true;
	if (rc == -EINVAL)
		s3_reply_err(rq, 400, "IncompleteBody",
			     "the aws-chunked body is malformed");
	else if (rc == -EACCES)
		s3_reply_err(rq, 403, "SignatureDoesNotMatch",
			     "The chunk signature we calculated does not "
			     "match the signature you provided (key "
			     "'%.300s').", rq->rq_key ? rq->rq_key : "");
	else if (rc == -E2BIG)
		s3_reply_err(rq, 400, "EntityTooLarge",
			     "Your proposed upload exceeds the maximum allowed "
			     "size");
	else
		s3_reply_err(rq, 500, "InternalError", "writing the object: "
			     "%s: %s", clovis_strerror(rc),
			     rq->rq_wr ? rq->rq_wr->w_msg : "");
	if (rq->rq_wr != NULL) {
		s3_wr_abort(rq->rq_wr);
		free(rq->rq_wr);
		rq->rq_wr = NULL;
	}
}

static void body_data(struct s3_req *rq, const char *p, size_t n)
{
	int rc = 0;

	rq->rq_in += n;
	if (rq->rq_failed)
		return;
	if (rq->rq_sha != NULL)
		EVP_DigestUpdate(rq->rq_sha, p, n);
	if (rq->rq_body == S3_BODY_XML) {
		if (rq->rq_xml.b_len + n > S3_XML_MAX) {
			rq->rq_failed = true;
			s3_reply_err(rq, 400, "MalformedXML", "the XML body is "
				     "larger than %u bytes", S3_XML_MAX);
			return;
		}
		s3_buf_add(&rq->rq_xml, p, n);
	} else if (rq->rq_body == S3_BODY_STREAM) {
		if (rq->rq_chunked)
			rc = ck_feed(rq, p, n);
		else
			rc = s3_wr_data(rq->rq_wr, p, n);
		if (rc == 0 && rq->rq_wr->w_len > S3_PUT_MAX)
			rc = -E2BIG;
		if (rc != 0)
			body_fail(rq, rc);
	}
}

/* The whole body is in: check its payload hash, then run the op. */
static void body_end(struct s3_req *rq)
{
	if (rq->rq_failed)
		return;
	if (rq->rq_chunked && rq->rq_body == S3_BODY_STREAM &&
	    rq->rq_ck_state != CK_DONE) {
		body_fail(rq, -EINVAL);
		return;
	}
	if (rq->rq_sha != NULL) {
		uint8_t h[32];
		unsigned int hl = 32;
		char hex[65];

		EVP_DigestFinal_ex(rq->rq_sha, h, &hl);
		s3_hex(h, 32, hex);
		if (strcasecmp(hex, rq->rq_payload_hash) != 0) {
			if (rq->rq_wr != NULL) {
				s3_wr_abort(rq->rq_wr);
				free(rq->rq_wr);
				rq->rq_wr = NULL;
			}
			s3_reply_err(rq, 400, "XAmzContentSHA256Mismatch",
				     "The provided 'x-amz-content-sha256' "
				     "header does not match what was computed.");
			return;
		}
	}
	if (rq->rq_end != NULL)
		rq->rq_end(rq);
}

static enum MHD_Result queue(struct s3_req *rq, struct MHD_Connection *con)
{
	enum MHD_Result r;

	if (rq->rq_resp == NULL)
		s3_reply_err(rq, 500, "InternalError", "no reply was made");
	r = mhd_queue_real()(con, rq->rq_status, rq->rq_resp);
	MHD_destroy_response(rq->rq_resp);
	rq->rq_resp = NULL;
	return r;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *con,
				 const char *url, const char *method,
				 const char *version, const char *data,
				 size_t *size, void **cc)
{
	struct s3_req *rq = *cc;

	if (rq == NULL)
		return MHD_NO;
	if (rq->rq_method == NULL) {
		const char *cl = s3_hdr_c(con, "Content-Length");

		req_start(rq, con, method);
		/* A refused request with a body is answered at once (the
		 * connection then closes); others wait for the final call,
		 * which keeps the connection alive. */
		if (rq->rq_resp != NULL && rq->rq_end == NULL &&
		    ((cl != NULL && strcmp(cl, "0") != 0) ||
		     s3_hdr_c(con, "Transfer-Encoding") != NULL))
			return queue(rq, con);
		return MHD_YES;
	}
	if (*size > 0) {
		body_data(rq, data, *size);
		*size = 0;
		return MHD_YES;
	}
	if (rq->rq_resp == NULL || rq->rq_end != NULL)
		body_end(rq);
	return queue(rq, con);
}

/* ------------------------------------------------------- configuration */

static int conf_set(struct s3_conf *c, const char *k, const char *v)
{
	struct { const char *n; char *s; size_t l; } strs[] = {
		{"listen", c->sc_listen, sizeof c->sc_listen},
		{"port_file", c->sc_port_file, sizeof c->sc_port_file},
		{"data", c->sc_data_dir, sizeof c->sc_data_dir},
		{"data_dir", c->sc_data_dir, sizeof c->sc_data_dir},
		{"cluster", c->sc_cluster, sizeof c->sc_cluster},
		{"creds", c->sc_creds, sizeof c->sc_creds},
		{"credentials", c->sc_creds, sizeof c->sc_creds},
		{"access_log", c->sc_access_log, sizeof c->sc_access_log},
		{"stats_file", c->sc_stats_file, sizeof c->sc_stats_file},
		{"metrics", c->sc_metrics, sizeof c->sc_metrics},
		{"host_suffix", c->sc_host_suffix, sizeof c->sc_host_suffix},
		{"tls_cert", c->sc_tls_cert, sizeof c->sc_tls_cert},
		{"tls_key", c->sc_tls_key, sizeof c->sc_tls_key},
		{"gateway_id", c->sc_gw_id, sizeof c->sc_gw_id},
		{"posix_owner", c->sc_posix_owner, sizeof c->sc_posix_owner},
	};
	struct { const char *n; uint64_t min, max; void *p; int w; } nums[] = {
		{"port", 0, 65535, &c->sc_port, 4},
		{"inline_max", 0, 512 << 10, &c->sc_inline_max, 4},
		{"dev_size", 1 << 20, 1ull << 44, &c->sc_dev_size, 8},
		{"part_min", 1, 5ull << 30, &c->sc_part_min, 8},
		{"timeout", 1, 3600, &c->sc_timeout_s, 4},
		{"skew", 1, 86400 * 7, &c->sc_skew_s, 4},
		{"workers", 1, 256, &c->sc_threads, 4},
		{"threads", 1, 1024, &c->sc_http_threads, 4},
		{"max_connections", 1, 1000000, &c->sc_max_conns, 4},
		{"max_connections_per_ip", 0, 1000000, &c->sc_max_conns_ip, 4},
		{"lifecycle_interval", 1, 86400 * 7, &c->sc_lc_interval_s, 4},
		{"lifecycle_day", 1, 86400, &c->sc_lc_day_s, 4},
	};
	char *e;
	size_t i;

	for (i = 0; i < sizeof strs / sizeof strs[0]; i++)
		if (strcmp(k, strs[i].n) == 0) {
			if (strlen(v) >= strs[i].l)
				return -ENAMETOOLONG;
			strcpy(strs[i].s, v);
			return 0;
		}
	for (i = 0; i < sizeof nums / sizeof nums[0]; i++)
		if (strcmp(k, nums[i].n) == 0) {
			unsigned long long x = strtoull(v, &e, 0);

			if (*e == 'K' || *e == 'k') x <<= 10, e++;
			else if (*e == 'M' || *e == 'm') x <<= 20, e++;
			else if (*e == 'G' || *e == 'g') x <<= 30, e++;
			if (*v == 0 || *e || x < nums[i].min || x > nums[i].max)
				return -ERANGE;
			if (nums[i].w == 4)
				*(uint32_t *)nums[i].p = (uint32_t)x;
			else
				*(uint64_t *)nums[i].p = x;
			return 0;
		}
	if (strcmp(k, "meta_nvram") == 0) {
		if (strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 ||
		    strcmp(v, "1") == 0)
			c->sc_meta_nvram = true;
		else if (strcmp(v, "false") == 0 || strcmp(v, "no") == 0 ||
			 strcmp(v, "0") == 0)
			c->sc_meta_nvram = false;
		else
			return -EINVAL;
		return 0;
	}
	if (strcmp(k, "posix_bucket") == 0) { /* repeatable: s3_view.h */
		struct s3_view_spec vs;
		char msg[200];

		if (c->sc_nviews == S3_VIEWS_MAX)
			return -ERANGE;
		if (strlen(v) >= S3_VIEW_SPEC_MAX)
			return -ENAMETOOLONG;
		if (s3_view_parse(v, &vs, msg, sizeof msg) != 0) {
			fprintf(stderr, "strata-s3: posix-bucket '%s': %s\n", v,
				msg);
			return -EINVAL;
		}
		strcpy(c->sc_views[c->sc_nviews++], v);
		return 0;
	}
	if (strcmp(k, "etag") == 0) {
		if (strcmp(v, "md5") == 0)
			c->sc_etag = S3_ETAG_MD5;
		else if (strcmp(v, "crc64") == 0)
			c->sc_etag = S3_ETAG_CRC64;
		else
			return -EINVAL;
		return 0;
	}
	if (strcmp(k, "layout") == 0) {
		if (strcmp(v, "plain") == 0)
			c->sc_layout = CLOVIS_LAYOUT_PLAIN;
		else if (strcmp(v, "pdclust") == 0)
			c->sc_layout = CLOVIS_LAYOUT_PDCLUST;
		else if (strcmp(v, "mirror") == 0)
			c->sc_layout = CLOVIS_LAYOUT_MIRROR;
		else if (strcmp(v, "default") == 0)
			c->sc_layout = 0;
		else
			return -EINVAL;
		return 0;
	}
	return -ENOENT;
}

static int conf_key(struct s3_conf *c, const char *key, const char *v,
		    const char *where)
{
	char k[64];
	size_t i;
	int rc;

	snprintf(k, sizeof k, "%s", key);
	for (i = 0; k[i]; i++)
		if (k[i] == '-')
			k[i] = '_';
	rc = conf_set(c, k, v);
	if (rc != 0)
		fprintf(stderr, "strata-s3: %s: %s '%s': %s\n", where, key, v,
			rc == -ENOENT ? "unknown option"
			: rc == -ERANGE ? "value out of range"
			: rc == -ENAMETOOLONG ? "value too long" : "bad value");
	return rc;
}

static int conf_file(struct s3_conf *c, const char *path)
{
	char line[512], where[300];
	FILE *f = fopen(path, "r");
	int n = 0, rc = 0;

	if (f == NULL) {
		fprintf(stderr, "strata-s3: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
		char *k = line, *sep, *v, *e;

		n++;
		k += strspn(k, " \t");
		if (*k == '#' || *k == '\n' || *k == 0)
			continue;
		sep = strpbrk(k, ":=");
		if (sep == NULL) {
			fprintf(stderr, "strata-s3: %s:%d: expected 'name: "
				"value'\n", path, n);
			rc = -EINVAL;
			break;
		}
		*sep = 0;
		for (e = sep; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = 0;
		v = sep + 1 + strspn(sep + 1, " \t\"");
		for (e = v + strlen(v); e > v && strchr(" \t\r\n\"", e[-1]); e--)
			e[-1] = 0;
		snprintf(where, sizeof where, "%s:%d", path, n);
		rc = conf_key(c, k, v, where);
	}
	fclose(f);
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: strata-s3 [--config FILE] [--data DIR | --cluster FILE]"
		" [--listen ADDR]\n"
		"                 [--port N] [--port-file F] [--creds F] "
		"[--access-log F|-]\n"
		"                 [--stats-file F] [--metrics [ADDR:]PORT] "
		"[--inline-max BYTES] "
		"[--layout plain|pdclust|mirror|default]\n"
		"                 [--host-suffix S] [--tls-cert F --tls-key F] "
		"[--part-min BYTES]\n"
		"                 [--timeout S] [--skew S] [--gateway-id ID] "
		"[--dev-size BYTES]\n"
		"                 [--etag md5|crc64] [--meta-nvram] "
		"[--lifecycle-interval S]\n"
		"                 [--threads N] [--max-connections N] "
		"[--max-connections-per-ip N]\n"
		"                 [--posix-bucket NAME=CONTAINER_ID[:/DIR]]... "
		"[--posix-owner USER]\n");
}

static int conf_args(struct s3_conf *c, int argc, char **argv)
{
	int i, rc;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			rc = conf_file(c, argv[i + 1]);
			if (rc != 0)
				return rc;
		}
	for (i = 1; i < argc; i += 2) {
		/* The one flag without a value: --meta-nvram. */
		if (strcmp(argv[i], "--meta-nvram") == 0) {
			c->sc_meta_nvram = true;
			i--;
			continue;
		}
		if (strncmp(argv[i], "--", 2) != 0 || i + 1 >= argc) {
			usage();
			return -EINVAL;
		}
		if (strcmp(argv[i], "--config") == 0)
			continue;
		rc = conf_key(c, argv[i] + 2, argv[i + 1], "command line");
		if (rc != 0) {
			usage();
			return rc;
		}
	}
	if (c->sc_data_dir[0] && c->sc_cluster[0]) {
		fprintf(stderr, "strata-s3: give --data or --cluster, not both\n");
		return -EINVAL;
	}
	if (c->sc_meta_nvram && c->sc_cluster[0]) {
		fprintf(stderr, "strata-s3: meta-nvram applies to an embedded "
			"store (--data), not with --cluster '%s': there each "
			"server's entry of the cluster file says meta_nvram\n",
			c->sc_cluster);
		return -EINVAL;
	}
	if (!c->sc_data_dir[0] && !c->sc_cluster[0])
		strcpy(c->sc_data_dir, "./strata-data");
	if (!c->sc_creds[0]) {
		fprintf(stderr, "strata-s3: --creds FILE is required "
			"(strata s3 user add NAME --creds FILE makes one)\n");
		return -EINVAL;
	}
	return 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	struct s3_buf b = {0};
	char tmp[4096];
	size_t n;

	if (f == NULL)
		return NULL;
	while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
		s3_buf_add(&b, tmp, n);
	fclose(f);
	return b.b_data;
}

static void log_cb(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	const char *p;

	vsnprintf(msg, sizeof msg, fmt, ap);
	fprintf(stderr, "strata-s3: http: %s", msg);
	/* libmicrohttpd's own error replies say their status here, on the
	 * thread serving the connection, just before they are queued:
	 * MHD_queue_response() below, refused_note(). */
	p = strstr(msg, "HTTP response code is ");
	if (p != NULL) {
		mhd_err_status = atoi(p + 22);
		mhd_err_kind = mhd_err_of(mhd_err_status, p);
	}
}

/* Descriptors open now (/proc/self/fd), or 0 when that cannot be read. */
static uint32_t fds_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	uint32_t n = 0;

	if (d == NULL)
		return 0;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n > 3 ? n - 3 : 0; /* ".", ".." and the DIR's own */
}

/*
 * Raise the soft RLIMIT_NOFILE to the hard limit, and cap
 * max-connections to what the descriptors left allow (each connection is
 * one descriptor), saying so on stderr when it is capped.
 */
static void fds_fit(struct s3_conf *c)
{
	struct rlimit rl;
	uint64_t avail, need;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit up = {rl.rlim_max, rl.rlim_max};

		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl = up;
	}
	need = (uint64_t)fds_open() + S3_FD_RESERVE +
	       2ull * c->sc_http_threads;
	avail = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > need
			? (rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX
							: rl.rlim_cur - need)
			: 0;
	if (avail < 16)
		avail = 16;
	if (c->sc_max_conns > avail) {
		fprintf(stderr, "strata-s3: max-connections %u capped to %lu: "
			"the descriptor limit (RLIMIT_NOFILE) is %lu, of which "
			"%lu are kept for the store and the server\n",
			c->sc_max_conns, (unsigned long)avail,
			(unsigned long)rl.rlim_cur, (unsigned long)need);
		c->sc_max_conns = (uint32_t)avail;
	}
}

/*
 * The HTTP server: libmicrohttpd in epoll mode with a pool of
 * sc_http_threads threads, each with its own epoll set; a connection stays
 * on the thread that accepted it, and a handler blocked on the store (a
 * PUT waiting for its commit, a GET for its read) holds its thread, so
 * the other connections of that thread wait meanwhile: the pool is sized
 * for blocking handlers (README.md, "Connections").  Idle connections
 * cost a descriptor and a little memory, no thread.
 */
static struct MHD_Daemon *server_start(struct s3_conf *c, char **tls)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	struct MHD_OptionItem ops[16];
	int n = 0;

	if (inet_pton(AF_INET, c->sc_listen, &sa.sin_addr) != 1) {
		fprintf(stderr, "strata-s3: listen address '%s' is not an IPv4 "
			"address\n", c->sc_listen);
		return NULL;
	}
	sa.sin_port = htons((uint16_t)c->sc_port);
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER,
					   (intptr_t)log_cb, NULL};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &sa};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
					   256 << 10, NULL};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
					   c->sc_timeout_s, NULL};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
					   c->sc_max_conns, NULL};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
					   c->sc_max_conns_ip, NULL};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE,
					   c->sc_http_threads, NULL};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED,
					   (intptr_t)completed_cb, NULL};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK,
					   (intptr_t)uri_cb, NULL};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION,
					   (intptr_t)conn_note, NULL};
	if (c->sc_tls_cert[0]) {
		tls[0] = slurp(c->sc_tls_cert);
		tls[1] = slurp(c->sc_tls_key);
		if (tls[0] == NULL || tls[1] == NULL) {
			fprintf(stderr, "strata-s3: cannot read the TLS "
				"certificate or key\n");
			return NULL;
		}
		flags |= MHD_USE_TLS;
		ops[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
						   tls[0]};
		ops[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0,
						   tls[1]};
	}
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	return MHD_start_daemon(flags, (uint16_t)c->sc_port, NULL, NULL,
				access_cb, NULL, MHD_OPTION_ARRAY, ops,
				MHD_OPTION_END);
}

static void stats_write(const char *path)
{
	struct s3_buf b = {0};
	FILE *f;

	if (!path[0])
		return;
	stats_json(&b);
	f = fopen(path, "w");
	if (f != NULL) {
		fwrite(b.b_data, 1, b.b_len, f);
		fclose(f);
	}
	s3_buf_fini(&b);
}

int main(int argc, char **argv)
{
	struct s3_conf *c = &s3g.g_conf;
	struct addb_http *mh = NULL;
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *di;
	char *tls[2] = {NULL, NULL};
	uint64_t freed = 0, queued = 0;
	sigset_t set;
	int sig, rc;

	*c = (struct s3_conf){.sc_listen = "127.0.0.1", .sc_port = 8333,
			      .sc_inline_max = 128 << 10, /* measured: bench_s3.py --inline */
			      .sc_layout = CLOVIS_LAYOUT_PDCLUST,
			      .sc_part_min = 5ull << 20, .sc_timeout_s = 60,
			      .sc_http_threads = 32, .sc_max_conns = 16384,
			      .sc_skew_s = 900, .sc_gw_id = "s3"};
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		usage();
		return 0;
	}
	if (conf_args(c, argc, argv) != 0)
		return 2;
	rc = s3_creds_load(c->sc_creds);
	if (rc != 0) {
		fprintf(stderr, "strata-s3: credentials file %s: %s\n",
			c->sc_creds, strerror(-rc));
		return 1;
	}
	if (c->sc_access_log[0])
		access_log = strcmp(c->sc_access_log, "-") == 0
				     ? stdout : fopen(c->sc_access_log, "a");
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	addb_region_open("strata-s3");
	if (c->sc_metrics[0] && addb_http_start(c->sc_metrics, &mh) != 0) {
		fprintf(stderr, "strata-s3: %s\n", clovis_errmsg());
		return 1;
	}
	if (s3_store_open() != 0)
		return 1;
	if (s3_views_open() != 0) { /* said why on stderr */
		s3_store_close();
		return 2;
	}
	rc = s3_store_recover(&freed, &queued);
	if (rc != 0)
		fprintf(stderr, "strata-s3: recovery: %s: %s\n",
			clovis_strerror(rc), clovis_errmsg());
	rc = s3_lifecycle_start();
	if (rc != 0)
		fprintf(stderr, "strata-s3: lifecycle thread: %s\n",
			clovis_strerror(rc));
	fds_fit(c);
	d = server_start(c, tls);
	if (d == NULL) {
		fprintf(stderr, "strata-s3: cannot listen on %s:%u\n",
			c->sc_listen, c->sc_port);
		s3_lifecycle_stop();
		s3_store_close();
		return 1;
	}
	di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (di != NULL)
		c->sc_port = di->port;
	if (c->sc_port_file[0]) {
		FILE *f = fopen(c->sc_port_file, "w");

		if (f != NULL) {
			fprintf(f, "%u\n", c->sc_port);
			fclose(f);
		}
	}
	if (c->sc_cluster[0])
		printf("strata-s3: listening on %s:%u (cluster %s), %lu "
		       "in-flight records of the earlier run reclaimed in the "
		       "background once its dtxs are settled\n", c->sc_listen,
		       c->sc_port, c->sc_cluster, (unsigned long)queued);
	else
		printf("strata-s3: listening on %s:%u (store %s), %lu "
		       "interrupted upload objects reclaimed\n", c->sc_listen,
		       c->sc_port, c->sc_data_dir, (unsigned long)freed);
	fflush(stdout);
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	addb_http_stop(mh);
	stats_write(c->sc_stats_file);
	s3_lifecycle_stop();
	s3_store_close();
	if (access_log != NULL && access_log != stdout)
		fclose(access_log);
	free(tls[0]);
	free(tls[1]);
	return 0;
}
