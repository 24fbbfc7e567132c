#!/usr/bin/env bash
# The client's cost of load balancing: rill's client (benchmain) and libgrpc++'s
# (peer_cpp_bench_client), each calling unary BenchmarkService/UnaryCall (1-byte payloads, one
# channel) directly on one server and with round_robin over two, with 1 and with 100 calls in
# flight.
#
# Read the two loads apart. With 100 calls in flight neither CPU is busy: the rate is bound by
# cross-core wake-ups, so two servers (two pipelines) nearly double it, and a busier client
# batches more RPCs per system call, which lowers its CPU per RPC for reasons unrelated to the
# policy. With 1 call in flight every RPC is one round trip in both cases: that row isolates
# what picking a subchannel costs.
#
#   bench/lb/run.sh BUILD_DIR [--reps N] [--duration S]
#
# Builds benchmain, rill_bench_server and peer_cpp_bench_client in BUILD_DIR (a release
# configuration: `./dev.sh build release`), starts two rill_bench_server processes pinned to
# CPU 0, and runs every client pinned to CPU 1. The four cases run interleaved, --reps times
# (default 3), each for --duration seconds (default 5) after a warm-up; the table holds the
# median RPC/s and client CPU µs/RPC, and round_robin's overhead over direct per client and load.
set -euo pipefail

[[ $# -ge 1 ]] || { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
build=$(cd "$1" && pwd)
shift
reps=3
duration=5
while [[ $# -gt 0 ]]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

cmake --build "$build" --target benchmain rill_bench_server peer_cpp_bench_client >&2
benchmain=$(find "$build" -type f -name benchmain -perm -u+x | head -n1)
rill_server=$(find "$build" -type f -name rill_bench_server -perm -u+x | head -n1)
peer_client=$(find "$build" -type f -name peer_cpp_bench_client -perm -u+x | head -n1)

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  wait 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# start_server LOG VAR: starts one server on CPU 0 and sets VAR to its port once it listens (not
# in a command substitution: the server's pid must reach `pids` for the clean-up).
start_server() {
  taskset -c 0 "$rill_server" --port=0 --reactors=1 --cpus=0 > "$1" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    if grep -q '^listening on ' "$1"; then
      printf -v "$2" '%s' "$(sed -n 's/^listening on //p' "$1")"
      return
    fi
    sleep 0.1
  done
  echo "server did not start: $(cat "$1")" >&2
  exit 1
}
port1="" port2=""
start_server "$work/server1.log" port1
start_server "$work/server2.log" port2
direct="127.0.0.1:$port1"
both="ipv4:127.0.0.1:$port1,127.0.0.1:$port2"

# run CLIENT POLICY CALLS: prints "RPC/s CPU-µs/RPC" of one measured run.
run() {
  local log="$work/run.log" target=$direct policy=()
  if [[ $2 == round_robin ]]; then target=$both; fi
  if [[ $1 == rill ]]; then
    [[ $2 == round_robin ]] && policy=(--lbPolicy=round_robin)
    taskset -c 1 "$benchmain" --server="$target" "${policy[@]}" -workloads=unary \
      -reqSizeBytes=1 -respSizeBytes=1 -maxConcurrentCalls="$3" -connections=1 \
      -benchtime="${duration}s" -latency=0s -kbps=0 -cpus=none > "$log" 2>&1 || true
    awk '/^rill_extras / { for (i = 1; i <= NF; i++) {
           if ($i ~ /^qps=/) rate = substr($i, 5)
           if ($i ~ /^client_cpu_us_per_op=/) cpu = substr($i, 22) } }
         END { if (rate != "") print rate, cpu; else print 0, 0 }' "$log"
  else
    [[ $2 == round_robin ]] && policy=(--lb_policy=round_robin)
    taskset -c 1 "$peer_client" --target="$target" "${policy[@]}" --calls="$3" --warmup_s=1 \
      --duration_s="$duration" > "$log" 2>&1 || true
    awk '/^rpcs=/ { for (i = 1; i <= NF; i++) {
           if ($i ~ /^rpc_per_s=/) rate = substr($i, 11)
           if ($i ~ /^cpu_us_per_rpc=/) cpu = substr($i, 16) } }
         END { if (rate != "") print rate, cpu; else print 0, 0 }' "$log"
  fi
}

cases=("rill direct" "rill round_robin" "libgrpc++ direct" "libgrpc++ round_robin")
for rep in $(seq "$reps"); do
  for calls in 1 100; do
    for c in "${cases[@]}"; do
      read -r client policy <<< "$c"
      echo "$client $policy $calls $(run "$client" "$policy" "$calls")" >> "$work/results"
      echo "rep $rep: $(tail -n1 "$work/results")" >&2
    done
  done
done

python3 - "$work/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    client, policy, calls, rate, cpu = line.split()
    runs.setdefault((client, policy, calls), []).append((float(rate), float(cpu)))
med = {k: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v))
       for k, v in runs.items()}
print("| calls in flight | client | policy | RPC/s | client CPU µs/RPC | round_robin CPU overhead |")
print("|---:|---|---|---:|---:|---:|")
for calls in ("1", "100"):
    for client in ("rill", "libgrpc++"):
        base = med[(client, "direct", calls)][1]
        for policy in ("direct", "round_robin"):
            rate, cpu = med[(client, policy, calls)]
            over = f"{(cpu / base - 1) * 100:+.1f} %" if policy == "round_robin" and base else ""
            print(f"| {calls} | {client} | {policy} | {rate:.0f} | {cpu:.2f} | {over} |")
PY
