"""retries: retry and DLQ counts per consumer group and original topic; the DLQ messages.

A retry is a record stored in ``%RETRY%<group>`` (the copy a consumer pulls again); a
scheduled retry is its SCHEDULE_TOPIC_XXXX copy (REAL_TOPIC ``%RETRY%<group>``, protocol.md
6.4); a dead letter is a record in ``%DLQ%<group>``. The original topic is the RETRY_TOPIC
property the broker sets on the first send-back (``SendMessageProcessor``).
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from rocketmq_emu.broker.message import (
    DLQ_GROUP_TOPIC_PREFIX,
    PROPERTY_ORIGIN_MESSAGE_ID,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_SCHEDULE_TOPIC,
)
from rocketmq_emu.reports import charts
from rocketmq_emu.reports.columns import ERROR_COLUMN
from rocketmq_emu.reports.jobs.common import commitlog, error_notes, split_errors, to_pandas
from rocketmq_emu.reports.report import Chart, Progress, Report

NAME = "retries"
STAGES = 4
COLUMNS = [
    "topic", "retryGroup", "dlqGroup", "retryTopic", "uniqKey", "reconsumeTimes",
    "storeTimestamp", "bornTimestamp", "bodyLength", "tags", "keys", "offsetMsgId",
    "properties",
]


def run(spark: SparkSession, store: str, progress: Progress | None = None, **_: object) -> Report:
    """Compute the retries report for ``store``."""
    progress = progress or Progress(NAME, STAGES)
    report = Report(NAME, "Retries and dead letters", store)
    with progress.stage("scan commitlog (retry, schedule and DLQ records)"):
        df = commitlog(spark, store, COLUMNS)
        # One pass: keep the retry/schedule/DLQ rows and the corrupt-record rows together.
        both = df.where(
            F.col(ERROR_COLUMN).isNotNull()
            | F.col("topic").startswith(RETRY_GROUP_TOPIC_PREFIX)
            | F.col("topic").startswith(DLQ_GROUP_TOPIC_PREFIX)
            | ((F.col("topic") == RMQ_SYS_SCHEDULE_TOPIC) & F.col("retryGroup").isNotNull())
        ).persist(StorageLevel.MEMORY_AND_DISK)
        good, bad = split_errors(both)
        errors = to_pandas(bad)
        rel = good.select(
            "*",
            F.coalesce("retryGroup", "dlqGroup").alias("group"),
            F.coalesce("retryTopic", F.lit("(unknown)")).alias("originalTopic"),
            F.when(F.col("topic").startswith(RETRY_GROUP_TOPIC_PREFIX), "retry")
            .when(F.col("topic").startswith(DLQ_GROUP_TOPIC_PREFIX), "dlq")
            .otherwise("scheduled").alias("kind"),
        )
    with progress.stage("counts per group and topic"):
        is_retry = F.col("kind") == "retry"
        counts = to_pandas(
            rel.groupBy("group", "originalTopic")
            .agg(
                F.count(F.when(is_retry, 1)).alias("retries"),
                F.countDistinct(F.when(is_retry, F.col("uniqKey"))).alias("retriedMessages"),
                F.max(F.when(is_retry, F.col("reconsumeTimes"))).alias("maxReconsumeTimes"),
                F.count(F.when(F.col("kind") == "scheduled", 1)).alias("scheduledRetries"),
                F.count(F.when(F.col("kind") == "dlq", 1)).alias("dlq"),
            )
            .orderBy("group", "originalTopic")
        )
    with progress.stage("messages in the DLQ"):
        dlq = to_pandas(
            rel.where(F.col("kind") == "dlq")
            .select(
                "group", "originalTopic", "uniqKey",
                F.col("properties")[PROPERTY_ORIGIN_MESSAGE_ID].alias("originMessageId"),
                "offsetMsgId", "tags", F.array_join("keys", " ").alias("keys"),
                "reconsumeTimes", "bornTimestamp", "storeTimestamp", "bodyLength",
            )
            .orderBy("group", "storeTimestamp")
        )
    both.unpersist()
    with progress.stage("charts"):
        by_group = counts.groupby("group", as_index=False)[["retries", "dlq"]].sum()
        report.tables = {"retries_by_group_topic": counts, "dlq_messages": dlq}
        report.charts = [
            Chart("retries_by_group.png", "Retries and dead letters per group",
                  charts.bars(by_group, "group", ["retries", "dlq"], "messages")),
        ]
        report.summary = [
            f"{int(counts['retries'].sum()) if not counts.empty else 0} retries and "
            f"{len(dlq)} dead letters over {len(by_group)} groups",
        ]
        report.notes = error_notes(errors)
    return report
