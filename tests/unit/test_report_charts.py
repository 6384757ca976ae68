"""The report charts' count axes, read back from the matplotlib Axes (no Spark, no PNG)."""

from __future__ import annotations

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

from rocketmq_emu.reports import charts  # noqa: E402


def _drawn(draw) -> tuple[tuple[float, float], list[float]]:
    """Draw on a fresh Axes; its y limits and the y ticks shown within them."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        draw(ax)
        fig.canvas.draw()
        low, high = ax.get_ylim()
        return (low, high), [t for t in ax.get_yticks() if low <= t <= high]
    finally:
        plt.close(fig)


def _bars(*counts: int):
    df = pd.DataFrame({"group": [f"g{i}" for i in range(len(counts))], "lag": list(counts)})
    return charts.bars(df, "group", ["lag"], "messages")


def _lines(*counts: int):
    df = pd.DataFrame({"minute": range(len(counts)), "messages": list(counts),
                       "topic": ["T"] * len(counts)})
    return charts.lines(df, "minute", "messages", "topic", "messages")


@pytest.mark.parametrize("draw", [_bars(1, 2), _lines(1, 3, 2), _bars(3), _lines(0, 1)])
def test_count_axis_ticks_are_whole_numbers(draw):
    """Small counts get ticks 0, 1, 2, ... (never 0.25 or 1.5), from 0."""
    (low, _), ticks = _drawn(draw)
    assert low == 0 and len(ticks) >= 2
    assert all(float(t).is_integer() for t in ticks), ticks


@pytest.mark.parametrize("draw", [_bars(0, 0), _lines(0, 0, 0)])
def test_all_zero_series_is_drawn_from_0_to_1(draw):
    """A series of zeros gets y from 0 to 1 with ticks 0 and 1, not ±0.055 around zero."""
    limits, ticks = _drawn(draw)
    assert limits == (0, 1) and list(ticks) == [0, 1]


def test_missing_values_count_as_zero():
    """Bars whose values are all missing (pandas NA) get the all-zero axis too."""
    df = pd.DataFrame({"kind": ["level 1"], "p50Ms": pd.array([None], dtype="Int64")})
    limits, _ = _drawn(charts.bars(df, "kind", ["p50Ms"], "ms"))
    assert limits == (0, 1)
