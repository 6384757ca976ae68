"""The dashboard's pure helpers: query parameters, body rendering, the throughput samples, and
that nothing of it is imported before a page asks."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from rocketmq_emu.client.api_errors import ApiError
from rocketmq_emu.client.dashboard.cluster_view import StoreSizes, ThroughputSamples, snapshots
from rocketmq_emu.client.dashboard.common import int_arg
from rocketmq_emu.client.dashboard.messages_view import render_body


def test_an_integer_parameter_within_its_range_is_read():
    assert int_arg({"max": "10"}, "max", 64, low=1, high=1000) == 10
    assert int_arg({}, "max", 64, low=1, high=1000) == 64


@pytest.mark.parametrize(("query", "message"), [
    ({"max": "ten"}, "max must be an integer, not 'ten'"),
    ({"max": "0"}, "max must be between 1 and 1000, not 0"),
    ({"max": "1001"}, "max must be between 1 and 1000, not 1001"),
])
def test_a_bad_integer_parameter_is_a_400_naming_it(query, message):
    with pytest.raises(ApiError) as err:
        int_arg(query, "max", 64, low=1, high=1000)
    assert err.value.status == 400 and str(err.value) == message


def test_a_missing_required_parameter_is_a_400():
    with pytest.raises(ApiError, match="give begin"):
        int_arg({}, "begin")


@pytest.mark.parametrize(("body", "shown"), [
    (b"hello\nworld\t!", ("hello\nworld\t!", "text")),
    ("h\u00e9llo <b>".encode(), ("h\u00e9llo <b>", "text")),
    (b"\xff\xfe", ("ff fe", "hex")),
    (b"bell\x07", ("62 65 6c 6c 07", "hex")),
    (b"", ("", "text")),
])
def test_a_body_is_text_when_it_reads_as_text_else_hex(body, shown):
    assert render_body(body) == shown


def test_rates_come_from_samples_a_second_or_more_apart():
    now = [1000.0]
    samples = ThroughputSamples(wall=lambda: now[0])
    stats = SimpleNamespace(put_total=0, get_total=0)
    assert samples.sample("b", stats) == []
    stats.put_total, stats.get_total = 10, 4
    now[0] += 0.5  # a second page polling meanwhile: no new point
    assert samples.sample("b", stats) == []
    now[0] += 1.5
    assert samples.sample("b", stats) == [{"t": 1002000, "put": 5.0, "get": 2.0}]


def test_a_restarted_broker_starts_its_rates_again():
    now = [0.0]
    samples = ThroughputSamples(wall=lambda: now[0])
    samples.sample("b", SimpleNamespace(put_total=100, get_total=0))
    now[0] = 2.0
    assert samples.sample("b", SimpleNamespace(put_total=0, get_total=0)) == []


def test_samples_older_than_ten_minutes_are_dropped():
    now = [0.0]
    samples = ThroughputSamples(wall=lambda: now[0])
    stats = SimpleNamespace(put_total=0, get_total=0)
    for _ in range(700):
        now[0] += 1.0
        samples.sample("b", stats)
    assert len(samples.sample("b", stats)) == 600  # samples at 100 s .. 700 s: 600 steps


def test_the_brokers_snapshots_fill_the_time_no_page_polled():
    """A page opened after the traffic: the broker's 10 s snapshots within the ten minutes,
    and later ones a second or more after the last poll, give the rates of that time."""
    now = [1000.0]
    samples = ThroughputSamples(wall=lambda: now[0])
    stats = SimpleNamespace(put_total=300, get_total=100)
    history = [(300.0, 0, 0), (980.0, 0, 0), (990.0, 200, 100), (999.5, 250, 100)]
    assert samples.sample("b", stats, lambda: history) == [
        {"t": 990000, "put": 20.0, "get": 10.0}, {"t": 999500, "put": 5.26, "get": 0.0}]
    now[0] = 1030.0
    stats.put_total = 600
    history += [(1000.0, 300, 100), (1010.0, 300, 100), (1020.0, 500, 100)]
    assert samples.sample("b", stats, lambda: history)[2:] == [
        {"t": 1010000, "put": 4.76, "get": 0.0}, {"t": 1020000, "put": 20.0, "get": 0.0},
        {"t": 1030000, "put": 10.0, "get": 0.0}]


def test_the_brokers_snapshots_are_placed_on_the_wall_clock():
    """Snapshots are stamped on the business clock; an advanced clock's offset is taken off."""
    items = SimpleNamespace(broker_totals_history=lambda: [(3_600_000 + 990_000, 5, 1)])
    ctx = SimpleNamespace(stats_items=items, clock=SimpleNamespace(seconds=lambda: 4600.0))
    assert snapshots(ctx, 1000.0) == [(990.0, 5, 1)]
    assert snapshots(SimpleNamespace(stats_items=None), 1000.0) == []


def test_a_stores_size_is_measured_again_only_after_thirty_seconds(tmp_path):
    now = [0.0]
    sizes = StoreSizes(wall=lambda: now[0])
    (tmp_path / "commitlog").write_bytes(b"x" * 8192)
    first = sizes.disk(tmp_path)["storeBytes"]
    (tmp_path / "index").write_bytes(b"x" * 8192)
    now[0] = 30.0
    assert sizes.disk(tmp_path)["storeBytes"] == first
    now[0] = 30.5
    assert sizes.disk(tmp_path)["storeBytes"] > first


def test_serving_the_control_api_imports_nothing_of_the_dashboard():
    """A control API nobody browses costs nothing: no dashboard module until a page asks."""
    code = ("import sys, rocketmq_emu.client.control_api, rocketmq_emu.client.control_up;"
            "print([m for m in sys.modules if m.startswith('rocketmq_emu.client.dashboard')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_the_control_api_knows_every_path_the_dashboard_routes():
    """The control API imports the dashboard for the paths under DASHBOARD_HEADS only."""
    from rocketmq_emu.client.control_api import DASHBOARD_HEADS
    from rocketmq_emu.client.dashboard.routes import DashboardRoutes

    routes = DashboardRoutes(SimpleNamespace(), lambda: {"now_ms": 0}, False)
    assert routes.heads() == DASHBOARD_HEADS
