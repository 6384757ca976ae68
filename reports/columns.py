"""Columns of the ``rocketmq-commitlog`` data source and their Arrow assembly.

The byte decoding is :func:`rocketmq_emu.broker.commitlog.record_scan.scan_columns` (the broker's own codec);
this module only names the Spark columns, says which record fields each one needs (so a
projected read decodes nothing else) and turns a :class:`~broker.commitlog.record_scan.ColumnScan`
into a :class:`pyarrow.RecordBatch` whose schema is exactly what Spark expects
(``to_arrow_schema(schema, timezone="UTC")``).

Column names are RocketMQ's record field names (``RECORD`` in record.py) plus camelCase
derived columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rocketmq_emu.broker.commitlog.record_scan import ColumnScan
from rocketmq_emu.broker.message import (
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    DLQ_GROUP_TOPIC_PREFIX,
    MSG_ID_COMMIT_LOG_OFFSET,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TAGS,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_OUT_MS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_SCHEDULE_TOPIC,
    TRANSACTION_TYPE_MASK,
    string_to_properties,
    unpack_host,
)

_STR = StringType()
_INT = IntegerType()
_LONG = LongType()
_TS = TimestampType()

# (name, Spark type, record fields it is computed from)
_COLUMNS: list[tuple[str, DataType, tuple[str, ...]]] = [
    # --- the 20 record fields, in record order
    ("totalSize", _INT, ("totalSize",)),
    ("magicCode", _INT, ("magicCode",)),
    ("bodyCRC", _INT, ("bodyCRC",)),
    ("queueId", _INT, ("queueId",)),
    ("flag", _INT, ("flag",)),
    ("queueOffset", _LONG, ("queueOffset",)),
    ("physicalOffset", _LONG, ("physicalOffset",)),
    ("sysFlag", _INT, ("sysFlag",)),
    ("bornTimestamp", _TS, ("bornTimestamp",)),
    ("bornHost", _STR, ("bornHost",)),
    ("storeTimestamp", _TS, ("storeTimestamp",)),
    ("storeHostAddress", _STR, ("storeHostAddress",)),
    ("reconsumeTimes", _INT, ("reconsumeTimes",)),
    ("preparedTransactionOffset", _LONG, ("preparedTransactionOffset",)),
    ("bodyLength", _INT, ("bodyLength",)),
    ("body", BinaryType(), ("body",)),
    ("topicLength", _INT, ("topicLength",)),
    ("topic", _STR, ("topic",)),
    ("propertiesLength", _INT, ("propertiesLength",)),
    ("properties", MapType(_STR, _STR), ("properties",)),
    # --- sysFlag decoded (MessageSysFlag)
    ("transactionType", _STR, ("sysFlag",)),
    ("compressed", BooleanType(), ("sysFlag",)),
    ("compressionType", _STR, ("sysFlag",)),
    # --- derived
    ("offsetMsgId", _STR, ("storeHostAddress", "physicalOffset")),
    ("tags", _STR, ("properties",)),
    ("keys", ArrayType(_STR), ("properties",)),
    ("uniqKey", _STR, ("properties",)),
    ("realTopic", _STR, ("properties",)),
    ("realQueueId", _INT, ("properties",)),
    ("delayLevel", _INT, ("topic", "queueId", "properties")),
    ("timerDeliverTime", _TS, ("properties", "storeTimestamp")),
    ("retryTopic", _STR, ("properties",)),
    ("retryGroup", _STR, ("topic", "properties")),
    ("dlqGroup", _STR, ("topic",)),
    # --- where the record is
    ("brokerName", _STR, ()),
    ("file", _STR, ()),
    ("filePosition", _LONG, ()),
    ("_error", _STR, ()),
]

COLUMN_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _COLUMNS)
_TYPES = {name: dtype for name, dtype, _ in _COLUMNS}
_NEEDS = {name: needs for name, _, needs in _COLUMNS}
ERROR_COLUMN = "_error"

TRANSACTION_TYPE_NAMES = {
    0x0: "TRANSACTION_NOT_TYPE",
    0x4: "TRANSACTION_PREPARED_TYPE",
    0x8: "TRANSACTION_COMMIT_TYPE",
    0xC: "TRANSACTION_ROLLBACK_TYPE",
}
# CompressionType.findByValue (MessageSysFlag.getCompressionType): 0 maps to ZLIB for old clients.
COMPRESSION_TYPE_NAMES = {0x000: "ZLIB", 0x100: "LZ4", 0x200: "ZSTD", 0x300: "ZLIB"}


def commitlog_schema(columns: Iterable[str] | None = None) -> StructType:
    """The Spark schema of the commitlog source, all columns or the named ones (in the given
    order; ``_error`` is always appended so corrupt records stay visible)."""
    names = list(COLUMN_NAMES) if columns is None else [c.strip() for c in columns if c.strip()]
    unknown = [n for n in names if n not in _TYPES]
    if unknown:
        raise ValueError(f"unknown rocketmq-commitlog columns {unknown}; known: {COLUMN_NAMES}")
    if ERROR_COLUMN not in names:
        names.append(ERROR_COLUMN)
    return StructType([StructField(n, _TYPES[n], True) for n in names])


def validate_schema(schema: StructType) -> None:
    """Reject a user-specified schema naming unknown columns or changing a column's type."""
    for f in schema.fields:
        if f.name not in _TYPES:
            raise ValueError(f"unknown rocketmq-commitlog column {f.name!r}")
        if f.dataType != _TYPES[f.name]:
            raise ValueError(
                f"column {f.name!r} is {_TYPES[f.name].simpleString()}, "
                f"not {f.dataType.simpleString()}"
            )


def record_fields_for(names: Sequence[str]) -> tuple[str, ...]:
    """The record fields :func:`scan_columns` must decode to produce ``names``."""
    fields: dict[str, None] = {}
    for n in names:
        for f in _NEEDS[n]:
            fields[f] = None
    return tuple(fields)


# --- value helpers ---------------------------------------------------------------------------


def host_formatter() -> Callable[[bytes], str]:
    """``ip:port`` of a raw host block, memoised (a store has few distinct hosts)."""
    cache: dict[bytes, str] = {}

    def fmt(raw: bytes) -> str:
        text = cache.get(raw)
        if text is None:
            ip, port = unpack_host(raw)
            text = cache[raw] = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
        return text

    return fmt


def _int_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _ms_array(values: list, pa_type: pa.DataType) -> pa.Array:
    """Epoch milliseconds (None allowed) as an Arrow timestamp[us, UTC] array."""
    if None in values:
        return pa.array([None if v is None else v * 1000 for v in values], type=pa_type)
    return pa.array(np.asarray(values, dtype=np.int64) * 1000, type=pa_type)


def _group_of(topic: str | None, prefix: str) -> str | None:
    if topic and topic.startswith(prefix):
        return topic[len(prefix):]
    return None


def _timer_deliver_ms(props: dict[str, str], store_ms: int) -> int | None:
    """Deliver time of a timer message (R5 ``HookUtils.transformTimerMessage``): the broker's
    TIMER_OUT_MS when present, else the client's absolute or relative request."""
    for key in (PROPERTY_TIMER_OUT_MS, PROPERTY_TIMER_DELIVER_MS):
        value = _int_or_none(props.get(key))
        if value is not None:
            return value
    sec = _int_or_none(props.get(PROPERTY_TIMER_DELAY_SEC))
    if sec is not None:
        return store_ms + sec * 1000
    ms = _int_or_none(props.get(PROPERTY_TIMER_DELAY_MS))
    if ms is not None:
        return store_ms + ms
    return None


# --- batch assembly --------------------------------------------------------------------------
def build_batch(
    scan: ColumnScan,
    names: Sequence[str],
    arrow_schema: pa.Schema,
    file_name: str,
    fmt_host: Callable[[bytes], str] | None = None,
    broker_name: str | None = None,
) -> pa.RecordBatch:
    """Turn decoded columns into an Arrow batch with the columns ``names`` (schema order)."""
    cols = scan.columns
    n = len(scan.positions)
    fmt_host = fmt_host or host_formatter()
    props: list[dict[str, str]] | None = None
    if "properties" in cols and any(_NEEDS[c] and "properties" in _NEEDS[c] for c in names):
        props = [string_to_properties(s) for s in cols["properties"]]
    arrays = []
    for name in names:
        pa_type = arrow_schema.field(name).type
        if name in ("bornTimestamp", "storeTimestamp"):
            arr = _ms_array(cols[name], pa_type)
        elif name in ("bornHost", "storeHostAddress"):
            arr = pa.array([fmt_host(h) for h in cols[name]], type=pa_type)
        elif name == "properties":
            arr = pa.array([list(p.items()) for p in props], type=pa_type)
        elif name in cols:
            arr = pa.array(cols[name], type=pa_type)
        elif name == "transactionType":
            arr = pa.array(
                [TRANSACTION_TYPE_NAMES[f & TRANSACTION_TYPE_MASK] for f in cols["sysFlag"]],
                type=pa_type,
            )
        elif name == "compressed":
            arr = pa.array([bool(f & COMPRESSED_FLAG) for f in cols["sysFlag"]], type=pa_type)
        elif name == "compressionType":
            arr = pa.array(
                [
                    COMPRESSION_TYPE_NAMES[f & COMPRESSION_TYPE_MASK] if f & COMPRESSED_FLAG
                    else None
                    for f in cols["sysFlag"]
                ],
                type=pa_type,
            )
        elif name == "offsetMsgId":
            # MessageDecoder.createMessageId: store host block + commitlog offset, upper hex.
            pack = MSG_ID_COMMIT_LOG_OFFSET.pack
            arr = pa.array(
                [
                    (h + pack(o)).hex().upper()
                    for h, o in zip(cols["storeHostAddress"], cols["physicalOffset"], strict=True)
                ],
                type=pa_type,
            )
        elif name == "tags":
            arr = pa.array([p.get(PROPERTY_TAGS) for p in props], type=pa_type)
        elif name == "keys":
            arr = pa.array(
                [
                    [k for k in p[PROPERTY_KEYS].split(" ") if k] if PROPERTY_KEYS in p else None
                    for p in props
                ],
                type=pa_type,
            )
        elif name == "uniqKey":
            arr = pa.array(
                [p.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) for p in props], type=pa_type
            )
        elif name == "realTopic":
            arr = pa.array([p.get(PROPERTY_REAL_TOPIC) for p in props], type=pa_type)
        elif name == "realQueueId":
            arr = pa.array(
                [_int_or_none(p.get(PROPERTY_REAL_QUEUE_ID)) for p in props], type=pa_type
            )
        elif name == "delayLevel":
            # In SCHEDULE_TOPIC_XXXX the queue is the (clamped) level - 1
            # (ScheduleMessageService.queueId2DelayLevel); elsewhere the DELAY property, which
            # the re-put copy still carries (protocol.md 6.3 quirk).
            arr = pa.array(
                [
                    q + 1 if t == RMQ_SYS_SCHEDULE_TOPIC
                    else _int_or_none(p.get(PROPERTY_DELAY_TIME_LEVEL))
                    for t, q, p in zip(cols["topic"], cols["queueId"], props, strict=True)
                ],
                type=pa_type,
            )
        elif name == "timerDeliverTime":
            arr = _ms_array(
                [
                    _timer_deliver_ms(p, s)
                    for p, s in zip(props, cols["storeTimestamp"], strict=True)
                ],
                pa_type,
            )
        elif name == "retryTopic":
            arr = pa.array([p.get(PROPERTY_RETRY_TOPIC) for p in props], type=pa_type)
        elif name == "retryGroup":
            arr = pa.array(
                [
                    _group_of(t, RETRY_GROUP_TOPIC_PREFIX)
                    or _group_of(p.get(PROPERTY_REAL_TOPIC), RETRY_GROUP_TOPIC_PREFIX)
                    for t, p in zip(cols["topic"], props, strict=True)
                ],
                type=pa_type,
            )
        elif name == "dlqGroup":
            arr = pa.array(
                [_group_of(t, DLQ_GROUP_TOPIC_PREFIX) for t in cols["topic"]], type=pa_type
            )
        elif name == "file":
            arr = pa.array([file_name] * n, type=pa_type)
        elif name == "brokerName":
            arr = pa.array([broker_name] * n, type=pa_type)
        elif name == "filePosition":
            arr = pa.array(scan.positions, type=pa_type)
        elif name == ERROR_COLUMN:
            arr = pa.nulls(n, type=pa_type)
        else:  # pragma: no cover - commitlog_schema rejects unknown names
            raise ValueError(name)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def error_batch(
    names: Sequence[str], arrow_schema: pa.Schema, file_name: str, position: int, message: str,
    broker_name: str | None = None,
) -> pa.RecordBatch:
    """A one-row batch reporting a corrupt record: only brokerName, file, filePosition and
    _error set."""
    values = {"brokerName": broker_name, "file": file_name, "filePosition": position,
              ERROR_COLUMN: message}
    arrays = [
        pa.array([values.get(name)], type=arrow_schema.field(name).type) for name in names
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def arrow_schema_of(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark's Python data source worker checks batches against."""
    return to_arrow_schema(schema, timezone="UTC")
