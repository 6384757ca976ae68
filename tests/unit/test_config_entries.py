"""Loading a store's config JSON files entry by entry: one bad entry is skipped with a warning
naming the file and the entry; a file that cannot be parsed falls back to its ``.bak``; only
both unusable stops the store, with one line naming the file."""

from __future__ import annotations

import json
import logging

import pytest

from rocketmq_emu.broker.config_files import (
    ConfigFileError,
    ConsumerOffsetManager,
    DelayOffsetManager,
    SubscriptionGroupManager,
    TopicConfigManager,
    open_config_managers,
)

GOOD_TOPIC = {"topicName": "Good", "perm": 6, "readQueueNums": 2, "writeQueueNums": 2}


def write(path, doc) -> str:
    """Write ``doc`` (a dict, or raw text) to ``path``; returns the path as a string."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def warnings(caplog) -> list[str]:
    """The messages of the WARNING records captured."""
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_topic_with_a_malformed_field_is_skipped_with_a_warning(tmp_path, caplog):
    """topics.json: a topic whose perm is not a number is dropped; the other topics load."""
    path = write(tmp_path / "topics.json", {"topicConfigTable": {
        "Good": GOOD_TOPIC, "Bad": {"topicName": "Bad", "perm": "rw"}}})
    m = TopicConfigManager(path, broker_name="b")
    with caplog.at_level(logging.WARNING):
        assert m.load()
    assert m.topic_config_table["Good"].read_queue_nums == 2
    assert "Bad" not in m.topic_config_table
    assert [w for w in warnings(caplog) if path in w and "topic 'Bad'" in w]


def test_a_topic_with_a_blank_name_is_skipped(tmp_path):
    """topics.json: a topic keyed "" is dropped and recorded in ``skipped``."""
    path = write(tmp_path / "topics.json", {"topicConfigTable": {
        "Good": GOOD_TOPIC, "": {"topicName": "", "perm": 6}}})
    m = TopicConfigManager(path, broker_name="b")
    assert m.load()
    assert "" not in m.topic_config_table and "Good" in m.topic_config_table
    assert [(f, e) for f, e, _ in m.skipped] == [(path, "topic ''")]


def test_the_blank_group_rocketmq_writes_is_skipped_with_a_warning(tmp_path, caplog):
    """subscriptionGroup.json with the ``""`` group a 4.9.8 broker persists for C++ producers
    loads its other groups and warns about ``""``."""
    path = write(tmp_path / "subscriptionGroup.json", {"subscriptionGroupTable": {
        "": {"groupName": "", "retryMaxTimes": 16},
        "GID_a": {"groupName": "GID_a", "retryMaxTimes": 3}}})
    m = SubscriptionGroupManager(path)
    with caplog.at_level(logging.WARNING):
        assert m.load()
    assert m.subscription_group_table["GID_a"].retry_max_times == 3
    assert "" not in m.subscription_group_table
    assert [w for w in warnings(caplog) if path in w and "subscription group ''" in w]


def test_a_group_with_a_malformed_field_is_skipped(tmp_path):
    """subscriptionGroup.json: a group whose retryQueueNums is not a number is dropped."""
    path = write(tmp_path / "subscriptionGroup.json", {"subscriptionGroupTable": {
        "GID_bad": {"groupName": "GID_bad", "retryQueueNums": "one"},
        "GID_ok": {"groupName": "GID_ok"}}})
    m = SubscriptionGroupManager(path)
    assert m.load()
    assert "GID_ok" in m.subscription_group_table and "GID_bad" not in m.subscription_group_table


def test_bad_consumer_offset_entries_are_skipped_one_by_one(tmp_path, caplog):
    """consumerOffset.json: a key without ``@``, a blank group, a non-object value and a
    non-numeric queue offset are each dropped; every good offset loads."""
    path = write(tmp_path / "consumerOffset.json", {"offsetTable": {
        "T@g": {"0": 5, "1": "x", "2": 7},
        "no-separator": {"0": 1},
        "T@": {"0": 1},
        "U@g": [1, 2],
        "V@g": {"0": 9}}})
    m = ConsumerOffsetManager(path)
    with caplog.at_level(logging.WARNING):
        assert m.load()
    assert m.offset_table == {"T@g": {0: 5, 2: 7}, "V@g": {0: 9}}
    assert len([w for w in warnings(caplog) if path in w]) == 4


def test_a_bad_delay_level_entry_is_skipped(tmp_path):
    """delayOffset.json: a level that is not a number is dropped; the others load."""
    path = write(tmp_path / "delayOffset.json", {"offsetTable": {"1": 4, "two": 5, "3": 6}})
    m = DelayOffsetManager(path)
    assert m.load()
    assert m.offset_table == {1: 4, 3: 6}


def test_a_malformed_data_version_is_ignored_with_a_warning(tmp_path, caplog):
    """topics.json: a dataVersion with a non-numeric counter keeps the default version and
    still loads the topics."""
    path = write(tmp_path / "topics.json", {"dataVersion": {"counter": "many"},
                                            "topicConfigTable": {"Good": GOOD_TOPIC}})
    m = TopicConfigManager(path, broker_name="b")
    with caplog.at_level(logging.WARNING):
        assert m.load()
    assert "Good" in m.topic_config_table and m.data_version.counter == 0
    assert [w for w in warnings(caplog) if "dataVersion" in w]


def test_persist_after_skipping_writes_only_the_good_entries(tmp_path):
    """The next persist drops the skipped entry from the file, so it warns only once."""
    path = write(tmp_path / "subscriptionGroup.json", {"subscriptionGroupTable": {
        "": {"groupName": ""}, "GID_a": {"groupName": "GID_a"}}})
    m = SubscriptionGroupManager(path)
    assert m.load() and m.persist()
    table = json.loads((tmp_path / "subscriptionGroup.json").read_text())["subscriptionGroupTable"]
    assert "" not in table and "GID_a" in table


def test_a_truncated_subscription_file_falls_back_to_its_backup(tmp_path, caplog):
    """A subscriptionGroup.json cut off mid-write loads its .bak, logging the file's name."""
    good = {"subscriptionGroupTable": {"GID_a": {"groupName": "GID_a", "retryMaxTimes": 2}}}
    write(tmp_path / "subscriptionGroup.json.bak", good)
    path = write(tmp_path / "subscriptionGroup.json", json.dumps(good)[:40])
    m = SubscriptionGroupManager(path)
    with caplog.at_level(logging.ERROR):
        assert m.load()
    assert m.subscription_group_table["GID_a"].retry_max_times == 2
    assert f"config file {path} is unusable (not valid JSON" in caplog.text


def test_an_unusable_file_without_backup_is_kept_aside(tmp_path):
    """consumerOffset.json cut short with no .bak: the store starts from the defaults and the
    cut file is kept as .corrupt, not overwritten by the next persist."""
    torn = json.dumps({"offsetTable": {"T@g": {"0": 12}}})[:25]
    path = write(tmp_path / "consumerOffset.json", torn)
    m = ConsumerOffsetManager(path)
    assert m.load()
    assert m.persist()
    assert (tmp_path / "consumerOffset.json.corrupt").read_text() == torn


def test_a_table_that_is_not_an_object_makes_the_file_unusable(tmp_path):
    """topics.json whose topicConfigTable is a list is corrupt as a whole: the .bak is used."""
    write(tmp_path / "topics.json.bak", {"topicConfigTable": {"Good": GOOD_TOPIC}})
    path = write(tmp_path / "topics.json", {"topicConfigTable": ["Good"]})
    m = TopicConfigManager(path, broker_name="b")
    assert m.load() and "Good" in m.topic_config_table


def test_a_store_with_a_file_and_backup_both_unusable_fails_with_one_line(tmp_path):
    """open_config_managers raises ConfigFileError whose one-line message names the file, its
    backup and both reasons."""
    cfg = tmp_path / "config"
    write(cfg / "subscriptionGroup.json", '{"subscriptionGroupTable":{')
    write(cfg / "subscriptionGroup.json.bak", "[]")
    with pytest.raises(ConfigFileError) as info:
        open_config_managers(str(tmp_path), broker_name="b")
    msg = str(info.value)
    assert msg.startswith(f"config file {cfg}/subscriptionGroup.json is unusable (not valid JSON")
    assert msg.endswith(f"its backup {cfg}/subscriptionGroup.json.bak is unusable "
                        "(expected a JSON object, got list)")
    assert "\n" not in msg


def test_a_store_with_only_bad_entries_still_opens(tmp_path):
    """Every config file holding one bad entry (and no .bak) opens: nothing is fatal."""
    cfg = tmp_path / "config"
    write(cfg / "topics.json", {"topicConfigTable": {"": {}}})
    write(cfg / "subscriptionGroup.json", {"subscriptionGroupTable": {"": {"groupName": ""}}})
    write(cfg / "consumerOffset.json", {"offsetTable": {"@": {"0": 1}}})
    write(cfg / "delayOffset.json", {"offsetTable": {"1": None}})
    managers = open_config_managers(str(tmp_path), broker_name="b")
    assert sum(len(m.skipped) for m in managers.values()) == 4
