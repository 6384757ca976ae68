"""The data of fault injection: the rules (:class:`FaultRule`), the request log's records
(:class:`RequestRecord`) and the parsers of the codes rules name.

Shared by :mod:`rocketmq_emu.client.faults` (the injector, remoting side; it re-exports every
name here) and :mod:`rocketmq_emu.client.faults_grpc` (the gRPC side): both import this module and
it imports neither, so the two never import each other back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode, request_name

__all__ = ["ACTIONS", "TARGETS", "FaultRule", "RequestRecord", "code_name", "parse_code",
           "parse_response_code"]

ACTIONS = ("drop", "drop_response", "delay", "error", "close")
TARGETS = ("broker", "namesrv", "grpc", "any")


def parse_code(value: int | str) -> int:
    """A request code from an int, a digit string or a RequestCode name."""
    return _parse(value, RequestCode, "request")


def parse_response_code(value: int | str) -> int:
    """A response code from an int, a digit string or a ResponseCode name."""
    return _parse(value, ResponseCode, "response")


def _parse(value: int | str, codes: Any, kind: str) -> int:
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(codes[text.upper()])
    except KeyError:
        raise ValueError(f"unknown {kind} code {value!r}") from None


def code_name(code: int) -> str:
    """The ResponseCode name of ``code`` (its digits if it has none)."""
    try:
        return ResponseCode(code).name
    except ValueError:
        return str(code)


@dataclass
class FaultRule:
    """One fault: which requests (``target``, ``codes``, ``rpcs``; both None = every request of
    the target) and what to do."""

    id: int
    action: str
    codes: frozenset[int] | None = None
    target: str = "broker"
    delay: float = 0.0
    error_code: int = ResponseCode.SYSTEM_BUSY
    remark: str | None = None
    times: int | None = None
    hits: int = 0
    rpcs: frozenset[str] | None = None
    grpc_status: int | None = None
    status_code: int | None = None

    def _has_hits(self) -> bool:
        return self.times is None or self.hits < self.times

    def matches(self, target: str, code: int, name: str | None = None) -> bool:
        """True if this rule applies to remoting request ``code`` arriving at ``target`` (the
        broker called ``name``) and has hits left."""
        if not self._has_hits() or self.target not in ("any", target, name):
            return False
        if self.codes is None:
            return self.rpcs is None
        return code in self.codes

    def matches_rpc(self, rpc: str) -> bool:
        """True if this rule applies to a gRPC call of ``rpc`` and has hits left."""
        if not self._has_hits() or self.target not in ("any", "grpc"):
            return False
        if self.rpcs is None:
            return self.codes is None
        return rpc in self.rpcs

    def to_json(self) -> dict:
        """JSON-friendly form (codes and RPC names sorted, codes with names)."""
        d = asdict(self)
        d["codes"] = sorted(self.codes) if self.codes is not None else None
        d["code_names"] = [request_name(c) for c in d["codes"]] if self.codes is not None else None
        d["rpcs"] = sorted(self.rpcs) if self.rpcs is not None else None
        return d


@dataclass(slots=True)
class RequestRecord:
    """One recorded request (and its answer once sent).

    A gRPC call's record has ``target``/``server`` "grpc", ``rpc`` and ``name`` its RPC name,
    ``code`` 0, ``opaque`` its HTTP/2 stream id, ``ext_fields`` its ``x-mq-*`` metadata,
    ``body_len`` the request's size, ``client_id``, and ``grpc_status`` (the status name it
    ended with, e.g. "OK"; None while it runs)."""

    seq: int
    target: str
    server: str  # "namesrv", "grpc" or the broker's name
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
    rpc: str | None = None
    client_id: str | None = None
    grpc_status: str | None = None
    #: The gRPC call (its ServerCall) this record stands for, until its outcome was read.
    call: Any = field(default=None, repr=False, compare=False)

    def refresh(self) -> RequestRecord:
        """Read the outcome of the gRPC call behind this record once it ended (no-op else)."""
        call = self.call
        if call is not None and call.status is not None:
            self.grpc_status = call.status[0].name
            self.call = None
        elif call is not None and call.cancelled:
            self.grpc_status = "CANCELLED"
            self.call = None
        return self

    def to_json(self) -> dict:
        """JSON-friendly form. Field by field, not ``asdict``: its deep copy made a page
        polling 500 records cost the broker 50 ms a poll."""
        self.refresh()
        out = {name: getattr(self, name) for name in _RECORD_FIELDS}
        out["ext_fields"] = dict(self.ext_fields)
        return out


#: RequestRecord's fields, in declaration order (what ``to_json`` writes).
_RECORD_FIELDS = tuple(f.name for f in fields(RequestRecord) if f.name != "call")
