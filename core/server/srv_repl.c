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
#include "core/fault.h"
#include "core/log.h"
#include "core/pg.h"
#include "core/server/srv_internal.h"
#include "core/server/srv_repl.h"

/* One write set, shared by the standbys' queues. */
struct repl_set {
	uint64_t rs_seq;
	size_t rs_len;
	uint32_t rs_refs; /* under its group's g_lock */
	uint8_t rs_data[];
};

/* State of one standby, as its sender knows it (under g_lock). */
enum sb_state {
	SB_PROBE = 0,  /* at start: not known yet */
	SB_INSYNC,     /* waited for */
	SB_BEHIND,     /* to re-sync by snapshot */
	SB_GONE,       /* no longer a standby (srv_repl_lost_set): its
			* sender ends, its slot is reused once it did */
};

struct repl_grp;

struct repl_sb {
	struct repl_grp *rb_g;
	uint32_t rb_srv;
	pthread_t rb_thr;
	bool rb_thr_on;
	struct repl_set **rb_q; /* ring of SRV_REPL_QUEUE */
	uint32_t rb_qhead, rb_qnr;
	size_t rb_qbytes;
	enum sb_state rb_state;
	bool rb_probed;        /* its first probe was answered (or failed) */
	uint64_t rb_acked;     /* highest seq it holds */
	bool rb_logged_down;   /* "unreachable" said once */
	bool rb_syncing;       /* being re-synced now, or refused (answered)
				  at its last try: waited for until the
				  waiter's deadline, not failed at once */
	bool rb_exited;        /* its sender returned (SB_GONE): joinable
				  at once */
	bool rb_new;           /* a replacement, not in sync yet (log) */
};

/* The home side of one engine: the server's own home (g_via false), or a
 * home it acts for (a takeover, g_via true): its hook, its standbys and
 * their senders. */
struct repl_grp {
	struct srv_repl *g_r;
	struct eng *g_eng;
	uint32_t g_home;        /* the home whose store g_eng is */
	bool g_via;             /* a takeover: this server acts for g_home */
	uint64_t g_inc;         /* the takeover incarnation (0: own home) */
	char g_who[96];         /* "server s1" or "server s1 (acting for
				 * home s2)", for the log */
	pthread_mutex_t g_lock;
	pthread_cond_t g_cond;  /* senders: work; waiters: acks */
	bool g_stop;
	bool g_on;              /* the hook is set */
	uint32_t g_nsb;         /* slots used, SB_GONE ones included */
	struct repl_sb g_sb[CLU_REPLICAS_MAX];
	/* a standby refused a call as from a stale sender (-EREMCHG: it
	 * knows a map, at least as new as the epoch this server claimed,
	 * in which another server acts for the home): no write set is
	 * acknowledged while this server's claim is not newer than that
	 * one (grp_deposed_locked()) */
	bool g_deposed;
	uint64_t g_deposed_claim;
	char g_deposed_why[256];
	/* the in-sync standbys changed since they were last recorded
	 * (srv_repl_insync_hook()): a drop is recorded before any later set
	 * is acknowledged, a return when it can be */
	bool g_drop_dirty, g_add_dirty, g_publishing;
	uint64_t g_gen;         /* bumped at each change */
};

struct srv_repl {
	struct srv *r_s;
	struct peers *r_peers;  /* the server's s_peers */
	struct repl_grp *r_own; /* the own home's (NULL: not started) */
	/* the map as this server knows it, per home (srv_repl_view_set, and
	 * what ships with newer epochs taught it): stamped on its own ships,
	 * checked on the ships it receives */
	pthread_mutex_t r_vlock;
	struct eng_repl_view r_view[CLU_SERVERS_MAX];
	uint64_t r_vrefused[CLU_SERVERS_MAX]; /* sender epoch + 1 logged */
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
	bool r_served[CLU_SERVERS_MAX]; /* the shadow's "served" mark */
	srv_repl_insync_fn r_insync_fn; /* srv_repl_insync_hook() */
	void *r_insync_arg;
	/* replacement standbys (srv_repl_lost_set): the servers the map
	 * has lost for good, and the groups running here by home, both
	 * under r_glock (taken before any g_lock) */
	pthread_mutex_t r_glock;
	bool r_lost[CLU_SERVERS_MAX];
	struct repl_grp *r_grp[CLU_SERVERS_MAX];
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

int srv_repl_standbys(const struct clu_conf *c, uint32_t h, const bool *lost,
		      uint32_t *out)
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
			.pc_weight = 1, .pc_in = lost == NULL || !lost[i]};
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

static const char *srv_name(const struct srv_repl *r, uint32_t i)
{
	return r->r_s->s_conf->cc_servers[i].cs_name;
}

static const char *sb_name(const struct repl_sb *b)
{
	return srv_name(b->rb_g->g_r, b->rb_srv);
}

/* b falls behind (lock held): no longer waited for, re-synced by its
 * sender.  why: for the log. */
static void sb_behind_locked(struct repl_grp *g, struct repl_sb *b,
			     const char *why)
{
	if (b->rb_state == SB_GONE)
		return; /* no longer a standby: nothing to re-sync */
	if (b->rb_state != SB_BEHIND)
		LOG_WARNING("%s: standby %s of home %s's metadata is behind "
			    "(%s): not waited for until re-synced by snapshot",
			    g->g_who, sb_name(b), srv_name(g->g_r, g->g_home),
			    why);
	if (b->rb_state == SB_INSYNC) {
		g->g_drop_dirty = true;
		g->g_gen++;
	}
	b->rb_state = SB_BEHIND;
	pthread_cond_broadcast(&g->g_cond);
}

/* The standbys of g, SB_GONE slots left out (lock held). */
static uint32_t grp_live_locked(const struct repl_grp *g)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < g->g_nsb; i++)
		n += g->g_sb[i].rb_state != SB_GONE;
	return n;
}

static void repl_ship(void *arg, uint64_t seq, const void *buf, size_t len)
{
	struct repl_grp *g = arg;
	struct repl_set *rs = malloc(sizeof *rs + len);

	pthread_mutex_lock(&g->g_lock);
	if (g->g_stop) {
		pthread_mutex_unlock(&g->g_lock);
		free(rs);
		return;
	}
	if (rs != NULL) {
		rs->rs_seq = seq;
		rs->rs_len = len;
		rs->rs_refs = 1; /* ours, until the end of the loop */
		memcpy(rs->rs_data, buf, len);
	}
	for (uint32_t i = 0; i < g->g_nsb; i++) {
		struct repl_sb *b = &g->g_sb[i];

		if (b->rb_state == SB_GONE)
			continue;
		if (rs == NULL || len > MSG_REPL_SET_MAX ||
		    b->rb_qnr == SRV_REPL_QUEUE ||
		    b->rb_qbytes + len > SRV_REPL_QUEUE_BYTES) {
			sb_clear_locked(b);
			sb_behind_locked(g, b, rs == NULL ? "out of memory" :
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
	pthread_cond_broadcast(&g->g_cond);
	pthread_mutex_unlock(&g->g_lock);
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

/* The absolute CLOCK_REALTIME time ms from now. */
static struct timespec deadline_ms(uint64_t ms)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)(ms / 1000);
	dl.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	return dl;
}

/* The map epoch this server claims for g's home in its calls (its view:
 * 0 when another server acts for it). */
static uint64_t repl_claim(struct repl_grp *g)
{
	struct srv_repl *r = g->g_r;
	const struct eng_repl_view *v = &r->r_view[g->g_home];
	uint64_t claim;

	pthread_mutex_lock(&r->r_vlock);
	claim = v->rv_acting == r->r_s->s_self ? v->rv_epoch : 0;
	pthread_mutex_unlock(&r->r_vlock);
	return claim;
}

/* A call of g claiming epoch claim was refused by a standby as from a
 * stale sender (lock held). */
static void grp_refused_locked(struct repl_grp *g, uint64_t claim,
			       const char *why)
{
	if (g->g_deposed && claim < g->g_deposed_claim)
		return;
	g->g_deposed = true;
	g->g_deposed_claim = claim;
	snprintf(g->g_deposed_why, sizeof g->g_deposed_why, "%s", why);
	pthread_cond_broadcast(&g->g_cond);
}

/* Is g deposed: a standby knows a map in which another server acts for
 * its home, and this server has no newer claim (lock held)?  A write set
 * acknowledged then would be on standbys that still followed the old map
 * but not on the server now acting for the home: lost at its next
 * re-sync. */
static bool grp_deposed_locked(struct repl_grp *g)
{
	if (!g->g_deposed)
		return false;
	if (repl_claim(g) > g->g_deposed_claim) {
		g->g_deposed = false; /* acting again, at a newer epoch */
		return false;
	}
	return true;
}

/*
 * Record g's in-sync standbys (srv_repl_insync_hook(); lock held, dropped
 * meanwhile; one publisher at a time, the others wait for it).  Returns 0
 * (recorded, or nothing to record), or the hook's error when a drop could
 * not be recorded: a set acknowledged then might be on no standby a
 * takeover would know to wait for.
 */
static int grp_publish_locked(struct repl_grp *g, uint64_t seq)
{
	struct srv_repl *r = g->g_r;
	uint32_t in[CLU_REPLICAS_MAX], n = 0;
	uint64_t gen;
	bool drop;
	int rc;

	while (g->g_publishing && !g->g_stop)
		pthread_cond_wait(&g->g_cond, &g->g_lock);
	if (r->r_insync_fn == NULL) {
		/* nothing records (no HA agent; its hook is set before any
		 * group starts): no later wait comes back here */
		g->g_drop_dirty = g->g_add_dirty = false;
		return 0;
	}
	if (!g->g_drop_dirty && !g->g_add_dirty)
		return 0;
	for (uint32_t i = 0; i < g->g_nsb; i++)
		if (g->g_sb[i].rb_state == SB_INSYNC)
			in[n++] = g->g_sb[i].rb_srv;
	gen = g->g_gen;
	drop = g->g_drop_dirty;
	g->g_publishing = true;
	pthread_mutex_unlock(&g->g_lock);
	rc = r->r_insync_fn(r->r_insync_arg, g->g_home, seq, in, n);
	pthread_mutex_lock(&g->g_lock);
	g->g_publishing = false;
	pthread_cond_broadcast(&g->g_cond);
	if (rc == 0 && gen == g->g_gen)
		g->g_drop_dirty = g->g_add_dirty = false;
	if (rc >= 0 || !drop)
		return 0; /* not yet (> 0), or a return: recorded later */
	return err_set(rc, "%s: write set %" PRIu64 " of home %s not "
		       "acknowledged: its standbys in sync could not be "
		       "recorded after one was dropped: %s", g->g_who, seq,
		       srv_name(r, g->g_home), err_msg());
}

static int repl_wait(void *arg, uint64_t seq)
{
	struct repl_grp *g = arg;
	struct timespec dl = deadline_ms(repl_call_ms(g->g_r) +
					 SRV_REPL_WAIT_SLACK_MS);
	bool late = false;
	int rc = 0;

	pthread_mutex_lock(&g->g_lock);
	for (;;) {
		bool need = false;
		uint32_t have = 0, known_behind = 0, live = grp_live_locked(g);

		if (g->g_stop) {
			rc = err_set(-ESHUTDOWN, "%s: stopping: write set %"
				     PRIu64 " of home %s not acknowledged by "
				     "its standbys", g->g_who, seq,
				     srv_name(g->g_r, g->g_home));
			break;
		}
		if (grp_deposed_locked(g)) {
			rc = err_set(-EREMCHG, "%s: write set %" PRIu64 " of "
				     "home %s not acknowledged: a standby "
				     "follows a map in which another server "
				     "acts for the home (%s)", g->g_who, seq,
				     srv_name(g->g_r, g->g_home),
				     g->g_deposed_why);
			break;
		}
		for (uint32_t i = 0; i < g->g_nsb; i++) {
			if (g->g_sb[i].rb_state != SB_INSYNC)
				continue;
			if (g->g_sb[i].rb_acked < seq)
				need = true;
			else
				have++;
		}
		/* STABLE needs the set on one standby at least (min_size
		 * 2): a home cut off from all of them must not acknowledge
		 * what a takeover on one of them would not have.  A home
		 * without standbys (R = 1) is not replicated at all, but an
		 * acting server with none left of the home's acknowledges
		 * nothing either. */
		if (!need && (have > 0 || (g->g_nsb == 0 && !g->g_via))) {
			uint64_t gen = g->g_gen;

			if (!g->g_drop_dirty && !g->g_add_dirty)
				break;
			rc = grp_publish_locked(g, seq);
			if (rc != 0 || gen == g->g_gen)
				break;
			continue; /* changed meanwhile: counted again */
		}
		/* behind and not being re-synced: a standby in its re-sync
		 * (a snapshot of a small store takes well under the
		 * deadline) is waited for, so that a home whose standbys are
		 * catching up after a map change does not fail its writes */
		for (uint32_t i = 0; !need && have == 0 && i < g->g_nsb;
		     i++)
			known_behind += g->g_sb[i].rb_state == SB_BEHIND &&
					!g->g_sb[i].rb_syncing;
		if (!need && (late || known_behind == live)) {
			if (g->g_via)
				rc = err_set(-EHOSTDOWN, "%s: write set %"
					     PRIu64 " is on no standby of home "
					     "%s's metadata (none of %u in "
					     "sync): not acknowledged", g->g_who,
					     seq, srv_name(g->g_r, g->g_home),
					     live);
			else
				rc = err_set(-EHOSTDOWN, "%s: write set %"
					     PRIu64 " is on no standby of its "
					     "metadata (none of %u in sync): "
					     "not acknowledged", g->g_who, seq,
					     live);
			break;
		}
		if (pthread_cond_timedwait(&g->g_cond, &g->g_lock, &dl) ==
		    ETIMEDOUT) {
			late = true;
			/* a sender stuck past its call timeout: drop them */
			for (uint32_t i = 0; i < g->g_nsb; i++)
				if (g->g_sb[i].rb_state == SB_INSYNC &&
				    g->g_sb[i].rb_acked < seq)
					sb_behind_locked(g, &g->g_sb[i],
							 "no answer in time");
		}
	}
	pthread_mutex_unlock(&g->g_lock);
	return rc;
}

static const struct eng_repl_ops repl_ops = {repl_ship, repl_wait};

/* Stamp q with g's home and this server's view of it: the sender, the
 * map epoch at which it acts for the home, its takeover incarnation
 * (checked by the standby).  A server whose view has another server
 * acting for the home claims no epoch (0): every standby that knows a
 * map refuses it. */
static void repl_stamp(struct repl_grp *g, ReplReq *q)
{
	struct srv_repl *r = g->g_r;
	const struct eng_repl_view *v = &r->r_view[g->g_home];

	q->home = g->g_home;
	q->via = g->g_via ? r->r_s->s_self + 1 : 0;
	pthread_mutex_lock(&r->r_vlock);
	q->epoch = v->rv_acting == r->r_s->s_self ? v->rv_epoch : 0;
	pthread_mutex_unlock(&r->r_vlock);
	q->inc = g->g_inc;
}

/* One call to b's server: ReplReq q, data as OUT bulk. */
static int repl_call(struct repl_sb *b, uint32_t op, ReplReq *q,
		     const void *data, size_t len, bool *answered)
{
	struct srv_repl *r = b->rb_g->g_r;
	struct iovec iov = {(void *)data, len};
	struct rpc_bulk bulk = {RPC_BULK_OUT, &iov, 1};
	struct rpc_result res = {0};
	struct msg_buf mb = {0};
	int rc;

	repl_stamp(b->rb_g, q);
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
static int repl_snapshot(struct repl_sb *b, uint64_t *seq, bool *answered,
			 uint64_t *claim)
{
	struct repl_grp *g = b->rb_g;
	struct srv *s = g->g_r->r_s;
	char path[LIM_PATH_MAX + 64];
	uint8_t *buf = NULL;
	uint64_t total, off = 0;
	struct stat st;
	int fd = -1, rc;

	*answered = false;
	snprintf(path, sizeof path, "%s/repl-snap-s%u-%s.tmp",
		 s->s_me->cs_data_dir, g->g_home, sb_name(b));
	rc = eng_snapshot(g->g_eng, path, seq);
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
		q.seq = *seq;
		q.off = off;
		q.total = total;
		q.last = off + n == total;
		rc = repl_call(b, SOP_REPL_SNAP, &q, buf, n, answered);
		*claim = q.epoch;
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
static void repl_pause_locked(struct repl_grp *g, uint32_t ms)
{
	struct timespec dl = deadline_ms(ms);

	if (!g->g_stop)
		pthread_cond_timedwait(&g->g_cond, &g->g_lock, &dl);
}

/* Bring b in sync (lock held, dropped meanwhile): a probe first when its
 * state is not known (is its shadow at the store's seq?), else a
 * snapshot. */
static void repl_resync_locked(struct repl_grp *g, struct repl_sb *b)
{
	enum sb_state was = b->rb_state;
	bool answered = false, snap = was != SB_PROBE;
	uint64_t seq = 0, claim = 0;
	int rc = 0;

	b->rb_syncing = true;
	pthread_mutex_unlock(&g->g_lock);
	if (!snap) {
		ReplReq q = REPL_REQ__INIT;

		seq = eng_repl_seq(g->g_eng);
		q.seq = seq;
		rc = seq == 0 ? -ESTALE :
		     repl_call(b, SOP_REPL_SHIP, &q, NULL, 0, &answered);
		claim = q.epoch;
		/* behind, missing or refusing: a snapshot now */
		snap = rc == -ESTALE || (rc != 0 && answered);
	}
	pthread_mutex_lock(&g->g_lock);
	b->rb_probed = true;
	pthread_cond_broadcast(&g->g_cond);
	if (b->rb_state == SB_GONE) {
		b->rb_syncing = false;
		return; /* dropped from the list meanwhile */
	}
	pthread_mutex_unlock(&g->g_lock);
	if (snap)
		rc = repl_snapshot(b, &seq, &answered, &claim);
	pthread_mutex_lock(&g->g_lock);
	if (b->rb_state == SB_GONE) {
		b->rb_syncing = false;
		return;
	}
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
		g->g_add_dirty = true;
		g->g_gen++;
		b->rb_syncing = false;
		b->rb_logged_down = false;
		if (b->rb_new)
			LOG_WARNING("%s: replacement standby %s of home %s "
				    "in sync at write set %" PRIu64 "%s",
				    g->g_who, sb_name(b),
				    srv_name(g->g_r, g->g_home), seq,
				    snap ? " (snapshot)" : "");
		else
			LOG_INFO("%s: standby %s of home %s in sync at write "
				 "set %" PRIu64 "%s", g->g_who, sb_name(b),
				 srv_name(g->g_r, g->g_home), seq,
				 snap ? " (snapshot)" : "");
		b->rb_new = false;
		pthread_cond_broadcast(&g->g_cond);
		return;
	}
	b->rb_state = SB_BEHIND;
	if (answered && rc == -EREMCHG)
		grp_refused_locked(g, claim, err_msg());
	/* a standby that answered (a refusal: most often a map epoch it has
	 * not seen yet) is still waited for while it is tried again; one
	 * that did not answer is not */
	b->rb_syncing = answered;
	pthread_cond_broadcast(&g->g_cond);
	if (!b->rb_logged_down) {
		LOG_WARNING("%s: standby %s of home %s not re-synced: %s "
			    "(tried again every %u ms)", g->g_who, sb_name(b),
			    srv_name(g->g_r, g->g_home), err_msg(),
			    SRV_REPL_RETRY_MS);
		b->rb_logged_down = true;
	}
	repl_pause_locked(g, SRV_REPL_RETRY_MS);
}

static void *repl_sender_main(void *arg)
{
	struct repl_sb *b = arg;
	struct repl_grp *g = b->rb_g;
	struct repl_set *batch[SRV_REPL_BATCH];
	uint8_t *cat = NULL;
	const void *data;
	size_t bytes;
	uint32_t nb, taken;

	pthread_mutex_lock(&g->g_lock);
	while (!g->g_stop && b->rb_state != SB_GONE) {
		struct repl_set *rs;
		ReplReq q = REPL_REQ__INIT;
		bool answered = false;
		int rc;

		if (b->rb_state != SB_INSYNC) {
			repl_resync_locked(g, b);
			continue;
		}
		if (b->rb_qnr == 0) {
			pthread_cond_wait(&g->g_cond, &g->g_lock);
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
		pthread_mutex_unlock(&g->g_lock);
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
		q.seq = rs->rs_seq;
		rc = repl_call(b, SOP_REPL_SHIP, &q, data, bytes, &answered);
		free(cat);
		cat = NULL;
		pthread_mutex_lock(&g->g_lock);
		if (rc == 0 && b->rb_state == SB_INSYNC) {
			if (b->rb_acked < batch[nb - 1]->rs_seq)
				b->rb_acked = batch[nb - 1]->rs_seq;
			pthread_cond_broadcast(&g->g_cond);
		} else if (rc != 0) {
			if (answered && rc == -EREMCHG)
				grp_refused_locked(g, q.epoch, err_msg());
			sb_behind_locked(g, b, answered ? err_msg() :
					 "unreachable");
		}
		for (uint32_t i = 0; i < taken; i++)
			set_put_locked(batch[i]);
	}
	b->rb_exited = true;
	pthread_mutex_unlock(&g->g_lock);
	return NULL;
}

/* Stop group g: the hook cleared, waiters failed, senders joined, the
 * queues freed, g freed.  NULL: nothing. */
static void grp_destroy(struct repl_grp *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->g_r->r_glock);
	if (g->g_r->r_grp[g->g_home] == g)
		g->g_r->r_grp[g->g_home] = NULL;
	pthread_mutex_unlock(&g->g_r->r_glock);
	if (g->g_on && g->g_eng != NULL)
		eng_repl_set(g->g_eng, NULL, NULL);
	pthread_mutex_lock(&g->g_lock);
	g->g_stop = true;
	pthread_cond_broadcast(&g->g_cond);
	pthread_mutex_unlock(&g->g_lock);
	for (uint32_t i = 0; i < CLU_REPLICAS_MAX; i++)
		if (g->g_sb[i].rb_thr_on)
			pthread_join(g->g_sb[i].rb_thr, NULL);
	for (uint32_t i = 0; i < CLU_REPLICAS_MAX; i++) {
		if (g->g_sb[i].rb_q == NULL)
			continue;
		sb_clear_locked(&g->g_sb[i]);
		free(g->g_sb[i].rb_q);
	}
	pthread_mutex_destroy(&g->g_lock);
	pthread_cond_destroy(&g->g_cond);
	free(g);
}

/* Start b's sender (lock held).  0 or a negative code with a message. */
static int sb_start_locked(struct repl_sb *b)
{
	int rc = pthread_create(&b->rb_thr, NULL, repl_sender_main, b);

	if (rc != 0)
		return err_set(-rc, "replication sender: %s", strerror(rc));
	b->rb_thr_on = true;
	return 0;
}

/*
 * Make g's standbys those the map now gives (r_glock held, srv_repl_lost_
 * set): one no longer listed is dropped (SB_GONE: its queue freed, its
 * sender ends, a drop recorded before the next acknowledgement when it
 * was in sync); one newly listed gets a slot (a free one, or one whose
 * sender has ended) and a sender that starts with a probe, then a
 * snapshot.
 */
static void grp_members(struct repl_grp *g)
{
	struct srv_repl *r = g->g_r;
	struct srv *s = r->r_s;
	uint32_t sb[CLU_REPLICAS_MAX];
	int n = srv_repl_standbys(s->s_conf, g->g_home, r->r_lost, sb);

	if (n < 0)
		return;
	pthread_mutex_lock(&g->g_lock);
	for (uint32_t i = 0; i < g->g_nsb; i++) {
		struct repl_sb *b = &g->g_sb[i];
		bool keep = false;

		if (b->rb_state == SB_GONE)
			continue;
		for (int k = 0; k < n; k++)
			keep |= sb[k] == b->rb_srv;
		if (keep)
			continue;
		if (b->rb_state == SB_INSYNC) {
			g->g_drop_dirty = true;
			g->g_gen++;
		}
		b->rb_state = SB_GONE;
		sb_clear_locked(b);
		LOG_WARNING("%s: %s is no longer a standby of home %s's "
			    "metadata (lost for good by the map): not shipped "
			    "to nor waited for", g->g_who, sb_name(b),
			    srv_name(r, g->g_home));
	}
	for (int k = 0; k < n; k++) {
		struct repl_sb *b = NULL;
		bool have = sb[k] == s->s_self;

		for (uint32_t i = 0; i < g->g_nsb && !have; i++)
			have = g->g_sb[i].rb_state != SB_GONE &&
			       g->g_sb[i].rb_srv == sb[k];
		if (have)
			continue;
		if (g->g_nsb < CLU_REPLICAS_MAX) {
			b = &g->g_sb[g->g_nsb];
		} else {
			for (uint32_t i = 0; i < g->g_nsb && b == NULL; i++)
				if (g->g_sb[i].rb_state == SB_GONE &&
				    (!g->g_sb[i].rb_thr_on ||
				     g->g_sb[i].rb_exited))
					b = &g->g_sb[i];
			if (b == NULL) {
				LOG_WARNING("%s: no slot free for standby %s of "
					    "home %s yet (a dropped one's "
					    "sender still ends): taken at the "
					    "next map change", g->g_who,
					    srv_name(r, sb[k]),
					    srv_name(r, g->g_home));
				continue;
			}
			if (b->rb_thr_on)
				pthread_join(b->rb_thr, NULL); /* has returned */
		}
		if (b->rb_q == NULL)
			b->rb_q = calloc(SRV_REPL_QUEUE, sizeof(void *));
		if (b->rb_q == NULL) {
			LOG_WARNING("%s: standby %s of home %s: out of memory",
				    g->g_who, srv_name(r, sb[k]),
				    srv_name(r, g->g_home));
			continue;
		}
		{
			struct repl_set **q = b->rb_q;

			*b = (struct repl_sb){ .rb_g = g, .rb_srv = sb[k],
					       .rb_q = q, .rb_state = SB_PROBE,
					       .rb_new = true };
		}
		if (b == &g->g_sb[g->g_nsb])
			g->g_nsb++;
		if (!g->g_on) /* grp_start's own loop starts it */
			continue;
		if (sb_start_locked(b) != 0) {
			b->rb_state = SB_GONE;
			LOG_WARNING("%s: standby %s of home %s: %s", g->g_who,
				    srv_name(r, sb[k]),
				    srv_name(r, g->g_home), err_msg());
			continue;
		}
		LOG_WARNING("%s: replacement standby %s of home %s's metadata "
			    "(a standby is lost for good by the map): brought "
			    "in sync by snapshot", g->g_who, srv_name(r, sb[k]),
			    srv_name(r, g->g_home));
	}
	pthread_cond_broadcast(&g->g_cond);
	pthread_mutex_unlock(&g->g_lock);
}

void srv_repl_lost_set(struct srv *s, const bool *lost)
{
	struct srv_repl *r = s->s_repl;
	uint32_t nr = s->s_conf->cc_nr_servers, sb[CLU_REPLICAS_MAX];
	bool same = true;

	if (r == NULL)
		return;
	pthread_mutex_lock(&r->r_glock);
	for (uint32_t i = 0; i < nr; i++)
		same &= r->r_lost[i] == lost[i];
	if (same) {
		pthread_mutex_unlock(&r->r_glock);
		return;
	}
	memcpy(r->r_lost, lost, nr * sizeof *lost);
	for (uint32_t h = 0; h < nr; h++) {
		int n = srv_repl_standbys(s->s_conf, h, r->r_lost, sb);

		for (int i = 0; i < n; i++)
			if (sb[i] == s->s_self && !r->r_standby_of[h]) {
				r->r_standby_of[h] = true;
				LOG_WARNING("server %s: a replacement standby of "
					    "home %s's metadata (the map lost "
					    "one for good)", s->s_me->cs_name,
					    srv_name(r, h));
			}
	}
	for (uint32_t h = 0; h < nr; h++)
		if (r->r_grp[h] != NULL)
			grp_members(r->r_grp[h]);
	pthread_mutex_unlock(&r->r_glock);
}

int srv_repl_standbys_known(struct srv *s, uint32_t h, uint32_t *out)
{
	struct srv_repl *r = s->s_repl;
	uint32_t a[CLU_REPLICAS_MAX], b[CLU_REPLICAS_MAX];
	int na, nb, n;

	na = srv_repl_standbys(s->s_conf, h, NULL, a);
	if (na < 0 || r == NULL)
		return na;
	pthread_mutex_lock(&r->r_glock);
	nb = srv_repl_standbys(s->s_conf, h, r->r_lost, b);
	pthread_mutex_unlock(&r->r_glock);
	if (nb < 0)
		return nb;
	n = na;
	memcpy(out, a, (size_t)na * sizeof *a);
	for (int k = 0; k < nb; k++) {
		bool dup = false;

		for (int i = 0; i < na; i++)
			dup |= a[i] == b[k];
		if (!dup)
			out[n++] = b[k];
	}
	return n;
}

/* Start the home side of engine e, the store of home h, on this server:
 * its standbys (h's, this server left out), the hook, the senders.  With
 * probe_wait, wait (bounded: one call time and its slack) until every
 * standby's first probe has been answered or failed, so that no write of
 * e can precede the comparison of the shadows' seq with e's (a shadow
 * ahead with a set e never wrote would otherwise look in sync).  0 and
 * *out (NULL when h has no standby and this is the own home), or a
 * negative code with a message (nothing left running). */
static int grp_start(struct srv_repl *r, uint32_t h, struct eng *e,
		     uint64_t inc, bool probe_wait, struct repl_grp **out)
{
	struct srv *s = r->r_s;
	uint32_t sb[CLU_REPLICAS_MAX], n = 0;
	struct repl_grp *g;
	int got, rc;

	*out = NULL;
	pthread_mutex_lock(&r->r_glock);
	got = srv_repl_standbys(s->s_conf, h, r->r_lost, sb);
	pthread_mutex_unlock(&r->r_glock);
	if (got < 0)
		return got;
	for (int i = 0; i < got; i++)
		if (sb[i] != s->s_self)
			sb[n++] = sb[i];
	if (n == 0 && h == s->s_self)
		return 0;
	g = calloc(1, sizeof *g);
	if (g == NULL)
		return err_set(-ENOMEM, "replication of home %s",
			       srv_name(r, h));
	g->g_r = r;
	g->g_eng = e;
	g->g_home = h;
	g->g_via = h != s->s_self;
	g->g_inc = inc;
	if (g->g_via)
		snprintf(g->g_who, sizeof g->g_who, "server %s (acting for "
			 "home %s)", s->s_me->cs_name, srv_name(r, h));
	else
		snprintf(g->g_who, sizeof g->g_who, "server %s",
			 s->s_me->cs_name);
	pthread_mutex_init(&g->g_lock, NULL);
	pthread_cond_init(&g->g_cond, NULL);
	for (uint32_t i = 0; i < n; i++) {
		g->g_sb[i].rb_g = g;
		g->g_sb[i].rb_srv = sb[i];
		g->g_sb[i].rb_q = calloc(SRV_REPL_QUEUE, sizeof(void *));
		if (g->g_sb[i].rb_q == NULL) {
			grp_destroy(g);
			return err_set(-ENOMEM, "replication queues");
		}
	}
	g->g_nsb = n;
	/* a new group records its standbys in sync before it acknowledges
	 * (a standby whose first probe fails was never "dropped") */
	g->g_drop_dirty = n > 0;
	rc = eng_repl_set(e, &repl_ops, g);
	if (rc != 0) {
		grp_destroy(g);
		return rc;
	}
	g->g_on = true;
	for (uint32_t i = 0; i < n; i++) {
		rc = pthread_create(&g->g_sb[i].rb_thr, NULL, repl_sender_main,
				    &g->g_sb[i]);
		if (rc != 0) {
			grp_destroy(g);
			return err_set(-rc, "replication sender: %s",
				       strerror(rc));
		}
		g->g_sb[i].rb_thr_on = true;
	}
	if (probe_wait) {
		struct timespec dl = deadline_ms(repl_call_ms(r) +
						 SRV_REPL_WAIT_SLACK_MS);
		bool all = false;

		pthread_mutex_lock(&g->g_lock);
		while (!all) {
			all = true;
			for (uint32_t i = 0; i < n; i++)
				all &= g->g_sb[i].rb_probed;
			if (!all && pthread_cond_timedwait(&g->g_cond,
				&g->g_lock, &dl) == ETIMEDOUT)
				break;
		}
		pthread_mutex_unlock(&g->g_lock);
	}
	/* from now on it follows the map's losses (srv_repl_lost_set): the
	 * list is taken again under the lock, a change made since the one
	 * above included */
	pthread_mutex_lock(&r->r_glock);
	r->r_grp[h] = g;
	grp_members(g);
	pthread_mutex_unlock(&r->r_glock);
	if (n > 0 && !g->g_via)
		LOG_WARNING("%s: home %s's metadata replicated to %u standby(s), "
			 "first %s, from write set %" PRIu64, g->g_who,
			 srv_name(r, h), n, srv_name(r, sb[0]),
			 eng_repl_seq(e) + 1);
	else if (n > 0) /* a takeover: said as loud as the takeover is */
		LOG_WARNING("%s: home %s's metadata replicated to %u "
			    "standby(s), first %s, from write set %" PRIu64,
			    g->g_who, srv_name(r, h), n, srv_name(r, sb[0]),
			    eng_repl_seq(e) + 1);
	else
		LOG_WARNING("%s: no standby of home %s is left to replicate "
			    "its metadata to: its writes are refused "
			    "(-EHOSTDOWN)", g->g_who, srv_name(r, h));
	*out = g;
	return 0;
}

int srv_repl_start(struct srv *s)
{
	struct srv_repl *r = s->s_repl;

	if (r == NULL)
		return 0;
	/* The server's own table: a second table on the same endpoint would
	 * open a second session to each peer, and the peer keeps one per
	 * endpoint (each connect dropped the other's). */
	r->r_peers = s->s_peers;
	return grp_start(r, s->s_self, s->s_eng, 0, false, &r->r_own);
}

void srv_repl_stop(struct srv *s)
{
	struct srv_repl *r = s->s_repl;

	if (r == NULL)
		return;
	grp_destroy(r->r_own);
	r->r_own = NULL;
	r->r_peers = NULL; /* the server's (peers_destroy() in srv_stop) */
}

int srv_repl_engine_start(struct srv *s, uint32_t h, struct eng *e,
			  uint64_t inc, struct repl_grp **out)
{
	struct srv_repl *r = s->s_repl;

	*out = NULL;
	if (r == NULL || r->r_peers == NULL || h >= s->s_conf->cc_nr_servers ||
	    h == s->s_self)
		return err_set(-EINVAL, "server %s: no replication of home %u",
			       s->s_me->cs_name, h);
	return grp_start(r, h, e, inc, true, out);
}

void srv_repl_engine_stop(struct repl_grp *g)
{
	grp_destroy(g);
}

void srv_repl_insync_hook(struct srv *s, srv_repl_insync_fn fn, void *arg)
{
	struct srv_repl *r = s->s_repl;

	if (r == NULL)
		return;
	r->r_insync_arg = arg;
	r->r_insync_fn = fn;
}

void srv_repl_view_set(struct srv *s, uint32_t h, uint32_t acting,
		       uint64_t epoch, uint64_t inc)
{
	struct srv_repl *r = s->s_repl;
	struct eng_repl_view *v;

	if (r == NULL || h >= CLU_SERVERS_MAX)
		return;
	pthread_mutex_lock(&r->r_vlock);
	v = &r->r_view[h];
	if (epoch >= v->rv_epoch) {
		if (v->rv_acting != acting)
			LOG_INFO("server %s: home %s is served by %s (map epoch "
				 "%" PRIu64 "): replication from it only",
				 s->s_me->cs_name, srv_name(r, h),
				 srv_name(r, acting), epoch);
		*v = (struct eng_repl_view){acting, epoch, inc};
	}
	pthread_mutex_unlock(&r->r_vlock);
}

/* ---------------------------------------------------------- standby side */

/* The shadow's directory, and its "served" mark: a file beside it made
 * (durably) when an engine is opened on the shadow for a takeover, since
 * from then on the shadow may hold sets no other copy has (written there,
 * or left uncaptured by the engine's close); a probe or ship to a marked
 * shadow is answered -ESTALE, so that its next keeper installs a
 * snapshot, which removes the mark. */
static void shadow_paths(const struct srv_repl *r, uint32_t h, char *dir,
			 size_t dlen, char *mark, size_t mlen)
{
	snprintf(dir, dlen, "%s/shadow-s%u", r->r_s->s_me->cs_data_dir, h);
	snprintf(mark, mlen, "%s/shadow-s%u.served",
		 r->r_s->s_me->cs_data_dir, h);
}

/* The shadow of home h, opened on first use (r_shlock[h] held). */
static int shadow_get(struct srv_repl *r, uint32_t h, struct eng_shadow **sh)
{
	char dir[LIM_PATH_MAX + 32], mark[LIM_PATH_MAX + 48];

	if (r->r_sh[h] == NULL) {
		shadow_paths(r, h, dir, sizeof dir, mark, sizeof mark);
		int rc = eng_shadow_open(&r->r_sh[h], dir);

		if (rc != 0)
			return rc;
		r->r_served[h] = access(mark, F_OK) == 0;
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
	if (r->r_served[q->home])
		return err_set(-ESTALE, "shadow %s: served a takeover of %s "
			       "here (at seq %" PRIu64 "): re-synced by snapshot "
			       "only", eng_shadow_dir(sh),
			       srv_name(r, q->home), eng_shadow_seq(sh));
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
	char mark[LIM_PATH_MAX + 48];
	uint8_t *buf;
	uint64_t seq = 0;
	int rc;

	shadow_paths(r, h, dir, sizeof dir, mark, sizeof mark);
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
	/* the shadow is its sender's copy again */
	if (unlink(mark) != 0 && errno != ENOENT)
		return err_set(-errno, "shadow %s: %s: %s", dir, mark,
			       strerror(errno));
	r->r_served[h] = false;
	LOG_INFO("server %s: shadow of %s installed from a snapshot at write "
		 "set %" PRIu64, r->r_s->s_me->cs_name, srv_name(r, h), seq);
	return 0;
}

/* Check the sender of q against this server's view of its home (core/
 * eng_repl.h eng_repl_view_admit): 0, or -EREMCHG naming the home, the
 * sender and both views (logged once per home and sender epoch). */
static int repl_admit(struct srv_repl *r, const ReplReq *q)
{
	uint32_t sender = q->via != 0 ? q->via - 1 : q->home;
	struct eng_repl_view v;
	uint64_t logged;
	int rc;

	pthread_mutex_lock(&r->r_vlock);
	v = r->r_view[q->home];
	rc = eng_repl_view_admit(&r->r_view[q->home], sender, q->epoch,
				 q->inc);
	logged = r->r_vrefused[q->home];
	if (rc < 0)
		r->r_vrefused[q->home] = q->epoch + 1;
	pthread_mutex_unlock(&r->r_vlock);
	if (rc == ENG_REPL_VIEW_LEARNED && v.rv_acting != sender)
		LOG_INFO("server %s: home %s is served by %s (its ship says map "
			 "epoch %" PRIu64 ", this server knew epoch %" PRIu64
			 ")", r->r_s->s_me->cs_name, srv_name(r, q->home),
			 srv_name(r, sender), q->epoch, v.rv_epoch);
	if (rc >= 0)
		return 0;
	rc = err_set(-EREMCHG, "home %s: replication from %s refused: it is "
		     "not the server acting for the home (its map epoch %"
		     PRIu64 ", incarnation %" PRIu64 "; server %s knows epoch %"
		     PRIu64 ": served by %s, incarnation %" PRIu64 ")",
		     srv_name(r, q->home), srv_name(r, sender), q->epoch,
		     q->inc, r->r_s->s_me->cs_name, v.rv_epoch,
		     srv_name(r, v.rv_acting), v.rv_inc);
	if (logged != q->epoch + 1)
		LOG_WARNING("server %s: stale sender: %s", r->r_s->s_me->cs_name,
			    err_msg());
	return rc;
}

/* Test builds: fault point srv.repl.stale.NAME refuses a ship of home
 * NAME's write sets as from a stale sender, as a standby that follows a
 * map in which another server acts for the home would (repl_test.sh);
 * srv.repl.refuse.NAME refuses its ships and snapshots with -EIO, as a
 * standby that misses them (dropped by the home: ha_catchup_test.sh). */
static bool repl_fault(struct srv_repl *r, const char *what, uint32_t h)
{
	char f[64];

	snprintf(f, sizeof f, "srv.repl.%s.%s", what, srv_name(r, h));
	return FAULT_HIT(f);
}

/* The refusal of those fault points for a request op of home h with blen
 * bytes of data (0: none fired). */
static int repl_faults(struct srv_repl *r, uint32_t op, size_t blen,
		       uint32_t h)
{
	static const struct {
		const char *what, *as;
		int rc;
	} f[] = {
		{"refuse", "a standby that misses the home's write sets", -EIO},
		{"stale", "a standby that knows a newer map", -EREMCHG},
	};

	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		bool data = f[i].rc == -EIO ? blen > 0 || op == SOP_REPL_SNAP :
			    op == SOP_REPL_SHIP && blen > 0;

		if (data && repl_fault(r, f[i].what, h))
			return err_set(f[i].rc, "home %s: replication refused: "
				       "fault point srv.repl.%s.%s (%s)",
				       srv_name(r, h), f[i].what,
				       srv_name(r, h), f[i].as);
	}
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

	if (!srv_enter_peer(s)) {
		rpc_sreq_reply(req, -ESHUTDOWN, NULL, 0, "server is stopping");
		return;
	}
	err_clear();
	rc = msg_repl_decode(op, body, len, blen, s->s_self,
			     s->s_conf->cc_nr_servers, &q);
	if (rc == 0 && q->via != 0 &&
	    (q->via > s->s_conf->cc_nr_servers || q->via - 1 == s->s_self ||
	     q->via - 1 == q->home))
		rc = err_set(-EINVAL, "request: repl.via %u: %s", q->via,
			     q->via > s->s_conf->cc_nr_servers ?
			     "not a server of the cluster" :
			     q->via - 1 == s->s_self ? "this server itself" :
			     "the home itself");
	else if (rc == 0 && !r->r_standby_of[q->home])
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
		rc = repl_admit(r, q);
		if (rc == 0)
			rc = repl_faults(r, op, blen, q->home);
		if (rc != 0)
			; /* a stale sender: logged by repl_admit */
		else if (r->r_taken[q->home])
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
	pthread_mutex_init(&r->r_vlock, NULL);
	pthread_mutex_init(&r->r_glock, NULL);
	for (uint32_t h = 0; h < CLU_SERVERS_MAX; h++) {
		pthread_mutex_init(&r->r_shlock[h], NULL);
		r->r_snapfd[h] = -1;
		r->r_view[h].rv_acting = h; /* every home serves itself */
	}
	for (uint32_t h = 0; h < s->s_conf->cc_nr_servers; h++) {
		int n = srv_repl_standbys(s->s_conf, h, NULL, sb);

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
	char sdir[LIM_PATH_MAX + 32], mark[LIM_PATH_MAX + 48];
	int fd, rc = 0;

	if (r == NULL || h >= s->s_conf->cc_nr_servers || !r->r_standby_of[h])
		return err_set(-EINVAL, "server %s: no shadow of server %u",
			       s->s_me->cs_name, h);
	shadow_paths(r, h, sdir, sizeof sdir, mark, sizeof mark);
	pthread_mutex_lock(&r->r_shlock[h]);
	if (r->r_taken[h]) {
		rc = err_set(-EBUSY, "server %s: its shadow of %s is taken "
			     "already", s->s_me->cs_name, srv_name(r, h));
		goto out;
	}
	/* marked before the engine may write it (see shadow_paths) */
	fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || fsync(fd) != 0) {
		rc = err_set(-errno, "server %s: shadow of %s: %s: %s",
			     s->s_me->cs_name, srv_name(r, h), mark,
			     strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	r->r_served[h] = true;
	eng_shadow_close(r->r_sh[h]);
	r->r_sh[h] = NULL;
	if (r->r_snapfd[h] >= 0) {
		close(r->r_snapfd[h]);
		r->r_snapfd[h] = -1;
	}
	r->r_taken[h] = true;
	snprintf(dir, len, "%s", sdir);
out:
	pthread_mutex_unlock(&r->r_shlock[h]);
	return rc;
}

int srv_repl_shadow_copy(struct srv *s, uint32_t h, uint64_t above,
			 const char *path, uint64_t *seq, bool *made)
{
	struct srv_repl *r = s->s_repl;
	struct eng_shadow *sh;
	int rc;

	*seq = 0;
	*made = false;
	if (r == NULL || h >= s->s_conf->cc_nr_servers || !r->r_standby_of[h])
		return err_set(-EINVAL, "server %s: no shadow of server %u",
			       s->s_me->cs_name, h);
	pthread_mutex_lock(&r->r_shlock[h]);
	if (r->r_taken[h]) {
		rc = err_set(-EBUSY, "server %s: its shadow of %s serves a "
			     "takeover", s->s_me->cs_name, srv_name(r, h));
		goto out;
	}
	rc = shadow_get(r, h, &sh);
	if (rc != 0)
		goto out;
	if (r->r_served[h]) {
		rc = err_set(-ESTALE, "server %s: its shadow of %s served a "
			     "takeover (re-synced by snapshot only)",
			     s->s_me->cs_name, srv_name(r, h));
		goto out;
	}
	*seq = eng_shadow_seq(sh);
	if (*seq > above) {
		rc = eng_shadow_snapshot(sh, path, seq);
		*made = rc == 0;
	}
out:
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
	grp_destroy(r->r_own);
	r->r_own = NULL;
	for (uint32_t h = 0; h < CLU_SERVERS_MAX; h++) {
		eng_shadow_close(r->r_sh[h]);
		if (r->r_snapfd[h] >= 0)
			close(r->r_snapfd[h]);
		pthread_mutex_destroy(&r->r_shlock[h]);
	}
	pthread_mutex_destroy(&r->r_vlock);
	pthread_mutex_destroy(&r->r_glock);
	free(r);
	s->s_repl = NULL;
}
