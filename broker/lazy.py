"""Lazy imports: PEP 562 package exports that resolve to their modules on first access (the
pytest plugin loads ``client`` in every run), and modules loaded on their first attribute
access (:func:`lazy_import`).

(``construct`` is no longer deferred: the byte layouts' structs are derived from their construct
declarations at import, :mod:`rocketmq_emu.broker.layout`.)"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import Any


def lazy_getattr(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving ``exports`` (name -> module) for ``package``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__


def lazy_import(name: str) -> Any:
    """``name``'s module, loaded on its first attribute access (``importlib.util.LazyLoader``).

    For a dependency whose import costs start time the start may not need: ``crc32c`` imports
    ``importlib.metadata`` (about 8 ms), and only a store with timer files reads it at start.
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
