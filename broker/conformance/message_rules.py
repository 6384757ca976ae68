"""Message rules of the conformance checker: what a send request (codes 10, 310, 320, 324,
325) carries -- topic, properties string, body, batch blocks -- compared with what Apache
RocketMQ's Java client 4.9.8 sends and what the 4.9.8 broker does with it.

Facts, all from the 4.9.8 sources:

* ``TopicValidator.validateTopic`` answers SYSTEM_ERROR for a blank topic, characters outside
  ``^[%|a-zA-Z0-9_-]+$`` or more than 127 characters; ``isNotAllowedSendTopic`` answers
  NO_PERMISSION for the six system topics in ``NOT_ALLOWED_SEND_TOPIC_SET``.
* ``MessageDecoder.messageProperties2String`` writes ``name\\u0001value\\u0002...`` and deletes
  the last separator; ``string2messageProperties`` splits on ``\\u0002``, keeps a piece only
  with a non-empty name before its first ``\\u0001`` and a non-empty value after it.
* ``CommitLog.MessageExtEncoder`` refuses a body over ``maxMessageSize`` and properties over
  ``Short.MAX_VALUE`` bytes (MESSAGE_ILLEGAL); ``DefaultMessageStore.checkMessages`` refuses a
  batch body over ``maxMessageSize``. ``Validators.checkMessage`` (client) refuses an empty body;
  the broker stores one.
* ``Message.getDelayTimeLevel`` is ``Integer.parseInt``: in ``CommitLog.asyncPutMessage`` a
  non-number throws and the remoting layer answers SYSTEM_ERROR; a level above
  ``ScheduleMessageService.getMaxDelayLevel`` (18 levels by default) is clamped to it.
  4.9.8 has no ``TIMER_*`` properties (timer messages are 5.x).
* ``FilterAPI.buildSubscriptionData`` splits an expression on ``||`` and trims each tag.
* ``SendMessageProcessor`` takes the batch path only when the header's batch flag reads true
  (``Boolean.parseBoolean``), whatever the code; ``CommitLog.asyncPutMessages`` refuses a batch
  whose header carries a transaction sysFlag or a DELAY level > 0 (MESSAGE_ILLEGAL) and stores
  the inner messages' DELAY untouched (no delay); ``MessageBatch.generateFromList`` (client)
  refuses delayed messages, retry topics and mixed ``WAIT`` values. A batch block carries no
  topic, so mixed topics cannot be seen on the wire.

Pure: values in, observations out; never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rocketmq_emu.broker.conformance.findings import ERROR, INFO, WARNING, Observation
from rocketmq_emu.broker.message import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_SEPARATOR,
    PROPERTY_TAGS,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_WAIT_STORE_MSG_OK,
    RETRY_GROUP_TOPIC_PREFIX,
    TRANSACTION_TYPE_MASK,
    string_to_properties,
)
from rocketmq_emu.broker.processors.batch_codec import decode_batch
from rocketmq_emu.broker.processors.common import NOT_ALLOWED_SEND_TOPICS, validate_topic
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.headers.base import parse_java_bool, parse_java_int

#: ``MessageStoreConfig.messageDelayLevel`` has 18 entries by default.
MAX_DELAY_LEVEL = 18
#: ``Short.MAX_VALUE``: the largest properties string the store writes.
MAX_PROPERTIES_BYTES = 32767
#: How much of a value an observation shows.
SHOW_CHARS = 80

#: (topic, properties, batch flag, sysFlag) header keys per request code.
_V1_KEYS = ("topic", "properties", "batch", "sysFlag")
_V2_KEYS = ("b", "i", "m", "f")
_KEYS = {
    RequestCode.SEND_MESSAGE: _V1_KEYS,
    RequestCode.SEND_REPLY_MESSAGE: _V1_KEYS,
    RequestCode.SEND_MESSAGE_V2: _V2_KEYS,
    RequestCode.SEND_BATCH_MESSAGE: _V2_KEYS,
    RequestCode.SEND_REPLY_MESSAGE_V2: _V2_KEYS,
}
_REPLY_CODES = (RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2)
_TIMER_PROPERTIES = (PROPERTY_TIMER_DELIVER_MS, PROPERTY_TIMER_DELAY_SEC, PROPERTY_TIMER_DELAY_MS)
_SEP_NAMES = {"\u0001": "\\u0001", "\u0002": "\\u0002"}


def show(value: Any) -> str:
    """``value`` as an observation shows it: separators spelled out, cut at 80 characters."""
    text = "" if value is None else str(value)
    for raw, name in _SEP_NAMES.items():
        text = text.replace(raw, name)
    return text if len(text) <= SHOW_CHARS else text[: SHOW_CHARS - 1] + "\u2026"


def java_int(text: str | None) -> int | None:
    """``Integer.parseInt``: the value, or None where Java throws NumberFormatException."""
    if text is None:
        return None
    try:
        return parse_java_int(text)
    except ValueError:
        return None


def java_bool(text: str | None) -> bool:
    """``Boolean.parseBoolean``: true only for ``"true"`` in any case."""
    return text is not None and parse_java_bool(text)


def _delays(raw: str) -> bool:
    """Whether a DELAY value asks for a delay (a level > 0) or is no int at all."""
    level = java_int(raw)
    return level is None or level > 0


def _field(ext: Mapping[str, Any], key: str) -> str | None:
    value = ext.get(key)
    return value if value is None or isinstance(value, str) else str(value)


def check_send(code: int, ext_fields: dict[str, str], body: bytes,
               max_message_size: int = 4 * 1024 * 1024) -> list[Observation]:
    """The message observations for one send request; malformed input becomes an
    observation, never an exception."""
    out: list[Observation] = []
    try:
        _check(out, code, ext_fields if isinstance(ext_fields, Mapping) else {},
               bytes(body or b""), max_message_size)
    except Exception as exc:  # noqa: BLE001 - the checker must never break a send
        out.append(Observation("message.check", INFO, code, "", show(repr(exc)), "",
                               f"the message rules could not read this request: {exc!r}", ""))
    return out


#: Topics :func:`topic_rules` found nothing in (bounded: a client inventing names fills it
#: once, then the full check runs for the rest).
_GOOD_TOPICS: set[str] = set()
_GOOD_TOPICS_MAX = 4096
#: Properties whose presence always needs the full rules.
_NEEDS_RULES = frozenset({PROPERTY_DELAY_TIME_LEVEL, *_TIMER_PROPERTIES})
#: Characters per properties string that always fit Short.MAX_VALUE bytes (4 bytes a char).
_SAFE_PROPERTY_CHARS = MAX_PROPERTIES_BYTES // 4


def _plain(code: int, ext: Mapping[str, Any], body: bytes, max_size: int,
           keys: tuple[str, str, str, str]) -> bool:
    """Whether a request is one ordinary message no rule can object to, found cheaply (every
    send runs this): a known good topic, a body within limits, no batch flag, and a properties
    string exactly as ``messageProperties2String`` writes it (as many ``\u0001`` as pieces,
    each name once, no empty piece, name or value) without DELAY, timer properties or an odd
    tag. Anything else goes through every rule."""
    topic_key, props_key, batch_key, _sysflag_key = keys
    if (code == RequestCode.SEND_BATCH_MESSAGE or ext.get(topic_key) not in _GOOD_TOPICS
            or not 0 < len(body) <= max_size):
        return False
    batch = ext.get(batch_key)
    if batch is not None and batch != "false":
        return False
    text = ext.get(props_key)
    if not text:
        return True
    if type(text) is not str or len(text) > _SAFE_PROPERTY_CHARS:
        return False
    pieces = text.count(NAME_VALUE_SEPARATOR)
    if (pieces != text.count(PROPERTY_SEPARATOR) + 1 or text[0] == NAME_VALUE_SEPARATOR
            or text[-1] == NAME_VALUE_SEPARATOR or "\u0002\u0002" in text
            or "\u0001\u0002" in text or "\u0002\u0001" in text):
        return False
    props = string_to_properties(text)
    if len(props) != pieces or not props.keys().isdisjoint(_NEEDS_RULES):
        return False
    tags = props.get(PROPERTY_TAGS)
    return tags is None or ("||" not in tags and tags[0] > " " and tags[-1] > " ")


def _check(out: list[Observation], code: int, ext: Mapping[str, Any], body: bytes,
           max_size: int) -> None:
    keys = _KEYS.get(code, _V2_KEYS)
    if _plain(code, ext, body, max_size, keys):
        return
    topic_key, props_key, batch_key, sysflag_key = keys
    topic = _field(ext, topic_key)
    text = _field(ext, props_key)
    found = topic_rules(code, topic_key, topic)
    if not found and topic is not None and len(_GOOD_TOPICS) < _GOOD_TOPICS_MAX:
        _GOOD_TOPICS.add(topic)
    out.extend(found)
    out.extend(body_size_rules(code, "body", len(body), max_size))
    out.extend(property_rules(code, props_key, text or "", ""))
    batch_flag = java_bool(_field(ext, batch_key))
    if code == RequestCode.SEND_BATCH_MESSAGE or (batch_flag and code not in _REPLY_CODES):
        out.extend(batch_rules(code, ext, (topic_key, props_key, batch_key, sysflag_key), body))
    else:
        out.extend(delay_rules(code, string_to_properties(text or ""), ""))


def _obs(kind: str, severity: str, code: int, field: str, sent: Any, expected: str,
         message: str, java_class: str) -> Observation:
    return Observation(kind, severity, code, field, show(sent), expected, message, java_class)


def topic_rules(code: int, key: str, topic: str | None) -> list[Observation]:
    """Rule ``message.topic``: a name TopicValidator refuses, or a topic no client may send to."""
    remark = validate_topic(topic)
    if remark is not None:
        return [_obs("message.topic", ERROR, code, key, topic,
                     "1..127 characters of ^[%|a-zA-Z0-9_-]+$",
                     f"topic '{show(topic)}' is refused by TopicValidator: the broker answers "
                     f"SYSTEM_ERROR \"{remark}\"", "TopicValidator")]
    if topic in NOT_ALLOWED_SEND_TOPICS:
        return [_obs("message.topic", ERROR, code, key, topic, "a topic outside "
                     "NOT_ALLOWED_SEND_TOPIC_SET",
                     f"topic '{topic}' is a system topic clients may not send to: the broker "
                     f"answers NO_PERMISSION \"Sending message to topic[{topic}] is forbidden.\"",
                     "TopicValidator")]
    return []


def body_size_rules(code: int, field: str, size: int, max_size: int,
                    prefix: str = "") -> list[Observation]:
    """Rule ``message.body.size``: a body over the store's limit, or an empty body."""
    if size > max_size:
        return [_obs("message.body.size", ERROR, code, field, f"more than {max_size} bytes",
                     f"at most {max_size} bytes (maxMessageSize)",
                     f"{prefix}the body has {size} bytes, more than maxMessageSize {max_size}: "
                     "the broker answers MESSAGE_ILLEGAL", "DefaultMessageStore")]
    if size == 0:
        return [_obs("message.body.size", WARNING, code, field, "0 bytes", "a non-empty body",
                     f"{prefix}the body is empty: the broker stores it, but the Java client "
                     "refuses to send an empty body (\"the message body length is zero\")",
                     "Validators")]
    return []


def property_rules(code: int, field: str, text: str, prefix: str) -> list[Observation]:
    """The rules on one properties string: separator symptoms, size, tags, timer properties."""
    out = separator_rules(code, field, text, prefix)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PROPERTIES_BYTES:
        out.append(_obs("message.property.size", ERROR, code, field,
                        f"more than {MAX_PROPERTIES_BYTES} bytes",
                        f"at most {MAX_PROPERTIES_BYTES} bytes",
                        f"{prefix}the properties take {size} bytes, more than Short.MAX_VALUE: "
                        "the broker answers MESSAGE_ILLEGAL", "DefaultMessageStore"))
    props = string_to_properties(text)
    out.extend(tag_rules(code, props.get(PROPERTY_TAGS), prefix))
    for name in _TIMER_PROPERTIES:
        if name in props:
            out.append(_obs("message.delay", INFO, code, name, props[name],
                            "DELAY (a level) for a 4.9.8 broker",
                            f"{prefix}{name} is a 5.x timer property: delivered at once by a "
                            "4.9.8 broker; this emulator and 5.x brokers delay it", "CommitLog"))
    return out


def separator_rules(code: int, field: str, text: str, prefix: str) -> list[Observation]:
    """Rule ``message.property.reserved``: what a ``\\u0001`` or ``\\u0002`` inside a name or
    value leaves in the joined string (one observation per symptom, the first piece shown)."""
    if not text:
        return []
    pieces = text.split(PROPERTY_SEPARATOR)
    out: list[Observation] = []
    if pieces[-1] == "":
        pieces.pop()
        out.append(_obs("message.property.reserved", INFO, code, field, "\u0002 at the end",
                        "no separator after the last property",
                        f"{prefix}the properties end with \\u0002; the Java client deletes the "
                        "last separator and the broker ignores the empty piece",
                        "MessageDecoder"))
    seen: set[str] = set()
    found: dict[str, tuple[str, int]] = {}

    def note(symptom: str, piece: str) -> None:
        first, count = found.get(symptom, (piece, 0))
        found[symptom] = (first, count + 1)

    for piece in pieces:
        name, sep, value = piece.partition(NAME_VALUE_SEPARATOR)
        if not piece:
            note("empty", piece)
        elif not sep:
            note("no-value-separator", piece)
        elif not name:
            note("empty-name", piece)
        elif NAME_VALUE_SEPARATOR in value:
            note("two-value-separators", piece)
        elif not value:
            note("empty-value", piece)
        elif name in seen:
            note("duplicate", piece)
        else:
            seen.add(name)
    for symptom, (piece, count) in found.items():
        out.append(_separator_observation(code, field, symptom, piece, count, prefix))
    return out


_SYMPTOMS = {
    "empty": (WARNING, "message.property.reserved",
              "an empty piece between two \\u0002 separators (a name or value starting or "
              "ending with \\u0002?); the broker skips it, the Java client never writes one"),
    "no-value-separator": (ERROR, "message.property.reserved",
                           "a piece without \\u0001 (a value containing \\u0002?): the broker "
                           "drops it"),
    "empty-name": (ERROR, "message.property.reserved",
                   "a piece with an empty name (a name starting with \\u0001 or a value "
                   "containing \\u0002?): the broker drops it"),
    "two-value-separators": (ERROR, "message.property.reserved",
                             "a piece with two \\u0001 (a name or value containing \\u0001?): "
                             "the broker takes the text up to the first as the name and the "
                             "rest as the value"),
    "empty-value": (INFO, "message.property.empty",
                    "a property with an empty value: the broker drops it (the Java client "
                    "sends one only for setKeys(\"\") or setTags(\"\"))"),
    "duplicate": (ERROR, "message.property.reserved",
                  "a name that appears twice (a value containing \\u0002 followed by a "
                  "name?): the broker keeps the last one"),
}


def _separator_observation(code: int, field: str, symptom: str, piece: str, count: int,
                           prefix: str) -> Observation:
    severity, kind, what = _SYMPTOMS[symptom]
    name = piece.partition(NAME_VALUE_SEPARATOR)[0]
    where = name if symptom in ("empty-value", "duplicate") else field
    times = f" ({count} such pieces)" if count > 1 else ""
    return _obs(kind, severity, code, where, piece,
                "name\\u0001value pieces joined by \\u0002, each name once",
                f"{prefix}{what}{times}", "MessageDecoder")


def tag_rules(code: int, tags: str | None, prefix: str = "") -> list[Observation]:
    """Rule ``message.tags``: a tag no subscription expression can name exactly."""
    if not tags:
        return []
    if "||" in tags:
        why = "contains '||', which a subscription expression splits on"
    elif tags[0] <= " " or tags[-1] <= " ":
        why = "starts or ends with whitespace, which a subscription expression trims"
    else:
        return []
    return [_obs("message.tags", WARNING, code, PROPERTY_TAGS, tags,
                 "a tag without '||' and surrounding whitespace",
                 f"{prefix}tag '{show(tags)}' {why}: only a '*' subscription receives it",
                 "FilterAPI")]


def delay_rules(code: int, props: Mapping[str, str], prefix: str) -> list[Observation]:
    """Rule ``message.delay`` for a single message's DELAY level."""
    raw = props.get(PROPERTY_DELAY_TIME_LEVEL)
    if raw is None:
        return []
    level = java_int(raw)
    key = PROPERTY_DELAY_TIME_LEVEL
    if level is None:
        return [_obs("message.delay", ERROR, code, key, raw, "a level 1..18",
                     f"{prefix}DELAY '{show(raw)}' is not an int: Message.getDelayTimeLevel "
                     "throws NumberFormatException and the broker answers SYSTEM_ERROR",
                     "CommitLog")]
    if level > MAX_DELAY_LEVEL:
        return [_obs("message.delay", WARNING, code, key, raw, f"a level 1..{MAX_DELAY_LEVEL}",
                     f"{prefix}DELAY {level} is above the highest level {MAX_DELAY_LEVEL} "
                     f"(default messageDelayLevel): the broker delays it by level "
                     f"{MAX_DELAY_LEVEL}", "CommitLog")]
    if level <= 0:
        return [_obs("message.delay", INFO, code, key, raw, f"a level 1..{MAX_DELAY_LEVEL}",
                     f"{prefix}DELAY {level} means no delay: the broker delivers it at once",
                     "CommitLog")]
    return []


def batch_rules(code: int, ext: Mapping[str, Any], keys: tuple[str, str, str, str],
                body: bytes) -> list[Observation]:
    """Rule ``message.batch``: the batch header and each inner message."""
    topic_key, props_key, batch_key, sysflag_key = keys
    out: list[Observation] = []
    flag = _field(ext, batch_key)
    if not java_bool(flag):
        out.append(_obs("message.batch", ERROR, code, batch_key, flag, "true",
                        f"SEND_BATCH_MESSAGE without {batch_key}=true: the 4.9.8 broker "
                        "stores the whole batch body as ONE message", "SendMessageProcessor"))
    topic = _field(ext, topic_key) or ""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        out.append(_obs("message.batch", ERROR, code, topic_key, topic, "a normal topic",
                        f"a batch to retry topic '{show(topic)}': the Java client refuses it, "
                        "5.x brokers (and this emulator) answer MESSAGE_ILLEGAL, a 4.9.8 broker "
                        "stores it without retry handling", "MessageBatch"))
    header_props = string_to_properties(_field(ext, props_key) or "")
    raw_delay = header_props.get(PROPERTY_DELAY_TIME_LEVEL)
    if raw_delay is not None and _delays(raw_delay):
        out.append(_obs("message.batch", ERROR, code, PROPERTY_DELAY_TIME_LEVEL, raw_delay,
                        "no DELAY on a batch",
                        f"a batch with DELAY '{show(raw_delay)}': the broker answers "
                        + ("MESSAGE_ILLEGAL" if java_int(raw_delay) is not None
                           else "SYSTEM_ERROR (NumberFormatException)"), "CommitLog"))
    sys_flag = java_int(_field(ext, sysflag_key))
    if sys_flag is not None and sys_flag & TRANSACTION_TYPE_MASK:
        out.append(_obs("message.batch", ERROR, code, sysflag_key, sys_flag,
                        "no transaction bits in a batch's sysFlag",
                        f"a batch with transaction sysFlag {sys_flag}: the broker answers "
                        "MESSAGE_ILLEGAL", "CommitLog"))
    try:
        blocks = decode_batch(body)
    except Exception as exc:  # noqa: BLE001 - BatchFormatError, or anything a torn body raises
        out.append(_obs("message.batch", ERROR, code, "body", "an undecodable batch body",
                        "MessageDecoder.encodeMessages blocks",
                        f"the batch body cannot be split into messages: {exc}",
                        "MessageDecoder"))
        return out
    waits = {java_bool(header_props.get(PROPERTY_WAIT_STORE_MSG_OK, "true"))}
    for index, block in enumerate(blocks):
        prefix = f"batch message #{index}: "
        field = f"body#{index}"
        out.extend(body_size_rules(code, field, len(block.body), 1 << 62, prefix))
        out.extend(property_rules(code, field, block.properties, prefix))
        props = string_to_properties(block.properties)
        waits.add(java_bool(props.get(PROPERTY_WAIT_STORE_MSG_OK, "true")))
        raw = props.get(PROPERTY_DELAY_TIME_LEVEL)
        if raw is not None and _delays(raw):
            out.append(_obs("message.batch", ERROR, code, PROPERTY_DELAY_TIME_LEVEL, raw,
                            "no DELAY inside a batch",
                            f"{prefix}DELAY '{show(raw)}' inside a batch: the Java client "
                            "refuses it and a 4.9.8 broker stores it without delay",
                            "MessageBatch"))
    if len(waits) > 1:
        out.append(_obs("message.batch", WARNING, code, PROPERTY_WAIT_STORE_MSG_OK,
                        "mixed true/false", "one WAIT value for the batch and all its messages",
                        "the batch mixes WAIT values: the Java client refuses that; the broker "
                        "follows the batch header's WAIT for every message", "MessageBatch"))
    return out
