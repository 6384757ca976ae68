"""Specification of delay-level delivery (ScheduleMessageService) on a fake clock, against the
in-memory fake store and the real MessageStore."""

from __future__ import annotations

import pytest
from schedule_support import STORE_KINDS, boot, clean_restart, crash_and_reboot

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.delay_levels import DelayLevels
from rocketmq_emu.broker.message import RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_HALF_TOPIC

T0 = 1_700_000_000_000


@pytest.fixture(params=STORE_KINDS)
def kind(request):
    return request.param


def send(h, delay, body=b"hello", topic="T", queue_id=2):
    return h.send(topic=topic, queue_id=queue_id, body=body, DELAY=str(delay),
                  UNIQ_KEY=body.decode(), TAGS="tagA")


def bodies(h, topic="T"):
    return [m.body for m in h.messages(topic)]


def test_delayed_message_is_stored_on_schedule_topic_queue_level_minus_one(tmp_path, kind):
    """DELAY=n puts the message on SCHEDULE_TOPIC_XXXX queue n-1 with REAL_TOPIC/REAL_QID and
    the deliver time as tagsCode."""
    h = boot(tmp_path, kind, T0)
    send(h, 3)
    [rec] = h.messages(RMQ_SYS_SCHEDULE_TOPIC, 2)
    assert rec.properties["REAL_TOPIC"] == "T" and rec.properties["REAL_QID"] == "2"
    assert rec.properties["DELAY"] == "3"
    assert h.tags_codes(RMQ_SYS_SCHEDULE_TOPIC, 2) == [rec.store_timestamp + 10_000]


def test_every_default_level_fires_at_its_delay(tmp_path, kind):
    """Each of the 18 default levels is delivered at storeTimestamp + delay, not before."""
    h = boot(tmp_path, kind, T0)
    levels = DelayLevels.parse()
    for level in range(1, 19):
        send(h, level, body=f"L{level}".encode(), queue_id=level % 4)
    for level in range(1, 19):
        due = T0 + levels.delay_ms(level)
        h.run_until(due - 1)
        assert f"L{level}".encode() not in bodies(h)
        h.run_until(due + 2)
        [got] = [m for m in h.messages("T") if m.body == f"L{level}".encode()]
        assert due <= got.store_timestamp <= due + 2
        assert got.queue_id == level % 4
    assert len(h.messages("T")) == 18


def test_level_above_max_is_clamped_to_two_hours(tmp_path, kind):
    """DELAY=25 is clamped to level 18 (queue 17, 2 h) and DELAY is rewritten to 18."""
    h = boot(tmp_path, kind, T0)
    send(h, 25)
    [rec] = h.messages(RMQ_SYS_SCHEDULE_TOPIC, 17)
    assert rec.properties["DELAY"] == "18"
    h.run_until(T0 + 7_200_000 - 1)
    assert h.messages("T") == []
    h.run_until(T0 + 7_200_000 + 1)
    assert len(h.messages("T")) == 1


def test_restored_record_keeps_rocketmqs_property_string(tmp_path, kind):
    """The re-put record is on the real topic/queue but its stored properties still carry
    DELAY, REAL_TOPIC and REAL_QID (ScheduleMessageService.messageTimeup quirk)."""
    h = boot(tmp_path, kind, T0)
    send(h, 1, body=b"payload")
    [scheduled] = h.messages(RMQ_SYS_SCHEDULE_TOPIC)
    h.run_until(T0 + 1001)
    [got] = h.messages("T", 2)
    assert got.body == b"payload"
    assert got.properties["DELAY"] == "1" and got.properties["REAL_TOPIC"] == "T"
    assert got.properties["REAL_QID"] == "2" and got.properties["TAGS"] == "tagA"
    assert got.born_timestamp == scheduled.born_timestamp
    assert got.physical_offset != scheduled.physical_offset
    assert h.tags_codes("T", 2) != [scheduled.store_timestamp + 1000]  # TAGS hash, not a time


def test_failed_reput_is_retried_without_skipping(tmp_path, kind):
    """A failed put is retried at the same offset; order and count are preserved."""
    h = boot(tmp_path, kind, T0)
    send(h, 1, body=b"a")
    send(h, 1, body=b"b")
    h.fail_puts(3)
    h.run_until(T0 + 1050)
    assert h.messages("T") == []
    h.run_until(T0 + 1500)
    assert bodies(h) == [b"a", b"b"]


def test_half_topic_messages_are_dropped(tmp_path, kind):
    """A delayed message whose real topic is RMQ_SYS_TRANS_HALF_TOPIC is not restored."""
    h = boot(tmp_path, kind, T0)
    send(h, 1, topic=RMQ_SYS_TRANS_HALF_TOPIC, queue_id=0)
    send(h, 1, body=b"ok")
    h.run_until(T0 + 2000)
    assert h.messages(RMQ_SYS_TRANS_HALF_TOPIC) == []
    assert bodies(h) == [b"ok"]


def test_idle_levels_do_not_poll(tmp_path, kind):
    """With nothing scheduled no level timer is pending; one arrival arms one timer exactly at
    the deliver time."""
    h = boot(tmp_path, kind, T0)
    h.run_until(T0 + 1000)

    def level_calls():
        return [c for c in h.clock.getDelayedCalls() if c.func == h.services.delay._deliver]

    assert level_calls() == []
    send(h, 4)
    [call] = level_calls()
    assert call.getTime() == pytest.approx(h.clock.seconds() + 30, abs=1e-3)


def test_offsets_persist_and_restart_resumes_without_duplicates(tmp_path, kind):
    """delayOffset.json records delivered offsets; a clean restart neither loses nor repeats."""
    h = boot(tmp_path, kind, T0)
    for i in range(3):
        send(h, 2, body=f"m{i}".encode())
    h.run_until(T0 + 15_500)  # delivered at 5 s, persisted at 10 s
    path = h.services.delay.offsets.manager.path
    table = jsonutil.loads(open(path, "rb").read())["offsetTable"]
    assert {int(k): v for k, v in table.items()}[2] == 3
    send(h, 2, body=b"m3")
    h = clean_restart(h)
    h.run_until(h.now() + 10_000)
    assert bodies(h) == [b"m0", b"m1", b"m2", b"m3"]


def test_crash_redelivers_only_what_was_not_persisted(tmp_path, kind):
    """After a crash the level restarts from the last persisted offset: a message delivered
    after the last persist comes again (at-least-once), none is lost."""
    h = boot(tmp_path, kind, T0)
    send(h, 1, body=b"early")
    h.run_until(T0 + 10_500)  # delivered, then persisted at 10 s
    send(h, 1, body=b"late")
    h.run_until(T0 + 12_000)  # delivered, not yet persisted
    h = crash_and_reboot(h)
    h.run_until(h.now() + 2000)
    assert bodies(h) == [b"early", b"late", b"late"]
