/* broker._native._store: the module (PutPath from putpath_type.c, the index functions from
 * index.c). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "index.h"
#include "putpath.h"
#include "store_names.h"

PyDoc_STRVAR(module_doc,
"C accelerators of the store: the put path (PutPath; broker.commitlog.native_put binds\n"
"it) and the index batch (index_gather, index_put_entries; broker/index). The Python\n"
"paths stay the reference and the fallback.");

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_store", module_doc, -1, store_index_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__store(void)
{
    if (intern_names() < 0 || store_index_init() < 0 || PyType_Ready(&PutPathType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&PutPathType);
    if (PyModule_AddObject(m, "PutPath", (PyObject *)&PutPathType) < 0) {
        Py_DECREF(&PutPathType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
