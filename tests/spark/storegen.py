"""Write small RocketMQ stores for the Spark tests with the broker's own record codec.

Until the broker's MessageStore facade can be driven from here, this lays files out exactly as
``CommitLog`` / ``ConsumeQueue`` do (protocol.md 4.2, 5.1, 5.2): 20-digit file names = first
byte offset, a fixed (tiny) file size, the 8-byte BLANK filler when the next record plus 8
bytes does not fit, zeros after the written end, one 20-byte unit per dispatched message.
"""

from __future__ import annotations

import os
from collections import defaultdict

from broker import jsonutil
from broker.commitlog.record import (
    END_FILE_MIN_BLANK_LENGTH,
    MessageRecord,
    body_crc,
    encode_blank,
    encode_record,
)
from broker.consumequeue.unit import CQ_STORE_UNIT_SIZE, encode_unit
from broker.message import (
    RMQ_SYS_SCHEDULE_TOPIC,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    tags_code,
    transaction_type,
)
from broker.schedule.delay_levels import DelayLevels


class TinyStore:
    """Append records like the broker's store does, into tiny mapped files."""

    def __init__(self, root: str, file_size: int = 4096, cq_units_per_file: int = 8) -> None:
        self.root = root
        self.file_size = file_size
        self.cq_file_size = cq_units_per_file * CQ_STORE_UNIT_SIZE
        self.commitlog_dir = os.path.join(root, "commitlog")
        os.makedirs(self.commitlog_dir, exist_ok=True)
        os.makedirs(os.path.join(root, "config"), exist_ok=True)
        self.write_pos = 0  # next commitlog offset
        self.queue_offsets: dict[tuple[str, int], int] = defaultdict(int)
        self.levels = DelayLevels.parse()
        self.records: list[MessageRecord] = []
        self.blanks: list[int] = []  # commitlog offsets of BLANK fillers

    def _write(self, directory: str, file_size: int, offset: int, data: bytes) -> None:
        base = offset - offset % file_size
        path = os.path.join(directory, f"{base:020d}")
        if not os.path.exists(path):
            with open(path, "wb") as fh:
                fh.truncate(file_size)
        with open(path, "r+b") as fh:
            fh.seek(offset - base)
            fh.write(data)

    def put(self, record: MessageRecord) -> MessageRecord:
        """Assign offsets like the store (queueOffset per topic/queue, physicalOffset, bodyCRC),
        append, dispatch to the consume queue; returns the record as stored."""
        record.body_crc = body_crc(record.body)
        tx = transaction_type(record.sys_flag)
        dispatch = tx not in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)
        key = (record.topic, record.queue_id)
        record.queue_offset = self.queue_offsets[key] if dispatch else 0
        size = len(encode_record(record))
        remaining = self.file_size - self.write_pos % self.file_size
        if size + END_FILE_MIN_BLANK_LENGTH > remaining:
            self._write(self.commitlog_dir, self.file_size, self.write_pos, encode_blank(remaining))
            self.blanks.append(self.write_pos)
            self.write_pos += remaining
        record.physical_offset = self.write_pos
        data = encode_record(record)
        self._write(self.commitlog_dir, self.file_size, self.write_pos, data)
        self.write_pos += len(data)
        if dispatch:
            code = tags_code(record.properties.get("TAGS"))
            if record.topic == RMQ_SYS_SCHEDULE_TOPIC:
                code = record.store_timestamp + self.levels.delay_ms(record.queue_id + 1)
            qdir = os.path.join(self.root, "consumequeue", record.topic, str(record.queue_id))
            os.makedirs(qdir, exist_ok=True)
            self._write(
                qdir, self.cq_file_size, record.queue_offset * CQ_STORE_UNIT_SIZE,
                encode_unit(record.physical_offset, len(data), code),
            )
            self.queue_offsets[key] += 1
        self.records.append(record)
        return record

    def write_consumer_offsets(self, table: dict[str, dict[int, int]], fastjson: bool = True) -> None:
        """config/consumerOffset.json; ``fastjson`` writes the int keys unquoted as Java does."""
        text = jsonutil.dumps({"offsetTable": table}).decode()
        if fastjson:
            for offsets in table.values():
                for qid in offsets:
                    text = text.replace(f'"{qid}":', f"{qid}:")
        with open(os.path.join(self.root, "config", "consumerOffset.json"), "w") as fh:
            fh.write(text)
