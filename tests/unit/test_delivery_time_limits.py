"""How far ahead a message may be scheduled: 24 hours over gRPC (the 5.x proxy's
``maxDelayTimeMills``), ``timerMaxDelaySec`` (2 years by default) over remoting, as
docs/protocol-and-store.md#delivery-time-limits says."""

from __future__ import annotations

import pytest

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.convert import send_properties
from rocketmq_emu.broker.grpc.status import Code, ProxyError
from rocketmq_emu.broker.schedule.timer_message import TimerMessageError, transform_timer_message

NOW_MS = 1_700_000_000_000
DAY_MS = 24 * 3600 * 1000
TWO_YEARS_S = 2 * 365 * 86_400


def grpc_message_delivered_at(deliver_ms: int) -> object:
    """A gRPC Message to topic T whose delivery_timestamp is ``deliver_ms``."""
    m = messages.message_class("Message")()
    m.topic.name = "T"
    m.body = b"body"
    m.system_properties.message_id = "01AA"
    m.system_properties.delivery_timestamp.seconds = deliver_ms // 1000
    m.system_properties.delivery_timestamp.nanos = deliver_ms % 1000 * 1_000_000
    return m


def test_grpc_delivery_timestamp_24_hours_ahead_is_accepted() -> None:
    """Exactly 24 h ahead is within the proxy's limit: it becomes TIMER_DELIVER_MS."""
    props = send_properties(grpc_message_delivered_at(NOW_MS + DAY_MS), "T", "h:1", NOW_MS)
    assert props["TIMER_DELIVER_MS"] == str(NOW_MS + DAY_MS)


def test_grpc_delivery_timestamp_beyond_24_hours_is_illegal_delivery_time() -> None:
    """One ms beyond 24 h: ILLEGAL_DELIVERY_TIME with the proxy's text naming the limit."""
    with pytest.raises(ProxyError) as err:
        send_properties(grpc_message_delivered_at(NOW_MS + DAY_MS + 1), "T", "h:1", NOW_MS)
    assert err.value.code == Code.ILLEGAL_DELIVERY_TIME
    assert "the max delay time of message is too large, max is 86400000" in str(err.value)


def test_remoting_timer_limit_defaults_to_two_years() -> None:
    """broker.conf's timerMaxDelaySec defaults to 63072000 s (2 years)."""
    assert BrokerConfig().timer_max_delay_sec == TWO_YEARS_S == 63_072_000


def test_remoting_timer_two_years_ahead_is_accepted_and_beyond_is_refused() -> None:
    """Over remoting, 2 years ahead is scheduled (far past gRPC's 24 h); one second more is
    refused with the remark the send answers MESSAGE_ILLEGAL with."""
    ok = MessageRecord(topic="T", properties={"TIMER_DELAY_SEC": str(TWO_YEARS_S)})
    assert transform_timer_message(ok, NOW_MS).topic != "T"  # rewritten to the timer topic
    far = MessageRecord(topic="T", properties={"TIMER_DELAY_SEC": str(TWO_YEARS_S + 1)})
    with pytest.raises(TimerMessageError, match="beyond timerMaxDelaySec=63072000"):
        transform_timer_message(far, NOW_MS)
