"""Rules on the calls of RocketMQ 5's gRPC clients (the 5.x SDKs).

Pure: :func:`check_call` takes a call's ``x-mq-*`` metadata and its decoded request and returns
:class:`~rocketmq_emu.broker.conformance.findings.Observation` s. The reference is the 5.x
proxy: ``GrpcMessagingApplication.validateContext`` (a client id on every call),
``ContextInitPipeline`` (the ``x-mq-*`` headers the SDKs send) and ``SendMessageActivity``
(what a message may carry). A message the proxy refuses is judged by the emulator's own
proxy code (:func:`rocketmq_emu.broker.grpc.convert.send_properties`), so the finding and the
answer the client got cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rocketmq_emu.broker.conformance.findings import ERROR, INFO, WARNING, Observation
from rocketmq_emu.broker.conformance.request_rules import LANGUAGES
from rocketmq_emu.broker.grpc.convert import send_properties
from rocketmq_emu.broker.grpc.status import Code, ProxyError
from rocketmq_emu.broker.grpc.validate import validate_topic

_CONTEXT = "org.apache.rocketmq.proxy.grpc.v2.GrpcMessagingApplication"
_PIPELINE = "org.apache.rocketmq.proxy.grpc.pipeline.ContextInitPipeline"
_SEND = "org.apache.rocketmq.proxy.grpc.v2.producer.SendMessageActivity"


def check_call(rpc: str, headers: Mapping[str, str], request: Any,
               now_ms: int) -> list[Observation]:
    """The deviations of one gRPC call (``rpc``: the MessagingService method name; ``headers``:
    its ``x-mq-*`` metadata; ``request``: the decoded request, None for a stream)."""
    found = _check_headers(rpc, headers)
    if rpc == "SendMessage" and request is not None:
        found += _check_send(request, headers.get("x-mq-client-id", ""), now_ms)
    return found


def _check_headers(rpc: str, headers: Mapping[str, str]) -> list[Observation]:
    found = []
    if not headers.get("x-mq-client-id", "").strip():
        found.append(Observation(
            "grpc.header", ERROR, None, "x-mq-client-id", "", "the client's id",
            f"{rpc} without x-mq-client-id: the proxy answers CLIENT_ID_REQUIRED", _CONTEXT))
    language = headers.get("x-mq-language")
    if language is None:
        found.append(Observation(
            "grpc.header", WARNING, None, "x-mq-language", "", "a LanguageCode name",
            f"{rpc} without x-mq-language: the proxy records the client as JAVA", _PIPELINE))
    elif language.upper() not in LANGUAGES:
        found.append(Observation(
            "grpc.header", WARNING, None, "x-mq-language", language[:40], "a LanguageCode name",
            f"x-mq-language {language[:40]!r} is not a LanguageCode name", _PIPELINE))
    if not headers.get("x-mq-client-version"):
        found.append(Observation(
            "grpc.header", INFO, None, "x-mq-client-version", "", "the SDK's version",
            f"{rpc} without x-mq-client-version: the proxy cannot tell the SDK's version",
            _PIPELINE))
    return found


def _check_send(request: Any, client_id: str, now_ms: int) -> list[Observation]:
    found = []
    for message in getattr(request, "messages", ()):
        topic = message.topic.name
        try:
            validate_topic(topic)
            send_properties(message, client_id, "", now_ms)
        except ProxyError as exc:
            status = Code.name(exc.code)
            found.append(Observation(
                "grpc.message", ERROR, None, "message", status, "a message the proxy accepts",
                f"SendMessage to {topic[:80]!r} refused: {status} ({exc})", _SEND))
        except Exception as exc:  # a request the checks cannot read is not a finding
            found.append(Observation(
                "grpc.message", INFO, None, "message", type(exc).__name__, "",
                f"the message could not be checked: {exc}", _SEND))
    return found
