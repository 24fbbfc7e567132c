#!/usr/bin/python3
"""Checks gRPC binary logs written by rill against the binary logging spec.

    binlog_check.py --proto_dir DIR case LOG CASE MESSAGE_LIMIT HEADER_LIMIT
    binlog_check.py --proto_dir DIR server LOG MESSAGE_LIMIT HEADER_LIMIT MIN_CALLS
    binlog_check.py --proto_dir DIR methods LOG METHOD...

DIR holds grpc/binlog/v1/binarylog_pb2.py, generated from grpc-proto's binarylog.proto by
protoc --python_out. A log is a sequence of GrpcLogEntry messages, each preceded by its length
as a varint. Limits are byte counts, or "max".

  case     LOG is the client's log of one interop test case: its calls' entries must be the
           sequence the spec prescribes for that case, with truncation marked right.
  server   LOG is a server's log of at least MIN_CALLS calls: each call's entries must follow
           the spec's rules (order, peer, truncation).
  methods  LOG must hold calls of exactly the METHODs named (full names, "/svc/Method").
"""
import argparse
import importlib.util
import os
import re
import sys

from google.protobuf.internal.decoder import _DecodeVarint32

parser = argparse.ArgumentParser()
parser.add_argument("--proto_dir", required=True)
parser.add_argument("mode", choices=["case", "server", "methods"])
parser.add_argument("log")
parser.add_argument("rest", nargs="*")
args = parser.parse_args()
# Loaded by path: grpcio's `grpc` package would shadow a `grpc` folder on sys.path.
_spec = importlib.util.spec_from_file_location(
    "binarylog_pb2", os.path.join(args.proto_dir, "grpc/binlog/v1/binarylog_pb2.py"))
binarylog_pb2 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(binarylog_pb2)

Entry = binarylog_pb2.GrpcLogEntry
LETTER = {
    Entry.EVENT_TYPE_CLIENT_HEADER: "H",
    Entry.EVENT_TYPE_SERVER_HEADER: "h",
    Entry.EVENT_TYPE_CLIENT_MESSAGE: "M",
    Entry.EVENT_TYPE_SERVER_MESSAGE: "m",
    Entry.EVENT_TYPE_CLIENT_HALF_CLOSE: "C",
    Entry.EVENT_TYPE_SERVER_TRAILER: "T",
    Entry.EVENT_TYPE_CANCEL: "X",
}
failures = []


def fail(message):
    failures.append(message)


def read_log(path):
    data = open(path, "rb").read()
    pos = 0
    entries = []
    while pos < len(data):
        size, pos = _DecodeVarint32(data, pos)
        if pos + size > len(data):
            fail(f"{path}: the last entry is cut")
            break
        entry = Entry()
        entry.ParseFromString(data[pos:pos + size])
        entries.append(entry)
        pos += size
    return entries


def calls_of(entries):
    """Entries grouped by call, in the order calls first appear, each sorted by sequence."""
    calls = {}
    for entry in entries:
        calls.setdefault(entry.call_id, []).append(entry)
    return [sorted(c, key=lambda e: e.sequence_id_within_call) for c in calls.values()]


def limit(text):
    return None if text == "max" else int(text)


def method_of(call):
    for entry in call:
        if entry.type == Entry.EVENT_TYPE_CLIENT_HEADER:
            return entry.client_header.method_name
    return None


def check_call(call, message_limit, header_limit, where):
    """The spec's rules for one call's entries."""
    letters = "".join(LETTER.get(e.type, "?") for e in call)
    where = f"{where} call {call[0].call_id} ({method_of(call)}, {letters})"
    sequence = [e.sequence_id_within_call for e in call]
    if sequence != list(range(1, len(call) + 1)):
        fail(f"{where}: sequence ids {sequence}")
    if len({e.logger for e in call}) != 1:
        fail(f"{where}: more than one logger")
    logger = call[0].logger
    if not re.fullmatch(r"H?(M|h|m|C)*(T|X)", letters):
        fail(f"{where}: entries out of the spec's order")
    if letters.count("C") > 1 or "C" in letters and "M" in letters[letters.index("C"):]:
        fail(f"{where}: a client message after the half-close")
    if letters.count("h") > 1 or ("h" in letters and "m" in letters[:letters.index("h")]):
        fail(f"{where}: server messages before the server's headers")
    timestamps = [e.timestamp.ToNanoseconds() for e in call]
    if timestamps != sorted(timestamps):
        fail(f"{where}: timestamps go back")
    for entry in call:
        if entry.type == Entry.EVENT_TYPE_CLIENT_HEADER:
            header = entry.client_header
            if not header.method_name.startswith("/") or header.method_name.count("/") != 2:
                fail(f"{where}: method_name {header.method_name!r}")
            if not header.authority:
                fail(f"{where}: no authority")
            if logger == Entry.LOGGER_SERVER and (entry.peer.type != binarylog_pb2.Address.TYPE_IPV4
                                                  or entry.peer.ip_port == 0):
                fail(f"{where}: the server's CLIENT_HEADER lacks the peer")
        if entry.type in (Entry.EVENT_TYPE_CLIENT_MESSAGE, Entry.EVENT_TYPE_SERVER_MESSAGE):
            message = entry.message
            expected = message.length if message_limit is None else min(message.length,
                                                                          message_limit)
            if len(message.data) != expected:
                fail(f"{where}: message of {message.length} bytes logs {len(message.data)}")
            if entry.payload_truncated != (len(message.data) < message.length):
                fail(f"{where}: message truncation flag {entry.payload_truncated}")
        metadata = None
        if entry.type == Entry.EVENT_TYPE_CLIENT_HEADER:
            metadata = entry.client_header.metadata
        elif entry.type == Entry.EVENT_TYPE_SERVER_HEADER:
            metadata = entry.server_header.metadata
        elif entry.type == Entry.EVENT_TYPE_SERVER_TRAILER:
            metadata = entry.trailer.metadata
        if metadata is not None:
            size = sum(len(m.key) + len(m.value) for m in metadata.entry
                       if m.key != "grpc-trace-bin")
            if header_limit is not None and size > header_limit:
                fail(f"{where}: {size} bytes of metadata over the limit {header_limit}")
            for m in metadata.entry:
                if m.key.startswith("grpc-") and m.key != "grpc-trace-bin" or m.key in (
                        "user-agent", "te", "content-type"):
                    fail(f"{where}: reserved header {m.key} logged")
    if logger == Entry.LOGGER_CLIENT and letters[-1] == "T":
        with_peer = [e for e in call if e.HasField("peer")]
        holder = "h" if "h" in letters else "T"
        if [LETTER[e.type] for e in with_peer] != [holder]:
            fail(f"{where}: the client logs the peer with {[LETTER[e.type] for e in with_peer]}")
    return letters


# What the client logs for each interop case: a regular expression per call, in order.
# H client header, h server header, M/m client/server message, C half-close, T trailer,
# X cancel.
CASES = {
    "empty_unary": [r"HMChmT"],
    "large_unary": [r"HMChmT"],
    "client_compressed_unary": [r"HMCT", r"HMChmT", r"HMChmT"],  # a probe, then two calls
    "client_streaming": [r"HMMMMChmT"],
    "server_streaming": [r"HMChmmmmT"],
    "ping_pong": [r"HMhmMmMmMmCT"],
    "empty_stream": [r"HChT|HCT"],
    "custom_metadata": [r"HMChmT", r"HMhmCT"],
    "status_code_and_message": [r"HMCT", r"HMC?T"],
    "cancel_after_begin": [r"H?X"],
    "cancel_after_first_response": [r"HMhmX"],
    # The deadline (1 ms) may pass before the call reaches the wire: then only the cancel.
    "timeout_on_sleeping_server": [r"(HM?C?)?(X|T)"],
}

if args.mode == "case":
    case, message_limit, header_limit = args.rest[0], limit(args.rest[1]), limit(args.rest[2])
    calls = calls_of(read_log(args.log))
    got = [check_call(c, message_limit, header_limit, case) for c in calls]
    expected = CASES[case]
    if len(got) != len(expected) or not all(re.fullmatch(p, g) for p, g in zip(expected, got)):
        fail(f"{case}: client logged {got}, expected {expected}")
    if any(c[0].logger != Entry.LOGGER_CLIENT for c in calls):
        fail(f"{case}: entries not from the client logger")
    if case == "custom_metadata" and header_limit is None:
        unary = calls[0]
        keys = {e.type: [m.key for m in
                         (e.client_header.metadata if e.type == Entry.EVENT_TYPE_CLIENT_HEADER
                          else e.server_header.metadata if e.type == Entry.EVENT_TYPE_SERVER_HEADER
                          else e.trailer.metadata).entry]
                for e in unary if e.type in (Entry.EVENT_TYPE_CLIENT_HEADER,
                                             Entry.EVENT_TYPE_SERVER_HEADER,
                                             Entry.EVENT_TYPE_SERVER_TRAILER)}
        if keys.get(Entry.EVENT_TYPE_SERVER_HEADER) != ["x-grpc-test-echo-initial"] or \
                keys.get(Entry.EVENT_TYPE_SERVER_TRAILER) != ["x-grpc-test-echo-trailing-bin"]:
            fail(f"custom_metadata: echoed metadata logged as {keys}")
    if case == "custom_metadata" and header_limit is not None:
        # The first header does not fit: it and everything after it go, and the entry says so.
        header = calls[0][0]
        if header.client_header.metadata.entry or not header.payload_truncated:
            fail(f"custom_metadata: header truncation to {header_limit} bytes: "
                 f"{list(header.client_header.metadata.entry)} "
                 f"truncated={header.payload_truncated}")
    if case == "status_code_and_message":
        trailer = calls[0][-1].trailer
        if trailer.status_code != 2 or trailer.status_message != "test status message":
            fail(f"status_code_and_message: trailer {trailer}")
    if case == "large_unary" and message_limit is not None:
        message = calls[0][1]
        if message.message.length < 271828 or not message.payload_truncated:
            fail(f"large_unary: request logged with length {message.message.length}, "
                 f"truncated={message.payload_truncated}")
elif args.mode == "server":
    message_limit, header_limit = limit(args.rest[0]), limit(args.rest[1])
    calls = calls_of(read_log(args.log))
    if len(calls) < int(args.rest[2]):
        fail(f"server: only {len(calls)} calls logged")
    for call in calls:
        if call[0].logger != Entry.LOGGER_SERVER:
            fail("server: entries not from the server logger")
        check_call(call, message_limit, header_limit, "server")
else:
    calls = calls_of(read_log(args.log))
    logged = sorted({method_of(c) for c in calls})
    if logged != sorted(set(args.rest)):
        fail(f"methods: logged {logged}, expected {sorted(set(args.rest))}")

for failure in failures:
    print("FAIL:", failure)
if failures:
    sys.exit(1)
print(f"OK: {args.mode} {' '.join(args.rest)}")
