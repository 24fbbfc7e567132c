#!/usr/bin/env bash
# Binary logs of interop test cases, read back with protobuf's Python runtime and grpc-proto's
# own binarylog.proto: the entries the spec prescribes, in order, truncation marked right, and
# filters that select exactly the methods they name.
#
#   run_binlog.sh SERVER CLIENT RILL_BINLOG PROTO_ROOT
#
# SERVER and CLIENT are rill_interop_server and rill_interop_client (both take --binary_log and
# --binary_log_filter); RILL_BINLOG is the reader tool; PROTO_ROOT holds grpc/binlog/v1.
# Needs /usr/bin/python3 with python3-protobuf and protoc: a missing one fails the test.
set -euo pipefail
server=$1 client=$2 reader=$3 proto_root=$4
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

protoc -I "$proto_root" --python_out="$tmp" grpc/binlog/v1/binarylog.proto
check() { /usr/bin/python3 "$here/binlog_check.py" --proto_dir "$tmp" "$@"; }

start_server() {  # LOG FILTER
  # Emptied here, not by the background job's redirection: that runs only once the job does,
  # and the loop below could read the previous server's port first.
  : >"$tmp/server.out"
  "$server" --port=0 --binary_log="$1" --binary_log_filter="$2" >"$tmp/server.out" 2>"$tmp/server.err" &
  server_pid=$!
  for _ in $(seq 1 100); do
    port=$(sed -n 's/^listening on \([0-9]*\)$/\1/p' "$tmp/server.out")
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  echo "the server did not start"; cat "$tmp/server.err"; exit 1
}
stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid"
  server_pid=""
}
run_client() {  # LOG FILTER CASES
  "$client" --server_host=127.0.0.1 --server_port="$port" --use_tls=false \
    --binary_log="$1" --binary_log_filter="$2" --test_case="$3" >"$tmp/client.out" 2>&1 || {
    cat "$tmp/client.out"; exit 1; }
}

cases="empty_unary large_unary client_compressed_unary client_streaming server_streaming \
ping_pong empty_stream custom_metadata status_code_and_message cancel_after_begin \
cancel_after_first_response timeout_on_sleeping_server"

# 1. Everything in full on both sides.
start_server "$tmp/server.binlog" '*'
for c in $cases; do
  run_client "$tmp/$c.binlog" '*' "$c"
  check case "$tmp/$c.binlog" "$c" max max
done
# 2. Limits: 64 bytes of each message, 40 bytes of metadata.
for c in large_unary custom_metadata ping_pong; do
  run_client "$tmp/$c.short.binlog" '*{h:40;m:64}' "$c"
  check case "$tmp/$c.short.binlog" "$c" 64 40
done
stop_server
check server "$tmp/server.binlog" max max 10

# 3. Filters select exactly what they name.
svc=grpc.testing.TestService
start_server "$tmp/server.filtered.binlog" "$svc/EmptyCall,$svc/StreamingOutputCall{h}"
run_client "$tmp/f1.binlog" "$svc/*,-$svc/UnaryCall" "empty_unary,large_unary,server_streaming"
check methods "$tmp/f1.binlog" "/$svc/EmptyCall" "/$svc/StreamingOutputCall"
run_client "$tmp/f2.binlog" "$svc/UnaryCall{m:10}" "empty_unary,large_unary,server_streaming"
check methods "$tmp/f2.binlog" "/$svc/UnaryCall"
check case "$tmp/f2.binlog" large_unary 10 max
run_client "$tmp/f3.binlog" "-$svc/EmptyCall" "empty_unary,large_unary"  # exclusions only: nothing
check methods "$tmp/f3.binlog"
stop_server
check methods "$tmp/server.filtered.binlog" "/$svc/EmptyCall" "/$svc/StreamingOutputCall"
# {h}: headers in full, no message bytes.
check server "$tmp/server.filtered.binlog" 0 max 2

# 4. The reader prints a log as text.
"$reader" "$tmp/ping_pong.binlog" >"$tmp/ping_pong.txt"
grep -q 'EVENT_TYPE_CLIENT_HEADER' "$tmp/ping_pong.txt"
grep -q 'method_name: "/grpc.testing.TestService/FullDuplexCall"' "$tmp/ping_pong.txt"
[ "$(grep -c '^# entry' "$tmp/ping_pong.txt")" = 12 ]
echo "binary log checks passed"
