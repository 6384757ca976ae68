"""RocketMQ 5 topic message types: what a topic accepts and what a message is.

Facts from Apache RocketMQ 5:

* ``common/attribute/TopicMessageType.java``: UNSPECIFIED, NORMAL, FIFO, DELAY, TRANSACTION,
  MIXED; a message's type comes from its properties (:func:`parse_from_message_property`).
* ``common/TopicConfig.getTopicMessageType``: the ``message.type`` attribute, NORMAL when the
  topic has none (so an auto-created topic, created without attributes, is NORMAL).
* ``proxy/service/metadata/LocalMetadataService`` (and ``ClusterMetadataService``): UNSPECIFIED
  for a topic the broker does not know.
* The refusal of a mismatched send is done by the **proxy** only, never by the broker's
  remoting ``SendMessageProcessor``: ``proxy/processor/ProducerProcessor.sendMessage`` (gRPC)
  and ``proxy/remoting/activity/SendMessageActivity`` (proxy remoting) run
  ``DefaultTopicMessageTypeValidator`` when ``ProxyConfig.enableTopicMessageTypeCheck`` (default
  true) and the message has no ``TRANSFER_FLAG`` property, skipping ``%RETRY%``/``%DLQ%``
  topics. A refusal is ``ProxyExceptionCode.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE``: gRPC
  ``Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE`` (40014), remoting ``MESSAGE_ILLEGAL`` (13).
* ``proxy/grpc/v2/route/RouteActivity.parseTopicMessageType``: each MessageQueue of a route
  carries the topic's type in ``accept_message_types`` (all four for MIXED,
  MESSAGE_TYPE_UNSPECIFIED for UNSPECIFIED).

Everything here is a pure function over a topic config and message properties, for the gRPC
layer (the emulator's proxy) to call.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rocketmq_emu.broker.message import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketmq_emu.broker.topic_attributes import TOPIC_MESSAGE_TYPE_ATTRIBUTE

# common/message/MessageConst.java
PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"
PROPERTY_DELAY_TIME_LEVEL = "DELAY"
PROPERTY_TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
PROPERTY_TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
PROPERTY_TIMER_DELAY_MS = "TIMER_DELAY_MS"
PROPERTY_SHARDING_KEY = "__SHARDINGKEY"
PROPERTY_TRANSFER_FLAG = "TRANSFER_FLAG"

_DELAY_PROPERTIES = (PROPERTY_DELAY_TIME_LEVEL, PROPERTY_TIMER_DELIVER_MS,
                     PROPERTY_TIMER_DELAY_SEC, PROPERTY_TIMER_DELAY_MS)

#: apache.rocketmq.v2 ``Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE`` (definition.proto).
CODE_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE = 40014
#: The remoting response code the 5.x proxy maps the refusal to (``ResponseCode.MESSAGE_ILLEGAL``).
REMOTING_MESSAGE_ILLEGAL = 13
#: ``ProxyException``'s class name: the gRPC status message is the exception's ``toString()``.
PROXY_EXCEPTION_CLASS = "org.apache.rocketmq.proxy.common.ProxyException"


class TopicMessageType(enum.Enum):
    """``TopicMessageType`` (value = name, as in Java)."""

    UNSPECIFIED = "UNSPECIFIED"
    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    MIXED = "MIXED"

    @property
    def metrics_value(self) -> str:
        """``getMetricsValue``: the lower-case name."""
        return self.value.lower()


class MessageType(enum.IntEnum):
    """apache.rocketmq.v2 ``MessageType`` (definition.proto) numbers."""

    MESSAGE_TYPE_UNSPECIFIED = 0
    NORMAL = 1
    FIFO = 2
    DELAY = 3
    TRANSACTION = 4


def parse_from_message_property(properties: Mapping[str, str]) -> TopicMessageType:
    """``TopicMessageType.parseFromMessageProperty``: TRANSACTION if ``TRAN_MSG`` is ``"true"``,
    else DELAY if any of ``DELAY``/``TIMER_DELIVER_MS``/``TIMER_DELAY_SEC``/``TIMER_DELAY_MS``
    is present, else FIFO if ``__SHARDINGKEY`` (the message group) is present, else NORMAL."""
    if properties.get(PROPERTY_TRANSACTION_PREPARED) == "true":
        return TopicMessageType.TRANSACTION
    for key in _DELAY_PROPERTIES:
        if properties.get(key) is not None:
            return TopicMessageType.DELAY
    if properties.get(PROPERTY_SHARDING_KEY) is not None:
        return TopicMessageType.FIFO
    return TopicMessageType.NORMAL


def topic_message_type(topic_config: Any | None) -> TopicMessageType:
    """The type a topic accepts, as the 5.x proxy's metadata service answers it.

    ``topic_config`` is a :class:`~rocketmq_emu.broker.configs.topics.TopicConfig` or None.
    None (unknown topic): UNSPECIFIED. No ``message.type`` attribute (every auto-created topic):
    NORMAL. A value that is not a type name (only a hand-edited topics.json has one) raises
    ValueError, as Java's ``valueOf`` throws.
    """
    if topic_config is None:
        return TopicMessageType.UNSPECIFIED
    attributes = topic_config.attributes
    content = attributes.get(TOPIC_MESSAGE_TYPE_ATTRIBUTE.name) if attributes else None
    if content is None:
        return TopicMessageType.NORMAL
    try:
        return TopicMessageType[content]
    except KeyError:
        raise ValueError(f"No enum constant {TopicMessageType.__qualname__}.{content}") from None


@dataclass(frozen=True)
class MessageTypeConflict:
    """A send refused by the type check (``ProxyExceptionCode.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE``).

    :attr:`message` is the exception's message (the remark of a proxy-remoting answer);
    :attr:`grpc_message` is what the 5.x proxy puts in the gRPC ``Status.message``.
    """

    expected: TopicMessageType
    actual: TopicMessageType
    code: int = CODE_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    remoting_code: int = REMOTING_MESSAGE_ILLEGAL

    @property
    def message(self) -> str:
        """``TopicMessageType validate failed, the expected type is X, but actual type is Y``."""
        return (f"TopicMessageType validate failed, the expected type is {self.expected.value}, "
                f"but actual type is {self.actual.value}")

    @property
    def grpc_message(self) -> str:
        """The proxy wraps the ProxyException, so the status text is its ``toString()``."""
        return f"{PROXY_EXCEPTION_CLASS}: {self.message}"


def validate(expected: TopicMessageType, actual: TopicMessageType) -> MessageTypeConflict | None:
    """``DefaultTopicMessageTypeValidator.validate``: a conflict if the message's type is
    UNSPECIFIED, or differs from the topic's and the topic is not MIXED."""
    if actual is TopicMessageType.UNSPECIFIED or (
            actual is not expected and expected is not TopicMessageType.MIXED):
        return MessageTypeConflict(expected, actual)
    return None


def check_message_type(
    topic: str,
    topic_config: Any | None,
    properties: Mapping[str, str],
    *,
    enabled: bool = True,
) -> MessageTypeConflict | None:
    """The 5.x proxy's send-time check (``ProducerProcessor.sendMessage``), or None to go on.

    ``topic_config`` is the broker's config of ``topic`` (None if unknown: then every message
    conflicts, expected UNSPECIFIED, as the proxy checks before looking the route up);
    ``properties`` the first message's properties; ``enabled`` is
    ``ProxyConfig.enableTopicMessageTypeCheck`` (default true). Messages with ``TRANSFER_FLAG``
    and ``%RETRY%``/``%DLQ%`` topics are not checked.
    """
    if not enabled or PROPERTY_TRANSFER_FLAG in properties:
        return None
    if topic and (topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
                  or topic.startswith(DLQ_GROUP_TOPIC_PREFIX)):
        return None
    return validate(topic_message_type(topic_config), parse_from_message_property(properties))


_ACCEPT: dict[TopicMessageType, tuple[MessageType, ...]] = {
    TopicMessageType.NORMAL: (MessageType.NORMAL,),
    TopicMessageType.FIFO: (MessageType.FIFO,),
    TopicMessageType.TRANSACTION: (MessageType.TRANSACTION,),
    TopicMessageType.DELAY: (MessageType.DELAY,),
    TopicMessageType.MIXED: (MessageType.NORMAL, MessageType.FIFO, MessageType.DELAY,
                             MessageType.TRANSACTION),
}


def accept_message_types(topic_type: TopicMessageType) -> tuple[MessageType, ...]:
    """``RouteActivity.parseTopicMessageType``: the ``MessageQueue.accept_message_types`` of
    every queue of a topic of this type (MESSAGE_TYPE_UNSPECIFIED for UNSPECIFIED)."""
    return _ACCEPT.get(topic_type, (MessageType.MESSAGE_TYPE_UNSPECIFIED,))


def route_accept_message_types(topic_config: Any | None) -> tuple[MessageType, ...]:
    """:func:`accept_message_types` of the topic's config (None: unknown topic)."""
    return accept_message_types(topic_message_type(topic_config))
