"""Base of the JSON config files under ``{storePathRootDir}/config/``.

Mirrors RocketMQ ``common/ConfigManager.java`` and ``MixAll.string2File``:

* **load**: read the file; if it is missing or empty, or cannot be parsed, load ``<file>.bak``
  instead (the failure is logged naming the file and the reason). Missing both is a fresh start.
  One bad entry of a table (a topic, a group, an offset) is skipped with a warning naming the
  file and the entry; it never makes the whole file, and so the store, unusable.
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


def is_blank(name: object) -> bool:
    """``UtilAll.isBlank`` for a topic or group name read from a file or a request: missing,
    empty or only whitespace."""
    return not isinstance(name, str) or not name.strip()


#: What a bad entry raises while it is parsed (the entry is skipped, the file still loads).
ENTRY_ERRORS = (ValueError, TypeError, KeyError, AttributeError, OverflowError)


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line (orjson and OSError messages can embed newlines)."""
    return " ".join(str(exc).split())


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
        #: The file being read by :meth:`load` (named in the warnings about skipped entries).
        self._loading = path
        #: Why :meth:`load` last failed (one line naming both files), or None.
        self.load_error: str | None = None
        #: ``(file, entry, reason)`` of every entry :meth:`load` skipped.
        self.skipped: list[tuple[str, str, str]] = []
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

    # --- entry-by-entry decoding (for subclasses' decode) ------------------------------------
    def skip_entry(self, what: str, key: object, reason: object) -> None:
        """Log and record that one entry of the file being loaded is ignored."""
        self.skipped.append((self._loading, f"{what} {key!r}", str(reason)))
        log.warning("config file %s: skipping %s %r (%s); the rest of the file is loaded",
                    self._loading, what, key, reason)

    def decode_table(self, table: Any, what: str,
                     parse: Callable[[str, Any], Any]) -> dict[str, Any]:
        """``{key: parse(key, value)}`` for a JSON object; an entry whose ``parse`` raises one of
        :data:`ENTRY_ERRORS` is skipped (:meth:`skip_entry`). A missing table is empty; a table
        that is not an object makes the file unusable (TypeError)."""
        if table is None:
            return {}
        if not isinstance(table, dict):
            raise TypeError(f"{what} table must be an object, got {type(table).__name__}")
        out: dict[str, Any] = {}
        for key, value in table.items():
            try:
                out[key] = parse(key, value)
            except ENTRY_ERRORS as exc:
                self.skip_entry(what, key, exc)
        return out

    def decode_named_table(self, table: Any, what: str,
                           build: Callable[[Any, str], Any]) -> dict[str, Any]:
        """:meth:`decode_table` for a table keyed by topic or group name: ``build(value,
        name)`` makes each entry, and a blank name is a bad entry like any other."""
        def parse(name: str, value: Any) -> Any:
            if is_blank(name):
                raise ValueError(f"blank {what} name")
            return build(value, name)

        return self.decode_table(table, what, parse)

    def assign_data_version(self, version: DataVersion, doc: Any) -> None:
        """Take the file's ``dataVersion``; a malformed one is ignored with a warning (the
        counter only tells the name server that something changed)."""
        try:
            version.assign(doc)
        except ENTRY_ERRORS as exc:
            self.skip_entry("dataVersion", doc, exc)

    # --- load / persist ---------------------------------------------------------------------
    def _load_one(self, path: str) -> bool | None:
        """True: loaded; None: missing or empty; raises on corrupt content (ConfigFileError
        saying why, without the path: the caller names the file)."""
        self._loading = path
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
            raise ConfigFileError(f"not valid JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise ConfigFileError(f"expected a JSON object, got {type(doc).__name__}")
        try:
            self.decode(doc)
        except ENTRY_ERRORS as exc:
            raise ConfigFileError(f"unexpected content: {exc!r}") from exc
        return True

    def load(self) -> bool:
        """Load the file, else its ``.bak``; False only if neither can be used.

        A fresh store (neither file present) loads the defaults and returns True. On False,
        nothing is logged: :attr:`load_error` says why in one line naming both files, for the
        caller to report.
        """
        self.load_error = None
        main_state = "missing or empty"
        try:
            if self._load_one(self.path):
                log.info("loaded %s", self.path)
                return True
            log.info("%s missing or empty, trying %s", self.path, self.bak_path)
        except (ConfigFileError, OSError) as exc:
            self._main_corrupt = True
            main_state = f"unusable ({_one_line(exc)})"
        try:
            loaded = self._load_one(self.bak_path)
        except (ConfigFileError, OSError) as exc:
            self.load_error = (f"config file {self.path} is {main_state} and its backup "
                               f"{self.bak_path} is unusable ({_one_line(exc)})")
            return False
        if self._main_corrupt:
            # ConfigManager.loadBak: a missing backup still counts as loaded (the defaults).
            # The unreadable file is kept beside it, since the next persist replaces it.
            kept = "" if loaded else self._set_aside()
            log.error("config file %s is %s; %s%s", self.path, main_state,
                      f"loaded its backup {self.bak_path}" if loaded
                      else f"no backup {self.bak_path} either: starting from the defaults", kept)
        elif loaded:
            log.warning("loaded backup %s", self.bak_path)
        return True

    def _set_aside(self) -> str:
        """Rename the unusable file to ``<file>.corrupt`` for its owner to inspect; returns
        what to add to the log line."""
        aside = self.path + ".corrupt"
        try:
            os.replace(self.path, aside)
        except OSError as exc:
            return f" (could not keep it as {aside}: {exc.strerror})"
        return f"; its content is kept in {aside}"

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
