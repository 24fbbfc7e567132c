#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/ (the files are committed; rerun after changing this).

wire_format_fuzzer: header values, valid and not (timeouts, grpc-message, base64, keys, paths,
content types).

http2_client_fuzzer: byte streams a gRPC server sends (responses, trailers-only, resets, GOAWAY).

inbound_queue_fuzzer: DATA payloads of gRPC messages (length-prefixed framing).

decompress_fuzzer: gzip, deflate and zstd messages, whole, tight against the limit, bombs.

payload_wire_fuzzer: serialized messages with the field a path names at each depth, once, twice,
absent, inside unknown groups, and truncated (see payload_wire_fuzzer.cc for the control bytes).

http2_server_fuzzer: byte streams a gRPC client sends (RFC 9113 frames, header blocks in HPACK
(RFC 7541) literal-without-indexing form, so no table state is needed), each prefixed with the
fuzzer's two control bytes (see http2_server_fuzzer.cc).
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# Frame types and flags (RFC 9113 §6).
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0x0, 0x1, 0x2, 0x3, 0x4, 0x6, 0x7, 0x8, 0x9)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20


def hpack_int(value, prefix_bits, first_byte_flags=0):
    """An HPACK integer (RFC 7541 §5.1) with an N-bit prefix."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first_byte_flags | value])
    out = bytearray([first_byte_flags | limit])
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_string(s):
    """A string literal without Huffman coding (RFC 7541 §5.2)."""
    data = s.encode() if isinstance(s, str) else s
    return hpack_int(len(data), 7) + data


def hpack_literal(name, value):
    """Literal Header Field without Indexing, new name (RFC 7541 §6.2.2)."""
    return b"\x00" + hpack_string(name) + hpack_string(value)


def header_block(fields):
    return b"".join(hpack_literal(n, v) for n, v in fields)


def frame(ftype, flags, stream_id, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(
        ">I", stream_id & 0x7FFFFFFF) + payload


def settings(*pairs, ack=False):
    return frame(SETTINGS, ACK if ack else 0, 0,
                 b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def grpc_message(payload):
    return b"\x00" + struct.pack(">I", len(payload)) + payload


def request_fields(path="/grpc.testing.TestService/UnaryCall", extra=()):
    return [(":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", "localhost:50051"), ("te", "trailers"), ("grpc-timeout", "1S"),
            ("content-type", "application/grpc"), ("user-agent", "grpc-c++/1.51.1"),
            *extra]


def headers(stream_id, fields, end_stream=False):
    flags = END_HEADERS | (END_STREAM if end_stream else 0)
    return frame(HEADERS, flags, stream_id, header_block(fields))


def data(stream_id, payload, end_stream=False):
    return frame(DATA, END_STREAM if end_stream else 0, stream_id, payload)


def client_start():
    # SETTINGS as grpc clients send them, then the ACK of the server's SETTINGS.
    return PREFACE + settings((0x2, 0), (0x4, 4194304), (0x6, 8192)) + settings(ack=True)


def http2_seeds():
    seeds = {}
    hello = grpc_message(b"\x0a\x05hello")

    seeds["unary"] = client_start() + headers(1, request_fields()) + data(1, hello, True)

    big = grpc_message(bytes(range(256)) * 12)  # 3077 bytes: handed up as views, not copies
    seeds["two_streams_large_message"] = (
        client_start() + headers(1, request_fields("/grpc.testing.TestService/StreamingCall"))
        + headers(3, request_fields()) + data(1, big[:2000]) + data(3, hello, True)
        + data(1, big[2000:]) + data(1, hello) + data(1, b"", True))

    seeds["headers_only_ping_window_update"] = (
        client_start() + headers(1, request_fields(), end_stream=True)
        + frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1 << 20))
        + frame(PING, 0, 0, b"\x01\x02\x03\x04\x05\x06\x07\x08"))

    block = header_block(request_fields(extra=[("trace-proto-bin", "AAECAwQFBgcICQ"),
                                               ("x-user-id", "12345")]))
    seeds["continuation_and_request_trailers"] = (
        client_start() + frame(HEADERS, 0, 1, block[:40]) + frame(CONTINUATION, 0, 1, block[40:90])
        + frame(CONTINUATION, END_HEADERS, 1, block[90:]) + data(1, hello)
        + headers(1, [("grpc-status", "0")], end_stream=True))

    seeds["client_cancel_and_goaway"] = (
        client_start() + headers(1, request_fields()) + data(1, hello[:3])
        + frame(RST_STREAM, 0, 1, struct.pack(">I", 0x8)) + headers(3, request_fields())
        + data(3, hello, True) + frame(GOAWAY, 0, 0, struct.pack(">II", 3, 0) + b"done"))

    # More streams than the fuzzer's MAX_CONCURRENT_STREAMS of 16: before the client has
    # acknowledged the server's SETTINGS the extra streams are refused (RST_STREAM), after that
    # they are a connection error (GOAWAY).
    many = b""
    for i in range(20):
        many += headers(1 + 2 * i, request_fields())
    for i in range(20):
        many += data(1 + 2 * i, hello, True)
    seeds["too_many_streams"] = PREFACE + settings((0x2, 0)) + many
    seeds["too_many_streams_after_ack"] = client_start() + many

    padded = bytes([4]) + hello + b"\x00" * 4
    priority = struct.pack(">IB", 0, 15)
    seeds["padding_and_priority"] = (
        client_start()
        + frame(HEADERS, END_HEADERS | PRIORITY_FLAG, 1, priority + header_block(request_fields()))
        + frame(PRIORITY, 0, 1, struct.pack(">IB", 0, 200))
        + frame(DATA, PADDED | END_STREAM, 1, padded))

    seeds["bad_requests"] = (
        client_start()
        + headers(1, request_fields(extra=[("grpc-timeout", "123456789S")]), end_stream=True)
        + headers(3, [(":method", "GET"), (":scheme", "http"), (":path", "/"),
                      (":authority", "x")], end_stream=True)
        + headers(5, request_fields(path="not-a-path"))
        + data(5, b"\x01\x00\x00\x00\x10abc", True)
        + headers(7, request_fields(extra=[("Upper-Case", "x")]), end_stream=True))

    out = {}
    for name, stream in seeds.items():
        # Control bytes: whole input as one read, answer policy 0, payload consumed at once.
        out[name] = b"\x00\x00" + stream
        # The same bytes without the preface (the fuzzer adds it), cut into 9-byte reads,
        # answer policy 3, payload held until the end of each request, PING and shutdown notice.
        out[name + "_chunked"] = bytes([0x01 | (2 << 1) | (3 << 4), 0x07]) + stream[len(PREFACE):]
        # Variable cuts, answer policy 1, GOAWAY halfway through.
        out[name + "_goaway"] = bytes([7 << 1 | (1 << 4), 0x08 | (5 << 4)]) + stream
    return out


def wire_format_seeds():
    values = {
        "timeout_second": "1S", "timeout_milli": "100m", "timeout_max_hours": "99999999H",
        "timeout_zero": "0n", "timeout_micro": "5u", "timeout_minute": "30M",
        "timeout_nine_digits": "123456789S", "timeout_bad_unit": "1x",
        "timeout_negative": "-1S", "timeout_space": " 1S",
        "message_plain": "hello", "message_utf8": "caf%C3%A9 100%25", "message_lone_percent": "%",
        "message_short_escape": "%4", "message_bad_escape": "%ZZ", "message_newline": "line%0Abreak",
        "base64_unpadded": "Zm9vYmFy", "base64_padded": "Zm9vYg==", "base64_unpadded_2": "Zm9vYg",
        "base64_bad_char": "Zm9v!mFy", "base64_one_char": "Z", "base64_bin_value": "AAECAwQFBgcICQ",
        "key_reserved": "grpc-status", "key_custom": "x-user-id", "key_binary": "trace-proto-bin",
        "key_uppercase": "Upper-Case", "value_spaces": "value with spaces",
        "path_good": "/grpc.testing.TestService/UnaryCall", "path_no_method": "/a.B/",
        "path_no_service": "//C", "path_three_parts": "/a/b/c",
        "content_type_grpc": "application/grpc", "content_type_proto": "application/grpc+proto",
        "content_type_params": "application/grpc;charset=utf-8",
        "content_type_grpcx": "application/grpcx", "content_type_json": "application/json",
    }
    return {name: v.encode() for name, v in values.items()}


def http2_client_seeds():
    """Byte streams a gRPC server sends to a client with streams 1, 3, 5... open, each prefixed
    with the client fuzzer's two control bytes (see http2_client_fuzzer.cc)."""
    server_start = settings((0x3, 100), (0x4, 65535)) + settings(ack=True)
    ok_headers = [(":status", "200"), ("content-type", "application/grpc")]
    def trailers(status, message=None):
        fields = [("grpc-status", str(status))]
        if message:
            fields.append(("grpc-message", message))
        return fields
    def response(stream_id, payload=b"\x08\x01", status=0):
        return (headers(stream_id, ok_headers) + data(stream_id, grpc_message(payload))
                + headers(stream_id, trailers(status), end_stream=True))
    seeds = {
        "unary_ok": server_start + response(1),
        "three_responses": server_start + response(1) + response(3, b"x" * 3000) + response(5, status=5),
        "trailers_only": server_start + headers(1, ok_headers + trailers(12, "unknown%20method"),
                                                end_stream=True),
        "reset_and_goaway": server_start + frame(RST_STREAM, 0, 1, struct.pack(">I", 7))
        + frame(GOAWAY, 0, 0, struct.pack(">II", 1, 0) + b"bye") + response(1),
        "ping_window_update": server_start + frame(PING, 0, 0, b"12345678")
        + frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1 << 20))
        + frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 4096)) + response(1),
        "http_error": server_start + headers(1, [(":status", "503"), ("content-type", "text/plain")])
        + data(1, b"unavailable", end_stream=True),
        "shutdown_notice": server_start + frame(GOAWAY, 0, 0, struct.pack(">II", 0x7fffffff, 0))
        + frame(PING, 0, 0, b"shutdown") + response(1)
        + frame(GOAWAY, 0, 0, struct.pack(">II", 1, 0)),
    }
    out = {}
    for name, stream in seeds.items():
        # Three requests, whole input, bodies finished at once.
        out[name] = bytes([0x02, 0x10]) + stream
        # One request, 9-byte reads, cancel the first stream, bodies finished after block one,
        # one more request halfway.
        out[name + "_chunked"] = bytes([0x00 | (2 << 3) | 0x40 | 0x80, 0x03]) + stream
    return out


def inbound_queue_seeds():
    """DATA payloads as clients send them, with the fuzzer's two control bytes (see
    inbound_queue_fuzzer.cc): limit 2^22-1, and 2^10-1 for the oversized case."""
    big = 22
    def framed(*messages, compressed=False):
        return b"".join((b"\x01" if compressed else b"\x00") + struct.pack(">I", len(m)) + m
                        for m in messages)
    return {
        "one_message": bytes([big, 1]) + framed(b"\x08\x96\x01"),
        "empty_message": bytes([big | 0x20, 2]) + framed(b""),
        "several": bytes([big, 3]) + framed(b"a" * 10, b"", b"b" * 300, b"c"),
        "compressed_flag": bytes([big, 4]) + framed(b"xyz", compressed=True),
        "partial_at_end": bytes([big, 5]) + framed(b"done") + b"\x00\x00\x00\x10ab",
        "bad_flag": bytes([big, 6]) + framed(b"ok") + b"\x02\x00\x00\x00\x01z",
        "too_large": bytes([10, 7]) + framed(b"x" * 1000) + framed(b"y" * 2000),
        "large_body": bytes([big | 0x20, 8]) + framed(bytes(range(256)) * 64),
    }


def decompress_seeds():
    """Compressed messages as peers send them, with the fuzzer's three control bytes (see
    decompress_fuzzer.cc). zstd seeds come from the zstd command-line tool."""
    import subprocess
    import zlib
    text = b"gRPC message payload " * 40
    binary = bytes(range(256)) * 4
    def gzip(data):
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    def zstd(data):
        return subprocess.run(["zstd", "-q", "-c", "-3"], input=data, check=True,
                              stdout=subprocess.PIPE).stdout
    seeds = {}
    for codec, (index, compress) in {"gzip": (0, gzip), "deflate": (1, zlib.compress),
                                     "zstd": (2, zstd)}.items():
        for name, data in {"text": text, "binary": binary, "empty": b""}.items():
            blob = compress(data)
            seeds[f"{codec}_{name}"] = bytes([index | (5 << 2)]) + struct.pack(">H", 0xffff) + blob
            seeds[f"{codec}_{name}_tight"] = bytes([index | (9 << 2)]) + struct.pack(
                ">H", max(len(data) - 1, 0)) + blob
    # A bomb: 60 KiB of zeros compressed to a few dozen bytes, against a 1 KiB limit.
    seeds["gzip_bomb"] = bytes([0]) + struct.pack(">H", 1024) + gzip(bytes(60000))
    seeds["gzip_two_members"] = bytes([0]) + struct.pack(">H", 0xffff) + gzip(b"one") + gzip(b"two")
    seeds["gzip_truncated"] = bytes([0]) + struct.pack(">H", 0xffff) + gzip(text)[:-9]
    return seeds


def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def ld(number, payload):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def payload_wire_seeds():
    # Control bytes: depth selector, three field numbers (stored as number - 1), the split point.
    def seed(depth, numbers, message, cut=7):
        return bytes([depth - 1] + [n - 1 for n in numbers] + [cut]) + message

    body = bytes(range(200))
    # SimpleRequest { response_size: 9, payload { type: 0, body } , fill_username: true }
    request = b"\x10\x09" + ld(3, b"\x08\x00" + ld(2, body)) + b"\x20\x01"
    group = bytes([20 << 3 | 3]) + b"\x08\x01" + ld(3, ld(2, b"hidden")) + bytes([20 << 3 | 4])
    seeds = {
        "nested": seed(2, (3, 2, 1), request),
        "nested_twice": seed(2, (3, 2, 1), request + request[:-2] + ld(3, ld(2, b"second"))),
        "nested_absent": seed(2, (3, 2, 1), b"\x10\x09\x20\x01"),
        "top_level": seed(1, (2, 1, 1), b"\x08\x01" + ld(2, body) + b"\x0d" + b"abcd"),
        "depth_three": seed(3, (7, 1, 2), ld(7, ld(1, ld(2, body)) + b"\x10\x05")),
        "inside_group": seed(2, (3, 2, 1), group + request),
        "truncated": seed(2, (3, 2, 1), request[:60]),
        "empty_body": seed(2, (3, 2, 1), ld(3, ld(2, b""))),
        "fixed_fields": seed(2, (3, 2, 1), b"\x09" + bytes(8) + b"\x15" + bytes(4) + request),
    }
    return seeds


def write(corpus, seeds):
    directory = os.path.join(HERE, "corpus", corpus)
    os.makedirs(directory, exist_ok=True)
    for name, content in seeds.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(content)


def main():
    write("wire_format_fuzzer", wire_format_seeds())
    write("http2_server_fuzzer", http2_seeds())
    write("http2_client_fuzzer", http2_client_seeds())
    write("inbound_queue_fuzzer", inbound_queue_seeds())
    write("decompress_fuzzer", decompress_seeds())
    write("payload_wire_fuzzer", payload_wire_seeds())


if __name__ == "__main__":
    main()
