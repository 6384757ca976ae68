"""Receive with the PyPI rocketmq-python-client 5.x SimpleConsumer (gRPC ReceiveMessage / Ack /
ChangeInvisibleDuration).

Config (one JSON argument): ``endpoint``, ``topic``, ``group``, ``expr`` (tag expression, default
``*``; ``sql``: true for SQL92), ``await_s`` (long polling, default 5), ``invisible_s`` (default
30), ``batch`` (default 16), ``ack_from_attempt`` (ack a delivery whose attempt is at least this;
default 1, 0 never acks), ``change_to_s`` (a delivery that is not acked gets its invisible
duration changed to this), ``ack_after_change`` (ack right after the change, with the new receipt
handle), ``expect`` (stop once this many messages are acked, after ``linger`` seconds; 0 runs
until stdin closes), ``timeout``; ``access_key`` / ``secret_key`` / ``tls`` as in
sdk5_py_common.config.

Prints ``started``, ``received`` per delivery, ``acked`` / ``changed`` / ``*_error``, ``done``,
``shutdown``.
"""

from __future__ import annotations

import time

from _common import emit, hard_exit, stdin_closed_event, watchdog
from sdk5_py_common import client_configuration, config, error_event, message_event


def main() -> None:
    cfg = config()
    timeout = cfg.get("timeout", 60)
    watchdog(timeout + 20)
    from rocketmq import FilterExpression, SimpleConsumer
    from rocketmq.grpc_protocol import FilterType

    expr = FilterExpression(cfg.get("expr", "*"),
                            FilterType.SQL if cfg.get("sql") else FilterType.TAG)
    consumer = SimpleConsumer(client_configuration(cfg), cfg["group"], {cfg["topic"]: expr},
                              await_duration=cfg.get("await_s", 5),
                              tls_enable=bool(cfg.get("tls")))
    try:
        consumer.startup()
    except Exception as e:  # noqa: BLE001
        emit(event="start_error", **error_event(e))
        hard_exit(1)
    emit(event="started")
    stop = stdin_closed_event()
    deadline = time.monotonic() + timeout
    ack_from = cfg.get("ack_from_attempt", 1)
    expect = cfg.get("expect", 0)
    acked: set[str] = set()
    enough_at = None
    while not stop.is_set() and time.monotonic() < deadline:
        if enough_at is not None and time.monotonic() - enough_at > cfg.get("linger", 1.0):
            break
        try:
            messages = consumer.receive(cfg.get("batch", 16), cfg.get("invisible_s", 30))
        except Exception as e:  # noqa: BLE001
            emit(event="receive_error", **error_event(e))
            time.sleep(0.5)
            continue
        for msg in messages:
            emit(event="received", **message_event(msg))
            attempt = msg.delivery_attempt or 0
            ack = ack_from > 0 and attempt >= ack_from
            if not ack and cfg.get("change_to_s") is not None:
                old = msg.receipt_handle
                try:
                    consumer.change_invisible_duration(msg, cfg["change_to_s"])
                except Exception as e:  # noqa: BLE001
                    emit(event="change_error", message_id=msg.message_id, **error_event(e))
                    continue
                emit(event="changed", message_id=msg.message_id, old_handle=old,
                     new_handle=msg.receipt_handle, seconds=cfg["change_to_s"])
                ack = bool(cfg.get("ack_after_change"))
            if ack:
                try:
                    consumer.ack(msg)
                except Exception as e:  # noqa: BLE001
                    emit(event="ack_error", message_id=msg.message_id, **error_event(e))
                    continue
                acked.add(msg.message_id)
                emit(event="acked", message_id=msg.message_id, body=msg.body.decode(),
                     delivery_attempt=attempt)
        if expect and len(acked) >= expect and enough_at is None:
            enough_at = time.monotonic()
    emit(event="done", acked=len(acked), timed_out=time.monotonic() >= deadline)
    watchdog(10)
    try:
        consumer.shutdown()
    except Exception as e:  # noqa: BLE001
        emit(event="shutdown_error", **error_event(e))
    emit(event="shutdown")
    hard_exit(0)


if __name__ == "__main__":
    main()
