# Shared by peer_selftest.sh and tests/interop/run_pair.sh (sourced, not run): the grpc-js
# availability check, how a PROGRAM is started, and the scratch directory that also stops the
# server on exit.

# Exits 77 (skipped) when node or DIR/node_modules/@grpc/grpc-js is missing.
skip_unless_node() {
  if ! command -v node >/dev/null; then
    echo "SKIP: node is not installed"
    exit 77
  fi
  if [ ! -d "$1/node_modules/@grpc/grpc-js" ]; then
    echo "SKIP: $1/node_modules is missing; run 'npm ci' there (./dev.sh setup does)"
    exit 77
  fi
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
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
