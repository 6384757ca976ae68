"""The recall handle of a delay (timer) message (Apache RocketMQ 5.3
``common/producer/RecallMessageHandle`` and its ``HandleV1``).

A send of a timer message answers a ``recallHandle``; RECALL_MESSAGE (370) and the gRPC
``RecallMessage`` take it back. Version 1 is five fields joined by one space::

    v1 <topic> <brokerName> <timestamp> <messageId>

encoded with ``Base64.getUrlEncoder()`` (URL-safe alphabet, ``=`` padding) over its UTF-8
bytes. ``timestamp`` is the message's ``TIMER_OUT_MS`` + 1 (``SendMessageProcessor
.attachRecallHandle``) and ``messageId`` its ``UNIQ_KEY``.

Decoding is ``RecallMessageHandle.decodeHandle``: ``Base64.getUrlDecoder()`` (padding optional,
any character outside the URL-safe alphabet refused), ``String.split(" ")`` (trailing empty
fields dropped), the first field must be ``v1`` and there must be at least five fields (more
are ignored). Every failure is :class:`RecallHandleError` with Java's one message,
``recall handle is invalid``.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass

SEPARATOR = " "
VERSION_1 = "v1"
#: ``DecoderException`` message of every decoding failure.
INVALID = "recall handle is invalid"
#: What ``Base64.getUrlDecoder()`` accepts: the URL-safe alphabet, then at most two ``=``.
_URL_BASE64 = re.compile(r"[A-Za-z0-9_-]*={0,2}\Z")


class RecallHandleError(ValueError):
    """``DecoderException``: the handle cannot be decoded (``str()`` is Java's message)."""


@dataclass(frozen=True)
class RecallHandleV1:
    """``RecallMessageHandle.HandleV1``: the decoded fields (all strings, as Java keeps them)."""

    topic: str
    broker_name: str
    timestamp_str: str
    message_id: str
    version: str = VERSION_1


def build_handle(topic: str, broker_name: str, timestamp_str: str, message_id: str | None) -> str:
    """``HandleV1.buildHandle`` (no parameter check; a None message id reads ``null`` as
    ``String.join`` writes it)."""
    raw = SEPARATOR.join((VERSION_1, topic, broker_name, timestamp_str,
                          "null" if message_id is None else message_id))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii")


def decode_handle(handle: str | None) -> RecallHandleV1:
    """``RecallMessageHandle.decodeHandle``; raises :class:`RecallHandleError`."""
    if not handle:
        raise RecallHandleError(INVALID)
    raw = _url_b64decode(handle)
    items = raw.split(SEPARATOR)
    while items and items[-1] == "":  # Java's split drops trailing empty strings
        items.pop()
    if not items or items[0] != VERSION_1 or len(items) < 5:
        raise RecallHandleError(INVALID)
    return RecallHandleV1(items[1], items[2], items[3], items[4])


def _url_b64decode(text: str) -> str:
    """``Base64.getUrlDecoder().decode`` then ``new String(..., UTF_8)`` (malformed bytes
    become U+FFFD as Java's decoder replaces them)."""
    if _URL_BASE64.match(text) is None:
        raise RecallHandleError(INVALID)
    body = text.rstrip("=")
    padding = len(text) - len(body)
    if len(body) % 4 == 1 or (padding and (len(body) + padding) % 4):
        raise RecallHandleError(INVALID)  # a lone 6-bit unit, or padding that does not fit
    try:
        data = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except ValueError as exc:
        raise RecallHandleError(INVALID) from exc
    return data.decode("utf-8", errors="replace")
