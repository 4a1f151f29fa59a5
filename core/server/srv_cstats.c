/*
 * srv_cstats.c — the statistics of cluster clients that ended
 * (SOP_CLIENT_STATS; docs/monitoring.md "Clients' statistics").
 *
 * A cluster client pushes its op statistics once, as it ends
 * (clovis/cli_cluster.c clu_stats_push()), to a server it talked to.  The
 * server adds them to the sums it keeps (struct msg_cstats: ops, failures,
 * bytes, latency buckets of clovis/stats.c by op class) and answers the
 * sums; `strata stats` in cluster mode reads every server's (a read-only
 * request) and adds them up.  The sums live in a file beside the server's
 * store, DATA_DIR.client_stats: loaded as the server starts, saved by a
 * thread of their own SRV_CSTATS_SAVE_MS after the first push since the
 * last save, and at a clean stop, so that a SIGKILL loses at most the
 * pushes of that last interval (statistics, not data: no push waits for
 * a disk sync).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/server/srv_internal.h"

#define SRV_CSTATS_SUFFIX ".client_stats"
#define SRV_CSTATS_SAVE_MS 10000u

/* The file beside the server's store: DATA_DIR.client_stats (as its
 * DATA_DIR.store.yaml).  Not in the store: a save is no metadata commit,
 * so it neither waits on the home's standbys nor makes the home's
 * metadata differ from theirs, and it stays with the server when its home
 * is acted for elsewhere (statistics of the clients this server took). */
static int cstats_path(const struct srv *s, char *buf, size_t n)
{
	if (snprintf(buf, n, "%s%s", s->s_me->cs_data_dir,
		     SRV_CSTATS_SUFFIX) >= (int)n)
		return err_set(-ENAMETOOLONG, "server %s: data_dir too long",
			       s->s_me->cs_name);
	return 0;
}

/* Read the saved sums into c: 0, -ENOENT (none), or -EPROTO (a file of
 * another size or version). */
static int cstats_load(const struct srv *s, struct msg_cstats *c)
{
	char path[600];
	ssize_t got;
	int fd, rc = cstats_path(s, path, sizeof path);

	if (rc != 0)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT :
		       err_set(-errno, "%s: %s", path, strerror(errno));
	got = pread(fd, c, sizeof *c, 0);
	rc = got == (ssize_t)sizeof *c && lseek(fd, 0, SEEK_END) ==
	     (off_t)sizeof *c && c->cs_version == MSG_CSTATS_SCHEME ? 0 :
	     err_set(-EPROTO, "%s: not %zu bytes of version %u", path,
		     sizeof *c, MSG_CSTATS_SCHEME);
	close(fd);
	return rc;
}

/* Write c durably: a new file beside it, synced, renamed over it. */
static int cstats_write(const struct srv *s, const struct msg_cstats *c)
{
	char path[600], tmp[640];
	int fd, rc = cstats_path(s, path, sizeof path);

	if (rc != 0)
		return rc;
	snprintf(tmp, sizeof tmp, "%s.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(-errno, "%s: %s", tmp, strerror(errno));
	if (pwrite(fd, c, sizeof *c, 0) != (ssize_t)sizeof *c ||
	    fdatasync(fd) != 0)
		rc = err_set(-EIO, "%s: write: %s", tmp, strerror(errno));
	close(fd);
	if (rc == 0 && rename(tmp, path) != 0)
		rc = err_set(-errno, "%s: rename: %s", path, strerror(errno));
	if (rc != 0)
		unlink(tmp);
	return rc;
}

/* Under s_cs_lock: save the sums if they changed (a push waits at most
 * for this small file's write and sync). */
static void cstats_save_locked(struct srv *s)
{
	if (!s->s_cs_dirty)
		return;
	if (cstats_write(s, s->s_cs) != 0)
		LOG_WARNING("server %s: client statistics not saved: %s",
			    s->s_me->cs_name, err_msg());
	else
		s->s_cs_dirty = false;
}

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
	pthread_condattr_t ca;
	int rc;

	if (c == NULL)
		return err_set(-ENOMEM, "server %s: client statistics",
			       s->s_me->cs_name);
	pthread_mutex_init(&s->s_cs_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->s_cs_cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = cstats_load(s, c);
	if (rc != 0) {
		if (rc != -ENOENT)
			LOG_WARNING("server %s: client statistics saved not "
				    "read (%s): they start from zero",
				    s->s_me->cs_name, err_msg());
		memset(c, 0, sizeof *c);
		c->cs_version = MSG_CSTATS_SCHEME;
	}
	c->cs_read_only = 0; /* a sum, never a request */
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
