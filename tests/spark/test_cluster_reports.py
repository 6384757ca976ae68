"""Reports over a whole cluster: two brokers behind one name server (the harness's production
wiring), sends through both, then ``rmq-emu report all`` over the directory holding both stores
(run in this process, on the test run's SparkSession). Every table has a ``brokerName``
column; per-broker figures match what each broker acknowledged and the ``(cluster)`` rows
total them; lag is per broker and queue, summed per group and topic."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from rocketmq_emu.client.message import Message
from rocketmq_emu.client.testing import EmbeddedCluster, unique
from rocketmq_emu.reports.cli import run_argv

pytestmark = pytest.mark.spark

COMMITTED = 1  # the offset the group commits on every queue


@pytest.fixture(scope="module")
def cluster_run(spark, tmp_path_factory):
    """(topic, group, messages acknowledged per broker, queues, output dir) after sending 12
    messages through both brokers of an EmbeddedCluster, committing offset 1 on every queue
    and stopping the cluster (its stores are kept)."""
    tmp = tmp_path_factory.mktemp("cluster-report")
    topic, group = unique("ClusterT"), unique("ClusterG")
    with EmbeddedCluster(brokers=2, grpc_port=None, store_dir=tmp / "stores") as rocketmq:
        rocketmq.create_topic(topic, 2)
        producer = rocketmq.producer()
        sent = Counter(producer.send(Message(topic, f"m{i}".encode())).message_queue.broker_name
                       for i in range(12))
        puller = rocketmq.pull_consumer(group)
        queues = puller.fetch_subscribe_queues(topic)
        for mq in queues:
            puller.update_offset(mq, COMMITTED)
    # Stopped: consumerOffset.json and the stores are written.
    out = tmp / "out"
    assert run_argv(["all", "--store", str(tmp / "stores"), "--out", str(out)]) == 0
    return topic, group, sent, queues, out


def table(out: Path, report: str, name: str) -> pd.DataFrame:
    """One CSV of a report's output."""
    return pd.read_csv(out / report / f"{name}.csv")


def test_traffic_per_broker_and_cluster_totals(cluster_run):
    """Messages per topic per broker are what each broker acknowledged; (cluster) sums them."""
    topic, _, sent, _, out = cluster_run
    assert set(sent) == {"broker-a", "broker-b"}
    per_topic = table(out, "traffic", "per_topic")
    rows = per_topic[per_topic["topic"] == topic].set_index("brokerName")["messages"].to_dict()
    assert rows == {"broker-a": sent["broker-a"], "broker-b": sent["broker-b"], "(cluster)": 12}
    minute = table(out, "traffic", "per_topic_minute")
    cluster = minute[(minute["topic"] == topic) & (minute["brokerName"] == "(cluster)")]
    assert cluster["messages"].sum() == 12


def test_lag_per_broker_queue_then_summed(cluster_run):
    """Lag per broker and queue = queue max offset - 1; per group and topic, per broker and
    for the cluster, the sums."""
    topic, group, sent, queues, out = cluster_run
    by_queue = table(out, "consumers", "lag_by_queue")
    mine = by_queue[(by_queue["group"] == group) & (by_queue["topic"] == topic)]
    assert len(mine) == len(queues) == 4
    assert set(mine["brokerName"]) == {"broker-a", "broker-b"}
    assert (mine["lag"] == mine["maxOffset"] - COMMITTED).all()
    by_topic = table(out, "consumers", "lag_by_group_topic")
    lag = by_topic[by_topic["group"] == group].set_index("brokerName")["lag"].to_dict()
    assert lag == {"broker-a": sent["broker-a"] - 2 * COMMITTED,
                   "broker-b": sent["broker-b"] - 2 * COMMITTED,
                   "(cluster)": 12 - 4 * COMMITTED}


def test_every_table_names_its_broker(cluster_run):
    """Every CSV of the four reports has a brokerName column, with both brokers named."""
    *_, out = cluster_run
    csvs = sorted(out.glob("*/*.csv"))
    assert {p.parent.name for p in csvs} == {"traffic", "delays", "consumers", "retries"}
    for path in csvs:
        assert "brokerName" in pd.read_csv(path, nrows=0).columns, path
    names = set(table(out, "traffic", "per_topic")["brokerName"])
    assert names == {"broker-a", "broker-b", "(cluster)"}
