"""Interop fixtures (helpers in interop_support.py; see its docstring)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from interop_support import (
    CVS_SPEC,
    NPM_SPECS,
    PYPI_SPEC,
    SDK5_NPM_SPEC,
    SDK5_PY_SPEC,
    ClientLauncher,
    Emulator,
    cache_dir,
    install,
    start_emulator,
    stop_emulator,
)

from rocketmq_emu.client.testing_tools import free_port


def _pip_client(spec: str, dirname: str) -> Path:
    """``pip install --target`` of one PyPI client into the interop cache (once), checked by
    importing ``rocketmq.client`` from there; the directory to put on PYTHONPATH."""
    return install(
        spec,
        cache_dir() / dirname,
        [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q",
         "--no-input", "--target", "{target}", spec],
        [sys.executable, "-c",
         "import sys; sys.path.insert(0, '{target}'); import rocketmq.client"],
    )


@pytest.fixture(scope="session")
def pypi_rocketmq() -> Path:
    """Directory to put on PYTHONPATH for PyPI ``rocketmq==0.4.4`` (bundles librocketmq.so)."""
    return _pip_client(PYPI_SPEC, "pypi-rocketmq-0.4.4")


@pytest.fixture(scope="session")
def pypi_rocketmq_cvs() -> Path:
    """PYTHONPATH entry for PyPI ``rocketmq-python-cvs==2.1.0.3`` (a C++ 2.x client, same API)."""
    return _pip_client(CVS_SPEC, "pypi-rocketmq-python-cvs-2.1.0.3")


@pytest.fixture(scope="session")
def npm_clients() -> Path:
    """``node_modules`` directory (for NODE_PATH) with ali-ons and rocketmq-nodejs."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are required for the npm interop clients (not found on PATH)")
    target = cache_dir() / ("npm-" + "-".join(s.replace("@", "_") for s in NPM_SPECS))
    install(
        " ".join(NPM_SPECS),
        target,
        ["npm", "install", "--prefix", "{target}", "--no-audit", "--no-fund",
         "--loglevel=error", *NPM_SPECS],
        ["node", "-e",
         "require('{target}/node_modules/ali-ons'); require('{target}/node_modules/rocketmq-nodejs')"],
    )
    return target / "node_modules"


@pytest.fixture(scope="session")
def sdk5_python() -> Path:
    """PYTHONPATH entry for PyPI ``rocketmq-python-client==5.1.2`` (the 5.x gRPC SDK, with its
    own grpcio and protobuf), the same install test_sdk5_protocol.py uses."""
    return install(
        SDK5_PY_SPEC,
        cache_dir() / "pypi-rocketmq-python-client-5.1.2",
        [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q",
         "--no-input", "--target", "{target}", SDK5_PY_SPEC],
        [sys.executable, "-c",
         "import sys; sys.path.append('{target}'); import rocketmq.grpc_protocol.service_pb2"],
    )


@pytest.fixture(scope="session")
def sdk5_nodejs() -> Path:
    """``node_modules`` directory (for NODE_PATH) with npm ``rocketmq-client-nodejs@1.0.8``."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are required for the npm interop clients (not found on PATH)")
    target = cache_dir() / ("npm-" + SDK5_NPM_SPEC.replace("@", "_"))
    install(
        SDK5_NPM_SPEC,
        target,
        ["npm", "install", "--prefix", "{target}", "--no-audit", "--no-fund",
         "--loglevel=error", SDK5_NPM_SPEC],
        ["node", "-e", "require('{target}/node_modules/rocketmq-client-nodejs')"],
    )
    return target / "node_modules"


@pytest.fixture(scope="session")
def emulator(tmp_path_factory) -> Emulator:
    """One name server + broker for the interop session, with the control API (``emu.control``:
    GET /conformance lists what the clients sent that the Java client does not)."""
    emu = start_emulator(tmp_path_factory.mktemp("emulator"), control_port=free_port())
    yield emu
    stop_emulator(emu)


def _launcher(request, tmp_path, emulator, pypi, npm):
    launcher = ClientLauncher(tmp_path, emulator, pypi, npm)
    request.addfinalizer(launcher.close)
    return launcher


@pytest.fixture
def py_clients(request, tmp_path, emulator, pypi_rocketmq) -> ClientLauncher:
    """Launcher for the PyPI rocketmq 0.4.4 scripts against the session emulator."""
    return _launcher(request, tmp_path, emulator, pypi_rocketmq, None)


@pytest.fixture
def node_clients(request, tmp_path, emulator, npm_clients) -> ClientLauncher:
    """Launcher for the npm client scripts against the session emulator."""
    return _launcher(request, tmp_path, emulator, None, npm_clients)


def pytest_collection_modifyitems(items):
    """Everything under tests/interop is an interop test."""
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.interop)
