#!/usr/bin/env bash
# Runs one interop client against one interop server, both peers (no rill inside), to prove the
# harnesses work before rill is put on either side.
#
#   peer_selftest.sh --server PROGRAM --client PROGRAM [--test_case=CASE] [--needs-node DIR]
#
# PROGRAM is an executable, a .js file (run with node) or a .sh file (run with bash). The server is started with --port=0
# and must print `listening on <port>`; the client gets --server_host=127.0.0.1,
# --server_port=<port>, --use_tls=false and --test_case (default: all). The exit code is the
# client's; 77 (skipped) when --needs-node is given and DIR/node_modules lacks @grpc/grpc-js.
set -euo pipefail

server=""
client=""
test_case="all"
needs_node=""
while [ $# -gt 0 ]; do
  case "$1" in
    --server) server=$2; shift 2 ;;
    --client) client=$2; shift 2 ;;
    --test_case=*) test_case=${1#--test_case=}; shift ;;
    --needs-node) needs_node=$2; shift 2 ;;
    *) echo "peer_selftest: unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [ -z "$server" ] || [ -z "$client" ]; then
  echo "usage: peer_selftest.sh --server PROGRAM --client PROGRAM [--test_case=CASE]" >&2
  exit 2
fi

if [ -n "$needs_node" ]; then
  if ! command -v node >/dev/null; then
    echo "SKIP: node is not installed"
    exit 77
  fi
  if [ ! -d "$needs_node/node_modules/@grpc/grpc-js" ]; then
    echo "SKIP: $needs_node/node_modules is missing; run 'npm ci' there (./dev.sh setup does)"
    exit 77
  fi
fi

# The command line that runs PROGRAM, in the array named by $2.
command_for() {
  local -n out=$2
  case "$1" in
    *.js) out=(node "$1") ;;
    *.sh) out=(bash "$1") ;;
    *) out=("$1") ;;
  esac
}
command_for "$server" server_cmd
command_for "$client" client_cmd

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"${server_cmd[@]}" --port=0 --use_tls=false >"$work/server.out" 2>"$work/server.err" &
server_pid=$!

port=""
for _ in $(seq 300); do
  port=$(sed -n 's/^listening on \([0-9]\+\)$/\1/p' "$work/server.out" | head -n 1)
  [ -n "$port" ] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "peer_selftest: the server exited before listening" >&2
    cat "$work/server.err" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$port" ]; then
  echo "peer_selftest: the server did not print 'listening on <port>' within 30 s" >&2
  cat "$work/server.err" >&2
  exit 1
fi

echo "server: ${server_cmd[*]} on port $port"
echo "client: ${client_cmd[*]}"
status=0
"${client_cmd[@]}" --server_host=127.0.0.1 --server_port="$port" --use_tls=false \
  --test_case="$test_case" || status=$?
if [ "$status" != 0 ]; then
  echo "peer_selftest: the client exited with $status; server stderr follows" >&2
  cat "$work/server.err" >&2
fi
exit "$status"
