"""The 20-byte consume-queue unit (RocketMQ ``store/ConsumeQueue.java``, ``CQ_STORE_UNIT_SIZE``).

Layout, big-endian (protocol.md §5.2)::

    commitlog offset  int64   @0
    message size      int32   @8
    tagsCode          int64   @12

``tagsCode`` is the Java ``String.hashCode`` of the TAGS property sign-extended to int64
(:func:`rocketmq_emu.broker.message.tags_code`), 0 without a tag; for ``SCHEDULE_TOPIC_XXXX`` it is the deliver
timestamp in ms.

:data:`CQ_UNIT` is the ``construct`` declaration; the hot path's :data:`UNIT_STRUCT`, the unit
size and the field offsets are derived from it at import. Tests prove both give identical bytes.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import NamedTuple

import construct as cs

from rocketmq_emu.broker.layout import Layout

#: One unit (``ConsumeQueue.putMessagePositionInfo``: putLong, putInt, putLong).
CQ_UNIT = cs.Struct(
    "commitlog_offset" / cs.Int64sb,
    "size" / cs.Int32sb,
    "tags_code" / cs.Int64sb,
)
CQ_UNIT_LAYOUT = Layout(CQ_UNIT)
#: The whole unit as one struct (``>qiq``).
UNIT_STRUCT = CQ_UNIT_LAYOUT.struct()
#: RocketMQ ``ConsumeQueue.CQ_STORE_UNIT_SIZE`` (20).
CQ_STORE_UNIT_SIZE = UNIT_STRUCT.size
#: Byte offsets of the unit's fields (0, 8, 12).
COMMITLOG_OFFSET_AT = CQ_UNIT_LAYOUT.offset("commitlog_offset")
SIZE_AT = CQ_UNIT_LAYOUT.offset("size")
TAGS_CODE_AT = CQ_UNIT_LAYOUT.offset("tags_code")

#: Default units per consume-queue file (``MessageStoreConfig.mappedFileSizeConsumeQueue`` / 20).
DEFAULT_UNITS_PER_FILE = 300_000

#: Java ``Integer.MAX_VALUE``: the size field of a pre-blank filler unit.
INTEGER_MAX_VALUE = 0x7FFFFFFF



class CqUnit(NamedTuple):
    """One decoded unit."""

    commitlog_offset: int
    size: int
    tags_code: int


#: ``ConsumeQueue.fillPreBlank`` writes ``(0, Integer.MAX_VALUE, 0)`` for every logical offset
#: before the first one a freshly created file receives.
PRE_BLANK_UNIT = CqUnit(0, INTEGER_MAX_VALUE, 0)
PRE_BLANK_BYTES = UNIT_STRUCT.pack(*PRE_BLANK_UNIT)

pack_unit = UNIT_STRUCT.pack
pack_unit_into = UNIT_STRUCT.pack_into
unpack_unit_from = UNIT_STRUCT.unpack_from
iter_units = UNIT_STRUCT.iter_unpack


@lru_cache(maxsize=256)
def units_struct(n: int) -> struct.Struct:
    """``n`` units back to back (one ``pack_into`` for a run): the unit's fields repeated."""
    return struct.Struct(CQ_UNIT_LAYOUT.byte_order + CQ_UNIT_LAYOUT.codes() * n)


def encode_unit(commitlog_offset: int, size: int, tags_code: int) -> bytes:
    """Encode one unit (fast path)."""
    return UNIT_STRUCT.pack(commitlog_offset, size, tags_code)


def decode_unit(data: bytes | bytearray | memoryview, offset: int = 0) -> CqUnit:
    """Decode the unit at ``offset`` of ``data``; raises ``ValueError`` naming the shortfall."""
    if len(data) - offset < CQ_STORE_UNIT_SIZE:
        raise ValueError(
            f"consume queue unit needs {CQ_STORE_UNIT_SIZE} bytes at {offset}, "
            f"{max(len(data) - offset, 0)} left"
        )
    return CqUnit(*UNIT_STRUCT.unpack_from(data, offset))


def is_valid_unit(commitlog_offset: int, size: int) -> bool:
    """Recovery's validity test (``ConsumeQueue.recover``): offset >= 0 and size > 0.

    An all-zero unit is the never-written tail of a file; pre-blank units count as valid.
    """
    return commitlog_offset >= 0 and size > 0


def is_pre_blank(commitlog_offset: int, size: int, tags_code: int) -> bool:
    """True for a ``fillPreBlank`` filler unit, which points at no message."""
    return commitlog_offset == 0 and size == INTEGER_MAX_VALUE and tags_code == 0
