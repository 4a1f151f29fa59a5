/*
 * xop.c — ops: an xop (one Clovis op with its vectors, buffer views and
 * references) made, run now (GIL released), started with callbacks (the
 * dispatch thread delivers them), or added to a dtx; the checks of op
 * arguments.
 */
#include "clovis/python/src/pys.h"

/* ------------------------------------------------------------ xops */


/* A Clovis callback (a library thread, no GIL): queue the op for
 * dispatch().  Its rc and message are read here, where the op is
 * final. */
static void xop_done_cb(struct clovis_op *op)
{
	struct xop *x = clovis_op_datum(op);
	StoreObject *s = x->x_store;

	x->x_rc = clovis_op_rc(op);
	if (x->x_rc != 0)
		snprintf(x->x_msg, sizeof x->x_msg, "%s", clovis_op_errmsg(op));
	x->x_next = NULL;
	pthread_mutex_lock(&s->s_qlock);
	*s->s_done_tail = x;
	s->s_done_tail = &x->x_next;
	pthread_cond_signal(&s->s_qcond);
	pthread_mutex_unlock(&s->s_qlock);
}

static const struct clovis_op_cbs xop_cbs = {
	.oc_stable = xop_done_cb,
	.oc_failed = xop_done_cb,
};

/* Hand a finished async op to its Python callback (GIL held). */
static void xop_deliver(struct xop *x)
{
	PyObject *val, *r;
	int ok = x->x_rc == 0;

	val = ok ? xop_value(x) : error_make(x->x_rc, x->x_what, x->x_msg);
	if (val == NULL) { /* the result could not be made: deliver that */
		PyObject *t, *v, *tb;

		PyErr_Fetch(&t, &v, &tb);
		PyErr_NormalizeException(&t, &v, &tb);
		Py_XDECREF(t);
		Py_XDECREF(tb);
		val = v != NULL ? v : Py_NewRef(Py_None);
		ok = 0;
	}
	r = PyObject_CallFunction(x->x_cb, "iO", ok, val);
	if (r == NULL)
		PyErr_WriteUnraisable(x->x_cb);
	Py_XDECREF(r);
	Py_DECREF(val);
}

/*
 * Store.dispatch(): deliver finished async ops until the store closes.
 * Runs in one Python thread per store (strata.Store starts it at the
 * first async op).  Each op is freed with the GIL released (clovis_op_free
 * waits the moment until the library is done with it), then delivered.
 */
PyObject *store_dispatch(StoreObject *s, PyObject *unused)
{
	(void)unused;
	for (;;) {
		struct xop *list, *x, *next;
		uint64_t n = 0;

		Py_BEGIN_ALLOW_THREADS
		pthread_mutex_lock(&s->s_qlock);
		while (s->s_done == NULL && !(s->s_stop && s->s_async == 0))
			pthread_cond_wait(&s->s_qcond, &s->s_qlock);
		list = s->s_done;
		s->s_done = NULL;
		s->s_done_tail = &s->s_done;
		pthread_mutex_unlock(&s->s_qlock);
		for (x = list; x != NULL; x = x->x_next) {
			clovis_op_free(x->x_op);
			x->x_op = NULL;
		}
		Py_END_ALLOW_THREADS
		if (list == NULL)
			break;
		for (x = list; x != NULL; x = next) {
			next = x->x_next;
			xop_deliver(x);
			xop_drop(x);
			n++;
		}
		pthread_mutex_lock(&s->s_qlock);
		s->s_async -= n;
		if (s->s_async == 0)
			pthread_cond_broadcast(&s->s_idle);
		pthread_mutex_unlock(&s->s_qlock);
	}
	Py_RETURN_NONE;
}

/* Release what an xop holds (GIL held); the op itself must be freed. */
void xop_release(struct xop *x)
{
	/* a GET whose values were not taken by xop_value() (it failed, or
	 * its result could not be made): the library's malloc()ed values */
	for (uint32_t k = 0; x->x_kind == XK_IDX_GET && k < x->x_nrec; k++)
		if (x->x_rcs[k] == 0)
			free(x->x_vb[k]);
	x->x_nrec = 0;
	if (x->x_has_view)
		PyBuffer_Release(&x->x_view);
	x->x_has_view = false;
	for (uint32_t i = 0; i < x->x_nviews; i++)
		PyBuffer_Release(&x->x_views[i]);
	x->x_nviews = 0;
	PyMem_Free(x->x_arrays);
	x->x_arrays = NULL;
	Py_CLEAR(x->x_result);
	Py_CLEAR(x->x_keep);
	Py_CLEAR(x->x_cb);
	Py_CLEAR(x->x_owner);
	Py_CLEAR(x->x_store);
}

/*
 * A zeroed xop: on the stack for a synchronous op, else on the heap (an
 * async op, a dtx member: they outlive the call).  Chosen before the op is
 * made: the op keeps pointers to the xop's vectors until it is freed.
 */
struct xop *xop_new(struct xop *stack, bool heap)
{
	struct xop *x = stack;

	if (heap) {
		x = PyMem_RawCalloc(1, sizeof *x);
		if (x == NULL) {
			PyErr_NoMemory();
			return NULL;
		}
		x->x_heap = true;
	} else {
		memset(x, 0, sizeof *x);
	}
	return x;
}

/* Release an xop whose op is freed (or was never made) and free it. */
void xop_drop(struct xop *x)
{
	xop_release(x);
	if (x->x_heap)
		PyMem_RawFree(x);
}

/* -------------------------------------------------------- arguments */

/* An unsigned 64-bit argument: 0, or -1 with TypeError / ValueError
 * naming the field and its entity. */
int arg_u64(PyObject *o, const char *what, const char *field,
		   uint64_t *out)
{
	unsigned long long v;
	PyObject *n;

	if (!PyIndex_Check(o) || PyBool_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s: %s must be an int, not %s",
			     what, field, Py_TYPE(o)->tp_name);
		return -1;
	}
	n = PyNumber_Index(o);
	if (n == NULL)
		return -1;
	v = PyLong_AsUnsignedLongLong(n); /* OverflowError when < 0 too */
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "%s: %s must be between 0 and "
			     "2**64-1, not %R", what, field, n);
		Py_DECREF(n);
		return -1;
	}
	Py_DECREF(n);
	*out = v;
	return 0;
}

/* A view of an object's data: one C-contiguous buffer, writable for a
 * READ into it.  0, or -1 with TypeError / ValueError naming the field. */
int arg_buffer(PyObject *o, bool writable, const char *what,
		      const char *field, Py_buffer *view)
{
	if (!PyObject_CheckBuffer(o)) {
		PyErr_Format(PyExc_TypeError, "%s: %s must be a %sbytes-like "
			     "object (buffer protocol), not %s", what, field,
			     writable ? "writable " : "", Py_TYPE(o)->tp_name);
		return -1;
	}
	if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) != 0) {
		if (!PyErr_ExceptionMatches(PyExc_BufferError) &&
		    !PyErr_ExceptionMatches(PyExc_ValueError))
			return -1;
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "%s: %s must be one C-contiguous "
			     "buffer (this %s is not)", what, field,
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	if (writable && view->readonly) {
		PyBuffer_Release(view);
		PyErr_Format(PyExc_TypeError, "%s: %s must be a writable buffer "
			     "(this %s is read-only)", what, field,
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------- runs */


/* Run a made op now with the GIL released (clovis_op_sync() frees it) and
 * leave s_use.  0, or -1 with the exception raised. */
int xop_sync(StoreObject *s, struct xop *x)
{
	int rc;

	Py_BEGIN_ALLOW_THREADS
	rc = clovis_op_sync(x->x_op);
	if (rc != 0)
		snprintf(x->x_msg, sizeof x->x_msg, "%s", clovis_errmsg());
	store_leave(s);
	Py_END_ALLOW_THREADS
	x->x_op = NULL;
	x->x_rc = rc;
	if (rc != 0) {
		raise_rc(rc, "%s: %s", x->x_what, x->x_msg);
		return -1;
	}
	return 0;
}

/* Launch a made op (heap xop) with callbacks that queue it for
 * dispatch(), which calls cb(ok, value).  0 or the Clovis error. */
int xop_start(StoreObject *s, struct xop *x, PyObject *cb)
{
	int rc;

	Py_INCREF(cb);
	x->x_cb = cb;
	rc = clovis_op_setup(x->x_op, &xop_cbs, x);
	if (rc == 0) {
		pthread_mutex_lock(&s->s_qlock);
		s->s_async++;
		pthread_mutex_unlock(&s->s_qlock);
		rc = clovis_op_launch(&x->x_op, 1);
		if (rc != 0) {
			pthread_mutex_lock(&s->s_qlock);
			if (--s->s_async == 0)
				pthread_cond_broadcast(&s->s_idle);
			pthread_mutex_unlock(&s->s_qlock);
		}
	}
	return rc; /* on failure the caller frees the op and raises */
}

/*
 * Finish a made op (s_use held): as a member of tx (not None; heap xop),
 * started with cb (not NULL; heap xop), or run now.  Returns its value
 * (want_value: xop_value(), else None), or None for tx and cb, or NULL
 * with the exception raised.  The xop is consumed in every case.  tx is
 * checked again here: converting the arguments may have run Python code
 * (__index__, a sequence's __iter__) in which another thread committed or
 * aborted it; nothing between this check and clovis_dtx_add() does.
 */
PyObject *xop_finish(StoreObject *s, struct xop *x, PyObject *tx,
			    PyObject *cb, bool want_value)
{
	PyObject *r = NULL;
	int rc;

	if ((tx != NULL && tx != Py_None) || cb != NULL) {
		Py_INCREF(s);
		x->x_store = s;
		if (cb != NULL)
			rc = xop_start(s, x, cb);
		else if (dtx_take((DtxObject *)tx, s, x->x_what) != 0)
			goto out_taken; /* ended while arguments ran Python */
		else
			rc = dtx_add_xop((DtxObject *)tx, x);
		if (rc == 0) {
			store_leave(s);
			Py_RETURN_NONE;
		}
		snprintf(x->x_msg, sizeof x->x_msg, "%s", clovis_errmsg());
		clovis_op_free(x->x_op);
		store_leave(s);
		raise_rc(rc, "%s: %s: %s", x->x_what, cb != NULL ? "launch" :
			 "dtx add", x->x_msg);
		xop_drop(x);
		return NULL;
out_taken:
		clovis_op_free(x->x_op);
		store_leave(s);
		xop_drop(x);
		return NULL;
	}
	if (xop_sync(s, x) == 0)
		r = want_value ? xop_value(x) : Py_NewRef(Py_None);
	xop_drop(x);
	return r;
}

/* The checks of an op's tx and cb before anything is made. */
int run_check(StoreObject *s, PyObject *tx, PyObject *cb,
		     const char *what)
{
	if (cb != NULL && !PyCallable_Check(cb)) {
		PyErr_Format(PyExc_TypeError, "%s: callback must be callable",
			     what);
		return -1;
	}
	if (tx == NULL || tx == Py_None)
		return 0;
	if (!PyObject_TypeCheck(tx, &DtxType)) {
		PyErr_Format(PyExc_TypeError, "%s: tx must be a Dtx or None, "
			     "not %s", what, Py_TYPE(tx)->tp_name);
		return -1;
	}
	return dtx_take((DtxObject *)tx, s, what);
}

/* The value of a finished op: bytes read, their count, None, or the
 * records' results (index ops). */
PyObject *xop_value(struct xop *x)
{
	PyObject *l;

	switch (x->x_kind) {
	case XK_READ_NEW:
		return Py_NewRef(x->x_result);
	case XK_READ_INTO:
		return PyLong_FromSize_t(x->x_len);
	case XK_IDX_GET:
		l = PyList_New(x->x_nrec);
		for (uint32_t k = 0; l != NULL && k < x->x_nrec; k++) {
			PyObject *v;

			if (x->x_rcs[k] == 0)
				v = PyBytes_FromStringAndSize(x->x_vb[k],
						(Py_ssize_t)x->x_vl[k]);
			else
				v = PyLong_FromLong(x->x_rcs[k]);
			if (v == NULL)
				Py_CLEAR(l);
			else
				PyList_SET_ITEM(l, k, v);
		}
		for (uint32_t k = 0; k < x->x_nrec; k++)
			if (x->x_rcs[k] == 0)
				free(x->x_vb[k]);
		x->x_nrec = 0; /* freed */
		return l;
	case XK_IDX_PUT:
	case XK_IDX_DEL:
		l = PyList_New(x->x_nrec);
		for (uint32_t k = 0; l != NULL && k < x->x_nrec; k++) {
			PyObject *v = PyLong_FromLong(x->x_rcs[k]);

			if (v == NULL)
				Py_CLEAR(l);
			else
				PyList_SET_ITEM(l, k, v);
		}
		return l;
	default:
		Py_RETURN_NONE;
	}
}
