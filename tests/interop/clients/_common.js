'use strict';
// Shared helpers for the Node interop client scripts: JSON-lines output, argument parsing,
// a watchdog, and stop-on-stdin-close so the test controls the lifetime.

function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n');
}

function args() {
  // One JSON object as argv[2]: {"namesrv": "127.0.0.1:9876", "topic": "T", ...}
  return JSON.parse(process.argv[2] || '{}');
}

function watchdog(seconds, code = 3) {
  const t = setTimeout(() => {
    emit({ event: 'watchdog', seconds });
    process.exit(code);
  }, seconds * 1000);
  t.unref();
  return t;
}

function onStdinClosed(fn) {
  process.stdin.on('data', chunk => {
    if (String(chunk).includes('stop')) fn();
  });
  process.stdin.on('end', fn);
  process.stdin.on('close', fn);
  process.stdin.resume();
}

function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}

module.exports = { emit, args, watchdog, onStdinClosed, sleep };
