/*
 * hsm.c — the HSM plugin's engine (contract in hsm.h): the catalog in
 * SQLite, the ingestion of FDMI records into it, the choice of actions by
 * a policy's rules and watermarks, the moves through composite layers,
 * the action log and undo.
 *
 * The catalog (one SQLite file, WAL journal):
 *   obj(hi, lo, chi, clo, layout, size, wtime, rtime, tier, noted)
 *       one row per object known: its container, layout (4: composite,
 *       the only ones moved), size in bytes, last write and last read
 *       (ns, the records' commit times), the tier holding most of its
 *       bytes (-1 unknown; refreshed from its layers when the object is
 *       considered and after each move), noted: "not composite" said.
 *   ext(hi, lo, start, blocks, tier)   the tier of each run of blocks of a
 *       composite object the plugin has looked at: its layer map
 *       (clovis_obj_layer_map() over [0, size in blocks), each layer's
 *       tier from clovis_obj_layer_list()), holes left out, touching
 *       runs on one tier merged; replaced whenever the object is
 *       considered (obj_refresh()) and after each of its moves, removed
 *       with the object.
 *   reads(hi, lo, t, n, start, blocks)   one row per OBJ_READ record: n
 *       reads at time t, spanning blocks [start, start + blocks) (the
 *       record's one extent; NULL in rows of older catalogs: unknown);
 *       the heat of an object is the sum of n over the policy's window,
 *       its hot span the union (lowest start, highest end) of the spans
 *       in the window; rows older than the window are pruned each round.
 *   cursor(server, seq)   the last record folded in, per server: records
 *       at or below it are skipped (delivery is at least once: a crash
 *       between the catalog's commit and the FDMI ack redelivers them).
 *   action(seq, t, hi, lo, chi, clo, why, from_tier, to_tier, blocks,
 *          bytes, state, undo_of, msg, range_start, range_blocks)  the
 *       action log; blocks and bytes are what moved, range_* the blocks
 *       the move was about (NULL: the whole object).
 * A catalog of an older version is brought up to this schema when opened
 * (missing tables created, missing columns added: schema_migrate()).
 *
 * Promotion by a rule moves an object's hot span only (the whole object
 * when the span is unknown: no read in the window, or old rows); demotions,
 * archives and watermark drains move whole objects.  A range is "already
 * there" when every block of it held is on the target tier.
 *
 * The records of one FDMI batch are folded in one SQLite transaction with
 * the cursor, committed before the batch is acked.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "fdmi/hsm/hsm.h"
#include "fdmi/plugin/plugin.h"

/* Objects one round considers (a larger catalog: the rest next round). */
#define HSM_SCAN_MAX 65536u
/* Layers of one object we look at (COMP_LAYERS_MAX is 8). */
#define HSM_LAYERS_MAX 16u
/* Bytes one layer_move call moves (the pacing step; one commit each,
 * as the engine moves at most LIM_IO_CHUNK a run). */
#define HSM_MOVE_BYTES (4u << 20)
/* Records one next asks for. */
#define HSM_BATCH 1024u
/* Runs of one object's layer map held in memory at once: an object cut
 * into more is left where it is, with a message (its catalog rows and
 * range checks would cost more than its tiering is worth). */
#define HSM_RUNS_MAX (1u << 20)
/* Runs one clovis_obj_layer_map() call is given room for. */
#define HSM_MAP_BATCH 256u

static const char hsm_filter[] =
	"op=obj.create,obj.delete,obj.write,obj.alloc,obj.free,setattr,"
	"layer.add,layer.drop,layer.move,obj.read";

struct hsm {
	struct clovis *h_cl;
	const struct hsm_policy *h_pol;
	sqlite3 *h_db;
	char h_consumer[CLOVIS_FDMI_NAME_MAX + 1];
	bool h_dry_run;
	bool h_json;
	FILE *h_out;
	/* pacing of moved bytes, shared by the movers */
	pthread_mutex_t h_pace_lock;
	uint64_t h_pace_t0_ns;
	uint64_t h_pace_bytes;
};

/* One run of an object's blocks on one layer (clovis_obj_layer_map()),
 * with that layer's tier (-1: none of CLOVIS_TIER_*). */
struct hsm_run {
	uint64_t hx_start;
	uint64_t hx_blocks;
	uint32_t hx_layer;
	int32_t hx_tier;
};

/* Runs in block order (heap; runs_fini()). */
struct hsm_runs {
	struct hsm_run *rs_v;
	uint32_t rs_n;
	uint32_t rs_cap;
};

/* Which blocks of an object a move is about (obj_refresh()). */
enum hsm_span {
	HSM_SPAN_WHOLE, /* every block */
	HSM_SPAN_HOT,   /* the hot span of the reads (whole when unknown) */
	HSM_SPAN_GIVEN, /* a range given (an action's) */
};

/* One object as the catalog has it, with what a round works out. */
struct hsm_obj {
	struct clovis_id ho_id;
	struct clovis_id ho_cont;
	uint32_t ho_layout;
	int32_t ho_tier;
	uint64_t ho_size;
	uint64_t ho_wtime, ho_rtime;
	uint64_t ho_heat;
	/* the hot span [ho_hot_start, ho_hot_end) of the reads in the
	 * window; unknown (!ho_hot_known) with no read of a known span or
	 * any of an unknown one */
	uint64_t ho_hot_start, ho_hot_end;
	bool ho_hot_known;
	bool ho_noted;
	bool ho_picked;
	/* the range the object was last refreshed for (obj_refresh()):
	 * blocks [ho_r0, ho_r0 + ho_rn), every block when ho_whole */
	uint32_t ho_bshift;
	bool ho_whole;
	uint64_t ho_r0, ho_rn;
	uint64_t ho_tier_bytes; /* bytes of the range on the tier asked */
	uint64_t ho_all_bytes;  /* bytes of the range on every tier */
};

/* One move a round runs. */
struct hsm_move {
	struct hsm_obj *hm_obj;
	uint32_t hm_to;
	char hm_why[64];
	uint64_t hm_undo_of;
	/* the blocks to move: every one (hm_whole), else [hm_r0, + hm_rn) */
	bool hm_whole;
	uint64_t hm_r0, hm_rn;
	/* out */
	int hm_rc;
	int32_t hm_from;
	uint64_t hm_blocks;
	uint64_t hm_bytes;
	bool hm_partial;
	char hm_msg[256];
	/* the object's runs by tier after the move (hm_ext_ok: mapped),
	 * for the catalog, and the tier holding most of its blocks */
	struct hsm_runs hm_ext;
	bool hm_ext_ok;
	int32_t hm_major;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int db_err(struct hsm *h, int rc, const char *what)
{
	return err_set(rc == SQLITE_FULL ? -ENOSPC : -EIO,
		       "HSM catalog: %s: %s", what, sqlite3_errmsg(h->h_db));
}

static int db_exec(struct hsm *h, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(h->h_db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		rc = err_set(-EIO, "HSM catalog: %s: %s", sql,
			     msg != NULL ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return rc;
	}
	return 0;
}

static int db_prep(struct hsm *h, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(h->h_db, sql, -1, st, NULL);

	return rc == SQLITE_OK ? 0 : db_err(h, rc, sql);
}

static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"PRAGMA synchronous=FULL;"
	"CREATE TABLE IF NOT EXISTS obj(hi INTEGER NOT NULL, lo INTEGER NOT "
	"NULL, chi INTEGER, clo INTEGER, layout INTEGER, size INTEGER, wtime "
	"INTEGER, rtime INTEGER, tier INTEGER DEFAULT -1, noted INTEGER "
	"DEFAULT 0, PRIMARY KEY(hi, lo));"
	"CREATE TABLE IF NOT EXISTS reads(hi INTEGER, lo INTEGER, t INTEGER, "
	"n INTEGER, start INTEGER, blocks INTEGER);"
	"CREATE INDEX IF NOT EXISTS reads_obj ON reads(hi, lo, t);"
	"CREATE TABLE IF NOT EXISTS ext(hi INTEGER NOT NULL, lo INTEGER NOT "
	"NULL, start INTEGER NOT NULL, blocks INTEGER, tier INTEGER, PRIMARY "
	"KEY(hi, lo, start));"
	"CREATE TABLE IF NOT EXISTS cursor(server TEXT PRIMARY KEY, seq "
	"INTEGER);"
	"CREATE TABLE IF NOT EXISTS action(seq INTEGER PRIMARY KEY "
	"AUTOINCREMENT, t INTEGER, hi INTEGER, lo INTEGER, chi INTEGER, clo "
	"INTEGER, why TEXT, from_tier INTEGER, to_tier INTEGER, blocks "
	"INTEGER, bytes INTEGER, state TEXT, undo_of INTEGER, msg TEXT, "
	"range_start INTEGER, range_blocks INTEGER);";

/* Columns this version added to tables an older catalog already has
 * (CREATE TABLE IF NOT EXISTS leaves those as they are). */
static const struct {
	const char *sc_table, *sc_col, *sc_decl;
} schema_cols[] = {
	{"reads", "start", "INTEGER"},
	{"reads", "blocks", "INTEGER"},
	{"action", "range_start", "INTEGER"},
	{"action", "range_blocks", "INTEGER"},
};

/* *has: table has column col (PRAGMA table_info). */
static int db_has_col(struct hsm *h, const char *table, const char *col,
		      bool *has)
{
	char sql[96];
	sqlite3_stmt *st;
	int rc;

	snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", table);
	rc = db_prep(h, sql, &st);
	if (rc != 0)
		return rc;
	*has = false;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *n = (const char *)sqlite3_column_text(st, 1);

		*has = *has || (n != NULL && strcmp(n, col) == 0);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : db_err(h, rc, sql);
}

/* Bring a catalog made by an older version up to the schema: every column
 * of schema_cols it lacks added, in one transaction (two plugins opening
 * it at once add each column once). */
static int schema_migrate(struct hsm *h)
{
	int rc = db_exec(h, "BEGIN IMMEDIATE");

	for (size_t i = 0; rc == 0 && i < sizeof schema_cols /
					  sizeof schema_cols[0]; i++) {
		char sql[160];
		bool has;

		rc = db_has_col(h, schema_cols[i].sc_table,
				schema_cols[i].sc_col, &has);
		if (rc != 0 || has)
			continue;
		snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s",
			 schema_cols[i].sc_table, schema_cols[i].sc_col,
			 schema_cols[i].sc_decl);
		rc = db_exec(h, sql);
	}
	if (rc == 0)
		return db_exec(h, "COMMIT");
	db_exec(h, "ROLLBACK");
	return rc;
}

/* --------------------------------------------------------- objects */

/* Open o, object id of container cont. */
static int obj_open(struct hsm *h, const struct clovis_id *id,
		    const struct clovis_id *cont, struct clovis_container *c,
		    struct clovis_obj *o)
{
	return plugin_obj_open(h->h_cl, id, cont, c, o);
}

/* The tier holding most of per's blocks other than tier `but` (-1:
 * none). */
static int32_t tier_major(const uint64_t per[CLOVIS_TIER_NR], int32_t but)
{
	int32_t best = -1;

	for (uint32_t k = 0; k < CLOVIS_TIER_NR; k++)
		if ((int32_t)k != but && per[k] > 0 &&
		    (best < 0 || per[k] > per[best]))
			best = (int32_t)k;
	return best;
}

/* ------------------------------------------------------------ runs */

static void runs_fini(struct hsm_runs *rs)
{
	free(rs->rs_v);
	memset(rs, 0, sizeof *rs);
}

/* Append run [start, start + blocks) on layer (its tier) to rs, merged
 * into the last run when it touches it on the same layer (by_tier: the
 * same tier). */
static int runs_add(struct hsm_runs *rs, uint64_t start, uint64_t blocks,
		    uint32_t layer, int32_t tier, bool by_tier)
{
	struct hsm_run *l = rs->rs_n > 0 ? &rs->rs_v[rs->rs_n - 1] : NULL;

	if (l != NULL && l->hx_start + l->hx_blocks == start &&
	    (by_tier ? l->hx_tier == tier : l->hx_layer == layer)) {
		l->hx_blocks += blocks;
		return 0;
	}
	if (rs->rs_n == rs->rs_cap) {
		uint32_t cap = rs->rs_cap ? rs->rs_cap * 2 : 16;
		void *nv;

		if (rs->rs_cap >= HSM_RUNS_MAX)
			return err_set(-E2BIG, "HSM: more than %u runs of "
				       "blocks on its layers", HSM_RUNS_MAX);
		nv = realloc(rs->rs_v, cap * sizeof *rs->rs_v);
		if (nv == NULL)
			return err_set(-ENOMEM, "HSM: %u runs", cap);
		rs->rs_v = nv;
		rs->rs_cap = cap;
	}
	rs->rs_v[rs->rs_n++] = (struct hsm_run){start, blocks, layer, tier};
	return 0;
}

/* The tier of layer among li[0..nr) (-1: no such layer, or its
 * sub-layout names none of CLOVIS_TIER_*). */
static int32_t layer_tier(const struct clovis_layer_info *li, uint32_t nr,
			  uint32_t layer)
{
	for (uint32_t i = 0; i < nr; i++)
		if (li[i].li_layer == layer)
			return li[i].li_attr.oa_tier < CLOVIS_TIER_NR ?
			       (int32_t)li[i].li_attr.oa_tier : -1;
	return -1;
}

/* The runs of blocks [start, start + nr) of composite o, by layer in
 * block order, each with its layer's tier, into *rs (emptied first). */
static int runs_map(struct clovis_obj *o, uint64_t start, uint64_t nr,
		    struct hsm_runs *rs)
{
	struct clovis_layer_info li[HSM_LAYERS_MAX];
	struct clovis_layer_ext x[HSM_MAP_BATCH];
	uint32_t nl = HSM_LAYERS_MAX;
	uint64_t s = start, end = start + nr;
	int rc = clovis_obj_layer_list(o, li, &nl);

	rs->rs_n = 0;
	nl = nl < HSM_LAYERS_MAX ? nl : HSM_LAYERS_MAX;
	while (rc == 0 && s < end) {
		uint32_t n = HSM_MAP_BATCH;
		uint64_t next = end;

		rc = clovis_obj_layer_map(o, s, end - s, x, &n, &next);
		for (uint32_t i = 0; rc == 0 && i < n && i < HSM_MAP_BATCH;
		     i++)
			rc = runs_add(rs, x[i].le_start, x[i].le_blocks,
				      x[i].le_layer,
				      layer_tier(li, nl, x[i].le_layer), false);
		if (rc == 0 && next <= s)
			rc = err_set(-EIO, "HSM: the layer map did not go past "
				     "block %" PRIu64, s);
		s = next;
	}
	return rc;
}

/* rs (by layer) as the catalog keeps it, into *out: by tier, touching
 * runs on one tier merged. */
static int runs_by_tier(const struct hsm_runs *rs, struct hsm_runs *out)
{
	int rc = 0;

	out->rs_n = 0;
	for (uint32_t i = 0; rc == 0 && i < rs->rs_n; i++)
		rc = runs_add(out, rs->rs_v[i].hx_start, rs->rs_v[i].hx_blocks,
			      rs->rs_v[i].hx_layer, rs->rs_v[i].hx_tier, true);
	return rc;
}

/* Blocks of run x within [start, start + nr). */
static uint64_t run_in(const struct hsm_run *x, uint64_t start, uint64_t nr)
{
	uint64_t a = x->hx_start > start ? x->hx_start : start;
	uint64_t e = x->hx_start + x->hx_blocks, re = start + nr;

	e = e < re ? e : re;
	return e > a ? e - a : 0;
}

/* Blocks of rs within [start, start + nr) per tier. */
static void runs_per_tier(const struct hsm_runs *rs, uint64_t start,
			  uint64_t nr, uint64_t per[CLOVIS_TIER_NR])
{
	memset(per, 0, CLOVIS_TIER_NR * sizeof *per);
	for (uint32_t i = 0; i < rs->rs_n; i++)
		if (rs->rs_v[i].hx_tier >= 0)
			per[rs->rs_v[i].hx_tier] += run_in(&rs->rs_v[i], start,
							   nr);
}

/* ------------------------------------------------------ the catalog */

static int obj_upsert(struct hsm *h, const struct clovis_id *id,
		      const struct clovis_id *cont, int64_t layout,
		      uint64_t size, uint64_t wtime, uint64_t rtime)
{
	static const char sql[] =
		"INSERT INTO obj(hi, lo, chi, clo, layout, size, wtime, rtime)"
		" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(hi, lo) "
		"DO UPDATE SET chi = ?3, clo = ?4, layout = CASE WHEN ?5 >= 0 "
		"THEN ?5 ELSE layout END, size = ?6, wtime = MAX(wtime, ?7), "
		"rtime = MAX(rtime, ?8)";
	sqlite3_stmt *st;
	int rc = db_prep(h, sql, &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)id->ci_hi);
	sqlite3_bind_int64(st, 2, (int64_t)id->ci_lo);
	sqlite3_bind_int64(st, 3, (int64_t)cont->ci_hi);
	sqlite3_bind_int64(st, 4, (int64_t)cont->ci_lo);
	sqlite3_bind_int64(st, 5, layout);
	sqlite3_bind_int64(st, 6, (int64_t)size);
	sqlite3_bind_int64(st, 7, (int64_t)wtime);
	sqlite3_bind_int64(st, 8, (int64_t)rtime);
	rc = sqlite3_step(st);
	rc = rc == SQLITE_DONE ? 0 : db_err(h, rc, "object");
	sqlite3_finalize(st);
	return rc;
}

static int obj_forget(struct hsm *h, const struct clovis_id *id)
{
	static const char *const sql[] = {
		"DELETE FROM obj WHERE hi = ?1 AND lo = ?2",
		"DELETE FROM reads WHERE hi = ?1 AND lo = ?2",
		"DELETE FROM ext WHERE hi = ?1 AND lo = ?2",
	};
	int rc = 0;

	for (int i = 0; rc == 0 && i < 3; i++) {
		sqlite3_stmt *st;

		rc = db_prep(h, sql[i], &st);
		if (rc != 0)
			break;
		sqlite3_bind_int64(st, 1, (int64_t)id->ci_hi);
		sqlite3_bind_int64(st, 2, (int64_t)id->ci_lo);
		rc = sqlite3_step(st);
		rc = rc == SQLITE_DONE ? 0 : db_err(h, rc, "forget");
		sqlite3_finalize(st);
	}
	return rc;
}

/* Replace the catalog's runs of object id (ext rows) with rs, runs by
 * tier; atomic (a savepoint: inside the round's transaction or not). */
static int ext_store(struct hsm *h, const struct clovis_id *id,
		     const struct hsm_runs *rs)
{
	sqlite3_stmt *del = NULL, *ins = NULL;
	int rc = db_exec(h, "SAVEPOINT ext");

	if (rc != 0)
		return rc;
	rc = db_prep(h, "DELETE FROM ext WHERE hi = ?1 AND lo = ?2", &del);
	if (rc == 0)
		rc = db_prep(h, "INSERT INTO ext(hi, lo, start, blocks, tier) "
			     "VALUES(?1, ?2, ?3, ?4, ?5)", &ins);
	if (rc == 0) {
		sqlite3_bind_int64(del, 1, (int64_t)id->ci_hi);
		sqlite3_bind_int64(del, 2, (int64_t)id->ci_lo);
		rc = sqlite3_step(del);
		rc = rc == SQLITE_DONE ? 0 : db_err(h, rc, "extents");
	}
	for (uint32_t i = 0; rc == 0 && i < rs->rs_n; i++) {
		sqlite3_reset(ins);
		sqlite3_bind_int64(ins, 1, (int64_t)id->ci_hi);
		sqlite3_bind_int64(ins, 2, (int64_t)id->ci_lo);
		sqlite3_bind_int64(ins, 3, (int64_t)rs->rs_v[i].hx_start);
		sqlite3_bind_int64(ins, 4, (int64_t)rs->rs_v[i].hx_blocks);
		sqlite3_bind_int64(ins, 5, rs->rs_v[i].hx_tier);
		rc = sqlite3_step(ins);
		rc = rc == SQLITE_DONE ? 0 : db_err(h, rc, "extents");
	}
	sqlite3_finalize(del);
	sqlite3_finalize(ins);
	if (rc != 0)
		db_exec(h, "ROLLBACK TO ext");
	db_exec(h, "RELEASE ext");
	return rc;
}

/* An OBJ_READ record: fr_size reads, its one extent the span of blocks
 * they read (a record without one: span unknown, NULL). */
static int reads_add(struct hsm *h, const struct clovis_fdmi_rec *r)
{
	sqlite3_stmt *st;
	int rc = db_prep(h, "INSERT INTO reads(hi, lo, t, n, start, blocks) "
			 "VALUES(?1, ?2, ?3, ?4, ?5, ?6)", &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)r->fr_id.ci_hi);
	sqlite3_bind_int64(st, 2, (int64_t)r->fr_id.ci_lo);
	sqlite3_bind_int64(st, 3, (int64_t)r->fr_time_ns);
	sqlite3_bind_int64(st, 4, (int64_t)r->fr_size);
	if (r->fr_nr_ext >= 1) {
		uint64_t start, blocks;

		clovis_fdmi_rec_ext(r, 0, &start, &blocks);
		sqlite3_bind_int64(st, 5, (int64_t)start);
		sqlite3_bind_int64(st, 6, (int64_t)blocks);
	}
	rc = sqlite3_step(st);
	rc = rc == SQLITE_DONE ? 0 : db_err(h, rc, "reads");
	sqlite3_finalize(st);
	if (rc != 0)
		return rc;
	rc = db_prep(h, "UPDATE obj SET rtime = MAX(rtime, ?3) WHERE hi = ?1 "
		     "AND lo = ?2", &st);
	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)r->fr_id.ci_hi);
	sqlite3_bind_int64(st, 2, (int64_t)r->fr_id.ci_lo);
	sqlite3_bind_int64(st, 3, (int64_t)r->fr_time_ns);
	rc = sqlite3_step(st);
	rc = rc == SQLITE_DONE ? 0 : db_err(h, rc, "reads");
	sqlite3_finalize(st);
	return rc;
}

/* The last record of server folded in (0: none). */
static uint64_t cursor_get(struct hsm *h, const char *server)
{
	sqlite3_stmt *st;
	uint64_t v = 0;

	if (db_prep(h, "SELECT seq FROM cursor WHERE server = ?1", &st) != 0)
		return 0;
	sqlite3_bind_text(st, 1, server, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int cursor_set(struct hsm *h, const char *server, uint64_t seq)
{
	sqlite3_stmt *st;
	int rc = db_prep(h, "INSERT INTO cursor VALUES(?1, ?2) ON CONFLICT("
			 "server) DO UPDATE SET seq = MAX(seq, ?2)", &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_text(st, 1, server, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)seq);
	rc = sqlite3_step(st);
	rc = rc == SQLITE_DONE ? 0 : db_err(h, rc, "cursor");
	sqlite3_finalize(st);
	return rc;
}

/* Fold record r into the catalog. */
static int rec_fold(struct hsm *h, const struct clovis_fdmi_rec *r)
{
	if (r->fr_type != CLOVIS_ET_OBJ)
		return 0;
	switch (r->fr_op) {
	case CLOVIS_FDMI_OBJ_CREATE:
		return obj_upsert(h, &r->fr_id, &r->fr_container, r->fr_layer,
				  r->fr_size, r->fr_time_ns, 0);
	case CLOVIS_FDMI_OBJ_DELETE:
		return obj_forget(h, &r->fr_id);
	case CLOVIS_FDMI_OBJ_WRITE:
	case CLOVIS_FDMI_OBJ_ALLOC:
	case CLOVIS_FDMI_OBJ_FREE:
	case CLOVIS_FDMI_SETATTR:
		return obj_upsert(h, &r->fr_id, &r->fr_container, -1,
				  r->fr_size, r->fr_time_ns, 0);
	case CLOVIS_FDMI_LAYER_ADD:
	case CLOVIS_FDMI_LAYER_DROP:
	case CLOVIS_FDMI_LAYER_MOVE:
		/* not an access: only the size and the container */
		return obj_upsert(h, &r->fr_id, &r->fr_container, -1,
				  r->fr_size, 0, 0);
	case CLOVIS_FDMI_OBJ_READ:
		return reads_add(h, r);
	default:
		return 0;
	}
}

/* Every object of the store into the catalog (a first start, or a
 * LAGGING consumer's rescan): attributes from OPEN, times from mtime. */
static int catalog_scan(struct hsm *h, uint64_t *nr_objs)
{
	struct clovis_id cids[256], ids[256], ca = {0, 0}, oa;
	uint32_t cn, on;
	bool cfirst = true;
	int rc;

	*nr_objs = 0;
	do {
		cn = 256;
		rc = clovis_entity_list(h->h_cl, NULL, CLOVIS_ET_CONTAINER,
					cfirst ? NULL : &ca, cids, &cn);
		cfirst = false;
		for (uint32_t c = 0; rc == 0 && c < cn; c++) {
			struct clovis_container cc;
			struct clovis_realm *realm;
			bool ofirst = true;

			ca = cids[c];
			if (plugin_realm_of(h->h_cl, &cids[c], &cc, &realm) != 0)
				continue; /* deleted meanwhile */
			do {
				on = 256;
				rc = clovis_entity_list(h->h_cl, realm,
							CLOVIS_ET_OBJ,
							ofirst ? NULL : &oa,
							ids, &on);
				ofirst = false;
				for (uint32_t i = 0; rc == 0 && i < on; i++) {
					struct clovis_container c2;
					struct clovis_obj o;

					oa = ids[i];
					if (obj_open(h, &ids[i], &cids[c], &c2,
						     &o) != 0)
						continue;
					rc = obj_upsert(h, &ids[i], &cids[c],
							o.ob_attr.oa_layout,
							o.ob_attr.oa_size_bytes,
							o.ob_attr.oa_mtime_ns,
							0);
					(*nr_objs)++;
				}
			} while (rc == 0 && on > 0);
		}
	} while (rc == 0 && cn > 0);
	return rc;
}

/* Read every record the consumer has and fold it in; ack each batch once
 * the catalog holds it.  A LAGGING consumer rescans and is reset. */
static int ingest(struct hsm *h, struct hsm_round_stats *st)
{
	for (;;) {
		struct clovis_fdmi_batch *b = NULL;
		uint32_t n;
		int rc = clovis_fdmi_next(h->h_cl, h->h_consumer, HSM_BATCH,
					  &b);

		if (rc == -ESTALE) {
			uint64_t nr;

			fprintf(h->h_out, "hsm: consumer %s is LAGGING (past "
				"its bounds): rescanning the store\n",
				h->h_consumer);
			rc = catalog_scan(h, &nr);
			if (rc == 0 && !h->h_dry_run)
				rc = clovis_fdmi_reset(h->h_cl, h->h_consumer);
			if (rc != 0)
				return rc;
			continue;
		}
		if (rc != 0)
			return rc;
		n = clovis_fdmi_batch_nr(b);
		if (!h->h_dry_run)
			rc = db_exec(h, "BEGIN IMMEDIATE");
		for (uint32_t i = 0; rc == 0 && i < n; i++) {
			struct clovis_fdmi_rec r;

			rc = clovis_fdmi_batch_rec(b, i, &r);
			if (rc != 0)
				break;
			if (r.fr_seq <= cursor_get(h, r.fr_server))
				continue; /* folded in before a crash */
			rc = rec_fold(h, &r);
			if (rc == 0)
				rc = cursor_set(h, r.fr_server, r.fr_seq);
			st->hr_records++;
		}
		if (!h->h_dry_run) {
			if (rc == 0)
				rc = db_exec(h, "COMMIT");
			else
				db_exec(h, "ROLLBACK");
			/* also a batch of no record: it may have covered
			 * records the filter skipped (kept otherwise until
			 * the consumer turns LAGGING); nothing new, no
			 * commit */
			if (rc == 0)
				rc = clovis_fdmi_ack(h->h_cl, h->h_consumer, b);
		}
		clovis_fdmi_batch_free(b);
		if (rc != 0 || n == 0)
			return rc;
	}
}

/* ------------------------------------------------------- the choice */

static bool class_holds(const struct hsm_class *c, const struct hsm_obj *o,
			uint64_t now)
{
	uint64_t age = now > o->ho_wtime ? now - o->ho_wtime : 0;
	char idt[CLOVIS_ID_STR_LEN];

	if (c->hc_container_set &&
	    (o->ho_cont.ci_hi != c->hc_container.si_hi ||
	     o->ho_cont.ci_lo != c->hc_container.si_lo))
		return false;
	if (c->hc_id_prefix[0] != '\0') {
		clovis_id_format(&o->ho_id, idt);
		if (strncmp(idt, c->hc_id_prefix, strlen(c->hc_id_prefix)))
			return false;
	}
	if (o->ho_size < c->hc_size_min ||
	    (c->hc_size_max != 0 && o->ho_size > c->hc_size_max))
		return false;
	if (age < c->hc_age_min_ns ||
	    (c->hc_age_max_ns != 0 && age > c->hc_age_max_ns))
		return false;
	if (o->ho_heat < c->hc_heat_min ||
	    ((c->hc_heat_max != 0 || c->hc_heat_max_set) &&
	     o->ho_heat > c->hc_heat_max))
		return false;
	if (c->hc_tier >= 0 && o->ho_tier != c->hc_tier)
		return false;
	return true;
}

static uint64_t last_access(const struct hsm_obj *o)
{
	return o->ho_wtime > o->ho_rtime ? o->ho_wtime : o->ho_rtime;
}

static int by_lru(const void *a, const void *b)
{
	uint64_t x = last_access(*(struct hsm_obj *const *)a);
	uint64_t y = last_access(*(struct hsm_obj *const *)b);

	return x < y ? -1 : x > y;
}

static int by_mru(const void *a, const void *b)
{
	return -by_lru(a, b);
}

/* Load the catalog's objects with their heat over the window. */
static int objs_load(struct hsm *h, uint64_t now, struct hsm_obj **out,
		     uint32_t *nr)
{
	static const char sql[] =
		"SELECT o.hi, o.lo, o.chi, o.clo, o.layout, o.size, o.wtime, "
		"o.rtime, o.tier, o.noted, COALESCE(SUM(r.n), 0), "
		"MIN(r.start), MAX(r.start + r.blocks), "
		"SUM(r.hi IS NOT NULL AND (r.start IS NULL OR r.blocks IS "
		"NULL)) FROM obj o LEFT JOIN reads r ON r.hi = o.hi AND r.lo = "
		"o.lo AND r.t >= ?1 GROUP BY o.hi, o.lo ORDER BY o.hi, o.lo "
		"LIMIT ?2";
	uint64_t since = now > h->h_pol->hp_window_ns ?
			 now - h->h_pol->hp_window_ns : 0;
	struct hsm_obj *v = NULL;
	uint32_t n = 0, cap = 0;
	sqlite3_stmt *st;
	int rc = db_prep(h, sql, &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)since);
	sqlite3_bind_int64(st, 2, HSM_SCAN_MAX);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct hsm_obj *o;

		if (n == cap) {
			void *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof *v);

			if (nv == NULL) {
				sqlite3_finalize(st);
				free(v);
				return err_set(-ENOMEM, "HSM: %u objects", n);
			}
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		o = &v[n++];
		memset(o, 0, sizeof *o);
		o->ho_id.ci_hi = (uint64_t)sqlite3_column_int64(st, 0);
		o->ho_id.ci_lo = (uint64_t)sqlite3_column_int64(st, 1);
		o->ho_cont.ci_hi = (uint64_t)sqlite3_column_int64(st, 2);
		o->ho_cont.ci_lo = (uint64_t)sqlite3_column_int64(st, 3);
		o->ho_layout = (uint32_t)sqlite3_column_int64(st, 4);
		o->ho_size = (uint64_t)sqlite3_column_int64(st, 5);
		o->ho_wtime = (uint64_t)sqlite3_column_int64(st, 6);
		o->ho_rtime = (uint64_t)sqlite3_column_int64(st, 7);
		o->ho_tier = (int32_t)sqlite3_column_int64(st, 8);
		o->ho_noted = sqlite3_column_int64(st, 9) != 0;
		o->ho_heat = (uint64_t)sqlite3_column_int64(st, 10);
		/* a span known when some read gave one and none did not */
		o->ho_hot_known = sqlite3_column_type(st, 11) != SQLITE_NULL &&
				  sqlite3_column_int64(st, 13) == 0;
		o->ho_hot_start = (uint64_t)sqlite3_column_int64(st, 11);
		o->ho_hot_end = (uint64_t)sqlite3_column_int64(st, 12);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(v);
		return db_err(h, rc, "objects");
	}
	*out = v;
	*nr = n;
	return 0;
}

/* Say once that o is not composite (it cannot move): noted in the
 * catalog. */
static void obj_note(struct hsm *h, struct hsm_obj *o)
{
	char idt[CLOVIS_ID_STR_LEN];
	sqlite3_stmt *st;

	if (!o->ho_noted && !h->h_dry_run) {
		fprintf(h->h_out, "hsm: object %s is not composite (layout %u):"
			" left where it is\n", clovis_id_format(&o->ho_id, idt),
			o->ho_layout);
		if (db_prep(h, "UPDATE obj SET noted = 1 WHERE hi = ?1 AND lo ="
			    " ?2", &st) == 0) {
			sqlite3_bind_int64(st, 1, (int64_t)o->ho_id.ci_hi);
			sqlite3_bind_int64(st, 2, (int64_t)o->ho_id.ci_lo);
			sqlite3_step(st);
			sqlite3_finalize(st);
		}
	}
	o->ho_noted = true;
}

/* The blocks of o (nb of them) a move would be about, into ho_r0, ho_rn
 * and ho_whole: every one; its hot span (every one when unknown); or
 * [start, start + nr).  Clipped to the object.  A hot span that covers
 * the object is the whole object. */
static void obj_range(struct hsm_obj *o, uint64_t nb, enum hsm_span how,
		      uint64_t start, uint64_t nr)
{
	uint64_t s = 0, e = nb;

	if (how == HSM_SPAN_HOT && o->ho_hot_known) {
		s = o->ho_hot_start;
		e = o->ho_hot_end;
	} else if (how == HSM_SPAN_GIVEN) {
		s = start;
		e = start + nr;
	}
	s = s < nb ? s : nb;
	e = e < nb ? e : nb;
	e = e > s ? e : s;
	o->ho_whole = how != HSM_SPAN_GIVEN && s == 0 && e == nb;
	o->ho_r0 = s;
	o->ho_rn = e - s;
}

/* Refresh o from its layers: size, the tier holding most of its blocks,
 * the catalog's ext rows, the range a move would take (obj_range()) and
 * the bytes of that range on tier t and on every tier.  false: not a
 * composite, or gone, or its map could not be read (said). */
static bool obj_refresh(struct hsm *h, struct hsm_obj *o, uint32_t t,
			enum hsm_span how, uint64_t start, uint64_t nr)
{
	struct hsm_runs rs = {0}, rt = {0};
	uint64_t per[CLOVIS_TIER_NR], nb;
	struct clovis_container c;
	struct clovis_obj ob;
	int rc;

	if (o->ho_layout != CLOVIS_LAYOUT_COMPOSITE) {
		obj_note(h, o);
		return false;
	}
	if (obj_open(h, &o->ho_id, &o->ho_cont, &c, &ob) != 0)
		return false;
	o->ho_size = ob.ob_attr.oa_size_bytes;
	o->ho_bshift = ob.ob_attr.oa_block_shift;
	nb = ob.ob_attr.oa_size_blocks;
	obj_range(o, nb, how, start, nr);
	rc = nb > 0 ? runs_map(&ob, 0, nb, &rs) : 0;
	if (rc == 0)
		rc = runs_by_tier(&rs, &rt);
	if (rc == 0)
		rc = ext_store(h, &o->ho_id, &rt);
	if (rc == 0) {
		runs_per_tier(&rt, 0, nb, per);
		o->ho_tier = tier_major(per, -1);
		runs_per_tier(&rt, o->ho_r0, o->ho_rn, per);
		o->ho_tier_bytes = t < CLOVIS_TIER_NR ?
				   per[t] << o->ho_bshift : 0;
		o->ho_all_bytes = 0;
		for (uint32_t k = 0; k < CLOVIS_TIER_NR; k++)
			o->ho_all_bytes += per[k] << o->ho_bshift;
	} else if (rc != -ENOENT) {
		char idt[CLOVIS_ID_STR_LEN];

		fprintf(h->h_out, "hsm: object %s: %s: left where it is\n",
			clovis_id_format(&o->ho_id, idt), clovis_errmsg());
	}
	runs_fini(&rs);
	runs_fini(&rt);
	return rc == 0;
}

/* Tier t's usage: used and size bytes over its devices. */
static int tier_usage(struct hsm *h, uint32_t t, uint64_t *used,
		      uint64_t *size)
{
	struct clovis_dev_info *d;
	uint32_t nr = 256;
	int rc;

	d = calloc(nr, sizeof *d);
	if (d == NULL)
		return err_set(-ENOMEM, "HSM: devices");
	rc = clovis_dev_list(h->h_cl, d, &nr);
	*used = *size = 0;
	for (uint32_t i = 0; rc == 0 && i < nr && i < 256; i++)
		if (d[i].di_tier == t && d[i].di_state == CLOVIS_DEV_ONLINE) {
			*size += d[i].di_size_bytes;
			*used += d[i].di_size_bytes - d[i].di_free_bytes;
		}
	free(d);
	return rc;
}

/* m: a move of o's range (as obj_refresh() left it) to tier to. */
static void move_init(struct hsm_move *m, struct hsm_obj *o, uint32_t to,
		      const char *why)
{
	memset(m, 0, sizeof *m);
	m->hm_obj = o;
	m->hm_to = to;
	m->hm_whole = o->ho_whole;
	m->hm_r0 = o->ho_r0;
	m->hm_rn = o->ho_rn;
	m->hm_major = -1;
	snprintf(m->hm_why, sizeof m->hm_why, "%s", why);
}

static int move_add(struct hsm_move **v, uint32_t *n, uint32_t *cap,
		    struct hsm_obj *o, uint32_t to, const char *why)
{
	struct hsm_move *m;

	if (*n == *cap) {
		void *nv = realloc(*v, (*cap ? *cap * 2 : 16) * sizeof **v);

		if (nv == NULL)
			return err_set(-ENOMEM, "HSM: actions");
		*v = nv;
		*cap = *cap ? *cap * 2 : 16;
	}
	m = &(*v)[(*n)++];
	move_init(m, o, to, why);
	o->ho_picked = true;
	return 0;
}

/* Objects whose last action is partial (a write raced the move, or the
 * engine left blocks it could not move): the same move again, before the
 * rules, whatever class the object is in now (most of its bytes may be on
 * the target already, so the rule that picked it may not any more). */
static int pick_partials(struct hsm *h, struct hsm_obj *v, uint32_t n,
			 struct hsm_move **mv, uint32_t *mn, uint32_t *mcap)
{
	sqlite3_stmt *st;
	int rc = db_prep(h, "SELECT a.seq, a.hi, a.lo, a.to_tier, "
			 "a.range_start, a.range_blocks FROM action a WHERE "
			 "a.state = 'partial' AND a.seq = (SELECT MAX(b.seq) "
			 "FROM action b WHERE b.hi = a.hi AND b.lo = a.lo)",
			 &st);

	if (rc != 0)
		return rc;
	while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
		uint64_t seq = (uint64_t)sqlite3_column_int64(st, 0);
		struct clovis_id id = {
			(uint64_t)sqlite3_column_int64(st, 1),
			(uint64_t)sqlite3_column_int64(st, 2)};
		int64_t to = sqlite3_column_int64(st, 3);
		bool ranged = sqlite3_column_type(st, 4) != SQLITE_NULL;
		uint64_t r0 = (uint64_t)sqlite3_column_int64(st, 4);
		uint64_t rn = (uint64_t)sqlite3_column_int64(st, 5);
		char why[64];

		if (to < 0 || to >= CLOVIS_TIER_NR)
			continue;
		for (uint32_t i = 0; i < n; i++) {
			if (v[i].ho_picked || v[i].ho_id.ci_hi != id.ci_hi ||
			    v[i].ho_id.ci_lo != id.ci_lo)
				continue;
			if (!obj_refresh(h, &v[i], (uint32_t)to, ranged ?
					 HSM_SPAN_GIVEN : HSM_SPAN_WHOLE, r0,
					 rn) ||
			    v[i].ho_all_bytes == 0 ||
			    v[i].ho_tier_bytes == v[i].ho_all_bytes)
				break; /* gone, or finished meanwhile */
			snprintf(why, sizeof why, "finish action %" PRIu64,
				 seq);
			rc = move_add(mv, mn, mcap, &v[i], (uint32_t)to, why);
			break;
		}
	}
	sqlite3_finalize(st);
	return rc;
}

/* The rules, in order, over the objects of their classes. */
static int pick_rules(struct hsm *h, struct hsm_obj *v, uint32_t n,
		      uint64_t now, struct hsm_move **mv, uint32_t *mn,
		      uint32_t *mcap)
{
	const struct hsm_policy *p = h->h_pol;
	struct hsm_obj **c = calloc(n ? n : 1, sizeof *c);
	int rc = 0;

	if (c == NULL)
		return err_set(-ENOMEM, "HSM: candidates");
	for (uint32_t k = 0; rc == 0 && k < p->hp_nr_rules; k++) {
		const struct hsm_rule *ru = &p->hp_rules[k];
		const struct hsm_class *cl = &p->hp_classes[ru->hr_class];
		uint32_t cn = 0, taken = 0;
		char why[64];

		for (uint32_t i = 0; i < n; i++) {
			if (v[i].ho_picked)
				continue;
			/* the cheap predicates first, the tier (layers)
			 * only for those */
			int32_t keep = v[i].ho_tier;

			v[i].ho_tier = cl->hc_tier;
			if (!class_holds(cl, &v[i], now)) {
				v[i].ho_tier = keep;
				continue;
			}
			v[i].ho_tier = keep;
			if (v[i].ho_layout != CLOVIS_LAYOUT_COMPOSITE) {
				/* it cannot move: said once (obj_refresh) */
				obj_note(h, &v[i]);
				continue;
			}
			/* a promotion moves the hot span only */
			if (!obj_refresh(h, &v[i], ru->hr_to,
					 ru->hr_action == HSM_PROMOTE ?
					 HSM_SPAN_HOT : HSM_SPAN_WHOLE, 0, 0) ||
			    !class_holds(cl, &v[i], now))
				continue;
			/* nothing held (of the range), or all there already */
			if (v[i].ho_all_bytes == 0 ||
			    v[i].ho_tier_bytes == v[i].ho_all_bytes)
				continue;
			c[cn++] = &v[i];
		}
		qsort(c, cn, sizeof *c, ru->hr_order == HSM_MRU ? by_mru :
					by_lru);
		snprintf(why, sizeof why, "rule %u (class %s)", k + 1,
			 cl->hc_name);
		for (uint32_t i = 0; rc == 0 && i < cn; i++) {
			if (ru->hr_max_objects != 0 &&
			    taken == ru->hr_max_objects)
				break;
			rc = move_add(mv, mn, mcap, c[i], ru->hr_to, why);
			taken++;
		}
	}
	free(c);
	return rc;
}

/* Each watermark whose tier is fuller than its high mark: its coldest
 * objects (LRU) until the bytes picked bring it to its low mark. */
static int pick_marks(struct hsm *h, struct hsm_obj *v, uint32_t n,
		      struct hsm_move **mv, uint32_t *mn, uint32_t *mcap)
{
	const struct hsm_policy *p = h->h_pol;
	struct hsm_obj **c = calloc(n ? n : 1, sizeof *c);
	int rc = 0;

	if (c == NULL)
		return err_set(-ENOMEM, "HSM: candidates");
	for (uint32_t k = 0; rc == 0 && k < p->hp_nr_marks; k++) {
		const struct hsm_mark *wm = &p->hp_marks[k];
		uint64_t used = 0, size = 0, goal, freed = 0;
		uint32_t cn = 0;
		char why[64];

		rc = tier_usage(h, wm->hm_tier, &used, &size);
		if (rc != 0 || size == 0 ||
		    used * 100 < (uint64_t)wm->hm_high_pct * size)
			continue;
		goal = used - size / 100 * wm->hm_low_pct;
		fprintf(h->h_out, "hsm: tier %s %" PRIu64 "%% full (high mark"
			" %u%%): %" PRIu64 " bytes to move to %s\n",
			hsm_tier_name(wm->hm_tier), used * 100 / size,
			wm->hm_high_pct, goal, hsm_tier_name(wm->hm_to));
		for (uint32_t i = 0; i < n; i++) {
			if (v[i].ho_picked ||
			    v[i].ho_layout != CLOVIS_LAYOUT_COMPOSITE ||
			    !obj_refresh(h, &v[i], wm->hm_tier, HSM_SPAN_WHOLE,
					 0, 0) ||
			    v[i].ho_tier_bytes == 0)
				continue;
			c[cn++] = &v[i];
		}
		qsort(c, cn, sizeof *c, by_lru);
		snprintf(why, sizeof why, "watermark %s %u%%/%u%%",
			 hsm_tier_name(wm->hm_tier), wm->hm_high_pct,
			 wm->hm_low_pct);
		for (uint32_t i = 0; rc == 0 && i < cn && freed < goal; i++) {
			rc = move_add(mv, mn, mcap, c[i], wm->hm_to, why);
			freed += c[i]->ho_tier_bytes;
		}
	}
	free(c);
	return rc;
}

/* -------------------------------------------------------- the moves */

/* Wait so that the bytes moved so far keep to bytes_per_s. */
static void pace(struct hsm *h, uint64_t bytes)
{
	uint64_t rate = h->h_pol->hp_bytes_per_s, due_ns, el;

	if (rate == 0)
		return;
	pthread_mutex_lock(&h->h_pace_lock);
	if (h->h_pace_t0_ns == 0)
		h->h_pace_t0_ns = mono_ns();
	h->h_pace_bytes += bytes;
	due_ns = (uint64_t)((double)h->h_pace_bytes * 1e9 / (double)rate);
	el = mono_ns() - h->h_pace_t0_ns;
	pthread_mutex_unlock(&h->h_pace_lock);
	if (due_ns > el)
		usleep((useconds_t)((due_ns - el) / 1000));
}

/* The layer of o on tier t (a plain one).  Moving up (t faster than the
 * tier of o's top layer) the data goes to the top, so that the writes
 * that follow land on the faster tier too: the top layer if it is on t,
 * else a new layer above it.  Otherwise an existing plain layer on t, else
 * one added below every other layer.  *top: o's top layer (the new one
 * when one was added above). */
static int layer_for(struct clovis_obj *o, uint32_t t, uint32_t *layer,
		     uint32_t *top, char *msg, size_t msz)
{
	struct clovis_layer_info li[HSM_LAYERS_MAX];
	uint32_t nr = HSM_LAYERS_MAX, low = UINT32_MAX, prio;
	struct clovis_obj_attr a;
	int rc = clovis_obj_layer_list(o, li, &nr);

	if (rc != 0)
		return rc;
	*top = nr > 0 ? li[0].li_layer : 0;
	if (nr > 0 && li[0].li_attr.oa_layout == CLOVIS_LAYOUT_PLAIN &&
	    t < li[0].li_attr.oa_tier && li[0].li_priority < UINT32_MAX) {
		memset(&a, 0, sizeof a);
		a.oa_layout = CLOVIS_LAYOUT_PLAIN;
		a.oa_tier = t;
		a.oa_block_shift = o->ob_attr.oa_block_shift;
		rc = clovis_obj_layer_add(o, &a, li[0].li_priority + 1, layer);
		if (rc == 0)
			*top = *layer;
		return rc;
	}
	for (uint32_t i = 0; i < nr && i < HSM_LAYERS_MAX; i++) {
		if (li[i].li_attr.oa_layout == CLOVIS_LAYOUT_PLAIN &&
		    li[i].li_attr.oa_tier == t) {
			*layer = li[i].li_layer;
			return 0;
		}
		if (li[i].li_priority < low)
			low = li[i].li_priority;
	}
	/* below the lowest, else the first free priority under the top */
	prio = low == UINT32_MAX ? 100 : low;
	if (prio > 0) {
		prio--;
	} else {
		bool used = true;

		for (prio = nr > 0 ? li[0].li_priority : 1; prio > 0 && used;) {
			prio--;
			used = false;
			for (uint32_t i = 0; i < nr; i++)
				used = used || li[i].li_priority == prio;
		}
		if (used) {
			snprintf(msg, msz, "no free layer priority below "
				 "the top layer");
			return -ENOSPC;
		}
	}
	memset(&a, 0, sizeof a);
	a.oa_layout = CLOVIS_LAYOUT_PLAIN;
	a.oa_tier = t;
	a.oa_block_shift = o->ob_attr.oa_block_shift;
	return clovis_obj_layer_add(o, &a, prio, layer);
}

/* The tier holding most of blocks [r0, r0 + rn) of o that are not on
 * tier to (dflt: none, or the map could not be read). */
static int32_t from_tier(struct clovis_obj *o, uint64_t r0, uint64_t rn,
			 uint32_t to, int32_t dflt)
{
	struct hsm_runs rs = {0};
	uint64_t per[CLOVIS_TIER_NR];
	int32_t best = -1;

	if (rn > 0 && runs_map(o, r0, rn, &rs) == 0) {
		runs_per_tier(&rs, r0, rn, per);
		best = tier_major(per, (int32_t)to);
	}
	runs_fini(&rs);
	return best >= 0 ? best : dflt;
}

/* Move blocks [r0, r0 + rn) of o to layer, HSM_MOVE_BYTES a call, paced;
 * what moved counted in m. */
static int move_range(struct hsm *h, struct clovis_obj *o, uint64_t r0,
		      uint64_t rn, uint32_t layer, struct hsm_move *m)
{
	uint32_t sh = o->ob_attr.oa_block_shift;
	uint64_t chunk = HSM_MOVE_BYTES >> sh;
	int rc = 0;

	chunk = chunk ? chunk : 1;
	for (uint64_t s = r0; rc == 0 && s < r0 + rn; s += chunk) {
		uint64_t n = r0 + rn - s < chunk ? r0 + rn - s : chunk;
		uint64_t moved = 0;

		rc = clovis_obj_layer_move(o, s, n, layer, &moved);
		m->hm_blocks += moved;
		m->hm_bytes += moved << sh;
		if (rc == 0)
			pace(h, moved << sh);
	}
	return rc;
}

/* After the move of [r0, r0 + rn) of o to layer: what is left elsewhere
 * was written meanwhile (to the top layer), the move is partial — of a
 * whole move any block on another layer, of a range one of the range's;
 * *on_to the blocks (of the range) on layer.  Empty layers other than the
 * top and the target are dropped. */
static int move_settle(struct clovis_obj *o, struct hsm_move *m, uint64_t r0,
		       uint64_t rn, uint32_t layer, uint32_t top,
		       uint64_t *on_to)
{
	struct clovis_layer_info li[HSM_LAYERS_MAX];
	struct hsm_runs rs = {0};
	uint32_t nr = HSM_LAYERS_MAX;
	int rc = clovis_obj_layer_list(o, li, &nr);

	*on_to = 0;
	for (uint32_t i = 0; rc == 0 && i < nr && i < HSM_LAYERS_MAX; i++) {
		if (li[i].li_layer == layer) {
			*on_to = m->hm_whole ? li[i].li_blocks : 0;
			continue;
		}
		if (li[i].li_blocks > 0)
			m->hm_partial = m->hm_partial || m->hm_whole;
		else if (li[i].li_layer != top)
			rc = clovis_obj_layer_drop(o, li[i].li_layer);
	}
	if (rc == 0 && !m->hm_whole && rn > 0)
		rc = runs_map(o, r0, rn, &rs);
	for (uint32_t i = 0; rc == 0 && i < rs.rs_n; i++) {
		uint64_t in = run_in(&rs.rs_v[i], r0, rn);

		if (rs.rs_v[i].hx_layer == layer)
			*on_to += in;
		else if (in > 0)
			m->hm_partial = true;
	}
	runs_fini(&rs);
	return rc;
}

/* The object of m as the move left it: its runs by tier (m->hm_ext, for
 * the catalog) and the tier holding most of its blocks; the object is
 * opened again (its size now: a write may have grown it). */
static void move_remap(struct hsm *h, struct hsm_move *m)
{
	struct hsm_runs rs = {0};
	struct clovis_container c;
	struct clovis_obj o;
	uint64_t per[CLOVIS_TIER_NR], nb = 0;
	int rc = obj_open(h, &m->hm_obj->ho_id, &m->hm_obj->ho_cont, &c, &o);

	if (rc == 0)
		nb = o.ob_attr.oa_size_blocks;
	if (rc == 0 && nb > 0)
		rc = runs_map(&o, 0, nb, &rs);
	if (rc == 0)
		rc = runs_by_tier(&rs, &m->hm_ext);
	m->hm_ext_ok = rc == 0;
	if (rc == 0) {
		runs_per_tier(&m->hm_ext, 0, nb, per);
		m->hm_major = tier_major(per, -1);
	}
	runs_fini(&rs);
}

/* Move m's blocks — every block of its object, or its range — to a layer
 * on m->hm_to (hsm.h), then map the object again for the catalog. */
static void move_run(struct hsm *h, struct hsm_move *m)
{
	struct clovis_container c;
	struct clovis_obj o;
	uint32_t layer = 0, top = 0;
	uint64_t r0 = m->hm_r0, rn = m->hm_rn, on_to = 0;
	int rc;

	m->hm_from = m->hm_obj->ho_tier;
	rc = obj_open(h, &m->hm_obj->ho_id, &m->hm_obj->ho_cont, &c, &o);
	if (rc == 0 && m->hm_whole) {
		r0 = 0;
		rn = o.ob_attr.oa_size_blocks;
	}
	if (rc == 0)
		m->hm_from = from_tier(&o, r0, rn, m->hm_to, m->hm_from);
	if (rc == 0)
		rc = layer_for(&o, m->hm_to, &layer, &top, m->hm_msg,
			       sizeof m->hm_msg);
	if (rc == 0)
		rc = move_range(h, &o, r0, rn, layer, m);
	if (rc == 0)
		rc = move_settle(&o, m, r0, rn, layer, top, &on_to);
	if (rc != 0 && m->hm_msg[0] == '\0')
		snprintf(m->hm_msg, sizeof m->hm_msg, "%s", clovis_errmsg());
	if (rc == 0 && m->hm_partial)
		snprintf(m->hm_msg, sizeof m->hm_msg, "%" PRIu64 " blocks on "
			 "%s, the rest written meanwhile: picked again next round",
			 on_to, hsm_tier_name(m->hm_to));
	m->hm_rc = rc;
	move_remap(h, m);
}

struct movers {
	struct hsm *mv_h;
	struct hsm_move *mv_v;
	uint32_t mv_n;
	uint32_t mv_next;
	pthread_mutex_t mv_lock;
};

static void *mover(void *arg)
{
	struct movers *w = arg;

	for (;;) {
		uint32_t i;

		pthread_mutex_lock(&w->mv_lock);
		i = w->mv_next++;
		pthread_mutex_unlock(&w->mv_lock);
		if (i >= w->mv_n)
			return NULL;
		move_run(w->mv_h, &w->mv_v[i]);
	}
}

/* Run the moves, hp_ops_in_flight at once. */
static void moves_run(struct hsm *h, struct hsm_move *v, uint32_t n)
{
	uint32_t nt = h->h_pol->hp_ops_in_flight ? h->h_pol->hp_ops_in_flight
						 : 1;
	struct movers w = {h, v, n, 0, PTHREAD_MUTEX_INITIALIZER};
	pthread_t t[64];
	uint32_t started = 0;

	if (nt > 64)
		nt = 64;
	if (nt > n)
		nt = n;
	for (uint32_t i = 1; i < nt; i++)
		if (pthread_create(&t[started], NULL, mover, &w) == 0)
			started++;
	mover(&w); /* this thread too */
	for (uint32_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&w.mv_lock);
}

static const char *move_state(const struct hsm_move *m)
{
	return m->hm_rc != 0 ? "failed" : m->hm_partial ? "partial" : "done";
}

static void move_print(struct hsm *h, const struct hsm_move *m,
		       uint64_t seq, bool dry)
{
	char idt[CLOVIS_ID_STR_LEN], rng[64] = "", rj[64] = "";
	const char *from = m->hm_from >= 0 ?
			   hsm_tier_name((uint32_t)m->hm_from) : "-";
	/* a dry run's bytes: what it would move */
	uint64_t dbytes = m->hm_whole ? m->hm_obj->ho_size :
			  m->hm_rn << m->hm_obj->ho_bshift;

	clovis_id_format(&m->hm_obj->ho_id, idt);
	if (!m->hm_whole && m->hm_rn > 0) {
		snprintf(rng, sizeof rng, " blocks %" PRIu64 " to %" PRIu64,
			 m->hm_r0, m->hm_r0 + m->hm_rn - 1);
		snprintf(rj, sizeof rj, ", \"range_start\": %" PRIu64 ", "
			 "\"range_blocks\": %" PRIu64, m->hm_r0, m->hm_rn);
	}
	if (h->h_json) {
		fprintf(h->h_out, "{\"action\": %" PRIu64 ", \"object\": "
			"\"%s\"%s, \"from\": \"%s\", \"to\": \"%s\", \"why\": "
			"\"%s\", \"bytes\": %" PRIu64 ", \"state\": \"%s\"}\n",
			seq, idt, rj, from, hsm_tier_name(m->hm_to), m->hm_why,
			dry ? dbytes : m->hm_bytes,
			dry ? "dry-run" : move_state(m));
	} else if (dry) {
		fprintf(h->h_out, "would move %s%s (%" PRIu64 " bytes) from %s "
			"to %s: %s\n", idt, rng, dbytes, from,
			hsm_tier_name(m->hm_to), m->hm_why);
	} else {
		fprintf(h->h_out, "action %" PRIu64 ": %s%s %s -> %s, %" PRIu64
			" bytes, %s (%s)%s%s\n", seq, idt, rng, from,
			hsm_tier_name(m->hm_to), m->hm_bytes, move_state(m),
			m->hm_why, m->hm_msg[0] ? ": " : "", m->hm_msg);
	}
}

/* The object of m in the catalog as the move left it: its ext rows and
 * the tier holding most of it (when it could be mapped again; else, of a
 * complete whole move, the target, of any other move unknown). */
static int move_log_obj(struct hsm *h, const struct hsm_move *m)
{
	int64_t tier = m->hm_ext_ok ? m->hm_major :
		       m->hm_rc == 0 && m->hm_whole && !m->hm_partial ?
		       (int64_t)m->hm_to : -1;
	sqlite3_stmt *st;
	int rc = m->hm_ext_ok ? ext_store(h, &m->hm_obj->ho_id, &m->hm_ext)
			      : 0;

	if (!m->hm_ext_ok && m->hm_rc != 0)
		return 0; /* failed, and not mapped again: left as it was */
	if (rc == 0)
		rc = db_prep(h, "UPDATE obj SET tier = ?3 WHERE hi = ?1 AND "
			     "lo = ?2", &st);
	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)m->hm_obj->ho_id.ci_hi);
	sqlite3_bind_int64(st, 2, (int64_t)m->hm_obj->ho_id.ci_lo);
	sqlite3_bind_int64(st, 3, tier);
	rc = sqlite3_step(st);
	rc = rc == SQLITE_DONE ? 0 : db_err(h, rc, "object tier");
	sqlite3_finalize(st);
	return rc;
}

/* Log m; *seq its action number. */
static int move_log(struct hsm *h, const struct hsm_move *m, uint64_t *seq)
{
	static const char sql[] =
		"INSERT INTO action(t, hi, lo, chi, clo, why, from_tier, "
		"to_tier, blocks, bytes, state, undo_of, msg, range_start, "
		"range_blocks) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
		" ?11, ?12, ?13, ?14, ?15)";
	sqlite3_stmt *st;
	int rc = db_prep(h, sql, &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)now_ns());
	sqlite3_bind_int64(st, 2, (int64_t)m->hm_obj->ho_id.ci_hi);
	sqlite3_bind_int64(st, 3, (int64_t)m->hm_obj->ho_id.ci_lo);
	sqlite3_bind_int64(st, 4, (int64_t)m->hm_obj->ho_cont.ci_hi);
	sqlite3_bind_int64(st, 5, (int64_t)m->hm_obj->ho_cont.ci_lo);
	sqlite3_bind_text(st, 6, m->hm_why, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, m->hm_from);
	sqlite3_bind_int64(st, 8, m->hm_to);
	sqlite3_bind_int64(st, 9, (int64_t)m->hm_blocks);
	sqlite3_bind_int64(st, 10, (int64_t)m->hm_bytes);
	sqlite3_bind_text(st, 11, move_state(m), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 12, (int64_t)m->hm_undo_of);
	sqlite3_bind_text(st, 13, m->hm_msg, -1, SQLITE_STATIC);
	if (!m->hm_whole) {
		sqlite3_bind_int64(st, 14, (int64_t)m->hm_r0);
		sqlite3_bind_int64(st, 15, (int64_t)m->hm_rn);
	}
	rc = sqlite3_step(st);
	rc = rc == SQLITE_DONE ? 0 : db_err(h, rc, "action log");
	sqlite3_finalize(st);
	*seq = (uint64_t)sqlite3_last_insert_rowid(h->h_db);
	if (rc == 0)
		rc = move_log_obj(h, m);
	return rc;
}

static void stats_add(struct hsm_round_stats *st, const struct hsm_move *m)
{
	if (m->hm_rc != 0)
		st->hr_failed++;
	else if (m->hm_partial)
		st->hr_partial++;
	else
		st->hr_done++;
	st->hr_bytes += m->hm_bytes;
}

/* Run, print and log the moves v[0..n). */
static int moves_do(struct hsm *h, struct hsm_move *v, uint32_t n,
		    struct hsm_round_stats *st)
{
	int rc = 0;

	if (h->h_dry_run) {
		for (uint32_t i = 0; i < n; i++) {
			v[i].hm_from = v[i].hm_obj->ho_tier;
			move_print(h, &v[i], 0, true);
		}
		return 0;
	}
	moves_run(h, v, n);
	/* the round's actions in one catalog transaction (one sync) */
	rc = n > 0 ? db_exec(h, "BEGIN IMMEDIATE") : 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t seq = 0;
		int r = move_log(h, &v[i], &seq);

		rc = rc != 0 ? rc : r;
		stats_add(st, &v[i]);
		move_print(h, &v[i], seq, false);
		runs_fini(&v[i].hm_ext);
	}
	if (n > 0) {
		int r = rc == 0 ? db_exec(h, "COMMIT") : db_exec(h, "ROLLBACK");

		rc = rc != 0 ? rc : r;
	}
	fflush(h->h_out);
	return rc;
}

/* ------------------------------------------------------------ public */

int hsm_open(const struct hsm_conf *c, struct hsm **out)
{
	struct hsm *h;
	const char *name = c->hc_consumer ? c->hc_consumer : HSM_CONSUMER;
	bool fresh;
	int rc;

	if (c->hc_cl == NULL || c->hc_policy == NULL || c->hc_db == NULL)
		return err_set(-EINVAL, "hsm_open: no %s", c->hc_cl == NULL ?
			       "instance" : c->hc_policy == NULL ? "policy" :
			       "catalog path");
	if (strlen(name) == 0 || strlen(name) > CLOVIS_FDMI_NAME_MAX)
		return err_set(-EINVAL, "hsm_open: consumer name \"%s\"", name);
	h = calloc(1, sizeof *h);
	if (h == NULL)
		return err_set(-ENOMEM, "hsm_open");
	h->h_cl = c->hc_cl;
	h->h_pol = c->hc_policy;
	h->h_dry_run = c->hc_dry_run;
	h->h_json = c->hc_json;
	h->h_out = c->hc_out ? c->hc_out : stdout;
	snprintf(h->h_consumer, sizeof h->h_consumer, "%s", name);
	pthread_mutex_init(&h->h_pace_lock, NULL);
	fresh = access(c->hc_db, F_OK) != 0;
	rc = sqlite3_open_v2(c->hc_db, &h->h_db, SQLITE_OPEN_READWRITE |
			     SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
	if (rc != SQLITE_OK) {
		rc = err_set(-EIO, "HSM catalog %s: %s", c->hc_db,
			     h->h_db ? sqlite3_errmsg(h->h_db) :
				       sqlite3_errstr(rc));
		goto out_close;
	}
	sqlite3_busy_timeout(h->h_db, 10000);
	rc = db_exec(h, schema);
	if (rc == 0)
		rc = schema_migrate(h);
	if (rc != 0)
		goto out_close;
	/* the consumer: every record still kept, the first time (the
	 * objects made before it are found by the scan below) */
	rc = clovis_fdmi_sub(h->h_cl, h->h_consumer, hsm_filter, 0, 0,
			     CLOVIS_FDMI_FROM_START);
	if (rc != 0)
		goto out_close;
	if (fresh) {
		uint64_t nr;

		rc = catalog_scan(h, &nr);
		if (rc != 0)
			goto out_close;
	}
	*out = h;
	return 0;
out_close:
	sqlite3_close(h->h_db);
	pthread_mutex_destroy(&h->h_pace_lock);
	free(h);
	return rc;
}

void hsm_close(struct hsm *h)
{
	if (h == NULL)
		return;
	sqlite3_close(h->h_db);
	pthread_mutex_destroy(&h->h_pace_lock);
	free(h);
}

int hsm_round(struct hsm *h, struct hsm_round_stats *st)
{
	struct hsm_obj *v = NULL;
	struct hsm_move *mv = NULL;
	uint32_t n = 0, mn = 0, mcap = 0;
	uint64_t now;
	int rc;

	memset(st, 0, sizeof *st);
	if (h->h_dry_run) {
		/* dry-run: whatever is folded in is rolled back at the end */
		rc = db_exec(h, "BEGIN IMMEDIATE");
		if (rc != 0)
			return rc;
	}
	rc = ingest(h, st);
	now = now_ns();
	/* the choice refreshes the ext rows of the objects it looks at: in
	 * one transaction (one sync; a dry run's is open already) */
	if (rc == 0 && !h->h_dry_run)
		rc = db_exec(h, "BEGIN IMMEDIATE");
	if (rc == 0)
		rc = objs_load(h, now, &v, &n);
	if (rc == 0)
		rc = pick_partials(h, v, n, &mv, &mn, &mcap);
	if (rc == 0)
		rc = pick_rules(h, v, n, now, &mv, &mn, &mcap);
	if (rc == 0)
		rc = pick_marks(h, v, n, &mv, &mn, &mcap);
	if (!h->h_dry_run && sqlite3_get_autocommit(h->h_db) == 0) {
		int r = rc == 0 ? db_exec(h, "COMMIT") :
				  db_exec(h, "ROLLBACK");

		rc = rc != 0 ? rc : r;
	}
	st->hr_picked = mn;
	if (rc == 0)
		rc = moves_do(h, mv, mn, st);
	if (rc == 0 && !h->h_dry_run) {
		sqlite3_stmt *s;
		uint64_t since = now > h->h_pol->hp_window_ns ?
				 now - h->h_pol->hp_window_ns : 0;

		rc = db_prep(h, "DELETE FROM reads WHERE t < ?1", &s);
		if (rc == 0) {
			sqlite3_bind_int64(s, 1, (int64_t)since);
			sqlite3_step(s);
			sqlite3_finalize(s);
		}
	}
	if (h->h_dry_run) {
		db_exec(h, "ROLLBACK");
		/* nothing acked: the next round reads the same records */
		clovis_fdmi_rewind(h->h_cl, h->h_consumer);
	}
	free(v);
	free(mv);
	return rc;
}

static const char *tier_col(sqlite3_stmt *st, int col)
{
	int64_t t = sqlite3_column_int64(st, col);

	return t >= 0 ? hsm_tier_name((uint32_t)t) : "-";
}

int hsm_actions(struct hsm *h, FILE *out, bool json)
{
	sqlite3_stmt *st;
	int rc = db_prep(h, "SELECT seq, t, hi, lo, why, from_tier, to_tier, "
			 "blocks, bytes, state, undo_of, msg, range_start, "
			 "range_blocks FROM action ORDER BY seq", &st);

	if (rc != 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct clovis_id id = {
			(uint64_t)sqlite3_column_int64(st, 2),
			(uint64_t)sqlite3_column_int64(st, 3)};
		char idt[CLOVIS_ID_STR_LEN];
		const char *why = (const char *)sqlite3_column_text(st, 4);
		const char *state = (const char *)sqlite3_column_text(st, 9);
		const char *msg = (const char *)sqlite3_column_text(st, 11);
		bool ranged = sqlite3_column_type(st, 12) != SQLITE_NULL;
		long long r0 = sqlite3_column_int64(st, 12);
		long long rn = sqlite3_column_int64(st, 13);
		char rj[80] = ", \"range_start\": null, \"range_blocks\": null";
		char rng[64] = "";

		clovis_id_format(&id, idt);
		if (ranged) {
			snprintf(rj, sizeof rj, ", \"range_start\": %lld, "
				 "\"range_blocks\": %lld", r0, rn);
			snprintf(rng, sizeof rng, " blocks %lld to %lld", r0,
				 r0 + rn - 1);
		}
		if (json)
			fprintf(out, "{\"action\": %lld, \"time_ns\": %lld, "
				"\"object\": \"%s\", \"why\": \"%s\", \"from\":"
				" \"%s\", \"to\": \"%s\", \"blocks\": %lld, "
				"\"bytes\": %lld, \"state\": \"%s\", "
				"\"undo_of\": %lld%s}\n",
				(long long)sqlite3_column_int64(st, 0),
				(long long)sqlite3_column_int64(st, 1), idt,
				why ? why : "", tier_col(st, 5),
				tier_col(st, 6),
				(long long)sqlite3_column_int64(st, 7),
				(long long)sqlite3_column_int64(st, 8),
				state ? state : "",
				(long long)sqlite3_column_int64(st, 10), rj);
		else
			fprintf(out, "%6lld  %s%s  %-5s -> %-5s  %10lld bytes  "
				"%-8s %s%s%s\n",
				(long long)sqlite3_column_int64(st, 0), idt,
				rng,
				tier_col(st, 5), tier_col(st, 6),
				(long long)sqlite3_column_int64(st, 8),
				state ? state : "", why ? why : "",
				msg && msg[0] ? ": " : "", msg ? msg : "");
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : db_err(h, rc, "action log");
}

static const char *layout_name(int64_t l)
{
	switch (l) {
	case CLOVIS_LAYOUT_PLAIN:
		return "plain";
	case CLOVIS_LAYOUT_PDCLUST:
		return "pdclust";
	case CLOVIS_LAYOUT_MIRROR:
		return "mirror";
	case CLOVIS_LAYOUT_COMPOSITE:
		return "composite";
	default:
		return "?";
	}
}

/* Print object id's catalog row and its heat in the window (hsm_catalog()). */
static int catalog_obj(struct hsm *h, const struct clovis_id *id, FILE *out,
		       bool json)
{
	static const char sql[] =
		"SELECT o.layout, o.size, o.wtime, o.rtime, o.tier, "
		"(SELECT COALESCE(SUM(n), 0) FROM reads WHERE hi = ?1 AND lo = "
		"?2 AND t >= ?3), (SELECT MIN(start) FROM reads WHERE hi = ?1 "
		"AND lo = ?2 AND t >= ?3), (SELECT MAX(start + blocks) FROM "
		"reads WHERE hi = ?1 AND lo = ?2 AND t >= ?3) FROM obj o WHERE "
		"o.hi = ?1 AND o.lo = ?2";
	uint64_t now = now_ns(), w = h->h_pol->hp_window_ns;
	char idt[CLOVIS_ID_STR_LEN], span[64] = "";
	long long hot0, hot1;
	sqlite3_stmt *st;
	bool known;
	int rc = db_prep(h, sql, &st);

	if (rc != 0)
		return rc;
	clovis_id_format(id, idt);
	sqlite3_bind_int64(st, 1, (int64_t)id->ci_hi);
	sqlite3_bind_int64(st, 2, (int64_t)id->ci_lo);
	sqlite3_bind_int64(st, 3, (int64_t)(now > w ? now - w : 0));
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(st);
		return rc == SQLITE_DONE ? err_set(-ENOENT, "HSM catalog: "
						   "object %s is not in the "
						   "catalog", idt) :
		       db_err(h, rc, "objects");
	}
	known = sqlite3_column_type(st, 6) != SQLITE_NULL;
	hot0 = sqlite3_column_int64(st, 6);
	hot1 = sqlite3_column_int64(st, 7);
	if (json && known)
		snprintf(span, sizeof span, "%lld, \"hot_end\": %lld", hot0,
			 hot1);
	else if (json)
		snprintf(span, sizeof span, "null, \"hot_end\": null");
	else if (known && hot1 > hot0)
		snprintf(span, sizeof span, " (blocks %lld to %lld)", hot0,
			 hot1 - 1);
	if (json)
		fprintf(out, "{\"object\": \"%s\", \"layout\": \"%s\", "
			"\"size\": %lld, \"tier\": \"%s\", \"wtime_ns\": %lld, "
			"\"rtime_ns\": %lld, \"heat\": %lld, \"hot_start\": "
			"%s, \"extents\": [", idt,
			layout_name(sqlite3_column_int64(st, 0)),
			(long long)sqlite3_column_int64(st, 1), tier_col(st, 4),
			(long long)sqlite3_column_int64(st, 2),
			(long long)sqlite3_column_int64(st, 3),
			(long long)sqlite3_column_int64(st, 5), span);
	else
		fprintf(out, "object %s: %s, %lld bytes, most on %s, %lld "
			"reads in the window%s\n", idt,
			layout_name(sqlite3_column_int64(st, 0)),
			(long long)sqlite3_column_int64(st, 1), tier_col(st, 4),
			(long long)sqlite3_column_int64(st, 5), span);
	sqlite3_finalize(st);
	return 0;
}

int hsm_catalog(struct hsm *h, const struct clovis_id *id, FILE *out,
		bool json)
{
	sqlite3_stmt *st;
	uint32_t n = 0;
	int rc = catalog_obj(h, id, out, json);

	if (rc == 0)
		rc = db_prep(h, "SELECT start, blocks, tier FROM ext WHERE "
			     "hi = ?1 AND lo = ?2 ORDER BY start", &st);
	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)id->ci_hi);
	sqlite3_bind_int64(st, 2, (int64_t)id->ci_lo);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		long long s = sqlite3_column_int64(st, 0);
		long long b = sqlite3_column_int64(st, 1);

		if (json)
			fprintf(out, "%s{\"start\": %lld, \"blocks\": %lld, "
				"\"tier\": \"%s\"}", n ? ", " : "", s, b,
				tier_col(st, 2));
		else
			fprintf(out, "%s%12lld %12lld  %s\n", n ? "" :
				"       start       blocks  tier\n", s, b,
				tier_col(st, 2));
		n++;
	}
	sqlite3_finalize(st);
	if (json)
		fprintf(out, "]}\n");
	else if (n == 0)
		fprintf(out, "no extents recorded (not composite, empty, or "
			"not looked at by a round yet)\n");
	return rc == SQLITE_DONE ? 0 : db_err(h, rc, "extents");
}

int hsm_undo(struct hsm *h, uint64_t seq)
{
	char why[64];
	struct hsm_round_stats rs = {0};
	struct hsm_obj o = {0};
	struct hsm_move m = {0};
	char state[16] = "";
	int64_t from = -1;
	bool ranged = false;
	uint64_t r0 = 0, rn = 0;
	sqlite3_stmt *st;
	int rc = db_prep(h, "SELECT hi, lo, chi, clo, from_tier, state, "
			 "range_start, range_blocks FROM action WHERE seq = ?1",
			 &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)seq);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 5);

		o.ho_id.ci_hi = (uint64_t)sqlite3_column_int64(st, 0);
		o.ho_id.ci_lo = (uint64_t)sqlite3_column_int64(st, 1);
		o.ho_cont.ci_hi = (uint64_t)sqlite3_column_int64(st, 2);
		o.ho_cont.ci_lo = (uint64_t)sqlite3_column_int64(st, 3);
		from = sqlite3_column_int64(st, 4);
		snprintf(state, sizeof state, "%s", s ? s : "");
		ranged = sqlite3_column_type(st, 6) != SQLITE_NULL;
		r0 = (uint64_t)sqlite3_column_int64(st, 6);
		rn = (uint64_t)sqlite3_column_int64(st, 7);
		rc = 0;
	} else {
		rc = rc == SQLITE_DONE ?
		     err_set(-ENOENT, "HSM undo: no action %" PRIu64, seq) :
		     db_err(h, rc, "action log");
	}
	sqlite3_finalize(st);
	if (rc != 0)
		return rc;
	if (strcmp(state, "failed") == 0 || strcmp(state, "undone") == 0)
		return err_set(-EINVAL, "HSM undo: action %" PRIu64 " is %s: "
			       "nothing to undo", seq, state);
	if (from < 0 || from >= CLOVIS_TIER_NR)
		return err_set(-EINVAL, "HSM undo: action %" PRIu64 " has no "
			       "from tier (the object held no block)", seq);
	o.ho_layout = CLOVIS_LAYOUT_COMPOSITE;
	o.ho_noted = true;
	/* the blocks the action moved (a promotion's hot span), else all */
	if (!obj_refresh(h, &o, (uint32_t)from, ranged ? HSM_SPAN_GIVEN :
			 HSM_SPAN_WHOLE, r0, rn))
		return err_set(-ENOENT, "HSM undo: action %" PRIu64 ": its "
			       "object is gone: %s", seq, clovis_errmsg());
	snprintf(why, sizeof why, "undo of action %" PRIu64, seq);
	move_init(&m, &o, (uint32_t)from, why);
	m.hm_undo_of = seq;
	rc = moves_do(h, &m, 1, &rs);
	if (rc == 0 && m.hm_rc == 0) {
		rc = db_prep(h, "UPDATE action SET state = 'undone' WHERE "
			     "seq = ?1", &st);
		if (rc == 0) {
			sqlite3_bind_int64(st, 1, (int64_t)seq);
			rc = sqlite3_step(st);
			rc = rc == SQLITE_DONE ? 0 : db_err(h, rc, "undo");
			sqlite3_finalize(st);
		}
	}
	if (rc == 0 && m.hm_rc != 0)
		rc = err_set(m.hm_rc, "HSM undo of action %" PRIu64 ": %s",
			     seq, m.hm_msg);
	return rc;
}
