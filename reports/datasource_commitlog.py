"""``spark.read.format("rocketmq-commitlog").load(path)``: one row per stored message.

``path`` is a store root (holding ``commitlog/``), a commitlog directory or one commitlog file;
``load([...])`` takes several, and a directory holding one store per broker stands for all of
them (:func:`rocketmq_emu.reports.stores.from_paths`). The ``brokerName`` column says which
broker's store a row comes from (the ``stores`` option, ``[[brokerName, path], ...]`` as JSON,
names them explicitly).

Partitioning: the written bytes of all files, end to end, are cut into equal byte ranges, at
least ``minPartitions`` of them and none over ``maxPartitionBytes`` (:func:`plan_partitions`);
a partition may end inside one file and go on in the next. A partition owns the records that
*start* in its ranges (the last one may run past a range end). To find its first record
without walking every record from the file start, a reader searches its range for a message
magic whose PHYSICALOFFSET field equals the file's base offset (its 20-digit name) plus the
position — RocketMQ writes exactly that value there (``CommitLog.DefaultAppendMessageCallback``),
so body bytes cannot pass by accident (:func:`rocketmq_emu.broker.commitlog.record_scan.find_record_start`).
Files whose name is not an offset are read whole from byte 0.

Each reader memory-maps its file and decodes with
:func:`rocketmq_emu.broker.commitlog.record_scan.scan_columns` (the broker's codec), only the record fields the
requested columns need, and yields Arrow record batches. It stops at a BLANK filler or the
unwritten (zero) tail. A corrupt record becomes a row with only ``file``, ``filePosition``
and ``_error`` set, and reading resumes at the next record start found as above; with
``failFast=true`` (or a user schema without ``_error``) the job fails instead.

Options (strings): ``columns`` (comma list; default all, see :mod:`rocketmq_emu.reports.columns`),
``includeBody`` (default true), ``failFast`` (default false), ``batchSize`` (records per Arrow
batch, default 8192, or 16384 when neither body nor properties is decoded),
``maxPartitionBytes`` (default 1 GiB), ``minPartitions`` (default: the driver's CPU count,
right for local mode; pass the cluster's total cores, as :mod:`rocketmq_emu.reports.jobs` and the bench pass
``defaultParallelism``), ``trimWrittenEnd`` (default
true: the driver finds each split file's written end by a binary search for the last record
start and plans no ranges over the zero tail, see :func:`written_stop`) and
``maxRecordBytes`` (the longest record that search assumes, default 4 MiB + 128 KiB),
``checkCRC`` (default false: true also reports a record whose BODYCRC does not match its
body, as RocketMQ's recovery does with ``checkCRCOnRecover``). A user schema
(``spark.read.schema("topic string")``) also narrows what is decoded: PySpark 4.3 pushes no
column pruning into a Python data source (its ``PythonScanBuilder`` only takes filters), so
the schema the job asks for is the only projection there is.
"""

from __future__ import annotations

import mmap
import os
import re
import time
from collections.abc import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from rocketmq_emu.broker.commitlog.record import BLANK_MAGIC_CODE, PEEK, V4, RecordError, peek
from rocketmq_emu.broker.commitlog.record_scan import (
    find_record_start,
    is_record_start,
    scan_columns,
)
from rocketmq_emu.reports import columns as C
from rocketmq_emu.reports.stores import Store, from_paths, local_path, stores_option

FORMAT_NAME = "rocketmq-commitlog"
_OFFSET_NAME = re.compile(r"^\d{20}$")
DEFAULT_BATCH_SIZE = 8192
# Without body or properties a row is a few numbers and short strings, decoded by numpy per
# batch: bigger batches than 8192 cut the per-batch costs (numpy set-up, Arrow IPC, the JVM's
# batch handling; 9 partitions: Spark warm best 2.21 -> 1.64 s with 65536), but numpy's
# temporaries grow with the batch: with 2 partitions, 16384 beat 65536 in two interleaved
# sessions (best 1.03/1.15 s against 1.18/1.21 s; worker CPU 1.37/1.48 against 1.46/1.58 s),
# and the plain loop is also faster at 16384 than at 65536.
NARROW_BATCH_SIZE = 16384
_WIDE_FIELDS = frozenset(("body", "properties"))
# One commitlog file. Partitions are cut to whole waves of minPartitions anyway; a small cap
# only adds tasks, and each costs a Python worker ~0.07 s CPU and ~0.15 s idle (the bench's
# 0.9M-record topic count: 10 x 103 MiB tasks best 1.15 s, 2 x 515 MiB 0.95 s on local[2]).
DEFAULT_MAX_PARTITION_BYTES = 1024 * 1024 * 1024
# maxMessageSize (4 MiB body, MessageStoreConfig) + topic and properties (< 64 KiB) + fixed fields.
DEFAULT_MAX_RECORD = 4 * 1024 * 1024 + 128 * 1024


def _bool(options, key: str, default: bool) -> bool:
    value = options.get(key)
    return default if value is None else str(value).strip().lower() in ("true", "1", "yes")


def commitlog_files(path: str) -> list[str]:
    """The commitlog files under ``path`` (store root, commitlog dir or one file), by offset."""
    path = local_path(path)
    if os.path.isfile(path):
        return [path]
    directory = os.path.join(path, "commitlog")
    if not os.path.isdir(directory):
        directory = path
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"no commitlog directory or file at {path}")
    names = sorted(n for n in os.listdir(directory) if os.path.isfile(os.path.join(directory, n)))
    return [os.path.join(directory, n) for n in names]


class FileRange:
    """Records starting in ``[start, stop)`` of one file (``base_offset``: the commitlog offset
    of its first byte, None when the name is not an offset and the file is read whole) of the
    store of broker ``broker``."""

    __slots__ = ("path", "base_offset", "start", "stop", "broker")

    def __init__(self, path: str, base_offset: int | None, start: int, stop: int,
                 broker: str | None = None) -> None:
        self.path = path
        self.base_offset = base_offset
        self.start = start
        self.stop = stop
        self.broker = broker

    def __getstate__(self):
        return (self.path, self.base_offset, self.start, self.stop, self.broker)

    def __setstate__(self, state) -> None:
        self.path, self.base_offset, self.start, self.stop, self.broker = state

    def __repr__(self) -> str:
        return f"FileRange({self.path}, {self.start}, {self.stop})"


class CommitLogPartition(InputPartition):
    """One Spark partition: consecutive :class:`FileRange` pieces, read in order (picklable)."""

    def __init__(self, ranges: list[FileRange]) -> None:
        self.ranges = ranges

    def __repr__(self) -> str:
        return f"CommitLogPartition({self.ranges})"


def written_stop(path: str, base: int, max_record: int) -> int | None:
    """An upper bound for the start of the last record of a commitlog file, found without
    reading the unwritten (zero) tail: None means "read the whole file".

    Binary search for the last record start: a position has a record start within
    ``max_record`` bytes after it exactly when it lies before the last record, since records
    are contiguous and none is longer than that. The answer is used only if the record there
    ends cleanly (zeros, a BLANK filler or the file end follow it), so a damaged tail or a
    gap of garbage falls back to reading everything.

    Probes read their window with ``os.pread`` and skip the magic search when it is all
    zeros: in a preallocated zero tail each probe covers megabytes, and ``bytes.find``
    crawling them for both magics cost ~0.12 s per 1 GiB file, on every query's planning.
    """
    with open(path, "rb") as fh:
        fd = fh.fileno()
        size = os.fstat(fd).st_size
        if size < 8:
            return None
        total, magic = _pread_peek(fd, 0)
        if total == 0 and magic == 0:
            return 0  # nothing written
        if _find_start(fd, size, 0, 1, base) != 0:
            return None
        lo, hi = 0, size
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = _find_start(fd, size, mid, min(mid + max_record, size), base)
            if found is None:
                hi = mid
            else:
                lo = found
        end = lo + _pread_peek(fd, lo)[0]
        if end + 8 > size:
            return lo + 1
        total, magic = _pread_peek(fd, end)
        if magic == BLANK_MAGIC_CODE or (total == 0 and magic == 0):
            return lo + 1
        return None


_FIRST_WINDOW = 64 * 1024  # most probes inside the data find a record start in the first KiBs
_ZERO_CHUNK = bytes(64 * 1024)


def _nonzero_end(window: bytes) -> int:
    """The length of ``window`` without its trailing zero bytes."""
    end = len(window)
    step = len(_ZERO_CHUNK)
    while end > 0:
        cut = max(0, end - step)
        if window[cut:end] != _ZERO_CHUNK[: end - cut]:
            return cut + len(window[cut:end].rstrip(b"\0"))
        end = cut
    return 0


def _pread_peek(fd: int, pos: int) -> tuple[int, int]:
    """TOTALSIZE and MAGICCODE at ``pos`` of an open file (:func:`peek` on a pread)."""
    return peek(os.pread(fd, PEEK.size, pos).ljust(PEEK.size, b"\0"), 0)


def _find_start(fd: int, size: int, start: int, stop: int, base: int) -> int | None:
    """:func:`find_record_start` over ``[start, stop)`` of an open file, on pread windows: a
    short one first, then the rest only if that holds no record start (the first start in
    a prefix is the first start of the range, so the answer is the same)."""
    for limit in (min(stop, start + _FIRST_WINDOW), stop):
        # A candidate before ``limit`` needs its fixed fields (record.py ``V4``) readable.
        end = min(limit + V4.size + 8, size)
        window = os.pread(fd, end - start, start)
        # A magic is not zeros, so the search stops where the window's zero tail begins:
        # bytes.find crawls zeros at ~1 GB/s, comparing chunks with zeros is ~40x faster.
        data_end = _nonzero_end(window)
        if data_end:
            hit = find_record_start(window, 0, min(limit - start, data_end), base + start)
            if hit is not None:
                return start + hit
        if limit == stop:
            break
    return None


def plan_ranges(
    path: str | list[Store], max_range_bytes: int, max_record: int | None = DEFAULT_MAX_RECORD
) -> list[FileRange]:
    """Split the files under ``path`` (or of each store) into byte ranges of at most
    ``max_range_bytes`` (driver side). With ``max_record`` set, ranges past a file's written
    end (:func:`written_stop`) are left out. A file whose name is not an offset is one range."""
    ranges = []
    for file_path, base, stop, broker in file_extents(path, max_record):
        if base is None:
            ranges.append(FileRange(file_path, None, 0, stop, broker))
            continue
        for start in range(0, stop, max_range_bytes):
            ranges.append(FileRange(file_path, base, start, min(stop, start + max_range_bytes),
                                    broker))
    return ranges


def file_extents(path: str | list[Store], max_record: int | None,
                  ) -> list[tuple[str, int | None, int, str]]:
    """(file, base offset or None, bytes to plan, broker) for each non-empty commitlog file,
    store after store."""
    extents = []
    for store in from_paths([path]) if isinstance(path, str) else path:
        for file_path in commitlog_files(store.path):
            size = os.path.getsize(file_path)
            if size == 0:
                continue
            name = os.path.basename(file_path)
            base = int(name) if _OFFSET_NAME.match(name) else None
            stop = size
            if max_record and base is not None:
                found = _cached_written_stop(file_path, base, max_record)
                stop = size if found is None else max(found, 1)
            extents.append((file_path, base, stop, store.broker_name))
    return extents


def written_bytes(stores: list[Store], max_record: int = DEFAULT_MAX_RECORD) -> int:
    """The commitlog bytes the stores hold (files' written ends, not their sizes); 0 when a
    file cannot be read."""
    try:
        return sum(extent[2] for extent in file_extents(stores, max_record))
    except OSError:
        return 0


# Planning runs in a Python worker Spark reuses across queries; a file that has not changed
# since (same inode, size and mtime) has the same written end. The binary search over a 1 GiB
# file with a few MiB written costs ~25-60 ms CPU, paid before any task starts.
# A broker writing the file through its mapping need not change the file's mtime, so an entry
# is trusted for STOP_CACHE_SECONDS only: the queries of one report (or one bench run), not
# the next report of a long-lived report service on a live store.
_STOP_CACHE: dict[tuple, tuple[float, int | None]] = {}
STOP_CACHE_SECONDS = 10.0


def _cached_written_stop(path: str, base: int, max_record: int) -> int | None:
    """:func:`written_stop`, remembered per unchanged file for a few seconds."""
    st = os.stat(path)
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns, base, max_record)
    now = time.monotonic()
    found = _STOP_CACHE.get(key)
    if found is None or now - found[0] > STOP_CACHE_SECONDS:
        if len(_STOP_CACHE) > 4096:
            _STOP_CACHE.clear()
        found = _STOP_CACHE[key] = (now, written_stop(path, base, max_record))
    return found[1]


def plan_partitions(
    path: str | list[Store],
    max_partition_bytes: int,
    max_record: int | None = DEFAULT_MAX_RECORD,
    min_partitions: int = 1,
) -> list[CommitLogPartition]:
    """Cut the written bytes of all files, taken end to end in offset order, into equal
    partitions: a multiple of ``min_partitions`` (whole waves over that many cores) with none
    over ``max_partition_bytes`` (driver side). A partition may hold the tail of one file and
    the head of the next.

    Equal shares are what keeps every core busy to the end. Per-file ranges left the bench
    store (a full 1 GiB file and 6 MiB of the next) as 9 tasks of 128 MiB or 3 uneven ones,
    and each task costs a reused Python worker ~0.07 s CPU and ~0.15 s idle between tasks;
    two equal partitions on local[2]: measured in bench/spark_scan.py. Spark's own file
    sources balance the same way (``FilePartition.maxSplitBytes``: total / parallelism).
    Files whose name is not an offset cannot be split and go whole into one partition.
    """
    extents = file_extents(path, max_record)
    total = sum(extent[2] for extent in extents)
    if total == 0:
        # Spark wants at least one partition; an empty one reads nothing.
        return [CommitLogPartition([])]
    # Whole waves: a count that is a multiple of min_partitions (the cores) leaves no core
    # idle in the last wave.
    waves = -(-total // (max(1, max_partition_bytes) * max(1, min_partitions)))
    count = max(1, min_partitions) * max(1, waves)
    share = -(-total // count)
    parts: list[CommitLogPartition] = []
    current: list[FileRange] = []
    room = share
    for file_path, base, stop, broker in extents:
        start = 0
        while start < stop:
            take = stop - start if base is None else min(stop - start, room)
            current.append(FileRange(file_path, base, start, start + take, broker))
            start += take
            room -= take
            if room <= 0:
                parts.append(CommitLogPartition(current))
                current, room = [], share
    if current:
        parts.append(CommitLogPartition(current))
    return parts


def read_partition(
    part: CommitLogPartition,
    schema: StructType,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    fail_fast: bool = False,
    check_crc: bool = False,
) -> Iterator:
    """Yield Arrow record batches for ``part``, its ranges in order (runs in a Spark Python
    worker; also usable without Spark)."""
    names = schema.fieldNames()
    arrow_schema = C.arrow_schema_of(schema)
    fields = C.record_fields_for(names)
    fmt_host = C.host_formatter()
    for rng in part.ranges:
        yield from read_range(
            rng, names, arrow_schema, fields, fmt_host,
            batch_size=batch_size, fail_fast=fail_fast, check_crc=check_crc,
        )


def read_range(
    part: FileRange,
    names: list[str],
    arrow_schema,
    fields: tuple[str, ...],
    fmt_host,
    *,
    batch_size: int,
    fail_fast: bool,
    check_crc: bool,
) -> Iterator:
    """Arrow batches of the records starting in one :class:`FileRange`."""
    file_name = os.path.basename(part.path)
    with open(part.path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        stop = min(part.stop, size)
        base = part.base_offset
        if part.start == 0:
            pos: int | None = 0
        elif base is None:
            pos = None
        else:
            pos = find_record_start(mm, part.start, stop, base)
        while pos is not None:
            if pos >= stop and not _left_to_us(mm, pos, base):
                break
            # Past our range we only decode what the next partition's search will skip.
            scan = scan_columns(
                mm, pos, stop if pos < stop else pos + 1, fields, batch_size, check_crc
            )
            if scan.positions:
                yield C.build_batch(scan, names, arrow_schema, file_name, fmt_host, part.broker)
            if scan.end == "error":
                message = f"{part.path}: {scan.error}"
                if fail_fast:
                    raise RecordError(message, scan.next_pos)
                yield C.error_batch(names, arrow_schema, file_name, scan.next_pos, message,
                                    part.broker)
                if base is None or scan.next_pos + 1 >= stop:
                    break
                # Resume at the next record start in our range (None: the rest is the next
                # partition's, which finds the same start).
                pos = find_record_start(mm, scan.next_pos + 1, stop, base)
            elif scan.end == "stop":
                pos = scan.next_pos
            else:  # blank filler, zero tail or end of file
                break
    finally:
        mm.close()


def default_batch_size(schema: StructType) -> int:
    """Records per Arrow batch when the ``batchSize`` option is not given: 8192, or 16384
    when no column needs the body or the properties (narrow rows)."""
    if _WIDE_FIELDS.intersection(C.record_fields_for(schema.fieldNames())):
        return DEFAULT_BATCH_SIZE
    return NARROW_BATCH_SIZE


def _left_to_us(buf, pos: int, base: int | None) -> bool:
    """Whether a position our walk reached past our range is ours to decode: yes unless it is
    the end of data or a record start the next partition's search will find (a corrupt record
    there would otherwise be reported by nobody)."""
    if base is None or pos + 8 > len(buf):
        return False
    size, magic = peek(buf, pos)
    if magic == BLANK_MAGIC_CODE or (size == 0 and magic == 0):
        return False
    return not is_record_start(buf, pos, base)


class CommitLogReader(DataSourceReader):
    """Plans byte-range partitions and reads them into Arrow batches."""

    def __init__(self, options, schema: StructType) -> None:
        C.validate_schema(schema)
        self.stores = stores_option(options, FORMAT_NAME)
        self.schema = schema
        # Without an _error column a corrupt record could only become a row of nulls: fail.
        self.fail_fast = _bool(options, "failFast", False) or C.ERROR_COLUMN not in schema.names
        self.check_crc = _bool(options, "checkCRC", False)
        self.batch_size = int(options.get("batchSize", default_batch_size(schema)))
        self.max_partition_bytes = int(
            options.get("maxPartitionBytes", DEFAULT_MAX_PARTITION_BYTES)
        )
        self.min_partitions = int(options.get("minPartitions", os.cpu_count() or 1))
        self.max_record = (
            int(options.get("maxRecordBytes", DEFAULT_MAX_RECORD))
            if _bool(options, "trimWrittenEnd", True) else None
        )

    def partitions(self) -> list[CommitLogPartition]:
        """Equal shares of the written bytes (:func:`plan_partitions`)."""
        return plan_partitions(
            self.stores, self.max_partition_bytes, self.max_record, self.min_partitions
        )

    def read(self, partition: CommitLogPartition) -> Iterator:
        """Arrow batches of the records starting in the partition's range."""
        return read_partition(
            partition, self.schema, batch_size=self.batch_size, fail_fast=self.fail_fast,
            check_crc=self.check_crc,
        )


class CommitLogDataSource(DataSource):
    """The ``rocketmq-commitlog`` format (register with ``spark.dataSource.register``)."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return FORMAT_NAME

    def schema(self) -> StructType:
        """All columns, the ``columns`` option's, minus ``body`` when includeBody=false."""
        wanted = self.options.get("columns")
        names = list(C.COLUMN_NAMES) if not wanted else wanted.split(",")
        if not _bool(self.options, "includeBody", True):
            names = [n for n in names if n.strip() != "body"]
        return C.commitlog_schema(names)

    def reader(self, schema: StructType) -> CommitLogReader:
        """A reader decoding only what ``schema`` names."""
        return CommitLogReader(self.options, schema)
