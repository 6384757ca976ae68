/* Interned attribute names of the put path (looked up once at import). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "store_names.h"

#define DEFINE(n) PyObject *s_##n;
NAMES(DEFINE)
#undef DEFINE

int
intern_names(void)
{
#define INTERN(n)                                                                            \
    if (!(s_##n = PyUnicode_InternFromString(#n))) return -1;
    NAMES(INTERN)
#undef INTERN
    return 0;
}
