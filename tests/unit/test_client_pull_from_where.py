"""Where a push consumer starts on a newly assigned queue (``computePullFromWhere``), with the
broker calls stubbed: no sockets."""

from __future__ import annotations

import pytest
import pytest_twisted

from rocketmq_emu.client import api
from rocketmq_emu.client.message import MessageQueue
from rocketmq_emu.client.push_consumer import (
    BROADCASTING,
    CONSUME_FROM_FIRST_OFFSET,
    CONSUME_FROM_LAST_OFFSET,
    CONSUME_FROM_TIMESTAMP,
    PushConsumer,
)

MQ = MessageQueue("T", "b", 0)
RETRY = MessageQueue("%RETRY%g", "b", 0)


@pytest.fixture
def broker(monkeypatch):
    """Stub broker answers: stored offset (-1 = QUERY_NOT_FOUND), max offset 42, search 7."""
    state = {"stored": -1, "searched": None}

    async def query(instance, group, mq):
        return state["stored"]

    async def max_offset(instance, mq):
        return 42

    async def search(instance, mq, ts):
        state["searched"] = ts
        return 7

    monkeypatch.setattr(api, "query_consumer_offset", query)
    monkeypatch.setattr(api, "max_offset", max_offset)
    monkeypatch.setattr(api, "search_offset", search)
    return state


def consumer(**kw) -> PushConsumer:
    return PushConsumer("g", "127.0.0.1:1", lambda m, c: True, **kw)


@pytest_twisted.ensureDeferred
async def test_stored_offset_wins(broker):
    """A committed offset is used whatever consume_from_where says."""
    broker["stored"] = 5
    assert await consumer(consume_from_where=CONSUME_FROM_FIRST_OFFSET).compute_pull_from_where(MQ) == 5


@pytest_twisted.ensureDeferred
async def test_last_offset_starts_at_the_end_but_retry_topics_at_zero(broker):
    """CONSUME_FROM_LAST_OFFSET: max offset for topics, 0 for %RETRY% queues."""
    c = consumer(consume_from_where=CONSUME_FROM_LAST_OFFSET)
    assert await c.compute_pull_from_where(MQ) == 42
    assert await c.compute_pull_from_where(RETRY) == 0


@pytest_twisted.ensureDeferred
async def test_first_offset_starts_at_zero(broker):
    """CONSUME_FROM_FIRST_OFFSET: 0."""
    assert await consumer(consume_from_where=CONSUME_FROM_FIRST_OFFSET).compute_pull_from_where(MQ) == 0


@pytest_twisted.ensureDeferred
async def test_timestamp_searches_the_offset(broker):
    """CONSUME_FROM_TIMESTAMP: SEARCH_OFFSET_BY_TIMESTAMP with the given time."""
    c = consumer(consume_from_where=CONSUME_FROM_TIMESTAMP, consume_timestamp_ms=1234)
    assert await c.compute_pull_from_where(MQ) == 7 and broker["searched"] == 1234


@pytest_twisted.ensureDeferred
async def test_broadcasting_uses_local_offsets(broker):
    """A broadcasting consumer never asks the broker for its offset."""
    broker["stored"] = 99
    c = consumer(message_model=BROADCASTING, consume_from_where=CONSUME_FROM_FIRST_OFFSET)
    assert await c.compute_pull_from_where(MQ) == 0
    c.offsets[MQ] = 3
    assert await c.compute_pull_from_where(MQ) == 3
