#!/usr/bin/env bash
# Soak: clients of several gRPC implementations call one rill server at once for a bounded
# time, mixing unary, streaming, cancelled and deadline-exceeded calls, while the server's RSS
# is sampled; then the server gets SIGTERM with the load still running.
#
#   run_soak.sh --server RILL_SERVER --go_client SOAK_CLIENT [--cpp_client C] [--rill_client C]
#               [--python_client SH] [--node_client JS] [--duration SECONDS] [--sigterm_at S]
#               [--workers N] [--rss_every S]
#
# The load: the grpc-go soak client (tests/peers/go/soak_client, --workers callers over four
# connections; about one call in six cancelled and one in six past its deadline), and every
# other client given, run over and over with interop cases that cover the same mix
# (cancel_after_begin, cancel_after_first_response, timeout_on_sleeping_server among them).
# At --sigterm_at seconds (default: 30 s before the end) the server gets SIGTERM and the soak
# client SIGUSR1 (its drain phase). Prints the server's RSS every --rss_every seconds, each
# client's outcomes by case/kind and status, and passes when:
#   - before the SIGTERM no call of any client failed (the intended cancels and deadlines
#     aside: the clients check those statuses themselves), in particular none UNAVAILABLE;
#   - after it, every call got an answer (a status; none hit the soak client's 20 s guard) and
#     the server exited within 10 s.
# CI runs it for 20 s; the closing measurement used --duration 630 --sigterm_at 600.
set -euo pipefail
source "$(dirname "$0")/../peers/pair_common.sh"

server=""
go_client=""
other_clients=()
duration=20
sigterm_at=""
workers=32
rss_every=30
while [ $# -gt 0 ]; do
  case "$1" in
    --server) server=$2; shift 2 ;;
    --go_client) go_client=$2; shift 2 ;;
    --cpp_client | --rill_client | --python_client) other_clients+=("$2"); shift 2 ;;
    --node_client)
      skip_unless_node "$(dirname "$2")"
      other_clients+=("$2"); shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --sigterm_at) sigterm_at=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --rss_every) rss_every=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ -n "$server" ] && [ -n "$go_client" ] || { echo "--server and --go_client are required" >&2; exit 2; }
[ -n "$sigterm_at" ] || sigterm_at=$((duration > 40 ? duration - 30 : duration * 3 / 4))

# The interop cases the other clients loop over: unary and streaming calls, cancellations,
# deadlines, statuses and metadata.
cases=empty_unary,large_unary,client_streaming,server_streaming,ping_pong,empty_stream,\
timeout_on_sleeping_server,cancel_after_begin,cancel_after_first_response,custom_metadata,\
status_code_and_message

rss_mib() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo gone; }

start_server "$server" --port=0 --use_tls=false
echo "server pid $server_pid port $port; load: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)

"$go_client" --server_port="$port" --duration="${duration}s" --workers="$workers" --channels=4 \
  --report="${rss_every}s" >"$work/go.out" 2>"$work/go.err" &
go_pid=$!

# Each other client: its runs before the SIGTERM (file steady.N) and after (drain.N).
loop_pids=()
index=0
for client in "${other_clients[@]}"; do
  index=$((index + 1))
  (
    command_for "$client" cmd
    while [ $(($(date +%s) - start)) -lt "$duration" ]; do
      timeout 120 "${cmd[@]}" --server_host=127.0.0.1 --server_port="$port" --use_tls=false \
        --test_case="$cases" >"$work/run.$index" 2>&1 || echo "EXIT $? ($client)" >>"$work/run.$index"
      # A run that ended after the SIGTERM (even one begun before it) counts with the drain.
      phase=steady
      [ -f "$work/sigterm" ] && phase=drain
      cat "$work/run.$index" >>"$work/$phase.$index"
      [ "$phase" = drain ] && sleep 1
    done
  ) &
  loop_pids+=($!)
done

echo "| t (s) | server RSS (MiB) | load |"
echo "| --- | --- | --- |"
next_rss=0
server_exit=""
while kill -0 "$go_pid" 2>/dev/null; do
  now=$(($(date +%s) - start))
  if [ "$now" -ge "$next_rss" ]; then
    echo "| $now | $(rss_mib "$server_pid") | $(cut -d' ' -f1 /proc/loadavg) |"
    next_rss=$((next_rss + rss_every))
  fi
  if [ ! -f "$work/sigterm" ] && [ "$now" -ge "$sigterm_at" ]; then
    rss_at_term=$(rss_mib "$server_pid")
    touch "$work/sigterm"
    kill -USR1 "$go_pid"
    # The soak client files a call under the phase it sees when the call ends, and its signal
    # handler runs a moment after the signal: SIGTERM reached the server first in about one run
    # in ten, the server's GOAWAY sent the client's channels reconnecting to a closed port, and
    # the calls refused before the handler ran counted as steady-phase failures (hundreds of
    # UNAVAILABLE). The server is signalled once the client says it is draining.
    for _ in $(seq 100); do
      grep -q '^drain phase from' "$work/go.out" && break
      sleep 0.05
    done
    kill -TERM "$server_pid"
    term_time=$(date +%s.%N)
    echo "SIGTERM to the server at t=$now s (RSS $rss_at_term MiB)"
  fi
  if [ -f "$work/sigterm" ] && [ -z "$server_exit" ] && ! kill -0 "$server_pid" 2>/dev/null; then
    wait "$server_pid" && code=0 || code=$?
    server_exit=$(awk -v a="$term_time" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    echo "server exited (code $code) ${server_exit} s after SIGTERM"
    server_pid=""
  fi
  sleep 0.2
done
go_code=0
wait "$go_pid" || go_code=$?
for pid in "${loop_pids[@]}"; do wait "$pid" || true; done
if [ -z "$server_exit" ] && [ -n "$server_pid" ]; then
  for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$server_pid" 2>/dev/null; then
    server_exit="not within the soak"
  else
    wait "$server_pid" || true
    server_exit=$(awk -v a="$term_time" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    server_pid=""
  fi
  echo "server exit after SIGTERM: $server_exit"
fi

failed=0
echo
echo "grpc-go soak client (exit $go_code): calls by phase, kind and status"
grep -E '^(count|unexpected|drain phase|failed call)' "$work/go.out" || { cat "$work/go.out" "$work/go.err"; failed=1; }
[ "$go_code" = 0 ] || failed=1
index=0
for client in "${other_clients[@]}"; do
  index=$((index + 1))
  for phase in steady drain; do
    f="$work/$phase.$index"
    [ -f "$f" ] || continue
    pass=$(grep -c '^PASS ' "$f" || true)
    fail=$(grep -c '^FAIL ' "$f" || true)
    echo "$(basename "$client") $phase: $pass cases passed, $fail failed"
    if [ "$phase" = steady ] && [ "$fail" -gt 0 ]; then
      grep -E '^(FAIL|EXIT)' "$f" | sort | uniq -c | head -20
      failed=1
    fi
    if [ "$phase" = drain ]; then
      grep '^FAIL ' "$f" | sed 's/^FAIL \([a-z_]*\):.*/\1/' | sort | uniq -c | head -20 || true
      # A client run killed by `timeout` waited on a call that never got an answer.
      if grep -q '^EXIT 124' "$f"; then echo "a client run hung after the SIGTERM"; failed=1; fi
    fi
  done
done
if ! awk -v s="$server_exit" 'BEGIN { exit !(s != "" && s + 0 <= 10 && s ~ /^[0-9.]+$/) }'; then
  echo "FAIL: the server did not exit within 10 s of SIGTERM ($server_exit)"
  failed=1
fi
[ "$failed" = 0 ] && echo "PASS soak" || echo "FAIL soak"
exit "$failed"
