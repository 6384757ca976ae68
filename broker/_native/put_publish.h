/* After a put's bytes are in: the arrival listeners, the index queue and the result tuples,
 * as StoreDispatch._dispatch and CommitLog.append do them. Used by put.c alone. */
#ifndef RMQ_EMU_PUT_PUBLISH_H
#define RMQ_EMU_PUT_PUBLISH_H

#include <Python.h>

#include "put_core.h"
#include "put_state.h"
#include "putpath.h"
#include "store_names.h"

/* Build a tuple-subclass result with the given items (references are not stolen). */
static PyObject *
make_result(PyObject *type, PyObject **items, Py_ssize_t n)
{
    PyTypeObject *tp = (PyTypeObject *)type;
    PyObject *t = tp->tp_alloc(tp, n);
    if (t == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(items[i]);
        PyTuple_SET_ITEM(t, i, items[i]);
    }
    return t;
}

/* Whether the listener entry (fn, topics) wants `topic`: topics None, or topic in topics
 * (a set or dict looked up directly; the hash of a topic str is cached). 1, 0, or -1 with
 * the exception `topic in topics` raised. */
static int
listener_wants(PyObject *topics, PyObject *topic)
{
    if (topics == Py_None)
        return 1;
    if (PyAnySet_CheckExact(topics))
        return PySet_Contains(topics, topic);
    if (PyDict_CheckExact(topics))
        return PyDict_Contains(topics, topic);
    return PySequence_Contains(topics, topic);
}

/* Arrival listeners, as StoreDispatch._dispatch calls them: entries (fn, topics) in list
 * order, fn skipped when topics is not None and lacks args[0] (a listener removing itself
 * is seen as Python's list iterator sees it); an Exception from fn is logged by the Python
 * helper and the next listener runs; a BaseException (or any error of the topics test)
 * propagates. */
static int
call_listeners(PutPath *self, PyObject *const *args)
{
    PyObject *ls = self->listeners;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ls); i++) {
        PyObject *entry = PyList_GET_ITEM(ls, i);
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2) {
            PyErr_SetString(PyExc_TypeError, "arrival listener entry is not (fn, topics)");
            return -1;
        }
        Py_INCREF(entry);
        int wants = listener_wants(PyTuple_GET_ITEM(entry, 1), args[0]);
        if (wants <= 0) {
            Py_DECREF(entry);
            if (wants < 0)
                return -1;
            continue;
        }
        PyObject *fn = PyTuple_GET_ITEM(entry, 0);
        Py_INCREF(fn);
        Py_DECREF(entry);
        PyObject *r = PyObject_Vectorcall(fn, args, 5, NULL);
        if (r != NULL) {
            Py_DECREF(r);
            Py_DECREF(fn);
            continue;
        }
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            Py_DECREF(fn);
            return -1;
        }
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL)
            PyException_SetTraceback(value, tb);
        PyObject *lr = PyObject_CallFunctionObjArgs(self->listener_failed, fn, value, NULL);
        if (lr == NULL)
            PyErr_WriteUnraisable(self->listener_failed);
        Py_XDECREF(lr);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        Py_DECREF(fn);
    }
    return 0;
}

/* Queue the record for the index as _dispatch does. */
static int
queue_index(PutPath *self, PyObject *rec)
{
    if (!self->has_index)
        return 0;
    PyObject *pending = state_attr(self, &self->st.pending, s__index_pending);
    if (pending == NULL)
        return -1;
    int rc = -1;
    if (PyList_CheckExact(pending)) {
        if (PyList_Append(pending, rec) < 0)
            goto done;
    } else {
        PyObject *a = PyObject_CallMethod(pending, "append", "O", rec);
        if (a == NULL)
            goto done;
        Py_DECREF(a);
    }
    Py_ssize_t n = PyObject_Length(pending);
    if (n >= 0)
        rc = index_queued(self, n);
done:
    Py_DECREF(pending);
    return rc;
}

#endif
