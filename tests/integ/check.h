/*
 * check.h — the "ok   WHAT" / "FAIL WHAT" lines of the C clients of the
 * integration tests (the .c files of tests/integ), and their counts, which each client
 * prints as its last line ("N passed, N failed") like the scripts.
 * Included by one translation unit each.
 */
#ifndef STRATA_TESTS_INTEG_CHECK_H
#define STRATA_TESTS_INTEG_CHECK_H

#include <stdio.h>

#include "clovis/clovis.h"

static int passed, failed;

static inline void ok(const char *what)
{
	passed++;
	printf("ok   %s\n", what);
}

static inline void no(const char *what)
{
	failed++;
	printf("FAIL %s\n", what);
}

/* Open a cluster client from the cluster file conf: 0, or its error
 * counted as a failure (its message said). */
static inline int check_cluster_open(struct clovis **cl, const char *conf)
{
	struct clovis_conf c = { .cc_mode = CLOVIS_MODE_CLUSTER,
				 .cc_cluster_conf = conf };
	int rc = clovis_init(cl, &c);

	if (rc != 0) {
		char what[600];

		snprintf(what, sizeof what, "clovis_init(%s): %d (%s): %s",
			 conf, rc, clovis_strerror(rc), clovis_errmsg());
		no(what);
	}
	return rc;
}

#endif /* STRATA_TESTS_INTEG_CHECK_H */
