"""``bench/grpc.py`` runs end to end: every phase answers without an error and the table is
printed. A smoke test of the benchmark's wiring (sub-second phases), not a measurement: no figure
is checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "grpc.py"


def test_bench_grpc_quick_runs() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--duration", "0.3", "--warmup", "0.1"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    for phase in ("remoting SEND_MESSAGE_V2", "gRPC SendMessage", "remoting PULL_MESSAGE x32",
                  "remoting POP x32 + ACK", "gRPC Receive x32 + Ack"):
        assert f"\n{phase}" in proc.stdout, proc.stdout
    assert "server CPU ratio gRPC/remoting, send" in proc.stdout


def test_bench_grpc_cpu_mode_replays_a_recorded_connection() -> None:
    """``--cpu``: a grpcio connection recorded, replayed in-process beside remoting frames; every
    answer checked (exit 0), the figures and the gRPC side in absolute terms printed."""
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--cpu", "--duration", "0.3", "--repeat", "1"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    for line in ("gRPC SendMessage server CPU", "remoting SEND_MESSAGE_V2 server CPU",
                 "server CPU ratio gRPC/remoting, send", "gRPC side: gRPC - remoting",
                 "gRPC layer alone (dispatch stubbed)"):
        assert f"\n{line}" in proc.stdout, proc.stdout
