"""Unary checks from grpcio (Debian's python3-grpcio 1.51) against rill's interop server.

    /usr/bin/python3 grpcio_unary_checks.py --server=build/.../rill_interop_server \
        --protoc=protoc --proto_root=protos --checks_proto_root=tests/interop/protos

The same checks grpcpp_unary_interop_test makes between libgrpc++ and rill, made by grpcio:
custom metadata both ways (ASCII and -bin, bytes 0x00 and 0xFF, several values per key),
deadlines that expire while the handler sleeps, client cancellation mid-call (the rill handler
must observe both), every status code 1..16 with a message and details, and messages from
0 B to the 4 MiB receive limit, one byte over which is refused with RESOURCE_EXHAUSTED.

Starts the server itself (--port=0 --test_only_unary_checks=true), which serves the test-only
interop_checks.UnaryChecks service (tests/interop/protos/interop_checks/unary_checks.proto);
Observe tells what a Check handler observed. The message modules are generated with
protoc --python_out into a temporary directory. Prints `PASS <check>` or
`FAIL <check>: <assertion>` per check and exits 0 when every check passed, 1 otherwise.
"""

import argparse
import itertools
import os
import subprocess
import sys
import tempfile

import grpc

RECEIVE_LIMIT = 4 * 1024 * 1024  # rill's and grpcio's default
ECHO_PREFIX = "x-check-"
OBSERVE_WAIT_MS = 10000


class CheckFailure(Exception):
    """The first failed assertion of a check."""


def expect(condition, message):
    if not condition:
        raise CheckFailure(message)


def pattern(size):
    return bytes(i % 251 for i in range(size))


def fnv1a64(data):
    h = 14695981039346656037
    for b in data:
        h ^= b
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def varint_size(value):
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def payload_size_for(serialized):
    """The length of bytes field 1 that makes a message of only that field `serialized` long."""
    for varint in range(1, 6):
        payload = serialized - 1 - varint
        if payload >= 0 and varint_size(payload) == varint:
            return payload
    raise ValueError(f"no payload size serializes to {serialized} bytes")


def echoed(metadata):
    """x-check-* entries of received metadata: key -> values in order."""
    out = {}
    for key, value in metadata or ():
        if key.startswith(ECHO_PREFIX):
            out.setdefault(key, []).append(value)
    return out


class Checks:
    def __init__(self, channel, pb, status_pb):
        self.pb = pb
        self.status_pb = status_pb
        self.check = channel.unary_unary(
            "/interop_checks.UnaryChecks/Check",
            request_serializer=pb.CheckRequest.SerializeToString,
            response_deserializer=pb.CheckResponse.FromString)
        self.observe_call = channel.unary_unary(
            "/interop_checks.UnaryChecks/Observe",
            request_serializer=pb.ObserveRequest.SerializeToString,
            response_deserializer=pb.ObserveResponse.FromString)
        self.call_ids = itertools.count()
        self.notes = []

    def new_call_id(self):
        return f"grpcio-{os.getpid()}-{next(self.call_ids)}"

    def observe(self, call_id, event):
        return self.observe_call(
            self.pb.ObserveRequest(call_id=call_id, event=event, wait_ms=OBSERVE_WAIT_MS),
            timeout=OBSERVE_WAIT_MS / 1000 + 10)

    def call(self, request, metadata=None, timeout=30):
        """(code, message, response or None, initial metadata, trailing metadata)"""
        try:
            response, call = self.check.with_call(request, metadata=metadata, timeout=timeout)
            return (grpc.StatusCode.OK, call.details(), response, call.initial_metadata(),
                    call.trailing_metadata())
        except grpc.RpcError as e:
            return e.code(), e.details(), None, e.initial_metadata(), e.trailing_metadata()

    def custom_metadata_travels_both_ways(self):
        every_byte = bytes(range(256))
        sent = [
            ("x-check-ascii", "first"),
            ("x-check-bin", b"\x00"),
            ("x-check-ascii", "second: printable ASCII !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
            ("x-check-bin", b"\xff\x00\xfe\x01"),
            ("x-check-bin", every_byte),
            ("x-check-ascii", "third"),
            ("x-check-other-bin", b"\xff"),
            ("x-check-lone", "1"),
        ]
        expected = {}
        for key, value in sent:
            expected.setdefault(key, []).append(value)
        code, message, _, initial, trailing = self.call(
            self.pb.CheckRequest(echo_metadata=True), metadata=sent)
        expect(code == grpc.StatusCode.OK, f"status {code} ({message!r})")
        expect(echoed(initial) == expected,
               f"initial metadata {echoed(initial)!r}, wanted {expected!r}")
        expect(echoed(trailing) == expected,
               f"trailing metadata {echoed(trailing)!r}, wanted {expected!r}")

    def deadline_expires_while_the_handler_sleeps(self):
        call_id = self.new_call_id()
        code, message, _, _, _ = self.call(
            self.pb.CheckRequest(sleep_ms=20000, call_id=call_id), timeout=0.2)
        expect(code == grpc.StatusCode.DEADLINE_EXCEEDED,
               f"status {code} ({message!r}), wanted DEADLINE_EXCEEDED")
        seen = self.observe(call_id, self.pb.ObserveRequest.FINISHED)
        expect(seen.found, "the rill handler did not finish after the deadline")
        expect(seen.cancelled, "the rill handler slept on past the deadline")
        expect(seen.had_deadline, "the rill handler saw no deadline")
        self.notes.append(f"rill handler observed the deadline "
                          f"{seen.observed_after_deadline_us} us after it")

    def client_cancels_mid_call(self):
        call_id = self.new_call_id()
        future = self.check.future(self.pb.CheckRequest(sleep_ms=20000, call_id=call_id),
                                   timeout=30)
        started = self.observe(call_id, self.pb.ObserveRequest.STARTED)
        expect(started.found, "the rill handler never started")
        expect(future.cancel(), "grpcio could not cancel the call")
        expect(future.cancelled(), "the call is not cancelled")
        seen = self.observe(call_id, self.pb.ObserveRequest.FINISHED)
        expect(seen.found, "the rill handler did not finish after the cancel")
        expect(seen.cancelled, "the rill handler did not observe the cancellation")

    def every_status_code_with_message_and_details(self):
        for code_value in range(1, 17):
            message = (f"status {code_value}: 100% sure, %41 stays %41, %zz and % alone; "
                       "non-ASCII: h\u00e9, \u263a, \U0001f608; tab\tnewline\n")
            details = self.status_pb.Status(code=code_value, message=message)
            any_detail = details.details.add()
            any_detail.type_url = "type.googleapis.com/interop_checks.CheckResponse"
            any_detail.value = self.pb.CheckResponse(payload=b"\x00\xff").SerializeToString()
            serialized = details.SerializeToString()
            code, received_message, _, _, trailing = self.call(self.pb.CheckRequest(
                status_code=code_value, status_message=message, status_details=serialized))
            expect(code.value[0] == code_value, f"code {code_value}: got {code}")
            expect(received_message == message,
                   f"code {code_value}: message {received_message!r}, wanted {message!r}")
            received_details = [v for k, v in trailing or () if k == "grpc-status-details-bin"]
            expect(received_details == [serialized],
                   f"code {code_value}: details {received_details!r}, wanted {serialized!r}")

    def message_sizes_both_ways(self):
        for size in (0, 1, 1024, 64 * 1024, 1024 * 1024):
            payload = pattern(size)
            code, message, response, _, _ = self.call(
                self.pb.CheckRequest(payload=payload, response_payload_size=size))
            expect(code == grpc.StatusCode.OK, f"{size} B: status {code} ({message!r})")
            expect(response.request_payload_size == size,
                   f"{size} B: the server got {response.request_payload_size} bytes")
            expect(response.request_payload_hash == (fnv1a64(payload) if size else 0),
                   f"{size} B: the server got other bytes than were sent")
            expect(response.payload == payload,
                   f"{size} B: the response payload ({len(response.payload)} bytes) differs "
                   "from the pattern")

    def request_of_exactly_the_receive_limit_is_accepted(self):
        request = self.pb.CheckRequest(payload=pattern(payload_size_for(RECEIVE_LIMIT)))
        expect(request.ByteSize() == RECEIVE_LIMIT, f"request of {request.ByteSize()} bytes")
        code, message, response, _, _ = self.call(request)
        expect(code == grpc.StatusCode.OK, f"status {code} ({message!r})")
        expect(response.request_payload_size == len(request.payload),
               f"the server got {response.request_payload_size} bytes")
        expect(response.request_payload_hash == fnv1a64(request.payload),
               "the server got other bytes than were sent")

    def request_one_byte_over_the_receive_limit_is_refused(self):
        request = self.pb.CheckRequest(payload=pattern(payload_size_for(RECEIVE_LIMIT + 1)))
        expect(request.ByteSize() == RECEIVE_LIMIT + 1, f"request of {request.ByteSize()} bytes")
        code, message, _, _, _ = self.call(request)
        expect(code == grpc.StatusCode.RESOURCE_EXHAUSTED,
               f"status {code} ({message!r}), wanted RESOURCE_EXHAUSTED")

    def response_of_exactly_the_receive_limit_is_accepted(self):
        size = payload_size_for(RECEIVE_LIMIT)
        code, message, response, _, _ = self.call(
            self.pb.CheckRequest(response_payload_size=size))
        expect(code == grpc.StatusCode.OK, f"status {code} ({message!r})")
        expect(response.ByteSize() == RECEIVE_LIMIT, f"response of {response.ByteSize()} bytes")
        expect(response.payload == pattern(size), "the response payload differs from the pattern")

    def response_one_byte_over_the_receive_limit_is_refused(self):
        code, message, _, _, _ = self.call(self.pb.CheckRequest(
            response_payload_size=payload_size_for(RECEIVE_LIMIT + 1)))
        expect(code == grpc.StatusCode.RESOURCE_EXHAUSTED,
               f"status {code} ({message!r}), wanted RESOURCE_EXHAUSTED")


CHECKS = [
    "custom_metadata_travels_both_ways",
    "deadline_expires_while_the_handler_sleeps",
    "client_cancels_mid_call",
    "every_status_code_with_message_and_details",
    "message_sizes_both_ways",
    "request_of_exactly_the_receive_limit_is_accepted",
    "request_one_byte_over_the_receive_limit_is_refused",
    "response_of_exactly_the_receive_limit_is_accepted",
    "response_one_byte_over_the_receive_limit_is_refused",
]


def generate_modules(args, out_dir):
    # Each proto is compiled from its own folder so that the modules are top-level
    # (`status_pb2`) and do not collide with the installed `google` package.
    rpc_dir = os.path.join(args.proto_root, "google", "rpc")
    subprocess.run([args.protoc, f"-I{rpc_dir}", f"--python_out={out_dir}",
                    os.path.join(rpc_dir, "status.proto")], check=True)
    checks_dir = os.path.join(args.checks_proto_root, "interop_checks")
    subprocess.run([args.protoc, f"-I{checks_dir}", f"--python_out={out_dir}",
                    os.path.join(checks_dir, "unary_checks.proto")], check=True)
    sys.path.insert(0, out_dir)
    import status_pb2  # pylint: disable=import-outside-toplevel
    import unary_checks_pb2  # pylint: disable=import-outside-toplevel
    return unary_checks_pb2, status_pb2


def start_server(path, log):
    server = subprocess.Popen(
        [path, "--port=0", "--use_tls=false", "--test_only_unary_checks=true"],
        stdout=subprocess.PIPE, stderr=log, text=True)
    line = server.stdout.readline()
    if not line.startswith("listening on "):
        server.kill()
        raise RuntimeError(f"the server printed {line!r} instead of 'listening on <port>'")
    return server, int(line.split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True, help="rill_interop_server")
    parser.add_argument("--protoc", default="protoc")
    parser.add_argument("--proto_root", required=True, help="the repository's protos/")
    parser.add_argument("--checks_proto_root", required=True, help="tests/interop/protos")
    parser.add_argument("--check", action="append", choices=CHECKS,
                        help="run only this check (repeatable)")
    args = parser.parse_args()

    failed = 0
    with tempfile.TemporaryDirectory() as gen, tempfile.TemporaryFile("w+") as server_log:
        pb, status_pb = generate_modules(args, gen)
        server, port = start_server(args.server, server_log)
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                checks = Checks(channel, pb, status_pb)
                for name in args.check or CHECKS:
                    try:
                        getattr(checks, name)()
                        print(f"PASS {name}", flush=True)
                    except CheckFailure as e:
                        print(f"FAIL {name}: {e}", flush=True)
                        failed += 1
                for note in checks.notes:
                    print(f"NOTE {note}")
        finally:
            server.terminate()
            try:
                code = server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                code = server.wait()
            if code != 0:
                print(f"FAIL server_exit: rill_interop_server exited with {code}")
                failed += 1
            server_log.seek(0)
            text = server_log.read()
            if failed and text:
                print("server stderr:\n" + text, end="")
    print(f"grpcio unary checks: {len(args.check or CHECKS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
