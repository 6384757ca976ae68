/* One put's inputs and outputs between its two entries (put.c: a MessageRecord;
 * put_direct.c: a parsed request) and the shared check-then-write sequence put_core. */
#ifndef RMQ_EMU_PUT_CORE_H
#define RMQ_EMU_PUT_CORE_H

#include <Python.h>
#include <stdint.h>

#include "put_props.h"
#include "put_scratch.h"
#include "putpath.h"

typedef struct {
    PyObject *rec;      /* the record (put.c), or NULL: the direct put */
    /* Filled by put_core from `rec` (record_fields), or by the direct caller. */
    PyObject *topic, *qid_obj, *born, *storeh, *body_obj; /* qid_obj, body_obj may be NULL */
    const unsigned char *body;
    Py_ssize_t blen;
    int64_t sys_flag, qid, flag, born_ts, reconsume, prep_off;
    Props pr;
    int32_t tags;
    /* Direct put only: the index keys (see store_direct.h) and their hashes. */
    const unsigned char *keys, *uniq;
    Py_ssize_t keys_n, uniq_n;
    int32_t ih[2];
    int in_n;
} PutIn;

typedef struct {
    /* Borrowed from the scratch (alive until scratch_release). */
    PyObject *off_obj, *size_obj, *ts_obj, *qoff_obj, *flushed;
    int64_t offset, qoff;
} PutOut;

/* Put outcomes. */
enum { PUT_ERROR = -1, PUT_FALLBACK = 0, PUT_DONE = 1 };

#pragma GCC visibility push(hidden) /* shared between this module's files only */
/* The check-then-write sequence (put.c). PUT_FALLBACK: nothing changed (an exception may
 * be set: the caller clears it); PUT_ERROR: raised after the bytes were written. */
int put_core(PutPath *self, PutIn *in, Scratch *sc, PutOut *out);
/* The record's fields into `in` (put_record.c): 1, or 0 when not the plain case. */
int record_fields(PutPath *self, PutIn *in, Scratch *sc);
/* The direct put's index entries: their hashes (1; 0 when a key is not one the direct
 * put takes: not ASCII, KEYS of several tokens) and their queueing (index_run.c). */
int index_run_keys_ok(PutPath *self, const PutIn *in, int32_t *hu, int32_t *hk, int *n);
int index_run_queue(PutPath *self, const PutIn *in, int64_t offset, int64_t ts);
/* After an item joined the index queue, now `n` long: drained inline past the limit, else
 * on the next reactor turn (index_run.c; queue_index and index_run_queue call it). */
int index_queued(PutPath *self, Py_ssize_t n);
extern PyTypeObject IndexRunType;
#pragma GCC visibility pop

#endif
