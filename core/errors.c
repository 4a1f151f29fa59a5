/* errors.c — error strings and the per-thread message (see errors.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/errors.h"
#include "core/log.h"

static __thread char err_buf[LIM_ERRMSG_LEN];

const char *err_str(int rc)
{
	switch (-rc) {
	case 0:
		return "success";
	case CLOVIS_ECORRUPT:
		return "on-disk structure is corrupt";
	case CLOVIS_EVERSION:
		return "store made by an incompatible version";
	case CLOVIS_ECHECKSUM:
		return "checksum mismatch";
	case CLOVIS_ESTATE:
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
	memcpy(err_buf, tmp, sizeof err_buf);
	LOG_DEBUG("error %d (%s): %s", rc, err_str(rc), err_buf);
	return rc;
}

const char *err_msg(void)
{
	return err_buf;
}

void err_clear(void)
{
	err_buf[0] = '\0';
}

void err_restore(const char *msg, size_t len)
{
	if (len >= sizeof err_buf)
		len = sizeof err_buf - 1;
	memcpy(err_buf, msg, len);
	err_buf[len] = '\0';
}
