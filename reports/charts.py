"""PNG charts with matplotlib's Agg backend (no display needed).

Every chart's y axis is a count (messages, bytes, offsets, milliseconds): whole-number ticks
only, and a series that is all zero is drawn from 0 to 1 rather than matplotlib's ±0.055.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from rocketmq_emu.reports.report import Chart


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, imported at the first chart drawn (~30 MB that
    the Spark part of a report run does without)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def render(chart: Chart, path: str) -> None:
    """Draw ``chart`` into a PNG file at ``path``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4), dpi=90)
    try:
        chart.draw(ax)
        ax.set_title(chart.caption, fontsize=10)
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)


def count_axis(ax: Any, values: pd.DataFrame | pd.Series) -> None:
    """Make ``ax``'s y axis fit the counts ``values``: integer ticks, starting at 0 when nothing
    is negative, and 0..1 when every value is zero (or missing)."""
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    frame = values.to_frame() if isinstance(values, pd.Series) else values
    nums = frame.apply(pd.to_numeric, errors="coerce").stack().dropna()
    if nums.empty or (nums == 0).all():
        ax.set_ylim(0, 1)
    elif nums.min() >= 0:
        # A count axis starting above 0 (a line of 1..3 drawn from 0.9) exaggerates changes.
        ax.set_ylim(bottom=0)


def bars(df: pd.DataFrame, label: str, values: list[str], ylabel: str = "") -> Callable[[Any], None]:
    """A drawing function: grouped bars of ``values`` per ``label`` row."""

    def draw(ax) -> None:
        if df.empty:
            ax.text(0.5, 0.5, "no data", ha="center", va="center")
            return
        width = 0.8 / len(values)
        xs = range(len(df))
        for i, col in enumerate(values):
            ax.bar([x + i * width for x in xs], df[col].fillna(0), width=width, label=col)
        ax.set_xticks([x + width * (len(values) - 1) / 2 for x in xs])
        ax.set_xticklabels([str(v) for v in df[label]], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(ylabel)
        count_axis(ax, df[values])
        if len(values) > 1:
            ax.legend(fontsize=8)

    return draw


def lines(df: pd.DataFrame, x: str, y: str, series: str, ylabel: str = "") -> Callable[[Any], None]:
    """A drawing function: one line of ``y`` over ``x`` per value of ``series``."""

    def draw(ax) -> None:
        if df.empty:
            ax.text(0.5, 0.5, "no data", ha="center", va="center")
            return
        for name, part in df.sort_values(x).groupby(series, sort=True):
            ax.plot(part[x], part[y], marker=".", label=str(name))
        ax.set_ylabel(ylabel)
        count_axis(ax, df[y])
        ax.legend(fontsize=7)
        for tick in ax.get_xticklabels():
            tick.set_rotation(30)
            tick.set_fontsize(8)

    return draw


def grouped_bars(df: pd.DataFrame, label: str, series: str, value: str, ylabel: str = "",
                 ) -> Callable[[Any], None]:
    """A drawing function: per ``label``, one bar of ``value`` for each ``series`` value (the
    brokers of a topic side by side)."""
    if df.empty:
        return bars(df, label, [value], ylabel)
    wide = df.pivot_table(index=label, columns=series, values=value, aggfunc="sum",
                          sort=True).reset_index()
    wide.columns = [str(c) for c in wide.columns]
    return bars(wide, label, [str(c) for c in sorted(df[series].unique())], ylabel)
