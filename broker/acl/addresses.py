"""White-list address patterns of ACL 1.0 (Java ``RemoteAddressStrategyFactory`` and the address
helpers of ``AclUtils``, RocketMQ 4.9.8).

A pattern from ``plain_acl.yml`` (``globalWhiteRemoteAddresses`` or an account's
``whiteRemoteAddress``) becomes a :class:`RemoteAddressStrategy` whose :meth:`matches` takes the
peer's host (the part of Java's ``ip:port`` before the last colon). The shapes are RocketMQ's:
blank (matches nothing), ``*`` / ``*.*.*.*`` / ``*:*:*:*:*:*:*:*`` (matches everything),
``192.168.0.{1,2}``, ``192.168.0.1,192.168.0.2``, ``192.168.1.1-100``, ``192.168.*.*``, and one
address; IPv6 likewise. Where Java would fail with an unchecked exception (an out-of-range index,
a number that does not parse) :func:`strategy_for` raises :class:`AddressPatternError` instead.
"""

from __future__ import annotations

import ipaddress
import re

__all__ = [
    "AddressPatternError",
    "RemoteAddressStrategy",
    "expand_ip",
    "strategy_for",
]

_JAVA_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_JAVA_HEX = re.compile(r"[+-]?[0-9A-Fa-f]+", re.ASCII)
_JAVA_TRIM = "".join(chr(i) for i in range(33))


class AddressPatternError(ValueError):
    """A white-list pattern RocketMQ rejects (or would fail on)."""


def _split(text: str, sep: str) -> list[str]:
    """Commons-lang ``StringUtils.split``: no empty tokens."""
    return [t for t in text.split(sep) if t]


def _java_int(text: str, radix: int = 10) -> int:
    """``Integer.parseInt`` (ASCII digits, optional sign, 32-bit) or AddressPatternError."""
    pattern = _JAVA_INT if radix == 10 else _JAVA_HEX
    if not pattern.fullmatch(text):
        raise AddressPatternError(f"not a number: {text!r}")
    value = int(text, radix)
    if not -(2**31) <= value < 2**31:
        raise AddressPatternError(f"number out of range: {text!r}")
    return value


def _is_blank(text: str | None) -> bool:
    return text is None or not text.strip(_JAVA_TRIM)


def is_ipv4(text: str) -> bool:
    """``InetAddressValidator.isValidInet4Address`` (no leading zeros)."""
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def is_ipv6(text: str) -> bool:
    """``InetAddressValidator.isValidInet6Address``."""
    if "%" in text:
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def expand_ip(address: str, parts: int) -> str:
    """``AclUtils.expandIP``: upper-case, ``::`` widened to ``parts`` groups, groups padded to 4."""
    address = address.upper()
    pad = parts - address.count(":")
    if pad > 0:
        address = address.replace("::", ":" * (pad + 1))
    if not address:
        return ""
    return ":".join(g.rjust(4, "0") for g in address.split(":"))


def _in_scope(pattern: str, count: int) -> bool:
    """``AclUtils.isScope(netaddress, index)``: the first ``count`` groups are in range."""
    if ":" in pattern:
        groups = _split(expand_ip(pattern, 8), ":")
        for g in groups[:count]:
            try:
                if not 0 <= _java_int(g, 16) <= 0xFFFF:
                    return False
            except AddressPatternError:
                return False
        return len(groups) >= count
    groups = _split(pattern, ".")
    if len(groups) != 4:
        return False
    return all(0 <= _java_int(g.strip(_JAVA_TRIM)) <= 255 for g in groups[:count])


def _verify(pattern: str, count: int) -> None:
    if not _in_scope(pattern, count):
        raise AddressPatternError(f"Netaddress examine scope Exception netaddress is {pattern}")


class RemoteAddressStrategy:
    """Java ``RemoteAddressStrategy``: does a peer host match this white-list entry?"""

    def matches(self, host: str | None) -> bool:
        """True if ``host`` (no port) is white-listed by this entry."""
        raise NotImplementedError


class _Any(RemoteAddressStrategy):
    """``NullRemoteAddressStrategy``: ``*`` matches every peer."""

    def matches(self, host: str | None) -> bool:
        return True


class _Blank(RemoteAddressStrategy):
    """``BlankRemoteAddressStrategy``: an empty pattern matches none."""

    def matches(self, host: str | None) -> bool:
        return False


def _canonical(address: str) -> str:
    if is_ipv4(address):
        return address
    if is_ipv6(address):
        return expand_ip(address, 8)
    raise AddressPatternError(f"Netaddress examine Exception netaddress is {address}")


class _Multiple(RemoteAddressStrategy):
    """``MultipleRemoteAddressStrategy``: a set of exact addresses."""

    def __init__(self, addresses: list[str]) -> None:
        self.addresses = frozenset(_canonical(a) for a in addresses)

    def matches(self, host: str | None) -> bool:
        if host is None:
            return False
        if is_ipv6(host):
            host = expand_ip(host, 8)
        return host in self.addresses


class _One(RemoteAddressStrategy):
    """``OneRemoteAddressStrategy``: one exact address."""

    def __init__(self, address: str) -> None:
        _canonical(address)
        self.expanded = expand_ip(address, 8).upper()

    def matches(self, host: str | None) -> bool:
        return host is not None and expand_ip(host, 8).upper() == self.expanded


class _Range(RemoteAddressStrategy):
    """``RangeRemoteAddressStrategy``: ``a.b.c.1-100``, ``a.b.*.*``, ``a:b:…:1-ff:*``.

    The group at ``index`` must lie in [start, end]; the groups before it equal ``head``.
    """

    def __init__(self, pattern: str) -> None:
        self.head: str | None = None
        self.start = 0
        self.end = 0
        self.index = 0
        if ":" in pattern:
            _ipv6_check(pattern)
            groups = _split(pattern, ":")
            for i in range(1, len(groups)):
                if self._analyse(groups, i, 16, 0xFFFF):
                    _verify(pattern, self.index - 1)
                    self.head = _v6_head(pattern)
                    self.index = len(_split(self.head, ":"))
                    break
        else:
            groups = _split(pattern, ".")
            if any(self._analyse(groups, i, 10, 255) for i in (1, 2, 3)):
                _verify(pattern, self.index - 1)
                self.head = "".join(g.strip(_JAVA_TRIM) + "." for g in groups[: self.index])
        if self.head is None:
            # Java leaves head null here and fails on the first request; refuse at load instead.
            raise AddressPatternError(f"RangeRemoteAddressStrategy matches nothing: {pattern}")

    def _analyse(self, groups: list[str], index: int, radix: int, top: int) -> bool:
        """Java ``analysis`` / ``ipv6Analysis`` (keeps Java's state between calls)."""
        if index >= len(groups):
            raise AddressPatternError(f"too few groups in {'.'.join(groups)}")
        value = groups[index].strip(_JAVA_TRIM)
        self.index = index
        if value == "*":
            self.start, self.end = 0, top
        elif "-" in value:
            if value.startswith("-"):
                raise AddressPatternError(
                    f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value}")
            bounds = _split(value, "-")
            if len(bounds) < 2:
                raise AddressPatternError(f"range without an end: {value}")
            self.start, self.end = _java_int(bounds[0], radix), _java_int(bounds[1], radix)
            if not (0 <= self.start <= top and 0 <= self.end <= top and self.start <= self.end):
                raise AddressPatternError(
                    "RangeRemoteAddressStrategy netaddress examine scope Exception "
                    f"start is {self.start} , end is {self.end}")
        return self.end > 0

    def matches(self, host: str | None) -> bool:
        if host is None or self.head is None:
            return False
        if is_ipv4(host):
            if not host.startswith(self.head):
                return False
            if self.index == 3:
                value = host[len(self.head):]
            elif self.index == 2:
                value = host[len(self.head): host.rindex(".")]
            else:
                value = host[len(self.head): host.rindex(".", 0, host.rindex("."))]
            return self.start <= int(value) <= self.end
        if is_ipv6(host):
            expanded = expand_ip(host, 8).upper()
            if expanded.startswith(self.head):
                value = expanded[5 * self.index: 5 * self.index + 4]
                return self.start <= int(value, 16) <= self.end
        return False


def _ipv6_check(pattern: str) -> None:
    """``AclUtils.IPv6AddressCheck``: ``*`` only last, ``-`` only in the last group(s)."""
    bad = AddressPatternError(f"Netaddress examine scope Exception netaddress is {pattern}")
    star, minus = pattern.find("*"), pattern.find("-")
    if star > -1 and star != len(pattern) - 1:
        raise bad
    if minus > -1:
        last = pattern.rfind(":")
        limit = last if star == -1 else pattern.rfind(":", 0, last)
        if minus <= limit:
            raise bad


def _v6_head(pattern: str) -> str:
    """``AclUtils.v6ipProcess``: the fixed groups before the range, expanded."""
    star, minus = "*" in pattern, "-" in pattern
    if star and minus:
        last = pattern.rfind(":")
        return expand_ip(pattern[: pattern[:last].rfind(":")], 6)
    if not star and not minus:
        return expand_ip(pattern, 8)
    return expand_ip(pattern[: pattern.rfind(":")], 7)


def strategy_for(pattern: str | None) -> RemoteAddressStrategy:
    """``RemoteAddressStrategyFactory.getRemoteAddressStrategy`` for one pattern."""
    if _is_blank(pattern):
        return _Blank()
    assert pattern is not None
    if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return _Any()
    if pattern.endswith("}"):
        groups = _split(pattern, ":" if ":" in pattern else ".")
        if ":" not in pattern and len(groups) < 4:
            raise AddressPatternError(
                f"MultipleRemoteAddressStrategy has got a/some wrong format IP(s) {pattern}")
        last = groups[-1] if groups else ""
        if not last.startswith("{"):
            raise AddressPatternError(
                f"MultipleRemoteAddressStrategy netaddress examine scope Exception {pattern}")
        prefix = pattern[: pattern.index("{")]
        return _Multiple([prefix + p for p in _split(last[1:-1], ",")])
    if "," in pattern:
        return _Multiple(_split(pattern, ","))
    if "*" in pattern or "-" in pattern:
        return _Range(pattern)
    return _One(pattern)
