'use strict';
// Receive with npm rocketmq-client-nodejs 1.x's SimpleConsumer (ReceiveMessage / Ack /
// ChangeInvisibleDuration). Config (argv[2], JSON) as clients/sdk5_py_simple_consumer.py:
// endpoint, topic, group, expr ('*'), sql, await_s (5), invisible_s (30), batch (16),
// ack_from_attempt (1; 0 never acks), change_to_s, ack_after_change, expect, linger, timeout.
// Prints started, received per delivery, acked / changed / *_error, done, shutdown.

const { emit, args, watchdog, onStdinClosed, sleep } = require('./_common');
const { messageEvent, errorEvent, shutdownWithin } = require('./sdk5_node_common');
const { SimpleConsumer, FilterExpression } = require('rocketmq-client-nodejs');
const { FilterType } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

async function main() {
  const cfg = args();
  const timeout = cfg.timeout ?? 60;
  watchdog(timeout + 20);
  const expr = new FilterExpression(cfg.expr || '*', cfg.sql ? FilterType.SQL : FilterType.TAG);
  const consumer = new SimpleConsumer({
    endpoints: cfg.endpoint, namespace: '', consumerGroup: cfg.group, requestTimeout: 3000,
    subscriptions: new Map([[ cfg.topic, expr ]]), awaitDuration: (cfg.await_s ?? 5) * 1000,
  });
  try {
    await consumer.startup();
  } catch (err) {
    emit({ event: 'start_error', ...errorEvent(err) });
    process.exit(1);
  }
  emit({ event: 'started' });
  let stop = false;
  onStdinClosed(() => { stop = true; });
  const deadline = Date.now() + timeout * 1000;
  const ackFrom = cfg.ack_from_attempt ?? 1;
  const expect = cfg.expect || 0;
  const acked = new Set();
  let enoughAt = null;
  while (!stop && Date.now() < deadline) {
    if (enoughAt !== null && Date.now() - enoughAt > (cfg.linger ?? 1) * 1000) break;
    let messages;
    try {
      messages = await consumer.receive(cfg.batch || 16, (cfg.invisible_s ?? 30) * 1000);
    } catch (err) {
      emit({ event: 'receive_error', ...errorEvent(err) });
      await sleep(500);
      continue;
    }
    for (const mv of messages) {
      emit({ event: 'received', ...messageEvent(mv) });
      const attempt = mv.deliveryAttempt || 0;
      let ack = ackFrom > 0 && attempt >= ackFrom;
      if (!ack && cfg.change_to_s !== undefined && cfg.change_to_s !== null) {
        const old = mv.receiptHandle;
        try {
          await consumer.changeInvisibleDuration(mv, cfg.change_to_s * 1000);
        } catch (err) {
          emit({ event: 'change_error', message_id: mv.messageId, ...errorEvent(err) });
          continue;
        }
        emit({ event: 'changed', message_id: mv.messageId, old_handle: old, new_handle: mv.receiptHandle, seconds: cfg.change_to_s });
        ack = !!cfg.ack_after_change;
      }
      if (ack) {
        try {
          await consumer.ack(mv);
        } catch (err) {
          emit({ event: 'ack_error', message_id: mv.messageId, ...errorEvent(err) });
          continue;
        }
        acked.add(mv.messageId);
        emit({ event: 'acked', message_id: mv.messageId, body: mv.body.toString('utf8'), delivery_attempt: attempt });
      }
    }
    if (expect && acked.size >= expect && enoughAt === null) enoughAt = Date.now();
  }
  emit({ event: 'done', acked: acked.size, timed_out: Date.now() >= deadline });
  await shutdownWithin(consumer, 8);
  emit({ event: 'shutdown' });
  process.exit(0);
}

main().catch(err => {
  emit({ event: 'fatal', ...errorEvent(err) });
  process.exit(2);
});
