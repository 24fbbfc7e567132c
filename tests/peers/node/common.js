'use strict';
// What the grpc-js interop server and client share: loading grpc.testing from grpc-proto
// ($RILL_GRPC_PROTO_ROOT, default /usr/share/grpc-proto: Debian's grpc-proto package) and
// reading `--name=value` flags the way the other peers do.

const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_ROOT = process.env.RILL_GRPC_PROTO_ROOT || '/usr/share/grpc-proto';

// The grpc.testing package object: service constructors and definitions. Messages are plain
// objects with proto field names; unset message fields are null, bytes are Buffers and enums
// are their names.
function loadTestingPackage() {
  const definition = protoLoader.loadSync(['grpc/testing/test.proto'], {
    keepCase: true,
    longs: String,
    enums: String,
    bytes: Buffer,
    defaults: true,
    oneofs: true,
    includeDirs: [PROTO_ROOT],
  });
  return grpc.loadPackageDefinition(definition).grpc.testing;
}

// Parses argv into an object with one key per flag of `defaults`; exits with status 2 on an
// unknown flag or a bare argument. `--name` alone means "true".
function parseFlags(argv, defaults) {
  const flags = Object.assign({}, defaults);
  for (const arg of argv) {
    const match = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    if (!match || !(match[1] in defaults)) {
      process.stderr.write(`unknown argument: ${arg}\n`);
      process.exit(2);
    }
    flags[match[1]] = match[2] === undefined ? 'true' : match[2];
  }
  return flags;
}

function isTrue(value) {
  return ['true', '1', 'yes'].includes(String(value).toLowerCase());
}

module.exports = {grpc, loadTestingPackage, parseFlags, isTrue};
