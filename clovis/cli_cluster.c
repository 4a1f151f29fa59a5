/*
 * cli_cluster.c — the Clovis backend of cluster mode (docs/cluster.md).
 *
 * clovis_init() in cluster mode loads the cluster file (or fetches it from
 * one server with CONF_GET) and sets cl->cl_exec to exec_cluster(), which
 * ships each engine request to the server(s) that hold its entity and fills
 * the request's results as the embedded engine would:
 *
 *   object (attributes and data)   its home server (clu_home()), or the
 *                                  server the cluster map has acting for
 *                                  that home (docs/cluster.md "Taking
 *                                  over a home"; clu_obj_target());
 *                                  a composite's layer calls too
 *                                  (SOP_LAYER, "layers" below)
 *   container CREATE / DELETE      every server (DELETE after checking
 *                                  that every server's copy is empty)
 *   container OPEN / GETATTR       the first live server from its home
 *   index CREATE / DELETE          its R replicas (home, home+1, ...);
 *                                  a CREATE with the incarnation this
 *                                  client chose (clu_idx_incarnation())
 *   index PUT / DEL                the first live replica, then the others
 *                                  with the first one's seq, all with the
 *                                  op's tag (clu_tag_next())
 *   index GET / NEXT / OPEN / ..   the first live replica (GET and NEXT:
 *                                  once more when all timed out)
 *
 * Servers answer updates when they are durable, so an update reaches
 * STABLE here only once every replica that answered has it on disk.  The
 * worker thread making the call blocks on it; workers run ops in parallel.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "addb/addb.h"
#include "clovis/clovis_internal.h"
#include "clovis/clovis_limits.h"
#include "core/clu_conf.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/server/msg.h"
#include "core/server/peers.h"
#include "ha/ha.pb-c.h"
#include "ha/map.h"
#include "ha/srv_ha.h"

struct clu_client {
	struct clu_conf cc_conf;
	struct peers *cc_peers;
	bool cc_async;          /* clu_obj_start(); STRATA_CLU_ASYNC=0: off */
	uint64_t cc_started;    /* object ops started there (atomic) */
	uint64_t cc_redone;     /* of those, handed to a worker at their end */
	bool cc_units;          /* READs ask for unit places (ObjReq.units);
				 * STRATA_UNIT_READS=0: off */
	uint64_t cc_unit_reads; /* READs read from unit places (atomic) */
	uint64_t cc_unit_again; /* of those asked, read again via the home */
	bool cc_fan;            /* index updates ask the ordering replica to
				 * send the copies (IdxReq.fan);
				 * STRATA_IDX_FAN=0: off */
	uint64_t cc_fan_srv;    /* copies the ordering replica sent (atomic) */
	uint64_t cc_fan_cli;    /* copies this client sent itself (atomic) */
	uint64_t cc_tag_id;     /* this client instance's random id */
	uint64_t cc_tag_ops;    /* index updates tagged (atomic) */
	uint64_t cc_inc_last;   /* the last index incarnation chosen (atomic) */
	/* homes by the cluster map (HA clusters; under cc_mlock) */
	pthread_mutex_t cc_mlock;
	bool cc_map_on;         /* the map takes homes over */
	uint64_t cc_map_epoch;
	uint32_t cc_acting[CLU_SERVERS_MAX]; /* server serving each home */
	bool cc_gone[CLU_SERVERS_MAX];  /* out of service in that map */
	/* the map watcher (clu_watch_main; its cond under cc_mlock) */
	pthread_t cc_watch;
	bool cc_watch_on;
	bool cc_watch_stop;
	pthread_cond_t cc_wcond;
};

static struct clu_client *clu_of(struct clovis *cl)
{
	return cl->cl_backend;
}

/* ------------------------------------------------------------ calls */

/* Call server i with message pb; on success *rp is the decoded reply.
 * *answered (if not NULL): the server answered (a negative rc is its
 * answer, not a transport failure of this call: rpc_result.rr_answered). */
static int clu_call_ans(struct clu_client *c, uint32_t i, uint32_t op,
			const ProtobufCMessage *pb,
			const struct rpc_bulk *bulk, uint32_t want_rcs,
			Reply **rp, bool *answered)
{
	struct msg_buf b = {0};
	struct rpc_result res;
	int rc = pb != NULL ? msg_pack(pb, &b) : 0;

	if (answered != NULL)
		*answered = false;
	if (rc != 0)
		return rc;
	rc = peers_call(c->cc_peers, i, op, b.mb_p, b.mb_len, bulk, &res);
	free(b.mb_p);
	if (answered != NULL)
		*answered = res.rr_answered;
	if (rc == 0 && rp != NULL)
		rc = msg_reply_decode(res.rr_body, res.rr_len, want_rcs, rp);
	free(res.rr_body);
	return rc;
}

/* clu_call_ans() without *answered. */
static int clu_call(struct clu_client *c, uint32_t i, uint32_t op,
		    const ProtobufCMessage *pb, const struct rpc_bulk *bulk,
		    uint32_t want_rcs, Reply **rp)
{
	return clu_call_ans(c, i, op, pb, bulk, want_rcs, rp, NULL);
}

static int clu_ha_call(struct clu_client *c, uint32_t s, const HaReq *q,
		       char **out);

/* The i-th server in ring order from the home of id. */
static uint32_t clu_ring(const struct clu_client *c, const struct st_id *id,
			 uint32_t i)
{
	return (clu_home(&c->cc_conf, id) + i) % c->cc_conf.cc_nr_servers;
}

/*
 * Homes by the map (docs/cluster.md "Taking over a home").  In a cluster
 * with HA whose map keeps standbys (meta_replicas > 1), the objects of a
 * home h are served by the server the map has acting for h (h itself
 * unless h was taken over).  The client holds the acting server of each
 * home from the map it last read from a server (HAK_MAP, at open and
 * whenever the server it sent an object request to refused it with
 * -EREMCHG or could not be reached), and sends object requests there.
 */
static uint32_t clu_home_target(struct clu_client *c, uint32_t h)
{
	uint32_t a;

	pthread_mutex_lock(&c->cc_mlock);
	a = c->cc_map_on ? c->cc_acting[h] : h;
	pthread_mutex_unlock(&c->cc_mlock);
	return a;
}

static uint32_t clu_obj_target(struct clu_client *c, const struct st_id *id)
{
	return clu_home_target(c, clu_home(&c->cc_conf, id));
}

static uint64_t clu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Will the map move the home that server s serves: homes are taken over
 * (cc_map_on) and the last map read has s out of service? */
static bool clu_home_moves(struct clu_client *c, uint32_t s)
{
	bool moves;

	pthread_mutex_lock(&c->cc_mlock);
	moves = c->cc_map_on && c->cc_gone[s];
	pthread_mutex_unlock(&c->cc_mlock);
	return moves;
}

/* Is server s worth asking first: not known down or gone, and not
 * keeping calls waiting without an answer (peers_silent_ms())? */
static bool clu_answers(struct clu_client *c, uint32_t s)
{
	return peers_live(c->cc_peers, s) &&
	       peers_silent_ms(c->cc_peers, s) < CLU_WATCH_SILENT_MS;
}

/*
 * Servers out of service by map m (newer than any taken before: the
 * caller checked): neither ONLINE nor REBALANCING, the states in which
 * a server serves its home (the analyzer's rule "home"), nor QUARANTINED
 * (a flapping server, likely up).  Each newly
 * out is marked gone in the peer table (peers_set_gone(): the calls
 * waiting on it end now, none is sent to it), each back is cleared.
 * Only with replicated homes (hm_meta_replicas >= 2): another server can
 * then take its home over; without, it is the only one that can serve
 * its home, and a server FAILED in the map may well be up (frozen and
 * continued, before the analyzer's return: cluster_test.sh's SIGSTOP
 * read "Host is down: FAILED in the cluster map" of a live server).
 */
static void clu_map_gone(struct clu_client *c, const struct ha_map *m)
{
	const struct clu_conf *cf = &c->cc_conf;

	for (uint32_t i = 0; i < cf->cc_nr_servers; i++) {
		enum ha_state st = m->hm_servers[i].hs_state;
		/* QUARANTINED: flapping, often up (dtx_cluster_test kills
		 * and restarts s1 again and again): its home is served
		 * elsewhere, but it is asked directly as before (a dtx LIST,
		 * an index replica), its calls bounded by the timeout */
		bool out = ha_srv_out(m, i);
		bool was;

		pthread_mutex_lock(&c->cc_mlock);
		was = c->cc_gone[i];
		c->cc_gone[i] = out;
		pthread_mutex_unlock(&c->cc_mlock);
		if (out) {
			char why[160];

			snprintf(why, sizeof why, "%s in the cluster map "
				 "(epoch %" PRIu64 ")", ha_state_name(st),
				 m->hm_epoch);
			if (!was || !peers_gone(c->cc_peers, i))
				peers_set_gone(c->cc_peers, i, why);
		} else if (was) {
			peers_clear_gone(c->cc_peers, i);
		}
	}
}

/* Read the map from the first server that answers, from the one after
 * avoid on (the one that failed us: it is asked last), those that answer
 * (clu_answers()) before the others; take its homes and its servers out
 * of service (clu_map_gone()).  Returns 0, or the error of the last
 * server asked. */
static int clu_map_refresh(struct clu_client *c, uint32_t avoid)
{
	const struct clu_conf *cf = &c->cc_conf;
	HaReq q = HA_REQ__INIT;
	struct ha_map *m;
	int rc = -EHOSTDOWN;
	bool newer = false, refused = false;
	char refusal[LIM_ERRMSG_LEN];

	if (cf->cc_nr_etcd == 0)
		return -ENOTSUP;
	m = malloc(sizeof *m);
	if (m == NULL)
		return err_set(-ENOMEM, "cluster map");
	q.kind = HAK_MAP;
	for (uint32_t k = 1; k <= 2 * cf->cc_nr_servers; k++) {
		uint32_t s = (avoid + k) % cf->cc_nr_servers;
		bool first = k <= cf->cc_nr_servers;
		char *text = NULL;

		/* the first round those that answer, the second the rest */
		if (clu_answers(c, s) != first)
			continue;
		rc = clu_ha_call(c, s, &q, &text);
		if (rc == 0 && text != NULL)
			rc = ha_map_from_json(m, text, strlen(text));
		else if (rc == 0)
			rc = err_set(-EIO, "server %s: an empty map",
				     cf->cc_servers[s].cs_name);
		free(text);
		if (rc == 0)
			break;
		if (rc == -EACCES && !refused) {
			/* a wrong secret is the most telling failure: a later
			 * contact may only say "is down" (cluster_test.sh) */
			refused = true;
			snprintf(refusal, sizeof refusal, "%s", err_msg());
		}
	}
	if (rc != 0 && refused)
		rc = err_set(-EACCES, "%s", refusal);
	if (rc == 0) {
		bool same = m->hm_nr_servers == cf->cc_nr_servers;

		for (uint32_t i = 0; same && i < cf->cc_nr_servers; i++)
			same = strcmp(m->hm_servers[i].hs_name,
				      cf->cc_servers[i].cs_name) == 0;
		pthread_mutex_lock(&c->cc_mlock);
		if (m->hm_epoch >= c->cc_map_epoch) {
			newer = same;
			c->cc_map_epoch = m->hm_epoch;
			c->cc_map_on = same && m->hm_meta_replicas >= 2;
			for (uint32_t h = 0; h < cf->cc_nr_servers; h++) {
				int a = ha_home_acting(m, h);
				c->cc_acting[h] = same && a >= 0 ? (uint32_t)a
								: h;
			}
		}
		pthread_mutex_unlock(&c->cc_mlock);
		/* the process's epoch is left to the servers' refusals
		 * (peers.h): a request of an older one is refused and sent
		 * again at once */
		if (newer)
			clu_map_gone(c, m);
	}
	free(m);
	return rc;
}

/*
 * The map watcher (HA clusters; clovis/README.md "Clients and a dead
 * server").  A server that dies does not close its connections in a way
 * the transport reports: a call waiting on it would end only at its
 * deadline, the cluster's call timeout (20 s in a dev cluster), long after
 * the analyzer marked it FAILED and moved its home.  Every
 * CLU_WATCH_TICK_MS the watcher looks at the calls waiting on each
 * server (peers_silent_ms(), no call sent); when some have waited
 * CLU_WATCH_SILENT_MS without any answer from their server, it reads the
 * map from a server that answers (clu_map_refresh()): a server the map
 * has out of service is marked gone, which fails its waiting calls now
 * (-EHOSTDOWN: an object op then goes to the server acting for its home,
 * an index op to the next replica, as after a timeout).  While the map
 * has a server out, the watcher reads it every CLU_WATCH_GONE_MS to see
 * it back.  A server that is alive but slow costs one map read per
 * CLU_WATCH_SILENT_MS, nothing else.  STRATA_CLU_WATCH=0 turns it off.
 */
static void *clu_watch_main(void *arg)
{
	struct clu_client *c = arg;
	uint32_t n = c->cc_conf.cc_nr_servers;
	uint64_t last = 0;

	pthread_mutex_lock(&c->cc_mlock);
	while (!c->cc_watch_stop) {
		struct timespec ts;
		uint32_t silent = UINT32_MAX;
		bool gone = false;
		uint64_t now;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)CLU_WATCH_TICK_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&c->cc_wcond, &c->cc_mlock, &ts);
		if (c->cc_watch_stop)
			break;
		for (uint32_t i = 0; i < n; i++)
			gone = gone || c->cc_gone[i];
		pthread_mutex_unlock(&c->cc_mlock);
		for (uint32_t i = 0; i < n && silent == UINT32_MAX; i++)
			if (!peers_gone(c->cc_peers, i) &&
			    peers_silent_ms(c->cc_peers, i) >=
			    CLU_WATCH_SILENT_MS)
				silent = i;
		now = clu_now_ms();
		if ((silent != UINT32_MAX &&
		     now - last >= CLU_WATCH_SILENT_MS) ||
		    (gone && now - last >= CLU_WATCH_GONE_MS)) {
			uint64_t ms = silent != UINT32_MAX ?
				      peers_silent_ms(c->cc_peers, silent) : 0;
			int rc;

			last = now;
			rc = clu_map_refresh(c, silent != UINT32_MAX ? silent
								     : n - 1);
			if (silent != UINT32_MAX)
				LOG_INFO("map watcher: calls wait on server %s "
					 "without an answer for %" PRIu64 " ms: "
					 "map read (%s)%s",
					 c->cc_conf.cc_servers[silent].cs_name,
					 ms, rc == 0 ? "ok" : err_msg(),
					 peers_gone(c->cc_peers, silent) ?
					 "; it is out of service" : "");
		}
		pthread_mutex_lock(&c->cc_mlock);
	}
	pthread_mutex_unlock(&c->cc_mlock);
	return NULL;
}

/* Should an object request refused or failed with rc by the server it
 * went to (answered: the server answered) be sent to the map's acting
 * server again?  Reads the map; true when the request should go again
 * (to clu_obj_target()): a refusal for the home (-EREMCHG: nothing ran)
 * always, a server unreachable when the map now names another one. */
static bool clu_home_reroute(struct clu_client *c, uint32_t h,
			     const char *what, uint32_t was, int rc,
			     bool answered)
{
	bool unreachable = !answered || rc == -EHOSTDOWN ||
			   rc == -ETIMEDOUT;

	if (c->cc_conf.cc_nr_etcd == 0 || (rc != -EREMCHG && !unreachable))
		return false;
	if (answered && rc == -EHOSTDOWN)
		return false; /* the home answered: its own call failed */
	if (clu_map_refresh(c, was) != 0)
		return false;
	/* was out of service in the map (the watcher failed the call when
	 * it saw it FAILED) and its home not moved yet: the move comes in
	 * the same decision round, an epoch or two later; waited for at
	 * most a call timeout, which the call would have waited anyway */
	for (uint64_t t0 = clu_now_ms();
	     rc != -EREMCHG && clu_home_target(c, h) == was &&
	     clu_home_moves(c, was) &&
	     clu_now_ms() - t0 < c->cc_conf.cc_call_ms;) {
		usleep(CLU_MOVE_POLL_MS * 1000);
		if (clu_map_refresh(c, was) != 0)
			return false;
	}
	if (clu_home_target(c, h) == was && rc != -EREMCHG)
		return false;
	LOG_INFO("%s: server %s %s; the map has home %s served by %s "
		 "(epoch %" PRIu64 "): sent there", what,
		 c->cc_conf.cc_servers[was].cs_name,
		 rc == -EREMCHG ? "does not serve its home" : "unreachable",
		 c->cc_conf.cc_servers[h].cs_name,
		 c->cc_conf.cc_servers[clu_home_target(c, h)].cs_name,
		 c->cc_map_epoch);
	return true;
}

static bool clu_obj_reroute(struct clu_client *c, const struct st_id *id,
			    uint32_t was, int rc, bool answered)
{
	char what[64];

	snprintf(what, sizeof what, "object %s", eng_id_str(id));
	return clu_home_reroute(c, clu_home(&c->cc_conf, id), what, was, rc,
				answered);
}

static uint32_t clu_replicas(const struct clu_client *c)
{
	return c->cc_conf.cc_replicas < c->cc_conf.cc_nr_servers
		       ? c->cc_conf.cc_replicas : c->cc_conf.cc_nr_servers;
}

/*
 * Call the first server of the ring (among the first nr) that answers;
 * transport failures move on to the next.  *who: the one that answered.
 * rflags: the rflags field of the index request pb (NULL for others): a
 * server this client could not reach since its last index answer gets
 * SRF_VERIFY, so that it re-verifies its indices against their other
 * replicas before it serves (it may have been cut off without noticing,
 * while another replica ordered updates).
 */
/*
 * For tests (cluster_test.sh, asymmetric partitions): STRATA_TEST_SKIP_SERVERS
 * ("s0,s2") makes this client treat those servers as unreachable for index
 * requests (as if cut off from this client alone, while the servers still
 * see each other), and STRATA_TEST_VERIFY=1 sets SRF_VERIFY on every index
 * request, as a client does at its next request to a server it could not
 * reach (a CLI process does not remember that from one run to the next).
 */
static bool clu_test_skip(const struct clu_client *c, uint32_t s)
{
	const char *e = getenv("STRATA_TEST_SKIP_SERVERS");
	const char *name = c->cc_conf.cc_servers[s].cs_name;
	size_t len = strlen(name);

	for (const char *p = e; p != NULL && *p != '\0';) {
		const char *end = strchr(p, ',');
		size_t l = end != NULL ? (size_t)(end - p) : strlen(p);

		if (l == len && memcmp(p, name, l) == 0)
			return true;
		p = end != NULL ? end + 1 : NULL;
	}
	return false;
}

static bool clu_test_verify(void)
{
	const char *e = getenv("STRATA_TEST_VERIFY");

	return e != NULL && strcmp(e, "1") == 0;
}

static int clu_call_first_tm(struct clu_client *c, const struct st_id *id,
			     uint32_t nr, uint32_t op,
			     const ProtobufCMessage *pb,
			     const struct rpc_bulk *bulk, uint32_t want,
			     Reply **rp, uint32_t *who, uint32_t *rflags,
			     uint64_t *timed_out)
{
	int rc = err_set(-EHOSTDOWN, "no server of %s reachable",
			 eng_id_str(id));

	for (uint32_t i = 0; i < nr; i++) {
		uint32_t s = clu_ring(c, id, i);
		bool verify;

		if ((!peers_live(c->cc_peers, s) ||
		     (rflags != NULL && clu_test_skip(c, s))) && i + 1 < nr)
			continue;
		verify = rflags != NULL && (peers_was_down(c->cc_peers, s) ||
					    clu_test_verify());
		if (verify)
			*rflags |= SRF_VERIFY;
		rc = clu_call(c, s, op, pb, bulk, want, rp);
		if (verify)
			*rflags &= ~(uint32_t)SRF_VERIFY;
		if (verify && !peers_rc_transport(rc) && rc != -EHOSTDOWN)
			peers_clear_was_down(c->cc_peers, s);
		if (rc == -ETIMEDOUT && timed_out != NULL)
			*timed_out |= 1ull << s;
		/* -ESTALE: an index replica that reaches none of the others
		 * will not order updates; the next one may. */
		if (!peers_rc_transport(rc) && rc != -EHOSTDOWN &&
		    (rc != -ESTALE || i + 1 == nr)) {
			if (who != NULL)
				*who = s;
			return rc;
		}
	}
	return rc;
}

static int clu_call_first(struct clu_client *c, const struct st_id *id,
			  uint32_t nr, uint32_t op, const ProtobufCMessage *pb,
			  const struct rpc_bulk *bulk, uint32_t want, Reply **rp,
			  uint32_t *who, uint32_t *rflags)
{
	return clu_call_first_tm(c, id, nr, op, pb, bulk, want, rp, who,
				 rflags, NULL);
}

/*
 * A read (index GET or NEXT page: idempotent) from the first replica that
 * answers, as clu_call_first(); when it ends in a call timeout
 * (-ETIMEDOUT: no replica answered in time, e.g. one busy verifying its
 * copy under load), once more around the ring, the replicas that timed out
 * tried again at once (not kept marked down): one more round at most.
 */
static int clu_read_first(struct clu_client *c, const struct st_id *id,
			  const ProtobufCMessage *pb,
			  const struct rpc_bulk *bulk, uint32_t want,
			  Reply **rp, uint32_t *rflags)
{
	uint32_t nr = clu_replicas(c);
	uint64_t tm = 0;
	int rc = clu_call_first_tm(c, id, nr, SOP_IDX, pb, bulk, want, rp,
				   NULL, rflags, &tm);

	if (rc != -ETIMEDOUT || tm == 0)
		return rc;
	LOG_INFO("index %s: read timed out on every replica tried (%s); "
		 "trying once more", eng_id_str(id), err_msg());
	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++)
		if (tm & (1ull << s))
			peers_retry_now(c->cc_peers, s);
	return clu_call_first(c, id, nr, SOP_IDX, pb, bulk, want, rp, NULL,
			      rflags);
}

/* ------------------------------------------------------------ results */

/* An update succeeded: report it as the engine's committer would. */
static int clu_done(struct eng_req *r)
{
	if (r->er_ci.ci_executed != NULL)
		r->er_ci.ci_executed(&r->er_ci);
	r->er_ci.ci_done(&r->er_ci, 0);
	return ENG_PENDING;
}

static bool clu_is_update(uint32_t kind)
{
	switch (kind) {
	case ER_OBJ_READ:
	case ER_IDX_GET:
	case ER_IDX_NEXT:
	case ER_ENT_OPEN:
	case ER_ENT_GETATTR:
		return false;
	default:
		return true;
	}
}

static int clu_finish(struct eng_req *r, int rc, Reply *rp)
{
	if (rc == 0 && rp != NULL && rp->attr != NULL) {
		struct st_id cont = r->er_container;

		msg_attr_in(rp->attr, &r->er_ent);
		r->er_ent.me_type = r->er_type;
		if (rp->attr->container == NULL)
			r->er_ent.me_container = cont;
	}
	if (rc == 0 && rp != NULL)
		r->er_bytes = rp->bytes;
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	if (rc != 0)
		return rc;
	return clu_is_update(r->er_kind) ? clu_done(r) : 0;
}

/* ------------------------------------------------------------ entities */

static void clu_ent_req(EntReq *q, SId *id, SId *cont, SAttr *a, SId *ac,
			const struct eng_req *r, uint32_t rflags)
{
	ent_req__init(q);
	msg_id_out(id, &r->er_id);
	msg_id_out(cont, &r->er_container);
	msg_attr_out(a, ac, &r->er_ent);
	q->kind = r->er_kind;
	q->type = r->er_type;
	q->id = id;
	q->container = cont;
	q->attr = a;
	q->incarnation = r->er_ent.me_ctime_ns;
	q->rflags = rflags;
}

/* Is container id empty on every live server?  0 or -ENOTEMPTY. */
static int clu_cont_empty(struct clu_client *c, const struct st_id *id)
{
	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++)
		for (uint32_t t = ST_ET_OBJ; t <= ST_ET_IDX; t++) {
			ListReq q = LIST_REQ__INIT;
			SId sid;
			Reply *rp = NULL;
			int rc;

			msg_id_out(&sid, id);
			q.container = &sid;
			q.type = t;
			q.nr = 1;
			rc = clu_call(c, s, SOP_LIST, &q.base, NULL, 0, &rp);
			if (rc == 0 && rp->n_ids > 0)
				rc = err_set(-ENOTEMPTY, "container %s is not "
					     "empty (server %s)", eng_id_str(id),
					     c->cc_conf.cc_servers[s].cs_name);
			if (rp != NULL)
				reply__free_unpacked(rp, NULL);
			if (rc == -ENOTEMPTY)
				return rc;
		}
	return 0;
}

/* Container CREATE or DELETE on every live server. */
static int clu_cont_all(struct clu_client *c, struct eng_req *r)
{
	EntReq q;
	SId id, cont, ac;
	SAttr a;
	Reply *keep = NULL;
	int first = 0, ok = 0;
	char msg[LIM_ERRMSG_LEN] = "";

	if (r->er_kind == ER_ENT_DELETE) {
		struct st_id dflt = ST_ID_DEFAULT_CONTAINER;
		int rc;

		if (st_id_cmp(&r->er_id, &dflt) == 0)
			return err_set(-EPERM, "the default container cannot "
				       "be deleted");
		rc = clu_cont_empty(c, &r->er_id);

		if (rc != 0)
			return rc;
	}
	clu_ent_req(&q, &id, &cont, &a, &ac, r, 0);
	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++) {
		Reply *rp = NULL;
		int rc = clu_call(c, s, SOP_ENT, &q.base, NULL, 0, &rp);

		if (rc == 0) {
			ok++;
			if (keep == NULL)
				keep = rp;
			else
				reply__free_unpacked(rp, NULL);
		} else if (first == 0 && !peers_rc_transport(rc) &&
			   rc != -EHOSTDOWN) {
			first = rc;
			snprintf(msg, sizeof msg, "%s", err_msg());
		} else if (first == 0 && ok == 0) {
			snprintf(msg, sizeof msg, "%s", err_msg());
		}
	}
	if (ok == 0) {
		if (keep != NULL)
			reply__free_unpacked(keep, NULL);
		return err_set(first != 0 ? first : -EHOSTDOWN, "%s", msg);
	}
	return clu_finish(r, 0, keep);
}

/*
 * The incarnation of an index this client creates: the time now in ns
 * (clients see it as the index's ctime), above every one this client chose
 * before, so that two CREATEs of one client never share one.  Chosen here,
 * not by the replica that applies the CREATE first: every replica that
 * applies this CREATE makes the index with it, the first one included, so
 * a replica that applies it late (slow or frozen while this client timed
 * out on it and made the index on the next replica) makes the same
 * incarnation as the one acknowledged (srv_idx.c, "Incarnations").
 */
static uint64_t clu_idx_incarnation(struct clu_client *c)
{
	struct timespec ts;
	uint64_t now, last;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	last = __atomic_load_n(&c->cc_inc_last, __ATOMIC_RELAXED);
	do {
		if (now <= last)
			now = last + 1;
	} while (!__atomic_compare_exchange_n(&c->cc_inc_last, &last, now,
					      false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return now;
}

/* Index CREATE and DELETE: every replica; the first answers for all.  A
 * CREATE carries the incarnation this client chose to every replica
 * (clu_idx_incarnation()). */
static int clu_idx_ent_all(struct clu_client *c, struct eng_req *r)
{
	EntReq q;
	SId id, cont, ac;
	SAttr a;
	Reply *rp = NULL;
	uint32_t who = 0, nr = clu_replicas(c);
	int rc;

	clu_ent_req(&q, &id, &cont, &a, &ac, r, SRF_INDEX);
	if (r->er_kind == ER_ENT_CREATE)
		q.incarnation = clu_idx_incarnation(c);
	rc = clu_call_first(c, &r->er_id, nr, SOP_ENT, &q.base, NULL, 0, &rp,
			    &who, NULL);
	if (rc != 0)
		return rc;
	q.rflags = SRF_INDEX | SRF_REPLICA;
	/* the first replica's answer: the one chosen (a server that does not
	 * take it from the client answers the one it made) */
	q.incarnation = rp->attr != NULL ? rp->attr->ctime_ns : 0;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t s = clu_ring(c, &r->er_id, i);
		int rr;

		if (s == who || !peers_live(c->cc_peers, s))
			continue;
		rr = clu_call(c, s, SOP_ENT, &q.base, NULL, 0, NULL);
		if (rr != 0)
			LOG_INFO("index %s: replica on %s: %s",
				 eng_id_str(&r->er_id),
				 c->cc_conf.cc_servers[s].cs_name, err_msg());
	}
	return clu_finish(r, 0, rp);
}

/* An op refused -EBUSY (nothing ran): pause and say to send it again,
 * while within the call timeout from the first refusal (*busy: its time,
 * 0 before it; clovis_limits.h CLU_BUSY_PAUSE_MS). */
static bool clu_busy_pause(struct clu_client *c, uint64_t *busy)
{
	uint64_t now = clu_now_ms(), pause, n;

	if (*busy == 0)
		*busy = now;
	if (now - *busy >= c->cc_conf.cc_call_ms)
		return false;
	n = (now - *busy) / CLU_BUSY_PAUSE_MS;
	pause = CLU_BUSY_PAUSE_MS;
	while (pause < CLU_BUSY_PAUSE_MAX_MS && (n >>= 1) != 0)
		pause *= 2;
	if (pause > CLU_BUSY_PAUSE_MAX_MS)
		pause = CLU_BUSY_PAUSE_MAX_MS;
	usleep((useconds_t)pause * 1000);
	return true;
}

/* How a request to the server serving a home goes again (clu_home_again()):
 * the time of its first -EBUSY (0: none yet), the reroutes made. */
struct clu_again {
	uint64_t ca_busy;
	uint32_t ca_moved;
};

/*
 * After a request to home h sent to server s failed with rc (answered: s
 * answered it), should it go again (to clu_home_target())?  Refused busy
 * (nothing ran): after a pause, within the call timeout (clu_busy_pause());
 * otherwise, when reroute, at most CLU_REROUTES_MAX times, where
 * clu_home_reroute() says so.  what names the request for the log.
 */
static bool clu_home_again(struct clu_client *c, uint32_t h, const char *what,
			   uint32_t s, int rc, bool answered, bool reroute,
			   struct clu_again *g)
{
	if (rc == -EBUSY && answered && clu_busy_pause(c, &g->ca_busy)) {
		peers_retry_note(c->cc_peers, s);
		return true;
	}
	if (!reroute || g->ca_moved >= CLU_REROUTES_MAX ||
	    !clu_home_reroute(c, h, what, s, rc, answered))
		return false;
	g->ca_moved++;
	peers_retry_note(c->cc_peers, s);
	return true;
}

/* clu_home_again() for a request on object id (its home's). */
static bool clu_obj_again(struct clu_client *c, const struct st_id *id,
			  uint32_t s, int rc, bool answered, bool reroute,
			  struct clu_again *g)
{
	char what[64];

	snprintf(what, sizeof what, "object %s", eng_id_str(id));
	return clu_home_again(c, clu_home(&c->cc_conf, id), what, s, rc,
			      answered, reroute, g);
}

/*
 * An object's entity request (CREATE, DELETE, OPEN, GETATTR) to the
 * server serving its home.  Sent once more to the map's acting server
 * when refused there (-EREMCHG: nothing ran), or, for OPEN and GETATTR
 * (reads), when that server could not be reached and the map names
 * another; a CREATE or DELETE whose server could not be reached is not
 * sent again (it may have been applied: sent again it could answer
 * -EEXIST or -ENOENT for what succeeded): its error goes to the caller.
 */
static int clu_obj_ent(struct clu_client *c, struct eng_req *r, EntReq *q,
		       Reply **rp)
{
	bool read = r->er_kind == ER_ENT_OPEN || r->er_kind == ER_ENT_GETATTR;
	struct clu_again g = {0};
	int rc = 0;

	for (;;) {
		uint32_t s = clu_obj_target(c, &r->er_id);
		bool answered;

		rc = clu_call_ans(c, s, SOP_ENT, &q->base, NULL, 0, rp,
				  &answered);
		if (rc == 0 ||
		    !clu_obj_again(c, &r->er_id, s, rc, answered,
				   read || rc == -EREMCHG, &g))
			break;
		if (*rp != NULL) {
			reply__free_unpacked(*rp, NULL);
			*rp = NULL;
		}
	}
	return rc;
}

static int clu_ent(struct clu_client *c, struct eng_req *r)
{
	EntReq q;
	SId id, cont, ac;
	SAttr a;
	Reply *rp = NULL;
	uint32_t nr = 1;
	int rc;

	if (r->er_type == ST_ET_CONTAINER &&
	    (r->er_kind == ER_ENT_CREATE || r->er_kind == ER_ENT_DELETE))
		return clu_cont_all(c, r);
	if (r->er_type == ST_ET_IDX &&
	    (r->er_kind == ER_ENT_CREATE || r->er_kind == ER_ENT_DELETE))
		return clu_idx_ent_all(c, r);
	if (r->er_type == ST_ET_CONTAINER)
		nr = c->cc_conf.cc_nr_servers;
	else if (r->er_type == ST_ET_IDX)
		nr = clu_replicas(c);
	clu_ent_req(&q, &id, &cont, &a, &ac, r,
		    r->er_type == ST_ET_IDX ? SRF_INDEX : 0);
	if (r->er_type == ST_ET_OBJ) {
		rc = clu_obj_ent(c, r, &q, &rp);
		return clu_finish(r, rc, rp);
	}
	rc = clu_call_first(c, &r->er_id, nr, SOP_ENT, &q.base, NULL, 0, &rp,
			    NULL, r->er_type == ST_ET_IDX ? &q.rflags : NULL);
	return clu_finish(r, rc, rp);
}

/* ------------------------------------------------------------ objects */

/* The object request of r, pointing into the caller's id, cont, a and ac
 * (they must outlive q); the data, if any, is the caller's to attach. */
static void obj_req_fill(ObjReq *q, const struct eng_req *r, SId *id,
			 SId *cont, SAttr *a, SId *ac)
{
	msg_id_out(id, &r->er_id);
	msg_id_out(cont, &r->er_container);
	msg_attr_out(a, ac, &r->er_ent);
	q->kind = r->er_kind;
	q->id = id;
	q->container = cont;
	q->attr = a;
	q->n_start = q->n_count = r->er_ext->ev_nr;
	q->start = r->er_ext->ev_start_blk;
	q->count = r->er_ext->ev_nr_blks;
}

/* Does READ r ask its home for the places of its data units (read from
 * their servers by this client: cli_units.c)?  A pdclust or mirror
 * object by its handle's attributes, buffers a bulk takes directly. */
static bool clu_units_want(const struct clu_client *c,
			   const struct eng_req *r)
{
	return __atomic_load_n(&c->cc_units, __ATOMIC_RELAXED) &&
	       r->er_kind == ER_OBJ_READ &&
	       r->er_data != NULL && r->er_data->bv_nr <= CLU_ASYNC_IOV &&
	       (r->er_ent.me_layout == ST_LAYOUT_PDCLUST ||
		r->er_ent.me_layout == ST_LAYOUT_MIRROR);
}

static int clu_obj_from(struct clu_client *c, struct eng_req *r,
			uint32_t t0, bool units);

/* READ r was answered with unit places *rp (freed here): read them, or,
 * when that fails (logged), the READ again through the home. */
static int clu_units_run(struct clu_client *c, struct eng_req *r, Reply *rp)
{
	int rc = clu_units_read(c->cc_peers, &c->cc_conf, r, rp);

	r->er_bytes = rp->bytes;
	reply__free_unpacked(rp, NULL);
	if (rc == 0) {
		__atomic_add_fetch(&c->cc_unit_reads, 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_add_fetch(&c->cc_unit_again, 1, __ATOMIC_RELAXED);
	LOG_INFO("object %s: a read of its units failed (%s): read again "
		 "through its home", eng_id_str(&r->er_id), err_msg());
	return clu_obj_from(c, r, 0, false);
}

void clu_units_set(struct clovis *cl, bool on)
{
	struct clu_client *c = clu_of(cl);

	if (c != NULL)
		__atomic_store_n(&c->cc_units, on, __ATOMIC_RELAXED);
}

void clu_idx_fan_set(struct clovis *cl, bool on)
{
	struct clu_client *c = clu_of(cl);

	if (c != NULL)
		__atomic_store_n(&c->cc_fan, on, __ATOMIC_RELAXED);
}

void clu_idx_fan_counts(struct clovis *cl, uint64_t *by_server,
			uint64_t *by_client)
{
	struct clu_client *c = clu_of(cl);

	*by_server = c != NULL ? __atomic_load_n(&c->cc_fan_srv,
						 __ATOMIC_RELAXED) : 0;
	*by_client = c != NULL ? __atomic_load_n(&c->cc_fan_cli,
						 __ATOMIC_RELAXED) : 0;
}

void clu_unit_counts(struct clovis *cl, uint64_t *direct, uint64_t *again)
{
	struct clu_client *c = clu_of(cl);

	*direct = c != NULL ? __atomic_load_n(&c->cc_unit_reads,
					      __ATOMIC_RELAXED) : 0;
	*again = c != NULL ? __atomic_load_n(&c->cc_unit_again,
					     __ATOMIC_RELAXED) : 0;
}

/* The bulk of r's buffers (READ: into them, WRITE: from them), through
 * iov (r->er_data->bv_nr entries, at most CLU_BULK_IOV). */
static struct rpc_bulk clu_obj_bulk(const struct eng_req *r,
				    struct iovec *iov)
{
	for (uint32_t i = 0; i < r->er_data->bv_nr; i++)
		iov[i] = (struct iovec){r->er_data->bv_buf[i],
					r->er_data->bv_len[i]};
	return (struct rpc_bulk){r->er_kind == ER_OBJ_READ ? RPC_BULK_IN :
				 RPC_BULK_OUT, iov, r->er_data->bv_nr};
}

/*
 * An op with more buffers than one call's bulk takes (CLU_BULK_IOV, the
 * RPC layer's limit: clovis.h allows CLOVIS_VEC_MAX in both modes) goes
 * in ONE call all the same, so that a WRITE stays one atomic commit on
 * its home as clovis.h promises (splitting it into several calls would
 * make it several commits, and a crash between them would leave part of
 * it): its CLU_BULK_DIRECT largest buffers travel from or into the
 * caller's memory as they are, and each run of the others between them
 * through one slice of a bounce buffer (a WRITE copies them in before the
 * call, a READ copies them out after its answer).  So at most
 * 2 * CLU_BULK_DIRECT + 1 segments, and only the small buffers are
 * copied.
 */

struct clu_bulk {
	struct iovec cb_iov[CLU_BULK_IOV];
	uint32_t cb_nr;
	char *cb_bounce; /* the runs' copies (NULL: every buffer direct) */
	size_t cb_len;
	bool *cb_direct; /* per buffer (with cb_bounce) */
};

/* Mark the CLU_BULK_DIRECT largest buffers of bv direct (the first of
 * equal ones); the bytes of the others in *copied. */
static void clu_bulk_pick(const struct st_bufvec *bv, bool *direct,
			  size_t *copied)
{
	size_t tot = 0;

	for (uint32_t k = 0; k < CLU_BULK_DIRECT; k++) {
		uint32_t best = UINT32_MAX;

		for (uint32_t i = 0; i < bv->bv_nr; i++)
			if (!direct[i] && (best == UINT32_MAX ||
					   bv->bv_len[i] > bv->bv_len[best]))
				best = i;
		direct[best] = true;
	}
	for (uint32_t i = 0; i < bv->bv_nr; i++)
		tot += direct[i] ? 0 : bv->bv_len[i];
	*copied = tot;
}

/* Set up b for r's buffers: direct up to CLU_BULK_IOV, else the largest
 * direct and runs of the others bounced (a WRITE's copied in). */
static int clu_bulk_init(struct clu_bulk *b, const struct eng_req *r,
			 struct rpc_bulk *out)
{
	const struct st_bufvec *bv = r->er_data;
	size_t pos = 0;

	memset(b, 0, sizeof *b);
	if (bv->bv_nr <= CLU_BULK_IOV) {
		*out = clu_obj_bulk(r, b->cb_iov);
		return 0;
	}
	b->cb_direct = calloc(bv->bv_nr, sizeof *b->cb_direct);
	if (b->cb_direct == NULL)
		return err_set(-ENOMEM, "object %s: %u buffers",
			       eng_id_str(&r->er_id), bv->bv_nr);
	clu_bulk_pick(bv, b->cb_direct, &b->cb_len);
	b->cb_bounce = malloc(b->cb_len);
	if (b->cb_bounce == NULL) {
		free(b->cb_direct);
		return err_set(-ENOMEM, "object %s: bounce buffer of %zu "
			       "bytes for %u buffers", eng_id_str(&r->er_id),
			       b->cb_len, bv->bv_nr);
	}
	for (uint32_t i = 0; i < bv->bv_nr; i++) {
		struct iovec *last = b->cb_nr ? &b->cb_iov[b->cb_nr - 1] : NULL;

		if (b->cb_direct[i]) {
			b->cb_iov[b->cb_nr++] = (struct iovec){bv->bv_buf[i],
							       bv->bv_len[i]};
			continue;
		}
		if (r->er_kind != ER_OBJ_READ)
			memcpy(b->cb_bounce + pos, bv->bv_buf[i], bv->bv_len[i]);
		if (last != NULL && i > 0 && !b->cb_direct[i - 1])
			last->iov_len += bv->bv_len[i];
		else
			b->cb_iov[b->cb_nr++] = (struct iovec){
				b->cb_bounce + pos, bv->bv_len[i]};
		pos += bv->bv_len[i];
	}
	*out = (struct rpc_bulk){r->er_kind == ER_OBJ_READ ? RPC_BULK_IN :
				 RPC_BULK_OUT, b->cb_iov, b->cb_nr};
	return 0;
}

/* A READ that succeeded: its bounced buffers get their bytes. */
static void clu_bulk_read_out(const struct clu_bulk *b,
			      const struct eng_req *r)
{
	const struct st_bufvec *bv = r->er_data;
	size_t pos = 0;

	for (uint32_t i = 0; b->cb_bounce != NULL && i < bv->bv_nr; i++) {
		if (b->cb_direct[i])
			continue;
		memcpy(bv->bv_buf[i], b->cb_bounce + pos, bv->bv_len[i]);
		pos += bv->bv_len[i];
	}
}

static void clu_bulk_fini(struct clu_bulk *b)
{
	free(b->cb_bounce);
	free(b->cb_direct);
}

/* The home answered msg, a transport code: r goes once more. */
static void clu_obj_resend_note(const struct eng_req *r, const char *msg)
{
	LOG_INFO("object %s: %s; sent again (the server places around the "
		 "unreachable one)", eng_id_str(&r->er_id), msg);
}

static int clu_obj_from(struct clu_client *c, struct eng_req *r,
			uint32_t t0, bool units)
{
	ObjReq q = OBJ_REQ__INIT;
	struct clu_again g = {0};
	SId id, cont, ac;
	SAttr a;
	struct rpc_bulk bulk = {RPC_BULK_NONE, NULL, 0};
	struct clu_bulk cb = {0};
	Reply *rp = NULL;
	int rc;

	obj_req_fill(&q, r, &id, &cont, &a, &ac);
	q.units = units && clu_units_want(c, r);
	if (r->er_data != NULL && (rc = clu_bulk_init(&cb, r, &bulk)) != 0)
		return rc;
	/*
	 * The home answered a transport code: its call to another server
	 * (a remote device of the object's units) failed, e.g. a link cut
	 * between its unit write and the commit's sync there.  Nothing of
	 * the op was committed, and the home now places around that server:
	 * the op (READ, WRITE, ALLOC or FREE, the only kinds sent here: the
	 * same blocks, the same bytes again) is sent once more, and goes on
	 * degraded.
	 */
	for (uint32_t t = t0;;) {
		uint32_t s = clu_obj_target(c, &r->er_id);
		bool answered;

		rc = clu_call_ans(c, s, SOP_OBJ, &q.base,
				  r->er_data != NULL ? &bulk : NULL, 0, &rp,
				  &answered);
		/* its home busy (handed back, opening), or taken over (or
		 * given back): again to the server the map now has serving
		 * it (the same blocks, the same bytes: nothing applies twice
		 * differently) */
		if (rc != 0 && clu_obj_again(c, &r->er_id, s, rc, answered,
					     true, &g)) {
			if (rp != NULL) {
				reply__free_unpacked(rp, NULL);
				rp = NULL;
			}
			continue;
		}
		/* a reroute counts as a send once more */
		if (rc == 0 || !answered || !peers_rc_transport(rc) ||
		    t + g.ca_moved >= CLU_OBJ_RETRIES)
			break;
		clu_obj_resend_note(r, err_msg());
		t++;
	}
	if (rc == 0 && q.units && rp != NULL && rp->n_units > 0) {
		/* answered by places: nothing was pushed into the bulk */
		clu_bulk_fini(&cb);
		return clu_units_run(c, r, rp);
	}
	if (rc == 0 && r->er_kind == ER_OBJ_READ)
		clu_bulk_read_out(&cb, r);
	clu_bulk_fini(&cb);
	if (rc == 0 && rp != NULL)
		r->er_bytes = rp->bytes;
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	if (rc != 0)
		return rc;
	return clu_is_update(r->er_kind) ? clu_done(r) : 0;
}

static int clu_obj(struct clu_client *c, struct eng_req *r)
{
	return clu_obj_from(c, r, 0, true);
}

/*
 * Object READ and WRITE started from the launching thread
 * (docs/cluster.md "Object ops without a worker").  The request goes to
 * the home at once (peers_call_async) and the op ends on the RPC progress
 * thread when the answer comes: no worker thread is woken for it, none
 * waits on the call, and every op launched is in flight at once whatever
 * the number of workers.  An end that needs a blocking step goes to a
 * worker (clu_obj_redo): an unreachable home (its table records it, which
 * may close the connection), a transport code answered by the home (the
 * op is sent once more, as clu_obj() does), a busy home (clu_obj() from
 * the start after a pause: its pauses and retries).  The call holds a
 * reference to its connection to its end (peers.c), so another call's
 * failure on that connection does not end this one.
 */

/* An object op started by clu_obj_start(): where its end is kept for the
 * worker that finishes it (op_actx; allocated at the start, so that the
 * end on the progress thread allocates nothing). */
struct clu_actx {
	struct clovis_op *ax_op;
	struct peers_end ax_end;
	Reply *ax_rp;           /* a READ answered by unit places */
};

static int clu_obj_redo(struct clovis_op *op);

static int clu_obj_redo_run(struct clovis_op *op)
{
	struct clu_client *c = clu_of(op->op_cl);
	struct eng_req *r = &op->op_req;
	struct clu_actx *ax = op->op_actx;
	const struct peers_end *e = &ax->ax_end;
	uint32_t t0 = 0;
	int rc;

	op->op_actx = NULL;
	op->op_run = NULL;
	peers_call_failed(c->cc_peers, e);
	if (e->pe_unreachable) {
		rc = err_set(e->pe_rc, "%s", e->pe_msg);
		/* its home taken over: to the server the map now names */
		if (clu_obj_reroute(c, &r->er_id, e->pe_srv, rc, false)) {
			free(ax);
			return clu_obj_from(c, r, 0, true);
		}
		rc = err_set(e->pe_rc, "%s", e->pe_msg);
		free(ax);
		return rc;
	}
	if (e->pe_rc == -EBUSY) {
		/* as peers_call_ms() between its tries */
		usleep(PEERS_BUSY_PAUSE_MS * 1000);
	} else if (e->pe_rc == -EREMCHG) {
		/* refused at the gate for its map epoch, nothing run: sent
		 * again under the newer one (peers_epoch_adopt()) */
	} else {
		clu_obj_resend_note(r, e->pe_msg);
		t0 = 1;
	}
	free(ax);
	return clu_obj_from(c, r, t0, true);
}

/* Does asynchronous call end e need the blocking way (clu_call(): its
 * connect, pauses and retries): the server unreachable, busy, or
 * answering a transport code or -EREMCHG? */
static bool clu_end_redo(const struct peers_end *e)
{
	return e->pe_unreachable || e->pe_rc == -EBUSY ||
	       (e->pe_answered && (peers_rc_transport(e->pe_rc) ||
				   e->pe_rc == -EREMCHG));
}

/* A READ answered by unit places, on a worker: the units read, or the
 * READ again through the home. */
static int clu_obj_units_redo(struct clovis_op *op)
{
	struct clu_client *c = clu_of(op->op_cl);
	struct eng_req *r = &op->op_req;
	struct clu_actx *ax = op->op_actx;
	uint64_t prev = addb_trace_cur_set(r->er_ci.ci_trace);
	Reply *rp = ax->ax_rp;
	int rc;

	op->op_actx = NULL;
	op->op_run = NULL;
	free(ax);
	rc = clu_units_run(c, r, rp);
	addb_trace_cur_set(prev);
	return rc;
}

static void clu_obj_end(void *arg, struct peers_end *e)
{
	struct clu_actx *ax = arg;
	struct clovis_op *op = ax->ax_op;
	struct clu_client *c = clu_of(op->op_cl);
	struct eng_req *r = &op->op_req;
	Reply *rp = NULL;
	int rc = e->pe_rc;

	if (clu_end_redo(e)) {
		free(e->pe_body);
		ax->ax_end = *e;
		ax->ax_end.pe_body = NULL;
		__atomic_add_fetch(&c->cc_redone, 1, __ATOMIC_RELAXED);
		op_requeue(op, clu_obj_redo); /* op_actx is ax */
		return;
	}
	op->op_actx = NULL;
	free(ax);
	if (rc != 0) {
		free(e->pe_body);
		op_finish(op, rc, e->pe_msg);
		return;
	}
	err_clear();
	rc = msg_reply_decode(e->pe_body, e->pe_len, 0, &rp);
	free(e->pe_body);
	if (rc != 0) {
		op_finish(op, rc, err_msg());
		return;
	}
	if (rp->n_units > 0 && r->er_kind == ER_OBJ_READ) {
		/* places: the unit reads wait, so on a worker */
		ax = calloc(1, sizeof *ax);
		if (ax == NULL) {
			reply__free_unpacked(rp, NULL);
			op_finish(op, -ENOMEM, "unit reads");
			return;
		}
		ax->ax_op = op;
		ax->ax_rp = rp;
		op->op_actx = ax;
		__atomic_add_fetch(&c->cc_redone, 1, __ATOMIC_RELAXED);
		op_requeue(op, clu_obj_units_redo);
		return;
	}
	r->er_bytes = rp->bytes;
	reply__free_unpacked(rp, NULL);
	if (clu_is_update(r->er_kind))
		clu_done(r); /* op_committed(): finishes op */
	else
		op_finish(op, 0, "");
}

static int clu_obj_redo(struct clovis_op *op)
{
	uint64_t prev = addb_trace_cur_set(op->op_req.er_ci.ci_trace);
	int rc = clu_obj_redo_run(op);

	addb_trace_cur_set(prev);
	return rc;
}

int clu_obj_start(struct clovis_op *op)
{
	struct clu_client *c = clu_of(op->op_cl);
	struct eng_req *r = &op->op_req;
	ObjReq q = OBJ_REQ__INIT;
	SId id, cont, ac;
	SAttr a;
	struct iovec iov[CLU_ASYNC_IOV];
	struct rpc_bulk bulk;
	struct msg_buf b = {0};
	struct clu_actx *ax;
	uint64_t prev;
	int rc;

	if (!c->cc_async || r->er_data->bv_nr > CLU_ASYNC_IOV)
		return -EAGAIN;
	obj_req_fill(&q, r, &id, &cont, &a, &ac);
	q.units = clu_units_want(c, r);
	bulk = clu_obj_bulk(r, iov);
	ax = calloc(1, sizeof *ax);
	if (ax == NULL)
		return -EAGAIN;
	if (msg_pack(&q.base, &b) != 0) {
		free(ax);
		return -EAGAIN;
	}
	ax->ax_op = op;
	op->op_actx = ax;
	prev = addb_trace_cur_set(r->er_ci.ci_trace);
	rc = peers_call_async(c->cc_peers, clu_obj_target(c, &r->er_id), SOP_OBJ,
			      b.mb_p, b.mb_len, &bulk, clu_obj_end, ax);
	addb_trace_cur_set(prev);
	free(b.mb_p);
	if (rc != 0) { /* nothing sent: op and ax are still ours */
		op->op_actx = NULL;
		free(ax);
		return -EAGAIN;
	}
	__atomic_add_fetch(&c->cc_started, 1, __ATOMIC_RELAXED);
	return 0;
}

void clu_async_counts(struct clovis *cl, uint64_t *started, uint64_t *redone)
{
	struct clu_client *c = clu_of(cl);

	*started = c != NULL ? __atomic_load_n(&c->cc_started,
					       __ATOMIC_RELAXED) : 0;
	*redone = c != NULL ? __atomic_load_n(&c->cc_redone,
					      __ATOMIC_RELAXED) : 0;
}

/* ------------------------------------------------------------ indices */

/* An IdxReq for records [from, from + nr) with their packed bytes. */
struct clu_idx_msg {
	IdxReq im_q;
	SId im_id;
	SId im_cont;
	uint32_t *im_klen;
	uint32_t *im_vlen;
	uint8_t *im_recs;
	size_t im_len;
	struct iovec im_iov;
	struct rpc_bulk im_bulk;
};

static void clu_idx_msg_fini(struct clu_idx_msg *m)
{
	free(m->im_klen);
	free(m->im_vlen);
	free(m->im_recs);
}

static int clu_idx_msg(struct clu_idx_msg *m, const struct eng_req *r,
		       uint32_t kind, uint32_t from, uint32_t nr, uint32_t nk)
{
	IdxReq *q = &m->im_q;
	bool vals = kind == ER_IDX_PUT;
	int rc;

	memset(m, 0, sizeof *m);
	idx_req__init(q);
	m->im_klen = calloc(nk ? nk : 1, sizeof(uint32_t));
	m->im_vlen = calloc(nr, sizeof(uint32_t));
	if (m->im_klen == NULL || m->im_vlen == NULL)
		return err_set(-ENOMEM, "index %s: request",
			       eng_id_str(&r->er_id));
	rc = msg_recs_pack(r->er_keys, vals ? r->er_vals : NULL, from, nk,
			   m->im_klen, m->im_vlen, &m->im_recs, &m->im_len);
	if (rc != 0)
		return rc;
	msg_id_out(&m->im_id, &r->er_id);
	msg_id_out(&m->im_cont, &r->er_container);
	q->kind = kind;
	q->id = &m->im_id;
	q->container = &m->im_cont;
	q->incarnation = r->er_ent.me_ctime_ns;
	q->flags = r->er_flags;
	q->nr = nr;
	q->n_klen = nk;
	q->klen = m->im_klen;
	q->n_vlen = vals ? nk : 0;
	q->vlen = m->im_vlen;
	if (m->im_len <= MSG_RECS_INLINE) {
		q->recs.data = m->im_recs;
		q->recs.len = m->im_len;
	} else {
		m->im_iov = (struct iovec){m->im_recs, m->im_len};
		m->im_bulk = (struct rpc_bulk){RPC_BULK_OUT, &m->im_iov, 1};
	}
	return 0;
}

static const struct rpc_bulk *clu_idx_bulk(const struct clu_idx_msg *m)
{
	return m->im_bulk.rb_nr != 0 ? &m->im_bulk : NULL;
}

/*
 * An update acknowledged by the replicas of got did not reach those of
 * missed: before it is reported done, the replicas that have it record the
 * others as behind (IDX_STATE + SRF_BEHIND), so that a replica that missed
 * it learns so from them and serves nothing of the index until it caught
 * up (docs/cluster.md "Replicas that missed updates").  Best effort: a
 * replica that cannot be told is logged.
 */
static void clu_idx_missed(struct clu_client *c, const struct st_id *id,
			   uint64_t missed, uint64_t got, uint64_t term,
			   uint64_t seq)
{
	IdxReq q = IDX_REQ__INIT;
	SId sid;

	msg_id_out(&sid, id);
	q.id = &sid;
	q.rflags = SRF_BEHIND;
	q.behind = missed;
	q.term = term;
	q.seq = seq;
	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++)
		if ((got & (1ull << s)) &&
		    clu_call(c, s, SOP_IDX_STATE, &q.base, NULL, 0, NULL) != 0)
			LOG_INFO("index %s: server %s not told of the replicas "
				 "that missed an update: %s", eng_id_str(id),
				 c->cc_conf.cc_servers[s].cs_name, err_msg());
}

/* The op tag of the next index update (docs/cluster.md "Op tags"): a hash
 * of this client instance's random id and an op counter, 1..2^63-1. */
static uint64_t clu_tag_next(struct clu_client *c)
{
	uint64_t n = __atomic_add_fetch(&c->cc_tag_ops, 1, __ATOMIC_RELAXED);
	uint64_t t = st_mix64(c->cc_tag_id ^ st_mix64(n)) & MSG_TAG_MAX;

	return t != 0 ? t : 1;
}

/* A random id for this client instance's op tags (a mix of the clock, the
 * pid and the instance's address when getrandom() fails). */
static uint64_t clu_tag_seed(const struct clu_client *c)
{
	uint64_t id;
	struct timespec ts;

	if (getrandom(&id, sizeof id, GRND_NONBLOCK) == (ssize_t)sizeof id)
		return id;
	clock_gettime(CLOCK_REALTIME, &ts);
	return st_mix64((uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec) ^
	       st_mix64((uint64_t)getpid() << 32 ^ (uintptr_t)c);
}

/*
 * The follow-up copies of an index update, sent to every other replica at
 * once (docs/cluster.md "Placement and consistency"): each call started
 * without waiting (peers_call_async), the caller waiting for all of their
 * ends, so that the replicas apply and sync the update together instead of
 * one after the other.  An end that needs a blocking step (the replica
 * unreachable, busy, or answering a transport code or -EREMCHG), or a call
 * that could not start (no connection yet: -EAGAIN), is made again the
 * blocking way (clu_call(): its connect, pauses and retries), as clu_obj
 * does for object ops.
 */
struct clu_fan {
	pthread_mutex_t f_lock;
	pthread_cond_t f_cond;
	uint32_t f_left;               /* calls started and not ended */
	struct peers_end f_end[];      /* by server (cc_nr_servers) */
};

struct clu_fan_arg {
	struct clu_fan *fa_fan;
	uint32_t fa_srv;
};

static void clu_fan_end(void *arg, struct peers_end *e)
{
	struct clu_fan_arg *fa = arg;
	struct clu_fan *f = fa->fa_fan;

	pthread_mutex_lock(&f->f_lock);
	f->f_end[fa->fa_srv] = *e;
	if (--f->f_left == 0)
		pthread_cond_signal(&f->f_cond);
	pthread_mutex_unlock(&f->f_lock);
}

/* Send IdxReq q (bulk, nr records) to every server of want (a bit per
 * server) at once; the servers that took it into *got, the others into
 * *missed (logged). */
static void clu_idx_fan(struct clu_client *c, const struct st_id *id,
			IdxReq *q, const struct rpc_bulk *bulk, uint32_t nr,
			uint64_t want, uint64_t *got, uint64_t *missed)
{
	uint32_t n = c->cc_conf.cc_nr_servers;
	struct clu_fan *f = calloc(1, sizeof *f + n * sizeof f->f_end[0]);
	struct clu_fan_arg fa[CLU_SERVERS_MAX];
	bool started[CLU_SERVERS_MAX] = {false};
	struct msg_buf b = {0};
	bool fan_ok = f != NULL && msg_pack(&q->base, &b) == 0;

	if (fan_ok) {
		pthread_mutex_init(&f->f_lock, NULL);
		pthread_cond_init(&f->f_cond, NULL);
		for (uint32_t s = 0; s < n; s++) {
			if (!(want & 1ull << s))
				continue;
			fa[s] = (struct clu_fan_arg){f, s};
			pthread_mutex_lock(&f->f_lock);
			f->f_left++;
			pthread_mutex_unlock(&f->f_lock);
			if (peers_call_async(c->cc_peers, s, SOP_IDX, b.mb_p,
					     b.mb_len, bulk, clu_fan_end,
					     &fa[s]) == 0) {
				started[s] = true;
				continue;
			}
			pthread_mutex_lock(&f->f_lock);
			f->f_left--;
			pthread_mutex_unlock(&f->f_lock);
		}
		pthread_mutex_lock(&f->f_lock);
		while (f->f_left > 0)
			pthread_cond_wait(&f->f_cond, &f->f_lock);
		pthread_mutex_unlock(&f->f_lock);
	}
	free(b.mb_p);
	for (uint32_t s = 0; s < n; s++) {
		struct peers_end *e;
		int rc;

		if (!(want & 1ull << s))
			continue;
		e = fan_ok ? &f->f_end[s] : NULL;
		if (started[s] && e->pe_unreachable)
			peers_call_failed(c->cc_peers, e);
		if (started[s]) {
			free(e->pe_body);
			e->pe_body = NULL;
		}
		rc = !started[s] || clu_end_redo(e) ? -EAGAIN : e->pe_rc;
		if (rc == -EAGAIN)
			rc = clu_call(c, s, SOP_IDX, &q->base, bulk, nr, NULL);
		else if (rc != 0)
			err_set(rc, "%s", e->pe_msg);
		if (rc != 0) {
			LOG_INFO("index %s: replica on %s missed an update: %s",
				 eng_id_str(id), c->cc_conf.cc_servers[s].cs_name,
				 err_msg());
			*missed |= 1ull << s;
		} else {
			*got |= 1ull << s;
		}
	}
	if (fan_ok) {
		pthread_mutex_destroy(&f->f_lock);
		pthread_cond_destroy(&f->f_cond);
	}
	free(f);
}

/* The other replicas of id this client would send an update's copies to
 * (a bit per server): live, not skipped by a test, not `who`. */
static uint64_t clu_idx_others(struct clu_client *c, const struct st_id *id,
			       uint32_t who, uint64_t *missed)
{
	uint64_t want = 0;

	for (uint32_t i = 0; i < clu_replicas(c); i++) {
		uint32_t s = clu_ring(c, id, i);

		if (s == who)
			continue;
		if (!peers_live(c->cc_peers, s) || clu_test_skip(c, s)) {
			*missed |= 1ull << s;
			continue;
		}
		want |= 1ull << s;
	}
	return want;
}

/*
 * PUT, DEL: the first live replica orders it, the others follow; all with
 * the same op tag (a replica asked again after a lost answer reports what
 * the op already did as done: srv_idx.c ridx_dedup()).  The ordering
 * replica sends the copies itself while it commits (IdxReq.fan: the live
 * replicas; Reply.fanned: those that applied it: docs/cluster.md "Copies
 * sent by the ordering replica"); this client sends the rest, all at once
 * (clu_idx_fan()).  Test builds: fault clu.idx.fan.less leaves the last
 * replica of the ring to the client.
 */
static int clu_idx_update(struct clu_client *c, struct eng_req *r)
{
	uint32_t nr = r->er_keys->bv_nr, n = clu_replicas(c), who = 0;
	uint64_t missed = 0, got = 0, want = 0;
	struct clu_idx_msg m;
	Reply *rp = NULL;
	int rc = clu_idx_msg(&m, r, r->er_kind, 0, nr, nr);

	m.im_q.tag = clu_tag_next(c);
	if (__atomic_load_n(&c->cc_fan, __ATOMIC_RELAXED)) {
		uint64_t ignored = 0;

		m.im_q.fan = clu_idx_others(c, &r->er_id, UINT32_MAX,
					    &ignored);
		if (n > 1 && FAULT_HIT("clu.idx.fan.less"))
			m.im_q.fan &= ~(1ull << clu_ring(c, &r->er_id, n - 1));
	}
	if (rc == 0)
		rc = clu_call_first(c, &r->er_id, n, SOP_IDX, &m.im_q.base,
				    clu_idx_bulk(&m), nr, &rp, &who,
				    &m.im_q.rflags);
	if (rc == 0 && rp->n_rcs != nr)
		rc = err_set(-EPROTO, "index %s: reply with %zu rcs for %u "
			     "records", eng_id_str(&r->er_id), rp->n_rcs, nr);
	if (rc != 0) {
		clu_idx_msg_fini(&m);
		if (rp != NULL)
			reply__free_unpacked(rp, NULL);
		return rc;
	}
	memcpy(r->er_rcs, rp->rcs, nr * sizeof(int32_t));
	m.im_q.rflags = SRF_REPLICA;
	m.im_q.seq = rp->seq;
	m.im_q.term = rp->term;
	m.im_q.fan = 0;
	want = clu_idx_others(c, &r->er_id, who, &missed);
	/* those the ordering replica reached (a replica of fan only) */
	got = want & rp->fanned & ~(1ull << who);
	want &= ~got;
	__atomic_add_fetch(&c->cc_fan_srv, (uint64_t)__builtin_popcountll(got),
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->cc_fan_cli, (uint64_t)__builtin_popcountll(want),
			   __ATOMIC_RELAXED);
	if (want != 0)
		clu_idx_fan(c, &r->er_id, &m.im_q, clu_idx_bulk(&m), nr, want,
			    &got, &missed);
	clu_idx_msg_fini(&m);
	if (missed != 0)
		clu_idx_missed(c, &r->er_id, missed, got | 1ull << who,
			       rp->term, rp->seq);
	return clu_finish(r, 0, rp);
}

/* Copy a value of the reply into the caller's slot i (GET semantics). */
static int32_t clu_val_out(struct st_bufvec *bv, uint32_t i,
			   const uint8_t *v, uint32_t len)
{
	if (bv->bv_buf[i] == NULL) {
		bv->bv_buf[i] = malloc(len ? len : 1);
		if (bv->bv_buf[i] == NULL)
			return -ENOMEM;
	} else if (bv->bv_len[i] < len) {
		bv->bv_len[i] = len;
		return -ENOBUFS;
	}
	memcpy(bv->bv_buf[i], v, len);
	bv->bv_len[i] = len;
	return 0;
}

/* GET: pages of records from the first live replica. */
static int clu_idx_get(struct clu_client *c, struct eng_req *r)
{
	uint32_t nr = r->er_keys->bv_nr, from = 0;
	int rc = 0;

	while (rc == 0 && from < nr) {
		struct clu_idx_msg m;
		Reply *rp = NULL;
		const uint8_t *p;

		rc = clu_idx_msg(&m, r, ER_IDX_GET, from, nr - from, nr - from);
		if (rc == 0)
			rc = clu_read_first(c, &r->er_id, &m.im_q.base,
					    clu_idx_bulk(&m), nr - from, &rp,
					    &m.im_q.rflags);
		clu_idx_msg_fini(&m);
		if (rc == 0 && (rp->done == 0 || rp->n_rcs != rp->done ||
				rp->n_vlen != rp->done))
			rc = err_set(-EPROTO, "index %s: bad GET reply",
				     eng_id_str(&r->er_id));
		for (uint32_t i = 0, *vl = rc == 0 ? rp->vlen : NULL;
		     rc == 0 && i < rp->done; i++) {
			if (i == 0)
				p = rp->recs.data;
			r->er_rcs[from + i] = rp->rcs[i];
			if (rp->rcs[i] == 0)
				r->er_rcs[from + i] =
					clu_val_out(r->er_vals, from + i, p, vl[i]);
			p += vl[i];
		}
		if (rc == 0)
			from += rp->done;
		if (rp != NULL)
			reply__free_unpacked(rp, NULL);
	}
	r->er_bytes = nr;
	return rc;
}

/* Bytes of the records a NEXT reply announces. */
static uint64_t clu_next_len(const Reply *rp)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < rp->done; i++)
		n += (uint64_t)rp->klen[i] + rp->vlen[i];
	return n;
}

/* The reply's rp->done records (keys, then values) into slots got..:
 * malloc()ed buffers.  (Keys and values are stored one after the other.) */
static int clu_next_alloc(struct eng_req *r, const Reply *rp, uint32_t got)
{
	const uint8_t *p = rp->recs.data;

	for (uint32_t i = 0, g = got; i < rp->done; i++, g++) {
		r->er_keys->bv_buf[g] = NULL;
		r->er_vals->bv_buf[g] = NULL;
		r->er_rcs[g] = clu_val_out(r->er_keys, g, p, rp->klen[i]);
		p += rp->klen[i];
	}
	for (uint32_t i = 0, g = got; i < rp->done; i++, g++) {
		if (r->er_rcs[g] == 0)
			r->er_rcs[g] = clu_val_out(r->er_vals, g, p,
						   rp->vlen[i]);
		p += rp->vlen[i];
	}
	return 0;
}

/* The same into the caller's buffers (ST_IF_CALLER_BUFS). */
static int clu_next_into(struct eng_req *r, const Reply *rp, uint32_t got)
{
	const uint8_t *kp = rp->recs.data, *vp = kp;

	for (uint32_t i = 0; i < rp->done; i++)
		vp += rp->klen[i];
	for (uint32_t i = 0, g = got; i < rp->done; i++, g++) {
		r->er_rcs[g] = eng_idx_rec_into(r->er_keys, r->er_vals, g, kp,
						rp->klen[i], vp, rp->vlen[i]);
		kp += rp->klen[i];
		vp += rp->vlen[i];
	}
	return 0;
}

/* NEXT: pages from the first live replica, each after the last key. */
static int clu_idx_next(struct clu_client *c, struct eng_req *r)
{
	uint32_t nr = r->er_keys->bv_nr, got = 0;
	struct eng_req q = *r;
	struct st_bufvec sk;
	void *skb[1];
	size_t skl[1];
	uint8_t last[ST_KEY_MAX];
	bool into = (r->er_flags & ST_IF_CALLER_BUFS) != 0;
	int rc = 0;

	skb[0] = r->er_keys->bv_buf[0];
	skl[0] = skb[0] != NULL ? r->er_keys->bv_len[0] : 0;
	if (into && skl[0] > 0) { /* slot 0 is overwritten by record 0 */
		memcpy(last, skb[0], skl[0]);
		skb[0] = last;
	}
	sk = (struct st_bufvec){1, skb, skl};
	q.er_keys = &sk;
	q.er_flags &= ~(uint32_t)ST_IF_CALLER_BUFS; /* a client option */
	while (rc == 0 && got < nr) {
		struct clu_idx_msg m;
		Reply *rp = NULL;

		rc = clu_idx_msg(&m, &q, ER_IDX_NEXT, 0, nr - got, 1);
		m.im_q.start_null = skb[0] == NULL;
		if (rc == 0)
			rc = clu_read_first(c, &r->er_id, &m.im_q.base,
					    clu_idx_bulk(&m), nr - got, &rp,
					    &m.im_q.rflags);
		clu_idx_msg_fini(&m);
		if (rc == 0 && (rp->n_klen != rp->done || rp->n_vlen != rp->done))
			rc = err_set(-EPROTO, "index %s: bad NEXT reply",
				     eng_id_str(&r->er_id));
		if (rc != 0) {
			if (rp != NULL)
				reply__free_unpacked(rp, NULL);
			break;
		}
		if (clu_next_len(rp) > rp->recs.len)
			rc = err_set(-EPROTO, "index %s: NEXT reply shorter "
				     "than its records", eng_id_str(&r->er_id));
		else if (into)
			rc = clu_next_into(r, rp, got);
		else
			rc = clu_next_alloc(r, rp, got);
		if (rc != 0) {
			reply__free_unpacked(rp, NULL);
			break;
		}
		got += rp->done;
		if (rp->done > 0) {
			/* the last key, from the reply: a caller buffer may
			 * not have held it */
			const uint8_t *lk = rp->recs.data;

			for (uint32_t i = 0; i + 1 < rp->done; i++)
				lk += rp->klen[i];
			memcpy(last, lk, rp->klen[rp->done - 1]);
			skb[0] = last;
			skl[0] = rp->klen[rp->done - 1];
			q.er_flags = ST_IF_EXCLUDE_START_KEY;
		}
		/* The server found rp->bytes records; fewer came: ask again. */
		if (rp->done == 0 || rp->done >= rp->bytes) {
			reply__free_unpacked(rp, NULL);
			break;
		}
		reply__free_unpacked(rp, NULL);
	}
	r->er_bytes = got;
	eng_idx_next_tail(r, got);
	return rc;
}

/* ------------------------------------------------------------ backend */

static int exec_kind(struct clu_client *c, struct eng_req *r)
{
	switch (r->er_kind) {
	case ER_OBJ_READ:
	case ER_OBJ_WRITE:
	case ER_OBJ_ALLOC:
	case ER_OBJ_FREE:
		return clu_obj(c, r);
	case ER_IDX_GET:
		return clu_idx_get(c, r);
	case ER_IDX_NEXT:
		return clu_idx_next(c, r);
	case ER_IDX_PUT:
	case ER_IDX_DEL:
		return clu_idx_update(c, r);
	default:
		return clu_ent(c, r);
	}
}

/* Every request an op sends carries its trace id (addb/addb.h: op.sent
 * records here, the server's srv.recv names it). */
int exec_cluster(struct clovis *cl, struct eng_req *r)
{
	uint64_t prev = addb_trace_cur_set(r->er_ci.ci_trace);
	int rc = exec_kind(clu_of(cl), r);

	addb_trace_cur_set(prev);
	return rc;
}

/* Fetch the cluster file from server "ADDR:PORT" (secret known). */
static int clu_fetch(struct clu_client *c, const struct clovis_conf *conf)
{
	struct clu_conf one = {0};
	struct clu_server sv = {0};
	struct peers *p = NULL;
	struct rpc_result res;
	size_t slen = conf->cc_secret != NULL ? strlen(conf->cc_secret) : 0;
	Reply *rp = NULL;
	int rc;

	/* ADDR:PORT, an IPv6 ADDR in brackets ([::1]:21000) */
	if (clu_hostport_parse(conf->cc_server, sv.cs_addr, sizeof sv.cs_addr,
			       &sv.cs_port) != 0)
		return err_set(-EINVAL, "clovis_init: cc_server %s", err_msg());
	if (slen < CLU_SECRET_MIN || slen >= CLU_SECRET_MAX)
		return err_set(-EINVAL, "clovis_init: cc_secret: the cluster "
			       "secret (16..1023 bytes) is needed with cc_server");
	snprintf(sv.cs_name, sizeof sv.cs_name, "%s", conf->cc_server);
	snprintf(one.cc_name, sizeof one.cc_name, "bootstrap");
	snprintf(one.cc_provider, sizeof one.cc_provider, "tcp;ofi_rxm");
	memcpy(one.cc_secret, conf->cc_secret, slen);
	one.cc_secret_len = slen;
	one.cc_nr_servers = 1;
	one.cc_servers = &sv;
	one.cc_connect_ms = 5000;
	one.cc_call_ms = 10000;
	rc = peers_create(&p, &one, NULL);
	if (rc == 0)
		rc = peers_call(p, 0, SOP_CONF_GET, NULL, 0, NULL, &res);
	if (rc == 0)
		rc = msg_reply_decode(res.rr_body, res.rr_len, 0, &rp);
	if (p != NULL)
		free(res.rr_body);
	peers_destroy(p);
	if (rc == 0)
		rc = clu_conf_parse(&c->cc_conf, (const char *)rp->text.data,
				    rp->text.len, NULL, CLU_PARSE_NO_SECRET);
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	if (rc != 0)
		return err_set(rc, "clovis_init: cluster file from %s: %s",
			       conf->cc_server, err_msg());
	memcpy(c->cc_conf.cc_secret, conf->cc_secret, slen);
	c->cc_conf.cc_secret_len = slen;
	return 0;
}

int cluster_open(struct clovis *cl, const struct clovis_conf *conf,
		 const char *file)
{
	struct clu_client *c = calloc(1, sizeof *c);
	int rc;

	if (c == NULL)
		return err_set(-ENOMEM, "clovis_init: cluster client");
	rc = file != NULL ? clu_conf_load(&c->cc_conf, file) : clu_fetch(c, conf);
	if (rc == 0)
		rc = peers_create(&c->cc_peers, &c->cc_conf, NULL);
	if (rc != 0) {
		clu_conf_fini(&c->cc_conf);
		free(c);
		return rc;
	}
	{
		const char *env = getenv("STRATA_CLU_ASYNC");

		c->cc_async = env == NULL || strcmp(env, "0") != 0;
		env = getenv("STRATA_UNIT_READS");
		c->cc_units = env == NULL || strcmp(env, "0") != 0;
		env = getenv("STRATA_IDX_FAN");
		c->cc_fan = env == NULL || strcmp(env, "0") != 0;
	}
	c->cc_tag_id = clu_tag_seed(c);
	pthread_mutex_init(&c->cc_mlock, NULL);
	pthread_cond_init(&c->cc_wcond, NULL);
	for (uint32_t h = 0; h < CLU_SERVERS_MAX; h++)
		c->cc_acting[h] = h;
	cl->cl_backend = c;
	cl->cl_exec = exec_cluster;
	/* the homes of an HA cluster's map (its servers answer it; none
	 * answering now is no error: the first refusal reads it again) */
	if (c->cc_conf.cc_nr_etcd > 0 &&
	    clu_map_refresh(c, c->cc_conf.cc_nr_servers - 1) == -EACCES) {
		/* a wrong secret: said now, before the refused contacts'
		 * down marks hide it behind "is down" (cluster_test.sh) */
		char msg[LIM_ERRMSG_LEN];

		snprintf(msg, sizeof msg, "%s", err_msg());
		cluster_close(cl);
		return err_set(-EACCES, "%s", msg);
	}
	if (c->cc_conf.cc_nr_etcd > 0 && c->cc_conf.cc_nr_servers > 1) {
		const char *env = getenv("STRATA_CLU_WATCH");

		c->cc_watch_on = (env == NULL || strcmp(env, "0") != 0) &&
				 pthread_create(&c->cc_watch, NULL,
						clu_watch_main, c) == 0;
	}
	return 0;
}

void cluster_close(struct clovis *cl)
{
	struct clu_client *c = clu_of(cl);

	if (c == NULL)
		return;
	if (c->cc_watch_on) {
		pthread_mutex_lock(&c->cc_mlock);
		c->cc_watch_stop = true;
		pthread_cond_broadcast(&c->cc_wcond);
		pthread_mutex_unlock(&c->cc_mlock);
		pthread_join(c->cc_watch, NULL);
	}
	peers_destroy(c->cc_peers);
	clu_conf_fini(&c->cc_conf);
	pthread_cond_destroy(&c->cc_wcond);
	pthread_mutex_destroy(&c->cc_mlock);
	free(c);
	cl->cl_backend = NULL;
}

/* ------------------------------------------------------------ management */

/* Merge sorted lists: ids of every server after *after, distinct. */
static int clu_id_cmp_q(const void *a, const void *b)
{
	return st_id_cmp(a, b);
}

/* strict: a server that does not answer fails the listing (it may hold
 * members no other lists: a function call over a container must not miss
 * them silently, clovis/isc.c). */
static int clu_entity_list(struct clovis *cl, struct clovis_realm *r,
			   uint32_t type, const struct st_id *after,
			   struct st_id *ids, uint32_t *nr, bool strict)
{
	struct clu_client *c = clu_of(cl);
	uint32_t want = *nr < MSG_LIST_MAX ? *nr : MSG_LIST_MAX, n = 0, ok = 0;
	struct st_id *all = calloc((size_t)want * c->cc_conf.cc_nr_servers + 1,
				   sizeof *all);
	char why[LIM_ERRMSG_LEN] = "";
	int rc = 0, down = -EHOSTDOWN;

	if (all == NULL)
		return err_set(-ENOMEM, "entity_list: ids");
	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers && want > 0; s++) {
		ListReq q = LIST_REQ__INIT;
		SId cont, aft;
		Reply *rp = NULL;
		int rr;

		msg_id_out(&cont, r != NULL ? st_of(&r->re_id) :
				  &(struct st_id){0, 0});
		q.container = &cont;
		q.type = type;
		q.nr = want;
		if (after != NULL) {
			msg_id_out(&aft, after);
			q.after = &aft;
			q.has_after = true;
		}
		rr = clu_call(c, s, SOP_LIST, &q.base, NULL, 0, &rp);
		if (strict && rr != 0 && (peers_rc_transport(rr) ||
					  rr == -EHOSTDOWN) &&
		    clu_home_target(c, s) != s) {
			/* its home is served by another server now (HA
			 * takeover): that one lists its store */
			uint32_t a = clu_home_target(c, s);

			q.home = s;
			q.has_home = true;
			rr = clu_call(c, a, SOP_LIST, &q.base, NULL, 0, &rp);
		}
		if (rr == 0) {
			ok++;
			for (size_t i = 0; i < rp->n_ids && i < want; i++)
				msg_id_in(rp->ids[i], &all[n++]);
			reply__free_unpacked(rp, NULL);
		} else if (!peers_rc_transport(rr) && rr != -EHOSTDOWN) {
			rc = rr;
		} else if (why[0] == '\0' || down == -EHOSTDOWN) {
			/* Keep the most telling failure (-EACCES over a
			 * server merely marked down). */
			down = rr;
			snprintf(why, sizeof why, "%s", err_msg());
		}
	}
	if (rc == 0 && ok == 0 && want > 0)
		rc = err_set(down, "entity_list: no server reachable: %s", why);
	if (rc == 0 && strict && want > 0 && ok < c->cc_conf.cc_nr_servers)
		rc = err_set(down, "entity_list: %u of %u servers did not "
			     "answer (their members cannot be listed): %s",
			     c->cc_conf.cc_nr_servers - ok,
			     c->cc_conf.cc_nr_servers, why);
	if (rc == 0) {
		uint32_t k = 0;

		qsort(all, n, sizeof *all, clu_id_cmp_q);
		for (uint32_t i = 0; i < n && k < want; i++)
			if (k == 0 || st_id_cmp(&ids[k - 1], &all[i]) != 0)
				ids[k++] = all[i];
		*nr = k;
	}
	free(all);
	return rc;
}

int cluster_entity_list(struct clovis *cl, struct clovis_realm *r,
			uint32_t type, const struct st_id *after,
			struct st_id *ids, uint32_t *nr)
{
	return clu_entity_list(cl, r, type, after, ids, nr, false);
}

int cluster_entity_list_all(struct clovis *cl, struct clovis_realm *r,
			    uint32_t type, const struct st_id *after,
			    struct st_id *ids, uint32_t *nr)
{
	return clu_entity_list(cl, r, type, after, ids, nr, true);
}

/* STATUS of server s (NULL reply when it is down). */
static int clu_status(struct clu_client *c, uint32_t s, Reply **rp)
{
	return clu_call(c, s, SOP_STATUS, NULL, NULL, 0, rp);
}

/* Free bytes of the other homes' slices of device dev of server s, as
 * those homes report them (rps[j]: server j's status, NULL when it did
 * not answer: its slice then counts as used, as nothing says it is
 * free). */
static uint64_t clu_lent_free(Reply *const *rps, uint32_t nsrv, uint32_t s,
			      uint32_t dev)
{
	uint64_t f = 0;

	for (uint32_t j = 0; j < nsrv; j++) {
		if (j == s || rps[j] == NULL)
			continue;
		for (size_t k = 0; k < rps[j]->status->n_slices; k++) {
			const SSlice *sl = rps[j]->status->slices[k];

			if (sl->server == s && sl->dev == dev)
				f = sl->free > UINT64_MAX - f ? UINT64_MAX :
				    f + sl->free;
		}
	}
	return f;
}

int cluster_dev_list(struct clovis *cl, struct st_dev_info *info,
		     uint32_t *nr)
{
	struct clu_client *c = clu_of(cl);
	uint32_t n = 0, nsrv = c->cc_conf.cc_nr_servers;
	Reply **rps = calloc(nsrv ? nsrv : 1, sizeof *rps);

	if (rps == NULL)
		return err_set(-ENOMEM, "device list");
	for (uint32_t s = 0; s < nsrv; s++)
		if (clu_status(c, s, &rps[s]) != 0 || rps[s]->status == NULL) {
			if (rps[s] != NULL)
				reply__free_unpacked(rps[s], NULL);
			rps[s] = NULL;
		}
	for (uint32_t s = 0; s < nsrv; s++) {
		Reply *rp = rps[s];

		for (size_t i = 0; rp != NULL && i < rp->status->n_devs;
		     i++, n++) {
			const SDev *d = rp->status->devs[i];
			struct st_dev_info *di = &info[n];
			uint64_t lent;

			if (n >= *nr)
				continue;
			memset(di, 0, sizeof *di);
			di->di_index = n;
			di->di_tier = d->tier;
			snprintf(di->di_path, sizeof di->di_path, "%s:%s",
				 c->cc_conf.cc_servers[s].cs_name, d->path);
			snprintf(di->di_driver, sizeof di->di_driver, "%s",
				 d->driver);
			di->di_size_bytes = d->size;
			/* a device lent to the other homes: its server's own
			 * slice, and theirs as they report them */
			lent = clu_lent_free(rps, nsrv, s, d->index);
			di->di_free_bytes = d->free > d->size ||
					    lent > d->size - d->free ?
					    d->size : d->free + lent;
			di->di_direct_io = d->direct_io;
			di->di_state = d->state;
			di->di_errors = d->errors;
			di->di_rebalance = d->rebalance;
			di->di_model = d->model;
			di->di_zone_size = d->zone_size;
			di->di_zones = d->zones;
			di->di_zones_empty = d->zones_empty;
			di->di_reads = d->reads;
			di->di_writes = d->writes;
		}
	}
	for (uint32_t s = 0; s < nsrv; s++)
		if (rps[s] != NULL)
			reply__free_unpacked(rps[s], NULL);
	free(rps);
	*nr = n;
	return 0;
}

int cluster_pool_list(struct clovis *cl, struct clovis_pool_info *info,
		      uint32_t *nr)
{
	struct clu_client *c = clu_of(cl);
	uint32_t npools = 0, base = 0;

	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++) {
		Reply *rp = NULL;

		if (clu_status(c, s, &rp) != 0 || rp->status == NULL) {
			if (rp != NULL)
				reply__free_unpacked(rp, NULL);
			continue;
		}
		for (size_t p = 0; p < rp->status->n_pools; p++) {
			const SPool *sp = rp->status->pools[p];
			struct clovis_pool_info *pi = &info[p];

			if (p >= *nr)
				continue;
			if (p >= npools) {
				memset(pi, 0, sizeof *pi);
				pi->pi_index = (uint32_t)p;
				snprintf(pi->pi_name, sizeof pi->pi_name, "%s",
					 sp->name);
			}
			for (size_t d = 0; d < sp->n_devs &&
					   pi->pi_nr_devs < 256; d++)
				pi->pi_devs[pi->pi_nr_devs++] = base + sp->devs[d];
			pi->pi_size_bytes += sp->size;
			pi->pi_free_bytes += sp->free;
		}
		if (rp->status->n_pools > npools)
			npools = (uint32_t)rp->status->n_pools;
		base += (uint32_t)rp->status->n_devs;
		reply__free_unpacked(rp, NULL);
	}
	*nr = npools;
	return 0;
}

void cluster_status(struct clovis *cl, uint32_t s,
		    struct clovis_server_info *si)
{
	struct clu_client *c = clu_of(cl);
	const struct clu_server *sv = &c->cc_conf.cc_servers[s];
	Reply *rp = NULL;
	int rc;

	char where[CLU_HOST_MAX + 16];

	memset(si, 0, sizeof *si);
	/* a long host name is cut to the field's size; an IPv6 address in
	 * brackets ([::1]:21000) */
	if (snprintf(si->si_name, sizeof si->si_name, "%s %s", sv->cs_name,
		     clu_server_where(sv, where, sizeof where)) >=
	    (int)sizeof si->si_name)
		si->si_name[sizeof si->si_name - 1] = '\0';
	rc = clu_status(c, s, &rp);
	if (rc == 0 && rp->status != NULL) {
		si->si_up = 1;
		si->si_uptime_ms = rp->status->uptime_ms;
		si->si_requests = rp->status->requests;
		si->si_bad_requests = rp->status->bad_requests;
		si->si_rpc_dropped = rp->status->rpc_dropped;
		si->si_auth_failed = rp->status->auth_failed;
		si->si_inflight = rp->status->inflight;
		si->si_idx_syncs = rp->status->idx_syncs;
		si->si_idx_tombs = rp->status->idx_tombs;
		si->si_late_writes = rp->status->late_writes;
		si->si_fenced_bytes = rp->status->fenced_bytes;
		si->si_zc_write_bytes = rp->status->zc_write_bytes;
		si->si_zc_read_bytes = rp->status->zc_read_bytes;
		si->si_idx_doubts = rp->status->idx_doubts;
		for (size_t j = 0; j < rp->status->n_slice_free && j < 64; j++)
			si->si_slice_free[si->si_nr_slices++] =
				rp->status->slice_free[j];
	}
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
}

uint32_t cluster_nr_servers(struct clovis *cl)
{
	return clu_of(cl)->cc_conf.cc_nr_servers;
}

/* The HA opcode on server s: 0 with *out (or NULL: empty) or an error. */
static int clu_ha_call(struct clu_client *c, uint32_t s, const HaReq *q,
		       char **out)
{
	Reply *rp = NULL;
	int rc = clu_call(c, s, HA_OP, &q->base, NULL, 0, &rp);

	if (rc == 0 && rp->text.len > 0) {
		*out = malloc(rp->text.len + 1);
		if (*out == NULL)
			rc = err_set(-ENOMEM, "HA answer");
		else {
			memcpy(*out, rp->text.data, rp->text.len);
			(*out)[rp->text.len] = '\0';
		}
	}
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	return rc;
}

int cluster_ha_on(struct clovis *cl, const char *name, uint32_t kind,
		  char **out)
{
	struct clu_client *c = clu_of(cl);
	HaReq q = HA_REQ__INIT;
	int s = clu_server_find(&c->cc_conf, name);

	*out = NULL;
	if (s < 0)
		return s;
	q.kind = kind;
	return clu_ha_call(c, (uint32_t)s, &q, out);
}

/* SOP_METRICS of server name, q filled by the caller. */
static int clu_metrics_call(struct clovis *cl, const char *name,
			    MetricsReq *q, char **out, size_t *len)
{
	struct clu_client *c = clu_of(cl);
	Reply *rp = NULL;
	int s = clu_server_find(&c->cc_conf, name);
	int rc;

	*out = NULL;
	*len = 0;
	if (s < 0)
		return s;
	rc = clu_call(c, (uint32_t)s, SOP_METRICS, &q->base, NULL, 0, &rp);
	if (rc == 0 && (*out = malloc(rp->text.len + 1)) == NULL)
		rc = err_set(-ENOMEM, "metrics of server %s: no memory", name);
	if (rc == 0) {
		memcpy(*out, rp->text.data, rp->text.len);
		(*out)[rp->text.len] = '\0';
		*len = rp->text.len;
	}
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	return rc;
}

int cluster_metrics(struct clovis *cl, const char *name, uint32_t min_prio,
		    bool json, char **out, size_t *len)
{
	MetricsReq q = METRICS_REQ__INIT;

	q.min_priority = min_prio;
	q.json = json;
	return clu_metrics_call(cl, name, &q, out, len);
}

int cluster_records(struct clovis *cl, const char *name, uint32_t max,
		    char **out, size_t *len)
{
	MetricsReq q = METRICS_REQ__INIT;

	q.records = true;
	q.max_records = max;
	return clu_metrics_call(cl, name, &q, out, len);
}

/* ---------------------------------------------- clients' statistics */

_Static_assert(STATS_BUCKETS == MSG_CSTATS_BUCKETS &&
	       CLOVIS_STAT_NR == MSG_CSTATS_OPS,
	       "SOP_CLIENT_STATS carries clovis/stats.c's histograms");

/* A push at the end of a client: bounded, so that a process's exit never
 * waits long for a server that stopped answering. */
#define CLU_CSTATS_PUSH_MS 5000u

/* SOP_CLIENT_STATS to server i: push p (NULL: read only); the server's
 * sums after it in *out. */
static int clu_cstats_call(struct clu_client *c, uint32_t i,
			   const struct msg_cstats *p, uint32_t call_ms,
			   struct msg_cstats *out)
{
	static const struct msg_cstats none = {.cs_version = MSG_CSTATS_SCHEME};
	struct rpc_result res;
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	rc = msg_cstats_encode(p != NULL ? p : &none, p == NULL, &buf, &len);
	if (rc != 0)
		return rc;
	rc = peers_call_ms(c->cc_peers, i, SOP_CLIENT_STATS, buf, len, NULL,
			   call_ms, &res);
	free(buf);
	if (rc == 0 && (rc = msg_cstats_reply(res.rr_body, res.rr_len,
					      out)) != 0) {
		char msg[LIM_ERRMSG_LEN];

		snprintf(msg, sizeof msg, "%s", err_msg());
		rc = err_set(rc, "server %s: %s",
			     c->cc_conf.cc_servers[i].cs_name, msg);
	}
	free(res.rr_body);
	return rc;
}

void cluster_stats_push(struct clovis *cl)
{
	struct clu_client *c = clu_of(cl);
	struct msg_cstats *p, *sums;
	struct stats_hist h;
	uint64_t ops = 0, best_ms = 0;
	int32_t best = -1;

	if (c == NULL)
		return;
	p = calloc(2, sizeof *p);
	if (p == NULL)
		return;
	sums = p + 1;
	p->cs_version = MSG_CSTATS_SCHEME;
	for (uint32_t k = 0; k < MSG_CSTATS_OPS; k++) {
		struct msg_cstats_op *o = &p->cs_op[k];

		stats_total(&cl->cl_stats, k, &h);
		for (uint32_t b = 0; b < STATS_BUCKETS; b++)
			o->co_count += h.sh_b[b];
		memcpy(o->co_b, h.sh_b, sizeof o->co_b);
		o->co_failed = h.sh_failed;
		o->co_bytes = h.sh_bytes;
		o->co_sum_us = h.sh_sum_us;
		o->co_max_us = h.sh_max_us;
		ops += o->co_count;
	}
	/* to the server that answered this client last (it is up, and a
	 * connection to it is open); none when it ran no op */
	for (uint32_t i = 0; ops > 0 && i < c->cc_conf.cc_nr_servers; i++) {
		uint64_t ok = peers_ok_ms(c->cc_peers, i);

		if (ok > best_ms && peers_live(c->cc_peers, i) &&
		    !peers_gone(c->cc_peers, i)) {
			best_ms = ok;
			best = (int32_t)i;
		}
	}
	if (best >= 0 &&
	    clu_cstats_call(c, (uint32_t)best, p, CLU_CSTATS_PUSH_MS,
			    sums) != 0)
		LOG_INFO("statistics of this client (%" PRIu64 " ops) not "
			 "pushed to server %s: %s", ops,
			 c->cc_conf.cc_servers[best].cs_name, err_msg());
	free(p);
}

int cluster_stats_clients(struct clovis *cl,
			  struct clovis_stat out[CLOVIS_STAT_NR],
			  struct clovis_stats_clients *info)
{
	struct clu_client *c = clu_of(cl);
	struct clovis_stats_clients in = {0};
	struct msg_cstats *one = malloc(sizeof *one);
	struct stats_set *set = calloc(1, sizeof *set);

	if (one == NULL || set == NULL) {
		free(one);
		free(set);
		return err_set(-ENOMEM, "stats_clients: no memory");
	}
	for (uint32_t i = 0; i < c->cc_conf.cc_nr_servers; i++) {
		if (peers_gone(c->cc_peers, i) ||
		    clu_cstats_call(c, i, NULL, c->cc_conf.cc_call_ms,
				    one) != 0) {
			in.sc_servers_not_read++;
			continue;
		}
		in.sc_servers_read++;
		in.sc_clients += one->cs_clients;
		for (uint32_t k = 0; k < MSG_CSTATS_OPS; k++) {
			struct stats_hist *d = &set->ss_base.st_h[k];
			const struct msg_cstats_op *o = &one->cs_op[k];

			d->sh_failed += o->co_failed;
			d->sh_bytes += o->co_bytes;
			d->sh_sum_us += o->co_sum_us;
			if (o->co_max_us > d->sh_max_us)
				d->sh_max_us = o->co_max_us;
			for (uint32_t b = 0; b < STATS_BUCKETS; b++)
				d->sh_b[b] += o->co_b[b];
		}
	}
	stats_report(set, out);
	free(one);
	free(set);
	if (info != NULL)
		*info = in;
	return 0;
}

int cluster_ha(struct clovis *cl, uint32_t kind, uint64_t from,
	       uint32_t limit, const char *text, char **out)
{
	struct clu_client *c = clu_of(cl);
	HaReq q = HA_REQ__INIT;
	int rc = -EHOSTDOWN;

	*out = NULL;
	q.kind = kind;
	q.from = from;
	q.limit = limit;
	if (text != NULL) {
		q.text.data = (uint8_t *)text;
		q.text.len = strlen(text);
	}
	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++) {
		rc = clu_ha_call(c, s, &q, out);
		/* an answer (even a refusal) ends the search; a server that
		 * cannot be reached or is fenced passes it on */
		if (rc != -EHOSTDOWN && rc != -ETIMEDOUT &&
		    rc != -ECONNREFUSED && rc != -ESHUTDOWN &&
		    rc != -ECONNRESET)
			break;
	}
	return rc;
}

/* ------------------------------------------------------------ dtx hooks */

int cluster_dtx_member(struct clovis *cl, const struct eng_req *r,
		       uint32_t *server, uint32_t *nsrv, uint32_t *sop,
		       uint8_t **body, size_t *len)
{
	struct clu_client *c = clu_of(cl);
	struct msg_buf b = {0};
	int rc;

	*nsrv = 1;
	if (r->er_type == ST_ET_IDX && (r->er_kind == ER_ENT_CREATE ||
					    r->er_kind == ER_ENT_DELETE)) {
		EntReq q;
		SId id, cont, ac;
		SAttr a;
		uint32_t n = clu_replicas(c);

		/* every live replica applies it, as the replica copy of a
		 * plain CREATE/DELETE with the incarnation given */
		clu_ent_req(&q, &id, &cont, &a, &ac, r,
			    SRF_INDEX | SRF_REPLICA);
		rc = msg_pack(&q.base, &b);
		*nsrv = 0;
		for (uint32_t i = 0; i < n; i++)
			if (peers_live(c->cc_peers, clu_ring(c, &r->er_id, i)))
				server[(*nsrv)++] = clu_ring(c, &r->er_id, i);
		if (rc == 0 && *nsrv == 0)
			rc = err_set(-EHOSTDOWN, "index %s: no replica "
				     "reachable", eng_id_str(&r->er_id));
		*sop = SOP_ENT;
	} else if (r->er_type == ST_ET_OBJ && r->er_kind < ER_IDX_GET) {
		ObjReq q = OBJ_REQ__INIT;
		SId id, cont, ac;
		SAttr a;

		obj_req_fill(&q, r, &id, &cont, &a, &ac);
		rc = msg_pack(&q.base, &b);
		*server = clu_ring(c, &r->er_id, 0);
		*sop = SOP_OBJ;
	} else if (r->er_type == ST_ET_OBJ &&
		   (r->er_kind == ER_ENT_CREATE ||
		    r->er_kind == ER_ENT_DELETE)) {
		EntReq q;
		SId id, cont, ac;
		SAttr a;

		/* the object's home creates or deletes it, as alone */
		clu_ent_req(&q, &id, &cont, &a, &ac, r, 0);
		rc = msg_pack(&q.base, &b);
		*server = clu_ring(c, &r->er_id, 0);
		*sop = SOP_ENT;
	} else if (r->er_type == ST_ET_IDX && (r->er_kind == ER_IDX_PUT ||
						   r->er_kind == ER_IDX_DEL)) {
		uint32_t nr = r->er_keys->bv_nr, n = clu_replicas(c);
		struct clu_idx_msg m;

		rc = clu_idx_msg(&m, r, r->er_kind, 0, nr, nr);
		if (rc == 0 && m.im_bulk.rb_nr != 0)
			rc = err_set(-E2BIG, "index %s: %zu bytes of records: "
				     "at most %u in a dtx member",
				     eng_id_str(&r->er_id), m.im_len,
				     MSG_RECS_INLINE);
		if (rc == 0)
			rc = msg_pack(&m.im_q.base, &b);
		clu_idx_msg_fini(&m);
		/* the first live replica orders it, as alone */
		*server = clu_ring(c, &r->er_id, 0);
		for (uint32_t i = 0; i < n; i++)
			if (peers_live(c->cc_peers, clu_ring(c, &r->er_id, i))) {
				*server = clu_ring(c, &r->er_id, i);
				break;
			}
		*sop = SOP_IDX;
	} else {
		return err_set(-ENOTSUP, "%s %s: kind %u in a dtx in cluster "
			       "mode", r->er_type == ST_ET_IDX ? "index" :
			       "entity", eng_id_str(&r->er_id), r->er_kind);
	}
	*body = b.mb_p;
	*len = b.mb_len;
	return rc;
}

int cluster_dtx_created(struct clovis *cl, struct eng_req *r)
{
	struct clu_client *c = clu_of(cl);
	EntReq q;
	SId id, cont, ac;
	SAttr a;
	Reply *rp = NULL;
	int rc;

	clu_ent_req(&q, &id, &cont, &a, &ac, r, 0);
	q.kind = ER_ENT_OPEN;
	rc = clu_call(c, clu_ring(c, &r->er_id, 0), SOP_ENT, &q.base, NULL, 0,
		      &rp);
	if (rc == 0 && rp != NULL && rp->attr != NULL) {
		struct st_id cn = r->er_container;

		msg_attr_in(rp->attr, &r->er_ent);
		r->er_ent.me_type = r->er_type;
		if (rp->attr->container == NULL)
			r->er_ent.me_container = cn;
	}
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	return rc;
}

int cluster_dtx_call(struct clovis *cl, uint32_t home, uint32_t op,
		     const void *body, size_t len, const void *bulk,
		     size_t bulk_len, uint32_t ms, void **rbody, size_t *rlen)
{
	struct clu_client *c = clu_of(cl);
	struct rpc_result res;
	struct iovec iov = {(void *)bulk, bulk_len};
	struct rpc_bulk b = {RPC_BULK_OUT, &iov, 1};
	struct clu_again g = {0};
	char what[80];
	int rc;

	snprintf(what, sizeof what, "dtx request to home %s",
		 c->cc_conf.cc_servers[home].cs_name);
	for (;;) {
		uint32_t s = clu_home_target(c, home);

		rc = peers_call_ms(c->cc_peers, s, op, body, len,
				   bulk_len > 0 ? &b : NULL, ms, &res);
		/* busy (the home opening or being handed back) or moved:
		 * nothing ran, as for an object op */
		if (rc == 0 || !clu_home_again(c, home, what, s, rc,
					       res.rr_answered, true, &g))
			break;
		free(res.rr_body);
	}
	*rbody = res.rr_body;
	*rlen = res.rr_len;
	return rc;
}

void cluster_idx_touch(struct clovis *cl, uint32_t server,
		       const struct eng_req *r)
{
	struct clu_client *c = clu_of(cl);
	struct clu_idx_msg m;

	if (r->er_keys == NULL || r->er_keys->bv_nr == 0 ||
	    clu_idx_msg(&m, r, ER_IDX_GET, 0, 1, 1) != 0)
		return;
	m.im_q.flags = 0; /* the member's PUT flags are not a GET's */
	if (clu_call(c, server, SOP_IDX, &m.im_q.base, clu_idx_bulk(&m), 1,
		     NULL) != 0)
		LOG_INFO("index %s: verification GET on %s: %s",
			 eng_id_str(&r->er_id), c->cc_conf.cc_servers[server].cs_name,
			 err_msg());
	clu_idx_msg_fini(&m);
}

uint32_t cluster_call_ms(struct clovis *cl)
{
	return clu_of(cl)->cc_conf.cc_call_ms;
}

const char *cluster_server_name(struct clovis *cl, uint32_t s)
{
	return clu_of(cl)->cc_conf.cc_servers[s].cs_name;
}

int cluster_call_server(struct clovis *cl, uint32_t s, uint32_t op,
			const ProtobufCMessage *pb, Reply **rp)
{
	return clu_call(clu_of(cl), s, op, pb, NULL, 0, rp);
}

/* ------------------------------------------------------------- walks */

struct clu_walk {
	struct clu_client *w_c;
	uint32_t w_server;
	uint32_t w_kind;
	pthread_t w_thr;
	bool w_started;
	int w_rc;
	char w_msg[256];
	WalkStats *w_ws;
};

static void *clu_walk_main(void *arg)
{
	struct clu_walk *w = arg;
	struct clu_client *c = w->w_c;
	WalkReq q = WALK_REQ__INIT;
	struct msg_buf b = {0};
	struct rpc_result res = {0};
	Reply *rp = NULL;
	int rc;

	err_clear();
	rc = clu_status(c, w->w_server, &rp);
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	rp = NULL;
	q.kind = w->w_kind;
	if (rc == 0)
		rc = msg_pack(&q.base, &b);
	if (rc == 0) {
		rc = peers_call_ms(c->cc_peers, w->w_server, SOP_WALK, b.mb_p,
				   b.mb_len, NULL, CLU_WALK_MS, &res);
		if (rc == 0)
			rc = msg_reply_decode(res.rr_body, res.rr_len, 0, &rp);
		if (rc == 0)
			rc = msg_walk_stats_decode(rp, &w->w_ws);
		free(res.rr_body);
	}
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	free(b.mb_p);
	w->w_rc = rc;
	if (rc != 0)
		snprintf(w->w_msg, sizeof w->w_msg, "%s", err_msg());
	return NULL;
}

int cluster_walk(struct clovis *cl, uint32_t kind, const char *what,
		 struct clovis_walk_stats *st)
{
	struct clu_client *c = clu_of(cl);
	uint32_t n = c->cc_conf.cc_nr_servers, bad = UINT32_MAX;
	uint32_t unrep = UINT32_MAX;
	struct clu_walk *w = calloc(n, sizeof *w);
	int rc = 0;

	memset(st, 0, sizeof *st);
	if (w == NULL)
		return err_set(-ENOMEM, "%s: %u servers", what, n);
	/* Every server walks the objects homed on it, all at once: each
	 * home's engine owns its own units' records. */
	for (uint32_t i = 0; i < n; i++) {
		w[i] = (struct clu_walk){.w_c = c, .w_server = i,
					 .w_kind = kind};
		w[i].w_rc = -pthread_create(&w[i].w_thr, NULL, clu_walk_main,
					    &w[i]);
		w[i].w_started = w[i].w_rc == 0;
		if (w[i].w_rc != 0)
			snprintf(w[i].w_msg, sizeof w[i].w_msg, "thread: %s",
				 strerror(-w[i].w_rc));
	}
	for (uint32_t i = 0; i < n; i++) {
		const WalkStats *ws;

		if (w[i].w_started)
			pthread_join(w[i].w_thr, NULL);
		if (w[i].w_rc != 0) {
			if (bad == UINT32_MAX)
				bad = i;
			continue;
		}
		ws = w[i].w_ws;
		st->ws_units += ws->units;
		st->ws_bytes += ws->bytes;
		st->ws_rebuilt += ws->rebuilt;
		st->ws_moved += ws->moved;
		st->ws_corrupt += ws->corrupt;
		st->ws_unrepairable += ws->unrepairable;
		if (ws->elapsed_ns > st->ws_elapsed_ns)
			st->ws_elapsed_ns = ws->elapsed_ns;
		st->ws_resumed |= ws->resumed;
		st->ws_devices += ws->devices;
		st->ws_walk_units += ws->walk_units;
		st->ws_walk_rebuilt += ws->walk_rebuilt;
		st->ws_walk_moved += ws->walk_moved;
		st->ws_walk_corrupt += ws->walk_corrupt;
		st->ws_walk_unrepairable += ws->walk_unrepairable;
		st->ws_shared += ws->shared;
		if (ws->walk_unrepairable > 0 && unrep == UINT32_MAX)
			unrep = i;
	}
	if (bad != UINT32_MAX) {
		const struct clu_server *cs = &c->cc_conf.cc_servers[bad];
		char name[CLU_NAME_MAX + 16], where[CLU_HOST_MAX + 16];

		/* The transport's messages name the server already. */
		snprintf(name, sizeof name, "server %s ", cs->cs_name);
		if (strstr(w[bad].w_msg, name) != NULL)
			rc = err_set(w[bad].w_rc, "%s: %s", what, w[bad].w_msg);
		else
			rc = err_set(w[bad].w_rc, "%s: server %s (%s): %s",
				     what, cs->cs_name,
				     clu_server_where(cs, where, sizeof where),
				     w[bad].w_msg);
	}
	else if (unrep != UINT32_MAX)
		rc = err_set(-EIO, "%s: %" PRIu64 " units could not be rebuilt "
			     "(more than K units of their groups lost; first "
			     "on server %s)", what, st->ws_walk_unrepairable,
			     c->cc_conf.cc_servers[unrep].cs_name);
	for (uint32_t i = 0; i < n; i++)
		if (w[i].w_ws != NULL)
			walk_stats__free_unpacked(w[i].w_ws, NULL);
	free(w);
	return rc;
}

/* ----------------------------------------------------------- devices */

/*
 * Device fail and replace through a cluster client (docs/cluster.md
 * "Devices through a cluster client"; the server half: srv_dev.c).  A
 * device is its owner's; every other server holds an image of each device
 * the owner lends, through which it keeps units of its own objects there.
 * So an action goes to the owner (the engine's own fail or replace) and to
 * every other server (its image), and replace first asks every image's
 * state: the new device is empty, so no home may still hold units on the
 * old one.
 */

/* DevReq {op, owner, dev, path} to server s: 0 and *out (the device or
 * image after it), or a negative code with the server's message. */
static int clu_dev_call(struct clu_client *c, uint32_t s, uint32_t op,
			uint32_t owner, uint32_t dev, const char *path,
			SDev **out)
{
	DevReq q = DEV_REQ__INIT;
	Reply *rp = NULL;
	int rc;

	*out = NULL;
	q.op = op;
	q.owner = owner;
	q.dev = dev;
	q.path = (char *)(path != NULL ? path : "");
	rc = clu_call(c, s, SOP_DEV, &q.base, NULL, 0, &rp);
	if (rc == 0)
		rc = msg_dev_info_decode(rp, out);
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	return rc;
}

/* "sN:D" of device dev of server owner, for messages. */
static const char *clu_dev_label(struct clu_client *c, uint32_t owner,
				 uint32_t dev, char *buf, size_t size)
{
	snprintf(buf, size, "%s:%u", c->cc_conf.cc_servers[owner].cs_name,
		 dev);
	return buf;
}

/* Check that owner and dev may be named: owner a server of the cluster. */
static int clu_dev_check(struct clu_client *c, uint32_t owner,
			 const char *what)
{
	if (owner >= c->cc_conf.cc_nr_servers)
		return err_set(-ENOENT, "%s: server %u: cluster %s has %u "
			       "servers", what, owner, c->cc_conf.cc_name,
			       c->cc_conf.cc_nr_servers);
	return 0;
}

int cluster_dev_fail(struct clovis *cl, uint32_t owner, uint32_t dev)
{
	struct clu_client *c = clu_of(cl);
	char label[CLU_NAME_MAX + 16], msg[LIM_ERRMSG_LEN];
	uint32_t bad = UINT32_MAX;
	SDev *d = NULL;
	int rc, brc = 0;

	rc = clu_dev_check(c, owner, "device fail");
	if (rc != 0)
		return rc;
	clu_dev_label(c, owner, dev, label, sizeof label);
	rc = clu_dev_call(c, owner, SDV_FAIL, owner, dev, NULL, &d);
	if (rc != 0)
		return err_set(rc, "device fail %s: %s", label, err_msg());
	sdev__free_unpacked(d, NULL);
	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++) {
		if (s == owner)
			continue;
		rc = clu_dev_call(c, s, SDV_FAIL, owner, dev, NULL, &d);
		if (d != NULL)
			sdev__free_unpacked(d, NULL);
		if (rc == 0 || rc == -ENOENT || bad != UINT32_MAX)
			continue;
		bad = s;
		brc = rc;
		snprintf(msg, sizeof msg, "%s", err_msg());
	}
	if (bad == UINT32_MAX)
		return 0;
	return err_set(brc, "device fail %s: failed on its server, but server "
		       "%s could not mark its image of it (%s); run 'device "
		       "fail' again once it answers", label,
		       c->cc_conf.cc_servers[bad].cs_name, msg);
}

/* Ask every other server for its image of the device before a replace:
 * *repaired[s] when an image is REPAIRED (to bring back online).  0, or
 * -EBUSY / a transport code naming the server that stops it. */
static int clu_dev_images(struct clu_client *c, uint32_t owner, uint32_t dev,
			  const char *label, bool own_online, bool *repaired)
{
	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++) {
		const char *sn = c->cc_conf.cc_servers[s].cs_name;
		SDev *d = NULL;
		uint32_t st;
		int rc;

		repaired[s] = false;
		if (s == owner)
			continue;
		rc = clu_dev_call(c, s, SDV_STATE, owner, dev, NULL, &d);
		if (rc == -ENOENT)
			continue;
		if (rc != 0)
			return err_set(rc, "device replace %s: server %s must "
				       "answer for its image of the device "
				       "first: %s", label, sn, err_msg());
		st = d->state;
		sdev__free_unpacked(d, NULL);
		repaired[s] = st == ED_REPAIRED;
		if (st == ED_FAILED)
			return err_set(-EBUSY, "device replace %s: server %s "
				       "has not repaired its image of it yet "
				       "(run 'strata repair' first)", label, sn);
		if (st == ED_ONLINE && !own_online)
			return err_set(-EBUSY, "device replace %s: server %s "
				       "still uses its image of it (online "
				       "there): run 'device fail' again, then "
				       "'strata repair'", label, sn);
	}
	return 0;
}

int cluster_dev_replace(struct clovis *cl, uint32_t owner, uint32_t dev,
			const char *path)
{
	struct clu_client *c = clu_of(cl);
	char label[CLU_NAME_MAX + 16];
	bool repaired[CLU_SERVERS_MAX], any = false, online;
	SDev *d = NULL;
	int rc;

	rc = clu_dev_check(c, owner, "device replace");
	if (rc != 0)
		return rc;
	clu_dev_label(c, owner, dev, label, sizeof label);
	rc = clu_dev_call(c, owner, SDV_STATE, owner, dev, NULL, &d);
	if (rc != 0)
		return err_set(rc, "device replace %s: %s", label, err_msg());
	online = d->state == ED_ONLINE;
	sdev__free_unpacked(d, NULL);
	rc = clu_dev_images(c, owner, dev, label, online, repaired);
	if (rc != 0)
		return rc;
	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++)
		any |= repaired[s];
	/* Online on its owner with repaired images: a replace that reached
	 * the owner and not every image; finish it. */
	if (online && !any)
		return err_set(-EBUSY, "device replace %s: the device is online: "
			       "only a failed and repaired device can be "
			       "replaced ('device fail', then 'strata repair')",
			       label);
	if (!online) {
		rc = clu_dev_call(c, owner, SDV_REPLACE, owner, dev, path, &d);
		if (rc != 0)
			return err_set(rc, "device replace %s: %s", label,
				       err_msg());
		sdev__free_unpacked(d, NULL);
	}
	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++) {
		if (!repaired[s])
			continue;
		rc = clu_dev_call(c, s, SDV_REPLACE, owner, dev, NULL, &d);
		if (rc != 0)
			return err_set(rc, "device replace %s: replaced on its "
				       "server, but server %s could not bring "
				       "its image back online (%s); run "
				       "'device replace' again once it "
				       "answers", label,
				       c->cc_conf.cc_servers[s].cs_name,
				       err_msg());
		sdev__free_unpacked(d, NULL);
	}
	return 0;
}

int cluster_dev_locate(struct clovis *cl, uint32_t gdev, uint32_t *owner,
		       uint32_t *dev)
{
	struct clu_client *c = clu_of(cl);
	uint32_t base = 0;

	for (uint32_t s = 0; s < c->cc_conf.cc_nr_servers; s++) {
		Reply *rp = NULL;
		uint32_t n;
		int rc = clu_status(c, s, &rp);

		if (rc == 0 && rp->status == NULL)
			rc = err_set(-EBADMSG, "server %s: STATUS without "
				     "status", c->cc_conf.cc_servers[s].cs_name);
		if (rc != 0) {
			if (rp != NULL)
				reply__free_unpacked(rp, NULL);
			return err_set(rc, "device %u: the devices of server %s "
				       "come before it and it does not answer "
				       "(%s): name the device by its server "
				       "(clovis_server_dev_fail(), 'SERVER:"
				       "DEV')", gdev,
				       c->cc_conf.cc_servers[s].cs_name,
				       err_msg());
		}
		n = (uint32_t)rp->status->n_devs;
		reply__free_unpacked(rp, NULL);
		if (gdev < base + n) {
			*owner = s;
			*dev = gdev - base;
			return 0;
		}
		base += n;
	}
	return err_set(-EINVAL, "device %u: no such device (the cluster's "
		       "servers have %u)", gdev, base);
}

int cluster_server_find(struct clovis *cl, const char *name, uint32_t *s)
{
	int rc = clu_server_find(&clu_of(cl)->cc_conf, name);

	if (rc < 0)
		return rc;
	*s = (uint32_t)rc;
	return 0;
}

/* ------------------------------------------------------------ layers */

/*
 * A composite's layers through a cluster client (docs/cluster.md
 * "Composite layers through a cluster client"; the server half:
 * core/server/srv_layer.c).  Each call is a SOP_LAYER request to the
 * server serving the object's home, as the object's own requests go
 * (clu_obj_target()), which runs the engine's layer code there.  Sent
 * again where an object request would be (busy; refused for the home,
 * -EREMCHG: nothing ran); LIST, OF and MOVE also when the server could not
 * be reached and the map now names another (they change nothing, or, a
 * move, nothing twice: blocks already on the target layer stay).  An ADD
 * or DROP whose server could not be reached is not sent again (it may
 * have been applied), as an object CREATE or DELETE.
 */

/* One SOP_LAYER call of q on object id: 0 and *out (checked for q's op;
 * a MOVE against its range [q->start, q->start + q->nr)), or a negative
 * code with the server's message. */
static int clu_layer_call(struct clu_client *c, const struct st_id *id,
			  LayerReq *q, LayerReply **out)
{
	bool resend = q->op == SLY_LIST || q->op == SLY_OF ||
		      q->op == SLY_MOVE || q->op == SLY_MAP ||
		      q->op == SLY_SCRUB;
	struct clu_again g = {0};
	Reply *rp = NULL;
	SId sid;
	int rc;

	*out = NULL;
	msg_id_out(&sid, id);
	q->id = &sid;
	for (;;) {
		uint32_t s = clu_obj_target(c, id);
		bool answered;

		rc = clu_call_ans(c, s, SOP_LAYER, &q->base, NULL, 0, &rp,
				  &answered);
		if (rc == 0 || !clu_obj_again(c, id, s, rc, answered,
					      resend || rc == -EREMCHG, &g))
			break;
		if (rp != NULL) {
			reply__free_unpacked(rp, NULL);
			rp = NULL;
		}
	}
	if (rc == 0)
		rc = msg_layer_reply_decode(rp, q->op, q->start,
					    q->start + q->nr, out);
	if (rp != NULL)
		reply__free_unpacked(rp, NULL);
	q->id = NULL;
	return rc;
}

static void clu_layer_req(LayerReq *q, uint32_t op, uint64_t inc)
{
	layer_req__init(q);
	q->op = op;
	q->incarnation = inc;
}

int cluster_layer_add(struct clovis *cl, const struct st_id *id, uint64_t inc,
		      const struct meta_ent *sub, uint32_t priority,
		      uint32_t *layer)
{
	LayerReq q;
	LayerReply *lr;
	SAttr a;
	int rc;

	clu_layer_req(&q, SLY_ADD, inc);
	sattr__init(&a);
	a.block_shift = sub->me_block_shift;
	a.layout = sub->me_layout;
	a.tier = sub->me_tier;
	a.pool = sub->me_pool;
	a.n = sub->me_n;
	a.k = sub->me_k;
	a.s = sub->me_s;
	a.unit_shift = sub->me_unit_shift;
	q.attr = &a;
	q.priority = priority;
	rc = clu_layer_call(clu_of(cl), id, &q, &lr);
	if (rc == 0) {
		*layer = lr->layer;
		layer_reply__free_unpacked(lr, NULL);
	}
	return rc;
}

int cluster_layer_drop(struct clovis *cl, const struct st_id *id,
		       uint64_t inc, uint32_t layer)
{
	LayerReq q;
	LayerReply *lr;
	int rc;

	clu_layer_req(&q, SLY_DROP, inc);
	q.layer = layer;
	rc = clu_layer_call(clu_of(cl), id, &q, &lr);
	if (rc == 0)
		layer_reply__free_unpacked(lr, NULL);
	return rc;
}

int cluster_layer_list(struct clovis *cl, const struct st_id *id,
		       uint64_t inc, struct st_layer_info *out, uint32_t *nr)
{
	LayerReq q;
	LayerReply *lr;
	int rc;

	clu_layer_req(&q, SLY_LIST, inc);
	rc = clu_layer_call(clu_of(cl), id, &q, &lr);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < lr->n_layers && i < *nr; i++) {
		const SLayer *l = lr->layers[i];
		struct st_layer_info *li = &out[i];

		memset(li, 0, sizeof *li);
		li->li_layer = l->layer;
		li->li_priority = l->priority;
		li->li_blocks = l->blocks;
		li->li_attr.oa_block_shift = l->attr->block_shift;
		li->li_attr.oa_layout = l->attr->layout;
		li->li_attr.oa_tier = l->attr->tier;
		li->li_attr.oa_dev = l->attr->dev;
		li->li_attr.oa_pool = l->attr->pool;
		li->li_attr.oa_data_units = l->attr->n;
		li->li_attr.oa_parity_units = l->attr->k;
		li->li_attr.oa_spare_units = l->attr->s;
		li->li_attr.oa_unit_shift = l->attr->unit_shift;
	}
	*nr = (uint32_t)lr->n_layers;
	layer_reply__free_unpacked(lr, NULL);
	return 0;
}

/* A move goes in calls of at most SRV_LAYER_MOVE_BYTES of blocks each
 * (the server says where the next one starts): each call ends within the
 * call timeout however long the range. */
int cluster_layer_move(struct clovis *cl, const struct st_id *id,
		       uint64_t inc, uint64_t start, uint64_t nr, uint32_t to,
		       uint64_t *moved)
{
	uint64_t pos = start, end = start + nr;
	int rc = 0;

	*moved = 0;
	/* bounded: every answer moves pos forward (msg_layer_reply_decode) */
	while (rc == 0 && pos < end) {
		LayerReq q;
		LayerReply *lr;

		clu_layer_req(&q, SLY_MOVE, inc);
		q.start = pos;
		q.nr = end - pos;
		q.layer = to;
		rc = clu_layer_call(clu_of(cl), id, &q, &lr);
		if (rc != 0)
			break;
		*moved += lr->moved;
		pos = lr->next;
		layer_reply__free_unpacked(lr, NULL);
	}
	return rc;
}

/* A map goes in calls of at most SRV_LAYER_MAP_RUNS runs each (the
 * server says where the next one starts), until out is full or the
 * range covered; a run cut between two answers is joined again. */
int cluster_layer_map(struct clovis *cl, const struct st_id *id,
		      uint64_t inc, uint64_t start, uint64_t nr,
		      struct st_layer_ext *out, uint32_t *n_out,
		      uint64_t *next)
{
	uint64_t pos = start, end = start + nr;
	uint32_t n = 0, cap = *n_out;
	int rc = 0;

	/* bounded: every answer moves pos forward (msg_layer_reply_decode) */
	while (rc == 0 && pos < end) {
		LayerReq q;
		LayerReply *lr;
		size_t i;

		clu_layer_req(&q, SLY_MAP, inc);
		q.start = pos;
		q.nr = end - pos;
		rc = clu_layer_call(clu_of(cl), id, &q, &lr);
		if (rc != 0)
			break;
		for (i = 0; i < lr->n_runs; i++) {
			const SLayerExt *x = lr->runs[i];

			if (n > 0 && out[n - 1].le_layer == x->layer &&
			    out[n - 1].le_start + out[n - 1].le_blocks ==
			    x->start) {
				out[n - 1].le_blocks += x->blocks;
				continue;
			}
			if (n == cap)
				break;
			out[n++] = (struct st_layer_ext){x->start, x->blocks,
							 x->layer};
		}
		pos = i < lr->n_runs ? lr->runs[i]->start : lr->next;
		layer_reply__free_unpacked(lr, NULL);
		if (n == cap && pos < end)
			break;
	}
	if (rc == 0) {
		*n_out = n;
		*next = pos < end ? pos : end;
	}
	return rc;
}

int cluster_obj_scrub(struct clovis *cl, const struct st_id *id,
		      uint64_t inc, struct clovis_walk_stats *st)
{
	LayerReq q;
	LayerReply *lr;
	const WalkStats *ws;
	int rc;

	memset(st, 0, sizeof *st);
	clu_layer_req(&q, SLY_SCRUB, inc);
	rc = clu_layer_call(clu_of(cl), id, &q, &lr);
	if (rc != 0)
		return rc;
	ws = lr->scrub;
	st->ws_units = ws->units;
	st->ws_bytes = ws->bytes;
	st->ws_rebuilt = ws->rebuilt;
	st->ws_corrupt = ws->corrupt;
	st->ws_unrepairable = ws->unrepairable;
	st->ws_elapsed_ns = ws->elapsed_ns;
	st->ws_devices = ws->devices;
	st->ws_walk_units = ws->walk_units;
	st->ws_walk_rebuilt = ws->walk_rebuilt;
	st->ws_walk_corrupt = ws->walk_corrupt;
	st->ws_walk_unrepairable = ws->walk_unrepairable;
	if (st->ws_walk_unrepairable > 0)
		rc = err_set(-EIO, "%s", lr->note != NULL && lr->note[0] ?
			     lr->note : "scrub: units could not be rebuilt "
			     "(more than K units of their groups lost)");
	layer_reply__free_unpacked(lr, NULL);
	return rc;
}

int cluster_layer_of(struct clovis *cl, const struct st_id *id, uint64_t inc,
		     uint64_t blk, uint32_t *layer)
{
	LayerReq q;
	LayerReply *lr;
	int rc;

	clu_layer_req(&q, SLY_OF, inc);
	q.blk = blk;
	rc = clu_layer_call(clu_of(cl), id, &q, &lr);
	if (rc == 0) {
		*layer = lr->layer;
		layer_reply__free_unpacked(lr, NULL);
	}
	return rc;
}

/* --------------------------------------------------- function shipping */

/*
 * One shipped call (clovis/isc.c; the server half: core/server/srv_isc.c).
 * An object's goes to the server serving its home, sent again where an
 * object read would be (it changes nothing); an index's to its replicas
 * in ring order from its home, the first that answers (-ESTALE: a replica
 * behind, try the next).  The call's timeout covers the home's own calls
 * to the units' owners and the runs' deadlines: the cluster's call
 * timeout and three deadlines.
 */
static int clu_isc_once(struct clu_client *c, uint32_t s, const IscReq *q,
			uint32_t ms, IscReply **out, bool *answered)
{
	struct msg_buf b = {0};
	struct rpc_result res = {0};
	int rc = msg_pack(&q->base, &b);

	*answered = false;
	if (rc != 0)
		return rc;
	rc = peers_call_ms(c->cc_peers, s, SOP_ISC, b.mb_p, b.mb_len, NULL, ms,
			   &res);
	free(b.mb_p);
	*answered = res.rr_answered;
	if (rc == 0) {
		*out = isc_reply__unpack(NULL, res.rr_len, res.rr_body);
		if (*out == NULL)
			rc = err_set(-EBADMSG, "function %s: server %s: reply "
				     "of %zu bytes is not an IscReply",
				     q->fn->name, c->cc_conf.cc_servers[s].cs_name,
				     res.rr_len);
	} else if (res.rr_msg[0] != '\0') {
		err_set(rc, "%s", res.rr_msg);
	}
	free(res.rr_body);
	return rc;
}

int cluster_isc_call(struct clovis *cl, bool obj, const struct st_id *id,
		     const IscReq *q, IscReply **out)
{
	struct clu_client *c = clu_of(cl);
	uint32_t dl = q->deadline_ms ? q->deadline_ms : 1000;
	uint32_t ms = c->cc_conf.cc_call_ms + 3 * dl;
	int rc;

	*out = NULL;
	if (obj) {
		struct clu_again g = {0};

		for (;;) {
			uint32_t s = clu_obj_target(c, id);
			bool answered;

			rc = clu_isc_once(c, s, q, ms, out, &answered);
			if (rc == 0 || !clu_obj_again(c, id, s, rc, answered,
						      true, &g))
				break;
			if (*out != NULL) {
				isc_reply__free_unpacked(*out, NULL);
				*out = NULL;
			}
		}
		return rc;
	}
	rc = err_set(-EHOSTDOWN, "index %s: no replica reachable",
		     eng_id_str(id));
	for (uint32_t i = 0; i < clu_replicas(c); i++) {
		uint32_t s = clu_ring(c, id, i);
		bool answered;

		if (!peers_live(c->cc_peers, s) && i + 1 < clu_replicas(c))
			continue;
		rc = clu_isc_once(c, s, q, ms, out, &answered);
		if (rc == 0 || (answered && rc != -ESTALE))
			break;
	}
	return rc;
}
