/* The PutPath type: construction (what the store fixes in __init__ read once, the caches
 * emptied), GC support, and its Python-visible method. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <dlfcn.h>

#include "putpath.h"
#include "store_attrs.h"
#include "store_names.h"

static int
putpath_traverse(PutPath *self, visitproc visit, void *arg)
{
#define VISIT(f) Py_VISIT(self->f);
    FIELDS(VISIT)
#undef VISIT
    Py_VISIT(self->st.running);
    Py_VISIT(self->st.behind);
    Py_VISIT(self->st.pending);
    Py_VISIT(self->st.limit);
    Py_VISIT(self->st.call);
    Py_VISIT(self->st.last_ts);
    Py_VISIT(self->cl_ts);
    for (int i = 0; i < QCACHE; i++) {
        Py_VISIT(self->qc[i].key);
        Py_VISIT(self->qc[i].kcq);
        Py_VISIT(self->qc[i].cq);
        Py_VISIT(self->qc[i].cq_dict);
        Py_VISIT(self->qc[i].mfq_dict);
    }
    return 0;
}

static int
putpath_clear(PutPath *self)
{
#define CLEAR(f) Py_CLEAR(self->f);
    FIELDS(CLEAR)
#undef CLEAR
    Py_CLEAR(self->st.running);
    Py_CLEAR(self->st.behind);
    Py_CLEAR(self->st.pending);
    Py_CLEAR(self->st.limit);
    Py_CLEAR(self->st.call);
    Py_CLEAR(self->st.last_ts);
    Py_CLEAR(self->cl_ts);
    self->st.version = 0;
    Py_CLEAR(self->ic_ts.obj);
    Py_CLEAR(self->ic_size.obj);
    Py_CLEAR(self->ic_crc.obj);
    Py_CLEAR(self->ic_tags.obj);
    for (int i = 0; i < QCACHE; i++) {
        Py_CLEAR(self->qc[i].key);
        Py_CLEAR(self->qc[i].kcq);
        Py_CLEAR(self->qc[i].cq);
        Py_CLEAR(self->qc[i].cq_dict);
        Py_CLEAR(self->qc[i].mfq_dict);
    }
    return 0;
}

static void
putpath_dealloc(PutPath *self)
{
    PyObject_GC_UnTrack(self);
    putpath_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* zng_crc32 from the already loaded library at `path`, if it computes what `crc` (the
 * Python function) computes on a probe; NULL otherwise (error set only if `crc` failed). */
static crc32_fn
find_crc32(const char *path, PyObject *crc)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL)
        return NULL;
    crc32_fn fn = (crc32_fn)dlsym(h, "zng_crc32");
    dlclose(h); /* RTLD_NOLOAD took a reference; the module keeps the library loaded */
    if (fn == NULL)
        return NULL;
    static const char probe[] = "RocketMQ BODYCRC probe \x01\x02\xff";
    PyObject *b = PyBytes_FromStringAndSize(probe, sizeof probe - 1);
    PyObject *r = b ? PyObject_CallOneArg(crc, b) : NULL;
    Py_XDECREF(b);
    if (r == NULL)
        return NULL;
    unsigned long want = PyLong_AsUnsignedLongMask(r);
    Py_DECREF(r);
    if (want == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    uint32_t got = fn(0, (const unsigned char *)probe, (uint32_t)(sizeof probe - 1));
    return got == (uint32_t)want ? fn : NULL;
}

static int
putpath_init(PutPath *self, PyObject *args, PyObject *kwds)
{
    PyObject *store, *fallback, *crc, *append_type, *put_type, *append_ok, *put_ok, *sched,
        *failed, *rec_type, *mf_type;
    const char *crc_lib = NULL;
    static char *kwlist[] = {"store", "fallback", "crc32", "append_result", "put_result",
                             "append_ok", "put_ok", "schedule_topic", "listener_failed",
                             "record_type", "mapped_file_type", "crc32_library", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO!O!OOUOO!O!|z:PutPath", kwlist, &store,
                                     &fallback, &crc, &PyType_Type, &append_type, &PyType_Type,
                                     &put_type, &append_ok, &put_ok, &sched, &failed,
                                     &PyType_Type, &rec_type, &PyType_Type, &mf_type, &crc_lib))
        return -1;
    /* Results are built as the Python path builds them (tuple.__new__), so both types
     * must be tuple subclasses whose instances are nothing but the tuple. */
    PyTypeObject *types[2] = {(PyTypeObject *)append_type, (PyTypeObject *)put_type};
    for (int i = 0; i < 2; i++) {
        if (!PyType_IsSubtype(types[i], &PyTuple_Type) ||
            types[i]->tp_basicsize != PyTuple_Type.tp_basicsize) {
            PyErr_SetString(PyExc_TypeError, "result types must be tuple subclasses with "
                                             "__slots__ = ()");
            return -1;
        }
    }
    putpath_clear(self);
    if (slot_offsets((PyTypeObject *)rec_type, rec_names, R_N, self->rec_off) < 0 ||
        slot_offsets((PyTypeObject *)mf_type, mf_names, M_N, self->mf_off) < 0)
        return -1;
#define SET(f, v) (Py_INCREF(v), self->f = (v))
    SET(store, store);
    SET(fallback, fallback);
    SET(crc, crc);
    SET(append_type, append_type);
    SET(put_type, put_type);
    SET(append_ok, append_ok);
    SET(put_ok, put_ok);
    SET(schedule_topic, sched);
    SET(listener_failed, failed);
    SET(rec_type, rec_type);
    SET(mf_type, mf_type);
#undef SET
    PyObject *cl = NULL, *enc = NULL, *queue = NULL, *clock = NULL, *v = NULL;
    int rc = -1;
    if (!(cl = PyObject_GetAttr(store, s_commitlog)) ||
        !(enc = PyObject_GetAttr(cl, s_encoder)) ||
        !(queue = PyObject_GetAttr(cl, s_queue)) ||
        !(clock = PyObject_GetAttr(cl, s_clock)) ||
        !(self->seconds = PyObject_GetAttr(clock, s_seconds)) ||
        !(self->table = PyObject_GetAttr(cl, s_topic_queue_table)) ||
        !(self->topics = PyObject_GetAttr(enc, s__topics)) ||
        !(self->pairs = PyObject_GetAttr(enc, s__pairs)) ||
        !(self->cq_cache = PyObject_GetAttr(store, s__cq_cache)) ||
        !(self->listeners = PyObject_GetAttr(store, s__listeners)) ||
        !(self->flush = PyObject_GetAttr(store, s_flush_service)) ||
        !(self->store_dict = instance_dict(store, store_names)) ||
        !(self->cl_dict = instance_dict(cl, cl_names)) ||
        !(self->queue_dict = instance_dict(queue, queue_names)) ||
        !(self->flush_dict = instance_dict(self->flush, flush_names)) ||
        !(self->reactor = PyObject_GetAttr(store, s_reactor)))
        goto done;
    /* The settings fixed at construction. */
    if (!(v = PyObject_GetAttr(store, s__max_body)) ||
        (self->max_body = PyLong_AsLongLong(v)) == -1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "bad _max_body");
        goto done;
    }
    Py_CLEAR(v);
    if (!(v = PyObject_GetAttr(cl, s_mapped_file_size)) ||
        (self->cl_file_size = PyLong_AsLongLong(v)) == -1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "bad mapped_file_size");
        goto done;
    }
    Py_CLEAR(v);
    if (!(v = PyObject_GetAttr(self->flush, s_active)) ||
        (self->flush_active = PyObject_IsTrue(v)) < 0)
        goto done;
    Py_CLEAR(v);
    if (!(v = PyObject_GetAttr(self->flush, s_sync)) ||
        (self->flush_sync = PyObject_IsTrue(v)) < 0)
        goto done;
    Py_CLEAR(v);
    if (!(v = PyObject_GetAttr(self->flush, s__max_dirty)) ||
        ((self->max_dirty = PyLong_AsLongLong(v)) == -1 && PyErr_Occurred()))
        goto done;
    Py_CLEAR(v);
    if (!(v = PyObject_GetAttr(store, s_index)))
        goto done;
    self->has_index = v != Py_None;
    Py_CLEAR(v);
    if (!PyDict_CheckExact(self->table) || !PyDict_CheckExact(self->topics) ||
        !PyDict_CheckExact(self->pairs) || !PyDict_CheckExact(self->cq_cache) ||
        !PyList_CheckExact(self->listeners)) {
        PyErr_SetString(PyExc_TypeError, "PutPath: unexpected store layout");
        goto done;
    }
    PyObject *mfmod = PyImport_ImportModule("rocketmq_emu.broker.commitlog.mapped_file");
    self->dispatch_error = mfmod ? PyObject_GetAttrString(mfmod, "MappedFileError") : NULL;
    Py_XDECREF(mfmod);
    if (self->dispatch_error == NULL)
        goto done;
    self->crc_c = crc_lib ? find_crc32(crc_lib, crc) : NULL;
    if (PyErr_Occurred())
        goto done;
    self->commitlog = cl;
    cl = NULL;
    rc = 0;
done:
    Py_XDECREF(cl);
    Py_XDECREF(enc);
    Py_XDECREF(queue);
    Py_XDECREF(clock);
    Py_XDECREF(v);
    return rc;
}

PyDoc_STRVAR(put_doc,
"put(record) -> PutMessageResult\n\n"
"MessageStore.put_message: the plain case in C (same bytes, same attribute updates as\n"
"the Python path), any other case through the Python put_message given as fallback.");

static PyMethodDef putpath_methods[] = {
    {"put", (PyCFunction)putpath_put, METH_O, put_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(putpath_doc,
"PutPath(store, fallback, crc32, append_result, put_result, append_ok, put_ok,\n"
"        schedule_topic, listener_failed, record_type, mapped_file_type)\n\n"
"The C put path of one MessageStore. `fallback(record)` is the Python put_message (every\n"
"case but the plain one), `crc32` the body CRC function, the result types and OK statuses\n"
"those of broker.commitlog.results, `listener_failed(fn, exc)` logs a failed arrival\n"
"listener. Bind `store.put_message = PutPath(...).put`.");

PyTypeObject PutPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rocketmq_emu.broker._native._store.PutPath",
    .tp_basicsize = sizeof(PutPath),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = putpath_doc,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)putpath_init,
    .tp_dealloc = (destructor)putpath_dealloc,
    .tp_traverse = (traverseproc)putpath_traverse,
    .tp_clear = (inquiry)putpath_clear,
    .tp_methods = putpath_methods,
};
