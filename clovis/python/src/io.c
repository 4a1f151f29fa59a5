/*
 * io.c — object I/O (Obj: READ into new bytes or a caller's buffer,
 * WRITE, ALLOC, FREE) and index ops (Idx: GET, PUT, DEL, NEXT), each run
 * now, started (async) or added to a dtx.
 */
#include "clovis/python/src/pys.h"

/* ------------------------------------------------------ constructors */

/*
 * Obj(store, container, hi, lo, attr): a handle, no I/O.  attr None (the
 * defaults: 4 KiB blocks, plain on flash) or (block_shift, layout, tier,
 * pool, data_units, parity_units, spare_units, unit_shift), used by
 * CREATE.
 */
static PyObject *obj_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyObject *store, *parent, *hi, *lo, *attr = Py_None;
	struct clovis_obj_attr a = { 0 };
	struct clovis_id id;
	EntityObject *e;
	int rc;

	(void)kw;
	if (!PyArg_ParseTuple(args, "OOOO|O", &store, &parent, &hi, &lo, &attr))
		return NULL;
	if (attr != Py_None &&
	    !PyArg_ParseTuple(attr, "IIIIIIII;object attributes: 8 ints",
			      &a.oa_block_shift, &a.oa_layout, &a.oa_tier,
			      &a.oa_pool, &a.oa_data_units,
			      &a.oa_parity_units, &a.oa_spare_units,
			      &a.oa_unit_shift))
		return NULL;
	e = ent_alloc(type, CLOVIS_ET_OBJ, store, parent, hi, lo, &id);
	if (e == NULL)
		return NULL;
	rc = clovis_obj_init(&e->e_u.o, realm_of(e->e_store, parent), &id,
			     attr == Py_None ? NULL : &a);
	if (rc != 0) {
		raise_rc(rc, "%s: %s", e->e_name, clovis_errmsg());
		Py_DECREF(e);
		return NULL;
	}
	return (PyObject *)e;
}

/* Idx(store, container, hi, lo): a handle, no I/O. */
static PyObject *idx_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyObject *store, *parent, *hi, *lo;
	struct clovis_id id;
	EntityObject *e;
	int rc;

	(void)kw;
	if (!PyArg_ParseTuple(args, "OOOO", &store, &parent, &hi, &lo))
		return NULL;
	e = ent_alloc(type, CLOVIS_ET_IDX, store, parent, hi, lo, &id);
	if (e == NULL)
		return NULL;
	rc = clovis_idx_init(&e->e_u.i, realm_of(e->e_store, parent), &id);
	if (rc != 0) {
		raise_rc(rc, "%s: %s", e->e_name, clovis_errmsg());
		Py_DECREF(e);
		return NULL;
	}
	return (PyObject *)e;
}

/* -------------------------------------------------------- object I/O */

static const char *const obj_verbs[] = { "", "read", "read", "write",
					 "alloc", "free" };

/*
 * The bytes [*off, *off + *len) of an object op (whole blocks of e): from
 * offset, and data (READ_INTO, WRITE: its buffer, held in x as a view;
 * READ_NEW, ALLOC, FREE: the length).  READ_NEW gets its new bytes object
 * here.  0, or -1 with TypeError / ValueError / StrataArgumentError.
 */
static int obj_extent(EntityObject *e, struct xop *x, enum xop_kind kind,
		      PyObject *offset, PyObject *data, uint64_t *off,
		      uint64_t *len)
{
	const char *what = e->e_name;
	uint32_t shift = e->e_u.o.ob_attr.oa_block_shift;
	uint64_t bs = 1ull << (shift == 0 ? 12 : shift);

	if (arg_u64(offset, what, "offset", off) != 0)
		return -1;
	if (kind == XK_READ_INTO || kind == XK_WRITE) {
		if (arg_buffer(data, kind == XK_READ_INTO, what,
			       kind == XK_WRITE ? "data" : "buf",
			       &x->x_view) != 0)
			return -1;
		x->x_has_view = true;
		x->x_buf = x->x_view.buf;
		*len = (uint64_t)x->x_view.len;
	} else if (arg_u64(data, what, "length", len) != 0) {
		return -1;
	}
	if (*off % bs != 0) {
		PyErr_Format(PyExc_ValueError, "%s: offset %llu is not a "
			     "multiple of the block size %llu", what,
			     (unsigned long long)*off, (unsigned long long)bs);
		return -1;
	}
	if (*len == 0 || *len % bs != 0) {
		PyErr_Format(PyExc_ValueError, "%s: %s of %llu bytes: the "
			     "length must be a positive multiple of the block "
			     "size %llu", what, obj_verbs[kind],
			     (unsigned long long)*len, (unsigned long long)bs);
		return -1;
	}
	if (kind != XK_READ_NEW)
		return 0;
	if (*len > CLOVIS_OP_BYTES_MAX) {
		raise_rc(-E2BIG, "%s: read of %llu bytes: more than %llu in one "
			 "op", what, (unsigned long long)*len,
			 (unsigned long long)CLOVIS_OP_BYTES_MAX);
		return -1;
	}
	x->x_result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)*len);
	if (x->x_result == NULL)
		return -1;
	x->x_buf = PyBytes_AS_STRING(x->x_result);
	return 0;
}

/*
 * Prepare an object op over bytes [off, off + len) (whole blocks) in x:
 * READ into data (writable; or a new bytes object of len bytes when data
 * is an int), WRITE from data, ALLOC or FREE (data: the length).  On
 * success s_use is held (store_enter) and the op is made.
 */
static int obj_prep(EntityObject *e, struct xop *x, enum xop_kind kind,
		    PyObject *offset, PyObject *data, uint32_t flags)
{
	static const uint32_t opcodes[] = { 0, CLOVIS_OC_READ, CLOVIS_OC_READ,
					    CLOVIS_OC_WRITE, CLOVIS_OC_ALLOC,
					    CLOVIS_OC_FREE };
	uint32_t shift = e->e_u.o.ob_attr.oa_block_shift;
	uint64_t off, len;
	int rc;

	x->x_kind = kind;
	if (obj_extent(e, x, kind, offset, data, &off, &len) != 0)
		return -1;
	if (shift == 0)
		shift = 12;
	x->x_start = off >> shift;
	x->x_nr = len >> shift;
	x->x_ext = (struct clovis_extvec){ 1, &x->x_start, &x->x_nr };
	x->x_len = (size_t)len;
	x->x_bv = (struct clovis_bufvec){ 1, &x->x_buf, &x->x_len };
	snprintf(x->x_what, sizeof x->x_what, "%s: %s of %llu bytes at %llu",
		 e->e_name, obj_verbs[kind], (unsigned long long)len,
		 (unsigned long long)off);
	if (store_enter(e->e_store) != 0)
		return -1;
	rc = clovis_obj_op(&e->e_u.o, opcodes[kind], &x->x_ext,
			   kind <= XK_WRITE ? &x->x_bv : NULL, flags, &x->x_op);
	if (rc != 0) {
		store_leave(e->e_store);
		raise_rc(rc, "%s: %s", x->x_what, clovis_errmsg());
		return -1;
	}
	Py_INCREF(e);
	x->x_owner = (PyObject *)e;
	return 0;
}

/* Run, start (cb) or add to tx an object op; see obj_prep(). */
static PyObject *obj_run(EntityObject *e, enum xop_kind kind,
			 PyObject *offset, PyObject *data, PyObject *tx,
			 PyObject *cb)
{
	bool in_tx = tx != NULL && tx != Py_None;
	struct xop xs, *x;
	uint32_t flags = 0;

	if (run_check(e->e_store, tx, cb, e->e_name) != 0)
		return NULL;
	x = xop_new(&xs, in_tx || cb != NULL);
	if (x == NULL)
		return NULL;
	/* a synchronous write is waited for at once: run it in this thread
	 * when the library can (CLOVIS_OF_HERE: plain objects, embedded) */
	if (kind == XK_WRITE && cb == NULL && !in_tx)
		flags = CLOVIS_OF_HERE;
	if (obj_prep(e, x, kind, offset, data, flags) != 0) {
		xop_drop(x);
		return NULL;
	}
	return xop_finish(e->e_store, x, tx, cb, true);
}

/* obj_run() on positional arguments (offset, length or buffer[, cb]):
 * fmt is "OO:name" for a synchronous method, "OOO" for an async one. */
static PyObject *obj_run_args(EntityObject *e, PyObject *args,
			      enum xop_kind kind, const char *fmt)
{
	PyObject *off, *arg, *cb = NULL;

	if (!PyArg_ParseTuple(args, fmt, &off, &arg, &cb))
		return NULL;
	return obj_run(e, kind, off, arg, NULL, cb);
}

/* obj_run() on (offset, length or data, tx=None) by position or by the
 * keywords names; fmt ("OO|O:name") names the method in messages. */
static PyObject *obj_run_kw(EntityObject *e, PyObject *args, PyObject *kw,
			    enum xop_kind kind, const char *fmt, char **names)
{
	PyObject *off, *arg, *tx = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, names, &off, &arg,
					 &tx))
		return NULL;
	return obj_run(e, kind, off, arg, tx, NULL);
}

/* read(offset, length) -> bytes */
static PyObject *obj_read(EntityObject *e, PyObject *args)
{
	return obj_run_args(e, args, XK_READ_NEW, "OO:read");
}

/* read_into(offset, buf) -> int: len(buf) bytes read into buf. */
static PyObject *obj_read_into(EntityObject *e, PyObject *args)
{
	return obj_run_args(e, args, XK_READ_INTO, "OO:read_into");
}

/* write(offset, data, tx=None) */
static PyObject *obj_write(EntityObject *e, PyObject *args, PyObject *kw)
{
	static char *names[] = { "offset", "data", "tx", NULL };

	return obj_run_kw(e, args, kw, XK_WRITE, "OO|O:write", names);
}

/* alloc(offset, length, tx=None) */
static PyObject *obj_alloc(EntityObject *e, PyObject *args, PyObject *kw)
{
	static char *names[] = { "offset", "length", "tx", NULL };

	return obj_run_kw(e, args, kw, XK_ALLOC, "OO|O:alloc", names);
}

/* punch(offset, length, tx=None): CLOVIS_OC_FREE */
static PyObject *obj_punch(EntityObject *e, PyObject *args, PyObject *kw)
{
	static char *names[] = { "offset", "length", "tx", NULL };

	return obj_run_kw(e, args, kw, XK_FREE, "OO|O:punch", names);
}

/* _start_read(offset, length, cb), _start_read_into(offset, buf, cb),
 * _start_write(offset, data, cb): async; cb(ok, value) from dispatch(). */
static PyObject *obj_start_read(EntityObject *e, PyObject *args)
{
	return obj_run_args(e, args, XK_READ_NEW, "OOO");
}

static PyObject *obj_start_read_into(EntityObject *e, PyObject *args)
{
	return obj_run_args(e, args, XK_READ_INTO, "OOO");
}

static PyObject *obj_start_write(EntityObject *e, PyObject *args)
{
	return obj_run_args(e, args, XK_WRITE, "OOO");
}

/* --------------------------------------------------------- index ops */

/* One key or value of a record: str (UTF-8) or a bytes-like object. */
static int rec_bytes(struct xop *x, PyObject *o, const char *field,
		     uint32_t k, void **buf, size_t *len)
{
	Py_buffer *v = &x->x_views[x->x_nviews];
	Py_ssize_t n;

	if (PyUnicode_Check(o)) {
		const char *p = PyUnicode_AsUTF8AndSize(o, &n);

		if (p == NULL)
			return -1;
		*buf = (void *)p;
		*len = (size_t)n;
		return 0;
	}
	if (!PyObject_CheckBuffer(o)) {
		PyErr_Format(PyExc_TypeError, "%s: record %u: %s must be str or "
			     "a bytes-like object, not %s", x->x_what, k, field,
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	if (PyObject_GetBuffer(o, v, PyBUF_SIMPLE) != 0) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "%s: record %u: %s must be one "
			     "C-contiguous buffer", x->x_what, k, field);
		return -1;
	}
	x->x_nviews++;
	*buf = v->buf;
	*len = (size_t)v->len;
	return 0;
}

/*
 * The records of an index op in x: keys (a sequence) and, for PUT, vals
 * (a sequence of as many) copied into tuples x keeps (x_keep), and the
 * op's vectors pointing into them (views of bytes-like items, the UTF-8
 * of str ones).  0, or -1 with the exception set.
 */
static int idx_records(struct xop *x, enum xop_kind kind, PyObject *keys,
		       PyObject *vals)
{
	PyObject *kt, *vt = NULL;
	Py_ssize_t n;
	char *p;

	kt = PySequence_Tuple(keys);
	if (kt == NULL)
		return -1;
	n = PyTuple_GET_SIZE(kt);
	if (kind == XK_IDX_PUT) {
		vt = PySequence_Tuple(vals);
		if (vt == NULL || PyTuple_GET_SIZE(vt) != n) {
			if (vt != NULL)
				PyErr_Format(PyExc_ValueError, "%s: %zd keys "
					     "but %zd values", x->x_what, n,
					     PyTuple_GET_SIZE(vt));
			Py_DECREF(kt);
			Py_XDECREF(vt);
			return -1;
		}
		/* x_keep holds both; kt and vt stay valid through it */
		x->x_keep = PyTuple_Pack(2, kt, vt);
		Py_DECREF(kt);
		Py_DECREF(vt);
		if (x->x_keep == NULL)
			return -1;
	} else {
		x->x_keep = kt;
	}
	if (n == 0 || (size_t)n > CLOVIS_VEC_MAX) {
		PyErr_Format(PyExc_ValueError, "%s: %zd records: 1 to %u in "
			     "one op", x->x_what, n, CLOVIS_VEC_MAX);
		return -1;
	}
	p = x->x_arrays = PyMem_Calloc((size_t)n, 4 * sizeof(void *) +
				       sizeof(int32_t) + 2 * sizeof(Py_buffer));
	if (p == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	x->x_nrec = (uint32_t)n; /* the arrays below are there (zeroed) */
	x->x_views = (Py_buffer *)p;
	x->x_kb = (void **)(p + n * 2 * sizeof(Py_buffer));
	x->x_vb = x->x_kb + n;
	x->x_kl = (size_t *)(x->x_vb + n);
	x->x_vl = x->x_kl + n;
	x->x_rcs = (int32_t *)(x->x_vl + n);
	for (Py_ssize_t k = 0; k < n; k++) {
		if (rec_bytes(x, PyTuple_GET_ITEM(kt, k), "key", (uint32_t)k,
			      &x->x_kb[k], &x->x_kl[k]) != 0 ||
		    (vt != NULL &&
		     rec_bytes(x, PyTuple_GET_ITEM(vt, k), "value", (uint32_t)k,
			       &x->x_vb[k], &x->x_vl[k]) != 0))
			return -1;
	}
	x->x_kv = (struct clovis_bufvec){ (uint32_t)n, x->x_kb, x->x_kl };
	x->x_vv = (struct clovis_bufvec){ (uint32_t)n, x->x_vb, x->x_vl };
	return 0;
}

/*
 * Prepare an index op on keys (a sequence) and vals (a sequence of as
 * many, for PUT; None otherwise): GET, PUT or DEL.  On success s_use is
 * held and the op is made.
 */
static int idx_prep(EntityObject *e, struct xop *x, enum xop_kind kind,
		    PyObject *keys, PyObject *vals, uint32_t flags)
{
	static const char *const verbs[] = { "get", "put", "del" };
	static const uint32_t opcodes[] = { CLOVIS_IC_GET, CLOVIS_IC_PUT,
					    CLOVIS_IC_DEL };
	int rc;

	x->x_kind = kind;
	snprintf(x->x_what, sizeof x->x_what, "%s: %s", e->e_name,
		 verbs[kind - XK_IDX_GET]);
	if (idx_records(x, kind, keys, vals) != 0)
		return -1;
	if (store_enter(e->e_store) != 0)
		return -1;
	rc = clovis_idx_op(&e->e_u.i, opcodes[kind - XK_IDX_GET], &x->x_kv,
			   kind == XK_IDX_DEL ? NULL : &x->x_vv, x->x_rcs,
			   flags, &x->x_op);
	if (rc != 0) {
		store_leave(e->e_store);
		raise_rc(rc, "%s: %s", x->x_what, clovis_errmsg());
		return -1;
	}
	Py_INCREF(e);
	x->x_owner = (PyObject *)e;
	return 0;
}

/* Run, start (cb) or add to tx an index op; see idx_prep(). */
static PyObject *idx_run(EntityObject *e, enum xop_kind kind, PyObject *keys,
			 PyObject *vals, uint32_t flags, PyObject *tx,
			 PyObject *cb)
{
	bool in_tx = tx != NULL && tx != Py_None;
	struct xop xs, *x;

	if (run_check(e->e_store, tx, cb, e->e_name) != 0)
		return NULL;
	x = xop_new(&xs, in_tx || cb != NULL);
	if (x == NULL)
		return NULL;
	if (idx_prep(e, x, kind, keys, vals, flags) != 0) {
		xop_drop(x);
		return NULL;
	}
	return xop_finish(e->e_store, x, tx, cb, true);
}

/* get(keys) -> list: per key its value (bytes) or its rc (int < 0:
 * -ENOENT when absent). */
static PyObject *idx_get(EntityObject *e, PyObject *args)
{
	PyObject *keys;

	if (!PyArg_ParseTuple(args, "O:get", &keys))
		return NULL;
	return idx_run(e, XK_IDX_GET, keys, NULL, 0, NULL, NULL);
}

/* put(keys, vals, overwrite=True, tx=None) -> list of per-record rcs
 * (None in a dtx: the rcs are known at its commit). */
static PyObject *idx_put(EntityObject *e, PyObject *args, PyObject *kw)
{
	static char *names[] = { "keys", "vals", "overwrite", "tx", NULL };
	PyObject *keys, *vals, *tx = Py_None;
	int over = 1;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|pO:put", names, &keys,
					 &vals, &over, &tx))
		return NULL;
	return idx_run(e, XK_IDX_PUT, keys, vals,
		       over ? CLOVIS_IF_OVERWRITE : 0, tx, NULL);
}

/* delete(keys, tx=None) -> list of per-record rcs (-ENOENT: absent). */
static PyObject *idx_del(EntityObject *e, PyObject *args, PyObject *kw)
{
	static char *names[] = { "keys", "tx", NULL };
	PyObject *keys, *tx = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:delete", names, &keys,
					 &tx))
		return NULL;
	return idx_run(e, XK_IDX_DEL, keys, NULL, 0, tx, NULL);
}

/* _start(kind, keys, vals, overwrite, cb): async GET (1), PUT (2) or
 * DEL (3); cb(ok, per-record list). */
static PyObject *idx_start(EntityObject *e, PyObject *args)
{
	PyObject *keys, *vals, *cb;
	unsigned int which;
	int over;

	if (!PyArg_ParseTuple(args, "IOOpO", &which, &keys, &vals, &over, &cb))
		return NULL;
	if (which < 1 || which > 3) {
		PyErr_Format(PyExc_ValueError, "%s: bad index op %u",
			     e->e_name, which);
		return NULL;
	}
	return idx_run(e, XK_IDX_GET + which - 1, keys, vals,
		       which == 2 && over ? CLOVIS_IF_OVERWRITE : 0, NULL, cb);
}

/* A copy of a NEXT's start key (str: its UTF-8; or a bytes-like object)
 * in *mine (PyMem), its length in *len: the op overwrites slot 0's
 * pointer with its first record's.  0, or -1 with the exception set. */
static int next_start(PyObject *start, const char *what, void **mine,
		      size_t *len)
{
	Py_buffer sv;
	const char *p;
	Py_ssize_t n;

	if (PyUnicode_Check(start)) {
		p = PyUnicode_AsUTF8AndSize(start, &n);
		if (p == NULL)
			return -1;
	} else {
		if (arg_buffer(start, false, what, "start", &sv) != 0)
			return -1;
		p = sv.buf;
		n = sv.len;
	}
	*mine = PyMem_Malloc(n > 0 ? (size_t)n : 1);
	if (*mine != NULL)
		memcpy(*mine, p, (size_t)n);
	if (!PyUnicode_Check(start))
		PyBuffer_Release(&sv);
	if (*mine == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	*len = (size_t)n;
	return 0;
}

/* The records a NEXT found (slots with rcs 0, in order) as a list of
 * (key, value) bytes; every malloc()ed record is freed, also when the
 * list cannot be made (NULL, the exception set). */
static PyObject *next_records(uint32_t nr, void **kb, size_t *kl, void **vb,
			      size_t *vl, const int32_t *rcs)
{
	PyObject *out = PyList_New(0);

	for (uint32_t k = 0; k < nr && rcs[k] == 0; k++) {
		PyObject *t = NULL;

		if (out != NULL)
			t = Py_BuildValue("y#y#", (char *)kb[k],
					  (Py_ssize_t)kl[k], (char *)vb[k],
					  (Py_ssize_t)vl[k]);
		if (t == NULL || PyList_Append(out, t) != 0)
			Py_CLEAR(out);
		Py_XDECREF(t);
	}
	for (uint32_t k = 0; k < nr; k++) {
		if (rcs[k] == 0) {
			free(kb[k]);
			free(vb[k]);
		}
	}
	return out;
}

/*
 * next(start, exclude_start, nr) -> list of (key, value): up to nr
 * records in key order from start (None: the first record; with
 * exclude_start, after it).  One NEXT op, run now with the GIL released;
 * the library's malloc()ed records are copied into bytes and freed.
 */
static PyObject *idx_next(EntityObject *e, PyObject *args)
{
	PyObject *start, *out = NULL;
	char msg[PYS_MSG_LEN], what[96];
	void **kb, **vb, *mine = NULL;
	size_t *kl, *vl;
	int32_t *rcs;
	unsigned int nr;
	struct clovis_bufvec kv, vv;
	struct clovis_op *op = NULL;
	int excl, rc;

	if (!PyArg_ParseTuple(args, "OpI:next", &start, &excl, &nr))
		return NULL;
	snprintf(what, sizeof what, "%s: next", e->e_name);
	if (nr == 0 || nr > PYS_NEXT_MAX) {
		PyErr_Format(PyExc_ValueError, "%s: batch of %u records: 1 to "
			     "%u", what, nr, PYS_NEXT_MAX);
		return NULL;
	}
	kb = PyMem_Calloc(nr, 4 * sizeof(void *) + sizeof(int32_t));
	if (kb == NULL)
		return PyErr_NoMemory();
	vb = kb + nr;
	kl = (size_t *)(vb + nr);
	vl = kl + nr;
	rcs = (int32_t *)(vl + nr);
	if (start != Py_None && next_start(start, what, &mine, &kl[0]) != 0)
		goto out_free;
	kb[0] = mine;
	kv = (struct clovis_bufvec){ nr, kb, kl };
	vv = (struct clovis_bufvec){ nr, vb, vl };
	if (store_enter(e->e_store) != 0)
		goto out_free;
	rc = clovis_idx_op(&e->e_u.i, CLOVIS_IC_NEXT, &kv, &vv, rcs,
			   excl ? CLOVIS_IF_EXCLUDE_START_KEY : 0, &op);
	Py_BEGIN_ALLOW_THREADS
	if (rc == 0)
		rc = clovis_op_sync(op);
	if (rc != 0)
		snprintf(msg, sizeof msg, "%s", clovis_errmsg());
	store_leave(e->e_store);
	Py_END_ALLOW_THREADS
	if (rc != 0)
		raise_rc(rc, "%s: %s", what, msg);
	else
		out = next_records(nr, kb, kl, vb, vl, rcs);
out_free:
	PyMem_Free(mine);
	PyMem_Free(kb);
	return out;
}

/* ------------------------------------------------------------- tables */

static PyMethodDef obj_methods[] = {
	{ "read", (PyCFunction)obj_read, METH_VARARGS,
	  "read(offset, length) -> bytes: length bytes (whole blocks) from "
	  "offset (a block boundary)" },
	{ "read_into", (PyCFunction)obj_read_into, METH_VARARGS,
	  "read_into(offset, buf) -> int: fill the writable buffer buf "
	  "(whole blocks) from offset" },
	{ "write", (PyCFunction)(void (*)(void))obj_write,
	  METH_VARARGS | METH_KEYWORDS,
	  "write(offset, data, tx=None): data (any bytes-like object of "
	  "whole blocks) at offset" },
	{ "alloc", (PyCFunction)(void (*)(void))obj_alloc,
	  METH_VARARGS | METH_KEYWORDS,
	  "alloc(offset, length, tx=None): CLOVIS_OC_ALLOC" },
	{ "punch", (PyCFunction)(void (*)(void))obj_punch,
	  METH_VARARGS | METH_KEYWORDS,
	  "punch(offset, length, tx=None): CLOVIS_OC_FREE (holes)" },
	{ "_start_read", (PyCFunction)obj_start_read, METH_VARARGS, NULL },
	{ "_start_read_into", (PyCFunction)obj_start_read_into, METH_VARARGS,
	  NULL },
	{ "_start_write", (PyCFunction)obj_start_write, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject ObjType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "strata._strata.Obj",
	.tp_basicsize = sizeof(EntityObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE |
		    Py_TPFLAGS_HAVE_GC,
	.tp_doc = "Obj(store, container, hi, lo, attr=None): an object handle.",
	.tp_base = &EntityType,
	.tp_new = obj_new,
	.tp_dealloc = (destructor)ent_dealloc,
	.tp_traverse = (traverseproc)ent_traverse,
	.tp_clear = (inquiry)ent_clear,
	.tp_methods = obj_methods,
};

static PyMethodDef idx_methods[] = {
	{ "_get", (PyCFunction)idx_get, METH_VARARGS,
	  "_get(keys) -> [bytes or rc]" },
	{ "_put", (PyCFunction)(void (*)(void))idx_put,
	  METH_VARARGS | METH_KEYWORDS,
	  "_put(keys, vals, overwrite=True, tx=None) -> [rc] or None" },
	{ "_delete", (PyCFunction)(void (*)(void))idx_del,
	  METH_VARARGS | METH_KEYWORDS,
	  "_delete(keys, tx=None) -> [rc] or None" },
	{ "_next", (PyCFunction)idx_next, METH_VARARGS,
	  "_next(start, exclude_start, nr) -> [(key, value)]" },
	{ "_start", (PyCFunction)idx_start, METH_VARARGS,
	  "_start(op, keys, vals, overwrite, cb): async GET 1, PUT 2, DEL 3" },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject IdxType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "strata._strata.Idx",
	.tp_basicsize = sizeof(EntityObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE |
		    Py_TPFLAGS_HAVE_GC,
	.tp_doc = "Idx(store, container, hi, lo): an index handle.",
	.tp_base = &EntityType,
	.tp_new = idx_new,
	.tp_dealloc = (destructor)ent_dealloc,
	.tp_traverse = (traverseproc)ent_traverse,
	.tp_clear = (inquiry)ent_clear,
	.tp_methods = idx_methods,
};
