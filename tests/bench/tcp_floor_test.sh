#!/usr/bin/env bash
# bench/tcp_floor, the TCP floor of the side-by-side table: for requests and responses of several
# sizes (equal and not), the client completes exchanges over two connections and the server's
# own count (printed on SIGUSR1) agrees with it: at least what the client completed, and no more
# than that plus the requests still in flight.
#
#   tcp_floor_test.sh TCP_FLOOR_BINARY
set -euo pipefail
floor=$1
work=$(mktemp -d)
pid=""
trap '[[ -z $pid ]] || kill "$pid" 2> /dev/null; rm -rf "$work"' EXIT

conns=2
for shape in "1 1 100" "8192 8192 6" "1048576 1048576 4" "100 70000 3"; do
  read -r req resp inflight <<< "$shape"
  "$floor" server --port=0 --req="$req" --resp="$resp" > "$work/server.log" &
  pid=$!
  for _ in $(seq 1 100); do
    grep -q '^listening on ' "$work/server.log" && break
    sleep 0.05
  done
  port=$(sed -n 's/^listening on //p' "$work/server.log")
  [[ -n $port ]] || { echo "tcp_floor server did not start"; cat "$work/server.log"; exit 1; }
  done_by_client=$("$floor" client --port="$port" --req="$req" --resp="$resp" --conns="$conns" \
    --inflight="$inflight" --seconds=0.3 | sed -n 's/^rpcs=//p')
  kill -USR1 "$pid"
  for _ in $(seq 1 100); do
    grep -q '^rpcs=' "$work/server.log" && break
    sleep 0.05
  done
  served=$(sed -n 's/^rpcs=\([0-9]*\) cpu_us=[0-9]*$/\1/p' "$work/server.log")
  kill "$pid"
  wait "$pid" || { echo "tcp_floor server failed"; exit 1; }
  pid=""
  echo "req=$req resp=$resp inflight=$inflight: client completed $done_by_client, server answered $served"
  if ! ((done_by_client > 0 && served >= done_by_client &&
         served <= done_by_client + conns * inflight)); then
    echo "FAIL: the counts disagree"
    exit 1
  fi
done
echo PASS
