"""Settings for the tiny-cpu-demo preset, measured with zerotui's own engine on this machine's CPU.

Each variant trains the built-in tiny model on the shipped sample data for 60 steps (ZeRO-2, the
preset's shape otherwise), in a fresh process, alternating variants over ``--rounds``. Recorded per
run: the loss at the first and last step events and the final eval loss (does it visibly learn?),
the median step time from the step events, and the process's CPU seconds (steadier than wall time
on a machine other jobs share).

    python -m benchmarks.throughput.tiny_demo [--rounds 2] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

RUNNER = Path(__file__).resolve().parents[2] / "tests" / "engine_runner.py"
BASE = dict(model="tiny", data="sample", stage=2, grad_accum=1, seq_len=128, warmup_steps=5,
            lr_schedule="cosine", min_lr_ratio=0.1, max_steps=60, log_interval=5, eval_interval=0,
            eval_batches=4, save_interval=0, save_minutes=0, save_final=False, seed=42)
VARIANTS = {
    "fp32-mb8-lr1e-3 (preset)": dict(precision="fp32", micro_batch=8, lr=1e-3),
    "bf16-mb8-lr1e-3": dict(precision="bf16", micro_batch=8, lr=1e-3),
    "fp32-mb8-lr3e-3": dict(precision="fp32", micro_batch=8, lr=3e-3),
    "fp32-mb16-lr3e-3": dict(precision="fp32", micro_batch=16, lr=3e-3),
    "bf16-mb16-lr3e-3": dict(precision="bf16", micro_batch=16, lr=3e-3),
}


def run(variant: str, work: Path, env: dict) -> dict:
    root = work / f"{variant.split()[0]}-{time.monotonic_ns()}"
    (root / "checkpoints").mkdir(parents=True)
    (root / "plan.yaml").write_text(yaml.safe_dump({**BASE, **VARIANTS[variant]}))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.run([sys.executable, str(RUNNER), str(root)], env=env, capture_output=True, text=True)
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    events = [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines()]
    steps = [e for e in events if e["type"] == "step"]
    evals = [e for e in events if e["type"] == "eval"]
    first_step_t = next(e["t"] for e in events if e["type"] == "phase" and e["name"] == "first step")
    return {"variant": variant, "ok": proc.returncode == 0 and bool(steps),
            "loss_first": steps[0]["loss"] if steps else None, "loss_last": steps[-1]["loss"] if steps else None,
            "eval_loss": evals[-1]["loss"] if evals else None,
            "step_time_median": statistics.median(e["step_time"] for e in steps[1:]) if len(steps) > 1 else None,
            "train_s": round(steps[-1]["t"] - first_step_t, 2) if steps else None,
            "process_wall_s": round(wall, 1),
            "process_cpu_s": round((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="zerotui-tiny-demo-"))
    env = dict(os.environ, ZEROTUI_CACHE_DIR=str(work / "cache"))
    results = []
    for r in range(a.rounds):
        names = list(VARIANTS)
        for v in names[r % len(names):] + names[:r % len(names)]:
            res = run(v, work, env)
            res["round"] = r
            results.append(res)
            print(json.dumps(res), flush=True)
    summary = {}
    for v in VARIANTS:
        rs = [x for x in results if x["variant"] == v and x["ok"]]
        if rs:
            summary[v] = {k: round(statistics.median(x[k] for x in rs), 3)
                          for k in ("loss_first", "loss_last", "eval_loss", "step_time_median", "train_s",
                                    "process_wall_s", "process_cpu_s")}
    doc = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv), "cpu_count": os.cpu_count(),
           "load_avg_at_end": os.getloadavg(), "summary": summary, "runs": results}
    print(json.dumps(summary, indent=2))
    if a.out:
        a.out.write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
