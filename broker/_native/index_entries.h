/* Index entries gathered in C: parallel arrays of (key hash, commitlog offset, store
 * time), grown as needed (index.c's gather, index_run.c's queued runs). */
#ifndef RMQ_EMU_INDEX_ENTRIES_H
#define RMQ_EMU_INDEX_ENTRIES_H

#include <Python.h>
#include <stdint.h>

typedef struct {
    int32_t *h;
    int64_t *p, *t;
    Py_ssize_t n, cap;
} entries_t;

static __attribute__((unused)) void
ent_free(entries_t *e)
{
    PyMem_Free(e->h);
    PyMem_Free(e->p);
    PyMem_Free(e->t);
}

/* Append (hash, offset, stamp); -1 with MemoryError. */
static __attribute__((unused)) int
push(entries_t *e, int32_t h, int64_t off, int64_t ts)
{
    if (e->n == e->cap) {
        Py_ssize_t cap = e->cap ? e->cap * 2 : 256;
        int32_t *nh = PyMem_Realloc(e->h, sizeof(int32_t) * (size_t)cap);
        if (nh != NULL)
            e->h = nh;
        int64_t *np = nh ? PyMem_Realloc(e->p, sizeof(int64_t) * (size_t)cap) : NULL;
        if (np != NULL)
            e->p = np;
        int64_t *nt = np ? PyMem_Realloc(e->t, sizeof(int64_t) * (size_t)cap) : NULL;
        if (nt == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        e->t = nt;
        e->cap = cap;
    }
    e->h[e->n] = h;
    e->p[e->n] = off;
    e->t[e->n] = ts;
    e->n++;
    return 0;
}

#pragma GCC visibility push(hidden) /* shared between this module's files only */
/* An IndexRun's entries after `*last` appended to `out` (index_run.c): 0, -1 on error,
 * 1 when `item` is not an IndexRun. */
int index_run_gather(PyObject *item, entries_t *out, long long *last, Py_ssize_t *done);
#pragma GCC visibility pop

#endif
