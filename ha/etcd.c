/*
 * etcd.c — the etcd v3 JSON gateway client (contract in ha/etcd.h).
 *
 * One request = one POST with a fresh curl easy handle (no state shared
 * between threads but the atomic index of the endpoint that answered
 * last).  etcd_call() is the one loop that tries endpoints; every
 * operation builds its JSON body, calls it, and reads the answer.
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/log.h"
#include "ha/etcd.h"

struct etcd {
	char *et_ep[ETCD_ENDPOINTS_MAX];
	size_t et_nr;
	uint32_t et_timeout_ms;
	atomic_uint et_cur;          /* endpoint that answered last */
};

/* ------------------------------------------------------------ base64 */

static const char b64_abc[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t etcd_b64_enc(const void *in, size_t n, char *out)
{
	const unsigned char *p = in;
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = b64_abc[(v >> 18) & 63];
		out[o++] = b64_abc[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64_abc[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64_abc[v & 63] : '=';
	}
	out[o] = '\0';
	return o;
}

static int b64_val(char c)
{
	const char *p = c != '\0' ? strchr(b64_abc, c) : NULL;

	return p != NULL ? (int)(p - b64_abc) : -1;
}

long etcd_b64_dec(const char *s, size_t len, char *out)
{
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0, pad = 0;

	for (size_t i = 0; i < len; i++) {
		int v;

		if (s[i] == '=') {
			pad++;
			continue;
		}
		v = b64_val(s[i]);
		if (v < 0 || pad > 0)
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	if (pad > 2 || (len % 4 != 0 && pad > 0))
		return -EINVAL;
	out[o] = '\0';
	return (long)o;
}

/* A new json string of the base64 of n bytes, or NULL. */
static json_object *b64_json(const void *p, size_t n)
{
	char *buf = malloc(4 * ((n + 2) / 3) + 1);
	json_object *j;

	if (buf == NULL)
		return NULL;
	etcd_b64_enc(p, n, buf);
	j = json_object_new_string(buf);
	free(buf);
	return j;
}

/* --------------------------------------------------------- handle */

static pthread_once_t etcd_once = PTHREAD_ONCE_INIT;

static void etcd_global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Is ep "http://HOST:PORT" with a port 1..65535 and no path? */
static bool ep_valid(const char *ep)
{
	const char *h = ep + 7, *colon;
	char *end;
	unsigned long port;

	if (strncmp(ep, "http://", 7) != 0 || strlen(ep) > ETCD_URL_MAX)
		return false;
	if (*h == '[') {
		colon = strchr(h, ']');
		if (colon == NULL || colon[1] != ':')
			return false;
		colon++;
	} else {
		colon = strchr(h, ':');
		if (colon == NULL || colon == h)
			return false;
	}
	if (colon[1] < '0' || colon[1] > '9')
		return false;
	port = strtoul(colon + 1, &end, 10);
	return *end == '\0' && port >= 1 && port <= 65535;
}

int etcd_create(struct etcd **out, const char *const *endpoints, size_t nr,
		uint32_t timeout_ms)
{
	struct etcd *e;

	if (out == NULL || endpoints == NULL || nr == 0 ||
	    nr > ETCD_ENDPOINTS_MAX || timeout_ms == 0 || timeout_ms > 600000)
		return err_set(-EINVAL, "etcd: 1..%u endpoints and a timeout "
			       "of 1..600000 ms, got %zu and %u",
			       ETCD_ENDPOINTS_MAX, nr, timeout_ms);
	for (size_t i = 0; i < nr; i++)
		if (endpoints[i] == NULL || !ep_valid(endpoints[i]))
			return err_set(-EINVAL, "etcd: endpoint '%s' is not "
				       "http://HOST:PORT", endpoints[i] ?
				       endpoints[i] : "(null)");
	pthread_once(&etcd_once, etcd_global_init);
	e = calloc(1, sizeof *e);
	if (e == NULL)
		return err_set(-ENOMEM, "etcd: handle");
	for (size_t i = 0; i < nr; i++) {
		e->et_ep[i] = strdup(endpoints[i]);
		if (e->et_ep[i] == NULL) {
			etcd_destroy(e);
			return err_set(-ENOMEM, "etcd: handle");
		}
	}
	e->et_nr = nr;
	e->et_timeout_ms = timeout_ms;
	atomic_init(&e->et_cur, 0);
	*out = e;
	return 0;
}

void etcd_destroy(struct etcd *e)
{
	if (e == NULL)
		return;
	for (size_t i = 0; i < ETCD_ENDPOINTS_MAX; i++)
		free(e->et_ep[i]);
	free(e);
}

const char *etcd_endpoint(const struct etcd *e)
{
	return e->et_ep[atomic_load(&((struct etcd *)e)->et_cur) % e->et_nr];
}

void etcd_kv_fini(struct etcd_kv *kv)
{
	if (kv == NULL)
		return;
	free(kv->ek_key);
	free(kv->ek_value);
	memset(kv, 0, sizeof *kv);
}

/* ---------------------------------------------------- one request */

/* A growing response buffer (bounded: ETCD_VALUE_MAX * 2 + 64 KiB, a
 * base64 value with its JSON around it). */
struct resp {
	char *r_buf;
	size_t r_len, r_cap;
	bool r_big;
};

#define RESP_MAX ((size_t)ETCD_VALUE_MAX * 2 + (64u << 10))

static size_t resp_write(char *p, size_t sz, size_t n, void *arg)
{
	struct resp *r = arg;
	size_t len = sz * n;

	if (r->r_len + len + 1 > RESP_MAX) {
		r->r_big = true;
		return 0;
	}
	if (r->r_len + len + 1 > r->r_cap) {
		size_t cap = (r->r_len + len + 1) * 2;
		char *b = realloc(r->r_buf, cap < RESP_MAX ? cap : RESP_MAX);

		if (b == NULL)
			return 0;
		r->r_buf = b;
		r->r_cap = cap < RESP_MAX ? cap : RESP_MAX;
	}
	memcpy(r->r_buf + r->r_len, p, len);
	r->r_len += len;
	r->r_buf[r->r_len] = '\0';
	return len;
}

/* What one attempt came to. */
enum att {
	ATT_OK,        /* a JSON answer of 200 */
	ATT_REFUSED,   /* could not connect: next endpoint */
	ATT_TIMEOUT,   /* no answer in time: next endpoint */
	ATT_BUSY,      /* 5xx or "cannot serve now": next endpoint */
	ATT_REFUSAL,   /* a 4xx of etcd: final */
};

/* Does etcd's error say the member cannot serve now (try another)?  gRPC
 * codes 4 (deadline), 8 (exhausted), 14 (unavailable). */
static bool err_retryable(long http, json_object *body)
{
	json_object *c;
	int code = -1;

	if (http >= 500 || http == 429)
		return true;
	if (body != NULL && json_object_object_get_ex(body, "code", &c))
		code = json_object_get_int(c);
	return code == 4 || code == 8 || code == 14;
}

/* The message of etcd's error body, or "". */
static const char *err_text(json_object *body)
{
	json_object *m;

	if (body != NULL && (json_object_object_get_ex(body, "message", &m) ||
			     json_object_object_get_ex(body, "error", &m)) &&
	    json_object_is_type(m, json_type_string))
		return json_object_get_string(m);
	return "";
}

/* One POST of body to ep+path; *out the parsed JSON of a 200 (or of an
 * error answer, for the caller's message).  timeout_ms 0: none. */
static enum att etcd_post(const char *ep, const char *path, const char *body,
			  uint32_t timeout_ms, json_object **out, long *http,
			  char *why, size_t wsz)
{
	char url[ETCD_URL_MAX + 64];
	struct resp r = {0};
	struct curl_slist *hd = NULL;
	CURL *c = curl_easy_init();
	CURLcode cc;
	enum att a;

	*out = NULL;
	*http = 0;
	if (c == NULL) {
		snprintf(why, wsz, "curl_easy_init failed");
		return ATT_BUSY;
	}
	snprintf(url, sizeof url, "%s%s", ep, path);
	hd = curl_slist_append(hd, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, resp_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, http);
	curl_slist_free_all(hd);
	curl_easy_cleanup(c);
	if (cc == CURLE_COULDNT_CONNECT) {
		snprintf(why, wsz, "connection refused");
		a = ATT_REFUSED;
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(why, wsz, "no answer in %u ms", timeout_ms);
		a = ATT_TIMEOUT;
	} else if (cc != CURLE_OK) {
		snprintf(why, wsz, "%s%s", curl_easy_strerror(cc),
			 r.r_big ? " (answer too large)" : "");
		a = ATT_BUSY;
	} else {
		*out = r.r_buf != NULL ? json_tokener_parse(r.r_buf) : NULL;
		if (*http == 200 && *out != NULL &&
		    json_object_is_type(*out, json_type_object)) {
			a = ATT_OK;
		} else {
			snprintf(why, wsz, "HTTP %ld: %s", *http, *out != NULL ?
				 err_text(*out) : "no JSON in the answer");
			a = err_retryable(*http, *out) || *out == NULL ?
			    ATT_BUSY : ATT_REFUSAL;
		}
	}
	free(r.r_buf);
	return a;
}

static void pause_ms(uint32_t ms)
{
	usleep(ms * 1000u);
}

/*
 * POST req to path, trying the endpoints from the one that answered last
 * (ETCD_TRIES_MAX attempts).  Returns 0 with *out (the caller puts it), or
 * an error naming what and key; a 404 of etcd is -ENOENT.
 */
static int etcd_call(struct etcd *e, const char *path, json_object *req,
		     const char *what, const char *key, json_object **out)
{
	const char *body = json_object_to_json_string_ext(req,
							  JSON_C_TO_STRING_PLAIN);
	unsigned cur = atomic_load(&e->et_cur);
	char why[256] = "";
	enum att a = ATT_REFUSED;
	long http = 0;
	int rc;

	*out = NULL;
	for (unsigned t = 0; t < ETCD_TRIES_MAX; t++) {
		unsigned i = (cur + t) % (unsigned)e->et_nr;

		if (t > 0 && i == cur % e->et_nr)
			pause_ms(ETCD_RETRY_PAUSE_MS);
		json_object_put(*out);
		a = etcd_post(e->et_ep[i], path, body, e->et_timeout_ms, out,
			      &http, why, sizeof why);
		if (a == ATT_OK || a == ATT_REFUSAL) {
			atomic_store(&e->et_cur, i);
			break;
		}
		LOG_INFO("etcd %s: %s %s: %s", e->et_ep[i], what, key, why);
	}
	if (a == ATT_OK)
		return 0;
	rc = a == ATT_REFUSED ? -ECONNREFUSED : a == ATT_TIMEOUT ? -ETIMEDOUT :
	     a == ATT_BUSY ? -EIO : http == 404 ? -ENOENT : -EINVAL;
	rc = err_set(rc, "etcd %s: %s '%s': %s%s", e->et_ep[
		     atomic_load(&e->et_cur) % e->et_nr], what, key, why,
		     a == ATT_REFUSAL ? "" : " (every endpoint tried)");
	json_object_put(*out);
	*out = NULL;
	return rc;
}

/* An int64 field of o (etcd writes them as strings), or 0. */
static int64_t j_i64(json_object *o, const char *name)
{
	json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, name, &v))
		return 0;
	if (json_object_is_type(v, json_type_string))
		return strtoll(json_object_get_string(v), NULL, 10);
	return json_object_get_int64(v);
}

/* The header's revision of an answer. */
static int64_t j_rev(json_object *o)
{
	json_object *h;

	return json_object_object_get_ex(o, "header", &h) ?
	       j_i64(h, "revision") : 0;
}

/* A new json string of an int64 (the gateway's form). */
static json_object *j_s64(int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof buf, "%" PRId64, v);
	return json_object_new_string(buf);
}

/* Decode the base64 field name of o into *out (malloc'd, NUL-terminated;
 * absent: ""), its length into *len.  0, -EIO (not base64), -E2BIG. */
static int j_b64(json_object *o, const char *name, char **out, size_t *len)
{
	json_object *v;
	const char *s = "";
	size_t n;
	long got;

	if (json_object_object_get_ex(o, name, &v))
		s = json_object_get_string(v);
	n = strlen(s);
	if (n / 4 * 3 > ETCD_VALUE_MAX + 3)
		return -E2BIG;
	*out = malloc(n / 4 * 3 + 4);
	if (*out == NULL)
		return -ENOMEM;
	got = etcd_b64_dec(s, n, *out);
	if (got < 0) {
		free(*out);
		*out = NULL;
		return -EIO;
	}
	*len = (size_t)got;
	return 0;
}

/* Fill kv from etcd's JSON of a key-value. */
static int kv_from(json_object *o, struct etcd_kv *kv)
{
	int rc;

	memset(kv, 0, sizeof *kv);
	rc = j_b64(o, "key", &kv->ek_key, &kv->ek_key_len);
	if (rc == 0)
		rc = j_b64(o, "value", &kv->ek_value, &kv->ek_len);
	if (rc != 0) {
		etcd_kv_fini(kv);
		return rc;
	}
	kv->ek_create_rev = j_i64(o, "create_revision");
	kv->ek_mod_rev = j_i64(o, "mod_revision");
	kv->ek_version = j_i64(o, "version");
	kv->ek_lease = j_i64(o, "lease");
	return 0;
}

/* Is key usable (non-NULL, 1..ETCD_KEY_MAX bytes)? */
static int key_check(const char *key, const char *what)
{
	if (key == NULL || key[0] == '\0' || strlen(key) > ETCD_KEY_MAX)
		return err_set(-EINVAL, "etcd: %s: the key must be 1..%u "
			       "bytes", what, ETCD_KEY_MAX);
	return 0;
}

/* The end of the range of every key starting with prefix (the prefix
 * with its last byte incremented, bytes 0xff dropped), base64. */
static json_object *prefix_end(const char *prefix)
{
	char buf[ETCD_KEY_MAX + 1];
	size_t n = strlen(prefix);

	memcpy(buf, prefix, n);
	while (n > 0 && (unsigned char)buf[n - 1] == 0xff)
		n--;
	if (n == 0)
		return b64_json("\0", 1); /* every key */
	buf[n - 1]++;
	return b64_json(buf, n);
}

/* A request object {"key": b64(key)} (+ range_end when prefix). */
static json_object *key_req(const char *key, bool prefix)
{
	json_object *r = json_object_new_object();

	json_object_object_add(r, "key", b64_json(key, strlen(key)));
	if (prefix)
		json_object_object_add(r, "range_end", prefix_end(key));
	return r;
}

/* ------------------------------------------------------- kv */

int etcd_get(struct etcd *e, const char *key, struct etcd_kv *kv,
	     int64_t *rev)
{
	json_object *req, *ans = NULL, *kvs;
	int rc;

	if (kv != NULL)
		memset(kv, 0, sizeof *kv);
	if (e == NULL || kv == NULL)
		return err_set(-EINVAL, "etcd_get: NULL argument");
	rc = key_check(key, "get");
	if (rc != 0)
		return rc;
	req = key_req(key, false);
	rc = etcd_call(e, "/v3/kv/range", req, "get", key, &ans);
	json_object_put(req);
	if (rc != 0)
		return rc;
	if (rev != NULL)
		*rev = j_rev(ans);
	if (!json_object_object_get_ex(ans, "kvs", &kvs) ||
	    json_object_array_length(kvs) == 0) {
		rc = err_set(-ENOENT, "etcd %s: get '%s': no such key",
			     etcd_endpoint(e), key);
	} else {
		rc = kv_from(json_object_array_get_idx(kvs, 0), kv);
		if (rc != 0)
			rc = err_set(rc, "etcd %s: get '%s': %s",
				     etcd_endpoint(e), key, rc == -E2BIG ?
				     "value too large" : "bad base64");
	}
	json_object_put(ans);
	return rc;
}

int etcd_get_prefix(struct etcd *e, const char *prefix, uint32_t limit,
		    etcd_kv_cb cb, void *arg, bool *more, int64_t *rev)
{
	json_object *req, *ans = NULL, *kvs, *m;
	struct etcd_kv kv;
	int rc;

	if (e == NULL || cb == NULL)
		return err_set(-EINVAL, "etcd_get_prefix: NULL argument");
	rc = key_check(prefix, "get prefix");
	if (rc != 0)
		return rc;
	if (limit == 0 || limit > ETCD_RANGE_MAX)
		limit = ETCD_RANGE_MAX;
	req = key_req(prefix, true);
	json_object_object_add(req, "limit", j_s64(limit));
	rc = etcd_call(e, "/v3/kv/range", req, "get prefix", prefix, &ans);
	json_object_put(req);
	if (rc != 0)
		return rc;
	if (rev != NULL)
		*rev = j_rev(ans);
	if (more != NULL)
		*more = json_object_object_get_ex(ans, "more", &m) &&
			json_object_get_boolean(m);
	if (!json_object_object_get_ex(ans, "kvs", &kvs))
		kvs = NULL;
	for (size_t i = 0; kvs != NULL && rc == 0 &&
	     i < json_object_array_length(kvs); i++) {
		rc = kv_from(json_object_array_get_idx(kvs, i), &kv);
		if (rc != 0) {
			rc = err_set(rc, "etcd %s: get prefix '%s': a value "
				     "is %s", etcd_endpoint(e), prefix,
				     rc == -E2BIG ? "too large" : "not base64");
			break;
		}
		rc = cb(&kv, arg);
		etcd_kv_fini(&kv);
	}
	json_object_put(ans);
	return rc;
}

/* A put request object. */
static json_object *put_req(const char *key, const void *value, size_t len,
			    int64_t lease)
{
	json_object *r = key_req(key, false);

	json_object_object_add(r, "value", b64_json(value, len));
	if (lease != 0)
		json_object_object_add(r, "lease", j_s64(lease));
	return r;
}

int etcd_put(struct etcd *e, const char *key, const void *value,
	     size_t len, int64_t lease, int64_t *rev)
{
	json_object *req, *ans = NULL;
	int rc;

	if (e == NULL || (value == NULL && len > 0))
		return err_set(-EINVAL, "etcd_put: NULL argument");
	rc = key_check(key, "put");
	if (rc == 0 && len > ETCD_VALUE_MAX)
		rc = err_set(-EINVAL, "etcd: put '%s': value of %zu bytes > "
			     "%u", key, len, ETCD_VALUE_MAX);
	if (rc != 0)
		return rc;
	req = put_req(key, value != NULL ? value : "", len, lease);
	rc = etcd_call(e, "/v3/kv/put", req, "put", key, &ans);
	json_object_put(req);
	if (rc == 0 && rev != NULL)
		*rev = j_rev(ans);
	json_object_put(ans);
	return rc;
}

int etcd_delete(struct etcd *e, const char *key, bool prefix,
		uint64_t *deleted)
{
	json_object *req, *ans = NULL;
	int rc;

	if (e == NULL)
		return err_set(-EINVAL, "etcd_delete: NULL argument");
	rc = key_check(key, "delete");
	if (rc != 0)
		return rc;
	req = key_req(key, prefix);
	rc = etcd_call(e, "/v3/kv/deleterange", req, "delete", key, &ans);
	json_object_put(req);
	if (rc == 0 && deleted != NULL)
		*deleted = (uint64_t)j_i64(ans, "deleted");
	json_object_put(ans);
	return rc;
}

/* The JSON of one compare. */
static json_object *cmp_json(const struct etcd_cmp *c)
{
	json_object *r = json_object_new_object();

	json_object_object_add(r, "key", b64_json(c->ec_key,
						  strlen(c->ec_key)));
	json_object_object_add(r, "result", json_object_new_string("EQUAL"));
	if (c->ec_absent) {
		json_object_object_add(r, "target",
				       json_object_new_string("CREATE"));
		json_object_object_add(r, "create_revision", j_s64(0));
	} else {
		json_object_object_add(r, "target",
				       json_object_new_string("MOD"));
		json_object_object_add(r, "mod_revision",
				       j_s64(c->ec_mod_rev));
	}
	return r;
}

/* The JSON of one operation. */
static json_object *op_json(const struct etcd_op *o)
{
	json_object *r = json_object_new_object();

	if (o->eo_delete)
		json_object_object_add(r, "request_delete_range",
				       key_req(o->eo_key, o->eo_prefix));
	else
		json_object_object_add(r, "request_put",
				       put_req(o->eo_key, o->eo_value != NULL ?
					       o->eo_value : "", o->eo_len,
					       o->eo_lease));
	return r;
}

/* Check a transaction's arguments. */
static int txn_check(const struct etcd_cmp *cmp, size_t nr_cmp,
		     const struct etcd_op *ops, size_t nr_ops)
{
	int rc = 0;

	if (nr_cmp > ETCD_TXN_MAX || nr_ops > ETCD_TXN_MAX ||
	    (nr_cmp > 0 && cmp == NULL) || (nr_ops > 0 && ops == NULL))
		return err_set(-EINVAL, "etcd: txn: at most %u compares and "
			       "%u operations", ETCD_TXN_MAX, ETCD_TXN_MAX);
	for (size_t i = 0; rc == 0 && i < nr_cmp; i++)
		rc = key_check(cmp[i].ec_key, "txn compare");
	for (size_t i = 0; rc == 0 && i < nr_ops; i++) {
		rc = key_check(ops[i].eo_key, "txn operation");
		if (rc == 0 && ops[i].eo_len > ETCD_VALUE_MAX)
			rc = err_set(-EINVAL, "etcd: txn put '%s': value of "
				     "%zu bytes > %u", ops[i].eo_key,
				     ops[i].eo_len, ETCD_VALUE_MAX);
	}
	return rc;
}

int etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t nr_cmp,
	     const struct etcd_op *ops, size_t nr_ops, bool *succeeded,
	     int64_t *rev)
{
	json_object *req, *ca, *oa, *ans = NULL, *s;
	const char *key;
	int rc;

	if (succeeded != NULL)
		*succeeded = false;
	if (e == NULL || succeeded == NULL)
		return err_set(-EINVAL, "etcd_txn: NULL argument");
	rc = txn_check(cmp, nr_cmp, ops, nr_ops);
	if (rc != 0)
		return rc;
	key = nr_cmp > 0 ? cmp[0].ec_key : nr_ops > 0 ? ops[0].eo_key : "";
	req = json_object_new_object();
	ca = json_object_new_array();
	oa = json_object_new_array();
	for (size_t i = 0; i < nr_cmp; i++)
		json_object_array_add(ca, cmp_json(&cmp[i]));
	for (size_t i = 0; i < nr_ops; i++)
		json_object_array_add(oa, op_json(&ops[i]));
	json_object_object_add(req, "compare", ca);
	json_object_object_add(req, "success", oa);
	rc = etcd_call(e, "/v3/kv/txn", req, "txn on", key, &ans);
	json_object_put(req);
	if (rc == 0) {
		*succeeded = json_object_object_get_ex(ans, "succeeded", &s) &&
			     json_object_get_boolean(s);
		if (rev != NULL)
			*rev = j_rev(ans);
	}
	json_object_put(ans);
	return rc;
}

/* ---------------------------------------------------- leases */

int etcd_lease_grant(struct etcd *e, uint32_t ttl_s, int64_t *id,
		     uint32_t *granted_s)
{
	json_object *req, *ans = NULL;
	int rc;

	if (e == NULL || id == NULL || ttl_s == 0 || ttl_s > ETCD_TTL_MAX)
		return err_set(-EINVAL, "etcd: lease grant: a TTL of 1..%u s",
			       ETCD_TTL_MAX);
	req = json_object_new_object();
	json_object_object_add(req, "TTL", json_object_new_int64(ttl_s));
	rc = etcd_call(e, "/v3/lease/grant", req, "lease grant", "-", &ans);
	json_object_put(req);
	if (rc == 0) {
		*id = j_i64(ans, "ID");
		if (granted_s != NULL)
			*granted_s = (uint32_t)j_i64(ans, "TTL");
		if (*id == 0)
			rc = err_set(-EIO, "etcd %s: lease grant: no ID in "
				     "the answer", etcd_endpoint(e));
	}
	json_object_put(ans);
	return rc;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, uint32_t *ttl_s)
{
	json_object *req, *ans = NULL, *res;
	char what[32];
	int64_t ttl;
	int rc;

	if (e == NULL || id == 0)
		return err_set(-EINVAL, "etcd: lease keepalive: no lease");
	snprintf(what, sizeof what, "%" PRId64, id);
	req = json_object_new_object();
	json_object_object_add(req, "ID", j_s64(id));
	rc = etcd_call(e, "/v3/lease/keepalive", req, "lease keepalive",
		       what, &ans);
	json_object_put(req);
	if (rc == 0) {
		if (!json_object_object_get_ex(ans, "result", &res))
			res = NULL;
		ttl = j_i64(res, "TTL");
		if (res == NULL || ttl <= 0)
			rc = err_set(-ENOENT, "etcd %s: lease %s: expired or "
				     "revoked", etcd_endpoint(e), what);
		else if (ttl_s != NULL)
			*ttl_s = (uint32_t)ttl;
	}
	json_object_put(ans);
	return rc;
}

int etcd_lease_revoke(struct etcd *e, int64_t id)
{
	json_object *req, *ans = NULL;
	char what[32];
	int rc;

	if (e == NULL || id == 0)
		return err_set(-EINVAL, "etcd: lease revoke: no lease");
	snprintf(what, sizeof what, "%" PRId64, id);
	req = json_object_new_object();
	json_object_object_add(req, "ID", j_s64(id));
	rc = etcd_call(e, "/v3/lease/revoke", req, "lease revoke", what, &ans);
	json_object_put(req);
	json_object_put(ans);
	return rc;
}

/* ------------------------------------------------------ watch */

/* The state of a watch across its streams. */
struct wst {
	struct etcd *w_e;
	const char *w_key;
	etcd_watch_cb w_cb;
	void *w_arg;
	const atomic_bool *w_stop;
	json_tokener *w_tok;
	int64_t w_next;      /* the revision to watch from on a re-open */
	int w_rc;            /* cb's nonzero, or an error of the stream */
	bool w_end;          /* cb or a cancel ended the watch */
	bool w_moved;        /* this stream was created or delivered */
	int64_t w_compact;   /* compact_revision of a cancel */
	char w_why[256];
};

/* Deliver the events of one watch message.  Returns 0 or stops. */
static int wst_events(struct wst *w, json_object *res)
{
	json_object *evs, *ev, *t, *kvj;
	struct etcd_kv kv;
	enum etcd_ev_type type;
	int rc;

	if (!json_object_object_get_ex(res, "events", &evs))
		return 0;
	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		ev = json_object_array_get_idx(evs, i);
		type = json_object_object_get_ex(ev, "type", &t) &&
		       strcmp(json_object_get_string(t), "DELETE") == 0 ?
		       ETCD_EV_DELETE : ETCD_EV_PUT;
		if (!json_object_object_get_ex(ev, "kv", &kvj) ||
		    kv_from(kvj, &kv) != 0) {
			snprintf(w->w_why, sizeof w->w_why, "a bad event");
			return -EIO;
		}
		if (kv.ek_mod_rev >= w->w_next)
			w->w_next = kv.ek_mod_rev + 1;
		rc = w->w_cb(type, &kv, w->w_arg);
		etcd_kv_fini(&kv);
		if (rc != 0) {
			w->w_rc = rc;
			w->w_end = true;
			return rc;
		}
	}
	return 0;
}

/* One message of the stream: {"result": {...}} or {"error": {...}}. */
static int wst_msg(struct wst *w, json_object *o)
{
	json_object *res, *c;

	if (!json_object_object_get_ex(o, "result", &res)) {
		snprintf(w->w_why, sizeof w->w_why, "watch error: %s",
			 json_object_object_get_ex(o, "error", &c) ?
			 err_text(c) : "no result");
		return -EIO;
	}
	if (json_object_object_get_ex(res, "canceled", &c) &&
	    json_object_get_boolean(c)) {
		w->w_compact = j_i64(res, "compact_revision");
		snprintf(w->w_why, sizeof w->w_why, "watch canceled%s%s",
			 w->w_compact ? ": revision compacted" : "",
			 json_object_object_get_ex(res, "cancel_reason", &c) ?
			 json_object_get_string(c) : "");
		w->w_end = true;
		w->w_rc = w->w_compact ? -ERANGE : -EIO;
		return w->w_rc;
	}
	if (json_object_object_get_ex(res, "created", &c) &&
	    json_object_get_boolean(c) && w->w_next == 0)
		w->w_next = j_rev(res) + 1;
	w->w_moved = true;
	return wst_events(w, res);
}

/* curl's write callback of the stream: parse whole JSON messages. */
static size_t wst_write(char *p, size_t sz, size_t n, void *arg)
{
	struct wst *w = arg;
	size_t len = sz * n, off = 0;

	while (off < len) {
		json_object *o;
		enum json_tokener_error te;

		while (off < len && (p[off] == '\n' || p[off] == '\r' ||
				     p[off] == ' '))
			off++;
		if (off == len)
			break;
		o = json_tokener_parse_ex(w->w_tok, p + off, (int)(len - off));
		te = json_tokener_get_error(w->w_tok);
		if (o == NULL && te == json_tokener_continue)
			break;
		if (o == NULL) {
			snprintf(w->w_why, sizeof w->w_why, "bad JSON: %s",
				 json_tokener_error_desc(te));
			return 0;
		}
		off += json_tokener_get_parse_end(w->w_tok);
		json_tokener_reset(w->w_tok);
		if (wst_msg(w, o) != 0) {
			json_object_put(o);
			return 0;
		}
		json_object_put(o);
	}
	return len;
}

/* curl's progress callback: stop when asked. */
static int wst_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
			curl_off_t d)
{
	struct wst *w = arg;

	return w->w_stop != NULL && atomic_load(w->w_stop);
}

/* One stream on endpoint ep; returns its curl code. */
static CURLcode wst_stream(struct wst *w, const char *ep, bool prefix)
{
	char url[ETCD_URL_MAX + 16];
	json_object *req = json_object_new_object(), *cr;
	struct curl_slist *hd = NULL;
	CURL *c = curl_easy_init();
	CURLcode cc;

	cr = key_req(w->w_key, prefix);
	if (w->w_next > 0)
		json_object_object_add(cr, "start_revision", j_s64(w->w_next));
	json_object_object_add(req, "create_request", cr);
	if (c == NULL) {
		json_object_put(req);
		return CURLE_OUT_OF_MEMORY;
	}
	snprintf(url, sizeof url, "%s/v3/watch", ep);
	hd = curl_slist_append(hd, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS,
			 json_object_to_json_string_ext(req,
							JSON_C_TO_STRING_PLAIN));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wst_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, wst_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, w);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)w->w_e->et_timeout_ms);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 5L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 2L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	w->w_moved = false;
	json_tokener_reset(w->w_tok);
	cc = curl_easy_perform(c);
	curl_slist_free_all(hd);
	curl_easy_cleanup(c);
	json_object_put(req);
	return cc;
}

int etcd_watch(struct etcd *e, const char *key, bool prefix,
	       int64_t from_rev, etcd_watch_cb cb, void *arg,
	       const atomic_bool *stop, int64_t *last_rev)
{
	struct wst w = {.w_e = e, .w_key = key, .w_cb = cb, .w_arg = arg,
			.w_stop = stop, .w_next = from_rev > 0 ? from_rev : 0};
	unsigned fails = 0, i;
	CURLcode cc = CURLE_OK;
	int rc;

	if (e == NULL || cb == NULL)
		return err_set(-EINVAL, "etcd_watch: NULL argument");
	rc = key_check(key, "watch");
	if (rc != 0)
		return rc;
	w.w_tok = json_tokener_new();
	if (w.w_tok == NULL)
		return err_set(-ENOMEM, "etcd: watch '%s'", key);
	i = atomic_load(&e->et_cur) % (unsigned)e->et_nr;
	while (fails < ETCD_TRIES_MAX) {
		if (stop != NULL && atomic_load(stop))
			break;
		w.w_why[0] = '\0';
		cc = wst_stream(&w, e->et_ep[i], prefix);
		if (w.w_end || (stop != NULL && atomic_load(stop)))
			break;
		fails = w.w_moved ? 0 : fails + 1;
		LOG_INFO("etcd %s: watch '%s' ended (%s%s), re-opened from "
			 "revision %" PRId64, e->et_ep[i], key,
			 curl_easy_strerror(cc), w.w_why, w.w_next);
		i = (i + 1) % (unsigned)e->et_nr;
		if (i == atomic_load(&e->et_cur) % e->et_nr || e->et_nr == 1)
			pause_ms(ETCD_RETRY_PAUSE_MS);
	}
	json_tokener_free(w.w_tok);
	if (last_rev != NULL)
		*last_rev = w.w_compact ? w.w_compact - 1 :
			    (w.w_next > 0 ? w.w_next - 1 : 0);
	if (w.w_end && w.w_rc < 0)
		return err_set(w.w_rc, "etcd %s: watch '%s': %s",
			       e->et_ep[i], key, w.w_why);
	if (w.w_end || (stop != NULL && atomic_load(stop)))
		return w.w_rc;
	return err_set(cc == CURLE_COULDNT_CONNECT ? -ECONNREFUSED :
		       cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO,
		       "etcd %s: watch '%s': %s %s (every endpoint tried)",
		       e->et_ep[i], key, curl_easy_strerror(cc), w.w_why);
}
