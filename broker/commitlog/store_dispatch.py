"""Dispatch ("reput") of appended records into consume queues, arrival listeners and the
index, mixed into :class:`rocketmq_emu.broker.store.MessageStore` (RocketMQ ``CommitLogDispatcher``s and
``ReputMessageService``).

Consume-queue units are written synchronously (a pull right after a put sees the message),
straight into the queue's last mapped file when it is the plain append case and through
``ConsumeQueue.put`` otherwise; index entries are queued and written on the next reactor turn
(or when a query, flush or the queue length asks for them), as RocketMQ's reput thread does
asynchronously. PREPARED / ROLLBACK transaction records get no unit; ROLLBACK is not indexed.
"""

from __future__ import annotations

import logging
from collections.abc import Container
from itertools import repeat
from operator import attrgetter

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.delay_levels import deliver_time_ms
from rocketmq_emu.broker.index import index_file
from rocketmq_emu.broker.message import (
    PROPERTY_KEYS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    RMQ_SYS_SCHEDULE_TOPIC,
)

log = logging.getLogger(__name__)

_TX_MASK = 0xC
_PREPARED = 0x4
_ROLLBACK = 0xC
_props_of = attrgetter("properties")


def _index_items(pending: list):
    """(topic, KEYS, UNIQ_KEY, commitlog offset, store time) of each queued record, in order;
    an item of ``pending`` is a record or a ``(topic, BatchStamp)`` of a whole batch."""
    keys_name = PROPERTY_KEYS
    uniq_name = PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
    for item in pending:
        if type(item) is tuple:
            topic, stamp = item
            ts = stamp.ts
            for r, offset in zip(stamp.records, stamp.offsets, strict=True):
                props = r.properties
                yield topic, props.get(keys_name), props.get(uniq_name), offset, ts
        else:
            props = item.properties
            yield (item.topic, props.get(keys_name), props.get(uniq_name),
                   item.physical_offset, item.store_timestamp)


class StoreDispatch:
    """Expects ``commitlog``, ``consume_queues``, ``index``, ``reactor``, ``running``,
    ``delay_levels``, ``_listeners``, ``_cq_cache``, ``_tag_codes``,
    ``_index_pending``, ``_index_call``, ``index_drain_limit``, ``index_error`` and
    ``_writes_changed``."""

    def tags_code_of(self, record: MessageRecord) -> int:
        """The consume-queue tagsCode: the TAGS hash, or the deliver time for the schedule
        topic (``CommitLog.checkMessageAndReturnSize``)."""
        if record.topic == RMQ_SYS_SCHEDULE_TOPIC:
            return deliver_time_ms(record, self.delay_levels)
        return self.commitlog.encoder.tags_code(record.properties.get("TAGS"))

    def _dispatch(self, record: MessageRecord) -> None:
        """Consume-queue unit (synchronously), listeners, index entry (queued)."""
        tx = record.sys_flag & _TX_MASK
        if tx != _PREPARED and tx != _ROLLBACK:
            topic = record.topic
            if topic == RMQ_SYS_SCHEDULE_TOPIC:
                tags = deliver_time_ms(record, self.delay_levels)
            else:
                tag = record.properties.get("TAGS")
                tags = (self._tag_codes.get(tag) or self.commitlog.encoder.tags_code(tag)
                        ) if tag else 0
            qid = record.queue_id
            qoff = record.queue_offset
            key = (topic, qid)
            cq = self._cq_cache.get(key)
            if cq is None:
                cq = self._cq_cache[key] = self.consume_queues.find_or_create(topic, qid)
            cq.put(qoff, record.physical_offset, record.total_size, tags)
        # Index and dispatch time before the listeners: a listener may store a message at
        # once, whose index entry must queue after this one (the index skips offsets below
        # the last one it took).
        if self.index is not None and tx != _ROLLBACK:
            pending = self._index_pending
            pending.append(record)  # keys are looked at when the queue is drained
            if len(pending) >= self.index_drain_limit:
                self._drain_index()
            elif self._index_call is None and self.reactor is not None and self.running:
                self._index_call = self.reactor.callLater(0, self._drain_index)
        self.last_dispatched_timestamp = record.store_timestamp
        if self._listeners and tx != _PREPARED and tx != _ROLLBACK:
            for fn, topics in self._listeners:
                if topics is not None and topic not in topics:
                    continue
                try:
                    fn(topic, qid, qoff, tags, record)
                except Exception:
                    log.exception("arrival listener %r failed", fn)

    def _dispatch_batch(self, stamp) -> bool:
        """One consume-queue write for a whole fast-path batch (``BatchStamp``: one topic and
        queue, plain records) when there are no listeners and it is the queue's plain append
        case; False: the caller stamps the records and dispatches them one by one."""
        records = stamp.records
        first = records[0]
        topic = first.topic
        if topic == RMQ_SYS_SCHEDULE_TOPIC or any(
                topics is None or topic in topics for _, topics in self._listeners):
            return False
        n = len(records)
        key = (topic, first.queue_id)
        cq = self._cq_cache.get(key)
        if cq is None:
            cq = self._cq_cache[key] = self.consume_queues.find_or_create(topic, first.queue_id)
        codes = self._tag_codes
        tags_code = self.commitlog.encoder.tags_code
        # TAGS and their cached codes fetched by C loops; any tag not cached (or none) takes
        # the per-record expression.
        tags = list(map(dict.get, map(_props_of, records), repeat("TAGS", n)))
        cached = list(map(codes.get, tags))
        if None in cached:
            cached = [(codes.get(tg) or tags_code(tg)) if tg else 0 for tg in tags]
        if not cq.put_run(stamp.q0, stamp.offsets, stamp.sizes, cached):
            return False
        if self.index is not None:
            self._index_pending.append((topic, stamp))
            if self._index_call is None and self.reactor is not None and self.running:
                self._index_call = self.reactor.callLater(0, self._drain_index)
        self.last_dispatched_timestamp = stamp.ts
        return True

    def build_queued_index(self) -> int:
        """Write the index entries queued so far, now (what the next reactor turn does);
        returns how many queued records (or batches) they came from."""
        queued = len(self._index_pending)
        self._drain_index()
        return queued

    def _drain_index(self) -> None:
        """Write the queued index entries. A new index file that cannot be created (full
        disk) keeps them queued (entries written before it are skipped when retried) and
        sets the store's index-error bit, refusing puts until a later drain succeeds
        (``IndexService.buildIndex`` sets ``RunningFlags.makeIndexFileError`` in Java)."""
        self._index_call = None
        pending, self._index_pending = self._index_pending, []
        index = self.index
        if index is None or not pending:
            return
        try:
            self._write_index(index, pending)
        except index_file.IndexFileError as exc:
            log.error("index entries could not be written, puts refused until they are: %s",
                      exc)
            self._index_pending = pending + self._index_pending
            if not self.index_error:
                self.index_error = True
                self._writes_changed()
            return
        if self.index_error:
            log.info("index written again, puts accepted")
            self.index_error = False
            self._writes_changed()

    @staticmethod
    def _write_index(index, pending: list) -> None:
        index.build_index_batch(_index_items(pending))

    def add_arrival_listener(self, fn, topics: Container[str] | None = None) -> None:
        """``fn(topic, queue_id, queue_offset, tags_code, record)`` after each record reaches
        its consume queue (long polling, schedule services).

        ``topics``, when given, is a live container (its owner adds and removes topics): ``fn``
        is called only for records whose topic is in it at that moment. A Python call per
        stored message costs as much as a tenth of the whole put (bench/send_pull.py), and
        most listeners care about few topics (held pulls, the schedule topics).
        """
        self._listeners.append((fn, topics))

    def remove_arrival_listener(self, fn) -> None:
        """Undo :meth:`add_arrival_listener`."""
        for i, (f, _) in enumerate(self._listeners):
            if f == fn:
                del self._listeners[i]
                return

