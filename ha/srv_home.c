/*
 * srv_home.c — taking over a home in a server (contract in srv_home.h,
 * design in docs/cluster.md "Taking over a home").
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "core/clu_conf.h"
#include "core/eng_repl.h"
#include "core/engine.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/rpc/rpc.h"
#include "core/server/rdev.h"
#include "core/server/srv_repl.h"
#include "core/server/srv_internal.h"
#include "core/server/msg.h"
#include "core/server/peers.h"
#include "ha/etcd.h"
#include "ha/ha.pb-c.h"
#include "ha/map.h"
#include "ha/srv_ha.h"
#include "ha/srv_ha_internal.h"
#include "ha/srv_home.h"

/* One home this server may act for. */
struct home_eng {
	struct srv_home *he_sh;
	uint32_t he_home;
	struct eng *he_eng;     /* open: this server acts for he_home */
	uint32_t he_refs;       /* requests running on he_eng */
	bool he_closing;        /* refused from now on; closed at 0 refs */
	bool he_frozen;         /* handing back: its snapshot taken, no
				 * request served until the map moves it */
	uint64_t he_inc;        /* the takeover incarnation it writes with */
	uint64_t he_epoch;      /* the map epoch of the move */
	struct repl_grp *he_repl; /* its write sets' pipeline to the home's
				   * other standbys (srv_repl.h) */
};

struct srv_home {
	struct srv *sh_srv;
	pthread_mutex_t sh_lock;
	pthread_cond_t sh_cond;     /* a reference was dropped */
	bool sh_on;                 /* the map takes homes over */
	uint64_t sh_epoch;          /* of the map routed by */
	uint32_t sh_acting[CLU_SERVERS_MAX]; /* server serving each home */
	bool sh_held;               /* own home served elsewhere */
	struct srv_home_shadow_ops sh_ops;
	struct home_eng sh_he[CLU_SERVERS_MAX];
};

static const char *name_of(const struct srv_home *sh, uint32_t i)
{
	return sh->sh_srv->s_conf->cc_servers[i].cs_name;
}

/* ------------------------------------------------------------ routing */

static int home_route(void *arg, uint32_t home, struct eng **eng, void **ref)
{
	struct srv_home *sh = arg;
	struct srv *s = sh->sh_srv;
	struct home_eng *he;
	uint32_t a;
	int rc = 0;

	*ref = NULL;
	*eng = s->s_eng;
	if (home >= s->s_conf->cc_nr_servers)
		return 0; /* cannot be: clu_home() is in range */
	pthread_mutex_lock(&sh->sh_lock);
	if (!sh->sh_on) {
		pthread_mutex_unlock(&sh->sh_lock);
		return 0;
	}
	a = sh->sh_acting[home];
	he = &sh->sh_he[home];
	if (a != s->s_self && rpc_epoch_get() > sh->sh_epoch) {
		/* the agent took a newer map whose homes it has not followed
		 * yet (home_step(), its next tick): the home may be this
		 * server's now, so no refusal that sends the client away
		 * (a client that reads the new map sends it here again) */
		rc = err_set(-EBUSY, "server %s is following cluster map "
			     "epoch %" PRIu64 " (its homes are at epoch %"
			     PRIu64 ")", s->s_me->cs_name, rpc_epoch_get(),
			     sh->sh_epoch);
	} else if (a != s->s_self) {
		rc = err_set(-EREMCHG, "objects homed on %s are served by %s "
			     "(cluster map epoch %" PRIu64 "), not by %s",
			     name_of(sh, home), name_of(sh, a), sh->sh_epoch,
			     s->s_me->cs_name);
	} else if (home != s->s_self) {
		if (he->he_eng == NULL || he->he_closing || he->he_frozen) {
			rc = err_set(-EBUSY, "server %s is %s home %s",
				     s->s_me->cs_name, he->he_frozen ?
				     "handing back" : "opening the store of",
				     name_of(sh, home));
		} else {
			he->he_refs++;
			*eng = he->he_eng;
			*ref = he;
		}
	}
	pthread_mutex_unlock(&sh->sh_lock);
	return rc;
}

static uint32_t home_acting(void *arg, uint32_t home)
{
	struct srv_home *sh = arg;
	uint32_t a;

	if (home >= CLU_SERVERS_MAX)
		return home;
	pthread_mutex_lock(&sh->sh_lock);
	a = sh->sh_on ? sh->sh_acting[home] : home;
	pthread_mutex_unlock(&sh->sh_lock);
	return a;
}

static void home_put(void *arg, void *ref)
{
	struct srv_home *sh = arg;
	struct home_eng *he = ref;

	pthread_mutex_lock(&sh->sh_lock);
	if (--he->he_refs == 0)
		pthread_cond_broadcast(&sh->sh_cond);
	pthread_mutex_unlock(&sh->sh_lock);
}

/* s_route_each (core/server/srv_internal.h): every takeover engine that
 * serves now, held (a reference) while fn runs on it; fn gets NULL for a
 * home this server acts for whose engine does not serve now (opening,
 * closing, frozen for a handback). */
static int home_each(void *arg, int (*fn)(void *farg, uint32_t home,
					  struct eng *e), void *farg)
{
	struct srv_home *sh = arg;
	uint32_t n = sh->sh_srv->s_conf->cc_nr_servers;
	int rc = 0;

	for (uint32_t h = 0; h < n && rc == 0; h++) {
		struct home_eng *he = &sh->sh_he[h];
		struct eng *e = NULL;
		bool acting;

		if (h == sh->sh_srv->s_self)
			continue;
		pthread_mutex_lock(&sh->sh_lock);
		acting = sh->sh_on && sh->sh_acting[h] == sh->sh_srv->s_self;
		if (acting && he->he_eng != NULL && !he->he_closing &&
		    !he->he_frozen) {
			he->he_refs++;
			e = he->he_eng;
		}
		pthread_mutex_unlock(&sh->sh_lock);
		if (e == NULL) {
			if (acting)
				rc = fn(farg, h, NULL);
			continue;
		}
		rc = fn(farg, h, e);
		home_put(sh, he);
	}
	return rc;
}

/* s_route_going: the engine of home is closing or frozen (or gone). */
static bool home_going(void *arg, uint32_t home)
{
	struct srv_home *sh = arg;
	const struct home_eng *he;
	bool going;

	if (home >= CLU_SERVERS_MAX)
		return true;
	he = &sh->sh_he[home];
	pthread_mutex_lock(&sh->sh_lock);
	going = he->he_eng == NULL || he->he_closing || he->he_frozen ||
		sh->sh_acting[home] != sh->sh_srv->s_self;
	pthread_mutex_unlock(&sh->sh_lock);
	return going;
}

/* ------------------------------------------------------- the engine */

/* eng_conf.ec_dev_path of an engine acting for home he_home. */
static int home_dev_path(void *arg, uint32_t i, const char *recorded,
			 char *out, size_t len)
{
	const struct home_eng *he = arg;
	const char *h = name_of(he->he_sh, he->he_home);
	int n;

	if (strncmp(recorded, ENG_REMOTE_PREFIX,
		    sizeof ENG_REMOTE_PREFIX - 1) == 0)
		n = snprintf(out, len, "%s@%s+%" PRIu64, recorded, h,
			     he->he_inc);
	else /* the home's own device i: its image on the home */
		n = snprintf(out, len, "%s%s:%u@%s+%" PRIu64,
			     ENG_REMOTE_PREFIX, h, i, h, he->he_inc);
	if (n < 0 || (size_t)n >= len)
		return err_set(-ENAMETOOLONG, "home %s: device %u (%s): path "
			       "too long", h, i, recorded);
	return 1;
}

/* Open the engine of home he (the map thread; no lock held). */
static int hb_call(struct peers *p, uint32_t a, uint32_t kind, uint32_t h,
		   uint64_t from, Reply **rp);
static int home_catch_up(struct srv_home *sh, uint32_t h, const char *meta);

static int home_open(struct srv_home *sh, struct home_eng *he)
{
	struct srv *s = sh->sh_srv;
	const struct clu_server *hs = &s->s_conf->cc_servers[he->he_home];
	char dir[512], meta[512], yaml[512];
	struct eng_conf ec = {0};
	struct eng *e = NULL;
	FILE *f;
	int rc;

	if (snprintf(dir, sizeof dir, "%s/takeover-%s", s->s_me->cs_data_dir,
		     hs->cs_name) >= (int)sizeof dir ||
	    snprintf(meta, sizeof meta, "%s/shadow-s%u", s->s_me->cs_data_dir,
		     he->he_home) >= (int)sizeof meta ||
	    snprintf(yaml, sizeof yaml, "%s.store.yaml", dir) >=
		     (int)sizeof yaml)
		return err_set(-ENAMETOOLONG, "server %s: data_dir too long",
			       s->s_me->cs_name);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return err_set(-errno, "takeover of home %s: %s: %s",
			       hs->cs_name, dir, strerror(errno));
	f = fopen(yaml, "w");
	if (f == NULL)
		return err_set(-errno, "takeover of home %s: %s: %s",
			       hs->cs_name, yaml, strerror(errno));
	fputs(hs->cs_store_yaml != NULL ? hs->cs_store_yaml : "", f);
	if (fclose(f) != 0)
		return err_set(-EIO, "takeover of home %s: %s: write failed",
			       hs->cs_name, yaml);
	if (sh->sh_ops.so_release != NULL) {
		rc = sh->sh_ops.so_release(sh->sh_ops.so_arg, he->he_home);
		if (rc != 0)
			return err_set(rc, "takeover of home %s: its shadow "
				       "%s is held: %s", hs->cs_name, meta,
				       err_msg());
	} else {
		/* repl's standby side closes its handle and refuses the
		 * home's ships and snapshots until given back */
		rc = srv_repl_shadow_take(s, he->he_home, meta, sizeof meta);
		if (rc != 0)
			return err_set(rc, "takeover of home %s: its shadow: "
				       "%s", hs->cs_name, err_msg());
		/* before it serves: from a standby that holds more */
		rc = home_catch_up(sh, he->he_home, meta);
		if (rc != 0) {
			srv_repl_shadow_give(s, he->he_home);
			return rc;
		}
	}
	ec.ec_dir = dir;
	ec.ec_create = false;
	ec.ec_config = yaml;
	ec.ec_model = s->s_model;
	ec.ec_layout_ops = s->s_parts.sp_layout_ops;
	ec.ec_meta_dir = meta;
	ec.ec_dev_path = home_dev_path;
	ec.ec_dev_path_arg = he;
	rc = eng_open(&e, &ec);
	if (rc == 0 && s->s_repl != NULL) {
		/* its writes go to the home's other standbys, as the home's
		 * did, before it serves (core/server/srv_repl.h) */
		rc = srv_repl_engine_start(s, he->he_home, e, he->he_inc,
					   &he->he_repl);
		if (rc != 0) {
			eng_close(e);
			e = NULL;
		}
	}
	if (rc != 0) {
		rc = err_set(rc, "takeover of home %s: engine on shadow %s: %s",
			     hs->cs_name, meta, err_msg());
		if (sh->sh_ops.so_resume != NULL)
			sh->sh_ops.so_resume(sh->sh_ops.so_arg, he->he_home);
		else
			srv_repl_shadow_give(s, he->he_home);
		return rc;
	}
	pthread_mutex_lock(&sh->sh_lock);
	he->he_eng = e;
	he->he_closing = false;
	pthread_mutex_unlock(&sh->sh_lock);
	LOG_WARNING("server %s: acting for home %s from map epoch %" PRIu64
		    " (takeover incarnation %" PRIu64 "): its objects are "
		    "served here", s->s_me->cs_name, hs->cs_name, he->he_epoch,
		    he->he_inc);
	return 0;
}

/* Close the engine of home he: refuse, wait for its requests, close. */
static void home_close(struct srv_home *sh, struct home_eng *he,
		       const char *why)
{
	struct eng *e;

	pthread_mutex_lock(&sh->sh_lock);
	if (he->he_eng == NULL) {
		pthread_mutex_unlock(&sh->sh_lock);
		return;
	}
	he->he_closing = true;
	while (he->he_refs > 0)
		pthread_cond_wait(&sh->sh_cond, &sh->sh_lock);
	e = he->he_eng;
	he->he_eng = NULL;
	he->he_frozen = false;
	pthread_mutex_unlock(&sh->sh_lock);
	/* the hook first: what the close writes stays in the shadow, whose
	 * "served" mark has its next keeper re-sync it by snapshot */
	srv_repl_engine_stop(he->he_repl);
	he->he_repl = NULL;
	eng_close(e);
	if (sh->sh_ops.so_resume != NULL)
		sh->sh_ops.so_resume(sh->sh_ops.so_arg, he->he_home);
	else
		srv_repl_shadow_give(sh->sh_srv, he->he_home);
	LOG_WARNING("server %s: no longer acting for home %s (%s)",
		    sh->sh_srv->s_me->cs_name, name_of(sh, he->he_home), why);
}

/* ------------------------------------------------------------ the map */

int srv_home_create(struct srv *s, struct srv_home **out)
{
	struct srv_home *sh = calloc(1, sizeof *sh);

	if (sh == NULL)
		return err_set(-ENOMEM, "server %s: homes", s->s_me->cs_name);
	sh->sh_srv = s;
	pthread_mutex_init(&sh->sh_lock, NULL);
	pthread_cond_init(&sh->sh_cond, NULL);
	for (uint32_t i = 0; i < CLU_SERVERS_MAX; i++) {
		sh->sh_acting[i] = i;
		sh->sh_he[i].he_sh = sh;
		sh->sh_he[i].he_home = i;
	}
	s->s_route_arg = sh;
	s->s_route_put = home_put;
	s->s_route_acting = home_acting;
	s->s_route_each = home_each;
	s->s_route_going = home_going;
	s->s_route = home_route;
	*out = sh;
	return 0;
}

void srv_home_shadow_ops_set(struct srv_home *sh,
			     const struct srv_home_shadow_ops *ops)
{
	pthread_mutex_lock(&sh->sh_lock);
	if (ops != NULL)
		sh->sh_ops = *ops;
	else
		memset(&sh->sh_ops, 0, sizeof sh->sh_ops);
	pthread_mutex_unlock(&sh->sh_lock);
}

/* Does m list the cluster file's servers in its order (the home slots are
 * the file's indices, clu_home())? */
static bool map_matches(const struct srv_home *sh, const struct ha_map *m)
{
	const struct clu_conf *c = sh->sh_srv->s_conf;

	if (m->hm_nr_servers != c->cc_nr_servers)
		return false;
	for (uint32_t i = 0; i < c->cc_nr_servers; i++)
		if (strcmp(m->hm_servers[i].hs_name,
			   c->cc_servers[i].cs_name) != 0)
			return false;
	return true;
}

/* Home he, which this server serves, given to it again at a newer acting
 * epoch: a handback cancelled by the analyzer (rule home).  A frozen home
 * serves its updates again; the copy taken for the handback carries the
 * older epoch and can move the home back no more. */
static void home_rearm(struct srv_home *sh, struct home_eng *he,
		       uint64_t epoch)
{
	bool thawed;

	pthread_mutex_lock(&sh->sh_lock);
	if (epoch <= he->he_epoch || he->he_closing) {
		pthread_mutex_unlock(&sh->sh_lock);
		return;
	}
	he->he_epoch = epoch;
	thawed = he->he_frozen;
	he->he_frozen = false;
	pthread_mutex_unlock(&sh->sh_lock);
	if (thawed)
		LOG_WARNING("server %s: handback of home %s cancelled by the "
			    "map (acting epoch %" PRIu64 "): its updates are "
			    "served here again", sh->sh_srv->s_me->cs_name,
			    name_of(sh, he->he_home), epoch);
}

bool srv_home_sync(struct srv_home *sh, const struct ha_map *m)
{
	bool done = true;
	struct srv *s = sh->sh_srv;
	uint32_t self = s->s_self, n = s->s_conf->cc_nr_servers;
	bool on = m->hm_meta_replicas >= 2 && map_matches(sh, m);
	bool hold;
	int acting_self;

	if (m->hm_meta_replicas >= 2 && !map_matches(sh, m))
		LOG_WARNING("server %s: the cluster map's servers are not the "
			    "cluster file's: homes are not taken over",
			    s->s_me->cs_name);
	acting_self = on ? ha_home_acting(m, self) : -1;
	hold = acting_self >= 0 && (uint32_t)acting_self != self;
	/* the own slice taken back before the own engine serves again: the
	 * acting server's writes admitted there are on the device first */
	if (!hold && sh->sh_held)
		srv_rdev_own_lend(s, false);
	pthread_mutex_lock(&sh->sh_lock);
	sh->sh_on = on;
	sh->sh_epoch = m->hm_epoch;
	for (uint32_t h = 0; h < n; h++) {
		int a = on ? ha_home_acting(m, h) : (int)h;
		sh->sh_acting[h] = a < 0 ? h : (uint32_t)a;
		/* replication's view: ships it sends for h carry it, ships it
		 * receives for h must come from the acting server */
		srv_repl_view_set(s, h, sh->sh_acting[h], m->hm_epoch,
				  sh->sh_acting[h] == h ? 0 :
				  m->hm_servers[h].hs_acting_inc);
		/* a move away closes at once for new requests */
		if (sh->sh_acting[h] != self && sh->sh_he[h].he_eng != NULL)
			sh->sh_he[h].he_closing = true;
	}
	pthread_mutex_unlock(&sh->sh_lock);

	for (uint32_t h = 0; h < n; h++) {
		struct home_eng *he = &sh->sh_he[h];

		if (h == self)
			continue;
		if (sh->sh_acting[h] != self) {
			home_close(sh, he, "the map moved it");
			continue;
		}
		if (he->he_eng != NULL) {
			home_rearm(sh, he, m->hm_servers[h].hs_acting_epoch);
			continue;
		}
		he->he_inc = m->hm_servers[h].hs_acting_inc;
		he->he_epoch = m->hm_servers[h].hs_acting_epoch;
		if (home_open(sh, he) != 0) {
			LOG_WARNING("server %s: %s (tried again at the next "
				    "map step)", s->s_me->cs_name, err_msg());
			done = false;
		}
	}

	if (hold != sh->sh_held) {
		rdev_home_hold(hold);
		/* its image of the home's units is the acting server's to
		 * write now (srv_rdev.c) */
		if (hold)
			srv_rdev_own_lend(s, true);
		LOG_WARNING("server %s: its home is %s", s->s_me->cs_name,
			    hold ? "served by another server: it serves none "
			    "of its objects and writes no unit as its home" :
			    "its own again");
		sh->sh_held = hold;
	}
	/* writes as its home exceed every takeover's */
	if (on && m->hm_servers[self].hs_acting_inc != 0)
		rdev_epoch_raise(m->hm_servers[self].hs_acting_inc);
	return done;
}

uint64_t srv_home_acting_mask(struct srv_home *sh)
{
	uint64_t mask = 0;

	pthread_mutex_lock(&sh->sh_lock);
	for (uint32_t h = 0; h < CLU_SERVERS_MAX && h < 64; h++)
		if (sh->sh_he[h].he_eng != NULL && !sh->sh_he[h].he_closing)
			mask |= 1ull << h;
	pthread_mutex_unlock(&sh->sh_lock);
	return mask;
}

void srv_home_destroy(struct srv_home *sh)
{
	if (sh == NULL)
		return;
	/* every engine closed; the hook stays (handler threads may still
	 * call it until the endpoint stops): a home acted for answers
	 * -EBUSY meanwhile, and sh is not freed (as the agent itself) */
	for (uint32_t h = 0; h < CLU_SERVERS_MAX; h++)
		home_close(sh, &sh->sh_he[h], "server stopping");
}

/* ------------------------------------------------------------ handover */

/* The file DATA_DIR/PRE<h>SUF of home h on this server: its engine's
 * snapshot ("takeover-s", ".snap"), the copy of its shadow for a
 * catch-up ("shadow-s", ".copy"). */
static int home_path(const struct srv_home *sh, uint32_t h, const char *pre,
		     const char *suf, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s%u%s",
			 sh->sh_srv->s_me->cs_data_dir, pre, h, suf);

	if (n < 0 || (size_t)n >= size)
		return err_set(-ENAMETOOLONG, "server %s: data_dir too long",
			       sh->sh_srv->s_me->cs_name);
	return 0;
}

int srv_home_snap(struct srv_home *sh, uint32_t h, uint64_t *size,
		  uint64_t *seq, uint64_t *epoch, bool *newly)
{
	struct srv *s = sh->sh_srv;
	struct home_eng *he;
	char path[600];
	struct stat st;
	struct eng *e;
	int rc;

	if (h >= s->s_conf->cc_nr_servers || h == s->s_self)
		return err_set(-EINVAL, "home handback: home %u", h);
	rc = home_path(sh, h, "takeover-s", ".snap", path, sizeof path);
	if (rc != 0)
		return rc;
	he = &sh->sh_he[h];
	pthread_mutex_lock(&sh->sh_lock);
	if (sh->sh_acting[h] != s->s_self || he->he_eng == NULL ||
	    he->he_closing) {
		pthread_mutex_unlock(&sh->sh_lock);
		return err_set(-EREMCHG, "server %s does not act for home %s",
			       s->s_me->cs_name, name_of(sh, h));
	}
	*newly = !he->he_frozen;
	*epoch = he->he_epoch;
	he->he_frozen = true;
	while (he->he_refs > 0)
		pthread_cond_wait(&sh->sh_cond, &sh->sh_lock);
	e = he->he_eng;
	he->he_refs++; /* kept open while the snapshot is taken */
	pthread_mutex_unlock(&sh->sh_lock);
	rc = eng_snapshot(e, path, seq);
	if (rc == 0 && stat(path, &st) != 0)
		rc = err_set(-errno, "%s: %s", path, strerror(errno));
	home_put(sh, he);
	if (rc != 0)
		return err_set(rc, "home handback of %s: snapshot: %s",
			       name_of(sh, h), err_msg());
	*size = (uint64_t)st.st_size;
	LOG_WARNING("server %s: handing home %s back: its updates are "
		    "refused (-EBUSY) until the map moves it; snapshot of %"
		    PRIu64 " bytes at write set %" PRIu64, s->s_me->cs_name,
		    name_of(sh, h), *size, *seq);
	return 0;
}

/* len bytes at off of home h's file PRE<h>SUF (home_path()) into buf
 * (*got: 0 past its end). */
static int home_file_chunk(struct srv_home *sh, uint32_t h, const char *pre,
			   const char *suf, const char *what, uint64_t off,
			   void *buf, size_t len, size_t *got)
{
	char path[600];
	ssize_t n;
	int fd, rc;

	*got = 0;
	if (h >= sh->sh_srv->s_conf->cc_nr_servers)
		return err_set(-EINVAL, "%s: home %u", what, h);
	rc = home_path(sh, h, pre, suf, path, sizeof path);
	if (rc != 0)
		return rc;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return err_set(-errno, "%s: %s: %s", what, path,
			       strerror(errno));
	n = pread(fd, buf, len, (off_t)off);
	rc = n < 0 ? err_set(-errno, "%s: %s: %s", what, path,
			     strerror(errno)) : 0;
	close(fd);
	*got = n > 0 ? (size_t)n : 0;
	return rc;
}

int srv_home_chunk(struct srv_home *sh, uint32_t h, uint64_t off,
		   void *buf, size_t len, size_t *got)
{
	return home_file_chunk(sh, h, "takeover-s", ".snap", "home handback",
			       off, buf, len, got);
}

/* -------------------------------------------- standbys in sync, in etcd */

/* The etcd key of home h's record of its standbys in sync. */
static const char *insync_key(const struct srv_home *sh, uint32_t h,
			      char *buf, size_t size)
{
	char kind[96];

	snprintf(kind, sizeof kind, "insync/%s", name_of(sh, h));
	return ha_key(buf, size, sh->sh_srv->s_conf->cc_name, kind);
}

/* srv_repl_insync_fn: record home h's standbys in sync (ha/srv_home.h). */
static int home_insync_put(void *arg, uint32_t h, uint64_t seq,
			   const uint32_t *in, uint32_t n)
{
	struct srv_home *sh = arg;
	struct srv *s = sh->sh_srv;
	struct srv_ha *a = s->s_ha;
	struct json_object *o, *arr;
	char key[300], names[200] = "";
	const char *txt;
	size_t at = 0;
	int rc;

	if (a == NULL || a->ha_etcd == NULL)
		return 1; /* no client (cannot happen once registered) */
	o = json_object_new_object();
	arr = json_object_new_array();
	if (o == NULL || arr == NULL) {
		json_object_put(o);
		json_object_put(arr);
		return err_set(-ENOMEM, "standbys in sync");
	}
	json_object_object_add(o, "acting",
			       json_object_new_string(s->s_me->cs_name));
	json_object_object_add(o, "seq", json_object_new_uint64(seq));
	for (uint32_t i = 0; i < n; i++) {
		json_object_array_add(arr,
				      json_object_new_string(name_of(sh, in[i])));
		at += (size_t)snprintf(names + at, at < sizeof names ?
				       sizeof names - at : 0, "%s%s",
				       i ? ", " : "", name_of(sh, in[i]));
	}
	json_object_object_add(o, "insync", arr);
	txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	rc = etcd_put(a->ha_etcd, insync_key(sh, h, key, sizeof key), txt,
		      strlen(txt), 0, NULL);
	json_object_put(o);
	if (rc != 0)
		return err_set(rc, "etcd (%s): %s", etcd_endpoint(a->ha_etcd),
			       err_msg());
	LOG_WARNING("server %s: home %s's standbys in sync from write set %"
		    PRIu64 ": %s (recorded)", s->s_me->cs_name,
		    name_of(sh, h), seq, n > 0 ? names : "none");
	/* the analyzer's word of it (HOME_INSYNC): where to move the home
	 * first if this server dies.  Its preference only (the record
	 * above is what a takeover's catch-up trusts): not reported, the
	 * write goes on */
	{
		struct ha_event ev;

		memset(&ev, 0, sizeof ev);
		ev.he_kind = HA_EV_HOME_INSYNC;
		snprintf(ev.he_target, sizeof ev.he_target, "%s",
			 name_of(sh, h));
		for (uint32_t i = 0; i < n; i++)
			if (in[i] < 64)
				ev.he_insync |= 1ull << in[i];
		/* test builds: the event lost (etcd unreachable right
		 * then), so that the analyzer moves the home without it and
		 * the catch-up makes up for its choice (ha_catchup_test) */
		if (FAULT_HIT("srv.home.insync.noreport"))
			LOG_WARNING("server %s: event HOME_INSYNC about home "
				    "%s not reported: fault point "
				    "srv.home.insync.noreport",
				    s->s_me->cs_name, name_of(sh, h));
		else if (ha_report(a, &ev) != 0)
			LOG_WARNING("server %s: event HOME_INSYNC about home "
				    "%s not reported: %s", s->s_me->cs_name,
				    name_of(sh, h), err_msg());
	}
	return 0;
}

void srv_home_insync_start(struct srv_home *sh)
{
	srv_repl_insync_hook(sh->sh_srv, home_insync_put, sh);
}

/* Home h's record (home_insync_put()): 0 with *acting (its writer), *seq
 * and in[] (a standby in sync), -ENOENT when there is none, or an error
 * (etcd, a record that does not parse). */
static int insync_get(struct srv_home *sh, uint32_t h, char *acting,
		      size_t alen, uint64_t *seq, bool *in)
{
	struct srv_ha *a = sh->sh_srv->s_ha;
	struct json_object *o = NULL, *v, *arr;
	struct etcd_kv kv = {0};
	char key[300];
	int rc;

	memset(in, 0, CLU_SERVERS_MAX * sizeof *in);
	if (a == NULL || a->ha_etcd == NULL)
		return -ENOENT;
	rc = etcd_get(a->ha_etcd, insync_key(sh, h, key, sizeof key), &kv,
		      NULL);
	if (rc != 0)
		return rc;
	o = json_tokener_parse(kv.ek_value);
	etcd_kv_fini(&kv);
	if (o == NULL || !json_object_object_get_ex(o, "acting", &v) ||
	    !json_object_object_get_ex(o, "insync", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		json_object_put(o);
		return err_set(-EINVAL, "etcd key %s: not a record of standbys "
			       "in sync", key);
	}
	snprintf(acting, alen, "%s", json_object_get_string(v));
	*seq = json_object_object_get_ex(o, "seq", &v) ?
	       json_object_get_uint64(v) : 0;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		const char *nm = json_object_get_string(
			json_object_array_get_idx(arr, i));
		int j = nm != NULL ? clu_server_find(sh->sh_srv->s_conf, nm) :
			-1;

		if (j >= 0)
			in[j] = true;
	}
	json_object_put(o);
	return 0;
}

/* ------------------------------------------------- takeover catch-up */

int srv_home_shadow_copy(struct srv_home *sh, uint32_t h, uint64_t above,
			 uint64_t *size, uint64_t *seq)
{
	struct srv *s = sh->sh_srv;
	char path[600];
	struct stat st;
	bool made = false;
	int rc;

	*size = 0;
	*seq = 0;
	if (h >= s->s_conf->cc_nr_servers || h == s->s_self)
		return err_set(-EINVAL, "takeover catch-up: home %u", h);
	rc = home_path(sh, h, "shadow-s", ".copy", path, sizeof path);
	/* test builds: a standby that cannot be asked for a while */
	if (rc == 0 && FAULT_HIT("srv.home.copy.refuse"))
		rc = err_set(-EIO, "server %s: fault point "
			     "srv.home.copy.refuse", s->s_me->cs_name);
	if (rc == 0)
		rc = srv_repl_shadow_copy(s, h, above, path, seq, &made);
	if (rc != 0 || !made)
		return rc;
	if (stat(path, &st) != 0)
		return err_set(-errno, "%s: %s", path, strerror(errno));
	*size = (uint64_t)st.st_size;
	LOG_WARNING("server %s: copy of its shadow of home %s at write set %"
		    PRIu64 " made for a takeover's catch-up (%" PRIu64
		    " bytes)", s->s_me->cs_name, name_of(sh, h), *seq, *size);
	return 0;
}

int srv_home_shadow_chunk(struct srv_home *sh, uint32_t h, uint64_t off,
			  void *buf, size_t len, size_t *got)
{
	return home_file_chunk(sh, h, "shadow-s", ".copy",
			       "takeover catch-up", off, buf, len, got);
}

static bool home_installed, home_gave_up;
static uint64_t home_installed_ep;

bool srv_home_installed(void)
{
	return home_installed;
}

uint64_t srv_home_installed_epoch(void)
{
	return home_installed_ep;
}

bool srv_home_gave_up(void)
{
	return home_gave_up;
}

/* One HA call to server a of the peers p: the reply (the caller frees). */
static int hb_call(struct peers *p, uint32_t a, uint32_t kind, uint32_t h,
		   uint64_t from, Reply **rp)
{
	HaReq q = HA_REQ__INIT;
	struct msg_buf b = {0};
	struct rpc_result res;
	int rc;

	q.kind = kind;
	q.limit = h;
	q.from = from;
	rc = msg_pack(&q.base, &b);
	if (rc != 0)
		return rc;
	rc = peers_call(p, a, HA_OP, b.mb_p, b.mb_len, NULL, &res);
	free(b.mb_p);
	if (rc == 0)
		rc = msg_reply_decode(res.rr_body, res.rr_len, 0, rp);
	free(res.rr_body);
	return rc;
}

/* Ask server a for a copy (snap_kind, HaReq limit h and from) and copy
 * it in chunks (chunk_kind) into file: 0 with *seq, *epoch (Reply.term)
 * and *size (0: a made no copy, no file written), or an error (no file
 * left). */
static int hb_pull(struct peers *p, uint32_t a, uint32_t snap_kind,
		   uint32_t chunk_kind, uint32_t h, uint64_t from,
		   const char *file, uint64_t *seq, uint64_t *epoch,
		   uint64_t *size)
{
	Reply *rp = NULL;
	uint64_t off = 0;
	int fd, rc = hb_call(p, a, snap_kind, h, from, &rp);

	if (rc != 0)
		return rc;
	*size = rp->bytes;
	*seq = rp->seq;
	*epoch = rp->term;
	reply__free_unpacked(rp, NULL);
	if (*size == 0)
		return 0;
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return err_set(-errno, "%s: %s", file, strerror(errno));
	while (rc == 0 && off < *size) {
		rp = NULL;
		rc = hb_call(p, a, chunk_kind, h, off, &rp);
		if (rc == 0 && rp->text.len == 0)
			rc = err_set(-EIO, "copy: empty chunk at %" PRIu64
				     " of %" PRIu64, off, *size);
		if (rc == 0 && pwrite(fd, rp->text.data, rp->text.len,
				      (off_t)off) != (ssize_t)rp->text.len)
			rc = err_set(-EIO, "%s: write failed", file);
		if (rc == 0)
			off += rp->text.len;
		if (rp != NULL)
			reply__free_unpacked(rp, NULL);
	}
	if (rc == 0 && fsync(fd) != 0)
		rc = err_set(-errno, "%s: fsync: %s", file, strerror(errno));
	close(fd);
	if (rc != 0)
		unlink(file);
	return rc;
}

/* Copy the acting server a's snapshot of this server's home into file. */
static int hb_fetch(struct srv *s, struct peers *p, uint32_t a,
		    const char *file, uint64_t *seq, uint64_t *epoch)
{
	uint64_t size = 0;
	int rc = hb_pull(p, a, HAK_HOME_SNAP, HAK_HOME_CHUNK, s->s_self, 0,
			 file, seq, epoch, &size);

	if (rc == 0 && size == 0)
		rc = err_set(-EIO, "home snapshot: empty");
	return rc;
}

/*
 * The catch-up of a takeover of home h, before it serves (home_open(),
 * this server's shadow of h taken, closed, in meta): the home's other
 * standbys are asked for their shadows' write sets; when one is ahead of
 * this server's (the home acknowledged sets with it while this server,
 * dropped as a standby, missed them), its copy is installed here.  A
 * standby that does not answer is passed over (logged: sets only it
 * holds, if any, are not caught up); one that is ahead but whose copy
 * fails fails the takeover, tried again at the next map step.
 */
static int home_catch_up(struct srv_home *sh, uint32_t h, const char *meta)
{
	struct srv *s = sh->sh_srv;
	uint32_t sb[CLU_SERVERS_MAX];
	uint64_t mine = 0, best, seq = 0, ep = 0, size = 0, rec_seq = 0;
	char file[600], rec_by[64] = "", wanted[200] = "";
	bool rec_in[CLU_SERVERS_MAX], must, heard = false;
	size_t at = 0;
	int n, from = -1, rc;

	n = srv_repl_standbys_known(s, h, sb);
	if (n <= 0 || s->s_peers == NULL)
		return 0;
	if (eng_repl_seq_read(meta, &mine) != 0)
		mine = 0;
	best = mine;
	/* the home's record of its standbys in sync: this server not in it
	 * may miss acknowledged sets, which one of them holds */
	rc = insync_get(sh, h, rec_by, sizeof rec_by, &rec_seq, rec_in);
	if (rc != 0 && rc != -ENOENT)
		return err_set(rc, "takeover of home %s: its standbys in "
			       "sync: %s", name_of(sh, h), err_msg());
	must = rc == 0 && strcmp(rec_by, s->s_me->cs_name) != 0 &&
	       !rec_in[s->s_self];
	for (int k = 0; k < n; k++) {
		Reply *rp = NULL;

		if (sb[k] == s->s_self)
			continue;
		rc = hb_call(s->s_peers, sb[k], HAK_SHADOW_COPY, h, UINT64_MAX,
			     &rp);
		if (rc != 0) {
			LOG_WARNING("server %s: takeover of home %s: standby "
				    "%s not asked for its copy (%s): write "
				    "sets only it holds, if any, are not "
				    "caught up", s->s_me->cs_name,
				    name_of(sh, h), name_of(sh, sb[k]),
				    err_msg());
			continue;
		}
		if (rp->seq > best) {
			best = rp->seq;
			from = (int)sb[k];
		}
		heard |= rec_in[sb[k]];
		reply__free_unpacked(rp, NULL);
	}
	if (must && !heard) {
		for (int k = 0; k < n; k++)
			if (rec_in[sb[k]])
				at += (size_t)snprintf(wanted + at, at <
					sizeof wanted ? sizeof wanted - at : 0,
					"%s%s", at ? ", " : "",
					name_of(sh, sb[k]));
		return err_set(-EAGAIN, "takeover of home %s: this server's "
			       "copy (write set %" PRIu64 ") may miss write "
			       "sets %s acknowledged: it was not among the "
			       "standbys in sync from write set %" PRIu64
			       "; waiting for one of them (%s)", name_of(sh, h),
			       mine, rec_by, rec_seq, wanted[0] ? wanted :
			       "none left");
	}
	if (from < 0)
		return 0;
	if (snprintf(file, sizeof file, "%s/shadow-s%u.catchup",
		     s->s_me->cs_data_dir, h) >= (int)sizeof file)
		return err_set(-ENAMETOOLONG, "server %s: data_dir too long",
			       s->s_me->cs_name);
	rc = hb_pull(s->s_peers, (uint32_t)from, HAK_SHADOW_COPY,
		     HAK_SHADOW_CHUNK, h, mine, file, &seq, &ep, &size);
	if (rc == 0 && size == 0)
		rc = err_set(-ESTALE, "its copy is no longer ahead");
	if (rc == 0)
		rc = eng_shadow_install(meta, file, &seq);
	if (rc != 0)
		return err_set(rc, "takeover of home %s: standby %s's copy is "
			       "ahead (write set %" PRIu64 ", this one's %"
			       PRIu64 ") but was not copied: %s",
			       name_of(sh, h), name_of(sh, (uint32_t)from),
			       best, mine, err_msg());
	LOG_WARNING("server %s: takeover of home %s: caught up from standby "
		    "%s's copy (write set %" PRIu64 "; its own was at %" PRIu64
		    ")", s->s_me->cs_name, name_of(sh, h),
		    name_of(sh, (uint32_t)from), seq, mine);
	return 0;
}

/* The server the map in etcd has acting for this server's home: its
 * index, or this server's own (nothing to hand back: not replicated, no
 * map, or the home is here); -ENOMEM. */
static int pre_open_acting(struct srv *s)
{
	const struct clu_conf *c = s->s_conf;
	const char *eps[CLU_ETCD_MAX];
	struct etcd *e = NULL;
	struct ha_map *m;
	int64_t rev;
	int a, rc;

	m = malloc(sizeof *m);
	if (m == NULL)
		return err_set(-ENOMEM, "server %s: map", s->s_me->cs_name);
	for (uint32_t i = 0; i < c->cc_nr_etcd; i++)
		eps[i] = c->cc_etcd[i];
	rc = etcd_create(&e, eps, c->cc_nr_etcd, 2000);
	if (rc == 0)
		rc = ha_map_load(e, c->cc_name, m, &rev);
	etcd_destroy(e);
	/* no map (a first start) or none readable: its own copy, as the
	 * map's absence says nothing was taken over */
	a = rc == 0 && m->hm_meta_replicas >= 2 &&
	    m->hm_nr_servers == c->cc_nr_servers ?
	    ha_home_acting(m, s->s_self) : (int)s->s_self;
	free(m);
	return a < 0 ? (int)s->s_self : a;
}

int srv_home_pre_open(struct srv *s)
{
	const struct clu_conf *c = s->s_conf;
	uint64_t end = ha_mono_ms() + HA_HANDBACK_WAIT_MS, seq = 0, ep = 0;
	char file[600], meta[600], why[300] = "";
	struct peers *p = NULL;
	bool said = false;
	int a, rc;

	if (c->cc_nr_etcd == 0)
		return 0;
	if (snprintf(file, sizeof file, "%s/meta.handback",
		     s->s_me->cs_data_dir) >= (int)sizeof file ||
	    snprintf(meta, sizeof meta, "%s/meta", s->s_me->cs_data_dir) >=
	    (int)sizeof meta)
		return err_set(-ENAMETOOLONG, "server %s: data_dir too long",
			       s->s_me->cs_name);
	/*
	 * Tried again until HA_HANDBACK_WAIT_MS: the acting server may be
	 * starting too (all servers restarted: it acts for the home again
	 * only once its agent has read the map) or may be unreachable for a
	 * moment; the map is read again each time (the home may have moved).
	 * A start without the handback serves none of its home until it
	 * runs again from its start (srv_ha.c home_restart_check()).
	 */
	for (;;) {
		a = pre_open_acting(s);
		if (a < 0)
			return a;
		if ((uint32_t)a == s->s_self)
			return 0;
		rc = peers_create(&p, c, NULL);
		if (rc == 0) {
			peers_set_server(p);
			rc = hb_fetch(s, p, (uint32_t)a, file, &seq, &ep);
		}
		peers_destroy(p);
		p = NULL;
		if (rc == 0)
			rc = eng_shadow_install(meta, file, &seq);
		if (rc == 0)
			break;
		snprintf(why, sizeof why, "served by %s: %s",
			 c->cc_servers[a].cs_name, err_msg());
		/* refused by the acting server's map (this server lost for
		 * good or kept out: srv_ha.c handback_refused(), a code of
		 * its own): no wait */
		if (rc == -ENOTRECOVERABLE || ha_mono_ms() >= end) {
			/* it starts with its own copy, serving none of its
			 * home */
			char within[32] = "";

			if (rc != -ENOTRECOVERABLE)
				snprintf(within, sizeof within, " within %u s",
					 HA_HANDBACK_WAIT_MS / 1000);
			LOG_WARNING("server %s: handback of its home not made"
				    "%s (its home is %s): it serves none of its "
				    "home until it runs again from its start",
				    s->s_me->cs_name, within, why);
			home_gave_up = true;
			return 0;
		}
		if (!said)
			LOG_WARNING("server %s: its home is %s; waiting up "
				    "to %u s for its handback", s->s_me->cs_name,
				    why, HA_HANDBACK_WAIT_MS / 1000);
		said = true;
		usleep(HA_HANDBACK_RETRY_MS * 1000);
	}
	home_installed = true;
	home_installed_ep = ep;
	LOG_WARNING("server %s: its home's metadata handed back by %s "
		    "(write set %" PRIu64 ", acting epoch %" PRIu64 "): "
		    "installed in %s", s->s_me->cs_name,
		    c->cc_servers[a].cs_name, seq, ep, meta);
	/* test builds: a home that dies right after its copy (its acting
	 * server stays frozen for it until the analyzer cancels that
	 * handback: ha_home_test.sh) */
	if (FAULT_HIT("srv.home.installed.die"))
		raise(SIGKILL);
	return 0;
}
