# Shared by the benchmark scripts that drive BenchmarkService servers with h2load
# (bench/side_by_side/run.sh, bench/latency/run.sh and scaling.sh, bench/allocators.sh; sourced,
# not run). Uses $grpc_proto (the standard gRPC protos, Debian's grpc-proto) and, for the
# servers, $server_pid and $server_port.

# A gRPC message: the 5-byte prefix (uncompressed, big-endian length) and the serialized message
# of type grpc.testing.$1 with the text-format fields read from stdin.
grpc_encode() {
  protoc --encode="grpc.testing.$1" -I "$grpc_proto" "$grpc_proto/grpc/testing/messages.proto" |
    python3 -c 'import sys, struct; m = sys.stdin.buffer.read(); sys.stdout.buffer.write(b"\0" + struct.pack(">I", len(m)) + m)'
}

# N zero bytes in protobuf text format.
text_zeros() { python3 -c "import sys; sys.stdout.write('\\\\000' * $1)"; }

# write_request SIZE FILE: a UnaryCall request with SIZE payload bytes asking for SIZE back.
write_request() {
  { printf 'response_size: %d\npayload { body: "' "$1"; text_zeros "$1"; printf '" }\n'; } |
    grpc_encode SimpleRequest > "$2"
}

# await_listening LOG NAME [TENTHS]: waits (default 10 s) for the server $server_pid to print
# `listening on <port>` to LOG and sets server_port. Returns 1, with the log on stderr, when the
# server exits or never says it.
await_listening() {
  local log=$1 name=$2 tenths=${3:-100}
  for _ in $(seq 1 "$tenths"); do
    if grep -q '^listening on ' "$log" 2> /dev/null; then
      server_port=$(sed -n 's/^listening on //p' "$log")
      return 0
    fi
    kill -0 "$server_pid" 2> /dev/null || break
    sleep 0.1
  done
  echo "server $name did not start:" >&2
  cat "$log" >&2
  return 1
}

stop_server() {
  kill "$server_pid" 2> /dev/null || true
  wait "$server_pid" 2> /dev/null || true
  server_pid=""
}
