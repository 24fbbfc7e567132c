# Shared by the benchmark scripts that drive BenchmarkService servers with h2load
# (bench/side_by_side/run.sh and user_sys.sh, bench/latency/run.sh, scaling.sh and
# burst_trace.sh, bench/allocators.sh; sourced, not run). Uses $grpc_proto (the standard gRPC protos, Debian's grpc-proto) and, for the
# servers, $server_pid and $server_port.

# A gRPC message: the 5-byte prefix (uncompressed, big-endian length) and the serialized message
# of type grpc.testing.$1 with the text-format fields read from stdin.
grpc_encode() {
  protoc --encode="grpc.testing.$1" -I "$grpc_proto" "$grpc_proto/grpc/testing/messages.proto" |
    python3 -c 'import sys, struct; m = sys.stdin.buffer.read(); sys.stdout.buffer.write(b"\0" + struct.pack(">I", len(m)) + m)'
}

# N zero bytes in protobuf text format.
text_zeros() { python3 -c "import sys; sys.stdout.write('\\\\000' * $1)"; }

# write_request SIZE FILE: a UnaryCall request with SIZE payload bytes asking for SIZE back.
write_request() {
  { printf 'response_size: %d\npayload { body: "' "$1"; text_zeros "$1"; printf '" }\n'; } |
    grpc_encode SimpleRequest > "$2"
}

# await_listening LOG NAME [TENTHS]: waits (default 10 s) for the server $server_pid to print
# `listening on <port>` to LOG and sets server_port. Returns 1, with the log on stderr, when the
# server exits or never says it.
await_listening() {
  local log=$1 name=$2 tenths=${3:-100}
  for _ in $(seq 1 "$tenths"); do
    if grep -q '^listening on ' "$log" 2> /dev/null; then
      server_port=$(sed -n 's/^listening on //p' "$log")
      return 0
    fi
    kill -0 "$server_pid" 2> /dev/null || break
    sleep 0.1
  done
  echo "server $name did not start:" >&2
  cat "$log" >&2
  return 1
}

stop_server() {
  kill "$server_pid" 2> /dev/null || true
  wait "$server_pid" 2> /dev/null || true
  server_pid=""
}

# The first two CPUs this process may use, "FIRST SECOND" (the first twice on a one-CPU
# machine): the server's and the load's.
first_two_cpus() {
  python3 -c \
    'import os; c = sorted(os.sched_getaffinity(0)); print(c[0], c[1] if len(c) > 1 else c[0])'
}

# --- quiet CPUs and what was measured -----------------------------------------------------------

# Idle (with iowait) jiffies of CPUs $1 and $2 (one CPU when they are the same) so far. Idle is
# what tells busy time: the kernel measures it exactly on a tickless kernel, where the user and
# system figures are sampled at each tick (and h2load's 10 ms pacing can alias with the tick).
cpus_idle() {
  awk -v a="cpu$1" -v b="cpu$2" '$1 == a || ($1 == b && b != a) { idle += $5 + $6 }
    END { print idle }' /proc/stat
}

# wait_quiet CPU_A CPU_B: waits, up to $max_wait seconds, until the CPUs are quiet (under 15 %
# of one CPU busy over 1.5 s) before a run starts; on a shared machine other work comes and goes.
wait_quiet() {
  local a=$1 b=$2 n i0 i1 began ended waited=0 hz
  n=$((a == b ? 1 : 2))
  hz=$(getconf CLK_TCK)
  while :; do
    began=${EPOCHREALTIME/./}
    i0=$(cpus_idle "$a" "$b")
    sleep 1.5
    i1=$(cpus_idle "$a" "$b")
    ended=${EPOCHREALTIME/./}
    awk -v i="$((i1 - i0))" -v us="$((ended - began))" -v n="$n" -v hz="$hz" \
      'BEGIN { exit !(n - i / hz / (us / 1e6) < 0.15) }' && break
    if ((waited >= max_wait)); then
      echo "  the CPUs stayed busy for $max_wait s; measuring anyway (see the run's other CPU %)" >&2
      break
    fi
    ((waited == 0)) && echo "  waiting for the CPUs to be quiet" >&2
    sleep 2
    waited=$((waited + 3))
  done
}

# The commit of the source tree $build was configured from (the binaries may be older than it:
# the build is not checked), "+changes" when that tree has uncommitted changes.
build_commit() {
  local source commit
  source=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2> /dev/null)
  [[ -n $source ]] || source=$repo
  commit=$(git -C "$source" rev-parse --short HEAD 2> /dev/null) || { echo '?'; return; }
  git -C "$source" diff --quiet HEAD 2> /dev/null || commit+="+changes"
  echo "$commit"
}
