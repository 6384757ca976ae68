"""Recall in the timer (RocketMQ 5.3 delete markers, ``TimerMessageStore`` dequeue): a marker
goes through the schedule_log to the slot of the message it names, which is then skipped when
it falls due, before or after a restart, however the bucket is loaded."""

from __future__ import annotations

import os

import pytest
from schedule_support import STORE_KINDS, boot, clean_restart, crash_and_reboot

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import TIMER_TOPIC
from rocketmq_emu.broker.schedule import TimerMessageError, timer_service
from rocketmq_emu.broker.schedule.timer_message import delete_key, transform_timer_message

H = 3_600_000
T0 = 1_700_000_000_000 - 1_700_000_000_000 % H + 10 * 60_000  # 10 min into a bucket


@pytest.fixture(params=STORE_KINDS)
def kind(request):
    return request.param


def send_at(h, deliver_ms, key, topic="T"):
    return h.send(topic=topic, queue_id=1, body=key.encode(), UNIQ_KEY=key,
                  TIMER_DELIVER_MS=str(deliver_ms))


def recall(h, deliver_ms, key, topic="T"):
    """What RECALL_MESSAGE stores: a marker due at the handle's time (TIMER_OUT_MS + 1)."""
    return h.send(topic=topic, queue_id=0, body=b"0", UNIQ_KEY=key, TAGS="_RECALL_TAG_",
                  TIMER_DEL_UNIQKEY=delete_key(topic, key), TIMER_DELIVER_MS=str(deliver_ms + 1))


def keys(h, topic="T"):
    return sorted(m.properties["UNIQ_KEY"] for m in h.messages(topic))


# --- transform ------------------------------------------------------------------------------
def test_marker_takes_the_due_time_of_the_message_it_deletes():
    """Its TIMER_OUT_MS is the handle's timestamp - 1: the original's, to the ms."""
    rec = MessageRecord(topic="T", properties={"TIMER_DELIVER_MS": "5001",
                                               "TIMER_DEL_UNIQKEY": "T+k"})
    out = transform_timer_message(rec, 1000)
    assert (out.topic, out.properties["TIMER_OUT_MS"]) == (TIMER_TOPIC, "5000")


def test_marker_already_due_is_refused_not_delivered():
    """transformTimerMessage: a delete marker whose time has come is WHEEL_TIMER_MSG_ILLEGAL."""
    rec = MessageRecord(topic="T", properties={"TIMER_DELIVER_MS": "1000",
                                               "TIMER_DEL_UNIQKEY": "T+k"})
    with pytest.raises(TimerMessageError):
        transform_timer_message(rec, 1000)


def test_delete_key_is_topic_plus_unique_key():
    """TimerMessageStore.buildDeleteKey."""
    assert delete_key("T", "ID1") == "T+ID1"


# --- dequeue ----------------------------------------------------------------------------------
def test_recalled_message_is_not_delivered_and_others_are(tmp_path, kind):
    """Of three messages due at once, the recalled one is skipped; the marker is never put on
    the real topic; the bucket is dropped once past, as every record counts as dispatched."""
    h = boot(tmp_path, kind, T0)
    due = T0 + 5_000
    for key in ("a", "b", "c"):
        send_at(h, due, key)
    recall(h, due, "b")
    h.run_until(due + 100)
    assert keys(h) == ["a", "c"]
    assert h.services.timer.deleted == 1
    h.run_until(T0 + H + 2_000, step_ms=1000)
    assert os.listdir(os.path.join(h.services.timer.root, "schedule_log")) == []


def test_marker_for_another_topic_deletes_nothing(tmp_path, kind):
    """The delete key is topic + id: the same id on another topic stays."""
    h = boot(tmp_path, kind, T0)
    send_at(h, T0 + 5_000, "a")
    recall(h, T0 + 5_000, "a", topic="Other")
    h.run_until(T0 + 5_100)
    assert keys(h) == ["a"] and h.messages("Other") == []


def test_marker_in_the_last_ms_of_a_bucket_meets_its_message(tmp_path, kind):
    """A message due in a bucket's last ms: its marker (handle time in the next bucket) is
    filed in the same bucket all the same."""
    h = boot(tmp_path, kind, T0)
    due = T0 - T0 % H + H - 1
    send_at(h, due, "edge")
    recall(h, due, "edge")
    h.run_until(due + 100)
    assert keys(h) == []


@pytest.mark.parametrize("restart", [clean_restart, crash_and_reboot])
def test_recall_survives_a_restart(tmp_path, kind, restart):
    """Recalled before a restart, the message stays recalled after it (the marker is in the
    schedule_log), whether the broker comes back before or after the due time."""
    h = boot(tmp_path, kind, T0)
    send_at(h, T0 + 60_000, "gone")
    send_at(h, T0 + 60_000, "kept")
    send_at(h, T0 + 2 * H, "later-gone")
    recall(h, T0 + 60_000, "gone")
    recall(h, T0 + 2 * H, "later-gone")
    h.clock.advance(0)
    h = restart(h, at_ms=T0 + 30_000)
    h.run_until(T0 + 61_000)
    assert keys(h) == ["kept"]
    h = restart(h, at_ms=T0 + 3 * H)  # down while "later-gone" fell due
    h.run_until(T0 + 3 * H + 1_000)
    assert keys(h) == ["kept"]


def test_skipped_message_stays_skipped_after_a_restart(tmp_path, kind):
    """Once skipped, it is in the dispatch_log: a crash right after does not resurrect it."""
    h = boot(tmp_path, kind, T0)
    send_at(h, T0 + 5_000, "gone")
    send_at(h, T0 + 2 * H, "pin")  # keeps the process busy with another bucket
    recall(h, T0 + 5_000, "gone")
    h.run_until(T0 + 5_100)
    h = crash_and_reboot(h)
    h.run_until(T0 + 10_000)
    assert keys(h) == []


def test_marker_loaded_in_a_later_chunk_still_wins(tmp_path, kind):
    """A restart after the due time loads the bucket a few records per reactor turn; the
    overdue message waits until its bucket is loaded, so its marker further on is seen."""
    h = boot(tmp_path, kind, T0)
    due = T0 + 5_000
    for i in range(6):
        send_at(h, due, f"m{i}")
    recall(h, due, "m1")
    h.clock.advance(0)
    h.services.shutdown()
    h.timer_kwargs["load_chunk"] = 2
    h = crash_and_reboot(h, at_ms=T0 + 60_000)
    h.run_until(T0 + 61_000)
    assert keys(h) == ["m0", "m2", "m3", "m4", "m5"]


def test_marker_still_in_the_timer_queue_at_restart_wins(tmp_path, kind, monkeypatch):
    """Messages sent while the replayer did not run are copied a batch per turn at the next
    start; due ones wait until it has caught up, so a marker in a later batch is seen."""
    monkeypatch.setattr(timer_service, "REPLAY_BATCH", 2)
    h = boot(tmp_path, kind, T0)
    h.services.timer._running = False  # the replayer misses the arrivals (a crash meanwhile)
    due = T0 + 5_000
    for i in range(5):
        send_at(h, due, f"m{i}")
    recall(h, due, "m0")
    h = crash_and_reboot(h, at_ms=T0 + 60_000)
    h.run_until(T0 + 61_000)
    assert keys(h) == ["m1", "m2", "m3", "m4"]
