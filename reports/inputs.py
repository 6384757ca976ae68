"""What the report jobs read: a cluster's stores, their commitlogs scanned once, their consume
queues, and the helpers that give every table a ``brokerName`` column and cluster totals.

``report all`` builds one :class:`Inputs` for the four reports with the union of the columns
they need (each job's ``COLUMNS``): the commitlog is decoded once, kept (``MEMORY_AND_DISK``)
and each job selects its columns from it, instead of four scans.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from rocketmq_emu.reports.columns import ERROR_COLUMN
from rocketmq_emu.reports.datasource_commitlog import FORMAT_NAME as COMMITLOG
from rocketmq_emu.reports.datasource_commitlog import written_bytes
from rocketmq_emu.reports.datasource_consumequeue import FORMAT_NAME as CONSUMEQUEUE
from rocketmq_emu.reports.jobs.common import to_pandas
from rocketmq_emu.reports.session import default_parallelism
from rocketmq_emu.reports.stores import Store, encode, from_paths

#: A scan of fewer written commitlog bytes is one partition. Decoding 64 MiB takes a core well
#: under a second, while each more partition costs a Python worker: about 3 s of CPU to start
#: on a cold session here (pyspark, pandas and pyarrow imported), 0.07 s on a warm one.
SINGLE_PARTITION_BYTES = 64 * 1024 * 1024
#: The ``brokerName`` of the rows that total the whole cluster (present with several brokers).
CLUSTER = "(cluster)"
BROKER = "brokerName"


class Inputs:
    """The stores of one report run; ``columns`` (None: each call's own) is what the shared
    commitlog scan decodes."""

    def __init__(self, spark: SparkSession, stores: list[Store],
                 columns: Iterable[str] | None = None) -> None:
        self.spark = spark
        self.stores = stores
        self.columns = sorted(set(columns) | {BROKER}) if columns is not None else None
        self._commitlog: DataFrame | None = None
        self._errors: pd.DataFrame | None = None
        self._lock = threading.Lock()
        self._errors_lock = threading.Lock()
        self._partitions: int | None = None
        self._kept: list[DataFrame] = []  # every scan kept for a job (released at the end)

    @classmethod
    def of(cls, spark: SparkSession, source: Inputs | str | list[Store]) -> Inputs:
        """``source`` as Inputs (a store path or a list of stores for one report)."""
        if isinstance(source, Inputs):
            return source
        stores = from_paths([source]) if isinstance(source, str) else source
        return cls(spark, stores)

    @property
    def description(self) -> str:
        """The stores, for the report pages (``name=path``, comma separated)."""
        if len(self.stores) == 1:
            return self.stores[0].path
        return ", ".join(f"{s.broker_name}={s.path}" for s in self.stores)

    @property
    def several(self) -> bool:
        """Whether there is more than one broker (cluster rows are added)."""
        return len({s.broker_name for s in self.stores}) > 1

    def partitions(self) -> int:
        """How many partitions a scan of these stores gets: one for a small store
        (:data:`SINGLE_PARTITION_BYTES`), else one per core of the session."""
        if self._partitions is None:
            small = written_bytes(self.stores) < SINGLE_PARTITION_BYTES
            self._partitions = 1 if small else default_parallelism(self.spark)
        return self._partitions

    def _read(self, columns: Sequence[str]) -> DataFrame:
        return (
            self.spark.read.format(COMMITLOG)
            .option("stores", encode(self.stores))
            .option("columns", ",".join(columns))
            .option("minPartitions", str(self.partitions()))
            .load()
        )

    def commitlog(self, columns: Sequence[str]) -> DataFrame:
        """The commitlog rows with ``columns``, ``brokerName`` and ``_error``: from the shared
        scan when there is one (kept after the first use), else a scan of just these, kept."""
        wanted = [*dict.fromkeys([BROKER, *columns]), ERROR_COLUMN]
        if self.columns is None:
            kept = self._read(wanted[:-1]).persist(StorageLevel.MEMORY_AND_DISK)
            self._kept.append(kept)
            return kept
        return self.shared().select(*wanted)

    def shared(self) -> DataFrame:
        """The shared scan (made on the first call, from any thread; kept)."""
        with self._lock:
            if self._commitlog is None:
                self._commitlog = self._read(self.columns or []).persist(
                    StorageLevel.MEMORY_AND_DISK)
            return self._commitlog

    def errors(self, bad: DataFrame) -> pd.DataFrame:
        """The corrupt-record rows (``bad``: a job's rows with ``_error`` set) as pandas; with a
        shared scan, those of the shared scan, collected once for every report."""
        if self.columns is None:
            return to_pandas(bad)
        with self._errors_lock:  # not the scan's lock: the other reports go on meanwhile
            if self._errors is None:
                self._errors = to_pandas(self.shared().where(
                    F.col(ERROR_COLUMN).isNotNull()).select(BROKER, ERROR_COLUMN))
            return self._errors

    def materialize(self) -> None:
        """Decode the shared scan now (before reports run side by side), in the job that
        collects its corrupt-record rows (:meth:`errors`): a query over a kept DataFrame
        fills the whole of it."""
        self.errors(self.shared().where(F.col(ERROR_COLUMN).isNotNull()))

    def consume_queues(self) -> DataFrame:
        """The consume-queue units of every store (with ``brokerName``)."""
        return (
            self.spark.read.format(CONSUMEQUEUE)
            .option("stores", encode(self.stores))
            .option("minPartitions", str(self.partitions()))
            .load()
        )

    def release(self, df: DataFrame | None = None) -> None:
        """Drop a job's own kept scan (``df``), or every scan kept (no argument: the end of a
        run, also after a report failed, which a long-lived session must not keep)."""
        if df is not None:
            if self.columns is None:
                df.unpersist()
            return
        for kept in self._kept:
            kept.unpersist()
        self._kept.clear()
        if self._commitlog is not None:
            self._commitlog.unpersist()
            self._commitlog = None


def by_broker(df: DataFrame, keys: Sequence[str | Column], aggs: Sequence[Column],
              several: bool) -> DataFrame:
    """``aggs`` per ``brokerName`` and ``keys``; with several brokers also over the whole
    cluster, as rows whose ``brokerName`` is :data:`CLUSTER` (percentiles and distinct counts
    are computed over the cluster's rows, not summed)."""
    per_broker = df.groupBy(BROKER, *keys).agg(*aggs)
    if not several:
        return per_broker
    total = df.groupBy(*keys).agg(*aggs).withColumn(BROKER, F.lit(CLUSTER))
    return per_broker.unionByName(total.select(*per_broker.columns))


def pandas_by_broker(frame: pd.DataFrame, keys: list[str], aggs: dict, several: bool,
                     ) -> pd.DataFrame:
    """:func:`by_broker` for a pandas frame (``aggs``: ``DataFrame.agg`` named aggregations)."""
    per_broker = frame.groupby([BROKER, *keys], as_index=False, dropna=False).agg(**aggs)
    if not several or frame.empty:
        return per_broker
    total = frame.groupby(keys, as_index=False, dropna=False).agg(**aggs)
    total.insert(0, BROKER, CLUSTER)
    return pd.concat([per_broker, total[per_broker.columns]], ignore_index=True)


def totals(frame: pd.DataFrame, several: bool) -> pd.DataFrame:
    """The cluster's rows of a table (all of them with one broker), without ``brokerName``:
    what charts and summary lines show."""
    rows = frame[frame[BROKER] == CLUSTER] if several else frame
    return rows.drop(columns=[BROKER]).reset_index(drop=True)
