"""Header classes become dataclasses on first use (cheap import), and behave exactly as if
they had been dataclasses from the start."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from rocketmq_emu.broker.remoting.headers import INT, CommandHeader, header, opt, req
from rocketmq_emu.broker.remoting.headers.base import realize


def make_header():
    @header
    class ExampleRequestHeader(CommandHeader):
        """A header for these tests."""

        topic: str | None = req("topic")
        queue_id: int | None = req("queueId", INT)
        note: str | None = opt("note", default="n/a")

    return ExampleRequestHeader


def test_spec_is_known_before_the_dataclass_exists():
    """SPEC is recorded at decoration; the dataclass methods are generated later."""
    cls = make_header()
    assert cls.SPEC == (("topic", "topic", "String", True), ("queue_id", "queueId", INT, True),
                        ("note", "note", "String", False))
    assert not dataclasses.is_dataclass(cls)


def test_first_instance_makes_a_full_dataclass():
    """Construction, defaults, equality, repr and fields() as a dataclass gives them."""
    cls = make_header()
    h = cls(topic="T", queue_id=3)
    assert dataclasses.is_dataclass(cls)
    assert h == cls("T", 3, "n/a") and h != cls("T", 4)
    assert repr(h).endswith("ExampleRequestHeader(topic='T', queue_id=3, note='n/a')")
    assert [f.name for f in dataclasses.fields(cls)] == ["topic", "queue_id", "note"]
    with pytest.raises(TypeError):
        cls("T", 3, "x", "too many")


def test_parse_before_any_instance():
    """from_ext_fields works on a class never instantiated."""
    cls = make_header()
    h = cls.from_ext_fields({"topic": "T", "queueId": "7"})
    assert (h.topic, h.queue_id, h.note) == ("T", 7, "n/a")
    assert h.to_ext_fields() == {"topic": "T", "queueId": "7", "note": "n/a"}


def test_plain_subclass_instantiates_through_the_header():
    """A non-decorated subclass gets the header's fields."""
    cls = make_header()

    class Sub(cls):  # type: ignore[misc, valid-type]
        pass

    assert Sub(topic="T", queue_id=1).queue_id == 1


def test_header_of_a_header_is_refused():
    """Deriving a header from another header would lose the base's fields: refused."""
    base = make_header()
    with pytest.raises(TypeError, match="derive from CommandHeader directly"):
        @header
        class Derived(base):  # type: ignore[misc, valid-type]
            extra: str | None = opt("extra")


def test_concurrent_first_instances():
    """Threads instantiating a fresh header at once all get correct objects."""
    cls = make_header()
    results, errors = [], []
    start = threading.Barrier(8)

    def worker(i):
        start.wait()
        try:
            results.append(cls(topic=f"T{i}", queue_id=i))
        except Exception as exc:  # pragma: no cover - the failure this test looks for
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(h.queue_id for h in results) == list(range(8))
    assert realize(cls) is cls
