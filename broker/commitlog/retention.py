"""Retention and the disk-space guard, mixed into :class:`rocketmq_emu.broker.store.MessageStore`
(RocketMQ 4.9 ``DefaultMessageStore.CleanCommitLogService`` / ``CleanConsumeQueueService`` and
the ``RunningFlags`` disk-full bit).

Every ``cleanResourceInterval`` (10 s, first run 60 s after start: ``addScheduleTask``) the store
runs :meth:`StoreRetention.clean_files_periodically`:

* the used ratio of the commitlog's and the consume queues' partitions is read (an injectable
  ``disk_usage(path) -> ratio``; default :func:`disk_used_ratio`) and judged by
  :func:`judge_space`: above ``diskMaxUsedSpaceRatio`` (75 %) files are cleaned whatever the hour;
  above ``diskSpaceCleanForciblyRatio`` (0.85) even unexpired ones; above
  ``diskSpaceWarningLevelRatio`` (0.90) the disk is marked full and puts answer
  SERVICE_NOT_AVAILABLE until a later check finds it below again;
* at a ``deleteWhen`` hour (``"04"``, ``;``-separated) or when space asks for it, commitlog files
  not modified for ``fileReservedTime`` hours (on the store's clock) are deleted from the head, at
  most 10 per run, never the file being written;
* once the commitlog's min offset moved, consume-queue files and index files whose messages all
  lie below it are deleted and each queue's min offset moves past the deleted messages.

Not reproduced: the pauses between deletions (``deleteCommitLogFilesInterval``,
``deleteConsumeQueueFilesInterval``: nothing here sleeps) and ``destroyMapedFileIntervalForcibly``
(Java waits for readers still holding a file; reads here copy the bytes they return).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

log = logging.getLogger(__name__)

#: ``MappedFileQueue.DELETE_FILES_BATCH_MAX``: commitlog files deleted per run at most.
DELETE_FILES_BATCH_MAX = 10
#: ``DefaultMessageStore.addScheduleTask``: first clean one minute after start (ms).
CLEAN_INITIAL_DELAY_MS = 60_000

#: ``disk_usage(path)``: used fraction (0..1) of the partition holding ``path``, -1 if unknown.
DiskUsage = Callable[[str], float]


def disk_used_ratio(path: str) -> float:
    """``UtilAll.getDiskPartitionSpaceUsedPercent``: (total - free) / total of the partition
    holding ``path`` (free counts the root-reserved blocks, as Java's ``File.getFreeSpace``),
    -1 when ``path`` does not exist or cannot be read."""
    if not os.path.exists(path):
        return -1.0
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return -1.0
    if usage.total <= 0:
        return -1.0
    return usage.used / usage.total


def is_time_to_delete(delete_when: str, now: float) -> bool:
    """``UtilAll.isItTimeToDo``: True when the local hour of ``now`` (seconds) is one of the
    ``;``-separated hours of ``delete_when``. A part that is not a number is ignored with a
    warning (Java's ``Integer.parseInt`` throws there, which skips the whole clean run,
    disk-space check included)."""
    hour = time.localtime(now).tm_hour
    for part in delete_when.split(";"):
        try:
            if int(part) == hour:
                return True
        except ValueError:
            log.warning("deleteWhen %r: %r is not an hour, ignored", delete_when, part)
    return False


def max_used_ratio(percent: int) -> float:
    """``MessageStoreConfig.getDiskMaxUsedSpaceRatio`` (clamped to 10..95) as a fraction."""
    return min(max(percent, 10), 95) / 100.0


class SpaceVerdict(NamedTuple):
    """What :func:`judge_space` decided."""

    #: Clean now, whatever the hour (``isSpaceToDelete``).
    space_to_delete: bool
    #: Delete files even if not expired (``cleanImmediately``).
    clean_immediately: bool
    #: The ``RunningFlags`` disk-full bit after the check.
    disk_full: bool


def judge_space(ratios: Sequence[float], max_ratio: float, warning_ratio: float,
                forcibly_ratio: float, disk_full: bool) -> SpaceVerdict:
    """``CleanCommitLogService.isSpaceToDelete`` over the partitions' used ratios in Java's
    order (commitlog, then consume queues). For each: above ``warning_ratio`` the disk is
    marked full and cleaning is immediate, above ``forcibly_ratio`` cleaning is immediate,
    otherwise the disk is marked OK; a ratio that is unknown (< 0) or above ``max_ratio`` ends
    the check with "space to delete" (later partitions are not looked at, as in Java)."""
    clean_immediately = False
    for ratio in ratios:
        if ratio > warning_ratio:
            if not disk_full:
                log.error("disk maybe full soon (used %.4f), marking the disk full: puts are "
                          "refused", ratio)
            disk_full = True
            clean_immediately = True
        elif ratio > forcibly_ratio:
            clean_immediately = True
        else:
            if disk_full:
                log.info("disk space OK again (used %.4f): puts are accepted", ratio)
            disk_full = False
        if ratio < 0 or ratio > max_ratio:
            log.info("disk maybe full soon (used %.4f), reclaiming space", ratio)
            return SpaceVerdict(True, clean_immediately, disk_full)
    return SpaceVerdict(False, clean_immediately, disk_full)


class StoreRetention:
    """Expects ``config``, ``clock``, ``commitlog``, ``consume_queues``, ``index``,
    ``corrupt_offsets``, ``disk_usage``, ``disk_full``, ``index_error``, ``writeable``,
    ``_last_physical_min_offset``, ``_cq_cache``, ``_drain_index`` and
    ``delete_topic`` (see :class:`rocketmq_emu.broker.store.MessageStore`)."""

    def clean_files_periodically(self) -> int:
        """One ``cleanFilesPeriodically`` run (commitlog, then consume queues and index);
        returns the commitlog files deleted."""
        cfg = self.config
        now = self.clock.seconds()
        timeup = is_time_to_delete(cfg.delete_when, now)
        verdict = judge_space(
            [self.disk_usage(cfg.commitlog_dir), self.disk_usage(cfg.consume_queue_dir)],
            max_used_ratio(cfg.disk_max_used_space_ratio),
            cfg.disk_space_warning_level_ratio / 100.0,
            cfg.disk_space_clean_forcibly_ratio / 100.0, self.disk_full,
        )
        if verdict.disk_full != self.disk_full:
            self.disk_full = verdict.disk_full
            self._writes_changed()
        deleted = 0
        if timeup or verdict.space_to_delete:
            at_once = cfg.clean_file_forcibly_enable and verdict.clean_immediately
            deleted = self._delete_commitlog_files(now, at_once)
            if not deleted and verdict.space_to_delete:
                log.warning("disk space will be full soon, but no commitlog file could be deleted")
        self._delete_logics_files()
        return deleted

    def clean_expired_files(self) -> int:
        """Delete expired commitlog files now, whatever the hour and the disk (an operator's
        or a test's clean), then the consume-queue and index files below the new minimum.
        Returns the commitlog files deleted."""
        deleted = self._delete_commitlog_files(self.clock.seconds(), False)
        self._delete_logics_files()
        return deleted

    def clean_expired_consume_queues(self, keep: Callable[[str], bool]) -> int:
        """``cleanExpiredConsumerQueue`` (admin code 306): destroy every queue whose last unit
        points below the commitlog's min offset, but those of the topics ``keep`` names (the
        broker's system topics: the schedule and timer services follow their queues' offsets,
        which a destroyed queue would restart from 0); returns how many."""
        min_offset = self.commitlog.min_offset
        destroyed = 0
        for topic, by_id in list(self.consume_queues.queues.items()):
            if keep(topic):
                continue
            for queue_id, cq in list(by_id.items()):
                last = cq.last_commitlog_offset
                if last == -1:
                    log.warning("maybe ConsumeQueue was created just now. topic=%s queueId=%d "
                                "maxPhysicOffset=%d minLogicOffset=%d.", topic, queue_id, last,
                                cq.min_offset * 20)
                elif last < min_offset:
                    log.info("cleanExpiredConsumerQueue: %s %d consumer queue destroyed, "
                             "minCommitLogOffset: %d maxCLOffsetInConsumeQueue: %d",
                             topic, queue_id, min_offset, last)
                    self._drop_queue(topic, queue_id)
                    destroyed += 1
            if topic not in self.consume_queues.queues:
                log.info("cleanExpiredConsumerQueue: %s,topic destroyed", topic)
        return destroyed

    def clean_unused_topics(self, keep: Callable[[str], bool]) -> list[str]:
        """``cleanUnusedTopic`` (admin code 316): destroy the consume queues of every topic
        ``keep`` does not name (the broker keeps its configured and system topics); returns the
        topics cleaned."""
        cleaned = []
        for topic in list(self.consume_queues.queues):
            if keep(topic):
                continue
            self.delete_topic(topic)
            log.info("cleanUnusedTopic: %s,topic destroyed", topic)
            cleaned.append(topic)
        return cleaned

    def _drop_queue(self, topic: str, queue_id: int) -> None:
        """Destroy one consume queue and forget its next queue offset
        (``commitLog.removeQueueFromTopicQueueTable`` + ``ConsumeQueue.destroy``)."""
        by_id = self.consume_queues.queues.get(topic, {})
        cq = by_id.pop(queue_id, None)
        if cq is not None:
            cq.destroy()
        self.commitlog.topic_queue_table.pop((topic, queue_id), None)
        # The dispatch path caches queue objects; a destroyed one must not be written again.
        self._cq_cache.pop((topic, queue_id), None)
        if not by_id:
            self.consume_queues.queues.pop(topic, None)

    def disk_util(self) -> str:
        """``SendMessageProcessor.diskUtil``: the used ratios of the commitlog, consume-queue
        and index partitions as the SERVICE_NOT_AVAILABLE remark shows them."""
        cfg = self.config
        cl, cq, index = (self.disk_usage(p) for p in (cfg.commitlog_dir, cfg.consume_queue_dir,
                                                      cfg.index_dir))
        return f"CL: {cl:5.2f} CQ: {cq:5.2f} INDEX: {index:5.2f}"

    def _writes_changed(self) -> None:
        """Recompute ``writeable`` after a ``RunningFlags`` bit changed."""
        self.writeable = not (self.disk_full or self.index_error)

    def _delete_commitlog_files(self, now: float, at_once: bool) -> int:
        """``CommitLog.deleteExpiredFile``: head files not modified for ``fileReservedTime``
        hours (any, with ``at_once``), stopping at the first one kept, never the last file."""
        expired_seconds = self.config.file_reserved_time * 3600
        deleted = self.commitlog.queue.delete_files(
            lambda mf: at_once or now - mf.last_modified >= expired_seconds,
            max_files=DELETE_FILES_BATCH_MAX,
        )
        if deleted:
            log.info("retention: deleted %d commitlog files%s, min offset now %d", len(deleted),
                     " (disk space)" if at_once else "", self.commitlog.min_offset)
        return len(deleted)

    def _delete_logics_files(self) -> None:
        """``CleanConsumeQueueService.deleteExpiredFiles``: once the commitlog's min offset
        moved, consume-queue and index files wholly below it go and queues' min offsets
        follow."""
        new_min = self.commitlog.min_offset
        if new_min <= self._last_physical_min_offset:
            return
        self._last_physical_min_offset = new_min
        self.consume_queues.delete_expired_files(new_min)
        if self.index is not None:
            self._drain_index()
            self.index.delete_expired_files(new_min)
        self.corrupt_offsets = {o for o in self.corrupt_offsets if o >= new_min}
