"""On the real reactor the commitlog's pre-touched window advances in the store's warm thread."""

from __future__ import annotations

import threading

import pytest_twisted
from twisted.internet import reactor, task

from rocketmq_emu.broker.commitlog import mapped_file as mf_mod
from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig


@pytest_twisted.inlineCallbacks
def test_window_is_touched_in_the_warm_thread(tmp_path, monkeypatch):
    """Once the writer moved a WARM_STEP, the next range is populated by the warm thread (not
    the reactor's) and the window again reaches WARM_WINDOW past the written end."""
    threads = []
    real = mf_mod.MappedFile.populate

    def populate(self, start, end):
        threads.append(threading.current_thread().name)
        real(self, start, end)

    monkeypatch.setattr(mf_mod.MappedFile, "populate", populate)
    cfg = MessageStoreConfig(store_path_root_dir=str(tmp_path),
                             mapped_file_size_commitlog=4 * mf_mod.WARM_WINDOW,
                             message_index_enable=False)
    store = MessageStore(cfg, reactor, reactor)
    assert store.load(), store.load_error
    store.start()
    try:
        body = b"x" * 64 * 1024
        while store.commitlog.queue.last_file.wrote_position < mf_mod.WARM_STEP:
            assert store.put_message(MessageRecord(topic="T", queue_id=0, body=body)).ok
        mf = store.commitlog.queue.last_file
        for _ in range(100):
            if threads and store.warmer.thread.pending == 0:
                break
            yield task.deferLater(reactor, 0.02, lambda: None)
        assert threads and all("store-warm" in name for name in threads), threads
        assert mf.warmed_position >= mf.wrote_position + mf_mod.WARM_WINDOW
    finally:
        store.shutdown()
