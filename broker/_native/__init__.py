"""Optional C accelerators (built by ``pip install -e .`` from ``setup.py``).

``store`` and ``send`` are the compiled modules, or None where they were not built or
``RMQ_EMU_NO_NATIVE=1`` is set: every caller keeps a pure-Python path producing the same bytes,
and the tests run both.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

log = logging.getLogger(__name__)

DISABLED = os.environ.get("RMQ_EMU_NO_NATIVE", "") not in ("", "0")


def _load(name: str) -> ModuleType | None:
    if DISABLED:
        return None
    try:
        return importlib.import_module(f"rocketmq_emu.broker._native._{name}")
    except ImportError as exc:
        log.debug("C accelerator %s not available (%s): pure-Python path", name, exc)
        return None


store = _load("store")
send = _load("send")
