"""The dashboard as the browser tests see it: open a view, wait for what it shows, type and
click, take a screenshot, read the console."""

from __future__ import annotations

from pathlib import Path

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

#: What a console entry may be without failing a test: none of the page's own making.
SEVERITIES = ("SEVERE", "WARNING")


class DashboardPage:
    """One dashboard in ``driver`` at ``base`` (``http://host:port/``); screenshots go to
    ``shots``."""

    def __init__(self, driver, base: str, shots: Path) -> None:
        self.driver = driver
        self.base = base
        self.shots = shots
        shots.mkdir(parents=True, exist_ok=True)
        self.loaded = False

    def open(self, route: str) -> None:
        """Show ``#/route`` (the page is loaded once; later routes change the hash only)."""
        if not self.loaded:
            self.driver.get(self.base + "#/" + route)
            self.loaded = True
        else:
            self.driver.execute_script("window.location.hash = arguments[0]", "#/" + route)
        self.wait_text("#view h1", lambda t: t and t != "Loading…")

    def find(self, css: str):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def all(self, css: str) -> list:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def wait_text(self, css: str, predicate, timeout: float = 20) -> str:
        """The text of ``css`` once ``predicate(text)`` holds (it re-renders as it polls)."""
        seen: list[str] = []

        def ready(_driver) -> str | bool:
            try:
                text = self.find(css).text
            except Exception:  # not there yet, or replaced between find and read
                return False
            seen[:] = [text]
            return text if predicate(text) else False

        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1).until(ready)
        except Exception as exc:
            raise AssertionError(f"{css}: never matched; last text {seen!r}") from exc

    def wait_for(self, condition, what: str, timeout: float = 20):
        """Wait until ``condition()`` is truthy (retrying through re-renders)."""
        def ready(_driver):
            try:
                return condition()
            except (StaleElementReferenceException, NoSuchElementException, LookupError):
                return False
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1).until(ready)
        except Exception as exc:
            raise AssertionError(f"never: {what}") from exc

    def type(self, css: str, text: str) -> None:
        element = self.find(css)
        element.clear()
        element.send_keys(text)

    def click(self, css: str) -> None:
        """Click ``css``, finding it again if the page re-rendered it meanwhile (a polled table
        is redrawn when its data changed: an element found a moment ago may be gone)."""
        self.wait_for(lambda: self.find(css).click() or True, f"a click on {css}")

    def rows(self, table: str) -> list[list[str]]:
        """The cells' text of each body row of ``table``."""
        out = []
        for row in self.all(f"{table} tbody tr"):
            out.append([c.text for c in row.find_elements(By.CSS_SELECTOR, "td")])
        return out

    def shot(self, name: str) -> Path:
        """A screenshot of the page as it is, ``<shots>/<name>.png``."""
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def size(self, width: int, height: int, mobile: bool = False) -> None:
        """Render at a ``width`` × ``height`` viewport (a phone's with ``mobile``)."""
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    def console(self) -> list[dict]:
        """Console entries since the last call that are errors or warnings."""
        return [e for e in self.driver.get_log("browser") if e["level"] in SEVERITIES]
