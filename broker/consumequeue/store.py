"""All consume queues of a store and the dispatch step that feeds them and the index.

* :class:`ConsumeQueueStore`: ``{storePathRootDir}/consumequeue/{topic}/{queueId}/`` for every
  queue (RocketMQ ``DefaultMessageStore.consumeQueueTable``, ``findConsumeQueue``,
  ``loadConsumeQueue``, ``recoverConsumeQueue``, ``deleteTopics``).
* :class:`DispatchRequest` and :func:`dispatch`: what the reput step hands over for each
  commitlog record (``store/DispatchRequest.java``, ``CommitLogDispatcherBuildConsumeQueue``,
  ``CommitLogDispatcherBuildIndex``).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field

from rocketmq_emu.broker.consumequeue.consume_queue import DEFAULT_CQ_FILE_SIZE, ConsumeQueue
from rocketmq_emu.broker.message import (
    PROPERTY_KEYS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    tags_code,
    transaction_type,
)

log = logging.getLogger(__name__)


@dataclass(slots=True)
class DispatchRequest:
    """One record as the dispatch step sees it (``DispatchRequest``)."""

    topic: str
    queue_id: int
    commitlog_offset: int
    msg_size: int
    tags_code: int
    store_timestamp: int
    consume_queue_offset: int
    keys: list[str] = field(default_factory=list)
    uniq_key: str | None = None
    sys_flag: int = 0

    @classmethod
    def from_record(cls, record, tags_code_override: int | None = None) -> DispatchRequest:
        """Build from a stored :class:`rocketmq_emu.broker.commitlog.record.MessageRecord`.

        ``tags_code_override``: the caller's tagsCode when it is not the TAGS hash
        (``SCHEDULE_TOPIC_XXXX`` stores the deliver timestamp, ``CommitLog.checkMessageAndReturnSize``).
        """
        props = record.properties
        raw_keys = props.get(PROPERTY_KEYS)
        return cls(
            topic=record.topic,
            queue_id=record.queue_id,
            commitlog_offset=record.physical_offset,
            msg_size=record.total_size,
            tags_code=(tags_code(record.tags) if tags_code_override is None
                       else tags_code_override),
            store_timestamp=record.store_timestamp,
            consume_queue_offset=record.queue_offset,
            keys=[k for k in raw_keys.split(" ") if k] if raw_keys else [],
            uniq_key=props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
            sys_flag=record.sys_flag,
        )


class ConsumeQueueStore:
    """Every (topic, queueId) consume queue under one directory."""

    def __init__(
        self,
        root_dir: str,
        mapped_file_size: int = DEFAULT_CQ_FILE_SIZE,
        *,
        clock=None,
        warm: bool = False,
    ) -> None:
        """``root_dir`` is ``{storePathRootDir}/consumequeue``."""
        self.root_dir = root_dir
        self.mapped_file_size = mapped_file_size
        self.clock = clock
        self.warm = warm
        self.queues: dict[str, dict[int, ConsumeQueue]] = {}

    def _new_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        # The topic becomes a directory name: never let one escape the consumequeue directory,
        # whatever the processors validated (TopicValidator allows only [%|a-zA-Z0-9_-]).
        if not topic or topic in (".", "..") or "/" in topic or "\0" in topic:
            raise ValueError(f"topic {topic!r} cannot be a consume queue directory name")
        return ConsumeQueue(topic, queue_id, self.root_dir, self.mapped_file_size,
                            clock=self.clock, warm=self.warm)

    # --- lookup -------------------------------------------------------------------------------
    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """The queue if it exists."""
        return self.queues.get(topic, {}).get(queue_id)

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        """``findConsumeQueue``: the queue, created (without files yet) on first use."""
        by_id = self.queues.get(topic)
        if by_id is None:
            by_id = self.queues[topic] = {}
        cq = by_id.get(queue_id)
        if cq is None:
            cq = by_id[queue_id] = self._new_queue(topic, queue_id)
        return cq

    def __iter__(self) -> Iterator[ConsumeQueue]:
        for by_id in list(self.queues.values()):
            yield from list(by_id.values())

    def topics(self) -> list[str]:
        """Topics that have at least one queue."""
        return list(self.queues)

    # --- lifecycle ----------------------------------------------------------------------------
    def load(self) -> bool:
        """Map every ``{topic}/{queueId}`` directory (``loadConsumeQueue``); other entries are
        logged and ignored. A bad file raises ``MappedFileError`` naming it."""
        if not os.path.isdir(self.root_dir):
            return True
        for topic in sorted(os.listdir(self.root_dir)):
            topic_dir = os.path.join(self.root_dir, topic)
            if not os.path.isdir(topic_dir):
                log.warning("ignoring %s: not a topic directory", topic_dir)
                continue
            for qid in sorted(os.listdir(topic_dir)):
                qdir = os.path.join(topic_dir, qid)
                if not (os.path.isdir(qdir) and qid.lstrip("-").isdigit()):
                    log.warning("ignoring %s: not a queue directory", qdir)
                    continue
                cq = self.find_or_create(topic, int(qid))
                cq.load()
        return True

    def recover(self) -> int:
        """Recover every queue (``recoverConsumeQueue``); returns the highest commitlog offset
        any of them points past (-1 if none), where commitlog recovery may start checking."""
        highest = -1
        for cq in self:
            highest = max(highest, cq.recover())
        return highest

    def flush(self, flush_least_pages: int = 0) -> bool:
        """Flush every queue; True if anything was written to disk."""
        flushed = False
        for cq in self:
            flushed = cq.flush(flush_least_pages) or flushed
        return flushed

    def flush_plans(self) -> list:
        """One :class:`~broker.commitlog.disk_sync.FlushPlan` per queue with unflushed units
        (the threaded counterpart of :meth:`flush`: the store syncs them in its flush thread)."""
        plans = []
        for cq in self:
            plan = cq.mfq.flush_plan(0)
            if plan is not None:
                plans.append(plan)
        return plans

    def shutdown(self) -> None:
        """Flush and unmap every queue."""
        for cq in self:
            cq.shutdown()

    def destroy(self) -> None:
        """Delete every queue and the directory."""
        for cq in self:
            cq.destroy()
        self.queues.clear()
        shutil.rmtree(self.root_dir, ignore_errors=True)

    # --- store-wide operations ----------------------------------------------------------------
    def put(self, topic: str, queue_id: int, queue_offset: int, commitlog_offset: int,
            size: int, tags_code_: int) -> bool:
        """Write one unit (see :meth:`ConsumeQueue.put`)."""
        return self.find_or_create(topic, queue_id).put(
            queue_offset, commitlog_offset, size, tags_code_
        )

    def truncate_dirty(self, max_commitlog_offset: int) -> None:
        """Drop every unit pointing at or beyond the commitlog's valid end."""
        for cq in self:
            cq.truncate_dirty(max_commitlog_offset)

    def correct_min_offset(self, min_commitlog_offset: int) -> None:
        """Move each queue's min offset past messages no longer in the commitlog."""
        for cq in self:
            cq.correct_min_offset(min_commitlog_offset)

    def delete_expired_files(self, min_commitlog_offset: int) -> int:
        """Retention for every queue; returns files deleted."""
        return sum(cq.delete_expired_files(min_commitlog_offset) for cq in self)

    def delete_topic(self, topic: str) -> bool:
        """Delete every queue of ``topic`` and its directory; False if it had none."""
        by_id = self.queues.pop(topic, None)
        topic_dir = os.path.join(self.root_dir, topic)
        if by_id:
            for cq in by_id.values():
                cq.destroy()
        existed = bool(by_id) or os.path.isdir(topic_dir)
        shutil.rmtree(topic_dir, ignore_errors=True)
        if existed:
            log.info("deleted consume queues of topic %s", topic)
        return existed

    def max_offsets(self) -> dict[str, dict[int, int]]:
        """topic -> queueId -> max offset (``recoverTopicQueueTable``: where the store continues
        assigning queue offsets after recovery)."""
        return {t: {q: cq.max_offset for q, cq in by_id.items()} for t, by_id in self.queues.items()}


def dispatch(request: DispatchRequest, queues: ConsumeQueueStore, index=None) -> None:
    """Feed one record to its consume queue and (if given) the index service.

    Half (prepared) and rolled-back transaction records get no consume-queue unit
    (``CommitLogDispatcherBuildConsumeQueue``); rolled-back ones are not indexed either
    (``IndexService.buildIndex``).
    """
    tran = transaction_type(request.sys_flag)
    if tran in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
        queues.put(request.topic, request.queue_id, request.consume_queue_offset,
                   request.commitlog_offset, request.msg_size, request.tags_code)
    if index is not None and tran != TRANSACTION_ROLLBACK_TYPE:
        index.put(request.topic, request.keys, request.uniq_key, request.commitlog_offset,
                  request.store_timestamp)
