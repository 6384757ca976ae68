"""A raw grpcio client of a harness cluster's gRPC endpoint, built on this project's message
classes (the private pool): blocking calls made from a worker thread while the reactor serves."""

from __future__ import annotations

import time
from typing import Any

import grpc
from twisted.internet import threads

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.client.blocking import run_blocking

SERVICE = "/apache.rocketmq.v2.MessagingService/"
CLIENT_ID = "harness-client@1"
META = (("x-mq-client-id", CLIENT_ID), ("x-mq-language", "PYTHON"),
        ("x-mq-client-version", "5.1.2"))


def cls(name: str) -> Any:
    """A message class of the private pool."""
    return messages.message_class(name)


def enum(name: str, value: str) -> int:
    """The number of an apache.rocketmq.v2 enum value."""
    return messages.protocol().enum_descriptor(name).values_by_name[value].number


class GrpcClient:
    """Blocking MessagingService calls to ``endpoint``; each runs in a worker thread through
    ``run_blocking`` so the test's reactor keeps serving."""

    def __init__(self, endpoint: str) -> None:
        self.channel = grpc.insecure_channel(endpoint)

    def _unary(self, rpc: str, request: Any, response: str, timeout: float) -> Any:
        call = self.channel.unary_unary(SERVICE + rpc, request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=cls(response).FromString)
        return call(request, metadata=META, timeout=timeout)

    def _stream(self, rpc: str, request: Any, response: str, timeout: float) -> list[Any]:
        call = self.channel.unary_stream(SERVICE + rpc, request_serializer=lambda m: m.SerializeToString(),
                                         response_deserializer=cls(response).FromString)
        return list(call(request, metadata=META, timeout=timeout))

    def unary(self, rpc: str, request: Any, response: str, timeout: float = 10) -> Any:
        """A unary call; its response (grpc.RpcError on a non-OK gRPC status)."""
        return run_blocking(threads.deferToThread, self._unary, rpc, request, response, timeout,
                            timeout=timeout + 10)

    def stream(self, rpc: str, request: Any, response: str, timeout: float = 15) -> list[Any]:
        """A server-streaming call; every response."""
        return run_blocking(threads.deferToThread, self._stream, rpc, request, response, timeout,
                            timeout=timeout + 10)

    def send(self, topic: str, body: bytes, timeout: float = 10) -> Any:
        """SendMessage of one NORMAL message; the SendMessageResponse."""
        req = cls("SendMessageRequest")()
        m = req.messages.add()
        m.topic.name = topic
        m.body = body
        sp = m.system_properties
        sp.tag = "TagA"
        sp.message_id = f"01{time.monotonic_ns():030X}"[:32]
        sp.body_encoding = enum("Encoding", "IDENTITY")
        sp.message_type = enum("MessageType", "NORMAL")
        sp.born_timestamp.seconds = int(time.time())
        return self.unary("SendMessage", req, "SendMessageResponse", timeout)

    def receive(self, topic: str, group: str, invisible_s: int = 30, polling_s: int = 5) -> list[Any]:
        """ReceiveMessage (every ReceiveMessageResponse: status, messages, delivery timestamp)."""
        req = cls("ReceiveMessageRequest")()
        req.group.name = group
        req.message_queue.topic.name = topic
        req.message_queue.id = -1
        req.filter_expression.type = enum("FilterType", "TAG")
        req.filter_expression.expression = "*"
        req.batch_size = 16
        req.invisible_duration.seconds = invisible_s
        req.long_polling_timeout.seconds = polling_s
        return self.stream("ReceiveMessage", req, "ReceiveMessageResponse", timeout=polling_s + 10)

    def ack(self, topic: str, group: str, message: Any) -> Any:
        """AckMessage of one received message; the AckMessageResponse."""
        req = cls("AckMessageRequest")()
        req.group.name, req.topic.name = group, topic
        entry = req.entries.add()
        entry.message_id = message.system_properties.message_id
        entry.receipt_handle = message.system_properties.receipt_handle
        return self.unary("AckMessage", req, "AckMessageResponse")

    def close(self) -> None:
        """Close the channel."""
        self.channel.close()


def received(responses: list[Any]) -> list[Any]:
    """The messages among ReceiveMessage's responses."""
    return [r.message for r in responses if r.WhichOneof("content") == "message"]


def delivery_ms(responses: list[Any]) -> int | None:
    """The delivery timestamp (ms) ending ReceiveMessage's responses."""
    for r in responses:
        if r.WhichOneof("content") == "delivery_timestamp":
            ts = r.delivery_timestamp
            return ts.seconds * 1000 + ts.nanos // 1_000_000
    return None
