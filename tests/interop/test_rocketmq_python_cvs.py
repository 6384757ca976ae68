"""PyPI ``rocketmq-python-cvs==2.1.0.3`` (a C++ 2.x client, language CPP, version 333, the same
Python API as the official rocketmq-client-python 2.x) against the emulator.

Its batch is a SEND_MESSAGE_V2 (310) with ``m``="1": Apache RocketMQ 4.9.8 reads "1" with
Boolean.parseBoolean as false and stores the whole batch as ONE message, and so must the
emulator. The library may crash while shutting a consumer down (exit 139): the scripts print
what they received before that, and the test judges by it.
"""

from __future__ import annotations

from collections import Counter

from interop_support import ClientLauncher, unique, wait_route


def _args(topic: str, mode: str, count: int, name: str) -> list[str]:
    return ["--topic", topic, "--mode", mode, "--count", str(count), "--group", f"PID_{name}",
            "--tag", "TagCvs", "--key-prefix", f"k{name}", "--body-prefix", name]


def test_cvs_send_batch_and_push_consume(tmp_path, emulator, pypi_rocketmq_cvs):
    """Sync sends arrive with tags and keys; a 3-message batch arrives as ONE message."""
    clients = ClientLauncher(tmp_path, emulator, pypi_rocketmq_cvs, None)
    try:
        topic = unique("CvsTopic")
        sync = clients.run_python("py_producer.py", *_args(topic, "sync", 3, "cvs"))
        assert len(sync.events("sent")) == 3, sync.diagnostics()
        assert all(e["status"] == "OK" for e in sync.events("sent"))
        wait_route(emulator, topic)
        batch = clients.run_python("py_producer.py", *_args(topic, "batch", 3, "batch"))
        (sent,) = batch.events("sent")
        assert sent["status"] == "OK", batch.diagnostics()
        consumer = clients.run_python("py_push_consumer.py", "--topic", topic, "--group",
                                      unique("GID_cvs"), "--expect", "4", "--linger", "2",
                                      "--timeout", "40", timeout=70)
        msgs = consumer.events("msg")
        assert len(msgs) == 4, consumer.diagnostics()
        bodies = Counter(m["body"] for m in msgs)
        for i in range(3):
            assert bodies[f"cvs-{i}"] == 1, consumer.diagnostics()
        for m in msgs:
            if m["body"].startswith("cvs-"):
                assert (m["tags"], m["keys"]) == ("TagCvs", "k" + m["body"]), m
        (batch_msg,) = [m for m in msgs if not m["body"].startswith("cvs-")]
        assert not batch_msg["body"].startswith("batch-"), batch_msg
    finally:
        clients.close()
