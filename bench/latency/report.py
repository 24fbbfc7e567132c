#!/usr/bin/env python3
"""Turns the raw runs of bench/latency/run.sh into markdown tables.

    report.py RAW.tsv

RAW.tsv has one line per run (columns: phase size server load_pct rep offered achieved p50_us
p99_us p999_us cpu_pct cpu_us_per_rpc steal_pct other_pct failed h2load_cpu_pct).

A run was quiet when steal stayed under 1 % and other processes took under 10 % of a CPU. Each
figure is the median over the quiet repetitions, or over all of them (marked ⚠) when none was
quiet; the "quiet runs" column says how many were used. A fixed-load row is "did not keep up"
when its median achieved rate is below 95 % of the offered rate; the runs that did not keep up
are counted in the same cell.
"""
import csv
import sys

from figures import fmt, median, num

SERVERS = {"rill": "rill", "grpcpp": "libgrpc++", "go": "grpc-go"}
SIZES = {"1": "1 B", "8192": "8 KiB"}
KEEP_UP = 0.95
STEAL_WARN = 1.0
OTHER_WARN = 10.0


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

    def quiet(row):
        return num(row["steal_pct"]) <= STEAL_WARN and num(row["other_pct"]) <= OTHER_WARN

    # The runs each row's figures come from, and the cell that says so.
    def pick(rows):
        clean = [r for r in rows if quiet(r)]
        return (clean, f"{len(clean)}/{len(rows)}") if clean else (rows, f"0/{len(rows)} ⚠")

    sizes = sorted({k[1] for k in groups}, key=int)
    servers = [s for s in SERVERS if any(k[2] == s for k in groups)]

    print("Maximum rate, `h2load -t 1 -c 50 -m 20`, no rate limit (libgrpc++'s is the reference "
          "for the offered loads below):\n")
    print("| size | server | req/s | server CPU % | quiet runs |")
    print("|---|---|--:|--:|--:|")
    for size in sizes:
        for server in servers:
            rows = groups.get(("max", size, server, "-"))
            if not rows:
                continue
            rows, used = pick(rows)
            print(f"| {SIZES.get(size, size)} | {SERVERS[server]} | {fmt(figure(rows, 'achieved'))}"
                  f" | {fmt(figure(rows, 'cpu_pct'), 1)} | {used} |")

    print("\nFixed offered load, `h2load -t 1 -c 50 -m 20 --rps=<offered / 50>`; latency of "
          "each request from when h2load sent it (µs):\n")
    print("| size | offered (of libgrpc++'s max) | server | achieved req/s | p50 | p99 | p99.9 "
          "| server CPU % | server µs/RPC | h2load CPU % | quiet runs | kept up? |")
    print("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    loads = sorted({k[3] for k in groups if k[0] == "rate"}, key=int)
    for size in sizes:
        for load in loads:
            for server in servers:
                rows = groups.get(("rate", size, server, load))
                if not rows:
                    continue
                rows, used = pick(rows)
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
                      f" | {fmt(figure(rows, 'h2load_cpu_pct'), 1)} | {used} | {verdict} |")

    print("\nOne call in flight, `h2load -t 1 -c 1 -m 1`, no rate limit (µs):\n")
    print("| size | server | req/s | p50 | p99 | p99.9 | server µs/RPC | quiet runs |")
    print("|---|---|--:|--:|--:|--:|--:|--:|")
    for size in sizes:
        for server in servers:
            rows = groups.get(("single", size, server, "-"))
            if not rows:
                continue
            rows, used = pick(rows)
            print(f"| {SIZES.get(size, size)} | {SERVERS[server]} | {fmt(figure(rows, 'achieved'))}"
                  f" | {fmt(figure(rows, 'p50_us'))} | {fmt(figure(rows, 'p99_us'))}"
                  f" | {fmt(figure(rows, 'p999_us'))} | {fmt(figure(rows, 'cpu_us_per_rpc'), 2)}"
                  f" | {used} |")
    every = [r for rows in groups.values() for r in rows]
    noisy = [r for r in every if not quiet(r)]
    if noisy:
        print(f"\n{len(noisy)} of {len(every)} runs were not quiet (steal over {STEAL_WARN:.0f} % or "
              f"other processes over {OTHER_WARN:.0f} % of a CPU; at most "
              f"{max(num(r['steal_pct']) for r in noisy):.1f} % and "
              f"{max(num(r['other_pct']) for r in noisy):.0f} %); rows marked ⚠ had no quiet run.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
