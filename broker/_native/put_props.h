/* A record's properties measured and written (used by put.c alone). */
#ifndef RMQ_EMU_PUT_PROPS_H
#define RMQ_EMU_PUT_PROPS_H

#include <Python.h>
#include <string.h>

/* The properties of a record as the bytes the commitlog stores: `properties_str` (UTF-8)
 * when set, else the dict as name\x01value\x02..., in dict order (encoder.props_string for
 * str keys and values; anything else is the Python path's job). Measured first (the
 * record's size decides where it goes), written once everything is checked. */

#define MAX_PIECES 32

typedef struct {
    const char *k, *v;
    Py_ssize_t kl, vl;
} Piece;

typedef struct {
    PyObject *ps, *props; /* ps: the str, Py_None to build from props, NULL: raw u/len */
    Piece pieces[MAX_PIECES];
    Py_ssize_t n;         /* pieces collected; -1: too many, write by walking props again */
    const char *u;        /* ps's UTF-8 */
    Py_ssize_t len;
} Props;

/* UTF-8 of a str key and value; 0 when either is not an exact str or cannot be encoded
 * (lone surrogates: Python's encode raises it). */
static int
piece_of(PyObject *k, PyObject *v, Piece *pc)
{
    if (!PyUnicode_CheckExact(k) || !PyUnicode_CheckExact(v))
        return 0;
    if (!(pc->k = PyUnicode_AsUTF8AndSize(k, &pc->kl)) ||
        !(pc->v = PyUnicode_AsUTF8AndSize(v, &pc->vl))) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* Fill `pr` and its length; 0 when not the plain case (no error set). */
static int
props_measure(Props *pr)
{
    if (pr->ps == NULL) /* the direct put's stored bytes, given */
        return 1;
    if (pr->ps != Py_None) {
        if (!PyUnicode_CheckExact(pr->ps))
            return 0;
        if (!(pr->u = PyUnicode_AsUTF8AndSize(pr->ps, &pr->len))) {
            PyErr_Clear();
            return 0;
        }
        return 1;
    }
    Py_ssize_t pos = 0, total = 0, n = 0;
    PyObject *k, *v;
    Piece tmp;
    while (PyDict_Next(pr->props, &pos, &k, &v)) {
        Piece *pc = n < MAX_PIECES ? &pr->pieces[n] : &tmp;
        if (!piece_of(k, v, pc))
            return 0;
        /* Far past the 32767-byte limit: stop before the sums could overflow. */
        if (pc->kl > 65536 || pc->vl > 65536 || (total += pc->kl + pc->vl + 2) > 65536)
            return 0;
        n++;
    }
    pr->n = n <= MAX_PIECES ? n : -1;
    pr->len = n ? total - 1 : 0; /* n pairs, n - 1 separators */
    return 1;
}

static void
props_write(Props *pr, unsigned char *w)
{
    if (pr->ps != Py_None) { /* a str or the raw bytes */
        memcpy(w, pr->u, (size_t)pr->len);
        return;
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *v;
    Piece tmp;
    for (;;) {
        Piece *pc;
        if (pr->n >= 0) {
            if (i == pr->n)
                break;
            pc = &pr->pieces[i];
        } else {
            /* More pieces than the array holds: the dict again, exactly as measured
             * (nothing ran in between that could change it; the UTF-8 is cached). */
            if (!PyDict_Next(pr->props, &pos, &k, &v))
                break;
            piece_of(k, v, &tmp);
            pc = &tmp;
        }
        if (i++ > 0)
            *w++ = 0x02;
        memcpy(w, pc->k, (size_t)pc->kl);
        w += pc->kl;
        *w++ = 0x01;
        memcpy(w, pc->v, (size_t)pc->vl);
        w += pc->vl;
    }
}

#endif
