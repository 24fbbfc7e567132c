#!/usr/bin/python3
"""Draws bench/side_by_side/run.sh's measurements: server CPU µs per RPC for each workload and
server, split pinning (server on one CPU, load on the other), median of the repetitions, on a
log scale, one group of bars per workload and client.

    /usr/bin/python3 bench/side_by_side/plot.py build/release/side_by_side.tsv OUT.png

Needs matplotlib (Debian's python3-matplotlib, which ./dev.sh setup installs).
"""
import csv
import math
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SERVERS = [("rill", "rill", "#1b6ca8"), ("grpcpp", "libgrpc++ 1.51", "#d1495b"),
           ("grpcgo", "grpc-go 1.33", "#66a182"), ("nghttpd", "nghttpd (HTTP/2 floor)", "#a0a0a0"),
           ("tcpfloor", "TCP floor (no protocol)", "#404040")]
CLIENTS = {"h2load": "h2load", "rill": "rill client"}


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cpu = {}
    groups = []
    with open(argv[0], newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["pinning"] != "split" or int(row["rpcs"]) <= 0:
                continue
            # The TCP floor (its own client) stands next to the h2load bars of its workload, or
            # the rill client's where h2load cannot drive it (streaming).
            client = row["client"]
            if client == "tcp_floor":
                client = "rill" if row["case"].startswith("streaming") else "h2load"
            group = (row["case"], client)
            if group not in groups:
                groups.append(group)
            cpu.setdefault((group, row["server"]), []).append(float(row["cpu_us"]))
    if not groups:
        print("no split-pinning measurements in " + argv[0], file=sys.stderr)
        return 1
    fig, ax = plt.subplots(figsize=(13, 5))
    width = 0.8 / len(SERVERS)
    for i, (server, label, color) in enumerate(SERVERS):
        xs, ys = [], []
        for g, group in enumerate(groups):
            values = cpu.get((group, server))
            if values:
                xs.append(g + (i - (len(SERVERS) - 1) / 2) * width)
                ys.append(statistics.median(values))
        bars = ax.bar(xs, ys, width, label=label, color=color)
        for bar, y in zip(bars, ys):
            text = f"{y:.0f}" if y >= 100 else f"{y:.1f}"
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom",
                        fontsize=7, xytext=(0, 1), textcoords="offset points")
    ax.set_yscale("log")
    ax.set_ylabel("server CPU µs per RPC (log scale; lower is better)")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{case}\n{CLIENTS.get(client, client)}" for case, client in groups],
                       fontsize=8)
    ax.set_title("Server CPU per RPC, one server thread on its own CPU, load on the other")
    ax.legend(fontsize=8)
    ax.grid(axis="y", which="both", alpha=0.3)
    top = max(statistics.median(v) for v in cpu.values())
    ax.set_ylim(0.5, 10 ** math.ceil(math.log10(top * 2)))
    fig.tight_layout()
    fig.savefig(argv[1], dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
