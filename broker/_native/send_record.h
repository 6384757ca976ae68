/* The MessageRecord plain_v2_record builds: its properties dict (property names reused
 * from a small cache) and the record itself, filled slot by slot. Used by send_frame.c
 * alone. */
#ifndef RMQ_EMU_SEND_RECORD_H
#define RMQ_EMU_SEND_RECORD_H

#include "send.h"

static inline int bkey_eq(const bkey_t *k, const unsigned char *p, size_t n) {
    return (size_t)k->n == n && memcmp(k->p, p, n) == 0;
}

/* A property name as a str: from the cache when seen before (its hash is cached too, which
 * makes the dict insertions cheap). New reference. */
static PyObject *prop_key(Sender *s, const unsigned char *p, size_t n) {
    for (int i = 0; i < s->nkeys; i++)
        if (bkey_eq(&s->keys[i], p, n)) { Py_INCREF(s->keys[i].s); return s->keys[i].s; }
    PyObject *k = PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, NULL);
    if (k == NULL || s->nkeys >= KEY_CACHE || n > KEY_CACHE_MAXLEN) return k;
    PyUnicode_InternInPlace(&k);
    if (bkey_set(&s->keys[s->nkeys], k) < 0) { Py_DECREF(k); return NULL; }
    s->nkeys++;
    return k;
}

/* ``string_to_properties`` + ``pop(WAIT)`` + ``[CLUSTER] = cluster``: pieces split on \x02,
 * name and value on the first \x01, pieces with an empty name or value dropped, later
 * duplicates replace the value in place (dict semantics). Returns the dict, or NULL with no
 * exception set when a TRAN_MSG / schedule property sends the request to the Python path. */
static PyObject *build_props(Sender *s, sv_t text, PyObject *cluster, int *error) {
    *error = 0;
    PyObject *d = PyDict_New();
    if (d == NULL) { *error = 1; return NULL; }
    const unsigned char *p = text.p, *end = text.p ? text.p + text.n : NULL, *kp, *vp;
    size_t kn, vn;
    int got;
    while ((got = next_piece(&p, end, &kp, &kn, &vp, &vn)) >= 0) {
        if (!got) continue;
        int skip = bkey_eq(&s->wait_key, kp, kn); /* popped afterwards in Python */
        for (int i = 0; i < s->ndecline; i++) {
            if (bkey_eq(&s->decline[i], kp, kn)) { Py_DECREF(d); return NULL; }
        }
        if (skip) continue;
        PyObject *k = prop_key(s, kp, kn);
        PyObject *v = k ? PyUnicode_DecodeUTF8((const char *)vp, (Py_ssize_t)vn, NULL) : NULL;
        if (v == NULL || PyDict_SetItem(d, k, v) < 0) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            Py_DECREF(d);
            *error = 1;
            return NULL;
        }
        Py_DECREF(k);
        Py_DECREF(v);
    }
    if (PyDict_SetItem(d, s->cluster_key, cluster) < 0) { Py_DECREF(d); *error = 1; return NULL; }
    return d;
}

/* Whether ``v`` can lead back to an object holding it: a tracked GC object, except a tuple
 * whose items cannot (CPython's own rule for untracking tuples). */
static int may_cycle(PyObject *v) {
    if (!PyObject_IS_GC(v) || !PyObject_GC_IsTracked(v)) return 0;
    if (!PyTuple_CheckExact(v)) return 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++)
        if (may_cycle(PyTuple_GET_ITEM(v, i))) return 1;
    return 0;
}

/* MessageRecord(*vals[:REC_ARGS]) (new reference). */
static PyObject *make_record(Sender *s, PyObject *const *vals) {
    if (s->rec_n == 0) return PyObject_Vectorcall(s->record_cls, vals, REC_ARGS, NULL);
    PyTypeObject *tp = (PyTypeObject *)s->record_cls;
    PyObject *o = tp->tp_alloc(tp, 0); /* zeroed slots: safe for the GC to traverse */
    if (o == NULL) return NULL;
    for (int i = 0; i < s->rec_n; i++) {
        PyObject *v = i < REC_ARGS ? vals[i] : PyTuple_GET_ITEM(s->rec_defaults, i - REC_ARGS);
        Py_INCREF(v);
        *(PyObject **)((char *)o + s->rec_off[i]) = v;
    }
    /* A record of strings, bytes, ints, a str->str dict and (host, port) tuples cannot be
     * part of a reference cycle, so the cyclic GC need not see it, as CPython stops seeing
     * dicts and tuples of such values. It matters: the store keeps each record until the
     * index drain, long enough to reach the older generations, whose growth then triggers
     * full collections (about 1.5-2.5 us per message measured in bench --cpu). */
    for (int i = 0; i < s->rec_n; i++)
        if (may_cycle(*(PyObject **)((char *)o + s->rec_off[i]))) return o;
    PyObject_GC_UnTrack(o);
    return o;
}

#endif
