#!/usr/bin/env python3
"""Prints the counters of an alloc_counter file (layout: see alloc_counter.c).

    alloc_counter_read.py FILE            allocs=... bytes=... frees=...
    alloc_counter_read.py --json FILE     {"allocs": ..., "bytes": ..., "frees": ...}

Works with any python3; the file can be read while the counted process runs.
"""
import json
import struct
import sys

FIELDS = ("allocs", "bytes", "frees")


def read_counters(path):
    """Returns the counters of the file at `path` as a dict."""
    with open(path, "rb") as f:
        data = f.read(8 * len(FIELDS))
    if len(data) < 8 * len(FIELDS):
        raise ValueError(f"{path}: {len(data)} bytes, not an alloc_counter file")
    return dict(zip(FIELDS, struct.unpack("<" + "Q" * len(FIELDS), data)))


def main(argv):
    as_json = "--json" in argv
    paths = [a for a in argv if a != "--json"]
    if len(paths) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    counters = read_counters(paths[0])
    if as_json:
        print(json.dumps(counters))
    else:
        print(" ".join(f"{k}={v}" for k, v in counters.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
