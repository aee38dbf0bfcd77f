"""Does the recommender's first choice fit, and is it within 10% of the fastest that does?

    python -m benchmarks.estimator.check_recommender benchmarks/estimator/data/sweep[12]-raw.jsonl

For each job measured under several configurations (same model, method, precision, sequence length
and sequences per optimizer step) and each GPU size, ask core/fit.recommend for its first choice on a
GPU of that size (the H200's RAM), then look it up among the measured rows:
- it must be measured (else 'unmeasured': the check cannot be made);
- its measured GPU footprint must fit (no OOM): nvidia-smi's peak for a fresh worker process, else
  reserved growth + the CUDA context;
- its measured step time must be within 10% of the fastest measured configuration that fits.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.estimator.compare import h200, load, measured  # noqa: E402
from benchmarks.estimator.fit_speed import measured_step  # noqa: E402
from benchmarks.estimator.matrix import spec_for  # noqa: E402
from zerotui.core.estimate import speed  # noqa: E402
from zerotui.core.estimate.recommend import recommend  # noqa: E402
from zerotui.core.hardware.types import GpuInfo  # noqa: E402
from zerotui.core.estimate.calibration import CUDA_CONTEXT_BYTES  # noqa: E402
from zerotui.core.plan.schema import plan_from_dict  # noqa: E402

GIB = 2**30
CAPACITIES_GIB = (141, 80, 48, 24)  # the sizes sweep 2 was planned for
KEY = ("stage", "offload_optimizer", "offload_params", "micro_batch", "grad_accum", "grad_ckpt")


def footprint(r: dict) -> int:
    if r["host_fresh"]:
        return r["nvml_used_peak"]
    return r["peak_reserved"] - r["baseline_reserved"] + CUDA_CONTEXT_BYTES


def jobs(rows: list[dict]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("status") != "ok" or not r.get("group"):
            continue
        if not r.get("step_times"):
            # Rows rebuilt from a sweep's printed summary (the *-expandable files) have no timed steps to
            # rank, and were measured under another allocator than the rows they would be ranked with.
            continue
        # Rows recorded before plans had `kernels` ran without Liger's kernels.
        p = plan_from_dict({"kernels": "none", **r["plan"]})
        key = (r["shape"], p.method, p.precision, p.seq_len, p.micro_batch * p.grad_accum)
        r["_plan"] = p
        out.setdefault(key, []).append(r)
    return out


def check(rows: list[dict], coefficients=None) -> list[dict]:
    if coefficients is not None:
        speed.H200 = coefficients
    results = []
    for key, group in jobs(rows).items():
        if len(group) < 2:  # one configuration of a job: nothing to rank
            continue
        shape = key[0]
        spec = spec_for(shape)
        base = group[0]["_plan"]
        for cap in CAPACITIES_GIB:
            hw = h200()
            hw.gpus = [GpuInfo(index=0, name=f"{cap} GiB GPU", total_bytes=cap * GIB, free_bytes=cap * GIB,
                               compute_capability=(9, 0), bf16=True)]
            recs = recommend(base, hw, spec, limit=3)
            fitting = [r for r in group if footprint(r) <= cap * GIB]
            fastest = min(fitting, key=measured_step) if fitting else None
            res = {"job": f"{shape} {key[1]} {key[2]} seq {key[3]} x {key[4]}", "gpu_gib": cap,
                   "measured_configs": len(group), "measured_fitting": len(fitting),
                   "fastest_fitting": fastest["id"] if fastest else None,
                   "fastest_step_s": measured_step(fastest) if fastest else None}
            if not recs:
                res.update(choice=None, verdict="nothing recommended" if fitting else "ok (nothing fits)")
                results.append(res)
                continue
            choice = recs[0].plan
            hit = next((r for r in group if all(getattr(r["_plan"], f) == getattr(choice, f) for f in KEY)), None)
            res["choice"] = {f: getattr(choice, f) for f in KEY}
            res["choice_predicted_gpu_gib"] = round(recs[0].budget.gpu_bytes / GIB, 2)
            if hit is None:
                res["verdict"] = "unmeasured"
            else:
                fits = footprint(hit) <= cap * GIB
                t = measured_step(hit)
                res.update(choice_id=hit["id"], choice_measured_gpu_gib=round(footprint(hit) / GIB, 2),
                           choice_step_s=t, fits=fits,
                           slower_than_fastest=(t / res["fastest_step_s"] - 1) if fastest else None)
                ok = fits and fastest is not None and t <= 1.10 * res["fastest_step_s"]
                res["verdict"] = "ok" if ok else ("OOM" if not fits else "too slow")
            results.append(res)
    return results


def main(argv: list[str]) -> int:
    rows = load(argv)
    measured(rows)
    for r in rows:
        if r.get("status") == "ok":
            r["host_fresh"] = r["rss_start"] < 1.2 * GIB
    for res in check(rows):
        c = res.get("choice") or {}
        print(f"{res['job'][:34]:34} {res['gpu_gib']:>3} GiB  choice {res.get('choice_id', c)}  "
              f"{res.get('choice_step_s') or 0:.3f} s vs fastest {res.get('fastest_fitting')} "
              f"{res.get('fastest_step_s') or 0:.3f} s  -> {res['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
