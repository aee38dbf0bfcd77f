"""The PyTorch CUDA allocator setting a run gets (``PYTORCH_CUDA_ALLOC_CONF``), decided from the plan.

Every run on a GPU gets ``expandable_segments:True``: segments that grow in place instead of one
``cudaMalloc`` per size, so blocks freed at one size serve requests of another and the cache holds far
fewer holes. Measured on the H200 in one command each, the same plan with PyTorch's default allocator
and with expandable segments, alternating (benchmarks/results/speed-alloc-*-2026-12-02.json):

    1.1B full, bf16, ZeRO-0, 16 x 1,024, Liger (fit's pick)  reserved 42.91 -> 34.99 GiB   65.5k -> 64.0k tokens/s
    1.1B full, bf16, ZeRO-3, 8 x 1,024, checkpointing        reserved 25.02 -> 22.79 GiB   13.1k, 11.2k -> 16.4k, 13.6k
    7B QLoRA, bf16, ZeRO-0, 16 x 1,024, Liger (fit's pick)   reserved 13.70 -> 12.49 GiB   10.41k, 10.45k -> 10.41k, 10.46k
    1.1B QLoRA, bf16, ZeRO-2, 8 x 1,024, checkpointing        reserved  5.74 ->  5.68 GiB   24.4k -> 23.9k, 23.2k

and, run again with it (seed-scenarios-expandable-*), reserved beyond allocated fell on every row:
3.68 -> 1.55 GiB (fp16, ZeRO-2, optimizer on CPU), 1.59 -> 1.20 (ZeRO-3, optimizer on CPU), 0.82 -> 0.68
(LoRA, ZeRO-0), 4.14 -> 4.04 (fp16, ZeRO-2), 3.92 -> 1.10 (7B LoRA, ZeRO-3, 4,096 tokens), 1.73 -> 0.54
(7B QLoRA). QLoRA kept the default until the 7B pairs: an earlier 1.1B pair had read ~30% slower with
expandable segments (21.7k -> 14.9k, 15.7k), which the later pair above did not repeat.

The worker sets it before torch first touches CUDA (core/run/worker.py; not on a machine without a GPU),
so every way of starting a rank gets it; a spare worker starts with it (core/run/spare_worker.py), so
it serves every launch. A value the user set (even an empty one) is theirs and is never changed; the estimator reads the same
environment (``expandable_in_effect``) so the budget describes the allocator the run will have
(core/estimate/margin.py has a margin for each).
"""
from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

ENV = "PYTORCH_CUDA_ALLOC_CONF"
#: torch >= 2.9 reads PYTORCH_ALLOC_CONF first and PYTORCH_CUDA_ALLOC_CONF only without it: either is
#: the user's choice, the first one wins.
USER_ENVS = ("PYTORCH_ALLOC_CONF", ENV)
EXPANDABLE = "expandable_segments:True"
#: Set beside ENV when zerotui made the setting (a worker or a spare, in its own process), so that a
#: worker a spare became still knows the setting is zerotui's (and says so in the run's log), not the user's.
MARK = "ZEROTUI_SET_ALLOCATOR"
#: What the run's log (a `log` event: the dashboard's Log tab) says when zerotui set it.
NOTE = (f"{ENV}={EXPANDABLE}: PyTorch's default allocator leaves holes that hold GPU memory no tensor "
        "uses (set PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF to override)")


def _ours(env: Mapping[str, str]) -> bool:
    return env.get(MARK) == "1" and env.get(ENV) == EXPANDABLE and "PYTORCH_ALLOC_CONF" not in env


def user_set(env: Mapping[str, str]) -> bool:
    """Whether the user chose the allocator (zerotui's own setting in this process does not count)."""
    return any(name in env for name in USER_ENVS) and not _ours(env)


def effective_conf(env: Mapping[str, str]) -> str:
    """The value a run started from ``env`` will see: the user's when set, else zerotui's."""
    if user_set(env):
        return next(env[name] for name in USER_ENVS if name in env)
    return EXPANDABLE


def expandable_in_effect(env: Mapping[str, str]) -> bool:
    options = [o.strip().replace(" ", "") for o in effective_conf(env).split(",")]
    return "expandable_segments:True" in options


def set_for(env: MutableMapping[str, str], hardware: Any = None) -> bool:
    """Add zerotui's setting to ``env`` unless the user set one; True if it is zerotui's (also when a
    spare of this process had already made it). A worker on a machine ``hardware`` shows to have no GPU
    gets none: it would only add a line about GPU memory to the run's log. A spare calls it before it
    imports torch, without ``hardware``, so it serves every launch from its environment."""
    if (hardware is not None and not hardware.gpus) or user_set(env):
        return False
    env[ENV], env[MARK] = EXPANDABLE, "1"
    return True
