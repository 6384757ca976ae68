"""Typed custom headers: ``Header.from_ext_fields(cmd.ext_fields)`` and ``h.to_ext_fields()``.

See :mod:`rocketmq_emu.broker.remoting.headers.base` for how values are parsed (Java semantics).
The POP headers (:mod:`~rocketmq_emu.broker.remoting.headers.pop`) load on first access, so that
``rmq-emu up`` does not import them until something serves POP.
"""

from rocketmq_emu.broker.lazy import lazy_getattr
from rocketmq_emu.broker.remoting.headers.admin import *  # noqa: F403
from rocketmq_emu.broker.remoting.headers.admin import __all__ as _admin_all
from rocketmq_emu.broker.remoting.headers.base import (
    BOOL,
    INT,
    LONG,
    STR,
    CommandHeader,
    HeaderError,
    header,
    opt,
    parse_java_bool,
    parse_java_int,
    req,
)
from rocketmq_emu.broker.remoting.headers.messaging import *  # noqa: F403
from rocketmq_emu.broker.remoting.headers.messaging import __all__ as _messaging_all

#: Names of :mod:`~rocketmq_emu.broker.remoting.headers.pop`, resolved by ``__getattr__``.
_POP = "rocketmq_emu.broker.remoting.headers.pop"
_LAZY = {
    name: _POP
    for name in (
        "AckMessageRequestHeader",
        "ChangeInvisibleTimeRequestHeader",
        "ChangeInvisibleTimeResponseHeader",
        "NotificationRequestHeader",
        "NotificationResponseHeader",
        "PeekMessageRequestHeader",
        "PollingInfoRequestHeader",
        "PollingInfoResponseHeader",
        "PopMessageRequestHeader",
        "PopMessageResponseHeader",
    )
}
__getattr__ = lazy_getattr("rocketmq_emu.broker.remoting.headers", _LAZY)

__all__ = [
    "BOOL",
    "INT",
    "LONG",
    "STR",
    "CommandHeader",
    "HeaderError",
    "header",
    "opt",
    "parse_java_bool",
    "parse_java_int",
    "req",
    *_admin_all,
    *_messaging_all,
    *_LAZY,
]
