'use strict';
// Consume with npm rocketmq-client-nodejs 1.x's PushConsumer (Telemetry settings, QueryAssignment,
// ReceiveMessage, Ack, ChangeInvisibleDuration on failure, ForwardMessageToDeadLetterQueue for FIFO
// groups). Config (argv[2], JSON) as clients/sdk5_py_push_consumer.py: endpoint, topic, group,
// expr, fail_below_attempt, fail_always, consume_ms, expect, linger, timeout.
// Prints started, received per delivery (with result), done, shutdown.

const { emit, args, watchdog, onStdinClosed, sleep } = require('./_common');
const { messageEvent, errorEvent, shutdownWithin } = require('./sdk5_node_common');
const { PushConsumer, FilterExpression, ConsumeResult } = require('rocketmq-client-nodejs');

async function main() {
  const cfg = args();
  const timeout = cfg.timeout ?? 60;
  watchdog(timeout + 25);
  const succeeded = new Set();
  let enough = false;
  const listener = {
    async consume(mv) {
      const attempt = mv.deliveryAttempt || 0;
      const fail = !!cfg.fail_always || attempt < (cfg.fail_below_attempt || 0);
      if (cfg.consume_ms) await sleep(cfg.consume_ms);
      emit({ event: 'received', result: fail ? 'FAILURE' : 'SUCCESS', ...messageEvent(mv) });
      if (fail) return ConsumeResult.FAILURE;
      succeeded.add(mv.messageId);
      if (cfg.expect && succeeded.size >= cfg.expect) enough = true;
      return ConsumeResult.SUCCESS;
    },
  };
  const consumer = new PushConsumer({
    endpoints: cfg.endpoint, namespace: '', consumerGroup: cfg.group, requestTimeout: 3000,
    subscriptions: new Map([[ cfg.topic, new FilterExpression(cfg.expr || '*') ]]),
    messageListener: listener,
  });
  try {
    await consumer.startup();
  } catch (err) {
    emit({ event: 'start_error', ...errorEvent(err) });
    process.exit(1);
  }
  const settings = consumer.getPushConsumerSettings();
  emit({
    event: 'started', fifo: settings.isFifo(), receive_batch_size: settings.getReceiveBatchSize(),
    long_polling_timeout_ms: settings.getLongPollingTimeout(),
    max_attempts: consumer.getRetryPolicy() ? consumer.getRetryPolicy().getMaxAttempts() : null,
  });
  let stop = false;
  onStdinClosed(() => { stop = true; });
  const deadline = Date.now() + timeout * 1000;
  while (!stop && !enough && Date.now() < deadline) await sleep(50);
  if (enough) await sleep((cfg.linger ?? 1) * 1000);
  emit({ event: 'done', succeeded: succeeded.size, timed_out: Date.now() >= deadline });
  await shutdownWithin(consumer, 5);
  emit({ event: 'shutdown' });
  process.exit(0);
}

main().catch(err => {
  emit({ event: 'fatal', ...errorEvent(err) });
  process.exit(2);
});
