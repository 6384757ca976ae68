/* Placeholder: filled in by the native send work. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_send", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__send(void) { return PyModule_Create(&module); }
