/* Attribute access without the generic getattr machinery (most of a put's cost otherwise).
 *
 * MessageRecord and MappedFile use __slots__: their fields are read and written at the
 * offsets their member descriptors declare, for objects of exactly those types. The store,
 * commitlog, mapped-file queue and flush service keep theirs in the instance __dict__,
 * which is fetched once; PutPath() checks that their classes define none of those names
 * (a class-level descriptor would take precedence over the dict).
 *
 * The slot offsets and instance dicts are found once (store_attrs.c); the reads and writes
 * are the inline helpers below.
 */
#ifndef RMQ_EMU_STORE_ATTRS_H
#define RMQ_EMU_STORE_ATTRS_H

#include <Python.h>

/* The tuple-keyed dicts (topic_queue_table, _cq_cache) are probed with the key's hash
 * computed once per key, not once per probe. */
#if PY_VERSION_HEX < 0x030D0000
#define DICT_GET_H(d, k, h) _PyDict_GetItem_KnownHash((d), (k), (h))
#define DICT_SET_H(d, k, v, h) _PyDict_SetItem_KnownHash((d), (k), (v), (h))
#else
#define DICT_GET_H(d, k, h) PyDict_GetItemWithError((d), (k))
#define DICT_SET_H(d, k, v, h) PyDict_SetItem((d), (k), (v))
#endif

/* CPython 3.11's dict version tag (changed by every mutation of the dict): lets the C path
 * keep the store's flags between puts while the store's __dict__ is untouched. */
#if PY_VERSION_HEX < 0x030C0000
#define DICT_VERSION(d) (((PyDictObject *)(d))->ma_version_tag)
#endif

enum {
    R_topic, R_body, R_queue_id, R_flag, R_properties, R_sys_flag, R_born_timestamp,
    R_born_host, R_store_host, R_reconsume_times, R_prepared_transaction_offset,
    R_properties_str, R_store_timestamp, R_body_crc, R_physical_offset, R_queue_offset,
    R_total_size, R_magic_code, R_N
};
enum {
    M_wrote_position, M_file_size, M_file_from_offset, M_mm, M_last_modified,
    M_first_create_in_queue, M_N
};

/* The names of those fields, and the attributes each object keeps in its __dict__
 * (NULL-terminated; store_attrs.c). */
#pragma GCC visibility push(hidden) /* shared between this module's files only */
extern PyObject **const rec_names[R_N];
extern PyObject **const mf_names[M_N];
extern PyObject **const store_names[], **const cl_names[], **const files_names[],
    **const queue_names[], **const flush_names[], **const cq_names[];

int slot_offsets(PyTypeObject *tp, PyObject **const *names, int n, Py_ssize_t *out);
PyObject *instance_dict(PyObject *obj, PyObject **const *names);
#pragma GCC visibility pop

/* A slot's value as a new reference (NULL, no error, when unset). */
static inline PyObject *
slot_get(PyObject *o, Py_ssize_t off)
{
    PyObject *v = *(PyObject **)((char *)o + off);
    Py_XINCREF(v);
    return v;
}

static inline void
slot_set(PyObject *o, Py_ssize_t off, PyObject *v)
{
    PyObject **p = (PyObject **)((char *)o + off), *old = *p;
    Py_INCREF(v);
    *p = v;
    Py_XDECREF(old);
}

/* A dict item as a new reference; NULL (maybe with an error) when missing. */
static inline PyObject *
dict_get(PyObject *d, PyObject *name)
{
    PyObject *v = PyDict_GetItemWithError(d, name);
    Py_XINCREF(v);
    return v;
}

#endif
