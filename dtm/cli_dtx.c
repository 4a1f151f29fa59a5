/*
 * cli_dtx.c — the coordinator of cluster dtxs, dtm's client half
 * (dtm_cli.h; protocol in dtm/README.md "Coordinator"; its partner on the
 * servers is srv_dtx.c, the participant).  clovis/dtx.c drives it: it
 * collects the members (Clovis ops) and hands their engine requests here
 * with its cluster transport (struct dtm_cli_ops).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clu_conf.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/server/msg.h"
#include "dtm/dtm.h"
#include "dtm/dtm_cli.h"
#include "dtm/dtm_msg.h"

/* One dtx being committed. */
struct cli_dtx {
	const struct dtm_cli *cx_cli;
	struct st_dtx_id *cx_id;   /* a retry takes a new one */
	struct eng_req *const *cx_m;   /* the members' requests */
	uint32_t cx_nr;
	uint32_t *cx_bad;              /* the member that failed it */
};

static const char *cx_str(const struct cli_dtx *dx)
{
	static __thread char buf[DTM_ID_STR_LEN];

	return dtm_id_format(dx->cx_id, buf);
}

static const char *cli_name(const struct dtm_cli *cli, uint32_t s)
{
	return cli->dc_ops->co_server_name(cli->dc_arg, s);
}

static uint32_t cli_call_ms(const struct dtm_cli *cli)
{
	return cli->dc_ops->co_call_ms(cli->dc_arg);
}

/* ================================================= cluster mode: 2PC
 *
 * The coordinator (dtm/README.md "Coordinator"), on the worker thread of
 * the last member to run:
 *
 *   encode      each member as the request it would be alone, grouped by
 *               the server that applies it (object: home; index: its
 *               first live replica, which orders it and copies it to the
 *               others after the COMMIT, with its seq);
 *   PREPARE     to every participant in parallel (thread each), with the
 *               participant list sorted: parts[0] is the decider;
 *   decide      all YES: COMMIT to the decider first (its COMMITTED record
 *               is the commit point), then to the others in parallel; any
 *               NO or timeout: ABORT to all (those that never prepared log
 *               ABORTED, so a late PREPARE is refused);
 *   outcome     STABLE when every participant acknowledged the COMMIT
 *               applied and durable.
 * A NO with -ESTALE (an index replica must verify first) makes the client
 * send that replica a GET (which verifies it) and try again with a new id,
 * DTX_CLU_TRIES times and for one call timeout at most.  The PREPARE
 * announces the decision deadline (wait_ms: call timeout + slack) and the
 * client keeps it (votes later than that: ABORT); participants start
 * termination only past it.  Every call has a deadline (DTX_CLU_CALL_MS,
 * at most the cluster's call timeout).
 */

static uint64_t dtx_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct dtx_part {
	struct cli_dtx *dp_dx;
	uint32_t dp_server;
	DtxMember *dp_m;        /* its members */
	DtxMember **dp_mp;
	uint32_t *dp_mi;        /* their indices in cx_m */
	size_t dp_nr;
	uint8_t *dp_req;        /* the packed request of the current phase */
	size_t dp_len;
	uint8_t *dp_bulk;       /* a PREPARE above DTM_PREPARE_INLINE_MAX:
				   the packed PREPARE (dp_req its envelope) */
	size_t dp_bulk_len;
	uint32_t dp_ms;
	uint32_t dp_extra_ms;   /* its calls' deadline above the call timeout:
				   the work of a large PREPARE or COMMIT */
	int dp_rc;
	uint32_t dp_state;
	char dp_msg[LIM_ERRMSG_LEN];
	pthread_t dp_th;
};

struct dtx_clu {
	struct dtx_part *dc_p;
	uint32_t dc_nr;
	uint32_t dc_parts[DTM_PARTS_MAX];
	uint32_t dc_wait_ms;    /* PREPARE: the decision deadline announced */
	uint8_t **dc_bodies;    /* per member */
	uint8_t **dc_data;
};

static void *dtx_part_call(void *arg)
{
	struct dtx_part *p = arg;
	const struct dtm_cli *cli = p->dp_dx->cx_cli;
	void *rb = NULL;
	size_t rl = 0;
	DtxReply *rp = NULL;
	int rc = cli->dc_ops->co_call(cli->dc_arg, p->dp_server, p->dp_req,
				      p->dp_len, p->dp_bulk, p->dp_bulk_len,
				      p->dp_ms, &rb, &rl);

	if (rc == 0)
		rc = dtm_reply_decode(rb, rl, &rp);
	p->dp_rc = rc;
	p->dp_state = DTM_UNKNOWN;
	if (rc == 0) {
		p->dp_state = rp->state;
		dtm_hlc_observe(rp->clock);
		dtx_reply__free_unpacked(rp, NULL);
	} else {
		snprintf(p->dp_msg, sizeof p->dp_msg, "server %s: %s",
			 cli_name(cli, p->dp_server), err_msg());
	}
	free(rb);
	return NULL;
}

/* Pack the request of kind for p. */
static int dtx_part_req(struct dtx_clu *c, struct dtx_part *p, uint32_t kind,
			uint32_t decision)
{
	struct cli_dtx *dx = p->dp_dx;
	DtxReq q = DTX_REQ__INIT;
	int rc;

	free(p->dp_req);
	free(p->dp_bulk);
	p->dp_req = p->dp_bulk = NULL;
	p->dp_bulk_len = 0;
	q.kind = kind;
	q.hlc = dx->cx_id->di_hlc;
	q.node = dx->cx_id->di_node;
	q.clock = dtm_hlc_now();
	q.home = p->dp_server + 1; /* participants are homes */
	if (kind == DTM_MSG_PREPARE) {
		q.n_parts = c->dc_nr;
		q.parts = c->dc_parts;
		q.n_members = p->dp_nr;
		q.members = p->dp_mp;
		q.wait_ms = c->dc_wait_ms;
	}
	q.decision = decision;
	rc = dtm_pack(&q.base, &p->dp_req, &p->dp_len);
	if (rc != 0 || kind != DTM_MSG_PREPARE ||
	    p->dp_len <= DTM_PREPARE_INLINE_MAX)
		return rc;
	/* Too big for one message: the PREPARE becomes the call's bulk
	 * (pulled by the participant), behind an envelope. */
	p->dp_bulk = p->dp_req;
	p->dp_bulk_len = p->dp_len;
	p->dp_req = NULL;
	q.n_parts = 0;
	q.parts = NULL;
	q.n_members = 0;
	q.members = NULL;
	q.wait_ms = 0;
	q.bulk_len = p->dp_bulk_len;
	return dtm_pack(&q.base, &p->dp_req, &p->dp_len);
}

/* Send kind to parts [from, to) in parallel and wait. */
static void dtx_parts_call(struct dtx_clu *c, uint32_t from, uint32_t to,
			   uint32_t kind, uint32_t decision, uint32_t ms)
{
	for (uint32_t i = from; i < to; i++) {
		struct dtx_part *p = &c->dc_p[i];

		p->dp_ms = ms + p->dp_extra_ms;
		p->dp_rc = dtx_part_req(c, p, kind, decision);
		if (p->dp_rc == 0 && (to - from == 1 ||
				      pthread_create(&p->dp_th, NULL,
						     dtx_part_call, p) != 0)) {
			dtx_part_call(p);
			p->dp_th = 0;
		} else if (p->dp_rc != 0) {
			p->dp_th = 0;
		}
	}
	for (uint32_t i = from; i < to; i++)
		if (c->dc_p[i].dp_th != 0)
			pthread_join(c->dc_p[i].dp_th, NULL);
}

static int dtx_part_cmp(const void *a, const void *b)
{
	const struct dtx_part *x = a, *y = b;

	return x->dp_server < y->dp_server ? -1 : x->dp_server > y->dp_server;
}

static void dtx_clu_fini(struct dtx_clu *c, uint32_t nr_members)
{
	for (uint32_t i = 0; i < c->dc_nr; i++) {
		free(c->dc_p[i].dp_m);
		free(c->dc_p[i].dp_mp);
		free(c->dc_p[i].dp_mi);
		free(c->dc_p[i].dp_req);
		free(c->dc_p[i].dp_bulk);
	}
	for (uint32_t i = 0; c->dc_bodies != NULL && i < nr_members; i++) {
		free(c->dc_bodies[i]);
		free(c->dc_data[i]);
	}
	free(c->dc_bodies);
	free(c->dc_data);
	free(c->dc_p);
	memset(c, 0, sizeof *c);
}

/* Encode the members and group them by participant. */
static int dtx_clu_build(struct cli_dtx *dx, struct dtx_clu *c)
{
	uint32_t *srv = calloc((size_t)dx->cx_nr * CLU_REPLICAS_MAX,
			       sizeof *srv);
	uint32_t *nsrv = calloc(dx->cx_nr, sizeof *nsrv);
	uint32_t *sop = calloc(dx->cx_nr, sizeof *sop);
	size_t *blen = calloc(dx->cx_nr, sizeof *blen);
	size_t *dlen = calloc(dx->cx_nr, sizeof *dlen);
	int rc = 0;

	c->dc_bodies = calloc(dx->cx_nr, sizeof *c->dc_bodies);
	c->dc_data = calloc(dx->cx_nr, sizeof *c->dc_data);
	c->dc_p = calloc(DTM_PARTS_MAX, sizeof *c->dc_p);
	if (srv == NULL || nsrv == NULL || sop == NULL || blen == NULL ||
	    dlen == NULL ||
	    c->dc_bodies == NULL || c->dc_data == NULL || c->dc_p == NULL)
		rc = err_set(-ENOMEM, "dtx %s: members", cx_str(dx));
	for (uint32_t i = 0; rc == 0 && i < dx->cx_nr; i++) {
		struct eng_req *r = dx->cx_m[i];

		if (r->er_type == ST_ET_IDX && r->er_kind == ER_ENT_CREATE)
			/* every replica creates it with this incarnation:
			 * the dtx id's time in ns, unique to this attempt */
			r->er_ent.me_ctime_ns = dtm_hlc_us(dx->cx_id->di_hlc) *
				1000u + (dx->cx_id->di_hlc & 0xffffu) % 1000u;
		rc = dx->cx_cli->dc_ops->co_member(dx->cx_cli->dc_arg, r,
					&srv[(size_t)i * CLU_REPLICAS_MAX],
					&nsrv[i], &sop[i], &c->dc_bodies[i],
					&blen[i]);
		if (rc == 0 && r->er_kind == ER_OBJ_WRITE && r->er_data) {
			size_t n = 0;

			for (uint32_t k = 0; k < r->er_data->bv_nr; k++)
				n += r->er_data->bv_len[k];
			c->dc_data[i] = malloc(n ? n : 1);
			if (c->dc_data[i] == NULL)
				rc = err_set(-ENOMEM, "dtx %s: data",
					     cx_str(dx));
			for (uint32_t k = 0; rc == 0 &&
			     k < r->er_data->bv_nr; k++) {
				memcpy(c->dc_data[i] + dlen[i],
				       r->er_data->bv_buf[k],
				       r->er_data->bv_len[k]);
				dlen[i] += r->er_data->bv_len[k];
			}
		}
		if (rc != 0) {
			*dx->cx_bad = i;
			break;
		}
		for (uint32_t n = 0; rc == 0 && n < nsrv[i]; n++) {
			uint32_t sv = srv[(size_t)i * CLU_REPLICAS_MAX + n];
			struct dtx_part *p = NULL;

			for (uint32_t k = 0; k < c->dc_nr; k++)
				if (c->dc_p[k].dp_server == sv)
					p = &c->dc_p[k];
			if (p == NULL) {
				p = &c->dc_p[c->dc_nr++];
				p->dp_dx = dx;
				p->dp_server = sv;
				p->dp_m = calloc(dx->cx_nr, sizeof *p->dp_m);
				p->dp_mp = calloc(dx->cx_nr, sizeof *p->dp_mp);
				p->dp_mi = calloc(dx->cx_nr, sizeof *p->dp_mi);
				if (p->dp_m == NULL || p->dp_mp == NULL ||
				    p->dp_mi == NULL) {
					rc = err_set(-ENOMEM, "dtx %s",
						     cx_str(dx));
					break;
				}
			}
			dtx_member__init(&p->dp_m[p->dp_nr]);
			p->dp_m[p->dp_nr].op = sop[i];
			p->dp_m[p->dp_nr].body.data = c->dc_bodies[i];
			p->dp_m[p->dp_nr].body.len = blen[i];
			p->dp_m[p->dp_nr].data.data = c->dc_data[i];
			p->dp_m[p->dp_nr].data.len = dlen[i];
			p->dp_mp[p->dp_nr] = &p->dp_m[p->dp_nr];
			p->dp_mi[p->dp_nr] = i;
			p->dp_nr++;
		}
	}
	/* The documented bound: DTM_PREPARE_BYTES_MAX per participant; and
	 * the deadline its calls get beyond the call timeout. */
	for (uint32_t k = 0; rc == 0 && k < c->dc_nr; k++) {
		struct dtx_part *p = &c->dc_p[k];
		uint64_t n = 0, extra;

		extra = 0;
		for (size_t j = 0; j < p->dp_nr; j++) {
			n += p->dp_m[j].body.len + p->dp_m[j].data.len;
			extra += p->dp_m[j].op == SOP_IDX ? DTX_CLU_IDX_MS
							  : DTX_CLU_MEMBER_MS;
		}
		extra += (n >> 20) * DTX_CLU_MIB_MS;
		p->dp_extra_ms = (uint32_t)(extra < DTX_CLU_EXTRA_MAX_MS ?
					    extra : DTX_CLU_EXTRA_MAX_MS);
		if (n > DTM_PREPARE_BYTES_MAX) {
			*dx->cx_bad = p->dp_mi[0];
			rc = err_set(-E2BIG, "dtx %s: %" PRIu64 " bytes of "
				     "members for server %s, more than a "
				     "PREPARE may carry (DTM_PREPARE_BYTES_MAX,"
				     " %u bytes per participant)", cx_str(dx),
				     n, cli_name(dx->cx_cli, p->dp_server),
				     DTM_PREPARE_BYTES_MAX);
		}
	}
	if (rc == 0) {
		qsort(c->dc_p, c->dc_nr, sizeof *c->dc_p, dtx_part_cmp);
		for (uint32_t k = 0; k < c->dc_nr; k++)
			c->dc_parts[k] = c->dc_p[k].dp_server;
	}
	free(srv);
	free(nsrv);
	free(sop);
	free(blen);
	free(dlen);
	return rc;
}

static void dtx_clu_kill(const char *point)
{
	if (FAULT_HIT(point)) {
		LOG_WARNING("fault point %s: SIGKILL", point);
		raise(SIGKILL);
	}
}

/* The member of participant p that refused its PREPARE: a participant
 * names it by its place in the PREPARE it got ("member N: ...", srv_dtx.c
 * pmem_check() and the apply), which the client maps back to the dtx's
 * member; 0 (its first) when the refusal names none (a transport error,
 * a refusal of the whole PREPARE).  Before, the participant's first
 * member was always blamed: with an inode and a directory entry on one
 * server, a create of a name that exists blamed the inode's record and
 * the POSIX view drew new inode numbers until it gave up (-EIO). */
static uint32_t dtx_part_culprit(const struct dtx_part *p)
{
	const char *m = p->dp_msg;
	unsigned int k;
	char colon;

	while ((m = strstr(m, "member ")) != NULL) {
		if (sscanf(m, "member %u%c", &k, &colon) == 2 &&
		    colon == ':' && k < p->dp_nr)
			return k;
		m += 7;
	}
	return 0;
}

/* One attempt: 0 (committed everywhere), -ESTALE (*stale: the part to
 * touch), or the failure (msg set). */
static int dtx_clu_attempt(struct cli_dtx *dx, struct dtx_clu *c,
			   struct dtx_part **stale, char *msg, size_t msz)
{
	uint32_t ms = cli_call_ms(dx->cx_cli);
	struct dtx_part *bad = NULL;
	uint64_t t0 = dtx_mono_ms();
	int rc;

	if (ms == 0 || ms > DTX_CLU_CALL_MS)
		ms = DTX_CLU_CALL_MS;
	*stale = NULL;
	c->dc_wait_ms = ms + DTX_CLU_SLACK_MS;
	for (uint32_t i = 0; i < c->dc_nr; i++)
		if (ms + c->dc_p[i].dp_extra_ms + DTX_CLU_SLACK_MS >
		    c->dc_wait_ms)
			c->dc_wait_ms = ms + c->dc_p[i].dp_extra_ms +
					DTX_CLU_SLACK_MS;
	dtx_parts_call(c, 0, c->dc_nr, DTM_MSG_PREPARE, 0, ms);
	for (uint32_t i = 0; i < c->dc_nr && bad == NULL; i++)
		if (c->dc_p[i].dp_rc != 0 ||
		    c->dc_p[i].dp_state != DTM_PREPARED)
			bad = &c->dc_p[i];
	if (bad != NULL) {
		rc = bad->dp_rc != 0 ? bad->dp_rc : -EPROTO;
		snprintf(msg, msz, "%s", bad->dp_msg);
		*dx->cx_bad = bad->dp_mi[dtx_part_culprit(bad)];
		if (rc == -ESTALE)
			*stale = bad;
		dtx_clu_kill("dtx.cli.refused");
		dtx_parts_call(c, 0, c->dc_nr, DTM_MSG_DECIDE, DTM_ABORTED, ms);
		return rc;
	}
	if (dtx_mono_ms() - t0 > c->dc_wait_ms) {
		/* Past the deadline the PREPARE announced: the decider may
		 * have aborted alone by now; never send it a COMMIT. */
		dtx_parts_call(c, 0, c->dc_nr, DTM_MSG_DECIDE, DTM_ABORTED, ms);
		snprintf(msg, msz, "the votes took %" PRIu64 " ms, longer than "
			 "the decision deadline (%u ms): aborted",
			 dtx_mono_ms() - t0, c->dc_wait_ms);
		return -ECANCELED;
	}
	dtx_clu_kill("dtx.cli.prepared");
	if (dx->cx_cli->dc_abandon != NULL &&
	    __atomic_load_n(dx->cx_cli->dc_abandon, __ATOMIC_RELAXED)) {
		snprintf(msg, msz, "abandoned after the votes (benchmark)");
		return -ETIMEDOUT;
	}
	/* The decider first: its COMMITTED record is the commit point. */
	dtx_parts_call(c, 0, 1, DTM_MSG_DECIDE, DTM_COMMITTED, ms);
	if (c->dc_p[0].dp_rc == 0 && c->dc_p[0].dp_state == DTM_ABORTED) {
		dtx_parts_call(c, 1, c->dc_nr, DTM_MSG_DECIDE, DTM_ABORTED, ms);
		snprintf(msg, msz, "server %s aborted it (in doubt longer than "
			 "the termination timeout)",
			 cli_name(dx->cx_cli, c->dc_p[0].dp_server));
		return -ECANCELED;
	}
	if (c->dc_p[0].dp_rc != 0 || c->dc_p[0].dp_state != DTM_COMMITTED) {
		snprintf(msg, msz, "outcome unknown (in doubt until the "
			 "participants resolve it; see strata dtx ls): %.150s",
			 c->dc_p[0].dp_msg);
		return -ETIMEDOUT;
	}
	dtx_clu_kill("dtx.cli.decide.partial");
	dtx_parts_call(c, 1, c->dc_nr, DTM_MSG_DECIDE, DTM_COMMITTED, ms);
	for (uint32_t i = 1; i < c->dc_nr; i++)
		if (c->dc_p[i].dp_rc != 0 ||
		    c->dc_p[i].dp_state != DTM_COMMITTED) {
			snprintf(msg, msz, "committed, but not yet applied on "
				 "every participant (it will be, when it "
				 "learns the outcome): %.150s", c->dc_p[i].dp_msg);
			return -EINPROGRESS;
		}
	return 0;
}

int dtm_cli_commit(const struct dtm_cli *cli, struct st_dtx_id *id,
		   struct eng_req *const *m, uint32_t nr, uint32_t *bad,
		   char *msg, size_t msz)
{
	struct cli_dtx x = {.cx_cli = cli, .cx_id = id, .cx_m = m,
			    .cx_nr = nr, .cx_bad = bad};
	struct cli_dtx *dx = &x;
	struct dtx_clu c = {0};
	int rc = 0;
	uint64_t t0 = dtx_mono_ms();
	uint32_t ms = cli_call_ms(cli);

	if (ms == 0 || ms > DTX_CLU_CALL_MS)
		ms = DTX_CLU_CALL_MS;
	for (uint32_t t = 0; rc == 0 && t < DTX_CLU_TRIES; t++) {
		struct dtx_part *stale;

		if (t > 0)
			dtm_id_make(dx->cx_id, cli->dc_node);
		rc = dtx_clu_build(dx, &c);
		if (rc != 0) {
			snprintf(msg, msz, "%s", err_msg());
			break;
		}
		rc = dtx_clu_attempt(dx, &c, &stale, msg, msz);
		if (rc == -ESTALE && t + 1 < DTX_CLU_TRIES &&
		    dtx_mono_ms() - t0 < ms) {
			uint32_t back = 50u * t;

			/* every index that participant orders (which one
			 * must verify is not known here), once each */
			for (size_t k = 0; k < stale->dp_nr; k++) {
				const struct eng_req *rk =
					dx->cx_m[stale->dp_mi[k]];
				bool seen = rk->er_keys == NULL;

				for (size_t j = 0; !seen && j < k; j++)
					seen = st_id_cmp(&rk->er_id,
						&dx->cx_m[stale->dp_mi[j]]->
						er_id) == 0;
				if (!seen)
					cli->dc_ops->co_idx_touch(cli->dc_arg,
						stale->dp_server, rk);
			}
			rc = 0;
			dtx_clu_fini(&c, dx->cx_nr);
			usleep(1000u * (back < DTX_CLU_BACKOFF_MAX_MS ? back :
					DTX_CLU_BACKOFF_MAX_MS));
			continue;
		}
		break;
	}
	dtx_clu_fini(&c, dx->cx_nr);
	return rc;
}

/* ============================================================ settle
 *
 * dtm_cli_settle() (clovis_dtx_settle()): every server's LIST (in-doubt records first, then the
 * newest decided ones) is read until none holds a PREPARED record of a dtx
 * below the bound.  A server that answered clear once is not asked again:
 * a PREPARED record is durable before its YES, so a dtx below the bound that
 * can still commit had its record logged before the server's first answer
 * (a PREPARE logged later belongs to a dtx that can only abort, or to one
 * still being committed by a live coordinator, which was not in doubt).
 */


/* Entries asked for in one LIST.  Test builds: STRATA_TEST_DTX_LIST_LIMIT
 * makes it smaller (the "in doubt behind newer dtxs" reproducer). */
static uint32_t settle_list_limit(void)
{
	uint32_t limit = DTM_LIST_MAX;
#ifdef STRATA_FAULT_INJECT
	const char *e = getenv("STRATA_TEST_DTX_LIST_LIMIT");

	if (e != NULL && atoi(e) > 0 && (uint32_t)atoi(e) < limit)
		limit = (uint32_t)atoi(e);
#endif
	return limit;
}

/* One server's state during a settle. */
struct settle_srv {
	uint64_t ss_bound;  /* dtxs below this id are waited for (0: unset) */
	bool ss_clear;
	int ss_rc;          /* why not clear: a call failure or -ETIMEDOUT */
	char ss_msg[LIM_ERRMSG_LEN];
};

/* Ask server s once; 0 when it holds nothing below its bound. */
static int settle_ask(const struct dtm_cli *cli, uint32_t s, struct settle_srv *st,
		      uint64_t before, uint64_t start, uint32_t limit,
		      uint32_t ms)
{
	DtxReq q = DTX_REQ__INIT;
	DtxReply *rp = NULL;
	uint8_t *b = NULL;
	size_t bl = 0, rl = 0;
	void *rb = NULL;
	uint64_t prepared = 0, below = 0;
	const DtxInfo *old = NULL;
	int rc;

	q.kind = DTM_MSG_LIST;
	q.limit = limit;
	q.clock = dtm_hlc_now();
	q.home = s + 1;
	rc = dtm_pack(&q.base, &b, &bl);
	if (rc == 0)
		rc = cli->dc_ops->co_call(cli->dc_arg, s, b, bl, NULL, 0, ms,
					  &rb, &rl);
	if (rc == 0)
		rc = dtm_reply_decode(rb, rl, &rp);
	free(rb);
	free(b);
	if (rc != 0) {
		snprintf(st->ss_msg, sizeof st->ss_msg, "server %s did not "
			 "answer the dtx LIST (%s): it may hold a dtx in doubt",
			 cli_name(cli, s), err_msg());
		return st->ss_rc = rc;
	}
	dtm_hlc_observe(rp->clock);
	if (st->ss_bound == 0)
		st->ss_bound = before != 0 ? before
			       : (rp->clock > start ? rp->clock : start);
	for (size_t i = 0; i < rp->n_list; i++) {
		const DtxInfo *e = rp->list[i];

		if (e->state != DTM_PREPARED)
			continue;
		prepared++;
		if (e->hlc >= st->ss_bound)
			continue;
		below++;
		if (old == NULL || e->hlc < old->hlc)
			old = e;
	}
	if (old != NULL) {
		struct st_dtx_id id = {.di_hlc = old->hlc,
					   .di_node = old->node};
		char ids[DTM_ID_STR_LEN];
		uint64_t now = dtm_hlc_us(dtm_hlc_now());

		snprintf(st->ss_msg, sizeof st->ss_msg, "server %s holds %" PRIu64
			 " dtx(s) in doubt, the oldest %s (PREPARED %" PRIu64
			 " ms ago, %u participants)", cli_name(cli, s),
			 below, dtm_id_format(&id, ids),
			 now > old->time_us ? (now - old->time_us) / 1000 : 0,
			 (unsigned)old->n_parts);
		rc = -ETIMEDOUT;
	} else if (rp->n_list >= limit && prepared < rp->in_doubt) {
		snprintf(st->ss_msg, sizeof st->ss_msg, "server %s holds %"
			 PRIu64 " dtxs in doubt, more than one LIST shows (%u)",
			 cli_name(cli, s), rp->in_doubt, limit);
		rc = -ETIMEDOUT;
	}
	dtx_reply__free_unpacked(rp, NULL);
	st->ss_rc = rc;
	st->ss_clear = rc == 0;
	return rc;
}

int dtm_cli_settle(const struct dtm_cli *cli, uint64_t before,
		   uint32_t timeout_ms)
{
	uint64_t t0 = dtx_mono_ms(), start, pause = SETTLE_PAUSE_MIN_MS;
	uint32_t n, limit = settle_list_limit(), call_ms;
	struct settle_srv *st;
	int rc = 0;

	n = cli->dc_ops->co_nr_servers(cli->dc_arg);
	call_ms = cli_call_ms(cli);
	st = calloc(n, sizeof *st);
	if (st == NULL)
		return err_set(-ENOMEM, "dtx settle: %u servers", n);
	start = dtm_hlc_now();
	for (;;) {
		uint64_t el = dtx_mono_ms() - t0;
		uint32_t left = el >= timeout_ms ? 0 : timeout_ms - (uint32_t)el;
		bool clear = true;

		for (uint32_t s = 0; s < n; s++) {
			uint32_t ms = call_ms;

			if (st[s].ss_clear)
				continue;
			/* the last round still asks with a short timeout */
			if (left < ms)
				ms = left > 100 ? left : 100;
			if (settle_ask(cli, s, &st[s], before, start, limit,
				       ms) != 0)
				clear = false;
		}
		if (clear)
			break;
		el = dtx_mono_ms() - t0;
		if (el >= timeout_ms) {
			for (uint32_t s = 0; s < n; s++)
				if (!st[s].ss_clear) {
					rc = err_set(st[s].ss_rc, "dtx settle: "
						     "not settled in %u ms: %s",
						     timeout_ms,
						     st[s].ss_msg);
					break;
				}
			break;
		}
		if (pause > timeout_ms - el)
			pause = timeout_ms - el;
		usleep((useconds_t)pause * 1000u);
		pause = pause * 2 > SETTLE_PAUSE_MAX_MS ? SETTLE_PAUSE_MAX_MS
							: pause * 2;
	}
	free(st);
	return rc;
}
