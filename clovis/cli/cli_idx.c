/*
 * cli_idx.c — the "strata idx ..." commands: create, put, get, del, next,
 * dump, rm and ls of indices in the default container.
 *
 * Keys and values come from the command line as text, or as hex digits
 * with --hex; they are printed the same way (see cli_bytes_out()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/cli/cli.h"

/* Records asked for by one NEXT op while scanning. */
#define IDX_PAGE 256u

/* Longest key text quoted in a message. */
#define IDX_QUOTE_MAX 64u

/* Quote key k (len bytes) for a message, shortened past IDX_QUOTE_MAX. */
static const char *key_quote(const void *k, size_t len, bool hex, char *buf,
			     size_t size)
{
	size_t shown = len > IDX_QUOTE_MAX ? IDX_QUOTE_MAX : len;
	FILE *f = fmemopen(buf, size, "w");

	if (f == NULL) {
		snprintf(buf, size, "(%zu bytes)", len);
		return buf;
	}
	fputc('\'', f);
	cli_bytes_out(f, k, shown, hex);
	fputc('\'', f);
	if (shown < len)
		fprintf(f, "... (%zu bytes)", len);
	fclose(f);
	return buf;
}

/* Set up index id and CREATE it. */
static int idx_make(struct cli *c, const char *text,
		    const struct clovis_id *id, struct clovis_idx *ix)
{
	int rc;

	rc = cli_call(c, clovis_idx_init(ix, clovis_default_realm(c->c_cl),
					 id));
	if (rc == 0)
		rc = cli_entity_run(c, &ix->in_entity, CLOVIS_EO_CREATE);
	if (rc < 0)
		return cli_fail(c, rc, "create index %s", text);
	return 0;
}

/* Print a one-word result for a changing command (text or JSON). */
static void idx_done(const struct cli *c, const struct clovis_idx *ix,
		     const char *verb, const char *what)
{
	char id[CLOVIS_ID_STR_LEN];

	clovis_id_format(&ix->in_entity.en_id, id);
	if (c->c_json)
		printf("{\"id\": \"%s\", \"%s\": true}\n", id, verb);
	else if (!c->c_quiet)
		printf("%s %s %s\n", verb, what, c->c_args[0]);
}

/* strata idx create ID: make an empty index. */
int cmd_idx_create(struct cli *c)
{
	struct clovis_idx ix;
	struct clovis_id id;
	int rc;

	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = idx_make(c, c->c_args[0], &id, &ix);
	if (rc != 0)
		return rc;
	idx_done(c, &ix, "created", "index");
	return CLI_OK;
}

/* Parse the id argument and open that index. */
static int idx_arg_open(struct cli *c, struct clovis_idx *ix)
{
	struct clovis_id id;
	int rc;

	rc = cli_id(c, c->c_args[0], &id);
	if (rc == 0)
		rc = cli_idx_open(c, c->c_args[0], &id, ix);
	return rc;
}

/* Decode argument s (a key or value) or report a usage error. */
static int arg_bytes(struct cli *c, const char *s, const char *name,
		     void **buf, size_t *len)
{
	*buf = cli_bytes(s, c->c_hex, len);
	if (*buf != NULL)
		return 0;
	if (c->c_hex)
		return cli_usage(c, "%s '%s' is not an even number of hex digits",
				 name, s);
	return cli_sys(ENOMEM, "%s", name);
}

/*
 * One record op: key k, value slot (vbuf/vlen, NULL for DEL), flags.
 * Returns the op's rc; *rec gets the record's rc.  GET returns the value
 * in *vbuf (malloc()ed) and *vlen.
 */
static int rec_op(struct cli *c, struct clovis_idx *ix,
		  enum clovis_idx_opcode opcode, void *k, size_t klen,
		  void **vbuf, size_t *vlen, uint32_t flags, int32_t *rec)
{
	struct clovis_bufvec keys = { 1, &k, &klen };
	struct clovis_bufvec vals = { 1, vbuf, vlen };
	struct clovis_op *op = NULL;
	int rc;

	*rec = 0;
	rc = cli_call(c, clovis_idx_op(ix, opcode, &keys,
				       vbuf != NULL ? &vals : NULL, rec, flags,
				       &op));
	if (rc == 0)
		rc = cli_op_run(c, op);
	return rc;
}

/*
 * Report a failed record of command cmd on key k; why replaces the kept
 * message unless it is NULL.
 */
static int rec_fail(struct cli *c, int rc, const char *cmd, const void *k,
		    size_t klen, const char *why)
{
	char q[IDX_QUOTE_MAX * 4 + 64];

	key_quote(k, klen, c->c_hex, q, sizeof q);
	if (why != NULL)
		cli_msg(c, "%s", why);
	return cli_fail(c, rc, "idx %s %s key %s", cmd, c->c_args[0], q);
}

/* strata idx put ID KEY VALUE: store one record. */
int cmd_idx_put(struct cli *c)
{
	struct clovis_idx ix;
	void *k = NULL, *v = NULL;
	size_t klen = 0, vlen = 0;
	int32_t rec = 0;
	int rc;

	rc = arg_bytes(c, c->c_args[1], "KEY", &k, &klen);
	if (rc == 0)
		rc = arg_bytes(c, c->c_args[2], "VALUE", &v, &vlen);
	if (rc == 0)
		rc = idx_arg_open(c, &ix);
	if (rc == 0) {
		rc = rec_op(c, &ix, CLOVIS_IC_PUT, k, klen, &v, &vlen,
			    c->c_overwrite ? CLOVIS_IF_OVERWRITE : 0, &rec);
		if (rc < 0)
			rc = rec_fail(c, rc, "put", k, klen, NULL);
		else if (rec < 0)
			rc = rec_fail(c, rec, "put", k, klen,
				      rec == -EEXIST ? "key exists (use --overwrite to replace it)"
						     : "record refused");
	}
	if (rc == 0)
		idx_done(c, &ix, "stored", "record in");
	free(k);
	free(v);
	return rc;
}

/* Print one record as "KEY<TAB>VALUE" or as a JSON object. */
static void rec_print(const struct cli *c, const void *k, size_t klen,
		      const void *v, size_t vlen, bool first)
{
	if (c->c_json) {
		printf("%s{\"key\": ", first ? "" : ", ");
		cli_bytes_json(stdout, k, klen, c->c_hex);
		printf(", \"value\": ");
		cli_bytes_json(stdout, v, vlen, c->c_hex);
		printf("}");
		return;
	}
	cli_bytes_out(stdout, k, klen, c->c_hex);
	putchar('\t');
	cli_bytes_out(stdout, v, vlen, c->c_hex);
	putchar('\n');
}

/* strata idx get ID KEY: print the value of one key. */
int cmd_idx_get(struct cli *c)
{
	struct clovis_idx ix;
	void *k = NULL, *v = NULL;
	size_t klen = 0, vlen = 0;
	int32_t rec = 0;
	int rc;

	rc = arg_bytes(c, c->c_args[1], "KEY", &k, &klen);
	if (rc == 0)
		rc = idx_arg_open(c, &ix);
	if (rc == 0) {
		rc = rec_op(c, &ix, CLOVIS_IC_GET, k, klen, &v, &vlen, 0, &rec);
		if (rc < 0)
			rc = rec_fail(c, rc, "get", k, klen, NULL);
		else if (rec < 0)
			rc = rec_fail(c, rec, "get", k, klen,
				      rec == -ENOENT ? "no such key" : "lookup failed");
	}
	if (rc == 0 && c->c_json) {
		rec_print(c, k, klen, v, vlen, true);
		putchar('\n');
	} else if (rc == 0) {
		cli_bytes_out(stdout, v, vlen, c->c_hex);
		putchar('\n');
	}
	free(k);
	free(v);
	return rc;
}

/* strata idx del ID KEY: remove one record. */
int cmd_idx_del(struct cli *c)
{
	struct clovis_idx ix;
	void *k = NULL;
	size_t klen = 0;
	int32_t rec = 0;
	int rc;

	rc = arg_bytes(c, c->c_args[1], "KEY", &k, &klen);
	if (rc == 0)
		rc = idx_arg_open(c, &ix);
	if (rc == 0) {
		rc = rec_op(c, &ix, CLOVIS_IC_DEL, k, klen, NULL, NULL, 0, &rec);
		if (rc < 0)
			rc = rec_fail(c, rc, "del", k, klen, NULL);
		else if (rec < 0)
			rc = rec_fail(c, rec, "del", k, klen,
				      rec == -ENOENT ? "no such key" : "delete failed");
	}
	if (rc == 0)
		idx_done(c, &ix, "deleted", "record from");
	free(k);
	return rc;
}

/* A walk over an index in key order, one NEXT op per page. */
struct scan {
	struct cli *sc_cli;
	struct clovis_idx *sc_ix;
	void *sc_start;      /* own copy of the start key; NULL: first */
	size_t sc_start_len;
	bool sc_exclude;     /* start after sc_start, not at it */
	uint64_t sc_left;    /* records still wanted */
	uint64_t sc_seen;    /* records printed */
};

/* Print the n records a NEXT returned and keep the last key as start. */
static uint32_t scan_take(struct scan *s, void **kb, size_t *kl, void **vb,
			  size_t *vl, const int32_t *rcs, uint32_t n)
{
	uint32_t k, got = 0;

	while (got < n && rcs[got] == 0) {
		rec_print(s->sc_cli, kb[got], kl[got], vb[got], vl[got],
			  s->sc_seen == 0);
		s->sc_seen++;
		got++;
	}
	if (got > 0) {
		free(s->sc_start);
		s->sc_start = kb[got - 1];
		s->sc_start_len = kl[got - 1];
		s->sc_exclude = true;
	}
	for (k = 0; k < n; k++) {
		if (kb[k] != s->sc_start)
			free(kb[k]);
		free(vb[k]);
	}
	return got;
}

/* Run one NEXT op for up to n records; sets *got to how many came. */
static int scan_page(struct scan *s, uint32_t n, uint32_t *got)
{
	void *kb[IDX_PAGE] = { NULL }, *vb[IDX_PAGE] = { NULL };
	size_t kl[IDX_PAGE] = { 0 }, vl[IDX_PAGE] = { 0 };
	int32_t rcs[IDX_PAGE] = { 0 };
	struct clovis_bufvec keys = { n, kb, kl }, vals = { n, vb, vl };
	struct clovis_op *op = NULL;
	struct cli *c = s->sc_cli;
	int rc;

	kb[0] = s->sc_start;
	kl[0] = s->sc_start_len;
	rc = cli_call(c, clovis_idx_op(s->sc_ix, CLOVIS_IC_NEXT, &keys, &vals,
				       rcs,
				       s->sc_exclude ? CLOVIS_IF_EXCLUDE_START_KEY
						     : 0, &op));
	if (rc == 0)
		rc = cli_op_run(c, op);
	if (rc < 0)
		return rc;
	if (kb[0] == s->sc_start)
		kb[0] = NULL;
	*got = scan_take(s, kb, kl, vb, vl, rcs, n);
	return 0;
}

/* Walk until sc_left records are printed or the index ends. */
static int scan_run(struct scan *s)
{
	uint32_t n, got = 0;
	int rc;

	do {
		n = s->sc_left < IDX_PAGE ? (uint32_t)s->sc_left : IDX_PAGE;
		rc = scan_page(s, n, &got);
		if (rc < 0)
			return rc;
		s->sc_left -= got;
	} while (got == n && s->sc_left > 0);
	return 0;
}

/* Scan the opened index from start (NULL: the first key), printing. */
static int scan_print(struct cli *c, struct clovis_idx *ix, void *start,
		      size_t start_len, uint64_t limit, uint64_t *seen)
{
	struct scan s = {
		.sc_cli = c, .sc_ix = ix, .sc_start = start,
		.sc_start_len = start_len, .sc_exclude = c->c_exclude,
		.sc_left = limit,
	};
	int rc;

	if (c->c_json)
		printf("[");
	rc = scan_run(&s);
	if (c->c_json)
		printf("]\n");
	free(s.sc_start);
	*seen = s.sc_seen;
	return rc;
}

/* strata idx next ID [START_KEY]: print records from a key on. */
int cmd_idx_next(struct cli *c)
{
	struct clovis_idx ix;
	char q[IDX_QUOTE_MAX * 4 + 64] = "";
	uint64_t limit = c->c_count_set ? c->c_count : 10, seen = 0;
	void *k = NULL;
	size_t klen = 0;
	int rc = 0;

	if (limit == 0)
		return cli_usage(c, "--count must be at least 1");
	if (c->c_nargs > 1)
		rc = arg_bytes(c, c->c_args[1], "START_KEY", &k, &klen);
	if (rc == 0)
		rc = idx_arg_open(c, &ix);
	if (rc != 0) {
		free(k);
		return rc;
	}
	if (k != NULL)
		key_quote(k, klen, c->c_hex, q, sizeof q);
	rc = scan_print(c, &ix, k, klen, limit, &seen);
	if (rc < 0)
		return cli_fail(c, rc, "idx next %s", c->c_args[0]);
	if (seen > 0)
		return CLI_OK;
	if (q[0] == '\0')
		cli_msg(c, "the index is empty");
	else
		cli_msg(c, "no record %s key %s",
			c->c_exclude ? "after" : "at or after", q);
	return cli_fail(c, -ENOENT, "idx next %s", c->c_args[0]);
}

/* strata idx dump ID: print every record in key order. */
int cmd_idx_dump(struct cli *c)
{
	struct clovis_idx ix;
	uint64_t seen = 0;
	int rc;

	rc = idx_arg_open(c, &ix);
	if (rc != 0)
		return rc;
	rc = scan_print(c, &ix, NULL, 0, UINT64_MAX, &seen);
	if (rc < 0)
		return cli_fail(c, rc, "idx dump %s", c->c_args[0]);
	return CLI_OK;
}

/* strata idx rm ID: delete an index and all its records. */
int cmd_idx_rm(struct cli *c)
{
	struct clovis_idx ix;
	int rc;

	rc = idx_arg_open(c, &ix);
	if (rc != 0)
		return rc;
	rc = cli_entity_run(c, &ix.in_entity, CLOVIS_EO_DELETE);
	if (rc < 0)
		return cli_fail(c, rc, "delete index %s", c->c_args[0]);
	idx_done(c, &ix, "deleted", "index");
	return CLI_OK;
}

/* strata idx ls: list index ids. */
int cmd_idx_ls(struct cli *c)
{
	return cli_list(c, CLOVIS_ET_IDX, "indices");
}
