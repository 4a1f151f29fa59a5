/*
 * clu_conf.c — the cluster configuration in YAML (see clu_conf.h and
 * docs/cluster.md).
 *
 * The text is loaded with libyaml's document API.  The cluster: and
 * servers: sections are walked here; each server's store configuration is
 * built by copying its devices and the shared pools, layouts, device_size,
 * device_model and device_fill nodes into a new YAML document, emitting it
 * as text and checking it with conf_parse() — the store's own rules, not a
 * second copy of them.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "core/clu_conf.h"
#include "core/conf.h"
#include "core/errors.h"
#include "core/limits.h"

#define CLU_CONNECT_MS_DEFAULT 2000u
#define CLU_CALL_MS_DEFAULT 30000u
#define CLU_TIMEOUT_MS_MAX 3600000u

/* Parsing context. */
struct clu_px {
	yaml_document_t *px_doc;
	const char *px_base;        /* base directory of relative paths */
	uint32_t px_flags;
	struct clu_conf *px_c;      /* scratch result */
	yaml_node_t *px_shared[5];  /* the values of clu_shared_keys */
};

static const char *const clu_shared_keys[5] = {"device_size", "pools",
					       "layouts", "device_model",
					       "device_fill"};

static int clu_fail(const yaml_node_t *n, const char *key, const char *fmt,
		    const char *val)
{
	return err_set(-EINVAL, "cluster line %zu: %s: %s%s%s%s",
		       n != NULL ? n->start_mark.line + 1 : 0, key, fmt,
		       val != NULL ? " (\"" : "", val != NULL ? val : "",
		       val != NULL ? "\")" : "");
}

static yaml_node_t *clu_node(const struct clu_px *p, int id)
{
	return yaml_document_get_node(p->px_doc, id);
}

/* The scalar text of n, or NULL when n is not a scalar. */
static const char *clu_scalar(const yaml_node_t *n)
{
	return n != NULL && n->type == YAML_SCALAR_NODE
		       ? (const char *)n->data.scalar.value : NULL;
}

/* Copy scalar n into buf (size bytes), refusing longer text. */
static int clu_text(const yaml_node_t *n, const char *key, char *buf,
		    size_t size)
{
	const char *s = clu_scalar(n);

	if (s == NULL)
		return clu_fail(n, key, "expected a text value", NULL);
	if (s[0] == '\0' || strlen(s) >= size)
		return clu_fail(n, key, "empty or too long", s);
	snprintf(buf, size, "%s", s);
	return 0;
}

static bool clu_name_ok(const char *s)
{
	if (s[0] == '\0' || s[0] == '.' || strlen(s) > CLU_NAME_MAX)
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' ||
		      *s == '.'))
			return false;
	return true;
}

static int clu_name(const yaml_node_t *n, const char *key, char *buf)
{
	int rc = clu_text(n, key, buf, CLU_NAME_MAX + 1);

	if (rc == 0 && !clu_name_ok(buf))
		rc = clu_fail(n, key, "names are 1..31 of letters, digits, "
			      "_ - . (not starting with .)", buf);
	return rc;
}

/* A boolean: true or false. */
static int clu_bool(const yaml_node_t *n, const char *key, bool *out)
{
	const char *s = clu_scalar(n);

	if (s != NULL && strcmp(s, "true") == 0)
		*out = true;
	else if (s != NULL && strcmp(s, "false") == 0)
		*out = false;
	else
		return clu_fail(n, key, "expected true or false", s);
	return 0;
}

/* An unsigned decimal number in lo..hi. */
static int clu_uint(const yaml_node_t *n, const char *key, uint64_t lo,
		    uint64_t hi, uint64_t *out)
{
	const char *s = clu_scalar(n);
	char *end;
	unsigned long long v;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return clu_fail(n, key, "expected a number", s);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi) {
		char what[96];

		snprintf(what, sizeof what, "expected a number in %" PRIu64
			 "..%" PRIu64, lo, hi);
		return clu_fail(n, key, what, s);
	}
	*out = v;
	return 0;
}

/* A duration: a number with unit ms or s (a bare number is ms). */
static int clu_ms(const yaml_node_t *n, const char *key, uint32_t *out)
{
	const char *s = clu_scalar(n);
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return clu_fail(n, key, "expected a duration (500ms, 2s)", s);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (strcmp(end, "s") == 0)
		mult = 1000;
	else if (*end != '\0' && strcmp(end, "ms") != 0)
		return clu_fail(n, key, "unit must be ms or s", s);
	if (errno != 0 || v == 0 || v > CLU_TIMEOUT_MS_MAX / mult)
		return clu_fail(n, key, "duration outside 1ms..1h", s);
	*out = (uint32_t)(v * mult);
	return 0;
}

bool clu_addr_valid(const char *addr)
{
	struct in6_addr a6;
	struct in_addr a;
	size_t n = addr != NULL ? strlen(addr) : 0;
	size_t label = 0;          /* length of the label being read */
	bool digits = true;        /* the label is all digits */

	if (n == 0 || n > CLU_HOST_MAX)
		return false;
	if (inet_pton(AF_INET, addr, &a) == 1 ||
	    inet_pton(AF_INET6, addr, &a6) == 1)
		return true;
	/* a host name (RFC 1123): labels of 1..63 letters, digits and '-',
	 * not starting or ending with '-', separated by single dots; the last
	 * label not all digits, so that "256.1.1.1" or "10.1" is not taken
	 * for an address */
	for (size_t i = 0; i < n; i++) {
		char ch = addr[i];

		if (ch == '.') {
			if (label == 0 || addr[i - 1] == '-' || i + 1 == n)
				return false;
			label = 0;
			digits = true;
		} else if (isalnum((unsigned char)ch) || (ch == '-' && label > 0)) {
			if (++label > CLU_LABEL_MAX)
				return false;
			digits = digits && isdigit((unsigned char)ch);
		} else {
			return false;
		}
	}
	return addr[n - 1] != '-' && !digits;
}

int clu_hostport_parse(const char *s, char *addr, size_t len,
		       uint16_t *port)
{
	const char *colon = s != NULL ? strrchr(s, ':') : NULL;
	size_t n = colon != NULL ? (size_t)(colon - s) : 0;
	bool br = n >= 2 && s[0] == '[' && s[n - 1] == ']';
	char *end;
	unsigned long v = 0;

	if (colon != NULL) {
		errno = 0;
		v = strtoul(colon + 1, &end, 10);
	}
	if (colon == NULL || colon[1] < '0' || colon[1] > '9' || *end != '\0' ||
	    errno != 0 || v == 0 || v > 65535 || n - 2 * br == 0 ||
	    n - 2 * br >= len)
		return err_set(-EINVAL, "\"%s\": expected ADDR:PORT (PORT "
			       "1..65535; an IPv6 ADDR in brackets: [::1]:PORT)",
			       s != NULL ? s : "");
	memcpy(addr, s + br, n - 2 * br);
	addr[n - 2 * br] = '\0';
	if (!clu_addr_valid(addr) || (strchr(addr, ':') != NULL) != br) {
		bool v6 = strchr(addr, ':') != NULL && !br;

		return err_set(-EINVAL, "\"%s\": %s", s, v6 ?
			       "an IPv6 address is written in brackets: "
			       "[ADDR]:PORT" : "expected an IPv4 address, a "
			       "host name or [an IPv6 address], then :PORT");
	}
	*port = (uint16_t)v;
	return 0;
}

int clu_server_resolve(const struct clu_server *s, char *ip, size_t len)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	int rc;

	rc = getaddrinfo(s->cs_addr, NULL, &hints, &ai);
	if (rc != 0)
		return err_set(-EHOSTUNREACH, "server %s: address '%s' does "
			       "not resolve: %s", s->cs_name, s->cs_addr,
			       rc == EAI_SYSTEM ? strerror(errno) :
			       gai_strerror(rc));
	rc = getnameinfo(ai->ai_addr, ai->ai_addrlen, ip, (socklen_t)len,
			 NULL, 0, NI_NUMERICHOST);
	freeaddrinfo(ai);
	if (rc != 0)
		return err_set(-EHOSTUNREACH, "server %s: address '%s': no "
			       "numeric form: %s", s->cs_name, s->cs_addr,
			       gai_strerror(rc));
	return 0;
}

int clu_addr_resolve(const struct clu_conf *c, const struct clu_server *s,
		     char *ip, size_t len)
{
	if (strcmp(c->cc_provider, "shm") == 0)
		snprintf(ip, len, "%s", s->cs_addr);
	else if (s->cs_ip[0] != '\0')
		snprintf(ip, len, "%s", s->cs_ip);
	else
		return clu_server_resolve(s, ip, len);
	return 0;
}

int clu_conf_resolve(struct clu_conf *c)
{
	char (*ip)[CLU_IP_MAX] = calloc(c->cc_nr_servers + 1, sizeof *ip);
	int rc = ip == NULL ? err_set(-ENOMEM, "cluster %s: resolve",
				      c->cc_name) : 0;

	/* shm: the addresses only name regions on this host */
	if (strcmp(c->cc_provider, "shm") == 0) {
		free(ip);
		return 0;
	}
	for (uint32_t i = 0; rc == 0 && i < c->cc_nr_servers; i++)
		rc = clu_server_resolve(&c->cc_servers[i], ip[i], CLU_IP_MAX);
	/* two spellings of one address ("::1", "0::1"; a name and its
	 * address) with one port: the file's own check saw two */
	for (uint32_t i = 0; rc == 0 && i < c->cc_nr_servers; i++)
		for (uint32_t j = 0; rc == 0 && j < i; j++)
			if (strcmp(ip[i], ip[j]) == 0 &&
			    c->cc_servers[i].cs_port == c->cc_servers[j].cs_port)
				rc = err_set(-EINVAL, "servers %s and %s: one "
					     "address and port (%s, %s: %s "
					     "port %u)", c->cc_servers[j].cs_name,
					     c->cc_servers[i].cs_name,
					     c->cc_servers[j].cs_addr,
					     c->cc_servers[i].cs_addr, ip[i],
					     c->cc_servers[i].cs_port);
	for (uint32_t i = 0; rc == 0 && i < c->cc_nr_servers; i++)
		memcpy(c->cc_servers[i].cs_ip, ip[i], CLU_IP_MAX);
	free(ip);
	return rc;
}

const char *clu_server_where(const struct clu_server *s, char *buf,
			     size_t len)
{
	bool v6 = strchr(s->cs_addr, ':') != NULL;

	snprintf(buf, len, "%s%s%s:%u", v6 ? "[" : "", s->cs_addr,
		 v6 ? "]" : "", s->cs_port);
	return buf;
}

/* A path: absolute, or made absolute against base. */
static int clu_path(const struct clu_px *p, const yaml_node_t *n,
		    const char *key, char *buf, size_t size)
{
	char tmp[256];
	int rc = clu_text(n, key, tmp, sizeof tmp);

	if (rc != 0)
		return rc;
	if (tmp[0] == '/' || p->px_base == NULL)
		snprintf(buf, size, "%s", tmp);
	else if ((size_t)snprintf(buf, size, "%s/%s", p->px_base, tmp) >= size)
		return clu_fail(n, key, "path too long", tmp);
	return 0;
}

/* Read the secret from a file (trailing newlines dropped). */
static int clu_secret_file(struct clu_px *p, const yaml_node_t *n)
{
	char path[256];
	struct clu_conf *c = p->px_c;
	ssize_t got;
	int fd, rc = clu_path(p, n, "cluster.secret_file", path, sizeof path);

	if (rc != 0)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(-errno, "cluster line %zu: cluster.secret_file: "
			       "%s: %s", n->start_mark.line + 1, path,
			       strerror(errno));
	got = read(fd, c->cc_secret, sizeof c->cc_secret);
	close(fd);
	while (got > 0 && (c->cc_secret[got - 1] == '\n' ||
			   c->cc_secret[got - 1] == '\r'))
		got--;
	if (got < (ssize_t)CLU_SECRET_MIN || got >= (ssize_t)CLU_SECRET_MAX)
		return clu_fail(n, "cluster.secret_file", "the secret must be "
				"16..1023 bytes", path);
	c->cc_secret_len = (size_t)got;
	return 0;
}

static int clu_secret(struct clu_px *p, const yaml_node_t *n)
{
	const char *s = clu_scalar(n);
	size_t len = s != NULL ? strlen(s) : 0;

	if (s == NULL || len < CLU_SECRET_MIN || len >= CLU_SECRET_MAX)
		return clu_fail(n, "cluster.secret", "the secret must be "
				"16..1023 bytes of text", NULL);
	memcpy(p->px_c->cc_secret, s, len);
	p->px_c->cc_secret_len = len;
	return 0;
}

/*
 * cluster.etcd: a list of 1..CLU_ETCD_MAX endpoints "http://HOST:PORT"
 * (HOST and PORT as clu_hostport_parse reads them), each given once.
 */
static int clu_etcd(struct clu_px *p, const yaml_node_t *seq)
{
	struct clu_conf *c = p->px_c;
	char key[32], host[CLU_HOST_MAX + 1];
	uint16_t port;
	size_t nr;

	if (seq->type != YAML_SEQUENCE_NODE)
		return clu_fail(seq, "cluster.etcd", "expected a list of "
				"endpoints (http://HOST:PORT)", NULL);
	nr = (size_t)(seq->data.sequence.items.top -
		      seq->data.sequence.items.start);
	if (nr == 0 || nr > CLU_ETCD_MAX)
		return clu_fail(seq, "cluster.etcd", "1 to 7 endpoints", NULL);
	for (uint32_t i = 0; i < nr; i++) {
		const yaml_node_t *n =
			clu_node(p, seq->data.sequence.items.start[i]);
		const char *u = clu_scalar(n);

		snprintf(key, sizeof key, "cluster.etcd[%u]", i);
		if (u == NULL)
			return clu_fail(n, key, "expected a text value", NULL);
		if (strncmp(u, "http://", 7) != 0 || strlen(u) > CLU_URL_MAX ||
		    clu_hostport_parse(u + 7, host, sizeof host, &port) != 0)
			return clu_fail(n, key, "expected http://HOST:PORT "
					"(an IPv6 HOST in brackets; no path; "
					"https is not supported)", u);
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(c->cc_etcd[j], u) == 0)
				return clu_fail(n, key, "endpoint given twice",
						u);
		snprintf(c->cc_etcd[i], sizeof c->cc_etcd[i], "%s", u);
	}
	c->cc_nr_etcd = (uint32_t)nr;
	return 0;
}

/* cluster.isc_native: a list of absolute paths of shared objects. */
static int clu_isc_native(struct clu_px *p, const yaml_node_t *seq)
{
	struct clu_conf *c = p->px_c;
	char key[40];
	size_t nr;

	if (seq->type != YAML_SEQUENCE_NODE)
		return clu_fail(seq, "cluster.isc_native", "expected a list of "
				"absolute paths of shared objects", NULL);
	nr = (size_t)(seq->data.sequence.items.top -
		      seq->data.sequence.items.start);
	if (nr > CLU_ISC_NATIVE_MAX)
		return clu_fail(seq, "cluster.isc_native", "at most 8 paths",
				NULL);
	for (uint32_t i = 0; i < nr; i++) {
		const yaml_node_t *n =
			clu_node(p, seq->data.sequence.items.start[i]);
		const char *u = clu_scalar(n);

		snprintf(key, sizeof key, "cluster.isc_native[%u]", i);
		if (u == NULL || u[0] != '/' || strlen(u) > CLU_PATH_MAX)
			return clu_fail(n, key, "expected an absolute path of "
					"at most 255 bytes", u);
		snprintf(c->cc_isc_native[i], sizeof c->cc_isc_native[i], "%s",
			 u);
	}
	c->cc_nr_isc_native = (uint32_t)nr;
	return 0;
}

/* One key of the cluster: mapping. */
static int clu_cluster_key(struct clu_px *p, const char *k,
			   const yaml_node_t *v, bool *seen_secret)
{
	struct clu_conf *c = p->px_c;
	uint32_t ms;
	uint64_t r;
	int rc;

	if (strcmp(k, "name") == 0)
		return clu_name(v, "cluster.name", c->cc_name);
	if (strcmp(k, "provider") == 0)
		return clu_text(v, "cluster.provider", c->cc_provider,
				sizeof c->cc_provider);
	if (strcmp(k, "index_replicas") == 0) {
		rc = clu_uint(v, "cluster.index_replicas", 1, CLU_REPLICAS_MAX,
			      &r);
		c->cc_replicas = (uint32_t)r;
		return rc;
	}
	if (strcmp(k, "meta_replicas") == 0) {
		rc = clu_uint(v, "cluster.meta_replicas", 1, CLU_REPLICAS_MAX,
			      &r);
		c->cc_meta_replicas = (uint32_t)r;
		return rc;
	}
	if (strcmp(k, "connect_timeout") == 0)
		return clu_ms(v, "cluster.connect_timeout", &c->cc_connect_ms);
	if (strcmp(k, "call_timeout") == 0)
		return clu_ms(v, "cluster.call_timeout", &c->cc_call_ms);
	if (strcmp(k, "etcd") == 0)
		return clu_etcd(p, v);
	if (strcmp(k, "isc_native") == 0)
		return clu_isc_native(p, v);
	if (strcmp(k, "ha_lease") == 0) {
		rc = clu_ms(v, "cluster.ha_lease", &ms);
		if (rc == 0 && (ms % 1000 != 0 || ms / 1000 < CLU_HA_LEASE_MIN_S ||
				ms / 1000 > CLU_HA_LEASE_MAX_S))
			return clu_fail(v, "cluster.ha_lease", "expected whole "
					"seconds, 2s..60s", clu_scalar(v));
		c->cc_ha_lease_s = ms / 1000;
		return rc;
	}
	if (strcmp(k, "ha_down_out") == 0)
		return clu_ms(v, "cluster.ha_down_out", &c->cc_ha_down_out_ms);
	if (strcmp(k, "ha_start_grace") == 0)
		return clu_ms(v, "cluster.ha_start_grace",
			      &c->cc_ha_start_grace_ms);
	if (strcmp(k, "ha_rules") == 0) {
		const char *s = clu_scalar(v);

		if (s == NULL || (strcmp(s, "default") != 0 &&
				  strcmp(s, "test") != 0))
			return clu_fail(v, "cluster.ha_rules", "expected default "
					"or test", s);
		c->cc_ha_test_rules = strcmp(s, "test") == 0;
		return 0;
	}
	if (strcmp(k, "secret") == 0 || strcmp(k, "secret_file") == 0) {
		if (*seen_secret)
			return clu_fail(v, "cluster.secret", "give secret or "
					"secret_file, not both", NULL);
		*seen_secret = true;
		if (p->px_flags & CLU_PARSE_NO_SECRET)
			return 0;
		return k[6] == '\0' ? clu_secret(p, v) : clu_secret_file(p, v);
	}
	return clu_fail(v, "cluster", "unknown key", k);
}

/* Walk a mapping: fn(key, value) for each pair, refusing repeated keys. */
#define CLU_MAP_FOR(p, map, kvar, vnode, body)                               \
	for (yaml_node_pair_t *pr_ = (map)->data.mapping.pairs.start;        \
	     pr_ < (map)->data.mapping.pairs.top; pr_++) {                   \
		yaml_node_t *kn_ = clu_node(p, pr_->key);                    \
		const char *kvar = clu_scalar(kn_);                          \
		yaml_node_t *vnode = clu_node(p, pr_->value);                \
		if (kvar == NULL)                                            \
			return clu_fail(kn_, "key", "keys must be text", NULL); \
		for (yaml_node_pair_t *q_ = (map)->data.mapping.pairs.start; \
		     q_ < pr_; q_++) {                                       \
			const char *o_ = clu_scalar(clu_node(p, q_->key));   \
			if (o_ != NULL && strcmp(o_, kvar) == 0)             \
				return clu_fail(kn_, kvar, "key given twice", \
						NULL);                       \
		}                                                            \
		body                                                         \
	}

static int clu_cluster(struct clu_px *p, const yaml_node_t *map)
{
	bool seen_secret = false;
	int rc;

	if (map->type != YAML_MAPPING_NODE)
		return clu_fail(map, "cluster", "expected a mapping", NULL);
	CLU_MAP_FOR(p, map, k, v, {
		rc = clu_cluster_key(p, k, v, &seen_secret);
		if (rc != 0)
			return rc;
	})
	if (p->px_c->cc_name[0] == '\0')
		return clu_fail(map, "cluster.name", "required", NULL);
	if (!seen_secret)
		return clu_fail(map, "cluster.secret", "required (secret or "
				"secret_file)", NULL);
	return 0;
}

/* ------------------------------------------- per-server store config */

/* Copy node id of src (and its children) into dst; the new id, or 0. */
static int clu_copy(yaml_document_t *dst, yaml_document_t *src, int id)
{
	yaml_node_t *n = yaml_document_get_node(src, id);
	int out = 0;

	if (n == NULL)
		return 0;
	if (n->type == YAML_SCALAR_NODE)
		return yaml_document_add_scalar(dst, NULL, n->data.scalar.value,
						(int)n->data.scalar.length,
						YAML_ANY_SCALAR_STYLE);
	if (n->type == YAML_SEQUENCE_NODE) {
		out = yaml_document_add_sequence(dst, NULL,
						 YAML_BLOCK_SEQUENCE_STYLE);
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     out != 0 && it < n->data.sequence.items.top; it++) {
			int c = clu_copy(dst, src, *it);

			if (c == 0 ||
			    !yaml_document_append_sequence_item(dst, out, c))
				return 0;
		}
		return out;
	}
	out = yaml_document_add_mapping(dst, NULL, YAML_BLOCK_MAPPING_STYLE);
	for (yaml_node_pair_t *pr = n->data.mapping.pairs.start;
	     out != 0 && pr < n->data.mapping.pairs.top; pr++) {
		int k = clu_copy(dst, src, pr->key);
		int v = k != 0 ? clu_copy(dst, src, pr->value) : 0;

		if (v == 0 || !yaml_document_append_mapping_pair(dst, out, k, v))
			return 0;
	}
	return out;
}

struct clu_buf {
	char *b_p;
	size_t b_len;
	size_t b_cap;
};

static int clu_buf_write(void *data, unsigned char *bytes, size_t size)
{
	struct clu_buf *b = data;

	if (b->b_len + size + 1 > b->b_cap) {
		size_t cap = (b->b_len + size + 1) * 2;
		char *np = realloc(b->b_p, cap);

		if (np == NULL)
			return 0;
		b->b_p = np;
		b->b_cap = cap;
	}
	memcpy(b->b_p + b->b_len, bytes, size);
	b->b_len += size;
	b->b_p[b->b_len] = '\0';
	return 1;
}

/* Add key: (copy of src node) to mapping map of dst. */
static bool clu_add_pair(yaml_document_t *dst, int map, const char *key,
			 yaml_document_t *src, const yaml_node_t *n)
{
	int k = yaml_document_add_scalar(dst, NULL, (yaml_char_t *)key, -1,
					 YAML_ANY_SCALAR_STYLE);
	int v = k != 0 ? clu_copy(dst, src, (int)(n - src->nodes.start) + 1) : 0;

	return v != 0 && yaml_document_append_mapping_pair(dst, map, k, v);
}

/* The store YAML of one server: its devices (and device_size) plus the
 * shared sections.  Into *out (malloc'd), or -ENOMEM. */
static int clu_store_text(struct clu_px *p, const yaml_node_t *devs,
			  const yaml_node_t *dev_size, char **out)
{
	yaml_document_t d;
	yaml_emitter_t em;
	struct clu_buf b = {0};
	bool ok;
	int map;

	if (!yaml_document_initialize(&d, NULL, NULL, NULL, 1, 1))
		return err_set(-ENOMEM, "cluster: store configuration");
	map = yaml_document_add_mapping(&d, NULL, YAML_BLOCK_MAPPING_STYLE);
	ok = map != 0 && clu_add_pair(&d, map, "devices", p->px_doc, devs);
	if (ok && dev_size == NULL)
		dev_size = p->px_shared[0];
	if (ok && dev_size != NULL)
		ok = clu_add_pair(&d, map, "device_size", p->px_doc, dev_size);
	for (int i = 1; ok && i < 5; i++)
		if (p->px_shared[i] != NULL)
			ok = clu_add_pair(&d, map, clu_shared_keys[i],
					  p->px_doc, p->px_shared[i]);
	if (!ok || !yaml_emitter_initialize(&em)) {
		yaml_document_delete(&d);
		return err_set(-ENOMEM, "cluster: store configuration");
	}
	yaml_emitter_set_output(&em, clu_buf_write, &b);
	yaml_emitter_set_unicode(&em, 1);
	ok = yaml_emitter_open(&em) && yaml_emitter_dump(&em, &d) &&
	     yaml_emitter_close(&em);
	yaml_emitter_delete(&em);
	if (!ok) { /* yaml_emitter_dump() deletes the document either way */
		free(b.b_p);
		return err_set(-ENOMEM, "cluster: store configuration");
	}
	*out = b.b_p;
	return 0;
}

/* Check a server's store text with the store's own parser. */
static int clu_store_check(const struct clu_server *s, const char *key)
{
	struct conf tmp = {0};
	int rc = conf_parse(&tmp, s->cs_store_yaml, strlen(s->cs_store_yaml));
	const char *m = err_msg(), *colon;

	conf_fini(&tmp);
	if (rc == 0)
		return 0;
	/* Drop the "conf line N: " of the generated text: the line that
	 * matters is the server's in the cluster file. */
	colon = strncmp(m, "conf line ", 10) == 0 ? strstr(m, ": ") : NULL;
	return err_set(rc, "cluster line %u: %s (server %s): %s", s->cs_line,
		       key, s->cs_name, colon != NULL ? colon + 2 : m);
}

/* One key of a server entry. */
static int clu_server_key(struct clu_px *p, struct clu_server *s,
			  const char *k, const yaml_node_t *v, const char *key,
			  const yaml_node_t **devs, const yaml_node_t **dsize)
{
	char kk[96];
	uint64_t port;
	int rc;

	snprintf(kk, sizeof kk, "%s.%s", key, k);
	if (strcmp(k, "name") == 0)
		return clu_name(v, kk, s->cs_name);
	if (strcmp(k, "address") == 0) {
		rc = clu_text(v, kk, s->cs_addr, sizeof s->cs_addr);
		if (rc == 0 && !clu_addr_valid(s->cs_addr))
			rc = clu_fail(v, kk, "expected an IPv4 address, an "
				      "IPv6 address or a host name",
				      s->cs_addr);
		return rc;
	}
	if (strcmp(k, "port") == 0) {
		rc = clu_uint(v, kk, 1, 65535, &port);
		s->cs_port = (uint16_t)port;
		return rc;
	}
	if (strcmp(k, "data_dir") == 0)
		return clu_path(p, v, kk, s->cs_data_dir, sizeof s->cs_data_dir);
	if (strcmp(k, "nvram_dir") == 0)
		return clu_path(p, v, kk, s->cs_nvram_dir,
				sizeof s->cs_nvram_dir);
	if (strcmp(k, "meta_nvram") == 0)
		return clu_bool(v, kk, &s->cs_meta_nvram);
	if (strcmp(k, "enclosure") == 0)
		return clu_name(v, kk, s->cs_enclosure);
	if (strcmp(k, "devices") == 0) {
		*devs = v;
		return v->type == YAML_SEQUENCE_NODE ? 0 :
		       clu_fail(v, kk, "expected a list of devices", NULL);
	}
	if (strcmp(k, "device_size") == 0) {
		*dsize = v;
		return 0;
	}
	return clu_fail(v, key, "unknown key", k);
}

static int clu_server(struct clu_px *p, const yaml_node_t *map, uint32_t i)
{
	struct clu_server *s = &p->px_c->cc_servers[i];
	const yaml_node_t *devs = NULL, *dsize = NULL;
	char key[32];
	int rc;

	snprintf(key, sizeof key, "servers[%u]", i);
	s->cs_line = (uint32_t)map->start_mark.line + 1;
	if (map->type != YAML_MAPPING_NODE)
		return clu_fail(map, key, "expected a mapping", NULL);
	CLU_MAP_FOR(p, map, k, v, {
		rc = clu_server_key(p, s, k, v, key, &devs, &dsize);
		if (rc != 0)
			return rc;
	})
	if (s->cs_name[0] == '\0' || s->cs_addr[0] == '\0' ||
	    s->cs_port == 0 || s->cs_data_dir[0] == '\0' || devs == NULL)
		return clu_fail(map, key, "name, address, port, data_dir and "
				"devices are required", NULL);
	for (uint32_t j = 0; j < i; j++) {
		const struct clu_server *o = &p->px_c->cc_servers[j];

		if (strcmp(o->cs_name, s->cs_name) == 0)
			return clu_fail(map, key, "server name used twice",
					s->cs_name);
		if (strcmp(o->cs_addr, s->cs_addr) == 0 &&
		    o->cs_port == s->cs_port)
			return clu_fail(map, key, "address and port used twice",
					s->cs_name);
		if (strcmp(o->cs_data_dir, s->cs_data_dir) == 0)
			return clu_fail(map, key, "data_dir used twice",
					s->cs_data_dir);
	}
	rc = clu_store_text(p, devs, dsize, &s->cs_store_yaml);
	return rc != 0 ? rc : clu_store_check(s, key);
}

/* ------------------------------------- devices across servers (2a) */

/* The data size a server's engine gives device d of conf b. */
static uint64_t clu_dev_size(const struct conf *b, const struct conf_dev *d)
{
	return d->cd_size ? d->cd_size :
	       b->c_dev_size ? b->c_dev_size : LIM_DEV_SIZE_DEFAULT;
}

/* Can server j's device d be seen by other servers?  Not zoned (SMR
 * appends at a write pointer of its own), not kept local (local: true),
 * and a slice of at least LIM_DEV_SIZE_MIN. */
static bool clu_dev_exported(const struct conf *b, const struct conf_dev *d,
			     uint32_t slices)
{
	return d->cd_tier != ST_TIER_SMR && !d->cd_local &&
	       conf_slice_size(clu_dev_size(b, d), slices) >= LIM_DEV_SIZE_MIN;
}

/* Add the remote image of device dd of server j (conf bj) to x. */
static void clu_remote_dev(const struct clu_conf *c, uint32_t j,
			   const struct conf *bj, uint32_t dd,
			   struct conf *x)
{
	const struct conf_dev *src = &bj->c_devs[dd];
	struct conf_dev *d = &x->c_devs[x->c_nr_devs];
	const char *sn = c->cc_servers[j].cs_name;
	char name[2 * CONF_NAME_MAX + 8];

	memset(d, 0, sizeof *d);
	snprintf(name, sizeof name, "%s.%s", sn, src->cd_name);
	if (strlen(name) > CONF_NAME_MAX)
		snprintf(name, sizeof name, "r%u.%u", j, dd);
	memcpy(d->cd_name, name, strlen(name) + 1);
	d->cd_tier = src->cd_tier;
	d->cd_size = conf_slice_size(clu_dev_size(bj, src), c->cc_nr_servers);
	snprintf(d->cd_remote, sizeof d->cd_remote, "%s:%u", sn, dd);
	d->cd_domain = j + 1;
	x->c_nr_devs++;
}

/* Pool p of x (a copy of b's pool p) spans, beyond b's own devices, the
 * remote images of the devices of the same-named pool of every other
 * server: img[j][dd] is the index in x of server j's device dd (or -1). */
static int clu_pool_span(const struct clu_conf *c, const struct conf *base,
			 uint32_t self, int (*img)[LIM_DEV_MAX],
			 const struct conf_pool *bp, struct conf_pool *xp)
{
	uint32_t *v = malloc(LIM_DEV_MAX * sizeof *v), n = bp->cp_nr;

	if (v == NULL)
		return err_set(-ENOMEM, "cluster: pools");
	memcpy(v, bp->cp_devs, n * sizeof *v);
	for (uint32_t j = 0; j < c->cc_nr_servers; j++) {
		int q = j == self ? -1 : conf_pool_find(&base[j], bp->cp_name);

		for (uint32_t k = 0; q >= 0 && k < base[j].c_pools[q].cp_nr;
		     k++) {
			int at = img[j][base[j].c_pools[q].cp_devs[k]];

			if (at >= 0 && n < LIM_DEV_MAX)
				v[n++] = (uint32_t)at;
		}
	}
	*xp = *bp;
	xp->cp_devs = v;
	xp->cp_nr = n;
	return 0;
}

/* Server self's store configuration in a cluster of several: its own
 * devices first (indices unchanged, domain self + 1), then one remote
 * device per exported device of every other server, pools spanning them,
 * and its slice.  Into *out (malloc'd text). */
static int clu_store_span(const struct clu_conf *c, const struct conf *base,
			  uint32_t self, char **out)
{
	const struct conf *b = &base[self];
	struct conf x = *b;
	int (*img)[LIM_DEV_MAX] = malloc(CLU_SERVERS_MAX * sizeof *img);
	uint32_t total = b->c_nr_devs, np = 0;
	int rc = 0;

	x.c_devs = calloc(LIM_DEV_MAX, sizeof *x.c_devs);
	x.c_pools = calloc(b->c_nr_pools ? b->c_nr_pools : 1,
			   sizeof *x.c_pools);
	if (img == NULL || x.c_devs == NULL || x.c_pools == NULL) {
		rc = err_set(-ENOMEM, "cluster: store configuration");
		goto out;
	}
	for (uint32_t j = 0; j < c->cc_nr_servers; j++)
		for (uint32_t d = 0; d < base[j].c_nr_devs; d++)
			total += j != self &&
				 clu_dev_exported(&base[j], &base[j].c_devs[d],
						  c->cc_nr_servers);
	if (total > LIM_DEV_MAX) {
		rc = err_set(-EINVAL, "cluster line %u: server %s would see %u "
			     "devices (its own and the other servers'), more "
			     "than %u", c->cc_servers[self].cs_line,
			     c->cc_servers[self].cs_name, total, LIM_DEV_MAX);
		goto out;
	}
	memcpy(x.c_devs, b->c_devs, b->c_nr_devs * sizeof *x.c_devs);
	for (uint32_t d = 0; d < b->c_nr_devs; d++)
		x.c_devs[d].cd_domain = self + 1;
	for (uint32_t j = 0; j < c->cc_nr_servers; j++)
		for (uint32_t d = 0; d < LIM_DEV_MAX; d++) {
			img[j][d] = -1;
			if (j == self || d >= base[j].c_nr_devs ||
			    !clu_dev_exported(&base[j], &base[j].c_devs[d],
					      c->cc_nr_servers))
				continue;
			img[j][d] = (int)x.c_nr_devs;
			clu_remote_dev(c, j, &base[j], d, &x);
		}
	for (; rc == 0 && np < b->c_nr_pools; np++)
		rc = clu_pool_span(c, base, self, img, &b->c_pools[np],
				   &x.c_pools[np]);
	x.c_slice = self;
	x.c_slices = c->cc_nr_servers;
	if (rc == 0)
		rc = conf_emit(&x, out);
out:
	for (uint32_t q = 0; x.c_pools != NULL && q < np; q++)
		free(x.c_pools[q].cp_devs);
	free(x.c_pools);
	free(x.c_devs);
	free(img);
	return rc;
}

/* Phase 2a: every server's configuration gets the other servers' devices
 * as remote devices (docs/cluster.md "Placement across servers"). */
static int clu_stores_span(struct clu_conf *c)
{
	uint32_t n = c->cc_nr_servers;
	struct conf *base;
	char **text;
	int rc = 0;

	if (n < 2)
		return 0;
	base = calloc(n, sizeof *base);
	text = calloc(n, sizeof *text);
	if (base == NULL || text == NULL) {
		free(base);
		free(text);
		return err_set(-ENOMEM, "cluster: store configurations");
	}
	for (uint32_t i = 0; rc == 0 && i < n; i++)
		rc = conf_parse(&base[i], c->cc_servers[i].cs_store_yaml,
				strlen(c->cc_servers[i].cs_store_yaml));
	for (uint32_t i = 0; rc == 0 && i < n; i++)
		rc = clu_store_span(c, base, i, &text[i]);
	for (uint32_t i = 0; i < n; i++) {
		if (rc == 0) {
			free(c->cc_servers[i].cs_store_yaml);
			c->cc_servers[i].cs_store_yaml = text[i];
		} else {
			free(text[i]);
		}
		conf_fini(&base[i]);
	}
	for (uint32_t i = 0; rc == 0 && i < n; i++)
		rc = clu_store_check(&c->cc_servers[i], "servers");
	free(base);
	free(text);
	return rc;
}

static int clu_servers(struct clu_px *p, const yaml_node_t *seq)
{
	size_t nr;
	int rc;

	if (seq->type != YAML_SEQUENCE_NODE)
		return clu_fail(seq, "servers", "expected a list", NULL);
	nr = (size_t)(seq->data.sequence.items.top -
		      seq->data.sequence.items.start);
	if (nr == 0 || nr > CLU_SERVERS_MAX)
		return clu_fail(seq, "servers", "1 to 64 servers", NULL);
	p->px_c->cc_servers = calloc(nr, sizeof *p->px_c->cc_servers);
	if (p->px_c->cc_servers == NULL)
		return err_set(-ENOMEM, "cluster: servers");
	p->px_c->cc_nr_servers = (uint32_t)nr;
	for (uint32_t i = 0; i < nr; i++) {
		rc = clu_server(p, clu_node(p, seq->data.sequence.items.start[i]),
				i);
		if (rc != 0)
			return rc;
	}
	return clu_stores_span(p->px_c);
}

static int clu_top(struct clu_px *p, const yaml_node_t *root)
{
	const yaml_node_t *cluster = NULL, *servers = NULL;
	int rc;

	if (root == NULL || root->type != YAML_MAPPING_NODE)
		return clu_fail(root, "top level", "expected a mapping with "
				"cluster: and servers:", NULL);
	CLU_MAP_FOR(p, root, k, v, {
		int sh = -1;

		for (int i = 0; i < 5; i++)
			if (strcmp(k, clu_shared_keys[i]) == 0)
				sh = i;
		if (sh >= 0)
			p->px_shared[sh] = v;
		else if (strcmp(k, "cluster") == 0)
			cluster = v;
		else if (strcmp(k, "servers") == 0)
			servers = v;
		else
			return clu_fail(v, "top level", "unknown key", k);
	})
	if (cluster == NULL || servers == NULL)
		return clu_fail(root, "top level", "cluster: and servers: are "
				"required", NULL);
	rc = clu_cluster(p, cluster);
	if (rc == 0)
		rc = clu_servers(p, servers);
	if (rc == 0 && p->px_c->cc_replicas > p->px_c->cc_nr_servers)
		rc = clu_fail(cluster, "cluster.index_replicas",
			      "more replicas than servers", NULL);
	return rc;
}

void clu_conf_fini(struct clu_conf *c)
{
	if (c == NULL)
		return;
	for (uint32_t i = 0; c->cc_servers != NULL && i < c->cc_nr_servers; i++)
		free(c->cc_servers[i].cs_store_yaml);
	free(c->cc_servers);
	free(c->cc_text);
	memset(c, 0, sizeof *c);
}

/* Fill the defaults of what the file left out. */
static void clu_defaults(struct clu_conf *c)
{
	if (c->cc_provider[0] == '\0')
		snprintf(c->cc_provider, sizeof c->cc_provider, "tcp;ofi_rxm");
	if (c->cc_replicas == 0)
		c->cc_replicas = c->cc_nr_servers < 3 ? c->cc_nr_servers : 3;
	/* standbys only where a map can move a home to one: with etcd */
	if (c->cc_meta_replicas == 0)
		c->cc_meta_replicas = c->cc_nr_etcd > 0 ?
				      CLU_META_REPLICAS_DEFAULT : 1;
	if (c->cc_meta_replicas > c->cc_nr_servers)
		c->cc_meta_replicas = c->cc_nr_servers;
	if (c->cc_connect_ms == 0)
		c->cc_connect_ms = CLU_CONNECT_MS_DEFAULT;
	if (c->cc_call_ms == 0)
		c->cc_call_ms = CLU_CALL_MS_DEFAULT;
	if (c->cc_ha_lease_s == 0)
		c->cc_ha_lease_s = CLU_HA_LEASE_S_DEFAULT;
}

int clu_conf_parse(struct clu_conf *c, const char *text, size_t len,
		   const char *base_dir, uint32_t flags)
{
	struct clu_conf tmp = {0};
	struct clu_px p = {.px_base = base_dir, .px_flags = flags, .px_c = &tmp};
	yaml_parser_t yp;
	yaml_document_t doc;
	int rc;

	if (c == NULL || text == NULL)
		return err_set(-EINVAL, "cluster: NULL argument");
	if (len > CLU_TEXT_MAX)
		return err_set(-EFBIG, "cluster: text of %zu bytes > %u", len,
			       CLU_TEXT_MAX);
	if (!yaml_parser_initialize(&yp))
		return err_set(-ENOMEM, "cluster: parser");
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	if (!yaml_parser_load(&yp, &doc)) {
		rc = err_set(-EINVAL, "cluster line %zu: YAML: %s",
			     yp.problem_mark.line + 1,
			     yp.problem != NULL ? yp.problem : "syntax error");
		yaml_parser_delete(&yp);
		return rc;
	}
	p.px_doc = &doc;
	rc = clu_top(&p, yaml_document_get_root_node(&doc));
	yaml_document_delete(&doc);
	yaml_parser_delete(&yp);
	if (rc == 0) {
		tmp.cc_text = malloc(len + 1);
		if (tmp.cc_text == NULL)
			rc = err_set(-ENOMEM, "cluster: text");
	}
	if (rc != 0) {
		clu_conf_fini(&tmp);
		return rc;
	}
	memcpy(tmp.cc_text, text, len);
	tmp.cc_text[len] = '\0';
	tmp.cc_text_len = len;
	clu_defaults(&tmp);
	*c = tmp;
	return 0;
}

int clu_conf_load(struct clu_conf *c, const char *path)
{
	char *text, dir[512], real[PATH_MAX];
	struct stat st;
	ssize_t got;
	int fd, rc;

	if (c == NULL || path == NULL)
		return err_set(-EINVAL, "cluster: NULL argument");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(-errno, "cluster file %s: %s", path,
			       strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > (off_t)CLU_TEXT_MAX) {
		close(fd);
		return err_set(S_ISREG(st.st_mode) ? -EFBIG : -EINVAL,
			       "cluster file %s: not a regular file of at most "
			       "%u bytes", path, CLU_TEXT_MAX);
	}
	text = malloc((size_t)st.st_size + 1);
	if (text == NULL) {
		close(fd);
		return err_set(-ENOMEM, "cluster file %s", path);
	}
	got = read(fd, text, (size_t)st.st_size);
	close(fd);
	if (got != st.st_size) {
		free(text);
		return err_set(-EIO, "cluster file %s: short read", path);
	}
	if (realpath(path, real) == NULL)
		snprintf(real, sizeof real, "%s", path);
	snprintf(dir, sizeof dir, "%s", dirname(real));
	rc = clu_conf_parse(c, text, (size_t)got, dir, 0);
	if (rc != 0)
		err_set(rc, "%s: %s", path, err_msg());
	free(text);
	return rc;
}

int clu_server_find(const struct clu_conf *c, const char *name)
{
	for (uint32_t i = 0; i < c->cc_nr_servers; i++)
		if (strcmp(c->cc_servers[i].cs_name, name) == 0)
			return (int)i;
	return err_set(-ENOENT, "cluster %s: no server called \"%s\"",
		       c->cc_name, name);
}

uint32_t clu_home(const struct clu_conf *c, const struct st_id *id)
{
	uint64_t h = st_mix64(id->si_hi ^ st_mix64(id->si_lo));

	return c->cc_nr_servers == 0 ? 0 : (uint32_t)(h % c->cc_nr_servers);
}
