"""The everyday SEND_MESSAGE_V2 request, recognised once for both fast paths.

``SendMessageProcessor._send_v2_plain`` (a dispatched command) and ``FusedSendV2`` (raw JSON
straight from the protocol) both serve only the common form of a 310 request and hand anything
else to the general path before any side effect. This module holds that test and the record it
yields, so the two paths cannot drift apart: every letter a..h present as a plain decimal
string, no batch/unitMode flag, an existing writable non-retry topic within its queues, a body
within ``maxMessageSize``, no transaction or schedule property.
"""

from __future__ import annotations

from typing import Any

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import (
    PROPERTY_CLUSTER,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_WAIT_STORE_MSG_OK,
    RETRY_GROUP_TOPIC_PREFIX,
    string_to_properties,
)
from rocketmq_emu.broker.processors.common import NOT_ALLOWED_SEND_TOPICS, PERM_WRITE

_str = str
MULTI_TAG = "MULTI_TAG"
MULTI_TAGS_FLAG = 0x2
#: Properties that send a message through the schedule services instead.
SCHEDULE_KEYS = frozenset({"DELAY", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_DELIVER_MS"})


def _small_decimal(value: Any, max_len: int = 10) -> bool:
    return type(value) is _str and value.isdecimal() and len(value) < max_len


def plain_v2_record(
    processor: Any, get: Any, body: bytes, peer: tuple[str, int]
) -> tuple[MessageRecord, int, Any] | None:
    """(record, queueId, topic config) for an everyday request, read through ``get`` (the
    extFields' ``dict.get``); None when the general path must handle it. No side effects."""
    topic = get("b")
    qid = get("e")
    sys_flag = get("f")
    born = get("g")
    flag = get("h")
    if not (
        type(topic) is _str and type(get("a")) is _str and type(get("c")) is _str
        and _small_decimal(qid) and _small_decimal(sys_flag) and _small_decimal(born, 19)
        and _small_decimal(flag) and _small_decimal(get("d"))
    ):
        return None
    batch = get("m")
    unit = get("k")
    if (batch is not None and batch != "false") or (unit is not None and unit != "false"):
        return None
    times = get("j")
    if times is not None and not _small_decimal(times):
        return None
    most = get("l")
    if most is not None and not _small_decimal(most):
        return None
    props_text = get("i")
    if props_text is not None and type(props_text) is not _str:
        return None
    ctx = processor.ctx
    tc = ctx.topic_config.select_topic_config(topic)
    queue_id = int(qid)
    if (
        tc is None
        or topic not in processor._valid_topics and not processor._remember_valid(topic)
        or topic in NOT_ALLOWED_SEND_TOPICS
        or topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        or queue_id >= max(tc.write_queue_nums, tc.read_queue_nums)
        or len(body) > processor.max_message_size
        or not ctx.setting("broker_permission", 6) & PERM_WRITE
    ):
        return None
    props = string_to_properties(props_text or "")
    if PROPERTY_TRANSACTION_PREPARED in props or not SCHEDULE_KEYS.isdisjoint(props):
        return None
    props.pop(PROPERTY_WAIT_STORE_MSG_OK, None)
    props[PROPERTY_CLUSTER] = ctx.cluster_name
    flags = int(sys_flag)
    if tc.topic_filter_type == MULTI_TAG:
        flags |= MULTI_TAGS_FLAG
    record = MessageRecord(topic, body, queue_id, int(flag), props, flags, int(born),
                           peer, ctx.store_host, int(times) if times else 0)
    return record, queue_id, tc
