"""A blocking facade for code that does not use Twisted: ``producer.send(msg)`` returns a
``SendResult``.

Every blocking call runs the Twisted method in the reactor and waits for its Deferred. Where the
reactor runs decides how we wait (:func:`run_blocking`):

* under pytest-twisted the reactor runs in a greenlet of the main thread: we switch to it with
  ``pytest_twisted.blockon`` until the Deferred fires (the ``rocketmq`` pytest plugin runs plain
  test functions outside the reactor greenlet so this works in ordinary ``def test_...``);
* a reactor already running in another thread (crochet, an application's own): we wait with
  ``blockingCallFromThread``;
* no reactor running: we start it in a daemon thread with ``crochet.setup()`` (crochet stops it
  at interpreter exit), then wait as above.

Consumer listeners of the blocking consumers run in the reactor's thread pool
(``deferToThread``) when the reactor has its own thread, so they may block; under pytest-twisted
they run in the reactor greenlet and must not block.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.python.failure import Failure

from rocketmq_emu.client.instance import default_reactor

DEFAULT_TIMEOUT = 30.0


class BlockingError(RuntimeError):
    """A blocking call made where it cannot wait (inside the reactor)."""


def _greenlet_mode() -> Any:
    """pytest-twisted's reactor greenlet if it is the way to wait, else None."""
    ptw = sys.modules.get("pytest_twisted")
    if ptw is None:
        return None
    gr = getattr(getattr(ptw, "_instances", None), "gr_twisted", None)
    if gr is None or gr.dead:
        return None
    return gr


def in_reactor_context() -> bool:
    """True when the caller runs inside the reactor (a blocking wait would deadlock)."""
    gr = _greenlet_mode()
    if gr is not None:
        import greenlet

        return greenlet.getcurrent() is gr
    reactor = default_reactor()
    from twisted.python import threadable

    return bool(getattr(reactor, "running", False)) and threadable.isInIOThread()


def threaded_reactor() -> bool:
    """True when the reactor runs (or will run, via crochet) in a thread of its own."""
    return _greenlet_mode() is None


def _ensure_reactor_thread() -> None:
    reactor = default_reactor()
    if getattr(reactor, "running", False):
        return
    import crochet

    crochet.setup()


def _as_deferred(fn: Callable[..., Any], args: tuple, kw: dict) -> defer.Deferred:
    result = fn(*args, **kw)
    if isinstance(result, defer.Deferred):
        return result
    if hasattr(result, "__await__") or hasattr(result, "send"):
        return defer.ensureDeferred(result)
    return defer.succeed(result)


def run_blocking(fn: Callable[..., Any], *args: Any, timeout: float | None = DEFAULT_TIMEOUT, **kw: Any) -> Any:
    """Call ``fn(*args, **kw)`` in the reactor and wait for its (Deferred) result.

    Raises the failure's exception; ``defer.TimeoutError`` (after cancelling) on timeout.
    """
    reactor = default_reactor()

    def call() -> defer.Deferred:
        d = defer.maybeDeferred(_as_deferred, fn, args, kw)
        if timeout is not None:
            d.addTimeout(timeout, reactor)
        return d

    gr = _greenlet_mode()
    if gr is not None:
        import greenlet
        import pytest_twisted

        if greenlet.getcurrent() is gr:
            raise BlockingError(
                "a blocking call inside the reactor would deadlock: use the Twisted API "
                "(client.producer.Producer etc.) with pytest_twisted.inlineCallbacks/ensureDeferred"
            )
        return pytest_twisted.blockon(call())
    _ensure_reactor_thread()
    from twisted.python import threadable

    if threadable.isInIOThread():
        raise BlockingError("a blocking call from the reactor thread would deadlock")
    from twisted.internet.threads import blockingCallFromThread

    return blockingCallFromThread(reactor, call)


class AsyncResult:
    """The outcome of an asynchronous blocking-facade call (``send_async``).

    ``callback(result_or_exception)`` runs in the reactor when it completes;
    :meth:`wait` blocks for it.
    """

    def __init__(self) -> None:
        self._done = threading.Event()
        self._result: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Any], None]] = []

    def _settle(self, outcome: Any) -> None:
        if isinstance(outcome, Failure):
            self._error = outcome.value
        else:
            self._result = outcome
        self._done.set()
        for cb in self._callbacks:
            try:
                cb(self._error if self._error is not None else self._result)
            except Exception:
                import logging

                logging.getLogger(__name__).exception("send_async callback failed")

    def done(self) -> bool:
        """True once the call completed."""
        return self._done.is_set()

    def wait(self, timeout: float | None = DEFAULT_TIMEOUT) -> Any:
        """The result, or raise the error."""
        if not self._done.is_set():
            if _greenlet_mode() is not None:
                def waiter() -> defer.Deferred:
                    d: defer.Deferred = defer.Deferred()
                    if self._done.is_set():
                        d.callback(None)
                    else:
                        self._callbacks.append(lambda _: d.called or d.callback(None))
                    return d

                run_blocking(waiter, timeout=timeout)
            elif not self._done.wait(timeout):
                raise defer.TimeoutError(f"no result within {timeout} s")
        if self._error is not None:
            raise self._error
        return self._result


def run_async(fn: Callable[..., Any], *args: Any, callback: Callable[[Any], None] | None = None,
              **kw: Any) -> AsyncResult:
    """Start ``fn`` in the reactor without waiting; returns an :class:`AsyncResult`."""
    res = AsyncResult()
    if callback is not None:
        res._callbacks.append(callback)

    def start() -> None:
        defer.maybeDeferred(_as_deferred, fn, args, kw).addBoth(res._settle)

    if _greenlet_mode() is not None or in_reactor_context():
        start()
    else:
        _ensure_reactor_thread()
        default_reactor().callFromThread(start)
    return res


class BlockingFacade:
    """Wrap a Twisted-API object: every method call blocks for its Deferred's result."""

    _target: Any
    timeout: float | None = DEFAULT_TIMEOUT

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        @functools.wraps(attr)
        def blocking(*args: Any, **kw: Any) -> Any:
            return run_blocking(attr, *args, timeout=self.timeout, **kw)

        return blocking

    def __enter__(self) -> Any:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


def _threaded_listener(listener: Callable[..., Any]) -> Callable[..., Any]:
    if not threaded_reactor():
        return listener
    from twisted.internet import threads

    @functools.wraps(listener)
    def in_thread(msgs: Any, ctx: Any) -> defer.Deferred:
        return threads.deferToThread(listener, msgs, ctx)

    return in_thread


class BlockingProducer(BlockingFacade):
    """``Producer`` with blocking calls: ``send(msg) -> SendResult``; ``send_async(msg,
    callback=None) -> AsyncResult``."""

    def __init__(self, group: str, namesrv_addr: str | list[str], *, timeout: float | None = DEFAULT_TIMEOUT,
                 **kw: Any) -> None:
        from rocketmq_emu.client.producer import Producer

        self._target = Producer(group, namesrv_addr, **kw)
        self.timeout = timeout

    def send_async(self, msg: Any, callback: Callable[[Any], None] | None = None, **kw: Any) -> AsyncResult:
        """Send without blocking; ``callback`` gets the SendResult or the exception."""
        return run_async(self._target.send, msg, callback=callback, **kw)


class BlockingPushConsumer(BlockingFacade):
    """``PushConsumer`` with blocking start/shutdown; the listener runs in a worker thread when
    the reactor has its own thread."""

    def __init__(self, group: str, namesrv_addr: str | list[str], listener: Callable[..., Any] | None = None,
                 *, timeout: float | None = DEFAULT_TIMEOUT, listener_in_reactor: bool = False,
                 **kw: Any) -> None:
        from rocketmq_emu.client.push_consumer import PushConsumer

        self._in_reactor = listener_in_reactor
        if listener is not None and not listener_in_reactor:
            listener = _threaded_listener(listener)
        self._target = PushConsumer(group, namesrv_addr, listener, **kw)
        self.timeout = timeout

    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        """Subscribe (no I/O); ``expression_type="SQL92"`` for a property filter."""
        self._target.subscribe(topic, expression, expression_type)

    def register_listener(self, listener: Callable[..., Any]) -> None:
        """Set the listener (no I/O)."""
        self._target.register_listener(listener if self._in_reactor else _threaded_listener(listener))


class BlockingPullConsumer(BlockingFacade):
    """``PullConsumer`` with blocking calls: ``pull(mq, "*", offset) -> PullResult``."""

    def __init__(self, group: str, namesrv_addr: str | list[str], *, timeout: float | None = DEFAULT_TIMEOUT,
                 **kw: Any) -> None:
        from rocketmq_emu.client.pull_consumer import PullConsumer

        self._target = PullConsumer(group, namesrv_addr, **kw)
        self.timeout = timeout


class BlockingLitePullConsumer(BlockingFacade):
    """``LitePullConsumer`` with blocking calls: ``poll(timeout) -> list[MessageExt]``."""

    def __init__(self, group: str, namesrv_addr: str | list[str], *, timeout: float | None = DEFAULT_TIMEOUT,
                 **kw: Any) -> None:
        from rocketmq_emu.client.pull_consumer import LitePullConsumer

        self._target = LitePullConsumer(group, namesrv_addr, **kw)
        self.timeout = timeout

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Subscribe (no I/O)."""
        self._target.subscribe(topic, expression)

    def poll(self, timeout: float = 5.0, max_messages: int = 32) -> list:
        """Up to ``max_messages`` messages, waiting up to ``timeout`` seconds."""
        return run_blocking(self._target.poll, timeout, max_messages, timeout=timeout + 10)


class BlockingAdmin(BlockingFacade):
    """``Admin`` with blocking calls."""

    def __init__(self, namesrv_addr: str | list[str], *, timeout: float | None = DEFAULT_TIMEOUT,
                 **kw: Any) -> None:
        from rocketmq_emu.client.admin import Admin

        self._target = Admin(namesrv_addr, **kw)
        self.timeout = timeout
