"""``rmq-emu proxy``: a session recorded through the proxy in front of an upstream name server
and broker (the emulator itself, the only broker CI has) replays against a fresh emulator with
0 differed; route answers name the proxy's ports, so the client's broker traffic is recorded
too; an upstream that refuses is one line per client connection and the client's connection is
closed. Loopback, in-process (the proxy is the same object `rmq-emu proxy` runs)."""

from __future__ import annotations

import logging

import pytest_twisted
from test_recording_replay import (  # noqa: F401 - fresh, enforcing: imported fixtures
    cluster,
    enforcing,
    fresh,
    namesrv_addr,
    running,
    session,
)
from twisted.internet import defer, reactor, task
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.protocol import Protocol

from rocketmq_emu.broker.recording.cli_replay import describe
from rocketmq_emu.broker.recording.plan import broker_addresses, build_plan
from rocketmq_emu.broker.recording.proxy import RecordingProxy
from rocketmq_emu.broker.recording.recorder import Recorder
from rocketmq_emu.broker.recording.replay import replay
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.client.testing_tools import free_port


async def through_proxy(path, upstream: str, tls=None) -> tuple:
    """The project's client session recorded at ``path`` through a proxy in front of
    ``upstream``; (path, the stopped proxy)."""
    recorder = Recorder(str(path))
    proxy = RecordingProxy(reactor, upstream, recorder=recorder, tls=tls)
    proxy.start()
    try:
        await session(proxy.namesrv)
    finally:
        await proxy.stop()
        recorder.close()
    return path, proxy


@pytest_twisted.async_yield_fixture
async def upstream(tmp_path):
    """The 'real' broker: an emulator with its name server."""
    async with running(cluster(tmp_path / "upstream")) as c:
        yield c


@pytest_twisted.ensureDeferred
async def test_a_session_through_the_proxy_replays_against_a_fresh_emulator(
        tmp_path, upstream, fresh):  # noqa: F811 - the imported fixture
    path, proxy = await through_proxy(tmp_path / "proxied.rec", namesrv_addr(upstream))
    plan = build_plan(path.read_bytes())
    assert plan.damage is None and len(plan.compared) >= 10
    # The client saw the proxy's broker port, and its broker traffic went through it.
    upstream_broker = f"127.0.0.1:{upstream.broker.config.listen_port}"
    (relayed,) = proxy.brokers.values()
    assert list(proxy.brokers) == [upstream_broker]
    routes = [ex for ex in plan.compared if ex.request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC
              and ex.response.code == 0]
    assert routes and all(addr == relayed for ex in routes
                          for _, _, addr in broker_addresses(ex.response.body))
    relayed_port = int(relayed.rsplit(":", 1)[1])
    assert any(ex.port == relayed_port and ex.request.code == RequestCode.SEND_MESSAGE_V2
               for ex in plan.compared)
    result = await replay(reactor, plan, namesrv_addr(fresh))
    blocks = "\n".join(line for o in result.outcomes if not o.matched for line in describe(o))
    assert result.differed == 0, blocks
    assert result.matched == len(plan.compared), blocks


class _Reader(Protocol):
    def __init__(self) -> None:
        self.closed: defer.Deferred = defer.Deferred()

    def connectionLost(self, reason=None) -> None:  # noqa: N802
        self.closed.callback(None)


@pytest_twisted.ensureDeferred
async def test_an_upstream_that_refuses_closes_the_client_with_one_line(tmp_path, caplog):
    proxy = RecordingProxy(reactor, f"127.0.0.1:{free_port()}")  # nothing listens there
    proxy.start()
    try:
        with caplog.at_level(logging.WARNING):
            client = await connectProtocol(
                TCP4ClientEndpoint(reactor, "127.0.0.1", proxy.port), _Reader())
            local = client.transport.getHost().port
            await task.deferLater(reactor, 0, lambda: None)
            await defer.gatherResults([client.closed]).addTimeout(10, reactor)
    finally:
        await proxy.stop()
    lines = [r.getMessage() for r in caplog.records if f":{local}" in r.getMessage()]
    assert len(lines) == 1 and "refused the connection of client" in lines[0], lines


@pytest_twisted.ensureDeferred
async def test_upstream_tls_relays_a_plain_client_to_an_enforcing_upstream(
        tmp_path, enforcing, fresh):  # noqa: F811 - the imported fixture
    """--upstream-tls: the proxy speaks TLS to an upstream whose ports enforce it, the client
    speaks plain remoting to the proxy, and the recording replays against a plain emulator."""
    from rocketmq_emu.broker.tls.context import InsecureClientCreator

    path, _ = await through_proxy(tmp_path / "tls.rec", namesrv_addr(enforcing),
                                  tls=InsecureClientCreator())
    result = await replay(reactor, build_plan(path.read_bytes()), namesrv_addr(fresh))
    blocks = "\n".join(line for o in result.outcomes if not o.matched for line in describe(o))
    assert result.differed == 0 and result.matched >= 10, blocks
