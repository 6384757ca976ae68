"""Send with the PyPI rocketmq-python-client 5.x Producer (gRPC).

Config (one JSON argument): ``endpoint``, ``topic``, ``count`` (default 1; -1: until stdin
closes, ``pause`` seconds between sends), ``mode`` one of
``normal`` | ``fifo`` (``groups``: message groups, message i goes to ``groups[i % n]``) |
``delay`` (``deliver_at_ms``: the delivery timestamp; this SDK sends whole seconds) |
``transaction`` (each message in its own transaction, committed unless its index is in
``unknown``: those stay undecided so the broker checks back; the checker answers COMMIT),
``body_prefix``, ``tag``, ``wait_checks`` (transaction: stay until this many check-backs),
``recall`` (indexes recalled right after their send with ``Producer.recall_message``),
``timeout``; ``access_key`` / ``secret_key`` / ``tls`` as in sdk5_py_common.config.

Prints ``started``, ``sent`` / ``send_error`` per message (with its ``recall_handle``, the
send's latency ``ms`` and the wall-clock time ``at`` it returned),
``recalled`` / ``recall_error`` per recall, ``checked`` per check-back, ``done``.
"""

from __future__ import annotations

import itertools
import threading
import time

from _common import emit, hard_exit, stdin_closed_event, watchdog
from sdk5_py_common import client_configuration, config, error_event


def main() -> None:
    cfg = config()
    timeout = cfg.get("timeout", 60)
    watchdog(timeout + 15)
    from rocketmq import Message, Producer, TransactionChecker, TransactionResolution

    mode = cfg.get("mode", "normal")
    checks: list[str] = []
    lock = threading.Lock()

    class Checker(TransactionChecker):
        def check(self, message) -> TransactionResolution:
            with lock:
                checks.append(message.message_id)
            emit(event="checked", message_id=message.message_id,
                 body=message.body.decode("utf-8", errors="replace"), resolution="COMMIT")
            return TransactionResolution.COMMIT

    producer = Producer(client_configuration(cfg), (cfg["topic"],),
                        checker=Checker() if mode == "transaction" else None,
                        tls_enable=bool(cfg.get("tls")))
    try:
        producer.startup()
    except Exception as e:  # noqa: BLE001 - reported, not raised
        emit(event="start_error", **error_event(e))
        hard_exit(1)
    emit(event="started")
    groups = cfg.get("groups") or ["g0"]
    unknown = set(cfg.get("unknown", ()))
    count = cfg.get("count", 1)
    stop_sending = stdin_closed_event() if count < 0 else None
    for i in itertools.count() if count < 0 else range(count):
        if stop_sending is not None and stop_sending.wait(cfg.get("pause", 0)):
            break
        body = f"{cfg.get('body_prefix', 'body')}-{i}"
        msg = Message()
        msg.topic = cfg["topic"]
        msg.body = body.encode()
        if cfg.get("tag"):
            msg.tag = cfg["tag"]
        msg.keys = f"key-{i}"
        msg.add_property("index", str(i))
        group = None
        if mode == "fifo":
            group = groups[i % len(groups)]
            msg.message_group = group
        elif mode == "delay":
            msg.delivery_timestamp = int(cfg["deliver_at_ms"]) // 1000
        try:
            if mode == "transaction":
                tx = producer.begin_transaction()
                receipt = producer.send(msg, tx)
                if i not in unknown:
                    tx.commit()
            else:
                began = time.monotonic()
                receipt = producer.send(msg)
                elapsed_ms = (time.monotonic() - began) * 1000
        except Exception as e:  # noqa: BLE001 - the SDK's exception is the observation
            emit(event="send_error", index=i, body=body, at=time.time(), **error_event(e))
            continue
        emit(event="sent", index=i, body=body, group=group, message_id=receipt.message_id,
             ms=None if mode == "transaction" else round(elapsed_ms, 3), at=time.time(),
             transaction_id=receipt.transaction_id, offset=receipt.offset,
             decided=mode != "transaction" or i not in unknown,
             recall_handle=receipt.recall_handle)
        if i in set(cfg.get("recall", ())):
            try:
                recalled = producer.recall_message(cfg["topic"], receipt.recall_handle)
            except Exception as e:  # noqa: BLE001 - the SDK's exception is the observation
                emit(event="recall_error", index=i, **error_event(e))
            else:
                emit(event="recalled", index=i, message_id=recalled)
    stop = stop_sending or stdin_closed_event()
    deadline = time.monotonic() + timeout
    while (len(checks) < cfg.get("wait_checks", 0) and not stop.is_set()
           and time.monotonic() < deadline):
        time.sleep(0.05)
    if checks:
        time.sleep(1)  # the EndTransaction answering the check-back goes out asynchronously
    try:
        producer.shutdown()
    except Exception as e:  # noqa: BLE001
        emit(event="shutdown_error", **error_event(e))
    emit(event="done", checks=len(checks))
    hard_exit(0)


if __name__ == "__main__":
    main()
