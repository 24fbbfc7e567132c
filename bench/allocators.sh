#!/usr/bin/env bash
# Do rill's buffer pools pay? rill_bench_server in four configurations, under the same h2load
# loads, one configuration after another within each repetition:
#
#   tiered+glibc     rill's default: TieredBufferPool for blocks > 1 KiB, glibc malloc for the rest
#   heap+glibc       --buffer_pool=heap: every block > 1 KiB a fresh operator new, freed on release
#   tiered+mimalloc  the default pool, with malloc from mimalloc (LD_PRELOAD)
#   heap+mimalloc    no pooling, every block from mimalloc
#
# Blocks of 1 KiB or less come from rill's per-thread small-block cache in all four.
#
#   bench/allocators.sh BUILD_DIR [--reps N] [--duration SECONDS] [--callgrind] [--out FILE]
#
# BUILD_DIR is a release tree with bench/benchmain/rill_bench_server built
# (`cmake --build BUILD_DIR --target rill_bench_server`); it is only read, and the server is
# copied at the start, so that a rebuild during the run does not mix two builds. Needs h2load and
# nghttp (nghttp2-client), taskset, protoc, python3, grpc-proto ($RILL_GRPC_PROTO_ROOT, default
# /usr/share/grpc-proto), mimalloc ($RILL_MIMALLOC, default Debian's libmimalloc2.0) and, with
# --callgrind, valgrind.
#
# Workloads, all unary with request and response payloads of one size: 1 B (1 connection x 100
# streams, and 50 x 20), 8 KiB (1 x 6), 1 MiB (1 x 4); h2load -t 1 on the second CPU, the server
# on the first with one reactor. Each measurement starts a fresh server, warms it up for 0.5 s,
# then measures for --duration seconds (default 3); the table shows the median of --reps
# (default 5) repetitions of:
#
#   req/s        completed RPCs per second, as h2load counts them
#   CPU µs/RPC   server utime+stime (/proc/<pid>/stat) over the window / RPCs, with the
#                smallest and largest of the repetitions
#   allocs/RPC   the server's malloc-family calls over the window / RPCs (rill_bench_server
#                counts its own; under mimalloc its counting malloc forwards to mimalloc)
#   faults/RPC   the server's minor page faults (/proc/<pid>/stat) over the window / RPCs: pages
#                the kernel had to map (again), as when freed memory went back to it
#   RSS MiB      server VmRSS at the end of the window, VmHWM (the peak since start), and VmRSS
#                after 3 s without calls (rill gives idle buffer memory back after a second)
#
# Under mimalloc the allocs/RPC column reads n/a: mimalloc also defines operator new, which then
# no longer reaches the counting malloc (the calls are those of the same pool under glibc).
#
# --callgrind adds the server's instructions per RPC (all threads, user space only), which
# machine load does not move, for unary 1 B 1 x 100 and unary 8 KiB 1 x 6: each configuration
# runs twice under callgrind (h2load -n 10000 and -n 40000; 8 KiB: 2000 and 8000), and the
# difference of instructions over the difference of RPCs leaves start-up and shutdown out (as
# bench/instructions_per_rpc.sh does for benchmain).
#
# Prints a markdown table (also written to --out, default BUILD_DIR/allocators.md, with the raw
# measurements beside it as .tsv). 5 repetitions of 3 s take about 10 minutes, --callgrind adds
# about 2.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command_line="bench/allocators.sh $*"
repo=$(cd "$here/.." && pwd)
source "$repo/bench/lib/grpc_load.sh"
grpc_proto=${RILL_GRPC_PROTO_ROOT:-/usr/share/grpc-proto}
mimalloc=${RILL_MIMALLOC:-/usr/lib/x86_64-linux-gnu/libmimalloc.so.2}

usage() { sed -n '2,48p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
build=$(cd "$1" && pwd)
shift
reps=5
duration=3
warmup=0.5
callgrind=""
out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --reps) reps=${2:?--reps needs a count}; shift ;;
    --duration) duration=${2:?--duration needs seconds}; shift ;;
    --callgrind) callgrind=1 ;;
    --out) out=${2:?--out needs a file}; shift ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
  shift
done
out=${out:-$build/allocators.md}

server_bin=$build/bench/benchmain/rill_bench_server
for tool in h2load nghttp taskset protoc python3 ${callgrind:+valgrind}; do
  command -v "$tool" > /dev/null || { echo "missing $tool (./dev.sh setup installs it)" >&2; exit 1; }
done
[[ -x $server_bin ]] || {
  echo "missing $server_bin: cmake --build $build --target rill_bench_server" >&2
  exit 1
}
[[ -f $mimalloc ]] || { echo "missing $mimalloc (libmimalloc2.0; or set RILL_MIMALLOC)" >&2; exit 1; }

# rill_bench_server defines malloc itself (its allocation counter) and forwards to __libc_malloc.
# Under the preload, that name must bind to mimalloc too, or blocks from glibc would reach
# mimalloc's free.
bindings=$(LD_DEBUG=bindings LD_PRELOAD=$mimalloc "$server_bin" --help 2>&1 || true)
if ! grep -qF "to $mimalloc [0]: normal symbol \`__libc_malloc'" <<< "$bindings"; then
  echo "with LD_PRELOAD=$mimalloc, __libc_malloc does not bind to mimalloc" >&2
  exit 1
fi

# CPUs: the first two this process may use.
read -r server_cpu load_cpu < <(first_two_cpus)

work=$(mktemp -d /tmp/rill-allocators.XXXXXX)
server_pid=""
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2> /dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The build measured: the server as it is now, and the commit its source tree is at.
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2> /dev/null || true)
commit=$(git -C "${source_dir:-$repo}" rev-parse --short HEAD 2> /dev/null || echo '?')
if [[ -n $(git -C "${source_dir:-$repo}" status --porcelain --untracked-files=no 2> /dev/null) ]]; then
  commit+=" with local changes"
fi
built=$(date -u -r "$server_bin" '+%Y-%m-%d %H:%M UTC')
cp "$server_bin" "$work/rill_bench_server"
server_bin=$work/rill_bench_server

# --- requests ---------------------------------------------------------------------------------

for size in 1 8192 1048576; do
  write_request "$size" "$work/request-$size.bin"
done

# --- servers ----------------------------------------------------------------------------------

# start_server CONFIG [WRAPPER...]: sets server_pid, server_port and alloc_file. CONFIG is
# POOL+ALLOCATOR; WRAPPER (valgrind ...) runs the server under a tool.
start_server() {
  local config=$1 log="$work/server.log" pool=${1%+*} preload=""
  shift
  [[ ${config#*+} == mimalloc ]] && preload=$mimalloc
  alloc_file="$work/allocs"
  rm -f "$alloc_file" "$log"
  LD_PRELOAD=$preload taskset -c "$server_cpu" "$@" "$server_bin" --port=0 --reactors=1 \
    --cpus="$server_cpu" --buffer_pool="$pool" --alloc_counter_file="$alloc_file" > "$log" 2>&1 &
  server_pid=$!
  await_listening "$log" "$config" 600 || exit 1
}

# "<utime+stime ticks> <minor faults>" of the server so far.
cpu_and_faults() { sed 's/^.*) //' "/proc/$server_pid/stat" | awk '{ print $12 + $13, $8 }'; }
status_kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$server_pid/status"; }

# Allocation calls of the server so far: rill_bench_server writes its counters on SIGUSR1 and
# then bumps the snapshot number at offset 24.
server_allocs() {
  local before after
  before=$(od -An -t u8 -j 24 -N 8 "$alloc_file" 2> /dev/null | tr -d ' ' || true)
  kill -USR1 "$server_pid"
  for _ in $(seq 1 200); do
    after=$(od -An -t u8 -j 24 -N 8 "$alloc_file" 2> /dev/null | tr -d ' ' || true)
    [[ -n $after && $after != "$before" ]] && break
    sleep 0.01
  done
  od -An -t u8 -N 8 "$alloc_file" | tr -d ' '
}

url() { echo "http://127.0.0.1:$server_port/grpc.testing.BenchmarkService/UnaryCall"; }

# One gRPC call through nghttp, checking the status in the trailers.
check_grpc() {
  nghttp -v -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request-$1.bin" \
    "$(url)" 2>&1 | grep -aq 'grpc-status: 0'
}

# run_load CONNS STREAMS SIZE (-D MS | -n COUNT): prints "<rpcs> <req/s>" (0 0 on failure, with
# the output kept in $work/load.log).
run_load() {
  local conns=$1 streams=$2 size=$3 log="$work/load.log"
  shift 3
  taskset -c "$load_cpu" h2load -t 1 -c "$conns" -m "$streams" "$@" \
    -H 'content-type: application/grpc' -H 'te: trailers' -d "$work/request-$size.bin" \
    "$(url)" > "$log" 2>&1 || true
  # "<succeeded> <req/s>" when every response was a 2xx.
  awk '/^finished in/ { rate = $4 }
       /^requests:/ { done = $8 }
       /^status codes:/ { bad = $5 + $7 + $9 }
       END { if (rate != "" && done != "" && bad == 0) print done, rate; else print 0, 0 }' "$log"
}

# --- measurements -----------------------------------------------------------------------------

configs=(tiered+glibc heap+glibc tiered+mimalloc heap+mimalloc)
# name conns streams size
cases=(
  "unary-1B-1x100 1 100 1"
  "unary-1B-50x20 50 20 1"
  "unary-8KiB-1x6 1 6 8192"
  "unary-1MiB-1x4 1 4 1048576"
)
raw="$work/raw.tsv"
printf 'case\tconfig\trep\trpcs\tqps\tcpu_us\tallocs\tfaults\trss_mib\thwm_mib\tidle_mib\n' \
  > "$raw"
ms=$(awk -v s="$duration" 'BEGIN { printf "%d", s * 1000 }')
warmup_ms=$(awk -v s="$warmup" 'BEGIN { printf "%d", s * 1000 }')

measure() {
  local name=$1 conns=$2 streams=$3 size=$4 config=$5 rep=$6
  start_server "$config"
  if ! check_grpc "$size"; then
    echo "  $config does not answer UnaryCall with grpc-status 0" >&2
    stop_server
    return
  fi
  run_load "$conns" "$streams" "$size" -D "${warmup_ms}ms" > /dev/null
  local t0 f0 a0 t1 f1 a1 result rss hwm idle
  a0=$(server_allocs)
  read -r t0 f0 < <(cpu_and_faults)
  result=$(run_load "$conns" "$streams" "$size" -D "${ms}ms")
  read -r t1 f1 < <(cpu_and_faults)
  rss=$(status_kib VmRSS)
  hwm=$(status_kib VmHWM)
  a1=$(server_allocs)
  sleep 3
  idle=$(status_kib VmRSS)
  stop_server
  awk -v name="$name" -v config="$config" -v rep="$rep" -v rpcs="${result% *}" \
    -v qps="${result#* }" -v t0="$t0" -v t1="$t1" -v a0="$a0" -v a1="$a1" -v f0="$f0" \
    -v f1="$f1" -v rss="$rss" -v idle="$idle" \
    -v hwm="$hwm" -v hz="$(getconf CLK_TCK)" -v raw="$raw" 'BEGIN {
       cpu = rpcs > 0 ? (t1 - t0) / hz * 1e6 / rpcs : "nan"
       allocs = rpcs > 0 ? (a1 - a0) / rpcs : "nan"
       faults = rpcs > 0 ? (f1 - f0) / rpcs : "nan"
       printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%.1f\n", name, config, rep, rpcs, qps,
              cpu == "nan" ? cpu : sprintf("%.3f", cpu),
              allocs == "nan" ? allocs : sprintf("%.3f", allocs),
              faults == "nan" ? faults : sprintf("%.3f", faults), rss / 1024, hwm / 1024,
              idle / 1024 >> raw
       printf "  %-16s %-16s rep %s: %9.0f req/s %8s us/RPC %6s allocs/RPC %7s faults/RPC %6.1f MiB (peak %.1f, idle %.1f)\n",
              name, config, rep, qps, cpu == "nan" ? cpu : sprintf("%.2f", cpu),
              allocs == "nan" ? allocs : sprintf("%.2f", allocs),
              faults == "nan" ? faults : sprintf("%.2f", faults), rss / 1024,
              hwm / 1024, idle / 1024 > "/dev/stderr"
     }'
}

# callgrind_run CONFIG CONNS STREAMS SIZE COUNT: prints "<rpcs> <instructions>" of a server
# that served COUNT unary calls under callgrind, from start to exit.
callgrind_run() {
  local config=$1 conns=$2 streams=$3 size=$4 count=$5 file="$work/callgrind.out" result
  rm -f "$file"
  start_server "$config" valgrind --tool=callgrind --callgrind-out-file="$file"
  result=$(run_load "$conns" "$streams" "$size" -n "$count")
  stop_server
  echo "${result% *} $(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$file" | head -1)"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "allocators: $reps x ${duration}s per measurement, server on CPU $server_cpu, load on CPU" \
  "$load_cpu; load average $load_before" >&2
for rep in $(seq 1 "$reps"); do
  for c in "${cases[@]}"; do
    read -r name conns streams size <<< "$c"
    # The configurations in turn, starting one further on each repetition, so that none always
    # runs first or last.
    for i in "${!configs[@]}"; do
      config=${configs[(i + rep - 1) % ${#configs[@]}]}
      measure "$name" "$conns" "$streams" "$size" "$config" "$rep"
    done
  done
done

instructions="$work/instructions.tsv"
printf 'case\tconfig\trpcs\tinstructions_per_rpc\n' > "$instructions"
if [[ -n $callgrind ]]; then
  # name conns streams size short long
  for c in "unary-1B-1x100 1 100 1 10000 40000" "unary-8KiB-1x6 1 6 8192 2000 8000"; do
    read -r name conns streams size short long <<< "$c"
    for config in "${configs[@]}"; do
      read -r r1 i1 < <(callgrind_run "$config" "$conns" "$streams" "$size" "$short")
      read -r r2 i2 < <(callgrind_run "$config" "$conns" "$streams" "$size" "$long")
      if [[ -z $i1 || -z $i2 || $r2 -le $r1 ]]; then
        echo "  $name $config under callgrind: no usable counts ($r1 RPCs: $i1, $r2: $i2)" >&2
        continue
      fi
      awk -v name="$name" -v config="$config" -v r=$((r2 - r1)) -v i=$((i2 - i1)) 'BEGIN {
        printf "%s\t%s\t%d\t%.0f\n", name, config, r, i / r
        printf "  %-16s %-16s under callgrind: %.0f instructions/RPC\n", name, config,
               i / r > "/dev/stderr"
      }' >> "$instructions"
    done
  done
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "Measured $started on $(nproc) CPUs ($(uname -m)), rill $commit (rill_bench_server built"
  echo "$built), glibc $(ldd --version | sed -n '1s/.* //p'),"
  echo "$(basename "$mimalloc") $(dpkg-query -W -f '${Version}' libmimalloc2.0 2> /dev/null || echo '?'), $(h2load --version | head -1)."
  echo "Server on CPU $server_cpu (one reactor), h2load -t 1 on CPU $load_cpu. Median of $reps runs of"
  echo "${duration} s each; load average $load_before before, $load_after after."
  echo "Command: \`$command_line\`"
  echo
  python3 "$here/allocators_report.py" "$raw" "$instructions"
} > "$out"
cp "$raw" "${out%.md}.tsv"
cat "$out"
echo "written to $out and ${out%.md}.tsv" >&2
