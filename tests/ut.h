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
int store_ut_add(void);
int concurrency_ut_add(void);
int stripe_ut_add(void);
int smr_ut_add(void);
int rpc_ut_add(void);
int server_ut_add(void);
int peers_ut_add(void);     /* called by server_ut_add() */
int dtm_ut_add(void);
int fdmi_ut_add(void);     /* clovis/ut/fdmi_ut.c */
int hsm_policy_ut_add(void); /* fdmi/hsm/ut/hsm_policy_ut.c */
int hsm_ut_add(void);      /* fdmi/hsm/ut/hsm_ut.c */
int s3_ut_add(void);
int etcd_ut_add(void);
int analyzer_ut_add(void);  /* ha/ut/analyzer_ut.c */
int addb_ut_add(void);      /* addb/ut/addb_ut.c */
int isc_ut_add(void);       /* core/isc/ut/isc_ut.c */
int isc_api_ut_add(void);   /* clovis/ut/isc_api_ut.c */
int posix_ns_ut_add(void);  /* gateways/posix/ut/ns_ut.c */
int pnfs_ut_add(void);      /* gateways/posix/ut/pnfs_ut.c */

/**
 * Make a fresh empty directory under $TMPDIR (default /tmp) named for tag;
 * returns a static path valid until the next call.  Removed at exit.
 */
const char *ut_tmpdir(const char *tag);

/** Remove a directory tree (best effort). */
void ut_rmtree(const char *path);

/**
 * Are the suites running against a cluster (STRATA_UT_CLUSTER names a
 * cluster file, so clovis_init() of a test build opens a cluster client)?
 */
bool ut_cluster_mode(void);

/**
 * In cluster mode, skip the calling test: print why (one line) and return
 * true; the test then returns at once.  Only for what cannot hold against
 * a cluster by nature (a local store's directory, in-process fault points,
 * a sized local device).
 */
bool ut_cluster_skip(const char *test, const char *why);

/**
 * Rounds of a loop-type test: full, or quick (fewer, at least 1) when the
 * environment has STRATA_UT_QUICK=1.  tests/asan.sh sets it: under
 * AddressSanitizer the heaviest random and stress loops (analyzer/random,
 * smr/clean_with_reader) run fewer rounds, each round asserting all it
 * does in full; the plain runs (tests/ut_part.sh build/ut_main) run every
 * round.  Prints "(STRATA_UT_QUICK: N of M rounds) " when it cuts.
 */
unsigned ut_rounds(unsigned full, unsigned quick);

/* Does this host resolve "localhost"?  A debootstrap root has no
 * /etc/hosts: tests that use the name expect it refused there. */
bool ut_host_has_localhost(void);

#endif
