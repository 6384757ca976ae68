"""Binds a store's ``put_message`` to the C put path (``rocketmq_emu.broker._native._store.PutPath``) when
the extension is built (and ``RMQ_EMU_NO_NATIVE`` is not set).

The C path handles the plain case of one put (IPv4 hosts, room in the commitlog's and the
consume queue's last files, topic / host pair / queue already seen, str properties, not the
schedule topic, not a PREPARED / ROLLBACK record) and writes the same bytes and the same
Python attributes as :meth:`MessageStore.put_message`, which it calls for every other case.
The tests run both paths over the same records and compare the files byte for byte.
"""

from __future__ import annotations

import logging
import sys

from rocketmq_emu.broker import _native
from rocketmq_emu.broker.commitlog.bodycrc import crc32
from rocketmq_emu.broker.commitlog.mapped_file import MappedFile
from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.commitlog.results import (
    AppendMessageResult,
    AppendMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)
from rocketmq_emu.broker.message import RMQ_SYS_SCHEDULE_TOPIC

log = logging.getLogger(__name__)


def listener_failed(fn, exc: BaseException) -> None:
    """Log an arrival listener's exception, as ``StoreDispatch._dispatch`` does (C calls it)."""
    log.error("arrival listener %r failed", fn, exc_info=exc)


def _crc32_library() -> str | None:
    """The shared library of zlib-ng's Python module when it provides ``crc32``: the C path
    calls its ``zng_crc32`` directly (after checking it agrees with ``crc32``)."""
    module = sys.modules.get(getattr(crc32, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    return path if path and path.endswith(".so") else None


def bind_native_put(store, python_put) -> bool:
    """Make ``store.put_message`` the C put path with ``python_put`` (the Python
    ``put_message`` bound to ``store``) as its fallback. False (nothing changed) when the
    extension is not available."""
    native = _native.store
    if native is None:
        return False
    path = native.PutPath(
        store, python_put, crc32, AppendMessageResult, PutMessageResult,
        AppendMessageStatus.PUT_OK, PutMessageStatus.PUT_OK, RMQ_SYS_SCHEDULE_TOPIC,
        listener_failed, MessageRecord, MappedFile, _crc32_library(),
    )
    store.put_message = path.put
    return True


def native_put_active(store) -> bool:
    """True when ``store.put_message`` is the C put path."""
    return type(getattr(store, "put_message", None)).__name__ == "builtin_function_or_method"
