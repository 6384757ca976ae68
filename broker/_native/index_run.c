/* The direct put's index queue items: IndexRun, the entries of consecutive direct puts.
 *
 * A record on the index queue (StoreDispatch._index_pending) keeps its properties until the
 * drain hashes its KEYS and UNIQ_KEY; the direct put has no record and hashes them at once.
 * Its entries go into the IndexRun at the tail of the queue (a new one when the tail is
 * anything else), so the queue keeps the order of the puts, and index_gather (index.c)
 * takes a run's entries where it would have taken the records' (index_run_gather below).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "index.h"
#include "index_entries.h"
#include "put_core.h"
#include "put_state.h"
#include "store_names.h"
#include "store_numbers.h"

typedef struct {
    PyObject_HEAD
    entries_t e;
    Py_ssize_t msgs; /* messages whose entries are here (the drain limit counts them) */
} IndexRun;

static void
run_dealloc(IndexRun *self)
{
    ent_free(&self->e);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
run_len(IndexRun *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromSsize_t(self->msgs);
}

static PyMethodDef run_methods[] = {
    {"messages", (PyCFunction)run_len, METH_NOARGS, "How many messages' entries it holds."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject IndexRunType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rocketmq_emu.broker._native._store.IndexRun",
    .tp_basicsize = sizeof(IndexRun),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Index entries of consecutive direct puts, queued for the index drain.",
    .tp_dealloc = (destructor)run_dealloc,
    .tp_methods = run_methods,
};

/* After an item joined the index queue, now `n` long: drained inline past the limit, else
 * on the next reactor turn (as _dispatch does). */
int
index_queued(PutPath *self, Py_ssize_t n)
{
    PyObject *store = self->store;
    int rc = -1;
    PyObject *limit = NULL, *call = NULL, *running = NULL, *drain = NULL;
    PyObject *reactor = self->reactor;
    PyObject *r = NULL, *nobj = NULL;
    if (!(limit = state_attr(self, &self->st.limit, s_index_drain_limit)))
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
    return rc;
}

/* hashCode("topic#key") as the index hashes it, for an ASCII key; 0 otherwise. The hash
 * of "topic#" is kept for the next message of the same topic. */
static int
key_hash_ascii(PutPath *self, PyObject *topic, const unsigned char *p, Py_ssize_t n,
               int32_t *out)
{
    uint32_t h = 0;
    if (topic == self->c_itopic) {
        h = self->c_ih;
    } else {
        if (!index_hash_prefix(topic, &h))
            return 0;
        Py_XSETREF(self->c_itopic, Py_NewRef(topic));
        self->c_ih = h;
    }
    if (!java_hash_ascii(&h, p, n))
        return 0;
    *out = index_hash_finish(h);
    return 1;
}

int
index_run_keys_ok(PutPath *self, const PutIn *in, int32_t *hu, int32_t *hk, int *n)
{
    /* build_index_batch's entries: UNIQ_KEY, then KEYS unless it equals UNIQ_KEY. */
    const unsigned char *keys = in->keys_n > 0 ? in->keys : NULL;
    const unsigned char *uniq = in->uniq_n > 0 ? in->uniq : NULL;
    int with_uniq = uniq != NULL && (keys == NULL || in->uniq_n != in->keys_n ||
                                     memcmp(uniq, keys, (size_t)in->keys_n) != 0);
    *n = 0;
    if (with_uniq) {
        if (!key_hash_ascii(self, in->topic, uniq, in->uniq_n, hu))
            return 0;
        (*n)++;
    }
    if (keys != NULL) {
        if (memchr(keys, ' ', (size_t)in->keys_n) != NULL ||
            !key_hash_ascii(self, in->topic, keys, in->keys_n, with_uniq ? hk : hu))
            return 0;
        (*n)++;
    }
    return 1;
}

int
index_run_queue(PutPath *self, const PutIn *in, int64_t offset, int64_t ts)
{
    if (!self->has_index)
        return 0;
    const int32_t *h = in->ih; /* hashed before the write (put_direct.c) */
    int n = in->in_n;
    if (n == 0)
        return 0; /* nothing to index (the drain would skip the record) */
    PyObject *pending = state_attr(self, &self->st.pending, s__index_pending);
    if (pending == NULL)
        return -1;
    int rc = -1;
    if (!PyList_CheckExact(pending)) {
        PyErr_SetString(PyExc_TypeError, "_index_pending is not a list");
        goto done;
    }
    Py_ssize_t len = PyList_GET_SIZE(pending);
    IndexRun *run = len > 0 && Py_TYPE(PyList_GET_ITEM(pending, len - 1)) == &IndexRunType
                        ? (IndexRun *)PyList_GET_ITEM(pending, len - 1)
                        : NULL;
    if (run == NULL) {
        run = PyObject_New(IndexRun, &IndexRunType);
        if (run == NULL)
            goto done;
        memset(&run->e, 0, sizeof run->e);
        run->msgs = 0;
        int appended = PyList_Append(pending, (PyObject *)run);
        Py_DECREF(run);
        if (appended < 0)
            goto done;
        len++;
    }
    for (int i = 0; i < n; i++)
        if (push(&run->e, h[i], offset, ts) < 0)
            goto done;
    run->msgs++;
    rc = index_queued(self, len - 1 + run->msgs);
done:
    Py_DECREF(pending);
    return rc;
}

int
index_run_gather(PyObject *item, entries_t *out, long long *last, Py_ssize_t *done)
{
    if (Py_TYPE(item) != &IndexRunType)
        return 1;
    const entries_t *e = &((IndexRun *)item)->e;
    int skip = 0;
    for (Py_ssize_t i = 0; i < e->n; i++) {
        /* A message's entries share its offset: taken or skipped together, as
         * gather_msg takes a record (at or below `last`: indexed already). */
        int first = i == 0 || e->p[i] != e->p[i - 1];
        if (first) {
            skip = *last >= 0 && e->p[i] <= *last;
            if (!skip)
                (*done)++;
        }
        if (skip)
            continue;
        if (push(out, e->h[i], e->p[i], e->t[i]) < 0)
            return -1;
        *last = e->p[i];
    }
    return 0;
}
