# tests/ — the CUnit runner, integration, crash and concurrency tests.
UT_SRCS += tests/ut_util.c
