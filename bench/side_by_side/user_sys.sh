#!/usr/bin/env bash
# User and system CPU per RPC, apart, of rill's and libgrpc++'s BenchmarkService servers under
# h2load and of the TCP floor (bench/tcp_floor) under its own client, for one request/response
# size: how much of a server's CPU is its own work and how much the kernel's.
#
#   bench/side_by_side/user_sys.sh BUILD_DIR [--size BYTES] [--inflight N] [--reps R]
#                                  [--duration SECONDS]
#
# Defaults: 1 MiB payloads, 4 in flight on one connection, 3 repetitions of 3 s. Each
# measurement starts a fresh server pinned to the first CPU (one thread), warms it for 1 s with
# the load on the second CPU, then reads the server's utime and stime (/proc/<pid>/stat) around
# the measured run; repetitions are interleaved. Prints one line per measurement and the
# medians. BUILD_DIR is a release tree; side_by_side_deps is built first.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$repo/bench/lib/grpc_load.sh"
grpc_proto=${RILL_GRPC_PROTO_ROOT:-/usr/share/grpc-proto}

usage() { sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
build=$(cd "$1" && pwd)
shift
size=1048576
inflight=4
reps=3
duration=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --size) size=$2; shift ;;
    --inflight) inflight=$2; shift ;;
    --reps) reps=$2; shift ;;
    --duration) duration=$2; shift ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done
for tool in h2load taskset protoc python3; do
  command -v "$tool" > /dev/null || { echo "missing $tool (./dev.sh setup installs it)" >&2; exit 1; }
done
cmake --build "$build" --target side_by_side_deps >&2
rill_server=$build/bench/benchmain/rill_bench_server
grpcpp_server=$build/tests/peers/peer_cpp_bench_server
tcp_floor=$build/bench/tcp_floor/tcp_floor

read -r server_cpu load_cpu < <(first_two_cpus)
work=$(mktemp -d /tmp/rill-user-sys.XXXXXX)
server_pid=""
cleanup() {
  [[ -z $server_pid ]] || kill "$server_pid" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
write_request "$size" "$work/request.bin"
bytes=$(stat -c %s "$work/request.bin")
hz=$(getconf CLK_TCK)

# load SECONDS: prints the RPCs completed against $server_port.
load() {
  if [[ $kind == floor ]]; then
    taskset -c "$load_cpu" "$tcp_floor" client --port="$server_port" --req="$bytes" \
      --resp="$bytes" --inflight="$inflight" --seconds="$1" | sed -n 's/^rpcs=//p'
  else
    taskset -c "$load_cpu" h2load -t 1 -c 1 -m "$inflight" -D "$1" \
      -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request.bin" \
      "http://127.0.0.1:$server_port/grpc.testing.BenchmarkService/UnaryCall" |
      awk '/^status codes:/ { bad = $5 + $7 + $9 } /^requests:/ { done = $8 }
           END { print (bad == 0 ? done : 0) }'
  fi
}

user_sys_ticks() { sed 's/^.*) //' "/proc/$server_pid/stat" | awk '{ print $12, $13 }'; }

results=$work/results
for rep in $(seq 1 "$reps"); do
  for kind in rill grpcpp floor; do
    case $kind in
      rill) taskset -c "$server_cpu" "$rill_server" --port=0 --reactors=1 --cpus="$server_cpu" \
              > "$work/server.log" 2>&1 & ;;
      grpcpp) taskset -c "$server_cpu" "$grpcpp_server" --port=0 --threads=1 \
                > "$work/server.log" 2>&1 & ;;
      floor) taskset -c "$server_cpu" "$tcp_floor" server --port=0 --req="$bytes" \
               --resp="$bytes" > "$work/server.log" 2>&1 & ;;
    esac
    server_pid=$!
    await_listening "$work/server.log" "$kind"
    load 1 > /dev/null
    read -r u0 s0 < <(user_sys_ticks)
    rpcs=$(load "$duration")
    read -r u1 s1 < <(user_sys_ticks)
    stop_server
    ((rpcs > 0)) || { echo "$kind: no RPC completed" >&2; exit 1; }
    awk -v k="$kind" -v r="$rep" -v n="$rpcs" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz="$hz" \
      'BEGIN { printf "%s %d %d %.1f %.1f\n", k, r, n, u / hz * 1e6 / n, s / hz * 1e6 / n }' |
      tee -a "$results" | awk '{ printf "  %-6s rep %s: %7d RPCs  user %8.1f  system %8.1f µs/RPC\n",
                                   $1, $2, $3, $4, $5 }' >&2
  done
done

echo "$size-byte requests and responses, $inflight in flight, server on CPU $server_cpu, load on" \
  "CPU $load_cpu; median of $reps runs of ${duration} s (µs per RPC):"
python3 - "$results" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
names = {"rill": "rill", "grpcpp": "libgrpc++", "floor": "TCP floor"}
print("| server | user | system | total |")
print("|---|--:|--:|--:|")
for kind in ("rill", "grpcpp", "floor"):
    user = statistics.median(float(r[3]) for r in rows if r[0] == kind)
    system = statistics.median(float(r[4]) for r in rows if r[0] == kind)
    total = statistics.median(float(r[3]) + float(r[4]) for r in rows if r[0] == kind)
    print(f"| {names[kind]} | {user:,.1f} | {system:,.1f} | {total:,.1f} |")
EOF
