/*
 * ut_main.c — the one CUnit runner for every module's suites.
 *
 *   ut_main [-l] [-s SUITE[,SUITE...]] [-x SUITE[,SUITE...]] [-t TEST]
 *     -l  list suites and tests;  -s  run only these suites (modules);
 *     -x  leave out these CUnit suites (as -l names them);
 *     -t  run only tests whose name contains TEST.
 * Prints CUnit's report and ends with "N passed, N failed" (tests).
 * Each suite runs in a fresh temporary directory given by ut_tmpdir().
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ut.h"


/* Every module's suite-adding function, in data-path order. */
static const struct ut_module {
	const char *um_name;
	int (*um_add)(void);
} ut_modules[] = {
	{"core", core_ut_add},
	{"tier", tier_ut_add},
	{"layout", layout_ut_add},
	{"clovis", clovis_ut_add},
	{"clovis_bad", clovis_bad_ut_add},
	{"store", store_ut_add},
	{"concurrency", concurrency_ut_add},
	{"stripe", stripe_ut_add},
	{"smr", smr_ut_add},
	{"rpc", rpc_ut_add},
	{"server", server_ut_add},
	{"dtm", dtm_ut_add},
	{"fdmi", fdmi_ut_add},
	{"hsm_policy", hsm_policy_ut_add},
	{"hsm", hsm_ut_add},
	{"s3", s3_ut_add},
	{"etcd", etcd_ut_add},
	{"analyzer", analyzer_ut_add},
	{"addb", addb_ut_add},
	{"isc", isc_ut_add},
	{"isc_api", isc_api_ut_add},
	{"posix_ns", posix_ns_ut_add},
	{"pnfs", pnfs_ut_add},
};

static bool ut_wanted(const char *list, const char *name)
{
	char buf[256], *save = NULL;

	if (list == NULL)
		return true;
	snprintf(buf, sizeof buf, "%s", list);
	for (char *t = strtok_r(buf, ",", &save); t != NULL;
	     t = strtok_r(NULL, ",", &save))
		if (strcmp(t, name) == 0)
			return true;
	return false;
}

static void ut_filter_tests(const char *pat)
{
	CU_pTestRegistry reg = CU_get_registry();

	for (CU_pSuite s = reg->pSuite; s != NULL; s = s->pNext)
		for (CU_pTest t = s->pTest; t != NULL; t = t->pNext)
			if (strstr(t->pName, pat) == NULL)
				CU_set_test_active(t, CU_FALSE);
}

/* -x: the tests of the named CUnit suites are left inactive. */
static void ut_exclude_suites(const char *list)
{
	for (CU_pSuite s = CU_get_registry()->pSuite; s != NULL; s = s->pNext)
		if (ut_wanted(list, s->pName))
			for (CU_pTest t = s->pTest; t != NULL; t = t->pNext)
				CU_set_test_active(t, CU_FALSE);
}

int main(int argc, char **argv)
{
	const char *suites = NULL, *test = NULL, *exclude = NULL;
	bool list = false;
	unsigned run, failed, sfailed;
	int opt;

	while ((opt = getopt(argc, argv, "ls:t:x:")) != -1) {
		if (opt == 'l')
			list = true;
		else if (opt == 's')
			suites = optarg;
		else if (opt == 't')
			test = optarg;
		else if (opt == 'x')
			exclude = optarg;
		else
			return 2;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	for (size_t i = 0; i < sizeof ut_modules / sizeof ut_modules[0]; i++)
		if (ut_wanted(suites, ut_modules[i].um_name) &&
		    ut_modules[i].um_add() != 0) {
			fprintf(stderr, "ut: cannot add %s\n", ut_modules[i].um_name);
			return 2;
		}
	if (list) {
		for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext)
			for (CU_pTest t = s->pTest; t; t = t->pNext)
				printf("%s/%s\n", s->pName, t->pName);
		CU_cleanup_registry();
		return 0;
	}
	if (test != NULL)
		ut_filter_tests(test);
	if (exclude != NULL)
		ut_exclude_suites(exclude);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	run = CU_get_number_of_tests_run();
	failed = CU_get_number_of_tests_failed();
	/* a suite whose set-up (or clean-up) failed ran none (or not all)
	 * of its tests: a failure too, each such suite counted once (CUnit
	 * only warns, and its tests were never counted) */
	sfailed = CU_get_number_of_suites_failed();
	if (sfailed != 0)
		printf("ut: %u suite(s) failed their set-up or clean-up (the "
		       "\"Suite initialization failed\" lines above)\n",
		       sfailed);
	printf("%u passed, %u failed\n", run - failed, failed + sfailed);
	CU_cleanup_registry();
	return failed + sfailed == 0 ? 0 : 1;
}
