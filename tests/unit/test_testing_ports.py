"""Ports the test harness picks for servers it starts (client/testing_tools.py): below the
kernel's ephemeral range, where no outgoing connection takes them between the pick and the
bind, and under pytest-xdist from each worker's own share."""

from __future__ import annotations

import pytest

from rocketmq_emu.client import testing_tools
from rocketmq_emu.client.testing_tools import PORT_FLOOR, _port_span


def ephemeral_low() -> int:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        return int(f.read().split()[0])


def test_span_without_xdist_is_everything_below_the_ephemeral_range(monkeypatch):
    """Outside pytest-xdist: [PORT_FLOOR, first ephemeral port)."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert _port_span() == (PORT_FLOOR, ephemeral_low())


def test_xdist_workers_get_disjoint_shares_below_the_ephemeral_range(monkeypatch):
    """Four workers: four non-overlapping spans, all inside [PORT_FLOOR, first ephemeral)."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    spans = []
    for i in range(4):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{i}")
        spans.append(_port_span())
    assert all(PORT_FLOOR <= low < high <= ephemeral_low() for low, high in spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


@pytest.mark.parametrize("worker", ["gw0", "gw3"])
def test_free_port_stays_in_the_workers_share(monkeypatch, worker):
    """What free_port returns lies in the worker's span (whatever the machine has bound)."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    low, high = _port_span()
    checked = []
    monkeypatch.setattr(testing_tools, "_port_free", lambda port, host: checked.append(port) or True)
    assert low <= testing_tools.free_port() < high
    assert len(checked) == 1


def test_a_port_handed_out_is_not_handed_out_again_before_it_may_be_bound(monkeypatch):
    """Servers started together (a Spark master and its workers) bind their ports seconds after
    the picks: nothing binds here, and still no pick repeats an earlier one, nor a broker port's
    VIP neighbour (P - 2)."""
    monkeypatch.setattr(testing_tools, "_port_span", lambda: (40_000, 40_160))
    monkeypatch.setattr(testing_tools, "_HANDED_OUT", {})
    broker = testing_tools.free_broker_port()
    picks = [testing_tools.free_port() for _ in range(100)]
    assert len(set(picks)) == 100 and not {broker, broker - 2} & set(picks)
