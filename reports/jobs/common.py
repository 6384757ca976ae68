"""Helpers shared by the report jobs."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rocketmq_emu.reports.columns import ERROR_COLUMN
from rocketmq_emu.reports.datasource_commitlog import FORMAT_NAME as COMMITLOG
from rocketmq_emu.reports.datasource_consumequeue import FORMAT_NAME as CONSUMEQUEUE


def commitlog(spark: SparkSession, store: str, columns: list[str]) -> DataFrame:
    """The commitlog rows of ``store`` with only ``columns`` decoded (plus ``_error``), in
    equal partitions, a whole number of waves over the session's cores."""
    return (
        spark.read.format(COMMITLOG)
        .option("columns", ",".join(columns))
        .option("minPartitions", str(spark.sparkContext.defaultParallelism))
        .load(store)
    )


def consume_queues(spark: SparkSession, store: str) -> DataFrame:
    """The consume-queue units of ``store``."""
    return spark.read.format(CONSUMEQUEUE).load(store)


def split_errors(df: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(good rows, corrupt-record rows)."""
    return df.where(F.col(ERROR_COLUMN).isNull()), df.where(F.col(ERROR_COLUMN).isNotNull())


def store_ms(col: str = "storeTimestamp"):
    """A timestamp column as epoch milliseconds."""
    return F.unix_millis(F.col(col))


def to_pandas(df: DataFrame) -> pd.DataFrame:
    """Collect a (small, aggregated) result."""
    return df.toPandas()


def error_notes(errors: pd.DataFrame) -> list[str]:
    """Summary lines naming corrupt records (file and offset are in the message)."""
    if errors.empty:
        return []
    lines = [f"{len(errors)} corrupt record(s) skipped:"]
    lines += [str(m) for m in errors[ERROR_COLUMN].head(20)]
    return lines
