"""A synthetic worker: replays a long run's events.jsonl into a run folder, faster than real time, and
keeps status.json beating like ``core/run/worker.py`` does, so a dashboard attached to the folder follows a
"live" run that covers 32 hours in minutes.

    python scripts/soak/synth_worker.py RUN_DIR SOURCE.jsonl [--minutes 10]

SOURCE is a whole run's events (``benchmarks/dashboard/synth_events.py`` writes a 32-hour one: steps,
telemetry for 8 GPUs, evals, checkpoints, alerts). Lines are appended in the order and at the pace of
their own ``t``, compressed so the whole file takes ``--minutes``: every 0.1 s the lines whose time has
come are appended as whole lines (one write each batch), as the real worker's line-buffered writer does.
At the end it appends ``run_finished`` (in the replay's time) and writes the final status.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from zerotui.core.events.stream import encode, make_event
from zerotui.core.run.folder import RunPaths, write_status

TICK_S = 0.1


def line_time(line: bytes) -> float:
    """``t`` of an encoded event (``core.events.stream.encode`` writes v, t, type first): no JSON parse needed."""
    start = line.index(b'"t":') + 4
    return float(line[start:line.index(b",", start)])


def replay(paths: RunPaths, source: Path, minutes: float) -> dict:
    lines = source.read_bytes().splitlines(keepends=True)
    t_first, t_last = line_time(lines[0]), line_time(lines[-1])
    speed = (t_last - t_first) / (minutes * 60.0)
    started = time.time()
    base = {"pid": os.getpid(), "pids": [os.getpid()], "started": started, "launched": started,
            "total_steps": None, "phase": "training"}
    write_status(paths, state="running", **base)
    i, n = 0, len(lines)
    next_beat = 0.0
    with open(paths.events, "ab", buffering=0) as out:
        while i < n:
            now = time.monotonic()
            due = t_first + (time.time() - started) * speed
            j = i
            while j < n and line_time(lines[j]) <= due:
                j += 1
            if j > i:
                out.write(b"".join(lines[i:j]))
                i = j
            if now >= next_beat:
                next_beat = now + 1.0
                write_status(paths, state="running", **base)
            time.sleep(TICK_S)
    with open(paths.events, "ab") as out:  # in the replay's own time, just after its last event
        out.write(encode(make_event("run_finished", t=t_last + 1.0, state="completed",
                                    reason="synthetic replay ended", step=None)).encode())
    write_status(paths, state="completed", finished=time.time(), **base)
    return {"lines": n, "speed": round(speed, 1), "seconds": round(time.time() - started, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("source", type=Path)
    ap.add_argument("--minutes", type=float, default=10.0)
    args = ap.parse_args(argv)
    paths = RunPaths(args.run_dir)
    paths.root.mkdir(parents=True, exist_ok=True)
    print(json.dumps(replay(paths, args.source, args.minutes)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
