"""RemotingProtocol and RequestDispatcher over an in-memory transport (no sockets, no real time)."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet import defer, task
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from rocketmq_emu.broker.remoting.codes import SERIALIZE_JSON, SERIALIZE_ROCKETMQ, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand, decode
from rocketmq_emu.broker.remoting.protocol import (
    DROP,
    RemotingConnectionError,
    RemotingProtocol,
    RemotingTimeoutError,
    RequestDispatcher,
)


def _frames(data: bytes) -> list[RemotingCommand]:
    out, pos = [], 0
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        out.append(decode(data[pos : pos + 4 + length]))
        pos += 4 + length
    return out


def _connect(dispatcher=None, clock=None, max_length=16 * 1024 * 1024):
    clock = clock or Clock()
    proto = RemotingProtocol(dispatcher or RequestDispatcher(clock), clock, max_length)
    transport = StringTransport(peerAddress=None)
    proto.makeConnection(transport)
    return proto, transport, clock


def _echo(cmd, conn):
    return cmd.response(ResponseCode.SUCCESS, ext_fields={"echo": cmd.ext_fields.get("x", "")})


def test_handler_response_goes_back_with_the_same_opaque():
    """A registered handler's response is written with the request's opaque and flag 1."""
    d = RequestDispatcher(Clock())
    d.register(105, _echo)
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(105, {"x": "1"}, opaque=42).encode())
    [resp] = _frames(tr.value())
    assert (resp.code, resp.opaque, resp.flag, resp.ext_fields) == (0, 42, 1, {"echo": "1"})


def test_replies_of_one_read_go_out_in_one_write():
    """Several requests in one read are answered with one transport write."""
    d = RequestDispatcher(Clock())
    d.register(105, _echo)
    proto, tr, _ = _connect(d)
    writes = []
    tr.write = writes.append
    proto.dataReceived(b"".join(RemotingCommand.request(105, opaque=i).encode() for i in range(5)))
    assert len(writes) == 1
    assert [c.opaque for c in _frames(writes[0])] == [0, 1, 2, 3, 4]


def test_frame_split_across_reads_is_reassembled():
    """A frame delivered one byte at a time is handled once complete."""
    d = RequestDispatcher(Clock())
    d.register(105, _echo)
    proto, tr, _ = _connect(d)
    for b in RemotingCommand.request(105, {"x": "y"}, opaque=3).encode():
        proto.dataReceived(bytes([b]))
    [resp] = _frames(tr.value())
    assert resp.ext_fields == {"echo": "y"}


def test_unknown_code_gets_request_code_not_supported():
    """An unregistered code is answered with 3 and Java's remark."""
    proto, tr, _ = _connect()
    proto.dataReceived(RemotingCommand.request(999, opaque=5).encode())
    [resp] = _frames(tr.value())
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 999 not supported" and resp.opaque == 5


def test_handler_exception_becomes_system_error(caplog):
    """A handler that raises produces SYSTEM_ERROR with the exception text and a log line."""
    d = RequestDispatcher(Clock())

    def boom(cmd, conn):
        raise KeyError("nope")

    d.register(10, boom)
    proto, tr, _ = _connect(d)
    with caplog.at_level(logging.ERROR):
        proto.dataReceived(RemotingCommand.request(10, opaque=1).encode())
    [resp] = _frames(tr.value())
    assert resp.code == ResponseCode.SYSTEM_ERROR and "nope" in resp.remark
    assert "handler for code 10" in caplog.text and not tr.disconnecting


def test_deferred_handler_answers_when_it_fires():
    """A handler returning a Deferred answers when the Deferred fires."""
    d = RequestDispatcher(Clock())
    waiting = defer.Deferred()
    d.register(11, lambda cmd, conn: waiting.addCallback(lambda _: cmd.response(19)))
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(11, opaque=8).encode())
    assert tr.value() == b""
    waiting.callback(None)
    [resp] = _frames(tr.value())
    assert (resp.code, resp.opaque) == (19, 8)


def test_failing_deferred_handler_becomes_system_error():
    """A Deferred handler that fails produces SYSTEM_ERROR."""
    d = RequestDispatcher(Clock())
    d.register(11, lambda cmd, conn: defer.fail(ValueError("bad pull")))
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(11, opaque=8).encode())
    [resp] = _frames(tr.value())
    assert resp.code == 1 and "bad pull" in resp.remark


def test_oneway_request_gets_no_response():
    """A oneway request is handled but nothing is written back."""
    seen = []
    d = RequestDispatcher(Clock())
    d.register(15, lambda cmd, conn: seen.append(cmd.code) or cmd.response(0))
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(15, oneway=True).encode())
    assert seen == [15] and tr.value() == b""


def test_json_request_gets_json_response_even_if_handler_chose_binary():
    """Anything that came as JSON is answered in JSON (CPP/ali-ons ignore the type byte)."""
    d = RequestDispatcher(Clock())
    d.register(105, lambda cmd, conn: RemotingCommand(code=0, serialize_type=SERIALIZE_ROCKETMQ))
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(105, opaque=2).encode())
    [resp] = _frames(tr.value())
    assert resp.serialize_type == SERIALIZE_JSON and resp.opaque == 2 and resp.is_response


def test_binary_request_gets_binary_response():
    """A ROCKETMQ-serialized request is answered in ROCKETMQ serialization."""
    d = RequestDispatcher(Clock())
    d.register(105, _echo)
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(105, serialize_type=SERIALIZE_ROCKETMQ).encode())
    assert tr.value()[4] == SERIALIZE_ROCKETMQ


@pytest.mark.parametrize("garbage", [
    b"\xff\xff\xff\xff",  # negative length
    b"\x00\x00\x00\x02\x00\x00",  # too short to hold the header word
    b"\x7f\x00\x00\x00",  # beyond MAX_LENGTH
    b"\x00\x00\x00\x06\x00\x00\x00\x09{}",  # header longer than the frame
    b"\x00\x00\x00\x07\x00\x00\x00\x03{x}",  # undecodable JSON
])
def test_malformed_frame_closes_only_that_connection(garbage, caplog):
    """A malformed frame is logged with the peer and reason and the connection is closed."""
    proto, tr, _ = _connect()
    with caplog.at_level(logging.WARNING):
        proto.dataReceived(garbage)
    assert tr.disconnecting
    assert "malformed frame" in caplog.text


def test_max_length_is_configurable():
    """A frame over a configured MAX_LENGTH closes the connection."""
    proto, tr, _ = _connect(max_length=64)
    proto.dataReceived(RemotingCommand.request(10, body=b"x" * 100).encode())
    assert tr.disconnecting


def test_good_frames_before_a_bad_one_are_still_answered():
    """Replies to the valid frames of a read are written before the connection closes."""
    d = RequestDispatcher(Clock())
    d.register(105, _echo)
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(105, opaque=1).encode() + b"\xff\xff\xff\xff")
    assert [c.opaque for c in _frames(tr.value())] == [1] and tr.disconnecting


def test_send_request_fires_with_matching_response():
    """send_request correlates the response by opaque."""
    proto, tr, clock = _connect()
    req = RemotingCommand.request(40, {"consumerGroup": "g"})
    d = proto.send_request(req, timeout=3)
    got = []
    d.addCallback(got.append)
    assert _frames(tr.value())[0].opaque == req.opaque
    proto.dataReceived(req.response(0).encode())
    assert got[0].code == 0 and proto.pending_count == 0


def test_send_request_times_out_on_the_clock():
    """Without a response, send_request fails with RemotingTimeoutError after the timeout."""
    proto, tr, clock = _connect()
    d = proto.send_request(RemotingCommand.request(326), timeout=3)
    errors = []
    d.addErrback(errors.append)
    clock.advance(2.9)
    assert not errors
    clock.advance(0.2)
    assert errors and errors[0].check(RemotingTimeoutError)


def test_pending_requests_fail_on_connection_loss():
    """Requests waiting for a response fail with RemotingConnectionError when the link drops."""
    proto, tr, clock = _connect()
    errors = []
    proto.send_request(RemotingCommand.request(326), timeout=3).addErrback(errors.append)
    proto.connectionLost(None)
    assert errors[0].check(RemotingConnectionError)
    assert not clock.getDelayedCalls()


def test_send_oneway_sets_the_oneway_flag():
    """send_oneway writes the request with flag bit 1 set."""
    proto, tr, _ = _connect()
    proto.send_oneway(RemotingCommand.request(40, {"consumerGroup": "g"}))
    assert _frames(tr.value())[0].is_oneway


def test_close_callbacks_run_once_on_close():
    """On-close callbacks run with the connection when it closes."""
    proto, _, _ = _connect()
    seen = []
    proto.add_close_callback(seen.append)
    proto.connectionLost(None)
    assert seen == [proto]


def test_connection_remembers_client_language_and_version():
    """A connection records clientID, language and version of the last request."""
    proto, _, _ = _connect()
    proto.dataReceived(RemotingCommand.request(35, {"clientID": "1.2.3.4@9"}, language="CPP",
                                               version=333).encode())
    assert (proto.client_id, proto.language, proto.version) == ("1.2.3.4@9", "CPP", 333)


def test_interceptor_can_answer_instead_of_the_handler():
    """An interceptor returning a command answers with it; the handler is not called."""
    d = RequestDispatcher(Clock())
    called = []
    d.register(10, lambda c, conn: called.append(c) or c.response(0))
    d.add_interceptor(lambda c, conn: c.response(ResponseCode.SYSTEM_BUSY, "injected"))
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(10).encode())
    assert _frames(tr.value())[0].code == ResponseCode.SYSTEM_BUSY and not called


def test_interceptor_drop_sends_nothing():
    """An interceptor returning DROP swallows the request."""
    d = RequestDispatcher(Clock())
    d.register(10, _echo)
    d.add_interceptor(lambda c, conn: DROP)
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(10).encode())
    assert tr.value() == b""


def test_interceptor_deferred_none_delays_then_continues_to_handler():
    """An interceptor's Deferred firing None continues to the handler (delay injection)."""
    clock = Clock()
    d = RequestDispatcher(clock)
    d.register(10, _echo)
    d.add_interceptor(lambda c, conn: task.deferLater(clock, 1.0, lambda: None))
    proto, tr, _ = _connect(d, clock)
    proto.dataReceived(RemotingCommand.request(10, {"x": "late"}).encode())
    assert tr.value() == b""
    clock.advance(1.0)
    assert _frames(tr.value())[0].ext_fields == {"echo": "late"}


def test_interceptor_returning_none_passes_through_and_observer_sees_every_request():
    """A pass-through interceptor leaves the handler in charge; observers get code and fields."""
    clock = Clock()
    clock.advance(12.5)
    d = RequestDispatcher(clock)
    d.register(10, _echo)
    events, intercepted = [], []
    d.add_interceptor(lambda c, conn: intercepted.append(c.code))
    d.add_observer(events.append)
    proto, tr, _ = _connect(d, clock)
    proto.dataReceived(RemotingCommand.request(10, {"x": "1"}).encode())
    proto.dataReceived(RemotingCommand.request(77).encode())
    assert [(e.code, e.ext_fields, e.time) for e in events] == [(10, {"x": "1"}, 12.5),
                                                                 (77, {}, 12.5)]
    assert intercepted == [10, 77]
    assert [c.code for c in _frames(tr.value())] == [0, 3]


def test_interceptor_can_proceed_and_reshape_the_answer():
    """dispatcher.proceed runs the rest of the chain so an interceptor can alter the response."""
    d = RequestDispatcher(Clock())
    d.register(10, _echo)

    def around(cmd, conn):
        resp = d.proceed(cmd, conn, after=around)
        resp.remark = "seen"
        return resp

    d.add_interceptor(around)
    d.add_interceptor(lambda c, conn: c.response(0, ext_fields={"echo": "second"}))
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(10, {"x": "1"}).encode())
    [resp] = _frames(tr.value())
    assert resp.remark == "seen" and resp.ext_fields == {"echo": "second"}


@given(st.lists(st.binary(max_size=40), min_size=1, max_size=6), st.data())
@settings(max_examples=60, deadline=None)
def test_any_split_of_a_frame_stream_yields_the_same_requests(bodies, data):
    """However a stream of frames is cut into reads, each request is handled once, in order."""
    seen = []
    d = RequestDispatcher(Clock())
    d.register(10, lambda c, conn: seen.append(c.body) or None)
    proto, tr, _ = _connect(d)
    stream = b"".join(RemotingCommand.request(10, body=b, opaque=i).encode()
                     for i, b in enumerate(bodies))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        proto.dataReceived(stream[a:b])
    assert seen == bodies and not tr.disconnecting


def test_requests_with_the_same_opaque_get_distinct_ids():
    """Two in-flight requests built with the same opaque are renumbered and both resolve."""
    proto, tr, _ = _connect()
    got = []
    first = RemotingCommand(code=105)
    second = RemotingCommand(code=105)
    proto.send_request(first, 3).addCallback(got.append)
    proto.send_request(second, 3).addCallback(got.append)
    assert first.opaque != second.opaque
    proto.dataReceived(second.response(1).encode() + first.response(0).encode())
    assert [r.code for r in got] == [1, 0]


def test_unencodable_response_becomes_system_error():
    """A handler response that cannot be encoded is replaced by SYSTEM_ERROR, not silence."""
    d = RequestDispatcher(Clock())
    # version does not fit the ROCKETMQ header's int16
    d.register(10, lambda c, conn: RemotingCommand(code=0, version=10**9,
                                                   serialize_type=SERIALIZE_ROCKETMQ))
    proto, tr, _ = _connect(d)
    proto.dataReceived(RemotingCommand.request(10, serialize_type=SERIALIZE_ROCKETMQ,
                                               opaque=4).encode())
    [resp] = _frames(tr.value())
    assert resp.code == ResponseCode.SYSTEM_ERROR and resp.opaque == 4
