"""The ``apache.rocketmq.v2.Status`` a response carries, and the errors that become one.

The 5.x proxy answers every RPC with gRPC status OK and puts the outcome in the response's
``status`` field (``GrpcMessagingApplication.writeResponse``): a failed request is an ordinary
response whose ``Status.code`` is not ``OK``. :class:`ProxyError` is this project's
``GrpcProxyException``; :func:`status_of` is ``ResponseBuilder.buildStatus(Throwable)``.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.remoting.codes import ResponseCode

log = logging.getLogger(__name__)


class _Codes:
    """``apache.rocketmq.v2.Code`` values by name (``Code.OK`` ...), read from the descriptor."""

    def __init__(self) -> None:
        self._by_name: dict[str, int] | None = None

    def _load(self) -> dict[str, int]:
        if self._by_name is None:
            enum = messages.protocol().enum_descriptor("Code")
            self._by_name = {v.name: v.number for v in enum.values}
        return self._by_name

    def __getattr__(self, name: str) -> int:
        try:
            value = self._load()[name]
        except KeyError:
            raise AttributeError(name) from None
        setattr(self, name, value)  # later reads are plain attribute reads
        return value

    def name(self, number: int) -> str:
        """The enum name of ``number`` (``str(number)`` if unknown)."""
        for key, value in self._load().items():
            if value == number:
                return key
        return str(number)


#: ``apache.rocketmq.v2.Code``.
Code = _Codes()


class ProxyError(Exception):
    """``GrpcProxyException``: a request refused with a ``Code`` and a message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def remoting_code(response_code: int) -> int:
    """``ResponseBuilder.buildCode``: a broker response code as a gRPC ``Code`` (anything not in
    Java's small table is INTERNAL_SERVER_ERROR)."""
    mapping = {
        ResponseCode.SUCCESS: Code.OK,
        ResponseCode.SYSTEM_BUSY: Code.TOO_MANY_REQUESTS,
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED: Code.NOT_IMPLEMENTED,
        ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: Code.CONSUMER_GROUP_NOT_FOUND,
    }
    return mapping.get(response_code, Code.INTERNAL_SERVER_ERROR)


class BrokerError(ProxyError):
    """A broker answered a remoting request with an error (``MQBrokerException``)."""

    def __init__(self, response_code: int, remark: str | None) -> None:
        super().__init__(remoting_code(response_code),
                         remark if remark is not None else str(response_code))
        self.response_code = response_code


def build_status(code: int, message: str | None = None) -> Any:
    """``ResponseBuilder.buildStatus(Code, String)``: a Status message (the code's name when no
    message is given)."""
    status = messages.message_class("Status")()
    status.code = code
    status.message = message if message is not None else Code.name(code)
    return status


def ok_status() -> Any:
    """``Status{OK, "OK"}``."""
    return build_status(Code.OK, "OK")


def set_ok(status: Any) -> None:
    """Make a response's ``status`` field ``Status{OK, "OK"}`` in place (the common answer)."""
    status.code = Code.OK
    status.message = "OK"


def status_of(exc: BaseException) -> Any:
    """``ResponseBuilder.buildStatus(Throwable)``: the Status for an exception raised while
    serving a request (unexpected ones are logged and become INTERNAL_SERVER_ERROR)."""
    if isinstance(exc, ProxyError):
        return build_status(exc.code, exc.message)
    log.error("internal server error", exc_info=exc)
    return build_status(Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
