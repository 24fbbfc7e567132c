#!/usr/bin/env bash
# The main job: the default benchmark run on a release build (argument 1: the build tree).
set -euo pipefail
build=${1:?build dir}
shift
exec "$build/bench/mem/mem_benchmark" --benchmark_min_time=0.2 "$@"
