"""What a training process holds on its GPU outside PyTorch's allocator: the CUDA context, library
kernels and workspaces, and NCCL's communicators (calibration.CUDA_CONTEXT_BYTES says what each costs).

The difference between plans is NCCL. A DeepSpeed engine on one GPU opens one communicator; some paths
issue a collective on a second group (DeepSpeed's ZeRO optimizers all-reduce the fp16 overflow flag over
their own data-parallel group, stage_1_and_2.py ``has_overflow``, the likely trigger; not traced), and
each communicator holds its own buffers (+0.38 GiB on the H200). Read off the H200 rows through
zerotui's worker (docs/estimator.md, "The CUDA context"): fp16 at stages 1-3 and the 7B and 13B QLoRA
runs measured 2.275-2.32 GiB; bf16 at stages 0 and 3 and fp16 at stage 0 1.88-1.94 GiB. bf16 at stages
1 and 2 read both: the 7B LoRA rows 1.89-1.90 (but one older 7B LoRA row, seed-scenarios-c, 2.28), three
1.1B rows of 2026-12-03 (a ZeRO-1 and a ZeRO-2 full fine-tune, a ZeRO-2 LoRA) 2.28; what decides it was
not found, so stages 1 and 2 count two.
Counted on the safe side where the rows disagree or are missing: QLoRA always (a 1.1B QLoRA measured
one), stages 1-2 in either precision, several GPUs (NCCL's buffers grow with peers; not measured).
"""
from __future__ import annotations

from typing import Any

from zerotui.core.estimate import calibration as cal


def second_communicator(plan: Any, ranks: int = 1) -> bool:
    """Whether the run opens (or may open: the module docstring) a second NCCL communicator; several
    ranks always count it (not measured)."""
    if ranks > 1 or plan.method == "qlora":
        return True
    return plan.stage in (1, 2) or (plan.precision == "fp16" and plan.stage == 3)


def context_bytes(plan: Any, ranks: int = 1) -> int:
    """Bytes one process of a ``ranks``-process run holds outside the allocator for ``plan``."""
    extra = cal.SECOND_COMMUNICATOR_BYTES if second_communicator(plan, ranks) else 0
    return cal.CUDA_CONTEXT_BYTES + extra
