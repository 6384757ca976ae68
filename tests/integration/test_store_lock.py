"""The store's lock file: one process per store directory, as RocketMQ's DefaultMessageStore."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from twisted.internet.task import Clock

from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig

HOLDER = textwrap.dedent("""
    import sys
    from twisted.internet.task import Clock
    from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig
    store = MessageStore(MessageStoreConfig(store_path_root_dir=sys.argv[1],
                                            mapped_file_size_commitlog=4096), Clock())
    assert store.load(), store.load_error
    print("locked", flush=True)
    sys.stdin.read()
""")


def _store(root) -> MessageStore:
    return MessageStore(
        MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commitlog=4096), Clock()
    )


def test_second_process_cannot_load_a_locked_store(tmp_path):
    """While another process runs on the directory, load() fails naming the lock file."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        store = _store(tmp_path)
        assert not store.load()
        assert "in use by another process" in str(store.load_error)
        assert str(tmp_path / "lock") in str(store.load_error)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    store = _store(tmp_path)
    assert store.load(), store.load_error  # the lock died with its process
    store.shutdown()


def test_lock_file_holds_the_word_lock(tmp_path):
    """The lock file carries "lock", as RocketMQ writes it."""
    store = _store(tmp_path)
    assert store.load()
    assert (tmp_path / "lock").read_bytes() == b"lock"
    store.shutdown()
