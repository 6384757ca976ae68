"""HTTP JSON control API for a running cluster (``rmq-emu up --control-port N``), so Java, Go or
Node client test suites get the harness's powers: clock advance, fault rules, the request log,
topic / queue / offset state, broker stop / restart / unreachable, reset.

Served with ``twisted.web`` on 127.0.0.1 unless told otherwise; the OpenAPI 3 description is at
``GET /openapi.json`` and ``GET /`` points to it. Every answer is JSON, except the dashboard's
page (:mod:`rocketmq_emu.client.dashboard`: ``GET /`` to a browser, ``/dashboard/<file>``),
whose JSON endpoints are routed here too; errors are ``{"error": "..."}`` with status 400, 404,
405, 409 or 413, 502 when a broker does not answer, 503 when one fails to (re)start.

Bound to an address that is not loopback, the API requires a bearer token (given, or generated
by :func:`resolve_token`); a token given explicitly is required on loopback too. Every request
without ``Authorization: Bearer <token>`` is answered 401 with ``WWW-Authenticate: Bearer``
(:func:`bearer_ok` compares in constant time), except for the dashboard's static files, which
hold no data. A request a browser marks as coming from another web site is refused with 403
(:meth:`ControlResource._foreign`).

It drives three things, never the test harness class: the cluster, as built by the production
wiring (:class:`rocketmq_emu.broker.cluster.Cluster`; what is used of it is
:class:`ControlledCluster`), the brokers' business clock
(:class:`~rocketmq_emu.client.clock.ControllableClock`) and the fault injector hooked into the
cluster's dispatchers (:class:`~rocketmq_emu.client.faults.FaultInjector`, also the request
log). :class:`rocketmq_emu.client.control_up.Controls` makes the last two and serves the API.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import json
import logging
import re
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote

from twisted.internet import defer
from twisted.web import resource, server

from rocketmq_emu.client.api_errors import ApiError, int_arg, query
from rocketmq_emu.client.control_spec import OPENAPI, parse_selectors

log = logging.getLogger(__name__)


#: RFC 6750's ``b64token``: what a bearer token may contain (``secrets.token_urlsafe`` fits).
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")

#: The first path segments of the dashboard's endpoints (``DashboardRoutes.heads()``, which a
#: test holds equal): only a request under one of them imports the dashboard.
DASHBOARD_HEADS = frozenset(("cluster", "recording", "topics", "groups", "producers", "messages",
                             "dlq", "traces", "scheduled"))

#: The challenge of a 401 (RFC 6750 section 3).
_REALM = b'Bearer realm="rmq-emu control API"'


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an interface to listen on) is a loopback address: ``localhost``,
    127.0.0.0/8 or ``::1``. Anything else, including ``0.0.0.0``, ``::``, ``""`` (every
    interface) and other host names, is not."""
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def validate_token(token: str) -> str:
    """``token`` if it can be sent as ``Authorization: Bearer <token>`` (RFC 6750's
    ``b64token``: letters, digits, ``-._~+/``, trailing ``=``); else ValueError."""
    if not _B64TOKEN.fullmatch(token):
        raise ValueError("a control API token is letters, digits and -._~+/ (then = padding), "
                         "not empty")
    return token


def resolve_token(host: str, token: str | None) -> tuple[str | None, bool]:
    """The token the API served on ``host`` requires, and whether it was generated here:
    ``token`` when given (validated; on loopback too), else on a non-loopback ``host`` a new
    ``secrets.token_urlsafe`` (for the caller to print once), else None (no authentication,
    as on 127.0.0.1 by default)."""
    if token is not None:
        return validate_token(token), False
    if is_loopback(host):
        return None, False
    return secrets.token_urlsafe(32), True


def bearer_ok(authorization: bytes | str | None, token: str) -> bool:
    """Whether an ``Authorization`` header value carries ``token`` as a bearer token (scheme
    case-insensitive, RFC 7235); the tokens are compared in constant time."""
    if authorization is None:
        return False
    if isinstance(authorization, str):
        try:
            authorization = authorization.encode("ascii")
        except UnicodeEncodeError:
            return False
    scheme, _, credentials = authorization.strip().partition(b" ")
    if scheme.lower() != b"bearer":
        return False
    return hmac.compare_digest(credentials.strip(), token.encode("ascii"))


class BrokerView(Protocol):
    """One broker of a :class:`ControlledCluster` (``broker.cluster.BrokerSlot``)."""

    name: str
    port: int
    store_dir: Path
    running: bool
    #: The broker's BrokerConfig (its ``tls`` says how the ports serve TLS).
    template: Any


class ControlledCluster(Protocol):
    """What the control API uses of the cluster it serves; the production
    :class:`rocketmq_emu.broker.cluster.Cluster` provides it. Broker names of None mean the
    first broker; the lifecycle calls return Deferreds."""

    host: str
    slots: Sequence[BrokerView]
    namesrv_addr: str
    broker_addr: str
    broker_addrs: dict[str, str]
    store_dir: Path
    broker: Any
    conformance: Any

    def slot(self, name: str | None = None) -> BrokerView: ...

    def broker_store(self, name: str | None = None) -> Any: ...

    def stop_broker(self, name: str | None = None) -> defer.Deferred: ...

    def start_broker(self, name: str | None = None) -> defer.Deferred: ...

    def restart_broker(self, name: str | None = None) -> defer.Deferred: ...

    def make_unreachable(self, name: str | None = None) -> defer.Deferred: ...

    def make_reachable(self, name: str | None = None) -> defer.Deferred: ...

    def close_connections(self, target: str = "broker", name: str | None = None) -> defer.Deferred: ...


def tools_use_tls(cluster: ControlledCluster) -> bool:
    """Whether the control API's own requests to ``cluster`` (topic creation) use TLS, as its
    ports' ``tls.*`` settings want: the first broker's, which the name server and the gRPC
    endpoint share (``broker.cluster.Cluster``), so an enforcing cluster is asked over TLS."""
    tls = getattr(cluster.slots[0].template, "tls", None) if cluster.slots else None
    return tls is not None and tls.tools_use_tls()


class ControlResource(resource.Resource):
    """One leaf resource routing ``METHOD /path`` to the cluster, its clock and its faults."""

    isLeaf = True

    def __init__(self, cluster: ControlledCluster, clock: Any, faults: Any,
                 token: str | None = None) -> None:
        super().__init__()
        self.cluster = cluster
        #: The bearer token every request must carry, or None (no authentication).
        self.token = token
        #: The brokers' business clock (a ControllableClock).
        self.clock = clock
        #: Fault rules and the request log (a FaultInjector hooked into the cluster).
        self.faults = faults
        #: The dashboard's endpoints, once a request needed them (:meth:`dashboard`).
        self._dashboard: Any = None
        self.routes: dict[tuple[str, str], Callable[..., Any]] = {
            ("GET", ""): self.index,
            ("GET", "openapi.json"): lambda req, body: OPENAPI,
            ("GET", "health"): self.health,
            ("GET", "clock"): self.clock_state,
            ("POST", "clock/advance"): self.advance,
            ("POST", "clock/mode"): self.mode,
            ("GET", "faults"): lambda req, body: [r.to_json() for r in faults.rules()],
            ("POST", "faults"): self.add_fault,
            ("DELETE", "faults"): self.clear_faults,
            ("GET", "requests"): self.requests,
            ("DELETE", "requests"): self.clear_requests,
            ("GET", "offsets"): self.offsets,
            ("GET", "messages"): self.messages,
            ("POST", "broker/stop"): lambda req, body: self._done(
                cluster.stop_broker(self._broker(body))),
            ("POST", "broker/start"): lambda req, body: self._starting(
                "start", cluster.start_broker, body),
            ("POST", "broker/restart"): lambda req, body: self._starting(
                "restart", cluster.restart_broker, body),
            ("POST", "broker/unreachable"): lambda req, body: self._done(
                cluster.make_unreachable(self._broker(body))),
            ("POST", "broker/reachable"): lambda req, body: self._done(
                cluster.make_reachable(self._broker(body))),
            ("POST", "broker/close-connections"): lambda req, body: self._done(
                cluster.close_connections((body or {}).get("target", "broker"),
                                                (body or {}).get("broker"))),
            ("POST", "reset"): self.reset,
            ("GET", "conformance"): lambda req, body: cluster.conformance.snapshot(),
            ("DELETE", "conformance"): lambda req, body: cluster.conformance.clear(),
        }

    # --- plumbing -------------------------------------------------------------------------------
    def render(self, request: Any) -> Any:
        method = request.method.decode()
        # Path segments are percent-encoded (a retry topic's "%RETRY%g" arrives as %25RETRY%25g).
        path = unquote(request.path.decode("latin-1")).strip("/")
        if method == "GET":
            page = self._page(request, path)
            if page is not None:
                return page
        foreign = self._foreign(request)
        if foreign is not None:
            return self._write(request, {"error": foreign}, 403)
        if self.token is not None:
            denied = self._unauthorized(request)
            if denied is not None:
                return denied
        try:
            handler, args = self._route(method, path)
            raw = request.content.read() if request.content is not None else b""
            body = json.loads(raw) if raw.strip() else None
            result = handler(request, body, *args)
        except ApiError as exc:
            return self._write(request, {"error": str(exc)}, exc.status)
        except (ValueError, KeyError, TypeError) as exc:
            return self._write(request, {"error": str(exc)}, 400)
        except Exception as exc:  # a defect: one line to the caller, the traceback to the log
            log.exception("control API %s /%s failed", method, path)
            return self._write(request, {"error": f"internal error: {exc}"}, 500)
        if isinstance(result, defer.Deferred):
            def ok(value: Any) -> None:
                self._finish(request, value, 200)

            def failed(f: Any) -> None:
                if f.check(ApiError):  # an expected failure, already logged in one line
                    self._finish(request, {"error": str(f.value)}, f.value.status)
                    return
                log.error("control API %s %s failed: %s", method, path, f.getTraceback())
                self._finish(request, {"error": str(f.value)}, 500)

            result.addCallbacks(ok, failed)
            return server.NOT_DONE_YET
        return self._write(request, result, 200)

    @staticmethod
    def _page(request: Any, path: str) -> bytes | None:
        """The dashboard's static files: ``/`` to a browser (``Accept: text/html``) and
        ``/dashboard/<file>``; they hold no data, so no token is asked for them."""
        if path == "":
            accept = (request.getHeader(b"accept") or b"").decode("latin-1")
            name = "index.html" if "text/html" in accept else None
        elif path.startswith("dashboard/"):
            name = path[len("dashboard/"):]
        else:
            return None
        if name is None:
            return None
        from rocketmq_emu.client.dashboard import static_files

        return static_files.serve(request, name)

    def _foreign(self, request: Any) -> str | None:
        """Why a request comes from another web site, or None. A page open in the developer's
        browser can send requests to 127.0.0.1 (a form's POST needs no CORS consent) and, by
        rebinding its own host name to 127.0.0.1, read the answers: a request a browser marks
        cross-site (``Sec-Fetch-Site``, ``Origin``) is refused, and without a token a ``Host``
        that is not a loopback name. Tools (curl, test suites) send neither header."""
        if (request.getHeader(b"sec-fetch-site") or b"").lower() == b"cross-site":
            return "requests from other web sites are refused"
        host = (request.getHeader(b"host") or b"").decode("latin-1")
        origin = request.getHeader(b"origin")
        if origin is not None and origin.decode("latin-1").partition("://")[2] != host:
            return "requests from other web sites are refused"
        if self.token is None and host:
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if not (is_loopback(name) or name.lower().endswith(".localhost")):
                return (f"host {host!r} is not a loopback name: use 127.0.0.1, localhost or "
                        "[::1] (or a --control-token)")
        return None

    def _unauthorized(self, request: Any) -> bytes | None:
        """A 401 answer (JSON error, ``WWW-Authenticate: Bearer``) unless ``request`` carries
        ``Authorization: Bearer <token>``; None when it does."""
        header = request.getHeader(b"authorization")
        if self.token is not None and bearer_ok(header, self.token):
            return None
        if header is None:
            message = ("this control API requires a bearer token: send 'Authorization: Bearer "
                       "<token>' (the token given with --control-token, or printed at start)")
            request.setHeader(b"www-authenticate", _REALM)
        else:
            message = "invalid bearer token"
            request.setHeader(b"www-authenticate", _REALM + b', error="invalid_token"')
        return self._write(request, {"error": message}, 401)

    def _route(self, method: str, path: str) -> tuple[Callable[..., Any], tuple]:
        handler = self.routes.get((method, path))
        if handler is not None:
            return handler, ()
        parts = path.split("/")
        if len(parts) == 2 and parts[0] == "faults" and method == "DELETE":
            return self.remove_fault, (parts[1],)
        if path.partition("/")[0] in DASHBOARD_HEADS:
            found = self.dashboard().route(method, path)
            if found is not None:
                return found
            if any(self.dashboard().route(other, path) is not None
                   for other in ("GET", "POST", "DELETE") if other != method):
                raise ApiError(405, f"method {method} not allowed on /{path}")
        if any(p == path for (_, p) in self.routes):
            raise ApiError(405, f"method {method} not allowed on /{path}")
        raise ApiError(404, f"no such endpoint: {method} /{path}")

    def dashboard(self) -> Any:
        """The dashboard's endpoints (:mod:`rocketmq_emu.client.dashboard.routes`), imported
        and built on the first request that needs them."""
        if self._dashboard is None:
            from rocketmq_emu.client.dashboard.routes import DashboardRoutes

            self._dashboard = DashboardRoutes(self.cluster, lambda: self.clock_state(None, None),
                                              tools_use_tls(self.cluster))
        return self._dashboard

    @staticmethod
    def _write(request: Any, value: Any, status: int) -> bytes:
        request.setResponseCode(status)
        request.setHeader(b"content-type", b"application/json")
        return json.dumps(value, default=str).encode()

    def _finish(self, request: Any, value: Any, status: int) -> None:
        if request.finished or getattr(request, "_disconnected", False):
            return
        request.write(self._write(request, value, status))
        request.finish()

    def _broker(self, body: Any) -> str | None:
        name = (body or {}).get("broker")
        if name is not None and name not in self.cluster.broker_addrs:
            raise ApiError(404, f"no broker {name!r}")
        return name

    @staticmethod
    def _done(d: defer.Deferred) -> defer.Deferred:
        return d.addCallback(lambda _: {"ok": True})

    def _starting(self, op: str, start: Callable[[str | None], defer.Deferred],
                  body: Any) -> defer.Deferred:
        """Start or restart a broker: ``{"ok": true}``, or ApiError 503 whose message names the
        broker and the cause (e.g. a store config file and its .bak both unusable)."""
        name = self._broker(body)
        broker = self.cluster.slot(name).name

        def failed(f: Any) -> None:
            cause = " ".join(str(f.value).split()) or type(f.value).__name__
            log.error("control API: %s of broker %s failed: %s", op, broker, cause)
            raise ApiError(503, f"{op} of broker {broker!r} failed, it is stopped: {cause}")

        return self._done(start(name)).addErrback(failed)

    # --- endpoints ------------------------------------------------------------------------------
    def index(self, request: Any, body: Any) -> Any:
        """``GET /`` asked for JSON: the way to ``/openapi.json`` (a browser gets the dashboard)."""
        return {"name": "rmq-emu control API", "openapi": "/openapi.json", "dashboard": "/",
                "paths": sorted(OPENAPI["paths"])}

    def health(self, request: Any, body: Any) -> dict:
        c = self.cluster
        return {"namesrv": c.namesrv_addr, "broker": c.broker_addr, "broker_running": c.broker is not None,
                "grpc": getattr(c, "grpc_endpoint", None),
                "brokers": [{"name": s.name, "addr": f"{c.host}:{s.port}", "running": s.running,
                             "store": str(s.store_dir)} for s in c.slots],
                "store": str(c.store_dir), "clock": self.clock_state(request, body)}

    def clock_state(self, request: Any, body: Any) -> dict:
        clock = self.clock
        return {"now_ms": int(clock.seconds() * 1000), "mode": clock.mode,
                "offset_s": clock.offset, "advanced_s": clock.advanced, "pending_timers": clock.pending()}

    def advance(self, request: Any, body: Any) -> dict:
        body = body or {}
        if "seconds" in body:
            seconds = float(body["seconds"])
        elif "ms" in body:
            seconds = int(body["ms"]) / 1000.0
        else:
            raise ApiError(400, "give seconds or ms")
        fired = self.clock.advance(seconds)
        return {"fired": fired, **self.clock_state(request, body)}

    def mode(self, request: Any, body: Any) -> dict:
        self.clock.set_mode((body or {})["mode"])
        return self.clock_state(request, body)

    def add_fault(self, request: Any, body: Any) -> dict:
        if not isinstance(body, dict):
            raise ApiError(400, "expected a JSON object")
        allowed = {"action", "codes", "rpcs", "target", "delay", "error_code", "remark", "times",
                   "grpc_status", "status_code"}
        unknown = set(body) - allowed
        if unknown:
            raise ApiError(400, f"unknown fields: {sorted(unknown)}")
        body = dict(body)
        action = body.pop("action")
        codes = body.pop("codes", None)
        if codes is not None:
            code_set, rpc_set = parse_selectors(codes)
            codes = [*sorted(code_set or ()), *sorted(rpc_set or ())] \
                if code_set is not None or rpc_set is not None else []
        return self.faults.add_rule(action, codes, **body).to_json()

    def clear_faults(self, request: Any, body: Any) -> dict:
        self.faults.clear()
        return {"ok": True}

    def remove_fault(self, request: Any, body: Any, rule_id: str) -> dict:
        if not self.faults.remove(int(rule_id)):
            raise ApiError(404, f"no fault rule {rule_id}")
        return {"ok": True}

    def requests(self, request: Any, body: Any) -> list:
        q = query(request)
        codes, rpcs = parse_selectors(q.get("code"))
        limit = int_arg(q, "max", 0, low=1) if q.get("max") else None
        keep = None
        if codes is not None or rpcs is not None:
            def keep(r: Any) -> bool:
                return ((r.rpc is None and codes is not None and r.code in codes)
                        or (r.rpc is not None and rpcs is not None and r.rpc in rpcs))
        recs = self.faults.records(None, q.get("target"), int_arg(q, "since", 0), limit, keep)
        return [r.to_json() for r in recs]

    def clear_requests(self, request: Any, body: Any) -> dict:
        self.faults.clear_records()
        return {"ok": True}

    def _store(self, request: Any = None) -> Any:
        name = query(request).get("broker") if request is not None else None
        if name is not None and name not in self.cluster.broker_addrs:
            raise ApiError(404, f"no broker {name!r}")
        store = self.cluster.broker_store(name)
        if store is None:
            raise ApiError(404, "the broker is stopped")
        return store

    def offsets(self, request: Any, body: Any) -> list:
        store = self._store(request)
        want = query(request).get("group")
        co = store.consumer_offsets
        table = getattr(co, "offset_table", None) or getattr(co, "table", None) or {}
        out = []
        for key, per_queue in sorted(table.items()):
            topic, _, group = key.rpartition("@")
            if want is not None and group != want:
                continue
            for qid, offset in sorted((int(k), v) for k, v in per_queue.items()):
                max_offset = store.get_max_offset_in_queue(topic, qid)
                out.append({"group": group, "topic": topic, "queueId": qid, "offset": offset,
                            "maxOffset": max_offset, "lag": max(max_offset - offset, 0)})
        return out

    def messages(self, request: Any, body: Any) -> list:
        q = query(request)
        if "topic" not in q:
            raise ApiError(400, "give topic (and queueId, offset, max)")
        store = self._store(request)
        found = store.get_message("rmq-emu-control-api", q["topic"], int(q.get("queueId", 0)),
                                  int(q.get("offset", 0)), min(int(q.get("max", 32)), 1000))
        from rocketmq_emu.client.message import decode_messages

        msgs = decode_messages(b"".join(bytes(m) for m in (found.messages or [])))
        out = []
        for m in msgs:
            try:
                text, encoding = m.body.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                text, encoding = base64.b64encode(m.body).decode(), "base64"
            out.append({"topic": m.topic, "queueId": m.queue_id, "queueOffset": m.queue_offset,
                        "msgId": m.msg_id, "offsetMsgId": m.offset_msg_id, "tags": m.tags,
                        "keys": m.keys, "properties": m.properties, "body": text,
                        "bodyEncoding": encoding, "bornTimestamp": m.born_timestamp,
                        "storeTimestamp": m.store_timestamp, "reconsumeTimes": m.reconsume_times})
        return out

    def reset(self, request: Any, body: Any) -> dict:
        self.faults.reset()
        return {"ok": True}


def serve_control_api(cluster: ControlledCluster, clock: Any, faults: Any, port: int,
                      host: str = "127.0.0.1", reactor: Any = None,
                      token: str | None = None) -> Any:
    """Serve the API for ``cluster`` (driving ``clock`` and ``faults``) on ``host:port`` (0 picks
    a port), requiring the bearer ``token`` when one is given (see :func:`resolve_token` for
    which); returns the listening port object."""
    if reactor is None:
        from twisted.internet import reactor as default_reactor

        reactor = default_reactor
    site = server.Site(ControlResource(cluster, clock, faults, token))
    site.displayTracebacks = False
    return reactor.listenTCP(port, site, interface=host)
