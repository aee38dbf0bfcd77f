"""The learning-rate schedule: linear warm-up, then cosine / linear decay to ``lr × min_lr_ratio``, or
constant.

The engine owns it (``core/deepspeed/config.py`` explains why the ds_config has no scheduler section) and hands
it to ``deepspeed.initialize`` as ``lr_scheduler``. DeepSpeed steps a client scheduler inside
``engine.step()`` only at a gradient-accumulation boundary, and not when an fp16 overflow skipped the
update (``DeepSpeedEngine._take_model_step``), so it advances once per applied optimizer step, never
per micro-batch.
"""
from __future__ import annotations

import math
from typing import Any, Callable


def lr_factor(step: int, total: int, warmup: int, kind: str, min_ratio: float) -> float:
    """Multiplier of the peak lr for optimizer step ``step`` (1-based) of ``total``.

    Warm-up reaches the peak at step ``warmup`` (step 1 already trains, at lr/warmup: HF's warm-up spends
    its first step at lr 0). After it, the first step runs at the peak and step ``total`` at the floor.
    """
    if warmup > 0 and step <= warmup:
        return step / warmup
    if kind == "constant":
        return 1.0
    span = max(1, total - warmup - 1)
    p = min(1.0, max(0.0, (step - warmup - 1) / span))
    if kind == "cosine":
        return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * p))
    if kind == "linear":
        return min_ratio + (1.0 - min_ratio) * (1.0 - p)
    raise ValueError(f"unknown schedule {kind!r}")


def make_lambda(plan: Any, total_steps: int) -> Callable[[int], float]:
    """For ``torch.optim.lr_scheduler.LambdaLR``: its counter is 0 for the first step, hence the +1.

    A closure, not an object: LambdaLR's state_dict stores only the counter then, so a checkpoint
    restores the position and the plan (not the pickled function) defines the shape.
    """
    warmup, kind, floor = plan.warmup_steps, plan.lr_schedule, plan.min_lr_ratio

    def factor(done: int) -> float:
        return lr_factor(done + 1, total_steps, warmup, kind, floor)

    return factor


def build_scheduler(optimizer: Any, plan: Any, total_steps: int) -> Any:
    from torch.optim.lr_scheduler import LambdaLR

    return LambdaLR(optimizer, make_lambda(plan, total_steps))
