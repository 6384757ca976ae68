"""Pre-touched window of a mapped file: only pages just ahead of the writer are touched, so a
new 1 GiB commitlog does not make 1 GiB resident."""

from __future__ import annotations

import mmap
import sys

import pytest

from rocketmq_emu.broker.commitlog import mapped_file as mf_mod
from rocketmq_emu.broker.commitlog.mapped_file import MappedFile, offset_to_file_name
from rocketmq_emu.broker.commitlog.mapped_file_queue import MappedFileQueue

MIB = 1 << 20


def resident_pages(mf: MappedFile) -> int:
    """Pages of the mapping resident in this process (``Rss`` of its ``/proc/self/smaps``
    entry)."""
    lines = open("/proc/self/smaps").read().splitlines()
    for i, line in enumerate(lines):
        if line.endswith(mf.path):
            for follow in lines[i + 1:]:
                if follow.startswith("Rss:"):
                    return int(follow.split()[1]) * 1024 // mmap.PAGESIZE
    raise AssertionError(f"{mf.path} is not mapped")


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/smaps")


@linux_only
def test_new_file_touches_only_the_window(tmp_path):
    """A new warmed file has the first WARM_WINDOW bytes resident, not the whole file."""
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), 4 * mf_mod.WARM_WINDOW)
    assert mf.warmed_position == mf_mod.WARM_WINDOW
    assert resident_pages(mf) * mmap.PAGESIZE <= mf_mod.WARM_WINDOW + MIB
    mf.close()


def test_unwarmed_file_touches_nothing(tmp_path):
    """warm=False leaves the window empty."""
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), 8 * MIB, warm=False)
    assert mf.warmed_position == 0
    mf.close()


def test_window_advances_with_the_writer_in_steps(tmp_path):
    """warm_ahead tops the window up once a WARM_STEP of it was written, never past the end."""
    size = mf_mod.WARM_WINDOW + 3 * mf_mod.WARM_STEP
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), size)
    mf.wrote_position = mf_mod.WARM_STEP - 1
    assert mf.warm_ahead() == 0  # less than a step written: nothing to do
    mf.wrote_position = mf_mod.WARM_STEP
    assert mf.warm_ahead() == mf_mod.WARM_STEP
    assert mf.warmed_position == mf_mod.WARM_STEP + mf_mod.WARM_WINDOW
    mf.wrote_position = size - 10  # the writer overtook the window: touch from where it is
    assert mf.warm_ahead() == 10
    assert mf.warmed_position == size
    mf.close()


def test_warming_keeps_written_bytes(tmp_path):
    """Touching pages ahead never changes data already written there."""
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), 2 * MIB, warm=False)
    mf.mm[0:5] = b"hello"
    mf.mm[MIB + 7] = 42
    mf.warm()
    assert mf.mm[0:5] == b"hello" and mf.mm[MIB + 7] == 42
    assert mf.warmed_position == 2 * MIB
    mf.close()


def test_queue_warms_its_last_file_only_when_enabled(tmp_path):
    """MappedFileQueue.warm_ahead advances the last file's window; a cold queue does nothing."""
    q = MappedFileQueue(str(tmp_path / "warm"), 2 * mf_mod.WARM_WINDOW)
    mf = q.get_last_mapped_file(0)
    mf.wrote_position = mf_mod.WARM_STEP
    assert q.warm_ahead() == mf_mod.WARM_STEP
    cold = MappedFileQueue(str(tmp_path / "cold"), 2 * mf_mod.WARM_WINDOW, warm=False)
    cold.get_last_mapped_file(0).wrote_position = mf_mod.WARM_STEP
    assert cold.warm_ahead() == 0
    q.shutdown()
    cold.shutdown()


@linux_only
def test_populate_faults_pages_in_without_changing_bytes(tmp_path):
    """MappedFile.populate (libc madvise with the GIL released) makes the range resident and
    leaves written bytes as they were."""
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), 4 * MIB, warm=False)
    mf.mm[MIB + 3] = 9
    before = resident_pages(mf)
    mf.populate(MIB + 100, 3 * MIB)
    assert mf.mm[MIB + 3] == 9
    assert resident_pages(mf) - before >= 2 * MIB // mmap.PAGESIZE - 1
    mf.close()


def test_populate_rejects_a_range_outside_the_file(tmp_path):
    """populate checks its range against the mapping instead of touching past it."""
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), MIB, warm=False)
    with pytest.raises(ValueError, match="beyond"):
        mf.populate(0, 2 * MIB)
    mf.close()


def test_a_closed_file_can_be_populated_no_more_but_closes(tmp_path):
    """populate leaves no buffer export behind: the file still closes afterwards."""
    mf = MappedFile(str(tmp_path / offset_to_file_name(0)), MIB, warm=False)
    mf.populate(0, MIB)
    mf.close()
    assert mf.mm is None or mf.mm.closed


def test_queue_hands_the_claimed_range_to_submit(tmp_path):
    """With ``submit``, warm_ahead claims the next range (warmed_position moves) and passes
    the file's populate and the range to it instead of touching here."""
    q = MappedFileQueue(str(tmp_path / "warm"), 2 * mf_mod.WARM_WINDOW)
    mf = q.get_last_mapped_file(0)
    mf.wrote_position = mf_mod.WARM_STEP
    jobs = []
    assert q.warm_ahead(submit=lambda fn, *a: jobs.append((fn, a))) == mf_mod.WARM_STEP
    end = mf_mod.WARM_STEP + mf_mod.WARM_WINDOW
    assert jobs == [(mf.populate, (mf_mod.WARM_WINDOW, end))]
    assert mf.warmed_position == end
    assert q.warm_ahead(submit=lambda fn, *a: jobs.append((fn, a))) == 0  # still ahead
    q.shutdown()


def test_warmer_falls_back_to_the_reactor_thread_when_the_thread_fails(tmp_path, caplog):
    """A failed populate in the warm thread is logged once; later ticks warm inline."""
    from twisted.internet import defer

    from rocketmq_emu.broker.commitlog.warm import CommitLogWarmer

    class FailingThread:
        running = True

        def submit(self, fn, *args):
            return defer.fail(OSError(22, "Invalid argument"))

    q = MappedFileQueue(str(tmp_path / "warm"), 4 * mf_mod.WARM_WINDOW)
    mf = q.get_last_mapped_file(0)
    warmer = CommitLogWarmer(q)
    warmer.thread = FailingThread()
    mf.wrote_position = mf_mod.WARM_STEP
    warmer.tick()
    assert warmer.inline and "warm thread failed" in caplog.text
    mf.wrote_position = 2 * mf_mod.WARM_STEP + mf_mod.WARM_WINDOW
    assert warmer.tick() > 0  # inline: warm_ahead on this thread
    assert mf.warmed_position == mf.wrote_position + mf_mod.WARM_WINDOW
    q.shutdown()


def test_an_idle_queue_is_not_warmed_until_the_writer_moves(tmp_path):
    """The warmer touches nothing while the commitlog's end is where it was at start (an idle
    broker keeps no resident window), and keeps the window ahead once the writer moved."""
    from rocketmq_emu.broker.commitlog.warm import CommitLogWarmer

    q = MappedFileQueue(str(tmp_path / "warm"), 2 * mf_mod.WARM_WINDOW)
    mf = q.create_file(0, warm=False)
    warmer = CommitLogWarmer(q)  # no reactor: touches inline
    warmer.start()
    assert warmer.tick() == 0 and warmer.tick() == 0
    assert mf.warmed_position == 0
    mf.wrote_position = 100
    assert warmer.tick() > 0
    assert mf.warmed_position >= mf_mod.WARM_WINDOW
    warmer.stop()
    q.shutdown()


def test_a_store_starts_with_its_first_file_preallocated_but_not_touched(tmp_path):
    """store.start creates the first commitlog file without pre-touching it (idle RSS)."""
    from twisted.internet import task

    from rocketmq_emu.broker.store import MessageStore
    from rocketmq_emu.broker.store_config import MessageStoreConfig

    store = MessageStore(MessageStoreConfig(store_path_root_dir=str(tmp_path),
                                            mapped_file_size_commitlog=4 * mf_mod.WARM_WINDOW),
                         task.Clock())
    store.start()
    try:
        first = store.commitlog.queue.files[0]
        assert first.file_size == 4 * mf_mod.WARM_WINDOW and first.warmed_position == 0
    finally:
        store.shutdown()
