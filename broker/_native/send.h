/* broker._native._send's shared declarations: the Sender object, the per-run state, the
 * interned names (send_module.c) and the functions one file of the module gives another. */
#ifndef RMQ_EMU_SEND_H
#define RMQ_EMU_SEND_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "send_json.h"
#include "store_direct.h"

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
    /* The direct put (store_direct.h): whether to try it (tests turn it off to compare),
     * and the stored properties of the frame being handled. */
    char direct_on; /* T_BOOL */
    unsigned char *pbuf;
    size_t pbuf_cap;
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
    PyObject *pp; /* the PutPath behind put (borrowed from it), NULL: no direct put */
    PyObject *set_lang; /* conn.language / conn.version as this run last set them */
    long long set_ver;
} run_t;

/* The next piece of a properties string (string_to_properties' split: pieces on \x02, name
 * and value on the first \x01) from *p (advanced past it; NULL once the text ends): 1 with
 * the name and value of a piece both non-empty, 0 for a piece string_to_properties drops,
 * -1 at the end. */
static inline int next_piece(const unsigned char **p, const unsigned char *end,
                             const unsigned char **k, size_t *kn, const unsigned char **v,
                             size_t *vn) {
    const unsigned char *q = *p;
    if (q == NULL || q >= end) return -1;
    const unsigned char *piece_end = memchr(q, 0x02, (size_t)(end - q));
    if (piece_end == NULL) piece_end = end;
    *p = piece_end == end ? NULL : piece_end + 1;
    const unsigned char *sep = memchr(q, 0x01, (size_t)(piece_end - q));
    if (sep == NULL || sep == q || sep + 1 >= piece_end) return 0;
    *k = q;
    *kn = (size_t)(sep - q);
    *v = sep + 1;
    *vn = (size_t)(piece_end - sep - 1);
    return 1;
}

/* Frame outcomes of handle(). */
enum { F_DECLINE = 0, F_DONE = 1, F_FAILED = 2, F_ERROR = -1 };

#pragma GCC visibility push(hidden) /* shared between this module's files only */
extern PyObject *str_processor, *str_ctx, *str_sync_flush, *str_max_message_size, *str_store_host,
    *str_region_id, *str_trace_on, *str_setting, *str_broker_permission, *str_cluster_name,
    *str_store, *str_put_message, *str_stats, *str_on_put, *str_topic_config,
    *str_select_topic_config, *str_valid_topics, *str_remember_valid, *str_peer,
    *str_write_queue_nums, *str_read_queue_nums, *str_topic_filter_type, *str_language,
    *str_version, *str_closed, *str_template, *str_head, *str_tail, *str_host, *str_region,
    *str_trace, *str_general_answer, *str_template_bytes;

int bkey_set(bkey_t *k, PyObject *str);                                    /* send_type.c */
extern const StoreDirectAPI *direct_api; /* send_module.c: NULL without broker._native._store */
extern PyTypeObject SenderType;                                           /* send_type.c */
PyObject *Sender_run(Sender *s, PyObject *const *args, Py_ssize_t nargs); /* send_frame.c */
PyObject *Sender_take_failure(Sender *s, PyObject *unused);               /* send_frame.c */
#pragma GCC visibility pop

#endif
