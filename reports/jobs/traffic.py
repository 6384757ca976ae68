"""traffic: messages and bytes per topic per minute and hour, top producers, size distribution.

Every stored record counts (system topics included: a delayed message is stored twice, once in
SCHEDULE_TOPIC_XXXX and once re-put in its real topic), except RocketMQ 5 POP's bookkeeping: the
check point and ack records of the revive topics (``rmq_sys_REVIVE_LOG_<cluster>``) are not user
messages, so they are left out of every table and counted apart in ``pop_revive_log`` (per
revive topic). The copies POP revives into ``%RETRY%<group>_<topic>`` are stored messages and
count, as 4.x retries do. Bytes are TOTALSIZE (what the record
occupies in the commitlog); the size distribution is over BODYLENGTH, in power-of-two buckets.
A producer is the born host's IP address.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from rocketmq_emu.broker.pop.names import is_revive_topic
from rocketmq_emu.reports import charts
from rocketmq_emu.reports.jobs import pop
from rocketmq_emu.reports.jobs.common import commitlog, error_notes, split_errors, to_pandas
from rocketmq_emu.reports.report import Chart, Progress, Report

NAME = "traffic"
STAGES = 6
TOP_PRODUCERS = 20
COLUMNS = ["topic", "storeTimestamp", "totalSize", "bodyLength", "bornHost"]


def _per_period(good, unit: str):
    return (
        good.groupBy("topic", F.date_trunc(unit, "storeTimestamp").alias(unit))
        .agg(F.count("*").alias("messages"), F.sum("totalSize").alias("bytes"))
        .orderBy(unit, "topic")
    )


def run(spark: SparkSession, store: str, progress: Progress | None = None, **_: object) -> Report:
    """Compute the traffic report for ``store``."""
    progress = progress or Progress(NAME, STAGES)
    report = Report(NAME, "Traffic per topic", store)
    with progress.stage("scan commitlog (topic, time, sizes, born host)"):
        df = commitlog(spark, store, COLUMNS).persist(StorageLevel.MEMORY_AND_DISK)
        good, bad = split_errors(df)
        errors = to_pandas(bad)
        user = good.where(~pop.is_revive())
    with progress.stage("messages and bytes per topic"):
        per_topic = to_pandas(
            good.groupBy("topic")
            .agg(
                F.count("*").alias("messages"),
                F.sum("totalSize").alias("bytes"),
                F.sum("bodyLength").alias("bodyBytes"),
                F.min("storeTimestamp").alias("firstStored"),
                F.max("storeTimestamp").alias("lastStored"),
            )
            .orderBy(F.desc("messages"), "topic")
        )
        revive_rows = per_topic["topic"].map(is_revive_topic).astype(bool)
        revive = (per_topic[revive_rows].drop(columns=["bodyBytes"])
                  .rename(columns={"messages": "records"}).sort_values("topic")
                  .reset_index(drop=True))
        per_topic = per_topic[~revive_rows].reset_index(drop=True)
    with progress.stage("per topic per minute and per hour"):
        per_minute = to_pandas(_per_period(user, "minute"))
        per_hour = to_pandas(_per_period(user, "hour"))
    with progress.stage("top producers (born host)"):
        ip = F.regexp_replace(F.regexp_extract("bornHost", r"^(.*):\d+$", 1), r"[\[\]]", "")
        producers = to_pandas(
            user.withColumn("producer", ip)
            .groupBy("producer")
            .agg(
                F.count("*").alias("messages"),
                F.sum("totalSize").alias("bytes"),
                F.countDistinct("topic").alias("topics"),
            )
            .orderBy(F.desc("messages"), "producer")
            .limit(TOP_PRODUCERS)
        )
    with progress.stage("body size distribution"):
        bucket = F.when(F.col("bodyLength") <= 0, F.lit(0)).otherwise(
            F.pow(F.lit(2), F.ceil(F.log2(F.col("bodyLength")))).cast("long")
        )
        sizes = to_pandas(
            user.groupBy(bucket.alias("bodyBytesUpTo"))
            .agg(F.count("*").alias("messages"))
            .orderBy("bodyBytesUpTo")
        )
    df.unpersist()
    with progress.stage("charts"):
        report.tables = {
            "per_topic": per_topic,
            "per_topic_minute": per_minute,
            "per_topic_hour": per_hour,
            "top_producers": producers,
            "size_distribution": sizes,
            "pop_revive_log": revive,
        }
        top = list(per_topic["topic"].head(8))
        report.charts = [
            Chart("messages_per_minute.png", "Messages per minute (top topics)",
                  charts.lines(per_minute[per_minute["topic"].isin(top)], "minute",
                               "messages", "topic", "messages")),
            Chart("bytes_per_topic.png", "Bytes per topic",
                  charts.bars(per_topic.head(20), "topic", ["bytes"], "bytes")),
            Chart("top_producers.png", "Top producers (messages)",
                  charts.bars(producers, "producer", ["messages"], "messages")),
            Chart("size_distribution.png", "Body size distribution (bytes, upper bound)",
                  charts.bars(sizes, "bodyBytesUpTo", ["messages"], "messages")),
        ]
        total = int(per_topic["messages"].sum()) if not per_topic.empty else 0
        total_bytes = int(per_topic["bytes"].sum()) if not per_topic.empty else 0
        report.summary = [
            f"{total} messages, {total_bytes} bytes in {len(per_topic)} topics",
            f"{len(producers)} producers (born host IP) shown",
        ]
        if not revive.empty:
            report.summary.append(
                f"not counted: {int(revive['records'].sum())} POP check point/ack records "
                f"({int(revive['bytes'].sum())} bytes) in {', '.join(revive['topic'])}")
        report.notes = error_notes(errors)
    return report
