"""Fault injection and request recording for testing client libraries.

A :class:`FaultInjector` hooks into one or more :class:`rocketmq_emu.broker.remoting.protocol.RequestDispatcher`
objects (the broker's and the name server's) through their interceptor and observer hooks:

* every incoming request is recorded (:class:`RequestRecord`: target, code, name, ext fields,
  body size, peer, broker-clock time and wall time), and, once answered, the response code and
  latency;
* rules (:class:`FaultRule`) match by target ("broker" = every broker, "namesrv", "grpc", "any",
  or one broker by its name) and request code (RPC name for gRPC calls) and act:

  ``drop``           the request is swallowed: not processed, never answered (client times out);
  ``drop_response``  the request is processed (a message IS stored) but no answer is sent;
  ``delay``          the request is processed and the answer sent ``delay`` seconds late;
  ``error``          answered at once with ``error_code`` (SYSTEM_BUSY, FLUSH_DISK_TIMEOUT, ...)
                     without processing;
  ``close``          the connection is closed instead of processing.

  ``times`` limits how many requests a rule hits (None: every one); the first matching rule with
  hits left wins.

gRPC calls (RocketMQ 5's MessagingService, target "grpc") are hooked on the
:class:`rocketmq_emu.broker.grpc.server.GrpcServerFactory` (its interceptor and observer) and
recorded with their RPC name (``rpc``/``name`` "SendMessage", ``code`` 0), peer and client id.
Rules name RPCs (``rpcs``; a code list may mix RPC names and request codes); a rule naming only RPCs
targets "grpc" unless told otherwise, and a rule naming neither codes nor RPCs hits gRPC calls only
when its target is "grpc" or "any". What each action does to a gRPC call is told in
:mod:`rocketmq_emu.client.faults_grpc`, which holds the gRPC side (RPC names, status vocabularies,
the hooks on the GrpcServerFactory; its parsers are re-exported here).

A gRPC call is also converted into the broker's remoting requests (the proxy in Local mode), which
the broker's dispatcher records and faults as any remoting client's (target "broker").

Connection-level faults (stop/restart the broker, unreachable/reachable) live on
:class:`rocketmq_emu.broker.cluster.Cluster`, which owns the listening ports (the harness and
the control API both drive it).

:class:`FaultRule`, :class:`RequestRecord` and the code parsers live in
:mod:`rocketmq_emu.client.fault_rules` (the gRPC side needs them too) and are re-exported here.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, task

from rocketmq_emu.broker.remoting.codes import ResponseCode, request_name
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import (
    DROP,
    RequestDispatcher,
    RequestEvent,
    error_response,
    is_deferred,
)
from rocketmq_emu.client.fault_rules import (
    ACTIONS,
    TARGETS,
    FaultRule,
    RequestRecord,
    code_name,
    parse_code,
    parse_response_code,
)
from rocketmq_emu.client.faults_grpc import (
    GrpcFaults,
    grpc_rpc_names,
    parse_grpc_status,
    parse_rpc,
    parse_status_code,
)

__all__ = ["ACTIONS", "TARGETS", "FaultInjector", "FaultRule", "RequestRecord", "grpc_rpc_names",
           "parse_code", "parse_grpc_status", "parse_response_code", "parse_rpc",
           "parse_status_code"]

log = logging.getLogger(__name__)


@dataclass
class _Attachment:
    target: str
    name: str
    dispatcher: Any  # a RequestDispatcher or a GrpcServerFactory
    interceptor: Any
    observer: Any


class FaultInjector:
    """Rules plus a bounded request log for the dispatchers it is attached to.

    ``reactor`` times delays in wall time (not the controllable clock); ``clock`` (default: the
    reactor) stamps gRPC calls' records (a remoting record has its dispatcher's clock). Methods must
    be called in the reactor thread, except :meth:`records` and :meth:`rules` which only read.
    """

    def __init__(self, reactor: Any = None, max_records: int = 100_000, *,
                 clock: Any = None) -> None:
        if reactor is None:
            from twisted.internet import reactor as default_reactor

            reactor = default_reactor
        self.reactor = reactor
        self.clock = clock
        self._rules: list[FaultRule] = []
        self._ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._records: deque[RequestRecord] = deque(maxlen=max_records)
        self._attached: list[_Attachment] = []
        self._lock = threading.Lock()
        self.recording = True
        self._grpc = GrpcFaults(self)

    # --- attachment ---------------------------------------------------------------------------
    def attach(self, target: str, dispatcher: Any, name: str | None = None) -> None:
        """Hook into ``dispatcher`` as ``target``: "broker" or "namesrv" (a RequestDispatcher;
        ``name`` is the broker's name, rules may target one broker by it) or "grpc" (a
        GrpcServerFactory; detached by the name "grpc")."""
        if target == "grpc":
            self._attach_grpc(dispatcher, name or "grpc")
            return
        if target not in ("broker", "namesrv"):
            raise ValueError(f"target must be broker, namesrv or grpc, got {target!r}")
        server = name or target

        def interceptor(cmd: RemotingCommand, conn: Any) -> Any:
            return self._intercept(target, server, dispatcher, interceptor, cmd, conn)

        def observer(event: RequestEvent) -> None:
            self._observe(target, server, event)

        dispatcher.add_interceptor(interceptor)
        dispatcher.add_observer(observer)
        self._attached.append(_Attachment(target, server, dispatcher, interceptor, observer))

    def _attach_grpc(self, factory: Any, server: str) -> None:
        interceptor, observer = self._grpc.hooks(factory, server)
        factory.add_interceptor(interceptor)
        factory.add_observer(observer)
        self._attached.append(_Attachment("grpc", server, factory, interceptor, observer))

    def detach(self, name: str) -> None:
        """Remove the hooks of the server called ``name`` (a broker's name or "namesrv")."""
        for a in [a for a in self._attached if a.name == name]:
            a.dispatcher.remove_interceptor(a.interceptor)
            a.dispatcher.remove_observer(a.observer)
            self._attached.remove(a)

    def detach_all(self) -> None:
        """Remove every hook."""
        for a in self._attached:
            a.dispatcher.remove_interceptor(a.interceptor)
            a.dispatcher.remove_observer(a.observer)
        self._attached.clear()

    # --- rules --------------------------------------------------------------------------------
    def add_rule(self, action: str, codes: Iterable[int | str] | int | str | None = None, *,
                 target: str | None = None, delay: float = 0.0,
                 error_code: int | str = ResponseCode.SYSTEM_BUSY, remark: str | None = None,
                 times: int | None = None, rpcs: Iterable[str] | str | None = None,
                 grpc_status: int | str | None = None,
                 status_code: int | str | None = None) -> FaultRule:
        """Add a rule (see module docstring); returns it (its ``id`` removes it).

        ``codes`` are request codes or names and may include MessagingService RPC names
        ("SendMessage"), which join ``rpcs``. ``target`` defaults to "grpc" for a rule naming only
        RPCs, else "broker". ``grpc_status`` / ``status_code`` shape an error answer to a gRPC call.
        """
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}, got {action!r}")
        if target is not None and (not target or not isinstance(target, str)):
            raise ValueError(f"target must be one of {TARGETS} or a broker name, got {target!r}")
        code_set, rpc_set = self._selectors(codes, rpcs)
        if target is None:
            target = "grpc" if rpc_set is not None and code_set is None else "broker"
        if target == "grpc" and code_set is not None:
            raise ValueError("gRPC calls are matched by RPC name (SendMessage, ...), "
                             f"not request codes: {sorted(code_set)}")
        if rpc_set is not None and target not in ("grpc", "any"):
            raise ValueError(f"a rule naming RPCs targets grpc or any, not {target!r}")
        if action == "delay" and delay <= 0:
            raise ValueError("a delay rule needs delay > 0 seconds")
        if times is not None and times < 1:
            raise ValueError("times must be >= 1 (or None for every request)")
        rule = FaultRule(next(self._ids), action, code_set, target, float(delay),
                         parse_response_code(error_code), remark, times, rpcs=rpc_set,
                         grpc_status=parse_grpc_status(grpc_status) if grpc_status is not None else None,
                         status_code=parse_status_code(status_code) if status_code is not None else None)
        with self._lock:
            self._rules.append(rule)
        return rule

    @staticmethod
    def _selectors(codes: Any, rpcs: Any) -> tuple[frozenset[int] | None, frozenset[str] | None]:
        """(request codes, RPC names) from ``codes`` (which may hold RPC names) and ``rpcs``."""
        code_set: set[int] | None = None
        rpc_set: set[str] | None = None
        if codes is not None:
            items = [codes] if isinstance(codes, (int, str)) else list(codes)
            named = {rpc for item in items if (rpc := parse_rpc(item)) is not None}
            others = [item for item in items if parse_rpc(item) is None]
            if named:
                rpc_set = named
            if others or not named:  # an empty list matches no request code
                code_set = {parse_code(item) for item in others}
        if rpcs is not None:
            for item in [rpcs] if isinstance(rpcs, str) else list(rpcs):
                rpc = parse_rpc(item)
                if rpc is None:
                    raise ValueError(f"unknown gRPC RPC {item!r} (one of {list(grpc_rpc_names())})")
                rpc_set = (rpc_set or set()) | {rpc}
        return (frozenset(code_set) if code_set is not None else None,
                frozenset(rpc_set) if rpc_set is not None else None)

    def drop(self, codes: Any = None, **kw: Any) -> FaultRule:
        """Swallow matching requests (no processing, no answer)."""
        return self.add_rule("drop", codes, **kw)

    def drop_response(self, codes: Any = None, **kw: Any) -> FaultRule:
        """Process matching requests but send no answer."""
        return self.add_rule("drop_response", codes, **kw)

    def delay(self, codes: Any, seconds: float, **kw: Any) -> FaultRule:
        """Process matching requests and answer ``seconds`` late."""
        return self.add_rule("delay", codes, delay=seconds, **kw)

    def error(self, codes: Any, error_code: int | str = ResponseCode.SYSTEM_BUSY,
              remark: str | None = None, **kw: Any) -> FaultRule:
        """Answer matching requests with ``error_code`` without processing them."""
        return self.add_rule("error", codes, error_code=error_code, remark=remark, **kw)

    def close_connection(self, codes: Any = None, **kw: Any) -> FaultRule:
        """Close the connection a matching request arrives on."""
        return self.add_rule("close", codes, **kw)

    def remove(self, rule_id: int) -> bool:
        """Remove a rule by id; False if there was none."""
        with self._lock:
            for r in self._rules:
                if r.id == rule_id:
                    self._rules.remove(r)
                    return True
        return False

    def clear(self) -> None:
        """Remove every rule."""
        with self._lock:
            self._rules.clear()

    def rules(self) -> list[FaultRule]:
        """The current rules (copies are not made: treat as read-only)."""
        with self._lock:
            return list(self._rules)

    # --- records ------------------------------------------------------------------------------
    def records(self, code: int | str | None = None, target: str | None = None,
                since: int = 0, limit: int | None = None,
                keep: Callable[[RequestRecord], bool] | None = None) -> list[RequestRecord]:
        """Recorded requests, optionally of one code or RPC name ("SendMessage") / target
        ("broker", "namesrv", "grpc" or a broker's name) / for which ``keep`` holds, with
        ``seq > since``, oldest first; with ``limit``, only the newest ``limit`` of them (read
        from the newest back: a page polling a full log of 100,000 records reads few)."""
        rpc = parse_rpc(code)
        want = parse_code(code) if code is not None and rpc is None else None

        def wanted(r: RequestRecord) -> bool:
            return ((want is None or (r.code == want and r.rpc is None))
                    and (rpc is None or r.rpc == rpc)
                    and (target is None or target in (r.target, r.server))
                    and (keep is None or keep(r)))

        with self._lock:
            if limit is None:
                recs = [r for r in self._records if r.seq > since and wanted(r)]
            else:
                recs = []
                for r in reversed(self._records):  # seq grows along the log
                    if r.seq <= since or len(recs) >= limit:
                        break
                    if wanted(r):
                        recs.append(r)
                recs.reverse()
        return [r.refresh() for r in recs]

    def clear_records(self) -> None:
        """Forget recorded requests."""
        with self._lock:
            self._records.clear()
        self._grpc.clear()

    def reset(self) -> None:
        """Remove rules and records."""
        self.clear()
        self.clear_records()

    # --- hooks --------------------------------------------------------------------------------
    def _observe(self, target: str, server: str, event: RequestEvent) -> None:
        if not self.recording:
            return
        # Positional and without copies (ext_fields is the request's own dict, which nothing
        # changes after decoding): this runs for every request of `rmq-emu up --control-port`.
        peer = event.peer
        rec = RequestRecord(
            next(self._seq), target, server, event.code, request_name(event.code), event.opaque,
            bool(event.flag & 2), event.ext_fields, event.body_len, f"{peer[0]}:{peer[1]}",
            event.time, time.time())
        with self._lock:
            self._records.append(rec)
        # Remember it on the connection so the interceptor can stamp the outcome.
        pending = getattr(event.conn, "_rmq_emu_records", None)
        if pending is None:
            pending = {}
            try:
                event.conn._rmq_emu_records = pending
            except AttributeError:
                return
        pending[event.opaque] = rec

    def _add_record(self, *, call: Any = None, **fields: Any) -> RequestRecord:
        """Log a request: a :class:`RequestRecord` of ``fields`` with the next ``seq`` and the wall
        time; ``call`` (a gRPC call's ServerCall) is read by :meth:`RequestRecord.refresh`."""
        rec = RequestRecord(seq=next(self._seq), wall=time.time(), call=call, **fields)
        with self._lock:
            self._records.append(rec)
        return rec

    def _record_for(self, conn: Any, cmd: RemotingCommand) -> RequestRecord | None:
        pending = getattr(conn, "_rmq_emu_records", None)
        return pending.pop(cmd.opaque, None) if pending else None

    def _hit(self, applies: Callable[[FaultRule], bool]) -> FaultRule | None:
        """The first rule that ``applies`` (its hit counted), or None."""
        with self._lock:
            for rule in self._rules:
                if applies(rule):
                    rule.hits += 1
                    return rule
        return None

    def _intercept(self, target: str, server: str, dispatcher: RequestDispatcher, me: Any,
                   cmd: RemotingCommand, conn: Any) -> Any:
        rec = self._record_for(conn, cmd)
        start = time.monotonic()
        rule = self._hit(lambda r: r.matches(target, cmd.code, server)) if self._rules else None
        if rule is None:
            # No fault: the rest of the chain runs here, without a Deferred unless it makes one
            # (a Deferred per request doubled the CPU of a send, bench/send_pull.py --control).
            resp = dispatcher.proceed(cmd, conn, me)
            if is_deferred(resp):
                return resp.addCallback(self._answered, rec, start, None)
            return self._answered(resp, rec, start, None)
        log.info("fault %s (rule %d) on %s %d from %s", rule.action, rule.id, target, cmd.code,
                 getattr(conn, "peer_addr", "?"))
        if rec is not None:
            rec.fault = rule.action
        if rule.action in ("drop_response", "delay"):
            # Run the rest of the chain ourselves to see (and shape) the answer.
            d = defer.maybeDeferred(dispatcher.proceed, cmd, conn, me)
            if rule.action == "delay":
                d.addCallback(lambda resp: task.deferLater(self.reactor, rule.delay, lambda: resp))
            return d.addCallback(self._answered, rec, start, rule)
        if rule.action == "drop":
            return DROP
        if rule.action == "close":
            conn.close()
            return DROP
        resp = error_response(cmd, rule.error_code, rule.remark or f"[rmq-emu fault] {code_name(rule.error_code)}")
        self._stamp(resp, rec, start, rule)
        return resp

    def _answered(self, resp: Any, rec: RequestRecord | None, start: float,
                  rule: FaultRule | None) -> Any:
        """Stamp the answer of the rest of the chain on the record; what the interceptor returns
        for it (DROP for no answer)."""
        resp = self._stamp(resp, rec, start, rule)
        return DROP if resp is None else resp

    def _stamp(self, resp: Any, rec: RequestRecord | None, start: float, rule: FaultRule | None) -> Any:
        if rule is not None and rule.action == "drop_response":
            if rec is not None:
                rec.latency_ms = (time.monotonic() - start) * 1000
            return None
        if rec is not None:
            rec.latency_ms = (time.monotonic() - start) * 1000
            if isinstance(resp, RemotingCommand):
                rec.response_code = resp.code
        return resp
