/*
 * analyzer_ut.c — the event analyzer (ha/analyzer.h) over synthetic
 * histories, and the JSON of events, decisions and replay files
 * (ha/ha_json.h): suite "analyzer", module "analyzer" of ut_main.
 *
 * Table-driven: each case is a map, a history and the exact list of
 * decisions the replay (ha_replay(), as the live analyzer runs) must take,
 * with the test rules (ha_rules_init_test(): W 1 s, down-out 5 s, 3 I/O
 * errors in 10 s, 5 flaps in 60 s, reports count 10 s, TRANSIENT 30 s).
 *
 *   map:    "tol=K meta=R s0@e0 s1@e1[d0,d1] s2@e1#5" — servers with
 *           their enclosure, devices in brackets, incarnation after '#'
 *           (meta=R: hm_meta_replicas, homes taken over when R > 1)
 *   event:  "T KIND REPORTER TARGET[/DEV] [inc=N] [count=N] [job=N]
 *           [ep=N]"
 *           (REPORTER "-" for none; seq is the line's index + 1)
 *   expect: "T RULE KIND TARGET[/DEV] STATE" (TARGET "-" for the map),
 *           HOME_MOVE with ">ACTING" after the target
 *
 * Then properties over random histories (fixed seeds; every other one with
 * meta_replicas 3, so homes move and come back): a leader change after
 * any prefix of any step's decisions takes exactly the rest, and the
 * step-by-step run, ha_replay() and a second ha_replay() agree.
 */
#include <CUnit/CUnit.h>
#include <json-c/json.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "ha/analyzer.h"
#include "ha/ha_json.h"
#include "ha/map.h"
#include "tests/ut.h"

#define EV_MAX 64
#define DEC_MAX 64

struct ha_case {
	const char *hc_name;
	const char *hc_map;
	const char *hc_ev[EV_MAX];
	const char *hc_want[DEC_MAX];
};

/* ------------------------------------------------------------ builders */

static void map_build(const char *spec, struct ha_map *m)
{
	char buf[512], *save = NULL;

	memset(m, 0, sizeof *m);
	snprintf(buf, sizeof buf, "%s", spec);
	for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		struct ha_srv *s;
		char *at, *br, *hash;

		if (strncmp(t, "tol=", 4) == 0) {
			m->hm_tolerance = (uint32_t)atoi(t + 4);
			continue;
		}
		if (strncmp(t, "meta=", 5) == 0) {
			m->hm_meta_replicas = (uint32_t)atoi(t + 5);
			continue;
		}
		s = &m->hm_servers[m->hm_nr_servers++];
		if ((hash = strchr(t, '#')) != NULL) {
			*hash = '\0';
			s->hs_incarnation = strtoull(hash + 1, NULL, 10);
		}
		if ((br = strchr(t, '[')) != NULL) {
			char *save2 = NULL;
			*br++ = '\0';
			br[strcspn(br, "]")] = '\0';
			for (char *d = strtok_r(br, ",", &save2); d;
			     d = strtok_r(NULL, ",", &save2))
				snprintf(s->hs_devs[s->hs_nr_devs++].hd_name,
					 HA_NAME_MAX + 1, "%s", d);
		}
		if ((at = strchr(t, '@')) != NULL) {
			*at++ = '\0';
			snprintf(s->hs_enclosure, sizeof s->hs_enclosure, "%s",
				 at);
		}
		snprintf(s->hs_name, sizeof s->hs_name, "%s", t);
	}
}

static void ev_build(const char *spec, uint64_t seq, struct ha_event *e)
{
	char buf[256], kind[32], rep[32], tgt[64], *save = NULL, *slash;
	unsigned long long t;
	int n = 0;

	memset(e, 0, sizeof *e);
	CU_ASSERT_FATAL(sscanf(spec, "%llu %31s %31s %63s%n", &t, kind, rep,
			       tgt, &n) == 4);
	e->he_seq = seq;
	e->he_time_ms = t;
	CU_ASSERT_FATAL(ha_ev_kind_parse(kind) >= 0);
	e->he_kind = ha_ev_kind_parse(kind);
	if (strcmp(rep, "-") != 0)
		snprintf(e->he_reporter, sizeof e->he_reporter, "%s", rep);
	if ((slash = strchr(tgt, '/')) != NULL) {
		*slash = '\0';
		snprintf(e->he_dev, sizeof e->he_dev, "%.31s", slash + 1);
	}
	if (strcmp(tgt, "-") != 0)
		snprintf(e->he_target, sizeof e->he_target, "%.31s", tgt);
	snprintf(buf, sizeof buf, "%s", spec + n);
	for (char *o = strtok_r(buf, " ", &save); o; o = strtok_r(NULL, " ", &save)) {
		if (strncmp(o, "inc=", 4) == 0)
			e->he_incarnation = strtoull(o + 4, NULL, 10);
		else if (strncmp(o, "count=", 6) == 0)
			e->he_count = (uint32_t)atoi(o + 6);
		else if (strncmp(o, "job=", 4) == 0)
			e->he_job = strtoull(o + 4, NULL, 10);
		else if (strncmp(o, "ep=", 3) == 0)
			e->he_epoch = strtoull(o + 3, NULL, 10);
		else if (strncmp(o, "insync=", 7) == 0)
			e->he_insync = strtoull(o + 7, NULL, 0);
		else
			CU_FAIL_FATAL("bad event option");
	}
}

/* A decision as the expect lines write it. */
static void dec_text(const struct ha_decision *d, char *buf, size_t size)
{
	snprintf(buf, size, "%llu %s %s %s%s%s%s%s %s",
		 (unsigned long long)d->hd_time_ms, d->hd_rule,
		 ha_dec_kind_name(d->hd_kind),
		 d->hd_target[0] ? d->hd_target : "-", d->hd_dev[0] ? "/" : "",
		 d->hd_dev, d->hd_kind == HA_DEC_HOME_MOVE ? ">" : "",
		 d->hd_acting, ha_state_name(d->hd_state));
}

#define GOT_MAX 512

struct got {
	struct ha_decision g_dec[GOT_MAX];
	uint32_t g_nr;
};

static int got_cb(void *arg, const struct ha_decision *d)
{
	struct got *g = arg;

	if (g->g_nr == GOT_MAX)
		return -ENOSPC;
	g->g_dec[g->g_nr++] = *d;
	return 0;
}

static uint32_t case_events(const struct ha_case *c, struct ha_event *ev)
{
	uint32_t n = 0;

	while (n < EV_MAX && c->hc_ev[n] != NULL) {
		ev_build(c->hc_ev[n], n + 1, &ev[n]);
		n++;
	}
	return n;
}

/* Replay case c; the decisions must be exactly c->hc_want.  Returns the
 * decisions that differ from it (0: the case holds). */
static uint32_t case_run(const struct ha_case *c, struct got *g)
{
	static struct ha_event ev[EV_MAX];
	static struct ha_map m;
	struct ha_rules r;
	uint32_t nr = case_events(c, ev), nw = 0, differ = 0;
	char text[256];
	int rc;

	ha_rules_init_test(&r);
	map_build(c->hc_map, &m);
	memset(g, 0, sizeof *g);
	rc = ha_replay(&r, ev, nr, &m, 0, got_cb, g);
	CU_ASSERT_EQUAL(rc, 0);
	while (nw < DEC_MAX && c->hc_want[nw] != NULL)
		nw++;
	for (uint32_t i = 0; i < g->g_nr || i < nw; i++) {
		if (i < g->g_nr)
			dec_text(&g->g_dec[i], text, sizeof text);
		else
			snprintf(text, sizeof text, "(none)");
		if (i >= nw || strcmp(text, c->hc_want[i]) != 0) {
			printf("\n  case %s: decision %u: got '%s', want '%s' (%s)",
			       c->hc_name, i, text,
			       i < nw ? c->hc_want[i] : "(none)",
			       i < g->g_nr ? g->g_dec[i].hd_reason : "");
			CU_FAIL("decision differs");
			differ++;
		}
	}
	/* seqs are the epochs they make, job ids their seqs */
	for (uint32_t i = 0; i < g->g_nr; i++) {
		CU_ASSERT_EQUAL(g->g_dec[i].hd_seq, i + 1);
		if (g->g_dec[i].hd_kind == HA_DEC_JOB_REPAIR ||
		    g->g_dec[i].hd_kind == HA_DEC_JOB_REBALANCE)
			CU_ASSERT_EQUAL(g->g_dec[i].hd_job, g->g_dec[i].hd_seq);
	}
	CU_ASSERT_EQUAL(m.hm_epoch, g->g_nr);
	/* and then nothing is due */
	CU_ASSERT_EQUAL(ha_next_deadline(&r, ev, nr, &m, UINT64_MAX - 1),
			UINT64_MAX);
	return differ;
}

/* ------------------------------------------------------------ cases */

static const struct ha_case cases[] = {
{ "server_loss", "tol=1 s0@e0 s1@e1 s2@e2", {
	"10000 SRV_UNREACHABLE s0 s2",
	"10500 SRV_UNREACHABLE s1 s2",
	"30000 JOB_DONE - s2 job=3",
	"40000 SRV_JOINED s2 s2 inc=2",
	"50000 JOB_DONE - s2 job=5" }, {
	"11500 server-down SET_STATE s2 FAILED",
	"16500 down-out SET_STATE s2 OUT",
	"16500 repair JOB_REPAIR s2 REPAIRING",
	"30000 job SET_STATE s2 REPAIRED",
	"41000 rebalance JOB_REBALANCE s2 REBALANCING",
	"50000 job SET_STATE s2 ONLINE" } },
/* two reporters of one enclosure are one: no quorum */
{ "same_enclosure_reporters", "tol=1 s0@e0 s1@e0 s2@e2", {
	"10000 SRV_UNREACHABLE s0 s2",
	"10100 SRV_UNREACHABLE s1 s2" }, { NULL } },
/* one reporter: a suspicion that expires; a second one after the first
 * expired is no quorum either; a withdrawn report counts for nothing */
{ "one_reporter", "tol=1 s0@e0 s1@e1 s2@e2", {
	"10000 SRV_UNREACHABLE s0 s2",
	"25000 SRV_UNREACHABLE s1 s2",
	"40000 SRV_UNREACHABLE s0 s2",
	"40200 SRV_REACHABLE s0 s2",
	"40400 SRV_UNREACHABLE s1 s2" }, { NULL } },
{ "direct_proof", "tol=1 s0@e0 s1@e1#1 s2@e2", {
	"10000 SRV_EXIT s0 s1 inc=1" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING" } },
{ "lease_expired", "tol=1 s0@e0 s1@e1 s2@e2", {
	"10000 SRV_LEASE_EXPIRED s0 s1",
	"12000 SRV_JOINED s1 s1 inc=2" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"13000 return SET_STATE s1 ONLINE" } },
{ "device_loss", "tol=1 s0@e0[d0,d1] s1@e1[d0,d1] s2@e2[d0,d1]", {
	"10000 DEV_FAILED s1 s1/d0",
	"20000 JOB_DONE - s1/d0 job=3",
	"30000 OP_REPLACE operator s1/d0",
	"35000 JOB_DONE - s1/d0 job=5" }, {
	"11000 device-failed SET_STATE s1/d0 FAILED",
	"16000 down-out SET_STATE s1/d0 OUT",
	"16000 repair JOB_REPAIR s1/d0 REPAIRING",
	"20000 job SET_STATE s1/d0 REPAIRED",
	"30000 rebalance JOB_REBALANCE s1/d0 REBALANCING",
	"35000 job SET_STATE s1/d0 ONLINE" } },
{ "ioerr_below", "tol=1 s0@e0[d0] s1@e1[d0]", {
	"10000 DEV_IOERR s1 s1/d0 count=1",
	"11000 DEV_IOERR s0 s0/d0 count=1",
	"12000 DEV_IOERR s1 s1/d0 count=1",
	"25000 DEV_IOERR s1 s1/d0 count=1",
	"40000 DEV_IOERR s1 s1/d0 count=2" }, { NULL } },
{ "ioerr_above", "tol=1 s0@e0[d0] s1@e1[d0,d1]", {
	"10000 DEV_IOERR s1 s1/d0 count=1",
	"11000 DEV_IOERR s1 s1/d0 count=1",
	"12000 DEV_IOERR s1 s1/d0 count=1",
	"12500 DEV_IOERR s1 s1/d0 count=1",
	"60000 DEV_IOERR s0 s0/d0 count=7" }, {
	"13500 io-errors SET_STATE s1/d0 FAILED",
	"18500 down-out SET_STATE s1/d0 OUT",
	"18500 repair JOB_REPAIR s1/d0 REPAIRING",
	"61000 freeze FREEZE s0/d0 ONLINE",
	"61000 pause JOB_PAUSE s1/d0 REPAIRING" } },
/* a power cycle of enclosure e1: its servers TRANSIENT, no repair, back
 * ONLINE; e3 never comes back: FAILED after 30 s, then out */
{ "enclosure_power_cycle", "tol=4 s0@e0 s1@e1 s2@e1 s3@e2 s4@e3 s5@e3", {
	"10000 SRV_LEASE_EXPIRED s0 s1",
	"10300 SRV_LEASE_EXPIRED s0 s2",
	"20000 SRV_JOINED s1 s1 inc=2",
	"20500 SRV_JOINED s2 s2 inc=2",
	"50000 SRV_UNREACHABLE s0 s4",
	"50100 SRV_UNREACHABLE s3 s4",
	"50200 SRV_UNREACHABLE s0 s5",
	"50300 SRV_UNREACHABLE s3 s5" }, {
	"11000 enclosure SET_STATE s1 TRANSIENT",
	"11300 enclosure SET_STATE s2 TRANSIENT",
	"21000 return SET_STATE s1 ONLINE",
	"21500 return SET_STATE s2 ONLINE",
	"51100 enclosure SET_STATE s4 TRANSIENT",
	"51300 enclosure SET_STATE s5 TRANSIENT",
	"81100 enclosure SET_STATE s4 FAILED",
	"81300 enclosure SET_STATE s5 FAILED",
	"86100 down-out SET_STATE s4 OUT",
	"86100 repair JOB_REPAIR s4 REPAIRING",
	"86300 down-out SET_STATE s5 OUT",
	"86300 repair JOB_REPAIR s5 REPAIRING" } },
/* one server at a time down and up within the quiet window */
{ "rolling_restart", "tol=1 s0@e0#1 s1@e1#1 s2@e2#1 s3@e3#1", {
	"10000 SRV_EXIT s1 s0 inc=1",
	"10100 SRV_UNREACHABLE s1 s0 inc=1",
	"10600 SRV_JOINED s0 s0 inc=2",
	"10700 SRV_REACHABLE s1 s0 inc=2",
	"30000 SRV_EXIT s0 s1 inc=1",
	"30100 SRV_UNREACHABLE s2 s1 inc=1",
	"30200 SRV_UNREACHABLE s3 s1 inc=1",
	"30700 SRV_JOINED s1 s1 inc=2",
	"50000 SRV_EXIT s0 s2 inc=1",
	"50400 SRV_JOINED s2 s2 inc=2",
	"70000 SRV_LEASE_EXPIRED s0 s3 inc=1",
	"70800 SRV_JOINED s3 s3 inc=2" }, { NULL } },
/* the same, each restart longer than the quiet window but shorter than
 * the down-out delay: FAILED and back, never OUT */
{ "rolling_restart_slow", "tol=1 s0@e0#1 s1@e1#1 s2@e2#1", {
	"10000 SRV_EXIT s1 s0 inc=1",
	"13000 SRV_JOINED s0 s0 inc=2",
	"30000 SRV_UNREACHABLE s0 s1 inc=1",
	"30100 SRV_UNREACHABLE s2 s1 inc=1",
	"32000 SRV_JOINED s1 s1 inc=2",
	"50000 SRV_LEASE_EXPIRED s0 s2 inc=1",
	"53500 SRV_JOINED s2 s2 inc=2" }, {
	"11000 server-down SET_STATE s0 FAILED",
	"14000 return SET_STATE s0 ONLINE",
	"31100 server-down SET_STATE s1 FAILED",
	"33000 return SET_STATE s1 ONLINE",
	"51000 server-down SET_STATE s2 FAILED",
	"54500 return SET_STATE s2 ONLINE" } },
/* five down/up in a minute: QUARANTINED at once, never repaired; back
 * ONLINE once up and quiet for the flap period */
{ "flapping", "tol=1 s0@e0 s1@e1#1 s2@e2", {
	"10000 SRV_EXIT s0 s1 inc=1",
	"10300 SRV_JOINED s1 s1 inc=2",
	"12000 SRV_EXIT s0 s1 inc=2",
	"12300 SRV_JOINED s1 s1 inc=3",
	"14000 SRV_EXIT s0 s1 inc=3",
	"14300 SRV_JOINED s1 s1 inc=4",
	"16000 SRV_EXIT s0 s1 inc=4",
	"16300 SRV_JOINED s1 s1 inc=5",
	"18000 SRV_EXIT s0 s1 inc=5",
	"100000 SRV_JOINED s1 s1 inc=6" }, {
	"18000 flapping SET_STATE s1 QUARANTINED",
	"101000 flapping SET_STATE s1 ONLINE" } },
/* five planned restarts in a minute (each a clean stop, its lease given
 * back, a new run): not flapping, nothing decided; a crash after them is
 * one down episode, not the sixth */
{ "planned_restarts", "tol=1 s0@e0 s1@e1#1 s2@e2", {
	"10000 SRV_STOPPED s1 s1 inc=1",
	"10050 SRV_LEASE_EXPIRED s0 s1 inc=1",
	"10300 SRV_JOINED s1 s1 inc=2",
	"12000 SRV_STOPPED s1 s1 inc=2",
	"12050 SRV_LEASE_EXPIRED s0 s1 inc=2",
	"12300 SRV_JOINED s1 s1 inc=3",
	"14000 SRV_STOPPED s1 s1 inc=3",
	"14050 SRV_LEASE_EXPIRED s0 s1 inc=3",
	"14300 SRV_JOINED s1 s1 inc=4",
	"16000 SRV_STOPPED s1 s1 inc=4",
	"16050 SRV_LEASE_EXPIRED s0 s1 inc=4",
	"16300 SRV_JOINED s1 s1 inc=5",
	"18000 SRV_STOPPED s1 s1 inc=5",
	"18050 SRV_LEASE_EXPIRED s0 s1 inc=5",
	"18300 SRV_JOINED s1 s1 inc=6",
	"20000 SRV_LEASE_EXPIRED s0 s1 inc=6",
	"20300 SRV_JOINED s1 s1 inc=7" }, {
	NULL } },
/* a clean stop is proof the server is down: failed after the quiet
 * window like an exit, back ONLINE when it joins again */
{ "stopped_down", "tol=1 s0@e0 s1@e1#1 s2@e2", {
	"10000 SRV_STOPPED s1 s1 inc=1",
	"10050 SRV_LEASE_EXPIRED s0 s1 inc=1",
	"13000 SRV_JOINED s1 s1 inc=2" }, {
	"11050 server-down SET_STATE s1 FAILED",
	"14000 return SET_STATE s1 ONLINE" } },
/* a single clean stop is failed as before (its home moves at once),
 * also when another server stopped long before it and is back: not one
 * stop (rule restart; the stop of the whole cluster: test restart) */
{ "stop_alone", "tol=1 s0@e0#1 s1@e1#1 s2@e2#1", {
	"10000 SRV_STOPPED s0 s0 inc=1",
	"12000 SRV_JOINED s0 s0 inc=2",
	"20000 SRV_STOPPED s1 s1 inc=1",
	"25000 SRV_JOINED s1 s1 inc=2" }, {
	"11000 server-down SET_STATE s0 FAILED",
	"13000 return SET_STATE s0 ONLINE",
	"21000 server-down SET_STATE s1 FAILED",
	"26000 return SET_STATE s1 ONLINE" } },
/* a quarantined server failed by the operator is repaired (and not
 * quarantined again for the same episodes); added back while its repair
 * runs, it is rebalanced once the repair is done */
{ "quarantine_operator", "tol=1 s0@e0 s1@e1#1 s2@e2", {
	"10000 SRV_EXIT s0 s1 inc=1",
	"10300 SRV_JOINED s1 s1 inc=2",
	"12000 SRV_EXIT s0 s1 inc=2",
	"12300 SRV_JOINED s1 s1 inc=3",
	"14000 SRV_EXIT s0 s1 inc=3",
	"14300 SRV_JOINED s1 s1 inc=4",
	"16000 SRV_EXIT s0 s1 inc=4",
	"16300 SRV_JOINED s1 s1 inc=5",
	"18000 SRV_EXIT s0 s1 inc=5",
	"30000 OP_FAIL operator s1",
	"40000 OP_ADD operator s1",
	"45000 JOB_DONE - s1 job=4" }, {
	"18000 flapping SET_STATE s1 QUARANTINED",
	"30000 operator SET_STATE s1 FAILED",
	"35000 down-out SET_STATE s1 OUT",
	"35000 repair JOB_REPAIR s1 REPAIRING",
	"45000 job SET_STATE s1 REPAIRED",
	"45000 rebalance JOB_REBALANCE s1 REBALANCING" } },
/* a quarantined server that is up, taken back by the operator */
{ "quarantine_add", "tol=1 s0@e0 s1@e1#1 s2@e2", {
	"10000 SRV_EXIT s0 s1 inc=1",
	"10300 SRV_JOINED s1 s1 inc=2",
	"12000 SRV_EXIT s0 s1 inc=2",
	"12300 SRV_JOINED s1 s1 inc=3",
	"14000 SRV_EXIT s0 s1 inc=3",
	"14300 SRV_JOINED s1 s1 inc=4",
	"16000 SRV_EXIT s0 s1 inc=4",
	"16300 SRV_JOINED s1 s1 inc=5",
	"18000 SRV_EXIT s0 s1 inc=5",
	"18300 SRV_JOINED s1 s1 inc=6",
	"20000 OP_ADD operator s1" }, {
	"18000 flapping SET_STATE s1 QUARANTINED",
	"20000 flapping SET_STATE s1 ONLINE" } },
/* two devices of one server fail together: TRANSIENT, no repair; still
 * failed after 30 s: FAILED, then out */
{ "device_enclosure", "tol=2 s0@e0[d0] s1@e1[d0,d1] s2@e2[d0]", {
	"10000 DEV_FAILED s1 s1/d0",
	"10200 DEV_FAILED s1 s1/d1" }, {
	"11000 enclosure SET_STATE s1/d0 TRANSIENT",
	"11200 enclosure SET_STATE s1/d1 TRANSIENT",
	"41000 enclosure SET_STATE s1/d0 FAILED",
	"41200 enclosure SET_STATE s1/d1 FAILED",
	"46000 down-out SET_STATE s1/d0 OUT",
	"46000 repair JOB_REPAIR s1/d0 REPAIRING",
	"46200 down-out SET_STATE s1/d1 OUT",
	"46200 repair JOB_REPAIR s1/d1 REPAIRING" } },
/* back while its repair runs: rebalanced after it; down again while
 * rebalancing: FAILED (the late end of the rebalance counts for nothing) */
{ "return_during_repair", "tol=1 s0@e0 s1@e1#1 s2@e2", {
	"10000 SRV_EXIT s0 s1 inc=1",
	"18000 SRV_JOINED s1 s1 inc=2",
	"25000 JOB_DONE - s1 job=3",
	"27000 SRV_EXIT s0 s1 inc=2",
	"29000 JOB_DONE - s1 job=5" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING",
	"25000 job SET_STATE s1 REPAIRED",
	"25000 rebalance JOB_REBALANCE s1 REBALANCING",
	"28000 job-abort JOB_ABORT s1 REBALANCING",
	"28000 server-down SET_STATE s1 FAILED",
	"33000 down-out SET_STATE s1 OUT",
	"33000 repair JOB_REPAIR s1 REPAIRING" } },
/* reports that never stop: the merge ends 5 s after the burst began */
{ "merge_max", "tol=1 s0@e0 s1@e1 s2@e2", {
	"10000 SRV_UNREACHABLE s0 s1",
	"10500 SRV_UNREACHABLE s2 s1",
	"11000 SRV_UNREACHABLE s0 s1",
	"11500 SRV_UNREACHABLE s2 s1",
	"12000 SRV_UNREACHABLE s0 s1",
	"12500 SRV_UNREACHABLE s2 s1",
	"13000 SRV_UNREACHABLE s0 s1",
	"13500 SRV_UNREACHABLE s2 s1",
	"14000 SRV_UNREACHABLE s0 s1",
	"14500 SRV_UNREACHABLE s2 s1" }, {
	"15000 server-down SET_STATE s1 FAILED",
	"20000 down-out SET_STATE s1 OUT",
	"20000 repair JOB_REPAIR s1 REPAIRING" } },
/* a second failure with tolerance 1: freeze, nothing excluded (s1 is not
 * taken out after its delay); the operator thaws: both are handled */
{ "beyond_tolerance", "tol=1 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_EXIT s0 s1",
	"12000 SRV_EXIT s0 s2",
	"20000 OP_THAW operator -" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"13000 freeze FREEZE s2 ONLINE",
	"20000 thaw THAW - ONLINE",
	"20000 down-out SET_STATE s1 OUT",
	"20000 repair JOB_REPAIR s1 REPAIRING",
	"20000 server-down SET_STATE s2 FAILED",
	"25000 down-out SET_STATE s2 OUT",
	"25000 repair JOB_REPAIR s2 REPAIRING" } },
/* events of an older run are dropped */
{ "stale_incarnation", "tol=1 s0@e0 s1@e1#5 s2@e2", {
	"10000 SRV_EXIT s0 s1 inc=4",
	"10100 SRV_UNREACHABLE s0 s1 inc=4",
	"10200 SRV_UNREACHABLE s2 s1 inc=4",
	"20000 SRV_EXIT s0 s1 inc=5",
	"24000 SRV_JOINED s1 s1 inc=6",
	"32000 SRV_EXIT s0 s1 inc=5",
	"32100 SRV_LEASE_EXPIRED s0 s1 inc=5" }, {
	"21000 server-down SET_STATE s1 FAILED",
	"25000 return SET_STATE s1 ONLINE" } },
/* a failed repair: alert, FAILED again, repaired again after the delay;
 * the end of the old job, late, counts for nothing */
{ "job_failed", "tol=1 s0@e0 s1@e1 s2@e2", {
	"10000 SRV_EXIT s0 s1",
	"20000 JOB_FAILED - s1 job=3",
	"26000 JOB_DONE - s1 job=3",
	"30000 JOB_DONE - s1 job=7",
	"31000 JOB_DONE - s1 job=3" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING",
	"20000 job ALERT s1 REPAIRING",
	"20000 job SET_STATE s1 FAILED",
	"25000 down-out SET_STATE s1 OUT",
	"25000 repair JOB_REPAIR s1 REPAIRING",
	"30000 job SET_STATE s1 REPAIRED" } },
/* operator: drain, add back, add a new server, fail a device at once,
 * replace it before its repair */
{ "operator", "tol=2 s0@e0[d0] s1@e1 s2@e2 s3@e3", {
	"10000 OP_DRAIN operator s1",
	"15000 JOB_DONE - s1 job=2",
	"20000 OP_ADD operator s1",
	"25000 JOB_DONE - s1 job=4",
	"30000 OP_ADD operator s3",
	"40000 OP_FAIL operator s0/d0",
	"41000 OP_REPLACE operator s0/d0" }, {
	"10000 drain SET_STATE s1 OUT",
	"10000 repair JOB_REPAIR s1 REPAIRING",
	"15000 job SET_STATE s1 REPAIRED",
	"20000 rebalance JOB_REBALANCE s1 REBALANCING",
	"25000 job SET_STATE s1 ONLINE",
	"30000 rebalance JOB_REBALANCE s3 REBALANCING",
	"40000 operator SET_STATE s0/d0 FAILED",
	"41000 replace SET_STATE s0/d0 OUT",
	"41000 repair JOB_REPAIR s0/d0 REPAIRING" } },
/* rules pause and resume: a repair runs (job 3) when two more servers
 * fail beyond the tolerance: the map freezes and the job is paused (the
 * late end of the paused job counts for nothing); the operator thaws:
 * the others are handled and the repair starts again (a new job, 11,
 * after the server rules of the round) */
{ "freeze_pauses_job", "tol=2 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_EXIT s0 s1",
	"20000 SRV_EXIT s0 s2",
	"22000 SRV_EXIT s0 s3",
	"24000 JOB_DONE - s1 job=3",
	"30000 OP_THAW operator -",
	"35000 JOB_DONE - s1 job=3",
	"36000 JOB_DONE - s1 job=11" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING",
	"21000 server-down SET_STATE s2 FAILED",
	"23000 freeze FREEZE s3 ONLINE",
	"23000 pause JOB_PAUSE s1 REPAIRING",
	"30000 thaw THAW - ONLINE",
	"30000 down-out SET_STATE s2 OUT",
	"30000 repair JOB_REPAIR s2 REPAIRING",
	"30000 server-down SET_STATE s3 FAILED",
	"30000 resume JOB_REPAIR s1 REPAIRING",
	"35000 down-out SET_STATE s3 OUT",
	"35000 repair JOB_REPAIR s3 REPAIRING",
	"36000 job SET_STATE s1 REPAIRED" } },
/* rule job-abort: the operator drains a server while units move onto it
 * (its rebalance job 1): the job is aborted, then the drain takes it OUT
 * and its repair starts; the aborted job's end counts for nothing */
{ "drain_aborts_rebalance", "tol=2 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 OP_ADD operator s3",
	"12000 OP_DRAIN operator s3",
	"13000 JOB_DONE - s3 job=1",
	"14000 JOB_DONE - s3 job=4" }, {
	"10000 rebalance JOB_REBALANCE s3 REBALANCING",
	"12000 job-abort JOB_ABORT s3 REBALANCING",
	"12000 drain SET_STATE s3 OUT",
	"12000 repair JOB_REPAIR s3 REPAIRING",
	"14000 job SET_STATE s3 REPAIRED" } },
/* rule home: a home whose server fails on proof moves to its first
 * ONLINE standby (ha_home_standbys: s1's are s2, s3 here); the repair
 * runs as ever; the server back and in sync (its own HOME_READY, of its
 * current run, newer than the move) takes its home back: a HOME_READY
 * before its restart, from another reporter or of an older run does not
 * count */
{ "home_takeover", "tol=1 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_LEASE_EXPIRED s0 s1",
	"12000 HOME_READY s1 s1",
	"20000 JOB_DONE - s1 job=4",
	"30000 SRV_JOINED s1 s1 inc=7",
	"33000 HOME_READY s2 s1",
	"34000 HOME_READY s1 s1 inc=6",
	"35000 HOME_READY s1 s1 inc=7" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"11000 home HOME_MOVE s1>s2 ONLINE",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING",
	"20000 job SET_STATE s1 REPAIRED",
	"31000 rebalance JOB_REBALANCE s1 REBALANCING",
	"35000 home HOME_MOVE s1>s1 ONLINE" } },
/* the home recorded its standbys in sync (HOME_INSYNC: s3 alone, s2
 * dropped): when it dies its home moves to s3, not to its first ONLINE
 * standby s2, whose copy may miss acknowledged writes */
{ "home_insync", "tol=1 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", {
	"5000 HOME_INSYNC s1 s1 insync=0x8",
	"10000 SRV_LEASE_EXPIRED s0 s1" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"11000 home HOME_MOVE s1>s3 ONLINE",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING" } },
/* a record counts only from the server serving the home (s2 does not
 * serve s1's), and a standby in it that is not ONLINE is passed over:
 * the first ONLINE standby, s2, takes the home */
{ "home_insync_not_serving", "tol=1 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", {
	"5000 HOME_INSYNC s2 s1 insync=0x8",
	"10000 SRV_LEASE_EXPIRED s0 s1" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"11000 home HOME_MOVE s1>s2 ONLINE",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING" } },
/* two reporters in two enclosures are proof too; a home returns only to
 * its server in sync: a server merely back (return) leaves it where it
 * is */
{ "home_reporters", "tol=1 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_UNREACHABLE s0 s2",
	"10100 SRV_UNREACHABLE s1 s2",
	"13000 SRV_JOINED s2 s2 inc=9" }, {
	"11100 server-down SET_STATE s2 FAILED",
	"11100 home HOME_MOVE s2>s1 ONLINE",
	"14000 return SET_STATE s2 ONLINE" } },
/* one reporter is a suspicion: nothing moves */
{ "home_suspicion", "tol=1 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_UNREACHABLE s0 s2" }, {
	NULL } },
/* the acting server fails in turn: the home it acted for moves on to the
 * next ONLINE standby (s1's: s2, s3), its own to its first ONLINE one
 * (s2's: s1 is down, s0) */
{ "home_acting_fails", "tol=2 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_EXIT s0 s1",
	"12000 SRV_EXIT s0 s2" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"11000 home HOME_MOVE s1>s2 ONLINE",
	"13000 server-down SET_STATE s2 FAILED",
	"13000 home HOME_MOVE s1>s3 ONLINE",
	"13000 home HOME_MOVE s2>s0 ONLINE",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING",
	"18000 down-out SET_STATE s2 OUT",
	"18000 repair JOB_REPAIR s2 REPAIRING" } },
/* a handback the home cannot take is cancelled: s2, acting for s1 since
 * epoch 2, froze it for s1's copy (HOME_FROZEN of that epoch); s1 died
 * before its HOME_READY, so W + the merge max (5 s) after the freeze the
 * home is given to s2 again at a new epoch (5), which unfreezes it there;
 * a HOME_READY of a copy of the old epoch then moves nothing (whatever
 * the clocks say), one of the new epoch's copy does.  A freeze by a
 * server that no longer acts, or of another epoch, cancels nothing. */
{ "home_handback_cancelled", "tol=1 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_EXIT s0 s1",
	"12000 SRV_JOINED s1 s1 inc=7",
	"12500 HOME_FROZEN s2 s1 ep=2",
	"12600 HOME_FROZEN s3 s1 ep=2",
	"14000 SRV_EXIT s0 s1 inc=7",
	"18500 SRV_JOINED s1 s1 inc=8",
	"19800 HOME_READY s1 s1 inc=8 ep=2",
	"20500 HOME_FROZEN s2 s1 ep=5",
	"21000 HOME_READY s1 s1 inc=8 ep=5" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"11000 home HOME_MOVE s1>s2 ONLINE",
	"13000 return SET_STATE s1 ONLINE",
	"15000 server-down SET_STATE s1 FAILED",
	"17500 home HOME_MOVE s1>s2 ONLINE",
	"19500 return SET_STATE s1 ONLINE",
	"21000 home HOME_MOVE s1>s1 ONLINE" } },
/* a quarantined home (it flapped, and runs) takes no handback: s2's
 * freeze for the copy s1 made is cancelled at once (a QUARANTINED server
 * is up again only after the flap period), the copy's HOME_READY moves
 * nothing; once s1 is ONLINE again (stable for the flap period) a new
 * copy, of the new epoch, takes the home back */
{ "home_handback_quarantined", "tol=1 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_EXIT s0 s1",
	"10200 SRV_JOINED s1 s1 inc=2",
	"10400 SRV_EXIT s0 s1 inc=2",
	"10600 SRV_JOINED s1 s1 inc=3",
	"10800 SRV_EXIT s0 s1 inc=3",
	"11000 SRV_JOINED s1 s1 inc=4",
	"11200 SRV_EXIT s0 s1 inc=4",
	"11400 SRV_JOINED s1 s1 inc=5",
	"11600 SRV_EXIT s0 s1 inc=5",
	"11800 SRV_JOINED s1 s1 inc=6",
	"13000 HOME_FROZEN s2 s1 ep=2",
	"13500 HOME_READY s1 s1 inc=6 ep=2",
	"72500 HOME_FROZEN s2 s1 ep=3",
	"73000 HOME_READY s1 s1 inc=6 ep=3" }, {
	"11600 flapping SET_STATE s1 QUARANTINED",
	"11600 home HOME_MOVE s1>s2 ONLINE",
	"13000 home HOME_MOVE s1>s2 ONLINE",
	"71600 flapping SET_STATE s1 ONLINE",
	"73000 home HOME_MOVE s1>s1 ONLINE" } },
/* a home back while its repair runs takes no handback before its
 * repair ends: s2's freeze for s1's copy is cancelled at once (the
 * repair walk of s1's home on s2 would otherwise wait on the frozen
 * engine for the merge max); after the repair, s1 up and rebalancing, a
 * copy of the new epoch takes the home back */
{ "home_handback_repairing", "tol=1 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_EXIT s0 s1",
	"18000 SRV_JOINED s1 s1 inc=2",
	"18500 HOME_FROZEN s2 s1 ep=2",
	"19000 HOME_READY s1 s1 inc=2 ep=2",
	"25000 JOB_DONE - s1 job=4",
	"27000 HOME_FROZEN s2 s1 ep=5",
	"27500 HOME_READY s1 s1 inc=2 ep=5" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"11000 home HOME_MOVE s1>s2 ONLINE",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING",
	"18500 home HOME_MOVE s1>s2 ONLINE",
	"25000 job SET_STATE s1 REPAIRED",
	"25000 rebalance JOB_REBALANCE s1 REBALANCING",
	"27500 home HOME_MOVE s1>s1 ONLINE" } },
/* a frozen map moves no home: the second failure freezes it, so its
 * server keeps its state and its home (and the one it acts for) stay;
 * after the thaw both move */
{ "home_frozen", "tol=1 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_EXIT s0 s1",
	"10500 SRV_EXIT s0 s2",
	"12000 HOME_READY s1 s1",
	"20000 OP_THAW operator -" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"11000 home HOME_MOVE s1>s2 ONLINE",
	"11500 freeze FREEZE s2 ONLINE",
	"20000 thaw THAW - ONLINE",
	"20000 down-out SET_STATE s1 OUT",
	"20000 repair JOB_REPAIR s1 REPAIRING",
	"20000 server-down SET_STATE s2 FAILED",
	"20000 home HOME_MOVE s1>s3 ONLINE",
	"20000 home HOME_MOVE s2>s0 ONLINE",
	"25000 down-out SET_STATE s2 OUT",
	"25000 repair JOB_REPAIR s2 REPAIRING" } },
/* never to a standby that is not ONLINE: with meta=2 s3's only standby is
 * s1, down, so s3's home stays; meta=1 never moves a home */
{ "home_no_standby", "tol=2 meta=2 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_EXIT s0 s1",
	"12000 SRV_EXIT s0 s3" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"11000 home HOME_MOVE s1>s2 ONLINE",
	"13000 server-down SET_STATE s3 FAILED",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING",
	"18000 down-out SET_STATE s3 OUT",
	"18000 repair JOB_REPAIR s3 REPAIRING" } },
/* as home_no_standby, but s3 is alive when s1 goes OUT: s2 replaces s1
 * as s3's standby (lost for good), s3 records it in sync, and when s3
 * dies in turn its home moves to s2.  A replacement named by no record
 * is never chosen (home_no_standby: s2 became s3's standby after s3 had
 * died) */
{ "home_insync_replacement", "tol=2 meta=2 s0@e0 s1@e1 s2@e2 s3@e3", {
	"10000 SRV_EXIT s0 s1",
	"17000 HOME_INSYNC s3 s3 insync=0x4",
	"20000 SRV_EXIT s0 s3" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"11000 home HOME_MOVE s1>s2 ONLINE",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING",
	"21000 server-down SET_STATE s3 FAILED",
	"21000 home HOME_MOVE s3>s2 ONLINE",
	"26000 down-out SET_STATE s3 OUT",
	"26000 repair JOB_REPAIR s3 REPAIRING" } },
{ "home_meta1", "tol=1 meta=1 s0@e0 s1@e1 s2@e2", {
	"10000 SRV_EXIT s0 s1" }, {
	"11000 server-down SET_STATE s1 FAILED",
	"16000 down-out SET_STATE s1 OUT",
	"16000 repair JOB_REPAIR s1 REPAIRING" } },
};

#define NR_CASES (sizeof cases / sizeof cases[0])

static void test_cases(void)
{
	static struct got g;

	for (size_t i = 0; i < NR_CASES; i++)
		CU_ASSERT_EQUAL(case_run(&cases[i], &g), 0);
}

/* ------------------------------------------------------------ properties */

/* The same input twice gives the same output, byte for byte; decide is
 * the same whatever else ran between. */
static void test_determinism(void)
{
	static struct got a, b;
	static struct ha_event ev[EV_MAX];
	static struct ha_map m;
	struct ha_decision d1[DEC_MAX], d2[DEC_MAX];
	struct ha_rules r;
	uint32_t n1, n2, nr;

	for (size_t i = 0; i < NR_CASES; i++) {
		case_run(&cases[i], &a);
		case_run(&cases[i], &b);
		CU_ASSERT_EQUAL(a.g_nr, b.g_nr);
		CU_ASSERT(memcmp(a.g_dec, b.g_dec, sizeof a.g_dec) == 0);
	}
	ha_rules_init_test(&r);
	nr = case_events(&cases[0], ev);
	nr = 2; /* the events up to 11500 */
	map_build(cases[0].hc_map, &m);
	memset(d1, 0xa5, sizeof d1);
	memset(d2, 0x5a, sizeof d2);
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 11500, d1, DEC_MAX, &n1), 0);
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 11500, d2, DEC_MAX, &n2), 0);
	CU_ASSERT_EQUAL(n1, 1);
	CU_ASSERT_EQUAL(n1, n2);
	CU_ASSERT(memcmp(d1, d2, n1 * sizeof d1[0]) == 0);
}

/* The analyzer dies after applying part of its decisions; the next leader
 * decides over the same history with the map as it is: it takes only the
 * rest, with the same seqs and job ids, and then nothing. */
static void test_leader_change(void)
{
	static struct ha_event ev[EV_MAX];
	static struct ha_map m, full;
	struct ha_decision d[8], e[8];
	struct ha_rules r;
	uint32_t n, k, nr;

	ha_rules_init_test(&r);
	nr = case_events(&cases[0], ev);
	nr = 2; /* the two reports */
	map_build(cases[0].hc_map, &m);
	/* at 11500: FAILED, applied, then nothing */
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 11500, d, 8, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(ha_map_apply(&m, &d[0], 11500), 0);
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 11500, e, 8, &k), 0);
	CU_ASSERT_EQUAL(k, 0);
	CU_ASSERT_EQUAL(ha_next_deadline(&r, ev, nr, &m, 11500), 16500);
	/* at 16500: OUT and JOB_REPAIR; only OUT reaches the map */
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 16500, d, 8, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(d[0].hd_kind, HA_DEC_SET_STATE);
	CU_ASSERT_EQUAL(d[1].hd_kind, HA_DEC_JOB_REPAIR);
	full = m;
	CU_ASSERT_EQUAL(ha_map_apply(&full, &d[0], 16500), 0);
	CU_ASSERT_EQUAL(ha_map_apply(&full, &d[1], 16500), 0);
	CU_ASSERT_EQUAL(ha_map_apply(&m, &d[0], 16500), 0);
	/* the new leader, a moment later */
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 17000, e, 8, &k), 0);
	CU_ASSERT_EQUAL_FATAL(k, 1);
	CU_ASSERT_EQUAL(e[0].hd_kind, HA_DEC_JOB_REPAIR);
	CU_ASSERT_EQUAL(e[0].hd_seq, d[1].hd_seq);
	CU_ASSERT_EQUAL(e[0].hd_job, d[1].hd_job);
	CU_ASSERT_STRING_EQUAL(e[0].hd_target, "s2");
	CU_ASSERT_EQUAL(ha_map_apply(&m, &e[0], 17000), 0);
	CU_ASSERT_EQUAL(m.hm_epoch, full.hm_epoch);
	CU_ASSERT_EQUAL(m.hm_servers[2].hs_state, HA_REPAIRING);
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 17000, e, 8, &k), 0);
	CU_ASSERT_EQUAL(k, 0);
	/* a full map: the same history decides nothing more */
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &full, 90000, e, 8, &k), 0);
	CU_ASSERT_EQUAL(k, 0);
	/* the alert of a failed job is not raised twice */
	ev[nr] = (struct ha_event){ .he_seq = 99, .he_time_ms = 20000,
				    .he_kind = HA_EV_JOB_FAILED,
				    .he_job = d[1].hd_job };
	snprintf(ev[nr].he_target, sizeof ev[nr].he_target, "s2");
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr + 1, &m, 20000, d, 8, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(d[0].hd_kind, HA_DEC_ALERT);
	CU_ASSERT_EQUAL(d[1].hd_kind, HA_DEC_SET_STATE);
	CU_ASSERT_EQUAL(ha_map_apply(&m, &d[0], 20000), 0);
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr + 1, &m, 20000, e, 8, &k), 0);
	CU_ASSERT_EQUAL_FATAL(k, 1);
	CU_ASSERT_EQUAL(e[0].hd_kind, HA_DEC_SET_STATE);
	CU_ASSERT_EQUAL(e[0].hd_state, HA_FAILED);
}

/* Decide at now over the first nr events of spec on map mspec with every
 * decision applied, until nothing more; the decisions' texts go to got. */
static uint32_t decide_all(const char *const *spec, uint32_t nr,
			   struct ha_map *m, uint64_t now, char got[][128])
{
	static struct ha_event ev[EV_MAX];
	struct ha_decision d[DEC_MAX];
	struct ha_rules r;
	uint32_t n = 0, k;

	ha_rules_init_test(&r);
	for (uint32_t i = 0; i < nr; i++)
		ev_build(spec[i], i + 1, &ev[i]);
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, m, now, d, DEC_MAX, &k), 0);
	for (uint32_t i = 0; i < k && n < 8; i++, n++) {
		dec_text(&d[i], got[n], 128);
		CU_ASSERT_EQUAL(ha_map_apply(m, &d[i], now), 0);
	}
	return n;
}

/* Rule restart, as the live analyzer meets it: every server stopped
 * cleanly (s0, then s1 and s2 in its wake, each within W of the one
 * before; s3 too), and no analyzer ran until s0, back first, leads.  At
 * its first look s1, s2 and s3 are not failed from their stops while they
 * start (before the rule: s1 FAILED at once and s2's stop froze the map,
 * which stayed frozen until an operator's thaw: ha_inflight_test.sh in
 * make check); s1 and s3 join, s3 more than the grace after s0 (each
 * return extends the grace: it ran from the first return before, and s3
 * was failed at 70000, as a loaded make check saw); s2 never does and is
 * failed when the grace (30 s from s3's join) is over.  A server that
 * crashed in the same stop (an exit, not a clean stop) gets no grace. */
static void test_restart(void)
{
	static const char *const ev[] = {
		"10000 SRV_STOPPED s0 s0 inc=1",
		"10400 SRV_STOPPED s1 s1 inc=1",
		"11200 SRV_STOPPED s2 s2 inc=1",
		"11900 SRV_STOPPED s3 s3 inc=1",
		"40000 SRV_JOINED s0 s0 inc=2",
		"40600 SRV_JOINED s1 s1 inc=2",
		"72000 SRV_JOINED s3 s3 inc=2",
	};
	static const char *const ev2[] = {
		"10000 SRV_STOPPED s0 s0 inc=1",
		"10300 SRV_EXIT s0 s1 inc=1",
		"10500 SRV_STOPPED s2 s2 inc=1",
		"40000 SRV_JOINED s0 s0 inc=2",
	};
	static struct ha_event e[EV_MAX];
	static struct ha_map m;
	char got[8][128];
	struct ha_rules r;
	uint32_t n;

	ha_rules_init_test(&r);
	map_build("tol=1 s0@e0#1 s1@e1#1 s2@e2#1 s3@e3#1", &m);
	/* s0's first look: nothing, due at the grace's end */
	n = decide_all(ev, 5, &m, 40050, got);
	CU_ASSERT_EQUAL(n, 0);
	for (uint32_t i = 0; i < 5; i++)
		ev_build(ev[i], i + 1, &e[i]);
	/* (s0's own merge settles at 41000) */
	CU_ASSERT_EQUAL(ha_next_deadline(&r, e, 5, &m, 40050), 41000);
	CU_ASSERT_EQUAL(ha_next_deadline(&r, e, 5, &m, 41000), 70000);
	/* s1 back: the grace runs from its join; at 70000 nothing */
	n = decide_all(ev, 6, &m, 70000, got);
	CU_ASSERT_EQUAL(n, 0);
	/* s3 back at 72000 (31.4 s after s1): nothing to decide about it */
	n = decide_all(ev, 7, &m, 73000, got);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL(m.hm_frozen, false);
	CU_ASSERT_EQUAL(m.hm_servers[3].hs_state, HA_ONLINE);
	for (uint32_t i = 0; i < 7; i++)
		ev_build(ev[i], i + 1, &e[i]);
	CU_ASSERT_EQUAL(ha_next_deadline(&r, e, 7, &m, 73000), 102000);
	/* the grace over, s2 still away: failed (one target: no freeze) */
	n = decide_all(ev, 7, &m, 101999, got);
	CU_ASSERT_EQUAL(n, 0);
	n = decide_all(ev, 7, &m, 102000, got);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_STRING_EQUAL(got[0], "102000 server-down SET_STATE s2 FAILED");
	for (uint32_t i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(m.hm_servers[i].hs_state,
				i == 2 ? HA_FAILED : HA_ONLINE);
	/* the same stop, s1 crashed in it: failed at once, then s2's stop
	 * (graced) does not count; tolerance 1 holds */
	map_build("tol=1 s0@e0#1 s1@e1#1 s2@e2#1", &m);
	n = decide_all(ev2, 4, &m, 40050, got);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_STRING_EQUAL(got[0], "40050 server-down SET_STATE s1 FAILED");
	CU_ASSERT_EQUAL(m.hm_frozen, false);
	CU_ASSERT_EQUAL(m.hm_servers[2].hs_state, HA_ONLINE);
}

/* ------------------------------------------------------------ random */

static uint64_t rnd_state;

static uint32_t rnd(uint32_t n)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rnd_state >> 33) % n;
}

/* A random map of 3-6 servers in 2-4 enclosures with 0-2 devices each. */
static void random_map(struct ha_map *m)
{
	memset(m, 0, sizeof *m);
	m->hm_tolerance = 1 + rnd(2);
	m->hm_nr_servers = 3 + rnd(4);
	for (uint32_t i = 0; i < m->hm_nr_servers; i++) {
		struct ha_srv *s = &m->hm_servers[i];
		snprintf(s->hs_name, sizeof s->hs_name, "s%u", i);
		snprintf(s->hs_enclosure, sizeof s->hs_enclosure, "e%u",
			 rnd(2 + rnd(3)));
		s->hs_incarnation = 1;
		s->hs_nr_devs = rnd(3);
		for (uint32_t d = 0; d < s->hs_nr_devs; d++)
			snprintf(s->hs_devs[d].hd_name, HA_NAME_MAX + 1, "d%u", d);
	}
}

/* A random event i after time t over map m as it is now: a job's end
 * names a running job of m (or, one time in four, a job that never ran). */
static void random_event(const struct ha_map *m, uint32_t i, uint64_t t,
			 struct ha_event *e)
{
	static const enum ha_ev_kind kinds[] = {
		HA_EV_SRV_UNREACHABLE, HA_EV_SRV_UNREACHABLE,
		HA_EV_SRV_REACHABLE, HA_EV_SRV_EXIT, HA_EV_SRV_LEASE_EXPIRED,
		HA_EV_SRV_JOINED, HA_EV_SRV_JOINED, HA_EV_DEV_IOERR,
		HA_EV_DEV_FAILED, HA_EV_OP_FAIL, HA_EV_OP_REPLACE,
		HA_EV_OP_DRAIN, HA_EV_OP_ADD, HA_EV_OP_THAW, HA_EV_JOB_DONE,
		HA_EV_JOB_FAILED, HA_EV_JOB_DONE, HA_EV_HOME_READY,
		HA_EV_HOME_READY, HA_EV_HOME_READY, HA_EV_HOME_FROZEN,
		HA_EV_HOME_INSYNC, HA_EV_SRV_STOPPED,
	};
	const struct ha_srv *s = &m->hm_servers[rnd(m->hm_nr_servers)];

	memset(e, 0, sizeof *e);
	e->he_seq = i + 1;
	e->he_time_ms = t + (rnd(4) == 0 ? rnd(40000) : rnd(1500));
	e->he_kind = kinds[rnd(sizeof kinds / sizeof kinds[0])];
	snprintf(e->he_target, sizeof e->he_target, "%s", s->hs_name);
	snprintf(e->he_reporter, sizeof e->he_reporter, "s%u",
		 rnd(m->hm_nr_servers));
	e->he_incarnation = rnd(3) ? 0 : 1 + rnd(4);
	if (e->he_kind == HA_EV_HOME_READY && rnd(4)) /* mostly its own */
		snprintf(e->he_reporter, sizeof e->he_reporter, "%s",
			 s->hs_name);
	/* a copy's epoch: mostly the home's acting one */
	if (e->he_kind == HA_EV_HOME_READY || e->he_kind == HA_EV_HOME_FROZEN)
		e->he_epoch = rnd(4) ? s->hs_acting_epoch : rnd(6);
	/* a record of standbys in sync: any servers, the home's own bit
	 * included (never chosen: not a standby of itself) */
	if (e->he_kind == HA_EV_HOME_INSYNC)
		e->he_insync = rnd(1u << (m->hm_nr_servers < 16 ?
					  m->hm_nr_servers : 16));
	e->he_count = 1 + rnd(2);
	if (e->he_kind == HA_EV_DEV_IOERR || e->he_kind == HA_EV_DEV_FAILED ||
	    e->he_kind == HA_EV_OP_REPLACE ||
	    (e->he_kind == HA_EV_OP_FAIL && rnd(2))) {
		if (s->hs_nr_devs == 0)
			e->he_kind = HA_EV_SRV_EXIT;
		else
			snprintf(e->he_dev, sizeof e->he_dev, "d%u",
				 rnd(s->hs_nr_devs));
	}
	if (e->he_kind == HA_EV_JOB_DONE || e->he_kind == HA_EV_JOB_FAILED) {
		e->he_job = 1000 + rnd(1000);
		for (uint32_t k = 0; k < m->hm_nr_servers && rnd(4); k++) {
			const struct ha_srv *x = &m->hm_servers[k];
			if (x->hs_job) {
				snprintf(e->he_target, sizeof e->he_target,
					 "%s", x->hs_name);
				e->he_job = x->hs_job;
			}
			for (uint32_t d = 0; d < x->hs_nr_devs; d++)
				if (x->hs_devs[d].hd_job && rnd(2)) {
					snprintf(e->he_target,
						 sizeof e->he_target, "%s",
						 x->hs_name);
					snprintf(e->he_dev, sizeof e->he_dev,
						 "%s", x->hs_devs[d].hd_name);
					e->he_job = x->hs_devs[d].hd_job;
				}
		}
	}
	if (e->he_kind == HA_EV_OP_THAW)
		e->he_target[0] = '\0';
}

/* Decide at now; then, for every k, a leader that applied only the first
 * k decisions and decides again takes exactly the others. */
static void check_suffixes(const struct ha_rules *r, const struct ha_event *ev,
			   uint32_t nr, const struct ha_map *m, uint64_t now,
			   const struct ha_decision *d, uint32_t n, bool *bad)
{
	static struct ha_map part;
	struct ha_decision e[DEC_MAX];
	char t[256];
	uint32_t k2;

	part = *m;
	for (uint32_t k = 1; k < n && !*bad; k++) {
		CU_ASSERT_EQUAL(ha_map_apply(&part, &d[k - 1], now), 0);
		CU_ASSERT_EQUAL(ha_decide(r, ev, nr, &part, now, e, DEC_MAX,
					  &k2), 0);
		if (k2 == n - k && memcmp(e, &d[k], k2 * sizeof e[0]) == 0)
			continue;
		printf("\n  at %llu after %u of %u decisions: %u follow, "
		       "want %u", (unsigned long long)now, k, n, k2, n - k);
		for (uint32_t j = 0; j < n; j++) {
			dec_text(&d[j], t, sizeof t);
			printf("\n    took: %s (%s)", t, d[j].hd_reason);
		}
		for (uint32_t j = 0; j < k2; j++) {
			dec_text(&e[j], t, sizeof t);
			printf("\n    then: %s (%s)", t, e[j].hd_reason);
		}
		*bad = true;
	}
}

/* Decide at now over ev[0..upto), check the suffixes, apply, collect;
 * returns the decisions taken. */
static uint32_t random_decide(const struct ha_rules *r, struct ha_map *m,
			      const struct ha_event *ev, uint32_t upto,
			      uint64_t now, struct got *g, bool *bad)
{
	struct ha_decision d[DEC_MAX];
	uint32_t n = 0;

	CU_ASSERT_EQUAL(ha_decide(r, ev, upto, m, now, d, DEC_MAX, &n), 0);
	check_suffixes(r, ev, upto, m, now, d, n, bad);
	for (uint32_t k = 0; k < n; k++) {
		CU_ASSERT_EQUAL(ha_map_apply(m, &d[k], now), 0);
		got_cb(g, &d[k]);
	}
	return n;
}

/* Run the analyzer as the live one, one event at a time (each made from
 * the map as it then is), the deadlines between; check the suffixes at
 * every step; collect the decisions into g. */
static void random_steps(const struct ha_rules *r, struct ha_map *m,
			 struct ha_event *ev, uint32_t nr, struct got *g,
			 bool *bad)
{
	uint64_t now = 0, t = 10000;

	for (uint32_t i = 0; i <= nr && !*bad; i++) {
		uint64_t until = UINT64_MAX, dl;
		int guard = 0;

		if (i < nr) {
			random_event(m, i, t, &ev[i]);
			until = t = ev[i].he_time_ms;
		}
		while (!*bad && guard++ < 1000 &&
		       (dl = ha_next_deadline(r, ev, i, m, now)) < until) {
			if (dl > now)
				now = dl;
			random_decide(r, m, ev, i, now, g, bad);
		}
		if (i == nr)
			break;
		if (until > now)
			now = until;
		while (!*bad && guard++ < 1000 &&
		       random_decide(r, m, ev, i + 1, now, g, bad) > 0)
			;
		CU_ASSERT(guard < 1000);
	}
}

/* Random histories: a step-by-step run at every point survives a leader
 * change mid-decision (nothing repeated, nothing lost); ha_replay() over
 * the history it made takes the same decisions, twice the same. */
static void test_random(void)
{
	static struct ha_map m0, m;
	static struct ha_event ev[40];
	static struct got steps, a, b;
	struct ha_rules r;
	uint32_t nr = 40;
	bool bad = false;

	uint32_t moves = 0, backs = 0, cancels = 0;
	/* 300 seeds; 100 under tests/asan.sh (STRATA_UT_QUICK) */
	const uint64_t seeds = ut_rounds(300, 100);

	ha_rules_init_test(&r);
	for (uint64_t seed = 1; seed <= seeds && !bad; seed++) {
		rnd_state = seed;
		random_map(&m0);
		/* every other history with homes taken over (rule home) */
		m0.hm_meta_replicas = seed % 2 ? 3 : 1;
		m = m0;
		memset(&steps, 0, sizeof steps);
		random_steps(&r, &m, ev, nr, &steps, &bad);
		m = m0;
		memset(&a, 0, sizeof a);
		CU_ASSERT_EQUAL(ha_replay(&r, ev, nr, &m, 0, got_cb, &a), 0);
		m = m0;
		memset(&b, 0, sizeof b);
		CU_ASSERT_EQUAL(ha_replay(&r, ev, nr, &m, 0, got_cb, &b), 0);
		if (a.g_nr != b.g_nr || a.g_nr != steps.g_nr ||
		    memcmp(a.g_dec, b.g_dec, sizeof a.g_dec) != 0 ||
		    memcmp(a.g_dec, steps.g_dec, sizeof a.g_dec) != 0) {
			char t[256];
			printf("\n  replay: %u, %u decisions, steps %u",
			       a.g_nr, b.g_nr, steps.g_nr);
			for (uint32_t j = 0; j < a.g_nr || j < steps.g_nr; j++) {
				if (j < a.g_nr) {
					dec_text(&a.g_dec[j], t, sizeof t);
					printf("\n    replay: %-50s", t);
				} else {
					printf("\n    replay: %-50s", "");
				}
				if (j < steps.g_nr) {
					dec_text(&steps.g_dec[j], t, sizeof t);
					printf(" steps: %s", t);
				}
			}
			for (uint32_t j = 0; j < nr; j++) {
				ha_event_format(&ev[j], t, sizeof t);
				printf("\n    %s", t);
			}
			bad = true;
		}
		if (bad)
			printf(" (seed %llu)", (unsigned long long)seed);
		for (uint32_t j = 0; j < a.g_nr; j++)
			if (a.g_dec[j].hd_kind == HA_DEC_HOME_MOVE) {
				moves++;
				backs += strcmp(a.g_dec[j].hd_acting,
						a.g_dec[j].hd_target) == 0;
				cancels += strstr(a.g_dec[j].hd_reason,
						  "cancelled") != NULL;
			}
	}
	CU_ASSERT(!bad);
	/* the histories do move homes, and give some back */
	CU_ASSERT(moves > 10);
	CU_ASSERT(backs > 0);
	printf("\n  random: %u home moves, %u handbacks, %u cancelled ",
	       moves, backs, cancels);
}

/* A full output says so; the rest comes on the next call. */
static void test_out_full(void)
{
	static struct ha_event ev[EV_MAX];
	static struct ha_map m;
	struct ha_decision d[2];
	struct ha_rules r;
	uint32_t n, nr;

	ha_rules_init_test(&r);
	nr = case_events(&cases[3], ev); /* direct proof */
	map_build(cases[3].hc_map, &m);
	m.hm_servers[1].hs_state = HA_FAILED;
	m.hm_servers[1].hs_since_ms = 1000;
	m.hm_frozen = false;
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 16000, d, 1, &n), -ENOSPC);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(d[0].hd_state, HA_OUT);
	CU_ASSERT_EQUAL(ha_map_apply(&m, &d[0], 16000), 0);
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 16000, d, 1, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(d[0].hd_kind, HA_DEC_JOB_REPAIR);
	/* bad rules, bad decisions */
	r.hr_quiet_ms = 0;
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 16000, d, 2, &n), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "hr_quiet_ms") != NULL);
	ha_rules_init_defaults(&r);
	CU_ASSERT_EQUAL(ha_rules_check(&r), 0);
	r.hr_report_ttl_ms = r.hr_merge_max_ms;
	CU_ASSERT_EQUAL(ha_rules_check(&r), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "hr_report_ttl_ms") != NULL);
	ha_rules_init_test(&r);
	r.hr_quiet_ms = r.hr_merge_max_ms + 1;
	CU_ASSERT_EQUAL(ha_rules_check(&r), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "hr_quiet_ms") != NULL);
	d[0].hd_kind = HA_DEC_SET_STATE;
	snprintf(d[0].hd_target, sizeof d[0].hd_target, "nope");
	CU_ASSERT_EQUAL(ha_map_apply(&m, &d[0], 1), -ENOENT);
	CU_ASSERT(strstr(err_msg(), "nope") != NULL);
}

/* ------------------------------------------------------------ JSON */

static bool ev_equal(const struct ha_event *a, const struct ha_event *b)
{
	return a->he_seq == b->he_seq && a->he_time_ms == b->he_time_ms &&
	       a->he_kind == b->he_kind &&
	       strcmp(a->he_reporter, b->he_reporter) == 0 &&
	       strcmp(a->he_target, b->he_target) == 0 &&
	       strcmp(a->he_dev, b->he_dev) == 0 &&
	       a->he_incarnation == b->he_incarnation &&
	       a->he_count == b->he_count && a->he_job == b->he_job;
}

static void test_json_roundtrip(void)
{
	struct ha_event e = { .he_seq = 12, .he_time_ms = 1ull << 60,
			      .he_kind = HA_EV_DEV_IOERR,
			      .he_incarnation = UINT64_MAX, .he_count = 7,
			      .he_job = 0 }, e2;
	struct ha_decision d = { .hd_seq = 3, .hd_time_ms = 16500,
				 .hd_kind = HA_DEC_JOB_REPAIR,
				 .hd_state = HA_REPAIRING, .hd_job = 3 }, d2;
	char buf[1024];

	snprintf(e.he_reporter, sizeof e.he_reporter, "s2");
	snprintf(e.he_target, sizeof e.he_target, "s1");
	snprintf(e.he_dev, sizeof e.he_dev, "flash\"0\\");
	CU_ASSERT(ha_event_format(&e, buf, sizeof buf) > 0);
	memset(&e2, 0x77, sizeof e2);
	CU_ASSERT_EQUAL(ha_event_parse(buf, &e2), 0);
	CU_ASSERT(ev_equal(&e, &e2));
	snprintf(d.hd_target, sizeof d.hd_target, "s2");
	snprintf(d.hd_rule, sizeof d.hd_rule, "repair");
	snprintf(d.hd_reason, sizeof d.hd_reason, "out: rebuild — ünïcode");
	CU_ASSERT(ha_decision_format(&d, buf, sizeof buf) > 0);
	memset(&d2, 0, sizeof d2);
	CU_ASSERT_EQUAL(ha_decision_parse(buf, &d2), 0);
	CU_ASSERT(memcmp(&d, &d2, sizeof d) == 0);
	CU_ASSERT_EQUAL(ha_decision_format(&d, buf, 10), -ENOSPC);
	CU_ASSERT_STRING_EQUAL(buf, "");
}

/* Each bad text is refused with -EINVAL naming key; nothing changed. */
static void test_json_refusals(void)
{
	static const struct { const char *text, *key; } bad_ev[] = {
		{ "{\"time_ms\":1,\"kind\":\"SRV_EXIT\",\"target\":\"s\"}", "seq" },
		{ "{\"seq\":-1,\"time_ms\":1,\"kind\":\"SRV_EXIT\",\"target\":\"s\"}", "seq" },
		{ "{\"seq\":1,\"time_ms\":1.5,\"kind\":\"SRV_EXIT\",\"target\":\"s\"}", "time_ms" },
		{ "{\"seq\":1,\"time_ms\":\"1\",\"kind\":\"SRV_EXIT\",\"target\":\"s\"}", "time_ms" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"SRV_BOOM\",\"target\":\"s\"}", "kind" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"SRV_EXIT\"}", "target" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"SRV_EXIT\",\"target\":\"s\",\"colour\":1}", "colour" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"SRV_EXIT\",\"target\":\"a-name-much-longer-than-31-bytes!\"}", "target" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"DEV_IOERR\",\"target\":\"s\"}", "dev" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"DEV_IOERR\",\"target\":\"s\",\"dev\":\"d\"}", "count" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"SRV_EXIT\",\"target\":\"s\",\"dev\":\"d\"}", "dev" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"JOB_DONE\",\"target\":\"s\"}", "job" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"DEV_IOERR\",\"target\":\"s\",\"dev\":\"d\",\"count\":4294967296}", "count" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"SRV_EXIT\",\"target\":\"s\"} x", "JSON" },
		{ "[1,2]", "object" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"SRV_EXIT\",\"target\":\"s\",\"insync\":2}", "insync" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"HOME_INSYNC\",\"target\":\"s\",\"insync\":-2}", "insync" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"HOME_INSYNC\",\"target\":\"s\",\"dev\":\"d\"}", "dev" },
	};
	static const struct { const char *text, *key; } bad_dec[] = {
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"SET_STATE\",\"target\":\"s\"}", "state" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"SET_STATE\",\"target\":\"s\",\"state\":\"DEAD\"}", "state" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"SET_STATE\",\"state\":\"OUT\"}", "target" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"FREEZE\",\"state\":\"OUT\",\"why\":\"x\"}", "why" },
		{ "{\"seq\":1,\"time_ms\":1,\"kind\":\"NAP\",\"state\":\"OUT\"}", "kind" },
	};
	struct ha_event e, keep;
	struct ha_decision d, dkeep;

	memset(&keep, 0x3c, sizeof keep);
	keep.he_reporter[3] = keep.he_target[5] = keep.he_dev[0] = '\0';
	for (size_t i = 0; i < sizeof bad_ev / sizeof bad_ev[0]; i++) {
		e = keep;
		CU_ASSERT_EQUAL(ha_event_parse(bad_ev[i].text, &e), -EINVAL);
		CU_ASSERT(ev_equal(&e, &keep));
		if (strstr(err_msg(), bad_ev[i].key) == NULL) {
			printf("\n  event %zu: message '%s' does not name '%s'",
			       i, err_msg(), bad_ev[i].key);
			CU_FAIL("message does not name the key");
		}
	}
	memset(&dkeep, 0x3c, sizeof dkeep);
	for (size_t i = 0; i < sizeof bad_dec / sizeof bad_dec[0]; i++) {
		d = dkeep;
		CU_ASSERT_EQUAL(ha_decision_parse(bad_dec[i].text, &d), -EINVAL);
		if (strstr(err_msg(), bad_dec[i].key) == NULL) {
			printf("\n  decision %zu: message '%s' does not name '%s'",
			       i, err_msg(), bad_dec[i].key);
			CU_FAIL("message does not name the key");
		}
		CU_ASSERT(memcmp(&d, &dkeep, sizeof d) == 0);
	}
}

/* ha_home_standbys(): the home is never its own standby, R - 1 of them,
 * fixed whatever the states, one per enclosure while there are enough;
 * the home rule takes the first ONLINE one. */
static void test_home_standbys(void)
{
	static struct ha_map m;
	uint32_t sb[HA_SERVERS_MAX], sb2[HA_SERVERS_MAX], n, n2;

	map_build("tol=1 meta=3 s0@e0 s1@e1 s2@e2 s3@e3", &m);
	for (uint32_t h = 0; h < 4; h++) {
		n = ha_home_standbys(&m, h, sb);
		CU_ASSERT_EQUAL(n, 2);
		CU_ASSERT(sb[0] != h && sb[1] != h && sb[0] != sb[1]);
		CU_ASSERT(sb[0] < 4 && sb[1] < 4);
		m.hm_servers[sb[0]].hs_state = HA_FAILED;
		n2 = ha_home_standbys(&m, h, sb2);
		CU_ASSERT_EQUAL(n2, n);
		CU_ASSERT(memcmp(sb, sb2, n * sizeof sb[0]) == 0);
		m.hm_servers[sb[0]].hs_state = HA_ONLINE;
		CU_ASSERT_EQUAL(ha_home_acting(&m, h), (int)h);
	}
	/* the cases pin s1's standbys as s2, s3 (and the hashes, core/pg.h,
	 * never change) */
	CU_ASSERT_EQUAL(ha_home_standbys(&m, 1, sb), 2);
	CU_ASSERT_EQUAL(sb[0], 2);
	CU_ASSERT_EQUAL(sb[1], 3);
	/* two enclosures: both standbys outside the home's where possible */
	map_build("tol=1 meta=3 s0@a s1@a s2@b s3@b", &m);
	n = ha_home_standbys(&m, 0, sb);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT(sb[0] == 2 || sb[0] == 3 || sb[1] == 2 || sb[1] == 3);
	m.hm_meta_replicas = 1;
	CU_ASSERT_EQUAL(ha_home_standbys(&m, 0, sb), 0);
	m.hm_meta_replicas = 9; /* more than servers: all the others */
	CU_ASSERT_EQUAL(ha_home_standbys(&m, 0, sb), 3);
	CU_ASSERT_EQUAL(ha_home_standbys(&m, 7, sb), 0);
	snprintf(m.hm_servers[0].hs_acting, HA_NAME_MAX + 1, "s2");
	CU_ASSERT_EQUAL(ha_home_acting(&m, 0), 2);
	CU_ASSERT_EQUAL(ha_home_acting(&m, 9), -ENOENT);
}

/* The leader dies between the FAILED and the HOME_MOVE of a takeover (or
 * after both): the next one, later, takes the move with the same seq,
 * acting server and takeover incarnation, then nothing; the map's fields
 * and their JSON round trip. */
static void test_home_leader_change(void)
{
	static struct ha_event ev[EV_MAX];
	static struct ha_map m, m2;
	struct ha_decision d[8], e[8];
	struct ha_rules r;
	uint32_t n, k, nr = 0;
	char *text = NULL;

	ha_rules_init_test(&r);
	ev_build("10000 SRV_LEASE_EXPIRED s0 s1", 1, &ev[nr++]);
	map_build("tol=1 meta=3 s0@e0 s1@e1#3 s2@e2 s3@e3", &m);
	m.hm_epoch = 10;
	m.hm_cluster[0] = 'c';
	for (uint32_t i = 0; i < m.hm_nr_servers; i++)
		m.hm_servers[i].hs_port = 1, m.hm_servers[i].hs_addr[0] = 'a';
	m.hm_pgs = m.hm_pg_replicas = 1;
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 11000, d, 8, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(d[0].hd_kind, HA_DEC_SET_STATE);
	CU_ASSERT_EQUAL(d[1].hd_kind, HA_DEC_HOME_MOVE);
	CU_ASSERT_STRING_EQUAL(d[1].hd_target, "s1");
	CU_ASSERT_STRING_EQUAL(d[1].hd_acting, "s2");
	CU_ASSERT_EQUAL(d[1].hd_seq, 12);
	/* the incarnation: the ns of the FAILED, above the server's run */
	CU_ASSERT_EQUAL(d[1].hd_incarnation, 11000ull * 1000000ull);
	CU_ASSERT_EQUAL(ha_map_apply(&m, &d[0], 11000), 0);
	/* the next leader, 2 s later */
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 13000, e, 8, &k), 0);
	CU_ASSERT_EQUAL_FATAL(k, 1);
	CU_ASSERT_EQUAL(e[0].hd_kind, HA_DEC_HOME_MOVE);
	CU_ASSERT_EQUAL(e[0].hd_seq, d[1].hd_seq);
	CU_ASSERT_STRING_EQUAL(e[0].hd_acting, d[1].hd_acting);
	CU_ASSERT_EQUAL(e[0].hd_incarnation, d[1].hd_incarnation);
	CU_ASSERT_EQUAL(ha_map_apply(&m, &e[0], 13000), 0);
	CU_ASSERT_STRING_EQUAL(m.hm_servers[1].hs_acting, "s2");
	CU_ASSERT_EQUAL(m.hm_servers[1].hs_acting_epoch, 12);
	CU_ASSERT_EQUAL(m.hm_servers[1].hs_acting_ms, 13000);
	CU_ASSERT_EQUAL(m.hm_servers[1].hs_acting_inc, 11000ull * 1000000ull);
	CU_ASSERT_EQUAL(ha_home_acting(&m, 1), 2);
	CU_ASSERT_EQUAL(ha_decide(&r, ev, nr, &m, 13000, e, 8, &k), 0);
	CU_ASSERT_EQUAL(k, 0);
	/* the map's JSON keeps every home field */
	CU_ASSERT_EQUAL_FATAL(ha_map_to_json(&m, &text), 0);
	CU_ASSERT_EQUAL(ha_map_from_json(&m2, text, strlen(text)), 0);
	CU_ASSERT_STRING_EQUAL(m2.hm_servers[1].hs_acting, "s2");
	CU_ASSERT_EQUAL(m2.hm_servers[1].hs_acting_epoch, 12);
	CU_ASSERT_EQUAL(m2.hm_servers[1].hs_acting_ms, 13000);
	CU_ASSERT_EQUAL(m2.hm_servers[1].hs_acting_inc, 11000ull * 1000000ull);
	CU_ASSERT_EQUAL(m2.hm_meta_replicas, 3);
	CU_ASSERT_STRING_EQUAL(m2.hm_servers[0].hs_acting, "");
	free(text);
	/* a map whose acting server is not one of it, or itself, is refused
	 * naming the field */
	snprintf(m.hm_servers[1].hs_acting, HA_NAME_MAX + 1, "zz");
	CU_ASSERT_EQUAL(ha_map_check(&m), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "servers[1].acting") != NULL);
	snprintf(m.hm_servers[1].hs_acting, HA_NAME_MAX + 1, "s1");
	CU_ASSERT_EQUAL(ha_map_check(&m), -EINVAL);
	m.hm_servers[1].hs_acting[0] = '\0';
	m.hm_servers[1].hs_acting_epoch = m.hm_epoch + 1;
	CU_ASSERT_EQUAL(ha_map_check(&m), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "acting_epoch") != NULL);
	/* a decision's JSON keeps acting and incarnation */
	{
		struct json_object *o = ha_decision_to_json(&d[1]);
		struct ha_decision x;

		CU_ASSERT_FATAL(o != NULL);
		CU_ASSERT_EQUAL(ha_decision_from_json(o, &x), 0);
		CU_ASSERT_STRING_EQUAL(x.hd_acting, "s2");
		CU_ASSERT_EQUAL(x.hd_incarnation, d[1].hd_incarnation);
		json_object_put(o);
	}
}

/* Read a replay file from text; returns ha_history_read()'s code. */
static int history_from(const char *text, struct ha_history *h)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int rc;

	CU_ASSERT_FATAL(f != NULL);
	rc = ha_history_read(f, "h.jsonl", h);
	fclose(f);
	return rc;
}

static void test_history(void)
{
	static const char good[] =
		"# a comment\n"
		"{\"map\": {\"tolerance\": 1, \"epoch\": 7, \"servers\": ["
		"{\"name\": \"s0\", \"enclosure\": \"e0\", \"incarnation\": 2, "
		"\"devices\": [\"d0\", {\"name\": \"d1\", \"state\": \"FAILED\", "
		"\"since_ms\": 5}]}, {\"name\": \"s1\"}]}, \"rules\": "
		"{\"preset\": \"test\", \"down_out_ms\": 7000}}\n"
		"\n"
		"{\"seq\": 1, \"time_ms\": 10, \"kind\": \"SRV_EXIT\", \"target\": \"s1\"}\n"
		"{\"seq\": 5, \"time_ms\": 20, \"kind\": \"OP_THAW\"}\n";
	static const struct { const char *text, *msg; } bad[] = {
		{ "{\"seq\": 2, \"time_ms\": 1, \"kind\": \"SRV_EXIT\", \"target\": \"s\"}\n"
		  "{\"seq\": 2, \"time_ms\": 1, \"kind\": \"SRV_EXIT\", \"target\": \"s\"}\n",
		  "h.jsonl:2: seq 2 is not above" },
		{ "{\"seq\": 1, \"time_ms\": 1, \"kind\": \"SRV_EXIT\", \"target\": \"s\"}\n"
		  "{\"map\": {\"tolerance\": 1, \"servers\": []}}\n",
		  "h.jsonl:2: a header" },
		{ "\n\n{\"seq\": 1, \"time_ms\": 1, \"kind\": \"SRV_EXIT\"\n",
		  "h.jsonl:3: line: bad JSON" },
		{ "{\"map\": {\"servers\": []}}\n", "h.jsonl:1: map: key 'tolerance'" },
		{ "{\"map\": {\"tolerance\": 1, \"servers\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}}\n",
		  "h.jsonl:1: map: server 'a' twice" },
		{ "{\"map\": {\"tolerance\": 1, \"servers\": [{\"name\": \"a\", \"state\": \"GONE\"}]}}\n",
		  "key 'state'" },
		{ "{\"rules\": {\"quiet_ms\": 0}}\n", "h.jsonl:1: ha rules: hr_quiet_ms" },
		{ "{\"rules\": \"fast\"}\n", "preset 'fast'" },
	};
	struct ha_history h;

	CU_ASSERT_EQUAL_FATAL(history_from(good, &h), 0);
	CU_ASSERT(h.hh_map_given);
	CU_ASSERT_EQUAL(h.hh_nr, 2);
	CU_ASSERT_EQUAL(h.hh_map->hm_epoch, 7);
	CU_ASSERT_EQUAL(h.hh_map->hm_nr_servers, 2);
	CU_ASSERT_EQUAL(h.hh_map->hm_servers[0].hs_nr_devs, 2);
	CU_ASSERT_EQUAL(h.hh_map->hm_servers[0].hs_incarnation, 2);
	CU_ASSERT_EQUAL(h.hh_map->hm_servers[0].hs_devs[1].hd_state, HA_FAILED);
	CU_ASSERT_EQUAL(h.hh_map->hm_servers[0].hs_devs[1].hd_since_ms, 5);
	CU_ASSERT_EQUAL(h.hh_rules.hr_down_out_ms, 7000);
	CU_ASSERT_EQUAL(h.hh_rules.hr_quiet_ms, 1000);
	CU_ASSERT_EQUAL(h.hh_ev[1].he_kind, HA_EV_OP_THAW);
	ha_history_fini(&h);
	/* no header: the map is made from the events */
	CU_ASSERT_EQUAL_FATAL(history_from(
		"{\"seq\": 1, \"time_ms\": 1, \"kind\": \"DEV_FAILED\", \"reporter\": \"s0\", \"target\": \"s1\", \"dev\": \"d3\"}\n"
		"{\"seq\": 2, \"time_ms\": 1, \"kind\": \"OP_FAIL\", \"reporter\": \"operator\", \"target\": \"s2\"}\n",
		&h), 0);
	CU_ASSERT(!h.hh_map_given);
	CU_ASSERT_EQUAL(h.hh_map->hm_tolerance, 1);
	CU_ASSERT_EQUAL(h.hh_map->hm_nr_servers, 3);
	CU_ASSERT_STRING_EQUAL(h.hh_map->hm_servers[0].hs_name, "s1");
	CU_ASSERT_STRING_EQUAL(h.hh_map->hm_servers[0].hs_devs[0].hd_name, "d3");
	CU_ASSERT_STRING_EQUAL(h.hh_map->hm_servers[1].hs_name, "s0");
	CU_ASSERT_STRING_EQUAL(h.hh_map->hm_servers[2].hs_name, "s2");
	ha_history_fini(&h);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CU_ASSERT_EQUAL(history_from(bad[i].text, &h), -EINVAL);
		if (strstr(err_msg(), bad[i].msg) == NULL) {
			printf("\n  history %zu: message '%s' lacks '%s'", i,
			       err_msg(), bad[i].msg);
			CU_FAIL("message does not name the line or key");
		}
		CU_ASSERT(h.hh_ev == NULL && h.hh_map == NULL);
	}
}

int analyzer_ut_add(void)
{
	CU_pSuite s = CU_add_suite("analyzer", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "cases", test_cases) ||
	    !CU_add_test(s, "determinism", test_determinism) ||
	    !CU_add_test(s, "leader_change", test_leader_change) ||
	    !CU_add_test(s, "restart", test_restart) ||
	    !CU_add_test(s, "out_full", test_out_full) ||
	    !CU_add_test(s, "random", test_random) ||
	    !CU_add_test(s, "json_roundtrip", test_json_roundtrip) ||
	    !CU_add_test(s, "json_refusals", test_json_refusals) ||
	    !CU_add_test(s, "history", test_history) ||
	    !CU_add_test(s, "home_standbys", test_home_standbys) ||
	    !CU_add_test(s, "home_leader_change", test_home_leader_change))
		return -1;
	return 0;
}
