"""ACL 1.0 request signatures (Java ``AclUtils.combineRequestContent``, ``AclSigner`` and
``AclClientRPCHook``, RocketMQ 4.9.8).

The signed content is the extFields values, in the sorted order of their keys (Java ``TreeMap``:
UTF-16 code-unit order) without ``Signature``, UTF-8 encoded, followed by the body. The
signature is Base64(HMAC-SHA1(secretKey, content)).
"""

from __future__ import annotations

import base64
import hashlib
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


def content_to_sign(ext_fields: Mapping[str, str], body: bytes | None,
                    exclude: frozenset[str] = frozenset({SIGNATURE})) -> bytes:
    """The bytes that are signed: values by sorted key (without ``exclude``), then the body."""
    # Code-point order is UTF-16 order for keys without characters above U+FFFF; the common
    # all-ASCII case sorts without encoding every key (a third of the broker's check).
    if "".join(ext_fields).isascii():
        keys = sorted(ext_fields)
    else:
        keys = sorted(ext_fields, key=_java_key)
    values = "".join(ext_fields[k] for k in keys if k not in exclude)
    return _utf8(values) + (body or b"")


def sign(content: bytes, secret_key: str) -> str:
    """``AclSigner.calSignature``: Base64(HMAC-SHA1(secretKey as UTF-8, content))."""
    digest = hmac.new(_utf8(secret_key), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


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
