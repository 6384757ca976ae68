"""What ``rmq-emu up | broker | namesrv`` print once they serve, before the ``ready`` line.

One line per address, with the ports actually bound (a port option of 0 picks a free port, so
a script reads the ports from here), then one line per optional feature that is on — TLS, ACL,
the recording, the conformance report, the control API — and nothing for what is off::

    rmq-emu: name server 127.0.0.1:9876
    rmq-emu: broker broker-a (DefaultCluster) listening on 127.0.0.1:10911 and 127.0.0.1:10909 (VIP channel), advertised as 127.0.0.1:10911
    rmq-emu: gRPC (RocketMQ 5 SDKs) on 127.0.0.1:8081
    rmq-emu: store /home/me/rocketmq-emu/store
    rmq-emu: TLS permissive: test-mode self-signed certificate, client auth none (plain and TLS clients on the ports above)

The lines are read from what the started cluster already holds: printing them imports no
feature module (``tests/integration/test_startup_modules.py``).
"""

from __future__ import annotations

from typing import Any


def cluster_lines(cluster: Any, registers_with: str | None = None) -> list[str]:
    """The lines (without the ``rmq-emu:`` prefix) for a started
    :class:`~rocketmq_emu.broker.cluster.Cluster`; ``registers_with`` is the ``namesrvAddr`` of
    a cluster without its own name server (``rmq-emu broker``)."""
    lines = []
    namesrv = cluster.namesrv_addr if cluster.namesrv is not None else registers_with
    if namesrv:
        lines.append(f"name server {namesrv}")
    host = cluster.host
    for slot in cluster.slots:
        broker = slot.controller
        if broker is None:
            continue
        vip = f" and {host}:{broker.vip_port} (VIP channel)" if broker.vip_port else ""
        lines.append(f"broker {slot.name} ({broker.config.broker_cluster_name}) listening on "
                     f"{host}:{broker.port}{vip}, advertised as {broker.addr}")
    if cluster.grpc_endpoint:
        lines.append(f"gRPC (RocketMQ 5 SDKs) on {cluster.grpc_endpoint}")
    lines.append(f"store {cluster.store_dir}")
    spec = cluster.spec
    tls = tls_line(spec.brokers[0].tls if spec.brokers else None)
    if tls:
        lines.append(tls)
    for slot in cluster.slots:
        acl = getattr(slot.controller, "acl", None)
        if acl is not None:
            files = ", ".join(acl.config.files) or \
                "no file (set rocketmqHome in broker.conf or $ROCKETMQ_HOME)"
            lines.append(f"ACL on (aclEnable=true) for {slot.name}: "
                         f"{len(acl.config.accounts)} account(s) from {files}")
    if spec.record:
        lines.append(f"recording the name server and broker ports to {spec.record}")
    if spec.conformance_report and cluster.conformance is not None:
        lines.append(f"conformance report to {spec.conformance_report} at stop "
                     "(conformance.json, conformance.html)")
    return lines


def tls_line(tls: Any) -> str | None:
    """The TLS line for ``tls.*`` settings (a :class:`~rocketmq_emu.broker.tls.config.TlsConfig`),
    None when the ports have no TLS (``tls.server.mode=disabled``, or no switch at all)."""
    if tls is None or tls.mode.value == "disabled":
        return None
    if tls.mode.value == "enforcing":
        who = "TLS clients only"
    else:
        from rocketmq_emu.broker.tls.config import tls_available  # loaded with the TLS settings

        who = "plain and TLS clients" if tls_available() else \
            "plain clients; TLS ones need pip install 'rocketmq-emu[tls]'"
    return f"{tls.describe()} ({who} on the ports above)"
