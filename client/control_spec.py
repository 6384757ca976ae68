"""What the control API (:mod:`rocketmq_emu.client.control_api`) accepts: its OpenAPI 3
description (served at ``GET /openapi.json``) and the request-code vocabulary of ``/requests``
and ``/faults`` (numbers, RequestCode names, the ``SEND`` family, and the RPC names of RocketMQ 5's
gRPC MessagingService such as ``SendMessage``)."""

from __future__ import annotations

from typing import Any

from rocketmq_emu.client.control_spec_dashboard import dashboard_paths
from rocketmq_emu.client.faults import ACTIONS, TARGETS, parse_code, parse_rpc

#: Request-code families accepted wherever the API takes a code. Clients send the same request
#: under different codes (captured: PyPI ``rocketmq`` 0.4.4, C++ 1.x, sends SEND_MESSAGE; the
#: Java 4.9.8 client, ``rocketmq-python-cvs``, npm ``rocketmq-nodejs`` and ``ali-ons`` send
#: SEND_MESSAGE_V2; Java batches are SEND_BATCH_MESSAGE), so a test asking "what was sent" names
#: the family. RequestCode names and numbers stay exact, as in RocketMQ itself.
CODE_FAMILIES: dict[str, tuple[int, ...]] = {"SEND": (10, 310, 320)}

_CODES_DOC = ("request code: a number, a RequestCode name (exact: SEND_MESSAGE is 10 only, "
              "SEND_MESSAGE_V2 310 only), SEND for every producer send (SEND_MESSAGE 10, "
              "SEND_MESSAGE_V2 310, SEND_BATCH_MESSAGE 320), or a gRPC MessagingService RPC name "
              "(SendMessage, ReceiveMessage, AckMessage, ...: gRPC calls)")


def parse_codes(values: Any) -> frozenset[int] | None:
    """Request codes from a comma-separated string or a list of numbers, names and family names
    (:data:`CODE_FAMILIES`); None means every code."""
    if values is None:
        return None
    if isinstance(values, str):
        items: list[Any] = values.split(",")
    else:
        items = [values] if isinstance(values, int) else list(values)
    out: set[int] = set()
    for item in items:
        family = CODE_FAMILIES.get(str(item).strip().upper())
        out.update(family if family is not None else (parse_code(item),))
    return frozenset(out)


def parse_selectors(values: Any) -> tuple[frozenset[int] | None, frozenset[str] | None]:
    """(request codes, gRPC RPC names) from a comma-separated string or a list mixing numbers,
    RequestCode names, family names and MessagingService RPC names; (None, None) means every
    request. A list naming only RPCs has no codes (None), and the other way round."""
    if values is None:
        return None, None
    if isinstance(values, str):
        items: list[Any] = values.split(",")
    else:
        items = [values] if isinstance(values, int) else list(values)
    rpcs = {rpc for item in items if (rpc := parse_rpc(str(item))) is not None}
    others = [item for item in items if parse_rpc(str(item)) is None]
    codes = parse_codes(others) if others or not rpcs else None
    return codes, (frozenset(rpcs) if rpcs else None)


def _schema_rule() -> dict:
    return {
        "type": "object",
        "required": ["action"],
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "codes": {"type": "array", "items": {"type": ["integer", "string"]},
                      "description": "request codes (numbers, RequestCode names, or SEND for "
                                     "codes 10, 310 and 320) and/or gRPC RPC names (SendMessage, "
                                     "ReceiveMessage, ...); omit for all"},
            "rpcs": {"type": "array", "items": {"type": "string"},
                     "description": "gRPC MessagingService RPC names (SendMessage, AckMessage, "
                                    "...), the same as naming them in codes"},
            "target": {"type": "string",
                       "description": f"one of {list(TARGETS)} or a broker's name; default grpc "
                                      "for a rule naming only RPCs, else broker. A rule naming "
                                      "no code and no RPC hits gRPC calls only with target grpc "
                                      "or any"},
            "delay": {"type": "number", "description": "seconds (action delay). gRPC: a unary "
                      "call is processed and answered late; ReceiveMessage's responses are "
                      "held; Telemetry starts late"},
            "error_code": {"type": ["integer", "string"], "default": "SYSTEM_BUSY",
                           "description": "response code or ResponseCode name (action error); "
                                          "on a gRPC call mapped by the proxy's "
                                          "ResponseBuilder.buildCode table (SYSTEM_BUSY: "
                                          "TOO_MANY_REQUESTS, others: INTERNAL_SERVER_ERROR) "
                                          "into the response's Status"},
            "grpc_status": {"type": ["integer", "string"],
                            "description": "gRPC calls, action error: end the call with this "
                                           "gRPC status (UNAVAILABLE, 14, ...) instead of an OK "
                                           "response carrying a Status"},
            "status_code": {"type": ["integer", "string"],
                            "description": "gRPC calls, action error: the apache.rocketmq.v2.Code "
                                           "of the response's Status (TOO_MANY_REQUESTS, 50001, "
                                           "...); overrides error_code"},
            "remark": {"type": "string", "description": "the error's text (remark, gRPC "
                                                        "status message or Status.message)"},
            "times": {"type": "integer", "minimum": 1, "description": "hits before the rule expires"},
        },
    }


#: The 401 every operation answers when the API requires a bearer token and the request does
#: not carry it (``WWW-Authenticate: Bearer``).
_UNAUTHORIZED: dict = {
    "description": "the API requires a bearer token (served on a non-loopback address, or "
                   "started with --control-token) and the request has no "
                   "'Authorization: Bearer <token>' or a wrong one; {\"error\": \"...\"}",
    "headers": {"WWW-Authenticate": {
        "description": "Bearer realm=\"rmq-emu control API\" (with error=\"invalid_token\" "
                       "when a wrong token was sent)",
        "schema": {"type": "string"}}},
    "content": {"application/json": {"schema": {
        "type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}}},
}


def _op(summary: str, body: dict | None = None, params: list | None = None,
        errors: dict[str, str] | None = None) -> dict:
    op: dict[str, Any] = {"summary": summary,
                          "responses": {"200": {"description": "JSON result",
                                                "content": {"application/json": {}}},
                                        "401": _UNAUTHORIZED}}
    for status, description in (errors or {}).items():
        op["responses"][status] = {"description": description,
                                   "content": {"application/json": {}}}
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    if params:
        op["parameters"] = params
    return op


def _q(name: str, kind: str, desc: str) -> dict:
    return {"name": name, "in": "query", "required": False, "schema": {"type": kind},
            "description": desc}


_BROKER_BODY = {"type": "object", "properties": {
    "broker": {"type": "string", "description": "broker name (default: the first broker)"}}}

_START_FAILED = ("the broker could not start on its store (e.g. an unusable config file); "
                 "{\"error\": one line naming the broker and the cause}; it stays stopped")

_TOPIC = {"name": "topic", "in": "path", "required": True, "schema": {"type": "string"}}

OPENAPI: dict = {
    "openapi": "3.0.3",
    "info": {"title": "rmq-emu control API", "version": "1",
             "description": "Control a running rmq-emu (name server + broker) from tests. "
                            "Served on 127.0.0.1 without authentication by default; bound to "
                            "any other address (rmq-emu up --control-host), or started with "
                            "--control-token, every request needs 'Authorization: Bearer "
                            "<token>' (the token given, or the one generated and printed at "
                            "start as 'rmq-emu: control API token: ...') and is answered 401 "
                            "without it."},
    "components": {"securitySchemes": {"bearerAuth": {
        "type": "http", "scheme": "bearer",
        "description": "Required when the API listens on a non-loopback address or was "
                       "started with --control-token; not required on loopback by default"}}},
    # Either the bearer token or nothing: which one depends on how the API was started.
    "security": [{"bearerAuth": []}, {}],
    "paths": {
        "/": {"get": {
            "summary": "The dashboard to a browser; else where the API is described",
            "responses": {"200": {
                "description": "JSON {name, openapi, dashboard, paths}; the dashboard's page "
                               "(no token needed) when the Accept header asks for text/html",
                "content": {"application/json": {}, "text/html": {}}},
                "401": _UNAUTHORIZED}}},
        "/health": {"get": _op("Addresses (name server, brokers, grpc: the gRPC "
                               "MessagingService endpoint or null), store path and clock")},
        "/clock": {"get": _op("Current broker clock (ms), mode and offset from wall time")},
        "/clock/advance": {"post": _op(
            "Move the broker clock forward and fire everything due (delay levels, timers)",
            {"type": "object", "properties": {"seconds": {"type": "number"}, "ms": {"type": "integer"}}})},
        "/clock/mode": {"post": _op(
            "Set the clock mode: follow (wall time + offset) or manual (stands still)",
            {"type": "object", "required": ["mode"],
             "properties": {"mode": {"type": "string", "enum": ["follow", "manual"]}}})},
        "/faults": {
            "get": _op("List fault rules"),
            "post": _op("Add a fault rule; answers the rule with its id", _schema_rule()),
            "delete": _op("Remove every fault rule"),
        },
        "/faults/{id}": {"delete": {**_op("Remove one fault rule"), "parameters": [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}]}},
        "/requests": {
            "get": _op("Recorded requests (code, header, peer, times, response code, latency); "
                       "gRPC calls with target grpc, rpc (their RPC name, also in name), peer, "
                       "client_id, x-mq-* metadata in ext_fields, grpc_status once ended",
                       params=[_q("code", "string", _CODES_DOC + "; several comma-separated "
                                  "match any of them (SEND_MESSAGE,SEND_MESSAGE_V2)"),
                               _q("target", "string", "broker, namesrv, grpc or a broker's name"),
                               _q("since", "integer", "only records with seq > since"),
                               _q("max", "integer", "only the newest max of them (the log "
                                  "keeps 100,000; a page polling it asks for few)")]),
            "delete": _op("Forget recorded requests"),
        },
        "/conformance": {
            "get": _op("Conformance findings: what each client sent that Apache RocketMQ's Java "
                       "client 4.9.8 does not, as {findings: [{clientId, address, language, "
                       "version (an MQVersion ordinal; a 5.x SDK's version string), kind, severity (error, warning, info), code, field, sent, "
                       "expected, message, javaClass, firstSeen, lastSeen, count}], summary: "
                       "{error, warning, info}, clients: [{clientId, language, version, error, "
                       "warning, info}]}"),
            "delete": _op("Forget the conformance findings"),
        },
        "/topics": {
            "get": _op("Topics: kind (user, system, retry, dlq) and group, type (NORMAL, FIFO, "
                       "DELAY, TRANSACTION, MIXED), perm, queue counts, messages stored and "
                       "per-queue min/max offsets",
                       params=[_q("broker", "string", "broker name (default: first)")]),
            "post": _op("Create (or update) a topic on every broker, or on one "
                        "(UPDATE_AND_CREATE_TOPIC)",
                        {"type": "object", "required": ["topic"], "properties": {
                            "topic": {"type": "string"},
                            "queues": {"type": "integer", "default": 4},
                            "type": {"type": "string",
                                     "enum": ["NORMAL", "FIFO", "DELAY", "TRANSACTION"]},
                            "perm": {"type": "integer", "enum": [2, 4, 6], "default": 6},
                            "broker": {"type": "string"}}},
                        errors={"400": "a bad name, queue count, type or perm",
                                "404": "no such broker", "409": "the broker refused"}),
        },
        "/topics/{topic}": {
            "get": {**_op("One topic: queues with min/max offsets and last store time "
                          "(lastUpdateTimestamp), attributes, route over the brokers, consumer "
                          "groups", errors={"404": "no such topic or broker"}),
                    "parameters": [_TOPIC, _q("broker", "string", "broker name")]},
            "delete": {**_op("Delete a topic from every broker and the name server",
                             errors={"404": "no such topic"}), "parameters": [_TOPIC]}},
        "/offsets": {"get": _op("Committed consumer offsets (optionally of one group) with lag",
                                params=[_q("group", "string", "consumer group"),
                                        _q("broker", "string", "broker name (default: first)")])},
        "/messages": {"get": _op(
            "Stored messages of one queue, decoded (body as UTF-8 text or base64)",
            params=[_q("topic", "string", "topic (required)"), _q("queueId", "integer", "queue"),
                    _q("offset", "integer", "first logical offset"),
                    _q("max", "integer", "at most this many (32)"),
                    _q("broker", "string", "broker name (default: first)")])},
        "/broker/stop": {"post": _op("Stop a broker (default: the first), keeping its store",
                                     _BROKER_BODY)},
        "/broker/start": {"post": _op("Start a stopped broker again on its store", _BROKER_BODY,
                                      errors={"503": _START_FAILED})},
        "/broker/restart": {"post": _op("Stop and start a broker", _BROKER_BODY,
                                        errors={"503": _START_FAILED})},
        "/broker/unreachable": {"post": _op("Close a broker's ports and connections", _BROKER_BODY)},
        "/broker/reachable": {"post": _op("Listen again on a broker's ports", _BROKER_BODY)},
        "/broker/close-connections": {"post": _op(
            "Close client connections", {"type": "object", "properties": {
                "target": {"type": "string", "enum": ["broker", "namesrv"]},
                "broker": {"type": "string", "description": "only this broker"}}})},
        "/reset": {"post": _op("Remove fault rules and recorded requests")},
    },
}

OPENAPI["paths"].update(dashboard_paths(_op, _q))
