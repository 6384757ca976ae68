/* The put path's per-put scratch (used by put.c alone). */
#ifndef RMQ_EMU_PUT_SCRATCH_H
#define RMQ_EMU_PUT_SCRATCH_H

#include <Python.h>

/* Per-put scratch: every new reference taken while checking is kept here and dropped at   */
/* the end, so the many early exits need no per-object cleanup.                             */

#define MAX_REFS 96

typedef struct {
    PyObject *refs[MAX_REFS];
    int n;
    Py_buffer cl_view, cq_view;
    int cl_held, cq_held;
} Scratch;

/* Keep a new reference (NULL passes through: the caller treats it as "not plain"). */
static inline __attribute__((always_inline)) PyObject *
keep(Scratch *s, PyObject *o)
{
    if (o == NULL)
        return NULL;
    if (s->n == MAX_REFS) { /* cannot happen with the fixed count below; stay safe anyway */
        Py_DECREF(o);
        PyErr_SetString(PyExc_RuntimeError, "put path scratch full");
        return NULL;
    }
    s->refs[s->n++] = o;
    return o;
}

static void
scratch_release(Scratch *s)
{
    if (s->cl_held) {
        PyBuffer_Release(&s->cl_view);
        s->cl_held = 0;
    }
    if (s->cq_held) {
        PyBuffer_Release(&s->cq_view);
        s->cq_held = 0;
    }
    while (s->n > 0)
        Py_DECREF(s->refs[--s->n]);
}

#endif
