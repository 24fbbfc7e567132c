#!/usr/bin/env bash
# Side by side on one machine, in one run: rill's BenchmarkService server against libgrpc++'s
# (async completion-queue server, 1.51) and grpc-go's (1.33, tests/peers/go/bench_server) with
# nghttpd serving the same response bytes as the plain HTTP/2 floor, under h2load; and rill's
# own client (benchmain -server=...) against the rill, libgrpc++ and grpc-go servers. For the
# 8 KiB and 1 MiB workloads, also the TCP floor: bench/tcp_floor's server and client moving the same
# request and response bytes over loopback TCP with no protocol above the socket (one large read
# per readable event, one sendmsg of every owed response from one static buffer), the server CPU
# no implementation using read and write system calls gets under.
#
#   bench/side_by_side/run.sh BUILD_DIR [--tls] [--quick] [--reps N] [--duration SECONDS]
#                             [--out FILE]
#
# BUILD_DIR is a configured release tree (`./dev.sh build release`); the script first builds its
# side_by_side_deps target: benchmain, rill_bench_server, alloc_counter, copy_counter and the
# peers peer_cpp_bench_server and peer_go_bench_server (which `./dev.sh bench` does not build). Needs h2load and nghttpd
# (nghttp2-client, nghttp2-server), taskset, protoc, python3, perf (`./dev.sh setup`) and grpc-proto
# ($RILL_GRPC_PROTO_ROOT, default /usr/share/grpc-proto).
#
# Every server runs pinned to CPU 0 with one thread (rill: one reactor; libgrpc++: one
# completion-queue thread; grpc-go: GOMAXPROCS=1; nghttpd: one worker). The load runs pinned to CPU 1 ("split") and,
# for the single-core case, on CPU 0 next to the server ("shared"). Each measurement starts a
# fresh server, warms it up, then measures for --duration seconds; it is repeated --reps times
# (interleaved) and the median of each figure is reported:
#
#   req/s          completed RPCs per second, as the load generator counts them
#   CPU µs/RPC     server utime+stime (/proc/<pid>/stat) over the measured window / RPCs
#   allocs/RPC     server heap allocations over the window / RPCs: rill_bench_server counts its
#                  own (written to a file on SIGUSR1); libgrpc++'s server runs with LD_PRELOAD=
#                  liballoc_counter.so; nghttpd (jemalloc) and grpc-go (Go's own heap) are not
#                  counted
#   RSS MiB        server VmRSS at the end of the window
#   syscalls/RPC   system calls entered on the server's CPU over the window / RPCs (perf's
#                  raw_syscalls tracepoint, `perf stat -C`), with the reads (read, readv, recvmsg,
#                  recvfrom), writes (write, writev, sendmsg, sendto) and waits (epoll_wait,
#                  epoll_pwait, poll, ppoll, futex) among them. Counted by CPU because `perf stat
#                  -p` counts nothing on this kernel; so only with split pinning (the server alone
#                  on its CPU; anything else running there is counted too: measure on a quiet
#                  machine), "n/a" otherwise or when perf cannot count
#
#   copies/B       with 1 MiB payloads only: bytes the server copied in calls of >= 4 KiB
#                  (memcpy/memmove through glibc, counted by LD_PRELOAD=libcopy_counter.so,
#                  bench/copy_counter) per payload byte it received and sent; "client copies/B"
#                  the same for rill's client (benchmain) over its whole run, warm-up included.
#                  grpc-go copies without glibc: not counted
#
# Workloads: unary 1 B (1 connection x 100 streams, and 50 x 20), unary 8 KiB (1 x 6), unary
# 1 MiB (1 x 4), request and response payloads of that size; streaming ping-pong 1 B (1 x 100)
# and 1 MiB (1 x 1), rill's client only: h2load cannot ping-pong. h2load sends a real gRPC request (5-byte prefix
# + a protoc-serialized SimpleRequest) to /grpc.testing.BenchmarkService/UnaryCall.
#
# --tls measures TLS instead (split pinning only), with the certificates of tests/tls/certs
# (ECDSA P-256; h2load and the servers negotiate TLS 1.3, X25519, TLS_AES_256_GCM_SHA384),
# next to the same servers in plaintext:
#
#   tls-unary-1B-1x100   h2load over https, 1 connection x 100 streams, against rill-tls and
#                        grpcpp-tls (rill and grpcpp: the same in plaintext)
#   tls-new-conn         new connections: h2load -c 100 -n 100 (one RPC per connection, each a
#                        full TLS handshake) in a loop for --duration; "CPU µs/RPC" is then
#                        server CPU per connection (handshake, one RPC, close), and
#                        1e6 / that = the connections per second one server core sustains.
#                        s_server: `openssl s_server` with the same certificate, driven by
#                        `openssl s_time -new` (bare handshakes, no HTTP/2, no RPC); rill and
#                        grpcpp: the same loop in plaintext
#   tls-streaming-1MiB-1x1  rill's client, streaming ping-pong of 1 MiB messages both ways on
#                        one stream, over TLS and plaintext. The servers run with
#                        LD_PRELOAD=libcopy_counter.so (bench/copy_counter): "copies/B" is the
#                        bytes the server process copied in calls of >= 4 KiB (memcpy/memmove,
#                        OpenSSL's included) per payload byte it received and sent
#
# Prints a markdown table (also written to --out, default BUILD_DIR/side_by_side.md, or
# side_by_side_tls.md with --tls), with the raw measurements beside it (.tsv) and a bar chart of
# server CPU per RPC (.png, bench/side_by_side/plot.py). The default run (3 repetitions of 3 s)
# takes about 18 minutes, --tls about 6; --quick (1 repetition of 0.5 s) about 2, and is only a
# smoke test.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command_line="bench/side_by_side/run.sh $*"
repo=$(cd "$here/../.." && pwd)
source "$repo/bench/lib/grpc_load.sh"
# The standard gRPC protos (Debian's grpc-proto), as the build's RILL_GRPC_PROTO_ROOT.
grpc_proto=${RILL_GRPC_PROTO_ROOT:-/usr/share/grpc-proto}

usage() { sed -n '2,34p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
build=$(cd "$1" && pwd)
shift
reps=3
duration=3
warmup=0.5
out=""
tls=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --tls) tls=1 ;;
    --quick) reps=1; duration=0.5; warmup=0.2 ;;
    --reps) reps=$2; shift ;;
    --duration) duration=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done
out=${out:-$build/side_by_side${tls:+_tls}.md}

benchmain=$build/bench/benchmain/benchmain
rill_server=$build/bench/benchmain/rill_bench_server
peer_server=$build/tests/peers/peer_cpp_bench_server
go_server=$build/tests/peers/peer_go_bench_server
alloc_lib=$build/bench/alloc_counter/liballoc_counter.so
copy_lib=$build/bench/copy_counter/libcopy_counter.so
tcp_floor=$build/bench/tcp_floor/tcp_floor
certs=$repo/tests/tls/certs
for tool in h2load nghttpd nghttp taskset protoc python3 perf ${tls:+openssl}; do
  command -v "$tool" > /dev/null || { echo "missing $tool (./dev.sh setup installs it)" >&2; exit 1; }
done
cmake --build "$build" --target side_by_side_deps >&2
for f in "$benchmain" "$rill_server" "$peer_server" "$go_server" "$alloc_lib" "$copy_lib" \
    "$tcp_floor"; do
  [[ -x $f || -f $f ]] || { echo "missing $f after building side_by_side_deps" >&2; exit 1; }
done

# CPUs: the first two this process may use.
read -r server_cpu load_cpu < <(first_two_cpus)
pinnings=("split:$server_cpu:$load_cpu" "shared:$server_cpu:$server_cpu")
[[ -z $tls ]] || pinnings=("split:$server_cpu:$load_cpu")
[[ $server_cpu != "$load_cpu" ]] || pinnings=("shared:$server_cpu:$server_cpu")

work=$(mktemp -d /tmp/rill-side-by-side.XXXXXX)
server_pid=""
client_copy_file=""
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2> /dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# --- request and response files ---------------------------------------------------------------

for size in 1 8192 1048576; do
  write_request "$size" "$work/request-$size.bin"
  mkdir -p "$work/htdocs-$size/grpc.testing.BenchmarkService"
  { printf 'payload { body: "'; text_zeros "$size"; printf '" }\n'; } |
    grpc_encode SimpleResponse > "$work/htdocs-$size/grpc.testing.BenchmarkService/UnaryCall"
done

# --- servers ----------------------------------------------------------------------------------

# A TCP port for nghttpd, which cannot pick its own: one the kernel hands out for a bind to port
# 0, released again (a random port could be the source port of a live connection; nghttpd then
# fails with "Address already in use", and start_server tries another).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server KIND CPU SIZE [COUNT_COPIES]: sets server_pid, server_port, scheme, alloc_file
# and copy_file ("" unless COUNT_COPIES is 1: the server then runs with the copy counter).
# KIND is rill, grpcpp, grpcgo, nghttpd, tcpfloor, or rill-tls, grpcpp-tls, s_server (TLS).
start_server() {
  local kind=$1 cpu=$2 size=$3 log="$work/server.log" attempts=5 preload=""
  alloc_file="$work/allocs.$kind"
  copy_file=""
  scheme=http
  local tls_flags=()
  if [[ $kind == *-tls ]]; then
    tls_flags=(--tls_cert_file="$certs/server.pem" --tls_key_file="$certs/server.key")
    scheme=https
  fi
  # Only rill and libgrpc++ copy through glibc under the counter (nghttpd's and s_server's copies
  # are not payload copies of a gRPC server; grpc-go's bypass glibc).
  if [[ ${4:-0} == 1 && ($kind == rill* || $kind == grpcpp*) ]]; then
    copy_file="$work/copies.$kind"
    preload=$copy_lib
  fi
  while ((attempts-- > 0)); do
    rm -f "$alloc_file" "$log" ${copy_file:+"$copy_file"}
    case $kind in
      rill|rill-tls)
        LD_PRELOAD=$preload COPY_COUNTER_FILE=$copy_file \
          taskset -c "$cpu" "$rill_server" --port=0 --reactors=1 --cpus="$cpu" \
          --alloc_counter_file="$alloc_file" "${tls_flags[@]}" > "$log" 2>&1 &
        server_pid=$! ;;
      grpcpp|grpcpp-tls)
        LD_PRELOAD=$alloc_lib${preload:+:$preload} ALLOC_COUNTER_FILE=$alloc_file \
          COPY_COUNTER_FILE=$copy_file \
          taskset -c "$cpu" "$peer_server" --port=0 --threads=1 "${tls_flags[@]}" > "$log" 2>&1 &
        server_pid=$! ;;
      grpcgo)
        taskset -c "$cpu" "$go_server" --port=0 --threads=1 > "$log" 2>&1 &
        server_pid=$! ;;
      tcpfloor)
        # Requests and responses of the gRPC request's size on the wire.
        local bytes
        bytes=$(stat -c %s "$work/request-$size.bin")
        taskset -c "$cpu" "$tcp_floor" server --port=0 --req="$bytes" --resp="$bytes" \
          > "$log" 2>&1 &
        server_pid=$! ;;
      s_server)
        # Bare TLS handshakes with the same certificate; allocations not counted.
        server_port=$(free_port)
        scheme=https
        taskset -c "$cpu" openssl s_server -quiet -num_tickets 0 -accept "$server_port" \
          -cert "$certs/server.pem" -key "$certs/server.key" > "$log" 2>&1 < /dev/null &
        server_pid=$! ;;
      nghttpd)
        # Not counted: nghttpd allocates through jemalloc, which the glibc-forwarding counter
        # cannot be preloaded under (frees of jemalloc blocks abort).
        server_port=$(free_port)
        taskset -c "$cpu" nghttpd --no-tls -n 1 -d "$work/htdocs-$size" "$server_port" \
          > "$log" 2>&1 &
        server_pid=$! ;;
    esac
    for _ in $(seq 1 100); do
      if [[ $kind == nghttpd || $kind == s_server ]]; then
        (exec 3<> "/dev/tcp/127.0.0.1/$server_port") 2> /dev/null && return 0
      elif grep -q '^listening on ' "$log" 2> /dev/null; then
        server_port=$(sed -n 's/^listening on //p' "$log")
        return 0
      fi
      kill -0 "$server_pid" 2> /dev/null || break
      sleep 0.1
    done
    # Only nghttpd's and s_server's ports can have been taken in the meantime; anything else
    # is fatal.
    if [[ $kind != nghttpd && $kind != s_server ]] || kill -0 "$server_pid" 2> /dev/null; then
      break
    fi
    wait "$server_pid" 2> /dev/null || true
  done
  echo "server $kind did not start:" >&2
  cat "$log" >&2
  exit 1
}

cpu_ticks() { sed 's/^.*) //' "/proc/$server_pid/stat" | awk '{ print $12 + $13 }'; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$server_pid/status"; }

# Allocation calls of the server so far ("nan" when not counted).
server_allocs() {
  local kind=$1
  if [[ $kind == nghttpd || $kind == s_server || $kind == grpcgo || $kind == tcpfloor ]]; then
    echo nan
    return
  fi
  if [[ $kind == rill* ]]; then
    # rill_bench_server writes its counters on SIGUSR1 and then bumps the snapshot number.
    local before after
    before=$(od -An -t u8 -j 24 -N 8 "$alloc_file" 2> /dev/null | tr -d ' ' || true)
    kill -USR1 "$server_pid"
    for _ in $(seq 1 200); do
      after=$(od -An -t u8 -j 24 -N 8 "$alloc_file" 2> /dev/null | tr -d ' ' || true)
      [[ -n $after && $after != "$before" ]] && break
      sleep 0.01
    done
  fi
  od -An -t u8 -N 8 "$alloc_file" | tr -d ' '
}

# count_syscalls CPU OUT COMMAND...: runs COMMAND with its output to the file OUT and prints the
# system calls entered on CPU meanwhile, "total reads writes waits" ("nan nan nan nan" when
# perf cannot count). perf's CSV lines are "count,unit,event,...".
syscall_events=raw_syscalls:sys_enter
for call in read readv recvmsg recvfrom write writev sendmsg sendto epoll_wait epoll_pwait poll \
    ppoll futex; do
  syscall_events+=",syscalls:sys_enter_$call"
done
count_syscalls() {
  local cpu=$1 out=$2 file="$work/perf.txt" perf_pid
  shift 2
  rm -f "$file"
  perf stat -x, -e "$syscall_events" -C "$cpu" -o "$file" > /dev/null 2>&1 &
  perf_pid=$!
  sleep 0.2  # counting before the load starts
  "$@" > "$out"
  kill -INT "$perf_pid" 2> /dev/null || true
  wait "$perf_pid" 2> /dev/null || true
  awk -F, '
    $3 == "raw_syscalls:sys_enter" { total = $1 }
    $3 ~ /sys_enter_(read|readv|recvmsg|recvfrom)$/ { reads += $1 }
    $3 ~ /sys_enter_(write|writev|sendmsg|sendto)$/ { writes += $1 }
    $3 ~ /sys_enter_(epoll_wait|epoll_pwait|poll|ppoll|futex)$/ { waits += $1 }
    END {
      if (total == "" || total !~ /^[0-9]+$/) print "nan nan nan nan"
      else printf "%d %d %d %d\n", total, reads, writes, waits
    }' "$file" 2> /dev/null || echo "nan nan nan nan"
}

# Bytes the server copied in calls of >= 4 KiB so far ("nan" when not counted).
server_copies() {
  if [[ -z $copy_file ]]; then
    echo nan
    return
  fi
  od -An -t u8 -j 16 -N 8 "$copy_file" | tr -d ' '
}

# --- load -------------------------------------------------------------------------------------

# run_load CLIENT CPU CONNS STREAMS SIZE WORKLOAD SECONDS: prints "<rpcs> <req/s>" (0 0 on
# failure, with the output kept in $work/load.log).
run_load() {
  local client=$1 cpu=$2 conns=$3 streams=$4 size=$5 workload=$6
  local ms
  ms=$(awk -v s="$7" 'BEGIN { printf "%d", s * 1000 }')
  local log="$work/load.log"
  local url="$scheme://127.0.0.1:$server_port/grpc.testing.BenchmarkService/UnaryCall"
  if [[ $client == h2load-conns ]]; then
    # Batches of $conns new connections, one RPC each, until the time is up; prints the sum.
    local began=${EPOCHREALTIME/./} done_total=0 bad_total=0 n bad
    local end=$((began + ms * 1000))
    : > "$log"
    while ((${EPOCHREALTIME/./} < end)); do
      taskset -c "$cpu" h2load -t 1 -c "$conns" -n "$conns" \
        -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request-$size.bin" \
        "$url" > "$work/batch.log" 2>&1 || true
      # The negotiated parameters, kept from the first batch.
      [[ -s $work/tls.txt ]] || grep '^TLS Protocol\|^Cipher\|^Server Temp Key' \
        "$work/batch.log" > "$work/tls.txt" || true
      n=$(awk '/^requests:/ { print $8 }' "$work/batch.log")
      bad=$(awk '/^status codes:/ { print $5 + $7 + $9 }' "$work/batch.log")
      done_total=$((done_total + ${n:-0}))
      bad_total=$((bad_total + ${bad:-1}))
    done
    awk -v d="$done_total" -v b="$bad_total" -v us=$((${EPOCHREALTIME/./} - began)) \
      'BEGIN { if (d > 0 && b == 0) print d, d / (us / 1e6); else print 0, 0 }'
  elif [[ $client == s_time ]]; then
    taskset -c "$cpu" openssl s_time -connect "127.0.0.1:$server_port" -new \
      -time "$(awk -v m="$ms" 'BEGIN { t = int(m / 1000); print t < 1 ? 1 : t }')" \
      > "$log" 2>&1 || true
    # "N connections in T real seconds, ..."
    awk '/connections in .* real seconds/ { print $1, $1 / $4; found = 1 }
         END { if (!found) print 0, 0 }' "$log"
  elif [[ $client == tcp_floor ]]; then
    local bytes
    bytes=$(stat -c %s "$work/request-$size.bin")
    taskset -c "$cpu" "$tcp_floor" client --port="$server_port" --req="$bytes" --resp="$bytes" \
      --conns="$conns" --inflight="$streams" --seconds="$7" > "$log" 2>&1 || true
    awk -v s="$7" '/^rpcs=/ { n = substr($1, 6) }
         END { if (n > 0) print n, n / s; else print 0, 0 }' "$log"
  elif [[ $client == h2load ]]; then
    taskset -c "$cpu" h2load -t 1 -c "$conns" -m "$streams" -D "${ms}ms" \
      -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request-$size.bin" \
      "$url" > "$log" 2>&1 || true
    # "<succeeded> <req/s>" when every response was a 2xx.
    awk '/^finished in/ { rate = $4 }
         /^requests:/ { done = $8 }
         /^status codes:/ { bad = $5 + $7 + $9 }
         END { if (rate != "" && done != "" && bad == 0) print done, rate; else print 0, 0 }' "$log"
  else
    local tls_client=() preload=""
    [[ $scheme == https ]] && tls_client=(-tls_ca_file="$certs/ca.pem")
    [[ -n $client_copy_file ]] && preload=$copy_lib
    LD_PRELOAD=$preload COPY_COUNTER_FILE=$client_copy_file \
    taskset -c "$cpu" "$benchmain" -server="127.0.0.1:$server_port" "${tls_client[@]}" \
      -workloads="$workload" \
      -benchtime="${ms}ms" -connections="$conns" -maxConcurrentCalls="$streams" \
      -reqSizeBytes="$size" -respSizeBytes="$size" -latency=0s -kbps=0 -cpus=none \
      > "$log" 2>&1 || true
    awk '/^Number of requests:/ { done = $4 }
         /^rill_extras / { for (i = 1; i <= NF; i++) if ($i ~ /^qps=/) rate = substr($i, 5) }
         END { if (rate != "" && done != "") print done, rate; else print 0, 0 }' "$log"
  fi
}

# One gRPC call through nghttp, checking the status in the trailers.
check_grpc() {
  local size=$1
  nghttp -v -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request-$size.bin" \
    "$scheme://127.0.0.1:$server_port/grpc.testing.BenchmarkService/UnaryCall" 2>&1 |
    grep -aq 'grpc-status: 0'
}

# --- measurements -----------------------------------------------------------------------------

# name conns streams size workload clients(server list per client)
cases=(
  "unary-1B-1x100 1 100 1 unary"
  "unary-1B-50x20 50 20 1 unary"
  "unary-8KiB-1x6 1 6 8192 unary"
  "unary-1MiB-1x4 1 4 1048576 unary"
  "streaming-1B-1x100 1 100 1 streaming"
  "streaming-1MiB-1x1 1 1 1048576 streaming"
)
raw="$work/raw.tsv"
if [[ -n $tls ]]; then
  cases=(
    "tls-unary-1B-1x100 1 100 1 unary"
    "tls-new-conn 100 1 1 new-conn"
    "tls-streaming-1MiB-1x1 1 1 1048576 streaming"
  )
fi
printf 'case\tpinning\tclient\tserver\trep\trpcs\tqps\tcpu_us\tallocs\trss_mib\tcopies\tsyscalls\treads\twrites\twaits\tclient_copies\n' \
  > "$raw"

measure() {
  local name=$1 conns=$2 streams=$3 size=$4 workload=$5 pinning=$6 scpu=$7 lcpu=$8 client=$9
  local server=${10} rep=${11} count_copies=0
  local began=$SECONDS
  # Payload bytes per RPC through the server (in and out), for copies per payload byte.
  local payload_bytes=$((size * 2))
  [[ $size == 1048576 ]] && count_copies=1
  start_server "$server" "$scpu" "$size" "$count_copies"
  if [[ $client == h2load* && $server != nghttpd ]] && ! check_grpc "$size"; then
    echo "  $server does not answer UnaryCall with grpc-status 0" >&2
    stop_server
    return
  fi
  run_load "$client" "$lcpu" "$conns" "$streams" "$size" "$workload" "$warmup" > /dev/null
  local t0 a0 t1 a1 c0 c1 result rss calls client_copies=nan
  # rill's client counts its copies over the measured run (a fresh process).
  if [[ $count_copies == 1 && $client == rill ]]; then
    client_copy_file="$work/copies.client"
    rm -f "$client_copy_file"
  fi
  a0=$(server_allocs "$server")
  c0=$(server_copies)
  t0=$(cpu_ticks)
  if [[ $pinning == split ]]; then
    calls=$(count_syscalls "$scpu" "$work/load.txt" run_load "$client" "$lcpu" "$conns" \
      "$streams" "$size" "$workload" "$duration")
  else
    calls="nan nan nan nan"
    run_load "$client" "$lcpu" "$conns" "$streams" "$size" "$workload" "$duration" \
      > "$work/load.txt"
  fi
  result=$(cat "$work/load.txt")
  t1=$(cpu_ticks)
  if [[ -n $client_copy_file ]]; then
    client_copies=$(od -An -t u8 -j 16 -N 8 "$client_copy_file" 2> /dev/null | tr -d ' ' || true)
    client_copies=${client_copies:-nan}
    client_copy_file=""
  fi
  c1=$(server_copies)
  rss=$(rss_kib)
  a1=$(server_allocs "$server")
  stop_server
  awk -v name="$name" -v pinning="$pinning" -v client="$client" -v server="$server" \
    -v rep="$rep" -v rpcs="${result% *}" -v qps="${result#* }" -v t0="$t0" -v t1="$t1" \
    -v a0="$a0" -v a1="$a1" -v c0="$c0" -v c1="$c1" -v pb="$payload_bytes" -v rss="$rss" \
    -v hz="$(getconf CLK_TCK)" -v took=$((SECONDS - began)) -v raw="$raw" -v calls="$calls" \
    -v cc="$client_copies" 'BEGIN {
       cpu = rpcs > 0 ? (t1 - t0) / hz * 1e6 / rpcs : "nan"
       split(calls, sc, " ")
       for (i = 1; i <= 4; ++i) per[i] = rpcs > 0 && sc[i] != "nan" ? sprintf("%.3f", sc[i] / rpcs) : "nan"
       allocs = rpcs > 0 && a0 != "nan" ? (a1 - a0) / rpcs : "nan"
       copies = rpcs > 0 && c0 != "nan" ? (c1 - c0) / (rpcs * pb) : "nan"
       client_copies = rpcs > 0 && cc != "nan" ? cc / (rpcs * pb) : "nan"
       printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\n", name, pinning,
              client, server, rep, rpcs, qps, cpu == "nan" ? cpu : sprintf("%.3f", cpu),
              allocs == "nan" ? allocs : sprintf("%.3f", allocs), rss / 1024,
              copies == "nan" ? copies : sprintf("%.3f", copies), per[1], per[2], per[3],
              per[4], client_copies == "nan" ? client_copies : sprintf("%.4f", client_copies) >> raw
       printf "  %-20s %-6s %-6s -> %-7s rep %s: %10.0f req/s %8s us/RPC %8s allocs/RPC %8s syscalls/RPC (%d s)\n",
              name, pinning, client, server, rep, qps,
              cpu == "nan" ? cpu : sprintf("%.2f", cpu),
              allocs == "nan" ? allocs : sprintf("%.2f", allocs), per[1], took > "/dev/stderr"
     }'
}

echo "side by side: $reps x ${duration}s per measurement, server on CPU $server_cpu," \
  "load on CPU $load_cpu (split) and CPU $server_cpu (shared); load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
for rep in $(seq 1 "$reps"); do
  for pin in "${pinnings[@]}"; do
    IFS=: read -r pinning scpu lcpu <<< "$pin"
    for c in "${cases[@]}"; do
      read -r name conns streams size workload <<< "$c"
      if [[ -n $tls ]]; then
        # client:server pairs of the TLS cases, plaintext next to TLS where both apply.
        case $workload in
          unary) pairs="h2load:rill-tls h2load:grpcpp-tls h2load:rill h2load:grpcpp" ;;
          new-conn)
            pairs="h2load-conns:rill-tls h2load-conns:grpcpp-tls s_time:s_server h2load-conns:rill"
            pairs+=" h2load-conns:grpcpp" ;;
          *) pairs="rill:rill-tls rill:grpcpp-tls rill:rill rill:grpcpp" ;;
        esac
        for pair in $pairs; do
          measure "$name" "$conns" "$streams" "$size" "$workload" "$pinning" "$scpu" "$lcpu" \
            "${pair%%:*}" "${pair#*:}" "$rep"
        done
        continue
      fi
      if [[ $workload == unary ]]; then
        for server in rill grpcpp grpcgo nghttpd; do
          measure "$name" "$conns" "$streams" "$size" "$workload" "$pinning" "$scpu" "$lcpu" \
            h2load "$server" "$rep"
        done
      fi
      if ((size > 1)); then
        measure "$name" "$conns" "$streams" "$size" "$workload" "$pinning" "$scpu" "$lcpu" \
          tcp_floor tcpfloor "$rep"
      fi
      for server in rill grpcpp grpcgo; do
        measure "$name" "$conns" "$streams" "$size" "$workload" "$pinning" "$scpu" "$lcpu" \
          rill "$server" "$rep"
      done
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "Measured $started on $(nproc) CPUs ($(uname -m)), rill $(git -C "$repo" rev-parse --short HEAD 2> /dev/null || echo '?'),"
  echo "libgrpc++ $(pkg-config --modversion grpc++ 2> /dev/null || echo '?'), $(h2load --version | head -1)."
  echo "Median of $reps runs of ${duration} s each; load average $load_before before, $load_after after."
  echo "Command: \`$command_line\`"
  if [[ -s $work/tls.txt ]]; then
    echo "TLS as h2load saw it: $(tr '\n' ' ' < "$work/tls.txt" | sed 's/  */ /g')"
  fi
  echo
  python3 "$here/report.py" "$raw"
} > "$out"
cp "$raw" "${out%.md}.tsv"
cat "$out"
# The plot of server CPU per RPC (python3-matplotlib, under Debian's interpreter).
if /usr/bin/python3 "$here/plot.py" "${out%.md}.tsv" "${out%.md}.png" 2> "$work/plot.log"; then
  echo "written to $out, ${out%.md}.tsv and ${out%.md}.png" >&2
else
  echo "written to $out and ${out%.md}.tsv (no plot: $(tail -1 "$work/plot.log"))" >&2
fi
