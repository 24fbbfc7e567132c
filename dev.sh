#!/usr/bin/env bash
# rill's one entry point. Every command sets up what it needs first (Debian packages via
# apt-get when run as root, npm packages for the grpc-js peer), configures and builds.
#
#   ./dev.sh bench     the main job: a release build and the default benchmark run
#   ./dev.sh test      the whole test suite (unit, integration, interop against real peers)
#   ./dev.sh asan      the unit and integration tests built with AddressSanitizer + UBSan
#   ./dev.sh tsan      the threaded tests built with ThreadSanitizer
#   ./dev.sh fuzz      the libFuzzer targets (clang), each run over its seed corpus for
#                      FUZZ_SECONDS (default 20); extra arguments go to every fuzzer
#   ./dev.sh setup     only install what is missing
#   ./dev.sh build [release|test|asan|tsan|fuzz]   only configure and build
#
# Build trees live in build/<config>. ccache is used when present (it is installed by setup).
# With RILL_REQUIRE_PEERS=1 in the environment (CI sets it), a test whose peer or tool (libgrpc++,
# grpcio, grpc-js, grpc-go, the zstd command, ...) is missing fails instead of skipping.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

# Packages from Debian 12. BUILD_PKGS build rill, its tests and benchmark tools (grpc-proto: the
# standard gRPC protos they use; python3-matplotlib draws `benchresult --plot`; libcpp-httplib-dev
# serves the Prometheus exposition); PEER_PKGS are
# the real peers tests talk to (grpc-go 1.33 is built with Debian's Go from
# golang-google-grpc-dev's sources, its generated code by protoc-gen-go from
# golang-github-golang-protobuf-1-3-dev; python3-prometheus-client parses scrapes in tests).
BUILD_PKGS=(cmake ninja-build g++ ccache pkg-config libnghttp2-dev libasio-dev libprotobuf-dev
  libprotoc-dev protobuf-compiler libssl-dev zlib1g-dev libzstd-dev libgtest-dev libgmock-dev
  libbenchmark-dev libcli11-dev grpc-proto nlohmann-json3-dev python3-matplotlib libcpp-httplib-dev)
# FUZZ_PKGS build the libFuzzer targets (clang 14 and its fuzzer/sanitizer runtimes).
FUZZ_PKGS=(clang libclang-rt-14-dev)
# zstd and gzip are the command-line tools tests check rill's compressed bytes against.
PEER_PKGS=(libgrpc++-dev protobuf-compiler-grpc python3-grpcio python3-protobuf nghttp2-client
  nghttp2-server nginx-light util-linux procps golang-go golang-google-grpc-dev
  golang-github-golang-protobuf-1-3-dev zstd gzip coreutils python3-prometheus-client)
# BENCH_PKGS are the measuring tools the benchmark scripts use besides the peers: valgrind
# (callgrind instruction counts: bench/instructions_per_rpc.sh, bench/observability.sh), perf
# (system calls per RPC in bench/side_by_side/run.sh) and mimalloc (the allocator rill's pools
# are compared against: bench/allocators.sh).
BENCH_PKGS=(valgrind linux-perf libmimalloc2.0)

# Bold only when stderr is a terminal: logs and pipes get plain text.
if [ -t 2 ]; then
  log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
else
  log() { printf '==> %s\n' "$*" >&2; }
fi

missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || echo "$p"
  done
}

install_packages() {
  local missing
  missing=$(missing_packages "$@")
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "rill needs these Debian packages: $missing" >&2
    echo "Run as root (or: sudo apt-get install $missing) and try again." >&2
    exit 1
  fi
  log "installing: $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing
}

setup_node_peer() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    install_packages nodejs npm
  fi
  local dir="$ROOT/tests/peers/node"
  [ -f "$dir/package.json" ] || return 0
  if [ ! -d "$dir/node_modules/@grpc/grpc-js" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
    log "installing npm packages for the grpc-js peer"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

setup() {
  local what=${1:-all}
  install_packages "${BUILD_PKGS[@]}"
  if [ "$what" = fuzz ]; then
    install_packages "${FUZZ_PKGS[@]}"
  fi
  if [ "$what" = all ]; then
    install_packages "${PEER_PKGS[@]}" "${BENCH_PKGS[@]}"
    setup_node_peer
  fi
}

export CCACHE_BASEDIR="$ROOT"
export CCACHE_NOHASHDIR=true
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}

configure() {
  local config=$1
  local dir="$ROOT/build/$config"
  local args=(-G Ninja -DRILL_WERROR=ON)
  local sanitizer_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG'
                         -DCMAKE_C_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG')
  case "$config" in
    # The libgrpc++ peers are built only on request, by bench/side_by_side/run.sh.
    release) args+=(-DCMAKE_BUILD_TYPE=Release -DRILL_BUILD_TESTS=OFF -DRILL_BUILD_PEERS=OFF) ;;
    # Line tables only (-g1): a quarter less compile time; reconfigure with
    # -DRILL_LINE_TABLES=OFF to inspect variables in a debugger.
    test) args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRILL_DCHECKS=ON -DRILL_LINE_TABLES=ON) ;;
    # Warnings are judged by the plain gcc build: with the sanitizers' instrumentation GCC 12
    # reports false maybe-uninitialized and mismatched-new-delete on coroutine frames.
    # The sanitizer and fuzzer builds use -O1 and line tables only (-g1): reports keep their
    # file:line stacks, and GCC compiles an ASan+UBSan translation unit 2.4 times faster than
    # at -O2 -g (TSan 1.5 times), which is most of what keeps CI's cold run short.
    asan) args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "${sanitizer_flags[@]}" -DRILL_DCHECKS=ON
                 -DRILL_WERROR=OFF -DRILL_SANITIZE=address,undefined -DRILL_BUILD_BENCHMARKS=OFF
                 -DRILL_BUILD_PEERS=OFF -DRILL_BUILD_EXAMPLES=OFF) ;;
    tsan) args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "${sanitizer_flags[@]}" -DRILL_DCHECKS=ON
                 -DRILL_WERROR=OFF -DRILL_SANITIZE=thread
                 -DRILL_BUILD_BENCHMARKS=OFF -DRILL_BUILD_PEERS=OFF -DRILL_BUILD_EXAMPLES=OFF) ;;
    # clang only has to find crashes here.
    fuzz) args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "${sanitizer_flags[@]}"
                 -DCMAKE_CXX_COMPILER=clang++
                 -DCMAKE_C_COMPILER=clang -DRILL_BUILD_FUZZERS=ON -DRILL_BUILD_TESTS=OFF
                 -DRILL_BUILD_BENCHMARKS=OFF -DRILL_BUILD_PEERS=OFF -DRILL_BUILD_EXAMPLES=OFF
                 -DRILL_DCHECKS=ON -DRILL_WERROR=OFF) ;;
    *) echo "unknown build config: $config" >&2; exit 2 ;;
  esac
  if [ ! -f "$dir/build.ninja" ]; then
    log "configuring build/$config"
    cmake -S "$ROOT" -B "$dir" "${args[@]}" >/dev/null
  fi
}

configure_and_build() {
  local config=$1
  shift
  configure "$config"
  log "building build/$config"
  cmake --build "$ROOT/build/$config" "$@"
}

# Builds only the binaries of the tests whose label matches $2 (each test is named after its
# binary): a sanitizer run compiles nothing it does not run.
build_labelled() {
  local config=$1 labels=$2 targets
  configure "$config"
  cmake --build "$ROOT/build/$config" --target build.ninja >/dev/null  # reconfigures if stale
  mapfile -t targets < <(ctest --test-dir "$ROOT/build/$config" -N -L "$labels" |
                         sed -n 's/^ *Test *#[0-9]*: \(.*\)$/\1/p')
  [ ${#targets[@]} -gt 0 ] || { echo "no test is labelled $labels" >&2; exit 1; }
  configure_and_build "$config" --target "${targets[@]}"
}

run_ctest() {
  local config=$1
  shift
  log "testing build/$config $*"
  ctest --test-dir "$ROOT/build/$config" --output-on-failure -j2 "$@"
}

# Runs every fuzzer over its committed seeds (fuzz/corpus/<name>) and any saved crashers
# (fuzz/crashers/<name>, which must no longer crash). New inputs go to build/fuzz/corpus/<name>,
# crash reproducers to build/fuzz/artifacts/. Fails if any fuzzer found a crash, or if a corpus
# has no fuzzer binary.
run_fuzzers() {
  local dir="$ROOT/build/fuzz" seconds=${FUZZ_SECONDS:-20} failed=() seeds name bin source
  for source in "$ROOT"/fuzz/*_fuzzer.cc; do
    name=$(basename "$source" .cc)
    if [ ! -d "$ROOT/fuzz/corpus/$name" ]; then
      echo "fuzzer $name has no seed corpus (fuzz/corpus/$name)" >&2
      failed+=("$name")
    fi
  done
  for seeds in "$ROOT"/fuzz/corpus/*/; do
    name=$(basename "$seeds")
    bin="$dir/fuzz/$name"
    if [ ! -x "$bin" ]; then
      # A corpus without its fuzzer is a fuzzer that stopped being built: that fails the run.
      echo "fuzzer $name has a corpus (fuzz/corpus/$name) but $bin was not built" >&2
      failed+=("$name")
      continue
    fi
    local dirs=("$dir/corpus/$name" "$seeds")
    [ -d "$ROOT/fuzz/crashers/$name" ] && dirs+=("$ROOT/fuzz/crashers/$name")
    mkdir -p "$dir/corpus/$name" "$dir/artifacts"
    log "fuzzing $name for ${seconds}s"
    if ! "$bin" -max_total_time="$seconds" -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts/$name-" "$@" "${dirs[@]}"; then
      failed+=("$name")
    fi
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzers that failed: ${failed[*]} (reproducers in build/fuzz/artifacts/)" >&2
    return 1
  fi
}

cmd=${1:-help}
shift || true
case "$cmd" in
  setup) setup all ;;
  build)
    if [ "${1:-test}" = fuzz ]; then
      setup fuzz
      configure_and_build fuzz --target rill_fuzzers
    else
      setup all
      configure_and_build "${1:-test}"
    fi
    ;;
  test)
    setup all
    configure_and_build test
    run_ctest test "$@"
    ;;
  asan)
    setup all
    build_labelled asan 'unit|integration'
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      run_ctest asan -L 'unit|integration' "$@"
    ;;
  tsan)
    setup all
    build_labelled tsan threads
    TSAN_OPTIONS=halt_on_error=1 run_ctest tsan -L threads "$@"
    ;;
  fuzz)
    setup fuzz
    configure_and_build fuzz --target rill_fuzzers
    run_fuzzers "$@"
    ;;
  bench)
    setup all
    configure_and_build release
    exec "$ROOT/bench/run_default.sh" "$ROOT/build/release" "$@"
    ;;
  help|-h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "unknown command: $cmd (try ./dev.sh help)" >&2; exit 2 ;;
esac
