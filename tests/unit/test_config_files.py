"""Specification of RocketMQ's JSON config files (protocol.md §5.1, §3.8)."""

from __future__ import annotations

import json
import logging

import pytest
from twisted.internet.task import Clock

from rocketmq_emu.broker.config_files import (
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    ConfigFileError,
    ConsumerOffsetManager,
    DelayOffsetManager,
    SubscriptionGroupConfig,
    SubscriptionGroupManager,
    TopicConfig,
    TopicConfigManager,
    open_config_managers,
)


def topics(tmp_path, clock=None, **kw):
    kw.setdefault("broker_name", "broker-a")
    return TopicConfigManager(str(tmp_path / "config" / "topics.json"), clock, **kw)


# --- topics.json --------------------------------------------------------------------------------
def test_builtin_system_topics_match_rocketmq_defaults(tmp_path):
    """The 4.9 constructor's system topics exist with their queue counts and perms."""
    m = topics(tmp_path)
    t = m.topic_config_table
    assert (t["TBW102"].perm, t["TBW102"].write_queue_nums, t["TBW102"].read_queue_nums) == (7, 8, 8)
    assert t["SCHEDULE_TOPIC_XXXX"].write_queue_nums == 18
    assert (t["broker-a"].perm, t["broker-a"].write_queue_nums) == (7, 1)
    assert (t["DefaultCluster"].perm, t["DefaultCluster"].write_queue_nums) == (7, 16)
    assert t["SELF_TEST_TOPIC"].write_queue_nums == 1
    assert t["BenchmarkTest"].write_queue_nums == 1024
    assert t["OFFSET_MOVED_EVENT"].write_queue_nums == 1
    assert t["DefaultCluster_REPLY_TOPIC"].write_queue_nums == 1
    assert "RMQ_SYS_TRACE_TOPIC" not in t
    assert all(m.is_system_topic(name) for name in t)


def test_no_tbw102_without_auto_create(tmp_path):
    """TBW102 exists only when autoCreateTopicEnable is on."""
    assert "TBW102" not in topics(tmp_path, auto_create_topic_enable=False).topic_config_table


def test_disabled_cluster_and_broker_topics_keep_only_inherit(tmp_path):
    """clusterTopicEnable/brokerTopicEnable false leave perm INHERIT only."""
    m = topics(tmp_path, cluster_topic_enable=False, broker_topic_enable=False)
    assert m.topic_config_table["DefaultCluster"].perm == PERM_INHERIT
    assert m.topic_config_table["broker-a"].perm == PERM_INHERIT


def test_auto_create_on_send_takes_min_queue_nums_and_drops_inherit(tmp_path):
    """A new topic gets min(client default, TBW102 write queues) queues and TBW102 perm & ~INHERIT."""
    m = topics(tmp_path)
    v0 = m.data_version.counter
    tc = m.create_topic_in_send_message_method("TopicTest", "TBW102", 4)
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (4, 4, PERM_READ | PERM_WRITE)
    assert m.data_version.counter == v0 + 1
    assert m.create_topic_in_send_message_method("Big", "TBW102", 100).write_queue_nums == 8
    saved = json.loads((tmp_path / "config" / "topics.json").read_text())
    assert saved["topicConfigTable"]["TopicTest"]["writeQueueNums"] == 4


def test_auto_create_returns_existing_topic_unchanged(tmp_path):
    """An existing topic is returned as is and the data version does not move."""
    m = topics(tmp_path)
    first = m.create_topic_in_send_message_method("T", "TBW102", 4)
    v = m.data_version.counter
    assert m.create_topic_in_send_message_method("T", "TBW102", 2) is first
    assert m.data_version.counter == v


def test_auto_create_refused_without_inherit_or_default(tmp_path):
    """No default topic, or one without PERM_INHERIT, means no auto-creation."""
    m = topics(tmp_path)
    assert m.create_topic_in_send_message_method("T", "NoSuchDefault", 4) is None
    assert m.create_topic_in_send_message_method("T", "SELF_TEST_TOPIC", 4) is None
    assert "T" not in m.topic_config_table


def test_auto_create_disabled_strips_inherit_from_loaded_tbw102(tmp_path):
    """With autoCreateTopicEnable off, a TBW102 loaded from disk loses INHERIT on first use."""
    topics(tmp_path).persist()
    m = topics(tmp_path, auto_create_topic_enable=False)
    assert m.load() and m.topic_config_table["TBW102"].perm == 7
    assert m.create_topic_in_send_message_method("T", "TBW102", 4) is None
    assert m.topic_config_table["TBW102"].perm == PERM_READ | PERM_WRITE


def test_create_listener_called_on_new_topic(tmp_path):
    """Listeners learn about auto-created topics (the broker re-registers)."""
    m = topics(tmp_path)
    seen = []
    m.add_change_listener(lambda tc: seen.append(tc.topic_name))
    m.create_topic_in_send_message_method("T", "TBW102", 4)
    m.create_topic_in_send_message_method("T", "TBW102", 4)
    assert seen == ["T"]


def test_retry_and_dlq_topics(tmp_path):
    """%RETRY%group has 1 RW queue; %DLQ%group 1 write-only queue as in 4.9."""
    m = topics(tmp_path)
    r = m.create_topic_of_retry("g")
    assert (r.topic_name, r.write_queue_nums, r.perm) == ("%RETRY%g", 1, 6)
    d = m.create_topic_of_dlq("g")
    assert (d.topic_name, d.write_queue_nums, d.perm) == ("%DLQ%g", 1, PERM_WRITE)


def test_topics_json_shape_and_round_trip(tmp_path):
    """topics.json is a TopicConfigSerializeWrapper that reloads to the same state."""
    clock = Clock()
    clock.advance(1_700_000_000)
    m = topics(tmp_path, clock)
    m.update_topic_config(TopicConfig("T", 2, 3, 6, order=True))
    doc = json.loads((tmp_path / "config" / "topics.json").read_text())
    assert doc["dataVersion"] == {"counter": 1, "timestamp": 1_700_000_000_000}
    assert doc["topicConfigTable"]["T"] == {
        "attributes": {}, "order": True, "perm": 6, "readQueueNums": 2, "topicFilterType": "SINGLE_TAG",
        "topicName": "T", "topicSysFlag": 0, "writeQueueNums": 3,
    }
    again = topics(tmp_path)
    assert again.load()
    assert again.topic_config_table == m.topic_config_table
    assert again.data_version == m.data_version


def test_topic_config_keeps_unknown_fields(tmp_path):
    """Fields of other versions (5.x attributes) survive a load/persist cycle."""
    path = tmp_path / "config" / "topics.json"
    path.parent.mkdir()
    path.write_text('{"dataVersion":{"counter":7,"timestamp":5},"topicConfigTable":{"T":'
                    '{"attributes":{"+message.type":"NORMAL"},"order":false,"perm":6,'
                    '"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T",'
                    '"topicSysFlag":0,"writeQueueNums":4}}}')
    m = topics(tmp_path)
    assert m.load() and m.data_version.counter == 7
    m.persist()
    saved = json.loads(path.read_text())["topicConfigTable"]["T"]
    assert saved["attributes"] == {"+message.type": "NORMAL"}


def test_delete_topic_config(tmp_path):
    """Deleting a topic persists and bumps the version; deleting an unknown one is False."""
    m = topics(tmp_path)
    m.create_topic_of_retry("g")
    assert m.delete_topic_config("%RETRY%g")
    assert not m.delete_topic_config("%RETRY%g")
    assert "%RETRY%g" not in json.loads((tmp_path / "config" / "topics.json").read_text())[
        "topicConfigTable"]


def test_order_topics_from_name_server(tmp_path):
    """update_order_topic_config flips order on exactly the listed topics."""
    m = topics(tmp_path)
    m.create_topic_of_retry("g")
    m.update_order_topic_config({"%RETRY%g"})
    assert m.is_order_topic("%RETRY%g") and not m.is_order_topic("TBW102")


# --- load / persist / .bak ---------------------------------------------------------------------
def test_persist_keeps_previous_content_in_bak(tmp_path):
    """Each persist moves the previous file content to .bak."""
    m = ConsumerOffsetManager(str(tmp_path / "consumerOffset.json"))
    m.commit_offset("h", "g", "T", 0, 1)
    m.persist()
    first = (tmp_path / "consumerOffset.json").read_bytes()
    m.commit_offset("h", "g", "T", 0, 2)
    m.persist()
    assert (tmp_path / "consumerOffset.json.bak").read_bytes() == first
    assert not (tmp_path / "consumerOffset.json.tmp").exists()


def test_corrupt_file_falls_back_to_bak_and_logs(tmp_path, caplog):
    """A corrupt main file is reported by name and the .bak copy is loaded."""
    path = tmp_path / "consumerOffset.json"
    m = ConsumerOffsetManager(str(path))
    m.commit_offset("h", "g", "T", 0, 5)
    m.persist()
    m.commit_offset("h", "g", "T", 0, 9)
    m.persist()
    path.write_bytes(b'{"offsetTable":{"T@g":{0:')  # torn write
    again = ConsumerOffsetManager(str(path))
    with caplog.at_level(logging.ERROR):
        assert again.load()
    assert again.query_offset("g", "T", 0) == 5
    assert str(path) in caplog.text and "not valid JSON" in caplog.text


def test_persist_after_bak_recovery_keeps_good_bak(tmp_path):
    """After recovering from .bak, the corrupt file is not copied over the good backup."""
    path = tmp_path / "delayOffset.json"
    m = DelayOffsetManager(str(path))
    m.update_offset(1, 3)
    m.persist()
    m.persist()
    path.write_bytes(b"garbage")
    again = DelayOffsetManager(str(path))
    assert again.load()
    again.persist()
    assert json.loads((tmp_path / "delayOffset.json.bak").read_text()) == {"offsetTable": {"1": 3}}


def test_empty_file_loads_bak(tmp_path):
    """An empty main file means 'use the backup' (ConfigManager.load)."""
    (tmp_path / "delayOffset.json").write_bytes(b"")
    (tmp_path / "delayOffset.json.bak").write_bytes(b'{"offsetTable":{2:7}}')
    m = DelayOffsetManager(str(tmp_path / "delayOffset.json"))
    assert m.load() and m.query_offset(2) == 7


def test_both_unusable_fails_load(tmp_path):
    """When the file and its backup are both corrupt, load returns False; load_error names both
    files and both reasons on one line."""
    (tmp_path / "delayOffset.json").write_bytes(b"[1,2]")
    (tmp_path / "delayOffset.json.bak").write_bytes(b'{"offsetTable":{"1":')
    m = DelayOffsetManager(str(tmp_path / "delayOffset.json"))
    assert not m.load()
    assert m.load_error.startswith(
        f"config file {tmp_path}/delayOffset.json is unusable (expected a JSON object, got "
        f"list) and its backup {tmp_path}/delayOffset.json.bak is unusable (not valid JSON: ")
    assert "\n" not in m.load_error


def test_fresh_store_loads_defaults(tmp_path):
    """Without any file, load succeeds with the built-in defaults."""
    m = topics(tmp_path)
    assert m.load() and "TBW102" in m.topic_config_table


def test_persist_failure_is_reported_not_raised(tmp_path, caplog):
    """A directory that cannot be written gives False and a log line naming the file."""
    (tmp_path / "notadir").write_bytes(b"")
    m = DelayOffsetManager(str(tmp_path / "notadir" / "delayOffset.json"))
    with caplog.at_level(logging.ERROR):
        assert not m.persist()
    assert "notadir/delayOffset.json" in caplog.text


def test_open_config_managers_raises_on_unusable_files(tmp_path):
    """Opening a store whose topics.json and backup are both corrupt is an error naming it."""
    cfg = tmp_path / "config"
    cfg.mkdir()
    (cfg / "topics.json").write_bytes(b"{")
    (cfg / "topics.json.bak").write_bytes(b"{")
    with pytest.raises(ConfigFileError, match="topics.json"):
        open_config_managers(str(tmp_path), broker_name="b")


def test_open_config_managers_loads_all_four(tmp_path):
    """The four managers are created under {root}/config and loaded."""
    ms = open_config_managers(str(tmp_path), broker_name="b")
    ms["consumer_offsets"].commit_offset("h", "g", "T", 1, 3)
    ms["consumer_offsets"].persist()
    again = open_config_managers(str(tmp_path), broker_name="b")
    assert again["consumer_offsets"].query_offset("g", "T", 1) == 3
    assert sorted(ms) == ["consumer_offsets", "delay_offsets", "subscription_groups",
                          "topic_config"]


# --- consumerOffset.json ------------------------------------------------------------------------
def test_reads_fastjson_unquoted_queue_ids(tmp_path):
    """A consumerOffset.json written by RocketMQ (unquoted int keys) loads."""
    path = tmp_path / "consumerOffset.json"
    path.write_text('{"offsetTable":{"TopicTest@g1":{0:12,1:5},"%RETRY%g1@g1":{0:0}}}')
    m = ConsumerOffsetManager(str(path))
    assert m.load()
    assert m.query_offset("g1", "TopicTest", 1) == 5
    assert m.query_offsets("g1", "TopicTest") == {0: 12, 1: 5}


def test_consumer_offset_file_shape(tmp_path):
    """Written as {"offsetTable":{"topic@group":{"qid":offset}}}."""
    m = ConsumerOffsetManager(str(tmp_path / "c.json"))
    m.commit_offset("h", "g", "T", 3, 7)
    m.persist()
    assert json.loads((tmp_path / "c.json").read_text()) == {"offsetTable": {"T@g": {"3": 7}}}


def test_query_offset_absent_is_minus_one(tmp_path):
    """An uncommitted queue reads -1."""
    m = ConsumerOffsetManager(str(tmp_path / "c.json"))
    m.commit_offset("h", "g", "T", 0, 4)
    assert m.query_offset("g", "T", 1) == -1
    assert m.query_offset("other", "T", 0) == -1


def test_smaller_offset_is_accepted_and_logged(tmp_path, caplog):
    """Committing below the stored offset is a reset: stored, with a warning."""
    m = ConsumerOffsetManager(str(tmp_path / "c.json"))
    m.commit_offset("h", "g", "T", 0, 10)
    with caplog.at_level(logging.WARNING):
        m.commit_offset("h", "g", "T", 0, 3)
    assert m.query_offset("g", "T", 0) == 3
    assert "less than store" in caplog.text


def test_offsets_by_topic_and_group(tmp_path):
    """Topic/group lookups, min offset across groups, clone and deletions."""
    m = ConsumerOffsetManager(str(tmp_path / "c.json"))
    m.commit_offset("h", "g1", "A", 0, 10)
    m.commit_offset("h", "g2", "A", 0, 4)
    m.commit_offset("h", "g1", "B", 1, 2)
    assert m.which_topic_by_consumer("g1") == {"A", "B"}
    assert m.which_group_by_topic("A") == {"g1", "g2"}
    assert m.query_min_offset_in_all_groups("A") == {0: 4}
    assert m.query_min_offset_in_all_groups("A", {"g2"}) == {0: 10}
    m.clone_offset("g1", "g3", "A")
    assert m.query_offset("g3", "A", 0) == 10
    assert m.delete_topic("A") == 3
    assert m.which_group_by_topic("A") == set()
    assert m.delete_group("g1") == 1
    assert m.offset_table == {}


# --- delayOffset.json ---------------------------------------------------------------------------
def test_delay_offsets_round_trip_and_default_zero(tmp_path):
    """Level offsets persist as {"offsetTable":{level:offset}}; unknown levels read 0."""
    m = DelayOffsetManager(str(tmp_path / "d.json"))
    assert m.query_offset(3) == 0
    m.update_offset(3, 17)
    m.update_offset(1, 2)
    m.persist()
    assert json.loads((tmp_path / "d.json").read_text()) == {"offsetTable": {"1": 2, "3": 17}}
    again = DelayOffsetManager(str(tmp_path / "d.json"))
    assert again.load() and again.offset_table == {1: 2, 3: 17}


# --- subscriptionGroup.json ---------------------------------------------------------------------
def test_subscription_group_defaults_and_json_names(tmp_path):
    """A new group has RocketMQ's SubscriptionGroupConfig defaults under fastjson names."""
    m = SubscriptionGroupManager(str(tmp_path / "s.json"))
    cfg = m.find_subscription_group_config("g")
    assert cfg.to_json() == {
        "attributes": {}, "brokerId": 0, "consumeBroadcastEnable": True, "consumeEnable": True,
        "consumeFromMinEnable": True, "consumeMessageOrderly": False, "groupName": "g",
        "groupRetryPolicy": {"type": "CUSTOMIZED"}, "notifyConsumerIdsChangedEnable": True,
        "retryMaxTimes": 16, "retryQueueNums": 1, "whichBrokerWhenConsumeSlowly": 1,
    }
    doc = json.loads((tmp_path / "s.json").read_text())
    assert set(doc) == {"dataVersion", "subscriptionGroupTable"}
    assert "g" in doc["subscriptionGroupTable"] and "TOOLS_CONSUMER" in doc["subscriptionGroupTable"]


def test_no_auto_create_except_system_groups(tmp_path):
    """With autoCreateSubscriptionGroup off only CID_RMQ_SYS_ groups are created."""
    m = SubscriptionGroupManager(str(tmp_path / "s.json"), auto_create_subscription_group=False)
    assert m.find_subscription_group_config("g") is None
    assert m.find_subscription_group_config("CID_RMQ_SYS_TRANS") is not None


def test_subscription_round_trip_keeps_settings_and_unknown_fields(tmp_path):
    """Updated groups reload identically, including fields of other versions."""
    m = SubscriptionGroupManager(str(tmp_path / "s.json"))
    m.update_subscription_group_config(
        SubscriptionGroupConfig("g", retry_max_times=3, consume_enable=False,
                                extra={"groupSysFlag": 0})
    )
    again = SubscriptionGroupManager(str(tmp_path / "s.json"))
    assert again.load()
    assert again.subscription_group_table == m.subscription_group_table
    assert again.delete_subscription_group_config("g")
    assert not again.delete_subscription_group_config("g")


def test_open_config_managers_takes_broker_config_settings(tmp_path):
    """BrokerConfig's names, cluster, auto-create switches and queue count shape the defaults."""
    from rocketmq_emu.broker.config import BrokerConfig

    bc = BrokerConfig()
    bc.broker_name, bc.broker_cluster_name = "b-7", "C1"
    bc.default_topic_queue_nums, bc.auto_create_subscription_group = 4, False
    ms = open_config_managers(str(tmp_path), broker_config=bc)
    table = ms["topic_config"].topic_config_table
    assert "b-7" in table and "C1" in table and "C1_REPLY_TOPIC" in table
    assert table["TBW102"].write_queue_nums == 4
    assert ms["subscription_groups"].find_subscription_group_config("g") is None


def test_reads_fastjson_pretty_files_as_rocketmq_writes_them(tmp_path):
    """Tab-indented fastjson PrettyFormat output with unquoted int keys loads (ConfigManager
    persists with encode(true))."""
    cfg = tmp_path / "config"
    cfg.mkdir()
    (cfg / "consumerOffset.json").write_text(
        '{\n\t"offsetTable":{\n\t\t"TopicTest@please_rename_unique_group_name_4":{\n'
        '\t\t\t0:250,\n\t\t\t1:249,\n\t\t\t2:250,\n\t\t\t3:251\n\t\t},\n'
        '\t\t"%RETRY%please_rename_unique_group_name_4@please_rename_unique_group_name_4":{0:0}'
        '\n\t}\n}')
    (cfg / "topics.json").write_text(
        '{\n\t"dataVersion":{\n\t\t"counter":2,\n\t\t"timestamp":1700000000000\n\t},\n'
        '\t"topicConfigTable":{\n\t\t"TopicTest":{\n\t\t\t"order":false,\n\t\t\t"perm":6,\n'
        '\t\t\t"readQueueNums":4,\n\t\t\t"topicFilterType":"SINGLE_TAG",\n'
        '\t\t\t"topicName":"TopicTest",\n\t\t\t"topicSysFlag":0,\n\t\t\t"writeQueueNums":4\n'
        '\t\t}\n\t}\n}')
    (cfg / "delayOffset.json").write_text('{\n\t"offsetTable":{3:12,1:4}\n}')
    ms = open_config_managers(str(tmp_path), broker_name="b")
    assert ms["consumer_offsets"].query_offsets(
        "please_rename_unique_group_name_4", "TopicTest") == {0: 250, 1: 249, 2: 250, 3: 251}
    tc = ms["topic_config"].select_topic_config("TopicTest")
    assert (tc.read_queue_nums, tc.perm) == (4, 6)
    assert ms["topic_config"].data_version.counter == 2
    assert ms["delay_offsets"].offset_table == {1: 4, 3: 12}
