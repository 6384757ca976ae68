"""broker.conf (Java properties) → BrokerConfig."""

from __future__ import annotations

import logging

import pytest

from rocketmq_emu.broker.config import (
    BrokerConfig,
    ConfigError,
    camel_to_snake,
    load_broker_conf,
    parse_broker_conf,
)
from rocketmq_emu.broker.properties import PropertiesError, load_properties, parse_properties


def test_defaults_are_rocketmq_defaults():
    """An empty broker.conf yields RocketMQ's defaults."""
    cfg = parse_broker_conf("").config
    assert cfg.broker_cluster_name == "DefaultCluster"
    assert cfg.broker_name == "broker-a"
    assert cfg.broker_id == 0
    assert cfg.listen_port == 10911
    assert cfg.flush_disk_type == "ASYNC_FLUSH"
    assert cfg.auto_create_topic_enable is True
    assert cfg.mapped_file_size_commit_log == 1 << 30
    assert cfg.mapped_file_size_consume_queue == 6_000_000
    assert cfg.file_reserved_time == 72
    assert cfg.max_message_size == 4 << 20
    assert cfg.delete_when == "04"
    assert cfg.default_topic_queue_nums == 8
    assert cfg.timer_max_delay_sec == 2 * 365 * 86_400
    assert cfg.message_delay_level.split()[0] == "1s" and len(cfg.message_delay_level.split()) == 18


def test_typical_broker_conf_is_applied():
    """The keys of RocketMQ's sample broker.conf land on the snake_case fields."""
    text = """
# sample
brokerClusterName = MyCluster
brokerName=broker-b
brokerId=1
brokerIP1=10.0.0.5
listenPort: 20911
namesrvAddr=127.0.0.1:9876;127.0.0.2:9876
storePathRootDir=/data/store
mappedFileSizeCommitLog=1048576
flushDiskType=SYNC_FLUSH
autoCreateTopicEnable=false
fileReservedTime=48
messageDelayLevel=1s 2s
"""
    cfg = parse_broker_conf(text).config
    assert cfg.broker_cluster_name == "MyCluster"
    assert cfg.broker_name == "broker-b"
    assert cfg.broker_id == 1
    assert cfg.broker_ip1 == "10.0.0.5"
    assert cfg.listen_port == 20911
    assert cfg.namesrv_addrs() == ["127.0.0.1:9876", "127.0.0.2:9876"]
    assert cfg.store_path_root_dir == "/data/store"
    assert cfg.mapped_file_size_commit_log == 1048576
    assert cfg.flush_disk_type == "SYNC_FLUSH"
    assert cfg.auto_create_topic_enable is False
    assert cfg.file_reserved_time == 48
    assert cfg.message_delay_level == "1s 2s"


def test_explicit_keys_are_reported():
    """The loader says which fields the file set, so the CLI can tell defaults apart."""
    loaded = parse_broker_conf("brokerName=x\nlistenPort=1234\n")
    assert loaded.explicit == {"broker_name", "listen_port"}


def test_unknown_key_warns_and_is_not_fatal(caplog):
    """An unknown key is logged as a warning naming the key, and loading goes on."""
    with caplog.at_level(logging.WARNING, logger="rocketmq_emu.broker.config"):
        loaded = parse_broker_conf("brokerNmae=typo\nbrokerId=2\n")
    assert loaded.config.broker_id == 2
    assert loaded.unknown == ["brokerNmae"]
    assert "brokerNmae" in caplog.text and "unknown" in caplog.text


def test_known_unimplemented_key_is_not_warned(caplog):
    """RocketMQ keys the emulator ignores (thread pools, HA) are not reported as unknown."""
    with caplog.at_level(logging.WARNING, logger="rocketmq_emu.broker.config"):
        loaded = parse_broker_conf("sendMessageThreadPoolNums=16\n")
    assert loaded.unknown == []
    assert caplog.text == ""


def test_boolean_is_java_parse_boolean(caplog):
    """Only "true" (any case) is true, as Boolean.parseBoolean; "1" is false and warned about."""
    assert parse_broker_conf("autoCreateTopicEnable=TRUE").config.auto_create_topic_enable
    with caplog.at_level(logging.WARNING, logger="rocketmq_emu.broker.config"):
        cfg = parse_broker_conf("autoCreateTopicEnable=1").config
    assert cfg.auto_create_topic_enable is False
    assert "autoCreateTopicEnable" in caplog.text


def test_bad_integer_is_an_error_naming_key_and_line():
    """A non-numeric integer value fails loudly, naming the line and key."""
    with pytest.raises(ConfigError, match=r"broker.conf:2 listenPort"):
        parse_broker_conf("brokerId=0\nlistenPort=abc\n")


def test_bad_flush_disk_type_is_an_error():
    """flushDiskType must be one of RocketMQ's two values."""
    with pytest.raises(ConfigError, match="flushDiskType"):
        parse_broker_conf("flushDiskType=SOMETIMES")


def test_bad_delay_levels_are_an_error():
    """A messageDelayLevel that ScheduleMessageService could not parse is rejected."""
    with pytest.raises(ConfigError, match="messageDelayLevel"):
        parse_broker_conf("messageDelayLevel=1s 5x")


def test_advertised_address_defaults_to_listen_host():
    """Without brokerIP1 the broker advertises the host it listens on."""
    cfg = BrokerConfig(listen_port=10911)
    assert cfg.broker_addr("127.0.0.1") == "127.0.0.1:10911"
    assert cfg.broker_addr("0.0.0.0") == "127.0.0.1:10911"
    cfg.broker_ip1 = "192.168.1.9"
    assert cfg.broker_addr("127.0.0.1") == "192.168.1.9:10911"


def test_load_from_file(tmp_path):
    """load_broker_conf reads a file and names it in errors."""
    p = tmp_path / "broker.conf"
    p.write_text("brokerName=from-file\n")
    assert load_broker_conf(p).config.broker_name == "from-file"
    p.write_text("listenPort=x\n")
    with pytest.raises(ConfigError, match=str(p)):
        load_broker_conf(p)


@pytest.mark.parametrize(
    "camel, snake",
    [
        ("brokerIP1", "broker_ip1"),
        ("mappedFileSizeCommitLog", "mapped_file_size_commit_log"),
        ("flushDiskType", "flush_disk_type"),
        ("timerMaxDelaySec", "timer_max_delay_sec"),
    ],
)
def test_camel_to_snake(camel, snake):
    """Java keys map to the snake_case field names."""
    assert camel_to_snake(camel) == snake


def test_every_field_has_a_java_key_round_trip():
    """Fields without an explicit java_key have a Java key that converts back to their name."""
    import dataclasses

    from rocketmq_emu.broker.config import snake_to_camel

    for f in dataclasses.fields(BrokerConfig):
        if "java_key" not in f.metadata:
            assert camel_to_snake(snake_to_camel(f.name)) == f.name, f.name


# --- Java properties syntax


def test_properties_separators_and_comments():
    """=, : and whitespace separate; # and ! start comments."""
    props = load_properties("# c\n! c\na=1\nb : 2\nc 3\n  d=  4\n\ne=\n")
    assert props == {"a": "1", "b": "2", "c": "3", "d": "4", "e": ""}


def test_properties_continuation_lines():
    """A trailing backslash continues the value; the next line's indent is dropped."""
    props = load_properties("messageDelayLevel=1s 5s \\\n    10s\nx=y\\\\\n")
    assert props == {"messageDelayLevel": "1s 5s 10s", "x": "y\\"}


def test_properties_escapes():
    """Java escapes: \\t \\n \\uXXXX, escaped separators in keys."""
    props = load_properties("a\\=b=c\\td\\u0041\nkey\\ with\\ space=v\n")
    assert props == {"a=b": "c\tdA", "key with space": "v"}


def test_properties_last_duplicate_wins_and_lines_are_tracked():
    """Later duplicates override earlier ones; entries keep their line numbers."""
    entries = parse_properties("a=1\n\n# x\na=2\n")
    assert [(e.key, e.value, e.line) for e in entries] == [("a", "1", 1), ("a", "2", 4)]
    assert load_properties("a=1\na=2\n") == {"a": "2"}


def test_properties_lines_count_every_java_line_terminator():
    """\r\n, \r and \n each end a line (Properties.LineReader); a continuation spans two."""
    entries = parse_properties("a=1\r\nb=2\rc=3 \\\n  more\nd=4\n")
    assert [(e.key, e.line) for e in entries] == [("a", 1), ("b", 2), ("c", 3), ("d", 5)]


def test_properties_bad_unicode_escape():
    """A malformed \\u escape is an error naming the line."""
    with pytest.raises(PropertiesError, match="line 2"):
        parse_properties("a=1\nb=\\u12G4\n")


def test_store_config_is_derived():
    """MessageStoreConfig takes the store settings and the advertised store host."""
    cfg = parse_broker_conf(
        "storePathRootDir=/tmp/x\nmappedFileSizeCommitLog=65536\nflushDiskType=SYNC_FLUSH\n"
        "fileReservedTime=5\nmaxMessageSize=1000\nlistenPort=20000\n"
    ).config
    sc = cfg.to_store_config("127.0.0.1")
    assert sc.store_path_root_dir == "/tmp/x"
    assert sc.mapped_file_size_commitlog == 65536
    assert sc.flush_disk_type == "SYNC_FLUSH"
    assert sc.file_reserved_time == 5
    assert sc.max_message_size == 1000
    assert sc.store_host == "127.0.0.1:20000"


def test_every_store_setting_can_be_set_from_broker_conf():
    """Each MessageStoreConfig field (but the derived store_host) has a BrokerConfig field with
    the same default, so broker.conf can set it and an empty file changes nothing."""
    import dataclasses

    from rocketmq_emu.broker.store_config import MessageStoreConfig

    mine = {f.name: f for f in dataclasses.fields(BrokerConfig)}
    for f in dataclasses.fields(MessageStoreConfig):
        if f.name == "store_host":
            continue
        name = f.name if f.name in mine else f.name.replace("commitlog", "commit_log")
        assert name in mine, f.name
        if f.name != "store_path_root_dir":
            assert getattr(BrokerConfig(), name) == getattr(MessageStoreConfig(), f.name), f.name


def test_rocketmq_misspelt_warm_key_is_understood():
    """warmMapedFileEnable (RocketMQ's spelling) sets warm_mapped_file_enable."""
    cfg = parse_broker_conf("warmMapedFileEnable=false\n").config
    assert cfg.warm_mapped_file_enable is False
    assert cfg.to_store_config().warm_mapped_file_enable is False
