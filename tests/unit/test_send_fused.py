"""The fused SEND_MESSAGE_V2 path (frame bytes to response bytes) answers the same bytes,
stores the same records and consume-queue units as the general path, and steps aside for
anything unusual or when an interceptor or observer must see the request."""

from __future__ import annotations

import hashlib
import random
import struct

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from processor_support import make_context
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

import rocketmq_emu.broker.processors.send as send_mod
from rocketmq_emu.broker.message import properties_to_string
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RemotingProtocol, RequestDispatcher

_PREFIX = struct.Struct(">iI")
BASE = {"a": "pg", "b": "T1", "c": "TBW102", "d": "4", "e": "0", "f": "0",
        "g": "1700000000000", "h": "0", "j": "0", "k": "false", "m": "false"}


def json_frame(ext: dict, body: bytes = b"body", *, opaque=7, flag=0, language="JAVA",
               version=409, code=310, drop=()) -> bytes:
    """A JSON frame written by hand, so ext values may be numbers, booleans or null."""
    header = {"code": code, "extFields": ext, "flag": flag, "language": language,
              "opaque": opaque, "serializeTypeCurrentRPC": "JSON", "version": version}
    for key in drop:
        header.pop(key, None)
    h = orjson.dumps(header)
    return _PREFIX.pack(4 + len(h) + len(body), len(h)) + h + body


def plain_frame(queue_id: int = 0, props=None, opaque: int = 7, body: bytes = b"body",
                **extra) -> bytes:
    ext = dict(BASE, e=str(queue_id),
               i=properties_to_string({"TAGS": "a", "KEYS": "k1 k2", "WAIT": "true",
                                       "UNIQ_KEY": "AC11000100002A9F0000000000000001"}
                                      if props is None else props))
    ext.update(extra)
    return json_frame(ext, body, opaque=opaque)


class Broker:
    """A send processor on a fresh store behind a protocol on a StringTransport."""

    def __init__(self, path, *, fused: bool, general_only: bool = False, chunk=None,
                 **config) -> None:
        self.ctx = make_context(path, **config)
        self.proc = SendMessageProcessor(self.ctx, random.Random(7))
        if general_only:  # no fast path at all: header object, _msg_check, _send_single
            self.proc._send_v2_plain = lambda cmd, conn: send_mod._GENERAL
        self.dispatcher = RequestDispatcher(self.ctx.clock)
        for code, handler in self.proc.handlers().items():
            self.dispatcher.register(code, handler)
        if fused:
            for code, (fn, handler) in self.proc.fused_handlers().items():
                self.dispatcher.register_fused(code, fn, handler)
        self.proto = RemotingProtocol(self.dispatcher, self.ctx.clock)
        self.transport = StringTransport(peerAddress=IPv4Address("TCP", "192.168.1.20", 4242))
        self.proto.makeConnection(self.transport)
        self.chunk = chunk

    def feed(self, data: bytes) -> None:
        if self.chunk is None:
            self.proto.dataReceived(data)
        else:  # split reads: frames cut from the bytearray buffer too
            for i in range(0, len(data), self.chunk):
                self.proto.dataReceived(data[i : i + self.chunk])

    def outcome(self):
        store = self.ctx.store
        log = b"".join(bytes(mf.mm[: mf.wrote_position]) for mf in store.commitlog.queue.files)
        units = {}
        for topic in sorted(store.topic_config.topic_config_table):
            for qid in range(16):
                u = store.get_consume_queue_units(topic, qid, 0, 1000)
                if u:
                    units[(topic, qid)] = u
        index = index_digest(store)
        p = self.proto
        stats = self.ctx.stats
        result = (self.transport.value(), log, units, index, p.language, p.version,
                  p.client_id, p.closed, sorted(self.ctx.warned), stats.put_total,
                  stats.put_size_total, dict(stats.put_by_topic))
        store.shutdown()
        return result


def index_digest(store) -> list[str]:
    """The index files' written bytes (header, hash slots, entries) as digests, after the
    queued entries are drained (the whole files are hundreds of MB)."""
    store._drain_index()
    if store.index is None:
        return []
    return [hashlib.blake2b(memoryview(f._mm)[: f._entries_base + f.header.index_count * 20]).hexdigest()
            for f in store.index.files]


def both(tmp_path, data: bytes, general_only: bool = True, **kw):
    fused = Broker(tmp_path / "fused", fused=True, **kw)
    fused.feed(data)
    general = Broker(tmp_path / "general", fused=False, general_only=general_only, **kw)
    general.feed(data)
    return fused.outcome(), general.outcome()


def test_plain_request_does_not_reach_the_handler(tmp_path):
    """An everyday 310 on an existing topic is answered without the dispatcher's handler."""
    b = Broker(tmp_path, fused=True)
    b.feed(plain_frame(opaque=1))  # creates the topic: general path
    calls = []
    real = b.proc.process_send
    b.dispatcher.register(310, lambda c, conn: calls.append(c) or real(c, conn))
    b.dispatcher.register_fused(310, b.proc.fused_handlers()[310][0], b.dispatcher.handler_for(310))
    b.feed(plain_frame(opaque=2) + plain_frame(queue_id=1, opaque=3))
    assert calls == []
    frames = RemotingCommand.decode_frame, b.transport.value()
    answers = []
    buf = frames[1]
    while buf:
        (n,) = struct.unpack_from(">i", buf)
        answers.append(RemotingCommand.decode_frame(buf[4 : 4 + n]))
        buf = buf[4 + n :]
    assert [(a.opaque, a.code, a.ext_fields["queueId"], a.ext_fields["queueOffset"])
            for a in answers] == [(1, 0, "0", "0"), (2, 0, "0", "1"), (3, 0, "1", "0")]
    b.ctx.store.shutdown()


@pytest.mark.parametrize("general_only", [True, False])
def test_plain_requests_give_identical_bytes(tmp_path, general_only):
    """Responses, commitlog bytes and CQ units equal those of the general path."""
    data = b"".join(plain_frame(queue_id=q % 4, opaque=100 + q, body=bytes([q]) * (q * 37))
                    for q in range(40))
    fused, general = both(tmp_path, data, general_only=general_only)
    assert fused == general
    assert fused[0].count(b'"code":0,') == 40


def test_split_reads_give_identical_bytes(tmp_path):
    """Frames cut from a partially filled buffer (bytearray) store the same records."""
    data = b"".join(plain_frame(queue_id=q % 3, opaque=q) for q in range(12))
    fused, general = both(tmp_path, data, chunk=97)
    assert fused == general


@pytest.mark.parametrize("variant", [
    {"flag": 2}, {"flag": 1}, {"flag": None}, {"opaque": None}, {"opaque": "5"},
    {"version": None}, {"version": "409"}, {"language": "CPP"}, {"language": 0},
    {"language": None}, {"drop": ("language",)}, {"drop": ("opaque", "version", "flag")},
])
def test_header_variants_give_identical_bytes(tmp_path, variant):
    """Oneway, response flag, numbers as strings, odd languages: same outcome either way."""
    ext = dict(BASE, i=properties_to_string({"TAGS": "a"}))
    data = plain_frame(opaque=1) + json_frame(dict(ext), **variant) + plain_frame(opaque=3)
    fused, general = both(tmp_path, data)
    assert fused == general


def test_binary_header_gives_identical_bytes(tmp_path):
    """A ROCKETMQ (binary) header takes the general path."""
    ext = dict(BASE, i=properties_to_string({"TAGS": "a", "WAIT": "true"}))
    cmd = RemotingCommand.request(310, ext, b"bin", opaque=9, serialize_type=1)
    data = plain_frame(opaque=1) + cmd.encode() + plain_frame(opaque=3)
    fused, general = both(tmp_path, data)
    assert fused == general


def test_sync_flush_takes_the_general_path(tmp_path):
    """SYNC_FLUSH answers after the flush: the fused path steps aside."""
    b = Broker(tmp_path, fused=True, sync_flush=True)
    b.feed(plain_frame(opaque=1))
    frame = plain_frame()
    assert b.proc.fused_handlers()[310][0](
        orjson.loads(frame[8:-4]), frame, len(frame) - 4, len(frame), b.proto) is None
    b.ctx.store.shutdown()


def test_observer_and_interceptor_see_every_request(tmp_path):
    """With an observer or interceptor installed every request goes through the dispatcher."""
    b = Broker(tmp_path, fused=True)
    b.feed(plain_frame(opaque=1))
    seen, intercepted = [], []
    b.dispatcher.add_observer(lambda ev: seen.append(ev.opaque))
    b.feed(plain_frame(opaque=2))
    b.dispatcher.add_interceptor(lambda cmd, conn: intercepted.append(cmd.opaque))
    b.feed(plain_frame(opaque=3))
    assert seen == [2, 3] and intercepted == [3]
    b.ctx.store.shutdown()


def test_fused_handler_failure_answers_system_error(tmp_path):
    """A fused handler that raises is answered like a handler that raised (SYSTEM_ERROR)."""
    b = Broker(tmp_path, fused=True)
    b.feed(plain_frame(opaque=1))

    def boom(obj, buf, start, end, conn):
        raise RuntimeError("boom")

    b.dispatcher.register_fused(310, boom, b.proc.process_send)
    b.transport.clear()
    b.feed(plain_frame(opaque=2))
    (n,) = struct.unpack_from(">i", b.transport.value())
    resp = RemotingCommand.decode_frame(b.transport.value()[4 : 4 + n])
    assert (resp.code, resp.opaque, resp.remark) == (1, 2, "RuntimeError: boom")
    b.ctx.store.shutdown()


def test_store_refusal_gives_identical_bytes(tmp_path):
    """A put the store refuses (store stopped) is answered as the general path answers it."""
    outcomes = []
    for name, fused in (("f", True), ("g", False)):
        b = Broker(tmp_path / name, fused=fused, general_only=True)
        b.feed(plain_frame(opaque=1))
        b.ctx.store.running = False
        b.feed(plain_frame(opaque=2))
        b.ctx.store.running = True
        outcomes.append(b.outcome())
    assert outcomes[0] == outcomes[1]
    assert b'"code":14' in outcomes[0][0]  # SERVICE_NOT_AVAILABLE


VALUES = st.one_of(
    st.sampled_from(["0", "1", "3", "7", "-1", "", " 1", "x", "true", "false", "1",
                     "12345678901234567890", "\u0661", "4294967296", "TBW102", "DROP"]),
    st.none(), st.integers(-2, 5), st.booleans(),
)
TOPICS = st.sampled_from(["T1", "T2", "%RETRY%cg", "bad topic", "SCHEDULE_TOPIC_XXXX",
                          "TBW102", "x" * 130])
PROP_KEYS = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "CLUSTER", "DELAY", "TRAN_MSG",
                             "TIMER_DELAY_SEC", "a", ""])
PROP_TEXT = st.lists(
    st.tuples(PROP_KEYS, st.sampled_from(["x", "true", "1", "k1 k2", "", "a\x01b"])),
    max_size=5,
).map(lambda pairs: "\x02".join(f"{k}\x01{v}" for k, v in pairs))
HEADER = st.fixed_dictionaries(
    {"b": TOPICS, "i": st.one_of(PROP_TEXT, st.none(), st.integers(0, 3))},
    optional={letter: VALUES for letter in "acdefghjklm"} | {"clientID": st.just("cid-1"),
                                                               "n": VALUES},
)
TOP = st.fixed_dictionaries({}, optional={
    "flag": st.sampled_from([0, 1, 2, None]), "opaque": st.integers(-3, 2**31),
    "language": st.sampled_from(["JAVA", "CPP", 1, None]),
    "version": st.sampled_from([409, 317, None, "409"])})


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(HEADER, TOP, st.binary(max_size=40)), min_size=1, max_size=5))
def test_any_header_gives_identical_bytes(tmp_path_factory, requests):
    """Whatever the ext fields and header values, fused and general paths agree byte for byte
    (responses, commitlog, consume queues, connection attributes, warnings, stats)."""
    tmp = tmp_path_factory.mktemp("h")
    data = plain_frame(opaque=1)  # T1 exists, so plain requests among these take the fast path
    for ext, top, body in requests:
        base = dict(BASE)
        base.update(ext)
        base = {k: v for k, v in base.items() if v != "DROP"}
        data += json_frame(base, body, **top)
    fused, general = both(tmp, data, max_message_size=30)
    assert fused == general



def test_connections_disable_nagle():
    """A remoting connection sets TCP_NODELAY, as Netty's remoting server and client do
    (a pipelining producer otherwise waits for delayed ACKs between replies)."""

    class NoDelayTransport(StringTransport):
        no_delay = None

        def setTcpNoDelay(self, enabled):
            self.no_delay = enabled

    transport = NoDelayTransport()
    RemotingProtocol(RequestDispatcher()).makeConnection(transport)
    assert transport.no_delay is True
