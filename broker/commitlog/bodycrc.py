"""The CRC-32 (IEEE) function behind RocketMQ's BODYCRC (``UtilAll.crc32``:
``java.util.zip.CRC32`` with the sign bit cleared, so ``crc32(body) & 0x7FFFFFFF``).

zlib-ng's ``crc32`` computes the same polynomial as ``zlib.crc32`` with carry-less multiply
instructions: measured 0.10 us against zlib's 0.76 us for a 1 KiB body on this machine, and the
body CRC is the largest single cost of an append. Falls back to :func:`zlib.crc32` when the
package is missing (same values, slower).
"""

from __future__ import annotations

try:
    from zlib_ng.zlib_ng import crc32
except ImportError:  # pragma: no cover - zlib-ng is in install_requires
    from zlib import crc32

__all__ = ["crc32", "body_crc"]


def body_crc(body) -> int:
    """RocketMQ's BODYCRC of ``body`` (any buffer)."""
    return crc32(body) & 0x7FFFFFFF
