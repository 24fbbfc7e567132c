#!/usr/bin/env bash
# What observing calls costs the server, in one run: benchmain's in-process server with
# (a) nothing, (b) one stats handler that reads every event and the first byte of every payload
# (--statsHandler), (c) a binary log of every call in full to a file (--binaryLog), (d) gRPC's
# per-call metrics (--metrics); for unary calls of 1 B (100 concurrent calls on one connection)
# and streaming ping-pong of 8 KiB messages (one stream).
#
#   bench/observability.sh BENCHMAIN [--reps N] [--duration SECONDS] [--no-callgrind]
#   bench/observability.sh build/release/bench/benchmain/benchmain
#
# BENCHMAIN is a release build's benchmain (`./dev.sh build release`, target benchmain). Each
# measurement runs benchmain pinned with `taskset -c 0,1` (benchmain puts the server reactor on
# CPU 0 and the client on CPU 1) for --duration seconds (default 2); the 8 cases run interleaved,
# --reps times (default 3), and the median of each figure is reported:
#
#   server CPU µs/op   CPU time of the server's reactor thread per RPC (unary) or per message
#                      round trip (streaming); the binary log's writer thread is not in it
#   allocs/op          heap allocations of the whole process (client and server) per op
#   instr/op           server reactor instructions per op counted by callgrind
#                      (bench/instructions_per_rpc.sh, SHORT=2 LONG=5): machine load does not
#                      move it; skipped with --no-callgrind
#
# Prints a markdown table, each case's change against (a), and the load average before and
# after (the CPU figures are only as steady as the machine is quiet).
set -euo pipefail

usage() { sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
benchmain=$1
shift
reps=3
duration=2
callgrind=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --reps) reps=$2; shift ;;
    --duration) duration=$2; shift ;;
    --no-callgrind) callgrind="" ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done
[[ -x $benchmain ]] || { echo "not an executable: $benchmain" >&2; exit 1; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

workloads=(unary streaming)
declare -A workload_flags=(
  [unary]="-workloads=unary -reqSizeBytes=1 -respSizeBytes=1 -maxConcurrentCalls=100"
  [streaming]="-workloads=streaming -reqSizeBytes=8192 -respSizeBytes=8192 -maxConcurrentCalls=1"
)
declare -A workload_name=([unary]="unary 1 B, 100 calls" [streaming]="streaming 8 KiB, 1 stream")
cases=(a b c d)
declare -A case_name=([a]="(a) nothing" [b]="(b) stats handler" [c]="(c) binary log"
                      [d]="(d) metrics")
case_flags() {  # case -> benchmain flags
  case $1 in
    a) echo "" ;;
    b) echo "--statsHandler" ;;
    c) echo "--binaryLog=$work/server.binlog" ;;
    d) echo "--metrics" ;;
  esac
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# One measurement: appends "cpu allocs" to $work/<workload>-<case>.
measure() {
  local workload=$1 case=$2 out=$work/out err=$work/err flags
  flags=$(case_flags "$case")
  rm -f "$work/server.binlog"
  # shellcheck disable=SC2086  # the flag lists are word lists
  taskset -c 0,1 "$benchmain" ${workload_flags[$workload]} $flags -benchtime="${duration}s" \
    -latency=0s -kbps=0 >"$out" 2>"$err" || { cat "$err" >&2; exit 1; }
  local cpu allocs
  cpu=$(sed -n 's/.*server_cpu_us_per_op=\([0-9.]*\).*/\1/p' "$err" | head -1)
  allocs=$(sed -n 's/.*Allocs\/op: \([0-9.e+-]*\).*/\1/p' "$out" | head -1)
  [[ -n $cpu && -n $allocs ]] || { echo "no figures from benchmain:" >&2; cat "$out" "$err" >&2; exit 1; }
  echo "$cpu $allocs" >>"$work/$workload-$case"
}

for ((rep = 1; rep <= reps; rep++)); do
  for workload in "${workloads[@]}"; do
    for case in "${cases[@]}"; do
      echo "run $rep/$reps: ${workload_name[$workload]}, ${case_name[$case]}" >&2
      measure "$workload" "$case"
    done
  done
done

median() {  # column -> median of that column of stdin
  sort -g -k"$1" | awk -v c="$1" '{ v[NR] = $c } END {
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A instructions
if [[ -n $callgrind ]]; then
  for workload in "${workloads[@]}"; do
    for case in "${cases[@]}"; do
      echo "callgrind: ${workload_name[$workload]}, ${case_name[$case]}" >&2
      rm -f "$work/server.binlog"
      # shellcheck disable=SC2086
      line=$(SHORT=2 LONG=5 "$here/instructions_per_rpc.sh" "$benchmain" \
               ${workload_flags[$workload]} $(case_flags "$case"))
      instructions[$workload-$case]=$(sed -n 's/.*server_instructions_per_rpc \([0-9]*\).*/\1/p' \
                                        <<<"$line")
    done
  done
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

change() {  # value base -> "+x.x %"
  awk -v v="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%+.1f %%", (v - b) * 100 / b; else print "" }'
}

echo "| workload | observer | server CPU µs/op | vs (a) | allocs/op | server instr/op | vs (a) |"
echo "|---|---|--:|--:|--:|--:|--:|"
for workload in "${workloads[@]}"; do
  base_cpu=$(median 1 <"$work/$workload-a")
  base_instr=${instructions[$workload-a]:-}
  first=1
  for case in "${cases[@]}"; do
    cpu=$(median 1 <"$work/$workload-$case")
    allocs=$(median 2 <"$work/$workload-$case")
    instr=${instructions[$workload-$case]:-}
    shown=""
    [[ -n $first ]] && shown=${workload_name[$workload]}
    first=""
    printf "| %s | %s | %.2f | %s | %.3f | %s | %s |\n" "$shown" "${case_name[$case]}" "$cpu" \
      "$([[ $case == a ]] || change "$cpu" "$base_cpu")" "$allocs" "${instr:--}" \
      "$([[ $case == a || -z $instr ]] || change "$instr" "$base_instr")"
  done
done
echo
echo "Median of $reps interleaved runs of ${duration} s each, taskset -c 0,1; load average" \
     "$load_before before, $load_after after; $(nproc) CPUs."
