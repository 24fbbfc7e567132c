#!/usr/bin/env python3
"""Lines up h2load's bursts with what ran on the two CPUs meanwhile (bench/latency/burst_trace.sh).

    burst_trace.py H2LOAD_LOG TIMEHIST OFFSET SERVER_PID LOAD_PID WARMUP_SECONDS

H2LOAD_LOG is h2load's --log-file (start time in µs since the epoch, status, µs to the end of
the response). TIMEHIST is `perf sched timehist` output of a `perf sched record -k mono` over
the run: one line per task switched out, with the time it was switched out, its CPU, its
scheduling delay and how long it ran (ms). OFFSET is CLOCK_REALTIME - CLOCK_MONOTONIC in
seconds, to put both on one clock.

A burst is a run of requests whose starts are less than 3 ms apart (h2load sends every 10 ms).
Its drain time runs from its first request's start to its last response's end. For every burst
after the warm-up the script adds up, within the drain time, how long the server ran, how long
anything other than the server, h2load and the idle task ran on either CPU, and the longest
scheduling delay (woken to running) of the server and of h2load. It prints those figures for
the median burst and for each slow burst (drain over twice the median).
"""
import re
import statistics
import sys

LINE = re.compile(r"^\s*(\d+\.\d+)\s+\[(\d+)\]\s+(.+?)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s*$")
TASK_IDS = re.compile(r"\[(\d+)(?:/(\d+))?\]$")


def read_bursts(path, offset, warmup):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.split("\t")
            if len(parts) >= 3 and parts[1].strip() == "200":
                start = int(parts[0]) / 1e6 - offset
                rows.append((start, start + int(parts[2]) / 1e6))
    rows.sort()
    if not rows:
        return []
    bursts, current = [], [rows[0]]
    for row in rows[1:]:
        if row[0] - current[-1][0] > 0.003:
            bursts.append(current)
            current = [row]
        else:
            current.append(row)
    bursts.append(current)
    first = rows[0][0]
    return [(b[0][0], max(end for _, end in b), len(b)) for b in bursts
            if b[0][0] - first >= warmup]


def read_runs(path, server_pid, load_pid):
    """(begin, end, cpu, kind, name, sched_delay) per run; kind is server, load, idle or other."""
    runs = []
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            end, cpu, task = float(m.group(1)), int(m.group(2)), m.group(3).strip()
            delay, run = float(m.group(5)) / 1e3, float(m.group(6)) / 1e3
            ids = TASK_IDS.search(task)
            pid = ids.group(2) or ids.group(1) if ids else ""
            if task.startswith("<idle>"):
                kind = "idle"
            elif pid == server_pid:
                kind = "server"
            elif pid == load_pid:
                kind = "load"
            else:
                kind = "other"
            name = TASK_IDS.sub("", task)
            runs.append((end - run, end, cpu, kind, name, delay))
    return runs


def overlap(a0, a1, b0, b1):
    return max(0.0, min(a1, b1) - max(a0, b0))


def main(argv):
    if len(argv) != 6:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    log, timehist, offset, server_pid, load_pid, warmup = argv
    bursts = read_bursts(log, float(offset), float(warmup))
    runs = read_runs(timehist, server_pid, load_pid)
    if not bursts or not runs:
        print("no bursts or no scheduler events", file=sys.stderr)
        return 1
    runs.sort()
    figures = []
    index = 0
    for begin, end, count in bursts:
        while index < len(runs) and runs[index][0] < begin - 0.05:
            index += 1
        server = 0.0
        others = {}
        delays = {"server": 0.0, "load": 0.0}
        for run_begin, run_end, cpu, kind, name, delay in runs[index:]:
            if run_begin > end:
                break
            shared = overlap(begin, end, run_begin, run_end)
            if kind == "server":
                server += shared
            elif kind == "other" and shared > 0:
                key = f"{name} (CPU {cpu})"
                others[key] = others.get(key, 0.0) + shared
            # A delay counts when the task was woken within the burst.
            if kind in delays and begin <= run_begin - delay <= end:
                delays[kind] = max(delays[kind], delay)
        figures.append((begin, end - begin, count, server, others, delays))
    median_drain = statistics.median(f[1] for f in figures)
    servers = sorted(f[3] for f in figures)
    print(f"{len(figures)} bursts after the warm-up; median {statistics.median(f[2] for f in figures):.0f}"
          f" requests, drained in {median_drain * 1e3:.2f} ms (median)")
    print(f"server CPU time per burst: median {statistics.median(servers) * 1e3:.2f} ms, "
          f"p99 {servers[int(0.99 * (len(servers) - 1))] * 1e3:.2f} ms, max {servers[-1] * 1e3:.2f} ms")
    slow = [f for f in figures if f[1] > 2 * median_drain]
    print(f"slow bursts (drained in over twice the median): {len(slow)}")
    t0 = figures[0][0]
    for begin, drain, count, server, others, delays in slow:
        other_text = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in
                               sorted(others.items(), key=lambda kv: -kv[1])) or "none"
        print(f"  +{begin - t0:7.3f} s: {count} requests drained in {drain * 1e3:.2f} ms; server ran "
              f"{server * 1e3:.2f} ms; longest wake-up delay: server {delays['server'] * 1e3:.2f} ms, "
              f"h2load {delays['load'] * 1e3:.2f} ms; other tasks: {other_text}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
