/*
 * srv_dtx.c — the participant of distributed transactions (dtm/README.md,
 * protocol dtm/dtm.proto, codecs dtm/dtm_msg.c).
 *
 *   PREPARE   the members (ObjReq / IdxReq bodies, object data inline) are
 *             decoded and checked as the requests alone would be (entity,
 *             incarnation, this server is the object's home or an index
 *             replica allowed to order), then ONE LMDB commit writes the
 *             log record "dtx/<hlc>:<node>" = {PREPARED, participants, the
 *             PREPARE body}; the vote YES is sent after it is durable.
 *             Nothing is visible and no space is taken: the record holds
 *             the members themselves (their redo), so a restart needs
 *             nothing else.  A PREPARE above DTM_PREPARE_INLINE_MAX comes
 *             as an envelope whose call's bulk is the whole PREPARE, pulled
 *             (RMA) before anything is checked (h_prepare_bulk).  Index
 *             CREATE/DELETE members come to every live replica of the
 *             index; each applies it with its replica record.
 *   DECIDE    COMMIT: the members run through the engine with the hold
 *             hook (data written out of place, items held), then ONE
 *             commit item applies them all in a nested transaction, moves
 *             each index member's replica seq, and rewrites the record
 *             COMMITTED (without the members); after it is durable, index
 *             members are copied to the index's other live replicas with
 *             their seq (as a client's PUT would be).  ABORT: the record
 *             becomes ABORTED.  Both are idempotent.
 *   QUERY     state of the record; UNKNOWN is first logged ABORTED
 *             (dtm_query_answer), so a late PREPARE is refused.
 *   restart   srv_dtx_start() loads PREPARED records: in doubt.
 *   termination  a thread looks at in-doubt records every
 *             DTX_TERM_TICK_MS: past its due time (the coordinator's
 *             decision deadline announced in the PREPARE, wait_ms, plus
 *             DTX_TERM_MS; at once for records loaded at start), the deciding
 *             participant (parts[0]) aborts alone (dtm_term_decider: it is
 *             the commit point), the others ask the other participants
 *             (dtm_term_decide, with servers marked dead).
 *   trimming  decided records are kept DTX_KEEP_S for queries and `dtx ls`,
 *             at most DTX_KEEP_MAX of them (oldest first).
 *
 * Participants are homes (dtm/README.md "Participants are homes"): every
 * request names the home it addresses (DtxReq.home), and runs on the
 * engine that serves that home here (struct dhome): the server's own
 * engine for its own home, the engine it opened to act for a home taken
 * over (ha/srv_home.h, the s_route hook), else -EREMCHG.  The log records
 * of a home live in its store, so they travel with it to its standbys and
 * back; in-doubt lists are kept per home, and a home's are loaded from
 * its store the first time this server serves it on a given engine.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/eng_repl.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/fdmi_log.h"
#include "core/log.h"
#include "core/meta_txn.h"
#include "core/server/srv_internal.h"
#include "dtm/dtm_loc.h"
#include "dtm/dtm_msg.h"
#include "dtm/dtm_srv.h"

#define DTX_KEY_LEN 32u
#define DTX_DEAD_NAME "dtx-dead"

/* An in-doubt dtx of this server (memory; the record is the truth). */
struct pdtx {
	struct st_dtx_id pd_id;
	uint64_t pd_due_ms;    /* srv_now_ms() from which termination may act */
	struct pdtx *pd_next;
};

/* The in-doubt dtxs of one home served here (memory). */
struct dlist {
	struct pdtx *dl_doubt;
	uint32_t dl_nr;
	struct eng *dl_eng;       /* the engine they were loaded from (NULL:
				     none: the home is not served here) */
};

struct srv_dtx {
	struct srv *d_srv;
	pthread_mutex_t d_lock;   /* d_list, d_dead */
	struct dlist d_list[CLU_SERVERS_MAX]; /* by home */
	uint64_t d_dead;          /* servers marked dead (bit per server) */
	pthread_mutex_t d_idlock[DTX_LOCKS]; /* one dtx's state changes */
	pthread_t d_term;
	bool d_term_on;
	bool d_stop;
	pthread_cond_t d_cond;
	uint64_t d_trim_ms;
};

/* The participant of home h_home on this server: the engine that holds
 * the home's log and metadata, with s_route's reference on it. */
struct dhome {
	struct srv *h_srv;
	uint32_t h_home;
	struct eng *h_eng;
	void *h_ref;      /* NULL: the server's own engine */
};

static const char *home_name(const struct dhome *h)
{
	return h->h_srv->s_conf->cc_servers[h->h_home].cs_name;
}

/* ------------------------------------------------------------ records */

static uint64_t dtx_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void dtx_key(char *buf, const struct st_dtx_id *id)
{
	snprintf(buf, DTX_KEY_LEN, "dtx/%016" PRIx64 ":%08x", id->di_hlc,
		 id->di_node);
}

static pthread_mutex_t *id_lock(struct srv_dtx *d,
				const struct st_dtx_id *id)
{
	return &d->d_idlock[(id->di_hlc ^ id->di_node * 0x9e3779b9u) %
			    DTX_LOCKS];
}

/* A record read back: header, participants, and (PREPARED) the body. */
struct drec {
	struct dtm_rec r_h;
	uint16_t r_parts[DTM_PARTS_MAX];
	uint8_t *r_body;   /* malloc'd PREPARE body, or NULL */
	size_t r_body_len;
};

static void drec_fini(struct drec *r)
{
	free(r->r_body);
	r->r_body = NULL;
}

/* Read the record of id: 0 (r filled), -ENOENT, or an error. */
static int rec_get(const struct dhome *h, const struct st_dtx_id *id,
		   struct drec *r)
{
	struct meta *mt = eng_meta(h->h_eng);
	char key[DTX_KEY_LEN];
	struct meta_rec v;
	MDB_txn *txn;
	size_t hl;
	int rc = meta_rtxn_begin(mt, &txn, "dtx record: begin read");

	memset(r, 0, sizeof *r);
	if (rc != 0)
		return rc;
	dtx_key(key, id);
	rc = meta_get(txn, mt, META_T_SYS, key, strlen(key), &v,
		      "dtx record");
	if (rc != 0) {
		meta_rtxn_put(mt, txn);
		return rc;
	}
	rc = dtm_rec_decode(v.mc_val, v.mc_vlen, &r->r_h, r->r_parts);
	hl = sizeof r->r_h + r->r_h.dr_nr_parts * sizeof(uint16_t);
	if (rc == 0 && v.mc_vlen > hl) {
		r->r_body_len = v.mc_vlen - hl;
		r->r_body = malloc(r->r_body_len);
		if (r->r_body == NULL)
			rc = err_set(-ENOMEM, "dtx record %s", key);
		else
			memcpy(r->r_body, (const uint8_t *)v.mc_val + hl,
			       r->r_body_len);
	}
	meta_rtxn_put(mt, txn);
	return rc;
}

static uint32_t rec_state(const struct dhome *h, const struct st_dtx_id *id)
{
	struct drec r;
	int rc = rec_get(h, id, &r);

	drec_fini(&r);
	return rc == 0 ? r.r_h.dr_state : DTM_UNKNOWN;
}

/* Encode a record: header + participants (+ body). */
static int rec_encode(const struct st_dtx_id *id, uint32_t state,
		      const uint16_t *parts, uint32_t nr, const void *body,
		      size_t blen, uint8_t **out, size_t *out_len)
{
	struct dtm_rec h = {
		.dr_magic = DTM_REC_MAGIC, .dr_version = DTM_REC_VERSION,
		.dr_state = (uint8_t)state, .dr_nr_parts = (uint8_t)nr,
		.dr_hlc = id->di_hlc, .dr_node = id->di_node,
		.dr_coord = id->di_node,
		.dr_time_us = dtm_hlc_us(dtm_hlc_now()),
	};
	size_t hl = sizeof h + nr * sizeof(uint16_t);
	uint8_t *b = malloc(hl + blen);
	int rc;

	if (b == NULL)
		return err_set(-ENOMEM, "dtx record");
	rc = dtm_rec_encode(&h, parts, b, hl);
	if (rc < 0) {
		free(b);
		return rc;
	}
	if (blen > 0)
		memcpy(b + hl, body, blen);
	*out = b;
	*out_len = hl + blen;
	return 0;
}

/* A commit item run to its end (durable) on the calling thread. */
struct dwait {
	struct eng_citem w_ci;  /* first */
	pthread_mutex_t w_lock;
	pthread_cond_t w_cond;
	bool w_done;
	int w_rc;
	char w_key[DTX_KEY_LEN];
	struct st_dtx_id w_id;  /* COMMIT: for the FDMI records */
	uint8_t *w_val;
	size_t w_len;
	/* COMMIT: the members to apply first */
	struct pmem *w_m;
	uint32_t w_nr;
};

static void dwait_done(struct eng_citem *ci, int rc)
{
	struct dwait *w = (struct dwait *)ci;

	pthread_mutex_lock(&w->w_lock);
	w->w_done = true;
	w->w_rc = rc;
	pthread_cond_broadcast(&w->w_cond);
	pthread_mutex_unlock(&w->w_lock);
}

static int rec_put_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct dwait *w = (struct dwait *)ci;

	return meta_put(txn, eng_meta(e), META_T_SYS, w->w_key,
			strlen(w->w_key), w->w_val, w->w_len, "dtx record");
}

static int dwait_run(const struct dhome *h, struct dwait *w)
{
	pthread_mutex_init(&w->w_lock, NULL);
	pthread_cond_init(&w->w_cond, NULL);
	w->w_ci.ci_done = dwait_done;
	eng_commit_submit(h->h_eng, &w->w_ci);
	pthread_mutex_lock(&w->w_lock);
	while (!w->w_done)
		pthread_cond_wait(&w->w_cond, &w->w_lock);
	pthread_mutex_unlock(&w->w_lock);
	pthread_mutex_destroy(&w->w_lock);
	pthread_cond_destroy(&w->w_cond);
	if (w->w_rc != 0)
		return err_set(w->w_rc, "%s", w->w_ci.ci_msg);
	return 0;
}

/* Write the record of id durably (one commit). */
static int rec_put(const struct dhome *h, const struct st_dtx_id *id,
		   uint32_t state, const uint16_t *parts, uint32_t nr,
		   const void *body, size_t blen)
{
	struct dwait *w = calloc(1, sizeof *w);
	int rc;

	if (w == NULL)
		return err_set(-ENOMEM, "dtx record");
	rc = rec_encode(id, state, parts, nr, body, blen, &w->w_val,
			&w->w_len);
	if (rc == 0) {
		dtx_key(w->w_key, id);
		w->w_ci.ci_apply = rec_put_apply;
		rc = dwait_run(h, w);
	}
	eng_spacevec_fini(&w->w_ci.ci_alloc);
	eng_spacevec_fini(&w->w_ci.ci_freed);
	free(w->w_val);
	free(w);
	return rc;
}

/* ------------------------------------------------------------ in doubt */

/* In doubt from now; termination may act wait_ms + DTX_TERM_MS from now
 * (wait_ms: the coordinator's decision deadline, from its PREPARE), or at
 * once (now: loaded at a restart, the coordinator's calls were lost). */
static void doubt_add(struct srv_dtx *d, uint32_t home,
		      const struct st_dtx_id *id, bool now, uint32_t wait_ms)
{
	struct dlist *l = &d->d_list[home];
	struct pdtx *p = calloc(1, sizeof *p);

	if (p == NULL)
		return; /* found again at the next start */
	p->pd_id = *id;
	p->pd_due_ms = srv_now_ms() + (now ? 0 : (uint64_t)wait_ms +
				       DTX_TERM_MS);
	pthread_mutex_lock(&d->d_lock);
	for (struct pdtx *o = l->dl_doubt; o != NULL; o = o->pd_next)
		if (o->pd_id.di_hlc == id->di_hlc &&
		    o->pd_id.di_node == id->di_node) {
			/* loaded from the store and prepared meanwhile */
			pthread_mutex_unlock(&d->d_lock);
			free(p);
			return;
		}
	p->pd_next = l->dl_doubt;
	l->dl_doubt = p;
	l->dl_nr++;
	pthread_mutex_unlock(&d->d_lock);
}

static void doubt_del(struct srv_dtx *d, uint32_t home,
		      const struct st_dtx_id *id)
{
	struct dlist *l = &d->d_list[home];

	pthread_mutex_lock(&d->d_lock);
	for (struct pdtx **pp = &l->dl_doubt; *pp != NULL;
	     pp = &(*pp)->pd_next) {
		struct pdtx *p = *pp;

		if (p->pd_id.di_hlc == id->di_hlc &&
		    p->pd_id.di_node == id->di_node) {
			*pp = p->pd_next;
			l->dl_nr--;
			free(p);
			break;
		}
	}
	pthread_mutex_unlock(&d->d_lock);
}

/* Forget the in-doubt list of home (d_lock held): the home is no longer
 * served here on that engine (its records stay in its store). */
static void dlist_clear(struct dlist *l)
{
	while (l->dl_doubt != NULL) {
		struct pdtx *p = l->dl_doubt;

		l->dl_doubt = p->pd_next;
		free(p);
	}
	l->dl_nr = 0;
	l->dl_eng = NULL;
}

/* ------------------------------------------------------------ homes */

static int dtx_replay(struct srv_dtx *d, const struct dhome *h);

/*
 * The participant of home on this server: its engine, referenced until
 * dhome_put().  0, or -EREMCHG when this server does not serve that home
 * (the map has another server serving it, or this server has no map and
 * home is not its own), -EBUSY while it opens or hands back its store.
 * A home acted for here has its in-doubt list loaded from its store the
 * first time it is asked for on that engine (due at once: whoever
 * prepared it there is gone).
 */
static int dhome_get(struct srv_dtx *d, uint32_t home, struct dhome *h)
{
	struct srv *s = d->d_srv;
	struct dlist *l;
	bool load;
	int rc = 0;

	*h = (struct dhome){s, home, s->s_eng, NULL};
	if (home >= s->s_conf->cc_nr_servers)
		return err_set(-EINVAL, "dtx request: home %u (servers 0..%u)",
			       home, s->s_conf->cc_nr_servers - 1);
	if (s->s_route != NULL)
		rc = s->s_route(s->s_route_arg, home, &h->h_eng, &h->h_ref);
	if (rc == 0 && home != s->s_self && h->h_ref == NULL)
		rc = err_set(-EREMCHG, "dtx: server %s does not act for home "
			     "%s", s->s_me->cs_name, home_name(h));
	if (rc != 0) {
		h->h_ref = NULL;
		return rc;
	}
	if (home == s->s_self)
		return 0;
	pthread_mutex_lock(&d->d_lock);
	l = &d->d_list[home];
	load = l->dl_eng != h->h_eng;
	if (load) {
		dlist_clear(l);
		l->dl_eng = h->h_eng;
	}
	pthread_mutex_unlock(&d->d_lock);
	if (load && dtx_replay(d, h) != 0) {
		LOG_WARNING("dtx: server %s acting for home %s: its log not "
			    "loaded (tried again): %s", s->s_me->cs_name,
			    home_name(h), err_msg());
		pthread_mutex_lock(&d->d_lock);
		l->dl_eng = NULL;
		pthread_mutex_unlock(&d->d_lock);
	}
	return 0;
}

static void dhome_put(struct dhome *h)
{
	struct srv *s = h->h_srv;

	if (h->h_ref != NULL && s->s_route_put != NULL)
		s->s_route_put(s->s_route_arg, h->h_ref);
	h->h_ref = NULL;
}

/* ------------------------------------------------------------ members */

/* One member being checked or applied. */
struct pmem {
	struct msg_req pm_m;   /* first: &pm_m.mr_req.er_ci is its item */
	struct dwait *pm_w;
	pthread_mutex_t *pm_lock;
	pthread_cond_t *pm_cond;
	uint32_t *pm_ran;
	int pm_rc;
	bool pm_held;
	struct ridx *pm_ri;
	struct ridx_rec pm_rec; /* index members: the replica record after */
	uint64_t pm_term;       /* index members: version {term, seq} */
	uint64_t pm_seq;
	uint32_t pm_run;        /* index members: members from this one that
				   share its version and are copied as one
				   update (0: in the run of an earlier one) */
	struct ridx *pm_eri;    /* index CREATE/DELETE members: the replica */
	uint64_t pm_inc;        /* and the incarnation */
	const DtxMember *pm_src;
};


/* The entity record of id on this server, from a read transaction of its
 * own: 0, -ENOENT, or an error. */
static int pmem_ent_get(const struct dhome *h, const struct st_id *id,
			struct meta_ent *me)
{
	MDB_txn *txn;
	int rc;

	rc = meta_rtxn_begin(eng_meta(h->h_eng), &txn, "begin read");
	if (rc != 0)
		return rc;
	rc = meta_ent_get(txn, eng_meta(h->h_eng), id, me);
	meta_rtxn_put(eng_meta(h->h_eng), txn);
	return rc;
}
/* Member i is an index CREATE or DELETE (EntReq with SRF_INDEX |
 * SRF_REPLICA, the incarnation chosen by the coordinator): this server is
 * one of the index's replicas (each live replica is a participant and
 * applies it); CREATE: the index does not exist here; DELETE: it exists in
 * the incarnation the client opened. */
static int pmem_check_ient(const struct dhome *h, uint32_t i,
			   struct pmem *pm)
{
	struct srv *s = h->h_srv;
	struct msg_req *m = &pm->pm_m;
	struct eng_req *r = &m->mr_req;
	struct meta_ent me;
	int rc;

	if (m->mr_rflags != (SRF_INDEX | SRF_REPLICA) ||
	    m->mr_incarnation == 0)
		return err_set(-EINVAL, "member %u: index %s: %s without the "
			       "replica flags or an incarnation", i,
			       eng_id_str(&r->er_id), r->er_kind ==
			       ER_ENT_CREATE ? "CREATE" : "DELETE");
	if (!srv_ridx_mine(s, &r->er_id))
		return err_set(-EINVAL, "member %u: index %s: server %s is not "
			       "one of its replicas", i, eng_id_str(&r->er_id),
			       s->s_me->cs_name);
	pm->pm_eri = srv_ridx_find(s, &r->er_id);
	if (pm->pm_eri == NULL)
		return -ENOMEM;
	pm->pm_inc = m->mr_incarnation;
	rc = pmem_ent_get(h, &r->er_id, &me);
	if (rc != 0 && rc != -ENOENT)
		return rc;
	if (r->er_kind == ER_ENT_CREATE)
		return rc == -ENOENT ? 0 :
		       err_set(-EEXIST, "member %u: index %s: id already used "
			       "on server %s", i, eng_id_str(&r->er_id),
			       s->s_me->cs_name);
	if (rc == -ENOENT || me.me_type != ST_ET_IDX)
		return err_set(-ENOENT, "member %u: index %s does not exist "
			       "on server %s", i, eng_id_str(&r->er_id),
			       s->s_me->cs_name);
	if (srv_ridx_inc(s, pm->pm_eri, &me) != m->mr_incarnation)
		return err_set(-ENOENT, "member %u: index %s was deleted (and "
			       "made again) since this handle opened it", i,
			       eng_id_str(&r->er_id));
	r->er_ent.me_ctime_ns = me.me_ctime_ns;
	return 0;
}

/* Member i is an object CREATE or DELETE (EntReq): this server is the
 * object's home; CREATE: the object does not exist; DELETE: it exists in
 * the incarnation the client opened.  Or an index CREATE or DELETE
 * (pmem_check_ient). */
static int pmem_check_ent(const struct dhome *h, uint32_t i,
			  struct pmem *pm)
{
	struct srv *s = h->h_srv;
	struct msg_req *m = &pm->pm_m;
	struct eng_req *r = &m->mr_req;
	struct meta_ent me;
	int rc;

	if (r->er_type == ST_ET_IDX &&
	    (r->er_kind == ER_ENT_CREATE || r->er_kind == ER_ENT_DELETE))
		return pmem_check_ient(h, i, pm);
	if (r->er_type != ST_ET_OBJ ||
	    (r->er_kind != ER_ENT_CREATE && r->er_kind != ER_ENT_DELETE) ||
	    m->mr_rflags != 0)
		return err_set(-ENOTSUP, "member %u: entity %s: kind %u of "
			       "type %u in a dtx (object and index CREATE and "
			       "DELETE only)", i, eng_id_str(&r->er_id),
			       r->er_kind, r->er_type);
	if (clu_home(s->s_conf, &r->er_id) != h->h_home)
		return err_set(-EINVAL, "member %u: object %s: %s is not its "
			       "home", i, eng_id_str(&r->er_id), home_name(h));
	rc = pmem_ent_get(h, &r->er_id, &me);
	if (rc != 0 && rc != -ENOENT)
		return rc;
	if (r->er_kind == ER_ENT_CREATE)
		return rc == -ENOENT ? 0 :
		       err_set(-EEXIST, "member %u: object %s exists on "
			       "server %s", i, eng_id_str(&r->er_id),
			       s->s_me->cs_name);
	if (rc == -ENOENT || me.me_type != ST_ET_OBJ)
		return err_set(-ENOENT, "member %u: object %s does not exist "
			       "on server %s", i, eng_id_str(&r->er_id),
			       s->s_me->cs_name);
	if (me.me_ctime_ns != m->mr_incarnation)
		return err_set(-ENOENT, "member %u: object %s was deleted (and "
			       "made again) since this handle opened it", i,
			       eng_id_str(&r->er_id));
	r->er_ent.me_ctime_ns = me.me_ctime_ns;
	return 0;
}

/* Another member of the same participant on an entity that member i
 * creates or deletes: refused at the PREPARE, since at the COMMIT one of
 * them would fail after the others' participants applied theirs (an
 * update of an entity the dtx creates is checked against the store as it
 * was, as in embedded mode). */
static int pmem_check_pairs(const struct pmem *pm, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		const struct eng_req *a = &pm[i].pm_m.mr_req;

		if (pm[i].pm_src->op != SOP_ENT)
			continue;
		for (size_t j = 0; j < nr; j++) {
			const struct eng_req *b = &pm[j].pm_m.mr_req;

			if (j != i && st_id_cmp(&a->er_id, &b->er_id) == 0)
				return err_set(a->er_kind == ER_ENT_CREATE ?
					       -ENOENT : -EINVAL,
					       "member %zu: %s %s is %s by "
					       "member %zu of the same dtx", j,
					       a->er_type == ST_ET_IDX ?
					       "index" : "object",
					       eng_id_str(&b->er_id),
					       a->er_kind == ER_ENT_CREATE ?
					       "created" : "deleted", i);
		}
	}
	return 0;
}

/* Member i is an index PUT without ST_IF_OVERWRITE: every key must be
 * absent, else the whole dtx fails (-EEXIST naming the index and key; at
 * the PREPARE the vote is NO and nothing applies anywhere), as in
 * embedded mode: it must not commit with that record left out (clovis.h,
 * "Distributed transactions"). */
static int pmem_check_absent(const struct dhome *h, uint32_t i,
			     const struct pmem *pm)
{
	struct srv *s = h->h_srv;
	const struct eng_req *r = &pm->pm_m.mr_req;
	struct meta *me = eng_meta(h->h_eng);
	char ks[DTM_KEY_STR_LEN];
	MDB_txn *txn;
	int rc = meta_rtxn_begin(me, &txn, "begin read");

	if (rc != 0)
		return rc;
	for (uint32_t k = 0; rc == 0 && k < r->er_keys->bv_nr; k++) {
		uint8_t kb[16 + ST_KEY_MAX];
		struct meta_rec v;

		meta_idx_key(kb, &r->er_id, r->er_keys->bv_buf[k],
			     r->er_keys->bv_len[k]);
		rc = meta_get(txn, me, META_T_IDX, kb,
			      16 + r->er_keys->bv_len[k], &v, "index get");
		if (rc == -ENOENT) {
			rc = 0;
			continue;
		}
		rc = rc != 0 ? rc :
		     err_set(-EEXIST, "member %u: index %s: key %s (record "
			     "%u) exists (PUT without CLOVIS_IF_OVERWRITE) on "
			     "server %s", i, eng_id_str(&r->er_id),
			     dtm_key_str(ks, sizeof ks, r->er_keys->bv_buf[k],
					 r->er_keys->bv_len[k]), k,
			     s->s_me->cs_name);
	}
	meta_rtxn_put(me, txn);
	return rc;
}

/* Decode member i and check it against the store: entity and incarnation,
 * kind, and that this server may apply it (object home, index replica
 * allowed to order). */
static int pmem_check(const struct dhome *h, const DtxMember *src,
		      uint32_t i, struct pmem *pm)
{
	struct srv *s = h->h_srv;
	struct msg_req *m = &pm->pm_m;
	struct eng_req *r = &m->mr_req;
	const struct clu_conf *c = s->s_conf;
	struct meta_ent me;
	int rc = msg_req_decode(m, src->op, src->body.data, src->body.len,
				src->op == SOP_OBJ ? src->data.len : 0);

	pm->pm_src = src;
	if (rc != 0)
		return err_set(rc, "member %u: %s", i, err_msg());
	r->er_eng = h->h_eng;
	if (h->h_home != s->s_self &&
	    (src->op == SOP_IDX || (src->op == SOP_ENT &&
				    r->er_type == ST_ET_IDX)))
		return err_set(-EHOSTDOWN, "member %u: index %s: the replica "
			       "on %s is not served while another server "
			       "acts for its home", i, eng_id_str(&r->er_id),
			       home_name(h));
	if (src->op == SOP_ENT)
		return pmem_check_ent(h, i, pm);
	if (src->op != SOP_OBJ && src->op != SOP_IDX)
		return err_set(-EINVAL, "member %u: opcode %u in a dtx", i,
			       src->op);
	if (src->op == SOP_OBJ && r->er_kind != ER_OBJ_WRITE &&
	    r->er_kind != ER_OBJ_ALLOC && r->er_kind != ER_OBJ_FREE)
		return err_set(-ENOTSUP, "member %u: object %s: kind %u in a "
			       "dtx", i, eng_id_str(&r->er_id), r->er_kind);
	if (src->op == SOP_IDX && r->er_kind != ER_IDX_PUT &&
	    r->er_kind != ER_IDX_DEL)
		return err_set(-ENOTSUP, "member %u: index %s: kind %u in a "
			       "dtx", i, eng_id_str(&r->er_id), r->er_kind);
	if (src->op == SOP_IDX && m->mr_recs == NULL && m->mr_recs_len > 0)
		return err_set(-EINVAL, "member %u: index %s: records not "
			       "inline", i, eng_id_str(&r->er_id));
	if (src->op == SOP_IDX && m->mr_recs == NULL) {
		m->mr_recs = malloc(1);
		if (m->mr_recs == NULL)
			return err_set(-ENOMEM, "member %u", i);
		msg_req_recs_bind(m);
	}
	rc = pmem_ent_get(h, &r->er_id, &me);
	if (rc == -ENOENT ||
	    (rc == 0 && me.me_type != (src->op == SOP_OBJ ? ST_ET_OBJ
							  : ST_ET_IDX)))
		return err_set(-ENOENT, "member %u: %s %s does not exist on "
			       "server %s", i, src->op == SOP_OBJ ? "object" :
			       "index", eng_id_str(&r->er_id),
			       s->s_me->cs_name);
	if (rc != 0)
		return rc;
	if (src->op == SOP_OBJ) {
		if (clu_home(c, &r->er_id) != h->h_home)
			return err_set(-EINVAL, "member %u: object %s: %s is "
				       "not its home", i,
				       eng_id_str(&r->er_id), home_name(h));
		if (me.me_ctime_ns != m->mr_incarnation)
			return err_set(-ENOENT, "member %u: object %s was "
				       "deleted (and made again) since this "
				       "handle opened it", i,
				       eng_id_str(&r->er_id));
		r->er_ent = me;
		if (r->er_kind == ER_OBJ_WRITE) {
			uint32_t sh = me.me_block_shift;

			if ((m->mr_blocks << sh) != src->data.len ||
			    m->mr_blocks > (ST_OP_BYTES_MAX >> sh))
				return err_set(-EINVAL, "member %u: object %s:"
					       " %" PRIu64 " blocks of %u "
					       "bytes but %zu bytes of data",
					       i, eng_id_str(&r->er_id),
					       m->mr_blocks, 1u << sh,
					       src->data.len);
			m->mr_data_len = src->data.len;
			m->mr_databuf[0] = src->data.data;
			m->mr_datalen[0] = src->data.len;
			m->mr_databv = (struct st_bufvec){
				1, m->mr_databuf, m->mr_datalen};
			r->er_data = &m->mr_databv;
		}
		return 0;
	}
	pm->pm_ri = srv_ridx_find(s, &r->er_id);
	if (pm->pm_ri == NULL)
		return -ENOMEM;
	{
		uint64_t inc;

		pthread_mutex_lock(&s->s_rlock);
		inc = pm->pm_ri->ri_exists ? pm->pm_ri->ri_inc
					   : me.me_ctime_ns;
		pthread_mutex_unlock(&s->s_rlock);
		if (m->mr_incarnation != inc)
			return err_set(-ENOENT, "member %u: index %s was "
				       "deleted (and made again) since this "
				       "handle opened it", i,
				       eng_id_str(&r->er_id));
	}
	r->er_ent.me_ctime_ns = me.me_ctime_ns;
	if (r->er_kind == ER_IDX_PUT && !(r->er_flags & ST_IF_OVERWRITE))
		return pmem_check_absent(h, i, pm);
	return 0;
}

static void pmem_fini(struct pmem *pm)
{
	struct eng_citem *ci = &pm->pm_m.mr_req.er_ci;

	/* object data points into the request: not the msg_req's own */
	if (pm->pm_m.mr_data == NULL)
		pm->pm_m.mr_req.er_data = NULL;
	msg_req_fini(&pm->pm_m);
	eng_unit_req_fini(&pm->pm_m.mr_req);
	eng_spacevec_fini(&ci->ci_alloc);
	eng_spacevec_fini(&ci->ci_freed);
}

/* ------------------------------------------------------------ commit */

static void pmem_ran(struct pmem *pm, int rc, bool held)
{
	pthread_mutex_lock(pm->pm_lock);
	pm->pm_rc = rc;
	pm->pm_held = held;
	(*pm->pm_ran)++;
	pthread_cond_broadcast(pm->pm_cond);
	pthread_mutex_unlock(pm->pm_lock);
}

static void pmem_hold(struct eng_citem *ci)
{
	pmem_ran((struct pmem *)ci, 0, true);
}

static void pmem_done(struct eng_citem *ci, int rc)
{
	struct pmem *pm = (struct pmem *)ci;

	snprintf(pm->pm_w->w_ci.ci_msg, sizeof pm->pm_w->w_ci.ci_msg, "%s",
		 ci->ci_msg);
	pmem_ran(pm, rc < 0 ? rc : -EIO, false);
}

/* Member i of the COMMIT whose commit item is dwait arg. */
static struct eng_citem *dwait_member(void *arg, uint32_t i)
{
	return &((struct dwait *)arg)->w_m[i].pm_m.mr_req.er_ci;
}

/* The commit item of a COMMIT: apply every member in a nested
 * transaction, their replica records, and the record COMMITTED. */
static int commit_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct dwait *w = (struct dwait *)ci;
	MDB_txn *child;
	int rc = meta_ntxn_begin(eng_meta(e), txn, &child,
				 "dtx nested transaction");

	if (rc != 0)
		return rc;
	/* the members' FDMI records carry the dtx's id, and one more
	 * record says it committed here (core/fdmi_log.h) */
	eng_fdmi_dtx_set(&w->w_id);
	for (uint32_t i = 0; rc == 0 && i < w->w_nr; i++) {
		struct eng_citem *mci = &w->w_m[i].pm_m.mr_req.er_ci;

		mci->ci_hard = false;
		mci->ci_freed.sv_nr = 0;
		mci->ci_msg[0] = '\0';
		rc = mci->ci_apply(e, child, mci);
		if (rc != 0)
			snprintf(ci->ci_msg, sizeof ci->ci_msg, "member %u: "
				 "%.200s", i, mci->ci_msg[0] ? mci->ci_msg
							     : err_msg());
		if (rc == 0 && w->w_m[i].pm_ri != NULL)
			rc = srv_ridx_store(e, child, &w->w_m[i].pm_m,
					    &w->w_m[i].pm_rec,
					    w->w_m[i].pm_term,
					    w->w_m[i].pm_seq);
		if (rc == 0 && w->w_m[i].pm_eri != NULL)
			rc = srv_ridx_ent_store(e, child,
						&w->w_m[i].pm_m.mr_req.er_id,
						w->w_m[i].pm_m.mr_req.er_kind,
						w->w_m[i].pm_inc);
	}
	if (rc == 0)
		rc = rec_put_apply(e, child, ci);
	if (rc == 0 && eng_fdmi_on(e)) {
		struct fdmi_rec fr = {0};

		fr.fr_op = FDMI_DTX_COMMIT;
		fr.fr_size = w->w_nr;
		rc = eng_fdmi_emit(e, child, &fr, NULL);
	}
	eng_fdmi_dtx_set(NULL);
	if (rc != 0) {
		meta_txn_abort(child);
		return rc;
	}
	rc = meta_ntxn_commit(child, "dtx nested commit");
	if (rc != 0) {
		ci->ci_hard = true;
		return rc;
	}
	if (FAULT_HIT("dtx.part.apply")) {
		LOG_WARNING("fault point dtx.part.apply: SIGKILL");
		raise(SIGKILL); /* applied in the batch, not committed */
	}
	return dtm_freed_take(ci, dwait_member, w, w->w_nr);
}

/* Records and bytes of index member pm. */
static void pmem_recs(const struct pmem *pm, uint32_t *recs, size_t *bytes)
{
	const struct eng_req *r = &pm->pm_m.mr_req;

	*recs = r->er_keys->bv_nr;
	*bytes = 0;
	for (uint32_t k = 0; k < r->er_keys->bv_nr; k++)
		*bytes += r->er_keys->bv_len[k] +
			  (r->er_vals != NULL ? r->er_vals->bv_len[k] : 0);
}

/* Can index member b join the run of index member a: the same index,
 * kind (PUT or DEL), flags and incarnation? */
static bool run_joins(const struct pmem *a, const struct pmem *b)
{
	const struct eng_req *x = &a->pm_m.mr_req, *y = &b->pm_m.mr_req;

	return a->pm_ri != NULL && a->pm_ri == b->pm_ri &&
	       st_id_cmp(&x->er_id, &y->er_id) == 0 &&
	       (x->er_kind == ER_IDX_PUT || x->er_kind == ER_IDX_DEL) &&
	       y->er_kind == x->er_kind && y->er_flags == x->er_flags &&
	       a->pm_m.mr_incarnation == b->pm_m.mr_incarnation;
}

/* Does a key of member i occur in members [h, i)?  (One update carries
 * each key once: a run ends before a member that repeats a key.) */
static bool run_has_key(const struct pmem *pm, uint32_t h, uint32_t i)
{
	const struct st_bufvec *ki = pm[i].pm_m.mr_req.er_keys;

	for (uint32_t m = h; m < i; m++) {
		const struct st_bufvec *km = pm[m].pm_m.mr_req.er_keys;

		for (uint32_t a = 0; a < ki->bv_nr; a++)
			for (uint32_t b = 0; b < km->bv_nr; b++)
				if (ki->bv_len[a] == km->bv_len[b] &&
				    memcmp(ki->bv_buf[a], km->bv_buf[b],
					   ki->bv_len[a]) == 0)
					return true;
	}
	return false;
}

/* Group the members into runs (pm_run): consecutive index members of one
 * index that one update can carry (run_joins, no key twice, at most
 * DTX_FWD_RECS_MAX records and MSG_RECS_INLINE bytes).  A run is ordered
 * as one update (one version, as a PUT of many records) and copied to
 * each other replica in one call, so a COMMIT of many members pays one
 * durable update per replica per run, not per member. */
static void runs_make(struct pmem *pm, uint32_t nr)
{
	uint32_t h = 0, recs = 0, r;
	size_t bytes = 0, b;

	for (uint32_t i = 0; i < nr; i++) {
		pm[i].pm_run = 1;
		if (pm[i].pm_ri == NULL)
			continue;
		pmem_recs(&pm[i], &r, &b);
		if (i > 0 && h < i && pm[h].pm_run > 0 &&
		    run_joins(&pm[h], &pm[i]) && h + pm[h].pm_run == i &&
		    recs + r <= DTX_FWD_RECS_MAX &&
		    bytes + b <= MSG_RECS_INLINE && !run_has_key(pm, h, i)) {
			pm[h].pm_run++;
			pm[i].pm_run = 0;
			recs += r;
			bytes += b;
			continue;
		}
		h = i;
		recs = r;
		bytes = b;
	}
}

/* The records of the run of nr members from pm into q (its own lengths
 * and records replaced: the caller restores them before freeing q).
 * *lens and *recs: the arrays, the caller's to free. */
static int run_req(IdxReq *q, const struct pmem *pm, uint32_t nr,
		   uint32_t **lens, uint8_t **recs)
{
	bool vals = pm->pm_m.mr_req.er_vals != NULL;
	uint32_t n = 0, k = 0, r;
	size_t bytes = 0, b, off = 0;

	for (uint32_t m = 0; m < nr; m++) {
		pmem_recs(&pm[m], &r, &b);
		n += r;
		bytes += b;
	}
	*lens = malloc(2u * n * sizeof **lens);
	*recs = malloc(bytes ? bytes : 1);
	if (*lens == NULL || *recs == NULL)
		return err_set(-ENOMEM, "dtx: index %s: copy of %u records",
			       eng_id_str(&pm->pm_m.mr_req.er_id), n);
	for (uint32_t m = 0; m < nr; m++) {
		const struct st_bufvec *kv = pm[m].pm_m.mr_req.er_keys;

		for (uint32_t a = 0; a < kv->bv_nr; a++, k++) {
			(*lens)[k] = (uint32_t)kv->bv_len[a];
			memcpy(*recs + off, kv->bv_buf[a], kv->bv_len[a]);
			off += kv->bv_len[a];
		}
	}
	for (uint32_t m = 0, v = n; vals && m < nr; m++) {
		const struct st_bufvec *vv = pm[m].pm_m.mr_req.er_vals;

		for (uint32_t a = 0; a < vv->bv_nr; a++, v++) {
			(*lens)[v] = (uint32_t)vv->bv_len[a];
			memcpy(*recs + off, vv->bv_buf[a], vv->bv_len[a]);
			off += vv->bv_len[a];
		}
	}
	q->nr = n;
	q->n_klen = n;
	q->klen = *lens;
	q->n_vlen = vals ? n : 0;
	q->vlen = vals ? *lens + n : NULL;
	q->recs.data = *recs;
	q->recs.len = bytes;
	return 0;
}

/* Copy the run of index members from pm (pm->pm_run of them) to server
 * j, one of the index's other replicas, with its version (term, seq), as
 * a client copies an ordinary PUT/DEL.  True when j has it. */
static bool forward_idx(struct srv *s, struct pmem *pm, uint32_t j)
{
	const struct clu_conf *c = s->s_conf;
	const struct st_id *id = &pm->pm_m.mr_req.er_id;
	IdxReq *q = idx_req__unpack(NULL, pm->pm_src->body.len,
				    pm->pm_src->body.data);
	IdxReq keep;
	struct msg_buf b = {0};
	struct rpc_result res = {0};
	uint32_t *lens = NULL;
	uint8_t *recs = NULL;
	bool ok = false;

	if (q == NULL)
		return false;
	keep = *q;
	q->rflags = SRF_REPLICA;
	q->seq = pm->pm_seq;
	q->term = pm->pm_term;
	if (FAULT_HIT("dtx.part.fwd.slow"))
		usleep(DTX_FWD_SLOW_US);
	if ((pm->pm_run <= 1 || run_req(q, pm, pm->pm_run, &lens,
					&recs) == 0) &&
	    msg_pack(&q->base, &b) == 0) {
		if (peers_call_ms(s->s_peers, j, SOP_IDX, b.mb_p, b.mb_len,
				  NULL, DTX_FWD_MS, &res) != 0)
			LOG_INFO("dtx: index %s: replica on %s missed an "
				 "update: %s", eng_id_str(id),
				 c->cc_servers[j].cs_name, err_msg());
		else
			ok = true;
		free(res.rr_body);
	}
	q->nr = keep.nr;
	q->n_klen = keep.n_klen;
	q->klen = keep.klen;
	q->n_vlen = keep.n_vlen;
	q->vlen = keep.vlen;
	q->recs = keep.recs;
	free(lens);
	free(recs);
	free(b.mb_p);
	idx_req__free_unpacked(q, NULL);
	return ok;
}

/* Is server j one of the other replicas of index member pm? */
static bool forward_to(struct srv *s, const struct pmem *pm, uint32_t j)
{
	const struct clu_conf *c = s->s_conf;
	uint32_t n = c->cc_nr_servers, r = c->cc_replicas < n ?
		     c->cc_replicas : n;

	return pm->pm_ri != NULL && j != s->s_self &&
	       (j + n - clu_home(c, &pm->pm_m.mr_req.er_id)) % n < r;
}

struct fwd_job {
	struct srv *f_srv;
	struct pmem *f_pm;
	uint32_t f_nr;
	uint32_t f_server;
	uint64_t *f_missed;     /* per member: replicas without the copy */
	uint64_t *f_got;        /* and with it */
	uint32_t f_copies;      /* copies sent to f_server */
	uint32_t f_max_ms;      /* the slowest of them */
	pthread_t f_th;
	bool f_started;
};

/* Every index member replicated on server f_server, in member (seq)
 * order: one durable update there after the other. */
static void *fwd_main(void *arg)
{
	struct fwd_job *f = arg;
	uint64_t bit = 1ull << f->f_server;

	srv_thread_enter();
	for (uint32_t i = 0, run; i < f->f_nr; i += run) {
		uint64_t t0 = dtx_mono_ms();
		bool ok;

		run = f->f_pm[i].pm_run > 0 ? f->f_pm[i].pm_run : 1;
		if (!forward_to(f->f_srv, &f->f_pm[i], f->f_server))
			continue;
		ok = peers_live(f->f_srv->s_peers, f->f_server) &&
		     forward_idx(f->f_srv, &f->f_pm[i], f->f_server);
		f->f_copies++;
		if (dtx_mono_ms() - t0 > f->f_max_ms)
			f->f_max_ms = (uint32_t)(dtx_mono_ms() - t0);
		for (uint32_t k = i; k < i + run; k++)
			__atomic_or_fetch(ok ? &f->f_got[k] : &f->f_missed[k],
					  bit, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Copy the index members of a COMMIT to their other live replicas: one
 * thread per other server, so the servers apply their copies at once
 * while each gets them in seq order.  Then, before the COMMIT is
 * answered, the replicas that missed a copy are marked behind
 * (srv_ridx_missed, docs/cluster.md "Replicas that missed updates").
 * *copies: how many were sent, *max_ms: the slowest one. */
static void forward_all(struct srv *s, struct pmem *pm, uint32_t nr,
			uint32_t *copies, uint32_t *max_ms)
{
	uint32_t n = s->s_conf->cc_nr_servers;
	struct fwd_job *f = calloc(n, sizeof *f);
	uint64_t *missed = calloc(nr ? nr : 1, sizeof *missed);
	uint64_t *got = calloc(nr ? nr : 1, sizeof *got);

	for (uint32_t j = 0; j < n; j++) {
		bool any = false;

		for (uint32_t i = 0; i < nr && !any; i++)
			any = forward_to(s, &pm[i], j);
		if (!any)
			continue;
		if (f == NULL || missed == NULL || got == NULL) {
			/* no memory: every copy missed, marked below */
			for (uint32_t i = 0; missed != NULL && i < nr; i++)
				if (forward_to(s, &pm[i], j))
					missed[i] |= 1ull << j;
			continue;
		}
		f[j] = (struct fwd_job){s, pm, nr, j, missed, got, 0, 0, 0,
					false};
		f[j].f_started = pthread_create(&f[j].f_th, NULL, fwd_main,
						&f[j]) == 0;
		if (!f[j].f_started)
			fwd_main(&f[j]);
	}
	*copies = *max_ms = 0;
	for (uint32_t j = 0; f != NULL && j < n; j++) {
		if (f[j].f_started)
			pthread_join(f[j].f_th, NULL);
		*copies += f[j].f_copies;
		if (f[j].f_max_ms > *max_ms)
			*max_ms = f[j].f_max_ms;
	}
	for (uint32_t i = 0; missed != NULL && i < nr; i++)
		if (missed[i] != 0)
			srv_ridx_missed(s, pm[i].pm_ri, missed[i],
					got != NULL ? got[i] : 0,
					pm[i].pm_term, pm[i].pm_seq);
	free(missed);
	free(got);
	free(f);
}

/* The group lock slots of the unit-layout (pdclust, mirror) object
 * members of pm, composite writes aimed at their top layer first
 * (stripe_reqs_locks: -EINVAL when two update one parity
 * group of one object).  With take, they are taken (eng_glock) and the
 * members marked er_glocked; else only computed (the PREPARE's check).
 * 0 or a negative code. */
static int pmem_glock_slots(const struct dhome *h, struct pmem *pm,
			    uint32_t nr, bool take, uint32_t **locks,
			    uint32_t *nlocks)
{
	struct eng_req **reqs = calloc(nr ? nr : 1, sizeof *reqs);
	uint32_t bad;
	bool any = false;
	int rc;

	*locks = NULL;
	*nlocks = 0;
	if (reqs == NULL)
		return err_set(-ENOMEM, "dtx group locks");
	/* a composite WRITE is aimed at its top layer first: that layer's
	 * groups join the set (comp_resolve) */
	rc = 0;
	for (uint32_t i = 0; rc == 0 && i < nr; i++)
		if (pm[i].pm_src->op == SOP_OBJ)
			rc = comp_resolve(h->h_eng, &pm[i].pm_m.mr_req);
	if (rc != 0) {
		free(reqs);
		return rc;
	}
	for (uint32_t i = 0; i < nr; i++)
		if (pm[i].pm_src->op == SOP_OBJ &&
		    stripe_layout(pm[i].pm_m.mr_req.er_ent.me_layout)) {
			reqs[i] = &pm[i].pm_m.mr_req;
			any = true;
		}
	rc = any ? eng_unit_reqs_locks(h->h_eng, reqs, nr, locks, nlocks, &bad)
		 : 0;
	if (rc != 0) {
		char m[LIM_ERRMSG_LEN];

		snprintf(m, sizeof m, "%s", err_msg());
		rc = err_set(rc, "members %s", m + (strncmp(m, "ops ", 4) ?
							 0 : 4));
	}
	if (rc == 0 && take && *nlocks > 0) {
		eng_glock(h->h_eng, *locks, *nlocks);
		for (uint32_t i = 0; i < nr; i++)
			if (reqs[i] != NULL)
				reqs[i]->er_glocked = true;
	}
	free(reqs);
	return rc;
}

static int pmem_glock(const struct dhome *h, struct pmem *pm, uint32_t nr,
		      uint32_t **locks, uint32_t *nlocks)
{
	return pmem_glock_slots(h, pm, nr, true, locks, nlocks);
}

/* A COMMIT that took DTX_SLOW_MS or more: say where its time went (the
 * members' run, their durable commit, the copies of index members to
 * their other replicas, ms since t[0]), so a client's timeout can be told
 * apart from a lost request by the participant's log. */
static void commit_slow_log(struct srv *s, const struct st_dtx_id *id,
			    uint32_t nr, const uint64_t t[4], uint32_t copies,
			    uint32_t max_ms)
{
	char k[DTX_KEY_LEN];

	if (t[3] - t[0] < DTX_SLOW_MS)
		return;
	dtx_key(k, id);
	LOG_WARNING("dtx: COMMIT of %s (%u members) on server %s took %" PRIu64
		    " ms: members run %" PRIu64 " ms, durable commit %" PRIu64
		    " ms, %u copies to other replicas %" PRIu64 " ms (one "
		    "after the other per replica, slowest %u ms)", k + 4, nr,
		    s->s_me->cs_name, t[3] - t[0], t[1] - t[0], t[2] - t[1],
		    copies, t[3] - t[2], max_ms);
}

/* COMMIT a PREPARED record (caller holds the id lock). */
static int part_commit(const struct dhome *h, const struct st_dtx_id *id,
		       struct drec *rec)
{
	struct srv *s = h->h_srv;
	DtxReq *q = dtx_req__unpack(NULL, rec->r_body_len, rec->r_body);
	struct dwait *w = NULL;
	struct pmem *pm = NULL;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
	uint32_t ran = 0, launched = 0, nr, *locks = NULL, nlocks = 0;
	uint32_t copies = 0, max_ms = 0;
	uint64_t t[4] = {dtx_mono_ms(), 0, 0, 0};
	int rc = 0, rc2;

	if (q == NULL || q->n_members == 0)
		rc = err_set(-ST_ECORRUPT, "dtx record: members do not "
			     "decode");
	nr = q != NULL ? (uint32_t)q->n_members : 0;
	if (rc == 0) {
		w = calloc(1, sizeof *w);
		pm = calloc(nr, sizeof *pm);
		if (w == NULL || pm == NULL)
			rc = err_set(-ENOMEM, "dtx commit");
	}
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		pm[i].pm_w = w;
		pm[i].pm_lock = &lock;
		pm[i].pm_cond = &cond;
		pm[i].pm_ran = &ran;
		rc = pmem_check(h, q->members[i], i, &pm[i]);
		/* ordered here in a term of its own, like a PUT/DEL */
		if (rc == 0 && pm[i].pm_ri != NULL)
			rc = srv_ridx_claim(s, pm[i].pm_ri);
	}
	/* Unit-layout members: their parity-group locks at once, one sorted
	 * set (as embedded mode's dtx), held until the commit is durable. */
	if (rc == 0)
		rc = pmem_glock(h, pm, nr, &locks, &nlocks);
	/* Run each member to its held item (data out of place; unit layouts
	 * on this server's and the other servers' devices). */
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		struct eng_req *r = &pm[i].pm_m.mr_req;

		r->er_ci.ci_hold = pmem_hold;
		r->er_ci.ci_done = pmem_done;
		r->er_ci.ci_executed = NULL;
		err_clear();
		launched++;
		rc = eng_exec(h->h_eng, r);
		if (rc == ENG_PENDING) {
			rc = 0;
			continue;
		}
		if (rc == 0)
			rc = err_set(-EPROTO, "member %u ran without a commit",
				     i);
		pmem_ran(&pm[i], rc, false);
	}
	pthread_mutex_lock(&lock);
	while (ran < launched)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	t[1] = dtx_mono_ms();
	for (uint32_t i = 0; rc == 0 && i < nr; i++)
		if (pm[i].pm_rc != 0)
			rc = err_set(pm[i].pm_rc, "member %u: %s", i,
				     w->w_ci.ci_msg);
	/* Index members: their version {term, seq} (term claimed above),
	 * one per run (runs_make). */
	if (rc == 0)
		runs_make(pm, nr);
	for (uint32_t i = 0; rc == 0 && i < nr; i++) {
		if (pm[i].pm_ri == NULL || pm[i].pm_run == 0)
			continue;
		rc = srv_ridx_order(s, pm[i].pm_ri,
				    pm[i].pm_m.mr_req.er_ent.me_ctime_ns,
				    &pm[i].pm_rec, &pm[i].pm_term,
				    &pm[i].pm_seq);
		for (uint32_t k = i + 1; rc == 0 && k < i + pm[i].pm_run; k++) {
			pm[k].pm_rec = pm[i].pm_rec;
			pm[k].pm_term = pm[i].pm_term;
			pm[k].pm_seq = pm[i].pm_seq;
		}
	}
	if (rc == 0) {
		struct eng_citem *ci = &w->w_ci;

		for (uint32_t i = 0; rc == 0 && i < nr; i++) {
			struct eng_citem *mci = &pm[i].pm_m.mr_req.er_ci;

			for (uint32_t k = 0; k < ENG_DEVMASK_WORDS; k++)
				ci->ci_devmask[k] |= mci->ci_devmask[k];
			for (uint32_t j = 0; rc == 0 && j < mci->ci_alloc.sv_nr;
			     j++)
				rc = eng_spacevec_add(&ci->ci_alloc,
						      mci->ci_alloc.sv_v[j].sp_dev,
						      mci->ci_alloc.sv_v[j].sp_off,
						      mci->ci_alloc.sv_v[j].sp_len);
			mci->ci_alloc.sv_nr = 0;
		}
	}
	if (rc == 0) {
		rc = rec_encode(id, DTM_COMMITTED, rec->r_parts,
				rec->r_h.dr_nr_parts, NULL, 0, &w->w_val,
				&w->w_len);
		dtx_key(w->w_key, id);
		w->w_id = *id;
		w->w_m = pm;
		w->w_nr = nr;
		w->w_ci.ci_apply = commit_apply;
		if (rc == 0)
			rc = dwait_run(h, w); /* space released on failure */
	} else {
		for (uint32_t i = 0; i < nr; i++)
			if (pm[i].pm_held)
				eng_space_release(h->h_eng,
						  &pm[i].pm_m.mr_req.er_ci.ci_alloc);
	}
	if (rc == 0)
		for (uint32_t i = 0; i < nr; i++)
			if (pm[i].pm_eri != NULL)
				srv_ridx_ent_done(s, pm[i].pm_eri,
						  pm[i].pm_m.mr_req.er_kind,
						  pm[i].pm_inc);
	t[2] = dtx_mono_ms();
	if (rc == 0)
		forward_all(s, pm, nr, &copies, &max_ms);
	t[3] = dtx_mono_ms();
	if (rc == 0)
		commit_slow_log(s, id, nr, t, copies, max_ms);
	if (nlocks > 0)
		eng_gunlock(h->h_eng, locks, nlocks);
	free(locks);
	rc2 = rc;
	for (uint32_t i = 0; pm != NULL && i < nr; i++)
		pmem_fini(&pm[i]);
	if (w != NULL) {
		eng_spacevec_fini(&w->w_ci.ci_alloc);
		eng_spacevec_fini(&w->w_ci.ci_freed);
		free(w->w_val);
	}
	free(w);
	free(pm);
	if (q != NULL)
		dtx_req__free_unpacked(q, NULL);
	return rc2;
}

/*
 * A decision read back (state), answered only once what this home's store
 * holds is on its standbys (eng_repl_wait(): nothing to wait for without
 * replication).  A record written here whose write set reached no
 * standby (its commit failed after the local commit) must not be told:
 * a takeover on a standby would not have it, and could decide otherwise.
 * The state, or the replication's failure (the asker tries again later).
 */
static int rec_stable(const struct dhome *h, int state)
{
	int rc = eng_repl_wait(h->h_eng, eng_repl_seq(h->h_eng));

	return rc != 0 ? rc : state;
}

/*
 * Decide id (COMMITTED or ABORTED) here.  Returns the state the record is
 * in after (a decided record keeps its decision), or a negative code
 * (the record stays PREPARED: asked again later).
 */
static int part_decide(struct srv_dtx *d, const struct dhome *h,
		       const struct st_dtx_id *id, uint32_t decision)
{
	struct srv *s = d->d_srv;
	struct drec rec;
	int rc;

	pthread_mutex_lock(id_lock(d, id));
	rc = rec_get(h, id, &rec);
	if (rc == -ENOENT) {
		/* Never prepared: an ABORT is logged so a late PREPARE is
		 * refused; a COMMIT cannot be (it needed our YES). */
		if (decision == DTM_ABORTED) {
			uint16_t self = (uint16_t)h->h_home;

			rc = rec_put(h, id, DTM_ABORTED, &self, 1, NULL, 0);
			rc = rc == 0 ? DTM_ABORTED : rc;
		} else {
			rc = err_set(-EPROTO, "dtx: COMMIT of a dtx home %s "
				     "never prepared", home_name(h));
		}
	} else if (rc == 0 && rec.r_h.dr_state != DTM_PREPARED) {
		rc = rec_stable(h, (int)rec.r_h.dr_state);
	} else if (rc == 0) {
		if (FAULT_HIT("dtx.part.decide.before")) {
			LOG_WARNING("fault point dtx.part.decide.before: "
				    "SIGKILL");
			raise(SIGKILL);
		}
		if (decision == DTM_COMMITTED) {
			rc = part_commit(h, id, &rec);
			if (rc == -ENOENT || rc == -EEXIST || rc == -EINVAL) {
				/* A member's entity was deleted (or one it
				 * creates made) since the PREPARE (no
				 * isolation), or a member can never be
				 * applied (-EINVAL: attributes a CREATE
				 * refuses): nothing of this participant's
				 * members is applied, and the record must
				 * not stay in doubt for ever. */
				LOG_ERROR("dtx: COMMIT on server %s (home %s):"
					  " %s: members not applied",
					  s->s_me->cs_name, home_name(h),
					  err_msg());
				rc = rec_put(h, id, DTM_COMMITTED, rec.r_parts,
					     rec.r_h.dr_nr_parts, NULL, 0);
			}
		} else
			rc = rec_put(h, id, DTM_ABORTED, rec.r_parts,
				     rec.r_h.dr_nr_parts, NULL, 0);
		if (rc == 0) {
			doubt_del(d, h->h_home, id);
			rc = (int)decision;
			if (FAULT_HIT("dtx.part.decide.after")) {
				LOG_WARNING("fault point dtx.part.decide.after"
					    ": SIGKILL");
				raise(SIGKILL);
			}
		}
	}
	drec_fini(&rec);
	pthread_mutex_unlock(id_lock(d, id));
	return rc;
}

/* ------------------------------------------------------------ handlers */

static int h_prepare(struct srv_dtx *d, const struct dhome *h,
		     const DtxReq *q, const void *body, size_t len,
		     struct st_dtx_id *id)
{
	struct srv *s = d->d_srv;
	uint16_t parts[DTM_PARTS_MAX];
	struct pmem *pm = calloc(q->n_members, sizeof *pm);
	bool member = false;
	int rc = pm == NULL ? err_set(-ENOMEM, "dtx prepare") : 0;

	for (size_t i = 0; i < q->n_parts; i++) {
		parts[i] = (uint16_t)q->parts[i];
		member |= q->parts[i] == h->h_home;
	}
	if (rc == 0 && !member)
		rc = err_set(-EINVAL, "dtx request: home %s is not among "
			     "the participants", home_name(h));
	for (size_t i = 0; rc == 0 && i < q->n_members; i++) {
		rc = pmem_check(h, q->members[i], (uint32_t)i, &pm[i]);
		if (rc == 0 && pm[i].pm_ri != NULL &&
		    !srv_ridx_orderable(s, pm[i].pm_ri))
			rc = err_set(-ESTALE, "member %zu: index %s must be "
				     "verified against its replicas first",
				     i, eng_id_str(&pm[i].pm_m.mr_req.er_id));
	}
	if (rc == 0)
		rc = pmem_check_pairs(pm, q->n_members);
	if (rc == 0) {
		uint32_t *slots, nslots;

		rc = pmem_glock_slots(h, pm, (uint32_t)q->n_members, false,
				      &slots, &nslots);
		free(slots);
	}
	for (size_t i = 0; pm != NULL && i < q->n_members; i++)
		pmem_fini(&pm[i]);
	free(pm);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(id_lock(d, id));
	{
		uint32_t st = rec_state(h, id);

		if (!dtm_prepare_allowed(st))
			rc = err_set(-ECANCELED, "dtx: home %s already has "
				     "it %s", home_name(h),
				     st == DTM_ABORTED ? "ABORTED" :
				     st == DTM_COMMITTED ? "COMMITTED" :
				     "PREPARED");
	}
	if (rc == 0) {
		rc = rec_put(h, id, DTM_PREPARED, parts, (uint32_t)q->n_parts,
			     body, len);
		/* test builds: the record durable here, its write set not
		 * replicated (what core/commit.c commit_replicated() reports
		 * when a standby fails its wait) */
		if (rc == 0 && FAULT_HIT("dtx.part.prepare.unstable")) {
			LOG_WARNING("fault point dtx.part.prepare.unstable: "
				    "home %s: PREPARED record written, "
				    "reported failed", home_name(h));
			rc = err_set(-EHOSTDOWN, "dtx: home %s: record written "
				     "but not replicated (fault point "
				     "dtx.part.prepare.unstable)",
				     home_name(h));
		}
		/*
		 * In doubt whatever rec_put() said: a failure can come after
		 * the record is durable and visible here (a write set not
		 * replicated).  The coordinator hears NO and aborts it, but
		 * if it dies first only termination ends the record; a
		 * decider that never listed it left its other participants
		 * waiting on it for ever.  A record never written is dropped
		 * from the list by term_one().
		 */
		doubt_add(d, h->h_home, id, false, q->wait_ms);
	}
	pthread_mutex_unlock(id_lock(d, id));
	if (rc == 0 && FAULT_HIT("dtx.part.prepared")) {
		LOG_WARNING("fault point dtx.part.prepared: SIGKILL");
		raise(SIGKILL);
	}
	return rc;
}

static int h_query(struct srv_dtx *d, const struct dhome *h,
		   const struct st_dtx_id *id)
{
	uint32_t st;
	bool log_it;
	int rc = 0;

	pthread_mutex_lock(id_lock(d, id));
	st = rec_state(h, id);
	dtm_query_answer(&st, &log_it);
	if (log_it) {
		uint16_t self = (uint16_t)h->h_home;

		rc = rec_put(h, id, DTM_ABORTED, &self, 1, NULL, 0);
	} else if (st == DTM_COMMITTED || st == DTM_ABORTED) {
		rc = rec_stable(h, 0);
	}
	pthread_mutex_unlock(id_lock(d, id));
	return rc != 0 ? rc : (int)st;
}

/* One LIST entry from a record (NULL: no memory). */
static DtxInfo *list_entry(const struct meta_rec *v, const struct dtm_rec *h,
			   const uint16_t *parts)
{
	DtxInfo *e = calloc(1, sizeof *e + h->dr_nr_parts * sizeof(uint32_t));

	if (e == NULL)
		return NULL;
	dtx_info__init(e);
	e->hlc = h->dr_hlc;
	e->node = h->dr_node;
	e->state = h->dr_state;
	e->time_us = h->dr_time_us;
	e->parts = (uint32_t *)(e + 1);
	e->n_parts = h->dr_nr_parts;
	for (uint32_t i = 0; i < h->dr_nr_parts; i++)
		e->parts[i] = parts[i];
	if (h->dr_state == DTM_PREPARED) {
		size_t hl = sizeof *h + h->dr_nr_parts * 2;
		DtxReq *q = dtx_req__unpack(NULL, v->mc_vlen - hl,
					    (const uint8_t *)v->mc_val + hl);

		e->members = q != NULL ? (uint32_t)q->n_members : 0;
		if (q != NULL)
			dtx_req__free_unpacked(q, NULL);
	}
	return e;
}

/* h_list()'s walk back over the decided records. */
struct hl_arg {
	DtxReply *ha_rp;
	size_t ha_n;
	uint32_t ha_limit;
	const struct st_dtx_id *ha_doubt;
	uint32_t ha_nd;
};

/* One record of the walk back: listed unless listed as in doubt. */
static int hl_one(void *arg, const struct meta_rec *r)
{
	struct hl_arg *a = arg;
	struct dtm_rec h;
	uint16_t parts[DTM_PARTS_MAX];
	bool listed = false;

	if (a->ha_n >= a->ha_limit)
		return META_SCAN_STOP;
	if (dtm_rec_decode(r->mc_val, r->mc_vlen, &h, parts) != 0)
		return META_SCAN_NEXT;
	for (uint32_t i = 0; h.dr_state == DTM_PREPARED && i < a->ha_nd &&
	     !listed; i++)
		listed = a->ha_doubt[i].di_hlc == h.dr_hlc &&
			 a->ha_doubt[i].di_node == h.dr_node;
	if (listed)
		return META_SCAN_NEXT;
	a->ha_rp->list[a->ha_n] = list_entry(r, &h, parts);
	if (a->ha_rp->list[a->ha_n] == NULL)
		return META_SCAN_STOP;
	a->ha_n++;
	return META_SCAN_NEXT;
}

/*
 * LIST: every in-doubt (PREPARED) record first, then the newest decided
 * ones, limit entries in all.  The in-doubt ones must come first: a
 * client that waits until nothing is in doubt (tests/crash/dtx_crash.c)
 * would otherwise miss a dtx left in doubt by a dead client as soon as
 * more than limit newer dtxs were logged here (it then commits later,
 * over the accounts that client's successor rewrote meanwhile).
 */
static int h_list(struct srv_dtx *d, const struct dhome *h, uint32_t limit,
		  DtxReply *rp)
{
	struct dlist *l = &d->d_list[h->h_home];
	struct meta *mt = eng_meta(h->h_eng);
	MDB_txn *txn;
	struct meta_rec v;
	struct st_dtx_id *doubt = NULL;
	uint32_t nd = 0;
	int rc = meta_rtxn_begin(mt, &txn, "dtx list: begin");
	size_t n = 0;

	if (limit == 0 || limit > DTM_LIST_MAX)
		limit = DTM_LIST_MAX;
	if (rc != 0)
		return rc;
	rp->list = calloc(limit, sizeof *rp->list);
	doubt = calloc(limit, sizeof *doubt);
	if (doubt != NULL) {
		pthread_mutex_lock(&d->d_lock);
		for (struct pdtx *p = l->dl_doubt; p != NULL && nd < limit;
		     p = p->pd_next)
			doubt[nd++] = p->pd_id;
		pthread_mutex_unlock(&d->d_lock);
	}
	/* the in-doubt ones, from their records */
	for (uint32_t i = 0; rp->list != NULL && i < nd && n < limit; i++) {
		char key[DTX_KEY_LEN];
		struct dtm_rec dr;
		uint16_t parts[DTM_PARTS_MAX];

		dtx_key(key, &doubt[i]);
		if (meta_get(txn, mt, META_T_SYS, key, strlen(key), &v,
			     NULL) != 0 ||
		    dtm_rec_decode(v.mc_val, v.mc_vlen, &dr, parts) != 0 ||
		    dr.dr_state != DTM_PREPARED) {
			doubt[i].di_node = UINT32_MAX; /* decided since */
			continue;
		}
		rp->list[n] = list_entry(&v, &dr, parts);
		if (rp->list[n] == NULL)
			break;
		n++;
	}
	/* then the newest others: walk back from the end of "dtx/" ('0'
	 * follows '/'); a failure of the walk ends the list there */
	if (rp->list != NULL && n < limit) {
		struct hl_arg ha = {rp, n, limit, doubt, nd};

		(void)meta_scan(txn, mt, &(struct meta_scan){
			.ms_table = META_T_SYS, .ms_from = "dtx0",
			.ms_flen = 4, .ms_prefix = "dtx/", .ms_plen = 4,
			.ms_rev = true, .ms_fn = hl_one, .ms_arg = &ha,
			.ms_what = "dtx list"});
		n = ha.ha_n;
	}
	free(doubt);
	rp->n_list = n;
	meta_rtxn_put(mt, txn);
	pthread_mutex_lock(&d->d_lock);
	rp->dead = d->d_dead;
	rp->in_doubt = l->dl_nr;
	pthread_mutex_unlock(&d->d_lock);
	return rp->list == NULL ? err_set(-ENOMEM, "dtx list") : 0;
}

static int h_dead(struct srv_dtx *d, uint32_t server, bool alive)
{
	uint64_t dead;

	pthread_mutex_lock(&d->d_lock);
	if (alive)
		d->d_dead &= ~(1ull << server);
	else
		d->d_dead |= 1ull << server;
	dead = d->d_dead;
	pthread_mutex_unlock(&d->d_lock);
	LOG_WARNING("dtx: server %s marked %s by the operator",
		    d->d_srv->s_conf->cc_servers[server].cs_name,
		    alive ? "alive" : "dead");
	return eng_sys_save(d->d_srv->s_eng, DTX_DEAD_NAME, &dead,
			    sizeof dead);
}

/* Answer q (rc: a state when > 0, else 0 or a failure) and free it. */
static void dtx_answer(struct srv *s, struct rpc_sreq *req, DtxReq *q,
		       int rc, DtxReply *rp)
{
	uint8_t *out = NULL;
	size_t out_len = 0;

	if (rc > 0) {
		rp->state = (uint32_t)rc;
		rc = 0;
	}
	rp->clock = dtm_hlc_now();
	if (rc == 0)
		rc = dtm_pack(&rp->base, &out, &out_len);
	rpc_sreq_reply(req, rc, out, out_len, rc != 0 ? err_msg() : NULL);
	if (rc == 0 && q->kind == DTM_MSG_PREPARE &&
	    FAULT_HIT("dtx.part.voted")) {
		usleep(100000); /* let the YES leave */
		LOG_WARNING("fault point dtx.part.voted: SIGKILL");
		raise(SIGKILL);
	}
	for (size_t i = 0; i < rp->n_list; i++)
		free(rp->list[i]);
	free(rp->list);
	free(out);
	dtx_req__free_unpacked(q, NULL);
	(void)s;
}

/* A DECIDE COMMIT runs on a thread of its own, not on an RPC handler:
 * unit-layout members write units on the other servers' devices, whose
 * SOP_RDEV requests must find a free handler there (docs/cluster.md). */
struct decide_job {
	struct srv *j_srv;
	struct dhome j_h;
	struct rpc_sreq *j_req;
	DtxReq *j_q;
};

static void *decide_main(void *arg)
{
	struct decide_job *j = arg;
	struct srv *s = j->j_srv;
	DtxReply rp = DTX_REPLY__INIT;
	struct st_dtx_id id = {.di_hlc = j->j_q->hlc,
				   .di_node = j->j_q->node};
	int rc;

	srv_thread_enter();
	err_clear();
	rc = part_decide(s->s_dtx, &j->j_h, &id, j->j_q->decision);
	dhome_put(&j->j_h);
	dtx_answer(s, j->j_req, j->j_q, rc, &rp);
	__atomic_sub_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_RELEASE);
	free(j);
	return NULL;
}

static bool decide_spawn(struct srv *s, const struct dhome *h,
			 struct rpc_sreq *req, DtxReq *q)
{
	struct decide_job *j = malloc(sizeof *j);
	pthread_attr_t at;
	pthread_t th;
	bool ok;

	if (j == NULL)
		return false;
	*j = (struct decide_job){s, *h, req, q};
	__atomic_add_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_RELAXED);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	ok = pthread_create(&th, &at, decide_main, j) == 0;
	pthread_attr_destroy(&at);
	if (!ok) {
		__atomic_sub_fetch(&s->s_cnt.sc_inflight, 1, __ATOMIC_RELAXED);
		free(j);
	}
	return ok; /* else the handler decides itself */
}

/* A PREPARE above DTM_PREPARE_INLINE_MAX: env is its envelope; the packed
 * PREPARE is the call's bulk, pulled whole (RMA) before anything is
 * checked, so the record written before the vote holds all of it. */
static int h_prepare_bulk(struct srv_dtx *d, const struct dhome *h,
			  struct rpc_sreq *req, const DtxReq *env,
			  struct st_dtx_id *id)
{
	struct srv *s = d->d_srv;
	size_t len = rpc_sreq_bulk_len(req);
	uint8_t *buf = NULL;
	DtxReq *q = NULL;
	char ids[DTM_ID_STR_LEN];
	int rc = 0;

	if (len != env->bulk_len)
		rc = err_set(-EBADMSG, "dtx %s: PREPARE announced %" PRIu64
			     " bytes of bulk, the call carries %zu",
			     dtm_id_format(id, ids), env->bulk_len, len);
	if (rc == 0 && (buf = malloc(len)) == NULL)
		rc = err_set(-ENOMEM, "dtx %s: PREPARE of %zu bytes",
			     dtm_id_format(id, ids), len);
	if (rc == 0)
		rc = rpc_sreq_bulk_pull(req, 0, buf, len);
	if (rc == 0)
		rc = dtm_prepare_decode(env, buf, len, s->s_conf->cc_nr_servers,
					&q);
	else if (buf != NULL)
		rc = err_set(rc, "dtx %s: pulling its PREPARE of %zu bytes: %s",
			     dtm_id_format(id, ids), len, err_msg());
	if (rc == 0)
		rc = h_prepare(d, h, q, buf, len, id);
	if (q != NULL)
		dtx_req__free_unpacked(q, NULL);
	free(buf);
	return rc;
}

static void srv_dtx_handle(struct rpc_sreq *req, void *arg)
{
	struct srv *s = arg;
	struct srv_dtx *d = s->s_dtx;
	size_t len;
	const void *body = rpc_sreq_body(req, &len);
	DtxReply rp = DTX_REPLY__INIT;
	struct st_dtx_id id;
	struct dhome h;
	DtxReq *q = NULL;
	int rc;

	srv_thread_enter();
	if (d == NULL || __atomic_load_n(&s->s_draining, __ATOMIC_ACQUIRE)) {
		rpc_sreq_reply(req, -ESHUTDOWN, NULL, 0, "server is stopping");
		return;
	}
	err_clear();
	rc = dtm_req_decode(body, len, s->s_conf->cc_nr_servers, &q);
	if (rc != 0) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		rpc_sreq_reply(req, rc, NULL, 0, err_msg());
		return;
	}
	dtm_hlc_observe(q->clock);
	id = (struct st_dtx_id){.di_hlc = q->hlc, .di_node = q->node};
	if (q->kind == DTM_MSG_DEAD) {
		rc = h_dead(d, q->server, q->decision == 1);
		dtx_answer(s, req, q, rc, &rp);
		return;
	}
	rc = dhome_get(d, q->home != 0 ? q->home - 1 : s->s_self, &h);
	if (rc != 0) {
		dtx_answer(s, req, q, rc, &rp);
		return;
	}
	switch (q->kind) {
	case DTM_MSG_PREPARE:
		if (q->bulk_len != 0) {
			rc = h_prepare_bulk(d, &h, req, q, &id);
		} else {
			rc = h_prepare(d, &h, q, body, len, &id);
		}
		rp.state = DTM_PREPARED;
		break;
	case DTM_MSG_DECIDE:
		if (q->decision == DTM_COMMITTED &&
		    decide_spawn(s, &h, req, q))
			return; /* the job puts h */
		rc = part_decide(d, &h, &id, q->decision);
		break;
	case DTM_MSG_QUERY:
		rc = h_query(d, &h, &id);
		break;
	default:
		rc = h_list(d, &h, q->limit, &rp);
		break;
	}
	dhome_put(&h);
	dtx_answer(s, req, q, rc, &rp);
}

/* Serve DTM_OP on s's endpoint. */
static int srv_dtx_register(struct srv *s)
{
	return rpc_handler_set(s->s_ep, DTM_OP, srv_dtx_handle, s);
}

/* ------------------------------------------------------------ termination */

/* Ask home j's participant what it knows of id: at the server the map
 * has serving j (this one included). */
static void term_ask(struct srv_dtx *d, uint32_t j,
		     const struct st_dtx_id *id, struct dtm_answer *a)
{
	struct srv *s = d->d_srv;
	uint32_t at = s->s_route_acting != NULL ?
		      s->s_route_acting(s->s_route_arg, j) : j;
	DtxReq q = DTX_REQ__INIT;
	struct rpc_result res;
	DtxReply *rp = NULL;
	uint8_t *b;
	size_t bl;

	if (at == s->s_self) {
		struct dhome hj;
		int rc = dhome_get(d, j, &hj);

		if (rc == 0)
			rc = h_query(d, &hj, id);
		dhome_put(&hj);
		if (rc > 0) {
			a->da_replied = true;
			a->da_state = (uint32_t)rc;
		}
		return;
	}
	q.kind = DTM_MSG_QUERY;
	q.hlc = id->di_hlc;
	q.node = id->di_node;
	q.clock = dtm_hlc_now();
	q.home = j + 1;
	if (dtm_pack(&q.base, &b, &bl) != 0)
		return;
	if (peers_call_ms(s->s_peers, at, DTM_OP, b, bl, NULL, DTX_QUERY_MS,
			  &res) == 0 &&
	    dtm_reply_decode(res.rr_body, res.rr_len, &rp) == 0) {
		a->da_replied = true;
		a->da_state = rp->state;
		dtm_hlc_observe(rp->clock);
		dtx_reply__free_unpacked(rp, NULL);
	}
	free(res.rr_body);
	free(b);
}

/* Resolve one in-doubt dtx if the rule allows. */
static void term_one(struct srv_dtx *d, const struct dhome *h,
		     const struct st_dtx_id *id)
{
	struct dtm_answer ans[DTM_PARTS_MAX];
	enum dtm_verdict v;
	struct drec rec;
	uint32_t n = 0;
	uint64_t dead;
	char buf[DTM_ID_STR_LEN];
	int rc = rec_get(h, id, &rec);

	if (rc != 0 || rec.r_h.dr_state != DTM_PREPARED) {
		if (rc == 0 || rc == -ENOENT)
			doubt_del(d, h->h_home, id);
		drec_fini(&rec);
		return;
	}
	pthread_mutex_lock(&d->d_lock);
	dead = d->d_dead;
	pthread_mutex_unlock(&d->d_lock);
	if (rec.r_parts[0] == h->h_home) {
		v = dtm_term_decider(DTM_PREPARED, true);
	} else {
		for (uint32_t i = 0; i < rec.r_h.dr_nr_parts; i++) {
			uint32_t j = rec.r_parts[i];

			if (j == h->h_home)
				continue;
			ans[n] = (struct dtm_answer){0};
			if (dead & (1ull << j))
				ans[n].da_dead = true;
			else
				term_ask(d, j, id, &ans[n]);
			n++;
		}
		v = dtm_term_decide(DTM_PREPARED, ans, n);
	}
	drec_fini(&rec);
	if (v == DTM_V_WAIT)
		return;
	rc = part_decide(d, h, id, v == DTM_V_COMMIT ? DTM_COMMITTED
						     : DTM_ABORTED);
	if (rc < 0)
		LOG_WARNING("dtx %s (home %s): termination could not %s it: "
			    "%s", dtm_id_format(id, buf), home_name(h),
			    v == DTM_V_COMMIT ? "commit" : "abort", err_msg());
	else if (h->h_home == h->h_srv->s_self)
		LOG_INFO("dtx %s (home %s): in doubt, resolved by termination:"
			 " %s", dtm_id_format(id, buf), home_name(h),
			 rc == DTM_COMMITTED ? "COMMITTED" : "ABORTED");
	else /* on a home taken over: an operator wants to see it */
		LOG_WARNING("dtx %s (home %s): in doubt, resolved by "
			    "termination: %s", dtm_id_format(id, buf),
			    home_name(h), rc == DTM_COMMITTED ? "COMMITTED"
							      : "ABORTED");
}

/* term_trim()'s scans. */
struct trim_arg {
	uint64_t ta_now;
	uint64_t ta_total;
	uint64_t ta_del;
};

static int trim_count(void *arg, const struct meta_rec *r)
{
	((struct trim_arg *)arg)->ta_total++;
	return META_SCAN_NEXT;
}

/* A decided record older than DTX_KEEP_S, or beyond DTX_KEEP_MAX: gone. */
static int trim_one(void *arg, const struct meta_rec *r)
{
	struct trim_arg *a = arg;
	struct dtm_rec h;
	uint16_t parts[DTM_PARTS_MAX];

	if (dtm_rec_decode(r->mc_val, r->mc_vlen, &h, parts) != 0 ||
	    h.dr_state == DTM_PREPARED)
		return META_SCAN_NEXT;
	if (a->ta_total - a->ta_del > DTX_KEEP_MAX ||
	    a->ta_now - h.dr_time_us > (uint64_t)DTX_KEEP_S * 1000000u) {
		a->ta_del++;
		return META_SCAN_DEL;
	}
	if (dtm_hlc_us(h.dr_hlc) + (uint64_t)DTX_KEEP_S * 1000000u > a->ta_now)
		return META_SCAN_STOP; /* key order is id (time) order */
	return META_SCAN_NEXT;
}

/* Delete decided records older than DTX_KEEP_S, and the oldest beyond
 * DTX_KEEP_MAX. */
static void term_trim(const struct dhome *h)
{
	struct meta *mt = eng_meta(h->h_eng);
	struct trim_arg ta = {dtm_hlc_us(dtm_hlc_now()), 0, 0};
	struct meta_scan sc = {.ms_table = META_T_SYS, .ms_prefix = "dtx/",
			       .ms_plen = 4, .ms_fn = trim_count,
			       .ms_arg = &ta, .ms_what = "dtx trim"};
	MDB_txn *txn;
	int rc;

	/* count first (read), then delete in one write transaction */
	if (meta_rtxn_begin(mt, &txn, "dtx trim") != 0)
		return;
	(void)meta_scan(txn, mt, &sc);
	meta_rtxn_put(mt, txn);
	if (meta_wtxn_begin(mt, &txn, "dtx trim") != 0)
		return;
	sc.ms_fn = trim_one;
	sc.ms_write = true;
	rc = meta_scan(txn, mt, &sc);
	if (rc != 0 || ta.ta_del == 0)
		meta_txn_abort(txn);
	else if (meta_wtxn_commit(mt, txn, "dtx trim commit") == 0)
		LOG_INFO("dtx: trimmed %" PRIu64 " decided records",
			 ta.ta_del);
}

/* One tick of termination for home j: its due in-doubt dtxs (at most
 * 256; *more: some left for the next tick), and its trimming when trim.
 * A home not served here (any more) has its list forgotten. */
static void term_home(struct srv_dtx *d, uint32_t j, uint64_t now, bool trim,
		      bool *more)
{
	struct st_dtx_id ids[256];
	struct dhome h;
	uint32_t n = 0;

	if (dhome_get(d, j, &h) != 0) {
		if (j != d->d_srv->s_self) {
			pthread_mutex_lock(&d->d_lock);
			if (d->d_list[j].dl_eng != NULL)
				dlist_clear(&d->d_list[j]);
			pthread_mutex_unlock(&d->d_lock);
		}
		return;
	}
	pthread_mutex_lock(&d->d_lock);
	for (struct pdtx *p = d->d_list[j].dl_doubt; p != NULL && n < 256;
	     p = p->pd_next)
		if (now >= p->pd_due_ms)
			ids[n++] = p->pd_id;
	pthread_mutex_unlock(&d->d_lock);
	/* test builds: termination held (dtx_cluster_test.sh keeps a
	 * dtx in doubt while newer ones are logged) */
	if (FAULT_HIT("dtx.part.term.hold"))
		n = 0;
	*more |= n == 256;
	for (uint32_t i = 0; i < n && !d->d_stop; i++)
		term_one(d, &h, &ids[i]);
	if (trim)
		term_trim(&h);
	dhome_put(&h);
}

static void *term_main(void *arg)
{
	struct srv_dtx *d = arg;
	struct srv *s = d->d_srv;

	eng_thread_enter();
	for (;;) {
		uint64_t now = srv_now_ms();
		bool trim = now - d->d_trim_ms >= DTX_TRIM_EVERY_MS;
		bool more = false;
		struct timespec ts;

		for (uint32_t j = 0; j < s->s_conf->cc_nr_servers &&
		     !d->d_stop; j++)
			term_home(d, j, now, trim, &more);
		if (trim)
			d->d_trim_ms = now;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)DTX_TERM_TICK_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_mutex_lock(&d->d_lock);
		if (!d->d_stop && !more)
			pthread_cond_timedwait(&d->d_cond, &d->d_lock, &ts);
		if (d->d_stop) {
			pthread_mutex_unlock(&d->d_lock);
			break;
		}
		pthread_mutex_unlock(&d->d_lock);
	}
	eng_thread_leave();
	return NULL;
}

/* dtx_replay()'s scan. */
struct replay_arg {
	struct srv_dtx *ra_d;
	uint32_t ra_home;
	uint32_t ra_n;
};

/* A PREPARED record: in doubt from now. */
static int replay_one(void *arg, const struct meta_rec *r)
{
	struct replay_arg *a = arg;
	struct dtm_rec h;
	uint16_t parts[DTM_PARTS_MAX];
	struct st_dtx_id id;

	if (dtm_rec_decode(r->mc_val, r->mc_vlen, &h, parts) != 0) {
		LOG_WARNING("dtx replay: %.*s: %s", (int)r->mc_klen,
			    (const char *)r->mc_key, err_msg());
		return META_SCAN_NEXT;
	}
	dtm_hlc_observe(h.dr_hlc);
	if (h.dr_state != DTM_PREPARED)
		return META_SCAN_NEXT;
	id = (struct st_dtx_id){.di_hlc = h.dr_hlc, .di_node = h.dr_node};
	doubt_add(a->ra_d, a->ra_home, &id, true, 0); /* ask at once */
	a->ra_n++;
	return META_SCAN_NEXT;
}

/* Load home h's PREPARED records: in doubt from now. */
static int dtx_replay(struct srv_dtx *d, const struct dhome *h)
{
	struct srv *s = d->d_srv;
	struct meta *mt = eng_meta(h->h_eng);
	struct replay_arg ra = {d, h->h_home, 0};
	MDB_txn *txn;
	int rc = meta_rtxn_begin(mt, &txn, "dtx replay: begin");

	if (rc != 0)
		return rc;
	rc = meta_scan(txn, mt, &(struct meta_scan){
		.ms_table = META_T_SYS, .ms_prefix = "dtx/", .ms_plen = 4,
		.ms_fn = replay_one, .ms_arg = &ra,
		.ms_what = "dtx replay: cursor"});
	meta_rtxn_put(mt, txn);
	if (rc != 0)
		return rc;
	if (ra.ra_n > 0 && h->h_home == s->s_self)
		LOG_INFO("server %s: %u dtx in doubt at start", s->s_me->cs_name,
			 ra.ra_n);
	else if (h->h_home != s->s_self)
		LOG_WARNING("server %s: dtx log of home %s loaded (acting for it): "
			 "%u in doubt", s->s_me->cs_name, home_name(h), ra.ra_n);
	return 0;
}

/* Load the dtx log (in-doubt records) and start termination. */
static int srv_dtx_start(struct srv *s)
{
	struct srv_dtx *d = calloc(1, sizeof *d);
	int rc;

	if (d == NULL)
		return err_set(-ENOMEM, "server: dtx state");
	d->d_srv = s;
	pthread_mutex_init(&d->d_lock, NULL);
	pthread_cond_init(&d->d_cond, NULL);
	for (uint32_t i = 0; i < DTX_LOCKS; i++)
		pthread_mutex_init(&d->d_idlock[i], NULL);
	if (eng_sys_load(s->s_eng, DTX_DEAD_NAME, &d->d_dead,
			 sizeof d->d_dead) != 0)
		d->d_dead = 0;
	rc = dtx_replay(d, &(struct dhome){s, s->s_self, s->s_eng, NULL});
	d->d_list[s->s_self].dl_eng = s->s_eng;
	d->d_trim_ms = srv_now_ms();
	if (rc == 0) {
		rc = pthread_create(&d->d_term, NULL, term_main, d);
		if (rc != 0)
			rc = err_set(-rc, "server: dtx termination thread");
		else
			d->d_term_on = true;
	}
	__atomic_store_n(&s->s_dtx, d, __ATOMIC_RELEASE);
	return rc;
}

static void srv_dtx_stop(struct srv *s)
{
	struct srv_dtx *d = s->s_dtx;

	if (d == NULL)
		return;
	pthread_mutex_lock(&d->d_lock);
	d->d_stop = true;
	pthread_cond_broadcast(&d->d_cond);
	pthread_mutex_unlock(&d->d_lock);
	if (d->d_term_on)
		pthread_join(d->d_term, NULL);
	s->s_dtx = NULL;
	for (uint32_t j = 0; j < CLU_SERVERS_MAX; j++)
		dlist_clear(&d->d_list[j]);
	free(d);
}

const struct srv_module dtm_srv_module = {
	.sm_name = "dtm",
	.sm_register = srv_dtx_register,
	.sm_start = srv_dtx_start,
	.sm_stop = srv_dtx_stop,
};
