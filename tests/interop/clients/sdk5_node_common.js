'use strict';
// Shared helpers for the scripts driving npm rocketmq-client-nodejs 1.x (the 5.x gRPC SDK):
// messages and errors as JSON-able objects, and a shutdown bounded in time.

const { emit } = require('./_common');

function messageEvent(mv) {
  return {
    message_id: mv.messageId,
    body: mv.body.toString('utf8'),
    topic: mv.topic,
    tag: mv.tag || null,
    keys: [ ...(mv.keys || []) ].sort(),
    properties: Object.fromEntries(mv.properties || []),
    group: mv.messageGroup || null,
    delivery_attempt: mv.deliveryAttempt,
    delivery_timestamp: mv.deliveryTimestamp ? mv.deliveryTimestamp.getTime() : null,
    born_timestamp: mv.bornTimestamp ? mv.bornTimestamp.getTime() : null,
    receipt_handle: mv.receiptHandle,
    corrupted: !!mv.corrupted,
    offset: mv.offset,
    received_ms: Date.now(),
  };
}

function errorEvent(err) {
  return {
    error: String(err && err.message ? err.message : err),
    type: err && err.constructor ? err.constructor.name : typeof err,
    code: err && err.code !== undefined ? err.code : null,
  };
}

// Shut the client down (NotifyClientTermination, streams closed) but give up after `seconds`:
// the push consumer waits for in-flight long polls, which the tests need not sit through.
async function shutdownWithin(client, seconds) {
  let timer;
  const limit = new Promise(resolve => {
    timer = setTimeout(() => resolve('timeout'), seconds * 1000);
  });
  try {
    const result = await Promise.race([ client.shutdown().then(() => 'ok'), limit ]);
    if (result === 'timeout') emit({ event: 'shutdown_timeout', seconds });
  } catch (err) {
    emit({ event: 'shutdown_error', ...errorEvent(err) });
  } finally {
    clearTimeout(timer);
  }
}

module.exports = { messageEvent, errorEvent, shutdownWithin };
