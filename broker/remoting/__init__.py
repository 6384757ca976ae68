"""RocketMQ remoting protocol: codes, the RemotingCommand codec, typed headers, the Twisted
protocol/dispatcher and the client connection pool.

Import from the submodules (``broker.remoting.command`` etc.); the names below are re-exported
for convenience and are loaded lazily so that the pure codec never pulls in Twisted.
"""

from __future__ import annotations

from broker.lazy import lazy_getattr

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


__getattr__ = lazy_getattr('broker.remoting', _EXPORTS)
