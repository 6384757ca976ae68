"""Fixtures shared by the loopback tests."""

from __future__ import annotations

from typing import Any

import pytest
from issue7_support import start_cluster, stop_cluster


@pytest.fixture
def cluster(tmp_path: Any) -> Any:
    """(name server, broker) on loopback for one test (a module may define its own)."""
    namesrv, broker = start_cluster(tmp_path)
    yield namesrv, broker
    stop_cluster(namesrv, broker)
