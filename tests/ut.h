/*
 * ut.h — shared helpers of the CUnit suites and the list of suite adders.
 */
#ifndef STRATA_TESTS_UT_H
#define STRATA_TESTS_UT_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <unistd.h>

/* One adder per module: registers that module's suites, returns 0. */
int core_ut_add(void);
int tier_ut_add(void);
int layout_ut_add(void);
int clovis_ut_add(void);
int clovis_bad_ut_add(void);
int concurrency_ut_add(void);
int stripe_ut_add(void);
int smr_ut_add(void);
int rpc_ut_add(void);

/**
 * Make a fresh empty directory under $TMPDIR (default /tmp) named for tag;
 * returns a static path valid until the next call.  Removed at exit.
 */
const char *ut_tmpdir(const char *tag);

/** Remove a directory tree (best effort). */
void ut_rmtree(const char *path);

#endif
