"""The control API's bearer-token check: which hosts need a token, how a token is chosen and
checked, and the 401 answer (``client.control_api``), without a network."""

from __future__ import annotations

import io
import json

import pytest

from rocketmq_emu.client.control_api import (
    ControlResource,
    bearer_ok,
    is_loopback,
    resolve_token,
    validate_token,
)
from rocketmq_emu.client.control_spec import OPENAPI


class FakeRequest:
    """What :meth:`ControlResource.render` uses of a ``twisted.web`` request."""

    def __init__(self, path: str, method: str = "GET", authorization: str | None = None) -> None:
        self.method = method.encode()
        self.path = path.encode()
        self.uri = self.path
        self.content = io.BytesIO(b"")
        self.headers_in = {} if authorization is None else {b"authorization": authorization.encode()}
        self.headers_out: dict[bytes, bytes] = {}
        self.code: int | None = None
        self.finished = False

    def getHeader(self, name: bytes) -> bytes | None:  # noqa: N802 - twisted's name
        return self.headers_in.get(name.lower())

    def setHeader(self, name: bytes, value: bytes) -> None:  # noqa: N802 - twisted's name
        self.headers_out[name.lower()] = value

    def setResponseCode(self, code: int) -> None:  # noqa: N802 - twisted's name
        self.code = code


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1", "[::1]"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "10.1.2.3", "192.168.0.1", "example.com",
                                  "localhost.evil.com"])
def test_other_hosts_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_loopback_without_a_token_requires_none() -> None:
    assert resolve_token("127.0.0.1", None) == (None, False)
    assert resolve_token("localhost", None) == (None, False)


def test_a_given_token_is_required_on_loopback_too() -> None:
    assert resolve_token("127.0.0.1", "s3cret") == ("s3cret", False)
    assert resolve_token("0.0.0.0", "s3cret") == ("s3cret", False)


def test_a_non_loopback_host_without_a_token_gets_a_fresh_generated_one() -> None:
    first, generated = resolve_token("0.0.0.0", None)
    second, _ = resolve_token("0.0.0.0", None)
    assert generated and first and second and first != second
    assert len(first) >= 32 and validate_token(first) == first


@pytest.mark.parametrize("token", ["", "two words", "tab\there", "quote\"", "é", "a,b", "=abc"])
def test_tokens_that_cannot_be_sent_as_bearer_tokens_are_refused(token: str) -> None:
    with pytest.raises(ValueError):
        validate_token(token)
    with pytest.raises(ValueError):
        resolve_token("127.0.0.1", token)


@pytest.mark.parametrize("header", ["Bearer tok-1", "bearer tok-1", "BEARER  tok-1 ", b"Bearer tok-1"])
def test_bearer_ok_accepts_the_token(header: str | bytes) -> None:
    assert bearer_ok(header, "tok-1")


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer ", "Bearer tok-2", "Bearer tok-1x",
                                    "Bearer tok", "Basic dG9rLTE=", "tok-1", "Token tok-1",
                                    "Bearer tök-1"])
def test_bearer_ok_refuses_anything_else(header: str | None) -> None:
    assert not bearer_ok(header, "tok-1")


def test_bearer_ok_compares_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The token is compared with hmac.compare_digest, not ==."""
    import rocketmq_emu.client.control_api as api

    calls: list[tuple[bytes, bytes]] = []

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return a == b

    monkeypatch.setattr(api.hmac, "compare_digest", spy)
    assert bearer_ok("Bearer abc", "abc") and not bearer_ok("Bearer abd", "abc")
    assert calls == [(b"abc", b"abc"), (b"abd", b"abc")]


def render(resource: ControlResource, request: FakeRequest) -> tuple[int | None, dict]:
    body = resource.render(request)
    return request.code, json.loads(body)


def test_without_a_token_every_request_is_served_as_before() -> None:
    resource = ControlResource(None, None, None)  # type: ignore[arg-type]
    code, doc = render(resource, FakeRequest("/openapi.json"))
    assert code == 200 and doc == json.loads(json.dumps(OPENAPI))
    code, _ = render(resource, FakeRequest("/openapi.json", authorization="Bearer anything"))
    assert code == 200


def test_a_request_without_the_token_is_answered_401_with_a_bearer_challenge() -> None:
    resource = ControlResource(None, None, None, token="tok-1")  # type: ignore[arg-type]
    request = FakeRequest("/openapi.json")
    code, doc = render(resource, request)
    assert code == 401 and "bearer token" in doc["error"]
    assert request.headers_out[b"www-authenticate"].startswith(b"Bearer ")
    assert request.headers_out[b"content-type"] == b"application/json"


@pytest.mark.parametrize("path", ["/openapi.json", "/", "/no/such/endpoint", "/reset"])
def test_a_wrong_token_is_answered_401_before_routing(path: str) -> None:
    resource = ControlResource(None, None, None, token="tok-1")  # type: ignore[arg-type]
    request = FakeRequest(path, method="POST" if path == "/reset" else "GET",
                          authorization="Bearer tok-2")
    code, doc = render(resource, request)
    assert code == 401 and doc == {"error": "invalid bearer token"}
    assert request.headers_out[b"www-authenticate"].startswith(b"Bearer ")
    assert b'error="invalid_token"' in request.headers_out[b"www-authenticate"]


def test_the_right_token_is_served() -> None:
    resource = ControlResource(None, None, None, token="tok-1")  # type: ignore[arg-type]
    code, doc = render(resource, FakeRequest("/openapi.json", authorization="Bearer tok-1"))
    assert code == 200 and doc["openapi"] == "3.0.3"


def test_openapi_describes_the_bearer_scheme_and_every_401() -> None:
    assert OPENAPI["components"]["securitySchemes"]["bearerAuth"] == {
        **OPENAPI["components"]["securitySchemes"]["bearerAuth"], "type": "http", "scheme": "bearer"}
    assert {"bearerAuth": []} in OPENAPI["security"]
    ops = [op for path in OPENAPI["paths"].values() for op in path.values()]
    # The dashboard's static files hold no data and are served without a token (security [{}]).
    open_ops = [op for op in ops if op.get("security") == [{}]]
    assert [op["summary"][:30] for op in open_ops] == ["The dashboard's static files ("]
    assert ops and all("401" in op["responses"] for op in ops if op not in open_ops)
    assert "WWW-Authenticate" in ops[0]["responses"]["401"]["headers"]
