/*
 * dtx.c — distributed transactions, client side (clovis.h "Distributed
 * transactions"; protocol in dtm/README.md).
 *
 * Embedded mode: a dtx is one local atomic commit.
 *
 *   clovis_dtx_add()   marks the op a member: its commit item gets a hold
 *                      hook (eng_citem.ci_hold) and the op a run hook
 *                      (dtx_member_run) that notes failures;
 *   member runs        eng_exec() does its data I/O out of place as usual;
 *                      eng_commit_submit() hands the item to dtx_hold()
 *                      instead of the syncer: the op stays LAUNCHED;
 *   commit op runs     dtx_commit_run() launches the members still in INIT;
 *                      when every member has run (dtx_ready_locked), the
 *                      commit op's own item (dtx_submit) carries the union
 *                      of their devices and space into the group commit;
 *   group commit       dtx_apply() applies every member in ONE nested LMDB
 *                      transaction of the batch's transaction: a member that
 *                      fails (entity deleted meanwhile) aborts the nested
 *                      one, and nothing of the dtx is applied;
 *   visible, durable   dtx_executed() / dtx_done() pass the outcome to every
 *                      member, then to the commit op.
 *
 * One dtx is one commit item however many members it has, so a dtx larger
 * than one group-commit batch (LIM_BATCH_MAX) is still one LMDB commit.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "clovis/clovis_internal.h"
#include "core/clu_conf.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/server/msg.h"
#include "core/stripe.h"
#include "dtm/dtm.h"
#include "dtm/dtm_msg.h"

#define DTX_MAGIC 0x44545831u /* "DTX1" */

enum dtx_state {
	DX_OPEN = 0,       /* members may join */
	DX_COMMITTING = 1, /* commit op launched */
	DX_DONE = 2,       /* outcome passed to every member */
};

/* Where a member is. */
enum dtx_mstate {
	DM_INIT = 0, /* not run yet */
	DM_HELD = 1, /* ran: data written, commit item held */
	DM_FAILED = 2, /* failed on its own, FAILED already */
	DM_DEFER = 3,  /* unit layout (embedded): runs at the commit, under
			  the dtx's group locks (dtx_run_deferred) */
};

struct dtx_member {
	struct clovis_op *dm_op;
	uint32_t dm_state; /* enum dtx_mstate */
};

struct clovis_dtx {
	uint32_t dx_magic;
	uint32_t dx_state;       /* enum dtx_state */
	struct clovis *dx_cl;
	struct clovis_dtx_id dx_id;
	pthread_mutex_t dx_lock;
	pthread_cond_t dx_cond;  /* dx_ran moved */
	struct dtx_member *dx_m; /* update members */
	uint32_t dx_nr;
	uint32_t dx_cap;
	uint32_t dx_ran;         /* members HELD or FAILED */
	uint32_t dx_defer;       /* members DEFER */
	uint32_t *dx_locks;      /* group lock slots held (sorted, distinct) */
	uint32_t dx_nr_locks;
	uint32_t dx_bad;         /* index of the member that failed the dtx */
	bool dx_submitted;
	bool dx_aborting;
	int dx_rc;               /* first member failure */
	char dx_msg[LIM_ERRMSG_LEN];
	struct clovis_op *dx_cop; /* the commit op */
	void (*dx_cop_executed)(struct eng_citem *ci);
	void (*dx_cop_done)(struct eng_citem *ci, int rc);
	struct clovis_entity dx_ent; /* the commit op's entity: the client */
	/* References: the application's (dropped by clovis_dtx_abort() or
	 * by freeing the commit op) and the commit op's run while it may
	 * still touch the dtx (members it launched can complete the dtx,
	 * and the application free it, before that run returns). */
	uint32_t dx_refs;
};

/* Cluster mode: this client's node id in dtx ids (random, not 0). */
static uint32_t dtx_clu_node(void)
{
	static uint32_t node;
	uint32_t n = __atomic_load_n(&node, __ATOMIC_RELAXED);

	while (n == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		n = (uint32_t)getpid() * 2654435761u ^ (uint32_t)ts.tv_nsec ^
		    (uint32_t)((uint64_t)ts.tv_sec * 40503u);
		__atomic_store_n(&node, n, __ATOMIC_RELAXED);
	}
	return n;
}

static bool dtx_valid(const struct clovis_dtx *dx)
{
	return dx != NULL && dx->dx_magic == DTX_MAGIC;
}

static const char *dtx_str(const struct clovis_dtx *dx)
{
	static __thread char buf[DTM_ID_STR_LEN];

	return dtm_id_format(&dx->dx_id, buf);
}

static struct eng_citem *member_ci(const struct dtx_member *m)
{
	return &m->dm_op->op_req.er_ci;
}

int clovis_dtx_open(struct clovis_dtx **out, struct clovis_realm *r)
{
	struct clovis_dtx *dx;

	if (out == NULL || r == NULL || r->re_cl == NULL)
		return err_set(-EINVAL, "dtx_open: %s is NULL",
			       out == NULL ? "dtx" : "realm");
	dx = calloc(1, sizeof *dx);
	if (dx == NULL)
		return err_set(-ENOMEM, "dtx allocation");
	dx->dx_magic = DTX_MAGIC;
	dx->dx_refs = 1; /* the application's */
	dx->dx_cl = r->re_cl;
	dtm_id_make(&dx->dx_id, r->re_cl->cl_eng == NULL ? dtx_clu_node() : 0);
	pthread_mutex_init(&dx->dx_lock, NULL);
	pthread_cond_init(&dx->dx_cond, NULL);
	dx->dx_ent.en_cl = r->re_cl;
	dx->dx_ent.en_magic = CLOVIS_ENT_MAGIC;
	*out = dx;
	return 0;
}

int clovis_dtx_id(const struct clovis_dtx *dx, struct clovis_dtx_id *out)
{
	if (!dtx_valid(dx) || out == NULL)
		return err_set(-EINVAL, "dtx_id: %s", dtx_valid(dx) ?
			       "out is NULL" : "not a dtx");
	*out = dx->dx_id;
	return 0;
}

static void dtx_destroy(struct clovis_dtx *dx);

static void dtx_get(struct clovis_dtx *dx)
{
	__atomic_add_fetch(&dx->dx_refs, 1, __ATOMIC_RELAXED);
}

/* Drop a reference; the last one frees the dtx. */
static void dtx_put(struct clovis_dtx *dx)
{
	if (__atomic_sub_fetch(&dx->dx_refs, 1, __ATOMIC_ACQ_REL) == 0)
		dtx_destroy(dx);
}

static void dtx_destroy(struct clovis_dtx *dx)
{
	pthread_mutex_destroy(&dx->dx_lock);
	pthread_cond_destroy(&dx->dx_cond);
	free(dx->dx_m);
	dx->dx_magic = 0;
	free(dx);
}

/* Objects whose writes take parity-group locks in eng_exec() and keep them
 * until the commit: they would be held across the dtx (clovis.h).  A
 * composite's write takes its top layer's (comp_resolve). */
static uint32_t op_unit_layout(const struct clovis_op *op)
{
	const struct clovis_obj *o;

	if (op->op_req.er_type != CLOVIS_ET_OBJ ||
	    op->op_req.er_kind >= ER_IDX_GET)
		return CLOVIS_LAYOUT_PLAIN;
	o = (const struct clovis_obj *)op->op_entity;
	return o->ob_attr.oa_layout;
}

/* Cluster mode: the kinds a participant applies (dtm/README.md). */
static bool dtx_clu_kind(const struct eng_req *r)
{
	if (r->er_type == CLOVIS_ET_OBJ)
		return r->er_kind == ER_OBJ_WRITE || r->er_kind == ER_OBJ_ALLOC ||
		       r->er_kind == ER_OBJ_FREE ||
		       r->er_kind == ER_ENT_CREATE ||
		       r->er_kind == ER_ENT_DELETE;
	if (r->er_type == CLOVIS_ET_IDX)
		return r->er_kind == ER_IDX_PUT || r->er_kind == ER_IDX_DEL ||
		       r->er_kind == ER_ENT_CREATE ||
		       r->er_kind == ER_ENT_DELETE;
	return false;
}

static const char *dtx_type_name(uint32_t type)
{
	return type == CLOVIS_ET_OBJ ? "object" :
	       type == CLOVIS_ET_IDX ? "index" : "container";
}

static const char *dtx_kind_name(uint32_t kind)
{
	static const char *const n[] = {
		[ER_OBJ_WRITE] = "WRITE", [ER_OBJ_ALLOC] = "ALLOC",
		[ER_OBJ_FREE] = "FREE", [ER_IDX_PUT] = "PUT",
		[ER_IDX_DEL] = "DEL", [ER_ENT_CREATE] = "CREATE",
		[ER_ENT_DELETE] = "DELETE", [ER_ENT_SETATTR] = "SETATTR",
	};

	return kind < sizeof n / sizeof n[0] && n[kind] != NULL ? n[kind]
								 : "this kind";
}

/* ------------------------------------------------------------ members */

/* True when the commit op may go on: every member has run. */
static bool dtx_ready_locked(struct clovis_dtx *dx)
{
	if (dx->dx_state != DX_COMMITTING || dx->dx_submitted ||
	    dx->dx_ran + dx->dx_defer < dx->dx_nr)
		return false;
	dx->dx_submitted = true;
	return true;
}

static void dtx_submit(struct clovis_dtx *dx);
static void dtx_cancel(struct clovis_dtx *dx);
static int dtx_commit_run(struct clovis_op *cop);

static struct dtx_member *dtx_member_find(struct clovis_dtx *dx,
					  const struct clovis_op *op)
{
	for (uint32_t i = 0; i < dx->dx_nr; i++)
		if (dx->dx_m[i].dm_op == op)
			return &dx->dx_m[i];
	return NULL;
}

/* A member ran to its commit item: hold it (eng_commit_submit hook). */
static void dtx_hold(struct eng_citem *ci)
{
	struct clovis_op *op = (struct clovis_op *)ci;
	struct clovis_dtx *dx = op->op_dtx;
	bool go;

	struct dtx_member *m;

	pthread_mutex_lock(&dx->dx_lock);
	m = dtx_member_find(dx, op);
	if (m->dm_state == DM_DEFER)
		dx->dx_defer--; /* ran at the commit (dtx_run_deferred) */
	m->dm_state = DM_HELD;
	dx->dx_ran++;
	go = dtx_ready_locked(dx);
	pthread_cond_broadcast(&dx->dx_cond);
	pthread_mutex_unlock(&dx->dx_lock);
	if (go)
		dtx_submit(dx);
}


/* A member that runs later (cluster: in its PREPARE; a unit layout: with
 * the others' group locks at the commit): mark it, count it in *counter,
 * and submit the dtx if it was the last one to run. */
static int dtx_member_park(struct clovis_dtx *dx, struct clovis_op *op,
			   uint32_t state, uint32_t *counter)
{
	bool go;

	pthread_mutex_lock(&dx->dx_lock);
	dtx_member_find(dx, op)->dm_state = state;
	(*counter)++;
	go = dtx_ready_locked(dx);
	pthread_cond_broadcast(&dx->dx_cond);
	pthread_mutex_unlock(&dx->dx_lock);
	if (go)
		dtx_submit(dx);
	return ENG_PENDING;
}
/* A member's worker run: the backend, then failures are noted in the dtx
 * (the member is FAILED at once; the dtx will fail). */
static int dtx_member_run(struct clovis_op *op)
{
	struct clovis *cl = op->op_cl;
	struct clovis_dtx *dx = op->op_dtx;
	struct eng_citem *ci = &op->op_req.er_ci;
	int rc;
	bool go;

	if (cl->cl_eng == NULL) {
		/* Cluster mode: the member travels in its participant's
		 * PREPARE, encoded when every member has run. */
		return dtx_member_park(dx, op, DM_HELD, &dx->dx_ran);
	}
	if (op_unit_layout(op) != CLOVIS_LAYOUT_PLAIN) {
		/* Its group locks are taken with the others' at the commit. */
		return dtx_member_park(dx, op, DM_DEFER, &dx->dx_defer);
	}
	rc = cl->cl_exec(cl, &op->op_req);
	if (rc == ENG_PENDING)
		return rc;
	if (rc == 0)
		rc = err_set(-EPROTO, "dtx %s: update ran without a commit",
			     dtx_str(dx));
	pthread_mutex_lock(&dx->dx_lock);
	dtx_member_find(dx, op)->dm_state = DM_FAILED;
	if (dx->dx_rc == 0) {
		dx->dx_rc = rc;
		snprintf(dx->dx_msg, sizeof dx->dx_msg, "%s", err_msg());
	}
	dx->dx_ran++;
	go = dtx_ready_locked(dx);
	pthread_cond_broadcast(&dx->dx_cond);
	pthread_mutex_unlock(&dx->dx_lock);
	op->op_dtx = NULL; /* done with the dtx: freeing it is the caller's */
	snprintf(ci->ci_msg, sizeof ci->ci_msg, "%s", err_msg());
	ci->ci_done(ci, rc);
	if (go)
		dtx_submit(dx);
	return ENG_PENDING; /* completed above */
}

int clovis_dtx_add(struct clovis_dtx *dx, struct clovis_op *op)
{
	struct dtx_member *m;
	int rc = 0;

	if (!dtx_valid(dx) || op == NULL || op->op_magic != CLOVIS_OP_MAGIC)
		return err_set(-EINVAL, "dtx_add: %s", dtx_valid(dx) ?
			       "not an op" : "not a dtx");
	if (op->op_cl != dx->dx_cl)
		return err_set(-EINVAL, "dtx_add: dtx %s: the op belongs to "
			       "another client", dtx_str(dx));
	if (op->op_state != CLOVIS_OS_INIT || op->op_dtx != NULL ||
	    op->op_run != NULL)
		return err_set(-CLOVIS_ESTATE, "dtx_add: dtx %s: op is %s",
			       dtx_str(dx), op->op_state != CLOVIS_OS_INIT ?
			       "not in INIT state" : "already in a dtx");
	if (eng_req_readonly(&op->op_req))
		return 0; /* reads are not held (clovis.h) */
	if (op->op_cl->cl_eng == NULL && !dtx_clu_kind(&op->op_req))
		return err_set(-ENOTSUP, "dtx_add: dtx %s: %s %s: %s is not "
			       "supported in a dtx in cluster mode (members: "
			       "object WRITE, ALLOC, FREE, CREATE, DELETE; "
			       "index PUT, DEL, CREATE, DELETE)", dtx_str(dx),
			       dtx_type_name(op->op_req.er_type),
			       eng_id_str(&op->op_req.er_id),
			       dtx_kind_name(op->op_req.er_kind));
	pthread_mutex_lock(&dx->dx_lock);
	if (dx->dx_state != DX_OPEN || dx->dx_aborting) {
		rc = err_set(-CLOVIS_ESTATE, "dtx_add: dtx %s is committed",
			     dtx_str(dx));
	} else if (dx->dx_nr >= CLOVIS_DTX_OPS_MAX) {
		rc = err_set(-E2BIG, "dtx_add: dtx %s has %u ops already "
			     "(CLOVIS_DTX_OPS_MAX)", dtx_str(dx), dx->dx_nr);
	} else if (dx->dx_nr == dx->dx_cap) {
		uint32_t cap = dx->dx_cap ? dx->dx_cap * 2 : 16;

		m = realloc(dx->dx_m, cap * sizeof *m);
		if (m == NULL) {
			rc = err_set(-ENOMEM, "dtx %s: member table of %u",
				     dtx_str(dx), cap);
		} else {
			dx->dx_m = m;
			dx->dx_cap = cap;
		}
	}
	if (rc == 0) {
		dx->dx_m[dx->dx_nr++] = (struct dtx_member){op, DM_INIT};
		op->op_dtx = dx;
		op->op_run = dtx_member_run;
		op->op_req.er_ci.ci_hold = dtx_hold;
	}
	pthread_mutex_unlock(&dx->dx_lock);
	return rc;
}

/*
 * Which dtx ops run in the thread that launches them (embedded mode, no
 * callbacks): the commit op (dtx_commit_run() only launches the members
 * left in INIT and hands the dtx to the group commit when every member
 * has run) and member index PUT/DEL (their run builds the commit item
 * and holds it: no device I/O, the records are applied at the commit).
 * Each would otherwise cost a hand-off to a worker and its wake-up: three
 * per gateway PUT (the commit op, the record PUT, the in-flight DEL).
 * Member object updates keep running on workers, where their data I/O
 * runs in parallel, unless made with CLOVIS_OF_HERE (plain layout: its
 * data I/O then runs in this thread).  None of them in a dtx with a
 * member of a unit layout (see below).
 */
bool dtx_op_runs_here(const struct clovis_op *op)
{
	uint32_t kind = op->op_req.er_kind;
	struct clovis_dtx *dx = op->op_dtx;
	bool plain = true;

	if (dx == NULL || !op_embedded_nocb(op))
		return false;
	/* Not with a member of a unit layout (pdclust, mirror, composite):
	 * the thread that completes the members runs those at the commit
	 * (dtx_run_deferred()), with RCU read sections that need a library
	 * thread (eng_thread_enter()). */
	pthread_mutex_lock(&dx->dx_lock);
	for (uint32_t i = 0; plain && i < dx->dx_nr; i++)
		plain = op_unit_layout(dx->dx_m[i].dm_op) == CLOVIS_LAYOUT_PLAIN;
	pthread_mutex_unlock(&dx->dx_lock);
	if (!plain)
		return false;
	if (op->op_run == dtx_commit_run)
		return true;
	return op->op_run == dtx_member_run &&
	       (kind == ER_IDX_PUT || kind == ER_IDX_DEL ||
		(op->op_here && op_unit_layout(op) == CLOVIS_LAYOUT_PLAIN));
}

/* Due once the commit op left INIT (launched: its run, maybe still queued
 * to a worker, launches the members).  Not under op_lock or dx_lock
 * (dtx_commit_run() takes op locks under dx_lock); the app does not free
 * the dtx while it waits on one of its members. */
bool dtx_member_launch_due(const struct clovis_op *op)
{
	const struct clovis_dtx *dx = op->op_dtx;
	struct clovis_op *cop;

	if (dx == NULL)
		return false;
	cop = __atomic_load_n(&dx->dx_cop, __ATOMIC_ACQUIRE);
	return cop != NULL && cop != op &&
	       clovis_op_state(cop) != CLOVIS_OS_INIT;
}

/* Take op out of its dtx (it stays an ordinary op in INIT). */
static void member_detach(struct clovis_op *op)
{
	op->op_dtx = NULL;
	op->op_run = NULL;
	op->op_req.er_ci.ci_hold = NULL;
}

void dtx_op_free(struct clovis_op *op)
{
	struct clovis_dtx *dx = op->op_dtx;
	struct dtx_member *m;

	if (dx->dx_cop == op) {
		if (dx->dx_state == DX_OPEN)
			dtx_cancel(dx); /* commit op freed unlaunched */
		op->op_dtx = NULL;
		dtx_put(dx);
		return;
	}
	/* A member freed in INIT while its dtx is open leaves it. */
	pthread_mutex_lock(&dx->dx_lock);
	m = dtx_member_find(dx, op);
	if (m != NULL && m->dm_state == DM_INIT && dx->dx_state == DX_OPEN) {
		*m = dx->dx_m[--dx->dx_nr];
		member_detach(op);
	}
	pthread_mutex_unlock(&dx->dx_lock);
	op->op_dtx = NULL;
}

/* ------------------------------------------------------------ outcome */

/* Release the group locks the dtx took for its unit-layout members: when
 * its commit is applied (visible), or when it failed. */
static void dtx_unlock(struct clovis_dtx *dx)
{
	if (dx->dx_locks == NULL)
		return;
	eng_gunlock(dx->dx_cl->cl_eng, dx->dx_locks, dx->dx_nr_locks);
	free(dx->dx_locks);
	dx->dx_locks = NULL;
	dx->dx_nr_locks = 0;
}

/* A member that will not run: FAILED with rc, out of the dtx. */
static void dtx_member_fail(struct clovis_dtx *dx, struct dtx_member *m,
			    int rc, const char *msg)
{
	struct eng_citem *ci = member_ci(m);

	m->dm_state = DM_FAILED;
	m->dm_op->op_dtx = NULL;
	snprintf(ci->ci_msg, sizeof ci->ci_msg, "%s", msg);
	ci->ci_done(ci, rc);
}

/* Embedded mode, every member has run but the unit-layout ones (DEFER):
 * take all their group locks at once (one sorted set, so dtxs and single
 * writes over the same groups never wait for each other in a cycle), then
 * run them under the locks, each as it would run alone.  Two members over
 * one parity group of one object are refused (the second's
 * read-modify-write would not see the first's units, which are not
 * applied before the commit).  0, or the dtx's failure (dx_rc set; the
 * deferred members are FAILED). */
static int dtx_run_deferred(struct clovis_dtx *dx)
{
	struct eng *e = dx->dx_cl->cl_eng;
	struct eng_req **reqs = calloc(dx->dx_nr, sizeof *reqs);
	uint32_t *all = NULL, n = 0;
	uint32_t bad = UINT32_MAX;
	int rc = reqs == NULL ?
		 err_set(-ENOMEM, "dtx %s: group locks", dtx_str(dx)) : 0;

	/* A composite WRITE is aimed at its top layer first, so that the
	 * layer's groups join the one sorted set (comp_resolve). */
	for (uint32_t i = 0; rc == 0 && i < dx->dx_nr; i++)
		if (dx->dx_m[i].dm_state == DM_DEFER) {
			reqs[i] = &dx->dx_m[i].dm_op->op_req;
			rc = comp_resolve(e, reqs[i]);
			if (rc != 0)
				bad = i;
		}
	if (rc == 0)
		rc = stripe_reqs_locks(e, reqs, dx->dx_nr, &all, &n, &bad);
	free(reqs);
	if (rc != 0) {
		char m[LIM_ERRMSG_LEN];

		snprintf(m, sizeof m, "%s", err_msg());
		err_set(rc, "dtx %s: %s", dtx_str(dx), m);
	} else {
		eng_glock(e, all, n);
		dx->dx_locks = all;
		dx->dx_nr_locks = n;
	}
	for (uint32_t i = 0; rc == 0 && i < dx->dx_nr; i++) {
		struct clovis_op *op = dx->dx_m[i].dm_op;

		if (dx->dx_m[i].dm_state != DM_DEFER)
			continue;
		op->op_req.er_glocked = true;
		rc = dx->dx_cl->cl_exec(dx->dx_cl, &op->op_req);
		if (rc == ENG_PENDING) {
			rc = 0; /* held: dtx_hold() made it HELD */
		} else {
			if (rc == 0)
				rc = err_set(-EPROTO, "dtx %s: update ran "
					     "without a commit", dtx_str(dx));
			bad = i;
		}
	}
	if (rc != 0) {
		pthread_mutex_lock(&dx->dx_lock);
		dx->dx_rc = rc;
		snprintf(dx->dx_msg, sizeof dx->dx_msg, "%s", err_msg());
		dx->dx_bad = UINT32_MAX; /* the failed member is FAILED */
		pthread_mutex_unlock(&dx->dx_lock);
		for (uint32_t i = 0; i < dx->dx_nr; i++) {
			struct dtx_member *m = &dx->dx_m[i];

			if (m->dm_state != DM_DEFER)
				continue;
			dx->dx_defer--;
			dx->dx_ran++;
			dtx_member_fail(dx, m, i == bad ? rc : -ECANCELED,
					i == bad ? dx->dx_msg : "dtx not "
					"committed: another member failed");
		}
	}
	return rc;
}

/* Pass the outcome to every held member (they leave the dtx), then to the
 * commit op.  rc < 0: nothing was applied; the member that failed the
 * dtx gets rc, the others -ECANCELED. */
static void dtx_finish(struct clovis_dtx *dx, int rc, const char *msg)
{
	struct eng_citem *cci = &dx->dx_cop->op_req.er_ci;

	for (uint32_t i = 0; i < dx->dx_nr; i++) {
		struct dtx_member *m = &dx->dx_m[i];
		struct eng_citem *ci;

		if (m->dm_state == DM_DEFER) /* never ran: another failed */
			dtx_member_fail(dx, m, -ECANCELED, "dtx not committed: "
					"another member failed");
		if (m->dm_state != DM_HELD)
			continue;
		ci = member_ci(m);
		ci->ci_alloc.sv_nr = 0; /* moved to the commit item */
		ci->ci_freed.sv_nr = 0;
		m->dm_op->op_dtx = NULL;
		if (rc != 0)
			snprintf(ci->ci_msg, sizeof ci->ci_msg, "dtx %s not "
				 "committed: %.200s", dtx_str(dx), msg);
		ci->ci_done(ci, rc == 0 || i == dx->dx_bad ? rc : -ECANCELED);
	}
	dtx_unlock(dx);
	dx->dx_state = DX_DONE;
	cci->ci_done = dx->dx_cop_done;
	cci->ci_executed = dx->dx_cop_executed;
	if (rc != 0 && cci->ci_msg != msg)
		snprintf(cci->ci_msg, sizeof cci->ci_msg, "dtx %s: %.200s",
			 dtx_str(dx), msg);
	cci->ci_done(cci, rc);
}

/* Member mci (an index PUT without CLOVIS_IF_OVERWRITE) just applied met
 * an existing key (its record's rc -EEXIST): a dtx is atomic, so it fails
 * whole rather than commit with that record left out (clovis.h).  0, or
 * -EEXIST with the index and key in mci's message. */
static int dtx_put_exists(struct eng_citem *mci)
{
	struct eng_req *r = (struct eng_req *)mci;
	char k[DTM_KEY_STR_LEN];

	if (r->er_kind != ER_IDX_PUT || (r->er_flags & CLOVIS_IF_OVERWRITE))
		return 0;
	for (uint32_t i = 0; i < r->er_keys->bv_nr; i++) {
		if (r->er_rcs[i] != -EEXIST)
			continue;
		snprintf(mci->ci_msg, sizeof mci->ci_msg, "index %s: key %s "
			 "(record %u) exists (PUT without CLOVIS_IF_OVERWRITE)",
			 eng_id_str(&r->er_id),
			 dtm_key_str(k, sizeof k, r->er_keys->bv_buf[i],
				     r->er_keys->bv_len[i]), i);
		return -EEXIST;
	}
	return 0;
}

/* Group commit: apply every member in one nested transaction. */
static int dtx_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct clovis_dtx *dx = ((struct clovis_op *)ci)->op_dtx;
	MDB_txn *child;
	int rc = mdb_txn_begin(eng_meta(e)->m_env, txn, 0, &child);

	if (rc != 0)
		return meta_err(rc, "dtx nested transaction");
	for (uint32_t i = 0; rc == 0 && i < dx->dx_nr; i++) {
		struct eng_citem *mci = member_ci(&dx->dx_m[i]);

		mci->ci_hard = false;
		mci->ci_freed.sv_nr = 0;
		mci->ci_msg[0] = '\0';
		err_clear();
		rc = mci->ci_apply(e, child, mci);
		if (rc == 0)
			rc = dtx_put_exists(mci);
		if (rc == 0 && i == 0 && FAULT_HIT("dtx.apply.mid"))
			rc = err_set(-EIO, "fault point dtx.apply.mid");
		if (rc != 0) {
			dx->dx_bad = i;
			ci->ci_hard = mci->ci_hard;
			snprintf(ci->ci_msg, sizeof ci->ci_msg, "dtx %s: op %u of "
				 "%u: %.200s", dtx_str(dx), i + 1, dx->dx_nr,
				 mci->ci_msg[0] ?
				 mci->ci_msg : err_msg());
		}
	}
	if (rc != 0) {
		mdb_txn_abort(child);
		return rc;
	}
	rc = mdb_txn_commit(child);
	if (rc != 0) {
		ci->ci_hard = true;
		return meta_err(rc, "dtx nested commit");
	}
	for (uint32_t i = 0; rc == 0 && i < dx->dx_nr; i++) {
		struct eng_spacevec *fv = &member_ci(&dx->dx_m[i])->ci_freed;

		for (uint32_t j = 0; rc == 0 && j < fv->sv_nr; j++)
			rc = eng_spacevec_add(&ci->ci_freed, fv->sv_v[j].sp_dev,
					      fv->sv_v[j].sp_off,
					      fv->sv_v[j].sp_len);
		fv->sv_nr = 0;
	}
	if (rc != 0)
		ci->ci_hard = true; /* the parent holds the maps: redo all */
	return rc;
}

static void dtx_executed(struct eng_citem *ci)
{
	struct clovis_dtx *dx = ((struct clovis_op *)ci)->op_dtx;

	dtx_unlock(dx); /* applied: visible to the next writer */
	for (uint32_t i = 0; i < dx->dx_nr; i++) {
		struct eng_citem *mci = member_ci(&dx->dx_m[i]);

		if (mci->ci_executed != NULL)
			mci->ci_executed(mci);
	}
	if (dx->dx_cop_executed != NULL)
		dx->dx_cop_executed(ci);
}

static void dtx_done(struct eng_citem *ci, int rc)
{
	struct clovis_dtx *dx = ((struct clovis_op *)ci)->op_dtx;

	dtx_finish(dx, rc, ci->ci_msg);
}

/* Every member has run: fail the dtx, or hand its one item to the group
 * commit with the devices to sync and the space its members took. */
static void dtx_clu_submit(struct clovis_dtx *dx);

static void dtx_submit(struct clovis_dtx *dx)
{
	struct eng *e = dx->dx_cl->cl_eng;
	struct eng_citem *ci = &dx->dx_cop->op_req.er_ci;
	int rc = dx->dx_rc;

	if (e == NULL) {
		dtx_clu_submit(dx);
		return;
	}
	if (rc == 0 && dx->dx_defer > 0)
		rc = dtx_run_deferred(dx);

	for (uint32_t i = 0; rc == 0 && i < dx->dx_nr; i++) {
		struct eng_citem *mci = member_ci(&dx->dx_m[i]);
		uint32_t before = ci->ci_alloc.sv_nr;

		for (uint32_t w = 0; w < ENG_DEVMASK_WORDS; w++)
			ci->ci_devmask[w] |= mci->ci_devmask[w];
		for (uint32_t j = 0; rc == 0 && j < mci->ci_alloc.sv_nr; j++)
			rc = eng_spacevec_add(&ci->ci_alloc,
					      mci->ci_alloc.sv_v[j].sp_dev,
					      mci->ci_alloc.sv_v[j].sp_off,
					      mci->ci_alloc.sv_v[j].sp_len);
		if (rc == 0)
			mci->ci_alloc.sv_nr = 0;
		else
			ci->ci_alloc.sv_nr = before; /* the member keeps it */
	}
	if (rc != 0) {
		const char *msg = dx->dx_rc != 0 ? dx->dx_msg : err_msg();

		for (uint32_t i = 0; i < dx->dx_nr; i++)
			if (dx->dx_m[i].dm_state == DM_HELD)
				eng_space_release(e, &member_ci(&dx->dx_m[i])->ci_alloc);
		eng_space_release(e, &ci->ci_alloc);
		ci->ci_alloc.sv_nr = 0;
		dx->dx_bad = UINT32_MAX;
		dtx_finish(dx, rc, msg);
		return;
	}
	ci->ci_apply = dtx_apply;
	ci->ci_executed = dtx_executed;
	ci->ci_done = dtx_done;
	eng_commit_submit(e, ci);
}

/* The commit op's worker run: launch the members still in INIT; the last
 * member to run submits the dtx (or this does, if all ran before). */
static int dtx_commit_run(struct clovis_op *cop)
{
	int rc;
	struct clovis_dtx *dx = cop->op_dtx;
	struct clovis_op **launch = NULL;
	uint32_t n = 0;
	bool go;

	pthread_mutex_lock(&dx->dx_lock);
	dx->dx_state = DX_COMMITTING;
	if (dx->dx_nr == 0) {
		dx->dx_state = DX_DONE;
		pthread_mutex_unlock(&dx->dx_lock);
		return 0; /* empty: trivially committed */
	}
	/* The members launched below may complete the dtx, and the
	 * application free it, before this function is done with it. */
	dtx_get(dx);
	launch = malloc(dx->dx_nr * sizeof *launch);
	for (uint32_t i = 0; launch != NULL && i < dx->dx_nr; i++)
		if (dx->dx_m[i].dm_state == DM_INIT &&
		    clovis_op_state(dx->dx_m[i].dm_op) == CLOVIS_OS_INIT)
			launch[n++] = dx->dx_m[i].dm_op;
	if (launch == NULL) {
		dx->dx_state = DX_OPEN;
		pthread_mutex_unlock(&dx->dx_lock);
		rc = err_set(-ENOMEM, "dtx %s: commit", dtx_str(dx));
		dtx_put(dx);
		return rc;
	}
	pthread_mutex_unlock(&dx->dx_lock);
	if (n > 0)
		clovis_op_launch(launch, n);
	free(launch);
	pthread_mutex_lock(&dx->dx_lock);
	go = dtx_ready_locked(dx);
	pthread_mutex_unlock(&dx->dx_lock);
	if (go)
		dtx_submit(dx);
	dtx_put(dx);
	return ENG_PENDING;
}

int clovis_dtx_commit(struct clovis_dtx *dx, struct clovis_op **out)
{
	struct clovis_op *cop;
	int rc;

	if (!dtx_valid(dx) || out == NULL)
		return err_set(-EINVAL, "dtx_commit: %s", dtx_valid(dx) ?
			       "op is NULL" : "not a dtx");
	if (dx->dx_cop != NULL || dx->dx_aborting)
		return err_set(-CLOVIS_ESTATE, "dtx_commit: dtx %s is already "
			       "committed", dtx_str(dx));
	rc = op_alloc(&dx->dx_ent, 0, CLOVIS_STAT_NR, &cop);
	if (rc != 0)
		return rc;
	cop->op_dtx = dx;
	cop->op_run = dtx_commit_run;
	dx->dx_cop_executed = cop->op_req.er_ci.ci_executed;
	dx->dx_cop_done = cop->op_req.er_ci.ci_done;
	dx->dx_bad = UINT32_MAX;
	pthread_mutex_lock(&dx->dx_lock);
	dx->dx_cop = cop;
	pthread_mutex_unlock(&dx->dx_lock);
	*out = cop;
	return 0;
}

/* Drop an open dtx: members in INIT leave it, launched ones are waited for
 * and fail with -ECANCELED.  The dtx is not freed. */
static void dtx_cancel(struct clovis_dtx *dx)
{
	uint32_t launched = 0;

	pthread_mutex_lock(&dx->dx_lock);
	dx->dx_aborting = true;
	for (uint32_t i = 0; i < dx->dx_nr; i++) {
		struct dtx_member *m = &dx->dx_m[i];

		if (m->dm_state == DM_INIT &&
		    clovis_op_state(m->dm_op) == CLOVIS_OS_INIT)
			member_detach(m->dm_op);
		else
			launched++;
	}
	while (dx->dx_ran + dx->dx_defer < launched)
		pthread_cond_wait(&dx->dx_cond, &dx->dx_lock);
	pthread_mutex_unlock(&dx->dx_lock);
	for (uint32_t i = 0; i < dx->dx_nr; i++) {
		struct dtx_member *m = &dx->dx_m[i];
		struct eng_citem *ci;

		if (m->dm_state == DM_DEFER) /* never ran, took nothing */
			dtx_member_fail(dx, m, -ECANCELED, "dtx aborted");
		if (m->dm_state != DM_HELD)
			continue;
		ci = member_ci(m);
		eng_space_release(dx->dx_cl->cl_eng, &ci->ci_alloc);
		ci->ci_alloc.sv_nr = 0;
		m->dm_op->op_dtx = NULL;
		snprintf(ci->ci_msg, sizeof ci->ci_msg, "dtx %s aborted",
			 dtx_str(dx));
		ci->ci_done(ci, -ECANCELED);
	}
	dx->dx_state = DX_DONE;
}

void clovis_dtx_abort(struct clovis_dtx *dx)
{
	if (dx == NULL)
		return;
	if (!dtx_valid(dx) || dx->dx_cop != NULL) {
		err_set(-CLOVIS_ESTATE, "dtx_abort: %s", dtx_valid(dx) ?
			"dtx already committed: abort refused" : "not a dtx");
		LOG_WARNING("%s", err_msg());
		return;
	}
	dtx_cancel(dx);
	dtx_put(dx);
}

/* ================================================= cluster mode: 2PC
 *
 * The coordinator (dtm/README.md "Coordinator"), on the worker thread of
 * the last member to run:
 *
 *   encode      each member as the request it would be alone, grouped by
 *               the server that applies it (object: home; index: its
 *               first live replica, which orders it and copies it to the
 *               others after the COMMIT, with its seq);
 *   PREPARE     to every participant in parallel (thread each), with the
 *               participant list sorted: parts[0] is the decider;
 *   decide      all YES: COMMIT to the decider first (its COMMITTED record
 *               is the commit point), then to the others in parallel; any
 *               NO or timeout: ABORT to all (those that never prepared log
 *               ABORTED, so a late PREPARE is refused);
 *   outcome     STABLE when every participant acknowledged the COMMIT
 *               applied and durable.
 * A NO with -ESTALE (an index replica must verify first) makes the client
 * send that replica a GET (which verifies it) and try again with a new id,
 * DTX_CLU_TRIES times and for one call timeout at most.  The PREPARE
 * announces the decision deadline (wait_ms: call timeout + slack) and the
 * client keeps it (votes later than that: ABORT); participants start
 * termination only past it.  Every call has a deadline (DTX_CLU_CALL_MS,
 * at most the cluster's call timeout).
 */
#define DTX_CLU_CALL_MS 10000u

/* Benchmarks (tests/bench/bench_dtx.c --cluster): behave as a client that
 * dies after all votes (dtx.cli.prepared) without dying: no DECIDE is
 * sent and the commit op fails with -ETIMEDOUT.  Off by default. */
bool dtx_abandon_after_prepare;
/* -ESTALE (an index replica verifying) is retried with a new id while the
 * first attempt began less than the call timeout ago, this often at most:
 * under load a verification can take longer than a few quick retries. */
#define DTX_CLU_TRIES 40u
#define DTX_CLU_BACKOFF_MAX_MS 500u
/* The PREPARE announces the decision deadline: the call timeout plus this
 * (thread start-up, scheduling), and the client keeps it: votes that came
 * later make it abort, so a participant's termination (which waits for the
 * deadline, srv_dtx.c) never races a live client. */
#define DTX_CLU_SLACK_MS 1000u
/* A participant's PREPARE and DECIDE calls get this much more than the
 * call timeout per member and per MiB of members (a COMMIT runs each
 * member and copies each index member to its other replicas, one durable
 * update after the other), at most
 * DTX_CLU_EXTRA_MAX_MS: the decision deadline the PREPARE announces
 * (wait_ms, at most DTM_WAIT_MS_MAX) grows with it. */
#define DTX_CLU_MEMBER_MS 4u
#define DTX_CLU_IDX_MS 20u      /* an index member: its copy to each other
				   replica is a durable update there */
#define DTX_CLU_MIB_MS 250u
#define DTX_CLU_EXTRA_MAX_MS 40000u

static uint64_t dtx_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct dtx_part {
	struct clovis_dtx *dp_dx;
	uint32_t dp_server;
	DtxMember *dp_m;        /* its members */
	DtxMember **dp_mp;
	uint32_t *dp_mi;        /* their indices in dx_m */
	size_t dp_nr;
	uint8_t *dp_req;        /* the packed request of the current phase */
	size_t dp_len;
	uint8_t *dp_bulk;       /* a PREPARE above DTM_PREPARE_INLINE_MAX:
				   the packed PREPARE (dp_req its envelope) */
	size_t dp_bulk_len;
	uint32_t dp_ms;
	uint32_t dp_extra_ms;   /* its calls' deadline above the call timeout:
				   the work of a large PREPARE or COMMIT */
	int dp_rc;
	uint32_t dp_state;
	char dp_msg[LIM_ERRMSG_LEN];
	pthread_t dp_th;
};

struct dtx_clu {
	struct dtx_part *dc_p;
	uint32_t dc_nr;
	uint32_t dc_parts[DTM_PARTS_MAX];
	uint32_t dc_wait_ms;    /* PREPARE: the decision deadline announced */
	uint8_t **dc_bodies;    /* per member */
	uint8_t **dc_data;
};

static void *dtx_part_call(void *arg)
{
	struct dtx_part *p = arg;
	struct clovis *cl = p->dp_dx->dx_cl;
	void *rb = NULL;
	size_t rl = 0;
	DtxReply *rp = NULL;
	int rc = cluster_dtx_call(cl, p->dp_server, DTM_OP, p->dp_req,
				  p->dp_len, p->dp_bulk, p->dp_bulk_len,
				  p->dp_ms, &rb, &rl);

	if (rc == 0)
		rc = dtm_reply_decode(rb, rl, &rp);
	p->dp_rc = rc;
	p->dp_state = DTM_UNKNOWN;
	if (rc == 0) {
		p->dp_state = rp->state;
		dtm_hlc_observe(rp->clock);
		dtx_reply__free_unpacked(rp, NULL);
	} else {
		snprintf(p->dp_msg, sizeof p->dp_msg, "server %s: %s",
			 cluster_server_name(cl, p->dp_server), err_msg());
	}
	free(rb);
	return NULL;
}

/* Pack the request of kind for p. */
static int dtx_part_req(struct dtx_clu *c, struct dtx_part *p, uint32_t kind,
			uint32_t decision)
{
	struct clovis_dtx *dx = p->dp_dx;
	DtxReq q = DTX_REQ__INIT;
	int rc;

	free(p->dp_req);
	free(p->dp_bulk);
	p->dp_req = p->dp_bulk = NULL;
	p->dp_bulk_len = 0;
	q.kind = kind;
	q.hlc = dx->dx_id.di_hlc;
	q.node = dx->dx_id.di_node;
	q.clock = dtm_hlc_now();
	if (kind == DTM_MSG_PREPARE) {
		q.n_parts = c->dc_nr;
		q.parts = c->dc_parts;
		q.n_members = p->dp_nr;
		q.members = p->dp_mp;
		q.wait_ms = c->dc_wait_ms;
	}
	q.decision = decision;
	rc = dtm_pack(&q.base, &p->dp_req, &p->dp_len);
	if (rc != 0 || kind != DTM_MSG_PREPARE ||
	    p->dp_len <= DTM_PREPARE_INLINE_MAX)
		return rc;
	/* Too big for one message: the PREPARE becomes the call's bulk
	 * (pulled by the participant), behind an envelope. */
	p->dp_bulk = p->dp_req;
	p->dp_bulk_len = p->dp_len;
	p->dp_req = NULL;
	q.n_parts = 0;
	q.parts = NULL;
	q.n_members = 0;
	q.members = NULL;
	q.wait_ms = 0;
	q.bulk_len = p->dp_bulk_len;
	return dtm_pack(&q.base, &p->dp_req, &p->dp_len);
}

/* Send kind to parts [from, to) in parallel and wait. */
static void dtx_parts_call(struct dtx_clu *c, uint32_t from, uint32_t to,
			   uint32_t kind, uint32_t decision, uint32_t ms)
{
	for (uint32_t i = from; i < to; i++) {
		struct dtx_part *p = &c->dc_p[i];

		p->dp_ms = ms + p->dp_extra_ms;
		p->dp_rc = dtx_part_req(c, p, kind, decision);
		if (p->dp_rc == 0 && (to - from == 1 ||
				      pthread_create(&p->dp_th, NULL,
						     dtx_part_call, p) != 0)) {
			dtx_part_call(p);
			p->dp_th = 0;
		} else if (p->dp_rc != 0) {
			p->dp_th = 0;
		}
	}
	for (uint32_t i = from; i < to; i++)
		if (c->dc_p[i].dp_th != 0)
			pthread_join(c->dc_p[i].dp_th, NULL);
}

static int dtx_part_cmp(const void *a, const void *b)
{
	const struct dtx_part *x = a, *y = b;

	return x->dp_server < y->dp_server ? -1 : x->dp_server > y->dp_server;
}

static void dtx_clu_fini(struct dtx_clu *c, uint32_t nr_members)
{
	for (uint32_t i = 0; i < c->dc_nr; i++) {
		free(c->dc_p[i].dp_m);
		free(c->dc_p[i].dp_mp);
		free(c->dc_p[i].dp_mi);
		free(c->dc_p[i].dp_req);
		free(c->dc_p[i].dp_bulk);
	}
	for (uint32_t i = 0; c->dc_bodies != NULL && i < nr_members; i++) {
		free(c->dc_bodies[i]);
		free(c->dc_data[i]);
	}
	free(c->dc_bodies);
	free(c->dc_data);
	free(c->dc_p);
	memset(c, 0, sizeof *c);
}

/* Encode the members and group them by participant. */
static int dtx_clu_build(struct clovis_dtx *dx, struct dtx_clu *c)
{
	uint32_t *srv = calloc((size_t)dx->dx_nr * CLU_REPLICAS_MAX,
			       sizeof *srv);
	uint32_t *nsrv = calloc(dx->dx_nr, sizeof *nsrv);
	uint32_t *sop = calloc(dx->dx_nr, sizeof *sop);
	size_t *blen = calloc(dx->dx_nr, sizeof *blen);
	size_t *dlen = calloc(dx->dx_nr, sizeof *dlen);
	int rc = 0;

	c->dc_bodies = calloc(dx->dx_nr, sizeof *c->dc_bodies);
	c->dc_data = calloc(dx->dx_nr, sizeof *c->dc_data);
	c->dc_p = calloc(DTM_PARTS_MAX, sizeof *c->dc_p);
	if (srv == NULL || nsrv == NULL || sop == NULL || blen == NULL ||
	    dlen == NULL ||
	    c->dc_bodies == NULL || c->dc_data == NULL || c->dc_p == NULL)
		rc = err_set(-ENOMEM, "dtx %s: members", dtx_str(dx));
	for (uint32_t i = 0; rc == 0 && i < dx->dx_nr; i++) {
		struct eng_req *r = &dx->dx_m[i].dm_op->op_req;

		if (r->er_type == CLOVIS_ET_IDX && r->er_kind == ER_ENT_CREATE)
			/* every replica creates it with this incarnation:
			 * the dtx id's time in ns, unique to this attempt */
			r->er_ent.me_ctime_ns = dtm_hlc_us(dx->dx_id.di_hlc) *
				1000u + (dx->dx_id.di_hlc & 0xffffu) % 1000u;
		rc = cluster_dtx_member(dx->dx_cl, r,
					&srv[(size_t)i * CLU_REPLICAS_MAX],
					&nsrv[i], &sop[i], &c->dc_bodies[i],
					&blen[i]);
		if (rc == 0 && r->er_kind == ER_OBJ_WRITE && r->er_data) {
			size_t n = 0;

			for (uint32_t k = 0; k < r->er_data->bv_nr; k++)
				n += r->er_data->bv_len[k];
			c->dc_data[i] = malloc(n ? n : 1);
			if (c->dc_data[i] == NULL)
				rc = err_set(-ENOMEM, "dtx %s: data",
					     dtx_str(dx));
			for (uint32_t k = 0; rc == 0 &&
			     k < r->er_data->bv_nr; k++) {
				memcpy(c->dc_data[i] + dlen[i],
				       r->er_data->bv_buf[k],
				       r->er_data->bv_len[k]);
				dlen[i] += r->er_data->bv_len[k];
			}
		}
		if (rc != 0) {
			dx->dx_bad = i;
			break;
		}
		for (uint32_t n = 0; rc == 0 && n < nsrv[i]; n++) {
			uint32_t sv = srv[(size_t)i * CLU_REPLICAS_MAX + n];
			struct dtx_part *p = NULL;

			for (uint32_t k = 0; k < c->dc_nr; k++)
				if (c->dc_p[k].dp_server == sv)
					p = &c->dc_p[k];
			if (p == NULL) {
				p = &c->dc_p[c->dc_nr++];
				p->dp_dx = dx;
				p->dp_server = sv;
				p->dp_m = calloc(dx->dx_nr, sizeof *p->dp_m);
				p->dp_mp = calloc(dx->dx_nr, sizeof *p->dp_mp);
				p->dp_mi = calloc(dx->dx_nr, sizeof *p->dp_mi);
				if (p->dp_m == NULL || p->dp_mp == NULL ||
				    p->dp_mi == NULL) {
					rc = err_set(-ENOMEM, "dtx %s",
						     dtx_str(dx));
					break;
				}
			}
			dtx_member__init(&p->dp_m[p->dp_nr]);
			p->dp_m[p->dp_nr].op = sop[i];
			p->dp_m[p->dp_nr].body.data = c->dc_bodies[i];
			p->dp_m[p->dp_nr].body.len = blen[i];
			p->dp_m[p->dp_nr].data.data = c->dc_data[i];
			p->dp_m[p->dp_nr].data.len = dlen[i];
			p->dp_mp[p->dp_nr] = &p->dp_m[p->dp_nr];
			p->dp_mi[p->dp_nr] = i;
			p->dp_nr++;
		}
	}
	/* The documented bound: DTM_PREPARE_BYTES_MAX per participant; and
	 * the deadline its calls get beyond the call timeout. */
	for (uint32_t k = 0; rc == 0 && k < c->dc_nr; k++) {
		struct dtx_part *p = &c->dc_p[k];
		uint64_t n = 0, extra;

		extra = 0;
		for (size_t j = 0; j < p->dp_nr; j++) {
			n += p->dp_m[j].body.len + p->dp_m[j].data.len;
			extra += p->dp_m[j].op == SOP_IDX ? DTX_CLU_IDX_MS
							  : DTX_CLU_MEMBER_MS;
		}
		extra += (n >> 20) * DTX_CLU_MIB_MS;
		p->dp_extra_ms = (uint32_t)(extra < DTX_CLU_EXTRA_MAX_MS ?
					    extra : DTX_CLU_EXTRA_MAX_MS);
		if (n > DTM_PREPARE_BYTES_MAX) {
			dx->dx_bad = p->dp_mi[0];
			rc = err_set(-E2BIG, "dtx %s: %" PRIu64 " bytes of "
				     "members for server %s, more than a "
				     "PREPARE may carry (DTM_PREPARE_BYTES_MAX,"
				     " %u bytes per participant)", dtx_str(dx),
				     n, cluster_server_name(dx->dx_cl,
							    p->dp_server),
				     DTM_PREPARE_BYTES_MAX);
		}
	}
	if (rc == 0) {
		qsort(c->dc_p, c->dc_nr, sizeof *c->dc_p, dtx_part_cmp);
		for (uint32_t k = 0; k < c->dc_nr; k++)
			c->dc_parts[k] = c->dc_p[k].dp_server;
	}
	free(srv);
	free(nsrv);
	free(sop);
	free(blen);
	free(dlen);
	return rc;
}

static void dtx_clu_kill(const char *point)
{
	if (FAULT_HIT(point)) {
		LOG_WARNING("fault point %s: SIGKILL", point);
		raise(SIGKILL);
	}
}

/* One attempt: 0 (committed everywhere), -ESTALE (*stale: the part to
 * touch), or the failure (msg set). */
static int dtx_clu_attempt(struct clovis_dtx *dx, struct dtx_clu *c,
			   struct dtx_part **stale, char *msg, size_t msz)
{
	uint32_t ms = cluster_call_ms(dx->dx_cl);
	struct dtx_part *bad = NULL;
	uint64_t t0 = dtx_mono_ms();
	int rc;

	if (ms == 0 || ms > DTX_CLU_CALL_MS)
		ms = DTX_CLU_CALL_MS;
	*stale = NULL;
	c->dc_wait_ms = ms + DTX_CLU_SLACK_MS;
	for (uint32_t i = 0; i < c->dc_nr; i++)
		if (ms + c->dc_p[i].dp_extra_ms + DTX_CLU_SLACK_MS >
		    c->dc_wait_ms)
			c->dc_wait_ms = ms + c->dc_p[i].dp_extra_ms +
					DTX_CLU_SLACK_MS;
	dtx_parts_call(c, 0, c->dc_nr, DTM_MSG_PREPARE, 0, ms);
	for (uint32_t i = 0; i < c->dc_nr && bad == NULL; i++)
		if (c->dc_p[i].dp_rc != 0 ||
		    c->dc_p[i].dp_state != DTM_PREPARED)
			bad = &c->dc_p[i];
	if (bad != NULL) {
		rc = bad->dp_rc != 0 ? bad->dp_rc : -EPROTO;
		snprintf(msg, msz, "%s", bad->dp_msg);
		dx->dx_bad = bad->dp_mi[0];
		if (rc == -ESTALE)
			*stale = bad;
		dtx_parts_call(c, 0, c->dc_nr, DTM_MSG_DECIDE, DTM_ABORTED, ms);
		return rc;
	}
	if (dtx_mono_ms() - t0 > c->dc_wait_ms) {
		/* Past the deadline the PREPARE announced: the decider may
		 * have aborted alone by now; never send it a COMMIT. */
		dtx_parts_call(c, 0, c->dc_nr, DTM_MSG_DECIDE, DTM_ABORTED, ms);
		snprintf(msg, msz, "the votes took %" PRIu64 " ms, longer than "
			 "the decision deadline (%u ms): aborted",
			 dtx_mono_ms() - t0, c->dc_wait_ms);
		return -ECANCELED;
	}
	dtx_clu_kill("dtx.cli.prepared");
	if (__atomic_load_n(&dtx_abandon_after_prepare, __ATOMIC_RELAXED)) {
		snprintf(msg, msz, "abandoned after the votes (benchmark)");
		return -ETIMEDOUT;
	}
	/* The decider first: its COMMITTED record is the commit point. */
	dtx_parts_call(c, 0, 1, DTM_MSG_DECIDE, DTM_COMMITTED, ms);
	if (c->dc_p[0].dp_rc == 0 && c->dc_p[0].dp_state == DTM_ABORTED) {
		dtx_parts_call(c, 1, c->dc_nr, DTM_MSG_DECIDE, DTM_ABORTED, ms);
		snprintf(msg, msz, "server %s aborted it (in doubt longer than "
			 "the termination timeout)",
			 cluster_server_name(dx->dx_cl, c->dc_p[0].dp_server));
		return -ECANCELED;
	}
	if (c->dc_p[0].dp_rc != 0 || c->dc_p[0].dp_state != DTM_COMMITTED) {
		snprintf(msg, msz, "outcome unknown (in doubt until the "
			 "participants resolve it; see strata dtx ls): %.150s",
			 c->dc_p[0].dp_msg);
		return -ETIMEDOUT;
	}
	dtx_clu_kill("dtx.cli.decide.partial");
	dtx_parts_call(c, 1, c->dc_nr, DTM_MSG_DECIDE, DTM_COMMITTED, ms);
	for (uint32_t i = 1; i < c->dc_nr; i++)
		if (c->dc_p[i].dp_rc != 0 ||
		    c->dc_p[i].dp_state != DTM_COMMITTED) {
			snprintf(msg, msz, "committed, but not yet applied on "
				 "every participant (it will be, when it "
				 "learns the outcome): %.150s", c->dc_p[i].dp_msg);
			return -EINPROGRESS;
		}
	return 0;
}

static void dtx_clu_submit(struct clovis_dtx *dx)
{
	struct eng_citem *cci = &dx->dx_cop->op_req.er_ci;
	char msg[LIM_ERRMSG_LEN] = "";
	struct dtx_clu c = {0};
	int rc = dx->dx_rc;
	uint64_t t0 = dtx_mono_ms();
	uint32_t ms = cluster_call_ms(dx->dx_cl);

	if (ms == 0 || ms > DTX_CLU_CALL_MS)
		ms = DTX_CLU_CALL_MS;
	if (rc != 0)
		snprintf(msg, sizeof msg, "%s", dx->dx_msg);
	for (uint32_t t = 0; rc == 0 && t < DTX_CLU_TRIES; t++) {
		struct dtx_part *stale;

		if (t > 0)
			dtm_id_make(&dx->dx_id, dtx_clu_node());
		rc = dtx_clu_build(dx, &c);
		if (rc != 0) {
			snprintf(msg, sizeof msg, "%s", err_msg());
			break;
		}
		rc = dtx_clu_attempt(dx, &c, &stale, msg, sizeof msg);
		if (rc == -ESTALE && t + 1 < DTX_CLU_TRIES &&
		    dtx_mono_ms() - t0 < ms) {
			uint32_t back = 50u * t;

			/* every index that participant orders (which one
			 * must verify is not known here), once each */
			for (size_t k = 0; k < stale->dp_nr; k++) {
				const struct eng_req *rk =
					&dx->dx_m[stale->dp_mi[k]].dm_op->op_req;
				bool seen = rk->er_keys == NULL;

				for (size_t j = 0; !seen && j < k; j++)
					seen = clovis_id_cmp(&rk->er_id,
						&dx->dx_m[stale->dp_mi[j]].
						dm_op->op_req.er_id) == 0;
				if (!seen)
					cluster_idx_touch(dx->dx_cl,
							  stale->dp_server, rk);
			}
			rc = 0;
			dtx_clu_fini(&c, dx->dx_nr);
			usleep(1000u * (back < DTX_CLU_BACKOFF_MAX_MS ? back :
					DTX_CLU_BACKOFF_MAX_MS));
			continue;
		}
		break;
	}
	dtx_clu_fini(&c, dx->dx_nr);
	if (rc == 0) {
		for (uint32_t i = 0; i < dx->dx_nr; i++) {
			struct eng_req *r = &dx->dx_m[i].dm_op->op_req;

			if (r->er_rcs != NULL && r->er_keys != NULL)
				memset(r->er_rcs, 0,
				       r->er_keys->bv_nr * sizeof *r->er_rcs);
			if (r->er_kind == ER_ENT_CREATE &&
			    r->er_type == CLOVIS_ET_OBJ &&
			    cluster_dtx_created(dx->dx_cl, r) != 0)
				LOG_WARNING("dtx %s: %s %s created, but its "
					    "attributes could not be read "
					    "back (open it again): %s",
					    dtx_str(dx),
					    dtx_type_name(r->er_type),
					    eng_id_str(&r->er_id), err_msg());
			if (r->er_ci.ci_executed != NULL)
				r->er_ci.ci_executed(&r->er_ci);
		}
		if (dx->dx_cop_executed != NULL)
			dx->dx_cop_executed(cci);
	} else {
		err_set(rc, "%s", msg);
		snprintf(cci->ci_msg, sizeof cci->ci_msg, "dtx %s: %.200s",
			 dtx_str(dx), msg);
	}
	dtx_finish(dx, rc, cci->ci_msg);
}

/* ============================================================ settle
 *
 * clovis_dtx_settle(): every server's LIST (in-doubt records first, then the
 * newest decided ones) is read until none holds a PREPARED record of a dtx
 * below the bound.  A server that answered clear once is not asked again:
 * a PREPARED record is durable before its YES, so a dtx below the bound that
 * can still commit had its record logged before the server's first answer
 * (a PREPARE logged later belongs to a dtx that can only abort, or to one
 * still being committed by a live coordinator, which was not in doubt).
 */

#define SETTLE_PAUSE_MIN_MS 20u
#define SETTLE_PAUSE_MAX_MS 500u

/* Entries asked for in one LIST.  Test builds: STRATA_TEST_DTX_LIST_LIMIT
 * makes it smaller (the "in doubt behind newer dtxs" reproducer). */
static uint32_t settle_list_limit(void)
{
	uint32_t limit = DTM_LIST_MAX;
#ifdef STRATA_FAULT_INJECT
	const char *e = getenv("STRATA_TEST_DTX_LIST_LIMIT");

	if (e != NULL && atoi(e) > 0 && (uint32_t)atoi(e) < limit)
		limit = (uint32_t)atoi(e);
#endif
	return limit;
}

/* One server's state during a settle. */
struct settle_srv {
	uint64_t ss_bound;  /* dtxs below this id are waited for (0: unset) */
	bool ss_clear;
	int ss_rc;          /* why not clear: a call failure or -ETIMEDOUT */
	char ss_msg[LIM_ERRMSG_LEN];
};

/* Ask server s once; 0 when it holds nothing below its bound. */
static int settle_ask(struct clovis *cl, uint32_t s, struct settle_srv *st,
		      uint64_t before, uint64_t start, uint32_t limit,
		      uint32_t ms)
{
	DtxReq q = DTX_REQ__INIT;
	DtxReply *rp = NULL;
	uint8_t *b = NULL;
	size_t bl = 0, rl = 0;
	void *rb = NULL;
	uint64_t prepared = 0, below = 0;
	const DtxInfo *old = NULL;
	int rc;

	q.kind = DTM_MSG_LIST;
	q.limit = limit;
	q.clock = dtm_hlc_now();
	rc = dtm_pack(&q.base, &b, &bl);
	if (rc == 0)
		rc = cluster_dtx_call(cl, s, DTM_OP, b, bl, NULL, 0, ms, &rb,
				      &rl);
	if (rc == 0)
		rc = dtm_reply_decode(rb, rl, &rp);
	free(rb);
	free(b);
	if (rc != 0) {
		snprintf(st->ss_msg, sizeof st->ss_msg, "server %s did not "
			 "answer the dtx LIST (%s): it may hold a dtx in doubt",
			 cluster_server_name(cl, s), err_msg());
		return st->ss_rc = rc;
	}
	dtm_hlc_observe(rp->clock);
	if (st->ss_bound == 0)
		st->ss_bound = before != 0 ? before
			       : (rp->clock > start ? rp->clock : start);
	for (size_t i = 0; i < rp->n_list; i++) {
		const DtxInfo *e = rp->list[i];

		if (e->state != DTM_PREPARED)
			continue;
		prepared++;
		if (e->hlc >= st->ss_bound)
			continue;
		below++;
		if (old == NULL || e->hlc < old->hlc)
			old = e;
	}
	if (old != NULL) {
		struct clovis_dtx_id id = {.di_hlc = old->hlc,
					   .di_node = old->node};
		char ids[DTM_ID_STR_LEN];
		uint64_t now = dtm_hlc_us(dtm_hlc_now());

		snprintf(st->ss_msg, sizeof st->ss_msg, "server %s holds %" PRIu64
			 " dtx(s) in doubt, the oldest %s (PREPARED %" PRIu64
			 " ms ago, %u participants)", cluster_server_name(cl, s),
			 below, dtm_id_format(&id, ids),
			 now > old->time_us ? (now - old->time_us) / 1000 : 0,
			 (unsigned)old->n_parts);
		rc = -ETIMEDOUT;
	} else if (rp->n_list >= limit && prepared < rp->in_doubt) {
		snprintf(st->ss_msg, sizeof st->ss_msg, "server %s holds %"
			 PRIu64 " dtxs in doubt, more than one LIST shows (%u)",
			 cluster_server_name(cl, s), rp->in_doubt, limit);
		rc = -ETIMEDOUT;
	}
	dtx_reply__free_unpacked(rp, NULL);
	st->ss_rc = rc;
	st->ss_clear = rc == 0;
	return rc;
}

int clovis_dtx_settle(struct clovis *cl, uint64_t before, uint32_t timeout_ms)
{
	uint64_t t0 = dtx_mono_ms(), start, pause = SETTLE_PAUSE_MIN_MS;
	uint32_t n, limit = settle_list_limit(), call_ms;
	struct settle_srv *st;
	int rc = 0;

	if (cl == NULL)
		return err_set(-EINVAL, "dtx settle: NULL client");
	if (cl->cl_eng != NULL)
		return 0; /* embedded: a dtx is one local commit */
	n = cluster_nr_servers(cl);
	call_ms = cluster_call_ms(cl);
	st = calloc(n, sizeof *st);
	if (st == NULL)
		return err_set(-ENOMEM, "dtx settle: %u servers", n);
	start = dtm_hlc_now();
	for (;;) {
		uint64_t el = dtx_mono_ms() - t0;
		uint32_t left = el >= timeout_ms ? 0 : timeout_ms - (uint32_t)el;
		bool clear = true;

		for (uint32_t s = 0; s < n; s++) {
			uint32_t ms = call_ms;

			if (st[s].ss_clear)
				continue;
			/* the last round still asks with a short timeout */
			if (left < ms)
				ms = left > 100 ? left : 100;
			if (settle_ask(cl, s, &st[s], before, start, limit,
				       ms) != 0)
				clear = false;
		}
		if (clear)
			break;
		el = dtx_mono_ms() - t0;
		if (el >= timeout_ms) {
			for (uint32_t s = 0; s < n; s++)
				if (!st[s].ss_clear) {
					rc = err_set(st[s].ss_rc, "dtx settle: "
						     "not settled in %u ms: %s",
						     timeout_ms,
						     st[s].ss_msg);
					break;
				}
			break;
		}
		if (pause > timeout_ms - el)
			pause = timeout_ms - el;
		usleep((useconds_t)pause * 1000u);
		pause = pause * 2 > SETTLE_PAUSE_MAX_MS ? SETTLE_PAUSE_MAX_MS
							: pause * 2;
	}
	free(st);
	return rc;
}
