"""Commitlog recovery at start-up (RocketMQ ``CommitLog.recoverNormally`` /
``recoverAbnormally`` and ``checkMessageAndReturnSize``).

* Normal (no ``abort`` file): scan from the third-to-last file.
* Abnormal (``abort`` present, i.e. a crash): scan from the newest file whose first record was
  stored before the checkpoint's ``min_timestamp``; the store re-dispatches from there.

Each record is checked: magic, TOTALSIZE within the file, TOTALSIZE equal to the length its
fields add up to, body CRC (``checkCRCOnRecover``). The valid end is where the data stops
(zeros, a TOTALSIZE of 0 left by a write killed before it published the record, or a bad record
with nothing but zeros after it: a torn tail). The tail is then zeroed and later files deleted.

Where RocketMQ would truncate at the first bad record even with good data after it, we refuse
to throw acknowledged data away:

* a record whose framing is intact but whose body CRC is wrong, followed by more records, is
  kept and reported in ``corrupt_offsets`` (the store never serves it);
* a negative TOTALSIZE in front of a record's magic is a batch written but never published
  (``batch.append_batch_fast`` packs ``-batch_bytes`` there until the batch is in place): that
  whole extent goes;
* a record with broken framing (wrong magic, impossible length), or the end of the records,
  with a valid (CRC-checked) record somewhere after it stops recovery with
  :class:`RecoveryError` naming the file and offset: only bytes with no valid record after them
  are a torn tail.
"""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass, field

from rocketmq_emu.broker.commitlog.commitlog import CommitLog
from rocketmq_emu.broker.commitlog.mapped_file import MappedFile, MappedFileError
from rocketmq_emu.broker.commitlog.record import (
    BLANK_MAGIC_CODE,
    BODY_CRC_AT,
    BODY_LENGTH_AT_BY_HOSTS,
    I16,
    I32,
    I64,
    MAGIC_CODE_AT,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MIN_RECORD_SIZE,
    MIN_TAIL_SIZE,
    PEEK,
    STORE_TIMESTAMP_AT_BY_HOSTS,
    SYS_FLAG_AT,
)
from rocketmq_emu.broker.message import BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG

log = logging.getLogger(__name__)

_V6_BITS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG

END = 0
BLANK = -1


class RecoveryError(MappedFileError):
    """Corruption that recovery will not repair by truncation (acknowledged data follows)."""


class BadRecord(Exception):
    """A record that fails a check: ``framing`` False means only the CRC is wrong."""

    def __init__(self, reason: str, size: int = 0, framing: bool = True) -> None:
        super().__init__(reason)
        self.size = size
        self.framing = framing


def check_record(mm, pos: int, limit: int, check_crc: bool) -> int:
    """Size of the valid record at ``pos``; END (0) for end of data, BLANK (-1) for the
    end-of-file filler; raises :class:`BadRecord`."""
    if pos + PEEK.size > limit:
        return END
    size, magic = PEEK.unpack_from(mm, pos)
    if magic == BLANK_MAGIC_CODE:
        return BLANK
    if size == 0 or size < 0 and magic in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
        # zeros, a record whose header was never written, or a batch never published
        return END
    if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
        raise BadRecord(f"wrong magic {magic & 0xFFFFFFFF:#010x}")
    if size < MIN_RECORD_SIZE or pos + size > limit:
        raise BadRecord(f"TOTALSIZE {size} impossible ({limit - pos} bytes left in the file)")
    sys_flag = I32.unpack_from(mm, pos + SYS_FLAG_AT)[0]
    p = pos + BODY_LENGTH_AT_BY_HOSTS[sys_flag & _V6_BITS]
    body_len = I32.unpack_from(mm, p)[0]
    p += I32.size
    end = pos + size
    if body_len < 0 or p + body_len + MIN_TAIL_SIZE > end:
        raise BadRecord(f"BODYLENGTH {body_len} does not fit TOTALSIZE {size}")
    body_at = p
    p += body_len
    if magic == MESSAGE_MAGIC_CODE:
        topic_len = mm[p]  # V1: a one-byte topicLength
        p += 1
    else:
        topic_len = I16.unpack_from(mm, p)[0]
        p += I16.size
    p += topic_len
    if topic_len < 0 or p + I16.size > end:
        raise BadRecord(f"TOPICLENGTH {topic_len} does not fit TOTALSIZE {size}")
    props_len = I16.unpack_from(mm, p)[0]
    p += I16.size + props_len
    if props_len < 0 or p != end:
        raise BadRecord(f"TOTALSIZE {size} but the fields add up to {p - pos}")
    if check_crc:
        crc = I32.unpack_from(mm, pos + BODY_CRC_AT)[0]
        if zlib.crc32(memoryview(mm)[body_at : body_at + body_len]) & 0x7FFFFFFF != crc:
            raise BadRecord(f"BODYCRC mismatch (stored {crc})", size, framing=False)
    return size


def first_store_timestamp(mf: MappedFile) -> int:
    """STORETIMESTAMP of the file's first record, 0 if it does not start with a record."""
    size, magic = PEEK.unpack_from(mf.mm, 0)
    if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2) or size <= 0:
        return 0
    sys_flag = I32.unpack_from(mf.mm, SYS_FLAG_AT)[0]
    return I64.unpack_from(mf.mm, STORE_TIMESTAMP_AT_BY_HOSTS[sys_flag & _V6_BITS])[0]


@dataclass
class RecoveryResult:
    """What recovery found: the valid end, where scanning (and re-dispatch) started, records
    kept despite a CRC mismatch, and how many bytes of torn tail were dropped."""

    end_offset: int = 0
    scan_from: int = 0
    corrupt_offsets: list[int] = field(default_factory=list)
    truncated_from: int | None = None
    records: int = 0


_MAGIC_BYTES = (I32.pack(MESSAGE_MAGIC_CODE), I32.pack(MESSAGE_MAGIC_CODE_V2))


#: How far past the end of the valid records recovery looks for more data. A torn write is
#: at most one put (a 4 MiB body plus a batch's overhead); a larger region of lost bytes would
#: be damage no crash produces, and reading a whole 1 GiB file costs seconds.
TAIL_WINDOW = 16 << 20
_CHUNK = 1 << 20


def _find(mm, needle: bytes, start: int, stop: int) -> int:
    """``mm.find`` in chunks, skipping all-zero chunks cheaply (mmap.find is a slow scan)."""
    i = start
    zero = bytes(_CHUNK)
    while i < stop:
        end = min(i + _CHUNK + len(needle) - 1, stop)
        chunk = mm[i:end]
        if chunk != zero[: len(chunk)]:
            k = chunk.find(needle)
            if k != -1:
                return i + k
        i += _CHUNK
    return -1


def _valid_record_after(files: list[MappedFile], idx: int, pos: int) -> int | None:
    """Offset of a valid (CRC-checked) record starting after ``pos`` within ``TAIL_WINDOW`` of
    ``files[idx]`` or of any later file, None if there is none: only then is what lies at
    ``pos`` a torn tail."""
    for j in range(idx, len(files)):
        mf = files[j]
        start = pos + 1 if j == idx else 0
        stop = min(start + TAIL_WINDOW, mf.file_size)
        for magic in _MAGIC_BYTES:
            q = _find(mf.mm, magic, start + MAGIC_CODE_AT, stop)
            while q != -1:
                try:
                    if check_record(mf.mm, q - MAGIC_CODE_AT, mf.file_size, True) > 0:
                        return mf.file_from_offset + q - MAGIC_CODE_AT
                except BadRecord:
                    pass
                q = _find(mf.mm, magic, q + 1, stop)
    return None


def scan(commitlog: CommitLog, start_index: int, check_crc: bool) -> RecoveryResult:
    """Walk records from ``files[start_index]`` to the valid end (no changes made)."""
    files = commitlog.queue.files
    res = RecoveryResult()
    if not files:
        return res
    res.scan_from = files[start_index].file_from_offset
    idx = start_index
    pos = 0
    while True:
        mf = files[idx]
        try:
            r = check_record(mf.mm, pos, mf.file_size, check_crc)
        except BadRecord as bad:
            where = mf.file_from_offset + pos
            later = _valid_record_after(files, idx, pos)
            if later is None:
                log.warning("%s: torn tail at offset %d (%s); truncating", mf.path, where, bad)
                res.truncated_from = where
                res.end_offset = where
                return res
            if not bad.framing:
                log.error("%s: record at offset %d is corrupt (%s); kept, never served",
                          mf.path, where, bad)
                res.corrupt_offsets.append(where)
                pos += bad.size
                res.records += 1
                continue
            raise RecoveryError(
                f"corrupt commitlog record ({bad}) with a valid record after it at offset "
                f"{later}; refusing to truncate acknowledged messages", mf.path, where,
            ) from None
        if r > 0:
            pos += r
            res.records += 1
            continue
        if r == BLANK and idx + 1 < len(files):
            idx += 1
            pos = 0
            continue
        where = mf.file_from_offset + pos
        if r == END:
            after = pos
            if pos + PEEK.size <= mf.file_size:
                size, magic = PEEK.unpack_from(mf.mm, pos)
                if size < 0 and magic in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
                    # An unpublished batch announces its own extent (batch.append_batch_fast).
                    after = min(pos - size, mf.file_size) - 1
            later = _valid_record_after(files, idx, after)
            if later is not None:
                raise RecoveryError(
                    f"records stop here but a valid record follows at offset {later}; "
                    "refusing to truncate acknowledged messages", mf.path, where,
                )
            if not mf.all_zero_from(pos, pos + TAIL_WINDOW):
                log.warning("%s: bytes after the last valid record at offset %d "
                            "(a write that never published its TOTALSIZE); dropping them",
                            mf.path, where)
                res.truncated_from = where
        res.end_offset = mf.file_from_offset + (pos if r != BLANK else mf.file_size)
        return res


def recover(commitlog: CommitLog, *, abnormal: bool, min_timestamp: int,
            check_crc: bool = True) -> RecoveryResult:
    """Find the valid end, zero the torn tail and delete files after it."""
    files = commitlog.queue.files
    if not files:
        return RecoveryResult()
    if abnormal:
        start = 0
        for i in range(len(files) - 1, -1, -1):
            ts = first_store_timestamp(files[i])
            if ts and ts <= min_timestamp:
                start = i
                break
    else:
        start = max(0, len(files) - 3)
    res = scan(commitlog, start, check_crc)
    commitlog.queue.truncate_dirty(res.end_offset, zero_limit=TAIL_WINDOW)
    commitlog.queue.set_flushed_where(res.end_offset)
    log.info("commitlog recovered (%s): %d records scanned from %d, valid end %d",
             "abnormal" if abnormal else "normal", res.records, res.scan_from, res.end_offset)
    return res
