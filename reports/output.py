"""Writing a finished report out: :func:`write_report` writes every table as Parquet and CSV, the
charts as PNG (:mod:`rocketmq_emu.reports.charts`) and a one-page ``index.html`` embedding them
(:mod:`rocketmq_emu.reports.html`); :func:`write_index` a top-level ``index.html`` linking several
reports' pages.
"""

from __future__ import annotations

import logging
import os

import pandas as pd

from rocketmq_emu.reports import charts, html
from rocketmq_emu.reports.report import Report

log = logging.getLogger(__name__)


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
    os.makedirs(out_dir, exist_ok=True)
    # Relative links, so the output directory can be moved or served as it is.
    links = [(report, os.path.relpath(page, out_dir).replace(os.sep, "/")) for report, page in pages]
    index = os.path.join(out_dir, "index.html")
    with open(index, "w", encoding="utf-8") as fh:
        fh.write(html.render_index(links))
    return index
