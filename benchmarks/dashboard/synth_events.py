"""A synthetic events.jsonl of a long run, shaped like the worker's stream, written fast.

Default: 32 hours, 300,000 step events (one every 0.384 s), telemetry every 5 s (the worker's default,
``core/run/worker.py`` TELEMETRY_S) for 8 GPUs, an eval every 1000 steps, a checkpoint every 5000, an fp16
overflow (skipped step) every 997 steps, a few alerts and logs. Values are rounded as real readings
are (NVML gives integer percent and bytes), and floats that a real loop computes keep full precision.

    python benchmarks/dashboard/synth_events.py OUT.jsonl [--hours 32] [--steps 300000] [--gpus 8]
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

GIB = 1024 ** 3
T0 = 1767225600.0  # 2026-01-01 00:00:00 UTC


def write_run(path: Path, hours: float = 32.0, steps: int = 300_000, gpus: int = 8,
              telemetry_s: float = 5.0, seed: int = 0) -> dict:
    """Write the file; returns counts of what it holds."""
    from zerotui.core.events.stream import encode, make_event

    rng = random.Random(seed)
    duration = hours * 3600
    step_s = duration / steps
    counts = {"step": 0, "telemetry": 0, "other": 0}
    plan = {"name": "synthetic-32h", "model": "llama-2-7b", "precision": "fp16", "stage": 3,
            "offload_optimizer": "cpu", "gpus": gpus, "micro_batch": 4, "grad_accum": 8, "seq_len": 4096}
    hardware = {"gpus": [{"index": i, "name": "NVIDIA H100 80GB HBM3", "total_bytes": 80 * GIB,
                          "free_bytes": 79 * GIB, "compute_capability": [9, 0], "bf16": True}
                         for i in range(gpus)], "cpu_cores": 64, "cpu_threads": 128,
                "ram_total_bytes": 1024 * GIB, "source": "fake"}
    with open(path, "w", encoding="utf-8") as out:
        w = out.write
        t = T0
        for name, dt in (("importing libraries", 6.0), ("loading model", 95.0), ("tokenising", 240.0),
                         ("initialising DeepSpeed", 140.0)):
            w(encode(make_event("phase", t=t, name=name, done=None, total=None)))
            counts["other"] += 1
            t += dt
        w(encode(make_event("run_started", t=t, plan=plan, hardware=hardware, world_size=gpus,
                            total_steps=steps)))
        start = t
        next_tel = t
        scale = 65536.0
        for step in range(1, steps + 1):
            t = start + step * step_s
            while next_tel <= t:
                w(encode(make_event(
                    "telemetry", t=round(next_tel, 3),
                    gpus=[{"index": i, "util": rng.randint(85, 100), "mem_used": int(71 * GIB + rng.random() * GIB),
                           "mem_total": 80 * GIB, "power_w": round(rng.uniform(550, 700), 1),
                           "temp_c": rng.randint(55, 75)} for i in range(gpus)],
                    cpu_percent=round(rng.uniform(20, 60), 1), ram_used=int((410 + rng.random() * 8) * GIB),
                    ram_total=1024 * GIB, rss=int(380 * GIB + step * 1000), nvme_bytes=0)))
                counts["telemetry"] += 1
                next_tel += telemetry_s
            skipped = 0
            if step % 997 == 0:
                skipped, scale = 1, max(1.0, scale / 2)
            elif step % 2000 == 0:
                scale = min(scale * 2, 2.0 ** 24)
            loss = 1.9 * math.exp(-step / 60_000) + 0.9 + rng.gauss(0, 0.05)
            w(encode(make_event(
                "step", t=round(t, 3), step=step, epoch=step / 100_000, loss=loss,
                lr=2e-5 * 0.5 * (1 + math.cos(math.pi * step / steps)), grad_norm=abs(rng.gauss(1.0, 0.3)),
                loss_scale=scale, skipped=skipped, samples_per_s=rng.uniform(80, 86),
                tokens_per_s=rng.uniform(330_000, 350_000), tflops=rng.uniform(380, 420), step_time=step_s)))
            counts["step"] += 1
            if step % 1000 == 0:
                w(encode(make_event("eval", t=round(t + 1, 3), step=step, loss=loss + 0.05)))
                counts["other"] += 1
            if step % 5000 == 0:
                w(encode(make_event("checkpoint", t=round(t + 2, 3), step=step,
                                    path=f"checkpoints/global_step{step}")))
                counts["other"] += 1
            if step % 75_000 == 0:
                w(encode(make_event("alert", t=round(t + 3, 3), kind="stall",
                                    message="no step for 10 minutes (checkpoint upload)", hint="see worker.log")))
                counts["other"] += 1
    counts["bytes"] = path.stat().st_size
    counts["gpus"] = gpus
    counts["hours"] = hours
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--hours", type=float, default=32.0)
    parser.add_argument("--steps", type=int, default=300_000)
    parser.add_argument("--gpus", type=int, default=8)
    args = parser.parse_args(argv)
    print(write_run(args.out, args.hours, args.steps, args.gpus))
    return 0


if __name__ == "__main__":
    sys.exit(main())
