"""retries: retry and DLQ counts per consumer group and original topic; the DLQ messages.

A retry is a record stored in ``%RETRY%<group>`` (the copy a consumer pulls again); a
scheduled retry is its SCHEDULE_TOPIC_XXXX copy (REAL_TOPIC ``%RETRY%<group>``, protocol.md
6.4); a dead letter is a record in ``%DLQ%<group>``. The original topic is the RETRY_TOPIC
property the broker sets on the first send-back (``SendMessageProcessor``).

RocketMQ 5 POP: a revived copy in a POP retry topic (``%RETRY%<group>_<topic>``) is a retry of
that group on that topic (also counted in ``popRetries``); a dead letter whose RETRY_TOPIC is a
POP retry topic belongs to its original topic. The revive topic's records count per group and
popped topic as ``popCheckpoints`` (tag ``ck``), ``popAcks`` (``ack``) and ``popBatchAcks``
(``bAck``: BATCH_ACK_MESSAGE, and here also the mark the emulator's revive service writes after
reviving a check point), so a POP group shows up even when nothing was retried. Attribution rules:
:mod:`rocketmq_emu.reports.jobs.pop`.
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
from rocketmq_emu.reports.inputs import BROKER, Inputs, by_broker, totals
from rocketmq_emu.reports.jobs import pop
from rocketmq_emu.reports.jobs.common import error_notes, split_errors, to_pandas
from rocketmq_emu.reports.jobs.consumers import read_offsets
from rocketmq_emu.reports.report import Chart, Progress, Report

NAME = "retries"
STAGES = 5
DESCRIPTION = ("Which consumer groups had messages redelivered (retries) or given up "
               "(dead letters), on which topics, and the dead-lettered messages themselves.")
COLUMNS = [
    "topic", "retryGroup", "dlqGroup", "retryTopic", "uniqKey", "reconsumeTimes",
    "storeTimestamp", "bornTimestamp", "bodyLength", "tags", "keys", "offsetMsgId",
    "properties",
]


def run(spark: SparkSession, source: Inputs | str, progress: Progress | None = None,
        **_: object) -> Report:
    """Compute the retries report for ``source`` (a store path or the run's Inputs)."""
    inputs = Inputs.of(spark, source)
    several = inputs.several
    progress = progress or Progress(NAME, STAGES)
    report = Report(NAME, "Retries and dead letters", inputs.description, DESCRIPTION)
    with progress.stage("scan commitlog (retry, schedule and DLQ records)"):
        df = inputs.commitlog(COLUMNS)
        # One pass: keep the retry/schedule/DLQ rows and the corrupt-record rows together.
        both = df.where(
            F.col(ERROR_COLUMN).isNotNull()
            | F.col("topic").startswith(RETRY_GROUP_TOPIC_PREFIX)
            | F.col("topic").startswith(DLQ_GROUP_TOPIC_PREFIX)
            | ((F.col("topic") == RMQ_SYS_SCHEDULE_TOPIC) & F.col("retryGroup").isNotNull())
            | pop.is_revive()
        ).persist(StorageLevel.MEMORY_AND_DISK)
        good, bad = split_errors(both)
        errors = inputs.errors(bad)
    with progress.stage("POP groups and retry topics"):
        revive = pop.is_revive()
        names_seen = to_pandas(
            good.select(
                F.when(revive, pop.revive_topic_of()).alias("popTopic"),
                F.when(revive, pop.revive_group_of()).alias("popGroup"),
                F.when(~revive, F.col("topic")).alias("retryName"),
                F.col("retryTopic").alias("propertyName"),
            ).distinct()
        )
        retry_topics = pop.PopRetryTopics()
        offsets = read_offsets(inputs)
        retry_topics.add_pairs(zip(offsets["topic"], offsets["group"], strict=True))
        retry_topics.add_pairs(zip(names_seen["popTopic"], names_seen["popGroup"], strict=True))
        group_of, original_of = retry_topics.maps(
            list(names_seen["retryName"]) + list(names_seen["propertyName"])
            + list(names_seen["popTopic"])
        )
        popped_topic = F.when(revive, pop.revive_topic_of())
        rel = good.select(
            "*",
            F.when(revive, pop.revive_group_of())
            .otherwise(F.coalesce(group_of[F.col("topic")], "retryGroup", "dlqGroup"))
            .alias("group"),
            F.coalesce(
                original_of[F.coalesce(popped_topic, F.col("topic"))],
                original_of[F.col("retryTopic")],
                popped_topic,
                "retryTopic",
                F.lit("(unknown)"),
            ).alias("originalTopic"),
            F.when(revive, F.concat(F.lit("revive:"), F.col("tags")))
            .when(F.col("topic").startswith(RETRY_GROUP_TOPIC_PREFIX), "retry")
            .when(F.col("topic").startswith(DLQ_GROUP_TOPIC_PREFIX), "dlq")
            .otherwise("scheduled").alias("kind"),
            group_of[F.col("topic")].isNotNull().alias("popRetry"),
        )
    with progress.stage("counts per group and topic"):
        is_retry = F.col("kind") == "retry"
        counts = to_pandas(
            by_broker(rel, ["group", "originalTopic"], [
                F.count(F.when(is_retry, 1)).alias("retries"),
                F.countDistinct(F.when(is_retry, F.col("uniqKey"))).alias("retriedMessages"),
                F.max(F.when(is_retry, F.col("reconsumeTimes"))).alias("maxReconsumeTimes"),
                F.count(F.when(F.col("kind") == "scheduled", 1)).alias("scheduledRetries"),
                F.count(F.when(F.col("kind") == "dlq", 1)).alias("dlq"),
                F.count(F.when(is_retry & F.col("popRetry"), 1)).alias("popRetries"),
                *[F.count(F.when(F.col("kind") == f"revive:{tag}", 1)).alias(column)
                  for tag, column in pop.REVIVE_TAGS.items()],
            ], several),
            order=("group", "originalTopic", BROKER))
    with progress.stage("messages in the DLQ"):
        dlq = to_pandas(
            rel.where(F.col("kind") == "dlq")
            .select(
                BROKER, "group", "originalTopic", "uniqKey",
                F.col("properties")[PROPERTY_ORIGIN_MESSAGE_ID].alias("originMessageId"),
                "offsetMsgId", "tags", F.array_join("keys", " ").alias("keys"),
                "reconsumeTimes", "bornTimestamp", "storeTimestamp", "bodyLength",
            ),
            order=("group", "storeTimestamp", BROKER, "offsetMsgId"))
    both.unpersist()
    inputs.release(df)
    with progress.stage("charts"):
        cluster = totals(counts, several)
        by_group = cluster.groupby("group", as_index=False)[
            ["retries", "scheduledRetries", "dlq"]].sum()
        # Groups with retries; a POP group with only check points and acks is left out.
        by_group = by_group[by_group[["retries", "scheduledRetries", "dlq"]].sum(axis=1) > 0]
        pop_groups = cluster.loc[cluster["popCheckpoints"] > 0, "group"].nunique()
        report.tables = {"retries_by_group_topic": counts, "dlq_messages": dlq}
        report.charts = [
            Chart("retries_by_group.png", "Retries and dead letters per consumer group",
                  charts.bars(by_group.rename(columns={"dlq": "dead letters"}), "group",
                              ["retries", "dead letters"], "messages", xlabel="consumer group"),
                  "retries_by_group_topic"),
        ]
        report.summary = [
            f"{int(cluster['retries'].sum()) if not cluster.empty else 0} retries and "
            f"{len(dlq)} dead letters over {len(by_group)} groups",
            f"{pop_groups} POP groups ({int(cluster['popRetries'].sum()) if not cluster.empty else 0}"
            " of the retries in POP retry topics)",
        ]
        report.notes = error_notes(errors)
    return report
