"""The commitlog: every message of every topic appended to one stream of mapped files
(RocketMQ ``store/CommitLog.java`` with its ``DefaultAppendMessageCallback``).

Append rules mirrored from Java:

* PHYSICALOFFSET = file start + position; STORETIMESTAMP from the store's clock (ms);
  BODYCRC = ``zlib.crc32(body) & 0x7FFFFFFF``; QUEUEOFFSET from the per ``(topic, queueId)``
  table, not advanced for PREPARED / ROLLBACK transaction records (their QUEUEOFFSET is 0).
* ``END_FILE_MIN_BLANK_LENGTH``: when ``size + END_FILE_MIN_BLANK_LENGTH`` does not fit in the current file, the
  remainder gets the 8-byte BLANK filler and the record goes to the start of the next file.
* A record (or batch) bigger than a whole file: MESSAGE_SIZE_EXCEEDED.

Reads verify what they return: a wrong magic or a length beyond the written data raises
:class:`CommitLogError` naming the file and offset.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from rocketmq_emu.broker.commitlog.batch import append_batch_fast
from rocketmq_emu.broker.commitlog.bodycrc import crc32
from rocketmq_emu.broker.commitlog.encoder import PropertiesTooLong, RecordEncoder, props_string
from rocketmq_emu.broker.commitlog.mapped_file import MappedFile, MappedFileError
from rocketmq_emu.broker.commitlog.mapped_file_queue import MappedFileQueue
from rocketmq_emu.broker.commitlog.record import (
    BLANK_MAGIC_CODE,
    BLANK_STRUCT,
    END_FILE_MIN_BLANK_LENGTH,
    I16,
    I32,
    MAX_PROPERTIES_LENGTH,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    PEEK,
    V4,
    MessageRecord,
    RecordError,
    decode_record,
)
from rocketmq_emu.broker.commitlog.results import AppendMessageResult, AppendMessageStatus
from rocketmq_emu.broker.message import (
    BORNHOST_V6_FLAG,
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)

log = logging.getLogger(__name__)

#: Bytes of an IPv4 record besides body, topic block and properties: the fixed fields and
#: propertiesLength.
_FIXED_SIZE = V4.size + I16.size
_HOST_FLAGS = ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)
_crc32 = crc32  # zlib-ng's when installed (same CRC-32, ~7x faster at 1 KiB)
_tuple_new = tuple.__new__
_PUT_OK = AppendMessageStatus.PUT_OK
_UNKNOWN = AppendMessageStatus.UNKNOWN_ERROR
_MAGICS = (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2)
_TX_MASK = 0xC


class CommitLogError(MappedFileError):
    """A commitlog read that found something other than a valid record."""


def _not_in_queue(sys_flag: int) -> bool:
    """PREPARED and ROLLBACK records get no queue offset (``CommitLog.doAppend``)."""
    t = sys_flag & _TX_MASK
    return t == TRANSACTION_PREPARED_TYPE or t == TRANSACTION_ROLLBACK_TYPE


class CommitLog:
    """The commitlog of one store. ``clock`` is an ``IReactorTime``."""

    def __init__(self, store_path: str, mapped_file_size: int, clock, *, warm: bool = True) -> None:
        self.clock = clock
        self.mapped_file_size = mapped_file_size
        self.queue = MappedFileQueue(store_path, mapped_file_size, warm=warm, clock=clock)
        #: ``topicQueueTable``: next queue offset per (topic, queueId).
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        self.encoder = RecordEncoder()
        #: Store timestamp of the newest appended record (for the checkpoint).
        self.last_store_timestamp = 0
        #: After :meth:`append_batch` took the fast path: a ``BatchStamp`` whose ``apply()``
        #: sets the records' store fields (left unset until needed); None otherwise.
        self.last_batch_stamp = None
        self._last_born = self._last_store = None
        self._last_pair: tuple = ()

    # --- lifecycle ----------------------------------------------------------------------------
    def load(self) -> bool:
        """Map the existing files (positions are fixed by recovery)."""
        return self.queue.load()

    def shutdown(self) -> None:
        self.queue.shutdown()

    @property
    def min_offset(self) -> int:
        """``getMinOffset``: start of the first file (0 when empty)."""
        first = self.queue.first_file
        return first.file_from_offset if first is not None else 0

    @property
    def max_offset(self) -> int:
        """``getMaxOffset``: end of the written data."""
        return self.queue.get_max_offset()

    def roll_next_file(self, offset: int) -> int:
        """Start of the file after the one holding ``offset``."""
        size = self.mapped_file_size
        return offset + size - offset % size

    # --- append -------------------------------------------------------------------------------
    def _writable(self, need: int) -> MappedFile:
        """The file to write ``need`` bytes into, after a BLANK filler if they do not fit."""
        q = self.queue
        mf = q.files[-1] if q.files else None
        if mf is None or mf.wrote_position >= mf.file_size:
            mf = q.get_last_mapped_file(0)
        pos = mf.wrote_position
        remaining = mf.file_size - pos
        if need + END_FILE_MIN_BLANK_LENGTH > remaining:
            BLANK_STRUCT.pack_into(mf.mm, pos, remaining, BLANK_MAGIC_CODE)
            mf.wrote_position = mf.file_size
            mf = q.get_last_mapped_file(0)
        return mf

    def append(self, record: MessageRecord) -> AppendMessageResult:
        """Append one record; sets its offsets, timestamp, CRC, size and magic. Raises
        MappedFileError when a new file cannot be created (full disk, permissions).

        The hot path (IPv4 hosts) is written out inline: the whole record with TOTALSIZE 0 in
        one ``pack_into`` (a struct per record shape), then TOTALSIZE, so a write killed
        midway leaves TOTALSIZE 0 (end of data) and never a shorter record that would pass for
        valid.
        """
        enc = self.encoder
        born = record.born_host
        store = record.store_host
        if born == self._last_born and store == self._last_store:
            born_b, store_b, host_flags, v4 = self._last_pair
        else:
            born_b, store_b, host_flags, v4 = self._last_pair = enc.host_pair(born, store)
            self._last_born, self._last_store = born, store
        if not v4:
            return self._append_general(record)  # IPv6 hosts
        topic_t = enc.topic_blocks.get(record.topic)
        ps = record.properties_str
        try:
            if topic_t is None:
                topic_t = enc.topic(record.topic)
            props = (ps if ps is not None else props_string(record.properties)).encode()
        except RecordError as exc:
            return _tuple_new(AppendMessageResult, (_UNKNOWN, 0, 0, 0, 0, 1, record.store_host,
                                                    None, str(exc)))
        plen = len(props)
        if plen > MAX_PROPERTIES_LENGTH:
            return AppendMessageResult(
                AppendMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                error=f"properties length {plen} exceeds {MAX_PROPERTIES_LENGTH} bytes")
        body = record.body
        blen = len(body)
        tb, magic = topic_t
        size = _FIXED_SIZE + blen + len(tb) + plen
        if size + END_FILE_MIN_BLANK_LENGTH > self.mapped_file_size:
            return AppendMessageResult(
                AppendMessageStatus.MESSAGE_SIZE_EXCEEDED,
                error=f"record of {size} bytes does not fit a {self.mapped_file_size}-byte file",
            )
        files = self.queue.files
        mf = files[-1] if files else None
        if mf is None or size + END_FILE_MIN_BLANK_LENGTH > mf.file_size - mf.wrote_position:
            mf = self._writable(size)
        pos = mf.wrote_position
        offset = mf.file_from_offset + pos
        now = self.clock.seconds()
        ts = int(now * 1000)
        crc = _crc32(body) & 0x7FFFFFFF
        sys_flag = (record.sys_flag & _HOST_FLAGS) | host_flags
        t = sys_flag & _TX_MASK
        if t == TRANSACTION_PREPARED_TYPE or t == TRANSACTION_ROLLBACK_TYPE:
            qoff = 0
        else:
            key = (record.topic, record.queue_id)
            table = self.topic_queue_table
            qoff = table.get(key, 0)
            table[key] = qoff + 1
        mm = mf.mm
        shape = enc.shapes.get((blen, len(tb), plen)) or enc.shape(blen, len(tb), plen)
        # The whole record in one C call, TOTALSIZE 0 until the patch below.
        shape(mm, pos, 0, magic, crc, record.queue_id, record.flag, qoff, offset, sys_flag,
              record.born_timestamp, born_b, ts, store_b, record.reconsume_times,
              record.prepared_transaction_offset, blen, bytes(body), tb, plen, props)
        I32.pack_into(mm, pos, size)
        mf.wrote_position = pos + size  # published only once the whole record is in
        mf.last_modified = now
        self.last_store_timestamp = ts
        record.store_timestamp = ts
        record.body_crc = crc
        record.physical_offset = offset
        record.queue_offset = qoff
        record.total_size = size
        record.magic_code = magic
        record.sys_flag = sys_flag
        return _tuple_new(AppendMessageResult, (_PUT_OK, offset, size, ts, qoff, 1,
                                                record.store_host, None, None))

    def _append_general(self, record: MessageRecord) -> AppendMessageResult:
        """IPv6 hosts: the encoder's prepare/write."""
        try:
            prep = self.encoder.prepare(record)
        except PropertiesTooLong as exc:
            return AppendMessageResult(AppendMessageStatus.PROPERTIES_SIZE_EXCEEDED, error=str(exc))
        except RecordError as exc:
            return AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR, error=str(exc))
        size = prep.size
        if size + END_FILE_MIN_BLANK_LENGTH > self.mapped_file_size:
            return AppendMessageResult(
                AppendMessageStatus.MESSAGE_SIZE_EXCEEDED,
                error=f"record of {size} bytes does not fit a {self.mapped_file_size}-byte file",
            )
        mf = self._writable(size)
        pos = mf.wrote_position
        now = self.clock.seconds()
        ts = int(now * 1000)
        record.store_timestamp = ts
        record.body_crc = _crc32(record.body) & 0x7FFFFFFF
        record.physical_offset = offset = mf.file_from_offset + pos
        if _not_in_queue(record.sys_flag):
            qoff = 0
        else:
            key = (record.topic, record.queue_id)
            qoff = self.topic_queue_table.get(key, 0)
            self.topic_queue_table[key] = qoff + 1
        record.queue_offset = qoff
        self.encoder.write(mf.mm, pos, record, prep)
        mf.wrote_position = pos + size
        mf.last_modified = now
        self.last_store_timestamp = ts
        return _tuple_new(AppendMessageResult, (_PUT_OK, offset, size, ts, qoff, 1,
                                                record.store_host, None, None))

    def append_batch(self, records: list[MessageRecord]) -> AppendMessageResult:
        """Append records of one (topic, queueId) contiguously in one file, with consecutive
        queue offsets (``CommitLog.putMessages`` / ``doAppend(MessageExtBatch)``)."""
        if not records:
            return AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR, error="empty batch")
        self.last_batch_stamp = None
        fast = append_batch_fast(self, records)
        if fast is not None:
            res, self.last_batch_stamp = fast
            return res
        enc = self.encoder
        try:
            preps = [enc.prepare(r) for r in records]
        except PropertiesTooLong as exc:
            return AppendMessageResult(AppendMessageStatus.PROPERTIES_SIZE_EXCEEDED, error=str(exc))
        except RecordError as exc:
            return AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR, error=str(exc))
        total = sum(p.size for p in preps)
        if total + END_FILE_MIN_BLANK_LENGTH > self.mapped_file_size:
            return AppendMessageResult(
                AppendMessageStatus.MESSAGE_SIZE_EXCEEDED,
                error=f"batch of {total} bytes does not fit a {self.mapped_file_size}-byte file",
            )
        now = self.clock.seconds()
        ts = int(now * 1000)
        mf = self._writable(total)
        pos = mf.wrote_position
        first = mf.file_from_offset + pos
        first_qoff = None
        offsets = []
        table = self.topic_queue_table
        mm = mf.mm
        for rec, prep in zip(records, preps, strict=True):
            rec.store_timestamp = ts
            rec.body_crc = _crc32(rec.body) & 0x7FFFFFFF
            rec.physical_offset = off = mf.file_from_offset + pos
            if _not_in_queue(rec.sys_flag):
                rec.queue_offset = 0
            else:
                key = (rec.topic, rec.queue_id)
                rec.queue_offset = table.get(key, 0)
                table[key] = rec.queue_offset + 1
            if first_qoff is None:
                first_qoff = rec.queue_offset
            enc.write(mm, pos, rec, prep)
            pos += prep.size
            offsets.append(off)
        mf.wrote_position = pos
        mf.last_modified = now
        self.last_store_timestamp = ts
        return AppendMessageResult(
            AppendMessageStatus.PUT_OK, first, total, ts, first_qoff or 0, len(records),
            records[0].store_host, offsets,
        )

    # --- read ---------------------------------------------------------------------------------
    def _locate(self, offset: int) -> tuple[MappedFile, int]:
        mf = self.queue.find_mapped_file_by_offset(offset)
        if mf is None:
            raise CommitLogError("no commitlog file holds this offset", self.queue.store_path,
                                 offset)
        return mf, offset - mf.file_from_offset

    def record_size_at(self, offset: int) -> int:
        """TOTALSIZE of the record at ``offset``, checked (magic, bounds)."""
        mf, pos = self._locate(offset)
        if pos + PEEK.size > mf.wrote_position:
            raise CommitLogError("no record at offset (beyond the written data)", mf.path, offset)
        size, magic = PEEK.unpack_from(mf.mm, pos)
        if magic not in _MAGICS:
            raise CommitLogError(f"wrong magic {magic & 0xFFFFFFFF:#010x}", mf.path, offset)
        if size <= 0 or pos + size > mf.wrote_position:
            raise CommitLogError(f"record length {size} runs beyond the written data",
                                 mf.path, offset)
        return size

    def read_raw(self, offset: int, size: int | None = None) -> bytes:
        """The record bytes at ``offset`` (``size`` checked against TOTALSIZE when given)."""
        actual = self.record_size_at(offset)
        if size is not None and size != actual:
            mf, _ = self._locate(offset)
            raise CommitLogError(f"expected a {size}-byte record, TOTALSIZE is {actual}",
                                 mf.path, offset)
        mf, pos = self._locate(offset)
        return mf.mm[pos : pos + actual]

    def look(self, offset: int, *, with_body: bool = True) -> MessageRecord:
        """Decode the record at ``offset``; CommitLogError names the file on corruption."""
        raw = self.read_raw(offset)
        try:
            return decode_record(raw, 0, with_body=with_body)
        except RecordError as exc:
            mf, _ = self._locate(offset)
            raise CommitLogError(f"corrupt record ({exc})", mf.path, offset) from exc

    def iter_records(
        self, start: int, *, with_body: bool = False, check_crc: bool = False
    ) -> Iterator[MessageRecord]:
        """Decoded records from ``start`` to the end, across files (reput / rebuild).

        A corrupt record raises CommitLogError (recovery truncates before this is used).
        """
        offset = max(start, self.min_offset)
        while True:
            mf = self.queue.find_mapped_file_by_offset(offset)
            if mf is None:
                return
            pos = offset - mf.file_from_offset
            mm = mf.mm
            wrote = mf.wrote_position
            while pos + PEEK.size <= wrote:
                size, magic = PEEK.unpack_from(mm, pos)
                if magic == BLANK_MAGIC_CODE or size == 0:
                    break
                try:
                    rec = decode_record(mm[pos : pos + size] if size > 0 else b"", 0,
                                        with_body=with_body, check_crc=check_crc)
                except RecordError as exc:
                    raise CommitLogError(f"corrupt record ({exc})", mf.path,
                                         mf.file_from_offset + pos) from exc
                yield rec
                pos += size
            if mf is self.queue.last_file:
                return
            offset = mf.file_from_offset + mf.file_size
