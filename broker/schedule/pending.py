"""What one broker has scheduled but not yet delivered, for the dashboard. A pure read: no
file is created, no cursor moves, nothing is armed.

Two sources:

* Delay levels (``ScheduleMessageService``): a level-``n`` message waits on
  ``SCHEDULE_TOPIC_XXXX`` queue ``n - 1`` from the level's offset in ``delayOffset.json`` up to
  the queue's max offset. Its consume-queue tagsCode is its deliver time (the store writes
  ``storeTimestamp + delay(n)``, :func:`rocketmq_emu.broker.delay_levels.deliver_time_ms`), and a
  level's deliver times only grow, so reading ``limit + 1`` units per level is enough.
* Timer messages (RocketMQ 5 ``TimerMessageStore``; here the schedule_log of
  :mod:`.timer_service`): every schedule_log record its bucket's dispatch_log does not name,
  plus timer-topic messages the replayer has not copied yet. The wheel holds only the loaded
  buckets (30 min ahead by default), so the schedule_log is the full list. Buckets are read in
  due order (a bucket is a due-time range) until ``limit + 1`` entries are found. Delete markers
  (RECALL_MESSAGE) are not listed, nor the messages a pending marker removes.

Both lists are merged by due time and cut at ``limit``; ``truncated`` says whether more exist
(the timer-topic tail, normally empty, is read at most ``limit + 1`` deep in queue order).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, NamedTuple

from rocketmq_emu.broker.commitlog.record import MessageRecord, RecordError, decode_record
from rocketmq_emu.broker.delay_levels import DelayLevels
from rocketmq_emu.broker.message import (
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    RMQ_SYS_SCHEDULE_TOPIC,
    TIMER_TOPIC,
    create_offset_msg_id,
)
from rocketmq_emu.broker.schedule.dispatch_log import ENTRY_SIZE, encode_dispatch_entry
from rocketmq_emu.broker.schedule.schedule_log import HEADER_SIZE, ScheduleEntry
from rocketmq_emu.broker.schedule.timer_message import delete_key, timer_out_ms

#: The keys of every listed entry.
PENDING_KEYS = ("kind", "due", "level", "topic", "queueId", "msgId", "offsetMsgId", "keys",
                "tags")


class _Candidate(NamedTuple):
    """A pending message found, its record read only if it makes the cut."""

    key: tuple  # (due, source order...): the merge order
    kind: str
    level: int | None
    due: int
    fetch: Callable[[], MessageRecord | None]


def pending_scheduled(store: Any, delay_offsets: Any, delay_levels: DelayLevels | None,
                      timer_service: Any, now_ms: int,
                      limit: int = 200) -> tuple[list[dict[str, Any]], bool]:
    """Messages scheduled on this broker and not yet delivered, by due time (ms).

    ``delay_offsets``: the delay-level offset table (a ``DelayOffsetManager`` or a
    :class:`~.offsets.DelayOffsetTable`); None reads the store's own (``store.delay_offsets``),
    and without one every level counts from its queue's first offset. ``delay_levels``: the
    ``messageDelayLevel`` table (None: the default one). ``timer_service``: the broker's
    :class:`~.timer_service.TimerService`, None when timers are off. ``now_ms`` corrects a
    deliver time too far ahead as the delivery does.

    Returns (entries, truncated): at most ``limit`` dicts with :data:`PENDING_KEYS` (``kind``
    ``"delayLevel"`` or ``"timer"``; ``level`` None for a timer; ``topic`` / ``queueId`` the real
    destination; ``msgId`` the UNIQ_KEY; ``offsetMsgId`` of the stored schedule/timer record;
    ``keys`` a list), and whether more entries exist.
    """
    limit = max(limit, 0)
    levels = delay_levels if delay_levels is not None else DelayLevels.parse()
    offsets = delay_offsets if delay_offsets is not None else getattr(store, "delay_offsets", None)
    found = _delay_level_candidates(store, offsets, levels, now_ms, limit + 1)
    if timer_service is not None:
        found.extend(_timer_candidates(store, timer_service, limit + 1))
    found.sort(key=lambda c: c.key)
    truncated = len(found) > limit
    return [_entry_of(c) for c in found[:limit]], truncated


# --- delay levels -------------------------------------------------------------------------------
def _level_offset(offsets: Any, level: int) -> int:
    """The level's next offset to deliver, whichever offset object the caller has."""
    if offsets is None:
        return 0
    query = getattr(offsets, "query_offset", None)  # DelayOffsetManager
    value = query(level) if query is not None else offsets.get(level)  # DelayOffsetTable
    return int(value or 0)


def _delay_level_candidates(store: Any, offsets: Any, levels: DelayLevels, now_ms: int,
                            per_level: int) -> list[_Candidate]:
    """The first ``per_level`` undelivered units of each level."""
    out: list[_Candidate] = []
    for level in range(1, levels.max_level + 1):
        queue_id = DelayLevels.queue_id(level)
        end = store.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, queue_id)
        start = max(_level_offset(offsets, level),
                    store.get_min_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, queue_id))
        if start >= end:
            continue
        delay_ms = levels.delay_ms(level)
        units = store.get_consume_queue_units(RMQ_SYS_SCHEDULE_TOPIC, queue_id, start,
                                              min(per_level, end - start))
        for queue_offset, (commitlog_offset, _size, tags_code) in enumerate(units, start):
            due = tags_code
            # ScheduleMessageService.correctDeliverTimestamp: a deliver time further ahead than
            # the level's delay (clock skew) is delivered now; DelayLevelService does the same.
            if due > now_ms + delay_ms:
                due = now_ms
            out.append(_Candidate((due, 0, level, queue_offset), "delayLevel", level, due,
                                  partial(_look, store, commitlog_offset)))
    return out


# --- timers -------------------------------------------------------------------------------------
def _dispatched(timer_service: Any, bucket: int) -> set[int]:
    """The bucket's dispatched sequences: the live set when its dispatch_log is open, else read
    from the file without creating or opening it for writing."""
    seg = timer_service.dlog.segments.get(bucket)
    if seg is not None:
        return seg.dispatched
    path = os.path.join(timer_service.dlog.dir, f"{bucket:020d}")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return set()
    out = set()
    for pos in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE):
        seq = int.from_bytes(data[pos:pos + 8], "big", signed=True)
        # An entry whose checksum fails is ignored by recovery too: that message is pending.
        if encode_dispatch_entry(seq) == data[pos:pos + ENTRY_SIZE]:
            out.add(seq)
    return out


def _read_payload(log: Any, entry: ScheduleEntry) -> bytes | None:
    """The payload of ``entry`` from the open schedule_log file ``log`` (None: unreadable)."""
    if log is None:
        return None
    try:
        log.seek(entry.position + HEADER_SIZE)
        return log.read(entry.payload_len)
    except OSError:
        return None


def _decode(raw: bytes | None) -> MessageRecord | None:
    if raw is None:
        return None
    try:
        return decode_record(raw)
    except (RecordError, ValueError):
        return None


def _same_due_groups(entries: list[ScheduleEntry]) -> Iterator[list[ScheduleEntry]]:
    """``entries`` (sorted by due) in runs of one due time: a delete marker and the message it
    removes share a due time (see :mod:`.timer_message`)."""
    group: list[ScheduleEntry] = []
    for entry in entries:
        if group and entry.due_ms != group[0].due_ms:
            yield group
            group = []
        group.append(entry)
    if group:
        yield group


def _look(store: Any, commitlog_offset: int) -> MessageRecord | None:
    try:
        return store.look_message_by_offset(commitlog_offset)
    except (ValueError, OSError):
        return None


def _timer_candidate(record: MessageRecord | None, due: int, order: tuple) -> _Candidate:
    return _Candidate((due, 1, *order), "timer", None, due, lambda: record)


def _timer_candidates(store: Any, timer: Any, wanted: int) -> list[_Candidate]:
    """Up to ``wanted`` pending timer messages in due order (then the unreplayed tail)."""
    out: list[_Candidate] = []
    for bucket in sorted(timer.slog.segments):
        if len(out) >= wanted:
            break  # later buckets are due later
        seg = timer.slog.segments[bucket]
        if seg.count == 0:
            continue
        done = _dispatched(timer, bucket)
        entries = [e for e in seg.scan() if e.sequence not in done]
        entries.sort(key=lambda e: (e.due_ms, e.sequence))
        with contextlib.ExitStack() as stack:
            try:  # opened once per segment: a page polls this every 2 s
                log = stack.enter_context(open(seg.path, "rb"))
            except OSError:
                log = None
            _take(out, wanted, bucket, entries, log)
    out.extend(_unreplayed(store, timer, wanted))
    return out


def _take(out: list[_Candidate], wanted: int, bucket: int, entries: list[ScheduleEntry],
          log: Any) -> None:
    """Append to ``out`` (up to ``wanted``) the pending messages of one bucket's ``entries``,
    leaving out delete markers and the messages they delete."""
    for group in _same_due_groups(entries):
        if len(out) >= wanted:
            break
        records = [_decode(_read_payload(log, e)) for e in group]
        deletes = {r.properties[PROPERTY_TIMER_DEL_UNIQKEY] for r in records
                   if r is not None and PROPERTY_TIMER_DEL_UNIQKEY in r.properties}
        for entry, record in zip(group, records, strict=True):
            if record is not None:
                props = record.properties
                if PROPERTY_TIMER_DEL_UNIQKEY in props:
                    continue
                if deletes and delete_key(
                        props.get(PROPERTY_REAL_TOPIC) or record.topic,
                        props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)) in deletes:
                    continue
            out.append(_timer_candidate(record, entry.due_ms, (bucket, entry.sequence)))


def _unreplayed(store: Any, timer: Any, wanted: int) -> list[_Candidate]:
    """Timer-topic messages past the replayer's cursor (copied on the next reactor turn)."""
    start = max(timer.replay_offset, store.get_min_offset_in_queue(TIMER_TOPIC, 0))
    end = store.get_max_offset_in_queue(TIMER_TOPIC, 0)
    if start >= end:
        return []
    out = []
    units = store.get_consume_queue_units(TIMER_TOPIC, 0, start, min(wanted, end - start))
    for queue_offset, (commitlog_offset, _size, _tags) in enumerate(units, start):
        record = _look(store, commitlog_offset)
        if record is None or PROPERTY_TIMER_DEL_UNIQKEY in record.properties:
            continue
        due = timer_out_ms(record)
        if due is None:  # the replayer delivers it at once
            due = record.store_timestamp
        out.append(_timer_candidate(record, due, (2**63, queue_offset)))
    return out


# --- entries ------------------------------------------------------------------------------------
def _entry_of(candidate: _Candidate) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(PENDING_KEYS)
    out.update(kind=candidate.kind, due=candidate.due, level=candidate.level, keys=[])
    record = candidate.fetch()
    if record is None:  # unreadable: still waiting (its delivery will log and skip it)
        return out
    props = record.properties
    try:
        queue_id: int | None = int(props.get(PROPERTY_REAL_QUEUE_ID, ""))
    except ValueError:
        queue_id = None
    try:
        offset_msg_id: str | None = create_offset_msg_id(
            record.store_host[0], record.store_host[1], record.physical_offset)
    except (ValueError, OSError):  # a host pack_host cannot encode
        offset_msg_id = None
    out.update(
        topic=props.get(PROPERTY_REAL_TOPIC) or record.topic,
        queueId=queue_id,
        msgId=props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        offsetMsgId=offset_msg_id,
        keys=record.keys,
        tags=record.tags,
    )
    return out
