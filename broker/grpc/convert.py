"""Messages between gRPC and the broker: what the 5.x proxy's ``SendMessageActivity`` makes of
an ``apache.rocketmq.v2.Message`` (properties and sysFlag of the remoting send) and what
``GrpcConverter.buildMessage`` makes of a stored message for ``ReceiveMessage``."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.status import Code, ProxyError
from rocketmq_emu.broker.grpc.validate import (
    MAX_DELAY_TIME_MS,
    MAX_TRANSACTION_RECOVERY_S,
    MAX_USER_PROPERTY_SIZE,
    USER_PROPERTY_MAX_NUM,
    has_control_character,
    validate_body,
    validate_key,
    validate_message_group,
    validate_tag,
)
from rocketmq_emu.broker.message import properties_to_string

# MessageSysFlag
COMPRESSED_FLAG = 0x1
TRANSACTION_PREPARED_TYPE = 0x4

#: ``MessageConst.STRING_HASH_SET``: names a user property may not take, and that are not
#: returned as user properties.
SYSTEM_PROPERTY_NAMES = frozenset({
    "1ST_POP_TIME", "ARRIVE_TIME", "BORN_TIMESTAMP", "BUYER_ID", "CLUSTER", "CONSUME_START_TIME",
    "CORRECTION_FLAG", "CORRELATION_ID", "DELAY", "DLQ_ORIGIN_MESSAGE_ID", "DLQ_ORIGIN_TOPIC",
    "DUP_INFO", "EXTEND_UNIQ_INFO", "INNER_MULTI_QUEUE_OFFSET", "INSTANCE_ID", "KEYS",
    "MAX_OFFSET", "MAX_RECONSUME_TIMES", "MIN_OFFSET", "MQ2_FLAG", "MSG_REGION", "MSG_TYPE",
    "ORIGIN_MESSAGE_ID", "PGROUP", "POP_CK", "POP_CK_OFFSET", "PUSH_REPLY_TIME", "REAL_QID",
    "REAL_TOPIC", "RECONSUME_TIME", "REPLY_TO_CLIENT", "RETRY_TOPIC", "TAGS", "TIMER_DELAY_LEVEL",
    "TIMER_DELAY_MS", "TIMER_DELAY_SEC", "TIMER_DELIVER_MS", "TIMER_DEL_UNIQKEY",
    "TIMER_DEQUEUE_MS", "TIMER_ENQUEUE_MS", "TIMER_OUT_MS", "TIMER_ROLL_TIMES", "TRACE_ON",
    "TRANSFER_FLAG", "TRAN_MSG", "TRAN_PREPARED_QUEUE_OFFSET", "TTL", "UNIQ_KEY", "WAIT",
    "__BORNHOST", "__CRC32#",
})

PROPERTY_SHARDING_KEY = "__SHARDINGKEY"
PROPERTY_TRACE_CONTEXT = "TRACE_CONTEXT"
PROPERTY_BORN_HOST = "__BORNHOST"
PROPERTY_BORN_TIMESTAMP = "BORN_TIMESTAMP"
PROPERTY_CHECK_IMMUNITY = "CHECK_IMMUNITY_TIME_IN_SECONDS"


@functools.cache
def _enum(name: str, value: str) -> int:
    return messages.protocol().enum_descriptor(name).values_by_name[value].number


def timestamp_ms(ts: Any) -> int:
    """A ``google.protobuf.Timestamp`` in epoch ms."""
    return ts.seconds * 1000 + ts.nanos // 1_000_000


def set_timestamp_ms(ts: Any, ms: int) -> None:
    """Set a ``google.protobuf.Timestamp`` from epoch ms."""
    ts.seconds, rest = divmod(ms, 1000)
    ts.nanos = rest * 1_000_000


def duration_ms(d: Any) -> int:
    """A ``google.protobuf.Duration`` in ms."""
    return d.seconds * 1000 + d.nanos // 1_000_000


def set_duration_ms(d: Any, ms: int) -> None:
    """Set a ``google.protobuf.Duration`` from ms."""
    d.seconds, rest = divmod(ms, 1000)
    d.nanos = rest * 1_000_000


def send_sys_flag(message: Any) -> int:
    """``SendMessageActivity.buildSysFlag``: compressed (GZIP body) and transaction prepared."""
    sp = message.system_properties
    flag = 0
    if sp.body_encoding == _enum("Encoding", "GZIP"):
        flag |= COMPRESSED_FLAG
    if sp.message_type == _enum("MessageType", "TRANSACTION"):
        flag |= TRANSACTION_PREPARED_TYPE
    return flag


def send_properties(message: Any, producer_group: str, remote_address: str,
                    now_ms: int) -> dict[str, str]:
    """``SendMessageActivity.buildMessageProperty`` with its checks (raises :class:`ProxyError`).

    The properties are inserted in the proxy's order (the stored properties string follows
    it); each check runs only where there is something to check (every send passes here, and
    the conformance monitor judges each message with it too)."""
    validate_body(message.body)
    sp = message.system_properties
    user = message.user_properties
    size = 0
    if user:
        props = dict(user)
        if len(props) > USER_PROPERTY_MAX_NUM:
            raise ProxyError(Code.MESSAGE_PROPERTIES_TOO_LARGE,
                             f"too many user properties, max is {USER_PROPERTY_MAX_NUM}")
        for key, value in props.items():
            if key in SYSTEM_PROPERTY_NAMES:
                raise ProxyError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                                 f"property is used by system: {key}")
            if has_control_character(key):
                raise ProxyError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                                 "the key of property cannot contain control character")
            if has_control_character(value):
                raise ProxyError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                                 "the value of property cannot contain control character")
            size += len(key.encode("utf-8")) + len(value.encode("utf-8"))
    else:
        props = {}
    tag = sp.tag
    if tag:
        validate_tag(tag)
        props["TAGS"] = tag
        size += len(tag.encode("utf-8"))
    keys = sp.keys
    if keys:
        for key in keys:
            validate_key(key)
            size += len(key.encode("utf-8"))
        props["KEYS"] = " ".join(keys)
    if size > MAX_USER_PROPERTY_SIZE:
        raise ProxyError(Code.MESSAGE_PROPERTIES_TOO_LARGE,
                         f"the total size of user property is too large, max is "
                         f"{MAX_USER_PROPERTY_SIZE}")
    message_id = sp.message_id
    if not message_id.strip():
        raise ProxyError(Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    props["UNIQ_KEY"] = message_id
    if sp.message_type == _enum("MessageType", "TRANSACTION"):
        props["TRAN_MSG"] = "true"
        if sp.HasField("orphaned_transaction_recovery_duration"):
            seconds = sp.orphaned_transaction_recovery_duration.seconds
            if seconds > MAX_TRANSACTION_RECOVERY_S:
                raise ProxyError(Code.BAD_REQUEST, "the max transaction recovery time of message "
                                 f"is too large, max is {MAX_TRANSACTION_RECOVERY_S}")
            props[PROPERTY_CHECK_IMMUNITY] = str(seconds)
    if sp.HasField("delivery_timestamp"):
        deliver_ms = timestamp_ms(sp.delivery_timestamp)
        if deliver_ms - now_ms > MAX_DELAY_TIME_MS:
            raise ProxyError(Code.ILLEGAL_DELIVERY_TIME, "the max delay time of message is too "
                             f"large, max is {MAX_DELAY_TIME_MS}")
        props["TIMER_DELIVER_MS"] = str(deliver_ms)
    props["RECONSUME_TIME"] = str(sp.delivery_attempt)
    props["PGROUP"] = producer_group
    message_group = sp.message_group
    if message_group:
        validate_message_group(message_group)
        props[PROPERTY_SHARDING_KEY] = message_group
    trace_context = sp.trace_context
    if trace_context:
        props[PROPERTY_TRACE_CONTEXT] = trace_context
    born_host = sp.born_host
    if not born_host.strip():
        born_host = remote_address
    if born_host.strip():
        props[PROPERTY_BORN_HOST] = born_host
    if sp.HasField("born_timestamp"):
        ts = sp.born_timestamp
        props[PROPERTY_BORN_TIMESTAMP] = str(ts.seconds * 1000 + ts.nanos // 1_000_000)
    return props


def send_header(topic: str, queue_id: int, sys_flag: int, props: Sequence[dict[str, str]],
                now_ms: int) -> dict[str, str]:
    """``ProducerProcessor.buildSendMessageRequestHeader``: the SEND_MESSAGE (10) extFields for
    the messages of one request (``props``: each message's properties, the first one's used)."""
    first = props[0]
    try:
        born = int(first.get(PROPERTY_BORN_TIMESTAMP, ""))
    except ValueError:
        born = now_ms
    header = {
        "producerGroup": topic,
        "topic": topic,
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": str(queue_id),
        "sysFlag": str(sys_flag),
        "bornTimestamp": str(born),
        "flag": "0",
        "properties": properties_to_string(first),
        "reconsumeTimes": "0",
        "unitMode": "false",
    }
    if len(props) > 1:
        header["batch"] = "true"
    return header


def md5_hex(body: bytes) -> str:
    """``BinaryUtil.generateMd5``: upper-case hex MD5 (the digest both SDKs verify)."""
    return hashlib.md5(body).hexdigest().upper()


def to_grpc_message(record: MessageRecord, topic: str | None = None,
                    msg_id: str | None = None) -> Any:
    """``GrpcConverter.buildMessage``: a stored (or popped) message as ``apache.rocketmq.v2.Message``;
    ``topic`` overrides the record's (a popped retry message is shown under its topic)."""
    out = messages.message_class("Message")()
    props = record.properties
    out.topic.name = topic if topic is not None else record.topic
    for key, value in props.items():
        if key not in SYSTEM_PROPERTY_NAMES:
            out.user_properties[key] = value
    sp = out.system_properties
    tag = props.get("TAGS")
    if tag is not None:
        sp.tag = tag
    keys = props.get("KEYS")
    if keys is not None:
        sp.keys.extend(keys.split(" "))
    uniq = props.get("UNIQ_KEY") or msg_id
    if uniq:
        sp.message_id = uniq
    sp.body_digest.type = _enum("DigestType", "MD5")
    sp.body_digest.checksum = md5_hex(record.body)
    sp.body_encoding = _enum("Encoding", "GZIP" if record.sys_flag & COMPRESSED_FLAG
                             else "IDENTITY")
    if props.get("TRAN_MSG") == "true":
        kind = "TRANSACTION"
    elif "DELAY" in props or "TIMER_DELIVER_MS" in props or "TIMER_DELAY_SEC" in props:
        kind = "DELAY"
    elif PROPERTY_SHARDING_KEY in props:
        kind = "FIFO"
    else:
        kind = "NORMAL"
    sp.message_type = _enum("MessageType", kind)
    set_timestamp_ms(sp.born_timestamp, record.born_timestamp)
    born_host = props.get(PROPERTY_BORN_HOST) or f"{record.born_host[0]}:{record.born_host[1]}"
    sp.born_host = born_host
    set_timestamp_ms(sp.store_timestamp, record.store_timestamp)
    sp.store_host = f"{record.store_host[0]}:{record.store_host[1]}"
    deliver = props.get("TIMER_DELIVER_MS")
    if deliver is not None and deliver.lstrip("-").isdigit():
        set_timestamp_ms(sp.delivery_timestamp, int(deliver))
    if PROPERTY_SHARDING_KEY in props:
        sp.message_group = props[PROPERTY_SHARDING_KEY]
    handle = props.get("POP_CK")
    if handle is not None:
        sp.receipt_handle = handle
    sp.queue_id = record.queue_id
    sp.queue_offset = record.queue_offset
    sp.delivery_attempt = record.reconsume_times + 1
    if PROPERTY_TRACE_CONTEXT in props:
        sp.trace_context = props[PROPERTY_TRACE_CONTEXT]
    dlq_topic, dlq_id = props.get("DLQ_ORIGIN_TOPIC"), props.get("DLQ_ORIGIN_MESSAGE_ID")
    if dlq_topic is not None and dlq_id is not None:
        sp.dead_letter_queue.topic = dlq_topic
        sp.dead_letter_queue.message_id = dlq_id
    out.body = record.body
    return out
