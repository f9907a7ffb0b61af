/* A measurement prototype, not part of the package: BatchedTensor's binary operators and x[i]
 * as C callables (bench/compiled.py builds it, installs it on the class for its timings and
 * takes it off again). Each handles exactly the common case of the pure-Python fast path it
 * stands in for (plumbing.binary_fast_paths' first tier: two values of one live level with one
 * batch axis and rank, or a value and a scalar; tensor.BatchedTensor.__getitem__'s x[int] of a
 * batch-first 2-d physical array) and hands every other call, unchanged, to that Python
 * function. bench/NOTES.md has what it measured and why it is not built into the package. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>

static PyTypeObject *BT;          /* BatchedTensor */
static Py_ssize_t off_value, off_bdim, off_level, off_alive;
static PyObject *recorders;       /* registry.RECORDERS (a list) */
static PyObject *scalar_types;    /* plumbing.SCALAR_TYPES (a frozenset) */
static PyObject *slice_all;

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

static Py_ssize_t member_offset(PyObject *type, const char *name) {
    PyObject *d = PyDict_GetItemString(((PyTypeObject *)type)->tp_dict, name);
    if (d == NULL || !PyObject_TypeCheck(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "no slot %s", name);
        return -1;
    }
    return ((PyMemberDescrObject *)d)->d_member->offset;
}

static PyObject *new_bt(PyObject *value, PyObject *bdim, PyObject *level) {
    PyObject *r = BT->tp_alloc(BT, 0);
    if (r == NULL) { Py_DECREF(value); return NULL; }
    SLOT(r, off_value) = value;
    Py_INCREF(bdim); SLOT(r, off_bdim) = bdim;
    Py_INCREF(level); SLOT(r, off_level) = level;
    return r;
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *ufunc;
    PyObject *fallback;
    int reflected;
} BinOp;

static PyObject *binop_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
    BinOp *op = (BinOp *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n != 2 || kwnames != NULL) goto fallback;
    PyObject *self = args[0], *other = args[1];
    if (Py_TYPE(self) != BT || PyList_GET_SIZE(recorders)) goto fallback;
    PyObject *level = SLOT(self, off_level), *v = SLOT(self, off_value),
             *bdim = SLOT(self, off_bdim);
    if (level == NULL || v == NULL || bdim == NULL || SLOT(level, off_alive) != Py_True
            || Py_TYPE(v) != &PyArray_Type)
        goto fallback;
    PyObject *ov;
    PyTypeObject *t = Py_TYPE(other);
    if (t == BT) {
        if (op->reflected) goto fallback;
        ov = SLOT(other, off_value);
        if (ov == NULL || SLOT(other, off_level) != level || SLOT(other, off_bdim) != bdim
                || Py_TYPE(ov) != &PyArray_Type
                || PyArray_NDIM((PyArrayObject *)ov) != PyArray_NDIM((PyArrayObject *)v))
            goto fallback;
    } else if (t == &PyFloat_Type || t == &PyLong_Type) {
        ov = other;
    } else {
        int c = PySet_Contains(scalar_types, (PyObject *)t);
        if (c < 0) return NULL;
        if (c) ov = other;
        else if (t == &PyArray_Type && PyLong_CheckExact(bdim) && PyLong_AsLong(bdim) == 0
                 && PyArray_NDIM((PyArrayObject *)other) < PyArray_NDIM((PyArrayObject *)v))
            ov = other;
        else goto fallback;
    }
    PyObject *uargs[2];
    if (op->reflected) { uargs[0] = ov; uargs[1] = v; } else { uargs[0] = v; uargs[1] = ov; }
    PyObject *res = PyObject_Vectorcall(op->ufunc, uargs, 2, NULL);
    if (res == NULL) return NULL;
    return new_bt(res, bdim, level);
fallback:
    return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

static PyObject *binop_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *ufunc, *fallback; int reflected;
    if (!PyArg_ParseTuple(args, "OOp", &ufunc, &fallback, &reflected)) return NULL;
    BinOp *op = (BinOp *)type->tp_alloc(type, 0);
    if (!op) return NULL;
    Py_INCREF(ufunc); Py_INCREF(fallback);
    op->ufunc = ufunc; op->fallback = fallback; op->reflected = reflected;
    op->vectorcall = binop_call;
    return (PyObject *)op;
}

static void binop_dealloc(BinOp *op) {
    Py_XDECREF(op->ufunc); Py_XDECREF(op->fallback);
    Py_TYPE(op)->tp_free((PyObject *)op);
}

static PyObject *binop_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) { Py_INCREF(self); return self; }
    return PyMethod_New(self, obj);
}

static PyTypeObject BinOpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_fastops.BinOp",
    .tp_basicsize = sizeof(BinOp),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(BinOp, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = binop_get,
    .tp_new = binop_new,
    .tp_dealloc = (destructor)binop_dealloc,
};

/* x[i]: batch axis first, an int key, a 2-d physical ndarray -> a copy of column i */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;
} GetItem;

static PyObject *getitem_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
    GetItem *g = (GetItem *)callable;
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames) goto fallback;
    PyObject *self = args[0], *key = args[1];
    if (Py_TYPE(self) != BT || Py_TYPE(key) != &PyLong_Type || PyList_GET_SIZE(recorders))
        goto fallback;
    PyObject *level = SLOT(self, off_level), *v = SLOT(self, off_value),
             *bdim = SLOT(self, off_bdim);
    if (level == NULL || v == NULL || bdim == NULL || SLOT(level, off_alive) != Py_True
            || Py_TYPE(v) != &PyArray_Type || PyArray_NDIM((PyArrayObject *)v) != 2
            || !PyLong_CheckExact(bdim) || PyLong_AsLong(bdim) != 0)
        goto fallback;
    Py_ssize_t i = PyLong_AsSsize_t(key);
    if (i == -1 && PyErr_Occurred()) { PyErr_Clear(); goto fallback; }
    npy_intp n1 = PyArray_DIM((PyArrayObject *)v, 1);
    if (i < 0) i += n1;
    if (i < 0 || i >= n1) goto fallback;
    PyObject *tup = PyTuple_Pack(2, slice_all, key);
    if (!tup) return NULL;
    PyObject *view = PyObject_GetItem(v, tup);
    Py_DECREF(tup);
    if (!view) return NULL;
    PyObject *res = PyArray_NewCopy((PyArrayObject *)view, NPY_CORDER);
    Py_DECREF(view);
    if (!res) return NULL;
    return new_bt(res, bdim, level);
fallback:
    return PyObject_Vectorcall(g->fallback, args, nargsf, kwnames);
}

static PyObject *getitem_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *fallback;
    if (!PyArg_ParseTuple(args, "O", &fallback)) return NULL;
    GetItem *g = (GetItem *)type->tp_alloc(type, 0);
    if (!g) return NULL;
    Py_INCREF(fallback); g->fallback = fallback; g->vectorcall = getitem_call;
    return (PyObject *)g;
}

static void getitem_dealloc(GetItem *g) {
    Py_XDECREF(g->fallback);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyTypeObject GetItemType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_fastops.GetItem",
    .tp_basicsize = sizeof(GetItem),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(GetItem, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = binop_get,
    .tp_new = getitem_new,
    .tp_dealloc = (destructor)getitem_dealloc,
};

static PyObject *init(PyObject *mod, PyObject *args) {
    PyObject *bt, *lv, *rec, *sc;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyType_Type, &bt, &PyType_Type, &lv,
                          &PyList_Type, &rec, &PyFrozenSet_Type, &sc))
        return NULL;
    if ((off_value = member_offset(bt, "_value")) < 0 || (off_bdim = member_offset(bt, "_bdim")) < 0
        || (off_level = member_offset(bt, "_level")) < 0 || (off_alive = member_offset(lv, "alive")) < 0)
        return NULL;
    Py_INCREF(bt); BT = (PyTypeObject *)bt;
    Py_INCREF(rec); recorders = rec;
    Py_INCREF(sc); scalar_types = sc;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"init", init, METH_VARARGS, NULL}, {NULL}};
static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_fastops", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastops(void) {
    import_array();
    if (PyType_Ready(&BinOpType) < 0 || PyType_Ready(&GetItemType) < 0) return NULL;
    slice_all = PySlice_New(NULL, NULL, NULL);
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    Py_INCREF(&BinOpType); PyModule_AddObject(m, "BinOp", (PyObject *)&BinOpType);
    Py_INCREF(&GetItemType); PyModule_AddObject(m, "GetItem", (PyObject *)&GetItemType);
    return m;
}
