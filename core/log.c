/* log.c — logging to stderr (see log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

int log_level = LOG_ERR;

void log_level_set(int level)
{
	const char *env = getenv("STRATA_LOG");

	if (env != NULL && env[0] >= '0' && env[0] <= '4')
		level = env[0] - '0';
	if (level >= LOG_NONE && level <= LOG_DBG)
		log_level = level;
}

void log_emit(int level, const char *file, int line, const char *fmt, ...)
{
	static const char *names[] = {"", "error", "warn", "info", "debug"};
	char msg[512];
	struct timespec ts;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "strata[%d] %ld.%06ld %s %s:%d: %s\n", (int)getpid(),
		(long)ts.tv_sec, ts.tv_nsec / 1000, names[level], file, line, msg);
}

void log_assert_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "strata: assertion failed: %s at %s:%d\n", what, file,
		line);
	abort();
}
