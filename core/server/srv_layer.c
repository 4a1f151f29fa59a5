/*
 * srv_layer.c — SOP_LAYER: a composite object's layers through a cluster
 * client (docs/cluster.md "Composite layers through a cluster client").
 *
 * The client (clovis/cli_cluster.c, "layers") sends the request where it
 * sends the object's other requests: to the server serving the object's
 * home.  srv_handle() (srv.c) decodes and checks it (msg.c: every field
 * of the op, and only those) and routes it like an object request (with
 * HA: s_route, the engine of the home this server serves, held until the
 * answer, or -EREMCHG / -EBUSY).  Here it runs the engine's own code on
 * that engine, as embedded mode runs it on its store (clovis/clovis.c):
 *
 *   ADD   comp_layer_add()    DROP  comp_layer_drop()
 *   LIST  comp_layer_list()   OF    comp_where()
 *   MAP   comp_layer_map() of at most SRV_LAYER_MAP_RUNS runs from
 *         LayerReq.start; LayerReply.next says where the next call
 *         starts
 *   SCRUB comp_obj_scrub(): every unit of the object checked, a damaged
 *         one rebuilt (any object; units that could not be rebuilt are
 *         answered in the figures, the client makes them -EIO)
 *   MOVE  comp_move() over at most SRV_LAYER_MOVE_BYTES of the object's
 *         blocks from LayerReq.start; the answer says where the next call
 *         starts (LayerReply.next), so one call stays within the call
 *         timeout however long the range.  Blocks past the object's size
 *         are holes: a range past it ends there.
 *
 * ADD and DROP are items of the home's group commit (core/comp.c
 * comp_txn()), a MOVE one group commit per run (each run read, written
 * to the target layer, then mapped and unmapped in one atomic commit: a
 * crash leaves every block on one layer or the other); all of them are write sets of the home's store,
 * so they reach its standbys (replicated homes) before the answer, as any
 * update does.  The object must exist with the handle's incarnation
 * (-ENOENT otherwise, as for SOP_OBJ), and be homed on the engine's home:
 * the server's own engine serves only the objects homed on it (-EREMCHG).
 *
 * Threads: the engine's layer calls are synchronous and register their
 * thread with it themselves where they need to (comp_move(): an embedded
 * application's thread), while every thread of the server is registered
 * already (handlers, executors).  So each request runs on a thread of its
 * own, as an application thread would in embedded mode: at most
 * SRV_LAYER_THREADS at once (-EBUSY past that: the client pauses and
 * sends it again), counted in flight (srv_enter() in srv_handle()) until
 * answered, so a stop waits for them.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clu_conf.h"
#include "core/comp.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/meta.h"
#include "core/server/srv_internal.h"

static const char *const srv_layer_names[] = {
	[SLY_ADD] = "add", [SLY_DROP] = "drop", [SLY_LIST] = "list",
	[SLY_MOVE] = "move", [SLY_OF] = "of", [SLY_MAP] = "map",
	[SLY_SCRUB] = "scrub",
};

/* The object's record (*me), checked: an object of this store, of the
 * handle's incarnation, homed on the home the engine serves. */
static int srv_layer_obj(struct srv *s, struct srv_op *so, struct meta_ent *me)
{
	const struct eng_req *r = &so->so_m.mr_req;
	uint32_t home = clu_home(s->s_conf, &r->er_id);
	MDB_txn *txn;
	int rc;

	if (r->er_eng == s->s_eng && (rc = srv_home_here(s, home,
							 &r->er_id)) != 0)
		return rc;
	rc = meta_rtxn_once(eng_meta(r->er_eng), &txn, "begin read");
	if (rc != 0)
		return rc;
	rc = meta_ent_get(txn, eng_meta(r->er_eng), &r->er_id, me);
	meta_txn_abort(txn);
	if (rc == -ENOENT || (rc == 0 && me->me_type != ST_ET_OBJ))
		return err_set(-ENOENT, "object %s does not exist on server %s",
			       eng_id_str(&r->er_id), s->s_me->cs_name);
	if (rc == 0 && me->me_ctime_ns != so->so_m.mr_incarnation)
		rc = err_set(-ENOENT, "object %s was deleted (and made again) "
			     "since this handle opened it",
			     eng_id_str(&r->er_id));
	return rc;
}

/* LIST: every layer, into lr (arrays of COMP_LAYERS_MAX of the caller). */
static int srv_layer_list(struct srv_op *so, LayerReply *lr, SLayer *ls,
			  SLayer **lp, SAttr *as)
{
	const struct eng_req *r = &so->so_m.mr_req;
	struct st_layer_info li[COMP_LAYERS_MAX];
	uint32_t nr = COMP_LAYERS_MAX;
	int rc = comp_layer_list(r->er_eng, &r->er_id, li, &nr);

	if (rc != 0)
		return rc;
	if (nr > COMP_LAYERS_MAX)
		return err_set(-ST_ECORRUPT, "object %s: %u layers, past %u",
			       eng_id_str(&r->er_id), nr, COMP_LAYERS_MAX);
	for (uint32_t i = 0; i < nr; i++) {
		const struct st_obj_attr *a = &li[i].li_attr;

		slayer__init(&ls[i]);
		sattr__init(&as[i]);
		as[i].block_shift = a->oa_block_shift;
		as[i].layout = a->oa_layout;
		as[i].tier = a->oa_tier;
		as[i].dev = a->oa_dev;
		as[i].pool = a->oa_pool;
		as[i].n = a->oa_data_units;
		as[i].k = a->oa_parity_units;
		as[i].s = a->oa_spare_units;
		as[i].unit_shift = a->oa_unit_shift;
		ls[i].layer = li[i].li_layer;
		ls[i].priority = li[i].li_priority;
		ls[i].attr = &as[i];
		ls[i].blocks = li[i].li_blocks;
		lp[i] = &ls[i];
	}
	lr->n_layers = nr;
	lr->layers = lp;
	return 0;
}

/* MOVE: the blocks of [start, start + nr) up to SRV_LAYER_MOVE_BYTES of
 * them, cut at the object's size (me); lr->next says where to go on. */
static int srv_layer_move(struct srv *s, struct srv_op *so,
			  const struct meta_ent *me, LayerReply *lr)
{
	const struct msg_req *m = &so->so_m;
	uint64_t start = m->mr_start, end = start + m->mr_count;
	uint64_t stop = end < me->me_size_blocks ? end : me->me_size_blocks;
	uint64_t cap = SRV_LAYER_MOVE_BYTES >> me->me_block_shift, n, moved = 0;
	int rc;

	cap = cap != 0 ? cap : 1;
	/* past the size only holes: the call checks the layer, moves none */
	n = start >= stop ? m->mr_count : (stop - start < cap ? stop - start :
					   cap);
	LOG_INFO("server %s: object %s: moving blocks %" PRIu64 "..%" PRIu64
		 " to layer %u (for %s)", s->s_me->cs_name,
		 eng_id_str(&m->mr_req.er_id), start, start + n - 1,
		 m->mr_layer, rpc_sreq_peer(so->so_req));
	rc = comp_move(m->mr_req.er_eng, &m->mr_req.er_id, start, n,
		       m->mr_layer, &moved);
	if (rc != 0)
		return rc;
	lr->moved = moved;
	lr->next = start + n >= stop ? end : start + n;
	return 0;
}

/* MAP: the runs of [start, start + nr), at most SRV_LAYER_MAP_RUNS of
 * them, into lr (runs and their array allocated here: srv_layer_main
 * frees them). */
static int srv_layer_map(struct srv_op *so, LayerReply *lr)
{
	const struct msg_req *m = &so->so_m;
	struct st_layer_ext *v = calloc(SRV_LAYER_MAP_RUNS, sizeof *v);
	uint32_t n = SRV_LAYER_MAP_RUNS;
	uint64_t next = 0;
	int rc;

	lr->runs = calloc(SRV_LAYER_MAP_RUNS, sizeof *lr->runs);
	if (v == NULL || lr->runs == NULL) {
		free(v);
		return err_set(-ENOMEM, "object %s: layer map",
			       eng_id_str(&m->mr_req.er_id));
	}
	rc = comp_layer_map(m->mr_req.er_eng, &m->mr_req.er_id, m->mr_start,
			    m->mr_count, v, &n, &next);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		SLayerExt *x = malloc(sizeof *x);

		if (x == NULL) {
			rc = err_set(-ENOMEM, "object %s: layer map",
				     eng_id_str(&m->mr_req.er_id));
			break;
		}
		slayer_ext__init(x);
		x->start = v[i].le_start;
		x->blocks = v[i].le_blocks;
		x->layer = v[i].le_layer;
		lr->runs[lr->n_runs++] = x;
	}
	lr->next = next;
	free(v);
	return rc;
}

/* SCRUB: the object's units checked, into lr->scrub (allocated here:
 * srv_layer_main frees it). */
static int srv_layer_scrub(struct srv_op *so, LayerReply *lr)
{
	const struct msg_req *m = &so->so_m;
	struct stripe_walk_stats st;
	WalkStats *ws = malloc(sizeof *ws);
	int rc;

	if (ws == NULL)
		return err_set(-ENOMEM, "object %s: scrub",
			       eng_id_str(&m->mr_req.er_id));
	walk_stats__init(ws);
	rc = comp_obj_scrub(m->mr_req.er_eng, &m->mr_req.er_id, &st);
	/* units that could not be rebuilt: figures, as the walks answer,
	 * and the message naming the first group */
	if (rc == -EIO && st.sw_walk_unrepairable > 0) {
		char *note = strdup(err_msg());

		if (note != NULL)
			lr->note = note;
		rc = 0;
	}
	if (rc != 0) {
		free(ws);
		return rc;
	}
	srv_walk_stats_msg(ws, &st);
	lr->scrub = ws;
	return 0;
}

/* Run the op on the engine into lr (its arrays the caller's). */
static int srv_layer_run(struct srv *s, struct srv_op *so, LayerReply *lr,
			 SLayer *ls, SLayer **lp, SAttr *as)
{
	const struct msg_req *m = &so->so_m;
	const struct eng_req *r = &m->mr_req;
	struct meta_ent me;
	int rc = srv_layer_obj(s, so, &me);

	if (rc != 0)
		return rc;
	switch (m->mr_lop) {
	case SLY_ADD:
		rc = comp_layer_add(r->er_eng, &r->er_id, &r->er_ent,
				    m->mr_priority, &lr->layer);
		break;
	case SLY_DROP:
		rc = comp_layer_drop(r->er_eng, &r->er_id, m->mr_layer);
		break;
	case SLY_LIST:
		rc = srv_layer_list(so, lr, ls, lp, as);
		break;
	case SLY_MOVE:
		rc = srv_layer_move(s, so, &me, lr);
		break;
	case SLY_MAP:
		rc = srv_layer_map(so, lr);
		break;
	case SLY_SCRUB:
		rc = srv_layer_scrub(so, lr);
		break;
	default: /* SLY_OF: the decoder admits nothing else */
		err_clear();
		rc = comp_where(r->er_eng, &r->er_id, m->mr_start, &lr->layer);
		if (rc == -ENOENT && err_msg()[0] == '\0')
			rc = err_set(-ENOENT, "object %s: block %" PRIu64 " is "
				     "a hole (no layer holds it)",
				     eng_id_str(&r->er_id), m->mr_start);
		break;
	}
	return rc;
}

/* One request, on its own thread: run, answer (which frees so and
 * leaves the count srv_stop() waits on). */
static void *srv_layer_main(void *arg)
{
	struct srv_op *so = arg;
	struct srv *s = so->so_srv;
	LayerReply lr = LAYER_REPLY__INIT;
	SLayer ls[COMP_LAYERS_MAX], *lp[COMP_LAYERS_MAX];
	SAttr as[COMP_LAYERS_MAX];
	struct msg_buf b = {0};
	Reply rp = REPLY__INIT;
	uint32_t op = so->so_m.mr_lop;
	int rc;

	err_clear();
	rc = srv_layer_run(s, so, &lr, ls, lp, as);
	if (rc == 0)
		rc = msg_pack(&lr.base, &b);
	/* before the answer: once answered, s may be stopped and freed */
	__atomic_sub_fetch(&s->s_layer_threads, 1, __ATOMIC_RELEASE);
	if (rc != 0) {
		if (op != SLY_OF || rc != -ENOENT) /* a hole: an answer */
			LOG_INFO("server %s: object %s: layer %s refused: %s",
				 s->s_me->cs_name,
				 eng_id_str(&so->so_m.mr_req.er_id),
				 srv_layer_names[op], err_msg());
		srv_reply_err(so, rc);
	} else {
		if (op != SLY_LIST && op != SLY_OF && op != SLY_MAP)
			LOG_INFO("server %s: object %s: layer %s done",
				 s->s_me->cs_name,
				 eng_id_str(&so->so_m.mr_req.er_id),
				 srv_layer_names[op]);
		rp.text.data = b.mb_p;
		rp.text.len = b.mb_len;
		srv_reply(so, 0, &rp, NULL);
	}
	free(b.mb_p);
	for (size_t i = 0; i < lr.n_runs; i++)
		free(lr.runs[i]);
	free(lr.runs);
	free(lr.scrub);
	if (lr.note != protobuf_c_empty_string)
		free(lr.note);
	return NULL;
}

void srv_layer(struct srv *s, struct srv_op *so)
{
	pthread_attr_t at;
	pthread_t t;
	int rc;

	if (__atomic_add_fetch(&s->s_layer_threads, 1, __ATOMIC_ACQ_REL) >
	    SRV_LAYER_THREADS) {
		__atomic_sub_fetch(&s->s_layer_threads, 1, __ATOMIC_RELEASE);
		srv_reply_err(so, err_set(-EBUSY, "server %s: %u layer requests "
					  "in progress already",
					  s->s_me->cs_name, SRV_LAYER_THREADS));
		return;
	}
	rc = -pthread_attr_init(&at);
	if (rc == 0) {
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		rc = -pthread_create(&t, &at, srv_layer_main, so);
		pthread_attr_destroy(&at);
	}
	if (rc != 0) {
		__atomic_sub_fetch(&s->s_layer_threads, 1, __ATOMIC_RELEASE);
		srv_reply_err(so, err_set(rc, "server %s: no thread for a layer "
					  "request", s->s_me->cs_name));
	}
}
