"""grpc.testing.TestService on grpcio (Debian's python3-grpcio 1.51): the grpcio server of the
interop matrix, for rill's interop client.

    run_server.sh --port=0 --use_tls=false
    run_server.sh --port=0 --use_tls=true --tls_cert_file=server.pem --tls_key_file=server.key \
        [--tls_client_ca_file=ca.pem]

Prints `listening on <port>` once it accepts calls; SIGINT or SIGTERM stops it. Behaviour
follows the server features of gRPC's interop test descriptions: EmptyCall, UnaryCall,
StreamingOutputCall, StreamingInputCall, FullDuplexCall, HalfDuplexCall, Echo Status, Echo
Metadata, ResponseParameters.interval_us, and response compression on request
(response_compressed, ResponseParameters.compressed). UnimplementedCall stays unimplemented.

Needs the modules protoc --python_out generates from grpc-proto's grpc/testing/empty.proto and
messages.proto, importable as `empty_pb2` and `messages_pb2` (run_server.sh generates them).
Handlers are registered through grpcio's generic method handlers, so no generated service code
(grpc-tools) is needed.

What grpcio cannot do, and how this server handles it: a grpcio handler receives decompressed
messages and cannot see whether one was compressed, so a request carrying expect_compressed
(CompressedRequest) is refused with INVALID_ARGUMENT saying so, rather than passing unchecked.
Clients' client_compressed_unary and client_compressed_streaming therefore fail against it.
"""

import argparse
import signal
import sys
import threading
import time
from concurrent import futures

import grpc

import empty_pb2
import messages_pb2

ECHO_INITIAL_KEY = "x-grpc-test-echo-initial"
ECHO_TRAILING_KEY = "x-grpc-test-echo-trailing-bin"
SERVICE = "grpc.testing.TestService"


def echo_metadata(context):
    """Echo Metadata: sends the initial echo key back at once, sets the trailing one."""
    metadata = context.invocation_metadata()
    initial = [(k, v) for k, v in metadata if k == ECHO_INITIAL_KEY]
    if initial:
        context.send_initial_metadata(initial[:1])
    trailing = [(k, v) for k, v in metadata if k == ECHO_TRAILING_KEY]
    if trailing:
        context.set_trailing_metadata(trailing[:1])


def refuse(context, code, details):
    context.set_code(code)
    context.set_details(details)


def echoed_status(request, context):
    """Echo Status: True (and the status set) when the request asks for a non-OK status."""
    if request.HasField("response_status") and request.response_status.code != 0:
        refuse(context, grpc.StatusCode(_code_tuple(request.response_status.code)),
               request.response_status.message)
        return True
    return False


def _code_tuple(number):
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code.value
    return grpc.StatusCode.UNKNOWN.value


def cannot_check_compression(request, context):
    if request.HasField("expect_compressed"):
        refuse(context, grpc.StatusCode.INVALID_ARGUMENT,
               "this grpcio server cannot see whether a request was compressed")
        return True
    return False


def payload(size):
    return messages_pb2.Payload(type=messages_pb2.COMPRESSABLE, body=bytes(size))


def bad_request(request, context):
    if request.response_type != messages_pb2.COMPRESSABLE:
        refuse(context, grpc.StatusCode.INVALID_ARGUMENT, "unsupported response_type")
        return True
    return False


def empty_call(request, context):
    echo_metadata(context)
    return empty_pb2.Empty()


def unary_call(request, context):
    echo_metadata(context)
    if cannot_check_compression(request, context) or bad_request(request, context):
        return messages_pb2.SimpleResponse()
    if request.response_size < 0:
        refuse(context, grpc.StatusCode.INVALID_ARGUMENT, "negative response_size")
        return messages_pb2.SimpleResponse()
    if echoed_status(request, context):
        return messages_pb2.SimpleResponse()
    if request.HasField("response_compressed") and request.response_compressed.value:
        context.set_compression(grpc.Compression.Gzip)
    return messages_pb2.SimpleResponse(payload=payload(request.response_size))


def streaming_responses(request, context, compressing):
    """Yields the responses `request` asks for. `compressing` is a one-element list: whether
    the call's compression was switched on (done once, at the first response that asks)."""
    for parameters in request.response_parameters:
        if parameters.interval_us > 0:
            time.sleep(parameters.interval_us / 1e6)
        if parameters.size < 0:
            refuse(context, grpc.StatusCode.INVALID_ARGUMENT, "negative response size")
            return
        if not context.is_active():
            return
        wants = parameters.HasField("compressed") and parameters.compressed.value
        if wants and not compressing[0]:
            context.set_compression(grpc.Compression.Gzip)
            compressing[0] = True
        elif compressing[0] and not wants:
            context.disable_next_message_compression()
        yield messages_pb2.StreamingOutputCallResponse(payload=payload(parameters.size))


def streaming_output_call(request, context):
    echo_metadata(context)
    if echoed_status(request, context) or bad_request(request, context):
        return
    yield from streaming_responses(request, context, [False])


def streaming_input_call(request_iterator, context):
    echo_metadata(context)
    aggregated = 0
    for request in request_iterator:
        if cannot_check_compression(request, context):
            return messages_pb2.StreamingInputCallResponse()
        aggregated += len(request.payload.body)
    return messages_pb2.StreamingInputCallResponse(aggregated_payload_size=aggregated)


def full_duplex_call(request_iterator, context):
    echo_metadata(context)
    compressing = [False]
    for request in request_iterator:
        if echoed_status(request, context) or bad_request(request, context):
            return
        yield from streaming_responses(request, context, compressing)


def half_duplex_call(request_iterator, context):
    echo_metadata(context)
    requests = list(request_iterator)
    compressing = [False]
    for request in requests:
        if echoed_status(request, context) or bad_request(request, context):
            return
        yield from streaming_responses(request, context, compressing)


def handlers():
    m = messages_pb2

    def unary(fn, req, resp):
        return grpc.unary_unary_rpc_method_handler(
            fn, request_deserializer=req.FromString, response_serializer=resp.SerializeToString)

    def server_stream(fn, req, resp):
        return grpc.unary_stream_rpc_method_handler(
            fn, request_deserializer=req.FromString, response_serializer=resp.SerializeToString)

    def client_stream(fn, req, resp):
        return grpc.stream_unary_rpc_method_handler(
            fn, request_deserializer=req.FromString, response_serializer=resp.SerializeToString)

    def bidi(fn, req, resp):
        return grpc.stream_stream_rpc_method_handler(
            fn, request_deserializer=req.FromString, response_serializer=resp.SerializeToString)

    return grpc.method_handlers_generic_handler(SERVICE, {
        "EmptyCall": unary(empty_call, empty_pb2.Empty, empty_pb2.Empty),
        "UnaryCall": unary(unary_call, m.SimpleRequest, m.SimpleResponse),
        "StreamingOutputCall": server_stream(streaming_output_call,
                                             m.StreamingOutputCallRequest,
                                             m.StreamingOutputCallResponse),
        "StreamingInputCall": client_stream(streaming_input_call, m.StreamingInputCallRequest,
                                            m.StreamingInputCallResponse),
        "FullDuplexCall": bidi(full_duplex_call, m.StreamingOutputCallRequest,
                               m.StreamingOutputCallResponse),
        "HalfDuplexCall": bidi(half_duplex_call, m.StreamingOutputCallRequest,
                               m.StreamingOutputCallResponse),
    })


def parse_flags(argv):
    parser = argparse.ArgumentParser(description="gRPC interop test server (grpcio)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--use_tls", default="false")
    parser.add_argument("--tls_cert_file", default="")
    parser.add_argument("--tls_key_file", default="")
    parser.add_argument("--tls_client_ca_file", default="")
    flags = parser.parse_args(argv)
    flags.use_tls = flags.use_tls.lower() in ("true", "1", "yes")
    return flags


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main(argv):
    flags = parse_flags(argv)
    # Enough threads for every call of the matrix's one-channel run at once (each streaming
    # call holds a thread until it ends).
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32),
                         handlers=[handlers()],
                         options=[("grpc.max_receive_message_length", -1),
                                  ("grpc.max_send_message_length", -1)])
    address = f"[::]:{flags.port}"
    if flags.use_tls:
        client_ca = read(flags.tls_client_ca_file) if flags.tls_client_ca_file else None
        credentials = grpc.ssl_server_credentials(
            [(read(flags.tls_key_file), read(flags.tls_cert_file))],
            root_certificates=client_ca, require_client_auth=client_ca is not None)
        port = server.add_secure_port(address, credentials)
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        print(f"cannot listen on port {flags.port}", file=sys.stderr)
        return 1
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    server.start()
    print(f"listening on {port}", flush=True)
    while not stopped.wait(0.5):
        pass
    server.stop(grace=1).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
