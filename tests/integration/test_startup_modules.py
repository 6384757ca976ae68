"""`rmq-emu up`, started for real (loopback ports, small store), has imported none of the heavy
modules its start does not need (issue 12 item 5)."""

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

#: Runs `up`; once it announces `ready`, prints the loaded modules and stops the reactor.
SCRIPT = """
import sys
from twisted.internet import reactor
from rocketmq_emu.broker import cli

announce = cli._announce

def announce_then_stop(*args, **kwargs):
    announce(*args, **kwargs)
    print("MODULES", " ".join(sys.modules), flush=True)
    reactor.callLater(0, reactor.stop)

cli._announce = announce_then_stop
sys.exit(cli.main(sys.argv[1:]))
"""


def test_up_start_imports_nothing_it_does_not_need(tmp_path):
    """After `up` is listening and registered: no Spark, pandas, client, lark."""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"mappedFileSizeCommitLog={1 << 20}\n")  # not a 1 GiB commitlog
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, "up", "--grpc-port", "0", "-c", str(conf), "--store", str(tmp_path / "s"),
         "--namesrv-port", str(free_port()), "--broker-port", str(free_broker_port())],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("MODULES "))
    mods = set(line.split()[1:])
    assert "rocketmq_emu.broker.controller" in mods
    assert sorted(m for m in mods for n in NOT_AT_START if m == n or m.startswith(n + ".")) == []
