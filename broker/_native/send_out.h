/* The responses of one run(): the byte buffer handed to the protocol's out list, the
 * decimal formatter, reading the store's result tuples, and the response template cut at
 * its %d fields. Used by send_frame.c alone. */
#ifndef RMQ_EMU_SEND_OUT_H
#define RMQ_EMU_SEND_OUT_H

#include "send.h"

static int out_reserve(Sender *s, size_t extra) {
    if (s->out_len + extra <= s->out_cap) return 0;
    size_t cap = s->out_cap ? s->out_cap : 4096;
    while (cap < s->out_len + extra) cap *= 2;
    char *p = PyMem_Realloc(s->out, cap);
    if (p == NULL) { PyErr_NoMemory(); return -1; }
    s->out = p;
    s->out_cap = cap;
    return 0;
}

static inline void out_put(Sender *s, const void *p, size_t n) {
    memcpy(s->out + s->out_len, p, n);
    s->out_len += n;
}

/* A response frame's first 8 bytes: its length (4 + an n-byte JSON header, no body) and the
 * header length word (serialize type JSON = 0 in its top byte). Room reserved by the caller. */
static inline void out_prefix(Sender *s, size_t n) {
    unsigned char pre[8] = {(unsigned char)((n + 4) >> 24), (unsigned char)((n + 4) >> 16),
                            (unsigned char)((n + 4) >> 8), (unsigned char)(n + 4),
                            (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 8), (unsigned char)n};
    out_put(s, pre, 8);
}

/* Hand the responses accumulated so far to the protocol's out list (at ``index``, or at the
 * end when index < 0), keeping the order in which they were produced. */
static int out_flush(Sender *s, PyObject *out, Py_ssize_t index) {
    if (s->out_len == 0) return 0;
    PyObject *b = PyBytes_FromStringAndSize(s->out, (Py_ssize_t)s->out_len);
    if (b == NULL) return -1;
    s->out_len = 0;
    int rc = index < 0 ? PyList_Append(out, b) : PyList_Insert(out, index, b);
    Py_DECREF(b);
    return rc;
}

/* Decimal ASCII of a signed 64-bit integer; returns the length (at most 20). */
static int fmt_i64(char *buf, long long v) {
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do { tmp[n++] = (char)('0' + u % 10); u /= 10; } while (u);
    int k = 0;
    if (v < 0) buf[k++] = '-';
    while (n) buf[k++] = tmp[--n];
    return k;
}

/* ``seq[i]`` as Python evaluates it (new reference). The store's results are tuple subclasses:
 * PySequence_GetItem would go through their generic __getitem__ slot wrapper (a method lookup
 * and a call per item), so a tuple whose __getitem__ is tuple's own is indexed directly. */
static PyObject *item(PyObject *seq, Py_ssize_t i) {
    if (PyTuple_Check(seq) && Py_TYPE(seq)->tp_as_mapping != NULL
        && Py_TYPE(seq)->tp_as_mapping->mp_subscript == PyTuple_Type.tp_as_mapping->mp_subscript
        && i < PyTuple_GET_SIZE(seq)) {
        PyObject *v = PyTuple_GET_ITEM(seq, i);
        Py_INCREF(v);
        return v;
    }
    PyObject *key = PyLong_FromSsize_t(i);
    if (key == NULL) return NULL;
    PyObject *v = PyObject_GetItem(seq, key);
    Py_DECREF(key);
    return v;
}

/* Rebuild our copy of the response template when the store host, region or trace flag object
 * changed (the identity checks FusedSendV2.__call__ makes). */
static int template_refresh(Sender *s, run_t *r) {
    PyObject *region = PyObject_GetAttr(r->processor, str_region_id);
    PyObject *trace = region ? PyObject_GetAttr(r->processor, str_trace_on) : NULL;
    int rc = -1;
    if (trace == NULL) goto done;
    if (s->t_head != NULL && r->store_host == s->t_host && region == s->t_region
        && trace == s->t_trace) { rc = 0; goto done; }
    PyObject *x = PyObject_CallMethodNoArgs(s->fused, str_template);
    if (x == NULL) goto done;
    Py_DECREF(x);
    PyObject *head = PyObject_GetAttr(s->fused, str_head);
    PyObject *tail = head ? PyObject_GetAttr(s->fused, str_tail) : NULL;
    if (tail == NULL || !PyBytes_Check(head) || !PyBytes_Check(tail)) {
        if (tail != NULL) PyErr_SetString(PyExc_TypeError, "template pieces must be bytes");
        Py_XDECREF(head);
        Py_XDECREF(tail);
        goto done;
    }
    /* The tail holds queueId, queueOffset and opaque as three %d: cut it into four pieces. */
    PyObject *pieces[4] = {NULL, NULL, NULL, NULL};
    const char *t = PyBytes_AS_STRING(tail), *tend = t + PyBytes_GET_SIZE(tail);
    int k = 0;
    const char *a = t;
    for (const char *q = t; q + 1 < tend && k < 3; q++) {
        if (q[0] == '%' && q[1] == 'd') {
            pieces[k++] = PyBytes_FromStringAndSize(a, q - a);
            a = q + 2;
            q++;
        }
    }
    if (k == 3) pieces[3] = PyBytes_FromStringAndSize(a, tend - a);
    Py_DECREF(tail);
    if (k != 3 || !pieces[0] || !pieces[1] || !pieces[2] || !pieces[3]) {
        for (int i = 0; i < 4; i++) Py_XDECREF(pieces[i]);
        Py_DECREF(head);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "unexpected template tail");
        goto done;
    }
    Py_XSETREF(s->t_head, head);
    for (int i = 0; i < 4; i++) Py_XSETREF(s->t_tail[i], pieces[i]);
    Py_INCREF(r->store_host);
    Py_XSETREF(s->t_host, r->store_host);
    Py_INCREF(region);
    Py_XSETREF(s->t_region, region);
    Py_INCREF(trace);
    Py_XSETREF(s->t_trace, trace);
    rc = 0;
done:
    Py_XDECREF(region);
    Py_XDECREF(trace);
    return rc;
}

#endif
