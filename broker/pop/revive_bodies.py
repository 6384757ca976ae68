"""The JSON bodies of RocketMQ 5's revive topic: ``PopCheckPoint`` ("ck"), ``AckMsg`` ("ack"),
``BatchAckMsg`` ("bAck") (apache/rocketmq ``store/.../store/pop/``, 5.3.3 and later), and the
bitmap helpers of ``DataConverter`` the revive logic marks acknowledged messages with
(defined in :mod:`rocketmq_emu.broker.pop.java_bits`, re-exported here).

**Writing** matches what the Java broker writes with fastjson 1.2.83's ``JSON.toJSONString``
(``PopMessageProcessor.buildCkMsg``, ``AckMessageProcessor``, ``ChangeInvisibleTimeProcessor``,
``PopBufferMergeService``): one key per public getter, named by the ``@JSONField`` of the field
it reads, in fastjson's default ``SortField`` order (the JSON names compared as Java strings);
null objects left out, compact, no spaces. So:

* ``PopCheckPoint``: ``bm bn c d it n pt q reviveTime ro rp so t``. ``getCId`` finds the field
  ``cid`` (fastjson matches ``cId`` case-insensitively) and is written ``c``; ``getReviveTime``
  has no field and is written as ``reviveTime`` (popTime + invisibleTime); the ``parseRePutTimes``,
  ``indexOfAck`` and ``ackOffsetByIndex`` methods are not getters.
* ``AckMsg``: ``ao bn c pt q so t``; ``BatchAckMsg`` adds ``aol`` (it keeps the inherited
  ``ao``, 0 as the broker never sets it): ``ao aol bn c pt q so t``.

Strings are escaped by orjson, which is fastjson's output for the names RocketMQ accepts
(``[%|a-zA-Z0-9_-]``); exotic control or separator characters may be escaped differently.

**Reading** is lenient, as fastjson is: unknown keys (``reviveTime``) ignored, missing or null
values left at Java's defaults, numbers given as strings accepted, the long Java property names
accepted beside the short ones (only ``AckMsg``/``BatchAckMsg`` declare them as
``alternateNames`` in Java), integers narrowed to their Java width (``int``, ``byte``, ``long``).

There is no body of its own for CHANGE_MESSAGE_INVISIBLETIME: ``ChangeInvisibleTimeProcessor``
writes an ``AckMsg`` for the old handle and a one-message ``PopCheckPoint`` (``n`` 1, ``d`` [0])
for the new one; :meth:`PopCheckPoint.single` builds that one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.java_bits import (
    acked_indexes,
    get_bit,
    java_byte,
    java_int,
    java_long,
    set_bit,
    unacked_count,
    unacked_indexes,
)

__all__ = [
    "AckMsg", "BatchAckMsg", "PopCheckPoint", "acked_indexes", "decode_revive_body", "get_bit",
    "java_byte", "java_int", "java_long", "set_bit", "unacked_count", "unacked_indexes",
]


# --- lenient field readers ---------------------------------------------------------------------
def _int_reader(width: Callable[[int], int]) -> Callable[[Any], int]:
    def read(value: Any) -> int:
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, str):
            value = value.strip()
            return width(int(value) if value.lstrip("-").isdigit() else int(float(value)))
        return width(int(value))
    return read


_LONG = _int_reader(java_long)
_INT = _int_reader(java_int)
_BYTE = _int_reader(java_byte)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else jsonutil.dumps(value).decode()


def _long_list(value: Any) -> list[int]:
    return [_LONG(v) for v in (value if isinstance(value, list) else [value])]


def _int_list(value: Any) -> list[int]:
    return [_INT(v) for v in (value if isinstance(value, list) else [value])]


def _pick(doc: dict[str, Any], *keys: str) -> Any:
    """The first non-null value among ``keys`` (the short JSON name, then the long one)."""
    for key in keys:
        value = doc.get(key)
        if value is not None:
            return value
    return None


def _load(data: bytes | bytearray | memoryview | str | dict[str, Any]) -> dict[str, Any]:
    doc = data if isinstance(data, dict) else jsonutil.loads(data)
    if not isinstance(doc, dict):
        raise ValueError(f"a revive body is a JSON object, not {type(doc).__name__}")
    return doc


def _dump(pairs: Iterable[tuple[str, Any]]) -> bytes:
    """An object with the keys in the order given, null values left out (fastjson's default).

    One ``orjson.dumps`` of a dict (which keeps insertion order): byte for byte what encoding
    each key and value with :func:`jsonutil.dumps` and joining them with ``:`` and ``,`` gives,
    in one call instead of two per key."""
    return orjson.dumps({key: value for key, value in pairs if value is not None})


#: What ``Integer.parseInt`` accepts: a sign and digits, nothing else (no blanks, no ``_``).
_JAVA_INT_TEXT = re.compile(r"[+-]?\d+")


# --- PopCheckPoint -----------------------------------------------------------------------------
@dataclass(slots=True)
class PopCheckPoint:
    """``org.apache.rocketmq.store.pop.PopCheckPoint``: one POP of up to 32 messages of a queue.

    ``num`` (``n``, a Java byte) messages were popped; message ``j`` sits at queue offset
    ``start_offset + queue_offset_diff[j]`` (``d``, offsets relative to ``so``, filtered messages
    skipped) or, in a checkpoint without ``d`` (older brokers), at ``start_offset + j``.
    ``bit_map`` (``bm``, a Java int) has bit ``j`` set once message ``j`` is acknowledged.
    ``revive_offset`` (``ro``) is the CK's own offset in the revive queue (set by revive when it
    reads the CK). ``re_put_times`` (``rp``) is a Java String: how often revive re-wrote this CK.
    """

    start_offset: int = 0  # so
    pop_time: int = 0  # pt
    invisible_time: int = 0  # it
    bit_map: int = 0  # bm
    num: int = 0  # n
    queue_id: int = 0  # q
    topic: str | None = None  # t
    cid: str | None = None  # c: the consumer group
    revive_offset: int = 0  # ro
    queue_offset_diff: list[int] | None = None  # d
    broker_name: str | None = None  # bn
    re_put_times: str | None = None  # rp

    @classmethod
    def single(cls, *, topic: str, cid: str, queue_id: int, offset: int, pop_time: int,
               invisible_time: int, broker_name: str | None) -> PopCheckPoint:
        """The one-message CK of ``ChangeInvisibleTimeProcessor.appendCheckPointThenAckOrigin``
        and ``PopReviveService.rePutCK``: ``n`` 1, ``bm`` 0, ``d`` [0]."""
        return cls(start_offset=offset, pop_time=pop_time, invisible_time=invisible_time,
                   num=1, queue_id=queue_id, topic=topic, cid=cid, queue_offset_diff=[0],
                   broker_name=broker_name)

    @property
    def revive_time(self) -> int:
        """``getReviveTime``: popTime + invisibleTime (Java long arithmetic)."""
        return java_long(self.pop_time + self.invisible_time)

    def add_diff(self, diff: int) -> None:
        """``addDiff``: append a message's offset relative to ``start_offset``."""
        if self.queue_offset_diff is None:
            self.queue_offset_diff = []
        self.queue_offset_diff.append(java_int(diff))

    def index_of_ack(self, ack_offset: int) -> int:
        """``indexOfAck``: the message index of a queue offset in this CK, or -1."""
        if ack_offset < self.start_offset:
            return -1
        if not self.queue_offset_diff:
            return ack_offset - self.start_offset if ack_offset - self.start_offset < self.num else -1
        try:
            return self.queue_offset_diff.index(java_int(ack_offset - self.start_offset))
        except ValueError:
            return -1

    def ack_offset_by_index(self, index: int) -> int:
        """``ackOffsetByIndex``: the queue offset of message ``index`` (a Java byte). A negative
        index into ``d`` raises IndexError, as Java's ``List.get`` throws."""
        index = java_byte(index)
        if not self.queue_offset_diff:
            return java_long(self.start_offset + index)
        if index < 0:
            raise IndexError(index)
        return java_long(self.start_offset + self.queue_offset_diff[index])

    def parse_re_put_times(self) -> int:
        """``parseRePutTimes``: 0 when absent, ``Byte.MAX_VALUE`` (127) when not an int."""
        if self.re_put_times is None:
            return 0
        if not _JAVA_INT_TEXT.fullmatch(self.re_put_times):
            return 127
        value = int(self.re_put_times)
        return value if -(2**31) <= value < 2**31 else 127

    def is_acked(self, index: int) -> bool:
        """Message ``index``'s bit in ``bit_map``."""
        return get_bit(self.bit_map, index)

    def mark_acked(self, index: int) -> None:
        """Set message ``index``'s bit (``point.setBitMap(DataConverter.setBit(..., true))``)."""
        self.bit_map = set_bit(self.bit_map, index, True)

    def ack(self, ack_offset: int) -> bool:
        """Mark the message at queue offset ``ack_offset``, as revive does for an ACK it reads;
        False (nothing marked) when the offset is not in this CK."""
        index = self.index_of_ack(ack_offset)
        if index < 0:
            return False
        self.mark_acked(index)
        return True

    def unacked_offsets(self) -> list[int]:
        """The queue offsets revive would send to retry: ``ackOffsetByIndex(j)`` for each clear
        bit ``j < num``."""
        return [self.ack_offset_by_index(j) for j in unacked_indexes(self.bit_map, self.num)]

    def unacked_count(self) -> int:
        """``len(self.unacked_offsets())``, counted on the bitmap (no offsets built)."""
        return unacked_count(self.bit_map, self.num)

    def unique_id(self) -> str:
        """``PopMessageProcessor.genCkUniqueId`` (the CK message's ``UNIQ_KEY``)."""
        return names.ck_unique_id(self.topic, self.queue_id, self.start_offset, self.cid,
                                  self.pop_time, self.broker_name)

    def merge_key(self) -> str:
        """The key ACKs are matched to this CK by (``PopReviveService``)."""
        return names.merge_key(self.topic, self.cid, self.queue_id, self.start_offset,
                               self.pop_time, self.broker_name)

    def deliver_time_ms(self) -> int:
        """The CK message's ``TIMER_DELIVER_MS``: reviveTime - ``ackTimeInterval``
        (``PopMessageProcessor.buildCkMsg``)."""
        return java_long(self.revive_time - names.ACK_TIME_INTERVAL_MS)

    def encode(self) -> bytes:
        """The body as fastjson writes it (keys sorted by JSON name, nulls left out)."""
        diff = None if self.queue_offset_diff is None else [java_int(d)
                                                            for d in self.queue_offset_diff]
        return _dump((
            ("bm", java_int(self.bit_map)),
            ("bn", self.broker_name),
            ("c", self.cid),
            ("d", diff),
            ("it", java_long(self.invisible_time)),
            ("n", java_byte(self.num)),
            ("pt", java_long(self.pop_time)),
            ("q", java_int(self.queue_id)),
            ("reviveTime", self.revive_time),
            ("ro", java_long(self.revive_offset)),
            ("rp", self.re_put_times),
            ("so", java_long(self.start_offset)),
            ("t", self.topic),
        ))

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str | dict[str, Any]) -> PopCheckPoint:
        """Read a CK body (short names, or the Java property names)."""
        doc = _load(data)
        ck = cls()
        for attr, keys, read in _CK_FIELDS:
            value = _pick(doc, *keys)
            if value is not None:
                setattr(ck, attr, read(value))
        return ck


_CK_FIELDS: tuple[tuple[str, tuple[str, ...], Callable[[Any], Any]], ...] = (
    ("start_offset", ("so", "startOffset"), _LONG),
    ("pop_time", ("pt", "popTime"), _LONG),
    ("invisible_time", ("it", "invisibleTime"), _LONG),
    ("bit_map", ("bm", "bitMap"), _INT),
    ("num", ("n", "num"), _BYTE),
    ("queue_id", ("q", "queueId"), _INT),
    ("topic", ("t", "topic"), _str),
    ("cid", ("c", "cid", "cId"), _str),
    ("revive_offset", ("ro", "reviveOffset"), _LONG),
    ("queue_offset_diff", ("d", "queueOffsetDiff"), _int_list),
    ("broker_name", ("bn", "brokerName"), _str),
    ("re_put_times", ("rp", "rePutTimes"), _str),
)


# --- AckMsg / BatchAckMsg ----------------------------------------------------------------------
@dataclass(slots=True)
class AckMsg:
    """``org.apache.rocketmq.store.pop.AckMsg``: one message of a CK acknowledged (or its
    invisible time changed). ``start_offset`` and ``pop_time`` name the CK it belongs to,
    ``ack_offset`` the message's queue offset."""

    ack_offset: int = 0  # ao
    start_offset: int = 0  # so
    consumer_group: str | None = None  # c
    topic: str | None = None  # t
    queue_id: int = 0  # q
    pop_time: int = 0  # pt
    broker_name: str | None = None  # bn

    def _common(self) -> tuple[tuple[str, Any], ...]:
        return (("bn", self.broker_name), ("c", self.consumer_group),
                ("pt", java_long(self.pop_time)), ("q", java_int(self.queue_id)),
                ("so", java_long(self.start_offset)), ("t", self.topic))


    def unique_id(self) -> str:
        """``PopMessageProcessor.genAckUniqueId`` (the ACK message's ``UNIQ_KEY``)."""
        return names.ack_unique_id(self.topic, self.queue_id, self.ack_offset,
                                   self.consumer_group, self.pop_time, self.broker_name)

    def merge_key(self, own_broker_name: str | None = None) -> str:
        """The key of the CK this ACK belongs to; a blank ``broker_name`` is replaced by the
        reading broker's own (``PopReviveService.consumeReviveMessage``)."""
        broker = self.broker_name if self.broker_name and self.broker_name.strip() else (
            own_broker_name)
        return names.merge_key(self.topic, self.consumer_group, self.queue_id,
                               self.start_offset, self.pop_time, broker)

    def encode(self) -> bytes:
        """The body as fastjson writes it: ``ao bn c pt q so t`` (one ``orjson.dumps`` of the
        dict, as :func:`_dump` writes it; the filter only when a string is null)."""
        doc = {"ao": java_long(self.ack_offset), "bn": self.broker_name,
               "c": self.consumer_group, "pt": java_long(self.pop_time),
               "q": java_int(self.queue_id), "so": java_long(self.start_offset),
               "t": self.topic}
        if self.broker_name is None or self.consumer_group is None or self.topic is None:
            doc = {key: value for key, value in doc.items() if value is not None}
        return orjson.dumps(doc)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str | dict[str, Any]) -> AckMsg:
        """Read an ACK body (short names or their ``alternateNames``)."""
        doc = _load(data)
        msg = cls()
        _read_ack_fields(msg, doc)
        return msg


_ACK_FIELDS: tuple[tuple[str, tuple[str, ...], Callable[[Any], Any]], ...] = (
    ("ack_offset", ("ao", "ackOffset"), _LONG),
    ("start_offset", ("so", "startOffset"), _LONG),
    ("consumer_group", ("c", "consumerGroup"), _str),
    ("topic", ("t", "topic"), _str),
    ("queue_id", ("q", "queueId"), _INT),
    ("pop_time", ("pt", "popTime"), _LONG),
    ("broker_name", ("bn", "brokerName"), _str),
)


def _read_ack_fields(msg: AckMsg, doc: dict[str, Any]) -> None:
    for attr, keys, read in _ACK_FIELDS:
        value = _pick(doc, *keys)
        if value is not None:
            setattr(msg, attr, read(value))


@dataclass(slots=True)
class BatchAckMsg(AckMsg):
    """``org.apache.rocketmq.store.pop.BatchAckMsg``: several messages of one CK acknowledged
    (``aol``, queue offsets). Written by ``PopBufferMergeService`` with ``enablePopBatchAck``;
    the broker sets no ``ackOffset`` nor ``brokerName`` on it."""

    ack_offset_list: list[int] | None = field(default_factory=list)  # aol

    def unique_id(self) -> str:
        """``PopMessageProcessor.genBatchAckUniqueId`` (no broker name)."""
        return names.batch_ack_unique_id(self.topic, self.queue_id, self.ack_offset_list or [],
                                         self.consumer_group, self.pop_time)

    def encode(self) -> bytes:
        """The body as fastjson writes it: ``ao aol bn c pt q so t``."""
        aol = None if self.ack_offset_list is None else [java_long(o)
                                                         for o in self.ack_offset_list]
        return _dump((("ao", java_long(self.ack_offset)), ("aol", aol), *self._common()))

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str | dict[str, Any]) -> BatchAckMsg:
        """Read a batch ACK body (short names or their ``alternateNames``)."""
        doc = _load(data)
        msg = cls()
        _read_ack_fields(msg, doc)
        aol = _pick(doc, "aol", "ackOffsetList")
        if aol is not None:
            msg.ack_offset_list = _long_list(aol)
        return msg


def decode_revive_body(tag: str | None, body: bytes | bytearray | memoryview | str
                       ) -> PopCheckPoint | AckMsg | BatchAckMsg | None:
    """A revive-topic message body by its tag (``ck``, ``ack``, ``bAck``), as
    ``PopReviveService.consumeReviveMessage`` dispatches; None for any other tag."""
    if tag == names.CK_TAG:
        return PopCheckPoint.decode(body)
    if tag == names.ACK_TAG:
        return AckMsg.decode(body)
    if tag == names.BATCH_ACK_TAG:
        return BatchAckMsg.decode(body)
    return None
