/* The store's put path in C: MessageStore.put_message for the plain case.
 *
 * `PutPath(store, fallback, ...)` wraps one MessageStore; its `put(record)` does what the
 * IPv4 hot path of CommitLog.append plus the plain consume-queue case of
 * StoreDispatch._dispatch do, reading and writing the very same Python attributes (mapped
 * file positions, topic_queue_table, consume-queue max_physic_offset, the record's store
 * fields, the index pending list...): the Python objects stay the only state, so the Python
 * path can take over at any put.
 *
 * Every condition of the plain case is checked BEFORE the first side effect; when one does
 * not hold (a first put of a topic, host pair or queue whose caches the Python path fills; a
 * file roll; IPv6 hosts; the schedule topic; PREPARED/ROLLBACK records; non-str properties;
 * a body that is not bytes; anything odd) the record goes to `fallback` (the Python
 * put_message) untouched. Errors raised while checking are cleared for the same reason:
 * the Python path meets them again and reports them as it always does.
 *
 * The bytes written are those of commitlog.py / encoder.py (big-endian fixed fields, body,
 * topic block, PROPERTIESLENGTH, properties), TOTALSIZE last: a process killed mid-write
 * leaves TOTALSIZE 0, which readers and recovery take as the end of data.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Interned attribute names (looked up once at import).                                      */

#define NAMES(X)                                                                             \
    X(running) X(_max_body) X(_dispatch_behind) X(index) X(_index_pending)                   \
    X(index_drain_limit) X(_index_call) X(reactor) X(_drain_index) X(callLater)              \
    X(last_dispatched_timestamp) X(files) X(wrote_position) X(file_size) X(file_from_offset) \
    X(mm) X(last_modified) X(first_create_in_queue) X(mfq) X(max_physic_offset)              \
    X(mapped_file_size) X(_last_born) X(_last_store) X(_last_pair) X(last_store_timestamp)   \
    X(seconds) X(topic) X(body) X(queue_id) X(flag) X(properties) X(sys_flag)                \
    X(born_timestamp) X(born_host) X(store_host) X(reconsume_times)                          \
    X(prepared_transaction_offset) X(properties_str) X(store_timestamp) X(body_crc)          \
    X(physical_offset) X(queue_offset) X(total_size) X(magic_code) X(TAGS) X(active)         \
    X(on_append) X(commitlog) X(queue) X(topic_queue_table) X(encoder) X(_topics) X(_pairs)  \
    X(_cq_cache) X(_listeners) X(flush_service) X(clock)

#define DECLARE(n) static PyObject *s_##n;
NAMES(DECLARE)
#undef DECLARE

static int
intern_names(void)
{
#define INTERN(n)                                                                            \
    if (!(s_##n = PyUnicode_InternFromString(#n))) return -1;
    NAMES(INTERN)
#undef INTERN
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Big-endian stores (the commitlog and consume-queue formats are Java's).                  */

static inline void
put_i16(unsigned char *p, int32_t v)
{
    uint16_t u = (uint16_t)v;
    p[0] = (unsigned char)(u >> 8);
    p[1] = (unsigned char)u;
}

static inline void
put_i32(unsigned char *p, int32_t v)
{
    uint32_t u = (uint32_t)v;
    p[0] = (unsigned char)(u >> 24);
    p[1] = (unsigned char)(u >> 16);
    p[2] = (unsigned char)(u >> 8);
    p[3] = (unsigned char)u;
}

static inline void
put_i64(unsigned char *p, int64_t v)
{
    put_i32(p, (int32_t)(uint32_t)((uint64_t)v >> 32));
    put_i32(p + 4, (int32_t)(uint32_t)(uint64_t)v);
}

/* ---------------------------------------------------------------------------------------- */
/* Per-put scratch: every new reference taken while checking is kept here and dropped at   */
/* the end, so the many early exits need no per-object cleanup.                             */

#define MAX_REFS 96

typedef struct {
    PyObject *refs[MAX_REFS];
    int n;
    Py_buffer cl_view, cq_view;
    int cl_held, cq_held;
} Scratch;

/* Keep a new reference (NULL passes through: the caller treats it as "not plain"). */
static PyObject *
keep(Scratch *s, PyObject *o)
{
    if (o == NULL)
        return NULL;
    if (s->n == MAX_REFS) { /* cannot happen with the fixed count below; stay safe anyway */
        Py_DECREF(o);
        PyErr_SetString(PyExc_RuntimeError, "put path scratch full");
        return NULL;
    }
    s->refs[s->n++] = o;
    return o;
}

static void
scratch_release(Scratch *s)
{
    if (s->cl_held) {
        PyBuffer_Release(&s->cl_view);
        s->cl_held = 0;
    }
    if (s->cq_held) {
        PyBuffer_Release(&s->cq_view);
        s->cq_held = 0;
    }
    while (s->n > 0)
        Py_DECREF(s->refs[--s->n]);
}


/* An int attribute as a C int64 within [lo, hi]; 0 when it is not one (error cleared). */
static int
as_i64(PyObject *o, int64_t lo, int64_t hi, int64_t *out)
{
    if (o == NULL || !PyLong_Check(o))
        return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred()) || v < lo || v > hi) {
        PyErr_Clear();
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

#define I32_OK(o, out) as_i64((o), INT32_MIN, INT32_MAX, (out))
#define I64_OK(o, out) as_i64((o), INT64_MIN, INT64_MAX, (out))

/* Java String.hashCode over the UTF-16 code units of `s` (the consume queue's tagsCode);
 * 0 when `s` holds a lone surrogate (Python's UTF-16 encode raises: let it). */
static int
java_hash(PyObject *s, int32_t *out)
{
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    uint32_t h = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x10000) {
            if (c >= 0xD800 && c <= 0xDFFF)
                return 0;
            h = 31 * h + c;
        } else {
            c -= 0x10000;
            h = 31 * h + (0xD800 + (c >> 10));
            h = 31 * h + (0xDC00 + (c & 0x3FF));
        }
    }
    *out = (int32_t)h;
    return 1;
}

/* ---------------------------------------------------------------------------------------- */
/* Attribute access without the generic getattr machinery (most of a put's cost otherwise). */
/*                                                                                          */
/* MessageRecord and MappedFile use __slots__: their fields are read and written at the     */
/* offsets their member descriptors declare, for objects of exactly those types. The store, */
/* commitlog, mapped-file queue and flush service keep theirs in the instance __dict__,     */
/* which is fetched once; PutPath() checks that their classes define none of those names    */
/* (a class-level descriptor would take precedence over the dict).                          */

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

static PyObject **const rec_names[R_N] = {
    &s_topic, &s_body, &s_queue_id, &s_flag, &s_properties, &s_sys_flag, &s_born_timestamp,
    &s_born_host, &s_store_host, &s_reconsume_times, &s_prepared_transaction_offset,
    &s_properties_str, &s_store_timestamp, &s_body_crc, &s_physical_offset, &s_queue_offset,
    &s_total_size, &s_magic_code,
};
static PyObject **const mf_names[M_N] = {
    &s_wrote_position, &s_file_size, &s_file_from_offset, &s_mm, &s_last_modified,
    &s_first_create_in_queue,
};

/* Offsets of writable object slots `names` of `tp`; -1 with TypeError otherwise. */
static int
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

/* The instance __dict__ of `obj` (new reference) after checking its class defines none of
 * `names` (NULL-terminated). */
static PyObject *
instance_dict(PyObject *obj, PyObject **const *names)
{
    for (; *names != NULL; names++) {
        int has = PyObject_HasAttr((PyObject *)Py_TYPE(obj), **names);
        if (has) {
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

static PyObject **const store_names[] = {
    &s_running, &s__max_body, &s__dispatch_behind, &s_index, &s__index_pending,
    &s_index_drain_limit, &s__index_call, &s_reactor, &s_last_dispatched_timestamp, NULL,
};
static PyObject **const cl_names[] = {
    &s__last_born, &s__last_store, &s__last_pair, &s_mapped_file_size,
    &s_last_store_timestamp, NULL,
};
static PyObject **const queue_names[] = {&s_files, NULL};
static PyObject **const flush_names[] = {&s_active, NULL};

/* ---------------------------------------------------------------------------------------- */
/* The PutPath object.                                                                       */

typedef struct {
    PyObject_HEAD
    /* Given by the caller. */
    PyObject *store, *fallback, *crc, *append_type, *put_type, *append_ok, *put_ok;
    PyObject *schedule_topic, *listener_failed, *rec_type, *mf_type;
    /* Objects the store creates once in __init__ and never replaces (only mutates). */
    PyObject *commitlog, *table, *topics, *pairs, *cq_cache, *listeners, *flush, *seconds;
    PyObject *store_dict, *cl_dict, *queue_dict, *flush_dict;
    Py_ssize_t rec_off[R_N], mf_off[M_N];
} PutPath;

#define FIELDS(X)                                                                            \
    X(store) X(fallback) X(crc) X(append_type) X(put_type) X(append_ok) X(put_ok)            \
    X(schedule_topic) X(listener_failed) X(rec_type) X(mf_type) X(commitlog) X(table)        \
    X(topics) X(pairs) X(cq_cache) X(listeners) X(flush) X(seconds) X(store_dict) X(cl_dict) \
    X(queue_dict) X(flush_dict)

static int
putpath_traverse(PutPath *self, visitproc visit, void *arg)
{
#define VISIT(f) Py_VISIT(self->f);
    FIELDS(VISIT)
#undef VISIT
    return 0;
}

static int
putpath_clear(PutPath *self)
{
#define CLEAR(f) Py_CLEAR(self->f);
    FIELDS(CLEAR)
#undef CLEAR
    return 0;
}

static void
putpath_dealloc(PutPath *self)
{
    PyObject_GC_UnTrack(self);
    putpath_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
putpath_init(PutPath *self, PyObject *args, PyObject *kwds)
{
    PyObject *store, *fallback, *crc, *append_type, *put_type, *append_ok, *put_ok, *sched,
        *failed, *rec_type, *mf_type;
    static char *kwlist[] = {"store", "fallback", "crc32", "append_result", "put_result",
                             "append_ok", "put_ok", "schedule_topic", "listener_failed",
                             "record_type", "mapped_file_type", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO!O!OOUOO!O!:PutPath", kwlist, &store,
                                     &fallback, &crc, &PyType_Type, &append_type, &PyType_Type,
                                     &put_type, &append_ok, &put_ok, &sched, &failed,
                                     &PyType_Type, &rec_type, &PyType_Type, &mf_type))
        return -1;
    /* Results are built as the Python path builds them (tuple.__new__), so both types
     * must be tuple subclasses whose instances are nothing but the tuple. */
    PyTypeObject *types[2] = {(PyTypeObject *)append_type, (PyTypeObject *)put_type};
    for (int i = 0; i < 2; i++) {
        if (!PyType_IsSubtype(types[i], &PyTuple_Type) ||
            types[i]->tp_basicsize != PyTuple_Type.tp_basicsize) {
            PyErr_SetString(PyExc_TypeError, "result types must be tuple subclasses with "
                                             "__slots__ = ()");
            return -1;
        }
    }
    putpath_clear(self);
    if (slot_offsets((PyTypeObject *)rec_type, rec_names, R_N, self->rec_off) < 0 ||
        slot_offsets((PyTypeObject *)mf_type, mf_names, M_N, self->mf_off) < 0)
        return -1;
#define SET(f, v) (Py_INCREF(v), self->f = (v))
    SET(store, store);
    SET(fallback, fallback);
    SET(crc, crc);
    SET(append_type, append_type);
    SET(put_type, put_type);
    SET(append_ok, append_ok);
    SET(put_ok, put_ok);
    SET(schedule_topic, sched);
    SET(listener_failed, failed);
    SET(rec_type, rec_type);
    SET(mf_type, mf_type);
#undef SET
    PyObject *cl = NULL, *enc = NULL, *queue = NULL, *clock = NULL;
    int rc = -1;
    if (!(cl = PyObject_GetAttr(store, s_commitlog)) ||
        !(enc = PyObject_GetAttr(cl, s_encoder)) ||
        !(queue = PyObject_GetAttr(cl, s_queue)) ||
        !(clock = PyObject_GetAttr(cl, s_clock)) ||
        !(self->seconds = PyObject_GetAttr(clock, s_seconds)) ||
        !(self->table = PyObject_GetAttr(cl, s_topic_queue_table)) ||
        !(self->topics = PyObject_GetAttr(enc, s__topics)) ||
        !(self->pairs = PyObject_GetAttr(enc, s__pairs)) ||
        !(self->cq_cache = PyObject_GetAttr(store, s__cq_cache)) ||
        !(self->listeners = PyObject_GetAttr(store, s__listeners)) ||
        !(self->flush = PyObject_GetAttr(store, s_flush_service)) ||
        !(self->store_dict = instance_dict(store, store_names)) ||
        !(self->cl_dict = instance_dict(cl, cl_names)) ||
        !(self->queue_dict = instance_dict(queue, queue_names)) ||
        !(self->flush_dict = instance_dict(self->flush, flush_names)))
        goto done;
    if (!PyDict_CheckExact(self->table) || !PyDict_CheckExact(self->topics) ||
        !PyDict_CheckExact(self->pairs) || !PyDict_CheckExact(self->cq_cache) ||
        !PyList_CheckExact(self->listeners)) {
        PyErr_SetString(PyExc_TypeError, "PutPath: unexpected store layout");
        goto done;
    }
    self->commitlog = cl;
    cl = NULL;
    rc = 0;
done:
    Py_XDECREF(cl);
    Py_XDECREF(enc);
    Py_XDECREF(queue);
    Py_XDECREF(clock);
    return rc;
}

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

/* Arrival listeners, as StoreDispatch._dispatch calls them: in list order (a listener
 * removing itself is seen as Python's list iterator sees it); an Exception is logged by
 * the Python helper and the next listener runs; a BaseException propagates. */
static int
call_listeners(PutPath *self, PyObject *const *args)
{
    PyObject *ls = self->listeners;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ls); i++) {
        PyObject *fn = PyList_GET_ITEM(ls, i);
        Py_INCREF(fn);
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

/* A store attribute (new reference), AttributeError when missing: the Python path would
 * raise it too. */
static PyObject *
store_attr(PutPath *self, PyObject *name)
{
    PyObject *v = PyDict_GetItemWithError(self->store_dict, name);
    if (v == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_AttributeError, name);
        return NULL;
    }
    Py_INCREF(v);
    return v;
}

/* Queue the record for the index as _dispatch does: drained inline past the limit, else on
 * the next reactor turn. */
static int
queue_index(PutPath *self, PyObject *rec)
{
    PyObject *store = self->store;
    PyObject *index = store_attr(self, s_index);
    if (index == NULL)
        return -1;
    int is_none = index == Py_None;
    Py_DECREF(index);
    if (is_none)
        return 0;
    PyObject *pending = store_attr(self, s__index_pending);
    if (pending == NULL)
        return -1;
    int rc = -1;
    PyObject *limit = NULL, *call = NULL, *reactor = NULL, *running = NULL, *drain = NULL;
    PyObject *r = NULL, *nobj = NULL;
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
    if (n < 0 || !(limit = store_attr(self, s_index_drain_limit)))
        goto done;
    int over;
    if (PyLong_CheckExact(limit)) {
        int overflow;
        long long lim = PyLong_AsLongLongAndOverflow(limit, &overflow);
        over = overflow > 0 ? 0 : overflow < 0 ? 1 : n >= lim;
    } else {
        if (!(nobj = PyLong_FromSsize_t(n)))
            goto done;
        if ((over = PyObject_RichCompareBool(nobj, limit, Py_GE)) < 0)
            goto done;
    }
    if (over) {
        if (!(r = PyObject_CallMethodNoArgs(store, s__drain_index)))
            goto done;
        rc = 0;
        goto done;
    }
    if (!(call = store_attr(self, s__index_call)) || !(reactor = store_attr(self, s_reactor)) ||
        !(running = store_attr(self, s_running)))
        goto done;
    if (call == Py_None && reactor != Py_None) {
        int truth = PyObject_IsTrue(running);
        if (truth < 0)
            goto done;
        if (truth) {
            if (!(drain = PyObject_GetAttr(store, s__drain_index)))
                goto done;
            PyObject *zero = PyLong_FromLong(0);
            if (zero == NULL)
                goto done;
            r = PyObject_CallMethodObjArgs(reactor, s_callLater, zero, drain, NULL);
            Py_DECREF(zero);
            if (r == NULL || PyDict_SetItem(self->store_dict, s__index_call, r) < 0)
                goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(nobj);
    Py_XDECREF(r);
    Py_XDECREF(drain);
    Py_XDECREF(running);
    Py_XDECREF(reactor);
    Py_XDECREF(call);
    Py_XDECREF(limit);
    Py_DECREF(pending);
    return rc;
}

/* The properties of a record as the bytes the commitlog stores: `properties_str` (UTF-8)
 * when set, else the dict as name\x01value\x02..., in dict order (encoder.props_string for
 * str keys and values; anything else is the Python path's job). `write` NULL: only measure.
 * Returns the length, or -1 when not the plain case (no error set). */
static Py_ssize_t
props_bytes(PyObject *ps, PyObject *props, unsigned char *write)
{
    Py_ssize_t len;
    if (ps != Py_None) {
        if (!PyUnicode_CheckExact(ps))
            return -1;
        const char *u = PyUnicode_AsUTF8AndSize(ps, &len);
        if (u == NULL) {
            PyErr_Clear(); /* lone surrogates: Python's encode raises it */
            return -1;
        }
        if (write != NULL)
            memcpy(write, u, (size_t)len);
        return len;
    }
    Py_ssize_t pos = 0, total = 0;
    PyObject *k, *v;
    int first = 1;
    while (PyDict_Next(props, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k) || !PyUnicode_CheckExact(v))
            return -1;
        Py_ssize_t kl, vl;
        const char *ku = PyUnicode_AsUTF8AndSize(k, &kl);
        const char *vu = ku ? PyUnicode_AsUTF8AndSize(v, &vl) : NULL;
        if (vu == NULL) {
            PyErr_Clear();
            return -1;
        }
        if (kl + vl > 65536) /* far past the 32767 limit: no overflow in the sums below */
            return -1;
        if (!first) {
            if (write != NULL)
                write[total] = 0x02;
            total++;
        }
        first = 0;
        if (write != NULL) {
            memcpy(write + total, ku, (size_t)kl);
            write[total + kl] = 0x01;
            memcpy(write + total + kl + 1, vu, (size_t)vl);
        }
        total += kl + 1 + vl;
        if (total > 65536)
            return -1;
    }
    return total;
}

#define FALLBACK goto fallback
#define REC(f) keep(&sc, slot_get(rec, self->rec_off[R_##f]))
#define MF(o, f) keep(&sc, slot_get((o), self->mf_off[M_##f]))
#define DGET(d, name) keep(&sc, dict_get((d), s_##name))

/* A dict item as a new reference; NULL (maybe with an error) when missing. */
static inline PyObject *
dict_get(PyObject *d, PyObject *name)
{
    PyObject *v = PyDict_GetItemWithError(d, name);
    Py_XINCREF(v);
    return v;
}

PyDoc_STRVAR(put_doc,
"put(record) -> PutMessageResult\n\n"
"MessageStore.put_message: the plain case in C (same bytes, same attribute updates as\n"
"the Python path), any other case through the Python put_message given as fallback.");

static PyObject *
putpath_put(PutPath *self, PyObject *rec)
{
    Scratch sc;
    sc.n = 0;
    sc.cl_held = sc.cq_held = 0;
    PyObject *result = NULL;

    /* --- checks: nothing below changes any state until "side effects" ------------------- */
    if (Py_TYPE(rec) != (PyTypeObject *)self->rec_type)
        FALLBACK;
    if (DGET(self->store_dict, running) != Py_True)
        FALLBACK;
    PyObject *body = REC(body);
    if (body == NULL || !PyBytes_CheckExact(body))
        FALLBACK;
    Py_ssize_t blen = PyBytes_GET_SIZE(body);
    int64_t max_body;
    if (!I64_OK(DGET(self->store_dict, _max_body), &max_body) || blen > max_body)
        FALLBACK;
    if (DGET(self->store_dict, _dispatch_behind) != Py_None)
        FALLBACK;

    /* Hosts: the commitlog's packed-pair caches (filled by the Python path). */
    PyObject *born = REC(born_host), *storeh = REC(store_host);
    PyObject *lb = DGET(self->cl_dict, _last_born), *ls = DGET(self->cl_dict, _last_store);
    if (!born || !storeh || !lb || !ls)
        FALLBACK;
    PyObject *pair;
    int eq1 = PyObject_RichCompareBool(born, lb, Py_EQ);
    int eq2 = eq1 > 0 ? PyObject_RichCompareBool(storeh, ls, Py_EQ) : eq1;
    if (eq2 < 0)
        FALLBACK;
    if (eq2) {
        pair = DGET(self->cl_dict, _last_pair);
    } else {
        PyObject *key = keep(&sc, PyTuple_Pack(2, born, storeh));
        pair = key ? keep(&sc, dict_get(self->pairs, key)) : NULL;
    }
    if (pair == NULL || !PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 4 ||
        PyTuple_GET_ITEM(pair, 3) != Py_True)
        FALLBACK; /* not cached yet, or IPv6 */
    PyObject *born_b = PyTuple_GET_ITEM(pair, 0), *store_b = PyTuple_GET_ITEM(pair, 1);
    if (!PyBytes_CheckExact(born_b) || PyBytes_GET_SIZE(born_b) != 8 ||
        !PyBytes_CheckExact(store_b) || PyBytes_GET_SIZE(store_b) != 8)
        FALLBACK;

    /* Topic block and magic from the encoder's cache; the schedule topic's tagsCode is
     * the deliver time, computed in Python. */
    PyObject *topic = REC(topic);
    if (topic == NULL || !PyUnicode_CheckExact(topic) ||
        PyUnicode_Compare(topic, self->schedule_topic) == 0)
        FALLBACK;
    PyObject *topic_t = keep(&sc, dict_get(self->topics, topic));
    if (topic_t == NULL || !PyTuple_CheckExact(topic_t) || PyTuple_GET_SIZE(topic_t) != 2)
        FALLBACK;
    PyObject *tb = PyTuple_GET_ITEM(topic_t, 0), *magic_obj = PyTuple_GET_ITEM(topic_t, 1);
    int64_t magic;
    if (!PyBytes_CheckExact(tb) || !I32_OK(magic_obj, &magic))
        FALLBACK;
    Py_ssize_t tblen = PyBytes_GET_SIZE(tb);

    /* Transactions: PREPARED / ROLLBACK take no queue offset and no consume-queue unit. */
    int64_t sys_flag, qid, flag, born_ts, reconsume, prep_off;
    if (!I64_OK(REC(sys_flag), &sys_flag))
        FALLBACK;
    int64_t tx = sys_flag & 0xC;
    if (tx == 0x4 || tx == 0xC)
        FALLBACK;
    sys_flag &= ~(int64_t)0x30; /* both hosts IPv4: the V6 bits cleared */
    if (sys_flag < INT32_MIN || sys_flag > INT32_MAX)
        FALLBACK;
    PyObject *qid_obj = REC(queue_id);
    if (!I32_OK(qid_obj, &qid) || !I32_OK(REC(flag), &flag) ||
        !I64_OK(REC(born_timestamp), &born_ts) || !I32_OK(REC(reconsume_times), &reconsume) ||
        !I64_OK(REC(prepared_transaction_offset), &prep_off))
        FALLBACK;

    /* Properties and the TAGS hash. */
    PyObject *props = REC(properties), *ps = REC(properties_str);
    if (props == NULL || ps == NULL || !PyDict_CheckExact(props))
        FALLBACK;
    Py_ssize_t plen = props_bytes(ps, props, NULL);
    if (plen < 0 || plen > 32767)
        FALLBACK;
    int32_t tags = 0;
    PyObject *tag = keep(&sc, dict_get(props, s_TAGS));
    if (tag == NULL && PyErr_Occurred())
        FALLBACK;
    if (tag != NULL && tag != Py_None) {
        if (!PyUnicode_CheckExact(tag))
            FALLBACK;
        if (PyUnicode_GET_LENGTH(tag) > 0 && !java_hash(tag, &tags))
            FALLBACK;
    }

    /* Queue offset (the key is the Python path's (topic, queueId)). */
    PyObject *key = keep(&sc, PyTuple_Pack(2, topic, qid_obj));
    if (key == NULL)
        FALLBACK;
    int64_t qoff = 0;
    PyObject *qv = keep(&sc, dict_get(self->table, key));
    if (qv == NULL && PyErr_Occurred())
        FALLBACK;
    if (qv != NULL && !as_i64(qv, 0, INT64_MAX - 1, &qoff))
        FALLBACK;

    /* Room in the last commitlog file (else the Python path writes the BLANK and rolls). */
    int64_t size = 90 + (int64_t)blen + tblen + plen, mfs, wp, fsz, ffo;
    if (!I64_OK(DGET(self->cl_dict, mapped_file_size), &mfs) || size + 8 > mfs)
        FALLBACK;
    PyObject *files = DGET(self->queue_dict, files);
    if (files == NULL || !PyList_CheckExact(files) || PyList_GET_SIZE(files) == 0)
        FALLBACK;
    PyObject *mf = PyList_GET_ITEM(files, PyList_GET_SIZE(files) - 1);
    Py_INCREF(mf);
    keep(&sc, mf);
    if (Py_TYPE(mf) != (PyTypeObject *)self->mf_type)
        FALLBACK;
    if (!I64_OK(MF(mf, wrote_position), &wp) || !I64_OK(MF(mf, file_size), &fsz) ||
        !I64_OK(MF(mf, file_from_offset), &ffo) || wp < 0 || size + 8 > fsz - wp)
        FALLBACK;
    int64_t offset = ffo + wp;

    /* The consume queue's plain append case (as _dispatch's inline test). */
    PyObject *cq = keep(&sc, dict_get(self->cq_cache, key));
    if (cq == NULL)
        FALLBACK;
    PyObject *mfq = keep(&sc, PyObject_GetAttr(cq, s_mfq));
    PyObject *cfiles = mfq ? keep(&sc, PyObject_GetAttr(mfq, s_files)) : NULL;
    if (cfiles == NULL || !PyList_CheckExact(cfiles) || PyList_GET_SIZE(cfiles) == 0)
        FALLBACK;
    PyObject *cmf = PyList_GET_ITEM(cfiles, PyList_GET_SIZE(cfiles) - 1);
    Py_INCREF(cmf);
    keep(&sc, cmf);
    if (Py_TYPE(cmf) != (PyTypeObject *)self->mf_type)
        FALLBACK;
    int64_t cpos, cfsz, cffo, mpo;
    if (!I64_OK(MF(cmf, wrote_position), &cpos) || !I64_OK(MF(cmf, file_size), &cfsz) ||
        !I64_OK(MF(cmf, file_from_offset), &cffo) ||
        !I64_OK(keep(&sc, PyObject_GetAttr(cq, s_max_physic_offset)), &mpo))
        FALLBACK;
    PyObject *fcq = MF(cmf, first_create_in_queue);
    int first_create = fcq ? PyObject_IsTrue(fcq) : -1;
    if (first_create < 0 || cpos < 0 || cpos + 20 > cfsz || qoff > INT64_MAX / 20 ||
        cffo + cpos != qoff * 20 || offset + size <= mpo || (first_create && cpos == 0))
        FALLBACK;

    /* Store time: int(clock.seconds() * 1000), as Python computes it. */
    PyObject *now = keep(&sc, PyObject_CallNoArgs(self->seconds));
    int64_t ts;
    if (now == NULL)
        FALLBACK;
    if (PyFloat_CheckExact(now)) {
        double d = PyFloat_AS_DOUBLE(now) * 1000.0;
        if (!(d > -9.2e18 && d < 9.2e18)) /* NaN too */
            FALLBACK;
        ts = (int64_t)d; /* C truncates toward zero, as int() */
    } else if (!as_i64(now, INT64_MIN / 1000, INT64_MAX / 1000, &ts)) {
        FALLBACK;
    } else {
        ts *= 1000;
    }

    /* Body CRC through the same function as the Python path (zlib-ng's when installed). */
    PyObject *crc_obj = keep(&sc, PyObject_CallOneArg(self->crc, body));
    if (crc_obj == NULL || !PyLong_Check(crc_obj))
        FALLBACK;
    unsigned long crc_full = PyLong_AsUnsignedLongMask(crc_obj);
    if (crc_full == (unsigned long)-1 && PyErr_Occurred())
        FALLBACK;
    int32_t crc = (int32_t)(crc_full & 0x7FFFFFFF);

    /* The two mappings, held only while writing (an mmap with exports cannot close). The
     * clock and CRC calls above may have run Python code: the positions read before are
     * still those of the objects held, and the buffer lengths are checked here. */
    PyObject *mm = MF(mf, mm), *cmm = MF(cmf, mm);
    if (mm == NULL || cmm == NULL)
        FALLBACK;
    if (PyObject_GetBuffer(mm, &sc.cl_view, PyBUF_WRITABLE) < 0)
        FALLBACK;
    sc.cl_held = 1;
    if (PyObject_GetBuffer(cmm, &sc.cq_view, PyBUF_WRITABLE) < 0)
        FALLBACK;
    sc.cq_held = 1;
    if (sc.cl_view.len < wp + size || sc.cq_view.len < cpos + 20)
        FALLBACK;

    /* New values the attributes will take; allocated before writing so that a MemoryError
     * here still leaves everything untouched. */
    PyObject *ts_obj = keep(&sc, PyLong_FromLongLong(ts));
    PyObject *crc_v = keep(&sc, PyLong_FromLong(crc));
    PyObject *off_obj = keep(&sc, PyLong_FromLongLong(offset));
    PyObject *qoff_obj = keep(&sc, PyLong_FromLongLong(qoff));
    PyObject *qnext = keep(&sc, PyLong_FromLongLong(qoff + 1));
    PyObject *size_obj = keep(&sc, PyLong_FromLongLong(size));
    PyObject *sf_obj = keep(&sc, PyLong_FromLongLong(sys_flag));
    PyObject *wp_next = keep(&sc, PyLong_FromLongLong(wp + size));
    PyObject *cpos_next = keep(&sc, PyLong_FromLongLong(cpos + 20));
    PyObject *mpo_next = keep(&sc, PyLong_FromLongLong(offset + size));
    PyObject *tags_obj = keep(&sc, PyLong_FromLong(tags));
    if (!ts_obj || !crc_v || !off_obj || !qoff_obj || !qnext || !size_obj || !sf_obj ||
        !wp_next || !cpos_next || !mpo_next || !tags_obj)
        FALLBACK;

    /* --- side effects ------------------------------------------------------------------- */
    unsigned char *p = (unsigned char *)sc.cl_view.buf + wp;
    put_i32(p, 0); /* TOTALSIZE 0 until the whole record is in */
    put_i32(p + 4, (int32_t)magic);
    put_i32(p + 8, crc);
    put_i32(p + 12, (int32_t)qid);
    put_i32(p + 16, (int32_t)flag);
    put_i64(p + 20, qoff);
    put_i64(p + 28, offset);
    put_i32(p + 36, (int32_t)sys_flag);
    put_i64(p + 40, born_ts);
    memcpy(p + 48, PyBytes_AS_STRING(born_b), 8);
    put_i64(p + 56, ts);
    memcpy(p + 64, PyBytes_AS_STRING(store_b), 8);
    put_i32(p + 72, (int32_t)reconsume);
    put_i64(p + 76, prep_off);
    put_i32(p + 84, (int32_t)blen);
    memcpy(p + 88, PyBytes_AS_STRING(body), (size_t)blen);
    memcpy(p + 88 + blen, PyBytes_AS_STRING(tb), (size_t)tblen);
    put_i16(p + 88 + blen + tblen, (int32_t)plen);
    props_bytes(ps, props, p + 90 + blen + tblen); /* measured above: cannot fail now */
    /* Keep the compiler from moving the TOTALSIZE store before the others: a kill between
     * them must leave 0 there (the mapping is shared with the page cache). */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    put_i32(p, (int32_t)size);

    unsigned char *u = (unsigned char *)sc.cq_view.buf + cpos;
    put_i64(u, offset);
    put_i32(u + 8, (int32_t)size);
    put_i64(u + 12, tags);
    PyBuffer_Release(&sc.cl_view);
    sc.cl_held = 0;
    PyBuffer_Release(&sc.cq_view);
    sc.cq_held = 0;

    /* Publish, in the Python path's terms. A failure from here on (MemoryError) is raised:
     * the bytes are in, a retry through Python would write the record twice. */
    const Py_ssize_t *ro = self->rec_off, *mo = self->mf_off;
    if (PyDict_SetItem(self->table, key, qnext) < 0)
        goto error;
    slot_set(mf, mo[M_wrote_position], wp_next);
    slot_set(mf, mo[M_last_modified], now);
    slot_set(rec, ro[R_store_timestamp], ts_obj);
    slot_set(rec, ro[R_body_crc], crc_v);
    slot_set(rec, ro[R_physical_offset], off_obj);
    slot_set(rec, ro[R_queue_offset], qoff_obj);
    slot_set(rec, ro[R_total_size], size_obj);
    slot_set(rec, ro[R_magic_code], magic_obj);
    slot_set(rec, ro[R_sys_flag], sf_obj);
    slot_set(cmf, mo[M_wrote_position], cpos_next);
    if (PyDict_SetItem(self->cl_dict, s_last_store_timestamp, ts_obj) < 0 ||
        PyObject_SetAttr(cq, s_max_physic_offset, mpo_next) < 0)
        goto error;
    if (PyList_GET_SIZE(self->listeners) > 0) {
        PyObject *args[5] = {topic, qid_obj, qoff_obj, tags_obj, rec};
        if (call_listeners(self, args) < 0)
            goto error;
    }
    if (queue_index(self, rec) < 0 ||
        PyDict_SetItem(self->store_dict, s_last_dispatched_timestamp, ts_obj) < 0)
        goto error;

    /* The flush policy: under ASYNC_FLUSH without a reactor there is nothing to do. */
    PyObject *flushed = Py_None;
    PyObject *active = DGET(self->flush_dict, active);
    int act = active ? PyObject_IsTrue(active) : -1;
    if (act < 0) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_AttributeError, s_active);
        goto error;
    }
    if (act && !(flushed = keep(&sc, PyObject_CallMethodNoArgs(self->flush, s_on_append))))
        goto error;
    PyObject *one = keep(&sc, PyLong_FromLong(1));
    if (one == NULL)
        goto error;
    PyObject *aitems[9] = {self->append_ok, off_obj, size_obj, ts_obj, qoff_obj, one,
                           storeh, Py_None, Py_None};
    PyObject *ares = keep(&sc, make_result(self->append_type, aitems, 9));
    if (ares == NULL)
        goto error;
    PyObject *pitems[3] = {self->put_ok, ares, flushed};
    result = make_result(self->put_type, pitems, 3);
    scratch_release(&sc);
    return result;

error:
    scratch_release(&sc);
    return NULL;

fallback:
    PyErr_Clear();
    scratch_release(&sc);
    return PyObject_CallOneArg(self->fallback, rec);
}

static PyMethodDef putpath_methods[] = {
    {"put", (PyCFunction)putpath_put, METH_O, put_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(putpath_doc,
"PutPath(store, fallback, crc32, append_result, put_result, append_ok, put_ok,\n"
"        schedule_topic, listener_failed, record_type, mapped_file_type)\n\n"
"The C put path of one MessageStore. `fallback(record)` is the Python put_message (every\n"
"case but the plain one), `crc32` the body CRC function, the result types and OK statuses\n"
"those of broker.commitlog.results, `listener_failed(fn, exc)` logs a failed arrival\n"
"listener. Bind `store.put_message = PutPath(...).put`.");

static PyTypeObject PutPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "broker._native._store.PutPath",
    .tp_basicsize = sizeof(PutPath),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = putpath_doc,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)putpath_init,
    .tp_dealloc = (destructor)putpath_dealloc,
    .tp_traverse = (traverseproc)putpath_traverse,
    .tp_clear = (inquiry)putpath_clear,
    .tp_methods = putpath_methods,
};

PyDoc_STRVAR(module_doc,
"C accelerator of the store's put path (see PutPath); broker.commitlog.native_put binds\n"
"it, the Python path stays the reference and the fallback.");

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_store", module_doc, -1, NULL,
};

PyMODINIT_FUNC
PyInit__store(void)
{
    if (intern_names() < 0 || PyType_Ready(&PutPathType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&PutPathType);
    if (PyModule_AddObject(m, "PutPath", (PyObject *)&PutPathType) < 0) {
        Py_DECREF(&PutPathType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
