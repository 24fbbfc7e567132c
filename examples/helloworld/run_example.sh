#!/usr/bin/env bash
# Runs the greeter server on a free port and checks the client's printed reply.
set -euo pipefail
server=$1
client=$2
log=$(mktemp)
"$server" --port 0 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  port=$(sed -n 's/^greeter server listening on \([0-9]*\)$/\1/p' "$log")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "${port:-}" ] || { echo "server did not start"; cat "$log"; exit 1; }
reply=$("$client" --target "127.0.0.1:$port" --name rill)
[ "$reply" = "Hello rill" ] || { echo "unexpected reply: $reply"; exit 1; }
kill -TERM $pid
wait $pid
echo "ok: $reply"
