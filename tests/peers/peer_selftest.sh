#!/usr/bin/env bash
# Runs one interop client against one interop server, both peers (no rill inside), to prove the
# harnesses work before rill is put on either side.
#
#   peer_selftest.sh --server PROGRAM --client PROGRAM [--test_case=CASE] [--needs-node DIR]
#
# PROGRAM is an executable, a .js file (run with node) or a .sh file (run with bash). The server is started with --port=0
# and must print `listening on <port>`; the client gets --server_host=127.0.0.1,
# --server_port=<port>, --use_tls=false and --test_case (default: all). The exit code is the
# client's; 77 (skipped) when --needs-node is given and DIR/node_modules lacks @grpc/grpc-js, 1
# (failed) then when RILL_REQUIRE_PEERS is set.
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

# shellcheck source=tests/peers/pair_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/pair_common.sh"
if [ -n "$needs_node" ]; then skip_unless_node "$needs_node"; fi
command_for "$server" server_cmd
command_for "$client" client_cmd

start_server "${server_cmd[@]}" --port=0 --use_tls=false

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
