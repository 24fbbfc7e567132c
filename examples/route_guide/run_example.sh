#!/usr/bin/env bash
# Runs the route guide server on a free port and compares the client's output with the expected.
set -euo pipefail
server=$1
client=$2
expected=$3
log=$(mktemp)
out=$(mktemp)
"$server" --port 0 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log" "$out"' EXIT
for _ in $(seq 600); do
  port=$(sed -n 's/^route guide server listening on \([0-9]*\)$/\1/p' "$log")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "${port:-}" ] || { echo "server did not start"; cat "$log"; exit 1; }
"$client" --target "127.0.0.1:$port" >"$out"
diff -u "$expected" "$out" || { echo "unexpected client output (above)"; exit 1; }
kill -TERM $pid
wait $pid
echo "ok"
