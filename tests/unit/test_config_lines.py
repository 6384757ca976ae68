"""Every value broker/config.py rejects is named by file, line and key (issue 12 item 2)."""

from __future__ import annotations

import pytest

from rocketmq_emu.broker.config import ConfigError, config_from_properties, parse_broker_conf


def test_flush_disk_type_names_its_line():
    """A bad flushDiskType names file:line and the key."""
    with pytest.raises(ConfigError, match=r"^b\.conf:2 flushDiskType: 'SOMETIMES'"):
        parse_broker_conf("brokerName=x\nflushDiskType=SOMETIMES\n", "b.conf")


def test_listen_port_out_of_range_names_its_line():
    """A listenPort outside 1..65535 names file:line and the key."""
    with pytest.raises(ConfigError, match=r"^b\.conf:3 listenPort: 70000"):
        parse_broker_conf("# comment\n\nlistenPort=70000\n", "b.conf")


def test_message_delay_level_names_its_line():
    """An unparsable messageDelayLevel names file:line and the key."""
    with pytest.raises(ConfigError, match=r"^b\.conf:1 messageDelayLevel: .*'5x'"):
        parse_broker_conf("messageDelayLevel=1s 5x\n", "b.conf")


@pytest.mark.parametrize("value", ["4am", "04;25", ""])
def test_delete_when_that_is_not_hours_names_its_line(value):
    """A deleteWhen that is not ';'-separated hours of the day names file:line and the key."""
    with pytest.raises(ConfigError, match=r"^b\.conf:1 deleteWhen: "):
        parse_broker_conf(f"deleteWhen={value}\n", "b.conf")


def test_delete_when_of_several_hours_is_accepted():
    """deleteWhen=04;16 (RocketMQ's form for two cleaning hours) loads."""
    assert parse_broker_conf("deleteWhen=04;16\n", "b.conf").config.delete_when == "04;16"


def test_the_last_occurrence_of_a_key_is_named():
    """With a key set twice, the line of the value that won is named (Java: the last wins)."""
    with pytest.raises(ConfigError, match=r"^b\.conf:2 flushDiskType"):
        parse_broker_conf("flushDiskType=SYNC_FLUSH\nflushDiskType=NEVER\n", "b.conf")


def test_malformed_line_names_file_and_line():
    """A malformed \\uXXXX escape is a ConfigError naming the file and the line."""
    with pytest.raises(ConfigError, match=r"^b\.conf line 2: malformed"):
        parse_broker_conf("brokerName=x\nbrokerName=\\u12\n", "b.conf")


def test_properties_without_lines_name_the_key():
    """A dict of properties (the admin UPDATE_BROKER_CONFIG path) still names source and key."""
    with pytest.raises(ConfigError, match=r"^request listenPort: 70000 is out of range"):
        config_from_properties({"listenPort": "70000"}, "request")
