"""PNG charts with matplotlib's Agg canvas (no display, no pyplot: a figure per chart, so pages
can be drawn while other reports still run).

Every axis says its unit. Counts get whole-number ticks, and a series that is all zero is drawn
from 0 to 1 rather than matplotlib's ±0.055. Byte axes are scaled to B, KiB, MiB or GiB. A time
axis fits the data's span: :func:`time_bucket` picks the bucket (a second up to a day) that gives
at most :data:`MAX_BUCKETS` points, the axis runs from the first bucket to the last, and data in
one or two buckets is drawn as bars, not as dots on an axis matplotlib would stretch to years.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pandas as pd

from rocketmq_emu.reports.report import Chart

#: A time chart's most points per series (:func:`time_bucket`).
MAX_BUCKETS = 60
#: Bucket sizes a time chart may use, in seconds, with their names.
BUCKETS = (
    (1, "second"), (5, "5 s"), (10, "10 s"), (30, "30 s"), (60, "minute"), (300, "5 min"),
    (600, "10 min"), (1800, "30 min"), (3600, "hour"), (3 * 3600, "3 h"), (6 * 3600, "6 h"),
    (12 * 3600, "12 h"), (86400, "day"), (7 * 86400, "week"),
)
_BYTE_UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "bytes"))
WIDTH, HEIGHT, DPI = 8, 4, 90  # 720 x 360 pixels, the size the pages show them at


def time_bucket(span_ms: float) -> tuple[int, str]:
    """(seconds, name) of the smallest bucket that cuts ``span_ms`` into at most
    :data:`MAX_BUCKETS` buckets (a week for anything longer than 60 weeks)."""
    for seconds, name in BUCKETS:
        if span_ms / 1000 / seconds < MAX_BUCKETS:
            return seconds, name
    return BUCKETS[-1]


def render(chart: Chart, path: str) -> None:
    """Draw ``chart`` into a PNG file at ``path``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH, HEIGHT), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    chart.draw(ax)
    ax.set_title(chart.caption, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, format="png")


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


def byte_scale(values: pd.DataFrame | pd.Series) -> tuple[int, str]:
    """(divisor, unit) that shows the largest of ``values`` as 1 to 1023 of a unit."""
    frame = values.to_frame() if isinstance(values, pd.Series) else values
    nums = frame.apply(pd.to_numeric, errors="coerce").stack().dropna()
    top = float(nums.abs().max()) if not nums.empty else 0.0
    for divisor, unit in _BYTE_UNITS:
        if top >= divisor:
            return divisor, unit
    return 1, "bytes"


def _no_data(ax: Any) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center")
    ax.set_xticks([])
    ax.set_yticks([])


def bars(df: pd.DataFrame, label: str, values: list[str], ylabel: str = "",
         xlabel: str = "", byte_values: bool = False) -> Callable[[Any], None]:
    """A drawing function: grouped bars of ``values`` per ``label`` row. ``ylabel`` is the
    unit of the values (``byte_values``: bytes, scaled to KiB/MiB/GiB as they need)."""

    def draw(ax) -> None:
        if df.empty:
            _no_data(ax)
            return
        shown = df[values].apply(pd.to_numeric, errors="coerce").astype("float64").fillna(0)
        unit = ylabel
        if byte_values:
            divisor, unit = byte_scale(shown)
            shown = shown / divisor
        width = 0.8 / len(values)
        xs = range(len(df))
        for i, col in enumerate(values):
            ax.bar([x + i * width for x in xs], shown[col], width=width, label=col)
        ax.set_xticks([x + width * (len(values) - 1) / 2 for x in xs])
        ax.set_xticklabels([str(v) for v in df[label]], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(unit)
        ax.set_xlabel(xlabel or label)
        if not byte_values or unit == "bytes":
            count_axis(ax, df[values])
        else:
            ax.set_ylim(bottom=0)
        if len(values) > 1:
            _legend_above_bars(ax, shown, len(values))

    return draw


def _legend_above_bars(ax: Any, shown: pd.DataFrame, entries: int) -> None:
    """A legend in a row over the bars: the y axis gets headroom so no bar hides behind it."""
    top = float(shown.to_numpy().max()) if shown.size else 0.0
    if top > 0:
        ax.set_ylim(0, top * 1.25)
    ax.legend(fontsize=8, loc="upper center", ncol=min(entries, 4), frameon=False)


def timeline(df: pd.DataFrame, time_col: str, value: str, series: str, bucket_seconds: int,
             bucket_name: str, what: str = "messages") -> Callable[[Any], None]:
    """A drawing function: ``value`` per bucket of ``bucket_seconds`` over ``time_col``
    (bucket starts, UTC), one line per ``series`` value; bars when the data spans one or two
    buckets. The x axis runs over the data's buckets only."""

    def draw(ax) -> None:
        if df.empty:
            _no_data(ax)
            return
        ylabel = f"{what} per {bucket_name}"
        starts = sorted(pd.to_datetime(df[time_col]).unique())
        if len(starts) <= 2:
            wide = df.pivot_table(index=series, columns=time_col, values=value,
                                  aggfunc="sum", fill_value=0, sort=True)
            wide.columns = [_bucket_label(pd.Timestamp(c), bucket_seconds)
                            for c in wide.columns]
            bars(wide.reset_index(), series, list(wide.columns), ylabel, xlabel=series)(ax)
            if len(wide.columns) == 1:
                _legend_above_bars(ax, wide, 1)
            return
        import matplotlib.dates as mdates

        # A bucket without a message is a count of 0, not a gap a line would bridge.
        every = pd.date_range(starts[0], starts[-1], freq=pd.Timedelta(seconds=bucket_seconds))
        for name, part in df.groupby(series, sort=True):
            counts = (part.assign(**{time_col: pd.to_datetime(part[time_col])})
                      .groupby(time_col)[value].sum().reindex(every, fill_value=0))
            ax.plot(counts.index, counts.to_numpy(), marker=".", label=str(name))
        half = pd.Timedelta(seconds=bucket_seconds) / 2
        ax.set_xlim(starts[0] - half, starts[-1] + half)
        locator = mdates.AutoDateLocator(minticks=3, maxticks=8)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.set_xlabel(f"store time (UTC), one point per {bucket_name}")
        ax.set_ylabel(ylabel)
        count_axis(ax, df[value])
        ax.legend(fontsize=7)
        for tick in ax.get_xticklabels():
            tick.set_fontsize(8)

    return draw


def _bucket_label(start: pd.Timestamp, seconds: int) -> str:
    """``2026-11-28 20:38:00–20:39:00 UTC`` (the day once; seconds only when the bucket has
    them)."""
    end = start + dt.timedelta(seconds=seconds)
    fmt = "%H:%M:%S" if seconds % 60 else "%H:%M"
    if seconds >= 86400:
        return f"{start:%Y-%m-%d} – {end:%Y-%m-%d} UTC"
    return f"{start:%Y-%m-%d} {start.strftime(fmt)}–{end.strftime(fmt)} UTC"


def lines(df: pd.DataFrame, x: str, y: str, series: str, ylabel: str = "",
          xlabel: str = "") -> Callable[[Any], None]:
    """A drawing function: one line of ``y`` over ``x`` per value of ``series`` (not time: see
    :func:`timeline`)."""

    def draw(ax) -> None:
        if df.empty:
            _no_data(ax)
            return
        for name, part in df.sort_values(x).groupby(series, sort=True):
            ax.plot(part[x], part[y], marker=".", label=str(name))
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel or x)
        count_axis(ax, df[y])
        ax.legend(fontsize=7)

    return draw


def grouped_bars(df: pd.DataFrame, label: str, series: str, value: str, ylabel: str = "",
                 xlabel: str = "") -> Callable[[Any], None]:
    """A drawing function: per ``label``, one bar of ``value`` for each ``series`` value (the
    brokers of a topic side by side)."""
    if df.empty:
        return bars(df, label, [value], ylabel, xlabel)
    wide = df.pivot_table(index=label, columns=series, values=value, aggfunc="sum",
                          sort=True).reset_index()
    wide.columns = [str(c) for c in wide.columns]
    return bars(wide, label, [str(c) for c in sorted(df[series].unique())], ylabel, xlabel)
