"""`rmq-emu up`, started for real (loopback ports, small store), has imported none of the heavy
modules its start does not need (issue 12 item 5), and none of a feature's that no client has
used yet (issue 26: gRPC, ACL, conformance rules, TLS load on first use)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rocketmq_emu.client.testing_tools import free_broker_port, free_port

ROOT = Path(__file__).resolve().parents[2]
#: What the start must not import (as in tests/unit/test_startup_imports.py).
#: (construct is imported: the byte layouts' structs are derived from it at import; and pdb,
#: which construct.debug imports.)
NOT_AT_START = ("pyspark", "pandas", "pyarrow", "numpy", "matplotlib", "lark",
                "rocketmq_emu.client", "rocketmq_emu.reports", "rocketmq_emu.broker.filter.parser",
                # the default permissive ports load the switch (broker.tls.sniff), not OpenSSL's
                # context or the test-mode certificate until a TLS client comes
                "rocketmq_emu.broker.tls.context", "rocketmq_emu.broker.tls.certs")
#: Served from the start but loaded on first use (issue 26), so idle after the start of the
#: default configuration (gRPC on, ACL off, permissive TLS, conformance on) none is imported.
UNUSED_AT_IDLE = (
    # gRPC: the port listens; the server, the service and the messages (protobuf) come with
    # the first connection (broker/grpc/endpoint.py)
    "google.protobuf", "hpack", "rocketmq_emu.broker.grpc.messages",
    "rocketmq_emu.broker.grpc.server", "rocketmq_emu.broker.grpc.service",
    "rocketmq_emu.broker.grpc.http2", "rocketmq_emu.broker.grpc.auth_guard",
    # ACL off: no plain_acl.yml loader, no editor of the ACL admin codes, no YAML
    "yaml", "rocketmq_emu.broker.acl.config", "rocketmq_emu.broker.acl.editor",
    "rocketmq_emu.broker.acl.service", "rocketmq_emu.broker.acl.validator",
    # conformance: the monitor is attached; the rules come with the first request they judge
    "rocketmq_emu.broker.conformance.findings", "rocketmq_emu.broker.conformance.request_rules",
    "rocketmq_emu.broker.conformance.message_rules",
    "rocketmq_emu.broker.conformance.session_rules", "rocketmq_emu.broker.conformance.grpc_rules",
    "rocketmq_emu.broker.conformance.report",
    # TLS: the certificate tool
    "rocketmq_emu.broker.tls.cli",
    # request areas loaded at the first request of one of their codes (broker/controller_areas.py):
    # POP (its revive service too, on a store without POP state), recall, the ACL admin codes
    "rocketmq_emu.broker.pop.service", "rocketmq_emu.broker.pop.revive",
    "rocketmq_emu.broker.pop.revive_log", "rocketmq_emu.broker.pop.revive_bodies",
    "rocketmq_emu.broker.pop.order_info", "rocketmq_emu.broker.pop.long_polling",
    "rocketmq_emu.broker.pop.extra_info", "rocketmq_emu.broker.processors.pop",
    "rocketmq_emu.broker.processors.pop_ack", "rocketmq_emu.broker.processors.pop_peek",
    "rocketmq_emu.broker.remoting.headers.pop",
    "rocketmq_emu.broker.processors.recall", "rocketmq_emu.broker.recall_handle",
    "rocketmq_emu.broker.processors.acl_admin",
)
#: The TLS stack: the reactor imports it when pyOpenSSL is installed (twisted.internet.tcp
#: imports twisted.internet._newtls), but the server commands import the reactor without it
#: (broker/default_reactor.py): it comes with the first TLS client.
TLS_STACK = ("OpenSSL", "cryptography", "service_identity", "twisted.protocols.tls",
             "twisted.internet.ssl", "twisted.internet._newtls", "twisted.internet._sslverify")

#: Runs `up`; once it announces `ready`, prints the loaded modules and stops the reactor.
SCRIPT = """
import sys
from rocketmq_emu.broker import cli

announce = cli._announce

def announce_then_stop(*args, **kwargs):
    from twisted.internet import reactor

    announce(*args, **kwargs)
    print("MODULES", " ".join(sys.modules), flush=True)
    reactor.callLater(0, reactor.stop)

cli._announce = announce_then_stop
sys.exit(cli.main(sys.argv[1:]))
"""


def _loaded(mods: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods for n in names if m == n or m.startswith(n + "."))


def _modules(out: subprocess.CompletedProcess, tag: str) -> set[str]:
    line = next(x for x in out.stdout.splitlines() if x.startswith(tag + " "))
    return set(line.split()[1:])


def test_up_start_imports_nothing_it_does_not_need(tmp_path):
    """After `up` is listening and registered: no Spark, pandas, client, lark; no gRPC server
    or protobuf, no ACL or YAML, no conformance rule, no TLS stack (not even the reactor's)."""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"mappedFileSizeCommitLog={1 << 20}\n")  # not a 1 GiB commitlog
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, "up", "--grpc-port", "0", "-c", str(conf), "--store", str(tmp_path / "s"),
         "--namesrv-port", str(free_port()), "--broker-port", str(free_broker_port())],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    mods = _modules(out, "MODULES")
    assert "rocketmq_emu.broker.controller" in mods
    assert "rocketmq_emu.broker.grpc.endpoint" in mods  # the gRPC port is served
    assert _loaded(mods, NOT_AT_START) == []
    assert _loaded(mods, UNUSED_AT_IDLE) == []
    assert _loaded(mods, TLS_STACK) == []
