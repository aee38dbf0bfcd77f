"""The quantities every memory term of a plan is made of, derived once: ``Job``.

Symbols as in docs/estimator.md: Ψ (``psi``) parameters including adapters, Ψt (``psit``) trainable ones,
N GPUs in all, p bytes of the 16-bit type (4 in fp32).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from zerotui.core.deepspeed.config import bucket_sizes
from zerotui.core.estimate.activations import LoraShape
from zerotui.core.hardware.types import Hardware
from zerotui.core.model.spec import ModelSpec, lora_targets_found


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

    @property
    def stage(self) -> int:
        return self.plan.stage

    @property
    def oo(self) -> str:
        return self.plan.offload_optimizer

    @property
    def op(self) -> str:
        return self.plan.offload_params


def job_for(plan: Any, spec: ModelSpec, hw: Hardware) -> Job:
    on_gpu = hw.gpu_count > 0
    n_local = plan.gpus_per_node(hw.gpu_count)
    p = 4 if plan.precision == "fp32" else 2
    lora = None
    lora_params = 0
    if plan.method == "lora":
        found = lora_targets_found(spec, plan.lora_targets)
        lora = LoraShape(frozenset(found), plan.lora_r, plan.lora_dropout, mask_bytes=1 if on_gpu else p)
        lora_params = sum(plan.lora_r * (i + o) * c for hits in found.values() for i, o, c in hits)
    psi = spec.params_total + lora_params
    return Job(plan=plan, spec=spec, hw=hw, on_gpu=on_gpu, n_local=n_local, N=n_local * plan.nodes, p=p,
               lora=lora, psi=psi, psit=lora_params if lora is not None else psi,
               buckets=bucket_sizes(plan, spec))


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


def largest_trainable(job: Job) -> int:
    """Elements of the largest trainable tensor (the offload staging buffer is sized by it)."""
    plan, spec = job.plan, job.spec
    if plan.method != "lora":
        return spec.largest_param_numel
    found = lora_targets_found(spec, plan.lora_targets)
    return max((plan.lora_r * max(i, o) for hits in found.values() for i, o, _ in hits), default=0)


def per_weight_pinned(job: Job, n: int, pin: bool) -> int:
    """Host bytes of one pinned buffer per trainable weight (each rounded up on its own)."""
    plan, spec, p = job.plan, job.spec, job.p
    if plan.method == "lora":
        found = lora_targets_found(spec, plan.lora_targets)
        return sum((pinned(p * plan.lora_r * i / n, pin) + pinned(p * plan.lora_r * o / n, pin)) * c
                   for hits in found.values() for i, o, c in hits)
    return sum(pinned(p * numel / n, pin) * cnt for numel, cnt in spec.param_shapes)


def persistent_params(spec: ModelSpec, threshold: int) -> int:
    """Stage 3 keeps parameters of at most ``threshold`` elements whole on every GPU (norms, biases)."""
    return sum(n * c for n, c in spec.param_shapes if n <= threshold)
