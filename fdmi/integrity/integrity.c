/*
 * integrity.c — the integrity plugin's engine (contract in integrity.h,
 * design in README.md): the state file in SQLite, the ingestion of FDMI
 * records into the pending set, the rescan of a LAGGING consumer, and the
 * verification of an object by its scrub (clovis_obj_scrub()).
 *
 * The state file (one SQLite file, WAL journal, synchronous FULL):
 *   pending(hi, lo, chi, clo, wtime)  objects written and not verified
 *       since: their container and the commit time of their last write
 *   cursor(server, seq)   the last record folded in, per server: records
 *       at or below it are skipped (a crash between the commit and the
 *       ack redelivers them)
 *   meta(k, v)   "since": the newest record time folded in (a LAGGING
 *       consumer's rescan takes the objects modified from then on);
 *       "rescan": 1 while a rescan is under way
 *   log(seq, t, hi, lo, bytes, result)   every verification
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "fdmi/integrity/integrity.h"
#include "fdmi/plugin/plugin.h"

/* Records one next asks for. */
#define IG_BATCH 1024u
/* Objects one round checks (more: the rest next round). */
#define IG_ROUND_MAX 65536u
/* Ids one entity list asks for (the rescan). */
#define IG_LIST 256u

static const char ig_filter[] = "op=obj.write,obj.alloc,layer.move,obj.delete";

struct integ {
	struct clovis *g_cl;
	sqlite3 *g_db;
	char g_consumer[CLOVIS_FDMI_NAME_MAX + 1];
	uint64_t g_delay_ns;
	FILE *g_out;
};

/* The result of one check. */
enum chk_kind {
	CHK_OK,
	CHK_REPAIRED,
	CHK_UNREPAIRABLE,
	CHK_PLAIN,
	CHK_GONE,
	CHK_ERROR,   /* not checked now: stays pending */
};

struct chk {
	enum chk_kind ck_kind;
	uint64_t ck_bytes;
	char ck_text[320];
};

/* One pending object due for a check. */
struct due {
	struct clovis_id du_id;
	struct clovis_id du_cont;
	int64_t du_wtime;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ SQLite */

static int db_err(sqlite3 *db, int rc, const char *what)
{
	return err_set(rc == SQLITE_FULL ? -ENOSPC : -EIO,
		       "integrity state: %s: %s", what, sqlite3_errmsg(db));
}

static int db_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		rc = err_set(rc == SQLITE_FULL ? -ENOSPC : -EIO,
			     "integrity state: %s: %s", sql,
			     msg != NULL ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return rc;
	}
	return 0;
}

static int db_prep(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);

	return rc == SQLITE_OK ? 0 : db_err(db, rc, sql);
}

/* Run a prepared statement that returns no row, and finalize it. */
static int db_done(sqlite3 *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	rc = rc == SQLITE_DONE ? 0 : db_err(db, rc, what);
	sqlite3_finalize(st);
	return rc;
}

static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"PRAGMA synchronous=FULL;"
	"CREATE TABLE IF NOT EXISTS pending(hi INTEGER NOT NULL, lo INTEGER "
	"NOT NULL, chi INTEGER, clo INTEGER, wtime INTEGER, PRIMARY KEY(hi, "
	"lo));"
	"CREATE TABLE IF NOT EXISTS cursor(server TEXT PRIMARY KEY, seq "
	"INTEGER);"
	"CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v INTEGER);"
	"CREATE TABLE IF NOT EXISTS log(seq INTEGER PRIMARY KEY "
	"AUTOINCREMENT, t INTEGER, hi INTEGER, lo INTEGER, bytes INTEGER, "
	"result TEXT);";

static int meta_get(struct integ *g, const char *k, int64_t *v)
{
	sqlite3_stmt *st;
	int rc = db_prep(g->g_db, "SELECT v FROM meta WHERE k = ?1", &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
	*v = 0;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int64(st, 0);
	rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	     db_err(g->g_db, rc, "meta");
	sqlite3_finalize(st);
	return rc;
}

/* meta k = v; with max, only when v is higher. */
static int meta_set(struct integ *g, const char *k, int64_t v, bool max)
{
	sqlite3_stmt *st;
	int rc = db_prep(g->g_db, max ?
			 "INSERT INTO meta VALUES(?1, ?2) ON CONFLICT(k) DO "
			 "UPDATE SET v = MAX(v, ?2)" :
			 "INSERT INTO meta VALUES(?1, ?2) ON CONFLICT(k) DO "
			 "UPDATE SET v = ?2", &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, v);
	return db_done(g->g_db, st, "meta");
}

/* The object joins the pending set, or its write time moves on. */
static int pending_add(struct integ *g, const struct clovis_id *id,
		       const struct clovis_id *cont, uint64_t wtime)
{
	sqlite3_stmt *st;
	int rc = db_prep(g->g_db,
			 "INSERT INTO pending VALUES(?1, ?2, ?3, ?4, ?5) ON "
			 "CONFLICT(hi, lo) DO UPDATE SET chi = ?3, clo = ?4, "
			 "wtime = MAX(wtime, ?5)", &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)id->ci_hi);
	sqlite3_bind_int64(st, 2, (int64_t)id->ci_lo);
	sqlite3_bind_int64(st, 3, (int64_t)cont->ci_hi);
	sqlite3_bind_int64(st, 4, (int64_t)cont->ci_lo);
	sqlite3_bind_int64(st, 5, (int64_t)wtime);
	return db_done(g->g_db, st, "pending");
}

/* The object leaves the pending set (wtime >= 0: only if its last write
 * is still that one). */
static int pending_del(struct integ *g, const struct clovis_id *id,
		       int64_t wtime)
{
	sqlite3_stmt *st;
	int rc = db_prep(g->g_db, wtime < 0 ?
			 "DELETE FROM pending WHERE hi = ?1 AND lo = ?2" :
			 "DELETE FROM pending WHERE hi = ?1 AND lo = ?2 AND "
			 "wtime = ?3", &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)id->ci_hi);
	sqlite3_bind_int64(st, 2, (int64_t)id->ci_lo);
	if (wtime >= 0)
		sqlite3_bind_int64(st, 3, wtime);
	return db_done(g->g_db, st, "pending");
}

static uint64_t cursor_get(struct integ *g, const char *server)
{
	sqlite3_stmt *st;
	uint64_t v = 0;

	if (db_prep(g->g_db, "SELECT seq FROM cursor WHERE server = ?1",
		    &st) != 0)
		return 0;
	sqlite3_bind_text(st, 1, server, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int cursor_set(struct integ *g, const char *server, uint64_t seq)
{
	sqlite3_stmt *st;
	int rc = db_prep(g->g_db, "INSERT INTO cursor VALUES(?1, ?2) ON "
			 "CONFLICT(server) DO UPDATE SET seq = MAX(seq, ?2)",
			 &st);

	if (rc != 0)
		return rc;
	sqlite3_bind_text(st, 1, server, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)seq);
	return db_done(g->g_db, st, "cursor");
}

/* ----------------------------------------------------------- objects */

/* Open o, object id of container cont (c: its container's handle). */
static int obj_open(struct integ *g, const struct clovis_id *id,
		    const struct clovis_id *cont, struct clovis_container *c,
		    struct clovis_obj *o)
{
	return plugin_obj_open(g->g_cl, id, cont, c, o);
}

/* ------------------------------------------------------------ ingest */

/* Fold record r into the pending set. */
static int rec_fold(struct integ *g, const struct clovis_fdmi_rec *r)
{
	if (r->fr_type != CLOVIS_ET_OBJ)
		return 0;
	switch (r->fr_op) {
	case CLOVIS_FDMI_OBJ_WRITE:
	case CLOVIS_FDMI_OBJ_ALLOC:
	case CLOVIS_FDMI_LAYER_MOVE:
		return pending_add(g, &r->fr_id, &r->fr_container,
				   r->fr_time_ns);
	case CLOVIS_FDMI_OBJ_DELETE:
		return pending_del(g, &r->fr_id, -1);
	default:
		return 0;
	}
}

/* Fold batch b in one transaction with the cursors and "since". */
static int batch_fold(struct integ *g, struct clovis_fdmi_batch *b,
		      uint64_t *folded)
{
	uint32_t n = clovis_fdmi_batch_nr(b);
	int rc = db_exec(g->g_db, "BEGIN IMMEDIATE");

	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		struct clovis_fdmi_rec r;

		rc = clovis_fdmi_batch_rec(b, i, &r);
		if (rc != 0 || r.fr_seq <= cursor_get(g, r.fr_server))
			continue; /* folded in before a crash */
		rc = rec_fold(g, &r);
		if (rc == 0)
			rc = cursor_set(g, r.fr_server, r.fr_seq);
		if (rc == 0)
			rc = meta_set(g, "since", (int64_t)r.fr_time_ns, true);
		(*folded)++;
	}
	if (rc == 0)
		return db_exec(g->g_db, "COMMIT");
	db_exec(g->g_db, "ROLLBACK");
	return rc;
}

/* Every object of container cont modified at or after since: pending. */
static int rescan_container(struct integ *g, const struct clovis_id *cont,
			    uint64_t since, uint64_t *nr)
{
	struct clovis_id ids[IG_LIST], after;
	struct clovis_container c;
	struct clovis_realm *realm;
	bool first = true;
	uint32_t n;
	int rc;

	if (plugin_realm_of(g->g_cl, cont, &c, &realm) != 0)
		return 0; /* deleted meanwhile */
	do {
		n = IG_LIST;
		rc = clovis_entity_list(g->g_cl, realm, CLOVIS_ET_OBJ,
					first ? NULL : &after, ids, &n);
		first = false;
		for (uint32_t i = 0; rc == 0 && i < n; i++) {
			struct clovis_container c2;
			struct clovis_obj o;

			after = ids[i];
			if (obj_open(g, &ids[i], cont, &c2, &o) != 0 ||
			    o.ob_attr.oa_mtime_ns < since)
				continue;
			rc = pending_add(g, &ids[i], cont,
					 o.ob_attr.oa_mtime_ns);
			(*nr)++;
		}
	} while (rc == 0 && n > 0);
	return rc == -ENOENT ? 0 : rc;
}

/* The records since "since" were dropped (LAGGING): every object modified
 * from then on joins the pending set, and "since" moves to the scan's
 * start (what is modified after it comes as records).  The "rescan" mark,
 * set before the consumer is reset and cleared in the scan's own commit,
 * makes a rescan a crash cut short run again at the next open. */
static int rescan(struct integ *g, bool reset)
{
	struct clovis_id cids[IG_LIST], after;
	int64_t since = 0, t0 = (int64_t)now_ns();
	uint64_t nr = 0;
	bool first = true;
	uint32_t n;
	int rc = meta_set(g, "rescan", 1, false);

	if (rc == 0 && reset)
		rc = clovis_fdmi_reset(g->g_cl, g->g_consumer);
	if (rc == 0)
		rc = meta_get(g, "since", &since);
	if (rc == 0)
		rc = db_exec(g->g_db, "BEGIN IMMEDIATE");
	if (rc != 0)
		return rc;
	do {
		n = IG_LIST;
		rc = clovis_entity_list(g->g_cl, NULL, CLOVIS_ET_CONTAINER,
					first ? NULL : &after, cids, &n);
		first = false;
		for (uint32_t i = 0; rc == 0 && i < n; i++) {
			after = cids[i];
			rc = rescan_container(g, &cids[i], (uint64_t)since,
					      &nr);
		}
	} while (rc == 0 && n > 0);
	if (rc == 0)
		rc = meta_set(g, "since", t0, true);
	if (rc == 0)
		rc = meta_set(g, "rescan", 0, false);
	if (rc == 0)
		rc = db_exec(g->g_db, "COMMIT");
	else
		db_exec(g->g_db, "ROLLBACK");
	if (rc == 0)
		fprintf(g->g_out, "integrity: rescanned: %" PRIu64 " objects "
			"modified since the last record folded in are "
			"pending\n", nr);
	return rc;
}

/* Read every record the consumer has into the pending set; ack each batch
 * once committed.  A LAGGING consumer rescans and is reset. */
static int ingest(struct integ *g, struct integ_round_stats *st)
{
	for (uint32_t lagged = 0;;) {
		struct clovis_fdmi_batch *b = NULL;
		uint32_t n = 0;
		int rc = clovis_fdmi_next(g->g_cl, g->g_consumer, IG_BATCH, &b);

		if (rc == 0) {
			n = clovis_fdmi_batch_nr(b);
			rc = batch_fold(g, b, &st->ir_records);
			/* every batch, an empty one too: it covers the
			 * records the filter skipped */
			if (rc == 0)
				rc = clovis_fdmi_ack(g->g_cl, g->g_consumer, b);
			clovis_fdmi_batch_free(b);
			if (rc == 0 && n == 0)
				return 0;
		}
		if (rc == -ESTALE && lagged++ < 2) {
			fprintf(g->g_out, "integrity: consumer %s is LAGGING "
				"(records dropped past its bounds): rescanning "
				"the store\n", g->g_consumer);
			st->ir_rescan = true;
			rc = rescan(g, true);
		}
		if (rc != 0)
			return rc;
	}
}

/* ------------------------------------------------------------- check */

/* Does o hold checksums: a pdclust or mirror object, or a composite with
 * such a layer (plain objects and layers have none). */
static bool obj_checkable(struct clovis_obj *o)
{
	struct clovis_layer_info li[16];
	uint32_t nr = 16;

	if (o->ob_attr.oa_layout == CLOVIS_LAYOUT_PDCLUST ||
	    o->ob_attr.oa_layout == CLOVIS_LAYOUT_MIRROR)
		return true;
	if (o->ob_attr.oa_layout != CLOVIS_LAYOUT_COMPOSITE ||
	    clovis_obj_layer_list(o, li, &nr) != 0)
		return false;
	for (uint32_t i = 0; i < nr && i < 16; i++)
		if (li[i].li_attr.oa_layout == CLOVIS_LAYOUT_PDCLUST ||
		    li[i].li_attr.oa_layout == CLOVIS_LAYOUT_MIRROR)
			return true;
	return false;
}

/* Verify o (open): its scrub (clovis_obj_scrub(): every unit of its
 * pdclust and mirror layouts or layers read and checked, data, parity
 * and every copy; a damaged one rebuilt and rewritten before the call
 * returns), run by the object's home in cluster mode. */
static void obj_verify(struct integ *g, struct clovis_obj *o, struct chk *ck)
{
	struct clovis_walk_stats ws;
	int rc;

	(void)g;
	if (!obj_checkable(o)) {
		ck->ck_kind = CHK_PLAIN;
		snprintf(ck->ck_text, sizeof ck->ck_text, "not checkable (%s)",
			 o->ob_attr.oa_layout == CLOVIS_LAYOUT_COMPOSITE ?
			 "plain layers" : "plain");
		return;
	}
	rc = clovis_obj_scrub(o, &ws);
	if (rc == -EIO && ws.ws_unrepairable > 0) {
		/* the message names the first group that could not be
		 * rebuilt */
		ck->ck_kind = CHK_UNREPAIRABLE;
		snprintf(ck->ck_text, sizeof ck->ck_text, "unrepairable: %s",
			 clovis_errmsg());
		return;
	}
	if (rc != 0) {
		ck->ck_kind = rc == -ENOENT ? CHK_GONE : CHK_ERROR;
		snprintf(ck->ck_text, sizeof ck->ck_text, rc == -ENOENT ?
			 "gone (deleted)" : "not checked: %s (kept pending)",
			 clovis_errmsg());
		return;
	}
	ck->ck_kind = ws.ws_corrupt == 0 ? CHK_OK : CHK_REPAIRED;
	if (ck->ck_kind == CHK_OK)
		snprintf(ck->ck_text, sizeof ck->ck_text, "ok (%" PRIu64
			 " units)", ws.ws_units);
	else
		snprintf(ck->ck_text, sizeof ck->ck_text, "repaired %" PRIu64
			 " units", ws.ws_rebuilt);
}

/* Check one object (du). */
static void obj_check(struct integ *g, const struct due *du, struct chk *ck)
{
	struct clovis_container c;
	struct clovis_obj o;
	int rc = obj_open(g, &du->du_id, &du->du_cont, &c, &o);

	memset(ck, 0, sizeof *ck);
	if (rc != 0) {
		ck->ck_kind = rc == -ENOENT ? CHK_GONE : CHK_ERROR;
		snprintf(ck->ck_text, sizeof ck->ck_text, rc == -ENOENT ?
			 "gone (deleted)" : "not checked: %s (kept pending)",
			 clovis_errmsg());
		return;
	}
	ck->ck_bytes = o.ob_attr.oa_size_bytes;
	obj_verify(g, &o, ck);
}

/* The pending objects whose last write is at or before until. */
static int due_load(struct integ *g, uint64_t until, struct due **out,
		    uint32_t *n)
{
	sqlite3_stmt *st;
	uint32_t cap = 0;
	int rc = db_prep(g->g_db, "SELECT hi, lo, chi, clo, wtime FROM pending "
			 "WHERE wtime <= ?1 ORDER BY wtime LIMIT ?2", &st);

	*out = NULL;
	*n = 0;
	if (rc != 0)
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)until);
	sqlite3_bind_int64(st, 2, IG_ROUND_MAX);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct due *du;

		if (*n == cap) {
			void *p = realloc(*out, (cap ? 2 * cap : 64) *
					  sizeof **out);

			if (p == NULL) {
				sqlite3_finalize(st);
				return err_set(-ENOMEM, "integrity: pending");
			}
			*out = p;
			cap = cap ? 2 * cap : 64;
		}
		du = &(*out)[(*n)++];
		du->du_id.ci_hi = (uint64_t)sqlite3_column_int64(st, 0);
		du->du_id.ci_lo = (uint64_t)sqlite3_column_int64(st, 1);
		du->du_cont.ci_hi = (uint64_t)sqlite3_column_int64(st, 2);
		du->du_cont.ci_lo = (uint64_t)sqlite3_column_int64(st, 3);
		du->du_wtime = sqlite3_column_int64(st, 4);
	}
	rc = rc == SQLITE_DONE ? 0 : db_err(g->g_db, rc, "pending");
	sqlite3_finalize(st);
	return rc;
}

/* Log a check and take the object out of the pending set (unless it was
 * not checked), in one transaction. */
static int check_done(struct integ *g, const struct due *du,
		      const struct chk *ck)
{
	sqlite3_stmt *st;
	int rc = db_exec(g->g_db, "BEGIN IMMEDIATE");

	if (rc == 0)
		rc = db_prep(g->g_db, "INSERT INTO log(t, hi, lo, bytes, "
			     "result) VALUES(?1, ?2, ?3, ?4, ?5)", &st);
	if (rc == 0) {
		sqlite3_bind_int64(st, 1, (int64_t)now_ns());
		sqlite3_bind_int64(st, 2, (int64_t)du->du_id.ci_hi);
		sqlite3_bind_int64(st, 3, (int64_t)du->du_id.ci_lo);
		sqlite3_bind_int64(st, 4, (int64_t)ck->ck_bytes);
		sqlite3_bind_text(st, 5, ck->ck_text, -1, SQLITE_STATIC);
		rc = db_done(g->g_db, st, "log");
	}
	if (rc == 0 && ck->ck_kind != CHK_ERROR)
		rc = pending_del(g, &du->du_id, du->du_wtime);
	if (rc == 0)
		return db_exec(g->g_db, "COMMIT");
	db_exec(g->g_db, "ROLLBACK");
	return rc;
}

static void stats_add(struct integ_round_stats *st, const struct chk *ck)
{
	st->ir_checked++;
	switch (ck->ck_kind) {
	case CHK_OK:
		st->ir_ok++;
		break;
	case CHK_REPAIRED:
		st->ir_repaired++;
		break;
	case CHK_UNREPAIRABLE:
		st->ir_unrepairable++;
		break;
	case CHK_PLAIN:
		st->ir_plain++;
		break;
	case CHK_ERROR:
		st->ir_errors++;
		break;
	case CHK_GONE:
		break;
	}
}

static int pending_count(struct integ *g, uint64_t *n)
{
	sqlite3_stmt *st;
	int rc = db_prep(g->g_db, "SELECT count(*) FROM pending", &st);

	if (rc != 0)
		return rc;
	rc = sqlite3_step(st);
	*n = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(st, 0) : 0;
	rc = rc == SQLITE_ROW ? 0 : db_err(g->g_db, rc, "pending");
	sqlite3_finalize(st);
	return rc;
}

int integ_round(struct integ *g, struct integ_round_stats *st)
{
	struct due *v = NULL;
	uint64_t now;
	uint32_t n = 0;
	int rc;

	memset(st, 0, sizeof *st);
	rc = ingest(g, st);
	now = now_ns();
	if (rc == 0)
		rc = due_load(g, now > g->g_delay_ns ? now - g->g_delay_ns : 0,
			      &v, &n);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		char idt[CLOVIS_ID_STR_LEN];
		struct chk ck;

		obj_check(g, &v[i], &ck);
		fprintf(g->g_out, "%s %" PRIu64 " bytes: %s\n",
			clovis_id_format(&v[i].du_id, idt), ck.ck_bytes,
			ck.ck_text);
		fflush(g->g_out);
		stats_add(st, &ck);
		rc = check_done(g, &v[i], &ck);
	}
	if (rc == 0)
		rc = pending_count(g, &st->ir_pending);
	free(v);
	return rc;
}

/* ------------------------------------------------------ open, close */

static int db_open(const char *path, int flags, sqlite3 **db)
{
	int rc = sqlite3_open_v2(path, db, flags | SQLITE_OPEN_FULLMUTEX, NULL);

	if (rc != SQLITE_OK) {
		rc = err_set(-EIO, "integrity state %s: %s", path,
			     *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	sqlite3_busy_timeout(*db, 10000);
	return 0;
}

/* Was the consumer registered (before we register it)? */
static int consumer_known(struct integ *g, bool *known)
{
	struct clovis_fdmi_sub subs[64];
	uint32_t nr = 0;
	int rc = clovis_fdmi_list(g->g_cl, subs, 64, &nr);

	*known = false;
	for (uint32_t i = 0; rc == 0 && i < nr && i < 64; i++)
		if (strcmp(subs[i].fs_name, g->g_consumer) == 0)
			*known = true;
	return rc;
}

int integ_open(const struct integ_conf *c, struct integ **out)
{
	const char *name = c->ic_consumer ? c->ic_consumer : INTEG_CONSUMER;
	struct integ *g;
	bool fresh, known = false;
	int64_t rescanning = 0;
	int rc;

	if (strlen(name) > CLOVIS_FDMI_NAME_MAX)
		return err_set(-EINVAL, "integrity: consumer name \"%s\" "
			       "longer than %u", name, CLOVIS_FDMI_NAME_MAX);
	g = calloc(1, sizeof *g);
	if (g == NULL)
		return err_set(-ENOMEM, "integ_open");
	g->g_cl = c->ic_cl;
	g->g_delay_ns = c->ic_delay_ns;
	g->g_out = c->ic_out ? c->ic_out : stdout;
	snprintf(g->g_consumer, sizeof g->g_consumer, "%s", name);
	fresh = access(c->ic_state, F_OK) != 0;
	rc = db_open(c->ic_state, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
		     &g->g_db);
	if (rc == 0)
		rc = db_exec(g->g_db, schema);
	/* the first start: objects modified from now on */
	if (rc == 0 && fresh)
		rc = meta_set(g, "since", (int64_t)now_ns(), true);
	if (rc == 0)
		rc = consumer_known(g, &known);
	if (rc == 0)
		rc = clovis_fdmi_sub(g->g_cl, g->g_consumer, ig_filter, 0, 0, 0);
	if (rc == 0)
		rc = meta_get(g, "rescan", &rescanning);
	/* a rescan cut short, or a state file older than its consumer (it
	 * was removed meanwhile: the writes since were not recorded) */
	if (rc == 0 && (rescanning != 0 || (!fresh && !known)))
		rc = rescan(g, false);
	if (rc != 0) {
		sqlite3_close(g->g_db);
		free(g);
		return rc;
	}
	*out = g;
	return 0;
}

void integ_close(struct integ *g)
{
	if (g == NULL)
		return;
	sqlite3_close(g->g_db);
	free(g);
}

/* ---------------------------------------------------------------- log */

/* s as a JSON string body (quotes, backslashes and controls escaped). */
static void json_str(FILE *out, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
}

/* One line of the log: time (ns), id, bytes, result. */
static void log_line(FILE *out, bool json, uint64_t t, uint64_t hi,
		     uint64_t lo, int64_t bytes, const char *res)
{
	struct clovis_id id = {hi, lo};
	char idt[CLOVIS_ID_STR_LEN], ts[32];
	time_t sec = (time_t)(t / 1000000000ull);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
	clovis_id_format(&id, idt);
	if (!json) {
		fprintf(out, "%s %s %" PRId64 " bytes: %s\n", ts, idt, bytes,
			res);
		return;
	}
	fprintf(out, "{\"time_ns\": %" PRIu64 ", \"time\": \"%s\", \"id\": "
		"\"%s\", \"bytes\": %" PRId64 ", \"result\": \"", t, ts, idt,
		bytes);
	json_str(out, res);
	fprintf(out, "\"}\n");
}

int integ_log_print(const char *path, FILE *out, bool json)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	int rc, step;

	if (access(path, F_OK) != 0)
		return err_set(-ENOENT, "integrity state %s: no such file",
			       path);
	rc = db_open(path, SQLITE_OPEN_READONLY, &db);
	if (rc != 0)
		return rc;
	rc = db_prep(db, "SELECT t, hi, lo, bytes, result FROM log ORDER BY "
		     "seq", &st);
	if (rc != 0)
		goto out_close;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *res = (const char *)sqlite3_column_text(st, 4);

		log_line(out, json, (uint64_t)sqlite3_column_int64(st, 0),
			 (uint64_t)sqlite3_column_int64(st, 1),
			 (uint64_t)sqlite3_column_int64(st, 2),
			 sqlite3_column_int64(st, 3), res != NULL ? res : "");
	}
	rc = step == SQLITE_DONE ? 0 : db_err(db, step, "log");
	sqlite3_finalize(st);
out_close:
	sqlite3_close(db);
	return rc;
}
