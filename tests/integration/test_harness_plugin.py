"""The pytest plugin's fixtures and marker."""

from __future__ import annotations

import pytest
import pytest_twisted

from rocketmq_emu.client.message import Message
from rocketmq_emu.client.producer import Producer
from rocketmq_emu.client.testing import unique


def test_rocketmq_fixture_is_a_running_cluster(rocketmq):
    """The fixture gives addresses, a store directory and a follow-mode clock."""
    assert rocketmq.namesrv_addr.startswith("127.0.0.1:")
    assert rocketmq.broker_addr != rocketmq.namesrv_addr
    assert rocketmq.store_dir.is_dir()
    assert rocketmq.clock.mode == "follow"


@pytest.mark.rocketmq(clock="manual")
def test_marker_sets_the_clock_mode(rocketmq):
    """@pytest.mark.rocketmq(clock="manual") freezes time until advanced."""
    t = rocketmq.clock.seconds()
    assert rocketmq.clock.mode == "manual"
    rocketmq.clock.advance(5)
    assert rocketmq.clock.seconds() == t + 5


def test_clusters_are_isolated_per_test(rocketmq, tmp_path):
    """Each test gets its own store (under its tmp_path)."""
    assert tmp_path in rocketmq.store_dir.parents


def test_session_cluster_is_shared(rocketmq_session):
    """The session cluster works with the blocking facade."""
    r = rocketmq_session.producer().send(Message(unique("T"), b"x"))
    assert r.status.name == "SEND_OK"


@pytest_twisted.ensureDeferred
async def test_async_tests_use_the_twisted_api(rocketmq):
    """An async test talks to the fixture's cluster with the Twisted client."""
    producer = Producer(unique("pg"), rocketmq.namesrv_addr)
    await producer.start()
    try:
        result = await producer.send(Message(unique("T"), b"x"))
        assert result.status.name == "SEND_OK"
    finally:
        await producer.shutdown()


def test_marker_is_registered(pytestconfig):
    """The plugin registers its marker for projects that do not declare it."""
    assert any(line.startswith("rocketmq(") for line in pytestconfig.getini("markers"))
