#!/usr/bin/env python3
"""Latency percentiles and the achieved rate from an h2load --log-file.

    log_stats.py LOG WARMUP_SECONDS

LOG has one line per request, tab-separated: start time (µs since the epoch), HTTP status (-1
for a failed stream), µs from the start to the end of the response. Requests that started in
the first WARMUP_SECONDS after the first request are skipped. Prints one line:

    total kept failed achieved_rps p50_us p99_us p999_us

total counts every line (for CPU per RPC over the whole run); kept the requests after the
warm-up that completed with status 200; failed those after the warm-up that did not.
achieved_rps is kept / (end of the last kept response - end of the warm-up). Percentiles are
nearest-rank over the kept requests' durations ("nan" when none was kept).
"""
import math
import sys


def nearest_rank(sorted_values, q):
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rows = []
    with open(argv[0]) as f:
        for line in f:
            parts = line.split("\t")
            if len(parts) < 3:
                continue
            rows.append((int(parts[0]), int(parts[1]), int(parts[2])))
    total = len(rows)
    if total == 0:
        print("0 0 0 0 nan nan nan")
        return 0
    first = min(start for start, _, _ in rows)
    cut = first + float(argv[1]) * 1e6
    durations = []
    failed = 0
    end = cut
    for start, status, duration in rows:
        if start < cut:
            continue
        if status != 200:
            failed += 1
            continue
        durations.append(duration)
        end = max(end, start + duration)
    durations.sort()
    window = (end - cut) / 1e6
    rate = len(durations) / window if window > 0 else 0.0
    print(total, len(durations), failed, f"{rate:.1f}",
          *(nearest_rank(durations, q) for q in (0.50, 0.99, 0.999)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
