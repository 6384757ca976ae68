"""Which stores a report reads, and the broker each belongs to.

``rmq-emu report --store A --store B`` (or ``--store name=DIR``, or a directory holding one store
per broker) reports over a whole cluster: every store is one broker's ``storePathRootDir``.

The broker name comes from the store where it can be known: ``config/topics.json`` holds the
topic RocketMQ's ``TopicConfigManager`` creates under the broker's own name (``brokerTopicEnable``
makes it writable, it exists either way): one read and one write queue and the ``PERM_INHERIT``
bit, which only TBW102 (``defaultTopicQueueNums`` queues) and the cluster's name topic (16
queues; its ``<cluster>_REPLY_TOPIC`` names it) share. Else the ``name=`` given; else the directory's name. Pure: no Spark.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.configs.topics import AUTO_CREATE_TOPIC_KEY_TOPIC, PERM_INHERIT

TOPICS_FILE = os.path.join("config", "topics.json")
#: A commitlog file's name: its start offset in 20 digits (``UtilAll.offset2FileName``).
_OFFSET_NAME = re.compile(r"^\d{20}$")
#: The store's own sub-directories a data source may be pointed at.
_STORE_PARTS = frozenset({"commitlog", "consumequeue"})


class StoreError(ValueError):
    """A ``--store`` argument that names no usable store (the message says which and why)."""


@dataclass(frozen=True)
class Store:
    """One broker's store: its name (the ``brokerName`` column) and root directory."""

    broker_name: str
    path: str


def is_store_root(path: str) -> bool:
    """Whether ``path`` holds a ``commitlog`` directory."""
    return os.path.isdir(os.path.join(path, "commitlog"))


def holds_store(path: str) -> bool:
    """Whether the directory ``path`` is a store a report can read: a store root (a
    ``commitlog`` directory in it, empty or not: ``DefaultMessageStore`` creates it at start,
    before any message) or a commitlog directory itself (named ``commitlog``, or holding
    files named by their 20-digit start offset, as ``MappedFile`` names them)."""
    if is_store_root(path) or os.path.basename(path.rstrip(os.sep)) == "commitlog":
        return True
    try:
        return any(_OFFSET_NAME.match(n) and os.path.isfile(os.path.join(path, n))
                   for n in os.listdir(path))
    except OSError:
        return False


def broker_name_of(path: str) -> str | None:
    """The broker name ``config/topics.json`` of the store at ``path`` reveals, or None."""
    try:
        with open(os.path.join(path, TOPICS_FILE), "rb") as fh:
            table = (jsonutil.loads(fh.read()) or {}).get("topicConfigTable") or {}
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(table, dict):
        return None
    reply_suffix = "_REPLY_TOPIC"
    clusters = {t[: -len(reply_suffix)] for t in table if t.endswith(reply_suffix)}
    found = []
    for topic, conf in table.items():
        if not isinstance(conf, dict) or topic in clusters \
                or topic == AUTO_CREATE_TOPIC_KEY_TOPIC:
            continue
        perm = conf.get("perm")
        if (isinstance(perm, int) and perm & PERM_INHERIT and conf.get("readQueueNums") == 1
                and conf.get("writeQueueNums") == 1):
            found.append(topic)
    return found[0] if len(found) == 1 else None


def resolve(args: list[str]) -> list[Store]:
    """The stores of ``--store`` arguments: ``DIR``, ``name=DIR``, or a directory whose
    sub-directories are stores (one per broker, in name order). Raises :class:`StoreError`
    for a path that is no directory or holds no store (:func:`holds_store`, itself or in a
    sub-directory), and when two stores get the same broker name. Reads directory listings
    only: a report refuses a wrong ``--store`` before it starts Spark."""
    stores: list[Store] = []
    for arg in args:
        given, sep, path = arg.partition("=")
        if not sep or os.path.isdir(arg):
            given, path = "", arg
        path = os.path.abspath(os.path.expanduser(path))
        if not os.path.exists(path):
            raise StoreError(f"--store {path}: store directory does not exist")
        if not os.path.isdir(path):
            raise StoreError(f"--store {path}: not a directory (give the store's root directory)")
        if holds_store(path):
            stores.append(_store(path, given))
            continue
        subs = [] if given else sorted(
            d for d in os.listdir(path) if is_store_root(os.path.join(path, d)))
        if not subs:
            # An empty report would say nothing about why: a wrong path is the likely cause.
            where = "in it" if given else "in it or in its sub-directories"
            raise StoreError(f"--store {path}: holds no RocketMQ store (no commitlog/ {where})")
        stores.extend(_store(os.path.join(path, d), "") for d in subs)
    names = [s.broker_name for s in stores]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise StoreError(f"two stores with broker name {', '.join(twice)}: name them "
                         "(--store NAME=DIR)")
    return stores


def _store(path: str, given: str) -> Store:
    return Store(broker_name_of(path) or given or os.path.basename(path.rstrip(os.sep)), path)


def local_path(path: str) -> str:
    """``file:///x`` or ``file:/x`` as a local path (readers memory-map local files)."""
    if path.startswith("file:"):
        return "/" + path[len("file:"):].lstrip("/")
    return path


def from_paths(paths: list[str]) -> list[Store]:
    """The stores of data-source paths: a store root, or a directory of store roots (one per
    broker), or anything else a source reads (a commitlog directory or file), named after the
    store holding it where that can be told."""
    stores: list[Store] = []
    for raw in paths:
        path = local_path(raw)
        if is_store_root(path):
            stores.append(_store(path, ""))
            continue
        subs = sorted(d for d in os.listdir(path) if is_store_root(os.path.join(path, d))) \
            if os.path.isdir(path) else []
        if subs:
            stores.extend(_store(os.path.join(path, d), "") for d in subs)
            continue
        if os.path.isdir(path) and os.path.basename(path.rstrip(os.sep)) not in _STORE_PARTS:
            stores.append(_store(path, ""))  # a store with nothing written yet
            continue
        root = os.path.dirname(path.rstrip(os.sep))
        if os.path.isfile(path):
            root = os.path.dirname(root)  # <store>/commitlog/<file>
        name = broker_name_of(root) or os.path.basename(root.rstrip(os.sep)) or "broker"
        stores.append(Store(name, path))
    return stores


def stores_option(options, format_name: str) -> list[Store]:
    """The stores a data source reads: the ``stores`` option, else ``load(path)`` or
    ``load([paths])`` (Spark passes a list as the ``paths`` option, a JSON array)."""
    if options.get("stores"):
        return decode(options["stores"])
    if options.get("paths"):
        return from_paths([str(p) for p in json.loads(options["paths"])])
    if options.get("path"):
        return from_paths([options["path"]])
    raise ValueError(f"{format_name}: load(path) needs a store root or commitlog path")


def encode(stores: list[Store]) -> str:
    """The data sources' ``stores`` option: a JSON list of ``[brokerName, path]``."""
    return json.dumps([[s.broker_name, s.path] for s in stores])


def decode(option: str) -> list[Store]:
    """Inverse of :func:`encode`."""
    return [Store(str(name), str(path)) for name, path in json.loads(option)]
