"""Speed through the product on one GPU: fused kernels on and off, checkpoints in the background and in
the foreground, start-up to the first step — contenders alternating in one command.

    python -m benchmarks.speed.run --out results.json --job 1b-full --repeats 2
    python -m benchmarks.speed.run --out results.json --job 1b-ckpt
    python -m benchmarks.speed.run --dry-run --out /tmp/speed-dry.json     # the tiny shape on the CPU

Jobs (random-weight Llama shapes from benchmarks/seed_scenarios/shapes.py, trained by
``zerotui train PLAN --foreground``; each plan is the first that ``zerotui fit`` recommends for the job
on this machine, picked with the contender's ``kernels`` setting, so "fit's pick" may differ between
contenders, as it would for a user):

* ``1b-full``: the 1.1B full fine-tune, bf16, 16 sequences of 1024 tokens per step; kernels none vs auto.
* ``7b-lora``: a 7B LoRA (r 16 on q/k/v/o), bf16, 16 × 1024 per step; kernels none vs auto.
* ``1b-ckpt``: the 1.1B job on fit's pick with a checkpoint every 10 steps; background saves off vs on
  (the ``checkpoint`` events' ``seconds`` is how long training waited, ``write_seconds`` the whole write).
* ``1b-z2-pin``, ``1b-z3-pin``: the 1.1B job with Adam on the CPU at ZeRO-2 / ZeRO-3, as written (no fit);
  pinned host buffers vs pageable ones (``pin_memory`` true vs false).

Reported per run: median tokens/s and TFLOP/s per GPU over the step windows after the first, MFU against
the H200's data-sheet and measured bf16 peaks, the estimate against the measured peak, seconds from
``zerotui train`` to the first step event, and the checkpoint stalls.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.seed_scenarios.data import write_data
from benchmarks.seed_scenarios.models import build_model_apart
from benchmarks.seed_scenarios.run import _derive, _versions, measure, run_plan
from benchmarks.seed_scenarios.scenarios import ALL_LINEAR

ALLOC_ENV = "PYTORCH_CUDA_ALLOC_CONF"
#: An empty value is the user's choice of PyTorch's default (core/plan/allocator.py never overrides it).
ALLOC_VALUES = {"default": "", "expandable": "expandable_segments:True"}
JOBS: dict[str, dict[str, Any]] = {
    "1b-full": dict(shape="1b", fields=dict(method="full", precision="bf16", micro_batch=16, grad_accum=1,
                                            seq_len=1024), vary="kernels", values=["none", "auto"]),
    "7b-lora": dict(shape="7b", fields=dict(method="lora", precision="bf16", micro_batch=16, grad_accum=1,
                                            seq_len=1024), vary="kernels", values=["none", "auto"]),
    "7b-lora-all": dict(shape="7b", fields=dict(method="lora", precision="bf16", micro_batch=16, grad_accum=1,
                                                seq_len=1024, lora_targets=ALL_LINEAR), vary="kernels",
                        values=["none", "auto"]),
    "1b-ckpt": dict(shape="1b", fields=dict(method="full", precision="bf16", micro_batch=16, grad_accum=1,
                                            seq_len=1024, save_interval=10, keep_checkpoints=1),
                    vary="save_background", values=[False, True]),
    # The same plan (fit's pick under PyTorch's default allocator) with the default allocator and with
    # expandable segments: the variable is the run's PYTORCH_CUDA_ALLOC_CONF, not a plan field.
    "1b-alloc": dict(shape="1b", fields=dict(method="full", precision="bf16", micro_batch=16, grad_accum=1,
                                             seq_len=1024), vary="alloc", values=["default", "expandable"]),
    "7b-lora-alloc": dict(shape="7b", fields=dict(method="lora", precision="bf16", micro_batch=16, grad_accum=1,
                                                  seq_len=1024), vary="alloc", values=["default", "expandable"]),
    # Two seed plans (benchmarks/seed_scenarios/scenarios.py's 1b-full-ho9 and 1b-qlora-ho10) run as written
    # (pick "seed": no fit), default allocator against expandable segments.
    "1b-z3-alloc": dict(shape="1b", fields=dict(method="full", precision="bf16", stage=3, kernels="none", micro_batch=8,
                                                grad_accum=2, seq_len=1024, grad_ckpt=True),
                        vary="alloc", values=["default", "expandable"], pick="seed"),
    "1b-qlora-alloc": dict(shape="1b", fields=dict(method="qlora", precision="bf16", stage=2, kernels="none",
                                                   lora_targets=ALL_LINEAR, micro_batch=8, grad_accum=2, seq_len=1024,
                                                   grad_ckpt=True),
                           vary="alloc", values=["default", "expandable"], pick="seed"),
    # The 7B QLoRA job as fit picks it (under --cap 24GiB for the 24 GB card), default allocator against
    # expandable segments: the pairs that decided QLoRA gets them too (core/plan/allocator.py).
    "7b-qlora-alloc": dict(shape="7b", fields=dict(method="qlora", precision="bf16", stage=3, lora_targets=ALL_LINEAR,
                                                   micro_batch=2, grad_accum=8, seq_len=1024, grad_ckpt=True),
                           vary="alloc", values=["default", "expandable"]),
    # Pinned against pageable host buffers for the offloaded optimizer (the plan's pin_memory), on seed plans
    # (no fit): the 1.1B full fine-tune with Adam on the CPU at ZeRO-2 and at ZeRO-3. fit falls back to
    # unpinned memory only when nothing fits pinned (core/estimate/recommend.py); this is what it costs.
    "1b-z2-pin": dict(shape="1b", fields=dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu",
                                              kernels="auto", micro_batch=8, grad_accum=2, seq_len=1024, grad_ckpt=True),
                      vary="pin_memory", values=[True, False], pick="seed"),
    "1b-z3-pin": dict(shape="1b", fields=dict(method="full", precision="bf16", stage=3, offload_optimizer="cpu",
                                              kernels="auto", micro_batch=8, grad_accum=2, seq_len=1024, grad_ckpt=True),
                      vary="pin_memory", values=[True, False], pick="seed"),
    "tiny": dict(shape="tiny", fields=dict(method="full", precision="fp32", micro_batch=2, grad_accum=1,
                                           seq_len=128, save_interval=3, keep_checkpoints=1),
                 vary="kernels", values=["none", "auto"]),
}


def plan_for(job: str, value: Any, model_dir: Path, data: Path, steps: int, log_interval: int, cap: int) -> Any:
    from zerotui.core.estimate.recommend import recommend
    from zerotui.core.hardware.detect import detect
    from zerotui.core.plan.schema import plan_from_dict

    spec = JOBS[job]
    fields = dict(name=f"{job}-{spec['vary']}-{value}".replace("_", "-").lower(), model=str(model_dir),
                  data=str(data), data_format="text", gpus=1, lr=1e-4, warmup_steps=0, lr_schedule="constant",
                  max_steps=steps, log_interval=log_interval, save_interval=0, save_minutes=0, save_final=False,
                  eval_fraction=0.0, seed=1, gpu_mem_cap=cap or None)
    fields.update(spec["fields"])
    if spec["vary"] != "alloc":
        fields[spec["vary"]] = value
    plan = plan_from_dict(fields, fields["name"])
    if spec.get("pick") == "seed":
        return plan
    recs = recommend(plan, detect(probe_disks=False))
    if not recs:
        raise SystemExit(f"{job}: nothing fits")
    return recs[0].plan


def main() -> int:
    from zerotui.core.plan.allocator import effective_conf

    ap = argparse.ArgumentParser()
    ap.add_argument("--job", action="append", default=[])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--log-interval", type=int, default=5)
    ap.add_argument("--cap", default="0")
    ap.add_argument("--models-dir", type=Path, default=None)
    ap.add_argument("--runs-dir", type=Path, default=None, help="where run folders (and checkpoints) go")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", default=None, help="run only this value of the job's contenders (e.g. True)")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    from zerotui.core.sizes import parse_size

    if a.dry_run:
        a.job, a.steps, a.log_interval, a.repeats = a.job or ["tiny"], 8, 2, 1
    cap = parse_size(a.cap) if a.cap not in ("0", "none") else 0
    work = Path(tempfile.mkdtemp(prefix="zt-speed-"))
    models = a.models_dir or work / "models"
    models.mkdir(parents=True, exist_ok=True)
    data = write_data(work / "data.jsonl", rows=400 if a.dry_run else 3000, words=200 if a.dry_run else 1400)
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv), "versions": _versions(),
                           "runs": [], "summary": {},
                           "nvml_clean": True,  # models built in a child: no CUDA context here (build_model_apart)
                           "optimizer_states_made": "before the first step"}  # core/train/optimizer_state.py
    for job in a.job:
        spec = JOBS[job]
        folder = models / f"llama-{spec['shape']}"
        print(f"model {spec['shape']}: {build_model_apart(spec['shape'], folder)}", flush=True)
        for rep in range(a.repeats):
            values = spec["values"] if rep % 2 == 0 else list(reversed(spec["values"]))  # alternate the order
            if a.only is not None:
                values = [v for v in values if str(v) == a.only]
            for value in values:
                outer = os.environ.get(ALLOC_ENV)
                if spec["vary"] == "alloc":  # one plan for both: picked for the default allocator
                    os.environ[ALLOC_ENV] = ""
                plan = plan_for(job, value, folder, data, a.steps, a.log_interval, cap)
                if spec["vary"] == "alloc":
                    os.environ[ALLOC_ENV] = ALLOC_VALUES[value]
                alloc_conf = effective_conf(os.environ)  # what the run will have
                runs = (a.runs_dir or work) / "runs"
                runs.mkdir(parents=True, exist_ok=True)
                try:
                    run, t0, rc, tail, fine = run_plan(plan, runs, a.timeout)
                finally:  # the next job gets the command's own setting (or zerotui's choice) again
                    if outer is None:
                        os.environ.pop(ALLOC_ENV, None)
                    else:
                        os.environ[ALLOC_ENV] = outer
                row = {"job": job, "vary": spec["vary"], "value": value, "repeat": rep, "rc": rc, "alloc_conf": alloc_conf,
                       "plan": plan.to_dict(), **measure(run, t0, fine=fine), **_checkpoints(run), **_kernel_note(run),
                       "phases_s": _phases(run, t0), "windows": _windows(run)}
                if rc != 0:
                    row["tail"] = tail
                _derive(row, spec["shape"], cap)
                out["runs"].append(row)
                print(json.dumps({k: row.get(k) for k in ("job", "value", "state", "tokens_per_s", "mfu_measured_peak",
                                                          "error_pct", "first_step_s", "stalls_s", "kernels")}),
                      flush=True)
                shutil.rmtree(run, ignore_errors=True)  # checkpoints of the 1.1B job are 15 GB each
                a.out.write_text(json.dumps(out, indent=1))
        out["summary"][job] = _summary([r for r in out["runs"] if r["job"] == job], spec["values"])
        a.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out["summary"], indent=1))
    return 0


def _checkpoints(run: Path) -> dict[str, Any]:
    from zerotui.core.events.stream import read_all

    cks = [e for e in read_all(run / "events.jsonl") if e["type"] == "checkpoint"]
    return {"stalls_s": [c.get("seconds") for c in cks], "write_s": [c.get("write_seconds") for c in cks],
            "checkpoint_bytes": cks[0].get("bytes") if cks else None,
            "background": [c.get("background") for c in cks]}


def _phases(run: Path, t0: float) -> list[tuple[str, float]]:
    """Seconds from ``zerotui train`` to the start of each start-up phase (where the time goes)."""
    from zerotui.core.events.stream import read_all

    out, seen = [], set()
    for e in read_all(run / "events.jsonl"):
        if e["type"] in ("phase", "run_started") and e.get("name", e["type"]) not in seen:
            seen.add(e.get("name", e["type"]))
            out.append((e.get("name", e["type"]), round(e["t"] - t0, 1)))
        if e["type"] == "step":
            out.append(("first step event", round(e["t"] - t0, 1)))
            break
    return out


def _windows(run: Path) -> list[tuple[int, float]]:
    """(step, tokens/s) of every step event: a stall (a save, a pinned allocation) shows as a dip."""
    from zerotui.core.events.stream import read_all

    return [(e["step"], round(e.get("tokens_per_s") or 0)) for e in read_all(run / "events.jsonl") if e["type"] == "step"]


def _kernel_note(run: Path) -> dict[str, Any]:
    from zerotui.core.events.stream import read_all

    for e in read_all(run / "events.jsonl"):
        if e["type"] == "log" and "kernels:" in (e.get("message") or ""):
            return {"kernels": e["message"].split("kernels:", 1)[1].strip()}
    return {"kernels": None}


def _summary(rows: list[dict], values: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for v in values:
        mine = [r for r in rows if r["value"] == v and r.get("tokens_per_s")]
        med = lambda k: statistics.median(r[k] for r in mine if r.get(k) is not None) if any(r.get(k) is not None for r in mine) else None  # noqa: E731
        # Stalls of interval saves only: the last one of a run is the end's save, always in the foreground.
        stalls = [s for r in mine for s in (r.get("stalls_s") or [])[:-1] if s is not None]
        out[str(v)] = {"tokens_per_s": med("tokens_per_s"), "mfu_measured_peak": med("mfu_measured_peak"),
                       "mfu_spec": med("mfu_spec"), "error_pct": med("error_pct"),
                       "peak_reserved": med("peak_reserved"), "nvml_used_max": med("nvml_used_max"), "first_step_s": [r.get("first_step_s") for r in mine],
                       "interval_stall_s": statistics.median(stalls) if stalls else None,
                       "micro_batch": mine[0]["plan"]["micro_batch"] if mine else None,
                       "stage": mine[0]["plan"]["stage"] if mine else None}
    return out


if __name__ == "__main__":
    sys.exit(main())
