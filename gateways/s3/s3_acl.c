/*
 * s3_acl.c — access control of strata-s3: ACLs (canned, x-amz-grant-*
 * headers, ?acl documents), ownership controls, the authorization of every
 * request (s3_authz(), the order in s3.h) and anonymous requests.
 *
 * An ACL is kept as text in the record it protects (T_ACL of an object
 * record or of the bucket record): one grant a line, "PERM TYPE ID\n",
 * PERM one of READ WRITE READ_ACP WRITE_ACP FULL_CONTROL, TYPE "user" (ID:
 * a gateway user name, which is also its canonical ID) or "group" (ID:
 * AllUsers, AuthenticatedUsers or LogDelivery).  No T_ACL: the owner's
 * FULL_CONTROL alone (the private canned ACL).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateways/s3/s3.h"

#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XHDR "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define XSI "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\""
#define GROUPS "http://acs.amazonaws.com/groups/"

static const struct {
	const char *name;
	uint32_t bits;
} perms[] = {
	{"READ", S3_P_READ}, {"WRITE", S3_P_WRITE},
	{"READ_ACP", S3_P_READ_ACP}, {"WRITE_ACP", S3_P_WRITE_ACP},
	{"FULL_CONTROL", S3_P_FULL},
};

static const struct {
	const char *id;
	const char *uri;
} groups[] = {
	{"AllUsers", GROUPS "global/AllUsers"},
	{"AuthenticatedUsers", GROUPS "global/AuthenticatedUsers"},
	{"LogDelivery", GROUPS "s3/LogDelivery"},
};

static uint32_t perm_bits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof perms / sizeof perms[0]; i++)
		if (strlen(perms[i].name) == n &&
		    strncmp(perms[i].name, s, n) == 0)
			return perms[i].bits;
	return 0;
}

static const char *group_of_uri(const char *uri)
{
	size_t i;

	for (i = 0; i < sizeof groups / sizeof groups[0]; i++)
		if (strcmp(uri, groups[i].uri) == 0)
			return groups[i].id;
	return NULL;
}

static const char *user_name(const struct s3_req *rq)
{
	return rq->rq_authed ? rq->rq_user.u_name : "";
}

/* The permissions grants acl (n bytes, lines "PERM TYPE ID") give the
 * requester. */
static uint32_t acl_perms(const char *acl, size_t n, const char *user)
{
	const char *p = acl, *end = acl + n;
	uint32_t got = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end, *s1, *s2;

		s1 = memchr(p, ' ', (size_t)(e - p));
		s2 = s1 ? memchr(s1 + 1, ' ', (size_t)(e - s1 - 1)) : NULL;
		if (s2 != NULL) {
			const char *id = s2 + 1;
			size_t il = (size_t)(e - id);
			bool user_g = s2 - s1 - 1 == 4 &&
				      strncmp(s1 + 1, "user", 4) == 0;
			bool hit;

			if (user_g)
				hit = user[0] != 0 && strlen(user) == il &&
				      strncmp(user, id, il) == 0;
			else
				hit = (il == 8 && strncmp(id, "AllUsers", 8) == 0)
				      || (user[0] != 0 && il == 18 &&
					  strncmp(id, "AuthenticatedUsers", 18) == 0);
			if (hit)
				got |= perm_bits(p, (size_t)(s1 - p));
		}
		p = e + 1;
	}
	return got;
}

const char *s3_obj_owner(const struct s3_bucket *b, const struct s3_orec *r,
			 size_t *n)
{
	if (r != NULL && r->or_owner != NULL && r->or_owner_len > 0 &&
	    b->bk_ownctl != S3_OWN_ENFORCED) {
		*n = r->or_owner_len;
		return r->or_owner;
	}
	*n = strlen(b->bk_owner);
	return b->bk_owner;
}

const char *s3_new_owner(struct s3_req *rq, struct s3_bucket *b)
{
	const char *canned = s3_hdr(rq, "x-amz-acl");
	uint32_t ctl;

	if (!rq->rq_authed || rq->rq_user.u_name[0] == 0)
		return b->bk_owner;
	pthread_rwlock_rdlock(&b->bk_conf);
	ctl = b->bk_ownctl;
	pthread_rwlock_unlock(&b->bk_conf);
	if (ctl == S3_OWN_ENFORCED ||
	    (ctl == S3_OWN_PREFERRED && canned != NULL &&
	     strcmp(canned, "bucket-owner-full-control") == 0))
		return b->bk_owner;
	return rq->rq_user.u_name;
}

static bool is_policy_admin(const char *action)
{
	return action != NULL && (strcmp(action, "s3:GetBucketPolicy") == 0 ||
				  strcmp(action, "s3:PutBucketPolicy") == 0 ||
				  strcmp(action, "s3:DeleteBucketPolicy") == 0);
}

/* The decision of s3_authz(), under b's bk_conf read lock. */
static int authz_locked(struct s3_req *rq, struct s3_bucket *b,
			const char *key, size_t kl, const struct s3_orec *r,
			uint32_t perm, const char *action)
{
	const char *user = user_name(rq), *own;
	bool bowner = user[0] != 0 && strcmp(user, b->bk_owner) == 0;
	int pol = S3_POL_NONE;
	size_t on;

	if (b->bk_pol != NULL && action != NULL) {
		struct s3_buf res = {0};

		s3_buf_str(&res, b->bk_name);
		if (key != NULL) {
			s3_buf_str(&res, "/");
			s3_buf_add(&res, key, kl);
		}
		struct s3_pol_cx cx = {.pc_rq = rq, .pc_bk = b,
				       .pc_key = key, .pc_kl = kl,
				       .pc_obj = r};

		pol = s3_pol_eval(b->bk_pol, &cx, user, action, res.b_data ?
				  res.b_data : "", res.b_len);
		s3_buf_fini(&res);
		if (pol == S3_POL_DENY && !(bowner && is_policy_admin(action)))
			return -EACCES;
	}
	own = s3_obj_owner(b, r, &on);
	if (r != NULL && user[0] != 0 && strlen(user) == on &&
	    memcmp(user, own, on) == 0)
		return 0;
	/* the bucket owner: everything but an object another user owns
	 * (its data, tags and ACL), which only its ACL or the policy opens */
	if (bowner && (r == NULL || perm == S3_P_WRITE || perm == S3_P_OWNER))
		return 0;
	if (perm == S3_P_OWNER)
		return pol == S3_POL_ALLOW ? 0 : -EACCES;
	if (pol == S3_POL_ALLOW)
		return 0;
	if (b->bk_ownctl == S3_OWN_ENFORCED)
		return -EACCES;
	if (r != NULL && perm != S3_P_WRITE)
		return (acl_perms(r->or_acl ? r->or_acl : "", r->or_acl_len,
				  user) & perm) == perm ? 0 : -EACCES;
	return (acl_perms(b->bk_acl ? b->bk_acl : "", b->bk_acl_len, user) &
		perm) == perm ? 0 : -EACCES;
}

int s3_authz(struct s3_req *rq, struct s3_bucket *b, const char *key,
	     size_t kl, const struct s3_orec *r, uint32_t perm,
	     const char *action)
{
	int rc;

	pthread_rwlock_rdlock(&b->bk_conf);
	rc = authz_locked(rq, b, key, kl, r, perm, action);
	pthread_rwlock_unlock(&b->bk_conf);
	return rc;
}

/* ------------------------------------------------------ ACLs from headers */

/* Whether id (il bytes) names a user of the credentials file: the
 * canonical ID of a user is its name.  The file is read on each call (only
 * PUTs of ACLs with grants to users get here). */
static bool user_known(const char *id, size_t il)
{
	char line[512], name[64];
	bool found = false;
	FILE *f;

	if (il == 0 || il >= sizeof name)
		return false;
	f = fopen(s3g.g_conf.sc_creds, "r");
	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof line, f) != NULL)
		found = line[0] != '#' && sscanf(line, "%63s", name) == 1 &&
			strlen(name) == il && memcmp(name, id, il) == 0;
	fclose(f);
	return found;
}

static void grant_add(struct s3_buf *acl, const char *perm, const char *type,
		      const char *id, size_t il)
{
	s3_buf_printf(acl, "%s %s ", perm, type);
	s3_buf_add(acl, id, il);
	s3_buf_str(acl, "\n");
}

/* Canned ACL name for owner (bucket owner bo) into acl: 0, -EINVAL. */
static int acl_canned(const char *name, const char *owner, const char *bo,
		      struct s3_buf *acl)
{
	grant_add(acl, "FULL_CONTROL", "user", owner, strlen(owner));
	if (strcmp(name, "private") == 0)
		return 0;
	if (strcmp(name, "public-read") == 0) {
		grant_add(acl, "READ", "group", "AllUsers", 8);
	} else if (strcmp(name, "public-read-write") == 0) {
		grant_add(acl, "READ", "group", "AllUsers", 8);
		grant_add(acl, "WRITE", "group", "AllUsers", 8);
	} else if (strcmp(name, "authenticated-read") == 0) {
		grant_add(acl, "READ", "group", "AuthenticatedUsers", 18);
	} else if (strcmp(name, "bucket-owner-read") == 0) {
		if (strcmp(bo, owner) != 0)
			grant_add(acl, "READ", "user", bo, strlen(bo));
	} else if (strcmp(name, "bucket-owner-full-control") == 0) {
		if (strcmp(bo, owner) != 0)
			grant_add(acl, "FULL_CONTROL", "user", bo, strlen(bo));
	} else if (strcmp(name, "log-delivery-write") == 0) {
		grant_add(acl, "WRITE", "group", "LogDelivery", 11);
		grant_add(acl, "READ_ACP", "group", "LogDelivery", 11);
	} else {
		return -EINVAL;
	}
	return 0;
}

/* One grantee of an x-amz-grant-* value: 'id="x"', 'uri="..."' or
 * 'emailAddress="..."'.  0, -EINVAL (form), -ENXIO (no such user),
 * -ENOTSUP (e-mail: users have none, so no address resolves). */
static int grant_one(const char *s, size_t n, const char *perm,
		     struct s3_buf *acl)
{
	const char *eq = memchr(s, '=', n), *v;
	size_t kl, vl;
	char uri[128];

	if (eq == NULL)
		return -EINVAL;
	kl = (size_t)(eq - s);
	v = eq + 1;
	vl = n - kl - 1;
	if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
		v++;
		vl -= 2;
	}
	if (vl == 0 || memchr(v, '\n', vl) != NULL || memchr(v, ' ', vl))
		return -EINVAL;
	if (kl == 2 && strncasecmp(s, "id", 2) == 0) {
		if (!user_known(v, vl))
			return -ENXIO;
		grant_add(acl, perm, "user", v, vl);
		return 0;
	}
	if (kl == 3 && strncasecmp(s, "uri", 3) == 0 && vl < sizeof uri) {
		const char *g;

		memcpy(uri, v, vl);
		uri[vl] = 0;
		g = group_of_uri(uri);
		if (g == NULL)
			return -EINVAL;
		grant_add(acl, perm, "group", g, strlen(g));
		return 0;
	}
	if (kl == 12 && strncasecmp(s, "emailAddress", 12) == 0)
		return -ENOTSUP;
	return -EINVAL;
}

/* x-amz-grant-* headers into acl (these grants alone, as S3: the owner
 * gets no FULL_CONTROL grant it was not given): 0 (*any when one was
 * sent), -EINVAL, -ENXIO, -ENOTSUP. */
static int acl_grants(struct s3_req *rq, struct s3_buf *acl, bool *any)
{
	static const char *const h[][2] = {
		{"x-amz-grant-read", "READ"}, {"x-amz-grant-write", "WRITE"},
		{"x-amz-grant-read-acp", "READ_ACP"},
		{"x-amz-grant-write-acp", "WRITE_ACP"},
		{"x-amz-grant-full-control", "FULL_CONTROL"},
	};
	size_t i;

	*any = false;
	for (i = 0; i < sizeof h / sizeof h[0]; i++) {
		const char *v = s3_hdr(rq, h[i][0]);

		if (v == NULL)
			continue;
		*any = true;
		while (*v != 0) {
			size_t n;
			int rc;

			v += strspn(v, " ,");
			n = strcspn(v, ",");
			while (n > 0 && v[n - 1] == ' ')
				n--;
			if (n == 0)
				break;
			rc = grant_one(v, n, h[i][1], acl);
			if (rc != 0)
				return rc;
			v += n;
		}
	}
	return 0;
}

/* The refusal of a grantee that names nobody: -ENXIO an unknown user ID,
 * -ENOTSUP an e-mail address (gateway users have none). */
static int reply_grantee(struct s3_req *rq, int rc)
{
	if (rc == -ENOTSUP)
		return s3_reply_err(rq, 400, "UnresolvableGrantByEmailAddress",
				    "The e-mail address you provided does not "
				    "match any account on record (grant to "
				    "the user's ID instead)");
	return s3_reply_err(rq, 400, "InvalidArgument", "Invalid id: a "
			    "grantee ID must be the name of a user of this "
			    "gateway");
}

/* The refusal of an ACL on a bucket whose ownership is enforced. */
static int reply_no_acls(struct s3_req *rq)
{
	return s3_reply_err(rq, 400, "AccessControlListNotSupported", "The "
			    "bucket does not allow ACLs (its ObjectOwnership "
			    "is BucketOwnerEnforced)"), -EINVAL;
}

int s3_acl_req(struct s3_req *rq, const struct s3_bucket *b,
	       const char *owner, struct s3_buf *rec)
{
	const char *canned = s3_hdr(rq, "x-amz-acl");
	const char *bo = b != NULL ? b->bk_owner : owner;
	struct s3_buf acl = {0};
	bool any = false;
	int rc;

	rc = acl_grants(rq, &acl, &any);
	if (rc == -ENOTSUP || rc == -ENXIO) {
		s3_buf_fini(&acl);
		return reply_grantee(rq, rc), -EINVAL;
	}
	if (rc != 0) {
		s3_buf_fini(&acl);
		return s3_reply_err(rq, 400, "InvalidArgument", "an "
				    "x-amz-grant-* header is malformed: "
				    "expected id=\"USER\" or uri=\"" GROUPS
				    "...\" items"), -EINVAL;
	}
	if (any && canned != NULL) {
		s3_buf_fini(&acl);
		return s3_reply_err(rq, 400, "InvalidRequest", "Specifying both "
				    "Canned ACLs and Header Grants is not "
				    "allowed"), -EINVAL;
	}
	if (canned != NULL && acl_canned(canned, owner, bo, &acl) != 0) {
		s3_buf_fini(&acl);
		return s3_reply_err(rq, 400, "InvalidArgument", "x-amz-acl "
				    "'%.64s' is not a canned ACL", canned),
		       -EINVAL;
	}
	/* BucketOwnerEnforced: a new object takes no ACL but
	 * bucket-owner-full-control, a new bucket none but private (a PUT
	 * ?acl none: acl_of_put()) */
	if (b != NULL && b->bk_ownctl == S3_OWN_ENFORCED &&
	    (any || (canned != NULL &&
		     strcmp(canned, "bucket-owner-full-control") != 0 &&
		     !(rq->rq_key == NULL && strcmp(canned, "private") == 0)))) {
		s3_buf_fini(&acl);
		return reply_no_acls(rq);
	}
	if ((any || canned != NULL) &&
	    !(b != NULL && b->bk_ownctl == S3_OWN_ENFORCED))
		s3_tlv_add(rec, T_ACL, acl.b_data, (uint32_t)acl.b_len);
	s3_buf_fini(&acl);
	return 0;
}

/* -------------------------------------------------------- ?acl documents */

/* The <Grant>s of acl lines [p, end) to users (users) or to groups. */
static void acl_doc_grants(struct s3_buf *x, const char *p, const char *end,
			   bool users)
{
	while (p != NULL && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end, *s1, *s2;
		bool user_g;

		s1 = memchr(p, ' ', (size_t)(e - p));
		s2 = s1 ? memchr(s1 + 1, ' ', (size_t)(e - s1 - 1)) : NULL;
		user_g = s2 != NULL && strncmp(s1 + 1, "user", 4) == 0;
		if (s2 == NULL || user_g != users) {
			p = e + 1;
			continue;
		}
		if (user_g) {
			s3_buf_str(x, "<Grant><Grantee " XSI " xsi:type=\""
				   "CanonicalUser\"><ID>");
			s3_buf_xml(x, s2 + 1, (size_t)(e - s2 - 1));
			s3_buf_str(x, "</ID><DisplayName>");
			s3_buf_xml(x, s2 + 1, (size_t)(e - s2 - 1));
			s3_buf_str(x, "</DisplayName></Grantee>");
		} else {
			size_t i, il = (size_t)(e - s2 - 1);

			for (i = 0; i < sizeof groups / sizeof groups[0]; i++)
				if (strlen(groups[i].id) == il &&
				    strncmp(groups[i].id, s2 + 1, il) == 0)
					break;
			s3_buf_printf(x, "<Grant><Grantee " XSI " xsi:type=\""
				      "Group\"><URI>%s</URI></Grantee>",
				      i < sizeof groups / sizeof groups[0]
				      ? groups[i].uri : "");
		}
		s3_buf_str(x, "<Permission>");
		s3_buf_add(x, p, (size_t)(s1 - p));
		s3_buf_str(x, "</Permission></Grant>");
		p = e + 1;
	}
}

/* The AccessControlPolicy of owner and grants acl (NULL: private).  The
 * grants to groups come first, then those to users, each in the order
 * stored (as RGW lists them; ceph/s3-tests compares grants in this order
 * when the first one has no DisplayName). */
static void acl_doc(struct s3_buf *x, const char *owner, size_t on,
		    const char *acl, size_t n)
{
	const char *beg = acl, *end = acl != NULL ? acl + n : NULL;
	struct s3_buf priv = {0};

	if (acl == NULL) {
		grant_add(&priv, "FULL_CONTROL", "user", owner, on);
		beg = priv.b_data;
		end = beg + priv.b_len;
	}
	s3_buf_str(x, XHDR "<AccessControlPolicy xmlns=\"" XMLNS "\"><Owner>"
		   "<ID>");
	s3_buf_xml(x, owner, on);
	s3_buf_str(x, "</ID><DisplayName>");
	s3_buf_xml(x, owner, on);
	s3_buf_str(x, "</DisplayName></Owner><AccessControlList>");
	acl_doc_grants(x, beg, end, false);
	acl_doc_grants(x, beg, end, true);
	s3_buf_str(x, "</AccessControlList></AccessControlPolicy>");
	s3_buf_fini(&priv);
}

/* One <Grant> of a PUT ?acl body into acl: 0, -EINVAL, -ENXIO (no such
 * user), -ENOTSUP (e-mail). */
static int grant_xml(struct s3_xel *g, struct s3_buf *acl)
{
	struct s3_xel *ge = s3_xml_child(g, "Grantee");
	struct s3_xel *pe = s3_xml_child(g, "Permission"), *v;
	const char *grp;

	if (ge == NULL || pe == NULL ||
	    perm_bits(pe->x_text, pe->x_text_len) == 0)
		return -EINVAL;
	if ((v = s3_xml_child(ge, "ID")) != NULL) {
		if (v->x_text_len == 0 || memchr(v->x_text, ' ', v->x_text_len)
		    || memchr(v->x_text, '\n', v->x_text_len))
			return -EINVAL;
		if (!user_known(v->x_text, v->x_text_len))
			return -ENXIO;
		grant_add(acl, pe->x_text, "user", v->x_text, v->x_text_len);
		return 0;
	}
	if ((v = s3_xml_child(ge, "URI")) != NULL) {
		grp = group_of_uri(v->x_text);
		if (grp == NULL)
			return -EINVAL;
		grant_add(acl, pe->x_text, "group", grp, strlen(grp));
		return 0;
	}
	if (s3_xml_child(ge, "EmailAddress") != NULL)
		return -ENOTSUP;
	return -EINVAL;
}

/* The grants of a PUT ?acl request (headers or an AccessControlPolicy
 * body) for a resource of owner (on bytes) in bucket b, into acl.
 * Replies on refusal: -errno. */
static int acl_of_put(struct s3_req *rq, struct s3_bucket *b,
		      const char *owner, size_t on, struct s3_buf *acl)
{
	struct s3_buf rec = {0};
	struct s3_xel *x, *l, *g, *o;
	char own[64];
	int rc = 0;

	snprintf(own, sizeof own, "%.*s", (int)on, owner);
	if (b->bk_ownctl == S3_OWN_ENFORCED)
		return reply_no_acls(rq);
	if (s3_hdr(rq, "x-amz-acl") != NULL ||
	    s3_hdr(rq, "x-amz-grant-read") != NULL ||
	    s3_hdr(rq, "x-amz-grant-write") != NULL ||
	    s3_hdr(rq, "x-amz-grant-read-acp") != NULL ||
	    s3_hdr(rq, "x-amz-grant-write-acp") != NULL ||
	    s3_hdr(rq, "x-amz-grant-full-control") != NULL) {
		if (rq->rq_xml.b_len > 0)
			return s3_reply_err(rq, 400, "UnexpectedContent", "This "
					    "request does not support content "
					    "with ACL headers"), -EINVAL;
		rc = s3_acl_req(rq, b, own, &rec);
		if (rc == 0) {
			const uint8_t *val;
			size_t pos = 0;
			uint32_t n;
			uint8_t tag;

			while (s3_tlv_next(rec.b_data, rec.b_len, &pos, &tag,
					   &val, &n) == 1)
				s3_buf_add(acl, val, n);
		}
		s3_buf_fini(&rec);
		return rc;
	}
	x = s3_xml_body(rq, "AccessControlPolicy");
	if (x == NULL)
		return -EINVAL;
	o = s3_xml_child(x, "Owner");
	o = o ? s3_xml_child(o, "ID") : NULL;
	l = s3_xml_child(x, "AccessControlList");
	if (o != NULL && (o->x_text_len != on ||
			  memcmp(o->x_text, owner, on) != 0)) {
		s3_xml_free(x);
		return s3_reply_err(rq, 403, "AccessDenied", "the Owner of an "
				    "ACL cannot be changed (it is '%s')", own),
		       -EACCES;
	}
	for (g = l ? l->x_child : NULL; g != NULL && rc == 0; g = g->x_next)
		if (strcmp(g->x_name, "Grant") == 0)
			rc = grant_xml(g, acl);
	s3_xml_free(x);
	if (rc == -ENOTSUP || rc == -ENXIO)
		return reply_grantee(rq, rc), rc;
	if (rc != 0 || l == NULL)
		return s3_reply_err(rq, 400, "MalformedACLError", "The XML you "
				    "provided was not well-formed or did not "
				    "validate against our published schema"),
		       -EINVAL;
	return 0;
}

static int bucket_acl_end(struct s3_req *rq)
{
	struct s3_buf acl = {0};
	int rc;

	if (acl_of_put(rq, rq->rq_bk, rq->rq_bk->bk_owner,
		       strlen(rq->rq_bk->bk_owner), &acl) != 0) {
		s3_buf_fini(&acl);
		return 0;
	}
	rc = acl.b_oom ? -ENOMEM : s3_bucket_set(rq->rq_bk, T_ACL, acl.b_data
						 ? acl.b_data : "",
						 (uint32_t)acl.b_len);
	s3_buf_fini(&acl);
	if (rc != 0)
		return s3_reply_rec(rq, rc, "recording the bucket ACL");
	return s3_reply_empty(rq, 200);
}

int s3_bucket_acl(struct s3_req *rq)
{
	bool put = strcmp(rq->rq_method, "PUT") == 0;
	struct s3_buf x = {0};

	rq->rq_op = put ? "PutBucketAcl" : "GetBucketAcl";
	if (s3_need_bucket(rq, put ? S3_P_WRITE_ACP : S3_P_READ_ACP,
			   put ? "s3:PutBucketAcl" : "s3:GetBucketAcl") != 0)
		return 0;
	if (put) {
		rq->rq_body = S3_BODY_XML;
		rq->rq_end = bucket_acl_end;
		return 0;
	}
	pthread_rwlock_rdlock(&rq->rq_bk->bk_conf);
	acl_doc(&x, rq->rq_bk->bk_owner, strlen(rq->rq_bk->bk_owner),
		rq->rq_bk->bk_acl, rq->rq_bk->bk_acl_len);
	pthread_rwlock_unlock(&rq->rq_bk->bk_conf);
	return s3_reply_xml(rq, 200, &x);
}

int s3_need_object(struct s3_req *rq, uint32_t perm, const char *action,
		       void **v, size_t *vl, struct s3_orec *r)
{
	int rc;

	if (s3_need_bucket(rq, 0, NULL) != 0)
		return -ENOENT;
	if (rq->rq_key_len > S3_KEY_MAX)
		return s3_reply_err(rq, 400, "KeyTooLongError", "Your key is "
				    "too long"), -E2BIG;
	rc = s3_rec_get(rq->rq_bk, rq->rq_key, rq->rq_key_len, v, vl, r);
	if (rc == 0 && s3_authz(rq, rq->rq_bk, rq->rq_key, rq->rq_key_len, r, perm,
			       action) != 0) {
		free(*v);
		*v = NULL;
		rc = -EACCES;
	}
	if (rc == -EACCES)
		return s3_reply_err(rq, 403, "AccessDenied", "Access Denied"),
		       rc;
	if (rc != 0)
		return s3_reply_rec(rq, rc, "looking up the key"), rc;
	return 0;
}

static int object_acl_end(struct s3_req *rq)
{
	struct s3_buf acl = {0};
	struct s3_orec r;
	const char *own;
	void *v = NULL;
	size_t vl, on;
	int rc;

	if (s3_need_object(rq, S3_P_WRITE_ACP, "s3:PutObjectAcl", &v, &vl, &r)
	    != 0)
		return 0;
	own = s3_obj_owner(rq->rq_bk, &r, &on);
	if (acl_of_put(rq, rq->rq_bk, own, on, &acl) == 0) {
		rc = acl.b_oom ? -ENOMEM
			       : s3_rec_set(rq->rq_bk, rq->rq_key,
					    rq->rq_key_len, r.or_etag, T_ACL,
					    acl.b_data ? acl.b_data : "",
					    (uint32_t)acl.b_len);
		if (rc != 0)
			s3_reply_rec(rq, rc, "recording the object ACL");
		else
			s3_reply_empty(rq, 200);
	}
	s3_buf_fini(&acl);
	free(v);
	return 0;
}

int s3_object_acl(struct s3_req *rq)
{
	bool put = strcmp(rq->rq_method, "PUT") == 0;
	struct s3_buf x = {0};
	struct s3_orec r;
	const char *own;
	void *v;
	size_t vl, on;

	rq->rq_op = put ? "PutObjectAcl" : "GetObjectAcl";
	if (put) {
		if (s3_need_bucket(rq, 0, NULL) != 0)
			return 0;
		rq->rq_body = S3_BODY_XML;
		rq->rq_end = object_acl_end;
		return 0;
	}
	if (s3_need_object(rq, S3_P_READ_ACP, "s3:GetObjectAcl", &v, &vl, &r)
	    != 0)
		return 0;
	own = s3_obj_owner(rq->rq_bk, &r, &on);
	acl_doc(&x, own, on, r.or_acl, r.or_acl_len);
	free(v);
	return s3_reply_xml(rq, 200, &x);
}

/* ------------------------------------------------------ ownership controls */

static const char *const own_names[] = {
	NULL, "BucketOwnerEnforced", "BucketOwnerPreferred", "ObjectWriter",
};

/* Whether b's ACL is the owner's FULL_CONTROL alone. */
static bool bucket_acl_private(struct s3_bucket *b)
{
	struct s3_buf priv = {0};
	bool yes;

	s3_buf_printf(&priv, "FULL_CONTROL user %s\n", b->bk_owner);
	pthread_rwlock_rdlock(&b->bk_conf);
	yes = b->bk_acl == NULL || b->bk_acl_len == 0 ||
	      (priv.b_data != NULL && b->bk_acl_len == priv.b_len &&
	       memcmp(b->bk_acl, priv.b_data, priv.b_len) == 0);
	pthread_rwlock_unlock(&b->bk_conf);
	s3_buf_fini(&priv);
	return yes;
}

static int ownership_end(struct s3_req *rq)
{
	struct s3_xel *x = s3_xml_body(rq, "OwnershipControls"), *r, *o;
	uint8_t v[8];
	uint32_t i, want = 0;
	int rc, k;

	if (x == NULL)
		return 0;
	r = s3_xml_child(x, "Rule");
	o = r ? s3_xml_child(r, "ObjectOwnership") : NULL;
	for (i = 1; o != NULL && i < 4; i++)
		if (strcmp(o->x_text, own_names[i]) == 0)
			want = i;
	s3_xml_free(x);
	if (want == 0)
		return s3_reply_err(rq, 400, "MalformedXML", "OwnershipControls "
				    "needs one Rule with ObjectOwnership "
				    "BucketOwnerEnforced, BucketOwnerPreferred "
				    "or ObjectWriter");
	if (want == S3_OWN_ENFORCED && !bucket_acl_private(rq->rq_bk))
		return s3_reply_err(rq, 400, "InvalidBucketAclWithObjectOwnership",
				    "Bucket cannot have ACLs set with "
				    "ObjectOwnership's BucketOwnerEnforced "
				    "setting (make the bucket ACL private "
				    "first)");
	for (k = 0; k < 8; k++)
		v[k] = (uint8_t)((uint64_t)want >> (8 * k));
	rc = s3_bucket_set(rq->rq_bk, T_OWNCTL, v, 8);
	if (rc != 0)
		return s3_reply_rec(rq, rc, "recording the ownership controls");
	return s3_reply_empty(rq, 200);
}

int s3_bucket_ownership(struct s3_req *rq)
{
	const char *m = rq->rq_method;
	struct s3_buf x = {0};
	uint32_t cur;

	rq->rq_op = m[0] == 'G' ? "GetBucketOwnershipControls"
		    : m[0] == 'P' ? "PutBucketOwnershipControls"
				  : "DeleteBucketOwnershipControls";
	if (s3_need_bucket(rq, S3_P_OWNER, m[0] == 'G'
			   ? "s3:GetBucketOwnershipControls"
			   : "s3:PutBucketOwnershipControls") != 0)
		return 0;
	if (s3_bucket_doc_put_del(rq, T_OWNCTL, ownership_end,
				  "ownership controls"))
		return 0;
	pthread_rwlock_rdlock(&rq->rq_bk->bk_conf);
	cur = rq->rq_bk->bk_ownctl;
	pthread_rwlock_unlock(&rq->rq_bk->bk_conf);
	if (cur == S3_OWN_NONE || cur > 3)
		return s3_reply_err(rq, 404, "OwnershipControlsNotFoundError",
				    "The bucket ownership controls were not "
				    "found");
	s3_buf_printf(&x, XHDR "<OwnershipControls xmlns=\"" XMLNS "\"><Rule>"
		      "<ObjectOwnership>%s</ObjectOwnership></Rule>"
		      "</OwnershipControls>", own_names[cur]);
	return s3_reply_xml(rq, 200, &x);
}
