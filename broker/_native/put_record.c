/* The record entry of the put path: PutPath.put(record), the store's put_message. The
 * record's fields are read into a PutIn (record_fields, called by put_core once the store
 * time is read) and the results built as CommitLog.append / MessageStore.put_message build
 * them; put.c has the check-then-write sequence both entries share. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "put_core.h"
#include "put_publish.h"
#include "store_attrs.h"
#include "store_names.h"
#include "store_numbers.h"

#define REC(f) keep(sc, slot_get(rec, self->rec_off[R_##f]))
/* A borrowed read, only for values converted at once. */
#define REC_B(f) (*(PyObject **)((char *)rec + self->rec_off[R_##f]))

/* The record's fields into `in` (the record entry's part of the checks): 1, or 0 when the
 * record is not the plain case. */
int
record_fields(PutPath *self, PutIn *in, Scratch *sc)
{
    PyObject *rec = in->rec;
    PyObject *body = REC(body);
    if (body == NULL || !PyBytes_CheckExact(body))
        return 0;
    in->body_obj = body;
    in->body = (const unsigned char *)PyBytes_AS_STRING(body);
    in->blen = PyBytes_GET_SIZE(body);
    if (!(in->born = REC(born_host)) || !(in->storeh = REC(store_host)))
        return 0;
    in->topic = REC(topic);
    if (in->topic == NULL || !PyUnicode_CheckExact(in->topic))
        return 0;
    in->qid_obj = REC(queue_id);
    if (!I64_OK(REC_B(sys_flag), &in->sys_flag) || !I32_OK(in->qid_obj, &in->qid) ||
        !I32_OK(REC_B(flag), &in->flag) || !I64_OK(REC_B(born_timestamp), &in->born_ts) ||
        !I32_OK(REC_B(reconsume_times), &in->reconsume) ||
        !I64_OK(REC_B(prepared_transaction_offset), &in->prep_off))
        return 0;

    /* Properties and the TAGS hash. */
    PyObject *props = REC(properties), *ps = REC(properties_str);
    if (props == NULL || ps == NULL || !PyDict_CheckExact(props))
        return 0;
    in->pr.ps = ps;
    in->pr.props = props;
    if (!props_measure(&in->pr))
        return 0;
    in->tags = 0;
    PyObject *tag = PyDict_GetItemWithError(props, s_TAGS); /* hashed at once */
    if (tag == NULL && PyErr_Occurred())
        return 0;
    if (tag != NULL && tag != Py_None) {
        if (!PyUnicode_CheckExact(tag))
            return 0;
        if (PyUnicode_GET_LENGTH(tag) > 0 && !java_hash(tag, &in->tags))
            return 0;
    }
    return 1;
}

PyObject *
putpath_put(PutPath *self, PyObject *rec)
{
    Scratch sc_, *sc = &sc_;
    sc->n = 0;
    sc->cl_held = sc->cq_held = 0;
    PyObject *result = NULL;
    if (Py_TYPE(rec) != (PyTypeObject *)self->rec_type)
        return PyObject_CallOneArg(self->fallback, rec);
    PutIn in;
    PutOut out;
    memset(&in, 0, sizeof in);
    in.rec = rec;
    int rc = put_core(self, &in, sc, &out);
    if (rc == PUT_FALLBACK) {
        PyErr_Clear();
        scratch_release(sc);
        return PyObject_CallOneArg(self->fallback, rec);
    }
    if (rc == PUT_DONE) {
        PyObject *one = keep(sc, PyLong_FromLong(1));
        PyObject *aitems[9] = {self->append_ok, out.off_obj, out.size_obj, out.ts_obj,
                               out.qoff_obj, one, in.storeh, Py_None, Py_None};
        PyObject *ares = one ? keep(sc, make_result(self->append_type, aitems, 9)) : NULL;
        if (ares != NULL) {
            PyObject *pitems[3] = {self->put_ok, ares, out.flushed};
            result = make_result(self->put_type, pitems, 3);
        }
    }
    scratch_release(sc);
    return result;
}
