#!/usr/bin/env bash
# Throughput from one server thread to two: rill_bench_server with --reactors=1 and 2, and
# libgrpc++'s async server (peer_cpp_bench_server) with --threads=1 and 2, unary 1 B under
# `h2load -c 50 -m 20`.
#
#   bench/latency/scaling.sh BUILD_DIR [--reps N] [--duration SECONDS] [--max-wait SECONDS]
#                            [--out FILE]
#
# BUILD_DIR is a configured release tree (`./dev.sh build release`); the script first builds
# its side_by_side_deps target (rill_bench_server and peer_cpp_bench_server among it). Needs
# h2load, nghttp, taskset, protoc, python3 and grpc-proto ($RILL_GRPC_PROTO_ROOT, default
# /usr/share/grpc-proto).
#
# Configurations, on the first two CPUs this process may use (A and B):
#
#   1 thread, h2load apart   server on A, `h2load -t 1` on B: the load has a core of its own
#                            (the reference, as bench/side_by_side measures)
#   1 thread, shared         server on A, `h2load -t 2` on A and B
#   2 threads, shared        server on A and B (rill: reactor i pinned to CPU i), `h2load -t 2`
#                            on A and B
#
# A machine of two CPUs has no core left for the load once the server has two: in the shared
# rows h2load competes with the server for the same CPUs, so the 2-thread figure is bounded by
# the machine, not by the server, and ratio 2/1 compares the two shared rows.
#
# Each run starts a fresh server, warms it up for 0.5 s, then measures for --duration seconds
# (default 5); median of --reps (default 3) runs, the configurations interleaved. Figures:
#
#   req/s              completed RPCs per second, as h2load counts them
#   server µs/RPC      server utime+stime (/proc/PID/stat) over the window / RPCs
#   h2load µs/RPC      h2load's user+sys time / RPCs
#   CPUs busy          the two CPUs' non-idle time over the window (/proc/stat), of 200 %
#   other CPU          the two CPUs' busy time (wall time less idle, /proc/stat) less the
#                      server's and h2load's CPU time, in % of one CPU (other processes and
#                      kernel threads); the largest over the repetitions. Before each run the script waits, up to
#                      --max-wait seconds (default 30), for both CPUs to be quiet (under 15 %
#                      of one CPU busy)
#   threads            each server thread's share of the server's CPU time
#                      (/proc/PID/task/*/stat), named by its comm; how the connections are
#                      spread over the reactors shows here
#
# Prints a markdown table (also written to --out, default BUILD_DIR/scaling.md). About 3 minutes.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command_line="bench/latency/scaling.sh $*"
repo=$(cd "$here/../.." && pwd)
source "$repo/bench/lib/grpc_load.sh"
grpc_proto=${RILL_GRPC_PROTO_ROOT:-/usr/share/grpc-proto}

usage() { sed -n '2,42p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
build=$(cd "$1" && pwd)
shift
reps=3
duration=5
max_wait=30
out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --reps) reps=$2; shift ;;
    --max-wait) max_wait=$2; shift ;;
    --duration) duration=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done
out=${out:-$build/scaling.md}
[[ $reps =~ ^[1-9][0-9]*$ && $duration =~ ^[1-9][0-9]*$ && $max_wait =~ ^[0-9]+$ ]] ||
  { echo "--reps, --duration and --max-wait take whole numbers" >&2; exit 2; }
conns=50
streams=20

rill_server=$build/bench/benchmain/rill_bench_server
cpp_server=$build/tests/peers/peer_cpp_bench_server
for tool in h2load nghttp taskset protoc python3; do
  command -v "$tool" > /dev/null || { echo "missing $tool (./dev.sh setup installs it)" >&2; exit 1; }
done
cmake --build "$build" --target side_by_side_deps >&2
for f in "$rill_server" "$cpp_server"; do
  [[ -x $f ]] || { echo "missing $f after building side_by_side_deps" >&2; exit 1; }
done

read -r cpu_a cpu_b < <(python3 -c \
  'import os; c = sorted(os.sched_getaffinity(0)); print(c[0], c[1] if len(c) > 1 else -1)')
[[ $cpu_b != -1 ]] || { echo "needs two CPUs" >&2; exit 1; }

work=$(mktemp -d /tmp/rill-scaling.XXXXXX)
server_pid=""
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2> /dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

write_request 1 "$work/request.bin"

# start_server KIND THREADS CPUS: sets server_pid and server_port.
start_server() {
  local kind=$1 threads=$2 cpus=$3 log="$work/server.log"
  rm -f "$log"
  case $kind in
    rill) taskset -c "$cpus" "$rill_server" --port=0 --reactors="$threads" --cpus="$cpus" \
            > "$log" 2>&1 & ;;
    grpcpp) taskset -c "$cpus" "$cpp_server" --port=0 --threads="$threads" > "$log" 2>&1 & ;;
  esac
  server_pid=$!
  await_listening "$log" "$kind" || exit 1
}

url() { echo "http://127.0.0.1:$server_port/grpc.testing.BenchmarkService/UnaryCall"; }

hz=$(getconf CLK_TCK)
cpu_ticks() { sed 's/^.*) //' "/proc/$server_pid/stat" | awk '{ print $12 + $13 }'; }
# "name=ticks" of every server thread (names made unique by their position).
thread_ticks() {
  local stat
  for stat in /proc/"$server_pid"/task/*/stat; do
    awk '{ match($0, /\(.*\)/); name = substr($0, RSTART + 1, RLENGTH - 2)
           rest = substr($0, RSTART + RLENGTH + 1); split(rest, f, " ")
           gsub(/ /, "_", name); print name "=" f[12] + f[13] }' "$stat" 2> /dev/null || true
  done | awk -F= '{ n[$1]++; print $1 (n[$1] > 1 ? "#" n[$1] : "") "=" $2 }' | tr '\n' ' '
}
# h2load_run SECONDS THREADS CPUS OUT: h2load's output to OUT, its user+sys seconds to stdout.
h2load_run() {
  local seconds=$1 threads=$2 cpus=$3 output=$4 TIMEFORMAT='%U %S'
  { time taskset -c "$cpus" h2load -t "$threads" -c "$conns" -m "$streams" -D "$seconds" \
      -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request.bin" "$(url)" \
      > "$output" 2>&1 || true; } 2>&1 | awk '{ print $1 + $2 }'
}

raw="$work/raw.tsv"
printf 'server\tthreads\tplacement\trep\trpcs\tqps\tserver_us\th2load_us\tbusy_pct\tother_pct\tthread_ticks\n' \
  > "$raw"

# measure KIND THREADS PLACEMENT REP; PLACEMENT is apart or shared.
measure() {
  local kind=$1 threads=$2 placement=$3 rep=$4
  local server_cpus=$cpu_a load_cpus=$cpu_b load_threads=1
  [[ $threads == 1 ]] || server_cpus="$cpu_a,$cpu_b"
  [[ $placement == apart ]] || { load_cpus="$cpu_a,$cpu_b"; load_threads=2; }
  wait_quiet "$cpu_a" "$cpu_b"
  start_server "$kind" "$threads" "$server_cpus"
  if ! nghttp -v -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request.bin" \
      "$(url)" 2>&1 | grep -aq 'grpc-status: 0'; then
    echo "  $kind does not answer UnaryCall with grpc-status 0" >&2
    stop_server
    return
  fi
  h2load_run 0.5 "$load_threads" "$load_cpus" "$work/warmup.out" > /dev/null
  local t0 t1 before after i0 i1 load_s began ended
  t0=$(cpu_ticks)
  before=$(thread_ticks)
  began=${EPOCHREALTIME/./}
  i0=$(cpus_idle "$cpu_a" "$cpu_b")
  load_s=$(h2load_run "$duration" "$load_threads" "$load_cpus" "$work/h2load.out")
  i1=$(cpus_idle "$cpu_a" "$cpu_b")
  ended=${EPOCHREALTIME/./}
  t1=$(cpu_ticks)
  after=$(thread_ticks)
  stop_server
  local result
  result=$(awk '/^finished in/ { rate = $4 }
       /^requests:/ { done = $8 }
       /^status codes:/ { bad = $5 + $7 + $9 }
       END { if (rate != "" && done != "" && bad == 0) print done, rate; else print 0, 0 }' \
       "$work/h2load.out")
  # Per-thread ticks over the window: "name=ticks,..." of the threads that ran.
  local threads_delta
  threads_delta=$(awk -v before="$before" -v after="$after" 'BEGIN {
      n = split(before, b, " "); for (i = 1; i <= n; i++) { split(b[i], kv, "="); t0[kv[1]] = kv[2] }
      n = split(after, a, " "); out = ""
      for (i = 1; i <= n; i++) {
        split(a[i], kv, "="); d = kv[2] - (kv[1] in t0 ? t0[kv[1]] : 0)
        if (d > 0) out = out (out == "" ? "" : ",") kv[1] "=" d
      }
      print out == "" ? "-" : out }')
  awk -v kind="$kind" -v threads="$threads" -v placement="$placement" -v rep="$rep" \
    -v rpcs="${result% *}" -v qps="${result#* }" -v t0="$t0" -v t1="$t1" -v load_s="$load_s" \
    -v hz="$hz" -v i0="$i0" -v i1="$i1" -v wall_s="$(((ended - began) / 1000))e-3" \
    -v per_thread="$threads_delta" -v raw="$raw" 'BEGIN {
      server_s = (t1 - t0) / hz
      server = rpcs > 0 ? sprintf("%.3f", server_s * 1e6 / rpcs) : "nan"
      load = rpcs > 0 ? sprintf("%.3f", load_s * 1e6 / rpcs) : "nan"
      busy_s = 2 * wall_s - (i1 - i0) / hz
      busy = 100 * busy_s / wall_s
      # Busy time of the two CPUs that neither the server nor h2load accounts for, in % of one
      # CPU: other processes and kernel threads.
      other = 100 * (busy_s - server_s - load_s) / wall_s
      if (other < 0) other = 0
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%s\n", kind, threads, placement, rep,
             rpcs, qps, server, load, busy, other, per_thread >> raw
      printf "  %-6s %s thread(s) %-6s rep %s: %9.0f req/s, server %s us/RPC, h2load %s us/RPC, CPUs %5.1f%% busy, other %.0f%%, threads %s\n",
             kind, threads, placement, rep, qps, server, load, busy, other, per_thread > "/dev/stderr"
    }'
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "scaling: $reps x ${duration} s per run on CPUs $cpu_a and $cpu_b; load average $load_before" >&2
for rep in $(seq 1 "$reps"); do
  for kind in rill grpcpp; do
    measure "$kind" 1 apart "$rep"
    measure "$kind" 1 shared "$rep"
    measure "$kind" 2 shared "$rep"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "Measured $started on $(nproc) CPUs ($(uname -m)), rill $(build_commit),"
  echo "libgrpc++ $(pkg-config --modversion grpc++ 2> /dev/null || echo '?'), $(h2load --version | head -1)."
  echo "Unary 1 B, \`h2load -c $conns -m $streams\`; median of $reps runs of $duration s;"
  echo "load average $load_before before, $load_after after."
  echo "Command: \`$command_line\`"
  echo
  python3 "$here/scaling_report.py" "$raw"
} > "$out"
cp "$raw" "${out%.md}.tsv"
cat "$out"
echo "written to $out and ${out%.md}.tsv" >&2
