"""The gRPC server transport (broker/grpc/server.py) driven by an h2 client-side connection over a
StringTransport, on a task.Clock: no sockets, no real time."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    PingAckReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
)
from twisted.internet import defer, task
from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.messages import Method
from rocketmq_emu.broker.grpc.server import (
    DROP,
    CallEvent,
    GrpcProtocol,
    GrpcServerFactory,
    RawPayload,
    ServerCall,
)
from rocketmq_emu.broker.grpc.wire import (
    GrpcError,
    MessageDecoder,
    StatusCode,
    encode_message,
    parse_status,
)

SERVICE = "apache.rocketmq.v2.MessagingService"
ECHO = Method(service="test.Raw", name="Echo", request=RawPayload, response=RawPayload,
              client_streaming=False, server_streaming=False)
CHAT = Method(service="test.Raw", name="Chat", request=RawPayload, response=RawPayload,
              client_streaming=True, server_streaming=True)


def path(name: str) -> str:
    return f"/{SERVICE}/{name}"


class Stream:
    """What the client saw on one stream."""

    def __init__(self) -> None:
        self.headers: list[tuple[str, str]] | None = None
        self.data = bytearray()
        self.trailers: list[tuple[str, str]] | None = None
        self.ended = False
        self.reset: int | None = None

    @property
    def status(self) -> tuple[int, str]:
        """(code, message) from Trailers, or from the headers of a Trailers-Only answer."""
        block = self.trailers if self.trailers is not None else self.headers
        assert block is not None, "no answer"
        code, message, _ = parse_status(block)
        return code, message

    def messages(self) -> list[bytes]:
        decoder = MessageDecoder(max_size=1 << 30)
        out = decoder.feed(bytes(self.data))
        assert decoder.pending == 0
        return out


class Client:
    """An h2 client connected to one server protocol through StringTransports."""

    def __init__(self, factory: GrpcServerFactory, auto_ack: bool = True) -> None:
        self.factory = factory
        self.proto: GrpcProtocol = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 8081))
        self.transport = StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.7", 40001))
        self.proto.makeConnection(self.transport)
        self.h2 = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.h2.initiate_connection()
        self.auto_ack = auto_ack
        self.streams: dict[int, Stream] = {}
        self.events: list[Any] = []
        self.pump()

    def pump(self) -> None:
        """Exchange bytes until neither side has anything to say."""
        for _ in range(10_000):
            out = self.h2.data_to_send()
            if out:
                self.proto.dataReceived(out)
            back = self.transport.value()
            self.transport.clear()
            if back:
                for event in self.h2.receive_data(back):
                    self._on(event)
            if not out and not back:
                return
        raise AssertionError("pump never settled")

    def _on(self, event: Any) -> None:
        self.events.append(event)
        sid = getattr(event, "stream_id", None)
        stream = self.streams.get(sid) if sid else None
        if isinstance(event, ResponseReceived):
            stream.headers = list(event.headers)
        elif isinstance(event, TrailersReceived):
            stream.trailers = list(event.headers)
        elif isinstance(event, DataReceived):
            stream.data += event.data
            if self.auto_ack:
                self.h2.acknowledge_received_data(event.flow_controlled_length, sid)
        elif isinstance(event, StreamEnded):
            stream.ended = True
        elif isinstance(event, StreamReset):
            stream.reset = event.error_code

    def start(self, rpc_path: str, timeout: str | None = None, end: bool = False,
              extra: tuple[tuple[str, str], ...] = ()) -> int:
        sid = self.h2.get_next_available_stream_id()
        headers = [(":method", "POST"), (":scheme", "http"), (":path", rpc_path),
                   (":authority", "localhost"), ("content-type", "application/grpc"),
                   ("te", "trailers"), ("x-mq-client-id", "c1"), *extra]
        if timeout is not None:
            headers.append(("grpc-timeout", timeout))
        self.streams[sid] = Stream()
        self.h2.send_headers(sid, headers, end_stream=end)
        return sid

    def send(self, sid: int, data: bytes, end: bool = False) -> None:
        """Send raw DATA bytes, in frames the windows allow (pumping for WINDOW_UPDATEs)."""
        view = memoryview(data)
        while view:
            window = min(self.h2.local_flow_control_window(sid), self.h2.max_outbound_frame_size)
            if window == 0:
                self.pump()
                assert self.h2.local_flow_control_window(sid) > 0, "server never opened its window"
                continue
            chunk, view = view[:window], view[window:]
            self.h2.send_data(sid, bytes(chunk), end_stream=end and not view)
        if end and not data:
            self.h2.end_stream(sid)
        self.pump()

    def call(self, rpc_path: str, payload: bytes, **kw: Any) -> Stream:
        sid = self.start(rpc_path, **kw)
        self.send(sid, encode_message(payload), end=True)
        return self.streams[sid]

    def lose(self) -> None:
        self.proto.connectionLost(Failure(ConnectionDone()))


def route_request(topic: str = "T") -> Any:
    req = messages.QueryRouteRequest()
    req.topic.name = topic
    return req


@pytest.fixture
def clock() -> task.Clock:
    return task.Clock()


def test_unary_call_answers_headers_message_and_ok_trailers(clock: task.Clock) -> None:
    seen: list[tuple[Any, ServerCall]] = []

    def query_route(request: Any, call: ServerCall) -> Any:
        seen.append((request, call))
        resp = messages.QueryRouteResponse()
        resp.status.code = messages.Code.Value("OK")
        resp.message_queues.add().topic.name = request.topic.name
        return resp

    factory = GrpcServerFactory({"QueryRoute": query_route}, clock)
    client = Client(factory)
    stream = client.call(path("QueryRoute"), route_request("TopicA").SerializeToString())
    assert ("content-type", "application/grpc") in stream.headers
    assert stream.status == (0, "")
    assert stream.ended
    [payload] = stream.messages()
    assert messages.QueryRouteResponse.FromString(payload).message_queues[0].topic.name == "TopicA"
    request, call = seen[0]
    assert request.topic.name == "TopicA"
    assert call.method.name == "QueryRoute" and call.method.kind == "unary_unary"
    assert call.peer == ("10.0.0.7", 40001)
    assert call.connection is client.proto and call.connection.connection_id == "10.0.0.7:40001#1"
    assert call.metadata.get("x-mq-client-id") == "c1"
    assert call.deadline is None and call.finished and not call.cancelled
    assert not client.proto.calls


def test_server_settings_allow_many_streams_and_large_windows(clock: task.Clock) -> None:
    client = Client(GrpcServerFactory({}, clock))
    assert client.h2.remote_settings.max_concurrent_streams == 1000
    assert client.h2.remote_settings.initial_window_size == 1 << 20
    assert client.h2.outbound_flow_control_window == 16 << 20


def test_deferred_response_is_sent_when_it_fires(clock: task.Clock) -> None:
    def query_route(request: Any, call: ServerCall) -> defer.Deferred:
        return task.deferLater(clock, 2.0, messages.QueryRouteResponse)

    client = Client(GrpcServerFactory({"QueryRoute": query_route}, clock))
    stream = client.call(path("QueryRoute"), route_request().SerializeToString())
    assert stream.headers is None
    clock.advance(2.0)
    client.pump()
    assert stream.status == (0, "") and len(stream.messages()) == 1


def test_grpc_error_from_handler_is_a_trailers_only_answer(clock: task.Clock) -> None:
    def fail(request: Any, call: ServerCall) -> Any:
        raise GrpcError(StatusCode.NOT_FOUND, "topic T: 100% missing")

    def fail_later(request: Any, call: ServerCall) -> defer.Deferred:
        return defer.fail(GrpcError(StatusCode.PERMISSION_DENIED, "no"))

    client = Client(GrpcServerFactory({"QueryRoute": fail, "Heartbeat": fail_later}, clock))
    stream = client.call(path("QueryRoute"), b"")
    assert stream.trailers is None and stream.ended
    assert stream.status == (StatusCode.NOT_FOUND, "topic T: 100% missing")
    assert client.call(path("Heartbeat"), b"").status == (StatusCode.PERMISSION_DENIED, "no")


def test_handler_exception_is_unknown_and_logged(clock: task.Clock, caplog: Any) -> None:
    def broken(request: Any, call: ServerCall) -> Any:
        raise ValueError("boom")

    client = Client(GrpcServerFactory({"QueryRoute": broken}, clock))
    with caplog.at_level(logging.ERROR):
        stream = client.call(path("QueryRoute"), b"")
    code, message = stream.status
    assert code == StatusCode.UNKNOWN and "ValueError: boom" in message
    assert "QueryRoute" in caplog.text


def test_server_streaming_sends_each_message_then_ok(clock: task.Clock) -> None:
    def receive(request: Any, call: ServerCall) -> defer.Deferred:
        for i in range(3):
            resp = messages.ReceiveMessageResponse()
            resp.message.topic.name = f"{request.group.name}-{i}"
            call.send(resp)
        return task.deferLater(clock, 1.0, lambda: None)

    client = Client(GrpcServerFactory({"ReceiveMessage": receive}, clock))
    req = messages.ReceiveMessageRequest()
    req.group.name = "G"
    stream = client.call(path("ReceiveMessage"), req.SerializeToString())
    assert len(stream.messages()) == 3 and not stream.ended
    clock.advance(1.0)
    client.pump()
    assert stream.status == (0, "")
    names = [messages.ReceiveMessageResponse.FromString(m).message.topic.name
             for m in stream.messages()]
    assert names == ["G-0", "G-1", "G-2"]


def test_server_streaming_with_no_message_is_trailers_only_ok(clock: task.Clock) -> None:
    client = Client(GrpcServerFactory({"ReceiveMessage": lambda req, call: None}, clock))
    stream = client.call(path("ReceiveMessage"), b"")
    assert stream.trailers is None and stream.status == (0, "") and not stream.data


class Telemetry:
    """A stream observer: answers each command with one of its own, finishes on half-close."""

    def __init__(self, call: ServerCall) -> None:
        self.call = call
        self.got: list[Any] = []
        self.cancelled = False
        self.half_closed = False

    def on_message(self, message: Any) -> None:
        self.got.append(message)
        reply = messages.TelemetryCommand()
        reply.settings.client_type = message.settings.client_type
        self.call.send(reply)

    def on_half_close(self) -> None:
        self.half_closed = True
        self.call.finish()

    def on_cancel(self) -> None:
        self.cancelled = True


def test_bidi_stream_delivers_messages_and_half_close(clock: task.Clock) -> None:
    observers: list[Telemetry] = []

    def telemetry(call: ServerCall) -> Telemetry:
        observers.append(Telemetry(call))
        return observers[-1]

    client = Client(GrpcServerFactory({"Telemetry": telemetry}, clock))
    sid = client.start(path("Telemetry"))
    client.pump()
    assert len(observers) == 1  # started at the headers
    cmd = messages.TelemetryCommand()
    cmd.settings.client_type = messages.ClientType.Value("PRODUCER")
    client.send(sid, encode_message(cmd.SerializeToString()) * 2)
    stream = client.streams[sid]
    assert len(stream.messages()) == 2 and not stream.ended
    client.send(sid, b"", end=True)
    assert observers[0].half_closed and stream.status == (0, "")
    assert len(observers[0].got) == 2 and not observers[0].cancelled


def test_bidi_server_finishing_first_resets_the_client_side_no_error(clock: task.Clock) -> None:
    def chat(call: ServerCall) -> Any:
        class Obs:
            def on_message(self, message: bytes) -> None:
                call.send(message)
                call.finish(StatusCode.ABORTED, "enough")

            def on_half_close(self) -> None:
                raise AssertionError("not reached")

            def on_cancel(self) -> None:
                raise AssertionError("not cancelled")
        return Obs()

    client = Client(GrpcServerFactory({"Chat": chat}, clock, methods=[CHAT]))
    sid = client.start("/test.Raw/Chat")
    client.send(sid, encode_message(b"hi"))
    stream = client.streams[sid]
    assert stream.messages() == [b"hi"] and stream.status == (StatusCode.ABORTED, "enough")
    assert stream.reset == ErrorCodes.NO_ERROR
    assert not client.proto.calls


def test_deadline_exceeded_cancels_and_drops_late_answer(clock: task.Clock) -> None:
    calls: list[ServerCall] = []
    cancelled: list[ServerCall] = []
    pending: defer.Deferred = defer.Deferred()

    def receive(request: Any, call: ServerCall) -> defer.Deferred:
        calls.append(call)
        call.add_cancel_callback(cancelled.append)
        return pending

    client = Client(GrpcServerFactory({"ReceiveMessage": receive}, clock))
    clock.advance(100)
    stream = client.call(path("ReceiveMessage"), b"", timeout="1500m")
    call = calls[0]
    assert call.deadline == 101.5 and call.time_remaining() == 1.5
    clock.advance(1.499)
    client.pump()
    assert stream.headers is None and not cancelled
    clock.advance(0.001)
    client.pump()
    assert stream.status == (StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
    assert cancelled == [call] and call.cancelled
    assert call.send(messages.ReceiveMessageResponse()) is False
    pending.callback(None)
    client.pump()
    assert client.transport.value() == b""
    assert not client.proto.calls


def test_deadline_timer_is_cancelled_when_the_call_finishes(clock: task.Clock) -> None:
    client = Client(GrpcServerFactory(
        {"QueryRoute": lambda r, c: messages.QueryRouteResponse()}, clock))
    client.call(path("QueryRoute"), b"", timeout="10S")
    assert clock.getDelayedCalls() == []


def test_client_reset_cancels_the_call_and_nothing_is_written_after(clock: task.Clock) -> None:
    calls: list[ServerCall] = []
    observers: list[Telemetry] = []

    def receive(request: Any, call: ServerCall) -> defer.Deferred:
        calls.append(call)
        call.send(messages.ReceiveMessageResponse())
        return defer.Deferred()

    def telemetry(call: ServerCall) -> Telemetry:
        observers.append(Telemetry(call))
        return observers[-1]

    client = Client(GrpcServerFactory({"ReceiveMessage": receive, "Telemetry": telemetry}, clock))
    stream = client.call(path("ReceiveMessage"), b"", timeout="30S")
    bidi = client.start(path("Telemetry"))
    client.pump()
    flags: list[str] = []
    calls[0].add_cancel_callback(lambda c: flags.append("cancelled"))
    client.h2.reset_stream(1, ErrorCodes.CANCEL)
    client.h2.reset_stream(bidi, ErrorCodes.CANCEL)
    client.pump()
    assert flags == ["cancelled"] and calls[0].cancelled and observers[0].cancelled
    assert calls[0].send(messages.ReceiveMessageResponse()) is False
    assert calls[0].finish() is False and observers[0].call.finish() is False
    assert client.transport.value() == b"" and len(stream.messages()) == 1
    assert not client.proto.calls and clock.getDelayedCalls() == []


def test_connection_loss_cancels_every_call(clock: task.Clock) -> None:
    calls: list[ServerCall] = []

    def receive(request: Any, call: ServerCall) -> defer.Deferred:
        calls.append(call)
        return defer.Deferred()

    factory = GrpcServerFactory({"ReceiveMessage": receive}, clock)
    client = Client(factory)
    for _ in range(3):
        client.call(path("ReceiveMessage"), b"")
    cancelled: list[ServerCall] = []
    for call in calls:
        call.add_cancel_callback(cancelled.append)
    closed: list[GrpcProtocol] = []
    client.proto.add_close_callback(closed.append)
    assert factory.connections == {client.proto}
    client.lose()
    assert cancelled == calls and closed == [client.proto] and not factory.connections
    assert calls[0].send(b"x") is False


def test_large_messages_stream_both_ways_under_flow_control(clock: task.Clock) -> None:
    """A 5 MiB request (over the 1 MiB stream window) and its 5 MiB echo: the server acks what it
    consumes, and waits for the client's WINDOW_UPDATEs before sending more."""
    got: list[bytes] = []

    def echo(request: bytes, call: ServerCall) -> bytes:
        got.append(request)
        return request

    client = Client(GrpcServerFactory({"Echo": echo}, clock, methods=[ECHO]), auto_ack=False)
    payload = bytes(range(256)) * (5 * 4096)
    sid = client.start("/test.Raw/Echo")
    client.send(sid, encode_message(payload), end=True)
    assert got == [payload]
    stream = client.streams[sid]
    # The client acknowledged nothing: the server stopped at the initial 65535-byte window.
    assert len(stream.data) == 65535 and not stream.ended
    assert client.proto.h2.buffered(sid)
    client.auto_ack = True
    for _ in range(200):
        if stream.ended:
            break
        client.h2.increment_flow_control_window(65535 * 4, sid)
        client.h2.increment_flow_control_window(65535 * 4)
        client.pump()
    assert stream.ended and stream.status == (0, "")
    assert stream.messages() == [payload]


def test_undecodable_protobuf_and_bad_frames_fail_only_their_stream(clock: task.Clock) -> None:
    def query_route(request: Any, call: ServerCall) -> Any:
        return messages.QueryRouteResponse()

    client = Client(GrpcServerFactory({"QueryRoute": query_route}, clock))
    bad_proto = client.call(path("QueryRoute"), b"\x0a\xff\xff\xff")  # truncated length-delimited
    assert bad_proto.status == (StatusCode.INTERNAL, "Invalid protobuf byte sequence")

    sid = client.start(path("QueryRoute"))
    client.send(sid, b"\x01\x00\x00\x00\x01x", end=True)  # compressed without grpc-encoding
    code, message = client.streams[sid].status
    assert code == StatusCode.INTERNAL and "grpc-encoding" in message

    sid = client.start(path("QueryRoute"))
    client.send(sid, b"\x00\x00\x00\x00\x09abc", end=True)  # truncated at END_STREAM
    assert client.streams[sid].status == (StatusCode.INTERNAL, "Encountered end-of-stream mid-frame")

    sid = client.start(path("QueryRoute"), end=True)
    client.pump()
    assert client.streams[sid].status == (StatusCode.INTERNAL, "Half-closed without a request")

    sid = client.start(path("QueryRoute"))
    client.send(sid, encode_message(b"") * 2, end=True)
    assert client.streams[sid].status == (StatusCode.INTERNAL, "Too many requests")

    # The connection and its other streams carry on.
    assert client.call(path("QueryRoute"), b"").status == (0, "")
    assert not client.transport.disconnecting


def test_oversized_message_is_resource_exhausted(clock: task.Clock) -> None:
    client = Client(GrpcServerFactory({"Echo": lambda r, c: r}, clock, methods=[ECHO],
                                      max_message_size=1000))
    sid = client.start("/test.Raw/Echo")
    client.send(sid, encode_message(b"x" * 1001)[:100])
    stream = client.streams[sid]
    assert stream.status[0] == StatusCode.RESOURCE_EXHAUSTED
    assert stream.reset == ErrorCodes.NO_ERROR  # the client is told to stop sending
    assert client.call("/test.Raw/Echo", b"y" * 1000).messages() == [b"y" * 1000]


def test_unknown_paths_are_unimplemented(clock: task.Clock) -> None:
    client = Client(GrpcServerFactory({"QueryRoute": lambda r, c: None}, clock))
    for bad in ("/no.Such/Method", path("SendMessage"), "/x"):
        stream = client.call(bad, b"")
        assert stream.status == (StatusCode.UNIMPLEMENTED, f"Method not found: {bad}")
        assert stream.reset is None or stream.reset == ErrorCodes.NO_ERROR
    sid = client.start("/no.Such/Method")
    client.pump()
    assert client.streams[sid].status[0] == StatusCode.UNIMPLEMENTED
    assert client.streams[sid].reset == ErrorCodes.NO_ERROR


def test_unknown_rpc_name_is_refused_at_registration(clock: task.Clock) -> None:
    with pytest.raises(ValueError, match="SendMessages"):
        GrpcServerFactory({"SendMessages": lambda r, c: None}, clock)


def test_not_http2_client_is_closed_with_one_log_line(clock: task.Clock, caplog: Any) -> None:
    factory = GrpcServerFactory({}, clock)
    proto = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 8081))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.9", 5000))
    proto.makeConnection(transport)
    with caplog.at_level(logging.WARNING):
        proto.dataReceived(b"\x00\x00\x00\xa9\x00\x00\x00\x9d{\"code\":105")
    assert transport.disconnecting
    lines = [r for r in caplog.records if r.name.startswith("rocketmq_emu.broker.grpc")]
    assert len(lines) == 1 and "10.0.0.9:5000" in lines[0].getMessage()
    assert "not an HTTP/2 client" in lines[0].getMessage()
    proto.dataReceived(b"more")  # ignored
    proto.connectionLost(Failure(ConnectionDone()))
    assert not factory.connections


def test_ping_is_acknowledged(clock: task.Clock) -> None:
    client = Client(GrpcServerFactory({}, clock))
    for _ in range(50):  # keepalive pings, however often
        client.h2.ping(b"12345678")
    client.pump()
    assert sum(isinstance(e, PingAckReceived) for e in client.events) == 50
    assert not client.transport.disconnecting


def test_interceptors_and_observers(clock: task.Clock) -> None:
    events: list[CallEvent] = []
    order: list[str] = []

    def handler(request: Any, call: ServerCall) -> Any:
        order.append("handler")
        return messages.HeartbeatResponse()

    def rules(call: ServerCall, request: Any) -> Any:
        order.append(f"rules:{call.rpc}")
        group = request.group.name if request is not None else ""
        if group == "fail":
            return GrpcError(StatusCode.UNAVAILABLE, "injected")
        if group == "raise":
            raise GrpcError(StatusCode.INTERNAL, "raised")
        if group == "delay":
            return task.deferLater(clock, 3.0, lambda: None)
        if group == "drop":
            return DROP
        if group == "answer":
            resp = messages.HeartbeatResponse()
            resp.status.message = "canned"
            return resp
        return None

    factory = GrpcServerFactory({"Heartbeat": handler, "Telemetry": lambda c: None}, clock)
    factory.add_observer(events.append)
    factory.add_interceptor(rules)
    client = Client(factory)

    def heartbeat(group: str) -> Stream:
        req = messages.HeartbeatRequest()
        req.group.name = group
        return client.call(path("Heartbeat"), req.SerializeToString(), timeout="10S")

    assert heartbeat("ok").status == (0, "")
    assert heartbeat("fail").status == (StatusCode.UNAVAILABLE, "injected")
    assert heartbeat("raise").status == (StatusCode.INTERNAL, "raised")
    delayed = heartbeat("delay")
    assert delayed.headers is None
    clock.advance(3.0)
    client.pump()
    assert delayed.status == (0, "")
    answered = heartbeat("answer")
    assert messages.HeartbeatResponse.FromString(answered.messages()[0]).status.message == "canned"
    dropped = heartbeat("drop")
    clock.advance(9.9)
    client.pump()
    assert dropped.headers is None
    clock.advance(0.1)
    client.pump()
    assert dropped.status[0] == StatusCode.DEADLINE_EXCEEDED
    client.start(path("Telemetry"))
    client.pump()
    assert order.count("handler") == 2
    assert [e.rpc for e in events] == ["Heartbeat"] * 6 + ["Telemetry"]
    assert events[0].peer == ("10.0.0.7", 40001) and events[0].request.group.name == "ok"
    assert events[0].connection_id == client.proto.connection_id and events[0].time == 0.0
    assert events[-1].request is None and events[-1].metadata.path == path("Telemetry")
    factory.remove_interceptor(rules)
    factory.remove_observer(events.append)
    assert heartbeat("fail").status == (0, "") and len(events) == 7


def test_close_all_answers_unavailable_and_closes(clock: task.Clock) -> None:
    calls: list[ServerCall] = []

    def receive(request: Any, call: ServerCall) -> defer.Deferred:
        calls.append(call)
        return defer.Deferred()

    factory = GrpcServerFactory({"ReceiveMessage": receive}, clock)
    client = Client(factory)
    stream = client.call(path("ReceiveMessage"), b"")
    done = factory.close_all()
    assert not done.called
    client.pump()
    assert stream.status == (StatusCode.UNAVAILABLE, "the server is shutting down")
    assert calls[0].cancelled
    assert any(isinstance(e, ConnectionTerminated) for e in client.events)
    assert client.transport.disconnecting
    client.lose()
    assert done.called
    # A connection made after close_all is shut at once.
    late = Client(factory)
    assert late.transport.disconnecting


def test_plain_hpack_encoder_round_trips_without_the_dynamic_table() -> None:
    from hpack import Decoder

    from rocketmq_emu.broker.grpc.hpack_plain import PlainEncoder

    encoder, decoder = PlainEncoder(), Decoder()
    blocks = [
        [(b":status", b"200"), (b"content-type", b"application/grpc")],
        [(b"grpc-status", b"5"), (b"grpc-message", b"x" * 300), (b"x-custom-bin", b"AAEC")],
        [(b":status", b"415"), (b"content-length", b"0")],
    ]
    first = encoder.encode(blocks[0])
    assert first[:1] == b"\x20"  # dynamic table size update to 0, once
    assert decoder.decode(first, raw=True) == blocks[0]
    for block in blocks * 2:
        assert decoder.decode(encoder.encode(block), raw=True) == block
    assert len(decoder.header_table.dynamic_entries) == 0
    encoder.header_table_size = 100  # the peer's SETTINGS_HEADER_TABLE_SIZE changed
    again = encoder.encode(blocks[0])
    assert again[:1] == b"\x20" and decoder.decode(again, raw=True) == blocks[0]
    assert encoder.encode(blocks[0])[:1] == b"\x88"  # :status 200 is static index 8


def test_each_call_gets_its_own_timeout_with_the_same_headers(clock: task.Clock) -> None:
    calls: list[ServerCall] = []

    def receive(request: Any, call: ServerCall) -> defer.Deferred:
        calls.append(call)
        return defer.Deferred()

    client = Client(GrpcServerFactory({"ReceiveMessage": receive}, clock))
    for timeout in ("5S", "7S", None, "5S", "bogus"):
        client.call(path("ReceiveMessage"), b"", timeout=timeout)
    assert [c.deadline for c in calls] == [5.0, 7.0, None, 5.0]
    assert [c.metadata.timeout for c in calls] == [5.0, 7.0, None, 5.0]
    code, message = client.streams[9].status
    assert code == StatusCode.INTERNAL and "bogus" in message
