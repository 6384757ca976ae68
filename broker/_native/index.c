/* The index service's batch path in C (broker/index/service.py build_index_pending and
 * broker/index/index_file.py put_entries): the key hashes of queued records and the
 * entry / hash-slot writes, byte for byte what the Python loops do.
 *
 * index_gather() stops at the first queued item it does not handle (KEYS with several
 * tokens, non-str properties, odd fields) and says where: the Python path
 * indexes that item and calls again. index_put_entries() checks every input before it
 * writes anything.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "index.h"
#include "index_columns.h"
#include "index_entries.h"
#include "store_numbers.h"

static PyObject *s_topic, *s_properties, *s_physical_offset, *s_store_timestamp;
static PyObject *s_records, *s_offsets, *s_ts;
/* array.array: index_gather returns its entries as arrays ('i' hashes, 'q' offsets and
 * stamps), one object each per call instead of three ints per entry. */
static PyObject *array_type;

int
store_index_init(void)
{
    PyObject *mod = PyImport_ImportModule("array");
    if (mod == NULL)
        return -1;
    array_type = PyObject_GetAttrString(mod, "array");
    Py_DECREF(mod);
    if (array_type == NULL)
        return -1;
    if (!(s_topic = PyUnicode_InternFromString("topic")) ||
        !(s_properties = PyUnicode_InternFromString("properties")) ||
        !(s_physical_offset = PyUnicode_InternFromString("physical_offset")) ||
        !(s_store_timestamp = PyUnicode_InternFromString("store_timestamp")) ||
        !(s_records = PyUnicode_InternFromString("records")) ||
        !(s_offsets = PyUnicode_InternFromString("offsets")) ||
        !(s_ts = PyUnicode_InternFromString("ts")))
        return -1;
    return 0;
}

/* IndexFile.indexKeyHashMethod of "topic#key": abs(hashCode), Integer.MIN_VALUE -> 0. */
static int
key_hash(PyObject *topic, PyObject *key, int32_t *out)
{
    uint32_t h;
    if (!index_hash_prefix(topic, &h) || !java_hash_more(&h, key))
        return 0;
    *out = index_hash_finish(h);
    return 1;
}

/* An int attribute as int64; 0 (no error) when it is not one. */
static int
attr_i64(PyObject *o, PyObject *name, int64_t *out)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) {
        PyErr_Clear();
        return 0;
    }
    int ok = 0;
    if (PyLong_Check(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (!overflow && !(x == -1 && PyErr_Occurred())) {
            *out = x;
            ok = 1;
        }
        PyErr_Clear();
    }
    Py_DECREF(v);
    return ok;
}

_Static_assert(sizeof(int) == 4 && sizeof(long long) == 8, "array typecodes 'i' and 'q'");

/* array.array(code, bytes of `n` items of `size` bytes at `data`) (new reference). */
static PyObject *
make_array(int code, const void *data, Py_ssize_t n, size_t size)
{
    PyObject *b = PyBytes_FromStringAndSize(data ? data : "", n * (Py_ssize_t)size);
    if (b == NULL)
        return NULL;
    PyObject *a = PyObject_CallFunction(array_type, "CO", code, b);
    Py_DECREF(b);
    return a;
}

/* The entries of one message (topic, properties, commitlog offset, store time), as
 * build_index_batch gathers them: appended to `out`, `*last` and `*done` advanced.
 * Returns 0, 1 when the message is not one this path takes (nothing appended, no error
 * set), -1 on error. */
static int
gather_msg(PyObject *topic, PyObject *props, int64_t off, int64_t ts, PyObject *keys_name,
           PyObject *uniq_name, entries_t *out, long long *last, Py_ssize_t *done)
{
    if (!PyUnicode_CheckExact(topic) || !PyDict_CheckExact(props))
        return 1;
    PyObject *keys = PyDict_GetItemWithError(props, keys_name);
    PyObject *uniq = keys || !PyErr_Occurred() ? PyDict_GetItemWithError(props, uniq_name)
                                               : NULL;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 1;
    }
    /* Only None or a str (Python's truth test and `in` of anything else may differ or
     * raise), and a KEYS without the separator. */
    if (keys == Py_None)
        keys = NULL;
    if (uniq == Py_None)
        uniq = NULL;
    if ((keys && !PyUnicode_CheckExact(keys)) || (uniq && !PyUnicode_CheckExact(uniq)))
        return 1;
    if (keys && PyUnicode_FindChar(keys, ' ', 0, PyUnicode_GET_LENGTH(keys), 1) != -1) {
        PyErr_Clear(); /* -2: an error, treated as "not ours" */
        return 1;
    }
    if (keys && PyUnicode_GET_LENGTH(keys) == 0)
        keys = NULL;
    if (uniq && PyUnicode_GET_LENGTH(uniq) == 0)
        uniq = NULL;
    if ((*last >= 0 && off <= *last) || !(keys || uniq))
        return 0;
    int32_t hu = 0, hk = 0;
    int with_uniq = !keys || (uniq && PyUnicode_Compare(uniq, keys) != 0);
    if ((with_uniq && !key_hash(topic, uniq, &hu)) || (keys && !key_hash(topic, keys, &hk)))
        return 1;
    if ((with_uniq && push(out, hu, off, ts) < 0) || (keys && push(out, hk, off, ts) < 0))
        return -1;
    *last = off;
    (*done)++;
    return 0;
}

/* A put_messages batch queued as (topic, BatchStamp): every record or none (the Python
 * path takes the whole item). */
static int
gather_batch(PyObject *item, PyObject *rec_type, PyObject *keys_name, PyObject *uniq_name,
             entries_t *out, long long *last, Py_ssize_t *done)
{
    if (PyTuple_GET_SIZE(item) != 2)
        return 1;
    PyObject *topic = PyTuple_GET_ITEM(item, 0), *stamp = PyTuple_GET_ITEM(item, 1);
    PyObject *recs = PyObject_GetAttr(stamp, s_records);
    PyObject *offs = recs ? PyObject_GetAttr(stamp, s_offsets) : NULL;
    int64_t ts;
    int rc = 1;
    if (!offs || !attr_i64(stamp, s_ts, &ts) || !PyList_CheckExact(recs) ||
        !PyList_CheckExact(offs) || PyList_GET_SIZE(recs) != PyList_GET_SIZE(offs)) {
        PyErr_Clear();
        goto done;
    }
    /* A record this path does not take leaves nothing: the entries gathered before it
     * are dropped again (n0). */
    Py_ssize_t n0 = out->n;
    long long tlast = *last;
    Py_ssize_t tdone = 0;
    rc = 0;
    for (Py_ssize_t k = 0; rc == 0 && k < PyList_GET_SIZE(recs); k++) {
        PyObject *r = PyList_GET_ITEM(recs, k);
        PyObject *o = PyList_GET_ITEM(offs, k);
        int overflow = 0;
        int64_t off = PyLong_CheckExact(o) ? PyLong_AsLongLongAndOverflow(o, &overflow) : 0;
        if (Py_TYPE(r) != (PyTypeObject *)rec_type || !PyLong_CheckExact(o) || overflow ||
            (off == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            rc = 1;
            break;
        }
        Py_INCREF(r);
        PyObject *props = PyObject_GetAttr(r, s_properties);
        if (props == NULL) {
            PyErr_Clear();
            rc = 1;
        } else {
            rc = gather_msg(topic, props, off, ts, keys_name, uniq_name, out, &tlast, &tdone);
            Py_DECREF(props);
        }
        Py_DECREF(r);
    }
    if (rc == 0) {
        *last = tlast;
        *done += tdone;
    } else {
        out->n = n0;
    }
done:
    Py_XDECREF(recs);
    Py_XDECREF(offs);
    return rc;
}

PyDoc_STRVAR(gather_doc,
"index_gather(pending, start, last, record_type, keys_name, uniq_name)\n"
"    -> (hashes, phys, stamps, indexed, stop, last)\n\n"
"hashes, phys and stamps are array.array('i'), ('q'), ('q') (parallel).\n"
"The index entries of pending[start:stop] as IndexService.build_index_batch gathers them\n"
"(UNIQ_KEY then KEYS, a KEYS equal to UNIQ_KEY once, records at or below `last` skipped);\n"
"an item is a `record_type`, a put_messages batch (topic, BatchStamp) or an IndexRun of\n"
"direct puts. Stops at the first\n"
"item with a record whose KEYS / UNIQ_KEY are not None or str (KEYS of one token): the\n"
"caller indexes pending[stop] itself.");

static PyObject *
index_gather(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *pending, *rec_type, *keys_name, *uniq_name;
    Py_ssize_t start;
    long long last;
    if (!PyArg_ParseTuple(args, "O!nLO!UU:index_gather", &PyList_Type, &pending, &start,
                          &last, &PyType_Type, &rec_type, &keys_name, &uniq_name))
        return NULL;
    entries_t out = {0};
    Py_ssize_t i = start < 0 ? 0 : start, done = 0;
    PyObject *arrays[3] = {NULL, NULL, NULL};
    for (; i < PyList_GET_SIZE(pending); i++) {
        PyObject *item = PyList_GET_ITEM(pending, i);
        int rc = 1;
        Py_INCREF(item);
        if (PyTuple_CheckExact(item)) {
            rc = gather_batch(item, rec_type, keys_name, uniq_name, &out, &last, &done);
        } else if (Py_TYPE(item) != (PyTypeObject *)rec_type) {
            rc = index_run_gather(item, &out, &last, &done);
        } else if (Py_TYPE(item) == (PyTypeObject *)rec_type) {
            PyObject *topic = PyObject_GetAttr(item, s_topic);
            PyObject *props = topic ? PyObject_GetAttr(item, s_properties) : NULL;
            int64_t off, ts;
            if (props && attr_i64(item, s_physical_offset, &off) &&
                attr_i64(item, s_store_timestamp, &ts))
                rc = gather_msg(topic, props, off, ts, keys_name, uniq_name, &out, &last,
                                &done);
            if (rc > 0)
                PyErr_Clear(); /* a stop, not an error: the Python path meets it again */
            Py_XDECREF(topic);
            Py_XDECREF(props);
        }
        Py_DECREF(item);
        if (rc < 0)
            goto error;
        if (rc > 0)
            break;
    }
    if (!(arrays[0] = make_array('i', out.h, out.n, sizeof(int32_t))) ||
        !(arrays[1] = make_array('q', out.p, out.n, sizeof(int64_t))) ||
        !(arrays[2] = make_array('q', out.t, out.n, sizeof(int64_t))))
        goto error;
    ent_free(&out);
    return Py_BuildValue("NNNnnL", arrays[0], arrays[1], arrays[2], done, i, last);
error:
    ent_free(&out);
    Py_XDECREF(arrays[0]);
    Py_XDECREF(arrays[1]);
    Py_XDECREF(arrays[2]);
    return NULL;
}

PyDoc_STRVAR(put_entries_doc,
"index_put_entries(mm, hashes, phys, stamps, start, stop, slots, base, count, begin_ts,\n"
"                  begin_phy, slot_count) -> (count, begin_ts, begin_phy, slot_count)\n\n"
"IndexFile.put_entries' loop: entries start..stop-1 (columns: lists of ints or the\n"
"arrays index_gather returns) written at `base` + count * 20 and\n"
"chained from their hash slots; returns the header values after them (the caller writes\n"
"the header). Every value and position is checked before the first write.");

static PyObject *
index_put_entries(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *mm, *hashes, *phys, *stamps;
    Py_ssize_t start, stop;
    long long slots, base, count, begin_ts, begin_phy, slot_count;
    if (!PyArg_ParseTuple(args, "OOOOnnLLLLLL:index_put_entries", &mm, &hashes, &phys, &stamps,
                          &start, &stop, &slots, &base, &count, &begin_ts, &begin_phy,
                          &slot_count))
        return NULL;
    column_t cols[3];
    int opened = 0;
    PyObject *result = NULL;
    int64_t *vals = NULL;
    Py_buffer view;
    int has_view = 0;
    if (column_open(hashes, 4, &cols[0]) < 0)
        goto done;
    opened = 1;
    if (column_open(phys, 8, &cols[1]) < 0)
        goto done;
    opened = 2;
    if (column_open(stamps, 8, &cols[2]) < 0)
        goto done;
    opened = 3;
    if (start < 0 || stop < start || stop > column_len(&cols[0]) ||
        stop > column_len(&cols[1]) || stop > column_len(&cols[2]) || slots <= 0 ||
        base < 40 || count < 0 || count > INT32_MAX - (stop - start)) {
        PyErr_SetString(PyExc_ValueError, "index_put_entries: bad arguments");
        goto done;
    }
    Py_ssize_t n = stop - start;
    vals = PyMem_Malloc(sizeof(int64_t) * 3 * (size_t)(n ? n : 1));
    if (vals == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (PyObject_GetBuffer(mm, &view, PyBUF_WRITABLE) < 0)
        goto done;
    has_view = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!column_i64(&cols[0], start + i, INT32_MIN, INT32_MAX, &vals[3 * i]) ||
            !column_i64(&cols[1], start + i, INT64_MIN, INT64_MAX, &vals[3 * i + 1]) ||
            !column_i64(&cols[2], start + i, INT64_MIN, INT64_MAX, &vals[3 * i + 2]))
            goto done;
    }
    if (40 + slots * 4 > view.len || base + (count + n) * 20 > view.len) {
        PyErr_SetString(PyExc_ValueError, "index_put_entries: beyond the mapping");
        goto done;
    }
    unsigned char *buf = view.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t key_hash = vals[3 * i], phy = vals[3 * i + 1], ts = vals[3 * i + 2];
        int64_t slot = key_hash % slots; /* Python's modulo: never negative */
        if (slot < 0)
            slot += slots;
        unsigned char *sp = buf + 40 + slot * 4;
        int64_t slot_value = get_i32(sp);
        if (slot_value <= 0 || slot_value > count) {
            slot_value = 0;
            slot_count++;
        }
        int64_t time_diff = 0;
        if (begin_ts > 0) {
            /* (ts - begin_ts) // 1000 with Python's floor, clamped to [0, INT_MAX]. */
            int64_t d = ts - begin_ts;
            time_diff = d / 1000 - (d % 1000 != 0 && d < 0);
            if (time_diff < 0)
                time_diff = 0;
            else if (time_diff > INT32_MAX)
                time_diff = INT32_MAX;
        }
        unsigned char *e = buf + base + count * 20;
        put_i32(e, (int32_t)key_hash);
        put_i64(e + 4, phy);
        put_i32(e + 12, (int32_t)time_diff);
        put_i32(e + 16, (int32_t)slot_value);
        put_i32(sp, (int32_t)count);
        if (count <= 1) {
            begin_phy = phy;
            begin_ts = ts;
        }
        count++;
    }
    result = Py_BuildValue("LLLL", count, begin_ts, begin_phy, slot_count);
done:
    if (has_view)
        PyBuffer_Release(&view);
    for (int k = 0; k < opened; k++)
        column_close(&cols[k]);
    PyMem_Free(vals);
    return result;
}

PyMethodDef store_index_methods[] = {
    {"index_gather", index_gather, METH_VARARGS, gather_doc},
    {"index_put_entries", index_put_entries, METH_VARARGS, put_entries_doc},
    {NULL, NULL, 0, NULL},
};
