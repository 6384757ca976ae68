"""An in-memory stand-in for the store facade, implementing only what the schedule services
use (``put_message``, consume-queue units, lookups, arrival listeners). For unit tests and the
bench's memory mode; it keeps records as encoded bytes, like the real commitlog, so the
services see exactly what they would read back from disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker.commitlog.record import (
    MessageRecord,
    body_crc,
    decode_record,
    encode_record,
)
from rocketmq_emu.broker.delay_levels import DelayLevels, deliver_time_ms
from rocketmq_emu.broker.message import RMQ_SYS_SCHEDULE_TOPIC, tags_code


@dataclass
class FakeAppend:
    """The AppendMessageResult fields the services read."""

    wrote_offset: int
    wrote_bytes: int
    store_timestamp: int
    queue_offset: int
    msg_id: str = ""


@dataclass
class FakePutResult:
    """PutMessageResult with a plain-string status."""

    status: str
    append: FakeAppend | None = None


@dataclass
class FakeStore:
    """Commitlog as a dict of offset -> bytes, consume queues as lists of units."""

    clock: Any
    levels: DelayLevels = field(default_factory=DelayLevels.parse)
    fail_puts: int = 0  # the next N puts answer SERVICE_NOT_AVAILABLE
    keep_bodies: bool = True

    def __post_init__(self) -> None:
        self.log: dict[int, bytes] = {}
        self.next_offset = 0
        self.queues: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
        self.min_offsets: dict[tuple[str, int], int] = {}
        self.listeners: list = []
        self.delay_offsets = None

    def add_arrival_listener(self, fn, topics=None) -> None:
        self.listeners.append((fn, topics))

    def put_message(self, record: MessageRecord) -> FakePutResult:
        if self.fail_puts > 0:
            self.fail_puts -= 1
            return FakePutResult("SERVICE_NOT_AVAILABLE")
        key = (record.topic, record.queue_id)
        queue = self.queues.setdefault(key, [])
        record.store_timestamp = int(self.clock.seconds() * 1000)
        record.queue_offset = self.min_offsets.get(key, 0) + len(queue)
        record.physical_offset = self.next_offset
        record.body_crc = body_crc(record.body)
        data = encode_record(record)
        self.log[self.next_offset] = data
        self.next_offset += len(data)
        if record.topic == RMQ_SYS_SCHEDULE_TOPIC:
            code = deliver_time_ms(record, self.levels)
        else:
            code = tags_code(record.tags)
        queue.append((record.physical_offset, len(data), code))
        for fn, topics in self.listeners:
            if topics is None or record.topic in topics:
                fn(record.topic, record.queue_id, record.queue_offset, code, record)
        return FakePutResult("PUT_OK", FakeAppend(record.physical_offset, len(data),
                                                  record.store_timestamp, record.queue_offset))

    def get_consume_queue_units(self, topic: str, queue_id: int, offset: int, max_num: int):
        key = (topic, queue_id)
        queue = self.queues.get(key, [])
        start = offset - self.min_offsets.get(key, 0)
        if start < 0:
            return []
        return queue[start : start + max_num]

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        return self.min_offsets.get((topic, queue_id), 0)

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        key = (topic, queue_id)
        return self.min_offsets.get(key, 0) + len(self.queues.get(key, []))

    def read_raw(self, commitlog_offset: int, size: int | None = None) -> bytes:
        return self.log.get(commitlog_offset, b"")

    def look_message_by_offset(self, commitlog_offset: int) -> MessageRecord | None:
        data = self.log.get(commitlog_offset)
        return decode_record(data) if data else None

    def forget_commitlog_before(self, offset: int) -> None:
        """Simulate retention deleting old commitlog data (consume queues keep pointing at it)."""
        for off in [o for o in self.log if o < offset]:
            del self.log[off]

    def messages(self, topic: str, queue_id: int | None = None) -> list[MessageRecord]:
        """Decoded records of a topic (all queues, or one), in queue order."""
        out = []
        for (t, q), units in sorted(self.queues.items()):
            if t == topic and (queue_id is None or q == queue_id):
                out.extend(decode_record(self.log[off]) for off, _, _ in units)
        return out
