"""Specification of consume queues: files, dispatch idempotence, recovery, retention, search."""

from __future__ import annotations

import errno
import logging
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.commitlog.mapped_file import MappedFileError
from rocketmq_emu.broker.consumequeue.consume_queue import ConsumeQueue, cq_file_size
from rocketmq_emu.broker.consumequeue.unit import (
    CQ_STORE_UNIT_SIZE,
    INTEGER_MAX_VALUE,
    PRE_BLANK_BYTES,
    encode_unit,
)

UNITS_PER_FILE = 5
FILE_SIZE = UNITS_PER_FILE * 20


def make_cq(tmp_path, topic="T", qid=0):
    return ConsumeQueue(topic, qid, str(tmp_path / "consumequeue"), FILE_SIZE)


def fill(cq, n, start=0, msg_size=100):
    """Dispatch n messages of msg_size bytes laid end to end in the commitlog."""
    for i in range(start, start + n):
        assert cq.put(i, i * msg_size, msg_size, i)


def reopen(tmp_path, topic="T", qid=0):
    cq = make_cq(tmp_path, topic, qid)
    cq.load()
    cq.recover()
    return cq


def qdir(tmp_path, topic="T", qid=0):
    return tmp_path / "consumequeue" / topic / str(qid)


def test_file_size_rounds_up_to_whole_units():
    """mappedFileSizeConsumeQueue is rounded up to a multiple of 20."""
    assert cq_file_size(6_000_000) == 6_000_000
    assert cq_file_size(101) == 120


def test_units_land_at_offset_times_twenty_in_named_files(tmp_path):
    """Logical offset n is at byte n*20; files are named by their 20-digit first byte offset."""
    cq = make_cq(tmp_path)
    fill(cq, 7)
    cq.flush()
    assert sorted(os.listdir(qdir(tmp_path))) == ["00000000000000000000", "00000000000000000100"]
    second = (qdir(tmp_path) / "00000000000000000100").read_bytes()
    assert second[:20] == encode_unit(500, 100, 5)
    assert second[20:40] == encode_unit(600, 100, 6)
    assert second[40:] == bytes(60)


def test_get_units_spans_files(tmp_path):
    """Reading returns (commitlog offset, size, tagsCode) across file boundaries."""
    cq = make_cq(tmp_path)
    fill(cq, 12)
    assert len(os.listdir(qdir(tmp_path))) == 3
    assert cq.get_units(3, 5) == [(i * 100, 100, i) for i in range(3, 8)]
    assert cq.get_units(10, 32) == [(1000, 100, 10), (1100, 100, 11)]
    assert cq.get_units(12, 32) == []
    assert (cq.min_offset, cq.max_offset, cq.last_commitlog_offset) == (0, 12, 1200)


def test_unit_bytes_is_one_piece_per_file_spanned(tmp_path):
    """The undecoded window a pull scans: one piece per file, the units as stored."""
    cq = make_cq(tmp_path)
    fill(cq, 12)
    pieces = cq.unit_bytes(3, 5)
    assert [len(p) // CQ_STORE_UNIT_SIZE for p in pieces] == [2, 3]
    assert b"".join(pieces) == b"".join(encode_unit(i * 100, 100, i) for i in range(3, 8))
    assert list(cq.scan_units(3, 5)) == cq.get_units(3, 5)


def test_redispatch_is_ignored(tmp_path):
    """Re-putting an already written unit changes nothing (reput after recovery)."""
    cq = make_cq(tmp_path)
    fill(cq, 3)
    assert not cq.put(1, 100, 100, 1)
    assert not cq.put(2, 200, 100, 2)
    assert cq.max_offset == 3
    assert cq.get_units(0, 10) == [(0, 100, 0), (100, 100, 1), (200, 100, 2)]


def test_redispatch_after_reload_is_ignored(tmp_path):
    """After a restart the same dispatch is still a no-op."""
    cq = make_cq(tmp_path)
    fill(cq, 6)
    cq.shutdown()
    again = reopen(tmp_path)
    assert not again.put(5, 500, 100, 5)
    assert again.put(6, 600, 100, 6)
    assert again.max_offset == 7


def test_first_file_at_nonzero_offset_gets_pre_blank_fillers(tmp_path):
    """A queue starting at offset 7 fills units 5..6 of its first file with (0, MAX_INT, 0)."""
    cq = make_cq(tmp_path)
    assert cq.put(7, 4096, 100, 9)
    assert os.listdir(qdir(tmp_path)) == ["00000000000000000100"]
    data = (qdir(tmp_path) / "00000000000000000100").read_bytes()
    assert data[:40] == PRE_BLANK_BYTES * 2
    assert data[40:60] == encode_unit(4096, 100, 9)
    assert (cq.min_offset, cq.max_offset, cq.last_commitlog_offset) == (7, 8, 4196)
    assert cq.get_units(5, 5) == []
    assert cq.get_units(7, 5) == [(4096, 100, 9)]


def test_first_file_starting_exactly_at_first_offset_sets_min_offset(tmp_path):
    """A queue whose first offset is a file boundary needs no filler but starts there."""
    cq = make_cq(tmp_path)
    assert cq.put(5, 4096, 100, 9)
    assert (cq.min_offset, cq.max_offset) == (5, 6)
    assert cq.get_units(5, 5) == [(4096, 100, 9)]


def test_fillers_are_skipped_after_reload(tmp_path):
    """Recovery counts fillers neither as messages nor as the queue's start."""
    cq = make_cq(tmp_path)
    cq.put(7, 4096, 100, 9)
    cq.shutdown()
    again = reopen(tmp_path)
    assert (again.min_offset, again.max_offset, again.last_commitlog_offset) == (7, 8, 4196)


def test_offset_gap_is_filled_and_logged(tmp_path, caplog):
    """A put past the next expected offset keeps offset == position by writing fillers."""
    cq = make_cq(tmp_path)
    cq.put(0, 0, 100, 0)
    with caplog.at_level(logging.ERROR):
        assert cq.put(3, 300, 100, 3)
    assert "gap" in caplog.text and str(qdir(tmp_path)) in caplog.text
    assert cq.get_units(0, 4) == [(0, 100, 0), (0, INTEGER_MAX_VALUE, 0),
                                  (0, INTEGER_MAX_VALUE, 0), (300, 100, 3)]


def test_put_run_writes_what_one_put_per_unit_writes(tmp_path):
    """put_run of three units gives the bytes, offsets and max physic offset of three puts."""
    one, run = make_cq(tmp_path / "one"), make_cq(tmp_path / "run")
    fill(one, 4)
    fill(run, 1)
    assert run.put_run(1, [100, 200, 300], [100, 100, 100], [1, 2, 3])
    assert run.get_units(0, 10) == one.get_units(0, 10)
    assert (run.max_offset, run.max_physic_offset) == (one.max_offset, one.max_physic_offset)


@pytest.mark.parametrize("first, units", [(2, 3), (1, 5)])
def test_put_run_declines_what_is_not_a_plain_append(tmp_path, first, units):
    """A run not at the next offset, or not fitting the last file, writes nothing: False."""
    cq = make_cq(tmp_path)
    fill(cq, 1)
    offsets = [first * 100 + 100 * i for i in range(units)]
    assert not cq.put_run(first, offsets, [100] * units, [0] * units)
    assert cq.max_offset == 1


def test_recover_restores_offsets(tmp_path):
    """Reloading finds the written units and the last dispatched commitlog offset."""
    cq = make_cq(tmp_path)
    fill(cq, 12)
    cq.shutdown()
    again = reopen(tmp_path)
    assert (again.min_offset, again.max_offset, again.last_commitlog_offset) == (0, 12, 1200)
    assert again.get_units(9, 3) == [(900, 100, 9), (1000, 100, 10), (1100, 100, 11)]


def test_recover_stops_at_first_invalid_unit(tmp_path):
    """A unit with size <= 0 ends the queue; later units and files are dropped."""
    cq = make_cq(tmp_path)
    fill(cq, 12)
    cq.shutdown()
    path = qdir(tmp_path) / "00000000000000000100"
    data = bytearray(path.read_bytes())
    data[40:60] = encode_unit(700, 0, 7)  # unit 7: size 0
    path.write_bytes(bytes(data))
    again = reopen(tmp_path)
    assert (again.max_offset, again.last_commitlog_offset) == (7, 700)
    assert sorted(os.listdir(qdir(tmp_path))) == ["00000000000000000000", "00000000000000000100"]
    assert (qdir(tmp_path) / "00000000000000000100").read_bytes()[40:] == bytes(60)
    assert again.put(7, 700, 100, 7)


def test_recover_stops_at_all_zero_hole(tmp_path):
    """An all-zero unit inside written data ends the queue even with units after it."""
    cq = ConsumeQueue("T", 0, str(tmp_path / "consumequeue"), 20 * 16)
    fill(cq, 12)
    cq.shutdown()
    path = qdir(tmp_path) / "00000000000000000000"
    data = bytearray(path.read_bytes())
    data[3 * 20:4 * 20] = bytes(20)
    path.write_bytes(bytes(data))
    again = ConsumeQueue("T", 0, str(tmp_path / "consumequeue"), 20 * 16)
    again.load()
    again.recover()
    assert (again.max_offset, again.last_commitlog_offset) == (3, 300)
    assert path.read_bytes()[60:] == bytes(20 * 13)


def test_truncate_dirty_drops_units_beyond_commitlog_end(tmp_path):
    """After the commitlog lost its tail, units pointing at or past the new end disappear."""
    cq = make_cq(tmp_path)
    fill(cq, 12)
    cq.truncate_dirty(500)
    assert (cq.max_offset, cq.last_commitlog_offset) == (5, 500)
    assert len(os.listdir(qdir(tmp_path))) == 2  # the file of unit 5 is kept, empty
    assert cq.get_units(0, 32)[-1] == (400, 100, 4)
    assert cq.put(5, 500, 100, 5)  # re-dispatch rebuilds from there
    assert cq.max_offset == 6


def test_truncate_dirty_mid_file(tmp_path):
    """Truncation inside a file keeps the earlier units of that file."""
    cq = make_cq(tmp_path)
    fill(cq, 8)
    cq.truncate_dirty(650)
    assert cq.max_offset == 7 and cq.last_commitlog_offset == 700
    cq.truncate_dirty(200)
    assert cq.max_offset == 2 and cq.last_commitlog_offset == 200


def test_truncate_everything(tmp_path):
    """A commitlog emptied below every unit leaves an empty queue."""
    cq = make_cq(tmp_path)
    fill(cq, 3)
    cq.truncate_dirty(0)
    assert (cq.max_offset, cq.last_commitlog_offset) == (0, -1)


def test_retention_deletes_head_files_and_moves_min_offset(tmp_path):
    """Files whose messages are all below the commitlog minimum go; min offset follows."""
    cq = make_cq(tmp_path)
    fill(cq, 12)
    assert cq.delete_expired_files(700) == 1
    assert sorted(os.listdir(qdir(tmp_path))) == ["00000000000000000100", "00000000000000000200"]
    assert cq.min_offset == 7
    assert cq.get_units(5, 2) == []
    assert cq.get_units(7, 1) == [(700, 100, 7)]


def test_retention_never_deletes_last_file(tmp_path):
    """Even when every message expired the last file stays; the queue reads as empty."""
    cq = make_cq(tmp_path)
    fill(cq, 7)
    assert cq.delete_expired_files(10_000) == 1
    assert len(os.listdir(qdir(tmp_path))) == 1
    assert cq.min_offset == cq.max_offset == 7


def test_min_offset_survives_reload_after_retention(tmp_path):
    """After restart the first file's start is the min offset until corrected."""
    cq = make_cq(tmp_path)
    fill(cq, 12)
    cq.delete_expired_files(700)
    cq.shutdown()
    again = reopen(tmp_path)
    assert again.min_offset == 5
    again.correct_min_offset(700)
    assert again.min_offset == 7


# --- offset_by_time ----------------------------------------------------------------------------
TIMES = [1000, 2000, 3000, 3000, 3000, 6000, 7000]


def time_cq(tmp_path, times=TIMES):
    cq = make_cq(tmp_path)
    fill(cq, len(times))
    return cq, (lambda phy, size: times[phy // 100])


def test_offset_by_time_exact_match(tmp_path):
    """A unit whose store time equals the target wins."""
    cq, store_time = time_cq(tmp_path)
    assert cq.offset_by_time(2000, store_time) == 1
    assert cq.offset_by_time(7000, store_time) == 6
    assert TIMES[cq.offset_by_time(3000, store_time)] == 3000


def test_offset_by_time_closest_neighbour(tmp_path):
    """Between two store times the closer unit wins; at equal distance the earlier."""
    cq, store_time = time_cq(tmp_path)
    assert cq.offset_by_time(5900, store_time) == 5
    assert cq.offset_by_time(3100, store_time) in (2, 3, 4)
    assert cq.offset_by_time(4500, store_time) == 4
    assert cq.offset_by_time(1500, store_time) == 0


def test_offset_by_time_outside_range(tmp_path):
    """Before every message: the first unit; after every message: the last unit."""
    cq, store_time = time_cq(tmp_path)
    assert cq.offset_by_time(10, store_time) == 0
    assert cq.offset_by_time(99_999, store_time) == 6


def test_offset_by_time_unreadable_message_gives_zero(tmp_path):
    """A store time of -1 (message gone) answers 0, as RocketMQ."""
    cq, _ = time_cq(tmp_path)
    assert cq.offset_by_time(3000, lambda phy, size: -1) == 0


def test_offset_by_time_without_files_is_zero(tmp_path):
    """A queue without files answers 0."""
    assert make_cq(tmp_path).offset_by_time(5, lambda phy, size: 0) == 0


def test_offset_by_time_skips_units_below_commitlog_min(tmp_path):
    """Units whose message was deleted are not consulted."""
    cq, store_time = time_cq(tmp_path)
    assert cq.offset_by_time(10, store_time, min_commitlog_offset=300) == 3


def test_offset_by_time_boundaries(tmp_path):
    """lower/upper pick the first/last equal time, else the first later/last earlier unit."""
    cq, store_time = time_cq(tmp_path)
    assert cq.offset_by_time(3000, store_time, boundary="lower") == 2
    assert cq.offset_by_time(3000, store_time, boundary="UPPER") == 4
    assert cq.offset_by_time(5000, store_time, boundary="lower") == 5
    assert cq.offset_by_time(5000, store_time, boundary="upper") == 4


@pytest.mark.parametrize("target", [0, 1000, 2500, 3000, 6500, 7000, 8000])
def test_offset_by_time_after_reload_matches(tmp_path, target):
    """The search gives the same answer on a reloaded queue spanning files."""
    cq, store_time = time_cq(tmp_path)
    before = cq.offset_by_time(target, store_time)
    cq.shutdown()
    assert reopen(tmp_path).offset_by_time(target, store_time) == before


def test_destroy_removes_files(tmp_path):
    """destroy deletes the queue's files and directory."""
    cq = make_cq(tmp_path)
    fill(cq, 7)
    cq.destroy()
    assert not qdir(tmp_path).exists()
    assert cq.max_offset == 0 and cq.last_commitlog_offset == -1


# --- model-based --------------------------------------------------------------------------------
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(1, 7)),
        st.tuples(st.just("redispatch"), st.integers(0, 30)),
        st.tuples(st.just("truncate"), st.integers(0, 40)),
        st.tuples(st.just("reload"), st.just(0)),
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_queue_matches_model_under_puts_redispatch_truncate_reload(tmp_path_factory, ops):
    """Whatever the mix of puts, re-dispatches, truncations and restarts, the queue holds exactly
    the units a list model says it should."""
    root = tmp_path_factory.mktemp("cq")
    cq = make_cq(root)
    model: list[tuple[int, int, int]] = []
    for op, arg in ops:
        if op == "put":
            for _ in range(arg):
                n = len(model)
                unit = (n * 100, 100, n)
                assert cq.put(n, *unit)
                model.append(unit)
        elif op == "redispatch" and model:
            n = arg % len(model)
            assert not cq.put(n, *model[n])
        elif op == "truncate":
            end = arg * 100
            cq.truncate_dirty(end)
            model = [u for u in model if u[0] < end]
        elif op == "reload":
            cq.shutdown()
            cq = reopen(root)
        assert cq.max_offset == len(model)
        assert cq.get_units(0, 100) == model
        assert cq.last_commitlog_offset == (model[-1][0] + 100 if model else -1)
    cq.shutdown()


def test_new_files_reserve_their_blocks(tmp_path):
    """A new consume-queue file has every block allocated (no hole for a unit to SIGBUS into)."""
    cq = ConsumeQueue("T", 0, str(tmp_path / "consumequeue"), 20 * 10_000)
    cq.put(0, 0, 100, 0)
    assert os.stat(qdir(tmp_path) / "00000000000000000000").st_blocks * 512 >= 200_000


def test_full_disk_at_file_creation_raises_and_writes_nothing(tmp_path, monkeypatch):
    """ENOSPC reserving a new file fails the put with MappedFileError; the queue is unchanged
    and takes the unit once the disk has room."""

    def no_space(fd, off, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    cq = ConsumeQueue("T", 0, str(tmp_path / "consumequeue"), 20 * 10)
    monkeypatch.setattr(os, "posix_fallocate", no_space)
    with pytest.raises(MappedFileError, match="no space left"):
        cq.put(0, 0, 100, 0)
    assert cq.max_offset == 0 and not os.listdir(qdir(tmp_path))
    monkeypatch.undo()
    assert cq.put(0, 0, 100, 0) and cq.max_offset == 1
