'use strict';
// Consume with the npm rocketmq-nodejs@1.1.2 push consumer.
const { emit, args, watchdog, onStdinClosed, sleep } = require('./_common');
const { PushConsumer } = require('rocketmq-nodejs');

async function main() {
  const a = args();
  const timeout = a.timeout || 60;
  watchdog(timeout + 15);
  const consumer = new PushConsumer(a.group, `inst_${process.pid}`, {
    nameServer: a.namesrv,
    threadCount: 2,
    logDir: a.log_dir,
    logLevel: 'info',
  });
  let received = 0;
  let enoughAt = null;
  consumer.on('message', (msg, ack) => {
    emit({ event: 'msg', topic: msg.topic, tags: msg.tags, keys: msg.keys, body: msg.body,
      msg_id: msg.msgId });
    ack.done();
    received++;
    if (a.expect && received >= a.expect && enoughAt === null) enoughAt = Date.now();
  });
  consumer.subscribe(a.topic, a.expr || '*');
  await consumer.start();
  emit({ event: 'started' });
  let stop = false;
  onStdinClosed(() => { stop = true; });
  const deadline = Date.now() + timeout * 1000;
  const linger = (a.linger === undefined ? 1 : a.linger) * 1000;
  while (!stop && Date.now() < deadline) {
    if (enoughAt !== null && Date.now() - enoughAt >= linger) break;
    await sleep(50);
  }
  emit({ event: 'done', received, timed_out: Date.now() >= deadline });
  await consumer.shutdown();
  emit({ event: 'shutdown' });
  process.exit(0);
}

main().catch(err => {
  emit({ event: 'fatal', error: String(err && err.stack || err) });
  process.exit(2);
});
