"""Java integer widths and ``DataConverter``'s check-point bitmap, as the revive logic uses them
(re-exported by :mod:`rocketmq_emu.broker.pop.revive_bodies`).

The narrowing functions (``(byte)``, ``(int)``, ``(long)`` casts) answer a value already in range
without arithmetic: they run several times per ACK. The bitmap is a Java ``int`` that
``DataConverter`` widens to a ``long`` (sign-extended) and tests with ``1L << index`` (the shift
taken mod 64): so bit ``j`` of a check point is bit ``j & 63`` of that 64-bit value, and indexes
32..63 read the sign. :func:`unacked_count` counts the clear bits of ``0 <= j < num`` with
``int.bit_count`` instead of testing each bit.
"""

from __future__ import annotations

_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1
_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1
_MASK64 = (1 << 64) - 1


def _wrap(value: int, bits: int) -> int:
    """Two's-complement narrowing, as Java's casts do."""
    mask = (1 << bits) - 1
    value &= mask
    return value - (1 << bits) if value >> (bits - 1) else value


def java_byte(value: int) -> int:
    """``(byte) value``."""
    if type(value) is int and -128 <= value <= 127:
        return value
    return _wrap(int(value), 8)


def java_int(value: int) -> int:
    """``(int) value``."""
    if type(value) is int and _INT_MIN <= value <= _INT_MAX:
        return value
    return _wrap(int(value), 32)


def java_long(value: int) -> int:
    """``(long) value`` (and long overflow)."""
    if type(value) is int and _LONG_MIN <= value <= _LONG_MAX:
        return value
    return _wrap(int(value), 64)


def _as_long_bits(value: int) -> int:
    """The int bitmap widened to a long, as an unsigned 64-bit value: bit ``k`` is what
    ``DataConverter.getBit`` answers for any index ``j`` with ``j & 63 == k``."""
    return java_int(value) & _MASK64


# --- DataConverter bitmap ----------------------------------------------------------------------
def set_bit(value: int, index: int, flag: bool = True) -> int:
    """``DataConverter.setBit``: bit ``index`` of an int set or cleared, computed on a long
    (``1L << index``, the shift taken mod 64) and cast back to int, so indexes 32..63 change
    nothing. The result is a signed 32-bit value (bit 31 makes it negative)."""
    bit = 1 << (index & 63)
    value = java_int(value)
    return java_int(value | bit if flag else value & ~bit)


def get_bit(value: int, index: int) -> bool:
    """``DataConverter.getBit``: the int widened to a long (sign-extended) tested against
    ``1L << index``; so a negative bitmap also answers true for indexes 32..63."""
    return (java_int(value) >> (index & 63)) & 1 == 1


def acked_indexes(bit_map: int, num: int) -> list[int]:
    """The indexes ``0 <= j < num`` whose bit is set (``PopReviveService.reviveMsgFromCk`` skips
    them)."""
    bits = _as_long_bits(bit_map)
    return [j for j in range(num) if bits >> (j & 63) & 1]


def unacked_indexes(bit_map: int, num: int) -> list[int]:
    """The indexes ``0 <= j < num`` whose bit is clear: the messages revive sends to retry."""
    bits = _as_long_bits(bit_map)
    return [j for j in range(num) if not bits >> (j & 63) & 1]


def unacked_count(bit_map: int, num: int) -> int:
    """``len(unacked_indexes(bit_map, num))`` without the scan: indexes wrap every 64, so each
    full round of 64 counts the clear bits of the 64-bit value, the rest those of its low
    ``num % 64`` bits."""
    if num <= 0:
        return 0
    bits = _as_long_bits(bit_map)
    rounds, rest = divmod(num, 64)
    clear = rest - (bits & ((1 << rest) - 1)).bit_count()
    if rounds:
        clear += rounds * (64 - bits.bit_count())
    return clear
