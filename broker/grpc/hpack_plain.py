"""A stateless HPACK encoder for the gRPC server's own header blocks (RFC 7541), with a cache.

A general encoder (hpack's) indexes every header into the dynamic table, so the same list encodes
differently as the table moves and each block costs a full encode. The server sends few distinct
blocks (Response-Headers, OK Trailers, a few error Trailers), so this encoder never touches the
dynamic table: a header that is whole in the static table is sent indexed (6.1), every other one
as a literal without indexing (6.2.2: indexed name where the static table has it, no Huffman).
The output is then a pure function of the header list, and is cached.

The first block, and the first one after the peer changes SETTINGS_HEADER_TABLE_SIZE, starts with
a dynamic table size update to 0 (6.3; 4.2: always within the peer's limit): our table is empty
and stays so.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["PlainEncoder"]

#: RFC 7541 Appendix A entries the server's blocks use: whole fields and names.
_STATIC_FIELDS = {(b":status", b"200"): 8, (b":status", b"400"): 12, (b":status", b"404"): 13,
                  (b":status", b"500"): 14}
_STATIC_NAMES = {b":status": 8, b"content-type": 31, b"content-length": 28}
#: Distinct header lists kept; more (e.g. error messages naming topics) are encoded uncached.
_CACHE_LIMIT = 4096
#: "Dynamic Table Size Update" (6.3) to 0: 001 and a 5-bit prefix integer of 0.
_SIZE_UPDATE_0 = b"\x20"


def _integer(value: int, prefix_bits: int, first: int) -> bytearray:
    """An HPACK integer (5.1) with ``first``'s high bits above an N-bit prefix."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytearray((first | value,))
    out = bytearray((first | limit,))
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return out


def _string(data: bytes) -> bytes:
    """A string literal (5.2), not Huffman-coded."""
    return bytes(_integer(len(data), 7, 0)) + data


def encode_block(headers: Iterable[tuple[bytes, bytes]]) -> bytes:
    """The header block of ``headers`` (bytes pairs) without any dynamic table reference."""
    out = bytearray()
    for name, value in headers:
        index = _STATIC_FIELDS.get((name, value))
        if index is not None:
            out += _integer(index, 7, 0x80)
            continue
        index = _STATIC_NAMES.get(name)
        if index is not None:
            out += _integer(index, 4, 0x00)
        else:
            out += b"\x00" + _string(name)
        out += _string(value)
    return bytes(out)


#: Blocks by header list, shared by all connections (a block depends on nothing else).
_CACHE: dict[tuple[tuple[bytes, bytes], ...], bytes] = {}


class PlainEncoder:
    """The encoder of :class:`~rocketmq_emu.broker.grpc.http2.H2ServerConnection` (``encode``;
    ``header_table_size`` is set from the peer's SETTINGS_HEADER_TABLE_SIZE)."""

    def __init__(self) -> None:
        self._announce = True
        self._table_size = 4096

    @property
    def header_table_size(self) -> int:
        """The peer's SETTINGS_HEADER_TABLE_SIZE (we use none of it)."""
        return self._table_size

    @header_table_size.setter
    def header_table_size(self, value: int) -> None:
        self._table_size = value
        self._announce = True

    def encode(self, headers: Iterable[tuple[bytes, bytes]], huffman: bool = True) -> bytes:
        """The block of ``headers`` (``huffman`` is ignored: literals are sent plain)."""
        key = tuple(headers)
        block = _CACHE.get(key)
        if block is None:
            block = encode_block(key)
            if len(_CACHE) < _CACHE_LIMIT:
                _CACHE[key] = block
        if self._announce:
            self._announce = False
            return _SIZE_UPDATE_0 + block
        return block
