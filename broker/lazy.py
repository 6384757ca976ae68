"""PEP 562 lazy package exports: names resolve to their modules on first access, so importing a
package (the pytest plugin loads ``client`` in every run) costs nothing until a name is used."""

from __future__ import annotations

import importlib
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
