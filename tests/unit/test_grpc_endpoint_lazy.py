"""The gRPC endpoint listens from the start and builds its server on first use (issue 26):
:class:`~rocketmq_emu.broker.grpc.endpoint.LazyGrpcFactory` and ``GrpcEndpoint`` on a memory
reactor (no sockets)."""

from __future__ import annotations

import logging

from twisted.internet.address import IPv4Address
from twisted.internet.testing import MemoryReactorClock

from rocketmq_emu.broker.grpc.endpoint import GrpcEndpoint, LazyGrpcFactory

ADDR = IPv4Address("TCP", "127.0.0.1", 40000)


class RecordingFactory:
    """Stands for GrpcServerFactory: records the hooks it is given."""

    def __init__(self) -> None:
        self.hooks: list[tuple[str, object]] = []
        self.handlers = {"SendMessage": object()}

    def add_interceptor(self, fn: object) -> None:
        self.hooks.append(("interceptor", fn))

    def add_observer(self, fn: object) -> None:
        self.hooks.append(("observer", fn))

    def buildProtocol(self, addr: object) -> str:  # noqa: N802 - Twisted's name
        return f"protocol for {addr.port}"


def lazy() -> tuple[LazyGrpcFactory, list[RecordingFactory]]:
    built: list[RecordingFactory] = []

    def build() -> RecordingFactory:
        built.append(RecordingFactory())
        return built[-1]

    return LazyGrpcFactory(build), built


def test_hooks_added_before_the_first_connection_reach_the_server_in_order():
    """Interceptors and observers wait for the server; one removed meanwhile never gets there."""
    factory, built = lazy()
    for name in ("i1", "gone", "i2"):
        factory.add_interceptor(name)
    factory.add_observer("o1")
    factory.add_observer("o2")
    factory.remove_interceptor("gone")
    assert built == []
    assert factory.buildProtocol(ADDR) == "protocol for 40000"
    hooks = built[0].hooks
    assert [fn for kind, fn in hooks if kind == "interceptor"] == ["i1", "i2"]
    assert [fn for kind, fn in hooks if kind == "observer"] == ["o1", "o2"]


def test_close_all_before_any_connection_builds_nothing():
    """Stopping an endpoint no client used does not import the gRPC server to close it."""
    factory, built = lazy()
    closed = []
    factory.close_all().addCallback(closed.append)
    assert closed == [None] and built == [] and not factory.loaded


def test_other_attributes_are_the_server_factory_s():
    """``factory.handlers`` (what ACL's guard and the fault hooks read) builds the server."""
    factory, built = lazy()
    assert factory.handlers is built[0].handlers


def test_a_server_that_cannot_be_built_closes_that_connection_with_one_log_record(caplog):
    """The error is logged and the connection refused (None); the next connection tries again."""
    def build():
        raise ImportError("No module named 'google.protobuf'")

    factory = LazyGrpcFactory(build)
    with caplog.at_level(logging.ERROR, logger="rocketmq_emu.broker.grpc.endpoint"):
        assert factory.buildProtocol(ADDR) is None
    assert [r.getMessage() for r in caplog.records] == [
        "gRPC: cannot serve the connection from IPv4Address(type='TCP', host='127.0.0.1', "
        "port=40000)"]
    assert not factory.loaded


def test_the_endpoint_listens_at_start_and_builds_the_service_at_the_first_connection():
    """Started without ACL: the port is listened on, no server built; a connection builds it."""
    reactor = MemoryReactorClock()
    endpoint = GrpcEndpoint(reactor, "127.0.0.1", 0, lambda: {})
    endpoint.start()
    (port, factory, _backlog, interface) = reactor.tcpServers[0]
    assert (port, interface, factory) == (0, "127.0.0.1", endpoint.factory)
    assert not endpoint.factory.loaded
    assert factory.buildProtocol(ADDR) is not None
    assert endpoint.factory.loaded and endpoint.service is not None
    endpoint.stop()
