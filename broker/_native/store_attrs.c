/* Where the put path's attributes live: the slot offsets of MessageRecord / MappedFile and
 * the instance __dict__ of the store's other objects, found once (see store_attrs.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "store_attrs.h"
#include "store_names.h"

PyObject **const rec_names[R_N] = {
    &s_topic, &s_body, &s_queue_id, &s_flag, &s_properties, &s_sys_flag, &s_born_timestamp,
    &s_born_host, &s_store_host, &s_reconsume_times, &s_prepared_transaction_offset,
    &s_properties_str, &s_store_timestamp, &s_body_crc, &s_physical_offset, &s_queue_offset,
    &s_total_size, &s_magic_code,
};
PyObject **const mf_names[M_N] = {
    &s_wrote_position, &s_file_size, &s_file_from_offset, &s_mm, &s_last_modified,
    &s_first_create_in_queue,
};

/* Offsets of writable object slots `names` of `tp`; -1 with TypeError otherwise. */
int
slot_offsets(PyTypeObject *tp, PyObject **const *names, int n, Py_ssize_t *out)
{
    for (int i = 0; i < n; i++) {
        PyObject *d = PyObject_GetAttr((PyObject *)tp, *names[i]);
        if (d == NULL)
            return -1;
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type);
        if (ok) {
            PyMemberDescrObject *md = (PyMemberDescrObject *)d;
            ok = md->d_member->type == T_OBJECT_EX && !(md->d_member->flags & READONLY) &&
                 PyType_IsSubtype(tp, PyDescr_TYPE(d));
            out[i] = md->d_member->offset;
        }
        Py_DECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%U is not a plain __slots__ field", tp->tp_name,
                         *names[i]);
            return -1;
        }
    }
    return 0;
}

/* The instance __dict__ of `obj` (new reference) after checking its class defines none of
 * `names` (NULL-terminated). */
PyObject *
instance_dict(PyObject *obj, PyObject **const *names)
{
    for (; *names != NULL; names++) {
        /* The class's MRO, as attribute lookup on an instance sees it (a data descriptor
         * there would shadow the instance __dict__); no AttributeError is raised and
         * cleared for the usual "not defined", which made this cost ~1 us. */
        if (_PyType_Lookup(Py_TYPE(obj), **names) != NULL) {
            PyErr_Format(PyExc_TypeError, "%s defines %U at class level",
                         Py_TYPE(obj)->tp_name, **names);
            return NULL;
        }
    }
    PyObject *d = PyObject_GenericGetDict(obj, NULL);
    if (d != NULL && !PyDict_CheckExact(d)) {
        Py_DECREF(d);
        PyErr_SetString(PyExc_TypeError, "instance __dict__ is not a dict");
        return NULL;
    }
    return d;
}

PyObject **const store_names[] = {
    &s_running, &s__dispatch_behind, &s__index_pending, &s_index_drain_limit, &s__index_call,
    &s_last_dispatched_timestamp, NULL,
};
PyObject **const cl_names[] = {&s_last_store_timestamp, NULL};
PyObject **const files_names[] = {&s_files, NULL};
PyObject **const queue_names[] = {&s_files, &s_flushed_where, NULL};
PyObject **const flush_names[] = {&s__soon_call, NULL};
PyObject **const cq_names[] = {&s_max_physic_offset, NULL};
