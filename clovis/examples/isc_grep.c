/*
 * isc_grep.c — function shipping (docs/isc.md): a grep over the values of
 * an index, run by the server that holds the index's records, beside the
 * same search made here over every record read back, compared.  Nothing
 * but clovis/clovis.h.
 *
 *   isc_grep [DATA_DIR | cluster:FILE] [--records N] [--word WORD]
 *
 * Without DATA_DIR a store is made in a temporary directory and destroyed
 * at the end; cluster:FILE runs as a client of the cluster of cluster file
 * FILE (its index removed at the end).  It:
 *   1. fills an index with N records (default 20000) of a made-up
 *      instrument log: key "line:NNNNNNNN", value one log line, some of
 *      them with WORD in it (default "ERROR");
 *   2. registers and invokes, with WORD as the argument where the
 *      language takes one:
 *        isc_grep.decl   the declarative program
 *                            where value contains "WORD"
 *                            records
 *                        (every matching record, a MATCH record each);
 *        isc_grep.lua    a Lua map pulling the records with next(key, n)
 *                        and emitting those whose value
 *                        string.find(value, ARGS, 1, true) finds;
 *      and the declarative program again over a key range only
 *      (--from/--to of `strata isc call`: ic_key_lo, ic_key_hi);
 *   3. walks the index here with NEXT and keeps the records whose value
 *      holds WORD (memmem);
 *   4. checks that each shipped result has exactly the local matches
 *      (the same keys, in order; the declarative one with their values),
 *      and prints how many bytes reached this process each way.
 * It ends with "N passed, N failed" and exits non-zero if any failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <strata/clovis.h>

/* records per PUT and per NEXT */
#define BATCH 256u
#define KEY_LEN 13u            /* "line:" and 8 digits */
#define VAL_MAX 128u
/* the key range of the ranged call: records [RANGE_LO, RANGE_HI) */
#define RANGE_LO "line:00001000"
#define RANGE_HI "line:00002000"

static const char lua_prog[] =
	"-- a grep over an index's values: ARGS is the text to find\n"
	"function map()\n"
	"  local k = nil\n"
	"  while true do\n"
	"    local ks, vs = next(k, 256)\n"
	"    if ks == nil or #ks == 0 then break end\n"
	"    for i = 1, #ks do\n"
	"      if string.find(vs[i], ARGS, 1, true) then emit(ks[i], vs[i]) end\n"
	"    end\n"
	"    k = ks[#ks]\n"
	"  end\n"
	"end\n";

/* The local matches: keys and values, in key order. */
struct matches {
	uint32_t m_nr, m_cap;
	char (*m_key)[KEY_LEN + 1];
	char (*m_val)[VAL_MAX];
	size_t *m_vlen;
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

/* Log line i into val (one in about 37 says word). */
static size_t log_line(uint64_t i, const char *word, char *val)
{
	static const char *const what[] = {
		"detector temperature nominal", "beam current stable",
		"vacuum pressure low", "magnet quench protection armed",
		"trigger rate within limits", "cryostat level dropping",
	};
	uint64_t h = i * 0x9e3779b97f4a7c15ull;
	int n;

	h ^= h >> 29;
	if (h % 37 == 0)
		n = snprintf(val, VAL_MAX, "t=%" PRIu64 " %s: %s on channel "
			     "%" PRIu64, i * 10, word, what[h % 6], h % 97);
	else
		n = snprintf(val, VAL_MAX, "t=%" PRIu64 " INFO: %s, channel "
			     "%" PRIu64, i * 10, what[h % 6], h % 97);
	return (size_t)n;
}

/* Make the index and put n records, BATCH per op. */
static int idx_fill(struct clovis *cl, struct clovis_idx *ix,
		    const struct clovis_id *id, uint64_t n, const char *word)
{
	static char keys[BATCH][KEY_LEN + 1], vals[BATCH][VAL_MAX];
	struct clovis_op *op = NULL;
	int rc = clovis_idx_init(ix, clovis_default_realm(cl), id);

	if (rc == 0)
		rc = clovis_entity_op(&ix->in_entity, CLOVIS_EO_CREATE, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	for (uint64_t i = 0; rc == 0 && i < n; i += BATCH) {
		void *kb[BATCH], *vb[BATCH];
		size_t kl[BATCH], vl[BATCH];
		int32_t rcs[BATCH];
		uint32_t nr = n - i < BATCH ? (uint32_t)(n - i) : BATCH;
		struct clovis_bufvec k = { nr, kb, kl }, v = { nr, vb, vl };

		for (uint32_t j = 0; j < nr; j++) {
			snprintf(keys[j], sizeof keys[j], "line:%08" PRIu64,
				 i + j);
			kb[j] = keys[j];
			kl[j] = KEY_LEN;
			vb[j] = vals[j];
			vl[j] = log_line(i + j, word, vals[j]);
		}
		rc = clovis_idx_op(ix, CLOVIS_IC_PUT, &k, &v, rcs, 0, &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		for (uint32_t j = 0; rc == 0 && j < nr; j++)
			rc = rcs[j];
	}
	return rc;
}

static int match_add(struct matches *m, const void *k, size_t kl,
		     const void *v, size_t vl)
{
	if (kl != KEY_LEN || vl > VAL_MAX)
		return -EPROTO;
	if (m->m_nr == m->m_cap) {
		uint32_t cap = m->m_cap ? m->m_cap * 2 : 256;
		void *a = realloc(m->m_key, cap * sizeof *m->m_key);
		void *b = a ? realloc(m->m_val, cap * sizeof *m->m_val) : NULL;
		void *c = b ? realloc(m->m_vlen, cap * sizeof *m->m_vlen) : NULL;

		if (a)
			m->m_key = a;
		if (b)
			m->m_val = b;
		if (c == NULL)
			return -ENOMEM;
		m->m_vlen = c;
		m->m_cap = cap;
	}
	memcpy(m->m_key[m->m_nr], k, kl);
	m->m_key[m->m_nr][kl] = '\0';
	memcpy(m->m_val[m->m_nr], v, vl);
	m->m_vlen[m->m_nr++] = vl;
	return 0;
}

/* The local grep: every record read back with NEXT, BATCH at a time;
 * those in [lo, hi) whose value holds word go to m; *bytes: read. */
static int local_grep(struct clovis_idx *ix, const char *word,
		      const char *lo, const char *hi, struct matches *m,
		      uint64_t *bytes)
{
	char start[KEY_LEN + 1] = "";
	bool first = true, done = false;
	int rc = 0;

	*bytes = 0;
	while (rc == 0 && !done) {
		void *kb[BATCH] = { first && lo == NULL ? NULL : start };
		void *vb[BATCH] = { NULL };
		size_t kl[BATCH] = { first ? 0 : KEY_LEN }, vl[BATCH] = { 0 };
		int32_t rcs[BATCH];
		struct clovis_bufvec k = { BATCH, kb, kl }, v = { BATCH, vb, vl };
		struct clovis_op *op = NULL;
		uint32_t j;

		if (first && lo != NULL) {
			snprintf(start, sizeof start, "%s", lo);
			kl[0] = strlen(lo);
		}
		rc = clovis_idx_op(ix, CLOVIS_IC_NEXT, &k, &v, rcs,
				   first ? 0 : CLOVIS_IF_EXCLUDE_START_KEY,
				   &op);
		if (rc == 0)
			rc = clovis_op_sync(op);
		for (j = 0; rc == 0 && j < BATCH && rcs[j] == 0; j++) {
			*bytes += kl[j] + vl[j];
			if (hi != NULL && memcmp(kb[j], hi, KEY_LEN) >= 0)
				done = true;
			else if (memmem(vb[j], vl[j], word, strlen(word)))
				rc = match_add(m, kb[j], kl[j], vb[j], vl[j]);
			memcpy(start, kb[j], KEY_LEN);
		}
		done = done || j < BATCH;
		for (j = 0; j < BATCH; j++) {
			if (kb[j] != start)
				free(kb[j]);
			free(vb[j]);
		}
		first = false;
	}
	return rc;
}

/* Check that the shipped result res lists exactly the matches m: their
 * keys in order, and (with_val) their values. */
static void compare(const char *how, const struct clovis_isc_result *res,
		    const struct matches *m, bool with_val)
{
	struct clovis_isc_rec r;
	size_t pos = 0;
	uint32_t i = 0, bad = 0;
	char what[160];

	while (clovis_isc_result_next(res, &pos, &r) == 1) {
		if (i >= m->m_nr || r.ir_klen != KEY_LEN ||
		    memcmp(r.ir_key, m->m_key[i], KEY_LEN) != 0 ||
		    (with_val && (r.ir_vlen != m->m_vlen[i] ||
				  memcmp(r.ir_val, m->m_val[i],
					 r.ir_vlen) != 0)))
			bad++;
		i++;
	}
	printf("      %s: %u records (%u local matches), %" PRIu64 " runs, "
	       "%" PRIu64 " bytes mapped, %" PRIu64 " bytes of result\n", how,
	       i, m->m_nr, res->ir_stats.is_runs,
	       res->ir_stats.is_bytes_mapped, res->ir_stats.is_bytes_result);
	snprintf(what, sizeof what, "%s: exactly the local matches, in key "
		 "order%s", how, with_val ? ", with their values" : "");
	check(bad == 0 && i == m->m_nr && m->m_nr > 0, what);
}

/* Register name (kind, code) and invoke it on the index over [lo, hi). */
static int ship(struct clovis *cl, const char *name,
		enum clovis_isc_kind kind, const char *code,
		const struct clovis_id *id, const char *word, const char *lo,
		const char *hi, struct clovis_isc_result *res)
{
	struct clovis_isc_call call = {
		.ic_fn = name, .ic_target = CLOVIS_ISC_IDX, .ic_id = *id,
		.ic_key_lo = lo, .ic_key_lo_len = lo ? strlen(lo) : 0,
		.ic_key_hi = hi, .ic_key_hi_len = hi ? strlen(hi) : 0,
		.ic_args = word, .ic_args_len = strlen(word),
		.ic_deadline_ms = 30000, .ic_out_max = 16u << 20,
	};
	int rc = clovis_isc_register(cl, name, kind, code, strlen(code),
				     NULL);

	return rc != 0 ? rc : clovis_isc_invoke(cl, &call, res);
}

static void matches_free(struct matches *m)
{
	free(m->m_key);
	free(m->m_val);
	free(m->m_vlen);
	memset(m, 0, sizeof *m);
}

/* The demo on an open store. */
static void demo(struct clovis *cl, uint64_t n, const char *word)
{
	struct clovis_isc_result res = {0};
	struct matches all = {0}, part = {0};
	struct clovis_idx ix;
	struct clovis_op *op = NULL;
	struct clovis_id id;
	char name[64], decl[160];
	uint64_t bytes = 0, b2 = 0;
	double t0;
	int rc;

	snprintf(name, sizeof name, "@isc-grep-%d", (int)getpid());
	snprintf(decl, sizeof decl, "# the records whose value holds a "
		 "word\nwhere value contains \"%s\"\nrecords\n", word);
	check_rc(clovis_id_parse(name, &id), "parse the index's id");
	rc = idx_fill(cl, &ix, &id, n, word);
	check_rc(rc, "fill the index with log lines");
	if (rc != 0)
		return;
	t0 = now();
	rc = local_grep(&ix, word, NULL, NULL, &all, &bytes);
	check_rc(rc, "grep here over every record read back");
	printf("      local: %u matches of %" PRIu64 " records, %" PRIu64
	       " bytes read, %.3f s\n", all.m_nr, n, bytes, now() - t0);
	rc = local_grep(&ix, word, RANGE_LO, RANGE_HI, &part, &b2);
	check_rc(rc, "grep here over the key range [" RANGE_LO ", "
		 RANGE_HI ")");

	t0 = now();
	rc = ship(cl, "isc_grep.decl", CLOVIS_ISC_DECL, decl, &id, word,
		  NULL, NULL, &res);
	check_rc(rc, "declarative 'where value contains' shipped");
	if (rc == 0) {
		printf("      declarative: %.3f s\n", now() - t0);
		compare("declarative", &res, &all, true);
		check(res.ir_stats.is_bytes_result < bytes ||
		      res.ir_stats.is_bytes_result == 0,
		      "fewer bytes reached the client than a local grep reads");
	}
	clovis_isc_result_free(&res);
	rc = ship(cl, "isc_grep.decl", CLOVIS_ISC_DECL, decl, &id, word,
		  RANGE_LO, RANGE_HI, &res);
	check_rc(rc, "declarative grep over a key range shipped");
	if (rc == 0)
		compare("declarative, key range", &res, &part, true);
	clovis_isc_result_free(&res);
	t0 = now();
	rc = ship(cl, "isc_grep.lua", CLOVIS_ISC_LUA, lua_prog, &id, word,
		  NULL, NULL, &res);
	check_rc(rc, "Lua string.find grep shipped");
	if (rc == 0) {
		printf("      Lua: %.3f s\n", now() - t0);
		compare("Lua", &res, &all, true);
	}
	clovis_isc_result_free(&res);
	matches_free(&all);
	matches_free(&part);
	rc = clovis_entity_op(&ix.in_entity, CLOVIS_EO_DELETE, &op);
	check_rc(rc == 0 ? clovis_op_sync(op) : rc, "delete the index");
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
	conf.cc_dev_size = 64ull << 20;
	return clovis_init(cl, &conf);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/strata-isc-grep-XXXXXX";
	const char *where = NULL, *word = "ERROR";
	struct clovis *cl = NULL;
	uint64_t n = 20000;
	bool bad = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			n = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--word") == 0 && i + 1 < argc)
			word = argv[++i];
		else if (argv[i][0] != '-' && where == NULL)
			where = argv[i];
		else
			bad = true;
	}
	if (bad || n < 2000 || n > 10000000 || word[0] == '\0' ||
	    strlen(word) > 32 || strpbrk(word, "\"\\\n") != NULL) {
		fprintf(stderr, "usage: isc_grep [DATA_DIR | cluster:FILE] "
			"[--records N (2000..10000000)] [--word WORD (1..32 "
			"characters, no quote, backslash or newline)]\n");
		return 2;
	}
	rc = store_open(where, tmp, &cl);
	check_rc(rc, where == NULL ? "create a store in a temporary directory"
		 : "open the store");
	if (rc == 0) {
		demo(cl, n, word);
		clovis_fini(cl);
	}
	if (rc == 0 && where == NULL)
		check_rc(clovis_store_destroy(tmp), "destroy the store");
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
