/*
 * isc_stats.c — function shipping (docs/isc.md): the minimum, maximum,
 * mean and a histogram of an array of float64 stored in one object,
 * computed where the data lives, and the same figures computed here from
 * the whole object read back, compared.  Nothing but clovis/clovis.h.
 *
 *   isc_stats [DATA_DIR | cluster:FILE] [--mib N] [--layout plain|pdclust]
 *
 * Without DATA_DIR a store is made in a temporary directory and destroyed
 * at the end; cluster:FILE runs as a client of the cluster of cluster file
 * FILE (its objects removed at the end).  It:
 *   1. writes an object of N MiB (default 8) of float64 values, a
 *      temperature-like field, as a pdclust 4+2 object of
 *      64 KiB units (--layout plain: plain on flash);
 *   2. registers two functions under the names isc_stats.decl and
 *      isc_stats.lua:
 *        the declarative program     record 8 / field x f64 0 /
 *                                    min x / max x / mean x /
 *                                    hist x -64 64 32
 *        a Lua map over each extent  the same figures with emit(); the
 *                                    histogram one key per bucket
 *      and invokes each on the object (every server maps the units it
 *      holds; the client merges);
 *   3. reads the whole object and computes the figures here;
 *   4. checks that both shipped results equal the local ones (min, max
 *      and every histogram count exactly, the mean to 1e-9 relative: the
 *      servers add in another order), and prints the figures of each way:
 *      seconds, and bytes that reached this process.
 * Every check is counted; it ends with "N passed, N failed" and exits
 * non-zero if any failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <strata/clovis.h>

#define BLOCK_SHIFT 16u
#define BLOCK_SIZE (1u << BLOCK_SHIFT)
/* bytes per read or write op */
#define IO_BYTES (4u << 20)
/* the histogram: [LO, HI) in NB buckets of 4 (an exact binary width) */
#define H_LO (-64.0)
#define H_HI 64.0
#define H_NB 32u

static const char decl_prog[] =
	"# min, max, mean and a histogram of an array of float64\n"
	"record 8\n"
	"field x f64 0\n"
	"min x\n"
	"max x\n"
	"mean x\n"
	"hist x -64 64 32\n";

/* The Lua function: figures of every extent it is given, emitted with
 * the combiners the client merges them with (min, max, sum). */
static const char lua_prog[] =
	"-- min, max, sum, count and a histogram of an array of float64\n"
	"local LO, HI, NB = -64.0, 64.0, 32\n"
	"local W = (HI - LO) / NB\n"
	"local unpack = string.unpack\n"
	"local mn, mx, sum, n = math.huge, -math.huge, 0.0, 0\n"
	"local h = {}\n"
	"for i = 0, NB - 1 do h[i] = 0 end\n"
	"function map(ext)\n"
	"  local s = read(ext.offset, ext.length)\n"
	"  for p = 1, #s - 7, 8 do\n"
	"    local x = unpack('<d', s, p)\n"
	"    if x < mn then mn = x end\n"
	"    if x > mx then mx = x end\n"
	"    sum = sum + x\n"
	"    n = n + 1\n"
	"    local b = math.floor((x - LO) / W)\n"
	"    if b < 0 then b = 0 elseif b >= NB then b = NB - 1 end\n"
	"    h[b] = h[b] + 1\n"
	"  end\n"
	"end\n"
	"function finish()\n"
	"  if n == 0 then return end\n"
	"  emit('min', mn, 'min')\n"
	"  emit('max', mx, 'max')\n"
	"  emit('sum', sum, 'sum')\n"
	"  emit('count', n, 'sum')\n"
	"  for i = 0, NB - 1 do\n"
	"    if h[i] > 0 then emit(string.format('hist%02d', i), h[i], 'sum') end\n"
	"  end\n"
	"end\n";

/* Figures of the array, however computed. */
struct figs {
	double f_min, f_max, f_mean;
	uint64_t f_n;
	uint64_t f_hist[H_NB];
};

static int passed, failed;

static void check(int ok, const char *what)
{
	if (ok)
		passed++;
	else
		failed++;
	printf("%s - %s\n", ok ? "ok  " : "FAIL", what);
}

static void check_rc(int rc, const char *what)
{
	if (rc != 0)
		printf("      rc %d (%s): %s\n", rc, clovis_strerror(rc),
		       clovis_errmsg());
	check(rc == 0, what);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Value i of the array: a smooth field plus noise, inside (-64, 64). */
static double value(uint64_t i, uint64_t *rnd)
{
	double noise;

	*rnd = *rnd * 6364136223846793005ull + 1442695040888963407ull;
	noise = (double)(*rnd >> 11) / (double)(1ull << 53) - 0.5;
	return 20.0 * sin((double)i / 5000.0) + 15.0 * noise +
	       10.0 * cos((double)i / 777.0);
}

/* The histogram bucket of x: values below LO count in the first, values
 * from HI on in the last (as the declarative hist does, docs/isc.md). */
static uint32_t bucket(double x)
{
	double b = floor((x - H_LO) / ((H_HI - H_LO) / H_NB));

	return b < 0 ? 0 : b >= H_NB ? H_NB - 1 : (uint32_t)b;
}

/* Read or write nr blocks of buf at block start. */
static int obj_io(struct clovis_obj *o, enum clovis_obj_opcode opc,
		  uint64_t start, uint64_t nr, void *buf)
{
	struct clovis_extvec ext = { 1, &start, &nr };
	size_t len = (size_t)nr * BLOCK_SIZE;
	struct clovis_bufvec bv = { 1, &buf, &len };
	struct clovis_op *op = NULL;
	int rc = clovis_obj_op(o, opc, &ext, &bv, 0, &op);

	return rc != 0 ? rc : clovis_op_sync(op);
}

/* Make the object and fill it with mib MiB of values. */
static int obj_fill(struct clovis *cl, struct clovis_obj *o,
		    const struct clovis_id *id, bool plain, uint64_t mib)
{
	struct clovis_obj_attr a = { .oa_block_shift = BLOCK_SHIFT };
	struct clovis_op *op = NULL;
	uint64_t blocks = (mib << 20) / BLOCK_SIZE, per = IO_BYTES / BLOCK_SIZE;
	uint64_t rnd = 42, i = 0;
	double *buf = malloc(IO_BYTES);
	int rc;

	if (plain) {
		a.oa_layout = CLOVIS_LAYOUT_PLAIN;
		a.oa_tier = CLOVIS_TIER_FLASH;
	} else {
		a.oa_layout = CLOVIS_LAYOUT_PDCLUST;
		a.oa_data_units = 4;
		a.oa_parity_units = 2;
		a.oa_unit_shift = 16;
	}
	if (buf == NULL)
		return -ENOMEM;
	rc = clovis_obj_init(o, clovis_default_realm(cl), id, &a);
	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_CREATE, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	for (uint64_t b = 0; rc == 0 && b < blocks; b += per) {
		uint64_t nr = blocks - b < per ? blocks - b : per;

		for (size_t k = 0; k < nr * BLOCK_SIZE / 8; k++)
			buf[k] = value(i++, &rnd);
		rc = obj_io(o, CLOVIS_OC_WRITE, b, nr, buf);
	}
	free(buf);
	return rc;
}

/* The figures computed here, from the whole object read back; *bytes
 * gets the bytes read. */
static int local_figs(struct clovis_obj *o, uint64_t mib, struct figs *f,
		      uint64_t *bytes)
{
	uint64_t blocks = (mib << 20) / BLOCK_SIZE, per = IO_BYTES / BLOCK_SIZE;
	double *buf = malloc(IO_BYTES), sum = 0;
	int rc = buf == NULL ? -ENOMEM : 0;

	memset(f, 0, sizeof *f);
	f->f_min = INFINITY;
	f->f_max = -INFINITY;
	*bytes = 0;
	for (uint64_t b = 0; rc == 0 && b < blocks; b += per) {
		uint64_t nr = blocks - b < per ? blocks - b : per;

		rc = obj_io(o, CLOVIS_OC_READ, b, nr, buf);
		for (size_t k = 0; rc == 0 && k < nr * BLOCK_SIZE / 8; k++) {
			double x = buf[k];

			f->f_min = x < f->f_min ? x : f->f_min;
			f->f_max = x > f->f_max ? x : f->f_max;
			sum += x;
			f->f_n++;
			f->f_hist[bucket(x)]++;
		}
		*bytes += nr * BLOCK_SIZE;
	}
	f->f_mean = f->f_n > 0 ? sum / (double)f->f_n : 0;
	free(buf);
	return rc;
}

/* The figures of the declarative result: MIN, MAX, FLOAT (the mean) and
 * HIST records, whatever their keys. */
static int decl_figs(const struct clovis_isc_result *res, struct figs *f)
{
	struct clovis_isc_rec r;
	size_t pos = 0;
	int rc, seen = 0;

	memset(f, 0, sizeof *f);
	while ((rc = clovis_isc_result_next(res, &pos, &r)) == 1) {
		double lo, hi;
		uint32_t nb;
		const void *c;

		if (r.ir_type == CLOVIS_ISC_V_MIN)
			f->f_min = r.ir_float, seen |= 1;
		else if (r.ir_type == CLOVIS_ISC_V_MAX)
			f->f_max = r.ir_float, seen |= 2;
		else if (r.ir_type == CLOVIS_ISC_V_FLOAT)
			f->f_mean = r.ir_float, seen |= 4;
		else if (r.ir_type == CLOVIS_ISC_V_HIST &&
			 clovis_isc_hist(&r, &lo, &hi, &nb, &c) == 0 &&
			 lo == H_LO && hi == H_HI && nb == H_NB) {
			memcpy(f->f_hist, c, sizeof f->f_hist);
			for (uint32_t i = 0; i < nb; i++)
				f->f_n += f->f_hist[i];
			seen |= 8;
		}
	}
	return rc < 0 ? rc : seen == 15 ? 0 : -EPROTO;
}

/* The figures of the Lua result: keys min, max, sum, count, histNN. */
static int lua_figs(const struct clovis_isc_result *res, struct figs *f)
{
	struct clovis_isc_rec r;
	size_t pos = 0;
	double sum = 0;
	int rc, seen = 0;

	memset(f, 0, sizeof *f);
	while ((rc = clovis_isc_result_next(res, &pos, &r)) == 1) {
		char key[16];
		unsigned b;

		if (r.ir_klen >= sizeof key)
			continue;
		memcpy(key, r.ir_key, r.ir_klen);
		key[r.ir_klen] = '\0';
		if (strcmp(key, "min") == 0)
			f->f_min = r.ir_float, seen |= 1;
		else if (strcmp(key, "max") == 0)
			f->f_max = r.ir_float, seen |= 2;
		else if (strcmp(key, "sum") == 0)
			sum = r.ir_float, seen |= 4;
		else if (strcmp(key, "count") == 0)
			f->f_n = (uint64_t)r.ir_int, seen |= 8;
		else if (sscanf(key, "hist%2u", &b) == 1 && b < H_NB)
			f->f_hist[b] = (uint64_t)r.ir_int;
	}
	f->f_mean = f->f_n > 0 ? sum / (double)f->f_n : 0;
	return rc < 0 ? rc : seen == 15 ? 0 : -EPROTO;
}

/* Check shipped figures s against the local ones l. */
static void compare(const char *how, const struct figs *s,
		    const struct figs *l, bool whole_hist)
{
	char what[160];
	uint64_t in = 0;
	bool hist_ok = true;

	for (uint32_t i = 0; i < H_NB; i++) {
		hist_ok = hist_ok && s->f_hist[i] == l->f_hist[i];
		in += l->f_hist[i];
	}
	printf("      %s: min %.6f max %.6f mean %.9f, %" PRIu64 " values\n",
	       how, s->f_min, s->f_max, s->f_mean, whole_hist ? in : s->f_n);
	snprintf(what, sizeof what, "%s: min and max equal the local ones",
		 how);
	check(s->f_min == l->f_min && s->f_max == l->f_max, what);
	snprintf(what, sizeof what, "%s: the mean within 1e-9 of the local "
		 "one", how);
	check(fabs(s->f_mean - l->f_mean) <= 1e-9 * fmax(1, fabs(l->f_mean)),
	      what);
	snprintf(what, sizeof what, "%s: every histogram count equals the "
		 "local one", how);
	check(hist_ok, what);
	if (!whole_hist) {
		snprintf(what, sizeof what, "%s: every value counted", how);
		check(s->f_n == l->f_n, what);
	}
}

/* Register name and invoke it on the object; res gets the result. */
static int ship(struct clovis *cl, const char *name,
		enum clovis_isc_kind kind, const char *code,
		const struct clovis_id *id, struct clovis_isc_result *res,
		double *secs)
{
	struct clovis_isc_call call = {
		.ic_fn = name, .ic_target = CLOVIS_ISC_OBJ, .ic_id = *id,
		.ic_deadline_ms = 60000,
	};
	double t0;
	int rc = clovis_isc_register(cl, name, kind, code, strlen(code),
				     NULL);

	if (rc != 0)
		return rc;
	t0 = now();
	rc = clovis_isc_invoke(cl, &call, res);
	*secs = now() - t0;
	return rc;
}

/* Print the figures of a shipped call. */
static void ship_say(const char *how, const struct clovis_isc_result *r,
		     double secs)
{
	const struct clovis_isc_stats *s = &r->ir_stats;

	printf("      %s: %.3f s, %" PRIu64 " runs on %" PRIu64 " servers, "
	       "%" PRIu64 " bytes mapped, %" PRIu64 " bytes of result "
	       "reached the client\n", how, secs, s->is_runs, s->is_servers,
	       s->is_bytes_mapped, s->is_bytes_result);
}

/* The demo on an open store. */
static void demo(struct clovis *cl, uint64_t mib, bool plain)
{
	struct clovis_isc_result dres = {0}, lres = {0};
	struct figs loc, d, l;
	struct clovis_obj o;
	struct clovis_op *op = NULL;
	struct clovis_id id;
	char name[64];
	uint64_t bytes = 0;
	double t0, t_loc, t_decl = 0, t_lua = 0;
	int rc;

	snprintf(name, sizeof name, "@isc-stats-%d", (int)getpid());
	check_rc(clovis_id_parse(name, &id), "parse the object's id");
	rc = obj_fill(cl, &o, &id, plain, mib);
	check_rc(rc, plain ? "write the float64 array (plain on flash)" :
		 "write the float64 array (pdclust 4+2, 64 KiB units)");
	if (rc != 0)
		return;
	t0 = now();
	rc = local_figs(&o, mib, &loc, &bytes);
	t_loc = now() - t0;
	check_rc(rc, "read it back whole and compute the figures here");
	printf("      local: min %.6f max %.6f mean %.9f, %" PRIu64 " values;"
	       " %.3f s, %" PRIu64 " bytes read\n", loc.f_min, loc.f_max,
	       loc.f_mean, loc.f_n, t_loc, bytes);

	rc = ship(cl, "isc_stats.decl", CLOVIS_ISC_DECL, decl_prog, &id,
		  &dres, &t_decl);
	check_rc(rc, "declarative min/max/mean/hist shipped to the object");
	if (rc == 0) {
		ship_say("declarative", &dres, t_decl);
		rc = decl_figs(&dres, &d);
		check_rc(rc, "declarative result: a min, max, mean and hist");
		if (rc == 0)
			compare("declarative", &d, &loc, true);
	}
	rc = ship(cl, "isc_stats.lua", CLOVIS_ISC_LUA, lua_prog, &id, &lres,
		  &t_lua);
	check_rc(rc, "Lua min/max/sum/count/hist shipped to the object");
	if (rc == 0) {
		ship_say("Lua", &lres, t_lua);
		rc = lua_figs(&lres, &l);
		check_rc(rc, "Lua result: keys min, max, sum, count");
		if (rc == 0)
			compare("Lua", &l, &loc, false);
		check(lres.ir_stats.is_bytes_result < bytes / 100 ||
		      lres.ir_stats.is_bytes_result == 0,
		      "the shipped result is under 1 % of the bytes read");
	}
	clovis_isc_result_free(&dres);
	clovis_isc_result_free(&lres);
	rc = clovis_entity_op(&o.ob_entity, CLOVIS_EO_DELETE, &op);
	check_rc(rc == 0 ? clovis_op_sync(op) : rc, "delete the object");
}

/* Open the store of where (a data directory, "cluster:FILE", or NULL: a
 * new temporary one, whose path goes to tmp). */
static int store_open(const char *where, char *tmp, struct clovis **cl)
{
	struct clovis_conf conf;

	memset(&conf, 0, sizeof conf);
	if (where != NULL && strncmp(where, "cluster:", 8) == 0) {
		conf.cc_mode = CLOVIS_MODE_CLUSTER;
		conf.cc_cluster_conf = where + 8;
		return clovis_init(cl, &conf);
	}
	if (where == NULL) {
		if (mkdtemp(tmp) == NULL)
			return -errno;
		where = tmp;
	}
	conf.cc_mode = CLOVIS_MODE_EMBEDDED;
	conf.cc_data_dir = where;
	conf.cc_flags = CLOVIS_CONF_CREATE;
	conf.cc_dev_size = 256ull << 20;
	return clovis_init(cl, &conf);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/strata-isc-stats-XXXXXX";
	const char *where = NULL;
	struct clovis *cl = NULL;
	uint64_t mib = 8;
	bool plain = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
			mib = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--layout") == 0 && i + 1 < argc)
			plain = strcmp(argv[++i], "plain") == 0;
		else if (argv[i][0] != '-' && where == NULL)
			where = argv[i];
		else
			mib = 0;
	}
	if (mib == 0 || mib > 4096) {
		fprintf(stderr, "usage: isc_stats [DATA_DIR | cluster:FILE] "
			"[--mib N (1..4096)] [--layout plain|pdclust]\n");
		return 2;
	}
	rc = store_open(where, tmp, &cl);
	check_rc(rc, where == NULL ? "create a store in a temporary directory"
		 : "open the store");
	if (rc == 0) {
		demo(cl, mib, plain);
		clovis_fini(cl);
	}
	if (rc == 0 && where == NULL)
		check_rc(clovis_store_destroy(tmp), "destroy the store");
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
