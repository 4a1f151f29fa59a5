/*
 * cli_fdmi.c — strata fdmi sub / ls / rm / tail / reset: the consumers of
 * the durable record of every change (clovis.h "FDMI", issue 31).
 *
 *   fdmi sub NAME [FILTER...]   register a consumer (the FILTER words
 *                               joined with spaces are its filter)
 *   fdmi ls                     every consumer with its lag and bounds
 *   fdmi rm NAME                remove a consumer
 *   fdmi tail NAME              print its records, one line each, and ack
 *                               each batch once it is printed
 *   fdmi reset NAME             a LAGGING consumer ACTIVE again
 *
 * Only the public API is used, so every command runs unchanged on an
 * embedded store and through a cluster client (--cluster, --server); the
 * library reports a consumer per server there, and records of every
 * server, in order per server.
 *
 * tail acks a batch only once every record of it was printed and written
 * out (stdout flushed): a record is never released before it reached the
 * output.  Delivery stays at least once: a tail that dies before its ack
 * leaves the records to the next one.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clovis/cli/cli.h"

/* Records asked for by one clovis_fdmi_next() of tail: the library's own
 * default batch, a few MiB at most, printed before the next is read. */
#define TAIL_BATCH 1024u
/* Wait of tail --follow between two empty batches: new records show
 * within a fifth of a second, and an idle tail costs five reads a
 * second. */
#define TAIL_POLL_NS 200000000L
/* Tries of fdmi ls at reading the list when consumers are added between
 * its count and its read. */
#define LS_TRIES 4

/* ------------------------------------------------------------ sub */

/*
 * Join the FILTER words (c_args[1..]) with single spaces into a
 * malloc()ed string ("" when there are none); NULL when out of memory.
 */
static char *filter_join(const struct cli *c)
{
	size_t len = 1, at = 0;
	char *s;
	int i;

	for (i = 1; i < c->c_nargs; i++)
		len += strlen(c->c_args[i]) + 1;
	s = malloc(len);
	if (s == NULL)
		return NULL;
	s[0] = '\0';
	for (i = 1; i < c->c_nargs; i++)
		at += (size_t)snprintf(s + at, len - at, "%s%s",
				       i > 1 ? " " : "", c->c_args[i]);
	return s;
}

/* strata fdmi sub NAME [FILTER...] [--max-bytes N] [--max-age S]
 * [--from-start]: register consumer NAME. */
int cmd_fdmi_sub(struct cli *c)
{
	const char *name = c->c_args[0];
	uint32_t flags = c->c_from_start ? CLOVIS_FDMI_FROM_START : 0;
	char *filter = filter_join(c);
	int rc;

	if (filter == NULL)
		return cli_sys(ENOMEM, "fdmi sub %s", name);
	rc = cli_call(c, clovis_fdmi_sub(c->c_cl, name, filter,
					 c->c_max_bytes,
					 c->c_max_age_s * 1000, flags));
	if (rc < 0) {
		free(filter);
		return cli_fail(c, rc, "fdmi sub %s", name);
	}
	if (c->c_json) {
		printf("{\"name\": ");
		cli_json_str(stdout, name, strlen(name));
		printf(", \"filter\": ");
		cli_json_str(stdout, filter, strlen(filter));
		printf(", \"max_bytes\": %" PRIu64 ", \"max_age_ms\": %" PRIu64
		       ", \"from_start\": %s}\n", c->c_max_bytes,
		       c->c_max_age_s * 1000,
		       c->c_from_start ? "true" : "false");
	} else if (!c->c_quiet) {
		printf("FDMI consumer %s registered: %s%s%s\n", name,
		       filter[0] ? "filter '" : "every record",
		       filter, filter[0] ? "'" : "");
	}
	free(filter);
	return CLI_OK;
}

/* ------------------------------------------------------------- ls */

/*
 * Read every consumer into a malloc()ed array *out of *nr entries.  The
 * list is counted first, then read into an array with some room to spare;
 * read again (up to LS_TRIES times) while consumers come faster.
 */
static int subs_fetch(struct cli *c, struct clovis_fdmi_sub **out,
		      uint32_t *nr)
{
	struct clovis_fdmi_sub *v = NULL;
	uint32_t cap = 0, n = 0;
	int rc, tries;

	rc = cli_call(c, clovis_fdmi_list(c->c_cl, NULL, 0, &n));
	for (tries = 0; rc == 0 && tries < LS_TRIES; tries++) {
		free(v);
		cap = n + 16;
		v = calloc(cap, sizeof *v);
		if (v == NULL) {
			cli_msg(c, "a list of %u consumers", cap);
			rc = -ENOMEM;
			break;
		}
		rc = cli_call(c, clovis_fdmi_list(c->c_cl, v, cap, &n));
		if (rc == 0 && n <= cap)
			break;
	}
	if (rc == 0 && n > cap) {
		cli_msg(c, "consumers keep being added: %u, then %u", cap, n);
		rc = -EAGAIN;
	}
	if (rc != 0) {
		free(v);
		return rc;
	}
	*out = v;
	*nr = n;
	return 0;
}

static const char *state_name(uint32_t st)
{
	return st == CLOVIS_FDMI_ACTIVE ? "ACTIVE" :
	       st == CLOVIS_FDMI_LAGGING ? "LAGGING" : "?";
}

/* Milliseconds as seconds: "3600s", "1.5s". */
static const char *secs_text(uint64_t ms, char *buf, size_t size)
{
	if (ms % 1000 == 0)
		snprintf(buf, size, "%" PRIu64 "s", ms / 1000);
	else
		snprintf(buf, size, "%.1fs", (double)ms / 1000);
	return buf;
}

/* One consumer as a JSON object (no line end). */
static void sub_json(const struct clovis_fdmi_sub *s)
{
	printf("{\"name\": ");
	cli_json_str(stdout, s->fs_name, strlen(s->fs_name));
	printf(", \"server\": ");
	cli_json_str(stdout, s->fs_server, strlen(s->fs_server));
	printf(", \"state\": \"%s\", \"filter\": ", state_name(s->fs_state));
	cli_json_str(stdout, s->fs_filter, strlen(s->fs_filter));
	printf(", \"acked\": %" PRIu64 ", \"lag_records\": %" PRIu64
	       ", \"lag_bytes\": %" PRIu64 ", \"lag_age_ms\": %" PRIu64
	       ", \"times_lagged\": %" PRIu64 ", \"max_bytes\": %" PRIu64
	       ", \"max_age_ms\": %" PRIu64 "}", s->fs_acked,
	       s->fs_lag_records, s->fs_lag_bytes, s->fs_lag_ms,
	       s->fs_lag_count, s->fs_max_bytes, s->fs_max_age_ms);
}

/* One consumer as a line of the table. */
static void sub_line(const struct clovis_fdmi_sub *s)
{
	char lagb[32], maxb[32], age[32], maxa[32];

	printf("%-16s %-8s %-7s %10" PRIu64 " %10" PRIu64 " %10s %9s %6"
	       PRIu64 " %10s %9s %s\n", s->fs_name, s->fs_server,
	       state_name(s->fs_state), s->fs_acked, s->fs_lag_records,
	       cli_human(s->fs_lag_bytes, lagb, sizeof lagb),
	       secs_text(s->fs_lag_ms, age, sizeof age), s->fs_lag_count,
	       cli_human(s->fs_max_bytes, maxb, sizeof maxb),
	       secs_text(s->fs_max_age_ms, maxa, sizeof maxa),
	       s->fs_filter[0] ? s->fs_filter : "-");
}

/* strata fdmi ls: every consumer, per server in cluster mode. */
int cmd_fdmi_ls(struct cli *c)
{
	struct clovis_fdmi_sub *v = NULL;
	uint32_t n = 0, i;
	int rc = subs_fetch(c, &v, &n);

	if (rc != 0)
		return cli_fail(c, rc, "fdmi ls");
	if (c->c_json) {
		printf("[");
		for (i = 0; i < n; i++) {
			printf("%s", i ? ",\n " : "");
			sub_json(&v[i]);
		}
		printf("]\n");
	} else if (n == 0) {
		if (!c->c_quiet)
			printf("(no FDMI consumers)\n");
	} else {
		printf("%-16s %-8s %-7s %10s %10s %10s %9s %6s %10s %9s %s\n",
		       "name", "server", "state", "acked", "lag", "lag bytes",
		       "lag age", "lagged", "max bytes", "max age", "filter");
		for (i = 0; i < n; i++)
			sub_line(&v[i]);
	}
	free(v);
	return CLI_OK;
}

/* ------------------------------------------------------ rm, reset */

/* strata fdmi rm NAME: remove consumer NAME. */
int cmd_fdmi_rm(struct cli *c)
{
	const char *name = c->c_args[0];
	int rc = cli_call(c, clovis_fdmi_unsub(c->c_cl, name));

	if (rc < 0)
		return cli_fail(c, rc, "fdmi rm %s", name);
	if (c->c_json) {
		printf("{\"name\": ");
		cli_json_str(stdout, name, strlen(name));
		printf(", \"removed\": true}\n");
	} else if (!c->c_quiet) {
		printf("FDMI consumer %s removed\n", name);
	}
	return CLI_OK;
}

/* strata fdmi reset NAME: a LAGGING consumer reads from the head again. */
int cmd_fdmi_reset(struct cli *c)
{
	const char *name = c->c_args[0];
	int rc = cli_call(c, clovis_fdmi_reset(c->c_cl, name));

	if (rc < 0)
		return cli_fail(c, rc, "fdmi reset %s", name);
	if (c->c_json) {
		printf("{\"name\": ");
		cli_json_str(stdout, name, strlen(name));
		printf(", \"state\": \"ACTIVE\"}\n");
	} else if (!c->c_quiet) {
		printf("FDMI consumer %s is ACTIVE again, from the newest "
		       "record on\n", name);
	}
	return CLI_OK;
}

/* ----------------------------------------------------------- tail */

/* Set by SIGINT or SIGTERM while tail runs. */
static volatile sig_atomic_t tail_stop;

static void tail_signal(int sig)
{
	(void)sig;
	tail_stop = 1;
}

/*
 * Catch SIGINT and SIGTERM into tail_stop (old keeps what was there): the
 * batch being printed is finished and acked, then tail ends.  SA_RESTART,
 * so that the library's calls are not cut short; the poll's nanosleep()
 * still returns at once.  A SIGINT the shell ignores stays ignored.
 */
static void tail_signals(struct sigaction old[2])
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = tail_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old[0]);
	if (old[0].sa_handler == SIG_IGN)
		sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &sa, &old[1]);
}

static void tail_signals_restore(const struct sigaction old[2])
{
	sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &old[1], NULL);
}

/* A commit time as UTC "2026-11-21T11:09:42.123Z". */
static const char *time_text(uint64_t ns, char *buf, size_t size)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;
	size_t n;

	if (gmtime_r(&t, &tm) == NULL ||
	    (n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm)) == 0) {
		snprintf(buf, size, "%" PRIu64 "ns", ns);
		return buf;
	}
	snprintf(buf + n, size - n, ".%03uZ",
		 (unsigned)(ns / 1000000ull % 1000));
	return buf;
}

/* A dtx id as "NODE:HLC" in hex (as dtx ls shows them). */
static const char *dtx_text(const struct clovis_dtx_id *d, char *buf,
			    size_t size)
{
	snprintf(buf, size, "%" PRIx32 ":%" PRIx64, d->di_node, d->di_hlc);
	return buf;
}

/* Whether key prints as itself: visible ASCII (no space, no control
 * byte), not empty and not starting with "0x", so that hex stays told
 * apart. */
static bool key_is_text(const uint8_t *k, uint32_t len)
{
	if (len == 0 || (len >= 2 && k[0] == '0' && k[1] == 'x'))
		return false;
	for (uint32_t i = 0; i < len; i++)
		if (k[i] < 0x21 || k[i] > 0x7e)
			return false;
	return true;
}

/* The key of r as text, or as "0x" and hex digits. */
static void key_out(const struct clovis_fdmi_rec *r)
{
	if (key_is_text(r->fr_key, r->fr_klen)) {
		fwrite(r->fr_key, 1, r->fr_klen, stdout);
	} else {
		printf("0x");
		cli_hex_out(stdout, r->fr_key, r->fr_klen);
	}
}

static bool rec_has_key(const struct clovis_fdmi_rec *r)
{
	return r->fr_op == CLOVIS_FDMI_IDX_PUT ||
	       r->fr_op == CLOVIS_FDMI_IDX_DEL;
}

static bool rec_is_layer(const struct clovis_fdmi_rec *r)
{
	return r->fr_op == CLOVIS_FDMI_LAYER_ADD ||
	       r->fr_op == CLOVIS_FDMI_LAYER_DROP ||
	       r->fr_op == CLOVIS_FDMI_LAYER_MOVE;
}

/* The extents of r as "START+BLOCKS,...", "..." after them when the
 * record left some out. */
static void ext_text(const struct clovis_fdmi_rec *r)
{
	uint64_t start, blocks;

	for (uint32_t i = 0; i < r->fr_nr_ext; i++) {
		clovis_fdmi_rec_ext(r, i, &start, &blocks);
		printf("%s%" PRIu64 "+%" PRIu64, i ? "," : "", start, blocks);
	}
	if (r->fr_flags & CLOVIS_FDMI_F_TRUNC)
		printf(",...");
}

/*
 * One record as a line: SERVER SEQ TIME OP ID, then cont=, ext= or key=,
 * layer= and tier= (layer ops), size=, and dtx= when the change was part
 * of a dtx.
 */
static void rec_line(const struct clovis_fdmi_rec *r)
{
	char id[CLOVIS_ID_STR_LEN], cont[CLOVIS_ID_STR_LEN], t[48], d[48];

	printf("%-8s %8" PRIu64 " %s %-11s %-33s cont=%s", r->fr_server,
	       r->fr_seq, time_text(r->fr_time_ns, t, sizeof t),
	       clovis_fdmi_op_name(r->fr_op), clovis_id_format(&r->fr_id, id),
	       clovis_id_format(&r->fr_container, cont));
	if (r->fr_nr_ext > 0 || (r->fr_flags & CLOVIS_FDMI_F_TRUNC)) {
		printf(" ext=");
		ext_text(r);
	}
	if (rec_has_key(r)) {
		printf(" key=");
		key_out(r);
	}
	if (rec_is_layer(r))
		printf(" layer=%" PRIu32 " tier=%" PRIu32, r->fr_layer,
		       r->fr_tier);
	printf(" size=%" PRIu64, r->fr_size);
	if (r->fr_dtx.di_hlc != 0)
		printf(" dtx=%s", dtx_text(&r->fr_dtx, d, sizeof d));
	printf("\n");
}

/* One record as a JSON line, with every field of the text line, and the
 * entity's tier and layer always. */
static void rec_json(const struct clovis_fdmi_rec *r)
{
	char id[CLOVIS_ID_STR_LEN], cont[CLOVIS_ID_STR_LEN], t[48], d[48];
	const char *op = clovis_fdmi_op_name(r->fr_op);
	uint64_t start, blocks;

	printf("{\"server\": ");
	cli_json_str(stdout, r->fr_server, strlen(r->fr_server));
	printf(", \"seq\": %" PRIu64 ", \"time_ns\": %" PRIu64 ", \"time\": "
	       "\"%s\", \"op\": \"%s\", \"id\": \"%s\", \"container\": \"%s\", "
	       "\"extents\": [", r->fr_seq, r->fr_time_ns,
	       time_text(r->fr_time_ns, t, sizeof t), op,
	       clovis_id_format(&r->fr_id, id),
	       clovis_id_format(&r->fr_container, cont));
	for (uint32_t i = 0; i < r->fr_nr_ext; i++) {
		clovis_fdmi_rec_ext(r, i, &start, &blocks);
		printf("%s[%" PRIu64 ", %" PRIu64 "]", i ? ", " : "", start,
		       blocks);
	}
	printf("], \"extents_truncated\": %s, \"key\": ",
	       (r->fr_flags & CLOVIS_FDMI_F_TRUNC) ? "true" : "false");
	if (rec_has_key(r)) {
		cli_json_str(stdout, r->fr_key, r->fr_klen);
		printf(", \"key_hex\": \"");
		cli_hex_out(stdout, r->fr_key, r->fr_klen);
		printf("\"");
	} else {
		printf("null, \"key_hex\": null");
	}
	printf(", \"size\": %" PRIu64 ", \"layer\": %" PRIu32 ", \"tier\": %"
	       PRIu32 ", \"dtx\": ", r->fr_size, r->fr_layer, r->fr_tier);
	if (r->fr_dtx.di_hlc != 0)
		printf("\"%s\"}\n", dtx_text(&r->fr_dtx, d, sizeof d));
	else
		printf("null}\n");
}

/* What one tail has done and has left to do. */
struct tail {
	const char *tl_name;
	uint64_t tl_left;      /* records still to print (UINT64_MAX: no
				  --count) */
	uint64_t tl_printed;
};

/*
 * Print the records of b, at most tl_left of them; *all is set when every
 * record of b was printed.  Returns 0 or a negative code (message kept).
 */
static int tail_print(struct cli *c, struct tail *tl,
		      const struct clovis_fdmi_batch *b, bool *all)
{
	uint32_t n = clovis_fdmi_batch_nr(b), i;
	struct clovis_fdmi_rec r;
	int rc = 0;

	for (i = 0; i < n && tl->tl_left > 0; i++) {
		rc = cli_call(c, clovis_fdmi_batch_rec(b, i, &r));
		if (rc < 0)
			break;
		if (c->c_json)
			rec_json(&r);
		else
			rec_line(&r);
		tl->tl_left--;
		tl->tl_printed++;
	}
	*all = i == n;
	return rc;
}

/* Wait TAIL_POLL_NS, less when a signal comes. */
static void tail_wait(void)
{
	struct timespec ts = { 0, TAIL_POLL_NS };

	nanosleep(&ts, NULL);
}

/*
 * Read, print and ack one batch.  *empty is set when it held no record.
 * Returns 0, or CLI_FAIL with the failure reported.  A batch printed
 * only in part (more records than --count still wanted: the library gives
 * up to the count asked for, but a cluster may give that much per server)
 * is not acked, so that no record is released unseen; its records are
 * given again to the next reader.  An empty batch is acked too: it may
 * cover records the consumer's filter skipped, which the ack releases.
 */
static int tail_batch(struct cli *c, struct tail *tl, bool *empty)
{
	uint32_t want = tl->tl_left < TAIL_BATCH ? (uint32_t)tl->tl_left :
		        TAIL_BATCH;
	struct clovis_fdmi_batch *b = NULL;
	bool all = false;
	int rc;

	rc = cli_call(c, clovis_fdmi_next(c->c_cl, tl->tl_name, want, &b));
	if (rc < 0)
		return cli_fail(c, rc, "fdmi tail %s", tl->tl_name);
	*empty = clovis_fdmi_batch_nr(b) == 0;
	rc = tail_print(c, tl, b, &all);
	if (rc < 0) {
		clovis_fdmi_batch_free(b);
		return cli_fail(c, rc, "fdmi tail %s: record", tl->tl_name);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		rc = errno != 0 ? errno : EIO;
		clovis_fdmi_batch_free(b);
		return cli_sys(rc, "fdmi tail %s: write output (not acked)",
			       tl->tl_name);
	}
	if (!c->c_no_ack && all)
		rc = cli_call(c, clovis_fdmi_ack(c->c_cl, tl->tl_name, b));
	clovis_fdmi_batch_free(b);
	if (rc < 0)
		return cli_fail(c, rc, "fdmi tail %s: ack", tl->tl_name);
	return 0;
}

/* strata fdmi tail NAME [--count N] [--follow] [--no-ack]: print the
 * records of consumer NAME and ack them. */
int cmd_fdmi_tail(struct cli *c)
{
	struct tail tl = { .tl_name = c->c_args[0],
			   .tl_left = c->c_count_set ? c->c_count : UINT64_MAX };
	struct sigaction old[2];
	bool empty = false;
	int rc = 0;

	tail_stop = 0;
	tail_signals(old);
	while (rc == 0 && tl.tl_left > 0 && !tail_stop) {
		rc = tail_batch(c, &tl, &empty);
		if (rc != 0 || !empty || tail_stop)
			continue;
		if (!c->c_follow)
			break;
		tail_wait();
	}
	tail_signals_restore(old);
	return rc;
}
