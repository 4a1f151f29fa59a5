/*
 * isc_wordcount.c — function shipping (docs/isc.md): word count over a
 * container of text objects, each object mapped whole where it lives by a
 * Lua function, beside the same count made here over every object read
 * back, compared.  Nothing but clovis/clovis.h.
 *
 *   isc_wordcount [DATA_DIR | cluster:FILE] [--objects N] [--kib K]
 *                 [--layout plain|pdclust]
 *
 * Without DATA_DIR a store is made in a temporary directory and destroyed
 * at the end; cluster:FILE runs as a client of the cluster of cluster file
 * FILE (its container and objects removed at the end).  It:
 *   1. makes a container and N text objects in it (default 6) of about K
 *      KiB each (default 256) of made-up field notes, pdclust 4+2 with
 *      64 KiB units (--layout plain: plain on flash);
 *   2. registers isc_wordcount.lua, a Lua map that declares
 *          granule = "object"
 *      so that each object is mapped whole at its home (a word is never
 *      cut at a unit boundary), reads it 64 KiB at a time (a word across
 *      two pieces carried over), counts its words (letters only, lower
 *      case) and emits each with emit(word, n, "sum");
 *   3. invokes it on the container: the result has one record per member
 *      and word, its key the member's 16-byte id then the word (clovis.h
 *      "function shipping"); the totals over the container are summed
 *      here from them;
 *   4. reads every object here and counts its words the same way;
 *   5. checks every member's count of every word against the local one,
 *      and the totals, and prints the ten most frequent words.
 * It ends with "N passed, N failed" and exits non-zero if any failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <strata/clovis.h>

#define BLOCK_SHIFT 12u
#define BLOCK_SIZE (1u << BLOCK_SHIFT)
#define OBJ_MAX 64u

/* The vocabulary of the notes; every counted word is one of these. */
static const char *const vocab[] = {
	"the", "sample", "was", "taken", "at", "dawn", "near", "river",
	"bank", "water", "temperature", "rose", "slowly", "and", "we",
	"recorded", "a", "sharp", "drop", "in", "dissolved", "oxygen",
	"after", "rain", "sediment", "core", "showed", "layers", "of",
	"clay", "silt", "sand", "with", "organic", "matter", "station",
	"north", "south", "reading", "repeated", "three", "times", "probe",
	"calibrated", "before", "each", "run", "wind", "from", "west",
};
#define NV (sizeof vocab / sizeof vocab[0])

static const char lua_prog[] =
	"-- word count: each object mapped whole at its home\n"
	"granule = \"object\"\n"
	"local PIECE = 65536\n"
	"function map(ext)\n"
	"  local counts, tail, off = {}, \"\", 0\n"
	"  while off < ext.length do\n"
	"    local n = math.min(PIECE, ext.length - off)\n"
	"    local s = tail .. read(ext.offset + off, n)\n"
	"    off = off + n\n"
	"    local cut = #s\n"
	"    if off < ext.length then\n"
	"      local p = s:find(\"%a+$\")\n"
	"      if p then cut = p - 1 end\n"
	"    end\n"
	"    for w in s:sub(1, cut):gmatch(\"%a+\") do\n"
	"      w = w:lower()\n"
	"      counts[w] = (counts[w] or 0) + 1\n"
	"    end\n"
	"    tail = s:sub(cut + 1)\n"
	"  end\n"
	"  for w, c in pairs(counts) do emit(w, c, \"sum\") end\n"
	"end\n";

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

static uint64_t rnd_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* Fill buf (len bytes, a multiple of BLOCK_SIZE) with notes: lines of
 * words from vocab (skewed to the first ones), some capitalised, commas
 * and full stops; the rest of the last block stays zero. */
static void notes(char *buf, size_t len, uint64_t seed)
{
	size_t at = 0, text = len - BLOCK_SIZE / 2;
	uint64_t s = seed;

	memset(buf, 0, len);
	while (at + 32 < text) {
		uint32_t words = 5 + (uint32_t)(rnd_next(&s) % 11);

		for (uint32_t w = 0; w < words && at + 32 < text; w++) {
			uint64_t r = rnd_next(&s);
			const char *v = vocab[(r % NV) * (r % 3 + 1) / 3 % NV];
			size_t n = strlen(v);

			memcpy(buf + at, v, n);
			if (w == 0 || r % 17 == 0)
				buf[at] = (char)toupper((unsigned char)buf[at]);
			at += n;
			buf[at++] = w + 1 == words ? '.' : r % 9 == 0 ? ',' :
				    ' ';
			if (buf[at - 1] == ',')
				buf[at++] = ' ';
		}
		buf[at++] = '\n';
	}
}

/* The vocabulary index of word w (len bytes, lower case); -1 if none. */
static int vocab_find(const char *w, size_t len)
{
	for (size_t i = 0; i < NV; i++)
		if (strlen(vocab[i]) == len && memcmp(vocab[i], w, len) == 0)
			return (int)i;
	return -1;
}

/* Count the words of buf into counts (vocab order); words not in the
 * vocabulary are counted in *other. */
static void count_words(const char *buf, size_t len, uint64_t *counts,
			uint64_t *other)
{
	size_t i = 0;

	while (i < len) {
		char w[64];
		size_t n = 0;
		int v;

		while (i < len && !isalpha((unsigned char)buf[i]))
			i++;
		while (i < len && isalpha((unsigned char)buf[i])) {
			if (n < sizeof w)
				w[n] = (char)tolower((unsigned char)buf[i]);
			n++;
			i++;
		}
		if (n == 0)
			break;
		v = n <= sizeof w ? vocab_find(w, n) : -1;
		if (v >= 0)
			counts[v]++;
		else
			(*other)++;
	}
}

/* Make object id in realm r with blocks of text from seed. */
static int obj_make(struct clovis_realm *r, struct clovis_obj *o,
		    const struct clovis_id *id, bool plain, char *buf,
		    uint64_t blocks)
{
	struct clovis_obj_attr a = { .oa_block_shift = BLOCK_SHIFT };
	struct clovis_op *op = NULL;
	uint64_t start = 0;
	size_t len = (size_t)blocks * BLOCK_SIZE;
	void *b = buf;
	struct clovis_extvec ext = { 1, &start, &blocks };
	struct clovis_bufvec bv = { 1, &b, &len };
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
	rc = clovis_obj_init(o, r, id, &a);
	if (rc == 0)
		rc = clovis_entity_op(&o->ob_entity, CLOVIS_EO_CREATE, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc == 0)
		rc = clovis_obj_op(o, CLOVIS_OC_WRITE, &ext, &bv, 0, &op);
	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* Read object o's blocks back into buf. */
static int obj_read(struct clovis_obj *o, char *buf, uint64_t blocks)
{
	struct clovis_op *op = NULL;
	uint64_t start = 0;
	size_t len = (size_t)blocks * BLOCK_SIZE;
	void *b = buf;
	struct clovis_extvec ext = { 1, &start, &blocks };
	struct clovis_bufvec bv = { 1, &b, &len };
	int rc = clovis_obj_op(o, CLOVIS_OC_READ, &ext, &bv, 0, &op);

	return rc == 0 ? clovis_op_sync(op) : rc;
}

/* The id of the key's first 16 bytes (big-endian hi, lo). */
static struct clovis_id key_id(const uint8_t *k)
{
	struct clovis_id id = { 0, 0 };

	for (int i = 0; i < 8; i++) {
		id.ci_hi = id.ci_hi << 8 | k[i];
		id.ci_lo = id.ci_lo << 8 | k[8 + i];
	}
	return id;
}

/* Compare the shipped result with the local counts loc[object][word];
 * totals[word] gets the container's totals summed from the result. */
static void compare(const struct clovis_isc_result *res,
		    const struct clovis_id *ids, uint32_t nobj,
		    uint64_t (*loc)[NV], uint64_t *totals)
{
	struct clovis_isc_rec r;
	size_t pos = 0;
	uint32_t recs = 0, bad = 0, want = 0;
	uint64_t tl[NV] = {0};

	memset(totals, 0, NV * sizeof *totals);
	while (clovis_isc_result_next(res, &pos, &r) == 1) {
		struct clovis_id id;
		uint32_t o;
		int v;

		recs++;
		if (r.ir_klen <= 16 || r.ir_type != CLOVIS_ISC_V_ISUM) {
			bad++;
			continue;
		}
		id = key_id(r.ir_key);
		for (o = 0; o < nobj; o++)
			if (clovis_id_cmp(&ids[o], &id) == 0)
				break;
		v = vocab_find((const char *)r.ir_key + 16, r.ir_klen - 16);
		if (o == nobj || v < 0 || (uint64_t)r.ir_int != loc[o][v])
			bad++;
		if (v >= 0)
			totals[v] += (uint64_t)r.ir_int;
	}
	for (uint32_t o = 0; o < nobj; o++)
		for (size_t v = 0; v < NV; v++) {
			want += loc[o][v] > 0;
			tl[v] += loc[o][v];
		}
	printf("      %u records (%u member-word counts here), %u wrong\n",
	       recs, want, bad);
	check(bad == 0 && recs == want,
	      "every member's count of every word equals the local one");
	check(memcmp(tl, totals, sizeof tl) == 0,
	      "the container's totals equal the local ones");
}

/* Print the ten most frequent words of totals. */
static void top_ten(const uint64_t *totals)
{
	bool used[NV] = {false};

	printf("      most frequent:");
	for (int k = 0; k < 10; k++) {
		size_t best = NV;

		for (size_t v = 0; v < NV; v++)
			if (!used[v] && (best == NV || totals[v] > totals[best]))
				best = v;
		used[best] = true;
		printf(" %s %" PRIu64, vocab[best], totals[best]);
	}
	printf("\n");
}

/* Delete the objects and the container (what exists of them). */
static void cleanup(struct clovis_container *co, struct clovis_obj *objs,
		    uint32_t made)
{
	struct clovis_op *op = NULL;
	int rc = 0;

	for (uint32_t i = 0; i < made; i++) {
		int r = clovis_entity_op(&objs[i].ob_entity, CLOVIS_EO_DELETE,
					 &op);

		r = r == 0 ? clovis_op_sync(op) : r;
		rc = rc == 0 ? r : rc;
	}
	check_rc(rc, "delete the objects");
	rc = clovis_entity_op(&co->co_entity, CLOVIS_EO_DELETE, &op);
	check_rc(rc == 0 ? clovis_op_sync(op) : rc, "delete the container");
}

/* The demo on an open store. */
static void demo(struct clovis *cl, uint32_t nobj, uint64_t kib, bool plain)
{
	static struct clovis_obj objs[OBJ_MAX];
	static struct clovis_id ids[OBJ_MAX];
	static uint64_t loc[OBJ_MAX][NV];
	struct clovis_isc_result res = {0};
	struct clovis_isc_call call = {
		.ic_fn = "isc_wordcount.lua",
		.ic_target = CLOVIS_ISC_CONTAINER, .ic_deadline_ms = 60000,
		.ic_out_max = 4u << 20,
	};
	struct clovis_container co;
	struct clovis_op *op = NULL;
	uint64_t blocks = kib * 1024 / BLOCK_SIZE, totals[NV], other = 0;
	uint64_t bytes = 0;
	char name[64], *buf = malloc((size_t)blocks * BLOCK_SIZE);
	uint32_t made = 0;
	double t0;
	int rc;

	snprintf(name, sizeof name, "@isc-wordcount-%d", (int)getpid());
	rc = buf == NULL ? -ENOMEM : clovis_id_parse(name, &call.ic_id);
	if (rc == 0)
		rc = clovis_container_init(&co, cl, &call.ic_id);
	if (rc == 0)
		rc = clovis_entity_op(&co.co_entity, CLOVIS_EO_CREATE, &op);
	check_rc(rc == 0 ? clovis_op_sync(op) : rc, "create a container");
	for (uint32_t i = 0; rc == 0 && i < nobj; i++) {
		snprintf(name, sizeof name, "@isc-wordcount-%d-notes-%u",
			 (int)getpid(), i);
		rc = clovis_id_parse(name, &ids[i]);
		notes(buf, (size_t)blocks * BLOCK_SIZE, 1000 + i);
		if (rc == 0)
			rc = obj_make(&co.co_realm, &objs[i], &ids[i], plain,
				      buf, blocks);
		made += rc == 0;
	}
	check_rc(rc, "write the text objects into it");
	if (rc == 0)
		rc = clovis_isc_register(cl, call.ic_fn, CLOVIS_ISC_LUA,
					 lua_prog, strlen(lua_prog), NULL);
	check_rc(rc, "register the Lua word count (granule \"object\")");
	t0 = now();
	if (rc == 0)
		rc = clovis_isc_invoke(cl, &call, &res);
	check_rc(rc, "word count shipped to the container");
	if (rc == 0)
		printf("      shipped: %.3f s, %" PRIu64 " members, %" PRIu64
		       " runs on %" PRIu64 " servers, %" PRIu64 " bytes mapped, "
		       "%" PRIu64 " bytes of result\n", now() - t0,
		       res.ir_stats.is_members, res.ir_stats.is_runs,
		       res.ir_stats.is_servers, res.ir_stats.is_bytes_mapped,
		       res.ir_stats.is_bytes_result);
	t0 = now();
	for (uint32_t i = 0; rc == 0 && i < nobj; i++) {
		rc = obj_read(&objs[i], buf, blocks);
		count_words(buf, (size_t)blocks * BLOCK_SIZE, loc[i], &other);
		bytes += blocks * BLOCK_SIZE;
	}
	check_rc(rc, "read every object back and count its words here");
	if (rc == 0) {
		printf("      local: %.3f s, %" PRIu64 " bytes read\n",
		       now() - t0, bytes);
		check(other == 0, "every local word is of the vocabulary");
		check(res.ir_stats.is_members == nobj,
		      "the call ran on every member");
		compare(&res, ids, nobj, loc, totals);
		top_ten(totals);
	}
	clovis_isc_result_free(&res);
	free(buf);
	cleanup(&co, objs, made);
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
	char tmp[] = "/tmp/strata-isc-wc-XXXXXX";
	const char *where = NULL;
	struct clovis *cl = NULL;
	uint64_t nobj = 6, kib = 256;
	bool plain = false, bad = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--objects") == 0 && i + 1 < argc)
			nobj = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--kib") == 0 && i + 1 < argc)
			kib = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--layout") == 0 && i + 1 < argc)
			plain = strcmp(argv[++i], "plain") == 0;
		else if (argv[i][0] != '-' && where == NULL)
			where = argv[i];
		else
			bad = true;
	}
	if (bad || nobj == 0 || nobj > OBJ_MAX || kib < 8 || kib > 32768 ||
	    kib % 4 != 0) {
		fprintf(stderr, "usage: isc_wordcount [DATA_DIR | cluster:FILE]"
			" [--objects N (1..%u)] [--kib K (8..32768, a multiple "
			"of 4)] [--layout plain|pdclust]\n", OBJ_MAX);
		return 2;
	}
	rc = store_open(where, tmp, &cl);
	check_rc(rc, where == NULL ? "create a store in a temporary directory"
		 : "open the store");
	if (rc == 0) {
		demo(cl, (uint32_t)nobj, kib, plain);
		clovis_fini(cl);
	}
	if (rc == 0 && where == NULL)
		check_rc(clovis_store_destroy(tmp), "destroy the store");
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
