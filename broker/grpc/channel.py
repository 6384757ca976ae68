"""The broker's view of a gRPC client (``GrpcClientChannel`` / ``GrpcChannelManager``).

The broker keeps producers and consumers by "channel": for a remoting client that is its TCP
connection; for a 5.x SDK it is one of these, found by client id. Requests the broker sends a
client (``Broker2Client``) arrive at :meth:`GrpcClientChannel.send_oneway`; the 5.x proxy turns
CHECK_TRANSACTION_STATE into a ``RecoverOrphanedTransactionCommand`` on the client's Telemetry
stream (``ProxyChannel`` / ``GrpcClientChannel.processCheckTransaction``) and ignores the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rocketmq_emu.broker.commitlog.record import decode_record
from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.convert import to_grpc_message
from rocketmq_emu.broker.remoting.codes import RequestCode

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TransactionData:
    """``TransactionData``: what END_TRANSACTION needs that the gRPC request lacks."""

    broker_name: str
    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    transaction_id: str


class TransactionDataManager:
    """``TransactionDataManager``: transaction data by (producer group, transaction id)."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], TransactionData] = {}

    def add(self, data: TransactionData) -> None:
        """Remember a half message (at send or at a check-back)."""
        self._data[(data.producer_group, data.transaction_id)] = data

    def poll(self, producer_group: str, transaction_id: str) -> TransactionData | None:
        """Take the data of a transaction (None if unknown)."""
        return self._data.pop((producer_group, transaction_id), None)

    def __len__(self) -> int:
        return len(self._data)


class GrpcClientChannel:
    """One 5.x client as a broker channel; ``telemetry`` is its open Telemetry call (the
    :class:`~rocketmq_emu.broker.grpc.server.ServerCall`) or None."""

    def __init__(self, client_id: str, broker_name: str, peer_addr: str,
                 transactions: TransactionDataManager) -> None:
        self.client_id = client_id
        self.broker_name = broker_name
        self.peer_addr = peer_addr
        host, _, port = peer_addr.rpartition(":")
        #: ``(host, port)`` of the client's connection (what a remoting connection reports).
        self.peer: tuple[str, int] = (host, int(port) if port.isdigit() else 0)
        self.transactions = transactions
        self.telemetry: Any = None
        self._close_callbacks: list[Callable[[Any], None]] = []

    def __repr__(self) -> str:
        return f"GrpcClientChannel({self.client_id!r}, {self.broker_name!r})"

    @property
    def closed(self) -> bool:
        """``isActive()`` is false without a Telemetry stream."""
        return self.telemetry is None

    def add_close_callback(self, fn: Callable[[Any], None]) -> None:
        """Run ``fn(self)`` when the client goes away (its Telemetry stream ends)."""
        self._close_callbacks.append(fn)

    def telemetry_ended(self, call: Any) -> None:
        """The Telemetry call ``call`` ended: the channel is inactive unless a newer one runs."""
        if self.telemetry is call:
            self.telemetry = None
            callbacks, self._close_callbacks = self._close_callbacks, []
            for fn in callbacks:
                try:
                    fn(self)
                except Exception:
                    log.exception("close callback of %r failed", self)

    def write_telemetry(self, command: Any) -> bool:
        """``writeTelemetryCommand``: False (logged) when there is no stream to write to."""
        call = self.telemetry
        if call is None or call.cancelled:
            log.warning("telemetry command observer is null when try to write data. channel:%r",
                        self)
            return False
        call.send(command)
        return True

    def send_oneway(self, cmd: Any) -> None:
        """A request from the broker to this client."""
        if cmd.code == RequestCode.CHECK_TRANSACTION_STATE:
            self._check_transaction(cmd)

    def _check_transaction(self, cmd: Any) -> None:
        ext = cmd.ext_fields
        record = decode_record(cmd.body)
        transaction_id = ext.get("transactionId") or ext.get("msgId") or ""
        self.transactions.add(TransactionData(
            broker_name=self.broker_name,
            producer_group=record.properties.get("PGROUP", record.topic),
            tran_state_table_offset=int(ext.get("tranStateTableOffset", "0")),
            commit_log_offset=int(ext.get("commitLogOffset", "0")),
            transaction_id=transaction_id,
        ))
        command = messages.message_class("TelemetryCommand")()
        recover = command.recover_orphaned_transaction_command
        recover.transaction_id = transaction_id
        recover.message.CopyFrom(to_grpc_message(record))
        self.write_telemetry(command)


class InvocationChannel:
    """The "connection" a request the proxy dispatches to a broker comes from (the proxy's
    per-invocation ``SimpleChannel``): the client's address, and closed when the gRPC call it
    serves is cancelled, so a POP parked for a ReceiveMessage is let go with its call."""

    def __init__(self, peer_addr: str, client_id: str, call: Any = None) -> None:
        self.peer_addr = peer_addr
        host, _, port = peer_addr.rpartition(":")
        #: ``(host, port)`` as a remoting connection reports it (the send path's bornHost).
        self.peer: tuple[str, int] = (host, int(port) if port.isdigit() else 0)
        self.client_id = client_id
        self.call = call

    def __repr__(self) -> str:
        return f"InvocationChannel({self.peer_addr!r}, {self.client_id!r})"

    @property
    def closed(self) -> bool:
        """Whether the call this invocation serves is over (cancelled)."""
        return self.call is not None and self.call.cancelled

    def add_close_callback(self, fn: Callable[[Any], None]) -> None:
        """Run ``fn(self)`` if the call is cancelled."""
        if self.call is not None:
            self.call.add_cancel_callback(lambda _call: fn(self))

    def send_oneway(self, cmd: Any) -> None:
        """Nothing reaches a client through an invocation (the broker writes to a client's
        registered :class:`GrpcClientChannel`)."""


class ChannelManager:
    """``GrpcChannelManager``: a channel per (client id, broker name)."""

    def __init__(self, transactions: TransactionDataManager) -> None:
        self.transactions = transactions
        self._channels: dict[tuple[str, str], GrpcClientChannel] = {}

    def channel(self, client_id: str, broker_name: str, peer_addr: str) -> GrpcClientChannel:
        """``createChannel``: the client's channel to a broker (made on first use)."""
        key = (client_id, broker_name)
        channel = self._channels.get(key)
        if channel is None:
            channel = self._channels[key] = GrpcClientChannel(client_id, broker_name, peer_addr,
                                                             self.transactions)
        return channel

    def channels_of(self, client_id: str) -> list[GrpcClientChannel]:
        """Every channel of a client."""
        return [c for (cid, _), c in self._channels.items() if cid == client_id]

    def remove(self, client_id: str) -> list[GrpcClientChannel]:
        """``removeChannel``: forget a client; returns its channels."""
        keys = [k for k in self._channels if k[0] == client_id]
        return [self._channels.pop(k) for k in keys]
