#!/usr/bin/env bash
# Starts rill_faulty_server (user code throwing on a third of its calls), runs CLIENT against
# it, stops the server and checks both sides: the client saw only OK and UNKNOWN (both), the
# server threw where it should have and is still alive to shut down cleanly.
#
#   run_faulty.sh --server <rill_faulty_server> --client <program or .js> [--calls N]
set -euo pipefail
source "$(dirname "$0")/../peers/pair_common.sh"

server="" client="" calls=300
while [ $# -gt 0 ]; do
  case "$1" in
    --server) server=$2; shift 2 ;;
    --client) client=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
case "$client" in
  *.js) command -v node >/dev/null || { echo "FAIL: node is not installed"; exit 1; } ;;
esac

start_server "$server" --port=0

command_for "$client" client_cmd
status=0
"${client_cmd[@]}" --server_host=127.0.0.1 --server_port="$port" --calls="$calls" || status=$?

kill -TERM "$server_pid"
server_status=0
wait "$server_pid" || server_status=$?
server_pid=""
cat "$work/server.out"
cat "$work/server.err" >&2
if [ "$server_status" != 0 ]; then
  echo "FAIL: the server exited with $server_status"; exit 1
fi
threw=$(sed -n 's/^served [0-9]* calls, threw in \([0-9]*\) .*/\1/p' "$work/server.out")
if [ -z "$threw" ] || [ "$threw" = 0 ]; then
  echo "FAIL: the server threw in no call"; exit 1
fi
if [ "$status" != 0 ]; then
  echo "FAIL: the client saw statuses other than OK and UNKNOWN, or not both"; exit 1
fi
echo PASS
