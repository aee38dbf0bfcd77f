"""The PyTorch CUDA allocator setting a run gets (``PYTORCH_CUDA_ALLOC_CONF``), decided from the plan.

ZeRO-3 with sequences longer than 2,048 tokens runs with ``expandable_segments:True``. Measured on the
H200 under a 24 GiB cap (7B LoRA, fp16, ZeRO-3, optimizer on CPU, one 4,096-token sequence per
micro-batch; benchmarks/results/seed-scenarios-ho6-alloc-*-2026-12-02.json), the same run in one command
with and without it: NVML's peak 22.79 -> 19.76 GB, reserved 20.34 -> 17.31 GB, 1,486 -> 1,714 tokens/s.
Without it the caching allocator held 26% of the allocation in blocks it could not reuse (the
per-layer gathers and the long sequence's activations come in sizes that never line up); segments that
grow in place leave no such holes. Other plans keep PyTorch's default: it is what every other committed
measurement ran with, and the estimator's margins were fitted on it.

The worker sets it before torch first touches CUDA (core/run/worker.py), so every way of starting a
rank gets it. A value the user set (even an empty one) is theirs and is never changed; the estimator
reads the same environment (``expandable_in_effect``) so the budget describes the allocator the run
will have.
"""
from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

ENV = "PYTORCH_CUDA_ALLOC_CONF"
#: torch >= 2.9 reads PYTORCH_ALLOC_CONF first and PYTORCH_CUDA_ALLOC_CONF only without it: either is
#: the user's choice, the first one wins.
USER_ENVS = ("PYTORCH_ALLOC_CONF", ENV)
EXPANDABLE = "expandable_segments:True"
#: Beyond this many tokens per sequence a ZeRO-3 run gets expandable segments.
LONG_SEQUENCE_TOKENS = 2048
#: What worker.log says when zerotui set it.
NOTE = (f"{ENV}={EXPANDABLE}: ZeRO-3 with sequences over {LONG_SEQUENCE_TOKENS} tokens fragments PyTorch's "
        "default allocator (set PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF to override)")


def wants_expandable(plan: Any) -> bool:
    return plan.stage == 3 and plan.seq_len > LONG_SEQUENCE_TOKENS


def effective_conf(plan: Any, env: Mapping[str, str]) -> str:
    """The value the run's processes will see: the user's when set, else ours, else '' (the default)."""
    for name in USER_ENVS:
        if name in env:
            return env[name]
    return EXPANDABLE if wants_expandable(plan) else ""


def user_set(env: Mapping[str, str]) -> bool:
    return any(name in env for name in USER_ENVS)


def set_for(plan: Any, env: MutableMapping[str, str]) -> bool:
    """Add zerotui's setting to ``env`` where the plan wants it and the user set none; True if it did."""
    if user_set(env) or not wants_expandable(plan):
        return False
    env[ENV] = EXPANDABLE
    return True


def expandable_in_effect(plan: Any, env: Mapping[str, str]) -> bool:
    options = [o.strip().replace(" ", "") for o in effective_conf(plan, env).split(",")]
    return "expandable_segments:True" in options


