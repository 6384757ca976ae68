"""Fault injection and request recording for testing client libraries.

A :class:`FaultInjector` hooks into one or more :class:`rocketmq_emu.broker.remoting.protocol.RequestDispatcher`
objects (the broker's and the name server's) through their interceptor and observer hooks:

* every incoming request is recorded (:class:`RequestRecord`: target, code, name, ext fields,
  body size, peer, broker-clock time and wall time), and, once answered, the response code and
  latency;
* rules (:class:`FaultRule`) match by target ("broker" = every broker, "namesrv", "any", or one
  broker by its name) and request code and act:

  ``drop``           the request is swallowed: not processed, never answered (client times out);
  ``drop_response``  the request is processed (a message IS stored) but no answer is sent;
  ``delay``          the request is processed and the answer sent ``delay`` seconds late;
  ``error``          answered at once with ``error_code`` (SYSTEM_BUSY, FLUSH_DISK_TIMEOUT, ...)
                     without processing;
  ``close``          the connection is closed instead of processing.

  ``times`` limits how many requests a rule hits (None: every one); the first matching rule with
  hits left wins.

Connection-level faults (stop/restart the broker, unreachable/reachable) live on
:class:`rocketmq_emu.broker.cluster.Cluster`, which owns the listening ports (the harness and
the control API both drive it).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from twisted.internet import defer, task

from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode, request_name
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import (
    DROP,
    RequestDispatcher,
    RequestEvent,
    error_response,
)

log = logging.getLogger(__name__)

ACTIONS = ("drop", "drop_response", "delay", "error", "close")
TARGETS = ("broker", "namesrv", "any")


def parse_code(value: int | str) -> int:
    """A request code from an int, a digit string or a RequestCode name."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(RequestCode[text.upper()])
    except KeyError:
        raise ValueError(f"unknown request code {value!r}") from None


def parse_response_code(value: int | str) -> int:
    """A response code from an int, a digit string or a ResponseCode name."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(ResponseCode[text.upper()])
    except KeyError:
        raise ValueError(f"unknown response code {value!r}") from None


def _code_name(code: int) -> str:
    try:
        return ResponseCode(code).name
    except ValueError:
        return str(code)


@dataclass
class FaultRule:
    """One fault: which requests (``target``, ``codes``; None = all codes) and what to do."""

    id: int
    action: str
    codes: frozenset[int] | None = None
    target: str = "broker"
    delay: float = 0.0
    error_code: int = ResponseCode.SYSTEM_BUSY
    remark: str | None = None
    times: int | None = None
    hits: int = 0

    def matches(self, target: str, code: int, name: str | None = None) -> bool:
        """True if this rule applies to ``code`` arriving at ``target`` (the broker called
        ``name``) and has hits left."""
        if self.times is not None and self.hits >= self.times:
            return False
        if self.target not in ("any", target, name):
            return False
        return self.codes is None or code in self.codes

    def to_json(self) -> dict:
        """JSON-friendly form (codes sorted, with names)."""
        d = asdict(self)
        d["codes"] = sorted(self.codes) if self.codes is not None else None
        d["code_names"] = [request_name(c) for c in d["codes"]] if self.codes is not None else None
        return d


@dataclass
class RequestRecord:
    """One recorded request (and its answer once sent)."""

    seq: int
    target: str
    server: str  # "namesrv" or the broker's name
    code: int
    name: str
    opaque: int
    oneway: bool
    ext_fields: dict[str, str]
    body_len: int
    peer: str
    time: float  # broker clock (the controllable clock in tests)
    wall: float  # time.time()
    fault: str | None = None
    response_code: int | None = None
    latency_ms: float | None = None

    def to_json(self) -> dict:
        """JSON-friendly form."""
        return asdict(self)


@dataclass
class _Attachment:
    target: str
    name: str
    dispatcher: RequestDispatcher
    interceptor: Any
    observer: Any


class FaultInjector:
    """Rules plus a bounded request log for the dispatchers it is attached to.

    ``reactor`` times delays in wall time (not the controllable clock). Methods must be called in
    the reactor thread, except :meth:`records` and :meth:`rules` which only read.
    """

    def __init__(self, reactor: Any = None, max_records: int = 100_000) -> None:
        if reactor is None:
            from twisted.internet import reactor as default_reactor

            reactor = default_reactor
        self.reactor = reactor
        self._rules: list[FaultRule] = []
        self._ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._records: deque[RequestRecord] = deque(maxlen=max_records)
        self._attached: list[_Attachment] = []
        self._lock = threading.Lock()
        self.recording = True

    # --- attachment ---------------------------------------------------------------------------
    def attach(self, target: str, dispatcher: RequestDispatcher, name: str | None = None) -> None:
        """Hook into ``dispatcher`` as ``target`` ("broker" or "namesrv"); ``name`` is the
        broker's name (rules may target one broker by its name)."""
        if target == "grpc":
            return  # gRPC calls are not faulted yet
        if target not in ("broker", "namesrv"):
            raise ValueError(f"target must be broker or namesrv, got {target!r}")
        server = name or target

        def interceptor(cmd: RemotingCommand, conn: Any) -> Any:
            return self._intercept(target, server, dispatcher, interceptor, cmd, conn)

        def observer(event: RequestEvent) -> None:
            self._observe(target, server, event)

        dispatcher.add_interceptor(interceptor)
        dispatcher.add_observer(observer)
        self._attached.append(_Attachment(target, server, dispatcher, interceptor, observer))

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
                 target: str = "broker", delay: float = 0.0,
                 error_code: int | str = ResponseCode.SYSTEM_BUSY, remark: str | None = None,
                 times: int | None = None) -> FaultRule:
        """Add a rule (see module docstring); returns it (its ``id`` removes it)."""
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}, got {action!r}")
        if not target or not isinstance(target, str):
            raise ValueError(f"target must be one of {TARGETS} or a broker name, got {target!r}")
        if codes is None:
            code_set = None
        elif isinstance(codes, (int, str)):
            code_set = frozenset({parse_code(codes)})
        else:
            code_set = frozenset(parse_code(c) for c in codes)
        if action == "delay" and delay <= 0:
            raise ValueError("a delay rule needs delay > 0 seconds")
        if times is not None and times < 1:
            raise ValueError("times must be >= 1 (or None for every request)")
        rule = FaultRule(next(self._ids), action, code_set, target, float(delay),
                         parse_response_code(error_code), remark, times)
        with self._lock:
            self._rules.append(rule)
        return rule

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
                since: int = 0) -> list[RequestRecord]:
        """Recorded requests, optionally of one code / target ("broker", "namesrv" or a
        broker's name), with ``seq > since``."""
        want = parse_code(code) if code is not None else None
        with self._lock:
            recs = list(self._records)
        return [r for r in recs if r.seq > since and (want is None or r.code == want)
                and (target is None or target in (r.target, r.server))]

    def clear_records(self) -> None:
        """Forget recorded requests."""
        with self._lock:
            self._records.clear()

    def reset(self) -> None:
        """Remove rules and records."""
        self.clear()
        self.clear_records()

    # --- hooks --------------------------------------------------------------------------------
    def _observe(self, target: str, server: str, event: RequestEvent) -> None:
        if not self.recording:
            return
        rec = RequestRecord(
            next(self._seq), target, server, event.code, request_name(event.code), event.opaque,
            bool(event.flag & 2), dict(event.ext_fields), event.body_len,
            f"{event.peer[0]}:{event.peer[1]}", event.time, time.time(),
        )
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

    def _record_for(self, conn: Any, cmd: RemotingCommand) -> RequestRecord | None:
        pending = getattr(conn, "_rmq_emu_records", None)
        return pending.pop(cmd.opaque, None) if pending else None

    def _match(self, target: str, server: str, code: int) -> FaultRule | None:
        with self._lock:
            for rule in self._rules:
                if rule.matches(target, code, server):
                    rule.hits += 1
                    return rule
        return None

    def _intercept(self, target: str, server: str, dispatcher: RequestDispatcher, me: Any,
                   cmd: RemotingCommand, conn: Any) -> Any:
        rec = self._record_for(conn, cmd)
        start = time.monotonic()
        rule = self._match(target, server, cmd.code)
        if rule is not None:
            log.info("fault %s (rule %d) on %s %d from %s", rule.action, rule.id, target, cmd.code,
                     getattr(conn, "peer_addr", "?"))
            if rec is not None:
                rec.fault = rule.action
        if rule is None or rule.action in ("drop_response", "delay"):
            # Run the rest of the chain ourselves to see (and shape) the answer.
            d = defer.maybeDeferred(dispatcher.proceed, cmd, conn, me)
            if rule is not None and rule.action == "delay":
                d.addCallback(lambda resp: task.deferLater(self.reactor, rule.delay, lambda: resp))
            d.addCallback(self._stamp, rec, start, rule)
            return d.addCallback(lambda resp: DROP if resp is None else resp)
        if rule.action == "drop":
            return DROP
        if rule.action == "close":
            conn.close()
            return DROP
        resp = error_response(cmd, rule.error_code, rule.remark or f"[rmq-emu fault] {_code_name(rule.error_code)}")
        self._stamp(resp, rec, start, rule)
        return resp

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
