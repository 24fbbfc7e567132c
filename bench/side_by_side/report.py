#!/usr/bin/env python3
"""Turns the raw measurements of bench/side_by_side/run.sh into a markdown table.

    report.py RAW.tsv

RAW.tsv has one line per measurement (columns: case pinning client server rep rpcs qps cpu_us
allocs rss_mib copies syscalls reads writes waits client_copies). Each figure is the median over the repetitions; the ratio columns
compare a server with the libgrpc++ server under the same load and pinning (a TLS server with
libgrpc++ over TLS).
"""
import csv
import math
import statistics
import sys

SERVERS = {"rill": "rill", "grpcpp": "libgrpc++", "grpcgo": "grpc-go",
           "nghttpd": "nghttpd (HTTP/2 floor)", "tcpfloor": "TCP floor (no protocol)",
           "rill-tls": "rill TLS", "grpcpp-tls": "libgrpc++ TLS",
           "s_server": "openssl s_server (bare handshakes)"}
CLIENTS = {"h2load": "h2load", "rill": "rill client", "h2load-conns": "h2load, 1 RPC/conn",
           "s_time": "openssl s_time -new", "tcp_floor": "tcp_floor"}
FIELDS = ("qps", "cpu", "allocs", "rss", "copies", "syscalls", "reads", "writes", "waits",
          "client_copies")
PINNINGS = {"split": "server 0, load 1", "shared": "both on 0"}


def median(values):
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def fmt(value, digits):
    if math.isnan(value):
        return "n/a"
    return f"{value:,.{digits}f}"


def ratio(value, base):
    if math.isnan(value) or math.isnan(base) or base == 0:
        return "n/a"
    return f"{value / base:.2f}"


def syscall_cell(m):
    if math.isnan(m["syscalls"]):
        return "n/a"
    return (f"{m['syscalls']:.2f} ({m['reads']:.2f} / {m['writes']:.2f} / {m['waits']:.2f})")


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    groups = {}
    order = []
    with open(argv[0], newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            key = (row["case"], row["pinning"], row["client"], row["server"])
            if key not in groups:
                groups[key] = []
                order.append(key)
            ok = int(row["rpcs"]) > 0
            groups[key].append({
                "qps": float(row["qps"]) if ok else math.nan,
                "cpu": float(row["cpu_us"]),
                "allocs": float(row["allocs"]),
                "rss": float(row["rss_mib"]),
                "copies": float(row.get("copies") or "nan"),
                "client_copies": float(row.get("client_copies") or "nan"),
                **{k: float(row.get(k) or "nan") for k in ("syscalls", "reads", "writes", "waits")},
            })
    medians = {
        key: {field: median([m[field] for m in runs]) for field in FIELDS}
        for key, runs in groups.items()
    }

    copies = any(not math.isnan(m["copies"]) for m in medians.values())
    client_copies = any(not math.isnan(m["client_copies"]) for m in medians.values())
    syscalls = any(not math.isnan(m["syscalls"]) for m in medians.values())
    print("| workload | load | CPUs | server | req/s | server CPU µs/RPC | allocs/RPC | RSS MiB "
          "| req/s ÷ libgrpc++ | CPU ÷ libgrpc++ | allocs ÷ libgrpc++ |"
          + (" copies/B |" if copies else "")
          + (" client copies/B |" if client_copies else "")
          + (" syscalls/RPC (reads / writes / waits) |" if syscalls else ""))
    print("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|" + ("--:|" if copies else "")
          + ("--:|" if client_copies else "") + ("--:|" if syscalls else ""))
    for key in order:
        case, pinning, client, server = key
        m = medians[key]
        base_server = "grpcpp-tls" if server.endswith("-tls") else "grpcpp"
        # The TCP floor has its own client; it is compared with libgrpc++ under h2load or, where
        # h2load cannot drive the workload (streaming), under rill's client.
        base = medians.get((case, pinning, client, base_server))
        if client == "tcp_floor":
            base = (medians.get((case, pinning, "h2load", base_server))
                    or medians.get((case, pinning, "rill", base_server)))
        if base is None or server == base_server:
            ratios = ["", "", ""]
        else:
            ratios = [ratio(m["qps"], base["qps"]), ratio(m["cpu"], base["cpu"]),
                      ratio(m["allocs"], base["allocs"])]
        print(f"| {case} | {CLIENTS.get(client, client)} | {PINNINGS.get(pinning, pinning)} "
              f"| {SERVERS.get(server, server)} | {fmt(m['qps'], 0)} | {fmt(m['cpu'], 2)} "
              f"| {fmt(m['allocs'], 2)} | {fmt(m['rss'], 1)} | " + " | ".join(ratios) + " |"
              + (f" {fmt(m['copies'], 4)} |" if copies else "")
              + (f" {fmt(m['client_copies'], 4)} |" if client_copies else "")
              + (f" {syscall_cell(m)} |" if syscalls else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
