'use strict';
// Consume with the npm ali-ons@3.12.0 push consumer (clustering). Prints one line per message
// and an "assigned" line with the queues it owns whenever the rebalance changes them.
const { emit, args, watchdog, onStdinClosed, sleep } = require('./_common');
const { Consumer } = require('ali-ons');

async function main() {
  const a = args();
  const timeout = a.timeout || 60;
  watchdog(timeout + 15);
  const options = {
    httpclient: {},
    nameSrv: a.namesrv,
    consumerGroup: a.group,
    accessKeyId: '',
    accessKeySecret: '',
  };
  // Only override what the test asks for: an explicit undefined would replace the defaults.
  if (a.rebalance_interval_ms) options.rebalanceInterval = a.rebalance_interval_ms;
  if (a.consume_from_where) options.consumeFromWhere = a.consume_from_where;
  const consumer = new Consumer(options);
  consumer.on('error', err => emit({ event: 'client_error', error: String(err) }));
  let received = 0;
  let enoughAt = null;
  const assigned = () => Array.from(consumer.processQueueTable.values())
    .filter(v => v.messageQueue.topic === a.topic)
    .map(v => v.messageQueue.queueId)
    .sort((x, y) => x - y);
  consumer.on(`topic_${a.topic}_queue_changed`, () => {
    emit({ event: 'assigned', queues: assigned() });
  });
  consumer.subscribe(a.topic, a.expr || '*', async msg => {
    emit({ event: 'msg', topic: msg.topic, tags: msg.tags || '', keys: msg.keys || '',
      body: msg.body.toString(), msg_id: msg.msgId, queue_id: msg.queueId,
      queue_offset: msg.queueOffset, reconsume_times: msg.reconsumeTimes });
    received++;
    if (a.expect && received >= a.expect && enoughAt === null) enoughAt = Date.now();
  });
  await consumer.ready();
  emit({ event: 'started', client_id: consumer._mqClient.clientId });
  let stop = false;
  onStdinClosed(() => { stop = true; });
  const deadline = Date.now() + timeout * 1000;
  const linger = (a.linger === undefined ? 1 : a.linger) * 1000;
  while (!stop && Date.now() < deadline) {
    if (enoughAt !== null && Date.now() - enoughAt >= linger) break;
    await sleep(50);
  }
  emit({ event: 'done', received, timed_out: Date.now() >= deadline, queues: assigned() });
  await consumer.close();
  emit({ event: 'shutdown' });
  process.exit(0);
}

main().catch(err => {
  emit({ event: 'fatal', error: String(err && err.stack || err) });
  process.exit(2);
});
