#!/usr/bin/env bash
# A BenchmarkService peer server (peer_cpp_bench_server, peer_go_bench_server) answers as the
# benchmark scripts rely on: a UnaryCall's response carries response_size bytes with status 0
# (checked with nghttp against protoc's encoding), rill's benchmain completes unary and streaming
# ping-pong runs against it, and copies less than a tenth of each 1 MiB message it receives.
#
#   bench_server_test.sh SERVER BENCHMAIN
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
server=$1
benchmain=$2
grpc_proto=${RILL_GRPC_PROTO_ROOT:-/usr/share/grpc-proto}
source "$here/pair_common.sh"
source "$here/../../bench/lib/grpc_load.sh"  # grpc_encode, text_zeros

fail() { echo "FAIL: $*"; exit 1; }
command -v nghttp > /dev/null || fail "nghttp is missing (nghttp2-client; ./dev.sh setup)"

start_server "$server" --port=0 --threads=1

# A UnaryCall asking for 8192 response bytes: the message prefix and SimpleRequest as the
# side-by-side script's h2load sends them.
printf 'response_size: 8192\npayload { body: "abc" }\n' |
  grpc_encode SimpleRequest > "$work/request.bin"
nghttp -v -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request.bin" \
  "http://127.0.0.1:$port/grpc.testing.BenchmarkService/UnaryCall" > "$work/nghttp.log" 2>&1 ||
  { cat "$work/nghttp.log"; fail "nghttp failed"; }
grep -aq 'grpc-status: 0' "$work/nghttp.log" || { cat "$work/nghttp.log"; fail "no grpc-status 0"; }
nghttp -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request.bin" \
  "http://127.0.0.1:$port/grpc.testing.BenchmarkService/UnaryCall" > "$work/response.bin"
# The response must be one uncompressed message: SimpleResponse{payload{body: 8192 zero bytes}},
# byte for byte as protoc encodes it.
{ printf 'payload { body: "'; text_zeros 8192; printf '" }\n'; } |
  grpc_encode SimpleResponse > "$work/expected.bin"
cmp -s "$work/response.bin" "$work/expected.bin" ||
  fail "the response is not one message of 8192 zero bytes ($(stat -c %s "$work/response.bin") B)"

for workload in unary streaming; do
  "$benchmain" -server="127.0.0.1:$port" -workloads=$workload -benchtime=300ms \
    -maxConcurrentCalls=4 -reqSizeBytes=1024 -respSizeBytes=1024 -latency=0s -kbps=0 -cpus=none \
    > "$work/benchmain.log" 2>&1 || { cat "$work/benchmain.log"; fail "benchmain $workload failed"; }
  requests=$(awk '/^Number of requests:/ { print $4 }' "$work/benchmain.log")
  [[ ${requests:-0} -gt 0 ]] || { cat "$work/benchmain.log"; fail "benchmain $workload: no requests"; }
  echo "$workload: $requests requests"
done
# 1 MiB each way on one stream, bodies as payloads: rill's client copies (rill's own count of
# the bytes it copies) stay under a tenth of a payload per message, whatever frame sizes the
# server writes in (grpc-go: 16 KiB a write).
"$benchmain" -server="127.0.0.1:$port" -workloads=streaming -benchtime=300ms \
  -maxConcurrentCalls=1 -reqSizeBytes=1048576 -respSizeBytes=1048576 -latency=0s -kbps=0 \
  -cpus=none > "$work/benchmain.log" 2>&1 || { cat "$work/benchmain.log"; fail "benchmain 1 MiB failed"; }
copied=$(sed -n 's/^rill_extras .*copied_bytes_per_op=\([0-9.]*\).*/\1/p' "$work/benchmain.log" | head -1)
[[ -n $copied ]] || { cat "$work/benchmain.log"; fail "no copied_bytes_per_op in benchmain's output"; }
echo "1 MiB ping-pong: the client copied $copied bytes per message"
awk -v c="$copied" 'BEGIN { exit !(c < 104858) }' ||
  fail "rill's client copied $copied bytes per 1 MiB message (more than a tenth of it)"
echo PASS
