/*
 * s3_policy.c — bucket policies (?policy, ?policyStatus) and their
 * evaluation.  The JSON document is kept as sent (T_POLICY of the bucket
 * record) and compiled here with json-c into statements of: an effect
 * (Allow or Deny), principals ("*" for everyone, anonymous included, or
 * user names, written "NAME", "arn:aws:iam:::user/NAME" or
 * "arn:aws:iam::ACCOUNT:user/NAME"), actions ("s3:GetObject", with * and ?
 * wildcards, case-insensitive) and resources ("arn:aws:s3:::BUCKET" or
 * "arn:aws:s3:::BUCKET/KEY-PATTERN", * and ? wildcards).  What the
 * evaluation would get wrong if it were ignored is refused at PUT with
 * 400 MalformedPolicy: Condition, NotPrincipal, NotAction, NotResource, a
 * resource of another bucket, a principal that is not "*" or AWS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <json-c/json.h>

#include "gateways/s3/s3.h"

#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XHDR "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/** Statements of one policy, and strings of one list. */
#define S3_POL_STMT_MAX 100u
#define S3_POL_LIST_MAX 100u
/** Largest policy document (S3: 20 KiB). */
#define S3_POL_BYTES_MAX (20u << 10)

struct pol_list {
	uint32_t pl_n;
	char *pl_s[S3_POL_LIST_MAX];
};

struct pol_stmt {
	bool ps_deny;
	struct pol_list ps_princ; /* "*" or user names */
	struct pol_list ps_act;   /* patterns */
	struct pol_list ps_res;   /* patterns over "BUCKET" / "BUCKET/KEY" */
};

struct s3_pol {
	uint32_t p_n;
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

int s3_pol_eval(const struct s3_pol *p, const char *user, const char *action,
		const char *res, size_t resl)
{
	bool allow = false;
	uint32_t i, j;

	if (p == NULL)
		return S3_POL_NONE;
	for (i = 0; i < p->p_n; i++) {
		const struct pol_stmt *st = &p->p_st[i];
		bool who = false;

		for (j = 0; j < st->ps_princ.pl_n && !who; j++)
			who = strcmp(st->ps_princ.pl_s[j], "*") == 0 ||
			      (user != NULL && user[0] != 0 &&
			       strcmp(st->ps_princ.pl_s[j], user) == 0);
		if (!who || !list_match(&st->ps_act, action, strlen(action),
					true) ||
		    !list_match(&st->ps_res, res, resl, false))
			continue;
		if (st->ps_deny)
			return S3_POL_DENY;
		allow = true;
	}
	return allow ? S3_POL_ALLOW : S3_POL_NONE;
}

void s3_pol_free(struct s3_pol *p)
{
	uint32_t i, j;

	if (p == NULL)
		return;
	for (i = 0; i < p->p_n; i++) {
		struct pol_list *l[3] = {&p->p_st[i].ps_princ,
					 &p->p_st[i].ps_act,
					 &p->p_st[i].ps_res};

		for (j = 0; j < 3; j++) {
			uint32_t k;

			for (k = 0; k < l[j]->pl_n; k++)
				free(l[j]->pl_s[k]);
		}
	}
	free(p);
}

/* A string or an array of strings into l: NULL, or why not. */
static const char *list_of(json_object *o, struct pol_list *l)
{
	size_t i, n = 1;

	if (json_object_is_type(o, json_type_array))
		n = json_object_array_length(o);
	else if (!json_object_is_type(o, json_type_string))
		return "must be a string or an array of strings";
	if (n == 0 || n > S3_POL_LIST_MAX)
		return "must have 1 to 100 entries";
	for (i = 0; i < n; i++) {
		json_object *e = json_object_is_type(o, json_type_array)
				 ? json_object_array_get_idx(o, i) : o;

		if (!json_object_is_type(e, json_type_string))
			return "must be a string or an array of strings";
		l->pl_s[l->pl_n] = strdup(json_object_get_string(e));
		if (l->pl_s[l->pl_n] == NULL)
			return "out of memory";
		l->pl_n++;
	}
	return NULL;
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

/* Resources: ARNs of bucket (or its keys), kept without the ARN prefix. */
static const char *resources(json_object *o, const char *bucket,
			     struct pol_list *l)
{
	const char *why = list_of(o, l);
	size_t bl = strlen(bucket);
	uint32_t i;

	for (i = 0; why == NULL && i < l->pl_n; i++) {
		char *s = l->pl_s[i];

		if (strncmp(s, "arn:aws:s3:::", 13) != 0)
			return "Policy has invalid resource (not "
			       "arn:aws:s3:::...)";
		memmove(s, s + 13, strlen(s + 13) + 1);
		if (strncmp(s, bucket, bl) != 0 ||
		    (s[bl] != 0 && s[bl] != '/'))
			return "Policy has invalid resource (another bucket)";
	}
	return why;
}

/* One statement: NULL, or why it is refused. */
static const char *statement(json_object *o, const char *bucket,
			     struct pol_stmt *st)
{
	static const char *const refused[] = {
		"Condition", "NotPrincipal", "NotAction", "NotResource",
	};
	json_object *e, *pr, *ac, *rs;
	const char *eff, *why;
	size_t i;

	if (!json_object_is_type(o, json_type_object))
		return "a Statement must be an object";
	for (i = 0; i < sizeof refused / sizeof refused[0]; i++)
		if (json_object_object_get_ex(o, refused[i], NULL))
			return "Condition, NotPrincipal, NotAction and "
			       "NotResource are not supported by this gateway";
	if (!json_object_object_get_ex(o, "Effect", &e) ||
	    !json_object_is_type(e, json_type_string))
		return "a Statement needs an Effect";
	eff = json_object_get_string(e);
	if (strcmp(eff, "Allow") != 0 && strcmp(eff, "Deny") != 0)
		return "Effect must be Allow or Deny";
	st->ps_deny = eff[0] == 'D';
	if (!json_object_object_get_ex(o, "Principal", &pr) ||
	    !json_object_object_get_ex(o, "Action", &ac) ||
	    !json_object_object_get_ex(o, "Resource", &rs))
		return "a Statement needs a Principal, an Action and a "
		       "Resource";
	why = principals(pr, &st->ps_princ);
	if (why == NULL)
		why = list_of(ac, &st->ps_act);
	for (i = 0; why == NULL && i < st->ps_act.pl_n; i++)
		if (strncasecmp(st->ps_act.pl_s[i], "s3:", 3) != 0 &&
		    strcmp(st->ps_act.pl_s[i], "*") != 0)
			why = "an Action must be s3:NAME";
	return why != NULL ? why : resources(rs, bucket, &st->ps_res);
}

int s3_pol_compile(const char *json, size_t n, const char *bucket,
		   struct s3_pol **out, char *msg, size_t ml)
{
	json_tokener *tok = json_tokener_new();
	json_object *root = NULL, *sts;
	struct s3_pol *p = NULL;
	const char *why = NULL;
	size_t i, ns = 1;

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
				bucket, &p->p_st[i]);
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
	int rc;

	rq->rq_op = m[0] == 'G' ? "GetBucketPolicy" : m[0] == 'P'
		    ? "PutBucketPolicy" : "DeleteBucketPolicy";
	if (s3_need_bucket(rq, S3_P_OWNER, m[0] == 'G' ? "s3:GetBucketPolicy"
			   : m[0] == 'P' ? "s3:PutBucketPolicy"
			   : "s3:DeleteBucketPolicy") != 0)
		return 0;
	if (m[0] == 'P') {
		rq->rq_body = S3_BODY_XML;
		rq->rq_end = policy_end;
		return 0;
	}
	if (m[0] == 'D') {
		rc = s3_bucket_set(rq->rq_bk, T_POLICY, NULL, 0);
		return rc != 0 ? s3_reply_rec(rq, rc, "removing the policy")
			       : s3_reply_empty(rq, 204);
	}
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
