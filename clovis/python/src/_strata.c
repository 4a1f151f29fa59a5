/*
 * _strata.c — strata._strata, the C half of the Python binding: Clovis
 * (clovis/clovis.h) through the Python C API, over libstrata.so.
 *
 * Types: Store (one struct clovis), Container, Obj and Idx (entity handles,
 * each embedding its struct clovis_*), Dtx (one struct clovis_dtx).  The
 * pure-Python layer (strata/__init__.py and its modules) subclasses the
 * entity types and adds the Pythonic surface; everything that touches a
 * Clovis struct or an op is here, in src/:
 *
 *   _strata.c   the module: errors as Python exceptions, module functions,
 *               the types' registration and constants (this file);
 *   store.c     Store: open, close, the calls that use the store,
 *               management calls;
 *   xop.c       xops (an op and what it holds until freed): run now,
 *               started with callbacks and dispatched, argument checks;
 *   entity.c    entity handles, entity ops (Container, Obj's and Idx's
 *               common part);
 *   io.c        Obj's I/O and Idx's records;
 *   dtx.c       Dtx: members, commit, abort;
 *   pys.h       what they share.
 *
 * A write's path: Obj.write() (io.c obj_write, obj_run) -> obj_prep()
 * (a Py_buffer view of the data, clovis_obj_op()) -> xop_finish() (xop.c)
 * -> xop_sync(): clovis_op_sync() with the GIL released.
 *
 * Collection.  Entity handles and Dtx are GC types: a handle visits its
 * store and container, a dtx its store and its members' handles, key and
 * value tuples and buffer views, so cycles through them are collected (a
 * collected open dtx is aborted).  An xop of an async op in flight is not
 * visited: its references are the op's until dispatch() drops them.
 *
 * Threads.  The GIL is released around every call that may block (store
 * open and close, every op's launch and wait, a dtx's commit and abort).
 * Nothing else of the GIL's is needed then: an op's buffers are held as
 * Py_buffer views taken before, and released after, with the GIL.
 *
 * Store lifetime.  Calls that use the store take s_use for reading (with
 * the GIL, never blocking: s_closing is checked first, under the GIL);
 * close() sets s_closing, aborts the open dtxs, then takes s_use for
 * writing with the GIL released, so clovis_fini() never runs under an
 * op of another thread (clovis.h: "no other thread may be using cl").
 * strata.Store.__del__ closes a store dropped without close(); on the
 * store's own dispatch thread it calls _close_later() instead (no new
 * use; dispatch() returns once every async op was delivered, and the
 * last reference's dealloc runs clovis_fini()).
 *
 * Async ops.  An op started by _start_*() has callbacks (oc_stable,
 * oc_failed) that run on Clovis threads: they only queue the op on the
 * store's completion list (a mutex and a condition variable, no Python).
 * Store.dispatch(), run by one Python thread per store (the Python layer
 * starts it), frees each finished op with the GIL released, then with
 * the GIL builds its result, releases its buffers and calls its Python
 * callback cb(ok, value).  A Clovis thread therefore never waits for the
 * GIL (callbacks "must not block for long") and never runs Python during
 * interpreter shutdown; the Python callback decides where the result
 * goes (a concurrent.futures.Future, or an asyncio loop through
 * loop.call_soon_threadsafe).  close() waits until every started op was
 * dispatched (s_async 0) before clovis_fini().
 */
#include "clovis/python/src/pys.h"

/* ------------------------------------------------------------ errors */

/* strata._errors.make_error(errno, message): the exception to raise for a
 * Clovis error (set by the Python layer at import). */
static PyObject *error_factory;

/* Raise the exception of Clovis error rc (negative) with a message made
 * from fmt; returns NULL for the caller to return. */
PyObject *raise_rc(int rc, const char *fmt, ...)
{
	char msg[PYS_MSG_LEN * 2];
	PyObject *exc;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (error_factory == NULL) {
		PyErr_Format(PyExc_OSError, "[%d] %s", -rc, msg);
		return NULL;
	}
	exc = PyObject_CallFunction(error_factory, "is", -rc, msg);
	if (exc != NULL) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/* The exception instance of rc, for an async op's callback (NULL with a
 * Python error set when even that failed). */
PyObject *error_make(int rc, const char *what, const char *msg)
{
	char text[PYS_MSG_LEN * 2];

	snprintf(text, sizeof text, "%s: %s", what, msg);
	if (error_factory == NULL)
		return PyObject_CallFunction(PyExc_OSError, "is", -rc, text);
	return PyObject_CallFunction(error_factory, "is", -rc, text);
}

/* ---------------------------------------------------- module functions */

static PyObject *mod_strerror(PyObject *m, PyObject *args)
{
	int rc;

	(void)m;
	if (!PyArg_ParseTuple(args, "i", &rc))
		return NULL;
	return PyUnicode_FromString(clovis_strerror(rc > 0 ? -rc : rc));
}

/* id_parse(text) -> (hi, lo): clovis_id_parse() ("HI:LO" hex, "@name"). */
static PyObject *mod_id_parse(PyObject *m, PyObject *args)
{
	struct clovis_id id;
	const char *text;
	int rc;

	(void)m;
	if (!PyArg_ParseTuple(args, "s", &text))
		return NULL;
	rc = clovis_id_parse(text, &id);
	if (rc != 0)
		return raise_rc(rc, "id %s: %s", text, clovis_errmsg());
	return Py_BuildValue("KK", (unsigned long long)id.ci_hi,
			     (unsigned long long)id.ci_lo);
}

/* store_destroy(data_dir): clovis_store_destroy(). */
static PyObject *mod_store_destroy(PyObject *m, PyObject *args)
{
	PyObject *path;
	char msg[PYS_MSG_LEN];
	int rc;

	(void)m;
	if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = clovis_store_destroy(PyBytes_AS_STRING(path));
	if (rc != 0)
		snprintf(msg, sizeof msg, "%s", clovis_errmsg());
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		raise_rc(rc, "store %s: destroy: %s", PyBytes_AS_STRING(path),
			 msg);
		Py_DECREF(path);
		return NULL;
	}
	Py_DECREF(path);
	Py_RETURN_NONE;
}

static PyObject *mod_set_error_factory(PyObject *m, PyObject *f)
{
	(void)m;
	if (!PyCallable_Check(f)) {
		PyErr_SetString(PyExc_TypeError, "error factory: callable");
		return NULL;
	}
	Py_INCREF(f);
	Py_XSETREF(error_factory, f);
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------- tables */

static PyMethodDef mod_methods[] = {
	{ "strerror", mod_strerror, METH_VARARGS,
	  "strerror(errno) -> str: clovis_strerror()" },
	{ "id_parse", mod_id_parse, METH_VARARGS,
	  "id_parse(text) -> (hi, lo): clovis_id_parse()" },
	{ "store_destroy", mod_store_destroy, METH_VARARGS,
	  "store_destroy(data_dir): clovis_store_destroy()" },
	{ "_set_error_factory", mod_set_error_factory, METH_O,
	  "the callable (errno, message) -> exception raised for Clovis "
	  "errors" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "strata._strata",
	"Clovis (clovis/clovis.h) for Python: the C half of strata.", -1,
	mod_methods, NULL, NULL, NULL, NULL,
};

static int add_type(PyObject *m, PyTypeObject *t, const char *name)
{
	if (PyType_Ready(t) < 0)
		return -1;
	Py_INCREF(t);
	if (PyModule_AddObject(m, name, (PyObject *)t) < 0) {
		Py_DECREF(t);
		return -1;
	}
	return 0;
}

PyMODINIT_FUNC PyInit__strata(void)
{
	PyObject *m = PyModule_Create(&module);
	static const struct { const char *n; long v; } consts[] = {
		{ "BLOCK_SHIFT_MIN", CLOVIS_BLOCK_SHIFT_MIN },
		{ "BLOCK_SHIFT_MAX", CLOVIS_BLOCK_SHIFT_MAX },
		{ "KEY_MAX", CLOVIS_KEY_MAX },
		{ "VAL_MAX", CLOVIS_VAL_MAX },
		{ "VEC_MAX", CLOVIS_VEC_MAX },
		{ "OP_BYTES_MAX", (long)CLOVIS_OP_BYTES_MAX },
		{ "NEXT_MAX", PYS_NEXT_MAX },
		{ "DTX_OPS_MAX", CLOVIS_DTX_OPS_MAX },
		{ "MODE_EMBEDDED", CLOVIS_MODE_EMBEDDED },
		{ "MODE_CLUSTER", CLOVIS_MODE_CLUSTER },
		{ "CONF_CREATE", CLOVIS_CONF_CREATE },
		{ "CONF_DEVICE_MODEL", CLOVIS_CONF_DEVICE_MODEL },
		{ "CONF_META_NVRAM", CLOVIS_CONF_META_NVRAM },
		{ "CONF_FDMI_ON", CLOVIS_CONF_FDMI_ON },
		{ "CONF_FDMI_OFF", CLOVIS_CONF_FDMI_OFF },
		{ "EO_CREATE", CLOVIS_EO_CREATE },
		{ "EO_OPEN", CLOVIS_EO_OPEN },
		{ "EO_DELETE", CLOVIS_EO_DELETE },
		{ "EO_GETATTR", CLOVIS_EO_GETATTR },
		{ "EO_SETATTR", CLOVIS_EO_SETATTR },
		{ "ET_CONTAINER", CLOVIS_ET_CONTAINER },
		{ "ET_OBJ", CLOVIS_ET_OBJ },
		{ "ET_IDX", CLOVIS_ET_IDX },
		{ "ES_INIT", CLOVIS_ES_INIT },
		{ "ES_OPEN", CLOVIS_ES_OPEN },
		{ "ES_DELETED", CLOVIS_ES_DELETED },
		{ "ECORRUPT", CLOVIS_ECORRUPT },
		{ "EVERSION", CLOVIS_EVERSION },
		{ "ECHECKSUM", CLOVIS_ECHECKSUM },
		{ "ESTATE", CLOVIS_ESTATE },
		{ "ID_USER_MIN", CLOVIS_ID_USER_MIN },
	};

	if (m == NULL)
		return NULL;
	if (add_type(m, &StoreType, "Store") < 0 ||
	    add_type(m, &EntityType, "Entity") < 0 ||
	    add_type(m, &ContainerType, "Container") < 0 ||
	    add_type(m, &ObjType, "Obj") < 0 ||
	    add_type(m, &IdxType, "Idx") < 0 ||
	    add_type(m, &DtxType, "Dtx") < 0)
		goto fail;
	for (size_t i = 0; i < sizeof consts / sizeof consts[0]; i++)
		if (PyModule_AddIntConstant(m, consts[i].n, consts[i].v) < 0)
			goto fail;
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
