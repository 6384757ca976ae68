"""traffic: messages and bytes per topic, over time, per minute and hour, top producers, size
distribution.

``per_topic`` holds the user's topics and their retry and DLQ topics (``kind`` says which,
``group`` names the group of a retry or DLQ topic; the charts name those topics by it). The
broker's system topics (:mod:`rocketmq_emu.reports.topics`: a delayed message is stored twice,
once in SCHEDULE_TOPIC_XXXX and once re-put in its real topic) are counted apart, in
``system_topics``, and left out of the other tables and of the charts. RocketMQ 5 POP's bookkeeping, the check point
and ack records of the revive topics (``rmq_sys_REVIVE_LOG_<cluster>``), are not messages at
all: they are left out of every other table and counted in ``pop_revive_log`` (per revive
topic). The copies POP revives into ``%RETRY%<group>_<topic>`` are stored messages and count,
as 4.x retries do. ``messages_over_time`` counts the non-system topics per bucket of a size
that fits the data's span (:func:`rocketmq_emu.reports.charts.time_bucket`: seconds for a
store written in a minute, days for one written over weeks). Bytes are TOTALSIZE (what the record
occupies in the commitlog); the size distribution is over BODYLENGTH, in power-of-two buckets. Bytes are TOTALSIZE (what the record
occupies in the commitlog); the size distribution is over BODYLENGTH, in power-of-two buckets.
A producer is the born host's IP address. Every table has a ``brokerName`` column; with
several brokers, rows whose ``brokerName`` is ``(cluster)`` total the whole cluster.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from rocketmq_emu.broker.pop.names import is_revive_topic
from rocketmq_emu.reports import charts
from rocketmq_emu.reports.inputs import BROKER, CLUSTER, Inputs, by_broker, totals
from rocketmq_emu.reports.jobs.common import error_notes, split_errors, store_ms, to_pandas
from rocketmq_emu.reports.report import Chart, Progress, Report
from rocketmq_emu.reports.topics import (
    DLQ,
    RETRY,
    SYSTEM,
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
    USER,
    group_of,
    label,
    topic_kind,
)

NAME = "traffic"
STAGES = 5
TOP_PRODUCERS = 20
TOP_TOPICS = 8
DESCRIPTION = ("How many messages and bytes each topic stored, over time, from which producers "
               "and with what body sizes; retry and DLQ topics are named by their group and the "
               "broker's system topics are counted apart.")
COLUMNS = ["topic", "storeTimestamp", "totalSize", "bodyLength", "bornHost"]


def _rollup(fine, seconds: int, column: str):
    """``fine`` (messages and bytes per broker, topic and ``start``) summed into buckets of
    ``seconds``, epoch-aligned in UTC as Spark's ``date_trunc`` (minute, hour) cuts them."""
    if fine.empty:
        return fine.rename(columns={"start": column})
    return (fine.assign(start=fine["start"].dt.floor(f"{seconds}s"))
            .groupby([BROKER, "topic", "start"], as_index=False)[["messages", "bytes"]].sum()
            .rename(columns={"start": column})
            .sort_values([column, "topic", BROKER]).reset_index(drop=True))


def _is_system(topic: str = "topic"):
    """True for a system topic's record (:func:`rocketmq_emu.reports.topics.topic_kind`)."""
    return F.col(topic).isin(*sorted(SYSTEM_TOPICS)) | F.col(topic).startswith(SYSTEM_TOPIC_PREFIX)


def run(spark: SparkSession, source: Inputs | str, progress: Progress | None = None,
        **_: object) -> Report:
    """Compute the traffic report for ``source`` (a store path or the run's Inputs)."""
    inputs = Inputs.of(spark, source)
    several = inputs.several
    progress = progress or Progress(NAME, STAGES)
    report = Report(NAME, "Traffic per topic", inputs.description, DESCRIPTION)
    with progress.stage("scan commitlog (topic, time, sizes, born host)"):
        df = inputs.commitlog(COLUMNS)
        good, bad = split_errors(df)
        errors = inputs.errors(bad)
        # The user's topics and their retry/DLQ topics: what every table but per-topic counts.
        user = good.where(~_is_system())
    # Producers and sizes depend on nothing else here: their Spark jobs run beside the chain
    # per topic -> time span -> per bucket, which is the report's longest.
    with ThreadPoolExecutor(max_workers=2) as pool:
        producers_job = pool.submit(_producers, user, several, len(inputs.stores))
        sizes_job = pool.submit(_sizes, user, several)
        report.tables, chart_args = _tables(good, user, several, progress, producers_job,
                                            sizes_job)
    inputs.release(df)
    with progress.stage("charts"):
        per_topic, over_time, producers, sizes, system, revive, bucket_seconds, bucket_name = \
            chart_args
        _charts(report, per_topic, over_time, producers, sizes, several, bucket_seconds,
                bucket_name)
        report.summary = _summary(per_topic, system, revive, producers, several,
                                  len(inputs.stores), bucket_name)
        report.notes = error_notes(errors)
    return report


def _producers(user, several: bool, stores: int):
    """The top producers (born host IP), per broker and over the cluster."""
    ip = F.regexp_replace(F.regexp_extract("bornHost", r"^(.*):\d+$", 1), r"[\[\]]", "")
    return to_pandas(
        by_broker(user.withColumn("producer", ip), ["producer"], [
            F.count("*").alias("messages"),
            F.sum("totalSize").alias("bytes"),
            F.countDistinct("topic").alias("topics"),
        ], several)
        .orderBy(F.desc("messages"), "producer", BROKER)
        .limit(TOP_PRODUCERS * (stores + several))
    )


def _sizes(user, several: bool):
    """Messages per power-of-two body size bucket."""
    bucket = F.when(F.col("bodyLength") <= 0, F.lit(0)).otherwise(
        F.pow(F.lit(2), F.ceil(F.log2(F.col("bodyLength")))).cast("long")
    )
    return to_pandas(
        by_broker(user, [bucket.alias("bodyBytesUpTo")], [F.count("*").alias("messages")],
                  several),
        order=("bodyBytesUpTo", BROKER))


def _tables(good, user, several: bool, progress: Progress, producers_job, sizes_job):
    """The report's tables (per topic, over time, per minute and hour, producers, sizes,
    system topics, revive log) and what the charts are drawn from."""
    with progress.stage("messages and bytes per topic"):
        per_topic = to_pandas(
            by_broker(good, ["topic"], [
                F.count("*").alias("messages"),
                F.sum("totalSize").alias("bytes"),
                F.sum("bodyLength").alias("bodyBytes"),
                F.min("storeTimestamp").alias("firstStored"),
                F.max("storeTimestamp").alias("lastStored"),
            ], several),
            order=("-messages", "topic", BROKER))
        revive_rows = per_topic["topic"].map(is_revive_topic).astype(bool)
        revive = (per_topic[revive_rows].drop(columns=["bodyBytes"])
                  .rename(columns={"messages": "records"}).sort_values(["topic", BROKER])
                  .reset_index(drop=True))
        per_topic = per_topic[~revive_rows].reset_index(drop=True)
        after_topic = per_topic.columns.get_loc("topic") + 1
        per_topic.insert(after_topic, "kind", per_topic["topic"].map(topic_kind))
        per_topic.insert(after_topic + 1, "group", per_topic["topic"].map(group_of))
        system_rows = per_topic["kind"] == SYSTEM
        system = per_topic[system_rows].drop(columns=["kind", "group"]).reset_index(drop=True)
        per_topic = per_topic[~system_rows].reset_index(drop=True)
    with progress.stage("per topic over the data's span, per minute and per hour"):
        first, last = per_topic["firstStored"].min(), per_topic["lastStored"].max()
        span_ms = (last - first).total_seconds() * 1000 if not per_topic.empty else 0
        bucket_seconds, bucket_name = charts.time_bucket(span_ms)
        # One Spark query at the finest bucket any table needs (the chart's, or the minute):
        # the coarser tables are its sums (every bucket size divides the next ones).
        fine_ms = min(bucket_seconds, 60) * 1000
        start = F.timestamp_millis(F.floor(store_ms() / fine_ms) * fine_ms)
        fine = to_pandas(
            by_broker(user, ["topic", start.alias("start")],
                      [F.count("*").alias("messages"), F.sum("totalSize").alias("bytes")],
                      several))
        per_minute = _rollup(fine, 60, "minute")
        per_hour = _rollup(fine, 3600, "hour")
        over_time = _rollup(fine, bucket_seconds, "bucketStart")
        over_time.insert(over_time.columns.get_loc("bucketStart") + 1, "bucketSeconds",
                         bucket_seconds)
    with progress.stage("top producers (born host) and body sizes"):
        producers = producers_job.result()
        sizes = sizes_job.result()
    tables = {
        "per_topic": per_topic,
        "messages_over_time": over_time,
        "per_topic_minute": per_minute,
        "per_topic_hour": per_hour,
        "top_producers": producers,
        "size_distribution": sizes,
        "system_topics": system,
        "pop_revive_log": revive,
    }
    return tables, (per_topic, over_time, producers, sizes, system, revive, bucket_seconds,
                    bucket_name)

def _labelled(frame, top: list[str]):
    """``frame``'s rows of the ``top`` topics, with ``topic`` as the charts name it."""
    rows = frame[frame["topic"].isin(top)].copy()
    rows["topic"] = rows["topic"].map(label)
    return rows


def _charts(report: Report, per_topic, over_time, producers, sizes, several: bool,
            bucket_seconds: int, bucket_name: str) -> None:
    cluster = totals(per_topic, several)
    top = list(cluster["topic"].head(TOP_TOPICS))
    report.charts = [
        Chart("messages_over_time.png",
              f"Messages per {bucket_name} (top {TOP_TOPICS} topics; system topics apart)",
              charts.timeline(_labelled(totals(over_time, several), top), "bucketStart",
                              "messages", "topic", bucket_seconds, bucket_name),
              "messages_over_time"),
        Chart("bytes_per_topic.png", "Bytes stored per topic (TOTALSIZE; system topics apart)",
              charts.bars(_labelled(cluster, list(cluster["topic"].head(20))), "topic",
                          ["bytes"], xlabel="topic", byte_values=True),
              "per_topic"),
        Chart("top_producers.png", "Top producers",
              charts.bars(totals(producers, several), "producer", ["messages"], "messages",
                          xlabel="producer (born host IP)"),
              "top_producers"),
        Chart("size_distribution.png", "Body size distribution",
              charts.bars(totals(sizes, several), "bodyBytesUpTo", ["messages"], "messages",
                          xlabel="body size up to (bytes)"),
              "size_distribution"),
    ]
    if several:
        report.charts.append(Chart(
            "messages_per_broker.png", f"Messages per broker (top {TOP_TOPICS} topics)",
            charts.grouped_bars(_labelled(per_topic[per_topic[BROKER] != CLUSTER], top),
                                "topic", BROKER, "messages", "messages", xlabel="topic"),
            "per_topic"))


def _summary(per_topic, system, revive, producers, several: bool, brokers: int,
             bucket_name: str) -> list[str]:
    cluster = totals(per_topic, several)
    users = cluster[cluster["kind"] == USER]
    again = cluster[cluster["kind"] != USER]
    lines = [
        f"{int(users['messages'].sum())} messages, {int(users['bytes'].sum())} bytes in "
        f"{len(users)} user topics" + (f" on {brokers} brokers" if several else ""),
    ]
    if not again.empty:
        retried = int(again.loc[again["kind"] == RETRY, "messages"].sum())
        dead = int(again.loc[again["kind"] == DLQ, "messages"].sum())
        groups = sorted(set(again["group"]))
        lines.append(f"{retried} retries and {dead} dead letters in the retry and DLQ topics "
                     f"of {len(groups)} group(s): {', '.join(groups)}")
    if not cluster.empty:
        first, last = cluster["firstStored"].min(), cluster["lastStored"].max()
        lines.append(f"stored from {first:%Y-%m-%d %H:%M:%S} to {last:%Y-%m-%d %H:%M:%S} UTC; "
                     f"the time chart counts per {bucket_name}")
    system_total = totals(system, several)
    if not system_total.empty:
        lines.append("system topics, counted apart: " + ", ".join(
            f"{row.topic} ({int(row.messages)} records)" for row in system_total.itertuples()))
    lines.append(f"{len(totals(producers, several))} producers (born host IP) shown")
    revive_total = totals(revive, several)
    if not revive_total.empty:
        lines.append(
            f"not counted: {int(revive_total['records'].sum())} POP check point/ack records "
            f"({int(revive_total['bytes'].sum())} bytes) in "
            f"{', '.join(revive_total['topic'])}")
    return lines
