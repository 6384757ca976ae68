"""The conformance monitor: watches every request a cluster's servers read and records findings.

The Twisted edge of :mod:`rocketmq_emu.broker.conformance`. A :class:`ConformanceMonitor` is
one of the cluster's dispatcher hooks (``attach(target, dispatcher, name)`` / ``detach(name)``,
:class:`rocketmq_emu.broker.cluster.DispatcherHooks`): it observes each request dispatcher as
its server comes and goes (and the gRPC endpoint's calls), runs the pure rules
(:mod:`.request_rules`, :mod:`.message_rules`, :mod:`.grpc_rules`,
:mod:`.session_rules`) on each request and keeps what they find in :attr:`findings`. It only
observes: no request is changed, delayed or refused.

Time-only findings (a heartbeat never sent, a check-back never answered) are evaluated when
someone looks (:meth:`ConformanceMonitor.snapshot`) and on every request, so the monitor owns
no timer.

Pay for what is used: the rules and the findings log are imported by the first request judged
(or the first look at the findings), so a cluster no client has talked to has loaded none of
them; the gRPC rules come with the first gRPC call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.dispatcher import RequestDispatcher, RequestEvent
from rocketmq_emu.broker.remoting.protocol import RemotingProtocol

if TYPE_CHECKING:
    from rocketmq_emu.broker.conformance.findings import Client, Findings, Observation
    from rocketmq_emu.broker.conformance.session_rules import MaxOffset, SessionRules

log = logging.getLogger(__name__)

SEND_CODES = frozenset({
    RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2,
})
#: What a broker sends its name server: not client traffic.
BROKER_TO_NAMESRV = frozenset({
    RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.QUERY_DATA_VERSION,
})
#: A broker's store: ``max_offset(topic, queue_id)`` or None.
StoreOf = Callable[[str], Any]


class ConformanceMonitor:
    """Records the conformance findings of every client of a cluster (see module docstring).

    ``store_of(broker_name)`` gives a broker's message store (for offset rules; None skips
    them); ``max_message_size`` is the brokers' ``maxMessageSize``.
    """

    def __init__(self, clock: Any, store_of: StoreOf | None = None,
                 max_message_size: int = 4 * 1024 * 1024) -> None:
        self.clock = clock
        self.store_of = store_of
        self.max_message_size = max_message_size
        self._findings: Findings | None = None
        self._attached: dict[str, list[tuple[RequestDispatcher, Any, Any]]] = {}
        self._sessions: dict[str, SessionRules] = {}
        #: The client of each open connection (by ``id(conn)``).
        self._clients: dict[int, Client] = {}
        self._check_call: Callable[..., list[Observation]] | None = None
        # The remoting rules, imported by the first request judged (_load_rules).
        self._check_request: Callable[..., list[Observation]] | None = None
        self._check_send: Callable[..., list[Observation]] | None = None
        self._client_type: Any = None
        self._error = ""

    @property
    def findings(self) -> Findings:
        """The findings log (:class:`~.findings.Findings`)."""
        if self._findings is None:
            from rocketmq_emu.broker.conformance.findings import Findings

            self._findings = Findings()
        return self._findings

    def _load_rules(self) -> None:
        """Import the remoting rules: at the first request one judges, not at start."""
        from rocketmq_emu.broker.conformance.findings import ERROR, Client
        from rocketmq_emu.broker.conformance.message_rules import check_send
        from rocketmq_emu.broker.conformance.request_rules import check_request

        self._client_type, self._error = Client, ERROR
        self._check_send = check_send
        self._check_request = check_request

    def _session_rules(self, key: str) -> SessionRules:
        """The session rules of the broker attached as ``key`` (made at its first request)."""
        sessions = self._sessions.get(key)
        if sessions is None:
            from rocketmq_emu.broker.conformance.session_rules import SessionRules

            sessions = self._sessions[key] = SessionRules()
        return sessions

    # --- hooks ---------------------------------------------------------------------------
    def attach(self, target: str, dispatcher: Any, name: str | None = None) -> None:
        """Observe ``dispatcher`` (a remoting dispatcher, or the gRPC endpoint's factory)."""
        key = name or target
        if target == "grpc" and hasattr(dispatcher, "add_observer"):
            # The gRPC rules (they import the gRPC conversions) come with the first call.
            dispatcher.add_observer(self._on_grpc_call)
            self._attached.setdefault(key, []).append((dispatcher, self._on_grpc_call, None))
            return
        if not isinstance(dispatcher, RequestDispatcher):
            return
        if target == "broker":
            max_offset = self._max_offset(key)

            def on_close(conn_key: int) -> None:
                closed = self._clients.pop(conn_key, None)
                if closed is not None:
                    now = self._now_ms()
                    self._record(closed, self._session_rules(key).on_close(conn_key, now), now)

            def observe(event: RequestEvent) -> None:
                self._on_broker_request(key, max_offset, on_close, event)

            def pushed(cmd: RemotingCommand, conn: Any) -> None:
                if cmd.code == RequestCode.CHECK_TRANSACTION_STATE:
                    self._session_rules(key).on_check_sent(id(conn), cmd.ext_fields,
                                                           self._now_ms())
        else:
            def observe(event: RequestEvent) -> None:
                self._on_namesrv_request(event)

            pushed = None
        dispatcher.add_observer(observe)
        if pushed is not None:
            dispatcher.push_observers.append(pushed)
        self._attached.setdefault(key, []).append((dispatcher, observe, pushed))

    def detach(self, name: str) -> None:
        """Stop observing the dispatchers attached under ``name``."""
        for dispatcher, observe, pushed in self._attached.pop(name, []):
            dispatcher.remove_observer(observe)
            if pushed is not None and pushed in dispatcher.push_observers:
                dispatcher.push_observers.remove(pushed)

    # --- reading -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The findings as JSON (``Findings.to_json``), time-only rules evaluated now."""
        self._overdue()
        return self.findings.to_json()

    def clear(self) -> dict[str, bool]:
        """Forget every finding (clients keep being watched)."""
        self.findings.clear()
        return {"ok": True}

    # --- observing -----------------------------------------------------------------------
    def _now_ms(self) -> int:
        return int(self.clock.seconds() * 1000)

    def _client(self, event: RequestEvent, on_close: Callable[[int], None]) -> Client:
        """Who sent ``event``; findings made before the client named itself (its ``clientID``)
        move to its id. ``on_close(key)`` runs when the connection closes."""
        conn = event.conn
        key = id(conn)
        cmd = event.command
        known = self._clients.get(key)
        client_id = getattr(conn, "client_id", None)
        if known is not None and known.language == cmd.language \
                and known.version == cmd.version \
                and (client_id is None or client_id == known.client_id):
            return known  # the common case: the same client as before on this connection
        address = getattr(conn, "peer_addr", None) or f"{event.peer[0]}:{event.peer[1]}"
        client = self._client_type(client_id or address, address, cmd.language, cmd.version)
        if known is None:
            if hasattr(conn, "add_close_callback"):
                conn.add_close_callback(lambda _conn: on_close(key))
        elif known.client_id != client.client_id:
            self.findings.rename_client(address, client)
        self._clients[key] = client
        self.findings.note_client(client)
        return client

    def _record(self, client: Client, found: list[Observation], now_ms: int) -> None:
        for obs in found:
            finding = self.findings.add(client, obs, now_ms)
            if finding.count == 1 and obs.severity == self._error:
                # INFO: what the real broker misreads is already a warning where it happens
                # (the send processor, the dispatcher); this names the finding once.
                log.info("conformance: %s %s (%s): %s", client.language, client.client_id,
                         obs.field, obs.message)

    def _on_namesrv_request(self, event: RequestEvent) -> None:
        cmd = event.command
        if cmd.code in BROKER_TO_NAMESRV:
            return
        if self._check_request is None:
            self._load_rules()
        client = self._client(event, self._forget)
        self._record(client, self._check_request(cmd.code, cmd.language, cmd.version,
                                           cmd.serialize_type, cmd.ext_fields, cmd.json_types),
                     int(event.time * 1000))

    def _forget(self, key: int) -> None:
        self._clients.pop(key, None)

    def _on_broker_request(self, key: str, max_offset: MaxOffset | None,
                           on_close: Callable[[int], None], event: RequestEvent) -> None:
        if not isinstance(event.conn, RemotingProtocol):
            # A request the gRPC proxy makes for a 5.x SDK (POP_MESSAGE for a
            # ReceiveMessage...): the SDK did not send it; the gRPC observer judges its call.
            return
        if self._check_request is None:
            self._load_rules()
        sessions = self._session_rules(key)
        cmd = event.command
        code = cmd.code
        now_ms = int(event.time * 1000)
        client = self._client(event, on_close)
        found = self._check_request(code, cmd.language, cmd.version, cmd.serialize_type,
                                    cmd.ext_fields, cmd.json_types)
        if code in SEND_CODES:
            found += self._check_send(code, cmd.ext_fields, cmd.body, self.max_message_size)
        found += sessions.on_request(id(event.conn), code, cmd.ext_fields, cmd.body, now_ms,
                                     max_offset)
        if found:
            self._record(client, found, now_ms)

    def _on_grpc_call(self, event: Any) -> None:
        """A call of a 5.x SDK (``CallEvent``): its client from the ``x-mq-*`` metadata."""
        if self._check_call is None:
            from rocketmq_emu.broker.conformance.grpc_rules import check_call

            self._check_call = check_call
            if self._check_request is None:
                self._load_rules()
        headers = event.metadata.mq_headers
        address = f"{event.peer[0]}:{event.peer[1]}"
        client = self._client_type(headers.get("x-mq-client-id") or address, address,
                        str(headers.get("x-mq-language", "?")).upper(),
                        headers.get("x-mq-client-version", ""))
        self.findings.note_client(client)
        now_ms = int(event.time * 1000)
        self._record(client, self._check_call(event.rpc, headers, event.request, now_ms), now_ms)

    def _max_offset(self, name: str) -> MaxOffset | None:
        if self.store_of is None:
            return None
        store_of = self.store_of

        def max_offset(topic: str, queue_id: int) -> int | None:
            store = store_of(name)
            if store is None:
                return None
            try:
                return int(store.get_max_offset_in_queue(topic, queue_id))
            except Exception:
                return None

        return max_offset

    def _overdue(self) -> None:
        now_ms = self._now_ms()
        for sessions in list(self._sessions.values()):
            for key, obs in sessions.overdue(now_ms):
                client = self._clients.get(key)  # type: ignore[call-overload]
                if client is not None:
                    self._record(client, [obs], now_ms)
