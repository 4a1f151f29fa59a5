/* errors.c — error strings and the per-thread message (see errors.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/errors.h"
#include "core/log.h"

/* The thread's messages: err_lvls[err_lvl] is the current one; the levels
 * below belong to callers that ran work under err_push(). */
static __thread char err_lvls[ERR_LEVELS][LIM_ERRMSG_LEN];
static __thread uint32_t err_lvl;

const char *err_str(int rc)
{
	switch (-rc) {
	case 0:
		return "success";
	case ST_ECORRUPT:
		return "on-disk structure is corrupt";
	case ST_EVERSION:
		return "store made by an incompatible version";
	case ST_ECHECKSUM:
		return "checksum mismatch";
	case ST_ESTATE:
		return "handle or op in the wrong state";
	default:
		return rc < 0 ? strerror(-rc) : "not an error code";
	}
}

/* The message is formatted into a local buffer first: callers may pass
 * err_msg() itself as an argument, to wrap a leaf's message with context. */
int err_set(int rc, const char *fmt, ...)
{
	char tmp[LIM_ERRMSG_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	memcpy(err_lvls[err_lvl], tmp, LIM_ERRMSG_LEN);
	LOG_DEBUG("error %d (%s): %s", rc, err_str(rc), err_lvls[err_lvl]);
	return rc;
}

const char *err_msg(void)
{
	return err_lvls[err_lvl];
}

void err_clear(void)
{
	err_lvls[err_lvl][0] = '\0';
}

bool err_push(void)
{
	if (err_lvl + 1 >= ERR_LEVELS)
		return false;
	err_lvls[++err_lvl][0] = '\0';
	return true;
}

void err_pop(void)
{
	ASSERT(err_lvl > 0);
	err_lvl--;
}

void err_restore(const char *msg, size_t len)
{
	if (len >= LIM_ERRMSG_LEN)
		len = LIM_ERRMSG_LEN - 1;
	memcpy(err_lvls[err_lvl], msg, len);
	err_lvls[err_lvl][len] = '\0';
}
