"""Specification of the schedule package's pure parts: delay levels and our on-disk formats."""

from __future__ import annotations

import os

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.delay_levels import (
    DEFAULT_MESSAGE_DELAY_LEVEL,
    DelayLevelError,
    DelayLevels,
    parse_delay_levels,
)
from rocketmq_emu.broker.schedule.checkpoint import CHECKPOINT, TimerCheckpoint
from rocketmq_emu.broker.schedule.dispatch_log import (
    DISPATCH_ENTRY,
    DispatchLog,
    encode_dispatch_entry,
)
from rocketmq_emu.broker.schedule.schedule_log import (
    HEADER_SIZE,
    SCHEDULE_RECORD,
    ScheduleLog,
    ScheduleSegment,
    encode_schedule_record,
)

S, M, H = 1000, 60_000, 3_600_000


# --- delay levels ---------------------------------------------------------------------------
def test_default_table_has_rocketmqs_eighteen_levels():
    """The default messageDelayLevel parses to RocketMQ's 18 delays."""
    assert parse_delay_levels(DEFAULT_MESSAGE_DELAY_LEVEL) == [
        1 * S, 5 * S, 10 * S, 30 * S, 1 * M, 2 * M, 3 * M, 4 * M, 5 * M, 6 * M, 7 * M,
        8 * M, 9 * M, 10 * M, 20 * M, 30 * M, 1 * H, 2 * H,
    ]


def test_day_unit_and_custom_table():
    """Units s/m/h/d are all understood."""
    assert parse_delay_levels("2s 3m 4h 1d") == [2 * S, 3 * M, 4 * H, 24 * H]


@pytest.mark.parametrize("bad", ["", "1x", "s", "1.5s", "1s 2"])
def test_malformed_table_is_rejected(bad):
    """A malformed entry raises an error naming it."""
    with pytest.raises(DelayLevelError):
        parse_delay_levels(bad)


def test_level_above_max_is_clamped():
    """Levels above the maximum clamp to the maximum (HookUtils.transformDelayLevelMessage)."""
    levels = DelayLevels.parse()
    assert levels.max_level == 18
    assert levels.clamp(99) == 18
    assert levels.delay_ms(99) == 2 * H
    assert levels.clamp(3) == 3


def test_level_queue_mapping():
    """queueId = level - 1."""
    assert DelayLevels.queue_id(1) == 0 and DelayLevels.level(17) == 18


# --- schedule_log -----------------------------------------------------------------------------
@given(
    due=st.integers(-(2**63), 2**63 - 1),
    seq=st.integers(0, 2**63 - 1),
    src=st.integers(-1, 2**63 - 1),
    payload=st.binary(max_size=300),
)
def test_schedule_record_struct_matches_construct_spec(due, seq, src, payload):
    """The hot-path encoder writes exactly the bytes the construct spec describes."""
    data = encode_schedule_record(due, seq, src, payload)
    crc = crc32c.crc32c(payload, crc32c.crc32c(data[:32]))
    spec = SCHEDULE_RECORD.build(dict(payload_len=len(payload), due_ms=due, sequence=seq,
                                      source_offset=src, crc=crc, payload=payload))
    assert data == spec
    parsed = SCHEDULE_RECORD.parse(data)
    assert (parsed.due_ms, parsed.sequence, parsed.source_offset) == (due, seq, src)


def test_schedule_log_appends_into_due_buckets_and_reads_back(tmp_path):
    """Messages land in the segment of their due-time bucket, named by bucket start."""
    slog = ScheduleLog(str(tmp_path), bucket_ms=H)
    slog.load()
    b1, e1 = slog.append(5 * H + 10, 7, b"first")
    b2, e2 = slog.append(6 * H, 8, b"second")
    b3, e3 = slog.append(5 * H + 20, 9, b"third")
    assert (b1, b2, b3) == (5 * H, 6 * H, 5 * H)
    assert (e1.sequence, e3.sequence, e2.sequence) == (0, 1, 0)
    assert sorted(os.listdir(tmp_path / "schedule_log")) == [f"{5 * H:020d}", f"{6 * H:020d}"]
    assert slog.read_payload(b3, e3) == b"third"


def test_schedule_segment_recovery_cuts_a_torn_tail(tmp_path):
    """A half-written last record is cut off; earlier records and the sequence survive."""
    path = str(tmp_path / "seg")
    seg = ScheduleSegment(path, 0)
    seg.open()
    seg.append(100, 1, b"a" * 50)
    seg.append(200, 2, b"b" * 50)
    seg.close()
    good = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(encode_schedule_record(300, 2, 3, b"c" * 50)[:HEADER_SIZE + 10])
    again = ScheduleSegment(path, 0)
    again.open()
    assert os.path.getsize(path) == good
    assert [e.due_ms for e in again.scan()] == [100, 200]
    assert again.next_sequence == 2 and again.max_source_offset == 2


def test_schedule_segment_skips_a_corrupt_record(tmp_path, caplog):
    """A record whose checksum fails is skipped and logged with the file offset."""
    path = str(tmp_path / "seg")
    seg = ScheduleSegment(path, 0)
    seg.open()
    seg.append(100, 1, b"a" * 50)
    e2 = seg.append(200, 2, b"b" * 50)
    seg.append(300, 3, b"c" * 50)
    seg.close()
    with open(path, "r+b") as f:
        f.seek(e2.position + HEADER_SIZE + 5)
        f.write(b"X")
    again = ScheduleSegment(path, 0)
    again.open()
    assert [e.due_ms for e in again.scan()] == [100, 300]
    assert f"offset {e2.position}" in caplog.text
    assert again.next_sequence == 3


# --- dispatch_log ---------------------------------------------------------------------------
@given(seq=st.integers(-(2**63), 2**63 - 1))
def test_dispatch_entry_struct_matches_construct_spec(seq):
    """Dispatch entries are 12 bytes: sequence + crc32c, as the spec declares."""
    raw = encode_dispatch_entry(seq)
    assert raw == DISPATCH_ENTRY.build(dict(sequence=seq, crc=crc32c.crc32c(raw[:8])))


def test_dispatch_log_survives_reopen_and_cuts_torn_entry(tmp_path):
    """Dispatched sequences are read back after a restart; a torn last entry is dropped."""
    dlog = DispatchLog(str(tmp_path))
    dlog.segment(H).append(0)
    dlog.segment(H).append_many([2, 5])
    dlog.close()
    with open(tmp_path / "dispatch_log" / f"{H:020d}", "ab") as f:
        f.write(encode_dispatch_entry(9)[:7])
    again = DispatchLog(str(tmp_path))
    assert again.segment(H).dispatched == {0, 2, 5}
    assert os.path.getsize(tmp_path / "dispatch_log" / f"{H:020d}") == 36


def test_dispatch_log_ignores_corrupt_entry(tmp_path):
    """An entry with a bad checksum does not count as dispatched."""
    dlog = DispatchLog(str(tmp_path))
    dlog.segment(0).append_many([1, 2, 3])
    dlog.close()
    with open(tmp_path / "dispatch_log" / f"{0:020d}", "r+b") as f:
        f.seek(12 + 3)
        f.write(b"\xff")
    assert DispatchLog(str(tmp_path)).segment(0).dispatched == {1, 3}


# --- checkpoint -------------------------------------------------------------------------------
@given(a=st.integers(0, 2**62), b=st.integers(0, 2**62), c=st.integers(0, 2**62))
def test_checkpoint_struct_matches_construct_spec(a, b, c):
    """The checkpoint encoder matches the construct spec and round-trips."""
    cp = TimerCheckpoint(a, b, c)
    data = cp.encode()
    parsed = CHECKPOINT.parse(data)
    assert data == CHECKPOINT.build(dict(version=1, replay_offset=a, loaded_until_ms=b,
                                         dropped_below_ms=c, crc=parsed.crc))
    assert TimerCheckpoint.decode(data) == cp


def test_corrupt_checkpoint_is_reported_and_reset(tmp_path, caplog):
    """A checkpoint failing its checksum is logged and treated as fresh."""
    path = str(tmp_path / "cp")
    TimerCheckpoint(42, 1, 2).save(path)
    assert TimerCheckpoint.load(path).replay_offset == 42
    with open(path, "r+b") as f:
        f.seek(10)
        f.write(b"\x01")
    assert TimerCheckpoint.load(path) == TimerCheckpoint()
    assert "checksum" in caplog.text
