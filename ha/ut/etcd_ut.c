/*
 * etcd_ut.c — suites "etcd" (one etcd member) and "etcd_3members" (three):
 * the gateway client (ha/etcd.h), the cluster map in etcd (ha/map.h) and
 * the local members (ha/etcd_proc.h), against a real etcd started here on
 * loopback ports 7000-8999 (tests/README.md; a slot of 8 ports picked from
 * the PID, the next slot tried when one is taken), in the suite's
 * temporary directory, stopped at the suite's end.  The cluster-file keys
 * of HA (cluster.etcd, servers[].enclosure) are checked here too.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clu_conf.h"
#include "core/errors.h"
#include "core/server/srv_repl.h"
#include "ha/etcd.h"
#include "ha/etcd_proc.h"
#include "ha/map.h"
#include "ha/srv_ha_internal.h"
#include "tests/ut.h"

#define PORT_LO 7000u
#define PORT_SLOTS 250u   /* 7000 + 250 * 8 = 9000 */
#define PORT_TRIES 20u

static char dir1[512], dir3[512];
static struct etcd *e1;
static char ep1[ETCD_URL_MAX + 1];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Start members in dir on a free slot; 0 or the error. */
static int start_members(const char *dir, uint32_t members, uint32_t off)
{
	struct etcd_proc_conf c = {.epc_dir = dir, .epc_host = "127.0.0.1",
				   .epc_members = members,
				   .epc_heartbeat_ms = 50,
				   .epc_election_ms = 500};
	uint32_t slot = ((uint32_t)getpid() + off) % PORT_SLOTS;
	int rc = -EADDRINUSE;

	for (uint32_t t = 0; t < PORT_TRIES && rc == -EADDRINUSE; t++) {
		uint16_t base = (uint16_t)(PORT_LO + ((slot + t * 7) %
						      PORT_SLOTS) * 8);

		for (uint32_t j = 0; j < members; j++) {
			c.epc_client[j] = (uint16_t)(base + 2 * j);
			c.epc_peer[j] = (uint16_t)(base + 2 * j + 1);
		}
		rc = etcd_proc_start(&c);
		if (rc != 0)
			fprintf(stderr, "etcd start (base %u): %s\n", base,
				err_msg());
	}
	return rc;
}

static int suite1_init(void)
{
	char urls[ETCD_ENDPOINTS_MAX][ETCD_URL_MAX + 1];
	const char *eps[1];
	uint32_t nr = 0;

	snprintf(dir1, sizeof dir1, "%s", ut_tmpdir("etcd1"));
	if (start_members(dir1, 1, 0) != 0 ||
	    etcd_proc_endpoints(dir1, urls, &nr) != 0 || nr != 1)
		return -1;
	snprintf(ep1, sizeof ep1, "%s", urls[0]);
	eps[0] = ep1;
	return etcd_create(&e1, eps, 1, 3000) == 0 ? 0 : -1;
}

static int suite1_fini(void)
{
	etcd_destroy(e1);
	e1 = NULL;
	etcd_proc_stop(dir1, NULL, NULL);
	return 0;
}

/* ------------------------------------------------------------- kv */

static void test_kv(void)
{
	static const char bin[] = {'a', 0, (char)0xff, '\n', 'z'};
	struct etcd_kv kv;
	int64_t r1 = 0, r2 = 0, rev = 0;
	uint64_t n = 9;

	CU_ASSERT_EQUAL(etcd_put(e1, "/t/kv/a", "hello", 5, 0, &r1), 0);
	CU_ASSERT(r1 > 0);
	CU_ASSERT_EQUAL(etcd_get(e1, "/t/kv/a", &kv, &rev), 0);
	CU_ASSERT_EQUAL(kv.ek_len, 5);
	CU_ASSERT_STRING_EQUAL(kv.ek_value ? kv.ek_value : "", "hello");
	CU_ASSERT_STRING_EQUAL(kv.ek_key ? kv.ek_key : "", "/t/kv/a");
	CU_ASSERT_EQUAL(kv.ek_mod_rev, r1);
	CU_ASSERT_EQUAL(kv.ek_create_rev, r1);
	CU_ASSERT(rev >= r1);
	etcd_kv_fini(&kv);
	/* a change keeps create_revision, moves mod_revision */
	CU_ASSERT_EQUAL(etcd_put(e1, "/t/kv/a", bin, sizeof bin, 0, &r2), 0);
	CU_ASSERT(r2 > r1);
	CU_ASSERT_EQUAL(etcd_get(e1, "/t/kv/a", &kv, NULL), 0);
	CU_ASSERT_EQUAL(kv.ek_len, sizeof bin);
	CU_ASSERT(kv.ek_value != NULL &&
		  memcmp(kv.ek_value, bin, sizeof bin) == 0);
	CU_ASSERT_EQUAL(kv.ek_create_rev, r1);
	CU_ASSERT_EQUAL(kv.ek_mod_rev, r2);
	CU_ASSERT_EQUAL(kv.ek_version, 2);
	etcd_kv_fini(&kv);
	CU_ASSERT_EQUAL(etcd_delete(e1, "/t/kv/a", false, &n), 0);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(etcd_get(e1, "/t/kv/a", &kv, NULL), -ENOENT);
	CU_ASSERT(strstr(err_msg(), "/t/kv/a") != NULL);
	CU_ASSERT(strstr(err_msg(), ep1) != NULL);
	CU_ASSERT_EQUAL(etcd_delete(e1, "/t/kv/a", false, &n), 0);
	CU_ASSERT_EQUAL(n, 0);
	/* bad arguments */
	CU_ASSERT_EQUAL(etcd_put(e1, "", "x", 1, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(etcd_put(e1, "/t/kv/b", "x", ETCD_VALUE_MAX + 1, 0,
				 NULL), -EINVAL);
	CU_ASSERT_EQUAL(etcd_put(e1, "/t/kv/b", "x", 1, 12345, NULL),
			-ENOENT);
}

/* Collects keys of a prefix read. */
struct keys {
	char k[8][64];
	int n;
};

static int keys_cb(const struct etcd_kv *kv, void *arg)
{
	struct keys *ks = arg;

	if (ks->n < 8)
		snprintf(ks->k[ks->n++], 64, "%s=%s", kv->ek_key, kv->ek_value);
	return 0;
}

static int stop_cb(const struct etcd_kv *kv, void *arg)
{
	(*(int *)arg)++;
	return 42;
}

static void test_prefix(void)
{
	struct keys ks = {0};
	bool more = true;
	uint64_t n = 0;
	int calls = 0;

	CU_ASSERT_EQUAL(etcd_put(e1, "/t/p/b", "2", 1, 0, NULL), 0);
	CU_ASSERT_EQUAL(etcd_put(e1, "/t/p/a", "1", 1, 0, NULL), 0);
	CU_ASSERT_EQUAL(etcd_put(e1, "/t/p/c", "3", 1, 0, NULL), 0);
	CU_ASSERT_EQUAL(etcd_put(e1, "/t/q", "x", 1, 0, NULL), 0);
	CU_ASSERT_EQUAL(etcd_get_prefix(e1, "/t/p/", 0, keys_cb, &ks, &more,
					NULL), 0);
	CU_ASSERT_EQUAL(ks.n, 3);
	CU_ASSERT_FALSE(more);
	CU_ASSERT_STRING_EQUAL(ks.k[0], "/t/p/a=1");
	CU_ASSERT_STRING_EQUAL(ks.k[1], "/t/p/b=2");
	CU_ASSERT_STRING_EQUAL(ks.k[2], "/t/p/c=3");
	memset(&ks, 0, sizeof ks);
	CU_ASSERT_EQUAL(etcd_get_prefix(e1, "/t/p/", 2, keys_cb, &ks, &more,
					NULL), 0);
	CU_ASSERT_EQUAL(ks.n, 2);
	CU_ASSERT_TRUE(more);
	CU_ASSERT_EQUAL(etcd_get_prefix(e1, "/t/p/", 0, stop_cb, &calls,
					NULL, NULL), 42);
	CU_ASSERT_EQUAL(calls, 1);
	CU_ASSERT_EQUAL(etcd_delete(e1, "/t/p/", true, &n), 0);
	CU_ASSERT_EQUAL(n, 3);
	memset(&ks, 0, sizeof ks);
	CU_ASSERT_EQUAL(etcd_get_prefix(e1, "/t/", 0, keys_cb, &ks, NULL,
					NULL), 0);
	CU_ASSERT_EQUAL(ks.n, 1);
	CU_ASSERT_STRING_EQUAL(ks.k[0], "/t/q=x");
}

static void test_txn(void)
{
	struct etcd_cmp cmp = {.ec_key = "/t/cas"};
	struct etcd_op op = {.eo_key = "/t/cas", .eo_value = "v2",
			     .eo_len = 2};
	struct etcd_kv kv;
	int64_t r1 = 0, r2 = 0;
	bool ok = false;

	/* absent: the create succeeds once */
	cmp.ec_absent = true;
	op.eo_value = "v1";
	CU_ASSERT_EQUAL(etcd_txn(e1, &cmp, 1, &op, 1, &ok, &r1), 0);
	CU_ASSERT_TRUE(ok);
	CU_ASSERT_EQUAL(etcd_txn(e1, &cmp, 1, &op, 1, &ok, NULL), 0);
	CU_ASSERT_FALSE(ok);
	/* mod_revision: the right one succeeds, a stale one is refused */
	cmp.ec_absent = false;
	cmp.ec_mod_rev = r1;
	op.eo_value = "v2";
	CU_ASSERT_EQUAL(etcd_txn(e1, &cmp, 1, &op, 1, &ok, &r2), 0);
	CU_ASSERT_TRUE(ok);
	CU_ASSERT(r2 > r1);
	op.eo_value = "v3";
	CU_ASSERT_EQUAL(etcd_txn(e1, &cmp, 1, &op, 1, &ok, NULL), 0);
	CU_ASSERT_FALSE(ok);
	CU_ASSERT_EQUAL(etcd_get(e1, "/t/cas", &kv, NULL), 0);
	CU_ASSERT_STRING_EQUAL(kv.ek_value ? kv.ek_value : "", "v2");
	CU_ASSERT_EQUAL(kv.ek_mod_rev, r2);
	etcd_kv_fini(&kv);
	/* a delete in a transaction */
	cmp.ec_mod_rev = r2;
	op = (struct etcd_op){.eo_key = "/t/cas", .eo_delete = true};
	CU_ASSERT_EQUAL(etcd_txn(e1, &cmp, 1, &op, 1, &ok, NULL), 0);
	CU_ASSERT_TRUE(ok);
	CU_ASSERT_EQUAL(etcd_get(e1, "/t/cas", &kv, NULL), -ENOENT);
}

/* Bad endpoints, and a handle to a port nobody listens on. */
static void test_endpoints(void)
{
	const char *bad[] = {"127.0.0.1:2379", "http://127.0.0.1",
			     "http://127.0.0.1:0", "https://127.0.0.1:1",
			     "http://127.0.0.1:99999", "http://h:1/path"};
	const char *none[] = {"http://127.0.0.1:1"};
	struct etcd *e = NULL;
	struct etcd_kv kv;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CU_ASSERT_EQUAL(etcd_create(&e, &bad[i], 1, 1000), -EINVAL);
		CU_ASSERT(strstr(err_msg(), bad[i]) != NULL);
	}
	CU_ASSERT_EQUAL(etcd_create(&e, none, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(etcd_create(&e, none, 1, 1000), 0);
	CU_ASSERT_EQUAL(etcd_get(e, "/t/x", &kv, NULL), -ECONNREFUSED);
	CU_ASSERT(strstr(err_msg(), "http://127.0.0.1:1") != NULL);
	CU_ASSERT(strstr(err_msg(), "/t/x") != NULL);
	etcd_destroy(e);
}

/* ------------------------------------------------------------- leases */

static void test_lease(void)
{
	struct ha_member mb = {.hmb_name = "s7", .hmb_addr = "127.0.0.1",
			       .hmb_port = 21007, .hmb_incarnation = 3};
	struct ha_member got;
	int64_t id = 0;
	uint32_t ttl = 0;
	uint64_t t0;
	int rc;

	CU_ASSERT_EQUAL_FATAL(etcd_lease_grant(e1, 2, &id, &ttl), 0);
	CU_ASSERT(id != 0);
	CU_ASSERT(ttl >= 2);
	CU_ASSERT_EQUAL(ha_member_register(e1, "lease", &mb, id), 0);
	CU_ASSERT_EQUAL(ha_member_get(e1, "lease", "s7", &got), 0);
	CU_ASSERT_STRING_EQUAL(got.hmb_addr, "127.0.0.1");
	CU_ASSERT_EQUAL(got.hmb_port, 21007);
	CU_ASSERT_EQUAL(got.hmb_incarnation, 3);
	CU_ASSERT_EQUAL(etcd_lease_keepalive(e1, id, &ttl), 0);
	CU_ASSERT(ttl >= 1);
	/* no more keep-alives: the key goes when the lease expires */
	t0 = now_ms();
	do {
		usleep(200000);
		rc = ha_member_get(e1, "lease", "s7", &got);
	} while (rc == 0 && now_ms() - t0 < 20000);
	CU_ASSERT_EQUAL(rc, -ENOENT);
	CU_ASSERT(now_ms() - t0 >= 1000); /* not before the TTL ran */
	CU_ASSERT_EQUAL(etcd_lease_keepalive(e1, id, NULL), -ENOENT);
	CU_ASSERT_EQUAL(etcd_lease_revoke(e1, id), -ENOENT);
	CU_ASSERT_EQUAL(ha_member_register(e1, "lease", &mb, id), -ENOENT);
	/* revoke deletes at once */
	CU_ASSERT_EQUAL_FATAL(etcd_lease_grant(e1, 60, &id, NULL), 0);
	CU_ASSERT_EQUAL(ha_member_register(e1, "lease", &mb, id), 0);
	CU_ASSERT_EQUAL(etcd_lease_revoke(e1, id), 0);
	CU_ASSERT_EQUAL(ha_member_get(e1, "lease", "s7", &got), -ENOENT);
}

/* ------------------------------------------------------------- watch */

struct wrec {
	atomic_int wr_n;
	char wr_ev[8][64];
	struct etcd *wr_e;
	int64_t wr_from;
	atomic_bool wr_stop;
	int wr_rc;
	int64_t wr_last;
	const char *wr_key;   /* the prefix watched; NULL: "/t/w/" */
};

static int watch_cb(enum etcd_ev_type t, const struct etcd_kv *kv, void *arg)
{
	struct wrec *w = arg;
	int n = atomic_load(&w->wr_n);

	if (n < 8)
		snprintf(w->wr_ev[n], 64, "%s %s=%s", t == ETCD_EV_PUT ? "PUT" :
			 "DEL", kv->ek_key, kv->ek_value);
	atomic_store(&w->wr_n, n + 1);
	return 0;
}

static void *watch_thread(void *arg)
{
	struct wrec *w = arg;

	w->wr_rc = etcd_watch(w->wr_e, w->wr_key ? w->wr_key : "/t/w/", true,
			      w->wr_from, watch_cb, w, &w->wr_stop,
			      &w->wr_last);
	return NULL;
}

static void test_watch(void)
{
	struct wrec *w = calloc(1, sizeof *w);
	pthread_t th;
	int64_t r0 = 0, r1 = 0;
	uint64_t t0;

	CU_ASSERT_FATAL(w != NULL);
	/* one put before the watch starts, from its revision: seen too */
	CU_ASSERT_EQUAL(etcd_put(e1, "/t/w/0", "zero", 4, 0, &r0), 0);
	w->wr_e = e1;
	w->wr_from = r0;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, watch_thread, w), 0);
	CU_ASSERT_EQUAL(etcd_put(e1, "/t/w/1", "one", 3, 0, NULL), 0);
	CU_ASSERT_EQUAL(etcd_put(e1, "/t/other", "no", 2, 0, NULL), 0);
	CU_ASSERT_EQUAL(etcd_delete(e1, "/t/w/0", false, NULL), 0);
	CU_ASSERT_EQUAL(etcd_put(e1, "/t/w/2", "two", 3, 0, &r1), 0);
	t0 = now_ms();
	while (atomic_load(&w->wr_n) < 4 && now_ms() - t0 < 15000)
		usleep(50000);
	atomic_store(&w->wr_stop, true);
	t0 = now_ms();
	pthread_join(th, NULL);
	CU_ASSERT(now_ms() - t0 < 5000); /* stopped within its poll */
	CU_ASSERT_EQUAL(w->wr_rc, 0);
	CU_ASSERT_EQUAL(atomic_load(&w->wr_n), 4);
	CU_ASSERT_STRING_EQUAL(w->wr_ev[0], "PUT /t/w/0=zero");
	CU_ASSERT_STRING_EQUAL(w->wr_ev[1], "PUT /t/w/1=one");
	CU_ASSERT_STRING_EQUAL(w->wr_ev[2], "DEL /t/w/0=");
	CU_ASSERT_STRING_EQUAL(w->wr_ev[3], "PUT /t/w/2=two");
	CU_ASSERT_EQUAL(w->wr_last, r1);
	free(w);
}

/* ------------------------------------------------------------- map */

static const char conf_text[] =
	"cluster:\n"
	"  name: hamap\n"
	"  secret: \"0123456789abcdef0123\"\n"
	"  etcd: [ \"http://127.0.0.1:7001\", \"http://[::1]:7003\" ]\n"
	"servers:\n"
	"  - { name: s0, address: 127.0.0.1, port: 21000, data_dir: /tmp/a0,\n"
	"      enclosure: rack1, devices: [ { tier: flash }, { tier: sas } ] }\n"
	"  - { name: s1, address: 127.0.0.1, port: 21001, data_dir: /tmp/a1,\n"
	"      enclosure: rack1, devices: [ { tier: flash } ] }\n"
	"  - { name: s2, address: 127.0.0.1, port: 21002, data_dir: /tmp/a2,\n"
	"      devices: [ { tier: flash }, { tier: flash } ] }\n";

/* The map of conf_text (cluster renamed to name). */
static int conf_map(struct ha_map *m, const char *name)
{
	struct clu_conf c = {0};
	int rc = clu_conf_parse(&c, conf_text, strlen(conf_text), "/tmp", 0);

	if (rc == 0)
		rc = ha_map_from_conf(m, &c);
	if (rc == 0)
		snprintf(m->hm_cluster, sizeof m->hm_cluster, "%s", name);
	clu_conf_fini(&c);
	return rc;
}

static void test_conf_keys(void)
{
	static const struct {
		const char *from, *to, *key;
	} bad[] = {
		{"\"http://[::1]:7003\"", "\"127.0.0.1:7003\"", "cluster.etcd[1]"},
		{"\"http://[::1]:7003\"", "\"http://::1:7003\"", "cluster.etcd[1]"},
		{"\"http://[::1]:7003\"", "\"https://h:7003\"", "cluster.etcd[1]"},
		{"\"http://[::1]:7003\"", "\"http://127.0.0.1:7001\"",
		 "cluster.etcd[1]"},
		{"[ \"http://127.0.0.1:7001\", \"http://[::1]:7003\" ]", "[]",
		 "cluster.etcd"},
		{"[ \"http://127.0.0.1:7001\", \"http://[::1]:7003\" ]",
		 "http://127.0.0.1:7001", "cluster.etcd"},
		{"enclosure: rack1, devices: [ { tier: flash }, { tier: sas }",
		 "enclosure: \"r a\", devices: [ { tier: flash }, { tier: sas }",
		 "servers[0].enclosure"},
		{"  name: hamap\n", "  name: hamap\n  ha_start_grace: 0s\n",
		 "cluster.ha_start_grace"},
		{"  name: hamap\n", "  name: hamap\n  ha_start_grace: 5m\n",
		 "cluster.ha_start_grace"},
	};
	struct clu_conf c = {0};
	char text[2048];

	CU_ASSERT_EQUAL_FATAL(clu_conf_parse(&c, conf_text, strlen(conf_text),
					     "/tmp", 0), 0);
	CU_ASSERT_EQUAL(c.cc_nr_etcd, 2);
	CU_ASSERT_STRING_EQUAL(c.cc_etcd[0], "http://127.0.0.1:7001");
	CU_ASSERT_STRING_EQUAL(c.cc_etcd[1], "http://[::1]:7003");
	CU_ASSERT_STRING_EQUAL(c.cc_servers[0].cs_enclosure, "rack1");
	CU_ASSERT_STRING_EQUAL(c.cc_servers[2].cs_enclosure, "");
	/* the leader's start grace: the default preset's, the test one's */
	CU_ASSERT_EQUAL(ha_start_grace_ms(&c), HA_START_GRACE_MS);
	c.cc_ha_test_rules = true;
	CU_ASSERT_EQUAL(ha_start_grace_ms(&c), HA_START_GRACE_TEST_MS);
	clu_conf_fini(&c);
	/* ... and the cluster file's, over either */
	snprintf(text, sizeof text, "%s", conf_text);
	{
		char *l = strstr(text, "  name: hamap\n") + 14;

		memmove(l + 22, l, strlen(l) + 1);
		memcpy(l, "  ha_start_grace: 45s\n", 22);
	}
	CU_ASSERT_EQUAL_FATAL(clu_conf_parse(&c, text, strlen(text), "/tmp",
					     0), 0);
	CU_ASSERT_EQUAL(c.cc_ha_start_grace_ms, 45000);
	CU_ASSERT_EQUAL(ha_start_grace_ms(&c), 45000);
	c.cc_ha_test_rules = true;
	CU_ASSERT_EQUAL(ha_start_grace_ms(&c), 45000);
	clu_conf_fini(&c);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *at = strstr(conf_text, bad[i].from);
		size_t pre;

		CU_ASSERT_FATAL(at != NULL);
		pre = (size_t)(at - conf_text);
		snprintf(text, sizeof text, "%.*s%s%s", (int)pre, conf_text,
			 bad[i].to, at + strlen(bad[i].from));
		CU_ASSERT_EQUAL(clu_conf_parse(&c, text, strlen(text), "/tmp",
					       0), -EINVAL);
		CU_ASSERT(strstr(err_msg(), bad[i].key) != NULL);
		CU_ASSERT(strstr(err_msg(), "cluster line ") != NULL);
		if (strstr(err_msg(), bad[i].key) == NULL)
			fprintf(stderr, "case %zu: %s\n", i, err_msg());
	}
	/* no etcd key: no HA */
	snprintf(text, sizeof text, "%s", conf_text);
	{
		char *l = strstr(text, "  etcd:"), *nl = strchr(l, '\n');

		memmove(l, nl + 1, strlen(nl + 1) + 1);
	}
	CU_ASSERT_EQUAL_FATAL(clu_conf_parse(&c, text, strlen(text), "/tmp",
					     0), 0);
	CU_ASSERT_EQUAL(c.cc_nr_etcd, 0);
	clu_conf_fini(&c);
}

/* The analyzer's standbys of each home (ha_home_standbys over the map)
 * are the servers that hold its shadows (srv_repl_standbys over the
 * cluster file), in the same order: enclosures named, shared and absent. */
static void test_standbys_agree(void)
{
	static const char text[] =
		"cluster:\n  name: sb\n  secret: \"0123456789abcdef0123\"\n"
		"  meta_replicas: 3\n"
		"servers:\n"
		"  - { name: s0, address: 127.0.0.1, port: 1, data_dir: /tmp/b0,"
		" enclosure: rack1, devices: [ { tier: flash } ] }\n"
		"  - { name: s1, address: 127.0.0.1, port: 2, data_dir: /tmp/b1,"
		" enclosure: rack1, devices: [ { tier: flash } ] }\n"
		"  - { name: s2, address: 127.0.0.1, port: 3, data_dir: /tmp/b2,"
		" enclosure: rack2, devices: [ { tier: flash } ] }\n"
		"  - { name: s3, address: 127.0.0.1, port: 4, data_dir: /tmp/b3,"
		" devices: [ { tier: flash } ] }\n"
		"  - { name: s4, address: 127.0.0.1, port: 5, data_dir: /tmp/b4,"
		" enclosure: rack2, devices: [ { tier: flash } ] }\n"
		"  - { name: s5, address: 127.0.0.1, port: 6, data_dir: /tmp/b5,"
		" devices: [ { tier: flash } ] }\n";
	struct clu_conf c = {0};
	struct ha_map *m = calloc(1, sizeof *m);
	uint32_t a[HA_SERVERS_MAX], b[CLU_SERVERS_MAX];

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_EQUAL_FATAL(clu_conf_parse(&c, text, strlen(text), "/tmp",
					     0), 0);
	CU_ASSERT_EQUAL_FATAL(ha_map_from_conf(m, &c), 0);
	for (uint32_t h = 0; h < c.cc_nr_servers; h++) {
		int na = ha_home_standbys(m, h, a);
		int nb = srv_repl_standbys(&c, h, NULL, b);

		CU_ASSERT_EQUAL(na, 2);
		CU_ASSERT_EQUAL(na, nb);
		for (int k = 0; k < na && k < nb; k++)
			CU_ASSERT_EQUAL(a[k], b[k]);
	}
	/* a server lost for good (OUT, REPAIRING, REPAIRED; not FAILED or
	 * QUARANTINED): no home keeps it as a standby, each home that had
	 * it gets one other server in its place and keeps its other
	 * standby, homes that did not have it keep both; both sides agree */
	for (uint32_t x = 0; x < c.cc_nr_servers; x++) {
		static const enum ha_state st[] = {HA_OUT, HA_REPAIRING,
			HA_REPAIRED, HA_FAILED, HA_QUARANTINED};

		for (size_t j = 0; j < sizeof st / sizeof st[0]; j++) {
			bool lost[CLU_SERVERS_MAX] = {false};
			bool gone = j < 3;

			m->hm_servers[x].hs_state = st[j];
			CU_ASSERT_EQUAL(ha_srv_lost(m, x), gone);
			lost[x] = ha_srv_lost(m, x);
			for (uint32_t h = 0; h < c.cc_nr_servers; h++) {
				uint32_t base[CLU_SERVERS_MAX];
				int n0 = srv_repl_standbys(&c, h, NULL, base);
				int na = ha_home_standbys(m, h, a);
				int nb = srv_repl_standbys(&c, h, lost, b);
				bool had = false, kept = true;

				CU_ASSERT_EQUAL(na, 2);
				CU_ASSERT_EQUAL(nb, 2);
				for (int k = 0; k < na && k < nb; k++) {
					CU_ASSERT_EQUAL(a[k], b[k]);
					CU_ASSERT(!gone || b[k] != x);
				}
				for (int k = 0; k < n0; k++) {
					bool in = false;

					had |= base[k] == x;
					for (int i = 0; i < nb; i++)
						in |= b[i] == base[k];
					if (base[k] != x || !gone)
						kept &= in;
				}
				CU_ASSERT(kept);
				if (!had || !gone) /* unchanged */
					for (int k = 0; k < nb && k < n0; k++)
						CU_ASSERT_EQUAL(b[k], base[k]);
			}
			m->hm_servers[x].hs_state = HA_ONLINE;
		}
	}
	clu_conf_fini(&c);
	free(m);
}

static void test_map_from_conf(void)
{
	struct ha_map *m = calloc(1, sizeof *m);

	CU_ASSERT_FATAL(m != NULL);
	CU_ASSERT_EQUAL_FATAL(conf_map(m, "hamap"), 0);
	CU_ASSERT_EQUAL(m->hm_epoch, 1);
	CU_ASSERT_EQUAL(m->hm_nr_servers, 3);
	CU_ASSERT_EQUAL(m->hm_pgs, 256);          /* 64 x 3 -> 256 */
	CU_ASSERT_EQUAL(m->hm_pg_replicas, 3);
	CU_ASSERT_STRING_EQUAL(m->hm_servers[0].hs_enclosure, "rack1");
	CU_ASSERT_STRING_EQUAL(m->hm_servers[2].hs_enclosure, "s2");
	CU_ASSERT_EQUAL(m->hm_servers[1].hs_port, 21001);
	CU_ASSERT_EQUAL(m->hm_servers[0].hs_nr_devs, 2);
	CU_ASSERT_EQUAL(m->hm_servers[1].hs_nr_devs, 1);
	CU_ASSERT_EQUAL(m->hm_servers[2].hs_nr_devs, 2);
	CU_ASSERT_STRING_EQUAL(m->hm_servers[2].hs_devs[1].hd_name, "flash1");
	CU_ASSERT_EQUAL(m->hm_servers[2].hs_state, HA_ONLINE);
	CU_ASSERT_EQUAL(m->hm_servers[2].hs_devs[0].hd_state, HA_ONLINE);
	free(m);
}

/* Replace the first from in text by to (in place; text has room). */
static bool subst(char *text, size_t size, const char *from, const char *to)
{
	char *at = strstr(text, from);
	size_t fl = strlen(from), tl = strlen(to), rest;

	if (at == NULL || strlen(text) - fl + tl >= size)
		return false;
	rest = strlen(at + fl) + 1;
	memmove(at + tl, at + fl, rest);
	memcpy(at, to, tl);
	return true;
}

static void test_map_json(void)
{
	static const struct {
		const char *from, *to, *field;
	} bad[] = {
		{"\"epoch\":1", "\"epoch\":0", "epoch"},
		{"\"epoch\":1", "\"epoch\":\"1\"", "epoch"},
		{"\"epoch\":1,", "", "epoch"},
		{"\"pgs\":256", "\"pgs\":0", "pgs"},
		{"\"pg_replicas\":3", "\"pg_replicas\":4", "pg_replicas"},
		{"\"frozen\":false", "\"frozen\":0", "frozen"},
		{"\"cluster\":\"hamap\"", "\"cluster\":\"\"", "cluster"},
		{"\"name\":\"s1\"", "\"name\":\"s0\"", "servers[1].name"},
		{"\"port\":21001", "\"port\":70000", "servers[1].port"},
		{"\"state\":\"ONLINE\"", "\"state\":\"BAD\"", "servers[0].state"},
		{"\"name\":\"flash1\"", "\"name\":\"flash0\"",
		 "servers[2].devices[1].name"},
		{"\"incarnation\":0", "\"incarnation\":-1",
		 "servers[0].incarnation"},
		{"\"devices\":[", "\"devices\":{", "(text)"},
		{"\"leader\":\"\"", "\"leader\":\"a b\"", "leader"},
	};
	struct ha_map *m = calloc(1, sizeof *m), *m2 = calloc(1, sizeof *m2);
	struct ha_map *keep = calloc(1, sizeof *keep);
	char *text = NULL, *text2 = NULL, buf[16384];

	CU_ASSERT_FATAL(m != NULL && m2 != NULL && keep != NULL);
	CU_ASSERT_EQUAL_FATAL(conf_map(m, "hamap"), 0);
	m->hm_servers[1].hs_state = HA_QUARANTINED;
	m->hm_servers[1].hs_incarnation = 77;
	m->hm_servers[2].hs_devs[0].hd_state = HA_REPAIRING;
	m->hm_frozen = true;
	snprintf(m->hm_alert, sizeof m->hm_alert, "two servers \"down\"");
	snprintf(m->hm_leader, sizeof m->hm_leader, "s2");
	CU_ASSERT_EQUAL_FATAL(ha_map_to_json(m, &text), 0);
	CU_ASSERT_EQUAL(ha_map_from_json(m2, text, strlen(text)), 0);
	CU_ASSERT_EQUAL(memcmp(m, m2, sizeof *m), 0);
	CU_ASSERT_EQUAL(ha_map_to_json(m2, &text2), 0);
	CU_ASSERT_STRING_EQUAL(text, text2 ? text2 : "");
	free(text);
	free(text2);
	/* each bad field is refused, named, and the map is left as it was */
	CU_ASSERT_EQUAL_FATAL(conf_map(m, "hamap"), 0);
	CU_ASSERT_EQUAL_FATAL(ha_map_to_json(m, &text), 0);
	memcpy(keep, m2, sizeof *keep);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(buf, sizeof buf, "%s", text);
		CU_ASSERT_FATAL(subst(buf, sizeof buf, bad[i].from, bad[i].to));
		CU_ASSERT_EQUAL(ha_map_from_json(m2, buf, strlen(buf)),
				-EINVAL);
		if (strstr(err_msg(), bad[i].field) == NULL)
			fprintf(stderr, "case %zu: %s\n", i, err_msg());
		CU_ASSERT(strstr(err_msg(), bad[i].field) != NULL);
		CU_ASSERT_EQUAL(memcmp(keep, m2, sizeof *m2), 0);
	}
	CU_ASSERT_EQUAL(ha_map_from_json(m2, "[]", 2), -EINVAL);
	CU_ASSERT_EQUAL(ha_map_from_json(m2, "{", 1), -EINVAL);
	free(text);
	free(m);
	free(m2);
	free(keep);
}

static void test_map_etcd(void)
{
	struct ha_map *m = calloc(1, sizeof *m), *o = calloc(1, sizeof *o);
	int64_t tok = 0, tok2 = 0, stale;

	CU_ASSERT_FATAL(m != NULL && o != NULL);
	CU_ASSERT_EQUAL(ha_map_load(e1, "boot", m, &tok), -ENOENT);
	CU_ASSERT_EQUAL_FATAL(conf_map(m, "boot"), 0);
	CU_ASSERT_EQUAL(ha_map_bootstrap(e1, m, &tok), 0);
	CU_ASSERT(tok > 0);
	/* a second bootstrap finds it: -EEXIST, and gets the stored map */
	CU_ASSERT_EQUAL_FATAL(conf_map(o, "boot"), 0);
	o->hm_pgs = 8;
	CU_ASSERT_EQUAL(ha_map_bootstrap(e1, o, &tok2), -EEXIST);
	CU_ASSERT_EQUAL(o->hm_pgs, 256);
	CU_ASSERT_EQUAL(tok2, tok);
	CU_ASSERT_EQUAL(ha_map_load(e1, "boot", o, &tok2), 0);
	CU_ASSERT_EQUAL(o->hm_epoch, 1);
	CU_ASSERT_EQUAL(tok2, tok);
	/* an update bumps the epoch by one and moves the token */
	stale = tok;
	m->hm_servers[1].hs_state = HA_FAILED;
	CU_ASSERT_EQUAL(ha_map_update(e1, m, &tok), 0);
	CU_ASSERT_EQUAL(m->hm_epoch, 2);
	CU_ASSERT(tok > stale);
	CU_ASSERT_EQUAL(ha_map_load(e1, "boot", o, &tok2), 0);
	CU_ASSERT_EQUAL(o->hm_epoch, 2);
	CU_ASSERT_EQUAL(o->hm_servers[1].hs_state, HA_FAILED);
	CU_ASSERT_EQUAL(tok2, tok);
	/* a change made on the old token is refused, epoch left */
	o->hm_epoch = 1;
	o->hm_servers[0].hs_state = HA_OUT;
	CU_ASSERT_EQUAL(ha_map_update(e1, o, &stale), -EAGAIN);
	CU_ASSERT(strstr(err_msg(), "/strata/boot/map") != NULL);
	CU_ASSERT_EQUAL(o->hm_epoch, 1);
	CU_ASSERT_EQUAL(ha_map_load(e1, "boot", o, &tok2), 0);
	CU_ASSERT_EQUAL(o->hm_epoch, 2);
	CU_ASSERT_EQUAL(o->hm_servers[0].hs_state, HA_ONLINE);
	/* a stored map that is not valid is refused naming the field */
	CU_ASSERT_EQUAL(etcd_put(e1, "/strata/junk/map", "{\"epoch\":1}", 11,
				 0, NULL), 0);
	CU_ASSERT_EQUAL(ha_map_load(e1, "junk", o, &tok2), -EINVAL);
	CU_ASSERT(strstr(err_msg(), "cluster") != NULL);
	free(m);
	free(o);
}

/* ------------------------------------------------------------- logs */

struct lrd {
	uint64_t seq[64];
	char json[64][32];
	int n;
};

static int lrd_cb(uint64_t seq, const char *json, void *arg)
{
	struct lrd *r = arg;

	if (r->n < 64) {
		r->seq[r->n] = seq;
		snprintf(r->json[r->n], 32, "%s", json);
	}
	r->n++;
	return 0;
}

struct app {
	int a_rc;
	uint64_t a_seq[10];
};

static void *append_thread(void *arg)
{
	struct app *a = arg;

	for (int i = 0; i < 10 && a->a_rc == 0; i++)
		a->a_rc = ha_log_append(e1, "race", "decisions", "{\"d\":1}",
					&a->a_seq[i]);
	return NULL;
}

static void test_log(void)
{
	struct lrd *r = calloc(1, sizeof *r);
	struct app a1 = {0}, a2 = {0};
	pthread_t t1, t2;
	char json[32];
	uint64_t seq = 0, last = 0;

	CU_ASSERT_FATAL(r != NULL);
	ha_log_keep_set(5);
	for (int i = 1; i <= 12; i++) {
		snprintf(json, sizeof json, "{\"n\":%d}", i);
		CU_ASSERT_EQUAL(ha_log_append(e1, "logs", "events", json, &seq),
				0);
		CU_ASSERT_EQUAL(seq, (uint64_t)i);
	}
	CU_ASSERT_EQUAL(ha_log_read(e1, "logs", "events", 0, 0, lrd_cb, r,
				    &last), 0);
	CU_ASSERT_EQUAL(last, 12);
	CU_ASSERT_EQUAL(r->n, 5);             /* bounded: the last 5 */
	for (int i = 0; i < 5 && i < r->n; i++) {
		snprintf(json, sizeof json, "{\"n\":%d}", 8 + i);
		CU_ASSERT_EQUAL(r->seq[i], (uint64_t)(8 + i)); /* in order */
		CU_ASSERT_STRING_EQUAL(r->json[i], json);
	}
	memset(r, 0, sizeof *r);
	CU_ASSERT_EQUAL(ha_log_read(e1, "logs", "events", 11, 0, lrd_cb, r,
				    NULL), 0);
	CU_ASSERT_EQUAL(r->n, 2);
	CU_ASSERT_EQUAL(r->seq[0], 11);
	memset(r, 0, sizeof *r);
	CU_ASSERT_EQUAL(ha_log_read(e1, "logs", "events", 0, 2, lrd_cb, r,
				    NULL), 0);
	CU_ASSERT_EQUAL(r->n, 2);
	CU_ASSERT_EQUAL(r->seq[0], 8);
	/* the other log is apart; an unknown log or empty entry refused */
	memset(r, 0, sizeof *r);
	CU_ASSERT_EQUAL(ha_log_read(e1, "logs", "decisions", 0, 0, lrd_cb, r,
				    &last), 0);
	CU_ASSERT_EQUAL(r->n, 0);
	CU_ASSERT_EQUAL(last, 0);
	CU_ASSERT_EQUAL(ha_log_append(e1, "logs", "jobs", "{}", NULL),
			-EINVAL);
	CU_ASSERT_EQUAL(ha_log_append(e1, "logs", "events", "", NULL),
			-EINVAL);
	/* two appenders at once: every seq given once */
	ha_log_keep_set(64);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t1, NULL, append_thread, &a1), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t2, NULL, append_thread, &a2), 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CU_ASSERT_EQUAL(a1.a_rc, 0);
	CU_ASSERT_EQUAL(a2.a_rc, 0);
	memset(r, 0, sizeof *r);
	CU_ASSERT_EQUAL(ha_log_read(e1, "race", "decisions", 0, 0, lrd_cb, r,
				    &last), 0);
	CU_ASSERT_EQUAL(last, 20);
	CU_ASSERT_EQUAL(r->n, 20);
	for (int i = 0; i < 20 && i < r->n; i++)
		CU_ASSERT_EQUAL(r->seq[i], (uint64_t)(i + 1));
	ha_log_keep_set(0);
	free(r);
}

/* ------------------------------------------------------------- leader */

static void test_leader(void)
{
	char who[HA_NAME_MAX + 1] = "";
	int64_t la = 0, lb = 0, la2 = 0;

	CU_ASSERT_EQUAL_FATAL(etcd_lease_grant(e1, 30, &la, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(etcd_lease_grant(e1, 30, &lb, NULL), 0);
	CU_ASSERT_EQUAL(ha_leader_get(e1, "lead", who, sizeof who), -ENOENT);
	CU_ASSERT_EQUAL(ha_leader_try(e1, "lead", "s0", la, who, sizeof who),
			1);
	CU_ASSERT_EQUAL(ha_leader_try(e1, "lead", "s1", lb, who, sizeof who),
			0);
	CU_ASSERT_STRING_EQUAL(who, "s0");
	CU_ASSERT_EQUAL(ha_leader_try(e1, "lead", "s0", la, NULL, 0), 1);
	CU_ASSERT_EQUAL(ha_leader_try(e1, "lead", "s1", lb, NULL, 0), 0);
	/* s0's lease ends: s1 takes over, s0 (a new run) does not */
	CU_ASSERT_EQUAL(etcd_lease_revoke(e1, la), 0);
	CU_ASSERT_EQUAL(ha_leader_try(e1, "lead", "s1", lb, who, sizeof who),
			1);
	CU_ASSERT_EQUAL_FATAL(etcd_lease_grant(e1, 30, &la2, NULL), 0);
	CU_ASSERT_EQUAL(ha_leader_try(e1, "lead", "s0", la2, who, sizeof who),
			0);
	CU_ASSERT_STRING_EQUAL(who, "s1");
	CU_ASSERT_EQUAL(ha_leader_get(e1, "lead", who, sizeof who), 0);
	CU_ASSERT_STRING_EQUAL(who, "s1");
	/* s1 restarted with a new lease: its old key moves to it */
	CU_ASSERT_EQUAL(ha_leader_try(e1, "lead", "s1", la2, NULL, 0), 1);
	/* resign: only the holder's resign frees it */
	CU_ASSERT_EQUAL(ha_leader_resign(e1, "lead", "s0"), 0);
	CU_ASSERT_EQUAL(ha_leader_get(e1, "lead", who, sizeof who), 0);
	CU_ASSERT_EQUAL(ha_leader_resign(e1, "lead", "s1"), 0);
	CU_ASSERT_EQUAL(ha_leader_get(e1, "lead", who, sizeof who), -ENOENT);
	CU_ASSERT_EQUAL(ha_leader_try(e1, "lead", "bad name", lb, NULL, 0),
			-EINVAL);
	etcd_lease_revoke(e1, lb);
	etcd_lease_revoke(e1, la2);
}

/* ------------------------------------------------------ three members */

static int suite3_init(void)
{
	snprintf(dir3, sizeof dir3, "%s", ut_tmpdir("etcd3"));
	return start_members(dir3, 3, 101) == 0 ? 0 : -1;
}

static int suite3_fini(void)
{
	etcd_proc_stop(dir3, NULL, NULL);
	return 0;
}

/* Kill the etcd leader; a put through the handle (the leader's endpoint
 * first) still succeeds, within a bound; a watch streaming from the
 * leader re-opens on another member and misses nothing. */
static void test_leader_killed(void)
{
	char urls[ETCD_ENDPOINTS_MAX][ETCD_URL_MAX + 1];
	const char *eps[3];
	struct etcd *e = NULL;
	struct etcd_kv kv;
	uint32_t nr = 0, stopped = 0, killed = 0;
	struct wrec *w = calloc(1, sizeof *w);
	pthread_t th;
	int64_t from = 0;
	uint64_t t0;
	int lead = -1, rc;

	CU_ASSERT_FATAL(w != NULL);

	CU_ASSERT_EQUAL_FATAL(etcd_proc_endpoints(dir3, urls, &nr), 0);
	CU_ASSERT_EQUAL_FATAL(nr, 3);
	t0 = now_ms();
	while ((lead = etcd_proc_leader(dir3)) < 0 && now_ms() - t0 < 10000)
		usleep(100000);
	CU_ASSERT_FATAL(lead >= 0 && lead < 3);
	for (int j = 0; j < 3; j++)
		eps[j] = urls[(lead + j) % 3];
	CU_ASSERT_EQUAL_FATAL(etcd_create(&e, eps, 3, 2000), 0);
	CU_ASSERT_EQUAL(etcd_put(e, "/t3/k", "before", 6, 0, &from), 0);
	CU_ASSERT_STRING_EQUAL(etcd_endpoint(e), urls[lead]);
	w->wr_e = e;
	w->wr_from = from;
	w->wr_key = "/t3/";
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, watch_thread, w), 0);
	while (atomic_load(&w->wr_n) < 1 && now_ms() - t0 < 15000)
		usleep(50000);
	CU_ASSERT_EQUAL(etcd_proc_kill(dir3, (uint32_t)lead), 0);
	CU_ASSERT_FALSE(etcd_proc_alive(dir3, (uint32_t)lead));
	t0 = now_ms();
	rc = etcd_put(e, "/t3/k", "after", 5, 0, NULL);
	CU_ASSERT_EQUAL(rc, 0);
	if (rc != 0)
		fprintf(stderr, "put after the leader's kill: %s\n", err_msg());
	CU_ASSERT(now_ms() - t0 < 30000);
	CU_ASSERT_STRING_NOT_EQUAL(etcd_endpoint(e), urls[lead]);
	CU_ASSERT_EQUAL(etcd_get(e, "/t3/k", &kv, NULL), 0);
	CU_ASSERT_STRING_EQUAL(kv.ek_value ? kv.ek_value : "", "after");
	etcd_kv_fini(&kv);
	/* the watch saw both puts, each once, in order */
	t0 = now_ms();
	while (atomic_load(&w->wr_n) < 2 && now_ms() - t0 < 40000)
		usleep(50000);
	atomic_store(&w->wr_stop, true);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(w->wr_rc, 0);
	CU_ASSERT_EQUAL(atomic_load(&w->wr_n), 2);
	CU_ASSERT_STRING_EQUAL(w->wr_ev[0], "PUT /t3/k=before");
	CU_ASSERT_STRING_EQUAL(w->wr_ev[1], "PUT /t3/k=after");
	free(w);
	/* a new leader among the two left */
	t0 = now_ms();
	while ((rc = etcd_proc_leader(dir3)) < 0 && now_ms() - t0 < 10000)
		usleep(100000);
	CU_ASSERT(rc >= 0 && rc != lead);
	etcd_destroy(e);
	/* stop: the two left are stopped, none is left */
	CU_ASSERT_EQUAL(etcd_proc_stop(dir3, &stopped, &killed), 0);
	CU_ASSERT_EQUAL(stopped + killed, 2);
	for (uint32_t j = 0; j < 3; j++)
		CU_ASSERT_FALSE(etcd_proc_alive(dir3, j));
}

int etcd_ut_add(void)
{
	CU_pSuite s = CU_add_suite("etcd", suite1_init, suite1_fini);
	CU_pSuite s3;

	if (s == NULL ||
	    !CU_add_test(s, "conf_keys", test_conf_keys) ||
	    !CU_add_test(s, "map_from_conf", test_map_from_conf) ||
	    !CU_add_test(s, "standbys_agree", test_standbys_agree) ||
	    !CU_add_test(s, "map_json", test_map_json) ||
	    !CU_add_test(s, "kv", test_kv) ||
	    !CU_add_test(s, "prefix", test_prefix) ||
	    !CU_add_test(s, "txn", test_txn) ||
	    !CU_add_test(s, "endpoints", test_endpoints) ||
	    !CU_add_test(s, "lease", test_lease) ||
	    !CU_add_test(s, "watch", test_watch) ||
	    !CU_add_test(s, "map_etcd", test_map_etcd) ||
	    !CU_add_test(s, "log", test_log) ||
	    !CU_add_test(s, "leader", test_leader))
		return -1;
	s3 = CU_add_suite("etcd_3members", suite3_init, suite3_fini);
	if (s3 == NULL ||
	    !CU_add_test(s3, "leader_killed", test_leader_killed))
		return -1;
	return 0;
}
