/* Per run(): the Python-level state read once, and plain_v2_record's checks.
 *
 * Python-level state (processor settings, store host, topic configs, the put_message bound
 * method...) is read once per run() call, i.e. once per read of the socket and again after
 * every frame the Python path handled (which may have changed a topic, a setting or installed
 * an interceptor): within one run only fused sends execute, and a put cannot change any of it.
 *
 * Used by send_frame.c alone.
 */
#ifndef RMQ_EMU_SEND_RUN_H
#define RMQ_EMU_SEND_RUN_H

#include "send.h"
#include "send_direct.h"
#include "send_out.h"

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
    Py_CLEAR(r->set_lang);
}

static int truthy_attr(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
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
    r->pp = s->direct_on ? direct_target(r->put) : NULL;
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

#endif
