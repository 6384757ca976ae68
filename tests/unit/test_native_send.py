"""The C SEND_MESSAGE_V2 path (``rocketmq_emu.broker._native._send``) answers the same bytes, stores the
same records and leaves the connection in the same state as the Python fused path, whatever the
JSON header looks like, however the frames are split across reads, and steps aside (before any
side effect) for anything it does not fully understand."""

from __future__ import annotations

import gc
import json
import logging
import struct

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_send_fused import BASE, Broker, json_frame, plain_frame

import rocketmq_emu.broker.processors.send_fast as send_fast
from rocketmq_emu.broker.configs.topics import TopicConfig
from rocketmq_emu.broker.message import properties_to_string
from rocketmq_emu.broker.remoting.command import RemotingCommand

native = send_fast.native_send
needs_native = pytest.mark.skipif(native is None, reason="rocketmq_emu.broker._native._send not built")
pytestmark = needs_native
_PREFIX = struct.Struct(">iI")
SLOW = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


class Pair:
    """The same broker twice: one with the C path, one forced onto the Python fused path."""

    def __init__(self, tmp_path, **kw) -> None:
        self.c = Broker(tmp_path / "c", fused=True, **kw)
        self.py = Broker(tmp_path / "py", fused=True, **kw)
        self.py.dispatcher._fused[310][0].native = None
        assert self.c.dispatcher.native_fused() is not None
        assert self.py.dispatcher.native_fused() is None

    def feed(self, data: bytes) -> None:
        self.c.feed(data)
        self.py.feed(data)

    def each(self, fn) -> None:
        fn(self.c)
        fn(self.py)

    def outcomes(self):
        return self.c.outcome(), self.py.outcome()


def frame(header: bytes, body: bytes = b"body") -> bytes:
    return _PREFIX.pack(4 + len(header) + len(body), len(header)) + header + body


# --- raw JSON headers written every way a JSON writer may write them -------------------------

WS = st.sampled_from(["", "", " ", "\n", "\t", "\r\n  "])


@st.composite
def json_string(draw, text: str) -> str:
    """``text`` as a JSON string literal, each character raw or escaped at random."""
    out = ['"']
    for ch in text:
        cp = ord(ch)
        mode = draw(st.integers(0, 3))
        if ch == '"' or ch == "\\":
            out.append("\\" + ch if mode < 3 else f"\\u{cp:04x}")
        elif cp < 0x20:
            short = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch)
            out.append(short if short and mode < 2 else f"\\u{cp:04X}" if mode == 2
                       else f"\\u{cp:04x}")
        elif mode == 3 and cp > 0xFFFF:
            hi, lo = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
            out.append(f"\\u{hi:04x}\\u{lo:04X}")
        elif mode == 3 and cp <= 0xFFFF:
            out.append(f"\\u{cp:04x}")
        elif mode == 2 and ch == "/":
            out.append("\\/")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


@st.composite
def json_value(draw, value) -> str:
    if isinstance(value, str):
        return draw(json_string(value))
    if isinstance(value, dict):
        return draw(json_object(value))
    return json.dumps(value)


@st.composite
def json_object(draw, fields: dict) -> str:
    """An object of ``fields`` in a random key order with random whitespace."""
    items = list(fields.items())
    order = draw(st.permutations(range(len(items))))
    parts = []
    for i in order:
        key, value = items[i]
        parts.append(draw(WS) + draw(json_string(key)) + draw(WS) + ":" + draw(WS)
                     + draw(json_value(value)) + draw(WS))
    return "{" + ",".join(parts) + (draw(WS) if not parts else "") + "}"


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
PROPS = st.lists(
    st.tuples(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "CLUSTER", "DELAY", "TRAN_MSG",
                               "TIMER_DELAY_MS", "\u00e9t\u00e9", "k\U0001f600", ""]),
              st.one_of(st.sampled_from(["x", "true", "k1 k2", "", "a\x01b", "\u4e2d\u6587"]),
                        TEXT)),
    max_size=5,
).map(lambda pairs: "\x02".join(f"{k}\x01{v}" for k, v in pairs))
EXT_VALUE = st.one_of(
    st.sampled_from(["0", "1", "3", "-1", "", "007", "x", "false", "true", "\u0661",
                     "12345678901234567890", "999999999", "1000000000"]),
    st.integers(-2, 5), st.none(), st.booleans(), TEXT,
)
EXT = st.fixed_dictionaries(
    {"b": st.sampled_from(["T1", "T1", "T2", "%RETRY%g", "t\u00e9", "SCHEDULE_TOPIC_XXXX"]),
     "i": st.one_of(PROPS, PROPS, st.none(), st.just(3))},
    optional={letter: EXT_VALUE for letter in "acdefghjklm"}
    | {"clientID": st.just("cid"), "n": EXT_VALUE, "zz": EXT_VALUE, "\u00e9": TEXT},
)
TOP = st.fixed_dictionaries(
    {"code": st.sampled_from([310, 310, 310, 10, 11, 999, "310", 310.0])},
    optional={
        "flag": st.sampled_from([0, 0, 1, 2, None, False]),
        "opaque": st.one_of(st.integers(-2**63, 2**63), st.sampled_from([None, "5", 1.5])),
        "language": st.sampled_from(["JAVA", "CPP", "\u00e9", 1, None]),
        "version": st.sampled_from([409, 317, None, "409", -1]),
        "remark": st.sampled_from([None, "r\u00e9", 3, True]),
        "serializeTypeCurrentRPC": st.just("JSON"),
        "extra": st.sampled_from([{}, {"x": 1}, 1e3, -0.5]),
    },
)


@st.composite
def header_frame(draw) -> bytes:
    top = draw(TOP)
    ext = dict(BASE)
    ext.update(draw(EXT))
    ext = {k: v for k, v in ext.items() if draw(st.integers(0, 12)) or k == "b"}
    top["extFields"] = ext
    text = draw(WS) + draw(json_object(top)) + draw(WS)
    body = draw(st.binary(max_size=40))
    return frame(text.encode("utf-8"), body)


@SLOW
@given(st.lists(header_frame(), min_size=1, max_size=6))
def test_any_json_header_same_outcome(tmp_path_factory, frames):
    """Key order, whitespace, escapes, non-ASCII, numbers for strings, missing and extra
    fields, other codes: C and Python answer and store the same."""
    pair = Pair(tmp_path_factory.mktemp("h"), max_message_size=30)
    pair.feed(plain_frame(opaque=1))  # T1 exists: plain frames take the fast paths
    pair.feed(b"".join(frames))
    c, py = pair.outcomes()
    assert c == py


@SLOW
@given(st.lists(header_frame(), min_size=1, max_size=3))
def test_parse_header_agrees_with_orjson(frames):
    """Whatever the C reader accepts, orjson reads to the same fields (C may read less: an
    integer of 19 digits is not taken as one, and such a frame goes to the Python path)."""
    for data in frames:
        hlen = _PREFIX.unpack_from(data)[1]
        header = data[8 : 8 + hlen]
        got = native.parse_header(header)
        if got is None:
            continue
        obj = orjson.loads(header)
        assert type(obj) is dict
        for key in ("code", "flag", "opaque", "version"):
            if key in got:
                want = obj[key]
                if got[key] is not ...:  # ...: not read as an int (the frame is declined)
                    assert type(want) is int and want == got[key]
            else:
                assert key not in obj
        if "language" in got:
            assert got["language"] is ... or got["language"] == obj["language"]
        if "extFields" in got:
            ext = obj["extFields"]
            for key, value in got["extFields"].items():
                if key == "clientID":
                    assert "clientID" in ext
                else:
                    assert ext[key] == value


@pytest.mark.parametrize("header", [
    b'{"code":310,"code":310,"extFields":{}}',             # duplicate key
    b'{"code":310,"extFields":{"b":"x","b":"y"}}',          # duplicate ext key
    b'{"code":310,"extFields":{"b":"\\ud800"}}',            # lone surrogate
    b'{"code":310,"extFields":{"b":"\\udc00\\ud800"}}',     # reversed pair
    b'{"code":310,"extFields":{"b":"\xff"}}',               # invalid UTF-8
    b'{"code":310,"extFields":{"b":"\xed\xa0\x80"}}',       # encoded surrogate
    b'{"code":310,"extFields":{"b":"\xc0\xaf"}}',           # overlong
    b'{"code":310,"extFields":{"b":"a\x01"}}',              # raw control character
    b'{"code":310,"extFields":{}} x',                      # trailing bytes
    b'\xef\xbb\xbf{"code":310,"extFields":{}}',             # BOM
    b'{"code":0310,"extFields":{}}',                        # leading zero
    b'{"code":310,"extFields":{"n":[1]}}',                  # container value
    b'{"code":310,"extFields":{"b":"x"},}',                 # trailing comma
    b"{'code':310}",                                       # not JSON
    b'{"code":310,"extFields":{"b":"\\x"}}',                # bad escape
    b'{"code":310,"extFields":{"b":"\\u12"}}',              # short \\u
    b'{"code":310,"extFields":{"b":"x"}',                   # truncated
    b"",
])
def test_parse_header_declines_what_orjson_reads_otherwise(header):
    """Headers orjson rejects or reads differently (duplicates) are declined."""
    assert native.parse_header(header) is None


def test_parse_header_reads_escapes_and_big_numbers():
    """Escapes decode as orjson decodes them; integers beyond 18 digits are not ints."""
    h = (b'{"code":310,"opaque":1234567890123456789,"version":-5,"language":"\\u004aAVA",'
         b'"extFields":{"b":"a\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\xc3\xa9","i":""}}')
    got = native.parse_header(h)
    assert got["opaque"] is ... and got["version"] == -5 and got["language"] == "JAVA"
    assert got["extFields"]["b"] == orjson.loads(h)["extFields"]["b"]


def test_split_reads_at_every_byte_give_identical_outcome(tmp_path):
    """Two frames split into two reads at every byte boundary: the same answers and records."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    for cut in range(0, 2 * len(plain_frame()) + 1):
        data = (plain_frame(queue_id=cut % 3, opaque=cut * 2, body=b"b%d" % cut)
                + plain_frame(queue_id=1, opaque=cut * 2 + 1,
                              props={"TAGS": "t\u00e9", "KEYS": f"k{cut}"}))
        pair.feed(data[:cut])
        pair.feed(data[cut:])
    c, py = pair.outcomes()
    assert c == py
    assert c[0].count(b'"code":0,') == 1 + 2 * (2 * len(plain_frame()) + 1)


@pytest.mark.parametrize("bad", [
    struct.pack(">i", -1), struct.pack(">i", -2**31), struct.pack(">i", 2**31 - 1),
    struct.pack(">i", 3), struct.pack(">i", 16 * 1024 * 1024 - 3),
])
def test_bad_length_closes_the_connection_after_the_answered_frames(tmp_path, bad, caplog):
    """A length outside [4, MAX_LENGTH - 4] after good frames: those are answered, the
    connection is closed, the rest is ignored, as on the Python path."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    with caplog.at_level(logging.WARNING, logger="rocketmq_emu.broker.remoting.protocol"):
        pair.feed(plain_frame(opaque=2) + bad + b"\0" * 64 + plain_frame(opaque=3))
    assert sum("malformed frame" in r.getMessage() for r in caplog.records) == 2
    c, py = pair.outcomes()
    assert c == py
    assert c[6] is True or pair.c.transport.disconnecting


def test_store_refusal_gives_identical_bytes(tmp_path):
    """A put the store refuses is answered as the Python path answers it."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    pair.each(lambda b: setattr(b.ctx.store, "running", False))
    pair.feed(plain_frame(opaque=2) + plain_frame(opaque=3))
    pair.each(lambda b: setattr(b.ctx.store, "running", True))
    pair.feed(plain_frame(opaque=4))
    c, py = pair.outcomes()
    assert c == py
    assert c[0].count(b'"code":14') == 2


def test_put_that_raises_answers_system_error(tmp_path):
    """put_message raising: SYSTEM_ERROR for that frame, the following frames answered."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))

    def patch(b):
        real = b.ctx.store.put_message
        calls = []

        def put(record):
            calls.append(record)
            if len(calls) == 2:
                raise RuntimeError("disk on fire")
            return real(record)
        b.ctx.store.put_message = put
    pair.each(patch)
    pair.feed(b"".join(plain_frame(opaque=n) for n in range(2, 6)))
    c, py = pair.outcomes()
    assert c == py
    assert b"RuntimeError: disk on fire" in c[0]


def test_settings_changed_between_reads_are_seen(tmp_path):
    """Topic queues, filter type, permission, max size, store host, cluster name, region and
    trace flag changed between reads: C sees each change as the Python path does."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    changes = [
        lambda b: b.ctx.topic_config.update_topic_config(
            TopicConfig("T1", read_queue_nums=2, write_queue_nums=2)),
        lambda b: setattr(b.ctx.topic_config.select_topic_config("T1"), "topic_filter_type",
                          "MULTI_TAG"),
        lambda b: setattr(b.ctx.config, "broker_permission", 4),
        lambda b: setattr(b.ctx.config, "broker_permission", 6),
        lambda b: setattr(b.proc, "max_message_size", 5),
        lambda b: setattr(b.proc, "max_message_size", 1 << 16),
        lambda b: setattr(b.ctx, "store_host", ("10.1.2.3", 20911)),
        lambda b: setattr(b.ctx.config, "broker_cluster_name", "C2"),
        lambda b: setattr(b.proc, "region_id", "R\u00e9gion"),
        lambda b: setattr(b.proc, "trace_on", "false"),
        lambda b: b.ctx.topic_config.delete_topic_config("T1"),
    ]
    for n, change in enumerate(changes):
        pair.each(change)
        pair.feed(b"".join(plain_frame(queue_id=q, opaque=100 * n + q, body=b"0123456789")
                           for q in range(4)))
    c, py = pair.outcomes()
    assert c == py
    assert b'"MSG_REGION":"R\xc3\xa9gion"' in c[0]


def test_listener_writing_to_the_connection_keeps_the_order(tmp_path):
    """An arrival listener answering on this connection during the put: its frame comes
    after the responses produced before it, as on the Python path."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))

    def listen(b):
        note = RemotingCommand.request(40, {"consumerGroup": "g"}, opaque=99)
        b.ctx.store.add_arrival_listener(
            lambda topic, qid, off, tags, rec: qid == 2 and b.proto.send_command(note))
    pair.each(listen)
    pair.feed(b"".join(plain_frame(queue_id=q % 4, opaque=10 + q) for q in range(8)))
    c, py = pair.outcomes()
    assert c == py
    assert c[0].count(b'"opaque":99') == 2


def test_closed_connection_stops_the_run(tmp_path):
    """A put that closes the connection: no frame after it is handled, as in Python."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))

    def closing(b):
        b.ctx.store.add_arrival_listener(
            lambda topic, qid, off, tags, rec: qid == 1 and b.proto.connectionLost(None))
    pair.each(closing)
    pair.feed(b"".join(plain_frame(queue_id=q, opaque=10 + q) for q in range(4)))
    c, py = pair.outcomes()
    assert c == py
    assert c[0].count(b'"code":0,') == 3


def test_interceptor_installed_by_a_handler_stops_the_c_path(tmp_path):
    """A request handled in Python that installs an interceptor: the following sends of the
    same read are intercepted."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    seen = {}

    def install(b):
        seen[b] = []
        b.dispatcher.register(
            26, lambda cmd, conn: b.dispatcher.add_interceptor(
                lambda c, _: seen[b].append(c.opaque)))
    pair.each(install)
    pair.feed(plain_frame(opaque=2) + RemotingCommand.request(26, {}, opaque=3).encode()
              + plain_frame(opaque=4))
    assert list(seen.values()) == [[4], [4]]
    c, py = pair.outcomes()
    assert c == py


def test_every_property_form_stored_alike(tmp_path):
    """Duplicate, empty and odd property pieces, WAIT and CLUSTER given by the client."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    texts = ["", "\x02\x02", "TAGS\x01a\x02TAGS\x01b", "CLUSTER\x01mine\x02TAGS\x01t",
             "WAIT\x01true\x02WAIT\x01false\x02KEYS\x01k", "\x01v\x02k\x01\x02K\x01v\x01w",
             "UNIQ_KEY\x01" + "A" * 32 + "\x02\u4e2d\x01\u6587"]
    for n, text in enumerate(texts):
        ext = dict(BASE, i=text)
        pair.feed(json_frame(ext, b"x", opaque=50 + n))
    c, py = pair.outcomes()
    assert c == py
    assert c[0].count(b'"code":0,') == 1 + len(texts)


def test_python_path_when_forced_off(monkeypatch, tmp_path):
    """With the C module patched away (as RMQ_EMU_NO_NATIVE=1 does) no Sender is made."""
    monkeypatch.setattr(send_fast, "native_send", None)
    b = Broker(tmp_path, fused=True)
    assert b.dispatcher.native_fused() is None
    b.feed(plain_frame(opaque=1) + plain_frame(opaque=2))
    assert b.outcome()[0].count(b'"code":0,') == 2


def test_properties_string_matches_properties_to_string(tmp_path):
    """The stored properties of a C-path record equal the Python path's (WAIT dropped,
    CLUSTER added)."""
    b = Broker(tmp_path, fused=True)
    b.feed(plain_frame(opaque=1))
    b.feed(plain_frame(opaque=2, props={"TAGS": "x", "WAIT": "true", "KEYS": "a b"}))
    rec = b.ctx.store.look_message_by_offset(
        b.ctx.store.get_consume_queue_units("T1", 0, 1, 1)[0][0])
    assert rec.properties == {"TAGS": "x", "KEYS": "a b", "CLUSTER": "DefaultCluster"}
    assert rec.encoded_properties() == properties_to_string(rec.properties).encode()
    b.ctx.store.shutdown()


def test_complete_frame_over_max_length_closes_the_connection(tmp_path):
    """A whole frame longer than the connection's MAX_LENGTH is refused as on the Python path,
    even though every byte of it arrived."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    small, big = plain_frame(opaque=2), plain_frame(opaque=3, body=b"x" * 64)
    pair.each(lambda b: setattr(b.proto, "max_length", len(small)))
    pair.feed(small + big + small)
    c, py = pair.outcomes()
    assert c == py
    assert c[0].count(b'"code":0,') == 2 and pair.c.transport.disconnecting


def test_records_equal_those_of_the_python_path(tmp_path):
    """The MessageRecord C builds (slots filled directly) equals plain_v2_record's, field by
    field, for a plain request."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    assert pair.c.dispatcher.native_fused().record_fields == len(
        send_fast.dataclasses.fields(send_fast.MessageRecord))
    seen = {}

    def capture(b):
        real = b.ctx.store.put_message
        seen[b] = []
        b.ctx.store.put_message = lambda rec: seen[b].append(repr(rec)) or real(rec)
    pair.each(capture)
    pair.feed(plain_frame(opaque=2, queue_id=3, props={"TAGS": "t", "KEYS": "k"})
              + json_frame(dict(BASE, j="2", h="5", f="1", i="TAGS\x01x"), b"b", opaque=3))
    assert seen[pair.c] == seen[pair.py] and len(seen[pair.c]) == 2
    c, py = pair.outcomes()
    assert c == py


def test_nested_run_from_a_listener_takes_the_python_path(tmp_path):
    """A put whose listener feeds another connection of the same processor synchronously:
    the nested read is answered (by the Python path) and nothing is mixed up."""
    from twisted.internet.address import IPv4Address
    from twisted.internet.testing import StringTransport

    from rocketmq_emu.broker.remoting.protocol import RemotingProtocol

    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    others = {}

    def nest(b):
        other = RemotingProtocol(b.dispatcher, b.ctx.clock)
        other.makeConnection(StringTransport(peerAddress=IPv4Address("TCP", "10.9.9.9", 1)))
        others[b] = other
        b.ctx.store.add_arrival_listener(
            lambda topic, qid, off, tags, rec: qid == 2 and off < 3 and other.dataReceived(
                plain_frame(queue_id=3, opaque=500 + off)))
    pair.each(nest)
    pair.feed(b"".join(plain_frame(queue_id=q % 4, opaque=10 + q) for q in range(8)))
    assert [others[b].transport.value() for b in (pair.c, pair.py)] == [
        others[pair.py].transport.value()] * 2
    assert others[pair.c].transport.value().count(b'"code":0,') == 2
    c, py = pair.outcomes()
    assert c == py


@SLOW
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=6),
       st.lists(st.integers(1, 600), max_size=4))
def test_mutated_bytes_same_outcome(tmp_path_factory, flips, cuts):
    """Good frames with some bytes overwritten (lengths, header, body) and split into reads
    anywhere: C and Python answer, store and close alike."""
    data = bytearray(b"".join(plain_frame(queue_id=q % 3, opaque=q) for q in range(6)))
    for pos, value in flips:
        data[pos % len(data)] = value
    pair = Pair(tmp_path_factory.mktemp("m"))
    pair.feed(plain_frame(opaque=1000))
    start = 0
    for cut in sorted(cuts) + [len(data)]:
        pair.feed(bytes(data[start:cut]))
        start = max(start, cut)
    c, py = pair.outcomes()
    assert c == py


def _captured_records(tmp_path, peer=None):
    b = Broker(tmp_path, fused=True)
    b.feed(plain_frame(opaque=1))
    real = b.ctx.store.put_message
    sample = real(b.ctx.store.look_message_by_offset(0))
    recs = []
    b.ctx.store.put_message = lambda rec: recs.append(rec) or sample
    if peer is not None:
        b.proto.peer = peer
    b.feed(plain_frame(opaque=2))
    b.ctx.store.put_message = real
    b.ctx.store.shutdown()
    return recs


def test_plain_record_is_left_out_of_the_cyclic_gc(tmp_path):
    """A record of strings, ints, bytes, a str dict and host tuples cannot be in a cycle: C
    untracks it (as CPython untracks such dicts and tuples)."""
    (rec,) = _captured_records(tmp_path)
    assert not gc.is_tracked(rec)


def test_record_holding_a_container_stays_tracked(tmp_path):
    """A field that could lead back to the record (a list inside the born host) keeps the
    record visible to the cyclic GC."""
    (rec,) = _captured_records(tmp_path, peer=("192.168.1.20", [4242]))
    assert gc.is_tracked(rec)
