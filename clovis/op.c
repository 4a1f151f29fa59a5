/*
 * op.c — the op state machine and the worker threads that run ops.
 *
 *   clovis_op_launch()  INIT -> LAUNCHED, onto the work queue (a metadata
 *                       read without callbacks on an embedded instance,
 *                       alone or in an array, runs right here instead, through
 *                       cl_exec, and is STABLE or FAILED on return:
 *                       op_runs_inline, op_run_inline)
 *   worker thread       eng_exec(): reads finish there; updates do their data
 *                       I/O and go to the group committer
 *   op_complete()       EXECUTED -> STABLE (or FAILED), callbacks, waiters
 *
 * An op is "busy" from launch until op_complete() has finished touching it;
 * clovis_op_free() waits for that, so a caller that frees an op right after
 * its STABLE callback or wait never races with the library.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clovis/clovis_internal.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/stripe.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define OP_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define OP_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define OP_POISON(p, n) ((void)(p), (void)(n))
#define OP_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/*
 * Freed ops kept per instance for reuse: an op is about 1 KiB with a mutex
 * and a condition variable, and allocating, zeroing, initialising and
 * destroying them cost about as much as an index GET.  A cached op keeps
 * its lock and condition variable initialised (no thread waits on them:
 * clovis_op_free() waited for the library to finish with the op); the
 * rest is zeroed when it is reused.  Under AddressSanitizer the whole op
 * but its cache link is poisoned while cached, so a use after
 * clovis_op_free() is still reported.
 */
#define OP_CACHE_MAX 64u
#define OP_CACHED_LEN offsetof(struct clovis_op, op_cnext)

uint64_t op_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool op_valid(const struct clovis_op *op)
{
	return op != NULL && op->op_magic == CLOVIS_OP_MAGIC;
}

/* Link op into the instance's list of live ops; cl_olock held. */
static void op_link(struct clovis *cl, struct clovis_op *op)
{
	op->op_next = cl->cl_ops;
	if (cl->cl_ops != NULL)
		cl->cl_ops->op_prev = op;
	cl->cl_ops = op;
}

/* Unlink op from the live ops; cl_olock held. */
static void op_unlink(struct clovis *cl, struct clovis_op *op)
{
	if (op->op_prev != NULL)
		op->op_prev->op_next = op->op_next;
	else
		cl->cl_ops = op->op_next;
	if (op->op_next != NULL)
		op->op_next->op_prev = op->op_prev;
}

/* A new op: from the cache (zeroed but for its lock and condition
 * variable), else allocated and initialised; linked into the live ops. */
static struct clovis_op *op_get(struct clovis *cl)
{
	struct clovis_op *op;
	pthread_condattr_t ca;

	pthread_mutex_lock(&cl->cl_olock);
	op = cl->cl_ofree;
	if (op != NULL) {
		cl->cl_ofree = op->op_cnext;
		cl->cl_nr_ofree--;
		OP_UNPOISON(op, OP_CACHED_LEN);
		memset(op, 0, offsetof(struct clovis_op, op_lock));
		op->op_cnext = NULL;
		op_link(cl, op);
	}
	pthread_mutex_unlock(&cl->cl_olock);
	if (op != NULL)
		return op;
	op = calloc(1, sizeof *op);
	if (op == NULL)
		return NULL;
	pthread_mutex_init(&op->op_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&op->op_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_lock(&cl->cl_olock);
	op_link(cl, op);
	pthread_mutex_unlock(&cl->cl_olock);
	return op;
}

/* Destroy and free an op that is in no list. */
static void op_destroy(struct clovis_op *op)
{
	pthread_mutex_destroy(&op->op_lock);
	pthread_cond_destroy(&op->op_cond);
	free(op);
}

/* Unlink a finished op and keep it in the cache, or destroy it when the
 * cache is full.  Its resources are released and op_magic is 0. */
static void op_put(struct clovis *cl, struct clovis_op *op)
{
	bool cached = false;

	pthread_mutex_lock(&cl->cl_olock);
	op_unlink(cl, op);
	if (cl->cl_nr_ofree < OP_CACHE_MAX) {
		op->op_cnext = cl->cl_ofree;
		cl->cl_ofree = op;
		cl->cl_nr_ofree++;
		OP_POISON(op, OP_CACHED_LEN);
		cached = true;
	}
	pthread_mutex_unlock(&cl->cl_olock);
	if (!cached)
		op_destroy(op);
}

/* Free every cached op (clovis_fini, no op live). */
static void op_cache_empty(struct clovis *cl)
{
	struct clovis_op *op;

	pthread_mutex_lock(&cl->cl_olock);
	while ((op = cl->cl_ofree) != NULL) {
		cl->cl_ofree = op->op_cnext;
		cl->cl_nr_ofree--;
		OP_UNPOISON(op, OP_CACHED_LEN);
		op_destroy(op);
	}
	pthread_mutex_unlock(&cl->cl_olock);
}

static void op_committed(struct eng_citem *ci, int rc);
static void op_visible(struct eng_citem *ci);

int op_alloc(struct clovis_entity *e, uint32_t kind, uint32_t stat,
	     struct clovis_op **out)
{
	struct clovis_op *op = op_get(e->en_cl);

	if (op == NULL)
		return err_set(-ENOMEM, "op allocation");
	op->op_magic = CLOVIS_OP_MAGIC;
	op->op_state = CLOVIS_OS_INIT;
	op->op_stat = stat;
	op->op_cl = e->en_cl;
	op->op_entity = e;
	op->op_req.er_kind = kind;
	op->op_req.er_type = e->en_type;
	op->op_req.er_id = e->en_id;
	op->op_req.er_ci.ci_done = op_committed;
	op->op_req.er_ci.ci_executed = op_visible;
	*out = op;
	return 0;
}

/* Copy the outcome of an entity op into the caller's handle. */
static void op_entity_update(struct clovis_op *op)
{
	struct clovis_entity *e = op->op_entity;
	const struct meta_ent *me = &op->op_req.er_ent;
	uint32_t kind = op->op_req.er_kind;

	if (kind < ER_ENT_CREATE)
		return;
	e->en_state = kind == ER_ENT_DELETE ? CLOVIS_ES_DELETED : CLOVIS_ES_OPEN;
	if (kind == ER_ENT_DELETE)
		return;
	if (e->en_type == CLOVIS_ET_OBJ) {
		struct clovis_obj_attr *a = &((struct clovis_obj *)e)->ob_attr;

		a->oa_block_shift = me->me_block_shift;
		a->oa_layout = me->me_layout;
		a->oa_tier = me->me_tier;
		a->oa_dev = me->me_dev;
		a->oa_pool = me->me_pool;
		a->oa_data_units = me->me_n;
		a->oa_parity_units = me->me_k;
		a->oa_spare_units = me->me_s;
		a->oa_unit_shift = me->me_unit_shift;
		a->oa_size_blocks = me->me_size_blocks;
		a->oa_size_bytes = me->me_size_bytes;
		a->oa_ctime_ns = me->me_ctime_ns;
		a->oa_mtime_ns = me->me_mtime_ns;
	} else if (e->en_type == CLOVIS_ET_IDX) {
		struct clovis_idx_attr *a = &((struct clovis_idx *)e)->in_attr;

		a->ia_nr_records = me->me_nr_records;
		a->ia_ctime_ns = me->me_ctime_ns;
	}
}

static void op_set_state(struct clovis_op *op, uint32_t state)
{
	pthread_mutex_lock(&op->op_lock);
	op->op_state = state;
	pthread_cond_broadcast(&op->op_cond);
	pthread_mutex_unlock(&op->op_lock);
}

/* The op's effect is visible: handle attributes, EXECUTED, callback. */
static void op_executed(struct clovis_op *op)
{
	op_entity_update(op);
	op_set_state(op, CLOVIS_OS_EXECUTED);
	if (op->op_cbs.oc_executed != NULL)
		op->op_cbs.oc_executed(op);
}

/* The end of an op's run: results, states, callbacks, waiters. */
static void op_complete(struct clovis_op *op, int rc, const char *msg)
{
	struct clovis *cl = op->op_cl;
	uint64_t lat_us = (op_now_ns() - op->op_launch_ns) / 1000;
	bool executed;

	if (op->op_stat < CLOVIS_STAT_NR) /* dtx commit ops: not counted */
		stats_record(&cl->cl_stats, op->op_stat, lat_us,
			     op->op_req.er_bytes, rc != 0);
	if (rc != 0) {
		snprintf(op->op_msg, sizeof op->op_msg, "%s", msg);
		op->op_rc = rc;
		op_set_state(op, CLOVIS_OS_FAILED);
		if (op->op_cbs.oc_failed != NULL)
			op->op_cbs.oc_failed(op);
	} else {
		pthread_mutex_lock(&op->op_lock);
		executed = op->op_state == CLOVIS_OS_EXECUTED;
		pthread_mutex_unlock(&op->op_lock);
		if (!executed)
			op_executed(op);
		op_set_state(op, CLOVIS_OS_STABLE);
		if (op->op_cbs.oc_stable != NULL)
			op->op_cbs.oc_stable(op);
	}
	pthread_mutex_lock(&cl->cl_olock);
	pthread_mutex_lock(&op->op_lock);
	op->op_busy = false;
	pthread_cond_broadcast(&op->op_cond);
	pthread_mutex_unlock(&op->op_lock);
	if (--cl->cl_inflight == 0)
		pthread_cond_broadcast(&cl->cl_oidle);
	pthread_mutex_unlock(&cl->cl_olock);
}

/* Committer callback: the update is visible. */
static void op_visible(struct eng_citem *ci)
{
	op_executed((struct clovis_op *)ci);
}

/* Committer callback: the update is durable, or failed. */
static void op_committed(struct eng_citem *ci, int rc)
{
	struct clovis_op *op = (struct clovis_op *)ci;

	op_complete(op, rc, ci->ci_msg);
}

/* ------------------------------------------------------------ workers */

static struct clovis_op *queue_take(struct clovis *cl)
{
	struct clovis_op *op;

	pthread_mutex_lock(&cl->cl_qlock);
	while (cl->cl_qhead == NULL && !cl->cl_stop)
		pthread_cond_wait(&cl->cl_qcond, &cl->cl_qlock);
	op = cl->cl_qhead;
	if (op != NULL) {
		cl->cl_qhead = op->op_qnext;
		if (cl->cl_qhead == NULL)
			cl->cl_qtail = NULL;
	}
	pthread_mutex_unlock(&cl->cl_qlock);
	return op;
}

/* The embedded backend: the request runs on this node's engine. */
int exec_embedded(struct clovis *cl, struct eng_req *r)
{
	return eng_exec(cl->cl_eng, r);
}

static void *worker_main(void *arg)
{
	struct clovis *cl = arg;
	struct clovis_op *op;

	eng_thread_enter();
	while ((op = queue_take(cl)) != NULL) {
		int rc;

		err_clear();
		rc = op->op_run != NULL ? op->op_run(op) :
		     cl->cl_exec(cl, &op->op_req);
		if (rc != ENG_PENDING)
			op_complete(op, rc, err_msg());
	}
	eng_thread_leave();
	return NULL;
}

int workers_start(struct clovis *cl, uint32_t nr)
{
	cl->cl_workers = calloc(nr, sizeof(pthread_t));
	if (cl->cl_workers == NULL)
		return err_set(-ENOMEM, "worker table");
	for (uint32_t i = 0; i < nr; i++) {
		int rc = pthread_create(&cl->cl_workers[i], NULL, worker_main, cl);

		if (rc != 0)
			return err_set(-rc, "worker thread: %s", strerror(rc));
		cl->cl_nr_workers = i + 1;
	}
	return 0;
}

void workers_stop(struct clovis *cl)
{
	pthread_mutex_lock(&cl->cl_qlock);
	cl->cl_stop = true;
	pthread_cond_broadcast(&cl->cl_qcond);
	pthread_mutex_unlock(&cl->cl_qlock);
	for (uint32_t i = 0; i < cl->cl_nr_workers; i++)
		pthread_join(cl->cl_workers[i], NULL);
	free(cl->cl_workers);
	cl->cl_workers = NULL;
	cl->cl_nr_workers = 0;
}

/* Wait for every launched op, then free every op still allocated. */
void ops_drain_and_free(struct clovis *cl)
{
	pthread_mutex_lock(&cl->cl_olock);
	while (cl->cl_inflight > 0)
		pthread_cond_wait(&cl->cl_oidle, &cl->cl_olock);
	pthread_mutex_unlock(&cl->cl_olock);
	while (cl->cl_ops != NULL)
		clovis_op_free(cl->cl_ops);
	op_cache_empty(cl);
}

/* ------------------------------------------------------------ public */

int clovis_op_setup(struct clovis_op *op, const struct clovis_op_cbs *cbs,
		    void *datum)
{
	int rc = 0;

	if (!op_valid(op))
		return err_set(-EINVAL, "op_setup: not an op");
	pthread_mutex_lock(&op->op_lock);
	if (op->op_state != CLOVIS_OS_INIT) {
		rc = err_set(-CLOVIS_ESTATE, "op_setup: op already launched");
	} else {
		if (cbs != NULL)
			op->op_cbs = *cbs;
		op->op_datum = datum;
	}
	pthread_mutex_unlock(&op->op_lock);
	return rc;
}

void *clovis_op_datum(const struct clovis_op *op)
{
	return op_valid(op) ? op->op_datum : NULL;
}

/* Mark one op launched; 0 or an error if it cannot be. */
static int op_launch_one(struct clovis_op *op)
{
	int rc = 0;

	if (!op_valid(op))
		return err_set(-EINVAL, "op_launch: not an op");
	pthread_mutex_lock(&op->op_lock);
	if (op->op_state != CLOVIS_OS_INIT || op->op_busy) {
		rc = err_set(-CLOVIS_ESTATE, "op_launch: op is not in INIT "
			     "state");
	} else {
		op->op_state = CLOVIS_OS_LAUNCHED;
		op->op_busy = true;
		op->op_launch_ns = op_now_ns();
	}
	pthread_mutex_unlock(&op->op_lock);
	return rc;
}

/*
 * Does op run inline, in the launching thread?  Only a metadata-only read
 * (index GET and NEXT, entity OPEN and GETATTR: an LMDB lookup of a few
 * microseconds, no device I/O, no lock another thread holds for long), on
 * an embedded instance, without callbacks; alone or in an array (then
 * after the array's other ops are queued).  Queueing it to a worker and
 * waking the waiter costs several times the lookup itself (strata_bench
 * idx_*_qd16_r1_array: arrays of 16 GETs through the workers ran at a
 * tenth of the rate of the same GETs run inline by the launching thread).
 * Without callbacks nothing tells the caller which thread ran the op; with
 * them it goes to a worker, as clovis.h promises.
 */
static bool op_runs_inline(const struct clovis_op *op)
{
	uint32_t kind = op->op_req.er_kind;

	return op->op_cl->cl_eng != NULL && op->op_run == NULL &&
	       op->op_cbs.oc_executed == NULL && op->op_cbs.oc_stable == NULL &&
	       op->op_cbs.oc_failed == NULL &&
	       (kind == ER_IDX_GET || kind == ER_IDX_NEXT ||
		kind == ER_ENT_OPEN || kind == ER_ENT_GETATTR);
}

/*
 * Launch op and run it here, through the backend hook as a worker would,
 * to STABLE or FAILED.  No callback is set and no other thread may use the
 * op while it is being launched (clovis.h), so the whole run happens under
 * one hold of the op's lock (a clovis_op_state() from another thread waits
 * for the outcome; EXECUTED is passed within it), and the op is not
 * counted in cl_inflight: it is finished before launch returns.  The
 * thread's own message (clovis_errmsg) is kept.  0, or an error when the
 * op cannot be launched.
 */
static int op_run_inline(struct clovis *cl, struct clovis_op *op)
{
	char saved[LIM_ERRMSG_LEN];
	size_t len;
	int rc;

	pthread_mutex_lock(&op->op_lock);
	if (op->op_state != CLOVIS_OS_INIT || op->op_busy) {
		pthread_mutex_unlock(&op->op_lock);
		return err_set(-CLOVIS_ESTATE, "op_launch: op is not in INIT "
			       "state");
	}
	op->op_launch_ns = op_now_ns();
	len = strlen(err_msg());
	if (len != 0)
		memcpy(saved, err_msg(), len + 1);
	err_clear();
	rc = cl->cl_exec(cl, &op->op_req);
	ASSERT(rc != ENG_PENDING);
	stats_record(&cl->cl_stats, op->op_stat,
		     (op_now_ns() - op->op_launch_ns) / 1000,
		     op->op_req.er_bytes, rc != 0);
	if (rc == 0) {
		op_entity_update(op);
	} else {
		snprintf(op->op_msg, sizeof op->op_msg, "%s", err_msg());
		op->op_rc = rc;
	}
	op->op_state = rc != 0 ? CLOVIS_OS_FAILED : CLOVIS_OS_STABLE;
	pthread_cond_broadcast(&op->op_cond);
	pthread_mutex_unlock(&op->op_lock);
	if (len != 0)
		err_set(rc, "%s", saved);
	else if (err_msg()[0] != '\0')
		err_clear();
	return 0;
}

/* Queue a launched op for the workers. */
static void op_queue(struct clovis *cl, struct clovis_op *op)
{
	pthread_mutex_lock(&cl->cl_olock);
	cl->cl_inflight++;
	pthread_mutex_unlock(&cl->cl_olock);
	pthread_mutex_lock(&cl->cl_qlock);
	op->op_qnext = NULL;
	if (cl->cl_qtail != NULL)
		cl->cl_qtail->op_qnext = op;
	else
		cl->cl_qhead = op;
	cl->cl_qtail = op;
	pthread_cond_signal(&cl->cl_qcond);
	pthread_mutex_unlock(&cl->cl_qlock);
}

/*
 * Ops for the workers are queued first, then the inline ones run here in
 * array order, so that the queued ones proceed meanwhile.
 */
int clovis_op_launch(struct clovis_op **ops, uint32_t nr)
{
	uint32_t nr_inline = 0;
	int ret = 0, rc;

	if (ops == NULL)
		return err_set(-EINVAL, "op_launch: ops is NULL");
	for (uint32_t i = 0; i < nr; i++) {
		struct clovis_op *op = ops[i];

		if (op_valid(op) && op_runs_inline(op)) {
			nr_inline++;
			continue;
		}
		rc = op_launch_one(op);
		if (rc != 0) {
			ret = ret ? ret : rc;
			continue;
		}
		op_queue(op->op_cl, op);
	}
	for (uint32_t i = 0; nr_inline > 0 && i < nr; i++) {
		struct clovis_op *op = ops[i];

		if (!op_valid(op) || !op_runs_inline(op))
			continue;
		nr_inline--;
		rc = op_run_inline(op->op_cl, op);
		ret = ret ? ret : rc;
	}
	return ret;
}

/* Has op reached a state in mask?  EXECUTED also counts when STABLE. */
static bool op_reached(const struct clovis_op *op, uint32_t mask)
{
	uint32_t st = op->op_state;

	if ((mask & CLOVIS_OS_EXECUTED) && st == CLOVIS_OS_STABLE)
		return true;
	return (st & mask) != 0;
}

int clovis_op_wait(struct clovis_op *op, uint32_t states, int64_t timeout_ns)
{
	struct timespec dl;
	int rc = 0;

	if (!op_valid(op) || states == 0 || (states & ~0x1fu) != 0)
		return err_set(-EINVAL, "op_wait: %s", op_valid(op) ?
			       "bad state mask" : "not an op");
	if (timeout_ns != CLOVIS_TIME_NEVER) {
		uint64_t t = op_now_ns() + (uint64_t)(timeout_ns > 0 ? timeout_ns : 0);

		dl.tv_sec = (time_t)(t / 1000000000ull);
		dl.tv_nsec = (long)(t % 1000000000ull);
	}
	pthread_mutex_lock(&op->op_lock);
	while (rc == 0 && !op_reached(op, states | CLOVIS_OS_FAILED)) {
		if (timeout_ns == CLOVIS_TIME_NEVER)
			pthread_cond_wait(&op->op_cond, &op->op_lock);
		else if (pthread_cond_timedwait(&op->op_cond, &op->op_lock,
						&dl) == ETIMEDOUT)
			rc = -ETIMEDOUT;
	}
	if (rc == 0 && op->op_state == CLOVIS_OS_FAILED &&
	    !(states & CLOVIS_OS_FAILED))
		rc = op->op_rc;
	pthread_mutex_unlock(&op->op_lock);
	return rc;
}

enum clovis_op_state clovis_op_state(const struct clovis_op *op)
{
	enum clovis_op_state st;

	if (!op_valid(op))
		return CLOVIS_OS_FAILED;
	pthread_mutex_lock((pthread_mutex_t *)&op->op_lock);
	st = op->op_state;
	pthread_mutex_unlock((pthread_mutex_t *)&op->op_lock);
	return st;
}

int clovis_op_rc(const struct clovis_op *op)
{
	int rc;

	if (!op_valid(op))
		return -EINVAL;
	pthread_mutex_lock((pthread_mutex_t *)&op->op_lock);
	rc = op->op_rc;
	pthread_mutex_unlock((pthread_mutex_t *)&op->op_lock);
	return rc;
}

const char *clovis_op_errmsg(const struct clovis_op *op)
{
	return op_valid(op) ? op->op_msg : "not an op";
}

void clovis_op_free(struct clovis_op *op)
{
	if (!op_valid(op))
		return;
	pthread_mutex_lock(&op->op_lock);
	while (op->op_busy)
		pthread_cond_wait(&op->op_cond, &op->op_lock);
	pthread_mutex_unlock(&op->op_lock);
	if (op->op_dtx != NULL)
		dtx_op_free(op);
	eng_spacevec_fini(&op->op_req.er_ci.ci_alloc);
	eng_spacevec_fini(&op->op_req.er_ci.ci_freed);
	stripe_req_fini(&op->op_req);
	op->op_magic = 0;
	op_put(op->op_cl, op);
}

int clovis_op_sync(struct clovis_op *op)
{
	int rc = clovis_op_launch(&op, 1);

	if (rc == 0)
		rc = clovis_op_wait(op, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (rc < 0 && op_valid(op) &&
	    op->op_state == CLOVIS_OS_FAILED)
		err_set(rc, "%s", op->op_msg); /* the op goes; keep its reason */
	clovis_op_free(op);
	return rc;
}
