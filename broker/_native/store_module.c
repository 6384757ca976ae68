/* broker._native._store: the module (PutPath from putpath_type.c, the index functions from
 * index.c, populate_write here). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "index.h"
#include "put_core.h"
#include "putpath.h"
#include "store_names.h"

PyDoc_STRVAR(module_doc,
"C accelerators of the store: the put path (PutPath; broker.commitlog.native_put binds\n"
"it) and the index batch (index_gather, index_put_entries; broker/index). The Python\n"
"paths stay the reference and the fallback.");

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14+; older kernels answer EINVAL */
#endif

PyDoc_STRVAR(populate_doc,
"populate_write(mm, start, length)\n\n"
"madvise(MADV_POPULATE_WRITE) over [start, start + length) of the writable buffer `mm` (an\n"
"mmap), with the GIL released: the pages are faulted in writable, their bytes unchanged, so\n"
"another thread may write into them meanwhile. CPython's mmap.madvise keeps the GIL, which\n"
"puts the page faults of a whole window on the thread that calls it. The buffer export\n"
"keeps the mapping alive until the call returns. OSError from the kernel.");

static PyObject *
populate_write(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *obj;
    Py_ssize_t start, length;
    if (!PyArg_ParseTuple(args, "Onn:populate_write", &obj, &start, &length))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_WRITABLE) < 0)
        return NULL;
    if (start < 0 || length < 0 || start > view.len || length > view.len - start) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "populate_write: range outside the buffer");
        return NULL;
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)view.buf + (uintptr_t)start;
    uintptr_t lo = a & ~(page - 1);
    size_t n = (size_t)length + (size_t)(a - lo);
    int rc = 0, err = 0;
    if (length > 0) {
        Py_BEGIN_ALLOW_THREADS
        rc = madvise((void *)lo, n, MADV_POPULATE_WRITE);
        err = errno;
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    if (rc != 0) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"populate_write", populate_write, METH_VARARGS, populate_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_store", module_doc, -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__store(void)
{
    if (intern_names() < 0 || store_index_init() < 0 || PyType_Ready(&PutPathType) < 0 ||
        PyType_Ready(&IndexRunType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddFunctions(m, store_index_methods) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&PutPathType);
    if (PyModule_AddObject(m, "PutPath", (PyObject *)&PutPathType) < 0) {
        Py_DECREF(&PutPathType);
        Py_DECREF(m);
        return NULL;
    }
    PyObject *capsule = store_direct_capsule();
    if (capsule == NULL || PyModule_AddObject(m, "_direct_api", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
