"""One configured SparkSession for reports, tests and the bench.

Facts from measurements.md section 1: Python workers must run this interpreter (they import
``reports.*`` by name, so the project is installed with ``pip install -e .``); Spark must bind
to loopback; the UI and console progress bar only cost time here.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
#: A small store's master (:data:`QUICK_CONF`): one core's worth of tasks and Python workers.
QUICK_MASTER = "local[*]"

QUIET_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
}

#: JVM options for short runs: the C1 compiler only (C2 spends more compiling Spark's code than
#: a short run gains from it) and the serial collector (fewer threads and less heap overhead).
SHORT_RUN_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmn48m -XX:ReservedCodeCacheSize=48m"
#: For a small store (the CLI's choice, :data:`QUICK_MAX_BYTES`): a report is a few dozen tiny
#: jobs whose cost is planning, code generation and JIT warm-up, not rows. Measured with
#: bench/report_latency.py (report all, 1,000 messages, 2 cores): see docs/tests-and-benchmarks.md.
QUICK_CONF = {
    "spark.driver.extraJavaOptions": SHORT_RUN_JVM,
    "spark.executor.extraJavaOptions": SHORT_RUN_JVM,
    # Whole-stage code generation compiles Java for every query plan (Janino) on a cold JVM.
    "spark.sql.codegen.wholeStage": "false",
    # AQE re-plans each tiny shuffle between its stages.
    "spark.sql.adaptive.enabled": "false",
    # The reports' shuffles carry partial aggregates (a row per group) or, in the delays
    # join, at most a row per scheduled message: one reduce task each is enough here.
    "spark.sql.shuffle.partitions": "1",
    "spark.driver.memory": "512m",
    "spark.python.worker.reuse": "false",
}
#: The class-data archive of the JVM the last quick session started (see :func:`stop_session`).
_archive = None
#: Stores whose commitlogs hold less than this many written bytes get :data:`QUICK_CONF`.
QUICK_MAX_BYTES = 256 * 1024 * 1024


def configure_environment() -> None:
    """Point Spark's Python workers at this interpreter and keep Spark on loopback."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def register_sources(spark: SparkSession) -> None:
    """Register the ``rocketmq-commitlog`` and ``rocketmq-consumequeue`` formats by class."""
    from rocketmq_emu.reports.datasource_commitlog import CommitLogDataSource
    from rocketmq_emu.reports.datasource_consumequeue import ConsumeQueueDataSource

    spark.dataSource.register(CommitLogDataSource)
    spark.dataSource.register(ConsumeQueueDataSource)


def get_session(
    master: str | None = None, app_name: str = "rocketmq-emu-reports", conf: dict | None = None,
    remote: str | None = None, quick: bool = False,
) -> SparkSession:
    """A SparkSession (local mode unless ``master`` is given) with both data sources
    registered. ``--master spark://...`` needs the store on a path every executor can read.

    ``remote`` (``sc://host:port``) connects to a Spark Connect server instead: the data
    sources are registered in this client's session and run in the server's Python workers,
    so the server's ``PYSPARK_PYTHON`` must be an interpreter with rocketmq-emu installed,
    and the store a path the server (and its executors) can read. A Connect session has no
    ``sparkContext``: use :func:`default_parallelism`.

    ``quick`` adds :data:`QUICK_CONF` (a small store); ``conf`` wins over both. The JVM
    options only reach a JVM this call starts (a driver; executors of a cluster)."""
    if master and remote:
        raise ValueError("give master or remote, not both")
    configure_environment()
    if remote:
        builder = SparkSession.builder.remote(remote).appName(app_name)
        # The server's own settings (UI, log level) are its business; SQL ones are the
        # session's, so set them (a static conf the server refuses would fail here).
        conf = {**{k: v for k, v in QUIET_CONF.items() if k.startswith("spark.sql.")},
                **(conf or {})}
    else:
        default = QUICK_MASTER if quick else DEFAULT_MASTER
        master = master or default
        builder = SparkSession.builder.master(master).appName(app_name)
        conf = {**QUIET_CONF, **(QUICK_CONF if quick else {}), **(conf or {})}
        conf = _with_archive(conf, master) if quick else conf
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not is_connect(spark):
        spark.sparkContext.setLogLevel("ERROR")
    register_sources(spark)
    return spark


def _with_archive(conf: dict, master: str) -> dict:
    """``conf`` with the driver JVM's class-data archive (:mod:`rocketmq_emu.reports.jvm_archive`)
    when this call starts a local JVM: a quick session's start is mostly class loading."""
    global _archive
    from pyspark import SparkContext

    if not master.startswith("local") or SparkContext._active_spark_context is not None:
        return conf
    from rocketmq_emu.reports.jvm_archive import Archive

    options = conf.get("spark.driver.extraJavaOptions", "")
    _archive = Archive(options)
    extra = _archive.options()
    return {**conf, "spark.driver.extraJavaOptions": f"{options} {extra}".strip()}


def stop_session(spark: SparkSession) -> None:
    """Stop a session :func:`get_session` started; when its JVM writes the class-data archive,
    wait for that JVM to end so the archive is complete (once per machine)."""
    global _archive
    archive, _archive = _archive, None
    proc = None
    if not is_connect(spark):
        gateway = getattr(spark.sparkContext, "_gateway", None)
        proc = getattr(gateway, "proc", None)
    spark.stop()
    if archive is not None and proc is not None:
        from pyspark import SparkContext

        archive.finish(proc)
        # That JVM is gone: a later session in this process must launch a new one.
        SparkContext._gateway = None
        SparkContext._jvm = None


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (no ``sparkContext``, no JVM here)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark: SparkSession) -> int:
    """``sparkContext.defaultParallelism`` of a classic session; for a Connect session (which
    has no ``sparkContext``) ``spark.default.parallelism`` when set, else the number of
    partitions ``spark.range`` gets by default, which is that same value on the server
    (``leafNodeDefaultParallelism`` falls back to it): one small job."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return int(configured)
    from pyspark.sql import functions as F

    return spark.range(1 << 16).select(F.spark_partition_id()).distinct().count()
