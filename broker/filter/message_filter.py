"""``ExpressionMessageFilter`` for SQL92 subscriptions: match a stored record's properties.

The pull processor asks :func:`pull_filter` for the filter of a subscription; the store calls
the returned ``record_filter(raw_record_bytes) -> bool`` on each record the consume-queue scan
selected (``isMatchedByCommitLog``), reading only the properties string of the record.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker.commitlog.record import (
    I16,
    I32,
    MAGIC_CODE_AT,
    MESSAGE_MAGIC_CODE_V2,
    SYS_FLAG_AT,
    body_length_at,
)
from rocketmq_emu.broker.filter.errors import FilterError
from rocketmq_emu.broker.message import string_to_properties
from rocketmq_emu.broker.remoting.codes import ResponseCode

log = logging.getLogger(__name__)

EXPRESSION_TYPE_SQL92 = "SQL92"

RecordFilter = Callable[[bytes], bool]


def compile_sql92(expression: str) -> Any:
    """:func:`rocketmq_emu.broker.filter.parser.compile_sql92`, importing the parser (and ``lark``) only
    when a SQL92 expression first has to be compiled."""
    from rocketmq_emu.broker.filter.parser import compile_sql92 as compile_

    return compile_(expression)


def is_tag_type(expression_type: str | None) -> bool:
    """``ExpressionType.isTagType``: null, empty and ``TAG`` are tag subscriptions."""
    return not expression_type or expression_type == "TAG"


def record_properties(raw: bytes | memoryview) -> dict[str, str]:
    """The properties of one raw commitlog record (``MessageDecoder.decodeProperties``)."""
    (magic,) = I32.unpack_from(raw, MAGIC_CODE_AT)
    (sys_flag,) = I32.unpack_from(raw, SYS_FLAG_AT)
    p = body_length_at(sys_flag)
    (body_len,) = I32.unpack_from(raw, p)
    p += I32.size + body_len
    if magic == MESSAGE_MAGIC_CODE_V2:
        (topic_len,) = I16.unpack_from(raw, p)
        p += I16.size + topic_len
    else:
        p += 1 + raw[p]  # V1: a one-byte topicLength
    (props_len,) = I16.unpack_from(raw, p)
    p += I16.size
    return string_to_properties(bytes(raw[p:p + props_len]).decode("utf-8", errors="replace"))


def sql92_record_filter(expression: str) -> RecordFilter:
    """A record filter for a compiled expression (FilterError if it does not compile)."""
    compiled = compile_sql92(expression)

    def matches(raw: bytes) -> bool:
        try:
            props = record_properties(raw)
        except (struct.error, IndexError) as exc:
            log.error("Message Filter error, cannot read properties: %s", exc)
            return False
        return compiled.matches(props)

    return matches


def pull_filter(sub: Any, from_request: bool) -> tuple[RecordFilter | None, tuple[int, str] | None]:
    """``PullMessageProcessor``'s filter step for ``sub`` (a SubscriptionData).

    Returns ``(record_filter, None)`` — the filter is None for TAG / class-filter subscriptions —
    or ``(None, (code, remark))`` when the expression does not compile: 23
    SUBSCRIPTION_PARSE_FAILED for an expression in the pull request itself, 27
    FILTER_DATA_NOT_EXIST for one registered by heartbeat (``ConsumerFilterManager`` logged
    and dropped it then).
    """
    if sub is None or getattr(sub, "class_filter_mode", False) or is_tag_type(sub.expression_type):
        return None, None
    if sub.expression_type != EXPRESSION_TYPE_SQL92:
        # FilterFactory knows only SQL92: compile fails the same way.
        error = FilterError("java.lang.NullPointerException", "no filter for "
                            f"{sub.expression_type}")
    else:
        try:
            return sql92_record_filter(sub.sub_string), None
        except FilterError as exc:
            error = exc
    log.warning("Parse the consumer's subscription[%s] failed, topic %s: %s", sub.sub_string,
                sub.topic, error)
    if from_request:
        return None, (ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                      "parse the consumer's subscription failed")
    return None, (ResponseCode.FILTER_DATA_NOT_EXIST,
                  "The broker's consumer filter data is not exist!Your expression may be wrong!")


def check_client_config(sub_json: dict[str, Any], enable_property_filter: bool,
                        ) -> tuple[int, str | None]:
    """CHECK_CLIENT_CONFIG (46) verdict for a ``subscriptionData`` JSON object
    (``ClientManageProcessor.checkClientConfig``): (code, remark)."""
    expression_type = sub_json.get("expressionType")
    if is_tag_type(expression_type):
        return ResponseCode.SUCCESS, None
    if not enable_property_filter:
        return (ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {expression_type}")
    if expression_type != EXPRESSION_TYPE_SQL92:
        return ResponseCode.SUBSCRIPTION_PARSE_FAILED, None
    try:
        compile_sql92(str(sub_json.get("subString") or ""))
    except FilterError as exc:
        return ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)
    return ResponseCode.SUCCESS, None
