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

#include "addb/addb.h"
#include "clovis/clovis_internal.h"
#include "clovis/clovis_limits.h"
#include "core/errors.h"
#include "core/log.h"
#include "layouts/stripe.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define OP_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define OP_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define OP_POISON(p, n) ((void)(p), (void)(n))
#define OP_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/*
 * Freed ops kept for reuse: an op is about 1 KiB with a mutex and a
 * condition variable, and allocating, zeroing, initialising and destroying
 * them cost about as much as an index GET.  A cached op keeps its lock and
 * condition variable initialised (no thread waits on them:
 * clovis_op_free() waited for the library to finish with the op); the
 * rest is zeroed when it is reused.  Under AddressSanitizer the whole op
 * but its tail of links is poisoned while cached, so a use after
 * clovis_op_free() is still reported.
 *
 * Ownership.  The instance's list cl_all (under cl_olock) holds every op
 * allocated for it, live or cached, and only it owns their memory: an op
 * is destroyed after being unlinked from it (a cache overflowing) or by
 * clovis_fini(), which destroys each op of the list once.  Caches only
 * refer to ops of the list:
 *
 *   per thread   struct op_tcache, up to OP_TCACHE_MAX ops, used by its
 *                thread alone without a lock: clovis_op_free() puts there,
 *                op_alloc() takes from there.  It is registered with the
 *                instance (cl_tcaches, under op_tlock and cl_olock) at the
 *                thread's first free, and detached once, by whichever
 *                comes first: the thread's exit (a pthread key destructor
 *                hands its ops to the instance's cache) or clovis_fini()
 *                (which drops the references, the ops staying on cl_all).
 *   instance     cl_ofree, up to OP_CACHE_MAX, under cl_olock.
 *
 * So an op launched, run inline and freed by one thread takes no shared
 * lock at all.
 */
#define OP_CACHED_LEN offsetof(struct clovis_op, op_cnext)

struct op_tcache {
	struct clovis *tc_cl;    /* relaxed atomic; NULL: free */
	struct clovis_op *tc_free;
	uint32_t tc_nr;
	struct op_tcache *tc_prev, *tc_next; /* cl_tcaches */
};

struct op_tls {
	struct op_tcache t_c[OP_TLS_INSTANCES];
};

static pthread_mutex_t op_tlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t op_tonce = PTHREAD_ONCE_INIT;
static pthread_key_t op_tkey;
static bool op_tkey_ok;
static __thread struct op_tls *t_ops;

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

/* Link a new op into cl_all; cl_olock held. */
static void op_link(struct clovis *cl, struct clovis_op *op)
{
	op->op_aprev = NULL;
	op->op_anext = cl->cl_all;
	if (cl->cl_all != NULL)
		cl->cl_all->op_aprev = op;
	cl->cl_all = op;
}

/* Unlink op from cl_all before destroying it; cl_olock held. */
static void op_unlink(struct clovis *cl, struct clovis_op *op)
{
	if (op->op_aprev != NULL)
		op->op_aprev->op_anext = op->op_anext;
	else
		cl->cl_all = op->op_anext;
	if (op->op_anext != NULL)
		op->op_anext->op_aprev = op->op_aprev;
}

/* Destroy and free an op that is in no list. */
static void op_destroy(struct clovis_op *op)
{
	OP_UNPOISON(op, OP_CACHED_LEN);
	pthread_mutex_destroy(&op->op_lock);
	pthread_cond_destroy(&op->op_cond);
	free(op);
}

/* The calling thread's cache for cl, or NULL. */
static struct op_tcache *tcache_find(struct clovis *cl)
{
	struct op_tls *tl = t_ops;

	if (tl == NULL)
		return NULL;
	for (uint32_t i = 0; i < OP_TLS_INSTANCES; i++)
		if (__atomic_load_n(&tl->t_c[i].tc_cl, __ATOMIC_RELAXED) == cl)
			return &tl->t_c[i];
	return NULL;
}

/*
 * Hand the ops of tc to its instance and unlink it; op_tlock and the
 * instance's cl_olock held.  The instance's cache takes them up to
 * OP_CACHE_MAX (without limit once it is closing); the rest are unlinked
 * from cl_all and put on *doomed for op_destroy() after the locks.
 */
static void tcache_detach(struct op_tcache *tc, struct clovis_op **doomed)
{
	struct clovis *cl = tc->tc_cl;
	struct clovis_op *op;

	while ((op = tc->tc_free) != NULL) {
		tc->tc_free = op->op_cnext;
		if (cl->cl_closing || cl->cl_nr_ofree < OP_CACHE_MAX) {
			op->op_cnext = cl->cl_ofree;
			cl->cl_ofree = op;
			cl->cl_nr_ofree++;
		} else {
			op_unlink(cl, op);
			op->op_cnext = *doomed;
			*doomed = op;
		}
	}
	tc->tc_nr = 0;
	if (tc->tc_prev != NULL)
		tc->tc_prev->tc_next = tc->tc_next;
	else
		cl->cl_tcaches = tc->tc_next;
	if (tc->tc_next != NULL)
		tc->tc_next->tc_prev = tc->tc_prev;
	tc->tc_prev = tc->tc_next = NULL;
	__atomic_store_n(&tc->tc_cl, NULL, __ATOMIC_RELAXED);
}

static void op_destroy_list(struct clovis_op *op)
{
	while (op != NULL) {
		struct clovis_op *next = op->op_cnext;

		op_destroy(op);
		op = next;
	}
}

/* Key destructor: the thread exits; its caches go back to their
 * instances. */
static void op_tls_exit(void *arg)
{
	struct op_tls *tl = arg;
	struct clovis_op *doomed = NULL;

	pthread_mutex_lock(&op_tlock);
	for (uint32_t i = 0; i < OP_TLS_INSTANCES; i++) {
		struct op_tcache *tc = &tl->t_c[i];
		struct clovis *cl = tc->tc_cl;

		if (cl == NULL)
			continue;
		pthread_mutex_lock(&cl->cl_olock);
		tcache_detach(tc, &doomed);
		pthread_mutex_unlock(&cl->cl_olock);
	}
	pthread_mutex_unlock(&op_tlock);
	op_destroy_list(doomed);
	if (t_ops == tl)
		t_ops = NULL;
	free(tl);
}

static void op_tkey_make(void)
{
	op_tkey_ok = pthread_key_create(&op_tkey, op_tls_exit) == 0;
}

/* Register a cache of the calling thread with cl; NULL when the thread
 * has none to spare (or no memory): the instance's cache serves it. */
static struct op_tcache *tcache_register(struct clovis *cl)
{
	struct op_tcache *tc = NULL;

	pthread_once(&op_tonce, op_tkey_make);
	if (!op_tkey_ok)
		return NULL;
	if (t_ops == NULL) {
		struct op_tls *tl = calloc(1, sizeof *tl);

		if (tl == NULL)
			return NULL;
		if (pthread_setspecific(op_tkey, tl) != 0) {
			free(tl);
			return NULL;
		}
		t_ops = tl;
	}
	for (uint32_t i = 0; i < OP_TLS_INSTANCES && tc == NULL; i++)
		if (__atomic_load_n(&t_ops->t_c[i].tc_cl, __ATOMIC_RELAXED) ==
		    NULL)
			tc = &t_ops->t_c[i];
	if (tc == NULL)
		return NULL;
	pthread_mutex_lock(&op_tlock);
	pthread_mutex_lock(&cl->cl_olock);
	tc->tc_free = NULL;
	tc->tc_nr = 0;
	tc->tc_prev = NULL;
	tc->tc_next = cl->cl_tcaches;
	if (cl->cl_tcaches != NULL)
		cl->cl_tcaches->tc_prev = tc;
	cl->cl_tcaches = tc;
	__atomic_store_n(&tc->tc_cl, cl, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&cl->cl_olock);
	pthread_mutex_unlock(&op_tlock);
	return tc;
}

/* Make a cached op live: unpoisoned, zeroed but for its lock and
 * condition variable and links. */
static struct clovis_op *op_revive(struct clovis_op *op)
{
	OP_UNPOISON(op, OP_CACHED_LEN);
	memset(op, 0, offsetof(struct clovis_op, op_lock));
	op->op_msg[0] = '\0';
	op->op_cnext = NULL;
	op->op_cached = false;
	return op;
}

/* A new op: from the thread's cache, else the instance's, else allocated,
 * initialised and linked into cl_all. */
static struct clovis_op *op_get(struct clovis *cl)
{
	struct op_tcache *tc = tcache_find(cl);
	struct clovis_op *op;
	pthread_condattr_t ca;

	if (tc != NULL && (op = tc->tc_free) != NULL) {
		tc->tc_free = op->op_cnext;
		tc->tc_nr--;
		return op_revive(op);
	}
	pthread_mutex_lock(&cl->cl_olock);
	op = cl->cl_ofree;
	if (op != NULL) {
		cl->cl_ofree = op->op_cnext;
		cl->cl_nr_ofree--;
	}
	pthread_mutex_unlock(&cl->cl_olock);
	if (op != NULL)
		return op_revive(op);
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

/* Keep a finished op (its resources released, op_magic 0) in the thread's
 * cache, else the instance's, else destroy it. */
static void op_put(struct clovis *cl, struct clovis_op *op)
{
	struct op_tcache *tc = NULL;
	bool cached = false;

	op->op_cached = true;
	if (!cl->cl_closing) {
		tc = tcache_find(cl);
		if (tc == NULL)
			tc = tcache_register(cl);
	}
	if (tc != NULL && tc->tc_nr < OP_TCACHE_MAX) {
		op->op_cnext = tc->tc_free;
		tc->tc_free = op;
		tc->tc_nr++;
		OP_POISON(op, OP_CACHED_LEN);
		return;
	}
	pthread_mutex_lock(&cl->cl_olock);
	if (cl->cl_closing || cl->cl_nr_ofree < OP_CACHE_MAX) {
		op->op_cnext = cl->cl_ofree;
		cl->cl_ofree = op;
		cl->cl_nr_ofree++;
		OP_POISON(op, OP_CACHED_LEN);
		cached = true;
	} else {
		op_unlink(cl, op);
	}
	pthread_mutex_unlock(&cl->cl_olock);
	if (!cached)
		op_destroy(op);
}

/* clovis_fini, no op in flight: every thread's cache of cl detached (its
 * ops to the instance's cache), and from now on frees go to the
 * instance's cache. */
static void op_tcaches_close(struct clovis *cl)
{
	struct clovis_op *doomed = NULL;

	pthread_mutex_lock(&op_tlock);
	pthread_mutex_lock(&cl->cl_olock);
	cl->cl_closing = true;
	while (cl->cl_tcaches != NULL)
		tcache_detach(cl->cl_tcaches, &doomed);
	pthread_mutex_unlock(&cl->cl_olock);
	pthread_mutex_unlock(&op_tlock);
	op_destroy_list(doomed);
}

uint32_t op_tcaches_count(struct clovis *cl)
{
	uint32_t n = 0;

	pthread_mutex_lock(&cl->cl_olock);
	for (struct op_tcache *tc = cl->cl_tcaches; tc != NULL; tc = tc->tc_next)
		n++;
	pthread_mutex_unlock(&cl->cl_olock);
	return n;
}

/* clovis_fini, every op cached: destroy each op of cl_all once. */
static void op_cache_empty(struct clovis *cl)
{
	struct clovis_op *op, *next;

	pthread_mutex_lock(&cl->cl_olock);
	for (op = cl->cl_all; op != NULL; op = next) {
		next = op->op_anext;
		ASSERT(op->op_cached);
		op_destroy(op);
	}
	cl->cl_all = NULL;
	cl->cl_ofree = NULL;
	cl->cl_nr_ofree = 0;
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
	op->op_req.er_id = *st_of(&e->en_id);
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

/* Set op's state; the waiters are woken when it is final or one of them
 * waits for it (op_wmask): a thread waiting for STABLE sleeps on through
 * EXECUTED. */
static void op_set_state(struct clovis_op *op, uint32_t state)
{
	pthread_mutex_lock(&op->op_lock);
	op->op_state = state;
	if (state == CLOVIS_OS_STABLE || state == CLOVIS_OS_FAILED ||
	    (op->op_wmask & state) != 0)
		pthread_cond_broadcast(&op->op_cond);
	pthread_mutex_unlock(&op->op_lock);
}

/* The ADDB trace records of a traced op (addb/addb.h): launched,
 * executed, ended. */
static void op_trace_launch(struct clovis_op *op)
{
	op->op_trace = addb_trace_op();
	op->op_req.er_ci.ci_trace = op->op_trace;
	op->op_req.er_ci.ci_trace_op = op->op_stat;
	if (op->op_trace != 0)
		addb_rec(ADDB_R_OP_LAUNCH, op->op_trace, op->op_stat, 0, 0);
}

static void op_trace_end(struct clovis_op *op, int rc)
{
	if (op->op_trace != 0)
		addb_rec(ADDB_R_OP_END, op->op_trace, op->op_stat,
			 (uint64_t)(int64_t)rc, op_now_ns() - op->op_launch_ns);
}

/* The op's effect is visible: handle attributes, EXECUTED, callback. */
static void op_executed(struct clovis_op *op)
{
	if (op->op_trace != 0)
		addb_rec(ADDB_R_OP_EXECUTED, op->op_trace, op->op_stat, 0, 0);
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
	void (*cb)(struct clovis_op *);
	uint32_t state;
	bool executed;

	if (op->op_stat < CLOVIS_STAT_NR) /* dtx commit ops: not counted */
		stats_record(&cl->cl_stats, op->op_stat, lat_us,
			     op->op_req.er_bytes, rc != 0);
	if (rc != 0) {
		snprintf(op->op_msg, sizeof op->op_msg, "%s", msg);
		op->op_rc = rc;
		state = CLOVIS_OS_FAILED;
		cb = op->op_cbs.oc_failed;
	} else {
		pthread_mutex_lock(&op->op_lock);
		executed = op->op_state == CLOVIS_OS_EXECUTED;
		pthread_mutex_unlock(&op->op_lock);
		if (!executed)
			op_executed(op);
		state = CLOVIS_OS_STABLE;
		cb = op->op_cbs.oc_stable;
	}
	op_trace_end(op, rc);
	/* With a callback, the state first and the callback before the op is
	 * released; without, the state and the release in one hold and one
	 * wake-up (a waiter for STABLE that goes on to clovis_op_free() does
	 * not sleep again for op_busy). */
	if (cb != NULL) {
		op_set_state(op, state);
		cb(op);
	}
	pthread_mutex_lock(&cl->cl_olock);
	pthread_mutex_lock(&op->op_lock);
	op->op_state = state;
	op->op_busy = false;
	pthread_cond_broadcast(&op->op_cond);
	pthread_mutex_unlock(&op->op_lock);
	if (--cl->cl_inflight == 0)
		pthread_cond_broadcast(&cl->cl_oidle);
	pthread_mutex_unlock(&cl->cl_olock);
}

void op_finish(struct clovis_op *op, int rc, const char *msg)
{
	op_complete(op, rc, msg);
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
	op_tcaches_close(cl);
	/* Ops never freed by the caller: freeing one touches no other op's
	 * place in cl_all (it goes to the instance's cache). */
	for (struct clovis_op *op = cl->cl_all, *next; op != NULL; op = next) {
		next = op->op_anext;
		if (!op->op_cached)
			clovis_op_free(op);
	}
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
		op_trace_launch(op);
	}
	pthread_mutex_unlock(&op->op_lock);
	return rc;
}

/*
 * The launching thread's message around an op run in that thread (the
 * thread's own message is kept, clovis.h): the op runs on a fresh level
 * of the message stack (err_push: no copy), or, when the stack is full
 * (ops launched from callbacks of ops run here), under a cleared message
 * with the caller's copied aside.  err_set(0, "%s", saved), used before,
 * cost a vsnprintf per op; the copy, an inlined rep movs, ~35 ns.
 */
struct op_msg_keep {
	bool mk_pushed;
	size_t mk_len;
	char mk_saved[LIM_ERRMSG_LEN];
};

static void op_msg_keep(struct op_msg_keep *k)
{
	k->mk_pushed = err_push();
	if (k->mk_pushed)
		return;
	k->mk_len = strlen(err_msg());
	if (k->mk_len != 0)
		memcpy(k->mk_saved, err_msg(), k->mk_len + 1);
	err_clear();
}

static void op_msg_back(struct op_msg_keep *k)
{
	if (k->mk_pushed)
		err_pop();
	else if (k->mk_len != 0)
		err_restore(k->mk_saved, k->mk_len);
	else if (err_msg()[0] != '\0')
		err_clear();
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

	return op_embedded_nocb(op) && op->op_run == NULL &&
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
	struct op_msg_keep mk;
	int rc;

	pthread_mutex_lock(&op->op_lock);
	if (op->op_state != CLOVIS_OS_INIT || op->op_busy) {
		pthread_mutex_unlock(&op->op_lock);
		return err_set(-CLOVIS_ESTATE, "op_launch: op is not in INIT "
			       "state");
	}
	op->op_launch_ns = op_now_ns();
	op_trace_launch(op);
	op_msg_keep(&mk);
	rc = cl->cl_exec(cl, &op->op_req);
	ASSERT(rc != ENG_PENDING);
	stats_record(&cl->cl_stats, op->op_stat,
		     (op_now_ns() - op->op_launch_ns) / 1000,
		     op->op_req.er_bytes, rc != 0);
	if (rc == 0 && op->op_trace != 0)
		addb_rec(ADDB_R_OP_EXECUTED, op->op_trace, op->op_stat, 0, 0);
	op_trace_end(op, rc);
	if (rc == 0) {
		op_entity_update(op);
	} else {
		snprintf(op->op_msg, sizeof op->op_msg, "%s", err_msg());
		op->op_rc = rc;
	}
	op->op_state = rc != 0 ? CLOVIS_OS_FAILED : CLOVIS_OS_STABLE;
	if (op->op_nwait != 0) /* another thread in clovis_op_wait() */
		pthread_cond_broadcast(&op->op_cond);
	pthread_mutex_unlock(&op->op_lock);
	/* After the unlock: a thread that sees it may free the op at once. */
	__atomic_store_n(&op->op_inline_done, true, __ATOMIC_RELEASE);
	op_msg_back(&mk);
	return 0;
}

/*
 * Does op run in the launching thread although it is an update?  An index
 * PUT or DEL launched alone, without callbacks, outside a dtx, on an
 * embedded instance whose metadata is on NVRAM: its eng_exec() does no
 * device I/O (the records are applied at the commit) and a commit there is
 * durable at once, so when no other update is on its way the engine
 * commits it in this thread (eng_commit_submit_here) and the op is STABLE
 * when launch returns; the two thread hand-offs of a worker run (launch to
 * worker, commit to waiter) cost several times the commit itself (qd1 PUT:
 * about 20 us through a worker against 4.4 us for a durable raw LMDB
 * commit, most of the difference futex wake-ups).  Otherwise the engine
 * queues its commit item as from a worker and launch returns at once.
 */
static bool op_runs_here(const struct clovis_op *op)
{
	uint32_t kind = op->op_req.er_kind;

	if (op->op_dtx != NULL)
		return dtx_op_runs_here(op);
	if (!op_embedded_nocb(op) || op->op_run != NULL)
		return false;
	if (op->op_here) /* CLOVIS_OF_HERE; others take RCU read sections */
		return ((const struct clovis_obj *)op->op_entity)->ob_attr
			       .oa_layout == CLOVIS_LAYOUT_PLAIN;
	return (kind == ER_IDX_PUT || kind == ER_IDX_DEL) &&
	       eng_meta_on_nvram(op->op_cl->cl_eng);
}

/*
 * Launch op and execute it here as a worker would (counted in cl_inflight,
 * finished by op_complete() here or in the commit stages).  The thread's
 * own message (clovis_errmsg) is kept.  0, or an error when the op cannot
 * be launched.
 */
__thread uint64_t op_here_runs;

static int op_run_here(struct clovis *cl, struct clovis_op *op)
{
	struct op_msg_keep mk;
	int rc = op_launch_one(op);

	if (rc != 0)
		return rc;
	op_here_runs++;
	pthread_mutex_lock(&cl->cl_olock);
	cl->cl_inflight++;
	pthread_mutex_unlock(&cl->cl_olock);
	op_msg_keep(&mk);
	/* op may be finished on return */
	rc = op->op_run != NULL ? op->op_run(op) : cl->cl_exec(cl, &op->op_req);
	if (rc != ENG_PENDING)
		op_complete(op, rc, err_msg());
	op_msg_back(&mk);
	return 0;
}

/* Put a launched, counted op on the work queue. */
static void op_enqueue(struct clovis *cl, struct clovis_op *op)
{
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

/* Queue a launched op for the workers. */
static void op_queue(struct clovis *cl, struct clovis_op *op)
{
	pthread_mutex_lock(&cl->cl_olock);
	cl->cl_inflight++;
	pthread_mutex_unlock(&cl->cl_olock);
	/* an update for the embedded engine: a batch may wait for it */
	if (op->op_run == NULL && cl->cl_exec == exec_embedded)
		eng_update_coming(cl->cl_eng, &op->op_req);
	op_enqueue(cl, op);
}

void op_requeue(struct clovis_op *op, int (*run)(struct clovis_op *op))
{
	op->op_run = run;
	op_enqueue(op->op_cl, op);
}

/*
 * Does op start from the launching thread, without a worker?  An object
 * READ or WRITE of a cluster client, without callbacks (its end runs on
 * the RPC progress thread, where a callback must not run: clovis.h
 * promises callbacks on library threads that may block), outside a dtx:
 * clu_obj_start() sends it to its home at once.  A worker per op made
 * three thread hand-offs of each 1 MiB op (launch to worker, the reply
 * to the waiting worker, the worker to the caller) and capped the ops in
 * flight at the number of workers (docs/cluster.md "Object ops without
 * a worker", docs/performance.md).
 */
static bool op_starts_async(const struct clovis_op *op)
{
	uint32_t kind = op->op_req.er_kind;

	return op->op_cl->cl_exec == exec_cluster && op->op_dtx == NULL &&
	       op->op_run == NULL && op->op_cbs.oc_executed == NULL &&
	       op->op_cbs.oc_stable == NULL && op->op_cbs.oc_failed == NULL &&
	       (kind == ER_OBJ_READ || kind == ER_OBJ_WRITE);
}

/* Launch op and start it from here (op_starts_async), or queue it for a
 * worker when it cannot start so.  The thread's own message
 * (clovis_errmsg) is kept: why a start fell back is no failure. */
static int op_start_async(struct clovis *cl, struct clovis_op *op)
{
	struct op_msg_keep mk;
	int rc = op_launch_one(op);

	if (rc != 0)
		return rc;
	pthread_mutex_lock(&cl->cl_olock);
	cl->cl_inflight++;
	pthread_mutex_unlock(&cl->cl_olock);
	op_msg_keep(&mk);
	/* op may be finished on return */
	if (clu_obj_start(op) != 0)
		op_enqueue(cl, op);
	op_msg_back(&mk);
	return 0;
}

/* In an array, ops run here are reads run inline and dtx ops
 * (dtx_op_runs_here); a lone update outside a dtx goes to a worker there,
 * so that the array's updates make one batch. */
static bool op_runs_here_in_array(const struct clovis_op *op)
{
	return op_valid(op) && (op_runs_inline(op) ||
				((op->op_dtx != NULL || op->op_here) &&
				 op_runs_here(op)));
}

/*
 * Ops for the workers are queued first, then the ones run here (reads
 * inline, dtx ops) in array order, so that the queued ones proceed
 * meanwhile.
 */
int clovis_op_launch(struct clovis_op **ops, uint32_t nr)
{
	uint32_t nr_inline = 0;
	int ret = 0, rc;

	if (nr == 0)
		return 0; /* nothing to launch (clovis.h); ops is not read */
	if (ops == NULL)
		return err_set(-EINVAL, "op_launch: ops is NULL");
	if (nr == 1 && op_valid(ops[0]) && op_runs_inline(ops[0]))
		return op_run_inline(ops[0]->op_cl, ops[0]);
	if (nr == 1 && op_valid(ops[0]) && op_runs_here(ops[0]))
		return op_run_here(ops[0]->op_cl, ops[0]);
	for (uint32_t i = 0; i < nr; i++) {
		struct clovis_op *op = ops[i];

		if (op_runs_here_in_array(op)) {
			nr_inline++;
			continue;
		}
		if (op_valid(op) && op_starts_async(op)) {
			rc = op_start_async(op->op_cl, op);
			ret = ret ? ret : rc;
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

		if (!op_runs_here_in_array(op))
			continue;
		nr_inline--;
		rc = op_runs_inline(op) ? op_run_inline(op->op_cl, op) :
					  op_run_here(op->op_cl, op);
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

/* What op is, for messages: "obj.write on object 5eed:64", "dtx commit". */
static void op_describe(const struct clovis_op *op, char *buf, size_t len)
{
	static const char *const what[CLOVIS_STAT_NR] = {
		"READ", "WRITE", "ALLOC", "FREE", "GET", "PUT", "DEL", "NEXT",
		"CREATE", "OPEN", "DELETE", "GETATTR", "SETATTR", "commit"};
	static const char *const type[] = {"entity", "container", "object",
					   "index"};
	uint32_t t = op->op_req.er_type;

	if (op->op_stat >= CLOVIS_STAT_NR) {
		snprintf(buf, len, "the dtx commit op");
		return;
	}
	snprintf(buf, len, "%s op on %s %s", what[op->op_stat],
		 type[t < sizeof type / sizeof type[0] ? t : 0],
		 eng_id_str(&op->op_req.er_id));
}

/* Is op in INIT with nothing to launch it but the caller: not launched,
 * and not a member of a dtx whose commit op was launched (that commit
 * launches or fails it)?  Then a wait for a later state would never end. */
static bool op_unlaunched(struct clovis_op *op)
{
	bool init;

	if (__atomic_load_n(&op->op_inline_done, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&op->op_lock);
	init = op->op_state == CLOVIS_OS_INIT;
	pthread_mutex_unlock(&op->op_lock);
	return init && !dtx_member_launch_due(op);
}

int clovis_op_wait(struct clovis_op *op, uint32_t states, int64_t timeout_ns)
{
	struct timespec dl;
	int rc = 0;

	if (!op_valid(op) || states == 0 || (states & ~0x1fu) != 0)
		return err_set(-EINVAL, "op_wait: %s", op_valid(op) ?
			       "bad state mask" : "not an op");
	if (!(states & CLOVIS_OS_INIT) && op_unlaunched(op)) {
		char d[96];

		op_describe(op, d, sizeof d);
		return err_set(-EINVAL, "op_wait: %s was never launched (state "
			       "INIT): launch it first", d);
	}
	if (timeout_ns != CLOVIS_TIME_NEVER) {
		uint64_t t = op_now_ns() + (uint64_t)(timeout_ns > 0 ? timeout_ns : 0);

		dl.tv_sec = (time_t)(t / 1000000000ull);
		dl.tv_nsec = (long)(t % 1000000000ull);
	}
	/* Run inline and finished: its state no longer changes, and no
	 * other thread touches the op (no lock, no wake-up to wait for). */
	if (__atomic_load_n(&op->op_inline_done, __ATOMIC_ACQUIRE) &&
	    op_reached(op, states | CLOVIS_OS_FAILED))
		return op->op_state == CLOVIS_OS_FAILED &&
		       !(states & CLOVIS_OS_FAILED) ? op->op_rc : 0;
	pthread_mutex_lock(&op->op_lock);
	op->op_nwait++;
	op->op_wmask |= states;
	while (rc == 0 && !op_reached(op, states | CLOVIS_OS_FAILED)) {
		if (timeout_ns == CLOVIS_TIME_NEVER)
			pthread_cond_wait(&op->op_cond, &op->op_lock);
		else if (pthread_cond_timedwait(&op->op_cond, &op->op_lock,
						&dl) == ETIMEDOUT)
			rc = -ETIMEDOUT;
	}
	if (--op->op_nwait == 0)
		op->op_wmask = 0;
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
	if (__atomic_load_n(&op->op_inline_done, __ATOMIC_ACQUIRE))
		return op->op_state;
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
	if (__atomic_load_n(&op->op_inline_done, __ATOMIC_ACQUIRE))
		return op->op_rc;
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
	if (!__atomic_load_n(&op->op_inline_done, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&op->op_lock);
		while (op->op_busy)
			pthread_cond_wait(&op->op_cond, &op->op_lock);
		pthread_mutex_unlock(&op->op_lock);
	}
	if (op->op_dtx != NULL)
		dtx_op_free(op);
	eng_spacevec_fini(&op->op_req.er_ci.ci_alloc);
	eng_spacevec_fini(&op->op_req.er_ci.ci_freed);
	eng_unit_req_fini(&op->op_req);
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
