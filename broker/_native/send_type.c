/* The Sender type: construction (the decline keys, the MessageRecord layout), GC support,
 * its methods (send_frame.c) and members. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h> /* T_OBJECT_EX, READONLY: MessageRecord's slot members */
#include <stdint.h>
#include <string.h>

#include "send.h"

int bkey_set(bkey_t *k, PyObject *str) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(str, &n);
    if (u == NULL) return -1;
    k->p = PyMem_Malloc(n ? (size_t)n : 1);
    if (k->p == NULL) { PyErr_NoMemory(); return -1; }
    memcpy(k->p, u, (size_t)n);
    k->n = n;
    Py_INCREF(str);
    k->s = str;
    return 0;
}

static void bkey_clear(bkey_t *k) {
    PyMem_Free(k->p);
    k->p = NULL;
    k->n = 0;
    Py_CLEAR(k->s);
}

/* Accept (descriptors, defaults) for make_record's direct path: every descriptor a writable
 * object slot of record_cls, which must be created by object.__new__; else keep the call. */
static int record_layout(Sender *s, PyObject *record_cls, PyObject *slots, PyObject *defaults) {
    if (slots == Py_None) return 0;
    if (!PyType_Check(record_cls) || !PyTuple_Check(slots) || !PyTuple_Check(defaults)) {
        PyErr_SetString(PyExc_TypeError, "record_slots and record_defaults must be tuples");
        return -1;
    }
    PyTypeObject *tp = (PyTypeObject *)record_cls;
    Py_ssize_t n = PyTuple_GET_SIZE(slots);
    if (n < REC_ARGS || n > REC_MAX_FIELDS || PyTuple_GET_SIZE(defaults) != n - REC_ARGS
        || tp->tp_new != PyBaseObject_Type.tp_new)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(slots, i);
        if (!Py_IS_TYPE(d, &PyMemberDescr_Type)) return 0;
        PyMemberDescrObject *md = (PyMemberDescrObject *)d;
        if (md->d_common.d_type != tp || md->d_member->type != T_OBJECT_EX
            || (md->d_member->flags & READONLY))
            return 0;
        s->rec_off[i] = md->d_member->offset;
    }
    Py_INCREF(defaults);
    s->rec_defaults = defaults;
    s->rec_n = (int)n;
    return 0;
}

static int Sender_init(Sender *s, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"fused", "record_cls", "put_ok", "not_allowed", "retry_prefix",
                             "multi_tag", "cluster_key", "wait_key", "decline_keys",
                             "record_slots", "record_defaults", NULL};
    PyObject *fused, *record_cls, *put_ok, *not_allowed, *retry_prefix, *multi_tag, *cluster_key,
        *wait_key, *decline_keys, *record_slots = Py_None, *record_defaults = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOUUUUO|OO", kwlist, &fused, &record_cls,
                                     &put_ok, &not_allowed, &retry_prefix, &multi_tag,
                                     &cluster_key, &wait_key, &decline_keys, &record_slots,
                                     &record_defaults))
        return -1;
    if (s->fused != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Sender already initialised");
        return -1;
    }
    PyObject *seq = PySequence_Fast(decline_keys, "decline_keys must be a sequence of str");
    if (seq == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_DECLINE_KEYS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many decline_keys");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyUnicode_Check(k) || bkey_set(&s->decline[s->ndecline], k) < 0) {
            Py_DECREF(seq);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "decline_keys: str only");
            return -1;
        }
        s->ndecline++;
    }
    Py_DECREF(seq);
    if (bkey_set(&s->wait_key, wait_key) < 0) return -1;
    if (record_layout(s, record_cls, record_slots, record_defaults) < 0) return -1;
    s->direct_on = direct_api != NULL;
    s->java = PyUnicode_InternFromString("JAVA");
    if (s->java == NULL) return -1;
#define KEEP(f) Py_INCREF(f); s->f = f
    KEEP(fused);
    KEEP(record_cls);
    KEEP(put_ok);
    KEEP(not_allowed);
    KEEP(retry_prefix);
    KEEP(multi_tag);
    KEEP(cluster_key);
#undef KEEP
    return 0;
}

static int Sender_traverse(Sender *s, visitproc visit, void *arg) {
    Py_VISIT(s->fused);
    Py_VISIT(s->record_cls);
    Py_VISIT(s->put_ok);
    Py_VISIT(s->not_allowed);
    Py_VISIT(s->failure);
    Py_VISIT(s->rec_defaults);
    Py_VISIT(s->t_host);
    Py_VISIT(s->t_region);
    Py_VISIT(s->t_trace);
    return 0;
}

static int Sender_clear(Sender *s) {
    Py_CLEAR(s->fused);
    Py_CLEAR(s->record_cls);
    Py_CLEAR(s->put_ok);
    Py_CLEAR(s->not_allowed);
    Py_CLEAR(s->retry_prefix);
    Py_CLEAR(s->multi_tag);
    Py_CLEAR(s->cluster_key);
    Py_CLEAR(s->failure);
    Py_CLEAR(s->rec_defaults);
    Py_CLEAR(s->t_host);
    Py_CLEAR(s->t_region);
    Py_CLEAR(s->t_trace);
    Py_CLEAR(s->t_head);
    for (int i = 0; i < 4; i++) Py_CLEAR(s->t_tail[i]);
    Py_CLEAR(s->topic);
    Py_CLEAR(s->lang);
    Py_CLEAR(s->java);
    return 0;
}

static void Sender_dealloc(Sender *s) {
    PyObject_GC_UnTrack(s);
    Sender_clear(s);
    bkey_clear(&s->wait_key);
    for (int i = 0; i < s->ndecline; i++) bkey_clear(&s->decline[i]);
    for (int i = 0; i < s->nkeys; i++) bkey_clear(&s->keys[i]);
    PyMem_Free(s->topic_b);
    PyMem_Free(s->arena);
    PyMem_Free(s->out);
    PyMem_Free(s->pbuf);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef Sender_methods[] = {
    {"run", (PyCFunction)(void (*)(void))Sender_run, METH_FASTCALL,
     "run(src, pos, size, max_length, out, conn) -> pos of the first frame not handled"},
    {"take_failure", (PyCFunction)Sender_take_failure, METH_NOARGS,
     "(exception, header, body) of a fused send that raised, or None; clears it"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Sender_members[] = {
    {"record_fields", T_INT, offsetof(Sender, rec_n), READONLY,
     "fields of a MessageRecord filled directly (0: the class is called)"},
    {"direct", T_BOOL, offsetof(Sender, direct_on), 0,
     "try the store's direct put before building a MessageRecord (True when "
     "rocketmq_emu.broker._native._store offers it; False: always the record)"},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject SenderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rocketmq_emu.broker._native._send.Sender",
    .tp_basicsize = sizeof(Sender),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The everyday SEND_MESSAGE_V2 request from frame bytes to response bytes.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Sender_init,
    .tp_dealloc = (destructor)Sender_dealloc,
    .tp_traverse = (traverseproc)Sender_traverse,
    .tp_clear = (inquiry)Sender_clear,
    .tp_methods = Sender_methods,
    .tp_members = Sender_members,
};
