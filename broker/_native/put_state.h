/* The put path's view of the store's own attributes (kept between puts while the store's
 * __dict__ is unchanged) and its shared int objects. Used by put.c alone. */
#ifndef RMQ_EMU_PUT_STATE_H
#define RMQ_EMU_PUT_STATE_H

#include <Python.h>

#include "putpath.h"
#include "store_names.h"

/* An int of value `v` (new reference), the cached one when it has that value. */
static PyObject *
cached_int(IntCache *c, int64_t v)
{
    if (c->obj == NULL || c->v != v) {
        PyObject *o = PyLong_FromLongLong(v);
        if (o == NULL)
            return NULL;
        Py_XSETREF(c->obj, o);
        c->v = v;
    }
    return Py_NewRef(c->obj);
}

/* Make `self->st` current: read again unless the store's __dict__ is unchanged since. */
static int
state_get(PutPath *self)
{
    PyObject *d = self->store_dict;
#ifdef DICT_VERSION
    uint64_t v0 = DICT_VERSION(d);
    if (self->st.version != 0 && v0 == self->st.version)
        return 0;
#endif
    PyObject **slots[6] = {&self->st.running, &self->st.behind, &self->st.pending,
                           &self->st.limit, &self->st.call, &self->st.last_ts};
    PyObject *names[6] = {s_running, s__dispatch_behind, s__index_pending,
                          s_index_drain_limit, s__index_call, s_last_dispatched_timestamp};
    self->st.version = 0;
    for (int i = 0; i < 6; i++) {
        PyObject *v = PyDict_GetItemWithError(d, names[i]);
        if (v == NULL && PyErr_Occurred())
            return -1;
        Py_XSETREF(*slots[i], Py_XNewRef(v));
    }
#ifdef DICT_VERSION
    /* The version from before the reads: had a dealloc above changed the dict, the next
     * put reads it again. */
    self->st.version = v0;
#endif
    return 0;
}

/* store.<name> = v, keeping `self->st` current when it was (`slot`: its copy, or NULL). */
static int
store_set(PutPath *self, PyObject *name, PyObject *v, PyObject **slot)
{
    PyObject *d = self->store_dict;
#ifdef DICT_VERSION
    int was_current = self->st.version != 0 && DICT_VERSION(d) == self->st.version;
#endif
    if (PyDict_SetItem(d, name, v) < 0)
        return -1;
#ifdef DICT_VERSION
    if (was_current) {
        if (slot != NULL)
            Py_XSETREF(*slot, Py_NewRef(v));
        self->st.version = DICT_VERSION(d);
    }
#endif
    return 0;
}

/* A store attribute from `self->st` (new reference), AttributeError when missing: the
 * Python path would raise it too. */
static PyObject *
state_attr(PutPath *self, PyObject *const *slot, PyObject *name)
{
    if (state_get(self) < 0)
        return NULL;
    if (*slot == NULL) {
        PyErr_SetObject(PyExc_AttributeError, name);
        return NULL;
    }
    return Py_NewRef(*slot);
}

#endif
