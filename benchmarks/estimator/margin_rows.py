"""Every committed H200 row with a measured reserved peak, next to the estimator's parts for its plan.

Three sources, each with the plan it ran and PyTorch's peaks as recorded:

    seed scenarios  benchmarks/results/seed-scenarios-*.json (zerotui's worker, 24 GiB cap)
    sweeps          benchmarks/estimator/data/sweep{1,2}-raw.jsonl, rows that started in a fresh worker
                    (a reused worker's reserved pool holds earlier rows' segments), and
                    sweep{1,2,3,4}-expandable-raw.jsonl (2026-12-03: expandable segments, every row in a
                    process of its own; some of sweep 2's rows rebuilt from the printed summary, no
                    phases; sweep 3 held out for the first-step rule)
    speed rows      benchmarks/results/speed-*.json (zerotui's worker, no cap), one row per distinct plan

Each row names the result file it comes from ("file"): crossval_margin.py holds one file out at a time.
"config" is what makes two rows runs of one configuration (repeats.py).
A row is estimated for the allocator it ran with: the row's "alloc_conf" where it has one (recorded since
2026-12-02, when full and LoRA runs started getting expandable segments; QLoRA later that day), else its file's (the command's
own setting), else PyTorch's default — what every run before core/plan/allocator.py had. Speed rows of
the allocator A/B without a recorded value are read from the contender's name.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from benchmarks.estimator.paths import REPO, ensure_zerotui_importable

ensure_zerotui_importable()

from zerotui.core.estimate import gpu
from zerotui.core.estimate.cuda_context import context_bytes
from zerotui.core.estimate.job import job_for
from zerotui.core.model.spec import _llama_family_spec
from zerotui.core.plan.schema import plan_from_dict

from benchmarks.estimator.compare import h200
from benchmarks.estimator.matrix import spec_for

GIB = 2**30
RESULTS = REPO / "benchmarks" / "results"
DATA = REPO / "benchmarks" / "estimator" / "data"


def _seed_shape(name: str) -> dict[str, Any]:
    from benchmarks.seed_scenarios.shapes import SHAPES

    return {"model_type": "llama", **SHAPES[name]}


def components(plan_dict: dict[str, Any], spec, alloc_conf: str = "", saves: bool = True,
               masked: Optional[bool] = None, states_at_start: bool = True) -> dict[str, Any]:
    """The estimator's view of one plan: allocated parts, the margin's terms and the peak moment.
    ``alloc_conf``: the PYTORCH_CUDA_ALLOC_CONF the row ran with (the module docstring), so the estimate
    is for the allocator that was measured. ``saves``: whether the process saved a checkpoint (zerotui's
    worker does, the sweeps' harness does not), which decides its NCCL communicators (cuda_context.py).
    ``masked``: whether the run's attention had a padding mask (seed_scenarios/data.py ran_masked).
    ``states_at_start``: whether the run made Adam's moments before its first step (``made_at_start``)."""
    plan = plan_from_dict({"kernels": "none", **plan_dict})
    job = job_for(plan, spec, h200(), env={"PYTORCH_CUDA_ALLOC_CONF": alloc_conf}, masked=masked,
                  states_at_start=states_at_start)
    states = gpu.model_states(job)
    peak = gpu.peak(job, states)
    return {"parts": {k: v for k, v in peak.parts.items() if v}, "allocated_est": peak.allocated,
            "context": context_bytes(plan, job.N, saves_checkpoints=saves),
            "margin_est": peak.margin, "margin_terms": dict(peak.margin_terms),
            "margin_sources": dict(peak.margin_sources), "phase": peak.phase,
            "step_room": peak.step_room, "step_new": peak.step_new, "moments": dict(peak.moments),
            "job": job, "states": states,
            # the plan's GPU memory cap (the budget's capacity, CUDA context included): margin_table.estimated
            "cap": float(plan.gpu_mem_cap) if plan.gpu_mem_cap else float("inf")}


def made_at_start(record: dict[str, Any]) -> bool:
    """Whether a result's run made Adam's moments before its first step: zerotui's worker since
    2026-12-03 ("before the first step" in the file), the sweeps' harness in sweep 4 (bytes made). Files
    without the key, and eager-a's "no: ...", ran when the optimizer made them at the step."""
    made = record.get("optimizer_states_made")
    return made.startswith("before") if isinstance(made, str) else bool(made)


def seed_rows() -> list[dict[str, Any]]:
    from benchmarks.seed_scenarios.data import ran_masked, ran_seq_len
    from benchmarks.seed_scenarios.scenarios import scenario_shape
    from benchmarks.seed_scenarios.table import ran_every_step, run_nvml

    out = []
    for f in sorted(RESULTS.glob("seed-scenarios-*.json")):
        data = json.loads(f.read_text())
        for name, r in data["scenarios"].items():
            if not r.get("peak_reserved") or (r.get("state") == "failed" and not ran_every_step(r)):
                continue
            shape = scenario_shape(name)
            spec = _llama_family_spec(f"llama-{shape}", _seed_shape(shape), "benchmarks/seed_scenarios/shapes.py")
            # estimated for the micro-batch width that ran (ran_seq_len), not the plan's seq_len
            plan = dict(r["plan"], model=f"llama-{shape}", data="sample", seq_len=ran_seq_len(r["plan"], data))
            alloc, masked = r.get("alloc_conf", data.get("alloc_conf", "")), ran_masked(r["plan"], data)
            out.append({"id": f"{name} ({f.name[15:-16]})", "source": "seed", "file": f.name,
                        "config": (name, json.dumps(plan, sort_keys=True), alloc, masked),
                        "allocated": r["peak_allocated"], "reserved": r["peak_reserved"],
                        "nvml": run_nvml(f.name, data, r),
                        **components(plan, spec, alloc, masked=masked, states_at_start=made_at_start(data))})
    return out


def sweep_rows() -> list[dict[str, Any]]:
    out = []
    for n in (1, 2, 3, 4):
        for name in (f"sweep{n}-raw.jsonl", f"sweep{n}-expandable-raw.jsonl"):
            if not (DATA / name).exists():  # sweeps 3 and 4 ran with expandable segments only
                continue
            for line in (DATA / name).read_text().splitlines():
                r = json.loads(line) if line.strip() else {}
                if r.get("status") != "ok" or r["rss_start"] >= 1.2 * GIB:  # fresh worker only (compare.py)
                    continue
                spec = spec_for(r["shape"])
                first = [m for m in r.get("micro_steps", []) if m["step"] == 0]
                out.append({"id": r["id"], "source": f"sweep{n}", "file": name,
                            # Adam's state made at start (sweep 4) or lazily: not the same run of a plan
                            "config": (r["id"], json.dumps(r["plan"], sort_keys=True), r.get("alloc_conf", ""),
                                       "states at start" if r.get("optimizer_states_made") else "lazy"),
                            "allocated": r["peak_allocated"] - r["baseline_allocated"],
                            "reserved": r["peak_reserved"] - r["baseline_reserved"], "nvml": r["nvml_used_peak"],
                            # reserved before and after the first optimizer step: what the step added
                            "reserved_before_step": max((max(m["fwd_reserved"], m["bwd_reserved"]) for m in first),
                                                        default=None),
                            "reserved_after_step": first[-1]["step_reserved"] if first else None,
                            **components(r["plan"], spec, r.get("alloc_conf", ""), saves=False,
                                         states_at_start=made_at_start(r))})
    return out


def speed_rows() -> list[dict[str, Any]]:
    out, seen = [], set()
    for f in sorted(RESULTS.glob("speed-*.json")):
        data = json.loads(f.read_text())
        for r in data["runs"]:
            if not r.get("peak_reserved"):
                continue
            shape = Path(r["plan"]["model"]).name.split("-")[-1]  # /dev/shm/zt-models/llama-1b
            # benchmarks/speed's allocator A/B sets the run's PYTORCH_CUDA_ALLOC_CONF per contender
            alloc = r.get("alloc_conf", "expandable_segments:True" if r.get("vary") == "alloc" and r["value"] == "expandable" else "")
            key = (shape, r["plan"]["kernels"], r["plan"]["method"], r["plan"]["stage"], r["plan"]["micro_batch"],
                   r["plan"]["seq_len"], r["plan"]["grad_ckpt"], alloc)
            if key in seen:
                continue
            seen.add(key)
            spec = _llama_family_spec(f"llama-{shape}", _seed_shape(shape), "benchmarks/seed_scenarios/shapes.py")
            label = f"{r['job']} {r['value']}" if r.get("vary") == "alloc" else f"{r['job']} kernels {r['plan']['kernels']}"
            out.append({"id": label, "source": "speed", "file": f.name,
                        "allocated": r["peak_allocated"], "reserved": r["peak_reserved"],
                        # before "nvml_clean" benchmarks/speed built its model in the measuring process,
                        # whose CUDA context (610 MiB) NVML counted too: not the run's own figure
                        "nvml": r["nvml_used_max"] if data.get("nvml_clean") else None,
                        **components(dict(r["plan"], data="sample"), spec, alloc, states_at_start=made_at_start(data))})
    return out


def all_rows() -> list[dict[str, Any]]:
    return seed_rows() + sweep_rows() + speed_rows()
