"""The fused SEND_MESSAGE_V2 (310) path: a parsed JSON header and the frame's bytes in, the
whole response frame out, without a ``RemotingCommand``, the dispatcher or a JSON encode.

Registered with :meth:`RequestDispatcher.register_fused` by the controller; the protocol calls
it only while no interceptor or observer is installed and ``process_send`` is still the
handler of 310. It does what ``RemotingProtocol._handle`` + ``SendMessageProcessor.process_send``
do for the everyday request (``_send_v2_plain``'s conditions: every letter a..h present as a
plain decimal string, no batch/unitMode flag, an existing writable non-retry topic, no
transaction or schedule property) and answers from a bytes template holding the same JSON that
``encode_json_header`` writes for the general path's response. Anything else (binary header,
oneway or other flags, a ``clientID`` field, non-string values, SYNC_FLUSH...) returns None
before any side effect and the general path handles the request.

When the C accelerator ``rocketmq_emu.broker._native._send`` is built, :attr:`FusedSendV2.native` is its
``Sender``: the protocol hands it whole reads and it does all of the above in C (frame cutting,
JSON header, these checks, the record, the response), calling the same Python objects
(``select_topic_config``, ``put_message``, ``MessageRecord``, this template); where the store's
``put_message`` is its C ``PutPath``, the message goes to the store's C entry directly, with no
``MessageRecord`` (``broker/_native/store_direct.h``; ``Sender.direct`` turns that off).
Frames it does not fully understand come back to the Python path unchanged; see
``broker/_native/send_frame.c``.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import orjson

from rocketmq_emu.broker import _native
from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.commitlog.results import PutMessageStatus
from rocketmq_emu.broker.message import (
    PROPERTY_CLUSTER,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_WAIT_STORE_MSG_OK,
    RETRY_GROUP_TOPIC_PREFIX,
    pack_host,
)
from rocketmq_emu.broker.processors.common import NOT_ALLOWED_SEND_TOPICS
from rocketmq_emu.broker.processors.send_plain import MULTI_TAG, SCHEDULE_KEYS, plain_v2_record
from rocketmq_emu.broker.remoting.codes import CURRENT_VERSION, FLAG_RESPONSE, SERIALIZE_JSON
from rocketmq_emu.broker.remoting.command import decode_json_obj

_PREFIX = struct.Struct(">iI")
_PUT_OK = PutMessageStatus.PUT_OK
#: The C module (None when not built or RMQ_EMU_NO_NATIVE=1); tests patch it to force Python.
native_send = _native.send


def record_layout() -> tuple[tuple, tuple] | tuple[None, None]:
    """MessageRecord's slot descriptors in field order and the defaults of the fields after
    the ten ``plain_v2_record`` passes, so C can build a record as its dataclass ``__init__``
    does; (None, None) (C calls the class) if the record is not such a plain slots dataclass:
    a hand-written or post-init hook, a default factory among those fields."""
    cls = MessageRecord
    fields = dataclasses.fields(cls)
    init = cls.__dict__.get("__init__")
    if (init is None or getattr(init, "__code__", None) is None
            or init.__code__.co_filename != "<string>"  # dataclass-generated
            or hasattr(cls, "__post_init__") or len(fields) <= 10):
        return None, None
    defaults = []
    for f in fields[10:]:
        if not f.init or f.default is dataclasses.MISSING:
            return None, None
        defaults.append(f.default)
    if any(not f.init for f in fields[:10]):
        return None, None
    return tuple(cls.__dict__[f.name] for f in fields), tuple(defaults)


class FusedSendV2:
    """``fused(header_obj, buf, body_start, body_end, conn) -> bytes | None`` for one
    processor (see ``RequestDispatcher.register_fused``)."""

    #: Parses a header for the C path's rare Python answers (the same reader as the protocol).
    _loads = staticmethod(orjson.loads)

    def __init__(self, processor: Any) -> None:
        self.processor = processor
        self.ctx = processor.ctx
        self._host: tuple[str, int] | None = None
        self._region: str | None = None
        self._trace: str | None = None
        self._head = b""
        self._tail = b""
        self._template_bytes = b""
        #: The C ``Sender`` doing this whole path per read, or None (pure Python).
        self.native = None
        if native_send is not None:
            self.native = native_send.Sender(
                self, MessageRecord, _PUT_OK, NOT_ALLOWED_SEND_TOPICS, RETRY_GROUP_TOPIC_PREFIX,
                MULTI_TAG, PROPERTY_CLUSTER, PROPERTY_WAIT_STORE_MSG_OK,
                sorted(SCHEDULE_KEYS | {PROPERTY_TRANSACTION_PREPARED}), *record_layout())

    def _template(self) -> None:
        """Response header pieces around msgId..opaque (the JSON ``encode_json_header`` writes
        for ``success_response`` ext fields MSG_REGION, TRACE_ON, msgId, queueId,
        queueOffset: orjson key order = insertion order, compact)."""
        p = self.processor
        host = self.ctx.store_host
        self._host = host
        self._region = p.region_id
        self._trace = p.trace_on
        prefix = pack_host(*host).hex().upper()
        self._head = (b'{"code":0,"extFields":{"MSG_REGION":' + orjson.dumps(p.region_id)
                      + b',"TRACE_ON":' + orjson.dumps(p.trace_on)
                      + b',"msgId":"' + prefix.encode())
        self._tail = (b'","queueId":"%d","queueOffset":"%d"},"flag":' + b"%d" % FLAG_RESPONSE
                      + b',"language":"JAVA","opaque":%d,"serializeTypeCurrentRPC":"JSON",'
                      + b'"version":' + b"%d" % CURRENT_VERSION + b"}")
        # One % per response: commitlog offset, queueId, queueOffset, opaque.
        self._template_bytes = self._head.replace(b"%", b"%%") + b"%016X" + self._tail

    def __call__(self, obj: dict, buf: bytes | bytearray, body_start: int, body_end: int,
                 conn: Any) -> bytes | None:
        p = self.processor
        if p.sync_flush or obj.get("flag"):
            return None
        ext = obj.get("extFields")
        opaque = obj.get("opaque") or 0
        version = obj.get("version") or 0
        language = obj.get("language", "JAVA")
        if (type(ext) is not dict or type(opaque) is not int or type(version) is not int
                or type(language) is not str or "clientID" in ext):
            return None
        body = buf[body_start:body_end]
        if type(body) is not bytes:
            body = bytes(body)
        plain = plain_v2_record(p, ext.get, body, conn.peer)
        if plain is None:
            return None
        record, queue_id, _ = plain
        topic = record.topic
        ctx = self.ctx
        # Committed to this path: what RemotingProtocol._handle records for every request.
        conn.language = language
        conn.version = version
        result = ctx.store.put_message(record)
        if result[0] is not _PUT_OK:
            # Rare (store stopped, properties too long...): the general path's answer.
            return self._general_answer(obj, body, result, queue_id, topic)
        ctx.stats.on_put(topic, 1, len(body))
        if (ctx.store_host is not self._host or p.region_id is not self._region
                or p.trace_on is not self._trace):
            self._template()
        append = result[1]
        header = self._template_bytes % (append[1], queue_id, append[4], opaque)
        n = len(header)
        return _PREFIX.pack(4 + n, n) + header

    def _general_answer(self, obj: dict, body: bytes, result: Any, queue_id: int,
                        topic: str) -> bytes:
        """The response ``_respond`` builds for a put that did not succeed, encoded as
        ``RemotingProtocol._reply`` encodes it."""
        p = self.processor
        cmd = decode_json_obj(obj, body)
        ext = {"MSG_REGION": p.region_id, "TRACE_ON": p.trace_on}
        resp = p._respond(cmd, result, queue_id, ext, topic, 1, len(body))
        resp.opaque = cmd.opaque
        resp.flag |= FLAG_RESPONSE
        resp.serialize_type = SERIALIZE_JSON
        return resp.encode()
