"""What the worker's bookkeeping costs a training step: event writing, telemetry, heartbeat, control.

Two measurements, both of the real code paths (core/run/worker.py, core/events/stream.py, core/hardware/telemetry.py):

1. Per-call costs, timed in a loop: one ``step`` event through ``Worker.emit`` (tracker + EventWriter
   line + flush), one telemetry sample + its event, one status.json heartbeat, one idle control.jsonl
   poll. From them, the cost per step at a given step time and log interval.
2. A/B of whole runs: the real engine on the tiny model (CPU, DeepSpeed) run by
   - ``bare``: ``engine.train`` called directly, emit keeps events in memory only, no worker around it;
   - ``off``: the worker with event writing and telemetry turned off (heartbeat and control polling on);
   - ``on``: the worker as shipped, with a step event every step (log_interval 1) and telemetry every
     second (5x the default rate): the worst case.
   Each variant runs in its own process, alternating, ``--repeats`` times; the median time per step
   (wall clock between step events after warm-up) is compared.

    .venv/bin/python benchmarks/worker_overhead.py --repeats 5 --steps 80 --one-thread \
        --out benchmarks/results/worker_overhead_cpu.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _per_call(fn, n: int) -> float:
    fn()  # warm
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def micro() -> dict[str, float]:
    from zerotui.core.events.stream import EventWriter
    from zerotui.core.run.folder import new_run_dir, read_control
    from zerotui.core.hardware.telemetry import TelemetrySampler
    from zerotui.core.run.worker import Worker

    with tempfile.TemporaryDirectory() as tmp:
        paths = new_run_dir(Path(tmp), "bench")
        w = Worker(paths)
        w.writer = EventWriter(paths.events)
        fields = dict(step=1, epoch=0.1, loss=2.345678, lr=2e-5, grad_norm=1.2345, loss_scale=None, skipped=0,
                      samples_per_s=123.4, tokens_per_s=45678.9, tflops=12.3, step_time=0.1234)
        step_s = _per_call(lambda: w.emit("step", **fields), 20000)
        sampler = TelemetrySampler()
        tel_s = _per_call(lambda: w.emit("telemetry", **sampler.sample()), 300)
        sampler.close()
        beat_s = _per_call(lambda: w._status("running"), 500)
        poll_s = _per_call(lambda: read_control(paths, 0), 5000)
        w.writer.close()
    return {"step_event_s": step_s, "telemetry_sample_and_event_s": tel_s, "heartbeat_s": beat_s,
            "control_poll_s": poll_s}


# -- whole runs ---------------------------------------------------------------------------------------

def _plan(steps: int, runs_dir: str):
    from zerotui.core.plan.schema import Plan

    return Plan(name="bench", model="tiny", data="sample", precision="bf16", stage=2, micro_batch=4, seq_len=128,
                max_steps=steps, log_interval=1, save_interval=0, save_minutes=0, eval_fraction=0.0,
                save_final=False, runs_dir=runs_dir)


def one_run(variant: str, steps: int) -> dict[str, Any]:
    """Runs in a child process: one training run, returns the step timestamps' summary."""
    from zerotui.core.run.prepare import launch_files, write_launch_files
    from zerotui.core.hardware.detect import detect
    from zerotui.core.train.distributed import single_process_env
    from zerotui.core.run.folder import new_run_dir
    from zerotui.core.run.worker import Worker

    tmp = tempfile.mkdtemp(prefix="zerotui-bench-")
    plan = _plan(steps, tmp)
    paths = new_run_dir(Path(tmp), "bench")
    paths.plan.write_text(plan.to_yaml())
    hw = detect(probe_disks=False)
    write_launch_files(paths, launch_files(plan, 1, None, paths.root, hw))
    stamps: list[tuple[float, float]] = []

    def record(type_: str, fields: dict) -> None:
        if type_ == "step":
            # Wall clock, and CPU seconds of every thread of this process: on a shared 2-core machine the
            # wall clock swings with other people's work, the process's own CPU time much less.
            stamps.append((time.perf_counter(), time.process_time()))

    if variant == "bare":
        from zerotui.core.train.control import ControlState
        from zerotui.core.train.engine import train

        single_process_env()
        train(plan, paths, lambda type_, **f: record(type_, f), ControlState(), hardware=hw, resume=False)
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
    else:
        os.environ["ZEROTUI_TELEMETRY_S"] = "1" if variant == "on" else "0"

        class Recording(Worker):
            def emit(self, type_: str, **fields: Any) -> None:
                record(type_, fields)
                if variant == "on":
                    super().emit(type_, **fields)
                else:
                    self.tracker.observe(type_, fields)

        rc = Recording(paths).run()
        if rc != 0:
            raise SystemExit(f"worker failed: {paths.log}")
    warm = 5
    s = stamps[warm:]
    n = len(s) - 1
    return {"variant": variant, "steps": len(stamps), "s_per_step": (s[-1][0] - s[0][0]) / n,
            "cpu_s_per_step": (s[-1][1] - s[0][1]) / n}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--one-thread", action="store_true", help="OMP_NUM_THREADS=1 in the runs (steadier CPU time)")
    ap.add_argument("--one", choices=("bare", "off", "on"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one, args.steps)))
        return 0
    result: dict[str, Any] = {"micro": micro()}
    print(json.dumps(result["micro"], indent=2), flush=True)
    runs: dict[str, dict[str, list[float]]] = {v: {"wall": [], "cpu": []} for v in ("bare", "off", "on")}
    for rep in range(args.repeats):
        for variant in ("bare", "off", "on") if rep % 2 == 0 else ("on", "off", "bare"):
            # One intra-op thread: OpenMP threads that spin while descheduled by other people's work
            # would turn CPU time into noise too (seen: 0.06 to 0.34 CPU s for the same step).
            env = {**os.environ, "OMP_NUM_THREADS": "1"} if args.one_thread else None
            out = subprocess.run([sys.executable, __file__, "--one", variant, "--steps", str(args.steps)],
                                 capture_output=True, text=True, check=True, env=env)
            rec = json.loads(out.stdout.strip().splitlines()[-1])
            runs[variant]["wall"].append(rec["s_per_step"])
            runs[variant]["cpu"].append(rec["cpu_s_per_step"])
            print(f"{variant}: {rec['s_per_step'] * 1000:.1f} ms/step wall, "
                  f"{rec['cpu_s_per_step'] * 1000:.1f} ms/step CPU", flush=True)
    med = {v: {k: statistics.median(x) for k, x in r.items()} for v, r in runs.items()}
    result["runs_per_step"] = runs
    result["median_per_step"] = med
    for k in ("wall", "cpu"):
        result[f"on_vs_off_{k}"] = med["on"][k] / med["off"][k] - 1
        result[f"on_vs_bare_{k}"] = med["on"][k] / med["bare"][k] - 1
    m = result["micro"]
    # Modelled from the per-call costs: a step event every step, telemetry every 5 s (the default),
    # heartbeat every 2 s, control poll every 0.25 s, at this run's median wall time per step.
    step = med["off"]["wall"]
    result["modelled_cost_per_step_fraction"] = (m["step_event_s"] + m["telemetry_sample_and_event_s"] * step / 5.0
                                                 + m["heartbeat_s"] * step / 2.0
                                                 + m["control_poll_s"] * step / 0.25) / step
    result["env"] = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                     "steps": args.steps, "repeats": args.repeats,
                     "one_thread": args.one_thread, "command": " ".join(sys.argv),
                     "date": time.strftime("%Y-%m-%d")}
    try:
        import deepspeed
        import torch

        result["env"].update(torch=torch.__version__, deepspeed=deepspeed.__version__)
    except ImportError:
        pass
    print(json.dumps({k: v for k, v in result.items() if k != "micro"}, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
