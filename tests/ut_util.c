/* ut_util.c — helpers shared by the CUnit suites (see ut.h). */
#include <ftw.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/ut.h"

static int ut_rm_one(const char *p, const struct stat *st, int flag,
		     struct FTW *ftw)
{
	return remove(p);
}

void ut_rmtree(const char *path)
{
	nftw(path, ut_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char ut_root[256];

static void ut_cleanup(void)
{
	if (ut_root[0] != '\0' && getenv("UT_KEEP") == NULL)
		ut_rmtree(ut_root);
}

const char *ut_tmpdir(const char *tag)
{
	static char path[512];
	static unsigned seq;
	const char *tmp = getenv("TMPDIR");

	if (ut_root[0] == '\0') {
		snprintf(ut_root, sizeof ut_root, "%s/strata-ut.XXXXXX",
			 tmp != NULL ? tmp : "/tmp");
		if (mkdtemp(ut_root) == NULL)
			return NULL;
		atexit(ut_cleanup);
	}
	snprintf(path, sizeof path, "%s/%s.%u", ut_root, tag, seq++);
	if (mkdir(path, 0700) != 0)
		return NULL;
	return path;
}

bool ut_cluster_mode(void)
{
	const char *f = getenv("STRATA_UT_CLUSTER");

	return f != NULL && f[0] != '\0';
}

bool ut_cluster_skip(const char *test, const char *why)
{
	if (!ut_cluster_mode())
		return false;
	printf("skipped in cluster mode (%s: %s) ", test, why);
	return true;
}

unsigned ut_rounds(unsigned full, unsigned quick)
{
	const char *q = getenv("STRATA_UT_QUICK");

	if (q == NULL || strcmp(q, "1") != 0 || quick >= full)
		return full;
	if (quick == 0)
		quick = 1;
	printf("(STRATA_UT_QUICK: %u of %u rounds) ", quick, full);
	return quick;
}

bool ut_host_has_localhost(void)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM}, *ai = NULL;
	bool ok = getaddrinfo("localhost", NULL, &hints, &ai) == 0;

	if (ai != NULL)
		freeaddrinfo(ai);
	return ok;
}
