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
 *
 * Speed (a put is ~6k instructions, ~10k when this file started with plain getattr calls):
 * slots of MessageRecord / MappedFile are accessed at their member offsets; the store's,
 * commitlog's and queues' attributes through their instance __dict__ fetched once; what
 * the store fixes in __init__ is read once; values that are pure functions of a record's
 * fields (packed hosts, topic block) or that change rarely (the store's flags, a key's
 * consume queue, validated by CPython 3.11's dict version tag) are cached here. Every
 * cache is a cache: dropping any of them changes no byte and no attribute.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <dlfcn.h>
#include <string.h>

#include "index.h"

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

/* zlib-ng's CRC-32 (the function behind zlib_ng.crc32), called directly when its module
 * exports it and agrees with the Python function on a probe. */
typedef uint32_t (*crc32_fn)(uint32_t, const unsigned char *, uint32_t);

/* ---------------------------------------------------------------------------------------- */
/* Interned attribute names (looked up once at import).                                      */

#define NAMES(X)                                                                             \
    X(running) X(_max_body) X(_dispatch_behind) X(index) X(_index_pending)                   \
    X(index_drain_limit) X(_index_call) X(reactor) X(_drain_index) X(callLater)              \
    X(last_dispatched_timestamp) X(files) X(wrote_position) X(file_size) X(file_from_offset) \
    X(mm) X(last_modified) X(first_create_in_queue) X(mfq) X(max_physic_offset)              \
    X(mapped_file_size) X(last_store_timestamp)                                              \
    X(seconds) X(topic) X(body) X(queue_id) X(flag) X(properties) X(sys_flag)                \
    X(born_timestamp) X(born_host) X(store_host) X(reconsume_times)                          \
    X(prepared_transaction_offset) X(properties_str) X(store_timestamp) X(body_crc)          \
    X(physical_offset) X(queue_offset) X(total_size) X(magic_code) X(TAGS) X(active)         \
    X(on_append) X(commitlog) X(queue) X(topic_queue_table) X(encoder) X(_topics) X(_pairs)  \
    X(_cq_cache) X(_listeners) X(flush_service) X(clock) X(flushed_where) X(_soon_call)     \
    X(sync) X(_max_dirty)

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
    uint16_t u = __builtin_bswap16((uint16_t)v);
    memcpy(p, &u, 2);
}

static inline void
put_i32(unsigned char *p, int32_t v)
{
    uint32_t u = __builtin_bswap32((uint32_t)v);
    memcpy(p, &u, 4);
}

static inline void
put_i64(unsigned char *p, int64_t v)
{
    uint64_t u = __builtin_bswap64((uint64_t)v);
    memcpy(p, &u, 8);
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "put_i16/32/64 assume a little-endian host"
#endif

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
static inline __attribute__((always_inline)) PyObject *
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
static inline __attribute__((always_inline)) int
as_i64(PyObject *o, int64_t lo, int64_t hi, int64_t *out)
{
    if (o == NULL || !PyLong_Check(o))
        return 0;
#if PY_VERSION_HEX < 0x030C0000
    /* CPython 3.11's int layout (sign in ob_size, 30-bit digits): most fields of a record
     * fit two digits, read here without the generic conversion. */
    Py_ssize_t nd = Py_SIZE(o);
    if (nd >= -2 && nd <= 2) {
        const digit *d = ((PyLongObject *)o)->ob_digit;
        int64_t v = nd == 0 ? 0 : (int64_t)d[0];
        if (nd == 2 || nd == -2)
            v |= (int64_t)d[1] << PyLong_SHIFT;
        if (nd < 0)
            v = -v;
        if (v < lo || v > hi)
            return 0;
        *out = v;
        return 1;
    }
#endif
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
    &s_running, &s__dispatch_behind, &s__index_pending, &s_index_drain_limit, &s__index_call,
    &s_last_dispatched_timestamp, NULL,
};
static PyObject **const cl_names[] = {&s_last_store_timestamp, NULL};
static PyObject **const files_names[] = {&s_files, NULL};
static PyObject **const queue_names[] = {&s_files, &s_flushed_where, NULL};
static PyObject **const flush_names[] = {&s__soon_call, NULL};
static PyObject **const cq_names[] = {&s_max_physic_offset, NULL};

/* ---------------------------------------------------------------------------------------- */
/* The PutPath object.                                                                       */

#define QCACHE 64

typedef struct {
    PyObject *key;            /* (topic, queueId) tuple, slot chosen by its values */
    int64_t qid;
    Py_hash_t khash;          /* hash(key) */
    PyObject *kcq;            /* _cq_cache[key] as of _cq_cache version kcq_version */
    uint64_t kcq_version;
    PyObject *cq, *cq_dict, *mfq_dict; /* slot chosen by the consume queue's address */
} QCache;

typedef struct {
    PyObject *obj;
    int64_t v;
} IntCache;

/* The store's own attributes a put reads, as of store __dict__ version `version` (0: not
 * read yet; without DICT_VERSION they are read again at every put). Strong references,
 * NULL for a missing attribute. */
typedef struct {
    uint64_t version;
    PyObject *running, *behind, *pending, *limit, *call, *last_ts;
} StoreState;

typedef struct {
    PyObject_HEAD
    /* Given by the caller. */
    PyObject *store, *fallback, *crc, *append_type, *put_type, *append_ok, *put_ok;
    PyObject *schedule_topic, *listener_failed, *rec_type, *mf_type;
    /* Objects the store creates once in __init__ and never replaces (only mutates). */
    PyObject *commitlog, *table, *topics, *pairs, *cq_cache, *listeners, *flush, *seconds;
    PyObject *store_dict, *cl_dict, *queue_dict;
    /* Settings the store fixes in __init__ (max_message_size, the commitlog file size,
     * whether the flush service acts on appends, the index service and reactor). */
    int64_t max_body, cl_file_size;
    int flush_active, flush_sync, has_index;
    int64_t max_dirty;        /* FlushService._max_dirty */
    PyObject *flush_dict;
    PyObject *reactor;
    /* Caches of pure functions of a record's values, filled from the encoder's caches:
     * the last (born, store) host pair -> its encoder tuple, the last topic -> (topic
     * block, magic). */
    PyObject *c_born, *c_store, *c_pair, *c_topic, *c_topic_t;
    /* Recent (topic, queueId) keys, and recent consume queues with their own and their
     * mapped-file queue's __dict__: direct-mapped, a colliding entry replaces the older.
     * A consume queue is always looked up in _cq_cache first (delete_topic drops it). */
    QCache qc[QCACHE];
    Py_ssize_t rec_off[R_N], mf_off[M_N];
    crc32_fn crc_c;           /* NULL: call `crc` */
    /* The last value of the store timestamp, the size, the body CRC and the tags code
     * as ints: consecutive puts often share them (ints are immutable, so sharing one
     * object is as good as a new one, minus the allocation). */
    IntCache ic_ts, ic_size, ic_crc, ic_tags;
    StoreState st;
    /* commitlog.last_store_timestamp as last set here, and cl_dict's version after it. */
    PyObject *cl_ts;
    uint64_t cl_ts_version;
} PutPath;

#define FIELDS(X)                                                                            \
    X(store) X(fallback) X(crc) X(append_type) X(put_type) X(append_ok) X(put_ok)            \
    X(schedule_topic) X(listener_failed) X(rec_type) X(mf_type) X(commitlog) X(table)        \
    X(topics) X(pairs) X(cq_cache) X(listeners) X(flush) X(seconds) X(store_dict) X(cl_dict) \
    X(queue_dict) X(flush_dict) X(reactor) X(c_born) X(c_store) X(c_pair) X(c_topic) X(c_topic_t)

static int
putpath_traverse(PutPath *self, visitproc visit, void *arg)
{
#define VISIT(f) Py_VISIT(self->f);
    FIELDS(VISIT)
#undef VISIT
    Py_VISIT(self->st.running);
    Py_VISIT(self->st.behind);
    Py_VISIT(self->st.pending);
    Py_VISIT(self->st.limit);
    Py_VISIT(self->st.call);
    Py_VISIT(self->st.last_ts);
    Py_VISIT(self->cl_ts);
    for (int i = 0; i < QCACHE; i++) {
        Py_VISIT(self->qc[i].key);
        Py_VISIT(self->qc[i].kcq);
        Py_VISIT(self->qc[i].cq);
        Py_VISIT(self->qc[i].cq_dict);
        Py_VISIT(self->qc[i].mfq_dict);
    }
    return 0;
}

static int
putpath_clear(PutPath *self)
{
#define CLEAR(f) Py_CLEAR(self->f);
    FIELDS(CLEAR)
#undef CLEAR
    Py_CLEAR(self->st.running);
    Py_CLEAR(self->st.behind);
    Py_CLEAR(self->st.pending);
    Py_CLEAR(self->st.limit);
    Py_CLEAR(self->st.call);
    Py_CLEAR(self->st.last_ts);
    Py_CLEAR(self->cl_ts);
    self->st.version = 0;
    Py_CLEAR(self->ic_ts.obj);
    Py_CLEAR(self->ic_size.obj);
    Py_CLEAR(self->ic_crc.obj);
    Py_CLEAR(self->ic_tags.obj);
    for (int i = 0; i < QCACHE; i++) {
        Py_CLEAR(self->qc[i].key);
        Py_CLEAR(self->qc[i].kcq);
        Py_CLEAR(self->qc[i].cq);
        Py_CLEAR(self->qc[i].cq_dict);
        Py_CLEAR(self->qc[i].mfq_dict);
    }
    return 0;
}

static void
putpath_dealloc(PutPath *self)
{
    PyObject_GC_UnTrack(self);
    putpath_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* zng_crc32 from the already loaded library at `path`, if it computes what `crc` (the
 * Python function) computes on a probe; NULL otherwise (error set only if `crc` failed). */
static crc32_fn
find_crc32(const char *path, PyObject *crc)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL)
        return NULL;
    crc32_fn fn = (crc32_fn)dlsym(h, "zng_crc32");
    dlclose(h); /* RTLD_NOLOAD took a reference; the module keeps the library loaded */
    if (fn == NULL)
        return NULL;
    static const char probe[] = "RocketMQ BODYCRC probe \x01\x02\xff";
    PyObject *b = PyBytes_FromStringAndSize(probe, sizeof probe - 1);
    PyObject *r = b ? PyObject_CallOneArg(crc, b) : NULL;
    Py_XDECREF(b);
    if (r == NULL)
        return NULL;
    unsigned long want = PyLong_AsUnsignedLongMask(r);
    Py_DECREF(r);
    if (want == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    uint32_t got = fn(0, (const unsigned char *)probe, (uint32_t)(sizeof probe - 1));
    return got == (uint32_t)want ? fn : NULL;
}

static int
putpath_init(PutPath *self, PyObject *args, PyObject *kwds)
{
    PyObject *store, *fallback, *crc, *append_type, *put_type, *append_ok, *put_ok, *sched,
        *failed, *rec_type, *mf_type;
    const char *crc_lib = NULL;
    static char *kwlist[] = {"store", "fallback", "crc32", "append_result", "put_result",
                             "append_ok", "put_ok", "schedule_topic", "listener_failed",
                             "record_type", "mapped_file_type", "crc32_library", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO!O!OOUOO!O!|z:PutPath", kwlist, &store,
                                     &fallback, &crc, &PyType_Type, &append_type, &PyType_Type,
                                     &put_type, &append_ok, &put_ok, &sched, &failed,
                                     &PyType_Type, &rec_type, &PyType_Type, &mf_type, &crc_lib))
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
    PyObject *cl = NULL, *enc = NULL, *queue = NULL, *clock = NULL, *v = NULL;
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
        !(self->flush_dict = instance_dict(self->flush, flush_names)) ||
        !(self->reactor = PyObject_GetAttr(store, s_reactor)))
        goto done;
    /* The settings fixed at construction. */
    if (!(v = PyObject_GetAttr(store, s__max_body)) ||
        (self->max_body = PyLong_AsLongLong(v)) == -1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "bad _max_body");
        goto done;
    }
    Py_CLEAR(v);
    if (!(v = PyObject_GetAttr(cl, s_mapped_file_size)) ||
        (self->cl_file_size = PyLong_AsLongLong(v)) == -1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "bad mapped_file_size");
        goto done;
    }
    Py_CLEAR(v);
    if (!(v = PyObject_GetAttr(self->flush, s_active)) ||
        (self->flush_active = PyObject_IsTrue(v)) < 0)
        goto done;
    Py_CLEAR(v);
    if (!(v = PyObject_GetAttr(self->flush, s_sync)) ||
        (self->flush_sync = PyObject_IsTrue(v)) < 0)
        goto done;
    Py_CLEAR(v);
    if (!(v = PyObject_GetAttr(self->flush, s__max_dirty)) ||
        ((self->max_dirty = PyLong_AsLongLong(v)) == -1 && PyErr_Occurred()))
        goto done;
    Py_CLEAR(v);
    if (!(v = PyObject_GetAttr(store, s_index)))
        goto done;
    self->has_index = v != Py_None;
    Py_CLEAR(v);
    if (!PyDict_CheckExact(self->table) || !PyDict_CheckExact(self->topics) ||
        !PyDict_CheckExact(self->pairs) || !PyDict_CheckExact(self->cq_cache) ||
        !PyList_CheckExact(self->listeners)) {
        PyErr_SetString(PyExc_TypeError, "PutPath: unexpected store layout");
        goto done;
    }
    self->crc_c = crc_lib ? find_crc32(crc_lib, crc) : NULL;
    if (PyErr_Occurred())
        goto done;
    self->commitlog = cl;
    cl = NULL;
    rc = 0;
done:
    Py_XDECREF(cl);
    Py_XDECREF(enc);
    Py_XDECREF(queue);
    Py_XDECREF(clock);
    Py_XDECREF(v);
    return rc;
}

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

/* Queue the record for the index as _dispatch does: drained inline past the limit, else on
 * the next reactor turn. */
static int
queue_index(PutPath *self, PyObject *rec)
{
    PyObject *store = self->store;
    if (!self->has_index)
        return 0;
    PyObject *pending = state_attr(self, &self->st.pending, s__index_pending);
    if (pending == NULL)
        return -1;
    int rc = -1;
    PyObject *limit = NULL, *call = NULL, *running = NULL, *drain = NULL;
    PyObject *reactor = self->reactor;
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
    if (n < 0 || !(limit = state_attr(self, &self->st.limit, s_index_drain_limit)))
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
    if (!(call = state_attr(self, &self->st.call, s__index_call)))
        goto done;
    if (call == Py_None && reactor != Py_None) {
        if (!(running = state_attr(self, &self->st.running, s_running)))
            goto done;
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
            if (r == NULL || store_set(self, s__index_call, r, &self->st.call) < 0)
                goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(nobj);
    Py_XDECREF(r);
    Py_XDECREF(drain);
    Py_XDECREF(running);
    Py_XDECREF(call);
    Py_XDECREF(limit);
    Py_DECREF(pending);
    return rc;
}

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
    PyObject *ps, *props; /* ps: the str, or Py_None to build from props */
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
    if (pr->ps != Py_None) {
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

#define FALLBACK goto fallback
#define REC(f) keep(&sc, slot_get(rec, self->rec_off[R_##f]))
#define MF(o, f) keep(&sc, slot_get((o), self->mf_off[M_##f]))
#define DGET(d, name) keep(&sc, dict_get((d), s_##name))
/* Borrowed reads, only for values converted or compared at once (no Python code can run
 * between the read and the use, so nothing can free them). */
#define REC_B(f) (*(PyObject **)((char *)rec + self->rec_off[R_##f]))
#define MF_B(o, f) (*(PyObject **)((char *)(o) + self->mf_off[M_##f]))
#define DGET_B(d, name) PyDict_GetItemWithError((d), s_##name)

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
    /* Store time: int(clock.seconds() * 1000), as Python computes it. Read first: the
     * clock is Python code, nothing read after it can have changed under this put. */
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

    if (state_get(self) < 0 || self->st.running != Py_True || self->st.behind != Py_None)
        FALLBACK;
    PyObject *body = REC(body);
    if (body == NULL || !PyBytes_CheckExact(body))
        FALLBACK;
    Py_ssize_t blen = PyBytes_GET_SIZE(body);
    if (blen > self->max_body)
        FALLBACK;

    /* Hosts: (born bytes, store bytes, V6 flags, both IPv4) from the encoder's pair cache
     * (filled by the Python path), remembered here for the next put from the same pair. */
    PyObject *born = REC(born_host), *storeh = REC(store_host);
    if (!born || !storeh)
        FALLBACK;
    int hit = 0;
    if (self->c_born != NULL) {
        hit = born == self->c_born ? 1 : PyObject_RichCompareBool(born, self->c_born, Py_EQ);
        if (hit > 0 && storeh != self->c_store)
            hit = PyObject_RichCompareBool(storeh, self->c_store, Py_EQ);
        if (hit < 0)
            FALLBACK;
    }
    PyObject *pair;
    if (hit) {
        pair = keep(&sc, Py_NewRef(self->c_pair));
    } else {
        PyObject *hosts = keep(&sc, PyTuple_Pack(2, born, storeh));
        pair = hosts ? keep(&sc, dict_get(self->pairs, hosts)) : NULL;
        if (pair == NULL || !PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 4 ||
            PyTuple_GET_ITEM(pair, 3) != Py_True ||
            !PyBytes_CheckExact(PyTuple_GET_ITEM(pair, 0)) ||
            PyBytes_GET_SIZE(PyTuple_GET_ITEM(pair, 0)) != 8 ||
            !PyBytes_CheckExact(PyTuple_GET_ITEM(pair, 1)) ||
            PyBytes_GET_SIZE(PyTuple_GET_ITEM(pair, 1)) != 8)
            FALLBACK; /* not cached yet, or IPv6 */
        Py_XSETREF(self->c_born, Py_NewRef(born));
        Py_XSETREF(self->c_store, Py_NewRef(storeh));
        Py_XSETREF(self->c_pair, Py_NewRef(pair));
    }
    PyObject *born_b = PyTuple_GET_ITEM(pair, 0), *store_b = PyTuple_GET_ITEM(pair, 1);

    /* Topic block and magic from the encoder's cache, remembered likewise; the schedule
     * topic's tagsCode is the deliver time, computed in Python (never cached here). */
    PyObject *topic = REC(topic);
    if (topic == NULL || !PyUnicode_CheckExact(topic))
        FALLBACK;
    PyObject *topic_t;
    if (self->c_topic != NULL &&
        (topic == self->c_topic || PyUnicode_Compare(topic, self->c_topic) == 0)) {
        topic_t = keep(&sc, Py_NewRef(self->c_topic_t));
    } else {
        if (PyUnicode_Compare(topic, self->schedule_topic) == 0)
            FALLBACK;
        topic_t = keep(&sc, dict_get(self->topics, topic));
        if (topic_t == NULL || !PyTuple_CheckExact(topic_t) ||
            PyTuple_GET_SIZE(topic_t) != 2 || !PyBytes_CheckExact(PyTuple_GET_ITEM(topic_t, 0)))
            FALLBACK;
        Py_XSETREF(self->c_topic, Py_NewRef(topic));
        Py_XSETREF(self->c_topic_t, Py_NewRef(topic_t));
    }
    PyObject *tb = PyTuple_GET_ITEM(topic_t, 0), *magic_obj = PyTuple_GET_ITEM(topic_t, 1);
    int64_t magic;
    if (!I32_OK(magic_obj, &magic))
        FALLBACK;
    Py_ssize_t tblen = PyBytes_GET_SIZE(tb);

    /* Transactions: PREPARED / ROLLBACK take no queue offset and no consume-queue unit. */
    int64_t sys_flag, qid, flag, born_ts, reconsume, prep_off;
    if (!I64_OK(REC_B(sys_flag), &sys_flag))
        FALLBACK;
    int64_t tx = sys_flag & 0xC;
    if (tx == 0x4 || tx == 0xC)
        FALLBACK;
    sys_flag &= ~(int64_t)0x30; /* both hosts IPv4: the V6 bits cleared */
    if (sys_flag < INT32_MIN || sys_flag > INT32_MAX)
        FALLBACK;
    PyObject *qid_obj = REC(queue_id);
    if (!I32_OK(qid_obj, &qid) || !I32_OK(REC_B(flag), &flag) ||
        !I64_OK(REC_B(born_timestamp), &born_ts) ||
        !I32_OK(REC_B(reconsume_times), &reconsume) ||
        !I64_OK(REC_B(prepared_transaction_offset), &prep_off))
        FALLBACK;

    /* Properties and the TAGS hash. */
    PyObject *props = REC(properties), *ps = REC(properties_str);
    if (props == NULL || ps == NULL || !PyDict_CheckExact(props))
        FALLBACK;
    Props pr;
    pr.ps = ps;
    pr.props = props;
    if (!props_measure(&pr) || pr.len > 32767)
        FALLBACK;
    Py_ssize_t plen = pr.len;
    int32_t tags = 0;
    PyObject *tag = PyDict_GetItemWithError(props, s_TAGS); /* hashed at once */
    if (tag == NULL && PyErr_Occurred())
        FALLBACK;
    if (tag != NULL && tag != Py_None) {
        if (!PyUnicode_CheckExact(tag))
            FALLBACK;
        if (PyUnicode_GET_LENGTH(tag) > 0 && !java_hash(tag, &tags))
            FALLBACK;
    }

    /* Queue offset (the key is the Python path's (topic, queueId), the last one reused). */
    PyObject *key;
    Py_hash_t th = PyObject_Hash(topic); /* cached in the str */
    if (th == -1)
        FALLBACK;
    QCache *ks = &self->qc[((uint64_t)th ^ (uint64_t)qid * 0x9E3779B97F4A7C15u) >> 58];
    if (ks->key != NULL && qid == ks->qid &&
        (topic == PyTuple_GET_ITEM(ks->key, 0) ||
         PyUnicode_Compare(topic, PyTuple_GET_ITEM(ks->key, 0)) == 0)) {
        key = keep(&sc, Py_NewRef(ks->key));
    } else {
        key = keep(&sc, PyTuple_Pack(2, topic, qid_obj));
        if (key == NULL)
            FALLBACK;
        Py_hash_t kh = PyObject_Hash(key);
        if (kh == -1)
            FALLBACK;
        Py_XSETREF(ks->key, Py_NewRef(key));
        Py_CLEAR(ks->kcq);
        ks->qid = qid;
        ks->khash = kh;
    }
    Py_hash_t khash = ks->khash;
    int64_t qoff = 0;
    PyObject *qv = keep(&sc, Py_XNewRef(DICT_GET_H(self->table, key, khash)));
    if (qv == NULL && PyErr_Occurred())
        FALLBACK;
    if (qv != NULL && !as_i64(qv, 0, INT64_MAX - 1, &qoff))
        FALLBACK;

    /* Room in the last commitlog file (else the Python path writes the BLANK and rolls). */
    int64_t size = 90 + (int64_t)blen + tblen + plen, wp, fsz, ffo;
    if (size + 8 > self->cl_file_size)
        FALLBACK;
    PyObject *files = DGET(self->queue_dict, files);
    if (files == NULL || !PyList_CheckExact(files) || PyList_GET_SIZE(files) == 0)
        FALLBACK;
    PyObject *mf = PyList_GET_ITEM(files, PyList_GET_SIZE(files) - 1);
    Py_INCREF(mf);
    keep(&sc, mf);
    if (Py_TYPE(mf) != (PyTypeObject *)self->mf_type)
        FALLBACK;
    if (!I64_OK(MF_B(mf, wrote_position), &wp) || !I64_OK(MF_B(mf, file_size), &fsz) ||
        !I64_OK(MF_B(mf, file_from_offset), &ffo) || wp < 0 || size + 8 > fsz - wp)
        FALLBACK;
    int64_t offset = ffo + wp;

    /* The consume queue's plain append case (as _dispatch's inline test). */
    /* _cq_cache only changes when a queue is added or a topic deleted: its entry for this
     * key is remembered with the dict's version. */
    PyObject *cq;
#ifdef DICT_VERSION
    if (ks->kcq != NULL && ks->kcq_version == DICT_VERSION(self->cq_cache)) {
        cq = keep(&sc, Py_NewRef(ks->kcq));
    } else {
        uint64_t v0 = DICT_VERSION(self->cq_cache);
        cq = keep(&sc, Py_XNewRef(DICT_GET_H(self->cq_cache, key, khash)));
        if (cq != NULL) {
            Py_XSETREF(ks->kcq, Py_NewRef(cq));
            ks->kcq_version = v0;
        }
    }
#else
    cq = keep(&sc, Py_XNewRef(DICT_GET_H(self->cq_cache, key, khash)));
#endif
    if (cq == NULL)
        FALLBACK;
    QCache *cs = &self->qc[((uintptr_t)cq >> 4) % QCACHE];
    if (cq != cs->cq) {
        PyObject *mfq = keep(&sc, PyObject_GetAttr(cq, s_mfq));
        PyObject *cq_dict = keep(&sc, instance_dict(cq, cq_names));
        PyObject *mfq_dict = mfq ? keep(&sc, instance_dict(mfq, files_names)) : NULL;
        if (cq_dict == NULL || mfq_dict == NULL)
            FALLBACK;
        Py_XSETREF(cs->cq, Py_NewRef(cq));
        Py_XSETREF(cs->cq_dict, Py_NewRef(cq_dict));
        Py_XSETREF(cs->mfq_dict, Py_NewRef(mfq_dict));
    }
    PyObject *cq_dict = keep(&sc, Py_NewRef(cs->cq_dict));
    PyObject *cfiles = keep(&sc, dict_get(cs->mfq_dict, s_files));
    if (cfiles == NULL || !PyList_CheckExact(cfiles) || PyList_GET_SIZE(cfiles) == 0)
        FALLBACK;
    PyObject *cmf = PyList_GET_ITEM(cfiles, PyList_GET_SIZE(cfiles) - 1);
    Py_INCREF(cmf);
    keep(&sc, cmf);
    if (Py_TYPE(cmf) != (PyTypeObject *)self->mf_type)
        FALLBACK;
    int64_t cpos, cfsz, cffo, mpo;
    if (!I64_OK(MF_B(cmf, wrote_position), &cpos) || !I64_OK(MF_B(cmf, file_size), &cfsz) ||
        !I64_OK(MF_B(cmf, file_from_offset), &cffo) ||
        !I64_OK(DGET_B(cq_dict, max_physic_offset), &mpo))
        FALLBACK;
    PyObject *fcq = MF_B(cmf, first_create_in_queue);
    int first_create = fcq == Py_True ? 1 : fcq == Py_False ? 0 : -1;
    if (first_create < 0 || cpos < 0 || cpos + 20 > cfsz || qoff > INT64_MAX / 20 ||
        cffo + cpos != qoff * 20 || offset + size <= mpo || (first_create && cpos == 0))
        FALLBACK;

    /* Body CRC through the same function as the Python path (zlib-ng's when installed). */
    int32_t crc;
    if (self->crc_c != NULL && blen <= (Py_ssize_t)UINT32_MAX) {
        crc = (int32_t)(self->crc_c(0, (const unsigned char *)PyBytes_AS_STRING(body),
                                    (uint32_t)blen) & 0x7FFFFFFF);
    } else {
        PyObject *crc_obj = keep(&sc, PyObject_CallOneArg(self->crc, body));
        if (crc_obj == NULL || !PyLong_Check(crc_obj))
            FALLBACK;
        unsigned long crc_full = PyLong_AsUnsignedLongMask(crc_obj);
        if (crc_full == (unsigned long)-1 && PyErr_Occurred())
            FALLBACK;
        crc = (int32_t)(crc_full & 0x7FFFFFFF);
    }

    /* The two mappings, held only while writing (an mmap with exports cannot close). */
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
    PyObject *ts_obj = keep(&sc, cached_int(&self->ic_ts, ts));
    PyObject *crc_v = keep(&sc, cached_int(&self->ic_crc, crc));
    PyObject *off_obj = keep(&sc, PyLong_FromLongLong(offset));
    /* table.get(key, 0) itself, as the Python path uses it. */
    PyObject *qoff_obj = keep(&sc, qv != NULL ? Py_NewRef(qv) : PyLong_FromLong(0));
    PyObject *qnext = keep(&sc, PyLong_FromLongLong(qoff + 1));
    PyObject *size_obj = keep(&sc, cached_int(&self->ic_size, size));
    PyObject *sf_obj = keep(&sc, PyLong_FromLongLong(sys_flag));
    PyObject *wp_next = keep(&sc, PyLong_FromLongLong(wp + size));
    PyObject *cpos_next = keep(&sc, PyLong_FromLongLong(cpos + 20));
    PyObject *mpo_next = keep(&sc, PyLong_FromLongLong(offset + size));
    PyObject *tags_obj = keep(&sc, cached_int(&self->ic_tags, tags));
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
    props_write(&pr, p + 90 + blen + tblen);
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
    if (DICT_SET_H(self->table, key, qnext, khash) < 0)
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
    /* The store time attributes are set only when they change (consecutive puts of one
     * millisecond share the int object; re-setting it is unobservable). */
#ifdef DICT_VERSION
    if (self->cl_ts != ts_obj || self->cl_ts_version != DICT_VERSION(self->cl_dict)) {
        if (PyDict_SetItem(self->cl_dict, s_last_store_timestamp, ts_obj) < 0)
            goto error;
        Py_XSETREF(self->cl_ts, Py_NewRef(ts_obj));
        self->cl_ts_version = DICT_VERSION(self->cl_dict);
    }
#else
    if (PyDict_SetItem(self->cl_dict, s_last_store_timestamp, ts_obj) < 0)
        goto error;
#endif
    if (PyDict_SetItem(cq_dict, s_max_physic_offset, mpo_next) < 0)
        goto error;
    if (PyList_GET_SIZE(self->listeners) > 0) {
        PyObject *args[5] = {topic, qid_obj, qoff_obj, tags_obj, rec};
        if (call_listeners(self, args) < 0)
            goto error;
    }
    if (queue_index(self, rec) < 0 || state_get(self) < 0)
        goto error;
    if (self->st.last_ts != ts_obj &&
        store_set(self, s_last_dispatched_timestamp, ts_obj, &self->st.last_ts) < 0)
        goto error;

    /* The flush policy: under ASYNC_FLUSH without a reactor there is nothing to do. */
    PyObject *flushed = Py_None;
    if (self->flush_active) {
        /* FlushService.on_append's ASYNC_FLUSH test written out (a Python call per put
         * otherwise): it only acts once _soon_call is None and max_dirty bytes wait. */
        int call = 1;
        if (!self->flush_sync) {
            PyObject *soon = DGET_B(self->flush_dict, _soon_call);
            if (soon == NULL && PyErr_Occurred())
                goto error;
            if (soon != NULL && soon != Py_None) {
                call = 0;
            } else if (soon == Py_None) {
                PyObject *fl = DGET_B(self->queue_dict, files);
                int64_t fw, lf, lw;
                if (fl != NULL && PyList_CheckExact(fl) && PyList_GET_SIZE(fl) > 0 &&
                    Py_TYPE(PyList_GET_ITEM(fl, PyList_GET_SIZE(fl) - 1)) ==
                        (PyTypeObject *)self->mf_type &&
                    I64_OK(MF_B(PyList_GET_ITEM(fl, PyList_GET_SIZE(fl) - 1),
                                file_from_offset), &lf) &&
                    I64_OK(MF_B(PyList_GET_ITEM(fl, PyList_GET_SIZE(fl) - 1),
                                wrote_position), &lw) &&
                    I64_OK(DGET_B(self->queue_dict, flushed_where), &fw))
                    call = lf + lw - fw >= self->max_dirty;
                PyErr_Clear(); /* anything odd: on_append itself decides (and raises) */
            }
        }
        if (call && !(flushed = keep(&sc, PyObject_CallMethodNoArgs(self->flush, s_on_append))))
            goto error;
    }
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
"C accelerators of the store: the put path (PutPath; broker.commitlog.native_put binds\n"
"it) and the index batch (index_gather, index_put_entries; broker/index). The Python\n"
"paths stay the reference and the fallback.");

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_store", module_doc, -1, store_index_methods,
};

PyMODINIT_FUNC
PyInit__store(void)
{
    if (intern_names() < 0 || store_index_init() < 0 || PyType_Ready(&PutPathType) < 0)
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
