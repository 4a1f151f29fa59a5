/*
 * pys.h — what the files of strata._strata share (src/: the Python
 * binding's C extension; _strata.c says how they fit together): the
 * objects of its types, the xop (one Clovis op and everything it holds
 * until it is freed), and the calls one file makes into another.
 * Internal: nothing outside src/ includes it.
 */
#ifndef STRATA_PYS_H
#define STRATA_PYS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/clovis.h>

/** A message copied out of Clovis (clovis_errmsg(), an op's message). */
#define PYS_MSG_LEN 512u
/** Records asked per NEXT op by Idx.next(): bounded so that one op's
 *  malloc()ed records stay small. */
#define PYS_NEXT_MAX 1024u

/* ------------------------------------------------------------- types */

struct xop;
struct dtxobj;

typedef struct {
	PyObject_HEAD
	struct clovis *s_cl;      /* NULL once closed (or never opened) */
	bool s_closing;           /* close() started: no new use */
	bool s_cluster;
	pthread_rwlock_t s_use;   /* read: a call using s_cl; write: close */
	pthread_mutex_t s_qlock;  /* s_done, s_async, s_stop */
	pthread_cond_t s_qcond;   /* a completion queued, or s_stop */
	pthread_cond_t s_idle;    /* s_async reached 0 */
	struct xop *s_done;       /* finished async ops, oldest first */
	struct xop **s_done_tail;
	uint64_t s_async;         /* async ops started and not dispatched */
	bool s_stop;              /* dispatch() returns once s_async is 0 */
	struct dtxobj *s_dtxs;    /* open dtxs (borrowed), aborted by close */
	PyObject *s_name;         /* data dir or cluster file (messages) */
} StoreObject;

typedef struct {
	PyObject_HEAD
	StoreObject *e_store;
	PyObject *e_parent;       /* the Container it lives in, or NULL */
	uint32_t e_type;          /* CLOVIS_ET_* */
	union {
		struct clovis_container c;
		struct clovis_obj o;
		struct clovis_idx i;
	} e_u;
	char e_name[64];          /* "object 1a:400", for messages */
} EntityObject;

enum dtx_state { DS_OPEN = 1, DS_BUSY, DS_COMMITTED, DS_ABORTED, DS_FAILED };

typedef struct dtxobj {
	PyObject_HEAD
	StoreObject *d_store;
	struct clovis_dtx *d_dtx;
	struct xop *d_members;    /* newest first */
	uint32_t d_nr;
	enum dtx_state d_state;
	struct dtxobj *d_next;    /* in s_dtxs while open */
	struct clovis_dtx_id d_id;
} DtxObject;

/* The types (each file defines its own with its methods). */
extern PyTypeObject StoreType, EntityType, ContainerType, ObjType, IdxType,
	DtxType;

/* What an op does, for its result and its messages. */
enum xop_kind {
	XK_READ_NEW = 1, /* READ into a new bytes object */
	XK_READ_INTO,    /* READ into the caller's writable buffer */
	XK_WRITE,
	XK_ALLOC,
	XK_FREE,
	XK_IDX_GET,
	XK_IDX_PUT,
	XK_IDX_DEL,
	XK_ENTITY,
};

/*
 * One op and everything it needs until it is freed: its vectors (Clovis
 * reads them until then), the views of the caller's buffers, and the
 * references that keep the handle and the store alive.  On the stack for
 * a synchronous op; malloc()ed for an async op or a dtx member.
 */
struct xop {
	struct clovis_op *x_op;
	struct xop *x_next;       /* completion list, dtx members */
	StoreObject *x_store;     /* heap xops: a reference */
	PyObject *x_owner;        /* the entity handle (a reference) */
	PyObject *x_cb;           /* async: cb(ok, value) */
	PyObject *x_result;       /* XK_READ_NEW: the bytes read into */
	PyObject *x_keep;         /* index ops: the tuples of keys, values */
	enum xop_kind x_kind;
	int x_rc;
	uint64_t x_start, x_nr;   /* object ops: one extent */
	struct clovis_extvec x_ext;
	void *x_buf;
	size_t x_len;
	struct clovis_bufvec x_bv;
	Py_buffer x_view;         /* object ops: the caller's buffer */
	bool x_has_view;
	uint32_t x_nrec;          /* index ops: records */
	void **x_kb, **x_vb;
	size_t *x_kl, *x_vl;
	int32_t *x_rcs;
	Py_buffer *x_views;       /* index ops: views of keys and values */
	uint32_t x_nviews;
	void *x_arrays;           /* one allocation for the arrays above */
	struct clovis_bufvec x_kv, x_vv;
	char x_what[160];         /* "object 0:1a: read of 4096 bytes at 0" */
	char x_msg[PYS_MSG_LEN];  /* the op's failure message */
	bool x_heap;              /* malloc()ed: freed by xop_drop() */
};


/* ------------------------------------------------ between the files */

/* _strata.c: the exception of Clovis error rc (negative) raised with a
 * message from fmt (returns NULL); the exception object itself, for an
 * async op's callback. */
PyObject *raise_rc(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
PyObject *error_make(int rc, const char *what, const char *msg);

/* store.c: enter (0, s_use read-held; or -1, ValueError: closed) and
 * leave a call that uses the store. */
int store_enter(StoreObject *s);
void store_leave(StoreObject *s);

/* entity.c: the realm new entities of parent (a Container, or None: the
 * default container) are made in; "container", "object", "index"; a new
 * handle of type (its store and container checked, its id parsed); the
 * handles' dealloc, traverse and clear. */
struct clovis_realm *realm_of(StoreObject *s, PyObject *parent);
extern const char *const kind_names[];
EntityObject *ent_alloc(PyTypeObject *type, uint32_t et, PyObject *store,
			PyObject *parent, PyObject *hi, PyObject *lo,
			struct clovis_id *id);
void ent_dealloc(EntityObject *e);
int ent_traverse(EntityObject *e, visitproc visit, void *arg);
int ent_clear(EntityObject *e);

/* xop.c: xops, their runs, their arguments. */
struct xop *xop_new(struct xop *stack, bool heap);
void xop_release(struct xop *x);
void xop_drop(struct xop *x);
PyObject *xop_value(struct xop *x);
int xop_sync(StoreObject *s, struct xop *x);
int xop_start(StoreObject *s, struct xop *x, PyObject *cb);
PyObject *xop_finish(StoreObject *s, struct xop *x, PyObject *tx,
		     PyObject *cb, bool want_value);
int run_check(StoreObject *s, PyObject *tx, PyObject *cb, const char *what);
int arg_u64(PyObject *o, const char *what, const char *field,
	    uint64_t *out);
int arg_buffer(PyObject *o, bool writable, const char *what,
	       const char *field, Py_buffer *view);
PyObject *store_dispatch(StoreObject *s, PyObject *unused);

/* dtx.c: members of a dtx, and its abort (store close, dealloc). */
int dtx_take(DtxObject *d, StoreObject *s, const char *what);
int dtx_add_xop(DtxObject *d, struct xop *x);
void dtx_abort_now(DtxObject *d);

#endif /* STRATA_PYS_H */
