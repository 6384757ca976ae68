"""PyPI ``rocketmq==0.4.4``: a message the push consumer fails (RECONSUME_LATER) comes back via
``%RETRY%{group}`` after the retry delay level, with reconsume times 1 and the same body, keys
and tags (issue 4: CONSUMER_SEND_MSG_BACK, delay level 3 + reconsume times).

The emulator of this module runs with short delay levels (level 3 = 1 s, as ``messageDelayLevel``
in broker.conf allows) so the retry arrives in about a second instead of RocketMQ's 10 s.
"""

from __future__ import annotations

import pytest
from interop_support import (
    TEST_BROKER_CONF,
    ClientLauncher,
    rpc,
    start_emulator,
    stop_emulator,
    unique,
    wait_route,
)

#: Level 3 (the first retry's) is 1 s; the rest as RocketMQ's default ladder.
SHORT_LEVELS = "1s 1s 1s 2s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m"
RETRY_DELAY_MS = 1000


@pytest.fixture(scope="module")
def short_delay_emulator(tmp_path_factory):
    """An emulator whose messageDelayLevel makes the first retry due after 1 s."""
    tmp = tmp_path_factory.mktemp("emulator-short-delays")
    conf = tmp / "broker.conf"
    conf.write_text(TEST_BROKER_CONF +
                    f"messageDelayLevel={SHORT_LEVELS}\n")
    emu = start_emulator(tmp, ["-c", str(conf)])
    yield emu
    stop_emulator(emu)


@pytest.fixture(scope="module")
def retry_run(tmp_path_factory, short_delay_emulator, pypi_rocketmq):
    """Send one message; a consumer fails its first delivery and accepts the second."""
    emu = short_delay_emulator
    launcher = ClientLauncher(tmp_path_factory.mktemp("pypi-retry"), emu, pypi_rocketmq, None)
    topic, group = unique("PyRetry"), unique("GID_retry")
    try:
        sent = launcher.run_python("py_producer.py", "--topic", topic, "--mode", "sync",
                                   "--count", "1", "--group", "PID_retry", "--tag", "TagRetry",
                                   "--key-prefix", "kretry", "--body-prefix", "retry")
        assert [e["status"] for e in sent.events("sent")] == ["OK"], sent.diagnostics()
        wait_route(emu, topic)
        consumer = launcher.python("py_retry_consumer.py", "--topic", topic, "--group", group,
                                   "--expect", "2", "--linger", "2", "--timeout", "45")
        consumer.wait(70)
        yield {"emulator": emu, "topic": topic, "group": group, "sent": sent,
               "consumer": consumer, "msgs": consumer.events("msg")}
    finally:
        launcher.close()


def _two_deliveries(run) -> tuple[dict, dict]:
    msgs = run["msgs"]
    assert len(msgs) == 2, run["consumer"].diagnostics() + "\n" + run["emulator"].log_tail()
    return msgs[0], msgs[1]


def test_failed_message_is_redelivered_once_with_reconsume_times_1(retry_run):
    """RECONSUME_LATER on the first delivery brings the message back once, reconsume times 1."""
    first, again = _two_deliveries(retry_run)
    assert (first["status"], first["reconsume_times"]) == ("RECONSUME_LATER", 0), first
    assert (again["status"], again["reconsume_times"]) == ("CONSUME_SUCCESS", 1), again


def test_redelivery_keeps_body_keys_and_tags(retry_run):
    """The redelivered message has the original body, keys and tags, and its topic."""
    first, again = _two_deliveries(retry_run)
    assert (first["body"], first["keys"], first["tags"]) == ("retry-0", "kretry-0", "TagRetry")
    assert (again["body"], again["keys"], again["tags"]) == (first["body"], first["keys"],
                                                             first["tags"])
    # The client restores the topic from RETRY_TOPIC (the broker keeps the original there).
    assert again["properties"]["RETRY_TOPIC"] == retry_run["topic"], again
    assert again["topic"] in (retry_run["topic"], f"%RETRY%{retry_run['group']}"), again


def test_redelivery_came_through_the_retry_topic(retry_run):
    """The broker stored the retried message on %RETRY%{group} (one message in queue 0)."""
    from rocketmq_emu.broker.remoting.codes import RequestCode

    _two_deliveries(retry_run)
    resp = rpc(retry_run["emulator"].broker, RequestCode.GET_MAX_OFFSET,
               {"topic": f"%RETRY%{retry_run['group']}", "queueId": "0"})
    assert resp.code == 0, resp.remark
    assert resp.ext_fields["offset"] == "1", resp.ext_fields


def test_redelivery_waits_for_the_retry_delay_level(retry_run):
    """The redelivery is at least level 3's delay (1 s here) after the failed delivery."""
    first, again = _two_deliveries(retry_run)
    assert again["received_ms"] - first["received_ms"] >= RETRY_DELAY_MS, (first, again)
    # Stored on the retry topic by the schedule service once due, not when sent back.
    assert again["store_timestamp"] - first["received_ms"] >= RETRY_DELAY_MS, (first, again)
