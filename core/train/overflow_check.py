"""ZeRO-3's fp16 overflow check, without the copies it makes of the whole gradient partition.

At every fp16 step DeepSpeed 0.19.8's stage-3 optimizer asks whether any gradient overflowed with
``torch.isinf(buffer).any()`` and ``torch.isnan(buffer).any()`` over ``grad_partitions_flat_buffer``, the
16-bit gradients of the rank's whole partition (stage3.py ``has_overflow``). ``torch.isinf`` on a 16-bit
tensor is ``abs(x) == inf``: a 16-bit copy and a boolean mask, 3 bytes for every element at once, beside
everything else the step holds. With the optimizer offloaded the buffer lives in host RAM, so a 7B fp16 run
on one GPU asks the host for 18.8 GiB more at each step's check (torch 2.13 on this machine: 3.00 bytes an
element, measured). On a 125.8 GiB H100 host the run zerotui's estimate put at 116.9 GiB was killed by the
kernel's OOM killer at its second step (benchmarks/results/seed-scenarios-full7bu-h100-2026-12-05.json);
with this module the same plan trained every step at 116.6-117.9 GiB (seed-scenarios-full7b{l,fit}-h200-*).
Without offload the same copies land on the GPU; there the check runs on DeepSpeed's reduce stream, and
three fp16 ZeRO-3 plans trained through it on an H100 with the loss scale moving on overflow
(seed-scenarios-fp16z3{a,hoa,hob}-h100-2026-12-05.json).

DeepSpeed's own ``has_inf_or_nan`` (runtime/utils.py) answers the same question with two reductions (the
max propagates NaN and shows +inf, the min shows -inf) and allocates nothing the size of the buffer. This
module makes the optimizer use it: the buffer's answer joins the optimizer's inf/NaN tracker, then
DeepSpeed's own ``has_overflow`` runs over an empty stand-in for the buffer, so its stream ordering, its
all-reduce across ranks and its bookkeeping stay DeepSpeed's. Only fp16 asks (bf16 and fp32 do not check),
and an optimizer without these attributes (another stage, another DeepSpeed) is left alone.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from zerotui.core.train.optimizer_state import optimizer_chain


def _stage3(optimizer: Any) -> Optional[Any]:
    """The optimizer in DeepSpeed's chain that keeps the flat gradient partition and the tracker."""
    for o in optimizer_chain(optimizer):
        if hasattr(o, "grad_partitions_flat_buffer") and hasattr(o, "inf_or_nan_tracker") \
                and callable(getattr(o, "has_overflow", None)):
            return o
    return None


def lean_overflow_check(optimizer: Any) -> bool:
    """Give a stage-3 fp16 optimizer the reduction-based check; whether it was given."""
    import torch

    target = _stage3(optimizer)
    if target is None or getattr(target, "dtype", None) != torch.float16:
        return False
    try:
        from deepspeed.runtime.utils import has_inf_or_nan
    except ImportError:  # a DeepSpeed without it keeps its own check
        return False
    target.has_overflow = _checker(target, target.has_overflow, has_inf_or_nan)
    return True


def _checker(target: Any, original: Callable[..., bool], has_inf_or_nan: Callable[[Any], Any]) -> Callable[..., bool]:
    def has_overflow(partition_gradients: bool = True) -> bool:
        flat = getattr(target, "grad_partitions_flat_buffer", None)
        if not partition_gradients or flat is None:
            return original(partition_gradients)
        tracker = target.inf_or_nan_tracker
        stream = getattr(target, "reduce_and_partition_stream", None)
        # on the stream that wrote the buffer, as DeepSpeed's own check reads it
        with _on(stream):
            tracker.logical_or_(has_inf_or_nan(flat).to(tracker.device))
        target.grad_partitions_flat_buffer = flat.new_empty(0)
        try:
            return original(partition_gradients)
        finally:
            target.grad_partitions_flat_buffer = flat
    return has_overflow


def _on(stream: Any) -> Any:
    import contextlib

    if stream is None:
        return contextlib.nullcontext()
    from deepspeed.accelerator import get_accelerator

    return get_accelerator().stream(stream)
