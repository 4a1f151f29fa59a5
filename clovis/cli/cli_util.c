/*
 * cli_util.c — error reporting, argument parsing, output encoding and the
 * progress bar of the strata tool.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clovis/cli/cli.h"

/* Keep clovis_errmsg() of a failed call for the report that follows. */
int cli_call(struct cli *c, int rc)
{
	if (rc < 0)
		snprintf(c->c_msg, sizeof c->c_msg, "%s", clovis_errmsg());
	return rc;
}

/* Set the message of the next report. */
void cli_msg(struct cli *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->c_msg, sizeof c->c_msg, fmt, ap);
	va_end(ap);
}

/*
 * Print "strata: WHAT: STRERROR: MESSAGE" on one line.  The message is the
 * one kept by cli_call()/cli_op_run()/cli_msg(); it is left out when empty.
 * Newlines inside the message are flattened so the report stays one line.
 */
int cli_fail(struct cli *c, int rc, const char *fmt, ...)
{
	char what[CLI_MSG_MAX];
	va_list ap;
	char *nl;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	while ((nl = strchr(c->c_msg, '\n')) != NULL)
		*nl = ' ';
	fflush(stdout);
	if (c->c_msg[0] != '\0')
		fprintf(stderr, "strata: %s: %s: %s\n", what,
			clovis_strerror(rc), c->c_msg);
	else
		fprintf(stderr, "strata: %s: %s\n", what, clovis_strerror(rc));
	c->c_msg[0] = '\0';
	return CLI_FAIL;
}

/* Print "strata: usage: MESSAGE (see 'strata CMD --help')" on one line. */
int cli_usage(struct cli *c, const char *fmt, ...)
{
	char text[CLI_MSG_MAX];
	va_list ap;
	const struct cli_cmd *cmd = c->c_cmd;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	if (cmd == NULL)
		fprintf(stderr, "strata: usage: %s (see 'strata %s%s--help')\n",
			text, c->c_group ? c->c_group : "",
			c->c_group ? " " : "");
	else
		fprintf(stderr, "strata: usage: %s (see 'strata %s%s%s --help')\n",
			text, cmd->cc_group, cmd->cc_name ? " " : "",
			cmd->cc_name ? cmd->cc_name : "");
	return CLI_USAGE;
}

/* Print "strata: WHAT: strerror(err)" on one line. */
int cli_sys(int err, const char *fmt, ...)
{
	char what[CLI_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "strata: %s: %s\n", what, strerror(err));
	return CLI_FAIL;
}

/* Keep the failure message of op. */
void cli_op_msg(struct cli *c, const struct clovis_op *op)
{
	snprintf(c->c_msg, sizeof c->c_msg, "%s", clovis_op_errmsg(op));
}

/* Launch op, wait for STABLE or FAILED, keep its message, free it. */
int cli_op_run(struct cli *c, struct clovis_op *op)
{
	int rc;

	rc = clovis_op_launch(&op, 1);
	if (rc == 0)
		rc = clovis_op_wait(op, CLOVIS_OS_STABLE | CLOVIS_OS_FAILED,
				    CLOVIS_TIME_NEVER);
	if (rc == 0)
		rc = clovis_op_rc(op);
	if (rc < 0)
		cli_op_msg(c, op);
	clovis_op_free(op);
	return rc;
}

/* Make and run one entity op on e. */
int cli_entity_run(struct cli *c, struct clovis_entity *e,
		   enum clovis_entity_opcode opcode)
{
	struct clovis_op *op = NULL;
	int rc;

	rc = cli_call(c, clovis_entity_op(e, opcode, &op));
	if (rc < 0)
		return rc;
	return cli_op_run(c, op);
}

/* Parse an id; a bad one is a usage error naming the text. */
int cli_id(struct cli *c, const char *s, struct clovis_id *id)
{
	int rc = cli_call(c, clovis_id_parse(s, id));

	if (rc == 0)
		return 0;
	cli_fail(c, rc, "bad id '%s'", s);
	return CLI_USAGE;
}

/* Set up a handle for object id and OPEN it. */
int cli_obj_open(struct cli *c, const char *text, const struct clovis_id *id,
		 struct clovis_obj *o)
{
	int rc;

	rc = cli_call(c, clovis_obj_init(o, clovis_default_realm(c->c_cl), id,
					 NULL));
	if (rc == 0)
		rc = cli_entity_run(c, &o->ob_entity, CLOVIS_EO_OPEN);
	if (rc < 0)
		return cli_fail(c, rc, "open object %s", text);
	return 0;
}

/* Set up a handle for index id and OPEN it. */
int cli_idx_open(struct cli *c, const char *text, const struct clovis_id *id,
		 struct clovis_idx *ix)
{
	int rc;

	rc = cli_call(c, clovis_idx_init(ix, clovis_default_realm(c->c_cl),
					 id));
	if (rc == 0)
		rc = cli_entity_run(c, &ix->in_entity, CLOVIS_EO_OPEN);
	if (rc < 0)
		return cli_fail(c, rc, "open index %s", text);
	return 0;
}

/* Make dir and its missing parents, like mkdir -p. */
static int mkdir_p(const char *dir)
{
	char path[4096];
	size_t i, len = strlen(dir);

	if (len == 0 || len >= sizeof path)
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	for (i = 1; i <= len; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0777) < 0 && errno != EEXIST)
			return -errno;
		path[i] = dir[i];
	}
	return 0;
}

/* Cluster mode: a client of the servers of --cluster FILE or --server. */
int cli_cluster_open(struct cli *c)
{
	struct clovis_conf conf;
	int rc;

	memset(&conf, 0, sizeof conf);
	conf.cc_mode = CLOVIS_MODE_CLUSTER;
	conf.cc_cluster_conf = c->c_cluster;
	conf.cc_server = c->c_cluster == NULL ? c->c_server : NULL;
	conf.cc_secret = conf.cc_server != NULL ? c->c_secret : NULL;
	conf.cc_log_level = c->c_verbose > 0 ? c->c_verbose : -1;
	rc = cli_call(c, clovis_init(&c->c_cl, &conf));
	if (rc < 0)
		return cli_fail(c, rc, "open cluster '%s'", c->c_cluster != NULL ?
				c->c_cluster : c->c_server);
	return 0;
}

/* Open the store in the data directory, creating both when missing. */
int cli_store_open(struct cli *c)
{
	struct clovis_conf conf;
	int rc;

	if (c->c_cluster != NULL || c->c_server != NULL)
		return cli_cluster_open(c);
	rc = mkdir_p(c->c_data_dir);
	if (rc < 0)
		return cli_sys(-rc, "create data directory '%s'",
			       c->c_data_dir);
	memset(&conf, 0, sizeof conf);
	conf.cc_mode = CLOVIS_MODE_EMBEDDED;
	conf.cc_data_dir = c->c_data_dir;
	conf.cc_flags = CLOVIS_CONF_CREATE;
	if (c->c_model)
		conf.cc_flags |= CLOVIS_CONF_DEVICE_MODEL;
	if (c->c_meta_nvram)
		conf.cc_flags |= CLOVIS_CONF_META_NVRAM;
	conf.cc_dev_size = c->c_dev_size;
	conf.cc_config = c->c_config;
	/* Native shipped functions this process may load (docs/isc.md):
	 * absolute paths separated by ':', from the environment only, so
	 * that no command line grants it by accident. */
	conf.cc_isc_native = getenv("STRATA_ISC_NATIVE");
	/* Library log lines only with -v: without it every failure is the
	 * one line cli_fail() prints (STRATA_LOG still overrides). */
	conf.cc_log_level = c->c_verbose > 0 ? c->c_verbose : -1;
	rc = cli_call(c, clovis_init(&c->c_cl, &conf));
	if (rc < 0)
		return cli_fail(c, rc, "open store '%s'", c->c_data_dir);
	return 0;
}

/* Parse a whole unsigned number, decimal or 0x-prefixed hex. */
bool cli_parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s == NULL || !isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

/* Multiply v by the binary unit named by suffix; false if unknown. */
static bool size_unit(const char *suffix, uint64_t *v)
{
	static const char *const units[] = { "K", "M", "G", "T" };
	static const char *const iec[] = { "KiB", "MiB", "GiB", "TiB" };
	unsigned i;

	if (suffix[0] == '\0' || strcmp(suffix, "B") == 0)
		return true;
	for (i = 0; i < 4; i++) {
		if (strcasecmp(suffix, units[i]) != 0 &&
		    strcasecmp(suffix, iec[i]) != 0)
			continue;
		if (*v > (UINT64_MAX >> (10 * (i + 1))))
			return false;
		*v <<= 10 * (i + 1);
		return true;
	}
	return false;
}

/* Parse a byte size such as 4096, 4K, 4KiB or 1M. */
bool cli_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	uint64_t n;
	char *end;

	if (s == NULL || !isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return false;
	n = v;
	if (!size_unit(end, &n))
		return false;
	*out = n;
	return true;
}

static const char *const tier_names[CLOVIS_TIER_NR] = {
	[CLOVIS_TIER_NVRAM] = "nvram",
	[CLOVIS_TIER_FLASH] = "flash",
	[CLOVIS_TIER_SAS] = "sas",
	[CLOVIS_TIER_SMR] = "smr",
};

/* Map a tier name to its enum value, -1 if unknown. */
int cli_parse_tier(const char *s)
{
	int t;

	for (t = 0; t < CLOVIS_TIER_NR; t++)
		if (strcmp(s, tier_names[t]) == 0)
			return t;
	return -1;
}

/* Name of tier t. */
const char *cli_tier_name(uint32_t t)
{
	return t < CLOVIS_TIER_NR ? tier_names[t] : "?";
}

static const char *const layout_names[] = {
	[CLOVIS_LAYOUT_PLAIN] = "plain",
	[CLOVIS_LAYOUT_PDCLUST] = "pdclust",
	[CLOVIS_LAYOUT_MIRROR] = "mirror",
	[CLOVIS_LAYOUT_COMPOSITE] = "composite",
};

#define NR_LAYOUT_NAMES (sizeof layout_names / sizeof layout_names[0])

/* Map a layout name to its CLOVIS_LAYOUT_* value, -1 if unknown (a
 * composite object is made with one plain layer: cli_obj.c). */
int cli_parse_layout(const char *s)
{
	size_t l;

	for (l = 0; l <= CLOVIS_LAYOUT_COMPOSITE; l++)
		if (layout_names[l] != NULL && strcmp(s, layout_names[l]) == 0)
			return (int)l;
	return -1;
}

/* Name of layout l; one this tool does not know is shown by number. */
const char *cli_layout_name(uint32_t l, char *buf, size_t size)
{
	if (l < NR_LAYOUT_NAMES && layout_names[l] != NULL)
		return layout_names[l];
	snprintf(buf, size, "layout-%u", l);
	return buf;
}

/* Value of one hex digit, -1 if ch is not one. */
static int hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Decode a command-line key or value (text, or hex with --hex). */
void *cli_bytes(const char *s, bool hex, size_t *len)
{
	size_t n = strlen(s), i;
	unsigned char *buf;

	if (hex && n % 2 != 0)
		return NULL;
	buf = malloc(n + 1);
	if (buf == NULL)
		return NULL;
	if (!hex) {
		memcpy(buf, s, n + 1);
		*len = n;
		return buf;
	}
	for (i = 0; i < n / 2; i++) {
		int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(buf);
			return NULL;
		}
		buf[i] = (unsigned char)(hi << 4 | lo);
	}
	*len = n / 2;
	return buf;
}

/*
 * Length of the well-formed UTF-8 sequence at p (at most n bytes), or 0 if
 * the bytes there are not one.  Overlong forms and surrogates are refused.
 */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned char b = p[0], lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (b < 0x80)
		return 1;
	if (b >= 0xc2 && b <= 0xdf)
		len = 2;
	else if (b >= 0xe0 && b <= 0xef)
		len = 3;
	else if (b >= 0xf0 && b <= 0xf4)
		len = 4;
	else
		return 0;
	if (b == 0xe0)
		lo = 0xa0;
	else if (b == 0xed)
		hi = 0x9f;
	else if (b == 0xf0)
		lo = 0x90;
	else if (b == 0xf4)
		hi = 0x8f;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

/*
 * Write buf as a JSON string.  Quote, backslash and control characters are
 * escaped; well-formed UTF-8 is copied; any other byte is written as
 * \u00XX so the output is always valid JSON.
 */
void cli_json_str(FILE *f, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i = 0, n;

	fputc('"', f);
	while (i < len) {
		unsigned char b = p[i];

		n = utf8_len(p + i, len - i);
		if (b == '"' || b == '\\')
			fprintf(f, "\\%c", b);
		else if (b == '\n')
			fputs("\\n", f);
		else if (b == '\t')
			fputs("\\t", f);
		else if (b == '\r')
			fputs("\\r", f);
		else if (b < 0x20 || n == 0)
			fprintf(f, "\\u%04x", b);
		else {
			fwrite(p + i, 1, n, f);
			i += n;
			continue;
		}
		i++;
	}
	fputc('"', f);
}

/* Write buf as lower-case hex. */
void cli_hex_out(FILE *f, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		fprintf(f, "%02x", p[i]);
}

/* Write buf as text with control bytes and backslashes escaped. */
void cli_text_out(FILE *f, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] == '\\')
			fputs("\\\\", f);
		else if (p[i] == '\n')
			fputs("\\n", f);
		else if (p[i] == '\t')
			fputs("\\t", f);
		else if (p[i] == '\r')
			fputs("\\r", f);
		else if (p[i] < 0x20 || p[i] == 0x7f)
			fprintf(f, "\\x%02x", p[i]);
		else
			fputc(p[i], f);
	}
}

/* Write a key or value as hex or escaped text. */
void cli_bytes_out(FILE *f, const void *buf, size_t len, bool hex)
{
	if (hex)
		cli_hex_out(f, buf, len);
	else
		cli_text_out(f, buf, len);
}

/* Write a key or value as a JSON string of hex digits or of its bytes. */
void cli_bytes_json(FILE *f, const void *buf, size_t len, bool hex)
{
	if (!hex) {
		cli_json_str(f, buf, len);
		return;
	}
	fputc('"', f);
	cli_hex_out(f, buf, len);
	fputc('"', f);
}

/* Format n bytes as "N B", "N.N KiB", "N.N MiB", ... */
const char *cli_human(uint64_t n, char *buf, size_t size)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(buf, size, "%llu B", (unsigned long long)n);
		return buf;
	}
	while (v >= 1024.0 && u < 3) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, size, "%.1f %s", v, units[u]);
	return buf;
}

/* Monotonic clock in nanoseconds. */
uint64_t cli_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Decide whether to draw a bar and remember the totals. */
void cli_progress_init(struct cli_progress *p, const struct cli *c,
		       const char *label, uint64_t total)
{
	memset(p, 0, sizeof *p);
	p->pr_on = !c->c_quiet && total > CLI_PROGRESS_MIN && isatty(2);
	p->pr_total = total;
	p->pr_label = label;
	p->pr_start_ns = cli_now_ns();
}

/* Draw the bar: label, 30 cells, percentage, then bytes done and rate,
 * or units done and elapsed time. */
static void progress_draw(const struct cli_progress *p)
{
	char done[32], total[32];
	uint64_t pct = p->pr_total ? p->pr_done * 100 / p->pr_total : 100;
	double sec = (double)(cli_now_ns() - p->pr_start_ns) / 1e9;
	double mbs = sec > 0 ? (double)p->pr_done / sec / 1048576.0 : 0;
	int cells, i;

	if (pct > 100)
		pct = 100;
	cells = (int)(pct * 30 / 100);
	fprintf(stderr, "\r%s [", p->pr_label);
	for (i = 0; i < 30; i++)
		fputc(i < cells ? '#' : '.', stderr);
	if (p->pr_units)
		fprintf(stderr, "] %3llu%% %llu / %llu units  %.1f s ",
			(unsigned long long)pct,
			(unsigned long long)p->pr_done,
			(unsigned long long)p->pr_total, sec);
	else
		fprintf(stderr, "] %3llu%% %s / %s  %.1f MiB/s ",
			(unsigned long long)pct,
			cli_human(p->pr_done, done, sizeof done),
			cli_human(p->pr_total, total, sizeof total), mbs);
	fflush(stderr);
}

/* Count n more bytes and redraw if a tenth of a second has passed. */
void cli_progress_add(struct cli_progress *p, uint64_t n)
{
	uint64_t now;

	p->pr_done += n;
	if (!p->pr_on)
		return;
	now = cli_now_ns();
	if (now - p->pr_last_ns < 100000000ull)
		return;
	p->pr_last_ns = now;
	progress_draw(p);
}

/* Start a unit-counting line: shown on a terminal unless -q. */
void cli_progress_init_units(struct cli_progress *p, const struct cli *c,
			     const char *label)
{
	memset(p, 0, sizeof *p);
	p->pr_on = !c->c_quiet && isatty(2);
	p->pr_units = true;
	p->pr_label = label;
	p->pr_start_ns = cli_now_ns();
}

/* Set the counts and redraw if a tenth of a second has passed. */
void cli_progress_set(struct cli_progress *p, uint64_t done, uint64_t total)
{
	uint64_t now;

	p->pr_done = done;
	p->pr_total = total;
	if (!p->pr_on)
		return;
	now = cli_now_ns();
	if (now - p->pr_last_ns < 100000000ull)
		return;
	p->pr_last_ns = now;
	progress_draw(p);
}

/* End the bar's line; on failure erase it so the error line stands alone. */
void cli_progress_end(struct cli_progress *p, bool ok)
{
	if (!p->pr_on)
		return;
	if (ok) {
		p->pr_done = p->pr_total;
		progress_draw(p);
		fputc('\n', stderr);
	} else {
		fputs("\r\033[K", stderr);
	}
	fflush(stderr);
	p->pr_on = false;
}
