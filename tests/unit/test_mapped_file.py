"""Mapped files and the mapped-file queue: naming, preallocation, rolling, lookup, truncation,
retention and clear errors."""

from __future__ import annotations

import errno
import os

import pytest

from rocketmq_emu.broker.commitlog import mapped_file as mf_mod
from rocketmq_emu.broker.commitlog.mapped_file import (
    MappedFile,
    MappedFileError,
    offset_to_file_name,
)
from rocketmq_emu.broker.commitlog.mapped_file_queue import MappedFileQueue

SIZE = 4096


def test_file_name_is_twenty_digits():
    """File names are the start offset as %020d."""
    assert offset_to_file_name(1073741824) == "00000000001073741824"


def test_new_file_is_preallocated_and_zero(tmp_path):
    """A new file has its full size on disk and reads as zeros."""
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), SIZE)
    assert os.path.getsize(mf.path) == SIZE
    assert mf.mm[:SIZE] == bytes(SIZE)
    mf.close()


def test_append_advances_and_refuses_overflow(tmp_path):
    """append writes at the wrote position and refuses data that does not fit."""
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), 16)
    assert mf.append(b"0123456789")
    assert not mf.append(b"abcdefgh")
    assert mf.wrote_position == 10
    assert mf.read(2, 3) == b"234"
    mf.close()


def test_read_beyond_written_position_names_file(tmp_path):
    """Reading past the written data is an error naming the file and offset."""
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), SIZE)
    mf.append(b"abc")
    with pytest.raises(MappedFileError, match=r"00000000000000000000 at offset 2"):
        mf.read(2, 4)
    mf.close()


def test_flush_moves_flushed_position(tmp_path):
    """flush() makes flushed_position catch up with wrote_position."""
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), SIZE)
    mf.append(b"x" * 100)
    assert mf.flushed_position == 0
    assert mf.flush() == mf.wrote_position
    mf.close()


def test_queue_rolls_and_finds_by_offset(tmp_path):
    """The queue creates the next file when the last is full and finds files by offset."""
    q = MappedFileQueue(str(tmp_path), 64)
    for i in range(5):
        mf = q.get_last_mapped_file()
        assert mf.append(bytes([i]) * 64)
    names = sorted(os.listdir(tmp_path))
    assert names == [offset_to_file_name(i * 64) for i in range(5)]
    assert q.find_mapped_file_by_offset(200).file_from_offset == 192
    assert q.read(130, 2) == b"\x02\x02"
    assert q.get_max_offset() == 320
    assert q.find_mapped_file_by_offset(320) is None
    q.shutdown()


def test_first_file_created_at_boundary_below_start_offset(tmp_path):
    """An empty queue starts at the file boundary at or below the requested offset."""
    q = MappedFileQueue(str(tmp_path), 64)
    assert q.get_last_mapped_file(start_offset=130).file_from_offset == 128
    q.shutdown()


def test_load_restores_files_at_full_size(tmp_path):
    """load() maps existing files in order with positions at full size."""
    q = MappedFileQueue(str(tmp_path), 64)
    q.get_last_mapped_file().append(b"a" * 64)
    q.get_last_mapped_file().append(b"b" * 10)
    q.shutdown()
    q2 = MappedFileQueue(str(tmp_path), 64)
    assert q2.load()
    assert [m.file_from_offset for m in q2.files] == [0, 64]
    assert q2.get_max_offset() == 128
    q2.shutdown()


def test_load_reserves_the_holes_of_the_last_file(tmp_path):
    """A sparse last file (an older build's consume queue) has its blocks allocated by load()."""
    path = tmp_path / offset_to_file_name(0)
    with open(path, "wb") as f:
        f.truncate(SIZE * 16)
    assert os.stat(path).st_blocks == 0
    q = MappedFileQueue(str(tmp_path), SIZE * 16)
    assert q.load()
    assert os.stat(path).st_blocks * 512 >= SIZE * 16
    q.shutdown()


def test_load_rejects_wrong_size_naming_file(tmp_path):
    """A file whose size is not the configured size is refused with its name."""
    (tmp_path / offset_to_file_name(0)).write_bytes(b"short")
    q = MappedFileQueue(str(tmp_path), 64)
    with pytest.raises(MappedFileError, match=r"size 5, expected 64.*00000000000000000000"):
        q.load()


def test_truncate_dirty_zeroes_tail_and_deletes_later_files(tmp_path):
    """truncate_dirty sets positions at the offset, zeroes the rest and deletes later files."""
    q = MappedFileQueue(str(tmp_path), 64)
    q.get_last_mapped_file().append(b"a" * 64)
    q.get_last_mapped_file().append(b"b" * 64)
    q.get_last_mapped_file().append(b"c" * 10)
    q.truncate_dirty(100)
    assert [m.file_from_offset for m in q.files] == [0, 64]
    assert q.get_max_offset() == 100
    assert q.files[1].mm[36:64] == bytes(28)
    assert not (tmp_path / offset_to_file_name(128)).exists()
    q.shutdown()


def test_delete_files_keeps_last_and_stops_at_first_kept(tmp_path):
    """Retention deletes head files while the predicate holds, never the last file."""
    q = MappedFileQueue(str(tmp_path), 64)
    for _ in range(3):
        q.get_last_mapped_file().append(b"z" * 64)
    deleted = q.delete_files(lambda mf: True)
    assert [m.file_from_offset for m in deleted] == [0, 64]
    assert q.get_min_offset() == 128
    q.shutdown()


def test_delete_expired_by_time_uses_last_modified(tmp_path):
    """Files older than the reserved time (on the store's clock) are deleted."""
    q = MappedFileQueue(str(tmp_path), 64)
    for t in (10.0, 20.0, 30.0):
        q.get_last_mapped_file().append(b"z" * 64, now=t)
    assert q.delete_expired_by_time(15, now=30.0) == 1
    assert q.get_min_offset() == 64
    q.shutdown()


def test_full_disk_is_reported_with_file_name(tmp_path, monkeypatch):
    """ENOSPC while preallocating names the file and leaves no partial file behind."""

    def no_space(fd, off, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(mf_mod.os, "posix_fallocate", no_space)
    q = MappedFileQueue(str(tmp_path), 64)
    with pytest.raises(MappedFileError, match="no space left.*00000000000000000000") as info:
        q.get_last_mapped_file()
    assert info.value.errno == errno.ENOSPC
    assert not os.listdir(tmp_path)


def test_read_only_directory_is_reported_with_file_name(tmp_path, monkeypatch):
    """A permission error creating a file names the file."""
    real_open = os.open

    def denied(path, flags, mode=0o777):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, mode)

    monkeypatch.setattr(mf_mod.os, "open", denied)
    q = MappedFileQueue(str(tmp_path / "cl"), 64)
    with pytest.raises(MappedFileError, match="Permission denied.*00000000000000000000"):
        q.get_last_mapped_file()


def test_interrupted_creation_leftovers_are_removed_at_load(tmp_path):
    """A half-created file (temporary name, or an empty last file) is dropped at load."""
    q = MappedFileQueue(str(tmp_path), 64)
    q.get_last_mapped_file().append(b"a" * 64)
    q.shutdown()
    (tmp_path / (offset_to_file_name(64) + mf_mod.TMP_SUFFIX)).write_bytes(b"")
    (tmp_path / offset_to_file_name(64)).write_bytes(b"")
    q2 = MappedFileQueue(str(tmp_path), 64)
    q2.load()
    assert [m.file_from_offset for m in q2.files] == [0]
    assert sorted(os.listdir(tmp_path)) == [offset_to_file_name(0)]
    q2.shutdown()
