'use strict';
// Send with npm rocketmq-nodejs@1.1.2 (native C++ addon, language CPP, version 333).
const { emit, args, watchdog } = require('./_common');
const { Producer } = require('rocketmq-nodejs');

async function main() {
  const a = args();
  watchdog(a.timeout || 40);
  const producer = new Producer(a.group || 'PID_nodejs_interop', `inst_${process.pid}`, {
    nameServer: a.namesrv,
    sendMessageTimeout: 5000,
    logDir: a.log_dir,
    logLevel: 'info',
  });
  await producer.start();
  emit({ event: 'started' });
  let errors = 0;
  for (let i = 0; i < a.count; i++) {
    try {
      const r = await producer.send(a.topic, `${a.body_prefix || 'body'}-${i}`,
        { tags: a.tag || 'TagA', keys: `${a.key_prefix || 'key'}-${i}` });
      emit({ event: 'sent', i, status: r.statusStr, msg_id: r.msgId, offset: r.offset });
    } catch (err) {
      errors++;
      emit({ event: 'send_error', i, error: String(err) });
    }
  }
  await producer.shutdown();
  emit({ event: 'done', errors });
  process.exit(0);
}

main().catch(err => {
  emit({ event: 'fatal', error: String(err && err.stack || err) });
  process.exit(2);
});
