/*
 * s3_policy.c — bucket policies (?policy, ?policyStatus) and their
 * evaluation.  The JSON document is kept as sent (T_POLICY of the bucket
 * record) and compiled here with json-c into statements of: an effect
 * (Allow or Deny), principals ("*" for everyone, anonymous included, or
 * user names, written "NAME", "arn:aws:iam:::user/NAME" or
 * "arn:aws:iam::ACCOUNT:user/NAME"), actions ("s3:GetObject", with * and ?
 * wildcards, case-insensitive) and resources ("arn:aws:s3:::BUCKET" or
 * "arn:aws:s3:::BUCKET/KEY-PATTERN", * and ? wildcards; those of other
 * buckets are accepted and never match), each list possibly negated
 * (NotPrincipal, NotAction, NotResource), and Conditions: the operators
 * String(Not)Equals(IgnoreCase), String(Not)Like, Numeric(Not)Equals,
 * NumericLessThan(Equals), NumericGreaterThan(Equals), Bool, Null,
 * (Not)IpAddress, each with the IfExists suffix (but Null) and the
 * ForAnyValue: / ForAllValues: prefixes, over the keys the gateway
 * supplies (the keys[] table: s3:ExistingObjectTag/K, s3:RequestObjectTag/K,
 * s3:RequestObjectTagKeys, s3:x-amz-acl, s3:x-amz-grant-*,
 * s3:x-amz-copy-source, s3:x-amz-metadata-directive, s3:prefix,
 * s3:delimiter, s3:max-keys, aws:SourceIp, aws:username,
 * aws:SecureTransport, aws:Referer, aws:UserAgent).  A condition key
 * absent from the request makes its condition false, except with
 * IfExists, ForAllValues: and the negated operators (true).  What the
 * evaluation would get wrong if it were ignored is refused at PUT with
 * 400 MalformedPolicy naming it: an unknown condition operator or key, a
 * principal that is not "*" or AWS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <arpa/inet.h>
#include <json-c/json.h>
#include <microhttpd.h>

#include "gateways/s3/s3.h"

#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XHDR "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

struct pol_list {
	uint32_t pl_n;
	char *pl_s[S3_POL_LIST_MAX];
};

/* Condition operators (the IfExists suffix and ForAnyValue: /
 * ForAllValues: prefixes are flags of a condition). */
enum {
	OP_STR_EQ, OP_STR_NE, OP_STR_EQ_IC, OP_STR_NE_IC, OP_STR_LIKE,
	OP_STR_NLIKE, OP_NUM_EQ, OP_NUM_NE, OP_NUM_LT, OP_NUM_LE, OP_NUM_GT,
	OP_NUM_GE, OP_BOOL, OP_NULL, OP_IP, OP_NIP,
};

static const struct {
	const char *name;
	uint8_t op;
	bool neg;
} ops[] = {
	{"StringEquals", OP_STR_EQ, false},
	{"StringNotEquals", OP_STR_NE, true},
	{"StringEqualsIgnoreCase", OP_STR_EQ_IC, false},
	{"StringNotEqualsIgnoreCase", OP_STR_NE_IC, true},
	{"StringLike", OP_STR_LIKE, false},
	{"StringNotLike", OP_STR_NLIKE, true},
	{"NumericEquals", OP_NUM_EQ, false},
	{"NumericNotEquals", OP_NUM_NE, true},
	{"NumericLessThan", OP_NUM_LT, false},
	{"NumericLessThanEquals", OP_NUM_LE, false},
	{"NumericGreaterThan", OP_NUM_GT, false},
	{"NumericGreaterThanEquals", OP_NUM_GE, false},
	{"Bool", OP_BOOL, false},
	{"Null", OP_NULL, false},
	{"IpAddress", OP_IP, false},
	{"NotIpAddress", OP_NIP, true},
};

/* Condition keys the gateway supplies. */
enum {
	K_EXTAG, K_REQTAG, K_REQTAGKEYS, K_HDR, K_PREFIX, K_DELIM, K_MAXKEYS,
	K_SRCIP, K_USERNAME, K_SECURE, K_COPYSRC,
};

static const struct {
	const char *name;  /* lower case; a trailing '/' takes an argument */
	uint8_t key;
	const char *hdr;   /* K_HDR: the request header */
} keys[] = {
	{"s3:existingobjecttag/", K_EXTAG, NULL},
	{"s3:requestobjecttag/", K_REQTAG, NULL},
	{"s3:requestobjecttagkeys", K_REQTAGKEYS, NULL},
	{"s3:x-amz-acl", K_HDR, "x-amz-acl"},
	{"s3:x-amz-grant-read", K_HDR, "x-amz-grant-read"},
	{"s3:x-amz-grant-write", K_HDR, "x-amz-grant-write"},
	{"s3:x-amz-grant-read-acp", K_HDR, "x-amz-grant-read-acp"},
	{"s3:x-amz-grant-write-acp", K_HDR, "x-amz-grant-write-acp"},
	{"s3:x-amz-grant-full-control", K_HDR, "x-amz-grant-full-control"},
	{"s3:x-amz-copy-source", K_COPYSRC, NULL},
	{"s3:x-amz-metadata-directive", K_HDR, "x-amz-metadata-directive"},
	{"s3:x-amz-server-side-encryption", K_HDR,
	 "x-amz-server-side-encryption"},
	{"s3:x-amz-storage-class", K_HDR, "x-amz-storage-class"},
	{"s3:prefix", K_PREFIX, NULL},
	{"s3:delimiter", K_DELIM, NULL},
	{"s3:max-keys", K_MAXKEYS, NULL},
	{"aws:sourceip", K_SRCIP, NULL},
	{"aws:username", K_USERNAME, NULL},
	{"aws:securetransport", K_SECURE, NULL},
	{"aws:referer", K_HDR, "Referer"},
	{"aws:useragent", K_HDR, "User-Agent"},
};

struct pol_cond {
	uint8_t c_op;
	bool c_neg;         /* a negated operator (StringNotEquals, ...) */
	bool c_ifex;        /* ...IfExists */
	uint8_t c_set;      /* 0, 1 ForAnyValue:, 2 ForAllValues: */
	uint8_t c_key;      /* K_* */
	const char *c_hdr;  /* K_HDR */
	char *c_arg;        /* the tag key of K_EXTAG, K_REQTAG */
	struct pol_list c_vals;
};

struct pol_stmt {
	bool ps_deny;
	bool ps_nprinc, ps_nact, ps_nres;  /* NotPrincipal, ... */
	struct pol_list ps_princ; /* "*" or user names */
	struct pol_list ps_act;   /* patterns */
	struct pol_list ps_res;   /* patterns over "BUCKET" / "BUCKET/KEY" */
	uint32_t ps_nc;
	struct pol_cond *ps_c;
};

struct s3_pol {
	uint32_t p_n;
	bool p_extag;       /* a condition reads s3:ExistingObjectTag/ */
	struct pol_stmt p_st[];
};

/* Does s (n bytes) match pattern p (* any run, ? one byte)? */
static bool glob(const char *p, const char *s, size_t n, bool fold)
{
	size_t i = 0, star_p = (size_t)-1, star_i = 0, pi = 0, pl = strlen(p);

	while (i < n) {
		if (pi < pl && (p[pi] == '?' ||
				(fold ? tolower((unsigned char)p[pi]) ==
					tolower((unsigned char)s[i])
				      : p[pi] == s[i]))) {
			pi++;
			i++;
		} else if (pi < pl && p[pi] == '*') {
			star_p = pi++;
			star_i = i;
		} else if (star_p != (size_t)-1) {
			pi = star_p + 1;
			i = ++star_i;
		} else {
			return false;
		}
	}
	while (pi < pl && p[pi] == '*')
		pi++;
	return pi == pl;
}

static bool list_match(const struct pol_list *l, const char *s, size_t n,
		       bool fold)
{
	uint32_t i;

	for (i = 0; i < l->pl_n; i++)
		if (glob(l->pl_s[i], s, n, fold))
			return true;
	return false;
}

/* ------------------------------------------------ condition evaluation */

/* The values of a condition key in one request. */
struct kvals {
	uint32_t n;
	const char *v[S3_POL_VALS_MAX];
	struct s3_buf scratch;      /* decoded strings "v\0v\0" */
	size_t off[S3_POL_VALS_MAX];
	bool own[S3_POL_VALS_MAX];  /* v[i] is scratch + off[i] */
};

static void kv_own(struct kvals *kv, const char *s, size_t n)
{
	if (kv->n >= S3_POL_VALS_MAX)
		return;
	kv->off[kv->n] = kv->scratch.b_len;
	kv->own[kv->n] = true;
	s3_buf_add(&kv->scratch, s, n);
	s3_buf_add(&kv->scratch, "", 1);
	kv->n++;
}

static int hexv(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f'
	       ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* s (n bytes) URL-decoded ('+' a space when plus) as one value. */
static void kv_decoded(struct kvals *kv, const char *s, size_t n, bool plus)
{
	char *d = malloc(n + 1);
	size_t i, o = 0;

	if (d == NULL)
		return;
	for (i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n &&
		    hexv(s[i + 1]) >= 0 && hexv(s[i + 2]) >= 0) {
			d[o++] = (char)(hexv(s[i + 1]) * 16 + hexv(s[i + 2]));
			i += 2;
		} else {
			d[o++] = plus && s[i] == '+' ? ' ' : s[i];
		}
	}
	kv_own(kv, d, o);
	free(d);
}

/* The tag set T_TAGS ("k\0v\0" pairs, n bytes): the value of tag (NULL:
 * every key) into kv. */
static void kv_tags(struct kvals *kv, const uint8_t *t, size_t n,
		    const char *tag)
{
	size_t pos = 0;

	while (pos < n) {
		const char *k = (const char *)t + pos;
		size_t kl = strnlen(k, n - pos), vl;

		if (pos + kl + 1 >= n + 1)
			return;
		pos += kl + 1;
		vl = pos < n ? strnlen((const char *)t + pos, n - pos) : 0;
		if (tag == NULL)
			kv_own(kv, k, kl);
		else if (strlen(tag) == kl && memcmp(tag, k, kl) == 0)
			kv_own(kv, (const char *)t + pos, vl);
		pos += vl + 1;
	}
}

/* x-amz-tagging ("k=v&k2=v2", URL-encoded): the value of tag (NULL: the
 * keys) into kv. */
static void kv_reqtags(struct kvals *kv, const char *h, const char *tag)
{
	struct kvals one;

	while (h != NULL && *h != 0) {
		const char *amp = strchr(h, '&'), *e;
		size_t n = amp ? (size_t)(amp - h) : strlen(h);

		e = memchr(h, '=', n);
		memset(&one, 0, sizeof one);
		kv_decoded(&one, h, e ? (size_t)(e - h) : n, true);
		if (e != NULL)
			kv_decoded(&one, e + 1, n - (size_t)(e - h) - 1, true);
		else
			kv_own(&one, "", 0);
		if (one.n == 2) {
			const char *k = one.scratch.b_data + one.off[0];
			const char *v = one.scratch.b_data + one.off[1];

			if (tag == NULL)
				kv_own(kv, k, strlen(k));
			else if (strcmp(tag, k) == 0)
				kv_own(kv, v, strlen(v));
		}
		s3_buf_fini(&one.scratch);
		h = amp ? amp + 1 : NULL;
	}
}

/* Did the request come over TLS? */
static bool req_secure(struct s3_req *rq)
{
	return rq->rq_conn != NULL &&
	       MHD_get_connection_info(rq->rq_conn,
				       MHD_CONNECTION_INFO_PROTOCOL) != NULL;
}

static const char *query(struct s3_req *rq, const char *name)
{
	uint32_t i;

	for (i = 0; i < rq->rq_nq; i++)
		if (strcmp(rq->rq_qn[i], name) == 0)
			return rq->rq_qv[i] ? rq->rq_qv[i] : "";
	return NULL;
}

/* The values of c's key in the request of cx into kv. */
static void key_values(const struct pol_cond *c, const struct s3_pol_cx *cx,
		       const char *user, const struct s3_orec *r,
		       struct kvals *kv)
{
	struct s3_req *rq = cx->pc_rq;
	const char *v = NULL;

	switch (c->c_key) {
	case K_EXTAG:
		if (r != NULL && r->or_tags != NULL)
			kv_tags(kv, r->or_tags, r->or_tags_len, c->c_arg);
		return;
	case K_USERNAME:
		if (user != NULL && user[0] != 0)
			v = user;
		break;
	default:
		break;
	}
	if (rq == NULL) {
		if (v != NULL)
			kv_own(kv, v, strlen(v));
		return;
	}
	switch (c->c_key) {
	case K_REQTAG:
	case K_REQTAGKEYS:
		kv_reqtags(kv, s3_hdr(rq, "x-amz-tagging"),
			   c->c_key == K_REQTAG ? c->c_arg : NULL);
		return;
	case K_HDR:
		v = s3_hdr(rq, c->c_hdr);
		break;
	case K_COPYSRC:
		v = s3_hdr(rq, "x-amz-copy-source");
		if (v != NULL) {
			const char *q = strchr(v, '?');

			v += *v == '/';
			kv_decoded(kv, v, q ? (size_t)(q - v) : strlen(v),
				   false);
			return;
		}
		break;
	case K_PREFIX:
		/* a GET or HEAD of a missing key asks for s3:ListBucket (404
		 * rather than 403) with the key as the prefix, as S3 */
		v = query(rq, "prefix");
		if (v == NULL && rq->rq_key != NULL) {
			kv_own(kv, rq->rq_key, rq->rq_key_len);
			return;
		}
		break;
	case K_DELIM:
		v = query(rq, "delimiter");
		break;
	case K_MAXKEYS:
		v = query(rq, "max-keys");
		break;
	case K_SRCIP:
		v = strcmp(rq->rq_remote, "-") != 0 ? rq->rq_remote : NULL;
		break;
	case K_SECURE:
		v = req_secure(rq) ? "true" : "false";
		break;
	default:
		break;
	}
	if (v != NULL)
		kv_own(kv, v, strlen(v));
}

/* a within the CIDR block (or address) cidr? */
static bool ip_in(const char *a, const char *cidr)
{
	unsigned char x[16], y[16];
	char net[64];
	const char *sl = strchr(cidr, '/');
	size_t nl = sl ? (size_t)(sl - cidr) : strlen(cidr);
	int fam, bits, len, i;

	if (nl >= sizeof net)
		return false;
	memcpy(net, cidr, nl);
	net[nl] = 0;
	fam = strchr(net, ':') ? AF_INET6 : AF_INET;
	len = fam == AF_INET ? 4 : 16;
	if (inet_pton(fam, net, y) != 1 || inet_pton(fam, a, x) != 1)
		return false;
	bits = sl ? atoi(sl + 1) : len * 8;
	if (bits < 0 || bits > len * 8)
		return false;
	for (i = 0; i < len && bits > 0; i++, bits -= 8) {
		unsigned m = bits >= 8 ? 0xffu : (0xffu << (8 - bits)) & 0xffu;

		if ((x[i] & m) != (y[i] & m))
			return false;
	}
	return true;
}

/* Does request value v match condition value w under op (positive)? */
static bool val_match(uint8_t op, const char *v, const char *w)
{
	char *e1, *e2;
	double a, b;

	switch (op) {
	case OP_STR_EQ:
	case OP_STR_NE:
		return strcmp(v, w) == 0;
	case OP_STR_EQ_IC:
	case OP_STR_NE_IC:
		return strcasecmp(v, w) == 0;
	case OP_STR_LIKE:
	case OP_STR_NLIKE:
		return glob(w, v, strlen(v), false);
	case OP_BOOL:
		return strcasecmp(v, w) == 0;
	case OP_IP:
	case OP_NIP:
		return ip_in(v, w);
	default:
		break;
	}
	a = strtod(v, &e1);
	b = strtod(w, &e2);
	if (*v == 0 || *e1 != 0 || *w == 0 || *e2 != 0)
		return false;
	switch (op) {
	case OP_NUM_EQ:
	case OP_NUM_NE:
		return a == b;
	case OP_NUM_LT:
		return a < b;
	case OP_NUM_LE:
		return a <= b;
	case OP_NUM_GT:
		return a > b;
	default:
		return a >= b;
	}
}

/* Is condition c true for the request? */
static bool cond_true(const struct pol_cond *c, const struct s3_pol_cx *cx,
		      const char *user, const struct s3_orec *r)
{
	struct kvals kv;
	bool res, any = false, all = true;
	uint32_t i, j;

	memset(&kv, 0, sizeof kv);
	key_values(c, cx, user, r, &kv);
	for (i = 0; i < kv.n; i++)
		kv.v[i] = kv.scratch.b_data + kv.off[i];
	if (c->c_op == OP_NULL) {
		/* "true": the key is absent */
		res = (strcasecmp(c->c_vals.pl_s[0], "true") == 0) == (kv.n == 0);
		s3_buf_fini(&kv.scratch);
		return res;
	}
	if (kv.n == 0) {
		s3_buf_fini(&kv.scratch);
		return c->c_ifex || c->c_set == 2 || c->c_neg;
	}
	for (i = 0; i < kv.n; i++) {
		bool m = false;

		for (j = 0; j < c->c_vals.pl_n && !m; j++)
			m = val_match(c->c_op, kv.v[i], c->c_vals.pl_s[j]);
		if (c->c_neg)
			m = !m;
		any |= m;
		all &= m;
	}
	s3_buf_fini(&kv.scratch);
	return c->c_set == 2 ? all : any;
}

int s3_pol_eval(const struct s3_pol *p, const struct s3_pol_cx *cx,
		const char *user, const char *action, const char *res,
		size_t resl)
{
	static const struct s3_pol_cx none;
	const struct s3_orec *r;
	struct s3_orec got;
	void *gv = NULL;
	size_t gvl = 0;
	bool allow = false, looked = false;
	int out = S3_POL_NONE;
	uint32_t i, j;

	if (p == NULL)
		return S3_POL_NONE;
	if (cx == NULL)
		cx = &none;
	r = cx->pc_obj;
	for (i = 0; i < p->p_n && out == S3_POL_NONE; i++) {
		const struct pol_stmt *st = &p->p_st[i];
		bool who = false;

		for (j = 0; j < st->ps_princ.pl_n && !who; j++)
			who = strcmp(st->ps_princ.pl_s[j], "*") == 0 ||
			      (user != NULL && user[0] != 0 &&
			       strcmp(st->ps_princ.pl_s[j], user) == 0);
		if (who == st->ps_nprinc ||
		    list_match(&st->ps_act, action, strlen(action), true) ==
		    st->ps_nact ||
		    list_match(&st->ps_res, res, resl, false) == st->ps_nres)
			continue;
		/* s3:ExistingObjectTag of a request that did not read the
		 * object's record: read it once, for this evaluation only */
		if (p->p_extag && r == NULL && !looked && cx->pc_bk != NULL &&
		    cx->pc_key != NULL) {
			looked = true;
			if (s3_rec_get(cx->pc_bk, cx->pc_key, cx->pc_kl, &gv,
				       &gvl, &got) == 0)
				r = &got;
		}
		for (j = 0; j < st->ps_nc; j++)
			if (!cond_true(&st->ps_c[j], cx, user, r))
				break;
		if (j < st->ps_nc)
			continue;
		if (st->ps_deny)
			out = S3_POL_DENY;
		else
			allow = true;
	}
	free(gv);
	return out != S3_POL_NONE ? out : allow ? S3_POL_ALLOW : S3_POL_NONE;
}

bool s3_pol_reads_object(const struct s3_pol *p)
{
	return p != NULL && p->p_extag;
}

static void list_free(struct pol_list *l)
{
	uint32_t k;

	for (k = 0; k < l->pl_n; k++)
		free(l->pl_s[k]);
	l->pl_n = 0;
}

void s3_pol_free(struct s3_pol *p)
{
	uint32_t i, j;

	if (p == NULL)
		return;
	for (i = 0; i < p->p_n; i++) {
		struct pol_stmt *st = &p->p_st[i];

		list_free(&st->ps_princ);
		list_free(&st->ps_act);
		list_free(&st->ps_res);
		for (j = 0; j < st->ps_nc; j++) {
			free(st->ps_c[j].c_arg);
			list_free(&st->ps_c[j].c_vals);
		}
		free(st->ps_c);
	}
	free(p);
}

/* ------------------------------------------------------------ compile */

/* A string or an array of strings (with scalars: numbers and booleans
 * too) into l: NULL, or why not. */
static const char *list_of_any(json_object *o, struct pol_list *l,
			       bool scalars)
{
	size_t i, n = 1;
	bool arr = json_object_is_type(o, json_type_array);

	if (arr)
		n = json_object_array_length(o);
	if (n == 0 || n > S3_POL_LIST_MAX)
		return "must have 1 to 100 entries";
	for (i = 0; i < n; i++) {
		json_object *e = arr ? json_object_array_get_idx(o, i) : o;

		if (!json_object_is_type(e, json_type_string) &&
		    !(scalars && (json_object_is_type(e, json_type_int) ||
				  json_object_is_type(e, json_type_double) ||
				  json_object_is_type(e, json_type_boolean))))
			return scalars ? "a condition value must be a "
					 "string, a number or a boolean"
				       : "must be a string or an array of "
					 "strings";
		l->pl_s[l->pl_n] = strdup(json_object_get_string(e));
		if (l->pl_s[l->pl_n] == NULL)
			return "out of memory";
		l->pl_n++;
	}
	return NULL;
}

static const char *list_of(json_object *o, struct pol_list *l)
{
	return list_of_any(o, l, false);
}

/* The principals: "*", {"AWS": "*" | NAME | ARN | [...]}; ARNs of users
 * become their names. */
static const char *principals(json_object *o, struct pol_list *l)
{
	json_object *aws;
	const char *why;
	uint32_t i;

	if (json_object_is_type(o, json_type_string)) {
		if (strcmp(json_object_get_string(o), "*") != 0)
			return "Principal must be \"*\" or {\"AWS\": ...}";
		return list_of(o, l);
	}
	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "AWS", &aws) ||
	    json_object_object_length(o) != 1)
		return "Principal must be \"*\" or {\"AWS\": ...} (other "
		       "principal types are not supported)";
	why = list_of(aws, l);
	for (i = 0; why == NULL && i < l->pl_n; i++) {
		char *s = l->pl_s[i], *u;

		if (strncmp(s, "arn:aws:iam:", 12) != 0)
			continue;
		u = strstr(s, ":user/");
		if (u == NULL)
			return "a principal ARN must name a user "
			       "(arn:aws:iam:::user/NAME)";
		memmove(s, u + 6, strlen(u + 6) + 1);
	}
	return why;
}

/* Resources: S3 ARNs, kept without the ARN prefix; those of other
 * buckets never match a request on this one. */
static const char *resources(json_object *o, struct pol_list *l)
{
	const char *why = list_of(o, l);
	uint32_t i;

	for (i = 0; why == NULL && i < l->pl_n; i++) {
		char *s = l->pl_s[i];

		if (strncmp(s, "arn:aws:s3:::", 13) != 0)
			return "Policy has invalid resource (not "
			       "arn:aws:s3:::...)";
		memmove(s, s + 13, strlen(s + 13) + 1);
	}
	return why;
}

/* One operator's block {"KEY": VALUES, ...} into st's conditions. */
static const char *cond_block(const char *opname, json_object *blk,
			      struct pol_stmt *st, bool *extag, char *msg,
			      size_t ml)
{
	char name[64];
	size_t nl = strlen(opname);
	uint8_t set = 0;
	bool ifex = false;
	size_t i, k;

	if (strncmp(opname, "ForAnyValue:", 12) == 0) {
		set = 1;
		opname += 12;
	} else if (strncmp(opname, "ForAllValues:", 13) == 0) {
		set = 2;
		opname += 13;
	}
	nl = strlen(opname);
	if (nl > 8 && strcmp(opname + nl - 8, "IfExists") == 0) {
		ifex = true;
		nl -= 8;
	}
	for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (strlen(ops[i].name) == nl &&
		    strncmp(ops[i].name, opname, nl) == 0)
			break;
	if (i == sizeof ops / sizeof ops[0] ||
	    (ifex && ops[i].op == OP_NULL)) {
		snprintf(msg, ml, "unsupported condition operator %.100s",
			 opname);
		return msg;
	}
	if (!json_object_is_type(blk, json_type_object) ||
	    json_object_object_length(blk) == 0) {
		snprintf(msg, ml, "condition %s must be an object of keys",
			 ops[i].name);
		return msg;
	}
	json_object_object_foreach(blk, key, vals) {
		struct pol_cond *c;
		const char *why;

		if (st->ps_nc >= S3_POL_COND_MAX)
			return "a Statement has at most 20 conditions";
		snprintf(name, sizeof name, "%s", key);
		for (k = 0; name[k] != 0; k++)
			name[k] = (char)tolower((unsigned char)name[k]);
		for (k = 0; k < sizeof keys / sizeof keys[0]; k++) {
			size_t kl = strlen(keys[k].name);

			if (keys[k].name[kl - 1] == '/'
			    ? strncmp(name, keys[k].name, kl) == 0 &&
			      strlen(key) > kl && strlen(key) < sizeof name
			    : strcmp(name, keys[k].name) == 0 &&
			      strlen(key) < sizeof name)
				break;
		}
		if (k == sizeof keys / sizeof keys[0]) {
			snprintf(msg, ml, "unsupported condition key %.100s",
				 key);
			return msg;
		}
		c = &st->ps_c[st->ps_nc++];
		c->c_op = ops[i].op;
		c->c_neg = ops[i].neg;
		c->c_ifex = ifex;
		c->c_set = set;
		c->c_key = keys[k].key;
		c->c_hdr = keys[k].hdr;
		if (keys[k].key == K_EXTAG || keys[k].key == K_REQTAG) {
			c->c_arg = strdup(key + strlen(keys[k].name));
			if (c->c_arg == NULL)
				return "out of memory";
		}
		*extag |= keys[k].key == K_EXTAG;
		why = list_of_any(vals, &c->c_vals, true);
		if (why != NULL) {
			snprintf(msg, ml, "condition %s %.100s: %s",
				 ops[i].name, key, why);
			return msg;
		}
		if ((c->c_op == OP_NULL || c->c_op == OP_BOOL) &&
		    (c->c_vals.pl_n != 1 ||
		     (strcasecmp(c->c_vals.pl_s[0], "true") != 0 &&
		      strcasecmp(c->c_vals.pl_s[0], "false") != 0))) {
			snprintf(msg, ml, "condition %s %.100s: the value "
				 "must be true or false", ops[i].name, key);
			return msg;
		}
	}
	return NULL;
}

/* One statement: NULL, or why it is refused (in msg when formatted). */
static const char *statement(json_object *o, struct pol_stmt *st,
			     bool *extag, char *msg, size_t ml)
{
	json_object *e, *pr, *ac, *rs, *cd;
	bool npr, nac, nrs;
	const char *eff, *why;
	size_t i;

	if (!json_object_is_type(o, json_type_object))
		return "a Statement must be an object";
	if (!json_object_object_get_ex(o, "Effect", &e) ||
	    !json_object_is_type(e, json_type_string))
		return "a Statement needs an Effect";
	eff = json_object_get_string(e);
	if (strcmp(eff, "Allow") != 0 && strcmp(eff, "Deny") != 0)
		return "Effect must be Allow or Deny";
	st->ps_deny = eff[0] == 'D';
	npr = json_object_object_get_ex(o, "NotPrincipal", NULL);
	nac = json_object_object_get_ex(o, "NotAction", NULL);
	nrs = json_object_object_get_ex(o, "NotResource", NULL);
	if (npr == json_object_object_get_ex(o, "Principal", NULL) ||
	    nac == json_object_object_get_ex(o, "Action", NULL) ||
	    nrs == json_object_object_get_ex(o, "Resource", NULL))
		return "a Statement needs one of Principal and NotPrincipal, "
		       "one of Action and NotAction, one of Resource and "
		       "NotResource";
	json_object_object_get_ex(o, npr ? "NotPrincipal" : "Principal", &pr);
	json_object_object_get_ex(o, nac ? "NotAction" : "Action", &ac);
	json_object_object_get_ex(o, nrs ? "NotResource" : "Resource", &rs);
	st->ps_nprinc = npr;
	st->ps_nact = nac;
	st->ps_nres = nrs;
	why = principals(pr, &st->ps_princ);
	if (why == NULL)
		why = list_of(ac, &st->ps_act);
	for (i = 0; why == NULL && i < st->ps_act.pl_n; i++)
		if (strncasecmp(st->ps_act.pl_s[i], "s3:", 3) != 0 &&
		    strcmp(st->ps_act.pl_s[i], "*") != 0)
			why = "an Action must be s3:NAME";
	if (why == NULL)
		why = resources(rs, &st->ps_res);
	if (why != NULL ||
	    !json_object_object_get_ex(o, "Condition", &cd))
		return why;
	if (!json_object_is_type(cd, json_type_object))
		return "Condition must be an object of operators";
	st->ps_c = calloc(S3_POL_COND_MAX, sizeof st->ps_c[0]);
	if (st->ps_c == NULL)
		return "out of memory";
	json_object_object_foreach(cd, op, blk) {
		why = cond_block(op, blk, st, extag, msg, ml);
		if (why != NULL)
			return why;
	}
	return NULL;
}

int s3_pol_compile(const char *json, size_t n, const char *bucket,
		   struct s3_pol **out, char *msg, size_t ml)
{
	json_tokener *tok = json_tokener_new();
	json_object *root = NULL, *sts;
	struct s3_pol *p = NULL;
	const char *why = NULL;
	char fmt[256];
	size_t i, ns = 1;

	(void)bucket;
	*out = NULL;
	if (n > S3_POL_BYTES_MAX)
		why = "the policy is larger than 20 KiB";
	else if (tok == NULL)
		why = "out of memory";
	if (why == NULL) {
		root = json_tokener_parse_ex(tok, json, (int)n);
		if (root == NULL ||
		    json_tokener_get_error(tok) != json_tokener_success ||
		    json_tokener_get_parse_end(tok) != n)
			why = "the policy is not well-formed JSON";
	}
	if (why == NULL && (!json_object_is_type(root, json_type_object) ||
			    !json_object_object_get_ex(root, "Statement",
						       &sts)))
		why = "a policy is an object with a Statement";
	if (why == NULL && json_object_is_type(sts, json_type_array))
		ns = json_object_array_length(sts);
	if (why == NULL && (ns == 0 || ns > S3_POL_STMT_MAX))
		why = "a policy has 1 to 100 statements";
	if (why == NULL) {
		p = calloc(1, sizeof *p + ns * sizeof p->p_st[0]);
		if (p == NULL)
			why = "out of memory";
	}
	for (i = 0; why == NULL && i < ns; i++) {
		why = statement(json_object_is_type(sts, json_type_array)
				? json_object_array_get_idx(sts, i) : sts,
				&p->p_st[i], &p->p_extag, fmt, sizeof fmt);
		p->p_n++;
	}
	json_object_put(root);
	if (tok != NULL)
		json_tokener_free(tok);
	if (why != NULL) {
		snprintf(msg, ml, "%s", why);
		s3_pol_free(p);
		return -EINVAL;
	}
	*out = p;
	return 0;
}

/* ---------------------------------------------------------- operations */

static int policy_end(struct s3_req *rq)
{
	struct s3_pol *p;
	char msg[200];
	int rc;

	rc = s3_pol_compile(rq->rq_xml.b_data ? rq->rq_xml.b_data : "",
			    rq->rq_xml.b_len, rq->rq_bucket, &p, msg,
			    sizeof msg);
	if (rc != 0)
		return s3_reply_err(rq, 400, "MalformedPolicy", "%s", msg);
	s3_pol_free(p);
	rc = s3_bucket_set(rq->rq_bk, T_POLICY, rq->rq_xml.b_data,
			   (uint32_t)rq->rq_xml.b_len);
	if (rc != 0)
		return s3_reply_rec(rq, rc, "recording the policy");
	return s3_reply_empty(rq, 204);
}

int s3_bucket_policy(struct s3_req *rq)
{
	const char *m = rq->rq_method;
	struct s3_buf x = {0};

	rq->rq_op = m[0] == 'G' ? "GetBucketPolicy" : m[0] == 'P'
		    ? "PutBucketPolicy" : "DeleteBucketPolicy";
	if (s3_need_bucket(rq, S3_P_OWNER, m[0] == 'G' ? "s3:GetBucketPolicy"
			   : m[0] == 'P' ? "s3:PutBucketPolicy"
			   : "s3:DeleteBucketPolicy") != 0)
		return 0;
	if (s3_bucket_doc_put_del(rq, T_POLICY, policy_end, "policy"))
		return 0;
	pthread_rwlock_rdlock(&rq->rq_bk->bk_conf);
	if (rq->rq_bk->bk_policy != NULL)
		s3_buf_add(&x, rq->rq_bk->bk_policy, rq->rq_bk->bk_policy_len);
	pthread_rwlock_unlock(&rq->rq_bk->bk_conf);
	if (x.b_len == 0)
		return s3_reply_err(rq, 404, "NoSuchBucketPolicy", "The bucket "
				    "policy does not exist");
	return s3_reply_xml(rq, 200, &x);
}

int s3_bucket_policy_status(struct s3_req *rq)
{
	struct s3_buf x = {0};
	bool have, pub = false;
	uint32_t i, j;

	rq->rq_op = "GetBucketPolicyStatus";
	if (s3_need_bucket(rq, S3_P_OWNER, "s3:GetBucketPolicyStatus") != 0)
		return 0;
	pthread_rwlock_rdlock(&rq->rq_bk->bk_conf);
	have = rq->rq_bk->bk_policy != NULL;
	for (i = 0; rq->rq_bk->bk_pol != NULL && i < rq->rq_bk->bk_pol->p_n;
	     i++) {
		const struct pol_stmt *st = &rq->rq_bk->bk_pol->p_st[i];

		for (j = 0; !st->ps_deny && j < st->ps_princ.pl_n; j++)
			pub |= strcmp(st->ps_princ.pl_s[j], "*") == 0;
	}
	pthread_rwlock_unlock(&rq->rq_bk->bk_conf);
	if (!have)
		return s3_reply_err(rq, 404, "NoSuchBucketPolicy", "The bucket "
				    "policy does not exist");
	s3_buf_printf(&x, XHDR "<PolicyStatus xmlns=\"" XMLNS "\"><IsPublic>%s"
		      "</IsPublic></PolicyStatus>", pub ? "true" : "false");
	return s3_reply_xml(rq, 200, &x);
}
