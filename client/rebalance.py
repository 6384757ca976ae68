"""Queue allocation and rebalance bookkeeping (pure).

* :func:`allocate_averagely` is ``AllocateMessageQueueAveragely``: queues and consumer ids are
  sorted, each consumer gets a contiguous slice, the first ``len(mqs) % len(cids)`` consumers one
  extra queue.
* :func:`rebalance_diff` computes which queues to add and drop when the allocation changes
  (``RebalanceImpl.updateProcessQueueTableInRebalance``).
* :class:`Subscription` is ``SubscriptionData`` built from a tag expression
  (``FilterAPI.buildSubscriptionData``): ``"*"`` or ``"a || b"``; codeSet = Java hash codes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rocketmq_emu.broker.message import java_string_hash
from rocketmq_emu.client.message import MessageQueue

SUB_ALL = "*"


def allocate_averagely(
    current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """The queues ``current_cid`` consumes out of ``mq_all`` shared by ``cid_all``.

    Both lists are sorted first, as ``RebalanceImpl.rebalanceByTopic`` sorts them before calling
    the strategy, so every consumer computes the same split. A cid not in the list gets nothing.
    """
    mqs = sorted(mq_all)
    cids = sorted(cid_all)
    if not current_cid or not mqs or current_cid not in cids:
        return []
    index = cids.index(current_cid)
    n_mq, n_cid = len(mqs), len(cids)
    mod = n_mq % n_cid
    if n_mq <= n_cid:
        average = 1
    elif mod > 0 and index < mod:
        average = n_mq // n_cid + 1
    else:
        average = n_mq // n_cid
    start = index * average if (mod > 0 and index < mod) else index * average + mod
    count = min(average, n_mq - start)
    return [mqs[(start + i) % n_mq] for i in range(max(count, 0))]


def rebalance_diff(
    current: Iterable[MessageQueue], allocated: Iterable[MessageQueue]
) -> tuple[list[MessageQueue], list[MessageQueue]]:
    """(to_add, to_remove) turning ``current`` into ``allocated``, each sorted."""
    cur = set(current)
    new = set(allocated)
    return sorted(new - cur), sorted(cur - new)


@dataclass(slots=True)
class Subscription:
    """``SubscriptionData`` for a TAG expression."""

    topic: str
    expression: str = SUB_ALL
    sub_version: int = 0
    tags: list[str] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    #: ``TAG`` or ``SQL92`` (``MessageSelector.bySql``; evaluated by the broker).
    expression_type: str = "TAG"

    @classmethod
    def build(cls, topic: str, expression: str | None, sub_version: int) -> Subscription:
        """Parse ``expression`` (None or empty means ``*``)."""
        expr = (expression or "").strip() or SUB_ALL
        if expr == SUB_ALL:
            return cls(topic, SUB_ALL, sub_version)
        tags = [t.strip() for t in expr.split("||") if t.strip()]
        return cls(topic, expr, sub_version, tags, [java_string_hash(t) for t in tags])

    @classmethod
    def build_sql92(cls, topic: str, expression: str, sub_version: int) -> Subscription:
        """A SQL92 subscription: no tags, the broker filters by message properties."""
        return cls(topic, expression, sub_version, expression_type="SQL92")

    def matches(self, tag: str | None) -> bool:
        """Client-side exact tag filter (``PullAPIWrapper.processPullResult``)."""
        if self.expression == SUB_ALL or self.expression_type != "TAG":
            return True
        return tag is not None and tag in self.tags

    def to_json(self) -> dict:
        """The fastjson ``SubscriptionData`` shape sent in heartbeats."""
        return {
            "classFilterMode": False,
            "codeSet": self.codes,
            "expressionType": self.expression_type,
            "subString": self.expression,
            "subVersion": self.sub_version,
            "tagsSet": self.tags,
            "topic": self.topic,
        }
