/*
 * s3_auth.c — users and AWS signatures (V4 and V2) for the S3 gateway.
 *
 * Users live in a credentials file (lines "NAME ACCESS_KEY SECRET_KEY"),
 * written by `strata s3 user add|rm` and re-read by the gateway when its
 * modification time changes, so users are added without a restart.
 *
 * Both forms of SigV4 are checked: the Authorization header (payload hash
 * from x-amz-content-sha256, checked against the body by the caller) and
 * presigned URLs (X-Amz-* query parameters, UNSIGNED-PAYLOAD, expiry).
 * The region of the credential scope is taken as the client sends it.
 * SigV2 too (HMAC-SHA1): presigned URLs (AWSAccessKeyId, Signature,
 * Expires), which boto3, aws cli 1.x and s3cmd make by default, and the
 * "Authorization: AWS AKEY:SIG" header.  A request with no signature is
 * anonymous, let through only where s3_anon_ok() says the bucket allows;
 * a CORS preflight (OPTIONS) is never authenticated, as at AWS: a
 * signature it carries is ignored.  Refusals are 403 (-EACCES) but for a
 * malformed request (-EINVAL, 400); an X-Amz-Expires out of 1..604800 is
 * 403 AuthorizationQueryParametersError, as at AWS.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "gateways/s3/s3.h"

static pthread_rwlock_t cr_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct s3_user cr_users[USERS_MAX];
static uint32_t cr_nr;
static struct timespec cr_mtime;
static char cr_path[256];

int s3_creds_load(const char *path)
{
	struct stat st;
	char line[512];
	uint32_t n = 0;
	FILE *f;

	if (path != NULL)
		snprintf(cr_path, sizeof cr_path, "%s", path);
	if (stat(cr_path, &st) != 0)
		return -errno;
	if (st.st_mtim.tv_sec == cr_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == cr_mtime.tv_nsec && cr_nr > 0)
		return 0;
	f = fopen(cr_path, "r");
	if (f == NULL)
		return -errno;
	pthread_rwlock_wrlock(&cr_lock);
	while (fgets(line, sizeof line, f) != NULL && n < USERS_MAX) {
		struct s3_user *u = &cr_users[n];

		if (line[0] == '#')
			continue;
		if (sscanf(line, "%63s %63s %127s", u->u_name, u->u_akey,
			   u->u_skey) == 3)
			n++;
	}
	cr_nr = n;
	cr_mtime = st.st_mtim;
	pthread_rwlock_unlock(&cr_lock);
	fclose(f);
	return 0;
}

int s3_user_find(const char *akey, struct s3_user *u)
{
	uint32_t k;
	int rc = -ENOENT;

	s3_creds_load(NULL);
	pthread_rwlock_rdlock(&cr_lock);
	for (k = 0; k < cr_nr; k++)
		if (strcmp(cr_users[k].u_akey, akey) == 0) {
			*u = cr_users[k];
			rc = 0;
			break;
		}
	pthread_rwlock_unlock(&cr_lock);
	return rc;
}

int s3_user_named(const char *name, struct s3_user *u)
{
	uint32_t k;
	int rc = -ENOENT;

	s3_creds_load(NULL);
	pthread_rwlock_rdlock(&cr_lock);
	for (k = 0; k < cr_nr; k++)
		if (name == NULL || name[0] == 0 ||
		    strcmp(cr_users[k].u_name, name) == 0) {
			*u = cr_users[k];
			rc = 0;
			break;
		}
	pthread_rwlock_unlock(&cr_lock);
	return rc;
}

/* ---------------------------------------------------------------- SigV4 */

/*
 * SHA-256 through a digest fetched once: OpenSSL 3's one-shot SHA256() and
 * HMAC() fetch their algorithm from the provider at every call, which
 * cost more than hashing a request's few hundred bytes (callgrind: ~38,000
 * and ~25,000 instructions per call).  NULL fetch: the legacy
 * EVP_sha256(), as before.
 */
static EVP_MD *sha_md;
static pthread_once_t sha_once = PTHREAD_ONCE_INIT;

static void sha_fetch(void)
{
	sha_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *sha_get(void)
{
	pthread_once(&sha_once, sha_fetch);
	return sha_md != NULL ? sha_md : EVP_sha256();
}

static void sha256(const void *p, size_t n, uint8_t out[32])
{
	unsigned int ol = 32;

	if (!EVP_Digest(p, n, out, &ol, sha_get(), NULL))
		SHA256(p, n, out);
}

/* HMAC-SHA256 (RFC 2104) of msg under key, with the fetched digest. */
static void hmac(const void *key, size_t kl, const char *msg, size_t ml,
		 uint8_t out[32])
{
	uint8_t k[64] = {0}, pad[64], inner[32];
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned int ol = 32;
	bool ok;
	int i;

	if (kl > sizeof k)
		sha256(key, kl, k);
	else
		memcpy(k, key, kl);
	for (i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	ok = c != NULL && EVP_DigestInit_ex(c, sha_get(), NULL) &&
	     EVP_DigestUpdate(c, pad, 64) && EVP_DigestUpdate(c, msg, ml) &&
	     EVP_DigestFinal_ex(c, inner, &ol);
	for (i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	ok = ok && EVP_DigestInit_ex(c, sha_get(), NULL) &&
	     EVP_DigestUpdate(c, pad, 64) && EVP_DigestUpdate(c, inner, 32) &&
	     EVP_DigestFinal_ex(c, out, &ol);
	EVP_MD_CTX_free(c);
	if (!ok) /* out of memory in OpenSSL: its one-shot */
		HMAC(EVP_sha256(), key, (int)kl, (const unsigned char *)msg,
		     ml, out, &ol);
}

/* The canonical query string: every parameter but skip, names and values
 * strictly encoded, sorted by name then value.  Items are "name=value":
 * names are compared on their own ("select" before "select-type", though
 * '-' sorts before '='), then values. */
static int qcmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t xn = strcspn(x, "="), yn = strcspn(y, "=");
	int c = memcmp(x, y, xn < yn ? xn : yn);

	if (c != 0)
		return c;
	if (xn != yn)
		return xn < yn ? -1 : 1;
	return strcmp(x + xn, y + yn);
}

static void canon_query(struct s3_req *rq, const char *skip,
			struct s3_buf *out)
{
	char *items[S3_QMAX];
	uint32_t k, n = 0;

	for (k = 0; k < rq->rq_nq; k++) {
		struct s3_buf b = {0};

		if (skip != NULL && strcmp(rq->rq_qn[k], skip) == 0)
			continue;
		s3_urlenc(&b, rq->rq_qn[k], strlen(rq->rq_qn[k]), false);
		s3_buf_add(&b, "=", 1);
		s3_urlenc(&b, rq->rq_qv[k], strlen(rq->rq_qv[k]), false);
		items[n++] = b.b_data ? b.b_data : strdup("=");
	}
	qsort(items, n, sizeof items[0], qcmp);
	for (k = 0; k < n; k++) {
		if (k > 0)
			s3_buf_add(out, "&", 1);
		if (items[k] != NULL)
			s3_buf_str(out, items[k]);
		free(items[k]);
	}
}

/* Trim and collapse inner runs of spaces of a header value. */
static void canon_value(struct s3_buf *b, const char *v)
{
	bool sp = false;

	while (*v == ' ' || *v == '\t')
		v++;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t') {
			sp = true;
			continue;
		}
		if (sp)
			s3_buf_add(b, " ", 1);
		sp = false;
		s3_buf_add(b, v, 1);
	}
}

/* Build the string to sign; false when a signed header is missing. */
static bool string_to_sign(struct s3_req *rq, const char *signed_hdrs,
			   const char *amzdate, const char *scope,
			   const char *payload, const char *skipq,
			   struct s3_buf *sts)
{
	struct s3_buf cr = {0};
	uint8_t h[32];
	char hex[65];
	const char *p = signed_hdrs;
	bool ok = true;

	s3_buf_str(&cr, rq->rq_method);
	s3_buf_add(&cr, "\n", 1);
	s3_urlenc(&cr, rq->rq_path, rq->rq_path_len, true);
	s3_buf_add(&cr, "\n", 1);
	canon_query(rq, skipq, &cr);
	s3_buf_add(&cr, "\n", 1);
	while (*p) {
		const char *e = strchr(p, ';');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char name[128];
		const char *v;

		if (n == 0 || n >= sizeof name) {
			ok = false;
			break;
		}
		memcpy(name, p, n);
		name[n] = 0;
		v = s3_hdr(rq, name);
		if (v == NULL) {
			ok = false;
			break;
		}
		s3_buf_add(&cr, name, n);
		s3_buf_add(&cr, ":", 1);
		canon_value(&cr, v);
		s3_buf_add(&cr, "\n", 1);
		p += n + (e ? 1 : 0);
	}
	s3_buf_printf(&cr, "\n%s\n%s", signed_hdrs, payload);
	sha256(cr.b_data ? cr.b_data : "", cr.b_len, h);
	s3_hex(h, 32, hex);
	s3_buf_printf(sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amzdate, scope, hex);
	if (cr.b_oom || sts->b_oom)
		ok = false;
	s3_buf_fini(&cr);
	return ok;
}

/*
 * Signing keys: HMAC chain of the secret over DATE, REGION, SERVICE and
 * "aws4_request" (4 HMACs), the same for every request of one key on one
 * day.  The last SK_CACHE_NR derived are kept (keyed by secret and scope:
 * a changed secret never matches), so a request costs one HMAC, not five
 * (each HMAC() of OpenSSL 3 fetches its algorithm: ~25,000 instructions,
 * callgrind).  Replaced round-robin.
 */

struct sk_entry {
	char se_secret[128];
	char se_scope[96];
	uint8_t se_key[32];
	bool se_used;
};

static pthread_mutex_t sk_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sk_entry sk_cache[SK_CACHE_NR];
static uint32_t sk_next;

static void sign_key_derive(const char *secret, const char *scope,
			    uint8_t k[32])
{
	char k0[160], part[64];
	const char *p = scope;
	int i;

	snprintf(k0, sizeof k0, "AWS4%s", secret);
	for (i = 0; i < 4; i++) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		if (n >= sizeof part)
			n = sizeof part - 1;
		memcpy(part, p, n);
		part[n] = 0;
		if (i == 0)
			hmac(k0, strlen(k0), part, n, k);
		else
			hmac(k, 32, part, n, k);
		p += n + (e ? 1 : 0);
	}
}

/* The SigV4 signing key of secret and scope "DATE/REGION/SERVICE/aws4_request",
 * from the cache when it was derived before. */
static void signing_key(const char *secret, const char *scope, uint8_t k[32])
{
	bool fits = strlen(secret) < sizeof sk_cache[0].se_secret &&
		    strlen(scope) < sizeof sk_cache[0].se_scope;
	struct sk_entry *e;
	uint32_t i;

	if (fits) {
		pthread_mutex_lock(&sk_lock);
		for (i = 0; i < SK_CACHE_NR; i++) {
			e = &sk_cache[i];
			if (e->se_used && strcmp(e->se_scope, scope) == 0 &&
			    strcmp(e->se_secret, secret) == 0) {
				memcpy(k, e->se_key, 32);
				pthread_mutex_unlock(&sk_lock);
				return;
			}
		}
		pthread_mutex_unlock(&sk_lock);
	}
	sign_key_derive(secret, scope, k);
	if (!fits)
		return;
	pthread_mutex_lock(&sk_lock);
	e = &sk_cache[sk_next++ % SK_CACHE_NR];
	strcpy(e->se_secret, secret);
	strcpy(e->se_scope, scope);
	memcpy(e->se_key, k, 32);
	e->se_used = true;
	pthread_mutex_unlock(&sk_lock);
}

/* Signature (hex) of sts with signing key k. */
static void sign_with(const uint8_t k[32], const char *sts, char hex[65])
{
	uint8_t h[32];

	hmac(k, 32, sts, strlen(sts), h);
	s3_hex(h, 32, hex);
}

/* Credential "AKID/DATE/REGION/s3/aws4_request": akey and scope out. */
static bool parse_cred(const char *c, size_t n, char *akey, size_t al,
		       char *scope, size_t sl)
{
	const char *slash = memchr(c, '/', n);
	size_t an;

	if (slash == NULL)
		return false;
	an = (size_t)(slash - c);
	if (an == 0 || an >= al || n - an - 1 >= sl || n - an - 1 < 10)
		return false;
	memcpy(akey, c, an);
	akey[an] = 0;
	memcpy(scope, slash + 1, n - an - 1);
	scope[n - an - 1] = 0;
	return strchr(scope, '/') != NULL;
}

/* One field "Name=value" of the Authorization header. */
static bool auth_field(const char *h, const char *name, char *out, size_t ol)
{
	const char *p = strstr(h, name);
	size_t n;

	if (p == NULL)
		return false;
	p += strlen(name);
	n = strcspn(p, ", ");
	if (n == 0 || n >= ol)
		return false;
	memcpy(out, p, n);
	out[n] = 0;
	return true;
}

/* A refusal: 403 (-EACCES) from deny(), 400 (-EINVAL) from bad(), the
 * status s3_auth_check()'s caller answers with. */
static int deny(const char **code, const char *c, char *msg, size_t ml,
		const char *m)
{
	*code = c;
	snprintf(msg, ml, "%s", m);
	return -EACCES;
}

static int bad(const char **code, const char *c, char *msg, size_t ml,
	       const char *m)
{
	deny(code, c, msg, ml, m);
	return -EINVAL;
}

static int check_time(const char *amzdate, int64_t skew_s, int64_t expires,
		      const char **code, char *msg, size_t ml)
{
	int64_t t, now = (int64_t)time(NULL);

	if (s3_time_parse(amzdate, &t) != 0)
		return deny(code, "AccessDenied", msg, ml,
			    "AWS authentication requires a valid Date or "
			    "x-amz-date header");
	if (expires >= 0) {
		if (now > t + expires)
			return deny(code, "AccessDenied", msg, ml,
				    "Request has expired");
		if (t > now + skew_s)
			return deny(code, "RequestTimeTooSkewed", msg, ml,
				    "The difference between the request time "
				    "and the server's time is too large.");
		return 0;
	}
	if (t > now + skew_s || t < now - skew_s)
		return deny(code, "RequestTimeTooSkewed", msg, ml,
			    "The difference between the request time and the "
			    "current time is too large.");
	return 0;
}

/* ------------------------------------------------- signed aws-chunked */

/* A signed aws-chunked body: keep what each chunk's signature needs (the
 * request's signing key, date and scope, and its signature, the seed of
 * the chain).  Only the payload forms AWS documents are taken. */
static int chunk_start(struct s3_req *rq, const uint8_t key[32],
		       const char *amzdate, const char *scope,
		       const char *seed, const char **code, char *msg,
		       size_t ml)
{
	struct s3_ck_sig *cs;
	const char *form = rq->rq_payload_hash + strlen(S3_STREAM_SIGNED);

	if (strcmp(form, "") != 0 && strcmp(form, "-TRAILER") != 0) {
		*code = "InvalidArgument";
		snprintf(msg, ml, "x-amz-content-sha256 '%.60s' is not a "
			 "payload form this gateway takes",
			 rq->rq_payload_hash);
		return -EINVAL;
	}
	cs = calloc(1, sizeof *cs);
	if (cs == NULL || (cs->cs_sha = EVP_MD_CTX_new()) == NULL) {
		free(cs);
		*code = "InternalError";
		snprintf(msg, ml, "out of memory");
		return -ENOMEM;
	}
	memcpy(cs->cs_key, key, 32);
	snprintf(cs->cs_date, sizeof cs->cs_date, "%s", amzdate);
	snprintf(cs->cs_scope, sizeof cs->cs_scope, "%s", scope);
	snprintf(cs->cs_prev, sizeof cs->cs_prev, "%s", seed);
	cs->cs_trailer = form[0] != 0;
	EVP_DigestInit_ex(cs->cs_sha, sha_get(), NULL);
	rq->rq_cks = cs;
	return 0;
}

int s3_auth_chunk(struct s3_req *rq, bool trailer, const char *want)
{
	static const char empty[] = "e3b0c44298fc1c149afbf4c8996fb924"
				    "27ae41e4649b934ca495991b7852b855";
	struct s3_ck_sig *cs = rq->rq_cks;
	uint8_t h[32];
	unsigned int hl = 32;
	char hx[65], sts[512], got[65];

	EVP_DigestFinal_ex(cs->cs_sha, h, &hl);
	EVP_DigestInit_ex(cs->cs_sha, sha_get(), NULL);
	s3_hex(h, 32, hx);
	if (trailer)
		snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n"
			 "%s\n%s", cs->cs_date, cs->cs_scope, cs->cs_prev, hx);
	else
		snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n"
			 "%s\n%s\n%s", cs->cs_date, cs->cs_scope, cs->cs_prev,
			 empty, hx);
	sign_with(cs->cs_key, sts, got);
	if (want == NULL || strlen(want) != 64 || strcasecmp(want, got) != 0)
		return -EACCES;
	memcpy(cs->cs_prev, got, sizeof got);
	return 0;
}

void s3_auth_chunk_fini(struct s3_req *rq)
{
	if (rq->rq_cks == NULL)
		return;
	EVP_MD_CTX_free(rq->rq_cks->cs_sha);
	explicit_bzero(rq->rq_cks->cs_key, sizeof rq->rq_cks->cs_key);
	free(rq->rq_cks);
	rq->rq_cks = NULL;
}

static int verify(struct s3_req *rq, const char *akey, const char *scope,
		  const char *sh, const char *amzdate, const char *payload,
		  const char *sig, const char *skipq, const char **code,
		  char *msg, size_t ml)
{
	struct s3_buf sts = {0};
	char want[65];
	uint8_t key[32];
	bool ok;

	if (s3_user_find(akey, &rq->rq_user) != 0)
		return deny(code, "InvalidAccessKeyId", msg, ml,
			    "The AWS Access Key Id you provided does not exist "
			    "in our records.");
	ok = string_to_sign(rq, sh, amzdate, scope, payload, skipq, &sts);
	if (!ok) {
		s3_buf_fini(&sts);
		return deny(code, "AccessDenied", msg, ml,
			    "a signed header is missing from the request");
	}
	signing_key(rq->rq_user.u_skey, scope, key);
	sign_with(key, sts.b_data, want);
	s3_buf_fini(&sts);
	if (strlen(sig) != 64 || strcasecmp(want, sig) != 0)
		return deny(code, "SignatureDoesNotMatch", msg, ml,
			    "The request signature we calculated does not "
			    "match the signature you provided. Check your key "
			    "and signing method.");
	rq->rq_authed = true;
	if (strncmp(payload, S3_STREAM_SIGNED, strlen(S3_STREAM_SIGNED)) == 0)
		return chunk_start(rq, key, amzdate, scope, want, code, msg,
				   ml);
	return 0;
}

static int check_presigned(struct s3_req *rq, const char **code, char *msg,
			   size_t ml)
{
	const char *alg = s3_q(rq, "X-Amz-Algorithm"),
		   *cred = s3_q(rq, "X-Amz-Credential"),
		   *date = s3_q(rq, "X-Amz-Date"),
		   *exp = s3_q(rq, "X-Amz-Expires"),
		   *sh = s3_q(rq, "X-Amz-SignedHeaders"),
		   *sig = s3_q(rq, "X-Amz-Signature");
	char akey[64], scope[128], *end;
	long e;
	int rc;

	if (alg == NULL || strcmp(alg, "AWS4-HMAC-SHA256") != 0 ||
	    cred == NULL || date == NULL || exp == NULL || sh == NULL ||
	    sig == NULL ||
	    !parse_cred(cred, strlen(cred), akey, sizeof akey, scope,
			sizeof scope))
		return bad(code, "AuthorizationQueryParametersError", msg, ml,
			   "X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, "
			   "X-Amz-Expires, X-Amz-SignedHeaders and "
			   "X-Amz-Signature are needed");
	/* as AWS: an X-Amz-Expires out of 1..604800 is a 403 */
	e = strtol(exp, &end, 10);
	if (!exp[0] || *end || e < 1 || e > 604800)
		return deny(code, "AuthorizationQueryParametersError", msg, ml,
			    "X-Amz-Expires must be 1..604800 seconds");
	rc = check_time(date, s3g.g_conf.sc_skew_s, e, code, msg, ml);
	if (rc != 0)
		return rc;
	snprintf(rq->rq_payload_hash, sizeof rq->rq_payload_hash,
		 "UNSIGNED-PAYLOAD");
	return verify(rq, akey, scope, sh, date, "UNSIGNED-PAYLOAD", sig,
		      "X-Amz-Signature", code, msg, ml);
}

/* ---------------------------------------------------------------- SigV2 */

/*
 * Signature Version 2 (the form `aws s3 presign` of aws cli 1.x, `s3cmd
 * signurl` and boto3's generate_presigned_url() make by default): the
 * base64 of HMAC-SHA1, under the secret key, of
 *   METHOD \n Content-MD5 \n Content-Type \n DATE \n
 *   x-amz-* headers (lower-case names, sorted, "name:value\n") RESOURCE
 * where DATE is the Expires parameter of a presigned URL, or the Date
 * header (empty when x-amz-date is sent) of an "Authorization: AWS
 * AKEY:SIG" request, and RESOURCE is "/bucket" (virtual-host style) and
 * the path as sent, then the signed sub-resources and response-*
 * overrides present, sorted by name, with their decoded values.
 */

/* Query parameters that are part of the SigV2 resource. */
static const char *const v2_subres[] = {
	"accelerate", "acl", "analytics", "cors", "delete", "encryption",
	"intelligent-tiering", "inventory", "legal-hold", "lifecycle",
	"location", "logging", "metrics", "notification", "object-lock",
	"ownershipControls", "partNumber", "policy", "policyStatus",
	"publicAccessBlock", "replication", "requestPayment",
	"response-cache-control", "response-content-disposition",
	"response-content-encoding", "response-content-language",
	"response-content-type", "response-expires", "restore", "retention",
	"select", "select-type", "storageClass", "tagging", "torrent",
	"uploadId", "uploads", "versionId", "versioning", "versions",
	"website",
};

static bool v2_is_subres(const char *n)
{
	size_t i;

	for (i = 0; i < sizeof v2_subres / sizeof v2_subres[0]; i++)
		if (strcmp(n, v2_subres[i]) == 0)
			return true;
	return false;
}

/* Index order of query parameters by name (stable: equal names keep
 * their order, as botocore's sort). */
static void v2_order(struct s3_req *rq, uint32_t *ix, uint32_t *n)
{
	uint32_t k, j;

	*n = 0;
	for (k = 0; k < rq->rq_nq; k++) {
		if (!v2_is_subres(rq->rq_qn[k]))
			continue;
		for (j = *n; j > 0 && strcmp(rq->rq_qn[ix[j - 1]],
					     rq->rq_qn[k]) > 0; j--)
			ix[j] = ix[j - 1];
		ix[j] = k;
		(*n)++;
	}
}

/* Was the bucket named by the Host header (virtual-host style)? */
static bool v2_vhost(struct s3_req *rq)
{
	const char *host = s3_hdr(rq, "Host"), *sfx = s3g.g_conf.sc_host_suffix;
	size_t hl, sl = strlen(sfx);

	if (sl == 0 || host == NULL || rq->rq_bucket[0] == 0)
		return false;
	hl = strcspn(host, ":");
	return hl > sl + 1 && strncasecmp(host + hl - sl, sfx, sl) == 0 &&
	       host[hl - sl - 1] == '.';
}

/* x-amz-* headers for the string to sign: "name:value\n", names in
 * lower case, sorted, repeated names' values joined by ','. */
struct v2_hdrs {
	char *vh_n[S3_QMAX];
	const char *vh_v[S3_QMAX];
	uint32_t vh_nr;
	bool vh_over;
};

static int v2_hdr_cb(void *cls, const char *k, const char *v)
{
	struct v2_hdrs *h = cls;
	char *n;
	size_t i;

	if (strncasecmp(k, "x-amz-", 6) != 0)
		return 1;
	if (h->vh_nr == S3_QMAX) {
		h->vh_over = true;
		return 1;
	}
	n = strdup(k);
	if (n == NULL) {
		h->vh_over = true;
		return 1;
	}
	for (i = 0; n[i]; i++)
		n[i] = (char)tolower((unsigned char)n[i]);
	h->vh_n[h->vh_nr] = n;
	h->vh_v[h->vh_nr++] = v ? v : "";
	return 1;
}

/* A header value without its leading and trailing blanks (SigV2 keeps
 * inner runs of blanks, as botocore and s3cmd sign them). */
static void trimmed(struct s3_buf *b, const char *v)
{
	size_t n;

	v += strspn(v, " \t");
	n = strlen(v);
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	s3_buf_add(b, v, n);
}

static void v2_amz_headers(struct s3_req *rq, struct s3_buf *sts, bool *ok)
{
	struct v2_hdrs h = {.vh_nr = 0};
	uint32_t k, j;

	s3_hdr_each(rq, v2_hdr_cb, &h);
	if (h.vh_over)
		*ok = false;
	for (k = 1; k < h.vh_nr; k++) /* insertion sort, stable */
		for (j = k; j > 0 && strcmp(h.vh_n[j - 1], h.vh_n[j]) > 0;
		     j--) {
			char *tn = h.vh_n[j];
			const char *tv = h.vh_v[j];

			h.vh_n[j] = h.vh_n[j - 1];
			h.vh_v[j] = h.vh_v[j - 1];
			h.vh_n[j - 1] = tn;
			h.vh_v[j - 1] = tv;
		}
	for (k = 0; k < h.vh_nr; k++) {
		bool same = k > 0 && strcmp(h.vh_n[k], h.vh_n[k - 1]) == 0;

		if (same) {
			sts->b_len--; /* the "\n" of the previous value */
			s3_buf_add(sts, ",", 1);
		} else {
			s3_buf_str(sts, h.vh_n[k]);
			s3_buf_add(sts, ":", 1);
		}
		trimmed(sts, h.vh_v[k]);
		s3_buf_add(sts, "\n", 1);
	}
	for (k = 0; k < h.vh_nr; k++)
		free(h.vh_n[k]);
}

/* Forms of the path in the SigV2 resource: as sent; as decoded (some
 * clients sign that); a bucket's path with a '/' added (botocore signs
 * "/bucket/" for a request sent to "/bucket"). */
enum { V2_RAW, V2_DECODED, V2_SLASH, V2_FORMS };

/* The SigV2 string to sign with date line date, the path in form. */
static bool v2_string(struct s3_req *rq, const char *date, int form,
		      struct s3_buf *sts)
{
	const char *md5 = s3_hdr(rq, "Content-MD5"),
		   *ct = s3_hdr(rq, "Content-Type"),
		   *q = strchr(rq->rq_raw, '?');
	uint32_t ix[S3_QMAX], n, k;
	bool ok = true;

	s3_buf_printf(sts, "%s\n%s\n%s\n%s\n", rq->rq_method,
		      md5 ? md5 : "", ct ? ct : "", date);
	v2_amz_headers(rq, sts, &ok);
	if (v2_vhost(rq)) {
		s3_buf_add(sts, "/", 1);
		s3_buf_str(sts, rq->rq_bucket);
	}
	if (form == V2_DECODED)
		s3_buf_add(sts, rq->rq_path, rq->rq_path_len);
	else
		s3_buf_add(sts, rq->rq_raw, q ? (size_t)(q - rq->rq_raw)
					      : strlen(rq->rq_raw));
	if (form == V2_SLASH)
		s3_buf_add(sts, "/", 1);
	v2_order(rq, ix, &n);
	for (k = 0; k < n; k++) {
		s3_buf_add(sts, k == 0 ? "?" : "&", 1);
		s3_buf_str(sts, rq->rq_qn[ix[k]]);
		if (rq->rq_qhas[ix[k]]) {
			s3_buf_add(sts, "=", 1);
			s3_buf_str(sts, rq->rq_qv[ix[k]]);
		}
	}
	return ok && !sts->b_oom;
}

/* Does sig (base64) sign the request as SigV2 with date line date, under
 * rq_user's secret?  Each form of the path is tried. */
static bool v2_match(struct s3_req *rq, const char *date, const char *sig)
{
	int form;

	for (form = 0; form < V2_FORMS; form++) {
		struct s3_buf sts = {0};
		uint8_t mac[EVP_MAX_MD_SIZE];
		unsigned int ml = 0;
		char b64[64];
		bool ok;

		if (form == V2_SLASH && (rq->rq_key != NULL ||
					 rq->rq_bucket[0] == 0 ||
					 rq->rq_path[rq->rq_path_len - 1] == '/'))
			continue;
		ok = v2_string(rq, date, form, &sts) &&
		     HMAC(EVP_sha1(), rq->rq_user.u_skey,
			  (int)strlen(rq->rq_user.u_skey),
			  (const unsigned char *)sts.b_data, sts.b_len, mac,
			  &ml) != NULL;
		s3_buf_fini(&sts);
		if (!ok)
			return false;
		b64[s3_b64enc(mac, ml, b64)] = 0;
		if (strlen(sig) == strlen(b64) &&
		    CRYPTO_memcmp(sig, b64, strlen(b64)) == 0)
			return true;
	}
	return false;
}

static int v2_verify(struct s3_req *rq, const char *akey, const char *date,
		     const char *sig, const char **code, char *msg, size_t ml)
{
	if (s3_user_find(akey, &rq->rq_user) != 0)
		return deny(code, "InvalidAccessKeyId", msg, ml,
			    "The AWS Access Key Id you provided does not exist "
			    "in our records.");
	if (!v2_match(rq, date, sig)) {
		memset(&rq->rq_user, 0, sizeof rq->rq_user);
		return deny(code, "SignatureDoesNotMatch", msg, ml,
			    "The request signature we calculated does not "
			    "match the signature you provided. Check your key "
			    "and signing method.");
	}
	rq->rq_authed = true;
	snprintf(rq->rq_payload_hash, sizeof rq->rq_payload_hash,
		 "UNSIGNED-PAYLOAD");
	return 0;
}

/* A SigV2 presigned URL: AWSAccessKeyId, Signature, Expires (seconds
 * since the epoch). */
static int check_presigned_v2(struct s3_req *rq, const char **code,
			      char *msg, size_t ml)
{
	const char *akey = s3_q(rq, "AWSAccessKeyId"),
		   *sig = s3_q(rq, "Signature"), *exp = s3_q(rq, "Expires");
	char *e;
	long long t;

	if (akey == NULL || sig == NULL || exp == NULL || !akey[0] ||
	    !sig[0])
		return deny(code, "AccessDenied", msg, ml,
			    "Query-string authentication requires the "
			    "Signature, Expires and AWSAccessKeyId parameters");
	t = strtoll(exp, &e, 10);
	if (!exp[0] || *e || t < 0)
		return deny(code, "AccessDenied", msg, ml,
			    "Invalid date (should be seconds since epoch): "
			    "Expires");
	if ((long long)time(NULL) > t)
		return deny(code, "AccessDenied", msg, ml,
			    "Request has expired");
	return v2_verify(rq, akey, exp, sig, code, msg, ml);
}

/* An RFC 1123 date as clients send it, into out: s3cmd writes the zone
 * as "+0000", Python's email.utils.formatdate() (botocore's Date header)
 * as "-0000"; both are "GMT". */
static const char *v2_date(const char *d, char *out, size_t ol)
{
	size_t n = strlen(d);

	if (n < 6 || n + 4 > ol || (strcmp(d + n - 6, " +0000") != 0 &&
				    strcmp(d + n - 6, " -0000") != 0))
		return d;
	snprintf(out, ol, "%.*s GMT", (int)(n - 6), d);
	return out;
}

/* "Authorization: AWS AKEY:SIG" (s3cmd with signature_v2, older tools):
 * Date or x-amz-date within the allowed skew. */
static int check_header_v2(struct s3_req *rq, const char *h,
			   const char **code, char *msg, size_t ml)
{
	const char *colon = strrchr(h + 4, ':'),
		   *xd = s3_hdr(rq, "x-amz-date"), *d = s3_hdr(rq, "Date");
	char akey[64], date[64];
	size_t al;
	int rc;

	al = colon ? (size_t)(colon - (h + 4)) : 0;
	if (al == 0 || al >= sizeof akey || !colon[1])
		return bad(code, "AuthorizationHeaderMalformed", msg, ml,
			   "The authorization header is malformed");
	memcpy(akey, h + 4, al);
	akey[al] = 0;
	if (xd == NULL && d == NULL)
		return deny(code, "AccessDenied", msg, ml,
			    "AWS authentication requires a valid Date or "
			    "x-amz-date header");
	rc = check_time(v2_date(xd ? xd : d, date, sizeof date),
			s3g.g_conf.sc_skew_s, -1, code, msg, ml);
	if (rc != 0)
		return rc;
	return v2_verify(rq, akey, xd ? "" : d, colon + 1, code, msg, ml);
}

/* The Authorization header: SigV4, or SigV2 ("AWS AKEY:SIG"). */
static int check_header(struct s3_req *rq, const char *h, const char **code,
			char *msg, size_t ml)
{
	const char *date, *payload;
	char cred[256], sh[1024], sig[80], akey[64], scope[128], iso[32];
	int rc;

	if (strncmp(h, "AWS ", 4) == 0)
		return check_header_v2(rq, h, code, msg, ml);
	if (strncmp(h, "AWS4-HMAC-SHA256 ", 17) != 0)
		return deny(code, "AccessDenied", msg, ml,
			    "only AWS4-HMAC-SHA256 (SigV4) and AWS (SigV2) "
			    "authorization are supported");
	if (!auth_field(h, "Credential=", cred, sizeof cred) ||
	    !auth_field(h, "SignedHeaders=", sh, sizeof sh) ||
	    !auth_field(h, "Signature=", sig, sizeof sig) ||
	    !parse_cred(cred, strlen(cred), akey, sizeof akey, scope,
			sizeof scope))
		return bad(code, "AuthorizationHeaderMalformed", msg, ml,
			   "The authorization header is malformed");
	/* x-amz-date wins; without it the Date header, whose time goes
	 * into the string to sign in the ISO 8601 basic form (AWS, "Handling
	 * dates in Signature Version 4") */
	date = s3_hdr(rq, "x-amz-date");
	if (date == NULL) {
		const char *d = s3_hdr(rq, "Date");
		char rfc[64];
		int64_t t;
		struct tm tm;
		time_t tt;

		if (d == NULL || s3_time_parse(v2_date(d, rfc, sizeof rfc),
					       &t) != 0)
			return deny(code, "AccessDenied", msg, ml,
				    "AWS authentication requires a valid Date "
				    "or x-amz-date header");
		tt = (time_t)t;
		gmtime_r(&tt, &tm);
		strftime(iso, sizeof iso, "%Y%m%dT%H%M%SZ", &tm);
		date = iso;
	}
	rc = check_time(date, s3g.g_conf.sc_skew_s, -1, code, msg, ml);
	if (rc != 0)
		return rc;
	payload = s3_hdr(rq, "x-amz-content-sha256");
	if (payload == NULL)
		return bad(code, "InvalidRequest", msg, ml,
			   "Missing required header for this request: "
			   "x-amz-content-sha256");
	if (strlen(payload) >= sizeof rq->rq_payload_hash)
		return bad(code, "InvalidArgument", msg, ml,
			   "x-amz-content-sha256 is too long");
	snprintf(rq->rq_payload_hash, sizeof rq->rq_payload_hash, "%s",
		 payload);
	return verify(rq, akey, scope, sh, date, payload, sig, NULL, code,
		      msg, ml);
}

/* ------------------------------------------------------ the entry point */

/* Query parameters that carry a signature (any makes a request signed). */
static const char *const auth_params[] = {
	"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
	"X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token",
	"AWSAccessKeyId", "Signature", "Expires",
};

/* After a query signature was checked: drop its parameters, so that what
 * the router sees is the request's own parameters. */
static void auth_params_drop(struct s3_req *rq)
{
	uint32_t k = 0, j;
	size_t i;

	while (k < rq->rq_nq) {
		bool drop = false;

		for (i = 0; i < sizeof auth_params / sizeof auth_params[0]; i++)
			drop |= strcmp(rq->rq_qn[k], auth_params[i]) == 0;
		if (!drop) {
			k++;
			continue;
		}
		free(rq->rq_qn[k]);
		free(rq->rq_qv[k]);
		for (j = k; j + 1 < rq->rq_nq; j++) {
			rq->rq_qn[j] = rq->rq_qn[j + 1];
			rq->rq_qv[j] = rq->rq_qv[j + 1];
			rq->rq_qhas[j] = rq->rq_qhas[j + 1];
		}
		rq->rq_nq--;
	}
}

int s3_auth_check(struct s3_req *rq, const char **code, char *msg,
		  size_t ml)
{
	const char *h = s3_hdr(rq, "Authorization");
	bool v4q = s3_q(rq, "X-Amz-Signature") != NULL ||
		   s3_q(rq, "X-Amz-Credential") != NULL ||
		   s3_q(rq, "X-Amz-Algorithm") != NULL;
	bool v2q = s3_q(rq, "AWSAccessKeyId") != NULL ||
		   s3_q(rq, "Signature") != NULL;
	int rc;

	/* A CORS preflight is not authenticated (AWS): a signature it
	 * carries (a presigned URL's, say) is not checked, and its
	 * parameters are dropped; s3_cors_preflight() answers it. */
	if (rq->rq_method != NULL && strcmp(rq->rq_method, "OPTIONS") == 0) {
		auth_params_drop(rq);
		goto anon;
	}
	if (h != NULL && (v4q || v2q))
		return bad(code, "InvalidArgument", msg, ml,
			   "Only one auth mechanism allowed; only the "
			   "X-Amz-Algorithm query parameter, Signature query "
			   "string parameter or the Authorization header "
			   "should be specified");
	if (h != NULL)
		return check_header(rq, h, code, msg, ml);
	if (v4q && v2q)
		return bad(code, "InvalidArgument", msg, ml,
			   "Only one auth mechanism allowed");
	if (v4q || v2q) {
		rc = v4q ? check_presigned(rq, code, msg, ml)
			 : check_presigned_v2(rq, code, msg, ml);
		if (rc == 0)
			auth_params_drop(rq);
		return rc;
	}
	/* no signature at all: anonymous, if the bucket lets anyone */
anon:
	memset(&rq->rq_user, 0, sizeof rq->rq_user);
	rq->rq_authed = false;
	if (!s3_anon_ok(rq))
		return deny(code, "AccessDenied", msg, ml, "Access Denied");
	snprintf(rq->rq_payload_hash, sizeof rq->rq_payload_hash,
		 "UNSIGNED-PAYLOAD");
	return 0;
}
