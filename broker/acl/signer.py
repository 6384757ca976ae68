"""ACL 1.0 request signatures (Java ``AclUtils.combineRequestContent``, ``AclSigner`` and
``AclClientRPCHook``, RocketMQ 4.9.8).

The signed content is the extFields values, in the sorted order of their keys (Java ``TreeMap``:
UTF-16 code-unit order) without ``Signature``, UTF-8 encoded, followed by the body. The
signature is Base64(HMAC-SHA1(secretKey, content)).
"""

from __future__ import annotations

import binascii
import hmac
from collections.abc import Mapping

#: SessionCredentials.ACCESS_KEY / SIGNATURE / SECURITY_TOKEN: the extFields the hook adds.
ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
#: MixAll.UNIQUE_MSG_QUERY_FLAG: left out of the content by the broker's validator.
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"


def _java_key(key: str) -> bytes:
    """Sort key giving Java's ``String.compareTo`` order (UTF-16 code units)."""
    return key.encode("utf-16-be", "surrogatepass")


def _utf8(text: str) -> bytes:
    """Java ``getBytes(UTF_8)``: an unpaired surrogate becomes ``?``."""
    return text.encode("utf-8", "replace")


#: The signed keys in order, by (the extFields' keys in their order, excluded keys): a client
#: sends the same header keys again and again, so the broker sorts each set once. Bounded: a
#: peer inventing key sets only makes it start over.
_ORDERS: dict[tuple[tuple[str, ...], frozenset[str]], tuple[str, ...]] = {}
_ORDERS_MAX = 4096


def _signed_keys(keys: tuple[str, ...], exclude: frozenset[str]) -> tuple[str, ...]:
    """``keys`` without ``exclude`` in Java ``TreeMap`` order."""
    order = _ORDERS.get((keys, exclude))
    if order is None:
        # Code-point order is UTF-16 order for keys without characters above U+FFFF.
        ordered = sorted(keys) if "".join(keys).isascii() else sorted(keys, key=_java_key)
        order = tuple(k for k in ordered if k not in exclude)
        if len(_ORDERS) >= _ORDERS_MAX:
            _ORDERS.clear()
        _ORDERS[(keys, exclude)] = order
    return order


def content_to_sign(ext_fields: Mapping[str, str], body: bytes | None,
                    exclude: frozenset[str] = frozenset({SIGNATURE})) -> bytes:
    """The bytes that are signed: values by sorted key (without ``exclude``), then the body."""
    values = "".join(map(ext_fields.__getitem__, _signed_keys(tuple(ext_fields), exclude)))
    return _utf8(values) + (body or b"")


def sign(content: bytes, secret_key: str) -> str:
    """``AclSigner.calSignature``: Base64(HMAC-SHA1(secretKey as UTF-8, content))."""
    digest = hmac.digest(_utf8(secret_key), content, "sha1")  # the one-shot C path
    return binascii.b2a_base64(digest, newline=False).decode("ascii")


def sign_request(ext_fields: dict[str, str], body: bytes | None, access_key: str,
                 secret_key: str, security_token: str | None = None) -> dict[str, str]:
    """``AclClientRPCHook.doBeforeRequest``: add AccessKey (and SecurityToken), then Signature.

    Changes and returns ``ext_fields``.
    """
    ext_fields[ACCESS_KEY] = access_key
    if security_token is not None:
        ext_fields[SECURITY_TOKEN] = security_token
    ext_fields[SIGNATURE] = sign(content_to_sign(ext_fields, body), secret_key)
    return ext_fields
