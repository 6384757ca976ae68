"""The gRPC port's send timeout (broker/grpc/send_timeout.py) and its backpressure: a client that
takes nothing of what it is sent (a zero flow-control window, or a socket it does not read) is
closed once its output waited ``send_timeout`` seconds without progress; a client that takes
some, however slowly, is not. An h2 client over StringTransports, on a task.Clock."""

from __future__ import annotations

import logging
from typing import Any

from h2.events import ConnectionTerminated
from h2.settings import SettingCodes
from test_grpc_server import ECHO, Client
from twisted.internet import task

from rocketmq_emu.broker.grpc.send_timeout import PAUSED_OUTPUT_LIMIT, SEND_TIMEOUT, SendTimeout
from rocketmq_emu.broker.grpc.server import GrpcServerFactory
from rocketmq_emu.broker.grpc.wire import encode_message

TIMEOUT = 10.0


def zero_window_client(clock: task.Clock) -> Client:
    """A client announcing SETTINGS_INITIAL_WINDOW_SIZE 0 that never credits a window."""
    factory = GrpcServerFactory({"Echo": lambda request, call: request}, clock, methods=[ECHO],
                                send_timeout=TIMEOUT)
    client = Client(factory, auto_ack=False)
    client.h2.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 0})
    client.pump()
    return client


def echo(client: Client, size: int = 100) -> int:
    sid = client.start("/test.Raw/Echo")
    client.send(sid, encode_message(b"x" * size), end=True)
    return sid


def goaway(client: Client) -> ConnectionTerminated | None:
    return next((e for e in client.events if isinstance(e, ConnectionTerminated)), None)


def test_the_default_is_nginx_send_timeout() -> None:
    assert SEND_TIMEOUT == 60.0
    assert GrpcServerFactory({}, task.Clock(), methods=[]).send_timeout == SEND_TIMEOUT


def test_data_held_by_a_zero_window_closes_the_connection_at_the_timeout(caplog: Any) -> None:
    clock = task.Clock()
    client = zero_window_client(clock)
    sid = echo(client)
    assert client.proto.h2.buffered(sid) and not client.streams[sid].ended
    clock.advance(TIMEOUT - 0.1)
    assert not client.transport.disconnecting
    with caplog.at_level(logging.WARNING):
        clock.advance(0.1)
    client.pump()
    terminated = goaway(client)
    assert terminated is not None and terminated.error_code == 0  # NO_ERROR
    assert terminated.additional_data == b"send timeout"
    assert client.transport.disconnecting
    lines = [r.getMessage() for r in caplog.records if "10.0.0.7:40001" in r.getMessage()]
    assert len(lines) == 1 and "send timeout" in lines[0] and "zero flow-control window" in lines[0]


def test_a_window_update_restarts_the_timer() -> None:
    """A slow reader that credits a byte now and then makes progress: not closed."""
    clock = task.Clock()
    client = zero_window_client(clock)
    sid = echo(client, 1000)
    for _ in range(5):
        clock.advance(TIMEOUT - 1)
        client.h2.increment_flow_control_window(1, sid)
        client.h2.increment_flow_control_window(1)
        client.pump()
    assert not client.transport.disconnecting and goaway(client) is None
    assert len(client.streams[sid].data) == 5


def test_nothing_waiting_arms_no_timer() -> None:
    clock = task.Clock()
    client = zero_window_client(clock)
    client.h2.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 65535})
    client.pump()
    stream = client.streams[echo(client)]
    assert stream.ended and stream.status == (0, "")
    assert clock.getDelayedCalls() == []
    clock.advance(TIMEOUT * 10)
    assert not client.transport.disconnecting


def test_a_full_transport_stops_reading_past_the_limit_and_aborts_at_the_timeout(caplog: Any) -> None:
    """The transport's buffer is full (the client does not read): past PAUSED_OUTPUT_LIMIT
    more bytes written the server stops reading the client too, and at the timeout drops the
    connection (nothing queued would drain)."""
    clock = task.Clock()
    factory = GrpcServerFactory({"Echo": lambda request, call: request}, clock, methods=[ECHO],
                                send_timeout=TIMEOUT)
    client = Client(factory)
    client.proto.pauseProducing()
    written = 0
    while client.transport.producerState != "paused":
        assert written <= PAUSED_OUTPUT_LIMIT, "still reading past the limit"
        echo(client, 16_000)
        written = sum(len(stream.data) for stream in client.streams.values())
    assert written > PAUSED_OUTPUT_LIMIT
    with caplog.at_level(logging.WARNING):
        clock.advance(TIMEOUT)
    assert client.transport.disconnected  # abortConnection
    lines = [r.getMessage() for r in caplog.records if "10.0.0.7:40001" in r.getMessage()]
    assert len(lines) == 1 and "not reading the socket" in lines[0]


def test_a_transport_that_drains_reads_again_and_stays_open() -> None:
    clock = task.Clock()
    factory = GrpcServerFactory({"Echo": lambda request, call: request}, clock, methods=[ECHO],
                                send_timeout=TIMEOUT)
    client = Client(factory)
    client.proto.pauseProducing()
    while client.transport.producerState != "paused":
        echo(client, 16_000)
    clock.advance(TIMEOUT - 1)
    client.proto.resumeProducing()
    assert client.transport.producerState == "producing"
    clock.advance(TIMEOUT * 10)
    assert not client.transport.disconnecting and not client.transport.disconnected


def test_the_watch_restarts_only_on_progress() -> None:
    clock = task.Clock()
    fired: list[float] = []
    watch = SendTimeout(clock, 5, lambda: fired.append(clock.seconds()))
    watch.check(True, 0)
    clock.advance(3)
    watch.check(True, 0)  # no progress: the timer keeps its start
    clock.advance(2)
    assert fired == [5]
    watch.check(True, 0)
    clock.advance(4)
    watch.check(True, 1)  # progress: five more seconds from now
    clock.advance(4)
    watch.check(False, 1)  # nothing waits: stopped
    clock.advance(10)
    assert fired == [5] and not watch.armed
