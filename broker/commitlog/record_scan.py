"""Columnar scan of commitlog bytes for reports and tools (``reports/``, ``bench/``).

:func:`scan_columns` decodes only the requested fields of many records at once, and
:func:`find_record_start` locates the first record boundary inside an arbitrary byte range.
Both are built on :mod:`rocketmq_emu.broker.commitlog.record` (its structs, constants and
:func:`~broker.commitlog.record.decode_record`, which handles IPv6, V2 and bad records), so the
values and errors are the broker's own codec's.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec
from itertools import repeat

from rocketmq_emu.broker.commitlog.record import (
    BLANK_MAGIC_CODE,
    BODY_CRC_AT,
    BODY_LENGTH_AT,
    I16,
    I32,
    I64,
    MAGIC_CODE_AT,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MIN_TAIL_SIZE,
    PEEK,
    PHYSICAL_OFFSET_AT,
    SYS_FLAG_AT,
    V4,
    V4_LAYOUT,
    MessageRecord,
    RecordError,
    body_crc,
    decode_record,
    host_len,
    record_layout,
)
from rocketmq_emu.broker.message import BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG

# --- columnar scan (reports/, bench/) -------------------------------------------------------------
#: Names :func:`scan_columns` can fill, in record order: the field names of the construct
#: declaration (``record.RECORD``), length fields included.
SCAN_FIELDS = V4_LAYOUT.names
# The fixed fields, totalSize .. bodyLength: the values of one V4 tuple (IPv4 hosts, raw
# 8-byte blocks there), in that order.
_V4_FIELDS = SCAN_FIELDS[: SCAN_FIELDS.index("bodyLength") + 1]
_V4_INDEX = {name: i for i, name in enumerate(_V4_FIELDS)}
# totalSize, magicCode, sysFlag and bodyLength only: what locating the tail needs.
_LEAN = V4_LAYOUT.sparse_struct(("totalSize", "magicCode", "sysFlag", "bodyLength"))
_MAGICS = (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2)
_TL1 = V4_LAYOUT.size("topicLength")  # V1's one-byte topicLength
_V1_MAGIC_BYTES = I32.pack(MESSAGE_MAGIC_CODE)
_V2_MAGIC_BYTES = I32.pack(MESSAGE_MAGIC_CODE_V2)


@dataclass(slots=True)
class ColumnScan:
    """Result of :func:`scan_columns`: one list per requested field, aligned with
    ``positions`` (each record's byte position in the buffer).

    ``end`` says why the scan stopped: ``"stop"`` (reached the stop position or the record
    limit; resume at ``next_pos``), ``"blank"`` (end-of-file filler), ``"zero"`` (unwritten
    tail), ``"eof"`` (buffer exhausted) or ``"error"`` (``error`` holds the
    :class:`RecordError` of the record at ``next_pos``).
    """

    columns: dict[str, list]
    positions: list[int]
    next_pos: int
    end: str
    error: RecordError | None = None


def is_record_start(buf, pos: int, base_offset: int) -> bool:
    """True when ``pos`` holds a message magic, a plausible TOTALSIZE and a PHYSICALOFFSET of
    ``base_offset + pos``: the test :func:`find_record_start` applies."""
    if pos < 0 or pos + V4.size > len(buf):
        return False
    total, magic = PEEK.unpack_from(buf, pos)
    if magic not in _MAGICS or total < V4.size:
        return False
    return I64.unpack_from(buf, pos + PHYSICAL_OFFSET_AT)[0] == base_offset + pos


def find_record_start(
    buf: bytes | bytearray | memoryview, start: int, stop: int, base_offset: int
) -> int | None:
    """The first record start in ``[start, stop)`` of a commitlog file whose first byte is
    commitlog offset ``base_offset``, found without walking the records before ``start``.

    A position is a record start when it holds a message magic, a TOTALSIZE of at least the
    fixed fields, and a PHYSICALOFFSET equal to ``base_offset + position``: RocketMQ writes
    ``fileFromOffset + position`` there (``CommitLog.DefaultAppendMessageCallback``), so bytes
    inside a body match only if forged for that very position. The search is ``bytes.find``
    for the magic (C speed). Returns None when no record starts in the range.
    """
    blen = len(buf)
    find = buf.find
    best: int | None = None
    for magic_bytes in (_V1_MAGIC_BYTES, _V2_MAGIC_BYTES):
        # A hit at h is a candidate start h - 4 < stop, so the match may end at stop + 7.
        # The second magic is only searched before the first one's hit.
        limit = min(stop if best is None else best, blen) + MAGIC_CODE_AT + I32.size - 1
        hit = find(magic_bytes, start + MAGIC_CODE_AT, limit)
        while hit != -1:
            if is_record_start(buf, hit - MAGIC_CODE_AT, base_offset):
                best = hit - MAGIC_CODE_AT
                break
            hit = find(magic_bytes, hit + 1, limit)
    return best


def scan_columns(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    stop: int | None = None,
    fields: tuple[str, ...] | list[str] = SCAN_FIELDS,
    max_records: int = 1 << 62,
    check_crc: bool = False,
) -> ColumnScan:
    """Decode consecutive records starting at ``pos`` into columns, only the ``fields`` asked
    for (names from :data:`SCAN_FIELDS`), without building a :class:`MessageRecord` per row.

    Records *starting* before ``stop`` are decoded (the last may extend past it). Hosts are
    the raw 8- or 20-byte blocks (:func:`rocketmq_emu.broker.message.unpack_host` turns one into
    ``(ip, port)``), ``topic`` a str, ``properties`` the stored properties string (see
    :func:`rocketmq_emu.broker.message.string_to_properties`), ``body`` bytes.

    The IPv4 case runs on one precompiled struct; an IPv6 record, and any record that fails a
    length check, goes through :func:`decode_record`, so errors and values are exactly
    :func:`decode_record`'s. With ``check_crc`` a record whose BODYCRC does not match its body
    is an error, as on RocketMQ's recovery (``checkCRCOnRecover``).
    """
    unknown = set(fields) - set(SCAN_FIELDS)
    if unknown:
        raise ValueError(f"unknown record fields {sorted(unknown)}")
    blen = len(buf)
    if stop is None:
        stop = blen
    if _HAVE_NUMPY and not check_crc and not _PER_ROW_FIELDS.intersection(fields):
        fast = _scan_vectorized(buf, pos, stop, fields, max_records)
        if fast is not None:
            return fast
    columns: dict[str, list] = {name: [] for name in fields}
    fixed = [(_V4_INDEX[name], columns[name].append) for name in fields if name in _V4_INDEX]
    # Without fixed fields a narrower struct reads only what locating the tail needs.
    head, si, bi = (
        (V4, _V4_INDEX["sysFlag"], _V4_INDEX["bodyLength"]) if fixed else (_LEAN, 2, 3)
    )
    want_body = "body" in columns
    want_topic_len = "topicLength" in columns
    want_topic = "topic" in columns
    want_props_len = "propertiesLength" in columns
    want_props = "properties" in columns
    want_tail = want_topic or want_topic_len or want_props or want_props_len
    positions: list[int] = []
    add_pos = positions.append
    unpack_head = head.unpack_from
    unpack_peek = PEEK.unpack_from
    unpack_i16 = I16.unpack_from
    topic_cache: dict[bytes, str] = {}
    v6_bits = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
    v4_size = V4.size
    i16 = I16.size
    tl1 = _TL1
    end = "stop"
    error = None
    n = 0
    while pos < stop and n < max_records:
        if pos + PEEK.size > blen:
            end = "eof"
            break
        total, magic = unpack_peek(buf, pos)
        if magic == BLANK_MAGIC_CODE:
            end = "blank"
            break
        if total == 0 and magic == 0:
            end = "zero"
            break
        limit = pos + total
        vals = None
        if (magic == MESSAGE_MAGIC_CODE or magic == MESSAGE_MAGIC_CODE_V2) and (
            total >= v4_size and limit <= blen
        ):
            vals = unpack_head(buf, pos)
            body_len = vals[bi]
            if vals[si] & v6_bits:
                vals = None
            else:
                p = pos + v4_size + body_len
                if body_len < 0 or p + MIN_TAIL_SIZE > limit:
                    vals = None
                elif magic == MESSAGE_MAGIC_CODE:
                    tl = buf[p]
                    p += tl1
                else:
                    tl = unpack_i16(buf, p)[0]
                    p += i16
                if vals is not None:
                    tp = p
                    p += tl
                    if tl < 0 or p + i16 > limit:
                        vals = None
                    else:
                        pl = unpack_i16(buf, p)[0]
                        p += i16
                        if pl < 0 or p + pl != limit:
                            vals = None
                        elif check_crc:
                            body_at = pos + v4_size
                            stored_crc = I32.unpack_from(buf, pos + BODY_CRC_AT)[0]
                            if body_crc(bytes(buf[body_at : body_at + body_len])) != stored_crc:
                                vals = None  # decode_record(check_crc=True) names the error
        if vals is None:
            # Slow path: IPv6 hosts or a record that fails a check; decode_record decides.
            try:
                rec = decode_record(buf, pos, check_crc=check_crc)
            except RecordError as exc:
                end = "error"
                error = exc
                break
            _append_record(columns, rec, buf, pos)
            add_pos(pos)
            pos += rec.total_size
            n += 1
            continue
        for index, append in fixed:
            append(vals[index])
        if want_body:
            columns["body"].append(bytes(buf[pos + v4_size : pos + v4_size + body_len]))
        if want_tail:
            if want_topic_len:
                columns["topicLength"].append(tl)
            if want_topic:
                raw = bytes(buf[tp : tp + tl])
                topic = topic_cache.get(raw)
                if topic is None:
                    topic = topic_cache[raw] = raw.decode("utf-8", errors="replace")
                columns["topic"].append(topic)
            if want_props_len:
                columns["propertiesLength"].append(pl)
            if want_props:
                columns["properties"].append(
                    bytes(buf[p : p + pl]).decode("utf-8", errors="replace")
                )
        add_pos(pos)
        pos = limit
        n += 1
    if end == "stop" and pos >= blen:
        end = "eof"
    return ColumnScan(columns, positions, pos, end, error)


def _append_record(columns: dict[str, list], rec: MessageRecord, buf, pos: int) -> None:
    """Append a decoded record's values to ``columns`` (the slow path of scan_columns)."""
    bh = host_len(rec.sys_flag, BORNHOST_V6_FLAG)
    sh = host_len(rec.sys_flag, STOREHOSTADDRESS_V6_FLAG)
    layout = record_layout(rec.sys_flag)
    born_at = layout.offset("bornHost")
    store_at = layout.offset("storeHostAddress")
    topic_raw = rec.topic.encode("utf-8")
    props = rec.properties_str or ""
    values = {
        "totalSize": rec.total_size, "magicCode": rec.magic_code, "bodyCRC": rec.body_crc,
        "queueId": rec.queue_id, "flag": rec.flag, "queueOffset": rec.queue_offset,
        "physicalOffset": rec.physical_offset, "sysFlag": rec.sys_flag,
        "bornTimestamp": rec.born_timestamp,
        "bornHost": bytes(buf[pos + born_at : pos + born_at + bh]),
        "storeTimestamp": rec.store_timestamp,
        "storeHostAddress": bytes(buf[pos + store_at : pos + store_at + sh]),
        "reconsumeTimes": rec.reconsume_times,
        "preparedTransactionOffset": rec.prepared_transaction_offset,
        "bodyLength": len(rec.body), "body": rec.body, "topicLength": len(topic_raw),
        "topic": rec.topic, "propertiesLength": len(props.encode("utf-8")), "properties": props,
    }
    for name, column in columns.items():
        column.append(values[name])


# --- vectorized variant of scan_columns ---------------------------------------------------------
# Fields that need a Python object per row anyway (bytes / str of variable content).
_PER_ROW_FIELDS = frozenset(("body", "properties"))
# (byte offset, width) of the fixed fields of an IPv4 record (the V4 layout).
_V4_AT = {name: (V4_LAYOUT.offset(name), V4_LAYOUT.size(name)) for name in _V4_FIELDS}
_VECTOR_MIN = 64  # below this many records the per-record loop is as fast
# numpy comes with the ``reports`` extra (its only user); without it every scan takes the
# per-record loop, which gives the same values.
_HAVE_NUMPY = find_spec("numpy") is not None


def _scan_vectorized(buf, pos: int, stop: int, fields, max_records: int) -> ColumnScan | None:
    """scan_columns for IPv4 / V1 records without body or properties strings: one Python step
    per record to find the boundaries, then numpy gathers every field of the batch at once.

    Returns None when the first record is not of that common shape (the per-record loop then
    handles the call, IPv6 hosts and errors included); stops early, with ``end="stop"``, before
    the first record that is not, so the next call starts at it.
    """
    import numpy as np

    blen = len(buf)
    unpack_peek = PEEK.unpack_from
    positions: list[int] = []
    add = positions.append
    v4_size = V4.size
    end = "stop"
    exhausted = False
    for _ in repeat(None, max_records):
        if pos >= stop:
            break
        if pos + PEEK.size > blen:
            end = "eof"
            break
        total, magic = unpack_peek(buf, pos)
        if magic != MESSAGE_MAGIC_CODE or total < v4_size or pos + total > blen:
            if magic == BLANK_MAGIC_CODE:
                end = "blank"
            elif total == 0 and magic == 0:
                end = "zero"
            break  # anything else: the per-record loop decides, starting here
        add(pos)
        pos += total
    else:
        exhausted = True
    n = len(positions)
    if end == "stop" and pos >= blen:
        end = "eof"
    irregular = end == "stop" and pos < stop and not exhausted
    if n < _VECTOR_MIN and (irregular or n > 0):
        return None  # few records, or an odd one first: the per-record loop
    if n == 0:
        return ColumnScan({name: [] for name in fields}, [], pos, end)
    # A view of the buffer (no copy); every gather below copies, so none outlives the call
    # (an mmap cannot be closed while a view of it exists).
    arr = np.frombuffer(buf, dtype=np.uint8)
    P = np.asarray(positions, dtype=np.int64)
    ranges = {w: np.arange(w, dtype=np.int64) for w in (2, 4, 8)}

    def gather(offsets, width: int, kind: str = "i"):
        g = arr[offsets[:, None] + ranges[width]]
        return g.view(f">{kind}{width}").ravel()

    total = gather(P, I32.size).astype(np.int64)
    sys_flag = gather(P + SYS_FLAG_AT, I32.size)
    body_len = gather(P + BODY_LENGTH_AT, I32.size).astype(np.int64)
    limit = P + total
    tpos = P + v4_size + body_len
    ok = ((sys_flag & (BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)) == 0) & (body_len >= 0)
    ok &= tpos + MIN_TAIL_SIZE <= limit
    tpos_safe = np.where(ok, tpos, P)
    topic_len = arr[tpos_safe].astype(np.int64)
    ppos = tpos_safe + _TL1 + topic_len
    ok &= ppos + I16.size <= limit
    props_len = gather(np.where(ok, ppos, P), I16.size).astype(np.int64)
    ok &= (props_len >= 0) & (ppos + I16.size + props_len == limit)
    bad = np.flatnonzero(~ok)
    if bad.size:
        k = int(bad[0])
        if k == 0:
            return None
        cut = slice(0, k)
        P, tpos_safe, topic_len, props_len, body_len = (
            P[cut], tpos_safe[cut], topic_len[cut], props_len[cut], body_len[cut]
        )
        next_pos, end = positions[k], "stop"
        positions = positions[:k]
    else:
        next_pos = pos
    columns: dict[str, list] = {}
    for name in fields:
        if name in ("bornHost", "storeHostAddress"):
            off, width = _V4_AT[name]
            columns[name] = arr[(P + off)[:, None] + ranges[width]].view(f"V{width}").ravel().tolist()
        elif name == "bodyLength":
            columns[name] = body_len.tolist()
        elif name in _V4_AT:
            off, width = _V4_AT[name]
            columns[name] = gather(P + off, width).tolist()
        elif name == "topicLength":
            columns[name] = topic_len.tolist()
        elif name == "propertiesLength":
            columns[name] = props_len.tolist()
        elif name == "topic":
            columns[name] = _topics(np, arr, tpos_safe + _TL1, topic_len)
    return ColumnScan(columns, positions, next_pos, end)


def _topics(np, arr, starts, lengths) -> list[str]:
    """Decode the topic at each (start, length), once per distinct byte string."""
    width = int(lengths.max()) if len(lengths) else 0
    idx = np.minimum(starts[:, None] + np.arange(max(width, 1)), len(arr) - 1)
    raw = arr[idx]
    raw[np.arange(raw.shape[1]) >= lengths[:, None]] = 0
    keyed = np.ascontiguousarray(np.concatenate([lengths[:, None].astype(np.uint8), raw], axis=1))
    uniq, inverse = np.unique(keyed.view(f"V{keyed.shape[1]}").ravel(), return_inverse=True)
    names = np.empty(len(uniq), dtype=object)
    for i, key in enumerate(uniq.tolist()):
        names[i] = key[1 : 1 + key[0]].decode("utf-8", errors="replace")
    return names[inverse.ravel()].tolist()
