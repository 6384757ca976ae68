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

QUIET_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
}


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
    master: str | None = None, app_name: str = "rocketmq-emu-reports", conf: dict | None = None
) -> SparkSession:
    """A SparkSession (local mode unless ``master`` is given) with both data sources
    registered. ``--master spark://...`` needs the store on a path every executor can read."""
    configure_environment()
    builder = SparkSession.builder.master(master or DEFAULT_MASTER).appName(app_name)
    for key, value in {**QUIET_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register_sources(spark)
    return spark
