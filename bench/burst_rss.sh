#!/usr/bin/env bash
# Does a server give memory back after a burst? Starts rill_bench_server, streams 1 MiB messages
# both ways at it with benchmain for SECONDS (default 4: about 1.5 GiB each way on this VM), and
# prints the server's RSS before, right after, and 3 and 6 s after the burst.
#
#   bench/burst_rss.sh BUILD_DIR [SECONDS]     (BUILD_DIR: a release build, ./dev.sh build release)
set -euo pipefail

[[ $# -ge 1 ]] || { sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
dir=$(cd "$1" && pwd)/bench/benchmain
seconds=${2:-4}
work=$(mktemp -d)
"$dir/rill_bench_server" --port=0 --reactors=2 > "$work/server" 2>&1 &
server=$!
trap 'kill "$server" 2> /dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q '^listening on ' "$work/server" && break; sleep 0.1; done
port=$(sed -n 's/^listening on //p' "$work/server")
rss() { awk '/VmRSS/ { print $2 }' "/proc/$server/status"; }
before=$(rss)
"$dir/benchmain" --server="127.0.0.1:$port" -workloads=streaming -reqSizeBytes=1048576 \
  -respSizeBytes=1048576 -maxConcurrentCalls=8 -benchtime="${seconds}s" -latency=0s -kbps=0 \
  -cpus=none > "$work/client" 2>&1
requests=$(sed -n 's/^Number of requests: *\([0-9]*\).*/\1/p' "$work/client")
after=$(rss)
sleep 3
later=$(rss)
sleep 3
last=$(rss)
echo "messages each way: $requests (1 MiB each)"
echo "server RSS KiB: before $before, after the burst $after, +3 s $later, +6 s $last"
