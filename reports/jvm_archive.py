"""A class-data archive for the report's Spark JVM (the JDK's dynamic AppCDS), kept in the user's
cache like Python's bytecode cache, so a report's JVM maps Spark's classes instead of loading and
verifying them again.

Measured here (``report all``, 1,000 messages, 2 cores): the driver JVM loads about 15,000
classes, and with the archive a cold ``report all`` took 31 s against 40 s without it, in
alternation. JDK 17 has no ``-XX:+AutoCreateSharedArchive`` (JDK 19), so this module does what
that flag does: the first JVM started without an archive writes one at its exit
(``-XX:ArchiveClassesAtExit``) under a temporary name, and :func:`finish` waits for that JVM to
exit and renames the file into place; every later JVM starts with ``-XX:SharedArchiveFile``. A
missing, stale or damaged archive only means a JVM without one (``-Xshare:auto``); the JDK's
CDS log lines are turned off so none of this prints anything.

The archive belongs to one JVM binary, one pyspark install and one set of JVM options: its name
is a hash of them (:func:`archive_path`). It is about 150 MB.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import time

#: The JDK's CDS messages (a stale archive, classes it skips when dumping) are not the user's.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
#: How long :func:`finish` waits for the JVM to write the archive at its exit.
DUMP_TIMEOUT = 120.0
#: A temporary archive older than this was left by a JVM that died while writing it.
STALE_SECONDS = 3600


def cache_dir() -> str:
    """``$XDG_CACHE_HOME/rocketmq-emu/jvm`` (``~/.cache`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "rocketmq-emu", "jvm")


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(java) if java and os.path.exists(java) else None


def archive_path(jvm_options: str) -> str | None:
    """Where the archive for this JVM, pyspark and ``jvm_options`` lives (None: no JVM found)."""
    java = _java()
    if java is None:
        return None
    import pyspark

    jars = os.path.realpath(os.path.join(os.path.dirname(pyspark.__file__), "jars"))
    key = "|".join((java, str(os.stat(java).st_mtime_ns), pyspark.__version__, jars,
                    jvm_options))
    return os.path.join(cache_dir(), f"spark-{hashlib.sha1(key.encode()).hexdigest()[:16]}.jsa")


class Archive:
    """The archive options of one JVM start: use the archive, or write it at exit."""

    def __init__(self, jvm_options: str) -> None:
        self.path = archive_path(jvm_options)
        self.pending: str | None = None  # the temporary file this JVM writes at its exit

    def options(self) -> str:
        """JVM options to add: the archive to map, or where to write one."""
        # Spark's launcher splits extraJavaOptions at white space (and reads quotes): a path
        # with either goes without an archive rather than break the JVM's command line.
        if self.path is None or any(c.isspace() or c in "'\"\\" for c in self.path):
            return ""
        _remove_stale(self.path)
        if os.path.isfile(self.path):
            return f"-XX:SharedArchiveFile={self.path} {QUIET}"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
        except OSError:
            return ""
        self.pending = f"{self.path}.{os.getpid()}.tmp"
        return f"-XX:ArchiveClassesAtExit={self.pending} {QUIET}"

    def finish(self, proc) -> None:
        """After the session stops: if this JVM writes the archive, end it (its stdin closed is
        PySpark's signal to exit), wait for the dump and move the archive into place."""
        if self.pending is None or proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=DUMP_TIMEOUT)
        except Exception:  # noqa: BLE001 - a JVM that will not end leaves no archive
            return
        if os.path.isfile(self.pending) and proc.returncode == 0:
            os.replace(self.pending, self.path)
        elif os.path.exists(self.pending):
            os.remove(self.pending)


def _remove_stale(path: str) -> None:
    """Remove temporary archives left by JVMs that died while writing them (or whose process
    did not wait for them), and archives of other JVMs, pysparks or options unused for a
    week (their key is in the name: they would never be mapped again if those are gone)."""
    now = time.time()
    directory = os.path.dirname(path)
    for old in glob.glob(os.path.join(glob.escape(directory), "spark-*.jsa")):
        try:
            if old != path and now - os.stat(old).st_atime > 7 * 86400:
                os.remove(old)
        except OSError:
            pass
    for tmp in glob.glob(os.path.join(glob.escape(directory), "spark-*.jsa.*.tmp")):
        try:
            if now - os.stat(tmp).st_mtime > STALE_SECONDS:
                os.remove(tmp)
        except OSError:
            pass
