"""Draws benchmain result files: latency percentiles and throughput of every run, one colour per
file. `benchresult --plot OUT FILE...` runs this script after checking that the files read.

    /usr/bin/python3 bench/benchresult/plot.py OUT FILE [FILE...]

OUT's extension picks the format (.svg, .png, .pdf, anything matplotlib writes). Runs are matched
across files by run mode and features and listed top to bottom in order of first appearance; each
row is labelled with its run mode and the features whose values differ between rows, under their
result-file names ("unary MaxConcurrentCalls=8"). Left: p50 (dot), p90 (ring) and p99 (bar end)
latency on a log axis; right: operations per second on a log axis. Unconstrained runs have no
latencies. SVG output keeps its text as text and is byte-for-byte reproducible.
"""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

# Features holding a Go time.Duration (nanoseconds).
DURATION_FEATURES = {"BenchTime", "Latency", "SleepBetweenRPCs"}

BAR_HEIGHT = 0.8  # Of one row, shared by the files.


def go_duration(ns):
    """A duration the way Go prints short ones: 0s, 900ns, 42µs, 1.52ms, 40ms, 2s."""
    if ns == 0:
        return "0s"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g}{unit}"
    return f"{ns:.0f}ns"


def rate(v):
    """Operations per second in three significant digits: 950, 12.3k, 4.5M."""
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:.3g}{suffix}"
    return f"{v:.3g}"


def feature_text(name, value):
    if name in DURATION_FEATURES and isinstance(value, (int, float)):
        return go_duration(value)
    if isinstance(value, dict) and "Sha256" in value:  # A payload curve.
        return "SHA-256:" + str(value["Sha256"])[:8]
    if isinstance(value, bool):
        return "true" if value else "false"
    return "nil" if value is None else str(value)


def ops_per_second(run):
    data = run.get("Data", {})
    seconds = run.get("Features", {}).get("BenchTime", 0) / 1e9
    ops = data.get("TotalOps", 0) or (data.get("SendOps", 0) + data.get("RecvOps", 0)) // 2
    return ops / seconds if seconds > 0 else 0.0


def decades(values, default):
    """The smallest range of whole decades holding every positive value."""
    values = [v for v in values if v > 0]
    if not values:
        return default
    lo, hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    return 10.0 ** lo, 10.0 ** max(hi, lo + 1)


def load(path):
    with open(path, encoding="utf-8") as f:
        runs = json.load(f)
    if not isinstance(runs, list):
        raise ValueError(f"{path}: a result file holds a JSON array of results")
    return runs


def rows_of(series):
    """[(label, [run or None per file])] in order of first appearance."""
    keys, runs_by_key = [], {}
    for i, (_, runs) in enumerate(series):
        for run in runs:
            key = (run.get("RunMode", ""), json.dumps(run.get("Features", {}), sort_keys=True))
            if key not in runs_by_key:
                keys.append(key)
                runs_by_key[key] = [None] * len(series)
            runs_by_key[key][i] = run

    def features(key):
        return json.loads(key[1])

    names = []
    for key in keys:
        names += [n for n in features(key) if n not in names]
    varying = [n for n in names if len({feature_text(n, features(k).get(n)) for k in keys}) > 1]
    rows, seen = [], {}
    for key in keys:
        f = features(key)
        label = " ".join([key[0] or "?"] + [f"{n}={feature_text(n, f.get(n))}" for n in varying])
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label += f" #{seen[label]}"
        rows.append((label, runs_by_key[key]))
    return rows


def plot(out, series):
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "rill-benchresult",
                         "font.size": 9})
    rows = rows_of(series)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    n = max(len(series), 1)
    step = BAR_HEIGHT / n
    fig, (lat, thr) = plt.subplots(
        1, 2, sharey=True, figsize=(12, 1.6 + 0.25 * max(len(rows), 1) * n),
        gridspec_kw={"width_ratios": [3, 2]}, layout="constrained")
    fig.suptitle("Benchmark results: latency percentiles and throughput")

    for r, (_, runs) in enumerate(rows):
        for i, run in enumerate(runs):
            y = r - BAR_HEIGHT / 2 + (i + 0.5) * step
            color = colors[i % len(colors)]
            if run is None:
                lat.text(0.01, y, f"{series[i][0]}: no such run", va="center", fontsize=7,
                         color="grey", transform=lat.get_yaxis_transform())
                continue
            data = run.get("Data", {})
            p50, p90, p99 = (data.get(k, 0) for k in ("Fiftieth", "Ninetieth", "NinetyNinth"))
            if p50 > 0:
                lat.plot([p50, p99], [y, y], color=color, linewidth=2, marker="|",
                         markevery=[1], markersize=8)
                lat.plot([p90], [y], marker="o", markerfacecolor="white", color=color)
                lat.plot([p50], [y], marker="o", color=color)
            else:
                lat.text(0.01, y, f"{series[i][0]}: no latencies ({run.get('RunMode', '?')})",
                         va="center", fontsize=7, color="grey",
                         transform=lat.get_yaxis_transform())
            ops = ops_per_second(run)
            if ops > 0:
                thr.barh(y, ops, height=step * 0.9, color=color)
                thr.text(ops, y, " " + rate(ops), va="center", fontsize=7)

    runs = [run for _, rs in rows for run in rs if run is not None]
    lat.set_xscale("log")
    lat.set_xlim(*decades([run.get("Data", {}).get(k, 0) for run in runs
                           for k in ("Fiftieth", "Ninetieth", "NinetyNinth")], (1e3, 1e9)))
    lat.xaxis.set_major_locator(LogLocator(base=10))
    lat.xaxis.set_major_formatter(FuncFormatter(lambda v, _: go_duration(v)))
    lat.set_xlabel("latency per operation (log scale)")
    thr.set_xscale("log")
    thr.set_xlim(*decades([ops_per_second(run) for run in runs], (1, 1e6)))
    thr.xaxis.set_major_formatter(FuncFormatter(lambda v, _: rate(v)))
    thr.set_xlabel("operations per second (log scale)")
    for ax in (lat, thr):
        ax.grid(axis="x", which="major", color="#cccccc")
        ax.grid(axis="x", which="minor", color="#eeeeee", linestyle=":")
        ax.set_axisbelow(True)
    lat.set_yticks(range(len(rows)), [label for label, _ in rows], family="monospace")
    lat.set_ylim(max(len(rows), 1) - 0.5, -0.5)

    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[i % len(colors)])
               for i in range(len(series))]
    handles += [plt.Line2D([], [], color="dimgrey", marker="o", linestyle=""),
                plt.Line2D([], [], color="dimgrey", marker="o", markerfacecolor="white",
                           linestyle=""),
                plt.Line2D([], [], color="dimgrey", marker="|", markersize=8, linestyle="")]
    labels = [name for name, _ in series] + ["p50", "p90", "p99 (line spans p50 to p99)"]
    # Above the latency panel; constrained layout makes room for it.
    lat.legend(handles, labels, loc="lower left", bbox_to_anchor=(0, 1.01),
               ncols=min(len(labels), 4), frameon=False)
    fig.savefig(out, metadata={"Date": None} if out.endswith(".svg") else None)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    out, paths = argv[1], argv[2:]
    try:
        series = [(os.path.basename(p), load(p)) for p in paths]
    except (OSError, ValueError) as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 1
    plot(out, series)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
