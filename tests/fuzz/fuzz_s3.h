/*
 * fuzz_s3.h — what the S3 gateway's fuzz targets share (fuzz_s3_*.c).
 *
 * The gateway's request parser (parse_target, parse_names), its request
 * pipeline (uri_cb, access_cb, completed_cb) and its aws-chunked decoder
 * (ck_feed, body_data, body_end) are static in gateways/s3/s3_main.c: the
 * harness includes that file (its main() renamed), so the code fuzzed is
 * the gateway's own.  The rest of the gateway and the library are linked
 * as they are (targets.list "@s3gw").
 *
 * libmicrohttpd is real for responses; the connection is ours: the
 * functions that read a connection's headers and address are defined
 * here, and the program's definitions take precedence over the shared
 * library's.  Replies are queued to fz_queue(): the gateway's own
 * MHD_queue_response() (which rewrites libmicrohttpd's error replies) finds
 * "the library's" through dlsym(), which the harness answers with
 * fz_queue; without it, fuzz_s3_mhd.c's weak MHD_queue_response() calls
 * fz_queue.  A request comes from the fuzzer as text:
 *
 *   METHOD SP TARGET [SP VERSION] LF
 *   Name: value LF          (up to FZ_HDRS header lines; CR before LF dropped)
 *   LF
 *   body bytes
 */
#ifndef STRATA_TESTS_FUZZ_S3_H
#define STRATA_TESTS_FUZZ_S3_H

#include <dlfcn.h>
#include <microhttpd.h>

enum MHD_Result fz_queue(struct MHD_Connection *c, unsigned int status,
			 struct MHD_Response *resp);
static void *fz_dlsym(void *h, const char *name);

#define dlsym fz_dlsym
#define main s3_main_unused
#include "gateways/s3/s3_main.c"
#undef main
#undef dlsym

static void *fz_dlsym(void *h, const char *name)
{
	if (strcmp(name, "MHD_queue_response") == 0)
		return (void *)fz_queue;
	return dlsym(h, name);
}

#include <stdint.h>

#define FZ_HDRS 48

/** The fake connection (what struct MHD_Connection * points to). */
struct fz_con {
	char *fc_text;              /* the copy of the input the fields cut */
	const char *fc_method, *fc_target;
	uint32_t fc_nh;
	const char *fc_hn[FZ_HDRS], *fc_hv[FZ_HDRS];
	const char *fc_body;
	size_t fc_body_len;
	uint32_t fc_queued;         /* MHD_queue_response calls */
	unsigned int fc_status;     /* the status queued */
	char fc_etag[80];           /* its ETag header ("" none) */
};

const char *MHD_lookup_connection_value(struct MHD_Connection *c,
					enum MHD_ValueKind kind,
					const char *key)
{
	struct fz_con *f = (struct fz_con *)c;

	if (f == NULL || key == NULL || !(kind & MHD_HEADER_KIND))
		return NULL;
	for (uint32_t i = 0; i < f->fc_nh; i++)
		if (strcasecmp(f->fc_hn[i], key) == 0)
			return f->fc_hv[i];
	return NULL;
}

int MHD_get_connection_values(struct MHD_Connection *c,
			      enum MHD_ValueKind kind,
			      MHD_KeyValueIterator it, void *cls)
{
	struct fz_con *f = (struct fz_con *)c;
	int n = 0;

	if (f == NULL)
		return -1;
	if (!(kind & MHD_HEADER_KIND))
		return 0;
	for (uint32_t i = 0; i < f->fc_nh; i++) {
		n++;
		if (it != NULL && it(cls, MHD_HEADER_KIND, f->fc_hn[i],
				     f->fc_hv[i]) != MHD_YES)
			break;
	}
	return n;
}

const union MHD_ConnectionInfo *
MHD_get_connection_info(struct MHD_Connection *c,
			enum MHD_ConnectionInfoType type, ...)
{
	static struct sockaddr_in sa = {.sin_family = AF_INET,
					.sin_addr = {.s_addr = 0x0100007f}};
	static union MHD_ConnectionInfo ci = {
		.client_addr = (struct sockaddr *)&sa};

	return type == MHD_CONNECTION_INFO_CLIENT_ADDRESS ? &ci : NULL;
}

enum MHD_Result fz_queue(struct MHD_Connection *c, unsigned int status,
			 struct MHD_Response *resp)
{
	struct fz_con *f = (struct fz_con *)c;
	const char *et = MHD_get_response_header(resp, "ETag");

	if (resp == NULL || status < 100 || status > 599)
		abort(); /* every reply is a real one */
	f->fc_queued++;
	f->fc_status = status;
	snprintf(f->fc_etag, sizeof f->fc_etag, "%s", et ? et : "");
	return MHD_YES;
}

/** Cut len bytes of request text into f (fz_con_fini() frees it).
 *  false when there is no request line. */
static bool fz_con_parse(struct fz_con *f, const uint8_t *data, size_t len)
{
	char *p, *e, *end, *sp;

	memset(f, 0, sizeof *f);
	f->fc_text = malloc(len + 1);
	if (f->fc_text == NULL)
		return false;
	memcpy(f->fc_text, data, len);
	f->fc_text[len] = 0;
	p = f->fc_text;
	end = p + len;
	e = memchr(p, '\n', (size_t)(end - p));
	if (e == NULL)
		return false;
	*e = 0;
	if (e > p && e[-1] == '\r')
		e[-1] = 0;
	sp = strchr(p, ' ');
	if (sp == NULL || sp == p)
		return false;
	*sp = 0;
	f->fc_method = p;
	f->fc_target = sp + 1;
	sp = strchr(sp + 1, ' ');
	if (sp != NULL)
		*sp = 0; /* the version */
	if (f->fc_target[0] == 0)
		return false;
	p = e + 1;
	while (p < end) {
		char *colon, *v;

		e = memchr(p, '\n', (size_t)(end - p));
		if (e == NULL)
			e = end;
		*e = 0;
		if (e > p && e[-1] == '\r')
			e[-1] = 0;
		if (*p == 0) {
			p = e + 1;
			break; /* the blank line */
		}
		colon = strchr(p, ':');
		if (colon != NULL && colon != p && f->fc_nh < FZ_HDRS) {
			*colon = 0;
			v = colon + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			f->fc_hn[f->fc_nh] = p;
			f->fc_hv[f->fc_nh++] = v;
		}
		p = e + 1;
	}
	if (p < end) {
		f->fc_body = p;
		f->fc_body_len = (size_t)(end - p);
	}
	return true;
}

static void fz_con_fini(struct fz_con *f)
{
	free(f->fc_text);
	f->fc_text = NULL;
}

/** A temporary directory for the target's files (credentials, store). */
static char fz_dir[256];

/* Users of the credentials file every S3 target loads. */
#define FZ_AKEY "FUZZAKID0000000000"
#define FZ_SKEY "fuzz/secret+key0000000000000000000000000"
#define FZ_AKEY2 "AKIDALICE000000000"
#define FZ_SKEY2 "alice-secret-key-000000000000000000000000"

/** Make fz_dir and its credentials file; set the gateway's defaults (as
 *  main() does) and load the users. */
static void fz_setup(void)
{
	struct s3_conf *c = &s3g.g_conf;
	char path[128];
	FILE *f;

	const char *base = getenv("FUZZ_SCRATCH");

	/* fuzz.sh gives a scratch directory it removes after the target */
	snprintf(fz_dir, sizeof fz_dir, "%s/strata-fuzz-s3-XXXXXX",
		 base != NULL ? base : "/tmp");
	if (mkdtemp(fz_dir) == NULL)
		abort();
	snprintf(path, sizeof path, "%s/creds", fz_dir);
	f = fopen(path, "w");
	if (f == NULL)
		abort();
	fprintf(f, "# fuzz users\nfuzz %s %s\nalice %s %s\n", FZ_AKEY, FZ_SKEY,
		FZ_AKEY2, FZ_SKEY2);
	fclose(f);
	*c = (struct s3_conf){.sc_listen = "127.0.0.1",
			      .sc_inline_max = 128 << 10,
			      .sc_layout = CLOVIS_LAYOUT_PDCLUST,
			      .sc_part_min = 5ull << 20, .sc_timeout_s = 60,
			      .sc_skew_s = 900, .sc_gw_id = "fz",
			      .sc_threads = 2};
	snprintf(c->sc_creds, sizeof c->sc_creds, "%s", path);
	if (s3_creds_load(c->sc_creds) != 0)
		abort();
}

#endif
