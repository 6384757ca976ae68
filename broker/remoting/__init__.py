"""RocketMQ remoting protocol: codes, the RemotingCommand codec, typed headers, the Twisted
protocol/dispatcher and the client connection pool.

Import from the submodules (``broker.remoting.command`` etc.); the names below are re-exported
for convenience and are loaded lazily so that the pure codec never pulls in Twisted.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "RequestCode": "broker.remoting.codes",
    "ResponseCode": "broker.remoting.codes",
    "LanguageCode": "broker.remoting.codes",
    "RemotingCommand": "broker.remoting.command",
    "RemotingCommandError": "broker.remoting.command",
    "RemotingProtocol": "broker.remoting.protocol",
    "RemotingServerFactory": "broker.remoting.protocol",
    "RequestDispatcher": "broker.remoting.protocol",
    "RemotingTimeoutError": "broker.remoting.protocol",
    "RemotingConnectionError": "broker.remoting.protocol",
    "DROP": "broker.remoting.protocol",
    "RemotingClient": "broker.remoting.client",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'broker.remoting' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
