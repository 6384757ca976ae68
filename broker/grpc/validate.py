"""``GrpcValidator`` and the checks of ``SendMessageActivity`` (5.x proxy), with its limits
(``ProxyConfig`` defaults)."""

from __future__ import annotations

import functools
import re

from rocketmq_emu.broker.configs.subscription import is_sys_consumer_group
from rocketmq_emu.broker.grpc.status import Code, ProxyError
from rocketmq_emu.broker.processors.common import is_system_topic

# ProxyConfig defaults.
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
MAX_USER_PROPERTY_SIZE = 16 * 1024
USER_PROPERTY_MAX_NUM = 128
MAX_MESSAGE_GROUP_SIZE = 64
DEFAULT_INVISIBLE_TIME_MS = 60_000
MIN_INVISIBLE_TIME_FOR_RECV_MS = 10_000
MAX_INVISIBLE_TIME_MS = 12 * 3600 * 1000
MAX_DELAY_TIME_MS = 24 * 3600 * 1000
MAX_TRANSACTION_RECOVERY_S = 3600
MIN_LONG_POLLING_MS = 5_000
MAX_LONG_POLLING_MS = 20_000
LONG_POLLING_BATCH_SIZE = 32
#: ``ProxyUtils.MAX_MSG_NUMS_FOR_POP_REQUEST``.
MAX_MSG_NUMS_FOR_POP_REQUEST = 32

#: ``TopicValidator`` / ``Validators`` limits and character set.
TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 120
_LEGAL = re.compile(r"[%|a-zA-Z0-9_-]+")


def _blank(text: str) -> bool:
    return not text.strip()


_ISO_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def has_control_character(text: str) -> bool:
    """Guava's ``CharMatcher.javaIsoControl``: U+0000–U+001F and U+007F–U+009F."""
    # Those are all Unicode Cc, never printable: a printable text (nearly every tag, key and
    # property a client sends) needs no search.
    return not text.isprintable() and _ISO_CONTROL.search(text) is not None


def validate_topic(topic: str) -> None:
    """``GrpcValidator.validateTopic``: ``Validators.checkTopic`` and no system topics."""
    problem = _topic_problem(topic)
    if problem is not None:
        raise ProxyError(Code.ILLEGAL_TOPIC, problem)


@functools.lru_cache(maxsize=4096)
def _topic_problem(topic: str) -> str | None:
    """Why a topic name is refused, or None (cached: every send asks, and names are few)."""
    if _blank(topic):
        return "The specified topic is blank"
    if len(topic) > TOPIC_MAX_LENGTH:
        return f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}."
    if _LEGAL.fullmatch(topic) is None:
        return (f"The specified topic[{topic}] contains illegal characters, allowing only "
                "^[%|a-zA-Z0-9_-]+$")
    if is_system_topic(topic):
        return "cannot access system topic"
    return None


def validate_consumer_group(group: str) -> None:
    """``GrpcValidator.validateConsumerGroup``: ``Validators.checkGroup``, no system groups."""
    if _blank(group):
        raise ProxyError(Code.ILLEGAL_CONSUMER_GROUP, "the specified group is blank")
    if len(group) > GROUP_MAX_LENGTH:
        raise ProxyError(Code.ILLEGAL_CONSUMER_GROUP, f"the specified group[{group}] is longer "
                         f"than group max length: {GROUP_MAX_LENGTH}.")
    if _LEGAL.fullmatch(group) is None:
        raise ProxyError(Code.ILLEGAL_CONSUMER_GROUP, f"the specified group[{group}] contains "
                         "illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
    if is_sys_consumer_group(group):
        raise ProxyError(Code.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")


def validate_invisible_time(invisible_ms: int, minimum_ms: int = 0) -> None:
    """``GrpcValidator.validateInvisibleTime``."""
    if invisible_ms < minimum_ms:
        raise ProxyError(Code.ILLEGAL_INVISIBLE_TIME,
                         f"the invisibleTime is too small. min is {minimum_ms}")
    if invisible_ms > MAX_INVISIBLE_TIME_MS:
        raise ProxyError(Code.ILLEGAL_INVISIBLE_TIME,
                         f"the invisibleTime is too large. max is {MAX_INVISIBLE_TIME_MS}")


def validate_tag(tag: str) -> None:
    """``GrpcValidator.validateTag``."""
    if not tag:
        return
    if _blank(tag):
        raise ProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
    if "|" in tag:
        raise ProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
    if has_control_character(tag):
        raise ProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")


def validate_key(key: str) -> None:
    """``SendMessageActivity.validateMessageKey``."""
    if not key:
        return
    if _blank(key):
        raise ProxyError(Code.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
    if has_control_character(key):
        raise ProxyError(Code.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")


def validate_message_group(group: str) -> None:
    """``SendMessageActivity.validateMessageGroup``."""
    if not group:
        return
    if _blank(group):
        raise ProxyError(Code.ILLEGAL_MESSAGE_GROUP,
                         "message group cannot be the char sequence of whitespace")
    if len(group.encode("utf-8")) >= MAX_MESSAGE_GROUP_SIZE:
        raise ProxyError(Code.ILLEGAL_MESSAGE_GROUP,
                         f"message group exceed the max size {MAX_MESSAGE_GROUP_SIZE}")
    if has_control_character(group):
        raise ProxyError(Code.ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character")


def validate_body(body: bytes) -> None:
    """``SendMessageActivity.validateMessageBodySize`` (empty bodies refused, as the proxy's
    ``enableMessageBodyEmptyCheck`` default)."""
    if not body:
        raise ProxyError(Code.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    if len(body) > MAX_MESSAGE_SIZE:
        raise ProxyError(Code.MESSAGE_BODY_TOO_LARGE,
                         f"message body cannot exceed the max {MAX_MESSAGE_SIZE}")


