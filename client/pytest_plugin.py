"""pytest plugin (entry point ``pytest11 = rocketmq = client.pytest_plugin``).

Fixtures:

``rocketmq``
    A fresh :class:`rocketmq_emu.client.testing.EmbeddedCluster` per test (own ports, own temporary store,
    own clock), stopped after the test. Options come from the marker
    ``@pytest.mark.rocketmq(clock="manual", broker_config={...})`` (any EmbeddedCluster keyword;
    ``grpc_port=None`` leaves out the gRPC endpoint).

    ``rocketmq.conformance()`` lists the conformance findings: what the test's clients sent that
    Apache RocketMQ's Java client does not (``severity`` error, warning, info). With
    ``@pytest.mark.rocketmq(strict_conformance=True)`` any ``error`` finding fails the test at
    teardown.

``rocketmq_session``
    One cluster shared by the whole session (faster; tests should use their own topics and
    groups). Its fault rules and request log are reset after each test that uses it.

Both have ``.clock.advance(seconds)``, ``.faults``, ``.producer()``, ``.collector(topic)``, ...
and serve RocketMQ 5's gRPC MessagingService on a free port, ``.grpc_endpoint`` (``host:port``
for the 5.x SDKs); the clock drives POP invisible times, so a test receives, advances 30 minutes
and receives the message again.
Their name server and brokers are built by the production wiring
(:class:`rocketmq_emu.broker.cluster.Cluster`, ``.cluster``), as ``rmq-emu up`` builds its own.

This module must stay cheap to import: pytest loads it in every project that installed
rocketmq-emu, so the harness is imported only when a fixture is used.

With pytest-twisted installed, plain (non-async) test functions that use these fixtures (or carry
the ``rocketmq`` marker) are run outside the reactor greenlet so the blocking facade can wait for
the reactor; async tests (``@pytest_twisted.inlineCallbacks`` / ``ensureDeferred``) are left to
pytest-twisted. Other plain tests run inside the reactor there and must use the Twisted API.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import pytest

_FIXTURES = ("rocketmq", "rocketmq_session")


def pytest_configure(config: Any) -> None:
    """Register the ``rocketmq`` marker for projects that do not declare it."""
    config.addinivalue_line(
        "markers",
        "rocketmq(clock='follow'|'manual', strict_conformance=False, **options): options for "
        "the rocketmq fixture (EmbeddedCluster keyword arguments)",
    )


@pytest.fixture
def rocketmq(request: Any, tmp_path: Any) -> Any:
    """A name server + broker for this test only (see module docstring)."""
    from rocketmq_emu.client.testing import EmbeddedCluster

    marker = request.node.get_closest_marker("rocketmq")
    options = dict(marker.kwargs) if marker else {}
    options.setdefault("store_dir", tmp_path / "rocketmq-store")
    cluster = EmbeddedCluster(**options)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
    if cluster.strict_conformance:
        errors = cluster.conformance("error")
        if errors:
            pytest.fail("strict_conformance: the clients sent what the Java client does not:\n"
                        + "\n".join(f"  {f['language']} {f['clientId']}: {f['message']}"
                                     for f in errors), pytrace=False)


@pytest.fixture(scope="session")
def _rocketmq_session_cluster(tmp_path_factory: Any) -> Any:
    from rocketmq_emu.client.testing import EmbeddedCluster

    cluster = EmbeddedCluster(store_dir=tmp_path_factory.mktemp("rocketmq-session-store"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def rocketmq_session(_rocketmq_session_cluster: Any) -> Any:
    """The session-wide cluster; fault rules and records are reset after the test."""
    try:
        yield _rocketmq_session_cluster
    finally:
        _rocketmq_session_cluster.reset()


def _is_pytest_twisted_async(func: Any) -> bool:
    return (
        inspect.iscoroutinefunction(func)
        or getattr(func, "_pytest_twisted_mark", None) is not None
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: Any) -> Any:
    """Run plain tests using our fixtures in the main greenlet (see module docstring)."""
    ptw = sys.modules.get("pytest_twisted")
    if ptw is None or getattr(ptw._instances, "gr_twisted", None) is None:
        return None
    if not (any(name in pyfuncitem.fixturenames for name in _FIXTURES)
            or pyfuncitem.get_closest_marker("rocketmq") is not None):
        return None
    func = pyfuncitem.obj
    if _is_pytest_twisted_async(func) or getattr(func, "hypothesis", None) is not None:
        return None
    argnames = pyfuncitem._fixtureinfo.argnames
    func(**{name: pyfuncitem.funcargs[name] for name in argnames})
    return True
