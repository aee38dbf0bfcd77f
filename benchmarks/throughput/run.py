"""zerotui's training loop vs the Hugging Face Trainer, same model / DeepSpeed config / data shape / steps.

One command, alternating the contenders in fresh processes and repeating, then comparing medians (runs
on a shared machine drift by 10-20% between repeats)::

    python -m benchmarks.throughput.run --shape 1.1b --case a --case b --repeats 3 --out results.json
    python -m benchmarks.throughput.run --dry-run          # tiny shape on the CPU, a minute or two

Cases:
  a  ZeRO-2, bf16, micro-batch 4, sequence 1024
  b  the same with ZeRO-3 and optimizer + parameters offloaded to CPU
  c  case a on documents of many lengths (median ~150 words, at most seq_len/2 words): zerotui packs them
     (``packing: true``, no attention across documents), the Trainer pads each micro-batch to its longest
     row, as its padding collators do; tokens/s counts real (non-padding) tokens on both sides
  d  case b (ZeRO-3, optimizer + parameters on CPU) on case c's documents, packed by zerotui, padded by the
     Trainer

Contenders, each in its own process:
  zerotui        the real worker under its supervisor (``zerotui.core.run.supervisor RUN --direct -- ... worker RUN``): events to events.jsonl, telemetry
                 every 5 s (the default), status heartbeat, control polling — what users run
  zerotui-bare   ``engine.train`` alone, events kept in memory: the 'events and telemetry off' side
  trainer        ``transformers.Trainer`` with ``deepspeed=`` the same ds_config.json

Measured: tokens/s over each ``log_interval`` window after the first (the first holds start-up and
warm-up), median per run, then the median over repeats; the ratio zerotui / trainer, and the
overhead 1 - zerotui / zerotui-bare.
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
from types import SimpleNamespace
from typing import Any


from .shapes import SHAPES, build_model_folder, write_text_data, write_varlen_data

CASES: dict[str, dict[str, Any]] = {
    "a": dict(stage=2, offload_optimizer="none", offload_params="none"),
    "b": dict(stage=3, offload_optimizer="cpu", offload_params="cpu"),
    "c": dict(stage=2, offload_optimizer="none", offload_params="none", packing=True),
    "d": dict(stage=3, offload_optimizer="cpu", offload_params="cpu", packing=True),
}
#: Cases whose rows have many lengths (their own data file: shapes.write_varlen_data).
VARLEN = {"c", "d"}
CONTENDERS = ("zerotui", "trainer", "zerotui-bare")
#: Run only when asked (--contender): the Trainer with transformers' packing collator (cases with VARLEN data).
EXTRA_CONTENDERS = ("trainer-packed",)


def make_run(root: Path, model_dir: Path, data_file: Path, case: str, a: argparse.Namespace) -> Path:
    from zerotui.core.deepspeed.config import build_ds_config
    from zerotui.core.plan.schema import plan_from_dict

    shape = SHAPES[a.shape]
    plan = plan_from_dict(dict(
        name=f"bench-{case}", model=str(model_dir), data=str(data_file), data_format="text",
        precision="bf16", micro_batch=a.micro_batch, grad_accum=1, seq_len=a.seq_len,
        lr=1e-5, warmup_steps=0, lr_schedule="constant", max_steps=a.log_interval * (a.windows + 1),
        log_interval=a.log_interval, save_interval=0, save_minutes=0, save_final=False, eval_fraction=0.0,
        seed=1, kernels=a.kernels, **CASES[case]))
    root.mkdir(parents=True)
    (root / "checkpoints").mkdir()
    (root / "plan.yaml").write_text(plan.to_yaml())
    h = shape["hidden_size"]
    spec = SimpleNamespace(hidden_size=h, largest_param_numel=max(h * shape["vocab_size"], h * shape["intermediate_size"]))
    (root / "ds_config.json").write_text(json.dumps(build_ds_config(plan, 1, spec, run_dir=root), indent=2))
    return root


def _median_rate(pairs: list[tuple[int, float]], first_step: int) -> tuple[float, list[float]]:
    rates = [r for step, r in pairs if step > first_step]
    return (statistics.median(rates) if rates else float("nan")), rates


def run_one(contender: str, run_dir: Path, env: dict, log_interval: int, timeout: float) -> dict[str, Any]:
    out = run_dir / f"{contender}.json"
    mod = {"zerotui-bare": "benchmarks.throughput.engine_side", "trainer": "benchmarks.throughput.trainer_side",
           "trainer-packed": "benchmarks.throughput.trainer_side"}
    if contender == "zerotui":
        # The worker runs under its supervisor (the sole writer of run_finished), as `zerotui train` starts it.
        argv = [sys.executable, "-m", "zerotui.core.run.supervisor", str(run_dir), "--direct", "--",
                sys.executable, "-m", "zerotui.core.run.worker", str(run_dir)]
    else:
        argv = [sys.executable, "-m", mod[contender], str(run_dir), str(out)]
        if contender == "trainer-packed":
            argv.append("--packed")
    started = time.time()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.time() - started
    (run_dir / f"{contender}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        return {"contender": contender, "error": (proc.stderr or proc.stdout)[-1500:], "wall_s": wall}
    if contender.startswith("trainer"):
        blob = json.loads(out.read_text())
        pairs = [tuple(p) for p in blob["tokens_per_s"]]
        to_first = (blob["first_step"] or started) - blob["process_start"]
    else:
        if contender == "zerotui":
            from zerotui.core.events.stream import read_all

            evs = read_all(run_dir / "events.jsonl")
            t0 = started
        else:
            blob = json.loads(out.read_text())
            evs, t0 = blob["events"], blob["process_start"]
        pairs = [(e["step"], e["tokens_per_s"]) for e in evs if e["type"] == "step"]
        first = next((e["t"] for e in evs if e["type"] == "phase" and e["name"] == "first step"), t0)
        to_first = first - t0
    median, rates = _median_rate(pairs, log_interval)
    return {"contender": contender, "tokens_per_s_median": median, "tokens_per_s": rates,
            "startup_s": round(to_first, 1), "wall_s": round(wall, 1)}


def environment() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                            "host": platform.node(), "cpu_count": os.cpu_count()}
    for name in ("deepspeed", "transformers", "peft", "accelerate"):
        try:
            info[name] = __import__(name).__version__
        except Exception as err:  # noqa: BLE001
            info[name] = f"unavailable: {err}"
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_count"] = torch.cuda.device_count()
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="tiny shape, short, CPU-friendly: checks the harness")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="1.1b")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="a, b, c and/or d (default a and b)")
    ap.add_argument("--contender", action="append", choices=CONTENDERS + EXTRA_CONTENDERS,
                    help="default: the first three (trainer-packed: the Trainer with a packing collator, cases c and d)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kernels", choices=("none", "liger"), default="none",
                    help="Liger's fused kernels on both sides (zerotui's plan field; the Trainer's use_liger_kernel)")
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--log-interval", type=int, default=5, help="steps per measured window")
    ap.add_argument("--windows", type=int, default=4, help="measured windows per run (after the first)")
    ap.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per run")
    ap.add_argument("--out", type=Path, help="results JSON (default: $OUT/throughput.json or ./throughput.json)")
    a = ap.parse_args(argv)
    if a.dry_run:
        a.shape, a.seq_len, a.log_interval, a.windows = "tiny", 128, 2, 3
        a.repeats = min(a.repeats, 1)
    cases = a.case or ["a", "b"]
    contenders = a.contender or list(CONTENDERS)
    out = a.out or Path(os.environ.get("OUT", ".")) / "throughput.json"
    work = a.work or Path(tempfile.mkdtemp(prefix="zerotui-throughput-"))
    env = dict(os.environ, ZEROTUI_CACHE_DIR=str(work / "cache"), PYTHONUNBUFFERED="1")
    model_dir = build_model_folder(a.shape, work / f"model-{a.shape}")
    steps = a.log_interval * (a.windows + 1)
    data_file = write_text_data(work / "data.jsonl", rows=steps * a.micro_batch + 8,
                                words_per_row=a.seq_len)  # ~2 tokens a word: always longer than seq_len
    # enough documents for every step packed (a 1,024-token row holds ~3 of them)
    varlen_file = write_varlen_data(work / "data-varlen.jsonl", rows=steps * a.micro_batch * 8 + 64,
                                    median_words=max(8, a.seq_len // 7), max_words=a.seq_len // 2)
    results: list[dict[str, Any]] = []
    for case in cases:
        for rep in range(a.repeats):
            # Rotate the order each repeat so no contender always runs first (cold caches, turbo).
            order = contenders[rep % len(contenders):] + contenders[:rep % len(contenders)]
            for contender in order:
                data = varlen_file if case in VARLEN else data_file
                run_dir = make_run(work / f"{case}-{rep}-{contender}", model_dir, data, case, a)
                r = run_one(contender, run_dir, env, a.log_interval, a.timeout)
                r.update(case=case, repeat=rep)
                results.append(r)
                print(json.dumps({k: v for k, v in r.items() if k != "tokens_per_s"}), flush=True)
    summary = summarise(results, cases)
    doc = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv), "shape": a.shape,
           "micro_batch": a.micro_batch, "seq_len": a.seq_len, "steps_per_run": steps,
           "cases": {c: CASES[c] for c in cases}, "environment": environment(), "summary": summary,
           "runs": results}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2))
    print(json.dumps(summary, indent=2))
    print(f"wrote {out}")
    return 0 if all("error" not in r for r in results) else 1


def summarise(results: list[dict[str, Any]], cases: list[str]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for case in cases:
        med = {}
        for c in CONTENDERS + EXTRA_CONTENDERS:
            vals = [r["tokens_per_s_median"] for r in results
                    if r["case"] == case and r["contender"] == c and "error" not in r]
            if vals:
                med[c] = round(statistics.median(vals), 1)
        s: dict[str, Any] = {"tokens_per_s_median": med}
        if "zerotui" in med and "trainer" in med:
            s["zerotui_vs_trainer"] = round(med["zerotui"] / med["trainer"], 3)
        if "zerotui" in med and "trainer-packed" in med:
            s["zerotui_vs_trainer_packed"] = round(med["zerotui"] / med["trainer-packed"], 3)
        if "zerotui" in med and "zerotui-bare" in med:
            s["event_telemetry_overhead"] = round(1 - med["zerotui"] / med["zerotui-bare"], 4)
        summary[case] = s
    return summary


if __name__ == "__main__":
    sys.exit(main())
