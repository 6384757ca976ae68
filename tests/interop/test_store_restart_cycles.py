"""Issue 12 item 1, with the real client: PyPI ``rocketmq==0.4.4`` produces and consumes on
``rmq-emu up``, the emulator is stopped by a signal and started again on the same store, three
times. Every restart must come up, and keep every message and every committed offset.

The producer's shutdown sends UNREGISTER_CLIENT with ``consumerGroup=""``; that used to persist a
group named ``""`` that the next start refused (subscriptionGroup.json and its .bak alike).
"""

from __future__ import annotations

import json
import signal
import subprocess

import pytest
from interop_support import (
    ClientLauncher,
    Emulator,
    rpc,
    start_emulator,
    unique,
    wait_consumers,
    wait_route,
)

from rocketmq_emu.broker.remoting.codes import RequestCode

CYCLES = 3
PER_CYCLE = 4
QUEUES = 4  # the C++ producer's defaultTopicQueueNums: a topic auto-created from TBW102
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGINT)
#: A small store: the default index file alone preallocates 420 MB, on a disk shared by others.
SMALL_STORE = ("mappedFileSizeCommitLog=4194304\nmappedFileSizeConsumeQueue=6000\n"
               "maxHashSlotNum=1000\nmaxIndexNum=4000\n")


def stop_with(emu: Emulator, sig: int, timeout: float = 30) -> None:
    """Stop the emulator with ``sig`` (Ctrl-C is SIGINT); it must exit 0 after ``stopped``."""
    emu.proc.send_signal(sig)
    try:
        rc = emu.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        emu.proc.kill()
        emu.proc.wait(5)
        pytest.fail(f"rmq-emu up did not stop within {timeout}s of {sig!r}\n{emu.log_tail()}")
    assert rc == 0 and "rmq-emu: stopped" in emu.log_tail(), emu.log_tail()


def file_offsets(emu: Emulator, topic: str, group: str) -> dict[int, int]:
    """The committed offsets of ``topic@group`` in the stopped store's consumerOffset.json."""
    doc = json.loads((emu.store / "config" / "consumerOffset.json").read_text())
    return {int(q): off for q, off in doc["offsetTable"].get(f"{topic}@{group}", {}).items()}


def served_offsets(emu: Emulator, topic: str, group: str) -> dict[int, int]:
    """QUERY_CONSUMER_OFFSET of every queue, as a restarted consumer asks for them."""
    out = {}
    for qid in range(QUEUES):
        resp = rpc(emu.broker, RequestCode.QUERY_CONSUMER_OFFSET,
                   {"consumerGroup": group, "topic": topic, "queueId": str(qid)})
        if resp.code == 0:
            out[qid] = int(resp.ext_fields["offset"])
    return out


def start_small(tmp_path) -> Emulator:
    """``rmq-emu up`` on ``tmp_path/store`` (the same store every time) with small files."""
    conf = tmp_path / "small-store.conf"
    conf.write_text(SMALL_STORE)
    return start_emulator(tmp_path, ["-c", str(conf)])


def workdir(tmp_path, name: str):
    """A fresh directory for one cycle's client outputs."""
    path = tmp_path / name
    path.mkdir()
    return path


def bodies(client, **match) -> list[str]:
    """Bodies of the client's ``msg`` events (optionally only those with the given fields)."""
    return sorted(e["body"] for e in client.events("msg")
                  if all(e.get(k) == v for k, v in match.items()))


def check_store_kept_everything(launcher: ClientLauncher, emu: Emulator, topic: str,
                                group: str, sent: list[str], committed: dict[int, int]) -> None:
    """After a restart: the committed offsets are served as before the stop and a fresh pull
    consumer reads back exactly every message sent so far."""
    assert served_offsets(emu, topic, group) == committed, emu.log_tail()
    wait_route(emu, topic, timeout=20)
    reader = launcher.run_python("py_pull_consumer.py", "--topic", topic, "--group",
                                 unique("GID_reader"), "--expect", str(len(sent)), "--drain",
                                 timeout=90)
    assert bodies(reader) == sorted(sent), reader.diagnostics()


def test_three_stop_start_cycles_keep_messages_and_offsets(tmp_path, pypi_rocketmq):
    """Send, consume (offsets committed), stop with a signal, start on the same store: three
    times; each start succeeds with every message and committed offset still there."""
    topic, group = unique("RestartTopic"), unique("GID_restart")
    sent: list[str] = []
    committed: dict[int, int] = {}
    emu = start_small(tmp_path)
    try:
        for cycle in range(1, CYCLES + 1):
            launcher = ClientLauncher(workdir(tmp_path, f"cycle{cycle}"), emu, pypi_rocketmq,
                                      None)
            try:
                if cycle > 1:
                    check_store_kept_everything(launcher, emu, topic, group, sent, committed)
                new = [f"c{cycle}-{i}" for i in range(PER_CYCLE)]
                producer = launcher.run_python(
                    "py_producer.py", "--topic", topic, "--mode", "sync", "--count",
                    str(PER_CYCLE), "--group", "PID_restart", "--body-prefix", f"c{cycle}")
                assert [e["status"] for e in producer.events("sent")] == ["OK"] * PER_CYCLE, \
                    producer.diagnostics()
                sent += new
                # The same group every cycle: it must get only this cycle's messages, i.e. the
                # offsets it committed before the last restart were kept.
                consumer = launcher.python("py_push_consumer.py", "--topic", topic, "--group",
                                           group, "--expect", str(PER_CYCLE), "--linger", "2")
                consumer.wait(90)
                assert bodies(consumer) == sorted(new), consumer.diagnostics()
            finally:
                launcher.close()
            wait_consumers(emu, group, 0)
            stop_with(emu, STOP_SIGNALS[cycle - 1])
            committed = file_offsets(emu, topic, group)
            assert sum(committed.values()) == len(sent), (committed, emu.log_tail())
            emu = start_small(tmp_path)
            assert "unusable" not in emu.log_tail() and "skipping" not in emu.log_tail(), \
                emu.log_tail()
        final = ClientLauncher(workdir(tmp_path, "final"), emu, pypi_rocketmq, None)
        try:
            check_store_kept_everything(final, emu, topic, group, sent, committed)
        finally:
            final.close()
    finally:
        if emu.proc.poll() is None:
            stop_with(emu, signal.SIGTERM)
