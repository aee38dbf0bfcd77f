"""Estimates next to measurements: the rows of a sweep with zerotui's and DeepSpeed's errors.

    python -m benchmarks.estimator.compare benchmarks/estimator/data/sweep1-raw.jsonl [...]

Measured GPU = peak of torch.cuda.max_memory_allocated() over all steps minus what was allocated
before the row started (earlier rows in the same worker process can leave memory behind). Measured
host = the worker's peak RSS (VmHWM, reset per row); host RAM is scored only on rows that started in a
fresh worker process (see measured()).
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.estimator.paths import ensure_zerotui_importable  # noqa: E402

ensure_zerotui_importable()

from benchmarks.estimator.matrix import spec_for  # noqa: E402
from zerotui.core.hardware.types import GpuInfo, Hardware  # noqa: E402
from zerotui.core.estimate import host  # noqa: E402
from zerotui.core.estimate.budget import estimate  # noqa: E402
from zerotui.core.estimate.cuda_context import context_bytes  # noqa: E402
from zerotui.core.estimate.job import job_for  # noqa: E402
from zerotui.core.plan.schema import plan_from_dict  # noqa: E402

GIB = 2**30


def h200() -> Hardware:
    """The machine the sweeps ran on: one H200 (143771 MiB), 128 GiB RAM."""
    return Hardware(gpus=[GpuInfo(index=0, name="NVIDIA H200", total_bytes=143771 * 2**20,
                                  free_bytes=143771 * 2**20, compute_capability=(9, 0), bf16=True)],
                    ram_total_bytes=131981020 * 1024, ram_available_bytes=131981020 * 1024, cpu_cores=16)


def load(paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                r["sweep"] = Path(path).name.split("-")[0]
                rows.append(r)
    return rows


def measured(rows: list[dict]) -> None:
    for r in rows:
        if r.get("status") != "ok":
            continue
        r["gpu_measured"] = r["peak_allocated"] - r["baseline_allocated"]
        is_fresh = r["rss_start"] < 1.2 * GIB
        r["host_fresh"] = is_fresh
        r["reserved_measured"] = r["peak_reserved"] - r["baseline_reserved"] if is_fresh else None
        r["smi_measured"] = r["nvml_used_peak"] if is_fresh else None


def estimates(rows: list[dict]) -> None:
    hw = h200()
    for r in rows:
        if r.get("status") != "ok":
            continue
        # Rows recorded before plans had `kernels` ran without Liger's kernels.
        plan = plan_from_dict({"kernels": "none", **r["plan"]})
        spec = spec_for(r["shape"])
        # The sweeps ran on PyTorch's default allocator: estimate for that one (core/plan/allocator.py)
        b = estimate(plan, hw, spec, env={"PYTORCH_CUDA_ALLOC_CONF": ""})
        r["estimate"] = b.to_dict()
        # Host RAM is scored on rows that started in a fresh worker process only: a reused worker's RSS
        # holds heap that earlier rows freed but glibc kept, and later rows grow into it (sweep 2
        # showed growth 2 GiB short of a 2 GiB model copy), so its peak says little about the row.
        r["host_measured"] = r["rss_peak"] if r["host_fresh"] else None
        r["gpu_error"] = b.gpu_allocated_bytes / r["gpu_measured"] - 1
        # the sweeps' worker wrote no checkpoint: its host peak is the estimate's without that moment
        host_est = b.cpu_bytes
        if b.host_phase == "saving a checkpoint":
            job = job_for(plan, spec, hw, env={"PYTORCH_CUDA_ALLOC_CONF": ""})
            host_est = int(sum(host.host_peak(job, host.offloaded(job), saves=False)[1].values()) * job.n_local)
        r["host_estimate_no_save"] = host_est
        r["host_error"] = host_est / r["host_measured"] - 1 if r["host_measured"] else None
        ds = b.deepspeed_estimate
        r["ds_gpu_error"] = ds["gpu_bytes"] / r["gpu_measured"] - 1 if ds else None
        r["ds_cpu_error"] = ds["cpu_bytes"] / r["host_measured"] - 1 if ds and r["host_measured"] else None
        r["counts_match"] = r["counts"]["params_total"] == b.params_total and \
            r["counts"]["params_trainable"] == b.params_trainable
        if r.get("reserved_measured"):
            # the harness never saves a checkpoint: the communicators its rows held (cuda_context.py)
            held = context_bytes(plan, 1, saves_checkpoints=False) - context_bytes(plan, 1)
            r["gpu_bytes_error"] = (b.gpu_bytes + held) / r["smi_measured"] - 1


def table(rows: list[dict]) -> str:
    out = [f"{'row':36} {'GiB meas':>8} {'ours':>7} {'err':>6} {'DS':>7} {'DS err':>7} | {'host':>6} {'ours':>6} {'err':>6} {'phase':>9}"]
    for r in rows:
        if r.get("status") != "ok":
            out.append(f"{r['id']:36} {r.get('status')}")
            continue
        e = r["estimate"]
        ds = e["deepspeed_estimate"]
        out.append(
            f"{r['id'][:36]:36} {r['gpu_measured'] / GIB:8.2f} {e['gpu_allocated_bytes'] / GIB:7.2f} "
            f"{r['gpu_error'] * 100:+5.1f}% {(ds['gpu_bytes'] / GIB if ds else float('nan')):7.2f} "
            f"{(r['ds_gpu_error'] * 100 if ds else float('nan')):+6.1f}% | "
            + (f"{r['host_measured'] / GIB:6.2f} {r['host_estimate_no_save'] / GIB:6.2f} {r['host_error'] * 100:+5.1f}%"
               if r["host_measured"] else f"{'(reused worker)':>21}")
            + f" {e['peak_phase']:>9}"
            + (f" | smi {r['smi_measured'] / GIB:6.2f} ours {e['gpu_bytes'] / GIB:6.2f} {r['gpu_bytes_error'] * 100:+5.1f}%"
               if r.get('smi_measured') else "")
            + ("" if r["counts_match"] else "  COUNTS DIFFER"))
    return "\n".join(out)


def summary(rows: list[dict]) -> dict:
    ok = [r for r in rows if r.get("status") == "ok"]
    ge = [abs(r["gpu_error"]) for r in ok]
    he = [abs(r["host_error"]) for r in ok if r["host_error"] is not None]
    dh = [abs(r["ds_cpu_error"]) for r in ok if r.get("ds_cpu_error") is not None]
    gb = [r["gpu_bytes_error"] for r in ok if r.get("gpu_bytes_error") is not None]
    de = [abs(r["ds_gpu_error"]) for r in ok if r["ds_gpu_error"] is not None]
    return {"rows": len(ok), "gpu_median_abs_error": statistics.median(ge), "gpu_worst_abs_error": max(ge),
            "host_rows": len(he), "host_median_abs_error": statistics.median(he) if he else None,
            "host_worst_abs_error": max(he) if he else None,
            "deepspeed_host_median_abs_error": statistics.median(dh) if dh else None,
            "deepspeed_host_worst_abs_error": max(dh) if dh else None,
            "gpu_bytes_rows": len(gb), "gpu_bytes_worst_under": min(gb) if gb else None,
            "gpu_bytes_worst_over": max(gb) if gb else None,
            "deepspeed_gpu_median_abs_error": statistics.median(de) if de else None,
            "deepspeed_gpu_worst_abs_error": max(de) if de else None}


def main(argv: list[str]) -> int:
    rows = load(argv or [str(HERE / "data" / "sweep1-raw.jsonl")])
    measured(rows)
    estimates(rows)
    print(table(rows))
    print(json.dumps(summary(rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
