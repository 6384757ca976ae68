"""RocketMQ 5 topic attributes: the ``+k=v,-k`` syntax, AttributeUtil's rules and error texts,
and the ``attributes`` map in topics.json."""

from __future__ import annotations

import json

import pytest

from rocketmq_emu.broker.configs.topics import TopicConfig, TopicConfigManager
from rocketmq_emu.broker.topic_attributes import (
    AttributeRequestError,
    alter_current_attributes,
    java_map_str,
    parse_to_map,
    parse_to_string,
)


def topics(tmp_path) -> TopicConfigManager:
    return TopicConfigManager(str(tmp_path / "config" / "topics.json"), broker_name="broker-a")


# --- AttributeParser.parseToMap / parseToString --------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    (None, {}),
    ("", {}),
    ("+message.type=FIFO", {"+message.type": "FIFO"}),
    ("+message.type=FIFO,-reserve.time", {"+message.type": "FIFO", "-reserve.time": ""}),
    ("+a=b,", {"+a": "b"}),            # String.split drops trailing empty items
    (",", {}),
    ("+a=b=c", {"+a": "b"}),           # only the first '=' part is the value
    ("+a==b", {"+a": ""}),
])
def test_parse_to_map(text, expected):
    """Keys keep their sign; Java's split rules decide the items and the value."""
    assert parse_to_map(text) == expected


@pytest.mark.parametrize("text, message", [
    ("message.type=FIFO", "add/alter attribute format is wrong: message.type"),
    ("=FIFO", "add/alter attribute format is wrong: "),
    ("reserve.time", "delete attribute format is wrong: reserve.time"),
    ("+a=1,,+b=2", "delete attribute format is wrong: "),
    ("+a=1,+a=2", "key duplication: +a"),
    ("+message.type=", "Index 1 out of bounds for length 1"),
    ("=", "Index 0 out of bounds for length 0"),
])
def test_parse_to_map_errors(text, message):
    """The refusals carry RocketMQ 5's RuntimeException messages."""
    with pytest.raises(AttributeRequestError) as info:
        parse_to_map(text)
    assert str(info.value) == message


def test_parse_to_string_is_the_inverse():
    """A deletion is written without '='; the empty map is the empty string."""
    assert parse_to_string({}) == ""
    assert parse_to_string({"+message.type": "FIFO", "-reserve.time": ""}) == \
        "+message.type=FIFO,-reserve.time"
    assert parse_to_map(parse_to_string({"+a": "1", "-b": ""})) == {"+a": "1", "-b": ""}
    assert java_map_str({"+message.type": "FIFO"}) == "{+message.type=FIFO}"


# --- AttributeUtil.alterCurrentAttributes ----------------------------------------------------------
def test_create_sets_and_update_alters_adds_and_deletes():
    """Creation takes '+' keys; later '+' adds or alters and '-' deletes."""
    created = alter_current_attributes(True, {}, {"+message.type": "FIFO"})
    assert created == {"message.type": "FIFO"}
    altered = alter_current_attributes(False, created, {"+message.type": "DELAY",
                                                        "+reserve.time": "3600"})
    assert altered == {"message.type": "DELAY", "reserve.time": "3600"}
    assert alter_current_attributes(False, altered, {"-reserve.time": ""}) == {
        "message.type": "DELAY"}
    assert alter_current_attributes(False, altered, {}) == altered


@pytest.mark.parametrize("create, current, modification, message", [
    (True, {}, {"-message.type": ""},
     "only add attribute is supported while creating topic. key: message.type"),
    (False, {}, {"-message.type": ""}, "attempt to delete a nonexistent key: message.type"),
    (True, {}, {"+no.such": "x"}, "unsupported key: no.such"),
    (True, {}, {"+message.type": "ORDERLY"},
     "value is not in set: [UNSPECIFIED, MIXED, TRANSACTION, FIFO, DELAY, NORMAL]"),
    (True, {}, {"+queue.type": "X"}, "value is not in set: [SimpleCQ, BatchCQ]"),
    (True, {}, {"+cleanup.policy": "X"}, "value is not in set: [DELETE, COMPACTION]"),
    (False, {"queue.type": "SimpleCQ"}, {"+queue.type": "BatchCQ"},
     "attempt to update an unchangeable attribute. key: queue.type"),
    (False, {}, {"+cleanup.policy": "COMPACTION"},
     "attempt to update an unchangeable attribute. key: cleanup.policy"),
    (True, {}, {"+reserve.time": "-2"}, "value is not in range(-1, 9223372036854775807)"),
    (True, {}, {"+reserve.time": "1h"}, 'For input string: "1h"'),
    (True, {}, {"+reserve.time": "9223372036854775808"},
     'For input string: "9223372036854775808"'),
    (False, {"message.type": "FIFO"}, {"+message.type": "X", "-message.type": ""},
     "alter duplication key. key: message.type"),
    (True, {}, {"+": "x"}, "kv string format wrong."),
    (True, {}, {"a+b": "x"}, "kv string format wrong."),
])
def test_alter_refusals(create, current, modification, message):
    """Every refusal of AttributeUtil, with its message."""
    with pytest.raises(AttributeRequestError) as info:
        alter_current_attributes(create, current, modification)
    assert str(info.value) == message


def test_unchangeable_attributes_can_be_set_at_creation():
    """queue.type and cleanup.policy are accepted when the topic is created."""
    assert alter_current_attributes(True, {}, {"+queue.type": "BatchCQ",
                                               "+cleanup.policy": "COMPACTION"}) == {
        "queue.type": "BatchCQ", "cleanup.policy": "COMPACTION"}


# --- topics.json -----------------------------------------------------------------------------------
#: topics.json as RocketMQ 5.3 writes it (fastjson PrettyFormat: tabs, fields sorted; the
#: ``attributes`` map on every topic, empty or not).
JAVA_TOPICS_JSON = """{
\t"dataVersion":{
\t\t"counter":3,
\t\t"stateVersion":0,
\t\t"timestamp":1700000000000
\t},
\t"topicConfigTable":{
\t\t"OrderT":{
\t\t\t"attributes":{
\t\t\t\t"message.type":"FIFO"
\t\t\t},
\t\t\t"order":false,
\t\t\t"perm":6,
\t\t\t"readQueueNums":8,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"OrderT",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":8
\t\t},
\t\t"PlainT":{
\t\t\t"attributes":{},
\t\t\t"order":false,
\t\t\t"perm":6,
\t\t\t"readQueueNums":4,
\t\t\t"topicFilterType":"SINGLE_TAG",
\t\t\t"topicName":"PlainT",
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":4
\t\t}
\t}
}"""


def test_java_topics_json_loads_and_is_written_back_the_same(tmp_path):
    """A 5.x topics.json loads with its attributes; what we write has the same topic entries."""
    path = tmp_path / "config" / "topics.json"
    path.parent.mkdir()
    path.write_text(JAVA_TOPICS_JSON)
    m = topics(tmp_path)
    assert m.load()
    assert m.select_topic_config("OrderT").attributes == {"message.type": "FIFO"}
    assert m.select_topic_config("PlainT").attributes == {}
    m.persist()
    ours = json.loads(path.read_text())
    java = json.loads(JAVA_TOPICS_JSON)
    for name in ("OrderT", "PlainT"):
        assert ours["topicConfigTable"][name] == java["topicConfigTable"][name]
    assert ours["dataVersion"]["counter"] == 3
    assert all("attributes" in tc for tc in ours["topicConfigTable"].values())


def test_topic_entry_written_as_5x_writes_it():
    """One topic's JSON: the 5.x field set, ``attributes`` included when empty."""
    assert TopicConfig("T", 4, 4).to_json() == {
        "attributes": {}, "order": False, "perm": 6, "readQueueNums": 4,
        "topicFilterType": "SINGLE_TAG", "topicName": "T", "topicSysFlag": 0,
        "writeQueueNums": 4}
    doc = {"topicName": "T", "attributes": {"message.type": "DELAY", "reserve.time": 60}}
    assert TopicConfig.from_json(doc).attributes == {"message.type": "DELAY",
                                                     "reserve.time": "60"}
    assert TopicConfig.from_json({"topicName": "T", "attributes": None}).attributes == {}


def test_bad_attributes_skip_only_that_topic(tmp_path):
    """An ``attributes`` that is not an object is a bad entry: that topic is skipped."""
    path = tmp_path / "config" / "topics.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"topicConfigTable": {
        "Bad": {"topicName": "Bad", "attributes": ["message.type"]},
        "Good": {"topicName": "Good", "attributes": {"message.type": "FIFO"}}}}))
    m = topics(tmp_path)
    assert m.load()
    assert m.select_topic_config("Bad") is None
    assert m.select_topic_config("Good").attributes == {"message.type": "FIFO"}


def test_update_keeps_attributes_and_refusal_changes_nothing(tmp_path):
    """An update without a modification keeps the attributes; a refused one leaves the topic."""
    m = topics(tmp_path)
    m.update_topic_config(TopicConfig("T", 4, 4), {"+message.type": "FIFO"})
    m.update_topic_config(TopicConfig("T", 8, 8))
    tc = m.select_topic_config("T")
    assert (tc.write_queue_nums, tc.attributes) == (8, {"message.type": "FIFO"})
    version = m.data_version.counter
    with pytest.raises(AttributeRequestError):
        m.update_topic_config(TopicConfig("T", 2, 2), {"+message.type": "NOPE"})
    assert m.select_topic_config("T") is tc and m.data_version.counter == version
    again = topics(tmp_path)
    assert again.load()
    assert again.select_topic_config("T").attributes == {"message.type": "FIFO"}
