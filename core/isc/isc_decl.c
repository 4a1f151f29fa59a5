/*
 * isc_decl.c — declarative functions (ISC_DECL): a line-based program of
 * fields, where predicates and aggregates (docs/isc.md "Declarative
 * language"), parsed once at compile and evaluated by a C loop with no
 * allocation per record.
 *
 * Evaluation goes by chunks of up to DECL_CHUNK records: every predicate
 * node is evaluated over the whole chunk into a byte per record (three
 * values, as SQL: false 0, unknown 1, true 2, so `and` is min, `or` max
 * and `not` 2 - x; a field a short index value does not hold is
 * unknown), the records whose where is true form a selection, and each
 * aggregate runs over the dense array of its field's selected values.
 * Nodes are created children first, so evaluating them in order of
 * creation is a post-order walk; the root is the last.
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/isc/isc_internal.h"

/* Hard limits of a program (docs/isc.md "Limits and errors"). */
#define DECL_FIELDS 64u       /* fields, built-ins included */
#define DECL_NODES 256u       /* expression nodes, all where lines */
#define DECL_AGGS 16u         /* aggregate lines */
#define DECL_DEPTH 64u        /* nesting of parentheses and not */
#define DECL_NAME 48u         /* field name bytes */
#define DECL_REC_MAX 65536u   /* record size */
#define DECL_HIST_NB 4096u    /* histogram buckets */
#define DECL_CHUNK 512u       /* records evaluated together */

enum dtype {
	DT_I8, DT_U8, DT_I16, DT_U16, DT_I32, DT_U32, DT_I64, DT_U64,
	DT_F32, DT_F64, DT_BYTES, DT_KEY, DT_VALUE,
};

static const struct {
	const char *n;
	uint32_t size;
} dtypes[] = {
	[DT_I8] = {"i8", 1}, [DT_U8] = {"u8", 1}, [DT_I16] = {"i16", 2},
	[DT_U16] = {"u16", 2}, [DT_I32] = {"i32", 4}, [DT_U32] = {"u32", 4},
	[DT_I64] = {"i64", 8}, [DT_U64] = {"u64", 8}, [DT_F32] = {"f32", 4},
	[DT_F64] = {"f64", 8}, [DT_BYTES] = {"bytes", 0},
};

struct dfield {
	char df_name[DECL_NAME];
	enum dtype df_type;
	uint32_t df_off;
	uint32_t df_size;     /* bytes; 0 for key and value */
	uint32_t df_line;
};

enum dop { N_AND, N_OR, N_NOT, N_CMP, N_PREFIX, N_CONTAINS };
enum dcmp { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE };
/* How a comparison is made. */
enum dmode { M_I64, M_U64, M_F64, M_BYTES, M_CONST };

struct dnode {
	uint8_t dn_op, dn_cmp, dn_mode, dn_const;
	uint16_t dn_a, dn_b;          /* children (and/or/not) */
	uint16_t dn_field;
	union {
		int64_t i;
		uint64_t u;
		double d;
	} dn_lit;
	uint32_t dn_soff, dn_slen;    /* a string literal in the pool */
};

enum dagg_kind { A_COUNT, A_SUM, A_MIN, A_MAX, A_MEAN, A_HIST, A_KEYS,
		 A_RECORDS };

struct dagg {
	enum dagg_kind da_kind;
	uint16_t da_field;
	double da_lo, da_hi;
	uint32_t da_nb;
	char da_key[DECL_NAME + 8];
};

struct isc_decl {
	uint32_t d_rec;               /* objects: record size */
	bool d_idx;
	uint32_t d_nfield;
	struct dfield d_field[DECL_FIELDS];
	uint32_t d_nnode;
	struct dnode d_node[DECL_NODES];
	bool d_where;
	uint16_t d_root;              /* the where's: the last node */
	uint32_t d_nagg;
	struct dagg d_agg[DECL_AGGS];
	uint8_t *d_pool;              /* string literals */
	uint32_t d_pool_len, d_pool_cap;
};

/* ===================================================== the parser */

enum tk {
	T_END, T_IDENT, T_NUM, T_STR, T_LP, T_RP, T_LB, T_RB, T_COMMA,
	T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE,
};

struct tok {
	enum tk t;
	const char *s;
	uint32_t len;
	uint32_t col;
};

struct pctx {
	const struct isc_fn *p_f;
	struct isc_decl *p_d;
	const char *p_line;
	uint32_t p_llen, p_pos, p_lineno, p_depth;
	struct tok p_tok;              /* the current token */
};

/* A literal as parsed. */
struct dlit {
	bool l_str, l_int, l_neg;
	uint64_t l_u;                  /* l_int, !l_neg */
	int64_t l_i;                   /* l_int, l_neg */
	double l_d;
	uint32_t l_soff, l_slen;
};

static int perr_rc(struct pctx *p, int rc, uint32_t col, const char *fmt,
		   ...) __attribute__((format(printf, 4, 5)));

static int perr_rc(struct pctx *p, int rc, uint32_t col, const char *fmt,
		   ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set(rc, "function %s: line %u, column %u: %s",
		       p->p_f->f_name, p->p_lineno, col, msg);
}

#define perr(p, col, ...) perr_rc(p, -EINVAL, col, __VA_ARGS__)

static bool tok_is(const struct tok *t, const char *word)
{
	return t->t == T_IDENT && strlen(word) == t->len &&
	       memcmp(t->s, word, t->len) == 0;
}

static bool isnumch(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '_';
}

/* A number token from s[i] (sign, digits, letters, '.', an exponent's
 * sign): lit_parse() says whether it is one. */
static int lex_num(struct pctx *p, uint32_t i)
{
	const char *s = p->p_line;
	uint32_t n = p->p_llen, j = i + 1;

	while (j < n && (isnumch(s[j]) ||
			 ((s[j] == '-' || s[j] == '+') &&
			  (s[j - 1] == 'e' || s[j - 1] == 'E' ||
			   s[j - 1] == 'p' || s[j - 1] == 'P'))))
		j++;
	p->p_tok.t = T_NUM;
	p->p_tok.len = j - i;
	p->p_pos = j;
	return 0;
}

/* A string token from the quote at s[i] to the closing one (escape
 * pairs kept whole; decoded by str_decode()). */
static int lex_str(struct pctx *p, uint32_t i)
{
	const char *s = p->p_line;
	uint32_t n = p->p_llen, j = i + 1;

	while (j < n && s[j] != '"')
		j += s[j] == '\\' && j + 1 < n ? 2 : 1;
	if (j >= n)
		return perr(p, i + 1, "string not closed");
	p->p_tok.t = T_STR;
	p->p_tok.len = j + 1 - i;
	p->p_pos = j + 1;
	return 0;
}

/* Read the next token of the line into p->p_tok: 0, or -EINVAL. */
static int lex(struct pctx *p)
{
	const char *s = p->p_line;
	uint32_t n = p->p_llen, i = p->p_pos;
	struct tok *t = &p->p_tok;

	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
		i++;
	t->s = s + i;
	t->col = i + 1;
	t->len = 1;
	if (i >= n || s[i] == '#') {
		t->t = T_END;
		t->len = 0;
		p->p_pos = n;
		return 0;
	}
	if (isalpha((unsigned char)s[i]) || s[i] == '_') {
		uint32_t j = i;

		while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_'))
			j++;
		t->t = T_IDENT;
		t->len = j - i;
		p->p_pos = j;
		return 0;
	}
	if (isdigit((unsigned char)s[i]) ||
	    ((s[i] == '-' || s[i] == '+' || s[i] == '.') && i + 1 < n &&
	     (isalnum((unsigned char)s[i + 1]) || s[i + 1] == '.')))
		return lex_num(p, i);
	if (s[i] == '"')
		return lex_str(p, i);
	p->p_pos = i + 1;
	switch (s[i]) {
	case '(': t->t = T_LP; return 0;
	case ')': t->t = T_RP; return 0;
	case '[': t->t = T_LB; return 0;
	case ']': t->t = T_RB; return 0;
	case ',': t->t = T_COMMA; return 0;
	}
	if (i + 1 < n && s[i + 1] == '=' &&
	    (s[i] == '=' || s[i] == '!' || s[i] == '<' || s[i] == '>')) {
		t->t = s[i] == '=' ? T_EQ : s[i] == '!' ? T_NE :
		       s[i] == '<' ? T_LE : T_GE;
		t->len = 2;
		p->p_pos = i + 2;
		return 0;
	}
	if (s[i] == '<' || s[i] == '>') {
		t->t = s[i] == '<' ? T_LT : T_GT;
		return 0;
	}
	return perr(p, i + 1, "unexpected character '%c'",
		    isprint((unsigned char)s[i]) ? s[i] : '?');
}

/* Append n bytes to the string pool. */
static int pool_add(struct pctx *p, const void *b, uint32_t n,
		    uint32_t *off)
{
	struct isc_decl *d = p->p_d;

	if (n == 0) { /* "": no bytes, and no pool may exist yet */
		*off = d->d_pool_len;
		return 0;
	}
	if (d->d_pool_len + n > d->d_pool_cap) {
		uint32_t cap = d->d_pool_cap ? d->d_pool_cap : 256;
		void *q;

		while (cap < d->d_pool_len + n)
			cap *= 2;
		q = realloc(d->d_pool, cap);
		if (q == NULL)
			return err_set(-ENOMEM, "function %s: strings",
				       p->p_f->f_name);
		d->d_pool = q;
		d->d_pool_cap = cap;
	}
	memcpy(d->d_pool + d->d_pool_len, b, n);
	*off = d->d_pool_len;
	d->d_pool_len += n;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode the string token t (escapes \" \\ \n \t \xHH) into the pool. */
static int str_decode(struct pctx *p, const struct tok *t, struct dlit *l)
{
	char *b = malloc(t->len);
	uint32_t n = 0;
	int rc;

	if (b == NULL)
		return err_set(-ENOMEM, "function %s", p->p_f->f_name);
	/* the content is t->s[1 .. len-2]; the lexer keeps escape pairs
	 * whole */
	for (uint32_t i = 1; i + 1 < t->len; i++) {
		char c = t->s[i];
		int h = -1, lo = -1;

		if (c != '\\') {
			b[n++] = c;
			continue;
		}
		c = t->s[++i];
		if (c == 'x' && i + 4 <= t->len) {
			h = hexval(t->s[i + 1]);
			lo = hexval(t->s[i + 2]);
		}
		if (c == '"' || c == '\\') {
			b[n++] = c;
		} else if (c == 'n') {
			b[n++] = '\n';
		} else if (c == 't') {
			b[n++] = '\t';
		} else if (h >= 0 && lo >= 0) {
			b[n++] = (char)(h * 16 + lo);
			i += 2;
		} else {
			free(b);
			return perr(p, t->col + i - 1, "unknown escape '\\%c' "
				    "(\\\" \\\\ \\n \\t \\xHH)",
				    isprint((unsigned char)c) ? c : '?');
		}
	}
	l->l_str = true;
	l->l_slen = n;
	rc = pool_add(p, b, n, &l->l_soff);
	free(b);
	return rc;
}

/* Parse the current token as a literal (number or string). */
static int lit_parse(struct pctx *p, struct dlit *l)
{
	const struct tok *t = &p->p_tok;
	char buf[80], *end;
	const char *b = buf;

	memset(l, 0, sizeof *l);
	if (t->t == T_STR)
		return str_decode(p, t, l);
	if ((t->t != T_NUM && t->t != T_IDENT) || t->len >= sizeof buf)
		return perr(p, t->col, "expected a number or a string");
	memcpy(buf, t->s, t->len);
	buf[t->len] = '\0';
	if (t->t == T_IDENT && strcasecmp(buf, "inf") != 0 &&
	    strcasecmp(buf, "nan") != 0)
		return perr(p, t->col, "expected a number or a string, not "
			    "'%s'", buf);
	if (*b == '+')
		b++;
	l->l_neg = *b == '-';
	errno = 0;
	if (isdigit((unsigned char)b[l->l_neg])) {
		bool hex = b[l->l_neg] == '0' &&
			   (b[l->l_neg + 1] == 'x' || b[l->l_neg + 1] == 'X');

		if (l->l_neg)
			l->l_i = strtoll(b, &end, hex ? 16 : 10);
		else
			l->l_u = strtoull(b, &end, hex ? 16 : 10);
		if (*end == '\0') {
			if (errno == ERANGE)
				return perr(p, t->col, "integer %s out of "
					    "range", buf);
			l->l_int = true;
			l->l_d = l->l_neg ? (double)l->l_i : (double)l->l_u;
			return 0;
		}
	}
	errno = 0;
	l->l_d = strtod(b, &end);
	if (*end != '\0' || end == b)
		return perr(p, t->col, "'%s' is not a number", buf);
	l->l_int = false;
	return 0;
}

static int next(struct pctx *p)
{
	return lex(p);
}

static int field_find(const struct isc_decl *d, const struct tok *t)
{
	for (uint32_t i = 0; i < d->d_nfield; i++)
		if (strlen(d->d_field[i].df_name) == t->len &&
		    memcmp(d->d_field[i].df_name, t->s, t->len) == 0)
			return (int)i;
	return -1;
}

/* The current token names a field: its index, or an error (-ENOTSUP
 * for an index's built-in used on an object). */
static int field_ref(struct pctx *p, uint16_t *fi)
{
	const struct tok *t = &p->p_tok;
	int i;

	if (t->t != T_IDENT)
		return perr(p, t->col, "expected a field name");
	i = field_find(p->p_d, t);
	if (i < 0 && !p->p_d->d_idx && (tok_is(t, "key") || tok_is(t, "value")))
		return perr_rc(p, -ENOTSUP, t->col, "field '%.*s' is an "
			       "index's: this program runs on indices only",
			       (int)t->len, t->s);
	if (i < 0)
		return perr(p, t->col, "no field '%.*s' (declare it with a "
			    "field line first)", (int)t->len, t->s);
	*fi = (uint16_t)i;
	return 0;
}

static bool field_bytes(const struct dfield *f)
{
	return f->df_type >= DT_BYTES;
}

static int node_new(struct pctx *p, uint32_t col, struct dnode **n,
		    uint16_t *idx)
{
	struct isc_decl *d = p->p_d;

	if (d->d_nnode >= DECL_NODES)
		return perr(p, col, "more than %u expression nodes",
			    DECL_NODES);
	*idx = (uint16_t)d->d_nnode;
	*n = &d->d_node[d->d_nnode++];
	memset(*n, 0, sizeof **n);
	return 0;
}

/* A comparison node: field fi op literal l. */
static int cmp_node(struct pctx *p, uint32_t col, uint16_t fi,
		    enum dcmp op, const struct dlit *l, uint16_t *out)
{
	const struct dfield *f = &p->p_d->d_field[fi];
	struct dnode *n = NULL;
	int rc;

	if (field_bytes(f) != l->l_str)
		return perr(p, col, "field %s is %s: compare it with %s",
			    f->df_name, field_bytes(f) ? "bytes" : "a number",
			    field_bytes(f) ? "a string" : "a number");
	rc = node_new(p, col, &n, out);
	if (rc != 0)
		return rc;
	n->dn_op = N_CMP;
	n->dn_cmp = op;
	n->dn_field = fi;
	if (l->l_str) {
		n->dn_mode = M_BYTES;
		n->dn_soff = l->l_soff;
		n->dn_slen = l->l_slen;
	} else if (f->df_type == DT_F32 || f->df_type == DT_F64 ||
		   !l->l_int) {
		n->dn_mode = M_F64;
		n->dn_lit.d = l->l_d;
	} else if (f->df_type == DT_U64) {
		if (l->l_neg) {         /* field > literal, always */
			n->dn_mode = M_CONST;
			n->dn_const = op == C_NE || op == C_GT || op == C_GE;
		} else {
			n->dn_mode = M_U64;
			n->dn_lit.u = l->l_u;
		}
	} else {
		if (!l->l_neg && l->l_u > INT64_MAX) {  /* field < literal */
			n->dn_mode = M_CONST;
			n->dn_const = op == C_NE || op == C_LT || op == C_LE;
		} else {
			n->dn_mode = M_I64;
			n->dn_lit.i = l->l_neg ? l->l_i : (int64_t)l->l_u;
		}
	}
	return 0;
}

static int join_node(struct pctx *p, uint32_t col, enum dop op, uint16_t a,
		     uint16_t b, uint16_t *out)
{
	struct dnode *n = NULL;
	int rc = node_new(p, col, &n, out);

	if (rc != 0)
		return rc;
	n->dn_op = op;
	n->dn_a = a;
	n->dn_b = b;
	return 0;
}

static int parse_or(struct pctx *p, uint16_t *out);

/* FIELD in [lo, hi) (or [ ], ( ], ( )) */
static int parse_range(struct pctx *p, uint16_t fi, uint16_t *out)
{
	struct dlit lo, hi;
	uint32_t col = p->p_tok.col;
	bool lo_in, hi_in;
	uint16_t a, b;
	int rc;

	if (p->p_tok.t != T_LB && p->p_tok.t != T_LP)
		return perr(p, col, "expected '[' or '(' after in");
	lo_in = p->p_tok.t == T_LB;
	if ((rc = next(p)) != 0 || (rc = lit_parse(p, &lo)) != 0 ||
	    (rc = next(p)) != 0)
		return rc;
	if (p->p_tok.t != T_COMMA)
		return perr(p, p->p_tok.col, "expected ',' in a range");
	if ((rc = next(p)) != 0 || (rc = lit_parse(p, &hi)) != 0 ||
	    (rc = next(p)) != 0)
		return rc;
	if (p->p_tok.t != T_RB && p->p_tok.t != T_RP)
		return perr(p, p->p_tok.col, "expected ')' or ']' to close "
			    "the range");
	hi_in = p->p_tok.t == T_RB;
	if ((rc = cmp_node(p, col, fi, lo_in ? C_GE : C_GT, &lo, &a)) != 0 ||
	    (rc = cmp_node(p, col, fi, hi_in ? C_LE : C_LT, &hi, &b)) != 0 ||
	    (rc = join_node(p, col, N_AND, a, b, out)) != 0)
		return rc;
	return next(p);
}

/* A predicate: FIELD OP LIT | FIELD in RANGE | FIELD prefix/contains S */
static int parse_pred(struct pctx *p, uint16_t *out)
{
	static const enum tk ops[] = {T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE};
	uint32_t col = p->p_tok.col;
	struct dlit l;
	struct dnode *n = NULL;
	uint16_t fi;
	int rc = field_ref(p, &fi);

	if (rc != 0 || (rc = next(p)) != 0)
		return rc;
	for (uint32_t i = 0; i < 6; i++) {
		if (p->p_tok.t != ops[i])
			continue;
		if ((rc = next(p)) != 0 || (rc = lit_parse(p, &l)) != 0 ||
		    (rc = cmp_node(p, col, fi, (enum dcmp)i, &l, out)) != 0)
			return rc;
		return next(p);
	}
	if (tok_is(&p->p_tok, "in")) {
		if ((rc = next(p)) != 0)
			return rc;
		return parse_range(p, fi, out);
	}
	if (tok_is(&p->p_tok, "prefix") || tok_is(&p->p_tok, "contains")) {
		bool pre = tok_is(&p->p_tok, "prefix");

		if (!field_bytes(&p->p_d->d_field[fi]))
			return perr(p, p->p_tok.col, "%s needs a bytes field; "
				    "%s is a number", pre ? "prefix" :
				    "contains", p->p_d->d_field[fi].df_name);
		if ((rc = next(p)) != 0)
			return rc;
		if (p->p_tok.t != T_STR)
			return perr(p, p->p_tok.col, "expected a string");
		if ((rc = lit_parse(p, &l)) != 0 ||
		    (rc = node_new(p, col, &n, out)) != 0)
			return rc;
		n->dn_op = pre ? N_PREFIX : N_CONTAINS;
		n->dn_field = fi;
		n->dn_mode = M_BYTES;
		n->dn_soff = l.l_soff;
		n->dn_slen = l.l_slen;
		return next(p);
	}
	return perr(p, p->p_tok.col, "expected a comparison (== != < <= > "
		    ">=), in, prefix or contains");
}

static int parse_unary(struct pctx *p, uint16_t *out)
{
	uint32_t col = p->p_tok.col;
	uint16_t a;
	int rc;

	if (++p->p_depth > DECL_DEPTH)
		return perr(p, col, "nested more than %u deep", DECL_DEPTH);
	if (tok_is(&p->p_tok, "not")) {
		if ((rc = next(p)) != 0 || (rc = parse_unary(p, &a)) != 0 ||
		    (rc = join_node(p, col, N_NOT, a, a, out)) != 0)
			return rc;
	} else if (p->p_tok.t == T_LP) {
		if ((rc = next(p)) != 0 || (rc = parse_or(p, out)) != 0)
			return rc;
		if (p->p_tok.t != T_RP)
			return perr(p, p->p_tok.col, "expected ')' (the '(' "
				    "is at column %u)", col);
		if ((rc = next(p)) != 0)
			return rc;
	} else {
		if ((rc = parse_pred(p, out)) != 0)
			return rc;
	}
	p->p_depth--;
	return 0;
}

static int parse_and(struct pctx *p, uint16_t *out)
{
	int rc = parse_unary(p, out);

	while (rc == 0 && tok_is(&p->p_tok, "and")) {
		uint32_t col = p->p_tok.col;
		uint16_t b;

		if ((rc = next(p)) != 0 || (rc = parse_unary(p, &b)) != 0)
			break;
		rc = join_node(p, col, N_AND, *out, b, out);
	}
	return rc;
}

static int parse_or(struct pctx *p, uint16_t *out)
{
	int rc = parse_and(p, out);

	while (rc == 0 && tok_is(&p->p_tok, "or")) {
		uint32_t col = p->p_tok.col;
		uint16_t b;

		if ((rc = next(p)) != 0 || (rc = parse_and(p, &b)) != 0)
			break;
		rc = join_node(p, col, N_OR, *out, b, out);
	}
	return rc;
}

static bool reserved(const struct tok *t)
{
	static const char *const w[] = {"and", "or", "not", "in", "prefix",
					"contains", "inf", "nan"};

	for (uint32_t i = 0; i < sizeof w / sizeof w[0]; i++)
		if (tok_is(t, w[i]))
			return true;
	return false;
}

/* Parse an unsigned integer token in [lo, hi]. */
static int uint_parse(struct pctx *p, const char *what, uint64_t lo,
		      uint64_t hi, uint64_t *v)
{
	struct dlit l;
	int rc = lit_parse(p, &l);

	if (rc != 0)
		return rc;
	if (l.l_str || !l.l_int || l.l_neg || l.l_u < lo || l.l_u > hi)
		return perr(p, p->p_tok.col, "%s must be an integer in %" PRIu64
			    "..%" PRIu64, what, lo, hi);
	*v = l.l_u;
	return next(p);
}

/* field NAME TYPE OFFSET | field NAME bytes LEN OFFSET */
static int parse_field(struct pctx *p)
{
	struct isc_decl *d = p->p_d;
	struct dfield *f;
	uint64_t v;
	int rc;

	if (p->p_tok.t != T_IDENT || reserved(&p->p_tok))
		return perr(p, p->p_tok.col, "expected a field name");
	if (p->p_tok.len >= DECL_NAME)
		return perr(p, p->p_tok.col, "field name over %u bytes",
			    DECL_NAME - 1);
	if (field_find(d, &p->p_tok) >= 0)
		return perr(p, p->p_tok.col, "field '%.*s' %s",
			    (int)p->p_tok.len, p->p_tok.s,
			    d->d_idx && (tok_is(&p->p_tok, "key") ||
					 tok_is(&p->p_tok, "value")) ?
			    "is built in on indices" : "declared twice");
	if (d->d_nfield >= DECL_FIELDS)
		return perr(p, p->p_tok.col, "more than %u fields",
			    DECL_FIELDS);
	f = &d->d_field[d->d_nfield];
	memset(f, 0, sizeof *f);
	memcpy(f->df_name, p->p_tok.s, p->p_tok.len);
	f->df_line = p->p_lineno;
	if ((rc = next(p)) != 0)
		return rc;
	f->df_type = DT_KEY;
	for (uint32_t i = 0; i <= DT_BYTES; i++)
		if (tok_is(&p->p_tok, dtypes[i].n))
			f->df_type = (enum dtype)i;
	if (f->df_type == DT_KEY)
		return perr(p, p->p_tok.col, "expected a type: i8 u8 i16 u16 "
			    "i32 u32 i64 u64 f32 f64 or bytes LEN");
	f->df_size = dtypes[f->df_type].size;
	if ((rc = next(p)) != 0)
		return rc;
	if (f->df_type == DT_BYTES) {
		if ((rc = uint_parse(p, "a bytes length", 1, DECL_REC_MAX,
				     &v)) != 0)
			return rc;
		f->df_size = (uint32_t)v;
	}
	if ((rc = uint_parse(p, "an offset", 0, DECL_REC_MAX - 1, &v)) != 0)
		return rc;
	f->df_off = (uint32_t)v;
	if (!d->d_idx && f->df_off + f->df_size > DECL_REC_MAX)
		return perr(p, 1, "field %s ends past byte %u", f->df_name,
			    DECL_REC_MAX);
	d->d_nfield++;
	return 0;
}

/* count | keys | records | sum F | min F | max F | mean F |
 * hist F LO HI NB */
static int parse_agg(struct pctx *p, enum dagg_kind k)
{
	static const char *const names[] = {"count", "sum", "min", "max",
					    "mean", "hist", "keys", "records"};
	struct isc_decl *d = p->p_d;
	uint32_t col = p->p_tok.col;
	struct dagg *a;
	struct dlit lo, hi;
	uint64_t nb;
	int rc;

	if (d->d_nagg >= DECL_AGGS)
		return perr(p, col, "more than %u aggregates", DECL_AGGS);
	a = &d->d_agg[d->d_nagg];
	memset(a, 0, sizeof *a);
	a->da_kind = k;
	if ((rc = next(p)) != 0)
		return rc;
	if (k == A_COUNT || k == A_KEYS || k == A_RECORDS) {
		snprintf(a->da_key, sizeof a->da_key, "%s", names[k]);
	} else {
		if ((rc = field_ref(p, &a->da_field)) != 0)
			return rc;
		if (field_bytes(&d->d_field[a->da_field]))
			return perr(p, p->p_tok.col, "%s needs a numeric "
				    "field; %s is bytes", names[k],
				    d->d_field[a->da_field].df_name);
		char key[sizeof a->da_key];

		snprintf(key, sizeof key, "%s(%s)", names[k],
			 d->d_field[a->da_field].df_name);
		memcpy(a->da_key, key, sizeof key);
		if ((rc = next(p)) != 0)
			return rc;
	}
	if (k == A_HIST) {
		col = p->p_tok.col;
		if ((rc = lit_parse(p, &lo)) != 0 || (rc = next(p)) != 0 ||
		    (rc = lit_parse(p, &hi)) != 0 || (rc = next(p)) != 0)
			return rc;
		if (lo.l_str || hi.l_str || !isfinite(lo.l_d) ||
		    !isfinite(hi.l_d) || !(lo.l_d < hi.l_d))
			return perr(p, col, "hist needs finite LO < HI");
		if ((rc = uint_parse(p, "the bucket count", 1, DECL_HIST_NB,
				     &nb)) != 0)
			return rc;
		a->da_lo = lo.l_d;
		a->da_hi = hi.l_d;
		a->da_nb = (uint32_t)nb;
	}
	for (uint32_t i = 0; i < d->d_nagg; i++)
		if (strcmp(d->d_agg[i].da_key, a->da_key) == 0)
			return perr(p, col, "%s given twice", a->da_key);
	d->d_nagg++;
	return 0;
}

/* One line (without its newline). */
static int parse_line(struct pctx *p, bool *have_rec, uint32_t *rec_line)
{
	static const char *const aggs[] = {"count", "sum", "min", "max",
					   "mean", "hist", "keys", "records"};
	struct isc_decl *d = p->p_d;
	struct tok kw;
	uint16_t root;
	uint64_t v;
	int rc = next(p);

	if (rc != 0 || p->p_tok.t == T_END)
		return rc;
	kw = p->p_tok;
	if (tok_is(&kw, "record")) {
		if (d->d_idx)
			return perr_rc(p, -ENOTSUP, kw.col, "record sizes are "
				       "for objects: this program runs on "
				       "objects only");
		if (*have_rec)
			return perr(p, kw.col, "record given twice (line %u)",
				    *rec_line);
		if ((rc = next(p)) != 0 ||
		    (rc = uint_parse(p, "the record size", 1, DECL_REC_MAX,
				     &v)) != 0)
			return rc;
		d->d_rec = (uint32_t)v;
		*have_rec = true;
		*rec_line = p->p_lineno;
	} else if (tok_is(&kw, "field")) {
		if ((rc = next(p)) != 0 || (rc = parse_field(p)) != 0)
			return rc;
	} else if (tok_is(&kw, "where")) {
		if ((rc = next(p)) != 0)
			return rc;
		if (p->p_tok.t == T_END)
			return perr(p, p->p_tok.col, "where needs a condition");
		p->p_depth = 0;
		if ((rc = parse_or(p, &root)) != 0)
			return rc;
		if (d->d_where &&
		    (rc = join_node(p, kw.col, N_AND, d->d_root, root,
				    &root)) != 0)
			return rc;
		d->d_where = true;
		d->d_root = root;
	} else {
		uint32_t i;

		for (i = 0; i < sizeof aggs / sizeof aggs[0]; i++)
			if (tok_is(&kw, aggs[i]))
				break;
		if (i == sizeof aggs / sizeof aggs[0])
			return perr(p, kw.col, "unknown statement '%.*s' "
				    "(record, field, where, count, sum, min, "
				    "max, mean, hist, keys, records)",
				    (int)kw.len,
				    kw.s);
		if ((rc = parse_agg(p, (enum dagg_kind)i)) != 0)
			return rc;
	}
	if (p->p_tok.t != T_END)
		return perr(p, p->p_tok.col, "unexpected '%.*s' at the end of "
			    "the line", (int)p->p_tok.len, p->p_tok.s);
	return 0;
}

/* The built-in fields of an index: key and value. */
static void decl_builtins(struct isc_decl *d)
{
	static const char *const n[] = {"key", "value"};

	for (uint32_t i = 0; i < 2; i++) {
		struct dfield *f = &d->d_field[d->d_nfield++];

		snprintf(f->df_name, sizeof f->df_name, "%s", n[i]);
		f->df_type = i == 0 ? DT_KEY : DT_VALUE;
	}
}

/* Whole-program checks after the last line. */
static int decl_finish(struct pctx *p, bool have_rec, uint32_t rec_line)
{
	struct isc_decl *d = p->p_d;
	uint32_t end = 0;

	p->p_lineno = 0;
	if (d->d_nagg == 0)
		return err_set(-EINVAL, "function %s: nothing to compute (no "
			       "count, sum, min, max, mean, hist, keys or "
			       "records line)", p->p_f->f_name);
	if (d->d_idx)
		return 0;
	for (uint32_t i = 0; i < d->d_nfield; i++) {
		const struct dfield *f = &d->d_field[i];

		if (f->df_off + f->df_size > end)
			end = f->df_off + f->df_size;
		if (have_rec && f->df_off + f->df_size > d->d_rec)
			return err_set(-EINVAL, "function %s: line %u, column "
				       "1: field %s (bytes %u..%u) does not "
				       "fit the record of %u bytes (line %u)",
				       p->p_f->f_name, f->df_line, f->df_name,
				       f->df_off, f->df_off + f->df_size - 1,
				       d->d_rec, rec_line);
	}
	if (!have_rec)
		d->d_rec = end ? end : 8;
	return 0;
}

/* Parse the program line by line (several where lines are joined by
 * parse_line() into one and, whose root is the last node). */
int isc_decl_compile(struct isc_fn *f, const char *src, size_t len)
{
	struct isc_decl *d = calloc(1, sizeof *d);
	struct pctx p = {.p_f = f, .p_d = d};
	bool have_rec = false;
	uint32_t rec_line = 0;
	size_t at = 0;
	int rc = 0;

	if (d == NULL)
		return err_set(-ENOMEM, "function %s", f->f_name);
	d->d_idx = f->f_target == ISC_T_IDX;
	if (d->d_idx)
		decl_builtins(d);
	while (at < len && rc == 0) {
		const char *nl = memchr(src + at, '\n', len - at);
		size_t ll = nl ? (size_t)(nl - (src + at)) : len - at;

		p.p_lineno++;
		p.p_line = src + at;
		p.p_llen = (uint32_t)ll;
		p.p_pos = 0;
		if (memchr(p.p_line, '\0', ll) != NULL)
			rc = perr(&p, 1, "NUL byte in the program");
		else
			rc = parse_line(&p, &have_rec, &rec_line);
		at += ll + 1;
	}
	if (rc == 0)
		rc = decl_finish(&p, have_rec, rec_line);
	if (rc != 0) {
		isc_decl_free(d);
		return rc;
	}
	f->f_decl = d;
	return 0;
}

void isc_decl_free(struct isc_decl *d)
{
	if (d == NULL)
		return;
	free(d->d_pool);
	free(d);
}

uint32_t isc_decl_record(const struct isc_decl *d)
{
	return d->d_idx ? 1 : d->d_rec;
}

/* =================================================== evaluation */

/* Accumulators of one aggregate. */
struct dacc {
	double ac_sum, ac_min, ac_max;
	uint64_t ac_n;
	uint64_t *ac_hist;
};

/* The records of one chunk: strided object records, or index records. */
struct dchunk {
	uint32_t ch_n;
	const uint8_t *ch_base;        /* objects */
	uint32_t ch_rec;
	const struct isc_rec *ch_recs; /* indices */
};

struct drun {
	uint64_t dr_count;             /* records matched */
	struct dacc dr_acc[DECL_AGGS];
	uint8_t *dr_res;               /* nodes x DECL_CHUNK */
	uint16_t dr_sel[DECL_CHUNK];
	uint32_t dr_nsel;
	double dr_v[DECL_CHUNK];       /* one field's values */
	uint8_t dr_have[DECL_CHUNK];
	double dr_x[DECL_CHUNK];       /* selected values */
	const struct dfield *dr_xfield; /* whose values *dr_xp are */
	const double *dr_xp;
	uint32_t dr_xn;
	union {
		int64_t i[DECL_CHUNK];
		uint64_t u[DECL_CHUNK];
	} dr_n;
};

/* Bytes of field f of record i (NULL if the record does not hold it),
 * *len its length. */
static inline const uint8_t *fbytes(const struct dfield *f,
				    const struct dchunk *c, uint32_t i,
				    uint32_t *len)
{
	const struct isc_rec *r;

	if (c->ch_recs == NULL) {
		*len = f->df_size;
		return c->ch_base + (size_t)i * c->ch_rec + f->df_off;
	}
	r = &c->ch_recs[i];
	if (f->df_type == DT_KEY) {
		*len = r->r_klen;
		return r->r_key;
	}
	if (f->df_type == DT_VALUE) {
		*len = r->r_vlen;
		return r->r_val;
	}
	if (r->r_vlen < f->df_off || r->r_vlen - f->df_off < f->df_size)
		return NULL;
	*len = f->df_size;
	return r->r_val + f->df_off;
}

/* Load numeric field f of record at p as int64 / uint64 / double. */
#define LD(T, conv)							\
	({ T _v; memcpy(&_v, p, sizeof _v); conv(_v); })
static inline int64_t ld_i64(enum dtype t, const uint8_t *p)
{
	switch (t) {
	case DT_I8: return (int8_t)p[0];
	case DT_U8: return p[0];
	case DT_I16: return (int16_t)LD(uint16_t, le16toh);
	case DT_U16: return LD(uint16_t, le16toh);
	case DT_I32: return (int32_t)LD(uint32_t, le32toh);
	case DT_U32: return LD(uint32_t, le32toh);
	default: return (int64_t)LD(uint64_t, le64toh);
	}
}

static inline double ld_f64(enum dtype t, const uint8_t *p)
{
	uint64_t u;
	uint32_t w;
	double d;
	float f;

	switch (t) {
	case DT_F64:
		u = LD(uint64_t, le64toh);
		memcpy(&d, &u, 8);
		return d;
	case DT_F32:
		w = LD(uint32_t, le32toh);
		memcpy(&f, &w, 4);
		return f;
	case DT_U64:
		return (double)LD(uint64_t, le64toh);
	default:
		return (double)ld_i64(t, p);
	}
}

/* Load field f of the chunk's records as doubles into v; have[i] 0 when
 * record i does not hold it (objects: every record does). */
static void load_f64(const struct dfield *f, const struct dchunk *c,
		     double *v, uint8_t *have)
{
	uint32_t len;

	if (c->ch_recs == NULL) {
		const uint8_t *p = c->ch_base + f->df_off;

		if (f->df_type == DT_F64) {
			for (uint32_t i = 0; i < c->ch_n; i++, p += c->ch_rec)
				v[i] = ld_f64(DT_F64, p);
		} else {
			for (uint32_t i = 0; i < c->ch_n; i++, p += c->ch_rec)
				v[i] = ld_f64(f->df_type, p);
		}
		memset(have, 1, c->ch_n);
		return;
	}
	for (uint32_t i = 0; i < c->ch_n; i++) {
		const uint8_t *p = fbytes(f, c, i, &len);

		have[i] = p != NULL;
		v[i] = p != NULL ? ld_f64(f->df_type, p) : 0;
	}
}

static inline uint8_t cmp_res(enum dcmp op, int c)
{
	switch (op) {
	case C_EQ: return c == 0 ? 2 : 0;
	case C_NE: return c != 0 ? 2 : 0;
	case C_LT: return c < 0 ? 2 : 0;
	case C_LE: return c <= 0 ? 2 : 0;
	case C_GT: return c > 0 ? 2 : 0;
	default: return c >= 0 ? 2 : 0;
	}
}

static inline uint8_t cmp_f64(enum dcmp op, double a, double b)
{
	switch (op) {
	case C_EQ: return a == b ? 2 : 0;
	case C_NE: return a != b ? 2 : 0;
	case C_LT: return a < b ? 2 : 0;
	case C_LE: return a <= b ? 2 : 0;
	case C_GT: return a > b ? 2 : 0;
	default: return a >= b ? 2 : 0;
	}
}

static int bytes_cmp(const uint8_t *a, uint32_t al, const uint8_t *b,
		     uint32_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c != 0)
		return c;
	return al < bl ? -1 : al > bl;
}

/* One comparison of every record of an object chunk: the operator
 * chosen once, the loop over records of load(p) OP lit. */
#define OBJ_CMP(T, load, lit)						\
	do {								\
		const uint8_t *p = c->ch_base + f->df_off;		\
		const T l_ = (lit);					\
		switch (n->dn_cmp) {					\
		case C_EQ: OBJ_LOOP(load, ==, l_); break;		\
		case C_NE: OBJ_LOOP(load, !=, l_); break;		\
		case C_LT: OBJ_LOOP(load, <, l_); break;		\
		case C_LE: OBJ_LOOP(load, <=, l_); break;		\
		case C_GT: OBJ_LOOP(load, >, l_); break;		\
		default: OBJ_LOOP(load, >=, l_); break;			\
		}							\
	} while (0)
#define OBJ_LOOP(load, op, l)						\
	for (uint32_t i = 0; i < c->ch_n; i++, p += c->ch_rec)		\
		res[i] = (load) op (l) ? 2 : 0

/* A numeric comparison over an object chunk (every record holds the
 * field): true if done here. */
static bool eval_obj_cmp(const struct isc_decl *d, const struct dnode *n,
			 const struct dchunk *c, uint8_t *res)
{
	const struct dfield *f = &d->d_field[n->dn_field];
	enum dtype t = f->df_type;

	if (c->ch_recs != NULL || n->dn_op != N_CMP)
		return false;
	switch (n->dn_mode) {
	case M_F64:
		if (t == DT_F64)
			OBJ_CMP(double, ld_f64(DT_F64, p), n->dn_lit.d);
		else
			OBJ_CMP(double, ld_f64(t, p), n->dn_lit.d);
		return true;
	case M_I64:
		OBJ_CMP(int64_t, ld_i64(t, p), n->dn_lit.i);
		return true;
	case M_U64:
		OBJ_CMP(uint64_t, (uint64_t)ld_i64(DT_U64, p), n->dn_lit.u);
		return true;
	default:
		return false;
	}
}

/* Evaluate a comparison, prefix or contains node over the chunk. */
static void eval_leaf(const struct isc_decl *d, const struct dnode *n,
		      const struct dchunk *c, uint8_t *res)
{
	const struct dfield *f = &d->d_field[n->dn_field];
	static const uint8_t none[1];
	/* no pool when every literal is "" (or none is a string) */
	const uint8_t *s = d->d_pool != NULL ? d->d_pool + n->dn_soff : none;
	uint32_t len;

	if (eval_obj_cmp(d, n, c, res))
		return;
	for (uint32_t i = 0; i < c->ch_n; i++) {
		const uint8_t *p = fbytes(f, c, i, &len);

		if (p == NULL) {
			res[i] = 1;
			continue;
		}
		if (n->dn_op == N_PREFIX) {
			res[i] = len >= n->dn_slen &&
				 memcmp(p, s, n->dn_slen) == 0 ? 2 : 0;
			continue;
		}
		if (n->dn_op == N_CONTAINS) {
			res[i] = memmem(p, len, s, n->dn_slen) != NULL ? 2 : 0;
			continue;
		}
		switch (n->dn_mode) {
		case M_I64:
			res[i] = cmp_res(n->dn_cmp, ld_i64(f->df_type, p) <
					 n->dn_lit.i ? -1 :
					 ld_i64(f->df_type, p) > n->dn_lit.i);
			break;
		case M_U64: {
			uint64_t u = (uint64_t)ld_i64(DT_U64, p);

			res[i] = cmp_res(n->dn_cmp, u < n->dn_lit.u ? -1 :
					 u > n->dn_lit.u);
			break;
		}
		case M_F64:
			res[i] = cmp_f64(n->dn_cmp, ld_f64(f->df_type, p),
					 n->dn_lit.d);
			break;
		case M_BYTES:
			res[i] = cmp_res(n->dn_cmp,
					 bytes_cmp(p, len, s, n->dn_slen));
			break;
		default:
			res[i] = n->dn_const ? 2 : 0;
			break;
		}
	}
}

/* Evaluate the where over the chunk: the selection. */
static void eval_where(const struct isc_decl *d, struct drun *dr,
		       const struct dchunk *c)
{
	uint8_t *res = dr->dr_res;
	uint32_t nn = d->d_nnode;

	for (uint32_t k = 0; k < nn; k++) {
		const struct dnode *n = &d->d_node[k];
		uint8_t *r = res + (size_t)k * DECL_CHUNK;
		const uint8_t *a = res + (size_t)n->dn_a * DECL_CHUNK;
		const uint8_t *b = res + (size_t)n->dn_b * DECL_CHUNK;

		switch (n->dn_op) {
		case N_AND:
			for (uint32_t i = 0; i < c->ch_n; i++)
				r[i] = a[i] < b[i] ? a[i] : b[i];
			break;
		case N_OR:
			for (uint32_t i = 0; i < c->ch_n; i++)
				r[i] = a[i] > b[i] ? a[i] : b[i];
			break;
		case N_NOT:
			for (uint32_t i = 0; i < c->ch_n; i++)
				r[i] = (uint8_t)(2 - a[i]);
			break;
		default:
			eval_leaf(d, n, c, r);
			break;
		}
	}
	res += (size_t)d->d_root * DECL_CHUNK;
	dr->dr_nsel = 0;
	for (uint32_t i = 0; i < c->ch_n; i++)
		if (res[i] == 2)
			dr->dr_sel[dr->dr_nsel++] = (uint16_t)i;
}

/* The selected values of a field, dense: *x and their count. */
static uint32_t gather(const struct isc_decl *d, struct drun *dr,
		       const struct dfield *f, const struct dchunk *c,
		       const double **x)
{
	uint32_t n = 0;

	if (dr->dr_xfield == f) {       /* loaded for this chunk already */
		*x = dr->dr_xp;
		return dr->dr_xn;
	}
	dr->dr_xfield = f;
	load_f64(f, c, dr->dr_v, dr->dr_have);
	if (!d->d_where && c->ch_recs == NULL) {
		*x = dr->dr_xp = dr->dr_v;
		return dr->dr_xn = c->ch_n;
	}
	if (!d->d_where) {
		for (uint32_t i = 0; i < c->ch_n; i++)
			if (dr->dr_have[i])
				dr->dr_x[n++] = dr->dr_v[i];
	} else {
		for (uint32_t k = 0; k < dr->dr_nsel; k++)
			if (dr->dr_have[dr->dr_sel[k]])
				dr->dr_x[n++] = dr->dr_v[dr->dr_sel[k]];
	}
	*x = dr->dr_xp = dr->dr_x;
	return dr->dr_xn = n;
}

static void agg_hist(const struct dagg *a, struct dacc *ac, const double *x,
		     uint32_t n)
{
	double scale = a->da_nb / (a->da_hi - a->da_lo), lo = a->da_lo;
	double last = a->da_nb - 1;

	/* below LO into bucket 0, from HI on into the last, NaN skipped:
	 * clamped in floating point, without branches but the NaN test */
	for (uint32_t i = 0; i < n; i++) {
		double t = (x[i] - lo) * scale;

		if (x[i] != x[i])
			continue;
		t = t < 0 ? 0 : t;
		t = t > last ? last : t;
		ac->ac_hist[(uint32_t)t]++;
	}
}

/* One aggregate over the dense values x[0..n). */
static void agg_run(const struct dagg *a, struct dacc *ac, const double *x,
		    uint32_t n)
{
	double s = 0, m;
	uint64_t k = 0;

	switch (a->da_kind) {
	case A_SUM:
	case A_MEAN:
		for (uint32_t i = 0; i < n; i++)
			s += x[i];
		ac->ac_sum += s;
		ac->ac_n += n;
		break;
	case A_MIN:
		m = ac->ac_min;
		for (uint32_t i = 0; i < n; i++) {
			m = x[i] < m ? x[i] : m;
			k += x[i] == x[i];
		}
		ac->ac_min = m;
		ac->ac_n += k;
		break;
	case A_MAX:
		m = ac->ac_max;
		for (uint32_t i = 0; i < n; i++) {
			m = x[i] > m ? x[i] : m;
			k += x[i] == x[i];
		}
		ac->ac_max = m;
		ac->ac_n += k;
		break;
	case A_HIST:
		agg_hist(a, ac, x, n);
		break;
	default:
		break;
	}
}

/* keys (with_val false) or records: a MATCH record per selected record;
 * on an index its value empty, or the record's value. */
static int agg_keys(struct isc_run *r, struct drun *dr,
		    const struct dchunk *c, uint64_t off, bool with_val)
{
	const struct isc_decl *d = r->r_fn->f_decl;
	uint32_t n = d->d_where ? dr->dr_nsel : c->ch_n;
	int rc = 0;

	for (uint32_t k = 0; k < n && rc == 0; k++) {
		uint32_t i = d->d_where ? dr->dr_sel[k] : k;

		if (c->ch_recs != NULL) {
			rc = isc_comb_add(&r->r_comb, r->r_fn->f_name,
					  c->ch_recs[i].r_key,
					  c->ch_recs[i].r_klen, ISC_V_MATCH,
					  with_val ? c->ch_recs[i].r_val : NULL,
					  with_val ? c->ch_recs[i].r_vlen : 0);
		} else {
			uint64_t be = htobe64(off + (uint64_t)i * c->ch_rec);

			rc = isc_comb_add(&r->r_comb, r->r_fn->f_name, &be, 8,
					  ISC_V_MATCH, c->ch_base +
					  (size_t)i * c->ch_rec, c->ch_rec);
		}
	}
	return rc;
}

/* Evaluate one chunk (off: objects, the first record's byte offset). */
static int eval_chunk(struct isc_run *r, const struct dchunk *c,
		      uint64_t off)
{
	const struct isc_decl *d = r->r_fn->f_decl;
	struct drun *dr = r->r_priv;
	int rc = 0;

	dr->dr_xfield = NULL;
	if (d->d_where)
		eval_where(d, dr, c);
	dr->dr_count += d->d_where ? dr->dr_nsel : c->ch_n;
	for (uint32_t k = 0; k < d->d_nagg && rc == 0; k++) {
		const struct dagg *a = &d->d_agg[k];
		const double *x;
		uint32_t n;

		if (a->da_kind == A_COUNT)
			continue;
		if (a->da_kind == A_KEYS || a->da_kind == A_RECORDS) {
			rc = agg_keys(r, dr, c, off, a->da_kind == A_RECORDS);
			continue;
		}
		n = gather(d, dr, &d->d_field[a->da_field], c, &x);
		agg_run(a, &dr->dr_acc[k], x, n);
	}
	return rc;
}

int isc_decl_start(struct isc_run *r)
{
	const struct isc_decl *d = r->r_fn->f_decl;
	struct drun *dr = calloc(1, sizeof *dr);

	if (dr == NULL)
		return err_set(-ENOMEM, "function %s: run", r->r_fn->f_name);
	r->r_priv = dr;
	if (d->d_nnode != 0) {
		dr->dr_res = malloc((size_t)d->d_nnode * DECL_CHUNK);
		if (dr->dr_res == NULL)
			goto nomem;
	}
	for (uint32_t k = 0; k < d->d_nagg; k++) {
		dr->dr_acc[k].ac_min = INFINITY;
		dr->dr_acc[k].ac_max = -INFINITY;
		if (d->d_agg[k].da_kind != A_HIST)
			continue;
		dr->dr_acc[k].ac_hist = calloc(d->d_agg[k].da_nb,
					       sizeof(uint64_t));
		if (dr->dr_acc[k].ac_hist == NULL)
			goto nomem;
	}
	return 0;
nomem:
	isc_decl_abort(r);
	return err_set(-ENOMEM, "function %s: run", r->r_fn->f_name);
}

int isc_decl_ext(struct isc_run *r, uint64_t off, const void *data,
		 size_t len)
{
	const struct isc_decl *d = r->r_fn->f_decl;
	uint32_t rec = d->d_rec;
	struct dchunk c = {.ch_rec = rec};
	size_t nrec = len / rec;
	int rc = 0;

	if (off % rec != 0 || len % rec != 0)
		return err_set(-EINVAL, "function %s: extent at byte %" PRIu64
			       " of %zu bytes is not whole records of %u "
			       "bytes", r->r_fn->f_name, off, len, rec);
	for (size_t i = 0; i < nrec && rc == 0; i += DECL_CHUNK) {
		c.ch_n = (uint32_t)(nrec - i < DECL_CHUNK ? nrec - i :
				    DECL_CHUNK);
		c.ch_base = (const uint8_t *)data + i * rec;
		rc = eval_chunk(r, &c, off + i * rec);
	}
	return rc;
}

int isc_decl_idx(struct isc_run *r, const struct isc_idx_src *src)
{
	struct isc_rec *recs = malloc(DECL_CHUNK * sizeof *recs);
	struct dchunk c = {0};
	uint8_t *last = NULL;
	size_t last_len = 0;
	uint32_t got;
	int rc;

	if (recs == NULL)
		return err_set(-ENOMEM, "function %s: run", r->r_fn->f_name);
	c.ch_recs = recs;
	for (;;) {
		if (isc_now_ns() > r->r_lim.l_deadline_ns) {
			rc = err_set(-ETIMEDOUT, "function %s: deadline of %"
				     PRIu64 " ms exceeded%s", r->r_fn->f_name,
				     r->r_lim.l_deadline_ms, r->r_lim.l_where);
			break;
		}
		rc = src->is_next(src->is_arg, last, last_len, DECL_CHUNK,
				  recs, &got);
		if (rc != 0 || got == 0)
			break;
		c.ch_n = got;
		rc = eval_chunk(r, &c, 0);
		if (rc != 0)
			break;
		/* the last key, kept: the source's page goes at its next
		 * call */
		free(last);
		last_len = recs[got - 1].r_klen;
		last = malloc(last_len ? last_len : 1);
		if (last == NULL) {
			rc = err_set(-ENOMEM, "function %s: run",
				     r->r_fn->f_name);
			break;
		}
		memcpy(last, recs[got - 1].r_key, last_len);
	}
	free(last);
	free(recs);
	return rc;
}

/* One fixed-size aggregate record: 8 bytes of u (a double's or an
 * int64's bits), or with a count, 16 (MEAN). */
static int emit_fixed(struct isc_run *r, const char *key, uint8_t type,
		      uint64_t u, bool with_n, uint64_t n)
{
	uint8_t v[16];

	u = htole64(u);
	n = htole64(n);
	memcpy(v, &u, 8);
	memcpy(v + 8, &n, 8);
	return isc_comb_add(&r->r_comb, r->r_fn->f_name, key, strlen(key),
			    type, v, with_n ? 16 : 8);
}

static uint64_t dbits(double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	return u;
}

/* A HIST record: lo, hi, nb, the counts. */
static int emit_hist(struct isc_run *r, const struct dagg *a,
		     const struct dacc *ac)
{
	size_t len = 20 + 8ull * a->da_nb;
	uint8_t *h = malloc(len);
	uint32_t nb = htole32(a->da_nb);
	uint64_t u;
	int rc;

	if (h == NULL)
		return err_set(-ENOMEM, "function %s", r->r_fn->f_name);
	u = htole64(dbits(a->da_lo));
	memcpy(h, &u, 8);
	u = htole64(dbits(a->da_hi));
	memcpy(h + 8, &u, 8);
	memcpy(h + 16, &nb, 4);
	for (uint32_t b = 0; b < a->da_nb; b++) {
		u = htole64(ac->ac_hist[b]);
		memcpy(h + 20 + 8 * b, &u, 8);
	}
	rc = isc_comb_add(&r->r_comb, r->r_fn->f_name, a->da_key,
			  strlen(a->da_key), ISC_V_HIST, h, len);
	free(h);
	return rc;
}

/* The aggregates' records (min, max and mean only when a value was
 * seen). */
static int decl_emit(struct isc_run *r)
{
	const struct isc_decl *d = r->r_fn->f_decl;
	struct drun *dr = r->r_priv;
	int rc = 0;

	for (uint32_t k = 0; k < d->d_nagg && rc == 0; k++) {
		const struct dagg *a = &d->d_agg[k];
		const struct dacc *ac = &dr->dr_acc[k];

		switch (a->da_kind) {
		case A_COUNT:
			rc = emit_fixed(r, a->da_key, ISC_V_COUNT,
					dr->dr_count, false, 0);
			break;
		case A_SUM:
			rc = emit_fixed(r, a->da_key, ISC_V_SUM,
					dbits(ac->ac_sum), false, 0);
			break;
		case A_MIN:
			if (ac->ac_n != 0)
				rc = emit_fixed(r, a->da_key, ISC_V_MIN,
						dbits(ac->ac_min), false, 0);
			break;
		case A_MAX:
			if (ac->ac_n != 0)
				rc = emit_fixed(r, a->da_key, ISC_V_MAX,
						dbits(ac->ac_max), false, 0);
			break;
		case A_MEAN:
			if (ac->ac_n != 0)
				rc = emit_fixed(r, a->da_key, ISC_V_MEAN,
						dbits(ac->ac_sum), true,
						ac->ac_n);
			break;
		case A_HIST:
			rc = emit_hist(r, a, ac);
			break;
		default:
			break;
		}
	}
	return rc;
}

int isc_decl_end(struct isc_run *r)
{
	int rc = decl_emit(r);

	isc_decl_abort(r);
	return rc;
}

void isc_decl_abort(struct isc_run *r)
{
	struct drun *dr = r->r_priv;

	if (dr == NULL)
		return;
	for (uint32_t k = 0; k < DECL_AGGS; k++)
		free(dr->dr_acc[k].ac_hist);
	free(dr->dr_res);
	free(dr);
	r->r_priv = NULL;
}
