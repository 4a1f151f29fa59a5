/*
 * srv_isc.c — function shipping on a server (docs/isc.md "Where a function
 * runs"; the client half: clovis/cli_cluster.c "function shipping").
 *
 *   SOP_ISC        a client's call on an object homed here (or on a home
 *                  this server acts for: s_route) or on an index this
 *                  server holds a replica of.  An object's units on this
 *                  server's devices are mapped here; its units in this
 *                  home's slices of other servers' devices go to those
 *                  servers (SOP_ISC_UNITS, each server's list in one
 *                  call, all at once); units that cannot be mapped there
 *                  are mapped here from degraded reads
 *                  (core/isc/isc_eng.c).  An index replica that missed
 *                  updates answers -ESTALE (the client tries the next).
 *   SOP_ISC_UNITS  a home's call on units its objects keep in its slice
 *                  of this server's devices: each unit checked to lie in
 *                  that slice of a device this server lends, read,
 *                  checked against its crc64 and mapped in one run; a unit
 *                  that fails its read or check is answered in `bad` (the
 *                  home maps it degraded).
 *
 * The function is compiled here from the code the request carries, whose
 * digest must be the one the request names (core/isc/isc_fn.c); native
 * functions only from the paths of the cluster file's isc_native.  Each
 * request runs on a thread of its own (at most SRV_ISC_THREADS at once;
 * -EBUSY past that), counted in flight until answered, so a stop waits
 * for it; a run ends at its deadline whatever the function does, and a
 * function's failure fails its call only, never the server.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clu_conf.h"
#include "core/errors.h"
#include "core/isc/isc.h"
#include "core/isc/isc_eng.h"
#include "core/log.h"
#include "core/server/rdev.h"
#include "core/server/srv_internal.h"
#include "tiers/tier.h"

/* Requests running at once. */
#define SRV_ISC_THREADS 16u

struct srv_isc_req {
	struct srv *iq_srv;
	struct rpc_sreq *iq_req;
	uint32_t iq_op;
	IscReq *iq_q;
};

/* The request's shape: every field in range (a bad request otherwise,
 * counted). */
static int srv_isc_shape(const IscReq *q)
{
	if (q->fn == NULL || q->fn->digest.len != ISC_DIGEST_LEN ||
	    q->fn->kind < ISC_DECL || q->fn->kind > ISC_NATIVE ||
	    q->fn->code.len == 0 || q->fn->code.len > ISC_CODE_MAX)
		return err_set(-EINVAL, "request: isc: function missing, or "
			       "its kind, code or digest out of range");
	if (q->target != ISC_T_OBJ && q->target != ISC_T_IDX)
		return err_set(-EINVAL, "request: isc: target %u (1 object, 2 "
			       "index)", q->target);
	if (q->id == NULL)
		return err_set(-EINVAL, "request: isc: id missing");
	if (q->args.len > ISC_ARGS_MAX || q->deadline_ms > ISC_DEADLINE_MS_MAX ||
	    q->mem > ISC_MEM_MAX || q->out_max > ISC_OUT_MAX ||
	    q->lo.len > ST_KEY_MAX || q->hi.len > ST_KEY_MAX)
		return err_set(-EINVAL, "request: isc: arguments, deadline, "
			       "memory, output cap or key bounds out of range");
	return 0;
}

/* The call's function, compiled: *f, and c filled from q. */
static int srv_isc_call(struct srv *s, const IscReq *q,
			struct isc_fn_desc *d, struct isc_fn **f,
			struct isc_call *c, char *where, size_t wlen,
			const char **allow)
{
	int rc = srv_isc_shape(q);

	if (rc != 0) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		return rc;
	}
	memset(d, 0, sizeof *d);
	d->fd_kind = (enum isc_kind)q->fn->kind;
	d->fd_name = q->fn->name != NULL && q->fn->name[0] ? q->fn->name : NULL;
	d->fd_code = q->fn->code.data;
	d->fd_code_len = q->fn->code.len;
	memcpy(d->fd_digest, q->fn->digest.data, ISC_DIGEST_LEN);
	memset(c, 0, sizeof *c);
	snprintf(where, wlen, "server %s", s->s_me->cs_name);
	c->ic_lim.il_mem = q->mem;
	c->ic_lim.il_out_max = q->out_max;
	for (uint32_t i = 0; i < s->s_conf->cc_nr_isc_native; i++)
		allow[i] = s->s_conf->cc_isc_native[i];
	allow[s->s_conf->cc_nr_isc_native] = NULL;
	c->ic_lim.il_native_allow = allow;
	c->ic_lim.il_where = where;
	rc = isc_fn_compile(f, d, (enum isc_target)q->target, &c->ic_lim);
	if (rc != 0) {
		/* code that does not match its digest or does not compile
		 * is a bad request; a native function this server does not
		 * allow is its policy, not the request's fault */
		if (rc != -EPERM && rc != -ENOENT)
			__atomic_add_fetch(&s->s_cnt.sc_bad, 1,
					   __ATOMIC_RELAXED);
		return rc;
	}
	c->ic_fn = *f;
	c->ic_desc = d;
	c->ic_target = (enum isc_target)q->target;
	msg_id_in(q->id, &c->ic_id);
	c->ic_start_blk = q->start;
	c->ic_nr_blks = q->end;
	if (q->has_lo) {
		c->ic_lo = q->lo.data;
		c->ic_lo_len = q->lo.len;
	}
	if (q->has_hi) {
		c->ic_hi = q->hi.data;
		c->ic_hi_len = q->hi.len;
	}
	c->ic_args = q->args.data;
	c->ic_alen = q->args.len;
	c->ic_deadline_ms = q->deadline_ms;
	c->ic_self = s->s_self;
	return 0;
}

/* ------------------------------------------- the home's remote shares */

static bool srv_isc_owner(void *arg, struct eng *e, uint32_t dev,
			  uint32_t *server)
{
	struct srv *s = arg;
	struct eng_dev *ed = eng_dev_get(e, dev);
	uint32_t d, home;

	/* this server's own device seen through its own RDEV service (an
	 * engine acting for another home): read here like a local one */
	return ed != NULL && rdev_locate(ed->ed_dev, server, &d, &home) &&
	       *server != s->s_self;
}

static int srv_isc_remote(void *arg, struct eng *e, uint32_t server,
			  const struct isc_call *c, const struct eng_unit_ref *u,
			  uint32_t nr, struct isc_out *out, uint8_t *bad,
			  bool *lost, struct isc_stats *st)
{
	struct srv *s = arg;
	IscReq q = ISC_REQ__INIT;
	IscFn fn = ISC_FN__INIT;
	IscUnit *us = calloc(nr, sizeof *us);
	IscUnit **up = calloc(nr, sizeof *up);
	struct msg_buf b = {0};
	struct rpc_result res = {0};
	IscReply *rp = NULL;
	SId sid = SID__INIT;
	uint32_t dl = c->ic_deadline_ms ? c->ic_deadline_ms :
		      ISC_DEADLINE_MS_DEFAULT;
	uint32_t onr;
	int rc = 0;

	*lost = false;
	if (us == NULL || up == NULL) {
		free(us);
		free(up);
		*lost = true;
		return err_set(-ENOMEM, "units for server %u", server);
	}
	fn.kind = c->ic_desc->fd_kind;
	fn.name = (char *)(c->ic_desc->fd_name ? c->ic_desc->fd_name : "");
	fn.code.data = (uint8_t *)c->ic_desc->fd_code;
	fn.code.len = c->ic_desc->fd_code_len;
	fn.digest.data = (uint8_t *)c->ic_desc->fd_digest;
	fn.digest.len = ISC_DIGEST_LEN;
	q.fn = &fn;
	q.target = ISC_T_OBJ;
	for (uint32_t i = 0; i < nr; i++) {
		struct eng_dev *ed = eng_dev_get(e, u[i].ur_dev);
		uint32_t srv, dev, home;

		isc_unit__init(&us[i]);
		if (ed == NULL || !rdev_locate(ed->ed_dev, &srv, &dev, &home)) {
			rc = err_set(-EINVAL, "unit on device %u: not remote",
				     u[i].ur_dev);
			break;
		}
		q.home = home;
		us[i].dev = dev;
		us[i].off = u[i].ur_dev_off;
		us[i].unit = u[i].ur_unit;
		us[i].skip = u[i].ur_skip;
		us[i].len = u[i].ur_len;
		us[i].obj_off = u[i].ur_obj_off;
		us[i].crc = u[i].ur_crc;
		us[i].group = u[i].ur_group;
		us[i].slot = u[i].ur_slot;
		up[i] = &us[i];
	}
	q.n_units = nr;
	q.units = up;
	q.id = &sid;
	msg_id_out(q.id, &c->ic_id);
	q.args.data = (uint8_t *)c->ic_args;
	q.args.len = c->ic_alen;
	q.deadline_ms = c->ic_deadline_ms;
	q.mem = c->ic_lim.il_mem;
	q.out_max = c->ic_lim.il_out_max;
	if (rc == 0)
		rc = msg_pack(&q.base, &b);
	free(us);
	free(up);
	if (rc != 0) {
		*lost = true;
		return rc;
	}
	rc = peers_call_ms(s->s_peers, server, SOP_ISC_UNITS, b.mb_p, b.mb_len,
			   NULL, s->s_conf->cc_call_ms + 2 * dl, &res);
	free(b.mb_p);
	if (rc != 0) {
		/* not answered (away, died, or its endpoint stopped): its
		 * units are mapped at the home; an answer is the function's
		 * own failure */
		*lost = !res.rr_answered || rc == -ESHUTDOWN || rc == -EBUSY;
		rc = err_set(rc, "server %s: %s",
			     s->s_conf->cc_servers[server].cs_name,
			     res.rr_msg[0] ? res.rr_msg : err_msg());
		free(res.rr_body);
		return rc;
	}
	rp = isc_reply__unpack(NULL, res.rr_len, res.rr_body);
	free(res.rr_body);
	if (rp == NULL) {
		*lost = true;
		return err_set(-EBADMSG, "server %s: reply is not an IscReply",
			       s->s_conf->cc_servers[server].cs_name);
	}
	rc = isc_out_check(rp->out.data, rp->out.len, &onr);
	if (rc == 0)
		rc = isc_out_merge(out, rp->out.data, rp->out.len);
	for (size_t i = 0; rc == 0 && i < rp->n_bad; i++) {
		if (rp->bad[i] >= nr) {
			rc = err_set(-EBADMSG, "server %s: bad unit %u of %u",
				     s->s_conf->cc_servers[server].cs_name,
				     rp->bad[i], nr);
			break;
		}
		bad[rp->bad[i]] = 1;
	}
	st->st_runs += rp->runs;
	st->st_bytes += rp->bytes;
	st->st_where[0] |= rp->where;
	isc_reply__free_unpacked(rp, NULL);
	if (rc != 0)
		*lost = true;
	return rc;
}

/* --------------------------------------------------------- the requests */

/* SOP_ISC_UNITS: the units checked, read, mapped. */
static int srv_isc_units(struct srv *s, const IscReq *q,
			 const struct isc_call *c, struct isc_out *out,
			 struct isc_stats *st, IscReply *rp)
{
	struct tier_dev **d = calloc(q->n_units ? q->n_units : 1, sizeof *d);
	uint64_t *off = calloc(q->n_units ? q->n_units : 1, sizeof *off);
	struct eng_unit_ref *u = calloc(q->n_units ? q->n_units : 1,
					sizeof *u);
	uint8_t *bad = calloc(q->n_units ? q->n_units : 1, 1);
	int rc = 0;

	if (d == NULL || off == NULL || u == NULL || bad == NULL)
		rc = err_set(-ENOMEM, "isc units");
	if (rc == 0 && q->home >= s->s_conf->cc_nr_servers)
		rc = err_set(-EINVAL, "request: isc units: home %u: not a "
			     "server", q->home);
	for (size_t i = 0; rc == 0 && i < q->n_units; i++) {
		const IscUnit *x = q->units[i];
		RdevReq rq = RDEV_REQ__INIT;
		struct eng_dev *ed = x->dev < eng_dev_nr(s->s_eng) ?
				     eng_dev_get(s->s_eng, x->dev) : NULL;
		uint64_t base;

		if (ed == NULL ||
		    strcmp(ed->ed_dev->td_ops->to_name, ENG_REMOTE_DRIVER) == 0) {
			rc = err_set(-EINVAL, "request: isc units[%zu]: device "
				     "%u is not one server %s lends", i,
				     x->dev, s->s_me->cs_name);
			break;
		}
		if (x->unit == 0 || x->unit > (64u << 20) || x->skip > x->unit ||
		    x->len > x->unit - x->skip) {
			rc = err_set(-EINVAL, "request: isc units[%zu]: unit "
				     "%u, part %u+%u", i, x->unit, x->skip,
				     x->len);
			break;
		}
		rq.home = q->home;
		rq.dev = x->dev;
		rq.off = x->off;
		rq.len = x->unit;
		if (msg_rdev_range(&rq, s->s_conf->cc_nr_servers,
				   tier_dev_size(ed->ed_dev), &base) != 0) {
			rc = err_set(-EINVAL, "request: isc units[%zu]: %s", i,
				     err_msg());
			break;
		}
		d[i] = ed->ed_dev;
		off[i] = base + x->off;
		u[i] = (struct eng_unit_ref){
			.ur_obj_off = x->obj_off, .ur_skip = x->skip,
			.ur_len = x->len, .ur_unit = x->unit, .ur_dev = x->dev,
			.ur_dev_off = x->off, .ur_crc = x->crc,
			.ur_group = x->group, .ur_slot = x->slot};
	}
	if (rc != 0 && rc != -ENOMEM)
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
	if (rc == 0 && q->n_units > 0) {
		rc = isc_units_run(c, d, off, u, (uint32_t)q->n_units, out, bad,
				   st);
		isc_where_set(st->st_where, s->s_self);
	}
	if (rc == 0) {
		uint32_t nb = 0;

		for (size_t i = 0; i < q->n_units; i++)
			nb += bad[i];
		rp->bad = nb ? calloc(nb, sizeof *rp->bad) : NULL;
		if (nb && rp->bad == NULL)
			rc = err_set(-ENOMEM, "isc units");
		for (size_t i = 0; rc == 0 && i < q->n_units; i++)
			if (bad[i])
				rp->bad[rp->n_bad++] = (uint32_t)i;
	}
	free(d);
	free(off);
	free(u);
	free(bad);
	return rc;
}

static const struct isc_remote_ops *srv_isc_rm(struct srv *s,
					       struct isc_remote_ops *rm)
{
	rm->rm_owner = srv_isc_owner;
	rm->rm_run = srv_isc_remote;
	rm->rm_arg = s;
	rm->rm_self = s->s_self;
	return rm;
}

static void *srv_isc_main(void *arg)
{
	struct srv_isc_req *iq = arg;
	struct srv *s = iq->iq_srv;
	const IscReq *q = iq->iq_q;
	struct isc_fn_desc d = {0};
	struct isc_fn *f = NULL;
	struct isc_call c;
	struct isc_out out;
	struct isc_stats st = {0};
	struct isc_remote_ops rm;
	IscReply rp = ISC_REPLY__INIT;
	struct msg_buf b = {0};
	char where[96];
	const char *allow[CLU_ISC_NATIVE_MAX + 1];
	void *ref = NULL;
	struct eng *e = s->s_eng;
	int rc;

	err_clear();
	isc_out_init(&out, q->out_max ? q->out_max : ISC_OUT_DEFAULT);
	rc = 0;
	/* what only the other opcode takes (before any compile) */
	if ((iq->iq_op == SOP_ISC && (q->n_units > 0 || q->home != 0)) ||
	    (iq->iq_op == SOP_ISC_UNITS && q->target != ISC_T_OBJ)) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		rc = iq->iq_op == SOP_ISC ?
		     err_set(-EINVAL, "request: isc: units and home are for a "
			     "home's call on units (SOP_ISC_UNITS)") :
		     err_set(-EINVAL, "request: isc units: target %u: units "
			     "are an object's", q->target);
	}
	if (rc == 0)
		rc = srv_isc_call(s, q, &d, &f, &c, where, sizeof where, allow);
	if (rc == 0 && iq->iq_op == SOP_ISC_UNITS) {
		rc = srv_isc_units(s, q, &c, &out, &st, &rp);
	} else if (rc == 0 && q->target == ISC_T_OBJ) {
		uint32_t home = clu_home(s->s_conf, &c.ic_id);

		if (s->s_route != NULL)
			rc = s->s_route(s->s_route_arg, home, &e, &ref);
		else
			rc = srv_home_here(s, home, &c.ic_id);
		if (rc == 0)
			rc = isc_eng_obj(e, &c, srv_isc_rm(s, &rm), &out, &st);
		if (ref != NULL)
			s->s_route_put(s->s_route_arg, ref);
	} else if (rc == 0) {
		rc = srv_idx_isc_check(s, &c.ic_id);
		if (rc == 0)
			rc = isc_eng_idx(s->s_eng, &c, &out, &st);
	}
	if (rc == 0) {
		rp.out.data = out.o_buf;
		rp.out.len = out.o_len;
		rp.runs = st.st_runs;
		rp.where = st.st_where[0];
		rp.bytes = st.st_bytes;
		rp.degraded = st.st_degraded;
		rc = msg_pack(&rp.base, &b);
	}
	if (rc != 0) {
		LOG_INFO("server %s: function %s refused or failed: %s",
			 s->s_me->cs_name, d.fd_name ? d.fd_name : "?",
			 err_msg());
		rpc_sreq_reply(iq->iq_req, rc, NULL, 0, err_msg());
	} else {
		rpc_sreq_reply(iq->iq_req, 0, b.mb_p, b.mb_len, NULL);
	}
	free(b.mb_p);
	free(rp.bad);
	isc_out_fini(&out);
	isc_fn_free(f);
	isc_req__free_unpacked(iq->iq_q, NULL);
	free(iq);
	__atomic_sub_fetch(&s->s_isc_threads, 1, __ATOMIC_RELEASE);
	srv_leave(s);
	return NULL;
}

static void srv_isc_handle(struct rpc_sreq *req, void *arg)
{
	struct srv *s = arg;
	uint32_t op = rpc_sreq_opcode(req);
	size_t len;
	const void *body = rpc_sreq_body(req, &len);
	struct srv_isc_req *iq;
	pthread_attr_t at;
	pthread_t t;
	IscReq *q;
	int rc;

	if (!(op == SOP_ISC ? srv_enter(s) : srv_enter_peer(s))) {
		rpc_sreq_reply(req, -ESHUTDOWN, NULL, 0, "server is stopping");
		return;
	}
	q = isc_req__unpack(NULL, len, body);
	if (q == NULL) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		rpc_sreq_reply(req, -EBADMSG, NULL, 0, "request: isc: body is "
			       "not an IscReq");
		srv_leave(s);
		return;
	}
	if (__atomic_add_fetch(&s->s_isc_threads, 1, __ATOMIC_ACQ_REL) >
	    SRV_ISC_THREADS) {
		__atomic_sub_fetch(&s->s_isc_threads, 1, __ATOMIC_RELEASE);
		isc_req__free_unpacked(q, NULL);
		rpc_sreq_reply(req, -EBUSY, NULL, 0, "server busy: function "
			       "calls in progress");
		srv_leave(s);
		return;
	}
	__atomic_add_fetch(&s->s_cnt.sc_requests, 1, __ATOMIC_RELAXED);
	iq = calloc(1, sizeof *iq);
	rc = iq == NULL ? -ENOMEM : -pthread_attr_init(&at);
	if (rc == 0) {
		iq->iq_srv = s;
		iq->iq_req = req;
		iq->iq_op = op;
		iq->iq_q = q;
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		rc = -pthread_create(&t, &at, srv_isc_main, iq);
		pthread_attr_destroy(&at);
	}
	if (rc != 0) {
		free(iq);
		isc_req__free_unpacked(q, NULL);
		__atomic_sub_fetch(&s->s_isc_threads, 1, __ATOMIC_RELEASE);
		rpc_sreq_reply(req, rc, NULL, 0, "no thread for a function call");
		srv_leave(s);
	}
}

int srv_isc_register(struct srv *s)
{
	int rc = rpc_handler_set(s->s_ep, SOP_ISC, srv_isc_handle, s);

	if (rc == 0)
		rc = rpc_handler_set(s->s_ep, SOP_ISC_UNITS, srv_isc_handle, s);
	return rc;
}
