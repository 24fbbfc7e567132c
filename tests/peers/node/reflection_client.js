'use strict';
// A server reflection client on grpc-reflection-js (which asks grpc.reflection.v1alpha over
// grpc-js): lists the server's services, resolves every service, method and message type they
// use from the descriptors the server sends, and checks that an unknown symbol is refused.
//
//   node reflection_client.js --server_host=127.0.0.1 --server_port=50051 \
//       --expect_services=grpc.testing.TestService,grpc.health.v1.Health
//
// Prints `PASS <step>` per step; exits 0 when every step passed, 1 otherwise.

const grpc = require('@grpc/grpc-js');
const { Client } = require('grpc-reflection-js');
const { parseFlags } = require('./common');

function fail(message) {
  console.log(`FAIL ${message}`);
  process.exit(1);
}

// Every message type reachable from `type` (fields, map values, nested), by full name.
function collectTypes(type, seen) {
  const name = type.fullName.replace(/^\./, '');
  if (seen.has(name)) return;
  seen.add(name);
  type.resolveAll();
  for (const field of type.fieldsArray) {
    if (field.resolvedType && field.resolvedType.fieldsArray) {
      collectTypes(field.resolvedType, seen);
    }
  }
}

async function main() {
  const flags = parseFlags(process.argv.slice(2), {
    server_host: '127.0.0.1',
    server_port: '',
    expect_services: '',
  });
  if (!flags.server_port) fail('--server_port is required');
  const client = new Client(`${flags.server_host}:${flags.server_port}`,
                            grpc.credentials.createInsecure());

  const services = await client.listServices();
  for (const expected of flags.expect_services.split(',').filter((s) => s)) {
    if (!services.includes(expected)) {
      fail(`list_services: ${expected} missing from ${JSON.stringify(services)}`);
    }
  }
  console.log(`PASS list_services (${services.join(', ')})`);

  let methods = 0;
  const types = new Set();
  for (const serviceName of services) {
    const root = await client.fileContainingSymbol(serviceName);
    const service = root.lookupService(serviceName);
    if (!service) fail(`no descriptor for service ${serviceName}`);
    for (const method of service.methodsArray) {
      method.resolve();
      if (!method.resolvedRequestType || !method.resolvedResponseType) {
        fail(`${serviceName}.${method.name}: request or response type unresolved`);
      }
      collectTypes(method.resolvedRequestType, types);
      collectTypes(method.resolvedResponseType, types);
      ++methods;
    }
  }
  if (methods === 0 || types.size === 0) fail('no methods or message types resolved');
  console.log(`PASS resolve_all (${methods} methods, ${types.size} message types)`);

  const byName = await client.fileByFilename('grpc/testing/messages.proto');
  if (!byName.lookupType('grpc.testing.SimpleRequest')) {
    fail('file_by_filename: grpc.testing.SimpleRequest not in grpc/testing/messages.proto');
  }
  console.log('PASS file_by_filename');

  let refused = false;
  try {
    await client.fileContainingSymbol('no.such.Symbol');
  } catch (e) {
    refused = true;
  }
  if (!refused) fail('an unknown symbol was not refused');
  console.log('PASS unknown_symbol');

  client.grpcClient.close();
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
