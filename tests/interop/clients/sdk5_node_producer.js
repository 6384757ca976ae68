'use strict';
// Send with npm rocketmq-client-nodejs 1.x's Producer (gRPC).
// Config (argv[2], JSON): endpoint, topic, count (1), mode: normal | fifo (groups: message i goes
// to groups[i % n]) | delay (deliver_at_ms: the delivery timestamp) | transaction (one message
// per transaction, committed unless its index is in `unknown`: those stay undecided and the
// checker answers COMMIT when the broker checks back), body_prefix, tag, wait_checks, timeout.
// Prints started, sent / send_error per message, checked per check-back, done.

const { emit, args, watchdog, onStdinClosed, sleep } = require('./_common');
const { errorEvent, shutdownWithin } = require('./sdk5_node_common');
const { Producer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

async function main() {
  const cfg = args();
  const timeout = cfg.timeout ?? 60;
  watchdog(timeout + 15);
  const mode = cfg.mode || 'normal';
  const checks = [];
  const checker = {
    async check(mv) {
      checks.push(mv.messageId);
      emit({ event: 'checked', message_id: mv.messageId, body: mv.body.toString('utf8'), resolution: 'COMMIT' });
      return TransactionResolution.COMMIT;
    },
  };
  const producer = new Producer({
    endpoints: cfg.endpoint, namespace: '', topics: [ cfg.topic ], requestTimeout: 3000,
    checker: mode === 'transaction' ? checker : undefined,
  });
  try {
    await producer.startup();
  } catch (err) {
    emit({ event: 'start_error', ...errorEvent(err) });
    process.exit(1);
  }
  emit({ event: 'started' });
  const groups = cfg.groups || [ 'g0' ];
  const unknown = new Set(cfg.unknown || []);
  for (let i = 0; i < (cfg.count ?? 1); i++) {
    const body = `${cfg.body_prefix || 'body'}-${i}`;
    const msg = {
      topic: cfg.topic, body: Buffer.from(body), keys: [ `key-${i}` ],
      properties: new Map([[ 'index', String(i) ]]),
    };
    if (cfg.tag) msg.tag = cfg.tag;
    let group = null;
    if (mode === 'fifo') {
      group = groups[i % groups.length];
      msg.messageGroup = group;
    } else if (mode === 'delay') {
      msg.deliveryTimestamp = new Date(cfg.deliver_at_ms);
    }
    let receipt;
    try {
      if (mode === 'transaction') {
        const tx = producer.beginTransaction();
        receipt = await producer.send(msg, tx);
        if (!unknown.has(i)) await tx.commit();
      } else {
        receipt = await producer.send(msg);
      }
    } catch (err) {
      emit({ event: 'send_error', index: i, body, ...errorEvent(err) });
      continue;
    }
    emit({
      event: 'sent', index: i, body, group, message_id: receipt.messageId,
      transaction_id: receipt.transactionId, offset: receipt.offset,
      queue_id: receipt.messageQueue.queueId,
      decided: mode !== 'transaction' || !unknown.has(i),
    });
  }
  let stop = false;
  onStdinClosed(() => { stop = true; });
  const deadline = Date.now() + timeout * 1000;
  while (checks.length < (cfg.wait_checks || 0) && !stop && Date.now() < deadline) {
    await sleep(50);
  }
  if (checks.length) await sleep(1000); // the EndTransaction answering a check-back is async
  await shutdownWithin(producer, 8);
  emit({ event: 'done', checks: checks.length });
  process.exit(0);
}

main().catch(err => {
  emit({ event: 'fatal', ...errorEvent(err) });
  process.exit(2);
});
