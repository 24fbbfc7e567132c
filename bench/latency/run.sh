#!/usr/bin/env bash
# Tail latency at a fixed offered load: rill's BenchmarkService server, libgrpc++'s (async
# completion-queue server) and grpc-go's, each with one core, under the same h2load request
# rate, for unary calls of 1 B and 8 KiB (request and response payloads of that size).
#
#   bench/latency/run.sh BUILD_DIR [--reps N] [--duration SECONDS] [--quick] [--max-wait SECONDS]
#                        [--out FILE]
#
# BUILD_DIR is a configured release tree (`./dev.sh build release`); the script first builds
# its side_by_side_deps target (rill_bench_server, peer_cpp_bench_server and
# peer_go_bench_server, which `./dev.sh bench` does not build). Needs h2load, nghttp
# (nghttp2-client), taskset, protoc, python3 and grpc-proto ($RILL_GRPC_PROTO_ROOT, default
# /usr/share/grpc-proto).
#
# Every server runs pinned to the first CPU with one thread (rill: one reactor; libgrpc++: one
# completion-queue thread; grpc-go: GOMAXPROCS=1); h2load runs pinned to the second, with one
# thread and 50 connections of up to 20 streams each (`h2load -t 1 -c 50 -m 20`). Each run
# starts a fresh server and lasts 1 + --duration seconds; the first second is skipped.
#
#   1. Maximum rate: no rate limit, each server. libgrpc++'s median is the reference R.
#   2. Fixed offered load: 25 %, 50 % and 80 % of R, the same for all three servers, as h2load
#      --rps=(load / 50) per connection, with --log-file: p50 / p99 / p99.9 of the requests'
#      durations, the achieved rate, and whether the server kept up (achieved >= 95 % of
#      offered; "did not keep up" otherwise). h2load paces each connection in ticks of
#      max(10 ms, 1 / rps): it sends bursts, and times a request from when it is sent, not from
#      when the schedule wanted it sent (a request queued behind the 20-stream limit waits
#      untimed).
#   3. One call in flight (-c 1 -m 1, no rate limit): p50 / p99 / p99.9.
#
# Server CPU % and µs/RPC come from utime+stime in /proc/PID/stat over the whole run, h2load's
# CPU % from its user+sys time. Two
# figures say whether the machine was quiet, each the largest over the repetitions: steal time
# (the hypervisor running something else on these CPUs, /proc/stat), and "other CPU": the two
# CPUs' busy time (wall time less idle, /proc/stat) less the server's and h2load's own CPU time,
# in % of one CPU (other processes and kernel threads). Runs with more than 1 % steal or 10 %
# other CPU are flagged. Before each run the script waits, up to --max-wait seconds (default
# 30), for both CPUs to be quiet (under 15 % of one CPU busy).
# Each figure is the median of --reps (default 3) runs, the servers interleaved. Prints a
# markdown table (also written to --out, default BUILD_DIR/latency.md, with the raw runs beside
# it as latency.tsv). The default run (3 reps of 5 s) takes about 12 minutes; --quick (1 rep of
# 1 s) about 2, and is only a smoke test.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command_line="bench/latency/run.sh $*"
repo=$(cd "$here/../.." && pwd)
source "$repo/bench/lib/grpc_load.sh"
grpc_proto=${RILL_GRPC_PROTO_ROOT:-/usr/share/grpc-proto}

usage() { sed -n '2,41p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
build=$(cd "$1" && pwd)
shift
reps=3
duration=5
max_wait=30
out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) reps=1; duration=1 ;;
    --reps) reps=$2; shift ;;
    --max-wait) max_wait=$2; shift ;;
    --duration) duration=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done
out=${out:-$build/latency.md}
[[ $reps =~ ^[1-9][0-9]*$ && $duration =~ ^[1-9][0-9]*$ && $max_wait =~ ^[0-9]+$ ]] ||
  { echo "--reps, --duration and --max-wait take whole numbers" >&2; exit 2; }
warmup=1
conns=50
streams=20
loads=(25 50 80)
sizes=(1 8192)

rill_server=$build/bench/benchmain/rill_bench_server
cpp_server=$build/tests/peers/peer_cpp_bench_server
go_server=$build/tests/peers/peer_go_bench_server
for tool in h2load nghttp taskset protoc python3; do
  command -v "$tool" > /dev/null || { echo "missing $tool (./dev.sh setup installs it)" >&2; exit 1; }
done
cmake --build "$build" --target side_by_side_deps >&2
for f in "$rill_server" "$cpp_server" "$go_server"; do
  [[ -x $f ]] || { echo "missing $f after building side_by_side_deps" >&2; exit 1; }
done
servers=(rill grpcpp go)

read -r server_cpu load_cpu < <(first_two_cpus)
[[ $server_cpu != "$load_cpu" ]] || echo "warning: one CPU only; server and h2load share it" >&2

work=$(mktemp -d /tmp/rill-latency.XXXXXX)
server_pid=""
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2> /dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# --- request files ----------------------------------------------------------------------------

for size in "${sizes[@]}"; do
  write_request "$size" "$work/request-$size.bin"
done

# --- servers ----------------------------------------------------------------------------------

# start_server KIND: starts it pinned to $server_cpu with one thread; sets server_pid and
# server_port.
start_server() {
  local kind=$1 log="$work/server.log"
  rm -f "$log"
  case $kind in
    rill) taskset -c "$server_cpu" "$rill_server" --port=0 --reactors=1 --cpus="$server_cpu" \
            > "$log" 2>&1 & ;;
    grpcpp) taskset -c "$server_cpu" "$cpp_server" --port=0 --threads=1 > "$log" 2>&1 & ;;
    go) taskset -c "$server_cpu" "$go_server" --port=0 --threads=1 > "$log" 2>&1 & ;;
  esac
  server_pid=$!
  await_listening "$log" "$kind" || exit 1
}

# h2load_timed COMMAND...: runs COMMAND, its user+sys seconds to $work/h2load.time.
h2load_timed() {
  local TIMEFORMAT='%U %S'
  { time "$@"; } 2> "$work/time.txt" || true
  awk 'END { print $1 + $2 }' "$work/time.txt" > "$work/h2load.time"
}

url() { echo "http://127.0.0.1:$server_port/grpc.testing.BenchmarkService/UnaryCall"; }

# One gRPC call through nghttp, checking the status in the trailers.
check_grpc() {
  nghttp -v -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request-$1.bin" \
    "$(url)" 2>&1 | grep -aq 'grpc-status: 0'
}

hz=$(getconf CLK_TCK)
cpu_ticks() { sed 's/^.*) //' "/proc/$server_pid/stat" | awk '{ print $12 + $13 }'; }
# "steal idle total" jiffies of the server's and h2load's CPUs so far. Idle (with iowait) is
# what tells busy time: the kernel measures it exactly on a tickless kernel, where the user and
# system figures are sampled at each tick (and h2load's 10 ms pacing can alias with the tick).
cpu_times() {
  awk -v a="cpu$server_cpu" -v b="cpu$load_cpu" '$1 == a || ($1 == b && b != a) {
      steal += $9; idle += $5 + $6; total += $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }
    END { print steal, idle, total }' /proc/stat
}
ncpu=$((server_cpu == load_cpu ? 1 : 2))

# --- measurements -----------------------------------------------------------------------------

raw="$work/raw.tsv"
printf 'phase\tsize\tserver\tload_pct\trep\toffered\tachieved\tp50_us\tp99_us\tp999_us\tcpu_pct\tcpu_us_per_rpc\tsteal_pct\tother_pct\tfailed\th2load_cpu_pct\n' \
  > "$raw"

# measure PHASE SIZE SERVER LOAD_PCT REP [RPS_PER_CONN]: one run, appended to $raw.
#   max     -c 50 -m 20, no rate: h2load's own req/s over the main duration
#   rate    -c 50 -m 20 --rps=RPS_PER_CONN --log-file
#   single  -c 1 -m 1 --log-file
measure() {
  local phase=$1 size=$2 server=$3 load_pct=$4 rep=$5 rps=${6:-0}
  wait_quiet "$server_cpu" "$load_cpu"
  start_server "$server"
  if ! check_grpc "$size"; then
    echo "  $server does not answer UnaryCall with grpc-status 0" >&2
    stop_server
    return
  fi
  local h2=(h2load_timed taskset -c "$load_cpu" h2load -t 1
    -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request-$size.bin")
  local log="$work/h2load.log" out="$work/h2load.out" offered=nan
  rm -f "$log"
  local t0 t1 s0 s1 i0 i1 w0 w1
  rm -f "$work/h2load.time"
  t0=$(cpu_ticks)
  local began=${EPOCHREALTIME/./}
  read -r s0 i0 w0 < <(cpu_times)
  case $phase in
    max)
      "${h2[@]}" -c "$conns" -m "$streams" --warm-up-time="${warmup}s" -D "${duration}s" "$(url)" \
        > "$out" 2>&1 || true ;;
    rate)
      offered=$((rps * conns))
      "${h2[@]}" -c "$conns" -m "$streams" --rps="$rps" -D "$((warmup + duration))s" \
        --log-file="$log" "$(url)" > "$out" 2>&1 || true ;;
    single)
      "${h2[@]}" -c 1 -m 1 -D "$((warmup + duration))s" --log-file="$log" "$(url)" \
        > "$out" 2>&1 || true ;;
  esac
  read -r s1 i1 w1 < <(cpu_times)
  local ended=${EPOCHREALTIME/./}
  t1=$(cpu_ticks)
  stop_server
  local total kept failed achieved p50 p99 p999
  if [[ $phase == max ]]; then
    # "<succeeded> <req/s>" when every response was a 2xx.
    read -r kept achieved < <(awk '/^finished in/ { rate = $4 }
         /^requests:/ { done = $8 }
         /^status codes:/ { bad = $5 + $7 + $9 }
         END { if (rate != "" && done != "" && bad == 0) print done, rate; else print 0, 0 }' "$out")
    total=$kept failed=0 p50=nan p99=nan p999=nan
  else
    read -r total kept failed achieved p50 p99 p999 < <(python3 "$here/log_stats.py" "$log" "$warmup")
  fi
  awk -v phase="$phase" -v size="$size" -v server="$server" -v load="$load_pct" -v rep="$rep" \
    -v offered="$offered" -v achieved="$achieved" -v p50="$p50" -v p99="$p99" -v p999="$p999" \
    -v t0="$t0" -v t1="$t1" -v hz="$hz" -v us=$((ended - began)) \
    -v total="$total" -v s0="$s0" -v s1="$s1" -v i0="$i0" -v i1="$i1" -v w0="$w0" \
    -v w1="$w1" -v load_s="$(cat "$work/h2load.time" 2> /dev/null || echo 0)" -v failed="$failed" \
    -v ncpu="$ncpu" -v raw="$raw" 'BEGIN {
      cpu_s = (t1 - t0) / hz
      wall_s = us / 1e6
      cpu_pct = 100 * cpu_s / wall_s
      per_rpc = total > 0 ? sprintf("%.2f", cpu_s * 1e6 / total) : "nan"
      steal = w1 > w0 ? 100 * (s1 - s0) / (w1 - w0) : 0
      # Busy time of the two CPUs that neither the server nor h2load accounts for, in % of one
      # CPU: other work on the machine (and the kernel work charged to no process).
      other = 100 * (ncpu * wall_s - (i1 - i0) / hz - cpu_s - load_s) / wall_s
      if (other < 0) other = 0
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%.2f\t%.1f\t%s\t%.1f\n", phase,
             size, server, load, rep, offered, achieved, p50, p99, p999, cpu_pct, per_rpc, steal,
             other, failed, 100 * load_s / wall_s >> raw
      printf "  %-6s %5s B %-6s %3s%% rep %s: offered %7s achieved %9.0f p50 %6s p99 %6s p99.9 %6s us, server CPU %5.1f%%, steal %.2f%%, other %.1f%%%s\n",
             phase, size, server, load, rep, offered, achieved, p50, p99, p999, cpu_pct, steal,
             other, (steal > 1 || other > 10 ? "  <- not quiet" : "") > "/dev/stderr"
    }'
}

# The median of libgrpc++'s maximum rate for SIZE so far.
reference_rate() {
  awk -F'\t' -v size="$1" '$1 == "max" && $2 == size && $3 == "grpcpp" && $7 > 0 { print $7 }' \
    "$raw" | sort -g | awk '{ v[NR] = $1 } END {
      if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "latency: $reps x (${warmup} + ${duration}) s per run, servers on CPU $server_cpu, h2load on" \
  "CPU $load_cpu; load average $load_before" >&2
for size in "${sizes[@]}"; do
  for rep in $(seq 1 "$reps"); do
    for server in "${servers[@]}"; do
      measure max "$size" "$server" - "$rep"
    done
  done
  reference=$(reference_rate "$size")
  awk -v r="$reference" 'BEGIN { exit !(r > 0) }' ||
    { echo "no maximum rate for libgrpc++ at $size B" >&2; exit 1; }
  echo "  libgrpc++ maximum at $size B: $reference req/s" >&2
  for rep in $(seq 1 "$reps"); do
    for load in "${loads[@]}"; do
      rps=$(awk -v r="$reference" -v l="$load" -v c="$conns" 'BEGIN { printf "%d", r * l / 100 / c + 0.5 }')
      for server in "${servers[@]}"; do
        measure rate "$size" "$server" "$load" "$rep" "$rps"
      done
    done
    for server in "${servers[@]}"; do
      measure single "$size" "$server" - "$rep"
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "Measured $started on $(nproc) CPUs ($(uname -m)), rill $(build_commit),"
  echo "libgrpc++ $(pkg-config --modversion grpc++ 2> /dev/null || echo '?'), $(h2load --version | head -1)."
  echo "Servers on CPU $server_cpu (one thread each), h2load on CPU $load_cpu. Median of $reps runs of"
  echo "$warmup + $duration s (the first second skipped); load average $load_before before, $load_after after."
  echo "Command: \`$command_line\`"
  echo
  python3 "$here/report.py" "$raw"
} > "$out"
cp "$raw" "${out%.md}.tsv"
cat "$out"
echo "written to $out and ${out%.md}.tsv" >&2
