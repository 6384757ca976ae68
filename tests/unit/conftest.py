"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest
from processor_support import make_context


@pytest.fixture
def ctx(tmp_path):
    """A BrokerContext around a started store in ``tmp_path`` (processor_support.make_context),
    shut down after the test."""
    c = make_context(tmp_path)
    yield c
    c.store.shutdown()
