"""The HPACK decoder of the gRPC server's request header blocks (RFC 7541).

:class:`HeaderDecoder` replaces the ``hpack`` library's Decoder, which logs about thirty debug
calls per block and walks generic code even when every field is an index: here one loop reads
the representations (RFC 7541 6), with the static table (Appendix A, taken from ``hpack``'s
:class:`~hpack.table.HeaderTable` rather than retyped) and one dynamic table per connection
(2.3.2, 4: size accounting with the 32-octet entry overhead, eviction, size updates bounded by
our SETTINGS_HEADER_TABLE_SIZE). Huffman-coded string literals (5.2, Appendix B) are decoded with
``hpack``'s own state machine (:data:`~hpack.huffman_table.HUFFMAN_TABLE`, a nibble a step),
composed once into a step an octet (:func:`decode_huffman`): the 5.x SDKs Huffman-code a fresh
request id, date and signature in every request, and hpack's function took 15 us of an
80-octet signature where this takes 5.

HPACK is bit-level prefix integers and string literals, not fixed byte layouts: read in plain
code. Every malformed block (a bad index, an integer over the limit, a truncated block, a size
update over the limit or after a field, a bad Huffman string) raises :class:`HeaderBlockError`,
which the connection turns into COMPRESSION_ERROR (a connection error, RFC 9113 4.3): the dynamic
table is no longer in step with the peer's.

A header list over ``max_header_list_size`` (RFC 9113 6.5.2; an "HPACK bomb" references one large
dynamic entry thousands of times) is not that: fields past the limit are dropped as they come
(memory stays bounded by the limit), the rest of the block is still decoded so the dynamic table
follows the peer's (RFC 9113 10.5.1: "the header block MUST be processed to ensure a consistent
connection state"), then :class:`HeaderListTooLarge` is raised: a stream error, and the
connection, whose other calls did nothing wrong, carries on. Stopping at the limit instead would
leave the table out of step and force a connection error. The work stays linear in the block's
octets, which the connection bounds.

Decoded fields are plain ``(name, value)`` bytes pairs; whether a field was "never indexed"
(6.2.3) is not kept, since the server re-encodes none of them.
"""

from __future__ import annotations

import re
from collections import deque
from functools import cache

from hpack.exceptions import HPACKDecodingError
from hpack.huffman_table import HUFFMAN_COMPLETE, HUFFMAN_EMIT_SYMBOL, HUFFMAN_FAIL, HUFFMAN_TABLE
from hpack.table import HeaderTable

__all__ = ["STATIC_TABLE", "HeaderBlockError", "HeaderDecoder", "HeaderListTooLarge", "decode_huffman"]

#: RFC 7541 Appendix A: the 61 static entries; entry ``i`` (1-based) is ``STATIC_TABLE[i - 1]``.
STATIC_TABLE: tuple[tuple[bytes, bytes], ...] = tuple(HeaderTable.STATIC_TABLE)
_STATIC_COUNT = len(STATIC_TABLE)
#: Indexed by the HPACK index itself (0 is never valid, 6.1), so the common lookup is one step.
_STATIC_BY_INDEX: tuple[tuple[bytes, bytes] | None, ...] = (None, *STATIC_TABLE)
#: 2.3.3: the index of the dynamic table's newest entry.
_DYNAMIC_BASE = _STATIC_COUNT + 1
#: 4.1: an entry's size is its name's and value's lengths plus 32.
ENTRY_OVERHEAD = 32
#: The static entries' sizes by index: also what each adds to a header list's size (RFC 9113
#: 6.5.2 counts a field as 4.1 does), looked up rather than computed for indexed fields.
_STATIC_SIZES: tuple[int, ...] = (0, *(len(n) + len(v) + ENTRY_OVERHEAD for n, v in STATIC_TABLE))
#: Blocks remembered per connection (see HeaderDecoder); beyond it blocks are decoded each time.
_MEMO_LIMIT = 64
#: RFC 9113 6.5.2: SETTINGS_HEADER_TABLE_SIZE's initial value (we announce no other).
DEFAULT_TABLE_SIZE = 4096
#: 5.1 allows refusing integers over an implementation limit: four continuation octets (values
#: up to 2^28 + the prefix) are far beyond any length or index a block of ours can hold.
_MAX_CONTINUATIONS = 4


class HeaderBlockError(HPACKDecodingError):
    """A header block that cannot be decoded (a COMPRESSION_ERROR, RFC 9113 4.3).

    A subclass of ``hpack``'s decoding error, so code catching that one keeps working."""


class HeaderListTooLarge(HeaderBlockError):
    """A block whose decoded header list is over ``max_header_list_size`` (RFC 9113 6.5.2).

    Raised once the whole block was decoded: the dynamic table is in step, so this is a stream
    error (code that only knows HeaderBlockError still closes the connection: safe, not needed)."""


#: Where fields past the header list limit go (nowhere: a C-level no-op append).
_DROP = deque(maxlen=0).append
#: The limit once it was passed: nothing more is counted against it.
_NO_LIMIT = float("inf")
#: A run of one-byte Indexed Header Fields (1xxxxxxx, index 1-126).
_INDEXED_RUN = re.compile(rb"[\x81-\xfe]*")


#: The Huffman decoder's states are the code tree's 256 inner nodes (hpack's numbering, 0 is the
#: root); this one more absorbs every input once a code failed (EOS or no such code, 5.2).
_HUFFMAN_FAILED = 256


@cache
def _huffman_octet_steps() -> tuple[list[int], list[bytes], list[bool]]:
    """hpack's nibble steps composed in pairs, indexed by ``state << 8 | octet``: the next state,
    the 0-2 symbols emitted, and whether the string may end there (5.2: the padding is under 8
    bits of the EOS code's 1s). Built on the first Huffman string (about 40 ms, 3 MB)."""
    size = (_HUFFMAN_FAILED + 1) << 8
    next_state = [_HUFFMAN_FAILED] * size
    emitted = [b""] * size
    complete = [False] * size
    symbols = [bytes((octet,)) for octet in range(256)]
    table = HUFFMAN_TABLE
    for state in range(_HUFFMAN_FAILED):
        for high in range(16):
            middle, flags, symbol = table[state << 4 | high]
            if flags & HUFFMAN_FAIL:
                continue
            first = symbols[symbol] if flags & HUFFMAN_EMIT_SYMBOL else b""
            for low in range(16):
                after, flags, symbol = table[middle << 4 | low]
                if flags & HUFFMAN_FAIL:
                    continue
                at = state << 8 | high << 4 | low
                next_state[at] = after
                emitted[at] = first + symbols[symbol] if flags & HUFFMAN_EMIT_SYMBOL else first
                complete[at] = bool(flags & HUFFMAN_COMPLETE)
    return next_state, emitted, complete


def decode_huffman(data: bytes) -> bytes:
    """5.2, Appendix B: a Huffman-coded string literal's octets, decoded an octet a step.

    Raises :class:`HeaderBlockError` as hpack's ``decode_huffman`` fails (an EOS code, padding
    longer than 7 bits or not all 1s)."""
    if not data:
        return b""
    next_state, emitted, complete = _huffman_octet_steps()
    state = at = 0
    out: list[bytes] = []
    append = out.append
    for octet in data:
        at = state << 8 | octet
        state = next_state[at]
        append(emitted[at])
    if not complete[at]:  # the failed state never completes
        raise HeaderBlockError("invalid Huffman-coded string (RFC 7541 5.2)")
    return b"".join(out)


def _integer_tail(block: bytes, pos: int, value: int) -> tuple[int, int]:
    """5.1: the continuation octets of an integer whose N-bit prefix was full (``value`` is
    2^N - 1); returns the integer and the position after it."""
    shift = 0
    end = len(block)
    for _ in range(_MAX_CONTINUATIONS):
        if pos >= end:
            raise HeaderBlockError("truncated header block (an integer, RFC 7541 5.1)")
        octet = block[pos]
        pos += 1
        value += (octet & 0x7F) << shift
        if octet < 0x80:
            return value, pos
        shift += 7
    raise HeaderBlockError("integer over the decoder's limit (RFC 7541 5.1)")


def _string(block: bytes, pos: int) -> tuple[bytes, int]:
    """5.2: a string literal at ``pos`` (H bit, 7-bit prefix length, octets); returns the
    string (Huffman-decoded when H is set) and the position after it."""
    if pos >= len(block):
        raise HeaderBlockError("truncated header block (a string literal, RFC 7541 5.2)")
    first = block[pos]
    length = first & 0x7F
    pos += 1
    if length == 0x7F:
        length, pos = _integer_tail(block, pos, 0x7F)
    stop = pos + length
    if stop > len(block):
        raise HeaderBlockError("truncated header block (a string literal, RFC 7541 5.2)")
    data = block[pos:stop]
    if first & 0x80:
        data = decode_huffman(data)
    return data, stop


class HeaderDecoder:
    """Decodes one connection's request header blocks, in order (:meth:`decode`).

    ``max_table_size`` is our SETTINGS_HEADER_TABLE_SIZE, the bound of the peer's size updates
    (RFC 7541 4.2, 6.3); ``max_header_list_size`` bounds a block's decoded size (RFC 9113
    6.5.2: names, values and 32 octets a field).

    Blocks that leave the dynamic table as it was (indexed fields and literals without
    indexing only) are remembered until the table changes: grpc C-core's clients (grpcio and
    the SDKs built on it) send the very same such block call after call, custom metadata as
    literals without indexing, and decoding it again would give the same fields. A block that
    adds to or resizes the table is never remembered (each decode must move the table) and
    forgets the others (their indexes may now name other entries).
    """

    __slots__ = ("_entries", "_memo", "_size", "_sizes", "_table_changes", "_table_size",
                 "max_header_list_size", "max_table_size")

    def __init__(self, max_header_list_size: int = 1 << 16,
                 max_table_size: int = DEFAULT_TABLE_SIZE) -> None:
        self.max_header_list_size = max_header_list_size
        self.max_table_size = max_table_size
        #: 2.3.2: the dynamic table, newest entry first (index 62 is ``_entries[0]``).
        self._entries: deque[tuple[bytes, bytes]] = deque()
        #: Each entry's size (4.1), in step with ``_entries``.
        self._sizes: deque[int] = deque()
        #: Blocks decoded with the table as it is now, which did not change it.
        self._memo: dict[bytes, tuple[tuple[bytes, bytes], ...]] = {}
        #: Counts the table's changes (additions, size updates): a block that moved it is not
        #: remembered.
        self._table_changes = 0
        self._size = 0
        self._table_size = max_table_size

    @property
    def table_size(self) -> int:
        """The dynamic table's current maximum size (4.2: the peer's last size update)."""
        return self._table_size

    @property
    def entries(self) -> list[tuple[bytes, bytes]]:
        """The dynamic table's entries, newest first (for tests)."""
        return list(self._entries)

    @property
    def size(self) -> int:
        """The dynamic table's size (4.1: entries' lengths plus 32 each)."""
        return self._size

    def _field(self, index: int) -> tuple[bytes, bytes]:
        """2.3.3: the entry at ``index`` of the static table then the dynamic one."""
        if 0 < index <= _STATIC_COUNT:
            return STATIC_TABLE[index - 1]
        at = index - _STATIC_COUNT - 1
        if at < 0 or at >= len(self._entries):
            raise HeaderBlockError(f"index {index} outside the tables (RFC 7541 2.3.3)")
        return self._entries[at]

    def _add(self, name: bytes, value: bytes) -> None:
        """4.4: add an entry, evicting the oldest ones to make room; one larger than the
        table's maximum size empties it and is not added."""
        size = len(name) + len(value) + ENTRY_OVERHEAD
        entries, sizes = self._entries, self._sizes
        self._memo.clear()
        self._table_changes += 1
        if size > self._table_size:
            entries.clear()
            sizes.clear()
            self._size = 0
            return
        used = self._size + size
        limit = self._table_size
        while used > limit:
            entries.pop()
            used -= sizes.pop()
        entries.appendleft((name, value))
        sizes.appendleft(size)
        self._size = used

    def _resize(self, size: int) -> None:
        """6.3 / 4.3: a dynamic table size update, evicting entries until the table fits."""
        if size > self.max_table_size:
            raise HeaderBlockError(
                f"table size update to {size} over our limit {self.max_table_size} (RFC 7541 6.3)")
        self._table_size = size
        self._memo.clear()
        self._table_changes += 1
        entries, sizes = self._entries, self._sizes
        used = self._size
        while used > size:
            entries.pop()
            used -= sizes.pop()
        self._size = used

    def decode(self, block: bytes) -> list[tuple[bytes, bytes]]:
        """The fields of one complete header block (RFC 7541 3.2), in order; the dynamic table
        moves as the block says. Raises :class:`HeaderBlockError` on a malformed block."""
        memo = self._memo
        known = memo.get(block)
        if known is not None:  # decoded under the same table and limits: valid as it was
            return list(known)
        table_changes = self._table_changes
        headers = self._decode(block)
        if self._table_changes == table_changes and len(memo) < _MEMO_LIMIT:
            memo[bytes(block)] = tuple(headers)
        return headers

    def _skip_indexed(self, block: bytes, pos: int) -> int:
        """Past the limit (an HPACK bomb): step over a run of one-byte Indexed Header Fields at
        ``pos`` at C speed. They change no table and are not kept; each index must still be in
        the tables (else the field-by-field loop raises, from the run's first bad byte)."""
        run = _INDEXED_RUN.match(block, pos).end()
        if run > pos and max(block[pos:run]) - 0x80 <= _STATIC_COUNT + len(self._entries):
            return run
        return pos

    def _decode(self, block: bytes) -> list[tuple[bytes, bytes]]:
        headers: list[tuple[bytes, bytes]] = []
        append = headers.append
        static = _STATIC_BY_INDEX
        entries, sizes = self._entries, self._sizes
        static_sizes = _STATIC_SIZES
        limit: float = self.max_header_list_size
        listed = 0
        over = False
        pos = 0
        end = len(block)
        while pos < end:
            first = block[pos]
            pos += 1
            if first & 0x80:  # 6.1 Indexed Header Field: 1, 7-bit prefix index
                index = first & 0x7F
                if index == 0x7F:
                    index, pos = _integer_tail(block, pos, index)
                # Both tables looked up here (not through _field): a steady client's blocks are
                # nearly all indexed fields, several of them in the dynamic table.
                if 0 < index <= _STATIC_COUNT:
                    field = static[index]
                    listed += static_sizes[index]
                elif 0 <= index - _DYNAMIC_BASE < len(entries):
                    field = entries[index - _DYNAMIC_BASE]
                    listed += sizes[index - _DYNAMIC_BASE]
                else:
                    field = self._field(index)  # raises: outside the tables
                if listed > limit:  # 6.5.2: keep decoding for the table, keep no more fields
                    limit, append, over = _NO_LIMIT, _DROP, True
                append(field)
                if over:
                    pos = self._skip_indexed(block, pos)
                continue
            elif first & 0x40:  # 6.2.1 Literal with Incremental Indexing: 01, 6-bit name index
                index = first & 0x3F
                if index == 0x3F:
                    index, pos = _integer_tail(block, pos, index)
                if index:
                    name = self._field(index)[0]
                else:
                    name, pos = _string(block, pos)
                value, pos = _string(block, pos)
                self._add(name, value)
                field = (name, value)
            elif first & 0x20:  # 6.3 Dynamic Table Size Update: 001, 5-bit prefix size
                if headers or over:  # 4.2: only at the start of a block
                    raise HeaderBlockError("table size update after a field (RFC 7541 4.2)")
                size = first & 0x1F
                if size == 0x1F:
                    size, pos = _integer_tail(block, pos, size)
                self._resize(size)
                continue
            else:  # 6.2.2 without Indexing (0000) / 6.2.3 Never Indexed (0001): 4-bit name index
                index = first & 0x0F
                if index == 0x0F:
                    index, pos = _integer_tail(block, pos, index)
                if index:
                    name = self._field(index)[0]
                else:
                    name, pos = _string(block, pos)
                value, pos = _string(block, pos)
                field = (name, value)
            listed += len(name) + len(value) + ENTRY_OVERHEAD
            if listed > limit:  # 6.5.2: as above
                limit, append, over = _NO_LIMIT, _DROP, True
            append(field)
        if self._table_size > self.max_table_size:  # 4.2: our limit shrank, no update came
            raise HeaderBlockError("the table was not shrunk to our limit (RFC 7541 4.2)")
        if over:
            raise HeaderListTooLarge(
                f"header list over {self.max_header_list_size} octets (RFC 9113 6.5.2)")
        return headers
