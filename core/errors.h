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

/**
 * Put back a message saved earlier from err_msg() (len bytes, its
 * strlen()): a copy, without formatting or logging, for code that runs
 * work under a cleared message and then keeps the caller's (the inline
 * op paths in clovis/op.c, where err_set(0, "%s", saved) cost a
 * vsnprintf per op).  len is cut to the buffer's size.
 */
void err_restore(const char *msg, size_t len);

#endif
