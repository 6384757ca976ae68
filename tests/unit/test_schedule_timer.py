"""Specification of arbitrary-time delivery: transform, schedule_log buckets, loader, wheel,
dispatch_log and crash recovery, on a fake clock."""

from __future__ import annotations

import os

import pytest
from twisted.internet.task import Clock

from broker.commitlog.record import MessageRecord
from broker.message import TIMER_TOPIC
from broker.schedule import ScheduleConfig, ScheduleServices, TimerMessageError
from broker.schedule.fake_store import FakeStore
from broker.schedule.timer_message import transform_timer_message
from broker.schedule.timer_service import TimerConfig

H = 3_600_000
T0 = 1_700_000_000_000 - 1_700_000_000_000 % H + 10 * 60_000  # 10 min into a bucket
YEAR = 365 * 86_400_000


def boot(tmp_path, store=None, at_ms=T0, **timer):
    clock = Clock()
    clock.advance(at_ms / 1000)
    store = store or FakeStore(clock)
    store.clock = clock
    cfg = ScheduleConfig(store_path_root_dir=str(tmp_path), timer=TimerConfig(**timer))
    services = ScheduleServices(store, clock, cfg)
    services.load()
    services.start()
    return clock, store, services


def crash_and_reboot(tmp_path, clock, store, **timer):
    """Drop all process state (no shutdown) and start again on the same store and files."""
    return boot(tmp_path, store=store, at_ms=int(clock.seconds() * 1000), **timer)


def now(clock):
    return int(clock.seconds() * 1000)


def send_at(services, store, deliver_ms, key, topic="T", queue_id=1):
    rec = MessageRecord(topic=topic, body=key.encode(), queue_id=queue_id,
                        properties={"UNIQ_KEY": key, "TIMER_DELIVER_MS": str(deliver_ms)})
    return store.put_message(services.transform_for_put(rec))


def delivered(store, topic="T"):
    return {m.properties["UNIQ_KEY"]: m for m in store.messages(topic)}


def run_until(clock, ms, step_ms=None, jump=False):
    """Advance like a real reactor: stop at every pending call's time (and every step_ms).
    ``jump`` advances in one go (pending calls then run late, at ``ms``)."""
    if jump:
        clock.advance(max(ms - now(clock), 0) / 1000)
        return
    target = ms / 1000
    while now(clock) < ms:
        nxt = min([c.getTime() for c in clock.getDelayedCalls()] + [target])
        if step_ms is not None:
            nxt = min(nxt, clock.seconds() + step_ms / 1000)
        clock.advance(max(nxt - clock.seconds(), 0.0001))


# --- transform ------------------------------------------------------------------------------
def test_timer_message_is_rewritten_to_the_timer_topic():
    """TIMER_DELAY_SEC becomes TIMER_OUT_MS on rmq_sys_wheel_timer queue 0 with REAL_*."""
    rec = MessageRecord(topic="T", queue_id=3, properties={"TIMER_DELAY_SEC": "90"})
    out = transform_timer_message(rec, 1000)
    assert (out.topic, out.queue_id) == (TIMER_TOPIC, 0)
    assert out.properties["TIMER_OUT_MS"] == "91000"
    assert out.properties["REAL_TOPIC"] == "T" and out.properties["REAL_QID"] == "3"


def test_delay_sec_takes_precedence_over_deliver_ms():
    """TIMER_DELAY_SEC, then TIMER_DELAY_MS, then TIMER_DELIVER_MS (HookUtils order)."""
    rec = MessageRecord(topic="T", properties={"TIMER_DELAY_MS": "5", "TIMER_DELIVER_MS": "9999"})
    assert transform_timer_message(rec, 1000).properties["TIMER_OUT_MS"] == "1005"


def test_past_deliver_time_is_left_for_immediate_delivery():
    """A deliver time at or before now leaves the record unchanged."""
    rec = MessageRecord(topic="T", properties={"TIMER_DELIVER_MS": "500"})
    assert transform_timer_message(rec, 1000).topic == "T"


def test_beyond_horizon_and_garbage_are_illegal():
    """Past timerMaxDelaySec, or unparsable, raises TimerMessageError with a clear remark."""
    far = MessageRecord(topic="T", properties={"TIMER_DELAY_SEC": str(3 * 365 * 86400)})
    with pytest.raises(TimerMessageError, match="timerMaxDelaySec"):
        transform_timer_message(far, 0)
    bad = MessageRecord(topic="T", properties={"TIMER_DELIVER_MS": "soon"})
    with pytest.raises(TimerMessageError, match="illegal"):
        transform_timer_message(bad, 0)


def test_delay_level_wins_over_timer_properties():
    """With DELAY > 0 the timer properties are dropped and the level path is used."""
    rec = MessageRecord(topic="T", properties={"DELAY": "2", "TIMER_DELAY_SEC": "60"})
    out = transform_timer_message(rec, 0)
    assert out.topic == "T" and "TIMER_DELAY_SEC" not in out.properties


# --- delivery -------------------------------------------------------------------------------
def test_arbitrary_times_across_bucket_boundaries_fire_on_time(tmp_path):
    """Messages either side of bucket boundaries arrive no earlier than due, within a tick."""
    clock, store, services = boot(tmp_path)
    start = T0 - T0 % H
    dues = [T0 + 1234, start + H - 1, start + H, start + H + 1, start + 2 * H + 777,
            start + 3 * H - 1, start + 5 * H + 59_999]
    for i, due in enumerate(dues):
        send_at(services, store, due, f"k{i}")
    run_until(clock, dues[-1] + 11, step_ms=997)
    got = delivered(store)
    for i, due in enumerate(dues):
        assert due <= got[f"k{i}"].store_timestamp <= due + 11
    assert [m.properties["UNIQ_KEY"] for m in store.messages("T")] == [f"k{i}" for i in range(7)]
    names = sorted(os.listdir(tmp_path / "timer" / "schedule_log"))
    assert all(int(n) % H == 0 for n in names)


def test_delivered_record_has_real_topic_and_timer_properties(tmp_path):
    """The due message goes to REAL_TOPIC/REAL_QID with TIMER_ENQUEUE_MS/TIMER_DEQUEUE_MS."""
    clock, store, services = boot(tmp_path)
    send_at(services, store, T0 + 5000, "a", queue_id=3)
    run_until(clock, T0 + 5020)
    got = delivered(store)["a"]
    assert got.queue_id == 3 and got.body == b"a"
    assert got.properties["TIMER_ENQUEUE_MS"] == str(T0)
    assert int(got.properties["TIMER_DEQUEUE_MS"]) == got.store_timestamp
    assert got.properties["TIMER_OUT_MS"] == str(T0 + 5000)
    assert got.properties["REAL_TOPIC"] == "T"  # string computed before REAL_* are cleared


def test_message_for_a_loaded_bucket_goes_straight_into_the_wheel(tmp_path):
    """A message due within the loaded horizon is in the wheel as soon as it is replayed."""
    clock, store, services = boot(tmp_path)
    send_at(services, store, T0 + 30 * 60_000, "soon")
    clock.advance(0)
    assert services.timer.pending == 1


def test_far_message_waits_on_disk_until_its_bucket_loads(tmp_path):
    """A message for a bucket beyond the horizon is only in the schedule_log until the loader
    brings its bucket in, load_advance before the bucket starts."""
    clock, store, services = boot(tmp_path)
    due = T0 - T0 % H + 5 * H + 123
    send_at(services, store, due, "later")
    clock.advance(0)
    assert services.timer.pending == 0
    bucket = due - due % H
    run_until(clock, bucket - 30 * 60_000 - 1)
    assert services.timer.pending == 0
    run_until(clock, bucket - 30 * 60_000 + 1)
    assert services.timer.pending == 1
    run_until(clock, due + 10)
    assert "later" in delivered(store)


def test_message_arriving_for_the_bucket_being_loaded_is_not_missed(tmp_path):
    """Messages for the next bucket sent just before, at and after its load all arrive once."""
    clock, store, services = boot(tmp_path)
    bucket = T0 - T0 % H + H
    load_at = bucket - 30 * 60_000
    run_until(clock, load_at - 1)
    send_at(services, store, bucket + 10, "before")
    run_until(clock, load_at)
    send_at(services, store, bucket + 20, "at")
    clock.advance(0.001)
    send_at(services, store, bucket + 30, "after")
    run_until(clock, bucket + 100)
    assert sorted(delivered(store)) == ["after", "at", "before"]
    assert len(store.messages("T")) == 3


def test_two_years_ahead_is_delivered_after_two_years(tmp_path):
    """A message two years out is delivered then, with nothing in memory meanwhile."""
    clock, store, services = boot(tmp_path)
    due = T0 + 2 * YEAR - 1000
    send_at(services, store, due, "far")
    run_until(clock, due - 2 * H, jump=True)
    assert services.timer.pending == 0 and delivered(store) == {}
    run_until(clock, due + 10)
    assert due <= delivered(store)["far"].store_timestamp <= due + 10


def test_past_deliver_time_is_delivered_immediately(tmp_path):
    """A deliver time in the past is stored on the real topic at once."""
    clock, store, services = boot(tmp_path)
    send_at(services, store, T0 - 5000, "past")
    assert delivered(store)["past"].store_timestamp == T0


def test_failed_put_is_retried(tmp_path):
    """A failed put on the real topic is retried until it succeeds."""
    clock, store, services = boot(tmp_path)
    send_at(services, store, T0 + 1000, "x")
    clock.advance(0)
    store.fail_puts = 2
    run_until(clock, T0 + 2000, step_ms=50)
    assert len(store.messages("T")) == 1


def test_dispatched_past_bucket_is_dropped_whole(tmp_path):
    """Once a bucket has ended and all its messages are dispatched, both files are removed."""
    clock, store, services = boot(tmp_path)
    send_at(services, store, T0 + 1000, "a")
    run_until(clock, T0 + 2000)
    bucket_name = f"{T0 - T0 % H:020d}"
    assert bucket_name in os.listdir(tmp_path / "timer" / "schedule_log")
    run_until(clock, T0 - T0 % H + H + 2000, step_ms=1000)
    assert bucket_name not in os.listdir(tmp_path / "timer" / "schedule_log")
    assert bucket_name not in os.listdir(tmp_path / "timer" / "dispatch_log")


def test_old_commitlog_may_go_once_copied(tmp_path):
    """The schedule_log holds the whole message: deleting the commitlog copy loses nothing."""
    clock, store, services = boot(tmp_path)
    send_at(services, store, T0 + 3 * H, "kept")
    clock.advance(0)
    store.forget_commitlog_before(store.next_offset)
    run_until(clock, T0 + 3 * H + 10)
    assert delivered(store)["kept"].body == b"kept"


# --- crash recovery ---------------------------------------------------------------------------
def test_restart_mid_bucket_loses_and_duplicates_nothing(tmp_path):
    """Crash halfway through a bucket: after restart every message arrives exactly once."""
    clock, store, services = boot(tmp_path)
    dues = [T0 + 1000 * i for i in range(1, 201)]
    for i, due in enumerate(dues):
        send_at(services, store, due, f"m{i}")
    run_until(clock, T0 + 100_500, step_ms=37)
    assert len(store.messages("T")) == 100
    clock, store, services = crash_and_reboot(tmp_path, clock, store)
    run_until(clock, T0 + 201_000, step_ms=1000)
    keys = [m.properties["UNIQ_KEY"] for m in store.messages("T")]
    assert len(keys) == 200 and len(set(keys)) == 200


def test_restart_with_stale_checkpoint_does_not_copy_twice(tmp_path):
    """If the checkpoint lags the schedule_log, replay resumes after the last copied offset."""
    clock, store, services = boot(tmp_path)
    for i in range(10):
        send_at(services, store, T0 + 2 * H + i, f"m{i}")
    clock.advance(0)  # replayed, checkpoint not yet written
    assert not os.path.exists(services.timer.checkpoint_path)
    clock, store, services = crash_and_reboot(tmp_path, clock, store)
    run_until(clock, T0 + 2 * H + 100, step_ms=60_000)
    assert len(store.messages("T")) == 10


def test_restart_after_downtime_delivers_overdue_messages(tmp_path):
    """Messages that came due while the broker was down are delivered right after start."""
    clock, store, services = boot(tmp_path)
    for i in range(5):
        send_at(services, store, T0 + 10_000 + i, f"m{i}")
    clock.advance(0)
    services.shutdown()
    clock2 = Clock()
    clock2.advance((T0 + 3 * H) / 1000)
    clock, store, services = crash_and_reboot(tmp_path, clock2, store)
    clock.advance(0.01)
    assert sorted(delivered(store)) == [f"m{i}" for i in range(5)]
