"""conformanceEnable: the broker.conf key that turns the conformance monitor off (issue 17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_emu.broker.config import load_broker_conf
from rocketmq_emu.client.message import Message


def test_broker_conf_key_reads_false(tmp_path: Path) -> None:
    """conformanceEnable=false in broker.conf sets conformance_enable off (default on)."""
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-a\nconformanceEnable=false\n")
    assert load_broker_conf(str(conf)).config.conformance_enable is False
    conf.write_text("brokerName=broker-a\n")
    assert load_broker_conf(str(conf)).config.conformance_enable is True


@pytest.mark.rocketmq(broker_config={"conformance_enable": False}, grpc_port=None)
def test_cluster_without_conformance_has_no_monitor_and_no_findings(rocketmq) -> None:
    """With it off, no monitor is hooked in and a tag with "||" is sent without a finding."""
    rocketmq.create_topic("NoConformance")
    rocketmq.producer().send(Message("NoConformance", b"x", tags="a||b"))
    assert rocketmq.cluster.conformance is None and rocketmq.conformance() == []


@pytest.mark.rocketmq(grpc_port=None)
def test_cluster_with_conformance_finds_the_same_send(rocketmq) -> None:
    """By default the same send is a finding (the monitor is on)."""
    rocketmq.create_topic("WithConformance")
    rocketmq.producer().send(Message("WithConformance", b"x", tags="a||b"))
    assert [f["kind"] for f in rocketmq.conformance()] == ["message.tags"]
