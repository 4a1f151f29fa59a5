/*
 * s3_ops_list.c — the listings of a bucket's keys: ListObjectsV2,
 * ListObjects and ListObjectVersions (prefix, delimiter and common
 * prefixes, markers and continuation tokens, encoding-type=url), one walk
 * of the bucket index (of a view bucket: its directory tree, in
 * s3_view_list.c).  Their routes are in s3_ops.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <microhttpd.h>
#include <openssl/sha.h>

#include "gateways/s3/s3.h"
#include "gateways/s3/s3_bconf.h"
#include "gateways/s3/s3_cksum.h"
#include "gateways/s3/s3_ops_internal.h"

/* ------------------------------------------------------------- listing */

static void xml_name(struct s3_buf *x, struct lst *l, const char *s, size_t n)
{
	if (l->l_url) {
		struct s3_buf e = {0};

		s3_urlenc(&e, s, n, true);
		s3_buf_xml(x, e.b_data ? e.b_data : "", e.b_len);
		s3_buf_fini(&e);
	} else {
		s3_buf_xml(x, s, n);
	}
}

static int bcmp_len(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c != 0 ? c : (al < bl ? -1 : al > bl);
}

static void lst_last(struct lst *l, const char *s, size_t n)
{
	if (l->l_last == NULL || l->l_lastcap < n + 1) {
		free(l->l_last);
		l->l_lastcap = n + 1 < 256 ? 256 : n + 1;
		l->l_last = malloc(l->l_lastcap);
	}
	if (l->l_last != NULL) {
		memcpy(l->l_last, s, n);
		l->l_last[n] = 0;
	}
	l->l_lastl = n;
}

static void emit_key(struct s3_buf *x, struct lst *l, struct s3_req *rq,
		     const char *k, size_t kl, const struct s3_orec *r)
{
	char t[48];

	s3_time_iso(r->or_mtime_ns, t);
	s3_buf_str(x, l->l_kind == 3 ? "<Version><Key>" : "<Contents><Key>");
	xml_name(x, l, k, kl);
	s3_buf_str(x, "</Key>");
	if (l->l_kind == 3)
		s3_buf_str(x, "<VersionId>null</VersionId><IsLatest>true"
			   "</IsLatest>");
	s3_buf_printf(x, "<LastModified>%s</LastModified><ETag>&quot;%s&quot;"
		      "</ETag><Size>%lu</Size><StorageClass>STANDARD"
		      "</StorageClass>", t, r->or_etag, r->or_size);
	if (l->l_owner) {
		size_t on;
		const char *own = s3_obj_owner(rq->rq_bk, r, &on);

		s3_buf_str(x, "<Owner><ID>");
		s3_buf_xml(x, own, on);
		s3_buf_str(x, "</ID><DisplayName>");
		s3_buf_xml(x, own, on);
		s3_buf_str(x, "</DisplayName></Owner>");
	}
	s3_buf_str(x, l->l_kind == 3 ? "</Version>" : "</Contents>");
}

/* The smallest string greater than every string starting with s: s with
 * its last byte below 0xff incremented (trailing 0xff bytes dropped). */
static size_t successor(char *s, size_t n)
{
	while (n > 0 && (unsigned char)s[n - 1] == 0xff)
		n--;
	if (n > 0)
		s[n - 1]++;
	return n;
}

/*
 * Take the next key of a walk in order (key, kl bytes): LST_SKIP when it is
 * not listed (before the prefix or the bound, or in the common prefix
 * just emitted), LST_DONE when the walk is over (past the prefix, or the
 * page is full: l_trunc), LST_CP when its common prefix (*cpl bytes of
 * key) was emitted now, LST_KEY when it is to be emitted (s3_lst_key()).
 */
int s3_lst_take(struct lst *l, struct s3_buf *x, const char *key, size_t kl,
		size_t *cpl)
{
	const char *d;
	size_t n;

	if (kl < l->l_pl || memcmp(key, l->l_prefix, l->l_pl))
		return bcmp_len(key, kl, l->l_prefix, l->l_pl) > 0 ? LST_DONE
								   : LST_SKIP;
	if (l->l_after != NULL && bcmp_len(key, kl, l->l_after, l->l_al) <= 0)
		return LST_SKIP;
	d = l->l_dl ? memmem(key + l->l_pl, kl - l->l_pl, l->l_delim, l->l_dl)
		    : NULL;
	if (d == NULL) {
		if (l->l_count == l->l_max) {
			l->l_trunc = true;
			return LST_DONE;
		}
		return LST_KEY;
	}
	n = (size_t)(d - key) + l->l_dl;
	if (l->l_cp != NULL && n == l->l_cpl && memcmp(l->l_cp, key, n) == 0)
		return LST_SKIP;
	if (l->l_after != NULL && bcmp_len(key, n, l->l_after, l->l_al) <= 0)
		return LST_SKIP;
	if (l->l_count == l->l_max) {
		l->l_trunc = true;
		return LST_DONE;
	}
	free(l->l_cp);
	l->l_cp = malloc(n + 1);
	if (l->l_cp == NULL)
		return LST_SKIP;
	memcpy(l->l_cp, key, n);
	l->l_cpl = n;
	lst_last(l, key, n);
	l->l_count++;
	s3_buf_str(x, "<CommonPrefixes><Prefix>");
	xml_name(x, l, key, n);
	s3_buf_str(x, "</Prefix></CommonPrefixes>");
	*cpl = n;
	return LST_CP;
}

/* Emit key (kl bytes, taken by s3_lst_take() as LST_KEY) with record r. */
void s3_lst_key(struct lst *l, struct s3_buf *x, struct s3_req *rq,
		const char *key, size_t kl, const struct s3_orec *r)
{
	l->l_count++;
	lst_last(l, key, kl);
	emit_key(x, l, rq, key, kl, r);
}

/* Walk the bucket index; items (keys, common prefixes) go to x until
 * l_max of them; l_trunc when more exist. */
static int lst_walk(struct s3_req *rq, struct lst *l, struct s3_buf *x)
{
	uint8_t cur[CLOVIS_KEY_MAX + 1];
	size_t curl = 0;
	bool excl = false, started = false;
	void **keys, **vals;
	size_t *kls, *vls;
	uint32_t rounds = 0;
	int rc = 0;

	if (rq->rq_bk->bk_vw != NULL)
		return s3_view_list(rq, l, x);
	keys = malloc(S3_NEXT_MAX * (2 * sizeof(void *) + 2 * sizeof(size_t)));
	if (keys == NULL)
		return -ENOMEM;
	vals = keys + S3_NEXT_MAX;
	kls = (size_t *)(vals + S3_NEXT_MAX);
	vls = kls + S3_NEXT_MAX;

	if (l->l_pl > 0) {
		curl = s3_ikey(l->l_prefix, l->l_pl, cur);
		started = true;
	}
	if (l->l_after != NULL &&
	    bcmp_len(l->l_after, l->l_al, l->l_prefix, l->l_pl) >= 0) {
		curl = s3_ikey(l->l_after, l->l_al, cur);
		excl = true;
		started = true;
	}
	while (rounds++ < 100000000) {
		uint32_t want = l->l_max - l->l_count + 1, nr, k;
		bool done = false, jump = false;

		if (l->l_dl > 0 || want > S3_NEXT_MAX)
			want = l->l_dl > 0 ? S3_NEXT_BATCH : S3_NEXT_MAX;
		nr = want;
		rc = s3_idx_next(&rq->rq_bk->bk_idx, started ? cur : NULL, curl,
				 excl, keys, kls, vals, vls, &nr);
		if (rc != 0)
			break;
		for (k = 0; k < nr; k++) {
			struct s3_orec r;
			const char *key = keys[k];
			size_t kl = kls[k], cpl = 0;

			if (done || jump)
				goto next;
			if (s3_orec_decode(vals[k], vls[k], &r) != 0)
				goto adv;
			if (r.or_key != NULL) {
				key = (const char *)r.or_key;
				kl = r.or_key_len;
			}
			switch (s3_lst_take(l, x, key, kl, &cpl)) {
			case LST_DONE:
				done = true;
				goto next;
			case LST_CP:
				if (cpl <= S3_KEY_HASHED_PREFIX) {
					memcpy(cur, key, cpl);
					curl = successor((char *)cur, cpl);
					if (curl > 0) {
						excl = false;
						jump = true;
						goto next;
					}
				}
				break;
			case LST_KEY:
				s3_lst_key(l, x, rq, key, kl, &r);
				break;
			}
adv:
			memcpy(cur, keys[k], kls[k]);
			curl = kls[k];
			excl = true;
next:
			free(keys[k]);
			free(vals[k]);
		}
		started = true;
		if (done || (!jump && nr < want))
			break;
	}
	free(keys);
	return rc;
}

int s3_list_objects(struct s3_req *rq)
{
	const char *lt = s3_q(rq, "list-type"), *mk = s3_q(rq, "max-keys");
	const char *enc = s3_q(rq, "encoding-type");
	bool v2 = lt != NULL && strcmp(lt, "2") == 0;
	bool versions = s3_qhas(rq, "versions");
	struct lst l = {0};
	struct s3_buf x = {0};
	const char *tok = s3_q(rq, "continuation-token");
	const char *sa = s3_q(rq, "start-after");
	const char *marker = s3_q(rq, versions ? "key-marker" : "marker");
	uint8_t tokdec[S3_KEY_MAX + 4];
	long tl = -1;
	char *e;
	int rc;

	rq->rq_op = versions ? "ListObjectVersions"
			     : v2 ? "ListObjectsV2" : "ListObjects";
	if (s3_need_bucket(rq, S3_P_READ, versions ? "s3:ListBucketVersions"
			   : "s3:ListBucket") != 0)
		return 0;
	l.l_kind = versions ? 3 : v2 ? 2 : 1;
	l.l_max = 1000;
	if (mk != NULL) {
		long m = strtol(mk, &e, 10);

		if (*mk == 0 || *e || m < 0)
			return s3_reply_err(rq, 400, "InvalidArgument",
					    "max-keys must be a non-negative "
					    "integer");
		l.l_max = m > 1000 ? 1000 : (uint32_t)m;
	}
	if (enc != NULL && strcmp(enc, "url") != 0)
		return s3_reply_err(rq, 400, "InvalidArgument", "Invalid "
				    "Encoding Method specified in Request");
	l.l_url = enc != NULL;
	l.l_prefix = s3_q(rq, "prefix") ? s3_q(rq, "prefix") : "";
	l.l_pl = strlen(l.l_prefix);
	l.l_delim = s3_q(rq, "delimiter") ? s3_q(rq, "delimiter") : "";
	l.l_dl = strlen(l.l_delim);
	l.l_owner = !v2 || (s3_q(rq, "fetch-owner") &&
			    strcmp(s3_q(rq, "fetch-owner"), "true") == 0);
	if (v2 && tok != NULL && *tok != 0) {
		tl = s3_b64dec(tok, strlen(tok), tokdec);
		if (tl < 1 || tl > (long)S3_KEY_MAX + 1 || tokdec[0] != 'K')
			return s3_reply_err(rq, 400, "InvalidArgument", "The "
					    "continuation token provided is "
					    "incorrect");
		l.l_after = (const char *)tokdec + 1;
		l.l_al = (size_t)tl - 1;
	} else if (v2 && sa != NULL) {
		l.l_after = sa;
		l.l_al = strlen(sa);
	} else if (!v2 && marker != NULL && *marker) {
		l.l_after = marker;
		l.l_al = strlen(marker);
	}
	s3_buf_printf(&x, XHDR "<%s xmlns=\"" XMLNS "\"><Name>%s</Name>",
		      versions ? "ListVersionsResult" : "ListBucketResult",
		      rq->rq_bucket);
	{
		struct s3_buf body = {0};

		rc = l.l_max > 0 ? lst_walk(rq, &l, &body) : 0;
		if (rc != 0) {
			s3_buf_fini(&body);
			s3_buf_fini(&x);
			free(l.l_last);
			free(l.l_cp);
			return s3_reply_clovis(rq, rc, "listing the bucket");
		}
		/* ListObjects (v1) returns the Prefix as sent, encoding-type
		 * or not (s3-tests, S3); V2 and versions encode it */
		s3_buf_str(&x, "<Prefix>");
		if (l.l_kind == 1)
			s3_buf_xml(&x, l.l_prefix, l.l_pl);
		else
			xml_name(&x, &l, l.l_prefix, l.l_pl);
		s3_buf_str(&x, "</Prefix>");
		if (l.l_dl) {
			s3_buf_str(&x, "<Delimiter>");
			xml_name(&x, &l, l.l_delim, l.l_dl);
			s3_buf_str(&x, "</Delimiter>");
		}
		if (l.l_url)
			s3_buf_str(&x, "<EncodingType>url</EncodingType>");
		s3_buf_printf(&x, "<MaxKeys>%u</MaxKeys><IsTruncated>%s"
			      "</IsTruncated>", l.l_max,
			      l.l_trunc ? "true" : "false");
		if (v2) {
			s3_buf_printf(&x, "<KeyCount>%u</KeyCount>", l.l_count);
			if (tok != NULL) {
				s3_buf_str(&x, "<ContinuationToken>");
				s3_buf_xml(&x, tok, strlen(tok));
				s3_buf_str(&x, "</ContinuationToken>");
			}
			if (sa != NULL) {
				s3_buf_str(&x, "<StartAfter>");
				xml_name(&x, &l, sa, strlen(sa));
				s3_buf_str(&x, "</StartAfter>");
			}
			if (l.l_trunc && l.l_last != NULL) {
				char *t = malloc(l.l_lastl * 4 / 3 + 8);
				uint8_t *raw = malloc(l.l_lastl + 1);

				if (t != NULL && raw != NULL) {
					raw[0] = 'K';
					memcpy(raw + 1, l.l_last, l.l_lastl);
					s3_b64enc(raw, l.l_lastl + 1, t);
					s3_buf_printf(&x, "<NextContinuationToken>"
						      "%s</NextContinuationToken>",
						      t);
				}
				free(t);
				free(raw);
			}
		} else {
			const char *mn = versions ? "KeyMarker" : "Marker";

			s3_buf_printf(&x, "<%s>", mn);
			if (marker != NULL)
				xml_name(&x, &l, marker, strlen(marker));
			s3_buf_printf(&x, "</%s>", mn);
			if (versions)
				s3_buf_str(&x, "<VersionIdMarker/>");
			if (l.l_trunc && l.l_last != NULL &&
			    (l.l_dl || versions)) {
				s3_buf_str(&x, versions ? "<NextKeyMarker>"
					   : "<NextMarker>");
				xml_name(&x, &l, l.l_last, l.l_lastl);
				s3_buf_str(&x, versions ? "</NextKeyMarker>"
					   "<NextVersionIdMarker>null"
					   "</NextVersionIdMarker>"
					   : "</NextMarker>");
			}
		}
		s3_buf_add(&x, body.b_data, body.b_len);
		s3_buf_fini(&body);
	}
	s3_buf_printf(&x, "</%s>", versions ? "ListVersionsResult"
		      : "ListBucketResult");
	free(l.l_last);
	free(l.l_cp);
	return s3_reply_xml(rq, 200, &x);
}
