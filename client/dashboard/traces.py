"""Message traces: decode what trace-enabled clients send to the trace topic, and find the
traces of one message in a broker's store.

A client with message tracing on (``enableMsgTrace``) sends, besides its messages, trace
messages to ``RMQ_SYS_TRACE_TOPIC`` (or a custom trace topic). Each trace message's body is
text: trace contexts separated by FIELD_SPLITOR ``\\u0002``, the fields of one context by
CONTENT_SPLITOR ``\\u0001`` (Java ``TraceConstants``), in the order
``TraceDataEncoder.encoderFromContextBean`` writes them per ``TraceType``:

==============  ==========================================================================
type            fields after the type name
==============  ==========================================================================
Pub             timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost,
                bodyLength, costTime, msgType ordinal, [offsetMsgId,] success
                [, clientHost (4.8.0 only)]
SubBefore       timeStamp, regionId, groupName, requestId, msgId, retryTimes, keys
                [, clientHost (4.8.0 only)]
SubAfter        requestId, msgId, costTime, success, keys [, contextCode
                [, timeStamp, groupName (4.9.2+, not for AccessChannel.CLOUD)]]
EndTransaction  timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost,
                msgType ordinal, transactionId, transactionState name, fromTransactionCheck
Recall          timeStamp, regionId, groupName, topic, msgId, success (5.3.2+)
==============  ==========================================================================

The trace message's KEYS are the traced messages' msgIds and keys (``TraceTransferBean``'s
transKey set, ``AsyncTraceDispatcher`` sets it as the message keys), so the broker's index finds
the trace messages of a msgId: :func:`traces_for`.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from typing import Any

from rocketmq_emu.client.message import decode_messages

#: TraceConstants.CONTENT_SPLITOR: between the fields of one trace context.
CONTENT_SPLITOR = "\u0001"
#: TraceConstants.FIELD_SPLITOR: after each trace context.
FIELD_SPLITOR = "\u0002"
#: TopicValidator.RMQ_SYS_TRACE_TOPIC: the default trace topic.
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"

#: MessageType, by ordinal (the encoder writes ``msgType.ordinal()``).
MESSAGE_TYPES = ("Normal_Msg", "Trans_Msg_Half", "Trans_msg_Commit", "Delay_Msg", "Order_Msg")
#: ConsumeReturnType, by ordinal (SubAfter's contextCode, ConsumeMessageTraceHookImpl).
CONSUME_RETURN_TYPES = ("SUCCESS", "TIME_OUT", "EXCEPTION", "RETURNNULL", "FAILED")
#: LocalTransactionState names (the encoder writes ``transactionState.name()``).
TRANSACTION_STATES = frozenset({"COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"})

#: Every decoded trace has these keys; None where its type does not carry the field.
TRACE_KEYS = (
    "traceType", "timestamp", "regionId", "groupName", "requestId", "clientHost", "costTime",
    "success", "status", "contextCode", "consumeResult", "topic", "msgId", "tags", "keys",
    "storeHost", "bodyLength", "retryTimes", "offsetMsgId", "msgType", "transactionId",
    "transactionState", "fromTransactionCheck",
)

_INT = re.compile(r"[+-]?[0-9]+")
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_END_OF_TIME = 2**63 - 1  # Long.MAX_VALUE: the index query's end time


class _Malformed(ValueError):
    """One trace context that Java's decoder would throw on: skipped here."""


def _java_split(text: str, sep: str) -> list[str]:
    """``String.split`` with a one-character separator: trailing empty strings are dropped.

    That is why a SubAfter ending in ``contextCode\\u0001`` (AccessChannel.CLOUD) decodes as 7
    fields, not 8."""
    parts = text.split(sep)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _parse_int(text: str, bounds: tuple[int, int]) -> int:
    # Long.parseLong / Integer.parseInt: an optional sign and digits, nothing else, in range.
    if not _INT.fullmatch(text):
        raise _Malformed(f"not an integer: {text!r}")
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        raise _Malformed(f"out of range: {text!r}")
    return value


def _long(text: str) -> int:
    return _parse_int(text, _INT64)


def _int(text: str) -> int:
    return _parse_int(text, _INT32)


def _bool(text: str) -> bool:
    # Boolean.parseBoolean: "true" in any case, everything else (garbage too) is false.
    return text.lower() == "true"


def _str(text: str) -> str | None:
    # StringBuilder.append(null) writes "null": a field the client never set.
    return None if text == "null" else text


def _msg_type(text: str) -> str:
    index = _int(text)
    if not 0 <= index < len(MESSAGE_TYPES):
        raise _Malformed(f"no MessageType ordinal {index}")
    return MESSAGE_TYPES[index]


def _blank(trace_type: str) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(TRACE_KEYS)
    out["traceType"] = trace_type
    return out


def _outcome(out: dict[str, Any], success: bool) -> None:
    """``success``, and ``status`` as TraceView.decodeFromTraceTransData shows isSuccess
    ("success" / "failed")."""
    out["success"] = success
    out["status"] = "success" if success else "failed"


def _head(out: dict[str, Any], line: list[str]) -> None:
    """timeStamp, regionId, groupName: fields 1..3 of every type but SubAfter."""
    out["timestamp"] = _long(line[1])
    out["regionId"] = _str(line[2])
    out["groupName"] = _str(line[3])


def _message(out: dict[str, Any], line: list[str]) -> None:
    """topic, msgId, tags, keys, storeHost: fields 4..8 of Pub and EndTransaction."""
    out["topic"] = _str(line[4])
    out["msgId"] = line[5]
    out["tags"] = _str(line[6])
    out["keys"] = _str(line[7])
    out["storeHost"] = _str(line[8])


def _pub(line: list[str]) -> dict[str, Any]:
    out = _blank("Pub")
    _head(out, line)
    _message(out, line)
    out["bodyLength"] = _int(line[9])
    out["costTime"] = _int(line[10])
    out["msgType"] = _msg_type(line[11])
    success = True  # TraceContext.isSuccess's default, kept by a 12-field record
    if len(line) == 13:  # a format without offsetMsgId the Java decoder still accepts
        success = _bool(line[12])
    elif len(line) >= 14:
        out["offsetMsgId"] = _str(line[12])
        success = _bool(line[13])
        if len(line) >= 15:  # 4.8.0 appended the client's address
            out["clientHost"] = _str(line[14])
    _outcome(out, success)
    return out


def _sub_before(line: list[str]) -> dict[str, Any]:
    out = _blank("SubBefore")
    _head(out, line)
    out["requestId"] = _str(line[4])
    out["msgId"] = line[5]
    out["retryTimes"] = _int(line[6])
    out["keys"] = _str(line[7])
    if len(line) >= 9:  # 4.8.0 appended the client's address
        out["clientHost"] = _str(line[8])
    return out


def _sub_after(line: list[str]) -> dict[str, Any]:
    out = _blank("SubAfter")
    out["requestId"] = _str(line[1])
    out["msgId"] = line[2]
    out["costTime"] = _int(line[3])
    success = _bool(line[4])
    _outcome(out, success)
    out["keys"] = _str(line[5])
    if len(line) >= 7:
        code = _int(line[6])
        out["contextCode"] = code
        if 0 <= code < len(CONSUME_RETURN_TYPES):
            out["consumeResult"] = CONSUME_RETURN_TYPES[code]
    if len(line) >= 9:  # 4.9.2+ (ISSUE #3136), except for AccessChannel.CLOUD
        out["timestamp"] = _long(line[7])
        out["groupName"] = _str(line[8])
    return out


def _end_transaction(line: list[str]) -> dict[str, Any]:
    out = _blank("EndTransaction")
    _head(out, line)
    _message(out, line)
    out["msgType"] = _msg_type(line[9])
    out["transactionId"] = _str(line[10])
    state = line[11]
    if state not in TRANSACTION_STATES:  # LocalTransactionState.valueOf throws
        raise _Malformed(f"no LocalTransactionState {state!r}")
    out["transactionState"] = state
    out["status"] = state
    out["fromTransactionCheck"] = _bool(line[12])
    return out


def _recall(line: list[str]) -> dict[str, Any]:
    out = _blank("Recall")
    _head(out, line)
    out["topic"] = _str(line[4])
    out["msgId"] = line[5]
    success = _bool(line[6])
    _outcome(out, success)
    return out


_DECODERS: dict[str, Callable[[list[str]], dict[str, Any]]] = {
    "Pub": _pub,
    "SubBefore": _sub_before,
    "SubAfter": _sub_after,
    "EndTransaction": _end_transaction,
    "Recall": _recall,
}


def decode_trace_data(text: str) -> list[dict[str, Any]]:
    """Decode a trace message body (``TraceDataEncoder.decoderFromTraceDataString``).

    Returns one dict per trace context, in body order, each with every key of
    :data:`TRACE_KEYS` (camelCase; None where the type does not carry the field).
    ``timestamp`` is ms; ``status`` is ``"success"``/``"failed"`` where a success flag is
    encoded (as ``TraceView`` shows it) and the transaction state for EndTransaction;
    ``contextCode`` is SubAfter's ``ConsumeReturnType`` ordinal (``consumeResult`` its name).
    A string field that reads ``null`` (Java appended a null) is None.

    Unlike Java, which throws on the first bad context and so loses the whole body, a malformed
    context (too few fields, a bad number, an unknown enum) is skipped; unknown trace types are
    ignored as Java ignores them. Never raises.
    """
    out: list[dict[str, Any]] = []
    if not isinstance(text, str) or not text:
        return out
    for context in _java_split(text, FIELD_SPLITOR):
        line = _java_split(context, CONTENT_SPLITOR)
        decoder = _DECODERS.get(line[0])
        if decoder is None:
            continue
        try:
            out.append(decoder(line))
        except (IndexError, ValueError):  # _Malformed is a ValueError
            continue
    return out


def _ip_of(host: Any) -> str | None:
    # MessageExt.getBornHostString: the born address's IP, without the port.
    if isinstance(host, tuple | list) and host:
        return str(host[0])
    return None


def _sort_key(trace: dict[str, Any]) -> tuple[bool, int]:
    ts = trace["timestamp"]
    return (ts is None, ts or 0)  # a CLOUD SubAfter has no timestamp: last


def traces_for(store: Any, trace_topic: str, msg_id: str,
               max_records: int = 64) -> list[dict[str, Any]]:
    """The decoded traces of message ``msg_id`` (its client msgId, UNIQ_KEY) stored on
    ``trace_topic`` in ``store``, oldest first.

    Reads at most ``max_records`` trace messages, found by the store's index under
    ``trace_topic#msg_id``; keeps the contexts whose msgId is ``msg_id`` (``TraceView`` does
    the same filtering). A context without an encoded client address gets the trace message's
    born IP, as ``TraceView`` reports it. Unreadable records are skipped.
    """
    if not msg_id or max_records <= 0:
        return []
    found = store.query_message_offsets(trace_topic, msg_id, max_records, 0, _END_OF_TIME)
    traces: list[dict[str, Any]] = []
    seen: set[int] = set()
    for offset in found.phy_offsets:
        if offset in seen:
            continue
        seen.add(offset)
        try:
            messages = decode_messages(store.read_raw(offset))
        except (ValueError, OSError, zlib.error):  # CommitLogError is an OSError
            continue
        for message in messages:
            # The index may answer for a colliding key of another topic: check the topic.
            if message.topic != trace_topic:
                continue
            born_ip = _ip_of(message.born_host)
            for trace in decode_trace_data(message.body.decode("utf-8", errors="replace")):
                if trace["msgId"] != msg_id:
                    continue
                if trace["clientHost"] is None:
                    trace["clientHost"] = born_ip
                traces.append(trace)
    traces.sort(key=_sort_key)
    return traces
