"""consumers: per group and queue, committed offset vs the queue's max offset (lag).

Committed offsets come from ``config/consumerOffset.json`` (``{"offsetTable": {"topic@group":
{queueId: offset}}}``, read with :func:`rocketmq_emu.broker.jsonutil.loads`, which accepts fastjson's
unquoted int keys). Min/max offsets come from the consume queues: max offset = last written
unit's queue offset + 1, as ``ConsumeQueue.getMaxOffsetInQueue``. For each topic a group has
committed on, every queue of the topic is listed; lag = maxOffset - committedOffset (a queue
without a commit counts from minOffset), as ``consumerProgress`` reports "diff".

RocketMQ 5 POP groups are groups like any other here: the broker advances their offsets in
consumerOffset.json at pop time, on the topic and on the POP retry topic ``%RETRY%<group>_<topic>``.
``retryOf`` names the original topic of such a retry topic (null for other topics; the rule is
:mod:`rocketmq_emu.reports.jobs.pop`'s). The revive group's offsets on the revive topics
(``CID_RMQ_SYS_REVIVE_GROUP`` on ``rmq_sys_REVIVE_LOG_<cluster>``: how far the broker has
processed its POP check points) are system progress, not a consumer's: they are left out of the
lag tables and listed in ``revive_offsets``.

Over a cluster, a topic's queues live on several brokers, each with its own consumerOffset.json
and consume queues: lag is computed per broker and queue (``brokerName``), then summed per group
and topic; with several brokers the ``(cluster)`` rows are those sums.
"""

from __future__ import annotations

import os

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.pop.names import is_revive_topic
from rocketmq_emu.reports import charts
from rocketmq_emu.reports.inputs import BROKER, CLUSTER, Inputs, pandas_by_broker, totals
from rocketmq_emu.reports.jobs.common import to_pandas
from rocketmq_emu.reports.jobs.pop import pop_retry_of
from rocketmq_emu.reports.report import Chart, Progress, Report
from rocketmq_emu.reports.stores import from_paths
from rocketmq_emu.reports.topics import RETRY, label, topic_kind

NAME = "consumers"
STAGES = 4
DESCRIPTION = ("How far each consumer group has committed on each queue against the queue's "
               "last offset: the messages it has still to consume (its lag).")
REVIVE_COLUMNS = [BROKER, "topic", "queueId", "reviveOffset", "maxOffset"]
OFFSET_FILE = os.path.join("config", "consumerOffset.json")


def read_offsets(source: Inputs | str) -> pd.DataFrame:
    """The offset tables of every store as rows (brokerName, group, topic, queueId,
    committedOffset); ``source`` is the run's Inputs or one store path."""
    stores = source.stores if isinstance(source, Inputs) else from_paths([source])
    rows = []
    for store in stores:
        path = os.path.join(store.path, OFFSET_FILE)
        if not os.path.exists(path):
            continue
        with open(path, "rb") as fh:
            table = (jsonutil.loads(fh.read()) or {}).get("offsetTable") or {}
        for key, offsets in table.items():
            # MixAll / ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR; topics cannot contain "@".
            topic, _, group = key.partition("@")
            for qid, offset in (offsets or {}).items():
                rows.append((store.broker_name, group, topic, int(qid), int(offset)))
    return pd.DataFrame(rows, columns=[BROKER, "group", "topic", "queueId", "committedOffset"])


def run(spark: SparkSession, source: Inputs | str, progress: Progress | None = None,
        **_: object) -> Report:
    """Compute the consumers report for ``source`` (a store path or the run's Inputs)."""
    inputs = Inputs.of(spark, source)
    several = inputs.several
    progress = progress or Progress(NAME, STAGES)
    report = Report(NAME, "Consumer lag", inputs.description, DESCRIPTION)
    with progress.stage("read consumerOffset.json"):
        offsets = read_offsets(inputs)
    with progress.stage("scan consume queues (min/max offset per queue)"):
        queues = to_pandas(
            inputs.consume_queues()
            .groupBy(BROKER, "topic", "queueId")
            .agg(
                F.min("queueOffset").alias("minOffset"),
                (F.max("queueOffset") + 1).alias("maxOffset"),
                F.count("*").alias("units"),
            )
        )
    with progress.stage("lag per group and queue"):
        revive_rows = offsets["topic"].map(is_revive_topic).astype(bool)
        revive = (
            offsets[revive_rows].rename(columns={"committedOffset": "reviveOffset"})
            .merge(queues[[BROKER, "topic", "queueId", "maxOffset"]],
                   on=[BROKER, "topic", "queueId"], how="left")
        )
        revive["maxOffset"] = revive["maxOffset"].fillna(0).astype("int64")
        revive = revive[REVIVE_COLUMNS].sort_values(["topic", BROKER, "queueId"]).reset_index(
            drop=True)
        offsets = offsets[~revive_rows]
        # A group that committed on a topic on one broker is listed on every broker's queues
        # of that topic (the queues it has not reached yet count from their minOffset).
        pairs = offsets[["group", "topic"]].drop_duplicates()
        keys = [BROKER, "group", "topic", "queueId"]
        listed = pd.concat(
            [pairs.merge(queues[[BROKER, "topic", "queueId"]], on="topic"), offsets[keys]]
        ).drop_duplicates()
        by_queue = listed.merge(offsets, on=keys, how="left").merge(
            queues, on=[BROKER, "topic", "queueId"], how="left"
        )
        by_queue["minOffset"] = by_queue["minOffset"].fillna(0).astype("int64")
        by_queue["maxOffset"] = by_queue["maxOffset"].fillna(0).astype("int64")
        by_queue["committedOffset"] = by_queue["committedOffset"].astype("Int64")
        committed = by_queue["committedOffset"]
        by_queue["lag"] = (by_queue["maxOffset"] - committed.fillna(by_queue["minOffset"])).astype(
            "int64"
        )
        by_queue["retryOf"] = pd.Series(
            [pop_retry_of(t, g)
             for t, g in zip(by_queue["topic"], by_queue["group"], strict=True)],
            index=by_queue.index, dtype="string",
        )
        by_queue = by_queue.drop(columns=["units"])
        by_queue = by_queue[keys + [c for c in by_queue.columns if c not in keys]].sort_values(
            ["group", "topic", BROKER, "queueId"]).reset_index(drop=True)
        by_group = (
            pandas_by_broker(by_queue, ["group"], {
                "topics": ("topic", "nunique"), "queues": ("queueId", "size"),
                "lag": ("lag", "sum")}, several)
            .sort_values(["lag", "group", BROKER], ascending=[False, True, True])
            .reset_index(drop=True)
        )
        by_topic = (
            pandas_by_broker(by_queue, ["group", "topic"], {
                "retryOf": ("retryOf", "first"), "queues": ("queueId", "size"),
                "committed": ("committedOffset", "sum"),
                "maxOffset": ("maxOffset", "sum"), "lag": ("lag", "sum")}, several)
            .sort_values(["group", "topic", BROKER]).reset_index(drop=True)
        )
        queues = queues.sort_values(["topic", BROKER, "queueId"]).reset_index(drop=True)
    with progress.stage("charts"):
        report.tables = {
            "lag_by_group": by_group,
            "lag_by_group_topic": by_topic,
            "lag_by_queue": by_queue,
            "queues": queues,
            "revive_offsets": revive,
        }
        group_totals = totals(by_group, several)
        topic_totals = totals(by_topic, several)
        # A retry topic's offsets are the group's own: "G / its retries", not "G / %RETRY%G".
        labelled = topic_totals.assign(
            groupTopic=topic_totals["group"] + " / " + topic_totals["topic"].map(
                lambda t: "its retries" if topic_kind(t) == RETRY else label(t)))
        report.charts = [
            Chart("lag_by_group.png", "Lag per consumer group",
                  charts.bars(group_totals, "group", ["lag"], "messages behind",
                              xlabel="consumer group"),
                  "lag_by_group"),
            Chart("lag_by_group_topic.png", "Committed and max offset per group and topic",
                  charts.bars(labelled.rename(columns={"maxOffset": "max offset"}), "groupTopic",
                              ["committed", "max offset", "lag"], "queue offset (messages)",
                              xlabel="consumer group / topic"),
                  "lag_by_group_topic"),
        ]
        report.summary = [
            f"{len(group_totals)} groups, {len(by_queue)} queues, total lag "
            f"{int(by_queue['lag'].sum()) if not by_queue.empty else 0}",
        ]
        if offsets.empty:
            report.notes = [f"no {OFFSET_FILE} (or it is empty) in the store"]
        if several:
            report.charts.append(Chart(
                "lag_per_broker.png", "Lag per group and broker (messages)",
                charts.grouped_bars(by_group[by_group[BROKER] != CLUSTER], "group", BROKER,
                                    "lag", "messages behind", xlabel="consumer group"),
                "lag_by_group"))
    return report
