/*
 * srv_dev.c — SOP_DEV: an operator's device fail, replace or state query
 * through a cluster client (docs/cluster.md "Devices through a cluster
 * client").
 *
 * A device of a cluster is named by its owner (the server whose store it
 * belongs to) and its index in the owner's store.  Every other server's
 * store holds an *image* of each device the owner lends (a remote device,
 * path "remote:OWNER:INDEX", through which that server, as a home, keeps
 * units of its own objects on its slice of the device).  The client
 * (clovis/cli_cluster.c) sends the request to the owner and to every other
 * server; each acts on what it holds:
 *
 *   owner  FAIL: the engine's own eng_dev_fail() on the device, as in
 *                embedded mode (its own objects read degraded, repair
 *                rebuilds their units elsewhere);
 *          REPLACE: eng_dev_replace() with the new device at DevReq.path
 *                (relative: from this server's data directory), which
 *                requires the device REPAIRED, as in embedded mode;
 *   image  FAIL: the image marked failed, so this home reads its units
 *                there degraded and its repair rebuilds them;
 *          REPLACE: a REPAIRED image brought back ONLINE with the
 *                rebalance flag (its units move back at the next
 *                rebalance), once its owner replaced the device; an
 *                image already ONLINE is left as it is;
 *   both   STATE: nothing changed.
 *
 * Every answer's text is the SDev of the device or image afterwards.  An
 * owner or device that does not exist is refused with -EINVAL naming it; a
 * server without an image of the device (not lent: local or zoned) answers
 * -ENOENT, which the client takes as "nothing to do here".
 *
 * Device handles are read under rcu_read_lock(): a replace swaps the
 * owner's handle and closes the old one after synchronize_rcu()
 * (core/dev.c), so a request served meanwhile never reads a closed one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/server/srv_internal.h"

/* The engine index of this server's image of device dev of server owner,
 * or -ENOENT with a message. */
static int srv_dev_image(struct srv *s, uint32_t owner, uint32_t dev)
{
	char want[CLU_NAME_MAX + 32];
	uint32_t n = eng_dev_nr(s->s_eng);

	int found = -1;

	snprintf(want, sizeof want, "%s%s:%u", ENG_REMOTE_PREFIX,
		 s->s_conf->cc_servers[owner].cs_name, dev);
	rcu_read_lock();
	for (uint32_t i = 0; i < n && found < 0; i++)
		if (strcmp(eng_dev_get(s->s_eng, i)->ed_dev->td_path,
			   want) == 0)
			found = (int)i;
	rcu_read_unlock();
	if (found >= 0)
		return found;
	return err_set(-ENOENT, "server %s has no image of device %u of "
		       "server %s (a device that server does not lend)",
		       s->s_me->cs_name, dev,
		       s->s_conf->cc_servers[owner].cs_name);
}

/* The engine index of the owner's own device dev, or -EINVAL. */
static int srv_dev_own(struct srv *s, uint32_t dev)
{
	if (dev >= srv_dev_nr_own(s))
		return err_set(-EINVAL, "server %s has no device %u (its own "
			       "devices are 0..%u)", s->s_me->cs_name, dev,
			       srv_dev_nr_own(s) - 1);
	return (int)dev;
}

uint32_t srv_dev_nr_own(struct srv *s)
{
	uint32_t n = eng_dev_nr(s->s_eng), k = 0;

	rcu_read_lock();
	while (k < n && strcmp(eng_dev_get(s->s_eng, k)->ed_dev->td_ops->
			       to_name, ENG_REMOTE_DRIVER) != 0)
		k++;
	rcu_read_unlock();
	return k;
}

/* Replace on the owner: the new device at path (relative: from the data
 * directory). */
static int srv_dev_replace_own(struct srv *s, uint32_t i, const char *path)
{
	char abs[LIM_PATH_MAX + 2];
	int rc;

	if (path[0] != '/') {
		if ((size_t)snprintf(abs, sizeof abs, "%s/%s",
				     s->s_me->cs_data_dir, path) >= sizeof abs)
			return err_set(-EINVAL, "server %s: device %u: "
				       "replacement path %s/%s longer than %u",
				       s->s_me->cs_name, i,
				       s->s_me->cs_data_dir, path,
				       LIM_PATH_MAX);
		path = abs;
	}
	rc = eng_dev_replace(s->s_eng, i, path);
	if (rc == 0)
		LOG_WARNING("server %s: device %u replaced by %s (operator, "
			    "through a cluster client)", s->s_me->cs_name, i,
			    path);
	return rc;
}

/* Does a replace bring back an image in state st with flags that is not
 * repaired?  Only one failed for its server's loss (EDF_HOME_LOST), when
 * the request says that server is back (DevReq.server): one failed for
 * its medium stays failed.  The rule of both the own engine's images and
 * the takeover engines' (srv_dev_home_act()). */
static bool image_back_with_server(uint32_t st, uint32_t flags,
				   const DevReq *q)
{
	return st == ED_FAILED && q->server && (flags & EDF_HOME_LOST);
}

/* Is an image in state st with flags failed or repaired only because its
 * server was lost (EDF_HOME_LOST), so that it may come back with it? */
static bool image_lost_with_server(uint32_t st, uint32_t flags)
{
	return (flags & EDF_HOME_LOST) && (st == ED_FAILED || st == ED_REPAIRED);
}

/*
 * A request about a failed medium (FAIL without DevReq.server, or an
 * operator's REPLACE by a new device) reaching image i of engine e that is
 * failed or repaired only for its server's loss (EDF_HOME_LOST): no
 * longer so marked, so that it never comes back with its server
 * (srv_dev_images_back(): its units would be read from the new, empty
 * device).  Logged.
 */
static void image_medium_lost(struct srv *s, struct eng *e, uint32_t i,
			      const DevReq *q)
{
	struct eng_dev *ed = eng_dev_get(e, i);
	uint32_t st = __atomic_load_n(&ed->ed_state, __ATOMIC_ACQUIRE);

	if (!image_lost_with_server(st, ed->ed_flags))
		return;
	LOG_WARNING("server %s: device %u of server %s %s: its image %u, "
		    "%s while the server was lost, no longer comes back with "
		    "it", s->s_me->cs_name, q->dev,
		    s->s_conf->cc_servers[q->owner].cs_name,
		    q->op == SDV_FAIL ? "failed" : "replaced", i,
		    st == ED_FAILED ? "failed" : "repaired");
	if (eng_dev_state_set(e, i, st, ed->ed_flags & ~EDF_HOME_LOST) != 0)
		LOG_WARNING("server %s: image %u: %s", s->s_me->cs_name, i,
			    err_msg());
}

/* Replace on an image: a repaired image back online, to be rebalanced. */
static int srv_dev_replace_image(struct srv *s, uint32_t i,
				 const DevReq *q)
{
	struct eng_dev *ed = eng_dev_get(s->s_eng, i);
	uint32_t st = __atomic_load_n(&ed->ed_state, __ATOMIC_ACQUIRE);

	if (st == ED_ONLINE)
		return 0;
	if (image_back_with_server(st, ed->ed_flags, q)) {
		/* failed for its server's loss, its server back: the units
		 * not rebuilt elsewhere (a repair that failed, or could not
		 * rebuild them all) are read from it again, the others
		 * moved back by the rebalance.  Left
		 * failed, they were never read again and their groups stayed
		 * degraded for good. */
		LOG_WARNING("server %s: image %u of device %u of server %s "
			    "back online with its server, to be rebalanced "
			    "(failed when the server was lost; the units not "
			    "rebuilt elsewhere are read from it again)",
			    s->s_me->cs_name, i, q->dev,
			    s->s_conf->cc_servers[q->owner].cs_name);
		return eng_dev_state_set(s->s_eng, i, ED_ONLINE,
					 EDF_REBALANCE);
	}
	if (st != ED_REPAIRED && !q->server)
		image_medium_lost(s, s->s_eng, i, q);
	if (st != ED_REPAIRED)
		return err_set(-EBUSY, "server %s: its image of device %u of "
			       "server %s is failed but not repaired (run "
			       "'strata repair' first)", s->s_me->cs_name,
			       q->dev, s->s_conf->cc_servers[q->owner].cs_name);
	LOG_WARNING("server %s: image %u of device %u of server %s back "
		    "online, to be rebalanced (its owner replaced it)",
		    s->s_me->cs_name, i, q->dev,
		    s->s_conf->cc_servers[q->owner].cs_name);
	return eng_dev_state_set(s->s_eng, i, ED_ONLINE, EDF_REBALANCE);
}

/* Run q on engine device i (the owner's device, or an image). */
static int srv_dev_act(struct srv *s, const DevReq *q, uint32_t i)
{
	char why[CLU_NAME_MAX + 64];
	bool own = q->owner == s->s_self;

	if (q->op == SDV_FAIL && !own && q->server) {
		/* its server lost (an HA repair of the whole server): marked
		 * so, to come back with the server (srv_dev_replace_image) */
		if (eng_dev_get(s->s_eng, i)->ed_state != ED_ONLINE)
			return 0;
		LOG_ERROR("server %s: image %u of device %u of server %s "
			  "failed: its server is lost (its units are rebuilt "
			  "elsewhere)", s->s_me->cs_name, i, q->dev,
			  s->s_conf->cc_servers[q->owner].cs_name);
		return eng_dev_state_set(s->s_eng, i, ED_FAILED,
					 EDF_HOME_LOST);
	}
	if (q->op == SDV_FAIL) {
		if (!own)
			image_medium_lost(s, s->s_eng, i, q);
		if (own)
			snprintf(why, sizeof why, "marked failed by the "
				 "operator (through a cluster client)");
		else
			snprintf(why, sizeof why, "its server %s marked it "
				 "failed (operator)",
				 s->s_conf->cc_servers[q->owner].cs_name);
		return eng_dev_fail(s->s_eng, i, why);
	}
	if (q->op == SDV_REPLACE)
		return own ? srv_dev_replace_own(s, i, q->path) :
			     srv_dev_replace_image(s, i, q);
	return 0;
}

/* Serialises a request failing images for their server's loss with
 * srv_dev_images_back() (s_lost_epoch). */
static pthread_mutex_t srv_dev_lost_lock = PTHREAD_MUTEX_INITIALIZER;

/* A device request for the engines this server acts for other homes
 * with (s_route_each). */
struct srv_dev_home {
	struct srv *dh_srv;
	const DevReq *dh_q;
	/* srv_dev_images_back(): only images failed or repaired for their
	 * server's loss (EDF_HOME_LOST) are looked at, and nothing is
	 * logged for the others */
	bool dh_lost_only;
};

/*
 * Run the request on engine e, acting for home: its image of the device
 * (every device of a takeover engine is one: "remote:OWNER:DEV@HOME+INC",
 * the home's own devices included).  FAIL marks it failed (EDF_HOME_LOST
 * when the device is the home's own: its server is lost, not the
 * medium); REPLACE brings a REPAIRED one back ONLINE with the rebalance
 * flag, as for any image, and a FAILED one too when its server is back
 * (DevReq.server).  Logged; an engine without the device, or one not
 * serving (e NULL), has nothing to do.  Always 0: the other engines are
 * visited all the same.
 */
static int srv_dev_home_act(void *arg, uint32_t home, struct eng *e)
{
	const struct srv_dev_home *dh = arg;
	struct srv *s = dh->dh_srv;
	const DevReq *q = dh->dh_q;
	const char *owner = s->s_conf->cc_servers[q->owner].cs_name;
	const char *hn = s->s_conf->cc_servers[home].cs_name;
	char want[CLU_NAME_MAX + 48];
	uint32_t n, st = 0, flags = 0;
	size_t wl;
	int found = -1, rc = 0;

	/* an engine that does not serve now: its images are set when it
	 * next opens as its store has them; its walk rebuilds the units of
	 * an unreachable device all the same (eng_dev_usable()) */
	if (e == NULL)
		return 0;
	n = eng_dev_nr(e);
	snprintf(want, sizeof want, "%s%s:%u@", ENG_REMOTE_PREFIX, owner,
		 q->dev);
	wl = strlen(want);
	rcu_read_lock();
	for (uint32_t i = 0; i < n && found < 0; i++) {
		struct eng_dev *ed = eng_dev_get(e, i);

		if (strncmp(ed->ed_dev->td_path, want, wl) == 0) {
			found = (int)i;
			st = __atomic_load_n(&ed->ed_state, __ATOMIC_ACQUIRE);
			flags = ed->ed_flags;
		}
	}
	rcu_read_unlock();
	if (found < 0 ||
	    (dh->dh_lost_only && !image_lost_with_server(st, flags)))
		return 0;
	if (q->op == SDV_FAIL && st == ED_ONLINE) {
		LOG_ERROR("server %s: acting for home %s: its device %u (device "
			  "%u of %s) failed: %s", s->s_me->cs_name, hn, found,
			  q->dev, owner, q->server ?
			  "its server is lost (its units are rebuilt "
			  "elsewhere)" : "its server marked it failed");
		rc = eng_dev_state_set(e, (uint32_t)found, ED_FAILED,
				       q->server ? EDF_HOME_LOST : 0);
	} else if ((q->op == SDV_FAIL || (q->op == SDV_REPLACE &&
					  st == ED_FAILED)) && !q->server) {
		/* its medium failed or replaced: never back with its
		 * server; a failed one is left failed */
		image_medium_lost(s, e, (uint32_t)found, q);
		if (q->op == SDV_REPLACE)
			LOG_WARNING("server %s: acting for home %s: its device "
				    "%u (device %u of %s) is failed but not "
				    "repaired: left failed", s->s_me->cs_name,
				    hn, found, q->dev, owner);
	} else if (q->op == SDV_REPLACE && st == ED_REPAIRED) {
		LOG_WARNING("server %s: acting for home %s: its device %u "
			    "(device %u of %s) back online, to be rebalanced",
			    s->s_me->cs_name, hn, found, q->dev, owner);
		rc = eng_dev_state_set(e, (uint32_t)found, ED_ONLINE,
				       EDF_REBALANCE);
	} else if (q->op == SDV_REPLACE &&
		   image_back_with_server(st, flags, q)) {
		LOG_WARNING("server %s: acting for home %s: its device %u "
			    "(device %u of %s) back online with its server, to "
			    "be rebalanced (failed when the server was lost)",
			    s->s_me->cs_name, hn, found, q->dev, owner);
		rc = eng_dev_state_set(e, (uint32_t)found, ED_ONLINE,
				       EDF_REBALANCE);
	} else if (q->op == SDV_REPLACE && st == ED_FAILED &&
		   !dh->dh_lost_only) {
		LOG_WARNING("server %s: acting for home %s: its device %u "
			    "(device %u of %s) is failed but not repaired: "
			    "left failed", s->s_me->cs_name, hn, found,
			    q->dev, owner);
	}
	if (rc != 0)
		LOG_WARNING("server %s: acting for home %s: device %u: %s",
			    s->s_me->cs_name, hn, found, err_msg());
	return 0;
}

/* The answer: device i as SDev, packed into Reply.text. */
static int srv_dev_answer(struct srv *s, uint32_t i, struct msg_buf *rb)
{
	struct st_dev_info di;
	SDev d = SDEV__INIT;
	Reply rp = REPLY__INIT;
	struct msg_buf db = {0};
	int rc;

	rcu_read_lock();
	eng_dev_info(s->s_eng, i, &di);
	rcu_read_unlock();
	d.index = di.di_index;
	d.tier = di.di_tier;
	d.path = di.di_path;
	d.driver = di.di_driver;
	d.size = di.di_size_bytes;
	d.free = di.di_free_bytes;
	d.state = di.di_state;
	d.errors = di.di_errors;
	d.direct_io = di.di_direct_io;
	d.model = di.di_model;
	d.rebalance = di.di_rebalance;
	d.reads = di.di_reads;
	d.writes = di.di_writes;
	rc = msg_pack(&d.base, &db);
	if (rc == 0) {
		rp.text.data = db.mb_p;
		rp.text.len = db.mb_len;
		rc = msg_pack(&rp.base, rb);
	}
	free(db.mb_p);
	return rc;
}

static void srv_dev_handle(struct rpc_sreq *req, void *arg)
{
	struct srv *s = arg;
	struct msg_buf rb = {0};
	DevReq *q = NULL;
	size_t len;
	const void *body = rpc_sreq_body(req, &len);
	bool lost = false;
	int rc, i;

	srv_thread_enter();
	err_clear();
	if (__atomic_load_n(&s->s_draining, __ATOMIC_ACQUIRE)) {
		rpc_sreq_reply(req, -ESHUTDOWN, NULL, 0, "server is stopping");
		return;
	}
	rc = msg_dev_decode(body, len, s->s_self, &q);
	if (rc == 0 && q->owner >= s->s_conf->cc_nr_servers)
		rc = err_set(-EINVAL, "request: dev.owner %u: cluster %s has "
			     "%u servers", q->owner, s->s_conf->cc_name,
			     s->s_conf->cc_nr_servers);
	if (rc != 0) {
		__atomic_add_fetch(&s->s_cnt.sc_bad, 1, __ATOMIC_RELAXED);
		LOG_INFO("server %s: refused a device request from %s: %s",
			 s->s_me->cs_name, rpc_sreq_peer(req), err_msg());
		goto out;
	}
	__atomic_add_fetch(&s->s_cnt.sc_requests, 1, __ATOMIC_RELAXED);
	/* Images failed for their server's loss: none comes back from a map
	 * read before this request (srv_dev_images_back(), under the same
	 * lock).  Other requests do not take it: the handler threads must
	 * not wait behind its store commits (a fail of a medium racing the
	 * look at the map within a moment of a server's return is left:
	 * docs/cluster.md "Images back with their server"). */
	lost = q->op == SDV_FAIL && q->server && q->owner != s->s_self;
	if (lost) {
		pthread_mutex_lock(&srv_dev_lost_lock);
		if (rpc_sreq_epoch(req) > s->s_lost_epoch[q->owner])
			s->s_lost_epoch[q->owner] = rpc_sreq_epoch(req);
	}
	i = q->owner == s->s_self ? srv_dev_own(s, q->dev) :
				     srv_dev_image(s, q->owner, q->dev);
	rc = i < 0 ? i : srv_dev_act(s, q, (uint32_t)i);
	if (rc == 0)
		rc = srv_dev_answer(s, (uint32_t)i, &rb);
	/* the homes this server acts for hold images of the device too
	 * (their own devices included): failed or back there as well, so
	 * that their walks rebuild or move their units */
	if (q->op != SDV_STATE && s->s_route_each != NULL) {
		struct srv_dev_home dh = {s, q, false};
		char msg[512];

		snprintf(msg, sizeof msg, "%s", err_msg());
		s->s_route_each(s->s_route_arg, srv_dev_home_act, &dh);
		if (rc != 0)
			err_set(rc, "%s", msg);
	}
	if (lost)
		pthread_mutex_unlock(&srv_dev_lost_lock);
out:
	rpc_sreq_reply(req, rc, rb.mb_p, rb.mb_len, rc != 0 ? err_msg() : NULL);
	free(rb.mb_p);
	if (q != NULL)
		dev_req__free_unpacked(q, NULL);
}

void srv_dev_images_back(struct srv *s, uint32_t owner, uint32_t dev,
			 uint64_t epoch)
{
	DevReq q = DEV_REQ__INIT;
	struct srv_dev_home dh = {s, &q, true};
	struct eng *own = s->s_eng;
	void *ref = NULL;
	int i;

	if (owner == s->s_self || owner >= s->s_conf->cc_nr_servers)
		return;
	pthread_mutex_lock(&srv_dev_lost_lock);
	if (epoch < s->s_lost_epoch[owner]) {
		pthread_mutex_unlock(&srv_dev_lost_lock);
		return;
	}
	q.op = SDV_REPLACE;
	q.owner = owner;
	q.dev = dev;
	q.server = true;
	/* Its own engine only while it serves its own home: before its
	 * handback (or while another server acts for it) a commit there is
	 * refused by the standbys as from a deposed home, and the server
	 * would then run again from its start (ha_inflight_test.sh, make
	 * check 2026-11-30); its store is replaced at the handback anyway. */
	if (s->s_route != NULL &&
	    s->s_route(s->s_route_arg, s->s_self, &own, &ref) != 0)
		own = NULL;
	i = own == s->s_eng ? srv_dev_image(s, owner, dev) : -1;
	if (i >= 0) {
		struct eng_dev *ed = eng_dev_get(s->s_eng, (uint32_t)i);
		uint32_t st = __atomic_load_n(&ed->ed_state,
					      __ATOMIC_ACQUIRE);

		if (image_lost_with_server(st, ed->ed_flags) &&
		    srv_dev_act(s, &q, (uint32_t)i) != 0)
			LOG_WARNING("server %s: image %d of device %u of server "
				    "%s: %s", s->s_me->cs_name, i, dev,
				    s->s_conf->cc_servers[owner].cs_name,
				    err_msg());
	}
	if (ref != NULL && s->s_route_put != NULL)
		s->s_route_put(s->s_route_arg, ref);
	if (s->s_route_each != NULL)
		s->s_route_each(s->s_route_arg, srv_dev_home_act, &dh);
	pthread_mutex_unlock(&srv_dev_lost_lock);
	err_clear();
}

int srv_dev_register(struct srv *s)
{
	return rpc_handler_set(s->s_ep, SOP_DEV, srv_dev_handle, s);
}
