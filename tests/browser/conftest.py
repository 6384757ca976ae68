"""The dashboard's browser suite: Debian's chromium driven through its chromedriver by selenium,
against ``rmq-emu up --control-port`` in a subprocess (the reactor of the test process would stop
serving while selenium waits), with real clients from tests/interop.

``.ci/run`` installs chromium and chromium-driver when missing; without them these tests fail
with one line saying so (a dashboard nobody looked at in a browser is not tested).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

INTEROP = Path(__file__).resolve().parents[1] / "interop"
if str(INTEROP) not in sys.path:
    sys.path.insert(0, str(INTEROP))


def _interop_fixtures():
    spec = importlib.util.spec_from_file_location("interop_conftest", INTEROP / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The real C++ client of PyPI (``rocketmq==0.4.4``), installed as the interop tests install it.
pypi_rocketmq = _interop_fixtures().pypi_rocketmq

#: Chromium's options for a closed machine (no background connections, no first-run work).
CHROMIUM_ARGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage")


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    """A headless chromium at 1280×800 whose console the tests read."""
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or chromedriver is None:
        pytest.fail("the dashboard's tests need Debian's chromium and chromium-driver "
                    "(.ci/run installs them: apt-get install chromium chromium-driver)",
                    pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in CHROMIUM_ARGS:
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.add_argument("--window-size=1280,800")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(chromedriver), options=options)
    drv.set_page_load_timeout(30)
    try:
        yield drv
    finally:
        drv.quit()
