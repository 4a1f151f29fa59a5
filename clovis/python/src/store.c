/*
 * store.c — strata._strata.Store: one struct clovis.  Open (clovis_init)
 * and close (clovis_fini, after every call of other threads and every
 * async op), the calls that use the store, and the management calls
 * (lists, settle, devices, pools, stats).
 */
#include "clovis/python/src/pys.h"

/* ------------------------------------------------------------- store */

/* The store can be used: 0 with s_use held for reading, or -1 with
 * ValueError set.  With the GIL; never blocks (see the file's head). */
int store_enter(StoreObject *s)
{
	if (s->s_cl == NULL || s->s_closing) {
		PyErr_Format(PyExc_ValueError, "store %S is closed",
			     s->s_name != NULL ? s->s_name : Py_None);
		return -1;
	}
	pthread_rwlock_rdlock(&s->s_use);
	return 0;
}

void store_leave(StoreObject *s)
{
	pthread_rwlock_unlock(&s->s_use);
}

static PyObject *store_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	StoreObject *s = (StoreObject *)type->tp_alloc(type, 0);

	(void)args;
	(void)kw;
	if (s == NULL)
		return NULL;
	pthread_rwlock_init(&s->s_use, NULL);
	pthread_mutex_init(&s->s_qlock, NULL);
	pthread_cond_init(&s->s_qcond, NULL);
	pthread_cond_init(&s->s_idle, NULL);
	s->s_done_tail = &s->s_done;
	return (PyObject *)s;
}

/*
 * Store(name, mode, data_dir, flags, nr_workers, dev_size, nvram_dir,
 *       meta_size, log_level, config, cluster_conf, server, secret,
 *       isc_native): clovis_init() with those clovis_conf fields.
 */
static int store_init(StoreObject *s, PyObject *args, PyObject *kw)
{
	static char *names[] = { "name", "mode", "data_dir", "flags",
				 "nr_workers", "dev_size", "nvram_dir",
				 "meta_size", "log_level", "config",
				 "cluster_conf", "server", "secret",
				 "isc_native", NULL };
	struct clovis_conf c = { 0 };
	char msg[PYS_MSG_LEN];
	PyObject *name;
	unsigned int mode = 0;
	int rc;

	if (s->s_cl != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "Store: already open");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|IzIIKzKizzzzz", names,
					 &name, &mode, &c.cc_data_dir,
					 &c.cc_flags, &c.cc_nr_workers,
					 &c.cc_dev_size, &c.cc_nvram_dir,
					 &c.cc_meta_size, &c.cc_log_level,
					 &c.cc_config, &c.cc_cluster_conf,
					 &c.cc_server, &c.cc_secret,
					 &c.cc_isc_native))
		return -1;
	c.cc_mode = mode;
	Py_INCREF(name);
	Py_XSETREF(s->s_name, name);
	Py_BEGIN_ALLOW_THREADS
	rc = clovis_init(&s->s_cl, &c);
	if (rc != 0)
		snprintf(msg, sizeof msg, "%s", clovis_errmsg());
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		s->s_cl = NULL;
		raise_rc(rc, "store %s: open: %s", PyUnicode_AsUTF8(name), msg);
		return -1;
	}
	s->s_cluster = mode == CLOVIS_MODE_CLUSTER;
	s->s_closing = false;
	s->s_stop = false;
	return 0;
}


/* Start closing s: refuse new use and abort its open dtxs.  False when
 * it is closed or closing already. */
static bool store_close_start(StoreObject *s)
{
	if (s->s_cl == NULL || s->s_closing)
		return false;
	s->s_closing = true;
	while (s->s_dtxs != NULL) {
		DtxObject *d = s->s_dtxs;

		Py_INCREF(d);
		dtx_abort_now(d); /* unlinks d */
		Py_DECREF(d);
	}
	return true;
}

/*
 * Close the store: abort its open dtxs, wait until no other thread uses
 * it and every async op was dispatched, stop dispatch(), clovis_fini().
 * Must not be called from the dispatch thread (the Python layer refuses).
 */
static PyObject *store_close(StoreObject *s, PyObject *unused)
{
	(void)unused;
	if (!store_close_start(s))
		Py_RETURN_NONE;
	Py_BEGIN_ALLOW_THREADS
	pthread_rwlock_wrlock(&s->s_use);
	pthread_mutex_lock(&s->s_qlock);
	while (s->s_async > 0)
		pthread_cond_wait(&s->s_idle, &s->s_qlock);
	s->s_stop = true;
	pthread_cond_broadcast(&s->s_qcond);
	pthread_mutex_unlock(&s->s_qlock);
	clovis_fini(s->s_cl);
	s->s_cl = NULL;
	pthread_rwlock_unlock(&s->s_use);
	Py_END_ALLOW_THREADS
	Py_RETURN_NONE;
}

/*
 * Close the store once its dispatch thread lets it go: no new use, and
 * dispatch() returns as soon as every async op was dispatched; the last
 * reference's store_dealloc() then runs clovis_fini().  For the dispatch
 * thread itself (strata.Store.__del__ there), where close() would wait
 * for the ops it is delivering.
 */
static PyObject *store_close_later(StoreObject *s, PyObject *unused)
{
	(void)unused;
	if (!store_close_start(s))
		Py_RETURN_NONE;
	pthread_mutex_lock(&s->s_qlock);
	s->s_stop = true;
	pthread_cond_broadcast(&s->s_qcond);
	pthread_mutex_unlock(&s->s_qlock);
	Py_RETURN_NONE;
}

static void store_dealloc(StoreObject *s)
{
	/* no async op is left (each holds a reference) and no dtx (each
	 * holds one too); a store never closed is closed here */
	if (s->s_cl != NULL) {
		s->s_closing = true;
		clovis_fini(s->s_cl);
		s->s_cl = NULL;
	}
	pthread_rwlock_destroy(&s->s_use);
	pthread_mutex_destroy(&s->s_qlock);
	pthread_cond_destroy(&s->s_qcond);
	pthread_cond_destroy(&s->s_idle);
	Py_XDECREF(s->s_name);
	Py_TYPE(s)->tp_free((PyObject *)s);
}

/* ------------------------------------------------- store management */

/* list(container, type, after, max) -> [(hi, lo)]: clovis_entity_list()
 * of type's entities in container (None: the default container), or of
 * the store's containers (type 1). */
static PyObject *store_list(StoreObject *s, PyObject *args)
{
	PyObject *parent, *after, *out;
	unsigned int type, max;
	struct clovis_id aid, *ids;
	unsigned long long ahi, alo;
	uint32_t nr;
	char msg[PYS_MSG_LEN];
	int rc;

	if (!PyArg_ParseTuple(args, "OIOI", &parent, &type, &after, &max))
		return NULL;
	if (parent != Py_None && !PyObject_TypeCheck(parent, &ContainerType)) {
		PyErr_SetString(PyExc_TypeError, "list: container must be a "
				"Container or None");
		return NULL;
	}
	if (after != Py_None) {
		if (!PyArg_ParseTuple(after, "KK", &ahi, &alo))
			return NULL;
		aid = (struct clovis_id){ ahi, alo };
	}
	if (max == 0 || max > CLOVIS_VEC_MAX)
		max = CLOVIS_VEC_MAX;
	ids = PyMem_Malloc(max * sizeof *ids);
	if (ids == NULL)
		return PyErr_NoMemory();
	if (store_enter(s) != 0) {
		PyMem_Free(ids);
		return NULL;
	}
	nr = max;
	Py_BEGIN_ALLOW_THREADS
	rc = clovis_entity_list(s->s_cl, type == CLOVIS_ET_CONTAINER ? NULL :
				realm_of(s, parent), type,
				after == Py_None ? NULL : &aid, ids, &nr);
	if (rc != 0)
		snprintf(msg, sizeof msg, "%s", clovis_errmsg());
	store_leave(s);
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		PyMem_Free(ids);
		return raise_rc(rc, "list of %ss: %s",
				type <= CLOVIS_ET_IDX ? kind_names[type] : "?",
				msg);
	}
	out = PyList_New(nr);
	for (uint32_t k = 0; out != NULL && k < nr; k++) {
		PyObject *t = Py_BuildValue("KK",
					    (unsigned long long)ids[k].ci_hi,
					    (unsigned long long)ids[k].ci_lo);
		if (t == NULL)
			Py_CLEAR(out);
		else
			PyList_SET_ITEM(out, k, t);
	}
	PyMem_Free(ids);
	return out;
}

/* settle(before, timeout_ms): clovis_dtx_settle(). */
static PyObject *store_settle(StoreObject *s, PyObject *args)
{
	unsigned long long before;
	unsigned int timeout_ms;
	char msg[PYS_MSG_LEN];
	int rc;

	if (!PyArg_ParseTuple(args, "KI", &before, &timeout_ms))
		return NULL;
	if (store_enter(s) != 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = clovis_dtx_settle(s->s_cl, before, timeout_ms);
	if (rc != 0)
		snprintf(msg, sizeof msg, "%s", clovis_errmsg());
	store_leave(s);
	Py_END_ALLOW_THREADS
	if (rc != 0)
		return raise_rc(rc, "dtx settle: %s", msg);
	Py_RETURN_NONE;
}

/* One kind of records store_records() lists: the call that fills them
 * (made without the GIL), their size, how many at most, and how one
 * becomes a dict. */
struct rec_kind {
	const char *rk_what;
	size_t rk_size;
	uint32_t rk_max;
	int (*rk_get)(struct clovis *cl, void *recs, uint32_t *nr);
	PyObject *(*rk_dict)(const void *rec);
};

/* The records of kind rk as a list of dicts (NULL: an exception set). */
static PyObject *store_records(StoreObject *s, const struct rec_kind *rk)
{
	uint32_t nr = rk->rk_max, k;
	char *recs;
	PyObject *out;
	char msg[PYS_MSG_LEN];
	int rc;

	recs = PyMem_Calloc(nr, rk->rk_size);
	if (recs == NULL)
		return PyErr_NoMemory();
	if (store_enter(s) != 0) {
		PyMem_Free(recs);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = rk->rk_get(s->s_cl, recs, &nr);
	if (rc != 0)
		snprintf(msg, sizeof msg, "%s", clovis_errmsg());
	store_leave(s);
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		PyMem_Free(recs);
		return raise_rc(rc, "%s: %s", rk->rk_what, msg);
	}
	if (nr > rk->rk_max)
		nr = rk->rk_max;
	out = PyList_New(nr);
	for (k = 0; out != NULL && k < nr; k++) {
		PyObject *d = rk->rk_dict(recs + k * rk->rk_size);

		if (d == NULL)
			Py_CLEAR(out);
		else
			PyList_SET_ITEM(out, k, d);
	}
	PyMem_Free(recs);
	return out;
}

static int dev_get(struct clovis *cl, void *recs, uint32_t *nr)
{
	return clovis_dev_list(cl, recs, nr);
}

static PyObject *dev_dict(const void *rec)
{
	const struct clovis_dev_info *di = rec;

	return Py_BuildValue("{s:I,s:I,s:s,s:s,s:K,s:K,s:I,s:K}",
			     "index", di->di_index, "tier", di->di_tier,
			     "path", di->di_path, "driver", di->di_driver,
			     "size", (unsigned long long)di->di_size_bytes,
			     "free", (unsigned long long)di->di_free_bytes,
			     "state", di->di_state,
			     "errors", (unsigned long long)di->di_errors);
}

static const struct rec_kind dev_kind = {
	"devices", sizeof(struct clovis_dev_info), 256, dev_get, dev_dict,
};

/* devices() -> list of dicts: clovis_dev_list(). */
static PyObject *store_devices(StoreObject *s, PyObject *unused)
{
	(void)unused;
	return store_records(s, &dev_kind);
}

static int pool_get(struct clovis *cl, void *recs, uint32_t *nr)
{
	return clovis_pool_list(cl, recs, nr);
}

static PyObject *pool_dict(const void *rec)
{
	const struct clovis_pool_info *pi = rec;

	return Py_BuildValue("{s:I,s:s,s:I,s:K,s:K}",
			     "index", pi->pi_index, "name", pi->pi_name,
			     "devices", pi->pi_nr_devs,
			     "size", (unsigned long long)pi->pi_size_bytes,
			     "free", (unsigned long long)pi->pi_free_bytes);
}

static const struct rec_kind pool_kind = {
	"pools", sizeof(struct clovis_pool_info), 64, pool_get, pool_dict,
};

/* pools() -> list of dicts: clovis_pool_list(). */
static PyObject *store_pools(StoreObject *s, PyObject *unused)
{
	(void)unused;
	return store_records(s, &pool_kind);
}

/* stats() -> {name: {count, failed, bytes, p50_us, ...}}:
 * clovis_stats_get(). */
static PyObject *store_stats(StoreObject *s, PyObject *unused)
{
	struct clovis_stat st[CLOVIS_STAT_NR];
	PyObject *out;
	char msg[PYS_MSG_LEN];
	int rc;

	(void)unused;
	if (store_enter(s) != 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = clovis_stats_get(s->s_cl, st);
	if (rc != 0)
		snprintf(msg, sizeof msg, "%s", clovis_errmsg());
	store_leave(s);
	Py_END_ALLOW_THREADS
	if (rc != 0)
		return raise_rc(rc, "stats: %s", msg);
	out = PyDict_New();
	for (int k = 0; out != NULL && k < CLOVIS_STAT_NR; k++) {
		PyObject *d = Py_BuildValue(
			"{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:d}",
			"count", (unsigned long long)st[k].cs_count,
			"failed", (unsigned long long)st[k].cs_failed,
			"bytes", (unsigned long long)st[k].cs_bytes,
			"p50_us", (unsigned long long)st[k].cs_p50_us,
			"p90_us", (unsigned long long)st[k].cs_p90_us,
			"p99_us", (unsigned long long)st[k].cs_p99_us,
			"max_us", (unsigned long long)st[k].cs_max_us,
			"mean_us", st[k].cs_mean_us);
		if (d == NULL || PyDict_SetItemString(out, st[k].cs_name, d))
			Py_CLEAR(out);
		Py_XDECREF(d);
	}
	return out;
}

static PyObject *store_get_closed(StoreObject *s, void *closure)
{
	(void)closure;
	return PyBool_FromLong(s->s_cl == NULL || s->s_closing);
}

static PyObject *store_get_cluster(StoreObject *s, void *closure)
{
	(void)closure;
	return PyBool_FromLong(s->s_cluster);
}

static PyObject *store_get_async(StoreObject *s, void *closure)
{
	uint64_t n;

	(void)closure;
	pthread_mutex_lock(&s->s_qlock);
	n = s->s_async;
	pthread_mutex_unlock(&s->s_qlock);
	return PyLong_FromUnsignedLongLong(n);
}

/* ------------------------------------------------------------- tables */

static PyMethodDef store_methods[] = {
	{ "close", (PyCFunction)store_close, METH_NOARGS,
	  "Close the store (clovis_fini) once no call uses it and every "
	  "async op was dispatched; aborts its open dtxs." },
	{ "_close_later", (PyCFunction)store_close_later, METH_NOARGS,
	  "Refuse new use and stop dispatch() once every async op was "
	  "dispatched; the last reference closes the store." },
	{ "dispatch", (PyCFunction)store_dispatch, METH_NOARGS,
	  "Deliver finished async ops to their callbacks until the store "
	  "closes (run by one thread)." },
	{ "list", (PyCFunction)store_list, METH_VARARGS,
	  "list(container, type, after, max) -> [(hi, lo)]" },
	{ "settle", (PyCFunction)store_settle, METH_VARARGS,
	  "settle(before, timeout_ms): clovis_dtx_settle()" },
	{ "devices", (PyCFunction)store_devices, METH_NOARGS,
	  "devices() -> [dict]: clovis_dev_list()" },
	{ "pools", (PyCFunction)store_pools, METH_NOARGS,
	  "pools() -> [dict]: clovis_pool_list()" },
	{ "stats", (PyCFunction)store_stats, METH_NOARGS,
	  "stats() -> {op class: dict}: clovis_stats_get()" },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef store_getset[] = {
	{ "closed", (getter)store_get_closed, NULL, "closed or closing", NULL },
	{ "cluster", (getter)store_get_cluster, NULL, "cluster mode", NULL },
	{ "async_ops", (getter)store_get_async, NULL,
	  "async ops started and not yet dispatched", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject StoreType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "strata._strata.Store",
	.tp_basicsize = sizeof(StoreObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "A Clovis instance (struct clovis) over a store.",
	.tp_new = store_new,
	.tp_init = (initproc)store_init,
	.tp_dealloc = (destructor)store_dealloc,
	.tp_methods = store_methods,
	.tp_getset = store_getset,
};
