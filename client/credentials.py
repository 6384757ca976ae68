"""Credentials a client signs its requests with (Java ``SessionCredentials`` and
``AclClientRPCHook``, RocketMQ 4.9.8 ``acl`` module).

Given to a client (``Producer(..., credentials=("ak", "sk"))``, any consumer or ``Admin`` the
same way), every request it sends carries ``AccessKey`` (and ``SecurityToken`` when set) and a
``Signature`` made by :func:`rocketmq_emu.broker.acl.signer.sign_request`, the one signer the
broker's validator checks against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker.acl.signer import sign_request
from rocketmq_emu.broker.remoting.command import RemotingCommand


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """Java ``SessionCredentials``: access key, secret key and an optional security token."""

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = None

    def sign(self, cmd: RemotingCommand) -> RemotingCommand:
        """``AclClientRPCHook.doBeforeRequest``: add the fields and the signature to ``cmd``."""
        sign_request(cmd.ext_fields, cmd.body, self.access_key, self.secret_key,
                     self.security_token)
        return cmd


def as_credentials(value: Any) -> SessionCredentials | None:
    """None, a :class:`SessionCredentials`, or ``(access_key, secret_key[, security_token])``."""
    if value is None or isinstance(value, SessionCredentials):
        return value
    if isinstance(value, (tuple, list)) and len(value) in (2, 3):
        return SessionCredentials(*(str(v) if v is not None else None for v in value))
    raise TypeError("credentials: expected (access_key, secret_key[, security_token]) or "
                    f"SessionCredentials, got {type(value).__name__}")
