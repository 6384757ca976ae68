"""``spark.read.format("rocketmq-consumequeue").load(path)``: one row per consume-queue unit.

``path`` is a store root (holding ``consumequeue/``) or the consumequeue directory itself;
files are ``<topic>/<queueId>/<20-digit byte offset>`` of 20-byte units (protocol.md 5.2,
:mod:`rocketmq_emu.broker.consumequeue.unit`). One partition per file. A file is read up to its first
invalid unit (``ConsumeQueue.recover``: offset < 0 or size <= 0, i.e. the unwritten tail);
``fillPreBlank`` filler units point at no message and are skipped, but keep their queue
offsets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from rocketmq_emu.broker.consumequeue.unit import (
    CQ_STORE_UNIT_SIZE,
    CQ_UNIT_LAYOUT,
    INTEGER_MAX_VALUE,
)
from rocketmq_emu.reports.columns import arrow_schema_of
from rocketmq_emu.reports.datasource_commitlog import local_path

FORMAT_NAME = "rocketmq-consumequeue"
_OFFSET_NAME = re.compile(r"^\d{20}$")
# The unit as a numpy record, field by field from its declaration (broker.consumequeue.unit
# CQ_UNIT; numpy reads struct's codes), under this source's column names.
UNIT_DTYPE = np.dtype([
    (column, CQ_UNIT_LAYOUT.byte_order + f.codes)
    for column, f in zip(("commitLogOffset", "size", "tagsCode"), CQ_UNIT_LAYOUT.fields, strict=True)
])
assert UNIT_DTYPE.itemsize == CQ_STORE_UNIT_SIZE

SCHEMA = StructType(
    [
        StructField("topic", StringType(), True),
        StructField("queueId", IntegerType(), True),
        StructField("queueOffset", LongType(), True),
        StructField("commitLogOffset", LongType(), True),
        StructField("size", IntegerType(), True),
        StructField("tagsCode", LongType(), True),
        StructField("file", StringType(), True),
    ]
)


def consume_queue_dir(path: str) -> str:
    """``path/consumequeue`` when ``path`` is a store root, else ``path``."""
    path = local_path(path)
    sub = os.path.join(path, "consumequeue")
    return sub if os.path.isdir(sub) else path


class ConsumeQueuePartition(InputPartition):
    """One consume-queue file (picklable)."""

    def __init__(self, path: str | None, topic: str, queue_id: int, base_unit: int) -> None:
        self.path = path
        self.topic = topic
        self.queue_id = queue_id
        self.base_unit = base_unit


def plan_partitions(path: str) -> list[ConsumeQueuePartition]:
    """One partition per ``<topic>/<queueId>/<offset>`` file under ``path`` (one empty
    partition when there is none: Spark wants at least one)."""
    root = consume_queue_dir(path)
    parts: list[ConsumeQueuePartition] = []
    if not os.path.isdir(root):
        return [ConsumeQueuePartition(None, "", 0, 0)]
    for topic in sorted(os.listdir(root)):
        tdir = os.path.join(root, topic)
        if not os.path.isdir(tdir):
            continue
        for qid in sorted(os.listdir(tdir)):
            qdir = os.path.join(tdir, qid)
            if not (qid.lstrip("-").isdigit() and os.path.isdir(qdir)):
                continue
            for name in sorted(os.listdir(qdir)):
                if _OFFSET_NAME.match(name):
                    parts.append(
                        ConsumeQueuePartition(
                            os.path.join(qdir, name), topic, int(qid),
                            int(name) // CQ_STORE_UNIT_SIZE,
                        )
                    )
    return parts or [ConsumeQueuePartition(None, "", 0, 0)]


def read_units(part: ConsumeQueuePartition) -> np.ndarray:
    """The written units of one file with their queue offsets (a numpy record array view)."""
    with open(part.path, "rb") as fh:
        data = fh.read()
    count = len(data) // CQ_STORE_UNIT_SIZE
    units = np.frombuffer(data, dtype=UNIT_DTYPE, count=count)
    invalid = np.flatnonzero((units["commitLogOffset"] < 0) | (units["size"] <= 0))
    if invalid.size:
        units = units[: invalid[0]]
    return units


def read_partition(part: ConsumeQueuePartition, schema: StructType = SCHEMA) -> Iterator:
    """Yield one Arrow batch with the file's message units."""
    if part.path is None:
        return
    units = read_units(part)
    offsets = np.arange(part.base_unit, part.base_unit + len(units), dtype=np.int64)
    keep = ~(
        (units["commitLogOffset"] == 0)
        & (units["size"] == INTEGER_MAX_VALUE)
        & (units["tagsCode"] == 0)
    )
    units, offsets = units[keep], offsets[keep]
    n = len(units)
    if n == 0:
        return
    arrow_schema = arrow_schema_of(schema)
    values = {
        "topic": pa.array([part.topic] * n, type=pa.string()),
        "queueId": pa.array(np.full(n, part.queue_id, dtype=np.int32)),
        "queueOffset": pa.array(offsets),
        "commitLogOffset": pa.array(units["commitLogOffset"].astype(np.int64)),
        "size": pa.array(units["size"].astype(np.int32)),
        "tagsCode": pa.array(units["tagsCode"].astype(np.int64)),
        "file": pa.array([os.path.basename(part.path)] * n, type=pa.string()),
    }
    yield pa.RecordBatch.from_arrays(
        [values[name] for name in schema.fieldNames()], schema=arrow_schema
    )


class ConsumeQueueReader(DataSourceReader):
    """One partition per consume-queue file."""

    def __init__(self, options, schema: StructType) -> None:
        unknown = [n for n in schema.fieldNames() if n not in SCHEMA.fieldNames()]
        if unknown:
            raise ValueError(f"unknown {FORMAT_NAME} columns {unknown}")
        self.path = options.get("path")
        if not self.path:
            raise ValueError(f"{FORMAT_NAME}: load(path) needs a store root or consumequeue dir")
        self.schema = schema

    def partitions(self) -> list[ConsumeQueuePartition]:
        """One partition per file."""
        return plan_partitions(self.path)

    def read(self, partition: ConsumeQueuePartition) -> Iterator:
        """The file's units as one Arrow batch."""
        return read_partition(partition, self.schema)


class ConsumeQueueDataSource(DataSource):
    """The ``rocketmq-consumequeue`` format."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return FORMAT_NAME

    def schema(self) -> StructType:
        """topic, queueId, queueOffset, commitLogOffset, size, tagsCode, file."""
        return SCHEMA

    def reader(self, schema: StructType) -> ConsumeQueueReader:
        """The reader."""
        return ConsumeQueueReader(self.options, schema)
