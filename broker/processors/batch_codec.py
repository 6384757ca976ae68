"""The SEND_BATCH_MESSAGE body (protocol.md §4.9): ``MessageDecoder.encodeMessages`` blocks.

Each block::

    TOTALSIZE int32 | MAGICCODE int32 (0) | BODYCRC int32 (0) | FLAG int32
    BODYLENGTH int32 | BODY | PROPERTIESLENGTH int16 | PROPERTIES (UTF-8)

Declared once with ``construct`` (:data:`BATCH_BLOCK`); :func:`decode_batch` and
:func:`encode_batch` run on structs derived from it (:data:`BATCH_HEAD`,
:data:`BATCH_PROPERTIES_LENGTH`; the client's codec imports them too) and the tests hold both
to the same bytes. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

import construct as cs

from rocketmq_emu.broker.layout import Layout

#: One block (``MessageDecoder.encodeMessage``).
BATCH_BLOCK = cs.Struct(
    "totalSize" / cs.Int32sb,
    "magicCode" / cs.Int32sb,
    "bodyCRC" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "bodyLength" / cs.Rebuild(cs.Int32sb, cs.len_(cs.this.body)),
    "body" / cs.Bytes(cs.this.bodyLength),
    "propertiesLength" / cs.Rebuild(cs.Int16sb, cs.len_(cs.this.properties)),
    "properties" / cs.Bytes(cs.this.propertiesLength),
)
#: A whole body: blocks back to back.
BATCH_BODY = cs.GreedyRange(BATCH_BLOCK)
BATCH_LAYOUT = Layout(BATCH_BLOCK)
#: totalSize, magicCode, bodyCRC, flag, bodyLength: the 20 bytes in front of the body.
BATCH_HEAD = BATCH_LAYOUT.struct("totalSize", "bodyLength")
#: The int16 in front of the properties.
BATCH_PROPERTIES_LENGTH = BATCH_LAYOUT.struct("propertiesLength")
#: A block with empty body and properties (22 bytes).
BATCH_MIN_SIZE = BATCH_LAYOUT.min_size
_HEAD = BATCH_HEAD
_I16 = BATCH_PROPERTIES_LENGTH


class BatchFormatError(ValueError):
    """A batch body that cannot be split; names the block, its offset and what was wrong."""


@dataclass(slots=True)
class BatchMessage:
    """One inner message of a batch: its flag, body and properties string."""

    flag: int
    body: bytes
    properties: str


def decode_batch(data: bytes | bytearray | memoryview) -> list[BatchMessage]:
    """Split a batch body into its messages; every declared length is checked."""
    view = memoryview(data)
    end = len(view)
    pos = 0
    out: list[BatchMessage] = []
    while pos < end:
        index = len(out)
        if pos + _HEAD.size > end:
            raise BatchFormatError(
                f"batch block {index} at byte {pos}: header needs {_HEAD.size} bytes, "
                f"{end - pos} left"
            )
        total, _magic, _crc, flag, body_len = _HEAD.unpack_from(view, pos)
        p = pos + _HEAD.size
        if body_len < 0 or p + body_len + _I16.size > end:
            raise BatchFormatError(
                f"batch block {index} at byte {pos}: BODYLENGTH {body_len} exceeds the "
                f"{end - p} bytes left"
            )
        body = bytes(view[p : p + body_len])
        p += body_len
        (props_len,) = _I16.unpack_from(view, p)
        p += _I16.size
        if props_len < 0 or p + props_len > end:
            raise BatchFormatError(
                f"batch block {index} at byte {pos}: PROPERTIESLENGTH {props_len} exceeds the "
                f"{end - p} bytes left"
            )
        props = bytes(view[p : p + props_len]).decode("utf-8", errors="replace")
        p += props_len
        if total != p - pos:
            # Java's decoder reads sequentially and never checks TOTALSIZE; a mismatch means a
            # corrupt or foreign body, so refuse it rather than guess.
            raise BatchFormatError(
                f"batch block {index} at byte {pos}: TOTALSIZE {total} but the fields end at "
                f"{p - pos}"
            )
        out.append(BatchMessage(flag, body, props))
        pos = p
    return out


def encode_batch(messages: list[BatchMessage]) -> bytes:
    """The body a Java producer sends for a ``MessageBatch`` (magic and CRC 0)."""
    parts = []
    for m in messages:
        props = m.properties.encode("utf-8")
        total = BATCH_MIN_SIZE + len(m.body) + len(props)
        parts.append(_HEAD.pack(total, 0, 0, m.flag, len(m.body)))
        parts.append(m.body)
        parts.append(_I16.pack(len(props)))
        parts.append(props)
    return b"".join(parts)
