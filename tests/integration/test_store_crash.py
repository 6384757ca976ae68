"""Crash safety: a child process appends under SYNC_FLUSH and prints each acknowledged
message; the test SIGKILLs it, restarts the store and proves every acknowledged message is
readable and nothing after the torn tail is."""

from __future__ import annotations

import os
import selectors
import signal
import struct
import subprocess
import sys
import textwrap
import time

from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MESSAGE_MAGIC_CODE, decode_record
from rocketmq_emu.broker.store import GetMessageStatus, MessageStore, MessageStoreConfig

CHILD = textwrap.dedent(
    """
    import sys
    from twisted.internet import reactor
    from rocketmq_emu.broker.commitlog.record import MessageRecord
    from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig

    cfg = MessageStoreConfig(
        store_path_root_dir=sys.argv[1], mapped_file_size_commitlog=64 * 1024,
        mapped_file_size_consume_queue=20 * 100, flush_disk_type="SYNC_FLUSH",
        max_hash_slot_num=1000, max_index_num=4000)
    store = MessageStore(cfg, reactor, reactor)
    assert store.load(), store.load_error
    store.start()
    start = int(sys.argv[2])
    counter = iter(range(start, 10 ** 9))

    def rec(i, qid):
        return MessageRecord(topic="CrashT", queue_id=qid, body=f"msg-{i}".encode() * 20,
                             properties={"UNIQ_KEY": f"U{i:08d}", "TAGS": "t"})

    def acked(status, ids, qid, res):
        a = res.append
        for k, (i, off) in enumerate(zip(ids, a.offsets)):
            print(f"ACK {i} {off} {a.queue_offset + k} {qid} {status.name}", flush=True)

    def burst():
        for _ in range(7):  # several puts per reactor turn share one msync
            i = next(counter)
            res = store.put_message(rec(i, i % 3))
            res.flushed.addCallback(acked, [i], i % 3, res)
        ids = [next(counter) for _ in range(4)]  # a batch through put_messages, queue 3
        res = store.put_messages([rec(i, 3) for i in ids])
        res.flushed.addCallback(acked, ids, 3, res)
        reactor.callLater(0, burst)

    reactor.callWhenRunning(burst)
    reactor.run()
    """
)

ACKS_BEFORE_KILL = 300
CYCLES = 3


def _run_child_until(root: str, acks_wanted: int, start: int = 0
                     ) -> list[tuple[int, int, int, int]]:
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, root, str(start)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=os.getcwd(),
    )
    acks: list[tuple[int, int, int, int]] = []
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + 60  # watchdog only: the loop ends on the acks
    buf = b""
    try:
        while len(acks) < acks_wanted:
            assert time.monotonic() < deadline, "child too slow: " + proc.stderr.read1().decode()
            if not sel.select(timeout=5):
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, "child exited: " + proc.stderr.read().decode()
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                _, i, off, qoff, qid, status = line.decode().split()
                assert status == "PUT_OK"
                acks.append((int(i), int(off), int(qoff), int(qid)))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        sel.close()
    return acks


def _store(root: str) -> MessageStore:
    clock = Clock()
    clock.advance(time.time())
    return MessageStore(MessageStoreConfig(
        store_path_root_dir=root, mapped_file_size_commitlog=64 * 1024,
        mapped_file_size_consume_queue=20 * 100, max_hash_slot_num=1000, max_index_num=4000,
    ), clock)


def test_every_acknowledged_message_survives_sigkill(tmp_path):
    """After each of several SIGKILLs mid-append (single puts and batches, SYNC_FLUSH), every
    acknowledged message is readable after restart, at its offsets."""
    root = str(tmp_path)
    acks: list[tuple[int, int, int, int]] = []
    for cycle in range(CYCLES):
        acks += _run_child_until(root, ACKS_BEFORE_KILL, start=cycle * 10**6)
        assert os.path.exists(os.path.join(root, "abort"))
    store = _store(root)
    assert store.load(), store.load_error
    for i, off, qoff, qid in acks:
        rec = store.look_message_by_offset(off)
        assert rec is not None and rec.body == f"msg-{i}".encode() * 20
        assert (rec.queue_offset, rec.queue_id) == (qoff, qid)
        g = store.get_message("g", "CrashT", qid, qoff, 1)
        assert g.status is GetMessageStatus.FOUND
        assert decode_record(g.messages[0]).body == rec.body
    # Nothing beyond the valid end: the queues end exactly where their records end.
    for qid in range(4):
        top = store.get_max_offset_in_queue("CrashT", qid)
        assert store.get_message("g", "CrashT", qid, top, 1).status is (
            GetMessageStatus.OFFSET_OVERFLOW_ONE)
        units = store.get_consume_queue_units("CrashT", qid, 0, top)
        assert all(off + size <= store.max_physical_offset for off, size, _t in units)
    store.shutdown()


def test_torn_tail_is_dropped_and_acknowledged_data_kept(tmp_path):
    """A half-written record after the last acknowledged one is cut off at restart."""
    root = str(tmp_path)
    acks = _run_child_until(root, 200)
    store = _store(root)
    assert store.load(), store.load_error
    end = store.max_physical_offset
    queue_max = {q: store.get_max_offset_in_queue("CrashT", q) for q in range(3)}
    store.shutdown()
    # Forge a torn record at the end: header and half a body, then crash again (abort file).
    commitlog_dir = os.path.join(root, "commitlog")
    last = sorted(os.listdir(commitlog_dir))[-1]
    path = os.path.join(commitlog_dir, last)
    pos = end - int(last)
    torn = struct.pack(">iii", 300, MESSAGE_MAGIC_CODE, 12345) + b"\x07" * 100
    if pos + len(torn) > 64 * 1024:
        # The kill landed where the last file is full (BLANK filler written, the next file's
        # creation unfinished): the torn record is then the first one of a new file.
        path, pos = os.path.join(commitlog_dir, f"{end:020d}"), 0
        with open(path, "wb") as f:
            f.truncate(64 * 1024)
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(torn)
    open(os.path.join(root, "abort"), "wb").close()
    store = _store(root)
    assert store.load(), store.load_error
    assert store.max_physical_offset == end
    if os.path.exists(path):  # a file holding nothing valid may be deleted whole instead
        with open(path, "rb") as f:
            f.seek(pos)
            assert f.read(len(torn)) == bytes(len(torn))
    for q in range(3):
        assert store.get_max_offset_in_queue("CrashT", q) == queue_max[q]
        g = store.get_message("g", "CrashT", q, queue_max[q], 1)
        assert g.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
    for i, off, _qoff, _qid in acks:
        assert store.look_message_by_offset(off).body == f"msg-{i}".encode() * 20
    store.shutdown()
