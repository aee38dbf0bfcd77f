"""Which precision should the tiny-cpu-demo preset use, and do zerotui's ZeRO settings suit the CPU?

Runs the preset's own ds_config (``build_ds_config``) on the built-in tiny model in fresh processes,
alternating the variants (the machine is shared, so medians of alternated runs), and writes
``benchmarks/results/tiny_cpu_precision.json``::

    python -m benchmarks.tiny_cpu_precision [--rounds 3] [--steps 60]

Variants: fp32 and bf16 as the preset writes them; fp32 with overlap_comm off; fp32 with DeepSpeed's
default 5e8 buckets instead of the model-sized h*h ones. Each step records wall time and the CPU time
of the process (``time.process_time``): on a machine other jobs share, CPU seconds per step are the
steadier measure of the work a configuration costs.

The tokens are a fixed random pool (64 sequences reused), so the loss can fall; speed does not depend
on the token values.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULT = Path(__file__).parent / "results" / "tiny_cpu_precision.json"


VARIANTS = {
    "fp32": {"precision": "fp32"},
    "bf16": {"precision": "bf16"},
    "fp32-no-overlap": {"precision": "fp32", "overlap_comm": False},
    "fp32-ds-buckets": {"precision": "fp32", "reduce_bucket_size": 500_000_000, "allgather_bucket_size": 500_000_000},
}


def one_run(variant: str, steps: int) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import deepspeed
    import torch

    from zerotui.core.deepspeed.config import build_ds_config
    from zerotui.core.plan.presets import load_preset
    from zerotui.core.model.tiny import TINY_SHAPE, tiny_model

    plan = load_preset("tiny-cpu-demo").with_changes(**VARIANTS[variant])

    class Spec:  # the two ModelSpec fields build_ds_config reads, from the tiny model's shape
        hidden_size = TINY_SHAPE["hidden_size"]
        largest_param_numel = TINY_SHAPE["vocab_size"] * TINY_SHAPE["hidden_size"]

    ds = build_ds_config(plan, 1, Spec())
    torch.manual_seed(0)
    model = tiny_model(seed=0)
    deepspeed.init_distributed(dist_backend="gloo")
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds)
    gen = torch.Generator().manual_seed(1)
    pool = torch.randint(3, TINY_SHAPE["vocab_size"], (64, plan.seq_len), generator=gen)
    times, cpu, losses = [], [], []
    for _ in range(steps):
        x = pool[torch.randint(0, 64, (plan.micro_batch,), generator=gen)]
        t, c = time.perf_counter(), time.process_time()
        loss = engine(input_ids=x, labels=x).loss
        engine.backward(loss)
        engine.step()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        losses.append(float(loss))
    torch.distributed.destroy_process_group()
    return {"variant": variant, "median_step_s": statistics.median(times[3:]),
            "median_step_cpu_s": statistics.median(cpu[3:]), "total_s": sum(times),
            "loss_first": losses[0], "loss_last5_mean": statistics.mean(losses[-5:])}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--out", type=Path, default=RESULT, help="where to write the JSON results")
    ap.add_argument("--note", default="", help="how the machine was set up (recorded in the results)")
    ap.add_argument("--one", choices=list(VARIANTS), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print("RESULT " + json.dumps(one_run(args.one, args.steps)))
        return 0
    runs = []
    for _ in range(args.rounds):
        for variant in VARIANTS:
            out = subprocess.run([sys.executable, "-m", "benchmarks.tiny_cpu_precision", "--one", variant,
                                  "--steps", str(args.steps)], capture_output=True, text=True, check=True)
            line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
            runs.append(json.loads(line[len("RESULT "):]))
            print(runs[-1], flush=True)
    import deepspeed
    import torch

    summary = {v: {key: statistics.median(r[key] for r in runs if r["variant"] == v)
                   for key in ("median_step_s", "median_step_cpu_s", "loss_last5_mean")} for v in VARIANTS}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d"), "command": "python -m benchmarks.tiny_cpu_precision "
        f"--rounds {args.rounds} --steps {args.steps}", "machine": f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}",
        "affinity": sorted(os.sched_getaffinity(0)), "note": args.note,
        "torch": torch.__version__, "deepspeed": deepspeed.__version__, "summary": summary, "runs": runs,
    }, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
