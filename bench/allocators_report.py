#!/usr/bin/env python3
"""Turns the raw measurements of bench/allocators.sh into markdown tables.

    allocators_report.py RAW.tsv [INSTRUCTIONS.tsv]

RAW.tsv has one line per measurement (columns: case config rep rpcs qps cpu_us allocs faults
rss_mib hwm_mib idle_mib). Each figure is the median over the repetitions; "CPU ÷ default" compares a
configuration's median CPU per RPC with tiered+glibc's under the same workload.
Allocations are shown for glibc only: under mimalloc, operator new bypasses the server's counting
malloc. INSTRUCTIONS.tsv (case config rpcs instructions_per_rpc), when it has rows, adds a second
table.
"""
import csv
import math
import statistics
import sys

CASES = {
    "unary-1B-1x100": "unary 1 B, 1 × 100",
    "unary-1B-50x20": "unary 1 B, 50 × 20",
    "unary-8KiB-1x6": "unary 8 KiB, 1 × 6",
    "unary-1MiB-1x4": "unary 1 MiB, 1 × 4",
}
DEFAULT = "tiered+glibc"
FIELDS = ("qps", "cpu", "allocs", "faults", "rss", "hwm", "idle")


def median(values):
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def fmt(value, digits):
    return "n/a" if math.isnan(value) else f"{value:,.{digits}f}"


def cpu_digits(value):
    return 0 if value >= 100 else 2


def main(argv):
    if len(argv) not in (1, 2):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    groups = {}
    order = []
    with open(argv[0], newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            key = (row["case"], row["config"])
            if key not in groups:
                groups[key] = []
                order.append(key)
            ok = int(row["rpcs"]) > 0
            groups[key].append({
                "qps": float(row["qps"]) if ok else math.nan,
                "cpu": float(row["cpu_us"]) if ok else math.nan,
                "allocs": float(row["allocs"]) if ok else math.nan,
                "faults": float(row["faults"]) if ok else math.nan,
                "rss": float(row["rss_mib"]),
                "hwm": float(row["hwm_mib"]),
                "idle": float(row.get("idle_mib") or "nan"),
            })
    medians = {key: {field: median([m[field] for m in runs]) for field in FIELDS}
               for key, runs in groups.items()}
    # Rows grouped by workload, configurations in the order they were first measured.
    configs = []
    for _, config in order:
        if config not in configs:
            configs.append(config)
    cases = [c for c in CASES if any(key[0] == c for key in order)]
    cases += sorted({key[0] for key in order} - set(cases))

    print("| workload | configuration | req/s | server CPU µs/RPC (min–max) | CPU ÷ default "
          "| allocs/RPC | page faults/RPC | RSS MiB (end / peak / idle 3 s) |")
    print("|---|---|--:|--:|--:|--:|--:|--:|")
    for case in cases:
        base = medians.get((case, DEFAULT), {}).get("cpu", math.nan)
        first = True
        for config in configs:
            key = (case, config)
            if key not in medians:
                continue
            m = medians[key]
            cpus = [r["cpu"] for r in groups[key] if not math.isnan(r["cpu"])]
            d = cpu_digits(m["cpu"]) if not math.isnan(m["cpu"]) else 2
            spread = f" ({min(cpus):,.{d}f}–{max(cpus):,.{d}f})" if len(cpus) > 1 else ""
            allocs = "n/a" if config.endswith("+mimalloc") else fmt(m["allocs"], 2)
            ratio = ("n/a" if math.isnan(m["cpu"]) or math.isnan(base) or base == 0
                     else f"{m['cpu'] / base:.2f}")
            name = f"**{config}**" if config == DEFAULT else config
            print(f"| {CASES.get(case, case) if first else ''} | {name} | {fmt(m['qps'], 0)} "
                  f"| {fmt(m['cpu'], d)}{spread} | {ratio} | {allocs} | {fmt(m['faults'], 2)} "
                  f"| {fmt(m['rss'], 1)} / {fmt(m['hwm'], 1)} / {fmt(m['idle'], 1)} |")
            first = False

    if len(argv) == 2:
        with open(argv[1], newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        if rows:
            base = {r["case"]: float(r["instructions_per_rpc"]) for r in rows
                    if r["config"] == DEFAULT}
            print()
            print("Server instructions per RPC under callgrind (all threads, user space; start-up "
                  "and shutdown subtracted):")
            print()
            print("| workload | configuration | instructions/RPC | ÷ default |")
            print("|---|---|--:|--:|")
            previous = None
            for r in rows:
                value = float(r["instructions_per_rpc"])
                b = base.get(r["case"], math.nan)
                ratio = "n/a" if math.isnan(b) else f"{value / b:.3f}"
                name = f"**{r['config']}**" if r["config"] == DEFAULT else r["config"]
                case = CASES.get(r["case"], r["case"]) if r["case"] != previous else ""
                previous = r["case"]
                print(f"| {case} | {name} | {value:,.0f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
