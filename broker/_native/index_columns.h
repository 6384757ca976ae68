/* The entry columns index_put_entries reads (index.c alone): a list of ints, or a 1-d
 * buffer of native ints such as the array.array('i' / 'q') index_gather returns. */
#ifndef RMQ_EMU_INDEX_COLUMNS_H
#define RMQ_EMU_INDEX_COLUMNS_H

#include <Python.h>
#include <stdint.h>

/* One column; `size` is the item size a buffer must have (4 for hashes, 8 otherwise). */
typedef struct {
    PyObject *list;
    Py_buffer view;
    int has_view;
} column_t;

static int
column_open(PyObject *o, size_t size, column_t *c)
{
    c->list = NULL;
    c->has_view = 0;
    if (PyList_Check(o)) {
        c->list = o;
        return 0;
    }
    if (PyObject_GetBuffer(o, &c->view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    c->has_view = 1;
    const char *f = c->view.format ? c->view.format : "B";
    if (f[0] == '@')
        f++;
    int ok = c->view.ndim == 1 && (size_t)c->view.itemsize == size && f[1] == '\0' &&
             (size == 4 ? f[0] == 'i' : f[0] == 'q' || f[0] == 'l');
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "index_put_entries: a column is neither a list nor "
                                         "an array of native ints of the expected size");
        return -1;
    }
    return 0;
}

static void
column_close(column_t *c)
{
    if (c->has_view)
        PyBuffer_Release(&c->view);
    c->has_view = 0;
}

static Py_ssize_t
column_len(const column_t *c)
{
    return c->list ? PyList_GET_SIZE(c->list) : c->view.len / c->view.itemsize;
}

/* Item i as int64 within [lo, hi]; 0 with ValueError otherwise. */
static int
column_i64(const column_t *c, Py_ssize_t i, int64_t lo, int64_t hi, int64_t *out)
{
    long long x;
    if (c->list != NULL) {
        PyObject *v = PyList_GET_ITEM(c->list, i);
        int overflow = 0;
        if (!PyLong_Check(v))
            goto bad;
        x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            goto bad;
        }
    } else {
        x = c->view.itemsize == 4 ? ((const int32_t *)c->view.buf)[i]
                                  : ((const int64_t *)c->view.buf)[i];
    }
    if (x < lo || x > hi)
        goto bad;
    *out = x;
    return 1;
bad:
    PyErr_Format(PyExc_ValueError, "index entry %zd: bad value", i);
    return 0;
}

#endif
