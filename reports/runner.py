"""Running reports in a SparkSession that is already there: what ``rmq-emu report`` does in its
own process (:mod:`rocketmq_emu.reports.cli`) and what the report service does for each request
(:mod:`rocketmq_emu.reports.service`), one code path for both.

``all`` runs the four reports over one commitlog scan: the scan first, then the reports side by
side (their many small Spark jobs are mostly driver-side planning, which one report alone
leaves the cores idle for), then the pages written one after the other.
"""

from __future__ import annotations

import importlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TextIO

from pyspark.sql import SparkSession

from rocketmq_emu.reports.inputs import Inputs
from rocketmq_emu.reports.output import write_index, write_report
from rocketmq_emu.reports.report import Progress
from rocketmq_emu.reports.stores import Store

#: reports.jobs' modules, in the order ``all`` writes them.
REPORTS = ("traffic", "delays", "consumers", "retries")


def run_reports(spark: SparkSession, stores: list[Store], name: str, out: str,
                delay_levels: str, stream: TextIO | None = None) -> list[tuple[str, str]]:
    """Run report ``name`` (or ``all``) over ``stores`` and write it under ``out``; progress
    lines go to ``stream`` (stderr when None). Returns ``(report name, page path)`` for each
    page written, in order, ``("all", index.html)`` last for ``all``."""
    names = REPORTS if name == "all" else (name,)
    # Imported after the session is up: the jobs build Spark columns when imported.
    jobs = [importlib.import_module(f"rocketmq_emu.reports.jobs.{n}") for n in names]
    # ``all``: one scan decoding the columns of every report, kept for all four.
    shared = {c for job in jobs for c in getattr(job, "COLUMNS", ())} if len(jobs) > 1 else None
    inputs = Inputs(spark, stores, shared)

    # pyplot is not thread-safe: the pages are written one at a time, each as soon as its
    # report is computed, while the other reports' Spark jobs go on.
    write_lock = threading.Lock()

    def compute_and_write(report_name: str, job) -> tuple:
        progress = Progress(report_name, job.STAGES + 1, stream)
        report = job.run(spark, inputs, progress, delay_levels=delay_levels)
        with write_lock, progress.stage("write Parquet, CSV, PNG and HTML"):
            return report, write_report(report, out)

    written: list[tuple[str, str]] = []
    try:
        if len(jobs) > 1:
            # The scan first, alone: the consume-queue scan beside it would start a second
            # Python worker at once (+170 MB at the peak of a cold run, 1.08 against 0.95 GB).
            with Progress("all", 1, stream).stage(
                    f"scan commitlog once ({len(shared)} columns)"):
                inputs.materialize()
            with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
                pages = list(pool.map(compute_and_write, names, jobs))
        else:
            pages = [compute_and_write(names[0], jobs[0])]
        written = [(report_name, page) for report_name, (_, page) in zip(names, pages,
                                                                          strict=True)]
        if name == "all":
            written.append(("all", write_index(pages, out)))
    finally:
        inputs.release()
    return written
