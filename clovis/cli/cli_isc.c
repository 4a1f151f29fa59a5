/*
 * cli_isc.c — strata isc register / unregister / list / show / call:
 * function shipping (clovis.h "function shipping", docs/isc.md, issue 32).
 *
 *   isc register NAME (--decl FILE | --lua FILE | --native PATH)
 *                              store the code under NAME, print its digest
 *   isc unregister NAME        forget the name (the code stays)
 *   isc list                   every registered name: kind and digest
 *   isc show NAME              kind, digest and code of one function
 *   isc call NAME (--obj ID [--start B] [--blocks N] | --idx ID
 *                 [--from KEY] [--to KEY] | --container ID)
 *                 [--args STR] [--deadline MS] [--mem BYTES]
 *                 [--out-max BYTES] [--hex]
 *                              run it where the data lives and print the
 *                              merged result, one line per record
 *                              "KEY<TAB>TYPE<TAB>VALUE", then a line of
 *                              figures on stderr
 *
 * The options of these commands arrive as typed (c_isc[], strata.c) and
 * are checked here, before the store is opened: a usage error never
 * touches the store.  Only the public API is used, so every command runs
 * unchanged on an embedded store and through a cluster client (--cluster,
 * --server).
 *
 * Keys print as text when every byte is printable ASCII, else as 0x and
 * hex digits (--hex: always hex digits).  A container call's keys start
 * with the member's 16-byte id: shown as "HI:LO:" and the rest.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clovis/cli/cli.h"

/* Names listed per clovis_isc_list() call. */
#define ISC_LIST_PAGE 64u

/* ------------------------------------------------------------ helpers */

/* Name of a kind of function, as list, show and --json print it. */
static const char *kind_name(enum clovis_isc_kind k)
{
	switch (k) {
	case CLOVIS_ISC_DECL: return "decl";
	case CLOVIS_ISC_LUA: return "lua";
	case CLOVIS_ISC_NATIVE: return "native";
	}
	return "unknown";
}

/* Name of a result record type (CLOVIS_ISC_V_*). */
static const char *vtype_name(uint32_t t)
{
	switch (t) {
	case CLOVIS_ISC_V_INT: return "int";
	case CLOVIS_ISC_V_FLOAT: return "float";
	case CLOVIS_ISC_V_BYTES: return "bytes";
	case CLOVIS_ISC_V_SUM: return "sum";
	case CLOVIS_ISC_V_MIN: return "min";
	case CLOVIS_ISC_V_MAX: return "max";
	case CLOVIS_ISC_V_COUNT: return "count";
	case CLOVIS_ISC_V_HIST: return "hist";
	case CLOVIS_ISC_V_MATCH: return "match";
	case CLOVIS_ISC_V_ISUM: return "isum";
	}
	return "unknown";
}

/* Write digest d as 64 lower-case hex digits. */
static void digest_out(FILE *f, const uint8_t d[CLOVIS_ISC_DIGEST_LEN])
{
	cli_hex_out(f, d, CLOVIS_ISC_DIGEST_LEN);
}

/* True when every byte of buf is printable ASCII (and there is one). */
static bool printable(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return false;
	return true;
}

/* Write bytes as text when printable, else 0x and hex (hex: digits). */
static void bytes_show(FILE *f, const void *buf, size_t len, bool hex)
{
	if (hex) {
		cli_hex_out(f, buf, len);
	} else if (printable(buf, len)) {
		fwrite(buf, 1, len, f);
	} else {
		fputs("0x", f);
		cli_hex_out(f, buf, len);
	}
}

/*
 * Write a double so that it reads back as the same value: the shortest of
 * 15 and 17 significant digits that does; JSON has no inf or nan, so
 * there they are strings.
 */
static void num_out(FILE *f, double v, bool json)
{
	char buf[40];

	if (!isfinite(v)) {
		fprintf(f, json ? "\"%g\"" : "%g", v);
		return;
	}
	snprintf(buf, sizeof buf, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof buf, "%.17g", v);
	fputs(buf, f);
}

/* Read the whole of path (or stdin for "-") into a malloc()ed buffer of
 * at most max bytes.  0, or CLI_FAIL reported. */
static int file_read(const char *path, size_t max, void **out, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	size_t cap = 4096, n = 0;
	char *buf;

	if (f == NULL)
		return cli_sys(errno, "open '%s'", path);
	buf = malloc(cap);
	while (buf != NULL) {
		size_t got;

		if (n == cap) {
			char *nb = cap > max ? NULL : realloc(buf, cap * 2);

			if (nb == NULL)
				break;
			buf = nb;
			cap *= 2;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (buf == NULL || ferror(f) || n > max) {
		int err = buf == NULL ? ENOMEM : ferror(f) ? EIO : EFBIG;

		free(buf);
		if (f != stdin)
			fclose(f);
		if (err == EFBIG)
			return cli_sys(err, "'%s' is over %zu bytes (the largest "
				       "code a function may have)", path, max);
		return cli_sys(err, "read '%s'", path);
	}
	if (f != stdin)
		fclose(f);
	*out = buf;
	*len = n;
	return 0;
}

/* ------------------------------------------------------------ register */

/* The one of --decl, --lua, --native given: *kind and *src; a usage
 * error when none or more than one. */
static int code_opt(struct cli *c, enum clovis_isc_kind *kind,
		    const char **src)
{
	static const struct { int ci; enum clovis_isc_kind k; } o[] = {
		{ CI_DECL, CLOVIS_ISC_DECL }, { CI_LUA, CLOVIS_ISC_LUA },
		{ CI_NATIVE, CLOVIS_ISC_NATIVE },
	};
	int n = 0;

	for (size_t i = 0; i < sizeof o / sizeof o[0]; i++) {
		if (c->c_isc[o[i].ci] == NULL)
			continue;
		n++;
		*kind = o[i].k;
		*src = c->c_isc[o[i].ci];
	}
	if (n != 1)
		return cli_usage(c, "give the code with one of --decl FILE, "
				 "--lua FILE or --native PATH");
	if ((*src)[0] == '\0')
		return cli_usage(c, "--%s needs a %s", kind_name(*kind),
				 *kind == CLOVIS_ISC_NATIVE ? "path" : "file");
	return 0;
}

/* The code of the function: the file's bytes, or for a native function
 * the absolute path of its shared object (which must exist). */
static int code_load(struct cli *c, enum clovis_isc_kind kind,
		     const char *src, void **code, size_t *len)
{
	char *abs;

	if (kind != CLOVIS_ISC_NATIVE)
		return file_read(src, CLOVIS_ISC_CODE_MAX, code, len);
	abs = realpath(src, NULL);
	if (abs == NULL)
		return cli_sys(errno, "native function: shared object '%s'",
			       src);
	*code = abs;
	*len = strlen(abs);
	(void)c;
	return 0;
}

int cmd_isc_register(struct cli *c)
{
	const char *name = c->c_args[0], *src = NULL;
	enum clovis_isc_kind kind = CLOVIS_ISC_DECL;
	uint8_t dg[CLOVIS_ISC_DIGEST_LEN];
	void *code = NULL;
	size_t len = 0;
	int rc = code_opt(c, &kind, &src);

	if (rc == 0)
		rc = code_load(c, kind, src, &code, &len);
	if (rc == 0 && len == 0)
		rc = cli_usage(c, "'%s' is empty: a function needs code", src);
	if (rc == 0)
		rc = cli_store_open(c);
	if (rc == 0) {
		rc = cli_call(c, clovis_isc_register(c->c_cl, name, kind, code,
						     len, dg));
		if (rc < 0)
			rc = cli_fail(c, rc, "isc register %s", name);
	}
	free(code);
	if (rc != 0)
		return rc;
	if (c->c_json) {
		printf("{\"name\": ");
		cli_json_str(stdout, name, strlen(name));
		printf(", \"kind\": \"%s\", \"digest\": \"", kind_name(kind));
		digest_out(stdout, dg);
		printf("\"}\n");
	} else {
		digest_out(stdout, dg);
		putchar('\n');
	}
	return CLI_OK;
}

int cmd_isc_unregister(struct cli *c)
{
	const char *name = c->c_args[0];
	int rc = cli_store_open(c);

	if (rc != 0)
		return rc;
	rc = cli_call(c, clovis_isc_unregister(c->c_cl, name));
	if (rc < 0)
		return cli_fail(c, rc, "isc unregister %s", name);
	if (!c->c_quiet)
		printf("unregistered function %s\n", name);
	return CLI_OK;
}

/* ------------------------------------------------------------ list, show */

/* Print one listed function: a line, or a JSON object. */
static void fn_print(const struct cli *c, const struct clovis_isc_fn *f,
		     bool first)
{
	if (c->c_json) {
		printf("%s{\"name\": ", first ? "" : ", ");
		cli_json_str(stdout, f->if_name, strlen(f->if_name));
		printf(", \"kind\": \"%s\", \"digest\": \"",
		       kind_name(f->if_kind));
		digest_out(stdout, f->if_digest);
		printf("\"}");
		return;
	}
	printf("%s\t%s\t", f->if_name, kind_name(f->if_kind));
	digest_out(stdout, f->if_digest);
	putchar('\n');
}

int cmd_isc_list(struct cli *c)
{
	struct clovis_isc_fn fns[ISC_LIST_PAGE];
	char after[CLOVIS_ISC_NAME_MAX + 1];
	bool first = true;
	int rc = cli_store_open(c);

	if (rc != 0)
		return rc;
	if (c->c_json)
		putchar('[');
	for (;;) {
		uint32_t nr = ISC_LIST_PAGE;

		rc = cli_call(c, clovis_isc_list(c->c_cl, first ? NULL : after,
						 fns, &nr));
		if (rc < 0)
			return cli_fail(c, rc, "isc list");
		for (uint32_t i = 0; i < nr; i++) {
			fn_print(c, &fns[i], first);
			first = false;
		}
		if (nr < ISC_LIST_PAGE)
			break;
		snprintf(after, sizeof after, "%s", fns[nr - 1].if_name);
	}
	if (c->c_json)
		printf("]\n");
	return CLI_OK;
}

int cmd_isc_show(struct cli *c)
{
	const char *name = c->c_args[0];
	struct clovis_isc_fn f;
	void *code = NULL;
	size_t len = 0;
	int rc = cli_store_open(c);

	if (rc != 0)
		return rc;
	rc = cli_call(c, clovis_isc_lookup(c->c_cl, name, &f, &code, &len));
	if (rc < 0)
		return cli_fail(c, rc, "isc show %s", name);
	if (c->c_json) {
		printf("{\"name\": ");
		cli_json_str(stdout, f.if_name, strlen(f.if_name));
		printf(", \"kind\": \"%s\", \"digest\": \"",
		       kind_name(f.if_kind));
		digest_out(stdout, f.if_digest);
		printf("\", \"code_bytes\": %zu, \"code\": ", len);
		cli_json_str(stdout, code, len);
		printf("}\n");
	} else {
		printf("name     %s\nkind     %s\ndigest   ", f.if_name,
		       kind_name(f.if_kind));
		digest_out(stdout, f.if_digest);
		printf("\ncode     %zu bytes%s\n", len,
		       f.if_kind == CLOVIS_ISC_NATIVE ?
		       " (the shared object's path)" : "");
		fwrite(code, 1, len, stdout);
		if (len > 0 && ((char *)code)[len - 1] != '\n')
			putchar('\n');
	}
	free(code);
	return CLI_OK;
}

/* ------------------------------------------------------------ call */

/* A call's options decoded (malloc()ed key bounds and args). */
struct call_opts {
	struct clovis_isc_call co_call;
	const char *co_id_text;
	void *co_lo, *co_hi;
};

/* Parse a number option (decimal or 0x) of at most max into *out; a
 * usage error naming it otherwise.  Not given: *out untouched. */
static int num_opt(struct cli *c, int ci, const char *name, bool size,
		   uint64_t max, uint64_t *out)
{
	const char *s = c->c_isc[ci];
	uint64_t v;

	if (s == NULL)
		return 0;
	if (!(size ? cli_parse_size(s, &v) : cli_parse_u64(s, &v)))
		return cli_usage(c, "--%s '%s' is not a %s", name, s,
				 size ? "size (K, M, G suffixes)" : "number");
	if (v > max)
		return cli_usage(c, "--%s %s is over its limit %" PRIu64, name,
				 s, max);
	*out = v;
	return 0;
}

/* The one target of --obj, --idx, --container and the options that go
 * with it only. */
static int call_target(struct cli *c, struct call_opts *o)
{
	static const struct { int ci; enum clovis_isc_target t; } tg[] = {
		{ CI_OBJ, CLOVIS_ISC_OBJ }, { CI_IDX, CLOVIS_ISC_IDX },
		{ CI_CONTAINER, CLOVIS_ISC_CONTAINER },
	};
	struct clovis_isc_call *ca = &o->co_call;
	int n = 0;

	for (size_t i = 0; i < sizeof tg / sizeof tg[0]; i++) {
		if (c->c_isc[tg[i].ci] == NULL)
			continue;
		n++;
		ca->ic_target = tg[i].t;
		o->co_id_text = c->c_isc[tg[i].ci];
	}
	if (n != 1)
		return cli_usage(c, "give what to run on with one of --obj ID, "
				 "--idx ID or --container ID");
	if (ca->ic_target != CLOVIS_ISC_OBJ &&
	    (c->c_isc[CI_START] != NULL || c->c_isc[CI_BLOCKS] != NULL))
		return cli_usage(c, "--start and --blocks are for an object "
				 "(--obj)");
	if (ca->ic_target != CLOVIS_ISC_IDX &&
	    (c->c_isc[CI_FROM] != NULL || c->c_isc[CI_TO] != NULL))
		return cli_usage(c, "--from and --to are for an index (--idx)");
	if (cli_id(c, o->co_id_text, &ca->ic_id) != 0)
		return CLI_USAGE;
	return 0;
}

/* Decode --from or --to (text, or hex with --hex) into *key. */
static int key_opt(struct cli *c, int ci, const char *name, void **key,
		   const void **ptr, size_t *len)
{
	const char *s = c->c_isc[ci];

	if (s == NULL)
		return 0;
	*key = cli_bytes(s, c->c_hex, len);
	if (*key == NULL)
		return cli_usage(c, "--%s '%s' is not hex digits", name, s);
	if (*len > CLOVIS_KEY_MAX)
		return cli_usage(c, "--%s: a key of %zu bytes (at most %u)",
				 name, *len, CLOVIS_KEY_MAX);
	*ptr = *key;
	return 0;
}

/* Decode and check every option of a call into o. */
static int call_opts(struct cli *c, struct call_opts *o)
{
	struct clovis_isc_call *ca = &o->co_call;
	uint64_t dl = 0;
	int rc;

	ca->ic_fn = c->c_args[0];
	rc = call_target(c, o);
	if (rc == 0)
		rc = num_opt(c, CI_START, "start", false, UINT64_MAX,
			     &ca->ic_start_blk);
	if (rc == 0)
		rc = num_opt(c, CI_BLOCKS, "blocks", false, UINT64_MAX,
			     &ca->ic_nr_blks);
	if (rc == 0 && c->c_isc[CI_BLOCKS] != NULL && ca->ic_nr_blks == 0)
		rc = cli_usage(c, "--blocks 0: give at least 1 block (leave "
			       "it out for the rest of the object)");
	if (rc == 0)
		rc = num_opt(c, CI_DEADLINE, "deadline", false, UINT32_MAX,
			     &dl);
	if (rc == 0 && c->c_isc[CI_DEADLINE] != NULL && dl == 0)
		rc = cli_usage(c, "--deadline 0: give at least 1 ms (leave it "
			       "out for the default 1000)");
	ca->ic_deadline_ms = (uint32_t)dl;
	if (rc == 0)
		rc = num_opt(c, CI_MEM, "mem", true, UINT64_MAX, &ca->ic_mem);
	if (rc == 0)
		rc = num_opt(c, CI_OUT_MAX, "out-max", true, UINT64_MAX,
			     &ca->ic_out_max);
	if (rc == 0)
		rc = key_opt(c, CI_FROM, "from", &o->co_lo, &ca->ic_key_lo,
			     &ca->ic_key_lo_len);
	if (rc == 0)
		rc = key_opt(c, CI_TO, "to", &o->co_hi, &ca->ic_key_hi,
			     &ca->ic_key_hi_len);
	if (rc == 0 && c->c_isc[CI_ARGS] != NULL) {
		ca->ic_args = c->c_isc[CI_ARGS];
		ca->ic_args_len = strlen(c->c_isc[CI_ARGS]);
		if (ca->ic_args_len > CLOVIS_ISC_ARGS_MAX)
			rc = cli_usage(c, "--args: %zu bytes (at most %u)",
				       ca->ic_args_len, CLOVIS_ISC_ARGS_MAX);
	}
	return rc;
}

/* Write a record's key: a container member's id as "HI:LO:", the rest
 * as bytes_show() does; JSON: "member" (container) and "key" members. */
static void key_print(const struct cli *c, const struct clovis_isc_rec *r,
		      bool container)
{
	const uint8_t *k = r->ir_key;
	size_t kl = r->ir_klen;

	if (container && kl >= 16) {
		struct clovis_id id = {0, 0};
		char buf[CLOVIS_ID_STR_LEN];

		for (int i = 0; i < 8; i++) {
			id.ci_hi = id.ci_hi << 8 | k[i];
			id.ci_lo = id.ci_lo << 8 | k[8 + i];
		}
		clovis_id_format(&id, buf);
		printf(c->c_json ? "\"member\": \"%s\", " : "%s:", buf);
		k += 16;
		kl -= 16;
	}
	if (!c->c_json) {
		bytes_show(stdout, k, kl, c->c_hex);
		return;
	}
	printf("\"key\": ");
	cli_bytes_json(stdout, k, kl, c->c_hex);
}

/* Write a record's value: a number, a histogram "lo,hi,c0,c1,..." (JSON:
 * an object), or bytes as bytes_show() does. */
static void val_print(const struct cli *c, const struct clovis_isc_rec *r)
{
	double lo, hi;
	uint32_t nb;
	const void *counts;

	switch (r->ir_type) {
	case CLOVIS_ISC_V_INT: case CLOVIS_ISC_V_COUNT: case CLOVIS_ISC_V_ISUM:
		printf("%" PRId64, r->ir_int);
		return;
	case CLOVIS_ISC_V_FLOAT: case CLOVIS_ISC_V_SUM: case CLOVIS_ISC_V_MIN:
	case CLOVIS_ISC_V_MAX:
		num_out(stdout, r->ir_float, c->c_json);
		return;
	case CLOVIS_ISC_V_HIST:
		if (clovis_isc_hist(r, &lo, &hi, &nb, &counts) != 0)
			break;
		if (c->c_json)
			printf("{\"lo\": ");
		num_out(stdout, lo, c->c_json);
		printf(c->c_json ? ", \"hi\": " : ",");
		num_out(stdout, hi, c->c_json);
		printf(c->c_json ? ", \"counts\": [" : ",");
		for (uint32_t i = 0; i < nb; i++) {
			uint64_t n;

			memcpy(&n, (const uint8_t *)counts + 8 * i, 8);
			printf("%s%" PRIu64, i > 0 ? "," : "", n);
		}
		if (c->c_json)
			printf("]}");
		return;
	default:
		break;
	}
	if (c->c_json)
		cli_bytes_json(stdout, r->ir_val, r->ir_vlen, c->c_hex);
	else
		bytes_show(stdout, r->ir_val, r->ir_vlen, c->c_hex);
}

/* Print every record of res: lines, or a JSON array. */
static int result_print(struct cli *c, const struct clovis_isc_result *res,
			bool container)
{
	struct clovis_isc_rec r;
	size_t pos = 0;
	bool first = true;
	int rc;

	if (c->c_json)
		printf("[");
	while ((rc = clovis_isc_result_next(res, &pos, &r)) == 1) {
		if (c->c_json)
			printf("%s\n  {", first ? "" : ",");
		key_print(c, &r, container);
		if (c->c_json)
			printf(", \"type\": \"%s\", \"value\": ",
			       vtype_name(r.ir_type));
		else
			printf("\t%s\t", vtype_name(r.ir_type));
		val_print(c, &r);
		printf(c->c_json ? "}" : "\n");
		first = false;
	}
	if (c->c_json)
		printf("%s]", first ? "" : "\n");
	return rc;
}

/* The call's figures: a line on stderr (JSON: a "stats" member). */
static void stats_print(const struct cli *c, const struct clovis_isc_result *r,
			double secs)
{
	const struct clovis_isc_stats *s = &r->ir_stats;

	if (c->c_json) {
		printf(", \"stats\": {\"records\": %u, \"runs\": %" PRIu64
		       ", \"servers\": %" PRIu64 ", \"bytes_mapped\": %" PRIu64
		       ", \"bytes_result\": %" PRIu64 ", \"degraded\": %" PRIu64
		       ", \"members\": %" PRIu64 ", \"seconds\": %.3f}", r->ir_nr,
		       s->is_runs, s->is_servers, s->is_bytes_mapped,
		       s->is_bytes_result, s->is_degraded, s->is_members, secs);
		return;
	}
	if (c->c_quiet)
		return;
	fprintf(stderr, "isc call %s: %u records; %" PRIu64 " runs on %" PRIu64
		" servers, %" PRIu64 " bytes mapped, %" PRIu64 " bytes of "
		"result, %" PRIu64 " degraded units, %" PRIu64 " members, "
		"%.3f s\n", c->c_args[0], r->ir_nr, s->is_runs, s->is_servers,
		s->is_bytes_mapped, s->is_bytes_result, s->is_degraded,
		s->is_members, secs);
}

int cmd_isc_call(struct cli *c)
{
	struct call_opts o;
	struct clovis_isc_result res;
	uint64_t t0;
	double secs;
	int rc;

	memset(&o, 0, sizeof o);
	memset(&res, 0, sizeof res);
	rc = call_opts(c, &o);
	if (rc == 0)
		rc = cli_store_open(c);
	if (rc != 0)
		goto out;
	t0 = cli_now_ns();
	rc = cli_call(c, clovis_isc_invoke(c->c_cl, &o.co_call, &res));
	secs = (double)(cli_now_ns() - t0) / 1e9;
	if (rc < 0) {
		rc = cli_fail(c, rc, "isc call %s on %s", c->c_args[0],
			      o.co_id_text);
		goto out;
	}
	if (c->c_json)
		printf("{\"records\": ");
	rc = result_print(c, &res, o.co_call.ic_target ==
				   CLOVIS_ISC_CONTAINER);
	stats_print(c, &res, secs);
	if (c->c_json)
		printf("}\n");
	if (rc < 0) {
		cli_call(c, rc);
		rc = cli_fail(c, rc, "isc call %s: its result", c->c_args[0]);
	}
out:
	clovis_isc_result_free(&res);
	free(o.co_lo);
	free(o.co_hi);
	return rc;
}
