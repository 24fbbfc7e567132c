'use strict';
// grpc.testing.TestService on @grpc/grpc-js: a second independent server for rill's interop
// clients, and the server grpc-js clients normally talk to.
//
//   node interop_server.js --port=0 --use_tls=false
//
// Prints `listening on <port>` once it accepts calls. Behaviour follows the server features of
// gRPC's interop test descriptions: EmptyCall, UnaryCall, StreamingOutputCall,
// StreamingInputCall, FullDuplexCall, HalfDuplexCall, CompressedRequest (expect_compressed),
// Echo Status, Echo Metadata and ResponseParameters.interval_us. UnimplementedCall stays
// unimplemented.
//
// Limits of grpc-js, and how this server handles them:
//   * A grpc-js server cannot compress responses (it always clears the compressed flag), so
//     response_compressed and ResponseParameters.compressed are ignored: clients that assert
//     the flag (server_compressed_unary, server_compressed_streaming) fail against it.
//   * grpc-js hands handlers decompressed messages and hides whether they were compressed. The
//     interceptor below records the compressed-flag byte of each received message by wrapping
//     the internal method of grpc-js's base call object that reads it (present in 1.14). If a
//     later grpc-js lacks it, requests with expect_compressed fail with INVALID_ARGUMENT saying
//     so, rather than passing unchecked.

const {grpc, loadTestingPackage, parseFlags, isTrue} = require('./common');

const ECHO_INITIAL_KEY = 'x-grpc-test-echo-initial';
const ECHO_TRAILING_KEY = 'x-grpc-test-echo-trailing-bin';
const WAS_COMPRESSED = Symbol('wasCompressed');

// Server interceptor: tags every received message with WAS_COMPRESSED (true, false, or
// undefined when grpc-js does not let it be seen).
function recordMessageCompression(methodDescriptor, call) {
  const flags = [];
  let base = call;
  while (base && typeof base.decompressAndMaybePush !== 'function') base = base.nextCall;
  if (base) {
    const readMessage = base.decompressAndMaybePush;
    base.decompressAndMaybePush = function (entry) {
      const framed = entry && entry.compressedMessage;
      flags.push(Buffer.isBuffer(framed) ? framed.readUInt8(0) === 1 : undefined);
      return readMessage.call(this, entry);
    };
  }
  return new grpc.ServerInterceptingCall(call, {
    start: (next) => next({
      onReceiveMessage: (message, nextMessage) => {
        if (message !== null && typeof message === 'object') {
          Object.defineProperty(message, WAS_COMPRESSED, {value: flags.shift()});
        }
        nextMessage(message);
      },
    }),
  });
}

// CompressedRequest: an error status when `request` was not compressed as it expects.
function compressionMismatch(request) {
  const expected = request.expect_compressed;
  if (expected === null || expected === undefined) return null;
  const actual = request[WAS_COMPRESSED];
  if (actual === undefined) {
    return {code: grpc.status.INVALID_ARGUMENT,
            details: 'this grpc-js server cannot see whether a request was compressed'};
  }
  if (actual === Boolean(expected.value)) return null;
  return {code: grpc.status.INVALID_ARGUMENT,
          details: expected.value ? 'request was not compressed' : 'request was compressed'};
}

// Echo Metadata: sends the initial echo key back at once and returns the trailing metadata
// (with the trailing echo key, if sent) to finish the call with.
function echoMetadata(call) {
  const initial = call.metadata.get(ECHO_INITIAL_KEY);
  if (initial.length > 0) {
    const metadata = new grpc.Metadata();
    metadata.set(ECHO_INITIAL_KEY, initial[0]);
    call.sendMetadata(metadata);
  }
  const trailer = new grpc.Metadata();
  const trailing = call.metadata.get(ECHO_TRAILING_KEY);
  if (trailing.length > 0) trailer.set(ECHO_TRAILING_KEY, trailing[0]);
  return trailer;
}

function echoedStatus(request, trailer) {
  const echo = request.response_status;
  if (echo === null || echo === undefined || echo.code === 0) return null;
  return {code: echo.code, details: echo.message, metadata: trailer};
}

function payload(size) {
  return {type: 'COMPRESSABLE', body: Buffer.alloc(size)};
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Writes the responses `request` asks for; resolves to an error status or null.
async function sendResponses(call, request) {
  if (request.response_type !== 'COMPRESSABLE') {
    return {code: grpc.status.INVALID_ARGUMENT, details: 'unsupported response_type'};
  }
  for (const parameters of request.response_parameters) {
    if (parameters.interval_us > 0) await sleep(parameters.interval_us / 1000);
    if (parameters.size < 0) {
      return {code: grpc.status.INVALID_ARGUMENT, details: 'negative response size'};
    }
    if (call.cancelled) return null;
    call.write({payload: payload(parameters.size)});
  }
  return null;
}

function withTrailer(status, trailer) {
  return Object.assign({metadata: trailer}, status);
}

const handlers = {
  EmptyCall(call, callback) {
    const trailer = echoMetadata(call);
    callback(null, {}, trailer);
  },

  UnaryCall(call, callback) {
    const trailer = echoMetadata(call);
    const request = call.request;
    const mismatch = compressionMismatch(request);
    if (mismatch) return callback(withTrailer(mismatch, trailer));
    if (request.response_type !== 'COMPRESSABLE') {
      return callback({code: grpc.status.INVALID_ARGUMENT,
                       details: 'unsupported response_type', metadata: trailer});
    }
    if (request.response_size < 0) {
      return callback({code: grpc.status.INVALID_ARGUMENT, details: 'negative response_size',
                       metadata: trailer});
    }
    const status = echoedStatus(request, trailer);
    if (status) return callback(status);
    callback(null, {payload: payload(request.response_size)}, trailer);
  },

  CacheableUnaryCall(call, callback) {
    const trailer = echoMetadata(call);
    const body = Buffer.from(String(process.hrtime.bigint()));
    callback(null, {payload: {type: 'COMPRESSABLE', body}}, trailer);
  },

  async StreamingOutputCall(call) {
    const trailer = echoMetadata(call);
    const status = echoedStatus(call.request, trailer) || await sendResponses(call, call.request);
    if (status) {
      call.emit('error', withTrailer(status, trailer));
    } else {
      call.end(trailer);
    }
  },

  StreamingInputCall(call, callback) {
    const trailer = echoMetadata(call);
    let aggregated = 0;
    let finished = false;
    call.on('data', (request) => {
      if (finished) return;
      const mismatch = compressionMismatch(request);
      if (mismatch) {
        finished = true;
        callback(withTrailer(mismatch, trailer));
        return;
      }
      if (request.payload) aggregated += request.payload.body.length;
    });
    call.on('end', () => {
      if (finished) return;
      finished = true;
      callback(null, {aggregated_payload_size: aggregated}, trailer);
    });
    call.on('error', () => {});
  },

  FullDuplexCall(call) {
    const trailer = echoMetadata(call);
    // Requests are answered one after the other, each after its intervals.
    let queue = Promise.resolve();
    let finished = false;
    const finish = (status) => {
      if (finished) return;
      finished = true;
      if (status) {
        call.emit('error', withTrailer(status, trailer));
      } else {
        call.end(trailer);
      }
    };
    call.on('data', (request) => {
      queue = queue.then(async () => {
        if (finished) return;
        const status = echoedStatus(request, trailer) || await sendResponses(call, request);
        if (status) finish(status);
      });
    });
    call.on('end', () => {
      queue = queue.then(() => finish(null));
    });
    call.on('error', () => {});
  },

  HalfDuplexCall(call) {
    const trailer = echoMetadata(call);
    const requests = [];
    let status = null;
    call.on('data', (request) => {
      if (!status) status = echoedStatus(request, trailer);
      requests.push(request);
    });
    call.on('end', async () => {
      for (const request of requests) {
        if (status) break;
        status = await sendResponses(call, request);
      }
      if (status) {
        call.emit('error', withTrailer(status, trailer));
      } else {
        call.end(trailer);
      }
    });
    call.on('error', () => {});
  },
};

function main() {
  const flags = parseFlags(process.argv.slice(2),
                          {port: '0', use_tls: 'false', tls_cert_file: '', tls_key_file: ''});
  const port = Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`bad --port: ${flags.port}\n`);
    process.exit(2);
  }
  const testing = loadTestingPackage();
  const server = new grpc.Server({interceptors: [recordMessageCompression]});
  // UnimplementedCall has no handler, so grpc-js answers it with UNIMPLEMENTED.
  server.addService(testing.TestService.service, handlers);
  const fs = require('fs');
  const credentials = isTrue(flags.use_tls)
    ? grpc.ServerCredentials.createSsl(null, [{
      cert_chain: fs.readFileSync(flags.tls_cert_file),
      private_key: fs.readFileSync(flags.tls_key_file),
    }], false)
    : grpc.ServerCredentials.createInsecure();
  const started = (error, boundPort) => {
    if (error) {
      process.stderr.write(`cannot listen on port ${port}: ${error.message}\n`);
      process.exit(1);
    }
    process.stdout.write(`listening on ${boundPort}\n`);
  };
  // Both address families where the machine has IPv6, IPv4 alone where it has not.
  server.bindAsync(`[::]:${port}`, credentials, (error, boundPort) => {
    if (error) {
      server.bindAsync(`0.0.0.0:${port}`, credentials, started);
    } else {
      started(null, boundPort);
    }
  });
  const stop = () => {
    server.tryShutdown(() => process.exit(0));
    setTimeout(() => {
      server.forceShutdown();
      process.exit(0);
    }, 1000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
