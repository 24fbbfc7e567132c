#!/usr/bin/env bash
# The install test (tests/install/CMakeLists.txt sets its environment):
#   1. README.md's consumer CMakeLists.txt is tests/install/consumer/CMakeLists.txt;
#   2. `cmake --install` of this build into a temporary prefix, then the consumer project built
#      and run outside the tree with README.md's CMake lines and with its pkg-config lines;
#   3. the same with RILL_BUILD_SHARED (librill.so), whose exported symbols are checked too.
# README.md's build-and-install lines for rill itself are not rerun: step 2 installs the build
# this test belongs to, and step 3 configures and builds the same sources with the shared option.
# Any failure (a missing tool included) fails the test.
set -euo pipefail

: "${RILL_SOURCE_DIR:?} ${RILL_BUILD_DIR:?} ${CMAKE:?} ${RILL_GENERATOR:?}"
readme="$RILL_SOURCE_DIR/README.md"
consumer="$RILL_SOURCE_DIR/tests/install/consumer"
shared_build="$RILL_BUILD_DIR.shared"
work=$(mktemp -d "${TMPDIR:-/tmp}/rill-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
# Compiles of the consumer are cached like rill's own when ccache is in use (paths relative to
# the temporary directory, so that every run looks the same to ccache).
if [ -n "${RILL_CCACHE:-}" ] && [ -x "$RILL_CCACHE" ]; then
  export CMAKE_CXX_COMPILER_LAUNCHER="$RILL_CCACHE" CCACHE_NOHASHDIR=true
fi

start=$SECONDS
step() { printf '== [%3ds] %s\n' $((SECONDS - start)) "$*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# The fenced block after the line "<!-- install-test: NAME -->" in README.md.
readme_block() {
  local text
  text=$(awk -v marker="<!-- install-test: $1 -->" '
    $0 == marker { armed = 1; next }
    armed && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$readme")
  [ -n "$text" ] || fail "README.md has no block marked '<!-- install-test: $1 -->'"
  printf '%s\n' "$text"
}

step "README.md's consumer CMakeLists.txt is tests/install/consumer/CMakeLists.txt"
diff -u "$consumer/CMakeLists.txt" <(readme_block consumer-cmake) ||
  fail "README.md's consumer CMakeLists.txt and tests/install/consumer/CMakeLists.txt differ"
cmake_lines=$(readme_block consumer-build)
pkg_config_lines=$(readme_block consumer-pkg-config)

# Builds and runs the consumer against the rill installed in $work/prefix, in copies of the
# project under $work: README.md's CMake lines, then its pkg-config lines.
consume() {
  local ld_path=$1
  export prefix="$work/prefix" CCACHE_BASEDIR="$work"
  rm -rf "$work/cmake" "$work/pkg-config"
  cp -r "$consumer" "$work/cmake"
  cp -r "$consumer" "$work/pkg-config"
  step "consumer with CMake:"$'\n'"$cmake_lines"
  (cd "$work/cmake" && bash -euo pipefail -c "$cmake_lines")
  step "consumer with pkg-config:"$'\n'"$pkg_config_lines"
  (cd "$work/pkg-config" && LD_LIBRARY_PATH="$ld_path" bash -euo pipefail -c "$pkg_config_lines")
  unset prefix CCACHE_BASEDIR
}

# Files every install has.
check_layout() {
  local f
  for f in include/rill/server.h include/rill/mem/buffer.h bin/protoc-gen-rill \
           include/rill/services/admin.h include/rill/proto/grpc/health/v1/health.rill.h \
           include/rill/binary_log.h bin/rill_cli bin/rill_binlog lib/librill_services.a \
           lib/librill_ext.a \
           lib/cmake/rill/rillConfig.cmake lib/cmake/rill/rillConfigVersion.cmake \
           lib/cmake/rill/rillTargets.cmake lib/cmake/rill/RillProtobuf.cmake \
           lib/pkgconfig/rill.pc; do
    [ -e "$work/prefix/$f" ] || fail "not installed: $f"
  done
  # The installed tools run from the prefix as they are (a shared build finds librill.so).
  "$work/prefix/bin/rill_cli" --help >/dev/null || fail "bin/rill_cli does not run"
  { "$work/prefix/bin/rill_binlog" --help 2>&1 || true; } | grep -q '^usage: rill_binlog' ||
    fail "bin/rill_binlog does not run"
}

step "install $RILL_BUILD_DIR (static libraries)"
"$CMAKE" --install "$RILL_BUILD_DIR" --prefix "$work/prefix" >/dev/null
check_layout
ls "$work/prefix/lib"/librill_*.a >/dev/null || fail "no static libraries installed"
consume ""

step "configure and build $shared_build (RILL_BUILD_SHARED=ON)"
rm -rf "$work/prefix"
# shellcheck disable=SC2086  # RILL_CONFIGURE_ARGS is a list of -D options without spaces
"$CMAKE" -S "$RILL_SOURCE_DIR" -B "$shared_build" -G "$RILL_GENERATOR" $RILL_CONFIGURE_ARGS \
  -DRILL_BUILD_SHARED=ON -DRILL_BUILD_TESTS=OFF -DRILL_BUILD_BENCHMARKS=OFF \
  -DRILL_BUILD_PEERS=OFF -DRILL_BUILD_EXAMPLES=OFF -DRILL_BUILD_FUZZERS=OFF >/dev/null
"$CMAKE" --build "$shared_build"
"$CMAKE" --install "$shared_build" --prefix "$work/prefix" >/dev/null
check_layout
! ls "$work/prefix/lib"/librill_{rpc,transport,http2,mem,base}.a >/dev/null 2>&1 ||
  fail "static layers installed with librill.so"
lib=$(ls "$work/prefix/lib"/librill.so.*.*.*)

step "symbols exported by $(basename "$lib")"
names=$(nm -D --defined-only -C "$lib" | cut -d' ' -f3-)
echo "$(wc -l <<<"$names") symbols, $(grep -c '^rill::' <<<"$names") of them in namespace rill"
for wanted in 'rill::Channel::Create(' 'rill::ServerBuilder::Build()' 'rill::Status::ToString' \
              'rill::detail::StartClientStream(' 'vtable for rill::TieredBufferPool'; do
  grep -qF "$wanted" <<<"$names" || fail "$(basename "$lib") does not export $wanted"
done
internal=$(grep -E '^([a-zA-Z -]* (for|to) )?rill::internal::' <<<"$names" || true)
[ -z "$internal" ] || fail "$(basename "$lib") exports internals:"$'\n'"$(head -20 <<<"$internal")"
! grep -q 'Http2Session' <<<"$names" || fail "$(basename "$lib") exports rill::internal::Http2Session"

consume "$work/prefix/lib"
step "ok"
