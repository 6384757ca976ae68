"""Helpers shared by the report jobs."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rocketmq_emu.reports.columns import ERROR_COLUMN


def split_errors(df: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(good rows, corrupt-record rows)."""
    return df.where(F.col(ERROR_COLUMN).isNull()), df.where(F.col(ERROR_COLUMN).isNotNull())


def store_ms(col: str = "storeTimestamp"):
    """A timestamp column as epoch milliseconds."""
    return F.unix_millis(F.col(col))


def to_pandas(df: DataFrame) -> pd.DataFrame:
    """Collect a (small, aggregated) result. A Spark Connect result carries the query's
    metrics in ``attrs``, which Parquet output cannot encode: they are dropped."""
    frame = df.toPandas()
    frame.attrs.clear()
    return frame


def error_notes(errors: pd.DataFrame) -> list[str]:
    """Summary lines naming corrupt records (file and offset are in the message)."""
    if errors.empty:
        return []
    lines = [f"{len(errors)} corrupt record(s) skipped:"]
    lines += [str(m) for m in errors[ERROR_COLUMN].head(20)]
    return lines
