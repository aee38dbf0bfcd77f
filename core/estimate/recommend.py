"""recommend(plan, hardware) -> the configurations that fit, fastest first; why_nothing_fits otherwise.

The job stays what the user asked for: model, method, precision, sequence length and the number of
sequences per optimizer step. What may change is how it runs: ZeRO stage, optimizer / parameter
offload, micro-batch against accumulation (same global batch), and activation checkpointing. Each
candidate must fit (core/memory.estimate: GPU, host RAM, NVMe) and is ranked by core/speed.step_time,
whose coefficients were fitted to step times measured on an H200 (benchmarks/estimator/).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from zerotui.core.hardware.types import Hardware
from zerotui.core.estimate.budget import Budget, estimate
from zerotui.core.model.spec import ModelSpec, spec_for_plan, trainable_params
from zerotui.core.sizes import format_bytes
from zerotui.core.estimate.speed import step_time

CHANGEABLE = ("stage", "offload_optimizer", "offload_params", "nvme_path", "micro_batch", "grad_accum",
              "grad_ckpt", "pin_memory")


@dataclass
class Recommendation:
    plan: Any                       # the Plan to run
    budget: Budget
    reason: str                     # one line: what it is and why it is here
    relative_speed: float           # 1.0 for the fastest; 0.5 takes twice as long per step
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    step_seconds: float = 0.0       # predicted seconds per optimizer step (on the measured H200)


def _micro_batches(total: int) -> list[int]:
    """Micro-batch sizes that divide the per-GPU batch: powers of two and the batch itself."""
    out = {total}
    m = 1
    while m < total:
        if total % m == 0:
            out.add(m)
        m *= 2
    return sorted(out)


def _nvme_dir(plan, hw: Hardware) -> Optional[str]:
    if plan.nvme_path is not None:
        return str(plan.nvme_path)
    disks = [d for d in hw.nvme_disks if d.writable]
    return max(disks, key=lambda d: d.free_bytes).mountpoint if disks else None


def candidates(plan, hw: Hardware) -> list[Any]:
    """Every way to run ``plan``'s job that zerotui considers (fitting or not)."""
    per_gpu = plan.sequences_per_step(1)  # per rank: kept equal while micro-batch and accumulation trade
    nvme = _nvme_dir(plan, hw)
    offloads = [(1, "none", "none"), (2, "none", "none"), (0, "none", "none"), (3, "none", "none"),
                (2, "cpu", "none"), (1, "cpu", "none"), (3, "cpu", "none"), (3, "cpu", "cpu")]
    if nvme:
        offloads += [(3, "nvme", "none"), (3, "nvme", "cpu"), (3, "nvme", "nvme")]
    if plan.method == "qlora":  # the quantised base stays on the GPU (and 8 bits cannot be sharded)
        offloads = [o for o in offloads if o[2] == "none" and not (plan.quant_bits == 8 and o[0] == 3)]
    out = []
    for stage, oo, op in offloads:
        for mb in _micro_batches(per_gpu):
            for ckpt in (False, True):
                change = dict(stage=stage, offload_optimizer=oo, offload_params=op, micro_batch=mb,
                              grad_accum=per_gpu // mb, grad_ckpt=ckpt)
                if "nvme" in (oo, op):
                    change["nvme_path"] = nvme
                out.append(plan.with_changes(**change))
    return out


def _describe(p) -> str:
    off = []
    if p.offload_optimizer != "none":
        off.append(f"optimizer on {p.offload_optimizer.upper() if p.offload_optimizer == 'nvme' else 'CPU'}")
    if p.offload_params != "none":
        off.append(f"weights on {p.offload_params.upper() if p.offload_params == 'nvme' else 'CPU'}")
    text = f"ZeRO-{p.stage}" + (f" ({', '.join(off)})" if off else "")
    text += f", micro-batch {p.micro_batch} x {p.grad_accum} accumulation"
    return text + (", checkpointing" if p.grad_ckpt else "")


def recommend(plan, hardware: Optional[Hardware] = None, spec: Optional[ModelSpec] = None,
              limit: int = 10) -> list[Recommendation]:
    """Plans that fit ``hardware``, fastest first (at most ``limit``); empty when none does."""
    hw = hardware if hardware is not None else Hardware()
    spec = spec if spec is not None else spec_for_plan(plan)
    trainable = trainable_params(spec, plan)
    world = plan.world_size(hw.gpu_count)
    cands = candidates(plan, hw)
    scored, host_bound = _scored(plan, cands, hw, spec, trainable, world)
    # Unpinned host memory: ZeRO-3's offloaded gradient partition is pinned by copying it, and the pinned
    # allocator rounds up (core/estimate/host.py pinning_copy), so some offload plans fit host RAM only
    # unpinned. Their transfers are slower (speed.py's pageable rate, measured: a 1.1B ZeRO-2 step took 2x
    # as long), and they compete on that speed with the pinned plans (NVMe offload is slower still). Only
    # plans that failed on host RAM alone are tried again: unpinning a plan that fits only slows it.
    if plan.pin_memory and host_bound:
        scored += _scored(plan, [c.with_changes(pin_memory=False) for c in host_bound], hw, spec, trainable, world)[0]
    if not scored:
        return []
    scored.sort(key=lambda x: (x[0], x[1], x[2]))
    best_t = scored[0][0]
    # Keep the tie rule honest: among plans within 2% of the fastest, prefer the one nearest the ask.
    near = [s for s in scored if s[0] <= best_t * 1.02]
    near.sort(key=lambda x: (x[1], x[0], x[2]))
    ordered = near + [s for s in scored if s not in near]
    out = []
    for t, _, _, cand, b in ordered[:limit]:
        changes = {f: (getattr(plan, f), getattr(cand, f)) for f in CHANGEABLE if getattr(plan, f) != getattr(cand, f)}
        speed = best_t / t
        if out:
            lead = f"{speed:.0%} of the fastest"
        elif round(speed, 3) < 1.0:  # the tie rule put the plan nearest the ask first: say so, not "fastest"
            lead = f"nearest your plan of those within 2% of the fastest that fits ({speed:.1%} of its speed)"
        else:
            lead = "fastest that fits"
        unpin = (", host memory unpinned (pinned does not fit host RAM; slower transfers)"
                 if plan.pin_memory and not cand.pin_memory else "")
        reason = f"{_describe(cand)}{unpin}: {lead}, ~{t:.2f} s/step on an H200; {b.summary()}"
        out.append(Recommendation(plan=cand, budget=b, reason=reason, relative_speed=round(speed, 3),
                                  changes=changes, step_seconds=t))
    return out


def _scored(plan, cands: list[Any], hw: Hardware, spec: ModelSpec, trainable: int,
            world: int) -> tuple[list[tuple], list[Any]]:
    """(seconds a step, -fields as asked, GPU bytes, plan, budget) of each distinct candidate that fits, and
    the pinned offload candidates that did not fit host RAM alone."""
    scored, seen, host_bound = [], set(), []
    for cand in cands:
        key = tuple(getattr(cand, f) for f in CHANGEABLE)
        if key in seen:
            continue
        seen.add(key)
        b = estimate(cand, hw, spec)
        if not b.fits:
            if cand.pin_memory and _host_bound(cand, b):
                host_bound.append(cand)
            continue
        t = step_time(cand, spec, trainable, world)["total"]
        # Ties (within 2%) go to the plan closest to what was asked, then to less GPU memory.
        same = sum(getattr(cand, f) == getattr(plan, f) for f in CHANGEABLE)
        scored.append((t, -same, b.gpu_bytes, cand, b))
    return scored, host_bound


def _host_bound(cand, b) -> bool:
    """Whether an offload plan failed on host RAM alone (its GPU and NVMe needs fit)."""
    offloads = (cand.offload_optimizer, cand.offload_params) != ("none", "none")
    return (offloads and bool(b.cpu_capacity) and b.cpu_bytes > b.cpu_capacity
            and (not b.gpu_capacity or b.gpu_bytes <= b.gpu_capacity)
            and (not b.nvme_bytes or b.nvme_bytes <= b.nvme_capacity))


def why_nothing_fits(plan, hardware: Optional[Hardware] = None, spec: Optional[ModelSpec] = None) -> list[str]:
    """Plain lines: what does not fit even in the leanest configuration, and what would."""
    hw = hardware if hardware is not None else Hardware()
    spec = spec if spec is not None else spec_for_plan(plan)
    qlora = plan.method == "qlora"  # its quantised base stays on the GPU: no parameter offload to lean on
    lean = plan.with_changes(stage=3, offload_optimizer="cpu", offload_params="none" if qlora else "cpu",
                             micro_batch=1, grad_accum=plan.sequences_per_step(1), grad_ckpt=True)
    b = estimate(lean, hw, spec)
    lines = [f"even the leanest plan ({_describe(lean)}) needs {b.summary()}"]
    if hw.gpu_count and b.gpu_bytes > b.gpu_capacity:
        lines.append(f"GPU: {format_bytes(b.gpu_bytes)} per GPU needed, {format_bytes(b.gpu_capacity)} there")
    if b.cpu_capacity and b.cpu_bytes > b.cpu_capacity:
        lines.append(f"host RAM: {format_bytes(b.cpu_bytes)} needed, {format_bytes(b.cpu_capacity)} usable (what is "
                     "free, less the system's reserve)")
    tries: list[tuple[str, Any]] = []
    if plan.method == "full":
        tries.append(("--method lora", lean.with_changes(method="lora")))
    if plan.method in ("full", "lora"):
        # QLoRA keeps its 4-bit base on the GPU (no parameter offload), which it can afford.
        tries.append(("--method qlora", lean.with_changes(method="qlora", offload_params="none")))
    if plan.seq_len >= 1024:
        tries.append((f"--seq-len {plan.seq_len // 2}", lean.with_changes(seq_len=plan.seq_len // 2)))
    nvme = _nvme_dir(plan, hw)
    if nvme and qlora:
        tries.append(("NVMe offload (--offload-optimizer nvme)",
                      lean.with_changes(offload_optimizer="nvme", nvme_path=nvme)))
    elif nvme:
        tries.append(("NVMe offload (--offload-optimizer nvme --offload-params nvme)",
                      lean.with_changes(offload_optimizer="nvme", offload_params="nvme", nvme_path=nvme)))
    for what, alt in tries:
        ab = estimate(alt, hw, spec)
        if ab.fits:
            lines.append(f"would fit with {what}: {ab.summary()}")
    if b.cpu_capacity and b.cpu_bytes > b.cpu_capacity:
        lines.append(f"would fit with {format_bytes(b.cpu_bytes)} of RAM or more"
                     + ("" if nvme else ", or an NVMe disk for offload (--nvme-path)"))
    if hw.gpu_count and b.gpu_bytes > b.gpu_capacity:
        lines.append(f"would fit on GPUs with {format_bytes(b.gpu_bytes)} or more, or with more GPUs (stage 3 "
                     "divides the weights between them)")
    return lines
