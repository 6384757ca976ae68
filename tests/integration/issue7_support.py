"""Shared loopback setup for the issue-7 integration tests: a name server and one broker on
the real reactor (Twisted API clients, pytest-twisted)."""

from __future__ import annotations

from typing import Any

import pytest_twisted
from twisted.internet import defer, reactor

from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.namesrv.server import NameServer


def start_cluster(tmp_path: Any, **overrides: Any) -> tuple[NameServer, BrokerController]:
    """Start a name server and a broker (blocking on the reactor greenlet)."""
    namesrv = NameServer(reactor, port=0, host="127.0.0.1", kv_config_path=tmp_path / "kv.json")
    pytest_twisted.blockon(namesrv.start())
    cfg = BrokerConfig(listen_port=0, namesrv_addr=namesrv.addr,
                       store_path_root_dir=str(tmp_path / "store"),
                       mapped_file_size_commit_log=1024 * 1024,
                       mapped_file_size_consume_queue=300 * 20, **overrides)
    broker = BrokerController(cfg, reactor=reactor, host="127.0.0.1", enable_vip_channel=False)
    pytest_twisted.blockon(broker.start())
    return namesrv, broker


def stop_cluster(namesrv: NameServer, broker: BrokerController) -> None:
    """Stop both."""
    pytest_twisted.blockon(broker.stop())
    pytest_twisted.blockon(namesrv.stop())


async def send_bodies(namesrv_addr: str, topic: str, bodies: list[bytes], *,
                      group: str = "loopback-p", keys: str | None = None) -> list[Any]:
    """Send one message per body with a short-lived producer; the SendResults in order."""
    from rocketmq_emu.client.message import Message
    from rocketmq_emu.client.producer import Producer

    producer = Producer(group, namesrv_addr, reactor=reactor)
    await producer.start()
    try:
        return [await producer.send(Message(topic, body, keys=keys)) for body in bodies]
    finally:
        await producer.shutdown()


def sleep(seconds: float) -> defer.Deferred:
    """A Deferred firing after ``seconds`` of reactor time."""
    d: defer.Deferred = defer.Deferred()
    reactor.callLater(seconds, d.callback, None)
    return d


async def wait_for(predicate: Any, timeout: float = 10.0, step: float = 0.05,
                   what: str = "condition") -> None:
    """Poll ``predicate`` until true (AssertionError after ``timeout``)."""
    waited = 0.0
    while not predicate():
        if waited >= timeout:
            raise AssertionError(f"timed out waiting for {what}")
        await sleep(step)
        waited += step


async def create_topic(namesrv_addr: str, topic: str, queues: int = 4) -> None:
    """UPDATE_AND_CREATE_TOPIC on every master (the admin client), then let the broker
    re-register so the name server routes it."""
    from rocketmq_emu.client.admin import Admin

    admin = Admin(namesrv_addr, reactor=reactor)
    try:
        await admin.create_topic(topic, queues)
    finally:
        await admin.shutdown()
    await sleep(0.2)
