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
 * The caches that make it fast are described in putpath.h; the files of the _store module:
 * put.c (this check-then-write sequence, put_core), put_record.c (its record entry,
 * PutPath.put), put_direct.c (its request entry, the direct put: store_direct.h),
 * put_core.h (what they pass), putpath.h / putpath_type.c (the object, its construction
 * and its Python type), put_state.h (the store's flags between puts), put_props.h
 * (properties), put_publish.h (listeners, index queue, results), put_scratch.h,
 * store_attrs.h / .c (slot and __dict__ access), store_numbers.h, store_names.h / .c, and
 * store_module.c; index.c is the index batch, index_run.c the direct put's index queue
 * items.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "put_core.h"
#include "put_props.h"
#include "put_publish.h"
#include "put_scratch.h"
#include "put_state.h"
#include "putpath.h"
#include "store_attrs.h"
#include "store_names.h"
#include "store_numbers.h"

#define FALLBACK goto fallback
#define MF(o, f) keep(sc, slot_get((o), self->mf_off[M_##f]))
#define DGET(d, name) keep(sc, dict_get((d), s_##name))
/* Borrowed reads, only for values converted or compared at once (no Python code can run
 * between the read and the use, so nothing can free them). */
#define MF_B(o, f) (*(PyObject **)((char *)(o) + self->mf_off[M_##f]))
#define DGET_B(d, name) PyDict_GetItemWithError((d), s_##name)

/* The table's own key object equal to `key` (a small table is scanned; else `key`):
 * looked up with it, the dict finds the entry by identity instead of comparing two tuples
 * on each of a put's two lookups (the first put of a queue, in Python, made the key).
 * Borrowed from the scratch or the table, which the key cache then holds. */
static PyObject *
table_key(PyObject *table, PyObject *key)
{
    if (PyDict_GET_SIZE(table) > 256)
        return key;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(table, &pos, &k, &v)) {
        if (k == key || !PyTuple_CheckExact(k) || PyTuple_GET_SIZE(k) != 2)
            continue;
        int eq = PyObject_RichCompareBool(k, key, Py_EQ); /* str and int items: no code runs */
        if (eq < 0)
            PyErr_Clear();
        if (eq > 0)
            return k;
    }
    return key;
}

/* Whether an arrival listener would want a record of `topic` (or the test is not a plain
 * one): the direct put leaves such records to the record entry, which calls them. */
static int
listeners_want(PutPath *self, PyObject *topic)
{
    PyObject *ls = self->listeners;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ls); i++) {
        PyObject *entry = PyList_GET_ITEM(ls, i);
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2)
            return 1;
        Py_INCREF(entry);
        int wants = listener_wants(PyTuple_GET_ITEM(entry, 1), topic);
        Py_DECREF(entry);
        if (wants != 0)
            return 1;
    }
    return 0;
}

int
put_core(PutPath *self, PutIn *in, Scratch *sc, PutOut *out)
{
    PyObject *rec = in->rec;
    /* --- checks: nothing below changes any state until "side effects" ------------------- */
    /* Store time: int(clock.seconds() * 1000), as Python computes it. Read first: the
     * clock is Python code, nothing read after it can have changed under this put. */
    PyObject *now = keep(sc, PyObject_CallNoArgs(self->seconds));
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
    if (rec != NULL && !record_fields(self, in, sc))
        FALLBACK;
    Py_ssize_t blen = in->blen;
    if (blen > self->max_body)
        FALLBACK;
    PyObject *topic = in->topic;
    if (rec == NULL && PyList_GET_SIZE(self->listeners) > 0 && listeners_want(self, topic))
        FALLBACK;

    /* Hosts: (born bytes, store bytes, V6 flags, both IPv4) from the encoder's pair cache
     * (filled by the Python path), remembered here for the next put from the same pair. */
    PyObject *born = in->born, *storeh = in->storeh;
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
        pair = keep(sc, Py_NewRef(self->c_pair));
    } else {
        PyObject *hosts = keep(sc, PyTuple_Pack(2, born, storeh));
        pair = hosts ? keep(sc, dict_get(self->pairs, hosts)) : NULL;
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
    PyObject *topic_t;
    if (self->c_topic != NULL &&
        (topic == self->c_topic || PyUnicode_Compare(topic, self->c_topic) == 0)) {
        topic_t = keep(sc, Py_NewRef(self->c_topic_t));
    } else {
        if (PyUnicode_Compare(topic, self->schedule_topic) == 0)
            FALLBACK;
        topic_t = keep(sc, dict_get(self->topics, topic));
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
    int64_t sys_flag = in->sys_flag, qid = in->qid, tx = sys_flag & 0xC;
    if (tx == 0x4 || tx == 0xC)
        FALLBACK;
    sys_flag &= ~(int64_t)0x30; /* both hosts IPv4: the V6 bits cleared */
    if (sys_flag < INT32_MIN || sys_flag > INT32_MAX || qid < INT32_MIN || qid > INT32_MAX)
        FALLBACK;
    if (in->pr.len > 32767)
        FALLBACK;
    Py_ssize_t plen = in->pr.len;

    /* Queue offset (the key is the Python path's (topic, queueId), the last one reused). */
    PyObject *key;
    Py_hash_t th = PyObject_Hash(topic); /* cached in the str */
    if (th == -1)
        FALLBACK;
    QCache *ks = &self->qc[((uint64_t)th ^ (uint64_t)qid * 0x9E3779B97F4A7C15u) >> 58];
    if (ks->key != NULL && qid == ks->qid &&
        (topic == PyTuple_GET_ITEM(ks->key, 0) ||
         PyUnicode_Compare(topic, PyTuple_GET_ITEM(ks->key, 0)) == 0)) {
        key = keep(sc, Py_NewRef(ks->key));
    } else {
        PyObject *qid_obj = in->qid_obj ? in->qid_obj : keep(sc, PyLong_FromLongLong(qid));
        key = qid_obj ? keep(sc, PyTuple_Pack(2, topic, qid_obj)) : NULL;
        if (key == NULL)
            FALLBACK;
        Py_hash_t kh = PyObject_Hash(key);
        if (kh == -1)
            FALLBACK;
        key = table_key(self->table, key);
        Py_XSETREF(ks->key, Py_NewRef(key));
        Py_CLEAR(ks->kcq);
        ks->qid = qid;
        ks->khash = kh;
    }
    Py_hash_t khash = ks->khash;
    int64_t qoff = 0;
    PyObject *qv = keep(sc, Py_XNewRef(DICT_GET_H(self->table, key, khash)));
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
    keep(sc, mf);
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
        cq = keep(sc, Py_NewRef(ks->kcq));
    } else {
        uint64_t v0 = DICT_VERSION(self->cq_cache);
        cq = keep(sc, Py_XNewRef(DICT_GET_H(self->cq_cache, key, khash)));
        if (cq != NULL) {
            Py_XSETREF(ks->kcq, Py_NewRef(cq));
            ks->kcq_version = v0;
        }
    }
#else
    cq = keep(sc, Py_XNewRef(DICT_GET_H(self->cq_cache, key, khash)));
#endif
    if (cq == NULL)
        FALLBACK;
    /* The address mixed (Fibonacci hashing): pymalloc places objects of one size 64 bytes
     * apart, so its low bits alone left a quarter of the slots and made a few queues evict
     * each other on every put. */
    QCache *cs = &self->qc[(((uint64_t)(uintptr_t)cq * 0x9E3779B97F4A7C15u) >> 40) % QCACHE];
    if (cq != cs->cq) {
        PyObject *mfq = keep(sc, PyObject_GetAttr(cq, s_mfq));
        PyObject *cq_dict = keep(sc, instance_dict(cq, cq_names));
        PyObject *mfq_dict = mfq ? keep(sc, instance_dict(mfq, files_names)) : NULL;
        if (cq_dict == NULL || mfq_dict == NULL)
            FALLBACK;
        Py_XSETREF(cs->cq, Py_NewRef(cq));
        Py_XSETREF(cs->cq_dict, Py_NewRef(cq_dict));
        Py_XSETREF(cs->mfq_dict, Py_NewRef(mfq_dict));
    }
    PyObject *cq_dict = keep(sc, Py_NewRef(cs->cq_dict));
    PyObject *cfiles = keep(sc, dict_get(cs->mfq_dict, s_files));
    if (cfiles == NULL || !PyList_CheckExact(cfiles) || PyList_GET_SIZE(cfiles) == 0)
        FALLBACK;
    PyObject *cmf = PyList_GET_ITEM(cfiles, PyList_GET_SIZE(cfiles) - 1);
    Py_INCREF(cmf);
    keep(sc, cmf);
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
        crc = (int32_t)(self->crc_c(0, in->body, (uint32_t)blen) & 0x7FFFFFFF);
    } else {
        PyObject *crc_obj = in->body_obj ? keep(sc, PyObject_CallOneArg(self->crc, in->body_obj))
                                         : NULL;
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
    if (PyObject_GetBuffer(mm, &sc->cl_view, PyBUF_WRITABLE) < 0)
        FALLBACK;
    sc->cl_held = 1;
    if (PyObject_GetBuffer(cmm, &sc->cq_view, PyBUF_WRITABLE) < 0)
        FALLBACK;
    sc->cq_held = 1;
    if (sc->cl_view.len < wp + size || sc->cq_view.len < cpos + 20)
        FALLBACK;

    /* New values the attributes will take; allocated before writing so that a MemoryError
     * here still leaves everything untouched. The record's own (offset, queue offset, sys
     * flag) only for a record. */
    PyObject *ts_obj = keep(sc, cached_int(&self->ic_ts, ts));
    PyObject *size_obj = keep(sc, cached_int(&self->ic_size, size));
    PyObject *qnext = keep(sc, PyLong_FromLongLong(qoff + 1));
    PyObject *wp_next = keep(sc, PyLong_FromLongLong(wp + size));
    PyObject *cpos_next = keep(sc, PyLong_FromLongLong(cpos + 20));
    PyObject *mpo_next = keep(sc, PyLong_FromLongLong(offset + size));
    if (!ts_obj || !size_obj || !qnext || !wp_next || !cpos_next || !mpo_next)
        FALLBACK;
    PyObject *crc_v = NULL, *off_obj = NULL, *qoff_obj = NULL, *sf_obj = NULL, *tags_obj = NULL;
    if (rec != NULL) {
        crc_v = keep(sc, cached_int(&self->ic_crc, crc));
        off_obj = keep(sc, PyLong_FromLongLong(offset));
        /* table.get(key, 0) itself, as the Python path uses it. */
        qoff_obj = keep(sc, qv != NULL ? Py_NewRef(qv) : PyLong_FromLong(0));
        sf_obj = keep(sc, PyLong_FromLongLong(sys_flag));
        tags_obj = keep(sc, cached_int(&self->ic_tags, in->tags));
        if (!crc_v || !off_obj || !qoff_obj || !sf_obj || !tags_obj)
            FALLBACK;
    }

    /* --- side effects ------------------------------------------------------------------- */
    unsigned char *p = (unsigned char *)sc->cl_view.buf + wp;
    put_i32(p, 0); /* TOTALSIZE 0 until the whole record is in */
    put_i32(p + 4, (int32_t)magic);
    put_i32(p + 8, crc);
    put_i32(p + 12, (int32_t)qid);
    put_i32(p + 16, (int32_t)in->flag);
    put_i64(p + 20, qoff);
    put_i64(p + 28, offset);
    put_i32(p + 36, (int32_t)sys_flag);
    put_i64(p + 40, in->born_ts);
    memcpy(p + 48, PyBytes_AS_STRING(born_b), 8);
    put_i64(p + 56, ts);
    memcpy(p + 64, PyBytes_AS_STRING(store_b), 8);
    put_i32(p + 72, (int32_t)in->reconsume);
    put_i64(p + 76, in->prep_off);
    put_i32(p + 84, (int32_t)blen);
    memcpy(p + 88, in->body, (size_t)blen);
    memcpy(p + 88 + blen, PyBytes_AS_STRING(tb), (size_t)tblen);
    put_i16(p + 88 + blen + tblen, (int32_t)plen);
    props_write(&in->pr, p + 90 + blen + tblen);
    /* Keep the compiler from moving the TOTALSIZE store before the others: a kill between
     * them must leave 0 there (the mapping is shared with the page cache). */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    put_i32(p, (int32_t)size);

    unsigned char *u = (unsigned char *)sc->cq_view.buf + cpos;
    put_i64(u, offset);
    put_i32(u + 8, (int32_t)size);
    put_i64(u + 12, in->tags);
    PyBuffer_Release(&sc->cl_view);
    sc->cl_held = 0;
    PyBuffer_Release(&sc->cq_view);
    sc->cq_held = 0;

    /* Publish, in the Python path's terms. A failure from here on (MemoryError) is raised:
     * the bytes are in, a retry through Python would write the record twice. */
    const Py_ssize_t *ro = self->rec_off, *mo = self->mf_off;
    if (DICT_SET_H(self->table, key, qnext, khash) < 0)
        return PUT_ERROR;
    slot_set(mf, mo[M_wrote_position], wp_next);
    slot_set(mf, mo[M_last_modified], now);
    if (rec != NULL) {
        slot_set(rec, ro[R_store_timestamp], ts_obj);
        slot_set(rec, ro[R_body_crc], crc_v);
        slot_set(rec, ro[R_physical_offset], off_obj);
        slot_set(rec, ro[R_queue_offset], qoff_obj);
        slot_set(rec, ro[R_total_size], size_obj);
        slot_set(rec, ro[R_magic_code], magic_obj);
        slot_set(rec, ro[R_sys_flag], sf_obj);
    }
    slot_set(cmf, mo[M_wrote_position], cpos_next);
    /* The store time attributes are set only when they change (consecutive puts of one
     * millisecond share the int object; re-setting it is unobservable). */
#ifdef DICT_VERSION
    if (self->cl_ts != ts_obj || self->cl_ts_version != DICT_VERSION(self->cl_dict)) {
        if (PyDict_SetItem(self->cl_dict, s_last_store_timestamp, ts_obj) < 0)
            return PUT_ERROR;
        Py_XSETREF(self->cl_ts, Py_NewRef(ts_obj));
        self->cl_ts_version = DICT_VERSION(self->cl_dict);
    }
#else
    if (PyDict_SetItem(self->cl_dict, s_last_store_timestamp, ts_obj) < 0)
        return PUT_ERROR;
#endif
    if (PyDict_SetItem(cq_dict, s_max_physic_offset, mpo_next) < 0)
        return PUT_ERROR;
    /* Index, dispatch time, then the listeners (StoreDispatch._dispatch's order: a listener
     * may store a message at once, whose index entry must queue after this one). */
    int queued = rec != NULL ? queue_index(self, rec) : index_run_queue(self, in, offset, ts);
    if (queued < 0) {
        /* An index file that cannot be written (the inline drain; a full disk): the put
         * stands and dispatch resumes from here later, as MessageStore.put_message does. */
        if (!PyErr_ExceptionMatches(self->dispatch_error))
            return PUT_ERROR;
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        PyObject *r = PyObject_CallMethod(self->store, "_dispatch_failed", "LO",
                                          (long long)offset, exc ? exc : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        if (r == NULL)
            return PUT_ERROR;
        Py_DECREF(r);
    } else {
        if (state_get(self) < 0)
            return PUT_ERROR;
        if (self->st.last_ts != ts_obj &&
            store_set(self, s_last_dispatched_timestamp, ts_obj, &self->st.last_ts) < 0)
            return PUT_ERROR;
        if (rec != NULL && PyList_GET_SIZE(self->listeners) > 0) {
            PyObject *args[5] = {topic, in->qid_obj, qoff_obj, tags_obj, rec};
            if (call_listeners(self, args) < 0)
                return PUT_ERROR;
        }
    }

    /* The flush policy: under ASYNC_FLUSH without a reactor there is nothing to do. */
    PyObject *flushed = Py_None;
    if (self->flush_active) {
        /* FlushService.on_append's ASYNC_FLUSH test written out (a Python call per put
         * otherwise): it only acts once _soon_call is None and max_dirty bytes wait. */
        int call = 1;
        if (!self->flush_sync) {
            PyObject *soon = DGET_B(self->flush_dict, _soon_call);
            if (soon == NULL && PyErr_Occurred())
                return PUT_ERROR;
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
        if (call && !(flushed = keep(sc, PyObject_CallMethodNoArgs(self->flush, s_on_append))))
            return PUT_ERROR;
    }
    out->off_obj = off_obj;
    out->size_obj = size_obj;
    out->ts_obj = ts_obj;
    out->qoff_obj = qoff_obj;
    out->flushed = flushed;
    out->offset = offset;
    out->qoff = qoff;
    return PUT_DONE;

fallback:
    return PUT_FALLBACK;
}
