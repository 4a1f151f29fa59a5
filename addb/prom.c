/*
 * prom.c — the Prometheus text exposition (format 0.0.4) and the JSON form
 * of a metrics snapshot (addb/addb.h).  Our own small writer: no C
 * Prometheus library is maintained in Debian (../shared/research/addb.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "addb/addb.h"
#include "core/errors.h"

/* Upper bound in seconds of histogram bucket b (b < ADDB_HIST_BUCKETS - 1). */
static double prom_le(uint32_t b)
{
	return 1e-6 * (double)(1ull << b);
}

/* Write text escaped for a label value (Prometheus: \\, \", \n) or for a
 * JSON string (the same three, plus control characters). */
static void prom_esc(FILE *f, const char *s, bool json)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\\' || c == '"')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (json && c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
}

/* HELP text escaped as the format asks: backslash and line feed. */
static void prom_help(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* Whether instance (a, b) of m is written: a family without labels
 * always; one with a device or peer label when its slot is in use; else
 * when any of its words is not zero. */
static bool prom_shown(const struct addb_snap *s, enum addb_metric m,
		       uint32_t a, uint32_t b, const char **va, const char **vb)
{
	const struct addb_family *f = addb_family(m);
	const uint64_t *w;
	bool dyn = false;

	*va = addb_dim_value(f->af_dim[0], a, s);
	*vb = addb_dim_value(f->af_dim[1], b, s);
	if (*va == NULL || *vb == NULL)
		return false;
	if (f->af_dim[0] == ADDB_DIM_NONE)
		return true;
	for (uint32_t i = 0; i < 2; i++)
		dyn |= f->af_dim[i] == ADDB_DIM_DEV ||
		       f->af_dim[i] == ADDB_DIM_PEER;
	if (dyn && f->af_type == ADDB_GAUGE)
		return true;
	w = s->as_val + addb_off(m) +
	    (uint64_t)addb_inst(m, a, b) * addb_width(m);
	for (uint32_t i = 0; i < addb_width(m); i++)
		if (w[i] != 0)
			return true;
	return false;
}

/* The label set {k="v",...} (with extra "le" when le != NULL); nothing
 * when there are no labels. */
static void prom_labels(FILE *f, const struct addb_family *fa,
			const char *va, const char *vb, const char *le)
{
	bool any = false;

	for (uint32_t i = 0; i < 2; i++) {
		if (fa->af_dim[i] == ADDB_DIM_NONE)
			continue;
		fprintf(f, "%s%s=\"", any ? "," : "{", fa->af_lname[i]);
		prom_esc(f, i == 0 ? va : vb, false);
		fputc('"', f);
		any = true;
	}
	if (le != NULL) {
		fprintf(f, "%sle=\"%s\"", any ? "," : "{", le);
		any = true;
	}
	if (any)
		fputc('}', f);
}

static void prom_value(FILE *f, const struct addb_family *fa, uint64_t v)
{
	if (fa->af_type == ADDB_GAUGE && fa->af_scale == 1)
		fprintf(f, " %" PRId64 "\n", (int64_t)v); /* up-down gauges */
	else if (fa->af_scale == 1)
		fprintf(f, " %" PRIu64 "\n", v);
	else
		fprintf(f, " %.15g\n", (double)v * fa->af_scale);
}

static void prom_hist(FILE *f, const struct addb_family *fa,
		      const uint64_t *w, const char *va, const char *vb)
{
	uint64_t cum = 0;
	char le[32];

	for (uint32_t b = 0; b < ADDB_HIST_BUCKETS; b++) {
		cum += w[b];
		if (b < ADDB_HIST_BUCKETS - 1)
			snprintf(le, sizeof le, "%.9g", prom_le(b));
		else
			snprintf(le, sizeof le, "+Inf");
		fprintf(f, "%s_bucket", fa->af_name);
		prom_labels(f, fa, va, vb, le);
		fprintf(f, " %" PRIu64 "\n", cum);
	}
	fprintf(f, "%s_sum", fa->af_name);
	prom_labels(f, fa, va, vb, NULL);
	fprintf(f, " %.15g\n", (double)w[ADDB_HIST_BUCKETS] * fa->af_scale);
	fprintf(f, "%s_count", fa->af_name);
	prom_labels(f, fa, va, vb, NULL);
	fprintf(f, " %" PRIu64 "\n", cum);
}

int addb_prom_write(const struct addb_snap *s, uint32_t min_prio, FILE *f)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};

	for (uint32_t m = 0; m < ADDB_METRIC_NR; m++) {
		const struct addb_family *fa = addb_family(m);
		uint32_t na = addb_dim_size(fa->af_dim[0]);
		uint32_t nb = addb_dim_size(fa->af_dim[1]);

		if (fa->af_prio < min_prio)
			continue;
		fprintf(f, "# HELP %s ", fa->af_name);
		prom_help(f, fa->af_help);
		fprintf(f, "\n# TYPE %s %s\n", fa->af_name,
			types[fa->af_type]);
		for (uint32_t a = 0; a < na; a++)
			for (uint32_t b = 0; b < nb; b++) {
				const char *va, *vb;
				const uint64_t *w = s->as_val + addb_off(m) +
					(uint64_t)(a * nb + b) * addb_width(m);

				if (!prom_shown(s, m, a, b, &va, &vb))
					continue;
				if (fa->af_type == ADDB_HIST) {
					prom_hist(f, fa, w, va, vb);
					continue;
				}
				fputs(fa->af_name, f);
				prom_labels(f, fa, va, vb, NULL);
				prom_value(f, fa, w[0]);
			}
	}
	fflush(f);
	return ferror(f) ? err_set(-EIO, "metrics: write failed") : 0;
}

static void json_labels(FILE *f, const struct addb_family *fa,
			const char *va, const char *vb)
{
	bool any = false;

	fputs("\"labels\":{", f);
	for (uint32_t i = 0; i < 2; i++) {
		if (fa->af_dim[i] == ADDB_DIM_NONE)
			continue;
		fprintf(f, "%s\"%s\":\"", any ? "," : "", fa->af_lname[i]);
		prom_esc(f, i == 0 ? va : vb, true);
		fputc('"', f);
		any = true;
	}
	fputc('}', f);
}

static void json_sample(FILE *f, const struct addb_family *fa,
			const uint64_t *w, const char *va, const char *vb)
{
	uint64_t cum = 0;

	fputc('{', f);
	json_labels(f, fa, va, vb);
	if (fa->af_type != ADDB_HIST) {
		if (fa->af_type == ADDB_GAUGE && fa->af_scale == 1)
			fprintf(f, ",\"value\":%" PRId64 "}", (int64_t)w[0]);
		else if (fa->af_scale == 1)
			fprintf(f, ",\"value\":%" PRIu64 "}", w[0]);
		else
			fprintf(f, ",\"value\":%.15g}",
				(double)w[0] * fa->af_scale);
		return;
	}
	fputs(",\"buckets\":[", f);
	for (uint32_t b = 0; b < ADDB_HIST_BUCKETS; b++) {
		cum += w[b];
		if (b < ADDB_HIST_BUCKETS - 1)
			fprintf(f, "%s[%.9g,%" PRIu64 "]", b ? "," : "",
				prom_le(b), cum);
		else
			fprintf(f, ",[\"+Inf\",%" PRIu64 "]", cum);
	}
	fprintf(f, "],\"sum\":%.15g,\"count\":%" PRIu64 "}",
		(double)w[ADDB_HIST_BUCKETS] * fa->af_scale, cum);
}

int addb_json_write(const struct addb_snap *s, uint32_t min_prio, FILE *f)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};
	bool first_m = true;

	fprintf(f, "{\"pid\":%" PRIu64 ",\"kind\":\"", s->as_pid);
	prom_esc(f, s->as_kind, true);
	fprintf(f, "\",\"running\":%s,\"metrics\":[",
		s->as_running ? "true" : "false");
	for (uint32_t m = 0; m < ADDB_METRIC_NR; m++) {
		const struct addb_family *fa = addb_family(m);
		uint32_t na = addb_dim_size(fa->af_dim[0]);
		uint32_t nb = addb_dim_size(fa->af_dim[1]);
		bool first_s = true;

		if (fa->af_prio < min_prio)
			continue;
		fprintf(f, "%s{\"name\":\"%s\",\"type\":\"%s\",\"priority\":"
			"%u,\"help\":\"", first_m ? "" : ",", fa->af_name,
			types[fa->af_type], fa->af_prio);
		prom_esc(f, fa->af_help, true);
		fputs("\",\"samples\":[", f);
		first_m = false;
		for (uint32_t a = 0; a < na; a++)
			for (uint32_t b = 0; b < nb; b++) {
				const char *va, *vb;

				if (!prom_shown(s, m, a, b, &va, &vb))
					continue;
				if (!first_s)
					fputc(',', f);
				first_s = false;
				json_sample(f, fa, s->as_val + addb_off(m) +
					    (uint64_t)(a * nb + b) *
					    addb_width(m), va, vb);
			}
		fputs("]}", f);
	}
	fputs("]}\n", f);
	fflush(f);
	return ferror(f) ? err_set(-EIO, "metrics: write failed") : 0;
}
