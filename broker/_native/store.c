/* Placeholder: filled in by the native store work. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_store", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__store(void) { return PyModule_Create(&module); }
