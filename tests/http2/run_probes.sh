#!/usr/bin/env bash
# Runs every h2_prober probe against fresh servers and prints the hardening table (Markdown):
# one server process per probe, so that each RSS growth starts from an idle server, and the
# handler counts come from the server's exit line.
#
#   tests/http2/run_probes.sh build/test                 # rill, libgrpc++ and grpc-go servers
#   tests/http2/run_probes.sh build/test rill go         # some of them
#   PROBES="cancel_rate" tests/http2/run_probes.sh build/test rill
#
# Servers: rill (rill_interop_server), rill_stubborn (the same, its handlers ignoring
# cancellation), rill_capped and rill_stubborn_capped (those two with a server-wide handler cap
# of 1000), cpp (peer_cpp_interop_server, libgrpc++ 1.51), go
# (peer_go_interop_server, grpc-go 1.33); the build must have RILL_BUILD_PEERS on for the last
# two. The load average at the start of each probe is in the last column: the numbers are only
# comparable on an otherwise idle machine.
set -euo pipefail

build=${1:?usage: run_probes.sh BUILD_DIR [rill|cpp|go ...]}
shift
servers=("$@")
[ ${#servers[@]} -gt 0 ] || servers=(rill rill_stubborn cpp go)

prober="$build/tests/http2/h2_prober"
declare -A binary=(
  [rill]="$build/tests/interop/rill_interop_server"
  [rill_stubborn]="$build/tests/interop/rill_interop_server"
  [rill_capped]="$build/tests/interop/rill_interop_server"
  [rill_stubborn_capped]="$build/tests/interop/rill_interop_server"
  [cpp]="$build/tests/peers/peer_cpp_interop_server"
  [go]="$build/tests/peers/peer_go_interop_server"
)
declare -A label=([rill]=rill [rill_stubborn]="rill, stubborn handlers"
  [rill_capped]="rill, server cap 1000" [rill_stubborn_capped]="rill, stubborn, server cap 1000"
  [cpp]="libgrpc++ 1.51" [go]="grpc-go 1.33")
# rill_stubborn: handlers wait out interval_us even when their call is cancelled, as the
# libgrpc++ and grpc-go peers' handlers do (theirs sleep); rill's own stop with the call.
# *_capped: at most 1000 handlers running on the whole server (ServerOptions::
# max_running_handlers; rill's default limits only each connection, to 1000).
declare -A extra=([rill_stubborn]="--test_only_sleep_through_cancel=true"
  [rill_capped]="--max_running_handlers=1000"
  [rill_stubborn_capped]="--test_only_sleep_through_cancel=true --max_running_handlers=1000")

if [ -n "${PROBES:-}" ]; then
  IFS=';' read -r -a probes <<<"$PROBES"
else
  probes=("rapid_reset --conns=1" "rapid_reset --conns=8"
    "rapid_reset --conns=1 --reset_delay_ms=2" "rapid_reset --conns=8 --reset_delay_ms=2"
    "held_streams --streams=5000"
    "continuation_flood" "metadata" "ping_flood" "settings_flood" "window_update_flood"
    "priority_flood" "empty_data_flood" "silent --conns=500" "preface_silent --conns=200"
    "fd_exhaustion" "cancel_rate")
fi

ulimit -n 4096 2>/dev/null || true
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT

echo "| server | probe | outcome | RSS growth peak / after (MiB) | GOAWAY | good call after | StreamingOutputCall handlers started / peak running | load |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for server in "${servers[@]}"; do
  exe=${binary[$server]:?unknown server $server}
  for probe in "${probes[@]}"; do
    out="$workdir/out"
    err="$workdir/err"
    : >"$out"  # emptied before the loop below reads it (the last server's port is in it)
    # shellcheck disable=SC2086
    "$exe" --port=0 --use_tls=false ${extra[$server]:-} >"$out" 2>"$err" &
    pid=$!
    port=""
    for _ in $(seq 200); do
      port=$(sed -n 's/^listening on \([0-9]*\).*/\1/p' "$out")
      [ -n "$port" ] && break
      sleep 0.05
    done
    if [ -z "$port" ]; then
      echo "| ${label[$server]} | $probe | server did not start | | | | | |"
      kill -KILL "$pid" 2>/dev/null || true
      continue
    fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    # shellcheck disable=SC2086
    row=$("$prober" --port="$port" --pid="$pid" --probe=$probe 2>>"$workdir/prober.log" ||
      echo "| $probe | prober failed (exit $?) | | | |")
    alive=yes
    kill -0 "$pid" 2>/dev/null || alive=no
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    handlers=$(sed -n 's/^StreamingOutputCall handlers started \([0-9]*\), peak running \([0-9]*\).*/\1 \/ \2/p' "$err")
    [ "$alive" = yes ] || handlers="SERVER DIED"
    echo "| ${label[$server]} ${row} ${handlers:-no exit line} | $load |"
  done
done
if [ -n "${PROBER_LOG:-}" ]; then cp "$workdir/prober.log" "$PROBER_LOG"; fi
