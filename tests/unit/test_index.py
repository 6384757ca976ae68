"""Specification of the index files and the index service (protocol.md §5.3)."""

from __future__ import annotations

import errno
import logging
import os
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.task import Clock

from rocketmq_emu.broker.index import index_file as index_file_mod
from rocketmq_emu.broker.index.index_file import (
    ENTRY_STRUCT,
    HEADER_STRUCT,
    INDEX_ENTRY,
    INDEX_HEADER,
    INDEX_HEADER_SIZE,
    RESERVE_STEP,
    IndexFile,
    IndexFileError,
    index_file_size,
    index_key_hash,
)
from rocketmq_emu.broker.index.service import IndexService, index_file_name, split_keys
from rocketmq_emu.broker.message import TRANSACTION_ROLLBACK_TYPE

T0 = 1_700_000_000_000  # ms


def make_service(tmp_path, slots=4, entries=64, clock=None):
    clock = clock or Clock()
    clock.advance(T0 / 1000)
    svc = IndexService(str(tmp_path / "index"), clock, hash_slot_num=slots, index_num=entries)
    svc.load()
    return svc


def test_default_file_size_is_rocketmq_size():
    """Defaults give RocketMQ's 420,000,040-byte index file."""
    assert index_file_size(5_000_000, 20_000_000) == 420_000_040


def test_key_hash_is_abs_java_hash_and_zero_for_min_value():
    """keyHash = abs(String.hashCode), 0 when the hash is Integer.MIN_VALUE."""
    assert index_key_hash("T#k1") == 2539445
    assert index_key_hash("polygenelubricants") == 0


def test_header_slot_and_entry_golden_bytes(tmp_path):
    """One put writes header, slot and entry exactly as IndexFile.putKey lays them out."""
    f = IndexFile(str(tmp_path / "f"), 4, 8, create=True)
    assert f.put_key("T#k1", 100, T0)
    f.close()
    raw = (tmp_path / "f").read_bytes()
    assert len(raw) == 40 + 4 * 4 + 8 * 20
    ts = f"{T0:016x}"
    assert raw[:40].hex() == ts + ts + "0000000000000064" "0000000000000064" "00000001" "00000002"
    # "T#k1".hashCode() = 2539445 = 0x26bfb5, slot 2539445 % 4 = 1
    assert raw[40:56].hex() == "00000000" "00000001" "00000000" "00000000"
    entry1 = raw[56 + 20:56 + 40]
    assert entry1.hex() == "0026bfb5" "0000000000000064" "00000000" "00000000"
    assert raw[56:76] == bytes(20)  # entry 0 is never used


def test_second_entry_in_slot_chains_to_previous_with_time_diff_seconds(tmp_path):
    """A later entry for the same key stores timeDiff in seconds and prevIndex of the first."""
    f = IndexFile(str(tmp_path / "f"), 4, 8, create=True)
    f.put_key("T#k1", 100, T0)
    f.put_key("T#k1", 300, T0 + 5_999)
    assert f.read_entry(2) == (2539445, 300, 5, 1)
    assert f.header.hash_slot_count == 1 and f.header.index_count == 3


@given(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1),
       st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 2**31 - 1))
def test_construct_spec_agrees_with_struct(a, b, c, d):
    """Header and entry declared with construct build the same bytes as the struct fast path."""
    assert INDEX_HEADER.build(dict(begin_timestamp=a, end_timestamp=b, begin_phy_offset=a,
                                   end_phy_offset=b, hash_slot_count=c, index_count=d)) == \
        HEADER_STRUCT.pack(a, b, a, b, c, d)
    assert INDEX_ENTRY.build(dict(key_hash=c, phy_offset=a, time_diff=d, prev_index=c)) == \
        ENTRY_STRUCT.pack(c, a, d, c)


def test_file_name_is_local_time_with_millis(monkeypatch):
    """Index file names are yyyyMMddHHmmssSSS in local time."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        assert index_file_name(1_700_000_000_123) == "20231114221320123"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_split_keys_drops_empty_tokens():
    """KEYS is split on single spaces; empty tokens are ignored."""
    assert split_keys("a  b c") == ["a", "b", "c"]
    assert split_keys(None) == []


def test_query_by_key_newest_first(tmp_path):
    """A key maps to every message carrying it, newest first."""
    svc = make_service(tmp_path)
    svc.put("T", ["order-1"], "U1", 0, T0)
    svc.put("T", ["order-2"], "U2", 100, T0 + 1000)
    svc.put("T", ["order-1", "x"], "U3", 200, T0 + 2000)
    res = svc.query("T", "order-1", 32, 0, T0 + 10_000)
    assert res.phy_offsets == [200, 0]
    assert res.index_last_update_phyoffset == 200
    assert res.index_last_update_timestamp == T0 + 2000


def test_query_by_uniq_key(tmp_path):
    """UNIQ_KEY is indexed as topic#UNIQ_KEY."""
    svc = make_service(tmp_path)
    svc.put("T", [], "AC11000100002A9F0000000000000001", 0, T0)
    svc.put("T", [], "AC11000100002A9F0000000000000002", 180, T0)
    assert svc.query("T", "AC11000100002A9F0000000000000002", 32, 0, T0).phy_offsets == [180]


def test_key_is_scoped_by_topic(tmp_path):
    """The same key under another topic is a different index key."""
    svc = make_service(tmp_path, slots=1000)
    svc.put("A", ["k"], None, 0, T0)
    assert svc.query("B", "k", 32, 0, T0).phy_offsets == []


def test_query_filters_by_store_time_range(tmp_path):
    """Only entries whose store time (second precision) lies in [begin, end] are returned."""
    svc = make_service(tmp_path)
    for i in range(5):
        svc.put("T", ["k"], None, i * 100, T0 + i * 10_000)
    res = svc.query("T", "k", 32, T0 + 10_000, T0 + 30_000)
    assert res.phy_offsets == [300, 200, 100]


def test_query_caps_at_max_num_and_batch_limit(tmp_path):
    """At most min(maxNum, maxMsgsNumBatch) offsets come back."""
    svc = make_service(tmp_path)
    svc.max_msgs_num_batch = 3
    for i in range(6):
        svc.put("T", ["k"], None, i * 100, T0)
    assert svc.query("T", "k", 2, 0, T0).phy_offsets == [500, 400]
    assert svc.query("T", "k", 50, 0, T0).phy_offsets == [500, 400, 300]


def test_hash_collision_returns_both_candidates(tmp_path):
    """Keys with equal String.hashCode ("Aa"/"BB") share entries, as in RocketMQ."""
    assert index_key_hash("T#Aa") == index_key_hash("T#BB")
    svc = make_service(tmp_path)
    svc.put("T", ["Aa"], None, 0, T0)
    svc.put("T", ["BB"], None, 100, T0)
    assert svc.query("T", "Aa", 32, 0, T0).phy_offsets == [100, 0]


def test_slot_collision_with_different_hash_is_filtered(tmp_path):
    """Keys sharing a slot but not a hash do not see each other's offsets."""
    svc = make_service(tmp_path, slots=1)
    svc.put("T", ["a"], None, 0, T0)
    svc.put("T", ["b"], None, 100, T0)
    svc.put("T", ["a"], None, 200, T0)
    assert svc.query("T", "a", 32, 0, T0).phy_offsets == [200, 0]
    assert svc.query("T", "b", 32, 0, T0).phy_offsets == [100]


def test_redispatch_of_indexed_offsets_is_ignored(tmp_path):
    """Putting a message at or below the last indexed offset is a no-op."""
    svc = make_service(tmp_path)
    assert svc.put("T", ["k"], None, 0, T0)
    assert svc.put("T", ["k"], None, 100, T0)
    assert not svc.put("T", ["k"], None, 100, T0)
    assert not svc.put("T", ["k"], None, 0, T0)
    assert svc.query("T", "k", 32, 0, T0).phy_offsets == [100, 0]


def test_rollback_records_are_not_indexed(tmp_path):
    """build_index skips rolled-back transaction records."""
    svc = make_service(tmp_path)
    assert not svc.build_index("T", "k", "U", 0, T0, sys_flag=TRANSACTION_ROLLBACK_TYPE)
    assert svc.build_index("T", "k j", "U", 100, T0)
    assert svc.query("T", "j", 32, 0, T0).phy_offsets == [100]


def test_full_file_rolls_and_queries_span_files(tmp_path):
    """When a file is full a new one is created; lookups see entries in every file."""
    svc = make_service(tmp_path, entries=4)  # 3 usable entries per file
    for i in range(7):
        svc.put("T", ["k"], None, i * 100, T0 + i * 1000)
    assert len(svc.files) == 3
    names = [f.name for f in svc.files]
    assert names == sorted(names) and len(set(names)) == 3
    assert svc.query("T", "k", 32, 0, T0 + 10_000).phy_offsets == [600, 500, 400, 300, 200, 100, 0]


def test_rolled_file_starts_at_previous_end(tmp_path):
    """A new file's header begins where the previous file ended (IndexFile ctor)."""
    svc = make_service(tmp_path, entries=2)  # 1 usable entry per file
    svc.put("T", ["k"], None, 0, T0)
    svc.clock.advance(1)
    svc._new_file()
    assert svc.files[-1].header.begin_phy_offset == 0
    assert svc.files[-1].header.begin_timestamp == T0


def test_reload_restores_lookups(tmp_path):
    """Index files are found again at startup and answer the same queries."""
    svc = make_service(tmp_path, entries=4)
    for i in range(5):
        svc.put("T", [f"k{i % 2}"], None, i * 100, T0)
    svc.shutdown()
    again = make_service(tmp_path, entries=4)
    assert len(again.files) == 2
    assert again.query("T", "k0", 32, 0, T0).phy_offsets == [400, 200, 0]
    assert not again.put("T", ["k0"], None, 400, T0)


def test_load_skips_file_of_wrong_size_naming_it(tmp_path, caplog):
    """A file written with other slot/entry counts is refused with an error naming it."""
    (tmp_path / "index").mkdir()
    bad = tmp_path / "index" / "20231114221320123"
    bad.write_bytes(b"\0" * 100)
    svc = IndexService(str(tmp_path / "index"), Clock(), hash_slot_num=4, index_num=8)
    with caplog.at_level(logging.ERROR):
        assert not svc.load()
    assert svc.files == []
    assert str(bad) in caplog.text and "size 100" in caplog.text
    assert bad.exists()


def test_truncate_drops_entries_at_or_beyond_offset(tmp_path):
    """After recovery, entries at or past the commitlog's valid end disappear from lookups."""
    svc = make_service(tmp_path, slots=2)
    for i in range(6):
        svc.put("T", [f"k{i % 3}", "all"], None, i * 100, T0 + i * 1000)
    svc.truncate(300)
    assert svc.query("T", "all", 32, 0, T0 + 10_000).phy_offsets == [200, 100, 0]
    assert svc.query("T", "k0", 32, 0, T0 + 10_000).phy_offsets == [0]
    assert svc.last_indexed_phy_offset == 200
    # re-dispatch after truncation indexes again and chains onto the survivors
    assert svc.put("T", ["k0", "all"], None, 300, T0 + 3000)
    assert svc.query("T", "k0", 32, 0, T0 + 10_000).phy_offsets == [300, 0]
    assert svc.query("T", "all", 32, 0, T0 + 10_000).phy_offsets == [300, 200, 100, 0]


def test_truncate_deletes_files_wholly_beyond_offset(tmp_path):
    """Files whose first entry is past the valid end are deleted."""
    svc = make_service(tmp_path, entries=3)  # 2 usable entries per file
    for i in range(6):
        svc.put("T", ["k"], None, i * 100, T0)
    assert len(svc.files) == 3
    doomed = svc.files[2].path
    svc.truncate(350)
    assert len(svc.files) == 2 and not os.path.exists(doomed)
    assert svc.query("T", "k", 32, 0, T0).phy_offsets == [300, 200, 100, 0]


def test_truncated_file_persists_after_reload(tmp_path):
    """Truncation is written to the file, not only to memory."""
    svc = make_service(tmp_path)
    for i in range(4):
        svc.put("T", ["k"], None, i * 100, T0)
    svc.truncate(200)
    svc.shutdown()
    again = make_service(tmp_path)
    assert again.query("T", "k", 32, 0, T0).phy_offsets == [100, 0]


def test_delete_expired_files_below_min_offset(tmp_path):
    """Retention deletes files whose entries are all below the commitlog minimum, never the last."""
    svc = make_service(tmp_path, entries=3)
    for i in range(6):
        svc.put("T", ["k"], None, i * 100, T0)
    assert svc.delete_expired_files(250) == 1
    assert len(svc.files) == 2
    assert svc.query("T", "k", 32, 0, T0).phy_offsets == [500, 400, 300, 200]
    assert svc.delete_expired_files(10_000) == 1
    assert len(svc.files) == 1


def test_blocks_are_reserved_before_they_are_written(tmp_path):
    """A new default (420 MB) file reserves its header page; a put reserves its slot's page
    and RESERVE_STEP of entries, never the whole file at once."""
    f = IndexFile(str(tmp_path / "f"), create=True)
    assert os.stat(tmp_path / "f").st_blocks * 512 < 100_000
    f.put_key("T#k", 0, T0)
    f.close()
    assert RESERVE_STEP <= os.stat(tmp_path / "f").st_blocks * 512 < RESERVE_STEP + 100_000


def test_slot_table_is_reserved_whole_past_the_lazy_limit(tmp_path, monkeypatch):
    """Past SLOT_PAGES_LAZY_ENTRIES entries the whole hash-slot table is reserved."""
    monkeypatch.setattr(index_file_mod, "SLOT_PAGES_LAZY_ENTRIES", 2)
    f = IndexFile(str(tmp_path / "f"), 100_000, 40, create=True)
    base = INDEX_HEADER_SIZE + 100_000 * 4
    f.put_hashes([1], 0, T0)
    assert os.stat(tmp_path / "f").st_blocks * 512 < base
    f.put_hashes([2, 3], 10, T0)
    f.close()
    assert os.stat(tmp_path / "f").st_blocks * 512 >= base


def test_full_disk_reserving_entries_writes_nothing(tmp_path, monkeypatch):
    """ENOSPC reserving entry blocks raises IndexFileError before any entry is written."""
    f = IndexFile(str(tmp_path / "f"), 10, 40, create=True)

    def no_space(fd, off, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", no_space)
    with pytest.raises(IndexFileError, match="no space left"):
        f.put_key("T#k", 0, T0)
    assert f.entry_count == 0
    monkeypatch.undo()
    assert f.put_key("T#k", 0, T0) and f.entry_count == 1
    f.close()


def test_full_disk_at_creation_is_an_index_file_error(tmp_path, monkeypatch):
    """ENOSPC reserving a new index file raises IndexFileError and leaves no file."""

    def no_space(fd, off, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", no_space)
    with pytest.raises(IndexFileError, match="no space left"):
        IndexFile(str(tmp_path / "f"), 10, 40, create=True)
    assert not os.listdir(tmp_path)


def test_flush_returns_newest_index_timestamp(tmp_path):
    """flush reports the newest indexed store time for the checkpoint."""
    svc = make_service(tmp_path)
    assert svc.flush() == 0
    svc.put("T", ["k"], None, 0, T0 + 42)
    assert svc.flush() == T0 + 42


def test_create_refuses_existing_file(tmp_path):
    """Creating over an existing file is an error naming it, never a silent overwrite."""
    from rocketmq_emu.broker.index.index_file import IndexFileError

    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(IndexFileError, match=str(tmp_path / "f")):
        IndexFile(str(tmp_path / "f"), 4, 8, create=True)


@given(st.text(max_size=300))
def test_fast_key_hash_equals_java_string_hash(text):
    """The index's hash shortcut agrees with String.hashCode for any text."""
    from rocketmq_emu.broker.index.index_file import _java_hash
    from rocketmq_emu.broker.message import java_string_hash

    assert _java_hash(text) == java_string_hash(text)


@given(st.text(alphabet=st.characters(max_codepoint=127), min_size=200, max_size=300))
def test_fast_key_hash_long_ascii(text):
    """Long ASCII keys around the shortcut's length limit hash like String.hashCode."""
    from rocketmq_emu.broker.index.index_file import _java_hash
    from rocketmq_emu.broker.message import java_string_hash

    assert _java_hash(text) == java_string_hash(text)


def test_load_skips_file_whose_header_overflows(tmp_path, caplog):
    """A header claiming more entries than the file holds is refused, naming the file."""
    (tmp_path / "index").mkdir()
    path = tmp_path / "index" / "20231114221320123"
    f = IndexFile(str(path), 4, 8, create=True)
    f.put_key("T#k", 0, T0)
    f.close()
    data = bytearray(path.read_bytes())
    data[36:40] = (999).to_bytes(4, "big")
    path.write_bytes(bytes(data))
    svc = IndexService(str(tmp_path / "index"), Clock(), hash_slot_num=4, index_num=8)
    with caplog.at_level(logging.ERROR):
        assert not svc.load()
    assert svc.files == [] and str(path) in caplog.text and "indexCount 999" in caplog.text


def test_truncate_drops_never_written_entries(tmp_path):
    """Entries a crash left all zero at the tail are dropped; real ones survive."""
    f = IndexFile(str(tmp_path / "f"), 4, 16, create=True)
    for i in range(3):
        f.put_key("T#k", i * 100, T0)
    f.header.index_count = 6  # header page written, entry pages 4 and 5 lost
    assert f.truncate_from(10_000) == 3
    out: list[int] = []
    f.select_phy_offsets(out, "T#k", 32, 0, T0)
    assert out == [200, 100, 0]


def test_repeated_key_in_one_message_is_indexed_once(tmp_path):
    """KEYS "k k" (or a key equal to UNIQ_KEY) yields the record once per lookup."""
    svc = make_service(tmp_path)
    svc.put("T", ["k", "k", "U"], "U", 0, T0)
    assert svc.files[0].entry_count == 2
    assert svc.query("T", "k", 32, 0, T0).phy_offsets == [0]
    assert svc.query("T", "U", 32, 0, T0).phy_offsets == [0]


@given(batches=st.lists(st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=300),
                        min_size=1, max_size=12),
       reopen_after=st.integers(0, 12))
def test_every_write_lands_in_reserved_blocks(tmp_path_factory, batches, reopen_after):
    """Header, every hash slot and every entry written lie in blocks reserved before (a write
    into a hole is a SIGBUS on a full disk), also after the file is closed and reopened."""
    slots, entries = 200_000, 4_000
    path = str(tmp_path_factory.mktemp("reserve") / "f")
    reserved: list[tuple[int, int]] = []
    real = index_file_mod.preallocate

    def recording(fd, size, where, start=0):
        reserved.append((start, size))
        return real(fd, size, where, start)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index_file_mod, "preallocate", recording)
        f = IndexFile(path, slots, entries, create=True)
        written = [(0, INDEX_HEADER_SIZE)]
        for i, hashes in enumerate(batches):
            if i == reopen_after:
                f.close()
                f = IndexFile(path, slots, entries)
            first = f.header.index_count
            done = f.put_hashes(hashes, 100 + i, T0 + i)
            base = INDEX_HEADER_SIZE + slots * 4
            for n, h in zip(range(first, first + done), hashes, strict=False):
                written.append((INDEX_HEADER_SIZE + (h % slots) * 4, 4))
                written.append((base + n * 20, 20))
        f.close()

    def covered(pos: int, size: int) -> bool:
        return any(start <= pos and pos + size <= end for start, end in reserved)

    assert [w for w in written if not covered(*w)] == []
