"""``listenPort`` 0: the broker binds free ports for itself and its VIP channel and registers the
ports it got (issue 25 item 2; Java ``NettyRemotingServer`` reads the bound port back,
``BrokerController``'s ``fastRemotingServer`` listens on ``listenPort - 2``)."""

from __future__ import annotations

import errno

import pytest
from twisted.internet import defer
from twisted.internet.error import CannotListenError
from twisted.internet.testing import MemoryReactorClock

from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.remoting.listen import FREE_PAIR_ATTEMPTS


class Port:
    """A listening port of :class:`PortsReactor`."""

    def __init__(self, reactor: PortsReactor, number: int) -> None:
        self.reactor, self.number = reactor, number

    def getHost(self):  # noqa: N802 (Twisted API)
        from twisted.internet.address import IPv4Address

        return IPv4Address("TCP", "127.0.0.1", self.number)

    def stopListening(self):  # noqa: N802 (Twisted API)
        self.reactor.listening.discard(self.number)
        return defer.succeed(None)


class PortsReactor(MemoryReactorClock):
    """A memory reactor whose port 0 binds the next of ``free`` and whose ``taken`` ports (and
    those listening) refuse a bind, as the kernel does."""

    def __init__(self, free: list[int], taken: set[int]) -> None:
        super().__init__()
        self.free = iter(free)
        self.taken = taken
        self.listening: set[int] = set()

    def listenTCP(self, port, factory, backlog=50, interface=""):  # noqa: N802 (Twisted API)
        if port == 0:
            port = next(self.free)
        if port in self.taken or port in self.listening:
            raise CannotListenError(interface, port, OSError(errno.EADDRINUSE, "in use"))
        self.listening.add(port)
        return Port(self, port)


class FakeRemotingClient:
    """Answers every request (REGISTER_BROKER) with SUCCESS."""

    def invoke(self, addr, cmd, timeout=3.0):
        return defer.succeed(cmd.response(ResponseCode.SUCCESS))

    def close(self):
        return defer.succeed(None)


@pytest.fixture
def make_broker(tmp_path):
    brokers = []

    def make(reactor: PortsReactor) -> BrokerController:
        cfg = BrokerConfig(listen_port=0, namesrv_addr="10.1.1.1:9876",
                           store_path_root_dir=str(tmp_path / "store"),
                           mapped_file_size_commit_log=256 * 1024,
                           mapped_file_size_consume_queue=200 * 20)
        broker = BrokerController(cfg, reactor=reactor, host="127.0.0.1")
        broker.remoting_client = FakeRemotingClient()
        brokers.append(broker)
        assert broker.start().called
        return broker

    yield make
    for broker in brokers:
        broker.stop()


def test_port_0_takes_a_free_port_whose_port_minus_2_is_free(make_broker):
    """The first free port's neighbour is taken: that port is let go and the next pair is used
    (clients derive the VIP address as port - 2, MixAll.brokerVIPChannel)."""
    reactor = PortsReactor(free=[40005, 40011], taken={40003})
    broker = make_broker(reactor)
    assert (broker.port, broker.vip_port) == (40011, 40009)
    assert reactor.listening == {40011, 40009}


def test_port_0_without_a_free_pair_serves_the_vip_channel_on_a_free_port(make_broker):
    """Should no port P with P - 2 free come up, the VIP channel still listens, on a free port
    (Java 5's fastConfig with listenPort 0), never on a negative or missing one."""
    firsts = [41000 + 10 * i for i in range(FREE_PAIR_ATTEMPTS)]
    reactor = PortsReactor(free=[*firsts, 42001, 42501], taken={p - 2 for p in firsts})
    broker = make_broker(reactor)
    assert (broker.port, broker.vip_port) == (42001, 42501)
    assert reactor.listening == {42001, 42501}
