"""Which stores a cluster report reads and the broker each belongs to (reports/stores.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketmq_emu.broker.configs.topics import TopicConfigManager
from rocketmq_emu.reports.stores import Store, StoreError, broker_name_of, decode, encode, resolve


def make_store(root: Path, broker: str | None, cluster: str = "DefaultCluster") -> Path:
    """A store directory with commitlog/ and, for ``broker``, the topics.json a broker of that
    name writes (TopicConfigManager's system topics)."""
    (root / "commitlog").mkdir(parents=True)
    if broker is not None:
        (root / "config").mkdir()
        manager = TopicConfigManager(str(root / "config" / "topics.json"),
                                     broker_name=broker, broker_cluster_name=cluster)
        manager.persist()
    return root


def test_broker_name_from_the_broker_name_topic(tmp_path):
    """The topics.json a broker wrote names it, whatever the directory is called."""
    store = make_store(tmp_path / "disk1", "broker-east")
    assert broker_name_of(str(store)) == "broker-east"


def test_default_queue_nums_of_one_does_not_confuse_tbw102(tmp_path):
    """TBW102 with one queue (defaultTopicQueueNums=1) is not taken for the broker's name."""
    store = tmp_path / "s"
    (store / "config").mkdir(parents=True)
    table = {"TBW102": {"perm": 7, "readQueueNums": 1, "writeQueueNums": 1},
             "b1": {"perm": 7, "readQueueNums": 1, "writeQueueNums": 1},
             "C1": {"perm": 7, "readQueueNums": 16, "writeQueueNums": 16},
             "C1_REPLY_TOPIC": {"perm": 6, "readQueueNums": 1, "writeQueueNums": 1}}
    (store / "config" / "topics.json").write_text(json.dumps({"topicConfigTable": table}))
    assert broker_name_of(str(store)) == "b1"


def test_unreadable_or_missing_topics_json_names_nothing(tmp_path):
    """No file, broken JSON or a wrong shape: None (the caller falls back)."""
    assert broker_name_of(str(tmp_path)) is None
    (tmp_path / "config").mkdir()
    for text in ("{", "[]", '{"topicConfigTable": 3}'):
        (tmp_path / "config" / "topics.json").write_text(text)
        assert broker_name_of(str(tmp_path)) is None


def test_resolve_names_from_store_then_given_then_directory(tmp_path):
    """The store's own name wins over NAME=, which wins over the directory name."""
    a = make_store(tmp_path / "a", "broker-a")
    b = make_store(tmp_path / "b", None)
    c = make_store(tmp_path / "c", None)
    got = resolve([f"ignored={a}", f"bee={b}", str(c)])
    assert got == [Store("broker-a", str(a)), Store("bee", str(b)), Store("c", str(c))]


def test_a_directory_of_stores_is_every_store_in_it(tmp_path):
    """A directory holding one store per broker (EmbeddedCluster's layout) expands, sorted."""
    make_store(tmp_path / "x" / "broker-b", "broker-b")
    make_store(tmp_path / "x" / "broker-a", "broker-a")
    (tmp_path / "x" / "notes").mkdir()
    got = resolve([str(tmp_path / "x")])
    assert [s.broker_name for s in got] == ["broker-a", "broker-b"]


def test_missing_directory_and_duplicate_names_are_errors(tmp_path):
    """A path that does not exist, or two stores of one name, is one clear error."""
    with pytest.raises(StoreError, match="does not exist"):
        resolve([str(tmp_path / "nope")])
    make_store(tmp_path / "1", "broker-a")
    make_store(tmp_path / "2", "broker-a")
    with pytest.raises(StoreError, match="NAME=DIR"):
        resolve([str(tmp_path / "1"), str(tmp_path / "2")])


def test_stores_option_round_trips():
    """The data sources' stores option decodes to what was encoded."""
    stores = [Store("a", "/s/a"), Store("b=c", "/s/b")]
    assert decode(encode(stores)) == stores
