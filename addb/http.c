/*
 * http.c — /metrics over HTTP (libmicrohttpd, one internal thread): the
 * Prometheus scrape endpoint of strata-server, strata-s3 and an embedded
 * application that asks for it (addb/addb.h, docs/monitoring.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "addb/addb.h"
#include "core/errors.h"

struct addb_http {
	struct MHD_Daemon *ah_d;
	uint16_t ah_port;
};

#define PROM_CTYPE "text/plain; version=0.0.4; charset=utf-8"

static enum MHD_Result http_send(struct MHD_Connection *c, unsigned status,
				 char *body, size_t len, const char *ctype)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result http_text(struct MHD_Connection *c, unsigned status,
				 const char *msg)
{
	char *b = strdup(msg);

	return b == NULL ? MHD_NO : http_send(c, status, b, strlen(b),
					      "text/plain; charset=utf-8");
}

/* min_priority=P of the query: 0..100, else -1. */
static int http_prio(struct MHD_Connection *c)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
						    "min_priority");
	char *end;
	long p;

	if (v == NULL)
		return 0;
	p = strtol(v, &end, 10);
	return *v == '\0' || *end != '\0' || p < 0 || p > 100 ? -1 : (int)p;
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *c,
				   const char *url, const char *method,
				   const char *version, const char *upload,
				   size_t *upload_len, void **ctx)
{
	struct addb_snap *s = NULL;
	bool json = strcmp(url, "/metrics.json") == 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int prio, rc;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return http_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				 "only GET and HEAD\n");
	if (!json && strcmp(url, "/metrics") != 0)
		return http_text(c, MHD_HTTP_NOT_FOUND,
				 "not found: try /metrics or /metrics.json\n");
	prio = http_prio(c);
	if (prio < 0)
		return http_text(c, MHD_HTTP_BAD_REQUEST, "min_priority: not "
				 "a number of 0..100\n");
	if (addb_snap_self(&s) != 0)
		return http_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "no memory for a snapshot\n");
	f = open_memstream(&buf, &len);
	if (f == NULL) {
		addb_snap_free(s);
		return http_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "no memory for the page\n");
	}
	rc = json ? addb_json_write(s, (uint32_t)prio, f) :
		    addb_prom_write(s, (uint32_t)prio, f);
	fclose(f);
	addb_snap_free(s);
	if (rc != 0) {
		free(buf);
		return http_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "the page could not be written\n");
	}
	return http_send(c, MHD_HTTP_OK, buf, len,
			 json ? "application/json" : PROM_CTYPE);
}

/* Split "ADDR:PORT", "[V6]:PORT" or "PORT" into host and port text. */
static int http_split(const char *listen, char *host, size_t hn,
		      char *port, size_t pn)
{
	const char *colon;

	if (listen == NULL || listen[0] == '\0')
		return err_set(-EINVAL, "metrics listen address: empty");
	if (strspn(listen, "0123456789") == strlen(listen)) {
		if (strlen(listen) > 5 || atol(listen) > 65535)
			return err_set(-EINVAL, "metrics listen address %s: "
				       "port: not a number of 0..65535", listen);
		snprintf(host, hn, "127.0.0.1");
		snprintf(port, pn, "%s", listen);
		return 0;
	}
	if (listen[0] == '[') {
		const char *close = strchr(listen, ']');

		if (close == NULL || close[1] != ':' ||
		    (size_t)(close - listen - 1) >= hn)
			return err_set(-EINVAL, "metrics listen address %s: "
				       "not [V6ADDR]:PORT", listen);
		memcpy(host, listen + 1, (size_t)(close - listen - 1));
		host[close - listen - 1] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(listen, ':');
		if (colon == NULL || (size_t)(colon - listen) >= hn ||
		    colon == listen)
			return err_set(-EINVAL, "metrics listen address %s: "
				       "not ADDR:PORT or PORT", listen);
		memcpy(host, listen, (size_t)(colon - listen));
		host[colon - listen] = '\0';
	}
	if (colon[1] == '\0' || strlen(colon + 1) > 5 ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    atol(colon + 1) > 65535)
		return err_set(-EINVAL, "metrics listen address %s: port: not "
			       "a number of 0..65535", listen);
	snprintf(port, pn, "%s", colon + 1);
	return 0;
}

int addb_http_start(const char *listen, struct addb_http **out)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE}, *ai = NULL;
	char host[256], port[8];
	struct addb_http *h;
	const union MHD_DaemonInfo *di;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	int rc;

	rc = http_split(listen, host, sizeof host, port, sizeof port);
	if (rc != 0)
		return rc;
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc != 0)
		return err_set(-EINVAL, "metrics listen address %s: %s",
			       listen, gai_strerror(rc));
	h = calloc(1, sizeof *h);
	if (h == NULL) {
		freeaddrinfo(ai);
		return err_set(-ENOMEM, "metrics server: no memory");
	}
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	addb_region_open(NULL);
	errno = 0;
	h->ah_d = MHD_start_daemon(flags, 0, NULL, NULL, http_access, NULL,
				   MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				   MHD_OPTION_CONNECTION_LIMIT, 16u,
				   MHD_OPTION_CONNECTION_TIMEOUT, 10u,
				   MHD_OPTION_END);
	freeaddrinfo(ai);
	if (h->ah_d == NULL) {
		rc = errno == EADDRINUSE ? -EADDRINUSE : -(errno ? errno : EIO);
		free(h);
		return err_set(rc, "metrics server on %s: %s", listen,
			       rc == -EADDRINUSE ? "address in use" :
			       strerror(-rc));
	}
	di = MHD_get_daemon_info(h->ah_d, MHD_DAEMON_INFO_BIND_PORT);
	h->ah_port = di != NULL ? di->port : 0;
	*out = h;
	return 0;
}

uint16_t addb_http_port(const struct addb_http *h)
{
	return h->ah_port;
}

void addb_http_stop(struct addb_http *h)
{
	if (h == NULL)
		return;
	MHD_stop_daemon(h->ah_d);
	free(h);
}
