/*
 * srv.c — strata-server's request handlers (see srv.h, docs/cluster.md).
 *
 *   rpc handler thread   srv_handle(): decode and check (msg.c); reads run
 *                        and answer here; updates go to the engine
 *                        (eng_exec) and are answered from their ci_done,
 *                        when durable.  Index requests for a replica not yet
 *                        verified in this run are parked for the syncer.
 *   syncer thread        srv_syncer(): verifies parked indices against the
 *                        peer replicas (srv_idx.c), then runs their
 *                        requests.
 * Object requests use the attributes stored here, never the client's: the
 * client's creation time is only checked as the handle's incarnation.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "addb/addb.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/server/rdev.h"
#include "core/server/srv_internal.h"

static pthread_key_t srv_tls_key;
static pthread_once_t srv_tls_once = PTHREAD_ONCE_INIT;

static void srv_tls_leave(void *v)
{
	(void)v;
	eng_thread_leave();
}

static void srv_tls_make(void)
{
	pthread_key_create(&srv_tls_key, srv_tls_leave);
}

/* RPC handler threads are the RPC layer's: register them with the engine
 * on first use; the key's destructor unregisters them at thread exit. */
void srv_thread_enter(void)
{
	pthread_once(&srv_tls_once, srv_tls_make);
	if (pthread_getspecific(srv_tls_key) == NULL) {
		eng_thread_enter();
		pthread_setspecific(srv_tls_key, (void *)1);
	}
}

uint64_t srv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ profile */

/* STRATA_SRV_PROFILE=FILE: object requests note when each stage ends
 * (so_t); the sums per class are appended to FILE at srv_stop(). */

static uint64_t srv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void srv_prof_mark(struct srv_op *so, enum srv_stage st)
{
	if (so->so_srv->s_prof_path != NULL)
		so->so_t[st] = srv_now_ns();
}

static uint32_t srv_prof_class(const struct srv_op *so)
{
	const struct eng_req *r = &so->so_m.mr_req;

	return (r->er_kind == ER_OBJ_WRITE ? 4u : 0u) |
	       (so->so_m.mr_data_len >= (256u << 10) ? 2u : 0u) |
	       (r->er_ent.me_layout != ST_LAYOUT_PLAIN ? 1u : 0u);
}

/* Add so's stage times (each from the previous stage it passed). */
static void srv_prof_add(struct srv_op *so)
{
	struct srv_prof *p = &so->so_srv->s_prof;
	uint32_t c = srv_prof_class(so);
	uint64_t prev = so->so_t[SRV_T_RECV];

	if (prev == 0 || (so->so_m.mr_req.er_kind != ER_OBJ_WRITE &&
			  so->so_m.mr_req.er_kind != ER_OBJ_READ))
		return;
	__atomic_add_fetch(&p->sp_nr[c], 1, __ATOMIC_RELAXED);
	for (uint32_t st = SRV_T_RECV + 1; st < SRV_T_END; st++) {
		if (so->so_t[st] == 0 || st == SRV_T_ENG)
			continue;
		__atomic_add_fetch(&p->sp_ns[c][st], so->so_t[st] - prev,
				   __ATOMIC_RELAXED);
		prev = so->so_t[st];
	}
}

/* The endpoint's bulk transfers: how many ran at once, and their rate
 * while any ran (core/rpc rs_xfer_*), beside the raw RMA figure. */
static void srv_prof_print_xfer(struct srv *s, FILE *f)
{
	struct rpc_stats st;

	rpc_ep_stats(s->s_ep, &st);
	for (int w = 0; w < 2; w++) {
		if (st.rs_xfers[w] == 0 || st.rs_xfer_busy_us[w] == 0)
			continue;
		fprintf(f, "server %s: rma %s: %" PRIu64 " transfers, %.1f MiB,"
			" mean %.1f us each, busy %.1f ms, %.1f in flight, "
			"%.1f MB/s while busy; %" PRIu64 " progress wake-ups\n",
			s->s_me->cs_name, w ? "push" : "pull", st.rs_xfers[w],
			st.rs_xfer_bytes[w] / 1048576.0,
			(double)st.rs_xfer_us[w] / st.rs_xfers[w],
			st.rs_xfer_busy_us[w] / 1e3,
			(double)st.rs_xfer_us[w] / st.rs_xfer_busy_us[w],
			(double)st.rs_xfer_bytes[w] / st.rs_xfer_busy_us[w],
			st.rs_wakeups);
	}
}

static void srv_prof_print(struct srv *s)
{
	static const char *const names[SRV_T_END] = {
		"recv", "exec-queue", "buffer", "rma-pull", "eng-exec",
		"commit+sync", "rma-push", "reply"};
	FILE *f;

	if (s->s_prof_path == NULL || (f = fopen(s->s_prof_path, "a")) == NULL)
		return;
	for (uint32_t c = 0; c < SRV_PROF_CLASSES; c++) {
		uint64_t nr = s->s_prof.sp_nr[c], tot = 0;

		if (nr == 0)
			continue;
		fprintf(f, "server %s: %s %s %s: %" PRIu64 " ops, mean us:",
			s->s_me->cs_name, c & 4 ? "write" : "read",
			c & 2 ? ">=256KiB" : "<256KiB",
			c & 1 ? "units" : "plain", nr);
		for (uint32_t st = SRV_T_RECV + 1; st < SRV_T_END; st++) {
			uint64_t ns = s->s_prof.sp_ns[c][st];

			/* eng-exec was summed on its own: the stage after
			 * it (durable for writes, push for reads) ran from
			 * before it. */
			if (st == (c & 4 ? SRV_T_DURABLE : SRV_T_PUSH))
				ns -= s->s_prof.sp_ns[c][SRV_T_ENG];
			tot += ns;
			fprintf(f, " %s %.1f", names[st], ns / 1e3 / nr);
		}
		fprintf(f, " total %.1f\n", tot / 1e3 / nr);
	}
	srv_prof_print_xfer(s, f);
	fclose(f);
}

/* ------------------------------------------------------------ replies */

static void srv_op_free(struct srv_op *so)
{
	struct srv *s = so->so_srv;

	if (s->s_prof_path != NULL)
		srv_prof_add(so);
	if (so->so_rbuf) {
		rpc_buf_put(s->s_ep, so->so_m.mr_data, so->so_rbuf_lost);
		so->so_m.mr_data = NULL;
	}
	if (so->so_route_ref != NULL && s->s_route_put != NULL)
		s->s_route_put(s->s_route_arg, so->so_route_ref);
	srv_idx_fan_detach(so);
	msg_req_fini(&so->so_m);
	eng_spacevec_fini(&so->so_m.mr_req.er_ci.ci_alloc);
	eng_spacevec_fini(&so->so_m.mr_req.er_ci.ci_freed);
	free(so);
	srv_leave(s);
}

/* The process's metrics of a request answered (addb/addb.h): its class
 * is its engine request's kind (ER_*, in the order of the op labels). */
_Static_assert(ER_OBJ_READ == 1 && ER_IDX_GET == 5 && ER_ENT_CREATE == 9 &&
	       ER_ENT_SETATTR == 13, "ER_* - 1 is the metrics' op label");
static void srv_addb(struct srv_op *so, int rc)
{
	uint32_t k = so->so_m.mr_req.er_kind;
	size_t bulk;

	if (so->so_t0_ns == 0 || k < ER_OBJ_READ || k > ER_ENT_SETATTR)
		return;
	if (so->so_trace != 0)
		addb_rec(ADDB_R_SRV_REPLY, so->so_trace, k - 1,
			 (uint64_t)(int64_t)rc, addb_now_ns() - so->so_t0_ns);
	addb_obs(ADDB_SRV_OP_LAT, k - 1, addb_now_ns() - so->so_t0_ns);
	if (rc != 0)
		addb_add(ADDB_SRV_OP_ERR, k - 1, 1);
	bulk = rpc_sreq_bulk_len(so->so_req);
	if (rc == 0 && bulk != 0 && (k == ER_OBJ_READ || k == ER_OBJ_WRITE))
		addb_add(ADDB_SRV_OP_BYTES, k - 1, bulk);
}

void srv_reply(struct srv_op *so, int rc, const Reply *rp, const char *msg)
{
	struct msg_buf b = {0};

	srv_addb(so, rc);
	if (rc == 0 && rp != NULL && msg_pack(&rp->base, &b) != 0) {
		rc = -ENOMEM;
		msg = err_msg();
	}
	rpc_sreq_reply(so->so_req, rc, b.mb_p, b.mb_len,
		       rc != 0 ? (msg != NULL ? msg : err_msg()) : NULL);
	srv_prof_mark(so, SRV_T_REPLY);
	free(b.mb_p);
	srv_op_free(so);
}

void srv_reply_err(struct srv_op *so, int rc)
{
	srv_reply(so, rc, NULL, err_msg());
}

void srv_reply_attr(struct srv_op *so, uint64_t seq)
{
	struct eng_req *r = &so->so_m.mr_req;
	Reply rp = REPLY__INIT;
	SAttr a;
	SId c;

	if (srv_idx_fan_park(so, seq))
		return; /* the copies' last end answers */
	rp.fanned = so->so_fanned;
	msg_attr_out(&a, &c, &r->er_ent);
	if (so->so_ridx != NULL)
		a.ctime_ns = so->so_ridx->ri_inc;
	rp.attr = &a;
	rp.bytes = r->er_bytes;
	rp.seq = seq;
	rp.term = so->so_term;
	if (r->er_rcs != NULL && (r->er_kind == ER_IDX_PUT ||
				  r->er_kind == ER_IDX_DEL)) {
		rp.n_rcs = so->so_m.mr_nr;
		rp.rcs = r->er_rcs;
	}
	srv_reply(so, 0, &rp, NULL);
}

/* ------------------------------------------------------------ updates */

/* Second stage of an update: its replica record is durable.  Test
 * builds: fault srv.idx.ent.slow holds the answer to a client's index
 * CREATE or DELETE applied here first for SRV_ENT_SLOW_US, so that this
 * server's catch-up runs before the client reaches the other replicas
 * (tests/integ/idx_race_test.sh). */
void srv_seq_done_cb(struct eng_citem *ci, int rc)
{
	struct srv_op *so = (struct srv_op *)((char *)ci -
					      offsetof(struct srv_op, so_seq_ci));
	uint32_t kind = so->so_m.mr_req.er_kind;

	if ((kind == ER_ENT_CREATE || kind == ER_ENT_DELETE) &&
	    !(so->so_m.mr_rflags & SRF_REPLICA) &&
	    FAULT_HIT("srv.idx.ent.slow")) {
		LOG_INFO("index %s: fault srv.idx.ent.slow: %s applied, answer "
			 "held %u ms", eng_id_str(&so->so_m.mr_req.er_id),
			 kind == ER_ENT_CREATE ? "CREATE" : "DELETE",
			 SRV_ENT_SLOW_US / 1000);
		usleep(SRV_ENT_SLOW_US);
	}
	if (rc != 0)
		LOG_WARNING("index %s: replica record not saved: %s",
			    eng_id_str(&so->so_m.mr_req.er_id), ci->ci_msg);
	srv_reply_attr(so, so->so_new_seq);
}

/* The engine finished an update (durable, or failed). */
static void srv_upd_done(struct eng_citem *ci, int rc)
{
	struct srv_op *so = (struct srv_op *)ci;
	struct srv *s = so->so_srv;

	srv_prof_mark(so, SRV_T_DURABLE);
	/* test builds: the ordering replica dies with an update durable,
	 * unanswered (tests/integ/ec_crash_test.sh; when the versions were
	 * a second commit, it died between the two) */
	if (so->so_one && rc == 0 && FAULT_HIT("srv.idx.seq.die")) {
		LOG_WARNING("index %s: fault point srv.idx.seq.die: killed "
			    "with the update durable, unanswered",
			    eng_id_str(&so->so_m.mr_req.er_id));
		raise(SIGKILL);
	}
	if (so->so_one) {
		srv_ridx_one_done(so, rc);
		return;
	}
	if (rc != 0) {
		srv_reply(so, rc, NULL, ci->ci_msg);
		return;
	}
	if (!srv_ridx_after_update(s, so)) {
		srv_reply_attr(so, 0);
		return;
	}
	eng_commit_submit(s->s_eng, &so->so_seq_ci);
}

/* Run the prepared request: reads answer now, updates when durable. */
static void srv_run(struct srv_op *so)
{
	struct srv *s = so->so_srv;
	struct eng_req *r = &so->so_m.mr_req;
	int rc;

	r->er_ci.ci_done = srv_upd_done;
	r->er_ci.ci_executed = r->er_ci.ci_also == srv_ridx_one_apply ?
			       srv_ridx_one_executed : NULL;
	err_clear();
	if (s->s_prof_path != NULL && so->so_t[SRV_T_RECV] != 0) {
		/* A pending update may be answered (so freed) before
		 * eng_exec() returns: its time goes straight to the sums. */
		uint32_t c = srv_prof_class(so);
		uint64_t t0 = srv_now_ns();

		rc = eng_exec(r->er_eng, r);
		__atomic_add_fetch(&s->s_prof.sp_ns[c][SRV_T_ENG],
				   srv_now_ns() - t0, __ATOMIC_RELAXED);
	} else {
		rc = eng_exec(r->er_eng, r);
	}
	if (rc == ENG_PENDING)
		return;
	if (rc != 0) {
		srv_reply_err(so, rc);
		return;
	}
	switch (r->er_kind) {
	case ER_OBJ_READ:
		srv_obj_read_reply(so);
		break;
	case ER_IDX_GET:
	case ER_IDX_NEXT:
		srv_idx_read_reply(so);
		break;
	default:
		srv_reply_attr(so, so->so_ridx != NULL ? so->so_ridx->ri_seq : 0);
		break;
	}
}

void srv_run_prepared(struct srv_op *so)
{
	srv_run(so);
}

/* ------------------------------------------------------------ objects */

/* Fill r->er_ent from the stored record, checking type and incarnation. */
static int srv_obj_attrs(struct srv *s, struct srv_op *so)
{
	struct eng_req *r = &so->so_m.mr_req;
	struct meta_ent me;
	MDB_txn *txn;
	struct eng *e = so->so_m.mr_req.er_eng;
	int rc = meta_rtxn_begin(eng_meta(e), &txn, "begin read");

	if (rc != 0)
		return rc;
	rc = meta_ent_get(txn, eng_meta(e), &r->er_id, &me);
	meta_rtxn_put(eng_meta(e), txn);
	if (rc == -ENOENT || (rc == 0 && me.me_type != ST_ET_OBJ))
		return err_set(-ENOENT, "object %s does not exist on server "
			       "%s", eng_id_str(&r->er_id), s->s_me->cs_name);
	if (rc != 0)
		return rc;
	if (me.me_ctime_ns != so->so_m.mr_incarnation)
		return err_set(-ENOENT, "object %s was deleted (and made again) "
			       "since this handle opened it",
			       eng_id_str(&r->er_id));
	r->er_ent = me;
	return 0;
}

void srv_obj_read_reply(struct srv_op *so)
{
	int rc;

	/* A zero-copy read pushed its mapped extents already: the rest. */
	if (so->so_zc != NULL)
		rc = srv_zc_push_rest(so->so_zc);
	else
		rc = rpc_sreq_bulk_push(so->so_req, 0, so->so_m.mr_data,
					so->so_m.mr_data_len);
	srv_prof_mark(so, SRV_T_PUSH);
	if (rc != 0) {
		so->so_rbuf_lost = so->so_rbuf && rc == -ETIMEDOUT;
		srv_reply_err(so, rc);
		return;
	}
	srv_reply_attr(so, 0);
}

/* A held zero-copy write whose pull failed: nothing was mapped.  Its
 * space goes back, unless a pull into it was abandoned and may still
 * land: then it stays taken until the server restarts (the allocator is
 * rebuilt from the maps at open, where it is free). */
static void srv_obj_zc_fail(struct srv_op *so, struct srv_zc_xfer *x, int rc)
{
	struct srv *s = so->so_srv;
	struct eng_citem *ci = &so->so_m.mr_req.er_ci;

	if (!x->zx_lost) {
		eng_space_release(s->s_eng, &ci->ci_alloc);
	} else {
		LOG_WARNING("server %s: object %s: a zero-copy pull was "
			    "abandoned at its deadline: its space stays out "
			    "of use until the server restarts",
			    s->s_me->cs_name, eng_id_str(&so->so_m.mr_req.er_id));
	}
	ci->ci_alloc.sv_nr = 0;
	srv_reply_err(so, rc);
}

/*
 * Run a plain object's write or read with the zero-copy hook (srv_zc.c):
 * the engine's device I/O on a registered NVRAM device moves the bytes
 * straight between the client and the device map.  A read pushes from
 * the map inside eng_exec(), under its snapshot.  A write's device write
 * only records where each range goes, and its commit item is held
 * (ci_hold): after eng_exec() the client's bytes are pulled straight into
 * that allocated, not yet mapped space and persisted, and only then is the
 * item released to the commit that maps it (srv_zc_commit: in this thread
 * when nothing else is on its way, else queued).  The pull is not counted
 * as engine execution (e_inexec), so other writes' group commits do not
 * wait for it.  A failed pull maps nothing.  so may be freed once it is
 * answered or its item queued: x is ours.
 */
static void srv_obj_run_zc(struct srv_op *so)
{
	struct srv *s = so->so_srv;
	struct eng_citem *ci = &so->so_m.mr_req.er_ci;
	struct srv_zc_xfer x;
	int rc;

	srv_zc_hook_init(&x, so);
	so->so_zc = &x;
	if (so->so_m.mr_req.er_kind == ER_OBJ_WRITE)
		ci->ci_hold = srv_zc_hold;
	nvram_xfer_set(&x.zx_hook);
	srv_run(so);
	nvram_xfer_set(NULL);
	if (!x.zx_held) {
		/* answered already: a read, or a write that failed */
		if (x.zx_lost)
			LOG_WARNING("server %s: a zero-copy transfer was "
				    "abandoned at its deadline",
				    s->s_me->cs_name);
		return;
	}
	so->so_zc = NULL;
	ci->ci_hold = NULL;
	rc = srv_zc_pull_held(&x);
	if (rc == 0 && FAULT_HIT("srv.obj.pull"))
		rc = err_set(-EIO, "object %s: fault point srv.obj.pull",
			     eng_id_str(&so->so_m.mr_req.er_id));
	if (rc != 0) {
		srv_obj_zc_fail(so, &x, rc);
		return;
	}
	srv_zc_commit(&x);
}

static void srv_obj(struct srv *s, struct srv_op *so)
{
	struct msg_req *m = &so->so_m;
	struct eng_req *r = &m->mr_req;
	size_t bulk = rpc_sreq_bulk_len(so->so_req);
	bool zc = false;
	int rc;

	if (so->so_t[SRV_T_RECV] != 0)
		srv_prof_mark(so, SRV_T_EXEC);
	rc = srv_obj_attrs(s, so);

	if (rc != 0) {
		srv_reply_err(so, rc);
		return;
	}
	if (r->er_kind == ER_OBJ_READ || r->er_kind == ER_OBJ_WRITE) {
		uint32_t shift = r->er_ent.me_block_shift;

		if (m->mr_blocks > (ST_OP_BYTES_MAX >> shift) ||
		    (m->mr_blocks << shift) != bulk) {
			__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
			srv_reply_err(so, err_set(-EINVAL, "request: object %s: "
						  "%" PRIu64 " blocks of %u bytes"
						  " but %zu bytes of data "
						  "(at most %llu)",
						  eng_id_str(&r->er_id),
						  m->mr_blocks, 1u << shift,
						  bulk, ST_OP_BYTES_MAX));
			return;
		}
		LOG_INFO("server %s: %s %s: %" PRIu64 " blocks from %s",
			 s->s_me->cs_name, r->er_kind == ER_OBJ_WRITE ?
			 "write" : "read", eng_id_str(&r->er_id),
			 m->mr_blocks, rpc_sreq_peer(so->so_req));
		if (srv_obj_units(s, so))
			return;
		/* A registered, page-aligned buffer: the RMA lands where
		 * the O_DIRECT device I/O reads or fills it (no bounce). */
		m->mr_data_len = bulk;
		m->mr_data = rpc_buf_get(s->s_ep, bulk > 0 ? bulk : 1);
		if (m->mr_data == NULL) {
			srv_reply_err(so, err_set(-ENOMEM, "object %s: %zu "
						  "bytes", eng_id_str(&r->er_id),
						  bulk));
			return;
		}
		so->so_rbuf = true;
		srv_prof_mark(so, SRV_T_BUF);
		/* zero-copy only on this server's own store (its devices) */
		zc = r->er_eng == s->s_eng && srv_zc_obj_ok(s, so);
		if (r->er_kind == ER_OBJ_WRITE && !zc) {
			rc = rpc_sreq_bulk_pull(so->so_req, 0, m->mr_data, bulk);
			if (rc != 0 || FAULT_HIT("srv.obj.pull")) {
				/* Nothing is written nor mapped. */
				so->so_rbuf_lost = rc == -ETIMEDOUT;
				srv_reply_err(so, rc != 0 ? rc :
					      err_set(-EIO, "object %s: fault "
						      "point srv.obj.pull",
						      eng_id_str(&r->er_id)));
				return;
			}
			srv_prof_mark(so, SRV_T_PULL);
		}
		m->mr_databuf[0] = m->mr_data;
		m->mr_datalen[0] = bulk;
		m->mr_databv = (struct st_bufvec){1, m->mr_databuf,
						      m->mr_datalen};
		r->er_data = &m->mr_databv;
	}
	if (zc)
		srv_obj_run_zc(so);
	else
		srv_run(so);
}

/* ------------------------------------------------------------ entities */

static void srv_ent(struct srv *s, struct srv_op *so)
{
	struct eng_req *r = &so->so_m.mr_req;

	if (r->er_type == ST_ET_IDX && (so->so_m.mr_rflags & SRF_INDEX)) {
		srv_idx_ent(s, so);
		return;
	}
	if (r->er_type == ST_ET_OBJ || r->er_type == ST_ET_IDX)
		r->er_ent.me_ctime_ns = so->so_m.mr_incarnation ?
			so->so_m.mr_incarnation : r->er_ent.me_ctime_ns;
	srv_run(so);
}

/* ------------------------------------------------------------ listing */

/* srv_list_walk()'s output. */
struct list_arg {
	SId *la_ids;
	SId **la_ptrs;
	size_t la_n;
	size_t la_max;
};

static int srv_list_one(void *arg, const struct st_id *id)
{
	struct list_arg *a = arg;

	if (a->la_n >= a->la_max)
		return META_SCAN_STOP;
	msg_id_out(&a->la_ids[a->la_n],
		   &(struct st_id){id->si_hi, id->si_lo});
	a->la_ptrs[a->la_n] = &a->la_ids[a->la_n];
	a->la_n++;
	return a->la_n >= a->la_max ? META_SCAN_STOP : META_SCAN_NEXT;
}

static int srv_list_walk(struct eng *e, MDB_txn *txn, struct msg_req *m,
			 SId *ids, SId **ptrs, size_t *nr)
{
	const struct st_id *c = &m->mr_req.er_container;
	struct st_id root = {0, 0}, cont = {c->si_hi, c->si_lo};
	struct st_id after = {m->mr_after.si_hi, m->mr_after.si_lo};
	struct list_arg la = {ids, ptrs, 0, m->mr_nr};
	int rc = meta_member_scan(txn, eng_meta(e),
				  m->mr_req.er_type == ST_ET_CONTAINER ?
				  &root : &cont, m->mr_req.er_type,
				  m->mr_has_after ? &after : NULL,
				  srv_list_one, &la, "list");

	*nr = la.la_n;
	return rc;
}

/*
 * Test builds: fault srv.list.hold makes a list request wait on another
 * server as a request that calls other servers several times in a row
 * does: it calls server (self + 1) again and again while the calls fail
 * by timing out or finding it down, for up to 4 times (call timeout + 5 s)
 * (tests/integ/peer_restart_test.sh freezes that server and stops this
 * one meanwhile: srv_stop() must fail the calls, not free under them).
 */
static void srv_list_hold(struct srv *s)
{
	uint32_t j = (s->s_self + 1) % s->s_conf->cc_nr_servers;
	uint64_t t0 = srv_now_ms();
	uint64_t until = t0 + 4ull * (s->s_conf->cc_call_ms + 5000);
	uint32_t calls = 0;
	int rc = -ETIMEDOUT;

	if (j == s->s_self || !FAULT_HIT("srv.list.hold"))
		return;
	LOG_INFO("server %s: fault srv.list.hold: calling server %s until a "
		 "call ends otherwise than timed out or down",
		 s->s_me->cs_name, s->s_conf->cc_servers[j].cs_name);
	while ((rc == -ETIMEDOUT || rc == -EHOSTDOWN) && srv_now_ms() < until) {
		struct rpc_result res;

		rc = peers_call(s->s_peers, j, RPC_OP_NOOP, NULL, 0, NULL, &res);
		free(res.rr_body);
		calls++;
		if (rc == -EHOSTDOWN)
			usleep(100000);
	}
	LOG_INFO("server %s: fault srv.list.hold: ended after %u calls and "
		 "%" PRIu64 " ms: %d %s", s->s_me->cs_name, calls,
		 srv_now_ms() - t0, rc, rc != 0 ? err_msg() : "answered");
}

static void srv_list(struct srv *s, struct srv_op *so)
{
	struct msg_req *m = &so->so_m;
	Reply rp = REPLY__INIT;
	SId *ids = calloc(m->mr_nr, sizeof *ids);
	SId **ptrs = calloc(m->mr_nr, sizeof *ptrs);
	struct meta_ent me;
	MDB_txn *txn = NULL;
	struct eng *e = s->s_eng;
	void *ref = NULL;
	int rc = ids == NULL || ptrs == NULL ? err_set(-ENOMEM, "list") : 0;

	/* the store of a home this server acts for (docs/cluster.md
	 * "Taking over a home"): a client listing every member of a
	 * container asks here for a home that does not answer */
	if (rc == 0 && m->mr_has_list_home && m->mr_list_home != s->s_self) {
		if (m->mr_list_home >= s->s_conf->cc_nr_servers)
			rc = err_set(-EINVAL, "request: list: home %u: not a "
				     "server", m->mr_list_home);
		else if (s->s_route == NULL)
			rc = err_set(-EREMCHG, "server %s does not act for "
				     "home %s", s->s_me->cs_name,
				     s->s_conf->cc_servers[m->mr_list_home]
					     .cs_name);
		else
			rc = s->s_route(s->s_route_arg, m->mr_list_home, &e,
					&ref);
		if (rc == 0 && e == s->s_eng)
			rc = err_set(-EREMCHG, "server %s does not act for "
				     "home %s", s->s_me->cs_name,
				     s->s_conf->cc_servers[m->mr_list_home]
					     .cs_name);
	}
	if (rc == 0)
		rc = meta_rtxn_begin(eng_meta(e), &txn, "begin list");
	if (rc == 0 && m->mr_req.er_type != ST_ET_CONTAINER) {
		rc = meta_ent_get(txn, eng_meta(e),
				  &m->mr_req.er_container, &me);
		if (rc == -ENOENT || (rc == 0 && me.me_type != ST_ET_CONTAINER))
			rc = err_set(-ENOENT, "container %s does not exist",
				     eng_id_str(&m->mr_req.er_container));
	}
	if (rc == 0)
		rc = srv_list_walk(e, txn, m, ids, ptrs, &rp.n_ids);
	if (txn != NULL)
		meta_rtxn_put(eng_meta(e), txn);
	if (ref != NULL)
		s->s_route_put(s->s_route_arg, ref);
	rp.ids = ptrs;
	if (rc == 0)
		srv_reply(so, 0, &rp, NULL);
	else
		srv_reply_err(so, rc);
	free(ids);
	free(ptrs);
}

/* ------------------------------------------------------------ status */

static void srv_status_devs(struct srv *s, SStatus *st, SDev *devs,
			    SDev **dp)
{
	uint32_t n = eng_dev_nr(s->s_eng), k = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct st_dev_info di;
		SDev *d = &devs[k];

		eng_dev_info(s->s_eng, i, &di);
		/* Remote devices are other servers' slices: their owners
		 * report the devices (docs/cluster.md). */
		if (strcmp(di.di_driver, ENG_REMOTE_DRIVER) == 0)
			continue;
		sdev__init(d);
		d->index = di.di_index;
		d->tier = di.di_tier;
		d->path = strdup(di.di_path);
		d->driver = strdup(di.di_driver);
		d->size = di.di_size_bytes;
		d->free = di.di_free_bytes;
		d->state = di.di_state;
		d->errors = di.di_errors;
		d->direct_io = di.di_direct_io;
		d->model = di.di_model;
		d->rebalance = di.di_rebalance;
		d->zone_size = di.di_zone_size;
		d->zones = di.di_zones;
		d->zones_empty = di.di_zones_empty;
		d->reads = di.di_reads;
		d->writes = di.di_writes;
		dp[k++] = d;
	}
	st->n_devs = k;
	st->devs = dp;
}

static void srv_status_pools(struct srv *s, SStatus *st, SPool *pools,
			     SPool **pp)
{
	uint32_t n = eng_pool_nr(s->s_eng);

	for (uint32_t p = 0; p < n; p++) {
		const struct eng_pool *ep = eng_pool_get(s->s_eng, p);
		SPool *sp = &pools[p];

		spool__init(sp);
		sp->index = p;
		sp->name = strdup(ep->ep_name);
		sp->n_devs = ep->ep_nr;
		sp->devs = calloc(ep->ep_nr ? ep->ep_nr : 1, sizeof(uint32_t));
		for (uint32_t i = 0; sp->devs != NULL && i < ep->ep_nr; i++) {
			struct st_dev_info di;

			sp->devs[i] = ep->ep_devs[i];
			eng_dev_info(s->s_eng, ep->ep_devs[i], &di);
			sp->size += di.di_size_bytes;
			sp->free += di.di_free_bytes;
		}
		if (sp->devs == NULL)
			sp->n_devs = 0;
		pp[p] = sp;
	}
	st->n_pools = n;
	st->pools = pp;
}

/* Free bytes of this home's slices on each server's devices (its remote
 * devices "remote:NAME:I", by server, in sf; and one by one in sl, at
 * most LIM_DEV_MAX). */
static void srv_status_slices(struct srv *s, SStatus *st, uint64_t *sf,
			      SSlice *sl, SSlice **slp)
{
	uint32_t n = s->s_eng != NULL ? eng_dev_nr(s->s_eng) : 0, k = 0;

	memset(sf, 0, CLU_SERVERS_MAX * sizeof *sf);
	for (uint32_t i = 0; i < n; i++) {
		struct st_dev_info di;
		const char *ref, *colon;
		char name[CLU_NAME_MAX + 1];
		int j;

		eng_dev_info(s->s_eng, i, &di);
		if (strcmp(di.di_driver, ENG_REMOTE_DRIVER) != 0 ||
		    strncmp(di.di_path, ENG_REMOTE_PREFIX,
			    sizeof ENG_REMOTE_PREFIX - 1) != 0)
			continue;
		ref = di.di_path + sizeof ENG_REMOTE_PREFIX - 1;
		colon = strrchr(ref, ':');
		if (colon == NULL || (size_t)(colon - ref) > CLU_NAME_MAX)
			continue;
		memcpy(name, ref, (size_t)(colon - ref));
		name[colon - ref] = '\0';
		j = clu_server_find(s->s_conf, name);
		if (j < 0)
			continue;
		sf[j] += di.di_free_bytes;
		if (k < LIM_DEV_MAX) {
			sslice__init(&sl[k]);
			sl[k].server = (uint32_t)j;
			sl[k].dev = (uint32_t)strtoul(colon + 1, NULL, 10);
			sl[k].free = di.di_free_bytes;
			slp[k] = &sl[k];
			k++;
		}
	}
	st->n_slice_free = s->s_conf->cc_nr_servers;
	st->slice_free = sf;
	st->n_slices = k;
	st->slices = slp;
}

static void srv_status(struct srv *s, struct srv_op *so)
{
	SStatus st = SSTATUS__INIT;
	struct rpc_stats rs;
	struct srv_counters cnt;
	Reply rp = REPLY__INIT;
	SDev devs[LIM_DEV_MAX], *dp[LIM_DEV_MAX];
	SSlice sl[LIM_DEV_MAX], *slp[LIM_DEV_MAX];
	SPool *pools = calloc(LIM_DEV_MAX + 8, sizeof *pools);
	SPool **pp = calloc(LIM_DEV_MAX + 8, sizeof *pp);
	uint64_t slice_free[CLU_SERVERS_MAX];

	if (pools == NULL || pp == NULL) {
		free(pools);
		free(pp);
		srv_reply_err(so, err_set(-ENOMEM, "status"));
		return;
	}
	st.name = (char *)s->s_me->cs_name;
	st.uptime_ms = srv_now_ms() - s->s_start_ms;
	srv_status_devs(s, &st, devs, dp);
	srv_status_pools(s, &st, pools, pp);
	srv_counters_get(s, &cnt);
	st.requests = cnt.sc_requests;
	st.bad_requests = cnt.sc_bad;
	/* Not counting this STATUS request itself. */
	st.inflight = cnt.sc_inflight > 0 ? cnt.sc_inflight - 1 : 0;
	st.idx_syncs = cnt.sc_syncs;
	st.idx_tombs = cnt.sc_tombs;
	st.late_writes = cnt.sc_late;
	st.fenced_bytes = s->s_eng != NULL ? eng_space_fenced(s->s_eng) : 0;
	st.zc_write_bytes = cnt.sc_zc_wr_bytes;
	st.zc_read_bytes = cnt.sc_zc_rd_bytes;
	st.idx_doubts = cnt.sc_doubts;
	srv_status_slices(s, &st, slice_free, sl, slp);
	st.draining = s->s_draining;
	rpc_ep_stats(s->s_ep, &rs);
	st.rpc_dropped = rs.rs_bad_msgs;
	st.auth_failed = rs.rs_auth_failed;
	rp.status = &st;
	srv_reply(so, 0, &rp, NULL);
	for (size_t i = 0; i < st.n_devs; i++) {
		free(devs[i].path);
		free(devs[i].driver);
	}
	for (size_t i = 0; i < st.n_pools; i++) {
		free(pools[i].name);
		free(pools[i].devs);
	}
	free(pools);
	free(pp);
}

static void srv_conf_get(struct srv *s, struct srv_op *so)
{
	Reply rp = REPLY__INIT;

	rp.text.data = (uint8_t *)s->s_conf->cc_text;
	rp.text.len = s->s_conf->cc_text_len;
	srv_reply(so, 0, &rp, NULL);
}

/* The metrics page or the trace records of this process, written by
 * write() into a memory stream, as the reply's text (addb/addb.h). */
struct srv_text {
	const struct addb_snap *st_snap;
	const struct addb_trace *st_trace;
};

static int srv_text_write(const struct srv_op *so, const struct srv_text *t,
			  FILE *f)
{
	if (t->st_trace != NULL)
		return addb_trace_json(t->st_trace, so->so_m.mr_max_records ?
				       so->so_m.mr_max_records : 10000, f);
	return so->so_m.mr_json ? addb_json_write(t->st_snap,
						  so->so_m.mr_prio, f) :
				  addb_prom_write(t->st_snap,
						  so->so_m.mr_prio, f);
}

static void srv_text_reply(struct srv_op *so, const struct srv_text *t)
{
	Reply rp = REPLY__INIT;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	rc = f == NULL ? err_set(-ENOMEM, "metrics: no memory") :
	     srv_text_write(so, t, f);
	if (f != NULL)
		fclose(f);
	rp.text.data = (uint8_t *)buf;
	rp.text.len = len;
	if (rc == 0)
		srv_reply(so, 0, &rp, NULL);
	else
		srv_reply_err(so, rc);
	free(buf);
}

/* SOP_METRICS: this server process's metrics, or with records its last
 * trace records as JSON lines. */
static void srv_metrics(struct srv *s, struct srv_op *so)
{
	struct srv_text t = {0};
	struct addb_snap *sn = NULL;
	struct addb_trace *tr = NULL;
	int rc;

	if (so->so_m.mr_records)
		rc = addb_trace_read(getpid(), NULL, so->so_m.mr_max_records ?
				     so->so_m.mr_max_records : 10000, &tr);
	else
		rc = addb_snap_self(&sn);
	if (rc != 0) {
		srv_reply_err(so, rc);
		return;
	}
	t.st_snap = sn;
	t.st_trace = tr;
	srv_text_reply(so, &t);
	addb_snap_free(sn);
	addb_trace_free(tr);
}

/* ------------------------------------------------------------ dispatch */

/* An object request on a server that routes by the cluster file alone
 * (no map takes homes over): it must be the object's home.  A caller
 * whose cluster file lists other servers (another count or order)
 * computes other homes: refused, not served on the wrong store (an
 * object made there would be found by no one else). */
int srv_home_here(struct srv *s, uint32_t home, const struct st_id *id)
{
	const struct clu_conf *c = s->s_conf;

	if (home == s->s_self || home >= c->cc_nr_servers)
		return 0;
	return err_set(-EREMCHG, "object %s is homed on server %s, not on %s "
		       "(by this server's cluster file of %u servers: the "
		       "caller's lists other servers)", eng_id_str(id),
		       c->cc_servers[home].cs_name, s->s_me->cs_name,
		       c->cc_nr_servers);
}

/* An index request: this server must be one of the index's R replicas
 * (ring order from its home, clu_home()) by its own cluster file, else
 * the index would be made or read on a store no replica checks. */
static int srv_idx_here(struct srv *s, const struct st_id *id)
{
	const struct clu_conf *c = s->s_conf;
	uint32_t n = c->cc_nr_servers, home = clu_home(c, id);
	uint32_t r = c->cc_replicas < n ? c->cc_replicas : n;

	if (n == 0 || (s->s_self + n - home) % n < r)
		return 0;
	return err_set(-EREMCHG, "index %s is replicated on %u server%s "
		       "from %s on, not on %s (by this server's cluster file "
		       "of %u servers: the caller's lists other servers)",
		       eng_id_str(id), r, r == 1 ? "" : "s",
		       c->cc_servers[home].cs_name, s->s_me->cs_name, n);
}

static void srv_handle(struct rpc_sreq *req, void *arg)
{
	struct srv *s = arg;
	struct srv_op *so = calloc(1, sizeof *so);
	uint32_t op = rpc_sreq_opcode(req);
	size_t len;
	const void *body = rpc_sreq_body(req, &len);
	int rc;

	srv_thread_enter();
	if (!srv_enter(s)) {
		free(so);
		rpc_sreq_reply(req, -ESHUTDOWN, NULL, 0, "server is stopping");
		return;
	}
	if (so == NULL) {
		rpc_sreq_reply(req, -ENOMEM, NULL, 0, "server out of memory");
		srv_leave(s);
		return;
	}
	so->so_srv = s;
	so->so_req = req;
	err_clear();
	rc = msg_req_decode(&so->so_m, op, body, len, rpc_sreq_bulk_len(req));
	if (rc != 0) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		LOG_INFO("server %s: refused a request: %s", s->s_me->cs_name,
			 err_msg());
		srv_reply_err(so, rc);
		return;
	}
	__atomic_add_fetch(&s->s_cnt.sc_requests, 1, __ATOMIC_RELAXED);
	/* Copies of an index update to further replicas, and catch-up
	 * merges, record no FDMI change: the replica the client called
	 * first did (core/fdmi_log.h, "Who emits"). */
	if (so->so_m.mr_rflags & (SRF_REPLICA | SRF_INTERNAL))
		so->so_m.mr_req.er_no_fdmi = true;
	if (op == SOP_OBJ || op == SOP_ENT || op == SOP_IDX) {
		uint64_t caller = rpc_sreq_trace(req);

		so->so_t0_ns = addb_now_ns();
		/* traced: one in N of its own, and every one its caller
		 * traces while tracing is on here */
		so->so_trace = caller != 0 && addb_tracing() ?
			       addb_trace_id() : addb_trace_op();
		so->so_m.mr_req.er_ci.ci_trace = so->so_trace;
		so->so_m.mr_req.er_ci.ci_trace_op =
			so->so_m.mr_req.er_kind - 1;
		if (so->so_trace != 0)
			addb_rec(ADDB_R_SRV_RECV, so->so_trace,
				 so->so_m.mr_req.er_kind - 1, caller, 0);
	}
	so->so_m.mr_req.er_eng = s->s_eng;
	if (op == SOP_OBJ || op == SOP_LAYER ||
	    (op == SOP_ENT && so->so_m.mr_req.er_type == ST_ET_OBJ)) {
		uint32_t home = clu_home(s->s_conf, &so->so_m.mr_req.er_id);
		struct eng *e = s->s_eng;

		err_clear();
		rc = s->s_route != NULL ?
		     s->s_route(s->s_route_arg, home, &e, &so->so_route_ref) :
		     srv_home_here(s, home, &so->so_m.mr_req.er_id);
		if (rc != 0) {
			srv_reply_err(so, rc);
			return;
		}
		so->so_m.mr_req.er_eng = e;
	} else if (op == SOP_IDX || (op == SOP_ENT &&
		   so->so_m.mr_req.er_type == ST_ET_IDX)) {
		err_clear();
		rc = srv_idx_here(s, &so->so_m.mr_req.er_id);
		if (rc != 0) {
			srv_reply_err(so, rc);
			return;
		}
	}
	switch (op) {
	case SOP_ENT:
		srv_ent(s, so);
		break;
	case SOP_OBJ: /* unit I/O may wait on other servers: off handlers */
		srv_prof_mark(so, SRV_T_RECV);
		srv_exec_defer(s, so, srv_obj);
		break;
	case SOP_IDX:
		srv_idx(s, so);
		break;
	case SOP_IDX_STATE:
		srv_idx_state(s, so);
		break;
	case SOP_LIST:
		srv_list_hold(s);
		srv_list(s, so);
		break;
	case SOP_STATUS:
		srv_status(s, so);
		break;
	case SOP_METRICS:
		srv_metrics(s, so);
		break;
	case SOP_CLIENT_STATS:
		srv_cstats(s, so);
		break;
	case SOP_LAYER: /* a composite's layers, on the home (srv_layer.c) */
		srv_layer(s, so);
		break;
	default:
		srv_conf_get(s, so);
		break;
	}
}

/* ------------------------------------------------------------ lifecycle */

/*
 * The store must have been made for this place in this cluster: object
 * homes (clu_home(): hash mod servers) and device slices (slice I of S of
 * every device) are placed over the cluster file's servers in order, and
 * a store keeps the slice it was made with.  A file that lists more or
 * fewer servers, or this one at another place, would route objects to
 * servers that never held them (unreachable) and give a new server the
 * space of another's slice (overwritten units): refused, naming both,
 * before anything is served.  (Adding a server to the file was what the
 * CLI once advised for `server add ADDR:PORT`: 8 of 9 objects of a
 * 3-server cluster were then unreachable.)
 */
static int srv_store_geom(struct srv *s)
{
	uint32_t slice, slices, n = s->s_conf->cc_nr_servers;

	eng_slices(s->s_eng, &slice, &slices);
	if (slices == 0 || (slices == n && slice == s->s_self))
		return 0;
	err_set(-EINVAL, "store %s is server %u of %u servers, the cluster "
		"file makes it %u of %u: homes and slices follow the file's "
		"list, which cannot change under data (docs/cluster.md, "
		"\"The server list\")", s->s_me->cs_data_dir, slice, slices,
		s->s_self, n);
	eng_close(s->s_eng);
	s->s_eng = NULL;
	return -EINVAL;
}

static int srv_open_store(struct srv *s)
{
	struct eng_conf ec = {
		.ec_dir = s->s_me->cs_data_dir,
		.ec_create = true,
		.ec_nvram_dir = s->s_me->cs_nvram_dir[0] != '\0'
					? s->s_me->cs_nvram_dir : NULL,
		.ec_config = NULL,
		.ec_model = s->s_model,
		.ec_meta_nvram = s->s_me->cs_meta_nvram,
		.ec_layout_ops = s->s_parts.sp_layout_ops,
	};
	char path[512];
	FILE *f;
	int rc;

	/* eng_conf takes the store configuration as a file: write the
	 * server's own beside its store. */
	if (snprintf(path, sizeof path, "%s.store.yaml",
		     s->s_me->cs_data_dir) >= (int)sizeof path)
		return err_set(-ENAMETOOLONG, "server %s: data_dir too long",
			       s->s_me->cs_name);
	f = fopen(path, "w");
	if (f == NULL)
		return err_set(-errno, "server %s: %s: %s", s->s_me->cs_name,
			       path, strerror(errno));
	fputs(s->s_me->cs_store_yaml, f);
	if (fclose(f) != 0)
		return err_set(-EIO, "server %s: %s: write failed",
			       s->s_me->cs_name, path);
	ec.ec_config = path;
	rc = eng_open(&s->s_eng, &ec);
	if (rc != 0)
		return err_set(rc, "server %s: store %s: %s", s->s_me->cs_name,
			       s->s_me->cs_data_dir, err_msg());
	return srv_store_geom(s);
}

/* A module's register or start step; a failure names the module. */
static int srv_module_call(struct srv *s, const struct srv_module *m,
			   int (*fn)(struct srv *s), const char *what)
{
	int rc;

	if (fn == NULL)
		return 0;
	rc = fn(s);
	if (rc != 0) {
		char msg[LIM_ERRMSG_LEN];

		snprintf(msg, sizeof msg, "%s", err_msg());
		return err_set(rc, "server %s: module %s: %s: %s",
			       s->s_me->cs_name, m->sm_name, what, msg);
	}
	return 0;
}

static int srv_open_ep(struct srv *s)
{
	const struct clu_conf *c = s->s_conf;
	struct rpc_conf rconf = {
		.rc_provider = c->cc_provider,
		.rc_secret = c->cc_secret,
		.rc_secret_len = c->cc_secret_len,
		.rc_nr_handlers = SRV_HANDLERS,
		.rc_max_msg = 2u << 20,
	};
	int rc = rpc_ep_open(&s->s_ep, &rconf, s->s_me->cs_addr,
			     s->s_me->cs_port);

	if (rc != 0)
		return err_set(rc, "server %s: endpoint %s:%u: %s",
			       s->s_me->cs_name, s->s_me->cs_addr,
			       s->s_me->cs_port, err_msg());
	for (uint32_t op = SOP_ENT; rc == 0 && op < SOP_END; op++)
		rc = rpc_handler_set(s->s_ep, op, srv_handle, s);
	if (rc == 0)
		rc = srv_zc_start(s);
	if (rc == 0)
		rc = srv_rdev_register(s);
	if (rc == 0)
		rc = srv_dev_register(s);
	if (rc == 0)
		rc = srv_repl_register(s);
	for (uint32_t i = 0; rc == 0 && i < s->s_parts.sp_nr_modules; i++)
		rc = srv_module_call(s, s->s_parts.sp_modules[i],
				     s->s_parts.sp_modules[i]->sm_register,
				     "handlers");
	if (rc == 0)
		rc = peers_create(&s->s_peers, c, s->s_ep);
	return rc;
}

static _Atomic(const char *) start_phase = "";

const char *srv_start_phase(void)
{
	return atomic_load(&start_phase);
}

static void phase(const char *what)
{
	atomic_store(&start_phase, what);
}

int srv_start(struct srv **out, const struct clu_conf *c, uint32_t self,
	      uint32_t flags, const struct srv_parts *parts)
{
	struct srv *s;
	int rc;

	if (c == NULL || out == NULL || self >= c->cc_nr_servers)
		return err_set(-EINVAL, "server: no server %u in the cluster",
			       self);
	s = calloc(1, sizeof *s);
	if (s == NULL)
		return err_set(-ENOMEM, "server: state");
	if (parts != NULL)
		s->s_parts = *parts;
	s->s_conf = c;
	s->s_self = self;
	s->s_me = &c->cc_servers[self];
	s->s_start_ms = srv_now_ms();
	s->s_model = (flags & SRV_F_MODEL) != 0;
	s->s_prof_path = getenv("STRATA_SRV_PROFILE");
	if (s->s_prof_path != NULL && s->s_prof_path[0] == '\0')
		s->s_prof_path = NULL;
	phase("index replicas");
	rc = srv_ridx_init(s);
	/* Remote devices (the other servers' slices) attach as the store
	 * opens; the executor must run before requests arrive. */
	phase("remote devices and executor");
	if (rc == 0)
		rc = rdev_start(c, self);
	if (rc == 0)
		rc = srv_exec_start(s);
	phase("modules' pre-open (HA: its home's handback)");
	for (uint32_t i = 0; rc == 0 && i < s->s_parts.sp_nr_modules; i++)
		rc = srv_module_call(s, s->s_parts.sp_modules[i],
				     s->s_parts.sp_modules[i]->sm_pre_open,
				     "pre-open");
	phase("opening its store");
	if (rc == 0)
		rc = srv_open_store(s);
	if (rc == 0)
		rc = srv_cstats_open(s); /* clients' statistics (srv_cstats.c) */
	/* The syncer calls peers at once (srv_sync_all): the endpoint and the
	 * peer table first.  Requests parked before it runs just wait. */
	phase("opening its endpoint");
	if (rc == 0)
		rc = srv_open_ep(s);
	phase("replication of its home's metadata (standbys)");
	if (rc == 0)
		rc = srv_repl_start(s);
	phase("index syncer");
	if (rc == 0)
		rc = srv_syncer_start(s);
	phase("modules' start (HA agent, dtx recovery)");
	for (uint32_t i = 0; rc == 0 && i < s->s_parts.sp_nr_modules; i++)
		rc = srv_module_call(s, s->s_parts.sp_modules[i],
				     s->s_parts.sp_modules[i]->sm_start,
				     "start");
	phase(rc == 0 ? "started" : "stopping after a failed start");
	if (rc != 0) {
		char msg[LIM_ERRMSG_LEN];

		snprintf(msg, sizeof msg, "%s", err_msg());
		srv_stop(s);
		return err_set(rc, "%s", msg);
	}
	*out = s;
	return 0;
}

int srv_stop(struct srv *s)
{
	uint64_t until;

	if (s == NULL)
		return 0;
	/* New requests are refused from now on; those in flight finish and
	 * answer (updates when durable) while the engine, the syncer and the
	 * peer connections are still up.  Bounded by the call timeout: a
	 * client gives up on a request after that anyway. */
	__atomic_store_n(&s->s_draining, 1, __ATOMIC_SEQ_CST);
	until = srv_now_ms() + s->s_conf->cc_call_ms + 5000;
	while (__atomic_load_n(&s->s_cnt.sc_inflight, __ATOMIC_SEQ_CST) > 0 &&
	       srv_now_ms() < until)
		usleep(10000);
	/* From here on, other servers' requests are refused too
	 * (srv_enter_peer()). */
	__atomic_store_n(&s->s_draining, 2, __ATOMIC_SEQ_CST);
	/* Requests still in flight wait on other servers (one request may
	 * make several calls in a row, each up to the call timeout, and
	 * retry): their calls fail now, and they answer with that failure.
	 * Nothing below may be freed under a running handler (a server
	 * stopped after its peers crashed in srv_idx: make check). */
	if (__atomic_load_n(&s->s_cnt.sc_inflight, __ATOMIC_ACQUIRE) > 0) {
		LOG_WARNING("server %s: %" PRIu64 " requests still in flight "
			    "after %u ms; failing their calls to other "
			    "servers", s->s_me->cs_name,
			    (uint64_t)__atomic_load_n(&s->s_cnt.sc_inflight,
						      __ATOMIC_ACQUIRE),
			    s->s_conf->cc_call_ms + 5000);
		until = srv_now_ms() + s->s_conf->cc_call_ms + 5000;
		while (__atomic_load_n(&s->s_cnt.sc_inflight,
				       __ATOMIC_ACQUIRE) > 0 &&
		       srv_now_ms() < until) {
			/* again each round: a call that raced the first
			 * stop fails too */
			peers_calls_stop(s->s_peers);
			peers_calls_stop(s->s_hbpeers);
			rdev_calls_stop();
			usleep(10000);
		}
	}
	if (__atomic_load_n(&s->s_cnt.sc_inflight, __ATOMIC_ACQUIRE) > 0) {
		/* Never free under a running handler: leave everything to the
		 * process's end (every acknowledged update is durable). */
		LOG_ERROR("server %s: %" PRIu64 " requests still in flight; "
			  "stopping without closing the store",
			  s->s_me->cs_name,
			  (uint64_t)__atomic_load_n(&s->s_cnt.sc_inflight,
						    __ATOMIC_ACQUIRE));
		return -EBUSY;
	}
	srv_prof_print(s);
	srv_walk_stop(s);
	for (uint32_t i = s->s_parts.sp_nr_modules; i-- > 0;)
		if (s->s_parts.sp_modules[i]->sm_stop != NULL)
			s->s_parts.sp_modules[i]->sm_stop(s);
	srv_syncer_stop(s);
	srv_repl_stop(s);
	peers_destroy(s->s_peers);
	srv_zc_stop(s);
	rpc_ep_close(s->s_ep);
	srv_exec_stop(s);
	if (s->s_eng != NULL) {
		srv_cstats_close(s); /* saved beside the store */
		eng_close(s->s_eng);
	}
	rdev_stop();
	srv_repl_fini(s);
	srv_ridx_fini(s);
	free(s);
	return 0;
}

int srv_restart(struct srv *s, const char *why)
{
	if (s->s_parts.sp_restart == NULL)
		return err_set(-ENOTSUP, "server %s: cannot run again from its "
			       "start by itself (%s): restart it",
			       s->s_me->cs_name, why);
	if (__atomic_exchange_n(&s->s_restart_asked, 1, __ATOMIC_SEQ_CST))
		return 0;
	LOG_WARNING("server %s: runs again from its start: %s",
		    s->s_me->cs_name, why);
	s->s_parts.sp_restart(s->s_parts.sp_restart_arg, why);
	return 0;
}

void srv_counters_get(struct srv *s, struct srv_counters *out)
{
	out->sc_requests = __atomic_load_n(&s->s_cnt.sc_requests,
					   __ATOMIC_RELAXED);
	out->sc_bad = __atomic_load_n(&s->s_cnt.sc_bad, __ATOMIC_RELAXED);
	out->sc_inflight = __atomic_load_n(&s->s_cnt.sc_inflight,
					   __ATOMIC_RELAXED);
	out->sc_syncs = __atomic_load_n(&s->s_cnt.sc_syncs, __ATOMIC_RELAXED);
	out->sc_tombs = __atomic_load_n(&s->s_cnt.sc_tombs, __ATOMIC_RELAXED);
	out->sc_late = __atomic_load_n(&s->s_cnt.sc_late, __ATOMIC_RELAXED);
	out->sc_zc_wr_bytes = __atomic_load_n(&s->s_cnt.sc_zc_wr_bytes,
					      __ATOMIC_RELAXED);
	out->sc_zc_rd_bytes = __atomic_load_n(&s->s_cnt.sc_zc_rd_bytes,
					      __ATOMIC_RELAXED);
	out->sc_doubts = __atomic_load_n(&s->s_cnt.sc_doubts,
					 __ATOMIC_RELAXED);
}
