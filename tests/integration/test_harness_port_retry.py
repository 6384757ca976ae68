"""EmbeddedCluster picks other broker ports when a picked one was taken before the start."""

from __future__ import annotations

import socket

import pytest_twisted

from rocketmq_emu.client import testing
from rocketmq_emu.client.testing import EmbeddedCluster


@pytest_twisted.ensureDeferred
async def test_a_picked_port_taken_meanwhile_is_replaced(tmp_path, monkeypatch):
    """The first picked broker port is busy: the cluster starts on another one."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    real = testing.free_broker_port
    picks = iter([taken])
    monkeypatch.setattr(testing, "free_broker_port", lambda host: next(picks, None) or real(host))
    cluster = EmbeddedCluster(store_dir=tmp_path / "s", grpc_port=None)
    try:
        await cluster.start_async()
        assert cluster.slot().port != taken
    finally:
        await cluster.stop_async()
        busy.close()
