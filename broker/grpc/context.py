"""``ProxyContext``: who is calling, read from a gRPC call's metadata.

The 5.x SDKs send ``x-mq-client-id``, ``x-mq-language``, ``x-mq-client-version``,
``x-mq-namespace`` with every call (``ContextInitPipeline`` / ``GrpcConstants`` of the proxy).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocketmq_emu.broker.grpc.status import Code, ProxyError


@dataclass(slots=True)
class ProxyContext:
    """One call's caller. ``remaining_ms`` is the call's deadline left (None: no deadline)."""

    client_id: str
    language: str
    client_version: str
    namespace: str
    remote_address: str
    remaining_ms: int | None
    rpc: str = ""
    #: The gRPC call being served (None for the proxy's own requests, e.g. renewals).
    call: Any = None

    @classmethod
    def from_call(cls, call: Any, now: float) -> ProxyContext:
        """The context of a :class:`~rocketmq_emu.broker.grpc.server.ServerCall` at ``now``
        (seconds on the call's clock)."""
        headers = call.metadata.mq_headers  # one pass over the metadata
        host, port = call.peer
        deadline = call.deadline
        return cls(
            client_id=headers.get("x-mq-client-id", ""),
            language=headers.get("x-mq-language", "JAVA"),
            client_version=headers.get("x-mq-client-version", ""),
            namespace=headers.get("x-mq-namespace", ""),
            remote_address=f"{host}:{port}",
            remaining_ms=None if deadline is None else max(0, int((deadline - now) * 1000)),
            rpc=call.method.name,
            call=call,
        )

    def require_client_id(self) -> None:
        """``GrpcMessagingApplication.validateContext``."""
        if not self.client_id.strip():
            raise ProxyError(Code.CLIENT_ID_REQUIRED, "client id cannot be empty")
