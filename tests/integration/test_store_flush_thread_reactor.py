"""On the real reactor a slow disk sync runs in the store's flush thread: timers keep firing on
time while ``fdatasync`` takes a second, and the flushed position moves once it has returned.

How late a timer may fire is bounded by half the sync: a reactor blocked by the sync would fire
it the rest of the second late, while on a busy machine (other processes on both cores) a timer
of a free reactor can still be tens of milliseconds late."""

from __future__ import annotations

import os
import time

import pytest_twisted
from twisted.internet import defer, reactor, task

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig, PutMessageStatus

SLOW_S = 1.0
#: The lateness a free reactor stays under (see the module docstring).
MAX_LATE_S = SLOW_S / 2


def _slow_fdatasync(real):
    calls = []

    def slow(fd):
        calls.append(fd)
        time.sleep(SLOW_S)  # a loaded disk; sleep releases the GIL as fdatasync does
        real(fd)

    return slow, calls


def _store(tmp_path, **kw) -> MessageStore:
    cfg = MessageStoreConfig(store_path_root_dir=str(tmp_path), mapped_file_size_commitlog=1 << 20,
                             mapped_file_size_consume_queue=20 * 1000,
                             flush_interval_commit_log=50, flush_commit_log_least_pages=0,
                             flush_interval_consume_queue=50, message_index_enable=False, **kw)
    store = MessageStore(cfg, reactor, reactor)
    assert store.load(), store.load_error
    store.start()
    return store


def _put(store, i):
    return store.put_message(MessageRecord(topic="T", queue_id=0, body=b"x" * 200 + b"%d" % i,
                                           properties={"TAGS": "a"}))


@defer.inlineCallbacks
def _lateness_during_sync(store, calls):
    """Wait until a sync is running, then measure how late a 20 ms timer fires."""
    deadline = time.monotonic() + 5
    while not calls:
        assert time.monotonic() < deadline, "no fdatasync in the flush thread"
        yield task.deferLater(reactor, 0.005, lambda: None)
    t0 = time.monotonic()
    yield task.deferLater(reactor, 0.02, lambda: None)
    return time.monotonic() - t0 - 0.02


@pytest_twisted.inlineCallbacks
def test_slow_async_flush_does_not_block_the_reactor(tmp_path, monkeypatch):
    """ASYNC_FLUSH: a one-second fdatasync leaves a 20 ms timer less than half a second late."""
    slow, calls = _slow_fdatasync(os.fdatasync)
    monkeypatch.setattr(os, "fdatasync", slow)
    store = _store(tmp_path)
    try:
        for i in range(50):
            _put(store, i)
        late = yield _lateness_during_sync(store, calls)
        assert late < MAX_LATE_S, f"timer {late * 1000:.0f} ms late during a slow sync"
        assert store.commitlog.queue.flushed_where < store.max_physical_offset
        deadline = time.monotonic() + 10
        while store.commitlog.queue.flushed_where < store.max_physical_offset:
            assert time.monotonic() < deadline
            yield task.deferLater(reactor, 0.05, lambda: None)
    finally:
        store.shutdown()
    assert not store.disk_sync.running  # shutdown waited for the thread and stopped it


@pytest_twisted.inlineCallbacks
def test_slow_sync_flush_does_not_block_the_reactor(tmp_path, monkeypatch):
    """SYNC_FLUSH: the put waits for its slow sync while the reactor keeps its timers."""
    slow, calls = _slow_fdatasync(os.fdatasync)
    monkeypatch.setattr(os, "fdatasync", slow)
    store = _store(tmp_path, flush_disk_type="SYNC_FLUSH")
    try:
        t0 = time.monotonic()
        res = _put(store, 0)
        late = yield _lateness_during_sync(store, calls)
        assert late < MAX_LATE_S, f"timer {late * 1000:.0f} ms late during a slow sync"
        assert not res.flushed.called
        status = yield res.flushed
        assert status is PutMessageStatus.PUT_OK
        assert time.monotonic() - t0 >= SLOW_S
        assert store.commitlog.queue.flushed_where >= res.append.wrote_offset + res.append.wrote_bytes
    finally:
        store.shutdown()
