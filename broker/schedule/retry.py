"""Retry and dead-letter routing for CONSUMER_SEND_MSG_BACK, as a pure function.

Mirrors ``SendMessageProcessor.asyncConsumerSendMsgBack`` (4.9.x) /
``AbstractSendMessageProcessor`` (5.x): the processor loads the consumed message by its
commitlog offset, calls :func:`build_send_back_record`, and puts the returned record through
the normal send path (so its ``DELAY`` level routes it via ``SCHEDULE_TOPIC_XXXX`` to
``%RETRY%{group}``; see :func:`rocketmq_emu.broker.schedule.delay_level_service.transform_delay_message`).

Retry delays with the default level table: attempt 1 uses level 3 (10 s), attempt 2 level 4
(30 s) ... attempt 16 level 18 (2 h); the 17th failure goes to ``%DLQ%{group}`` queue 0.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import (
    DLQ_GROUP_TOPIC_PREFIX,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RETRY_TOPIC,
    RETRY_GROUP_TOPIC_PREFIX,
    create_offset_msg_id,
)

DLQ_NUMS_PER_GROUP = 1  # SendMessageProcessor.DLQ_NUMS_PER_GROUP
DEFAULT_RETRY_MAX_TIMES = 16  # SubscriptionGroupConfig.retryMaxTimes
VERSION_V3_4_9 = 121  # MQVersion.Version.V3_4_9.ordinal(): header maxReconsumeTimes honoured


def retry_topic(group: str) -> str:
    """``MixAll.getRetryTopic``: ``%RETRY%{group}``."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``MixAll.getDLQTopic``: ``%DLQ%{group}``."""
    return DLQ_GROUP_TOPIC_PREFIX + group


@dataclass
class SendBack:
    """What to store for a message sent back: the new record and where it goes."""

    record: MessageRecord
    to_dlq: bool
    delay_level: int  # 0 for the DLQ

    @property
    def topic(self) -> str:
        """Target topic (%RETRY% or %DLQ%); a DELAY level reroutes it at put time."""
        return self.record.topic


def build_send_back_record(
    original: MessageRecord,
    group: str,
    delay_level: int = 0,
    max_reconsume_times: int | None = None,
    request_version: int = 0,
    retry_max_times: int = DEFAULT_RETRY_MAX_TIMES,
    retry_queue_nums: int = 1,
    rng: random.Random | None = None,
) -> SendBack:
    """Build the record CONSUMER_SEND_MSG_BACK stores for ``original`` (loaded by offset).

    ``delay_level`` is the header value (0: broker picks ``3 + reconsumeTimes``; < 0: straight
    to the DLQ). ``max_reconsume_times`` is the header value, honoured when
    ``request_version >= 121`` (V3_4_9), else the group's ``retry_max_times``.
    The caller handles ``retry_queue_nums <= 0`` (RocketMQ answers SUCCESS and drops).
    """
    props = dict(original.properties)
    if PROPERTY_RETRY_TOPIC not in props:
        props[PROPERTY_RETRY_TOPIC] = original.topic
    max_times = retry_max_times
    if request_version >= VERSION_V3_4_9 and max_reconsume_times is not None:
        max_times = max_reconsume_times
    rng = rng or random
    if original.reconsume_times >= max_times or delay_level < 0:
        topic = dlq_topic(group)
        queue_id = rng.randrange(99_999_999) % DLQ_NUMS_PER_GROUP
        # 4.9.x+ sets the level to 0 so a DELAY left in the properties by the schedule quirk
        # does not delay the dead letter.
        props[PROPERTY_DELAY_TIME_LEVEL] = "0"
        level = 0
        to_dlq = True
    else:
        topic = retry_topic(group)
        queue_id = rng.randrange(99_999_999) % max(retry_queue_nums, 1)
        level = delay_level if delay_level != 0 else 3 + original.reconsume_times
        props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
        to_dlq = False
    if not props.get(PROPERTY_ORIGIN_MESSAGE_ID):
        # MessageExt.getMsgId() of a message looked up by offset is its offset msgId.
        host, port = original.store_host
        props[PROPERTY_ORIGIN_MESSAGE_ID] = create_offset_msg_id(
            host, port, original.physical_offset
        )
    record = original.derive(topic, queue_id, props, original.reconsume_times + 1)
    return SendBack(record, to_dlq, level)
