"""The quantities every memory term of a plan is made of, derived once: ``Job``.

Symbols as in docs/estimator.md: Ψ (``psi``) parameters including adapters, Ψt (``psit``) trainable ones,
N GPUs in all, p bytes of the 16-bit type (4 in fp32).

QLoRA stores every linear weight of the base but the output head in ``quant_bits`` (bitsandbytes skips
the head): 4 bits plus the quantisation constants — one fp32 absmax per block of 64 weights (0.5 bits a
weight), or with double quantisation one 8-bit absmax per 64 and one fp32 per 256 blocks (~0.127 bits;
Dettmers et al. 2023, "QLoRA", section 3) — or 8 bits plus an fp32 scale per row (LLM.int8).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from zerotui.core.deepspeed.config import bucket_sizes
from zerotui.core.estimate.activations import LoraShape
from zerotui.core.hardware.types import Hardware
from zerotui.core.model import kernels
from zerotui.core.model.spec import ModelSpec, lora_targets_found
from zerotui.core.plan import allocator


@dataclass(frozen=True)
class Job:
    plan: Any
    spec: ModelSpec
    hw: Hardware
    on_gpu: bool
    n_local: int               # processes on this node
    N: int                     # processes in all
    p: int                     # bytes per 16-bit value (4 in fp32)
    lora: Optional[LoraShape]  # the adapters, for activation memory
    psi: float                 # Ψ: every parameter, adapters included
    psit: float                # Ψt: the trainable ones
    buckets: dict[str, int]    # DeepSpeed's bucket sizes as the ds_config sets them
    quant_numel: int = 0       # QLoRA: base weights stored quantised (0 otherwise)
    quant_largest: int = 0     # QLoRA: the largest quantised weight (dequantised one at a time)
    liger: bool = False        # Liger's kernels (core/model/kernels.py): leaner norms and MLP activations
    fused_ce: bool = False     # ... and its fused linear cross-entropy: no full logits
    expandable: bool = False   # PyTorch's allocator grows segments in place (core/plan/allocator.py)
    masked: bool = False       # attention gets an explicit mask (attention_masked)
    # Adam's moments exist before the first step, as zerotui makes them (core/train/optimizer_state.py); False
    # only for measured runs whose optimizer made them at that step (the estimator's sweeps 1-3)
    states_at_start: bool = True

    @property
    def weight_bytes(self) -> float:
        """Bytes of every weight on one GPU before any sharding: the 16-bit (or fp32) ones plus, for
        QLoRA, the quantised ones with their constants."""
        return self.p * (self.psi - self.quant_numel) + self.quant_numel * quant_bytes_per_weight(self.plan)

    @property
    def bytes_per_weight(self) -> float:
        """Average bytes of one weight (what a stage-3 gather moves per element)."""
        return self.weight_bytes / self.psi if self.psi else float(self.p)

    @property
    def stage(self) -> int:
        return self.plan.stage

    @property
    def oo(self) -> str:
        return self.plan.offload_optimizer

    @property
    def op(self) -> str:
        return self.plan.offload_params


def attention_masked(plan: Any, spec: ModelSpec) -> bool:
    """Whether the model's attention gets an explicit mask (activations.py): packed batches, whose
    per-document mask transformers materialises for SDPA and eager attention (flash-attention takes the
    documents' boundaries instead), and padded micro-batches of models outside the Llama family, which
    keep their padding mask (core/data/tokenise.py, collate)."""
    if plan.attention == "flash":
        return False
    return bool(plan.packing) or (plan.micro_batch > 1 and not spec.calibrated)


def job_for(plan: Any, spec: ModelSpec, hw: Hardware, env: Optional[Mapping[str, str]] = None,
            masked: Optional[bool] = None, states_at_start: bool = True) -> Job:
    """``env``: the environment the run will start from (this process's when None), for the allocator.
    ``masked``: whether attention gets an explicit mask, where the caller knows (a measured run's
    micro-batches); ``attention_masked`` decides otherwise. ``states_at_start``: False only to estimate a
    measured run whose optimizer made Adam's moments at its first step (``Job.states_at_start``)."""
    on_gpu = hw.gpu_count > 0
    n_local = plan.gpus_per_node(hw.gpu_count)
    p = 4 if plan.precision == "fp32" else 2
    lora = None
    lora_params = 0
    if plan.uses_adapters():
        found = lora_targets_found(spec, plan.lora_targets)
        lora = LoraShape(frozenset(found), plan.lora_r, plan.lora_dropout, mask_bytes=1 if on_gpu else p)
        lora_params = sum(plan.lora_r * (i + o) * c for hits in found.values() for i, o, c in hits)
    psi = spec.params_total + lora_params
    fused = kernels.planned(plan.kernels, spec.arch, plan.stage, on_gpu)
    quantised = [(i * o, c) for n, i, o, c in spec.linear_modules if n != "lm_head"] if plan.method == "qlora" else []
    return Job(plan=plan, spec=spec, hw=hw, on_gpu=on_gpu, n_local=n_local, N=n_local * plan.nodes, p=p,
               lora=lora, psi=psi, psit=lora_params if lora is not None else psi,
               buckets=bucket_sizes(plan, spec), quant_numel=sum(n * c for n, c in quantised),
               quant_largest=max((n for n, _ in quantised), default=0),
               liger=fused.liger, fused_ce=fused.fused_ce,
               expandable=allocator.expandable_in_effect(os.environ if env is None else env),
               masked=attention_masked(plan, spec) if masked is None else masked, states_at_start=states_at_start)


def quant_bytes_per_weight(plan: Any) -> float:
    """Bytes one quantised weight takes with its share of the constants (see the module docstring)."""
    if plan.quant_bits == 8:
        return 1.0 + 4 / 4096  # int8, and an fp32 scale per row of a few thousand weights
    constants = (1 / 64 + 4 / (64 * 256)) if plan.double_quant else 4 / 64
    return 0.5 + constants


def pinned(nbytes: float, pin: bool = True) -> int:
    """Host bytes a pinned buffer really takes: PyTorch's CachingHostAllocator rounds each request up
    to a power of two (c10 PowerOf2Ceil); measured on the CPU-offload rows, where it is up to 2x."""
    n = int(nbytes)
    if not pin or n <= 0:
        return max(n, 0)
    return 1 << (n - 1).bit_length()


def sub_groups(numel: int, size: int) -> list[int]:
    """Stage 3 splits the optimizer's partition into sub-groups of about ``size`` elements."""
    if numel <= 0:
        return []
    full, rest = divmod(numel, size)
    return [size] * full + ([rest] if rest else [])


def largest_sub_group(job: Job) -> int:
    """Elements of the largest optimizer sub-group of one rank's trainable partition (stage 3)."""
    return max(sub_groups(int(job.psit / job.N), job.buckets["sub_group_size"]), default=0)


def offload_keeps_gradients(job: Job) -> bool:
    """ZeRO-1/2 with the optimizer offloaded: whether every weight's 16-bit gradient stays on the GPU
    through backward. ZeRO-1 reduces gradients (and frees them) only at the accumulation boundary
    (DeepSpeed's stage_1_and_2.py, reduce_ready_partitions_and_remove_grads), so between boundaries they
    stay; without overlap_comm it reduces nothing in backward's hooks (process_gradients), so they are
    all there at the end of backward even with one micro-batch a step (read in the source, not measured).
    Stage 2 copies each to the host as backward reduces it (copy_grads_in_partition) and frees it."""
    return job.stage == 1 and (job.plan.grad_accum > 1 or not job.plan.overlap_comm)


def trainable_shapes(job: Job) -> list[tuple[int, int]]:
    """(elements, count) of every trainable tensor: the model's, or LoRA's A and B matrices."""
    plan, spec = job.plan, job.spec
    if not plan.uses_adapters():
        return list(spec.param_shapes)
    found = lora_targets_found(spec, plan.lora_targets)
    return [(plan.lora_r * d, c) for hits in found.values() for i, o, c in hits for d in (i, o)]


def largest_trainable(job: Job) -> int:
    """Elements of the largest trainable tensor (the offload staging buffer is sized by it)."""
    if not job.plan.uses_adapters():
        return job.spec.largest_param_numel
    return max((n for n, _ in trainable_shapes(job)), default=0)


def per_weight_pinned(job: Job, n: int, pin: bool) -> int:
    """Host bytes of one pinned buffer per trainable weight (each rounded up on its own)."""
    plan, spec, p = job.plan, job.spec, job.p
    if plan.uses_adapters():
        found = lora_targets_found(spec, plan.lora_targets)
        return sum((pinned(p * plan.lora_r * i / n, pin) + pinned(p * plan.lora_r * o / n, pin)) * c
                   for hits in found.values() for i, o, c in hits)
    return sum(pinned(p * numel / n, pin) * cnt for numel, cnt in spec.param_shapes)


def persistent_params(spec: ModelSpec, threshold: int) -> int:
    """Stage 3 keeps parameters of at most ``threshold`` elements whole on every GPU (norms, biases)."""
    return sum(n * c for n, c in spec.param_shapes if n <= threshold)
