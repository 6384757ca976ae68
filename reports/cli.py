"""``rmq-emu report NAME --store DIR [--store [NAME=]DIR ...] [--master URL] [--out DIR]``.

Several ``--store`` (or a directory holding one store per broker) report over a whole cluster:
every table gains a ``brokerName`` column and, with several brokers, ``(cluster)`` totals
(:mod:`rocketmq_emu.reports.stores`, :mod:`rocketmq_emu.reports.inputs`). ``all`` runs the four
reports in one SparkSession over one commitlog scan. A ``--store`` that is missing or holds no
store (:func:`rocketmq_emu.reports.stores.resolve`) is one ``rmq-emu: error:`` line, exit status
2, before pyspark is imported.

``broker/cli.py`` hooks this in with :func:`add_parser` / :func:`main`;
``python -m rocketmq_emu.reports`` runs it alone (:func:`run_argv`).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import sys
from concurrent.futures import ThreadPoolExecutor

from rocketmq_emu.broker.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL

REPORTS = ("traffic", "delays", "consumers", "retries")  # reports.jobs.REPORTS (light here)
#: What the ``[reports]`` extra installs (setup.cfg); ``report`` checks for them before anything.
EXTRA_PACKAGES = ("pyspark", "pandas", "pyarrow", "numpy", "matplotlib")
INSTALL_HINT = "pip install 'rocketmq-emu[reports]'"
log = logging.getLogger(__name__)


def missing_packages() -> list[str]:
    """The extra's packages that cannot be found (looked up, not imported: no cost)."""
    missing = []
    for name in EXTRA_PACKAGES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the report arguments to ``parser``."""
    parser.add_argument("name", choices=(*REPORTS, "all"), help="which report (or all)")
    parser.add_argument(
        "--store", required=True, action="append", metavar="[NAME=]DIR",
        help="a broker's store root (holds commitlog/); repeat for each broker of a cluster, "
             "or give a directory holding one store per broker; NAME= names the broker when "
             "its store's config/topics.json does not")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--master", default=None, help="Spark master (default local[*])")
    where.add_argument(
        "--remote", default=None, metavar="sc://HOST:PORT",
        help="a Spark Connect server instead of a master (its Python workers need "
             "rocketmq-emu installed, the client pyspark's connect extra)")
    parser.add_argument("--out", default="reports-out", help="output directory")
    parser.add_argument(
        "--delay-levels", default=DEFAULT_MESSAGE_DELAY_LEVEL,
        help="the broker's messageDelayLevel (delays report)",
    )
    parser.set_defaults(func=main)
    return parser


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``report`` subcommand on an ``argparse`` subparsers object."""
    return configure(
        subparsers.add_parser(
            "report", help="Spark batch reports read from the store files",
            description="Spark batch reports read straight from commitlog/consumequeue files.",
        )
    )


def main(args: argparse.Namespace) -> int:
    """Run the report(s) named in ``args``; print where each was written. ``all`` also writes
    ``index.html`` in the output directory, linking the four pages. Without the ``[reports]``
    extra: one line saying what to install, exit status 1."""
    missing = missing_packages()
    if missing:
        print(f"rmq-emu report: needs {', '.join(missing)} (not installed): {INSTALL_HINT}",
              file=sys.stderr)
        return 1
    from rocketmq_emu.reports.stores import StoreError, resolve

    try:
        stores = resolve(args.store)
    except StoreError as exc:
        # Before pyspark is imported: a wrong --store costs no Spark start.
        print(f"rmq-emu: error: {exc}", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    from rocketmq_emu.reports.inputs import Inputs
    from rocketmq_emu.reports.output import write_index, write_report
    from rocketmq_emu.reports.report import Progress
    from rocketmq_emu.reports.session import get_session

    names = REPORTS if args.name == "all" else (args.name,)
    # A session already running in this process (tests, notebooks) is used and left running.
    owned = SparkSession.getActiveSession() is None
    spark = get_session(args.master, remote=args.remote, quick=is_small(stores))
    # After the session: the jobs build Spark columns when imported.
    jobs = [importlib.import_module(f"rocketmq_emu.reports.jobs.{name}") for name in names]
    # ``all``: one scan decoding the columns of every report, kept for all four.
    shared = {c for job in jobs for c in getattr(job, "COLUMNS", ())} if len(jobs) > 1 else None
    inputs = Inputs(spark, stores, shared)
    if len(stores) > 1:
        print("stores: " + ", ".join(f"{s.broker_name}={s.path}" for s in stores))
    written = []

    def compute(name: str, job) -> tuple:
        progress = Progress(name, job.STAGES + 1)
        return progress, job.run(spark, inputs, progress, delay_levels=args.delay_levels)

    try:
        if len(jobs) > 1:
            # The scan first, then the reports side by side: their many small Spark jobs are
            # mostly driver-side planning, which one report alone leaves the cores idle for.
            with Progress("all", 1).stage(f"scan commitlog once ({len(shared)} columns)"):
                inputs.materialize()
            with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
                results = list(pool.map(compute, names, jobs))
        else:
            results = [compute(names[0], jobs[0])]
        # Written one after the other, in order (matplotlib's pyplot is not thread-safe).
        for name, (progress, report) in zip(names, results, strict=True):
            with progress.stage("write Parquet, CSV, PNG and HTML"):
                page = write_report(report, args.out)
            written.append((report, page))
            print(f"{name}: {page}")
        if args.name == "all":
            print(f"all: {write_index(written, args.out)}")
    finally:
        inputs.release()
        if owned:
            spark.stop()
    return 0


def is_small(stores: list) -> bool:
    """Whether the stores' commitlogs hold under ``QUICK_MAX_BYTES`` written bytes (the
    data source's own planning measures them: files' written ends, not their sizes)."""
    from rocketmq_emu.reports.datasource_commitlog import DEFAULT_MAX_RECORD, file_extents
    from rocketmq_emu.reports.session import QUICK_MAX_BYTES

    try:
        written = sum(extent[2] for extent in file_extents(stores, DEFAULT_MAX_RECORD))
    except OSError:
        return False
    return written < QUICK_MAX_BYTES


def run_argv(argv: list[str] | None = None) -> int:
    """Standalone entry point (``python -m rocketmq_emu.reports traffic --store DIR``)."""
    parser = configure(argparse.ArgumentParser(prog="rmq-emu report"))
    return main(parser.parse_args(argv))


#: ``broker/cli.py`` calls ``register(subparsers)`` on each area's CLI module.
register = add_parser
