/*
 * cli_idx.c — the "strata idx ..." commands: create, put, get, del, next,
 * dump, rm and ls of indices in the default container.  put and del take
 * a list of records, decoded and checked before the store is opened
 * (cli_recs_parse()) and applied one op per record, in order.
 *
 * Keys and values come from the command line as text, or as hex digits
 * with --hex; they are printed the same way (see cli_bytes_out()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/cli/cli.h"

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
 * message unless it is NULL.  where follows the key in the report ("" or
 * the record's place in a list).
 */
static int rec_fail(struct cli *c, int rc, const char *cmd, const void *k,
		    size_t klen, const char *why, const char *where)
{
	char q[IDX_QUOTE_MAX * 4 + 64];

	key_quote(k, klen, c->c_hex, q, sizeof q);
	if (why != NULL)
		cli_msg(c, "%s", why);
	return cli_fail(c, rc, "idx %s %s key %s%s", cmd, c->c_args[0], q,
			where);
}

/* The command word of a CO_RECORDS command: "put" or "del". */
static const char *recs_cmd(const struct cli *c)
{
	return c->c_cmd->cc_name;
}

/* Decode the KEY (or VALUE) of record i of n from argument s. */
static int rec_arg(struct cli *c, const char *s, const char *what,
		   uint32_t i, uint32_t n, void **buf, size_t *len)
{
	char name[64];

	if (n > 1)
		snprintf(name, sizeof name, "%s of record %u", what, i + 1);
	else
		snprintf(name, sizeof name, "%s", what);
	return arg_bytes(c, s, name, buf, len);
}

/*
 * Check decoded record i of n: no empty key in a list of several (an
 * unset shell variable, most likely), the key within CLOVIS_KEY_MAX.  (A
 * value cannot pass CLOVIS_VAL_MAX here: the kernel limits one argument
 * to 128 KiB; the library checks it anyway.)
 */
static int rec_check(struct cli *c, const struct cli_rec *r, uint32_t i,
		     uint32_t n)
{
	char where[48] = "";

	if (n > 1 && r->cr_klen == 0)
		return cli_usage(c, "KEY of record %u of %u is empty (a list "
				 "of records takes no empty key)", i + 1, n);
	if (n > 1)
		snprintf(where, sizeof where, " (record %u of %u)", i + 1, n);
	if (r->cr_klen > CLOVIS_KEY_MAX) {
		cli_msg(c, "key of %zu bytes is longer than %u bytes; nothing "
			"changed", r->cr_klen, CLOVIS_KEY_MAX);
		return rec_fail(c, -E2BIG, recs_cmd(c), r->cr_key, r->cr_klen,
				NULL, where);
	}
	return 0;
}

/* Decode record i of n: its key from argument a, its value from a + 1
 * when put. */
static int rec_decode(struct cli *c, uint32_t i, uint32_t n, int a, bool put)
{
	struct cli_rec *r = &c->c_recs[i];
	int rc;

	rc = rec_arg(c, c->c_args[a], "KEY", i, n, &r->cr_key, &r->cr_klen);
	if (rc == 0 && put)
		rc = rec_arg(c, c->c_args[a + 1], "VALUE", i, n, &r->cr_val,
			     &r->cr_vlen);
	if (rc == 0)
		rc = rec_check(c, r, i, n);
	return rc;
}

int cli_recs_parse(struct cli *c)
{
	bool put = strcmp(recs_cmd(c), "put") == 0;
	int per = put ? 2 : 1, left = c->c_nargs - 1, rc = 0;
	uint32_t i, n;

	if (put && left % 2 != 0) {
		const char *last = c->c_args[c->c_nargs - 1];
		char q[IDX_QUOTE_MAX * 4 + 64];

		key_quote(last, strlen(last), false, q, sizeof q);
		return cli_usage(c, "KEY VALUE pairs expected after the ID: "
				 "%d arguments, the last key %s has no value",
				 left, q);
	}
	n = (uint32_t)(left / per);
	if (n > CLI_RECS_MAX)
		return cli_usage(c, "%u records: at most %u per command", n,
				 CLI_RECS_MAX);
	c->c_recs = calloc(n, sizeof c->c_recs[0]);
	if (c->c_recs == NULL)
		return cli_sys(ENOMEM, "%u records", n);
	c->c_nrecs = n;
	for (i = 0; i < n && rc == 0; i++)
		rc = rec_decode(c, i, n, 1 + (int)i * per, put);
	return rc;
}

void cli_recs_free(struct cli *c)
{
	uint32_t i;

	for (i = 0; i < c->c_nrecs; i++) {
		free(c->c_recs[i].cr_key);
		free(c->c_recs[i].cr_val);
	}
	free(c->c_recs);
	c->c_recs = NULL;
	c->c_nrecs = 0;
}

/* Why record op opcode failed with rec, for the report. */
static const char *rec_why(enum clovis_idx_opcode opcode, int32_t rec)
{
	if (opcode == CLOVIS_IC_PUT)
		return rec == -EEXIST ? "key exists (use --overwrite to "
					"replace it)" : "record refused";
	return rec == -ENOENT ? "no such key" : "delete failed";
}

/*
 * Run one op per record of c_recs, in order, on the opened index; stop at
 * the first that fails and report it with its place in the list and what
 * was done before it.
 */
static int recs_run(struct cli *c, struct clovis_idx *ix,
		    enum clovis_idx_opcode opcode, uint32_t flags)
{
	bool put = opcode == CLOVIS_IC_PUT;
	char where[96] = "";
	int32_t rec = 0;
	uint32_t i;
	int rc = 0;

	for (i = 0; i < c->c_nrecs; i++) {
		struct cli_rec *r = &c->c_recs[i];

		rc = rec_op(c, ix, opcode, r->cr_key, r->cr_klen,
			    put ? &r->cr_val : NULL, put ? &r->cr_vlen : NULL,
			    flags, &rec);
		if (rc == 0 && rec == 0)
			continue;
		if (c->c_nrecs > 1)
			snprintf(where, sizeof where, " (record %u of %u; the "
				 "%u before it %s)", i + 1, c->c_nrecs, i,
				 put ? "stored" : "deleted");
		if (rc < 0)
			return rec_fail(c, rc, recs_cmd(c), r->cr_key,
					r->cr_klen, NULL, where);
		return rec_fail(c, rec, recs_cmd(c), r->cr_key, r->cr_klen,
				rec_why(opcode, rec), where);
	}
	return 0;
}

/* Print the result of idx put or idx del of c_nrecs records. */
static void recs_done(const struct cli *c, const struct clovis_idx *ix,
		      const char *verb, const char *prep)
{
	char id[CLOVIS_ID_STR_LEN];

	clovis_id_format(&ix->in_entity.en_id, id);
	if (c->c_json)
		printf("{\"id\": \"%s\", \"%s\": true, \"records\": %u}\n", id,
		       verb, c->c_nrecs);
	else if (c->c_quiet)
		return;
	else if (c->c_nrecs == 1)
		printf("%s record %s %s\n", verb, prep, c->c_args[0]);
	else
		printf("%s %u records %s %s\n", verb, c->c_nrecs, prep,
		       c->c_args[0]);
}

/* strata idx put ID KEY VALUE [KEY VALUE ...]: store records in order. */
int cmd_idx_put(struct cli *c)
{
	struct clovis_idx ix;
	int rc;

	rc = idx_arg_open(c, &ix);
	if (rc == 0)
		rc = recs_run(c, &ix, CLOVIS_IC_PUT,
			      c->c_overwrite ? CLOVIS_IF_OVERWRITE : 0);
	if (rc == 0)
		recs_done(c, &ix, "stored", "in");
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
			rc = rec_fail(c, rc, "get", k, klen, NULL, "");
		else if (rec < 0)
			rc = rec_fail(c, rec, "get", k, klen,
				      rec == -ENOENT ? "no such key" : "lookup failed",
				      "");
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

/* strata idx del ID KEY [KEY ...]: remove records in order. */
int cmd_idx_del(struct cli *c)
{
	struct clovis_idx ix;
	int rc;

	rc = idx_arg_open(c, &ix);
	if (rc == 0)
		rc = recs_run(c, &ix, CLOVIS_IC_DEL, 0);
	if (rc == 0)
		recs_done(c, &ix, "deleted", "from");
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
