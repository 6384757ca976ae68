"""Each report's numbers against a hand count of the fixture store (see conftest.py)."""

from __future__ import annotations

import argparse
import contextlib
import html
import io
import os
import re

import pandas as pd
import pytest

from rocketmq_emu.reports.output import write_report
from rocketmq_emu.reports.report import Progress

pytestmark = pytest.mark.spark


def _quiet(name: str) -> Progress:
    return Progress(name, 9, stream=io.StringIO())


@pytest.fixture(scope="module")
def traffic(spark, store):
    from rocketmq_emu.reports.jobs import traffic

    return traffic.run(spark, store.root, _quiet("traffic"))


def test_traffic_counts_messages_and_bytes_per_topic(traffic, store):
    """TopicA holds 12 sends + 2 delayed re-puts; TopicB 5; bytes are the records' TOTALSIZE.
    The system topics' 9 records (6 delay-level copies, 2 timer records, 1 half message) are
    counted apart, in system_topics: 34 records in all."""
    per_topic = traffic.tables["per_topic"].set_index("topic")
    assert per_topic.loc["TopicA", "messages"] == 14
    assert per_topic.loc["TopicB", "messages"] == 5
    assert per_topic.loc["%RETRY%G1", "messages"] == 2
    assert per_topic.loc["%RETRY%G1", "group"] == "G1"
    assert per_topic["messages"].sum() == 25
    system = traffic.tables["system_topics"].set_index("topic")["messages"].to_dict()
    assert system == {"SCHEDULE_TOPIC_XXXX": 6, "rmq_sys_wheel_timer": 2,
                      "RMQ_SYS_TRANS_HALF_TOPIC": 1}
    sizes_b = [r.total_size for r in store.records if r.topic == "TopicB"]
    assert per_topic.loc["TopicB", "bytes"] == sum(sizes_b)


def test_traffic_per_minute_and_hour(traffic):
    """TopicA's 12 sends fall 3 per minute in 22:00-22:03; the hour 22:00 holds all 12."""
    minute = traffic.tables["per_topic_minute"]
    a = minute[(minute["topic"] == "TopicA")
               & (minute["minute"] < pd.Timestamp("2023-11-14 22:10"))]
    assert list(a["messages"]) == [3, 3, 3, 3]
    hour = traffic.tables["per_topic_hour"]
    row = hour[(hour["topic"] == "TopicA") & (hour["hour"] == pd.Timestamp("2023-11-14 22:00"))]
    assert list(row["messages"]) == [12]


def test_traffic_top_producers_and_sizes(traffic):
    """10.0.0.1 sent 12 and 10.0.0.4 6 (5 re-puts and a dead letter: the delay-level copies are
    system records); bodies of 5..115 bytes fall in buckets as counted, system records apart."""
    prod = traffic.tables["top_producers"].set_index("producer")
    assert prod.loc["10.0.0.1", "messages"] == 12 and prod.loc["10.0.0.4", "messages"] == 6
    assert prod.loc["10.0.0.2", "messages"] == 4 and prod.loc["::1", "messages"] == 1
    sizes = dict(zip(traffic.tables["size_distribution"]["bodyBytesUpTo"],
                     traffic.tables["size_distribution"]["messages"], strict=True))
    # TopicA bodies 5,15,...,115 -> <=8:1 <=16:1 <=32:1 <=64:3 <=128:6; TopicB 4x100 (<=128)
    # and a 5000-byte body zlib-compressed to under 32 bytes; TopicC "committed" (<=16); 6
    # re-put "delayed <32 chars>" bodies of 40 (<=64); the re-put "timer" (<=8). Not counted:
    # the half message, the 6 SCHEDULE_TOPIC_XXXX copies, the 2 timer-wheel records.
    assert sizes == {8: 2, 16: 2, 32: 2, 64: 9, 128: 10}


def test_delays_lateness_per_level(spark, store):
    """Level 3: re-puts 100, 1000, 1500 ms late and one pending; timer: 500 ms and one pending."""
    from rocketmq_emu.reports.jobs import delays

    report = delays.run(spark, store.root, _quiet("delays"))
    by = report.tables["lateness_by_level"].set_index("kind")
    assert by.loc["level 2", ["scheduled", "delivered", "pending", "maxMs"]].tolist() == [1, 1, 0, 200]
    lv3 = by.loc["level 3"]
    assert (lv3["scheduled"], lv3["delivered"], lv3["pending"]) == (4, 3, 1)
    assert (lv3["p50Ms"], lv3["p90Ms"], lv3["maxMs"]) == (1000, 1400, 1500)
    assert by.loc["level 4", "p50Ms"] == 2500
    assert by.loc["timer", ["scheduled", "delivered", "pending", "p50Ms"]].tolist() == [2, 1, 1, 500]
    pending = report.tables["pending"]
    assert sorted(pending["uniqKey"].str[:2]) == ["D3", "M2"]
    day = report.tables["lateness_by_day"]
    assert list(day["deliverDay"].astype(str).unique()) == ["2023-11-15"]


def test_consumers_lag_from_offsets_and_consume_queues(spark, store):
    """G1: TopicA lags 4+0+0+3 and %RETRY%G1 1 (total 8); G2: TopicB 5-2 = 3."""
    from rocketmq_emu.reports.jobs import consumers

    report = consumers.run(spark, store.root, _quiet("consumers"))
    q = report.tables["lag_by_queue"].set_index(["group", "topic", "queueId"])
    assert q.loc[("G1", "TopicA", 0), "maxOffset"] == 5
    assert [q.loc[("G1", "TopicA", i), "lag"] for i in range(4)] == [4, 0, 0, 3]
    assert q.loc[("G1", "%RETRY%G1", 0), "lag"] == 1
    assert q.loc[("G2", "TopicB", 0), "lag"] == 3
    g = report.tables["lag_by_group"].set_index("group")
    assert g.loc["G1", "lag"] == 8 and g.loc["G2", "lag"] == 3


def test_retries_and_dlq_counts(spark, store, tmp_path):
    """G1 retried one TopicA message twice and dead-lettered it; G2 retried one TopicB once."""
    from rocketmq_emu.reports.jobs import retries

    report = retries.run(spark, store.root, _quiet("retries"))
    t = report.tables["retries_by_group_topic"].set_index(["group", "originalTopic"])
    cols = ["retries", "retriedMessages", "maxReconsumeTimes", "scheduledRetries", "dlq"]
    assert t.loc[("G1", "TopicA"), cols].tolist() == [2, 1, 2, 2, 1]
    assert t.loc[("G2", "TopicB"), cols].tolist() == [1, 1, 1, 1, 0]
    dlq = report.tables["dlq_messages"]
    assert dlq[["group", "originalTopic", "originMessageId", "reconsumeTimes"]].values.tolist() == [
        ["G1", "TopicA", "ORIG1", 3]
    ]
    page = write_report(report, str(tmp_path))
    html = open(page, encoding="utf-8").read()
    assert "data:image/png;base64," in html and "dlq_messages" in html
    for name in ("retries_by_group_topic", "dlq_messages"):
        assert os.path.exists(tmp_path / "retries" / f"{name}.parquet")
        assert pd.read_csv(tmp_path / "retries" / f"{name}.csv").shape[0] == len(report.tables[name])


@pytest.fixture(scope="module")
def report_all(spark, store, tmp_path_factory):
    """`rmq-emu report all` run once through the CLI: its output directory, stdout and stderr."""
    from rocketmq_emu.reports import cli

    out = tmp_path_factory.mktemp("report-all")
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["report", "all", "--store", store.root,
                              "--out", str(out), "--master", "local[2]"])
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        assert args.func(args) == 0
    return out, stdout.getvalue(), stderr.getvalue()


def test_report_command_writes_every_output(spark, report_all):
    """`rmq-emu report` writes Parquet, CSV, PNG and index.html per report and prints progress."""
    out, stdout, stderr = report_all
    assert "[consumers 1/5]" in stderr and "done in" in stderr
    assert str(out / "consumers" / "index.html") in stdout
    files = set(os.listdir(out / "consumers"))
    assert {"index.html", "lag_by_group.parquet", "lag_by_group.csv", "lag_by_group.png"} <= files
    assert spark.range(3).count() == 3  # the shared session survived


def test_report_all_writes_an_index_linking_the_four_reports(report_all):
    """`rmq-emu report all` writes index.html in the output directory linking each report's
    page, saying in a sentence what each shows, and showing each chart beside a link to the CSV
    it is drawn from (relative links, every one to a file that is there)."""
    from rocketmq_emu.reports.jobs import consumers, delays, retries, traffic

    out, stdout, _ = report_all
    index = out / "index.html"
    assert f"all: {index}" in stdout
    page = index.read_text(encoding="utf-8")
    links = re.findall(r"href='([^']+)'", page)
    pages = [link for link in links if link.endswith("index.html")]
    assert pages == [f"{name}/index.html" for name in ("traffic", "delays", "consumers", "retries")]
    assert all((out / link).is_file() for link in links)
    for job in (traffic, delays, consumers, retries):
        assert html.escape(job.DESCRIPTION, quote=True) in page, job.NAME
    figures = re.findall(r"<figure><a href='([^']+)'>.*?data: <a href='([^']+)'>", page)
    assert ("traffic/messages_over_time.png", "traffic/messages_over_time.csv") in figures
    assert ("consumers/lag_by_group.png", "consumers/lag_by_group.csv") in figures
    assert len(figures) == len(re.findall(r"<img ", page))


def test_consumer_offsets_accept_fastjson_unquoted_keys(tmp_path):
    """consumerOffset.json as Java's fastjson writes it (bare int keys) is read."""
    from rocketmq_emu.reports.jobs.consumers import read_offsets

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "consumerOffset.json").write_text(
        '{"offsetTable":{"TopicA@G1":{0:5,1:7},"%RETRY%G1@G1":{0:2}}}'
    )
    rows = read_offsets(str(tmp_path)).drop(columns=["brokerName"]).values.tolist()
    assert rows == [["G1", "TopicA", 0, 5], ["G1", "TopicA", 1, 7], ["G1", "%RETRY%G1", 0, 2]]


# --- RocketMQ 5 POP (the pop_store fixture: storegen.build_pop_store) -----------------------------
REVIVE = "rmq_sys_REVIVE_LOG_DefaultCluster"
POP_RETRY = "%RETRY%pop_g_TopicP"


@pytest.fixture(scope="module")
def pop_traffic(spark, pop_store):
    from rocketmq_emu.reports.jobs import traffic

    return traffic.run(spark, pop_store, _quiet("traffic"))


@pytest.fixture(scope="module")
def pop_consumers(spark, pop_store):
    from rocketmq_emu.reports.jobs import consumers

    return consumers.run(spark, pop_store, _quiet("consumers"))


@pytest.fixture(scope="module")
def pop_retries(spark, pop_store):
    from rocketmq_emu.reports.jobs import retries

    return retries.run(spark, pop_store, _quiet("retries"))


def test_traffic_counts_pop_topics_without_the_revive_log(pop_traffic):
    """TopicP 6, its POP retry topic 3, the DLQ 1; the revive topic is no user topic."""
    per_topic = pop_traffic.tables["per_topic"].set_index("topic")
    assert per_topic["messages"].to_dict() == {"TopicP": 6, POP_RETRY: 3, "%DLQ%pop_g": 1}


def test_traffic_counts_revive_records_apart(pop_traffic):
    """The 4 ck + 8 ack + 2 bAck records are counted in pop_revive_log and the summary only."""
    revive = pop_traffic.tables["pop_revive_log"]
    assert revive[["topic", "records"]].values.tolist() == [[REVIVE, 14]]
    assert any(line.startswith("not counted: 14 POP check point/ack records")
               for line in pop_traffic.summary)


def test_traffic_producers_leave_out_revive_records(pop_traffic):
    """The broker's host is the producer of the 3 revived copies and the dead letter, not of
    the revive records; the client sent TopicP's 6."""
    prod = pop_traffic.tables["top_producers"].set_index("producer")["messages"].to_dict()
    assert prod == {"10.0.0.9": 6, "192.168.0.11": 4}


def test_consumers_lag_of_pop_groups(pop_consumers):
    """Both POP groups committed 4 of TopicP queue 0's 6; pop_g's retry topic is read to its end."""
    q = pop_consumers.tables["lag_by_queue"].set_index(["group", "topic", "queueId"])
    assert q.loc[("pop_g", "TopicP", 0), ["committedOffset", "maxOffset", "lag"]].tolist() == [
        4, 6, 2]
    assert q.loc[("GQ", "TopicP", 0), "lag"] == 2
    assert q.loc[("pop_g", POP_RETRY, 0), ["committedOffset", "maxOffset", "lag"]].tolist() == [
        3, 3, 0]
    g = pop_consumers.tables["lag_by_group"].set_index("group")["lag"].to_dict()
    assert g == {"pop_g": 2, "GQ": 2}


def test_consumers_name_the_topic_a_pop_retry_topic_is_for(pop_consumers):
    """retryOf is TopicP on %RETRY%pop_g_TopicP and null on TopicP itself."""
    t = pop_consumers.tables["lag_by_group_topic"].set_index(["group", "topic"])["retryOf"]
    assert t[("pop_g", POP_RETRY)] == "TopicP"
    assert pd.isna(t[("pop_g", "TopicP")]) and pd.isna(t[("GQ", "TopicP")])


def test_consumers_list_revive_offsets_apart(pop_consumers):
    """The revive group's offsets go to revive_offsets with each revive queue's max offset."""
    revive = pop_consumers.tables["revive_offsets"].drop(columns=["brokerName"])
    assert revive.values.tolist() == [[REVIVE, 0, 3, 4], [REVIVE, 1, 4, 5], [REVIVE, 2, 2, 3],
                                      [REVIVE, 3, 1, 2]]
    assert not pop_consumers.tables["lag_by_queue"]["topic"].str.startswith("rmq_sys_").any()


def test_retries_attribute_pop_retry_topic_to_group_and_topic(pop_retries):
    """%RETRY%pop_g_TopicP's 3 copies (P2 once, P3 twice) are pop_g's retries of TopicP."""
    t = pop_retries.tables["retries_by_group_topic"].set_index(["group", "originalTopic"])
    cols = ["retries", "retriedMessages", "maxReconsumeTimes", "scheduledRetries", "dlq",
            "popRetries"]
    assert t.loc[("pop_g", "TopicP"), cols].tolist() == [3, 2, 2, 0, 1, 3]
    assert set(t.index) == {("pop_g", "TopicP"), ("GQ", "TopicP")}


def test_retries_count_pop_checkpoints_and_acks_per_group(pop_retries):
    """pop_g: 3 ck, 4 ack, 2 bAck (retry-topic ones under TopicP); GQ: 1 ck, 4 ack, no retry."""
    t = pop_retries.tables["retries_by_group_topic"].set_index(["group", "originalTopic"])
    cols = ["popCheckpoints", "popAcks", "popBatchAcks", "retries"]
    assert t.loc[("pop_g", "TopicP"), cols].tolist() == [3, 4, 2, 3]
    assert t.loc[("GQ", "TopicP"), cols].tolist() == [1, 4, 0, 0]
    assert "2 POP groups (3 of the retries in POP retry topics)" in pop_retries.summary


def test_retries_dead_letter_of_pop_retry_names_original_topic(pop_retries):
    """P3 forwarded from %RETRY%pop_g_TopicP to %DLQ%pop_g is a dead letter of TopicP."""
    dlq = pop_retries.tables["dlq_messages"]
    assert dlq[["group", "originalTopic", "uniqKey", "reconsumeTimes"]].values.tolist() == [
        ["pop_g", "TopicP", f"P{3:031d}", 3]
    ]


def test_pop_retry_topic_v1_needs_its_group():
    """%RETRY%pop_g_TopicP is attributed once a (topic, group) pair names pop_g, never alone."""
    from rocketmq_emu.reports.jobs.pop import PopRetryTopics

    assert PopRetryTopics().owner(POP_RETRY) is None
    assert PopRetryTopics().add_pairs([("TopicP", "pop_g")]).owner(POP_RETRY) == (
        "pop_g", "TopicP")
    assert PopRetryTopics().add_pairs([(POP_RETRY, "pop_g")]).owner(POP_RETRY) == (
        "pop_g", "TopicP")


def test_pop_retry_topic_v2_splits_by_itself():
    """%RETRY%g+T (enableRetryTopicV2) is group g's retry of T without any pair."""
    from rocketmq_emu.reports.jobs.pop import PopRetryTopics

    assert PopRetryTopics().owner("%RETRY%my_g+TopicX") == ("my_g", "TopicX")


def test_4x_retry_topic_is_not_a_pop_one():
    """%RETRY%G1 with an offset of G1 on it stays a 4.x retry topic."""
    from rocketmq_emu.reports.jobs.pop import PopRetryTopics

    topics = PopRetryTopics().add_pairs([("%RETRY%G1", "G1"), ("TopicA", "G1")])
    assert topics.owner("%RETRY%G1") is None


def test_report_all_names_a_corrupt_record_in_each_scanning_report(spark, store, tmp_path):
    """One destroyed record in the shared scan: traffic, delays and retries each note it, with
    file and offset, from the one collection of corrupt rows."""
    from test_commitlog_source import _corrupt_copy

    from rocketmq_emu.reports.cli import run_argv

    root, offset = _corrupt_copy(store, tmp_path, 5)
    out = tmp_path / "out"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert run_argv(["all", "--store", root, "--out", str(out)]) == 0
    name = f"{offset - offset % 2048:020d}"
    for report in ("traffic", "delays", "retries"):
        page = (out / report / "index.html").read_text(encoding="utf-8")
        assert "1 corrupt record(s) skipped" in page and name in page, report
