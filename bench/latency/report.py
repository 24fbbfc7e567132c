#!/usr/bin/env python3
"""Turns the raw runs of bench/latency/run.sh into markdown tables.

    report.py RAW.tsv

RAW.tsv has one line per run (columns: phase size server load_pct rep offered achieved p50_us
p99_us p999_us cpu_pct cpu_us_per_rpc steal_pct other_pct failed). Each figure is the median over the
repetitions. A fixed-load row is "did not keep up" when its median achieved rate is below 95 %
of the offered rate; the runs that did not keep up are counted in the same cell.
"""
import csv
import math
import statistics
import sys

SERVERS = {"rill": "rill", "grpcpp": "libgrpc++", "go": "grpc-go"}
SIZES = {"1": "1 B", "8192": "8 KiB"}
KEEP_UP = 0.95
STEAL_WARN = 1.0
OTHER_WARN = 10.0


def num(text):
    try:
        return float(text)
    except ValueError:
        return math.nan


def median(values):
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def fmt(value, digits=0):
    return "n/a" if math.isnan(value) else f"{value:,.{digits}f}"


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    groups = {}
    with open(argv[0], newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            key = (row["phase"], row["size"], row["server"], row["load_pct"])
            groups.setdefault(key, []).append(row)

    def figure(rows, column):
        return median([num(r[column]) for r in rows])

    def steal(rows):
        steal_pct = max(num(r["steal_pct"]) for r in rows)
        other_pct = max(num(r["other_pct"]) for r in rows)
        warn = steal_pct > STEAL_WARN or other_pct > OTHER_WARN
        return f"{steal_pct:.1f} / {other_pct:.0f}" + (" ⚠" if warn else "")

    sizes = sorted({k[1] for k in groups}, key=int)
    servers = [s for s in SERVERS if any(k[2] == s for k in groups)]

    print("Maximum rate, `h2load -t 1 -c 50 -m 20`, no rate limit (libgrpc++'s is the reference "
          "for the offered loads below):\n")
    print("| size | server | req/s | server CPU % | steal / other CPU % (max) |")
    print("|---|---|--:|--:|--:|")
    for size in sizes:
        for server in servers:
            rows = groups.get(("max", size, server, "-"))
            if not rows:
                continue
            print(f"| {SIZES.get(size, size)} | {SERVERS[server]} | {fmt(figure(rows, 'achieved'))}"
                  f" | {fmt(figure(rows, 'cpu_pct'), 1)} | {steal(rows)} |")

    print("\nFixed offered load, `h2load -t 1 -c 50 -m 20 --rps=<offered / 50>`; latency of "
          "each request from when h2load sent it (µs):\n")
    print("| size | offered (of libgrpc++'s max) | server | achieved req/s | p50 | p99 | p99.9 "
          "| server CPU % | server µs/RPC | steal / other CPU % (max) | kept up? |")
    print("|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|")
    loads = sorted({k[3] for k in groups if k[0] == "rate"}, key=int)
    for size in sizes:
        for load in loads:
            for server in servers:
                rows = groups.get(("rate", size, server, load))
                if not rows:
                    continue
                offered = figure(rows, "offered")
                achieved = figure(rows, "achieved")
                behind = sum(1 for r in rows
                             if num(r["achieved"]) < KEEP_UP * num(r["offered"])
                             or int(r["failed"]) > 0)
                if achieved < KEEP_UP * offered:
                    verdict = f"**did not keep up** ({behind}/{len(rows)} runs)"
                elif behind:
                    verdict = f"yes (median; {behind}/{len(rows)} runs did not)"
                else:
                    verdict = "yes"
                print(f"| {SIZES.get(size, size)} | {fmt(offered)} ({load} %) | {SERVERS[server]}"
                      f" | {fmt(achieved)} | {fmt(figure(rows, 'p50_us'))}"
                      f" | {fmt(figure(rows, 'p99_us'))} | {fmt(figure(rows, 'p999_us'))}"
                      f" | {fmt(figure(rows, 'cpu_pct'), 1)} | {fmt(figure(rows, 'cpu_us_per_rpc'), 2)}"
                      f" | {steal(rows)} | {verdict} |")

    print("\nOne call in flight, `h2load -t 1 -c 1 -m 1`, no rate limit (µs):\n")
    print("| size | server | req/s | p50 | p99 | p99.9 | server µs/RPC | steal / other CPU % (max) |")
    print("|---|---|--:|--:|--:|--:|--:|--:|")
    for size in sizes:
        for server in servers:
            rows = groups.get(("single", size, server, "-"))
            if not rows:
                continue
            print(f"| {SIZES.get(size, size)} | {SERVERS[server]} | {fmt(figure(rows, 'achieved'))}"
                  f" | {fmt(figure(rows, 'p50_us'))} | {fmt(figure(rows, 'p99_us'))}"
                  f" | {fmt(figure(rows, 'p999_us'))} | {fmt(figure(rows, 'cpu_us_per_rpc'), 2)}"
                  f" | {steal(rows)} |")
    every = [r for rows in groups.values() for r in rows]
    steal_pct = max((num(r["steal_pct"]) for r in every), default=0.0)
    other_pct = max((num(r["other_pct"]) for r in every), default=0.0)
    if steal_pct > STEAL_WARN or other_pct > OTHER_WARN:
        print(f"\n⚠ The machine was not quiet in the rows marked ⚠ (steal up to {steal_pct:.1f} %, "
              f"other processes up to {other_pct:.0f} % of a CPU): their figures are less "
              "trustworthy.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
