#!/usr/bin/env bash
# Regenerates the golden files in tests/bench/testdata from the code of BUILD_DIR (a configured
# tree with benchmarks and tests, e.g. build/test):
#
#   cmake --build build/test --target bench_update_testdata      (builds what it needs first)
#   tests/bench/update_testdata.sh build/test                     (the same, already built)
#
# old.json, new.json      rewritten in the result-file writer's format (their values are
#                         edited by hand; this only normalizes the layout)
# old_table.txt           benchresult old.json
# old_new_comparison.txt  benchresult old.json new.json
#
# Not regenerated: old_writer_format.json (written by the JSON writer that preceded the JSON
# library; it proves older files still read) and grpc_go_unary_block.txt (grpc-go's output,
# the reference rill's printing is compared with). Review `git diff tests/bench/testdata`
# before committing: a changed golden file is a changed output format.
set -euo pipefail
build=$(cd "${1:?usage: update_testdata.sh BUILD_DIR}" && pwd)
testdata=$(cd "$(dirname "${BASH_SOURCE[0]}")/testdata" && pwd)
rewrite=$build/tests/bench/rewrite_result_file
benchresult=$build/bench/benchresult/benchresult
for f in "$rewrite" "$benchresult"; do
  [[ -x $f ]] || { echo "missing $f (build the bench_update_testdata target)" >&2; exit 1; }
done
cd "$testdata"
for f in old.json new.json; do
  "$rewrite" "$f" "$f.tmp"
  mv "$f.tmp" "$f"
done
"$benchresult" old.json > old_table.txt
"$benchresult" old.json new.json > old_new_comparison.txt
echo "updated $testdata; review with: git diff -- tests/bench/testdata"
