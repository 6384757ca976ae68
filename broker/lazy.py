"""PEP 562 lazy module attributes: package exports that resolve to their modules on first access
(the pytest plugin loads ``client`` in every run), and ``construct`` specs built on first use."""

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


def lazy_specs(module: str, build: Callable[[], dict[str, Any]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for attributes that ``build()`` makes on first access.

    For the ``construct`` declarations kept as readable specs (tests and tools use them; the
    code reads and writes with ``struct``): importing construct at start costs about 9 ms.
    The first access builds them all into the module, so later lookups are plain attributes.
    Code inside the module must not use them (a global lookup does not reach ``__getattr__``).
    """

    def __getattr__(name: str) -> Any:
        namespace = sys.modules[module].__dict__
        if not name.startswith("__") and "_lazy_specs_built" not in namespace:
            namespace.update(build())
            namespace["_lazy_specs_built"] = True
            if name in namespace:
                return namespace[name]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

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
