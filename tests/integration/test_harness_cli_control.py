"""``rmq-emu up --control-port``: time travel through HTTP for clients outside the process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from rocketmq_emu.broker.cli import READY
from rocketmq_emu.client.message import Message
from rocketmq_emu.client.testing import TEST_BROKER_CONF, free_broker_port, free_port, unique

ROOT = Path(__file__).resolve().parents[2]


def http(base: str, method: str, path: str, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def call_in_thread(fn, *args):
    """Run a blocking HTTP call without stalling the reactor the test's clients use."""
    from twisted.internet import threads

    from rocketmq_emu.client.blocking import run_blocking

    return run_blocking(threads.deferToThread, fn, *args)


@pytest.fixture
def emulator(tmp_path):
    ns, broker, control = free_port(), free_broker_port(), free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(TEST_BROKER_CONF)
    log = open(tmp_path / "emu.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketmq_emu.broker.cli", "up", "--grpc-port", "0", "--store", str(tmp_path / "store"),
         "--namesrv-port", str(ns), "--broker-port", str(broker), "--control-port", str(control),
         "-c", str(conf)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        deadline = time.monotonic() + 60
        while READY.encode() not in (tmp_path / "emu.log").read_bytes():
            assert proc.poll() is None, (tmp_path / "emu.log").read_text()
            assert time.monotonic() < deadline, "rmq-emu up not ready"
            time.sleep(0.1)
        yield f"127.0.0.1:{ns}", f"http://127.0.0.1:{control}", tmp_path / "emu.log"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.mark.rocketmq  # run outside the reactor greenlet: the test blocks on the clients
def test_http_clock_advance_delivers_a_two_hour_delay(emulator):
    """A level-18 message sent to `rmq-emu up` arrives once /clock/advance moved 7200 s."""
    from rocketmq_emu.client.blocking import BlockingProducer, BlockingPullConsumer

    namesrv, base, log = emulator
    topic = unique("T")
    producer = BlockingProducer(unique("pg"), namesrv)
    puller = BlockingPullConsumer(unique("cg"), namesrv)
    producer.start()
    puller.start()
    try:
        producer.send(Message(topic, b"create"))
        producer.send(Message(topic, b"later", delay_level=18))
        queues = puller.fetch_subscribe_queues(topic)

        def bodies():
            return sorted(m.body for q in queues for m in puller.pull(q, "*", 0, 8).messages)

        assert bodies() == [b"create"]
        answer = call_in_thread(http, base, "POST", "/clock/advance", {"seconds": 7200})
        assert answer["advanced_s"] == 7200
        deadline = time.monotonic() + 10
        while bodies() != [b"create", b"later"]:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            call_in_thread(time.sleep, 0.1)
    finally:
        producer.shutdown()
        puller.shutdown()
