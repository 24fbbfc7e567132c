#!/usr/bin/env bash
# Runs one interop client against one interop server and checks the client's verdict per case.
#
#   run_pair.sh --server PROGRAM --client PROGRAM [--test_case=CASES] [--allow_skip=CASES]
#               [--needs-node DIR] [--tls | --mtls]
#
# PROGRAM is an executable, a .js file (run with node) or a .sh file (run with bash). The server
# is started once, with --port=0 --use_tls=false, and must print `listening on <port>`. The
# client gets --server_host=127.0.0.1, --server_port=<port> and --use_tls=false, and runs twice
# over CASES (comma-separated, or `all`, the default):
#   1. once per case, each in a client process of its own: every case starts on a fresh
#      connection with the protocol's initial windows, as gRPC's interop runner runs them (an
#      earlier case cannot hide a bug by growing the windows, nor break a later one);
#   2. all cases in one client process, on one channel: calls after cancellations, deadlines
#      and errors on a connection that stays up.
#
# Passes when every client run exits 0 and printed `PASS <case>` for each of its cases, or
# With --tls the pair speaks TLS with the certificates of tests/tls/certs (gRPC's interop flag
# names): the server gets --use_tls=true --tls_cert_file --tls_key_file, the client
# --use_tls=true --use_test_ca=true --ca_file and --server_host_override=foo.test.google.fr (a
# name the test server certificate is valid for). --mtls adds client certificates: the server
# gets --tls_client_ca_file, the client --tls_client_cert_file and --tls_client_key_file.
#
# `SKIP <case>` for a case in --allow_skip (a case silently left out, or skipped without
# permission, fails the pair). Afterwards prints what the server logged about observed
# cancellations. Exit 77 (skipped) when --needs-node is given and DIR lacks
# node_modules/@grpc/grpc-js; 1 (failed) instead when RILL_REQUIRE_PEERS is set.
set -euo pipefail

all_cases="empty_unary,large_unary,client_compressed_unary,server_compressed_unary,\
client_streaming,client_compressed_streaming,server_streaming,server_compressed_streaming,\
ping_pong,empty_stream,timeout_on_sleeping_server,cancel_after_begin,\
cancel_after_first_response,custom_metadata,status_code_and_message,special_status_message,\
unimplemented_method,unimplemented_service"

server=""
client=""
test_case="all"
allow_skip=""
needs_node=""
tls=""
while [ $# -gt 0 ]; do
  case "$1" in
    --server) server=$2; shift 2 ;;
    --client) client=$2; shift 2 ;;
    --test_case=*) test_case=${1#--test_case=}; shift ;;
    --allow_skip=*) allow_skip=${1#--allow_skip=}; shift ;;
    --needs-node) needs_node=$2; shift 2 ;;
    --tls) tls=tls; shift ;;
    --mtls) tls=mtls; shift ;;
    *) echo "run_pair: unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [ -z "$server" ] || [ -z "$client" ]; then
  echo "usage: run_pair.sh --server PROGRAM --client PROGRAM [--test_case=CASES]" \
       "[--allow_skip=CASES] [--needs-node DIR]" >&2
  exit 2
fi

# shellcheck source=tests/peers/pair_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../peers/pair_common.sh"
if [ -n "$needs_node" ]; then skip_unless_node "$needs_node"; fi
command_for "$server" server_cmd
command_for "$client" client_cmd
trap 'exit 143' TERM INT  # ctest's timeout: still stop the server

certs="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tls/certs" && pwd)"
server_tls=(--use_tls=false)
client_tls=(--use_tls=false)
if [ -n "$tls" ]; then
  server_tls=(--use_tls=true --tls_cert_file="$certs/server.pem" --tls_key_file="$certs/server.key")
  client_tls=(--use_tls=true --use_test_ca=true --ca_file="$certs/ca.pem"
              --server_host_override=foo.test.google.fr)
fi
if [ "$tls" = mtls ]; then
  server_tls+=(--tls_client_ca_file="$certs/ca.pem")
  client_tls+=(--tls_client_cert_file="$certs/client.pem" --tls_client_key_file="$certs/client.key")
fi

start_server "${server_cmd[@]}" --port=0 "${server_tls[@]}"

wanted=$test_case
[ "$wanted" = all ] && wanted=$all_cases
IFS=',' read -r -a cases <<<"$wanted"

echo "server: ${server_cmd[*]} on port $port${tls:+ ($tls)}"
failed=0

# Runs the client with --test_case=$1, output in $work/client.out, and checks every case of $1.
run_client() {
  local status=0 c
  # Every call of a case has a deadline of at most 30 s: a client still running after 120 s
  # is stuck, and is stopped so that the cases after it still run.
  timeout --kill-after=5 120 "${client_cmd[@]}" --server_host=127.0.0.1 --server_port="$port" \
    "${client_tls[@]}" --test_case="$1" >"$work/client.out" 2>&1 || status=$?
  sed 's/^/  /' "$work/client.out"
  if [ "$status" != 0 ]; then
    echo "run_pair: the client exited with $status (--test_case=$1)" >&2
    failed=1
  fi
  IFS=',' read -r -a asked <<<"$1"
  for c in "${asked[@]}"; do
    if grep -q "^PASS $c\$" "$work/client.out"; then
      continue
    fi
    if grep -q "^SKIP $c:" "$work/client.out" && [[ ",$allow_skip," == *",$c,"* ]]; then
      continue
    fi
    echo "run_pair: case $c did not pass$(grep -q "^SKIP $c:" "$work/client.out" &&
      echo " (skipped, and not in --allow_skip)")" >&2
    failed=1
  done
}

echo "client: ${client_cmd[*]}, each case in a process of its own"
for c in "${cases[@]}"; do
  run_client "$c"
done
echo "client: ${client_cmd[*]}, all cases in one process (one channel)"
run_client "$wanted"

if [ -s "$work/server.err" ] && grep -q "cancellation observed" "$work/server.err"; then
  echo "server log:"
  grep "cancellation observed" "$work/server.err" | sed 's/^/  /'
fi

if [ "$failed" != 0 ]; then
  echo "run_pair: FAILED; server stderr follows" >&2
  cat "$work/server.err" >&2
  exit 1
fi
exit 0
