"""The gRPC server transport over real loopback sockets, called by grpcio's own client with the
apache.rocketmq.v2 messages (the private pool's classes serialize both ways).

grpcio blocks, so every client call runs in a thread (deferToThread) while the test's reactor
serves; the handlers are test doubles, not the MessagingService."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
import pytest_twisted
from twisted.internet import defer, reactor, task, threads

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.server import GrpcServerFactory, ServerCall
from rocketmq_emu.broker.grpc.wire import GrpcError, StatusCode

SERVICE = "/apache.rocketmq.v2.MessagingService/"
HELD = 200


class Handlers:
    """Test handlers with the shapes of the MessagingService's RPCs."""

    def __init__(self) -> None:
        self.held: list[ServerCall] = []
        self.cancelled: list[ServerCall] = []
        self.sizes: list[int] = []

    def query_route(self, request: Any, call: ServerCall) -> Any:
        resp = messages.QueryRouteResponse()
        resp.status.code = messages.Code.Value("OK")
        mq = resp.message_queues.add()
        mq.topic.name = request.topic.name
        mq.broker.endpoints.addresses.add(host="127.0.0.1", port=call.connection.transport.getHost().port)
        return resp

    def send_message(self, request: Any, call: ServerCall) -> defer.Deferred:
        self.sizes.extend(len(m.body) for m in request.messages)

        def answer() -> Any:
            resp = messages.SendMessageResponse()
            resp.status.code = messages.Code.Value("OK")
            for m in request.messages:
                resp.entries.add().message_id = f"id-{len(m.body)}"
            return resp
        return task.deferLater(reactor, 0.001, answer)

    def receive_message(self, request: Any, call: ServerCall) -> Any:
        group = request.group.name
        if group == "forever":
            call.add_cancel_callback(self.cancelled.append)
            return defer.Deferred()
        if group == "held":
            # Held until all HELD calls are open at once, then each gets one message and OK.
            self.held.append(call)
            if len(self.held) == HELD:
                for held in self.held:
                    held.send(self._message("released"))
                    held.finish()
            return None if len(self.held) == HELD else defer.Deferred()
        for i in range(request.batch_size):
            call.send(self._message(f"{group}-{i}"))
        status = messages.ReceiveMessageResponse()
        status.status.code = messages.Code.Value("OK")
        call.send(status)
        return None

    @staticmethod
    def _message(topic: str) -> Any:
        resp = messages.ReceiveMessageResponse()
        resp.message.topic.name = topic
        resp.message.body = b"x" * 100
        return resp

    def heartbeat(self, request: Any, call: ServerCall) -> Any:
        raise GrpcError(StatusCode.NOT_FOUND, f"group {request.group.name} not found")

    def telemetry(self, call: ServerCall) -> Any:
        class Observer:
            def on_message(self, command: Any) -> None:
                reply = messages.TelemetryCommand()
                reply.settings.CopyFrom(command.settings)
                reply.settings.request_timeout.seconds = 3
                call.send(reply)

            def on_half_close(self) -> None:
                call.finish()

            def on_cancel(self) -> None:
                pass
        return Observer()


@pytest.fixture
def server() -> Any:
    handlers = Handlers()
    factory = GrpcServerFactory({
        "QueryRoute": handlers.query_route, "SendMessage": handlers.send_message,
        "ReceiveMessage": handlers.receive_message, "Heartbeat": handlers.heartbeat,
        "Telemetry": handlers.telemetry,
    }, reactor)
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    yield handlers, factory, f"127.0.0.1:{port.getHost().port}"
    pytest_twisted.blockon(factory.close_all())
    pytest_twisted.blockon(defer.maybeDeferred(port.stopListening))


def channel(addr: str) -> grpc.Channel:
    return grpc.insecure_channel(addr, options=[
        ("grpc.enable_http_proxy", 0), ("grpc.max_send_message_length", 200 << 20)])


def stub(ch: grpc.Channel, rpc: str, kind: str = "unary_unary") -> Callable[..., Any]:
    method = next(m for m in messages.service_methods() if m.name == rpc)
    return getattr(ch, kind)(SERVICE + rpc, request_serializer=lambda m: m.SerializeToString(),
                             response_deserializer=method.response.FromString)


def in_thread(fn: Callable[..., Any], *args: Any) -> defer.Deferred:
    return threads.deferToThread(fn, *args)


@pytest_twisted.inlineCallbacks
def test_unary_calls_concurrently(server: Any) -> Any:
    _, factory, addr = server

    def run(n: int) -> list[str]:
        with channel(addr) as ch:
            query = stub(ch, "QueryRoute")
            out = []
            for i in range(n):
                req = messages.QueryRouteRequest()
                req.topic.name = f"T{i}"
                resp = query(req, timeout=10)
                out.append(resp.message_queues[0].topic.name)
            return out

    results = yield defer.gatherResults([in_thread(run, 25) for _ in range(4)])
    assert results == [[f"T{i}" for i in range(25)]] * 4


@pytest_twisted.inlineCallbacks
def test_deferred_unary_with_large_request(server: Any) -> Any:
    """A 20 MiB request (over every window) streams in; the Deferred answer goes back."""
    handlers, _, addr = server

    def run() -> Any:
        with channel(addr) as ch:
            req = messages.SendMessageRequest()
            req.messages.add().body = b"b" * (20 << 20)
            req.messages.add().body = b"small"
            return stub(ch, "SendMessage")(req, timeout=30)

    resp = yield in_thread(run)
    assert [e.message_id for e in resp.entries] == [f"id-{20 << 20}", "id-5"]
    assert handlers.sizes == [20 << 20, 5]


@pytest_twisted.inlineCallbacks
def test_server_streaming_and_status_codes(server: Any) -> Any:
    handlers, _, addr = server

    def run() -> tuple[list[Any], Any, Any, Any]:
        with channel(addr) as ch:
            req = messages.ReceiveMessageRequest()
            req.group.name = "G"
            req.batch_size = 5
            stream = list(stub(ch, "ReceiveMessage", "unary_stream")(req, timeout=10))
            errors = []
            try:
                hb = messages.HeartbeatRequest()
                hb.group.name = "g1"
                stub(ch, "Heartbeat")(hb, timeout=10)
            except grpc.RpcError as exc:
                errors.append((exc.code(), exc.details()))
            try:
                ch.unary_unary(SERVICE + "NoSuchRpc")(b"", timeout=10)
            except grpc.RpcError as exc:
                errors.append((exc.code(), exc.details()))
            forever = messages.ReceiveMessageRequest()
            forever.group.name = "forever"
            try:
                list(stub(ch, "ReceiveMessage", "unary_stream")(forever, timeout=0.3))
            except grpc.RpcError as exc:
                errors.append((exc.code(), None))
            return stream, errors[0], errors[1], errors[2]

    stream, not_found, unimplemented, deadline = yield in_thread(run)
    assert [r.message.topic.name for r in stream[:5]] == [f"G-{i}" for i in range(5)]
    assert stream[5].status.code == messages.Code.Value("OK")
    assert not_found == (grpc.StatusCode.NOT_FOUND, "group g1 not found")
    assert unimplemented[0] == grpc.StatusCode.UNIMPLEMENTED
    assert deadline[0] == grpc.StatusCode.DEADLINE_EXCEEDED
    yield task.deferLater(reactor, 0.05, lambda: None)
    assert len(handlers.cancelled) == 1 and handlers.cancelled[0].cancelled


@pytest_twisted.inlineCallbacks
def test_bidi_telemetry_shaped_stream(server: Any) -> Any:
    _, _, addr = server

    def run() -> list[Any]:
        def commands() -> Iterator[Any]:
            for kind in ("PRODUCER", "PUSH_CONSUMER", "SIMPLE_CONSUMER"):
                cmd = messages.TelemetryCommand()
                cmd.settings.client_type = messages.ClientType.Value(kind)
                yield cmd
                time.sleep(0.01)
        with channel(addr) as ch:
            return list(stub(ch, "Telemetry", "stream_stream")(commands(), timeout=10))

    replies = yield in_thread(run)
    assert [messages.ClientType.Name(r.settings.client_type) for r in replies] == [
        "PRODUCER", "PUSH_CONSUMER", "SIMPLE_CONSUMER"]
    assert all(r.settings.request_timeout.seconds == 3 for r in replies)


@pytest_twisted.inlineCallbacks
def test_200_held_server_streaming_calls_all_complete(server: Any) -> Any:
    """Each call is answered only once all 200 are open at once on one connection: over h2's
    default limit of 100 concurrent streams, under ours."""
    handlers, factory, addr = server
    errors: list[BaseException] = []

    def run() -> list[str]:
        with channel(addr) as ch:
            receive = stub(ch, "ReceiveMessage", "unary_stream")
            req = messages.ReceiveMessageRequest()
            req.group.name = "held"
            calls = [receive(req, timeout=30) for _ in range(HELD)]
            out: list[str] = []
            lock = threading.Lock()

            def drain(call: Any) -> None:
                try:
                    names = [r.message.topic.name for r in call]
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)
                    return
                with lock:
                    out.extend(names)
            workers = [threading.Thread(target=drain, args=(c,)) for c in calls]
            for w in workers:
                w.start()
            for w in workers:
                w.join(40)
            return out

    names = yield in_thread(run)
    assert errors == []
    assert names == ["released"] * HELD
    assert len(handlers.held) == HELD
    assert len({c.connection.connection_id for c in handlers.held}) == 1
