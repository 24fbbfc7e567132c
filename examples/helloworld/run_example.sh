#!/usr/bin/env bash
# Runs the greeter server on a free port and checks the client's printed reply; with a third
# argument (a directory holding ca.pem, server.pem and server.key), once more over TLS.
set -euo pipefail
server=$1
client=$2
certs=${3:-}
if [ -n "$certs" ]; then
  "$0" "$server" "$client"
  server_tls=(--tls --cert "$certs/server.pem" --key "$certs/server.key")
  client_tls=(--tls --ca "$certs/ca.pem")
else
  server_tls=()
  client_tls=()
fi
log=$(mktemp)
"$server" --port 0 "${server_tls[@]}" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  port=$(sed -n 's/^greeter server listening on \([0-9]*\)$/\1/p' "$log")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "${port:-}" ] || { echo "server did not start"; cat "$log"; exit 1; }
reply=$("$client" --target "localhost:$port" --name rill "${client_tls[@]}")
[ "$reply" = "Hello rill" ] || { echo "unexpected reply: $reply"; exit 1; }
kill -TERM $pid
wait $pid
echo "ok${certs:+ over TLS}: $reply"
