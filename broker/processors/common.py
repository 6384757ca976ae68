"""Helpers shared by the processors: topic checks, put-result mapping, permissions."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker.message import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)
from rocketmq_emu.broker.remoting.codes import ResponseCode

#: ``TopicValidator.TOPIC_MAX_LENGTH``.
TOPIC_MAX_LENGTH = 127
#: ``FAQUrl.suggestTodo(url)``: what Java appends to a remark that has a FAQ page (every such
#: url is http://rocketmq.apache.org/docs/faq/ in 4.9.8 and 5.x).
FAQ_SUGGESTION = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
#: ``TopicValidator`` regex ``^[%|a-zA-Z0-9_-]+$`` (ASCII only, as its VALID_CHAR_BIT_MAP).
_VALID_TOPIC = re.compile(r"[%|a-zA-Z0-9_-]+")
#: ``TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`` (4.9.x).
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)
#: ``TopicValidator.SYSTEM_TOPIC_SET`` (4.9.x) plus the ``rmq_sys_`` prefix.
SYSTEM_TOPICS = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        RMQ_SYS_SCHEDULE_TOPIC,
        "BenchmarkTest",
        RMQ_SYS_TRANS_HALF_TOPIC,
        "RMQ_SYS_TRACE_TOPIC",
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)
SYSTEM_TOPIC_PREFIX = "rmq_sys_"

PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1


@functools.lru_cache(maxsize=4096)
def validate_topic(topic: str | None) -> str | None:
    """``TopicValidator.validateTopic``: the remark of a SYSTEM_ERROR, or None if valid
    (cached: every send asks, and topic names are few)."""
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if _VALID_TOPIC.fullmatch(topic) is None:
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def is_system_topic(topic: str) -> bool:
    """``TopicValidator.isSystemTopic``."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def perm_name(perm: int) -> str:
    """``PermName.perm2String``: ``RW-``-style."""
    return (("R" if perm & PERM_READ else "-") + ("W" if perm & PERM_WRITE else "-")
            + ("X" if perm & PERM_INHERIT else "-"))


def topic_config_str(tc: Any) -> str:
    """``TopicConfig.toString`` (used in error remarks)."""
    return (
        f"TopicConfig [topicName={tc.topic_name}, readQueueNums={tc.read_queue_nums}, "
        f"writeQueueNums={tc.write_queue_nums}, perm={perm_name(tc.perm)}, "
        f"topicFilterType={tc.topic_filter_type}, topicSysFlag={tc.topic_sys_flag}, "
        f"order={'true' if tc.order else 'false'}]"
    )


def status_name(status: Any) -> str:
    """The name of a store status (an enum member or a plain string)."""
    return getattr(status, "name", None) or str(status)


def put_status_response(status: Any, max_message_size: int,
                        disk_util: Callable[[], str] | None = None
                        ) -> tuple[int, str | None, bool]:
    """``SendMessageProcessor.handlePutMessageResult``: (code, remark, sendOK). ``disk_util``
    (the store's ``disk_util``, ``SendMessageProcessor.diskUtil``) is called for a
    SERVICE_NOT_AVAILABLE answer only, its text going into the remark between brackets."""
    name = status_name(status)
    if name == "PUT_OK":
        return ResponseCode.SUCCESS, None, True
    if name == "FLUSH_DISK_TIMEOUT":
        return ResponseCode.FLUSH_DISK_TIMEOUT, None, True
    if name == "FLUSH_SLAVE_TIMEOUT":
        return ResponseCode.FLUSH_SLAVE_TIMEOUT, None, True
    if name == "SLAVE_NOT_AVAILABLE":
        return ResponseCode.SLAVE_NOT_AVAILABLE, None, True
    if name == "CREATE_MAPEDFILE_FAILED":
        return (ResponseCode.SYSTEM_ERROR,
                "create mapped file failed, server is busy or broken.", False)
    if name in ("MESSAGE_ILLEGAL", "PROPERTIES_SIZE_EXCEEDED"):
        return (
            ResponseCode.MESSAGE_ILLEGAL,
            "the message is illegal, maybe msg body or properties length not matched. "
            f"msg body length limit {max_message_size}B, msg properties length limit 32KB.",
            False,
        )
    if name == "SERVICE_NOT_AVAILABLE":
        return (
            ResponseCode.SERVICE_NOT_AVAILABLE,
            "service not available now. It may be caused by one of the following reasons: "
            "the broker's disk is full" + (f" [{disk_util()}]" if disk_util is not None else "")
            + ", messages are put to the slave, message store has been shut down, etc.",
            False,
        )
    if name == "OS_PAGECACHE_BUSY":
        return (ResponseCode.SYSTEM_ERROR,
                "[PC_SYNCHRONIZED]broker busy, start flow control for a while", False)
    if name == "UNKNOWN_ERROR":
        return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR", False
    return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT", False
