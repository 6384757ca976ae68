"""RocketMQ 5 topic attributes: the ``+key=value,-key`` modification syntax and its rules.

Facts from Apache RocketMQ 5 (``common/attribute/{Attribute,EnumAttribute,LongRangeAttribute,
AttributeParser,AttributeUtil}.java``, ``common/TopicAttributes.java``):

* The known topic attributes are ``queue.type`` (``BatchCQ``/``SimpleCQ``, not changeable),
  ``cleanup.policy`` (``DELETE``/``COMPACTION``, not changeable), ``message.type`` (the
  :class:`~rocketmq_emu.broker.topic_message_type.TopicMessageType` names, changeable) and
  ``reserve.time`` (a long in ``[-1, Long.MAX_VALUE]``, changeable).
* A request carries a *modification*: ``+k=v`` adds or alters, ``-k`` deletes, comma-separated
  (:func:`parse_to_map`, which keeps the signs in the keys). :func:`alter_current_attributes`
  applies it to the topic's current attributes: on creation only ``+`` is allowed; deleting needs
  an existing key; an unknown key, an unchangeable key changed after creation, or a value outside
  the attribute's set or range is refused.
* Every refusal is a ``RuntimeException`` whose message the broker returns as the remark of a
  SYSTEM_ERROR; :class:`AttributeRequestError` carries the same text here.

The messages quoting a Java ``HashSet`` (``value is not in set: [...]``) list its members in
the order Java iterates that set (String hash buckets of a 16- or 4-slot table), which is fixed
for these constant sets and written out below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: ``AttributeParser`` separators and signs.
ATTR_ARRAY_SEPARATOR_COMMA = ","
ATTR_KEY_VALUE_EQUAL_SIGN = "="
ATTR_ADD_PLUS_SIGN = "+"
ATTR_DELETE_MINUS_SIGN = "-"

JAVA_LONG_MAX = (1 << 63) - 1
JAVA_LONG_MIN = -(1 << 63)


class AttributeRequestError(ValueError):
    """A refused attribute modification; ``str()`` is the remark RocketMQ 5 answers with."""


def _java_split(text: str, sep: str) -> list[str]:
    """``String.split`` with a one-character literal: trailing empty strings are dropped (and a
    string made only of separators gives an empty list)."""
    parts = text.split(sep)
    while parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if parts == [""] and text:
        return []
    return parts


def _index_error(index: int, length: int) -> AttributeRequestError:
    """What an out-of-range ``String[]`` index says (JDK 11+ ``ArrayIndexOutOfBoundsException``)."""
    return AttributeRequestError(f"Index {index} out of bounds for length {length}")


@dataclass(frozen=True)
class Attribute:
    """``Attribute``: a name and whether it may change after the topic is created."""

    name: str
    changeable: bool

    def verify(self, value: str) -> None:
        """Raise :class:`AttributeRequestError` if ``value`` is not allowed."""
        raise NotImplementedError


@dataclass(frozen=True)
class EnumAttribute(Attribute):
    """``EnumAttribute``: one of a fixed set of strings.

    ``universe`` is in Java's ``HashSet`` iteration order, so the refusal message matches.
    """

    universe: tuple[str, ...]
    default_value: str

    def verify(self, value: str) -> None:
        """The value must be one of :attr:`universe`."""
        if value not in self.universe:
            raise AttributeRequestError(f"value is not in set: [{', '.join(self.universe)}]")


@dataclass(frozen=True)
class LongRangeAttribute(Attribute):
    """``LongRangeAttribute``: a decimal long within ``[min, max]``."""

    min: int
    max: int
    default_value: int

    def verify(self, value: str) -> None:
        """``Long.parseLong`` then the range check."""
        number = _parse_java_long(value)
        if number < self.min or number > self.max:
            raise AttributeRequestError(f"value is not in range({self.min}, {self.max})")


def _parse_java_long(value: str) -> int:
    """``Long.parseLong(value)`` (an optional sign, then ASCII digits, within 64 bits)."""
    digits = value[1:] if value[:1] in ("+", "-") else value
    if not digits or not all("0" <= c <= "9" for c in digits):
        raise AttributeRequestError(f'For input string: "{value}"')
    number = int(value)
    if not JAVA_LONG_MIN <= number <= JAVA_LONG_MAX:
        raise AttributeRequestError(f'For input string: "{value}"')
    return number


QUEUE_TYPE_ATTRIBUTE = EnumAttribute("queue.type", False, ("SimpleCQ", "BatchCQ"), "SimpleCQ")
CLEANUP_POLICY_ATTRIBUTE = EnumAttribute(
    "cleanup.policy", False, ("DELETE", "COMPACTION"), "DELETE")
#: ``TopicAttributes.TOPIC_MESSAGE_TYPE_ATTRIBUTE`` (default NORMAL).
TOPIC_MESSAGE_TYPE_ATTRIBUTE = EnumAttribute(
    "message.type", True,
    ("UNSPECIFIED", "MIXED", "TRANSACTION", "FIFO", "DELAY", "NORMAL"), "NORMAL")
TOPIC_RESERVE_TIME_ATTRIBUTE = LongRangeAttribute("reserve.time", True, -1, JAVA_LONG_MAX, -1)

#: ``TopicAttributes.ALL``.
TOPIC_ATTRIBUTES: dict[str, Attribute] = {
    a.name: a for a in (QUEUE_TYPE_ATTRIBUTE, CLEANUP_POLICY_ATTRIBUTE,
                        TOPIC_MESSAGE_TYPE_ATTRIBUTE, TOPIC_RESERVE_TIME_ATTRIBUTE)
}


def parse_to_map(modification: str | None) -> dict[str, str]:
    """``AttributeParser.parseToMap``: ``"+a=1,-b"`` → ``{"+a": "1", "-b": ""}``.

    The signs stay in the keys. A ``k=v`` item needs a ``+`` in its key, an item without ``=``
    needs a ``-``; a key may appear once. Raises :class:`AttributeRequestError`.
    """
    if not modification:
        return {}
    attributes: dict[str, str] = {}
    for kv in _java_split(modification, ATTR_ARRAY_SEPARATOR_COMMA):
        if ATTR_KEY_VALUE_EQUAL_SIGN in kv:
            splits = _java_split(kv, ATTR_KEY_VALUE_EQUAL_SIGN)
            if len(splits) < 2:
                raise _index_error(len(splits), len(splits))
            key, value = splits[0], splits[1]
            if ATTR_ADD_PLUS_SIGN not in key:
                raise AttributeRequestError(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = kv, ""
            if ATTR_DELETE_MINUS_SIGN not in key:
                raise AttributeRequestError(f"delete attribute format is wrong: {key}")
        if key in attributes:
            raise AttributeRequestError(f"key duplication: {key}")
        attributes[key] = value
    return attributes


def parse_to_string(attributes: Mapping[str, str] | None) -> str:
    """``AttributeParser.parseToString``: the inverse of :func:`parse_to_map` (``-k`` for an
    empty value)."""
    if not attributes:
        return ""
    return ATTR_ARRAY_SEPARATOR_COMMA.join(
        f"{k}{ATTR_KEY_VALUE_EQUAL_SIGN}{v}" if v else k for k, v in attributes.items())


def _validate_key(real_key: str) -> None:
    if not real_key or ATTR_ADD_PLUS_SIGN in real_key or ATTR_DELETE_MINUS_SIGN in real_key:
        raise AttributeRequestError("kv string format wrong.")


def _validate_alter(known: Mapping[str, Attribute], alter: Mapping[str, str], init: bool,
                    delete: bool) -> None:
    for key, value in alter.items():
        attribute = known.get(key)
        if attribute is None:
            raise AttributeRequestError(f"unsupported key: {key}")
        if not init and not attribute.changeable:
            raise AttributeRequestError(
                f"attempt to update an unchangeable attribute. key: {key}")
        if not delete:
            attribute.verify(value)


def alter_current_attributes(
    create: bool,
    current: Mapping[str, str],
    modification: Mapping[str, str],
    known: Mapping[str, Attribute] = TOPIC_ATTRIBUTES,
) -> dict[str, str]:
    """``AttributeUtil.alterCurrentAttributes``: the topic's attributes after ``modification``
    (a :func:`parse_to_map` result) is applied to ``current``.

    ``create`` is True when the topic does not exist yet. Raises :class:`AttributeRequestError`
    with RocketMQ's message; the keys are checked in the modification's order.
    """
    init: dict[str, str] = {}
    add: dict[str, str] = {}
    update: dict[str, str] = {}
    delete: dict[str, str] = {}
    seen: set[str] = set()
    for key, value in modification.items():
        real_key = key[1:]
        _validate_key(real_key)
        if real_key in seen:
            raise AttributeRequestError(f"alter duplication key. key: {real_key}")
        seen.add(real_key)
        if create:
            if not key.startswith(ATTR_ADD_PLUS_SIGN):
                raise AttributeRequestError(
                    f"only add attribute is supported while creating topic. key: {real_key}")
            init[real_key] = value
        elif key.startswith(ATTR_ADD_PLUS_SIGN):
            (update if real_key in current else add)[real_key] = value
        elif key.startswith(ATTR_DELETE_MINUS_SIGN):
            if real_key not in current:
                raise AttributeRequestError(
                    f"attempt to delete a nonexistent key: {real_key}")
            delete[real_key] = value
        else:
            raise AttributeRequestError(f"wrong format key: {real_key}")
    _validate_alter(known, init, True, False)
    _validate_alter(known, add, False, False)
    _validate_alter(known, update, False, False)
    _validate_alter(known, delete, False, True)
    final = dict(current)
    final.update(init)
    final.update(add)
    final.update(update)
    for key in delete:
        final.pop(key, None)
    return final


def java_map_str(attributes: Mapping[str, str]) -> str:
    """``AbstractMap.toString`` of a string map (``{k=v, k2=v2}``), as ``TopicConfig.toString``
    and mqadmin print it."""
    return "{" + ", ".join(f"{k}={v}" for k, v in attributes.items()) + "}"
