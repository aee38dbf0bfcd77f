"""What a training process holds on its GPU outside PyTorch's allocator: the CUDA context, library
kernels and workspaces, and NCCL's communicators (calibration.CUDA_CONTEXT_BYTES says what each costs).

The difference between plans is NCCL. A DeepSpeed engine opens one communicator for its data-parallel
group; some paths issue a collective on a second group, and each communicator holds its own buffers
(+0.38 GiB on the H200). Which paths do, read off the committed H200 rows through zerotui's worker
(docs/estimator.md, "The CUDA context"): QLoRA at every stage, and fp16 at stage 3 or with the
optimizer offloaded, measured 2.275-2.279 GiB; bf16 and fp16 otherwise 1.89-1.94 GiB. Several GPUs were
not measured: NCCL's buffers grow with peers, so those plans get the larger figure.
"""
from __future__ import annotations

from typing import Any

from zerotui.core.estimate import calibration as cal


def second_communicator(plan: Any, ranks: int = 1) -> bool:
    """Whether the run opens a second NCCL communicator (or has several ranks: not measured)."""
    if ranks > 1 or plan.method == "qlora":
        return True
    return plan.precision == "fp16" and (plan.stage == 3 or plan.offload_optimizer != "none")


def context_bytes(plan: Any, ranks: int = 1) -> int:
    """Bytes one process of a ``ranks``-process run holds outside the allocator for ``plan``."""
    extra = cal.SECOND_COMMUNICATOR_BYTES if second_communicator(plan, ranks) else 0
    return cal.CUDA_CONTEXT_BYTES + extra
