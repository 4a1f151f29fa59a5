/*
 * engine.c — store open/create, devices, space, and the group committer.
 * See engine.h for the contract and the data path.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <urcu.h>

#include "core/engine.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/stripe.h"
#include "layouts/ec.h"

/* Test builds: a point where the process kills itself with SIGKILL when
 * armed (tests/crash/crash_test.sh: a create stopped there). */
#define FAULT_KILL(name) (FAULT_HIT(name) && raise(SIGKILL) == 0)

/* The committer waits this long for the next batch before it syncs the
 * last commit's meta page itself (only while updates are on their way):
 * about one metadata fdatasync on the disks we measured, so waiting costs
 * the last op of a burst no more than the sync it saves the others. */
#define ENG_STABLE_WAIT_US 300u

/* The longest group-commit window (cq_gather): a batch waits for updates
 * in execution at most this long, whatever their usual duration. */
#define ENG_GATHER_MAX_US 2000u
#define STORE_MAGIC 0x5354524154415354ull /* "STRATAST" */

/** sys/store: the store's identity. */
struct store_rec {
	uint64_t st_magic;
	uint32_t st_version;
	uint32_t st_nr_devs;
	uint8_t st_uuid[16];
	uint64_t st_ctime_ns;
};
_Static_assert(sizeof(struct store_rec) == 40, "store_rec on-disk size");

/** sys/dev.N: one device. */
struct dev_rec {
	uint32_t dr_tier;
	uint32_t dr_state; /**< enum eng_dev_state | flags << 16 */
	uint64_t dr_size;
	char dr_path[LIM_PATH_MAX + 1];
};
_Static_assert(sizeof(struct dev_rec) == 272, "dev_rec on-disk size");

/** Group-commit profile: totals since open, logged at close (LOG_INFO,
 *  STRATA_LOG=3), so a benchmark shows where a batch's time goes.  Times
 *  in microseconds, summed over batches; relaxed atomic adds. */
struct eng_gcprof {
	uint64_t gp_sbatches;   /* batches through the sync stage */
	uint64_t gp_sitems;     /* their items */
	uint64_t gp_gather_us;  /* cq_gather: waiting for more items */
	uint64_t gp_gend[3];    /* gathers ended: none coming, gap, window */
	uint64_t gp_dsync_us;   /* commit_sync_devices */
	uint64_t gp_direct;     /* batches committed by commit_direct */
	uint64_t gp_release_here; /* held items run here (eng_commit_release) */
	uint64_t gp_cbatches;   /* LMDB commits (commit_batch) */
	uint64_t gp_apply_us;   /* mdb_txn_begin + commit_apply */
	uint64_t gp_commit_us;  /* mdb_txn_commit */
	uint64_t gp_msync;      /* explicit meta syncs (mdb_env_sync) */
	uint64_t gp_msync_us;
	uint64_t gp_swait;      /* committer waits with a commit unstable */
	uint64_t gp_swait_us;
	uint64_t gp_swait_hit;  /* of which a batch came */
	uint64_t gp_cb_us;      /* EXECUTED and STABLE reports (callbacks) */
	uint64_t gp_ret;        /* batches whose first item came back within
				 * ENG_GATHER_MAX_US of a report (a loop) */
	uint64_t gp_ret_us;     /* their time from that report to the first
				 * item reaching the syncer */
};

/** A queue of commit items between two stages of the group commit. */
struct eng_cqueue {
	pthread_mutex_t cq_lock;
	pthread_cond_t cq_cond;
	struct eng_citem *cq_head;
	struct eng_citem *cq_tail;
	bool cq_stop;
	bool cq_gathering; /* the syncer is in cq_gather() */
};

struct eng {
	char e_dir[LIM_PATH_MAX + 1];
	int e_lockfd;
	struct meta e_meta;
	struct store_rec e_store;
	uint32_t e_nr_devs;
	struct eng_dev e_devs[LIM_DEV_MAX];
	uint32_t e_dev_tier[LIM_DEV_MAX];
	struct layout_pool e_pool;
	/* group commit: syncer (device data) then committer (LMDB) */
	struct eng_cqueue e_syncq;
	struct eng_cqueue e_commitq;
	pthread_t e_syncer;
	pthread_t e_committer;
	bool e_crunning;
	struct eng_citem *e_unstable; /* committed, meta page not yet synced */
	bool e_unstable_any;          /* e_unstable != NULL (atomic copy) */
	uint32_t e_inexec;  /* updates in eng_exec() not yet queued (atomic) */
	uint32_t e_coming;  /* updates queued for eng_exec() (atomic) */
	/* updates reported done (commit_finish) whose threads have not yet
	 * started another (eng_exec), and when the last report was (mono_us;
	 * both atomic): gc_returning() */
	uint32_t e_rep_n;
	uint64_t e_rep_us;
	uint64_t e_exec_ns; /* moving average of an update's eng_exec() */
	bool e_sbusy;       /* the syncer holds a batch (atomic) */
	/* held while a batch goes through the sync stage (syncer, or the
	 * submitting thread of a lone update: eng_commit_submit_here) */
	pthread_mutex_t e_slock;
	/* held while a batch is committed or made durable (committer, or the
	 * syncer for a lone batch: commit_direct); guards e_unstable */
	pthread_mutex_t e_cmlock;
	struct tier_io e_syncio[LIM_DEV_MAX]; /* syncer: one sync per device */
	uint32_t e_syncdev[LIM_DEV_MAX];      /* device of e_syncio[i] */
	void (*e_chook)(void *, uint64_t, uint32_t);
	void *e_chook_arg;
	struct eng_gcprof e_gp;
	/* reclaimer: releases unmapped space after an RCU grace period */
	pthread_t e_reclaimer;
	pthread_mutex_t e_rlock;
	pthread_cond_t e_rcond;
	struct eng_deferred *e_rhead;
	/* fenced: space of abandoned writes, released at df_at (e_rlock) */
	struct eng_deferred *e_fhead;
	uint64_t e_fenced_bytes;
	bool e_rstop;
	bool e_rrunning;
	/* deferrals queued (e_rq_gen) and released (e_rd_gen), for
	 * eng_reclaim_drain(); e_rdone signals a finished round */
	uint64_t e_rq_gen, e_rd_gen;
	pthread_cond_t e_rdone;
	/* configuration: pools and default layouts (sys/conf, YAML) */
	struct conf e_conf;
	bool e_conf_loaded;
	uint32_t e_nr_pools;
	struct eng_pool *e_pools;
	/* unit layouts */
	pthread_mutex_t e_codec_lock;
	struct ec_codec *e_codecs[CLOVIS_LAYOUT_UNITS_MAX + 1]
				 [CLOVIS_LAYOUT_UNITS_MAX + 1];
	pthread_mutex_t e_glock;
	pthread_cond_t e_gcond;
	uint8_t e_gbusy[LIM_GLOCK_SLOTS];
	struct eng_ucounters e_uc;
	pthread_mutex_t e_dev_lock; /* device state changes and replace */
	bool e_model; /* device model on for every tier */
	/* the LMDB environment is on NVRAM (DATA_DIR/meta a link to it,
	 * meta_nv_make): every commit syncs its meta page (META_SYNC_META) and
	 * is durable at once, so STABLE comes with EXECUTED (commit_batch) */
	bool e_meta_nv;
	/* cluster stores: failure domain of each device (conf cd_domain) */
	uint32_t e_dev_domain[LIM_DEV_MAX];
	uint64_t e_serial; /* eng_serial() */
};

/* Serial numbers of opened engines (eng_serial). */
static uint64_t eng_serial_next;

/** Space to release after a grace period (see the reclaimer). */
struct eng_deferred {
	struct eng_deferred *df_next;
	struct eng_spacevec df_sv;
	uint64_t df_at;    /* fenced: not before this time (0: after RCU) */
	uint64_t df_bytes; /* fenced: the bytes of df_sv */
};

uint64_t eng_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Lower-case hex of v without leading zeros ("0" for 0) at p; returns the
 * end.  (Formatting by hand: clovis calls eng_id_str() on every op it
 * checks, and snprintf cost about as much as an index GET.) */
static char *hex_put(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	int shift = 60;

	while (shift > 0 && (v >> shift) == 0)
		shift -= 4;
	for (; shift >= 0; shift -= 4)
		*p++ = digits[(v >> shift) & 0xf];
	return p;
}

const char *eng_id_str(const struct clovis_id *id)
{
	static __thread char buf[CLOVIS_ID_STR_LEN];
	char *p = hex_put(buf, id->ci_hi);

	_Static_assert(CLOVIS_ID_STR_LEN >= 16 + 1 + 16 + 1, "id string");
	*p++ = ':';
	p = hex_put(p, id->ci_lo);
	*p = '\0';
	return buf;
}

uint64_t eng_serial(struct eng *e)
{
	return e->e_serial;
}

struct meta *eng_meta(struct eng *e)
{
	return &e->e_meta;
}

bool eng_meta_on_nvram(const struct eng *e)
{
	return e->e_meta_nv;
}

struct eng_dev *eng_dev_get(struct eng *e, uint32_t i)
{
	return i < e->e_nr_devs ? &e->e_devs[i] : NULL;
}

uint32_t eng_dev_domain(struct eng *e, uint32_t d)
{
	return d < e->e_nr_devs ? e->e_dev_domain[d] : 0;
}

uint32_t eng_dev_nr(struct eng *e)
{
	return e->e_nr_devs;
}

const struct layout_pool *eng_pool(struct eng *e)
{
	return &e->e_pool;
}

void eng_thread_enter(void)
{
	rcu_register_thread();
}

void eng_thread_leave(void)
{
	rcu_unregister_thread();
}

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
static void *reclaimer_main(void *arg)
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
static void eng_space_release_deferred(struct eng *e, struct eng_spacevec *sv)
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

/* ------------------------------------------------------ group commit */

static struct eng_citem *list_last(struct eng_citem *ci);
static uint32_t list_len(const struct eng_citem *ci);
static uint64_t mono_us(void);

/* Add v to a profile counter (e_gp). */
static void gp_add(uint64_t *c, uint64_t v)
{
	__atomic_add_fetch(c, v, __ATOMIC_RELAXED);
}

static void cq_init(struct eng_cqueue *q)
{
	memset(q, 0, sizeof *q);
	pthread_mutex_init(&q->cq_lock, NULL);
	pthread_cond_init(&q->cq_cond, NULL);
}

static void cq_fini(struct eng_cqueue *q)
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

static void cq_stop(struct eng_cqueue *q)
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
		    e->e_dev_tier[d] != CLOVIS_TIER_NVRAM)
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
static void commit_executed(struct eng_citem *batch)
{
	for (struct eng_citem *ci = batch; ci != NULL; ci = ci->ci_next)
		if (ci->ci_executed != NULL)
			ci->ci_executed(ci);
}

/* Make the last commit durable now (mdb_env_sync) and report its items
 * STABLE.  If the sync fails, they are visible but their durability is
 * unknown: they are reported failed with -EIO and a message saying so. */
static void commit_make_stable(struct eng *e)
{
	struct eng_citem *batch = e->e_unstable;
	uint64_t t0, t1;
	int rc = 0;

	if (batch == NULL)
		return;
	e->e_unstable = NULL;
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
		commit_finish(e, batch);
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
static void commit_batch(struct eng *e, struct eng_citem *batch)
{
	struct eng_citem *hard = NULL, *prev;
	uint64_t t0 = mono_us(), t1, t2;
	MDB_txn *txn;
	int rc;

	rc = mdb_txn_begin(e->e_meta.m_env, NULL, 0, &txn);
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
	rc = meta_txn_commit(&e->e_meta, txn);
	if (rc != 0) {
		commit_fail_all(e, batch, meta_err(rc, "group commit"));
		commit_make_stable(e);
		return;
	}
	t2 = mono_us();
	gp_add(&e->e_gp.gp_cbatches, 1);
	gp_add(&e->e_gp.gp_commit_us, t2 - t1);
	if (e->e_chook != NULL)
		e->e_chook(e->e_chook_arg, t2 - t0, list_len(batch));
	commit_executed(batch);
	if (e->e_meta_nv) {
		commit_finish(e, batch);
	} else {
		prev = e->e_unstable;
		e->e_unstable = batch;
		__atomic_store_n(&e->e_unstable_any, true, __ATOMIC_RELEASE);
		if (prev != NULL)
			commit_finish(e, prev);
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
static void *syncer_main(void *arg)
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
	cq_stop(&e->e_commitq);
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
static void *committer_main(void *arg)
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

/* ------------------------------------------------ devices and pools */

/* Turn the device model of device i on or off from the configuration (or
 * on with class defaults for every tier when the engine was opened so). */
static void eng_dev_model_apply(struct eng *e, uint32_t i)
{
	struct eng_dev *d = &e->e_devs[i];
	const struct conf_model *cm = &e->e_conf.c_model[d->ed_tier];
	struct tier_model m;

	if (!cm->cm_on && !e->e_model) {
		tier_dev_model_set(d->ed_dev, NULL);
		return;
	}
	tier_model_default(d->ed_tier, &m);
	if (cm->cm_on) {
		m.tm_read_lat_ns = cm->cm_read_lat_ns ? cm->cm_read_lat_ns :
				   m.tm_read_lat_ns;
		m.tm_write_lat_ns = cm->cm_write_lat_ns ? cm->cm_write_lat_ns :
				    m.tm_write_lat_ns;
		m.tm_sync_lat_ns = cm->cm_sync_lat_ns ? cm->cm_sync_lat_ns :
				   m.tm_sync_lat_ns;
		m.tm_read_bw = cm->cm_read_bw ? cm->cm_read_bw : m.tm_read_bw;
		m.tm_write_bw = cm->cm_write_bw ? cm->cm_write_bw : m.tm_write_bw;
	}
	tier_dev_model_set(d->ed_dev, &m);
}

bool eng_dev_usable(struct eng *e, uint32_t i)
{
	return i < e->e_nr_devs &&
	       __atomic_load_n(&e->e_devs[i].ed_state, __ATOMIC_ACQUIRE) ==
		       ED_ONLINE &&
	       tier_dev_reachable(e->e_devs[i].ed_dev);
}

bool eng_dev_unreachable(struct eng *e, uint32_t i)
{
	return i < e->e_nr_devs &&
	       __atomic_load_n(&e->e_devs[i].ed_state, __ATOMIC_ACQUIRE) ==
		       ED_ONLINE &&
	       !tier_dev_reachable(e->e_devs[i].ed_dev);
}

bool eng_dev_recheck(struct eng *e, uint32_t i)
{
	return eng_dev_unreachable(e, i) &&
	       tier_dev_recheck(e->e_devs[i].ed_dev) && eng_dev_usable(e, i);
}

static bool dev_path_remote(const char *path);

/*
 * Device paths in sys/dev.N (issue 26 point 9).  A device file inside the
 * data directory is recorded relative to it ("devices/flash1.dev", or
 * "strata-UUID-nvram0.dev" when the NVRAM directory is the data directory),
 * so a store whose directory is renamed, moved or copied opens its own
 * files; a device outside it (the NVRAM device in /dev/shm, a configured
 * path elsewhere) is recorded absolute, as it was.  Stores made before
 * recorded every path as made: absolute (or relative to the working
 * directory for a relative data directory); dev_path_open() still finds
 * those (below).
 */

/* The form of path to record for a device of e: relative to the data
 * directory when inside it. */
static void dev_path_store(const struct eng *e, const char *path, char *out,
			   size_t len)
{
	size_t n = strlen(e->e_dir);

	while (n > 1 && e->e_dir[n - 1] == '/')
		n--;
	if (strncmp(path, e->e_dir, n) == 0 && path[n] == '/' &&
	    path[n + 1] != '\0' && !dev_path_remote(path))
		snprintf(out, len, "%s", path + n + 1);
	else
		snprintf(out, len, "%s", path);
}

/* The path to open for a device recorded as rec: a relative record inside
 * the data directory; an absolute one as recorded, but when it is outside
 * the data directory and names X/devices/NAME while DIR/devices/NAME
 * exists (or X/NAME while DIR/NAME exists: an NVRAM device kept in the
 * data directory), that one (a store of the old format, moved or copied:
 * the superblock's uuid and index are checked at open all the same); a
 * relative record that is not in the data directory but exists from the
 * working directory, as recorded (old format, relative data directory). */
static void dev_path_open(const struct eng *e, const char *rec, char *out,
			  size_t len)
{
	const char *base;
	size_t n = strlen(e->e_dir);
	int k;

	while (n > 1 && e->e_dir[n - 1] == '/')
		n--;
	if (dev_path_remote(rec)) {
		snprintf(out, len, "%s", rec);
		return;
	}
	if (rec[0] != '/') {
		snprintf(out, len, "%.*s/%s", (int)n, e->e_dir, rec);
		if (access(out, F_OK) != 0 && access(rec, F_OK) == 0)
			snprintf(out, len, "%s", rec);
		return;
	}
	snprintf(out, len, "%s", rec);
	if (strncmp(rec, e->e_dir, n) == 0 && rec[n] == '/')
		return;
	if (access(rec, F_OK) == 0 && strncmp(rec, "/dev/shm/", 9) == 0)
		return; /* the NVRAM device of a store on /dev/shm */
	base = strrchr(rec, '/');
	if (base - rec >= 8 && strncmp(base - 8, "/devices", 8) == 0)
		k = snprintf(out, len, "%.*s/devices%s", (int)n, e->e_dir,
			     base);
	else
		k = snprintf(out, len, "%.*s%s", (int)n, e->e_dir, base);
	if (k < 0 || (size_t)k >= len || access(out, F_OK) != 0)
		snprintf(out, len, "%s", rec);
	else
		LOG_INFO("store %s: device recorded as %s opened as %s (the "
			 "store was moved or copied)", e->e_dir, rec, out);
}

/* Write device i's record with its state (caller holds e_dev_lock). */
static int dev_rec_save(struct eng *e, uint32_t i)
{
	struct eng_dev *d = &e->e_devs[i];
	struct dev_rec dr = {.dr_tier = d->ed_tier,
			     .dr_state = d->ed_state | d->ed_flags << 16,
			     .dr_size = tier_dev_size(d->ed_dev)};
	char name[16];

	dev_path_store(e, d->ed_dev->td_path, dr.dr_path, sizeof dr.dr_path);
	snprintf(name, sizeof name, "dev.%u", i);
	return eng_sys_save(e, name, &dr, sizeof dr);
}

int eng_dev_state_set(struct eng *e, uint32_t i, uint32_t state,
		      uint32_t flags)
{
	int rc;

	if (i >= e->e_nr_devs)
		return err_set(-EINVAL, "device %u: no such device (the store "
			       "has %u)", i, e->e_nr_devs);
	pthread_mutex_lock(&e->e_dev_lock);
	__atomic_store_n(&e->e_devs[i].ed_state, state, __ATOMIC_RELEASE);
	e->e_devs[i].ed_flags = flags;
	rc = dev_rec_save(e, i);
	pthread_mutex_unlock(&e->e_dev_lock);
	return rc;
}

int eng_dev_fail(struct eng *e, uint32_t i, const char *reason)
{
	if (i >= e->e_nr_devs)
		return err_set(-EINVAL, "device %u: no such device (the store "
			       "has %u)", i, e->e_nr_devs);
	if (e->e_devs[i].ed_state != ED_ONLINE)
		return 0;
	LOG_ERROR("device %u (%s) failed: %s", i, e->e_devs[i].ed_dev->td_path,
		  reason);
	return eng_dev_state_set(e, i, ED_FAILED, 0);
}

void eng_dev_io_error(struct eng *e, uint32_t i)
{
	struct eng_dev *d = eng_dev_get(e, i);
	char why[64];

	if (d == NULL || tier_dev_errors(d->ed_dev) < LIM_DEV_ERRORS_MAX)
		return;
	snprintf(why, sizeof why, "%" PRIu64 " I/O errors",
		 tier_dev_errors(d->ed_dev));
	eng_dev_fail(e, i, why);
}

int eng_dev_replace(struct eng *e, uint32_t i, const char *path)
{
	struct tier_format_opts fo = {0};
	struct tier_dev *nd = NULL, *od;
	struct eng_dev *d;
	int rc;

	if (i >= e->e_nr_devs)
		return err_set(-EINVAL, "device %u: no such device (the store "
			       "has %u)", i, e->e_nr_devs);
	d = &e->e_devs[i];
	if (path == NULL || path[0] == '\0' || strlen(path) > LIM_PATH_MAX)
		return err_set(-EINVAL, "device %u: replacement path empty or "
			       "longer than %u", i, LIM_PATH_MAX);
	if (d->ed_state != ED_REPAIRED)
		return err_set(-EBUSY, "device %u (%s) is %s: only a failed and "
			       "repaired device can be replaced (strata device "
			       "fail, then strata repair)", i,
			       d->ed_dev->td_path,
			       d->ed_state == ED_ONLINE ? "online" :
			       "failed but not repaired");
	if (tier_dev_zoned(d->ed_dev))
		fo.tf_zone_size = tier_dev_zone_size(d->ed_dev);
	rc = tier_dev_format_opts(path, d->ed_tier, e->e_store.st_uuid, i,
				  tier_dev_size(d->ed_dev), &fo);
	if (rc == 0)
		rc = tier_dev_open(&nd, path, d->ed_tier, e->e_store.st_uuid, i);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&e->e_dev_lock);
	od = d->ed_dev;
	/* The old device holds no mapped unit (repaired); plain extents
	 * still on it are lost with it and read as errors. */
	d->ed_dev = nd;
	d->ed_flags = EDF_REBALANCE;
	__atomic_store_n(&d->ed_state, ED_ONLINE, __ATOMIC_RELEASE);
	rc = dev_rec_save(e, i);
	pthread_mutex_unlock(&e->e_dev_lock);
	eng_dev_model_apply(e, i);
	synchronize_rcu(); /* no reader still uses the old handle */
	tier_dev_close(od);
	return rc;
}

const struct eng_pool *eng_pool_get(struct eng *e, uint32_t p)
{
	return p < e->e_nr_pools ? &e->e_pools[p] : NULL;
}

uint32_t eng_pool_nr(struct eng *e)
{
	return e->e_nr_pools;
}

struct ec_codec *eng_codec(struct eng *e, uint32_t n, uint32_t k)
{
	struct ec_codec *c;

	if (n > CLOVIS_LAYOUT_UNITS_MAX || k > CLOVIS_LAYOUT_UNITS_MAX) {
		err_set(-EINVAL, "codec %u+%u out of range", n, k);
		return NULL;
	}
	pthread_mutex_lock(&e->e_codec_lock);
	c = e->e_codecs[n][k];
	if (c == NULL && ec_codec_create(&c, n, k) == 0)
		e->e_codecs[n][k] = c;
	pthread_mutex_unlock(&e->e_codec_lock);
	return c;
}

static bool glock_free(struct eng *e, const uint32_t *slots, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++)
		if (e->e_gbusy[slots[i]])
			return false;
	return true;
}

void eng_glock(struct eng *e, const uint32_t *slots, uint32_t nr)
{
	pthread_mutex_lock(&e->e_glock);
	while (!glock_free(e, slots, nr))
		pthread_cond_wait(&e->e_gcond, &e->e_glock);
	for (uint32_t i = 0; i < nr; i++)
		e->e_gbusy[slots[i]] = 1;
	pthread_mutex_unlock(&e->e_glock);
}

void eng_gunlock(struct eng *e, const uint32_t *slots, uint32_t nr)
{
	pthread_mutex_lock(&e->e_glock);
	for (uint32_t i = 0; i < nr; i++)
		e->e_gbusy[slots[i]] = 0;
	pthread_cond_broadcast(&e->e_gcond);
	pthread_mutex_unlock(&e->e_glock);
}

void eng_default_layout(struct eng *e, const struct clovis_id *c,
			struct meta_ent *me)
{
	const struct conf_layout *l = conf_layout_for(&e->e_conf, c);

	me->me_layout = l->cl_type;
	me->me_tier = l->cl_tier;
	me->me_pool = l->cl_pool;
	me->me_n = (uint8_t)l->cl_n;
	me->me_k = (uint8_t)l->cl_k;
	me->me_s = (uint8_t)l->cl_s;
	me->me_unit_shift = (uint8_t)l->cl_unit_shift;
}

uint32_t eng_default_pool(struct eng *e)
{
	const struct conf_layout *l = &e->e_conf.c_default_layout;

	if (stripe_layout(l->cl_type))
		return l->cl_pool;
	for (uint32_t p = 0; p < e->e_nr_pools; p++)
		if (strcmp(e->e_pools[p].ep_name, "flash") == 0)
			return p;
	return 0;
}

struct eng_ucounters *eng_ucounters(struct eng *e)
{
	return &e->e_uc;
}

/* ------------------------------------------------------ store set-up */

static void dev_path_make(char *out, size_t len, const struct eng_conf *c,
			  const uint8_t uuid[16], const struct conf_dev *cd)
{
	char u[33];

	if (cd->cd_path[0] != '\0') {
		snprintf(out, len, "%s", cd->cd_path);
		return;
	}
	for (int k = 0; k < 16; k++)
		snprintf(u + 2 * k, 3, "%02x", uuid[k]);
	if (cd->cd_tier == CLOVIS_TIER_NVRAM)
		snprintf(out, len, "%s/strata-%s-%s.dev",
			 c->ec_nvram_dir ? c->ec_nvram_dir : "/dev/shm", u,
			 cd->cd_name);
	else
		snprintf(out, len, "%s/devices/%s.dev", c->ec_dir, cd->cd_name);
}

/* Save the configuration text in sys/conf. */
static int store_conf_save(struct eng *e, MDB_txn *txn)
{
	char *text = NULL;
	int rc = conf_emit(&e->e_conf, &text);

	if (rc == 0)
		rc = meta_sys_put(txn, &e->e_meta, "conf", text, strlen(text));
	free(text);
	return rc;
}

/* Make the configured devices and record them in the store's metadata. */
/* A create that failed: remove the device files of its first nr devices
 * (an NVRAM device's file lives outside the data directory, in the NVRAM
 * directory, and would be left there otherwise). */
static void store_unmake_devices(struct eng *e, const struct eng_conf *c,
				 uint32_t nr)
{
	char path[LIM_PATH_MAX + 1];

	for (uint32_t j = 0; j < nr && j < e->e_conf.c_nr_devs; j++) {
		const struct conf_dev *cd = &e->e_conf.c_devs[j];

		if (cd->cd_remote[0] != '\0')
			continue;
		dev_path_make(path, sizeof path, c, e->e_store.st_uuid, cd);
		unlink(path);
	}
}

static int store_make_devices(struct eng *e, const struct eng_conf *c,
			      MDB_txn *txn)
{
	char dir[LIM_PATH_MAX + 16], name[16], path[LIM_PATH_MAX + 1];
	uint64_t size = c->ec_dev_size ? c->ec_dev_size :
			e->e_conf.c_dev_size ? e->e_conf.c_dev_size :
			LIM_DEV_SIZE_DEFAULT;
	int rc;

	snprintf(dir, sizeof dir, "%s/devices", c->ec_dir);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return err_set(-errno, "%s: %s", dir, strerror(errno));
	for (uint32_t i = 0; i < e->e_conf.c_nr_devs; i++) {
		const struct conf_dev *cd = &e->e_conf.c_devs[i];
		struct tier_format_opts fo = {.tf_zone_size = cd->cd_zone_size};
		struct dev_rec dr = {.dr_tier = cd->cd_tier,
				     .dr_size = cd->cd_size ? cd->cd_size : size};

		if (cd->cd_remote[0] != '\0') {
			/* Another server's device: nothing to make here. */
			snprintf(dr.dr_path, sizeof dr.dr_path, "%s%s",
				 ENG_REMOTE_PREFIX, cd->cd_remote);
			goto record;
		}
		dev_path_make(dr.dr_path, sizeof dr.dr_path, c,
			      e->e_store.st_uuid, cd);
		unlink(dr.dr_path); /* left by an interrupted create */
		rc = tier_dev_format_opts(dr.dr_path, cd->cd_tier,
					  e->e_store.st_uuid, i, dr.dr_size, &fo);
		if (rc == 0 && FAULT_KILL("store.create.kill"))
			return 0;
		if (rc == 0 && FAULT_HIT("store.create.dev"))
			rc = err_set(-ENOSPC, "store %s: device %u (%s): no "
				     "space left (fault point store.create.dev)",
				     c->ec_dir, i, dr.dr_path);
		if (rc != 0) {
			store_unmake_devices(e, c, i + 1);
			return rc;
		}
		dev_path_store(e, dr.dr_path, path, sizeof path);
		snprintf(dr.dr_path, sizeof dr.dr_path, "%s", path);
record:
		snprintf(name, sizeof name, "dev.%u", i);
		rc = meta_sys_put(txn, &e->e_meta, name, &dr, sizeof dr);
		if (rc != 0) {
			store_unmake_devices(e, c, i + 1);
			return rc;
		}
	}
	e->e_store.st_nr_devs = e->e_conf.c_nr_devs;
	rc = store_conf_save(e, txn);
	if (rc != 0)
		store_unmake_devices(e, c, e->e_conf.c_nr_devs);
	return rc;
}

/* Write the default container's entity record. */
static int store_make_default_container(struct eng *e, MDB_txn *txn)
{
	struct clovis_id id = CLOVIS_ID_DEFAULT_CONTAINER;
	struct meta_ent me = {
		.me_version = META_FORMAT_VERSION,
		.me_type = CLOVIS_ET_CONTAINER,
		.me_ctime_ns = eng_now_ns(),
	};

	struct clovis_id root = {0, 0};
	uint8_t kb[META_MEMBER_KEY_LEN];
	MDB_val k = meta_member_key(kb, &root, CLOVIS_ET_CONTAINER, &id);
	MDB_val v = {0, ""};
	int rc;

	me.me_mtime_ns = me.me_ctime_ns;
	rc = meta_ent_put(txn, &e->e_meta, &id, &me);
	if (rc == 0 && (rc = mdb_put(txn, e->e_meta.m_member, &k, &v, 0)) != 0)
		rc = meta_err(rc, "default container member");
	return rc;
}

/* Make a new store: identity, devices, default container, in one commit. */
static int store_create(struct eng *e, const struct eng_conf *c)
{
	MDB_txn *txn;
	int rc;

	e->e_store.st_magic = STORE_MAGIC; /* st_uuid: eng_start() */
	e->e_store.st_version = META_FORMAT_VERSION;
	e->e_store.st_ctime_ns = eng_now_ns();
	rc = c->ec_config ? conf_load(&e->e_conf, c->ec_config)
			  : conf_default(&e->e_conf, c->ec_dev_size);
	if (rc != 0)
		return rc;
	e->e_conf_loaded = true;
	if (e->e_conf.c_nr_devs == 0 || e->e_conf.c_nr_devs > LIM_DEV_MAX)
		return err_set(-EINVAL, "configuration: %u devices (1..%u)",
			       e->e_conf.c_nr_devs, LIM_DEV_MAX);
	rc = mdb_txn_begin(e->e_meta.m_env, NULL, 0, &txn);
	if (rc != 0)
		return meta_err(rc, "begin create");
	rc = store_make_devices(e, c, txn);
	if (rc == 0)
		rc = store_make_default_container(e, txn);
	if (rc == 0)
		rc = meta_sys_put(txn, &e->e_meta, "store", &e->e_store,
				  sizeof e->e_store);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	rc = meta_txn_commit(&e->e_meta, txn);
	return rc == 0 ? 0 : meta_err(rc, "commit create");
}

static bool dev_path_remote(const char *path)
{
	return strncmp(path, ENG_REMOTE_PREFIX,
		       sizeof ENG_REMOTE_PREFIX - 1) == 0;
}

/* Open device i recorded as dr: a file, or a remote device through the
 * hook of a cluster server. */
static int store_open_device(struct eng *e, uint32_t i,
			     const struct dev_rec *dr)
{
	struct eng_dev *d = &e->e_devs[i];
	const struct tier_ops *ops;
	char path[LIM_PATH_MAX + 64];
	int rc;

	if (!dev_path_remote(dr->dr_path)) {
		dev_path_open(e, dr->dr_path, path, sizeof path);
		rc = tier_dev_open(&d->ed_dev, path, dr->dr_tier,
				   e->e_store.st_uuid, i);
		if (rc != 0 && dr->dr_path[0] == '/' &&
		    strcmp(path, dr->dr_path) != 0) {
			/* not this device after all: the path as recorded */
			LOG_INFO("store %s: %s: %s; trying %s", e->e_dir, path,
				 err_msg(), dr->dr_path);
			rc = tier_dev_open(&d->ed_dev, dr->dr_path, dr->dr_tier,
					   e->e_store.st_uuid, i);
		}
		return rc;
	}
	ops = tier_driver_find(ENG_REMOTE_DRIVER);
	if (ops == NULL)
		return err_set(-ENOTSUP, "store %s: device %u is %s, another "
			       "server's: this store belongs to a cluster "
			       "server (strata-server opens it)", e->e_dir, i,
			       dr->dr_path);
	return tier_dev_attach(&d->ed_dev, ops, dr->dr_path, dr->dr_tier, i,
			       dr->dr_size, NULL);
}

/* A local device of a sliced (cluster) store: only its own slice is this
 * store's to allocate from; mark the rest used (never mapped, so the
 * rebuild from the maps cannot collide with it). */
static int store_slice_mark(struct eng *e, uint32_t i)
{
	struct eng_dev *d = &e->e_devs[i];
	uint64_t size = tier_dev_size(d->ed_dev);
	uint64_t sl = conf_slice_size(size, e->e_conf.c_slices);
	uint64_t lo = sl * e->e_conf.c_slice, hi = lo + sl;
	int rc = 0;

	if (e->e_conf.c_slices == 0 || tier_dev_zoned(d->ed_dev) ||
	    i >= e->e_conf.c_nr_devs || e->e_conf.c_devs[i].cd_remote[0] ||
	    e->e_conf.c_devs[i].cd_local)
		return 0;
	if (lo > 0)
		rc = alloc_mark(&d->ed_alloc, 0, lo >> LIM_ALLOC_UNIT_SHIFT);
	if (rc == 0 && hi < size)
		rc = alloc_mark(&d->ed_alloc, hi >> LIM_ALLOC_UNIT_SHIFT,
				(size - hi) >> LIM_ALLOC_UNIT_SHIFT);
	if (rc != 0)
		return err_set(-CLOVIS_ECORRUPT, "store %s: device %u: slice "
			       "%u of %u cannot be set apart", e->e_dir, i,
			       e->e_conf.c_slice, e->e_conf.c_slices);
	return 0;
}

/* Open every device recorded in the store. */
static int store_open_devices(struct eng *e, MDB_txn *txn)
{
	char name[16];
	int rc;

	if (e->e_store.st_nr_devs == 0 || e->e_store.st_nr_devs > LIM_DEV_MAX)
		return err_set(-CLOVIS_ECORRUPT, "store %s: %u devices",
			       e->e_dir, e->e_store.st_nr_devs);
	for (uint32_t i = 0; i < e->e_store.st_nr_devs; i++) {
		struct dev_rec dr;
		struct eng_dev *d = &e->e_devs[i];

		snprintf(name, sizeof name, "dev.%u", i);
		rc = meta_sys_get(txn, &e->e_meta, name, &dr, sizeof dr);
		if (rc == -ENOENT)
			rc = err_set(-CLOVIS_ECORRUPT, "store %s: device %u "
				     "record missing", e->e_dir, i);
		if (rc != 0)
			return rc;
		dr.dr_path[LIM_PATH_MAX] = '\0';
		rc = store_open_device(e, i, &dr);
		if (rc != 0)
			return rc;
		d->ed_tier = dr.dr_tier;
		pthread_mutex_init(&d->ed_zlock, NULL);
		d->ed_zclean = UINT32_MAX;
		d->ed_state = dr.dr_state & 0xffffu;
		d->ed_flags = dr.dr_state >> 16;
		e->e_dev_tier[i] = dr.dr_tier;
		e->e_nr_devs = i + 1;
		rc = alloc_init(&d->ed_alloc,
				tier_dev_size(d->ed_dev) >> LIM_ALLOC_UNIT_SHIFT);
		if (rc == 0)
			rc = store_slice_mark(e, i);
		if (rc != 0)
			return rc;
		if (i < e->e_conf.c_nr_devs)
			e->e_dev_domain[i] = e->e_conf.c_devs[i].cd_domain;
	}
	/* Plain objects are placed over the local devices only (they come
	 * first in a cluster store): one server's data, its own failure. */
	e->e_pool = (struct layout_pool){e->e_nr_devs, e->e_dev_tier,
					 e->e_dev_domain};
	for (uint32_t i = 0; i < e->e_conf.c_nr_devs && i < e->e_nr_devs; i++)
		if (e->e_conf.c_devs[i].cd_remote[0] != '\0') {
			e->e_pool.lp_nr = i;
			break;
		}
	return 0;
}

/* The failure domains of pool ep (cluster stores): every device's domain
 * numbered in order of first appearance; none when a device has none. */
static void store_pool_domains(struct eng *e, struct eng_pool *ep)
{
	uint32_t seen[LIM_DEV_MAX], nr = 0;

	ep->ep_nr_dom = 0;
	for (uint32_t i = 0; i < ep->ep_nr; i++) {
		uint32_t dm = e->e_dev_domain[ep->ep_devs[i]], j;

		if (dm == 0)
			return;
		for (j = 0; j < nr && seen[j] != dm; j++)
			;
		if (j == nr)
			seen[nr++] = dm;
		ep->ep_dom[i] = (uint8_t)j;
	}
	ep->ep_nr_dom = nr >= 2 ? nr : 0;
}

/* Parse the configuration saved in sys/conf. */
static int store_conf_load(struct eng *e, MDB_txn *txn)
{
	MDB_val k = {4, "conf"}, v;
	int rc = mdb_get(txn, e->e_meta.m_sys, &k, &v);

	if (rc != 0)
		return rc == MDB_NOTFOUND ?
		       err_set(-CLOVIS_ECORRUPT, "store %s: configuration "
			       "record missing", e->e_dir) :
		       meta_err(rc, "read configuration");
	if (e->e_conf_loaded) {
		conf_fini(&e->e_conf);
		e->e_conf_loaded = false;
	}
	rc = conf_parse(&e->e_conf, v.mv_data, v.mv_size);
	if (rc != 0)
		return err_set(-CLOVIS_ECORRUPT, "store %s: saved configuration "
			       "does not parse: %s", e->e_dir, err_msg());
	e->e_conf_loaded = true;
	return 0;
}

/* Pools from the configuration (device i of the configuration is store
 * device i); the device model where configured. */
static int store_pools_make(struct eng *e)
{
	const struct conf *c = &e->e_conf;

	if (c->c_nr_devs != e->e_nr_devs)
		return err_set(-CLOVIS_ECORRUPT, "store %s: configuration lists "
			       "%u devices, the store has %u", e->e_dir,
			       c->c_nr_devs, e->e_nr_devs);
	e->e_pools = calloc(c->c_nr_pools ? c->c_nr_pools : 1,
			    sizeof *e->e_pools);
	if (e->e_pools == NULL)
		return err_set(-ENOMEM, "pools");
	for (uint32_t p = 0; p < c->c_nr_pools; p++) {
		struct eng_pool *ep = &e->e_pools[p];

		snprintf(ep->ep_name, sizeof ep->ep_name, "%s",
			 c->c_pools[p].cp_name);
		ep->ep_nr = c->c_pools[p].cp_nr;
		for (uint32_t i = 0; i < ep->ep_nr; i++) {
			if (c->c_pools[p].cp_devs[i] >= e->e_nr_devs)
				return err_set(-CLOVIS_ECORRUPT, "pool %s: device "
					       "%u not in store", ep->ep_name,
					       c->c_pools[p].cp_devs[i]);
			ep->ep_devs[i] = c->c_pools[p].cp_devs[i];
		}
		store_pool_domains(e, ep);
	}
	e->e_nr_pools = c->c_nr_pools;
	for (uint32_t i = 0; i < e->e_nr_devs; i++)
		eng_dev_model_apply(e, i);
	return 0;
}

/* Load identity and devices, rebuild the allocators from the maps. */
static int store_load(struct eng *e)
{
	MDB_txn *txn;
	int rc;

	rc = mdb_txn_begin(e->e_meta.m_env, NULL, MDB_RDONLY, &txn);
	if (rc != 0)
		return meta_err(rc, "begin load");
	rc = meta_sys_get(txn, &e->e_meta, "store", &e->e_store,
			  sizeof e->e_store);
	if (rc == -ENOENT || (rc == 0 && e->e_store.st_magic != STORE_MAGIC))
		rc = err_set(-CLOVIS_ECORRUPT, "store %s: identity record "
			     "missing or damaged", e->e_dir);
	else if (rc == 0 && e->e_store.st_version != META_FORMAT_VERSION)
		rc = err_set(-CLOVIS_EVERSION, "store %s: format version %u, "
			     "this library reads %u", e->e_dir,
			     e->e_store.st_version, META_FORMAT_VERSION);
	if (rc == 0)
		rc = store_conf_load(e, txn);
	if (rc == 0)
		rc = store_open_devices(e, txn);
	if (rc == 0)
		rc = store_pools_make(e);
	if (rc == 0)
		rc = obj_rebuild_alloc(e, txn);
	if (rc == 0)
		rc = stripe_rebuild_alloc(e, txn);
	mdb_txn_abort(txn);
	if (rc == 0)
		rc = eng_smr_recover(e, NULL); /* zones with nothing live */
	return rc;
}

/* Lock the store directory against other processes. */
static int store_lock(struct eng *e)
{
	char path[LIM_PATH_MAX + 16];

	snprintf(path, sizeof path, "%s/LOCK", e->e_dir);
	e->e_lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (e->e_lockfd < 0)
		return err_set(-errno, "store %s: lock file: %s", e->e_dir,
			       strerror(errno));
	if (flock(e->e_lockfd, LOCK_EX | LOCK_NB) != 0)
		return err_set(errno == EWOULDBLOCK ? -EBUSY : -errno,
			       "store %s is in use by another process",
			       e->e_dir);
	return 0;
}

/*
 * Crash-safe creation.  A create writes DATA_DIR/CREATING (the store's
 * uuid and NVRAM directory, synced with its directory) before anything
 * else, then the metadata environment and the devices, then commits the
 * identity record, the device records and the default container in ONE
 * LMDB transaction, syncs it, and only then removes the marker.  So:
 *   marker, identity record present   the create ended but for the
 *                                      marker's removal: finished at the
 *                                      next open (the record is synced,
 *                                      the marker removed);
 *   no identity record, no other      the create never committed, no
 *   record in table sys                data can exist: an open with
 *                                      CLOVIS_CONF_CREATE makes the store
 *                                      again (same uuid, so the same
 *                                      device names; what the first try
 *                                      left is removed first), an open
 *                                      without it fails -ENOENT naming
 *                                      the directory;
 *   no identity record, other sys     damage, never re-created:
 *   records                            -CLOVIS_ECORRUPT as before.
 * A store made before the marker existed and killed while being created
 * (an environment with an empty sys table) is handled the same way.
 */
#define STORE_CREATING "CREATING"


/* The error of an open without CREATE of a store whose create never
 * ended. */
static int store_incomplete(const char *dir)
{
	return err_set(-ENOENT, "data directory %s holds a store whose "
		       "creation never completed (the process creating it "
		       "stopped); nothing was stored in it: open it with "
		       "CLOVIS_CONF_CREATE to create it again", dir);
}

/* fsync directory dir (names made or removed in it durable). */
static int dir_sync(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0 || fsync(fd) != 0)
		rc = err_set(-errno, "directory %s: sync: %s", dir,
			     strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Write the creation marker of e's store (uuid, NVRAM directory). */
static int store_creating_mark(struct eng *e, const struct eng_conf *c)
{
	char path[LIM_PATH_MAX + 32], text[LIM_PATH_MAX + 96];
	int fd, n = 0, rc = 0;

	n += snprintf(text, sizeof text, "strata store being created\nuuid ");
	for (int k = 0; k < 16; k++)
		n += snprintf(text + n, sizeof text - (size_t)n, "%02x",
			      e->e_store.st_uuid[k]);
	n += snprintf(text + n, sizeof text - (size_t)n, "\nnvram_dir %s\n",
		      c->ec_nvram_dir ? c->ec_nvram_dir : "/dev/shm");
	snprintf(path, sizeof path, "%s/%s", c->ec_dir, STORE_CREATING);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(-errno, "store %s: %s: %s", c->ec_dir, path,
			       strerror(errno));
	if (write(fd, text, (size_t)n) != n || fsync(fd) != 0)
		rc = err_set(errno ? -errno : -EIO, "store %s: %s: %s",
			     c->ec_dir, path, strerror(errno));
	close(fd);
	return rc == 0 ? dir_sync(c->ec_dir) : rc;
}

/* Read the creation marker in dir: the uuid (*have false when the marker
 * names none) and the NVRAM directory (nvdir, "" when none). */
static void store_creating_read(const char *dir, uint8_t uuid[16],
				bool *have, char *nvdir, size_t nvlen)
{
	char path[LIM_PATH_MAX + 32], line[LIM_PATH_MAX + 32];
	FILE *f;

	*have = false;
	nvdir[0] = '\0';
	snprintf(path, sizeof path, "%s/%s", dir, STORE_CREATING);
	f = fopen(path, "re");
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		size_t len = strcspn(line, "\n");
		unsigned v;

		line[len] = '\0';
		if (strncmp(line, "uuid ", 5) == 0 && len == 5 + 32) {
			*have = true;
			for (int k = 0; k < 16 && *have; k++)
				if (sscanf(line + 5 + 2 * k, "%2x", &v) == 1)
					uuid[k] = (uint8_t)v;
				else
					*have = false;
		} else if (strncmp(line, "nvram_dir ", 10) == 0 &&
			   len - 10 < nvlen) {
			memcpy(nvdir, line + 10, len - 10 + 1);
		}
	}
	fclose(f);
}

/* The create of the store in dir is complete: remove its marker. */
static int store_creating_done(const char *dir)
{
	char path[LIM_PATH_MAX + 32];

	snprintf(path, sizeof path, "%s/%s", dir, STORE_CREATING);
	if (unlink(path) != 0 && errno != ENOENT)
		return err_set(-errno, "store %s: %s: %s", dir, path,
			       strerror(errno));
	return dir_sync(dir);
}

/*
 * What an interrupted create of the store in dir left, before it is made
 * again: its metadata (the environment, or its NVRAM directory and the
 * link), the device files of the data directory, and the NVRAM devices
 * named by its uuid in the NVRAM directory the marker names.  Only for a
 * store whose identity record was never committed (no data can exist).
 */
static void store_creating_clear(const char *dir, const uint8_t uuid[16],
				 bool have_uuid, const char *nvdir)
{
	char path[LIM_PATH_MAX + 300], u[33];
	struct dirent *de;
	DIR *d;

	meta_nv_remove(dir);
	snprintf(path, sizeof path, "%s/meta/data.mdb", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/meta/lock.mdb", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/devices", dir);
	d = opendir(path);
	while (d != NULL && (de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);

		if (n > 4 && strcmp(de->d_name + n - 4, ".dev") == 0) {
			snprintf(path, sizeof path, "%s/devices/%s", dir,
				 de->d_name);
			unlink(path);
		}
	}
	if (d != NULL)
		closedir(d);
	if (!have_uuid || nvdir[0] == '\0')
		return;
	for (int k = 0; k < 16; k++)
		snprintf(u + 2 * k, 3, "%02x", uuid[k]);
	d = opendir(nvdir);
	while (d != NULL && (de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);

		if (strncmp(de->d_name, "strata-", 7) == 0 &&
		    strncmp(de->d_name + 7, u, 32) == 0 &&
		    de->d_name[39] == '-' && n > 4 &&
		    strcmp(de->d_name + n - 4, ".dev") == 0) {
			snprintf(path, sizeof path, "%s/%s", nvdir, de->d_name);
			unlink(path);
		}
	}
	if (d != NULL)
		closedir(d);
}

/* Whether the store's create was committed: 1 (its identity record is
 * there, or other sys records are: store_load judges them), 0 (table sys
 * is empty: the create never committed), or a negative code. */
static int store_committed(struct eng *e)
{
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	int rc = mdb_txn_begin(e->e_meta.m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin open");
	rc = mdb_cursor_open(txn, e->e_meta.m_sys, &cur);
	if (rc == 0) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		mdb_cursor_close(cur);
	}
	mdb_txn_abort(txn);
	if (rc == 0)
		return 1;
	return rc == MDB_NOTFOUND ? 0 : meta_err(rc, "read table sys");
}

/* Check the directory exists (or make it), whether it holds a store, and
 * whether its metadata is on NVRAM (*linked; a dangling link fails), and
 * whether a create of it began and may not have ended (*creating: the
 * marker STORE_CREATING is there). */
static int store_dir_check(const struct eng_conf *c, bool *exists,
			   bool *linked, bool *creating)
{
	char path[LIM_PATH_MAX + 32];
	struct stat st;
	int rc;

	if (stat(c->ec_dir, &st) != 0) {
		if (errno != ENOENT || !c->ec_create)
			return err_set(-errno, "data directory %s: %s",
				       c->ec_dir, strerror(errno));
		if (mkdir(c->ec_dir, 0755) != 0)
			return err_set(-errno, "data directory %s: %s",
				       c->ec_dir, strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		return err_set(-ENOTDIR, "data directory %s: not a directory",
			       c->ec_dir);
	}
	rc = meta_nv_check(c->ec_dir, linked);
	if (rc != 0)
		return rc;
	snprintf(path, sizeof path, "%s/%s", c->ec_dir, STORE_CREATING);
	*creating = lstat(path, &st) == 0;
	snprintf(path, sizeof path, "%s/meta/data.mdb", c->ec_dir);
	*exists = stat(path, &st) == 0;
	if (!*exists && !c->ec_create)
		return *creating ? store_incomplete(c->ec_dir) :
		       err_set(-ENOENT, "data directory %s holds no store "
			       "(create one with CLOVIS_CONF_CREATE)", c->ec_dir);
	return 0;
}

/* A new store: its uuid (uuid, when an interrupted create is made again,
 * else a new one), its creation marker, and its metadata directory on
 * NVRAM when asked (c->ec_meta_nvram: DATA_DIR/meta links to
 * NVDIR/strata-UUID-meta). */
static int store_prepare(struct eng *e, const struct eng_conf *c,
			 const uint8_t *uuid)
{
	int rc;

	if (uuid != NULL)
		memcpy(e->e_store.st_uuid, uuid, 16);
	else if (getrandom(e->e_store.st_uuid, 16, 0) != 16)
		return err_set(-errno, "store uuid: %s", strerror(errno));
	rc = store_creating_mark(e, c);
	if (rc != 0 || FAULT_KILL("store.create.kill"))
		return rc;
	e->e_meta_nv = c->ec_meta_nvram;
	if (!c->ec_meta_nvram)
		return 0;
	return meta_nv_make(c->ec_dir, c->ec_nvram_dir, e->e_store.st_uuid);
}

/*
 * An existing environment, opened: finish a create that committed but
 * kept its marker, or, for one that never committed, fail (no CREATE) or
 * close and clear it for a new create (*exists = false, *redo true).
 */
static int store_resume(struct eng *e, const struct eng_conf *c,
			bool creating, bool *exists, bool *redo)
{
	int rc = store_committed(e);

	if (rc == 1 && creating) {
		/* The create committed: make it durable, drop the marker. */
		rc = mdb_env_sync(e->e_meta.m_env, 1);
		if (rc != 0)
			return meta_err(rc, "sync created store");
		LOG_INFO("store %s: finishing its create (marker left by a "
			 "stopped process)", c->ec_dir);
		return store_creating_done(c->ec_dir);
	}
	if (rc != 0)
		return rc < 0 ? rc : 0;
	if (!c->ec_create)
		return store_incomplete(c->ec_dir);
	LOG_WARNING("store %s: its creation never completed; making it again",
		    c->ec_dir);
	meta_close(&e->e_meta);
	*exists = false;
	*redo = true;
	return 0;
}

/* Make the store: marker, metadata, devices, one commit, synced, marker
 * removed (see STORE_CREATING). */
static int store_make(struct eng *e, const struct eng_conf *c, bool redo)
{
	char mdir[LIM_PATH_MAX + 16], nvdir[LIM_PATH_MAX + 1];
	uint8_t uuid[16];
	bool have = false;
	int rc;

	if (redo) {
		store_creating_read(c->ec_dir, uuid, &have, nvdir,
				    sizeof nvdir);
		store_creating_clear(c->ec_dir, uuid, have, nvdir);
	}
	rc = store_prepare(e, c, have ? uuid : NULL);
	if (rc != 0)
		return rc;
	snprintf(mdir, sizeof mdir, "%s/meta", c->ec_dir);
	rc = meta_open(&e->e_meta, mdir,
		       c->ec_meta_size ? c->ec_meta_size : LIM_META_SIZE_DEFAULT,
		       META_CREATE | (e->e_meta_nv ? META_SYNC_META : 0));
	if (rc == 0 && FAULT_KILL("store.create.kill"))
		return 0;
	if (rc == 0)
		rc = store_create(e, c);
	if (rc == 0 && (rc = mdb_env_sync(e->e_meta.m_env, 1)) != 0)
		rc = meta_err(rc, "sync created store");
	if (rc == 0 && FAULT_KILL("store.create.kill"))
		return 0;
	if (rc == 0)
		rc = store_creating_done(c->ec_dir);
	return rc;
}

static int eng_start(struct eng *e, const struct eng_conf *c)
{
	char mdir[LIM_PATH_MAX + 16];
	bool exists = true, creating = false, redo = false;
	int rc;

	rc = store_dir_check(c, &exists, &e->e_meta_nv, &creating);
	if (rc == 0)
		rc = store_lock(e);
	if (rc != 0)
		return rc;
	if (exists) {
		snprintf(mdir, sizeof mdir, "%s/meta", c->ec_dir);
		rc = meta_open(&e->e_meta, mdir,
			       c->ec_meta_size ? c->ec_meta_size :
			       LIM_META_SIZE_DEFAULT,
			       e->e_meta_nv ? META_SYNC_META : 0);
		if (rc == 0)
			rc = store_resume(e, c, creating, &exists, &redo);
	} else if (creating) {
		redo = true; /* stopped before its environment was made */
		LOG_WARNING("store %s: its creation never completed; making it "
			    "again", c->ec_dir);
	}
	if (rc == 0 && !exists)
		rc = store_make(e, c, redo);
	if (rc == 0)
		rc = store_load(e);
	if (rc != 0 && !exists && e->e_meta_nv) {
		meta_close(&e->e_meta); /* a failed create: leave no metadata */
		meta_nv_remove(c->ec_dir);
	}
	if (rc != 0)
		return rc;
	pthread_mutex_init(&e->e_rlock, NULL);
	pthread_cond_init(&e->e_rcond, NULL);
	pthread_cond_init(&e->e_rdone, NULL);
	rc = pthread_create(&e->e_reclaimer, NULL, reclaimer_main, e);
	if (rc != 0)
		return err_set(-rc, "reclaimer thread: %s", strerror(rc));
	e->e_rrunning = true;
	cq_init(&e->e_syncq);
	cq_init(&e->e_commitq);
	pthread_mutex_init(&e->e_cmlock, NULL);
	pthread_mutex_init(&e->e_slock, NULL);
	rc = pthread_create(&e->e_committer, NULL, committer_main, e);
	if (rc != 0)
		return err_set(-rc, "committer thread: %s", strerror(rc));
	rc = pthread_create(&e->e_syncer, NULL, syncer_main, e);
	if (rc != 0) {
		cq_stop(&e->e_commitq);
		pthread_join(e->e_committer, NULL);
		return err_set(-rc, "syncer thread: %s", strerror(rc));
	}
	e->e_crunning = true;
	return 0;
}

int eng_open(struct eng **out, const struct eng_conf *c)
{
	struct eng *e;
	int rc;

	if (strlen(c->ec_dir) > LIM_PATH_MAX - 32)
		return err_set(-ENAMETOOLONG, "data directory %s: path too long",
			       c->ec_dir);
	e = calloc(1, sizeof *e);
	if (e == NULL)
		return err_set(-ENOMEM, "engine");
	e->e_lockfd = -1;
	e->e_model = c->ec_model;
	e->e_serial = __atomic_add_fetch(&eng_serial_next, 1, __ATOMIC_RELAXED);
	pthread_mutex_init(&e->e_codec_lock, NULL);
	pthread_mutex_init(&e->e_glock, NULL);
	pthread_cond_init(&e->e_gcond, NULL);
	pthread_mutex_init(&e->e_dev_lock, NULL);
	snprintf(e->e_dir, sizeof e->e_dir, "%s", c->ec_dir);
	rc = eng_start(e, c);
	if (rc != 0) {
		eng_close(e);
		return rc;
	}
	*out = e;
	return 0;
}

/* Log the group-commit profile (LOG_INFO): per batch, its items and the
 * mean time of each stage. */
static void gcprof_log(struct eng *e)
{
	const struct eng_gcprof *g = &e->e_gp;
	double sb = g->gp_sbatches ? (double)g->gp_sbatches : 1;
	double cb = g->gp_cbatches ? (double)g->gp_cbatches : 1;

	if (g->gp_sbatches == 0)
		return;
	LOG_INFO("group commit: %" PRIu64 " sync batches, %.2f items each, "
		 "gather %.0f us (ended: %" PRIu64 " none coming, %" PRIu64
		 " gap, %" PRIu64 " window), device sync %.0f us, direct %"
		 PRIu64 " (released here %" PRIu64 "); "
		 "%" PRIu64 " commits: apply %.0f us, commit %.0f us, reports "
		 "%.0f us; %" PRIu64 " meta syncs %.0f us each; %" PRIu64
		 " stable waits %.0f us each, %" PRIu64 " got a batch; "
		 "update exec %.0f us; %" PRIu64 " batches came back after "
		 "a report, %.0f us each",
		 g->gp_sbatches, g->gp_sitems / sb, g->gp_gather_us / sb,
		 g->gp_gend[0], g->gp_gend[1], g->gp_gend[2],
		 g->gp_dsync_us / sb, g->gp_direct, g->gp_release_here,
		 g->gp_cbatches,
		 g->gp_apply_us / cb, g->gp_commit_us / cb, g->gp_cb_us / cb,
		 g->gp_msync, g->gp_msync ? g->gp_msync_us / (double)g->gp_msync
					  : 0.0,
		 g->gp_swait, g->gp_swait ? g->gp_swait_us / (double)g->gp_swait
					  : 0.0,
		 g->gp_swait_hit, e->e_exec_ns / 1000.0, g->gp_ret,
		 g->gp_ret ? g->gp_ret_us / (double)g->gp_ret : 0.0);
}

void eng_close(struct eng *e)
{
	if (e == NULL)
		return;
	if (e->e_crunning) {
		/* The syncer drains its queue, then stops the committer,
		 * which drains its own. */
		cq_stop(&e->e_syncq);
		pthread_join(e->e_syncer, NULL);
		pthread_join(e->e_committer, NULL);
		gcprof_log(e);
		cq_fini(&e->e_syncq);
		cq_fini(&e->e_commitq);
		pthread_mutex_destroy(&e->e_cmlock);
		pthread_mutex_destroy(&e->e_slock);
	}
	if (e->e_rrunning) {
		pthread_mutex_lock(&e->e_rlock);
		e->e_rstop = true;
		pthread_cond_signal(&e->e_rcond);
		pthread_mutex_unlock(&e->e_rlock);
		pthread_join(e->e_reclaimer, NULL);
		/* Fenced space not yet due: the next open rebuilds the
		 * allocator from the maps (where it is free), and the owners'
		 * epoch fence keeps late writes out (docs/cluster.md). */
		while (e->e_fhead != NULL) {
			struct eng_deferred *df = e->e_fhead;

			e->e_fhead = df->df_next;
			eng_spacevec_fini(&df->df_sv);
			free(df);
		}
		pthread_mutex_destroy(&e->e_rlock);
		pthread_cond_destroy(&e->e_rcond);
	}
	for (uint32_t i = 0; i < e->e_nr_devs; i++) {
		tier_dev_close(e->e_devs[i].ed_dev);
		alloc_fini(&e->e_devs[i].ed_alloc);
	}
	meta_close(&e->e_meta);
	if (e->e_lockfd >= 0)
		close(e->e_lockfd);
	for (uint32_t n = 0; n <= CLOVIS_LAYOUT_UNITS_MAX; n++)
		for (uint32_t k = 0; k <= CLOVIS_LAYOUT_UNITS_MAX; k++)
			ec_codec_destroy(e->e_codecs[n][k]);
	if (e->e_conf_loaded)
		conf_fini(&e->e_conf);
	free(e->e_pools);
	free(e);
}

/* Unlink every device recorded in the store. */
static int store_unlink_devices(struct eng *e)
{
	MDB_txn *txn;
	char name[16], path[LIM_PATH_MAX + 64];
	int rc = mdb_txn_begin(e->e_meta.m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin destroy");
	rc = meta_sys_get(txn, &e->e_meta, "store", &e->e_store,
			  sizeof e->e_store);
	for (uint32_t i = 0; rc == 0 && i < e->e_store.st_nr_devs &&
			     i < LIM_DEV_MAX; i++) {
		struct dev_rec dr;

		snprintf(name, sizeof name, "dev.%u", i);
		if (meta_sys_get(txn, &e->e_meta, name, &dr, sizeof dr) != 0)
			continue;
		dr.dr_path[LIM_PATH_MAX] = '\0';
		if (dev_path_remote(dr.dr_path))
			continue; /* another server's */
		dev_path_open(e, dr.dr_path, path, sizeof path);
		if (unlink(path) != 0 && errno != ENOENT)
			LOG_WARNING("destroy: %s: %s", path, strerror(errno));
	}
	mdb_txn_abort(txn);
	return rc == -ENOENT ? 0 : rc;
}

int eng_destroy(const char *dir)
{
	static const char *const files[] = {"meta/data.mdb", "meta/lock.mdb",
					    "meta", "devices", STORE_CREATING,
					    "LOCK"};
	struct eng_conf c = {.ec_dir = dir};
	char mdir[LIM_PATH_MAX + 16], path[LIM_PATH_MAX + 32];
	char nvdir[LIM_PATH_MAX + 1];
	struct eng *e = calloc(1, sizeof *e);
	bool exists, linked, creating = false, have = false;
	uint8_t uuid[16];
	int rc;

	if (e == NULL)
		return err_set(-ENOMEM, "destroy");
	e->e_lockfd = -1;
	snprintf(e->e_dir, sizeof e->e_dir, "%s", dir);
	/* A store whose create never ended has no device records to go by:
	 * its marker names what to remove (store_creating_clear). */
	c.ec_create = true; /* no mkdir: the directory is checked first */
	rc = access(dir, F_OK) == 0 ? 0 : err_set(-errno, "data directory "
		     "%s: %s", dir, strerror(errno));
	if (rc == 0)
		rc = store_dir_check(&c, &exists, &linked, &creating);
	if (rc == 0 && !exists && !creating)
		rc = err_set(-ENOENT, "data directory %s holds no store", dir);
	if (rc == 0)
		rc = store_lock(e);
	snprintf(mdir, sizeof mdir, "%s/meta", dir);
	if (rc == 0 && exists)
		rc = meta_open(&e->e_meta, mdir, LIM_META_SIZE_MIN, 0);
	if (rc == 0 && exists && (!creating || store_committed(e) == 1))
		rc = store_unlink_devices(e);
	else if (rc == 0) {
		store_creating_read(dir, uuid, &have, nvdir, sizeof nvdir);
		meta_close(&e->e_meta);
		store_creating_clear(dir, uuid, have, nvdir);
	}
	if (rc == 0) {
		snprintf(path, sizeof path, "%s/devices", dir);
		for (uint32_t t = 0; t < CLOVIS_TIER_NR; t++) {
			char dev[LIM_PATH_MAX + 48];

			snprintf(dev, sizeof dev, "%s/%s%u.dev", path,
				 tier_name(t), t);
			unlink(dev);
		}
	}
	eng_close(e);
	if (rc == 0)
		meta_nv_remove(dir); /* the metadata on NVRAM, and the link */
	for (size_t i = 0; rc == 0 && i < sizeof files / sizeof files[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		if (remove(path) != 0 && errno != ENOENT)
			LOG_WARNING("destroy: %s: %s", path, strerror(errno));
	}
	if (rc == 0)
		rmdir(dir);
	return rc;
}

/* ------------------------------------------------------------ misc */

void eng_dev_info(struct eng *e, uint32_t i, struct clovis_dev_info *out)
{
	struct eng_dev *d = &e->e_devs[i];

	memset(out, 0, sizeof *out);
	out->di_index = i;
	out->di_tier = d->ed_tier;
	snprintf(out->di_path, sizeof out->di_path, "%s", d->ed_dev->td_path);
	snprintf(out->di_driver, sizeof out->di_driver, "%s",
		 d->ed_dev->td_ops->to_name);
	out->di_size_bytes = tier_dev_size(d->ed_dev);
	out->di_free_bytes = alloc_free_units(&d->ed_alloc)
			     << LIM_ALLOC_UNIT_SHIFT;
	out->di_direct_io = d->ed_dev->td_direct;
	out->di_state = __atomic_load_n(&d->ed_state, __ATOMIC_ACQUIRE);
	out->di_errors = tier_dev_errors(d->ed_dev);
	out->di_reads = __atomic_load_n(&d->ed_dev->td_nr_reads,
					__ATOMIC_RELAXED);
	out->di_writes = __atomic_load_n(&d->ed_dev->td_nr_writes,
					 __ATOMIC_RELAXED);
	out->di_rebalance = (d->ed_flags & EDF_REBALANCE) != 0;
	out->di_model = tier_dev_model_on(d->ed_dev);
	if (tier_dev_zoned(d->ed_dev)) {
		out->di_zone_size = tier_dev_zone_size(d->ed_dev);
		out->di_zones = tier_dev_zone_nr(d->ed_dev);
		for (uint32_t z = 0; z < out->di_zones; z++) {
			struct tier_zone tz;

			if (tier_dev_zone_get(d->ed_dev, z, &tz) == 0 &&
			    tz.tz_wp == tz.tz_start)
				out->di_zones_empty++;
		}
	}
}

int eng_sys_save(struct eng *e, const char *name, const void *buf, size_t len)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(e->e_meta.m_env, NULL, 0, &txn);

	if (rc != 0)
		return meta_err(rc, "begin save");
	rc = meta_sys_put(txn, &e->e_meta, name, buf, len);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc;
	}
	rc = meta_txn_commit(&e->e_meta, txn);
	return rc == 0 ? 0 : meta_err(rc, "commit save");
}

int eng_sys_load(struct eng *e, const char *name, void *buf, size_t len)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(e->e_meta.m_env, NULL, MDB_RDONLY, &txn);

	if (rc != 0)
		return meta_err(rc, "begin load");
	rc = meta_sys_get(txn, &e->e_meta, name, buf, len);
	mdb_txn_abort(txn);
	return rc;
}

int eng_sys_del(struct eng *e, const char *name)
{
	MDB_val k = {strlen(name), (void *)name};
	MDB_txn *txn;
	int rc = mdb_txn_begin(e->e_meta.m_env, NULL, 0, &txn);

	if (rc != 0)
		return meta_err(rc, "begin delete");
	rc = mdb_del(txn, e->e_meta.m_sys, &k, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND) {
		mdb_txn_abort(txn);
		return meta_err(rc, "delete");
	}
	rc = meta_txn_commit(&e->e_meta, txn);
	return rc == 0 ? 0 : meta_err(rc, "commit delete");
}

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

	if (!upd)
		return eng_exec_kind(e, r);
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
