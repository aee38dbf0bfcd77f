"""The seed-scenario table from committed results, with today's estimator, and the check that matters:
no configuration whose measured peak exceeds its estimate by more than 3%.

    python -m benchmarks.seed_scenarios.table benchmarks/results/seed-scenarios-*.json

The estimate is recomputed for each row's plan (the model folder replaced by the shape it was built from,
run.py's SHAPES) on an H200 under the row's cap, so the table follows the estimator as it is now; the
measured peak is NVML's used memory where the run was measured alone (results "c" onwards: the harness
builds its models in a child process), else PyTorch's peak reserved plus the estimator's CUDA context.
Exit code 1 when a row breaks the rule.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Optional

GIB = 2**30


def _in_turn(scales: list) -> list[float]:
    """The loss scales a run reported, in the order they came, each change once: a fall from 2^31 reads
    as a fall (a sorted set read as a rise)."""
    out: list[float] = []
    for s in scales:
        if s and (not out or out[-1] != s):
            out.append(s)
    return out


def _scale_text(scale: float) -> str:
    """A loss scale as the table writes it: 65536 and below as numbers, larger powers of two as 2^n."""
    n = math.log2(scale) if scale > 0 else 0.0
    return f"2^{int(n)}" if scale > 65536 and n.is_integer() else f"{scale:g}"


def run_nvml(file_name: str, data: dict, row: dict) -> Optional[int]:
    """NVML's peak for a result row where NVML saw that run alone, else None. Since results c the
    harness builds models in a child process (the file's "nvml_clean"); a row whose GPU held another
    process's memory at its start is marked ``nvml_clean: false`` (run.py's gpu_used_at_start)."""
    clean = "seed-scenarios-c-" in str(file_name) or data["command"].count("seed-c") or data.get("nvml_clean")
    return row.get("nvml_used_max") if clean and row.get("nvml_clean", True) else None


def rows(files: list[str]) -> list[dict]:
    from zerotui.core.estimate.budget import estimate
    from zerotui.core.estimate.cuda_context import context_bytes
    from zerotui.core.hardware.detect import stated_hardware
    from zerotui.core.model.spec import _llama_family_spec
    from zerotui.core.plan.schema import plan_from_dict

    from benchmarks.estimator.margin_table import estimated
    from benchmarks.seed_scenarios.data import ran_masked, ran_seq_len
    from benchmarks.seed_scenarios.scenarios import scenario_shape
    from benchmarks.seed_scenarios.shapes import SHAPES

    out = []
    for f in files:
        data = json.loads(Path(f).read_text())
        for name, r in data["scenarios"].items():
            shape = scenario_shape(name)
            spec = _llama_family_spec(f"llama-{shape}", {"model_type": "llama", **SHAPES[shape]}, "run.py SHAPES")
            # estimated for the micro-batch width that ran (run.py's ran_seq_len), not the plan's seq_len
            plan = dict(r["plan"], model=f"llama-{shape}", data="sample", seq_len=ran_seq_len(r["plan"], data))
            hw = stated_hardware(gpu_mem=141 * GIB, gpus=1, ram=128 * GIB)
            # Rows recorded before plans had `kernels` ran without Liger's kernels.
            # The allocator setting the run had: the row's "alloc_conf" (recorded since 2026-12-02), else the
            # file's (the environment its command set), else PyTorch's default, which every run before
            # core/plan/allocator.py had.
            env = {"PYTORCH_CUDA_ALLOC_CONF": r.get("alloc_conf", data.get("alloc_conf", ""))}
            p = plan_from_dict({"kernels": "none", **plan})
            # padded micro-batches masked as the run had them (ran_masked), not as zerotui runs them now
            b = estimate(p, hw, spec, env=env, masked=ran_masked(r["plan"], data))
            reserved = r.get("peak_reserved")
            nvml = run_nvml(f, data, r)
            measured = nvml or (reserved + context_bytes(p) if reserved else None)
            # A plan forced past the budget (7b-lora-oom) measures nothing: its check is that it ended out
            # of memory under the cap, reported like any OOM.
            oom = r.get("state") == "failed" and "out of GPU memory" in (r.get("reason") or "")
            # A run that failed before training (7b-qlora-fit in fine-a: no bitsandbytes on that machine)
            # measured only the idle GPU
            # the kernel's OOM killer ended the worker for host RAM (the two 7B full fine-tunes of 2026-12-05):
            # not a GPU result, and not a run that never started
            host_killed = r.get("state") == "failed" and "OOM killer" in (r.get("reason") or "")
            unrun = r.get("state") == "failed" and not oom and not host_killed and not reserved
            if oom or unrun:
                measured = None
            # what the estimate predicts the run reaches: over its cap, the allocation and the CUDA context
            # alone, where the allocator hands its free pages back rather than grow past the cap
            # (benchmarks/estimator/margin_table.py, estimated)
            # the bound that applied: the cap, or the card where the cap was above it (card_bytes, recorded
            # since 2026-12-07, when an H100 answered a call for an H200)
            cap, card = data.get("cap_bytes"), data.get("card_bytes")
            cap = card if cap and card and card < cap else cap
            context = b.breakdown["gpu"].get("CUDA context", 0)
            predicted = estimated(b.gpu_allocated_bytes, b.gpu_bytes - b.gpu_allocated_bytes - context, context,
                                  cap or float("inf"))
            out.append({"file": Path(f).name, "scenario": name, "plan": r["plan"], "ran_seq_len": plan["seq_len"],
                        "state": r.get("state"),
                        "tokens_per_s": r.get("tokens_per_s"), "tflops": r.get("tflops_per_gpu"),
                        "estimate": b.gpu_bytes, "allocated_est": b.gpu_allocated_bytes,
                        "allocated": r.get("peak_allocated"), "reserved": reserved, "nvml": nvml,
                        "measured": measured, "predicted": predicted,
                        "error": (predicted - measured) / measured if measured else None,
                        "oom": oom, "ran": r.get("state") == "completed" or ran_every_step(r), "unrun": (r.get("reason") or "failed").split(" (")[0] if unrun else "", "cap": cap, "scale": _in_turn(r.get("loss_scale") or []),
                        "alerts": [a["kind"] for a in r.get("alerts") or []], "first_step_s": r.get("first_step_s"),
                        "host_killed": host_killed, "steps": r.get("steps") or 0, "host_rss_max": r.get("host_rss_max"),
                        "host_total": r.get("host_ram_total"), "host_free_at_start": r.get("ram_available_at_start"),
                        "host_est": b.cpu_bytes, "host_phase": b.host_phase,
                        "host_rss_training": r.get("host_rss_max_training"),
                        "host_rss_saving": r.get("host_rss_max_saving"),
                        "host_anon_training": r.get("host_rss_anon_max_training"),
                        "host_anon_saving": r.get("host_rss_anon_max_saving"),
                        "host_own_training": r.get("host_rss_own_max_training"),
                        "host_own_saving": r.get("host_rss_own_max_saving")})
    return out


def ran_every_step(r: dict) -> bool:
    """A failed run whose failure came after its last step (share-b/-c of 2026-12-03: the device's disk
    filled at the final checkpoint) measured every step's memory; one that failed before did not."""
    plan = r.get("plan", {})
    if not plan.get("max_steps"):  # without its planned steps a row cannot show it ran them all
        return False
    return (r.get("steps") or 0) * plan.get("log_interval", 1) >= plan["max_steps"] \
        and "out of GPU memory" not in (r.get("reason") or "")


def describe(p: dict, ran_seq_len: int = 0) -> str:
    """The plan in a table cell; ``ran_seq_len`` below the plan's seq_len: the rows were shorter, so the
    micro-batches were at most that wide (and the estimate is for that width)."""
    seq = f"{p['seq_len']}" + (f" (rows ≤{ran_seq_len} ran)" if 0 < ran_seq_len < p["seq_len"] else "")
    off = f", optimizer on {p['offload_optimizer'].upper()}" if p["offload_optimizer"] != "none" else ""
    if p.get("offload_params", "none") != "none":
        off = f", weights and optimizer on {p['offload_params'].upper()}"
    if off and p.get("pin_memory") is False:
        off += " (unpinned)"
    return (f"{p['method']} {p['precision']}, ZeRO-{p['stage']}{off}, {p['micro_batch']}×{p['grad_accum']}×"
            f"{seq}{', ckpt' if p['grad_ckpt'] else ''}")


def _measured(r: dict) -> str:
    if r["oom"]:
        return "out of memory under the cap"
    if r["unrun"]:
        return f"did not run: {r['unrun']}"
    killed = f"; host RAM: the OOM killer ended it after {r['steps']} of {r['plan']['max_steps']} steps" \
        if r["host_killed"] else ""
    return f"{r['measured'] / GIB:.2f}{' (NVML' + killed + ')' if r['nvml'] else ''}"


def _estimate(r: dict) -> str:
    if r["predicted"] < r["estimate"] and not r["oom"]:
        return f"{r['estimate'] / GIB:.2f}, over its cap: {r['predicted'] / GIB:.2f} (allocated + context)"
    return f"{r['estimate'] / GIB:.2f}"


def main(argv: list[str]) -> int:
    table = rows(argv)
    print("| scenario | plan | tokens/s | TFLOP/s per GPU (of 790) | estimate GiB | measured GiB | error | loss scale |")
    print("|---|---|---|---|---|---|---|---|")
    bad = []
    for r in table:
        tf = f"{r['tflops']:.0f} ({r['tflops'] / 790:.0%})" if r["tflops"] else "-"
        err = f"{r['error']:+.1%}" if r["error"] is not None else "-"
        scale = " → ".join(_scale_text(s) for s in r["scale"]) or ("-" if r["plan"]["precision"] == "fp16" else "(bf16)")
        print(f"| {r['scenario']} ({r['file'][15:-16]}) | {describe(r['plan'], r['ran_seq_len'])} | {r['tokens_per_s'] or 0:,.0f} | {tf} | "
              f"{_estimate(r)} | {_measured(r)} | {err} | {scale} |")
        if r["error"] is not None and r["error"] < -0.03:
            bad.append(r["scenario"])
    if bad:
        print(f"\nmeasured peak above the estimate by more than 3%: {', '.join(bad)}")
        return 1
    print("\nevery measured peak is at most 3% above its estimate")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
