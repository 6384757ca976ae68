"""Base of the JSON config files under ``{storePathRootDir}/config/``.

Mirrors RocketMQ ``common/ConfigManager.java`` and ``MixAll.string2File``:

* **load**: read the file; if it is missing or empty, or cannot be parsed, load ``<file>.bak``
  instead (the failure is logged naming the file and the reason). Missing both is a fresh start.
* **persist**: write ``<file>.tmp``, copy the current file to ``<file>.bak``, rename the temporary
  file over the original. Here the temporary and backup copies are fsynced and renamed, so a crash
  at any point leaves a complete ``<file>`` or a complete ``<file>.bak``. The document is encoded
  on the caller's thread; with a :attr:`ConfigManager.writer` (the store's flush thread) the
  file writes and fsyncs run there, so a slow disk does not stall the reactor.

Reading uses :func:`rocketmq_emu.broker.jsonutil.loads`, so fastjson's unquoted integer map keys
(``{"offsetTable":{"T@g":{0:12}}}``) from a real RocketMQ store parse. Writing uses quoted keys,
indented and sorted like RocketMQ's pretty output (``encode(true)``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker import jsonutil

log = logging.getLogger(__name__)

CONFIG_DIR = "config"
TOPICS_JSON = "topics.json"
CONSUMER_OFFSET_JSON = "consumerOffset.json"
DELAY_OFFSET_JSON = "delayOffset.json"
SUBSCRIPTION_GROUP_JSON = "subscriptionGroup.json"


def config_file_path(store_root: str, file_name: str) -> str:
    """``{storePathRootDir}/config/{file_name}`` (``BrokerPathConfigHelper``)."""
    return os.path.join(store_root, CONFIG_DIR, file_name)


def clock_millis(clock) -> Callable[[], int]:
    """A zero-argument ms timestamp source from an ``IReactorTime`` (None: wall clock)."""
    if clock is None:
        return lambda: int(time.time() * 1000)
    return lambda: int(clock.seconds() * 1000)


class DataVersion:
    """``common/DataVersion.java``: ``{"counter": long, "timestamp": long}``.

    ``next_version`` stamps the current time and increments the counter; the name server compares
    versions to decide whether a broker's topic set changed.
    """

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self.timestamp = now_ms()
        self.counter = 0

    def next_version(self) -> None:
        """Stamp now and bump the counter."""
        self.timestamp = self._now_ms()
        self.counter += 1

    def assign(self, other: dict[str, Any] | None) -> None:
        """``assignNewOne``: take counter and timestamp from a decoded JSON object."""
        if other:
            self.timestamp = int(other.get("timestamp", self.timestamp))
            self.counter = int(other.get("counter", self.counter))

    def to_json(self) -> dict[str, int]:
        """The JSON object."""
        return {"counter": self.counter, "timestamp": self.timestamp}

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DataVersion)
            and (self.counter, self.timestamp) == (other.counter, other.timestamp)
        )

    def __repr__(self) -> str:
        return f"DataVersion(counter={self.counter}, timestamp={self.timestamp})"


class ConfigFileError(Exception):
    """A config file that cannot be parsed or applied; the message names the file and why."""


def _write_file_synced(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class ConfigManager:
    """A JSON document persisted at :attr:`path` with a ``.bak`` copy.

    Subclasses implement :meth:`encode` (to a JSON-able dict) and :meth:`decode` (apply a parsed
    dict; raise ``ConfigFileError``/``ValueError``/``TypeError``/``KeyError`` on bad content).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        # Set when load() found the main file corrupt: the next persist must not copy that
        # corrupt content over the good .bak it was recovered from.
        self._main_corrupt = False
        #: ``submit(fn, *args) -> Deferred`` running the blocking part of :meth:`persist` (the
        #: store's :class:`~broker.commitlog.disk_sync.DiskSyncer`); None: inline.
        self.writer = None

    @property
    def bak_path(self) -> str:
        """``<file>.bak``."""
        return self.path + ".bak"

    # --- subclass hooks ---------------------------------------------------------------------
    def encode(self) -> dict[str, Any]:
        """The document to write."""
        raise NotImplementedError

    def decode(self, doc: Any) -> None:
        """Apply a parsed document (merging into the defaults, like ``putAll`` in Java)."""
        raise NotImplementedError

    # --- load / persist ---------------------------------------------------------------------
    def _load_one(self, path: str) -> bool | None:
        """True: loaded; None: missing or empty; raises on corrupt content."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        if not data.strip():
            return None
        try:
            doc = jsonutil.loads(data)
        except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
            raise ConfigFileError(f"{path}: not valid JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise ConfigFileError(f"{path}: expected a JSON object, got {type(doc).__name__}")
        try:
            self.decode(doc)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ConfigFileError(f"{path}: unexpected content: {exc!r}") from exc
        return True

    def load(self) -> bool:
        """Load the file, else its ``.bak``; False only if neither can be used.

        A fresh store (neither file present) loads the defaults and returns True.
        """
        try:
            if self._load_one(self.path):
                log.info("loaded %s", self.path)
                return True
            log.info("%s missing or empty, trying %s", self.path, self.bak_path)
        except (ConfigFileError, OSError) as exc:
            self._main_corrupt = True
            log.error("config file %s is unusable (%s); trying backup %s",
                      self.path, exc, self.bak_path)
        try:
            if self._load_one(self.bak_path):
                log.warning("loaded backup %s", self.bak_path)
            return True
        except (ConfigFileError, OSError) as exc:
            log.error("backup config file %s is unusable too (%s)", self.bak_path, exc)
            return False

    def to_bytes(self) -> bytes:
        """The file's bytes: sorted keys, indented, integer keys quoted."""
        return jsonutil.dumps_pretty(self.encode())

    def persist(self) -> bool:
        """Write the document durably, keeping the previous content in ``.bak``.

        Returns False (after logging the file and the OS error) if the disk refuses, so a
        read-only or full disk never takes the broker down; the in-memory state stays current.
        With a :attr:`writer` the write happens in its thread: True means queued (a failure is
        logged when it happens).
        """
        try:
            data = self.to_bytes()
        except OSError as exc:
            log.error("cannot persist config file %s: %s", self.path, exc)
            return False
        keep_bak = not self._main_corrupt
        if self.writer is None:
            return self._persisted(self._write(data, keep_bak))
        outcome: list[bool] = []
        self.writer(self._write, data, keep_bak).addCallbacks(
            lambda ok: outcome.append(self._persisted(ok)),
            lambda f: outcome.append(self._persisted(f.value)),
        )
        return outcome[0] if outcome else True

    def _persisted(self, result) -> bool:
        if result is True:
            self._main_corrupt = False
            return True
        log.error("cannot persist config file %s: %s", self.path, result)
        return False

    def _write(self, data: bytes, keep_bak: bool):
        """The blocking part of :meth:`persist` (any thread): True, or the OS error."""
        directory = os.path.dirname(self.path) or "."
        try:
            os.makedirs(directory, exist_ok=True)
            try:
                with open(self.path, "rb") as f:
                    previous = f.read()
            except FileNotFoundError:
                previous = None
            if previous and keep_bak:
                _write_file_synced(self.bak_path, previous)
            _write_file_synced(self.path, data)
            _fsync_dir(directory)
        except OSError as exc:
            return exc
        return True
