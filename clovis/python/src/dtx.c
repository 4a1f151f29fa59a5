/*
 * dtx.c — strata._strata.Dtx: one struct clovis_dtx.  Open, members
 * (their xops kept until it ends), commit (waits for STABLE), abort, and
 * what the collector sees of it.
 */
#include "clovis/python/src/pys.h"

/* ------------------------------------------------------------- dtx */

/* Dtx(store, container=None): clovis_dtx_open(). */
static PyObject *dtx_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyObject *store, *parent = Py_None;
	StoreObject *s;
	DtxObject *d;
	int rc;

	(void)kw;
	if (!PyArg_ParseTuple(args, "O|O", &store, &parent))
		return NULL;
	if (!PyObject_TypeCheck(store, &StoreType) ||
	    (parent != Py_None && (!PyObject_TypeCheck(parent, &ContainerType) ||
	     ((EntityObject *)parent)->e_store != (StoreObject *)store))) {
		PyErr_SetString(PyExc_TypeError, "dtx: Dtx(store, container): "
				"a _strata.Store and None or one of its "
				"Containers");
		return NULL;
	}
	s = (StoreObject *)store;
	if (store_enter(s) != 0)
		return NULL;
	d = (DtxObject *)type->tp_alloc(type, 0);
	if (d == NULL) {
		store_leave(s);
		return NULL;
	}
	rc = clovis_dtx_open(&d->d_dtx, realm_of(s, parent));
	if (rc == 0)
		clovis_dtx_id(d->d_dtx, &d->d_id);
	store_leave(s);
	if (rc != 0) {
		Py_DECREF(d);
		return raise_rc(rc, "dtx: open: %s", clovis_errmsg());
	}
	Py_INCREF(s);
	d->d_store = s;
	d->d_state = DS_OPEN;
	d->d_next = s->s_dtxs;
	s->s_dtxs = d;
	return (PyObject *)d;
}

/* "dtx NODE:HLC" in hex, for messages (PyErr_Format has no %llx). */
static const char *dtx_name(const DtxObject *d, char *buf, size_t len)
{
	snprintf(buf, len, "dtx %x:%llx", d->d_id.di_node,
		 (unsigned long long)d->d_id.di_hlc);
	return buf;
}

static const char *dtx_state_name(enum dtx_state st)
{
	switch (st) {
	case DS_OPEN: return "open";
	case DS_BUSY: return "committing";
	case DS_COMMITTED: return "committed";
	case DS_ABORTED: return "aborted";
	default: return "failed";
	}
}

/* d can take a member for store s: 0, or -1 with an exception. */
int dtx_take(DtxObject *d, StoreObject *s, const char *what)
{
	if (d->d_store != s) {
		PyErr_Format(PyExc_ValueError, "%s: tx belongs to another "
			     "store", what);
		return -1;
	}
	if (d->d_state != DS_OPEN) {
		char n[64];

		PyErr_Format(PyExc_ValueError, "%s: %s is %s: no new member",
			     what, dtx_name(d, n, sizeof n),
			     dtx_state_name(d->d_state));
		return -1;
	}
	return 0;
}

/* Make made op x (a heap xop) a member of d, left in INIT: the commit
 * launches it.  x is kept until the dtx ends.  0 or the Clovis error. */
int dtx_add_xop(DtxObject *d, struct xop *x)
{
	int rc = clovis_dtx_add(d->d_dtx, x->x_op);

	if (rc != 0)
		return rc;
	x->x_next = d->d_members;
	d->d_members = x;
	d->d_nr++;
	return 0;
}

/* Unlink d from its store's open list. */
static void dtx_unlink(DtxObject *d)
{
	DtxObject **pp = &d->d_store->s_dtxs;

	while (*pp != NULL && *pp != d)
		pp = &(*pp)->d_next;
	if (*pp == d)
		*pp = d->d_next;
	d->d_next = NULL;
}

/* Release the members' xops (their ops are freed). */
static void dtx_members_release(DtxObject *d)
{
	for (struct xop *x = d->d_members, *next; x != NULL; x = next) {
		next = x->x_next;
		xop_drop(x);
	}
	d->d_members = NULL;
}

/*
 * Abort an open dtx (members in INIT leave it; launched ones fail
 * -ECANCELED) and free its members.  GIL held on entry.  It takes s_use
 * for reading itself, without the closing check: close() aborts every
 * dtx still linked before it takes s_use for writing, so this never
 * waits (see the file's head) and clovis_fini() never runs under it.
 */
void dtx_abort_now(DtxObject *d)
{
	StoreObject *s = d->d_store;
	struct clovis_dtx *dx = d->d_dtx;
	struct xop *m = d->d_members;

	d->d_state = DS_ABORTED;
	d->d_dtx = NULL;
	dtx_unlink(d);
	pthread_rwlock_rdlock(&s->s_use);
	Py_BEGIN_ALLOW_THREADS
	clovis_dtx_abort(dx);
	for (struct xop *x = m; x != NULL; x = x->x_next) {
		clovis_op_free(x->x_op);
		x->x_op = NULL;
	}
	store_leave(s);
	Py_END_ALLOW_THREADS
	dtx_members_release(d);
}

/* abort(): drop the dtx; nothing of it is applied.  A no-op once it is
 * aborted; refused once committed. */
static PyObject *dtx_abort(DtxObject *d, PyObject *unused)
{
	(void)unused;
	if (d->d_state == DS_ABORTED)
		Py_RETURN_NONE;
	if (d->d_state != DS_OPEN) {
		char n[64];

		PyErr_Format(PyExc_ValueError, "%s: abort: it is %s",
			     dtx_name(d, n, sizeof n),
			     dtx_state_name(d->d_state));
		return NULL;
	}
	dtx_abort_now(d);
	Py_RETURN_NONE;
}

/*
 * commit(): make the commit op, launch it, wait until it is STABLE (or
 * FAILED), then free the members and the commit op.  Cluster mode: a
 * commit op ending -EINPROGRESS is committed (the decider logged it; the
 * participants apply it as they learn it, clovis.h) and is a success.
 */
static PyObject *dtx_commit(DtxObject *d, PyObject *unused)
{
	StoreObject *s = d->d_store;
	struct xop *m = d->d_members;
	struct clovis_op *cop = NULL;
	char msg[PYS_MSG_LEN];
	int rc;

	(void)unused;
	if (d->d_state != DS_OPEN) {
		PyErr_Format(PyExc_ValueError, "%s: commit: it is %s",
			     dtx_name(d, msg, sizeof msg),
			     dtx_state_name(d->d_state));
		return NULL;
	}
	if (store_enter(s) != 0)
		return NULL;
	rc = clovis_dtx_commit(d->d_dtx, &cop);
	if (rc != 0) {
		snprintf(msg, sizeof msg, "%s", clovis_errmsg());
		store_leave(s);
		dtx_abort_now(d);
		d->d_state = DS_FAILED;
		char n[64];

		return raise_rc(rc, "%s: commit: %s", dtx_name(d, n, sizeof n),
				msg);
	}
	d->d_state = DS_BUSY;
	d->d_dtx = NULL; /* the commit op's now */
	dtx_unlink(d);
	Py_BEGIN_ALLOW_THREADS
	rc = clovis_op_launch(&cop, 1);
	if (rc == 0)
		rc = clovis_op_wait(cop, CLOVIS_OS_STABLE, CLOVIS_TIME_NEVER);
	if (rc != 0)
		snprintf(msg, sizeof msg, "%s",
			 clovis_op_state(cop) == CLOVIS_OS_FAILED ?
			 clovis_op_errmsg(cop) : clovis_errmsg());
	if (rc == -EINPROGRESS)
		rc = 0;
	for (struct xop *x = m; x != NULL; x = x->x_next) {
		clovis_op_free(x->x_op);
		x->x_op = NULL;
	}
	clovis_op_free(cop);
	store_leave(s);
	Py_END_ALLOW_THREADS
	dtx_members_release(d);
	d->d_state = rc == 0 ? DS_COMMITTED : DS_FAILED;
	if (rc != 0) {
		char n[64];

		return raise_rc(rc, "%s: commit of %u members: %s",
				dtx_name(d, n, sizeof n), d->d_nr, msg);
	}
	Py_RETURN_NONE;
}

/* The references of an xop (a dtx member's), for the collector. */
static int xop_traverse(struct xop *x, visitproc visit, void *arg)
{
	Py_VISIT(x->x_owner);
	Py_VISIT(x->x_keep);
	Py_VISIT(x->x_result);
	Py_VISIT(x->x_cb);
	if (x->x_has_view)
		Py_VISIT(x->x_view.obj);
	for (uint32_t i = 0; i < x->x_nviews; i++)
		Py_VISIT(x->x_views[i].obj);
	return 0;
}

/*
 * What a dtx holds: its store and, while open, its members' handles,
 * key and value tuples and buffer views.  A cycle through them (a handle
 * whose __dict__ holds the dtx it has a member in) is then collected:
 * dtx_clear() aborts the dtx, which releases the members.
 */
static int dtx_traverse(DtxObject *d, visitproc visit, void *arg)
{
	Py_VISIT(d->d_store);
	for (struct xop *x = d->d_members; x != NULL; x = x->x_next) {
		int rc = xop_traverse(x, visit, arg);

		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Drop the dtx's references: an open dtx is aborted (as at dealloc). */
static int dtx_clear(DtxObject *d)
{
	if (d->d_state == DS_OPEN && d->d_store != NULL &&
	    d->d_store->s_cl != NULL)
		dtx_abort_now(d);
	Py_CLEAR(d->d_store);
	return 0;
}

static void dtx_dealloc(DtxObject *d)
{
	/* untracked first: the abort releases the GIL, and a collection in
	 * another thread must not traverse a dtx being freed */
	PyObject_GC_UnTrack(d);
	dtx_clear(d);
	Py_TYPE(d)->tp_free((PyObject *)d);
}

static PyObject *dtx_get_id(DtxObject *d, void *closure)
{
	(void)closure;
	return Py_BuildValue("KI", (unsigned long long)d->d_id.di_hlc,
			     d->d_id.di_node);
}

static PyObject *dtx_get_state(DtxObject *d, void *closure)
{
	(void)closure;
	return PyUnicode_FromString(dtx_state_name(d->d_state));
}

static PyObject *dtx_get_members(DtxObject *d, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLong(d->d_nr);
}

/* ------------------------------------------------------------- tables */

static PyMethodDef dtx_methods[] = {
	{ "commit", (PyCFunction)dtx_commit, METH_NOARGS,
	  "Commit: every member applied, or none (raises)." },
	{ "abort", (PyCFunction)dtx_abort, METH_NOARGS,
	  "Abort: nothing of the dtx is applied." },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef dtx_getset[] = {
	{ "id", (getter)dtx_get_id, NULL, "(hlc, node)", NULL },
	{ "state", (getter)dtx_get_state, NULL,
	  "open, committing, committed, aborted or failed", NULL },
	{ "members", (getter)dtx_get_members, NULL, "member ops", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject DtxType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "strata._strata.Dtx",
	.tp_basicsize = sizeof(DtxObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE |
		    Py_TPFLAGS_HAVE_GC,
	.tp_doc = "Dtx(store, container=None): a distributed transaction.",
	.tp_new = dtx_new,
	.tp_dealloc = (destructor)dtx_dealloc,
	.tp_traverse = (traverseproc)dtx_traverse,
	.tp_clear = (inquiry)dtx_clear,
	.tp_methods = dtx_methods,
	.tp_getset = dtx_getset,
};
