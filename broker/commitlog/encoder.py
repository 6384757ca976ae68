"""Writing a record into a mapped file: the commitlog's one encoder (``CommitLog``'s
``DefaultAppendMessageCallback`` with its ``MessageExtEncoder``).

Every format, offset and size comes from the record's declaration in
:mod:`rocketmq_emu.broker.commitlog.record` (``RECORD`` and the layouts derived from it). The
parts that repeat from message to message (topic block, packed hosts, tag hash codes) are
cached. A record of the common shape (IPv4 hosts) is written by one ``pack_into`` of a struct
compiled per (body, topic, properties) length; the other shapes field group by field group.

Torn-record guard: the record is written with TOTALSIZE 0 first and TOTALSIZE is patched in
last, so a process killed mid-write leaves a record that recovery (and any reader) sees as
"end of data", never as a shorter valid record.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from rocketmq_emu.broker.commitlog.record import (
    I16,
    I32,
    MAX_PROPERTIES_LENGTH,
    MAX_V1_TOPIC_LENGTH,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MIN_RECORD_SIZE,
    V4,
    MessageRecord,
    RecordError,
    record_layout,
)
from rocketmq_emu.broker.message import (
    BORNHOST_V6_FLAG,
    HOST_V4_SIZE,
    STOREHOSTADDRESS_V6_FLAG,
    java_string_hash,
    pack_host,
    properties_to_string,
)

_HOST_FLAGS = ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)
_CACHE_LIMIT = 4096
#: The empty-record size less its two IPv4 hosts and one-byte topic length: what every record
#: has besides its hosts, topic block (length + bytes), body and properties.
_BASE_SIZE = MIN_RECORD_SIZE - 2 * HOST_V4_SIZE - 1
#: The IPv4 record's fixed fields, then body, topic block, propertiesLength, properties: the
#: per-shape struct format is this head plus the three lengths.
_V4_HEAD = V4.format
_PROPS_LENGTH_CODE = I16.format.lstrip("<>!=@")

_join_pair = "\u0001".join


def props_string(properties: dict) -> str:
    """``properties_to_string`` for the common case of str values, about 30% faster; any other
    value (None is skipped, ints are formatted) goes through the general function."""
    try:
        return "\u0002".join(map(_join_pair, properties.items()))
    except TypeError:
        return properties_to_string(properties)


class PropertiesTooLong(RecordError):
    """Properties over 32767 bytes (PROPERTIES_SIZE_EXCEEDED)."""


class Prepared(NamedTuple):
    """The encoded variable parts of one record and its total size."""

    topic_block: bytes
    props: bytes
    born: bytes
    store: bytes
    sys_flag: int
    size: int
    magic: int
    v4: bool


#: Builds a Prepared without NamedTuple's keyword-checking ``__new__`` (once per message).
_tuple_new = tuple.__new__


class RecordEncoder:
    """Prepares and writes records; one per commitlog (the caches are not shared)."""

    def __init__(self) -> None:
        self._hosts: dict[tuple[str, int], bytes] = {}
        #: topic -> (topicLength + UTF-8 topic, magic): :meth:`topic`'s cache, read directly on
        #: the append path (a dict lookup instead of a call).
        self.topic_blocks: dict[str, tuple[bytes, int]] = {}
        #: tags -> tagsCode: :meth:`tags_code`'s cache, read directly by dispatch.
        self.tag_codes: dict[str, int] = {}
        self._pairs: dict[tuple, tuple] = {}
        self.shapes: dict[tuple[int, int, int], object] = {}
        self._last_pair: tuple = (None, None, None)

    def host(self, addr: tuple[str, int]) -> bytes:
        """``pack_host`` with a cache (parsing an IP address costs microseconds)."""
        b = self._hosts.get(addr)
        if b is None:
            b = pack_host(*addr)
            if len(self._hosts) >= _CACHE_LIMIT:
                self._hosts.clear()
            self._hosts[addr] = b
        return b

    def host_pair(self, born: tuple[str, int], store: tuple[str, int]) -> tuple:
        """(born bytes, store bytes, sysFlag host bits, both IPv4) with a cache; the last
        pair is checked first (a connection sends many messages in a row)."""
        last = self._last_pair
        if born is last[0] and store is last[1]:
            return last[2]
        key = (born, store)
        t = self._pairs.get(key)
        if t is None:
            b, st = self.host(born), self.host(store)
            flags = (BORNHOST_V6_FLAG if len(b) != HOST_V4_SIZE else 0) | (
                STOREHOSTADDRESS_V6_FLAG if len(st) != HOST_V4_SIZE else 0)
            t = (b, st, flags, flags == 0)
            if len(self._pairs) >= _CACHE_LIMIT:
                self._pairs.clear()
            self._pairs[key] = t
        self._last_pair = (born, store, t)
        return t

    def topic(self, topic: str) -> tuple[bytes, int]:
        """(topicLength + UTF-8 topic, magic) with a cache."""
        t = self.topic_blocks.get(topic)
        if t is None:
            raw = topic.encode("utf-8")
            if len(raw) > 32767:
                raise RecordError(f"topic length {len(raw)} exceeds 32767 bytes")
            if len(raw) <= MAX_V1_TOPIC_LENGTH:
                t = (bytes((len(raw),)) + raw, MESSAGE_MAGIC_CODE)
            else:  # R5 CommitLog: V2 magic (2-byte topic length) only for long topics
                t = (I16.pack(len(raw)) + raw, MESSAGE_MAGIC_CODE_V2)
            if len(self.topic_blocks) >= _CACHE_LIMIT:
                self.topic_blocks.clear()
            self.topic_blocks[topic] = t
        return t

    def tags_code(self, tags: str | None) -> int:
        """``tagsString2tagsCode`` with a cache (the Java hash is a Python loop)."""
        if not tags:
            return 0
        code = self.tag_codes.get(tags)
        if code is None:
            code = java_string_hash(tags)
            if len(self.tag_codes) >= _CACHE_LIMIT:
                self.tag_codes.clear()
            self.tag_codes[tags] = code
        return code

    def prepare(self, record: MessageRecord) -> Prepared:
        """Encode the variable parts; raises RecordError (PropertiesTooLong for properties)."""
        # The caches' dicts read directly: this runs once per message.
        topic = self.topic_blocks.get(record.topic) or self.topic(record.topic)
        ps = record.properties_str
        props = (ps if ps is not None else props_string(record.properties)).encode()
        if len(props) > MAX_PROPERTIES_LENGTH:
            raise PropertiesTooLong(
                f"properties length {len(props)} exceeds {MAX_PROPERTIES_LENGTH} bytes"
            )
        last = self._last_pair
        if record.born_host is last[0] and record.store_host is last[1]:
            born, store, host_flags, v4 = last[2]
        else:
            born, store, host_flags, v4 = self.host_pair(record.born_host, record.store_host)
        topic_block = topic[0]
        return _tuple_new(Prepared, (topic_block, props, born, store,
                                     (record.sys_flag & _HOST_FLAGS) | host_flags,
                                     _BASE_SIZE + len(born) + len(store) + len(topic_block)
                                     + len(record.body) + len(props), topic[1], v4))

    def write(self, buf, pos: int, record: MessageRecord, p: Prepared) -> int:
        """Write ``record`` at ``buf[pos:]``, TOTALSIZE last; returns the size. Uses the
        record's queue_offset, physical_offset, store_timestamp and body_crc; sets its
        total_size, magic_code and sys_flag (host bits)."""
        topic_block, props, born, store, sys_flag, size, magic, v4 = p
        body = record.body
        blen = len(body)
        if v4:
            shape = self.shapes.get((blen, len(topic_block), len(props)))
            if shape is None:
                shape = self.shape(blen, len(topic_block), len(props))
            # The whole record in one C call, TOTALSIZE 0 until the patch below.
            shape(buf, pos, 0, magic, record.body_crc, record.queue_id, record.flag,
                  record.queue_offset, record.physical_offset, sys_flag,
                  record.born_timestamp, born, record.store_timestamp, store,
                  record.reconsume_times, record.prepared_transaction_offset, blen,
                  bytes(body), topic_block, len(props), props)
        else:
            self._write_fields(buf, pos, record, p)
        I32.pack_into(buf, pos, size)
        record.total_size = size
        record.magic_code = magic
        record.sys_flag = sys_flag
        return size

    def shape(self, blen: int, tlen: int, plen: int):
        """``pack_into`` of the whole IPv4 record with these body, topic block and properties
        lengths (fixed fields, body, topic block, propertiesLength, properties): one C call
        instead of five, 0.7 us to compile; the cache is dropped, not grown, past its limit."""
        if len(self.shapes) >= _CACHE_LIMIT:
            self.shapes.clear()
        fn = self.shapes[(blen, tlen, plen)] = struct.Struct(
            f"{_V4_HEAD}{blen}s{tlen}s{_PROPS_LENGTH_CODE}{plen}s").pack_into
        return fn

    @staticmethod
    def _write_fields(buf, pos: int, record: MessageRecord, p: Prepared) -> None:
        """Any shape (IPv6 hosts): its fixed fields from its own derived layout, then body,
        topic block, propertiesLength and properties."""
        layout = record_layout(p.sys_flag, p.magic)
        fixed = layout.struct("totalSize", "bodyLength")
        body = record.body
        fixed.pack_into(
            buf, pos, 0, p.magic, record.body_crc, record.queue_id, record.flag,
            record.queue_offset, record.physical_offset, p.sys_flag, record.born_timestamp,
            p.born, record.store_timestamp, p.store, record.reconsume_times,
            record.prepared_transaction_offset, len(body),
        )
        q = pos + fixed.size
        for part in (body, p.topic_block):
            buf[q : q + len(part)] = part
            q += len(part)
        I16.pack_into(buf, q, len(p.props))
        q += I16.size
        buf[q : q + len(p.props)] = p.props
