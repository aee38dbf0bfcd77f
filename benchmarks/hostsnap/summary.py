"""Where a worker's host RAM grew: the record sitecustomize.py wrote (hostsnap-<pid>.json), grouped by the
innermost frames of the training thread's stack at each new high, in the order they first grew.

    python -m benchmarks.hostsnap.summary hostsnap-1234.json [--frames 3] [--min-mib 100]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

#: frames that say nothing about whose allocation it was
NOISE = ("threading.py", "nvtx.py", "_contextlib.py", "c10d_logger.py", "wrapper")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("record", type=Path)
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--min-mib", type=float, default=100.0)
    ap.add_argument("--io-mb", type=float, default=500.0)
    a = ap.parse_args()
    d = json.loads(a.record.read_text())
    print(f"{a.record.name}: peak resident {d['peak'] / 2**30:.3f} GiB, {len(d['events'])} new highs recorded")
    groups: dict[str, list[float]] = {}
    for e in d["events"]:
        frames = [f for f in e["stack"] if not any(n in f for n in NOISE)]
        key = " <- ".join(reversed(frames[-a.frames:]))
        g = groups.setdefault(key, [0.0, 0, e["t"], 0.0])
        g[0] += e["grew"]
        g[1] += 1
        g[3] = e["rss"]
    for key, (grew, n, t, rss) in groups.items():
        if grew >= a.min_mib * 2**20:
            print(f"  from {t:7.2f} s  +{grew / 2**30:6.3f} GiB in {n:3d} highs, to {rss / 2**30:6.2f} GiB | {key}")
    io = d.get("io") or []
    if io and io[-1][2]:
        print(f"  disk: {io[-1][1] / 1e9:.3f} GB read, {io[-1][2] / 1e9:.3f} GB written in all; where it moved "
              f"(each line: {a.io_mb:.0f} MB or more since the last):")
        last = (0, 0)
        for t, r, w in io:
            if r - last[0] >= a.io_mb * 1e6 or w - last[1] >= a.io_mb * 1e6:
                print(f"    {t:7.1f} s  read {r / 1e9:7.3f} GB  written {w / 1e9:7.3f} GB")
                last = (r, w)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
