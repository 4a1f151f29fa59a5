/*
 * space.c — device space of the engine: taking and releasing it, and the
 * reclaimer thread that releases unmapped space after an RCU grace period
 * (or, fenced, at a given time).  See engine.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <urcu.h>

#include "addb/addb.h"
#include "core/engine_internal.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"

/* ------------------------------------------------------------ space */

int eng_spacevec_add(struct eng_spacevec *sv, uint32_t dev, uint64_t off,
		     uint64_t len)
{
	if (sv->sv_nr == sv->sv_cap) {
		uint32_t cap = sv->sv_cap ? sv->sv_cap * 2 : 8;
		struct eng_space *v = realloc(sv->sv_v, cap * sizeof *v);

		if (v == NULL)
			return err_set(-ENOMEM, "space vector of %u", cap);
		sv->sv_v = v;
		sv->sv_cap = cap;
	}
	sv->sv_v[sv->sv_nr++] = (struct eng_space){dev, off, len};
	return 0;
}

void eng_spacevec_fini(struct eng_spacevec *sv)
{
	free(sv->sv_v);
	memset(sv, 0, sizeof *sv);
}

void eng_space_gauge(struct eng *e, uint32_t dev)
{
	struct eng_dev *d = &e->e_devs[dev];

	if (d->ed_dev == NULL)
		return;
	pthread_mutex_lock(&d->ed_alloc.al_lock);
	d->ed_alloc.al_addb = tier_dev_addb(d->ed_dev) + 1;
	addb_set(ADDB_DEV_FREE, d->ed_alloc.al_addb - 1,
		 d->ed_alloc.al_free << LIM_ALLOC_UNIT_SHIFT);
	pthread_mutex_unlock(&d->ed_alloc.al_lock);
}

/* Take bytes on device dev, in as few runs as the free space allows. */
int eng_space_take(struct eng *e, uint32_t dev, uint64_t bytes, uint64_t gran,
		   struct eng_spacevec *sv)
{
	struct alloc *a = &e->e_devs[dev].ed_alloc;
	uint64_t want = bytes >> LIM_ALLOC_UNIT_SHIFT;
	uint32_t first = sv->sv_nr;
	bool drained = false;
	int rc = 0;

	while (want > 0 && rc == 0) {
		uint64_t start, got;

		rc = alloc_take(a, want, gran >> LIM_ALLOC_UNIT_SHIFT, &start,
				&got);
		/* Space freed by commits already reported may still be on
		 * its way back (the reclaimer's grace period): wait for it
		 * once before saying -ENOSPC. */
		if (rc == -ENOSPC && !drained) {
			drained = true;
			if (eng_reclaim_drain(e)) {
				rc = 0;
				continue;
			}
		}
		if (rc == 0) {
			rc = eng_spacevec_add(sv, dev, start << LIM_ALLOC_UNIT_SHIFT,
					      got << LIM_ALLOC_UNIT_SHIFT);
			if (rc != 0)
				alloc_release(a, start, got);
			want -= got;
		}
	}
	if (rc == -ENOSPC)
		err_set(rc, "device %u (%s): no space for %" PRIu64 " bytes",
			dev, e->e_devs[dev].ed_dev->td_path, bytes);
	if (rc != 0) {
		struct eng_spacevec tail = {sv->sv_v + first, sv->sv_nr - first, 0};

		eng_space_release(e, &tail);
		sv->sv_nr = first;
	}
	return rc;
}

void eng_space_release_durable(struct eng *e, struct eng_spacevec *sv)
{
	if (mdb_env_sync(e->e_meta.m_env, 1) != 0) {
		LOG_WARNING("metadata sync failed: %u freed runs kept in use "
			    "until the next open", sv->sv_nr);
		return;
	}
	synchronize_rcu();
	eng_space_release(e, sv);
}

/* Return every space of sv to its device now. */
void eng_space_release(struct eng *e, struct eng_spacevec *sv)
{
	for (uint32_t i = 0; i < sv->sv_nr; i++) {
		struct eng_space *s = &sv->sv_v[i];

		alloc_release(&e->e_devs[s->sp_dev].ed_alloc,
			      s->sp_off >> LIM_ALLOC_UNIT_SHIFT,
			      s->sp_len >> LIM_ALLOC_UNIT_SHIFT);
	}
}

/* Take every queued deferral and every fenced one whose time has come;
 * NULL when stopping and none is left.  Waits until the earliest fence.
 * *gen: e_rq_gen when the queue was taken (every deferral up to it is in
 * the list). */
static struct eng_deferred *reclaim_take(struct eng *e, uint64_t *gen)
{
	struct eng_deferred *list;

	pthread_mutex_lock(&e->e_rlock);
	for (;;) {
		struct eng_deferred **pp = &e->e_fhead, *df;
		uint64_t now = eng_now_ns(), next = UINT64_MAX;
		struct timespec ts;

		list = e->e_rhead;
		e->e_rhead = NULL;
		*gen = e->e_rq_gen;
		while ((df = *pp) != NULL) {
			if (df->df_at <= now) {
				*pp = df->df_next;
				df->df_next = list;
				list = df;
				e->e_fenced_bytes -= df->df_bytes;
			} else {
				next = df->df_at < next ? df->df_at : next;
				pp = &df->df_next;
			}
		}
		if (list != NULL || e->e_rstop)
			break;
		if (next == UINT64_MAX) {
			pthread_cond_wait(&e->e_rcond, &e->e_rlock);
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		pthread_cond_timedwait(&e->e_rcond, &e->e_rlock, &ts);
	}
	pthread_mutex_unlock(&e->e_rlock);
	return list;
}

/* The reclaimer: one grace period per round serves every deferral queued
 * before it started.  A thread of our own (rather than call_rcu()) keeps the
 * hand-off visible to ThreadSanitizer and bounded in memory by the queue.
 * Fenced space (eng_space_release_at) comes back the same way once its
 * time has passed. */
void *eng_reclaimer_main(void *arg)
{
	struct eng *e = arg;
	struct eng_deferred *list, *next;
	uint64_t gen;

	while ((list = reclaim_take(e, &gen)) != NULL) {
		/* Test builds: a slow grace period (tests/smr_ut.c enospc). */
		if (FAULT_HIT("eng.reclaim.slow"))
			usleep(300 * 1000);
		synchronize_rcu();
		for (; list != NULL; list = next) {
			next = list->df_next;
			if (list->df_at != 0)
				LOG_INFO("store %s: %" PRIu64 " bytes of abandoned "
					 "unit writes released (their fence "
					 "passed)", e->e_dir, list->df_bytes);
			eng_space_release(e, &list->df_sv);
			eng_spacevec_fini(&list->df_sv);
			free(list);
		}
		pthread_mutex_lock(&e->e_rlock);
		e->e_rd_gen = gen;
		pthread_cond_broadcast(&e->e_rdone);
		pthread_mutex_unlock(&e->e_rlock);
	}
	pthread_mutex_lock(&e->e_rlock);
	e->e_rd_gen = UINT64_MAX; /* stopped: nobody waits any more */
	pthread_cond_broadcast(&e->e_rdone);
	pthread_mutex_unlock(&e->e_rlock);
	return NULL;
}

bool eng_reclaim_drain(struct eng *e)
{
	uint64_t until = eng_now_ns() + ENG_DRAIN_MAX_NS, target;
	struct timespec ts = {(time_t)(until / 1000000000ull),
			      (long)(until % 1000000000ull)};
	bool pending;

	/* A reader inside an RCU read-side section would hold up the grace
	 * period the reclaimer waits for: never wait there. */
	if (rcu_read_ongoing() || !e->e_rrunning)
		return false;
	pthread_mutex_lock(&e->e_rlock);
	target = e->e_rq_gen;
	pending = e->e_rd_gen < target;
	while (e->e_rd_gen < target &&
	       pthread_cond_timedwait(&e->e_rdone, &e->e_rlock, &ts) == 0)
		;
	pthread_mutex_unlock(&e->e_rlock);
	return pending;
}

void eng_space_release_at(struct eng *e, struct eng_spacevec *sv,
			  uint64_t not_before_ns)
{
	struct eng_deferred *df;
	uint64_t bytes = 0;

	if (sv->sv_nr == 0)
		return;
	if (not_before_ns <= eng_now_ns()) {
		eng_space_release(e, sv);
		eng_spacevec_fini(sv);
		return;
	}
	df = calloc(1, sizeof *df);
	if (df == NULL) {
		/* Kept in use until the next open, which is safe. */
		LOG_WARNING("store %s: out of memory: %u abandoned runs kept "
			    "in use until the next open", e->e_dir, sv->sv_nr);
		eng_spacevec_fini(sv);
		return;
	}
	for (uint32_t i = 0; i < sv->sv_nr; i++)
		bytes += sv->sv_v[i].sp_len;
	df->df_sv = *sv;
	df->df_at = not_before_ns;
	df->df_bytes = bytes;
	memset(sv, 0, sizeof *sv);
	pthread_mutex_lock(&e->e_rlock);
	df->df_next = e->e_fhead;
	e->e_fhead = df;
	e->e_fenced_bytes += bytes;
	pthread_cond_signal(&e->e_rcond);
	pthread_mutex_unlock(&e->e_rlock);
}

uint64_t eng_space_fenced(struct eng *e)
{
	uint64_t v;

	pthread_mutex_lock(&e->e_rlock);
	v = e->e_fenced_bytes;
	pthread_mutex_unlock(&e->e_rlock);
	return v;
}

/* Release sv once no reader can still see a map pointing into it.  sv is
 * taken over (emptied). */
void eng_space_release_deferred(struct eng *e, struct eng_spacevec *sv)
{
	struct eng_deferred *df;

	if (sv->sv_nr == 0)
		return;
	df = malloc(sizeof *df);
	if (df == NULL) {
		synchronize_rcu();
		eng_space_release(e, sv);
		eng_spacevec_fini(sv);
		return;
	}
	df->df_sv = *sv;
	df->df_at = 0;
	df->df_bytes = 0;
	memset(sv, 0, sizeof *sv);
	pthread_mutex_lock(&e->e_rlock);
	e->e_rq_gen++;
	df->df_next = e->e_rhead;
	e->e_rhead = df;
	pthread_cond_signal(&e->e_rcond);
	pthread_mutex_unlock(&e->e_rlock);
}
