/* The direct put: a C entry of broker._native._store that broker._native._send calls with
 * a parsed SEND_MESSAGE_V2 request, without building a MessageRecord.
 *
 * What the C send path had to do per message before: a properties dict (a str per name
 * and value), a 20-slot MessageRecord, a bytes copy of the body, five ints, a Python-level
 * call of store.put_message, two result tuples to read back, and the record kept on the
 * index queue until the drain read its properties again: about a third of a send's CPU
 * (bench/send_pull.py, perf on the reactor thread). The direct put writes the commitlog
 * record from the request's own bytes, queues the index entries as hashes, and hands back
 * the two numbers the response needs.
 *
 * It takes only what nothing else needs to see as a record: no arrival listener may want
 * the topic (a held pull, the schedule services), the properties are the final stored bytes
 * (ASCII, which makes TAGS / KEYS / UNIQ_KEY hash as Java's String.hashCode does on their
 * bytes). Anything else returns 0 before any side effect and the caller builds the record
 * and calls store.put_message as before: the two paths write the same bytes and leave the
 * same state (tests/unit/test_native_send.py compares them with the Python path).
 *
 * The module exports the table below as the capsule ``rocketmq_emu.broker._native._store._direct_api``.
 */
#ifndef RMQ_EMU_STORE_DIRECT_H
#define RMQ_EMU_STORE_DIRECT_H

#include <Python.h>
#include <stdint.h>

#define STORE_DIRECT_CAPSULE "rocketmq_emu.broker._native._store._direct_api"

typedef struct {
    PyObject *topic;                  /* exact str */
    int64_t queue_id, flag, born_ts, sys_flag, reconsume_times;
    const unsigned char *body;
    Py_ssize_t body_len;
    PyObject *born_host, *store_host; /* the (host, port) tuples a record would carry */
    const unsigned char *props;       /* the stored properties string (ASCII) */
    Py_ssize_t props_len;
    int32_t tags_code;                /* hash of TAGS, 0 without */
    /* Index keys (spans inside props, NULL when absent): KEYS, UNIQ_KEY. A KEYS of several
     * tokens is left to the record path when the store keeps an index. */
    const unsigned char *keys, *uniq;
    Py_ssize_t keys_len, uniq_len;
} DirectIn;

typedef struct {
    int64_t offset;       /* commitlog offset of the record (the response's msgId) */
    int64_t queue_offset;
} DirectOut;

typedef struct {
    PyTypeObject *putpath_type;
    /* put(PutPath, in, out): 1 stored (out filled); 0 not taken, nothing changed, no error
     * set; -1 error set, the record may be stored (the caller answers SYSTEM_ERROR, as
     * when put_message raises). */
    int (*put)(PyObject *putpath, const DirectIn *in, DirectOut *out);
} StoreDirectAPI;

#endif
