#!/usr/bin/env bash
# One rill channel over three interop servers of different implementations at once: rill's,
# libgrpc++'s and grpcio's, each on a loopback port of its own. lb_client makes the calls and
# counts who answered each (ClientContext::peer()); this script starts, stops and restarts the
# servers around it.
#
#   run_lb.sh --phase PHASE --client LB_CLIENT --rill_server PROGRAM --cpp_server PROGRAM
#             --python_server PROGRAM
#
# PHASE is one of
#   spread          round_robin over the three: once each answered, 3,000 calls one after
#                   another split 1,000 ± 5 % each;
#   restart_rill    round_robin with 8 wait-for-ready calls in flight while the rill server (the
#   restart_cpp     libgrpc++ one, the grpcio one) is stopped with SIGTERM and, 1 s later, started
#   restart_python  again on the same port: all three answer in the last 1.5 s of the run (which
#                   ends 3 s after the restart), and no call fails. A stopped libgrpc++ or
#                   grpcio server (gRPC C-core) ends calls that had reached it but no handler
#                   yet with CANCELLED, so against those the method has a retry policy listing
#                   CANCELLED; against rill's the calls only wait for ready;
#   pick_first      pick_first over "ipv4:<closed port>,<rill>,<cpp>": every call goes to the
#                   rill server until it is stopped, then to the libgrpc++ server.
#
# Every server gets --use_tls=false and --port, and must print `listening on <port>`. Without
# grpcio (python3 -c 'import grpc') the script exits 77 (skipped), or 1 (failed) when
# RILL_REQUIRE_PEERS is set. Stops every server it started (by PID) on exit.
set -euo pipefail

phase=""
client=""
declare -A program=()
while [ $# -gt 0 ]; do
  case "$1" in
    --phase) phase=$2; shift 2 ;;
    --client) client=$2; shift 2 ;;
    --rill_server) program[rill]=$2; shift 2 ;;
    --cpp_server) program[cpp]=$2; shift 2 ;;
    --python_server) program[python]=$2; shift 2 ;;
    *) echo "run_lb: unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [ -z "$phase" ] || [ -z "$client" ] || [ ${#program[@]} != 3 ]; then
  echo "usage: run_lb.sh --phase PHASE --client LB_CLIENT --rill_server PROGRAM" \
       "--cpp_server PROGRAM --python_server PROGRAM" >&2
  exit 2
fi

# shellcheck source=tests/peers/pair_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../peers/pair_common.sh"

if ! /usr/bin/python3 -c 'import grpc' 2>/dev/null; then
  if [ -n "${RILL_REQUIRE_PEERS:-}" ] && [ "${RILL_REQUIRE_PEERS}" != 0 ]; then
    echo "FAIL: grpcio (python3-grpcio) is not installed, and RILL_REQUIRE_PEERS is set"
    exit 1
  fi
  echo "SKIP: grpcio (python3-grpcio) is not installed (with RILL_REQUIRE_PEERS=1 this fails)"
  exit 77
fi

declare -A pid=() port=()
client_pid=""

# Stops server $1 (SIGTERM, SIGKILL after 10 s) and waits for it.
stop_server() {
  local p=${pid[$1]:-}
  [ -n "$p" ] || return 0
  stop_process "$p" 100
  pid[$1]=""
}

stop_everything() {
  local name
  for name in "${!pid[@]}"; do stop_server "$name"; done
  if [ -n "$client_pid" ] && kill -0 "$client_pid" 2>/dev/null; then
    kill -KILL "$client_pid" 2>/dev/null || true
    wait "$client_pid" 2>/dev/null || true
  fi
  cleanup  # pair_common.sh's: removes $work
}
trap stop_everything EXIT
trap 'exit 143' TERM INT  # ctest's timeout: still stop the servers

# Starts server $1 on port $2 (0: a free one) and waits up to 30 s for `listening on <port>`;
# sets port[$1] and pid[$1]. Its output goes to $work/$1.<n>.{out,err}.
starts=0
start() {
  local name=$1 wanted=$2 cmd out p=""
  starts=$((starts + 1))
  out="$work/$name.$starts"
  command_for "${program[$name]}" cmd
  : >"$out.out"  # there before the loop below reads it
  "${cmd[@]}" --port="$wanted" --use_tls=false >"$out.out" 2>"$out.err" &
  pid[$name]=$!
  for _ in $(seq 300); do
    p=$(sed -n 's/^listening on \([0-9]\+\)$/\1/p' "$out.out" | head -n 1)
    [ -n "$p" ] && break
    if ! kill -0 "${pid[$name]}" 2>/dev/null; then
      echo "FAIL: the $name server exited before listening:"
      cat "$out.err"
      exit 1
    fi
    sleep 0.1
  done
  if [ -z "$p" ]; then
    echo "FAIL: the $name server did not print 'listening on <port>' within 30 s:"
    cat "$out.err"
    exit 1
  fi
  if [ "$wanted" != 0 ] && [ "$p" != "$wanted" ]; then
    echo "FAIL: the $name server listens on $p, not on $wanted"
    exit 1
  fi
  port[$name]=$p
  echo "$name server (pid ${pid[$name]}) listening on $p"
}

# Waits up to 60 s for file $1 while the client runs.
wait_for_file() {
  for _ in $(seq 600); do
    [ -e "$1" ] && return 0
    if ! kill -0 "$client_pid" 2>/dev/null; then
      echo "FAIL: the client exited early:"
      cat "$work/client.out"
      exit 1
    fi
    sleep 0.1
  done
  echo "FAIL: the client did not get ready within 60 s:"
  cat "$work/client.out"
  exit 1
}

# Runs the client with ARGS... in the background, output in $work/client.out.
start_client() {
  timeout --kill-after=5 240 "$client" "$@" >"$work/client.out" 2>&1 &
  client_pid=$!
}

# Waits for the client and passes on its verdict.
finish_client() {
  local status=0
  wait "$client_pid" || status=$?
  client_pid=""
  sed 's/^/  /' "$work/client.out"
  if [ "$status" != 0 ]; then
    echo "run_lb: $phase FAILED (the client exited with $status); server stderr follows" >&2
    for f in "$work"/*.err; do
      echo "--- $(basename "$f")" >&2
      cat "$f" >&2
    done
    exit 1
  fi
  echo "run_lb: $phase passed"
  exit 0
}

# A loopback port nothing listens on (bound and released at once).
closed_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

for name in rill cpp python; do start "$name" 0; done
all="${port[rill]},${port[cpp]},${port[python]}"
target="ipv4:127.0.0.1:${port[rill]},127.0.0.1:${port[cpp]},127.0.0.1:${port[python]}"

case "$phase" in
  spread)
    start_client --target="$target" --policy=round_robin --expect="$all" --calls=3000
    finish_client
    ;;
  restart_rill | restart_cpp | restart_python)
    victim=${phase#restart_}
    # A libgrpc++ or grpcio server (gRPC C-core) that is shut down ends the calls it has
    # received but not yet handed to a handler with status CANCELLED, which no client can tell
    # from a cancellation by the application. Against those servers the method has a retry
    # policy that lists CANCELLED, and no call may fail; rill's server finishes such calls, so
    # there the calls only wait for ready.
    retry=()
    [ "$victim" = rill ] || retry=(--retry_codes=CANCELLED,UNAVAILABLE)
    start_client --target="$target" --policy=round_robin --expect="$all" --threads=8 \
      --ready_file="$work/ready" --stop_file="$work/stop" --recent="$all" --recent_ms=1500 \
      "${retry[@]}"
    wait_for_file "$work/ready"
    sleep 1
    echo "stopping the $victim server (SIGTERM)"
    stop_server "$victim"
    sleep 1
    start "$victim" "${port[$victim]}"
    sleep 3
    touch "$work/stop"
    finish_client
    ;;
  pick_first)
    closed=$(closed_port)
    start_client --target="ipv4:127.0.0.1:$closed,127.0.0.1:${port[rill]},127.0.0.1:${port[cpp]}" \
      --policy=pick_first --expect="${port[rill]}" --threads=1 --ready_file="$work/ready" \
      --stop_file="$work/stop" --order="${port[rill]},${port[cpp]}" --recent="${port[cpp]}" \
      --recent_ms=1500
    wait_for_file "$work/ready"
    sleep 1
    echo "stopping the rill server (SIGTERM)"
    stop_server rill
    sleep 3
    touch "$work/stop"
    finish_client
    ;;
  *)
    echo "run_lb: unknown phase: $phase" >&2
    exit 2
    ;;
esac
