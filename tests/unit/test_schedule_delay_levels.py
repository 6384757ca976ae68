"""Specification of delay-level delivery (ScheduleMessageService) on a fake clock and store."""

from __future__ import annotations

import json
import os

import pytest
from twisted.internet.task import Clock

from broker.commitlog.record import MessageRecord
from broker.message import RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_HALF_TOPIC
from broker.schedule import ScheduleConfig, ScheduleServices
from broker.schedule.delay_levels import DelayLevels
from broker.schedule.fake_store import FakeStore

T0 = 1_700_000_000_000  # ms


def boot(tmp_path, store=None, clock=None):
    clock = clock or Clock()
    if not clock.seconds():
        clock.advance(T0 / 1000)
    store = store or FakeStore(clock)
    store.clock = clock
    services = ScheduleServices(store, clock, ScheduleConfig(store_path_root_dir=str(tmp_path)))
    services.load()
    services.start()
    return clock, store, services


def send(services, store, topic="T", queue_id=2, delay=None, body=b"hello", **props):
    p = {"UNIQ_KEY": props.pop("key", body.decode()), "TAGS": "tagA", **props}
    if delay is not None:
        p["DELAY"] = str(delay)
    rec = MessageRecord(topic=topic, body=body, queue_id=queue_id, properties=p,
                        born_timestamp=int(store.clock.seconds() * 1000))
    return store.put_message(services.transform_for_put(rec))


def now(clock):
    return int(clock.seconds() * 1000)


def advance_to(clock, ms):
    clock.advance(max(ms - now(clock), 0) / 1000)


def test_delayed_message_is_stored_on_schedule_topic_queue_level_minus_one(tmp_path):
    """DELAY=n puts the message on SCHEDULE_TOPIC_XXXX queue n-1 with REAL_TOPIC/REAL_QID."""
    clock, store, services = boot(tmp_path)
    send(services, store, delay=3)
    [rec] = store.messages(RMQ_SYS_SCHEDULE_TOPIC, 2)
    assert rec.properties["REAL_TOPIC"] == "T" and rec.properties["REAL_QID"] == "2"
    assert rec.properties["DELAY"] == "3"
    assert store.queues[(RMQ_SYS_SCHEDULE_TOPIC, 2)][0][2] == rec.store_timestamp + 10_000


def test_every_default_level_fires_at_its_delay(tmp_path):
    """Each of the 18 default levels is delivered at storeTimestamp + delay, not before."""
    clock, store, services = boot(tmp_path)
    levels = DelayLevels.parse()
    for level in range(1, 19):
        send(services, store, delay=level, body=f"L{level}".encode(), queue_id=level % 4)
    sent_at = now(clock)
    for level in range(1, 19):
        due = sent_at + levels.delay_ms(level)
        advance_to(clock, due - 2)
        assert f"L{level}".encode() not in [m.body for m in store.messages("T")]
        advance_to(clock, due + 2)
        [got] = [m for m in store.messages("T") if m.body == f"L{level}".encode()]
        assert due <= got.store_timestamp <= due + 2
        assert got.queue_id == level % 4
    assert len(store.messages("T")) == 18


def test_level_above_max_is_clamped_to_two_hours(tmp_path):
    """DELAY=25 is clamped to level 18 (queue 17, 2 h) and DELAY is rewritten to 18."""
    clock, store, services = boot(tmp_path)
    send(services, store, delay=25)
    [rec] = store.messages(RMQ_SYS_SCHEDULE_TOPIC, 17)
    assert rec.properties["DELAY"] == "18"
    advance_to(clock, T0 + 7_200_000 - 1)
    assert store.messages("T") == []
    advance_to(clock, T0 + 7_200_000 + 1)
    assert len(store.messages("T")) == 1


def test_restored_record_keeps_rocketmqs_property_string(tmp_path):
    """The re-put record is on the real topic/queue but its stored properties still carry
    DELAY, REAL_TOPIC and REAL_QID (ScheduleMessageService.messageTimeup quirk)."""
    clock, store, services = boot(tmp_path)
    send(services, store, delay=1, body=b"payload")
    [scheduled] = store.messages(RMQ_SYS_SCHEDULE_TOPIC)
    clock.advance(1.01)
    [got] = store.messages("T", 2)
    assert got.body == b"payload"
    assert got.properties["DELAY"] == "1" and got.properties["REAL_TOPIC"] == "T"
    assert got.properties["REAL_QID"] == "2" and got.properties["TAGS"] == "tagA"
    assert got.born_timestamp == scheduled.born_timestamp
    assert got.physical_offset != scheduled.physical_offset
    assert store.queues[("T", 2)][0][2] != 0  # tagsCode of TAGS, not a deliver time


def test_failed_reput_is_retried_without_skipping(tmp_path):
    """A failed put is retried at the same offset; order and count are preserved."""
    clock, store, services = boot(tmp_path)
    send(services, store, delay=1, body=b"a")
    send(services, store, delay=1, body=b"b")
    store.fail_puts = 3
    clock.advance(1.0)
    assert store.messages("T") == [] and store.fail_puts == 2
    for _ in range(5):
        clock.advance(0.1)
    assert [m.body for m in store.messages("T")] == [b"a", b"b"]


def test_half_topic_messages_are_dropped(tmp_path):
    """A delayed message whose real topic is RMQ_SYS_TRANS_HALF_TOPIC is not restored."""
    clock, store, services = boot(tmp_path)
    send(services, store, topic=RMQ_SYS_TRANS_HALF_TOPIC, queue_id=0, delay=1)
    send(services, store, delay=1, body=b"ok")
    clock.advance(2)
    assert store.messages(RMQ_SYS_TRANS_HALF_TOPIC) == []
    assert [m.body for m in store.messages("T")] == [b"ok"]


def test_idle_levels_do_not_poll(tmp_path):
    """With nothing scheduled no level timer is pending; one arrival arms one timer exactly at
    the deliver time."""
    clock, store, services = boot(tmp_path)
    clock.advance(1)

    def level_calls():
        return [c for c in clock.getDelayedCalls() if c.func == services.delay._deliver]

    assert level_calls() == []
    send(services, store, delay=4)
    [call] = level_calls()
    assert call.getTime() == pytest.approx(clock.seconds() + 30, abs=1e-3)


def test_offsets_persist_and_restart_resumes_without_duplicates(tmp_path):
    """delayOffset.json records delivered offsets; a restart neither loses nor repeats."""
    clock, store, services = boot(tmp_path)
    for i in range(3):
        send(services, store, delay=2, body=f"m{i}".encode())
    clock.advance(5.5)
    assert len(store.messages("T")) == 3
    clock.advance(10)  # periodic persist
    path = os.path.join(str(tmp_path), "config", "delayOffset.json")
    assert json.loads(open(path).read())["offsetTable"]["2"] == 3
    send(services, store, delay=2, body=b"m3")
    clock.advance(1)
    services.shutdown()
    clock2 = Clock()
    clock2.advance(clock.seconds())
    clock2, store, services2 = boot(tmp_path, store=store, clock=clock2)
    clock2.advance(10)
    assert [m.body for m in store.messages("T")] == [b"m0", b"m1", b"m2", b"m3"]


def test_crash_without_persist_redelivers_only_unpersisted(tmp_path):
    """After a crash (no shutdown) the level restarts from the last persisted offset: messages
    delivered since the last persist are delivered again, none is lost."""
    clock, store, services = boot(tmp_path)
    send(services, store, delay=1, body=b"early")
    clock.advance(10.5)  # delivered and persisted at 10 s
    send(services, store, delay=1, body=b"late")
    clock.advance(1.5)  # delivered, not yet persisted
    clock2 = Clock()
    clock2.advance(clock.seconds())
    clock2, store, _ = boot(tmp_path, store=store, clock=clock2)
    clock2.advance(2)
    assert [m.body for m in store.messages("T")] == [b"early", b"late", b"late"]
