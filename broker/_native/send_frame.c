/* broker._native._send: the everyday SEND_MESSAGE_V2 (310) request from frame bytes to response
 * bytes, in C.
 *
 * What runs here is exactly what RemotingProtocol.dataReceived + FusedSendV2 +
 * send_plain.plain_v2_record do in Python for the common request (same checks, same record,
 * same response bytes); see broker/processors/send_fast.py. Per frame, C cuts the frame out of
 * the read buffer, parses the JSON header (send_json.h, a strict subset of JSON read exactly as
 * orjson reads it), applies plain_v2_record's checks, stores the message through the store's
 * direct put (store_direct.h: from the request's bytes, no record) or, where that declines,
 * builds the MessageRecord and calls store.put_message(record), and formats the response
 * from the template
 * FusedSendV2 builds. Any frame it does not fully understand stops the loop *before any side
 * effect* and the Python path handles that frame, unchanged.
 *
 * The files of the module: send_frame.c (this file: the frame loop and one frame's
 * sequence), send_json.h (the header reader), send_run.h (per-run state and the topic
 * checks), send_direct.h (the direct put's properties), send_record.h (properties and the
 * record), send_out.h (response bytes),
 * send.h (shared declarations), send_type.c (the Sender type) and send_module.c.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "send.h"
#include "send_json.h"
#include "send_out.h"
#include "send_record.h"
#include "send_run.h"

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

/* ctx.stats.on_put(topic, 1, len(body)), summed per topic and applied once per run. */
static int stats_add(run_t *r, PyObject *topic, long long body_len) {
    if (r->st_topic != topic) {
        if (stats_flush(r) < 0) return -1;
        Py_INCREF(topic);
        r->st_topic = topic;
    }
    r->st_count += 1;
    r->st_size += body_len;
    return 0;
}

/* build_props for the record: the dict, or NULL with *rc the frame's outcome (F_DECLINE
 * for a TRAN_MSG / schedule property, else the failure). */
static PyObject *record_props(Sender *s, run_t *r, const hdr_t *h, const unsigned char *hs,
                              const unsigned char *he, const unsigned char *be, int *rc) {
    int perr;
    const int i = 'i' - 'a';
    PyObject *props = build_props(s, h->ext_is_str[i] ? h->ext[i] : (sv_t){NULL, 0},
                                  r->cluster, &perr);
    if (props == NULL) *rc = perr ? set_failure(s, hs, he, be) : F_DECLINE;
    return props;
}

/* The record's way: MessageRecord built and store.put_message(record) called (steals
 * `props`). F_DONE with *wrote and *qv for the response, or with *wrote = -1 when the answer
 * is already in s->out (a refused put, numbers outside the fast formatter); F_FAILED. */
static int record_put(Sender *s, run_t *r, const hdr_t *h, PyObject *topic, PyObject *props,
                      long long qid, long long flag, long long flags, long long born,
                      long long times, const unsigned char *hs, const unsigned char *he,
                      const unsigned char *be, PyObject *out, long long *wrote,
                      long long *qvp) {
    size_t hlen = (size_t)(he - hs);
    long long body_len = (long long)(be - he);
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
        return set_failure(s, hs, he, be);
    }
    /* An arrival listener may write to this connection (a held pull answered): what it adds
     * to the out list must follow the responses produced before it. */
    Py_ssize_t n_out = PyList_GET_SIZE(out);
    PyObject *result = PyObject_CallOneArg(r->put, record);
    Py_DECREF(record);
    if (result == NULL) { Py_DECREF(body); return set_failure(s, hs, he, be); }
    if (PyList_GET_SIZE(out) != n_out && out_flush(s, out, n_out) < 0) goto error;
    PyObject *status = item(result, 0);
    if (status == NULL) goto error;
    int ok = status == s->put_ok;
    Py_DECREF(status);
    *wrote = -1;
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
    body = NULL;
    PyObject *append = item(result, 1);
    if (append == NULL) goto error;
    PyObject *wo = item(append, 1), *qoff = wo ? item(append, 4) : NULL;
    Py_DECREF(append);
    if (qoff == NULL) { Py_XDECREF(wo); goto error; }
    int o1 = 0, o2 = 0;
    long long wv = PyLong_Check(wo) ? PyLong_AsLongLongAndOverflow(wo, &o1) : (o1 = 1, 0);
    long long qv = PyLong_Check(qoff) ? PyLong_AsLongLongAndOverflow(qoff, &o2) : (o2 = 1, 0);
    if (!(o1 || o2 || wv < 0)) {
        Py_DECREF(wo);
        Py_DECREF(qoff);
        Py_DECREF(result);
        *wrote = wv;
        *qvp = qv;
        return F_DONE;
    }
    /* Outside what the fast formatter writes: Python's % on the same template. */
    long long opaque = h->opaque.present ? h->opaque.v : 0;
    PyObject *tb = stats_add(r, topic, body_len) < 0 ? NULL
                                                      : PyObject_GetAttr(s->fused,
                                                                         str_template_bytes);
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
    out_prefix(s, n);
    out_put(s, PyBytes_AS_STRING(hdr), n);
    Py_DECREF(hdr);
    Py_DECREF(result);
    return F_DONE;
error:
    /* After the put (the record is stored): answered SYSTEM_ERROR like any fused handler
     * that raised (RemotingProtocol._fused_failed). */
    Py_DECREF(result);
    Py_XDECREF(body);
    return set_failure(s, hs, he, be);
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
    /* The stored properties for the direct put (or a declining name: the Python path). */
    DirectIn d;
    int dp = r->pp == NULL ? 0
             : direct_props(s, IS('i') ? L('i') : (sv_t){NULL, 0}, r->cluster, &d);
    if (dp < 0) return F_DECLINE;
    PyObject *props = NULL;
    int prc;
    if (dp == 0 && !(props = record_props(s, r, &h, hs, he, src + end, &prc))) return prc;
#undef L
#undef IS
    /* Committed: conn.language / conn.version as RemotingProtocol._handle records them;
     * not again for the next frames of this run while they carry the same values (nothing
     * else sets them between two frames). */
    PyObject *lang = language_str(s, &h);
    long long vv = h.version.present ? h.version.v : 0;
    if (lang == NULL || lang != r->set_lang || vv != r->set_ver) {
        PyObject *ver = lang ? PyLong_FromLongLong(vv) : NULL;
        if (ver == NULL || PyObject_SetAttr(conn, str_language, lang) < 0
            || PyObject_SetAttr(conn, str_version, ver) < 0) {
            Py_XDECREF(ver);
            Py_XDECREF(props);
            return set_failure(s, hs, he, src + end);
        }
        Py_DECREF(ver);
        Py_XSETREF(r->set_lang, Py_NewRef(lang));
        r->set_ver = vv;
    }
    long long flags = sys_flag | (r->multi ? MULTI_TAGS_FLAG : 0);
    long long wrote = 0, qv = 0;
    if (dp > 0) {
        d.topic = topic;
        d.queue_id = qid;
        d.flag = flag;
        d.born_ts = born;
        d.sys_flag = flags;
        d.reconsume_times = times;
        d.body = he;
        d.body_len = (Py_ssize_t)body_len;
        d.born_host = r->peer;
        d.store_host = r->store_host;
        DirectOut o;
        int rc = direct_api->put(r->pp, &d, &o);
        if (rc < 0) return set_failure(s, hs, he, src + end);
        if (rc > 0) {
            wrote = o.offset;
            qv = o.queue_offset;
            goto stored;
        }
        /* Not taken (nothing changed): the record's way. */
        if (!(props = record_props(s, r, &h, hs, he, src + end, &prc))) return prc;
    }
    int rc = record_put(s, r, &h, topic, props, qid, flag, flags, born, times, hs, he,
                        src + end, out, &wrote, &qv);
    if (rc != F_DONE || wrote < 0) return rc; /* wrote < 0: answered already */
stored:
    if (stats_add(r, topic, body_len) < 0) return set_failure(s, hs, he, src + end);
    /* head + %016X(commitlog offset) + t0 + queueId + t1 + queueOffset + t2 + opaque + t3 */
    long long opaque = h.opaque.present ? h.opaque.v : 0;
    char num[3][24];
    int nl[3] = {fmt_i64(num[0], qid), fmt_i64(num[1], qv), fmt_i64(num[2], opaque)};
    size_t n = (size_t)PyBytes_GET_SIZE(s->t_head) + 16;
    for (int i = 0; i < 4; i++) n += (size_t)PyBytes_GET_SIZE(s->t_tail[i]);
    n += (size_t)(nl[0] + nl[1] + nl[2]);
    if (out_reserve(s, 8 + n) < 0) return F_ERROR;
    out_prefix(s, n);
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
}

/* run(src, pos, size, max_length, out, conn) -> pos
 *
 * Handles complete everyday 310 frames starting at ``pos`` and returns the position of the
 * first frame it did not handle (incomplete, bad length, not JSON, not an everyday 310...), or
 * ``size``. Responses are appended to ``out`` (a list, joined and written once per read by the
 * protocol). Stops after a frame whose put raised (``failure`` set) or when the connection
 * closed. */
PyObject *Sender_run(Sender *s, PyObject *const *args, Py_ssize_t nargs) {
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
PyObject *Sender_take_failure(Sender *s, PyObject *unused) {
    (void)unused;
    PyObject *f = s->failure;
    s->failure = NULL;
    if (f == NULL) Py_RETURN_NONE;
    return f;
}
