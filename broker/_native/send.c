/* broker._native._send: the everyday SEND_MESSAGE_V2 (310) request from frame bytes to response
 * bytes, in C.
 *
 * What runs here is exactly what RemotingProtocol.dataReceived + FusedSendV2 +
 * send_plain.plain_v2_record do in Python for the common request (same checks, same record,
 * same response bytes); see broker/processors/send_fast.py. Per frame, C cuts the frame out of
 * the read buffer, parses the JSON header (send_json.h, a strict subset of JSON read exactly as
 * orjson reads it), applies plain_v2_record's checks, builds the MessageRecord, calls the
 * Python-visible store.put_message(record) and formats the response from the template
 * FusedSendV2 builds. Any frame it does not fully understand stops the loop *before any side
 * effect* and the Python path handles that frame, unchanged.
 *
 * Python-level state (processor settings, store host, topic configs, the put_message bound
 * method...) is read once per run() call, i.e. once per read of the socket and again after
 * every frame the Python path handled (which may have changed a topic, a setting or installed
 * an interceptor): within one run only fused sends execute, and a put cannot change any of it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h> /* T_OBJECT_EX, READONLY: MessageRecord's slot members */
#include <stdint.h>
#include <string.h>

#include "send_json.h"

#define SERIALIZE_JSON 0
#define CODE_SEND_V2 310
#define PERM_WRITE 0x2
#define MULTI_TAGS_FLAG 0x2
#define KEY_CACHE 16        /* property names seen (UNIQ_KEY, TAGS, KEYS...): reused str objects */
#define KEY_CACHE_MAXLEN 64
#define MAX_DECLINE_KEYS 16 /* TRAN_MSG + the schedule keys */
#define REC_ARGS 10         /* the fields plain_v2_record passes to MessageRecord(...) */
#define REC_MAX_FIELDS 32

typedef struct {
    unsigned char *p;
    Py_ssize_t n;
    PyObject *s; /* str */
} bkey_t;

typedef struct {
    PyObject_HEAD
    /* Given at construction (see send_fast.py). */
    PyObject *fused;        /* the FusedSendV2: processor, ctx, template, _general_answer */
    PyObject *record_cls;   /* MessageRecord */
    /* MessageRecord built by filling its slots as its dataclass __init__ does (no argument
     * tuple, no Python frame): each field's slot offset, the defaults of the fields after the
     * first REC_ARGS. rec_n == 0: call the class instead. */
    Py_ssize_t rec_off[REC_MAX_FIELDS];
    int rec_n;
    PyObject *rec_defaults;
    PyObject *put_ok;       /* PutMessageStatus.PUT_OK */
    PyObject *not_allowed;  /* NOT_ALLOWED_SEND_TOPICS */
    PyObject *retry_prefix; /* "%RETRY%" */
    PyObject *multi_tag;    /* "MULTI_TAG" */
    PyObject *cluster_key;  /* "CLUSTER" */
    bkey_t wait_key;        /* "WAIT": dropped from the properties */
    bkey_t decline[MAX_DECLINE_KEYS]; /* properties that send the request to the Python path */
    int ndecline;
    /* put_message raised: (exception, header bytes, body bytes) for the Python side. */
    PyObject *failure;
    /* Response template (FusedSendV2._template) and the objects it was built from. */
    PyObject *t_host, *t_region, *t_trace, *t_head, *t_tail[4];
    /* Last topic seen: its bytes and str (no decode per frame). */
    unsigned char *topic_b;
    Py_ssize_t topic_n;
    PyObject *topic;
    /* Last language seen and the str it decodes to. */
    unsigned char lang_b[32];
    Py_ssize_t lang_n;
    PyObject *lang;
    PyObject *java; /* "JAVA": the default language */
    bkey_t keys[KEY_CACHE];
    int nkeys;
    unsigned char *arena; /* escaped strings of one header */
    size_t arena_cap;
    char *out; /* responses of this run not yet handed to the out list */
    size_t out_len, out_cap;
    /* Inside run(): one Sender serves every connection of its processor, and out/arena are
     * per run, so a nested run (a put whose listener fed another connection synchronously)
     * hands its frames to the Python path instead. */
    int busy;
} Sender;

/* Per run(): the Python-level state read once, and the per-topic result of the checks. */
typedef struct {
    int ready;
    int decline_all; /* SYNC_FLUSH or broker not writable: every frame to the Python path */
    PyObject *ctx, *processor, *put, *stats, *store_host, *peer, *cluster, *tconf, *valid,
        *remember;
    long long max_msg;
    PyObject *chk_topic; /* topic the fields below are for */
    int topic_ok;
    long long maxq;
    int multi;
    PyObject *st_topic; /* stats accumulated: on_put(topic, count, size) once per run */
    long long st_count, st_size;
} run_t;

static PyObject *str_processor, *str_ctx, *str_sync_flush, *str_max_message_size, *str_store_host,
    *str_region_id, *str_trace_on, *str_setting, *str_broker_permission, *str_cluster_name,
    *str_store, *str_put_message, *str_stats, *str_on_put, *str_topic_config,
    *str_select_topic_config, *str_valid_topics, *str_remember_valid, *str_peer,
    *str_write_queue_nums, *str_read_queue_nums, *str_topic_filter_type, *str_language,
    *str_version, *str_closed, *str_template, *str_head, *str_tail, *str_host, *str_region,
    *str_trace, *str_general_answer, *str_template_bytes;

/* --- small helpers ------------------------------------------------------------------------ */

static int out_reserve(Sender *s, size_t extra) {
    if (s->out_len + extra <= s->out_cap) return 0;
    size_t cap = s->out_cap ? s->out_cap : 4096;
    while (cap < s->out_len + extra) cap *= 2;
    char *p = PyMem_Realloc(s->out, cap);
    if (p == NULL) { PyErr_NoMemory(); return -1; }
    s->out = p;
    s->out_cap = cap;
    return 0;
}

static inline void out_put(Sender *s, const void *p, size_t n) {
    memcpy(s->out + s->out_len, p, n);
    s->out_len += n;
}

/* Hand the responses accumulated so far to the protocol's out list (at ``index``, or at the
 * end when index < 0), keeping the order in which they were produced. */
static int out_flush(Sender *s, PyObject *out, Py_ssize_t index) {
    if (s->out_len == 0) return 0;
    PyObject *b = PyBytes_FromStringAndSize(s->out, (Py_ssize_t)s->out_len);
    if (b == NULL) return -1;
    s->out_len = 0;
    int rc = index < 0 ? PyList_Append(out, b) : PyList_Insert(out, index, b);
    Py_DECREF(b);
    return rc;
}

/* Decimal ASCII of a signed 64-bit integer; returns the length (at most 20). */
static int fmt_i64(char *buf, long long v) {
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do { tmp[n++] = (char)('0' + u % 10); u /= 10; } while (u);
    int k = 0;
    if (v < 0) buf[k++] = '-';
    while (n) buf[k++] = tmp[--n];
    return k;
}

/* ``_small_decimal``: a str of ASCII digits shorter than max_len (Python's isdecimal also takes
 * other scripts' digits: those frames go to the Python path). */
static int small_decimal(sv_t v, size_t max_len, long long *out) {
    if (v.p == NULL || v.n == 0 || v.n >= max_len) return 0;
    long long x = 0;
    for (size_t i = 0; i < v.n; i++) {
        unsigned c = v.p[i];
        if (c < '0' || c > '9') return 0;
        x = x * 10 + (long long)(c - '0');
    }
    *out = x;
    return 1;
}

static int bkey_set(bkey_t *k, PyObject *str) {
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

static inline int bkey_eq(const bkey_t *k, const unsigned char *p, size_t n) {
    return (size_t)k->n == n && memcmp(k->p, p, n) == 0;
}

/* A property name as a str: from the cache when seen before (its hash is cached too, which
 * makes the dict insertions cheap). New reference. */
static PyObject *prop_key(Sender *s, const unsigned char *p, size_t n) {
    for (int i = 0; i < s->nkeys; i++)
        if (bkey_eq(&s->keys[i], p, n)) { Py_INCREF(s->keys[i].s); return s->keys[i].s; }
    PyObject *k = PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, NULL);
    if (k == NULL || s->nkeys >= KEY_CACHE || n > KEY_CACHE_MAXLEN) return k;
    PyUnicode_InternInPlace(&k);
    if (bkey_set(&s->keys[s->nkeys], k) < 0) { Py_DECREF(k); return NULL; }
    s->nkeys++;
    return k;
}

/* ``string_to_properties`` + ``pop(WAIT)`` + ``[CLUSTER] = cluster``: pieces split on \x02,
 * name and value on the first \x01, pieces with an empty name or value dropped, later
 * duplicates replace the value in place (dict semantics). Returns the dict, or NULL with no
 * exception set when a TRAN_MSG / schedule property sends the request to the Python path. */
static PyObject *build_props(Sender *s, sv_t text, PyObject *cluster, int *error) {
    *error = 0;
    PyObject *d = PyDict_New();
    if (d == NULL) { *error = 1; return NULL; }
    const unsigned char *p = text.p, *end = text.p ? text.p + text.n : NULL;
    while (p != NULL && p < end) {
        const unsigned char *piece_end = memchr(p, 0x02, (size_t)(end - p));
        if (piece_end == NULL) piece_end = end;
        const unsigned char *sep = memchr(p, 0x01, (size_t)(piece_end - p));
        if (sep != NULL && sep > p && sep + 1 < piece_end) {
            size_t kn = (size_t)(sep - p);
            int skip = bkey_eq(&s->wait_key, p, kn); /* popped afterwards in Python */
            for (int i = 0; i < s->ndecline; i++) {
                if (bkey_eq(&s->decline[i], p, kn)) { Py_DECREF(d); return NULL; }
            }
            if (!skip) {
                PyObject *k = prop_key(s, p, kn);
                PyObject *v = k ? PyUnicode_DecodeUTF8((const char *)sep + 1,
                                                       (Py_ssize_t)(piece_end - sep - 1), NULL)
                                : NULL;
                if (v == NULL || PyDict_SetItem(d, k, v) < 0) {
                    Py_XDECREF(k);
                    Py_XDECREF(v);
                    Py_DECREF(d);
                    *error = 1;
                    return NULL;
                }
                Py_DECREF(k);
                Py_DECREF(v);
            }
        }
        if (piece_end == end) break;
        p = piece_end + 1;
    }
    if (PyDict_SetItem(d, s->cluster_key, cluster) < 0) { Py_DECREF(d); *error = 1; return NULL; }
    return d;
}

/* ``seq[i]`` as Python evaluates it (new reference). The store's results are tuple subclasses:
 * PySequence_GetItem would go through their generic __getitem__ slot wrapper (a method lookup
 * and a call per item), so a tuple whose __getitem__ is tuple's own is indexed directly. */
static PyObject *item(PyObject *seq, Py_ssize_t i) {
    if (PyTuple_Check(seq) && Py_TYPE(seq)->tp_as_mapping != NULL
        && Py_TYPE(seq)->tp_as_mapping->mp_subscript == PyTuple_Type.tp_as_mapping->mp_subscript
        && i < PyTuple_GET_SIZE(seq)) {
        PyObject *v = PyTuple_GET_ITEM(seq, i);
        Py_INCREF(v);
        return v;
    }
    PyObject *key = PyLong_FromSsize_t(i);
    if (key == NULL) return NULL;
    PyObject *v = PyObject_GetItem(seq, key);
    Py_DECREF(key);
    return v;
}

/* Whether ``v`` can lead back to an object holding it: a tracked GC object, except a tuple
 * whose items cannot (CPython's own rule for untracking tuples). */
static int may_cycle(PyObject *v) {
    if (!PyObject_IS_GC(v) || !PyObject_GC_IsTracked(v)) return 0;
    if (!PyTuple_CheckExact(v)) return 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++)
        if (may_cycle(PyTuple_GET_ITEM(v, i))) return 1;
    return 0;
}

/* MessageRecord(*vals[:REC_ARGS]) (new reference). */
static PyObject *make_record(Sender *s, PyObject *const *vals) {
    if (s->rec_n == 0) return PyObject_Vectorcall(s->record_cls, vals, REC_ARGS, NULL);
    PyTypeObject *tp = (PyTypeObject *)s->record_cls;
    PyObject *o = tp->tp_alloc(tp, 0); /* zeroed slots: safe for the GC to traverse */
    if (o == NULL) return NULL;
    for (int i = 0; i < s->rec_n; i++) {
        PyObject *v = i < REC_ARGS ? vals[i] : PyTuple_GET_ITEM(s->rec_defaults, i - REC_ARGS);
        Py_INCREF(v);
        *(PyObject **)((char *)o + s->rec_off[i]) = v;
    }
    /* A record of strings, bytes, ints, a str->str dict and (host, port) tuples cannot be
     * part of a reference cycle, so the cyclic GC need not see it, as CPython stops seeing
     * dicts and tuples of such values. It matters: the store keeps each record until the
     * index drain, long enough to reach the older generations, whose growth then triggers
     * full collections (about 1.5-2.5 us per message measured in bench --cpu). */
    for (int i = 0; i < s->rec_n; i++)
        if (may_cycle(*(PyObject **)((char *)o + s->rec_off[i]))) return o;
    PyObject_GC_UnTrack(o);
    return o;
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

/* --- per-run state ------------------------------------------------------------------------- */

static void run_clear(run_t *r) {
    Py_CLEAR(r->ctx);
    Py_CLEAR(r->processor);
    Py_CLEAR(r->put);
    Py_CLEAR(r->stats);
    Py_CLEAR(r->store_host);
    Py_CLEAR(r->peer);
    Py_CLEAR(r->cluster);
    Py_CLEAR(r->tconf);
    Py_CLEAR(r->valid);
    Py_CLEAR(r->remember);
    Py_CLEAR(r->st_topic);
    Py_CLEAR(r->chk_topic);
}

static int truthy_attr(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

/* Rebuild our copy of the response template when the store host, region or trace flag object
 * changed (the identity checks FusedSendV2.__call__ makes). */
static int template_refresh(Sender *s, run_t *r) {
    PyObject *region = PyObject_GetAttr(r->processor, str_region_id);
    PyObject *trace = region ? PyObject_GetAttr(r->processor, str_trace_on) : NULL;
    int rc = -1;
    if (trace == NULL) goto done;
    if (s->t_head != NULL && r->store_host == s->t_host && region == s->t_region
        && trace == s->t_trace) { rc = 0; goto done; }
    PyObject *x = PyObject_CallMethodNoArgs(s->fused, str_template);
    if (x == NULL) goto done;
    Py_DECREF(x);
    PyObject *head = PyObject_GetAttr(s->fused, str_head);
    PyObject *tail = head ? PyObject_GetAttr(s->fused, str_tail) : NULL;
    if (tail == NULL || !PyBytes_Check(head) || !PyBytes_Check(tail)) {
        if (tail != NULL) PyErr_SetString(PyExc_TypeError, "template pieces must be bytes");
        Py_XDECREF(head);
        Py_XDECREF(tail);
        goto done;
    }
    /* The tail holds queueId, queueOffset and opaque as three %d: cut it into four pieces. */
    PyObject *pieces[4] = {NULL, NULL, NULL, NULL};
    const char *t = PyBytes_AS_STRING(tail), *tend = t + PyBytes_GET_SIZE(tail);
    int k = 0;
    const char *a = t;
    for (const char *q = t; q + 1 < tend && k < 3; q++) {
        if (q[0] == '%' && q[1] == 'd') {
            pieces[k++] = PyBytes_FromStringAndSize(a, q - a);
            a = q + 2;
            q++;
        }
    }
    if (k == 3) pieces[3] = PyBytes_FromStringAndSize(a, tend - a);
    Py_DECREF(tail);
    if (k != 3 || !pieces[0] || !pieces[1] || !pieces[2] || !pieces[3]) {
        for (int i = 0; i < 4; i++) Py_XDECREF(pieces[i]);
        Py_DECREF(head);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "unexpected template tail");
        goto done;
    }
    Py_XSETREF(s->t_head, head);
    for (int i = 0; i < 4; i++) Py_XSETREF(s->t_tail[i], pieces[i]);
    Py_INCREF(r->store_host);
    Py_XSETREF(s->t_host, r->store_host);
    Py_INCREF(region);
    Py_XSETREF(s->t_region, region);
    Py_INCREF(trace);
    Py_XSETREF(s->t_trace, trace);
    rc = 0;
done:
    Py_XDECREF(region);
    Py_XDECREF(trace);
    return rc;
}

/* Read the Python-level state this run needs (once per run). */
static int run_ready(Sender *s, run_t *r, PyObject *conn) {
    if (r->ready) return 0;
    r->ready = 1;
    r->processor = PyObject_GetAttr(s->fused, str_processor);
    if (r->processor == NULL) return -1;
    r->ctx = PyObject_GetAttr(s->fused, str_ctx);
    if (r->ctx == NULL) return -1;
    int sync = truthy_attr(r->processor, str_sync_flush);
    if (sync < 0) return -1;
    PyObject *perm_default = PyLong_FromLong(6);
    PyObject *perm = perm_default ? PyObject_CallMethodObjArgs(
                                        r->ctx, str_setting, str_broker_permission, perm_default,
                                        NULL)
                                  : NULL;
    Py_XDECREF(perm_default);
    if (perm == NULL) return -1;
    /* ``not ctx.setting("broker_permission", 6) & PERM_WRITE`` through Python's operators. */
    PyObject *pw = PyLong_FromLong(PERM_WRITE);
    PyObject *masked = pw ? PyNumber_And(perm, pw) : NULL;
    Py_DECREF(perm);
    Py_XDECREF(pw);
    if (masked == NULL) return -1;
    int writable = PyObject_IsTrue(masked);
    Py_DECREF(masked);
    if (writable < 0) return -1;
    if (sync || !writable) { r->decline_all = 1; return 0; }
    PyObject *mm = PyObject_GetAttr(r->processor, str_max_message_size);
    if (mm == NULL) return -1;
    r->max_msg = PyLong_AsLongLong(mm);
    Py_DECREF(mm);
    if (r->max_msg == -1 && PyErr_Occurred()) return -1;
    if (!(r->store_host = PyObject_GetAttr(r->ctx, str_store_host))) return -1;
    if (!(r->cluster = PyObject_GetAttr(r->ctx, str_cluster_name))) return -1;
    PyObject *store = PyObject_GetAttr(r->ctx, str_store);
    if (store == NULL) return -1;
    r->put = PyObject_GetAttr(store, str_put_message);
    Py_DECREF(store);
    if (r->put == NULL) return -1;
    if (!(r->stats = PyObject_GetAttr(r->ctx, str_stats))) return -1;
    if (!(r->tconf = PyObject_GetAttr(r->ctx, str_topic_config))) return -1;
    if (!(r->valid = PyObject_GetAttr(r->processor, str_valid_topics))) return -1;
    if (!(r->remember = PyObject_GetAttr(r->processor, str_remember_valid))) return -1;
    if (!(r->peer = PyObject_GetAttr(conn, str_peer))) return -1;
    return template_refresh(s, r);
}

/* plain_v2_record's topic conditions, once per topic per run: 1 plain, 0 not, -1 error. */
static int topic_check(Sender *s, run_t *r, PyObject *topic) {
    if (r->chk_topic == topic) return r->topic_ok;
    Py_CLEAR(r->chk_topic);
    r->topic_ok = 0;
    PyObject *tc = PyObject_CallMethodOneArg(r->tconf, str_select_topic_config, topic);
    if (tc == NULL) return -1;
    int ok = 0;
    if (tc != Py_None) {
        /* ``topic not in processor._valid_topics and not processor._remember_valid(topic)`` */
        int known = PySequence_Contains(r->valid, topic);
        if (known < 0) goto error;
        if (!known) {
            PyObject *v = PyObject_CallOneArg(r->remember, topic);
            if (v == NULL) goto error;
            known = PyObject_IsTrue(v);
            Py_DECREF(v);
            if (known < 0) goto error;
        }
        int forbidden = known ? PySequence_Contains(s->not_allowed, topic) : 1;
        if (forbidden < 0) goto error;
        int retry = forbidden ? 1 : PyUnicode_Tailmatch(topic, s->retry_prefix, 0,
                                                       PY_SSIZE_T_MAX, -1);
        if (retry < 0) goto error;
        if (!retry) {
            /* max(tc.write_queue_nums, tc.read_queue_nums), and the tag filter type. */
            PyObject *w = PyObject_GetAttr(tc, str_write_queue_nums);
            PyObject *rd = w ? PyObject_GetAttr(tc, str_read_queue_nums) : NULL;
            PyObject *ft = rd ? PyObject_GetAttr(tc, str_topic_filter_type) : NULL;
            int multi = ft ? PyObject_RichCompareBool(ft, s->multi_tag, Py_EQ) : -1;
            long long wv = -1, rv = -1;
            int overflow = 0;
            if (multi >= 0 && PyLong_CheckExact(w) && PyLong_CheckExact(rd)) {
                wv = PyLong_AsLongLongAndOverflow(w, &overflow);
                if (!overflow) rv = PyLong_AsLongLongAndOverflow(rd, &overflow);
            } else if (multi >= 0) {
                overflow = 1; /* not plain ints: let Python compare them */
            }
            Py_XDECREF(w);
            Py_XDECREF(rd);
            Py_XDECREF(ft);
            if (multi < 0 || PyErr_Occurred()) goto error;
            if (!overflow) {
                r->maxq = wv > rv ? wv : rv;
                r->multi = multi;
                ok = 1;
            }
        }
    }
    Py_DECREF(tc);
    Py_INCREF(topic);
    r->chk_topic = topic; /* a reference: the topic cache may replace its str */
    r->topic_ok = ok;
    return ok;
error:
    Py_DECREF(tc);
    return -1;
}

static int stats_flush(run_t *r) {
    if (r->st_topic == NULL) return 0;
    PyObject *res = PyObject_CallMethod(r->stats, "on_put", "OLL", r->st_topic, r->st_count,
                                        r->st_size);
    Py_CLEAR(r->st_topic);
    r->st_count = r->st_size = 0;
    if (res == NULL) return -1;
    Py_DECREF(res);
    return 0;
}

/* The topic str for these bytes (reused while the topic does not change). Borrowed. */
static PyObject *topic_str(Sender *s, sv_t b) {
    if (s->topic != NULL && (size_t)s->topic_n == b.n && memcmp(s->topic_b, b.p, b.n) == 0)
        return s->topic;
    PyObject *t = PyUnicode_DecodeUTF8((const char *)b.p, (Py_ssize_t)b.n, NULL);
    if (t == NULL) return NULL;
    unsigned char *copy = PyMem_Malloc(b.n ? b.n : 1);
    if (copy == NULL) { Py_DECREF(t); PyErr_NoMemory(); return NULL; }
    memcpy(copy, b.p, b.n);
    PyMem_Free(s->topic_b);
    s->topic_b = copy;
    s->topic_n = (Py_ssize_t)b.n;
    Py_XSETREF(s->topic, t);
    return t;
}

static PyObject *language_str(Sender *s, const hdr_t *h) {
    if (!h->has_language) return s->java;
    if (s->lang != NULL && (size_t)s->lang_n == h->language.n
        && memcmp(s->lang_b, h->language.p, h->language.n) == 0)
        return s->lang;
    PyObject *l = PyUnicode_DecodeUTF8((const char *)h->language.p, (Py_ssize_t)h->language.n,
                                       NULL);
    if (l == NULL) return NULL;
    if (h->language.n <= sizeof(s->lang_b)) {
        memcpy(s->lang_b, h->language.p, h->language.n);
        s->lang_n = (Py_ssize_t)h->language.n;
        Py_XSETREF(s->lang, l);
        return l;
    }
    /* Too long to cache: hand it over through the cache slot anyway (borrowed semantics). */
    s->lang_n = -1;
    Py_XSETREF(s->lang, l);
    return l;
}

/* Frame outcomes of handle(). */
enum { F_DECLINE = 0, F_DONE = 1, F_FAILED = 2, F_ERROR = -1 };

/* The failure the Python side answers with SYSTEM_ERROR (FusedSendV2 raised). */
static int set_failure(Sender *s, const unsigned char *hs, const unsigned char *he,
                       const unsigned char *be) {
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    if (tb != NULL) PyException_SetTraceback(exc, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    if (exc == NULL) return F_ERROR;
    PyObject *hb = PyBytes_FromStringAndSize((const char *)hs, he - hs);
    PyObject *bb = hb ? PyBytes_FromStringAndSize((const char *)he, be - he) : NULL;
    PyObject *t = bb ? PyTuple_Pack(3, exc, hb, bb) : NULL;
    Py_XDECREF(hb);
    Py_XDECREF(bb);
    Py_DECREF(exc);
    if (t == NULL) return F_ERROR;
    Py_XSETREF(s->failure, t);
    return F_FAILED;
}

/* One complete JSON frame [start, end) whose header ends at hend. Returns F_DECLINE before any
 * side effect when the Python path must handle it, F_DONE when the response is in s->out (or
 * the out list), F_FAILED when put_message (or a check calling Python) raised: s->failure. */
static int handle(Sender *s, run_t *r, const unsigned char *src, Py_ssize_t start,
                  Py_ssize_t hend, Py_ssize_t end, PyObject *out, PyObject *conn) {
    const unsigned char *hs = src + start + 4, *he = src + hend;
    size_t hlen = (size_t)(he - hs);
    if (hlen > s->arena_cap) {
        unsigned char *a = PyMem_Realloc(s->arena, hlen);
        if (a == NULL) { PyErr_NoMemory(); return F_ERROR; }
        s->arena = a;
        s->arena_cap = hlen;
    }
    hdr_t h;
    if (!parse_header(hs, he, s->arena, &h)) return F_DECLINE;
    /* FusedSendV2.__call__'s header conditions. */
    if (!h.code.present || !h.code.is_int || h.code.v != CODE_SEND_V2) return F_DECLINE;
    if (h.flag.present && !(h.flag.is_int && h.flag.v == 0)) return F_DECLINE;
    if ((h.opaque.present && !h.opaque.is_int) || (h.version.present && !h.version.is_int))
        return F_DECLINE;
    if (h.has_language && !h.language_is_str) return F_DECLINE;
    if (!h.has_ext || h.has_client_id) return F_DECLINE;
    /* plain_v2_record's field conditions (a..m; letters other than these are ignored). */
    const sv_t *x = h.ext;
#define L(c) x[(c) - 'a']
#define IS(c) h.ext_is_str[(c) - 'a']
    long long qid, sys_flag, born, flag, dq, times = 0, most;
    if (!IS('b') || !IS('a') || !IS('c')) return F_DECLINE;
    if (!small_decimal(L('e'), 10, &qid) || !small_decimal(L('f'), 10, &sys_flag)
        || !small_decimal(L('g'), 19, &born) || !small_decimal(L('h'), 10, &flag)
        || !small_decimal(L('d'), 10, &dq))
        return F_DECLINE;
    if (IS('m') && !sv_eq(L('m'), "false")) return F_DECLINE;
    if (IS('k') && !sv_eq(L('k'), "false")) return F_DECLINE;
    if (IS('j') && !small_decimal(L('j'), 10, &times)) return F_DECLINE;
    if (IS('l') && !small_decimal(L('l'), 10, &most)) return F_DECLINE;
    /* From here on Python is consulted: exceptions are the fused handler's failures. */
    if (run_ready(s, r, conn) < 0) return set_failure(s, hs, he, src + end);
    if (r->decline_all) return F_DECLINE;
    PyObject *topic = topic_str(s, L('b'));
    if (topic == NULL) return set_failure(s, hs, he, src + end);
    int tok = topic_check(s, r, topic);
    if (tok < 0) return set_failure(s, hs, he, src + end);
    long long body_len = (long long)(end - hend);
    if (!tok || qid >= r->maxq || body_len > r->max_msg) return F_DECLINE;
    int perr;
    PyObject *props = build_props(s, IS('i') ? L('i') : (sv_t){NULL, 0}, r->cluster, &perr);
    if (props == NULL) return perr ? set_failure(s, hs, he, src + end) : F_DECLINE;
#undef L
#undef IS
    /* Committed: conn.language / conn.version as RemotingProtocol._handle records them. */
    PyObject *lang = language_str(s, &h);
    PyObject *ver = lang ? PyLong_FromLongLong(h.version.present ? h.version.v : 0) : NULL;
    if (ver == NULL || PyObject_SetAttr(conn, str_language, lang) < 0
        || PyObject_SetAttr(conn, str_version, ver) < 0) {
        Py_XDECREF(ver);
        Py_DECREF(props);
        return set_failure(s, hs, he, src + end);
    }
    Py_DECREF(ver);
    long long flags = sys_flag | (r->multi ? MULTI_TAGS_FLAG : 0);
    PyObject *body = PyBytes_FromStringAndSize((const char *)he, (Py_ssize_t)body_len);
    PyObject *qo = PyLong_FromLongLong(qid), *fo = PyLong_FromLongLong(flag),
             *so = PyLong_FromLongLong(flags), *bo = PyLong_FromLongLong(born),
             *to = PyLong_FromLongLong(times);
    PyObject *record = NULL;
    if (body && qo && fo && so && bo && to) {
        /* MessageRecord(topic, body, queue_id, flag, props, sys_flag, born, peer, store_host,
         * reconsume_times): the same positional call plain_v2_record makes. */
        PyObject *args[REC_ARGS] = {topic, body, qo, fo, props, so, bo, r->peer, r->store_host,
                                    to};
        record = make_record(s, args);
    }
    Py_XDECREF(qo);
    Py_XDECREF(fo);
    Py_XDECREF(so);
    Py_XDECREF(bo);
    Py_XDECREF(to);
    Py_DECREF(props);
    if (record == NULL) {
        Py_XDECREF(body);
        return set_failure(s, hs, he, src + end);
    }
    /* An arrival listener may write to this connection (a held pull answered): what it adds
     * to the out list must follow the responses produced before it. */
    Py_ssize_t n_out = PyList_GET_SIZE(out);
    PyObject *result = PyObject_CallOneArg(r->put, record);
    Py_DECREF(record);
    if (result == NULL) { Py_DECREF(body); return set_failure(s, hs, he, src + end); }
    if (PyList_GET_SIZE(out) != n_out && out_flush(s, out, n_out) < 0) goto error;
    PyObject *status = item(result, 0);
    if (status == NULL) goto error;
    int ok = status == s->put_ok;
    Py_DECREF(status);
    if (!ok) {
        /* Rare (store stopped, properties too long...): FusedSendV2._general_answer. */
        if (stats_flush(r) < 0) goto error;
        PyObject *obj = PyObject_CallMethod(s->fused, "_loads", "y#", (const char *)hs,
                                            (Py_ssize_t)hlen);
        PyObject *qobj = obj ? PyLong_FromLongLong(qid) : NULL;
        PyObject *ans = qobj ? PyObject_CallMethodObjArgs(s->fused, str_general_answer, obj,
                                                           body, result, qobj, topic, NULL)
                             : NULL;
        Py_XDECREF(obj);
        Py_XDECREF(qobj);
        if (ans == NULL) goto error;
        if (!PyBytes_Check(ans) || out_reserve(s, (size_t)PyBytes_GET_SIZE(ans)) < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "answer must be bytes");
            Py_DECREF(ans);
            goto error;
        }
        out_put(s, PyBytes_AS_STRING(ans), (size_t)PyBytes_GET_SIZE(ans));
        Py_DECREF(ans);
        Py_DECREF(body);
        Py_DECREF(result);
        return F_DONE;
    }
    Py_DECREF(body);
    /* ctx.stats.on_put(topic, 1, len(body)), summed per topic and applied once per run. */
    if (r->st_topic != topic) {
        if (stats_flush(r) < 0) goto error;
        Py_INCREF(topic);
        r->st_topic = topic;
    }
    r->st_count += 1;
    r->st_size += body_len;
    PyObject *append = item(result, 1);
    if (append == NULL) goto error;
    PyObject *wo = item(append, 1), *qoff = wo ? item(append, 4) : NULL;
    Py_DECREF(append);
    if (qoff == NULL) { Py_XDECREF(wo); goto error; }
    int o1 = 0, o2 = 0;
    long long wrote = PyLong_Check(wo) ? PyLong_AsLongLongAndOverflow(wo, &o1) : (o1 = 1, 0);
    long long qv = PyLong_Check(qoff) ? PyLong_AsLongLongAndOverflow(qoff, &o2) : (o2 = 1, 0);
    long long opaque = h.opaque.present ? h.opaque.v : 0;
    if (o1 || o2 || wrote < 0) {
        /* Outside what the fast formatter writes: Python's % on the same template. */
        PyObject *tb = PyObject_GetAttr(s->fused, str_template_bytes);
        PyObject *vals = tb ? Py_BuildValue("(OLOL)", wo, qid, qoff, opaque) : NULL;
        PyObject *hdr = vals ? PyNumber_Remainder(tb, vals) : NULL;
        Py_XDECREF(tb);
        Py_XDECREF(vals);
        Py_DECREF(wo);
        Py_DECREF(qoff);
        if (hdr == NULL) goto error;
        if (!PyBytes_Check(hdr) || out_reserve(s, 8 + (size_t)PyBytes_GET_SIZE(hdr)) < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "template must be bytes");
            Py_DECREF(hdr);
            goto error;
        }
        uint32_t n = (uint32_t)PyBytes_GET_SIZE(hdr);
        unsigned char pre[8] = {(unsigned char)((n + 4) >> 24), (unsigned char)((n + 4) >> 16),
                                (unsigned char)((n + 4) >> 8), (unsigned char)(n + 4),
                                (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                                (unsigned char)(n >> 8), (unsigned char)n};
        out_put(s, pre, 8);
        out_put(s, PyBytes_AS_STRING(hdr), n);
        Py_DECREF(hdr);
        Py_DECREF(result);
        return F_DONE;
    }
    Py_DECREF(wo);
    Py_DECREF(qoff);
    Py_DECREF(result);
    /* head + %016X(commitlog offset) + t0 + queueId + t1 + queueOffset + t2 + opaque + t3 */
    char num[3][24];
    int nl[3] = {fmt_i64(num[0], qid), fmt_i64(num[1], qv), fmt_i64(num[2], opaque)};
    size_t n = (size_t)PyBytes_GET_SIZE(s->t_head) + 16;
    for (int i = 0; i < 4; i++) n += (size_t)PyBytes_GET_SIZE(s->t_tail[i]);
    n += (size_t)(nl[0] + nl[1] + nl[2]);
    if (out_reserve(s, 8 + n) < 0) return F_ERROR;
    unsigned char pre[8] = {(unsigned char)((n + 4) >> 24), (unsigned char)((n + 4) >> 16),
                            (unsigned char)((n + 4) >> 8), (unsigned char)(n + 4),
                            (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 8), (unsigned char)n};
    out_put(s, pre, 8);
    out_put(s, PyBytes_AS_STRING(s->t_head), (size_t)PyBytes_GET_SIZE(s->t_head));
    static const char hex[] = "0123456789ABCDEF";
    char hx[16];
    for (int i = 15; i >= 0; i--) { hx[i] = hex[wrote & 0xF]; wrote >>= 4; }
    out_put(s, hx, 16);
    for (int i = 0; i < 4; i++) {
        out_put(s, PyBytes_AS_STRING(s->t_tail[i]), (size_t)PyBytes_GET_SIZE(s->t_tail[i]));
        if (i < 3) out_put(s, num[i], (size_t)nl[i]);
    }
    return F_DONE;
error:
    /* After the put (the record is stored): answered SYSTEM_ERROR like any fused handler
     * that raised (RemotingProtocol._fused_failed). */
    Py_DECREF(result);
    Py_DECREF(body);
    return set_failure(s, hs, he, src + end);
}

/* run(src, pos, size, max_length, out, conn) -> pos
 *
 * Handles complete everyday 310 frames starting at ``pos`` and returns the position of the
 * first frame it did not handle (incomplete, bad length, not JSON, not an everyday 310...), or
 * ``size``. Responses are appended to ``out`` (a list, joined and written once per read by the
 * protocol). Stops after a frame whose put raised (``failure`` set) or when the connection
 * closed. */
static PyObject *Sender_run(Sender *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "run(src, pos, size, max_length, out, conn)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t size = PyLong_AsSsize_t(args[2]);
    long long max_length = PyLong_AsLongLong(args[3]);
    PyObject *out = args[4], *conn = args[5];
    if (PyErr_Occurred()) return NULL;
    if (!PyList_Check(out)) {
        PyErr_SetString(PyExc_TypeError, "out must be a list");
        return NULL;
    }
    if (s->busy) return PyLong_FromSsize_t(pos);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    if (pos < 0 || size > view.len || pos > size) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "pos/size outside the buffer");
        return NULL;
    }
    const unsigned char *src = view.buf;
    run_t r;
    memset(&r, 0, sizeof(r));
    int err = 0;
    s->busy = 1;
    while (size - pos >= 4) {
        const unsigned char *p = src + pos;
        /* Signed big-endian length (Java int): the Python path reports a bad one. */
        int32_t length = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16)
                                   | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
        if (length < 4 || (long long)length + 4 > max_length) break;
        if ((long long)length > (long long)(size - pos - 4)) break;
        Py_ssize_t start = pos + 4, end = start + length;
        if (src[start] != SERIALIZE_JSON) break;
        Py_ssize_t hlen = (Py_ssize_t)(((uint32_t)src[start + 1] << 16)
                                       | ((uint32_t)src[start + 2] << 8) | src[start + 3]);
        Py_ssize_t hend = start + 4 + hlen;
        if (hend > end) break;
        int rc = handle(s, &r, src, start, hend, end, out, conn);
        if (rc == F_DECLINE) break;
        if (rc == F_ERROR) { err = 1; break; }
        pos = end;
        if (rc == F_FAILED) break;
        int closed = truthy_attr(conn, str_closed);
        if (closed < 0) { err = 1; break; }
        if (closed) break;
    }
    PyBuffer_Release(&view);
    s->busy = 0;
    if (err) {
        /* Keep what was answered: the protocol writes the out list in its finally clause. */
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        if (out_flush(s, out, -1) < 0 || stats_flush(&r) < 0) PyErr_Clear();
        run_clear(&r);
        PyErr_Restore(type, exc, tb);
        return NULL;
    }
    if (out_flush(s, out, -1) < 0 || stats_flush(&r) < 0) { run_clear(&r); return NULL; }
    run_clear(&r);
    return PyLong_FromSsize_t(pos);
}

/* take_failure() -> (exception, header bytes, body bytes) | None, and clears it. */
static PyObject *Sender_take_failure(Sender *s, PyObject *unused) {
    PyObject *f = s->failure;
    s->failure = NULL;
    if (f == NULL) Py_RETURN_NONE;
    return f;
}

/* --- type plumbing ------------------------------------------------------------------------ */

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
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject SenderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "broker._native._send.Sender",
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

/* parse_header(header: bytes) -> dict | None: what the C reader makes of a header (tests). */
static PyObject *py_parse_header(PyObject *mod, PyObject *arg) {
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0) return NULL;
    unsigned char *arena = PyMem_Malloc(v.len ? (size_t)v.len : 1);
    if (arena == NULL) { PyBuffer_Release(&v); return PyErr_NoMemory(); }
    hdr_t h;
    PyObject *res = NULL;
    if (!parse_header(v.buf, (const unsigned char *)v.buf + v.len, arena, &h)) {
        res = Py_NewRef(Py_None);
        goto done;
    }
    res = PyDict_New();
    if (res == NULL) goto done;
    const char *inames[4] = {"code", "flag", "opaque", "version"};
    iv_t *ivs[4] = {&h.code, &h.flag, &h.opaque, &h.version};
    for (int i = 0; i < 4; i++) {
        if (!ivs[i]->present) continue;
        PyObject *o = ivs[i]->is_int ? PyLong_FromLongLong(ivs[i]->v) : Py_NewRef(Py_Ellipsis);
        if (o == NULL || PyDict_SetItemString(res, inames[i], o) < 0) {
            Py_XDECREF(o);
            Py_CLEAR(res);
            goto done;
        }
        Py_DECREF(o);
    }
    if (h.has_language) {
        PyObject *o = h.language_is_str
                          ? PyUnicode_DecodeUTF8((const char *)h.language.p,
                                                 (Py_ssize_t)h.language.n, NULL)
                          : Py_NewRef(Py_Ellipsis);
        if (o == NULL || PyDict_SetItemString(res, "language", o) < 0) {
            Py_XDECREF(o);
            Py_CLEAR(res);
            goto done;
        }
        Py_DECREF(o);
    }
    if (h.has_ext) {
        PyObject *ext = PyDict_New();
        if (ext == NULL || PyDict_SetItemString(res, "extFields", ext) < 0) {
            Py_XDECREF(ext);
            Py_CLEAR(res);
            goto done;
        }
        Py_DECREF(ext);
        for (int k = 0; k < EXT_LETTERS; k++) {
            if (!h.ext_is_str[k]) continue;
            char key[2] = {(char)('a' + k), 0};
            PyObject *o = PyUnicode_DecodeUTF8((const char *)h.ext[k].p, (Py_ssize_t)h.ext[k].n,
                                               NULL);
            if (o == NULL || PyDict_SetItemString(ext, key, o) < 0) {
                Py_XDECREF(o);
                Py_CLEAR(res);
                goto done;
            }
            Py_DECREF(o);
        }
        if (h.has_client_id && PyDict_SetItemString(ext, "clientID", Py_Ellipsis) < 0)
            Py_CLEAR(res);
    }
done:
    PyMem_Free(arena);
    PyBuffer_Release(&v);
    return res;
}

static PyMethodDef module_methods[] = {
    {"parse_header", py_parse_header, METH_O,
     "parse_header(header) -> dict | None: the fields the C reader extracts (None: declined); "
     "non-integer numbers and non-string languages read as Ellipsis"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_send",
                                    "Everyday SEND_MESSAGE_V2 in C (see send_fast.py).", -1,
                                    module_methods};

#define INTERN(var, text) \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC PyInit__send(void) {
    INTERN(str_processor, "processor");
    INTERN(str_ctx, "ctx");
    INTERN(str_sync_flush, "sync_flush");
    INTERN(str_max_message_size, "max_message_size");
    INTERN(str_store_host, "store_host");
    INTERN(str_region_id, "region_id");
    INTERN(str_trace_on, "trace_on");
    INTERN(str_setting, "setting");
    INTERN(str_broker_permission, "broker_permission");
    INTERN(str_cluster_name, "cluster_name");
    INTERN(str_store, "store");
    INTERN(str_put_message, "put_message");
    INTERN(str_stats, "stats");
    INTERN(str_on_put, "on_put");
    INTERN(str_topic_config, "topic_config");
    INTERN(str_select_topic_config, "select_topic_config");
    INTERN(str_valid_topics, "_valid_topics");
    INTERN(str_remember_valid, "_remember_valid");
    INTERN(str_peer, "peer");
    INTERN(str_write_queue_nums, "write_queue_nums");
    INTERN(str_read_queue_nums, "read_queue_nums");
    INTERN(str_topic_filter_type, "topic_filter_type");
    INTERN(str_language, "language");
    INTERN(str_version, "version");
    INTERN(str_closed, "closed");
    INTERN(str_template, "_template");
    INTERN(str_head, "_head");
    INTERN(str_tail, "_tail");
    INTERN(str_host, "_host");
    INTERN(str_region, "_region");
    INTERN(str_trace, "_trace");
    INTERN(str_general_answer, "_general_answer");
    INTERN(str_template_bytes, "_template_bytes");
    if (PyType_Ready(&SenderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&SenderType);
    if (PyModule_AddObject(m, "Sender", (PyObject *)&SenderType) < 0) {
        Py_DECREF(&SenderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
