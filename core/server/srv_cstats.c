/*
 * srv_cstats.c — the statistics of cluster clients that ended
 * (SOP_CLIENT_STATS; docs/monitoring.md "Clients' statistics").
 *
 * A cluster client pushes its op statistics once, as it ends
 * (clovis/cli_cluster.c clu_stats_push()), to a server it talked to.  The
 * server adds them to the sums it keeps (struct msg_cstats: ops, failures,
 * bytes, latency buckets of clovis/stats.c by op class) and answers the
 * sums; `strata stats` in cluster mode reads every server's (a read-only
 * request) and adds them up.  The sums live in the server's store, system
 * record "client_stats": loaded as the server starts, saved by a thread of
 * their own SRV_CSTATS_SAVE_MS after the first push since the last save,
 * and at a clean stop, so that a SIGKILL loses at most the pushes of that
 * last interval (statistics, not data: no push waits for a disk sync).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/server/srv_internal.h"

#define SRV_CSTATS_NAME "client_stats"
#define SRV_CSTATS_SAVE_MS 10000u

static void cstats_save_locked(struct srv *s);

/* The saver: SRV_CSTATS_SAVE_MS after sums changed, saves them. */
static void *cstats_main(void *arg)
{
	struct srv *s = arg;

	pthread_mutex_lock(&s->s_cs_lock);
	while (!s->s_cs_stop) {
		struct timespec at;

		if (!s->s_cs_dirty) {
			pthread_cond_wait(&s->s_cs_cond, &s->s_cs_lock);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += SRV_CSTATS_SAVE_MS / 1000;
		while (!s->s_cs_stop &&
		       pthread_cond_timedwait(&s->s_cs_cond, &s->s_cs_lock,
					      &at) != ETIMEDOUT)
			;
		cstats_save_locked(s);
	}
	pthread_mutex_unlock(&s->s_cs_lock);
	return NULL;
}

int srv_cstats_open(struct srv *s)
{
	struct msg_cstats *c = calloc(1, sizeof *c);
	int rc;

	if (c == NULL)
		return err_set(-ENOMEM, "server %s: client statistics",
			       s->s_me->cs_name);
	pthread_condattr_t ca;

	pthread_mutex_init(&s->s_cs_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->s_cs_cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = eng_sys_load(s->s_eng, SRV_CSTATS_NAME, c, sizeof *c);
	if (rc != 0 || c->cs_version != MSG_CSTATS_SCHEME) {
		if (rc != -ENOENT)
			LOG_WARNING("server %s: client statistics of its store "
				    "not read (%s): they start from zero",
				    s->s_me->cs_name, rc != 0 ? err_msg() :
				    "another version");
		memset(c, 0, sizeof *c);
		c->cs_version = MSG_CSTATS_SCHEME;
	}
	c->cs_read_only = 0;
	s->s_cs = c;
	s->s_cs_stop = false;
	rc = pthread_create(&s->s_cs_thr, NULL, cstats_main, s);
	if (rc != 0) {
		s->s_cs = NULL;
		free(c);
		pthread_cond_destroy(&s->s_cs_cond);
		pthread_mutex_destroy(&s->s_cs_lock);
		return err_set(-rc, "server %s: client statistics thread: %s",
			       s->s_me->cs_name, strerror(rc));
	}
	return 0;
}

/* Called under s_cs_lock: save the sums if they changed.  The save (a
 * metadata commit, shipped to the home's standbys: up to a call timeout)
 * runs on a copy with the lock released, so that pushes are not held. */
static void cstats_save_locked(struct srv *s)
{
	struct msg_cstats *copy;

	if (!s->s_cs_dirty || (copy = malloc(sizeof *copy)) == NULL)
		return;
	memcpy(copy, s->s_cs, sizeof *copy);
	s->s_cs_dirty = false;
	pthread_mutex_unlock(&s->s_cs_lock);
	if (eng_sys_save(s->s_eng, SRV_CSTATS_NAME, copy, sizeof *copy) != 0) {
		LOG_WARNING("server %s: client statistics not saved: %s",
			    s->s_me->cs_name, err_msg());
		pthread_mutex_lock(&s->s_cs_lock);
		s->s_cs_dirty = true;
	} else {
		pthread_mutex_lock(&s->s_cs_lock);
	}
	free(copy);
}

void srv_cstats_close(struct srv *s)
{
	if (s->s_cs == NULL)
		return;
	pthread_mutex_lock(&s->s_cs_lock);
	s->s_cs_stop = true;
	pthread_cond_broadcast(&s->s_cs_cond);
	pthread_mutex_unlock(&s->s_cs_lock);
	pthread_join(s->s_cs_thr, NULL);
	pthread_mutex_lock(&s->s_cs_lock);
	cstats_save_locked(s);
	pthread_mutex_unlock(&s->s_cs_lock);
	pthread_cond_destroy(&s->s_cs_cond);
	pthread_mutex_destroy(&s->s_cs_lock);
	free(s->s_cs);
	s->s_cs = NULL;
}

static void sat_add(uint64_t *a, uint64_t v)
{
	if (__builtin_add_overflow(*a, v, a))
		*a = UINT64_MAX;
}

/* Add push p to the sums c. */
static void cstats_add(struct msg_cstats *c, const struct msg_cstats *p)
{
	for (uint32_t i = 0; i < MSG_CSTATS_OPS; i++) {
		struct msg_cstats_op *d = &c->cs_op[i];
		const struct msg_cstats_op *o = &p->cs_op[i];

		/* saturating: no push can wrap a sum */
		sat_add(&d->co_count, o->co_count);
		sat_add(&d->co_failed, o->co_failed);
		sat_add(&d->co_bytes, o->co_bytes);
		sat_add(&d->co_sum_us, o->co_sum_us);
		if (o->co_max_us > d->co_max_us)
			d->co_max_us = o->co_max_us;
		for (uint32_t b = 0; b < MSG_CSTATS_BUCKETS; b++)
			sat_add(&d->co_b[b], o->co_b[b]);
	}
	c->cs_clients++;
}

void srv_cstats(struct srv *s, struct srv_op *so)
{
	const struct msg_cstats *p = so->so_m.mr_cstats;
	struct msg_cstats *copy = malloc(sizeof *copy);
	Reply rp = REPLY__INIT;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	if (copy == NULL) {
		srv_reply_err(so, err_set(-ENOMEM, "server %s: client "
					  "statistics: no memory",
					  s->s_me->cs_name));
		return;
	}
	pthread_mutex_lock(&s->s_cs_lock);
	if (!p->cs_read_only) {
		cstats_add(s->s_cs, p);
		if (!s->s_cs_dirty)
			pthread_cond_signal(&s->s_cs_cond);
		s->s_cs_dirty = true;
	}
	memcpy(copy, s->s_cs, sizeof *copy);
	pthread_mutex_unlock(&s->s_cs_lock);
	rc = msg_cstats_encode(copy, false, &buf, &len);
	free(copy);
	if (rc != 0) {
		srv_reply_err(so, rc);
		return;
	}
	rp.text.data = buf;
	rp.text.len = len;
	srv_reply(so, 0, &rp, NULL);
	free(buf);
}
