#!/usr/bin/env bash
# Instructions per RPC on the server's and the client's reactor threads, counted by callgrind:
# a figure that machine load does not move, for comparing two builds of benchmain when the
# machine is too busy for CPU-time figures.
#
#   bench/instructions_per_rpc.sh BENCHMAIN [benchmain flags...]
#   bench/instructions_per_rpc.sh build/release/bench/benchmain/benchmain \
#       -workloads=unary -reqSizeBytes=1 -respSizeBytes=1 -maxConcurrentCalls=100
#
# benchmain runs twice under callgrind (SHORT and LONG seconds, default 2 and 6); the difference
# of each thread's instruction count divided by the difference of completed RPCs leaves out
# start-up, connection set-up and shutdown. A thread counts as the server's when it ran
# ServerCall code and as the client's when it ran ClientCall code.
set -euo pipefail

[ $# -ge 1 ] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
benchmain=$1
shift
flags=("$@")
short=${SHORT:-2}
long=${LONG:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() {  # seconds -> prints "requests server_instructions client_instructions"
  local seconds=$1 dir="$work/$1"
  mkdir -p "$dir"
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/cg.out" \
    "$benchmain" -latency=0s -kbps=0 -cpus=none "${flags[@]}" -benchtime="${seconds}s" \
    >"$dir/stdout" 2>"$dir/stderr" || { cat "$dir/stderr" >&2; exit 1; }
  local requests server=0 client=0 file total
  requests=$(sed -n 's/^Number of requests: *\([0-9]*\).*/\1/p' "$dir/stdout" | head -1)
  for file in "$dir"/cg.out-*; do
    total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$file" | head -1)
    if grep -q 'ServerCall' "$file"; then
      server=$((server + total))
    elif grep -q 'ClientCall' "$file"; then
      client=$((client + total))
    fi
  done
  echo "$requests $server $client"
}

read -r r1 s1 c1 < <(run "$short")
read -r r2 s2 c2 < <(run "$long")
[ "$r2" -gt "$r1" ] || { echo "the longer run completed no more RPCs ($r1, $r2)" >&2; exit 1; }
awk -v r="$((r2 - r1))" -v s="$((s2 - s1))" -v c="$((c2 - c1))" 'BEGIN {
  printf "rpcs %d  server_instructions_per_rpc %.0f  client_instructions_per_rpc %.0f\n", r, s / r, c / r
}'
