"""Timer messages (RocketMQ 5 style): the enqueue transform and the dequeue conversion. Pure.

Enqueue, :func:`transform_timer_message` (``HookUtils.checkIfTimerMessage`` +
``transformTimerMessage``): a message carrying ``TIMER_DELAY_SEC``, ``TIMER_DELAY_MS`` or
``TIMER_DELIVER_MS`` (precedence in that order) is rewritten to ``rmq_sys_wheel_timer`` queue 0
with ``TIMER_OUT_MS`` (the deliver time), ``REAL_TOPIC`` and ``REAL_QID``. A deliver time at or
before now leaves the message unchanged (delivered at once); beyond ``timerMaxDelaySec``
(default 2 years here; RocketMQ 5 uses 3 days) or unparsable raises
:class:`TimerMessageError`, which the send processor answers with MESSAGE_ILLEGAL and the
error text as remark.

Difference from RocketMQ 5, on purpose: R5 floors the deliver time to ``timerPrecisionMs``
(1 s) and so may deliver up to a second early; we keep the exact ms and the wheel never fires
before it.

Delete markers (RECALL_MESSAGE, R5.3): a timer message carrying ``TIMER_DEL_UNIQKEY``
(:func:`delete_key` of the message to remove) takes the same path; its deliver time is the
recall handle's timestamp, the original's ``TIMER_OUT_MS`` + 1, and its own ``TIMER_OUT_MS`` is
one ms less, the original's, so both land in one bucket and one wheel slot (R5 gets the same
by flooring both to one slot). A marker whose deliver time has passed is refused
(``WHEEL_TIMER_MSG_ILLEGAL``), never delivered.

Dequeue, :func:`convert_timer_message` (``TimerMessageStore.convert`` / ``convertMessage``):
the due message goes to REAL_TOPIC / REAL_QID with ``TIMER_ENQUEUE_MS`` and
``TIMER_DEQUEUE_MS`` added; the properties string is computed before REAL_TOPIC / REAL_QID are
removed from the map, so the stored string keeps them and TIMER_OUT_MS (as R5 leaves it).
"""

from __future__ import annotations

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_DEQUEUE_MS,
    PROPERTY_TIMER_ENQUEUE_MS,
    PROPERTY_TIMER_OUT_MS,
    TIMER_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    properties_to_string,
    transaction_type,
)

DEFAULT_TIMER_MAX_DELAY_SEC = 2 * 365 * 86_400  # QMQ's horizon; RocketMQ 5: 259200 (3 days)
_TIMER_KEYS = (PROPERTY_TIMER_DELIVER_MS, PROPERTY_TIMER_DELAY_SEC, PROPERTY_TIMER_DELAY_MS)


class TimerMessageError(ValueError):
    """A timer message the broker must refuse (MESSAGE_ILLEGAL); ``str()`` is the remark."""


def is_timer_message(record: MessageRecord) -> bool:
    """True when the record asks for arbitrary-time delivery and is not yet on the timer path."""
    props = record.properties
    if record.topic == TIMER_TOPIC or PROPERTY_TIMER_OUT_MS in props:
        return False
    return any(k in props for k in _TIMER_KEYS)


def timer_deliver_ms(record: MessageRecord, now_ms: int) -> int:
    """Absolute deliver time from the timer properties; TimerMessageError if unparsable."""
    props = record.properties
    try:
        if PROPERTY_TIMER_DELAY_SEC in props:
            return now_ms + int(props[PROPERTY_TIMER_DELAY_SEC]) * 1000
        if PROPERTY_TIMER_DELAY_MS in props:
            return now_ms + int(props[PROPERTY_TIMER_DELAY_MS])
        return int(props[PROPERTY_TIMER_DELIVER_MS])
    except (KeyError, ValueError) as exc:
        raise TimerMessageError(f"illegal timer property: {exc}") from None


def transform_timer_message(
    record: MessageRecord, now_ms: int, max_delay_sec: int = DEFAULT_TIMER_MAX_DELAY_SEC
) -> MessageRecord:
    """Reroute a timer message to ``rmq_sys_wheel_timer`` (in place; returns ``record``).

    Unchanged: not a timer message, a prepared/rollback half, or a deliver time <= now.
    A message that also has a DELAY level > 0 loses its timer properties and is left for the
    delay-level path (``checkIfTimerMessage``).
    """
    props = record.properties
    level = props.get(PROPERTY_DELAY_TIME_LEVEL)
    if level and level.lstrip("-").isdigit() and int(level) > 0:
        if any(k in props for k in _TIMER_KEYS):
            record.set_properties({k: v for k, v in props.items() if k not in _TIMER_KEYS})
        return record
    if transaction_type(record.sys_flag) not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
        return record
    if not is_timer_message(record):
        return record
    deliver_ms = timer_deliver_ms(record, now_ms)
    marker = PROPERTY_TIMER_DEL_UNIQKEY in props
    if deliver_ms <= now_ms:
        if marker:  # transformTimerMessage: a due delete marker is WHEEL_TIMER_MSG_ILLEGAL
            raise TimerMessageError(f"timer delete marker deliver time {deliver_ms} is past")
        return record  # RocketMQ 5 delivers a past deliver time at once
    if deliver_ms - now_ms > max_delay_sec * 1000:
        raise TimerMessageError(
            f"timer message deliver time {deliver_ms} is {(deliver_ms - now_ms) // 1000}s ahead,"
            f" beyond timerMaxDelaySec={max_delay_sec}"
        )
    new_props = dict(props)
    # A delete marker's deliver time is its handle's timestamp, the original's TIMER_OUT_MS + 1
    # (R5 floors both into one slot); we keep exact ms, so the marker takes the original's.
    new_props[PROPERTY_TIMER_OUT_MS] = str(deliver_ms - 1 if marker else deliver_ms)
    new_props[PROPERTY_REAL_TOPIC] = record.topic
    new_props[PROPERTY_REAL_QUEUE_ID] = str(record.queue_id)
    record.set_properties(new_props)
    record.topic = TIMER_TOPIC
    record.queue_id = 0
    return record


def delete_key(real_topic: str, unique_key: str | None) -> str:
    """``TimerMessageStore.buildDeleteKey``: what a delete marker's TIMER_DEL_UNIQKEY names."""
    return f"{real_topic}+{unique_key}"


def timer_out_ms(record: MessageRecord) -> int | None:
    """The TIMER_OUT_MS of a timer-topic record, or None when missing/unparsable."""
    raw = record.properties.get(PROPERTY_TIMER_OUT_MS)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def convert_timer_message(record: MessageRecord, enqueue_ms: int, dequeue_ms: int) -> MessageRecord:
    """The record to put on the real topic when a timer message is due."""
    props = dict(record.properties)
    props[PROPERTY_TIMER_ENQUEUE_MS] = str(enqueue_ms)
    props[PROPERTY_TIMER_DEQUEUE_MS] = str(dequeue_ms)
    props_str = properties_to_string(props)
    real_topic = props.pop(PROPERTY_REAL_TOPIC, None) or record.topic
    try:
        real_qid = int(props.pop(PROPERTY_REAL_QUEUE_ID, "0"))
    except ValueError:
        real_qid = 0
    new = record.derive(real_topic, real_qid, props)
    new.properties_str = props_str
    return new
