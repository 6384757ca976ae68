"""The traffic report's charts read at a glance: the time axis fits the data's span (a store
written within one minute, one written over two days by the fake clock), a single bucket is a
bar, every axis has its unit, and system topics are kept apart from the user's."""

from __future__ import annotations

import io
import os
import sys

import pandas as pd
import pytest

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC
from rocketmq_emu.reports.report import Progress

sys.path.insert(0, os.path.dirname(__file__))
from storegen import BrokerStore  # noqa: E402

pytestmark = pytest.mark.spark

#: 2026-11-28 10:00:00 UTC
START = 1_795_860_000_000
MINUTE = 60_000
DAY = 86_400_000


def _put(st: BrokerStore, topic: str, at: int, i: int, **props) -> None:
    st.put(MessageRecord(
        topic=topic, body=b"x" * (100 + i), store_host=("192.168.0.10", 10911),
        born_host=("10.0.0.1", 5001), born_timestamp=at - 1, store_timestamp=at,
        properties={"UNIQ_KEY": f"{topic}{i:020d}", **props},
    ))


def _write(root: str, times: list[int]) -> None:
    """User topics Orders and Payments at ``times``, one retry and one dead letter of group
    billing, and system records (delay level copies and the timer wheel) beside them."""
    st = BrokerStore(root, file_size=64 * 1024)
    for i, at in enumerate(times):
        _put(st, "Orders" if i % 3 else "Payments", at, i)
        if i % 10 == 0:
            _put(st, RMQ_SYS_SCHEDULE_TOPIC, at, i, REAL_TOPIC="Orders", DELAY="2")
            _put(st, TIMER_TOPIC, at, i, REAL_TOPIC="Orders")
    _put(st, "%RETRY%billing", times[-1], 1000, RETRY_TOPIC="Orders")
    _put(st, "%DLQ%billing", times[-1], 1001, RETRY_TOPIC="Orders")
    st.close()


def _traffic(spark, root: str):
    from rocketmq_emu.reports.jobs import traffic

    return traffic.run(spark, root, Progress("traffic", 9, stream=io.StringIO()))


@pytest.fixture(scope="module")
def one_minute(spark, tmp_path_factory):
    """30 messages within 58 s."""
    root = str(tmp_path_factory.mktemp("one-minute"))
    _write(root, [START + i * 2_000 for i in range(30)])
    return _traffic(spark, root)


@pytest.fixture(scope="module")
def two_days(spark, tmp_path_factory):
    """48 messages, one an hour from START over two days (the fake clock stores each)."""
    root = str(tmp_path_factory.mktemp("two-days"))
    _write(root, [START + i * 3_600_000 for i in range(48)])
    return _traffic(spark, root)


@pytest.fixture(scope="module")
def one_second(spark, tmp_path_factory):
    """Every message in the same second."""
    root = str(tmp_path_factory.mktemp("one-second"))
    _write(root, [START + i for i in range(12)])
    return _traffic(spark, root)


def _axes(report, file_name: str, tmp_path=None):
    """Draw one of the report's charts; its Axes (and the PNG, kept for a person to look at,
    when ``tmp_path`` is given)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from rocketmq_emu.reports import charts

    chart = next(c for c in report.charts if c.file_name == file_name)
    if tmp_path is not None:
        charts.render(chart, str(tmp_path / file_name))
    fig = Figure(figsize=(charts.WIDTH, charts.HEIGHT), dpi=charts.DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    chart.draw(ax)
    fig.canvas.draw()
    return ax


def _x_span_seconds(ax) -> float:
    import matplotlib.dates as mdates

    low, high = ax.get_xlim()
    return (mdates.num2date(high) - mdates.num2date(low)).total_seconds()


def test_a_store_written_in_one_minute_is_drawn_per_second(one_minute, tmp_path):
    """Buckets of one second; the axis spans the minute (not years) and says so."""
    over_time = one_minute.tables["messages_over_time"]
    assert set(over_time["bucketSeconds"]) == {1}
    ax = _axes(one_minute, "messages_over_time.png", tmp_path)
    assert 58 <= _x_span_seconds(ax) <= 60
    assert ax.get_xlabel() == "store time (UTC), one point per second"
    assert ax.get_ylabel() == "messages per second"
    assert {line.get_label() for line in ax.get_lines()} == {"Orders", "Payments",
                                                             "retries of billing",
                                                             "dead letters of billing"}


def test_a_store_written_over_two_days_is_drawn_per_hour(two_days, tmp_path):
    """Buckets of one hour over 47 hours: the axis runs two days, not a four-year range."""
    over_time = two_days.tables["messages_over_time"]
    assert set(over_time["bucketSeconds"]) == {3600}
    assert over_time.groupby("topic")["messages"].sum().to_dict() == {
        "Orders": 32, "Payments": 16, "%RETRY%billing": 1, "%DLQ%billing": 1}
    ax = _axes(two_days, "messages_over_time.png", tmp_path)
    assert 47 * 3600 <= _x_span_seconds(ax) <= 48 * 3600
    assert ax.get_ylabel() == "messages per hour"
    assert "one point per hour" in ax.get_xlabel()


def test_data_in_one_bucket_is_a_bar_not_a_dot(one_second, tmp_path):
    """Everything stored in one second: bars per topic, labelled with the second they count."""
    ax = _axes(one_second, "messages_over_time.png", tmp_path)
    assert not ax.get_lines()
    heights = {tick.get_text(): bar.get_height()
               for tick, bar in zip(ax.get_xticklabels(), ax.patches, strict=False)}
    assert heights["Orders"] == 8 and heights["Payments"] == 4
    assert ax.get_legend().get_texts()[0].get_text() == "2026-11-28 10:00:00–10:00:01 UTC"


def test_system_topics_are_counted_apart_from_the_users(one_minute):
    """per_topic holds the user's topics and their retry/DLQ topics (with their group);
    SCHEDULE_TOPIC_XXXX and rmq_sys_wheel_timer are in system_topics, not in the charts, and the
    summary counts them apart."""
    per_topic = one_minute.tables["per_topic"].set_index("topic")
    assert per_topic["kind"].to_dict() == {"Orders": "user", "Payments": "user",
                                           "%RETRY%billing": "retry", "%DLQ%billing": "dlq"}
    assert per_topic.loc["%DLQ%billing", "group"] == "billing"
    system = one_minute.tables["system_topics"].set_index("topic")["messages"].to_dict()
    assert system == {RMQ_SYS_SCHEDULE_TOPIC: 3, TIMER_TOPIC: 3}
    assert one_minute.summary[0] == (
        f"30 messages, {int(per_topic.loc[['Orders', 'Payments'], 'bytes'].sum())} bytes in "
        "2 user topics")
    assert one_minute.summary[1] == ("1 retries and 1 dead letters in the retry and DLQ topics "
                                     "of 1 group(s): billing")
    assert (f"system topics, counted apart: {RMQ_SYS_SCHEDULE_TOPIC} (3 records), "
            f"{TIMER_TOPIC} (3 records)") in one_minute.summary
    ax = _axes(one_minute, "bytes_per_topic.png")
    names = [t.get_text() for t in ax.get_xticklabels()]
    assert sorted(names) == ["Orders", "Payments", "dead letters of billing",
                             "retries of billing"]


def test_every_axis_of_every_chart_has_its_unit(one_minute, two_days):
    """No chart leaves an axis unnamed; a byte axis is scaled to the unit it shows."""
    for report in (one_minute, two_days):
        for chart in report.charts:
            ax = _axes(report, chart.file_name)
            assert ax.get_xlabel() and ax.get_ylabel(), chart.file_name
            assert chart.table in report.tables, chart.file_name
    ax = _axes(two_days, "bytes_per_topic.png")
    assert ax.get_ylabel() == "KiB"
    assert pd.Series([p.get_height() for p in ax.patches]).max() < 1024
