"""What a training process holds on its GPU outside PyTorch's allocator: the CUDA context, library
kernels and workspaces, and NCCL's communicators (calibration.CUDA_CONTEXT_BYTES says what each costs).

The difference between plans is NCCL. A DeepSpeed engine on one GPU opens one communicator; some paths
issue a collective on a second group (DeepSpeed's ZeRO optimizers all-reduce the fp16 overflow flag over
their own data-parallel group, stage_1_and_2.py ``has_overflow``, the likely trigger; not traced), and
each communicator holds its own buffers (+0.38 GiB on the H200). Read off the H200 rows through
zerotui's worker (docs/estimator.md, "The CUDA context"): fp16 at stages 2 and 3 and the 7B and 13B
QLoRA runs measured 2.275-2.32 GiB; bf16 at every stage and fp16 at stage 0 1.88-1.94 GiB. Counted on
the safe side where the rows disagree or are missing: QLoRA always (a 1.1B QLoRA measured one), fp16 at
stage 1 (one row, through the estimator sweeps' own harness: one), several GPUs (NCCL's buffers grow
with peers; not measured).
"""
from __future__ import annotations

from typing import Any

from zerotui.core.estimate import calibration as cal


def second_communicator(plan: Any, ranks: int = 1) -> bool:
    """Whether the run opens a second NCCL communicator (or has several ranks: not measured)."""
    if ranks > 1 or plan.method == "qlora":
        return True
    return plan.precision == "fp16" and plan.stage >= 1


def context_bytes(plan: Any, ranks: int = 1) -> int:
    """Bytes one process of a ``ranks``-process run holds outside the allocator for ``plan``."""
    extra = cal.SECOND_COMMUNICATOR_BYTES if second_communicator(plan, ranks) else 0
    return cal.CUDA_CONTEXT_BYTES + extra
