"""Suite-wide settings."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from rocketmq_emu.client.local_offsets import ENV_DIR

# Broadcasting consumers write their offsets files (LocalFileOffsetStore) under the home
# directory by default, as the Java client does: the suite keeps them in a directory of its own.
if ENV_DIR not in os.environ:
    os.environ[ENV_DIR] = tempfile.mkdtemp(prefix="rmq-emu-offsets-")
    atexit.register(shutil.rmtree, os.environ[ENV_DIR], True)

# Hypothesis checks what a codec or a store does, never how fast: its default 200 ms deadline
# per example and its "too slow" health check fail a property that holds whenever the machine
# is busy (a CI runner beside other jobs, xdist workers on two cores). The number of examples,
# and so the coverage, stays Hypothesis's default.
settings.register_profile(
    "rocketmq-emu", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("rocketmq-emu")


# A report service the developer runs must not take the suite's reports: every process here
# looks for one in a state file of its own that no service writes (tests of the service set
# theirs), and a RMQ_EMU_REPORT_SERVER from outside is dropped.
os.environ.pop("RMQ_EMU_REPORT_SERVER", None)
os.environ["RMQ_EMU_REPORT_STATE"] = os.path.join(
    tempfile.gettempdir(), f"rmq-emu-tests-{os.getpid()}-no-report-service.json")


#: Where the tests that share the run's SparkSession live (tests/spark/conftest.py's ``spark``).
SPARK_TESTS = "tests/spark/"
#: Test folders, slowest tests first: the order the run collects and hands out its modules.
FOLDER_ORDER = ("spark", "interop", "browser", "integration", "unit")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Collect the folders in :data:`FOLDER_ORDER`: with parallel workers, a module of
    minute-long tests handed out last would keep one worker busy after the others finished."""
    def rank(item: pytest.Item) -> int:
        try:
            parts = item.path.relative_to(item.config.rootpath).parts
        except ValueError:  # a test file outside the repository
            return len(FOLDER_ORDER)
        folder = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
        return FOLDER_ORDER.index(folder) if folder in FOLDER_ORDER else len(FOLDER_ORDER)

    items.sort(key=rank)  # stable: each folder keeps its own order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``make test`` runs the suite on pytest-xdist workers. A test module is the unit of work,
    so a module-scoped fixture (an emulator, a venv, a Spark server) is set up once, on one
    worker; the modules under tests/spark are one unit, so the run starts one SparkSession (a
    JVM of ~0.7 GB and seconds of CPU) instead of one per worker. Units are handed out in the
    collection's order (see :func:`pytest_collection_modifyitems`), not xdist's default of
    the units with the most tests first."""
    from xdist.scheduler import LoadScopeScheduling

    class ModulesSparkTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SPARK_TESTS if nodeid.startswith(SPARK_TESTS) else nodeid.split("::", 1)[0]

    config.option.loadscopereorder = False
    return ModulesSparkTogether(config, log)
