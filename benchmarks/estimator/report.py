"""Write benchmarks/results/estimator-<date>.json and print the tables for docs/estimator.md.

    python -m benchmarks.estimator.report [--date 2026-11-29]

Reads the raw sweeps (benchmarks/estimator/data/sweep*-raw.jsonl, as the GPU machine wrote them),
recomputes zerotui's and DeepSpeed's estimates with the code as it is now, and records, per row, the
measurement next to both, plus the speed-model fit and the recommender check.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.estimator.check_recommender import check  # noqa: E402
from benchmarks.estimator.compare import estimates, load, measured, summary  # noqa: E402
from benchmarks.estimator.fit_speed import prepared, residuals  # noqa: E402
from zerotui.core.estimate.speed import H200  # noqa: E402

GIB = 2**30
DATA = HERE / "data"
SWEEPS = [DATA / "sweep1-raw.jsonl", DATA / "sweep2-raw.jsonl"]
COMMANDS = {
    "sweep1": "python3 -m benchmarks.estimator.sweep --sweep sweep1 --out $OUT --deadline 400 --config-timeout 100",
    "sweep2": "python3 -m benchmarks.estimator.sweep --sweep sweep2 --out $OUT --deadline 330 --config-timeout 80",
}
KEEP_PLAN = ("stage", "precision", "method", "lora_r", "lora_targets", "lora_dropout", "offload_optimizer",
             "offload_params", "pin_memory", "micro_batch", "grad_accum", "seq_len", "grad_ckpt", "attention")


def _row(r: dict) -> dict:
    out = {"id": r["id"], "sweep": r["sweep"], "shape": r["shape"], "status": r["status"],
           "plan": {k: r["plan"].get(k) for k in KEEP_PLAN if k in r["plan"]}}
    if r["status"] != "ok":
        out["error"] = r.get("error")
        return out
    e = r["estimate"]
    out.update(
        params_total=r["counts"]["params_total"], params_trainable=r["counts"]["params_trainable"],
        optimizer=r.get("optimizer"), fresh_worker=r["host_fresh"],
        measured={"gpu_allocated_peak": r["gpu_measured"],
                  "gpu_reserved_peak": r["peak_reserved"] - r["baseline_reserved"],
                  "nvidia_smi_used_peak": r["nvml_used_peak"] if r["host_fresh"] else None,
                  "worker_rss_peak": r["rss_peak"] if r["host_fresh"] else None,
                  "step_time_s": r["step_time"], "step_times_s": r["step_times"],
                  "tokens_per_s": r["tokens_per_s"], "skipped_steps": r["skipped_steps"],
                  "phases": r["micro_steps"]},
        zerotui={"gpu_allocated_bytes": e["gpu_allocated_bytes"], "gpu_bytes": e["gpu_bytes"],
                 "cpu_bytes": e["cpu_bytes"], "peak_phase": e["peak_phase"], "breakdown": e["breakdown"]},
        deepspeed=e["deepspeed_estimate"],
        errors={"gpu_allocated": r["gpu_error"], "host": r["host_error"],
                "gpu_bytes_vs_nvidia_smi": r.get("gpu_bytes_error"),
                "deepspeed_gpu": r["ds_gpu_error"], "deepspeed_host": r["ds_cpu_error"]},
    )
    return out


def _speed(paths: list[Path]) -> dict:
    rows = prepared([str(p) for p in paths])
    res = residuals(H200, rows)
    errs = [math.exp(x) - 1 for x in res]
    return {"coefficients": H200.__dict__, "rows": len(rows),
            "median_abs_error": statistics.median(abs(e) for e in errs), "worst_abs_error": max(abs(e) for e in errs),
            "per_row": {r["id"]: {"measured_s": m, "model_s": m * math.exp(x)} for (r, *_, m), x in zip(rows, res)}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--date", default="2026-11-29")
    args = ap.parse_args()
    rows = load([str(p) for p in SWEEPS])
    measured(rows)
    estimates(rows)
    env = {p.stem.split("-")[0]: json.loads((DATA / f"{p.stem.split('-')[0]}-env.json").read_text()) for p in SWEEPS}
    versions = next(r["versions"] for r in rows if r.get("versions"))
    as_run = (DATA / "sweep2-verification-as-run.txt").read_text()
    result = {
        "what": "zerotui memory estimator vs measured, on one NVIDIA H200 (benchmarks/estimator/)",
        "date": args.date, "gpu": env["sweep1"].get("nvidia_smi"), "versions": versions,
        "machine": {"cpu_count": env["sweep1"].get("cpu_count"), "ram_kb": env["sweep1"].get("meminfo_total_kb")},
        "commands": COMMANDS,
        "method": "docs/estimator.md#method",
        "summary": {
            "sweep1_calibration": summary([r for r in rows if r["sweep"] == "sweep1"]),
            "sweep2_verification": summary([r for r in rows if r["sweep"] == "sweep2"]),
            "sweep2_verification_as_run": json.loads(as_run[as_run.index("{"):]),
            "all": summary(rows),
        },
        "speed_model": _speed(SWEEPS),
        "recommender": check(rows),
        "recommender_with_sweep1_speed_fit": (DATA / "recommender-check-sweep1-fit.txt").read_text().splitlines(),
        "rows": [_row(r) for r in rows],
    }
    out = REPO / "benchmarks" / "results" / f"estimator-{args.date}.json"
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {out.relative_to(REPO)}")
    print("| row | sweep | measured GiB | zerotui | error | DeepSpeed | error | host GiB | zerotui | error |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if r["status"] != "ok":
            print(f"| {r['id']} | {r['sweep'][-1]} | not run ({r.get('error')}) | | | | | | | |")
            continue
        e, ds = r["estimate"], r["estimate"]["deepspeed_estimate"]
        host = (f"{r['host_measured'] / GIB:.2f} | {e['cpu_bytes'] / GIB:.2f} | {r['host_error'] * 100:+.1f}%"
                if r["host_measured"] else "(reused worker) | | ")
        dss = f"{ds['gpu_bytes'] / GIB:.2f} | {r['ds_gpu_error'] * 100:+.0f}%" if ds else "none | "
        print(f"| {r['id']} | {r['sweep'][-1]} | {r['gpu_measured'] / GIB:.2f} | {e['gpu_allocated_bytes'] / GIB:.2f} | "
              f"{r['gpu_error'] * 100:+.1f}% | {dss} | {host} |")
    print(json.dumps(result["summary"], indent=1))
    print(json.dumps({k: v for k, v in result["speed_model"].items() if k != "per_row"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
