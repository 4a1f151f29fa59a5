/*
 * analyzer.c — the event analyzer (ha/analyzer.h): views of each target
 * derived from the history, rules comparing them with the map, the map
 * apply, and the replay driver.
 *
 * One call works in three steps: walk the history once per target into a
 * view (what the events say of it now); then, in map order, let each
 * server and then its devices take decisions on a working copy of the map
 * (each applied before the next is considered, so rules see each other's
 * effects); collect the deadlines of the rules that wait.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "ha/analyzer.h"
#include "ha/map.h"

/* Rounds of one target's rules in one call: a target moves through at
 * most FAILED -> OUT -> REPAIRING (or ALERT, FAILED) in one call. */
#define STEPS_PER_TARGET 8
/* Slots of the per-call table of server names (open addressing, at most
 * half full: HA_SERVERS_MAX servers). */
#define NAMES_SLOTS (2 * HA_SERVERS_MAX)
_Static_assert(HA_SERVERS_MAX < 255, "server index + 1 fits in uint8_t");

void ha_rules_init_defaults(struct ha_rules *r)
{
	*r = (struct ha_rules){
		.hr_quiet_ms = 10000,
		.hr_merge_max_ms = 60000,
		.hr_min_reporters = 2,
		.hr_report_ttl_ms = 120000,
		.hr_ioerr_count = 3,
		.hr_ioerr_window_ms = 60000,
		.hr_flap_count = 5,
		.hr_flap_period_ms = 600000,
		.hr_down_out_ms = 600000,
		.hr_encl_min = 2,
		.hr_transient_max_ms = 3600000,
		.hr_restart_grace_ms = 120000,
	};
}

void ha_rules_init_test(struct ha_rules *r)
{
	*r = (struct ha_rules){
		.hr_quiet_ms = 1000,
		.hr_merge_max_ms = 5000,
		.hr_min_reporters = 2,
		.hr_report_ttl_ms = 10000,
		.hr_ioerr_count = 3,
		.hr_ioerr_window_ms = 10000,
		.hr_flap_count = 5,
		.hr_flap_period_ms = 60000,
		.hr_down_out_ms = 5000,
		.hr_encl_min = 2,
		.hr_transient_max_ms = 30000,
		.hr_restart_grace_ms = 30000,
	};
}

int ha_rules_check(const struct ha_rules *r)
{
	static const struct {
		const char *name;
		size_t off;
		bool wide;
	} f[] = {
#define F64(x) { #x, offsetof(struct ha_rules, x), true }
#define F32(x) { #x, offsetof(struct ha_rules, x), false }
		F64(hr_quiet_ms), F64(hr_merge_max_ms), F32(hr_min_reporters),
		F64(hr_report_ttl_ms), F32(hr_ioerr_count),
		F64(hr_ioerr_window_ms), F32(hr_flap_count),
		F64(hr_flap_period_ms), F64(hr_down_out_ms), F32(hr_encl_min),
		F64(hr_transient_max_ms), F64(hr_restart_grace_ms),
#undef F64
#undef F32
	};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		const char *p = (const char *)r + f[i].off;
		uint64_t v = f[i].wide ? *(const uint64_t *)p
				       : *(const uint32_t *)p;
		if (v == 0)
			return err_set(-EINVAL, "ha rules: %s must be > 0",
				       f[i].name);
	}
	if (r->hr_report_ttl_ms <= r->hr_merge_max_ms)
		return err_set(-EINVAL, "ha rules: hr_report_ttl_ms (%llu) must "
			       "exceed hr_merge_max_ms (%llu): a reporter "
			       "quorum must outlive the longest merge",
			       (unsigned long long)r->hr_report_ttl_ms,
			       (unsigned long long)r->hr_merge_max_ms);
	if (r->hr_quiet_ms > r->hr_merge_max_ms)
		return err_set(-EINVAL, "ha rules: hr_quiet_ms (%llu) must not "
			       "exceed hr_merge_max_ms (%llu)",
			       (unsigned long long)r->hr_quiet_ms,
			       (unsigned long long)r->hr_merge_max_ms);
	return 0;
}

/* ------------------------------------------------------------ views */

/* What a target's history says of it.  up and down exclude each other. */
enum view_class { VC_NONE = 0, VC_UP, VC_DOWN };

struct report {
	const char *rp_name;
	const char *rp_encl;
	uint64_t rp_ms;
};

/* A server's view. */
struct sview {
	bool sv_any;            /* non-job events */
	uint64_t sv_last_ms;    /* newest non-job event */
	uint64_t sv_burst_ms;   /* first event of the last burst */
	bool sv_last_op;        /* the newest non-job event is an operator's */
	bool sv_proof;          /* exit, lease expiry or OP_FAIL */
	bool sv_proof_op;
	uint64_t sv_proof_ms;
	enum view_class sv_last; /* the last state-bearing event */
	bool sv_up_op;          /* ... and it is an OP_ADD */
	uint32_t sv_nr_rep;
	struct report sv_rep[HA_SERVERS_MAX];
	bool sv_drained;
	uint64_t sv_add_ms;     /* newest OP_ADD, 0 */
	bool sv_ep_down;        /* episode walk */
	uint64_t sv_ep_inc;
	uint32_t sv_episodes;   /* in the flap period before now */
	uint64_t sv_ep_last_ms;
	bool sv_stopped;        /* its run ended by its own clean stop */
	uint64_t sv_stop_ms;    /* its newest clean stop (SRV_STOPPED), 0 */
	uint64_t sv_rejoin_ms;  /* its first SRV_JOINED after it, 0 */
	enum ha_ev_kind sv_job; /* HA_EV_KIND_NR: none */
	uint64_t sv_job_ms, sv_job_id;
	/* at now */
	bool sv_down;
	uint64_t sv_down_ms;
	bool sv_up;
};

/* A device's view. */
struct dview {
	bool dv_any;
	uint64_t dv_last_ms, dv_burst_ms;
	bool dv_last_op;
	bool dv_down;
	bool dv_down_op;
	bool dv_ioerr;          /* down by the I/O error count */
	uint64_t dv_down_ms;
	bool dv_replaced;       /* the newest word is OP_REPLACE */
	uint64_t dv_errs_from;  /* errors before this are forgotten */
	uint32_t dv_last_err;   /* index + 1 of its newest DEV_IOERR, 0 */
	enum ha_ev_kind dv_job;
	uint64_t dv_job_ms, dv_job_id;
};

struct ctx {
	const struct ha_rules *r;
	const struct ha_event *ev;
	uint32_t nr_ev;
	uint64_t now;
	struct ha_map *w;       /* working copy */
	struct sview *sv;       /* [hm_nr_servers] */
	struct dview *dv;       /* [hm_nr_servers * HA_DEVS_MAX] */
	uint32_t *prev_err;     /* [nr_ev]: a DEV_IOERR's previous one's
				 * index + 1 (same device), 0 */
	uint8_t names[NAMES_SLOTS]; /* server index + 1 by name hash, 0 */
	uint64_t thaw_ms;       /* newest OP_THAW, 0 */
	struct hview *hv;       /* [hm_nr_servers]: its home's handback */
	uint64_t deadline;      /* earliest wait, UINT64_MAX */
	struct ha_decision *out;
	uint32_t max_out, nr_out;
	bool full;              /* a decision did not fit */
	bool dry;               /* count decisions, keep none */
	uint64_t job_arg;       /* take(): the job of a JOB_PAUSE/ABORT */
};

/* What the history says of home h's handback (rule home). */
struct hview {
	uint64_t ready_ms;      /* newest HOME_READY of h's current run, 0 */
	uint64_t ready_ep;      /* its he_epoch (0: unknown) */
	uint64_t frozen_ms;     /* newest HOME_FROZEN of h, 0 */
	uint64_t frozen_ep;     /* its he_epoch */
	int frozen_by;          /* its reporter's index, -1 */
	uint64_t insync_ms;     /* newest HOME_INSYNC of h from the server
				 * serving it, since it serves it; 0 none */
	uint64_t insync;        /* its he_insync */
};

static bool is_op(enum ha_ev_kind k)
{
	return k >= HA_EV_OP_FAIL && k <= HA_EV_OP_THAW;
}

static bool is_job(enum ha_ev_kind k)
{
	return k == HA_EV_JOB_DONE || k == HA_EV_JOB_FAILED;
}

static int srv_find(const struct ha_map *m, const char *name)
{
	for (uint32_t i = 0; i < m->hm_nr_servers; i++)
		if (strcmp(m->hm_servers[i].hs_name, name) == 0)
			return (int)i;
	return -1;
}

static int dev_find(const struct ha_srv *s, const char *name)
{
	for (uint32_t i = 0; i < s->hs_nr_devs; i++)
		if (strcmp(s->hs_devs[i].hd_name, name) == 0)
			return (int)i;
	return -1;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

/* Fill the name table of the working map's servers. */
static void names_build(struct ctx *c)
{
	memset(c->names, 0, sizeof c->names);
	for (uint32_t i = 0; i < c->w->hm_nr_servers; i++) {
		uint32_t h = name_hash(c->w->hm_servers[i].hs_name);
		while (c->names[h % NAMES_SLOTS] != 0)
			h++;
		c->names[h % NAMES_SLOTS] = (uint8_t)(i + 1);
	}
}

/* The index of server name in the working map, or -1 (srv_find by the
 * table: one call looks up every event's target and reporter). */
static int srv_lookup(const struct ctx *c, const char *name)
{
	for (uint32_t h = name_hash(name);; h++) {
		uint8_t k = c->names[h % NAMES_SLOTS];
		if (k == 0)
			return -1;
		if (strcmp(c->w->hm_servers[k - 1].hs_name, name) == 0)
			return k - 1;
	}
}

/* A server's failure domain: its enclosure, or its own name. */
static const char *srv_encl(const struct ha_srv *s)
{
	return s->hs_enclosure[0] ? s->hs_enclosure : s->hs_name;
}

/* The enclosure of a reporter: the map's, or the reporter's own name. */
static const char *rep_encl(const struct ctx *c, const char *name)
{
	int i = srv_lookup(c, name);

	return i >= 0 ? srv_encl(&c->w->hm_servers[i]) : name;
}

/* Count a non-job event of a target into its merge burst. */
static void burst_note(uint64_t t, uint64_t quiet, bool *any, uint64_t *last,
		       uint64_t *burst, bool *last_op, bool op)
{
	if (!*any || t >= *last + quiet)
		*burst = t;
	*any = true;
	if (t > *last)
		*last = t;
	*last_op = op;
}

/* The time the reports of v reached hr_min_reporters enclosures, looking
 * at reports in (at - ttl, at]; 0 when they do not. */
static uint64_t quorum_ms(const struct ctx *c, const struct sview *v,
			  uint64_t at)
{
	const struct report *in[HA_SERVERS_MAX];
	uint32_t n = 0, encl = 0;

	for (uint32_t i = 0; i < v->sv_nr_rep; i++) {
		const struct report *p = &v->sv_rep[i];
		if (p->rp_ms <= at && p->rp_ms + c->r->hr_report_ttl_ms > at)
			in[n++] = p;
	}
	/* oldest first (insertion sort; ties by name: deterministic) */
	for (uint32_t i = 1; i < n; i++)
		for (uint32_t j = i; j > 0 && (in[j]->rp_ms < in[j - 1]->rp_ms ||
		     (in[j]->rp_ms == in[j - 1]->rp_ms &&
		      strcmp(in[j]->rp_name, in[j - 1]->rp_name) < 0)); j--) {
			const struct report *t = in[j];
			in[j] = in[j - 1];
			in[j - 1] = t;
		}
	for (uint32_t i = 0; i < n; i++) {
		bool seen = false;
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(in[j]->rp_encl, in[i]->rp_encl) == 0)
				seen = true;
		if (!seen && ++encl >= c->r->hr_min_reporters)
			return in[i]->rp_ms ? in[i]->rp_ms : 1;
	}
	return 0;
}

static void rep_set(struct ctx *c, struct sview *v, const struct ha_event *e)
{
	uint32_t i;

	for (i = 0; i < v->sv_nr_rep; i++)
		if (strcmp(v->sv_rep[i].rp_name, e->he_reporter) == 0)
			break;
	if (i == v->sv_nr_rep) {
		if (i == HA_SERVERS_MAX)
			return; /* more reporters than servers: not ours */
		v->sv_nr_rep++;
	}
	v->sv_rep[i] = (struct report){ e->he_reporter,
					rep_encl(c, e->he_reporter),
					e->he_time_ms };
}

static void rep_drop(struct sview *v, const char *name)
{
	for (uint32_t i = 0; i < v->sv_nr_rep; i++)
		if (strcmp(v->sv_rep[i].rp_name, name) == 0) {
			v->sv_rep[i] = v->sv_rep[--v->sv_nr_rep];
			return;
		}
}

/* A down episode began at t (flapping). */
static void episode(struct ctx *c, struct sview *v, uint64_t t)
{
	v->sv_ep_down = true;
	if (t + c->r->hr_flap_period_ms > c->now) {
		v->sv_episodes++;
		if (t > v->sv_ep_last_ms)
			v->sv_ep_last_ms = t;
	}
}

/* One event about server s (he_dev "") into its view. */
static void srv_walk_one(struct ctx *c, struct sview *v, uint64_t *cur_inc,
			 uint64_t cur_job, const struct ha_event *e)
{
	bool st_stale = e->he_incarnation && e->he_incarnation < *cur_inc;
	bool ep_stale = e->he_incarnation && e->he_incarnation < v->sv_ep_inc;
	uint64_t t = e->he_time_ms;

	if (is_job(e->he_kind)) {
		if (cur_job == 0 || e->he_job == cur_job) {
			v->sv_job = e->he_kind;
			v->sv_job_ms = t;
			v->sv_job_id = e->he_job;
		}
		return;
	}
	if (st_stale && !is_op(e->he_kind)) {
		/* dropped for the state; a stale exit may still end an
		 * older run for the episode count */
		if ((e->he_kind == HA_EV_SRV_EXIT ||
		     e->he_kind == HA_EV_SRV_LEASE_EXPIRED) && !ep_stale &&
		    !v->sv_ep_down)
			episode(c, v, t);
		if (e->he_kind == HA_EV_SRV_STOPPED && !ep_stale)
			v->sv_ep_down = true;  /* that run ended, planned */
		if (e->he_kind == HA_EV_SRV_JOINED && !ep_stale) {
			v->sv_ep_inc = e->he_incarnation;
			v->sv_ep_down = false;
		}
		return;
	}
	burst_note(t, c->r->hr_quiet_ms, &v->sv_any, &v->sv_last_ms,
		   &v->sv_burst_ms, &v->sv_last_op, is_op(e->he_kind));
	switch (e->he_kind) {
	case HA_EV_SRV_STOPPED:
	case HA_EV_SRV_EXIT:
	case HA_EV_SRV_LEASE_EXPIRED:
	case HA_EV_OP_FAIL:
		/* a planned stop ends the run without a down episode: the
		 * lease expiry that follows it finds the run already down */
		if (e->he_kind == HA_EV_SRV_STOPPED) {
			v->sv_ep_down = true;
			v->sv_stopped = true;
			v->sv_stop_ms = t;
			v->sv_rejoin_ms = 0;
		} else if (!v->sv_ep_down && !ep_stale) {
			episode(c, v, t);
		}
		/* a lease expiry follows a clean stop: still that stop */
		if (e->he_kind == HA_EV_SRV_EXIT ||
		    e->he_kind == HA_EV_OP_FAIL)
			v->sv_stopped = false;
		if (!v->sv_proof || e->he_kind == HA_EV_OP_FAIL) {
			v->sv_proof_ms = t;
			v->sv_proof_op = e->he_kind == HA_EV_OP_FAIL;
		}
		v->sv_proof = true;
		v->sv_last = VC_DOWN;
		break;
	case HA_EV_SRV_JOINED:
		if (e->he_incarnation > *cur_inc)
			*cur_inc = e->he_incarnation;
		if (e->he_incarnation > v->sv_ep_inc)
			v->sv_ep_inc = e->he_incarnation;
		if (v->sv_stop_ms != 0 && v->sv_rejoin_ms == 0)
			v->sv_rejoin_ms = t;
		/* fall through */
	case HA_EV_OP_ADD:
		v->sv_ep_down = false;
		v->sv_proof = v->sv_proof_op = false;
		v->sv_stopped = false;
		v->sv_nr_rep = 0;
		v->sv_last = VC_UP;
		v->sv_up_op = e->he_kind == HA_EV_OP_ADD;
		if (e->he_kind == HA_EV_OP_ADD) {
			v->sv_drained = false;
			v->sv_add_ms = t;
		}
		break;
	case HA_EV_SRV_UNREACHABLE:
		if (strcmp(e->he_reporter, e->he_target) == 0)
			break; /* a server does not vouch for itself */
		rep_set(c, v, e);
		v->sv_last = VC_DOWN;
		if (!v->sv_ep_down && quorum_ms(c, v, t))
			episode(c, v, t);
		break;
	case HA_EV_SRV_REACHABLE:
		rep_drop(v, e->he_reporter);
		if (!v->sv_proof) {
			v->sv_last = VC_UP;
			v->sv_up_op = false;
			if (!quorum_ms(c, v, t))
				v->sv_ep_down = false;
		}
		break;
	case HA_EV_OP_DRAIN:
	case HA_EV_OP_REMOVE:
		v->sv_drained = true;
		break;
	default:
		break; /* device events, OP_THAW, OP_REPLACE: not the server's */
	}
}

/* One event about device d of a server into its view; i is its index in
 * the history (for the error window), cur_job the device's running job. */
static void dev_walk_one(struct ctx *c, struct dview *v, uint32_t i,
			 uint64_t cur_job)
{
	const struct ha_event *e = &c->ev[i];
	uint64_t t = e->he_time_ms, sum = 0;

	if (is_job(e->he_kind)) {
		if (cur_job == 0 || e->he_job == cur_job) {
			v->dv_job = e->he_kind;
			v->dv_job_ms = t;
			v->dv_job_id = e->he_job;
		}
		return;
	}
	burst_note(t, c->r->hr_quiet_ms, &v->dv_any, &v->dv_last_ms,
		   &v->dv_burst_ms, &v->dv_last_op, is_op(e->he_kind));
	switch (e->he_kind) {
	case HA_EV_DEV_IOERR:
		/* chain the device's errors through the history, newest
		 * first: at most hr_ioerr_count of them reach the count */
		c->prev_err[i] = v->dv_last_err;
		v->dv_last_err = i + 1;
		if (v->dv_down)
			break;
		for (uint32_t j = i + 1, k = 0; j != 0 &&
		     k < c->r->hr_ioerr_count; j = c->prev_err[j - 1], k++) {
			const struct ha_event *f = &c->ev[j - 1];
			if (f->he_time_ms < v->dv_errs_from ||
			    f->he_time_ms > t ||
			    f->he_time_ms + c->r->hr_ioerr_window_ms <= t)
				break;
			sum += f->he_count ? f->he_count : 1;
		}
		if (sum >= c->r->hr_ioerr_count) {
			v->dv_down = v->dv_ioerr = true;
			v->dv_down_op = false;
			v->dv_down_ms = t;
			v->dv_replaced = false;
		}
		break;
	case HA_EV_DEV_FAILED:
	case HA_EV_OP_FAIL:
		if (!v->dv_down || e->he_kind == HA_EV_OP_FAIL) {
			v->dv_down_ms = t;
			v->dv_down_op = e->he_kind == HA_EV_OP_FAIL;
			v->dv_ioerr = false;
		}
		v->dv_down = true;
		v->dv_replaced = false;
		break;
	case HA_EV_OP_REPLACE:
		v->dv_down = v->dv_down_op = v->dv_ioerr = false;
		v->dv_replaced = true;
		v->dv_errs_from = t + 1;
		break;
	default:
		break;
	}
}

/* Walk the history into every view. */
static void views_build(struct ctx *c)
{
	const struct ha_map *m = c->w;
	uint64_t cur_inc[HA_SERVERS_MAX];

	for (uint32_t s = 0; s < m->hm_nr_servers; s++) {
		cur_inc[s] = m->hm_servers[s].hs_incarnation;
		c->hv[s].frozen_by = -1;
		c->sv[s].sv_job = HA_EV_KIND_NR;
		for (uint32_t d = 0; d < HA_DEVS_MAX; d++)
			c->dv[s * HA_DEVS_MAX + d].dv_job = HA_EV_KIND_NR;
	}
	for (uint32_t i = 0; i < c->nr_ev; i++) {
		const struct ha_event *e = &c->ev[i];
		int s, d;

		if (e->he_kind == HA_EV_OP_THAW) {
			if (e->he_time_ms > c->thaw_ms)
				c->thaw_ms = e->he_time_ms;
			continue;
		}
		if ((unsigned)e->he_kind >= HA_EV_KIND_NR ||
		    (s = srv_lookup(c, e->he_target)) < 0)
			continue;
		if (e->he_kind == HA_EV_HOME_READY) {
			/* its own word about its own copy, of its run */
			if (strcmp(e->he_reporter, e->he_target) == 0 &&
			    !(e->he_incarnation &&
			      e->he_incarnation < cur_inc[s]) &&
			    e->he_time_ms > c->hv[s].ready_ms) {
				c->hv[s].ready_ms = e->he_time_ms;
				c->hv[s].ready_ep = e->he_epoch;
			}
			continue;
		}
		if (e->he_kind == HA_EV_HOME_FROZEN) {
			/* the word of the server acting for it now, of its
			 * acting epoch (rule home checks both again) */
			if (e->he_time_ms > c->hv[s].frozen_ms &&
			    srv_lookup(c, e->he_reporter) ==
			    ha_home_acting(m, (uint32_t)s) &&
			    e->he_epoch == m->hm_servers[s].hs_acting_epoch) {
				c->hv[s].frozen_ms = e->he_time_ms;
				c->hv[s].frozen_ep = e->he_epoch;
				c->hv[s].frozen_by = srv_lookup(c,
							e->he_reporter);
			}
			continue;
		}
		if (e->he_kind == HA_EV_HOME_INSYNC) {
			/* the record of the server serving h now, made
			 * since it serves it (rule home prefers them) */
			if (srv_lookup(c, e->he_reporter) ==
			    ha_home_acting(m, (uint32_t)s) &&
			    e->he_time_ms >= m->hm_servers[s].hs_acting_ms &&
			    e->he_time_ms >= c->hv[s].insync_ms) {
				c->hv[s].insync_ms = e->he_time_ms;
				c->hv[s].insync = e->he_insync;
			}
			continue;
		}
		/* a HOME_READY counts only after the run's last start or end */
		if (e->he_kind == HA_EV_SRV_JOINED ||
		    e->he_kind == HA_EV_SRV_EXIT ||
		    e->he_kind == HA_EV_SRV_STOPPED ||
		    e->he_kind == HA_EV_SRV_LEASE_EXPIRED)
			c->hv[s].ready_ms = c->hv[s].ready_ep = 0;
		if (e->he_dev[0] == '\0') {
			srv_walk_one(c, &c->sv[s], &cur_inc[s],
				     m->hm_servers[s].hs_job, e);
			continue;
		}
		d = dev_find(&m->hm_servers[s], e->he_dev);
		if (d < 0)
			continue;
		/* a device event of an older run of its server is stale */
		if (e->he_incarnation && e->he_incarnation < cur_inc[s])
			continue;
		dev_walk_one(c, &c->dv[s * HA_DEVS_MAX + d], i,
			     m->hm_servers[s].hs_devs[d].hd_job);
	}
	for (uint32_t s = 0; s < m->hm_nr_servers; s++) {
		struct sview *v = &c->sv[s];
		uint64_t q = quorum_ms(c, v, c->now);

		v->sv_down = v->sv_proof || q != 0;
		v->sv_down_ms = v->sv_proof ? v->sv_proof_ms : q;
		v->sv_up = !v->sv_down && v->sv_last == VC_UP;
	}
}

/* ------------------------------------------------------------ decisions */

static void wait_until(struct ctx *c, uint64_t t)
{
	if (t > c->now && t < c->deadline)
		c->deadline = t;
}

/* Is the merge of a target settled?  Else note when it will be. */
static bool settled(struct ctx *c, bool any, uint64_t last, uint64_t burst,
		    bool last_op)
{
	uint64_t at = last + c->r->hr_quiet_ms;

	if (!any || last_op)
		return true;
	if (burst + c->r->hr_merge_max_ms < at)
		at = burst + c->r->hr_merge_max_ms;
	if (c->now >= at)
		return true;
	wait_until(c, at);
	return false;
}

/* Take decision d: apply it to the working copy and keep it.  Returns 1
 * (a decision was taken), or 0 when out is full (c->full set). */
static int take(struct ctx *c, enum ha_dec_kind kind, const char *target,
		const char *dev, enum ha_state st, const char *rule,
		const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* The state and job of target (server, or its device dev) in the working
 * map: false when the map does not list it. */
static bool target_job(const struct ctx *c, const char *target,
		       const char *dev, enum ha_state *st, uint64_t *job)
{
	int s = srv_find(c->w, target), k;

	if (s < 0)
		return false;
	if (dev[0] == '\0') {
		*st = c->w->hm_servers[s].hs_state;
		*job = c->w->hm_servers[s].hs_job;
		return true;
	}
	k = dev_find(&c->w->hm_servers[s], dev);
	if (k < 0)
		return false;
	*st = c->w->hm_servers[s].hs_devs[k].hd_state;
	*job = c->w->hm_servers[s].hs_devs[k].hd_job;
	return true;
}

static bool job_state(enum ha_state s)
{
	return s == HA_REPAIRING || s == HA_REBALANCING;
}

static int take(struct ctx *c, enum ha_dec_kind kind, const char *target,
		const char *dev, enum ha_state st, const char *rule,
		const char *fmt, ...)
{
	struct ha_decision d = { .hd_kind = kind, .hd_state = st,
				 .hd_time_ms = c->now };
	enum ha_state cur_st;
	uint64_t cur_job;
	va_list ap;

	/* rule job-abort: a target whose job runs leaves REPAIRING or
	 * REBALANCING by another rule than the job's end: its job is
	 * aborted first (JOB_ABORT, the job's id), then the state changes;
	 * a new leader between the two sees no job and takes the state
	 * change alone */
	if (kind == HA_DEC_SET_STATE && strcmp(rule, "job") != 0 &&
	    target_job(c, target, dev, &cur_st, &cur_job) &&
	    job_state(cur_st) && cur_job != 0 && st != cur_st) {
		if (!c->dry && c->max_out - c->nr_out < 2) {
			c->full = true;
			return 0;
		}
		c->job_arg = cur_job;
		take(c, HA_DEC_JOB_ABORT, target, dev, cur_st, "job-abort",
		     "%s job %llu of %s%s%s aborted: the target becomes %s "
		     "(rule %s)", cur_st == HA_REPAIRING ? "repair" :
		     "rebalance", (unsigned long long)cur_job, target,
		     dev[0] ? "/" : "", dev, ha_state_name(st), rule);
	}
	if (!c->dry && c->nr_out == c->max_out) {
		c->full = true;
		return 0;
	}
	d.hd_seq = c->w->hm_epoch + 1;
	if (kind == HA_DEC_JOB_REPAIR || kind == HA_DEC_JOB_REBALANCE)
		d.hd_job = d.hd_seq;
	else if (kind == HA_DEC_JOB_PAUSE || kind == HA_DEC_JOB_ABORT)
		d.hd_job = c->job_arg;
	snprintf(d.hd_target, sizeof d.hd_target, "%s", target);
	snprintf(d.hd_dev, sizeof d.hd_dev, "%s", dev);
	snprintf(d.hd_rule, sizeof d.hd_rule, "%s", rule);
	va_start(ap, fmt);
	vsnprintf(d.hd_reason, sizeof d.hd_reason, fmt, ap);
	va_end(ap);
	if (ha_map_apply(c->w, &d, c->now) != 0)
		return 0; /* cannot happen: the target is from the map */
	if (!c->dry)
		c->out[c->nr_out] = d;
	c->nr_out++;
	return 1;
}

static bool unavailable(enum ha_state s)
{
	return s == HA_TRANSIENT || s == HA_FAILED || s == HA_OUT ||
	       s == HA_REPAIRING || s == HA_QUARANTINED;
}

/* Targets unavailable at once in the working map (a server's devices count
 * only while the server itself does not). */
static uint32_t unavailable_count(const struct ha_map *m)
{
	uint32_t n = 0;

	for (uint32_t s = 0; s < m->hm_nr_servers; s++) {
		const struct ha_srv *sv = &m->hm_servers[s];
		if (unavailable(sv->hs_state)) {
			n++;
			continue;
		}
		for (uint32_t d = 0; d < sv->hs_nr_devs; d++)
			n += unavailable(sv->hs_devs[d].hd_state);
	}
	return n;
}

/* Targets of enclosure encl whose views went down within W of t. */
static uint32_t encl_down(const struct ctx *c, const char *encl, uint64_t t)
{
	const struct ha_map *m = c->w;
	uint64_t w = c->r->hr_quiet_ms;
	uint32_t n = 0;

#define NEAR(x) ((x) + w >= t && (x) <= t + w)
	for (uint32_t s = 0; s < m->hm_nr_servers; s++) {
		const struct ha_srv *sv = &m->hm_servers[s];
		if (strcmp(srv_encl(sv), encl) != 0)
			continue;
		if (c->sv[s].sv_down && NEAR(c->sv[s].sv_down_ms)) {
			n++;
			continue;
		}
		if (sv->hs_state != HA_ONLINE)
			continue;
		for (uint32_t d = 0; d < sv->hs_nr_devs; d++) {
			const struct dview *v = &c->dv[s * HA_DEVS_MAX + d];
			n += v->dv_down && NEAR(v->dv_down_ms);
		}
	}
#undef NEAR
	return n;
}

/* A target went down (its view at down_ms): FREEZE, TRANSIENT or FAILED.
 * name: "s1" or "s1/d0" for the texts. */
static int went_down(struct ctx *c, const char *srv, const char *dev,
		     const char *encl, uint64_t down_ms, const char *rule,
		     const char *why)
{
	char name[2 * HA_NAME_MAX + 2];
	uint32_t n;

	snprintf(name, sizeof name, "%s%s%s", srv, dev[0] ? "/" : "", dev);

	if (c->w->hm_frozen)
		return 0;
	n = unavailable_count(c->w) + 1;
	if (n > c->w->hm_tolerance && down_ms > c->thaw_ms)
		return take(c, HA_DEC_FREEZE, srv, dev, HA_ONLINE, "freeze",
			    "%s down (%s) would make %u targets unavailable, "
			    "more than the tolerance %u: map frozen, nothing "
			    "excluded", name, why, n, c->w->hm_tolerance);
	if (encl_down(c, encl, down_ms) >= c->r->hr_encl_min)
		return take(c, HA_DEC_SET_STATE, srv, dev, HA_TRANSIENT,
			    "enclosure", "%s down (%s) with %u targets of "
			    "enclosure %s at once: transient, no repair",
			    name, why, encl_down(c, encl, down_ms), encl);
	return take(c, HA_DEC_SET_STATE, srv, dev, HA_FAILED, rule, "%s", why);
}

/* A job's end about a target in REPAIRING or REBALANCING since since,
 * running job cur (0: none running, paused: no end counts); only the end
 * of that job counts, and an end older
 * than the start counts for nothing. */
static int job_end(struct ctx *c, const char *srv, const char *dev,
		   enum ha_state st, uint64_t since, uint64_t cur,
		   enum ha_ev_kind job, uint64_t job_ms, uint64_t job_id)
{
	char alert[HA_TEXT_MAX + 1];
	const char *what = st == HA_REPAIRING ? "repair" : "rebalance";

	if ((st != HA_REPAIRING && st != HA_REBALANCING) ||
	    job == HA_EV_KIND_NR || cur == 0 || job_id != cur ||
	    job_ms < since)
		return 0;
	if (job == HA_EV_JOB_DONE)
		return take(c, HA_DEC_SET_STATE, srv, dev,
			    st == HA_REPAIRING ? HA_REPAIRED : HA_ONLINE, "job",
			    "%s job %llu done", what,
			    (unsigned long long)job_id);
	snprintf(alert, sizeof alert, "%s job %llu of %s%s%s failed: marked "
		 "FAILED, repaired again after the down-out delay", what,
		 (unsigned long long)job_id, srv, dev[0] ? "/" : "", dev);
	if (strcmp(c->w->hm_alert, alert) != 0)
		return take(c, HA_DEC_ALERT, srv, dev, st, "job", "%s", alert);
	return take(c, HA_DEC_SET_STATE, srv, dev, HA_FAILED, "job",
		    "%s job %llu failed", what, (unsigned long long)job_id);
}

/* The rules that follow a state's time: down-out, transient max, repair. */
static int timers(struct ctx *c, const char *srv, const char *dev,
		  enum ha_state st, uint64_t since, bool up)
{
	const struct ha_rules *r = c->r;

	if (c->w->hm_frozen)
		return 0;
	if (st == HA_OUT)
		return take(c, HA_DEC_JOB_REPAIR, srv, dev, HA_REPAIRING,
			    "repair", "out: rebuild its units elsewhere");
	if (st == HA_FAILED && !up) {
		if (c->now >= since + r->hr_down_out_ms)
			return take(c, HA_DEC_SET_STATE, srv, dev, HA_OUT,
				    "down-out", "failed for %llu ms",
				    (unsigned long long)(c->now - since));
		wait_until(c, since + r->hr_down_out_ms);
	}
	if (st == HA_TRANSIENT && !up) {
		if (c->now >= since + r->hr_transient_max_ms)
			return take(c, HA_DEC_SET_STATE, srv, dev, HA_FAILED,
				    "enclosure", "transient for %llu ms: "
				    "failed", (unsigned long long)(c->now - since));
		wait_until(c, since + r->hr_transient_max_ms);
	}
	return 0;
}

/* A QUARANTINED server (settled): an operator's fail or add, or up and
 * quiet for the flap period. */
static int srv_quarantined(struct ctx *c, const struct ha_srv *s,
			   const struct sview *v)
{
	const char *n = s->hs_name;
	uint64_t end = v->sv_ep_last_ms + c->r->hr_flap_period_ms;

	if (v->sv_down && v->sv_proof_op && v->sv_proof_ms > s->hs_since_ms &&
	    !c->w->hm_frozen)
		return take(c, HA_DEC_SET_STATE, n, "", HA_FAILED, "operator",
			    "failed by the operator");
	if (v->sv_up && v->sv_up_op && v->sv_add_ms > s->hs_since_ms)
		return take(c, HA_DEC_SET_STATE, n, "", HA_ONLINE, "flapping",
			    "taken back by the operator");
	if (!v->sv_up)
		return 0;
	if (c->now >= end)
		return take(c, HA_DEC_SET_STATE, n, "", HA_ONLINE, "flapping",
			    "up and stable for %llu ms",
			    (unsigned long long)c->r->hr_flap_period_ms);
	wait_until(c, end);
	return 0;
}

/* Rule restart: server i's run ended by its own clean stop (v); the
 * stops of the map's servers that follow one another within W of it, its
 * own among them, are one stop of the cluster (or of part of it: a script
 * stopping them in turn).  Returns the latest time one of the others
 * joined again after its stop (the restart under way, still making
 * progress: servers started one after the other on a loaded machine, the
 * last more than the grace after the first, lost the grace before), 0
 * when none did. */
static uint64_t restart_wave(const struct ctx *c, uint32_t i,
			     const struct sview *v)
{
	uint64_t w = c->r->hr_quiet_ms, lo = v->sv_stop_ms, hi = lo, at = 0;
	uint32_t n = c->w->hm_nr_servers;
	bool grew = true;

	/* the chain of stops around its own, then its first return */
	while (grew) {
		grew = false;
		for (uint32_t j = 0; j < n; j++) {
			uint64_t t = c->sv[j].sv_stop_ms;
			if (t == 0 || (t >= lo && t <= hi) ||
			    t + w < lo || t > hi + w)
				continue;
			if (t < lo)
				lo = t;
			else
				hi = t;
			grew = true;
		}
	}
	for (uint32_t j = 0; j < n; j++) {
		const struct sview *y = &c->sv[j];
		if (j == i || y->sv_stop_ms < lo || y->sv_stop_ms > hi ||
		    y->sv_rejoin_ms == 0)
			continue;
		if (y->sv_rejoin_ms > at)
			at = y->sv_rejoin_ms;
	}
	return at;
}

/* The rules of a server whose events have settled. */
static int srv_settled(struct ctx *c, const struct ha_srv *s,
		       const struct sview *v)
{
	enum ha_state st = s->hs_state;
	const char *n = s->hs_name;

	if ((st == HA_ONLINE || st == HA_REBALANCING) && v->sv_down) {
		char why[HA_TEXT_MAX + 1];
		uint64_t back;
		/* rule restart: stopped with others, one of which is back */
		if (v->sv_proof && !v->sv_proof_op && v->sv_stopped &&
		    (back = restart_wave(c, (uint32_t)(s - c->w->hm_servers),
					 v)) != 0 &&
		    c->now < back + c->r->hr_restart_grace_ms) {
			wait_until(c, back + c->r->hr_restart_grace_ms);
			return 0;
		}
		if (v->sv_proof)
			snprintf(why, sizeof why, "%s", v->sv_proof_op ?
				 "failed by the operator" :
				 "its exit or lease expiry");
		else
			snprintf(why, sizeof why, "unreachable from %u "
				 "enclosures", c->r->hr_min_reporters);
		return went_down(c, n, "", srv_encl(s), v->sv_down_ms,
				 v->sv_proof_op ? "operator" : "server-down",
				 why);
	}
	if ((st == HA_TRANSIENT || st == HA_FAILED) && v->sv_up)
		return take(c, HA_DEC_SET_STATE, n, "", HA_ONLINE, "return",
			    "back (%s): its data is still there",
			    v->sv_up_op ? "added by the operator" :
			    "joined or reachable again");
	if (st == HA_QUARANTINED)
		return srv_quarantined(c, s, v);
	if (st == HA_REPAIRED && v->sv_up && !v->sv_drained)
		return take(c, HA_DEC_JOB_REBALANCE, n, "", HA_REBALANCING,
			    "rebalance", "back after its repair: units move "
			    "back onto it");
	return timers(c, n, "", st, s->hs_since_ms, v->sv_up);
}

/* One round of server i's rules: 1 when a decision was taken.  Job ends,
 * flapping and the operator's drain and add need no quiet. */
static int srv_step(struct ctx *c, uint32_t i)
{
	const struct ha_srv *s = &c->w->hm_servers[i];
	const struct sview *v = &c->sv[i];
	enum ha_state st = s->hs_state;
	bool frozen = c->w->hm_frozen;
	const char *n = s->hs_name;
	int rc;

	rc = job_end(c, n, "", st, s->hs_since_ms, s->hs_job, v->sv_job,
		     v->sv_job_ms, v->sv_job_id);
	if (rc)
		return rc;
	/* flapping, unless the map changed it after its last episode (an
	 * operator's decision then stands) */
	if ((st == HA_ONLINE || st == HA_TRANSIENT || st == HA_FAILED ||
	     st == HA_REBALANCING) && !frozen &&
	    v->sv_episodes >= c->r->hr_flap_count &&
	    v->sv_ep_last_ms > s->hs_since_ms)
		return take(c, HA_DEC_SET_STATE, n, "", HA_QUARANTINED,
			    "flapping", "%u down episodes in %llu ms: kept "
			    "out, never repaired", v->sv_episodes,
			    (unsigned long long)c->r->hr_flap_period_ms);
	if (v->sv_drained && !frozen &&
	    (st == HA_ONLINE || st == HA_TRANSIENT || st == HA_FAILED ||
	     st == HA_QUARANTINED || st == HA_REBALANCING))
		return take(c, HA_DEC_SET_STATE, n, "", HA_OUT, "drain",
			    "drained by the operator: its units move elsewhere");
	if (st == HA_ONLINE && !v->sv_drained && v->sv_add_ms > s->hs_since_ms)
		return take(c, HA_DEC_JOB_REBALANCE, n, "", HA_REBALANCING,
			    "rebalance", "added by the operator: its share "
			    "moves onto it");
	if (settled(c, v->sv_any, v->sv_last_ms, v->sv_burst_ms,
		    v->sv_last_op))
		return srv_settled(c, s, v);
	return st == HA_OUT ? timers(c, n, "", st, s->hs_since_ms, v->sv_up) :
	       0;
}

/* One round of the rules of device d of server i. */
static int dev_step(struct ctx *c, uint32_t i, uint32_t d)
{
	const struct ha_srv *s = &c->w->hm_servers[i];
	const struct ha_dev *dv = &s->hs_devs[d];
	const struct dview *v = &c->dv[i * HA_DEVS_MAX + d];
	enum ha_state st = dv->hd_state;
	const char *n = s->hs_name, *dn = dv->hd_name;
	int rc;

	if (s->hs_state != HA_ONLINE)
		return 0;
	rc = job_end(c, n, dn, st, dv->hd_since_ms, dv->hd_job, v->dv_job,
		     v->dv_job_ms, v->dv_job_id);
	if (rc)
		return rc;
	if (!settled(c, v->dv_any, v->dv_last_ms, v->dv_burst_ms,
		     v->dv_last_op))
		return st == HA_OUT ? timers(c, n, dn, st, dv->hd_since_ms,
					     false) : 0;
	if ((st == HA_ONLINE || st == HA_REBALANCING) && v->dv_down) {
		char why[HA_TEXT_MAX + 1];
		snprintf(why, sizeof why, "%s", v->dv_down_op ?
			 "failed by the operator" : v->dv_ioerr ?
			 "too many I/O errors" : "its store marked it failed");
		return went_down(c, n, dn, srv_encl(s), v->dv_down_ms,
				 v->dv_down_op ? "operator" : v->dv_ioerr ?
				 "io-errors" : "device-failed", why);
	}
	if ((st == HA_FAILED || st == HA_TRANSIENT || st == HA_QUARANTINED) &&
	    v->dv_replaced && !c->w->hm_frozen)
		return take(c, HA_DEC_SET_STATE, n, dn, HA_OUT, "replace",
			    "replaced before its repair: rebuild its units");
	if (st == HA_REPAIRED && v->dv_replaced)
		return take(c, HA_DEC_JOB_REBALANCE, n, dn, HA_REBALANCING,
			    "rebalance", "replaced: units move onto the new "
			    "device");
	return timers(c, n, dn, st, dv->hd_since_ms, false);
}

/* A server that can serve a home: in service. */
static bool home_up(enum ha_state s)
{
	return s == HA_ONLINE || s == HA_REBALANCING;
}

/* Move home h to server to (h itself: hand it back; the server acting for
 * it now: a handback cancelled, a new acting epoch); down_ms: since when
 * the server that served it is down (the map's since time, the same for
 * every leader that decides it: the takeover incarnation is its ns). */
static int home_move(struct ctx *c, uint32_t h, uint32_t to,
		     uint64_t down_ms, const char *why)
{
	const struct ha_srv *hs = &c->w->hm_servers[h];
	uint64_t inc = down_ms * 1000000ull;
	int rc;

	if (to == h || (int)to == ha_home_acting(c->w, h)) {
		inc = hs->hs_acting_inc; /* kept: the home's writes exceed it */
	} else {
		if (inc <= hs->hs_incarnation)
			inc = hs->hs_incarnation + 1;
		if (inc <= hs->hs_acting_inc)
			inc = hs->hs_acting_inc + 1;
	}
	rc = take(c, HA_DEC_HOME_MOVE, hs->hs_name, "", HA_ONLINE, "home",
		  "home %s served by %s: %s", hs->hs_name,
		  c->w->hm_servers[to].hs_name, why);
	if (rc == 1 && !c->dry) {
		struct ha_decision *d = &c->out[c->nr_out - 1];
		snprintf(d->hd_acting, sizeof d->hd_acting, "%s",
			 c->w->hm_servers[to].hs_name);
		d->hd_incarnation = inc;
	}
	/* take() applied it without the acting server: set it here too */
	if (rc == 1) {
		struct ha_srv *w = &c->w->hm_servers[h];
		snprintf(w->hs_acting, sizeof w->hs_acting, "%s",
			 to == h ? "" : c->w->hm_servers[to].hs_name);
		w->hs_acting_inc = inc;
	}
	return rc;
}

/* Rule home for home h: see analyzer.h. */
static int home_step(struct ctx *c, uint32_t h)
{
	const struct ha_map *w = c->w;
	const struct ha_srv *hs = &w->hm_servers[h];
	const struct hview *v = &c->hv[h];
	uint32_t sb[2 * HA_SERVERS_MAX], n, nf;
	int a = ha_home_acting(w, h);
	uint64_t thaw_at;

	if (w->hm_meta_replicas < 2 || a < 0)
		return 0;
	/* a handback the home cannot take (it is not up: quarantined, dead
	 * after its copy) is cancelled, frozen map or not: it excludes
	 * nothing, and the home's updates are refused while it stands.  A
	 * server FAILED or REPAIRED may be up within the merge max (rules
	 * return, rebalance); one OUT, REPAIRING or QUARANTINED only after
	 * its repair job or the flap period: its handback is cancelled at
	 * once (its repair would wait on the frozen home meanwhile) */
	thaw_at = v->frozen_ms + c->r->hr_merge_max_ms;
	if ((uint32_t)a != h && v->frozen_by == a &&
	    v->frozen_ms > hs->hs_acting_ms &&
	    v->frozen_ep == hs->hs_acting_epoch &&
	    home_up(w->hm_servers[a].hs_state) && !home_up(hs->hs_state)) {
		if (c->now >= thaw_at || hs->hs_state == HA_OUT ||
		    hs->hs_state == HA_REPAIRING ||
		    hs->hs_state == HA_QUARANTINED)
			return home_move(c, h, (uint32_t)a, 0, "its handback "
					 "is cancelled (the home's server is "
					 "not up): served again, at a new "
					 "epoch");
		wait_until(c, thaw_at);
	}
	if (w->hm_frozen)
		return 0;
	/* its copy must be of the acting server's current epoch: one taken
	 * before a cancelled handback is stale */
	if ((uint32_t)a != h && home_up(hs->hs_state) &&
	    v->ready_ms > hs->hs_acting_ms &&
	    (v->ready_ep == 0 || v->ready_ep == hs->hs_acting_epoch))
		return home_move(c, h, h, 0, "back, its copy in sync "
				 "(handover)");
	if (home_up(w->hm_servers[a].hs_state))
		return 0;
	/* first an ONLINE standby the serving server recorded in sync (its
	 * copy holds every acknowledged write: no catch-up copy), whether
	 * of the file's list or a replacement (a standby lost for good
	 * replaced: core/server/srv_repl.h) */
	n = ha_home_standbys(w, h, sb);
	nf = ha_home_standbys_file(w, h, sb + n);
	for (uint32_t k = 0; v->insync_ms != 0 && k < n + nf; k++)
		if (sb[k] != (uint32_t)a && sb[k] < 64 &&
		    (v->insync >> sb[k] & 1) != 0 &&
		    w->hm_servers[sb[k]].hs_state == HA_ONLINE)
			return home_move(c, h, sb[k],
					 w->hm_servers[a].hs_since_ms,
					 (uint32_t)a == h ?
					 "its server is down (takeover by a "
					 "standby in sync)" :
					 "the server acting for it is down (to "
					 "a standby in sync)");
	/* then the first ONLINE one of the file's list (its catch-up
	 * copies a recorded one's shadow first, or waits for one); never a
	 * replacement the record does not name: it may have become a
	 * standby after the serving server died, and hold nothing */
	for (uint32_t k = n; k < n + nf; k++)
		if (sb[k] != (uint32_t)a &&
		    w->hm_servers[sb[k]].hs_state == HA_ONLINE)
			return home_move(c, h, sb[k],
					 w->hm_servers[a].hs_since_ms,
					 (uint32_t)a == h ?
					 "its server is down (takeover)" :
					 "the server acting for it is down");
	return 0;
}

/*
 * Rules pause and resume, for a target in REPAIRING or REBALANCING (job:
 * its running job, 0 none): a map frozen while its job runs pauses it
 * (JOB_PAUSE: the runner stops it, the walks keep their place, the map
 * keeps the state with no job); an unfrozen map with no job running for
 * it starts its job again (rule resume: a new job id; its walks go on
 * where the paused ones stopped).
 */
static int job_follow(struct ctx *c, const char *srv, const char *dev,
		      enum ha_state st, uint64_t job)
{
	const char *what = st == HA_REPAIRING ? "repair" : "rebalance";

	if (!job_state(st))
		return 0;
	if (c->w->hm_frozen && job != 0) {
		c->job_arg = job;
		return take(c, HA_DEC_JOB_PAUSE, srv, dev, st, "pause",
			    "map frozen: %s job %llu of %s%s%s paused (its "
			    "walks keep their place)", what,
			    (unsigned long long)job, srv, dev[0] ? "/" : "",
			    dev);
	}
	if (!c->w->hm_frozen && job == 0)
		return take(c, st == HA_REPAIRING ? HA_DEC_JOB_REPAIR :
			    HA_DEC_JOB_REBALANCE, srv, dev, st, "resume",
			    "no %s job running (paused, or a map without "
			    "one): started again where its walks stopped",
			    what);
	return 0;
}

/* Every rule over the working map, in map order. */
static void rules_run(struct ctx *c)
{
	struct ha_map *w = c->w;

	if (w->hm_frozen && c->thaw_ms > w->hm_frozen_ms &&
	    !take(c, HA_DEC_THAW, "", "", HA_ONLINE, "thaw",
		  "thawed by the operator"))
		return;
	for (uint32_t i = 0; i < w->hm_nr_servers && !c->full; i++) {
		for (int k = 0; k < STEPS_PER_TARGET && srv_step(c, i); k++)
			;
		for (uint32_t d = 0; d < w->hm_servers[i].hs_nr_devs; d++)
			for (int k = 0; k < STEPS_PER_TARGET && !c->full &&
			     dev_step(c, i, d); k++)
				;
	}
	/* jobs after every target's state: a job follows its target */
	for (uint32_t i = 0; i < w->hm_nr_servers && !c->full; i++) {
		struct ha_srv *s = &w->hm_servers[i];

		job_follow(c, s->hs_name, "", s->hs_state, s->hs_job);
		for (uint32_t d = 0; d < s->hs_nr_devs && !c->full &&
		     s->hs_state == HA_ONLINE; d++)
			job_follow(c, s->hs_name, s->hs_devs[d].hd_name,
				   s->hs_devs[d].hd_state, s->hs_devs[d].hd_job);
	}
	/* homes after every server's state: a home follows them */
	for (uint32_t h = 0; h < w->hm_nr_servers && !c->full; h++)
		home_step(c, h);
}

/* Set up c (working copy, views) and run the rules. */
static int analyze(struct ctx *c, const struct ha_map *map)
{
	int rc = ha_rules_check(c->r);

	if (rc != 0)
		return rc;
	c->w = malloc(sizeof *c->w);
	c->sv = calloc(HA_SERVERS_MAX, sizeof *c->sv);
	c->dv = calloc((size_t)HA_SERVERS_MAX * HA_DEVS_MAX, sizeof *c->dv);
	c->prev_err = calloc(c->nr_ev + 1, sizeof *c->prev_err);
	c->hv = calloc(HA_SERVERS_MAX, sizeof *c->hv);
	if (c->w == NULL || c->sv == NULL || c->dv == NULL ||
	    c->prev_err == NULL || c->hv == NULL) {
		rc = err_set(-ENOMEM, "ha analyzer: no memory for its views");
		goto out;
	}
	*c->w = *map;
	if (c->w->hm_nr_servers > HA_SERVERS_MAX)
		c->w->hm_nr_servers = HA_SERVERS_MAX;
	c->deadline = UINT64_MAX;
	names_build(c);
	views_build(c);
	rules_run(c);
	rc = c->full ? -ENOSPC : 0;
out:
	free(c->w);
	free(c->sv);
	free(c->dv);
	free(c->prev_err);
	free(c->hv);
	return rc;
}

int ha_decide(const struct ha_rules *r, const struct ha_event *ev,
	      uint32_t nr_ev, const struct ha_map *map, uint64_t now_ms,
	      struct ha_decision *out, uint32_t max_out, uint32_t *nr_out)
{
	struct ctx c = { .r = r, .ev = ev, .nr_ev = nr_ev, .now = now_ms,
			 .out = out, .max_out = max_out };
	int rc = analyze(&c, map);

	*nr_out = c.nr_out;
	return rc;
}

uint64_t ha_next_deadline(const struct ha_rules *r, const struct ha_event *ev,
			  uint32_t nr_ev, const struct ha_map *map,
			  uint64_t now_ms)
{
	struct ctx c = { .r = r, .ev = ev, .nr_ev = nr_ev, .now = now_ms,
			 .dry = true };

	if (analyze(&c, map) != 0)
		return UINT64_MAX;
	return c.nr_out > 0 ? now_ms : c.deadline;
}

/* ------------------------------------------------------------ apply */

int ha_map_apply(struct ha_map *map, const struct ha_decision *d,
		 uint64_t now_ms)
{
	enum ha_state st = d->hd_state;
	enum ha_state *pst = NULL;
	uint64_t *psince = NULL, *pjob = NULL;

	if ((unsigned)d->hd_kind >= HA_DEC_KIND_NR)
		return err_set(-EINVAL, "ha decision %llu: kind %d is not one",
			       (unsigned long long)d->hd_seq, (int)d->hd_kind);
	if (d->hd_kind == HA_DEC_SET_STATE || d->hd_kind == HA_DEC_JOB_REPAIR ||
	    d->hd_kind == HA_DEC_JOB_REBALANCE) {
		int s = srv_find(map, d->hd_target), k;
		if (s < 0)
			return err_set(-ENOENT, "ha decision %llu: server '%s' "
				       "is not in the map",
				       (unsigned long long)d->hd_seq,
				       d->hd_target);
		pst = &map->hm_servers[s].hs_state;
		psince = &map->hm_servers[s].hs_since_ms;
		pjob = &map->hm_servers[s].hs_job;
		if (d->hd_dev[0]) {
			k = dev_find(&map->hm_servers[s], d->hd_dev);
			if (k < 0)
				return err_set(-ENOENT, "ha decision %llu: "
					       "device '%s' of server '%s' is "
					       "not in the map",
					       (unsigned long long)d->hd_seq,
					       d->hd_dev, d->hd_target);
			pst = &map->hm_servers[s].hs_devs[k].hd_state;
			psince = &map->hm_servers[s].hs_devs[k].hd_since_ms;
			pjob = &map->hm_servers[s].hs_devs[k].hd_job;
		}
		if (d->hd_kind == HA_DEC_JOB_REPAIR)
			st = HA_REPAIRING;
		else if (d->hd_kind == HA_DEC_JOB_REBALANCE)
			st = HA_REBALANCING;
		else if ((unsigned)st >= HA_STATE_NR)
			return err_set(-EINVAL, "ha decision %llu: state %d is "
				       "not one", (unsigned long long)d->hd_seq,
				       (int)st);
		*pst = st;
		*psince = now_ms;
		*pjob = d->hd_kind == HA_DEC_SET_STATE ? 0 : d->hd_job;
	} else if (d->hd_kind == HA_DEC_JOB_PAUSE ||
		   d->hd_kind == HA_DEC_JOB_ABORT) {
		/* the job stops: the target keeps its state, with no job */
		int s = srv_find(map, d->hd_target), k = -1;
		uint64_t *job;

		if (s >= 0 && d->hd_dev[0])
			k = dev_find(&map->hm_servers[s], d->hd_dev);
		if (s < 0 || (d->hd_dev[0] && k < 0))
			return err_set(-ENOENT, "ha decision %llu: target "
				       "'%s%s%s' is not in the map",
				       (unsigned long long)d->hd_seq,
				       d->hd_target, d->hd_dev[0] ? "/" : "",
				       d->hd_dev);
		job = k >= 0 ? &map->hm_servers[s].hs_devs[k].hd_job :
			       &map->hm_servers[s].hs_job;
		if (*job != d->hd_job)
			return err_set(-ESTALE, "ha decision %llu: %s of job "
				       "%llu, but the map runs job %llu for "
				       "'%s'", (unsigned long long)d->hd_seq,
				       ha_dec_kind_name(d->hd_kind),
				       (unsigned long long)d->hd_job,
				       (unsigned long long)*job, d->hd_target);
		*job = 0;
	} else if (d->hd_kind == HA_DEC_FREEZE) {
		map->hm_frozen = true;
		map->hm_frozen_ms = now_ms;
		snprintf(map->hm_alert, sizeof map->hm_alert, "%s",
			 d->hd_reason);
	} else if (d->hd_kind == HA_DEC_THAW) {
		map->hm_frozen = false;
		map->hm_frozen_ms = 0;
		map->hm_alert[0] = '\0';
	} else if (d->hd_kind == HA_DEC_ALERT) {
		snprintf(map->hm_alert, sizeof map->hm_alert, "%s",
			 d->hd_reason);
	} else if (d->hd_kind == HA_DEC_HOME_MOVE) {
		int h = srv_find(map, d->hd_target), a = srv_find(map,
								  d->hd_acting);
		struct ha_srv *hs;

		if (h < 0 || (d->hd_acting[0] && a < 0))
			return err_set(-ENOENT, "ha decision %llu: server '%s' "
				       "is not in the map",
				       (unsigned long long)d->hd_seq,
				       h < 0 ? d->hd_target : d->hd_acting);
		hs = &map->hm_servers[h];
		snprintf(hs->hs_acting, sizeof hs->hs_acting, "%s",
			 a == h || a < 0 ? "" : d->hd_acting);
		hs->hs_acting_epoch = map->hm_epoch + 1;
		hs->hs_acting_ms = now_ms;
		hs->hs_acting_inc = d->hd_incarnation;
	}
	map->hm_epoch++;
	return 0;
}

/* ------------------------------------------------------------ replay */

struct replay {
	const struct ha_rules *r;
	const struct ha_event *ev;
	struct ha_map *map;
	ha_replay_cb cb;
	void *arg;
	uint64_t steps;
};

/* Decide at now over ev[0..nr) until nothing more is decided. */
static int replay_at(struct replay *p, uint32_t nr, uint64_t now)
{
	struct ha_decision out[16];
	uint32_t n;
	int rc;

	do {
		if (++p->steps > HA_REPLAY_STEPS_MAX)
			return err_set(-ELOOP, "ha replay: more than %u "
				       "decision rounds", HA_REPLAY_STEPS_MAX);
		rc = ha_decide(p->r, p->ev, nr, p->map, now, out, 16, &n);
		if (rc != 0 && rc != -ENOSPC)
			return rc;
		for (uint32_t i = 0; i < n; i++) {
			int arc = ha_map_apply(p->map, &out[i], now);
			if (arc != 0)
				return arc;
			if (p->cb != NULL && (arc = p->cb(p->arg, &out[i])) != 0)
				return arc;
		}
	} while (n > 0);
	return 0;
}

/* Every deadline up to (not including) before, over ev[0..nr). */
static int replay_until(struct replay *p, uint32_t nr, uint64_t *now,
			uint64_t before)
{
	for (;;) {
		uint64_t d = ha_next_deadline(p->r, p->ev, nr, p->map, *now);
		int rc;

		if (d == UINT64_MAX || d >= before)
			return 0;
		if (d > *now)
			*now = d;
		rc = replay_at(p, nr, *now);
		if (rc != 0)
			return rc;
		if (++p->steps > HA_REPLAY_STEPS_MAX)
			return err_set(-ELOOP, "ha replay: more than %u "
				       "decision rounds", HA_REPLAY_STEPS_MAX);
	}
}

int ha_replay(const struct ha_rules *r, const struct ha_event *ev,
	      uint32_t nr_ev, struct ha_map *map, uint64_t until_ms,
	      ha_replay_cb cb, void *arg)
{
	struct replay p = { r, ev, map, cb, arg, 0 };
	uint64_t now = nr_ev > 0 ? ev[0].he_time_ms : 0;
	int rc = ha_rules_check(r);

	for (uint32_t i = 0; rc == 0 && i < nr_ev; i++) {
		uint64_t t = ev[i].he_time_ms > now ? ev[i].he_time_ms : now;
		rc = replay_until(&p, i, &now, t);
		if (rc == 0) {
			now = t;
			rc = replay_at(&p, i + 1, now);
		}
	}
	if (rc == 0)
		rc = replay_until(&p, nr_ev, &now,
				  until_ms ? until_ms + 1 : UINT64_MAX);
	return rc;
}
