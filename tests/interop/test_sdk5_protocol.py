"""The emulator's ``apache.rocketmq.v2`` classes beside the real RocketMQ 5 Python SDK (PyPI
``rocketmq-python-client==5.1.2``) in one process: no duplicate symbol in either import order,
identical descriptors, and messages that cross between the two unchanged
(clients/sdk5_protocol.py does the work in a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from interop_support import CLIENTS, ROOT


@pytest.fixture
def sdk5(sdk5_python: Path) -> Path:
    """The SDK's ``pip install --target`` directory (conftest's session install)."""
    return sdk5_python


def _run(sdk5: Path, order: str) -> dict:
    proc = subprocess.run([sys.executable, str(CLIENTS / "sdk5_protocol.py"), str(sdk5), order],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("order", ["ours-first", "sdk-first"])
def test_both_load_in_one_process(sdk5: Path, order: str) -> None:
    """Either import order works; the default pool keeps the SDK's types and ours stay apart."""
    result = _run(sdk5, order)
    assert result["default_pool_is_the_sdks"] and result["classes_distinct"]


def test_descriptors_match_the_sdks(sdk5: Path) -> None:
    """Every message, enum and service of the SDK has the same descriptor in our pool."""
    assert _run(sdk5, "sdk-first")["mismatches"] == []


def test_messages_cross_between_ours_and_the_sdks(sdk5: Path) -> None:
    """SendMessageRequest, ReceiveMessageResponse and TelemetryCommand: same bytes both ways."""
    trips = _run(sdk5, "ours-first")["round_trips"]
    assert set(trips) >= {"SendMessageRequest", "ReceiveMessageResponse[1]", "TelemetryCommand"}
    failed = {name: checks for name, checks in trips.items() if not all(checks.values())}
    assert failed == {}
