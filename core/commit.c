/*
 * commit.c — the group commit (syncer and committer threads, their queues
 * and profile) and eng_exec(), whose counts of updates in execution the
 * group-commit window waits on.  See engine.h and core/README.md "Group
 * commit".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu.h>

#include "core/engine_internal.h"
#include "addb/addb.h"
#include "core/errors.h"
#include "core/fdmi_log.h"
#include "core/fault.h"
#include "core/limits.h"
#include "core/log.h"

/* ------------------------------------------------------ group commit */

static struct eng_citem *list_last(struct eng_citem *ci);
static uint32_t list_len(const struct eng_citem *ci);
static uint64_t mono_us(void);

/* Add v to a profile counter (e_gp). */
static void gp_add(uint64_t *c, uint64_t v)
{
	__atomic_add_fetch(c, v, __ATOMIC_RELAXED);
}

void eng_cq_init(struct eng_cqueue *q)
{
	memset(q, 0, sizeof *q);
	pthread_mutex_init(&q->cq_lock, NULL);
	pthread_cond_init(&q->cq_cond, NULL);
}

void eng_cq_fini(struct eng_cqueue *q)
{
	pthread_mutex_destroy(&q->cq_lock);
	pthread_cond_destroy(&q->cq_cond);
}

/* Link the list [first .. last] into q, lock held: at its tail, or before
 * what is queued (front). */
static void cq_link_locked(struct eng_cqueue *q, struct eng_citem *first,
			   struct eng_citem *last, bool front)
{
	if (front) {
		last->ci_next = q->cq_head;
		q->cq_head = first;
		if (q->cq_tail == NULL)
			q->cq_tail = last;
	} else {
		last->ci_next = NULL;
		if (q->cq_tail != NULL)
			q->cq_tail->ci_next = first;
		else
			q->cq_head = first;
		q->cq_tail = last;
	}
}

/* cq_link_locked() under the lock, and wake the stage. */
static void cq_put(struct eng_cqueue *q, struct eng_citem *first,
		   struct eng_citem *last, bool front)
{
	pthread_mutex_lock(&q->cq_lock);
	cq_link_locked(q, first, last, front);
	pthread_cond_signal(&q->cq_cond);
	pthread_mutex_unlock(&q->cq_lock);
}

/* Unlink up to LIM_BATCH_MAX items from the head of q (lock held). */
static struct eng_citem *cq_unlink_locked(struct eng_cqueue *q)
{
	struct eng_citem *head, *last;
	uint32_t n = 1;

	head = last = q->cq_head;
	if (head != NULL) {
		while (last->ci_next != NULL && n < LIM_BATCH_MAX) {
			last = last->ci_next;
			n++;
		}
		q->cq_head = last->ci_next;
		if (q->cq_head == NULL)
			q->cq_tail = NULL;
		last->ci_next = NULL;
	}
	return head;
}

/* Take up to LIM_BATCH_MAX items; NULL when stopped and empty. */
static struct eng_citem *cq_take(struct eng_cqueue *q)
{
	struct eng_citem *head;

	pthread_mutex_lock(&q->cq_lock);
	while (q->cq_head == NULL && !q->cq_stop)
		pthread_cond_wait(&q->cq_cond, &q->cq_lock);
	head = cq_unlink_locked(q);
	pthread_mutex_unlock(&q->cq_lock);
	return head;
}

/* Deadline us microseconds from now on CLOCK_REALTIME (condvars). */
static void deadline_us(struct timespec *dl, uint32_t us)
{
	clock_gettime(CLOCK_REALTIME, dl);
	dl->tv_nsec += (long)us * 1000;
	while (dl->tv_nsec >= 1000000000) {
		dl->tv_sec++;
		dl->tv_nsec -= 1000000000;
	}
}

/* cq_take(), but give up after us microseconds: NULL then too. */
static struct eng_citem *cq_take_within(struct eng_cqueue *q, uint32_t us)
{
	struct eng_citem *head;
	struct timespec dl;

	deadline_us(&dl, us);
	pthread_mutex_lock(&q->cq_lock);
	while (q->cq_head == NULL && !q->cq_stop &&
	       pthread_cond_timedwait(&q->cq_cond, &q->cq_lock, &dl) == 0)
		;
	head = cq_unlink_locked(q);
	pthread_mutex_unlock(&q->cq_lock);
	return head;
}

/* Updates on their way to the syncer: queued for a worker (e_coming) or
 * doing their data I/O in eng_exec() (e_inexec). */
static uint32_t gc_coming(struct eng *e)
{
	return __atomic_load_n(&e->e_inexec, __ATOMIC_ACQUIRE) +
	       __atomic_load_n(&e->e_coming, __ATOMIC_ACQUIRE);
}

/* Has an update been reported done within ENG_GATHER_MAX_US?  Then the
 * updates on their way may include the next ones of threads that wait for
 * theirs (a closed loop). */
static bool gc_loop(struct eng *e)
{
	uint64_t at = __atomic_load_n(&e->e_rep_us, __ATOMIC_ACQUIRE);

	return mono_us() - at < ENG_GATHER_MAX_US;
}

/* Updates reported done that may come back: a thread that waited for one
 * of its updates often issues the next at once (an application keeping N
 * requests in flight).  Counted only for ENG_GATHER_MAX_US after the last
 * report, so that a guess that is wrong fades. */
static uint32_t gc_returning(struct eng *e)
{
	return gc_loop(e) ? __atomic_load_n(&e->e_rep_n, __ATOMIC_ACQUIRE) : 0;
}

/* Group-commit window: while other updates are on their way (gc_coming),
 * the batch waits for them, so that one round of syncs serves them all (16
 * ops in flight make one batch, not two or three), and while updates
 * reported done are likely to come back (gc_returning: their threads
 * issue the next ones, which join this batch instead of making the next
 * one), or a commit of such a loop is still unstable (the committer syncs
 * it at once, and its updates come back to this batch).  Each wait for
 * the next item lasts at most the gap: the time an update usually spends
 * in eng_exec() (e_exec_ns, a moving average), at least LIM_GATHER_US;
 * the whole window at most ENG_GATHER_MAX_US.  With nothing on its way
 * the batch goes at once (a lone write pays no window). */
static struct eng_citem *cq_gather(struct eng *e, struct eng_cqueue *q,
				   struct eng_citem *batch)
{
	struct eng_citem *last = list_last(batch);
	uint32_t n = list_len(batch);
	uint64_t gap = __atomic_load_n(&e->e_exec_ns, __ATOMIC_RELAXED) / 1000;
	uint64_t end = mono_us() + ENG_GATHER_MAX_US;
	struct timespec dl;

	gap = gap < LIM_GATHER_US ? LIM_GATHER_US :
	      gap > ENG_GATHER_MAX_US ? ENG_GATHER_MAX_US : gap;
	pthread_mutex_lock(&q->cq_lock);
	/* the riders join this batch (they never start one) */
	while (q->cq_ride != NULL && n < LIM_BATCH_MAX) {
		struct eng_citem *r = q->cq_ride;

		q->cq_ride = r->ci_next;
		last->ci_next = r;
		last = r;
		r->ci_next = NULL;
		n++;
	}
	q->cq_gathering = true;
	while (n < LIM_BATCH_MAX && !q->cq_stop) {
		uint64_t now;

		while (q->cq_head != NULL && n < LIM_BATCH_MAX) {
			last->ci_next = q->cq_head;
			last = q->cq_head;
			q->cq_head = last->ci_next;
			n++;
		}
		last->ci_next = NULL;
		if (q->cq_head == NULL)
			q->cq_tail = NULL;
		now = mono_us();
		if (n >= LIM_BATCH_MAX || now >= end ||
		    (gc_coming(e) == 0 && gc_returning(e) == 0 &&
		     !(gc_loop(e) && __atomic_load_n(&e->e_unstable_any,
						     __ATOMIC_ACQUIRE)))) {
			gp_add(&e->e_gp.gp_gend[now >= end ? 2 : 0], 1);
			break;
		}
		deadline_us(&dl, (uint32_t)(end - now < gap ? end - now : gap));
		if (pthread_cond_timedwait(&q->cq_cond, &q->cq_lock, &dl) != 0 &&
		    q->cq_head == NULL) {
			gp_add(&e->e_gp.gp_gend[1], 1);
			break;
		}
	}
	q->cq_gathering = false;
	pthread_mutex_unlock(&q->cq_lock);
	return batch;
}

void eng_cq_stop(struct eng_cqueue *q)
{
	pthread_mutex_lock(&q->cq_lock);
	q->cq_stop = true;
	pthread_cond_broadcast(&q->cq_cond);
	pthread_mutex_unlock(&q->cq_lock);
}

static struct eng_citem *list_last(struct eng_citem *ci)
{
	while (ci->ci_next != NULL)
		ci = ci->ci_next;
	return ci;
}

/* Queue one item for the syncer.  While the syncer gathers a batch it is
 * woken only when no other update is on its way (gc_coming); the items
 * before that it finds when its gap times out, so that a batch of 16 costs
 * the syncer a few wake-ups, not 16. */
static void sq_put(struct eng *e, struct eng_citem *ci)
{
	struct eng_cqueue *q = &e->e_syncq;

	pthread_mutex_lock(&q->cq_lock);
	cq_link_locked(q, ci, ci, false);
	if (!q->cq_gathering || gc_coming(e) == 0)
		pthread_cond_signal(&q->cq_cond);
	pthread_mutex_unlock(&q->cq_lock);
}

bool eng_commit_ride(struct eng *e, struct eng_citem *ci)
{
	struct eng_cqueue *q = &e->e_syncq;
	bool ride;

	pthread_mutex_lock(&q->cq_lock);
	/* only while other updates are on their way or queued */
	ride = gc_coming(e) != 0 || q->cq_head != NULL || q->cq_gathering ||
	       __atomic_load_n(&e->e_sbusy, __ATOMIC_ACQUIRE);
	if (ride) {
		ci->ci_next = q->cq_ride;
		q->cq_ride = ci;
	}
	pthread_mutex_unlock(&q->cq_lock);
	return ride;
}

bool eng_commit_unride(struct eng *e, struct eng_citem *ci)
{
	struct eng_cqueue *q = &e->e_syncq;
	struct eng_citem **pp;
	bool found = false;

	pthread_mutex_lock(&q->cq_lock);
	for (pp = &q->cq_ride; *pp != NULL; pp = &(*pp)->ci_next)
		if (*pp == ci) {
			*pp = ci->ci_next;
			ci->ci_next = NULL;
			found = true;
			break;
		}
	pthread_mutex_unlock(&q->cq_lock);
	return found;
}

/* The engine whose e_inexec counts the update this thread is executing in
 * eng_exec() (NULL: none, or its item is already queued). */
static __thread struct eng *t_inexec;

void eng_commit_submit(struct eng *e, struct eng_citem *ci)
{
	if (t_inexec == e) {
		t_inexec = NULL;
		__atomic_sub_fetch(&e->e_inexec, 1, __ATOMIC_RELEASE);
	}
	if (ci->ci_hold != NULL) {
		ci->ci_hold(ci); /* a member of a dtx: held until its commit */
		return;
	}
	sq_put(e, ci);
}

/* eng_exec() time of this thread's update up to eng_commit_submit_here()
 * (mono_us; 0: not taken), so that a sync run there is not counted in
 * e_exec_ns. */
static __thread uint64_t t_exec_end;

static bool cq_empty(struct eng_cqueue *q);
static void sync_stage(struct eng *e, struct eng_citem *batch);

/*
 * With the metadata on NVRAM, a lone update (the submitting thread is the
 * one that executed it, nothing else in eng_exec(), nothing queued for
 * either stage, the syncer idle) goes through the sync stage in this
 * thread: its devices synced, the batch committed (commit_direct, durable
 * at its commit) and ci_done() called here, without waking the syncer.
 * The same steps in the same order as the syncer's, under e_slock.
 * Otherwise, or if the syncer holds e_slock, the item is queued.
 */
/* Both commit stages idle (the syncer not busy, both queues empty) and
 * e_slock taken by this thread: the caller may run the sync stage here. */
static bool stages_idle_take(struct eng *e)
{
	return !__atomic_load_n(&e->e_sbusy, __ATOMIC_ACQUIRE) &&
	       cq_empty(&e->e_syncq) && cq_empty(&e->e_commitq) &&
	       pthread_mutex_trylock(&e->e_slock) == 0;
}

void eng_commit_submit_here(struct eng *e, struct eng_citem *ci)
{
	bool mine = t_inexec == e;

	if (!mine || !e->e_meta_nv || ci->ci_hold != NULL ||
	    __atomic_load_n(&e->e_inexec, __ATOMIC_ACQUIRE) != 1 ||
	    !stages_idle_take(e)) {
		eng_commit_submit(e, ci);
		return;
	}
	t_inexec = NULL;
	__atomic_sub_fetch(&e->e_inexec, 1, __ATOMIC_RELEASE);
	t_exec_end = mono_us();
	ci->ci_next = NULL;
	sync_stage(e, ci);
	pthread_mutex_unlock(&e->e_slock);
}

/* Are all devices of ci's mask NVRAM-tier (a sync there only drains)? */
static bool citem_nvram_only(const struct eng *e, const struct eng_citem *ci)
{
	for (uint32_t d = 0; d < e->e_nr_devs; d++)
		if ((ci->ci_devmask[d / 64] >> (d % 64) & 1) &&
		    e->e_dev_tier[d] != ST_TIER_NVRAM)
			return false;
	return true;
}

/*
 * A released held item (its update's eng_exec() returned long ago, so it
 * is no longer counted in e_inexec): the same own-thread path as
 * eng_commit_submit_here() when nothing else is executing or queued and
 * the syncer is idle.  Without the metadata on NVRAM the commit needs an
 * explicit meta sync (commit_direct makes it stable here), so only an
 * item on NVRAM devices alone with nothing on its way takes it.
 */
bool eng_commit_release(struct eng *e, struct eng_citem *ci)
{
	if (t_inexec == e || ci->ci_hold != NULL ||
	    (!e->e_meta_nv &&
	     (!citem_nvram_only(e, ci) || gc_coming(e) != 0)) ||
	    __atomic_load_n(&e->e_inexec, __ATOMIC_ACQUIRE) != 0 ||
	    !stages_idle_take(e)) {
		eng_commit_submit(e, ci);
		return false;
	}
	gp_add(&e->e_gp.gp_release_here, 1);
	ci->ci_next = NULL;
	sync_stage(e, ci);
	pthread_mutex_unlock(&e->e_slock);
	return true;
}

/* Fail one item: give back its space and report. */
static void commit_fail(struct eng *e, struct eng_citem *ci, int rc)
{
	if (ci->ci_msg[0] == '\0')
		snprintf(ci->ci_msg, sizeof ci->ci_msg, "%s", err_msg());
	eng_space_release(e, &ci->ci_alloc);
	ci->ci_alloc.sv_nr = 0;
	ci->ci_freed.sv_nr = 0;
	ci->ci_done(ci, rc);
}

/* Sync every device written by the batch, so its data is durable before
 * the maps that point at it.  The syncs run in parallel, one per device on
 * the devices' I/O queue threads (tier_io_run, TIO_SYNC): a batch costs
 * about one sync time, not one per device.  Items on a device that failed
 * to sync fail. */
static struct eng_citem *commit_sync_devices(struct eng *e,
					     struct eng_citem *batch)
{
	uint64_t mask[ENG_DEVMASK_WORDS] = {0}, bad[ENG_DEVMASK_WORDS] = {0};
	struct eng_citem *keep = NULL, **tail = &keep, *next;
	uint32_t nr = 0;
	int why = -EIO;

	for (struct eng_citem *ci = batch; ci != NULL; ci = ci->ci_next)
		for (uint32_t w = 0; w < ENG_DEVMASK_WORDS; w++)
			mask[w] |= ci->ci_devmask[w];
	for (uint32_t d = 0; d < e->e_nr_devs; d++)
		if (mask[d / 64] >> (d % 64) & 1) {
			e->e_syncdev[nr] = d;
			e->e_syncio[nr++] = (struct tier_io){
				.io_dev = e->e_devs[d].ed_dev,
				.io_op = TIO_SYNC};
		}
	(void)tier_io_run(e->e_syncio, nr);
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t d = e->e_syncdev[i];

		if (e->e_syncio[i].io_rc != 0) {
			bad[d / 64] |= 1ull << (d % 64);
			/* A remote device's server unreachable: say so (the
			 * client sees a transport code, not a media error). */
			if (tier_rc_transport(e->e_syncio[i].io_rc))
				why = e->e_syncio[i].io_rc;
		}
	}
	for (struct eng_citem *ci = batch; ci != NULL; ci = next) {
		bool failed = false;

		next = ci->ci_next;
		for (uint32_t w = 0; w < ENG_DEVMASK_WORDS; w++)
			failed |= (ci->ci_devmask[w] & bad[w]) != 0;
		if (failed) {
			commit_fail(e, ci, why);
			continue;
		}
		*tail = ci;
		tail = &ci->ci_next;
	}
	*tail = NULL;
	return keep;
}

/* Apply each item of batch in txn.  Soft failures are reported at once and
 * unlinked.  On a hard failure returns its rc with *hard set to the item. */
static int commit_apply(struct eng *e, MDB_txn *txn, struct eng_citem **batch,
			struct eng_citem **hard)
{
	struct eng_citem **pp = batch;

	while (*pp != NULL) {
		struct eng_citem *ci = *pp;
		int rc;

		ci->ci_hard = false;
		ci->ci_freed.sv_nr = 0;
		ci->ci_msg[0] = '\0';
		rc = ci->ci_apply(e, txn, ci);
		if (rc == 0 && ci->ci_also != NULL) {
			rc = ci->ci_also(e, txn, ci);
			if (rc != 0)
				ci->ci_hard = true;
		}
		if (rc != 0 && ci->ci_hard) {
			*hard = ci;
			*pp = ci->ci_next;
			return rc;
		}
		if (rc != 0) {
			*pp = ci->ci_next;
			commit_fail(e, ci, rc);
			continue;
		}
		pp = &ci->ci_next;
	}
	return 0;
}

/* After a durable commit: defer the frees, report success (counted for
 * gc_returning). */
static void commit_finish(struct eng *e, struct eng_citem *batch)
{
	struct eng_citem *next;
	uint32_t n = list_len(batch);

	if (mono_us() - __atomic_load_n(&e->e_rep_us, __ATOMIC_ACQUIRE) >=
	    ENG_GATHER_MAX_US)
		__atomic_store_n(&e->e_rep_n, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&e->e_rep_n, n, __ATOMIC_RELEASE);
	__atomic_store_n(&e->e_rep_us, mono_us(), __ATOMIC_RELEASE);
	for (struct eng_citem *ci = batch; ci != NULL; ci = next) {
		next = ci->ci_next;
		eng_space_release_deferred(e, &ci->ci_freed);
		ci->ci_alloc.sv_nr = 0;
		if (ci->ci_trace != 0)
			addb_rec(ADDB_R_OP_STABLE, ci->ci_trace,
				 ci->ci_trace_op, 0, 0);
		ci->ci_done(ci, 0);
	}
}

/* Fail every item of a list with rc. */
static void commit_fail_all(struct eng *e, struct eng_citem *list, int rc)
{
	struct eng_citem *next;

	for (struct eng_citem *ci = list; ci != NULL; ci = next) {
		next = ci->ci_next;
		commit_fail(e, ci, rc);
	}
}

/* A durable batch whose write set is seq: wait for it where the
 * replication hook wants it (core/eng_repl.h ro_wait), then report it
 * STABLE; if that fails, its items are visible but not stable: reported
 * failed with the hook's code, their space kept mapped. */
static void commit_replicated(struct eng *e, struct eng_citem *batch,
			      uint64_t seq)
{
	int rc = meta_repl_wait(&e->e_meta, seq);

	if (rc == 0) {
		commit_finish(e, batch);
		return;
	}
	LOG_ERROR("store %s: write set %" PRIu64 " not replicated: %s",
		  e->e_dir, seq, err_msg());
	for (struct eng_citem *ci = batch; ci != NULL; ci = ci->ci_next)
		ci->ci_alloc.sv_nr = 0; /* its space is mapped: keep it */
	commit_fail_all(e, batch, rc);
}

/*
 * A committed batch, durable here (its write set seq; 0: none).  Without
 * a write set, and nothing waiting before it, it is reported STABLE at
 * once.  Otherwise it goes to the replication wait stage: the waiter
 * thread waits for the standbys' acknowledgement while the committer goes
 * on with the next batches (their sets ship meanwhile, so a standby
 * applies the next ones while the first is acknowledged), and reports
 * the batches in commit order.
 */
static void commit_durable(struct eng *e, struct eng_citem *batch,
			   uint64_t seq)
{
	struct eng_rwait *rw;

	if (seq == 0 &&
	    __atomic_load_n(&e->e_rwhead, __ATOMIC_ACQUIRE) == NULL) {
		commit_finish(e, batch); /* no hook: no lock either */
		return;
	}
	if (!e->e_rwrunning) {
		commit_replicated(e, batch, seq);
		return;
	}
	pthread_mutex_lock(&e->e_rwlock);
	if (seq == 0 && e->e_rwhead == NULL) {
		pthread_mutex_unlock(&e->e_rwlock);
		commit_finish(e, batch);
		return;
	}
	pthread_mutex_unlock(&e->e_rwlock);
	rw = malloc(sizeof *rw);
	if (rw == NULL) {
		commit_replicated(e, batch, seq); /* here, then */
		return;
	}
	*rw = (struct eng_rwait){NULL, batch, seq};
	pthread_mutex_lock(&e->e_rwlock);
	if (e->e_rwtail != NULL)
		e->e_rwtail->rw_next = rw;
	else
		__atomic_store_n(&e->e_rwhead, rw, __ATOMIC_RELEASE);
	e->e_rwtail = rw;
	pthread_cond_signal(&e->e_rwcond);
	pthread_mutex_unlock(&e->e_rwlock);
}

void *eng_rwaiter_main(void *arg)
{
	struct eng *e = arg;

	eng_thread_enter();
	pthread_mutex_lock(&e->e_rwlock);
	for (;;) {
		struct eng_rwait *rw = e->e_rwhead;

		if (rw == NULL) {
			if (e->e_rwstop)
				break;
			pthread_cond_wait(&e->e_rwcond, &e->e_rwlock);
			continue;
		}
		pthread_mutex_unlock(&e->e_rwlock);
		commit_replicated(e, rw->rw_batch, rw->rw_seq);
		pthread_mutex_lock(&e->e_rwlock);
		__atomic_store_n(&e->e_rwhead, rw->rw_next, __ATOMIC_RELEASE);
		if (e->e_rwhead == NULL)
			e->e_rwtail = NULL;
		free(rw);
	}
	pthread_mutex_unlock(&e->e_rwlock);
	eng_thread_leave();
	return NULL;
}

void eng_rwaiter_stop(struct eng *e)
{
	if (!e->e_rwrunning)
		return;
	pthread_mutex_lock(&e->e_rwlock);
	e->e_rwstop = true;
	pthread_cond_broadcast(&e->e_rwcond);
	pthread_mutex_unlock(&e->e_rwlock);
	pthread_join(e->e_rwaiter, NULL);
	e->e_rwrunning = false;
	pthread_mutex_destroy(&e->e_rwlock);
	pthread_cond_destroy(&e->e_rwcond);
}

void eng_commit_hook_set(struct eng *e,
			 void (*hook)(void *, uint64_t, uint32_t), void *arg)
{
	e->e_chook = hook;
	e->e_chook_arg = arg;
}

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000;
}

static uint32_t list_len(const struct eng_citem *ci)
{
	uint32_t n = 0;

	for (; ci != NULL; ci = ci->ci_next)
		n++;
	return n;
}

/* Report items visible (EXECUTED). */
static void commit_executed(struct eng_citem *batch, uint32_t n)
{
	for (struct eng_citem *ci = batch; ci != NULL; ci = ci->ci_next) {
		if (ci->ci_trace != 0)
			addb_rec(ADDB_R_OP_COMMITTED, ci->ci_trace,
				 ci->ci_trace_op, n, 0);
		if (ci->ci_executed != NULL)
			ci->ci_executed(ci);
	}
}

/* Make the last commit durable now (mdb_env_sync) and report its items
 * STABLE.  If the sync fails, they are visible but their durability is
 * unknown: they are reported failed with -EIO and a message saying so. */
static void commit_make_stable(struct eng *e)
{
	struct eng_citem *batch = e->e_unstable;
	uint64_t seq = e->e_unstable_seq;
	uint64_t t0, t1;
	int rc = 0;

	if (batch == NULL)
		return;
	e->e_unstable = NULL;
	e->e_unstable_seq = 0;
	__atomic_store_n(&e->e_unstable_any, false, __ATOMIC_RELEASE);
	t0 = mono_us();
	for (int i = 0; i < 3; i++) {
		rc = mdb_env_sync(e->e_meta.m_env, 1);
		if (rc == 0)
			break;
	}
	t1 = mono_us();
	gp_add(&e->e_gp.gp_msync, 1);
	gp_add(&e->e_gp.gp_msync_us, t1 - t0);
	if (rc == 0) {
		commit_durable(e, batch, seq);
		gp_add(&e->e_gp.gp_cb_us, mono_us() - t1);
		return;
	}
	err_set(-EIO, "metadata sync failed (%s): the update is visible but "
		"may not survive a machine crash", mdb_strerror(rc));
	LOG_ERROR("%s", err_msg());
	for (struct eng_citem *ci = batch; ci != NULL; ci = ci->ci_next)
		ci->ci_alloc.sv_nr = 0; /* its space is mapped: keep it */
	commit_fail_all(e, batch, -EIO);
}

static bool cq_empty(struct eng_cqueue *q)
{
	bool empty;

	pthread_mutex_lock(&q->cq_lock);
	empty = q->cq_head == NULL;
	pthread_mutex_unlock(&q->cq_lock);
	return empty;
}

/* One batch: apply all maps in one transaction, commit.  The commit's own
 * data sync makes the previous commit durable; the last one of a burst is
 * synced explicitly.  With the metadata on NVRAM the commit synced its
 * meta page too: the batch is durable at once. */
static void commit_batch_do(struct eng *e, struct eng_citem *batch);

static void commit_batch(struct eng *e, struct eng_citem *batch)
{
	commit_batch_do(e, batch);
	comp_gen_settle(e); /* committed or discarded: the second bump */
}

static void commit_batch_do(struct eng *e, struct eng_citem *batch)
{
	struct eng_citem *hard = NULL, *prev;
	uint64_t t0 = mono_us(), t1, t2, seq, pseq;
	MDB_txn *txn;
	int rc;

	rc = meta_wtxn_open(&e->e_meta, &txn);
	if (rc != 0) {
		commit_fail_all(e, batch, meta_err(rc, "begin commit"));
		return;
	}
	rc = commit_apply(e, txn, &batch, &hard);
	t1 = mono_us();
	gp_add(&e->e_gp.gp_apply_us, t1 - t0);
	if (rc != 0 || batch == NULL) {
		mdb_txn_abort(txn);
		if (hard != NULL)
			commit_fail(e, hard, rc);
		if (batch != NULL)
			cq_put(&e->e_commitq, batch, list_last(batch), true);
		else
			commit_make_stable(e);
		return;
	}
	if (FAULT_HIT("commit.before")) {
		mdb_txn_abort(txn);
		err_set(-EIO, "fault point commit.before");
		commit_fail_all(e, batch, -EIO);
		commit_make_stable(e);
		return;
	}
	rc = meta_txn_commit_ship(&e->e_meta, txn, &seq);
	if (rc != 0) {
		commit_fail_all(e, batch, meta_err(rc, "group commit"));
		commit_make_stable(e);
		return;
	}
	t2 = mono_us();
	gp_add(&e->e_gp.gp_cbatches, 1);
	gp_add(&e->e_gp.gp_commit_us, t2 - t1);
	addb_add(ADDB_COMMIT_BATCHES, 0, 1);
	addb_add(ADDB_COMMIT_ITEMS, 0, list_len(batch));
	addb_obs(ADDB_COMMIT_SYNC, 0, (t2 - t0) * 1000);
	if (addb_tracing())
		addb_rec(ADDB_R_COMMIT, 0, list_len(batch), 0, (t2 - t0) * 1000);
	if (e->e_chook != NULL)
		e->e_chook(e->e_chook_arg, t2 - t0, list_len(batch));
	commit_executed(batch, list_len(batch));
	if (e->e_meta_nv) {
		commit_durable(e, batch, seq);
	} else {
		prev = e->e_unstable;
		pseq = e->e_unstable_seq;
		e->e_unstable = batch;
		e->e_unstable_seq = seq;
		__atomic_store_n(&e->e_unstable_any, true, __ATOMIC_RELEASE);
		if (prev != NULL)
			commit_durable(e, prev, pseq);
	}
	gp_add(&e->e_gp.gp_cb_us, mono_us() - t2);
}

/*
 * A lone batch: when nothing else is on its way (gc_coming() zero,
 * nothing queued for either stage, no commit waiting to become durable)
 * and the committer is idle, the syncer commits the batch and makes it
 * durable itself, saving two thread hand-offs on the path of a lone
 * update.  Same steps, same order, under the committer's lock.  With the
 * metadata on NVRAM a commit costs little next to a device sync, so the
 * syncer commits every batch so whenever the committer is idle and has
 * nothing queued (batches still commit in order).  Returns whether it did.
 */
static bool commit_direct(struct eng *e, struct eng_citem *batch)
{
	bool done = false;

	if ((!e->e_meta_nv && (gc_coming(e) != 0 || !cq_empty(&e->e_syncq))) ||
	    !cq_empty(&e->e_commitq) ||
	    pthread_mutex_trylock(&e->e_cmlock) != 0)
		return false;
	if (e->e_unstable == NULL && cq_empty(&e->e_commitq)) {
		commit_batch(e, batch);
		commit_make_stable(e);
		gp_add(&e->e_gp.gp_direct, 1);
		done = true;
	}
	pthread_mutex_unlock(&e->e_cmlock);
	return done;
}

/* Stage 1 of one batch, e_slock held: devices synced, then the batch
 * committed here (commit_direct) or handed to the committer. */
static void sync_stage(struct eng *e, struct eng_citem *batch)
{
	uint64_t t0 = mono_us();

	gp_add(&e->e_gp.gp_sbatches, 1);
	gp_add(&e->e_gp.gp_sitems, list_len(batch));
	batch = commit_sync_devices(e, batch);
	gp_add(&e->e_gp.gp_dsync_us, mono_us() - t0);
	if (batch != NULL && !commit_direct(e, batch))
		cq_put(&e->e_commitq, batch, list_last(batch), false);
}

/* Stage 1: make the data of a batch durable, then hand it to stage 2.  The
 * two stages overlap: batch k+1's device syncs run while batch k's LMDB
 * commit syncs the metadata file. */
void *eng_syncer_main(void *arg)
{
	struct eng *e = arg;
	struct eng_citem *batch;

	eng_thread_enter();
	while ((batch = cq_take(&e->e_syncq)) != NULL) {
		uint64_t t0 = mono_us();
		uint64_t rep = __atomic_load_n(&e->e_rep_us, __ATOMIC_ACQUIRE);

		if (rep != 0 && t0 >= rep && t0 - rep < ENG_GATHER_MAX_US) {
			gp_add(&e->e_gp.gp_ret, 1);
			gp_add(&e->e_gp.gp_ret_us, t0 - rep);
		}
		pthread_mutex_lock(&e->e_slock);
		t0 = mono_us();

		__atomic_store_n(&e->e_sbusy, true, __ATOMIC_RELEASE);
		batch = cq_gather(e, &e->e_syncq, batch);
		gp_add(&e->e_gp.gp_gather_us, mono_us() - t0);
		sync_stage(e, batch);
		__atomic_store_n(&e->e_sbusy, false, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&e->e_slock);
	}
	eng_cq_stop(&e->e_commitq);
	eng_thread_leave();
	return NULL;
}

/* Is anything on its way to the committer: updates queued for
 * eng_exec() or in it (gc_coming), items queued for the syncer or a batch
 * being synced? */
static bool commit_upstream_busy(struct eng *e)
{
	return gc_coming(e) != 0 ||
	       __atomic_load_n(&e->e_sbusy, __ATOMIC_ACQUIRE) ||
	       !cq_empty(&e->e_syncq);
}

/* Stage 2: one LMDB transaction and commit per batch.  A commit leaves its
 * meta page unsynced (e_unstable): when another batch is on its way, the
 * committer waits up to ENG_STABLE_WAIT_US for it, and that batch's commit
 * sync makes the previous one durable too; otherwise (or on time-out) an
 * explicit mdb_env_sync() does. */
void *eng_committer_main(void *arg)
{
	struct eng *e = arg;
	struct eng_citem *batch;

	eng_thread_enter();
	for (;;) {
		bool unstable;

		pthread_mutex_lock(&e->e_cmlock);
		unstable = e->e_unstable != NULL;
		pthread_mutex_unlock(&e->e_cmlock);
		if (!unstable) {
			batch = cq_take(&e->e_commitq);
		} else {
			uint64_t t0 = mono_us();

			batch = cq_take_within(&e->e_commitq,
					       commit_upstream_busy(e) &&
					       !gc_loop(e) ?
					       ENG_STABLE_WAIT_US : 0);
			gp_add(&e->e_gp.gp_swait, 1);
			gp_add(&e->e_gp.gp_swait_us, mono_us() - t0);
			gp_add(&e->e_gp.gp_swait_hit, batch != NULL);
		}
		pthread_mutex_lock(&e->e_cmlock);
		if (batch != NULL)
			commit_batch(e, batch);
		else if (e->e_unstable != NULL)
			commit_make_stable(e);
		else
			unstable = false;
		pthread_mutex_unlock(&e->e_cmlock);
		if (batch == NULL && !unstable && cq_empty(&e->e_commitq))
			break;
	}
	eng_thread_leave();
	return NULL;
}

/* ------------------------------------------------------- execution */

/* Fold one update's eng_exec() time into e_exec_ns (1/8 weight; races
 * between workers only blur the average). */
static void exec_time_note(struct eng *e, uint64_t ns)
{
	uint64_t avg = __atomic_load_n(&e->e_exec_ns, __ATOMIC_RELAXED);

	avg = avg - avg / 8 + ns / 8;
	__atomic_store_n(&e->e_exec_ns, avg, __ATOMIC_RELAXED);
}

/* Run r on the module that owns its kind. */
static int eng_exec_kind(struct eng *e, struct eng_req *r)
{
	switch (r->er_kind) {
	case ER_OBJ_READ:
	case ER_OBJ_WRITE:
	case ER_OBJ_ALLOC:
	case ER_OBJ_FREE:
		return obj_exec(e, r);
	case ER_IDX_GET:
	case ER_IDX_PUT:
	case ER_IDX_DEL:
	case ER_IDX_NEXT:
		return idx_exec(e, r);
	default:
		return ent_exec(e, r);
	}
}

/* An update starts: one reported update fewer may come back. */
static void rep_back(struct eng *e)
{
	uint32_t n = __atomic_load_n(&e->e_rep_n, __ATOMIC_ACQUIRE);

	while (n > 0 && !__atomic_compare_exchange_n(&e->e_rep_n, &n, n - 1,
						     false, __ATOMIC_ACQ_REL,
						     __ATOMIC_ACQUIRE))
		;
}

void eng_update_coming(struct eng *e, struct eng_req *r)
{
	if (eng_req_readonly(r) || r->er_coming)
		return;
	r->er_coming = true;
	__atomic_add_fetch(&e->e_coming, 1, __ATOMIC_RELEASE);
}

/* Updates are counted in e_inexec from here until their commit item is
 * queued (eng_commit_submit) or they fail, so that the group-commit window
 * knows whether anything may still join a batch. */
int eng_exec(struct eng *e, struct eng_req *r)
{
	bool upd = !eng_req_readonly(r);
	uint64_t t0 = 0;
	int rc;

	if (!upd) {
		/* reads, sampled into FDMI heat records (core/fdmi_log.h) */
		if (r->er_kind == ER_OBJ_READ && !r->er_no_fdmi && eng_fdmi_on(e))
			eng_fdmi_read_note(e, r);
		return eng_exec_kind(e, r);
	}
	t0 = mono_us();
	__atomic_add_fetch(&e->e_inexec, 1, __ATOMIC_RELEASE);
	if (r->er_coming) {
		r->er_coming = false;
		__atomic_sub_fetch(&e->e_coming, 1, __ATOMIC_RELEASE);
	}
	rep_back(e);
	t_inexec = e;
	rc = eng_exec_kind(e, r);
	if (t_inexec == e) {
		/* Failed before queueing: wake a window waiting for it. */
		t_inexec = NULL;
		__atomic_sub_fetch(&e->e_inexec, 1, __ATOMIC_RELEASE);
		pthread_mutex_lock(&e->e_syncq.cq_lock);
		pthread_cond_signal(&e->e_syncq.cq_cond);
		pthread_mutex_unlock(&e->e_syncq.cq_lock);
	} else {
		exec_time_note(e, ((t_exec_end != 0 ? t_exec_end : mono_us()) -
				   t0) * 1000);
	}
	t_exec_end = 0;
	return rc;
}

bool eng_req_readonly(const struct eng_req *r)
{
	switch (r->er_kind) {
	case ER_OBJ_READ:
	case ER_IDX_GET:
	case ER_IDX_NEXT:
	case ER_ENT_OPEN:
	case ER_ENT_GETATTR:
		return true;
	default:
		return false;
	}
}
