/*
 * s3_util.c — buffers, TLV records, encodings, time and a small XML
 * parser for the S3 gateway.  Everything here treats its input as hostile:
 * lengths are checked before every read.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateways/s3/s3.h"

/* ------------------------------------------------------------ buffers */

static bool buf_room(struct s3_buf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->b_oom)
		return false;
	if (b->b_len + n + 1 <= b->b_cap)
		return true;
	cap = b->b_cap ? b->b_cap : 256;
	while (cap < b->b_len + n + 1)
		cap *= 2;
	p = realloc(b->b_data, cap);
	if (p == NULL) {
		b->b_oom = true;
		return false;
	}
	b->b_data = p;
	b->b_cap = cap;
	return true;
}

void s3_buf_add(struct s3_buf *b, const void *p, size_t n)
{
	if (!buf_room(b, n))
		return;
	if (n > 0)
		memcpy(b->b_data + b->b_len, p, n);
	b->b_len += n;
	b->b_data[b->b_len] = 0;
}

void s3_buf_str(struct s3_buf *b, const char *s)
{
	s3_buf_add(b, s, strlen(s));
}

void s3_buf_printf(struct s3_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !buf_room(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->b_data + b->b_len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->b_len += (size_t)n;
}

void s3_buf_xml(struct s3_buf *b, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '<': s3_buf_str(b, "&lt;"); break;
		case '>': s3_buf_str(b, "&gt;"); break;
		case '&': s3_buf_str(b, "&amp;"); break;
		case '"': s3_buf_str(b, "&quot;"); break;
		case '\'': s3_buf_str(b, "&apos;"); break;
		default:
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
				s3_buf_printf(b, "&#x%X;", c);
			else
				s3_buf_add(b, &s[i], 1);
		}
	}
}

void s3_buf_fini(struct s3_buf *b)
{
	free(b->b_data);
	*b = (struct s3_buf){0};
}

/* ---------------------------------------------------------------- TLV */

void s3_tlv_add(struct s3_buf *b, uint8_t tag, const void *p, uint32_t n)
{
	uint8_t h[5] = {tag, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16),
			(uint8_t)(n >> 24)};

	s3_buf_add(b, h, sizeof h);
	s3_buf_add(b, p, n);
}

void s3_tlv_u64(struct s3_buf *b, uint8_t tag, uint64_t v)
{
	uint8_t p[8];
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	s3_tlv_add(b, tag, p, 8);
}

uint64_t s3_u64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

int s3_tlv_next(const void *rec, size_t len, size_t *pos, uint8_t *tag,
		const uint8_t **val, uint32_t *vlen)
{
	const uint8_t *p = rec;
	uint32_t n;

	if (*pos == len)
		return 0;
	if (len - *pos < 5)
		return -EINVAL;
	p += *pos;
	n = p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 |
	    (uint32_t)p[4] << 24;
	if (len - *pos - 5 < n)
		return -EINVAL;
	*tag = p[0];
	*val = p + 5;
	*vlen = n;
	*pos += 5 + (size_t)n;
	return 1;
}

static int orec_field(struct s3_orec *r, uint8_t tag, const uint8_t *v,
		      uint32_t n)
{
	switch (tag) {
	case T_ID:
		if (n != 16)
			return -EINVAL;
		r->or_has_id = true;
		r->or_id.ci_hi = s3_u64(v);
		r->or_id.ci_lo = s3_u64(v + 8);
		break;
	case T_SIZE:
	case T_MTIME:
		if (n != 8)
			return -EINVAL;
		*(tag == T_SIZE ? &r->or_size : &r->or_mtime_ns) = s3_u64(v);
		break;
	case T_ETAG:
		if (n >= sizeof r->or_etag)
			return -EINVAL;
		memcpy(r->or_etag, v, n);
		r->or_etag[n] = 0;
		break;
	case T_CTYPE:
		r->or_ctype = (const char *)v;
		r->or_ctype_len = n;
		break;
	case T_KEY:
		r->or_key = v;
		r->or_key_len = n;
		break;
	case T_INLINE:
		r->or_inline = v;
		r->or_inline_len = n;
		r->or_is_inline = true;
		break;
	case T_OWNER:
		r->or_owner = (const char *)v;
		r->or_owner_len = n;
		break;
	case T_ACL:
		r->or_acl = (const char *)v;
		r->or_acl_len = n;
		break;
	case T_TAGS:
		r->or_tags = v;
		r->or_tags_len = n;
		break;
	case T_HOLE:
		r->or_hole = true;
		break;
	case T_BSHIFT: /* only view buckets' records (s3_view.c) have one */
		if (n == 8 && s3_u64(v) <= 30)
			r->or_bshift = (uint32_t)s3_u64(v);
		break;
	case T_PART:
		if (n != 24)
			return -EINVAL;
		if (r->or_nparts == 0)
			r->or_parts = v;
		else if (v != r->or_parts + S3_PART_STRIDE * r->or_nparts)
			return -EINVAL; /* parts must be consecutive */
		r->or_nparts++;
		break;
	}
	return 0;
}

/* Decode an object record; parts must be consecutive fields. */
int s3_orec_decode(const void *v, size_t n, struct s3_orec *r)
{
	size_t pos = 0;
	const uint8_t *val;
	uint32_t vlen;
	uint8_t tag;
	int rc;

	*r = (struct s3_orec){.or_rec = v, .or_rec_len = n};
	while ((rc = s3_tlv_next(v, n, &pos, &tag, &val, &vlen)) == 1) {
		rc = orec_field(r, tag, val, vlen);
		if (rc != 0)
			return rc;
	}
	if (rc < 0)
		return rc;
	if (r->or_is_inline && r->or_inline_len != r->or_size)
		return -EINVAL;
	if (!r->or_is_inline && !r->or_has_id && r->or_nparts == 0 &&
	    r->or_size != 0 && !r->or_hole)
		return -EINVAL;
	return 0;
}

/* ----------------------------------------------------------- encodings */

void s3_hex(const uint8_t *p, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int s3_unhex(const char *s, size_t n, uint8_t *out)
{
	size_t i;

	if (n % 2)
		return -EINVAL;
	for (i = 0; i < n; i += 2) {
		int a = hexval((unsigned char)s[i]), b = hexval((unsigned char)s[i + 1]);

		if (a < 0 || b < 0)
			return -EINVAL;
		out[i / 2] = (uint8_t)(a << 4 | b);
	}
	return 0;
}

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t s3_b64enc(const uint8_t *p, size_t n, char *out)
{
	size_t i, o = 0;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | p[i + 1] << 8 | p[i + 2];

		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = b64[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0);

		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = 0;
	return o;
}

long s3_b64dec(const char *s, size_t n, uint8_t *out)
{
	uint32_t v = 0;
	size_t i, o = 0;
	int bits = 0;

	for (i = 0; i < n; i++) {
		const char *q;

		if (s[i] == '=')
			break;
		q = s[i] ? strchr(b64, s[i]) : NULL;
		if (q == NULL)
			return -1;
		v = v << 6 | (uint32_t)(q - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(v >> bits);
		}
	}
	return (long)o;
}

long s3_urldec(const char *s, size_t n, char *out, bool plus_space)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == '%') {
			int a, b;

			if (i + 2 >= n)
				return -1;
			a = hexval((unsigned char)s[i + 1]);
			b = hexval((unsigned char)s[i + 2]);
			if (a < 0 || b < 0)
				return -1;
			out[o++] = (char)(a << 4 | b);
			i += 2;
		} else if (s[i] == '+' && plus_space) {
			out[o++] = ' ';
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = 0;
	return (long)o;
}

void s3_urlenc(struct s3_buf *b, const char *s, size_t n, bool keep_slash)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
		    (c == '/' && keep_slash))
			s3_buf_add(b, &s[i], 1);
		else
			s3_buf_printf(b, "%%%02X", c);
	}
}

/* ---------------------------------------------------------------- time */

uint64_t s3_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void s3_time_iso(uint64_t ns, char *out)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(out, 48, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (unsigned)(ns / 1000000 % 1000));
}

void s3_time_http(uint64_t ns, char *out)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 40, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

int s3_time_parse(const char *s, int64_t *sec)
{
	static const char *fmts[] = {
		"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
		"%a %b %d %H:%M:%S %Y", "%Y-%m-%dT%H:%M:%S", "%Y%m%dT%H%M%SZ",
	};
	size_t i;

	for (i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
		struct tm tm = {0};
		const char *e = strptime(s, fmts[i], &tm);

		if (e != NULL && (*e == 0 || *e == '.' || *e == 'Z' || *e == '+')) {
			*sec = (int64_t)timegm(&tm);
			return 0;
		}
	}
	return -EINVAL;
}

/* ----------------------------------------------------------------- XML */

struct xp {
	const char *p, *e;
	int depth;
};

static void xp_ws(struct xp *x)
{
	while (x->p < x->e && isspace((unsigned char)*x->p))
		x->p++;
}

/* Skip <?...?>, <!--...--> and <!DOCTYPE...>; false on unterminated. */
static bool xp_misc(struct xp *x)
{
	for (;;) {
		const char *end;

		xp_ws(x);
		if (x->e - x->p >= 2 && x->p[0] == '<' && x->p[1] == '?')
			end = memmem(x->p, (size_t)(x->e - x->p), "?>", 2);
		else if (x->e - x->p >= 4 && memcmp(x->p, "<!--", 4) == 0)
			end = memmem(x->p, (size_t)(x->e - x->p), "-->", 3);
		else if (x->e - x->p >= 2 && x->p[0] == '<' && x->p[1] == '!')
			end = memchr(x->p, '>', (size_t)(x->e - x->p));
		else
			return true;
		if (end == NULL)
			return false;
		x->p = memchr(end, '>', (size_t)(x->e - end)) + 1;
	}
}

/* Decode entities of text [s, e) into b; false on a bad entity. */
static bool xp_text(struct s3_buf *b, const char *s, const char *e)
{
	while (s < e) {
		const char *semi;

		if (*s != '&') {
			s3_buf_add(b, s, 1);
			s++;
			continue;
		}
		semi = memchr(s, ';', (size_t)(e - s));
		if (semi == NULL || semi - s > 10)
			return false;
		if (semi - s == 3 && memcmp(s, "&lt", 3) == 0)
			s3_buf_str(b, "<");
		else if (semi - s == 3 && memcmp(s, "&gt", 3) == 0)
			s3_buf_str(b, ">");
		else if (semi - s == 4 && memcmp(s, "&amp", 4) == 0)
			s3_buf_str(b, "&");
		else if (semi - s == 5 && memcmp(s, "&quot", 5) == 0)
			s3_buf_str(b, "\"");
		else if (semi - s == 5 && memcmp(s, "&apos", 5) == 0)
			s3_buf_str(b, "'");
		else if (s[1] == '#') {
			char num[12] = {0};
			unsigned long c;
			char *end;

			memcpy(num, s + 2, (size_t)(semi - s - 2));
			c = num[0] == 'x' ? strtoul(num + 1, &end, 16)
					  : strtoul(num, &end, 10);
			if (*end != 0 || c == 0 || c > 0x10FFFF)
				return false;
			if (c < 0x80) {
				char ch = (char)c;

				s3_buf_add(b, &ch, 1);
			} else if (c < 0x800) {
				char u[2] = {(char)(0xC0 | c >> 6), (char)(0x80 | (c & 63))};

				s3_buf_add(b, u, 2);
			} else if (c < 0x10000) {
				char u[3] = {(char)(0xE0 | c >> 12),
					     (char)(0x80 | ((c >> 6) & 63)),
					     (char)(0x80 | (c & 63))};

				s3_buf_add(b, u, 3);
			} else {
				char u[4] = {(char)(0xF0 | c >> 18),
					     (char)(0x80 | ((c >> 12) & 63)),
					     (char)(0x80 | ((c >> 6) & 63)),
					     (char)(0x80 | (c & 63))};

				s3_buf_add(b, u, 4);
			}
		} else {
			return false;
		}
		s = semi + 1;
	}
	return true;
}

static struct s3_xel *xp_elem(struct xp *x);

/* Element content up to its end tag; children appended to el. */
static bool xp_content(struct xp *x, struct s3_xel *el)
{
	struct s3_buf text = {0};
	struct s3_xel **tail = &el->x_child;
	size_t nl = strlen(el->x_name);

	for (;;) {
		const char *lt = memchr(x->p, '<', (size_t)(x->e - x->p));

		if (lt == NULL || !xp_text(&text, x->p, lt))
			goto bad;
		x->p = lt;
		if (x->e - x->p >= 4 && memcmp(x->p, "<!--", 4) == 0) {
			if (!xp_misc(x))
				goto bad;
			continue;
		}
		if (x->e - x->p > 1 && x->p[1] == '/') {
			x->p += 2;
			if ((size_t)(x->e - x->p) < nl + 1 ||
			    memcmp(x->p, el->x_name, nl) != 0)
				goto bad;
			x->p += nl;
			xp_ws(x);
			if (x->p >= x->e || *x->p != '>')
				goto bad;
			x->p++;
			break;
		}
		*tail = xp_elem(x);
		if (*tail == NULL)
			goto bad;
		tail = &(*tail)->x_next;
	}
	if (text.b_oom)
		goto bad;
	el->x_text = text.b_data ? text.b_data : strdup("");
	el->x_text_len = text.b_len;
	return el->x_text != NULL;
bad:
	s3_buf_fini(&text);
	return false;
}

static struct s3_xel *xp_elem(struct xp *x)
{
	struct s3_xel *el;
	const char *n0, *gt;

	if (++x->depth > 32 || x->p >= x->e || *x->p != '<')
		return NULL;
	n0 = ++x->p;
	while (x->p < x->e && (isalnum((unsigned char)*x->p) || *x->p == ':' ||
			       *x->p == '_' || *x->p == '-' || *x->p == '.'))
		x->p++;
	if (x->p == n0)
		return NULL;
	el = calloc(1, sizeof *el);
	if (el == NULL || (el->x_name = strndup(n0, (size_t)(x->p - n0))) == NULL)
		goto bad;
	gt = memchr(x->p, '>', (size_t)(x->e - x->p));
	if (gt == NULL)
		goto bad;
	x->p = gt + 1;
	if (gt[-1] == '/') {
		el->x_text = strdup("");
	} else if (!xp_content(x, el)) {
		goto bad;
	}
	x->depth--;
	return el;
bad:
	s3_xml_free(el);
	return NULL;
}

struct s3_xel *s3_xml_parse(const char *s, size_t n)
{
	struct xp x = {s, s + n, 0};
	struct s3_xel *root;

	if (!xp_misc(&x))
		return NULL;
	root = xp_elem(&x);
	if (root == NULL)
		return NULL;
	if (!xp_misc(&x) || x.p != x.e) {
		s3_xml_free(root);
		return NULL;
	}
	return root;
}

void s3_xml_free(struct s3_xel *x)
{
	while (x != NULL) {
		struct s3_xel *n = x->x_next;

		s3_xml_free(x->x_child);
		free(x->x_name);
		free(x->x_text);
		free(x);
		x = n;
	}
}

struct s3_xel *s3_xml_child(struct s3_xel *x, const char *name)
{
	struct s3_xel *c;

	for (c = x ? x->x_child : NULL; c != NULL; c = c->x_next)
		if (strcmp(c->x_name, name) == 0)
			return c;
	return NULL;
}
