/*
 * srv_repl.c — replicated homes: the home's senders and the standby's
 * shadows (see srv_repl.h, docs/cluster.md "Replicated homes").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/eng_repl.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/pg.h"
#include "core/server/srv_internal.h"
#include "core/server/srv_repl.h"

/* One write set, shared by the standbys' queues. */
struct repl_set {
	uint64_t rs_seq;
	size_t rs_len;
	uint32_t rs_refs; /* under r_lock */
	uint8_t rs_data[];
};

/* State of one standby, as its sender knows it (under r_lock). */
enum sb_state {
	SB_PROBE = 0,  /* at start: not known yet */
	SB_INSYNC,     /* waited for */
	SB_BEHIND,     /* to re-sync by snapshot */
};

struct repl_sb {
	uint32_t rb_srv;
	pthread_t rb_thr;
	bool rb_thr_on;
	struct repl_set **rb_q; /* ring of SRV_REPL_QUEUE */
	uint32_t rb_qhead, rb_qnr;
	size_t rb_qbytes;
	enum sb_state rb_state;
	uint64_t rb_acked;     /* highest seq it holds */
	bool rb_logged_down;   /* "unreachable" said once */
};

struct srv_repl {
	struct srv *r_s;
	pthread_mutex_t r_lock;
	pthread_cond_t r_cond;  /* senders: work; waiters: acks */
	bool r_stop;
	bool r_on;              /* the hook is set */
	uint32_t r_nsb;
	struct repl_sb r_sb[CLU_REPLICAS_MAX];
	struct peers *r_peers;  /* the server's s_peers */
	/* standby side: one shadow per home, and its snapshot being
	 * received */
	pthread_mutex_t r_shlock[CLU_SERVERS_MAX];
	struct eng_shadow *r_sh[CLU_SERVERS_MAX];
	int r_snapfd[CLU_SERVERS_MAX];
	uint64_t r_snapoff[CLU_SERVERS_MAX];
	uint64_t r_snaptotal[CLU_SERVERS_MAX];
	uint64_t r_snapseq[CLU_SERVERS_MAX];
	bool r_standby_of[CLU_SERVERS_MAX];
	bool r_taken[CLU_SERVERS_MAX];  /* srv_repl_shadow_take() */
};

/* ------------------------------------------------------------ standbys */

/* A server's enclosure as pg_cand.pc_encl: pg_key() of its enclosure's
 * name, or of its own name when it has none, exactly as the HA map's
 * ha_home_standbys() (ha/map.c) computes it, so that the analyzer moves a
 * home to a server that holds its shadow. */
static uint32_t encl_of(const struct clu_server *cs, uint32_t i)
{
	(void)i;
	return (uint32_t)pg_key(cs->cs_enclosure[0] != '\0' ?
				cs->cs_enclosure : cs->cs_name);
}

int srv_repl_standbys(const struct clu_conf *c, uint32_t h, uint32_t *out)
{
	struct pg_cand cands[CLU_SERVERS_MAX];
	uint32_t idx[CLU_SERVERS_MAX], pick[CLU_REPLICAS_MAX], n = 0;
	uint32_t r = c->cc_meta_replicas;
	int got;

	if (h >= c->cc_nr_servers)
		return err_set(-EINVAL, "standbys: no server %u", h);
	if (r > c->cc_nr_servers)
		r = c->cc_nr_servers;
	if (r <= 1)
		return 0;
	for (uint32_t i = 0; i < c->cc_nr_servers; i++) {
		if (i == h)
			continue;
		cands[n] = (struct pg_cand){
			.pc_key = pg_key(c->cc_servers[i].cs_name),
			.pc_encl = encl_of(&c->cc_servers[i], i),
			.pc_weight = 1, .pc_in = true};
		idx[n++] = i;
	}
	got = pg_place(h, cands, n, r - 1, pick);
	if (got < 0)
		return got;
	for (int i = 0; i < got; i++)
		out[i] = idx[pick[i]];
	return got;
}

/* ------------------------------------------------------------ home side */

static void set_put_locked(struct repl_set *rs)
{
	if (--rs->rs_refs == 0)
		free(rs);
}

/* Drop every queued set of b (lock held). */
static void sb_clear_locked(struct repl_sb *b)
{
	while (b->rb_qnr > 0) {
		set_put_locked(b->rb_q[b->rb_qhead]);
		b->rb_qhead = (b->rb_qhead + 1) % SRV_REPL_QUEUE;
		b->rb_qnr--;
	}
	b->rb_qbytes = 0;
}

static const char *sb_name(struct srv_repl *r, const struct repl_sb *b)
{
	return r->r_s->s_conf->cc_servers[b->rb_srv].cs_name;
}

/* b falls behind (lock held): no longer waited for, re-synced by its
 * sender.  why: for the log. */
static void sb_behind_locked(struct srv_repl *r, struct repl_sb *b,
			     const char *why)
{
	if (b->rb_state != SB_BEHIND)
		LOG_WARNING("server %s: standby %s of its metadata is behind "
			    "(%s): not waited for until re-synced by snapshot",
			    r->r_s->s_me->cs_name, sb_name(r, b), why);
	b->rb_state = SB_BEHIND;
	pthread_cond_broadcast(&r->r_cond);
}

static void repl_ship(void *arg, uint64_t seq, const void *buf, size_t len)
{
	struct srv_repl *r = arg;
	struct repl_set *rs = malloc(sizeof *rs + len);

	pthread_mutex_lock(&r->r_lock);
	if (r->r_stop) {
		pthread_mutex_unlock(&r->r_lock);
		free(rs);
		return;
	}
	if (rs != NULL) {
		rs->rs_seq = seq;
		rs->rs_len = len;
		rs->rs_refs = 1; /* ours, until the end of the loop */
		memcpy(rs->rs_data, buf, len);
	}
	for (uint32_t i = 0; i < r->r_nsb; i++) {
		struct repl_sb *b = &r->r_sb[i];

		if (rs == NULL || len > MSG_REPL_SET_MAX ||
		    b->rb_qnr == SRV_REPL_QUEUE ||
		    b->rb_qbytes + len > SRV_REPL_QUEUE_BYTES) {
			sb_clear_locked(b);
			sb_behind_locked(r, b, rs == NULL ? "out of memory" :
					 len > MSG_REPL_SET_MAX ?
					 "a write set too big to ship" :
					 "its queue is full");
			continue;
		}
		rs->rs_refs++;
		b->rb_q[(b->rb_qhead + b->rb_qnr) % SRV_REPL_QUEUE] = rs;
		b->rb_qnr++;
		b->rb_qbytes += len;
	}
	if (rs != NULL)
		set_put_locked(rs);
	pthread_cond_broadcast(&r->r_cond);
	pthread_mutex_unlock(&r->r_lock);
}

/* A call to a standby: a third of the cluster's call timeout, at least
 * SRV_REPL_CALL_MIN_MS, so that a home whose standby stopped answering
 * drops it and still answers its client within the client's timeout (as
 * unit calls do, core/server/rdev.h). */
static uint32_t repl_call_ms(const struct srv_repl *r)
{
	uint32_t ms = r->r_s->s_conf->cc_call_ms / 3;

	return ms < SRV_REPL_CALL_MIN_MS ? SRV_REPL_CALL_MIN_MS : ms;
}

static int repl_wait(void *arg, uint64_t seq)
{
	struct srv_repl *r = arg;
	uint64_t limit = repl_call_ms(r) + SRV_REPL_WAIT_SLACK_MS;
	struct timespec dl;
	bool late = false;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)(limit / 1000);
	dl.tv_nsec += (long)(limit % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&r->r_lock);
	for (;;) {
		bool need = false;
		uint32_t have = 0, known_behind = 0;

		if (r->r_stop) {
			rc = err_set(-ESHUTDOWN, "server %s: stopping: write "
				     "set %" PRIu64 " not acknowledged by its "
				     "standbys", r->r_s->s_me->cs_name, seq);
			break;
		}
		for (uint32_t i = 0; i < r->r_nsb; i++) {
			if (r->r_sb[i].rb_state != SB_INSYNC)
				continue;
			if (r->r_sb[i].rb_acked < seq)
				need = true;
			else
				have++;
		}
		/* STABLE needs the set on one standby at least (min_size
		 * 2): a home cut off from all of them must not acknowledge
		 * what a takeover on one of them would not have */
		if (!need && (have > 0 || r->r_nsb == 0))
			break;
		for (uint32_t i = 0; !need && have == 0 && i < r->r_nsb;
		     i++)
			known_behind += r->r_sb[i].rb_state == SB_BEHIND;
		if (!need && (late || known_behind == r->r_nsb)) {
			rc = err_set(-EHOSTDOWN, "server %s: write set %" PRIu64
				     " is on no standby of its metadata (none "
				     "of %u in sync): not acknowledged",
				     r->r_s->s_me->cs_name, seq, r->r_nsb);
			break;
		}
		if (pthread_cond_timedwait(&r->r_cond, &r->r_lock, &dl) ==
		    ETIMEDOUT) {
			late = true;
			/* a sender stuck past its call timeout: drop them */
			for (uint32_t i = 0; i < r->r_nsb; i++)
				if (r->r_sb[i].rb_state == SB_INSYNC &&
				    r->r_sb[i].rb_acked < seq)
					sb_behind_locked(r, &r->r_sb[i],
							 "no answer in time");
		}
	}
	pthread_mutex_unlock(&r->r_lock);
	return rc;
}

static const struct eng_repl_ops repl_ops = {repl_ship, repl_wait};

/* One call to b's server: ReplReq q, data as OUT bulk. */
static int repl_call(struct srv_repl *r, struct repl_sb *b, uint32_t op,
		     ReplReq *q, const void *data, size_t len, bool *answered)
{
	struct iovec iov = {(void *)data, len};
	struct rpc_bulk bulk = {RPC_BULK_OUT, &iov, 1};
	struct rpc_result res = {0};
	struct msg_buf mb = {0};
	int rc;

	rc = msg_pack(&q->base, &mb);
	if (rc != 0)
		return rc;
	rc = peers_call_ms(r->r_peers, b->rb_srv, op, mb.mb_p, mb.mb_len,
			   len > 0 ? &bulk : NULL, repl_call_ms(r), &res);
	free(mb.mb_p);
	free(res.rr_body);
	*answered = res.rr_answered;
	return rc;
}

/* Send b a snapshot of the store and install it there.  0 and *seq, or a
 * negative code (*answered: the standby answered). */
static int repl_snapshot(struct srv_repl *r, struct repl_sb *b, uint64_t *seq,
			 bool *answered)
{
	struct srv *s = r->r_s;
	char path[LIM_PATH_MAX + 64];
	uint8_t *buf = NULL;
	uint64_t total, off = 0;
	struct stat st;
	int fd = -1, rc;

	*answered = false;
	snprintf(path, sizeof path, "%s/repl-snap-%s.tmp", s->s_me->cs_data_dir,
		 sb_name(r, b));
	rc = eng_snapshot(s->s_eng, path, seq);
	if (rc != 0)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		rc = err_set(-errno, "snapshot %s: %s", path, strerror(errno));
		goto out;
	}
	total = (uint64_t)st.st_size;
	buf = malloc(MSG_REPL_CHUNK);
	if (buf == NULL) {
		rc = err_set(-ENOMEM, "snapshot chunk");
		goto out;
	}
	while (off < total) {
		size_t n = total - off < MSG_REPL_CHUNK ? total - off :
			   MSG_REPL_CHUNK;
		ReplReq q = REPL_REQ__INIT;
		ssize_t got = pread(fd, buf, n, (off_t)off);

		if (got != (ssize_t)n) {
			rc = err_set(got < 0 ? -errno : -EIO, "snapshot %s: "
				     "short read", path);
			goto out;
		}
		q.home = s->s_self;
		q.seq = *seq;
		q.off = off;
		q.total = total;
		q.last = off + n == total;
		rc = repl_call(r, b, SOP_REPL_SNAP, &q, buf, n, answered);
		if (rc != 0)
			goto out;
		off += n;
	}
	rc = 0;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	unlink(path);
	return rc;
}

/* Sleep up to ms unless stopping (lock held). */
static void repl_pause_locked(struct srv_repl *r, uint32_t ms)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	if (!r->r_stop)
		pthread_cond_timedwait(&r->r_cond, &r->r_lock, &dl);
}

/* Bring b in sync (lock held, dropped meanwhile): a probe first when its
 * state is not known, else a snapshot. */
static void repl_resync_locked(struct srv_repl *r, struct repl_sb *b)
{
	struct srv *s = r->r_s;
	enum sb_state was = b->rb_state;
	bool answered = false;
	uint64_t seq = 0;
	int rc;

	pthread_mutex_unlock(&r->r_lock);
	if (was == SB_PROBE) {
		ReplReq q = REPL_REQ__INIT;

		seq = eng_repl_seq(s->s_eng);
		q.home = s->s_self;
		q.seq = seq;
		rc = seq == 0 ? -ESTALE :
		     repl_call(r, b, SOP_REPL_SHIP, &q, NULL, 0, &answered);
		if (rc == -ESTALE || (rc != 0 && answered)) {
			/* behind or missing: a snapshot now */
			rc = repl_snapshot(r, b, &seq, &answered);
		}
	} else {
		rc = repl_snapshot(r, b, &seq, &answered);
	}
	pthread_mutex_lock(&r->r_lock);
	if (rc == 0) {
		/* sets up to seq are in the shadow: drop them */
		while (b->rb_qnr > 0 && b->rb_q[b->rb_qhead]->rs_seq <= seq) {
			b->rb_qbytes -= b->rb_q[b->rb_qhead]->rs_len;
			set_put_locked(b->rb_q[b->rb_qhead]);
			b->rb_qhead = (b->rb_qhead + 1) % SRV_REPL_QUEUE;
			b->rb_qnr--;
		}
		b->rb_acked = seq;
		b->rb_state = SB_INSYNC;
		b->rb_logged_down = false;
		LOG_INFO("server %s: standby %s in sync at write set %" PRIu64
			 "%s", s->s_me->cs_name, sb_name(r, b), seq,
			 was == SB_PROBE ? "" : " (snapshot)");
		pthread_cond_broadcast(&r->r_cond);
		return;
	}
	b->rb_state = SB_BEHIND;
	if (!b->rb_logged_down) {
		LOG_WARNING("server %s: standby %s not re-synced: %s (tried "
			    "again every %u ms)", s->s_me->cs_name,
			    sb_name(r, b), err_msg(), SRV_REPL_RETRY_MS);
		b->rb_logged_down = true;
	}
	repl_pause_locked(r, SRV_REPL_RETRY_MS);
}

struct sender_arg {
	struct srv_repl *sa_r;
	struct repl_sb *sa_b;
};

static void *repl_sender_main(void *arg)
{
	struct srv_repl *r = ((struct sender_arg *)arg)->sa_r;
	struct repl_sb *b = ((struct sender_arg *)arg)->sa_b;
	struct repl_set *batch[SRV_REPL_BATCH];
	uint8_t *cat = NULL;
	const void *data;
	size_t bytes;
	uint32_t nb, taken;

	free(arg);
	pthread_mutex_lock(&r->r_lock);
	while (!r->r_stop) {
		struct repl_set *rs;
		ReplReq q = REPL_REQ__INIT;
		bool answered = false;
		int rc;

		if (b->rb_state != SB_INSYNC) {
			repl_resync_locked(r, b);
			continue;
		}
		if (b->rb_qnr == 0) {
			pthread_cond_wait(&r->r_cond, &r->r_lock);
			continue;
		}
		rs = b->rb_q[b->rb_qhead];
		if (rs->rs_seq <= b->rb_acked) {
			b->rb_qhead = (b->rb_qhead + 1) % SRV_REPL_QUEUE;
			b->rb_qnr--;
			b->rb_qbytes -= rs->rs_len;
			set_put_locked(rs);
			continue;
		}
		/* the consecutive sets queued behind it go in the same call
		 * (applied in one transaction there), up to
		 * MSG_REPL_SET_MAX bytes and SRV_REPL_BATCH sets */
		nb = 0;
		bytes = 0;
		for (uint32_t i = 0; i < b->rb_qnr && nb < SRV_REPL_BATCH;
		     i++) {
			struct repl_set *x =
				b->rb_q[(b->rb_qhead + i) % SRV_REPL_QUEUE];

			if ((nb > 0 && (x->rs_seq != batch[nb - 1]->rs_seq + 1 ||
					bytes + x->rs_len > MSG_REPL_SET_MAX)))
				break;
			x->rs_refs++;
			batch[nb++] = x;
			bytes += x->rs_len;
		}
		taken = nb;
		pthread_mutex_unlock(&r->r_lock);
		data = rs->rs_data;
		if (nb > 1) {
			cat = malloc(bytes);
			if (cat == NULL) {
				nb = 1; /* the first alone */
				bytes = rs->rs_len;
			} else {
				size_t at = 0;

				for (uint32_t i = 0; i < nb; i++) {
					memcpy(cat + at, batch[i]->rs_data,
					       batch[i]->rs_len);
					at += batch[i]->rs_len;
				}
				data = cat;
			}
		}
		q.home = r->r_s->s_self;
		q.seq = rs->rs_seq;
		rc = repl_call(r, b, SOP_REPL_SHIP, &q, data, bytes, &answered);
		free(cat);
		cat = NULL;
		pthread_mutex_lock(&r->r_lock);
		if (rc == 0 && b->rb_state == SB_INSYNC) {
			if (b->rb_acked < batch[nb - 1]->rs_seq)
				b->rb_acked = batch[nb - 1]->rs_seq;
			pthread_cond_broadcast(&r->r_cond);
		} else if (rc != 0) {
			sb_behind_locked(r, b, answered ? err_msg() :
					 "unreachable");
		}
		for (uint32_t i = 0; i < taken; i++)
			set_put_locked(batch[i]);
	}
	pthread_mutex_unlock(&r->r_lock);
	return NULL;
}

int srv_repl_start(struct srv *s)
{
	struct srv_repl *r = s->s_repl;
	uint32_t sb[CLU_REPLICAS_MAX];
	int n, rc;

	if (r == NULL)
		return 0;
	n = srv_repl_standbys(s->s_conf, s->s_self, sb);
	if (n <= 0)
		return n;
	/* The server's own table: a second table on the same endpoint would
	 * open a second session to each peer, and the peer keeps one per
	 * endpoint (each connect dropped the other's). */
	r->r_peers = s->s_peers;
	for (int i = 0; i < n; i++) {
		r->r_sb[i].rb_srv = sb[i];
		r->r_sb[i].rb_q = calloc(SRV_REPL_QUEUE, sizeof(void *));
		if (r->r_sb[i].rb_q == NULL)
			return err_set(-ENOMEM, "replication queues");
	}
	r->r_nsb = (uint32_t)n;
	rc = eng_repl_set(s->s_eng, &repl_ops, r);
	if (rc != 0)
		return rc;
	r->r_on = true;
	for (int i = 0; i < n; i++) {
		struct sender_arg *a = malloc(sizeof *a);

		if (a == NULL)
			return err_set(-ENOMEM, "replication sender");
		*a = (struct sender_arg){r, &r->r_sb[i]};
		rc = pthread_create(&r->r_sb[i].rb_thr, NULL, repl_sender_main,
				    a);
		if (rc != 0) {
			free(a);
			return err_set(-rc, "replication sender: %s",
				       strerror(rc));
		}
		r->r_sb[i].rb_thr_on = true;
	}
	LOG_INFO("server %s: metadata replicated to %d standby(s), first %s",
		 s->s_me->cs_name, n, s->s_conf->cc_servers[sb[0]].cs_name);
	return 0;
}

void srv_repl_stop(struct srv *s)
{
	struct srv_repl *r = s->s_repl;

	if (r == NULL)
		return;
	if (r->r_on && s->s_eng != NULL)
		eng_repl_set(s->s_eng, NULL, NULL);
	pthread_mutex_lock(&r->r_lock);
	r->r_stop = true;
	pthread_cond_broadcast(&r->r_cond);
	pthread_mutex_unlock(&r->r_lock);
	for (uint32_t i = 0; i < r->r_nsb; i++)
		if (r->r_sb[i].rb_thr_on) {
			pthread_join(r->r_sb[i].rb_thr, NULL);
			r->r_sb[i].rb_thr_on = false;
		}
	r->r_peers = NULL; /* the server's (peers_destroy() in srv_stop) */
}

/* ---------------------------------------------------------- standby side */

/* The shadow of home h, opened on first use (r_shlock[h] held). */
static int shadow_get(struct srv_repl *r, uint32_t h, struct eng_shadow **sh)
{
	char dir[LIM_PATH_MAX + 32];

	if (r->r_sh[h] == NULL) {
		snprintf(dir, sizeof dir, "%s/shadow-s%u",
			 r->r_s->s_me->cs_data_dir, h);
		int rc = eng_shadow_open(&r->r_sh[h], dir);

		if (rc != 0)
			return rc;
	}
	*sh = r->r_sh[h];
	return 0;
}

static int repl_apply(struct srv_repl *r, struct rpc_sreq *req,
		      const ReplReq *q, size_t blen)
{
	struct eng_shadow *sh;
	uint8_t *buf;
	int rc = shadow_get(r, q->home, &sh);

	if (rc != 0)
		return rc;
	if (blen == 0) /* a probe */
		return eng_shadow_seq(sh) == q->seq ? 0 :
		       err_set(-ESTALE, "shadow %s: at seq %" PRIu64 ", home "
			       "at %" PRIu64, eng_shadow_dir(sh),
			       eng_shadow_seq(sh), q->seq);
	buf = malloc(blen);
	if (buf == NULL)
		return err_set(-ENOMEM, "write set of %zu bytes", blen);
	rc = rpc_sreq_bulk_pull(req, 0, buf, blen);
	if (rc == 0)
		rc = eng_shadow_apply(sh, q->seq, buf, blen);
	if (rc == -ETIMEDOUT)
		return rc; /* the transfer may still land: leak buf */
	free(buf);
	return rc;
}

static int repl_snap_chunk(struct srv_repl *r, struct rpc_sreq *req,
			   const ReplReq *q, size_t blen)
{
	uint32_t h = q->home;
	char path[LIM_PATH_MAX + 48], dir[LIM_PATH_MAX + 32];
	uint8_t *buf;
	uint64_t seq = 0;
	int rc;

	snprintf(dir, sizeof dir, "%s/shadow-s%u", r->r_s->s_me->cs_data_dir,
		 h);
	snprintf(path, sizeof path, "%s.snap", dir);
	if (q->off == 0) {
		if (r->r_snapfd[h] >= 0)
			close(r->r_snapfd[h]);
		r->r_snapfd[h] = open(path, O_WRONLY | O_CREAT | O_TRUNC |
				      O_CLOEXEC, 0644);
		if (r->r_snapfd[h] < 0)
			return err_set(-errno, "snapshot %s: %s", path,
				       strerror(errno));
		r->r_snapoff[h] = 0;
		r->r_snaptotal[h] = q->total;
		r->r_snapseq[h] = q->seq;
	} else if (r->r_snapfd[h] < 0 || q->off != r->r_snapoff[h] ||
		   q->total != r->r_snaptotal[h] || q->seq != r->r_snapseq[h]) {
		return err_set(-EINVAL, "request: repl.%s: not the next chunk "
			       "of the snapshot being received",
			       q->off != r->r_snapoff[h] ? "off" :
			       q->total != r->r_snaptotal[h] ? "total" : "seq");
	}
	buf = malloc(blen);
	if (buf == NULL)
		return err_set(-ENOMEM, "snapshot chunk");
	rc = rpc_sreq_bulk_pull(req, 0, buf, blen);
	if (rc == 0 && pwrite(r->r_snapfd[h], buf, blen, (off_t)q->off) !=
		       (ssize_t)blen)
		rc = err_set(-EIO, "snapshot %s: write failed", path);
	if (rc == -ETIMEDOUT)
		buf = NULL; /* may still land: leaked */
	free(buf);
	if (rc != 0) {
		close(r->r_snapfd[h]);
		r->r_snapfd[h] = -1;
		unlink(path);
		return rc;
	}
	r->r_snapoff[h] += blen;
	if (!q->last)
		return 0;
	close(r->r_snapfd[h]);
	r->r_snapfd[h] = -1;
	eng_shadow_close(r->r_sh[h]);
	r->r_sh[h] = NULL;
	rc = eng_shadow_install(dir, path, &seq);
	if (rc != 0) {
		unlink(path);
		return rc;
	}
	if (seq != q->seq)
		return err_set(-EINVAL, "request: repl.seq %" PRIu64 " but the "
			       "snapshot is at %" PRIu64, q->seq, seq);
	LOG_INFO("server %s: shadow of %s installed from a snapshot at write "
		 "set %" PRIu64, r->r_s->s_me->cs_name,
		 r->r_s->s_conf->cc_servers[h].cs_name, seq);
	return 0;
}

static void srv_repl_handle(struct rpc_sreq *req, void *arg)
{
	struct srv *s = arg;
	struct srv_repl *r = s->s_repl;
	uint32_t op = rpc_sreq_opcode(req);
	size_t len, blen = rpc_sreq_bulk_len(req);
	const void *body = rpc_sreq_body(req, &len);
	ReplReq *q = NULL;
	int rc;

	if (!srv_enter(s)) {
		rpc_sreq_reply(req, -ESHUTDOWN, NULL, 0, "server is stopping");
		return;
	}
	err_clear();
	rc = msg_repl_decode(op, body, len, blen, s->s_self,
			     s->s_conf->cc_nr_servers, &q);
	if (rc == 0 && !r->r_standby_of[q->home])
		rc = err_set(-EINVAL, "request: repl.home %u: server %s is "
			     "not one of its standbys", q->home,
			     s->s_me->cs_name);
	if (rc != 0) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		LOG_INFO("server %s: refused a replication request from %s: "
			 "%s", s->s_me->cs_name, rpc_sreq_peer(req), err_msg());
	} else {
		__atomic_add_fetch(&s->s_cnt.sc_requests, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&r->r_shlock[q->home]);
		if (r->r_taken[q->home])
			rc = err_set(-EBUSY, "server %s: its shadow of %s "
				     "serves a takeover", s->s_me->cs_name,
				     s->s_conf->cc_servers[q->home].cs_name);
		else
			rc = op == SOP_REPL_SHIP ?
			     repl_apply(r, req, q, blen) :
			     repl_snap_chunk(r, req, q, blen);
		pthread_mutex_unlock(&r->r_shlock[q->home]);
	}
	rpc_sreq_reply(req, rc, NULL, 0, rc != 0 ? err_msg() : NULL);
	if (q != NULL)
		repl_req__free_unpacked(q, NULL);
	srv_leave(s);
}

int srv_repl_register(struct srv *s)
{
	struct srv_repl *r;
	uint32_t sb[CLU_REPLICAS_MAX];
	int rc;

	if (s->s_conf->cc_meta_replicas <= 1 || s->s_conf->cc_nr_servers < 2)
		return 0;
	r = calloc(1, sizeof *r);
	if (r == NULL)
		return err_set(-ENOMEM, "replication state");
	r->r_s = s;
	pthread_mutex_init(&r->r_lock, NULL);
	pthread_cond_init(&r->r_cond, NULL);
	for (uint32_t h = 0; h < CLU_SERVERS_MAX; h++) {
		pthread_mutex_init(&r->r_shlock[h], NULL);
		r->r_snapfd[h] = -1;
	}
	for (uint32_t h = 0; h < s->s_conf->cc_nr_servers; h++) {
		int n = srv_repl_standbys(s->s_conf, h, sb);

		for (int i = 0; i < n; i++)
			r->r_standby_of[h] |= sb[i] == s->s_self;
	}
	s->s_repl = r;
	rc = rpc_handler_set(s->s_ep, SOP_REPL_SHIP, srv_repl_handle, s);
	if (rc == 0)
		rc = rpc_handler_set(s->s_ep, SOP_REPL_SNAP, srv_repl_handle, s);
	return rc;
}

int srv_repl_shadow_take(struct srv *s, uint32_t h, char *dir, size_t len)
{
	struct srv_repl *r = s->s_repl;
	int rc = 0;

	if (r == NULL || h >= s->s_conf->cc_nr_servers || !r->r_standby_of[h])
		return err_set(-EINVAL, "server %s: no shadow of server %u",
			       s->s_me->cs_name, h);
	pthread_mutex_lock(&r->r_shlock[h]);
	if (r->r_taken[h]) {
		rc = err_set(-EBUSY, "server %s: its shadow of %s is taken "
			     "already", s->s_me->cs_name,
			     s->s_conf->cc_servers[h].cs_name);
	} else {
		eng_shadow_close(r->r_sh[h]);
		r->r_sh[h] = NULL;
		if (r->r_snapfd[h] >= 0) {
			close(r->r_snapfd[h]);
			r->r_snapfd[h] = -1;
		}
		r->r_taken[h] = true;
		snprintf(dir, len, "%s/shadow-s%u", s->s_me->cs_data_dir, h);
	}
	pthread_mutex_unlock(&r->r_shlock[h]);
	return rc;
}

void srv_repl_shadow_give(struct srv *s, uint32_t h)
{
	struct srv_repl *r = s->s_repl;

	if (r == NULL || h >= CLU_SERVERS_MAX)
		return;
	pthread_mutex_lock(&r->r_shlock[h]);
	r->r_taken[h] = false;
	pthread_mutex_unlock(&r->r_shlock[h]);
}

void srv_repl_fini(struct srv *s)
{
	struct srv_repl *r = s->s_repl;

	if (r == NULL)
		return;
	for (uint32_t h = 0; h < CLU_SERVERS_MAX; h++) {
		eng_shadow_close(r->r_sh[h]);
		if (r->r_snapfd[h] >= 0)
			close(r->r_snapfd[h]);
		pthread_mutex_destroy(&r->r_shlock[h]);
	}
	for (uint32_t i = 0; i < r->r_nsb; i++) {
		pthread_mutex_lock(&r->r_lock);
		sb_clear_locked(&r->r_sb[i]);
		pthread_mutex_unlock(&r->r_lock);
		free(r->r_sb[i].rb_q);
	}
	pthread_mutex_destroy(&r->r_lock);
	pthread_cond_destroy(&r->r_cond);
	free(r);
	s->s_repl = NULL;
}
