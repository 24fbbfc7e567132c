# Shared by the scripts that run a server and a client (peer_selftest.sh, tests/interop/
# run_pair.sh and run_faulty.sh, tests/services/run_against_server.sh; sourced, not run): the
# grpc-js availability check, how a PROGRAM is started, starting the server and reading its
# port, and the scratch directory that also stops the server on exit.

# Exits 77 (skipped) when node or DIR/node_modules/@grpc/grpc-js is missing, or 1 (failed) when
# RILL_REQUIRE_PEERS is set (CI sets it: a missing peer must not pass as a skip).
skip_unless_node() {
  local missing=""
  if ! command -v node >/dev/null; then
    missing="node is not installed"
  elif [ ! -d "$1/node_modules/@grpc/grpc-js" ]; then
    missing="$1/node_modules is missing; run 'npm ci' there (./dev.sh setup does)"
  fi
  [ -z "$missing" ] && return 0
  if [ -n "${RILL_REQUIRE_PEERS:-}" ] && [ "${RILL_REQUIRE_PEERS}" != 0 ]; then
    echo "FAIL: $missing, and RILL_REQUIRE_PEERS is set"
    exit 1
  fi
  echo "SKIP: $missing (with RILL_REQUIRE_PEERS=1 this fails)"
  exit 77
}

# The command line that runs PROGRAM, in the array named by $2.
command_for() {
  local -n out=$2
  case "$1" in
    *.js) out=(node "$1") ;;
    *.sh) out=(bash "$1") ;;
    *) out=("$1") ;;
  esac
}

# Sets $work to a fresh directory and, on exit, stops $server_pid (TERM, then KILL after 5 s)
# and removes $work.
work=$(mktemp -d)
server_pid=""

# Stops process $1: SIGTERM, SIGKILL if it is still there after $2 tenths of a second (default
# 50), and waits for it.
stop_process() {
  local p=$1 tenths=${2:-50}
  kill -TERM "$p" 2>/dev/null || true
  for _ in $(seq "$tenths"); do
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}

cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    stop_process "$server_pid"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Runs the server command ARGS... in the background (stdout and stderr in $work/server.out and
# server.err), sets $server_pid, and waits up to 30 s for its `listening on <port>` line: sets
# $port, or exits 1 with the server's stderr when it exits first or never says it.
start_server() {
  # Made here: the background job opens its redirections only once it runs, and sed below may
  # look first.
  : >"$work/server.out"
  : >"$work/server.err"
  "$@" >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/^listening on \([0-9]\+\)$/\1/p' "$work/server.out" | head -n 1)
    [ -n "$port" ] && return 0
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "FAIL: the server exited before listening:"
      cat "$work/server.err"
      exit 1
    fi
    sleep 0.1
  done
  echo "FAIL: the server did not print 'listening on <port>' within 30 s:"
  cat "$work/server.err"
  exit 1
}
