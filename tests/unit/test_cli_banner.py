"""The lines ``rmq-emu up`` / ``broker`` print before ``ready`` (issue 25 items 2 and 4): the
ports bound, and one line per optional feature that is on, none for one that is off."""

from __future__ import annotations

from types import SimpleNamespace

from rocketmq_emu.broker.cli_banner import cluster_lines, tls_line
from rocketmq_emu.broker.tls.config import TlsConfig, TlsMode

DISABLED = TlsConfig(mode=TlsMode.DISABLED)


def cluster(*, tls=DISABLED, acl=None, record=None, report=None, grpc=None, vip=10909):
    """A started cluster as the banner sees it: a name server and one broker whose config still
    says ``listenPort`` 0 while the controller has bound 10911 (and ``vip``)."""
    cfg = SimpleNamespace(broker_cluster_name="DefaultCluster", listen_port=0, tls=tls)
    broker = SimpleNamespace(port=10911, vip_port=vip, addr="10.0.0.9:10911", config=cfg, acl=acl)
    spec = SimpleNamespace(brokers=[cfg], record=record, conformance_report=report)
    return SimpleNamespace(
        namesrv=object(), namesrv_addr="127.0.0.1:9876", host="127.0.0.1", grpc_endpoint=grpc,
        slots=[SimpleNamespace(name="broker-a", controller=broker)], store_dir="/s", spec=spec,
        conformance=object())


def test_the_ports_printed_are_the_ones_bound():
    """The broker line names the controller's ports and advertised address, not the config's."""
    assert cluster_lines(cluster(grpc="127.0.0.1:8081")) == [
        "name server 127.0.0.1:9876",
        "broker broker-a (DefaultCluster) listening on 127.0.0.1:10911 and 127.0.0.1:10909 "
        "(VIP channel), advertised as 10.0.0.9:10911",
        "gRPC (RocketMQ 5 SDKs) on 127.0.0.1:8081",
        "store /s",
    ]


def test_features_that_are_off_print_nothing():
    """TLS disabled, no ACL, no recording, no report, no VIP channel: addresses and store only."""
    lines = cluster_lines(cluster(vip=None))
    assert lines == ["name server 127.0.0.1:9876",
                     "broker broker-a (DefaultCluster) listening on 127.0.0.1:10911, "
                     "advertised as 10.0.0.9:10911",
                     "store /s"]


def test_each_feature_that_is_on_prints_one_line():
    """ACL, recording and conformance report: one line each, after the store."""
    acl = SimpleNamespace(config=SimpleNamespace(accounts=[1, 2], files=["/h/conf/plain_acl.yml"]))
    lines = cluster_lines(cluster(acl=acl, record="/r.bin", report="/rep"))
    assert lines[-3:] == [
        "ACL on (aclEnable=true) for broker-a: 2 account(s) from /h/conf/plain_acl.yml",
        "recording the name server and broker ports to /r.bin",
        "conformance report to /rep at stop (conformance.json, conformance.html)",
    ]


def test_tls_line_names_the_mode():
    """Enforcing: TLS clients only; disabled (or no TLS switch): no line."""
    line = tls_line(TlsConfig(mode=TlsMode.ENFORCING))
    assert line.startswith("TLS enforcing: test-mode self-signed certificate")
    assert line.endswith("(TLS clients only on the ports above)")
    assert tls_line(DISABLED) is None and tls_line(None) is None
