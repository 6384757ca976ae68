"""UPDATE_AND_CREATE_TOPIC's RocketMQ 5 ``attributes`` header (``AdminBrokerProcessor
.updateAndCreateTopic`` with ``TopicConfigManager.updateTopicConfig``, 5.x).

The header holds a modification (``+message.type=FIFO``, ``-reserve.time``). It is parsed
first (``AttributeParser.parseToMap``); unless ``enableMixedMessageType`` (default false),
``+message.type=MIXED`` is refused with INVALID_PARAMETER ``MIXED message type is not
supported.``; then it is applied to the topic's current attributes
(``AttributeUtil.alterCurrentAttributes``). Any other refusal is a SYSTEM_ERROR whose remark is
the exception's message, as the broker's catch-all answers it; nothing changes then.
"""

from __future__ import annotations

from rocketmq_emu.broker.configs.topics import TopicConfig, TopicConfigManager
from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.topic_attributes import (
    ATTR_ADD_PLUS_SIGN,
    TOPIC_MESSAGE_TYPE_ATTRIBUTE,
    AttributeRequestError,
    parse_to_map,
)
from rocketmq_emu.broker.topic_message_type import TopicMessageType

MIXED_NOT_SUPPORTED = "MIXED message type is not supported."


def update_topic_with_attributes(
    manager: TopicConfigManager,
    tc: TopicConfig,
    attributes_header: str | None,
    enable_mixed_message_type: bool = False,
) -> tuple[int, str] | None:
    """Store ``tc`` with the header's attribute modification applied; None on success, else the
    ``(response code, remark)`` to answer with (the topic is then left as it was)."""
    try:
        modification = parse_to_map(attributes_header)
    except AttributeRequestError as exc:
        return ResponseCode.SYSTEM_ERROR, str(exc)
    if not enable_mixed_message_type:
        value = modification.get(ATTR_ADD_PLUS_SIGN + TOPIC_MESSAGE_TYPE_ATTRIBUTE.name)
        if value == TopicMessageType.MIXED.value:
            return ResponseCode.INVALID_PARAMETER, MIXED_NOT_SUPPORTED
    try:
        manager.update_topic_config(tc, modification)
    except AttributeRequestError as exc:
        return ResponseCode.SYSTEM_ERROR, str(exc)
    return None
