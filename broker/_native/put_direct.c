/* The direct put (store_direct.h): a parsed SEND_MESSAGE_V2 request stored through
 * put_core without a MessageRecord, and the capsule that offers it to broker._native._send.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "put_core.h"
#include "put_state.h"
#include "store_names.h"
#include "putpath.h"
#include "store_direct.h"

static int
direct_put(PyObject *putpath, const DirectIn *d, DirectOut *out)
{
    if (Py_TYPE(putpath) != &PutPathType || !PyUnicode_CheckExact(d->topic) ||
        d->body == NULL || d->body_len < 0 || d->props_len < 0 ||
        (d->props_len > 0 && d->props == NULL))
        return 0;
    PutPath *self = (PutPath *)putpath;
    PutIn in;
    memset(&in, 0, sizeof in);
    in.topic = d->topic;
    in.qid = d->queue_id;
    in.flag = d->flag;
    in.born_ts = d->born_ts;
    in.sys_flag = d->sys_flag;
    in.reconsume = d->reconsume_times;
    in.prep_off = 0; /* a plain send's record: MessageRecord's default */
    in.body = d->body;
    in.blen = d->body_len;
    in.born = d->born_host;
    in.storeh = d->store_host;
    in.pr.ps = NULL; /* raw: the stored bytes as given */
    in.pr.u = (const char *)d->props;
    in.pr.len = d->props_len;
    in.tags = d->tags_code;
    in.keys = d->keys;
    in.keys_n = d->keys ? d->keys_len : 0;
    in.uniq = d->uniq;
    in.uniq_n = d->uniq ? d->uniq_len : 0;
    if (in.flag < INT32_MIN || in.flag > INT32_MAX || in.reconsume < INT32_MIN ||
        in.reconsume > INT32_MAX)
        return 0;
    /* The index keys are hashed after the write: a key the direct put cannot hash must
     * send the request the record's way now. */
    if (self->has_index) {
        if (!index_run_keys_ok(self, &in, &in.ih[0], &in.ih[1], &in.in_n))
            return 0;
        /* The IndexRun goes into an exact list only (anything else, as a list subclass
         * whose append may be overridden, takes the record's way, which calls append). */
        PyObject *pending = state_attr(self, &self->st.pending, s__index_pending);
        int plain = pending != NULL && PyList_CheckExact(pending);
        Py_XDECREF(pending);
        if (!plain) {
            PyErr_Clear();
            return 0;
        }
    }
    Scratch sc;
    sc.n = 0;
    sc.cl_held = sc.cq_held = 0;
    PutOut po;
    int rc = put_core(self, &in, &sc, &po);
    scratch_release(&sc);
    if (rc == PUT_FALLBACK) {
        PyErr_Clear();
        return 0;
    }
    if (rc == PUT_ERROR)
        return -1;
    out->offset = po.offset;
    out->queue_offset = po.qoff;
    return 1;
}

static StoreDirectAPI api = {NULL, direct_put};

PyObject *
store_direct_capsule(void)
{
    api.putpath_type = &PutPathType;
    return PyCapsule_New(&api, STORE_DIRECT_CAPSULE, NULL);
}
