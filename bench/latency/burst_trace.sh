#!/usr/bin/env bash
# Where a slow burst's time went: one fixed-rate run of bench/latency/run.sh's kind (a server on
# the first CPU, h2load on the second, 50 connections x 20 streams, --rps per connection) with
# the kernel scheduler traced on both CPUs (`perf sched record`). For each of h2load's 10 ms
# bursts, bench/latency/burst_trace.py adds up how long the server ran while the burst drained,
# what else ran on the two CPUs, and how long the server and h2load waited to run once woken;
# it prints that for the median burst and for every burst that took over twice as long.
#
#   bench/latency/burst_trace.sh BUILD_DIR [--server rill|grpcpp] [--size BYTES]
#                                [--rps PER_CONNECTION] [--duration SECONDS]
#
# Defaults: rill, 1-byte payloads, --rps 1020 (51,000 requests/s in all, about half of what
# libgrpc++'s server can do on one core), 1 + 8 s (the first second is skipped). Needs perf
# (linux-perf), h2load, taskset, protoc and python3; BUILD_DIR is a release tree
# (side_by_side_deps is built first). Run it on a quiet machine: it traces everything on the
# two CPUs, and says so when something else ran.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$repo/bench/lib/grpc_load.sh"
grpc_proto=${RILL_GRPC_PROTO_ROOT:-/usr/share/grpc-proto}

usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
build=$(cd "$1" && pwd)
shift
server=rill
size=1
rps=1020
duration=8
while [[ $# -gt 0 ]]; do
  case $1 in
    --server) server=$2; shift ;;
    --size) size=$2; shift ;;
    --rps) rps=$2; shift ;;
    --duration) duration=$2; shift ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done
for tool in perf h2load taskset protoc python3; do
  command -v "$tool" > /dev/null || { echo "missing $tool (./dev.sh setup installs it)" >&2; exit 1; }
done
cmake --build "$build" --target side_by_side_deps >&2

read -r server_cpu load_cpu < <(first_two_cpus)
work=$(mktemp -d /tmp/rill-burst-trace.XXXXXX)
server_pid=""
perf_pid=""
cleanup() {
  [[ -z $perf_pid ]] || kill -INT "$perf_pid" 2> /dev/null || true
  [[ -z $server_pid ]] || kill "$server_pid" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
write_request "$size" "$work/request.bin"

case $server in
  rill)
    taskset -c "$server_cpu" "$build/bench/benchmain/rill_bench_server" --port=0 --reactors=1 \
      --cpus="$server_cpu" > "$work/server.log" 2>&1 & ;;
  grpcpp)
    taskset -c "$server_cpu" "$build/tests/peers/peer_cpp_bench_server" --port=0 --threads=1 \
      > "$work/server.log" 2>&1 & ;;
  *) echo "unknown server $server" >&2; usage ;;
esac
server_pid=$!
await_listening "$work/server.log" "$server"

# Both clocks read together: h2load logs CLOCK_REALTIME, the trace uses CLOCK_MONOTONIC.
offset=$(python3 -c 'import time; print(time.clock_gettime(time.CLOCK_REALTIME) - time.clock_gettime(time.CLOCK_MONOTONIC))')
perf sched record -k mono -C "$server_cpu,$load_cpu" -o "$work/sched.data" \
  -- sleep "$((duration + 3))" > "$work/perf.log" 2>&1 &
perf_pid=$!
sleep 0.5
taskset -c "$load_cpu" h2load -t 1 -c 50 -m 20 --rps="$rps" -D "$((duration + 1))s" \
  -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request.bin" \
  --log-file="$work/h2load.log" \
  "http://127.0.0.1:$server_port/grpc.testing.BenchmarkService/UnaryCall" > "$work/h2load.out" 2>&1 &
load_pid=$!
wait "$load_pid" || true
wait "$perf_pid" || { echo "perf sched record failed:" >&2; cat "$work/perf.log" >&2; exit 1; }
perf_pid=""
traced_server=$server_pid
stop_server
grep -q '^finished in' "$work/h2load.out" || { cat "$work/h2load.out" >&2; exit 1; }
perf sched timehist -i "$work/sched.data" > "$work/timehist.txt" 2> /dev/null

echo "$server, $size-byte payloads, $((rps * 50)) requests/s offered, server on CPU $server_cpu," \
  "h2load on CPU $load_cpu, $duration s after a 1 s warm-up:"
read -r _ kept _ achieved p50 p99 p999 < <(python3 "$here/log_stats.py" "$work/h2load.log" 1)
echo "$kept requests at $achieved/s; p50 $p50 µs, p99 $p99 µs, p99.9 $p999 µs"
python3 "$here/burst_trace.py" "$work/h2load.log" "$work/timehist.txt" "$offset" "$traced_server" \
  "$load_pid" 1
