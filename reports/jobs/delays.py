"""delays: how late scheduled messages were delivered, and which are still pending.

A scheduled copy is a record in ``SCHEDULE_TOPIC_XXXX`` (delay level = queueId + 1, scheduled
deliver time = its store time + the level's delay, as ``CommitLog`` computes the CQ tagsCode)
or in ``rmq_sys_wheel_timer`` (deliver time = TIMER_OUT_MS). Its re-put copy is the record in
REAL_TOPIC with the same UNIQ_KEY and reconsumeTimes stored at or after it (the earliest such,
since UNIQ_KEY survives retries). Lateness = re-put store time - scheduled deliver time.
Percentiles are exact (linear interpolation, Spark ``percentile``). A broker re-puts its own
scheduled copies, so both copies are looked for in one broker's store (``brokerName``); with
several brokers, ``(cluster)`` rows give the percentiles over the whole cluster.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from rocketmq_emu.broker.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL, DelayLevels
from rocketmq_emu.broker.message import RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC
from rocketmq_emu.reports import charts
from rocketmq_emu.reports.inputs import BROKER, Inputs, pandas_by_broker, totals
from rocketmq_emu.reports.jobs.common import (
    error_notes,
    sort_frame,
    split_errors,
    store_ms,
    to_pandas,
)
from rocketmq_emu.reports.report import Chart, Progress, Report

NAME = "delays"
STAGES = 5
DESCRIPTION = ("How late delayed and timer messages were delivered after their due time, per "
               "delay level and day, and which are still waiting.")
COLUMNS = [
    "topic", "queueId", "reconsumeTimes", "storeTimestamp", "uniqKey", "realTopic",
    "realQueueId", "delayLevel", "timerDeliverTime", "physicalOffset",
]
#: Per group of scheduled copies: how many, how many delivered, and the lateness percentiles,
#: exact with linear interpolation (Spark's ``percentile``, numpy's default), nulls skipped.
_LATENESS = {
    "scheduled": ("physicalOffset", "size"),
    "delivered": ("reputMs", "count"),
    "p50Ms": ("latenessMs", lambda s: s.quantile(0.5)),
    "p90Ms": ("latenessMs", lambda s: s.quantile(0.9)),
    "p99Ms": ("latenessMs", lambda s: s.quantile(0.99)),
    "maxMs": ("latenessMs", "max"),
}


def run(
    spark: SparkSession,
    source: Inputs | str,
    progress: Progress | None = None,
    delay_levels: str = DEFAULT_MESSAGE_DELAY_LEVEL,
    **_: object,
) -> Report:
    """Compute the delays report (``delay_levels`` is the broker's messageDelayLevel)."""
    inputs = Inputs.of(spark, source)
    several = inputs.several
    progress = progress or Progress(NAME, STAGES)
    report = Report(NAME, "Scheduled message lateness", inputs.description, DESCRIPTION)
    levels = DelayLevels.parse(delay_levels)
    level_ms = F.create_map(
        *[x for lv in range(1, levels.max_level + 1) for x in (F.lit(lv), F.lit(levels.delay_ms(lv)))]
    )
    with progress.stage("scan commitlog (scheduled copies and re-puts)"):
        df = inputs.commitlog(COLUMNS)
        good, bad = split_errors(df)
        errors = inputs.errors(bad)
    is_level = F.col("topic") == RMQ_SYS_SCHEDULE_TOPIC
    scheduled = good.where(F.col("topic").isin(RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC)).select(
        BROKER, "physicalOffset", "uniqKey", "realTopic", "realQueueId", "reconsumeTimes",
        F.when(is_level, F.col("delayLevel")).alias("level"),
        F.when(is_level, F.concat(F.lit("level "), F.col("delayLevel"))).otherwise(
            F.lit("timer")).alias("kind"),
        store_ms().alias("scheduledStoreMs"),
        F.when(is_level, store_ms() + F.element_at(level_ms, F.col("delayLevel"))).otherwise(
            F.unix_millis("timerDeliverTime")).alias("deliverMs"),
    )
    reputs = good.where(
        ~F.col("topic").isin(RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC) & F.col("uniqKey").isNotNull()
    ).select(
        F.col(BROKER).alias("rBroker"), F.col("uniqKey").alias("rUniq"),
        F.col("topic").alias("rTopic"),
        F.col("reconsumeTimes").alias("rTimes"), store_ms().alias("rMs"),
    )
    with progress.stage("join scheduled copies to their re-puts (UNIQ_KEY)"):
        joined = (
            scheduled.join(
                reputs,
                (F.col(BROKER) == F.col("rBroker"))
                & (F.col("uniqKey") == F.col("rUniq")) & (F.col("realTopic") == F.col("rTopic"))
                & (F.col("reconsumeTimes") == F.col("rTimes"))
                & (F.col("rMs") >= F.col("scheduledStoreMs")),
                "left",
            )
            .groupBy(*scheduled.columns)
            .agg(F.min("rMs").alias("reputMs"))
            .withColumn("latenessMs", F.col("reputMs") - F.col("deliverMs"))
            .withColumn("deliverDay", F.to_date(F.timestamp_millis(F.col("deliverMs"))))
        )
        detail = to_pandas(joined, order=("deliverMs", BROKER, "physicalOffset"))
    with progress.stage("lateness percentiles per level and per day"):
        # Aggregated from the collected rows (one row per scheduled copy, all collected for
        # the tables anyway) rather than by two more Spark jobs over the join.
        by_level = sort_frame(
            pandas_by_broker(detail, ["kind", "level"], _LATENESS, several),
            order=("level", "kind", BROKER), nulls_last=("level",))
        by_level["pending"] = by_level["scheduled"] - by_level["delivered"]
        by_day = sort_frame(
            pandas_by_broker(detail, ["deliverDay", "kind", "level"], _LATENESS, several),
            order=("deliverDay", "level", "kind", BROKER), nulls_last=("level",))
    for table in (detail, by_level, by_day):
        table["level"] = table["level"].astype("Int64")
    with progress.stage("pending messages"):
        pending = detail[detail["reputMs"].isna()].drop(
            columns=["reputMs", "latenessMs"]
        ).reset_index(drop=True)
    inputs.release(df)
    with progress.stage("charts"):
        report.tables = {
            "lateness_by_level": by_level,
            "lateness_by_day": by_day,
            "pending": pending,
            "scheduled_messages": detail,
        }
        levels = totals(by_level, several)
        report.charts = [
            Chart("lateness_by_level.png", "Lateness of delivery per delay level (percentiles)",
                  charts.bars(levels.rename(columns={"p50Ms": "p50", "p90Ms": "p90",
                                                     "p99Ms": "p99", "maxMs": "max"}),
                              "kind", ["p50", "p90", "p99", "max"], "ms after the due time",
                              xlabel="delay level (timer: any time)"),
                  "lateness_by_level"),
            Chart("scheduled_by_level.png", "Delivered and pending per delay level",
                  charts.bars(levels, "kind", ["delivered", "pending"], "messages",
                              xlabel="delay level (timer: any time)"),
                  "lateness_by_level"),
        ]
        delivered = int(levels["delivered"].sum()) if not levels.empty else 0
        report.summary = [
            f"{len(detail)} scheduled copies, {delivered} delivered, {len(pending)} pending",
        ]
        report.notes = error_notes(errors) + [
            f"delay levels: {delay_levels}",
        ]
    return report
