/*
 * cli_addb.c — strata addb trace | dump | top: the ADDB trace records of a
 * running Strata process and a live view of its metrics (addb/addb.h,
 * docs/monitoring.md).  No store is opened: they read and write the
 * process's shared-memory files.
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addb/addb.h"
#include "clovis/cli/cli.h"

/* A process id argument: 1 .. INT32_MAX, digits only. */
static bool parse_pid(const char *s, pid_t *pid)
{
	uint64_t v;

	if (!cli_parse_u64(s, &v) || v == 0 || v > INT32_MAX)
		return false;
	*pid = (pid_t)v;
	return true;
}

/* strata addb trace PID on [N [MIB]] | PID off */
int cmd_addb_trace(struct cli *c)
{
	uint64_t n = 1, mib = 0;
	pid_t pid;
	bool on;
	int rc;

	if (!parse_pid(c->c_args[0], &pid))
		return cli_usage(c, "'%s' is not a process id", c->c_args[0]);
	on = strcmp(c->c_args[1], "on") == 0;
	if (!on && strcmp(c->c_args[1], "off") != 0)
		return cli_usage(c, "'%s': say on or off", c->c_args[1]);
	if (!on && c->c_nargs > 2)
		return cli_usage(c, "off takes no sample or size");
	if (on && c->c_nargs > 2 &&
	    (!cli_parse_u64(c->c_args[2], &n) || n == 0 || n > UINT32_MAX))
		return cli_usage(c, "sample '%s': one op in N, N >= 1",
				 c->c_args[2]);
	if (on && c->c_nargs > 3 &&
	    (!cli_parse_u64(c->c_args[3], &mib) || mib == 0 ||
	     mib > ADDB_TRACE_MIB_MAX))
		return cli_usage(c, "size '%s': 1..%u MiB", c->c_args[3],
				 ADDB_TRACE_MIB_MAX);
	rc = cli_call(c, addb_trace_set_pid(pid, on ? (uint32_t)n : 0,
					    (uint32_t)mib));
	if (rc < 0)
		return cli_fail(c, rc, "addb trace %d", (int)pid);
	if (c->c_json)
		printf("{\"pid\": %d, \"sample\": %" PRIu64 "}\n", (int)pid,
		       on ? n : 0);
	else if (!c->c_quiet)
		printf("process %d: trace %s\n", (int)pid, on ? "on" : "off");
	return CLI_OK;
}

/* An op class's name; "dtx.commit" for the commit op of a dtx (class
 * CLOVIS_STAT_NR, which no metric counts). */
static const char *op_name(uint32_t op)
{
	const char *n = addb_dim_value(ADDB_DIM_OP, op, NULL);

	return n != NULL ? n : op == CLOVIS_STAT_NR ? "dtx.commit" : "?";
}

static void dump_line(const struct addb_trace_rec *r,
		      uint64_t t0)
{
	const struct addb_rec *x = &r->tr_rec;
	double t = (x->ar_ts_ns - t0) / 1e9;

	printf("%12.6f %3u %-11s", t, r->tr_ring, addb_rec_name(x->ar_kind));
	switch (x->ar_kind) {
	case ADDB_R_OP_LAUNCH:
	case ADDB_R_OP_EXECUTED:
		printf(" op %" PRIu64 " %s\n", x->ar_id, op_name(x->ar_a));
		break;
	case ADDB_R_OP_END:
	case ADDB_R_SRV_REPLY:
		printf(" op %" PRIu64 " %s rc %" PRId64 " %.1f us\n", x->ar_id,
		       op_name(x->ar_a), (int64_t)x->ar_b, x->ar_c / 1e3);
		break;
	case ADDB_R_OP_PLACED:
		/* device runs from a device (plain layouts) or parity
		 * groups from a group (unit layouts) */
		printf(" op %" PRIu64 " %s %" PRIu64 " runs|groups from %"
		       PRIu64 "\n", x->ar_id, op_name(x->ar_a), x->ar_b,
		       x->ar_c);
		break;
	case ADDB_R_OP_SENT:
		printf(" op %" PRIu64 " opcode %u %" PRIu64 " bytes to peer "
		       "slot %" PRIu64 "\n", x->ar_id, x->ar_a, x->ar_b,
		       x->ar_c);
		break;
	case ADDB_R_OP_STORED:
		printf(" op %" PRIu64 " %s %" PRIu64 " bytes\n", x->ar_id,
		       op_name(x->ar_a), x->ar_b);
		break;
	case ADDB_R_OP_COMMITTED:
		printf(" op %" PRIu64 " %s in a commit of %" PRIu64 " items\n",
		       x->ar_id, op_name(x->ar_a), x->ar_b);
		break;
	case ADDB_R_OP_STABLE:
		printf(" op %" PRIu64 " %s\n", x->ar_id, op_name(x->ar_a));
		break;
	case ADDB_R_SRV_RECV:
		printf(" op %" PRIu64 " %s", x->ar_id, op_name(x->ar_a));
		if (x->ar_b != 0)
			printf(" (caller's op %" PRIu64 ")", x->ar_b);
		printf("\n");
		break;
	case ADDB_R_DEV_IO:
		printf(" device slot %" PRIu64 " %s %" PRIu64 " bytes %.1f us\n",
		       x->ar_id, addb_dim_value(ADDB_DIM_IO, x->ar_a, NULL) ?:
		       "?",
		       x->ar_b, x->ar_c / 1e3);
		break;
	default:
		printf(" %u items %.1f us\n", x->ar_a, x->ar_c / 1e3);
	}
}

/* strata addb dump PID|FILE [--json] */
int cmd_addb_dump(struct cli *c)
{
	struct addb_trace *t = NULL;
	pid_t pid = 0;
	bool is_pid = parse_pid(c->c_args[0], &pid);
	int rc;

	rc = cli_call(c, addb_trace_read(pid, is_pid ? NULL : c->c_args[0], 0,
					 &t));
	if (rc < 0)
		return cli_fail(c, rc, "addb dump %s", c->c_args[0]);
	if (!c->c_quiet)
		fprintf(stderr, "# process %" PRIu64 ": %u records kept of %"
			PRIu64 " written, trace file %" PRIu64 " bytes\n",
			t->at_pid, t->at_nr, t->at_written, t->at_bytes);
	if (c->c_json)
		rc = addb_trace_json(t, 0, stdout);
	for (uint32_t i = 0; !c->c_json && i < t->at_nr; i++)
		dump_line(&t->at_recs[i], t->at_recs[0].tr_rec.ar_ts_ns);
	addb_trace_free(t);
	return fflush(stdout) == 0 ? CLI_OK : cli_sys(EIO, "addb dump: output");
}

/* strata --cluster F addb records NAME [--count N] */
int cmd_addb_records(struct cli *c)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (c->c_count_set && (c->c_count == 0 || c->c_count > 10000))
		return cli_usage(c, "--count %" PRIu64 ": 1..10000",
				 c->c_count);
	rc = cli_call(c, clovis_addb_records(c->c_cl, c->c_args[0],
					     c->c_count_set ?
					     (uint32_t)c->c_count : 0,
					     &text, &len));
	if (rc < 0)
		return cli_fail(c, rc, "addb records of server %s",
				c->c_args[0]);
	rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 :
	     -EIO;
	free(text);
	return rc == 0 ? CLI_OK : cli_sys(EIO, "addb records: output");
}

static volatile sig_atomic_t top_stop;

static void top_sig(int sig)
{
	(void)sig;
	top_stop = 1;
}

/* One view: per op class and device, the change from a to b over secs. */
static void top_show(const struct addb_snap *a, const struct addb_snap *b,
		     double secs)
{
	printf("process %" PRIu64 " (%s)%s\n%-16s %10s %12s\n", b->as_pid,
	       b->as_kind, b->as_running ? "" : " -- not running", "op",
	       "ops/s", "mean us");
	for (uint32_t op = 0; op < addb_dim_size(ADDB_DIM_OP); op++)
		for (int m = ADDB_CLIENT_OP_LAT; m <= ADDB_SRV_OP_LAT;
		     m += ADDB_SRV_OP_LAT - ADDB_CLIENT_OP_LAT) {
			const uint64_t *wa = a->as_val + addb_off(m) +
					     op * addb_width(m);
			const uint64_t *wb = b->as_val + addb_off(m) +
					     op * addb_width(m);
			uint64_t n = 0;

			for (uint32_t k = 0; k < ADDB_HIST_BUCKETS; k++)
				n += wb[k] - wa[k];
			if (n == 0)
				continue;
			printf("%-16s %10.0f %12.1f%s\n",
			       addb_dim_value(ADDB_DIM_OP, op, NULL), n / secs,
			       (wb[ADDB_HIST_BUCKETS] - wa[ADDB_HIST_BUCKETS]) /
			       1e3 / n, m == ADDB_SRV_OP_LAT ? " (served)" : "");
		}
	printf("%-40s %10s %10s\n", "device", "req/s", "MB/s");
	for (uint32_t d = 0; d < ADDB_DEV_SLOTS; d++) {
		uint64_t n = 0, by = 0;

		if (b->as_dev[d][0] == '\0')
			continue;
		for (uint32_t io = 0; io < addb_dim_size(ADDB_DIM_IO); io++) {
			uint32_t i = addb_inst(ADDB_DEV_IO, d, io);

			n += addb_snap_get(b, ADDB_DEV_IO, i) -
			     addb_snap_get(a, ADDB_DEV_IO, i);
			by += addb_snap_get(b, ADDB_DEV_BYTES, i) -
			      addb_snap_get(a, ADDB_DEV_BYTES, i);
		}
		if (n != 0)
			printf("%-40.40s %10.0f %10.2f\n", b->as_dev[d],
			       n / secs, by / secs / 1e6);
	}
	printf("\n");
	fflush(stdout);
}

/* strata addb top PID [--count N] */
int cmd_addb_top(struct cli *c)
{
	struct addb_snap *a = NULL, *b = NULL;
	pid_t pid;
	int rc;

	if (!parse_pid(c->c_args[0], &pid))
		return cli_usage(c, "'%s' is not a process id", c->c_args[0]);
	rc = cli_call(c, addb_snap_pid(pid, &a));
	if (rc < 0)
		return cli_fail(c, rc, "addb top %d", (int)pid);
	signal(SIGINT, top_sig);
	for (uint64_t i = 0; !top_stop && (!c->c_count_set || i < c->c_count);
	     i++) {
		sleep(1);
		rc = cli_call(c, addb_snap_pid(pid, &b));
		if (rc < 0)
			break;
		top_show(a, b, 1.0);
		addb_snap_free(a);
		a = b;
		b = NULL;
	}
	addb_snap_free(a);
	return rc < 0 ? cli_fail(c, rc, "addb top %d", (int)pid) : CLI_OK;
}

/* ------------------------------------------- servers' metrics, summed */

_Static_assert(ADDB_HIST_BUCKETS <= 32 && CLOVIS_STAT_NR <= 16,
	       "struct cli_ops_agg holds every op class and bucket");

/* Add the samples of family name in metrics array ms, by op label, into
 * the per-op sums (histogram: buckets, sum, count; counter: errors). */
static void agg_family(struct json_object *ms, const char *name,
		       struct cli_ops_agg *a, uint32_t srv)
{
	size_t n = json_object_array_length(ms);

	for (size_t i = 0; i < n; i++) {
		struct json_object *m = json_object_array_get_idx(ms, i), *v,
				   *ss, *lb, *op;

		if (!json_object_object_get_ex(m, "name", &v) ||
		    strcmp(json_object_get_string(v), name) != 0 ||
		    !json_object_object_get_ex(m, "samples", &ss))
			continue;
		for (size_t k = 0; k < json_object_array_length(ss); k++) {
			struct json_object *s = json_object_array_get_idx(ss, k);
			struct json_object *bk;
			uint32_t o;

			if (!json_object_object_get_ex(s, "labels", &lb) ||
			    !json_object_object_get_ex(lb, "op", &op))
				continue;
			for (o = 0; o < addb_dim_size(ADDB_DIM_OP); o++)
				if (strcmp(addb_dim_value(ADDB_DIM_OP, o, NULL),
					   json_object_get_string(op)) == 0)
					break;
			if (o == addb_dim_size(ADDB_DIM_OP))
				continue;
			if (json_object_object_get_ex(s, "value", &v)) {
				a->oa_err[o] += (uint64_t)json_object_get_int64(v);
				continue;
			}
			if (json_object_object_get_ex(s, "count", &v)) {
				a->oa_count[o] += (uint64_t)json_object_get_int64(v);
				a->oa_srv_count[srv][o] +=
					(uint64_t)json_object_get_int64(v);
			}
			if (json_object_object_get_ex(s, "sum", &v))
				a->oa_sum_s[o] += json_object_get_double(v);
			if (!json_object_object_get_ex(s, "buckets", &bk))
				continue;
			for (size_t b = 0; b < json_object_array_length(bk) &&
			     b < ADDB_HIST_BUCKETS; b++)
				a->oa_cum[o][b] += (uint64_t)json_object_get_int64(
					json_object_array_get_idx(
					json_object_array_get_idx(bk, b), 1));
		}
	}
}

/* Sum the metrics of the servers si[0..nr) (clovis_server_list()'s
 * answer: those not up are counted as not read, not asked again). */
int cli_ops_aggregate(struct cli *c, const struct clovis_server_info *si,
		      uint32_t nr, struct cli_ops_agg *a)
{
	memset(a, 0, sizeof *a);
	for (uint32_t i = 0; i < nr && i < 64; i++) {
		struct json_object *j, *ms;
		char *text = NULL;
		size_t len = 0;

		sscanf(si[i].si_name, "%63s", a->oa_srv[a->oa_nr]);
		if (!si[i].si_up) {
			a->oa_down++;
			continue;
		}
		if (clovis_addb_metrics(c->c_cl, a->oa_srv[a->oa_nr], 0,
					CLOVIS_ADDB_JSON, &text, &len) != 0) {
			a->oa_down++;
			continue;
		}
		j = json_tokener_parse(text);
		free(text);
		if (j != NULL && json_object_object_get_ex(j, "metrics", &ms)) {
			agg_family(ms, "strata_server_op_latency_seconds", a,
				   a->oa_nr);
			agg_family(ms, "strata_server_op_errors_total", a,
				   a->oa_nr);
			a->oa_nr++;
		} else {
			a->oa_down++;
		}
		json_object_put(j);
	}
	return 0;
}

/* The upper bound in us of the bucket where quantile q of op o falls; -1
 * for the +Inf bucket (printed as null in JSON, "inf" in text). */
static double agg_quantile(const struct cli_ops_agg *a, uint32_t o, double q)
{
	uint64_t want = (uint64_t)(a->oa_count[o] * q + 0.999999);

	for (uint32_t b = 0; b + 1 < ADDB_HIST_BUCKETS; b++)
		if (a->oa_cum[o][b] >= want)
			return (double)(1ull << b);
	return -1;
}

/* A quantile bound as JSON: a number, or null for +Inf. */
static const char *agg_qjson(double v, char *buf, size_t n)
{
	if (v < 0)
		return "null";
	snprintf(buf, n, "%.0f", v);
	return buf;
}

void cli_ops_print(struct cli *c, const struct cli_ops_agg *a, bool json,
		   bool open)
{
	bool first = true;

	if (json) {
		printf("{\"servers_read\": %u, \"servers_not_read\": %u, "
		       "\"served\": {", a->oa_nr, a->oa_down);
		for (uint32_t o = 0; o < addb_dim_size(ADDB_DIM_OP); o++) {
			if (a->oa_count[o] == 0)
				continue;
			char q1[32], q2[32];

			printf("%s\"%s\": {\"count\": %" PRIu64 ", \"errors\": %"
			       PRIu64 ", \"mean_us\": %.1f, \"p50_us_le\": %s, "
			       "\"p99_us_le\": %s, \"by_server\": {",
			       first ? "" : ", ",
			       addb_dim_value(ADDB_DIM_OP, o, NULL),
			       a->oa_count[o], a->oa_err[o],
			       a->oa_sum_s[o] * 1e6 / a->oa_count[o],
			       agg_qjson(agg_quantile(a, o, 0.5), q1, sizeof q1),
			       agg_qjson(agg_quantile(a, o, 0.99), q2,
					 sizeof q2));
			for (uint32_t s = 0; s < a->oa_nr; s++)
				printf("%s\"%s\": %" PRIu64, s ? ", " : "",
				       a->oa_srv[s], a->oa_srv_count[s][o]);
			printf("}}");
			first = false;
		}
		printf(open ? "}" : "}}");
		return;
	}
	printf("requests served, summed over %u server(s)%s (an index "
	       "update counts once per replica):\n", a->oa_nr,
	       a->oa_down ? " (some not read: down)" : "");
	printf("%-16s %10s %8s %10s %10s %10s\n", "op", "count", "errors",
	       "mean us", "p50 us <=", "p99 us <=");
	for (uint32_t o = 0; o < addb_dim_size(ADDB_DIM_OP); o++) {
		if (a->oa_count[o] == 0)
			continue;
		printf("%-16s %10" PRIu64 " %8" PRIu64 " %10.1f %10.0f %10.0f\n",
		       addb_dim_value(ADDB_DIM_OP, o, NULL), a->oa_count[o],
		       a->oa_err[o], a->oa_sum_s[o] * 1e6 / a->oa_count[o],
		       agg_quantile(a, o, 0.5) < 0 ? INFINITY :
		       agg_quantile(a, o, 0.5), agg_quantile(a, o, 0.99) < 0 ?
		       INFINITY : agg_quantile(a, o, 0.99));
		first = false;
	}
	if (first)
		printf("(no requests served yet)\n");
	(void)c;
}

/* --------------------------------------- every family, cluster-wide */

/*
 * strata metrics cluster: every server's metrics (SOP_METRICS, JSON) in
 * one exposition.  Counters and histograms are summed over the servers,
 * sample by sample (same family, same labels; a histogram's buckets, sum
 * and count); a gauge is the state of one process, so each server's
 * samples are kept, with the label server="NAME" added.  Families in the
 * order the first server answering gives them.
 */
struct mc_family {
	struct json_object *mf_fam;     /* name, type, priority, help */
	struct json_object *mf_samples; /* key (labels JSON) -> sample */
	bool mf_gauge;
};

struct mc_sum {
	struct mc_family *ms_v;
	uint32_t ms_nr, ms_cap;
	uint32_t ms_read, ms_down;
};

static struct mc_family *mc_family(struct mc_sum *m, struct json_object *f)
{
	struct json_object *n, *t;
	const char *name;

	if (!json_object_object_get_ex(f, "name", &n) ||
	    !json_object_object_get_ex(f, "type", &t) ||
	    !json_object_is_type(n, json_type_string) ||
	    !json_object_is_type(t, json_type_string))
		return NULL; /* not a family: left out */
	name = json_object_get_string(n);
	for (uint32_t i = 0; i < m->ms_nr; i++) {
		struct json_object *mn;

		if (json_object_object_get_ex(m->ms_v[i].mf_fam, "name", &mn) &&
		    strcmp(json_object_get_string(mn), name) == 0)
			return &m->ms_v[i];
	}
	if (m->ms_nr == m->ms_cap) {
		uint32_t cap = m->ms_cap ? m->ms_cap * 2 : 64;
		struct mc_family *v = realloc(m->ms_v, cap * sizeof *v);

		if (v == NULL)
			return NULL;
		m->ms_v = v;
		m->ms_cap = cap;
	}
	m->ms_v[m->ms_nr] = (struct mc_family){
		.mf_fam = json_object_new_object(),
		.mf_samples = json_object_new_object(),
		.mf_gauge = strcmp(json_object_get_string(t), "gauge") == 0};
	json_object_object_foreach(f, k, v) {
		if (strcmp(k, "samples") != 0)
			json_object_object_add(m->ms_v[m->ms_nr].mf_fam, k,
					       json_object_get(v));
	}
	return &m->ms_v[m->ms_nr++];
}

/* a + b: an integer (saturating) when both are, else a double. */
static struct json_object *mc_sum2(struct json_object *a,
				   struct json_object *b)
{
	if (json_object_is_type(a, json_type_int) &&
	    json_object_is_type(b, json_type_int)) {
		uint64_t x = json_object_get_uint64(a);
		uint64_t y = json_object_get_uint64(b);

		return json_object_new_uint64(x > UINT64_MAX - y ? UINT64_MAX :
					      x + y);
	}
	return json_object_new_double(json_object_get_double(a) +
				      json_object_get_double(b));
}

/* Add sample s (a counter's or a histogram's) into sum t. */
static void mc_add(struct json_object *t, struct json_object *s)
{
	struct json_object *a, *b;

	if (json_object_object_get_ex(s, "value", &a) &&
	    json_object_object_get_ex(t, "value", &b))
		json_object_object_add(t, "value", mc_sum2(a, b));
	if (json_object_object_get_ex(s, "sum", &a) &&
	    json_object_object_get_ex(t, "sum", &b))
		json_object_object_add(t, "sum", json_object_new_double(
			json_object_get_double(a) + json_object_get_double(b)));
	if (json_object_object_get_ex(s, "count", &a) &&
	    json_object_object_get_ex(t, "count", &b))
		json_object_object_add(t, "count", mc_sum2(a, b));
	if (json_object_object_get_ex(s, "buckets", &a) &&
	    json_object_object_get_ex(t, "buckets", &b))
		for (size_t i = 0; i < json_object_array_length(a) &&
		     i < json_object_array_length(b); i++) {
			struct json_object *pa = json_object_array_get_idx(a, i);
			struct json_object *pb = json_object_array_get_idx(b, i);

			if (json_object_array_length(pa) < 2 ||
			    json_object_array_length(pb) < 2)
				continue;
			json_object_array_put_idx(pb, 1, mc_sum2(
				json_object_array_get_idx(pa, 1),
				json_object_array_get_idx(pb, 1)));
		}
}

/* Fold one server's metrics array ms into m. */
static void mc_fold(struct mc_sum *m, struct json_object *ms,
		    const char *server)
{
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		struct json_object *f = json_object_array_get_idx(ms, i), *ss;
		struct mc_family *mf = mc_family(m, f);

		if (mf == NULL || !json_object_object_get_ex(f, "samples", &ss))
			continue;
		for (size_t k = 0; k < json_object_array_length(ss); k++) {
			struct json_object *s = json_object_array_get_idx(ss, k);
			struct json_object *lb, *t;
			const char *key;

			if (!json_object_object_get_ex(s, "labels", &lb) ||
			    !json_object_is_type(lb, json_type_object))
				continue;
			if (mf->mf_gauge) {
				s = json_object_get(s);
				json_object_object_get_ex(s, "labels", &lb);
				json_object_object_add(lb, "server",
					json_object_new_string(server));
			}
			key = json_object_to_json_string_ext(
				lb, JSON_C_TO_STRING_PLAIN);
			if (mf->mf_gauge) {
				json_object_object_add(mf->mf_samples, key, s);
				continue;
			}
			if (json_object_object_get_ex(mf->mf_samples, key, &t))
				mc_add(t, s);
			else
				json_object_object_add(mf->mf_samples, key,
						       json_object_get(s));
		}
	}
}

/* A label value (quote: ") or HELP text in the text format: \, the
 * quote and newline escaped; NULL as empty. */
static void mc_escaped(const char *v, bool quote)
{
	for (; v != NULL && *v; v++)
		if (*v == '\\' || (quote && *v == '"'))
			printf("\\%c", *v);
		else if (*v == '\n')
			printf("\\n");
		else
			putchar(*v);
}

/* {k="v",...[,le="LE"]} (nothing when empty) */
static void mc_labels(struct json_object *lb, const char *le)
{
	bool first = true;

	json_object_object_foreach(lb, k, v) {
		printf("%s%s=\"", first ? "{" : ",", k);
		mc_escaped(json_object_get_string(v), true);
		putchar('"');
		first = false;
	}
	if (le != NULL) {
		printf("%sle=\"%s\"", first ? "{" : ",", le);
		first = false;
	}
	if (!first)
		putchar('}');
}

static void mc_text(const struct mc_sum *m)
{
	for (uint32_t i = 0; i < m->ms_nr; i++) {
		const struct mc_family *mf = &m->ms_v[i];
		struct json_object *n = NULL, *t = NULL, *h;
		const char *name, *type;

		json_object_object_get_ex(mf->mf_fam, "name", &n);
		json_object_object_get_ex(mf->mf_fam, "type", &t);
		name = json_object_get_string(n);
		type = json_object_get_string(t);
		if (json_object_object_get_ex(mf->mf_fam, "help", &h)) {
			printf("# HELP %s ", name);
			mc_escaped(json_object_get_string(h), false);
			putchar('\n');
		}
		printf("# TYPE %s %s\n", name, type);
		json_object_object_foreach(mf->mf_samples, key, s) {
			struct json_object *lb = NULL, *v = NULL, *bk;

			(void)key;
			json_object_object_get_ex(s, "labels", &lb);
			if (json_object_object_get_ex(s, "buckets", &bk)) {
				for (size_t b = 0;
				     b < json_object_array_length(bk); b++) {
					struct json_object *p =
						json_object_array_get_idx(bk, b);
					struct json_object *le =
						json_object_array_get_idx(p, 0);
					char leb[40];

					if (json_object_is_type(le,
							json_type_string))
						snprintf(leb, sizeof leb, "%s",
							 json_object_get_string(le));
					else
						snprintf(leb, sizeof leb, "%.9g",
							 json_object_get_double(le));
					printf("%s_bucket", name);
					mc_labels(lb, leb);
					printf(" %" PRIu64 "\n", json_object_get_uint64(
						json_object_array_get_idx(p, 1)));
				}
				v = NULL;
				json_object_object_get_ex(s, "sum", &v);
				printf("%s_sum", name);
				mc_labels(lb, NULL);
				printf(" %.17g\n", json_object_get_double(v));
				v = NULL;
				json_object_object_get_ex(s, "count", &v);
				printf("%s_count", name);
				mc_labels(lb, NULL);
				printf(" %" PRIu64 "\n", json_object_get_uint64(v));
				continue;
			}
			json_object_object_get_ex(s, "value", &v);
			printf("%s", name);
			mc_labels(lb, NULL);
			if (json_object_is_type(v, json_type_int))
				printf(" %" PRIu64 "\n", json_object_get_uint64(v));
			else
				printf(" %.17g\n", json_object_get_double(v));
		}
	}
	printf("# HELP strata_cluster_servers_read Servers whose metrics "
	       "this exposition sums.\n# TYPE strata_cluster_servers_read "
	       "gauge\nstrata_cluster_servers_read %u\n"
	       "# HELP strata_cluster_servers_not_read Servers that did not "
	       "answer (left out).\n# TYPE strata_cluster_servers_not_read "
	       "gauge\nstrata_cluster_servers_not_read %u\n",
	       m->ms_read, m->ms_down);
}

static void mc_json(const struct mc_sum *m)
{
	struct json_object *o = json_object_new_object();
	struct json_object *fs = json_object_new_array();

	json_object_object_add(o, "servers_read",
			       json_object_new_int64(m->ms_read));
	json_object_object_add(o, "servers_not_read",
			       json_object_new_int64(m->ms_down));
	for (uint32_t i = 0; i < m->ms_nr; i++) {
		struct json_object *f = json_object_get(m->ms_v[i].mf_fam);
		struct json_object *ss = json_object_new_array();

		json_object_object_foreach(m->ms_v[i].mf_samples, key, s) {
			(void)key;
			json_object_array_add(ss, json_object_get(s));
		}
		json_object_object_add(f, "samples", ss);
		json_object_array_add(fs, f);
	}
	json_object_object_add(o, "metrics", fs);
	printf("%s\n", json_object_to_json_string_ext(o,
						      JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

int cmd_metrics_cluster(struct cli *c)
{
	struct clovis_server_info si[64];
	struct mc_sum m = {0};
	uint32_t nr = 64;
	int rc;

	if (c->c_pid != 0 || c->c_file != NULL || c->c_sweep)
		return cli_usage(c, "metrics cluster reads every server's "
				 "metrics: --pid, --file and --sweep are for "
				 "local regions");
	rc = cli_call(c, clovis_server_list(c->c_cl, si, &nr));
	if (rc < 0)
		return cli_fail(c, rc, "metrics cluster: the servers");
	for (uint32_t i = 0; i < nr && i < 64; i++) {
		struct json_object *j, *ms;
		char name[64], *text = NULL;
		size_t len = 0;

		sscanf(si[i].si_name, "%63s", name);
		if (!si[i].si_up ||
		    clovis_addb_metrics(c->c_cl, name,
					(uint32_t)c->c_min_prio,
					CLOVIS_ADDB_JSON, &text, &len) != 0) {
			m.ms_down++;
			continue;
		}
		j = json_tokener_parse(text);
		free(text);
		if (j != NULL && json_object_object_get_ex(j, "metrics", &ms)) {
			mc_fold(&m, ms, name);
			m.ms_read++;
		} else {
			m.ms_down++;
		}
		json_object_put(j);
	}
	if (c->c_json)
		mc_json(&m);
	else
		mc_text(&m);
	for (uint32_t i = 0; i < m.ms_nr; i++) {
		json_object_put(m.ms_v[i].mf_fam);
		json_object_put(m.ms_v[i].mf_samples);
	}
	free(m.ms_v);
	return fflush(stdout) == 0 ? CLI_OK : cli_sys(EIO, "metrics: standard "
						    "output");
}
