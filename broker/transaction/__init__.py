"""Transactional messages: half messages, op records, END_TRANSACTION and check-back.

* :mod:`rocketmq_emu.broker.transaction.bridge` — the half / op system queues and the check cursor;
* :mod:`rocketmq_emu.broker.transaction.service` — END_TRANSACTION outcomes and one check pass (pure logic
  over the store, clock values passed in);
* :mod:`rocketmq_emu.broker.transaction.check_service` — the periodic check loop and the
  CHECK_TRANSACTION_STATE request.
"""
