#!/usr/bin/env bash
# bench/run_default.sh (the main job's output) on a short run: the summary comes first, with
# each figure, what it means and the side-by-side command, then grpc-go's result block; no
# colour codes when the output is not a terminal.
#
#   run_default_test.sh REPO BUILD_DIR
set -euo pipefail
repo=$1
build=$2
out=$(mktemp /tmp/rill-run-default-test.XXXXXX)
trap 'rm -f "$out"' EXIT

RILL_BENCH_SKIP_MEM=1 "$repo/bench/run_default.sh" "$build" -benchtime=300ms > "$out" 2>&1

fail() { echo "FAIL: $*"; echo "--- output:"; cat "$out"; exit 1; }
line_of() { grep -n -m1 -E -e "$1" "$out" | cut -d: -f1; }

[[ $(head -1 "$out") == "Summary: unary, 1B request / 1B response, 100 concurrent calls on 1 connection, 300ms" ]] ||
  fail "the first line is not the summary's title"
previous=1
for pattern in '^ +[0-9,]+  req/s +RPCs completed per second$' \
               '^ +[0-9.]+  µs server CPU/RPC CPU time \(user \+ system\) of the server' \
               '^ +[0-9.]+  µs client CPU/RPC CPU time \(user \+ system\) of the client' \
               '^ +[0-9.e+-]+  allocs/RPC +heap allocations per RPC: every allocation of the process' \
               '^  bench/side_by_side/run\.sh .* --reps 3 --duration 2$' \
               '^c\+\+20-gcc[0-9.]+/rill' \
               '^unary-networkMode_none-.*-maxConcurrentCalls_100-.*:$' \
               '^50_Latency: .*Allocs/op: ' \
               '^rill_extras run=1 mode=unary '; do
  n=$(line_of "$pattern")
  [[ -n $n ]] || fail "no line matches: $pattern"
  (( n > previous )) || fail "out of order: $pattern (line $n, after line $previous)"
  previous=$n
done
! grep -q $'\033' "$out" || fail "colour codes in output that is not a terminal"
echo PASS
