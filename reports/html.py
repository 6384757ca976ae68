"""The one-page HTML summary of a report (summary lines, embedded PNG charts, the tables' first
rows), and the index page linking several reports (``rmq-emu report all``)."""

from __future__ import annotations

import base64
import datetime as dt
import html as _html

from rocketmq_emu.reports.report import Report

MAX_ROWS = 50
_STYLE = """
body{font-family:sans-serif;margin:2em;max-width:1100px}
table{border-collapse:collapse;font-size:12px;margin-bottom:1.5em}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#eee} img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
.note{color:#666;font-size:12px}
figure{display:inline-block;margin:0 1em 1em 0;vertical-align:top}
figcaption{font-size:12px;color:#444}
.thumbs figure{width:360px} .thumbs img{width:360px}
"""


def _csv_link(table: str, prefix: str = "") -> str:
    """The link to the CSV a chart is drawn from (nothing when it names none)."""
    if not table:
        return ""
    esc = _html.escape
    return f" &middot; data: <a href='{esc(prefix + table)}.csv'>{esc(table)}.csv</a>"


def render(report: Report, images: dict[str, str]) -> str:
    """The page for ``report``; ``images`` maps chart file names to PNG paths to embed."""
    esc = _html.escape
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{esc(report.title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{esc(report.title)}</h1>",
        f"<p class='note'>store {esc(report.store)} &middot; generated {now}</p>",
    ]
    if report.description:
        parts.append(f"<p>{esc(report.description)}</p>")
    if report.summary:
        parts.append("<ul>" + "".join(f"<li>{esc(s)}</li>" for s in report.summary) + "</ul>")
    for chart in report.charts:
        with open(images[chart.file_name], "rb") as fh:
            data = base64.b64encode(fh.read()).decode("ascii")
        parts.append(
            f"<figure><img alt='{esc(chart.caption)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{esc(chart.caption)}{_csv_link(chart.table)}</figcaption></figure>")
    for name, df in report.tables.items():
        shown = df.head(MAX_ROWS)
        more = f" (first {MAX_ROWS} of {len(df)} rows)" if len(df) > MAX_ROWS else ""
        parts.append(
            f"<h2>{esc(name)}</h2><p class='note'>{len(df)} rows{more}; "
            f"<a href='{esc(name)}.csv'>CSV</a> &middot; <a href='{esc(name)}.parquet'>Parquet</a></p>"
        )
        parts.append(shown.to_html(index=False, border=0, na_rep=""))
    for note in report.notes:
        parts.append(f"<p class='note'>{esc(note)}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def render_index(pages: list[tuple[Report, str]]) -> str:
    """The index page: for each ``(report, link)`` (a URL relative to the page), its title linked
    to its page, the sentence saying what it shows, its summary lines and its charts, each with
    a link to the CSV it is drawn from."""
    esc = _html.escape
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    stores = sorted({report.store for report, _ in pages})
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>rmq-emu reports</title><style>{_STYLE}</style></head><body>",
        "<h1>rmq-emu reports</h1>",
        f"<p class='note'>store {esc(', '.join(stores))} &middot; generated {now}</p>",
    ]
    for report, link in pages:
        parts.append(f"<h2><a href='{esc(link)}'>{esc(report.title)}</a></h2>")
        if report.description:
            parts.append(f"<p>{esc(report.description)}</p>")
        if report.summary:
            parts.append("<ul>" + "".join(f"<li>{esc(s)}</li>" for s in report.summary) + "</ul>")
        folder = link.rsplit("/", 1)[0] + "/" if "/" in link else ""
        if report.charts:
            parts.append("<div class='thumbs'>" + "".join(
                f"<figure><a href='{esc(folder + chart.file_name)}'><img "
                f"alt='{esc(chart.caption)}' src='{esc(folder + chart.file_name)}'></a>"
                f"<figcaption>{esc(chart.caption)}{_csv_link(chart.table, folder)}"
                "</figcaption></figure>" for chart in report.charts) + "</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
