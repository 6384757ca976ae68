"""Helpers shared by the report jobs."""

from __future__ import annotations

from collections.abc import Sequence

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


def to_pandas(df: DataFrame, order: Sequence[str] = (), nulls_last: Sequence[str] = (),
              ) -> pd.DataFrame:
    """Collect a (small, aggregated) result, sorted by ``order`` here rather than in Spark.

    A Spark ``orderBy`` before a collect costs a sampling job (its range partitioner) and a
    sort stage: about 3x the query of a small aggregation on a warm session (0.25 against
    0.08 s measured here). ``-name`` sorts descending; nulls sort first ascending and last
    descending, as Spark's ``asc``/``desc``, except the columns in ``nulls_last``. A Spark
    Connect result carries the query's metrics in ``attrs``, which Parquet output cannot
    encode: they are dropped."""
    frame = df.toPandas()
    frame.attrs.clear()
    return sort_frame(frame, order, nulls_last)


def sort_frame(frame: pd.DataFrame, order: Sequence[str] = (),
               nulls_last: Sequence[str] = ()) -> pd.DataFrame:
    """``frame`` sorted as Spark's ``orderBy`` would (see :func:`to_pandas` for ``order``)."""
    if not order or frame.empty:
        return frame
    # One stable sort per key, least significant first: each key its own null placement.
    for key in reversed(order):
        name = key.lstrip("-")
        descending = key.startswith("-")
        last = descending or name in nulls_last
        frame = frame.sort_values(name, ascending=not descending, kind="stable",
                                  na_position="last" if last else "first")
    return frame.reset_index(drop=True)


def error_notes(errors: pd.DataFrame) -> list[str]:
    """Summary lines naming corrupt records (file and offset are in the message)."""
    if errors.empty:
        return []
    lines = [f"{len(errors)} corrupt record(s) skipped:"]
    lines += [str(m) for m in errors[ERROR_COLUMN].head(20)]
    return lines
