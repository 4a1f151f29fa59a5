/*
 * errors.h — error codes, their strings, and the per-thread error message.
 *
 * Functions return 0 or a negative errno / negative CLOVIS_E* code.  The leaf
 * that first sees an error calls err_set() with a message naming the entity,
 * key or field; callers pass the code up without a new message.
 */
#ifndef STRATA_CORE_ERRORS_H
#define STRATA_CORE_ERRORS_H

#include <errno.h>
#include "clovis/clovis.h"
#include "core/limits.h"

/** String for rc (negative errno or negative CLOVIS_E*). */
const char *err_str(int rc);

/**
 * Record a message for the calling thread and return rc unchanged, so that a
 * leaf can write `return err_set(-EINVAL, "object %s: ...", id);`.  A caller
 * may wrap the leaf's message: err_set(rc, "object %s: %s", id, err_msg()).
 */
int err_set(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** The calling thread's last message ("" if none). */
const char *err_msg(void);

/** Forget the calling thread's message. */
void err_clear(void);

#endif
