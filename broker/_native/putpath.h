/* The PutPath object: what it is given, what it reads once, and its caches.
 *
 * Speed (a put is ~6k instructions, ~10k when the put path started with plain getattr
 * calls): slots of MessageRecord / MappedFile are accessed at their member offsets; the
 * store's, commitlog's and queues' attributes through their instance __dict__ fetched once;
 * what the store fixes in __init__ is read once; values that are pure functions of a record's
 * fields (packed hosts, topic block) or that change rarely (the store's flags, a key's
 * consume queue, validated by CPython 3.11's dict version tag) are cached here. Every
 * cache is a cache: dropping any of them changes no byte and no attribute.
 */
#ifndef RMQ_EMU_PUTPATH_H
#define RMQ_EMU_PUTPATH_H

#include <Python.h>
#include <stdint.h>

#include "store_attrs.h"

/* zlib-ng's CRC-32 (the function behind zlib_ng.crc32), called directly when its module
 * exports it and agrees with the Python function on a probe. */
typedef uint32_t (*crc32_fn)(uint32_t, const unsigned char *, uint32_t);

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
    /* The last topic the direct put indexed and Java's hashCode of "topic#" (the index key
     * hashes continue from it). */
    PyObject *c_itopic;
    uint32_t c_ih;
    /* MappedFileError: a dispatch that raises it leaves the put standing (_dispatch_failed). */
    PyObject *dispatch_error;
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
    X(queue_dict) X(flush_dict) X(reactor) X(c_born) X(c_store) X(c_pair) X(c_topic) X(c_topic_t) \
    X(c_itopic) X(dispatch_error)

#pragma GCC visibility push(hidden) /* shared between this module's files only */
extern PyTypeObject PutPathType;                           /* putpath_type.c */
PyObject *putpath_put(PutPath *self, PyObject *rec);       /* put.c */
PyObject *store_direct_capsule(void);                        /* put_direct.c */
#pragma GCC visibility pop

#endif
