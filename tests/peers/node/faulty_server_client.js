'use strict';
// Drives a server whose user code throws on a third of its calls (rill_faulty_server) from
// grpc-js: unary calls (inline and coroutine handlers) and bidi streams, all on one channel.
// Every call must end OK or UNKNOWN — UNKNOWN for the calls that threw, OK with the right
// payload for the rest — and both must occur.
//
//   node faulty_server_client.js --server_host=127.0.0.1 --server_port=50051 --calls=300
//
// Prints `statuses: OK=<n> UNKNOWN=<m> ...` and exits 0 when the outcome is as above.

const {grpc, loadTestingPackage, parseFlags} = require('./common');

const flags = parseFlags(process.argv.slice(2),
                         {server_host: '127.0.0.1', server_port: '0', calls: '300'});
const testing = loadTestingPackage();
const client = new testing.TestService(`${flags.server_host}:${flags.server_port}`,
                                       grpc.credentials.createInsecure());
const deadline = () => new Date(Date.now() + 20000);
const counts = {};
let wrong = 0;

function note(code) { counts[code] = (counts[code] || 0) + 1; }

function unary(method, i) {
  return new Promise((resolve) => {
    const body = Buffer.from(`call ${i}`);
    client[method]({payload: {body}}, {deadline: deadline()}, (err, response) => {
      if (err) {
        note(grpc.status[err.code]);
      } else {
        note('OK');
        if (!response.payload.body.equals(body)) wrong++;
      }
      resolve();
    });
  });
}

function stream(i) {
  return new Promise((resolve) => {
    const call = client.FullDuplexCall({deadline: deadline()});
    let received = 0;
    call.on('data', (response) => {
      if (response.payload.body.toString() !== `stream ${i} message ${received}`) wrong++;
      received++;
    });
    call.on('error', (err) => { note(grpc.status[err.code]); resolve(); });
    call.on('status', (status) => { if (status.code === 0) { note('OK'); resolve(); } });
    for (let m = 0; m < 3; m++) call.write({payload: {body: Buffer.from(`stream ${i} message ${m}`)}});
    call.end();
  });
}

async function main() {
  const n = Number(flags.calls);
  // Ten at a time, so that throwing calls share the connection with calls in flight.
  for (let start = 0; start < n; start += 10) {
    const batch = [];
    for (let i = start; i < Math.min(start + 10, n); i++) {
      const kind = i % 3;
      batch.push(kind === 0 ? unary('UnaryCall', i) : kind === 1 ? unary('CacheableUnaryCall', i)
                                                                 : stream(i));
    }
    await Promise.all(batch);
  }
  const summary = Object.entries(counts).map(([k, v]) => `${k}=${v}`).join(' ');
  console.log(`statuses: ${summary}${wrong ? ` wrong_payloads=${wrong}` : ''}`);
  const others = Object.keys(counts).filter((k) => k !== 'OK' && k !== 'UNKNOWN');
  const ok = wrong === 0 && others.length === 0 && (counts.OK || 0) > 0 && (counts.UNKNOWN || 0) > 0;
  client.close();
  process.exit(ok ? 0 : 1);
}

main();
