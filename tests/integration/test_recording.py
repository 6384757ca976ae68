"""``rmq-emu up --record FILE`` (ClusterSpec.record): every byte the name server and broker
ports read and write is in the file as it happens, requests and responses of both ports, TLS
connections as the remoting frames inside the TLS; ``rmq-emu recording FILE`` lists them."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest_twisted
from test_tls_loopback import cluster_info, runtime_info
from twisted.internet import reactor

from rocketmq_emu.broker.cluster import Cluster, ClusterSpec
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.recording.format import (
    CLIENT_TO_SERVER,
    SERVER_TO_CLIENT,
    frames,
    read_entries,
)
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.testing import TEST_BROKER_SETTINGS, free_broker_port


def recorded(path) -> Counter:
    """(port, direction, request or response code) of every recorded frame, counted."""
    entries = read_entries(path.read_bytes())
    return Counter((e.port, e.direction, RemotingCommand.decode(f).code)
                   for e, f in frames(entries))


@pytest_twisted.inlineCallbacks
def test_both_ports_both_directions_plain_and_tls(tmp_path):
    """A plain and a TLS request to each port: four requests and their answers recorded,
    besides the broker's own registration with the name server; the file is readable while
    the cluster runs (flushed entry by entry)."""
    cfg = BrokerConfig(broker_name="broker-a", listen_port=free_broker_port("127.0.0.1"),
                       store_path_root_dir=str(tmp_path / "a"), **TEST_BROKER_SETTINGS)
    path = tmp_path / "rec.bin"
    cluster = Cluster(ClusterSpec(brokers=[cfg], namesrv_port=0, record=str(path)), reactor)
    yield cluster.start()
    try:
        for tls in (False, True):
            yield cluster_info(cluster, tls)
            yield runtime_info(cluster, tls)
        seen = recorded(path)
        ns, broker = cluster.namesrv.port, cluster.broker.config.listen_port
    finally:
        yield cluster.stop()
    assert seen[(ns, CLIENT_TO_SERVER, RequestCode.GET_BROKER_CLUSTER_INFO)] == 2
    assert seen[(broker, CLIENT_TO_SERVER, RequestCode.GET_BROKER_RUNTIME_INFO)] == 2
    assert seen[(ns, CLIENT_TO_SERVER, RequestCode.REGISTER_BROKER)] >= 1
    answers = sum(n for (port, direction, _), n in seen.items() if direction == SERVER_TO_CLIENT)
    assert answers >= 5
    # The stop's unregistration is in the file too, after the cluster is gone.
    assert recorded(path)[(ns, CLIENT_TO_SERVER, RequestCode.UNREGISTER_BROKER)] == 1
    listed = list_recording(path)
    assert listed.returncode == 0 and f"port {ns} -> code {RequestCode.REGISTER_BROKER}" \
        in listed.stdout
    torn = tmp_path / "torn.bin"
    torn.write_bytes(path.read_bytes()[:-3])
    listed = list_recording(torn)
    assert listed.returncode == 1 and "at byte" in listed.stderr
    assert "Traceback" not in listed.stderr


def list_recording(path) -> subprocess.CompletedProcess:
    """``rmq-emu recording FILE``."""
    return subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", "recording",
                           str(path)], capture_output=True, text=True, timeout=60)

