#!/usr/bin/env bash
# Server memory per idle connection and per call in flight, for rill and the peers, in one run:
# rill_bench_server (one reactor), libgrpc++ 1.51's async BenchmarkService server
# (peer_cpp_bench_server, one completion-queue thread, 1000 call objects per method so every
# held call is served) and grpc-go 1.33's TestService server (peer_go_interop_server).
#
#   bench/conn_memory.sh BUILD_DIR [--conns N] [--inflight_conns C] [--inflight_streams S]
#                        [--reps R] [--servers "rill grpcpp grpc-go"] [--rill_server PATH]
#
# BUILD_DIR is a configured release tree (`./dev.sh build release`); the script builds
# conn_memory_client, rill_bench_server, peer_cpp_bench_server and peer_go_interop in it.
# For each server and repetition a fresh server starts (pinned to the first CPU, the client to
# the second) and bench/conn_memory/conn_memory_client, with ulimit -n raised:
#   idle      N connections (default 10,000) each complete the preface and SETTINGS exchange
#             and one unary call with an empty message, then stay idle;
#             (RSS after - RSS before) / N, RSS before being that with one such connection open
#   in flight on a fresh server, C connections (default 10) are opened as above, then S calls
#             on each (default 100) are opened and held (the streaming method, one empty
#             message, no end); (RSS after - RSS with the C connections idle) / (C x S)
# RSS is the server's VmRSS, sampled after 3 s of quiet. The median of R repetitions (default 3)
# is printed as a markdown table. --rill_server measures another build's rill_bench_server
# (a copy of the binary from before a change, say) in the rill row.
set -euo pipefail

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
build=$(cd "$1" && pwd)
shift
conns=10000
inflight_conns=10
inflight_streams=100
reps=3
servers="rill grpcpp grpc-go"
rill_server=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --conns) conns=$2; shift ;;
    --inflight_conns) inflight_conns=$2; shift ;;
    --inflight_streams) inflight_streams=$2; shift ;;
    --reps) reps=$2; shift ;;
    --servers) servers=$2; shift ;;
    --rill_server) rill_server=$2; shift ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done

cmake --build "$build" --target conn_memory_client rill_bench_server peer_cpp_bench_server \
  peer_go_interop >&2
client=$build/bench/conn_memory/conn_memory_client
# Both processes hold one descriptor per connection, and a few more.
need=$((conns + 256))
ulimit -n "$need" 2> /dev/null || {
  echo "cannot raise ulimit -n to $need (hard limit $(ulimit -Hn))" >&2
  exit 1
}

read -r server_cpu client_cpu < <(python3 -c \
  'import os; c = sorted(os.sched_getaffinity(0)); print(c[0], c[1] if len(c) > 1 else c[0])')

work=$(mktemp -d /tmp/rill-conn-memory.XXXXXX)
server_pid=""
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2> /dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Starts server $1; sets server_pid, port, unary and stream.
start_server() {
  local name=$1
  case $name in
    rill)
      set -- "${rill_server:-$build/bench/benchmain/rill_bench_server}" --port=0 --reactors=1
      unary=/grpc.testing.BenchmarkService/UnaryCall
      stream=/grpc.testing.BenchmarkService/StreamingCall ;;
    grpcpp)
      set -- "$build/tests/peers/peer_cpp_bench_server" --port=0 --threads=1 --calls_per_cq=1000
      unary=/grpc.testing.BenchmarkService/UnaryCall
      stream=/grpc.testing.BenchmarkService/StreamingCall ;;
    grpc-go)
      set -- "$build/tests/peers/peer_go_interop_server" --port=0
      unary=/grpc.testing.TestService/UnaryCall
      stream=/grpc.testing.TestService/FullDuplexCall ;;
    *) echo "unknown server $name" >&2; exit 2 ;;
  esac
  taskset -c "$server_cpu" "$@" > "$work/server.out" 2> "$work/server.err" &
  server_pid=$!
  port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/^listening on //p' "$work/server.out")
    [[ -n $port ]] && break
    sleep 0.1
  done
  [[ -n $port ]] || { echo "$name did not start:" >&2; cat "$work/server.err" >&2; exit 1; }
}

stop_server() {
  kill "$server_pid" 2> /dev/null || true
  wait "$server_pid" 2> /dev/null || true
  server_pid=""
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

rows=()
for name in $servers; do
  : > "$work/idle"
  : > "$work/held"
  for rep in $(seq "$reps"); do
    # Idle connections, then calls in flight on a fresh server (memory the idle run freed
    # would otherwise serve the calls).
    for phase in "--conns=$conns --inflight_conns=0" \
                 "--conns=$inflight_conns --inflight_conns=$inflight_conns"; do
      start_server "$name"
      # shellcheck disable=SC2086
      if ! taskset -c "$client_cpu" "$client" --port="$port" --pid="$server_pid" $phase \
          --inflight_streams="$inflight_streams" --unary_path="$unary" --stream_path="$stream" \
          > "$work/client.out" 2> "$work/client.err"; then
        echo "$name, repetition $rep failed:" >&2
        cat "$work/client.out" "$work/client.err" >&2
        exit 1
      fi
      stop_server
      sed "s/^/$name #$rep  /" "$work/client.out" >&2
      if [[ $phase == --conns=$conns\ * ]]; then
        sed -n 's/^idle .*kib_per_conn=\([0-9.-]*\).*/\1/p' "$work/client.out" >> "$work/idle"
      fi
      sed -n 's/^inflight .*kib_per_call=\([0-9.-]*\).*/\1/p' "$work/client.out" >> "$work/held"
    done
  done
  rows+=("| $name | $(median < "$work/idle") | $(median < "$work/held") |")
done

echo
echo "bench/conn_memory.sh: server VmRSS growth, median of $reps; $conns idle connections," \
  "$((inflight_conns * inflight_streams)) calls in flight on $inflight_conns connections"
echo
echo "| server | KiB per idle connection | KiB per call in flight |"
echo "| --- | ---: | ---: |"
printf '%s\n' "${rows[@]}"
