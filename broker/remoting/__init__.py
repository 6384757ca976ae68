"""RocketMQ remoting protocol: codes, the RemotingCommand codec, typed headers, the Twisted
protocol/dispatcher and the client connection pool.

Import from the submodules (``rocketmq_emu.broker.remoting.command`` etc.); the names below are re-exported
for convenience and are loaded lazily so that the pure codec never pulls in Twisted.
"""

from __future__ import annotations

from rocketmq_emu.broker.lazy import lazy_getattr

_EXPORTS = {
    "RequestCode": "rocketmq_emu.broker.remoting.codes",
    "ResponseCode": "rocketmq_emu.broker.remoting.codes",
    "LanguageCode": "rocketmq_emu.broker.remoting.codes",
    "RemotingCommand": "rocketmq_emu.broker.remoting.command",
    "RemotingCommandError": "rocketmq_emu.broker.remoting.command",
    "RemotingProtocol": "rocketmq_emu.broker.remoting.protocol",
    "RemotingServerFactory": "rocketmq_emu.broker.remoting.protocol",
    "RequestDispatcher": "rocketmq_emu.broker.remoting.protocol",
    "RemotingTimeoutError": "rocketmq_emu.broker.remoting.protocol",
    "RemotingConnectionError": "rocketmq_emu.broker.remoting.protocol",
    "DROP": "rocketmq_emu.broker.remoting.protocol",
    "RemotingClient": "rocketmq_emu.broker.remoting.client",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr('rocketmq_emu.broker.remoting', _EXPORTS)
