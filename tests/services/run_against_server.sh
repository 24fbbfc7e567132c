#!/usr/bin/env bash
# Starts a server on a free port, runs one client against it, and passes when the client exits
# 0. Fails (never skips) when the client's runtime is missing.
#
#   run_against_server.sh --server PROGRAM [--needs-node DIR] -- CLIENT ARGS...
#
# The server gets --port=0 and must print `listening on <port>`; every `{port}` in the client's
# arguments is replaced by that port. With --needs-node, node and DIR/node_modules must exist.
set -euo pipefail

server=""
needs_node=""
while [ $# -gt 0 ]; do
  case "$1" in
    --server) server=$2; shift 2 ;;
    --needs-node) needs_node=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "run_against_server: unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ -n "$server" ] && [ $# -gt 0 ] || { echo "usage: $0 --server PROGRAM -- CLIENT ARGS..." >&2; exit 2; }

if [ -n "$needs_node" ]; then
  command -v node >/dev/null || { echo "FAIL: node is not installed (./dev.sh setup)"; exit 1; }
  for module in @grpc/grpc-js grpc-reflection-js; do
    [ -d "$needs_node/node_modules/$module" ] || {
      echo "FAIL: $needs_node/node_modules/$module is missing; run 'npm ci' there (./dev.sh setup does)"
      exit 1
    }
  done
fi

# shellcheck source=tests/peers/pair_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../peers/pair_common.sh"
trap 'exit 143' TERM INT

start_server "$server" --port=0

args=()
for arg in "$@"; do args+=("${arg//\{port\}/$port}"); done
status=0
"${args[@]}" || status=$?
if [ "$status" -ne 0 ]; then
  echo "FAIL: the client exited with $status; server log:"
  cat "$work/server.err"
fi
exit "$status"
