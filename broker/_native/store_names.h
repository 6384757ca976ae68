/* The _store module's interned attribute names (store_names.c interns them at import). */
#ifndef RMQ_EMU_STORE_NAMES_H
#define RMQ_EMU_STORE_NAMES_H

#include <Python.h>

#define NAMES(X)                                                                             \
    X(running) X(_max_body) X(_dispatch_behind) X(index) X(_index_pending)                   \
    X(index_drain_limit) X(_index_call) X(reactor) X(_drain_index) X(callLater)              \
    X(last_dispatched_timestamp) X(files) X(wrote_position) X(file_size) X(file_from_offset) \
    X(mm) X(last_modified) X(first_create_in_queue) X(mfq) X(max_physic_offset)              \
    X(mapped_file_size) X(last_store_timestamp)                                              \
    X(seconds) X(topic) X(body) X(queue_id) X(flag) X(properties) X(sys_flag)                \
    X(born_timestamp) X(born_host) X(store_host) X(reconsume_times)                          \
    X(prepared_transaction_offset) X(properties_str) X(store_timestamp) X(body_crc)          \
    X(physical_offset) X(queue_offset) X(total_size) X(magic_code) X(TAGS) X(active)         \
    X(on_append) X(commitlog) X(queue) X(topic_queue_table) X(encoder) X(_topics) X(_pairs)  \
    X(_cq_cache) X(_listeners) X(flush_service) X(clock) X(flushed_where) X(_soon_call)     \
    X(sync) X(_max_dirty)

#define DECLARE(n) extern PyObject *s_##n;
#pragma GCC visibility push(hidden) /* shared between this module's files only */
NAMES(DECLARE)
int intern_names(void);
#pragma GCC visibility pop
#undef DECLARE

#endif
