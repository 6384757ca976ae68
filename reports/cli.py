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
import importlib.util
import logging
import os
import sys

from rocketmq_emu.broker.cli_errors import port_number
from rocketmq_emu.broker.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL

REPORTS = ("traffic", "delays", "consumers", "retries")  # reports.runner.REPORTS (light here)
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


def lacks_extra() -> bool:
    """Whether the ``[reports]`` extra is missing; if so, one line says what to install."""
    missing = missing_packages()
    if missing:
        print(f"rmq-emu report: needs {', '.join(missing)} (not installed): {INSTALL_HINT}",
              file=sys.stderr)
    return bool(missing)


def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the report arguments to ``parser``."""
    parser.add_argument(
        "name", choices=(*REPORTS, "all", "serve"),
        help="which report (or all); serve: run the report service, which keeps one Spark "
             "session warm for the reports that follow")
    parser.add_argument(
        "--store", action="append", metavar="[NAME=]DIR",
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
        "--server", default=None, metavar="URL",
        help="run the report in the report service at URL (http://HOST:PORT); default: "
             "$RMQ_EMU_REPORT_SERVER, else a service on this machine if one runs, else here")
    parser.add_argument("--local", action="store_true",
                        help="run here even when a report service runs")
    serve = parser.add_argument_group("serve")
    serve.add_argument("--host", default="127.0.0.1",
                       help="serve: the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=port_number, default=0,
                       help="serve: the port to listen on (default: any free one; the state "
                            "file says which)")
    serve.add_argument("--state-file", default=None, metavar="FILE",
                       help="serve: where to say that the service runs (default: "
                            "$RMQ_EMU_REPORT_STATE, else under $XDG_RUNTIME_DIR or "
                            "~/.cache/rocketmq-emu); reports on this machine find it there")
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
    ``index.html`` in the output directory, linking the four pages. ``serve`` runs the report
    service instead (:mod:`rocketmq_emu.reports.service`).

    A report runs in a running report service when one is found
    (:func:`rocketmq_emu.reports.service_client.find_service`: ``--server``, the
    ``RMQ_EMU_REPORT_SERVER`` variable, or the state file a local service writes), else in
    this process. Without the ``[reports]`` extra and no service: one line saying what to
    install, exit status 1."""
    if args.name == "serve":
        return _serve(args)
    if not args.store:
        print("rmq-emu: error: report: --store is required", file=sys.stderr)
        return 2
    from rocketmq_emu.reports.service_client import ServiceError, find_service, store_args
    from rocketmq_emu.reports.stores import StoreError, resolve

    try:
        stores = resolve(args.store)
    except StoreError as exc:
        # Before pyspark is imported: a wrong --store costs no Spark start.
        print(f"rmq-emu: error: {exc}", file=sys.stderr)
        return 2
    try:
        # --master and --remote say where to run: in this process, not in a service.
        service = None if args.remote or args.master or args.local else find_service(
            args.server)
    except ServiceError as exc:
        print(f"rmq-emu: error: {exc}", file=sys.stderr)
        return 2
    if service is not None:
        from rocketmq_emu.reports.service_client import run_remote

        return run_remote(service, args.name, store_args(args.store),
                          os.path.abspath(args.out), args.delay_levels)
    if lacks_extra():
        return 1
    from pyspark.sql import SparkSession

    from rocketmq_emu.reports.session import get_session, stop_session

    # A session already running in this process (tests, notebooks) is used and left running.
    owned = SparkSession.getActiveSession() is None
    spark = get_session(args.master, remote=args.remote, quick=is_small(stores))
    from rocketmq_emu.reports.runner import run_reports

    if len(stores) > 1:
        print("stores: " + ", ".join(f"{s.broker_name}={s.path}" for s in stores))
    try:
        for name, page in run_reports(spark, stores, args.name, args.out, args.delay_levels):
            print(f"{name}: {page}")
    finally:
        if owned:
            stop_session(spark)
    return 0


def _serve(args: argparse.Namespace) -> int:
    """``rmq-emu report serve``: needs the extra like a report does."""
    if lacks_extra():
        return 1
    from rocketmq_emu.reports.service import serve

    return serve(args)


def is_small(stores: list) -> bool:
    """Whether the stores' commitlogs hold under ``QUICK_MAX_BYTES`` written bytes (the
    data source's own planning measures them: files' written ends, not their sizes)."""
    from rocketmq_emu.reports.datasource_commitlog import written_bytes
    from rocketmq_emu.reports.session import QUICK_MAX_BYTES

    return written_bytes(stores) < QUICK_MAX_BYTES


def run_argv(argv: list[str] | None = None) -> int:
    """Standalone entry point (``python -m rocketmq_emu.reports traffic --store DIR``)."""
    parser = configure(argparse.ArgumentParser(prog="rmq-emu report"))
    return main(parser.parse_args(argv))


#: ``broker/cli.py`` calls ``register(subparsers)`` on each area's CLI module.
register = add_parser
