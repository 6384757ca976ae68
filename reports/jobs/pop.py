"""RocketMQ 5 POP in the reports: which records are POP bookkeeping, and whose retries a POP retry
topic holds.

**Revive records.** A broker serving POP writes a check point (tag ``ck``) per popped batch, an
``ack`` per ACK_MESSAGE and ``bAck`` records into ``rmq_sys_REVIVE_LOG_<cluster>``
(:mod:`rocketmq_emu.broker.pop.revive_log`). They are system traffic, not user messages. Their
UNIQ_KEY names the popped topic and the group (``PopMessageProcessor.genCkUniqueId`` /
``genAckUniqueId`` / ``genBatchAckUniqueId``: ``{topic}@{queueId}@{offset(s)}@{group}@...``,
and neither a topic nor a group may contain ``@``), so the reports read them without decoding
the JSON bodies.

**POP retry topics.** Unacknowledged messages are revived into ``%RETRY%{group}_{topic}`` (v1,
the default) or ``%RETRY%{group}+{topic}`` (v2, ``enableRetryTopicV2``). A v2 name splits by
itself (:func:`~rocketmq_emu.broker.pop.names.parse_group`,
:func:`~rocketmq_emu.broker.pop.names.parse_normal_topic`). A v1 name does not: ``parse_group``
of ``%RETRY%my_group_TopicA`` is ``my_group_TopicA``, exactly as Java's ``KeyBuilder``. So a v1
name is attributed once its group is known, and then split with
:func:`~rocketmq_emu.broker.pop.names.parse_normal_topic_of_group` (``parseNormalTopic(topic,
cid)``). Groups are known from:

* ``consumerOffset.json``: the broker commits offset 0 for the group on a POP retry topic when it
  creates it (``initPopRetryOffset``), so every ``%RETRY%X@G`` key whose topic starts with
  ``%RETRY%G_`` or ``%RETRY%G+`` names a POP retry topic of ``G``.
* the revive records: a check point or ack of group ``G`` on topic ``T`` names ``G``'s retry
  topic for ``T`` (and one on a retry topic names its group directly).

A ``%RETRY%<name>`` that neither source attributes is a 4.x retry topic of group ``<name>``.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column
from pyspark.sql import functions as F

from rocketmq_emu.broker.pop import names

#: Tags of the revive records, as columns of the reports: check points, acks, batch acks.
REVIVE_TAGS = {names.CK_TAG: "popCheckpoints", names.ACK_TAG: "popAcks",
               names.BATCH_ACK_TAG: "popBatchAcks"}


def is_revive(topic: str = "topic") -> Column:
    """True for a record of a revive topic (``rmq_sys_REVIVE_LOG_*``)."""
    return F.col(topic).startswith(names.REVIVE_TOPIC_PREFIX)


def revive_topic_of(uniq_key: str = "uniqKey") -> Column:
    """The popped topic a revive record's UNIQ_KEY names (its first ``@`` field)."""
    return F.split(F.col(uniq_key), names.SPLIT).getItem(0)


def revive_group_of(uniq_key: str = "uniqKey") -> Column:
    """The consumer group a revive record's UNIQ_KEY names (its fourth ``@`` field)."""
    return F.split(F.col(uniq_key), names.SPLIT).getItem(3)


def pop_retry_of(topic: str, group: str) -> str | None:
    """The original topic when ``topic`` is a POP retry topic of ``group`` (v1 or v2), else None
    (``%RETRY%{group}`` itself is the 4.x retry topic)."""
    base = names.RETRY_GROUP_TOPIC_PREFIX + group
    if not (topic.startswith(base + names.POP_RETRY_SEPARATOR_V1)
            or topic.startswith(base + names.POP_RETRY_SEPARATOR_V2)):
        return None
    normal = names.parse_normal_topic_of_group(topic, group)
    return normal or None


class PopRetryTopics:
    """POP retry topic name -> (group, original topic), from the known (topic, group) pairs."""

    def __init__(self) -> None:
        self.owners: dict[str, tuple[str, str]] = {}

    def add_pair(self, topic: str | None, group: str | None) -> None:
        """Learn from a topic ``group`` consumes or has offsets on: a POP retry topic of the
        group is attributed; a normal topic names the group's v1 and v2 retry topics for it."""
        if not isinstance(topic, str) or not isinstance(group, str) or not topic or not group:
            return
        if topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX):
            normal = pop_retry_of(topic, group)
            if normal is not None:
                self.owners[topic] = (group, normal)
            return
        for retry in (names.pop_retry_topic_v1(topic, group),
                      names.pop_retry_topic_v2(topic, group)):
            self.owners.setdefault(retry, (group, topic))

    def add_pairs(self, pairs: Iterable[tuple[str | None, str | None]]) -> PopRetryTopics:
        """:meth:`add_pair` for each (topic, group); returns self."""
        for topic, group in pairs:
            self.add_pair(topic, group)
        return self

    def owner(self, topic: str | None) -> tuple[str, str] | None:
        """(group, original topic) of a POP retry topic, None for anything else (a v2 name is
        split by :func:`names.parse_group` / :func:`names.parse_normal_topic` when no pair
        attributed it)."""
        if not isinstance(topic, str) or not topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX):
            return None
        if topic in self.owners:
            return self.owners[topic]
        if names.is_pop_retry_topic_v2(topic):
            group, normal = names.parse_group(topic), names.parse_normal_topic(topic)
            if normal != topic and group and normal:
                return group, normal
        return None

    def maps(self, topics: Iterable[str | None]) -> tuple[Column, Column]:
        """Two map literals over the POP retry topics among ``topics``: name -> group and
        name -> original topic (look up with ``m[F.col(...)]``; null when not a POP one)."""
        owned = {t: o for t in set(topics) if (o := self.owner(t)) is not None}  # None/NaN: no
        groups = [F.lit(x) for t in sorted(owned) for x in (t, owned[t][0])]
        originals = [F.lit(x) for t in sorted(owned) for x in (t, owned[t][1])]
        empty = F.create_map().cast("map<string,string>")
        return (F.create_map(*groups) if groups else empty,
                F.create_map(*originals) if originals else empty)
