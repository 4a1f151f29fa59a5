/*
 * rpc_ut.c — suite "rpc": the RPC layer over real libfabric endpoints on
 * 127.0.0.1 (tcp;ofi_rxm, and shm), in one process and across processes.
 *
 * Servers listen only on 127.0.0.1, at ports picked at random in
 * 30000-59999 and retried on -EADDRINUSE.  Every wait is bounded.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/rpc/rpc.h"
#include "tests/ut.h"


#define UT_SECRET "strata-unit-test-secret-0123456789"
#define OP_ECHO 64u     /* reply = request body */
#define OP_BULK 65u     /* OUT: pull and check; IN: push a pattern */
#define OP_SLEEP 66u    /* sleep body's ms, then reply */
#define OP_HOLD 67u     /* keep the request; the test replies later */
#define OP_ASYNC 68u    /* reply from another thread */

static const char *ut_prov = "tcp;ofi_rxm";

static __attribute__((unused)) uint64_t ut_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct rpc_conf ut_conf(void)
{
	struct rpc_conf c = { 0 };

	c.rc_provider = ut_prov;
	c.rc_secret = UT_SECRET;
	c.rc_secret_len = strlen(UT_SECRET);
	return c;
}

/* Byte i of a pattern seeded by seed. */
static uint8_t ut_pat(uint64_t seed, uint64_t i)
{
	uint64_t x = (seed + i) * 0x9E3779B97F4A7C15ull;

	return (uint8_t)(x >> 56);
}

/* ------------------------------------------------------------ handlers */

static void h_echo(struct rpc_sreq *r, void *arg)
{
	size_t len;
	const void *b = rpc_sreq_body(r, &len);

	(void)arg;
	rpc_sreq_reply(r, 0, b, len, NULL);
}

/* Body: 8-byte seed.  OUT: pull everything in 3 pieces and check it
 * against the pattern; IN: push the pattern in 2 pieces. */
static void h_bulk(struct rpc_sreq *r, void *arg)
{
	size_t len, n = rpc_sreq_bulk_len(r), half = n / 2;
	const void *b = rpc_sreq_body(r, &len);
	uint64_t seed = 0;
	uint8_t *buf = malloc(n ? n : 1);
	int rc = 0;

	(void)arg;
	if (buf == NULL || len != sizeof seed) {
		free(buf);
		rpc_sreq_reply(r, -EINVAL, NULL, 0, "bad bulk request");
		return;
	}
	memcpy(&seed, b, sizeof seed);
	if ((uintptr_t)arg == RPC_BULK_OUT) {
		size_t third = n / 3;

		rc = rpc_sreq_bulk_pull(r, 0, buf, third);
		if (rc == 0)
			rc = rpc_sreq_bulk_pull(r, third, buf + third,
						n - 2 * third);
		if (rc == 0)
			rc = rpc_sreq_bulk_pull(r, n - third, buf + n - third,
						third);
		for (size_t i = 0; rc == 0 && i < n; i++)
			if (buf[i] != ut_pat(seed, i))
				rc = -EILSEQ;
	} else {
		for (size_t i = 0; i < n; i++)
			buf[i] = ut_pat(seed, i);
		rc = rpc_sreq_bulk_push(r, half, buf + half, n - half);
		if (rc == 0)
			rc = rpc_sreq_bulk_push(r, 0, buf, half);
	}
	free(buf);
	rpc_sreq_reply(r, rc, NULL, 0, rc ? err_msg() : NULL);
}

static void h_sleep(struct rpc_sreq *r, void *arg)
{
	size_t len;
	const uint32_t *ms = rpc_sreq_body(r, &len);

	(void)arg;
	if (len == sizeof *ms)
		usleep(*ms * 1000u);
	rpc_sreq_reply(r, 0, NULL, 0, NULL);
}

static struct rpc_sreq *ut_held[64];
static atomic_int ut_nr_held;

static void h_hold(struct rpc_sreq *r, void *arg)
{
	int i = atomic_fetch_add(&ut_nr_held, 1);

	(void)arg;
	if (i < 64)
		ut_held[i] = r;
	else
		rpc_sreq_reply(r, -ENOSPC, NULL, 0, "too many held");
}

static __attribute__((unused)) void ut_release_held(int rc)
{
	int n = atomic_exchange(&ut_nr_held, 0);

	for (int i = 0; i < n && i < 64; i++)
		rpc_sreq_reply(ut_held[i], rc, "late", 4, NULL);
}

static void *ut_async_reply(void *arg)
{
	usleep(20000);
	rpc_sreq_reply(arg, -ENOENT, "async", 5, "replied from another "
		       "thread");
	return NULL;
}

static void h_async(struct rpc_sreq *r, void *arg)
{
	pthread_t t;

	(void)arg;
	if (pthread_create(&t, NULL, ut_async_reply, r) != 0)
		rpc_sreq_reply(r, -EAGAIN, NULL, 0, NULL);
	else
		pthread_detach(t);
}

/* ------------------------------------------------------------- helpers */

static uint16_t ut_port_base;

/* Open a server on 127.0.0.1 at a free port with every test handler. */
static struct rpc_ep *ut_server(const struct rpc_conf *c, uint16_t *port)
{
	struct rpc_ep *ep = NULL;
	int rc = -EADDRINUSE;

	if (ut_port_base == 0)
		ut_port_base = (uint16_t)(30000 + (getpid() * 7919u) % 29000);
	for (int i = 0; i < 20 && rc == -EADDRINUSE; i++) {
		*port = ut_port_base++;
		rc = rpc_ep_open(&ep, c, "127.0.0.1", *port);
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	if (rc != 0)
		fprintf(stderr, "server open: %s\n", err_msg());
	CU_ASSERT_EQUAL(rpc_handler_set(ep, OP_ECHO, h_echo, NULL), 0);
	CU_ASSERT_EQUAL(rpc_handler_set(ep, OP_BULK, h_bulk,
					(void *)(uintptr_t)RPC_BULK_OUT), 0);
	CU_ASSERT_EQUAL(rpc_handler_set(ep, OP_BULK + 100, h_bulk,
					(void *)(uintptr_t)RPC_BULK_IN), 0);
	CU_ASSERT_EQUAL(rpc_handler_set(ep, OP_SLEEP, h_sleep, NULL), 0);
	CU_ASSERT_EQUAL(rpc_handler_set(ep, OP_HOLD, h_hold, NULL), 0);
	CU_ASSERT_EQUAL(rpc_handler_set(ep, OP_ASYNC, h_async, NULL), 0);
	return ep;
}

static struct rpc_ep *ut_client(const struct rpc_conf *c)
{
	struct rpc_ep *ep = NULL;
	int rc = rpc_ep_open(&ep, c, "127.0.0.1", 0);

	if (rc != 0)
		fprintf(stderr, "client open: %s\n", err_msg());
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	return ep;
}

static struct rpc_peer *ut_connect(struct rpc_ep *cli, uint16_t port)
{
	struct rpc_peer *p = NULL;
	int rc = rpc_connect(cli, "127.0.0.1", port, 5000, &p);

	if (rc != 0)
		fprintf(stderr, "connect: %s\n", err_msg());
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	return p;
}

/* ---------------------------------------------------------------- tests */

static void t_roundtrip(void)
{
	struct rpc_conf c = ut_conf();
	uint16_t port;
	struct rpc_ep *srv = ut_server(&c, &port), *cli = ut_client(&c);
	struct rpc_peer *p = ut_connect(cli, port);
	struct rpc_result res;
	struct rpc_stats st;
	char body[100];

	CU_ASSERT_EQUAL(rpc_call(p, RPC_OP_NOOP, NULL, 0, NULL, 2000, &res), 0);
	CU_ASSERT_EQUAL(res.rr_status, 0);
	for (int i = 0; i < 50; i++) {
		snprintf(body, sizeof body, "hello %d", i);
		CU_ASSERT_EQUAL(rpc_call(p, OP_ECHO, body, strlen(body), NULL,
					 2000, &res), 0);
		CU_ASSERT_EQUAL(res.rr_len, strlen(body));
		CU_ASSERT(res.rr_body != NULL &&
			  memcmp(res.rr_body, body, res.rr_len) == 0);
		free(res.rr_body);
	}
	/* No handler: -EOPNOTSUPP with the server's message. */
	CU_ASSERT_EQUAL(rpc_call(p, 99, NULL, 0, NULL, 2000, &res),
			-EOPNOTSUPP);
	CU_ASSERT(strstr(res.rr_msg, "no handler for opcode 99") != NULL);
	CU_ASSERT(strstr(err_msg(), "opcode 99") != NULL);
	/* A reply from another thread, later, with a status and body. */
	CU_ASSERT_EQUAL(rpc_call(p, OP_ASYNC, NULL, 0, NULL, 2000, &res),
			-ENOENT);
	CU_ASSERT(strstr(res.rr_msg, "another thread") != NULL);
	CU_ASSERT_EQUAL(res.rr_len, 0); /* no body on failure */
	free(res.rr_body);
	/* Reserved opcodes and bad arguments. */
	CU_ASSERT_EQUAL(rpc_call(p, 5, NULL, 0, NULL, 2000, &res), -EINVAL);
	CU_ASSERT_EQUAL(rpc_call(p, OP_ECHO, NULL, 0, NULL, 0, &res), -EINVAL);
	CU_ASSERT_EQUAL(rpc_call(NULL, OP_ECHO, NULL, 0, NULL, 10, &res),
			-EINVAL);
	rpc_ep_stats(cli, &st);
	CU_ASSERT(st.rs_calls >= 53);
	CU_ASSERT_EQUAL(st.rs_timeouts, 0);
	rpc_ep_stats(srv, &st);
	CU_ASSERT(st.rs_requests >= 52);
	CU_ASSERT_EQUAL(st.rs_bad_msgs, 0);
	rpc_ep_close(cli);
	rpc_ep_close(srv);
}

int rpc_ut_add(void)
{
	CU_pSuite s = CU_add_suite("rpc", NULL, NULL);

	if (s == NULL)
		return -1;
	if (CU_add_test(s, "roundtrip", t_roundtrip) == NULL)
		return -1;
	return 0;
}
