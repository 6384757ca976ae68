"""The gRPC port of a real ``rmq-emu up`` under the HTTP/2 attacks of 2023-2024 (issue 27), each
from its own raw-frame connection (h2_attacks.py) while the RocketMQ 5.x Python SDK (PyPI
``rocketmq-python-client==5.1.2``, unmodified) sends on another connection throughout.

Each attack must end with the offending connection closed (GOAWAY with the code that applies)
or its stream answered, the server's RSS growing by at most 20 MB over the attack, the SDK's
sends all succeeding with some returning while the attack runs, and, for a connection the
server closes, one log line naming the peer and the reason. Latency is not checked here (speed
lives in benchmarks): each test prints the SDK's p99 during the attack beside its quiet p99.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import h2_attacks as attacks
import psutil
import pytest
from interop_support import (
    TEST_BROKER_CONF,
    ClientLauncher,
    ClientProcess,
    Emulator,
    start_emulator,
    stop_emulator,
    unique,
    update_topic,
    wait_events,
)

from rocketmq_emu.broker.grpc.http2_frames import ErrorCode
from rocketmq_emu.client.testing_tools import free_port

TOPIC = unique("Attacked")
RSS_LIMIT_MB = 20


@pytest.fixture(scope="module")
def attacked(tmp_path_factory) -> Emulator:
    """``rmq-emu up --grpc-port``, its default configuration."""
    tmp = tmp_path_factory.mktemp("grpc-attacks")
    conf = tmp / "broker.conf"
    conf.write_text(TEST_BROKER_CONF)
    emu = start_emulator(tmp, ["-c", str(conf)], grpc_port=free_port())
    update_topic(emu, TOPIC)
    yield emu
    stop_emulator(emu)


@pytest.fixture(scope="module")
def producer(tmp_path_factory, attacked, sdk5_python) -> ClientProcess:
    """The well-behaved client: the SDK's Producer sending one message every 20 ms until the
    module ends. Its connection is up, and one raw-frame call answered, before any attack: the
    server's gRPC code is loaded on first use, which is not the attack's cost."""
    launcher = ClientLauncher(tmp_path_factory.mktemp("sdk"), attacked, None, None,
                              sdk5_py=sdk5_python)
    cp = launcher.sdk5_python("sdk5_py_producer.py", topic=TOPIC, count=-1, pause=0.02,
                              timeout=600)
    wait_events(cp, 20, "sent", timeout=60)
    assert attacks.well_formed_call(attacked.grpc, TOPIC).statuses == {1: 0}
    yield cp
    launcher.close()


class RssPeak:
    """Samples a process's RSS every 20 ms in a thread; ``growth_mb`` over the first sample."""

    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.start = self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)
        return (self.peak - self.start) / 2**20


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else max(values, default=0)


def _closed_with(code: ErrorCode) -> Callable[[attacks.Outcome], None]:
    def check(outcome: attacks.Outcome) -> None:
        assert outcome.goaway == code and outcome.closed, outcome

    return check


def _dropped(outcome: attacks.Outcome) -> None:
    """A client that never reads cannot read the GOAWAY: the server drops the connection."""
    assert outcome.closed, outcome


def _refused_past_the_limit(outcome: attacks.Outcome) -> None:
    """1,000 streams held open (SETTINGS_MAX_CONCURRENT_STREAMS), the other 100 refused."""
    assert len(outcome.resets) == 100, outcome.resets
    assert set(outcome.resets.values()) == {ErrorCode.REFUSED_STREAM}
    assert min(outcome.resets) == 2 * 1000 + 1
    assert outcome.goaway is None and not outcome.statuses


def _status(code: int) -> Callable[[attacks.Outcome], None]:
    def check(outcome: attacks.Outcome) -> None:
        assert outcome.statuses == {1: code}, outcome  # RESOURCE_EXHAUSTED, as gRPC answers
        assert outcome.goaway is None

    return check


#: name -> (attack(grpc_addr), check(outcome), the reason the server's log line names or None)
ATTACKS: dict[str, tuple[Callable[[str], attacks.Outcome], Callable[[attacks.Outcome], None],
                         str | None]] = {
    "rapid reset": (attacks.rapid_reset, _closed_with(ErrorCode.ENHANCE_YOUR_CALM),
                    "rapid reset: over 1000 streams reset"),
    "CONTINUATION without end": (attacks.continuation_forever,
                                 _closed_with(ErrorCode.ENHANCE_YOUR_CALM),
                                 "CONTINUATION flood: over 32 CONTINUATION frames"),
    "CONTINUATION of megabytes": (attacks.continuation_megabytes,
                                  _closed_with(ErrorCode.ENHANCE_YOUR_CALM),
                                  "CONTINUATION flood: header block over"),
    # Each bomb is a stream error (the header list over SETTINGS_MAX_HEADER_LIST_SIZE); the
    # resets it provokes draw on the Rapid Reset budget.
    "HPACK bomb": (attacks.hpack_bomb, _closed_with(ErrorCode.ENHANCE_YOUR_CALM),
                   "rapid reset: over 1000 streams reset"),
    "PING flood, never read": (attacks.ping_flood_unread, _dropped,
                               "PING/SETTINGS flood: over 1000 ACKs unread"),
    "SETTINGS flood, never read": (attacks.settings_flood_unread, _dropped,
                                   "PING/SETTINGS flood: over 1000 ACKs unread"),
    "zero-window reader": (lambda addr: attacks.zero_window_reader(addr, TOPIC),
                           _refused_past_the_limit, None),
    "4 GiB length prefix": (attacks.huge_length_prefix, _status(8), None),
    "gzip bomb": (attacks.gzip_bomb, _status(8), None),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_is_bounded_while_the_sdk_is_served(name: str, attacked: Emulator,
                                                   producer: ClientProcess) -> None:
    attack, check, reason = ATTACKS[name]
    quiet_from = time.time()
    time.sleep(1)
    rss = RssPeak(attacked.proc.pid)
    began = time.time()
    outcome = attack(attacked.grpc)
    ended = time.time()
    growth = rss.stop()
    time.sleep(0.5)  # sends that were waiting on the attack return

    check(outcome)
    assert growth <= RSS_LIMIT_MB, f"RSS grew {growth:.1f} MB over the attack"
    events = producer.events()
    errors = [e for e in events if e.get("event") in ("send_error", "watchdog")]
    assert errors == [], errors
    sent: list[dict[str, Any]] = [e for e in events if e.get("event") == "sent"]
    during = [e["ms"] for e in sent if began <= e["at"] <= ended + 0.5]
    quiet = [e["ms"] for e in sent if quiet_from <= e["at"] < began]
    assert during, "no send of the SDK returned while the attack ran"
    lines = [line for line in attacked.log_path.read_text(errors="replace").splitlines()
             if f"from {outcome.local}:" in line]
    if reason is None:
        assert lines == []
    else:
        assert len(lines) == 1 and reason in lines[0], lines
    print(f"\n{name}: {ended - began:.2f} s, {outcome.sent / 2**20:.1f} MB sent by the attacker, "
          f"RSS +{growth:.1f} MB; SDK sends p99 {p99(during):.1f} ms during ({len(during)}) "
          f"against {p99(quiet):.1f} ms quiet ({len(quiet)})")
