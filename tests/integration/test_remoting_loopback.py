"""Remoting over real loopback sockets: client pool, server push, and a fuzz of bad frames."""

from __future__ import annotations

import random
import struct

import pytest
import pytest_twisted
from twisted.internet import defer, protocol, reactor, task

from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import (
    RemotingConnectionError,
    RemotingServerFactory,
    RemotingTimeoutError,
    RequestDispatcher,
)


@pytest.fixture
def server():
    dispatcher = RequestDispatcher(reactor)
    dispatcher.register(105, lambda c, conn: c.response(0, ext_fields={"topic": c.ext_fields["topic"]}))
    factory = RemotingServerFactory(dispatcher, reactor, max_length=1 << 20)
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    addr = f"127.0.0.1:{port.getHost().port}"
    yield dispatcher, factory, addr
    pytest_twisted.blockon(factory.close_all())
    pytest_twisted.blockon(defer.maybeDeferred(port.stopListening))


@pytest.fixture
def client():
    c = RemotingClient(reactor)
    yield c
    pytest_twisted.blockon(c.close())


def _route_request(topic="T"):
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})


@pytest_twisted.inlineCallbacks
def test_invoke_round_trip(server, client):
    """invoke sends a request over loopback and fires with the correlated response."""
    _, _, addr = server
    resps = yield defer.gatherResults([client.invoke(addr, _route_request(f"T{i}")) for i in range(20)])
    assert [r.ext_fields["topic"] for r in resps] == [f"T{i}" for i in range(20)]


@pytest_twisted.inlineCallbacks
def test_client_reconnects_after_the_server_closes_the_connection(server, client):
    """After the server drops the connection the next invoke opens a new one."""
    _, factory, addr = server
    yield client.invoke(addr, _route_request())
    yield factory.close_all()
    yield task.deferLater(reactor, 0.05, lambda: None)
    resp = yield client.invoke(addr, _route_request("again"))
    assert resp.ext_fields["topic"] == "again"


@pytest_twisted.inlineCallbacks
def test_unanswered_invoke_times_out(server, client):
    """A handler that never answers makes invoke fail with RemotingTimeoutError."""
    dispatcher, _, addr = server
    dispatcher.register(11, lambda c, conn: defer.Deferred())
    with pytest.raises(RemotingTimeoutError):
        yield client.invoke(addr, RemotingCommand.request(11), timeout=0.2)


@pytest_twisted.inlineCallbacks
def test_connect_refused_fails_with_connection_error(client):
    """invoke to a closed port fails with RemotingConnectionError."""
    port = reactor.listenTCP(0, protocol.Factory(), interface="127.0.0.1")
    addr = f"127.0.0.1:{port.getHost().port}"
    yield port.stopListening()
    with pytest.raises(RemotingConnectionError):
        yield client.invoke(addr, _route_request())


@pytest_twisted.inlineCallbacks
def test_server_pushes_request_and_client_dispatcher_answers(server):
    """The server can send a request on an accepted connection; the client's dispatcher answers."""
    dispatcher, factory, addr = server
    client_dispatcher = RequestDispatcher(reactor)
    client_dispatcher.register(
        RequestCode.GET_CONSUMER_RUNNING_INFO, lambda c, conn: c.response(0, body=b"running"))
    c = RemotingClient(reactor, client_dispatcher)
    try:
        yield c.invoke(addr, _route_request())
        [conn] = list(factory.connections)
        resp = yield conn.send_request(RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO), 2)
        assert resp.body == b"running"
    finally:
        yield c.close()


class _Raw(protocol.Protocol):
    def __init__(self):
        self.closed = defer.Deferred()

    def connectionLost(self, reason=None):
        self.closed.callback(None)


def _garbage(rng: random.Random) -> tuple[bytes, bool]:
    """Bad bytes, and whether the server itself must close the connection on them."""
    good = _route_request().encode()
    kind = rng.randrange(5)
    if kind == 0:
        return rng.randbytes(rng.randrange(1, 200)), False
    if kind == 1:  # huge or negative declared length
        return struct.pack(">i", rng.choice([-1, 1 << 30, 0x7FFFFFFF])) + rng.randbytes(8), True
    if kind == 2:  # header length larger than the frame
        return struct.pack(">iI", 8, 5000) + b"{}\x00\x00", True
    if kind == 3:  # truncated good frame, then the client goes away
        return good[: rng.randrange(1, len(good))], False
    return struct.pack(">iI", 10, 6) + b"{\"co\x00\xff", True  # undecodable JSON header


@pytest_twisted.inlineCallbacks
def test_fuzzed_frames_never_take_the_server_down(server, client):
    """Random and truncated frames close only their own connection; good clients still get answers."""
    _, _, addr = server
    host, port = addr.split(":")
    rng = random.Random(1234)
    yield client.invoke(addr, _route_request())
    good_conn = yield client.connection(addr)
    for _ in range(40):
        raw = yield protocol.ClientCreator(reactor, _Raw).connectTCP(host, int(port))
        data, server_must_close = _garbage(rng)
        raw.transport.write(data)
        if not server_must_close:
            raw.transport.loseConnection()
        yield raw.closed.addTimeout(5, reactor)
        resp = yield client.invoke(addr, _route_request("still-up"))
        assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["topic"] == "still-up"
    assert (yield client.connection(addr)) is good_conn
