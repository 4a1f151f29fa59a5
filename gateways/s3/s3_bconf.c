/*
 * gateways/s3/s3_bconf.c — bucket configuration documents (s3_bconf.h):
 * versioning status, CORS and lifecycle, kept in the system index
 * "@s3.bconf" (key: bucket name "\0" kind; value: TLV of the bucket's
 * creation time and the normalised XML document), a small cache of each
 * bucket's versioning status and CORS rules, and the lifecycle thread that
 * applies expiration rules.  README.md beside this file, "Bucket
 * configuration", says what is supported and what is refused.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/evp.h>

#include "gateways/s3/s3.h"
#include "gateways/s3/s3_bconf.h"

#define XHDR "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"

/* Tags of a document record (s3_tlv_*). */
enum { BT_CTIME = 1, BT_DOC = 2 };

/* Versioning statuses (s3_bconf_versioning()). */
enum { BV_NONE = 0, BV_ENABLED = 1, BV_SUSPENDED = 2 };

/* ------------------------------------------------------- the index */

static struct {
	pthread_mutex_t bi_lock;
	bool bi_open;
	struct clovis_idx bi_idx;
} bci = {.bi_lock = PTHREAD_MUTEX_INITIALIZER};

/* The system index "@s3.bconf", opened (or created) on first use. */
static int bc_idx(struct clovis_idx **out)
{
	struct clovis_id id;
	struct clovis_op *op;
	int rc = 0, tries;

	pthread_mutex_lock(&bci.bi_lock);
	for (tries = 0; !bci.bi_open && tries < 2; tries++) {
		rc = clovis_id_parse("@s3.bconf", &id);
		if (rc == 0)
			rc = clovis_idx_init(&bci.bi_idx,
					     clovis_default_realm(s3g.g_cl),
					     &id);
		if (rc == 0)
			rc = clovis_entity_op(&bci.bi_idx.in_entity,
					      CLOVIS_EO_OPEN, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		if (rc == -ENOENT) {
			/* another gateway may create it meanwhile: -EEXIST,
			 * then the second try opens it */
			rc = clovis_idx_init(&bci.bi_idx,
					     clovis_default_realm(s3g.g_cl),
					     &id);
			if (rc == 0)
				rc = clovis_entity_op(&bci.bi_idx.in_entity,
						      CLOVIS_EO_CREATE, &op);
			if (rc == 0)
				rc = clovis_op_sync(op);
		}
		bci.bi_open = rc == 0;
		if (rc != -EEXIST)
			break;
	}
	pthread_mutex_unlock(&bci.bi_lock);
	if (rc != 0) {
		fprintf(stderr, "strata-s3: system index @s3.bconf: %s: %s\n",
			clovis_strerror(rc), clovis_errmsg());
		return rc;
	}
	*out = &bci.bi_idx;
	return 0;
}

/* Index key of document kind of bucket name; returns its length. */
static size_t bc_key(const char *name, const char *kind, char *out)
{
	size_t nl = strlen(name), kl = strlen(kind);

	memcpy(out, name, nl);
	out[nl] = 0;
	memcpy(out + nl + 1, kind, kl);
	return nl + 1 + kl;
}

/*
 * Document kind of bucket b: 0 and *doc (malloc()ed, NUL-terminated),
 * -ENOENT when there is none, or one left by an earlier bucket of the same
 * name (its creation time differs), or a Clovis error.
 */
static int doc_get(const struct s3_bucket *b, const char *kind, char **doc)
{
	struct clovis_idx *i;
	char k[S3_BUCKET_MAX + 16];
	const uint8_t *val, *d = NULL;
	uint64_t ctime = 0;
	uint32_t n, dl = 0;
	size_t vl, pos = 0;
	uint8_t tag;
	void *v;
	int rc = bc_idx(&i);

	if (rc == 0)
		rc = s3_idx_get(i, k, bc_key(b->bk_name, kind, k), &v, &vl);
	if (rc != 0)
		return rc;
	while ((rc = s3_tlv_next(v, vl, &pos, &tag, &val, &n)) == 1) {
		if (tag == BT_CTIME && n == 8)
			ctime = s3_u64(val);
		else if (tag == BT_DOC)
			d = val, dl = n;
	}
	if (rc == 0 && (d == NULL || ctime != b->bk_ctime_ns))
		rc = -ENOENT;
	if (rc == 0 && (*doc = strndup((const char *)d, dl)) == NULL)
		rc = -ENOMEM;
	free(v);
	return rc;
}

static int doc_put(const struct s3_bucket *b, const char *kind,
		   const struct s3_buf *doc)
{
	struct clovis_idx *i;
	struct s3_buf rec = {0};
	char k[S3_BUCKET_MAX + 16];
	int rc = bc_idx(&i);

	if (rc != 0)
		return rc;
	s3_tlv_u64(&rec, BT_CTIME, b->bk_ctime_ns);
	s3_tlv_add(&rec, BT_DOC, doc->b_data, (uint32_t)doc->b_len);
	rc = rec.b_oom || doc->b_oom
		     ? -ENOMEM
		     : s3_idx_put(i, k, bc_key(b->bk_name, kind, k),
				  rec.b_data, rec.b_len, true);
	s3_buf_fini(&rec);
	return rc;
}

/* 0 also when there was none. */
static int doc_del(const char *name, const char *kind)
{
	struct clovis_idx *i;
	char k[S3_BUCKET_MAX + 16];
	int rc = bc_idx(&i);

	if (rc == 0)
		rc = s3_idx_del(i, k, bc_key(name, kind, k));
	return rc == -ENOENT ? 0 : rc;
}

/* ---------------------------------------------------- XML documents */

/* A validation failure: the S3 reply it gets. */
struct bc_err {
	uint32_t be_status;
	const char *be_code;
	char be_msg[320];
};

static int bc_fail(struct bc_err *e, uint32_t status, const char *code,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int bc_fail(struct bc_err *e, uint32_t status, const char *code,
		   const char *fmt, ...)
{
	va_list ap;

	e->be_status = status;
	e->be_code = code;
	va_start(ap, fmt);
	vsnprintf(e->be_msg, sizeof e->be_msg, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int malformed(struct bc_err *e)
{
	return bc_fail(e, 400, "MalformedXML", "The XML you provided was not "
		       "well-formed or did not validate against our published "
		       "schema");
}

/* Strip leading and trailing white space from every text of tree x. */
static void xml_trim(struct s3_xel *x)
{
	for (; x != NULL; x = x->x_next) {
		size_t a = 0, n = x->x_text_len;

		while (a < n && isspace((unsigned char)x->x_text[a]))
			a++;
		while (n > a && isspace((unsigned char)x->x_text[n - 1]))
			n--;
		memmove(x->x_text, x->x_text + a, n - a);
		x->x_text[n - a] = 0;
		x->x_text_len = n - a;
		xml_trim(x->x_child);
	}
}

/* Does a text of tree x hold a NUL byte (&#0; is refused by the reader, a
 * raw NUL is not)?  Such a text is refused: the walks read texts as C
 * strings. */
static bool xml_has_nul(const struct s3_xel *x)
{
	for (; x != NULL; x = x->x_next)
		if (strlen(x->x_text) != x->x_text_len ||
		    xml_has_nul(x->x_child))
			return true;
	return false;
}

/* Write tree x (the root with the S3 namespace) as XML without blanks. */
static void xml_emit(struct s3_buf *o, const struct s3_xel *x, bool root)
{
	const struct s3_xel *c;

	s3_buf_printf(o, "<%s%s>", x->x_name,
		      root ? " xmlns=\"" XMLNS "\"" : "");
	if (x->x_child == NULL)
		s3_buf_xml(o, x->x_text, x->x_text_len);
	for (c = x->x_child; c != NULL; c = c->x_next)
		xml_emit(o, c, false);
	s3_buf_printf(o, "</%s>", x->x_name);
}

static const struct s3_xel *xchild(const struct s3_xel *x, const char *name)
{
	const struct s3_xel *c;

	for (c = x ? x->x_child : NULL; c != NULL; c = c->x_next)
		if (strcmp(c->x_name, name) == 0)
			return c;
	return NULL;
}

static uint32_t nchild(const struct s3_xel *x, const char *name)
{
	const struct s3_xel *c;
	uint32_t n = 0;

	for (c = x->x_child; c != NULL; c = c->x_next)
		n += strcmp(c->x_name, name) == 0;
	return n;
}

/* Every child of x is one of names (NULL-terminated), and those of the
 * first nsingle names appear at most once. */
static bool children_ok(const struct s3_xel *x, const char *const *names,
			uint32_t nsingle)
{
	const struct s3_xel *c;
	uint32_t i;

	for (c = x->x_child; c != NULL; c = c->x_next) {
		for (i = 0; names[i] != NULL; i++)
			if (strcmp(c->x_name, names[i]) == 0)
				break;
		if (names[i] == NULL || (c->x_child != NULL && c->x_text_len))
			return false;
	}
	for (i = 0; i < nsingle; i++)
		if (nchild(x, names[i]) > 1)
			return false;
	return true;
}

/* A decimal number in [min, max]. */
static bool num_ok(const struct s3_xel *x, uint64_t min, uint64_t max,
		   uint64_t *out)
{
	char *e;
	unsigned long long v;

	if (x->x_text_len == 0 || x->x_text_len > 19 ||
	    !isdigit((unsigned char)x->x_text[0]))
		return false;
	v = strtoull(x->x_text, &e, 10);
	if (*e != 0 || v < min || v > max)
		return false;
	if (out != NULL)
		*out = v;
	return true;
}

static uint32_t stars(const char *s)
{
	uint32_t n = 0;

	for (; *s; s++)
		n += *s == '*';
	return n;
}

/* ------------------------------------------------------------ versioning */

/*
 * A VersioningConfiguration body: 0 and *status (BV_NONE when it sets
 * none), or -EINVAL with the reply in e.  Status Enabled and MfaDelete
 * Enabled are refused 501 (object versions are not implemented).
 */
static int vers_parse(struct s3_xel *x, int *status, struct bc_err *e)
{
	static const char *const names[] = {"Status", "MfaDelete", NULL};
	const struct s3_xel *s, *m;

	if (strcmp(x->x_name, "VersioningConfiguration") != 0 ||
	    !children_ok(x, names, 2))
		return malformed(e);
	s = xchild(x, "Status");
	m = xchild(x, "MfaDelete");
	if (m != NULL && strcmp(m->x_text, "Disabled") != 0 &&
	    strcmp(m->x_text, "Enabled") != 0)
		return malformed(e);
	if (s != NULL && strcmp(s->x_text, "Suspended") != 0 &&
	    strcmp(s->x_text, "Enabled") != 0)
		return malformed(e);
	if (m != NULL && strcmp(m->x_text, "Enabled") == 0)
		return bc_fail(e, 501, "NotImplemented", "MFA delete is not "
			       "implemented by this gateway; nothing was "
			       "changed");
	if (s != NULL && strcmp(s->x_text, "Enabled") == 0)
		return bc_fail(e, 501, "NotImplemented", "Object versioning is "
			       "not implemented by this gateway: enabling it "
			       "would promise that overwritten and deleted "
			       "objects are kept as versions, and they would "
			       "not be.  Nothing was changed (Status "
			       "Suspended is accepted).");
	*status = s != NULL ? BV_SUSPENDED : BV_NONE;
	return 0;
}

/* ------------------------------------------------------------------ CORS */

static const char *const cors_methods[] = {"GET", "PUT", "POST", "DELETE",
					   "HEAD"};

/* A CORSConfiguration body (trimmed): 0, or -EINVAL with the reply in e. */
static int cors_parse(const struct s3_xel *x, struct bc_err *e)
{
	static const char *const names[] = {
		"ID", "MaxAgeSeconds", "AllowedOrigin", "AllowedMethod",
		"AllowedHeader", "ExposeHeader", NULL};
	const struct s3_xel *r, *c;
	uint32_t n = 0, i;

	if (strcmp(x->x_name, "CORSConfiguration") != 0)
		return malformed(e);
	for (r = x->x_child; r != NULL; r = r->x_next) {
		if (strcmp(r->x_name, "CORSRule") != 0 ||
		    !children_ok(r, names, 2) ||
		    nchild(r, "AllowedOrigin") == 0 ||
		    nchild(r, "AllowedMethod") == 0)
			return malformed(e);
		if (++n > BC_CORS_RULES_MAX)
			return bc_fail(e, 400, "InvalidRequest", "The CORS "
				       "configuration has more than %u rules",
				       BC_CORS_RULES_MAX);
		for (c = r->x_child; c != NULL; c = c->x_next) {
			if (c->x_child != NULL)
				return malformed(e);
			if (strcmp(c->x_name, "ID") == 0 &&
			    c->x_text_len > BC_ID_MAX)
				return bc_fail(e, 400, "InvalidArgument", "ID "
					       "length should not exceed "
					       "allowed limit of %u",
					       BC_ID_MAX);
			if (strcmp(c->x_name, "MaxAgeSeconds") == 0 &&
			    !num_ok(c, 0, INT32_MAX, NULL))
				return malformed(e);
			if (strcmp(c->x_name, "AllowedMethod") == 0) {
				for (i = 0; i < 5; i++)
					if (strcmp(c->x_text,
						   cors_methods[i]) == 0)
						break;
				if (i == 5)
					return bc_fail(e, 400,
						       "InvalidRequest",
						       "Found unsupported HTTP "
						       "method in CORS config. "
						       "Unsupported method is "
						       "%.64s", c->x_text);
			}
			if ((strcmp(c->x_name, "AllowedOrigin") == 0 ||
			     strcmp(c->x_name, "AllowedHeader") == 0) &&
			    (c->x_text_len == 0 || stars(c->x_text) > 1))
				return bc_fail(e, 400, "InvalidRequest",
					       "%s \"%.64s\" can not have more "
					       "than one wildcard and must not "
					       "be empty", c->x_name,
					       c->x_text);
		}
	}
	if (n == 0)
		return malformed(e);
	return 0;
}

/* Does s match pattern p (at most one '*', any run of characters)? */
static bool wild_match(const char *p, const char *s, size_t sl, bool nocase)
{
	const char *star = strchr(p, '*');
	size_t pre = star ? (size_t)(star - p) : strlen(p), post;
	int (*cmp)(const char *, const char *, size_t) =
		nocase ? strncasecmp : strncmp;

	if (star == NULL)
		return pre == sl && cmp(p, s, sl) == 0;
	post = strlen(star + 1);
	return sl >= pre + post && cmp(p, s, pre) == 0 &&
	       cmp(star + 1, s + sl - post, post) == 0;
}

static bool rule_has(const struct s3_xel *r, const char *el, const char *s,
		     size_t sl, bool nocase)
{
	const struct s3_xel *c;

	for (c = r->x_child; c != NULL; c = c->x_next)
		if (strcmp(c->x_name, el) == 0 &&
		    wild_match(c->x_text, s, sl, nocase))
			return true;
	return false;
}

/* Every name of the comma-separated list hl is an AllowedHeader of r. */
static bool headers_ok(const struct s3_xel *r, const char *hl)
{
	while (hl != NULL && *hl) {
		const char *end = strchr(hl, ','), *a = hl, *z;

		z = end ? end : hl + strlen(hl);
		while (a < z && isspace((unsigned char)*a))
			a++;
		while (z > a && isspace((unsigned char)z[-1]))
			z--;
		if (z > a && !rule_has(r, "AllowedHeader", a,
				       (size_t)(z - a), true))
			return false;
		hl = end ? end + 1 : NULL;
	}
	return true;
}

/* The first rule of cors (a validated tree) for origin, method and
 * (preflight) request headers hl; NULL when none. */
static const struct s3_xel *cors_match(const struct s3_xel *cors,
				       const char *origin, const char *method,
				       const char *hl)
{
	const struct s3_xel *r;

	for (r = cors ? cors->x_child : NULL; r != NULL; r = r->x_next)
		if (rule_has(r, "AllowedOrigin", origin, strlen(origin),
			     false) &&
		    rule_has(r, "AllowedMethod", method, strlen(method),
			     false) &&
		    headers_ok(r, hl))
			return r;
	return NULL;
}

static void pair(struct s3_buf *out, const char *name, const char *value)
{
	s3_buf_add(out, name, strlen(name) + 1);
	s3_buf_add(out, value, strlen(value) + 1);
}

/*
 * Append the "name\0value\0" pairs of the headers rule r grants to out.
 * The origin is answered "*" when the rule's first AllowedOrigin matching
 * it is "*" (as S3 does), else echoed (with Allow-Credentials).
 */
static void cors_hdrs(const struct s3_xel *r, const char *origin,
		      const char *hl, struct s3_buf *out)
{
	const struct s3_xel *c;
	struct s3_buf m = {0}, x = {0};
	const char *age = NULL, *pat = NULL;

	for (c = r->x_child; c != NULL; c = c->x_next) {
		struct s3_buf *l = strcmp(c->x_name, "AllowedMethod") == 0
					   ? &m
				   : strcmp(c->x_name, "ExposeHeader") == 0
					   ? &x : NULL;

		if (pat == NULL && strcmp(c->x_name, "AllowedOrigin") == 0 &&
		    wild_match(c->x_text, origin, strlen(origin), false))
			pat = c->x_text;
		if (strcmp(c->x_name, "MaxAgeSeconds") == 0)
			age = c->x_text;
		if (l == NULL)
			continue;
		if (l->b_len)
			s3_buf_str(l, ", ");
		s3_buf_str(l, c->x_text);
	}
	s3_buf_add(&m, "", 1);
	s3_buf_add(&x, "", 1);
	pair(out, "Access-Control-Allow-Origin",
	     pat != NULL && strcmp(pat, "*") == 0 ? "*" : origin);
	if (!m.b_oom)
		pair(out, "Access-Control-Allow-Methods", m.b_data);
	if (hl != NULL && *hl)
		pair(out, "Access-Control-Allow-Headers", hl);
	if (!x.b_oom && x.b_len > 1)
		pair(out, "Access-Control-Expose-Headers", x.b_data);
	if (age != NULL)
		pair(out, "Access-Control-Max-Age", age);
	if (pat == NULL || strcmp(pat, "*") != 0)
		pair(out, "Access-Control-Allow-Credentials", "true");
	pair(out, "Vary", "Origin, Access-Control-Request-Headers, "
	     "Access-Control-Request-Method");
	s3_buf_fini(&m);
	s3_buf_fini(&x);
}

/* ------------------------------------------------------------- lifecycle */

static const char *const storage_classes[] = {
	"STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER",
	"DEEP_ARCHIVE", "GLACIER_IR", NULL};

/* Date element: ISO 8601 at midnight UTC. */
static bool date_ok(const struct s3_xel *x, int64_t *sec)
{
	int64_t s;

	if (s3_time_parse(x->x_text, &s) != 0 || s % 86400 != 0)
		return false;
	if (sec != NULL)
		*sec = s;
	return true;
}

static int tag_check(const struct s3_xel *t, struct bc_err *e)
{
	static const char *const names[] = {"Key", "Value", NULL};
	const struct s3_xel *k = xchild(t, "Key");

	if (!children_ok(t, names, 2) || k == NULL || k->x_text_len == 0 ||
	    k->x_text_len > 128 || xchild(t, "Value") == NULL ||
	    xchild(t, "Value")->x_text_len > 256)
		return malformed(e);
	return 0;
}

static int filter_check(const struct s3_xel *f, struct bc_err *e)
{
	static const char *const names[] = {
		"Prefix", "ObjectSizeGreaterThan", "ObjectSizeLessThan", "Tag",
		"And", NULL};
	const struct s3_xel *c;
	int rc = 0;

	if (!children_ok(f, names, 3))
		return malformed(e);
	for (c = f->x_child; c != NULL && rc == 0; c = c->x_next) {
		if (c != f->x_child && strcmp(f->x_name, "Filter") == 0)
			return malformed(e); /* one condition, or And */
		if (strcmp(c->x_name, "Tag") == 0)
			rc = tag_check(c, e);
		else if (strcmp(c->x_name, "And") == 0)
			rc = strcmp(f->x_name, "And") == 0 ||
					     c->x_child == NULL
				     ? malformed(e) : filter_check(c, e);
		else if (strncmp(c->x_name, "ObjectSize", 10) == 0 &&
			 !num_ok(c, 0, UINT64_MAX >> 1, NULL))
			rc = malformed(e);
	}
	return rc;
}

/* Expiration, Transition, Noncurrent*, AbortIncompleteMultipartUpload. */
static int action_check(const struct s3_xel *a, struct bc_err *e)
{
	static const char *const exp[] = {"Days", "Date",
					  "ExpiredObjectDeleteMarker", NULL};
	static const char *const tr[] = {"Days", "Date", "StorageClass", NULL};
	static const char *const nexp[] = {"NoncurrentDays",
					   "NewerNoncurrentVersions", NULL};
	static const char *const ntr[] = {"NoncurrentDays",
					  "NewerNoncurrentVersions",
					  "StorageClass", NULL};
	static const char *const ab[] = {"DaysAfterInitiation", NULL};
	const char *n = a->x_name;
	const struct s3_xel *d = xchild(a, "Days");
	const struct s3_xel *t = xchild(a, "Date");
	const struct s3_xel *s = xchild(a, "StorageClass");
	const struct s3_xel *nd = xchild(a, "NoncurrentDays");
	const struct s3_xel *nv = xchild(a, "NewerNoncurrentVersions");
	const struct s3_xel *m = xchild(a, "ExpiredObjectDeleteMarker");
	uint32_t i;

	if (strcmp(n, "Expiration") == 0) {
		if (!children_ok(a, exp, 3) || (d != NULL) + (t != NULL) +
						       (m != NULL) != 1)
			return malformed(e);
		if (d != NULL && !num_ok(d, 1, INT32_MAX, NULL))
			return bc_fail(e, 400, "InvalidArgument", "'Days' for "
				       "Expiration action must be a positive "
				       "integer");
		if (t != NULL && !date_ok(t, NULL))
			return bc_fail(e, 400, "InvalidArgument", "'Date' must "
				       "be at midnight GMT");
		if (m != NULL && strcmp(m->x_text, "true") != 0 &&
		    strcmp(m->x_text, "false") != 0)
			return malformed(e);
		return 0;
	}
	if (strcmp(n, "Transition") == 0 ||
	    strcmp(n, "NoncurrentVersionTransition") == 0) {
		bool cur = n[0] == 'T';

		if (!children_ok(a, cur ? tr : ntr, 3) || s == NULL ||
		    (cur ? (d != NULL) + (t != NULL) != 1 : nd == NULL))
			return malformed(e);
		for (i = 0; storage_classes[i] != NULL; i++)
			if (strcmp(s->x_text, storage_classes[i]) == 0)
				break;
		if (storage_classes[i] == NULL)
			return bc_fail(e, 400, "InvalidStorageClass", "The "
				       "storage class you specified is not "
				       "valid: '%.64s'", s->x_text);
		if ((d != NULL && !num_ok(d, 0, INT32_MAX, NULL)) ||
		    (nd != NULL && !num_ok(nd, 0, INT32_MAX, NULL)))
			return bc_fail(e, 400, "InvalidArgument", "'Days' for "
				       "Transition action must be a "
				       "non-negative integer");
		if (t != NULL && !date_ok(t, NULL))
			return bc_fail(e, 400, "InvalidArgument", "'Date' must "
				       "be at midnight GMT");
	} else if (strcmp(n, "NoncurrentVersionExpiration") == 0) {
		if (!children_ok(a, nexp, 2) || nd == NULL)
			return malformed(e);
		if (!num_ok(nd, 1, INT32_MAX, NULL))
			return bc_fail(e, 400, "InvalidArgument", "'NoncurrentD"
				       "ays' for NoncurrentVersionExpiration "
				       "action must be a positive integer");
	} else {
		d = xchild(a, "DaysAfterInitiation");
		if (!children_ok(a, ab, 1) || d == NULL)
			return malformed(e);
		if (!num_ok(d, 1, INT32_MAX, NULL))
			return bc_fail(e, 400, "InvalidArgument", "'DaysAfterIn"
				       "itiation' for AbortIncompleteMultipart"
				       "Upload action must be a positive "
				       "integer");
	}
	if (nv != NULL && !num_ok(nv, 1, 100, NULL))
		return bc_fail(e, 400, "InvalidArgument", "'NewerNoncurrent"
			       "Versions' must be from 1 to 100");
	return 0;
}

/* Add <ID> with a random value as the first child of rule r. */
static int rule_id_add(struct s3_xel *r)
{
	struct s3_xel *id = calloc(1, sizeof *id);
	struct clovis_id rnd;
	char hex[40];

	if (id == NULL)
		return -ENOMEM;
	s3_rand_id(&rnd);
	s3_hex((const uint8_t *)&rnd, sizeof rnd, hex);
	id->x_name = strdup("ID");
	id->x_text = strdup(hex);
	if (id->x_name == NULL || id->x_text == NULL) {
		s3_xml_free(id);
		return -ENOMEM;
	}
	id->x_text_len = strlen(hex);
	id->x_next = r->x_child;
	r->x_child = id;
	return 0;
}

/*
 * A LifecycleConfiguration body (trimmed): 0 (rules without an ID get a
 * random one), or -EINVAL with the reply in e.
 */
static int lc_parse(struct s3_xel *x, struct bc_err *e)
{
	static const char *const names[] = {
		"ID", "Prefix", "Filter", "Status", "Expiration",
		"NoncurrentVersionExpiration", "AbortIncompleteMultipartUpload",
		"Transition", "NoncurrentVersionTransition", NULL};
	struct s3_xel *r, *c, *q;
	uint32_t n = 0;
	int rc = 0;

	if (strcmp(x->x_name, "LifecycleConfiguration") != 0)
		return malformed(e);
	for (r = x->x_child; r != NULL; r = r->x_next) {
		const struct s3_xel *st = xchild(r, "Status");
		const struct s3_xel *id = xchild(r, "ID");
		bool action = false;

		if (strcmp(r->x_name, "Rule") != 0 ||
		    !children_ok(r, names, 7) || st == NULL ||
		    (xchild(r, "Prefix") != NULL) +
				    (xchild(r, "Filter") != NULL) != 1 ||
		    (strcmp(st->x_text, "Enabled") != 0 &&
		     strcmp(st->x_text, "Disabled") != 0))
			return malformed(e);
		if (++n > BC_LC_RULES_MAX)
			return bc_fail(e, 400, "InvalidRequest", "The lifecycle"
				       " configuration has more than %u rules",
				       BC_LC_RULES_MAX);
		if (id != NULL && (id->x_text_len > BC_ID_MAX ||
				   id->x_text_len == 0))
			return bc_fail(e, 400, "InvalidArgument", "ID length "
				       "should be from 1 to %u", BC_ID_MAX);
		for (q = x->x_child; id != NULL && q != r; q = q->x_next) {
			const struct s3_xel *qi = xchild(q, "ID");

			if (qi != NULL && strcmp(qi->x_text, id->x_text) == 0)
				return bc_fail(e, 400, "InvalidArgument",
					       "Rule ID must be unique. Found "
					       "same ID for more than one rule "
					       "('%.64s')", id->x_text);
		}
		for (c = r->x_child; c != NULL && rc == 0; c = c->x_next) {
			if (strcmp(c->x_name, "Filter") == 0)
				rc = filter_check(c, e);
			else if (strcmp(c->x_name, "ID") != 0 &&
				 strcmp(c->x_name, "Prefix") != 0 &&
				 strcmp(c->x_name, "Status") != 0) {
				action = true;
				rc = action_check(c, e);
			} else if (c->x_child != NULL) {
				rc = malformed(e);
			}
		}
		if (rc != 0)
			return rc;
		if (!action)
			return bc_fail(e, 400, "InvalidRequest", "At least one "
				       "action needs to be specified in a "
				       "rule");
		if (id == NULL && rule_id_add(r) != 0)
			return bc_fail(e, 500, "InternalError", "out of "
				       "memory");
	}
	if (n == 0)
		return malformed(e);
	return 0;
}

/* ------------------------------------------------------------ the cache */

/* One bucket's versioning status and CORS rules, as last read. */
struct bc_ent {
	char ce_name[S3_BUCKET_MAX + 1];
	uint64_t ce_ctime;        /* of the bucket they belong to */
	uint64_t ce_loaded_ns;
	uint32_t ce_ref;          /* the table's, and each user's */
	int ce_vers;              /* BV_* */
	struct s3_xel *ce_cors;   /* validated CORSConfiguration, or NULL */
	struct s3_xel *ce_lc;     /* validated LifecycleConfiguration, or
				   * NULL (for x-amz-expiration) */
	struct bc_ent *ce_next;
};

static struct {
	pthread_mutex_t cc_lock;
	struct bc_ent *cc_tab[256];
	uint32_t cc_n;
	uint64_t cc_gen;          /* bumped by every bc_forget() */
} bcc = {.cc_lock = PTHREAD_MUTEX_INITIALIZER};

static struct bc_ent **bc_slot(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return &bcc.cc_tab[h & 255];
}

static void bc_put(struct bc_ent *e)
{
	bool last;

	if (e == NULL)
		return;
	pthread_mutex_lock(&bcc.cc_lock);
	last = --e->ce_ref == 0;
	pthread_mutex_unlock(&bcc.cc_lock);
	if (last) {
		s3_xml_free(e->ce_cors);
		s3_xml_free(e->ce_lc);
		free(e);
	}
}

/* Under cc_lock: unlink entries of name (all when name is NULL). */
static void bc_unlink_locked(const char *name, struct bc_ent **gone)
{
	uint32_t s;

	for (s = 0; s < 256; s++) {
		struct bc_ent **pp = &bcc.cc_tab[s];

		if (name != NULL && pp != bc_slot(name))
			continue;
		while (*pp != NULL) {
			struct bc_ent *e = *pp;

			if (name != NULL && strcmp(e->ce_name, name) != 0) {
				pp = &e->ce_next;
				continue;
			}
			*pp = e->ce_next;
			bcc.cc_n--;
			e->ce_next = *gone;
			*gone = e;
		}
	}
}

/* Forget what is cached of bucket name (NULL: of every bucket). */
static void bc_forget(const char *name)
{
	struct bc_ent *gone = NULL, *e;

	pthread_mutex_lock(&bcc.cc_lock);
	bc_unlink_locked(name, &gone);
	bcc.cc_gen++;
	pthread_mutex_unlock(&bcc.cc_lock);
	while ((e = gone) != NULL) {
		gone = e->ce_next;
		bc_put(e);
	}
}

/* Read b's versioning status and CORS rules from the index into e. */
static int bc_load(const struct s3_bucket *b, struct bc_ent *e)
{
	struct bc_err err;
	struct s3_xel *x;
	char *doc = NULL;
	int rc = doc_get(b, "versioning", &doc);

	if (rc == 0) {
		x = s3_xml_parse(doc, strlen(doc));
		xml_trim(x);
		if (x == NULL || vers_parse(x, &e->ce_vers, &err) != 0)
			e->ce_vers = BV_NONE;
		s3_xml_free(x);
		free(doc);
		doc = NULL;
	}
	if (rc == 0 || rc == -ENOENT)
		rc = doc_get(b, "cors", &doc);
	if (rc == 0) {
		x = s3_xml_parse(doc, strlen(doc));
		xml_trim(x);
		if (x != NULL && cors_parse(x, &err) == 0)
			e->ce_cors = x;
		else
			s3_xml_free(x);
		free(doc);
		doc = NULL;
	}
	if (rc == 0 || rc == -ENOENT)
		rc = doc_get(b, "lifecycle", &doc);
	if (rc == 0) {
		x = s3_xml_parse(doc, strlen(doc));
		xml_trim(x);
		if (x != NULL && lc_parse(x, &err) == 0)
			e->ce_lc = x;
		else
			s3_xml_free(x);
		free(doc);
	}
	return rc == -ENOENT ? 0 : rc;
}

/* b's cached configuration (a reference: bc_put() it), read again when
 * older than BC_CACHE_TTL_NS; NULL when it cannot be read. */
static struct bc_ent *bc_get(const struct s3_bucket *b)
{
	struct bc_ent *e, *ne, *gone = NULL;
	uint64_t now = s3_now_ns(), gen;

	pthread_mutex_lock(&bcc.cc_lock);
	gen = bcc.cc_gen;
	for (e = *bc_slot(b->bk_name); e != NULL; e = e->ce_next)
		if (strcmp(e->ce_name, b->bk_name) == 0)
			break;
	if (e != NULL && e->ce_ctime == b->bk_ctime_ns &&
	    now - e->ce_loaded_ns < BC_CACHE_TTL_NS) {
		e->ce_ref++;
		pthread_mutex_unlock(&bcc.cc_lock);
		return e;
	}
	pthread_mutex_unlock(&bcc.cc_lock);
	ne = calloc(1, sizeof *ne);
	if (ne == NULL)
		return NULL;
	snprintf(ne->ce_name, sizeof ne->ce_name, "%s", b->bk_name);
	ne->ce_ctime = b->bk_ctime_ns;
	ne->ce_loaded_ns = now;
	ne->ce_ref = 2;
	if (bc_load(b, ne) != 0) {
		s3_xml_free(ne->ce_cors);
		s3_xml_free(ne->ce_lc);
		free(ne);
		return NULL;
	}
	pthread_mutex_lock(&bcc.cc_lock);
	if (bcc.cc_gen != gen) {
		/* a document changed while it was read: use what was read
		 * for this request, do not cache it */
		ne->ce_ref = 1;
		pthread_mutex_unlock(&bcc.cc_lock);
		return ne;
	}
	bc_unlink_locked(b->bk_name, &gone);
	if (bcc.cc_n >= BC_CACHE_MAX)
		bc_unlink_locked(NULL, &gone);
	ne->ce_next = *bc_slot(b->bk_name);
	*bc_slot(b->bk_name) = ne;
	bcc.cc_n++;
	pthread_mutex_unlock(&bcc.cc_lock);
	while ((e = gone) != NULL) {
		gone = e->ce_next;
		bc_put(e);
	}
	return ne;
}

int s3_bconf_versioning(struct s3_bucket *b)
{
	struct bc_ent *e = bc_get(b);
	int v = e != NULL ? e->ce_vers : BV_NONE;

	bc_put(e);
	return v;
}

/* ------------------------------------------------------------ requests */

bool s3_bconf_owns(const char *sub)
{
	return strcmp(sub, "versioning") == 0 || strcmp(sub, "cors") == 0 ||
	       strcmp(sub, "lifecycle") == 0;
}

static const char *op_name(const char *m, const char *sub)
{
	bool cors = strcmp(sub, "cors") == 0, lc = strcmp(sub, "lifecycle") == 0;

	if (strcmp(m, "GET") == 0)
		return cors ? "GetBucketCors"
		       : lc ? "GetBucketLifecycleConfiguration"
			    : "GetBucketVersioning";
	if (strcmp(m, "PUT") == 0)
		return cors ? "PutBucketCors"
		       : lc ? "PutBucketLifecycleConfiguration"
			    : "PutBucketVersioning";
	return cors ? "DeleteBucketCors" : lc ? "DeleteBucketLifecycle"
					      : "DeleteBucketVersioning";
}

/* The sub-resource of a request routed here. */
static const char *req_sub(struct s3_req *rq)
{
	return s3_qhas(rq, "cors") ? "cors"
	       : s3_qhas(rq, "lifecycle") ? "lifecycle" : "versioning";
}

/* Content-MD5, when sent, matches the body: 0, or the reply. */
static int body_md5(struct s3_req *rq)
{
	const char *m = s3_hdr(rq, "Content-MD5");
	uint8_t want[64], got[16];
	unsigned int gl = 16;

	if (m == NULL)
		return 0;
	if (strlen(m) != 24 || s3_b64dec(m, 24, want) != 16)
		return s3_reply_err(rq, 400, "InvalidDigest", "The Content-MD5 "
				    "you specified was invalid."), -EINVAL;
	EVP_Digest(rq->rq_xml.b_data ? rq->rq_xml.b_data : "",
		   rq->rq_xml.b_len, got, &gl, EVP_md5(), NULL);
	if (memcmp(want, got, 16) != 0)
		return s3_reply_err(rq, 400, "BadDigest", "The Content-MD5 you "
				    "specified did not match what we "
				    "received."), -EINVAL;
	return 0;
}

int s3_bconf_check(const char *sub, const char *xml, size_t n,
		   struct s3_buf *norm, uint32_t *status, const char **code,
		   char *msg, size_t ml)
{
	struct s3_xel *x = s3_xml_parse(xml, n);
	struct bc_err e = {0};
	int rc, vers = BV_NONE;

	xml_trim(x);
	if (x == NULL || xml_has_nul(x))
		rc = malformed(&e);
	else if (strcmp(sub, "cors") == 0)
		rc = cors_parse(x, &e);
	else if (strcmp(sub, "lifecycle") == 0)
		rc = lc_parse(x, &e);
	else
		rc = vers_parse(x, &vers, &e);
	if (rc != 0) {
		*status = e.be_status;
		*code = e.be_code;
		snprintf(msg, ml, "%s", e.be_msg);
	} else if (norm != NULL &&
		   (strcmp(sub, "versioning") != 0 || vers != BV_NONE)) {
		xml_emit(norm, x, true);
	}
	s3_xml_free(x);
	return rc;
}

/* The body of a PUT is in: validate, store, reply. */
static int put_end(struct s3_req *rq)
{
	const char *sub = req_sub(rq), *code;
	struct s3_bucket *b = rq->rq_bk;
	struct s3_buf doc = {0};
	uint32_t status;
	char msg[320];
	int rc;

	if (body_md5(rq) != 0)
		return 0;
	rc = s3_bconf_check(sub, rq->rq_xml.b_data ? rq->rq_xml.b_data : "",
			    rq->rq_xml.b_len, &doc, &status, &code, msg,
			    sizeof msg);
	if (rc != 0) {
		s3_buf_fini(&doc);
		return s3_reply_err(rq, status, code, "%s", msg);
	}
	rc = doc.b_oom ? -ENOMEM : doc.b_len ? doc_put(b, sub, &doc) : 0;
	s3_buf_fini(&doc);
	bc_forget(b->bk_name);
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "storing the bucket's "
				       "configuration");
	return s3_reply_empty(rq, 200);
}

static int get_doc(struct s3_req *rq, struct s3_bucket *b, const char *sub)
{
	struct s3_buf x = {0};
	char *doc = NULL;
	int rc = doc_get(b, sub, &doc);

	if (rc == -ENOENT && strcmp(sub, "versioning") == 0) {
		s3_buf_str(&x, XHDR "<VersioningConfiguration xmlns=\"" XMLNS
			   "\"/>");
		return s3_reply_xml(rq, 200, &x);
	}
	if (rc == -ENOENT && strcmp(sub, "cors") == 0)
		return s3_reply_err(rq, 404, "NoSuchCORSConfiguration", "The "
				    "CORS configuration does not exist");
	if (rc == -ENOENT)
		return s3_reply_err(rq, 404, "NoSuchLifecycleConfiguration",
				    "The lifecycle configuration does not "
				    "exist");
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "reading the bucket's "
				       "configuration");
	s3_buf_str(&x, XHDR);
	s3_buf_str(&x, doc);
	free(doc);
	return s3_reply_xml(rq, 200, &x);
}

int s3_bconf_op(struct s3_req *rq, struct s3_bucket *b, const char *sub)
{
	const char *m = rq->rq_method;
	int rc;

	rq->rq_op = op_name(m, sub);
	rq->rq_bk = b;
	if (strcmp(m, "GET") == 0)
		return get_doc(rq, b, sub);
	if (strcmp(m, "PUT") == 0) {
		rq->rq_body = S3_BODY_XML;
		rq->rq_end = put_end;
		return 0;
	}
	if (strcmp(m, "DELETE") == 0 && strcmp(sub, "versioning") != 0) {
		rc = doc_del(b->bk_name, sub);
		bc_forget(b->bk_name);
		if (rc != 0)
			return s3_reply_clovis(rq, rc, "deleting the bucket's "
					       "configuration");
		return s3_reply_empty(rq, 204);
	}
	return s3_reply_err(rq, 405, "MethodNotAllowed", "The specified method "
			    "is not allowed against this resource.");
}

int s3_bconf_drop(const char *name)
{
	int rc = doc_del(name, "versioning");

	if (rc == 0)
		rc = doc_del(name, "cors");
	if (rc == 0)
		rc = doc_del(name, "lifecycle");
	bc_forget(name);
	return rc;
}

/* Add the "name\0value\0" pairs of h to the reply. */
static void hdrs_apply(struct s3_req *rq, const struct s3_buf *h)
{
	size_t pos = 0;

	while (!h->b_oom && pos < h->b_len) {
		const char *n = h->b_data + pos, *v = n + strlen(n) + 1;

		s3_reply_hdr(rq, n, v);
		pos = (size_t)(v - h->b_data) + strlen(v) + 1;
	}
}

int s3_cors_preflight(struct s3_req *rq)
{
	const char *origin = s3_hdr(rq, "Origin");
	const char *meth = s3_hdr(rq, "Access-Control-Request-Method");
	const char *hl = s3_hdr(rq, "Access-Control-Request-Headers");
	const struct s3_xel *r;
	struct s3_bucket *b;
	struct s3_buf h = {0};
	struct bc_ent *e;
	int rc;

	rq->rq_op = "PreflightCors";
	if (origin == NULL || *origin == 0)
		return s3_reply_err(rq, 400, "BadRequest", "Insufficient "
				    "information. Origin request header "
				    "needed.");
	if (meth == NULL || *meth == 0)
		return s3_reply_err(rq, 400, "BadRequest", "Invalid "
				    "Access-Control-Request-Method: null");
	if (rq->rq_bucket[0] == 0)
		return s3_reply_err(rq, 400, "BadRequest", "A CORS preflight "
				    "request names a bucket");
	rc = strlen(rq->rq_bucket) > S3_BUCKET_MAX
		     ? -ENOENT : s3_bucket_get(rq->rq_bucket, &b);
	if (rc == -ENOENT)
		return s3_reply_err(rq, 403, "AccessForbidden", "CORSResponse: "
				    "Bucket not found");
	if (rc != 0)
		return s3_reply_clovis(rq, rc, "bucket lookup");
	e = bc_get(b);
	if (e == NULL)
		return s3_reply_err(rq, 503, "SlowDown", "the bucket's CORS "
				    "configuration cannot be read now: retry");
	if (e->ce_cors == NULL) {
		bc_put(e);
		return s3_reply_err(rq, 403, "AccessForbidden", "CORSResponse: "
				    "CORS is not enabled for this bucket.");
	}
	r = cors_match(e->ce_cors, origin, meth, hl);
	if (r != NULL)
		cors_hdrs(r, origin, hl, &h);
	bc_put(e);
	if (r == NULL)
		return s3_reply_err(rq, 403, "AccessForbidden", "CORSResponse: "
				    "This CORS request is not allowed. This is "
				    "usually because the evalution of Origin, "
				    "request method / Access-Control-Request-"
				    "Method or Access-Control-Request-Headers "
				    "are not whitelisted by the resource's "
				    "CORS spec.");
	hdrs_apply(rq, &h);
	s3_buf_fini(&h);
	return s3_reply_empty(rq, 200);
}

void s3_cors_reply_hdrs(struct s3_req *rq, struct s3_bucket *b)
{
	const char *origin = s3_hdr(rq, "Origin");
	const char *acrm = s3_hdr(rq, "Access-Control-Request-Method");
	const char *meth = rq->rq_method;
	const struct s3_xel *r;
	struct s3_buf h = {0};
	struct bc_ent *e;

	if (origin == NULL || *origin == 0 || rq->rq_method == NULL)
		return;
	e = bc_get(b);
	if (e == NULL || e->ce_cors == NULL) {
		bc_put(e);
		return;
	}
	/* as RGW (ceph/s3-tests test_cors_origin_response): the method of
	 * Access-Control-Request-Method when the request carries one */
	if (acrm != NULL && *acrm)
		meth = acrm;
	r = cors_match(e->ce_cors, origin, meth, NULL);
	if (r != NULL)
		cors_hdrs(r, origin, NULL, &h);
	bc_put(e);
	hdrs_apply(rq, &h);
	s3_buf_fini(&h);
}

/* ------------------------------------------------------------ lifecycle */

/* An enabled expiration rule, as the lifecycle thread applies it. */
struct lc_rule {
	char *lr_prefix;          /* "" for all */
	uint64_t lr_days;         /* 0: by date */
	int64_t lr_date;          /* seconds; with lr_days 0 */
	uint64_t lr_gt, lr_lt;    /* object size bounds, when set: */
	bool lr_has_gt, lr_has_lt;
	const struct s3_xel *lr_tags; /* holds the Tag conditions (NULL:
				       * none): each must be in the object's
				       * tag set */
};

static struct {
	pthread_mutex_t lc_lock;
	pthread_cond_t lc_cond;   /* stop */
	bool lc_stop, lc_started;
	pthread_t lc_thread;
	uint32_t lc_interval_s, lc_day_s;
	/* where the last pass stopped: bucket and index key ("" none) */
	char lc_bucket[S3_BUCKET_MAX + 1];
	uint8_t lc_key[CLOVIS_KEY_MAX];
	size_t lc_keyl;
	uint64_t lc_passes, lc_deleted; /* for the log */
} lc = {.lc_lock = PTHREAD_MUTEX_INITIALIZER,
	.lc_cond = PTHREAD_COND_INITIALIZER};

/* The condition f (Filter, And, or a Rule with a legacy Prefix) into r. */
static void lc_filter(const struct s3_xel *f, struct lc_rule *r)
{
	const struct s3_xel *c;

	for (c = f->x_child; c != NULL; c = c->x_next) {
		if (strcmp(c->x_name, "Prefix") == 0)
			r->lr_prefix = c->x_text;
		else if (strcmp(c->x_name, "Tag") == 0)
			r->lr_tags = f;
		else if (strcmp(c->x_name, "And") == 0)
			lc_filter(c, r);
		else if (strcmp(c->x_name, "ObjectSizeGreaterThan") == 0)
			r->lr_has_gt = num_ok(c, 0, UINT64_MAX, &r->lr_gt);
		else if (strcmp(c->x_name, "ObjectSizeLessThan") == 0)
			r->lr_has_lt = num_ok(c, 0, UINT64_MAX, &r->lr_lt);
	}
}

/* The enabled expiration rules of lifecycle document x (validated):
 * *n of them in a malloc()ed array whose strings point into x. */
static struct lc_rule *lc_rules(const struct s3_xel *x, uint32_t *n)
{
	struct lc_rule *v = calloc(BC_LC_RULES_MAX, sizeof *v);
	const struct s3_xel *r, *ex, *d, *f;

	*n = 0;
	for (r = x->x_child; v != NULL && r != NULL; r = r->x_next) {
		struct lc_rule *l = &v[*n];

		ex = xchild(r, "Expiration");
		if (strcmp(xchild(r, "Status")->x_text, "Enabled") != 0 ||
		    ex == NULL || *n >= BC_LC_RULES_MAX)
			continue;
		l->lr_prefix = "";
		if ((d = xchild(ex, "Days")) != NULL)
			num_ok(d, 1, INT32_MAX, &l->lr_days);
		else if ((d = xchild(ex, "Date")) != NULL)
			date_ok(d, &l->lr_date);
		else
			continue; /* ExpiredObjectDeleteMarker: no versions */
		f = xchild(r, "Filter");
		lc_filter(f != NULL ? f : r, l);
		(*n)++;
	}
	return v;
}

/* Does the tag set of record o (T_TAGS: "key\0value\0" pairs) hold key
 * k with value v? */
static bool obj_tag(const struct s3_orec *o, const char *k, const char *v)
{
	const char *p = (const char *)o->or_tags;
	const char *e = p != NULL ? p + o->or_tags_len : NULL;

	while (p != NULL && p < e) {
		const char *kz = memchr(p, 0, (size_t)(e - p));
		const char *vz = kz ? memchr(kz + 1, 0, (size_t)(e - kz - 1))
				    : NULL;

		if (vz == NULL)
			return false;
		if (strcmp(p, k) == 0 && strcmp(kz + 1, v) == 0)
			return true;
		p = vz + 1;
	}
	return false;
}

/* Every Tag condition of rule l is in o's tag set. */
static bool lc_tags_match(const struct lc_rule *l, const struct s3_orec *o)
{
	const struct s3_xel *t;

	for (t = l->lr_tags ? l->lr_tags->x_child : NULL; t != NULL;
	     t = t->x_next)
		if (strcmp(t->x_name, "Tag") == 0 &&
		    !obj_tag(o, xchild(t, "Key")->x_text,
			     xchild(t, "Value")->x_text))
			return false;
	return true;
}

/* Is the object (full key k, record o) expired by rule l at now (s)? */
static bool lc_expired(const struct lc_rule *l, const uint8_t *k, size_t kl,
		       const struct s3_orec *o, int64_t now)
{
	size_t pl = strlen(l->lr_prefix);
	int64_t at;

	if (!lc_tags_match(l, o) || kl < pl ||
	    memcmp(k, l->lr_prefix, pl) != 0 ||
	    (l->lr_has_gt && o->or_size <= l->lr_gt) ||
	    (l->lr_has_lt && o->or_size >= l->lr_lt))
		return false;
	if (l->lr_days == 0)
		return now >= l->lr_date;
	at = (int64_t)(o->or_mtime_ns / 1000000000u) +
	     (int64_t)(l->lr_days * lc.lc_day_s);
	if (lc.lc_day_s == 86400)
		at = (at + 86399) / 86400 * 86400; /* next midnight UTC, as S3 */
	return now >= at;
}

/* Wait (stoppable) up to ms. */
static void lc_sleep_ms(uint32_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&lc.lc_lock);
	if (!lc.lc_stop)
		pthread_cond_timedwait(&lc.lc_cond, &lc.lc_lock, &ts);
	pthread_mutex_unlock(&lc.lc_lock);
}

static bool lc_stopping(void)
{
	bool s;

	pthread_mutex_lock(&lc.lc_lock);
	s = lc.lc_stop;
	pthread_mutex_unlock(&lc.lc_lock);
	return s;
}

/*
 * Delete key ik of b as DeleteObject does (the record DEL and the DELETE
 * of its objects, one change), under the key's lock, and only if its
 * record is still the one the walk read (v): a PUT of the key since then
 * is never undone.  Returns 1 when deleted, 0 when not (changed, gone, a
 * change of the stripe in doubt, or its own outcome in doubt: the stripe
 * is then marked as s3_ops.c marks it), or a Clovis error.
 */
static int lc_delete(struct s3_bucket *b, const uint8_t *ik, size_t il,
		     const void *v, size_t vl)
{
	pthread_mutex_t *l = s3_key_lock(ik, il);
	struct s3_tx *t = s3_tx_new();
	struct s3_orec old;
	void *cv = NULL;
	size_t cl;
	int rc;

	if (t == NULL)
		return -ENOMEM;
	pthread_mutex_lock(l);
	if (s3_key_in_doubt(l)) {
		rc = 0; /* an earlier change of the stripe is in doubt: later */
		goto out;
	}
	rc = s3_idx_get(&b->bk_idx, ik, il, &cv, &cl);
	if (rc == -ENOENT || (rc == 0 && (cl != vl || memcmp(cv, v, vl) != 0))) {
		rc = 0; /* gone or changed since it was read */
		goto out;
	}
	if (rc == 0 && s3_orec_decode(cv, cl, &old) == 0)
		rc = s3_tx_free(t, b, &old, ik, il, NULL, 0);
	if (rc == 0)
		rc = s3_tx_del(t, &b->bk_idx, ik, il);
	if (rc != 0)
		goto out;
	rc = s3_tx_commit(t);
	t = NULL;
	if (s3_tx_doubt(rc)) {
		/* Cluster mode, outcome unknown: the stripe is marked, and
		 * changes of its keys wait (503) until the dtx is decided
		 * everywhere, as after a DeleteObject in doubt. */
		s3_key_doubt_set(l);
		rc = 0;
	} else if (rc == 0) {
		rc = 1;
	}
out:
	pthread_mutex_unlock(l);
	s3_tx_drop(t);
	free(cv);
	return rc;
}

/*
 * Apply the rules of bucket name's lifecycle document to its objects, from index key start (NULL: the first).  *scan / *del: what is
 * left of this pass's budget.  Returns 1 when the budget ran out (the
 * position is saved in lc), 0 when the bucket is done, or -errno.
 */
static int lc_bucket(const char *name, const uint8_t *start, size_t sl,
		     uint32_t *scan, uint32_t *del)
{
	struct s3_bucket *b;
	struct lc_rule *rules = NULL;
	struct s3_xel *x = NULL;
	struct bc_err e;
	void *keys[LC_BATCH], *vals[LC_BATCH];
	size_t klens[LC_BATCH], vlens[LC_BATCH];
	uint8_t cur[CLOVIS_KEY_MAX];
	size_t curl = 0;
	char *doc = NULL;
	uint32_t nr, n = 0, i, j;
	int rc = s3_bucket_get(name, &b);

	if (rc == 0 && !b->bk_dead && b->bk_vw == NULL)
		rc = doc_get(b, "lifecycle", &doc);
	if (rc == -ENOENT || (rc == 0 && (b->bk_dead || b->bk_vw != NULL)))
		return 0; /* bucket gone, or a document of an earlier one (a
			   * view bucket has none: PUT ?lifecycle is 501) */
	if (rc != 0)
		return rc;
	x = s3_xml_parse(doc, strlen(doc));
	xml_trim(x);
	if (x == NULL || lc_parse(x, &e) != 0) {
		fprintf(stderr, "strata-s3: lifecycle: bucket %s: stored "
			"configuration unreadable, ignored\n", name);
		rc = 0;
		goto out;
	}
	rules = lc_rules(x, &n);
	if (rules == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (start != NULL) {
		memcpy(cur, start, sl);
		curl = sl;
	}
	while (n > 0 && rc == 0) {
		int64_t now = (int64_t)(s3_now_ns() / 1000000000u);

		nr = LC_BATCH;
		rc = s3_idx_next(&b->bk_idx, curl ? cur : NULL, curl, curl != 0,
				 keys, klens, vals, vlens, &nr);
		if (rc != 0 || nr == 0)
			break;
		for (i = 0; i < nr; i++) {
			struct s3_orec o;
			const uint8_t *fk = keys[i];
			size_t fkl = klens[i];

			if (rc == 0 && (*scan == 0 || *del == 0)) {
				rc = 1;
				memcpy(lc.lc_key, cur, curl);
				lc.lc_keyl = curl;
				snprintf(lc.lc_bucket, sizeof lc.lc_bucket,
					 "%s", name);
			}
			if (rc == 0) {
				(*scan)--;
				memcpy(cur, keys[i], klens[i]);
				curl = klens[i];
			}
			if (rc == 0 &&
			    s3_orec_decode(vals[i], vlens[i], &o) == 0) {
				if (o.or_key != NULL)
					fk = o.or_key, fkl = o.or_key_len;
				for (j = 0; j < n; j++)
					if (lc_expired(&rules[j], fk, fkl, &o,
						       now))
						break;
				if (j < n) {
					int d = lc_delete(b, keys[i], klens[i],
							  vals[i], vlens[i]);

					if (d < 0)
						rc = d;
					*del -= d == 1;
					lc.lc_deleted += d == 1;
				}
			}
			free(keys[i]);
			free(vals[i]);
		}
		if (nr < LC_BATCH || lc_stopping())
			break;
	}
	if (rc < 0)
		fprintf(stderr, "strata-s3: lifecycle: bucket %s: %s: %s\n",
			name, clovis_strerror(rc), clovis_errmsg());
out:
	free(rules);
	s3_xml_free(x);
	free(doc);
	return rc;
}

/*
 * One pass: every bucket with a lifecycle document, from where the last
 * pass stopped, within LC_SCAN_MAX records examined and LC_DEL_MAX
 * deletions.
 */
static void lc_pass(void)
{
	struct clovis_idx *i;
	char start[S3_BUCKET_MAX + 16];
	void *keys[64], *vals[64];
	size_t klens[64], vlens[64], sl = 0;
	uint32_t scan = LC_SCAN_MAX, del = LC_DEL_MAX, nr, k;
	bool resume = lc.lc_bucket[0] != 0, excl = false, done = false;
	int rc = bc_idx(&i);

	if (rc != 0 || s3_settle_held())
		return;
	if (resume)
		sl = bc_key(lc.lc_bucket, "", start);
	while (!done && !lc_stopping()) {
		nr = 64;
		rc = s3_idx_next(i, sl ? start : NULL, sl, excl, keys, klens,
				 vals, vlens, &nr);
		if (rc != 0 || nr == 0)
			break;
		for (k = 0; k < nr; k++) {
			const char *key = keys[k];
			size_t nl = strnlen(key, klens[k]);
			bool ours = nl + 10 == klens[k] &&
				    memcmp(key + nl + 1, "lifecycle", 9) == 0 &&
				    nl <= S3_BUCKET_MAX;

			if (!done && ours) {
				char name[S3_BUCKET_MAX + 1];
				bool from = resume &&
					    strcmp(key, lc.lc_bucket) == 0;
				uint8_t sk[CLOVIS_KEY_MAX];
				size_t skl = from ? lc.lc_keyl : 0;

				memcpy(name, key, nl);
				name[nl] = 0;
				memcpy(sk, lc.lc_key, skl);
				lc.lc_bucket[0] = 0;
				lc.lc_keyl = 0;
				rc = lc_bucket(name, skl ? sk : NULL, skl,
					       &scan, &del);
				done = rc == 1 || lc_stopping();
			}
			if (k == nr - 1) {
				memcpy(start, keys[k], klens[k]);
				sl = klens[k];
				excl = true;
			}
			free(keys[k]);
			free(vals[k]);
		}
		if (nr < 64)
			break;
	}
	lc.lc_passes++;
	if (del < LC_DEL_MAX)
		fprintf(stderr, "strata-s3: lifecycle: %u objects expired "
			"(pass %lu, %lu in all)%s\n", LC_DEL_MAX - del,
			(unsigned long)lc.lc_passes,
			(unsigned long)lc.lc_deleted,
			done ? "; the next pass goes on" : "");
}

static void *lc_main(void *arg)
{
	uint64_t next = s3_now_ns() + lc.lc_interval_s * 1000000000ull;

	while (!lc_stopping()) {
		uint64_t now = s3_now_ns();

		if (now < next) {
			uint64_t ms = (next - now) / 1000000u + 1;

			lc_sleep_ms(ms > 1000 ? 1000 : (uint32_t)ms);
			continue;
		}
		lc_pass();
		next = s3_now_ns() + lc.lc_interval_s * 1000000000ull;
	}
	return NULL;
}

int s3_lifecycle_start(void)
{
	struct clovis_idx *i;
	int rc;

	/* the index now if it can be (a failure is logged; each request and
	 * each pass tries again) */
	bc_idx(&i);
	lc.lc_interval_s = s3g.g_conf.sc_lc_interval_s
				   ? s3g.g_conf.sc_lc_interval_s
				   : LC_INTERVAL_DEFAULT;
	lc.lc_day_s = s3g.g_conf.sc_lc_day_s ? s3g.g_conf.sc_lc_day_s
					     : LC_DAY_DEFAULT;
	if (lc.lc_day_s != LC_DAY_DEFAULT)
		fprintf(stderr, "strata-s3: lifecycle: a day is %u s (test "
			"option lifecycle-day)\n", lc.lc_day_s);
	lc.lc_stop = false;
	rc = -pthread_create(&lc.lc_thread, NULL, lc_main, NULL);
	lc.lc_started = rc == 0;
	return rc;
}

void s3_lifecycle_stop(void)
{
	if (!lc.lc_started)
		return;
	pthread_mutex_lock(&lc.lc_lock);
	lc.lc_stop = true;
	pthread_cond_broadcast(&lc.lc_cond);
	pthread_mutex_unlock(&lc.lc_lock);
	pthread_join(lc.lc_thread, NULL);
	lc.lc_started = false;
	bc_forget(NULL);
}

/* When is the object (key k, record o) expired by rule l (seconds)? -1:
 * the rule does not apply to it. */
static int64_t lc_expiry(const struct lc_rule *l, const char *k, size_t kl,
			 const struct s3_orec *o)
{
	size_t pl = strlen(l->lr_prefix);
	uint64_t day = lc.lc_day_s != 0 ? lc.lc_day_s : 86400;
	int64_t at;

	if (!lc_tags_match(l, o) || kl < pl ||
	    memcmp(k, l->lr_prefix, pl) != 0 ||
	    (l->lr_has_gt && o->or_size <= l->lr_gt) ||
	    (l->lr_has_lt && o->or_size >= l->lr_lt))
		return -1;
	if (l->lr_days == 0)
		return l->lr_date;
	at = (int64_t)(o->or_mtime_ns / 1000000000u) +
	     (int64_t)(l->lr_days * day);
	if (day == 86400)
		at = (at + 86399) / 86400 * 86400;
	return at;
}

void s3_lifecycle_hdr(struct s3_req *rq, struct s3_bucket *b,
		      const char *key, size_t kl, const struct s3_orec *o)
{
	struct bc_ent *e = bc_get(b);
	const struct s3_xel *r, *id = NULL;
	struct lc_rule *rules;
	int64_t best = -1;
	uint32_t n = 0, i, k = 0;
	char v[200], date[64];
	struct tm tm;
	time_t t;

	if (e == NULL || e->ce_lc == NULL) {
		bc_put(e);
		return;
	}
	rules = lc_rules(e->ce_lc, &n);
	for (i = 0; rules != NULL && i < n; i++) {
		int64_t at = lc_expiry(&rules[i], key, kl, o);

		if (at >= 0 && (best < 0 || at < best)) {
			best = at;
			k = i;
		}
	}
	/* the rule-id: that of the k-th enabled expiration rule */
	for (r = e->ce_lc->x_child, i = 0; best >= 0 && r != NULL;
	     r = r->x_next) {
		const struct s3_xel *ex = xchild(r, "Expiration");

		if (strcmp(xchild(r, "Status")->x_text, "Enabled") != 0 ||
		    ex == NULL || (xchild(ex, "Days") == NULL &&
				   xchild(ex, "Date") == NULL))
			continue;
		if (i++ == k) {
			id = xchild(r, "ID");
			break;
		}
	}
	if (best >= 0 && id != NULL) {
		t = (time_t)best;
		gmtime_r(&t, &tm);
		strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		snprintf(v, sizeof v, "expiry-date=\"%s\", rule-id=\"%.100s\"",
			 date, id->x_text);
		s3_reply_hdr(rq, "x-amz-expiration", v);
	}
	free(rules);
	bc_put(e);
}
