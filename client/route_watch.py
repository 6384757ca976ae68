"""Looking again, soon, for the route of a topic subscribed to before it exists.

A consumer that starts before its topic exists gets TOPIC_NOT_EXIST from the name server; left
alone, it looks again at its next rebalance (``rebalance_interval``: 20 s, the test harness's
consumers 2 s). In a test the send that creates the topic comes milliseconds later, so the first
delivery would wait a whole period on nothing.

:class:`MissingRouteWatch` looks again after :data:`FIRST_DELAY` (10 ms), doubling the delay
each time while it stays under the period (:func:`backoff_delays`); once the next delay would
reach the period it stops and leaves the topic to the periodic rebalance, which goes on at its
own pace. A topic that never appears costs ``log2(period / 10 ms)`` extra route queries (8 with
the harness's 2 s, 11 with 20 s), once, not a faster poll for ever.

:meth:`MissingRouteWatch.look_now` looks at once, whatever the backoff: the test harness
calls it (through ``PushConsumer.look_up_missing_routes``) when a broker registers with its
name server, so its consumers see a new topic milliseconds after its first send however long
they waited for it.

This is this project's client only. Java's ``RebalanceService`` simply waits for its next
``rebalanceInterval``; the name server and brokers answer exactly as before, and real clients
keep their own periods.

Every timer runs on the ``IReactorTime`` given (``twisted.internet.task.Clock`` in tests).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IDelayedCall, IReactorTime

log = logging.getLogger(__name__)

#: The first look again after a missing route, in seconds.
FIRST_DELAY = 0.01


def backoff_delays(period: float, first: float = FIRST_DELAY) -> Iterator[float]:
    """``first``, ``2 * first``, ``4 * first``, ... while under ``period`` (the periodic look
    takes over from there); nothing when ``first`` is not under ``period``."""
    delay = first
    while delay < period:
        yield delay
        delay *= 2


class MissingRouteWatch:
    """Looks up the routes of watched topics on a doubling backoff (see module docstring).

    ``lookup(topic)`` returns a Deferred (or a value) that is truthy once the route is known;
    ``found(topic)`` is then called once and the topic is no longer watched. A failed lookup
    counts as still missing.
    """

    def __init__(self, clock: IReactorTime, lookup: Callable[[str], Any],
                 found: Callable[[str], Any], period: float, first: float = FIRST_DELAY) -> None:
        self.clock = clock
        self.lookup = lookup
        self.found = found
        self.period = period
        self.first = first
        # topic -> (the pending look, None while a lookup is in flight; the delays left). The
        # iterator also tells a lookup answering after stop() or a newer watch from the current.
        self._watches: dict[str, tuple[IDelayedCall | None, Iterator[float]]] = {}
        self._exhausted: set[str] = set()

    @property
    def watching(self) -> set[str]:
        """The topics whose route is being looked for on the backoff."""
        return set(self._watches)

    def watch(self, topic: str) -> None:
        """Start looking for ``topic``'s route on the backoff, unless already doing so or the
        backoff already ran out for it (the periodic rebalance is looking by then)."""
        if topic in self._watches or topic in self._exhausted:
            return
        self._next(topic, backoff_delays(self.period, self.first))

    def look_now(self) -> None:
        """Look up every missing route now: the watched topics' (their backoff then goes on
        where it was) and, once each, those whose backoff ran out. For a hint that routes
        changed (the test harness's name server registered a broker's topics)."""
        for topic, (call, delays) in list(self._watches.items()):
            if call is not None and call.active():
                call.cancel()
                self._look(topic, delays)
        for topic in list(self._exhausted):
            self._exhausted.discard(topic)
            self._look(topic, iter(()))

    def stop(self) -> None:
        """Cancel every pending look (a lookup in flight is then ignored)."""
        watches, self._watches = self._watches, {}
        for call, _ in watches.values():
            if call is not None and call.active():
                call.cancel()

    def _next(self, topic: str, delays: Iterator[float]) -> None:
        delay = next(delays, None)
        if delay is None:
            self._watches.pop(topic, None)
            self._exhausted.add(topic)
            log.debug("no route of %s yet; looking again at the next rebalance", topic)
            return
        self._watches[topic] = (self.clock.callLater(delay, self._look, topic, delays), delays)

    def _look(self, topic: str, delays: Iterator[float]) -> None:
        self._watches[topic] = (None, delays)  # in flight: watch() must not start another
        d = defer.maybeDeferred(self.lookup, topic)
        d.addErrback(lambda f: log.debug("route of %s: %s", topic, f.getErrorMessage()))
        d.addCallback(self._looked, topic, delays)

    def _looked(self, route: Any, topic: str, delays: Iterator[float]) -> None:
        current = self._watches.get(topic)
        if current is None or current[1] is not delays:  # stopped (or watched anew) meanwhile
            return
        if not route:
            self._next(topic, delays)
            return
        del self._watches[topic]
        self.found(topic)
