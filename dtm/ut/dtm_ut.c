/*
 * dtm_ut.c — suite "dtm_core" of module "dtm": dtm's parts without the
 * Clovis API: transaction ids and the hybrid logical clock, the
 * termination rule and its decider, the message and record codecs, and
 * the client half (the coordinator, dtm/cli_dtx.c) over a fake transport.
 * The dtx API's suite "dtm" is clovis/ut/dtm_ut.c, which registers this
 * one too (issue 27 point 1: dtm's tests do not include clovis.h).
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/server/msg.h"
#include "dtm/dtm.h"
#include "dtm/dtm_cli.h"
#include "dtm/dtm_msg.h"
#include "tests/ut.h"

/* ------------------------------------------------------------- ids */

static void test_hlc_ids(void)
{
	struct st_dtx_id a, b, c;
	char buf[DTM_ID_STR_LEN];
	uint64_t prev = dtm_hlc_now();

	for (int i = 0; i < 10000; i++) {
		uint64_t t = dtm_hlc_now();

		CU_ASSERT_FATAL(t > prev);
		prev = t;
	}
	/* A clock far ahead, observed, is passed. */
	dtm_hlc_observe(prev + (1000000ull << DTM_HLC_LOGICAL_BITS));
	CU_ASSERT(dtm_hlc_now() > prev + (1000000ull << DTM_HLC_LOGICAL_BITS));
	dtm_id_make(&a, 7);
	dtm_id_make(&b, 3);
	CU_ASSERT(dtm_id_cmp(&a, &b) < 0);
	CU_ASSERT(dtm_id_cmp(&b, &a) > 0);
	CU_ASSERT(dtm_id_cmp(&a, &a) == 0);
	CU_ASSERT_EQUAL(dtm_id_parse(dtm_id_format(&b, buf), &c), 0);
	CU_ASSERT(dtm_id_cmp(&b, &c) == 0 && c.di_node == 3);
	CU_ASSERT_EQUAL(dtm_id_parse("zz", &c), -EINVAL);
	CU_ASSERT_EQUAL(dtm_id_parse("1:", &c), -EINVAL);
	CU_ASSERT_EQUAL(dtm_id_parse("100000000:1", &c), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "100000000:1"));
}

/* ------------------------------------------------- termination rule */

static enum dtm_verdict decide3(uint32_t self, uint32_t a, uint32_t b,
				bool ra, bool rb, bool da, bool db)
{
	struct dtm_answer p[2] = {{a, ra, da}, {b, rb, db}};

	return dtm_term_decide(self, p, 2);
}

static void test_term_rule(void)
{
	uint32_t local;
	bool log_it;

	/* A decided participant keeps its decision. */
	CU_ASSERT_EQUAL(decide3(DTM_COMMITTED, DTM_PREPARED, DTM_PREPARED,
				true, true, false, false), DTM_V_COMMIT);
	CU_ASSERT_EQUAL(decide3(DTM_ABORTED, DTM_COMMITTED, 0, true, false,
				false, false), DTM_V_ABORT);
	/* Any peer that knows gives the outcome. */
	CU_ASSERT_EQUAL(decide3(DTM_PREPARED, DTM_PREPARED, DTM_COMMITTED,
				true, true, false, false), DTM_V_COMMIT);
	CU_ASSERT_EQUAL(decide3(DTM_PREPARED, DTM_ABORTED, DTM_PREPARED,
				true, true, false, false), DTM_V_ABORT);
	/* A peer that never prepared: the client cannot have committed. */
	CU_ASSERT_EQUAL(decide3(DTM_PREPARED, DTM_UNKNOWN, DTM_PREPARED,
				true, true, false, false), DTM_V_ABORT);
	/* All prepared, or a live peer silent: in doubt. */
	CU_ASSERT_EQUAL(decide3(DTM_PREPARED, DTM_PREPARED, DTM_PREPARED,
				true, true, false, false), DTM_V_WAIT);
	CU_ASSERT_EQUAL(decide3(DTM_PREPARED, DTM_PREPARED, 0, true, false,
				false, false), DTM_V_WAIT);
	/* Gone for good: abort unless a live peer holds COMMITTED. */
	CU_ASSERT_EQUAL(decide3(DTM_PREPARED, DTM_PREPARED, 0, true, false,
				false, true), DTM_V_ABORT);
	CU_ASSERT_EQUAL(decide3(DTM_PREPARED, DTM_COMMITTED, 0, true, false,
				false, true), DTM_V_COMMIT);
	/* Answering a query without a record logs ABORTED first, and a late
	 * PREPARE is then refused. */
	local = DTM_UNKNOWN;
	CU_ASSERT_EQUAL(dtm_query_answer(&local, &log_it), DTM_ABORTED);
	CU_ASSERT(log_it && local == DTM_ABORTED);
	CU_ASSERT_FALSE(dtm_prepare_allowed(local));
	CU_ASSERT_TRUE(dtm_prepare_allowed(DTM_UNKNOWN));
	local = DTM_PREPARED;
	CU_ASSERT_EQUAL(dtm_query_answer(&local, &log_it), DTM_PREPARED);
	CU_ASSERT_FALSE(log_it);
}

/* The decider's rule: alone, on expiry, it aborts an in-doubt record. */
static void test_term_decider(void)
{
	CU_ASSERT_EQUAL(dtm_term_decider(DTM_PREPARED, false), DTM_V_WAIT);
	CU_ASSERT_EQUAL(dtm_term_decider(DTM_PREPARED, true), DTM_V_ABORT);
	CU_ASSERT_EQUAL(dtm_term_decider(DTM_COMMITTED, true), DTM_V_COMMIT);
	CU_ASSERT_EQUAL(dtm_term_decider(DTM_ABORTED, false), DTM_V_ABORT);
	CU_ASSERT_EQUAL(dtm_term_decider(DTM_UNKNOWN, false), DTM_V_ABORT);
}

/* Pack q and decode it for a cluster of nr servers. */
static int msg_round(DtxReq *q, uint32_t nr)
{
	uint8_t *b;
	size_t len;
	DtxReq *out = NULL;
	int rc = dtm_pack(&q->base, &b, &len);

	CU_ASSERT_EQUAL_FATAL(rc, 0);
	rc = dtm_req_decode(b, len, nr, &out);
	if (rc == 0) {
		CU_ASSERT_EQUAL(out->kind, q->kind);
		CU_ASSERT_EQUAL(out->hlc, q->hlc);
		CU_ASSERT_EQUAL(out->wait_ms, q->wait_ms);
		dtx_req__free_unpacked(out, NULL);
	} else {
		CU_ASSERT_PTR_NULL(out);
		CU_ASSERT(strlen(err_msg()) > 0);
	}
	free(b);
	return rc;
}

/* The protocol decoder refuses every malformed field. */
static void test_msg_codec(void)
{
	DtxReq q = DTX_REQ__INIT;
	DtxMember m = DTX_MEMBER__INIT, *mp[1] = {&m};
	uint32_t parts[3] = {0, 2, 1};
	uint8_t *big = malloc(DTM_PREPARE_BYTES_MAX + 1);
	uint8_t junk[5] = {0xff, 0xff, 0xff, 0xff, 0xff};
	const uint8_t bad_state[2] = {0x08, 0x1e};      /* state = 30 */
	DtxReq *out;
	DtxReply *rp;

	q.kind = DTM_MSG_PREPARE;
	q.hlc = 77;
	q.node = 5;
	q.n_parts = 3;
	q.parts = parts;
	q.n_members = 1;
	q.members = mp;
	m.op = SOP_IDX;
	m.body.data = junk;
	m.body.len = 3;
	CU_ASSERT_EQUAL(msg_round(&q, 3), 0);
	q.wait_ms = DTM_WAIT_MS_MAX;                  /* decision deadline */
	CU_ASSERT_EQUAL(msg_round(&q, 3), 0);
	q.wait_ms = DTM_WAIT_MS_MAX + 1;
	CU_ASSERT_EQUAL(msg_round(&q, 3), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "wait_ms"));
	q.wait_ms = 0;
	q.home = 3;                                   /* home 2 of 3 (+1) */
	CU_ASSERT_EQUAL(msg_round(&q, 3), 0);
	q.home = 4;                                   /* no such home */
	CU_ASSERT_EQUAL(msg_round(&q, 3), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "home 4"));
	q.home = 0;
	CU_ASSERT_EQUAL(msg_round(&q, 2), -EINVAL);   /* server 2 of 2 */
	parts[1] = 0;
	CU_ASSERT_EQUAL(msg_round(&q, 3), -EINVAL);   /* given twice */
	parts[1] = 2;
	m.op = 12345;
	CU_ASSERT_EQUAL(msg_round(&q, 3), -EINVAL);   /* member op */
	m.op = SOP_IDX;
	m.data.data = junk;
	m.data.len = 1;
	CU_ASSERT_EQUAL(msg_round(&q, 3), -EINVAL);   /* data on index */
	m.op = SOP_OBJ;
	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	m.data.data = big;
	m.data.len = DTM_PREPARE_BYTES_MAX + 1;
	CU_ASSERT_EQUAL(msg_round(&q, 3), -E2BIG);    /* too many bytes */
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "DTM_PREPARE_BYTES_MAX"));
	free(big);
	m.data.data = NULL;
	m.data.len = 0;
	/* A PREPARE envelope: no members or participants, bulk_len bounded;
	 * its bulk must be the PREPARE of the same dtx. */
	{
		DtxReq env = DTX_REQ__INIT;
		uint8_t *pb;
		size_t pl;

		CU_ASSERT_EQUAL_FATAL(dtm_pack(&q.base, &pb, &pl), 0);
		env.kind = DTM_MSG_PREPARE;
		env.hlc = q.hlc;
		env.node = q.node;
		env.bulk_len = pl;
		CU_ASSERT_EQUAL(msg_round(&env, 3), 0);
		CU_ASSERT_EQUAL(dtm_prepare_decode(&env, pb, pl, 3, &out), 0);
		CU_ASSERT(out != NULL && out->n_members == 1);
		if (out != NULL)
			dtx_req__free_unpacked(out, NULL);
		CU_ASSERT_EQUAL(dtm_prepare_decode(&env, pb, pl - 1, 3, &out),
				-EBADMSG);                /* length */
		env.hlc++;
		CU_ASSERT_EQUAL(dtm_prepare_decode(&env, pb, pl, 3, &out),
				-EINVAL);                 /* another dtx */
		CU_ASSERT_PTR_NULL(out);
		env.hlc--;
		env.bulk_len = (uint64_t)DTM_PREPARE_WIRE_MAX + 1;
		CU_ASSERT_EQUAL(msg_round(&env, 3), -E2BIG);
		CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "bulk_len"));
		env.bulk_len = pl;
		env.n_members = 1;
		env.members = mp;
		CU_ASSERT_EQUAL(msg_round(&env, 3), -EINVAL); /* members too */
		env.n_members = 0;
		env.kind = DTM_MSG_DECIDE;
		env.decision = DTM_COMMITTED;
		CU_ASSERT_EQUAL(msg_round(&env, 3), -EINVAL); /* not PREPARE */
		free(pb);
	}
	m.data.len = 0;
	m.body.len = 0;
	CU_ASSERT_EQUAL(msg_round(&q, 3), -EINVAL);   /* empty body */
	m.body.len = 3;
	q.n_members = 0;
	CU_ASSERT_EQUAL(msg_round(&q, 3), -E2BIG);    /* no member */
	q.kind = DTM_MSG_DECIDE;
	q.decision = DTM_PREPARED;
	CU_ASSERT_EQUAL(msg_round(&q, 3), -EINVAL);   /* decision */
	q.decision = DTM_COMMITTED;
	CU_ASSERT_EQUAL(msg_round(&q, 3), 0);
	q.wait_ms = 100;                              /* PREPARE only */
	CU_ASSERT_EQUAL(msg_round(&q, 3), -EINVAL);
	q.wait_ms = 0;
	q.hlc = 0;
	CU_ASSERT_EQUAL(msg_round(&q, 3), -EINVAL);   /* no id */
	q.kind = 99;
	q.hlc = 1;
	CU_ASSERT_EQUAL(msg_round(&q, 3), -EINVAL);   /* kind */
	CU_ASSERT_EQUAL(dtm_req_decode(junk, sizeof junk, 3, &out), -EBADMSG);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_EQUAL(dtm_reply_decode(junk, sizeof junk, &rp), -EBADMSG);
	CU_ASSERT_PTR_NULL(rp);
	/* A reply with state 30: refused, and its message built from the
	 * values read before the reply is freed (the fuzzer's finding, a
	 * use after free that the ASan run of this suite catches). */
	CU_ASSERT_EQUAL(dtm_reply_decode(bad_state, sizeof bad_state, &rp),
			-EBADMSG);
	CU_ASSERT_PTR_NULL(rp);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "state 30"));
}

static void test_rec_codec(void)
{
	struct dtm_rec r = {.dr_magic = DTM_REC_MAGIC,
			    .dr_version = DTM_REC_VERSION,
			    .dr_state = DTM_PREPARED, .dr_nr_parts = 3,
			    .dr_hlc = 0x1234, .dr_node = 9, .dr_coord = 9};
	uint16_t parts[DTM_PARTS_MAX] = {0, 2, 5}, got[DTM_PARTS_MAX];
	struct dtm_rec out;
	uint8_t buf[256];
	int n = dtm_rec_encode(&r, parts, buf, sizeof buf);

	CU_ASSERT_EQUAL_FATAL(n, (int)(sizeof r + 3 * sizeof(uint16_t)));
	CU_ASSERT_EQUAL(dtm_rec_decode(buf, (size_t)n, &out, got), 0);
	CU_ASSERT(out.dr_hlc == 0x1234 && out.dr_state == DTM_PREPARED &&
		  got[2] == 5);
	CU_ASSERT_EQUAL(dtm_rec_decode(buf, (size_t)n - 1, &out, got),
			-ST_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "dr_nr_parts"));
	CU_ASSERT_EQUAL(dtm_rec_decode(buf, 10, &out, got), -ST_ECORRUPT);
	buf[0] ^= 1;
	CU_ASSERT_EQUAL(dtm_rec_decode(buf, (size_t)n, &out, got),
			-ST_ECORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err_msg(), "dr_magic"));
	CU_ASSERT_EQUAL(dtm_rec_encode(&r, parts, buf, 20), -ENOBUFS);
	r.dr_nr_parts = 0;
	CU_ASSERT_EQUAL(dtm_rec_encode(&r, parts, buf, sizeof buf), -EINVAL);
	r.dr_nr_parts = 1;
	r.dr_state = 7;
	CU_ASSERT_EQUAL(dtm_rec_encode(&r, parts, buf, sizeof buf), -EINVAL);
}

/* ----------------------------------------------- the client half alone */

/* A fake transport of two servers for dtm_cli_commit (dtm_cli.h): member i
 * goes to server i % 2; every call is logged; fake_no makes that server's
 * PREPARE fail (a NO). */
#define FAKE_LOG_MAX 16
static struct {
	pthread_mutex_t f_lock;
	uint32_t f_nr;
	uint32_t f_srv[FAKE_LOG_MAX];
	uint32_t f_kind[FAKE_LOG_MAX];
	uint32_t f_decision[FAKE_LOG_MAX];
	uint32_t f_no;    /* server voting NO (UINT32_MAX: none) */
} fake = {.f_lock = PTHREAD_MUTEX_INITIALIZER};

static int fake_call(void *arg, uint32_t server, const void *body,
		     size_t len, const void *bulk, size_t bulk_len,
		     uint32_t ms, void **rbody, size_t *rlen)
{
	DtxReply r = DTX_REPLY__INIT;
	DtxReq *q = NULL;
	uint8_t *b = NULL;
	size_t bl = 0;
	int rc = dtm_req_decode(body, len, 2, &q);

	if (rc != 0)
		return rc;
	pthread_mutex_lock(&fake.f_lock);
	if (fake.f_nr < FAKE_LOG_MAX) {
		fake.f_srv[fake.f_nr] = server;
		fake.f_kind[fake.f_nr] = q->kind;
		fake.f_decision[fake.f_nr] = q->decision;
		fake.f_nr++;
	}
	pthread_mutex_unlock(&fake.f_lock);
	if (q->kind == DTM_MSG_PREPARE && server == fake.f_no)
		rc = err_set(-EIO, "fake server s%u votes NO", server);
	r.state = q->kind == DTM_MSG_PREPARE ? DTM_PREPARED : q->decision;
	r.clock = dtm_hlc_now();
	dtx_req__free_unpacked(q, NULL);
	if (rc == 0)
		rc = dtm_pack(&r.base, &b, &bl);
	*rbody = b;
	*rlen = bl;
	return rc;
}

static const char *fake_name(void *arg, uint32_t s)
{
	return s == 0 ? "s0" : "s1";
}

static uint32_t fake_call_ms(void *arg)
{
	return 2000;
}

static uint32_t fake_nr_servers(void *arg)
{
	return 2;
}

static int fake_member(void *arg, const struct eng_req *r, uint32_t *server,
		       uint32_t *nsrv, uint32_t *sop, uint8_t **body,
		       size_t *len)
{
	*server = (uint32_t)r->er_id.si_lo % 2;
	*nsrv = 1;
	*sop = SOP_IDX;
	*body = malloc(4);
	if (*body == NULL)
		return -ENOMEM;
	memcpy(*body, "memb", 4);
	*len = 4;
	return 0;
}

static void fake_idx_touch(void *arg, uint32_t server,
			   const struct eng_req *r)
{
}

static const struct dtm_cli_ops fake_ops = {
	.co_call = fake_call,
	.co_server_name = fake_name,
	.co_call_ms = fake_call_ms,
	.co_nr_servers = fake_nr_servers,
	.co_member = fake_member,
	.co_idx_touch = fake_idx_touch,
};

/* Which log entry is server srv's first of kind (FAKE_LOG_MAX: none). */
static uint32_t fake_find(uint32_t srv, uint32_t kind)
{
	for (uint32_t i = 0; i < fake.f_nr; i++)
		if (fake.f_srv[i] == srv && fake.f_kind[i] == kind)
			return i;
	return FAKE_LOG_MAX;
}

/* One commit of 3 members over the fake transport. */
static int fake_commit(uint32_t no, bool abandon, uint32_t *bad, char *msg,
		       size_t msz)
{
	struct eng_req r[3];
	struct eng_req *m[3] = {&r[0], &r[1], &r[2]};
	struct st_dtx_id id;
	struct dtm_cli cli = {.dc_ops = &fake_ops, .dc_node = 7,
			      .dc_abandon = &abandon};

	memset(r, 0, sizeof r);
	for (uint32_t i = 0; i < 3; i++) {
		r[i].er_type = ST_ET_IDX;
		r[i].er_kind = ER_IDX_PUT;
		r[i].er_id.si_lo = i;
	}
	fake.f_nr = 0;
	fake.f_no = no;
	dtm_id_make(&id, 7);
	*bad = UINT32_MAX;
	return dtm_cli_commit(&cli, &id, m, 3, bad, msg, msz);
}

/* The coordinator alone (dtm/cli_dtx.c): all YES → COMMIT to the decider
 * (the lowest server) before the other; a NO → ABORT to both, the member
 * of the server that said NO blamed; abandoned after the votes → no
 * DECIDE at all, -ETIMEDOUT. */
static void test_cli_fake(void)
{
	char msg[LIM_ERRMSG_LEN] = "";
	uint32_t bad;
	int rc;

	rc = fake_commit(UINT32_MAX, false, &bad, msg, sizeof msg);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(fake.f_nr, 4);
	CU_ASSERT(fake_find(0, DTM_MSG_PREPARE) < FAKE_LOG_MAX);
	CU_ASSERT(fake_find(1, DTM_MSG_PREPARE) < FAKE_LOG_MAX);
	CU_ASSERT(fake_find(0, DTM_MSG_DECIDE) < fake_find(1, DTM_MSG_DECIDE));
	CU_ASSERT(fake_find(1, DTM_MSG_DECIDE) < FAKE_LOG_MAX);
	for (uint32_t i = 0; i < fake.f_nr; i++)
		if (fake.f_kind[i] == DTM_MSG_DECIDE)
			CU_ASSERT_EQUAL(fake.f_decision[i], DTM_COMMITTED);
	CU_ASSERT_EQUAL(bad, UINT32_MAX);

	rc = fake_commit(1, false, &bad, msg, sizeof msg);
	CU_ASSERT_EQUAL(rc, -EIO);
	CU_ASSERT_EQUAL(bad, 1); /* member 1 is server s1's first */
	CU_ASSERT(strstr(msg, "server s1") != NULL);
	CU_ASSERT_EQUAL(fake.f_nr, 4);
	for (uint32_t i = 0; i < fake.f_nr; i++)
		if (fake.f_kind[i] == DTM_MSG_DECIDE)
			CU_ASSERT_EQUAL(fake.f_decision[i], DTM_ABORTED);
	CU_ASSERT(fake_find(0, DTM_MSG_DECIDE) < FAKE_LOG_MAX);
	CU_ASSERT(fake_find(1, DTM_MSG_DECIDE) < FAKE_LOG_MAX);

	rc = fake_commit(UINT32_MAX, true, &bad, msg, sizeof msg);
	CU_ASSERT_EQUAL(rc, -ETIMEDOUT);
	CU_ASSERT_EQUAL(fake.f_nr, 2);
	CU_ASSERT_EQUAL(fake_find(0, DTM_MSG_DECIDE), FAKE_LOG_MAX);
}

int dtm_core_ut_add(void)
{
	CU_pSuite s = CU_add_suite("dtm_core", NULL, NULL);

	if (s == NULL ||
	    !CU_add_test(s, "hlc_ids", test_hlc_ids) ||
	    !CU_add_test(s, "term_rule", test_term_rule) ||
	    !CU_add_test(s, "rec_codec", test_rec_codec) ||
	    !CU_add_test(s, "term_decider", test_term_decider) ||
	    !CU_add_test(s, "msg_codec", test_msg_codec) ||
	    !CU_add_test(s, "cli_fake", test_cli_fake))
		return -1;
	return 0;
}
