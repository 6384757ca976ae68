"""What a report job produces and progress lines while it runs.

A job returns a :class:`Report` (small pandas tables, charts, summary lines);
:mod:`rocketmq_emu.reports.output` writes it out.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

import pandas as pd


@dataclass
class Chart:
    """A PNG chart: its file name, caption, a function drawing it on a matplotlib Axes, and
    the table (its CSV) the chart is drawn from."""

    file_name: str
    caption: str
    draw: Callable
    table: str = ""


@dataclass
class Report:
    """A finished report: tables by name (in display order), charts and summary lines;
    ``description`` says in one sentence what the report shows (the index page's)."""

    name: str
    title: str
    store: str
    description: str = ""
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
