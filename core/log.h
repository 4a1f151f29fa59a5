/*
 * log.h — human-readable logging to stderr.
 *
 * The level is checked before any argument is evaluated, so LOG_DEBUG costs a
 * load and a branch when off.  Logs are for people; telemetry goes to stats.
 */
#ifndef STRATA_CORE_LOG_H
#define STRATA_CORE_LOG_H

enum log_level { LOG_NONE, LOG_ERR, LOG_WARN, LOG_INFO, LOG_DBG };

extern int log_level;

/** Set the level; the STRATA_LOG environment variable (0-4) wins. */
void log_level_set(int level);

void log_emit(int level, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define LOG_AT(lvl, ...)                                                   \
	do {                                                               \
		if (__builtin_expect(log_level >= (lvl), 0))               \
			log_emit((lvl), __FILE__, __LINE__, __VA_ARGS__);  \
	} while (0)

#define LOG_ERROR(...) LOG_AT(LOG_ERR, __VA_ARGS__)
#define LOG_WARNING(...) LOG_AT(LOG_WARN, __VA_ARGS__)
#define LOG_INFO(...) LOG_AT(LOG_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) LOG_AT(LOG_DBG, __VA_ARGS__)

/* Invariants: our own programmer errors.  Never used on caller input. */
#define ASSERT(cond)                                                       \
	do {                                                               \
		if (__builtin_expect(!(cond), 0))                          \
			log_assert_fail(#cond, __FILE__, __LINE__);        \
	} while (0)
#define PRE(cond) ASSERT(cond)
#define POST(cond) ASSERT(cond)

void log_assert_fail(const char *what, const char *file, int line)
	__attribute__((noreturn));

#endif
