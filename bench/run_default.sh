#!/usr/bin/env bash
# The main job: the default benchmark run on a release build (argument 1: the build tree).
#
#   bench/run_default.sh build/release [more benchmain flags]
#
# Runs benchmain: unary calls with 1-byte payloads, 100 concurrent calls on one connection for
# 5 s, without simulated network shaping (grpc-go's defaults would add 40 ms / 10 Mbit/s runs);
# the server and client reactors are pinned to CPUs of their own (benchmain's default -cpus).
# Further arguments go to benchmain and override these flags. Then prints, in this order:
#
# 1. A summary of each run: requests per second, server and client CPU µs per RPC, heap
#    allocations per RPC, what each means, and the command for the side-by-side table.
# 2. benchmain's output: grpc-go's result block (stdout) and rill's own figures (stderr: notes,
#    `rill_extras` lines with pool counters and copied bytes).
# 3. The mem microbenchmarks, briefly (skipped with RILL_BENCH_SKIP_MEM=1).
#
# Plain text throughout: no colour codes.
set -euo pipefail
build=${1:?build dir}
shift

out=$(mktemp /tmp/rill-bench-out.XXXXXX)
err=$(mktemp /tmp/rill-bench-err.XXXXXX)
trap 'rm -f "$out" "$err"' EXIT

status=0
"$build/bench/benchmain/benchmain" -workloads=unary -reqSizeBytes=1 -respSizeBytes=1 \
  -maxConcurrentCalls=100 -benchtime=5s -latency=0s -kbps=0 "$@" > "$out" 2> "$err" || status=$?
if [[ $status != 0 ]]; then
  cat "$out"
  cat "$err" >&2
  echo "benchmain failed (exit status $status)" >&2
  exit "$status"
fi

# The build tree as the reader would type it: relative to the current directory when inside it.
build_shown=$build
[[ $build_shown == "$PWD"/* ]] && build_shown=${build_shown#"$PWD"/}

# Pairs the result blocks of stdout with the rill_extras lines of stderr, run by run.
awk -v build="$build_shown" '
  function grouped(n,   s) {  # 163598 -> 163,598
    s = sprintf("%.0f", n)
    while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]([,]|$)/, ",&", s)
    return s
  }
  function feature(name,   m) {  # The value of one feature in a result header line.
    return match(header[runs], "-" name "_[^-]*") ? substr(header[runs], RSTART + length(name) + 2, RLENGTH - length(name) - 2) : "?"
  }
  FNR == 1 { file++ }
  file == 1 && /^(unary|streaming|unconstrained)-networkMode_.*:$/ {
    header[++runs] = $0
    mode[runs] = substr($0, 1, index($0, "-") - 1)
    calls[runs] = feature("maxConcurrentCalls"); conns[runs] = feature("connections")
    req[runs] = feature("reqSize"); resp[runs] = feature("respSize")
    time[runs] = feature("benchTime")
  }
  file == 1 && /Allocs\/op: / { a = $0; sub(/.*Allocs\/op: /, "", a); sub(/[ \t].*/, "", a); allocs[runs] = a }
  file == 2 && /^benchmain: server reactors/ { cpus = $0; sub(/^benchmain: /, "", cpus) }
  file == 2 && /^rill_extras / {
    n++
    for (i = 2; i <= NF; i++) { split($i, kv, "="); extra[n, kv[1]] = kv[2] }
  }
  END {
    for (r = 1; r <= runs; r++) {
      # What one operation is, per run mode.
      if (mode[r] == "unary") { op = "RPC"; rate = "req/s"; what = "RPCs completed per second" }
      else if (mode[r] == "streaming") { op = "op"; rate = "ops/s"; what = "round trips per second (an op: one request and one response message)" }
      else { op = "op"; rate = "ops/s"; what = "messages per second, mean of sent and received (an op: one message)" }
      if (r > 1) print ""
      printf "%s %s, %s request / %s response, %s concurrent %s on %s connection%s, %s\n",
             r == 1 ? "Summary:" : "Run " r ":", mode[r], req[r], resp[r], calls[r],
             mode[r] == "unary" ? "calls" : "streams", conns[r], conns[r] == 1 ? "" : "s", time[r]
      sv = extra[r, "server_cpu_us_per_op"]
      # Label columns are padded by hand: awk counts the 2-byte µ as two characters.
      printf "  %12s  %-17s %s\n", grouped(extra[r, "qps"]), rate, what
      printf "  %12s  µs server CPU/%-3s CPU time (user + system) of the server reactor threads per %s\n",
             sv == "n/a" ? "n/a" : sprintf("%.2f", sv), op, op
      printf "  %12s  µs client CPU/%-3s CPU time (user + system) of the client reactor threads per %s\n",
             sprintf("%.2f", extra[r, "client_cpu_us_per_op"]), op, op
      printf "  %12s  %-17s heap allocations per %s: every allocation of the process, server\n",
             sprintf("%.4g", allocs[r]), "allocs/" op, op
      printf "  %12s  %-17s and client together (grpc-go%ss Allocs/op)\n", "", "", "\047"
    }
    printf "(benchmain from %s: client and server in one process%s)\n", build, cpus == "" ? "" : "; " cpus
    print ""
    print "Side by side with libgrpc++ 1.51 and nghttpd (each server on one CPU, load on the other;"
    print "about 10 minutes; builds what it needs first, including the libgrpc++ peer):"
    print "  bench/side_by_side/run.sh " build " --reps 3 --duration 2"
  }
' "$out" "$err"

echo
echo "benchmain output (stdout: grpc-go's result format; stderr: rill's notes and figures):"
echo
cat "$out"
cat "$err"

if [[ ${RILL_BENCH_SKIP_MEM:-0} != 1 ]]; then
  echo
  echo "mem microbenchmarks (bench/mem/mem_benchmark; buffer pool against malloc):"
  "$build/bench/mem/mem_benchmark" --benchmark_min_time=0.1
fi
