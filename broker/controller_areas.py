"""The broker's request areas loaded at their first request (issue 26: pay for what is used).

POP, RocketMQ 5.3's recall and the ACL admin codes are used by no idle broker and by no plain
4.x producer or consumer: their modules are imported, and their processors registered on both
channels, at the first request of one of their codes (``RequestDispatcher.register_on_first_use``),
so each request still has one path. POP also loads at start when the store holds POP state
(``broker/pop/boot.py``), as Java's ``PopReviveService`` must revive what an earlier run left.
:class:`DeferredAreas` is a part of :class:`~rocketmq_emu.broker.controller.BrokerController`.
"""

from __future__ import annotations

from typing import Any

from rocketmq_emu.broker.remoting.codes import RequestCode

#: Request codes Java does not register on the VIP channel (``fastRemotingServer``).
NOT_ON_VIP = (RequestCode.PULL_MESSAGE,)
#: Request codes of the areas an idle broker and a plain 4.x producer or consumer never use:
#: their modules are loaded at the first request of one of their codes (issue 26), by
#: ``RequestDispatcher.register_on_first_use``. Each tuple is its processors' ``handlers()``
#: (tests/unit/test_deferred_areas.py checks that they match).
POP_CODES = (RequestCode.POP_MESSAGE, RequestCode.ACK_MESSAGE, RequestCode.BATCH_ACK_MESSAGE,
             RequestCode.CHANGE_MESSAGE_INVISIBLETIME, RequestCode.PEEK_MESSAGE,
             RequestCode.NOTIFICATION, RequestCode.POLLING_INFO)
RECALL_CODES = (RequestCode.RECALL_MESSAGE,)
ACL_ADMIN_CODES = (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, RequestCode.DELETE_ACL_CONFIG,
                   RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
                   RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                   RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)

__all__ = ["ACL_ADMIN_CODES", "NOT_ON_VIP", "POP_CODES", "RECALL_CODES", "DeferredAreas"]


class DeferredAreas:
    """The loaders of the deferred areas, for a :class:`BrokerController` (which has
    ``dispatcher``, ``vip_dispatcher``, ``ctx``, ``store``, ``running``, ``acl``,
    ``register_processor`` and ``_every``)."""

    _pop: Any = None
    _recall: Any = None
    _acl_admin: Any = None

    def _load_on_first_use(self, codes: tuple[int, ...], load: Any) -> None:
        """Register ``load`` for ``codes`` on both channels: it registers the area's processors
        at the first request of one of them."""
        for code in codes:
            self.dispatcher.register_on_first_use(code, load)
            if code not in NOT_ON_VIP:
                self.vip_dispatcher.register_on_first_use(code, load)

    def _add_loaded(self, processor: Any) -> None:
        """Register a processor loaded after construction; once running, start its periodic
        tasks as :meth:`_start` does."""
        self.register_processor(processor)
        if self.running:
            for period, fn in getattr(processor, "periodic_tasks", list)():
                self._every(period, fn, now=True)

    @property
    def pop(self) -> Any:
        """The :class:`~rocketmq_emu.broker.pop.service.PopServices` (loaded on first access)."""
        return self._load_pop()

    def _load_pop(self) -> Any:
        if self._pop is None:
            from rocketmq_emu.broker.pop.service import PopServices

            pop = self._pop = PopServices(self.ctx)
            self.store.add_arrival_listener(pop.on_arrival, topics=pop.topics)
            for processor in pop.processors:
                self._add_loaded(processor)
            if self.running:
                pop.start()
        return self._pop

    def _load_recall(self) -> None:
        if self._recall is None:
            from rocketmq_emu.broker.processors.recall import RecallMessageProcessor

            self._recall = RecallMessageProcessor(self.ctx)
            self._add_loaded(self._recall)

    def _load_acl_admin(self) -> None:
        if self._acl_admin is None:
            from rocketmq_emu.broker.processors.acl_admin import AclAdminProcessor

            self._acl_admin = AclAdminProcessor(self.ctx, lambda: self.acl)
            self._add_loaded(self._acl_admin)
