'use strict';
// Send with npm ali-ons@3.12.0 (pure JS, language JAVA, SEND_MESSAGE_V2 with numbers/booleans
// in extFields). One JSON line per send result.
const { emit, args, watchdog } = require('./_common');
const { Producer, Message } = require('ali-ons');

async function main() {
  const a = args();
  watchdog(a.timeout || 40);
  const producer = new Producer({
    httpclient: {}, // asserted by RemotingClient, unused when nameSrv is given
    nameSrv: a.namesrv,
    producerGroup: a.group || 'PID_ons_interop',
    accessKeyId: '',
    accessKeySecret: '',
  });
  producer.on('error', err => emit({ event: 'client_error', error: String(err) }));
  await producer.ready();
  emit({ event: 'started' });
  let errors = 0;
  for (let i = 0; i < a.count; i++) {
    const msg = new Message(a.topic, a.tag || 'TagA', `${a.body_prefix || 'body'}-${i}`);
    msg.keys = [ `${a.key_prefix || 'key'}-${i}` ];
    try {
      const r = await producer.send(msg);
      emit({ event: 'sent', i, status: r.sendStatus, msg_id: r.msgId,
        queue_id: r.messageQueue && r.messageQueue.queueId, offset: r.queueOffset });
    } catch (err) {
      errors++;
      emit({ event: 'send_error', i, error: String(err) });
    }
  }
  await producer.close();
  emit({ event: 'done', errors });
  process.exit(0);
}

main().catch(err => {
  emit({ event: 'fatal', error: String(err && err.stack || err) });
  process.exit(2);
});
