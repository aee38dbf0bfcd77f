"""What events, telemetry and the run's supervision cost a training run, counted in CPU time.

    python -m benchmarks.speed.overhead --out overhead.json [--window 30] [--telemetry-s 5]

An A/B of tokens/s (benchmarks/throughput/run.py, zerotui against zerotui-bare) cannot resolve 1% on a
shared GPU machine: the same contender moves 10-20% between processes. This counts the cost instead.
A real run (``zerotui train``, detached: supervisor, worker, DeepSpeed engine; the built-in tiny model
on the CPU, or --model) logs every step (``log_interval`` 1, the most events a plan can ask for). Over a
window of training the benchmark reads, from /proc, the CPU time of the worker's main thread (control
polling, status heartbeat, telemetry, stall and RAM watches: everything but training), of the worker's
other threads (training and its compute threads), and of the supervisor; and it times
``EventWriter.emit`` of a step event, the only extra work on the training thread. The share of wall
time the main thread holds is the most it can take from training (it can only delay the training
thread by holding the GIL).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.speed.startup import _cli, _events, _wait_step
from benchmarks.seed_scenarios.data import write_data

TICK = os.sysconf("SC_CLK_TCK")


def _thread_cpu(pid: int) -> dict[int, float]:
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            out[int(tid)] = (int(fields[11]) + int(fields[12])) / TICK  # utime + stime
        except (OSError, IndexError, ValueError):
            continue
    return out


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _pids(run: Path) -> tuple[int, int]:
    """(supervisor, worker) of a single-process run."""
    import psutil

    deadline = time.time() + 60
    while time.time() < deadline:
        for p in psutil.process_iter(["pid", "cmdline"]):
            argv = p.info["cmdline"] or []
            # the worker itself, not the supervisor whose command line ends with the worker's
            if argv[1:3] == ["-m", "zerotui.core.run.worker"] and str(run) in " ".join(argv):
                parent = p.parent()
                return (parent.pid if parent else 0), p.pid
        time.sleep(0.5)
    raise SystemExit(f"{run}: no worker process found")


def emit_cost(event: dict, n: int = 20000) -> float:
    """Seconds per ``EventWriter.emit`` of ``event`` (a step event the run wrote) into a new file."""
    from zerotui.core.events.stream import EventWriter

    fields = {k: v for k, v in event.items() if k not in ("type", "t", "v", "ts")}
    with tempfile.TemporaryDirectory() as d:
        w = EventWriter(Path(d) / "events.jsonl")
        t0 = time.perf_counter()
        for _ in range(n):
            w.emit(event["type"], **fields)
        return (time.perf_counter() - t0) / n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--window", type=float, default=30.0, help="seconds of training measured")
    ap.add_argument("--telemetry-s", type=float, default=None, help="ZEROTUI_TELEMETRY_S for the run")
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--precision", default="fp32", help="bf16 for a model on the GPU")
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--stage", type=int, default=0)
    a = ap.parse_args()
    from zerotui.core.plan.schema import plan_from_dict

    work = Path(tempfile.mkdtemp(prefix="zt-overhead-"))
    data = write_data(work / "data.jsonl", rows=2000, words=200)
    plan = plan_from_dict({"name": "overhead", "model": a.model, "data": str(data), "data_format": "text",
                           "precision": a.precision, "micro_batch": a.micro_batch, "grad_accum": 1,
                           "seq_len": a.seq_len, "stage": a.stage,
                           "max_steps": 1000000, "log_interval": 1, "save_interval": 0, "save_minutes": 0,
                           "save_final": False, "eval_fraction": 0.0, "gpus": 1}, "overhead")
    (work / "plan.yaml").write_text(plan.to_yaml())
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if a.telemetry_s is not None:
        env["ZEROTUI_TELEMETRY_S"] = str(a.telemetry_s)
    runs = work / "runs"
    r = _cli("train", str(work / "plan.yaml"), "--runs-dir", str(runs), "--json", env=env)
    if r.returncode != 0:
        raise SystemExit(f"train exited {r.returncode}: {(r.stdout + r.stderr)[-800:]}")
    run = next(runs.iterdir())
    try:
        _wait_step(run, 0, 20, timeout=900)  # past start-up and the first steps
        sup, wpid = _pids(run)
        t0, th0, sp0 = time.time(), _thread_cpu(wpid), _proc_cpu(sup)
        steps0 = sum(e["type"] == "step" for e in _events(run))
        time.sleep(a.window)
        t1, th1, sp1 = time.time(), _thread_cpu(wpid), _proc_cpu(sup)
        evs = _events(run)
    finally:
        _cli("stop", str(run), "--now", "--wait", "--runs-dir", str(runs), env=env)
    wall = t1 - t0
    delta = {tid: th1.get(tid, 0.0) - th0.get(tid, 0.0) for tid in th1}
    main_s = delta.get(wpid, 0.0)
    others = sum(v for tid, v in delta.items() if tid != wpid)
    steps = sum(e["type"] == "step" for e in evs) - steps0
    written = sum(1 for e in evs if t0 <= e["t"] <= t1)
    step_event = next(e for e in reversed(evs) if e["type"] == "step")
    per_emit = statistics.median(emit_cost(step_event) for _ in range(3))
    out = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv), "model": a.model,
           "plan": {k: plan.to_dict().get(k) for k in ("precision", "micro_batch", "seq_len", "stage", "kernels")},
           "telemetry_s": env.get("ZEROTUI_TELEMETRY_S", "default"), "window_s": round(wall, 2),
           "steps": steps, "events_written": written, "step_s": round(wall / steps, 4) if steps else None,
           "cpu_s": {"worker main thread (control, heartbeat, telemetry, watches)": round(main_s, 3),
                     "worker other threads (training, compute)": round(others, 3),
                     "supervisor": round(sp1 - sp0, 3)},
           "emit_s_per_event": per_emit,
           "share_of_wall": {"worker main thread": round(main_s / wall, 5),
                             "event writes on the training thread": round(written * per_emit / wall, 5),
                             "supervisor (another process)": round((sp1 - sp0) / wall, 5)}}
    a.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
