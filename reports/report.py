"""What a report job produces, progress lines while it runs, and writing it all out.

A job returns a :class:`Report` (small pandas tables, charts, summary lines);
:func:`write_report` writes every table as Parquet and CSV, the charts as PNG and a one-page
``index.html`` embedding them (:mod:`rocketmq_emu.reports.html`); :func:`write_index` a top-level
``index.html`` linking several reports' pages.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

import pandas as pd

log = logging.getLogger(__name__)


@dataclass
class Chart:
    """A PNG chart: its file name, caption and a function drawing it on a matplotlib Axes."""

    file_name: str
    caption: str
    draw: Callable


@dataclass
class Report:
    """A finished report: tables by name (in display order), charts and summary lines."""

    name: str
    title: str
    store: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    charts: list[Chart] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Progress:
    """Prints one line per stage (``[traffic 2/5] per topic per minute ... 0.84 s``)."""

    def __init__(self, name: str, stages: int, stream: TextIO | None = None) -> None:
        self.name = name
        self.stages = stages
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr

    @contextmanager
    def stage(self, label: str) -> Iterator[None]:
        """Time one stage and print its line when it ends."""
        self.done += 1
        start = time.perf_counter()
        print(f"[{self.name} {self.done}/{self.stages}] {label} ...", file=self.stream, flush=True)
        yield
        elapsed = time.perf_counter() - start
        print(
            f"[{self.name} {self.done}/{self.stages}] {label} done in {elapsed:.2f} s",
            file=self.stream, flush=True,
        )


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """Make columns Parquet/CSV friendly (lists and dicts as text)."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object and any(isinstance(v, list | dict) for v in out[col]):
            out[col] = out[col].map(lambda v: None if v is None else str(v))
    return out


def write_report(report: Report, out_dir: str) -> str:
    """Write tables (Parquet + CSV), charts (PNG) and index.html under ``out_dir/<name>``;
    return the HTML path."""
    from rocketmq_emu.reports import charts, html

    target = os.path.join(out_dir, report.name)
    os.makedirs(target, exist_ok=True)
    for table_name, df in report.tables.items():
        plain = _plain(df)
        plain.to_parquet(os.path.join(target, f"{table_name}.parquet"), index=False)
        plain.to_csv(os.path.join(target, f"{table_name}.csv"), index=False)
    images = {}
    for chart in report.charts:
        path = os.path.join(target, chart.file_name)
        charts.render(chart, path)
        images[chart.file_name] = path
    page = os.path.join(target, "index.html")
    with open(page, "w", encoding="utf-8") as fh:
        fh.write(html.render(report, images))
    log.info("report %s written to %s", report.name, target)
    return page


def write_index(pages: list[tuple[Report, str]], out_dir: str) -> str:
    """Write ``out_dir/index.html`` linking each ``(report, page path)`` written by
    :func:`write_report`; return its path."""
    from rocketmq_emu.reports import html

    os.makedirs(out_dir, exist_ok=True)
    # Relative links, so the output directory can be moved or served as it is.
    links = [(report, os.path.relpath(page, out_dir).replace(os.sep, "/")) for report, page in pages]
    index = os.path.join(out_dir, "index.html")
    with open(index, "w", encoding="utf-8") as fh:
        fh.write(html.render_index(links))
    return index
