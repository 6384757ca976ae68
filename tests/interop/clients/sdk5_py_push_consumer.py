"""Consume with the PyPI rocketmq-python-client 5.x PushConsumer (Telemetry settings,
QueryAssignment, ReceiveMessage, Ack, ChangeInvisibleDuration for a failure, and for FIFO groups
ForwardMessageToDeadLetterQueue once the attempts are used up).

Config (one JSON argument): ``endpoint``, ``topic``, ``group``, ``expr`` (default ``*``),
``fail_below_attempt`` (answer FAILURE to a delivery whose attempt is lower than this; default 0:
always SUCCESS; ``fail_always``: true fails every delivery), ``consume_ms`` (time spent per
message), ``expect`` (stop once this many distinct messages succeeded, after ``linger``
seconds; 0 runs until stdin closes), ``timeout``.

Prints ``started``, ``received`` per delivery (with ``result``), ``done``, ``shutdown``.
"""

from __future__ import annotations

import threading
import time

from _common import emit, hard_exit, stdin_closed_event, watchdog
from sdk5_py_common import client_configuration, config, error_event, message_event


def main() -> None:
    cfg = config()
    timeout = cfg.get("timeout", 60)
    watchdog(timeout + 25)
    from rocketmq import ConsumeResult, FilterExpression, MessageListener, PushConsumer

    lock = threading.Lock()
    succeeded: set[str] = set()
    enough = threading.Event()

    class Listener(MessageListener):
        def consume(self, message) -> ConsumeResult:
            attempt = message.delivery_attempt or 0
            fail = cfg.get("fail_always") or attempt < cfg.get("fail_below_attempt", 0)
            if cfg.get("consume_ms"):
                time.sleep(cfg["consume_ms"] / 1000)
            emit(event="received", result="FAILURE" if fail else "SUCCESS",
                 thread=threading.current_thread().name, **message_event(message))
            if fail:
                return ConsumeResult.FAILURE
            with lock:
                succeeded.add(message.message_id)
                if cfg.get("expect") and len(succeeded) >= cfg["expect"]:
                    enough.set()
            return ConsumeResult.SUCCESS

    consumer = PushConsumer(client_configuration(cfg), cfg["group"], Listener(),
                            {cfg["topic"]: FilterExpression(cfg.get("expr", "*"))})
    try:
        consumer.startup()
    except Exception as e:  # noqa: BLE001
        emit(event="start_error", **error_event(e))
        hard_exit(1)
    emit(event="started", fifo=consumer.fifo, long_polling_timeout=consumer.long_polling_timeout)
    stop = stdin_closed_event()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stop.is_set() and not enough.is_set():
        time.sleep(0.05)
    if enough.is_set():
        time.sleep(cfg.get("linger", 1.0))
    with lock:
        emit(event="done", succeeded=len(succeeded), timed_out=time.monotonic() >= deadline)
    watchdog(15)
    try:
        consumer.shutdown()
    except Exception as e:  # noqa: BLE001
        emit(event="shutdown_error", **error_event(e))
    emit(event="shutdown")
    hard_exit(0)


if __name__ == "__main__":
    main()
