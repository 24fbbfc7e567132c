#!/usr/bin/env python3
"""Turns the raw runs of bench/latency/scaling.sh into a markdown table.

    scaling_report.py RAW.tsv

RAW.tsv has one line per run (columns: server threads placement rep rpcs qps server_us
h2load_us busy_pct other_pct thread_ticks, the last "name=ticks,..." per server thread). Each figure is
the median over the repetitions; "ratio 2/1" divides a server's 2-thread rate by its 1-thread
rate with the same (shared) placement of h2load. Threads that took under 2 % of the server's
CPU time are left out of the thread column.
"""
import csv
import math
import sys

from figures import fmt, median, num

SERVERS = {"rill": ("rill", "reactor"), "grpcpp": ("libgrpc++", "thread")}
PLACEMENTS = {"apart": "h2load on the other CPU", "shared": "h2load on both CPUs"}


def thread_shares(rows):
    shares = {}
    for row in rows:
        ticks = {}
        if row["thread_ticks"] not in ("", "-"):
            for item in row["thread_ticks"].split(","):
                name, value = item.rsplit("=", 1)
                ticks[name] = float(value)
        total = sum(ticks.values())
        for name, value in ticks.items():
            shares.setdefault(name, []).append(100 * value / total if total else 0.0)
    cells = []
    for name, values in sorted(shares.items(), key=lambda kv: -median(kv[1])):
        # A thread missing from some runs took nothing in them.
        share = median(values + [0.0] * (len(rows) - len(values)))
        if share >= 2:
            cells.append(f"{name} {share:.0f} %")
    return ", ".join(cells) if cells else "n/a"


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    groups = {}
    with open(argv[0], newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            groups.setdefault((row["server"], row["threads"], row["placement"]), []).append(row)

    print("| server | threads | load placement | req/s | ratio 2/1 | server µs/RPC | h2load µs/RPC "
          "| CPUs busy (of 200 %) | other CPU % (max) | server CPU by thread |")
    print("|---|--:|---|--:|--:|--:|--:|--:|--:|---|")
    for server, (label, unit) in SERVERS.items():
        one = median([num(r["qps"]) for r in groups.get((server, "1", "shared"), [])])
        for threads, placement in (("1", "apart"), ("1", "shared"), ("2", "shared")):
            rows = groups.get((server, threads, placement))
            if not rows:
                continue
            qps = median([num(r["qps"]) for r in rows])
            ratio = (f"{qps / one:.2f}" if threads == "2" and one and not math.isnan(one)
                     and not math.isnan(qps) else "")
            noun = unit if threads == "1" else unit + "s"
            print(f"| {label} | {threads} {noun} | {PLACEMENTS[placement]} | {fmt(qps)} | {ratio}"
                  f" | {fmt(median([num(r['server_us']) for r in rows]), 2)}"
                  f" | {fmt(median([num(r['h2load_us']) for r in rows]), 2)}"
                  f" | {fmt(median([num(r['busy_pct']) for r in rows]), 0)} %"
                  f" | {fmt(max(num(r['other_pct']) for r in rows), 0)}"
                  f" | {thread_shares(rows)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
