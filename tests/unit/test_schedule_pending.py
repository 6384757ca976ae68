"""broker/schedule/pending.py: what is scheduled and not yet delivered, read from the real store
and schedule services on a fake clock; delivered messages drop out, the merge is cut at the
limit, and the read creates nothing."""

from __future__ import annotations

import os

import pytest
from schedule_support import boot, clean_restart

from rocketmq_emu.broker.message import decode_offset_msg_id
from rocketmq_emu.broker.schedule.dispatch_log import DispatchLog
from rocketmq_emu.broker.schedule.pending import PENDING_KEYS, _dispatched, pending_scheduled
from rocketmq_emu.broker.schedule.timer_message import delete_key

H = 3_600_000
T0 = 1_700_000_000_000 - 1_700_000_000_000 % H + 10 * 60_000  # 10 min into a bucket


@pytest.fixture
def h(tmp_path):
    harness = boot(tmp_path, "real", T0)
    yield harness
    harness.services.shutdown()
    harness.store.shutdown()


def delayed(h, level, key, topic="T", queue_id=2, **props):
    return h.send(topic=topic, queue_id=queue_id, body=key.encode(), DELAY=str(level),
                  UNIQ_KEY=key, TAGS="tagD", KEYS="k1 k2", **props)


def timed(h, deliver_ms, key, topic="T", queue_id=1):
    return h.send(topic=topic, queue_id=queue_id, body=key.encode(), UNIQ_KEY=key, TAGS="tagT",
                  TIMER_DELIVER_MS=str(deliver_ms))


def pending(h, limit=200, timer=True, offsets=True):
    return pending_scheduled(h.store, h.store.delay_offsets if offsets else None,
                             h.services.levels, h.services.timer if timer else None, h.now(),
                             limit)


def test_delay_level_and_timer_listed_until_delivered(h):
    """Level 3 (10 s) due at store time + 10 s; the timer at its deliver time; both gone once
    delivered."""
    timed(h, T0 + H, "timer-1")
    delayed(h, 3, "delay-1")
    entries, truncated = pending(h)
    assert not truncated
    assert all(set(e) == set(PENDING_KEYS) for e in entries)
    d, t = entries
    assert (d["kind"], d["due"], d["level"]) == ("delayLevel", T0 + 10_000, 3)
    assert (d["topic"], d["queueId"], d["msgId"]) == ("T", 2, "delay-1")
    assert (d["tags"], d["keys"]) == ("tagD", ["k1", "k2"])
    # The offset msgId names the SCHEDULE_TOPIC_XXXX record in this store's commitlog.
    _host, _port, offset = decode_offset_msg_id(d["offsetMsgId"])
    assert h.store.look_message_by_offset(offset).properties["UNIQ_KEY"] == "delay-1"
    assert (t["kind"], t["due"], t["level"]) == ("timer", T0 + H, None)
    assert (t["topic"], t["queueId"], t["msgId"], t["tags"]) == ("T", 1, "timer-1", "tagT")
    assert t["offsetMsgId"] is not None

    h.run_until(T0 + 10_000)
    assert [m.body for m in h.messages("T")] == [b"delay-1"]
    assert [e["msgId"] for e in pending(h)[0]] == ["timer-1"]

    h.run_until(T0 + H + 100, step_ms=60_000)
    assert pending(h) == ([], False)


def test_merge_by_due_and_cut_at_limit(h):
    """Both sources merge by due time; the limit cuts the merge and says truncated."""
    delayed(h, 5, "d-1m")       # 60 s
    delayed(h, 1, "d-1s")       # 1 s
    delayed(h, 5, "d-1m-b")     # 60 s, after d-1m in the same level
    timed(h, T0 + 30_000, "t-30s")
    timed(h, T0 + 2 * H, "t-2h")  # a later bucket, beyond the loader's horizon
    timed(h, T0 + 5_000, "t-5s")
    order = ["d-1s", "t-5s", "t-30s", "d-1m", "d-1m-b", "t-2h"]
    entries, truncated = pending(h)
    assert [e["msgId"] for e in entries] == order and not truncated
    assert [e["due"] for e in entries] == sorted(e["due"] for e in entries)
    for limit in range(len(order)):
        entries, truncated = pending(h, limit=limit)
        assert [e["msgId"] for e in entries] == order[:limit] and truncated
    assert pending(h, limit=len(order))[1] is False


def test_timer_off_and_offsets_from_the_store(h):
    """timer_service None lists delay levels only; delay_offsets None reads the store's."""
    delayed(h, 2, "d")
    timed(h, T0 + H, "t")
    assert [e["msgId"] for e in pending(h, timer=False)[0]] == ["d"]
    assert [e["msgId"] for e in pending(h, offsets=False)[0]] == ["d", "t"]
    h.run_until(T0 + 5_000)
    assert [e["msgId"] for e in pending(h, offsets=False)[0]] == ["t"]


def test_recalled_timer_message_and_marker_not_listed(h):
    """A pending delete marker (RECALL_MESSAGE) hides itself and the message it deletes."""
    due = T0 + H
    for key in ("a", "b", "c"):
        timed(h, due, key)
    h.send(topic="T", queue_id=0, body=b"0", UNIQ_KEY="b", TAGS="_RECALL_TAG_",
           TIMER_DEL_UNIQKEY=delete_key("T", "b"), TIMER_DELIVER_MS=str(due + 1))
    assert [e["msgId"] for e in pending(h)[0]] == ["a", "c"]


def test_pending_survives_restart_and_reads_create_nothing(h):
    """After a clean restart the schedule_log still lists them; a read leaves the store's files
    as they were."""
    delayed(h, 4, "d")
    timed(h, T0 + 3 * H, "t")
    h2 = clean_restart(h)
    h.store = h2.store  # the fixture shuts down what the test ends with
    h.services = h2.services

    def files():
        root = h2.store.config.store_path_root_dir
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)

    before = files()
    entries, _ = pending(h2)
    assert [e["msgId"] for e in entries] == ["d", "t"]
    assert files() == before


def test_dispatched_sequences_read_without_opening_the_log(tmp_path):
    """A bucket whose dispatch_log is not open is read from its file; a bucket without one
    has nothing dispatched and gets no file."""
    dlog = DispatchLog(str(tmp_path))
    dlog.segment(0).append_many([0, 2])
    dlog.close()

    class Timer:
        pass

    timer = Timer()
    timer.dlog = dlog
    assert _dispatched(timer, 0) == {0, 2}
    assert _dispatched(timer, H) == set()
    assert os.listdir(dlog.dir) == [f"{0:020d}"]
