"""White-list address patterns (broker/acl/addresses.py, Java RemoteAddressStrategyFactory)."""

from __future__ import annotations

import pytest

from rocketmq_emu.broker.acl.addresses import AddressPatternError, expand_ip, strategy_for


def test_star_matches_everything() -> None:
    """`*` matches any peer."""
    assert strategy_for("*").matches("203.0.113.9")


def test_blank_matches_nothing() -> None:
    """A blank pattern matches no peer."""
    assert not strategy_for("  ").matches("127.0.0.1")


def test_braces_list_last_group() -> None:
    """`192.168.0.{1,2}` matches .1 and .2 only."""
    s = strategy_for("192.168.0.{1,2}")
    assert [s.matches(f"192.168.0.{i}") for i in (1, 2, 3)] == [True, True, False]


def test_comma_list() -> None:
    """A comma-separated list matches its addresses."""
    s = strategy_for("127.0.0.1,10.0.0.2")
    assert s.matches("10.0.0.2") and not s.matches("10.0.0.3")


def test_range_last_group() -> None:
    """`192.168.1.1-100` matches 1..100 in the last group."""
    s = strategy_for("192.168.1.1-100")
    assert [s.matches(f"192.168.1.{i}") for i in (0, 1, 100, 101)] == [False, True, True, False]


def test_star_groups() -> None:
    """`192.168.*.*` matches the /16."""
    s = strategy_for("192.168.*.*")
    assert s.matches("192.168.7.9") and not s.matches("192.169.7.9")


def test_three_group_star_is_refused() -> None:
    """`192.168.*` is refused: RocketMQ wants four groups (AclUtils.isScope)."""
    with pytest.raises(AddressPatternError):
        strategy_for("192.168.*")


def test_one_ipv6_address_expanded() -> None:
    """One IPv6 address matches its other spellings."""
    assert strategy_for("::1").matches("0:0:0:0:0:0:0:1")


def test_ipv6_range() -> None:
    """An IPv6 range in the last group."""
    s = strategy_for("1:2:3:4:5:6:7:1-ff")
    assert s.matches("1:2:3:4:5:6:7:a") and not s.matches("1:2:3:4:5:6:7:100")


def test_invalid_single_address() -> None:
    """A single pattern that is no address is refused."""
    with pytest.raises(AddressPatternError):
        strategy_for("not-an-ip")


@pytest.mark.parametrize("pattern", ["1.2.3.-4", "1.2.3.300-301", "1.2.3.5-", "1.2.x-3.4",
                                     "1.2.3.0-0", "1.{2,3}", "1:2:*:4"])
def test_malformed_ranges_are_errors(pattern: str) -> None:
    """Patterns Java refuses or fails on are an AddressPatternError, never another exception."""
    with pytest.raises(AddressPatternError):
        strategy_for(pattern)


def test_expand_ip() -> None:
    """AclUtils.expandIP widens :: and pads groups."""
    assert expand_ip("::1", 8) == "0000:0000:0000:0000:0000:0000:0000:0001"
