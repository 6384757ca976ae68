"""The append fast path: a record written straight into a mapped file with precompiled
``struct`` (bytes identical to :func:`rocketmq_emu.broker.commitlog.record.encode_record`, which the tests
prove), with caches for the parts that repeat from message to message (topic bytes, packed
hosts, tag hash codes).

Torn-record guard: the record is written with TOTALSIZE 0 first and TOTALSIZE is patched in
last, so a process killed mid-write leaves a record that recovery (and any reader) sees as
"end of data", never as a shorter valid record.
"""

from __future__ import annotations

import struct

from rocketmq_emu.broker.commitlog.record import (
    MAX_PROPERTIES_LENGTH,
    MAX_V1_TOPIC_LENGTH,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    EncodedParts,
    MessageRecord,
    RecordError,
    encode_into,
)
from rocketmq_emu.broker.message import (
    BORNHOST_V6_FLAG,
    STOREHOSTADDRESS_V6_FLAG,
    java_string_hash,
    pack_host,
    properties_to_string,
)

_V4 = struct.Struct(">iiiiiqqiq8sq8siqi")  # 88 bytes: every fixed field + BODYLENGTH (IPv4)
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_V4_FIXED = _V4.size  # 88
_HOST_FLAGS = ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)
_CACHE_LIMIT = 4096


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


class Prepared:
    """The encoded variable parts of one record and its total size."""

    __slots__ = ("topic_block", "props", "born", "store", "sys_flag", "size", "magic", "v4")

    def __init__(self, topic_block, props, born, store, sys_flag, size, magic, v4):
        self.topic_block = topic_block
        self.props = props
        self.born = born
        self.store = store
        self.sys_flag = sys_flag
        self.size = size
        self.magic = magic
        self.v4 = v4


class RecordEncoder:
    """Prepares and writes records; one per commitlog (the caches are not shared)."""

    def __init__(self) -> None:
        self._hosts: dict[tuple[str, int], bytes] = {}
        self._topics: dict[str, tuple[bytes, int]] = {}
        self._tags: dict[str, int] = {}
        self._pairs: dict[tuple, tuple] = {}

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
        """(born bytes, store bytes, sysFlag host bits, both IPv4) with a cache."""
        key = (born, store)
        t = self._pairs.get(key)
        if t is None:
            b, st = self.host(born), self.host(store)
            flags = (BORNHOST_V6_FLAG if len(b) == 20 else 0) | (
                STOREHOSTADDRESS_V6_FLAG if len(st) == 20 else 0)
            t = (b, st, flags, flags == 0)
            if len(self._pairs) >= _CACHE_LIMIT:
                self._pairs.clear()
            self._pairs[key] = t
        return t

    def topic(self, topic: str) -> tuple[bytes, int]:
        """(length prefix + UTF-8 topic, magic) with a cache."""
        t = self._topics.get(topic)
        if t is None:
            raw = topic.encode("utf-8")
            if len(raw) > 32767:
                raise RecordError(f"topic length {len(raw)} exceeds 32767 bytes")
            if len(raw) <= MAX_V1_TOPIC_LENGTH:
                t = (bytes((len(raw),)) + raw, MESSAGE_MAGIC_CODE)
            else:  # R5 CommitLog: V2 magic (2-byte topic length) only for long topics
                t = (_I16.pack(len(raw)) + raw, MESSAGE_MAGIC_CODE_V2)
            if len(self._topics) >= _CACHE_LIMIT:
                self._topics.clear()
            self._topics[topic] = t
        return t

    def tags_code(self, tags: str | None) -> int:
        """``tagsString2tagsCode`` with a cache (the Java hash is a Python loop)."""
        if not tags:
            return 0
        code = self._tags.get(tags)
        if code is None:
            code = java_string_hash(tags)
            if len(self._tags) >= _CACHE_LIMIT:
                self._tags.clear()
            self._tags[tags] = code
        return code

    def prepare(self, record: MessageRecord) -> Prepared:
        """Encode the variable parts; raises RecordError (PropertiesTooLong for properties)."""
        topic_block, magic = self.topic(record.topic)
        props = record.encoded_properties()
        if len(props) > MAX_PROPERTIES_LENGTH:
            raise PropertiesTooLong(
                f"properties length {len(props)} exceeds {MAX_PROPERTIES_LENGTH} bytes"
            )
        born = self.host(record.born_host)
        store = self.host(record.store_host)
        sys_flag = record.sys_flag & _HOST_FLAGS
        if len(born) == 20:
            sys_flag |= BORNHOST_V6_FLAG
        if len(store) == 20:
            sys_flag |= STOREHOSTADDRESS_V6_FLAG
        v4 = len(born) == 8 and len(store) == 8
        size = (_V4_FIXED + len(born) + len(store) - 16 + len(record.body)
                + len(topic_block) + 2 + len(props))
        return Prepared(topic_block, props, born, store, sys_flag, size, magic, v4)

    def write(self, buf, pos: int, record: MessageRecord, p: Prepared) -> int:
        """Write ``record`` at ``buf[pos:]``, TOTALSIZE last; returns the size.

        Uses the record's queue_offset, physical_offset, store_timestamp and body_crc.
        """
        size = p.size
        if p.v4:
            body = record.body
            blen = len(body)
            _V4.pack_into(
                buf, pos, 0, p.magic, record.body_crc, record.queue_id, record.flag,
                record.queue_offset, record.physical_offset, p.sys_flag, record.born_timestamp,
                p.born, record.store_timestamp, p.store, record.reconsume_times,
                record.prepared_transaction_offset, blen,
            )
            q = pos + _V4_FIXED
            buf[q : q + blen] = body
            q += blen
            tb = p.topic_block
            buf[q : q + len(tb)] = tb
            q += len(tb)
            props = p.props
            _I16.pack_into(buf, q, len(props))
            q += 2
            buf[q : q + len(props)] = props
            record.total_size = size
            record.magic_code = p.magic
            record.sys_flag = p.sys_flag
        else:  # IPv6 hosts: the lead's general encoder, TOTALSIZE patched afterwards
            topic = p.topic_block[1:] if p.magic == MESSAGE_MAGIC_CODE else p.topic_block[2:]
            encode_into(buf, pos, record, EncodedParts(topic, p.props, p.born, p.store,
                                                       p.sys_flag, 0))
            record.total_size = size
        _I32.pack_into(buf, pos, size)
        return size
