"""``spark.read.format("rocketmq-consumequeue").load(path)``: one row per consume-queue unit.

``path`` is a store root (holding ``consumequeue/``) or the consumequeue directory itself;
``load([...])`` and a directory of stores work as for the commitlog source (``brokerName``
column, ``stores`` option). Files are ``<topic>/<queueId>/<20-digit byte offset>`` of 20-byte
units (protocol.md 5.2, :mod:`rocketmq_emu.broker.consumequeue.unit`), grouped into up to
``minPartitions`` partitions (default: the CPU count; the reports pass the session's cores). A file is read up to its first
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
from rocketmq_emu.reports.stores import Store, from_paths, local_path, stores_option

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
        StructField("brokerName", StringType(), True),
        StructField("file", StringType(), True),
    ]
)


def consume_queue_dir(path: str) -> str:
    """``path/consumequeue`` when ``path`` is a store root, else ``path``."""
    path = local_path(path)
    sub = os.path.join(path, "consumequeue")
    return sub if os.path.isdir(sub) else path


class QueueFile:
    """One consume-queue file: ``<topic>/<queueId>/<offset>`` of broker ``broker``'s store
    (picklable)."""

    __slots__ = ("path", "topic", "queue_id", "base_unit", "broker")

    def __init__(self, path: str, topic: str, queue_id: int, base_unit: int,
                 broker: str | None = None) -> None:
        self.path = path
        self.topic = topic
        self.queue_id = queue_id
        self.base_unit = base_unit
        self.broker = broker

    def __getstate__(self):
        return (self.path, self.topic, self.queue_id, self.base_unit, self.broker)

    def __setstate__(self, state) -> None:
        self.path, self.topic, self.queue_id, self.base_unit, self.broker = state


class ConsumeQueuePartition(InputPartition):
    """Consume-queue files read by one task, in order (picklable)."""

    def __init__(self, files: list[QueueFile]) -> None:
        self.files = files


def queue_files(store: Store) -> list[QueueFile]:
    """Every ``<topic>/<queueId>/<offset>`` file of ``store``, by topic, queue and offset."""
    root = consume_queue_dir(store.path)
    files: list[QueueFile] = []
    if not os.path.isdir(root):
        return files
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
                    files.append(QueueFile(os.path.join(qdir, name), topic, int(qid),
                                           int(name) // CQ_STORE_UNIT_SIZE, store.broker_name))
    return files


def plan_partitions(path: str | list[Store], min_partitions: int = 1,
                    ) -> list[ConsumeQueuePartition]:
    """The files of every store in at most ``min_partitions`` partitions of about equal bytes
    (a task costs a Python worker far more than reading a few small files; one empty partition
    when there is no file: Spark wants at least one)."""
    stores = from_paths([path]) if isinstance(path, str) else path
    files = [f for store in stores for f in queue_files(store)]
    if not files:
        return [ConsumeQueuePartition([])]
    count = max(1, min(min_partitions, len(files)))
    sizes = [os.path.getsize(f.path) for f in files]
    share = -(-sum(sizes) // count) or 1
    parts: list[ConsumeQueuePartition] = []
    current: list[QueueFile] = []
    filled = 0
    for f, size in zip(files, sizes, strict=True):
        current.append(f)
        filled += size
        if filled >= share and len(parts) < count - 1:
            parts.append(ConsumeQueuePartition(current))
            current, filled = [], 0
    if current:
        parts.append(ConsumeQueuePartition(current))
    return parts


def read_units(part: QueueFile) -> np.ndarray:
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
    """Yield one Arrow batch per file with its message units."""
    arrow_schema = arrow_schema_of(schema)
    for qfile in part.files:
        batch = read_file(qfile, schema, arrow_schema)
        if batch is not None:
            yield batch


def read_file(qfile: QueueFile, schema: StructType, arrow_schema) -> pa.RecordBatch | None:
    """One file's message units (filler units skipped, their queue offsets kept), or None."""
    units = read_units(qfile)
    offsets = np.arange(qfile.base_unit, qfile.base_unit + len(units), dtype=np.int64)
    keep = ~(
        (units["commitLogOffset"] == 0)
        & (units["size"] == INTEGER_MAX_VALUE)
        & (units["tagsCode"] == 0)
    )
    units, offsets = units[keep], offsets[keep]
    n = len(units)
    if n == 0:
        return None
    values = {
        "topic": pa.array([qfile.topic] * n, type=pa.string()),
        "queueId": pa.array(np.full(n, qfile.queue_id, dtype=np.int32)),
        "queueOffset": pa.array(offsets),
        "commitLogOffset": pa.array(units["commitLogOffset"].astype(np.int64)),
        "size": pa.array(units["size"].astype(np.int32)),
        "tagsCode": pa.array(units["tagsCode"].astype(np.int64)),
        "brokerName": pa.array([qfile.broker] * n, type=pa.string()),
        "file": pa.array([os.path.basename(qfile.path)] * n, type=pa.string()),
    }
    return pa.RecordBatch.from_arrays(
        [values[name] for name in schema.fieldNames()], schema=arrow_schema
    )


class ConsumeQueueReader(DataSourceReader):
    """Consume-queue files grouped into partitions."""

    def __init__(self, options, schema: StructType) -> None:
        unknown = [n for n in schema.fieldNames() if n not in SCHEMA.fieldNames()]
        if unknown:
            raise ValueError(f"unknown {FORMAT_NAME} columns {unknown}")
        self.stores = stores_option(options, FORMAT_NAME)
        self.min_partitions = int(options.get("minPartitions", os.cpu_count() or 1))
        self.schema = schema

    def partitions(self) -> list[ConsumeQueuePartition]:
        """The files in up to ``minPartitions`` partitions of about equal bytes."""
        return plan_partitions(self.stores, self.min_partitions)

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
        """topic, queueId, queueOffset, commitLogOffset, size, tagsCode, brokerName, file."""
        return SCHEMA

    def reader(self, schema: StructType) -> ConsumeQueueReader:
        """The reader."""
        return ConsumeQueueReader(self.options, schema)
