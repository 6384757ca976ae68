"""Specification of CONSUMER_SEND_MSG_BACK routing: the retry ladder into the DLQ."""

from __future__ import annotations

import pytest
from schedule_support import STORE_KINDS, boot

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.delay_levels import DelayLevels
from rocketmq_emu.broker.message import create_offset_msg_id
from rocketmq_emu.broker.schedule.delay_level_service import transform_delay_message
from rocketmq_emu.broker.schedule.retry import build_send_back_record

T0 = 1_700_000_000_000


def original(reconsume=0, **props):
    return MessageRecord(topic="Orders", body=b"b", queue_id=1, reconsume_times=reconsume,
                         properties={"TAGS": "t", **props}, physical_offset=4096,
                         store_host=("10.0.0.1", 10911))


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_full_ladder_of_sixteen_retries_then_dlq(tmp_path, kind):
    """Sixteen send-backs go to %RETRY%g with delays 10s..2h (levels 3..18); the
    seventeenth goes to %DLQ%g queue 0 at once."""
    h = boot(tmp_path, kind, T0)
    services = h.services
    levels = DelayLevels.parse()
    h.send(topic="Orders", body=b"pay", TAGS="t", UNIQ_KEY="U1")
    [current] = h.messages("Orders")
    origin_id = create_offset_msg_id(*current.store_host, current.physical_offset)
    for attempt in range(1, 17):
        back = services.send_back(current, "g", 0, 16, 121)
        assert not back.to_dlq and back.delay_level == 2 + attempt
        h.store.put_message(transform_delay_message(back.record, services.levels))
        due = h.now() + levels.delay_ms(2 + attempt)
        h.run_until(due - 1)
        assert len(h.messages("%RETRY%g")) == attempt - 1
        h.run_until(due + 2)
        current = h.messages("%RETRY%g")[-1]
        assert due <= current.store_timestamp <= due + 2
        assert current.reconsume_times == attempt
        assert current.properties["RETRY_TOPIC"] == "Orders"
        assert current.properties["ORIGIN_MESSAGE_ID"] == origin_id
        assert current.properties["UNIQ_KEY"] == "U1"
    back = services.send_back(current, "g", 0, 16, 121)
    assert back.to_dlq
    h.store.put_message(transform_delay_message(back.record, services.levels))
    [dead] = h.messages("%DLQ%g")
    assert dead.queue_id == 0 and dead.reconsume_times == 17 and dead.body == b"pay"
    assert dead.properties["RETRY_TOPIC"] == "Orders"


def test_negative_delay_level_goes_straight_to_dlq():
    """delayLevel < 0 sends the message to the DLQ whatever its reconsume count."""
    back = build_send_back_record(original(), "g", delay_level=-1)
    assert back.to_dlq and back.record.topic == "%DLQ%g" and back.record.queue_id == 0


def test_client_requested_level_is_used():
    """A non-zero header delayLevel replaces 3 + reconsumeTimes."""
    back = build_send_back_record(original(reconsume=2), "g", delay_level=7)
    assert back.record.properties["DELAY"] == "7" and back.record.topic == "%RETRY%g"


def test_header_max_reconsume_times_needs_version_121():
    """The header's maxReconsumeTimes counts only from V3_4_9 (121); older uses the group's."""
    assert build_send_back_record(original(reconsume=3), "g", 0, 3, 121).to_dlq
    assert not build_send_back_record(original(reconsume=3), "g", 0, 3, 120).to_dlq


def test_existing_retry_topic_and_origin_id_are_kept():
    """RETRY_TOPIC and ORIGIN_MESSAGE_ID set by an earlier round are not overwritten."""
    rec = original(RETRY_TOPIC="First", ORIGIN_MESSAGE_ID="ABC")
    rec.topic = "%RETRY%g"
    props = build_send_back_record(rec, "g").record.properties
    assert props["RETRY_TOPIC"] == "First" and props["ORIGIN_MESSAGE_ID"] == "ABC"


def test_dead_letter_clears_a_leftover_delay():
    """A DELAY left in the properties by the schedule quirk is reset to 0 for the DLQ."""
    rec = original(reconsume=16, DELAY="18")
    back = build_send_back_record(rec, "g", 0, 16, 121)
    assert back.to_dlq and back.record.properties["DELAY"] == "0"
