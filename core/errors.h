/*
 * errors.h — error codes, their strings, and the per-thread error message.
 *
 * Functions return 0 or a negative errno / negative ST_E* code.  The leaf
 * that first sees an error calls err_set() with a message naming the entity,
 * key or field; callers pass the code up without a new message.
 */
#ifndef STRATA_CORE_ERRORS_H
#define STRATA_CORE_ERRORS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include "core/limits.h"

/** String for rc (negative errno or negative ST_E*). */
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

/** Levels of the per-thread message stack (err_push). */
#define ERR_LEVELS 4u

/**
 * Run work under a fresh, empty message and keep the caller's: err_push()
 * starts a new level (true), and err_pop() goes back to the caller's
 * message as it was, with no copy either way (the inline op paths in
 * clovis/op.c, once per op).  false when ERR_LEVELS levels are in use:
 * nothing changed, and the caller saves the message itself (err_msg(),
 * err_clear(), err_restore()).  Every true err_push() is matched by one
 * err_pop() in the same thread.
 */
bool err_push(void);
void err_pop(void);

/**
 * Put back a message saved earlier from err_msg() (len bytes, its
 * strlen()): a copy, without formatting or logging.  len is cut to the
 * buffer's size.
 */
void err_restore(const char *msg, size_t len);

#endif
