"""Specification of arbitrary-time delivery: transform, schedule_log buckets, loader, wheel,
dispatch_log and crash recovery, on a fake clock."""

from __future__ import annotations

import os

import pytest
from schedule_support import STORE_KINDS, boot, clean_restart, crash_and_reboot
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import TIMER_TOPIC
from rocketmq_emu.broker.schedule import TimerMessageError
from rocketmq_emu.broker.schedule.dispatch_log import DispatchLog
from rocketmq_emu.broker.schedule.hash_wheel import HashedWheel
from rocketmq_emu.broker.schedule.schedule_log import ScheduleLog
from rocketmq_emu.broker.schedule.timer_loader import BucketLoader
from rocketmq_emu.broker.schedule.timer_message import transform_timer_message

H = 3_600_000
T0 = 1_700_000_000_000 - 1_700_000_000_000 % H + 10 * 60_000  # 10 min into a bucket
YEAR = 365 * 86_400_000


@pytest.fixture(params=STORE_KINDS)
def kind(request):
    return request.param


def send_at(h, deliver_ms, key, topic="T", queue_id=1):
    return h.send(topic=topic, queue_id=queue_id, body=key.encode(), UNIQ_KEY=key,
                  TIMER_DELIVER_MS=str(deliver_ms))


def timer_files(h, kind_dir):
    return sorted(os.listdir(os.path.join(h.services.timer.root, kind_dir)))


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
def test_arbitrary_times_across_bucket_boundaries_fire_on_time(tmp_path, kind):
    """Messages either side of bucket boundaries arrive in due order, no earlier than due and
    within one tick; segment files are named by bucket start."""
    h = boot(tmp_path, kind, T0)
    start = T0 - T0 % H
    dues = [T0 + 1234, start + H - 1, start + H, start + H + 1, start + 2 * H + 777,
            start + 3 * H - 1, start + 5 * H + 59_999]
    for i, due in enumerate(dues):
        send_at(h, due, f"k{i}")
    h.run_until(dues[-1] + 11, step_ms=997)
    got = h.by_key()
    for i, due in enumerate(dues):
        assert due <= got[f"k{i}"].store_timestamp <= due + 11
    assert [m.properties["UNIQ_KEY"] for m in h.messages("T")] == [f"k{i}" for i in range(7)]


def test_segments_are_named_by_bucket_start(tmp_path, kind):
    """Each due time lands in the schedule_log segment named after its bucket's start."""
    h = boot(tmp_path, kind, T0)
    start = T0 - T0 % H
    for i, due in enumerate([start + H - 1, start + H, start + 4 * H + 5]):
        send_at(h, due, f"k{i}")
    h.clock.advance(0)
    assert timer_files(h, "schedule_log") == [f"{b:020d}" for b in
                                              (start, start + H, start + 4 * H)]


def test_delivered_record_has_real_topic_and_timer_properties(tmp_path, kind):
    """The due message goes to REAL_TOPIC/REAL_QID with TIMER_ENQUEUE_MS/TIMER_DEQUEUE_MS."""
    h = boot(tmp_path, kind, T0)
    send_at(h, T0 + 5000, "a", queue_id=3)
    h.run_until(T0 + 5020)
    got = h.by_key()["a"]
    assert got.queue_id == 3 and got.body == b"a"
    assert got.properties["TIMER_ENQUEUE_MS"] == str(T0)
    assert int(got.properties["TIMER_DEQUEUE_MS"]) == got.store_timestamp
    assert got.properties["TIMER_OUT_MS"] == str(T0 + 5000)
    assert got.properties["REAL_TOPIC"] == "T"  # string computed before REAL_* are cleared


def test_message_for_a_loaded_bucket_goes_straight_into_the_wheel(tmp_path, kind):
    """A message due within the loaded horizon is in the wheel as soon as it is replayed."""
    h = boot(tmp_path, kind, T0)
    send_at(h, T0 + 30 * 60_000, "soon")
    h.clock.advance(0)
    assert h.services.timer.pending == 1


def test_far_message_waits_on_disk_until_its_bucket_loads(tmp_path, kind):
    """A message for a bucket beyond the horizon is only in the schedule_log until the loader
    brings its bucket in, load_advance before the bucket starts."""
    h = boot(tmp_path, kind, T0)
    due = T0 - T0 % H + 5 * H + 123
    send_at(h, due, "later")
    h.clock.advance(0)
    assert h.services.timer.pending == 0
    bucket = due - due % H
    h.run_until(bucket - 30 * 60_000 - 1)
    assert h.services.timer.pending == 0
    h.run_until(bucket - 30 * 60_000 + 1)
    assert h.services.timer.pending == 1
    h.run_until(due + 10)
    assert "later" in h.by_key()


def test_message_arriving_for_the_bucket_being_loaded_is_not_missed(tmp_path, kind):
    """Messages for the next bucket sent just before, at and after its load all arrive once."""
    h = boot(tmp_path, kind, T0)
    bucket = T0 - T0 % H + H
    load_at = bucket - 30 * 60_000
    h.run_until(load_at - 1)
    send_at(h, bucket + 10, "before")
    h.run_until(load_at)
    send_at(h, bucket + 20, "at")
    h.run_until(load_at + 1)
    send_at(h, bucket + 30, "after")
    h.run_until(bucket + 100)
    assert sorted(h.by_key()) == ["after", "at", "before"]
    assert len(h.messages("T")) == 3


def test_load_spread_over_reactor_turns_misses_and_doubles_nothing(tmp_path):
    """With a load chunk of 3 records, records copied while their bucket is queued or half
    loaded end up in the wheel exactly once."""
    clock = Clock()
    slog = ScheduleLog(str(tmp_path), H)
    slog.load()
    dlog = DispatchLog(str(tmp_path))
    fired = []
    wheel = HashedWheel(clock, fired.extend)
    wheel.start()
    loader = BucketLoader(clock, slog, dlog, wheel, 30 * 60_000, chunk=3)
    bucket = 10 * H

    def replay_one(due, n):
        loader.before_append(slog.bucket_of(due))
        b, entry = slog.append(due, n, b"m%d" % n)
        if loader.accepts(b, entry):
            wheel.add(due, (b, entry.sequence, entry.position, entry.payload_len))

    for n in range(10):
        replay_one(bucket + n, n)
    clock.advance((bucket - 30 * 60_000) / 1000)
    loader.start()  # first chunk now, the rest on later reactor turns
    assert loader.loading_bucket == bucket and len(wheel) == 3
    replay_one(bucket + 50, 10)  # appended after the load's snapshot: straight into the wheel
    assert len(wheel) == 4
    clock.advance(0)
    replay_one(bucket + 60, 11)
    while loader.loading_bucket is not None:
        clock.advance(0)
    assert len(wheel) == 12
    clock.advance(H / 1000)
    assert sorted(item[1] for _due, item in fired) == list(range(12))


def test_two_years_ahead_is_delivered_after_two_years(tmp_path, kind):
    """A message two years out is delivered then, with nothing in memory meanwhile."""
    h = boot(tmp_path, kind, T0)
    due = T0 + 2 * YEAR - 1000
    send_at(h, due, "far")
    h.run_until(due - 2 * H, jump=True)
    assert h.services.timer.pending == 0 and h.by_key() == {}
    h.run_until(due + 10)
    assert due <= h.by_key()["far"].store_timestamp <= due + 10


def test_past_deliver_time_is_delivered_immediately(tmp_path, kind):
    """A deliver time in the past is stored on the real topic at once."""
    h = boot(tmp_path, kind, T0)
    send_at(h, T0 - 5000, "past")
    assert h.by_key()["past"].store_timestamp == T0


def test_failed_put_is_retried(tmp_path, kind):
    """A failed put on the real topic is retried until it succeeds."""
    h = boot(tmp_path, kind, T0)
    send_at(h, T0 + 1000, "x")
    h.clock.advance(0)
    h.fail_puts(2)
    h.run_until(T0 + 2000)
    assert len(h.messages("T")) == 1


def test_dispatched_past_bucket_is_dropped_whole(tmp_path, kind):
    """Once a bucket has ended and all its messages are dispatched, both files are removed."""
    h = boot(tmp_path, kind, T0)
    send_at(h, T0 + 1000, "a")
    h.run_until(T0 + 2000)
    name = f"{T0 - T0 % H:020d}"
    assert name in timer_files(h, "schedule_log")
    h.run_until(T0 - T0 % H + H + 2000)
    assert name not in timer_files(h, "schedule_log")
    assert name not in timer_files(h, "dispatch_log")


def test_old_commitlog_may_go_once_copied(tmp_path):
    """The schedule_log holds the whole message: deleting the commitlog copy loses nothing."""
    h = boot(tmp_path, "fake", T0)
    send_at(h, T0 + 3 * H, "kept")
    h.clock.advance(0)
    h.store.forget_commitlog_before(h.store.next_offset)
    h.run_until(T0 + 3 * H + 10)
    assert h.by_key()["kept"].body == b"kept"


# --- crash recovery ---------------------------------------------------------------------------
def test_restart_mid_bucket_loses_and_duplicates_nothing(tmp_path, kind):
    """Crash halfway through a bucket: after restart every message arrives exactly once."""
    h = boot(tmp_path, kind, T0)
    for i in range(1, 201):
        send_at(h, T0 + 1000 * i, f"m{i}")
    h.run_until(T0 + 100_500)
    assert len(h.messages("T")) == 100
    h = crash_and_reboot(h)
    h.run_until(T0 + 201_000)
    keys = [m.properties["UNIQ_KEY"] for m in h.messages("T")]
    assert len(keys) == 200 and len(set(keys)) == 200


def test_restart_with_stale_checkpoint_does_not_copy_twice(tmp_path, kind):
    """If the checkpoint lags the schedule_log, replay resumes after the last copied offset."""
    h = boot(tmp_path, kind, T0)
    for i in range(10):
        send_at(h, T0 + 2 * H + i, f"m{i}")
    h.clock.advance(0)  # replayed, checkpoint not yet written
    assert not os.path.exists(h.services.timer.checkpoint_path)
    h = crash_and_reboot(h)
    h.run_until(T0 + 2 * H + 100)
    assert len(h.messages("T")) == 10


def test_restart_after_downtime_delivers_overdue_messages(tmp_path, kind):
    """Messages that came due while the broker was down are delivered right after start."""
    h = boot(tmp_path, kind, T0)
    for i in range(5):
        send_at(h, T0 + 10_000 + i, f"m{i}")
    h.clock.advance(0)
    h = clean_restart(h, at_ms=T0 + 3 * H)
    h.clock.advance(0.01)
    assert sorted(h.by_key()) == [f"m{i}" for i in range(5)]
