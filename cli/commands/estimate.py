"""`zerotui estimate [PRESET|PLAN.yaml] [PLAN OPTIONS] [--gpu-mem ..] [--ram ..] [--json]`: the memory
budget of a plan — peak GPU memory per GPU, host RAM per node, NVMe — with a named breakdown.

The exit code tells a script the verdict without parsing anything: 0 the plan fits, 3 it does not
(``EXIT_DOES_NOT_FIT``), 2 bad input, 1 the machine failed us (an unreadable file, a full disk)."""
from __future__ import annotations

import argparse
import json

from zerotui.cli.hardware_options import add_hardware_options, hardware_from_args
from zerotui.cli.plan_options import add_plan_options, plan_from_args, warn_unusable_nvme

#: Not 1: a script must tell "does not fit" from an OSError (exit 1) or a usage error (exit 2).
EXIT_DOES_NOT_FIT = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", metavar="PRESET|PLAN.yaml",
                        help="a preset name or a plan file (options below override it)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    add_hardware_options(parser)
    add_plan_options(parser)


def describe_plan(plan, world: int) -> str:
    off = [f"optimizer on {plan.offload_optimizer}" for _ in [0] if plan.offload_optimizer != "none"]
    off += [f"weights on {plan.offload_params}" for _ in [0] if plan.offload_params != "none"]
    lora = f" (r {plan.lora_r}, {','.join(plan.lora_targets)})" if plan.uses_adapters() else ""
    return (f"{plan.model}, {plan.method}{lora}, {plan.precision}, ZeRO-{plan.stage}"
            + (f" ({', '.join(off)})" if off else "") + f", {world} GPU(s); micro-batch {plan.micro_batch} x "
            f"{plan.grad_accum} accumulation, sequence {plan.seq_len}"
            + (", checkpointing" if plan.grad_ckpt else "") + f", {plan.attention} attention")


def budget_table(budget) -> str:
    from zerotui.core.sizes import format_bytes

    lines = []
    for dev, title, total, cap in (("gpu", "GPU (per GPU)", budget.gpu_bytes, budget.gpu_capacity),
                                   ("cpu", "host RAM (per node)", budget.cpu_bytes, budget.cpu_capacity),
                                   ("nvme", "NVMe", budget.nvme_bytes, budget.nvme_capacity)):
        parts = budget.breakdown.get(dev) or {}
        if not parts and not total:
            continue
        verdict = "" if not cap else ("  fits" if total <= cap else "  DOES NOT FIT")
        if dev == "nvme" and not cap and getattr(budget, "nvme_problem", ""):
            verdict = "  room unknown (the NVMe path is not a folder here)"
        lines.append(f"{title:34} {format_bytes(total):>11}" + (f" of {format_bytes(cap)}" if cap else "") + verdict)
        for name, value in sorted(parts.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {name:32} {format_bytes(value):>11}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from zerotui.core.estimate.budget import estimate
    from zerotui.core.model.spec import spec_for_plan
    from zerotui.core.sizes import format_bytes

    plan = plan_from_args(args, args.source)
    from zerotui.core.run.input_check import check_inputs

    check_inputs(plan, training=False)
    warn_unusable_nvme(plan)
    spec = spec_for_plan(plan)
    hw = hardware_from_args(args, plan)
    budget = estimate(plan, hw, spec)
    if args.json:
        out = budget.to_dict()
        out["model"] = {"name": spec.name, "arch": spec.arch, "params_total": spec.params_total,
                        "source": spec.source}
        out["hardware"] = {"source": hw.source, "gpus": hw.gpu_count, "gpu_bytes": hw.gpu_total_bytes,
                           "ram_bytes": hw.ram_total_bytes}
        print(json.dumps(out, indent=1))
        return 0 if budget.fits else EXIT_DOES_NOT_FIT
    print(describe_plan(plan, budget.world_size))
    print(f"model: {spec.params_total:,} parameters ({spec.source}); trainable {budget.params_trainable:,}")
    print()
    print(budget_table(budget))
    print()
    print(f"GPU peak in the {budget.peak_phase} phase: {format_bytes(budget.gpu_allocated_bytes)} allocated by "
          "PyTorch, plus fragmentation margin and CUDA context" if budget.gpu_capacity or budget.gpu_bytes else
          "no GPU: the whole run is in host RAM")
    ds = budget.deepspeed_estimate
    if ds:
        print(f"DeepSpeed's own estimate ({ds['function']}, model states only): GPU {format_bytes(ds['gpu_bytes'])}, "
              f"CPU {format_bytes(ds['cpu_bytes'])}")
    for w in budget.warnings:
        print(f"note: {w}")
    if budget.fits and getattr(budget, "nvme_problem", ""):
        # the verdict leaves the NVMe room out: say so rather than a plain "fits"
        print("fits this machine but for the NVMe room, which is unknown: its NVMe path is not a folder here")
    else:
        print("fits this machine" if budget.fits else "does NOT fit: `zerotui fit` lists plans that do")
    return 0 if budget.fits else EXIT_DOES_NOT_FIT
