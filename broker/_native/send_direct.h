/* The direct put from the send path (store_direct.h): the request's properties turned into
 * the bytes the commitlog stores, with no dict and no str per name and value, and the
 * DirectIn the store's C entry takes. Used by send_frame.c alone.
 */
#ifndef RMQ_EMU_SEND_DIRECT_H
#define RMQ_EMU_SEND_DIRECT_H

#include "send.h"
#include "store_direct.h"
#include "store_numbers.h"

#define DIRECT_PIECES 32

typedef struct {
    const unsigned char *k, *v;
    size_t kn, vn;
} dpiece_t;

static inline int dp_is(const dpiece_t *pc, const char *name, size_t n) {
    return pc->kn == n && memcmp(pc->k, name, n) == 0;
}

/* dict semantics: the value of the piece named like `pc` replaced in place, else `pc`
 * appended; 0 when there is no room (the record path then). */
static int dp_set(dpiece_t *pcs, int *np, const dpiece_t *pc) {
    for (int j = 0; j < *np; j++) {
        if (dp_is(&pcs[j], (const char *)pc->k, pc->kn)) {
            pcs[j].v = pc->v;
            pcs[j].vn = pc->vn;
            return 1;
        }
    }
    if (*np == DIRECT_PIECES) return 0;
    pcs[(*np)++] = *pc;
    return 1;
}

static int all_ascii(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] >= 0x80) return 0;
    return 1;
}

/* The stored properties of a request as build_props + properties_to_string make them
 * (string_to_properties: pieces on \x02, name and value on the first \x01, empty names and
 * values dropped, a later duplicate replacing the value in place; WAIT popped; CLUSTER set
 * in place or appended), written into s->pbuf, and the TAGS / KEYS / UNIQ_KEY the store
 * needs. Returns -1 when a TRAN_MSG / schedule property sends the frame to the Python path
 * (as build_props), 0 when the direct put does not take it (a name or value that is not
 * ASCII, too many pieces, too long: the record path decides those), 1 with `d` filled
 * (the store's entry judges the index keys itself). Sets no exception. */
static int direct_props(Sender *s, sv_t text, PyObject *cluster, DirectIn *d) {
    dpiece_t pcs[DIRECT_PIECES], pc;
    int np = 0, ascii = 1, got;
    const unsigned char *p = text.p, *end = text.p ? text.p + text.n : NULL;
    while ((got = next_piece(&p, end, &pc.k, &pc.kn, &pc.v, &pc.vn)) >= 0) {
        if (!got) continue;
        for (int i = 0; i < s->ndecline; i++)
            if (bkey_eq(&s->decline[i], pc.k, pc.kn)) return -1;
        if (ascii && !bkey_eq(&s->wait_key, pc.k, pc.kn))
            ascii = all_ascii(pc.k, pc.kn) && all_ascii(pc.v, pc.vn) && dp_set(pcs, &np, &pc);
    }
    if (!ascii) return 0; /* (the rest was still scanned for the declining names) */
    Py_ssize_t cn, kn;
    const char *cu = PyUnicode_AsUTF8AndSize(cluster, &cn);
    const char *ck = cu ? PyUnicode_AsUTF8AndSize(s->cluster_key, &kn) : NULL;
    if (ck == NULL) { PyErr_Clear(); return 0; }
    dpiece_t cl = {(const unsigned char *)ck, (const unsigned char *)cu, (size_t)kn, (size_t)cn};
    if (!dp_set(pcs, &np, &cl)) return 0;
    size_t total = 0;
    for (int i = 0; i < np; i++) total += pcs[i].kn + pcs[i].vn + 2;
    total -= 1; /* np >= 1: n pairs, n - 1 separators */
    if (total > 32767) return 0;
    if (total > s->pbuf_cap) {
        unsigned char *b = PyMem_Realloc(s->pbuf, total);
        if (b == NULL) return 0;
        s->pbuf = b;
        s->pbuf_cap = total;
    }
    unsigned char *w = s->pbuf;
    d->tags_code = 0;
    d->keys = d->uniq = NULL;
    d->keys_len = d->uniq_len = 0;
    for (int i = 0; i < np; i++) {
        const dpiece_t *pc = &pcs[i];
        if (i > 0) *w++ = 0x02;
        memcpy(w, pc->k, pc->kn);
        w += pc->kn;
        *w++ = 0x01;
        memcpy(w, pc->v, pc->vn);
        if (dp_is(pc, "TAGS", 4)) {
            uint32_t h = 0;
            java_hash_ascii(&h, pc->v, (Py_ssize_t)pc->vn);
            d->tags_code = (int32_t)h;
        } else if (dp_is(pc, "KEYS", 4)) {
            d->keys = w;
            d->keys_len = (Py_ssize_t)pc->vn;
        } else if (dp_is(pc, "UNIQ_KEY", 8)) {
            d->uniq = w;
            d->uniq_len = (Py_ssize_t)pc->vn;
        }
        w += pc->vn;
    }
    d->props = s->pbuf;
    d->props_len = (Py_ssize_t)total;
    return 1;
}

/* The store's PutPath behind `put` (store.put_message as bind_native_put leaves it), or
 * NULL: a replaced put_message (a test's, a subclass's) keeps the record path. Borrowed. */
static PyObject *direct_target(PyObject *put) {
    if (direct_api == NULL || put == NULL || !PyCFunction_Check(put)) return NULL;
    PyObject *self = PyCFunction_GET_SELF(put);
    if (self == NULL || Py_TYPE(self) != direct_api->putpath_type) return NULL;
    return self;
}

#endif
