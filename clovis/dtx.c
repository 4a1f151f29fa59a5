/*
 * dtx.c — distributed transactions, the Clovis API (clovis.h "Distributed
 * transactions"; protocol in dtm/README.md).  In cluster mode the
 * coordinator is dtm's client half (dtm/cli_dtx.c, dtm_cli.h): this file
 * hands it the members' requests (dtx_clu_submit).
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
#include <time.h>
#include <unistd.h>

#include "addb/addb.h"
#include "clovis/clovis_internal.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/fdmi_log.h"
#include "core/log.h"
#include "core/meta_txn.h"
#include "layouts/stripe.h"
#include "dtm/dtm.h"
#include "dtm/dtm_cli.h"
#include "dtm/dtm_loc.h"
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
	struct st_dtx_id dx_id;
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
	*out = *clovis_of(&dx->dx_id);
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

	addb_add(ADDB_DTX, rc == 0 ? ADDB_DTX_COMMITTED : ADDB_DTX_FAILED, 1);
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

static struct eng_citem *dtx_member_ci(void *arg, uint32_t i)
{
	return member_ci(&((struct clovis_dtx *)arg)->dx_m[i]);
}

/* Group commit: every member in one nested transaction (dtm/loc_dtx.c). */
static int dtx_apply(struct eng *e, MDB_txn *txn, struct eng_citem *ci)
{
	struct clovis_dtx *dx = ((struct clovis_op *)ci)->op_dtx;
	int rc;

	/* the members' FDMI records carry the dtx's id, and one more
	 * record says it committed here (core/fdmi_log.h) */
	eng_fdmi_dtx_set(&dx->dx_id);
	rc = dtm_loc_apply(e, txn, ci, dtx_member_ci, dx, dx->dx_nr,
			   dtx_str(dx), &dx->dx_bad);
	if (rc == 0 && eng_fdmi_on(e)) {
		struct fdmi_rec fr = {0};

		fr.fr_op = FDMI_DTX_COMMIT;
		fr.fr_size = dx->dx_nr;
		rc = eng_fdmi_emit(e, txn, &fr, NULL);
		ci->ci_hard = rc != 0;
	}
	eng_fdmi_dtx_set(NULL);
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
	addb_add(ADDB_DTX, ADDB_DTX_ABORTED, 1);
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
 * The protocol is dtm's client half (dtm/cli_dtx.c, dtm_cli.h): here the
 * members' requests are handed to it with this client's cluster transport,
 * on the worker thread of the last member to run, and its outcome passed
 * to the members and the commit op.
 */

/* Benchmarks (tests/bench/bench_dtx.c --cluster): behave as a client that
 * dies after all votes (dtx.cli.prepared) without dying: no DECIDE is
 * sent and the commit op fails with -ETIMEDOUT.  Off by default. */
bool dtx_abandon_after_prepare;

static int dtx_co_call(void *arg, uint32_t server, const void *body,
		       size_t len, const void *bulk, size_t bulk_len,
		       uint32_t ms, void **rbody, size_t *rlen)
{
	return cluster_dtx_call(arg, server, DTM_OP, body, len, bulk,
				bulk_len, ms, rbody, rlen);
}

static const char *dtx_co_server_name(void *arg, uint32_t s)
{
	return cluster_server_name(arg, s);
}

static uint32_t dtx_co_call_ms(void *arg)
{
	return cluster_call_ms(arg);
}

static uint32_t dtx_co_nr_servers(void *arg)
{
	return cluster_nr_servers(arg);
}

static int dtx_co_member(void *arg, const struct eng_req *r,
			 uint32_t *server, uint32_t *nsrv, uint32_t *sop,
			 uint8_t **body, size_t *len)
{
	return cluster_dtx_member(arg, r, server, nsrv, sop, body, len);
}

static void dtx_co_idx_touch(void *arg, uint32_t server,
			     const struct eng_req *r)
{
	cluster_idx_touch(arg, server, r);
}

static const struct dtm_cli_ops dtx_co_ops = {
	.co_call = dtx_co_call,
	.co_server_name = dtx_co_server_name,
	.co_call_ms = dtx_co_call_ms,
	.co_nr_servers = dtx_co_nr_servers,
	.co_member = dtx_co_member,
	.co_idx_touch = dtx_co_idx_touch,
};

/* The coordinator of cluster client cl. */
static struct dtm_cli dtx_co(struct clovis *cl)
{
	return (struct dtm_cli){.dc_ops = &dtx_co_ops, .dc_arg = cl,
				.dc_node = dtx_clu_node(),
				.dc_abandon = &dtx_abandon_after_prepare};
}

static void dtx_clu_submit(struct clovis_dtx *dx)
{
	struct eng_citem *cci = &dx->dx_cop->op_req.er_ci;
	char msg[LIM_ERRMSG_LEN] = "";
	struct eng_req **m = NULL;
	struct dtm_cli co = dtx_co(dx->dx_cl);
	int rc = dx->dx_rc;

	if (rc != 0)
		snprintf(msg, sizeof msg, "%s", dx->dx_msg);
	if (rc == 0) {
		m = calloc(dx->dx_nr, sizeof *m);
		if (m == NULL)
			rc = err_set(-ENOMEM, "dtx %s: members", dtx_str(dx));
		if (m == NULL)
			snprintf(msg, sizeof msg, "%s", err_msg());
	}
	for (uint32_t i = 0; m != NULL && i < dx->dx_nr; i++)
		m[i] = &dx->dx_m[i].dm_op->op_req;
	if (rc == 0)
		rc = dtm_cli_commit(&co, &dx->dx_id, m, dx->dx_nr, &dx->dx_bad,
				    msg, sizeof msg);
	free(m);
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


/* The settle fence is dtm's (dtm_cli_settle); embedded mode has nothing
 * to wait for (a dtx is one local commit). */
int clovis_dtx_settle(struct clovis *cl, uint64_t before, uint32_t timeout_ms)
{
	struct dtm_cli co;

	if (cl == NULL)
		return err_set(-EINVAL, "dtx settle: NULL client");
	if (cl->cl_eng != NULL)
		return 0; /* embedded: a dtx is one local commit */
	co = dtx_co(cl);
	return dtm_cli_settle(&co, before, timeout_ms);
}
