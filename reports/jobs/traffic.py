"""traffic: messages and bytes per topic per minute and hour, top producers, size distribution.

Every stored record counts (system topics included: a delayed message is stored twice, once in
SCHEDULE_TOPIC_XXXX and once re-put in its real topic), except RocketMQ 5 POP's bookkeeping: the
check point and ack records of the revive topics (``rmq_sys_REVIVE_LOG_<cluster>``) are not user
messages, so they are left out of every table and counted apart in ``pop_revive_log`` (per
revive topic). The copies POP revives into ``%RETRY%<group>_<topic>`` are stored messages and
count, as 4.x retries do. Bytes are TOTALSIZE (what the record
occupies in the commitlog); the size distribution is over BODYLENGTH, in power-of-two buckets.
A producer is the born host's IP address. Every table has a ``brokerName`` column; with
several brokers, rows whose ``brokerName`` is ``(cluster)`` total the whole cluster.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from rocketmq_emu.broker.pop.names import is_revive_topic
from rocketmq_emu.reports import charts
from rocketmq_emu.reports.inputs import BROKER, CLUSTER, Inputs, by_broker, totals
from rocketmq_emu.reports.jobs import pop
from rocketmq_emu.reports.jobs.common import error_notes, split_errors, to_pandas
from rocketmq_emu.reports.report import Chart, Progress, Report

NAME = "traffic"
STAGES = 6
TOP_PRODUCERS = 20
COLUMNS = ["topic", "storeTimestamp", "totalSize", "bodyLength", "bornHost"]


def _per_period(good, unit: str, several: bool):
    return to_pandas(
        by_broker(good, ["topic", F.date_trunc(unit, "storeTimestamp").alias(unit)],
                  [F.count("*").alias("messages"), F.sum("totalSize").alias("bytes")], several),
        order=(unit, "topic", BROKER))


def run(spark: SparkSession, source: Inputs | str, progress: Progress | None = None,
        **_: object) -> Report:
    """Compute the traffic report for ``source`` (a store path or the run's Inputs)."""
    inputs = Inputs.of(spark, source)
    several = inputs.several
    progress = progress or Progress(NAME, STAGES)
    report = Report(NAME, "Traffic per topic", inputs.description)
    with progress.stage("scan commitlog (topic, time, sizes, born host)"):
        df = inputs.commitlog(COLUMNS)
        good, bad = split_errors(df)
        errors = inputs.errors(bad)
        user = good.where(~pop.is_revive())
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
    with progress.stage("per topic per minute and per hour"):
        per_minute = _per_period(user, "minute", several)
        per_hour = _per_period(user, "hour", several)
    with progress.stage("top producers (born host)"):
        ip = F.regexp_replace(F.regexp_extract("bornHost", r"^(.*):\d+$", 1), r"[\[\]]", "")
        producers = to_pandas(
            by_broker(user.withColumn("producer", ip), ["producer"], [
                F.count("*").alias("messages"),
                F.sum("totalSize").alias("bytes"),
                F.countDistinct("topic").alias("topics"),
            ], several)
            .orderBy(F.desc("messages"), "producer", BROKER)
            .limit(TOP_PRODUCERS * (len(inputs.stores) + several))
        )
    with progress.stage("body size distribution"):
        bucket = F.when(F.col("bodyLength") <= 0, F.lit(0)).otherwise(
            F.pow(F.lit(2), F.ceil(F.log2(F.col("bodyLength")))).cast("long")
        )
        sizes = to_pandas(
            by_broker(user, [bucket.alias("bodyBytesUpTo")], [F.count("*").alias("messages")],
                      several),
            order=("bodyBytesUpTo", BROKER))
    inputs.release(df)
    with progress.stage("charts"):
        report.tables = {
            "per_topic": per_topic,
            "per_topic_minute": per_minute,
            "per_topic_hour": per_hour,
            "top_producers": producers,
            "size_distribution": sizes,
            "pop_revive_log": revive,
        }
        cluster = totals(per_topic, several)
        top = list(cluster["topic"].head(8))
        minute = totals(per_minute, several)
        report.charts = [
            Chart("messages_per_minute.png", "Messages per minute (top topics)",
                  charts.lines(minute[minute["topic"].isin(top)], "minute",
                               "messages", "topic", "messages")),
            Chart("bytes_per_topic.png", "Bytes per topic",
                  charts.bars(cluster.head(20), "topic", ["bytes"], "bytes")),
            Chart("top_producers.png", "Top producers (messages)",
                  charts.bars(totals(producers, several), "producer", ["messages"], "messages")),
            Chart("size_distribution.png", "Body size distribution (bytes, upper bound)",
                  charts.bars(totals(sizes, several), "bodyBytesUpTo", ["messages"],
                              "messages")),
        ]
        if several:
            report.charts.append(Chart(
                "messages_per_broker.png", "Messages per broker and topic (top topics)",
                charts.grouped_bars(per_topic[per_topic["topic"].isin(top)
                                              & (per_topic[BROKER] != CLUSTER)],
                                    "topic", BROKER, "messages", "messages")))
        total = int(cluster["messages"].sum()) if not cluster.empty else 0
        total_bytes = int(cluster["bytes"].sum()) if not cluster.empty else 0
        report.summary = [
            f"{total} messages, {total_bytes} bytes in {len(cluster)} topics"
            + (f" on {len(inputs.stores)} brokers" if several else ""),
            f"{len(totals(producers, several))} producers (born host IP) shown",
        ]
        revive_total = totals(revive, several)
        if not revive_total.empty:
            report.summary.append(
                f"not counted: {int(revive_total['records'].sum())} POP check point/ack records "
                f"({int(revive_total['bytes'].sum())} bytes) in "
                f"{', '.join(revive_total['topic'])}")
        report.notes = error_notes(errors)
    return report
