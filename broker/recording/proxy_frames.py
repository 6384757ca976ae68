"""What the recording proxy does to the bytes it relays (``rmq-emu proxy``). Pure: bytes in,
frames and rewritten frames out.

The proxy relays remoting frames unchanged but for one kind: answers that tell a client where
the brokers are. A route (GET_ROUTEINFO_BY_TOPIC) or cluster (GET_BROKER_CLUSTER_INFO) answer
names each broker's ``host:port``; the proxy replaces each with the address of its own port for
that broker, so the client's broker connections come through it too. The address is replaced
where it stands in the body (a JSON string, wherever it occurs: ``brokerAddrs``, the
``filterServerTable`` keys), so the rest of the body keeps the upstream's exact bytes
(fastjson's unquoted keys included).
"""

from __future__ import annotations

from collections.abc import Callable

from rocketmq_emu.broker.recording.plan import broker_addresses
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

__all__ = ["ROUTE_CODES", "rewrite_addresses", "rewritten"]

#: Requests whose successful answer names broker addresses.
ROUTE_CODES = frozenset({RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO})


def rewritten(frame: bytes, to_proxy: Callable[[str], str]) -> bytes:
    """A successful route or cluster answer ``frame`` with its broker addresses replaced by
    ``to_proxy(address)`` (:func:`rewrite_addresses`), encoded again by the codec (header
    fields and serialize type kept); the frame itself when it names none."""
    cmd = RemotingCommand.decode(frame)
    if cmd.code != 0 or not cmd.body:
        return frame
    body = rewrite_addresses(cmd.body, to_proxy)
    if body == cmd.body:
        return frame
    cmd.body = body
    return cmd.encode()


def rewrite_addresses(body: bytes, to_proxy: Callable[[str], str]) -> bytes:
    """``body`` (a route or cluster answer) with every broker address it names replaced by
    ``to_proxy(address)``, as a JSON string, wherever the address occurs."""
    out = body
    for addr in sorted({addr for _, _, addr in broker_addresses(body)}):
        out = out.replace(f'"{addr}"'.encode(), f'"{to_proxy(addr)}"'.encode())
    return out
