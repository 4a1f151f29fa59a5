/*
 * entity.c — entity handles (Container, and the common part of Obj and
 * Idx): making them (no I/O), their entity ops (CREATE, OPEN, DELETE,
 * GETATTR, SETATTR), ids, states, attributes, and what the collector
 * sees of them.
 */
#include "clovis/python/src/pys.h"

/* ---------------------------------------------------------- entities */

static struct clovis_entity *ent_of(EntityObject *e)
{
	switch (e->e_type) {
	case CLOVIS_ET_CONTAINER:
		return &e->e_u.c.co_entity;
	case CLOVIS_ET_OBJ:
		return &e->e_u.o.ob_entity;
	default:
		return &e->e_u.i.in_entity;
	}
}

/* The realm new entities of parent are made in: its container's, or the
 * default container's (parent NULL or None). */
struct clovis_realm *realm_of(StoreObject *s, PyObject *parent)
{
	if (parent == NULL || parent == Py_None)
		return clovis_default_realm(s->s_cl);
	return &((EntityObject *)parent)->e_u.c.co_realm;
}

const char *const kind_names[] = { "?", "container", "object",
					  "index" };

/* Parse (store, container, hi, lo) shared by the entity constructors. */
EntityObject *ent_alloc(PyTypeObject *type, uint32_t et,
			       PyObject *store, PyObject *parent,
			       PyObject *hi, PyObject *lo, struct clovis_id *id)
{
	EntityObject *e;
	char buf[CLOVIS_ID_STR_LEN];

	if (!PyObject_TypeCheck(store, &StoreType)) {
		PyErr_Format(PyExc_TypeError, "%s: store must be a "
			     "_strata.Store, not %s", kind_names[et],
			     Py_TYPE(store)->tp_name);
		return NULL;
	}
	if (parent != NULL && parent != Py_None &&
	    (!PyObject_TypeCheck(parent, &ContainerType) ||
	     ((EntityObject *)parent)->e_store != (StoreObject *)store)) {
		PyErr_Format(PyExc_TypeError, "%s: container must be a "
			     "Container of the same store, not %s",
			     kind_names[et], Py_TYPE(parent)->tp_name);
		return NULL;
	}
	if (arg_u64(hi, kind_names[et], "id.hi", &id->ci_hi) != 0 ||
	    arg_u64(lo, kind_names[et], "id.lo", &id->ci_lo) != 0)
		return NULL;
	if (((StoreObject *)store)->s_cl == NULL ||
	    ((StoreObject *)store)->s_closing) {
		PyErr_Format(PyExc_ValueError, "store %S is closed",
			     ((StoreObject *)store)->s_name);
		return NULL;
	}
	e = (EntityObject *)type->tp_alloc(type, 0);
	if (e == NULL)
		return NULL;
	Py_INCREF(store);
	e->e_store = (StoreObject *)store;
	if (parent != NULL && parent != Py_None) {
		Py_INCREF(parent);
		e->e_parent = parent;
	}
	e->e_type = et;
	snprintf(e->e_name, sizeof e->e_name, "%s %s", kind_names[et],
		 clovis_id_format(id, buf));
	return e;
}

/* Container(store, hi, lo): a handle, no I/O. */
static PyObject *container_new(PyTypeObject *type, PyObject *args,
			       PyObject *kw)
{
	PyObject *store, *hi, *lo;
	struct clovis_id id;
	EntityObject *e;
	int rc;

	if (!PyArg_ParseTuple(args, "OOO", &store, &hi, &lo))
		return NULL;
	(void)kw;
	e = ent_alloc(type, CLOVIS_ET_CONTAINER, store, NULL, hi, lo, &id);
	if (e == NULL)
		return NULL;
	rc = clovis_container_init(&e->e_u.c, e->e_store->s_cl, &id);
	if (rc != 0) {
		raise_rc(rc, "%s: %s", e->e_name, clovis_errmsg());
		Py_DECREF(e);
		return NULL;
	}
	return (PyObject *)e;
}

void ent_dealloc(EntityObject *e)
{
	PyObject_GC_UnTrack(e);
	Py_CLEAR(e->e_parent);
	Py_CLEAR(e->e_store);
	Py_TYPE(e)->tp_free((PyObject *)e);
}

/* The handle's references (its static type is not one: a Python
 * subclass's type is visited by subtype_traverse). */
int ent_traverse(EntityObject *e, visitproc visit, void *arg)
{
	Py_VISIT(e->e_parent);
	Py_VISIT(e->e_store);
	return 0;
}

int ent_clear(EntityObject *e)
{
	Py_CLEAR(e->e_parent);
	Py_CLEAR(e->e_store);
	return 0;
}

/* ------------------------------------------------------ entity ops */

/* _entity_op(opcode, tx=None, size=None): CREATE, OPEN, DELETE, GETATTR,
 * SETATTR (objects: oa_size_bytes = size) on this handle. */
static PyObject *ent_op(EntityObject *e, PyObject *args, PyObject *kw)
{
	static char *names[] = { "opcode", "tx", "size", NULL };
	static const char *const opnames[] = { "?", "create", "open", "delete",
					       "getattr", "setattr" };
	PyObject *tx = Py_None, *size = Py_None;
	struct xop xs, *x;
	unsigned int opcode;
	uint64_t sz = 0;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "I|OO", names, &opcode,
					 &tx, &size))
		return NULL;
	if (opcode < CLOVIS_EO_CREATE || opcode > CLOVIS_EO_SETATTR) {
		PyErr_Format(PyExc_ValueError, "%s: bad entity opcode %u",
			     e->e_name, opcode);
		return NULL;
	}
	if (opcode == CLOVIS_EO_SETATTR && e->e_type == CLOVIS_ET_OBJ &&
	    arg_u64(size, e->e_name, "size", &sz) != 0)
		return NULL;
	if (run_check(e->e_store, tx, NULL, e->e_name) != 0)
		return NULL;
	x = xop_new(&xs, tx != Py_None);
	if (x == NULL)
		return NULL;
	x->x_kind = XK_ENTITY;
	snprintf(x->x_what, sizeof x->x_what, "%s: %s", e->e_name,
		 opnames[opcode]);
	if (store_enter(e->e_store) != 0) {
		xop_drop(x);
		return NULL;
	}
	if (opcode == CLOVIS_EO_SETATTR && e->e_type == CLOVIS_ET_OBJ)
		e->e_u.o.ob_attr.oa_size_bytes = sz;
	rc = clovis_entity_op(ent_of(e), opcode, &x->x_op);
	if (rc != 0) {
		store_leave(e->e_store);
		raise_rc(rc, "%s: %s", x->x_what, clovis_errmsg());
		xop_drop(x);
		return NULL;
	}
	Py_INCREF(e);
	x->x_owner = (PyObject *)e;
	return xop_finish(e->e_store, x, tx, NULL, false);
}

/* _id(): (hi, lo). */
static PyObject *ent_id(EntityObject *e, PyObject *unused)
{
	const struct clovis_id *id = &ent_of(e)->en_id;

	(void)unused;
	return Py_BuildValue("KK", (unsigned long long)id->ci_hi,
			     (unsigned long long)id->ci_lo);
}

/* _state(): the handle's CLOVIS_ES_* state. */
static PyObject *ent_state(EntityObject *e, PyObject *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLong(ent_of(e)->en_state);
}

/* _attr(): the handle's attributes as the last op left them (no I/O). */
static PyObject *ent_attr(EntityObject *e, PyObject *unused)
{
	const struct clovis_obj_attr *a = &e->e_u.o.ob_attr;

	(void)unused;
	if (e->e_type == CLOVIS_ET_IDX)
		return Py_BuildValue("KK",
			(unsigned long long)e->e_u.i.in_attr.ia_nr_records,
			(unsigned long long)e->e_u.i.in_attr.ia_ctime_ns);
	if (e->e_type != CLOVIS_ET_OBJ)
		Py_RETURN_NONE;
	return Py_BuildValue("IIIIIIIIIKKKK", a->oa_block_shift, a->oa_layout,
			     a->oa_tier, a->oa_dev, a->oa_pool,
			     a->oa_data_units, a->oa_parity_units,
			     a->oa_spare_units, a->oa_unit_shift,
			     (unsigned long long)a->oa_size_blocks,
			     (unsigned long long)a->oa_size_bytes,
			     (unsigned long long)a->oa_ctime_ns,
			     (unsigned long long)a->oa_mtime_ns);
}

static PyObject *ent_get_store(EntityObject *e, void *closure)
{
	(void)closure;
	return Py_NewRef(e->e_store ? (PyObject *)e->e_store : Py_None);
}

static PyObject *ent_get_container(EntityObject *e, void *closure)
{
	(void)closure;
	return Py_NewRef(e->e_parent ? e->e_parent : Py_None);
}

/* ------------------------------------------------------------- tables */

static PyMethodDef ent_methods[] = {
	{ "_entity_op", (PyCFunction)(void (*)(void))ent_op,
	  METH_VARARGS | METH_KEYWORDS,
	  "_entity_op(opcode, tx=None, size=None): CREATE, OPEN, DELETE, "
	  "GETATTR or SETATTR on this handle" },
	{ "_id", (PyCFunction)ent_id, METH_NOARGS, "(hi, lo)" },
	{ "_state", (PyCFunction)ent_state, METH_NOARGS,
	  "the handle's CLOVIS_ES_* state" },
	{ "_attr", (PyCFunction)ent_attr, METH_NOARGS,
	  "the handle's attributes (no I/O)" },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef ent_getset[] = {
	{ "_cstore", (getter)ent_get_store, NULL, "its _strata.Store", NULL },
	{ "container", (getter)ent_get_container, NULL,
	  "the Container it lives in (None: the default container)", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject EntityType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "strata._strata.Entity",
	.tp_basicsize = sizeof(EntityObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE |
		    Py_TPFLAGS_HAVE_GC,
	.tp_doc = "An entity handle (the common part).",
	.tp_dealloc = (destructor)ent_dealloc,
	.tp_traverse = (traverseproc)ent_traverse,
	.tp_clear = (inquiry)ent_clear,
	.tp_methods = ent_methods,
	.tp_getset = ent_getset,
};

PyTypeObject ContainerType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "strata._strata.Container",
	.tp_basicsize = sizeof(EntityObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE |
		    Py_TPFLAGS_HAVE_GC,
	.tp_doc = "Container(store, hi, lo): a container handle.",
	.tp_base = &EntityType,
	.tp_new = container_new,
	.tp_dealloc = (destructor)ent_dealloc,
	.tp_traverse = (traverseproc)ent_traverse,
	.tp_clear = (inquiry)ent_clear,
};
