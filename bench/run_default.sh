#!/usr/bin/env bash
# The main job: the default benchmark run on a release build (argument 1: the build tree).
#
#   bench/run_default.sh build/release [more benchmain flags]
#
# 1. benchmain, unary calls with 1-byte payloads, 100 concurrent calls on one connection for
#    5 s, without simulated network shaping (grpc-go's defaults would add 40 ms / 10 Mbit/s runs);
#    the server and client reactors are pinned to CPUs of their own (benchmain's default -cpus).
#    Results on stdout in grpc-go's format; rill's own figures (CPU µs per RPC on each side,
#    pool counters, copied bytes) on stderr. Further arguments go to benchmain and override
#    these flags.
# 2. The mem microbenchmarks, briefly.
set -euo pipefail
build=${1:?build dir}
shift
"$build/bench/benchmain/benchmain" -workloads=unary -reqSizeBytes=1 -respSizeBytes=1 \
  -maxConcurrentCalls=100 -benchtime=5s -latency=0s -kbps=0 "$@"
"$build/bench/mem/mem_benchmark" --benchmark_min_time=0.1
