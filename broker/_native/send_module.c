/* broker._native._send: the module (Sender from send_type.c), its interned names and
 * parse_header, the test hook of the JSON header reader. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "send.h"
#include "send_json.h"

PyObject *str_processor, *str_ctx, *str_sync_flush, *str_max_message_size, *str_store_host,
    *str_region_id, *str_trace_on, *str_setting, *str_broker_permission, *str_cluster_name,
    *str_store, *str_put_message, *str_stats, *str_on_put, *str_topic_config,
    *str_select_topic_config, *str_valid_topics, *str_remember_valid, *str_peer,
    *str_write_queue_nums, *str_read_queue_nums, *str_topic_filter_type, *str_language,
    *str_version, *str_closed, *str_template, *str_head, *str_tail, *str_host, *str_region,
    *str_trace, *str_general_answer, *str_template_bytes;

/* parse_header(header: bytes) -> dict | None: what the C reader makes of a header (tests). */
static PyObject *py_parse_header(PyObject *mod, PyObject *arg) {
    (void)mod;
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
                                    module_methods, NULL, NULL, NULL, NULL};

#define INTERN(var, text) \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

const StoreDirectAPI *direct_api;

PyMODINIT_FUNC PyInit__send(void) {
    /* The store's direct put, when its module is built (it is optional like this one). */
    /* (Not PyCapsule_Import: it walks attributes from ``broker``, which has no ``_native``
     * attribute until that package's import, running now, completes.) */
    PyObject *store = PyImport_ImportModule("rocketmq_emu.broker._native._store");
    PyObject *cap = store ? PyObject_GetAttrString(store, "_direct_api") : NULL;
    direct_api = cap ? PyCapsule_GetPointer(cap, STORE_DIRECT_CAPSULE) : NULL;
    Py_XDECREF(cap); /* the module keeps the capsule and the table alive */
    Py_XDECREF(store);
    if (direct_api == NULL) PyErr_Clear();
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
