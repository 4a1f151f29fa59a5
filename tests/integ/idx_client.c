/*
 * idx_client.c — the client of tests/integ/idx_race_test.sh, through the
 * Clovis API only (cluster mode): what one index handle holds, which the
 * CLI (a process per command, that opens the index each time) cannot show.
 *
 *   idx_client CONF create ID [HOLD_S]
 *       create index ID; prints "incarnation N", the incarnation the
 *       create acknowledged (the handle's ctime, the one every replica
 *       must come to serve: core/server/srv_idx.c); then keeps its
 *       connections HOLD_S seconds (default 0) before it ends, so that a
 *       server frozen during the create still finds the request it was
 *       sent when it runs again (a connection closed meanwhile drops it).
 *   idx_client CONF serves ID INC NAME...
 *       for each server NAME: open ID with every other NAME treated as
 *       unreachable (STRATA_TEST_SKIP_SERVERS, clovis/cli_cluster.c), so
 *       that replica NAME answers; its incarnation must be INC.  (A
 *       replica that refuses the open with -ESTALE passes it on to the
 *       last of the ring, skipped or not: the line then says what that
 *       one serves.)
 *
 * Every check prints "ok ..." or "FAIL ..."; the last line is
 * "N passed, N failed"; exit status 0 only when nothing failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clovis/clovis.h"
#include "tests/integ/check.h"

#define SKIP_LEN_MAX 512



/* Run entity op kind of index name on a fresh handle ix, to its end (the
 * op freed): 0 or its rc, with its message in msg. */
static int idx_ent(struct clovis *cl, const char *name, struct clovis_idx *ix,
		   enum clovis_entity_opcode kind, char *msg, size_t size)
{
	struct clovis_id id;
	struct clovis_op *op = NULL;
	int rc = clovis_id_parse(name, &id);

	msg[0] = '\0';
	if (rc == 0)
		rc = clovis_idx_init(ix, clovis_default_realm(cl), &id);
	if (rc == 0)
		rc = clovis_entity_op(&ix->in_entity, kind, &op);
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		snprintf(msg, size, "%d (%s): %s", rc, clovis_strerror(rc),
			 clovis_errmsg());
	return rc;
}

static void cmd_create(struct clovis *cl, const char *name, unsigned hold_s)
{
	struct clovis_idx ix;
	char msg[600], what[700];

	if (idx_ent(cl, name, &ix, CLOVIS_EO_CREATE, msg, sizeof msg) != 0) {
		snprintf(what, sizeof what, "create index %s: %s", name, msg);
		no(what);
		return;
	}
	printf("incarnation %" PRIu64 "\n", ix.in_attr.ia_ctime_ns);
	snprintf(what, sizeof what, "create index %s", name);
	ok(what);
	sleep(hold_s);
}

/* STRATA_TEST_SKIP_SERVERS := every name of names[0..nr) but names[k]. */
static void skip_all_but(char **names, int nr, int k)
{
	char skip[SKIP_LEN_MAX] = "";
	size_t len = 0;

	for (int i = 0; i < nr; i++) {
		if (i == k)
			continue;
		len += (size_t)snprintf(skip + len, sizeof skip - len, "%s%s",
					len > 0 ? "," : "", names[i]);
		if (len >= sizeof skip)
			break;
	}
	setenv("STRATA_TEST_SKIP_SERVERS", skip, 1);
}

static void cmd_serves(struct clovis *cl, const char *name, uint64_t inc,
		       char **names, int nr)
{
	for (int k = 0; k < nr; k++) {
		struct clovis_idx ix;
		char msg[600], what[900];
		int rc;

		skip_all_but(names, nr, k);
		rc = idx_ent(cl, name, &ix, CLOVIS_EO_OPEN, msg, sizeof msg);
		if (rc != 0)
			snprintf(what, sizeof what, "index %s opened through "
				 "%s: %s", name, names[k], msg);
		else
			snprintf(what, sizeof what, "index %s opened through "
				 "%s: incarnation %" PRIu64 " (the create's: %"
				 PRIu64 ")", name, names[k],
				 ix.in_attr.ia_ctime_ns, inc);
		if (rc == 0 && ix.in_attr.ia_ctime_ns == inc)
			ok(what);
		else
			no(what);
	}
	unsetenv("STRATA_TEST_SKIP_SERVERS");
}

static int usage(void)
{
	fprintf(stderr, "usage: idx_client CONF create ID [HOLD_S]\n"
			"       idx_client CONF serves ID INC NAME...\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct clovis *cl = NULL;
	bool create = (argc == 4 || argc == 5) &&
		      strcmp(argv[2], "create") == 0;
	bool serves = argc >= 6 && strcmp(argv[2], "serves") == 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!create && !serves)
		return usage();
	if (check_cluster_open(&cl, argv[1]) != 0)
		goto out;
	if (create)
		cmd_create(cl, argv[3],
			   argc == 5 ? (unsigned)atoi(argv[4]) : 0);
	else
		cmd_serves(cl, argv[3], strtoull(argv[4], NULL, 10), argv + 5,
			   argc - 5);
	clovis_fini(cl);
out:
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
