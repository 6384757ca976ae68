"""The read side of the message store facade (``DefaultMessageStore.getMessage`` and the
offset queries), mixed into :class:`rocketmq_emu.broker.store.MessageStore`.

``get_message`` follows RocketMQ 4.9 (protocol.md §3.2):

==========================  ==========================  =============================
condition                   status                      next_begin_offset
==========================  ==========================  =============================
no such queue               NO_MATCHED_LOGIC_QUEUE      0
queue empty (max 0)         NO_MESSAGE_IN_QUEUE         0
offset < min                OFFSET_TOO_SMALL            min
offset == max               OFFSET_OVERFLOW_ONE         offset
offset > max                OFFSET_OVERFLOW_BADLY       max
messages returned           FOUND                       offset + units scanned
all scanned filtered out    NO_MATCHED_MESSAGE          offset + units scanned
commitlog segment gone      MESSAGE_WAS_REMOVING        offset + units scanned
no unit readable            OFFSET_FOUND_NULL           start of the next CQ file
==========================  ==========================  =============================

Batch limits (``isTheBatchFull``): ``max_msg_nums``; 256 KiB / 32 messages while the data is
within ``access_message_in_memory_max_ratio`` % of RAM behind the commitlog end, else 64 KiB / 8;
at most ``max(16000, max_msg_nums * 20)`` bytes of units scanned.
"""

from __future__ import annotations

import logging
import os
from itertools import chain

from rocketmq_emu.broker.commitlog.commitlog import CommitLogError
from rocketmq_emu.broker.commitlog.record import (
    I32,
    I64,
    SYS_FLAG_AT,
    MessageRecord,
    store_timestamp_at,
)
from rocketmq_emu.broker.commitlog.results import GetMessageResult, GetMessageStatus
from rocketmq_emu.broker.consumequeue.unit import CQ_STORE_UNIT_SIZE, UNIT_STRUCT
from rocketmq_emu.broker.index.service import QueryOffsetResult

log = logging.getLogger(__name__)

_iter_units = UNIT_STRUCT.iter_unpack

try:
    _TOTAL_MEMORY = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
except (ValueError, OSError):  # pragma: no cover - non-POSIX
    _TOTAL_MEMORY = 8 << 30


class StoreReader:
    """Read methods; expects ``self.commitlog``, ``self.consume_queues``, ``self.config``,
    ``self.corrupt_offsets``, ``self.index`` and ``self._drain_index`` (StoreDispatch)."""

    # --- offsets ------------------------------------------------------------------------------
    @property
    def max_physical_offset(self) -> int:
        """End of the commitlog data."""
        return self.commitlog.max_offset

    @property
    def min_physical_offset(self) -> int:
        """First commitlog offset still on disk."""
        return self.commitlog.min_offset

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """Logical offset after the last unit (0 for an unknown queue)."""
        cq = self.consume_queues.find(topic, queue_id)
        return cq.max_offset if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """First live logical offset (0 for an unknown queue)."""
        cq = self.consume_queues.find(topic, queue_id)
        return cq.min_offset if cq is not None else 0

    def store_time_at(self, commitlog_offset: int, size: int = 0) -> int:
        """STORETIMESTAMP of the record at ``commitlog_offset``, -1 if unreadable."""
        mf = self.commitlog.queue.find_mapped_file_by_offset(commitlog_offset)
        if mf is None:
            return -1
        pos = commitlog_offset - mf.file_from_offset
        if pos + SYS_FLAG_AT + I32.size > mf.wrote_position:
            return -1
        at = pos + store_timestamp_at(I32.unpack_from(mf.mm, pos + SYS_FLAG_AT)[0])
        if at + I64.size > mf.wrote_position:
            return -1
        return I64.unpack_from(mf.mm, at)[0]

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, ts_ms: int) -> int:
        """``getOffsetInQueueByTime``: the logical offset whose store time is nearest
        ``ts_ms`` (see ``ConsumeQueue.offset_by_time``); 0 for an unknown queue."""
        cq = self.consume_queues.find(topic, queue_id)
        if cq is None:
            return 0
        return cq.offset_by_time(ts_ms, self.store_time_at, self.commitlog.min_offset)

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        """Store time of the first live message of the queue, -1 if none."""
        cq = self.consume_queues.find(topic, queue_id)
        if cq is None:
            return -1
        unit = cq.get_unit(cq.min_offset)
        if unit is None:
            return -1
        return self.store_time_at(unit[0], unit[1])

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        """Store time of the message at logical ``offset``, -1 if none."""
        cq = self.consume_queues.find(topic, queue_id)
        unit = cq.get_unit(offset) if cq is not None else None
        return self.store_time_at(unit[0], unit[1]) if unit is not None else -1

    def get_consume_queue_units(self, topic: str, queue_id: int, offset: int,
                                max_units: int) -> list[tuple[int, int, int]]:
        """Up to ``max_units`` (commitlog_offset, size, tags_code) from logical ``offset``."""
        cq = self.consume_queues.find(topic, queue_id)
        return cq.get_units(offset, max_units) if cq is not None else []

    # --- records ------------------------------------------------------------------------------
    def look_message_by_offset(self, commitlog_offset: int) -> MessageRecord | None:
        """The decoded record at ``commitlog_offset``, None (logged with file and offset) if
        there is no valid record there."""
        if commitlog_offset in self.corrupt_offsets:
            log.error("record at commitlog offset %d failed its CRC at recovery",
                      commitlog_offset)
            return None
        try:
            return self.commitlog.look(commitlog_offset)
        except CommitLogError as exc:
            log.warning("look_message_by_offset: %s", exc)
            return None

    def read_raw(self, commitlog_offset: int, size: int | None = None) -> bytes:
        """The stored bytes of the record at ``commitlog_offset``; CommitLogError (naming the
        file and offset) when there is no valid record there."""
        if commitlog_offset in self.corrupt_offsets:
            raise CommitLogError("record failed its CRC at recovery",
                                 self.commitlog.queue.store_path, commitlog_offset)
        return self.commitlog.read_raw(commitlog_offset, size)

    # --- get_message --------------------------------------------------------------------------
    def get_message(self, group: str, topic: str, queue_id: int, offset: int,
                    max_msg_nums: int, tags_filter=None, record_filter=None) -> GetMessageResult:
        """Pull up to ``max_msg_nums`` raw records from logical ``offset``.

        ``tags_filter(tags_code) -> bool`` (None: everything matches); ``record_filter(raw)
        -> bool`` is applied to each record read (``MessageFilter.isMatchedByCommitLog``, the
        SQL92 property filter of :mod:`rocketmq_emu.broker.filter`).
        """
        cq = self.consume_queues.find(topic, queue_id)
        if cq is None:
            return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 0)
        min_off, max_off = cq.min_offset, cq.max_offset
        res = GetMessageResult(GetMessageStatus.NO_MATCHED_MESSAGE, offset, min_off, max_off)
        if max_off == 0:
            res.status, res.next_begin_offset = GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0
            return res
        if offset < min_off:
            res.status, res.next_begin_offset = GetMessageStatus.OFFSET_TOO_SMALL, min_off
            return res
        if offset == max_off:
            res.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
            return res
        if offset > max_off:
            res.status, res.next_begin_offset = GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_off
            return res
        cfg = self.config
        max_units = max(16000, max_msg_nums * CQ_STORE_UNIT_SIZE) // CQ_STORE_UNIT_SIZE
        # getIndexBuffer: the window's units as stored, decoded below one by one as the scan
        # goes (a 32-message pull reads 800 units' bytes and usually decodes 32 of them).
        window = cq.unit_bytes(offset, max_units)
        if not window:
            per_file = cq.mapped_file_size // CQ_STORE_UNIT_SIZE
            res.status = GetMessageStatus.OFFSET_FOUND_NULL
            res.next_begin_offset = offset + per_file - offset % per_file
            return res
        commitlog = self.commitlog
        # checkInDiskByCommitOffset: a message more than accessMessageInMemoryMaxRatio % of RAM
        # behind the commitlog's end is "in disk", and isTheBatchFull's limits are smaller.
        in_disk_below = commitlog.max_offset - (
            _TOTAL_MEMORY * cfg.access_message_in_memory_max_ratio // 100)
        mem_bytes = cfg.max_transfer_bytes_on_message_in_memory
        mem_count = cfg.max_transfer_count_on_message_in_memory
        disk_bytes = cfg.max_transfer_bytes_on_message_in_disk
        disk_count = cfg.max_transfer_count_on_message_in_disk
        find_file = commitlog.queue.find_mapped_file_by_offset
        corrupt = self.corrupt_offsets
        messages = res.messages
        qoffs = res.queue_offsets
        cl_offs = res.commitlog_offsets
        total = count = 0
        next_phy_file_start = -1  # commitlog offsets are >= 0: -1 skips nothing
        # The commitlog file read last: records of one pull mostly share it.
        mm = None
        file_start = file_end = 0
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        units = chain.from_iterable(map(_iter_units, window))
        for queue_offset, (phy, size, tags) in enumerate(units, offset):
            if count:  # isTheBatchFull: this unit is left for the next pull
                if count >= max_msg_nums:
                    break
                if phy < in_disk_below:
                    if total + size > disk_bytes or count >= disk_count:
                        break
                elif total + size > mem_bytes or count >= mem_count:
                    break
            if phy < next_phy_file_start:
                continue
            if tags_filter is not None and not tags_filter(tags):
                continue
            if phy in corrupt:
                log.error("skipping corrupt record at commitlog offset %d (%s-%d offset %d)",
                          phy, topic, queue_id, queue_offset)
                continue
            if phy < file_start or phy + size > file_end:
                # CommitLog.getMessage(offsetPy, sizePy): the file holding the record, which
                # must hold all of it; none (deleted by retention): skip to the next file.
                mf = find_file(phy)
                if mf is None or phy + size > mf.file_from_offset + mf.wrote_position:
                    if not count:
                        status = GetMessageStatus.MESSAGE_WAS_REMOVING
                    next_phy_file_start = commitlog.roll_next_file(phy)
                    continue
                mm = mf.mm
                file_start = mf.file_from_offset
                file_end = file_start + mf.wrote_position
            pos = phy - file_start
            data = mm[pos:pos + size]
            if record_filter is not None and not record_filter(data):
                continue
            messages.append(data)
            qoffs.append(queue_offset)
            cl_offs.append(phy)
            total += size
            count += 1
        else:  # every unit of the window was scanned
            queue_offset = offset + sum(map(len, window)) // CQ_STORE_UNIT_SIZE
        if count:
            status = GetMessageStatus.FOUND
        res.status = status
        res.next_begin_offset = queue_offset
        res.buffer_total_size = total
        return res

    # --- reads needing the index --------------------------------------------------------------
    def query_message_offsets(self, topic: str, key: str, max_num: int, begin_ms: int,
                              end_ms: int):
        """The index lookup (``QueryOffsetResult``: phy_offsets newest first plus
        index_last_update_timestamp / _phyoffset for QUERY_MESSAGE's response header)."""
        if self.index is None:
            return QueryOffsetResult()
        self._drain_index()
        return self.index.query(topic, key, max_num, begin_ms, end_ms)

    def query_message(self, topic: str, key: str, max_num: int, begin_ms: int,
                      end_ms: int) -> list[bytes]:
        """Raw records indexed under ``topic#key`` (UNIQ_KEY or a KEYS token), newest first."""
        out = []
        for off in self.query_message_offsets(topic, key, max_num, begin_ms, end_ms).phy_offsets:
            if off in self.corrupt_offsets:
                continue
            try:
                out.append(self.commitlog.read_raw(off))
            except CommitLogError as exc:
                log.warning("query_message: %s", exc)
        return out
